/*
 * execute.c — runs an access pattern's fetch tree against a live MongoDB and
 * reassembles the declared response (backends/assemble.h does the shaping).
 *
 * A fetch node runs level by level over every record its parent produced: one find
 * (the root, from the parameters), one find per parent (a listing with a limit or a
 * page), or one find with $in over all parents (children without a limit, targets by
 * `_id`); records inside documents already read (embedded arrays, subsets, extended
 * references, the containing document) are taken out without a request. Every
 * document read is kept next to its record, so a later node can look inside it.
 * Paging: the token is the oracle's (the last element's order-key values); a find the
 * server orders continues after it with a keyset filter and reads one document more
 * than the page to know whether another page follows; anything else is cut by the
 * assembler in the client.
 * Invariant: what is measured — requests from the client's command counter, round
 * trips as the depth of finds that waited for an earlier answer — is never estimated.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/assemble.h"
#include "backends/copies.h"
#include "backends/mongodb/conn.h"
#include "backends/mongodb/mongo.h"
#include "core/data.h"
#include "core/oracle.h"
#include "core/value.h"

/* A record read, the context record it belongs to and the record it was read from
 * (backends/fetch.h). */
typedef kp_fetch_pair pair;
typedef kp_fetch_set pairs;

typedef struct doc_entry {
    const kp_frec *rec;
    cJSON *doc;                 /* the document or element it was read from (owned) */
    kp_frec *container;         /* the document an embedded record sits in */
} doc_entry;

typedef struct run {
    kp_mg_conn *conn;
    const kp_design *design;
    const mg_layout *L;
    const kp_pattern *pattern;
    const kp_params *params;
    kp_fetched *fetched;
    doc_entry *docs;            /* open addressing on rec */
    size_t doc_cap, doc_used;
    cJSON *after;               /* the page token's values, for the find the server pages */
    const mg_fetch *server_paged;
    int has_more;
    kp_frec *paged_owner;       /* the record whose paged $each the page belongs to */
    kp_frec *last_root;         /* a paged root set: the last root of the page */
    long items_returned;
    int tied;                   /* read_held_ties sent its find: what follows is one round trip later */
    kp_error *err;
} run;

static int nomem(run *R) { return kp_error_set(R->err, KP_ERR_NOMEM, NULL, 0, 0, "out of memory"); }

static int pairs_push(pairs *p, kp_frec *rec, kp_frec *origin, kp_frec *from) { return kp_fetch_set_push(p, rec, origin, from); }

/* ---- documents next to their records ------------------------------------------------------- */

static size_t ptr_hash(const void *p)
{
    uint64_t x = (uint64_t)(uintptr_t)p * 0x9E3779B97F4A7C15ULL;
    return (size_t)(x ^ (x >> 29));
}

static doc_entry *doc_find(const run *R, const kp_frec *rec)
{
    if (!R->doc_cap) return NULL;
    for (size_t i = ptr_hash(rec) & (R->doc_cap - 1);; i = (i + 1) & (R->doc_cap - 1)) {
        if (!R->docs[i].rec) return NULL;
        if (R->docs[i].rec == rec) return &R->docs[i];
    }
}

static int doc_put(run *R, const kp_frec *rec, const cJSON *doc, kp_frec *container)
{
    if (doc_find(R, rec)) return 0; /* the first reading stays */
    if ((R->doc_used + 1) * 2 > R->doc_cap) {
        size_t cap = R->doc_cap ? R->doc_cap * 2 : 64;
        doc_entry *bigger = calloc(cap, sizeof *bigger);
        if (!bigger) return -1;
        for (size_t i = 0; i < R->doc_cap; i++) {
            if (!R->docs[i].rec) continue;
            size_t j = ptr_hash(R->docs[i].rec) & (cap - 1);
            while (bigger[j].rec) j = (j + 1) & (cap - 1);
            bigger[j] = R->docs[i];
        }
        free(R->docs);
        R->docs = bigger;
        R->doc_cap = cap;
    }
    size_t i = ptr_hash(rec) & (R->doc_cap - 1);
    while (R->docs[i].rec) i = (i + 1) & (R->doc_cap - 1);
    R->docs[i].rec = rec;
    R->docs[i].doc = cJSON_Duplicate(doc, 1);
    R->docs[i].container = container;
    R->doc_used++;
    return R->docs[i].doc ? 0 : -1;
}

static void docs_free(run *R)
{
    for (size_t i = 0; i < R->doc_cap; i++) cJSON_Delete(R->docs[i].doc);
    free(R->docs);
}

/* The record of a document (or element) of entity e, kept with its document. */
static kp_frec *record_of(run *R, const kp_entity *e, const cJSON *doc, kp_frec *container)
{
    cJSON *object = kp_mg_record_of_entity(&R->L->entities[e->index], doc, R->err);
    if (!object) return NULL;
    kp_frec *rec = kp_fetched_add(R->fetched, e, object);
    if (!rec) { nomem(R); return NULL; }
    if (doc_put(R, rec, doc, container)) { nomem(R); return NULL; }
    R->items_returned++;
    return rec;
}

/* ---- values ------------------------------------------------------------------------------------ */

static const cJSON *operand(run *R, const kp_operand *op)
{
    if (!op->param) return op->literal;
    const cJSON *v = kp_params_get(R->params, op->param->name);
    return v ? v : op->param->default_value;
}

static int64_t param_int(run *R, const kp_param *param, int64_t fallback)
{
    const cJSON *v = param ? kp_params_get(R->params, param->name) : NULL;
    if (!v && param) v = param->default_value;
    char buf[64];
    const char *t = v ? kp_data_number_text(v, NULL, buf, sizeof buf) : NULL;
    int64_t n = fallback;
    if (t && kp_int_parse(t, strlen(t), &n)) n = fallback;
    return n;
}

static void regex_escape(const char *s, char *buf, size_t size)
{
    size_t o = 0;
    for (; *s && o + 3 < size; s++) {
        if (strchr("\\^$.|?*+()[]{}/", *s)) buf[o++] = '\\';
        buf[o++] = *s;
    }
    buf[o] = '\0';
}

