/*
 * data.c — loading, validating, indexing and changing the neutral sample data.
 *
 * A dataset is a table of records per entity plus hash indexes. An index maps the
 * normalised text of some attributes' values (see value_text) to the records that
 * carry them; the key index, every unique attribute, every foreign key (holder side
 * and referenced side), both sides of every join entity and the elements of every
 * reference array have one. The loader stops at the first problem and reports it
 * with the file, line and column of the offending value (records checked after the
 * whole directory is read — references, copies, derived values — are located again
 * by re-reading their line).
 *
 * Invariant: every live record is in its table and in every index of its entity
 * under the texts of its current `object`, and in no other; an object is never
 * edited in place (kp_dataset_replace swaps it, un-indexing the old one first).
 */
#include "core/data.h"

#include <dirent.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/value.h"

/* ---- small helpers ------------------------------------------------------------- */

typedef struct strbuf { char *p; size_t len, cap; int failed; } strbuf;

static void sb_add(strbuf *b, const char *s, size_t n)
{
    if (b->failed) return;
    if (b->len + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 64;
        while (cap < b->len + n + 1) cap *= 2;
        char *p = realloc(b->p, cap);
        if (!p) { b->failed = 1; return; }
        b->p = p;
        b->cap = cap;
    }
    memcpy(b->p + b->len, s, n);
    b->len += n;
    b->p[b->len] = '\0';
}

static void sb_str(strbuf *b, const char *s) { sb_add(b, s, strlen(s)); }

static void sb_free(strbuf *b) { free(b->p); b->p = NULL; b->len = b->cap = 0; }

int kp_record_list_push(kp_record_list *list, kp_record *record)
{
    if (list->count == list->cap) {
        size_t cap = list->cap ? list->cap * 2 : 8;
        kp_record **items = realloc(list->items, cap * sizeof *items);
        if (!items) return -1;
        list->items = items;
        list->cap = cap;
    }
    list->items[list->count++] = record;
    return 0;
}

void kp_record_list_free(kp_record_list *list)
{
    free(list->items);
    list->items = NULL;
    list->count = list->cap = 0;
}

static int nomem(kp_error *err) { return kp_error_set(err, KP_ERR_NOMEM, NULL, 0, 0, "out of memory"); }

static const kp_attr *entity_attr(const kp_entity *entity, const char *name)
{
    for (size_t i = 0; i < entity->attr_count; i++)
        if (strcmp(entity->attrs[i]->name, name) == 0) return entity->attrs[i];
    return NULL;
}

static int is_computed(const kp_attr *attr) { return attr->copy_of != NULL || attr->derived != NULL; }

static int is_number_node(const cJSON *v) { return cJSON_IsNumber(v) || cJSON_IsRaw(v); }

/* ---- canonical values -------------------------------------------------------- */

const char *kp_data_number_text(const cJSON *node, const kp_json_doc *doc, char *buf, size_t size)
{
    if (!is_number_node(node)) return NULL;
    size_t len = 0;
    const char *text = kp_number_text(node, doc, buf, size, &len);
    if (text != buf) {
        if (len >= size) len = size - 1;
        memmove(buf, text, len);
        buf[len] = '\0';
    }
    return buf;
}

cJSON *kp_data_number(const char *text) { return cJSON_CreateRaw(text); }

cJSON *kp_data_int(int64_t value)
{
    char buf[32];
    snprintf(buf, sizeof buf, "%lld", (long long)value);
    return cJSON_CreateRaw(buf);
}

int kp_data_rawify(cJSON *value, const kp_json_doc *doc)
{
    for (cJSON *c = value ? value->child : NULL; c; c = c->next)
        if (kp_data_rawify(c, doc)) return -1;
    if (value && cJSON_IsNumber(value)) {
        char buf[400];
        const char *text = kp_data_number_text(value, doc, buf, sizeof buf);
        char *copy = strdup(text);
        if (!copy) return -1;
        value->type = cJSON_Raw | (value->type & cJSON_StringIsConst);
        value->valuestring = copy;
    }
    return 0;
}

cJSON *kp_data_copy(const cJSON *value, const kp_json_doc *doc)
{
    if (!value) return NULL;
    cJSON *copy = NULL;
    if (is_number_node(value)) {
        char buf[400];
        copy = cJSON_CreateRaw(kp_data_number_text(value, doc, buf, sizeof buf));
    } else if (cJSON_IsString(value)) {
        copy = cJSON_CreateString(value->valuestring);
    } else if (cJSON_IsBool(value)) {
        copy = cJSON_CreateBool(cJSON_IsTrue(value));
    } else if (cJSON_IsNull(value)) {
        copy = cJSON_CreateNull();
    } else if (cJSON_IsArray(value) || cJSON_IsObject(value)) {
        copy = cJSON_IsArray(value) ? cJSON_CreateArray() : cJSON_CreateObject();
        for (const cJSON *c = value->child; copy && c; c = c->next) {
            cJSON *item = kp_data_copy(c, doc);
            if (!item) { cJSON_Delete(copy); return NULL; }
            if (cJSON_IsArray(value)) cJSON_AddItemToArray(copy, item);
            else cJSON_AddItemToObject(copy, c->string, item);
        }
    }
    return copy;
}

static int compare_numbers(const cJSON *a, const cJSON *b, const kp_json_doc *doc)
{
    char ab[400], bb[400];
    const char *at = kp_data_number_text(a, doc, ab, sizeof ab);
    const char *bt = kp_data_number_text(b, doc, bb, sizeof bb);
    if (kp_decimal_check(at, strlen(at)) == 0 && kp_decimal_check(bt, strlen(bt)) == 0)
        return kp_decimal_compare(at, strlen(at), bt, strlen(bt));
    double x = strtod(at, NULL), y = strtod(bt, NULL);
    return x < y ? -1 : x > y;
}

static int compare_json_text(const cJSON *a, const cJSON *b)
{
    char *x = cJSON_PrintUnformatted(a), *y = cJSON_PrintUnformatted(b);
    int c = strcmp(x ? x : "", y ? y : "");
    free(x);
    free(y);
    return c;
}

int kp_data_compare(kp_type_kind kind, const cJSON *a, const cJSON *b, const kp_json_doc *doc)
{
    (void)kind;
    /* the JSON form decides: canonical values of one kind all have the same form */
    if (is_number_node(a) && is_number_node(b)) return compare_numbers(a, b, doc);
    if (cJSON_IsString(a) && cJSON_IsString(b)) {
        int c = strcmp(a->valuestring, b->valuestring);
        return c < 0 ? -1 : c > 0;
    }
    if (cJSON_IsBool(a) && cJSON_IsBool(b)) return cJSON_IsTrue(a) - cJSON_IsTrue(b);
    return compare_json_text(a, b);
}

int kp_data_equal(const cJSON *a, const cJSON *b, const kp_json_doc *doc)
{
    if (!a || !b) return !a && !b;
    if (cJSON_IsNull(a) || cJSON_IsNull(b)) return cJSON_IsNull(a) && cJSON_IsNull(b);
    if (is_number_node(a) && is_number_node(b)) return compare_numbers(a, b, doc) == 0;
    if (cJSON_IsString(a) && cJSON_IsString(b)) return strcmp(a->valuestring, b->valuestring) == 0;
    if (cJSON_IsBool(a) && cJSON_IsBool(b)) return cJSON_IsTrue(a) == cJSON_IsTrue(b);
    if (cJSON_IsArray(a) && cJSON_IsArray(b)) {
        const cJSON *x = a->child, *y = b->child;
        for (; x && y; x = x->next, y = y->next)
            if (!kp_data_equal(x, y, doc)) return 0;
        return !x && !y;
    }
    if (cJSON_IsObject(a) && cJSON_IsObject(b)) {
        size_t na = 0, nb = 0;
        for (const cJSON *x = a->child; x; x = x->next) {
            na++;
            if (!kp_data_equal(x, cJSON_GetObjectItemCaseSensitive(b, x->string), doc)) return 0;
        }
        for (const cJSON *y = b->child; y; y = y->next) nb++;
        return na == nb;
    }
    return 0;
}

/* Splits an exact number text into sign, integer digits and fraction digits. */
typedef struct decimal { int negative; char *digits; size_t int_len, frac_len; } decimal;

static int decimal_parse(const char *text, decimal *d)
{
    size_t n = strlen(text);
    if (kp_decimal_check(text, n)) return -1;
    d->negative = text[0] == '-';
    const char *s = text + d->negative;
    const char *dot = strchr(s, '.');
    d->int_len = dot ? (size_t)(dot - s) : strlen(s);
    d->frac_len = dot ? strlen(dot + 1) : 0;
    d->digits = malloc(d->int_len + d->frac_len + 1);
    if (!d->digits) return -1;
    memcpy(d->digits, s, d->int_len);
    if (dot) memcpy(d->digits + d->int_len, dot + 1, d->frac_len);
    d->digits[d->int_len + d->frac_len] = '\0';
    return 0;
}

/* Digits of |x| aligned to `frac` fraction digits and `width` total digits. */
static char *align_digits(const decimal *x, size_t width, size_t frac)
{
    char *out = malloc(width + 1);
    if (!out) return NULL;
    memset(out, '0', width);
    out[width] = '\0';
    size_t int_width = width - frac;
    memcpy(out + (int_width - x->int_len), x->digits, x->int_len);
    memcpy(out + int_width, x->digits + x->int_len, x->frac_len);
    return out;
}

