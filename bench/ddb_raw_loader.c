/*
 * ddb_raw_loader.c — the ceiling for bench/seed-dynamodb.sh: how fast the server takes
 * BatchWriteItems when the client does nothing but send them.
 *
 *   ddb_raw_loader --endpoint URL --items FILE --schema FILE --prefix P [--in-flight N]
 *                  [--keep]
 *
 * FILE is what `keyplan seed --dry-run --export-items FILE` writes: one
 * {"table": T, "item": {...}} per line. --schema is a CreateTable request for the
 * exported table (TableName T); the loader creates P+T (fresh: an existing one is
 * deleted first), waits until it is ACTIVE, then builds every BatchWriteItem body (25
 * items, consecutive items of the same table, in file order) as text before the
 * clock starts. Timed: queueing all of them at once in keyplan's DynamoDB client
 * (backends/dynamodb/client.c: kp_ddb_enqueue, SigV4 by libcurl, N kept-alive
 * connections, N requests on the wire) and driving it until the last answer. Then
 * the table is deleted (unless --keep).
 *
 * Prints one JSON line: {"tool": "raw", "in_flight": N, "items": ..., "requests": ...,
 * "seconds": ..., "items_per_s": ..., "cpu_user": ..., "cpu_sys": ...} (CPU of the
 * timed part only). Exit status: 0 every item acknowledged, 1 otherwise.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "backends/dynamodb/client_internal.h"

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static double cpu_s(int user)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    const struct timeval *tv = user ? &ru.ru_utime : &ru.ru_stime;
    return (double)tv->tv_sec + (double)tv->tv_usec / 1e6;
}

static void die(const char *what, const kp_error *err)
{
    fprintf(stderr, "ddb_raw_loader: %s%s%s\n", what, err ? ": " : "", err ? err->message : "");
    exit(1);
}

static char *read_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f) { perror(path); exit(1); }
    size_t cap = 1 << 20, n = 0;
    char *buf = malloc(cap);
    for (;;) {
        if (n + 65536 + 1 > cap) { cap *= 2; buf = realloc(buf, cap); }
        if (!buf) die("out of memory", NULL);
        size_t got = fread(buf + n, 1, 65536, f);
        n += got;
        if (got == 0) break;
    }
    fclose(f);
    buf[n] = '\0';
    *len = n;
    return buf;
}

static void call(kp_ddb_client *c, const char *op, const char *table, const char *extra, cJSON **out, int may_miss)
{
    char text[1024];
    snprintf(text, sizeof text, "{\"TableName\":\"%s\"%s}", table, extra ? extra : "");
    cJSON *req = cJSON_Parse(text);
    kp_error err;
    cJSON *resp = NULL;
    int rc = kp_ddb_call(c, op, req, &resp, &err);
    cJSON_Delete(req);
    if (rc && !(may_miss && kp_ddb_error_is(c, "ResourceNotFoundException"))) die(op, &err);
    if (out) *out = resp;
    else cJSON_Delete(resp);
}

/* Waits until the table is ACTIVE (want_gone: until DescribeTable says it is missing). */
static void wait_table(kp_ddb_client *c, const char *table, int want_gone)
{
    for (int i = 0; i < 600; i++) {
        cJSON *desc = NULL;
        call(c, "DescribeTable", table, NULL, &desc, 1);
        const cJSON *status = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(desc, "Table"),
                                                               "TableStatus");
        int done = want_gone ? desc == NULL : cJSON_IsString(status) && strcmp(status->valuestring, "ACTIVE") == 0;
        cJSON_Delete(desc);
        if (done) return;
        struct timespec pause = {0, 100 * 1000000L};
        nanosleep(&pause, NULL);
    }
    die(want_gone ? "the table was not deleted within 60 s" : "the table did not become ACTIVE within 60 s", NULL);
}

typedef struct body {
    char *text;
    size_t len;
    int items;
} body;

typedef struct tally {
    long written, failed, requests_done;
} tally;

static void on_done(kp_ddb_client *c, void *ctx, cJSON **response, const kp_ddb_failure *failure)
{
    (void)c;
    tally *t = ctx;
    t->requests_done++;
    if (failure) {
        fprintf(stderr, "ddb_raw_loader: a BatchWriteItem failed: %s\n", failure->error.message);
        t->failed++;
        return;
    }
    const cJSON *un = cJSON_GetObjectItemCaseSensitive(*response, "UnprocessedItems");
    if (un && un->child) {
        fprintf(stderr, "ddb_raw_loader: the server left items unprocessed (not resent by this loader)\n");
        t->failed++;
    }
}

