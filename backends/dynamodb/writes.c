/*
 * writes.c — applying a write operation to a live table, and deleting items (undo).
 *
 * The items a write changes are found by comparing the neutral data before and after
 * the oracle applied it: every record inserted, updated or deleted — including every
 * denormalised copy and derived aggregate the write moved, which the oracle
 * recomputes — becomes a PutItem of its new item (which also adds or removes the
 * item's index keys: a sparse index entry appears or disappears with its attribute)
 * or a DeleteItem of its old one. An atomic write is one TransactWriteItems; where
 * the endpoint has no transactions (dynalite answers UnknownOperationException) the
 * requests go one by one, in order, and is_atomic stays 0 so the report says
 * atomicity was not exercised.
 * A record's element items (adjacency lists) go with it: put again, or deleted where the
 * record lost the element; a join record added or removed does the same for the records
 * it pairs (an adjacency list over an N:M through it). The items of records that copy attributes of a changed record
 * (ddb_copy) are put again with the new copies.
 * Invariant: after apply_write the table holds exactly the items transform makes
 * from the `after` data, for every record the write touched.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/copies.h"
#include "backends/dynamodb/conn.h"
#include "backends/dynamodb/ddb.h"
#include "core/data.h"
#include "core/mutate.h"

typedef struct change_set {
    cJSON *puts;                /* items */
    cJSON *deletes;             /* keys */
    long index_entries;         /* index entries the puts and deletes write: part of the items a
                                   write plan claims */
} change_set;

static cJSON *key_of(const cJSON *item)
{
    cJSON *key = cJSON_CreateObject();
    cJSON_AddItemToObject(key, "PK", cJSON_Duplicate(cJSON_GetObjectItemCaseSensitive(item, "PK"), 1));
    cJSON_AddItemToObject(key, "SK", cJSON_Duplicate(cJSON_GetObjectItemCaseSensitive(item, "SK"), 1));
    return key;
}

static int same_key(const cJSON *a, const cJSON *b)
{
    return cJSON_Compare(cJSON_GetObjectItemCaseSensitive(a, "PK"), cJSON_GetObjectItemCaseSensitive(b, "PK"), 1) &&
           cJSON_Compare(cJSON_GetObjectItemCaseSensitive(a, "SK"), cJSON_GetObjectItemCaseSensitive(b, "SK"), 1);
}

/* The index entries DynamoDB writes when `old` (NULL: none) becomes `cur` (NULL: deleted):
 * per local or global index, one where the item enters or leaves it or changes in it, two
 * where its index key moves (the old entry deleted, the new one put). */
static long index_entries(const ddb_layout *L, const cJSON *old, const cJSON *cur)
{
    long n = 0;
    for (size_t i = 0; i < L->lsi_count + L->gsi_count; i++) {
        const ddb_index *x = i < L->lsi_count ? &L->lsi[i] : &L->gsi[i - L->lsi_count];
        const cJSON *opk = old ? cJSON_GetObjectItemCaseSensitive(old, x->pk_attr) : NULL;
        const cJSON *osk = old ? cJSON_GetObjectItemCaseSensitive(old, x->sk_attr) : NULL;
        const cJSON *npk = cur ? cJSON_GetObjectItemCaseSensitive(cur, x->pk_attr) : NULL;
        const cJSON *nsk = cur ? cJSON_GetObjectItemCaseSensitive(cur, x->sk_attr) : NULL;
        int was = opk && osk, is = npk && nsk;
        if (was && is) n += cJSON_Compare(opk, npk, 1) && cJSON_Compare(osk, nsk, 1) ? 1 : 2;
        else n += was || is;
    }
    return n;
}

typedef struct copying_ctx {
    const kp_design *d;
    const kp_dataset *before, *after;
    change_set *cs;
} copying_ctx;