static char *decimal_combine(const char *a, const char *b, int subtract)
{
    decimal x = {0}, y = {0};
    if (decimal_parse(a, &x) || decimal_parse(b, &y)) { free(x.digits); free(y.digits); return NULL; }
    if (subtract) y.negative = !y.negative;
    size_t frac = x.frac_len > y.frac_len ? x.frac_len : y.frac_len;
    size_t ints = x.int_len > y.int_len ? x.int_len : y.int_len;
    size_t width = ints + frac + 1; /* one digit of headroom for a carry */
    char *p = align_digits(&x, width, frac), *q = align_digits(&y, width, frac);
    char *r = malloc(width + 1);
    char *out = malloc(width + 4);
    if (!p || !q || !r || !out) { free(p); free(q); free(r); free(out); free(x.digits); free(y.digits); return NULL; }
    r[width] = '\0';
    int negative;
    if (x.negative == y.negative) {
        int carry = 0;
        for (size_t i = width; i-- > 0;) {
            int s = (p[i] - '0') + (q[i] - '0') + carry;
            r[i] = (char)('0' + s % 10);
            carry = s / 10;
        }
        negative = x.negative;
    } else {
        int cmp = memcmp(p, q, width);
        const char *big = cmp >= 0 ? p : q, *small = cmp >= 0 ? q : p;
        negative = cmp >= 0 ? x.negative : y.negative;
        int borrow = 0;
        for (size_t i = width; i-- > 0;) {
            int s = (big[i] - '0') - (small[i] - '0') - borrow;
            borrow = s < 0;
            if (s < 0) s += 10;
            r[i] = (char)('0' + s);
        }
    }
    /* write: sign, integer digits without leading zeros, fraction */
    size_t int_width = width - frac, start = 0;
    while (start + 1 < int_width && r[start] == '0') start++;
    int is_zero = 1;
    for (size_t i = 0; i < width; i++)
        if (r[i] != '0') is_zero = 0;
    size_t o = 0;
    if (negative && !is_zero) out[o++] = '-';
    memcpy(out + o, r + start, int_width - start);
    o += int_width - start;
    if (frac) {
        out[o++] = '.';
        memcpy(out + o, r + int_width, frac);
        o += frac;
    }
    out[o] = '\0';
    free(p); free(q); free(r); free(x.digits); free(y.digits);
    return out;
}

char *kp_decimal_add(const char *a, const char *b) { return decimal_combine(a, b, 0); }
char *kp_decimal_sub(const char *a, const char *b) { return decimal_combine(a, b, 1); }

/* The shortest text that reads back as the same double. */
static void format_double(double v, char *buf, size_t size)
{
    for (int precision = 1; precision <= 17; precision++) {
        snprintf(buf, size, "%.*g", precision, v);
        if (strtod(buf, NULL) == v) return;
    }
}

/* Normalised text of one value for an index: equal values give equal texts. Each
 * part is length-prefixed so that concatenations cannot collide. */
static int value_text(strbuf *b, const cJSON *v)
{
    char head[48];
    if (!v || cJSON_IsNull(v)) return -1;
    if (cJSON_IsString(v)) {
        kp_snprintf(head, sizeof head, "s%zu:", strlen(v->valuestring));
        sb_str(b, head);
        sb_str(b, v->valuestring);
    } else if (is_number_node(v)) {
        char buf[400], norm[400];
        const char *t = kp_data_number_text(v, NULL, buf, sizeof buf);
        size_t n = strlen(t);
        if (kp_decimal_check(t, n) == 0) {
            /* strip trailing fraction zeros, and the sign of zero */
            snprintf(norm, sizeof norm, "%s", t);
            char *dot = strchr(norm, '.');
            if (dot) {
                char *end = norm + strlen(norm);
                while (end > dot + 1 && end[-1] == '0') *--end = '\0';
                if (end == dot + 1) *dot = '\0';
            }
            if (strcmp(norm, "-0") == 0) snprintf(norm, sizeof norm, "0");
        } else {
            snprintf(norm, sizeof norm, "%.17g", strtod(t, NULL));
        }
        kp_snprintf(head, sizeof head, "n%zu:", strlen(norm));
        sb_str(b, head);
        sb_str(b, norm);
    } else if (cJSON_IsBool(v)) {
        sb_str(b, cJSON_IsTrue(v) ? "b1:1" : "b1:0");
    } else {
        char *json = cJSON_PrintUnformatted(v);
        if (!json) { b->failed = 1; return -1; }
        snprintf(head, sizeof head, "j%zu:", strlen(json));
        sb_str(b, head);
        sb_str(b, json);
        free(json);
    }
    return b->failed ? -1 : 0;
}

static const cJSON *object_get(const cJSON *object, const char *name)
{
    return object ? cJSON_GetObjectItemCaseSensitive(object, name) : NULL;
}

/* Text of a tuple of attribute values of an object; -1 when one is absent. */
static int tuple_text(strbuf *b, const cJSON *object, const kp_attr *const *attrs, size_t count)
{
    b->len = 0;
    if (b->p) b->p[0] = '\0';
    for (size_t i = 0; i < count; i++)
        if (value_text(b, object_get(object, attrs[i]->name))) return -1;
    return b->failed ? -1 : 0;
}

static int values_text(strbuf *b, const cJSON *const *values, size_t count)
{
    b->len = 0;
    if (b->p) b->p[0] = '\0';
    for (size_t i = 0; i < count; i++)
        if (value_text(b, values[i])) return -1;
    return b->failed ? -1 : 0;
}

/* ---- indexes ---------------------------------------------------------------------- */

typedef struct index_entry {
    struct index_entry *next;
    uint64_t hash;
    char *text;
    size_t len;
    kp_record **items;          /* arena-grown */
    size_t count, cap;
    int is_by_key;              /* items are in key order (entry_by_key); index_put clears it */
} index_entry;

typedef struct data_index {
    const kp_entity *entity;
    const kp_attr **attrs;
    size_t attr_count;
    int is_array;               /* attrs[0] is an array: one entry per distinct element */
    index_entry **buckets;
    size_t bucket_count, entry_count;
} data_index;

typedef struct table {
    const kp_entity *entity;
    kp_record **records;        /* malloc'd, live records in insertion order */
    size_t count, cap;
    data_index *key;
    data_index **unique;        /* per attribute (entity->attr_count), NULL unless unique */
    data_index **all;           /* every index over this entity's records */
    size_t all_count, all_cap;
    char *file;                 /* the data file (or the name given to add_ndjson) */
    char *text;                 /* in-memory source, when loaded from text */
    size_t text_len;
    int is_loaded;
} table;

typedef struct rel_indexes {
    data_index *holder_fk;      /* KP_LINK_FOREIGN_KEY: holder over fk_attrs */
    data_index *referenced;     /* ... referenced over ref_attrs (often the key index) */
    data_index *through_from;   /* KP_LINK_THROUGH: join entity over through_from */
    data_index *through_to;     /* ... over through_to */
    data_index *array_reverse;  /* KP_LINK_ARRAY: `from` over the array's elements */
} rel_indexes;

struct kp_dataset {
    const kp_model *model;
    kp_arena arena;
    table *tables;
    rel_indexes *rels;
    uint64_t next_serial;
    uint64_t generation;
};

static uint64_t hash_text(const char *s, size_t n)
{
    uint64_t h = 1469598103934665603ULL;
    for (size_t i = 0; i < n; i++) { h ^= (unsigned char)s[i]; h *= 1099511628211ULL; }
    return h;
}

static data_index *index_new(kp_dataset *ds, table *t, const kp_attr *const *attrs, size_t count, int is_array)
{
    data_index *idx = kp_arena_alloc(&ds->arena, sizeof *idx);
    if (!idx) return NULL;
    idx->entity = t->entity;
    idx->attrs = kp_arena_alloc(&ds->arena, (count ? count : 1) * sizeof *idx->attrs);
    idx->bucket_count = 64;
    idx->buckets = kp_arena_alloc(&ds->arena, idx->bucket_count * sizeof *idx->buckets);
    if (!idx->attrs || !idx->buckets) return NULL;
    for (size_t i = 0; i < count; i++) idx->attrs[i] = attrs[i];
    idx->attr_count = count;
    idx->is_array = is_array;
    if (!kp_arena_push(&ds->arena, (void **)&t->all, &t->all_count, &t->all_cap, sizeof *t->all)) return NULL;
    t->all[t->all_count - 1] = idx;
    return idx;
}

static index_entry *index_find(const data_index *idx, const char *text, size_t len)
{
    uint64_t h = hash_text(text, len);
    for (index_entry *e = idx->buckets[h & (idx->bucket_count - 1)]; e; e = e->next)
        if (e->hash == h && e->len == len && memcmp(e->text, text, len) == 0) return e;
    return NULL;
}

static int index_grow(kp_dataset *ds, data_index *idx)
{
    size_t count = idx->bucket_count * 2;
    index_entry **buckets = kp_arena_alloc(&ds->arena, count * sizeof *buckets);
    if (!buckets) return -1;
    for (size_t i = 0; i < idx->bucket_count; i++) {
        index_entry *e = idx->buckets[i];
        while (e) {
            index_entry *next = e->next;
            e->next = buckets[e->hash & (count - 1)];
            buckets[e->hash & (count - 1)] = e;
            e = next;
        }
    }
    idx->buckets = buckets;
    idx->bucket_count = count;
    return 0;
}

static int index_put(kp_dataset *ds, data_index *idx, const char *text, size_t len, kp_record *rec)
{
    index_entry *e = index_find(idx, text, len);
    if (!e) {
        if (idx->entry_count * 4 >= idx->bucket_count * 3 && index_grow(ds, idx)) return -1;
        e = kp_arena_alloc(&ds->arena, sizeof *e);
        if (!e) return -1;
        e->hash = hash_text(text, len);
        e->text = kp_arena_strndup(&ds->arena, text, len);
        e->len = len;
        if (!e->text) return -1;
        size_t b = e->hash & (idx->bucket_count - 1);
        e->next = idx->buckets[b];
        idx->buckets[b] = e;
        idx->entry_count++;
    }
    if (e->count && e->items[e->count - 1] == rec) return 0; /* an array holding one key twice */
    kp_record **slot = kp_arena_push(&ds->arena, (void **)&e->items, &e->count, &e->cap, sizeof *e->items);
    if (!slot) return -1;
    *slot = rec;
    e->is_by_key = e->count == 1;
    return 0;
}

static void index_drop(data_index *idx, const char *text, size_t len, const kp_record *rec)
{
    index_entry *e = index_find(idx, text, len);
    if (!e) return;
    size_t o = 0;
    for (size_t i = 0; i < e->count; i++)
        if (e->items[i] != rec) e->items[o++] = e->items[i];
    e->count = o;
}

