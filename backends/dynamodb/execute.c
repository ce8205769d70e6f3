/*
 * execute.c — runs an access pattern's fetch tree against a live table and
 * reassembles the declared response.
 *
 * A fetch node is run level by level over all the records its parent produced: a
 * GetItem or Query per input record, or one BatchGetItem (100 keys per request) for
 * all of them. Key values come from a "virtual record": the attributes of the target
 * that the relation fixes (or the pattern's parameters at the root), rendered by the
 * same key formats transform used to write the items — so a read can never miss a
 * written item by a formatting difference.
 * Invariant: what is measured (requests from the client's own counter, round trips
 * as the depth of the dependency chain of requests actually sent, items returned and
 * scanned from the service's answers) is never estimated here.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/assemble.h"
#include "backends/copies.h"
#include "backends/dynamodb/client.h"
#include "backends/dynamodb/conn.h"
#include "backends/dynamodb/ddb.h"
#include "backends/dynamodb/request.h"
#include "core/data.h"
#include "core/value.h"

/* A record read, the context record it belongs to (the parent of the $each it is an
 * element of) and the record it was read from (backends/fetch.h). */
typedef kp_fetch_pair pair;
typedef kp_fetch_set pairs;

typedef struct run {
    kp_ddb_conn *conn;
    const kp_design *design;
    const ddb_layout *L;
    const kp_pattern *pattern;
    const kp_params *params;
    kp_fetched *fetched;
    cJSON *start_key;           /* ExclusiveStartKey of the paged fetch (a later page), owned */
    cJSON *next_key;            /* its continuation after this page, owned */
    const char *after_sk;       /* a sharded paged fetch: continue after this index sort key */
    kp_frec *root;              /* the single root record, once read */
    kp_frec *riders[8];         /* the riders the header Query returned (DDB_RIDE reads them) */
    size_t rider_count;
    long items_returned;
    long items_read;            /* items the server read: ScannedCount, or the items a Get sent */
    long bytes_read;            /* the DynamoDB sizes of the items the server sent */
    kp_error *err;
} run;

static int pairs_push3(pairs *p, kp_frec *rec, kp_frec *origin, kp_frec *from) { return kp_fetch_set_push(p, rec, origin, from); }

static int pairs_push(pairs *p, kp_frec *rec, kp_frec *origin) { return pairs_push3(p, rec, origin, NULL); }

static int nomem(run *R) { return kp_error_set(R->err, KP_ERR_NOMEM, NULL, 0, 0, "out of memory"); }

static cJSON *av_string(const char *s)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "S", s);
    return o;
}

static const char *table_name(run *R) { return kp_ddb_conn_table(R->conn, R->L->table); }

/* The items of one answer, counted and sized as DynamoDB counts them. */
static void measure_items(run *R, const cJSON *list)
{
    for (const cJSON *it = list ? list->child : NULL; it; it = it->next) R->bytes_read += (long)kp_ddb_item_size(it);
}

/* Every request of a pattern goes through here, so every answer is measured once:
 * items read (ScannedCount where the server reports it: a filter's discarded items
 * are read and paid for too; else the items sent) and the bytes of the items sent. */
static int call(run *R, const char *op, const cJSON *req, cJSON **resp)
{
    int rc = kp_ddb_call(kp_ddb_conn_client(R->conn), op, req, resp, R->err);
    if (rc || !*resp) return rc;
    const cJSON *scanned = cJSON_GetObjectItemCaseSensitive(*resp, "ScannedCount");
    const cJSON *items = cJSON_GetObjectItemCaseSensitive(*resp, "Items");
    const cJSON *item = cJSON_GetObjectItemCaseSensitive(*resp, "Item");
    const cJSON *responses = cJSON_GetObjectItemCaseSensitive(*resp, "Responses");
    if (cJSON_IsNumber(scanned)) R->items_read += (long)scanned->valuedouble;
    if (items) {
        if (!cJSON_IsNumber(scanned)) R->items_read += cJSON_GetArraySize(items);
        measure_items(R, items);
    }
    if (cJSON_IsObject(item) && item->child) {
        R->items_read++;
        R->bytes_read += (long)kp_ddb_item_size(item);
    }
    for (const cJSON *t = responses ? responses->child : NULL; t; t = t->next) {
        R->items_read += cJSON_GetArraySize(t);
        measure_items(R, t);
    }
    return 0;
}

