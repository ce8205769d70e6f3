/*
 * assemble.c — the response, built from what a backend fetched (see assemble.h).
 *
 * Invariant: the JSON produced here has the oracle's conventions exactly — members in
 * shape order, absent values as null, $one null when nothing was linked, epoch
 * encodings of timestamps, numbers as exact text — so that verify's diff only ever
 * shows differences in what the server returned.
 */
#include "backends/assemble.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/data.h"
#include "core/oracle.h"
#include "core/value.h"

typedef struct link_list {
    const void *edge;
    const kp_frec *parent;
    kp_frec **items;
    size_t count, cap;
    long count_value;           /* set_count */
    int has_count;
} link_list;

struct kp_fetched {
    kp_frec **records;
    size_t record_count, record_cap;
    size_t *by_key;             /* open addressing on (entity, key values): record index + 1 */
    size_t key_cap;
    kp_frec **roots;
    size_t root_count, root_cap;
    link_list *links;           /* open addressing on (edge, parent) */
    size_t link_cap, link_used;
    const kp_shape **client_ordered;
    size_t client_count, client_cap;
    cJSON *client_after;        /* decoded page token of a client-paged $each */
    char *client_next;          /* the token after this page */
    int is_client_filtered;     /* filter the root set by conditions through relations */
};

kp_fetched *kp_fetched_new(void)
{
    return calloc(1, sizeof(kp_fetched));
}

void kp_fetched_free(kp_fetched *f)
{
    if (!f) return;
    for (size_t i = 0; i < f->record_count; i++) {
        cJSON_Delete(f->records[i]->object);
        free(f->records[i]);
    }
    free(f->records);
    free(f->by_key);
    free(f->roots);
    for (size_t i = 0; i < f->link_cap; i++) free(f->links[i].items);
    free(f->links);
    free(f->client_ordered);
    cJSON_Delete(f->client_after);
    free(f->client_next);
    free(f);
}

int kp_fetched_client_page(kp_fetched *f, const char *token, kp_error *err)
{
    cJSON_Delete(f->client_after);
    f->client_after = NULL;
    if (!token || !token[0]) return 0;
    return kp_oracle_token_decode(token, &f->client_after, err);
}

const char *kp_fetched_next_token(const kp_fetched *f) { return f->client_next; }

void kp_fetched_client_filter(kp_fetched *f) { f->is_client_filtered = 1; }

static int push(void ***items, size_t *count, size_t *cap, void *item)
{
    if (*count == *cap) {
        size_t n = *cap ? *cap * 2 : 8;
        void **bigger = realloc(*items, n * sizeof *bigger);
        if (!bigger) return -1;
        *items = bigger;
        *cap = n;
    }
    (*items)[(*count)++] = item;
    return 0;
}

static int compare_keys(const kp_frec *a, const kp_frec *b)
{
    const kp_entity *e = a->entity;
    for (size_t k = 0; k < e->key_count; k++) {
        const cJSON *x = cJSON_GetObjectItemCaseSensitive(a->object, e->key[k]->name);
        const cJSON *y = cJSON_GetObjectItemCaseSensitive(b->object, e->key[k]->name);
        if (!x || !y) { if (x != y) return x ? 1 : -1; continue; }
        int c = kp_data_compare(e->key[k]->type.kind, x, y, NULL);
        if (c) return c;
    }
    return 0;
}

/* A stable merge sort of fetched records by a comparator (ctx: what it compares by). */
typedef int (*frec_order)(const void *ctx, const kp_frec *a, const kp_frec *b);

static void merge_frecs(frec_order cmp, const void *ctx, kp_frec **items, kp_frec **tmp, size_t n)
{
    if (n < 2) return;
    size_t half = n / 2;
    merge_frecs(cmp, ctx, items, tmp, half);
    merge_frecs(cmp, ctx, items + half, tmp, n - half);
    size_t i = 0, j = half, o = 0;
    while (i < half && j < n) tmp[o++] = cmp(ctx, items[j], items[i]) < 0 ? items[j++] : items[i++];
    while (i < half) tmp[o++] = items[i++];
    while (j < n) tmp[o++] = items[j++];
    memcpy(items, tmp, n * sizeof *items);
}

