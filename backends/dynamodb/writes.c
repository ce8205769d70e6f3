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
 * requests go one by one, in order, and atomic_exercised stays 0 so the report says
 * atomicity was not exercised.
 * Invariant: after apply_write the table holds exactly the items transform makes
 * from the `after` data, for every record the write touched.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/dynamodb/conn.h"
#include "backends/dynamodb/ddb.h"
#include "core/data.h"
#include "core/mutate.h"

typedef struct change_set {
    cJSON *puts;                /* items */
    cJSON *deletes;             /* keys */
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

/* Every record whose item differs between the two datasets. */
static int collect(const kp_design *d, const kp_dataset *before, const kp_dataset *after, change_set *cs, kp_error *err)
{
    const kp_model *m = d->model;
    for (size_t e = 0; e < m->entity_count; e++) {
        const kp_entity *entity = m->entities[e];
        size_t n;
        kp_record *const *recs = kp_dataset_records(after, entity, &n);
        for (size_t i = 0; i < n; i++) {
            kp_record *old = kp_dataset_find_like(before, entity, recs[i]->object);
            if (old && kp_data_equal(old->object, recs[i]->object, NULL)) continue;
            cJSON *item;
            if (kp_ddb_item_for(d, recs[i], &item, err)) return -1;
            if (old) {
                cJSON *old_item;
                if (kp_ddb_item_for(d, old, &old_item, err)) { cJSON_Delete(item); return -1; }
                if (!same_key(old_item, item)) cJSON_AddItemToArray(cs->deletes, key_of(old_item));
                cJSON_Delete(old_item);
            }
            cJSON_AddItemToArray(cs->puts, item);
        }
        recs = kp_dataset_records(before, entity, &n);
        for (size_t i = 0; i < n; i++) {
            if (kp_dataset_find_like(after, entity, recs[i]->object)) continue;
            cJSON *old_item;
            if (kp_ddb_item_for(d, recs[i], &old_item, err)) return -1;
            cJSON_AddItemToArray(cs->deletes, key_of(old_item));
            cJSON_Delete(old_item);
        }
    }
    return 0;
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
                       const void *request, int *atomic_exercised, kp_error *err)
{
    kp_ddb_conn *c = (kp_ddb_conn *)conn;
    const kp_write_request *req = request;
    const ddb_layout *L = d->layout;
    *atomic_exercised = 0;
    change_set cs = {cJSON_CreateArray(), cJSON_CreateArray()};
    char table[512];
    snprintf(table, sizeof table, "%s", kp_ddb_conn_table(c, L->table));
    int rc = collect(d, before, after, &cs, err);
    size_t total = (size_t)cJSON_GetArraySize(cs.puts) + (size_t)cJSON_GetArraySize(cs.deletes);
    if (rc == 0 && req && req->write->is_atomic && total > 0 && total <= 100) {
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
            *atomic_exercised = 1;
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