/* The neutral record of an item (only its entity's attributes). */
static kp_frec *record_of(run *R, const cJSON *item)
{
    const cJSON *tag = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(item, KP_DDB_TYPE_ATTR), "S");
    const kp_entity *e = cJSON_IsString(tag) ? kp_model_entity(R->design->model, tag->valuestring) : NULL;
    if (!e) {
        kp_error_set(R->err, KP_ERR_TARGET, NULL, 0, 0,
                     "an item in table %s has no %s attribute naming its entity; the table holds items keyplan's seed did not "
                     "write", table_name(R), KP_DDB_TYPE_ATTR);
        return NULL;
    }
    cJSON *object = cJSON_CreateObject();
    /* copies of referenced records' attributes, kept under their item names for the
     * DDB_COPY fetches below this one (copy_level) */
    const ddb_entity *de = &((const ddb_layout *)R->design->layout)->entities[e->index];
    for (size_t i = 0; object && i < de->copy_count; i++) {
        const cJSON *av = cJSON_GetObjectItemCaseSensitive(item, de->copies[i].name);
        kp_error value_err = {0};
        cJSON *v = NULL;
        const cJSON *list = de->copies[i].is_array ? cJSON_GetObjectItemCaseSensitive(av, "L") : NULL;
        if (list) {
            /* an array's copy: its values in the array's order, null where none */
            v = cJSON_CreateArray();
            for (const cJSON *one = list->child; v && one; one = one->next) {
                cJSON *x = cJSON_GetObjectItemCaseSensitive(one, "NULL") ? NULL
                                                                         : kp_ddb_from_attribute_value(&de->copies[i].attr->type, one, &value_err);
                cJSON_AddItemToArray(v, x ? x : cJSON_CreateNull());
            }
        } else if (av && !de->copies[i].is_array) {
            v = kp_ddb_from_attribute_value(&de->copies[i].attr->type, av, &value_err);
        }
        if (v) cJSON_AddItemToObject(object, de->copies[i].name, v);
    }
    for (size_t i = 0; object && i < e->attr_count; i++) {
        const cJSON *av = cJSON_GetObjectItemCaseSensitive(item, e->attrs[i]->name);
        if (!av) continue;
        kp_error value_err = {0};
        cJSON *v = kp_ddb_from_attribute_value(&e->attrs[i]->type, av, &value_err);
        if (!v && value_err.code == KP_ERR_DATA) {
            /* a value of the wrong type is a mismatch of this value, reported with its path */
            const cJSON *pk = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(item, "PK"), "S");
            const cJSON *sk = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(item, "SK"), "S");
            char found[700];
            snprintf(found, sizeof found, "DynamoDB %.250s in the item PK=%.200s, SK=%.200s", value_err.message,
                     cJSON_IsString(pk) ? pk->valuestring : "?", cJSON_IsString(sk) ? sk->valuestring : "?");
            v = kp_wrong_type_value(e->attrs[i], found);
        } else if (!v) {
            *R->err = value_err;
        }
        if (!v) { cJSON_Delete(object); return NULL; }
        if (cJSON_IsNull(v)) { cJSON_Delete(v); continue; }
        cJSON_AddItemToObject(object, e->attrs[i]->name, v);
    }
    if (!object) { nomem(R); return NULL; }
    kp_frec *rec = kp_fetched_add(R->fetched, e, object);
    if (!rec) nomem(R);
    R->items_returned++;
    return rec;
}

/* ---- virtual records: the target attributes a hop fixes ------------------------------------ */

static cJSON *copy_into(cJSON *o, const char *name, const cJSON *v)
{
    if (o && v) cJSON_AddItemToObject(o, name, kp_data_copy(v, NULL));
    return o;
}

/* The root's attributes that the pattern's equalities fix. */
static cJSON *root_object(run *R)
{
    cJSON *o = cJSON_CreateObject();
    for (size_t i = 0; i < R->pattern->where_count; i++) {
        const kp_cond *c = &R->pattern->where[i];
        if (c->op != KP_OP_EQ || c->path_len) continue;
        copy_into(o, c->attr->name, c->value.param ? kp_params_get(R->params, c->value.param->name) : c->value.literal);
    }
    return o;
}

/* Appends to out (an array) one object per target the hop reaches from `from` (NULL:
 * the pattern's parameters). */
static void virtual_targets(run *R, const ddb_fetch *f, const kp_frec *from, cJSON *out)
{
    if (!from) {
        cJSON *o = root_object(R);
        if (f->header && f->rel && f->rel->relation->link == KP_LINK_FOREIGN_KEY) {
            /* a merged header Query reads the children's partition: their reference
             * attributes take the root's key values */
            const kp_relation *rel = f->rel->relation;
            cJSON *child = cJSON_CreateObject();
            for (size_t i = 0; i < rel->fk_count; i++)
                copy_into(child, rel->fk_attrs[i]->name, cJSON_GetObjectItemCaseSensitive(o, rel->ref_attrs[i]->name));
            cJSON_Delete(o);
            o = child;
        }
        cJSON_AddItemToArray(out, o);
        return;
    }
    const kp_rel *r = f->rel;
    const kp_relation *rel = r->relation;
    const cJSON *src = from->object;
    if (f->placement && f->placement->elements) {
        /* the element items in the referenced record's partition (an adjacency list) */
        cJSON_AddItemToArray(out, copy_into(cJSON_CreateObject(), r->source->key[0]->name,
                                            cJSON_GetObjectItemCaseSensitive(src, r->source->key[0]->name)));
    } else if (rel->link == KP_LINK_FOREIGN_KEY) {
        int holder_is_source = rel->holder == r->source;
        cJSON *o = cJSON_CreateObject();
        for (size_t i = 0; i < rel->fk_count; i++) {
            const kp_attr *a = holder_is_source ? rel->fk_attrs[i] : rel->ref_attrs[i];
            const kp_attr *b = holder_is_source ? rel->ref_attrs[i] : rel->fk_attrs[i];
            const cJSON *v = cJSON_GetObjectItemCaseSensitive(src, a->name);
            if (!v) { cJSON_Delete(o); return; } /* no reference: nothing to read */
            copy_into(o, b->name, v);
        }
        cJSON_AddItemToArray(out, o);
    } else if (rel->link == KP_LINK_THROUGH) {
        int forward = !r->is_inverse;
        cJSON *o = cJSON_CreateObject();
        if (f->entity->entity == rel->through) {
            /* the join items of `from` */
            const kp_entity *side = forward ? rel->from : rel->to;
            kp_attr **attrs = forward ? rel->through_from : rel->through_to;
            for (size_t i = 0; i < side->key_count; i++)
                copy_into(o, attrs[i]->name, cJSON_GetObjectItemCaseSensitive(src, side->key[i]->name));
        } else {
            /* the target named by a join item */
            const kp_entity *side = forward ? rel->to : rel->from;
            kp_attr **attrs = forward ? rel->through_to : rel->through_from;
            for (size_t i = 0; i < side->key_count; i++)
                copy_into(o, side->key[i]->name, cJSON_GetObjectItemCaseSensitive(src, attrs[i]->name));
        }
        cJSON_AddItemToArray(out, o);
    } else if (r->is_inverse) {
        /* the element items in the referenced record's partition (an adjacency list) */
        cJSON_AddItemToArray(out, copy_into(cJSON_CreateObject(), r->source->key[0]->name,
                                            cJSON_GetObjectItemCaseSensitive(src, r->source->key[0]->name)));
    } else {
        const cJSON *arr = cJSON_GetObjectItemCaseSensitive(src, rel->array_attr->name);
        for (const cJSON *e = arr ? arr->child : NULL; e; e = e->next)
            cJSON_AddItemToArray(out, copy_into(cJSON_CreateObject(), rel->to->key[0]->name, e));
    }
}