static int sort_frecs(frec_order cmp, const void *ctx, kp_frec **items, size_t n)
{
    if (n < 2) return 0;
    kp_frec **tmp = malloc(n * sizeof *tmp);
    if (!tmp) return -1;
    merge_frecs(cmp, ctx, items, tmp, n);
    free(tmp);
    return 0;
}

static int by_key(const void *ctx, const kp_frec *a, const kp_frec *b)
{
    (void)ctx;
    return compare_keys(a, b);
}

int kp_fetched_sort_by_key(kp_frec **recs, size_t n) { return sort_frecs(by_key, NULL, recs, n); }

static int same_key(const kp_entity *e, const cJSON *a, const cJSON *b)
{
    for (size_t k = 0; k < e->key_count; k++) {
        const cJSON *x = cJSON_GetObjectItemCaseSensitive(a, e->key[k]->name);
        const cJSON *y = cJSON_GetObjectItemCaseSensitive(b, e->key[k]->name);
        if (!x || !y || kp_data_compare(e->key[k]->type.kind, x, y, NULL) != 0) return 0;
    }
    return 1;
}

/* A hash of a record's identity that equal keys share (kp_data_compare: numbers by value,
 * so a number hashes its value, never its text). */
static uint64_t key_hash(const kp_entity *e, const cJSON *object)
{
    uint64_t h = 1469598103934665603ULL ^ (uint64_t)e->index;
    for (size_t k = 0; k < e->key_count; k++) {
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(object, e->key[k]->name);
        h = (h ^ (uint64_t)(k + 1)) * 1099511628211ULL;
        if (cJSON_IsString(v)) {
            for (const char *c = v->valuestring; *c; c++) h = (h ^ (unsigned char)*c) * 1099511628211ULL;
        } else if (cJSON_IsNumber(v) || cJSON_IsRaw(v)) {
            double d = cJSON_IsRaw(v) ? strtod(v->valuestring, NULL) : v->valuedouble;
            if (d == 0) d = 0; /* -0 and 0 */
            uint64_t bits;
            memcpy(&bits, &d, sizeof bits);
            h = (h ^ bits) * 1099511628211ULL;
        } else if (v) {
            h = (h ^ (uint64_t)v->type) * 1099511628211ULL;
        }
    }
    return h;
}

static int rehash(kp_fetched *f)
{
    size_t cap = f->key_cap ? f->key_cap * 2 : 64;
    size_t *slots = calloc(cap, sizeof *slots);
    if (!slots) return -1;
    for (size_t i = 0; i < f->record_count; i++) {
        size_t j = (size_t)(key_hash(f->records[i]->entity, f->records[i]->object) & (cap - 1));
        while (slots[j]) j = (j + 1) & (cap - 1);
        slots[j] = i + 1;
    }
    free(f->by_key);
    f->by_key = slots;
    f->key_cap = cap;
    return 0;
}

kp_frec *kp_fetched_add(kp_fetched *f, const kp_entity *entity, cJSON *object)
{
    /* the same record read twice (two paths, two pages) is one record: found by its key; a
     * part of it (a copy of a few attributes in another row) adds what the first read lacked */
    if ((f->record_count + 1) * 2 > f->key_cap && rehash(f)) { cJSON_Delete(object); return NULL; }
    size_t j = (size_t)(key_hash(entity, object) & (f->key_cap - 1));
    for (; f->by_key[j]; j = (j + 1) & (f->key_cap - 1)) {
        kp_frec *r = f->records[f->by_key[j] - 1];
        if (r->entity == entity && same_key(entity, r->object, object)) {
            for (cJSON *a = object->child, *next; a; a = next) {
                next = a->next;
                if (!cJSON_GetObjectItemCaseSensitive(r->object, a->string))
                    cJSON_AddItemToObject(r->object, a->string, cJSON_DetachItemViaPointer(object, a));
            }
            cJSON_Delete(object);
            return r;
        }
    }
    kp_frec *r = malloc(sizeof *r);
    if (!r) { cJSON_Delete(object); return NULL; }
    r->entity = entity;
    r->object = object;
    if (push((void ***)&f->records, &f->record_count, &f->record_cap, r)) {
        cJSON_Delete(object);
        free(r);
        return NULL;
    }
    f->by_key[j] = f->record_count;
    return r;
}

size_t kp_fetched_record_count(const kp_fetched *f) { return f->record_count; }

int kp_fetched_add_root(kp_fetched *f, kp_frec *record)
{
    return push((void ***)&f->roots, &f->root_count, &f->root_cap, record);
}