/* One condition as a filter clause; NULL with *dropped set when an optional parameter is absent. */
static cJSON *clause(run *R, const kp_cond *c, const char *field, int *dropped)
{
    *dropped = 0;
    const cJSON *v = operand(R, &c->value);
    const cJSON *u = c->op == KP_OP_BETWEEN ? operand(R, &c->upper) : NULL;
    if (!v || (c->op == KP_OP_BETWEEN && !u)) { *dropped = 1; return NULL; }
    cJSON *out = cJSON_CreateObject();
    if (c->op == KP_OP_BEGINS_WITH) {
        char escaped[2048];
        regex_escape(cJSON_IsString(v) ? v->valuestring : "", escaped, sizeof escaped);
        cJSON *re = cJSON_CreateObject();
        char pattern[2100];
        snprintf(pattern, sizeof pattern, "^%s", escaped);
        cJSON_AddStringToObject(re, "$regex", pattern);
        cJSON_AddItemToObject(out, field, re);
        return out;
    }
    cJSON *x = kp_mg_to_ejson(&c->attr->type, v, R->err);
    if (!x) { cJSON_Delete(out); return NULL; }
    static const char *const ops[] = {NULL, "$lt", "$lte", "$gt", "$gte", "$gte", NULL};
    if (c->op == KP_OP_EQ) {
        cJSON_AddItemToObject(out, field, x);
    } else {
        cJSON *range = cJSON_CreateObject();
        cJSON_AddItemToObject(range, ops[c->op], x);
        if (c->op == KP_OP_BETWEEN) {
            cJSON *y = kp_mg_to_ejson(&c->attr->type, u, R->err);
            if (!y) { cJSON_Delete(range); cJSON_Delete(out); return NULL; }
            cJSON_AddItemToObject(range, "$lte", y);
        }
        cJSON_AddItemToObject(out, field, range);
    }
    return out;
}

/* Does a condition (no relation path) hold on a record? */
static int holds(run *R, const kp_cond *c, const kp_frec *rec)
{
    const cJSON *x = operand(R, &c->value);
    if (!x) return 1; /* an optional parameter left out drops its condition */
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(rec->object, c->attr->name);
    return kp_cond_holds(c->op, c->attr->type.kind, v, x, c->op == KP_OP_BETWEEN ? operand(R, &c->upper) : NULL,
                         R->design->model->doc);
}

static int is_nullable_attr(const kp_attr *a)
{
    return a->is_optional || (a->derived && (a->derived->fn == KP_AGG_MIN || a->derived->fn == KP_AGG_MAX));
}

/* The keyset clause "after the token" for a find sorted by f->sort. */
static cJSON *after_clause(run *R, const mg_fetch *f)
{
    const kp_shape *s = f->order_shape;
    cJSON *any = cJSON_CreateArray();
    const cJSON *t = R->after ? R->after->child : NULL;
    const cJSON *values[64];
    size_t n = 0;
    for (; t && n < f->sort_count && n < 64; t = t->next) values[n++] = t;
    if (n < f->sort_count) { cJSON_Delete(any); return NULL; }
    for (size_t i = 0; i < n; i++) {
        const kp_order_key *k = &s->order[i];
        int nulls_last = k->is_desc; /* the only null placements the server is trusted with (make_sort) */
        cJSON *all = cJSON_CreateArray();
        for (size_t j = 0; j < i; j++) {
            cJSON *eq = cJSON_CreateObject();
            const cJSON *v = values[j];
            cJSON_AddItemToObject(eq, f->sort[j].path, cJSON_IsNull(v) ? cJSON_CreateNull() : kp_mg_to_ejson(&s->order[j].attr->type, v, R->err));
            cJSON_AddItemToArray(all, eq);
        }
        const cJSON *v = values[i];
        cJSON *past = NULL;
        if (cJSON_IsNull(v)) {
            if (!nulls_last) {
                past = cJSON_CreateObject();
                cJSON *ne = cJSON_CreateObject();
                cJSON_AddNullToObject(ne, "$ne");
                cJSON_AddItemToObject(past, f->sort[i].path, ne);
            }
        } else {
            cJSON *range = cJSON_CreateObject();
            cJSON_AddItemToObject(range, k->is_desc ? "$lt" : "$gt", kp_mg_to_ejson(&k->attr->type, v, R->err));
            cJSON *beyond = cJSON_CreateObject();
            cJSON_AddItemToObject(beyond, f->sort[i].path, range);
            if (nulls_last && is_nullable_attr(k->attr)) {
                cJSON *either = cJSON_CreateArray();
                cJSON_AddItemToArray(either, beyond);
                cJSON *null = cJSON_CreateObject();
                cJSON_AddNullToObject(null, f->sort[i].path);
                cJSON_AddItemToArray(either, null);
                past = cJSON_CreateObject();
                cJSON_AddItemToObject(past, "$or", either);
            } else {
                past = beyond;
            }
        }
        if (!past) { cJSON_Delete(all); continue; }
        cJSON_AddItemToArray(all, past);
        cJSON *conj = cJSON_CreateObject();
        cJSON_AddItemToObject(conj, "$and", all);
        cJSON_AddItemToArray(any, conj);
    }
    cJSON *out = cJSON_CreateObject();
    if (!any->child) {
        /* nothing can come after: a filter no document matches */
        cJSON_Delete(any);
        cJSON *none = cJSON_CreateObject();
        cJSON_AddBoolToObject(none, "$exists", 0);
        cJSON_AddItemToObject(out, "_id", none);
        return out;
    }
    cJSON_AddItemToObject(out, "$or", any);
    return out;
}

static cJSON *conjunction(cJSON *clauses)
{
    int n = cJSON_GetArraySize(clauses);
    if (n == 0) { cJSON_Delete(clauses); return cJSON_CreateObject(); }
    if (n == 1) {
        cJSON *one = cJSON_DetachItemFromArray(clauses, 0);
        cJSON_Delete(clauses);
        return one;
    }
    cJSON *o = cJSON_CreateObject();
    cJSON_AddItemToObject(o, "$and", clauses);
    return o;
}

/* ---- one level ---------------------------------------------------------------------------------------- */

static int is_by_key(const mg_fetch *f)
{
    const kp_entity *e = f->entity->entity;
    if (f->shape || !f->entity->collection || f->match != MG_MATCH_PARAMS) return 0;
    for (size_t k = 0; k < e->key_count; k++) {
        int found = 0;
        for (size_t i = 0; i < f->cond_count; i++)
            found |= f->conds[i]->attr == e->key[k] && f->conds[i]->op == KP_OP_EQ && !f->conds[i]->path_len;
        if (!found) return 0;
    }
    return 1;
}

