/*
 * request.h — the DynamoDB requests a fetch sends (Query, GetItem, BatchGetItem),
 * built in one place for the executor (with the parameters' values) and for the
 * emitter (with "<name>" placeholders where the values go).
 */
#ifndef KP_DDB_REQUEST_H
#define KP_DDB_REQUEST_H

#include <stdint.h>

#include "backends/dynamodb/ddb.h"

typedef struct ddb_request_ctx {
    const kp_pattern *pattern;
    const kp_params *params;    /* the values; NULL: a "<name>" placeholder for each parameter
                                   (present, typed by its attribute), and limits at their defaults */
    const char *table;          /* the table name, prefix included */
    const char *after_sk;       /* a later page of a sharded listing: continue after this sort key */
    int is_optional_omitted;    /* with params == NULL: optional parameters left out (their
                                   conditions dropped), as when a caller does not give them */
    kp_error *err;
} ddb_request_ctx;

/* The AttributeValue tag kp_ddb_to_attribute_value gives a value of this type: "S",
 * "N", "BOOL", "B", "M" or "L". */
const char *kp_ddb_attribute_type(const kp_type *type);

/* A whole-number parameter's value (a limit, an offset), else `fallback` (absent,
 * not a whole number, or no params at all). */
int64_t kp_ddb_param_int(const kp_params *params, const kp_param *param, int64_t fallback);

/* Items a listing asks the server for (0: all): the shape's limit (its parameter's
 * value, else its default) plus the offset of an offset-paged listing. */
int64_t kp_ddb_request_limit(const ddb_request_ctx *ctx, const ddb_fetch *f);

/* The Query of fetch f for one partition value `pk` (shard suffix included): key
 * condition, filter, index, ScanIndexForward, Select COUNT, and Limit when limit > 0;
 * never ExclusiveStartKey (the caller adds it). `with_header`: the key condition also
 * takes in the parent's header item. Returns a new tree the caller frees with
 * cJSON_Delete(), or NULL with ctx->err filled (KP_ERR_USAGE: a value that does not
 * fit the sort key). */
cJSON *kp_ddb_query_request(const ddb_request_ctx *ctx, const ddb_fetch *f, const char *pk, int with_header,
                            int64_t limit);

/* GetItem by the base table's key. Returns a new tree (cJSON_Delete()). */
cJSON *kp_ddb_get_item_request(const char *table, const char *pk, const char *sk);

/* BatchGetItem of `keys` (an array of {"PK": {"S": ..}, "SK": {"S": ..}}, at most
 * 100), which the request takes over. Returns a new tree (cJSON_Delete()). */
cJSON *kp_ddb_batch_get_request(const char *table, cJSON *keys);

/* The Scan that serves a declared scan defect (f->is_scan: an array of references
 * walked backwards): every item of f's entity whose array attribute contains `key`
 * (an AttributeValue, taken over). Returns a new tree (cJSON_Delete()). */
cJSON *kp_ddb_scan_request(const char *table, const ddb_fetch *f, cJSON *key);

#endif
