/*
 * live.c — the Cassandra backend against a live node: connecting, the keyspace and
 * its tables, keyplan's marker, seeding writes (prepared INSERTs, many in flight),
 * read-back, deletes and teardown.
 *
 * The keyspace is "<prefix><model name in snake_case>": --prefix separates people who
 * share a cluster, and nothing outside that keyspace is ever touched. keyplan's marker
 * is one row of the table keyplan_marker in it; tables without it were not created by
 * keyplan and are neither dropped nor written without --force. The replication of a
 * keyspace keyplan creates is KP_CASSANDRA_REPLICATION (CQL map text), else
 * SimpleStrategy with one replica.
 * Invariant: every seeding write is an INSERT of a whole row under its primary key
 * (an upsert), so replaying any part of a seed never duplicates a row; a batch holds
 * only rows of one partition (UNLOGGED), never rows of several.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/cassandra/cql.h"
#include "backends/emit.h"

typedef struct kp_cq_conn {
    kp_cql_client *client;
    char *prefix;
    const kp_design *design;    /* the design of the last call that named one */
    char keyspace[300];
    kp_arena arena;             /* statement texts */
    int in_flight;
    struct cached_insert { const cq_table *table; int statics; const kp_cql_prepared *prepared; } inserts[256];
    size_t insert_count;
    int is_rewriting;           /* a write ran on this connection: rows submitted now replace whole rows */
    int is_murmur3;             /* the cluster's partitioner: 1 Murmur3, -1 another, 0 not asked yet */
} kp_cq_conn;

void kp_cq_conn_rewriting(kp_conn *conn) { ((kp_cq_conn *)conn)->is_rewriting = 1; }

kp_cql_client *kp_cq_conn_client(kp_conn *conn) { return ((kp_cq_conn *)conn)->client; }
const char *kp_cq_conn_prefix(kp_conn *conn) { return ((kp_cq_conn *)conn)->prefix; }

const char *kp_cq_conn_keyspace(kp_conn *conn, const kp_design *d)
{
    kp_cq_conn *c = (kp_cq_conn *)conn;
    const cq_layout *L = d->layout;
    if (c->design != d) c->insert_count = 0;
    c->design = d;
    char raw[300];
    snprintf(raw, sizeof raw, "%s%s", c->prefix ? c->prefix : "", L->keyspace);
    kp_cql_snake_case(raw, c->keyspace, sizeof c->keyspace);
    return c->keyspace;
}

int kp_cq_connect(const kp_target *t, kp_conn **out, kp_error *err)
{
    *out = NULL;
    kp_cq_conn *c = calloc(1, sizeof *c);
    if (!c) return kp_error_set(err, KP_ERR_NOMEM, NULL, 0, 0, "out of memory");
    kp_cql_config cfg = {0};
    cfg.target = t->endpoint;
    cfg.is_insecure = t->is_insecure;
    cfg.connections = 2;
    cfg.max_in_flight = t->concurrency > 0 ? t->concurrency : 128;
    if (kp_cql_client_open(&cfg, &c->client, err)) { free(c); return -1; }
    c->prefix = strdup(t->prefix ? t->prefix : "");
    *out = (kp_conn *)c;
    return 0;
}

void kp_cq_disconnect(kp_conn *conn)
{
    kp_cq_conn *c = (kp_cq_conn *)conn;
    if (!c) return;
    kp_cql_client_close(c->client);
    kp_arena_free(&c->arena);
    free(c->prefix);
    free(c);
}

static const char *qname(kp_cq_conn *c, const char *table)
{
    char q1[300], q2[300];
    kp_cql_quote_identifier(c->keyspace, q1, sizeof q1);
    kp_cql_quote_identifier(table, q2, sizeof q2);
    return kp_arena_printf(&c->arena, "%s.%s", q1, q2);
}

/* ---- statements ------------------------------------------------------------------------------- */

const char *kp_cq_insert_text(kp_arena *A, const cq_table *t, int statics, const char *ks, const char *prefix)
{
    (void)prefix;
    char q1[300], q2[300];
    kp_cql_quote_identifier(ks, q1, sizeof q1);
    kp_cql_quote_identifier(t->name, q2, sizeof q2);
    const char *cols = "", *marks = "";
    for (size_t i = 0; i < t->col_count; i++) {
        if (statics && i >= t->pk_count && t->cols[i].role != CQ_STATIC) continue;
        cols = kp_arena_printf(A, "%s%s%s", cols, i ? ", " : "", t->cols[i].quoted);
        marks = kp_arena_printf(A, "%s%s?", marks, i ? ", " : "");
    }
    return kp_arena_printf(A, "INSERT INTO %s.%s (%s) VALUES (%s)", q1, q2, cols, marks);
}

const char *kp_cq_delete_text(kp_arena *A, const cq_table *t, int statics, const char *ks, const char *prefix)
{
    (void)prefix;
    char q1[300], q2[300];
    kp_cql_quote_identifier(ks, q1, sizeof q1);
    kp_cql_quote_identifier(t->name, q2, sizeof q2);
    const char *what = "";
    if (statics)
        for (size_t i = 0; i < t->col_count; i++)
            if (t->cols[i].role == CQ_STATIC) what = kp_arena_printf(A, "%s%s%s", what, *what ? ", " : "", t->cols[i].quoted);
    const char *where = "";
    size_t n = t->pk_count + (statics ? 0 : t->ck_count);
    for (size_t i = 0; i < n; i++) where = kp_arena_printf(A, "%s%s%s = ?", where, i ? " AND " : "", t->cols[i].quoted);
    return kp_arena_printf(A, "DELETE %s%sFROM %s.%s WHERE %s", what, *what ? " " : "", q1, q2, where);
}