/* Calls fn for every text under which `object` belongs in idx. */
static int index_texts(const data_index *idx, const cJSON *object,
                       int (*fn)(void *ctx, const char *text, size_t len), void *ctx)
{
    strbuf b = {0};
    int rc = 0;
    if (idx->is_array) {
        const cJSON *array = object_get(object, idx->attrs[0]->name);
        for (const cJSON *el = cJSON_IsArray(array) ? array->child : NULL; el && rc == 0; el = el->next) {
            b.len = 0;
            if (value_text(&b, el) == 0) rc = fn(ctx, b.p, b.len);
            else if (b.failed) rc = -1;
        }
    } else if (tuple_text(&b, object, idx->attrs, idx->attr_count) == 0) {
        rc = fn(ctx, b.p, b.len);
    } else if (b.failed) {
        rc = -1;
    }
    sb_free(&b);
    return rc;
}

typedef struct index_op { kp_dataset *ds; data_index *idx; kp_record *rec; } index_op;

static int put_cb(void *ctx, const char *text, size_t len)
{
    index_op *op = ctx;
    return index_put(op->ds, op->idx, text, len, op->rec);
}

static int drop_cb(void *ctx, const char *text, size_t len)
{
    index_op *op = ctx;
    index_drop(op->idx, text, len, op->rec);
    return 0;
}

static int index_record(kp_dataset *ds, table *t, kp_record *rec)
{
    for (size_t i = 0; i < t->all_count; i++) {
        index_op op = {ds, t->all[i], rec};
        if (index_texts(t->all[i], rec->object, put_cb, &op)) return -1;
    }
    return 0;
}

static void unindex_record(kp_dataset *ds, table *t, kp_record *rec)
{
    for (size_t i = 0; i < t->all_count; i++) {
        index_op op = {ds, t->all[i], rec};
        index_texts(t->all[i], rec->object, drop_cb, &op);
    }
}

/* Records under a tuple text of values (in idx->attrs order). */
static const index_entry *index_lookup_values(const data_index *idx, const cJSON *const *values, size_t count)
{
    strbuf b = {0};
    const index_entry *e = NULL;
    if (values_text(&b, values, count) == 0) e = index_find(idx, b.p, b.len);
    sb_free(&b);
    return e;
}

/* Records of idx whose indexed attributes equal `attrs` of `object` (same order). */
static const index_entry *index_lookup_object(const data_index *idx, const cJSON *object, const kp_attr *const *attrs,
                                              size_t count)
{
    strbuf b = {0};
    const index_entry *e = NULL;
    if (tuple_text(&b, object, attrs, count) == 0) e = index_find(idx, b.p, b.len);
    sb_free(&b);
    return e;
}

/* ---- dataset setup -------------------------------------------------------------- */

static table *table_of(const kp_dataset *ds, const kp_entity *entity) { return &ds->tables[entity->index]; }

static rel_indexes *rel_slot(const kp_dataset *ds, const kp_relation *relation)
{
    for (size_t i = 0; i < ds->model->relation_count; i++)
        if (ds->model->relations[i] == relation) return &ds->rels[i];
    return NULL;
}

/* Is ref_attrs exactly the entity's key, in key order? */
static int is_key_order(const kp_entity *entity, kp_attr *const *attrs, size_t count)
{
    if (count != entity->key_count) return 0;
    for (size_t i = 0; i < count; i++)
        if (attrs[i] != entity->key[i]) return 0;
    return 1;
}

int kp_dataset_new(const kp_model *model, kp_dataset **out, kp_error *err)
{
    *out = NULL;
    kp_dataset *ds = calloc(1, sizeof *ds);
    if (!ds) return nomem(err);
    ds->model = model;
    ds->tables = kp_arena_alloc(&ds->arena, (model->entity_count ? model->entity_count : 1) * sizeof *ds->tables);
    ds->rels = kp_arena_alloc(&ds->arena, (model->relation_count ? model->relation_count : 1) * sizeof *ds->rels);
    if (!ds->tables || !ds->rels) goto fail;
    for (size_t i = 0; i < model->entity_count; i++) {
        const kp_entity *e = model->entities[i];
        table *t = &ds->tables[i];
        t->entity = e;
        t->key = index_new(ds, t, (const kp_attr *const *)e->key, e->key_count, 0);
        t->unique = kp_arena_alloc(&ds->arena, (e->attr_count ? e->attr_count : 1) * sizeof *t->unique);
        if (!t->key || !t->unique) goto fail;
        for (size_t a = 0; a < e->attr_count; a++) {
            if (!e->attrs[a]->is_unique || e->attrs[a]->key_index >= 0) continue;
            const kp_attr *one = e->attrs[a];
            if (!(t->unique[a] = index_new(ds, t, &one, 1, 0))) goto fail;
        }
    }
    for (size_t i = 0; i < model->relation_count; i++) {
        const kp_relation *r = model->relations[i];
        rel_indexes *ri = &ds->rels[i];
        if (r->link == KP_LINK_FOREIGN_KEY) {
            table *holder = table_of(ds, r->holder), *referenced = table_of(ds, r->referenced);
            ri->holder_fk = index_new(ds, holder, (const kp_attr *const *)r->fk_attrs, r->fk_count, 0);
            ri->referenced = is_key_order(r->referenced, r->ref_attrs, r->fk_count)
                                 ? referenced->key
                                 : index_new(ds, referenced, (const kp_attr *const *)r->ref_attrs, r->fk_count, 0);
            if (!ri->holder_fk || !ri->referenced) goto fail;
        } else if (r->link == KP_LINK_THROUGH) {
            table *join = table_of(ds, r->through);
            ri->through_from = index_new(ds, join, (const kp_attr *const *)r->through_from, r->through_from_count, 0);
            ri->through_to = index_new(ds, join, (const kp_attr *const *)r->through_to, r->through_to_count, 0);
            if (!ri->through_from || !ri->through_to) goto fail;
        } else {
            const kp_attr *array = r->array_attr;
            ri->array_reverse = index_new(ds, table_of(ds, r->from), &array, 1, 1);
            if (!ri->array_reverse) goto fail;
        }
    }
    *out = ds;
    return 0;
fail:
    kp_dataset_free(ds);
    return nomem(err);
}

void kp_dataset_free(kp_dataset *ds)
{
    if (!ds) return;
    if (ds->tables) {
        for (size_t i = 0; i < ds->model->entity_count; i++) {
            table *t = &ds->tables[i];
            for (size_t r = 0; r < t->count; r++) cJSON_Delete(t->records[r]->object);
            free(t->records);
            free(t->text);
        }
    }
    kp_arena_free(&ds->arena);
    free(ds);
}

const kp_model *kp_dataset_model(const kp_dataset *ds) { return ds->model; }
uint64_t kp_dataset_generation(const kp_dataset *ds) { return ds->generation; }

kp_record *const *kp_dataset_records(const kp_dataset *ds, const kp_entity *entity, size_t *count)
{
    table *t = table_of(ds, entity);
    if (count) *count = t->count;
    return t->records;
}

size_t kp_dataset_count(const kp_dataset *ds, const kp_entity *entity) { return table_of(ds, entity)->count; }

const cJSON *kp_record_get(const kp_record *record, const kp_attr *attr)
{
    return record && record->object ? cJSON_GetObjectItemCaseSensitive(record->object, attr->name) : NULL;
}

static kp_record *first_of(const index_entry *e) { return e && e->count ? e->items[0] : NULL; }

kp_record *kp_dataset_find(const kp_dataset *ds, const kp_entity *entity, const cJSON *const *key_values)
{
    return first_of(index_lookup_values(table_of(ds, entity)->key, key_values, entity->key_count));
}

kp_record *kp_dataset_find_like(const kp_dataset *ds, const kp_entity *entity, const cJSON *object)
{
    return first_of(index_lookup_object(table_of(ds, entity)->key, object, (const kp_attr *const *)entity->key,
                                        entity->key_count));
}

kp_record *kp_dataset_find_unique(const kp_dataset *ds, const kp_attr *attr, const cJSON *value)
{
    table *t = table_of(ds, attr->entity);
    if (attr->key_index >= 0 && attr->entity->key_count == 1) return kp_dataset_find(ds, attr->entity, &value);
    data_index *idx = t->unique[attr->index];
    return idx ? first_of(index_lookup_values(idx, &value, 1)) : NULL;
}

/* ---- following relations ------------------------------------------------------------ */

/* Which side of a foreign-key relation holds the foreign key, seen from `rel`. For a
 * 1:N the holder is `to`; for a 1:1 self-relation the model cannot say, and the
 * `from` side is taken as the holder (the relation follows the reference). */
static int source_holds_fk(const kp_rel *rel)
{
    const kp_relation *r = rel->relation;
    int holder_is_from;
    if (r->from == r->to) holder_is_from = r->cardinality == KP_CARD_ONE_ONE;
    else holder_is_from = r->holder == r->from;
    return rel->is_inverse ? !holder_is_from : holder_is_from;
}

static const kp_json_doc *model_doc(const kp_dataset *ds) { return ds->model->doc; }

/* Sorting records by key decorates each with its key values once (a record's values are
 * looked up n times, not n log n times); the serial breaks ties, so the order is total. */
typedef struct keyed_record { kp_record *rec; const cJSON **key; } keyed_record;

static int compare_keyed(const kp_dataset *ds, const kp_entity *e, const keyed_record *a, const keyed_record *b)
{
    for (size_t i = 0; i < e->key_count; i++) {
        const cJSON *x = a->key[i], *y = b->key[i];
        if (!x || !y) { if (x != y) return x ? 1 : -1; continue; }
        int c = kp_data_compare(e->key[i]->type.kind, x, y, model_doc(ds));
        if (c) return c;
    }
    return a->rec->serial < b->rec->serial ? -1 : a->rec->serial > b->rec->serial;
}

static void merge_keyed(const kp_dataset *ds, const kp_entity *e, keyed_record *items, size_t n, keyed_record *tmp)
{
    if (n < 2) return;
    size_t half = n / 2;
    merge_keyed(ds, e, items, half, tmp);
    merge_keyed(ds, e, items + half, n - half, tmp);
    size_t i = 0, j = half, k = 0;
    while (i < half && j < n) tmp[k++] = compare_keyed(ds, e, &items[j], &items[i]) < 0 ? items[j++] : items[i++];
    while (i < half) tmp[k++] = items[i++];
    while (j < n) tmp[k++] = items[j++];
    memcpy(items, tmp, n * sizeof *items);
}

