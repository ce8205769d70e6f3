/*
 * oracle.c — evaluates an access pattern over the neutral sample data.
 *
 * The oracle is the reference every backend is verified against, so it favours
 * obviously-correct code over fast code: find the root (one record or a set), then
 * walk the response shape — filter, follow relations, sort, page, limit — building
 * exactly the JSON the shape declares. The shortcuts: looking a single root up by key
 * or unique attribute (every condition is still tested on what is found), and, with a
 * kp_oracle_cache, keeping the roots and the paged $each's records between the pages of
 * one parameter set (the page token is then found by a binary search).
 * Invariant: the order of array elements in a result is the order the pattern
 * declares; where the pattern declares none, results are sorted by entity key (an
 * array of references keeps its own order) so that comparisons are deterministic.
 */
#include "core/oracle.h"

#include <stdlib.h>
#include <string.h>

#include "core/value.h"

typedef struct eval {
    const kp_dataset *ds;
    const kp_pattern *pattern;
    const kp_json_doc *doc;     /* the model's document: literals' exact text */
    kp_params *params;          /* resolved: defaults applied */
    cJSON *after;               /* decoded page token, or NULL */
    kp_record_list own_roots;   /* the root set (a single root: at most one record) ... */
    const kp_record_list *roots;/* ... or the cache's */
    char *token;                /* continuation of the last token-paged $each evaluated */
    kp_oracle_cache *cache;     /* what the pages of one parameter set share, or NULL */
    kp_error *err;
} eval;

struct kp_oracle_cache {
    const kp_pattern *pattern;  /* what the entries below were computed for */
    uint64_t generation;
    char *params;               /* the resolved parameters, compact JSON */
    int has_roots;
    kp_record_list roots;
    int has_paged;
    const kp_record *paged_parent; /* the record the paged $each was evaluated on */
    kp_record_list paged;       /* its records after $where, in its order */
};

kp_oracle_cache *kp_oracle_cache_new(void) { return calloc(1, sizeof(kp_oracle_cache)); }

static void cache_clear(kp_oracle_cache *c)
{
    free(c->params);
    kp_record_list_free(&c->roots);
    kp_record_list_free(&c->paged);
    memset(c, 0, sizeof *c);
}

void kp_oracle_cache_free(kp_oracle_cache *cache)
{
    if (!cache) return;
    cache_clear(cache);
    free(cache);
}

static int nomem(kp_error *err) { return kp_error_set(err, KP_ERR_NOMEM, NULL, 0, 0, "out of memory"); }

/* ---- base64url ---------------------------------------------------------------------- */

static const char b64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

static char *base64url_encode(const unsigned char *in, size_t n)
{
    char *out = malloc(n / 3 * 4 + 5);
    if (!out) return NULL;
    size_t o = 0, i = 0;
    for (; i + 2 < n; i += 3) {
        uint32_t v = (uint32_t)in[i] << 16 | (uint32_t)in[i + 1] << 8 | in[i + 2];
        out[o++] = b64[v >> 18 & 63]; out[o++] = b64[v >> 12 & 63];
        out[o++] = b64[v >> 6 & 63]; out[o++] = b64[v & 63];
    }
    if (n - i == 1) {
        uint32_t v = (uint32_t)in[i] << 16;
        out[o++] = b64[v >> 18 & 63]; out[o++] = b64[v >> 12 & 63];
    } else if (n - i == 2) {
        uint32_t v = (uint32_t)in[i] << 16 | (uint32_t)in[i + 1] << 8;
        out[o++] = b64[v >> 18 & 63]; out[o++] = b64[v >> 12 & 63]; out[o++] = b64[v >> 6 & 63];
    }
    out[o] = '\0';
    return out;
}

static int b64_value(char c)
{
    const char *p = c ? strchr(b64, c) : NULL;
    return p ? (int)(p - b64) : -1;
}

/* Returns a malloc'd NUL-terminated buffer, or NULL when the text is not base64url. */
static char *base64url_decode(const char *text, size_t *len)
{
    size_t n = strlen(text);
    if (n % 4 == 1) return NULL;
    char *out = malloc(n / 4 * 3 + 4);
    if (!out) return NULL;
    size_t o = 0;
    uint32_t acc = 0;
    int bits = 0;
    for (size_t i = 0; i < n; i++) {
        int v = b64_value(text[i]);
        if (v < 0) { free(out); return NULL; }
        acc = acc << 6 | (uint32_t)v;
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            out[o++] = (char)(acc >> bits & 0xFF);
        }
    }
    out[o] = '\0';
    *len = o;
    return out;
}

