/*
 * writes.c — applying a write operation to live collections, and deleting documents
 * (verify's undo).
 *
 * The documents a write changes are found by comparing the neutral data before and
 * after the oracle applied it: every record inserted, updated or deleted — and every
 * copy and aggregate the oracle recomputed — names the document that holds it: its
 * own, the parent document it is embedded in, the parent documents whose subset may
 * hold it, and the documents that copy its fields (extended references). Each of those
 * documents is rebuilt from the `after` data exactly as transform builds it and
 * replaced by `_id` (upserting a new one), or deleted when its record is gone. A
 * changed child embedded in its parent therefore rewrites the parent document.
 * FerretDB has no transactions: the documents are written in order, and
 * is_atomic is set only when the whole write was one document (atomic anyway).
 * Invariant: after apply_write the collections hold exactly the documents transform
 * makes from the `after` data, for every document the write touched.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/mongodb/conn.h"
#include "backends/copies.h"
#include "backends/mongodb/mongo.h"
#include "core/arena.h"
#include "core/data.h"

#define DELETES_PER_COMMAND KP_MG_WRITE_BATCH
#define STORES_PER_COMMAND KP_MG_WRITE_BATCH

typedef struct owner_ref {
    const kp_entity *entity;        /* owns a collection */
    cJSON *key;                     /* its key attributes */
} owner_ref;

typedef struct owners {
    owner_ref *items;
    size_t count, cap;
    kp_arena arena;
    kp_strmap seen;                 /* "<entity index>:<key JSON>": each document once, in constant time (a
                                       write that deletes a category and its 65,000 items and bids compared
                                       every owner with every other) */
} owners;

static int add_owner(owners *o, const kp_entity *e, const cJSON *record)
{
    cJSON *key = cJSON_CreateObject();
    for (size_t k = 0; key && k < e->key_count; k++) {
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(record, e->key[k]->name);
        if (v) cJSON_AddItemToObject(key, e->key[k]->name, kp_data_copy(v, NULL));
    }
    char *text = key ? cJSON_PrintUnformatted(key) : NULL;
    const char *name = text ? kp_arena_printf(&o->arena, "%zu:%s", e->index, text) : NULL;
    cJSON_free(text);
    if (!name) { cJSON_Delete(key); return -1; }
    if (kp_strmap_get(&o->seen, name)) { cJSON_Delete(key); return 0; }
    if (kp_strmap_put(&o->arena, &o->seen, name, (void *)e)) { cJSON_Delete(key); return -1; }
    if (o->count == o->cap) {
        size_t cap = o->cap ? o->cap * 2 : 16;
        owner_ref *bigger = realloc(o->items, cap * sizeof *bigger);
        if (!bigger) { cJSON_Delete(key); return -1; }
        o->items = bigger;
        o->cap = cap;
    }
    o->items[o->count++] = (owner_ref){e, key};
    return 0;
}

static void owners_free(owners *o)
{
    for (size_t i = 0; i < o->count; i++) cJSON_Delete(o->items[i].key);
    free(o->items);
    kp_arena_free(&o->arena);
}

static const kp_rel *reverse(const kp_rel *r) { return r->is_inverse ? &r->relation->forward : &r->relation->inverse; }

/* The document that holds record r: its own, or its parent's. */
static int document_of(const mg_layout *L, const kp_dataset *data, const kp_record *r, owners *o, kp_error *err)
{
    const mg_entity *me = &L->entities[r->entity->index];
    if (me->collection) {
        if (add_owner(o, r->entity, r->object)) return kp_error_set(err, KP_ERR_NOMEM, NULL, 0, 0, "out of memory");
        return 0;
    }
    if (!me->parent) return 0;
    kp_rel *up = (kp_rel *)reverse(me->parent_rel);
    kp_record *parent = kp_dataset_follow_one(data, r, &up, 1);
    return parent ? document_of(L, data, parent, o, err) : 0;
}