int kp_dataset_sort_by_key(const kp_dataset *ds, kp_record **recs, size_t n, kp_error *err)
{
    if (n < 2) return 0;
    const kp_entity *e = recs[0]->entity;
    size_t width = e->key_count ? e->key_count : 1;
    keyed_record *items = malloc(n * sizeof *items), *tmp = malloc(n * sizeof *tmp);
    const cJSON **values = malloc(n * width * sizeof *values);
    if (!items || !tmp || !values) { free(items); free(tmp); free(values); return nomem(err); }
    int is_sorted = 1;
    for (size_t i = 0; i < n; i++) {
        items[i].rec = recs[i];
        items[i].key = values + i * width;
        for (size_t k = 0; k < e->key_count; k++) items[i].key[k] = kp_record_get(recs[i], e->key[k]);
        if (i > 0 && is_sorted && compare_keyed(ds, e, &items[i - 1], &items[i]) > 0) is_sorted = 0;
    }
    if (!is_sorted) {
        merge_keyed(ds, e, items, n, tmp);
        for (size_t i = 0; i < n; i++) recs[i] = items[i].rec;
    }
    free(items);
    free(tmp);
    free(values);
    return 0;
}

static int sort_tail_by_key(const kp_dataset *ds, kp_record_list *out, size_t from, kp_error *err)
{
    if (out->count < from + 2) return 0; /* nothing to order; items may be NULL */
    return kp_dataset_sort_by_key(ds, out->items + from, out->count - from, err);
}

/* An index entry's records in key order: sorted in place the first time they are asked
 * for (the entry is the dataset's own, so a follow, logically read-only, may keep them
 * sorted; a later index_put marks them unsorted again). One thread at a time. */
static const index_entry *entry_by_key(const kp_dataset *ds, const index_entry *ce, kp_error *err)
{
    index_entry *e = (index_entry *)ce;
    if (!e || e->is_by_key) return e;
    if (kp_dataset_sort_by_key(ds, e->items, e->count, err)) return NULL;
    e->is_by_key = 1;
    return e;
}

static int push_entry(kp_record_list *out, const index_entry *e, kp_error *err)
{
    for (size_t i = 0; e && i < e->count; i++)
        if (kp_record_list_push(out, e->items[i])) return nomem(err);
    return 0;
}

int kp_dataset_follow(const kp_dataset *ds, const kp_record *rec, const kp_rel *rel, kp_record_list *out,
                      kp_error *err)
{
    const kp_relation *r = rel->relation;
    rel_indexes *ri = rel_slot(ds, r);
    size_t start = out->count;
    if (!ri) return kp_error_set(err, KP_ERR_INTERNAL, NULL, 0, 0, "relation outside the dataset's model");
    switch (r->link) {
    case KP_LINK_FOREIGN_KEY:
        if (source_holds_fk(rel)) {
            const index_entry *e = index_lookup_object(ri->referenced, rec->object,
                                                       (const kp_attr *const *)r->fk_attrs, r->fk_count);
            if (e && e->count && kp_record_list_push(out, e->items[0])) return nomem(err);
        } else {
            const index_entry *e = index_lookup_object(ri->holder_fk, rec->object,
                                                       (const kp_attr *const *)r->ref_attrs, r->fk_count);
            if (e && !(e = entry_by_key(ds, e, err))) return -1;
            return push_entry(out, e, err); /* in key order */
        }
        break;
    case KP_LINK_THROUGH: {
        int forward = !rel->is_inverse;
        const kp_entity *near = forward ? r->from : r->to, *far = forward ? r->to : r->from;
        data_index *side = forward ? ri->through_from : ri->through_to;
        kp_attr *const *far_attrs = forward ? r->through_to : r->through_from;
        size_t far_count = forward ? r->through_to_count : r->through_from_count;
        const index_entry *links = index_lookup_object(side, rec->object, (const kp_attr *const *)near->key,
                                                       near->key_count);
        for (size_t i = 0; links && i < links->count; i++) {
            const kp_record *join = links->items[i];
            const cJSON *values[16];
            size_t n = far_count < 16 ? far_count : 16;
            for (size_t k = 0; k < n; k++) values[k] = kp_record_get(join, far_attrs[k]);
            kp_record *target = n == far->key_count ? kp_dataset_find(ds, far, values) : NULL;
            if (target && kp_record_list_push(out, target)) return nomem(err);
        }
        break;
    }
    case KP_LINK_ARRAY:
        if (!rel->is_inverse) {
            const cJSON *array = kp_record_get(rec, r->array_attr);
            for (const cJSON *el = cJSON_IsArray(array) ? array->child : NULL; el; el = el->next) {
                const cJSON *one = el;
                kp_record *target = r->to->key_count == 1 ? kp_dataset_find(ds, r->to, &one) : NULL;
                if (target && kp_record_list_push(out, target)) return nomem(err);
            }
            return 0; /* array order is the relation's order */
        } else {
            const index_entry *e = index_lookup_object(ri->array_reverse, rec->object,
                                                       (const kp_attr *const *)r->to->key, 1);
            if (e && !(e = entry_by_key(ds, e, err))) return -1;
            return push_entry(out, e, err); /* in key order */
        }
    }
    return sort_tail_by_key(ds, out, start, err);
}

kp_record *kp_dataset_follow_one(const kp_dataset *ds, const kp_record *record, kp_rel *const *path,
                                 size_t path_len)
{
    const kp_record *at = record;
    for (size_t i = 0; i < path_len && at; i++) {
        kp_record_list next = {0};
        kp_error ignored;
        if (kp_dataset_follow(ds, at, path[i], &next, &ignored)) { kp_record_list_free(&next); return NULL; }
        at = next.count ? next.items[0] : NULL;
        kp_record_list_free(&next);
    }
    return (kp_record *)at;
}

int kp_dataset_follow_path(const kp_dataset *ds, const kp_record *record, kp_rel *const *path, size_t path_len,
                           kp_record_list *out, kp_error *err)
{
    if (path_len == 0) return kp_record_list_push(out, (kp_record *)record) ? nomem(err) : 0;
    kp_record_list step = {0};
    if (kp_dataset_follow(ds, record, path[0], &step, err)) { kp_record_list_free(&step); return -1; }
    for (size_t i = 0; i < step.count; i++)
        if (kp_dataset_follow_path(ds, step.items[i], path + 1, path_len - 1, out, err)) {
            kp_record_list_free(&step);
            return -1;
        }
    kp_record_list_free(&step);
    return 0;
}

/* ---- checking one record ------------------------------------------------------------ */

static void describe(const cJSON *v, const kp_json_doc *doc, char *buf, size_t size)
{
    if (is_number_node(v)) {
        char nb[400];
        snprintf(buf, size, "%.60s", kp_data_number_text(v, doc, nb, sizeof nb));
    } else {
        kp_json_describe(v, buf, size);
    }
}

/* Checks an object against an entity. On failure returns -1 with *bad (the node to
 * point at), *at_key and a sentence in why. `allow_computed_absent`: copies and
 * derived values may be missing. */
static int check_object(const kp_entity *entity, const cJSON *object, const kp_json_doc *doc, const cJSON **bad,
                        int *at_key, char *why, size_t size)
{
    *at_key = 0;
    if (!cJSON_IsObject(object)) {
        char d[64];
        describe(object, doc, d, sizeof d);
        *bad = object;
        snprintf(why, size, "a %s record must be a JSON object, not %s; write one object per line", entity->name, d);
        return -1;
    }
    for (const cJSON *m = object->child; m; m = m->next) {
        const kp_attr *attr = entity_attr(entity, m->string);
        if (!attr) {
            const char *names[257];
            size_t n = 0;
            for (size_t i = 0; i < entity->attr_count && n < 256; i++) names[n++] = entity->attrs[i]->name;
            names[n] = NULL;
            const char *guess = kp_suggest(m->string, names);
            *bad = m;
            *at_key = 1;
            if (guess)
                snprintf(why, size, "unknown attribute \"%s\" for entity %s (did you mean \"%s\"?)", m->string,
                         entity->name, guess);
            else
                snprintf(why, size, "unknown attribute \"%s\" for entity %s; declare it in the model or remove it",
                         m->string, entity->name);
            return -1;
        }
        if (cJSON_IsNull(m)) {
            if (attr->is_optional || is_computed(attr)) continue;
            *bad = m;
            snprintf(why, size, "attribute \"%s\" of %s is null, but it is not optional; give it a value or mark it "
                     "\"optional\" in the model", attr->name, entity->name);
            return -1;
        }
        char reason[300];
        const cJSON *where = NULL;
        if (kp_value_check(&attr->type, m, doc, &where, reason, sizeof reason)) {
            char d[64];
            describe(where, doc, d, sizeof d);
            *bad = where ? where : m;
            snprintf(why, size, "attribute \"%s\" of %s: %s, got %s", attr->name, entity->name, reason, d);
            return -1;
        }
    }
    for (size_t i = 0; i < entity->attr_count; i++) {
        const kp_attr *attr = entity->attrs[i];
        if (attr->is_optional || is_computed(attr)) continue;
        const cJSON *v = object_get(object, attr->name);
        if (v && !cJSON_IsNull(v)) continue;
        if (v) continue; /* null was reported above */
        *bad = object;
        if (attr->key_index >= 0)
            snprintf(why, size, "the %s record has no key attribute \"%s\"; every record needs its whole key",
                     entity->name, attr->name);
        else
            snprintf(why, size, "the %s record has no \"%s\"; it is required (mark it \"optional\" in the model if "
                     "records may lack it)", entity->name, attr->name);
        return -1;
    }
    return 0;
}

/* The normal form: present attributes in declaration order, numbers Raw. */
static cJSON *normalise(const kp_entity *entity, const cJSON *object, const kp_json_doc *doc)
{
    cJSON *out = cJSON_CreateObject();
    for (size_t i = 0; out && i < entity->attr_count; i++) {
        const cJSON *v = object_get(object, entity->attrs[i]->name);
        if (!v || cJSON_IsNull(v)) continue;
        cJSON *copy = kp_data_copy(v, doc);
        if (!copy) { cJSON_Delete(out); return NULL; }
        cJSON_AddItemToObject(out, entity->attrs[i]->name, copy);
    }
    return out;
}