/* ---- requests -------------------------------------------------------------------------------- */

/* Every request's body (key condition, filter, limit; GetItem, BatchGetItem, Scan) is
 * built by request.c, which `keyplan emit` writes request files with: change how a
 * request looks there, and both follow. This file decides which requests to send.
 * How the shared request builders see this run: */
static ddb_request_ctx request_ctx(run *R)
{
    return (ddb_request_ctx){.pattern = R->pattern, .params = R->params, .table = table_name(R), .after_sk = R->after_sk,
                             .err = R->err};
}

/* Items a listing asks the server for (0: all). */
static int64_t limit_for(run *R, const ddb_fetch *f)
{
    ddb_request_ctx ctx = request_ctx(R);
    return kp_ddb_request_limit(&ctx, f);
}

/* One Query (as many pages as the limit needs) for one partition value. */
static int run_query(run *R, const ddb_fetch *f, const char *pk, int with_header, cJSON *items, long *count)
{
    int is_paged = f->shape && f->shape == R->pattern->paged && f->shards == 1;
    int64_t limit = limit_for(R, f);
    if (limit > 0 && with_header) limit += 1 + f->rider_count;
    cJSON *start = is_paged && R->start_key && !R->after_sk ? cJSON_Duplicate(R->start_key, 1) : NULL;
    long got = 0;
    int rc = 0;
    /* with a FilterExpression the Limit counts the items evaluated, not those that match:
     * every page asks for the whole limit again until enough matched, then the extra ones
     * (of the last page) are dropped */
    int is_filtered = f->filter_count > 0 && limit > 0;
    int before = cJSON_GetArraySize(items);
    for (;;) {
        ddb_request_ctx ctx = request_ctx(R);
        cJSON *req = kp_ddb_query_request(&ctx, f, pk, with_header, limit > 0 ? (is_filtered ? limit : limit - got) : 0);
        if (!req) { rc = -1; break; }
        if (start) cJSON_AddItemToObject(req, "ExclusiveStartKey", start);
        start = NULL;
        cJSON *resp = NULL;
        if (getenv("KP_TRACE_REQUESTS")) {
            char *t = cJSON_PrintUnformatted(req);
            fprintf(stderr, "Query %s\n", t ? t : "?");
            cJSON_free(t);
        }
        rc = call(R, "Query", req, &resp);
        cJSON_Delete(req);
        if (rc) break;
        if (f->kind == DDB_COUNT) {
            const cJSON *c = cJSON_GetObjectItemCaseSensitive(resp, "Count");
            if (cJSON_IsNumber(c)) *count += (long)c->valuedouble;
        } else {
            const cJSON *list = cJSON_GetObjectItemCaseSensitive(resp, "Items");
            for (const cJSON *it = list ? list->child : NULL; it; it = it->next) {
                cJSON_AddItemToArray(items, cJSON_Duplicate(it, 1));
                got++;
            }
        }
        const cJSON *last = cJSON_GetObjectItemCaseSensitive(resp, "LastEvaluatedKey");
        int more = cJSON_IsObject(last) && last->child;
        int full = limit > 0 && got >= limit;
        if (is_paged) {
            /* only token paging continues; offset paging is driven by the caller's :skip */
            cJSON_Delete(R->next_key);
            R->next_key = more && full && f->shape->page == KP_PAGE_TOKEN ? cJSON_Duplicate(last, 1) : NULL;
        }
        if (more && !full && !(is_paged && (got == 0 && !is_filtered) && limit > 0)) start = cJSON_Duplicate(last, 1);
        cJSON_Delete(resp);
        if (!start) break;
    }
    cJSON_Delete(start);
    while (is_filtered && cJSON_GetArraySize(items) > before + limit) cJSON_DeleteItemFromArray(items, cJSON_GetArraySize(items) - 1);
    return rc;
}