/* Values for an INSERT (every column; a column the body lacks is unset, or for a
 * static row every clustering and regular column) or a DELETE (key columns). */
int kp_cq_bind_row(const cq_table *t, const cJSON *body, int statics, int key_only, kp_cql_values *out, kp_error *err)
{
    size_t n = key_only > 0 ? t->pk_count + (statics ? 0 : t->ck_count) : t->col_count;
    for (size_t i = 0; i < n; i++) {
        const cq_column *c = &t->cols[i];
        if (statics && i >= t->pk_count && c->role != CQ_STATIC) continue;
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(body, c->name);
        if (!statics && c->role == CQ_STATIC) {
            /* a row never touches its partition's static columns */
            if (kp_cql_values_add_bytes(out, NULL, NULL, -2, err)) return -1;
        } else if (!v && key_only < 0) {
            /* a rewrite: an absent value clears the column */
            if (kp_cql_values_add_bytes(out, NULL, NULL, -1, err)) return -1;
        } else if (!v) {
            if (kp_cql_values_add_bytes(out, NULL, NULL, -2, err)) return -1;
        } else if (kp_cql_values_add_json(out, NULL, c->type, v, err)) {
            return -1;
        }
    }
    return 0;
}

/* ---- marker ------------------------------------------------------------------------------------- */

static int ensure_keyspace(kp_cq_conn *c, kp_error *err)
{
    const char *repl = getenv("KP_CASSANDRA_REPLICATION");
    if (!repl || !*repl) repl = "{'class': 'SimpleStrategy', 'replication_factor': 1}";
    char q[300];
    kp_cql_quote_identifier(c->keyspace, q, sizeof q);
    const char *cql = kp_arena_printf(&c->arena, "CREATE KEYSPACE IF NOT EXISTS %s WITH replication = %s", q, repl);
    if (kp_cql_query(c->client, cql, NULL, NULL, NULL, err)) return -1;
    cql = kp_arena_printf(&c->arena, "CREATE TABLE IF NOT EXISTS %s (model text PRIMARY KEY, marker text)", qname(c, KP_CQ_MARKER_TABLE));
    return kp_cql_query(c->client, cql, NULL, NULL, NULL, err);
}

/* Runs a SELECT whose ? are the given text values (NULL-terminated); every row into *rows. */
static int select_texts(kp_cq_conn *c, const char *cql, const char *const *texts, int32_t page_size, cJSON **rows,
                        kp_error *err)
{
    *rows = NULL;
    kp_cql_values v = {0};
    const kp_cql_type *text = NULL;
    int rc = kp_cql_type_parse("text", &c->arena, &text, err);
    for (size_t i = 0; rc == 0 && texts[i]; i++) {
        cJSON *value = cJSON_CreateString(texts[i]);
        rc = kp_cql_values_add_json(&v, NULL, text, value, err);
        cJSON_Delete(value);
    }
    if (rc == 0) rc = kp_cql_fetch_all(c->client, NULL, cql, &v, page_size, rows, NULL, err);
    kp_cql_values_free(&v);
    return rc;
}

static int table_names(kp_cq_conn *c, cJSON **names, kp_error *err)
{
    const char *const args[] = {c->keyspace, NULL};
    return select_texts(c, "SELECT table_name FROM system_schema.tables WHERE keyspace_name = ?", args, 1000, names, err);
}

/* Does a row have `value` in its `column`? */
static int row_has(const cJSON *rows, const char *column, const char *value)
{
    for (const cJSON *r = rows ? rows->child : NULL; r; r = r->next) {
        const cJSON *n = cJSON_GetObjectItemCaseSensitive(r, column);
        if (cJSON_IsString(n) && !strcmp(n->valuestring, value)) return 1;
    }
    return 0;
}

static int has_name(const cJSON *rows, const char *name) { return row_has(rows, "table_name", name); }

static int read_marker(kp_cq_conn *c, const kp_design *d, const char *shard, cJSON **marker, kp_error *err)
{
    *marker = NULL;
    char key[600];
    const char *const args[] = {kp_marker_key(d->model->name, NULL, shard, key, sizeof key), NULL};
    cJSON *rows = NULL;
    const char *cql = kp_arena_printf(&c->arena, "SELECT marker FROM %s WHERE model = ?", qname(c, KP_CQ_MARKER_TABLE));
    int rc = select_texts(c, cql, args, 10, &rows, err);
    const cJSON *m = rows && rows->child ? cJSON_GetObjectItemCaseSensitive(rows->child, "marker") : NULL;
    if (cJSON_IsString(m)) *marker = cJSON_Parse(m->valuestring);
    cJSON_Delete(rows);
    return rc;
}