cJSON *kp_record_with(const kp_entity *entity, const cJSON *object, const kp_attr *attr, const cJSON *value)
{
    cJSON *out = cJSON_CreateObject();
    for (size_t i = 0; out && i < entity->attr_count; i++) {
        const kp_attr *a = entity->attrs[i];
        const cJSON *v = a == attr ? value : object_get(object, a->name);
        if (!v || cJSON_IsNull(v)) continue;
        cJSON *copy = kp_data_copy(v, NULL);
        if (!copy) { cJSON_Delete(out); return NULL; }
        cJSON_AddItemToObject(out, a->name, copy);
    }
    return out;
}

static void key_description(const kp_entity *e, const cJSON *object, char *buf, size_t size)
{
    size_t o = 0;
    buf[0] = '\0';
    if (e->key_count > 1) o += (size_t)snprintf(buf + o, size - o, "key (");
    for (size_t i = 0; i < e->key_count && o < size; i++) {
        char d[80];
        describe(object_get(object, e->key[i]->name), NULL, d, sizeof d);
        if (e->key_count == 1) o += (size_t)snprintf(buf + o, size - o, "%s %s", e->key[i]->name, d);
        else o += (size_t)snprintf(buf + o, size - o, "%s%s", i ? ", " : "", d);
    }
    if (e->key_count > 1 && o < size) snprintf(buf + o, size - o, ")");
}

/* A record of t other than `self` that has the same key or a unique value as object. */
static kp_record *find_conflict(const kp_dataset *ds, const table *t, const cJSON *object, const kp_record *self,
                                const kp_attr **attr)
{
    const index_entry *e = index_lookup_object(t->key, object, (const kp_attr *const *)t->entity->key,
                                               t->entity->key_count);
    for (size_t i = 0; e && i < e->count; i++)
        if (e->items[i] != self) { *attr = t->entity->key[0]; return e->items[i]; }
    for (size_t a = 0; a < t->entity->attr_count; a++) {
        if (!t->unique[a]) continue;
        const kp_attr *ua = t->entity->attrs[a];
        e = index_lookup_object(t->unique[a], object, &ua, 1);
        for (size_t i = 0; e && i < e->count; i++)
            if (e->items[i] != self) { *attr = ua; return e->items[i]; }
    }
    (void)ds;
    return NULL;
}

static void conflict_message(const table *t, const cJSON *object, const kp_attr *attr, const kp_record *other,
                             char *why, size_t size)
{
    char where[64] = "already exists";
    if (other->line > 0) snprintf(where, sizeof where, "is already on line %ld", other->line);
    if (attr->key_index >= 0) {
        char key[200];
        key_description(t->entity, object, key, sizeof key);
        snprintf(why, size, "duplicate key: a %s with %s %s; keys must be unique", t->entity->name, key, where);
    } else {
        char d[80];
        describe(object_get(object, attr->name), NULL, d, sizeof d);
        snprintf(why, size, "duplicate value for the unique attribute \"%s\": the %s with %s %s %s", attr->name,
                 t->entity->name, attr->name, d, where);
    }
}

static kp_record *append_record_at(kp_dataset *ds, table *t, cJSON *object, long line, long offset, uint64_t serial,
                                   int has_serial)
{
    kp_record *rec = kp_arena_alloc(&ds->arena, sizeof *rec);
    if (!rec) return NULL;
    if (t->count == t->cap) {
        size_t cap = t->cap ? t->cap * 2 : 64;
        kp_record **items = realloc(t->records, cap * sizeof *items);
        if (!items) return NULL;
        t->records = items;
        t->cap = cap;
    }
    rec->entity = t->entity;
    rec->object = object;
    rec->serial = has_serial ? serial : ds->next_serial++;
    rec->line = line;
    rec->offset = offset;
    if (index_record(ds, t, rec)) { unindex_record(ds, t, rec); return NULL; }
    /* keep the table in serial order (a restored record goes back to its place) */
    size_t at = t->count;
    while (at > 0 && t->records[at - 1]->serial > rec->serial) at--;
    memmove(t->records + at + 1, t->records + at, (t->count - at) * sizeof *t->records);
    t->records[at] = rec;
    t->count++;
    ds->generation++;
    return rec;
}

static kp_record *append_record(kp_dataset *ds, table *t, cJSON *object, long line, long offset)
{
    return append_record_at(ds, t, object, line, offset, 0, 0);
}

/* ---- loading NDJSON ------------------------------------------------------------------ */

static const kp_json_limits line_limits = {
    .max_bytes = 16u << 20, .max_depth = 64, .memory_factor = 64, .memory_floor = 1u << 20,
};

static int line_error(kp_error *err, const char *file, long line, int column, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
static int line_error(kp_error *err, const char *file, long line, int column, const char *fmt, ...)
{
    char message[sizeof err->message];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(message, sizeof message, fmt, ap);
    va_end(ap);
    return kp_error_set(err, KP_ERR_DATA, file, (int)line, column > 0 ? column : 1, "%s", message);
}

static int load_line(kp_dataset *ds, table *t, const char *text, size_t len, long line, long offset, kp_error *err)
{
    kp_json_doc *doc = NULL;
    if (kp_json_parse(t->file, text, len, &line_limits, &doc, err)) {
        int column = err->column;
        char message[sizeof err->message];
        if (strncmp(err->message, "unexpected text after", 21) == 0)
            snprintf(message, sizeof message, "more than one JSON value on this line; NDJSON holds one record per line");
        else if (strncmp(err->message, "the file ends before", 20) == 0)
            snprintf(message, sizeof message, "the line ends before the JSON record is complete; "
                     "check for a missing bracket or quote (a record may not span lines)");
        else if (strncmp(err->message, "the file is", 11) == 0)
            snprintf(message, sizeof message, "the line is longer than %zu MiB; a record this large is not supported",
                     line_limits.max_bytes >> 20);
        else
            snprintf(message, sizeof message, "%s", err->message);
        return line_error(err, t->file, line, column, "%s", message);
    }
    const cJSON *root = kp_json_root(doc);
    const cJSON *bad = NULL;
    int at_key = 0;
    char why[sizeof err->message];
    if (check_object(t->entity, root, doc, &bad, &at_key, why, sizeof why)) {
        kp_pos p = at_key ? kp_json_key_pos(doc, bad) : kp_json_pos(doc, bad);
        kp_json_free(doc);
        return line_error(err, t->file, line, p.column, "%s", why);
    }
    cJSON *object = normalise(t->entity, root, doc);
    if (!object) { kp_json_free(doc); return nomem(err); }
    const kp_attr *attr = NULL;
    kp_record *other = find_conflict(ds, t, object, NULL, &attr);
    if (other) {
        conflict_message(t, object, attr, other, why, sizeof why);
        kp_pos p = kp_json_pos(doc, cJSON_GetObjectItemCaseSensitive(root, attr->name));
        cJSON_Delete(object);
        kp_json_free(doc);
        return line_error(err, t->file, line, p.column, "%s", why);
    }
    kp_json_free(doc);
    if (!append_record(ds, t, object, line, offset)) { cJSON_Delete(object); return nomem(err); }
    return 0;
}

static int is_blank(const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (s[i] != ' ' && s[i] != '\t' && s[i] != '\r') return 0;
    return 1;
}

static int load_text_lines(kp_dataset *ds, table *t, const char *text, size_t len, kp_error *err)
{
    size_t at = 0;
    long line = 0;
    while (at < len) {
        const char *nl = memchr(text + at, '\n', len - at);
        size_t end = nl ? (size_t)(nl - text) : len;
        size_t n = end - at;
        line++;
        if (n && text[at + n - 1] == '\r') n--;
        if (!is_blank(text + at, n) && load_line(ds, t, text + at, n, line, (long)at, err)) return -1;
        at = end + 1;
    }
    return 0;
}

int kp_dataset_add_ndjson(kp_dataset *ds, const kp_entity *entity, const char *file, const char *text, size_t len,
                          kp_error *err)
{
    table *t = table_of(ds, entity);
    if (t->is_loaded)
        return kp_error_set(err, KP_ERR_INTERNAL, file, 0, 0, "data for %s was already loaded; give each entity "
                            "one file", entity->name);
    t->is_loaded = 1;
    t->file = kp_arena_strdup(&ds->arena, file ? file : entity->name);
    t->text = malloc(len + 1);
    if (!t->file || !t->text) return nomem(err);
    memcpy(t->text, text, len);
    t->text[len] = '\0';
    t->text_len = len;
    return load_text_lines(ds, t, t->text, len, err);
}

static int load_file(kp_dataset *ds, table *t, const char *path, kp_error *err)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        if (errno == ENOENT)
            return kp_error_set(err, KP_ERR_IO, path, 0, 0, "no data file for entity %s; write one record per line "
                                "(an empty file for an entity without records)", t->entity->name);
        return kp_error_set(err, KP_ERR_IO, path, 0, 0, "cannot open the data file: %s", strerror(errno));
    }
    t->is_loaded = 1;
    t->file = kp_arena_strdup(&ds->arena, path);
    if (!t->file) { fclose(f); return nomem(err); }
    char *buf = NULL;
    size_t cap = 0;
    long line = 0, offset = 0;
    int rc = 0;
    for (;;) {
        errno = 0;
        ssize_t got = getline(&buf, &cap, f);
        if (got < 0) {
            if (ferror(f)) rc = kp_error_set(err, KP_ERR_IO, path, 0, 0, "error while reading: %s", strerror(errno));
            break;
        }
        line++;
        size_t n = (size_t)got;
        if (n && buf[n - 1] == '\n') n--;
        if (n && buf[n - 1] == '\r') n--;
        if (!is_blank(buf, n) && (rc = load_line(ds, t, buf, n, line, offset, err))) break;
        offset += (long)got;
    }
    free(buf);
    fclose(f);
    return rc;
}