static int get_item(run *R, const char *pk, const char *sk, cJSON *items)
{
    cJSON *req = kp_ddb_get_item_request(table_name(R), pk, sk);
    cJSON *resp = NULL;
    int rc = call(R, "GetItem", req, &resp);
    cJSON_Delete(req);
    if (rc) return -1;
    const cJSON *item = cJSON_GetObjectItemCaseSensitive(resp, "Item");
    if (cJSON_IsObject(item) && item->child) {
        cJSON_AddItemToArray(items, cJSON_Duplicate(item, 1));
    }
    cJSON_Delete(resp);
    return 0;
}

/* BatchGetItem for keys (an array of {PK, SK}), 100 per request, unprocessed keys resent. */
static int batch_get(run *R, cJSON *keys, cJSON *items)
{
    int rc = 0;
    while (rc == 0 && keys->child) {
        cJSON *chunk = cJSON_CreateArray();
        for (int k = 0; k < 100 && keys->child; k++) cJSON_AddItemToArray(chunk, cJSON_DetachItemFromArray(keys, 0));
        for (int round = 0; rc == 0 && chunk; round++) {
            if (round > 8) {
                cJSON_Delete(chunk);
                return kp_error_set(R->err, KP_ERR_TARGET, NULL, 0, 0,
                                    "BatchGetItem still returned unprocessed keys after 8 rounds; the table is overloaded");
            }
            cJSON *req = kp_ddb_batch_get_request(table_name(R), chunk);
            chunk = NULL;
            cJSON *resp = NULL;
            rc = call(R, "BatchGetItem", req, &resp);
            cJSON_Delete(req);
            if (rc) break;
            const cJSON *got = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(resp, "Responses"), table_name(R));
            for (const cJSON *it = got ? got->child : NULL; it; it = it->next) {
                cJSON_AddItemToArray(items, cJSON_Duplicate(it, 1));
            }
            const cJSON *un = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(resp, "UnprocessedKeys"), table_name(R));
            const cJSON *uk = un ? cJSON_GetObjectItemCaseSensitive(un, "Keys") : NULL;
            if (uk && uk->child) chunk = cJSON_Duplicate(uk, 1);
            cJSON_Delete(resp);
        }
    }
    return rc;
}

static const char *sort_attr_for_merge;

static int compare_sk(const void *a, const void *b)
{
    const cJSON *x = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(*(cJSON *const *)a, sort_attr_for_merge), "S");
    const cJSON *y = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(*(cJSON *const *)b, sort_attr_for_merge), "S");
    return strcmp(cJSON_IsString(x) ? x->valuestring : "", cJSON_IsString(y) ? y->valuestring : "");
}

/* Scatter-gather: every shard answered in index order; the page is the first `limit`
 * of their merge, and the next page starts after its last sort key. */
static int merge_shards(run *R, const ddb_fetch *f, cJSON *items)
{
    size_t n = (size_t)cJSON_GetArraySize(items);
    cJSON **all = malloc((n ? n : 1) * sizeof *all);
    if (!all) return nomem(R);
    size_t k = 0;
    while (items->child) all[k++] = cJSON_DetachItemFromArray(items, 0);
    sort_attr_for_merge = f->placement->index->sk_attr;
    qsort(all, n, sizeof *all, compare_sk);
    if (!f->is_forward)
        for (size_t i = 0; i < n / 2; i++) { cJSON *t = all[i]; all[i] = all[n - 1 - i]; all[n - 1 - i] = t; }
    int64_t limit = limit_for(R, f);
    size_t keep = limit > 0 && (size_t)limit < n ? (size_t)limit : n;
    int is_paged = f->shape && f->shape == R->pattern->paged && f->shape->page == KP_PAGE_TOKEN;
    if (is_paged) {
        cJSON_Delete(R->next_key);
        R->next_key = NULL;
        if (limit > 0 && keep == (size_t)limit && keep > 0) {
            const cJSON *sk = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(all[keep - 1], f->placement->index->sk_attr), "S");
            if (cJSON_IsString(sk)) {
                R->next_key = cJSON_CreateObject();
                cJSON_AddStringToObject(R->next_key, "after", sk->valuestring);
            }
        }
    }
    for (size_t i = 0; i < n; i++) {
        if (i < keep) cJSON_AddItemToArray(items, all[i]);
        else cJSON_Delete(all[i]);
    }
    free(all);
    return 0;
}

static int item_matches(run *R, const kp_frec *rec, const cJSON *target)
{
    const kp_entity *e = rec->entity;
    for (size_t k = 0; k < e->key_count; k++) {
        const cJSON *want = cJSON_GetObjectItemCaseSensitive(target, e->key[k]->name);
        const cJSON *have = cJSON_GetObjectItemCaseSensitive(rec->object, e->key[k]->name);
        if (!want || !have || kp_data_compare(e->key[k]->type.kind, want, have, NULL) != 0) return 0;
    }
    (void)R;
    return 1;
}

/* A declared scan defect, served honestly: a Scan of the whole table filtered on the
 * entity and the array of references that holds `from`'s key. */