/* The filter clauses of the pattern's own conditions (root finds), or of $where. */
static int add_conditions(run *R, const mg_fetch *f, cJSON *clauses, int skip_key)
{
    for (size_t i = 0; i < f->cond_count; i++) {
        if (skip_key && f->conds[i]->attr->key_index >= 0 && f->conds[i]->op == KP_OP_EQ && !f->conds[i]->path_len) continue;
        int dropped;
        cJSON *c = clause(R, f->conds[i], f->cond_fields[i], &dropped);
        if (!c && !dropped) return -1;
        if (c) cJSON_AddItemToArray(clauses, c);
    }
    return 0;
}

static cJSON *find_options(run *R, const mg_fetch *f, int64_t *limit_out)
{
    cJSON *o = cJSON_CreateObject();
    int64_t limit = 0;
    const kp_shape *s = f->order_shape;
    if (f->is_server_ordered && f->sort_count) {
        cJSON *sort = cJSON_AddObjectToObject(o, "sort");
        for (size_t i = 0; i < f->sort_count; i++) cJSON_AddNumberToObject(sort, f->sort[i].path, f->sort[i].is_desc ? -1 : 1);
        if (f->limit > 0) limit = f->limit;
        else if (f->limit < 0 && s) limit = param_int(R, s->limit_param, s->limit);
        if (f->is_paged && s && s->page == KP_PAGE_OFFSET) {
            int64_t skip = param_int(R, s->offset_param, 0);
            if (skip > 0) cJSON_AddNumberToObject(o, "skip", (double)skip);
        }
    }
    int token_paged = f == R->server_paged && s && s->page == KP_PAGE_TOKEN;
    if (limit > 0) {
        cJSON_AddNumberToObject(o, "limit", (double)(limit + (token_paged || f->reads_ties ? 1 : 0)));
        cJSON_AddNumberToObject(o, "batchSize", (double)(limit + 1));
        cJSON_AddBoolToObject(o, "singleBatch", 1);
    } else {
        cJSON_AddNumberToObject(o, "batchSize", 100000);
    }
    *limit_out = limit;
    return o;
}

/* The value of a parent's attribute as Extended JSON (NULL when absent). */
static cJSON *parent_value(run *R, const kp_frec *rec, const kp_attr *a, const kp_type *as)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(rec->object, a->name);
    if (!v || cJSON_IsNull(v)) return NULL;
    return kp_mg_to_ejson(as ? as : &a->type, v, R->err);
}

static int same_value(const cJSON *a, const cJSON *b) { return a && b && kp_data_equal(a, b, NULL); }

/* Finds on one collection for (a subset of) the inputs; results appended to `docs`. */
static int run_find(run *R, const mg_fetch *f, cJSON *filter, int64_t *limit, cJSON **docs)
{
    cJSON *options = find_options(R, f, limit);
    const char *coll = kp_mg_conn_collection(R->conn, f->coll->name);
    char name[512];
    snprintf(name, sizeof name, "%s", coll);
    int rc = kp_mg_find(kp_mg_conn_client(R->conn), name, filter, options, docs, R->err);
    cJSON_Delete(options);
    return rc;
}

/* `filter` and the first sort key null (nulls) or not null. */
static cJSON *split_filter(const mg_fetch *f, const cJSON *filter, int nulls)
{
    cJSON *c = cJSON_CreateObject(), *all = cJSON_CreateObject();
    if (nulls) cJSON_AddNullToObject(c, f->sort[0].path);
    else cJSON_AddNullToObject(cJSON_AddObjectToObject(c, f->sort[0].path), "$ne");
    cJSON *and = cJSON_AddArrayToObject(all, "$and");
    cJSON_AddItemToArray(and, cJSON_Duplicate(filter, 1));
    cJSON_AddItemToArray(and, c);
    return all;
}

/* A root listing whose first sort key has its nulls where MongoDB does not sort them
 * (is_null_split): in one round trip, the part that comes first with the page's skip and
 * limit, the count of that part when the page skips (the second part starts after it), and
 * the second part from its start up to skip + limit; the page is the first part's documents,
 * then the second's past what the skip leaves of it. */
static int run_split_find(run *R, const mg_fetch *f, const cJSON *filter, int64_t *limit, cJSON **docs)
{
    const kp_shape *s = f->order_shape;
    int nulls_first = s->order[0].is_nulls_first;
    int64_t skip = s->page == KP_PAGE_OFFSET ? param_int(R, s->offset_param, 0) : 0;
    if (skip < 0) skip = 0;
    char name[512];
    snprintf(name, sizeof name, "%s", kp_mg_conn_collection(R->conn, f->coll->name));
    kp_mg_client *client = kp_mg_conn_client(R->conn);
    cJSON *first = split_filter(f, filter, nulls_first), *second = split_filter(f, filter, !nulls_first);
    cJSON *options = find_options(R, f, limit), *rest = NULL;
    long before = 0;
    int rc = kp_mg_find(client, name, first, options, docs, R->err);
    if (rc == 0 && skip > 0) rc = kp_mg_count(client, name, first, &before, R->err);
    if (rc == 0) {
        cJSON_DeleteItemFromObject(options, "skip");
        if (*limit > 0) {
            cJSON_ReplaceItemInObject(options, "limit", cJSON_CreateNumber((double)(skip + *limit)));
            cJSON_ReplaceItemInObject(options, "batchSize", cJSON_CreateNumber((double)(skip + *limit + 1)));
        }
        rc = kp_mg_find(client, name, second, options, &rest, R->err);
    }
    /* the second part's documents past the skip's remainder, up to the page */
    int64_t pass = skip > before ? skip - before : 0, have = cJSON_GetArraySize(*docs);
    for (cJSON *d = rest ? rest->child : NULL; rc == 0 && d;) {
        cJSON *next = d->next;
        if (pass > 0) pass--;
        else if (*limit <= 0 || have < *limit) {
            cJSON_AddItemToArray(*docs, cJSON_DetachItemViaPointer(rest, d));
            have++;
        }
        d = next;
    }
    cJSON_Delete(rest);
    cJSON_Delete(options);
    cJSON_Delete(first);
    cJSON_Delete(second);
    return rc;
}