static int ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), m = strlen(suffix);
    return n >= m && strcmp(s + n - m, suffix) == 0;
}

int kp_dataset_load(const kp_model *model, const char *dir, kp_dataset **out, kp_error *err)
{
    *out = NULL;
    DIR *d = opendir(dir);
    if (!d) return kp_error_set(err, KP_ERR_IO, dir, 0, 0, "cannot open the data directory: %s", strerror(errno));
    const char *names[1025];
    size_t n = 0;
    for (size_t i = 0; i < model->entity_count && n < 1024; i++) names[n++] = model->entities[i]->name;
    names[n] = NULL;
    struct dirent *de;
    int rc = 0;
    while ((de = readdir(d)) && rc == 0) {
        if (!ends_with(de->d_name, ".ndjson")) continue;
        char entity[256];
        snprintf(entity, sizeof entity, "%.*s", (int)(strlen(de->d_name) - 7), de->d_name);
        int known = 0;
        for (size_t i = 0; i < n; i++)
            if (strcmp(names[i], entity) == 0) known = 1;
        if (known) continue;
        const char *guess = kp_suggest(entity, names);
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", dir, de->d_name);
        rc = kp_error_set(err, KP_ERR_DATA, path, 0, 0, "the data file names no entity of model %s%s%s%s; rename or "
                          "remove it", model->name, guess ? " (did you mean '" : "", guess ? guess : "",
                          guess ? ".ndjson'?)" : "");
    }
    closedir(d);
    if (rc) return rc;
    kp_dataset *ds = NULL;
    if (kp_dataset_new(model, &ds, err)) return -1;
    for (size_t i = 0; i < model->entity_count; i++) {
        char path[4096];
        snprintf(path, sizeof path, "%s/%s.ndjson", dir, model->entities[i]->name);
        if (load_file(ds, &ds->tables[i], path, err)) { kp_dataset_free(ds); return -1; }
    }
    if (kp_dataset_finish(ds, err)) { kp_dataset_free(ds); return -1; }
    *out = ds;
    return 0;
}

/* ---- cross-record checks ---------------------------------------------------------- */

/* Position of attribute `attr` (element `element` of it when >= 0) in a record's
 * source line; column 1 when it cannot be found. */
static int locate(const kp_dataset *ds, const kp_record *rec, const char *attr, int element)
{
    const table *t = table_of(ds, rec->entity);
    char *line = NULL;
    size_t len = 0;
    if (t->text) {
        if ((size_t)rec->offset >= t->text_len) return 1;
        const char *s = t->text + rec->offset;
        const char *nl = memchr(s, '\n', t->text_len - (size_t)rec->offset);
        len = nl ? (size_t)(nl - s) : t->text_len - (size_t)rec->offset;
        line = malloc(len + 1);
        if (!line) return 1;
        memcpy(line, s, len);
    } else {
        FILE *f = fopen(t->file, "rb");
        size_t cap = 0;
        if (!f) return 1;
        ssize_t got = fseek(f, rec->offset, SEEK_SET) == 0 ? getline(&line, &cap, f) : -1;
        fclose(f);
        if (got < 0) { free(line); return 1; }
        len = (size_t)got;
        while (len && (line[len - 1] == '\n' || line[len - 1] == '\r')) len--;
    }
    kp_json_doc *doc = NULL;
    kp_error ignored;
    int column = 1;
    if (kp_json_parse(t->file, line, len, &line_limits, &doc, &ignored) == 0) {
        const cJSON *node = cJSON_GetObjectItemCaseSensitive(kp_json_root(doc), attr);
        if (node && element >= 0) node = cJSON_GetArrayItem(node, element);
        if (node) column = kp_json_pos(doc, node).column;
        kp_json_free(doc);
    }
    free(line);
    return column > 0 ? column : 1;
}

static int record_error(const kp_dataset *ds, const kp_record *rec, const char *attr, int element, kp_error *err,
                        const char *fmt, ...) __attribute__((format(printf, 6, 7)));
static int record_error(const kp_dataset *ds, const kp_record *rec, const char *attr, int element, kp_error *err,
                        const char *fmt, ...)
{
    char message[sizeof err->message];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(message, sizeof message, fmt, ap);
    va_end(ap);
    if (rec->line <= 0) return kp_error_set(err, KP_ERR_DATA, NULL, 0, 0, "%s", message);
    const table *t = table_of(ds, rec->entity);
    return kp_error_set(err, KP_ERR_DATA, t->file, (int)rec->line, locate(ds, rec, attr, element), "%s", message);
}

static int check_references(const kp_dataset *ds, kp_error *err)
{
    const kp_model *m = ds->model;
    for (size_t ri = 0; ri < m->relation_count; ri++) {
        const kp_relation *r = m->relations[ri];
        const rel_indexes *ix = &ds->rels[ri];
        if (r->link == KP_LINK_FOREIGN_KEY) {
            const table *t = table_of(ds, r->holder);
            for (size_t i = 0; i < t->count; i++) {
                const kp_record *rec = t->records[i];
                size_t present = 0;
                for (size_t k = 0; k < r->fk_count; k++) present += kp_record_get(rec, r->fk_attrs[k]) != NULL;
                if (present == 0) continue;
                const kp_attr *first = r->fk_attrs[0];
                if (present < r->fk_count) {
                    for (size_t k = 0; k < r->fk_count; k++)
                        if (!kp_record_get(rec, r->fk_attrs[k])) first = r->fk_attrs[k];
                    return record_error(ds, rec, first->name, -1, err, "%s.%s is missing while the rest of the "
                                        "foreign key of relation \"%s\" is set; set all of it or none",
                                        r->holder->name, first->name, r->name);
                }
                if (!first_of(index_lookup_object(ix->referenced, rec->object, (const kp_attr *const *)r->fk_attrs,
                                                  r->fk_count))) {
                    char d[80];
                    describe(kp_record_get(rec, first), NULL, d, sizeof d);
                    return record_error(ds, rec, first->name, -1, err, "%s.%s %s references no %s (relation \"%s\"); "
                                        "add the %s or fix the reference", r->holder->name, first->name, d,
                                        r->referenced->name, r->name, r->referenced->name);
                }
            }
        } else if (r->link == KP_LINK_THROUGH) {
            const table *t = table_of(ds, r->through);
            for (size_t i = 0; i < t->count; i++) {
                const kp_record *rec = t->records[i];
                for (int side = 0; side < 2; side++) {
                    kp_attr *const *attrs = side ? r->through_to : r->through_from;
                    size_t count = side ? r->through_to_count : r->through_from_count;
                    const kp_entity *target = side ? r->to : r->from;
                    const cJSON *values[16];
                    size_t n = count < 16 ? count : 16;
                    for (size_t k = 0; k < n; k++) values[k] = kp_record_get(rec, attrs[k]);
                    if (n == target->key_count && kp_dataset_find(ds, target, values)) continue;
                    char d[80];
                    describe(values[0], NULL, d, sizeof d);
                    return record_error(ds, rec, attrs[0]->name, -1, err, "%s.%s %s references no %s (relation \"%s\" "
                                        "through %s); add the %s or remove the link", r->through->name,
                                        attrs[0]->name, d, target->name, r->name, r->through->name, target->name);
                }
            }
        } else {
            const table *t = table_of(ds, r->from);
            for (size_t i = 0; i < t->count; i++) {
                const kp_record *rec = t->records[i];
                const cJSON *array = kp_record_get(rec, r->array_attr);
                int element = 0;
                for (const cJSON *el = cJSON_IsArray(array) ? array->child : NULL; el; el = el->next, element++) {
                    const cJSON *one = el;
                    if (r->to->key_count == 1 && kp_dataset_find(ds, r->to, &one)) continue;
                    char d[80];
                    describe(el, NULL, d, sizeof d);
                    return record_error(ds, rec, r->array_attr->name, element, err, "element %s of %s.%s references no "
                                        "%s (relation \"%s\"); add the %s or remove the element", d, r->from->name,
                                        r->array_attr->name, r->to->name, r->name, r->to->name);
                }
            }
        }
    }
    return 0;
}

typedef struct given_value { kp_record *record; const kp_attr *attr; cJSON *value; } given_value;

static void describe_source(const kp_attr *attr, char *buf, size_t size)
{
    size_t o = 0;
    buf[0] = '\0';
    if (attr->copy_of) {
        for (size_t i = 0; i < attr->copy_of->path_len && o < size; i++)
            o += (size_t)snprintf(buf + o, size - o, "%s.", attr->copy_of->path[i]->name ? attr->copy_of->path[i]->name : "?");
        if (o < size) snprintf(buf + o, size - o, "%s (copy_of)", attr->copy_of->source->name);
        return;
    }
    static const char *const fns[] = {"count", "sum", "min", "max"};
    const kp_derived *d = attr->derived;
    o += (size_t)snprintf(buf, size, "%s of ", fns[d->fn]);
    for (size_t i = 0; i < d->path_len && o < size; i++)
        o += (size_t)snprintf(buf + o, size - o, "%s%s", i ? "." : "", d->path[i]->name ? d->path[i]->name : "?");
    if (d->of && o < size) snprintf(buf + o, size - o, ".%s", d->of->name);
}

