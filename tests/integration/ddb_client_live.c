/*
 * ddb_client_live.c — the DynamoDB client against a live server (dynalite on
 * http://127.0.0.1:18000 by default; scripts/target-dynalite.sh start).
 *
 *   ddb_client_live [--endpoint URL]                      the functional test
 *   ddb_client_live [--endpoint URL] --bench N [--in-flight K]
 *                                                         seeds N items of 5 attributes
 *                                                         with K requests in flight and
 *                                                         prints items/s
 *
 * The functional test creates a table, waits for ACTIVE, writes 2,000 items through
 * asynchronous BatchWriteItems with 4 in flight, pages a Query (LastEvaluatedKey),
 * counts, reads with GetItem and BatchGetItem, checks that a failed condition and a
 * missing table come back as their error types, and deletes the table — asserting
 * every count. Exit status: 0 passed, 1 failed, 77 no server (ctest: skipped).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "backends/dynamodb/client.h"

static int failures;

#define CHECK(cond, ...)                                                    \
    do {                                                                    \
        if (!(cond)) {                                                      \
            failures++;                                                     \
            fprintf(stderr, "FAIL %s:%d: %s: ", __FILE__, __LINE__, #cond); \
            fprintf(stderr, __VA_ARGS__);                                   \
            fputc('\n', stderr);                                            \
        }                                                                   \
    } while (0)

static void sleep_ms(long ms)
{
    struct timespec ts = { .tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000L };
    nanosleep(&ts, NULL);
}

static double seconds_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static cJSON *parse(const char *text)
{
    cJSON *json = cJSON_Parse(text);
    if (!json) {
        fprintf(stderr, "bad JSON in the test: %s\n", text);
        exit(1);
    }
    return json;
}

/* Calls an operation with a request given as text; returns the answer or NULL. */
static cJSON *call(kp_ddb_client *client, const char *operation, const char *request_text, kp_error *err)
{
    cJSON *request = parse(request_text);
    cJSON *response = NULL;
    int rc = kp_ddb_call(client, operation, request, &response, err);
    cJSON_Delete(request);
    return rc == 0 ? response : NULL;
}

static void delete_table_if_present(kp_ddb_client *client, const char *table)
{
    char text[256];
    snprintf(text, sizeof text, "{\"TableName\":\"%s\"}", table);
    kp_error err;
    cJSON_Delete(call(client, "DeleteTable", text, &err));
}

static int create_table(kp_ddb_client *client, const char *table)
{
    char text[1024];
    snprintf(text, sizeof text,
             "{\"TableName\":\"%s\",\"BillingMode\":\"PAY_PER_REQUEST\","
             "\"AttributeDefinitions\":[{\"AttributeName\":\"PK\",\"AttributeType\":\"S\"},"
             "{\"AttributeName\":\"SK\",\"AttributeType\":\"S\"}],"
             "\"KeySchema\":[{\"AttributeName\":\"PK\",\"KeyType\":\"HASH\"},"
             "{\"AttributeName\":\"SK\",\"KeyType\":\"RANGE\"}]}", table);
    kp_error err;
    cJSON *created = call(client, "CreateTable", text, &err);
    if (!created) {
        kp_error_print(stderr, &err);
        return -1;
    }
    const cJSON *status = cJSON_GetObjectItem(cJSON_GetObjectItem(created, "TableDescription"), "TableStatus");
    int ok = cJSON_IsString(status);
    cJSON_Delete(created);
    if (!ok) return -1;
    /* DescribeTable until ACTIVE */
    snprintf(text, sizeof text, "{\"TableName\":\"%s\"}", table);
    for (int i = 0; i < 200; i++) {
        cJSON *described = call(client, "DescribeTable", text, &err);
        if (!described) {
            kp_error_print(stderr, &err);
            return -1;
        }
        status = cJSON_GetObjectItem(cJSON_GetObjectItem(described, "Table"), "TableStatus");
        int is_active = cJSON_IsString(status) && strcmp(status->valuestring, "ACTIVE") == 0;
        cJSON_Delete(described);
        if (is_active) return 0;
        sleep_ms(50);
    }
    fprintf(stderr, "table %s never became ACTIVE\n", table);
    return -1;
}

/* ---- seeding through kp_ddb_batch_write ------------------------------------------------ */

typedef struct seed_state {
    int batches_done;
    long items_written;
    int failed;
} seed_state;