/* The filter that selects the documents of one parent (FK / ARRAY matches). */
static cJSON *parent_clauses(run *R, const mg_fetch *f, const kp_frec *parent)
{
    cJSON *clauses = cJSON_CreateArray();
    for (size_t k = 0; k < f->match_count; k++) {
        const kp_attr *field_attr = NULL;
        const kp_entity *e = f->entity->entity;
        for (size_t a = 0; a < e->attr_count; a++)
            if (strcmp(e->attrs[a]->name, f->match_fields[k]) == 0) field_attr = e->attrs[a];
        cJSON *v = parent_value(R, parent, f->match_from[k], f->match == MG_MATCH_ARRAY ? &f->match_from[k]->type
                                                                                        : field_attr ? &field_attr->type : NULL);
        if (!v) { cJSON_Delete(clauses); return NULL; }
        cJSON *c = cJSON_CreateObject();
        cJSON_AddItemToObject(c, f->match_fields[k], v);
        cJSON_AddItemToArray(clauses, c);
    }
    return clauses;
}

/* Does document record `rec` belong to parent `parent` (FK / ARRAY)? */
static int belongs(run *R, const mg_fetch *f, const kp_frec *rec, const kp_frec *parent)
{
    (void)R;
    for (size_t k = 0; k < f->match_count; k++) {
        const cJSON *pv = cJSON_GetObjectItemCaseSensitive(parent->object, f->match_from[k]->name);
        const cJSON *rv = cJSON_GetObjectItemCaseSensitive(rec->object, f->match_fields[k]);
        if (f->match == MG_MATCH_ARRAY) {
            int in = 0;
            for (const cJSON *x = rv ? rv->child : NULL; x && !in; x = x->next) in = same_value(x, pv);
            if (!in) return 0;
        } else if (!same_value(pv, rv)) return 0;
    }
    return 1;
}

/* The target key objects a parent names (KEY matches, MG_KEYS): one per target, in order. */
static void targets_of(run *R, const mg_fetch *f, const kp_frec *parent, cJSON *out)
{
    (void)R;
    const kp_entity *t = f->entity->entity;
    if (f->rel && f->rel->relation->link == KP_LINK_ARRAY && !f->rel->is_inverse) {
        const cJSON *arr = cJSON_GetObjectItemCaseSensitive(parent->object, f->key_from[0]->name);
        for (const cJSON *x = arr ? arr->child : NULL; x; x = x->next) {
            cJSON *o = cJSON_CreateObject();
            cJSON_AddItemToObject(o, t->key[0]->name, kp_data_copy(x, NULL));
            cJSON_AddItemToArray(out, o);
        }
        return;
    }
    cJSON *o = cJSON_CreateObject();
    for (size_t k = 0; k < t->key_count; k++) {
        const cJSON *v = f->key_from[k] ? cJSON_GetObjectItemCaseSensitive(parent->object, f->key_from[k]->name) : NULL;
        if (!v || cJSON_IsNull(v)) { cJSON_Delete(o); return; }
        cJSON_AddItemToObject(o, t->key[k]->name, kp_data_copy(v, NULL));
    }
    cJSON_AddItemToArray(out, o);
}

static int key_matches(const kp_entity *e, const kp_frec *rec, const cJSON *key)
{
    for (size_t k = 0; k < e->key_count; k++)
        if (!same_value(cJSON_GetObjectItemCaseSensitive(rec->object, e->key[k]->name),
                        cJSON_GetObjectItemCaseSensitive(key, e->key[k]->name)))
            return 0;
    return 1;
}

/* A target's copied fields (f->extref) from the subdocument `sub` into object; -1 when a
 * value does not decode (R->err; a copy of the wrong type is a mismatch, named). */
static int extref_fields(run *R, const mg_fetch *f, const cJSON *sub, cJSON *object)
{
    for (size_t k = 0; k < f->extref->attr_count; k++) {
        const kp_attr *a = f->extref->attrs[k];
        const cJSON *e = cJSON_GetObjectItemCaseSensitive(sub, a->name);
        if (!e || cJSON_IsNull(e)) continue;
        kp_error value_err = {0};
        cJSON *v = kp_mg_from_ejson(&a->type, e, &value_err);
        if (!v && value_err.code == KP_ERR_DATA) {
            char found[700];
            snprintf(found, sizeof found, "MongoDB %.300s (a copy in '%.200s')", value_err.message, f->extref->field);
            v = kp_wrong_type_value(a, found);
        } else if (!v) {
            *R->err = value_err;
        }
        if (!v) return -1;
        cJSON_AddItemToObject(object, a->name, v);
    }
    return 0;
}

/* The targets of an array of references from the document's copies (decide_array_extrefs):
 * one record per element, in the array's order, made of the element (the target's key) and
 * the copied fields at the same position. */
static int extref_elements(run *R, const mg_fetch *f, const doc_entry *d, kp_frec *from, kp_frec *origin, pairs *out)
{
    const kp_entity *t = f->entity->entity;
    const cJSON *refs = cJSON_GetObjectItemCaseSensitive(from->object, f->rel->relation->array_attr->name);
    const cJSON *copies = cJSON_GetObjectItemCaseSensitive(d->doc, f->extref->field);
    int n = 0;
    for (const cJSON *ref = cJSON_IsArray(refs) ? refs->child : NULL; ref; ref = ref->next, n++) {
        cJSON *object = cJSON_CreateObject();
        if (!object) return nomem(R);
        cJSON_AddItemToObject(object, t->key[0]->name, kp_data_copy(ref, NULL));
        if (extref_fields(R, f, cJSON_GetArrayItem(copies, n), object)) { cJSON_Delete(object); return -1; }
        kp_frec *rec = kp_fetched_add(R->fetched, t, object);
        if (!rec || pairs_push(out, rec, origin, from)) return nomem(R);
    }
    return 0;
}