int kp_cq_write_marker(kp_conn *conn, const kp_design *d, const cJSON *marker, kp_error *err)
{
    kp_cq_conn *c = (kp_cq_conn *)conn;
    kp_cq_conn_keyspace(conn, d);
    if (ensure_keyspace(c, err)) return -1;
    char *text = cJSON_PrintUnformatted(marker);
    if (!text) return kp_error_set(err, KP_ERR_NOMEM, NULL, 0, 0, "out of memory");
    const kp_cql_type *type = NULL;
    kp_cql_type_parse("text", &c->arena, &type, err);
    kp_cql_values v = {0};
    char key[600];
    cJSON *name = cJSON_CreateString(kp_marker_key(d->model->name, marker, NULL, key, sizeof key)), *m = cJSON_CreateString(text);
    cJSON_free(text);
    int rc = kp_cql_values_add_json(&v, NULL, type, name, err);
    if (rc == 0) rc = kp_cql_values_add_json(&v, NULL, type, m, err);
    cJSON_Delete(name);
    cJSON_Delete(m);
    const char *cql = kp_arena_printf(&c->arena, "INSERT INTO %s (model, marker) VALUES (?, ?)", qname(c, KP_CQ_MARKER_TABLE));
    if (rc == 0) rc = kp_cql_query(c->client, cql, &v, NULL, NULL, err);
    kp_cql_values_free(&v);
    return rc;
}

int kp_cq_read_marker(kp_conn *conn, const kp_design *d, const char *shard, cJSON **out, kp_error *err)
{
    kp_cq_conn *c = (kp_cq_conn *)conn;
    kp_cq_conn_keyspace(conn, d);
    *out = NULL;
    cJSON *names = NULL;
    if (table_names(c, &names, err)) return -1;
    int has_marker = has_name(names, KP_CQ_MARKER_TABLE);
    cJSON_Delete(names);
    return has_marker ? read_marker(c, d, shard, out, err) : 0;
}

/* ---- inspect, schema, drop -------------------------------------------------------------------------- */

int kp_cq_inspect(kp_conn *conn, const kp_design *d, kp_target_state *out, kp_error *err)
{
    kp_cq_conn *c = (kp_cq_conn *)conn;
    kp_cq_conn_keyspace(conn, d);
    const cq_layout *L = d->layout;
    memset(out, 0, sizeof *out);
    cJSON *names = NULL;
    if (table_names(c, &names, err)) return -1;
    int any = 0, rows = 0;
    for (size_t i = 0; i < L->table_count; i++) {
        if (!has_name(names, L->tables[i]->name)) continue;
        any = 1;
        if (rows) continue;
        cJSON *one = NULL;
        const char *cql = kp_arena_printf(&c->arena, "SELECT * FROM %s LIMIT 1", qname(c, L->tables[i]->name));
        kp_cql_response r;
        memset(&r, 0, sizeof r);
        if (kp_cql_query(c->client, cql, NULL, NULL, &r, err)) { cJSON_Delete(names); return -1; }
        rows = r.row_count > 0;
        kp_cql_response_free(&r);
        cJSON_Delete(one);
    }
    int has_marker = has_name(names, KP_CQ_MARKER_TABLE);
    cJSON_Delete(names);
    if (has_marker && read_marker(c, d, NULL, &out->marker, err)) return -1;
    out->exists = any;
    out->is_empty = !rows;
    out->is_foreign = any && !out->marker;
    return 0;
}

int kp_cq_apply_schema(kp_conn *conn, const kp_design *d, kp_error *err)
{
    kp_cq_conn *c = (kp_cq_conn *)conn;
    kp_cq_conn_keyspace(conn, d);
    const cq_layout *L = d->layout;
    if (ensure_keyspace(c, err)) return -1;
    for (size_t i = 0; i < L->table_count; i++) {
        const char *cql = kp_cq_create_table(&c->arena, L->tables[i], c->keyspace, "");
        if (kp_cql_query(c->client, cql, NULL, NULL, NULL, err)) return -1;
    }
    return 0;
}

int kp_cq_drop(kp_conn *conn, const kp_design *d, kp_error *err)
{
    kp_cq_conn *c = (kp_cq_conn *)conn;
    kp_cq_conn_keyspace(conn, d);
    const cq_layout *L = d->layout;
    cJSON *names = NULL;
    if (table_names(c, &names, err)) return -1;
    for (size_t i = 0; i < L->table_count; i++) {
        if (!has_name(names, L->tables[i]->name)) continue;
        const char *cql = kp_arena_printf(&c->arena, "DROP TABLE IF EXISTS %s", qname(c, L->tables[i]->name));
        if (kp_cql_query(c->client, cql, NULL, NULL, NULL, err)) { cJSON_Delete(names); return -1; }
    }
    int has_marker = has_name(names, KP_CQ_MARKER_TABLE);
    cJSON_Delete(names);
    if (has_marker) {
        /* the seed marker and the shards' own (seed --shard) */
        cJSON *keys = NULL;
        const char *all = kp_arena_printf(&c->arena, "SELECT model FROM %s", qname(c, KP_CQ_MARKER_TABLE));
        if (kp_cql_fetch_all(c->client, NULL, all, NULL, 100, &keys, NULL, err)) return -1;
        const kp_cql_type *type = NULL;
        kp_cql_type_parse("text", &c->arena, &type, err);
        const char *cql = kp_arena_printf(&c->arena, "DELETE FROM %s WHERE model = ?", qname(c, KP_CQ_MARKER_TABLE));
        int rc = 0;
        for (const cJSON *row = keys ? keys->child : NULL; row && rc == 0; row = row->next) {
            const cJSON *key = cJSON_GetObjectItemCaseSensitive(row, "model");
            if (!cJSON_IsString(key) || (strcmp(key->valuestring, d->model->name) != 0 &&
                                         !kp_marker_key_is_shard(d->model->name, key->valuestring)))
                continue;
            kp_cql_values v = {0};
            rc = kp_cql_values_add_json(&v, NULL, type, key, err);
            if (rc == 0) rc = kp_cql_query(c->client, cql, &v, NULL, NULL, err);
            kp_cql_values_free(&v);
        }
        cJSON_Delete(keys);
        if (rc) return -1;
    }
    /* the keyspace goes when nothing but an empty marker table is left in it */
    if (table_names(c, &names, err)) return -1;
    int others = 0;
    for (const cJSON *r = names ? names->child : NULL; r; r = r->next) {
        const cJSON *n = cJSON_GetObjectItemCaseSensitive(r, "table_name");
        others |= !(cJSON_IsString(n) && !strcmp(n->valuestring, KP_CQ_MARKER_TABLE));
    }
    int had = names && names->child;
    cJSON_Delete(names);
    if (!others && had) {
        cJSON *left = NULL;
        const char *cql = kp_arena_printf(&c->arena, "SELECT model FROM %s", qname(c, KP_CQ_MARKER_TABLE));
        if (kp_cql_fetch_all(c->client, NULL, cql, NULL, 100, &left, NULL, err)) return -1;
        int empty = !left || !left->child;
        cJSON_Delete(left);
        if (empty) {
            char q[300];
            kp_cql_quote_identifier(c->keyspace, q, sizeof q);
            if (kp_cql_query(c->client, kp_arena_printf(&c->arena, "DROP KEYSPACE IF EXISTS %s", q), NULL, NULL, NULL, err)) return -1;
        }
    }
    return 0;
}