static void on_batch_done(void *ctx, int written, const cJSON *unprocessed, const kp_ddb_failure *failure)
{
    seed_state *s = ctx;
    s->batches_done++;
    s->items_written += written;
    if (failure) {
        s->failed++;
        fprintf(stderr, "batch failed (%d unprocessed): %s\n", cJSON_GetArraySize(unprocessed),
                failure->error.message);
    }
}

static cJSON *item_request(long i, int partitions)
{
    char text[512];
    snprintf(text, sizeof text,
             "{\"PutRequest\":{\"Item\":{\"PK\":{\"S\":\"P#%ld\"},\"SK\":{\"S\":\"S#%06ld\"},"
             "\"name\":{\"S\":\"item number %ld\"},\"n\":{\"N\":\"%ld\"},\"active\":{\"BOOL\":%s}}}}",
             i % partitions, i, i, i, i % 2 ? "true" : "false");
    return parse(text);
}

/* Writes `count` items in batches of 25, all queued at once, polling until done. */
static int seed(kp_ddb_client *client, const char *table, long count, int partitions, seed_state *state)
{
    kp_error err;
    for (long first = 0; first < count; first += 25) {
        cJSON *batch = cJSON_CreateArray();
        for (long i = first; i < first + 25 && i < count; i++) cJSON_AddItemToArray(batch, item_request(i, partitions));
        if (kp_ddb_batch_write(client, table, batch, on_batch_done, state, &err) != 0) {
            kp_error_print(stderr, &err);
            return -1;
        }
    }
    int pending;
    while ((pending = kp_ddb_poll(client, 1000, &err)) > 0) {
    }
    if (pending < 0) {
        kp_error_print(stderr, &err);
        return -1;
    }
    return 0;
}

/* ---- the functional test ------------------------------------------------------------------- */

typedef struct get_state {
    int ok, failed;
} get_state;

static void on_get_done(void *ctx, const cJSON *response, const kp_ddb_failure *failure)
{
    get_state *s = ctx;
    if (failure || !cJSON_GetObjectItem(response, "Item")) s->failed++;
    else s->ok++;
}