/* A record whose copies moved: its item again, when the copies made it differ. */
static int copying_record(void *p, const kp_record *old, const kp_record *cur, kp_error *err)
{
    copying_ctx *c = p;
    cJSON *item = NULL, *old_item = NULL;
    int rc = kp_ddb_item_for(c->d, c->after, cur, &item, err);
    if (rc == 0) rc = kp_ddb_item_for(c->d, c->before, old, &old_item, err);
    if (rc == 0 && !cJSON_Compare(item, old_item, 1)) {
        c->cs->index_entries += index_entries(c->d->layout, old_item, item);
        cJSON_AddItemToArray(c->cs->puts, item);
        item = NULL;
    }
    cJSON_Delete(item);
    cJSON_Delete(old_item);
    return rc;
}

/* The items of records that did not change but copy attributes of `target` (ddb_copy), a
 * record the write changed: put again with the copies `after` gives. `done` keeps each
 * such record to once. */
static int put_copying(const kp_design *d, const kp_dataset *before, const kp_dataset *after, const kp_record *target,
                       const kp_dataset *target_data, kp_record_list *done, change_set *cs, kp_error *err)
{
    const ddb_layout *L = d->layout;
    copying_ctx ctx = {d, before, after, cs};
    for (size_t e = 0; e < L->entity_count; e++) {
        const ddb_entity *de = &L->entities[e];
        const kp_rel *last = NULL;
        for (size_t k = 0; k < de->copy_count; k++) {
            const kp_rel *via = de->copies[k].rel;
            if (via == last || via->target != target->entity) continue;
            last = via;
            if (kp_copy_holders(before, after, target, target_data, via, done, copying_record, &ctx, err)) return -1;
        }
    }
    return 0;
}

/* A record's items now (`cur`: the item and its element items; NULL when it is gone) against
 * those it had (`old`, NULL when new): deletes of the keys it lost, puts of what is new or
 * changed (an element item that holds none of what changed stays). */
static int diff_record(const kp_design *d, const kp_dataset *before, const kp_dataset *after, const kp_record *old,
                       const kp_record *cur, change_set *cs, kp_error *err)
{
    cJSON *items = cJSON_CreateArray(), *old_items = cJSON_CreateArray();
    int rc = items && old_items ? 0 : kp_error_set(err, KP_ERR_NOMEM, NULL, 0, 0, "out of memory");
    if (rc == 0 && cur) rc = kp_ddb_items_for(d, after, cur, items, err);
    if (rc == 0 && old) rc = kp_ddb_items_for(d, before, old, old_items, err);
    for (const cJSON *o = old_items ? old_items->child : NULL; rc == 0 && o; o = o->next) {
        int kept = 0;
        for (const cJSON *x = items->child; x && !kept; x = x->next) kept = same_key(o, x);
        if (!kept) {
            cJSON_AddItemToArray(cs->deletes, key_of(o));
            cs->index_entries += index_entries(d->layout, o, NULL);
        }
    }
    cJSON *item;
    while (rc == 0 && (item = items->child) != NULL) {
        cJSON_DetachItemViaPointer(items, item);
        const cJSON *was = NULL;
        for (const cJSON *o = old_items->child; o && !was; o = o->next)
            if (same_key(o, item)) was = o;
        if (was && cJSON_Compare(was, item, 1)) {
            cJSON_Delete(item);
        } else {
            cs->index_entries += index_entries(d->layout, was, item);
            cJSON_AddItemToArray(cs->puts, item);
        }
    }
    cJSON_Delete(items);
    cJSON_Delete(old_items);
    return rc;
}

/* A record an element item of moved: its items diffed again (copying_ctx's fields). */
static int paired_record(void *p, const kp_record *old, const kp_record *cur, kp_error *err)
{
    copying_ctx *c = p;
    return diff_record(c->d, c->before, c->after, old, cur, c->cs, err);
}

/* A join record added, changed or removed changes the element items of the records it pairs
 * (an adjacency list over an N:M through its entity): those records, unchanged themselves,
 * are diffed again (each once, `done`: kp_copy_once). */