static int scan_array(run *R, const ddb_fetch *f, const kp_frec *from, cJSON *items)
{
    const kp_relation *rel = f->rel->relation;
    const cJSON *key = cJSON_GetObjectItemCaseSensitive(from->object, rel->to->key[0]->name);
    if (!key) return 0;
    cJSON *start = NULL;
    int rc = 0;
    do {
        cJSON *req = kp_ddb_scan_request(table_name(R), f, kp_ddb_to_attribute_value(&rel->to->key[0]->type, key));
        if (start) cJSON_AddItemToObject(req, "ExclusiveStartKey", start);
        start = NULL;
        cJSON *resp = NULL;
        rc = call(R, "Scan", req, &resp);
        cJSON_Delete(req);
        if (rc) break;
        const cJSON *list = cJSON_GetObjectItemCaseSensitive(resp, "Items");
        for (const cJSON *it = list ? list->child : NULL; it; it = it->next) cJSON_AddItemToArray(items, cJSON_Duplicate(it, 1));
        const cJSON *last = cJSON_GetObjectItemCaseSensitive(resp, "LastEvaluatedKey");
        if (cJSON_IsObject(last) && last->child) start = cJSON_Duplicate(last, 1);
        cJSON_Delete(resp);
    } while (start);
    return rc;
}

/* The referenced record `from` names (over f->rel: its foreign key, or a join item's target)
 * with the copies of its attributes `from`'s item holds (f->copy_names); NULL when it names
 * none (or out of memory: *is_nomem). */
static cJSON *copied_target(const ddb_fetch *f, const kp_frec *from, int *is_nomem)
{
    cJSON *obj = kp_copy_target_key(f->rel, from->object, is_nomem);
    for (size_t k = 0; obj && k < f->copy_count; k++) {
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(from->object, f->copy_names[k]);
        if (v && !cJSON_IsNull(v)) cJSON_AddItemToObject(obj, f->copy_attrs[k]->name, kp_data_copy(v, NULL));
    }
    return obj;
}

/* DDB_COPY over an array of references: a record per element, in the array's order, made of
 * the element (the target's key) and the element's value in each copy's list. */
static int copy_elements(run *R, const ddb_fetch *f, const pair *at, pairs *out)
{
    const kp_frec *from = at->rec;
    const cJSON *refs = cJSON_GetObjectItemCaseSensitive(from->object, f->rel->relation->array_attr->name);
    const cJSON *lists[KP_COPY_ATTRS] = {0};
    for (size_t k = 0; k < f->copy_count && k < KP_COPY_ATTRS; k++) lists[k] = cJSON_GetObjectItemCaseSensitive(from->object, f->copy_names[k]);
    int n = 0;
    for (const cJSON *ref = cJSON_IsArray(refs) ? refs->child : NULL; ref; ref = ref->next, n++) {
        cJSON *obj = kp_copy_element_target(f->rel, ref, f->copy_attrs, lists, f->copy_count < KP_COPY_ATTRS ? f->copy_count : KP_COPY_ATTRS, n);
        if (!obj) return nomem(R);
        kp_frec *rec = kp_fetched_add(R->fetched, f->entity->entity, obj);
        if (!rec || pairs_push3(out, rec, at->origin ? at->origin : at->rec, at->rec)) return nomem(R);
    }
    return 0;
}

/* DDB_COPY: the referenced record of each input, made of its foreign key and the copies
 * its item holds; no request. An input that references nothing yields nothing. */
static int copy_level(run *R, const ddb_fetch *f, const pairs *in, pairs *out)
{
    for (size_t i = 0; i < in->count; i++) {
        kp_frec *from = in->items[i].rec;
        if (!from) continue;
        if (f->rel->relation->link == KP_LINK_ARRAY) {
            if (copy_elements(R, f, &in->items[i], out)) return -1;
            continue;
        }
        int is_nomem;
        cJSON *obj = copied_target(f, from, &is_nomem);
        if (!obj) { if (is_nomem) return nomem(R); continue; }
        kp_frec *rec = kp_fetched_add(R->fetched, f->entity->entity, obj);
        if (!rec || pairs_push3(out, rec, in->items[i].origin ? in->items[i].origin : from, from)) return nomem(R);
    }
    return 0;
}

/* The target a join item names (is_join_target): a record of its key and the copies of its
 * attributes the join item holds (copy_names). */
static kp_frec *join_target(run *R, const ddb_fetch *f, const kp_frec *join)
{
    int is_nomem;
    cJSON *obj = copied_target(f, join, &is_nomem);
    if (!obj) {
        if (is_nomem) nomem(R);
        else kp_error_set(R->err, KP_ERR_TARGET, NULL, 0, 0, "a %s item in table %s has no %s key", join->entity->name,
                          table_name(R), f->rel->target->name);
        return NULL;
    }
    kp_frec *rec = kp_fetched_add(R->fetched, f->rel->target, obj);
    if (!rec) nomem(R);
    return rec;
}

/* DDB_RIDE: the rider of this entity the header Query returned, for the header (its one
 * input); none when the header's collection holds none (an order not shipped yet). */
static int ride_level(run *R, const ddb_fetch *f, const pairs *in, pairs *out)
{
    for (size_t i = 0; i < in->count; i++)
        for (size_t k = 0; in->items[i].rec && k < R->rider_count; k++)
            if (R->riders[k]->entity == f->entity->entity &&
                pairs_push3(out, R->riders[k], in->items[i].origin ? in->items[i].origin : in->items[i].rec, in->items[i].rec))
                return nomem(R);
    return 0;
}

