/*
 * fuzz_mongo_reply.c — libFuzzer target: arbitrary bytes as what a MongoDB server
 * hands back, read the ways keyplan's MongoDB backend reads it.
 *
 * The bytes are tried twice. As a BSON document (what a cursor returns): converted
 * to canonical Extended JSON, then to the neutral record of every entity of a small
 * model (every attribute type), checksummed the way read-back does (a BSON round
 * trip), sized and identified. As Extended JSON text (what the client passes on):
 * the same record conversion, a reply's count, and a conversion to BSON and back.
 * Never a crash, a leak, a read past the input or undefined behaviour; a refused
 * value always says why.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <bson/bson.h>

#include "backends/mongodb/client.h"
#include "backends/mongodb/mongo.h"
#include "core/model.h"
#include "typed_model.h"

static kp_model *model;

static void read_document(const cJSON *doc)
{
    if (!cJSON_IsObject(doc)) return;
    for (size_t e = 0; e < model->entity_count; e++) {
        kp_error err;
        kp_error_clear(&err);
        cJSON *record = kp_mg_record_of(model->entities[e], doc, &err);
        if (record) {
            char *text = cJSON_PrintUnformatted(record);   /* what verify's diff prints */
            /* a value from the server must stay one JSON value: never text spliced into the report */
            cJSON *again = text ? cJSON_Parse(text) : NULL;
            if (text && !again) __builtin_trap();
            cJSON_Delete(again);
            cJSON_free(text);
            cJSON_Delete(record);
        } else if (!err.message[0]) {
            __builtin_trap();   /* a refusal must say why */
        }
    }
    (void)kp_mg_item_checksum(doc);
    (void)kp_mg_document_size(doc);
    free(kp_mg_item_id("Thing", doc));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!model) {
        kp_error err;
        if (kp_model_parse("typed_model.h", kp_fuzz_typed_model, strlen(kp_fuzz_typed_model), NULL, &model, &err))
            abort();
    }

    /* a document from a cursor */
    bson_t *doc = bson_new_from_data(data, size);
    if (doc) {
        cJSON *ejson = kp_mg_bson_to_ejson(doc);
        if (ejson) {
            read_document(ejson);
            cJSON_Delete(ejson);
        }
        bson_destroy(doc);
    }

    /* Extended JSON text */
    cJSON *root = cJSON_ParseWithLength((const char *)data, size);
    if (root) {
        read_document(root);
        (void)kp_mg_reply_long(cJSON_GetObjectItemCaseSensitive(root, "n"));
        kp_error err;
        kp_error_clear(&err);
        bson_t b;
        if (kp_mg_ejson_to_bson(root, &b, &err) == 0) {
            cJSON *back = kp_mg_bson_to_ejson(&b);
            cJSON_Delete(back);
            bson_destroy(&b);
        } else if (!err.message[0]) {
            __builtin_trap();
        }
        cJSON_Delete(root);
    }
    return 0;
}