static int put_paired(const kp_design *d, const kp_dataset *before, const kp_dataset *after, const kp_record *join,
                      kp_record_list *done, change_set *cs, kp_error *err)
{
    const ddb_layout *L = d->layout;
    copying_ctx ctx = {d, before, after, cs};
    for (size_t e = 0; e < L->entity_count; e++) {
        const ddb_entity *holder = &L->entities[e];
        for (size_t k = 0; k < holder->element_count; k++) {
            const kp_rel *r = holder->element_items[k].elements;
            const kp_relation *rel = r->relation;
            if (rel->through != join->entity) continue;
            /* the holder is the listing's target: the N:M's "from" side when it walks the inverse */
            kp_attr **attrs = r->is_inverse ? rel->through_from : rel->through_to;
            const kp_entity *he = r->target;
            cJSON *key = cJSON_CreateObject();
            for (size_t i = 0; key && i < he->key_count; i++) {
                const cJSON *v = kp_record_get(join, attrs[i]);
                if (v) cJSON_AddItemToObject(key, he->key[i]->name, kp_data_copy(v, NULL));
            }
            if (!key) return kp_error_set(err, KP_ERR_NOMEM, NULL, 0, 0, "out of memory");
            int rc = kp_copy_once(before, after, he, key, done, paired_record, &ctx, err);
            cJSON_Delete(key);
            if (rc) return -1;
        }
    }
    return 0;
}

typedef struct collect_ctx {
    const kp_design *d;
    const kp_dataset *before, *after;
    change_set *cs;
    kp_record_list copying, paired;
} collect_ctx;

/* One changed record (kp_changed_records): its items, the items that copy from it, the
 * element items it pairs. */
static int collect_record(void *p, const kp_entity *entity, const kp_record *old, const kp_record *cur, kp_error *err)
{
    collect_ctx *c = p;
    (void)entity;
    int rc = diff_record(c->d, c->before, c->after, old, cur, c->cs, err);
    if (rc == 0 && cur) rc = put_copying(c->d, c->before, c->after, cur, c->after, &c->copying, c->cs, err);
    if (rc == 0 && old) rc = put_copying(c->d, c->before, c->after, old, c->before, &c->copying, c->cs, err);
    if (rc == 0 && cur) rc = put_paired(c->d, c->before, c->after, cur, &c->paired, c->cs, err);
    if (rc == 0 && old) rc = put_paired(c->d, c->before, c->after, old, &c->paired, c->cs, err);
    return rc;
}

/* Every item of the changed records that differs between the two datasets. */
static int collect(const kp_design *d, const kp_dataset *before, const kp_dataset *after, const kp_change *changes,
                   size_t change_count, change_set *cs, kp_error *err)
{
    collect_ctx c = {d, before, after, cs, {0}, {0}};
    int rc = kp_changed_records(before, after, changes, change_count, collect_record, &c, err);
    kp_record_list_free(&c.copying);
    kp_record_list_free(&c.paired);
    return rc;
}

static int one_by_one(kp_ddb_conn *c, const char *table, const change_set *cs, kp_error *err)
{
    for (const cJSON *k = cs->deletes->child; k; k = k->next) {
        cJSON *req = cJSON_CreateObject();
        cJSON_AddStringToObject(req, "TableName", table);
        cJSON_AddItemToObject(req, "Key", cJSON_Duplicate(k, 1));
        cJSON *resp = NULL;
        int rc = kp_ddb_call(kp_ddb_conn_client(c), "DeleteItem", req, &resp, err);
        cJSON_Delete(req);
        cJSON_Delete(resp);
        if (rc) return -1;
    }
    for (const cJSON *it = cs->puts->child; it; it = it->next) {
        cJSON *req = cJSON_CreateObject();
        cJSON_AddStringToObject(req, "TableName", table);
        cJSON_AddItemToObject(req, "Item", cJSON_Duplicate(it, 1));
        cJSON *resp = NULL;
        int rc = kp_ddb_call(kp_ddb_conn_client(c), "PutItem", req, &resp, err);
        cJSON_Delete(req);
        cJSON_Delete(resp);
        if (rc) return -1;
    }
    return 0;
}