/* Reads what f reads for each input, appending (record, origin) pairs in order. */
static int fetch_level(run *R, const ddb_fetch *f, const pairs *in, pairs *out)
{
    if (f->kind == DDB_COPY) return copy_level(R, f, in, out);
    if (f->kind == DDB_RIDE) return ride_level(R, f, in, out);
    if (f->is_scan) {
        for (size_t i = 0; i < in->count; i++) {
            cJSON *items = cJSON_CreateArray();
            int rc = scan_array(R, f, in->items[i].rec, items);
            for (const cJSON *it = items->child; rc == 0 && it; it = it->next) {
                kp_frec *rec = record_of(R, it);
                if (!rec) rc = -1;
                else if (pairs_push3(out, rec, in->items[i].origin ? in->items[i].origin : in->items[i].rec, in->items[i].rec))
                    rc = nomem(R);
            }
            cJSON_Delete(items);
            if (rc) return -1;
        }
        return 0;
    }
    if (f->kind == DDB_BATCH_GET || (f->kind == DDB_GET && in->count > 1)) {
        /* one BatchGetItem for every input's targets; then the results in reference order */
        cJSON *targets = cJSON_CreateArray(), *keys = cJSON_CreateArray(), *items = cJSON_CreateArray();
        int *owner = malloc(sizeof *owner * 1);
        size_t owner_cap = 1, owner_count = 0;
        for (size_t i = 0; i < in->count; i++) {
            int before = cJSON_GetArraySize(targets);
            virtual_targets(R, f, in->items[i].rec, targets);
            for (int t = before; t < cJSON_GetArraySize(targets); t++) {
                if (owner_count == owner_cap) {
                    owner_cap *= 2;
                    int *bigger = realloc(owner, sizeof *owner * owner_cap);
                    if (!bigger) { free(owner); cJSON_Delete(targets); cJSON_Delete(keys); cJSON_Delete(items); return nomem(R); }
                    owner = bigger;
                }
                owner[owner_count++] = (int)i;
                char pk[2048], sk[2048];
                const cJSON *target = cJSON_GetArrayItem(targets, t);
                if (kp_ddb_format_value(&f->placement->pk, target, pk, sizeof pk) ||
                    kp_ddb_format_value(&f->placement->sk, target, sk, sizeof sk))
                    continue;
                int dup = 0;
                for (const cJSON *k = keys->child; k && !dup; k = k->next)
                    dup = !strcmp(cJSON_GetObjectItem(cJSON_GetObjectItem(k, "PK"), "S")->valuestring, pk) &&
                          !strcmp(cJSON_GetObjectItem(cJSON_GetObjectItem(k, "SK"), "S")->valuestring, sk);
                if (dup) continue;
                cJSON *key = cJSON_CreateObject();
                cJSON_AddItemToObject(key, "PK", av_string(pk));
                cJSON_AddItemToObject(key, "SK", av_string(sk));
                cJSON_AddItemToArray(keys, key);
            }
        }
        int rc = batch_get(R, keys, items);
        kp_frec **recs = NULL;
        size_t rn = 0;
        if (rc == 0) {
            recs = malloc(sizeof *recs * ((size_t)cJSON_GetArraySize(items) + 1));
            for (const cJSON *it = items->child; recs && it && rc == 0; it = it->next) {
                kp_frec *rec = record_of(R, it);
                if (!rec) rc = -1;
                else recs[rn++] = rec;
            }
            if (!recs) rc = nomem(R);
        }
        size_t t = 0;
        for (const cJSON *target = targets->child; rc == 0 && target; target = target->next, t++)
            for (size_t k = 0; k < rn; k++)
                if (item_matches(R, recs[k], target)) {
                    const pair *src = &in->items[owner[t]];
                    if (pairs_push3(out, recs[k], src->origin ? src->origin : src->rec, src->rec)) rc = nomem(R);
                    break;
                }
        free(recs);
        free(owner);
        cJSON_Delete(targets);
        cJSON_Delete(keys);
        cJSON_Delete(items);
        return rc;
    }
    for (size_t i = 0; i < in->count; i++) {
        kp_frec *from = in->items[i].rec;
        kp_frec *origin = in->items[i].origin ? in->items[i].origin : from;
        cJSON *targets = cJSON_CreateArray(), *items = cJSON_CreateArray();
        virtual_targets(R, f, from, targets);
        long count = 0;
        int rc = 0;
        for (const cJSON *target = targets->child; rc == 0 && target; target = target->next) {
            char pk[2048], sk[2048];
            if (kp_ddb_format_value(&f->placement->pk, target, pk, sizeof pk)) continue;
            if (f->kind == DDB_GET) {
                if (kp_ddb_format_value(&f->placement->sk, target, sk, sizeof sk)) continue;
                rc = get_item(R, pk, sk, items);
                continue;
            }
            int with_header = f->header && !(R->start_key && f->shape == R->pattern->paged);
            for (int s = 0; s < f->shards && rc == 0; s++) {
                char spk[2100];
                if (f->shards > 1) snprintf(spk, sizeof spk, "%s#%d", pk, s);
                else snprintf(spk, sizeof spk, "%s", pk);
                rc = run_query(R, f, spk, with_header, items, &count);
            }
            if (rc == 0 && f->shards > 1 && f->kind == DDB_QUERY) rc = merge_shards(R, f, items);
        }
        if (rc == 0 && f->kind == DDB_COUNT && f->shape && from) rc = kp_fetched_set_count(R->fetched, f->shape, from, count);
        /* the Limit made room for the riders; where one is missing, the item it left room
         * for is past the page */
        int64_t room = f->rider_count ? limit_for(R, f) : 0, listed = 0;
        for (const cJSON *it = items->child; rc == 0 && it; it = it->next) {
            kp_frec *rec = record_of(R, it);
            if (!rec) { rc = -1; break; }
            if (f->is_join_target && !(rec = join_target(R, f, rec))) { rc = -1; break; }
            if (f->header && rec->entity == f->header->entity) {
                R->root = rec;
                continue;
            }
            if (f->rider_count && rec->entity != f->entity->entity) {
                if (R->rider_count < sizeof R->riders / sizeof R->riders[0]) R->riders[R->rider_count++] = rec;
                continue;
            }
            if (room > 0 && listed >= room) continue;
            listed++;
            if (pairs_push3(out, rec, origin, from)) rc = nomem(R);
        }
        cJSON_Delete(targets);
        cJSON_Delete(items);
        if (rc) return -1;
    }
    return 0;
}