/* ---- seeding ------------------------------------------------------------------------------------------ */

typedef struct ack {
    kp_item item;               /* id, container, entity, tag (no body) */
    kp_ack_fn fn;
    void *ctx;
    size_t count;               /* items in this request (a batch) */
    struct ack *more;           /* the other items of the batch */
    kp_cq_conn *conn;
} ack;

static void on_done(void *ctx, const kp_cql_response *response, const kp_cql_failure *failure)
{
    ack *a = ctx;
    (void)response;
    a->conn->in_flight--;
    for (ack *x = a; x;) {
        ack *next = x->more;
        x->fn(x->ctx, &x->item, failure == NULL, failure ? &failure->error : NULL);
        free(x->item.id);
        free(x);
        x = next;
    }
}

static int same_partition(const cq_table *t, const cJSON *a, const cJSON *b)
{
    for (size_t i = 0; i < t->pk_count; i++) {
        const cJSON *x = cJSON_GetObjectItemCaseSensitive(a, t->cols[i].name), *y = cJSON_GetObjectItemCaseSensitive(b, t->cols[i].name);
        if (!x || !y || !cJSON_Compare(x, y, 1)) return 0;
    }
    return 1;
}

/* The prepared INSERT of a table (cached per table and kind). */
static int insert_statement(kp_cq_conn *c, const cq_table *t, int statics, const kp_cql_prepared **out, kp_error *err)
{
    for (size_t i = 0; i < c->insert_count; i++)
        if (c->inserts[i].table == t && c->inserts[i].statics == statics) { *out = c->inserts[i].prepared; return 0; }
    const char *cql = kp_cq_insert_text(&c->arena, t, statics, c->keyspace, "");
    if (kp_cql_prepare(c->client, cql, out, err)) return -1;
    if (c->insert_count < sizeof c->inserts / sizeof c->inserts[0])
        c->inserts[c->insert_count++] = (struct cached_insert){t, statics, *out};
    return 0;
}

typedef struct keyed { char *key; size_t index; } keyed;

static int by_partition(const void *a, const void *b)
{
    const keyed *x = a, *y = b;
    int c = strcmp(x->key, y->key);
    return c ? c : (x->index < y->index ? -1 : x->index > y->index);
}

/* Puts the rows of one partition of one table next to each other (stable), so they go
 * in one UNLOGGED batch: the node's cost is per request far more than per row. */
static int group_by_partition(kp_cq_conn *c, kp_item_list *batch, kp_error *err)
{
    size_t n = batch->count;
    if (n < 2) return 0;
    keyed *k = calloc(n, sizeof *k);
    kp_item *sorted = malloc(n * sizeof *sorted);
    int rc = k && sorted ? 0 : kp_error_set(err, KP_ERR_NOMEM, NULL, 0, 0, "out of memory");
    for (size_t i = 0; i < n && rc == 0; i++) {
        const kp_item *it = &batch->items[i];
        const cq_table *t = kp_cq_table(c->design, it->container);
        /* the table (an identifier: nothing to escape), static or not, the partition's values */
        kp_text key = {0};
        kp_text_append(&key, "[\"");
        kp_text_append(&key, it->container);
        kp_text_append(&key, cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(it->body, "$static")) ? "\",true" : "\",false");
        for (size_t col = 0; t && col < t->pk_count; col++) {
            const cJSON *v = cJSON_GetObjectItemCaseSensitive(it->body, t->cols[col].name);
            kp_text_append(&key, ",");
            if (v) kp_text_json_compact(&key, v);
            else kp_text_append(&key, "null");
        }
        kp_text_append(&key, "]");
        if (key.is_failed) kp_text_free(&key);
        k[i].key = key.data;
        k[i].index = i;
        if (!k[i].key) rc = kp_error_set(err, KP_ERR_NOMEM, NULL, 0, 0, "out of memory");
    }
    if (rc == 0) {
        qsort(k, n, sizeof *k, by_partition);
        for (size_t i = 0; i < n; i++) sorted[i] = batch->items[k[i].index];
        memcpy(batch->items, sorted, n * sizeof *sorted);
    }
    for (size_t i = 0; k && i < n; i++) free(k[i].key);
    free(k);
    free(sorted);
    return rc;
}