static int level_nested(run *R, const mg_fetch *f, const pairs *in, pairs *out)
{
    const kp_entity *t = f->entity->entity;
    for (size_t i = 0; i < in->count; i++) {
        kp_frec *from = in->items[i].rec;
        kp_frec *origin = in->items[i].origin ? in->items[i].origin : from;
        doc_entry *d = doc_find(R, from);
        if (f->is_container) {
            if (d && d->container && pairs_push(out, d->container, origin, from)) return nomem(R);
            continue;
        }
        if (f->extref && f->extref->rel->relation->link == KP_LINK_ARRAY) {
            if (d && extref_elements(R, f, d, from, origin, out)) return -1;
            continue;
        }
        if (f->rel && f->rel->relation->link == KP_LINK_ARRAY) {
            /* $count of an array of references: its length */
            const cJSON *arr = cJSON_GetObjectItemCaseSensitive(from->object, f->rel->relation->array_attr->name);
            if (f->shape && kp_fetched_set_count(R->fetched, f->shape, origin, (long)cJSON_GetArraySize(arr))) return nomem(R);
            continue;
        }
        if (!d) continue;
        if (f->extref) {
            const cJSON *sub = cJSON_GetObjectItemCaseSensitive(d->doc, f->extref->field);
            if (!cJSON_IsObject(sub)) {
                /* an element nested in the very record it references carries no copy of it */
                if (d->container && d->container->entity == t && pairs_push(out, d->container, origin, from)) return nomem(R);
                continue;
            }
            /* the target's key from the referencing record's foreign key (or the join record) */
            int is_nomem = 0;
            cJSON *object = kp_copy_target_key(f->rel, from->object, &is_nomem);
            if (!object) {
                if (is_nomem) return nomem(R);
                continue;
            }
            if (extref_fields(R, f, sub, object)) { cJSON_Delete(object); return -1; }
            kp_frec *rec = kp_fetched_add(R->fetched, t, object);
            if (!rec) return nomem(R);
            if (pairs_push(out, rec, origin, from)) return nomem(R);
            continue;
        }
        const cJSON *held = f->nested ? cJSON_GetObjectItemCaseSensitive(d->doc, f->nested->field) : NULL;
        if (!held) continue;
        const cJSON *single[1] = {held};
        const cJSON *el = cJSON_IsArray(held) ? held->child : single[0];
        int is_array = cJSON_IsArray(held);
        for (; el; el = is_array ? el->next : NULL) {
            kp_frec *rec = record_of(R, t, el, from);
            if (!rec) return -1;
            int ok = 1;
            for (size_t k = 0; k < f->client_cond_count && ok; k++) ok = holds(R, f->client_conds[k], rec);
            if (ok && pairs_push(out, rec, origin, from)) return nomem(R);
        }
    }
    return 0;
}

static int level_keys(run *R, const mg_fetch *f, const pairs *in, pairs *out)
{
    for (size_t i = 0; i < in->count; i++) {
        kp_frec *from = in->items[i].rec;
        kp_frec *origin = in->items[i].origin ? in->items[i].origin : from;
        cJSON *targets = cJSON_CreateArray();
        targets_of(R, f, from, targets);
        while (targets->child) {
            cJSON *object = cJSON_DetachItemFromArray(targets, 0);
            kp_frec *rec = kp_fetched_add(R->fetched, f->entity->entity, object);
            if (!rec || pairs_push(out, rec, origin, from)) { cJSON_Delete(targets); return nomem(R); }
        }
        cJSON_Delete(targets);
    }
    return 0;
}

/* Finds by _id with $in over every parent's targets; linked per parent in their order. */
static int level_by_key(run *R, const mg_fetch *f, const pairs *in, pairs *out)
{
    const kp_entity *t = f->entity->entity;
    cJSON *targets = cJSON_CreateArray();
    size_t *owner = malloc(sizeof *owner * 16), owner_cap = 16, owner_count = 0;
    if (!owner) { cJSON_Delete(targets); return nomem(R); }
    for (size_t i = 0; i < in->count; i++) {
        int before = cJSON_GetArraySize(targets);
        targets_of(R, f, in->items[i].rec, targets);
        for (int k = before; k < cJSON_GetArraySize(targets); k++) {
            if (owner_count == owner_cap) {
                size_t *bigger = realloc(owner, sizeof *owner * owner_cap * 2);
                if (!bigger) { free(owner); cJSON_Delete(targets); return nomem(R); }
                owner = bigger;
                owner_cap *= 2;
            }
            owner[owner_count++] = i;
        }
    }
    /* distinct _ids, 1,000 per find */
    cJSON *ids = cJSON_CreateArray();
    for (const cJSON *x = targets->child; x; x = x->next) {
        cJSON *id = kp_mg_id(t, x, R->err);
        if (!id) continue;
        int dup = 0;
        for (const cJSON *y = ids->child; y && !dup; y = y->next) dup = cJSON_Compare(y, id, 1);
        if (dup) cJSON_Delete(id);
        else cJSON_AddItemToArray(ids, id);
    }
    kp_frec **found = NULL;
    size_t found_count = 0;
    int rc = 0;
    while (rc == 0 && ids->child) {
        cJSON *chunk = cJSON_CreateArray();
        for (int k = 0; k < KP_MG_IN_BATCH && ids->child; k++) cJSON_AddItemToArray(chunk, cJSON_DetachItemFromArray(ids, 0));
        cJSON *filter = cJSON_CreateObject();
        cJSON *in_ = cJSON_CreateObject();
        cJSON_AddItemToObject(in_, "$in", chunk);
        cJSON_AddItemToObject(filter, "_id", in_);
        cJSON *docs = NULL;
        int64_t limit;
        rc = run_find(R, f, filter, &limit, &docs);
        cJSON_Delete(filter);
        for (const cJSON *d = docs ? docs->child : NULL; rc == 0 && d; d = d->next) {
            kp_frec *rec = record_of(R, t, d, NULL);
            if (!rec) { rc = -1; break; }
            kp_frec **bigger = realloc(found, sizeof *found * (found_count + 1));
            if (!bigger) { rc = nomem(R); break; }
            found = bigger;
            found[found_count++] = rec;
        }
        cJSON_Delete(docs);
    }
    size_t k = 0;
    for (const cJSON *x = targets->child; rc == 0 && x; x = x->next, k++)
        for (size_t j = 0; j < found_count; j++)
            if (key_matches(t, found[j], x)) {
                const pair *src = &in->items[owner[k]];
                if (pairs_push(out, found[j], src->origin ? src->origin : src->rec, src->rec)) rc = nomem(R);
                break;
            }
    free(found);
    free(owner);
    cJSON_Delete(ids);
    cJSON_Delete(targets);
    return rc;
}