/* Reads the single root's header item when a later page's Query did not return it. */
static int read_header(run *R, const ddb_fetch *f)
{
    const ddb_placement *base = &f->header->placements[0];
    cJSON *targets = cJSON_CreateArray(), *items = cJSON_CreateArray();
    cJSON_AddItemToArray(targets, root_object(R));
    char pk[2048], sk[2048];
    int rc = 0;
    if (targets->child && kp_ddb_format_value(&base->pk, targets->child, pk, sizeof pk) == 0 &&
        kp_ddb_format_value(&base->sk, targets->child, sk, sizeof sk) == 0)
        rc = get_item(R, pk, sk, items);
    if (rc == 0 && items->child) {
        R->root = record_of(R, items->child);
        if (!R->root) rc = -1;
    }
    cJSON_Delete(targets);
    cJSON_Delete(items);
    return rc;
}

/* Links a level's records under the records they were read from (to-one leaf hops). */
static int link_hops(run *R, const ddb_fetch *f, const pairs *level)
{
    if (f->shape || f->kind == DDB_COUNT) return 0;
    for (size_t k = 0; k < level->count; k++)
        if (level->items[k].from && kp_fetched_link(R->fetched, f->rel, level->items[k].from, level->items[k].rec))
            return nomem(R);
    return 0;
}

/* The shared walker's read of one level (backends/fetch.h): what f reads, linked. */
static int read_level(void *ctx, const kp_fetch *node, const pairs *in, pairs *out, int *step)
{
    run *R = ctx;
    const ddb_fetch *f = (const ddb_fetch *)node;
    (void)step;
    int rc = fetch_level(R, f, in, out);
    return rc ? rc : link_hops(R, f, out);
}

/* Places what a path (first .. last, each hop on the one before) read into the response:
 * roots, elements of an $each under their context record, client order; the header read
 * with a listing is what the header's children run on. */
static int place(void *ctx, const kp_fetch *first_node, const kp_fetch *last_node, const pairs *in, const pairs *level,
                 pairs *on_inputs)
{
    run *R = ctx;
    const ddb_fetch *f = (const ddb_fetch *)first_node, *last = (const ddb_fetch *)last_node;
    const int is_root = in->count == 1 && !in->items[0].rec;
    int rc = 0;
    if (last->shape && last->kind != DDB_COUNT) {
        const kp_shape *s = last->shape;
        int64_t skip = 0;
        if (s == R->pattern->paged && s->page == KP_PAGE_OFFSET && last->is_server_ordered &&
            (!last->filter_count || limit_for(R, last) > 0) && last->shards == 1 && last == f && !last->is_client_filtered)
            skip = kp_ddb_param_int(R->params, s->offset_param, 0);
        if (is_root && !f->header) {
            /* a root set (or a single root looked up on an index) */
            for (size_t k = 0; k < level->count && rc == 0; k++) {
                if (skip > 0) { skip--; continue; }
                if (kp_fetched_add_root(R->fetched, level->items[k].rec)) rc = nomem(R);
                if (!s->is_root_set) R->root = level->items[k].rec;
            }
        } else {
            kp_frec *owner_root = NULL;
            if (is_root) {
                /* a merged header Query: the header is the root; a later page reads it (a
                 * first page without it found no parent) */
                if (!R->root && R->start_key && f->shape == R->pattern->paged) rc = read_header(R, f);
                owner_root = R->root;
                if (rc == 0 && owner_root && kp_fetched_add_root(R->fetched, owner_root)) rc = nomem(R);
            }
            /* offset paging read offset + limit items in index order: drop the first offset
             * (a client-ordered listing is cut by the assembler instead) */
            for (size_t k = 0; k < level->count && rc == 0; k++) {
                if (skip > 0) { skip--; continue; }
                kp_frec *owner = is_root ? owner_root : level->items[k].origin;
                if (owner && kp_fetched_link(R->fetched, s, owner, level->items[k].rec)) rc = nomem(R);
            }
        }
        if (rc == 0 && f->is_client_filtered) {
            kp_fetched_client_filter(R->fetched);
            kp_fetched_client_order(R->fetched, s);
        }
        /* the client cuts the page where the server could not: the order is the client's, or
         * a FilterExpression read the whole key range without a Limit (request.c) */
        int uncut = last->kind == DDB_QUERY && last->filter_count && limit_for(R, last) <= 0;
        if (rc == 0 && s->kind == KP_SHAPE_EACH &&
            (!last->is_server_ordered || last->shards > 1 || (last != f && !f->is_join_ordered) ||
             (last->kind == DDB_BATCH_GET && !f->is_join_ordered) || last->is_scan || uncut) &&
            !(last->rel && last->rel->relation->link == KP_LINK_ARRAY && !last->rel->is_inverse && !s->declared_order_count))
            kp_fetched_client_order(R->fetched, s);
    } else if (is_root) {
        /* a single root read by key */
        for (size_t k = 0; k < level->count && rc == 0; k++) {
            if (kp_fetched_add_root(R->fetched, level->items[k].rec)) rc = nomem(R);
            R->root = level->items[k].rec;
        }
    }
    if (rc == 0 && last->header && R->root && pairs_push(on_inputs, R->root, R->root)) rc = nomem(R);
    return rc;
}