/* The documents that hold record r (of `data`) or copy from it. */
static int holders(const mg_layout *L, const kp_dataset *data, const kp_record *r, owners *o, kp_error *err)
{
    if (document_of(L, data, r, o, err)) return -1;
    for (size_t e = 0; e < L->entity_count; e++) {
        const mg_entity *pe = &L->entities[e];
        /* subsets of referenced children held by their parent */
        for (size_t i = 0; i < pe->nested_count; i++) {
            const mg_nested *n = &pe->nested[i];
            if (!n->subset || n->child->entity != r->entity) continue;
            kp_rel *up = (kp_rel *)reverse(n->rel);
            kp_record *parent = kp_dataset_follow_one(data, r, &up, 1);
            if (parent && document_of(L, data, parent, o, err)) return -1;
        }
        /* documents that copy fields of r (extended references) */
        for (size_t i = 0; i < pe->extref_count; i++) {
            const mg_extref *x = &pe->extrefs[i];
            if (x->rel->target != r->entity) continue;
            kp_record_list copies = {0};
            if (kp_copy_holder_records(data, r, x->rel, &copies, err)) return -1;
            for (size_t k = 0; k < copies.count; k++) {
                if (document_of(L, data, copies.items[k], o, err)) { kp_record_list_free(&copies); return -1; }
                /* a copy inside a subset element lives in the subset's parent too */
                for (size_t q = 0; q < L->entity_count; q++)
                    for (size_t j = 0; j < L->entities[q].nested_count; j++) {
                        const mg_nested *n = &L->entities[q].nested[j];
                        if (!n->subset || n->child->entity != copies.items[k]->entity) continue;
                        kp_rel *up = (kp_rel *)reverse(n->rel);
                        kp_record *parent = kp_dataset_follow_one(data, copies.items[k], &up, 1);
                        if (parent && document_of(L, data, parent, o, err)) { kp_record_list_free(&copies); return -1; }
                    }
            }
            kp_record_list_free(&copies);
        }
    }
    return 0;
}

typedef struct change_set {
    cJSON *stores;                  /* documents (replace by _id, upsert) */
    cJSON *store_colls;             /* their collection names */
    cJSON *deletes;                 /* _ids */
    cJSON *delete_colls;
} change_set;

typedef struct holders_ctx {
    const mg_layout *L;
    const kp_dataset *before, *after;
    owners *o;
} holders_ctx;

/* One changed record (kp_changed_records): the documents that hold it or copy from it,
 * before and after. */
static int holders_of_change(void *p, const kp_entity *entity, const kp_record *old, const kp_record *cur, kp_error *err)
{
    holders_ctx *c = p;
    (void)entity;
    int rc = cur ? holders(c->L, c->after, cur, c->o, err) : 0;
    if (rc == 0 && old) rc = holders(c->L, c->before, old, c->o, err);
    return rc;
}

static int collect(const kp_design *d, const kp_dataset *before, const kp_dataset *after, const kp_change *changes,
                   size_t change_count, change_set *cs, kp_error *err)
{
    const mg_layout *L = d->layout;
    owners o = {0};
    holders_ctx hc = {L, before, after, &o};
    int rc = kp_changed_records(before, after, changes, change_count, holders_of_change, &hc, err);
    for (size_t i = 0; i < o.count && rc == 0; i++) {
        const kp_entity *e = o.items[i].entity;
        const mg_entity *me = &L->entities[e->index];
        kp_record *now = kp_dataset_find_like(after, e, o.items[i].key);
        kp_record *was = kp_dataset_find_like(before, e, o.items[i].key);
        cJSON *doc_now = NULL, *doc_was = NULL;
        if (now && kp_mg_document(d, after, now, &doc_now, err)) { rc = -1; break; }
        if (was && kp_mg_document(d, before, was, &doc_was, err)) { cJSON_Delete(doc_now); rc = -1; break; }
        if (doc_now && (!doc_was || kp_mg_item_checksum(doc_now) != kp_mg_item_checksum(doc_was))) {
            cJSON_AddItemToArray(cs->stores, doc_now);
            cJSON_AddItemToArray(cs->store_colls, cJSON_CreateString(me->collection->name));
            doc_now = NULL;
        } else if (!doc_now && doc_was) {
            cJSON_AddItemToArray(cs->deletes, cJSON_Duplicate(cJSON_GetObjectItemCaseSensitive(doc_was, "_id"), 1));
            cJSON_AddItemToArray(cs->delete_colls, cJSON_CreateString(me->collection->name));
        }
        cJSON_Delete(doc_now);
        cJSON_Delete(doc_was);
    }
    owners_free(&o);
    return rc;
}