int kp_cq_submit(kp_conn *conn, kp_item_list *batch, kp_ack_fn on_ack, void *ctx, kp_error *err)
{
    kp_cq_conn *c = (kp_cq_conn *)conn;
    if (!c->design) return kp_error_set(err, KP_ERR_INTERNAL, NULL, 0, 0, "seeding before the keyspace was chosen (inspect or apply_schema first)");
    if (group_by_partition(c, batch, err)) return -1;
    size_t i = 0;
    while (i < batch->count) {
        kp_item *it = &batch->items[i];
        const cq_table *t = kp_cq_table(c->design, it->container);
        if (!t) return kp_error_set(err, KP_ERR_INTERNAL, NULL, 0, 0, "no table %s in this design", it->container);
        int statics = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(it->body, "$static"));
        /* a run of rows of one partition of one table: one UNLOGGED batch (at most 16) */
        size_t j = i + 1;
        while (j < batch->count && j - i < 16 && !statics == !cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(batch->items[j].body, "$static")) &&
               !strcmp(batch->items[j].container, it->container) && same_partition(t, it->body, batch->items[j].body))
            j++;
        const kp_cql_prepared *prep = NULL;
        if (insert_statement(c, t, statics, &prep, err)) return -1;
        ack *head = NULL, *tail = NULL;
        kp_cql_values *vals = calloc(j - i, sizeof *vals);
        kp_cql_batch_entry *entries = calloc(j - i, sizeof *entries);
        int rc = vals && entries ? 0 : kp_error_set(err, KP_ERR_NOMEM, NULL, 0, 0, "out of memory");
        for (size_t k = i; k < j && rc == 0; k++) {
            kp_item *x = &batch->items[k];
            /* seeding leaves absent columns unset (no tombstones); putting rows back after
             * a write must clear what the write set */
            rc = kp_cq_bind_row(t, x->body, statics, c->is_rewriting ? -1 : 0, &vals[k - i], err);
            entries[k - i].prepared = prep;
            entries[k - i].values = &vals[k - i];
            ack *a = calloc(1, sizeof *a);
            if (!a) { rc = kp_error_set(err, KP_ERR_NOMEM, NULL, 0, 0, "out of memory"); break; }
            a->item = *x;
            a->item.body = NULL;
            a->item.id = x->id ? strdup(x->id) : NULL;
            a->fn = on_ack;
            a->ctx = ctx;
            a->conn = c;
            if (tail) tail->more = a; else head = a;
            tail = a;
        }
        if (rc == 0) {
            if (j - i == 1) rc = kp_cql_execute_async(c->client, prep, &vals[0], NULL, on_done, head, err);
            else rc = kp_cql_batch_async(c->client, KP_CQL_BATCH_UNLOGGED, entries, j - i, NULL, on_done, head, err);
        }
        for (size_t k = 0; vals && k < j - i; k++) kp_cql_values_free(&vals[k]);
        free(vals);
        free(entries);
        if (rc) {
            for (ack *x = head; x;) { ack *n = x->more; free(x->item.id); free(x); x = n; }
            return -1;
        }
        c->in_flight++;
        i = j;
        /* keep the queue bounded: drive the wire while many are waiting */
        while (kp_cql_pending(c->client) > 1024)
            if (kp_cql_poll(c->client, 100, err) < 0) return -1;
    }
    return 0;
}

int kp_cq_poll(kp_conn *conn, int timeout_ms, kp_error *err)
{
    kp_cq_conn *c = (kp_cq_conn *)conn;
    return kp_cql_poll(c->client, timeout_ms, err);
}

/* ---- read-back, deletes ---------------------------------------------------------------------------------- */

/* ---- scanning every row: token ranges in flight at once ---------------------------------------------- */

/* How many token ranges a table's scan is cut into, each read page by page on its own, all
 * in flight together: the node serves them on all its cores while the client checks the
 * pages that came back (bench/README.md, "Cassandra seeding"). Murmur3 tokens only; on a
 * cluster with another partitioner each table is one range. */
#define SCAN_RANGES 8
#define SCAN_PAGE_ROWS 5000

typedef int (*row_fn)(void *ctx, const cq_table *t, const cJSON *row, int statics, kp_error *err);

typedef struct scan {
    kp_cq_conn *c;
    row_fn fn;
    void *ctx;
    int rc;                     /* the first failure stops every range */
    kp_error err;
} scan;

typedef struct scan_range {
    scan *s;
    const cq_table *t;
    const char *cql;            /* SELECT * of the table (and its token range) */
    cJSON *prev;                /* the last row of the previous page: a partition may go on in the next */
} scan_range;

static int scan_fail(scan *s, const kp_error *err)
{
    if (s->rc == 0) { s->rc = -1; s->err = *err; }
    return -1;
}

/* One row of a bucketed table's page: the row with its clustering columns, and its
 * partition's static row (once per partition) when its statics are set or when it holds
 * nothing else — what transform writes and read_back counts. */
