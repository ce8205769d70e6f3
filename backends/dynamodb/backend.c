/*
 * backend.c — the DynamoDB kp_backend: its limits, and transform (a neutral record ->
 * the items it becomes in the single-table layout: its item, with the copies of the
 * records it references, and its element items where an adjacency list indexes an array).
 *
 * Invariant: transform is a pure function of the design, the record and the records its
 * copies come from, so a resumed or repeated seed writes byte-identical items
 * (idempotent puts keyed by PK/SK).
 */
#include "backends/copies.h"
#include "backends/dynamodb/ddb.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/dynamodb/conn.h"
#include "core/mutate.h"

/* List prices of the standard table class, as AWS publishes them since it halved on-demand
 * throughput prices on 2024-11-01: on-demand per million request units, provisioned per
 * capacity unit-hour, storage per GB-month. The first region is the default. */
static const kp_region_prices ddb_regions[] = {
    {"us-east-1", 0.125, 0.625, 0.00013, 0.00065, 0.25},
    {"us-west-2", 0.125, 0.625, 0.00013, 0.00065, 0.25},
    {"eu-west-1", 0.1415, 0.7068, 0.0001471, 0.000735, 0.283},
    {"eu-central-1", 0.1525, 0.7625, 0.0001586, 0.000793, 0.306},
    {"ap-northeast-1", 0.1427, 0.7135, 0.0001484, 0.000742, 0.285},
};

static const kp_pricing ddb_pricing = {
    .service = "DynamoDB",
    .as_of = "2024-11",
    .source = "https://aws.amazon.com/dynamodb/pricing/",
    .regions = ddb_regions,
    .region_count = sizeof ddb_regions / sizeof ddb_regions[0],
};

static const kp_limits ddb_limits = {
    .max_item_bytes = 400 * 1024,
    .max_collection_bytes = 10e9,
    .max_partition_rows = 0,
    .partition_read_per_s = 3000,
    .partition_write_per_s = 1000,
    .page_bytes = 1024 * 1024,
    .max_batch_write = 25,
    .max_batch_get = 100,
    .max_secondary_indexes = KP_DDB_MAX_GSI,
    .max_local_indexes = KP_DDB_MAX_LSI,
    .read_unit = "RCU",
    .write_unit = "WCU",
    .pricing = &ddb_pricing,
    .routes_by_partition_key = 1,
};

/* A put costs one write unit per started KB of the item, and the same again for every
 * secondary index (projecting all attributes) whose keys the item carries. */
static double ddb_item_write_units(const kp_design *d, const kp_item *item)
{
    const ddb_layout *L = d->layout;
    double per = (double)((item->bytes + 1023) / 1024);
    if (per < 1) per = 1;
    double units = per;
    for (size_t i = 0; i < L->lsi_count; i++)
        if (cJSON_GetObjectItemCaseSensitive(item->body, L->lsi[i].sk_attr)) units += per;
    for (size_t i = 0; i < L->gsi_count; i++)
        if (cJSON_GetObjectItemCaseSensitive(item->body, L->gsi[i].pk_attr)) units += per;
    return units;
}

/* Does the record meet a sparse placement's literal conditions? */
static int meets(const kp_record *r, const ddb_placement *pl)
{
    for (size_t i = 0; i < pl->only_when_count; i++) {
        const kp_cond *c = &pl->only_when[i];
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(r->object, c->attr->name);
        if (!v || !c->value.literal) return 0;
        char a[512], b[512];
        if (kp_ddb_key_text(c->attr, 0, v, a, sizeof a) || kp_ddb_key_text(c->attr, 0, c->value.literal, b, sizeof b)) return 0;
        if (strcmp(a, b) != 0) return 0;
    }
    return 1;
}

/* The shard suffix of an item: a stable hash of its base key. */
static unsigned shard_of(const char *pk, const char *sk, int shards)
{
    uint64_t h = 1469598103934665603ULL;
    for (const char *c = pk; *c; c++) { h ^= (unsigned char)*c; h *= 1099511628211ULL; }
    for (const char *c = sk; *c; c++) { h ^= (unsigned char)*c; h *= 1099511628211ULL; }
    return (unsigned)(h % (uint64_t)shards);
}

/* An index key of record r: its own attributes, and the copies of its targets' a segment
 * names (none without the data they come from: the item is not in the index). */