static int functional(const char *endpoint)
{
    kp_ddb_config cfg = { .endpoint = endpoint, .max_in_flight = 4 };
    kp_ddb_client *client = NULL;
    kp_error err;
    if (kp_ddb_client_open(&cfg, &client, &err) != 0) {
        kp_error_print(stderr, &err);
        return 1;
    }
    printf("client: %s\n", kp_ddb_client_describe(client));
    char table[64];
    snprintf(table, sizeof table, "kp_client_live_%d", (int)getpid());
    char text[4096];

    /* a server that is not there: skip, as ctest expects */
    cJSON *tables = call(client, "ListTables", "{}", &err);
    if (!tables) {
        kp_error_print(stderr, &err);
        kp_ddb_client_close(client);
        return 77;
    }
    cJSON_Delete(tables);
    if (create_table(client, table) != 0) {
        kp_ddb_client_close(client);
        return 1;
    }
    long sent_before = kp_ddb_requests_sent(client);

    /* 2,000 items, 80 batches, 4 in flight */
    seed_state state = { 0 };
    double started = seconds_now();
    CHECK(seed(client, table, 2000, 20, &state) == 0, "seeding");
    double took = seconds_now() - started;
    CHECK(state.batches_done == 80, "%d batches done", state.batches_done);
    CHECK(state.items_written == 2000, "%ld items written", state.items_written);
    CHECK(state.failed == 0, "%d batches failed", state.failed);
    CHECK(kp_ddb_requests_sent(client) - sent_before == 80, "%ld requests", kp_ddb_requests_sent(client) - sent_before);
    kp_ddb_stats stats;
    kp_ddb_get_stats(client, &stats);
    CHECK(stats.connections_opened <= 4 + 1, "%ld connections opened for 4 in flight", stats.connections_opened);
    printf("seeded 2000 items in %.3f s (%.0f items/s) over %ld connections\n", took, 2000 / took,
           stats.connections_opened);

    /* Query P#3 (100 items) in pages of 30, following LastEvaluatedKey */
    int pages = 0, items = 0, in_order = 1;
    char last_sk[32] = "";
    cJSON *start_key = NULL;
    do {
        cJSON *request = parse("{\"KeyConditionExpression\":\"PK = :pk\","
                               "\"ExpressionAttributeValues\":{\":pk\":{\"S\":\"P#3\"}},\"Limit\":30}");
        cJSON_AddStringToObject(request, "TableName", table);
        if (start_key) cJSON_AddItemToObject(request, "ExclusiveStartKey", start_key);
        start_key = NULL;
        cJSON *page = NULL;
        int rc = kp_ddb_call(client, "Query", request, &page, &err);
        cJSON_Delete(request);
        if (rc != 0) {
            kp_error_print(stderr, &err);
            failures++;
            break;
        }
        pages++;
        const cJSON *item;
        cJSON_ArrayForEach(item, cJSON_GetObjectItem(page, "Items")) {
            const char *sk = cJSON_GetObjectItem(cJSON_GetObjectItem(item, "SK"), "S")->valuestring;
            if (strcmp(sk, last_sk) <= 0) in_order = 0;
            snprintf(last_sk, sizeof last_sk, "%s", sk);
            items++;
        }
        cJSON *next = cJSON_GetObjectItem(page, "LastEvaluatedKey");
        if (next) start_key = cJSON_Duplicate(next, 1);
        cJSON_Delete(page);
    } while (start_key && pages < 20);
    CHECK(items == 100, "query returned %d items", items);
    CHECK(pages >= 4 && pages <= 5, "query took %d pages", pages);
    CHECK(in_order, "query pages were not in sort-key order");
    printf("query: %d items in %d pages\n", items, pages);

    snprintf(text, sizeof text, "{\"TableName\":\"%s\",\"KeyConditionExpression\":\"PK = :pk\","
                                "\"ExpressionAttributeValues\":{\":pk\":{\"S\":\"P#7\"}},\"Select\":\"COUNT\"}", table);
    cJSON *counted = call(client, "Query", text, &err);
    CHECK(counted && cJSON_GetObjectItem(counted, "Count")->valueint == 100, "COUNT query");
    cJSON_Delete(counted);

    /* GetItem */
    snprintf(text, sizeof text, "{\"TableName\":\"%s\",\"Key\":{\"PK\":{\"S\":\"P#3\"},\"SK\":{\"S\":\"S#000003\"}}}",
             table);
    cJSON *got = call(client, "GetItem", text, &err);
    const cJSON *n = cJSON_GetObjectItem(cJSON_GetObjectItem(cJSON_GetObjectItem(got, "Item"), "n"), "N");
    CHECK(cJSON_IsString(n) && strcmp(n->valuestring, "3") == 0, "GetItem n");
    cJSON_Delete(got);

    /* BatchGetItem of 100 keys, following UnprocessedKeys */
    cJSON *keys = cJSON_CreateArray();
    for (int i = 0; i < 100; i++) {
        char key[128];
        snprintf(key, sizeof key, "{\"PK\":{\"S\":\"P#%d\"},\"SK\":{\"S\":\"S#%06d\"}}", (i * 17) % 20, i * 17);
        cJSON_AddItemToArray(keys, parse(key));
    }
    int fetched = 0, rounds = 0;
    cJSON *request_items = cJSON_CreateObject();
    cJSON *for_table = cJSON_AddObjectToObject(request_items, table);
    cJSON_AddItemToObject(for_table, "Keys", keys);
    while (request_items && rounds++ < 10) {
        cJSON *request = cJSON_CreateObject();
        cJSON_AddItemToObject(request, "RequestItems", request_items);
        cJSON *answer = NULL;
        int rc = kp_ddb_call(client, "BatchGetItem", request, &answer, &err);
        cJSON_Delete(request);
        request_items = NULL;
        if (rc != 0) {
            kp_error_print(stderr, &err);
            failures++;
            break;
        }
        fetched += cJSON_GetArraySize(cJSON_GetObjectItem(cJSON_GetObjectItem(answer, "Responses"), table));
        cJSON *left = cJSON_GetObjectItem(answer, "UnprocessedKeys");
        if (left && cJSON_GetArraySize(left) > 0) request_items = cJSON_Duplicate(left, 1);
        cJSON_Delete(answer);
    }
    CHECK(fetched == 100, "BatchGetItem returned %d items", fetched);
    printf("batch get: %d items in %d requests\n", fetched, rounds);

    /* a failed condition and a missing table come back as their types, unretried */
    long before = kp_ddb_requests_sent(client);
    snprintf(text, sizeof text, "{\"TableName\":\"%s\",\"Item\":{\"PK\":{\"S\":\"P#3\"},\"SK\":{\"S\":\"S#000003\"}},"
                                "\"ConditionExpression\":\"attribute_not_exists(PK)\"}", table);
    cJSON *put = call(client, "PutItem", text, &err);
    CHECK(!put && kp_ddb_error_is(client, "ConditionalCheckFailedException"), "condition: %s", err.message);
    cJSON_Delete(put);
    cJSON *missing = call(client, "GetItem", "{\"TableName\":\"kp_no_such_table\",\"Key\":{\"PK\":{\"S\":\"x\"}}}", &err);
    CHECK(!missing && kp_ddb_error_is(client, "ResourceNotFoundException"), "missing table: %s", err.message);
    printf("missing table says: %s\n", err.message);
    cJSON *bad = call(client, "Query", "{\"TableName\":\"x\"}", &err);
    CHECK(!bad && kp_ddb_error_is(client, "ValidationException"), "validation: %s", err.message);
    CHECK(kp_ddb_requests_sent(client) - before == 3, "client errors were retried");
    cJSON_Delete(missing);
    cJSON_Delete(bad);

    /* asynchronous GetItems */
    get_state gets = { 0 };
    for (int i = 0; i < 50; i++) {
        char key[256];
        snprintf(key, sizeof key, "{\"TableName\":\"%s\",\"Key\":{\"PK\":{\"S\":\"P#%d\"},\"SK\":{\"S\":\"S#%06d\"}}}",
                 table, (i * 31) % 20, i * 31);
        CHECK(kp_ddb_submit(client, "GetItem", parse(key), on_get_done, &gets, &err) == 0, "submit");
    }
    while (kp_ddb_poll(client, 1000, &err) > 0) {
    }
    CHECK(gets.ok == 50 && gets.failed == 0, "async gets: %d ok, %d failed", gets.ok, gets.failed);

    /* DeleteTable, then it is gone */
    snprintf(text, sizeof text, "{\"TableName\":\"%s\"}", table);
    cJSON *deleted = call(client, "DeleteTable", text, &err);
    CHECK(deleted != NULL, "DeleteTable: %s", err.message);
    cJSON_Delete(deleted);
    int gone = 0;
    for (int i = 0; i < 100 && !gone; i++) {
        cJSON *described = call(client, "DescribeTable", text, &err);
        gone = !described && kp_ddb_error_is(client, "ResourceNotFoundException");
        cJSON_Delete(described);
        if (!gone) sleep_ms(50);
    }
    CHECK(gone, "table still there after DeleteTable");

    kp_ddb_get_stats(client, &stats);
    printf("requests sent: %ld (retries %ld, throttled %ld) over %ld connections, %ld bytes sent, %ld received\n",
           stats.requests_sent, stats.retries, stats.throttled, stats.connections_opened, stats.bytes_sent,
           stats.bytes_received);
    kp_ddb_client_close(client);
    printf("%s\n", failures ? "FAILED" : "passed");
    return failures ? 1 : 0;
}

