/*
 * fuzz_ndjson.c — libFuzzer target: arbitrary bytes as one entity's NDJSON file.
 *
 * The loader must answer every input with a dataset or a positioned error — never a
 * crash, a leak or an unbounded allocation. The model (parsed once) gives the entity
 * every kind of attribute the loader checks: exact numbers, timestamps, enums,
 * nested objects, arrays, maps, optional and unique values, a self-reference, a copy
 * and a derived count.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/data.h"
#include "core/model.h"

static const char model_text[] =
    "{ \"model\": \"fuzz\", \"entities\": { \"Thing\": { \"key\": [\"id\", \"n\"], \"count\": 10, \"attributes\": {"
    "  \"id\": \"string\", \"n\": \"int\", \"price\": \"decimal\", \"ratio\": { \"type\": \"double\", \"optional\": true },"
    "  \"at\": \"timestamp\", \"day\": { \"type\": \"date\", \"optional\": true },"
    "  \"uid\": { \"type\": \"uuid\", \"optional\": true, \"unique\": true },"
    "  \"kind\": { \"type\": \"enum\", \"values\": [\"A\", \"B\"] },"
    "  \"info\": { \"type\": \"object\", \"optional\": true, \"fields\": { \"x\": \"int\", \"y\": { \"type\": \"string\", \"optional\": true } } },"
    "  \"tags\": { \"type\": \"array\", \"items\": \"string\", \"optional\": true },"
    "  \"counts\": { \"type\": \"map\", \"value\": \"int\", \"optional\": true },"
    "  \"parentId\": { \"type\": \"string\", \"optional\": true }, \"parentN\": { \"type\": \"int\", \"optional\": true },"
    "  \"parentKind\": { \"type\": \"enum\", \"values\": [\"A\", \"B\"], \"copy_of\": \"parent.kind\", \"optional\": true },"
    "  \"childCount\": { \"type\": \"int\", \"derived\": { \"count\": \"children\" } } } } },"
    "  \"relations\": [ { \"name\": \"children\", \"from\": \"Thing\", \"to\": \"Thing\", \"cardinality\": \"1:N\","
    "    \"on\": { \"Thing.parentId\": \"Thing.id\", \"Thing.parentN\": \"Thing.n\" }, \"inverse\": \"parent\","
    "    \"fanout\": { \"avg\": 1, \"max\": 10 }, \"on_delete\": \"detach\" } ],"
    "  \"access_patterns\": [ { \"name\": \"one\", \"rps\": 1, \"root\": \"Thing\", \"where\": { \"id\": \"=\", \"n\": \"=\" },"
    "    \"returns\": { \"id\": \"Thing.id\" } } ] }";

static kp_model *model;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    kp_error err;
    if (!model) {
        kp_model_options options = {.scale = 1};
        if (kp_model_parse("fuzz.json", model_text, strlen(model_text), &options, &model, &err)) {
            kp_error_print(stderr, &err);
            abort();
        }
    }
    kp_dataset *ds = NULL;
    if (kp_dataset_new(model, &ds, &err)) return 0;
    if (kp_dataset_add_ndjson(ds, model->entities[0], "Thing.ndjson", (const char *)data, size, &err) == 0)
        kp_dataset_finish(ds, &err);
    kp_dataset_free(ds);
    return 0;
}