static int index_key(const kp_dataset *data, const kp_record *r, const ddb_format *f, char *buf, size_t size)
{
    int copies = 0;
    for (size_t i = 0; i < f->count; i++) copies |= f->segs[i].via != NULL;
    if (!copies) return kp_ddb_format_value(f, r->object, buf, size);
    const cJSON *values[32];
    size_t n = 0;
    for (size_t i = 0; i < f->count; i++) {
        const ddb_segment *s = &f->segs[i];
        if (s->literal) continue;
        if (n == sizeof values / sizeof *values) return -1;
        const kp_record *source = s->via && data ? kp_copy_source(data, r, s->via) : NULL;
        values[n++] = !s->via ? cJSON_GetObjectItemCaseSensitive(r->object, s->attr->name)
                      : source ? kp_record_get(source, s->attr) : NULL;
    }
    return kp_ddb_format_values(f, values, n, buf, size);
}

int kp_ddb_item_for(const kp_design *d, const kp_dataset *data, const kp_record *r, cJSON **out, kp_error *err)
{
    const ddb_layout *L = d->layout;
    const ddb_entity *e = &L->entities[r->entity->index];
    cJSON *item = cJSON_CreateObject();
    if (!item) return kp_error_set(err, KP_ERR_NOMEM, NULL, 0, 0, "out of memory");
    char pk[2048], sk[2048];
    const ddb_placement *base = &e->placements[0];
    if (kp_ddb_format_value(&base->pk, r->object, pk, sizeof pk) ||
        kp_ddb_format_value(&base->sk, r->object, sk, sizeof sk)) {
        cJSON_Delete(item);
        return kp_error_set(err, KP_ERR_DATA, NULL, (int)r->line, 0,
                            "a %s record lacks a value its DynamoDB key needs (%s / %s)", r->entity->name,
                            kp_ddb_format_describe((kp_arena *)&L->arena, &base->pk),
                            kp_ddb_format_describe((kp_arena *)&L->arena, &base->sk));
    }
    cJSON_AddItemToObject(item, "PK", cJSON_CreateObject());
    cJSON_AddStringToObject(cJSON_GetObjectItem(item, "PK"), "S", pk);
    cJSON_AddItemToObject(item, "SK", cJSON_CreateObject());
    cJSON_AddStringToObject(cJSON_GetObjectItem(item, "SK"), "S", sk);
    for (size_t i = 1; i < e->placement_count; i++) {
        const ddb_placement *pl = &e->placements[i];
        if (!meets(r, pl)) continue;
        char ipk[2048], isk[2048];
        if (pl->index->kind == DDB_GSI && index_key(data, r, &pl->pk, ipk, sizeof ipk)) continue;
        if (index_key(data, r, &pl->sk, isk, sizeof isk)) continue;
        if (pl->index->kind == DDB_GSI) {
            if (pl->shards > 1) {
                size_t len = strlen(ipk);
                snprintf(ipk + len, sizeof ipk - len, "#%u", shard_of(pk, sk, pl->shards));
            }
            cJSON *v = cJSON_CreateObject();
            cJSON_AddStringToObject(v, "S", ipk);
            cJSON_AddItemToObject(item, pl->index->pk_attr, v);
        }
        cJSON *v = cJSON_CreateObject();
        cJSON_AddStringToObject(v, "S", isk);
        cJSON_AddItemToObject(item, pl->index->sk_attr, v);
    }
    cJSON *type = cJSON_CreateObject();
    cJSON_AddStringToObject(type, "S", r->entity->name);
    cJSON_AddItemToObject(item, KP_DDB_TYPE_ATTR, type);
    for (size_t i = 0; i < r->entity->attr_count; i++) {
        const kp_attr *a = r->entity->attrs[i];
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(r->object, a->name);
        cJSON *av = kp_ddb_to_attribute_value(&a->type, v);
        if (av) cJSON_AddItemToObject(item, a->name, av);
    }
    /* copies of the referenced records' attributes (none without the data they come from) */
    for (size_t i = 0; data && i < e->copy_count; i++) {
        const ddb_copy *c = &e->copies[i];
        if (c->is_array) {
            /* a list in the array's order: each element's attribute (NULL where the target
             * has none, so the positions stay those of the array) */
            cJSON *values = kp_copy_element_values(data, c->rel, c->attr, r);
            if (!values) continue;
            cJSON *list = cJSON_CreateArray(), *av = cJSON_CreateObject();
            for (const cJSON *v = values->child; list && v; v = v->next) {
                cJSON *one = !cJSON_IsNull(v) ? kp_ddb_to_attribute_value(&c->attr->type, v) : NULL;
                if (!one) {
                    one = cJSON_CreateObject();
                    if (one) cJSON_AddTrueToObject(one, "NULL");
                }
                if (one) cJSON_AddItemToArray(list, one);
            }
            cJSON_Delete(values);
            if (list && av) {
                cJSON_AddItemToObject(av, "L", list);
                cJSON_AddItemToObject(item, c->name, av);
            } else {
                cJSON_Delete(list);
                cJSON_Delete(av);
            }
            continue;
        }
        const kp_record *source = kp_copy_source(data, r, c->rel);
        cJSON *av = source ? kp_ddb_to_attribute_value(&c->attr->type, kp_record_get(source, c->attr)) : NULL;
        if (av) cJSON_AddItemToObject(item, c->name, av);
    }
    *out = item;
    return 0;
}