int kp_dataset_finish(kp_dataset *ds, kp_error *err)
{
    if (check_references(ds, err)) return -1;
    /* keep the computed values the files gave, recompute everything, compare */
    given_value *given = NULL;
    size_t count = 0, cap = 0;
    int rc = 0;
    for (size_t e = 0; e < ds->model->entity_count && rc == 0; e++) {
        table *t = &ds->tables[e];
        for (size_t a = 0; a < t->entity->attr_count && rc == 0; a++) {
            const kp_attr *attr = t->entity->attrs[a];
            if (!is_computed(attr)) continue;
            for (size_t i = 0; i < t->count; i++) {
                const cJSON *v = kp_record_get(t->records[i], attr);
                if (!v) continue;
                if (count == cap) {
                    cap = cap ? cap * 2 : 64;
                    given_value *bigger = realloc(given, cap * sizeof *given);
                    if (!bigger) { rc = nomem(err); break; }
                    given = bigger;
                }
                given[count].record = t->records[i];
                given[count].attr = attr;
                given[count].value = kp_data_copy(v, NULL);
                if (!given[count++].value) { rc = nomem(err); break; }
            }
        }
    }
    if (rc == 0) rc = kp_dataset_refresh(ds, NULL, NULL, err);
    for (size_t i = 0; i < count && rc == 0; i++) {
        const cJSON *now = kp_record_get(given[i].record, given[i].attr);
        if (kp_data_equal(now, given[i].value, NULL)) continue;
        char have[80], want[80], source[200];
        describe(given[i].value, NULL, have, sizeof have);
        if (now) describe(now, NULL, want, sizeof want);
        else snprintf(want, sizeof want, "nothing");
        describe_source(given[i].attr, source, sizeof source);
        rc = record_error(ds, given[i].record, given[i].attr->name, -1, err, "%s.%s is %s but the data gives %s (%s); "
                          "fix it, or leave it out and keyplan computes it", given[i].record->entity->name,
                          given[i].attr->name, have, want, source);
    }
    for (size_t i = 0; i < count; i++) cJSON_Delete(given[i].value);
    free(given);
    return rc;
}

/* ---- changing -------------------------------------------------------------------- */

static int add_record(kp_dataset *ds, const kp_entity *entity, cJSON *object, uint64_t serial, int has_serial,
                      kp_record **out, kp_error *err)
{
    table *t = table_of(ds, entity);
    const cJSON *bad = NULL;
    int at_key = 0;
    char why[sizeof err->message];
    if (out) *out = NULL;
    if (check_object(entity, object, NULL, &bad, &at_key, why, sizeof why)) {
        cJSON_Delete(object);
        return kp_error_set(err, KP_ERR_DATA, NULL, 0, 0, "%s", why);
    }
    cJSON *normal = normalise(entity, object, NULL);
    cJSON_Delete(object);
    if (!normal) return nomem(err);
    const kp_attr *attr = NULL;
    kp_record *other = find_conflict(ds, t, normal, NULL, &attr);
    if (other) {
        conflict_message(t, normal, attr, other, why, sizeof why);
        cJSON_Delete(normal);
        return kp_error_set(err, KP_ERR_DATA, NULL, 0, 0, "%s", why);
    }
    kp_record *rec = append_record_at(ds, t, normal, 0, 0, serial, has_serial);
    if (!rec) { cJSON_Delete(normal); return nomem(err); }
    if (out) *out = rec;
    return 0;
}

int kp_dataset_add(kp_dataset *ds, const kp_entity *entity, cJSON *object, kp_record **out, kp_error *err)
{
    return add_record(ds, entity, object, 0, 0, out, err);
}

int kp_dataset_restore(kp_dataset *ds, const kp_entity *entity, cJSON *object, uint64_t serial, kp_record **out,
                       kp_error *err)
{
    return add_record(ds, entity, object, serial, 1, out, err);
}

int kp_dataset_replace(kp_dataset *ds, kp_record *rec, cJSON *object, kp_error *err)
{
    table *t = table_of(ds, rec->entity);
    const cJSON *bad = NULL;
    int at_key = 0;
    char why[sizeof err->message];
    if (rec->is_deleted) { cJSON_Delete(object); return kp_error_set(err, KP_ERR_INTERNAL, NULL, 0, 0, "replacing a deleted record"); }
    if (check_object(rec->entity, object, NULL, &bad, &at_key, why, sizeof why)) {
        cJSON_Delete(object);
        return kp_error_set(err, KP_ERR_DATA, NULL, 0, 0, "%s", why);
    }
    cJSON *normal = normalise(rec->entity, object, NULL);
    cJSON_Delete(object);
    if (!normal) return nomem(err);
    for (size_t i = 0; i < rec->entity->key_count; i++)
        if (!kp_data_equal(object_get(normal, rec->entity->key[i]->name), kp_record_get(rec, rec->entity->key[i]),
                           NULL)) {
            cJSON_Delete(normal);
            return kp_error_set(err, KP_ERR_DATA, NULL, 0, 0, "a write may not change the key attribute \"%s\" of "
                                "%s; delete the record and insert a new one", rec->entity->key[i]->name,
                                rec->entity->name);
        }
    const kp_attr *attr = NULL;
    kp_record *other = find_conflict(ds, t, normal, rec, &attr);
    if (other) {
        conflict_message(t, normal, attr, other, why, sizeof why);
        cJSON_Delete(normal);
        return kp_error_set(err, KP_ERR_DATA, NULL, 0, 0, "%s", why);
    }
    unindex_record(ds, t, rec);
    cJSON *old = rec->object;
    rec->object = normal;
    if (index_record(ds, t, rec)) {
        unindex_record(ds, t, rec);
        rec->object = old;
        index_record(ds, t, rec);
        cJSON_Delete(normal);
        return nomem(err);
    }
    cJSON_Delete(old);
    return 0;
}

int kp_dataset_remove(kp_dataset *ds, kp_record *rec, kp_error *err)
{
    table *t = table_of(ds, rec->entity);
    if (rec->is_deleted) return 0;
    unindex_record(ds, t, rec);
    size_t o = 0;
    for (size_t i = 0; i < t->count; i++)
        if (t->records[i] != rec) t->records[o++] = t->records[i];
    t->count = o;
    cJSON_Delete(rec->object);
    rec->object = NULL;
    rec->is_deleted = 1;
    ds->generation++;
    (void)err;
    return 0;
}

int kp_dataset_dependents(const kp_dataset *ds, const kp_record *rec, const kp_relation *r, kp_record_list *out,
                          kp_error *err)
{
    const rel_indexes *ri = rel_slot(ds, r);
    size_t start = out->count;
    if (!ri) return kp_error_set(err, KP_ERR_INTERNAL, NULL, 0, 0, "relation outside the dataset's model");
    if (r->link == KP_LINK_FOREIGN_KEY) {
        if (rec->entity != r->referenced) return 0;
        const index_entry *e = index_lookup_object(ri->holder_fk, rec->object, (const kp_attr *const *)r->ref_attrs,
                                                   r->fk_count);
        for (size_t i = 0; e && i < e->count; i++)
            if (e->items[i] != rec && kp_record_list_push(out, e->items[i])) return nomem(err);
    } else if (r->link == KP_LINK_THROUGH) {
        for (int side = 0; side < 2; side++) {
            const kp_entity *near = side ? r->to : r->from;
            if (rec->entity != near) continue;
            const index_entry *e = index_lookup_object(side ? ri->through_to : ri->through_from, rec->object,
                                                       (const kp_attr *const *)near->key, near->key_count);
            for (size_t i = 0; e && i < e->count; i++) {
                int seen = 0;
                for (size_t k = start; k < out->count; k++) seen |= out->items[k] == e->items[i];
                if (!seen && kp_record_list_push(out, e->items[i])) return nomem(err);
            }
        }
    } else {
        if (rec->entity != r->to) return 0;
        const index_entry *e = index_lookup_object(ri->array_reverse, rec->object,
                                                   (const kp_attr *const *)r->to->key, 1);
        if (push_entry(out, e, err)) return -1;
    }
    return sort_tail_by_key(ds, out, start, err);
}

/* ---- copies and derived values ------------------------------------------------------- */

int kp_data_cond_test(const kp_dataset *ds, const kp_record *rec, const kp_cond *cond, const cJSON *value,
                      const cJSON *upper)
{
    const kp_record *at = cond->path_len ? kp_dataset_follow_one(ds, rec, cond->path, cond->path_len) : rec;
    const cJSON *v = at ? kp_record_get(at, cond->attr) : NULL;
    return kp_cond_holds(cond->op, cond->attr->type.kind, v, value, upper, model_doc(ds));
}

int kp_cond_holds(kp_op op, kp_type_kind kind, const cJSON *v, const cJSON *value, const cJSON *upper, const kp_json_doc *doc)
{
    if (!v || cJSON_IsNull(v) || !value) return 0;
    switch (op) {
    case KP_OP_EQ: return kp_data_equal(v, value, doc) || kp_data_compare(kind, v, value, doc) == 0;
    case KP_OP_LT: return kp_data_compare(kind, v, value, doc) < 0;
    case KP_OP_LE: return kp_data_compare(kind, v, value, doc) <= 0;
    case KP_OP_GT: return kp_data_compare(kind, v, value, doc) > 0;
    case KP_OP_GE: return kp_data_compare(kind, v, value, doc) >= 0;
    case KP_OP_BETWEEN:
        return upper && kp_data_compare(kind, v, value, doc) >= 0 && kp_data_compare(kind, v, upper, doc) <= 0;
    case KP_OP_BEGINS_WITH:
        return cJSON_IsString(v) && cJSON_IsString(value) &&
               strncmp(v->valuestring, value->valuestring, strlen(value->valuestring)) == 0;
    }
    return 0;
}

static cJSON *aggregate(const kp_dataset *ds, const kp_record *rec, const kp_attr *attr, int *failed)
{
    const kp_derived *d = attr->derived;
    kp_record_list list = {0};
    kp_error ignored;
    if (kp_dataset_follow_path(ds, rec, d->path, d->path_len, &list, &ignored)) { *failed = 1; return NULL; }
    int64_t count = 0;
    char *sum = NULL;
    double dsum = 0;
    int is_double = attr->type.kind == KP_T_DOUBLE || (d->of && d->of->type.kind == KP_T_DOUBLE);
    const cJSON *best = NULL;
    for (size_t i = 0; i < list.count && !*failed; i++) {
        const kp_record *r = list.items[i];
        int holds = 1;
        for (size_t c = 0; c < d->where_count && holds; c++)
            holds = kp_data_cond_test(ds, r, &d->where[c], d->where[c].value.literal, d->where[c].upper.literal);
        if (!holds) continue;
        if (d->fn == KP_AGG_COUNT) { count++; continue; }
        const cJSON *v = kp_record_get(r, d->of);
        if (!v) continue;
        if (d->fn == KP_AGG_SUM) {
            char buf[400];
            const char *t = kp_data_number_text(v, NULL, buf, sizeof buf);
            if (!t) continue;
            if (is_double) { dsum += strtod(t, NULL); continue; }
            char *next = kp_decimal_add(sum ? sum : "0", t);
            if (!next) { *failed = 1; break; }
            free(sum);
            sum = next;
        } else {
            int c = best ? kp_data_compare(d->of->type.kind, v, best, NULL) : 0;
            if (!best || (d->fn == KP_AGG_MIN ? c < 0 : c > 0)) best = v;
        }
    }
    cJSON *out = NULL;
    if (!*failed) {
        if (d->fn == KP_AGG_COUNT) out = kp_data_int(count);
        else if (d->fn == KP_AGG_SUM && is_double) {
            char buf[64];
            format_double(dsum, buf, sizeof buf);
            out = kp_data_number(buf);
        } else if (d->fn == KP_AGG_SUM) out = kp_data_number(sum ? sum : "0");
        else if (best) out = kp_data_copy(best, NULL);
        if (!out && (d->fn == KP_AGG_COUNT || d->fn == KP_AGG_SUM || best)) *failed = 1;
    }
    free(sum);
    kp_record_list_free(&list);
    return out;
}