/* A held page (plan.c held_page) whose document after the page's last ties with it on the
 * order's fields: the parent's documents with those values, the ones not read yet added,
 * for the client to order their lines with the page's. One more round trip. */
static int read_held_ties(run *R, const mg_fetch *f, kp_frec *parent, kp_frec *origin, const cJSON *docs,
                          const kp_frec *page_last, const kp_frec *next, pairs *out)
{
    for (size_t i = 0; i < f->reads_ties; i++) {
        const char *name = f->tie_attrs[i]->name;
        if (!kp_data_equal(cJSON_GetObjectItemCaseSensitive(page_last->object, name),
                           cJSON_GetObjectItemCaseSensitive(next->object, name), NULL))
            return 0;
    }
    cJSON *clauses = parent_clauses(R, f, parent);
    if (!clauses) return 0;
    if (add_conditions(R, f, clauses, 0)) { cJSON_Delete(clauses); return -1; }
    for (size_t i = 0; i < f->reads_ties; i++) {
        cJSON *v = parent_value(R, next, f->tie_attrs[i], NULL);
        if (!v) { cJSON_Delete(clauses); return -1; }
        cJSON *c = cJSON_CreateObject();
        cJSON_AddItemToObject(c, f->sort[i].path, v);
        cJSON_AddItemToArray(clauses, c);
    }
    /* the same find, without its order and limit */
    mg_fetch every = *f;
    every.sort_count = 0;
    every.limit = 0;
    every.reads_ties = 0;
    cJSON *filter = conjunction(clauses), *ties = NULL;
    int64_t limit;
    int rc = run_find(R, &every, filter, &limit, &ties);
    cJSON_Delete(filter);
    R->tied = 1;
    for (const cJSON *d = ties ? ties->child : NULL; rc == 0 && d; d = d->next) {
        const cJSON *id = cJSON_GetObjectItemCaseSensitive(d, "_id");
        int seen = 0;
        for (const cJSON *r = docs->child; r && !seen; r = r->next) seen = cJSON_Compare(id, cJSON_GetObjectItemCaseSensitive(r, "_id"), 1);
        if (seen) continue;
        kp_frec *rec = record_of(R, f->entity->entity, d, NULL);
        if (!rec) rc = -1;
        else if (pairs_push(out, rec, origin, parent)) rc = nomem(R);
    }
    cJSON_Delete(ties);
    return rc;
}