/* The elements of record r for an adjacency list over an N:M through a join entity: the
 * keys of the records its join records pair it with (an array, the caller frees it). */
static cJSON *paired_keys(const kp_dataset *data, const ddb_placement *pl, const kp_record *r, kp_error *err)
{
    cJSON *keys = cJSON_CreateArray();
    kp_record_list paired = {0};
    /* from the record back to what it is paired with: the listing's relation reversed */
    const kp_rel *back = pl->elements->is_inverse ? &pl->elements->relation->forward : &pl->elements->relation->inverse;
    if (!keys) { kp_error_set(err, KP_ERR_NOMEM, NULL, 0, 0, "out of memory"); return NULL; }
    if (data && kp_dataset_follow(data, r, back, &paired, err)) {
        cJSON_Delete(keys);
        kp_record_list_free(&paired);
        return NULL;
    }
    const kp_attr *ref = pl->elements->source->key[0];
    for (size_t i = 0; i < paired.count; i++) {
        const cJSON *v = kp_record_get(paired.items[i], ref);
        if (v) cJSON_AddItemToArray(keys, kp_data_copy(v, NULL));
    }
    kp_record_list_free(&paired);
    return keys;
}

/* The element items of record r for one adjacency list (ddb_placement.elements). */
static int element_items(const kp_dataset *data, const ddb_placement *pl, const kp_record *r, cJSON *out, kp_error *err)
{
    const kp_relation *rel = pl->elements->relation;
    const kp_attr *ref = pl->elements->source->key[0]; /* the element is the referenced record's key */
    cJSON *paired = NULL;
    if (!rel->array_attr && !(paired = paired_keys(data, pl, r, err))) return -1;
    const cJSON *arr = rel->array_attr ? kp_record_get(r, rel->array_attr) : paired;
    char sk[2048];
    if (!cJSON_IsArray(arr) || kp_ddb_format_value(&pl->sk, r->object, sk, sizeof sk)) { cJSON_Delete(paired); return 0; } /* none, or sparse */
    for (const cJSON *v = arr->child; v; v = v->next) {
        int dup = 0;
        for (const cJSON *w = arr->child; w != v && !dup; w = w->next) dup = kp_data_equal(v, w, NULL);
        if (dup || cJSON_IsNull(v)) continue;
        cJSON *at = cJSON_CreateObject();
        cJSON_AddItemToObject(at, ref->name, kp_data_copy(v, NULL));
        char pk[2048];
        int ok = kp_ddb_format_value(&pl->pk, at, pk, sizeof pk) == 0;
        cJSON_Delete(at);
        if (!ok) continue;
        cJSON *item = cJSON_CreateObject();
        if (!item) { cJSON_Delete(paired); return kp_error_set(err, KP_ERR_NOMEM, NULL, 0, 0, "out of memory"); }
        cJSON_AddItemToObject(cJSON_AddObjectToObject(item, "PK"), "S", cJSON_CreateString(pk));
        cJSON_AddItemToObject(cJSON_AddObjectToObject(item, "SK"), "S", cJSON_CreateString(sk));
        cJSON_AddItemToObject(cJSON_AddObjectToObject(item, KP_DDB_TYPE_ATTR), "S", cJSON_CreateString(r->entity->name));
        cJSON_AddItemToObject(cJSON_AddObjectToObject(item, KP_DDB_ELEMENT_ATTR), "S", cJSON_CreateString(kp_ddb_elements_name(rel)));
        for (size_t i = 0; i < pl->hold_count; i++) {
            cJSON *av = kp_ddb_to_attribute_value(&pl->holds[i]->type, kp_record_get(r, pl->holds[i]));
            if (av) cJSON_AddItemToObject(item, pl->holds[i]->name, av);
        }
        cJSON_AddItemToArray(out, item);
    }
    cJSON_Delete(paired);
    return 0;
}