static int scan_row(scan_range *r, const cJSON *prev, const cJSON *row, kp_error *err)
{
    const cq_table *t = r->t;
    int has_row = 1, rc = 0;
    if (t->parent) {
        for (size_t k = t->pk_count; k < t->pk_count + t->ck_count; k++) {
            const cJSON *v = cJSON_GetObjectItemCaseSensitive(row, t->cols[k].name);
            if (!v || cJSON_IsNull(v)) has_row = 0;
        }
        if (!prev || !same_partition(t, prev, row)) {
            int has_static = 0;
            for (size_t k = 0; k < t->col_count; k++) {
                const cJSON *v = cJSON_GetObjectItemCaseSensitive(row, t->cols[k].name);
                if (t->cols[k].role == CQ_STATIC && v && !cJSON_IsNull(v)) has_static = 1;
            }
            /* a static row with only null statics still exists when the partition has no rows */
            if (has_static || !has_row) rc = r->s->fn(r->s->ctx, t, row, 1, err);
        }
    }
    if (has_row && rc == 0) rc = r->s->fn(r->s->ctx, t, row, 0, err);
    return rc;
}

static int scan_next(scan_range *r, const uint8_t *state, int32_t state_len, kp_error *err);

static void on_page(void *ctx, const kp_cql_response *response, const kp_cql_failure *failure)
{
    scan_range *r = ctx;
    scan *s = r->s;
    if (failure) { scan_fail(s, &failure->error); return; }
    if (s->rc) return;
    kp_error err;
    kp_error_clear(&err);
    if (response->header.opcode != KP_CQL_OP_RESULT || response->result_kind != KP_CQL_RESULT_ROWS) {
        kp_error_set(&err, KP_ERR_TARGET, NULL, 0, 0, "reading %s back returned no rows result", r->t->name);
        scan_fail(s, &err);
        return;
    }
    const cJSON *prev = r->prev;
    for (const cJSON *row = response->rows ? response->rows->child : NULL; row; row = row->next) {
        if (scan_row(r, prev, row, &err)) { scan_fail(s, &err); return; }
        prev = row;
    }
    if (r->t->parent && prev != r->prev) {
        /* the page's last row, for the first of the next page */
        cJSON_Delete(r->prev);
        if (!(r->prev = cJSON_Duplicate(prev, 1))) {
            kp_error_set(&err, KP_ERR_NOMEM, NULL, 0, 0, "out of memory");
            scan_fail(s, &err);
            return;
        }
    }
    if ((response->metadata.flags & KP_CQL_MD_HAS_MORE_PAGES) && response->metadata.paging_state &&
        scan_next(r, response->metadata.paging_state, response->metadata.paging_state_len, &err))
        scan_fail(s, &err);
}

static int scan_next(scan_range *r, const uint8_t *state, int32_t state_len, kp_error *err)
{
    kp_cql_params params = {.page_size = SCAN_PAGE_ROWS, .paging_state = state, .paging_state_len = state_len};
    return kp_cql_query_async(r->s->c->client, r->cql, NULL, &params, on_page, r, err);
}

/* Does the cluster place partitions by Murmur3 tokens (Cassandra's default since 1.2)? */
static int is_murmur3(kp_cq_conn *c)
{
    if (c->is_murmur3) return c->is_murmur3 > 0;
    cJSON *rows = NULL;
    kp_error ignored;
    int yes = 0;
    if (kp_cql_fetch_all(c->client, NULL, "SELECT partitioner FROM system.local", NULL, 10, &rows, NULL, &ignored) == 0) {
        const cJSON *p = rows && rows->child ? cJSON_GetObjectItemCaseSensitive(rows->child, "partitioner") : NULL;
        yes = cJSON_IsString(p) && strstr(p->valuestring, "Murmur3Partitioner") != NULL;
    }
    cJSON_Delete(rows);
    c->is_murmur3 = yes ? 1 : -1;
    return yes;
}

/* Every row of the tables [from, to) of the design, passed to fn (see scan_row) as pages
 * come back: each table cut into token ranges, every range of every table in flight at
 * once. Rows of one range come in token order; ranges and tables interleave. */
static int scan_tables(kp_cq_conn *c, const kp_design *d, size_t from, size_t to, row_fn fn, void *ctx, kp_error *err)
{
    const cq_layout *L = d->layout;
    int ranges = is_murmur3(c) ? SCAN_RANGES : 1;
    size_t count = (to - from) * (size_t)ranges;
    scan s = {c, fn, ctx, 0, {0}};
    scan_range *r = calloc(count ? count : 1, sizeof *r);
    if (!r) return kp_error_set(err, KP_ERR_NOMEM, NULL, 0, 0, "out of memory");
    size_t n = 0;
    for (size_t i = from; i < to && s.rc == 0; i++) {
        const cq_table *t = L->tables[i];
        const char *all = kp_arena_printf(&c->arena, "SELECT * FROM %s", qname(c, t->name));
        const char *token = "token(";
        for (size_t k = 0; k < t->pk_count; k++) token = kp_arena_printf(&c->arena, "%s%s%s", token, k ? ", " : "", t->cols[k].quoted);
        /* (lo, hi] over the whole ring: Murmur3 never gives a key the minimum token */
        uint64_t step = UINT64_MAX / (uint64_t)ranges;
        for (int k = 0; k < ranges && s.rc == 0; k++, n++) {
            r[n] = (scan_range){&s, t, all, NULL};
            if (ranges > 1) {
                int64_t lo = (int64_t)((uint64_t)INT64_MIN + (uint64_t)k * step);
                int64_t hi = k == ranges - 1 ? INT64_MAX : (int64_t)((uint64_t)INT64_MIN + (uint64_t)(k + 1) * step);
                r[n].cql = kp_arena_printf(&c->arena, "%s WHERE %s) > %lld AND %s) <= %lld", all, token, (long long)lo, token, (long long)hi);
            }
            kp_error qerr;
            if (scan_next(&r[n], NULL, 0, &qerr)) scan_fail(&s, &qerr);
        }
    }
    /* drive every range to its end (after a failure: until what is in flight came back) */
    kp_error perr;
    while (kp_cql_pending(c->client) > 0)
        if (kp_cql_poll(c->client, 100, &perr) < 0) { scan_fail(&s, &perr); break; }
    for (size_t i = 0; i < n; i++) cJSON_Delete(r[i].prev);
    free(r);
    if (s.rc) *err = s.err;
    return s.rc;
}