static int level_find(run *R, const mg_fetch *f, const pairs *in, pairs *out)
{
    const kp_entity *e = f->entity->entity;
    if (f->match == MG_MATCH_KEY) return level_by_key(R, f, in, out);
    int is_root = in->count == 1 && !in->items[0].rec;
    if (is_root) {
        cJSON *clauses = cJSON_CreateArray();
        int by_key = is_by_key(f);
        if (f->match == MG_MATCH_PARENT) {
            /* the parent key, from the child's reference in the parameters */
            const kp_relation *rel = kp_mg_next_hop(f)->rel->relation;
            cJSON *object = cJSON_CreateObject();
            for (size_t k = 0; k < rel->fk_count; k++)
                for (size_t i = 0; i < R->pattern->where_count; i++) {
                    const kp_cond *c = &R->pattern->where[i];
                    if (c->attr == rel->fk_attrs[k] && c->op == KP_OP_EQ && !c->path_len) {
                        const cJSON *v = operand(R, &c->value);
                        if (v) cJSON_AddItemToObject(object, rel->ref_attrs[k]->name, kp_data_copy(v, NULL));
                    }
                }
            cJSON *id = kp_mg_id(e, object, R->err);
            cJSON_Delete(object);
            if (!id) { cJSON_Delete(clauses); return -1; }
            cJSON *c = cJSON_CreateObject();
            cJSON_AddItemToObject(c, "_id", id);
            cJSON_AddItemToArray(clauses, c);
        } else if (by_key) {
            cJSON *object = cJSON_CreateObject();
            for (size_t i = 0; i < f->cond_count; i++)
                if (f->conds[i]->attr->key_index >= 0 && f->conds[i]->op == KP_OP_EQ && !f->conds[i]->path_len) {
                    const cJSON *v = operand(R, &f->conds[i]->value);
                    if (v) cJSON_AddItemToObject(object, f->conds[i]->attr->name, kp_data_copy(v, NULL));
                }
            cJSON *id = kp_mg_id(e, object, R->err);
            cJSON_Delete(object);
            if (!id) { cJSON_Delete(clauses); return -1; }
            cJSON *c = cJSON_CreateObject();
            cJSON_AddItemToObject(c, "_id", id);
            cJSON_AddItemToArray(clauses, c);
        }
        if (add_conditions(R, f, clauses, by_key)) { cJSON_Delete(clauses); return -1; }
        if (f == R->server_paged && R->after) cJSON_AddItemToArray(clauses, after_clause(R, f));
        cJSON *filter = conjunction(clauses);
        cJSON *docs = NULL;
        int64_t limit;
        int rc = kp_mg_is_split(f) ? run_split_find(R, f, filter, &limit, &docs) : run_find(R, f, filter, &limit, &docs);
        cJSON_Delete(filter);
        if (rc) return -1;
        size_t got = 0;
        for (const cJSON *d = docs->child; d; d = d->next) {
            if (f == R->server_paged && limit > 0 && got == (size_t)limit) { R->has_more = 1; break; }
            kp_frec *rec = record_of(R, e, d, NULL);
            if (!rec || pairs_push(out, rec, NULL, NULL)) { cJSON_Delete(docs); return rec ? nomem(R) : -1; }
            if (f == R->server_paged) R->last_root = rec;
            got++;
        }
        cJSON_Delete(docs);
        return 0;
    }
    /* per parent, or one $in over all parents */
    int single_field = f->match_count == 1 && !f->is_per_parent;
    if (single_field) {
        cJSON *values = cJSON_CreateArray();
        for (size_t i = 0; i < in->count; i++) {
            cJSON *clauses = parent_clauses(R, f, in->items[i].rec);
            if (!clauses) continue;
            cJSON *v = cJSON_DetachItemFromObject(clauses->child, f->match_fields[0]);
            cJSON_Delete(clauses);
            int dup = 0;
            for (const cJSON *y = values->child; y && !dup; y = y->next) dup = cJSON_Compare(y, v, 1);
            if (dup) cJSON_Delete(v);
            else cJSON_AddItemToArray(values, v);
        }
        kp_frec **recs = NULL;
        size_t rn = 0;
        int rc = 0;
        while (rc == 0 && values->child) {
            cJSON *chunk = cJSON_CreateArray();
            for (int k = 0; k < KP_MG_IN_BATCH && values->child; k++) cJSON_AddItemToArray(chunk, cJSON_DetachItemFromArray(values, 0));
            cJSON *clauses = cJSON_CreateArray();
            cJSON *c = cJSON_CreateObject(), *in_ = cJSON_CreateObject();
            cJSON_AddItemToObject(in_, "$in", chunk);
            cJSON_AddItemToObject(c, f->match_fields[0], in_);
            cJSON_AddItemToArray(clauses, c);
            if (add_conditions(R, f, clauses, 0)) { cJSON_Delete(clauses); rc = -1; break; }
            cJSON *filter = conjunction(clauses);
            cJSON *docs = NULL;
            int64_t limit;
            rc = run_find(R, f, filter, &limit, &docs);
            cJSON_Delete(filter);
            for (const cJSON *d = docs ? docs->child : NULL; rc == 0 && d; d = d->next) {
                kp_frec *rec = record_of(R, e, d, NULL);
                if (!rec) { rc = -1; break; }
                kp_frec **bigger = realloc(recs, sizeof *recs * (rn + 1));
                if (!bigger) { rc = nomem(R); break; }
                recs = bigger;
                recs[rn++] = rec;
            }
            cJSON_Delete(docs);
        }
        /* each parent's documents, in the order the server returned them (a find sent
         * without a sort: in key order, the order the oracle follows a relation in) */
        if (rc == 0 && !f->sort_count && kp_fetched_sort_by_key(recs, rn)) rc = nomem(R);
        for (size_t i = 0; rc == 0 && i < in->count; i++)
            for (size_t k = 0; k < rn && rc == 0; k++)
                if (belongs(R, f, recs[k], in->items[i].rec) &&
                    pairs_push(out, recs[k], in->items[i].origin ? in->items[i].origin : in->items[i].rec, in->items[i].rec))
                    rc = nomem(R);
        free(recs);
        cJSON_Delete(values);
        return rc;
    }
    for (size_t i = 0; i < in->count; i++) {
        kp_frec *parent = in->items[i].rec;
        kp_frec *origin = in->items[i].origin ? in->items[i].origin : parent;
        cJSON *clauses = parent_clauses(R, f, parent);
        if (!clauses) continue;
        if (add_conditions(R, f, clauses, 0)) { cJSON_Delete(clauses); return -1; }
        if (f == R->server_paged && R->after) cJSON_AddItemToArray(clauses, after_clause(R, f));
        cJSON *filter = conjunction(clauses);
        if (f->kind == MG_COUNT) {
            long n = 0;
            char name[512];
            snprintf(name, sizeof name, "%s", kp_mg_conn_collection(R->conn, f->coll->name));
            int rc = kp_mg_count(kp_mg_conn_client(R->conn), name, filter, &n, R->err);
            cJSON_Delete(filter);
            if (rc) return -1;
            if (f->shape && kp_fetched_set_count(R->fetched, f->shape, origin, n)) return nomem(R);
            continue;
        }
        cJSON *docs = NULL;
        int64_t limit;
        int rc = run_find(R, f, filter, &limit, &docs);
        cJSON_Delete(filter);
        if (rc) return -1;
        if (f == R->server_paged) R->paged_owner = origin;
        size_t got = 0, first = out->count;
        for (const cJSON *d = docs->child; d; d = d->next) {
            if (f == R->server_paged && limit > 0 && got == (size_t)limit) { R->has_more = 1; break; }
            kp_frec *rec = record_of(R, e, d, NULL);
            if (!rec || pairs_push(out, rec, origin, parent)) { cJSON_Delete(docs); return rec ? nomem(R) : -1; }
            got++;
        }
        if (f->reads_ties && limit > 0 && got == (size_t)limit + 1 &&
            read_held_ties(R, f, parent, origin, docs, out->items[first + got - 2].rec, out->items[first + got - 1].rec, out)) {
            cJSON_Delete(docs);
            return -1;
        }
        cJSON_Delete(docs);
        if (!f->sort_count && got > 1) {
            /* sent without a sort: this parent's documents in key order */
            kp_frec **recs = malloc(got * sizeof *recs);
            if (!recs) return nomem(R);
            for (size_t k = 0; k < got; k++) recs[k] = out->items[first + k].rec;
            int sorted = kp_fetched_sort_by_key(recs, got);
            for (size_t k = 0; sorted == 0 && k < got; k++) out->items[first + k].rec = recs[k];
            free(recs);
            if (sorted) return nomem(R);
        }
    }
    return 0;
}

/* Leaf hops (a to-one path of a leaf) are linked under their relation. */
static int link_hops(run *R, const mg_fetch *f, const pairs *level)
{
    if (f->shape || f->kind == MG_COUNT || !f->rel) return 0;
    for (size_t k = 0; k < level->count; k++)
        if (level->items[k].from && kp_fetched_link(R->fetched, f->rel, level->items[k].from, level->items[k].rec))
            return nomem(R);
    return 0;
}

/* The shared walker's read of one level (backends/fetch.h): what f reads, linked. */
static int read_level(void *ctx, const kp_fetch *node, const pairs *in, pairs *out, int *step)
{
    run *R = ctx;
    const mg_fetch *f = (const mg_fetch *)node;
    int rc;
    switch (f->kind) {
    case MG_NESTED: rc = level_nested(R, f, in, out); break;
    case MG_KEYS: rc = level_keys(R, f, in, out); break;
    default: rc = level_find(R, f, in, out); break;
    }
    *step += R->tied;
    R->tied = 0;
    return rc ? rc : link_hops(R, f, out);
}