char *kp_oracle_token_encode(const cJSON *values)
{
    char *json = cJSON_PrintUnformatted(values);
    if (!json) return NULL;
    char *token = base64url_encode((const unsigned char *)json, strlen(json));
    free(json);
    return token;
}

int kp_oracle_token_decode(const char *token, cJSON **values, kp_error *err)
{
    *values = NULL;
    size_t len = 0;
    char *json = base64url_decode(token, &len);
    kp_json_doc *doc = NULL;
    kp_error ignored;
    if (!json || kp_json_parse("<token>", json, len, NULL, &doc, &ignored) || !cJSON_IsArray(kp_json_root(doc))) {
        free(json);
        kp_json_free(doc);
        return kp_error_set(err, KP_ERR_USAGE, NULL, 0, 0, "\"%.60s%s\" is not a page token; pass the token a previous "
                            "page returned", token, strlen(token) > 60 ? "..." : "");
    }
    free(json);
    *values = kp_data_copy(kp_json_root(doc), doc);
    kp_json_free(doc);
    return *values ? 0 : nomem(err);
}

/* ---- conditions --------------------------------------------------------------------- */

/* The operand's value; *dropped when it is an optional parameter left out. */
static const cJSON *operand(const eval *ev, const kp_operand *op, int *dropped)
{
    if (!op->param) return op->literal;
    const cJSON *v = kp_params_get(ev->params, op->param->name);
    if (!v) *dropped = 1;
    return v;
}

static int cond_holds(const eval *ev, const kp_record *rec, const kp_cond *cond)
{
    int dropped = 0;
    const cJSON *value = operand(ev, &cond->value, &dropped);
    const cJSON *upper = cond->op == KP_OP_BETWEEN ? operand(ev, &cond->upper, &dropped) : NULL;
    if (dropped) return 1;
    return kp_data_cond_test(ev->ds, rec, cond, value, upper);
}

static int conds_hold(const eval *ev, const kp_record *rec, const kp_cond *conds, size_t count)
{
    for (size_t i = 0; i < count; i++)
        if (!cond_holds(ev, rec, &conds[i])) return 0;
    return 1;
}

/* ---- sorting ------------------------------------------------------------------------ */

/* Compares two tuples of order-key values (NULL = null) by the shape's order. */
static int compare_tuples(const eval *ev, const kp_shape *shape, const cJSON *const *a, const cJSON *const *b)
{
    for (size_t k = 0; k < shape->order_count; k++) {
        const kp_order_key *key = &shape->order[k];
        const cJSON *x = a[k], *y = b[k];
        int x_null = !x || cJSON_IsNull(x), y_null = !y || cJSON_IsNull(y);
        if (x_null || y_null) {
            if (x_null && y_null) continue;
            int null_first = key->is_nulls_first ? -1 : 1;
            return x_null ? null_first : -null_first;
        }
        int c = kp_data_compare(key->attr->type.kind, x, y, ev->doc);
        if (c) return key->is_desc ? -c : c;
    }
    return 0;
}

enum { MAX_ORDER = 32 };

static size_t order_values(const kp_shape *shape, const kp_record *rec, const cJSON **out)
{
    size_t n = shape->order_count < MAX_ORDER ? shape->order_count : MAX_ORDER;
    for (size_t k = 0; k < n; k++) out[k] = kp_record_get(rec, shape->order[k].attr);
    return n;
}

/* Sorting decorates each record with its order-key values once (a record's values
 * are looked up n times, not n log n times). */
typedef struct keyed { kp_record *rec; const cJSON **values; } keyed;

static void merge_sort(const eval *ev, const kp_shape *shape, keyed *items, size_t n, keyed *tmp)
{
    if (n < 2) return;
    size_t half = n / 2;
    merge_sort(ev, shape, items, half, tmp);
    merge_sort(ev, shape, items + half, n - half, tmp);
    size_t i = 0, j = half, k = 0;
    while (i < half && j < n)
        tmp[k++] = compare_tuples(ev, shape, items[j].values, items[i].values) < 0 ? items[j++] : items[i++];
    while (i < half) tmp[k++] = items[i++];
    while (j < n) tmp[k++] = items[j++];
    memcpy(items, tmp, n * sizeof *items);
}

