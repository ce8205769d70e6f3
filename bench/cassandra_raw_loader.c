/*
 * cassandra_raw_loader.c — the node's ceiling for bench/cassandra.sh: a minimal pipelined
 * loader that sends rows exported by `keyplan seed --dry-run --export-items` as prepared
 * INSERTs, many requests in flight, through keyplan's CQL client.
 *
 *   cassandra_raw_loader HOST:PORT KEYSPACE ITEMS.ndjson IN_FLIGHT CONNECTIONS
 *
 * Everything that is not sending is done before the clock starts: the export is parsed,
 * one INSERT per table and column set is prepared, every row's values are bound. Timed is
 * only queuing the requests and driving them to completion; it prints
 * "<rows> rows in <seconds> s, <requests> requests" (and exits 1 if any row failed).
 * Rows are grouped by partition over the whole file (the prepared statement's partition
 * key columns) and sent as UNLOGGED batches of at most 16 rows of one partition, the
 * rule keyplan follows, but with perfect grouping: the best a client can do under it.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "backends/cassandra/cql_client.h"
#include "core/error.h"

typedef struct statement { char *cql; const kp_cql_prepared *prepared; } statement;
typedef struct row { char *key; size_t index; } row;

static int by_key(const void *a, const void *b)
{
    const row *x = a, *y = b;
    int c = strcmp(x->key, y->key);
    return c ? c : (x->index < y->index ? -1 : 1);
}

static long done_ok, done_failed;

static void on_done(void *ctx, const kp_cql_response *response, const kp_cql_failure *failure)
{
    (void)ctx;
    (void)response;
    if (failure) {
        if (done_failed++ == 0) fprintf(stderr, "cassandra_raw_loader: %s\n", failure->error.message);
    } else {
        done_ok++;
    }
}

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
    if (argc != 6) {
        fprintf(stderr, "usage: cassandra_raw_loader HOST:PORT KEYSPACE ITEMS.ndjson IN_FLIGHT CONNECTIONS\n");
        return 2;
    }
    kp_error err;
    kp_error_clear(&err);
    kp_cql_config cfg = {0};
    cfg.target = argv[1];
    cfg.keyspace = argv[2];
    cfg.max_in_flight = atoi(argv[4]);
    cfg.connections = atoi(argv[5]);
    kp_cql_client *client = NULL;
    if (kp_cql_client_open(&cfg, &client, &err)) { fprintf(stderr, "cassandra_raw_loader: %s\n", err.message); return 3; }
    FILE *in = fopen(argv[3], "r");
    if (!in) { perror(argv[3]); return 2; }
    statement *stmts = NULL;
    size_t nstmts = 0;
    const kp_cql_prepared **row_prep = NULL;
    kp_cql_values *row_values = NULL;
    row *keys = NULL;
    size_t rows = 0, cap = 0;
    char *line = NULL;
    size_t linecap = 0;
    while (getline(&line, &linecap, in) > 0) {
        cJSON *j = cJSON_Parse(line);
        const cJSON *table = cJSON_GetObjectItem(j, "table"), *item = cJSON_GetObjectItem(j, "item");
        if (!cJSON_IsString(table) || !cJSON_IsObject(item)) { cJSON_Delete(j); continue; }
        cJSON_DeleteItemFromObject((cJSON *)item, "$static");
        /* INSERT INTO "table" (cols) VALUES (?, ...) for this column set */
        char cql[8192];
        size_t o = (size_t)snprintf(cql, sizeof cql, "INSERT INTO \"%s\" (", table->valuestring);
        int k = 0;
        for (const cJSON *c = item->child; c; c = c->next, k++) o += (size_t)snprintf(cql + o, sizeof cql - o, "%s\"%s\"", k ? ", " : "", c->string);
        o += (size_t)snprintf(cql + o, sizeof cql - o, ") VALUES (");
        for (int i = 0; i < k; i++) o += (size_t)snprintf(cql + o, sizeof cql - o, "%s?", i ? ", " : "");
        snprintf(cql + o, sizeof cql - o, ")");
        const kp_cql_prepared *prep = NULL;
        for (size_t i = 0; i < nstmts && !prep; i++)
            if (!strcmp(stmts[i].cql, cql)) prep = stmts[i].prepared;
        if (!prep) {
            if (kp_cql_prepare(client, cql, &prep, &err)) { fprintf(stderr, "cassandra_raw_loader: %s\n", err.message); return 3; }
            stmts = realloc(stmts, (nstmts + 1) * sizeof *stmts);
            stmts[nstmts++] = (statement){strdup(cql), prep};
        }
        if (rows == cap) {
            cap = cap ? cap * 2 : 1024;
            row_prep = realloc(row_prep, cap * sizeof *row_prep);
            row_values = realloc(row_values, cap * sizeof *row_values);
            keys = realloc(keys, cap * sizeof *keys);
        }
        /* the partition: the statement, then the values of its partition key columns */
        const kp_cql_metadata *vars = kp_cql_prepared_variables(prep);
        cJSON *pk = cJSON_CreateArray();
        cJSON_AddItemToArray(pk, cJSON_CreateString(cql));
        for (int32_t i = 0; i < vars->pk_count; i++) {
            const cJSON *v = cJSON_GetObjectItem(item, vars->columns[vars->pk_indexes[i]].name);
            cJSON_AddItemToArray(pk, v ? cJSON_Duplicate(v, 1) : cJSON_CreateNull());
        }
        keys[rows].key = cJSON_PrintUnformatted(pk);
        keys[rows].index = rows;
        cJSON_Delete(pk);
        memset(&row_values[rows], 0, sizeof row_values[rows]);
        if (kp_cql_values_bind(kp_cql_prepared_variables(prep), item, &row_values[rows], &err)) {
            fprintf(stderr, "cassandra_raw_loader: %s\n", err.message);
            return 2;
        }
        row_prep[rows++] = prep;
        cJSON_Delete(j);
    }
    free(line);
    fclose(in);
    qsort(keys, rows, sizeof *keys, by_key);
    long requests = 0;
    double t0 = now_s();
    for (size_t i = 0; i < rows;) {
        size_t j = i + 1;
        while (j < rows && j - i < 16 && !strcmp(keys[j].key, keys[i].key)) j++;
        int rc;
        if (j - i == 1) {
            rc = kp_cql_execute_async(client, row_prep[keys[i].index], &row_values[keys[i].index], NULL, on_done, NULL, &err);
        } else {
            kp_cql_batch_entry entries[16];
            for (size_t k = i; k < j; k++)
                entries[k - i] = (kp_cql_batch_entry){row_prep[keys[k].index], NULL, &row_values[keys[k].index]};
            rc = kp_cql_batch_async(client, KP_CQL_BATCH_UNLOGGED, entries, j - i, NULL, on_done, NULL, &err);
        }
        if (rc) { fprintf(stderr, "cassandra_raw_loader: %s\n", err.message); return 3; }
        requests++;
        i = j;
        while (kp_cql_pending(client) > cfg.max_in_flight * 4)
            if (kp_cql_poll(client, 100, &err) < 0) { fprintf(stderr, "cassandra_raw_loader: %s\n", err.message); return 3; }
    }
    while (kp_cql_pending(client) > 0)
        if (kp_cql_poll(client, 100, &err) < 0) { fprintf(stderr, "cassandra_raw_loader: %s\n", err.message); return 3; }
    double t1 = now_s();
    printf("%zu rows in %.3f s, %ld requests\n", rows, t1 - t0, requests);
    for (size_t i = 0; i < rows; i++) cJSON_free(keys[i].key);
    free(keys);
    for (size_t i = 0; i < rows; i++) kp_cql_values_free(&row_values[i]);
    free(row_values);
    free(row_prep);
    for (size_t i = 0; i < nstmts; i++) free(stmts[i].cql);
    free(stmts);
    kp_cql_client_close(client);
    return done_failed ? 1 : 0;
}