/* Places what a path (first .. last, each hop on the one before) read into the response:
 * roots, elements of a shape under their context record, client filter and order. */
static int place(void *ctx, const kp_fetch *first_node, const kp_fetch *last_node, const pairs *in, const pairs *level,
                 pairs *on_inputs)
{
    run *R = ctx;
    const mg_fetch *f = (const mg_fetch *)first_node, *last = (const mg_fetch *)last_node;
    (void)on_inputs;
    int server_ordered = 1;
    for (const mg_fetch *h = f; h; h = kp_mg_next_hop(h)) server_ordered &= h->is_server_ordered;
    const int is_root = in->count == 1 && !in->items[0].rec;
    const kp_shape *s = last->shape;
    int counted = last->kind == MG_COUNT || (s && s->kind == KP_SHAPE_COUNT && last->kind == MG_NESTED && !last->nested);
    int rc = 0;
    if (s && !counted) {
        if (is_root) {
            for (size_t k = 0; k < level->count && rc == 0; k++)
                if (kp_fetched_add_root(R->fetched, level->items[k].rec)) rc = nomem(R);
        } else {
            for (size_t k = 0; k < level->count && rc == 0; k++)
                if (level->items[k].origin && kp_fetched_link(R->fetched, s, level->items[k].origin, level->items[k].rec)) rc = nomem(R);
        }
        if (rc == 0 && f->is_client_filtered) {
            kp_fetched_client_filter(R->fetched);
            kp_fetched_client_order(R->fetched, s);
        }
        if (rc == 0 && s->kind == KP_SHAPE_EACH && !server_ordered) kp_fetched_client_order(R->fetched, s);
    } else if (is_root && !counted) {
        for (size_t k = 0; k < level->count && rc == 0; k++)
            if (kp_fetched_add_root(R->fetched, level->items[k].rec)) rc = nomem(R);
    }
    return rc;
}

static long requests_sent(void *ctx)
{
    run *R = ctx;
    return kp_mg_client_requests(kp_mg_conn_client(R->conn));
}

/* The find the server pages for the pattern's paged $each, if any. */
static const mg_fetch *find_server_paged(const mg_fetch *f)
{
    if (!f) return NULL;
    if (f->kind == MG_FIND && f->is_paged && f->is_server_ordered && f->sort_count) {
        /* a keys-only join page is ordered by the join documents */
        const mg_fetch *end = f;
        int ordered = 1;
        while (kp_mg_next_hop(end)) { end = kp_mg_next_hop(end); ordered &= end->is_server_ordered; }
        if (ordered) return f;
    }
    const mg_fetch *x = find_server_paged(kp_mg_next_hop(f));
    for (size_t i = 0; !x && i < f->base.child_count; i++) x = find_server_paged(kp_mg_child(f, i));
    return x;
}

/* The oracle's token after the last element of the page. */
static char *next_token(run *R)
{
    const kp_shape *s = R->pattern->paged;
    if (!s || !R->has_more) return NULL;
    size_t n;
    kp_frec *const *items;
    const kp_frec *last = NULL;
    if (s->is_root_set) {
        last = R->last_root;
    } else {
        items = R->paged_owner ? kp_fetched_children(R->fetched, s, R->paged_owner, &n) : NULL;
        last = items && n ? items[n - 1] : NULL;
    }
    if (!last) return NULL;
    cJSON *values = cJSON_CreateArray();
    for (size_t k = 0; k < s->order_count; k++) {
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(last->object, s->order[k].attr->name);
        cJSON_AddItemToArray(values, v ? kp_data_copy(v, NULL) : cJSON_CreateNull());
    }
    char *t = kp_oracle_token_encode(values);
    cJSON_Delete(values);
    return t;
}

int kp_mg_execute(kp_conn *conn, const kp_design *d, const kp_pattern *p, const kp_params *params, const char *page,
                  kp_result *out, kp_error *err)
{
    memset(out, 0, sizeof *out);
    out->items_read = -1;
    out->bytes_read = -1;
    kp_error_clear(err);
    run R;
    memset(&R, 0, sizeof R);
    R.conn = (kp_mg_conn *)conn;
    kp_mg_conn_use(R.conn, d);
    R.design = d;
    R.L = d->layout;
    R.pattern = p;
    R.params = params;
    R.err = err;
    R.fetched = kp_fetched_new();
    if (!R.fetched) return nomem(&R);
    const mg_fetch *root = R.L->roots[p->index];
    R.server_paged = find_server_paged(root);
    if (R.server_paged && R.server_paged->order_shape && R.server_paged->order_shape->page != KP_PAGE_TOKEN) R.server_paged = NULL;
    int rc = 0;
    if (page && page[0]) {
        if (R.server_paged) rc = kp_oracle_token_decode(page, &R.after, err);
        else rc = kp_fetched_client_page(R.fetched, page, err);
    }
    long before = kp_mg_client_requests(kp_mg_conn_client(R.conn)), docs_before, bytes_before;
    kp_mg_client_reads(kp_mg_conn_client(R.conn), &docs_before, &bytes_before);
    kp_fetch_runner walk = {.ctx = &R, .read_level = read_level, .place = place, .requests = requests_sent};
    if (rc == 0) rc = kp_fetch_run(&walk, &root->base);
    if (rc && walk.is_out_of_memory) nomem(&R);
    if (rc == 0) {
        char *token = R.server_paged ? next_token(&R) : NULL;
        out->response = kp_assemble(R.design->model, R.fetched, p, params, token, err);
        if (!token && kp_fetched_next_token(R.fetched)) token = strdup(kp_fetched_next_token(R.fetched));
        out->next_page = token;
        if (!out->response) rc = -1;
    }
    out->requests = (int)(kp_mg_client_requests(kp_mg_conn_client(R.conn)) - before);
    out->sequential_steps = walk.max_step;
    out->is_cut_short = walk.is_cut_short;
    out->items_returned = R.items_returned;
    long docs_after, bytes_after;
    kp_mg_client_reads(kp_mg_conn_client(R.conn), &docs_after, &bytes_after);
    out->items_read = docs_after - docs_before;
    out->bytes_read = bytes_after - bytes_before;
    cJSON_Delete(R.after);
    docs_free(&R);
    kp_fetched_free(R.fetched);
    if (rc) kp_result_free(out);
    return rc;
}
