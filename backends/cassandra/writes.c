/*
 * writes.c — applying a write operation to live tables (verify --writes).
 *
 * The rows a write changes are found by comparing the neutral data before and after
 * the oracle applied it: every record inserted, updated or deleted (denormalised
 * copies and aggregates the oracle recomputed included) is transformed before and
 * after, exactly as seeding transforms it, in every table that holds a copy of it and
 * every table that holds it as static columns; the records whose rows copy attributes of
 * a changed record (extended references) are transformed before and after too. Rows that disappeared are deleted by
 * primary key; rows that are new or changed are rewritten whole (absent columns
 * nulled). They go in one LOGGED BATCH when there are several, so the copies across
 * tables change together (atomic, not isolated), as the write plan says; more than one
 * batch holds (20 statements, 32 KiB of rows) go in several, in order, not atomic.
 * Invariant: after apply_write every table holds exactly the rows transform makes
 * from the `after` data, for every record the write touched.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/cassandra/cql.h"
#include "backends/copies.h"
#include "core/data.h"


static int rows_of(const kp_design *d, const kp_dataset *data, const kp_record *r, kp_item_list *out, kp_error *err)
{
    return kp_cq_transform(d, data, r, out, err);
}

typedef struct copying_ctx {
    const kp_design *d;
    const kp_dataset *before, *after;
    kp_item_list *was, *now;
} copying_ctx;

static int copying_record(void *p, const kp_record *old, const kp_record *cur, kp_error *err)
{
    copying_ctx *c = p;
    if (kp_cq_transform(c->d, c->after, cur, c->now, err)) return -1;
    return kp_cq_transform(c->d, c->before, old, c->was, err);
}

/* The records that did not change themselves but whose rows copy attributes of `target`
 * (cq_column.via), a record the write changed: their rows before and after. `done` keeps
 * each such record to once. */
static int copying_rows(const kp_design *d, const kp_dataset *before, const kp_dataset *after, const kp_record *target,
                        const kp_dataset *target_data, kp_record_list *done, kp_item_list *was, kp_item_list *now, kp_error *err)
{
    const cq_layout *L = d->layout;
    copying_ctx ctx = {d, before, after, was, now};
    for (size_t i = 0; i < L->table_count; i++) {
        const cq_table *t = L->tables[i];
        const kp_rel *last = NULL;
        for (size_t k = 0; k < t->col_count; k++) {
            const kp_rel *via = t->cols[k].via;
            if (!via || via == last || via->target != target->entity) continue;
            last = via;
            if (kp_copy_holders(before, after, target, target_data, via, done, copying_record, &ctx, err)) return -1;
        }
    }
    return 0;
}

/* The rows of a list by id, for look-ups in log time (a write that deletes a category and
 * its items moves hundreds of thousands of rows: a linear search per row was quadratic). */
typedef struct by_id { const kp_item **rows; size_t count; } by_id;

static int compare_ids(const void *a, const void *b)
{
    const kp_item *x = *(const kp_item *const *)a, *y = *(const kp_item *const *)b;
    return strcmp(x->id ? x->id : "", y->id ? y->id : "");
}

static int index_ids(const kp_item_list *l, by_id *out)
{
    out->count = 0;
    out->rows = malloc(sizeof *out->rows * (l->count ? l->count : 1));
    if (!out->rows) return -1;
    for (size_t i = 0; i < l->count; i++)
        if (l->items[i].id) out->rows[out->count++] = &l->items[i];
    qsort(out->rows, out->count, sizeof *out->rows, compare_ids);
    return 0;
}

static const kp_item *find_item(const by_id *index, const char *id)
{
    size_t lo = 0, hi = index->count;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = strcmp(index->rows[mid]->id, id);
        if (c == 0) return index->rows[mid];
        if (c < 0) lo = mid + 1;
        else hi = mid;
    }
    return NULL;
}

typedef struct rows_ctx {
    const kp_design *d;
    const kp_dataset *before, *after;
    kp_record_list *copying;
    kp_item_list *was, *now;
} rows_ctx;

/* One changed record (kp_changed_records): its rows before and after, and the rows of the
 * records that copy from it. */
