/*
 * batch.c — BatchWriteItem with its UnprocessedItems loop: the seeding workhorse.
 *
 * DynamoDB may accept only part of a batch and hand the rest back as
 * UnprocessedItems (under throttling; dynalite never does). A batch keeps the
 * WriteRequests of the request in flight, and after each answer either finishes or
 * queues what is left again after a backoff — through the client's retry queue, so
 * nothing blocks. It gives up only after max_retries rounds in a row that wrote
 * nothing; a round that makes progress resets that count (the backoff still grows,
 * so a throttled table is not hammered).
 * Invariant: `done` runs exactly once per batch, and `written` plus the size of
 * `unprocessed` always equals the number of WriteRequests first submitted.
 */
#include "backends/dynamodb/client_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct kp_ddb_batch {
    char *table;
    cJSON *current;             /* the WriteRequests of the request in flight (owned) */
    kp_ddb_batch_done_fn done;
    void *ctx;
    int total;                  /* WriteRequests first submitted */
    int written;                /* acknowledged so far */
    int rounds;                 /* resubmissions of UnprocessedItems */
    int stalled_rounds;         /* rounds in a row that wrote nothing */
};

kp_ddb_batch *kp_ddb_batch_new(const char *table, cJSON *write_requests, kp_ddb_batch_done_fn done, void *ctx)
{
    kp_ddb_batch *b = calloc(1, sizeof *b);
    char *name = strdup(table);
    if (!b || !name) {
        free(b);
        free(name);
        cJSON_Delete(write_requests);
        return NULL;
    }
    b->table = name;
    b->current = write_requests;
    b->done = done;
    b->ctx = ctx;
    b->total = cJSON_GetArraySize(write_requests);
    return b;
}

static void batch_free(kp_ddb_batch *b)
{
    cJSON_Delete(b->current);
    free(b->table);
    free(b);
}

static void batch_finish(kp_ddb_batch *b, const kp_ddb_failure *failure)
{
    if (b->done) b->done(b->ctx, b->written, failure ? b->current : NULL, failure);
    batch_free(b);
}

static void batch_complete(kp_ddb_client *client, void *hook_ctx, cJSON **response, const kp_ddb_failure *failure)
{
    kp_ddb_batch_handle(client, hook_ctx, failure ? NULL : *response, failure);
}

int kp_ddb_batch_send(kp_ddb_client *client, kp_ddb_batch *b, long delay_ms, kp_error *err)
{
    cJSON *root = cJSON_CreateObject();
    cJSON *items = root ? cJSON_AddObjectToObject(root, "RequestItems") : NULL;
    char *body = NULL;
    if (items) {
        /* lend the array to the request document for printing, then take it back */
        cJSON_AddItemToObject(items, b->table, b->current);
        body = cJSON_PrintUnformatted(root);
        cJSON_DetachItemViaPointer(items, b->current);
    }
    cJSON_Delete(root);
    if (!body) return kp_error_set(err, KP_ERR_NOMEM, NULL, 0, 0, "out of memory building a BatchWriteItem");
    return kp_ddb_enqueue(client, "BatchWriteItem", body, strlen(body), delay_ms, 0, batch_complete, b, err);
}

int kp_ddb_batch_handle(kp_ddb_client *client, kp_ddb_batch *b, const cJSON *response,
                        const kp_ddb_failure *failure)
{
    if (failure) {
        batch_finish(b, failure);
        return 1;
    }
    const cJSON *unprocessed = cJSON_GetObjectItemCaseSensitive(response, "UnprocessedItems");
    const cJSON *left = cJSON_GetObjectItemCaseSensitive(unprocessed, b->table);
    int sent = cJSON_GetArraySize(b->current);
    int left_count = cJSON_IsArray(left) ? cJSON_GetArraySize(left) : 0;
    if (left_count > sent) left_count = sent;   /* a malformed answer cannot un-write items */
    b->written += sent - left_count;
    if (left_count == 0) {
        batch_finish(b, NULL);
        return 1;
    }
    cJSON *again = cJSON_Duplicate(left, 1);
    kp_ddb_failure f;
    memset(&f, 0, sizeof f);
    f.type = "";
    f.attempts = b->rounds + 1;
    if (!again) {
        kp_error_set(&f.error, KP_ERR_NOMEM, NULL, 0, 0, "out of memory resubmitting unprocessed items");
        batch_finish(b, &f);
        return 1;
    }
    cJSON_Delete(b->current);
    b->current = again;
    b->stalled_rounds = left_count == sent ? b->stalled_rounds + 1 : 0;
    if (b->stalled_rounds > kp_ddb_max_retries(client)) {
        f.is_retryable = 1;
        kp_error_set(&f.error, KP_ERR_TARGET, NULL, 0, 0,
                     "DynamoDB BatchWriteItem on table '%s' left %d of %d items unprocessed after %d rounds, the "
                     "last %d without progress; the table is throttled: lower the requests in flight or raise "
                     "its capacity", b->table, left_count, b->total, b->rounds + 1, b->stalled_rounds);
        batch_finish(b, &f);
        return 1;
    }
    kp_ddb_count_unprocessed_round(client);
    long delay = kp_ddb_next_backoff(client, b->rounds);
    b->rounds++;
    if (delay < 1) delay = 1;   /* always through the retry queue, never a tight loop */
    if (kp_ddb_batch_send(client, b, delay, &f.error) != 0) {
        batch_finish(b, &f);
        return 1;
    }
    return 0;
}

int kp_ddb_batch_write(kp_ddb_client *client, const char *table, cJSON *write_requests,
                       kp_ddb_batch_done_fn done, void *ctx, kp_error *err)
{
    int n = cJSON_IsArray(write_requests) ? cJSON_GetArraySize(write_requests) : 0;
    if (!table || !table[0] || n < 1 || n > KP_DDB_MAX_BATCH_WRITE) {
        cJSON_Delete(write_requests);
        return kp_error_set(err, KP_ERR_INTERNAL, NULL, 0, 0,
                            "internal error: a BatchWriteItem needs a table and 1 to %d write requests, not %d",
                            KP_DDB_MAX_BATCH_WRITE, n);
    }
    kp_ddb_batch *b = kp_ddb_batch_new(table, write_requests, done, ctx);
    if (!b) return kp_error_set(err, KP_ERR_NOMEM, NULL, 0, 0, "out of memory queueing a BatchWriteItem");
    if (kp_ddb_batch_send(client, b, 0, err) != 0) {
        batch_free(b);
        return -1;
    }
    return 0;
}