/* Every row of the design's tables (see scan_row), all tables at once. */
static int each_row(kp_cq_conn *c, const kp_design *d, row_fn fn, void *ctx, kp_error *err)
{
    kp_cq_conn_keyspace((kp_conn *)c, d);
    const cq_layout *L = d->layout;
    return scan_tables(c, d, 0, L->table_count, fn, ctx, err);
}

typedef struct items_ctx {
    kp_read_item_fn fn;
    void *ctx;
} items_ctx;

/* One row or static row read back, passed with its identity and checksum. */
static int pass_row(void *p, const cq_table *t, const cJSON *row, int statics, kp_error *err)
{
    items_ctx *x = p;
    /* the key columns are in the row body of either part: the row gives the same id */
    char *id = kp_cq_item_id(t, row, statics);
    int rc = id ? x->fn(x->ctx, t->name, id, kp_cq_row_checksum(t, row, statics), err) : kp_error_set(err, KP_ERR_NOMEM, NULL, 0, 0, "out of memory");
    free(id);
    return rc;
}

int kp_cq_read_items(kp_conn *conn, const kp_design *d, kp_read_item_fn fn, void *ctx, kp_error *err)
{
    items_ctx x = {fn, ctx};
    return each_row((kp_cq_conn *)conn, d, pass_row, &x, err);
}

int kp_cq_read_back(kp_conn *conn, const kp_design *d, kp_readback *out, kp_error *err)
{
    return kp_read_back_from_items(kp_cq_read_items, conn, d, out, err);
}

int kp_cq_delete_items(kp_conn *conn, const kp_design *d, const kp_item_list *items, kp_error *err)
{
    kp_cq_conn *c = (kp_cq_conn *)conn;
    kp_cq_conn_keyspace(conn, d);
    for (size_t i = 0; i < items->count; i++) {
        const kp_item *it = &items->items[i];
        const cq_table *t = kp_cq_table(d, it->container);
        if (!t) continue;
        int statics = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(it->body, "$static"));
        const char *cql = kp_cq_delete_text(&c->arena, t, statics, c->keyspace, "");
        kp_cql_values v = {0};
        int rc = kp_cq_bind_row(t, it->body, statics, 1, &v, err);
        if (rc == 0) rc = kp_cql_query(c->client, cql, &v, NULL, NULL, err);
        kp_cql_values_free(&v);
        if (rc) return -1;
    }
    return 0;
}

/* The largest mutation the node takes: max_mutation_size (Cassandra 4.1+ names it in
 * system_views.settings; by default half of commitlog_segment_size), else half the
 * segment size. A node without the settings view (before 4.0) cannot tell: *bytes = 0
 * and the static limit stands. A failure to reach the node is an error. */
int kp_cq_server_item_limit(kp_conn *conn, double *bytes, kp_error *err)
{
    kp_cq_conn *c = (kp_cq_conn *)conn;
    *bytes = 0;
    cJSON *rows = NULL;
    kp_error query_err;
    if (kp_cql_fetch_all(c->client, NULL,
                         "SELECT name, value FROM system_views.settings WHERE name IN "
                         "('max_mutation_size_in_kb', 'commitlog_segment_size_in_mb')",
                         NULL, 100, &rows, NULL, &query_err)) {
        cJSON_Delete(rows);
        if (query_err.code == KP_ERR_TARGET && strstr(query_err.message, "system_views")) return 0; /* no such view */
        *err = query_err;
        return -1;
    }
    double mutation_kb = 0, segment_mb = 0;
    for (const cJSON *r = rows ? rows->child : NULL; r; r = r->next) {
        const cJSON *name = cJSON_GetObjectItemCaseSensitive(r, "name"), *value = cJSON_GetObjectItemCaseSensitive(r, "value");
        if (!cJSON_IsString(name) || !cJSON_IsString(value)) continue;
        char *end = NULL;
        double v = strtod(value->valuestring, &end);
        if (end == value->valuestring || v <= 0) continue;
        if (!strcmp(name->valuestring, "max_mutation_size_in_kb")) mutation_kb = v;
        else if (!strcmp(name->valuestring, "commitlog_segment_size_in_mb")) segment_mb = v;
    }
    cJSON_Delete(rows);
    *bytes = mutation_kb > 0 ? mutation_kb * 1024 : segment_mb > 0 ? segment_mb * 1024 * 1024 / 2 : 0;
    return 0;
}

/* ---- migrate: records read back, schema changes ------------------------------------------------------ */

typedef struct records_ctx {
    kp_read_record_fn on_record;
    void *ctx;
} records_ctx;

/* A row back into its record (a static row: the parent's). */
static int record_of_row(void *p, const cq_table *t, const cJSON *row, int statics, kp_error *err)
{
    records_ctx *r = p;
    cJSON *object = kp_cq_record_of(t, row, statics, err);
    return object ? r->on_record(r->ctx, statics ? t->parent : t->entity, object, err) : -1;
}