static int sort_records(const eval *ev, const kp_shape *shape, kp_record_list *list)
{
    if (list->count < 2) return 0;
    size_t width = shape->order_count < MAX_ORDER ? shape->order_count : MAX_ORDER;
    keyed *items = malloc(list->count * sizeof *items), *tmp = malloc(list->count * sizeof *tmp);
    const cJSON **values = malloc(list->count * (width ? width : 1) * sizeof *values);
    if (!items || !tmp || !values) { free(items); free(tmp); free(values); return nomem(ev->err); }
    for (size_t i = 0; i < list->count; i++) {
        items[i].rec = list->items[i];
        items[i].values = values + i * width;
        order_values(shape, list->items[i], items[i].values);
    }
    merge_sort(ev, shape, items, list->count, tmp);
    for (size_t i = 0; i < list->count; i++) list->items[i] = items[i].rec;
    free(items);
    free(tmp);
    free(values);
    return 0;
}

/* ---- values in responses ------------------------------------------------------------- */

cJSON *kp_oracle_encode_value(const kp_attr *attr, const cJSON *v)
{
    if (!v) return cJSON_CreateNull();
    if (attr->type.kind == KP_T_TIMESTAMP && attr->encoding != KP_ENC_ISO && cJSON_IsString(v)) {
        int64_t ms = 0;
        if (kp_timestamp_parse(v->valuestring, &ms) == 0) {
            if (attr->encoding == KP_ENC_EPOCH_MS) return kp_data_int(ms);
            int64_t s = ms >= 0 ? ms / 1000 : -((-ms + 999) / 1000);
            return kp_data_int(s);
        }
    }
    if (attr->type.kind == KP_T_OBJECT && cJSON_IsObject(v)) {
        cJSON *out = cJSON_CreateObject();
        for (const cJSON *m = v->child; out && m; m = m->next) {
            const kp_attr *field = NULL;
            for (size_t i = 0; i < attr->type.field_count; i++)
                if (strcmp(attr->type.fields[i]->name, m->string) == 0) field = attr->type.fields[i];
            cJSON *item = field ? kp_oracle_encode_value(field, m) : kp_data_copy(m, NULL);
            if (!item) { cJSON_Delete(out); return NULL; }
            cJSON_AddItemToObject(out, m->string, item);
        }
        return out;
    }
    return kp_data_copy(v, NULL);
}

static int64_t int_param(const eval *ev, const kp_param *param, int64_t fallback)
{
    const cJSON *v = param ? kp_params_get(ev->params, param->name) : NULL;
    char buf[64];
    const char *text = v ? kp_data_number_text(v, NULL, buf, sizeof buf) : NULL;
    int64_t n = fallback;
    if (text && kp_int_parse(text, strlen(text), &n)) n = fallback;
    return n;
}

/* ---- shapes --------------------------------------------------------------------------- */

static cJSON *eval_shape(eval *ev, const kp_shape *shape, const kp_record *rec);

/* The records a $each / $count ranges over, after $where, in path order. */
static int collect(eval *ev, const kp_shape *shape, const kp_record *rec, kp_record_list *out)
{
    kp_record_list all = {0};
    if (shape->is_root_set) {
        for (size_t i = 0; i < ev->roots->count; i++)
            if (kp_record_list_push(&all, ev->roots->items[i])) { kp_record_list_free(&all); return nomem(ev->err); }
    } else if (rec && kp_dataset_follow_path(ev->ds, rec, shape->hops, shape->hop_count, &all, ev->err)) {
        kp_record_list_free(&all);
        return -1;
    }
    for (size_t i = 0; i < all.count; i++)
        if (conds_hold(ev, all.items[i], shape->where, shape->where_count) && kp_record_list_push(out, all.items[i])) {
            kp_record_list_free(&all);
            return nomem(ev->err);
        }
    kp_record_list_free(&all);
    return 0;
}

static cJSON *eval_members(eval *ev, kp_shape *const *members, size_t count, const kp_record *rec)
{
    cJSON **values = calloc(count ? count : 1, sizeof *values);
    if (!values) { nomem(ev->err); return NULL; }
    int failed = 0;
    /* tokens last: the $each they continue must have been evaluated first */
    for (int pass = 0; pass < 2 && !failed; pass++)
        for (size_t i = 0; i < count && !failed; i++) {
            int is_token = members[i]->kind == KP_SHAPE_TOKEN;
            if (is_token != pass) continue;
            if (is_token) values[i] = ev->token ? cJSON_CreateString(ev->token) : cJSON_CreateNull();
            else values[i] = eval_shape(ev, members[i], rec);
            if (!values[i]) failed = 1;
        }
    cJSON *out = failed ? NULL : cJSON_CreateObject();
    for (size_t i = 0; i < count; i++) {
        if (out && values[i]) cJSON_AddItemToObject(out, members[i]->name, values[i]);
        else cJSON_Delete(values[i]);
    }
    free(values);
    if (!out && !failed) nomem(ev->err);
    return out;
}

