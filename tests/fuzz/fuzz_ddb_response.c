/*
 * fuzz_ddb_response.c — libFuzzer target: arbitrary bytes as the body of a DynamoDB
 * answer, read the ways keyplan's client and executor read one.
 *
 * The bytes go through: the error-body reader (type and message of a failed
 * request), the redaction of secrets from text that may echo them (which must leave
 * none behind), and, when they parse as JSON, the AttributeValue reader for every
 * attribute type of a small model (on the answer itself, its Item, its Items and its
 * BatchGetItem Responses), the read-back checksum and item size, and the
 * BatchWriteItem completion handler (UnprocessedItems), whose resubmissions are then
 * failed so that every batch finishes. Never a crash, a leak, a read past the input,
 * a secret left in redacted text, or a batch that claims more writes than it sent.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "backends/dynamodb/client_internal.h"
#include "backends/dynamodb/conn.h"
#include "backends/dynamodb/ddb.h"
#include "core/model.h"
#include "typed_model.h"

static kp_model *model;
static kp_ddb_client *client;

static const char *const secrets[] = {
    "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
    "FwoGZXIvYXdzEJr//////////wEaDKEYPLANFUZZTOKEN",
    "AKIAKEYPLANFUZZ0001",
};

static void init(void)
{
    kp_error err;
    if (kp_model_parse("typed_model.h", kp_fuzz_typed_model, strlen(kp_fuzz_typed_model), NULL, &model, &err)) abort();
    kp_ddb_config cfg = {.endpoint = "http://127.0.0.1:9", .max_retries = KP_DDB_NO_RETRIES};
    if (kp_ddb_client_open(&cfg, &client, &err)) abort();
}

static void read_item(const cJSON *item)
{
    if (!cJSON_IsObject(item)) return;
    kp_error err;
    for (size_t e = 0; e < model->entity_count; e++) {
        const kp_entity *entity = model->entities[e];
        for (size_t a = 0; a < entity->attr_count; a++) {
            const cJSON *av = cJSON_GetObjectItemCaseSensitive(item, entity->attrs[a]->name);
            if (!av) continue;
            cJSON *v = kp_ddb_from_attribute_value(&entity->attrs[a]->type, av, &err);
            if (v) {
                char *text = cJSON_PrintUnformatted(v);   /* what verify's diff prints */
                /* a value from the server must stay one JSON value: never text spliced into the report */
                cJSON *again = text ? cJSON_Parse(text) : NULL;
                if (text && !again) __builtin_trap();
                cJSON_Delete(again);
                cJSON_free(text);
                cJSON_Delete(v);
            } else if (!err.message[0]) {
                __builtin_trap();   /* a refusal must say why */
            }
        }
    }
    (void)kp_ddb_item_checksum(item);
    (void)kp_ddb_item_size(item);
}

static void batch_done(void *ctx, int written, const cJSON *unprocessed, const kp_ddb_failure *failure)
{
    (void)unprocessed;
    (void)failure;
    int *total = ctx;
    if (written < 0 || written > *total) __builtin_trap();
}

static void batch_answer(const cJSON *response)
{
    int total = 3;
    cJSON *requests = cJSON_CreateArray();
    for (int i = 0; requests && i < total; i++) {
        cJSON *put = cJSON_CreateObject();
        cJSON *item = cJSON_AddObjectToObject(cJSON_AddObjectToObject(put, "PutRequest"), "Item");
        cJSON_AddItemToObject(item, "PK", cJSON_CreateString("T#1"));
        cJSON_AddItemToArray(requests, put);
    }
    if (!requests) return;
    kp_ddb_batch *batch = kp_ddb_batch_new("kpfuzz", requests, batch_done, &total);
    if (!batch) return;
    kp_ddb_batch_handle(client, batch, response, NULL);
    kp_ddb_failure failure;
    memset(&failure, 0, sizeof failure);
    failure.type = "";
    kp_error_set(&failure.error, KP_ERR_TARGET, NULL, 0, 0, "fuzz: resubmission not sent");
    while (kp_ddb_queued_count(client) > 0)
        if (kp_ddb_queued_complete(client, 0, NULL, &failure)) break;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!model) init();
    const char *body = (const char *)data;

    char type[128], message[512];
    kp_ddb_parse_error_body(body, size, type, sizeof type, message, sizeof message);
    if (strlen(type) >= sizeof type || strlen(message) >= sizeof message) __builtin_trap();

    /* the text a failure message may carry, with every secret removed */
    size_t text_size = size + 1 < 4096 ? size + 1 : 4096;
    char *text = malloc(text_size);
    if (text) {
        memcpy(text, body, text_size - 1);
        text[text_size - 1] = '\0';
        kp_ddb_redact(text, text_size, secrets, sizeof secrets / sizeof *secrets);
        for (size_t i = 0; i < sizeof secrets / sizeof *secrets; i++)
            if (strstr(text, secrets[i])) __builtin_trap();
        free(text);
    }

    cJSON *root = cJSON_ParseWithLength(body, size);
    if (root) {
        read_item(root);
        read_item(cJSON_GetObjectItemCaseSensitive(root, "Item"));
        const cJSON *it;
        cJSON_ArrayForEach(it, cJSON_GetObjectItemCaseSensitive(root, "Items")) read_item(it);
        const cJSON *table;
        cJSON_ArrayForEach(table, cJSON_GetObjectItemCaseSensitive(root, "Responses"))
            cJSON_ArrayForEach(it, table) read_item(it);
        batch_answer(root);
        cJSON_Delete(root);
    }
    return 0;
}