/* ---- the benchmark --------------------------------------------------------------------------- */

static int bench(const char *endpoint, long count, int in_flight)
{
    kp_ddb_config cfg = { .endpoint = endpoint, .max_in_flight = in_flight };
    kp_ddb_client *client = NULL;
    kp_error err;
    if (kp_ddb_client_open(&cfg, &client, &err) != 0) {
        kp_error_print(stderr, &err);
        return 1;
    }
    char table[64];
    snprintf(table, sizeof table, "kp_client_bench_%d", (int)getpid());
    delete_table_if_present(client, table);
    if (create_table(client, table) != 0) {
        kp_ddb_client_close(client);
        return 1;
    }
    seed_state state = { 0 };
    double started = seconds_now();
    int rc = seed(client, table, count, 100, &state);
    double took = seconds_now() - started;
    kp_ddb_stats stats;
    kp_ddb_get_stats(client, &stats);
    printf("%ld items of 5 attributes, %d in flight: %.3f s, %.0f items/s, %ld requests, %ld connections\n",
           state.items_written, in_flight, took, (double)state.items_written / took, stats.requests_sent,
           stats.connections_opened);
    delete_table_if_present(client, table);
    kp_ddb_client_close(client);
    return rc == 0 && state.items_written == count ? 0 : 1;
}

int main(int argc, char **argv)
{
    const char *endpoint = "http://127.0.0.1:18000";
    long bench_count = 0;
    int in_flight = 4;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--endpoint") == 0 && i + 1 < argc) endpoint = argv[++i];
        else if (strcmp(argv[i], "--bench") == 0 && i + 1 < argc) bench_count = atol(argv[++i]);
        else if (strcmp(argv[i], "--in-flight") == 0 && i + 1 < argc) in_flight = atoi(argv[++i]);
        else {
            fprintf(stderr, "usage: %s [--endpoint URL] [--bench N [--in-flight K]]\n", argv[0]);
            return 2;
        }
    }
    return bench_count > 0 ? bench(endpoint, bench_count, in_flight) : functional(endpoint);
}