int main(int argc, char **argv)
{
    const char *endpoint = NULL, *items_path = NULL, *schema_path = NULL, *prefix = "";
    int in_flight = 4, keep = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--endpoint") == 0 && i + 1 < argc) endpoint = argv[++i];
        else if (strcmp(argv[i], "--items") == 0 && i + 1 < argc) items_path = argv[++i];
        else if (strcmp(argv[i], "--schema") == 0 && i + 1 < argc) schema_path = argv[++i];
        else if (strcmp(argv[i], "--prefix") == 0 && i + 1 < argc) prefix = argv[++i];
        else if (strcmp(argv[i], "--in-flight") == 0 && i + 1 < argc) in_flight = atoi(argv[++i]);
        else if (strcmp(argv[i], "--keep") == 0) keep = 1;
        else {
            fprintf(stderr, "usage: %s --endpoint URL --items FILE --schema FILE --prefix P [--in-flight N] [--keep]\n",
                    argv[0]);
            return 2;
        }
    }
    if (!endpoint || !items_path || !schema_path || in_flight < 1) {
        fprintf(stderr, "ddb_raw_loader: --endpoint, --items and --schema are required; --in-flight >= 1\n");
        return 2;
    }

    /* the schema: one CreateTable request, renamed to the prefixed table */
    size_t len;
    char *text = read_file(schema_path, &len);
    cJSON *schema = cJSON_Parse(text);
    free(text);
    const cJSON *name = cJSON_GetObjectItemCaseSensitive(schema, "TableName");
    if (!cJSON_IsString(name)) die("--schema is not a CreateTable request with a TableName", NULL);
    char exported[256], table[512];
    snprintf(exported, sizeof exported, "%s", name->valuestring);
    snprintf(table, sizeof table, "%s%s", prefix, exported);
    cJSON_ReplaceItemInObjectCaseSensitive(schema, "TableName", cJSON_CreateString(table));

    /* every body, before the clock */
    text = read_file(items_path, &len);
    size_t cap = 1024, count = 0;
    body *bodies = malloc(cap * sizeof *bodies);
    cJSON *root = NULL, *array = NULL;
    long items = 0;
    char *line = text;
    for (;;) {
        char *end = line && *line ? strchr(line, '\n') : NULL;
        if (end) *end = '\0';
        cJSON *row = line && *line ? cJSON_Parse(line) : NULL;
        if (line && *line && !row) die("a line of --items is not JSON", NULL);
        const cJSON *t = cJSON_GetObjectItemCaseSensitive(row, "table");
        if (row && (!cJSON_IsString(t) || strcmp(t->valuestring, exported) != 0))
            die("--items holds a table the --schema does not describe", NULL);
        if (array && (!row || cJSON_GetArraySize(array) == KP_DDB_MAX_BATCH_WRITE)) {
            if (count == cap) bodies = realloc(bodies, (cap *= 2) * sizeof *bodies);
            if (!bodies) die("out of memory", NULL);
            bodies[count].items = cJSON_GetArraySize(array);
            bodies[count].text = cJSON_PrintUnformatted(root);
            bodies[count].len = strlen(bodies[count].text);
            count++;
            cJSON_Delete(root);
            root = array = NULL;
        }
        if (!row) break;
        if (!array) {
            root = cJSON_CreateObject();
            array = cJSON_AddArrayToObject(cJSON_AddObjectToObject(root, "RequestItems"), table);
        }
        cJSON *put = cJSON_CreateObject();
        cJSON_AddItemToObject(cJSON_AddObjectToObject(put, "PutRequest"), "Item",
                              cJSON_DetachItemFromObjectCaseSensitive(row, "item"));
        cJSON_AddItemToArray(array, put);
        items++;
        cJSON_Delete(row);
        line = end ? end + 1 : NULL;
    }
    free(text);
    if (!items) die("--items holds no items", NULL);

    kp_ddb_config cfg = {.endpoint = endpoint, .max_in_flight = in_flight, .max_retries = KP_DDB_NO_RETRIES};
    kp_ddb_client *c = NULL;
    kp_error err;
    if (kp_ddb_client_open(&cfg, &c, &err)) die("cannot open the client", &err);
    call(c, "DeleteTable", table, NULL, NULL, 1);
    wait_table(c, table, 1);
    cJSON *resp = NULL;
    if (kp_ddb_call(c, "CreateTable", schema, &resp, &err)) die("CreateTable", &err);
    cJSON_Delete(resp);
    wait_table(c, table, 0);

    tally t = {0};
    double u0 = cpu_s(1), s0 = cpu_s(0), t0 = now_s();
    for (size_t i = 0; i < count; i++) {
        if (kp_ddb_enqueue(c, "BatchWriteItem", bodies[i].text, bodies[i].len, 0, 0, on_done, &t, &err))
            die("cannot queue a request", &err);
        bodies[i].text = NULL;   /* taken */
    }
    while (kp_ddb_pending(c) > 0)
        if (kp_ddb_poll(c, -1, &err) < 0) die("poll", &err);
    double seconds = now_s() - t0, user = cpu_s(1) - u0, sys = cpu_s(0) - s0;
    kp_ddb_stats stats;
    kp_ddb_get_stats(c, &stats);

    if (!keep) {
        call(c, "DeleteTable", table, NULL, NULL, 1);
        wait_table(c, table, 1);
    }
    kp_ddb_client_close(c);
    printf("{\"tool\":\"raw\",\"in_flight\":%d,\"items\":%ld,\"requests\":%zu,\"seconds\":%.3f,\"items_per_s\":%.0f,"
           "\"cpu_user\":%.3f,\"cpu_sys\":%.3f,\"connections\":%ld,\"failed_requests\":%ld}\n",
           in_flight, items, count, seconds, (double)items / seconds, user, sys, stats.connections_opened, t.failed);
    free(bodies);
    cJSON_Delete(schema);
    return t.failed ? 1 : 0;
}