static size_t hash_pair(const void *edge, const void *parent)
{
    uint64_t x = (uint64_t)(uintptr_t)edge * 0x9E3779B97F4A7C15ULL ^ (uint64_t)(uintptr_t)parent;
    x ^= x >> 31;
    x *= 0xBF58476D1CE4E5B9ULL;
    x ^= x >> 29;
    return (size_t)x;
}

static link_list *find_link(const kp_fetched *f, const void *edge, const kp_frec *parent)
{
    if (!f->link_cap) return NULL;
    size_t i = hash_pair(edge, parent) & (f->link_cap - 1);
    while (f->links[i].edge) {
        if (f->links[i].edge == edge && f->links[i].parent == parent) return &f->links[i];
        i = (i + 1) & (f->link_cap - 1);
    }
    return NULL;
}

static link_list *get_link(kp_fetched *f, const void *edge, const kp_frec *parent)
{
    link_list *l = find_link(f, edge, parent);
    if (l) return l;
    if ((f->link_used + 1) * 2 > f->link_cap) {
        size_t cap = f->link_cap ? f->link_cap * 2 : 64;
        link_list *bigger = calloc(cap, sizeof *bigger);
        if (!bigger) return NULL;
        for (size_t i = 0; i < f->link_cap; i++) {
            if (!f->links[i].edge) continue;
            size_t j = hash_pair(f->links[i].edge, f->links[i].parent) & (cap - 1);
            while (bigger[j].edge) j = (j + 1) & (cap - 1);
            bigger[j] = f->links[i];
        }
        free(f->links);
        f->links = bigger;
        f->link_cap = cap;
    }
    size_t i = hash_pair(edge, parent) & (f->link_cap - 1);
    while (f->links[i].edge) i = (i + 1) & (f->link_cap - 1);
    f->links[i].edge = edge;
    f->links[i].parent = parent;
    f->link_used++;
    return &f->links[i];
}

int kp_fetched_link(kp_fetched *f, const void *edge, const kp_frec *parent, kp_frec *child)
{
    link_list *l = get_link(f, edge, parent);
    if (!l) return -1;
    return push((void ***)&l->items, &l->count, &l->cap, child);
}

int kp_fetched_set_count(kp_fetched *f, const kp_shape *shape, const kp_frec *parent, long count)
{
    link_list *l = get_link(f, shape, parent);
    if (!l) return -1;
    l->count_value = count;
    l->has_count = 1;
    return 0;
}

void kp_fetched_client_order(kp_fetched *f, const kp_shape *shape)
{
    for (size_t i = 0; i < f->client_count; i++)
        if (f->client_ordered[i] == shape) return;
    push((void ***)&f->client_ordered, &f->client_count, &f->client_cap, (void *)shape);
}

kp_frec *const *kp_fetched_children(const kp_fetched *f, const void *edge, const kp_frec *parent, size_t *count)
{
    const link_list *l = find_link(f, edge, parent);
    *count = l ? l->count : 0;
    return l ? l->items : NULL;
}

/* ---- building the response --------------------------------------------------------------- */

typedef struct build {
    const kp_fetched *f;
    const kp_pattern *pattern;
    const kp_params *params;
    const char *token;
    kp_error *err;
    const kp_json_doc *doc;     /* the model's document: its literals compare by their source text */
} build;

static cJSON *nomem(build *b)
{
    kp_error_set(b->err, KP_ERR_NOMEM, NULL, 0, 0, "out of memory while assembling a response");
    return NULL;
}

static cJSON *encode(const kp_attr *attr, const cJSON *v)
{
    return kp_oracle_encode_value(attr, v && !cJSON_IsNull(v) ? v : NULL);
}

/* The record reached from rec over to-one hops, or NULL. */
static const kp_frec *hop(const build *b, const kp_frec *rec, kp_rel *const *path, size_t n)
{
    for (size_t i = 0; rec && i < n; i++) {
        size_t count;
        kp_frec *const *next = kp_fetched_children(b->f, path[i], rec, &count);
        rec = count ? next[0] : NULL;
    }
    return rec;
}