cJSON *kp_dataset_compute(const kp_dataset *ds, const kp_record *rec, const kp_attr *attr, int *failed)
{
    *failed = 0;
    if (attr->copy_of) {
        const kp_record *src = kp_dataset_follow_one(ds, rec, attr->copy_of->path, attr->copy_of->path_len);
        const cJSON *v = src ? kp_record_get(src, attr->copy_of->source) : NULL;
        if (!v) return NULL;
        cJSON *out = kp_data_copy(v, NULL);
        if (!out) *failed = 1;
        return out;
    }
    if (attr->derived) return aggregate(ds, rec, attr, failed);
    return NULL;
}

/* Recomputes rec's copy_of and derived attributes; replaces it (after `changed`) when one
 * moved, and says so in *moved. */
static int recompute(kp_dataset *ds, kp_record *rec, kp_data_change_fn changed, void *ctx, int *moved, kp_error *err)
{
    const kp_entity *entity = rec->entity;
    cJSON *next = NULL;
    *moved = 0;
    for (size_t a = 0; a < entity->attr_count; a++) {
        const kp_attr *attr = entity->attrs[a];
        if (!is_computed(attr)) continue;
        int failed = 0;
        cJSON *v = kp_dataset_compute(ds, rec, attr, &failed);
        if (failed) { cJSON_Delete(next); return nomem(err); }
        const cJSON *now = object_get(next ? next : rec->object, attr->name);
        if (!kp_data_equal(now, v, NULL)) {
            cJSON *with = kp_record_with(entity, next ? next : rec->object, attr, v);
            cJSON_Delete(next);
            next = with;
            if (!next) { cJSON_Delete(v); return nomem(err); }
        }
        cJSON_Delete(v);
    }
    if (!next) return 0;
    *moved = 1;
    if (changed && changed(ctx, rec, next, err)) { cJSON_Delete(next); return -1; }
    return kp_dataset_replace(ds, rec, next, err);
}

static size_t computed_count(const kp_model *m)
{
    size_t computed = 0;
    for (size_t e = 0; e < m->entity_count; e++)
        for (size_t a = 0; a < m->entities[e]->attr_count; a++) computed += is_computed(m->entities[e]->attrs[a]);
    return computed;
}

static int settle_error(const kp_dataset *ds, kp_error *err)
{
    return kp_error_set(err, KP_ERR_MODEL, ds->model->file, 0, 0, "copy_of and derived attributes do not settle: "
                        "they depend on each other in a cycle");
}

int kp_dataset_refresh(kp_dataset *ds, kp_data_change_fn changed, void *ctx, kp_error *err)
{
    size_t computed = computed_count(ds->model);
    if (computed == 0) return 0;
    for (size_t pass = 0; pass < computed + 2; pass++) {
        int any = 0;
        for (size_t e = 0; e < ds->model->entity_count; e++) {
            table *t = &ds->tables[e];
            for (size_t i = 0; i < t->count; i++) {
                int moved;
                if (recompute(ds, t->records[i], changed, ctx, &moved, err)) return -1;
                any |= moved;
            }
        }
        if (!any) return 0;
    }
    return settle_error(ds, err);
}

/* ---- recomputing near a change --------------------------------------------------------- */

/* The way back over a relation (its other side). */
static const kp_rel *way_back(const kp_rel *r) { return r->is_inverse ? &r->relation->forward : &r->relation->inverse; }

/* Can the records a change moves be found from the changed records alone? Not when a
 * computed attribute is itself a link (a foreign key, an array of references, a join
 * record's side: the walks would need its old value) or a derived filter reaches further
 * than the aggregated records (a condition with a path). */
static int is_local(const kp_model *m)
{
    for (size_t e = 0; e < m->entity_count; e++)
        for (size_t a = 0; a < m->entities[e]->attr_count; a++) {
            const kp_attr *attr = m->entities[e]->attrs[a];
            if (attr->derived)
                for (size_t c = 0; c < attr->derived->where_count; c++)
                    if (attr->derived->where[c].path_len) return 0;
        }
    for (size_t i = 0; i < m->relation_count; i++) {
        const kp_relation *r = m->relations[i];
        for (size_t k = 0; k < r->fk_count; k++) if (is_computed(r->fk_attrs[k]) || is_computed(r->ref_attrs[k])) return 0;
        for (size_t k = 0; k < r->through_from_count; k++) if (is_computed(r->through_from[k])) return 0;
        for (size_t k = 0; k < r->through_to_count; k++) if (is_computed(r->through_to[k])) return 0;
        if (r->array_attr && is_computed(r->array_attr)) return 0;
    }
    return 1;
}

/* The records whose attribute over `path` (from their entity) may read `rec` (a record of
 * the dataset, or the object of one that was): those the path reaches it from at any
 * step — the record at that step holds the link or the value — and, for a join entity's
 * record, those whose path crosses its N:M. Appended to out (duplicates allowed). */
static int readers_of(const kp_dataset *ds, const kp_record *rec, const kp_entity *holder, kp_rel *const *path,
                      size_t path_len, kp_record_list *out, kp_error *err)
{
    kp_rel *back[64];
    if (path_len > sizeof back / sizeof *back) return kp_error_set(err, KP_ERR_INTERNAL, NULL, 0, 0, "path too long");
    for (size_t j = 0; j <= path_len; j++) {
        const kp_entity *at = j == 0 ? holder : path[j - 1]->target;
        const kp_record *from = NULL;
        if (at == rec->entity) {
            /* the record itself: the dataset's (rec may be the content of one that was) */
            from = j ? rec : kp_dataset_find_like(ds, rec->entity, rec->object);
            if (!from) continue;
        } else if (j < path_len && path[j]->relation->link == KP_LINK_THROUGH && path[j]->relation->through == rec->entity &&
                   at == path[j]->source) {
            /* a join record of the hop from step j: the record at step j it names */
            const kp_relation *r = path[j]->relation;
            kp_attr *const *side = path[j]->is_inverse ? r->through_to : r->through_from;
            size_t n = path[j]->is_inverse ? r->through_to_count : r->through_from_count;
            const cJSON *values[16];
            if (n > 16 || n != at->key_count) continue;
            for (size_t k = 0; k < n; k++) values[k] = kp_record_get(rec, side[k]);
            from = kp_dataset_find(ds, at, values);
            if (!from) continue;
        } else {
            continue;
        }
        for (size_t k = 0; k < j; k++) back[k] = (kp_rel *)way_back(path[j - 1 - k]);
        if (kp_dataset_follow_path(ds, from, back, j, out, err)) return -1;
    }
    return 0;
}

static int by_address(const void *a, const void *b)
{
    uintptr_t x = (uintptr_t)*(kp_record *const *)a, y = (uintptr_t)*(kp_record *const *)b;
    return x < y ? -1 : x > y;
}

/* The records of the dataset whose computed attributes a change of `rec` may move. */
static int dirty_near(const kp_dataset *ds, const kp_record *rec, kp_record_list *out, kp_error *err)
{
    const kp_model *m = ds->model;
    for (size_t e = 0; e < m->entity_count; e++) {
        const kp_entity *holder = m->entities[e];
        for (size_t a = 0; a < holder->attr_count; a++) {
            const kp_attr *attr = holder->attrs[a];
            int rc = 0;
            if (attr->copy_of) rc = readers_of(ds, rec, holder, attr->copy_of->path, attr->copy_of->path_len, out, err);
            else if (attr->derived) rc = readers_of(ds, rec, holder, attr->derived->path, attr->derived->path_len, out, err);
            if (rc) return -1;
        }
    }
    return 0;
}

int kp_dataset_refresh_near(kp_dataset *ds, const kp_entity *const *entities, const cJSON *const *objects, size_t n,
                            kp_data_change_fn changed, void *ctx, kp_error *err)
{
    size_t computed = computed_count(ds->model);
    if (computed == 0) return 0;
    if (!is_local(ds->model)) return kp_dataset_refresh(ds, changed, ctx, err);
    kp_record_list dirty = {0}, moved = {0};
    int rc = 0;
    for (size_t i = 0; i < n && rc == 0; i++) {
        if (!objects[i]) continue;
        kp_record r = {.entity = entities[i], .object = (cJSON *)objects[i]};
        rc = dirty_near(ds, &r, &dirty, err);
    }
    for (size_t pass = 0; rc == 0 && dirty.count; pass++) {
        if (pass == computed + 2) { rc = settle_error(ds, err); break; }
        qsort(dirty.items, dirty.count, sizeof *dirty.items, by_address);
        moved.count = 0;
        for (size_t i = 0; i < dirty.count && rc == 0; i++) {
            kp_record *rec = dirty.items[i];
            if ((i && rec == dirty.items[i - 1]) || rec->is_deleted) continue;
            int did = 0;
            rc = recompute(ds, rec, changed, ctx, &did, err);
            if (rc == 0 && did && kp_record_list_push(&moved, rec)) rc = nomem(err);
        }
        /* what moved is read by others in turn (a copy of a count) */
        dirty.count = 0;
        for (size_t i = 0; i < moved.count && rc == 0; i++) rc = dirty_near(ds, moved.items[i], &dirty, err);
    }
    kp_record_list_free(&dirty);
    kp_record_list_free(&moved);
    return rc;
}