static int past_token(const eval *ev, const kp_shape *shape, const kp_record *rec)
{
    const cJSON *x[MAX_ORDER], *y[MAX_ORDER];
    size_t n = order_values(shape, rec, x);
    const cJSON *t = ev->after->child;
    for (size_t k = 0; k < n; k++, t = t ? t->next : NULL) y[k] = t;
    return compare_tuples(ev, shape, x, y) > 0;
}

static char *token_of(const eval *ev, const kp_shape *shape, const kp_record *rec)
{
    cJSON *values = cJSON_CreateArray();
    for (size_t k = 0; values && k < shape->order_count; k++) {
        const cJSON *v = kp_record_get(rec, shape->order[k].attr);
        cJSON *item = v ? kp_data_copy(v, NULL) : cJSON_CreateNull();
        if (!item) { cJSON_Delete(values); return NULL; }
        cJSON_AddItemToArray(values, item);
    }
    char *token = values ? kp_oracle_token_encode(values) : NULL;
    cJSON_Delete(values);
    (void)ev;
    return token;
}

/* The first record strictly after the page token: a binary search where the records are
 * sorted by the shape's order, a scan otherwise. */
static size_t token_start(const eval *ev, const kp_shape *shape, const kp_record_list *list, int is_sorted)
{
    size_t lo = 0, hi = list->count;
    if (!is_sorted) {
        while (lo < hi && !past_token(ev, shape, list->items[lo])) lo++;
        return lo;
    }
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (past_token(ev, shape, list->items[mid])) hi = mid;
        else lo = mid + 1;
    }
    return lo;
}

static cJSON *eval_each(eval *ev, const kp_shape *shape, const kp_record *rec)
{
    int is_paged = shape == ev->pattern->paged;
    int is_sorted = shape->declared_order_count > 0 || shape->is_root_set;
    kp_oracle_cache *cache = is_paged ? ev->cache : NULL;
    kp_record_list own = {0};
    const kp_record_list *listp = &own;
    if (cache && cache->has_paged && cache->paged_parent == rec) {
        listp = &cache->paged; /* a later page of the same walk: the records are the same */
    } else {
        if (collect(ev, shape, rec, &own)) return NULL;
        if (is_sorted && sort_records(ev, shape, &own)) {
            kp_record_list_free(&own);
            return NULL;
        }
        if (cache) {
            kp_record_list_free(&cache->paged);
            cache->paged = own;
            cache->paged_parent = rec;
            cache->has_paged = 1;
            memset(&own, 0, sizeof own);
            listp = &cache->paged;
        }
    }
    const kp_record_list list = *listp;
    size_t start = 0;
    if (is_paged && shape->page == KP_PAGE_TOKEN && ev->after) start = token_start(ev, shape, &list, is_sorted);
    if (shape->page == KP_PAGE_OFFSET) {
        int64_t offset = int_param(ev, shape->offset_param, 0);
        if (offset < 0) offset = 0;
        start = (uint64_t)offset > list.count ? list.count : (size_t)offset;
    }
    size_t end = list.count;
    int64_t limit = shape->limit_param ? int_param(ev, shape->limit_param, shape->limit) : shape->limit;
    if (limit > 0 && (uint64_t)limit < end - start) end = start + (size_t)limit;
    if (is_paged && shape->page == KP_PAGE_TOKEN) {
        free(ev->token);
        ev->token = NULL;
        if (end < list.count && end > start && !(ev->token = token_of(ev, shape, list.items[end - 1]))) {
            kp_record_list_free(&own);
            nomem(ev->err);
            return NULL;
        }
    }
    cJSON *array = cJSON_CreateArray();
    for (size_t i = start; array && i < end; i++) {
        cJSON *item = shape->value ? eval_shape(ev, shape->value, list.items[i])
                                   : eval_members(ev, shape->members, shape->member_count, list.items[i]);
        if (!item) { cJSON_Delete(array); array = NULL; break; }
        cJSON_AddItemToArray(array, item);
    }
    kp_record_list_free(&own);
    return array;
}