static cJSON *leaf(build *b, const kp_shape *s, const kp_frec *rec)
{
    if (s->kind == KP_SHAPE_PARAM) {
        const cJSON *v = kp_params_get(b->params, s->param->name);
        return v ? kp_data_copy(v, NULL) : cJSON_CreateNull();
    }
    if (s->kind == KP_SHAPE_TOKEN) {
        const char *t = b->token ? b->token : b->f->client_next;
        return t ? cJSON_CreateString(t) : cJSON_CreateNull();
    }
    if (!rec) return cJSON_CreateNull();
    if (s->path_len) {
        const kp_attr *copy = kp_copy_on(rec->entity, s->path, s->path_len, s->attr);
        if (copy) {
            /* the value comes from the denormalised copy, rendered as the source */
            return encode(s->attr, cJSON_GetObjectItemCaseSensitive(rec->object, copy->name));
        }
        const kp_frec *target = hop(b, rec, s->path, s->path_len);
        return encode(s->attr, target ? cJSON_GetObjectItemCaseSensitive(target->object, s->attr->name) : NULL);
    }
    return encode(s->attr, cJSON_GetObjectItemCaseSensitive(rec->object, s->attr->name));
}

static cJSON *shape_value(build *b, const kp_shape *s, const kp_frec *rec);

static cJSON *members(build *b, const kp_shape *s, const kp_frec *rec)
{
    cJSON **values = calloc(s->member_count ? s->member_count : 1, sizeof *values);
    if (!values) return nomem(b);
    int failed = 0;
    /* tokens last: the $each they continue decides them */
    for (int pass = 0; pass < 2 && !failed; pass++)
        for (size_t i = 0; i < s->member_count && !failed; i++) {
            if ((s->members[i]->kind == KP_SHAPE_TOKEN) != pass) continue;
            values[i] = shape_value(b, s->members[i], rec);
            if (!values[i]) failed = 1;
        }
    cJSON *out = failed ? NULL : cJSON_CreateObject();
    for (size_t i = 0; i < s->member_count; i++) {
        if (out && values[i]) cJSON_AddItemToObject(out, s->members[i]->name, values[i]);
        else cJSON_Delete(values[i]);
    }
    free(values);
    if (!out && !failed) return nomem(b);
    return out;
}

static int compare_order(const kp_shape *s, const kp_frec *a, const kp_frec *b)
{
    for (size_t k = 0; k < s->order_count; k++) {
        const kp_order_key *key = &s->order[k];
        const cJSON *x = cJSON_GetObjectItemCaseSensitive(a->object, key->attr->name);
        const cJSON *y = cJSON_GetObjectItemCaseSensitive(b->object, key->attr->name);
        int xn = !x || cJSON_IsNull(x), yn = !y || cJSON_IsNull(y);
        if (xn || yn) {
            if (xn && yn) continue;
            int first = key->is_nulls_first ? -1 : 1;
            return xn ? first : -first;
        }
        int c = kp_data_compare(key->attr->type.kind, x, y, NULL);
        if (c) return key->is_desc ? -c : c;
    }
    return 0;
}

static int by_order(const void *ctx, const kp_frec *a, const kp_frec *b) { return compare_order(ctx, a, b); }

/* By the shape's order, stably: a merge sort (a client-ordered list may be a whole partition
 * of thousands of rows, sorted again for every page), or, when its buffer cannot be had, an
 * insertion sort in place. */
static void sort_records(const kp_shape *s, kp_frec **items, size_t n)
{
    if (sort_frecs(by_order, s, items, n) == 0) return;
    for (size_t i = 1; i < n; i++) {
        kp_frec *x = items[i];
        size_t j = i;
        while (j > 0 && compare_order(s, x, items[j - 1]) < 0) {
            items[j] = items[j - 1];
            j--;
        }
        items[j] = x;
    }
}

static int is_client_ordered(const build *b, const kp_shape *s)
{
    for (size_t i = 0; i < b->f->client_count; i++)
        if (b->f->client_ordered[i] == s) return 1;
    return 0;
}

/* Does a condition through to-one relations hold on a record (hops as linked)? */
static int path_condition_holds(build *b, const kp_cond *c, const kp_frec *rec)
{
    const kp_frec *target = hop(b, rec, c->path, c->path_len);
    const cJSON *v = target ? cJSON_GetObjectItemCaseSensitive(target->object, c->attr->name) : NULL;
    const cJSON *x = c->value.param ? kp_params_get(b->params, c->value.param->name) : c->value.literal;
    if (!x) return 1; /* an optional parameter left out drops its condition */
    const cJSON *up = c->op == KP_OP_BETWEEN ? (c->upper.param ? kp_params_get(b->params, c->upper.param->name) : c->upper.literal) : NULL;
    return kp_cond_holds(c->op, c->attr->type.kind, v, x, up, b->doc);
}