int kp_mg_apply_write(kp_conn *conn, const kp_design *d, const kp_dataset *before, const kp_dataset *after,
                      const void *request, const kp_change *changes, size_t change_count, kp_write_sent *out,
                      kp_error *err)
{
    (void)request;
    kp_mg_conn *c = (kp_mg_conn *)conn;
    memset(out, 0, sizeof *out);
    kp_mg_conn_use(c, d);
    change_set cs = {cJSON_CreateArray(), cJSON_CreateArray(), cJSON_CreateArray(), cJSON_CreateArray()};
    int rc = collect(d, before, after, changes, change_count, &cs, err);
    size_t total = (size_t)cJSON_GetArraySize(cs.stores) + (size_t)cJSON_GetArraySize(cs.deletes);
    /* deletes first (a document whose key moved), then the stores, in order. The deletes of one collection that follow each other go in one ordered delete
     * command, still one statement per document, run in order and stopped by the first that
     * fails, as before, but without a round trip per document: a cascade deletes hundreds
     * (2,409 in one verify of saas-control-plane's delete-workspace). */
    const cJSON *coll = cs.delete_colls->child;
    const cJSON *id = cs.deletes->child;
    while (rc == 0 && id) {
        const char *collection = coll->valuestring;
        cJSON *ids = cJSON_CreateArray();
        for (int n = 0; id && n < DELETES_PER_COMMAND && strcmp(coll->valuestring, collection) == 0; n++) {
            cJSON_AddItemToArray(ids, cJSON_Duplicate(id, 1));
            id = id->next;
            coll = coll->next;
        }
        char name[512];
        snprintf(name, sizeof name, "%s", kp_mg_conn_collection(c, collection));
        rc = kp_mg_delete_ids(kp_mg_conn_client(c), name, ids, err);
        cJSON_Delete(ids);
        out->requests++;
    }
    /* the stores of one collection that follow each other go in one bulk write (documents
     * of their own: their order does not matter), as a write's updateMany would: an undo or
     * a cascade puts back thousands, one document at a time took minutes on FerretDB */
    coll = cs.store_colls->child;
    cJSON *doc = cs.stores->child;
    cJSON *group[STORES_PER_COMMAND];
    int ok[STORES_PER_COMMAND];
    while (rc == 0 && doc) {
        const char *collection = coll->valuestring;
        size_t n = 0;
        for (; doc && n < STORES_PER_COMMAND && strcmp(coll->valuestring, collection) == 0; n++) {
            group[n] = doc;
            doc = doc->next;
            coll = coll->next;
        }
        char name[512];
        snprintf(name, sizeof name, "%s", kp_mg_conn_collection(c, collection));
        rc = kp_mg_bulk_store(kp_mg_conn_client(c), name, group, n, 1, ok, err);
        for (size_t i = 0; rc == 0 && i < n; i++)
            if (!ok[i])
                rc = kp_error_set(err, KP_ERR_TARGET, NULL, 0, 0, "MongoDB did not store a document of %s that the write "
                                  "changed", collection);
        out->requests++;
    }
    out->items = (long)total;
    if (rc == 0 && total == 1) out->is_atomic = 1;
    cJSON_Delete(cs.stores);
    cJSON_Delete(cs.store_colls);
    cJSON_Delete(cs.deletes);
    cJSON_Delete(cs.delete_colls);
    return rc;
}

int kp_mg_delete_items(kp_conn *conn, const kp_design *d, const kp_item_list *items, kp_error *err)
{
    kp_mg_conn *c = (kp_mg_conn *)conn;
    kp_mg_conn_use(c, d);
    size_t i = 0;
    while (i < items->count) {
        const char *container = items->items[i].container;
        cJSON *ids = cJSON_CreateArray();
        while (i < items->count && strcmp(items->items[i].container, container) == 0) {
            const cJSON *id = cJSON_GetObjectItemCaseSensitive(items->items[i].body, "_id");
            if (id) cJSON_AddItemToArray(ids, cJSON_Duplicate(id, 1));
            i++;
        }
        char name[512];
        snprintf(name, sizeof name, "%s", kp_mg_conn_collection(c, container));
        int rc = kp_mg_delete_ids(kp_mg_conn_client(c), name, ids, err);
        cJSON_Delete(ids);
        if (rc) return -1;
    }
    return 0;
}