static cJSON *eval_shape(eval *ev, const kp_shape *shape, const kp_record *rec)
{
    switch (shape->kind) {
    case KP_SHAPE_OBJECT:
        return eval_members(ev, shape->members, shape->member_count, rec);
    case KP_SHAPE_ATTR: {
        const kp_record *at = rec && shape->path_len ? kp_dataset_follow_one(ev->ds, rec, shape->path, shape->path_len)
                                                     : rec;
        return kp_oracle_encode_value(shape->attr, at ? kp_record_get(at, shape->attr) : NULL);
    }
    case KP_SHAPE_PARAM: {
        const cJSON *v = kp_params_get(ev->params, shape->param->name);
        return v ? kp_data_copy(v, NULL) : cJSON_CreateNull();
    }
    case KP_SHAPE_EACH:
        return eval_each(ev, shape, rec);
    case KP_SHAPE_ONE: {
        const kp_record *at = rec ? kp_dataset_follow_one(ev->ds, rec, shape->hops, shape->hop_count) : NULL;
        if (at && !conds_hold(ev, at, shape->where, shape->where_count)) at = NULL;
        if (!at) return cJSON_CreateNull();
        return eval_members(ev, shape->members, shape->member_count, at);
    }
    case KP_SHAPE_COUNT: {
        kp_record_list list = {0};
        if (collect(ev, shape, rec, &list)) return NULL;
        cJSON *n = kp_data_int((int64_t)list.count);
        kp_record_list_free(&list);
        return n;
    }
    case KP_SHAPE_TOKEN:
        return ev->token ? cJSON_CreateString(ev->token) : cJSON_CreateNull();
    }
    return cJSON_CreateNull();
}

/* ---- the root ------------------------------------------------------------------------ */

/* A record found through the key index or a unique attribute when the where pins it
 * with "=" (every condition is still tested afterwards); NULL when there is no such
 * shortcut (*used = 0) or no such record (*used = 1). */
static kp_record *lookup_root(const eval *ev, int *used)
{
    const kp_pattern *p = ev->pattern;
    const kp_entity *root = p->root;
    *used = 0;
    const cJSON *key[16] = {0};
    size_t pinned = 0;
    for (size_t i = 0; i < p->where_count; i++) {
        const kp_cond *c = &p->where[i];
        if (c->op != KP_OP_EQ || c->path_len) continue;
        int dropped = 0;
        const cJSON *v = operand(ev, &c->value, &dropped);
        if (dropped || !v) continue;
        if (c->attr->is_unique && c->attr->key_index < 0) {
            *used = 1;
            return kp_dataset_find_unique(ev->ds, c->attr, v);
        }
        if (c->attr->key_index >= 0 && c->attr->key_index < 16 && !key[c->attr->key_index]) {
            key[c->attr->key_index] = v;
            pinned++;
        }
    }
    if (pinned == root->key_count && root->key_count <= 16) {
        *used = 1;
        return kp_dataset_find(ev->ds, root, key);
    }
    return NULL;
}

static int find_roots(eval *ev)
{
    const kp_pattern *p = ev->pattern;
    ev->roots = &ev->own_roots;
    if (!p->is_root_set) {
        int used = 0;
        kp_record *r = lookup_root(ev, &used);
        if (used) {
            if (r && conds_hold(ev, r, p->where, p->where_count) && kp_record_list_push(&ev->own_roots, r))
                return nomem(ev->err);
            return 0;
        }
    }
    size_t n = 0;
    kp_record *const *all = kp_dataset_records(ev->ds, p->root, &n);
    kp_record_list matched = {0};
    for (size_t i = 0; i < n; i++)
        if (conds_hold(ev, all[i], p->where, p->where_count) && kp_record_list_push(&matched, all[i])) {
            kp_record_list_free(&matched);
            return nomem(ev->err);
        }
    /* no sort here: a $each over the root set sorts by its order, which ends with the key */
    ev->own_roots = matched;
    return 0;
}

/* ---- entry points -------------------------------------------------------------------- */

