/*
 * typed_model.h — a small model that uses every attribute type, for the fuzz targets
 * that read database answers: they convert what a server returns into neutral values
 * of these types, so every conversion path is reached.
 *
 * Invariant: the text parses (the targets abort at start-up when it does not).
 */
#ifndef KP_FUZZ_TYPED_MODEL_H
#define KP_FUZZ_TYPED_MODEL_H

static const char kp_fuzz_typed_model[] =
    "{\"model\": \"fuzz-typed\",\n"
    " \"entities\": {\n"
    "  \"Thing\": {\"key\": [\"id\"], \"count\": 10, \"attributes\": {\n"
    "    \"id\": \"string\", \"n\": \"int\", \"price\": \"decimal\", \"score\": \"double\", \"flag\": \"bool\",\n"
    "    \"at\": \"timestamp\", \"day\": \"date\", \"uid\": \"uuid\", \"tid\": \"timeuuid\",\n"
    "    \"state\": {\"type\": \"enum\", \"values\": [\"A\", \"B\"]},\n"
    "    \"addr\": {\"type\": \"object\", \"fields\": {\"city\": \"string\", \"zip\": {\"type\": \"int\", \"optional\": true}}},\n"
    "    \"tags\": {\"type\": \"array\", \"items\": \"string\", \"max_items\": 5},\n"
    "    \"nums\": {\"type\": \"array\", \"items\": \"decimal\", \"max_items\": 5},\n"
    "    \"labels\": {\"type\": \"map\", \"key\": \"string\", \"value\": \"int\", \"max_items\": 5},\n"
    "    \"hits\": \"counter\", \"blob\": {\"type\": \"blob\", \"optional\": true}}},\n"
    "  \"Part\": {\"key\": [\"thingId\", \"pos\"], \"attributes\": {\"thingId\": \"string\", \"pos\": \"int\", \"at\": \"timestamp\"}}\n"
    " },\n"
    " \"relations\": [{\"name\": \"parts\", \"from\": \"Thing\", \"to\": \"Part\", \"cardinality\": \"1:N\",\n"
    "   \"on\": {\"Part.thingId\": \"Thing.id\"}, \"fanout\": {\"avg\": 3, \"max\": 10}}],\n"
    " \"access_patterns\": [{\"name\": \"get-thing\", \"rps\": 1, \"root\": \"Thing\", \"where\": {\"id\": \"=\"},\n"
    "   \"returns\": {\"id\": \"Thing.id\", \"n\": \"Thing.n\",\n"
    "     \"parts\": {\"$each\": \"parts\", \"$order\": [{\"pos\": \"asc\"}], \"$limit\": 5, \"pos\": \"Part.pos\"}}}]\n"
    "}\n";

#endif