static int rows_of_change(void *p, const kp_entity *entity, const kp_record *old, const kp_record *cur, kp_error *err)
{
    rows_ctx *c = p;
    (void)entity;
    int rc = cur ? rows_of(c->d, c->after, cur, c->now, err) : 0;
    if (rc == 0 && old) rc = rows_of(c->d, c->before, old, c->was, err);
    if (rc == 0 && cur) rc = copying_rows(c->d, c->before, c->after, cur, c->after, c->copying, c->was, c->now, err);
    if (rc == 0 && old) rc = copying_rows(c->d, c->before, c->after, old, c->before, c->copying, c->was, c->now, err);
    return rc;
}

int kp_cq_apply_write(kp_conn *conn, const kp_design *d, const kp_dataset *before, const kp_dataset *after,
                      const void *request, const kp_change *changes, size_t change_count,
                      kp_write_sent *out, kp_error *err)
{
    (void)request;
    memset(out, 0, sizeof *out);
    kp_cq_conn_rewriting(conn);
    const char *ks = kp_cq_conn_keyspace(conn, d);
    kp_cql_client *client = kp_cq_conn_client(conn);
    kp_item_list was = {0}, now = {0};
    kp_record_list copying = {0};
    int rc = 0;
    rows_ctx changed = {d, before, after, &copying, &was, &now};
    rc = kp_changed_records(before, after, changes, change_count, rows_of_change, &changed, err);
    kp_record_list_free(&copying);
    /* the statements: deletes of rows gone, then rewrites of rows new or changed */
    kp_arena A = {0};
    size_t cap = was.count + now.count + 1, count = 0;
    kp_cql_batch_entry *entries = calloc(cap, sizeof *entries);
    kp_cql_values *values = calloc(cap, sizeof *values);
    size_t *sizes = calloc(cap, sizeof *sizes);
    by_id was_ids = {0}, now_ids = {0};
    if (rc == 0 && (!entries || !values || !sizes || index_ids(&was, &was_ids) || index_ids(&now, &now_ids)))
        rc = kp_error_set(err, KP_ERR_NOMEM, NULL, 0, 0, "out of memory");
    for (size_t i = 0; i < was.count && rc == 0; i++) {
        const kp_item *it = &was.items[i];
        if (it->id && find_item(&now_ids, it->id)) continue;
        const cq_table *t = kp_cq_table(d, it->container);
        int statics = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(it->body, "$static"));
        entries[count].cql = kp_cq_delete_text(&A, t, statics, ks, "");
        rc = kp_cq_bind_row(t, it->body, statics, 1, &values[count], err);
        entries[count].values = &values[count];
        sizes[count] = 64;
        count++;
    }
    for (size_t i = 0; i < now.count && rc == 0; i++) {
        const kp_item *it = &now.items[i];
        const kp_item *old = it->id ? find_item(&was_ids, it->id) : NULL;
        if (old && kp_cq_item_checksum(old->body) == kp_cq_item_checksum(it->body)) continue;
        const cq_table *t = kp_cq_table(d, it->container);
        int statics = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(it->body, "$static"));
        entries[count].cql = kp_cq_insert_text(&A, t, statics, ks, "");
        rc = kp_cq_bind_row(t, it->body, statics, -1, &values[count], err);
        entries[count].values = &values[count];
        sizes[count] = it->bytes + 64;
        count++;
    }
    /* in order, as few batches as the limits allow (a row larger than the byte limit goes
     * alone, as one statement); atomic only when all went in one */
    size_t batches = 0;
    for (size_t at = 0, n; at < count && rc == 0; at += n, batches++) {
        size_t bytes = 0;
        for (n = 0; at + n < count && n < KP_CQ_MAX_BATCH && (n == 0 || bytes + sizes[at + n] <= KP_CQ_BATCH_BYTES); n++)
            bytes += sizes[at + n];
        rc = n == 1 ? kp_cql_query(client, entries[at].cql, entries[at].values, NULL, NULL, err)
                    : kp_cql_batch_execute(client, KP_CQL_BATCH_LOGGED, entries + at, n, NULL, NULL, err);
    }
    out->items = (long)count;
    out->requests = (long)batches;
    if (rc == 0 && batches == 1) out->is_atomic = 1;
    for (size_t i = 0; values && i < count; i++) kp_cql_values_free(&values[i]);
    free(values);
    free(sizes);
    free(entries);
    free(was_ids.rows);
    free(now_ids.rows);
    kp_arena_free(&A);
    kp_item_list_free(&was);
    kp_item_list_free(&now);
    return rc;
}