static int64_t int_value(const build *b, const kp_param *param, int64_t fallback)
{
    const cJSON *v = param ? kp_params_get(b->params, param->name) : NULL;
    char buf[64];
    const char *t = v ? kp_data_number_text(v, NULL, buf, sizeof buf) : NULL;
    int64_t n = fallback;
    if (t && kp_int_parse(t, strlen(t), &n)) n = fallback;
    return n;
}

/* Strictly after the token's order-key values? */
static int past(const kp_shape *s, const kp_frec *r, const cJSON *after)
{
    const cJSON *t = after ? after->child : NULL;
    for (size_t k = 0; k < s->order_count; k++, t = t ? t->next : NULL) {
        const kp_order_key *key = &s->order[k];
        const cJSON *x = cJSON_GetObjectItemCaseSensitive(r->object, key->attr->name);
        int xn = !x || cJSON_IsNull(x), yn = !t || cJSON_IsNull(t);
        if (xn || yn) {
            if (xn && yn) continue;
            int first = key->is_nulls_first ? -1 : 1;
            return (xn ? first : -first) > 0;
        }
        int c = kp_data_compare(key->attr->type.kind, x, t, NULL);
        if (c) return (key->is_desc ? -c : c) > 0;
    }
    return 0;
}

/* One client-ordered page of items[0..n): sorted by the shape's order when it declares
 * one or is the pattern's paged $each, then those up to the token (`after`) and `skip` more
 * passed over; *start is the first of the page, the return its end (limit 0: no cut). The
 * assembler and a backend that reads more than the page (kp_fetched_page_cut) cut the same. */
/* Does the oracle give this $each in key order when it declares no order? A root set, and one
 * relation followed (the records it reaches, sorted by key), but not an array of references
 * (the array's order) nor a path of several hops (each hop's records in turn). */
static int is_key_ordered(const kp_shape *s)
{
    if (s->is_root_set) return 1;
    if (s->hop_count != 1) return 0;
    const kp_rel *r = s->hops[0];
    return !(r->relation->link == KP_LINK_ARRAY && !r->is_inverse);
}

static size_t page_window(const kp_shape *s, int is_paged, const cJSON *after, int64_t skip, int64_t limit,
                          kp_frec **items, size_t n, size_t *start)
{
    if (s->declared_order_count || is_paged || is_key_ordered(s)) sort_records(s, items, n);
    size_t first = 0;
    if (after)
        while (first < n && !past(s, items[first], after)) first++;
    if (skip > 0) first = (size_t)skip < n - first ? first + (size_t)skip : n;
    *start = first;
    return limit > 0 && n - first > (size_t)limit ? first + (size_t)limit : n;
}

size_t kp_fetched_page_cut(const kp_fetched *f, const kp_shape *s, int is_paged, int64_t skip, int64_t limit, kp_frec **recs,
                           size_t n)
{
    size_t start;
    size_t end = page_window(s, is_paged, is_paged ? f->client_after : NULL, skip, limit, recs, n, &start);
    memmove(recs, recs + start, (end - start) * sizeof *recs);
    return end - start;
}