int kp_ddb_apply_write(kp_conn *conn, const kp_design *d, const kp_dataset *before, const kp_dataset *after,
                       const void *request, const kp_change *changes, size_t change_count, kp_write_sent *out, kp_error *err)
{
    kp_ddb_conn *c = (kp_ddb_conn *)conn;
    const kp_write_request *req = request;
    const ddb_layout *L = d->layout;
    memset(out, 0, sizeof *out);
    change_set cs = {cJSON_CreateArray(), cJSON_CreateArray(), 0};
    char table[512];
    snprintf(table, sizeof table, "%s", kp_ddb_conn_table(c, L->table));
    int rc = collect(d, before, after, changes, change_count, &cs, err);
    size_t total = (size_t)cJSON_GetArraySize(cs.puts) + (size_t)cJSON_GetArraySize(cs.deletes);
    out->items = (long)total + cs.index_entries;
    out->requests = (long)total;     /* one by one, unless the transaction below goes in */
    if (rc == 0 && req && req->write->is_atomic && total > 0 && total <= KP_DDB_MAX_TRANSACT_ITEMS) {
        cJSON *tx = cJSON_CreateObject();
        cJSON *items = cJSON_AddArrayToObject(tx, "TransactItems");
        for (const cJSON *k = cs.deletes->child; k; k = k->next) {
            cJSON *op = cJSON_CreateObject();
            cJSON *del = cJSON_AddObjectToObject(op, "Delete");
            cJSON_AddStringToObject(del, "TableName", table);
            cJSON_AddItemToObject(del, "Key", cJSON_Duplicate(k, 1));
            cJSON_AddItemToArray(items, op);
        }
        for (const cJSON *it = cs.puts->child; it; it = it->next) {
            cJSON *op = cJSON_CreateObject();
            cJSON *put = cJSON_AddObjectToObject(op, "Put");
            cJSON_AddStringToObject(put, "TableName", table);
            cJSON_AddItemToObject(put, "Item", cJSON_Duplicate(it, 1));
            cJSON_AddItemToArray(items, op);
        }
        cJSON *resp = NULL;
        kp_error tx_err;
        kp_error_clear(&tx_err);
        int trc = kp_ddb_call(kp_ddb_conn_client(c), "TransactWriteItems", tx, &resp, &tx_err);
        cJSON_Delete(tx);
        cJSON_Delete(resp);
        if (trc == 0) {
            out->is_atomic = 1;
            out->requests = 1;
        } else if (kp_ddb_error_is(kp_ddb_conn_client(c), "UnknownOperationException")) {
            rc = one_by_one(c, table, &cs, err); /* no transactions here: in order, not atomic */
        } else {
            *err = tx_err;
            rc = -1;
        }
    } else if (rc == 0) {
        rc = one_by_one(c, table, &cs, err);
    }
    cJSON_Delete(cs.puts);
    cJSON_Delete(cs.deletes);
    return rc;
}

int kp_ddb_delete_items(kp_conn *conn, const kp_design *d, const kp_item_list *items, kp_error *err)
{
    kp_ddb_conn *c = (kp_ddb_conn *)conn;
    for (size_t i = 0; i < items->count; i++) {
        const kp_item *it = &items->items[i];
        cJSON *req = cJSON_CreateObject();
        cJSON_AddStringToObject(req, "TableName", kp_ddb_conn_table(c, it->container ? it->container : ((const ddb_layout *)d->layout)->table));
        cJSON_AddItemToObject(req, "Key", key_of(it->body));
        cJSON *resp = NULL;
        int rc = kp_ddb_call(kp_ddb_conn_client(c), "DeleteItem", req, &resp, err);
        cJSON_Delete(req);
        cJSON_Delete(resp);
        if (rc) return -1;
    }
    return 0;
}