int kp_ddb_items_for(const kp_design *d, const kp_dataset *data, const kp_record *r, cJSON *out, kp_error *err)
{
    const ddb_layout *L = d->layout;
    const ddb_entity *e = &L->entities[r->entity->index];
    cJSON *item;
    if (kp_ddb_item_for(d, data, r, &item, err)) return -1;
    cJSON_AddItemToArray(out, item);
    for (size_t i = 0; i < e->element_count; i++)
        if (element_items(data, &e->element_items[i], r, out, err)) return -1;
    return 0;
}

static int ddb_transform(const kp_design *d, const kp_dataset *data, const kp_record *r, kp_item_list *out, kp_error *err)
{
    cJSON *items = cJSON_CreateArray();
    if (!items) return kp_error_set(err, KP_ERR_NOMEM, NULL, 0, 0, "out of memory");
    if (kp_ddb_items_for(d, data, r, items, err)) { cJSON_Delete(items); return -1; }
    const ddb_layout *L = d->layout;
    int rc = 0;
    cJSON *item;
    while (rc == 0 && (item = items->child) != NULL) {
        cJSON_DetachItemViaPointer(items, item);
        size_t bytes = kp_ddb_item_size(item);
        if (bytes > ddb_limits.max_item_bytes) {
            cJSON_Delete(item);
            rc = kp_error_set(err, KP_ERR_DATA, NULL, (int)r->line, 0,
                              "this %s record becomes a %zu-byte DynamoDB item, above the 400 KB item limit; it is not written",
                              r->entity->name, bytes);
            break;
        }
        kp_item *it = kp_item_list_push(out);
        if (!it) { cJSON_Delete(item); rc = kp_error_set(err, KP_ERR_NOMEM, NULL, 0, 0, "out of memory"); break; }
        it->container = L->table;
        it->entity = r->entity;
        it->body = item;
        it->bytes = bytes;
        const char *pk = cJSON_GetObjectItem(cJSON_GetObjectItem(item, "PK"), "S")->valuestring;
        const char *sk = cJSON_GetObjectItem(cJSON_GetObjectItem(item, "SK"), "S")->valuestring;
        size_t n = strlen(pk) + strlen(sk) + 2;
        it->id = malloc(n);
        if (it->id) snprintf(it->id, n, "%s\x1f%s", pk, sk);
        else rc = kp_error_set(err, KP_ERR_NOMEM, NULL, 0, 0, "out of memory");
    }
    cJSON_Delete(items);
    return rc;
}

const kp_backend kp_dynamodb_backend = {
    .name = "dynamodb",
    .title = "DynamoDB",
    .limits = &ddb_limits,
    .propose = kp_ddb_propose,
    .emit = kp_ddb_emit,
    .transform = ddb_transform,
    .connect = kp_ddb_connect,
    .inspect = kp_ddb_inspect,
    .apply_schema = kp_ddb_apply_schema,
    .drop = kp_ddb_drop,
    .write_marker = kp_ddb_write_marker,
    .read_marker = kp_ddb_read_marker,
    .submit = kp_ddb_submit_items,
    .poll = kp_ddb_poll_conn,
    .execute = kp_ddb_execute,
    .read_back = kp_ddb_read_back,
    .apply_write = kp_ddb_apply_write,
    .delete_items = kp_ddb_delete_items,
    .read_records = kp_ddb_read_records,
    .read_items = kp_ddb_read_items,
    .migrate_schema = kp_ddb_migrate_schema,
    .item_checksum = kp_ddb_item_checksum,
    .item_write_units = ddb_item_write_units,
    .disconnect = kp_ddb_disconnect,
    .export_format = "dynamodb-import",
    .export_open = kp_ddb_export_open,
    .export_item = kp_ddb_export_item,
    .export_close = kp_ddb_export_close,
};