static int check_token(const eval *ev, kp_error *err)
{
    const kp_shape *paged = ev->pattern->paged;
    if (!paged || paged->page != KP_PAGE_TOKEN)
        return kp_error_set(err, KP_ERR_USAGE, NULL, 0, 0, "pattern '%s' does not page with a token; drop the page "
                            "token", ev->pattern->name);
    size_t n = (size_t)cJSON_GetArraySize(ev->after);
    if (n != paged->order_count)
        return kp_error_set(err, KP_ERR_USAGE, NULL, 0, 0, "the page token holds %zu values, but a token of pattern "
                            "'%s' holds %zu; pass a token this pattern returned", n, ev->pattern->name,
                            paged->order_count);
    size_t k = 0;
    for (const cJSON *v = ev->after->child; v; v = v->next, k++) {
        if (cJSON_IsNull(v)) continue;
        char why[300];
        const cJSON *bad;
        if (kp_value_check(&paged->order[k].attr->type, v, NULL, &bad, why, sizeof why))
            return kp_error_set(err, KP_ERR_USAGE, NULL, 0, 0, "the page token's value for %s does not fit: %s; pass "
                                "a token this pattern returned", paged->order[k].attr->name, why);
    }
    return 0;
}

/* Makes the cache hold what this pattern, these parameters and this state of the data
 * share (clearing it when any differs). -1 when out of memory. */
static int cache_check(eval *ev, kp_oracle_cache *c)
{
    cJSON *json = kp_params_to_json(ev->params);
    char *text = json ? cJSON_PrintUnformatted(json) : NULL;
    cJSON_Delete(json);
    if (!text) return nomem(ev->err);
    uint64_t generation = kp_dataset_generation(ev->ds);
    if (c->pattern != ev->pattern || c->generation != generation || !c->params || strcmp(c->params, text) != 0) {
        cache_clear(c);
        c->pattern = ev->pattern;
        c->generation = generation;
        c->params = text;
    } else {
        free(text);
    }
    ev->cache = c;
    return 0;
}

int kp_oracle_run(const kp_dataset *data, const kp_pattern *pattern, const kp_params *params,
                  const char *page_token, kp_oracle_result *out, kp_error *err)
{
    return kp_oracle_run_cached(data, pattern, params, page_token, NULL, out, err);
}

int kp_oracle_run_cached(const kp_dataset *data, const kp_pattern *pattern, const kp_params *params,
                         const char *page_token, kp_oracle_cache *cache, kp_oracle_result *out, kp_error *err)
{
    memset(out, 0, sizeof *out);
    eval ev;
    memset(&ev, 0, sizeof ev);
    ev.ds = data;
    ev.pattern = pattern;
    ev.doc = kp_dataset_model(data)->doc;
    ev.err = err;
    char owner[300];
    snprintf(owner, sizeof owner, "pattern '%s'", pattern->name);
    if (kp_params_resolve(pattern->params, pattern->param_count, params, ev.doc, owner, &ev.params, err)) return -1;
    int rc = 0;
    if (page_token && *page_token) {
        rc = kp_oracle_token_decode(page_token, &ev.after, err);
        if (rc == 0) rc = check_token(&ev, err);
    }
    if (rc == 0 && cache) rc = cache_check(&ev, cache);
    if (rc == 0 && cache && cache->has_roots) {
        ev.roots = &cache->roots;
    } else if (rc == 0) {
        rc = find_roots(&ev);
        if (rc == 0 && cache) {
            cache->roots = ev.own_roots;
            cache->has_roots = 1;
            memset(&ev.own_roots, 0, sizeof ev.own_roots);
            ev.roots = &cache->roots;
        }
    }
    if (rc == 0) {
        if (!pattern->is_root_set && ev.roots->count == 0) {
            out->response = cJSON_CreateNull();
        } else {
            const kp_record *root = pattern->is_root_set ? NULL : ev.roots->items[0];
            out->response = eval_shape(&ev, pattern->returns, root);
        }
        if (!out->response) rc = -1;
    }
    out->is_paged = pattern->paged && pattern->paged->page == KP_PAGE_TOKEN;
    out->is_token_in_response = out->is_paged && pattern->paged->token != NULL;
    if (rc == 0) {
        out->next_token = ev.token;
        ev.token = NULL;
    }
    free(ev.token);
    cJSON_Delete(ev.after);
    kp_record_list_free(&ev.own_roots);
    kp_params_free(ev.params);
    return rc;
}

void kp_oracle_result_free(kp_oracle_result *result)
{
    if (!result) return;
    cJSON_Delete(result->response);
    free(result->next_token);
    memset(result, 0, sizeof *result);
}

cJSON *kp_oracle_eval(const kp_dataset *data, const kp_pattern *pattern, const kp_params *params, kp_error *err)
{
    kp_oracle_result result;
    if (kp_oracle_run(data, pattern, params, NULL, &result, err)) return NULL;
    cJSON *response = result.response;
    result.response = NULL;
    kp_oracle_result_free(&result);
    return response;
}