static long requests_sent(void *ctx)
{
    run *R = ctx;
    return kp_ddb_requests_sent(kp_ddb_conn_client(R->conn));
}

/* ---- tokens -------------------------------------------------------------------------------- */

static const char b64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

static char *token_encode(const cJSON *key)
{
    char *json = cJSON_PrintUnformatted(key);
    if (!json) return NULL;
    size_t n = strlen(json);
    char *out = malloc(n * 4 / 3 + 8);
    size_t o = 0;
    for (size_t i = 0; out && i < n; i += 3) {
        unsigned v = (unsigned char)json[i] << 16 | (i + 1 < n ? (unsigned char)json[i + 1] << 8 : 0) |
                     (i + 2 < n ? (unsigned char)json[i + 2] : 0);
        out[o++] = b64[v >> 18 & 63];
        out[o++] = b64[v >> 12 & 63];
        if (i + 1 < n) out[o++] = b64[v >> 6 & 63];
        if (i + 2 < n) out[o++] = b64[v & 63];
    }
    if (out) out[o] = '\0';
    cJSON_free(json);
    return out;
}

static cJSON *token_decode(const char *token)
{
    size_t n = strlen(token), o = 0;
    char *json = malloc(n + 1);
    unsigned acc = 0;
    int bits = 0;
    for (size_t i = 0; json && i < n; i++) {
        const char *p = strchr(b64, token[i]);
        if (!p || !token[i]) { free(json); return NULL; }
        acc = acc << 6 | (unsigned)(p - b64);
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            json[o++] = (char)(acc >> bits & 0xFF);
        }
    }
    if (!json) return NULL;
    json[o] = '\0';
    cJSON *key = cJSON_Parse(json);
    free(json);
    return key;
}

int kp_ddb_execute(kp_conn *conn, const kp_design *d, const kp_pattern *p, const kp_params *params, const char *page,
                   kp_result *out, kp_error *err)
{
    memset(out, 0, sizeof *out);
    out->items_read = -1;
    out->bytes_read = -1;
    kp_error_clear(err);
    const ddb_layout *L = d->layout;
    run R = {0};
    R.conn = (kp_ddb_conn *)conn;
    R.design = d;
    R.L = L;
    R.pattern = p;
    R.params = params;
    R.fetched = kp_fetched_new();
    R.err = err;
    if (!R.fetched) return nomem(&R);
    if (page && page[0]) {
        R.start_key = token_decode(page);
        if (cJSON_IsArray(R.start_key)) {
            cJSON_Delete(R.start_key);
            R.start_key = NULL;
        } else if (!cJSON_IsObject(R.start_key)) {
            kp_fetched_free(R.fetched);
            cJSON_Delete(R.start_key);
            return kp_error_set(err, KP_ERR_USAGE, NULL, 0, 0, "the page token is not one this design produced");
        }
        const cJSON *after = cJSON_GetObjectItemCaseSensitive(R.start_key, "after");
        if (cJSON_IsString(after)) R.after_sk = after->valuestring;
    }
    if (page && page[0] && !R.start_key) {
        /* a page the client cut (sorted and paged in the client): the oracle's token form */
        if (kp_fetched_client_page(R.fetched, page, err)) {
            kp_fetched_free(R.fetched);
            return -1;
        }
    }
    long before = kp_ddb_requests_sent(kp_ddb_conn_client(R.conn));
    kp_fetch_runner walk = {.ctx = &R, .read_level = read_level, .place = place, .requests = requests_sent};
    int rc = kp_fetch_run(&walk, &L->roots[p->index]->base);
    if (rc && walk.is_out_of_memory) nomem(&R);
    if (rc == 0) {
        char *token = R.next_key ? token_encode(R.next_key) : NULL;
        out->response = kp_assemble(R.design->model, R.fetched, p, params, token, err);
        if (!token && kp_fetched_next_token(R.fetched)) token = strdup(kp_fetched_next_token(R.fetched));
        out->next_page = token;
        if (!out->response) rc = -1;
    }
    out->requests = (int)(kp_ddb_requests_sent(kp_ddb_conn_client(R.conn)) - before);
    out->sequential_steps = walk.max_step;
    out->is_cut_short = walk.is_cut_short;
    out->items_returned = R.items_returned;
    out->items_read = R.items_read;
    out->bytes_read = R.bytes_read;
    cJSON_Delete(R.start_key);
    cJSON_Delete(R.next_key);
    kp_fetched_free(R.fetched);
    if (rc) kp_result_free(out);
    return rc;
}