int kp_cq_read_records(kp_conn *conn, const kp_design *d, kp_read_record_fn on_record, void *ctx, kp_error *err)
{
    records_ctx r = {on_record, ctx};
    kp_cq_conn *c = (kp_cq_conn *)conn;
    kp_cq_conn_keyspace(conn, d);
    /* a table at a time: a record held by several tables is first taken from the first */
    const cq_layout *L = d->layout;
    for (size_t i = 0; i < L->table_count; i++)
        if (scan_tables(c, d, i, i + 1, record_of_row, &r, err)) return -1;
    return 0;
}

static const cq_table *table_named(const cq_layout *L, const char *name)
{
    for (size_t i = 0; i < L->table_count; i++)
        if (strcmp(L->tables[i]->name, name) == 0) return L->tables[i];
    return NULL;
}

static const cq_column *column_named(const cq_table *t, const char *name)
{
    for (size_t i = 0; i < t->col_count; i++)
        if (strcmp(t->cols[i].name, name) == 0) return &t->cols[i];
    return NULL;
}

/* Same primary key (columns, types, order), and every column both hold of one type and role:
 * the table can be changed with ALTER TABLE. */
static int alterable(const cq_table *a, const cq_table *b)
{
    if (a->pk_count != b->pk_count || a->ck_count != b->ck_count) return 0;
    for (size_t i = 0; i < a->pk_count + a->ck_count; i++)
        if (strcmp(a->cols[i].name, b->cols[i].name) || strcmp(a->cols[i].cql_type, b->cols[i].cql_type) ||
            a->cols[i].is_desc != b->cols[i].is_desc)
            return 0;
    for (size_t i = 0; i < b->col_count; i++) {
        const cq_column *x = column_named(a, b->cols[i].name);
        if (x && (strcmp(x->cql_type, b->cols[i].cql_type) || (x->role == CQ_STATIC) != (b->cols[i].role == CQ_STATIC))) return 0;
    }
    return 1;
}

/* The columns the live table has (system_schema), as rows with column_name. */
static int live_columns(kp_cq_conn *c, const char *table, cJSON **rows, kp_error *err)
{
    const char *const args[] = {c->keyspace, table, NULL};
    return select_texts(c, "SELECT column_name FROM system_schema.columns WHERE keyspace_name = ? AND table_name = ?", args,
                        1000, rows, err);
}

int kp_cq_migrate_schema(kp_conn *conn, const kp_design *from, const kp_design *to, int is_final, int *emptied,
                         char *note, size_t note_size, kp_error *err)
{
    kp_cq_conn *c = (kp_cq_conn *)conn;
    kp_cq_conn_keyspace(conn, to);
    const cq_layout *F = from->layout, *T = to->layout;
    if (!is_final && ensure_keyspace(c, err)) return -1;
    int rc = 0;
    if (is_final) {
        for (size_t i = 0; i < F->table_count && rc == 0; i++) {
            const cq_table *old = F->tables[i], *now = table_named(T, old->name);
            if (!now) {
                rc = kp_cql_query(c->client, kp_arena_printf(&c->arena, "DROP TABLE IF EXISTS %s", qname(c, old->name)),
                                  NULL, NULL, NULL, err);
                continue;
            }
            cJSON *cols = NULL;
            rc = live_columns(c, now->name, &cols, err);
            for (const cJSON *r = cols ? cols->child : NULL; r && rc == 0; r = r->next) {
                const char *name = cJSON_GetObjectItemCaseSensitive(r, "column_name")->valuestring;
                if (column_named(now, name)) continue;
                char q[300];
                kp_cql_quote_identifier(name, q, sizeof q);
                rc = kp_cql_query(c->client, kp_arena_printf(&c->arena, "ALTER TABLE %s DROP %s", qname(c, now->name), q),
                                  NULL, NULL, NULL, err);
            }
            cJSON_Delete(cols);
        }
        return rc;
    }
    for (size_t i = 0; i < T->table_count && rc == 0; i++) {
        const cq_table *now = T->tables[i], *old = table_named(F, now->name);
        if (old && !alterable(old, now)) {
            char line[600];
            snprintf(line, sizeof line, "table %s is dropped and created again: its primary key or a column's type "
                     "changes, which ALTER TABLE cannot do (not online: it is empty until its rows are written again)",
                     now->name);
            kp_note_add(note, note_size, line);
            *emptied = 1;
            rc = kp_cql_query(c->client, kp_arena_printf(&c->arena, "DROP TABLE IF EXISTS %s", qname(c, now->name)), NULL,
                              NULL, NULL, err);
            old = NULL;
        }
        if (rc == 0) rc = kp_cql_query(c->client, kp_cq_create_table(&c->arena, now, c->keyspace, ""), NULL, NULL, NULL, err);
        if (rc || !old) continue;
        cJSON *cols = NULL;
        rc = live_columns(c, now->name, &cols, err);
        for (size_t k = 0; k < now->col_count && rc == 0; k++) {
            if (row_has(cols, "column_name", now->cols[k].name)) continue;
            rc = kp_cql_query(c->client, kp_arena_printf(&c->arena, "ALTER TABLE %s ADD %s %s%s", qname(c, now->name),
                                                         now->cols[k].quoted, now->cols[k].cql_type,
                                                         now->cols[k].role == CQ_STATIC ? " STATIC" : ""),
                              NULL, NULL, NULL, err);
        }
        cJSON_Delete(cols);
    }
    return rc;
}