static cJSON *each(build *b, const kp_shape *s, const kp_frec *rec)
{
    size_t n;
    kp_frec *const *linked;
    if (s->is_root_set) { linked = b->f->roots; n = b->f->root_count; }
    else linked = kp_fetched_children(b->f, s, rec, &n);
    kp_frec **items = malloc((n ? n : 1) * sizeof *items);
    if (!items) return nomem(b);
    if (n) memcpy(items, linked, n * sizeof *items);
    if (s->is_root_set && b->f->is_client_filtered) {
        size_t kept = 0;
        for (size_t i = 0; i < n; i++) {
            int ok = 1;
            for (size_t c = 0; c < b->pattern->where_count && ok; c++)
                if (b->pattern->where[c].path_len) ok = path_condition_holds(b, &b->pattern->where[c], items[i]);
            if (ok) items[kept++] = items[i];
        }
        n = kept;
    }
    size_t start = 0;
    if (is_client_ordered(b, s)) {
        int is_paged = s == b->pattern->paged, is_offset = is_paged && s->page == KP_PAGE_OFFSET;
        int64_t limit = s->limit_param ? int_value(b, s->limit_param, s->limit) : s->limit;
        size_t end = page_window(s, is_paged, is_paged && !is_offset ? b->f->client_after : NULL,
                                 is_offset ? int_value(b, s->offset_param, 0) : 0, limit, items, n, &start);
        if (s == b->pattern->paged && s->page == KP_PAGE_TOKEN && end < n && end > start) {
            /* the next page starts after the last element's order-key values */
            cJSON *values = cJSON_CreateArray();
            for (size_t k = 0; values && k < s->order_count; k++) {
                const cJSON *v = cJSON_GetObjectItemCaseSensitive(items[end - 1]->object, s->order[k].attr->name);
                cJSON_AddItemToArray(values, v ? kp_data_copy(v, NULL) : cJSON_CreateNull());
            }
            free(((kp_fetched *)b->f)->client_next);
            ((kp_fetched *)b->f)->client_next = values ? kp_oracle_token_encode(values) : NULL;
            cJSON_Delete(values);
        }
        memmove(items, items + start, (end - start) * sizeof *items);
        n = end - start;
    }
    cJSON *arr = cJSON_CreateArray();
    for (size_t i = 0; arr && i < n; i++) {
        cJSON *v = s->value ? leaf(b, s->value, items[i]) : members(b, s, items[i]);
        if (!v) { cJSON_Delete(arr); arr = NULL; break; }
        cJSON_AddItemToArray(arr, v);
    }
    free(items);
    return arr ? arr : (b->err->code ? NULL : nomem(b));
}

static cJSON *shape_value(build *b, const kp_shape *s, const kp_frec *rec)
{
    switch (s->kind) {
    case KP_SHAPE_OBJECT: return members(b, s, rec);
    case KP_SHAPE_ATTR: case KP_SHAPE_PARAM: case KP_SHAPE_TOKEN: return leaf(b, s, rec);
    case KP_SHAPE_EACH: return each(b, s, rec);
    case KP_SHAPE_ONE: {
        size_t n;
        kp_frec *const *linked = kp_fetched_children(b->f, s, rec, &n);
        if (!n) return cJSON_CreateNull();
        return members(b, s, linked[0]);
    }
    case KP_SHAPE_COUNT: {
        if (s->counted_by) { /* the listing beside it, read whole */
            size_t n;
            kp_fetched_children(b->f, s->counted_by, rec, &n);
            return kp_data_int((int64_t)n);
        }
        const link_list *l = find_link(b->f, s, rec);
        if (l && l->has_count) return kp_data_int(l->count_value);
        if (l) return kp_data_int((int64_t)l->count);
        /* a derived count on the record */
        for (size_t a = 0; rec && a < rec->entity->attr_count; a++) {
            const kp_derived *d = rec->entity->attrs[a]->derived;
            if (d && d->fn == KP_AGG_COUNT && d->path_len == s->hop_count &&
                memcmp(d->path, s->hops, sizeof *d->path * d->path_len) == 0) {
                const cJSON *v = cJSON_GetObjectItemCaseSensitive(rec->object, rec->entity->attrs[a]->name);
                return v ? kp_data_copy(v, NULL) : kp_data_int(0);
            }
        }
        return kp_data_int(0);
    }
    }
    return cJSON_CreateNull();
}

cJSON *kp_assemble(const kp_model *model, const kp_fetched *f, const kp_pattern *pattern, const kp_params *params,
                   const char *token, kp_error *err)
{
    kp_error_clear(err);
    build b = {f, pattern, params, token, err, model ? model->doc : NULL};
    if (pattern->is_root_set) return shape_value(&b, pattern->returns, NULL);
    if (f->root_count == 0) return cJSON_CreateNull();
    return shape_value(&b, pattern->returns, f->roots[0]);
}

cJSON *kp_wrong_type_value(const kp_attr *attr, const char *found)
{
    char text[600];
    snprintf(text, sizeof text, "<wrong type: %s.%s, declared %s, is %s>", attr->entity ? attr->entity->name : "?",
             attr->name, kp_type_name(attr->type.kind), found ? found : "?");
    return cJSON_CreateString(text);
}
