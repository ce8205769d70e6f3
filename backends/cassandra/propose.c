/*
 * propose.c — the Cassandra layout: the Chebotko mapping from access patterns to
 * query tables, then the refinements (shared tables, static columns, bucketing), the
 * fetch tree and plan of every pattern, the write plans, and why each choice was made.
 *
 * Rules, in the order they apply (each recorded as a kp_decision naming its patterns):
 *  - every entity has a table by key (records by key, to-one hops, the source of writes),
 *    unless nothing reads it and a query table holds every record whole (dropped last);
 *  - a path a pattern walks that is not "by key" gets a query table: equality
 *    parameters, literals and foreign keys -> partition key; the range attribute -> the
 *    first clustering column; the declared order -> clustering columns ASC/DESC; the
 *    rest of the row entity's key -> clustering columns, so rows never overwrite;
 *  - two paths that need the same columns in the same roles share one table;
 *  - a pattern that returns a parent's attributes next to its children reads them from
 *    static columns of the children's table (one SELECT);
 *  - a partition whose largest fan-out passes ~100,000 rows or ~100 MB gets a hash
 *    bucket in its partition key; reads then span every bucket and merge;
 *  - no ALLOW FILTERING, no secondary index, no materialized view: a condition no key
 *    can serve is applied by the client to the rows of a designed partition (said in
 *    the plan); a pattern no table can serve is a defect.
 * Invariant: the fetch tree of a pattern is what execute.c runs, and its plan is
 * derived from the same tree, so claims and measurements describe the same requests.
 */
#include "backends/cassandra/cql.h"
#include "backends/copies.h"
#include "backends/emit.h"
#include "backends/write_effects.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/data.h"
#include "core/value.h"

typedef struct builder {
    const kp_model *m;
    const kp_mix *mix;
    kp_design *d;
    cq_layout *L;
    kp_arena *A;
    kp_error *err;
    int is_out_of_memory;   /* a fetch tree could not grow */
    /* per entity (by index), NULL until needed: per attribute, what every non-static column
     * of it shares (name, quoted name, CQL type text and parsed type), made once */
    cq_column **attr_cols;
} builder;

static const char *snake(kp_arena *A, const char *name)
{
    char buf[256];
    kp_cql_snake_case(name, buf, sizeof buf);
    return kp_arena_strdup(A, buf);
}

static const char *quoted(kp_arena *A, const char *name)
{
    char buf[300];
    kp_cql_quote_identifier(name, buf, sizeof buf);
    return kp_arena_strdup(A, buf);
}

/* ---- types ------------------------------------------------------------------------------ */

static const char *scalar_type(kp_type_kind k)
{
    switch (k) {
    case KP_T_STRING: case KP_T_ENUM: return "text";
    case KP_T_INT: case KP_T_COUNTER: return "bigint";
    case KP_T_DECIMAL: return "decimal";
    case KP_T_DOUBLE: return "double";
    case KP_T_BOOL: return "boolean";
    case KP_T_TIMESTAMP: return "timestamp";
    case KP_T_DATE: return "date";
    case KP_T_UUID: return "uuid";
    case KP_T_TIMEUUID: return "timeuuid";
    case KP_T_BLOB: return "blob";
    default: return NULL;
    }
}

const char *kp_cq_type_text(const kp_type *t, int *is_json)
{
    static char buf[8][96];
    static int next;
    *is_json = 0;
    const char *s = scalar_type(t->kind);
    if (s) return s;
    char *out = buf[next++ % 8];
    if (t->kind == KP_T_ARRAY && t->item && scalar_type(t->item->kind)) {
        snprintf(out, 96, "frozen<list<%s>>", scalar_type(t->item->kind));
        return out;
    }
    if (t->kind == KP_T_MAP && t->item && scalar_type(t->item->kind) && scalar_type(t->map_key)) {
        snprintf(out, 96, "frozen<map<%s, %s>>", scalar_type(t->map_key), scalar_type(t->item->kind));
        return out;
    }
    *is_json = 1; /* objects, arrays of objects: JSON text keeps nesting, order and empty values */
    return "text";
}

static double attr_bytes(const kp_attr *a)
{
    if (a->avg_size > 0) return a->avg_size;
    switch (a->type.kind) {
    case KP_T_INT: case KP_T_COUNTER: case KP_T_DOUBLE: case KP_T_TIMESTAMP: return 8;
    case KP_T_BOOL: return 1;
    case KP_T_DATE: return 4;
    case KP_T_UUID: case KP_T_TIMEUUID: return 16;
    case KP_T_DECIMAL: return 8;
    case KP_T_OBJECT: return 200;
    case KP_T_ARRAY: return 16 * (a->type.avg_items > 0 ? a->type.avg_items : 4);
    case KP_T_MAP: return 24 * (a->type.avg_items > 0 ? a->type.avg_items : 4);
    default: return 20;
    }
}

/* A row on average, or at its largest (`at_max`, what a plan's bytes bound prices): every
 * column present, each at kp_attr_max_ratio times its average size. */
static double record_bytes(const kp_entity *e, int at_max)
{
    double b = 16; /* row overhead */
    for (size_t i = 0; i < e->attr_count; i++)
        b += at_max ? attr_bytes(e->attrs[i]) * kp_attr_max_ratio(e->attrs[i]) + 4
                    : (attr_bytes(e->attrs[i]) + 4) * e->attrs[i]->presence;
    return b;
}

/* ---- tables ----------------------------------------------------------------------------------- */

/* A column's names and type, as add_col made them for its attribute. */
static void take_names(cq_column *to, const cq_column *from)
{
    to->name = from->name;
    to->quoted = from->quoted;
    to->cql_type = from->cql_type;
    to->type = from->type;
    to->is_json = from->is_json;
}

static cq_column *add_col(builder *B, cq_table *t, const kp_attr *a, const kp_entity *owner, cq_role role, int desc)
{
    for (size_t i = 0; a && i < t->col_count; i++)
        if (t->cols[i].attr == a && t->cols[i].entity == owner) return NULL;
    cq_column *c = kp_arena_push(B->A, (void **)&t->cols, &t->col_count, &t->col_cap, sizeof *c);
    c->attr = a;
    c->entity = owner;
    c->role = role;
    c->is_desc = desc;
    cq_column *made = NULL;
    if (a && role != CQ_STATIC && a->entity && B->attr_cols) {
        cq_column **of = &B->attr_cols[a->entity->index];
        if (!*of) *of = kp_arena_alloc(B->A, sizeof **of * (a->entity->attr_count ? a->entity->attr_count : 1));
        made = *of ? &(*of)[a->index] : NULL;
        if (made && made->name) {
            take_names(c, made);
            return c;
        }
    }
    if (!a) {
        c->name = "bucket";
        c->cql_type = "int";
    } else {
        const char *n = snake(B->A, a->name);
        if (role == CQ_STATIC) {
            n = kp_arena_printf(B->A, "%s_%s", snake(B->A, owner->name), n);
            int clash = 0;
            for (size_t i = 0; i + 1 < t->col_count; i++) clash |= !strcmp(t->cols[i].name, n);
            for (size_t i = 0; i < t->entity->attr_count; i++) clash |= !strcmp(snake(B->A, t->entity->attrs[i]->name), n);
            if (clash) n = kp_arena_printf(B->A, "%s_static", n);
        }
        c->name = n;
        c->cql_type = kp_arena_strdup(B->A, kp_cq_type_text(&a->type, &c->is_json));
    }
    c->quoted = quoted(B->A, c->name);
    kp_cql_type_parse(c->cql_type, B->A, &c->type, B->err);
    if (made) take_names(made, c);
    return c;
}

/* s appended to buf (size bytes, NUL-terminated) at *o, cut to fit. */
static void sig_add(char *buf, size_t size, size_t *o, const char *s)
{
    size_t n = strlen(s);
    if (*o + n >= size) n = *o + 1 < size ? size - 1 - *o : 0;
    memcpy(buf + *o, s, n);
    *o += n;
    buf[*o] = '\0';
}

/* What makes two tables the same; `flip`: as if every clustering column ran the other way. */
static const char *signature_of(builder *B, const cq_table *t, int flip)
{
    char buf[2048], buckets[16];
    size_t o = 0;
    snprintf(buckets, sizeof buckets, "|%d|", t->buckets);
    sig_add(buf, sizeof buf, &o, t->entity->name);
    sig_add(buf, sizeof buf, &o, buckets);
    sig_add(buf, sizeof buf, &o, t->parent ? t->parent->name : "-");
    sig_add(buf, sizeof buf, &o, "|");
    for (size_t i = 0; i < t->pk_count + t->ck_count && o < sizeof buf - 64; i++) {
        sig_add(buf, sizeof buf, &o, i < t->pk_count ? "K" : "C");
        sig_add(buf, sizeof buf, &o, t->cols[i].name);
        if (t->cols[i].is_desc != (flip && i >= t->pk_count)) sig_add(buf, sizeof buf, &o, "-");
        sig_add(buf, sizeof buf, &o, t->cols[i].is_element ? "*," : ",");
    }
    /* range buckets: their bounds (a row's bucket follows them) */
    for (int k = 0; t->bounds && k < t->buckets - 1 && o < sizeof buf - 64; k++) {
        sig_add(buf, sizeof buf, &o, "<");
        sig_add(buf, sizeof buf, &o, t->bounds[k]->valuestring);
    }
    return kp_arena_strndup(B->A, buf, o);
}

static void table_signature(builder *B, cq_table *t) { t->signature = signature_of(B, t, 0); }

static void cause(builder *B, cq_table *t, const kp_pattern *p)
{
    if (!p) return;
    for (size_t i = 0; i < t->cause_count; i++)
        if (t->causes[i] == p) return;
    const kp_pattern **slot = kp_arena_push(B->A, (void **)&t->causes, &t->cause_count, &t->cause_cap, sizeof *slot);
    *slot = p;
}

/* A range bucket's bound: a value node in the design's arena (freed with it), its canonical
 * text, a number as Raw; NULL when out of memory (then the builder says so). */
static const cJSON *bound_node(builder *B, int type, const char *text)
{
    cJSON *b = kp_arena_alloc(B->A, sizeof *b);
    if (b) {
        b->type = type;
        b->valuestring = kp_arena_strdup(B->A, text);
    }
    if (!b || !b->valuestring) B->is_out_of_memory = 1;
    return b && b->valuestring ? b : NULL;
}

/* Whether a pattern searches an attribute by its prefix (begins_with), in its own conditions
 * or its listing's. */
static int prefix_searched(const kp_pattern *p, const kp_attr *a)
{
    const kp_shape *each = p ? kp_pattern_page_listing(p) : NULL;
    for (int pass = 0; p && pass < 2; pass++) {
        const kp_cond *w = pass ? (each ? each->where : NULL) : p->where;
        size_t n = pass ? (each ? each->where_count : 0) : p->where_count;
        for (size_t k = 0; k < n; k++)
            if (!w[k].path_len && w[k].op == KP_OP_BEGINS_WITH && w[k].attr == a) return 1;
    }
    return 0;
}

/* The first letter of a string whose format says its leading letters spread over the
 * alphabet: 'a' for lowercase words (handle, email, word), 'A' for capitalised ones (names,
 * titles, cities); 0 for any other (an id, a SKU, a URL may share their first letters in every
 * record: hash buckets keep those partitions even). */
static char leading_letter(const kp_attr *a)
{
    static const char *const lower[] = {"handle", "email", "word", NULL};
    static const char *const capital[] = {"name", "first_name", "last_name", "title", "text", "city", NULL};
    for (size_t i = 0; a->format && lower[i]; i++)
        if (strcmp(a->format, lower[i]) == 0) return 'a';
    for (size_t i = 0; a->format && capital[i]; i++)
        if (strcmp(a->format, capital[i]) == 0) return 'A';
    return 0;
}

/* Range buckets of a string a pattern searches by prefix (leaderboard's handle-autocomplete):
 * the buckets cut the two-letter prefixes ("aa" to "zz", or "Aa" to "Zz" for a capitalised
 * format) in equal runs (a string that sorts before the first, a digit first, falls in the
 * first bucket; after the last run, in the last), twice as many as the size needs since
 * initial letters do not spread evenly. A prefix's rows then lie in the bucket it falls in (in
 * two where a bound splits a short prefix), and a search reads that partition with its LIMIT
 * where hash buckets are all read and merged; a page read in the string's order likewise
 * starts in the bucket where it starts. Only for a string whose format spreads its leading
 * letters (leading_letter). */
static void prefix_bounds(builder *B, cq_table *t, char first)
{
    int buckets = 2 * t->buckets > KP_CQ_MAX_BUCKETS ? KP_CQ_MAX_BUCKETS : 2 * t->buckets;
    const cJSON **bounds = kp_arena_alloc(B->A, sizeof *bounds * (size_t)(buckets - 1));
    if (!bounds) { B->is_out_of_memory = 1; return; }
    for (int k = 1; k < buckets; k++) {
        int at = (26 * 26 * k + buckets / 2) / buckets; /* a two-letter prefix, "aa" = 0 */
        char text[3] = {(char)(first + at / 26), (char)('a' + at % 26), 0};
        if (at % 26 == 0) text[1] = 0; /* "b" rather than "ba": every string that starts with b after it */
        if (!(bounds[k - 1] = bound_node(B, cJSON_String, text))) return;
    }
    t->buckets = buckets;
    t->bounds = bounds;
}

/* Does a pattern page through a listing in an order (a LIMIT on an ordered $each)? Its
 * table's first clustering column is then where its pages start. */
static int pages_in_order(const kp_pattern *p)
{
    const kp_shape *each = p ? kp_pattern_page_listing(p) : NULL;
    return each && each->order_count > 0;
}

/* Range buckets of a uuid (random: version 4 uuids spread evenly over their hex digits):
 * the buckets cut the first eight hex digits in equal runs. */
static void uuid_bounds(builder *B, cq_table *t)
{
    const cJSON **bounds = kp_arena_alloc(B->A, sizeof *bounds * (size_t)(t->buckets - 1));
    if (!bounds) { B->is_out_of_memory = 1; return; }
    for (int k = 1; k < t->buckets; k++) {
        char text[48];
        unsigned lead = (unsigned)((0x100000000ULL * (uint64_t)k) / (uint64_t)t->buckets); /* below 2^32 */
        snprintf(text, sizeof text, "%08x-0000-0000-0000-000000000000", lead);
        if (!(bounds[k - 1] = bound_node(B, cJSON_String, text))) return;
    }
    t->bounds = bounds;
}

/* Why a table that pages in its first clustering column's order gets hash buckets: nothing
 * in the model says how that column's values spread, so no range can be cut; what would let
 * it (a page then reads one bucket, where it reads every hash bucket). */
static const char *hash_why(builder *B, const cq_table *t, const kp_pattern *p)
{
    const kp_attr *a = t->cols[t->pk_count].attr;
    const char *name = kp_arena_printf(B->A, "%s.%s", a->entity ? a->entity->name : t->entity->name, a->name);
    const char *lack = a->type.kind == KP_T_STRING ? "a string with no format that spreads its leading letters"
                                                   : "no declared min and max";
    const char *change = a->type.kind == KP_T_STRING
        ? "declare it a uuid (random ids spread evenly) or give it a format that spreads its leading letters (handle, "
          "email, word, name, title, city, ...)"
        : "declare its min and max";
    return kp_arena_printf(B->A, "hash buckets, since %s's values do not say how they spread (%s): a page of %s reads "
                           "every bucket (at most a page from each) and merges them; %s, and range buckets let a page read "
                           "the bucket where it starts", name, lack, p->name, change);
}

/* Range buckets (cq_table.bounds) for a table its size splits: where the first clustering
 * column is a timestamp, date or int with a declared min and max, the buckets cut that range
 * into equal runs (whole days where a run spans days), so a read in the clustering order
 * starts in the bucket where its range starts and goes on to the next only when one runs
 * out, where hash buckets are read all at once. Not where a partition column is itself a
 * date or time (a day's partition: its rows would share one run of a range drawn over all
 * days). A string a pattern searches by prefix or pages through in its order gets runs of
 * its two leading letters where its format spreads them (prefix_bounds), a uuid runs of its
 * leading hex digits (uuid_bounds); where such a pattern's column says nothing of how its
 * values spread, the table keeps hash buckets and says why (hash_why). */
static void range_bounds(builder *B, cq_table *t, const kp_pattern *p)
{
    if (t->buckets <= 1 || !t->ck_count) return;
    const cq_column *c0 = &t->cols[t->pk_count];
    const kp_attr *a = c0->attr;
    if (!a || c0->is_element) return;
    kp_type_kind kind = a->type.kind;
    if ((kind == KP_T_STRING || kind == KP_T_UUID) && (prefix_searched(p, a) || pages_in_order(p))) {
        char first = kind == KP_T_STRING ? leading_letter(a) : 0;
        if (kind == KP_T_UUID) uuid_bounds(B, t);
        else if (first) prefix_bounds(B, t, first);
        else t->hash_why = hash_why(B, t, p);
        return;
    }
    if (kind != KP_T_TIMESTAMP && kind != KP_T_DATE && kind != KP_T_INT) return;
    if (!a->min || !a->max) {
        if (pages_in_order(p)) t->hash_why = hash_why(B, t, p);
        return;
    }
    for (size_t i = 0; i < t->pk_count; i++)
        if (t->cols[i].attr && (t->cols[i].attr->type.kind == KP_T_TIMESTAMP || t->cols[i].attr->type.kind == KP_T_DATE)) return;
    int64_t lo = 0, hi = 0, day = kind == KP_T_TIMESTAMP ? 86400000 : 1;
    int32_t d0 = 0, d1 = 0;
    if (kind == KP_T_TIMESTAMP) {
        if (!cJSON_IsString(a->min) || !cJSON_IsString(a->max) || kp_timestamp_parse(a->min->valuestring, &lo) ||
            kp_timestamp_parse(a->max->valuestring, &hi))
            return;
    } else if (kind == KP_T_DATE) {
        if (!cJSON_IsString(a->min) || !cJSON_IsString(a->max) || kp_date_parse(a->min->valuestring, &d0) ||
            kp_date_parse(a->max->valuestring, &d1))
            return;
        lo = d0, hi = d1;
    } else {
        if (!cJSON_IsNumber(a->min) || !cJSON_IsNumber(a->max)) return;
        lo = (int64_t)ceil(a->min->valuedouble), hi = (int64_t)floor(a->max->valuedouble);
    }
    int64_t width = (hi - lo) / t->buckets;
    if (width < 1) return;
    if (kind == KP_T_TIMESTAMP && width >= day) width -= width % day;
    const cJSON **bounds = kp_arena_alloc(B->A, sizeof *bounds * (size_t)(t->buckets - 1));
    if (!bounds) { B->is_out_of_memory = 1; return; }
    for (int k = 1; k < t->buckets; k++) {
        int64_t v = lo + width * k;
        if (kind == KP_T_TIMESTAMP && width >= day) v -= ((v % day) + day) % day; /* midnight UTC */
        char text[32];
        if (kind == KP_T_TIMESTAMP) kp_timestamp_format(v, text);
        else if (kind == KP_T_DATE) kp_date_format((int32_t)v, text);
        else snprintf(text, sizeof text, "%lld", (long long)v);
        if (!(bounds[k - 1] = bound_node(B, kind == KP_T_INT ? cJSON_Raw : cJSON_String, text))) return;
    }
    t->bounds = bounds;
}

/* Completes a table (regular columns, sizes, name) and returns it or the identical one
 * that exists. */
/* `reversed`, when given: a table already drawn for the opposite order serves this one too,
 * read with ORDER BY (one partition: Cassandra reverses a read of one partition, not a merge
 * of hash buckets); *reversed says whether it does. */
static cq_table *finish_table(builder *B, cq_table *t, const kp_pattern *p, double partition_rows, int *reversed)
{
    if (reversed) *reversed = 0;
    const kp_entity *e = t->entity;
    t->row_bytes = record_bytes(e, 0);
    t->row_bytes_max = record_bytes(e, 1);
    t->max_partition_rows = partition_rows;
    if (!t->is_base && partition_rows > 1) {
        double by_rows = partition_rows / KP_CQ_PARTITION_ROWS, by_bytes = partition_rows * t->row_bytes / KP_CQ_PARTITION_BYTES;
        double need = ceil(by_rows > by_bytes ? by_rows : by_bytes);
        if (need > 1) t->buckets = need > KP_CQ_MAX_BUCKETS ? KP_CQ_MAX_BUCKETS : (int)need;
    }
    /* order: partition columns, bucket, clustering, statics, regular (rebuilt) */
    cq_column *old = t->cols;
    size_t n = t->col_count;
    t->cols = NULL;
    t->col_count = t->col_cap = 0;
    for (size_t i = 0; i < n; i++)
        if (old[i].role == CQ_PARTITION) *(cq_column *)kp_arena_push(B->A, (void **)&t->cols, &t->col_count, &t->col_cap, sizeof *old) = old[i];
    if (t->buckets > 1 || t->col_count == 0) {
        /* hash buckets, or a constant bucket 0 for a set no equality names */
        t->has_bucket = 1;
        add_col(B, t, NULL, NULL, CQ_PARTITION, 0);
    }
    t->pk_count = t->col_count;
    for (size_t i = 0; i < n; i++)
        if (old[i].role == CQ_CLUSTERING) *(cq_column *)kp_arena_push(B->A, (void **)&t->cols, &t->col_count, &t->col_cap, sizeof *old) = old[i];
    t->ck_count = t->col_count - t->pk_count;
    range_bounds(B, t, p);
    for (size_t i = 0; i < n; i++)
        if (old[i].role == CQ_STATIC) *(cq_column *)kp_arena_push(B->A, (void **)&t->cols, &t->col_count, &t->col_cap, sizeof *old) = old[i];
    for (size_t i = 0; i < e->attr_count; i++) {
        int have = 0;
        for (size_t k = 0; k < t->col_count; k++) have |= t->cols[k].attr == e->attrs[i] && t->cols[k].entity == e && !t->cols[k].is_element;
        if (!have) add_col(B, t, e->attrs[i], e, CQ_REGULAR, 0);
    }
    table_signature(B, t);
    cq_table *same = kp_strmap_get(&B->L->by_signature, t->signature);
    if (same) {
        cause(B, same, p);
        return same;
    }
    same = reversed && t->buckets <= 1 && t->ck_count ? kp_strmap_get(&B->L->by_signature, signature_of(B, t, 1)) : NULL;
    if (same) {
        cause(B, same, p);
        *reversed = 1;
        return same;
    }
    /* name: entity, or entity_by_<partition columns> */
    const char *name = snake(B->A, e->name);
    if (!t->is_base) {
        name = kp_arena_printf(B->A, "%s_by", name);
        for (size_t i = 0; i < t->pk_count; i++)
            if (t->cols[i].attr) name = kp_arena_printf(B->A, "%s_%s", name, t->cols[i].name);
        if (t->pk_count == 1 && !t->cols[0].attr) name = kp_arena_printf(B->A, "%s_bucket", name);
        for (size_t i = t->pk_count; i < t->pk_count + t->ck_count && i < t->pk_count + 1; i++)
            name = kp_arena_printf(B->A, "%s_%s", name, t->cols[i].name);
    }
    const char *base = name;
    for (int k = 2;; k++) {
        if (!kp_strmap_get(&B->L->by_name, name)) break;
        name = kp_arena_printf(B->A, "%s_%d", base, k);
    }
    t->name = name;
    t->rows = e->count;
    t->bytes = e->count * t->row_bytes;
    cause(B, t, p);
    if (kp_strmap_put(B->A, &B->L->by_signature, t->signature, t) || kp_strmap_put(B->A, &B->L->by_name, t->name, t)) return NULL;
    cq_table **slot = kp_arena_push(B->A, (void **)&B->L->tables, &B->L->table_count, &B->L->table_cap, sizeof *slot);
    if (!slot) return NULL;
    *slot = t;
    return t;
}

static cq_table *new_table(builder *B, const kp_entity *e)
{
    cq_table *t = kp_arena_alloc(B->A, sizeof *t);
    t->entity = e;
    return t;
}

static void add_key_rest(builder *B, cq_table *t)
{
    for (size_t k = 0; k < t->entity->key_count; k++) add_col(B, t, t->entity->key[k], t->entity, CQ_CLUSTERING, 0);
}

static void make_base_tables(builder *B)
{
    B->L->base = kp_arena_alloc(B->A, sizeof *B->L->base * (B->m->entity_count ? B->m->entity_count : 1));
    for (size_t e = 0; e < B->m->entity_count; e++) {
        const kp_entity *en = B->m->entities[e];
        cq_table *t = new_table(B, en);
        t->is_base = 1;
        for (size_t k = 0; k < en->key_count; k++) add_col(B, t, en->key[k], en, CQ_PARTITION, 0);
        t->why = kp_arena_printf(B->A, "every %s by its key: roots found by key, to-one hops, and the record writes start from",
                                 en->name);
        B->L->base[e] = finish_table(B, t, NULL, 1, NULL);
    }
}

/* ---- fetch trees --------------------------------------------------------------------------------- */

static cq_fetch *new_fetch(builder *B, cq_fetch_kind kind, const kp_entity *e)
{
    cq_fetch *f = kp_arena_alloc(B->A, sizeof *f);
    f->kind = kind;
    f->entity = e;
    return f;
}

static void add_child(builder *B, cq_fetch *parent, cq_fetch *child)
{
    if (kp_fetch_add_child(B->A, &parent->base, &child->base)) B->is_out_of_memory = 1;
}

static const cq_column *col_of(const cq_table *t, const kp_attr *a)
{
    for (size_t i = 0; i < t->col_count; i++)
        if (t->cols[i].attr == a && t->cols[i].role != CQ_STATIC) return &t->cols[i];
    return NULL;
}

static void add_bind(builder *B, cq_fetch *f, const cq_column *c, cq_src src, const kp_cond *cond, const kp_attr *from)
{
    cq_bind *nb = kp_arena_alloc(B->A, sizeof *nb * (f->bind_count + 1));
    if (f->bind_count) memcpy(nb, f->binds, sizeof *nb * f->bind_count);
    cq_bind *b = &nb[f->bind_count++];
    f->binds = nb;
    b->col = c;
    b->src = src;
    if (cond) {
        b->param = cond->value.param;
        b->literal = cond->value.literal;
        b->src = cond->value.param ? CQ_SRC_PARAM : CQ_SRC_LITERAL;
    }
    b->from = from;
}

static void add_client_cond(builder *B, cq_fetch *f, const kp_cond *c)
{
    const kp_cond **n = kp_arena_alloc(B->A, sizeof *n * (f->client_cond_count + 1));
    if (f->client_cond_count) memcpy(n, f->client_conds, sizeof *n * f->client_cond_count);
    n[f->client_cond_count++] = c;
    f->client_conds = n;
}

static int is_range_op(kp_op op) { return op != KP_OP_EQ; }

/* Is c the other bound of `range` on the same attribute (`>= :from` with `<= :until`)? Both
 * go in one clustering range, as a `between` does. */
static int closes_range(const kp_cond *range, const kp_cond *c)
{
    if (!range || c->path_len || range->path_len || c->attr != range->attr) return 0;
    int lower = range->op == KP_OP_GT || range->op == KP_OP_GE, upper = range->op == KP_OP_LT || range->op == KP_OP_LE;
    return (lower && (c->op == KP_OP_LT || c->op == KP_OP_LE)) || (upper && (c->op == KP_OP_GT || c->op == KP_OP_GE));
}

static int is_eq_bindable(const kp_cond *c)
{
    return c->path_len == 0 && c->op == KP_OP_EQ && (!c->value.param || !c->value.param->is_optional);
}

/* The pattern's bindable equality on root attribute a (the last one stated), or NULL. */
static const kp_cond *eq_on(const kp_pattern *p, const kp_attr *a)
{
    const kp_cond *found = NULL;
    for (size_t w = 0; w < p->where_count; w++)
        if (p->where[w].attr == a && is_eq_bindable(&p->where[w])) found = &p->where[w];
    return found;
}

/* Binds x to the value equality c gives: its parameter, or its literal. */
static void bind_to(cq_bind *x, const kp_cond *c)
{
    x->src = c->value.param ? CQ_SRC_PARAM : CQ_SRC_LITERAL;
    x->param = c->value.param;
    x->literal = c->value.literal;
}

static int64_t shape_limit(const kp_shape *s)
{
    if (!s) return 0;
    if (s->limit_param && s->limit_param->default_value && cJSON_IsNumber(s->limit_param->default_value))
        return (int64_t)s->limit_param->default_value->valuedouble;
    if (s->limit_param && s->limit_param->max && cJSON_IsNumber(s->limit_param->max)) return (int64_t)s->limit_param->max->valuedouble;
    return s->limit;
}

int kp_cq_partition_binds(const cq_table *t, const kp_attr *attr)
{
    for (size_t i = 0; i < t->pk_count; i++)
        if (t->cols[i].attr == attr) return 1;
    return 0;
}

/* Is the clustering of t (after its bound columns) the order the shape declares — within
 * one partition (one bucket of a bucketed table)? */
static int clustering_serves(const cq_table *t, const kp_shape *s, const cq_column *range_col, int reversed)
{
    size_t c = t->pk_count;
    if (range_col && c < t->pk_count + t->ck_count && &t->cols[c] == range_col) {
        /* rows come in the range column's order: the listing's only when its order (declared,
         * or its key's when none is declared) starts with that column */
        if (s->order_count == 0 || s->order[0].attr != range_col->attr) return s->order_count == 0;
    }
    /* the clustering columns in order; an order key the partition key binds by equality
     * is one value within the partition wherever it stands (a child keyed [postId, id]
     * ordered by createdAt, then postId, then id: postId is the partition) */
    size_t k = 0;
    while (k < s->order_count) {
        if (kp_cq_partition_binds(t, s->order[k].attr)) { k++; continue; }
        if (c >= t->pk_count + t->ck_count) return 0;
        const cq_column *col = &t->cols[c];
        if ((col->attr != s->order[k].attr && col->as_target != s->order[k].attr) || (col->is_desc != reversed) != s->order[k].is_desc)
            return 0;
        c++;
        k++;
    }
    return 1;
}

/* Does one SELECT on t return the rows in the order the shape declares? */
static int is_served_order(const cq_table *t, const kp_shape *s, const cq_column *range_col, int reversed)
{
    if (!s || t->buckets > 1) return !s || !s->declared_order_count;
    return clustering_serves(t, s, range_col, reversed);
}

/* Can each bucket of a bucketed listing answer in the shape's order, so every bucket's
 * SELECT stops at the page (LIMIT) and the client only merges? A later page of a
 * token-paged listing then starts each bucket strictly after the token with one tuple
 * slice on the clustering columns: all of them must read in one direction (a tuple
 * compares values, not clustering order) and no other range may restrict them. */
static int buckets_merge(cq_fetch *f, const kp_shape *s, const kp_pattern *p)
{
    const cq_table *t = f->table;
    /* an offset page reads offset + limit rows of each bucket (one partition: the same
     * rule, the client skips to the page); an offset without a max has no such bound */
    int is_offset = s->page == KP_PAGE_OFFSET;
    int served = t && t->ck_count && clustering_serves(t, s, f->range_col, f->is_reversed);
    /* one partition in the order: the server pages it (finish_each), unless an offset page */
    if (!t || f->client_cond_count || !t->ck_count || (t->buckets <= 1 && !is_offset && served)) return 0;
    if (is_offset && (s != p->paged || kp_shape_offset_max(s) < 0)) return 0;
    if (!served) {
        /* the first clustering column is the order's first part: a page of each bucket (or of
         * the one partition) and the rows that tie with its last on that column hold its share
         * of the page, where reading the partition whole would be the alternative;
         * a later page starts at the token's first value (inclusive), so a range may only be
         * on that column */
        const cq_column *c0 = &t->cols[t->pk_count];
        size_t k = 0;
        while (k < s->order_count && kp_cq_partition_binds(t, s->order[k].attr)) k++;
        if (k >= s->declared_order_count || (c0->attr != s->order[k].attr && c0->as_target != s->order[k].attr) ||
            (c0->is_desc != f->is_reversed) != s->order[k].is_desc)
            return 0;
        if (f->range && f->range_col != c0) return 0;
        f->reads_ties = 1;
        return 1;
    }
    if (s != p->paged || s->page != KP_PAGE_TOKEN) return 1;
    /* a later page is a tuple slice after the token (execute.c); a range beside it must be on
     * the first clustering column, written as 1-tuples */
    if (f->range && f->range_col != &t->cols[t->pk_count]) return 0;
    for (size_t c = t->pk_count; c < t->pk_count + t->ck_count; c++)
        if (t->cols[c].is_desc != t->cols[t->pk_count].is_desc) return 0;
    return 1;
}

/* A query table of entity e: partition = eq attrs (already added), then range attr,
 * order keys, key. */
static cq_table *query_table(builder *B, cq_table *t, const kp_attr *range, const kp_shape *order, const kp_pattern *p,
                             double partition_rows, int *reversed)
{
    if (range) add_col(B, t, range, t->entity, CQ_CLUSTERING, order && order->order_count && order->order[0].attr == range ? order->order[0].is_desc : 0);
    for (size_t k = 0; order && k < order->order_count; k++) {
        /* a clustering column cannot be null: the order stops at an optional attribute
         * (the client restores it) */
        if (order->order[k].attr->is_optional && order->order[k].attr->key_index < 0) break;
        int bound = 0;
        for (size_t i = 0; i < t->col_count; i++) bound |= t->cols[i].attr == order->order[k].attr && t->cols[i].role == CQ_PARTITION;
        if (!bound && order->order[k].attr->entity == t->entity) add_col(B, t, order->order[k].attr, t->entity, CQ_CLUSTERING, order->order[k].is_desc);
    }
    add_key_rest(B, t);
    return finish_table(B, t, p, partition_rows, reversed);
}

/* Rows per partition when `attr` is bound by equality. */
static double eq_partition_rows(const kp_entity *e, const kp_attr *const *attrs, size_t n, const kp_shape *s)
{
    double rows = e->count;
    for (size_t i = 0; i < n; i++) {
        const kp_attr *a = attrs[i];
        if (a->is_unique) return 1;
        if (a->type.kind == KP_T_ENUM && a->type.enum_count) rows /= (double)a->type.enum_count;
        else if (a->type.kind == KP_T_BOOL) rows /= 2;
        else {
            /* a foreign key: the relation's fan-out */
            double best = 0;
            for (size_t r = 0; r < e->rel_count; r++) {
                const kp_relation *rel = e->rels[r]->relation;
                if (rel->link == KP_LINK_FOREIGN_KEY && rel->holder == e)
                    for (size_t k = 0; k < rel->fk_count; k++)
                        if (rel->fk_attrs[k] == a) best = rel->fanout.max > 0 ? rel->fanout.max : rel->fanout.avg;
            }
            if (best > 0) rows = best < rows ? best : rows;
            else if (s && s->expect.is_given) rows = s->expect.max > 0 ? s->expect.max : s->expect.avg;
            else rows = rows / 1000 > 1 ? rows / 1000 : 1;
        }
    }
    return rows;
}

typedef struct walk {
    builder *B;
    const kp_pattern *p;
    int is_ok;
} walk;

static void defect(walk *W, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void defect(walk *W, const char *fmt, ...)
{
    char buf[600];
    va_list ap;
    va_start(ap, fmt);
    kp_vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    kp_design_defect(W->B->d, W->p, "%s: %s", W->p->name, buf);
    W->is_ok = 0;
}

static void plan_members(walk *W, cq_fetch *f, const kp_shape *s);

/* Record(s) of r->target by key, the key values coming from the parent's attributes. */
static cq_fetch *by_key(walk *W, const kp_rel *r, const kp_attr *const *from, const kp_attr *const *to, size_t n, int is_element)
{
    builder *B = W->B;
    const kp_entity *target = r->target;
    cq_fetch *f = new_fetch(B, CQ_SELECT, target);
    f->table = B->L->base[target->index];
    cause(B, (cq_table *)f->table, W->p);
    f->rel = r;
    f->is_by_key = 1;
    for (size_t k = 0; k < target->key_count; k++) {
        const kp_attr *src = NULL;
        for (size_t i = 0; i < n; i++)
            if (to[i] == target->key[k]) src = from[i];
        if (!src) { defect(W, "the key of %s is not known from %s", target->name, r->source->name); return f; }
        add_bind(B, f, col_of(f->table, target->key[k]), CQ_SRC_PARENT, NULL, src);
        f->binds[f->bind_count - 1].is_element = is_element;
    }
    return f;
}

/* The fetch of one relation hop from records of r->source; `s` the node it feeds (its
 * conditions, order and limit apply when it is the last hop). */
/* The name of the column of t that copies r's target's `a`: "<relation>_<attribute>", made
 * unique in t. */
static const char *copy_col_name(builder *B, const cq_table *t, const kp_rel *r, const kp_attr *a)
{
    const char *base = kp_arena_printf(B->A, "%s_%s", snake(B->A, r->name ? r->name : r->target->name), snake(B->A, a->name));
    const char *name = base;
    for (int k = 2;; k++) {
        int clash = 0;
        for (size_t i = 0; i < t->col_count; i++) clash |= t->cols[i].name && t->cols[i].via != r && !strcmp(t->cols[i].name, name);
        if (!clash) return name;
        name = kp_arena_printf(B->A, "%s_%d", base, k);
    }
}

/* Will the join rows of an N:M listing copy what it returns of its targets
 * (kp_copy_join_likely: rows per request, the page or the fan-out)? */
static int join_copies_likely(walk *W, const kp_rel *r, const kp_shape *os)
{
    double rows = shape_limit(os) > 0 ? (double)shape_limit(os) : r->fanout && r->fanout->avg > 0 ? r->fanout->avg : 1;
    return kp_copy_join_likely(W->B->m, W->B->mix, W->p, r, os, rows, attr_bytes);
}

static cq_fetch *hop_fetch(walk *W, const kp_rel *r, const kp_shape *s, int is_last)
{
    builder *B = W->B;
    const kp_relation *rel = r->relation;
    const kp_shape *os = is_last && s && s->kind == KP_SHAPE_EACH ? s : NULL;
    if (rel->link == KP_LINK_FOREIGN_KEY) {
        if (rel->holder == r->source) /* to-one: the source holds the target's key */
            return by_key(W, r, (const kp_attr *const *)rel->fk_attrs, (const kp_attr *const *)rel->ref_attrs, rel->fk_count, 0);
        /* the targets hold the source's key: a table partitioned by the foreign key */
        cq_table *t = new_table(B, r->target);
        size_t neq = 0;
        for (size_t k = 0; k < rel->fk_count && neq < 16; k++, neq++) add_col(B, t, rel->fk_attrs[k], r->target, CQ_PARTITION, 0);
        const kp_cond *range = NULL;
        cq_fetch *f = new_fetch(B, CQ_SELECT, r->target);
        f->rel = r;
        for (size_t i = 0; is_last && s && i < s->where_count; i++) {
            const kp_cond *c = &s->where[i];
            if (is_eq_bindable(c) && neq < 16) {
                add_col(B, t, c->attr, r->target, CQ_PARTITION, 0);
                neq++;
            } else if (c->path_len == 0 && is_range_op(c->op) && !range && kp_type_is_orderable(c->attr->type.kind) &&
                       (!os || !os->order_count || os->order[0].attr == c->attr)) {
                range = c;
            } else if (!f->range_hi && closes_range(range, c)) {
                f->range_hi = c;
            } else {
                add_client_cond(B, f, c);
            }
        }
        double rows = r->fanout && r->fanout->max > 0 ? r->fanout->max : (r->fanout ? r->fanout->avg : 1);
        f->table = query_table(B, t, range ? range->attr : NULL, os, W->p, rows, &f->is_reversed);
        for (size_t k = 0; k < rel->fk_count; k++) add_bind(B, f, col_of(f->table, rel->fk_attrs[k]), CQ_SRC_PARENT, NULL, rel->ref_attrs[k]);
        for (size_t i = 0; is_last && s && i < s->where_count; i++)
            if (is_eq_bindable(&s->where[i])) add_bind(B, f, col_of(f->table, s->where[i].attr), CQ_SRC_PARAM, &s->where[i], NULL);
        if (range) { f->range = range; f->range_col = col_of(f->table, range->attr); }
        return f;
    }
    if (rel->link == KP_LINK_THROUGH) {
        /* rows of the join entity partitioned by the source's key, then the targets */
        const kp_entity *j = rel->through;
        int forward = !r->is_inverse;
        kp_attr **mine = forward ? rel->through_from : rel->through_to;
        kp_attr **theirs = forward ? rel->through_to : rel->through_from;
        size_t nmine = forward ? rel->through_from_count : rel->through_to_count;
        size_t ntheirs = forward ? rel->through_to_count : rel->through_from_count;
        cq_table *t = new_table(B, j);
        for (size_t k = 0; k < nmine; k++) add_col(B, t, mine[k], j, CQ_PARTITION, 0);
        /* order by the target's key = the join entity's columns that hold it; by another
         * attribute of the targets, which the join rows will copy (join_copies_likely), = the
         * copy, a clustering column like the documentation's posts_by_tag (published_at) */
        int ordered = 1, copies = join_copies_likely(W, r, os);
        for (size_t k = 0; os && k < os->order_count; k++) {
            const kp_attr *a = os->order[k].attr;
            int found = 0;
            if (a->key_index >= 0 && (size_t)a->key_index < ntheirs) {
                add_col(B, t, theirs[a->key_index], j, CQ_CLUSTERING, os->order[k].is_desc);
                found = 1;
            } else if (copies && a->entity == r->target && !a->is_optional) {
                cq_column *c = add_col(B, t, a, r->target, CQ_CLUSTERING, os->order[k].is_desc);
                if (c) {
                    c->via = r;
                    c->as_target = a;
                    c->name = copy_col_name(B, t, r, a);
                    c->quoted = quoted(B->A, c->name);
                }
                found = 1;
            }
            if (!found) { ordered = 0; break; }
        }
        add_key_rest(B, t);
        double rows = r->fanout && r->fanout->max > 0 ? r->fanout->max : 1;
        cq_fetch *f = new_fetch(B, CQ_SELECT, j);
        f->rel = r;
        f->is_join = 1;
        f->table = finish_table(B, t, W->p, rows, NULL);
        for (size_t k = 0; copies && ordered && k < ntheirs; k++) {
            cq_column *c = (cq_column *)col_of(f->table, theirs[k]);
            if (c) c->as_target = r->target->key[k];
        }
        const kp_entity *src = r->source;
        for (size_t k = 0; k < nmine && k < src->key_count; k++) add_bind(B, f, col_of(f->table, mine[k]), CQ_SRC_PARENT, NULL, src->key[k]);
        /* hash buckets come back in no common order: a page needs them all, merged in the client */
        f->is_server_ordered = ordered && is_served_order(f->table, NULL, NULL, 0) && f->table->buckets <= 1;
        if (os && kp_shape_reads_only_key(os, r->target) && ordered && os->order_count && f->table->buckets > 1 &&
            ntheirs == r->target->key_count) {
            /* the rows hold the targets' keys in the listing's order: each bucket answers its
             * share of the page in order (LIMIT), like any bucketed listing (finish_each) */
            for (size_t k = 0; k < ntheirs; k++) {
                cq_column *c = (cq_column *)col_of(f->table, theirs[k]);
                if (c) c->as_target = r->target->key[k];
            }
            f->is_join = 0;
            f->is_join_keys = 1;
            return f;
        }
        cq_fetch *target;
        if (os && kp_shape_reads_only_key(os, r->target)) {
            target = new_fetch(B, CQ_KEYS, r->target);
        } else {
            const kp_attr *to[16];
            for (size_t k = 0; k < ntheirs && k < 16; k++) to[k] = r->target->key[k];
            target = by_key(W, r, (const kp_attr *const *)theirs, to, ntheirs, 0);
        }
        target->rel = r;
        f->base.next_hop = &target->base;
        if (!ordered) f->is_client_ordered = 1;
        return f;
    }
    /* KP_LINK_ARRAY */
    const kp_attr *arr = rel->array_attr;
    if (!r->is_inverse) {
        cq_fetch *f;
        if (os && kp_shape_reads_only_key(os, r->target) && r->target->key_count == 1) {
            f = new_fetch(B, CQ_KEYS, r->target);
            f->rel = r;
        } else {
            const kp_attr *to = r->target->key[0];
            f = by_key(W, r, &arr, &to, 1, 1);
        }
        return f;
    }
    /* the entities whose array holds the source's key: one row per element */
    cq_table *t = new_table(B, r->target);
    cq_column *c = add_col(B, t, arr, r->target, CQ_PARTITION, 0);
    if (c) {
        c->is_element = 1;
        c->name = kp_arena_printf(B->A, "%s_element", c->name);
        c->quoted = quoted(B->A, c->name);
        const kp_type *it = arr->type.item;
        c->cql_type = it ? kp_arena_strdup(B->A, kp_cq_type_text(it, &c->is_json)) : "text";
        kp_cql_type_parse(c->cql_type, B->A, &c->type, B->err);
    }
    cq_fetch *f = new_fetch(B, CQ_SELECT, r->target);
    f->rel = r;
    double rows = r->fanout && r->fanout->max > 0 ? r->fanout->max : 1;
    f->table = query_table(B, t, NULL, os, W->p, rows, &f->is_reversed);
    /* a record has a row per element of its array (the relation's fan-out from the holder) */
    cq_table *et = (cq_table *)f->table;
    et->rows_per_record = rel->fanout.avg > 0 ? rel->fanout.avg : 1;
    et->rows = et->entity->count * et->rows_per_record;
    et->bytes = et->rows * et->row_bytes;
    for (size_t i = 0; i < f->table->pk_count; i++)
        if (f->table->cols[i].is_element) add_bind(B, f, &f->table->cols[i], CQ_SRC_PARENT, NULL, r->source->key[0]);
    return f;
}

static void finish_each(walk *W, cq_fetch *last, const kp_shape *s)
{
    if (!s || s->kind != KP_SHAPE_EACH) return;
    if (last->kind == CQ_SELECT && !last->is_join) {
        last->is_server_ordered = is_served_order(last->table, s, last->range_col, last->is_reversed) && last->table->buckets <= 1;
    }
    int client = !last->is_server_ordered && s->order_count; /* none declared: the key's order */
    if (last->client_cond_count || s->page == KP_PAGE_OFFSET || (last->table && last->table->buckets > 1)) client = 1;
    if (s == W->p->paged && s->page == KP_PAGE_TOKEN && (client || last->kind != CQ_SELECT || last->is_join)) client = 1;
    if (last->kind == CQ_KEYS || (last->rel && last->rel->relation->link == KP_LINK_ARRAY && !last->rel->is_inverse)) client = 1;
    last->is_client_ordered = client || last->is_client_ordered;
    if (last->kind == CQ_SELECT && !last->is_join && !last->client_cond_count) {
        last->is_merged = buckets_merge(last, s, W->p);
        if (last->is_server_ordered && s == W->p->paged && s->page == KP_PAGE_TOKEN && last->table->buckets <= 1) last->is_paged = 1;
        else if (last->is_server_ordered || last->is_merged) {
            last->limit = shape_limit(s);
            last->limit_param = s->limit_param;
        }
    }
}

/* A listing two 1:N hops away (the order lines of a user's orders) that the last entity's
 * own attributes select and order: a query table of its rows partitioned by the
 * first hop's reference, which they copy over the second hop's inverse (a line holds its
 * order's user_id, kept in step by the writes), then the equalities, clustered as the
 * listing asks (Chebotko: the table holds what the query reads). One SELECT (with the
 * page's LIMIT), where a SELECT per intermediate record would read all their rows and sort
 * in the client. NULL: the shape is not such a listing. */
static cq_fetch *two_hop_table(walk *W, const kp_shape *s)
{
    builder *B = W->B;
    if (s->kind != KP_SHAPE_EACH || s->hop_count != 2 || s->page == KP_PAGE_OFFSET) return NULL;
    for (size_t i = 0; i < 2; i++) {
        const kp_relation *rel = s->hops[i]->relation;
        if (s->hops[i]->is_inverse || rel->link != KP_LINK_FOREIGN_KEY || rel->holder != rel->to || !s->hops[i]->is_many ||
            !s->hops[i]->fanout)
            return NULL;
    }
    const kp_entity *e = s->hops[1]->target;
    for (size_t i = 0; i < s->order_count; i++)
        if (s->order[i].attr->entity != e || s->order[i].attr->is_optional) return NULL;
    const kp_cond *range = NULL, *range_hi = NULL;
    for (size_t i = 0; i < s->where_count; i++) {
        const kp_cond *c = &s->where[i];
        if (is_eq_bindable(c)) continue;
        if (c->path_len == 0 && is_range_op(c->op) && !range && kp_type_is_orderable(c->attr->type.kind) &&
            (!s->order_count || s->order[0].attr == c->attr))
            range = c;
        else if (!range_hi && closes_range(range, c)) range_hi = c;
        else return NULL; /* a test the client would make */
    }
    const kp_relation *outer = s->hops[0]->relation;
    const kp_rel *up = &s->hops[1]->relation->inverse; /* a line -> its order */
    cq_table *t = new_table(B, e);
    for (size_t k = 0; k < outer->fk_count; k++) {
        cq_column *c = add_col(B, t, outer->fk_attrs[k], outer->holder, CQ_PARTITION, 0);
        if (!c) return NULL;
        c->via = up;
        c->name = copy_col_name(B, t, up, outer->fk_attrs[k]);
        c->quoted = quoted(B->A, c->name);
    }
    const kp_attr *eq_attrs[16];
    size_t neq = 0;
    for (size_t i = 0; i < s->where_count && neq < 16; i++)
        if (is_eq_bindable(&s->where[i]) && add_col(B, t, s->where[i].attr, e, CQ_PARTITION, 0)) eq_attrs[neq++] = s->where[i].attr;
    /* rows of the largest partition: the largest parent's children at their average size,
     * or the average parent's at their largest (both at their maxima at once would size
     * every partition for a parent that is not in the model's data), the equalities' share */
    const kp_fanout *f0 = s->hops[0]->fanout, *f1 = s->hops[1]->fanout;
    double rows = f0->max * f1->avg > f0->avg * f1->max ? f0->max * f1->avg : f0->avg * f1->max;
    double share = eq_partition_rows(e, eq_attrs, neq, NULL) / (e->count > 0 ? e->count : 1);
    if (neq && share > 0 && share < 1) rows *= share;
    cq_fetch *f = new_fetch(B, CQ_SELECT, e);
    /* the path as one hop (its fan-out the product of both): from the first hop's source */
    const kp_rel *path = kp_copy_two_hop_path(B->A, s->hops[0], s->hops[1]);
    if (!path) return NULL;
    f->rel = path;
    f->table = query_table(B, t, range ? range->attr : NULL, s, W->p, rows, &f->is_reversed);
    for (size_t k = 0; k < outer->fk_count; k++) {
        const cq_column *c = NULL;
        for (size_t i = 0; i < f->table->pk_count && !c; i++)
            if (f->table->cols[i].via == up && f->table->cols[i].attr == outer->fk_attrs[k]) c = &f->table->cols[i];
        add_bind(B, f, c, CQ_SRC_PARENT, NULL, outer->ref_attrs[k]);
    }
    for (size_t i = 0; i < s->where_count; i++)
        if (is_eq_bindable(&s->where[i])) add_bind(B, f, col_of(f->table, s->where[i].attr), CQ_SRC_PARAM, &s->where[i], NULL);
    if (range) {
        f->range = range;
        f->range_col = col_of(f->table, range->attr);
        f->range_hi = range_hi;
    }
    kp_decision *x = kp_design_decide(
        B->d, f->table->name,
        kp_arena_printf(B->A, "query table of %s rows partitioned by their copy of %s.%s", e->name, s->hops[0]->target->name,
                        outer->fk_attrs[0]->name),
        kp_arena_printf(B->A, "'%s' lists the %s of a %s's %s: each %s row copies its %s's reference to the %s (kept in step by "
                              "the writes), so one SELECT reads a page in the listing's order, where a SELECT per %s would read "
                              "all their rows and sort them in the client",
                        W->p->name, s->hops[1]->name ? s->hops[1]->name : e->name, s->hops[0]->source->name,
                        s->hops[0]->name ? s->hops[0]->name : s->hops[0]->target->name, e->name, s->hops[0]->target->name,
                        s->hops[0]->source->name, s->hops[0]->target->name));
    kp_decision_add_pattern(B->d, x, W->p);
    return f;
}

/* An $each / $one / $count node: the chain of hops; returns the first fetch. */
static cq_fetch *node_fetch(walk *W, const kp_shape *s)
{
    builder *B = W->B;
    cq_fetch *two_hop = two_hop_table(W, s);
    if (two_hop) {
        two_hop->shape = s;
        finish_each(W, two_hop, s);
        plan_members(W, two_hop, s);
        return two_hop;
    }
    if (s->kind == KP_SHAPE_COUNT) {
        /* a derived count the record holds */
        const kp_entity *e = s->hops[0]->source;
        for (size_t a = 0; a < e->attr_count; a++) {
            const kp_derived *d = e->attrs[a]->derived;
            if (d && d->fn == KP_AGG_COUNT && d->path_len == s->hop_count && !memcmp(d->path, s->hops, sizeof *d->path * d->path_len)) {
                cq_fetch *f = new_fetch(B, CQ_DERIVED, e);
                f->shape = s;
                return f;
            }
        }
        if (s->hop_count != 1) { defect(W, "$count over %zu hops has no table that counts it", s->hop_count); return NULL; }
        cq_fetch *f = hop_fetch(W, s->hops[0], s, 1);
        f->kind = CQ_COUNT;
        f->base.next_hop = NULL;
        f->shape = s;
        return f;
    }
    cq_fetch *first = NULL, *prev = NULL;
    for (size_t h = 0; h < s->hop_count; h++) {
        cq_fetch *f = hop_fetch(W, s->hops[h], s, h + 1 == s->hop_count);
        if (!first) first = f;
        if (prev) {
            cq_fetch *end = prev;
            while (kp_cq_next_hop(end)) end = kp_cq_next_hop(end);
            end->base.next_hop = &f->base;
        }
        prev = f;
    }
    cq_fetch *last = first;
    while (kp_cq_next_hop(last)) last = kp_cq_next_hop(last);
    last->shape = s;
    if (s->kind == KP_SHAPE_EACH) {
        finish_each(W, last, s);
        if (s->hop_count > 1 || last != first) last->is_client_ordered = last->is_client_ordered || (s->declared_order_count > 0 && !first->is_server_ordered) || s->hop_count > 1;
        if (last != first) last->is_merged = 0;
        if (last->is_client_ordered && last->kind == CQ_SELECT && !last->is_merged) { last->is_paged = 0; last->limit = 0; last->limit_param = NULL; }
        /* a join read in the order of the targets' keys can stop at the limit */
        if (first->is_join && first->is_server_ordered && !last->is_client_ordered) {
            first->limit = shape_limit(s);
            first->limit_param = s->limit_param;
        }
        /* the targets of a join read in their key's order come in that order: their keys
         * (CQ_KEYS), or one SELECT by key per join row, answered in the rows' order */
        int keeps_order = first->is_join && first->is_server_ordered && first != last &&
                          (last->kind == CQ_KEYS || (last->is_by_key && kp_cq_next_hop(first) == last));
        if (keeps_order && s == W->p->paged && s->page == KP_PAGE_TOKEN) {
            /* the join's rows page with Cassandra's paging state; the targets are that page's */
            first->is_paged = 1;
            first->limit = 0;
            first->limit_param = NULL;
            last->is_paged = 0;
            last->limit = 0;
            last->limit_param = NULL;
            last->is_client_ordered = 0;
        } else if (keeps_order) {
            first->limit = shape_limit(s);
            first->limit_param = s->limit_param;
            last->is_client_ordered = 0;
        }
    }
    plan_members(W, last, s);
    return first;
}

/* To-one hops of a leaf or a condition path: fetches linked by rel under f. */
static void leaf_hops(walk *W, cq_fetch *f, kp_rel *const *path, size_t n)
{
    cq_fetch *at = f;
    for (size_t i = 0; i < n; i++) {
        cq_fetch *found = NULL;
        for (size_t c = 0; c < at->base.child_count; c++)
            if (kp_cq_child(at, c)->edge_rel == path[i]) found = kp_cq_child(at, c);
        if (!found) {
            found = hop_fetch(W, path[i], NULL, 1);
            found->edge_rel = path[i];
            if (found->kind == CQ_SELECT && found->table && !found->table->is_base) found->is_client_ordered = 0;
            add_child(W->B, at, found);
        }
        at = found;
    }
}

static void plan_members(walk *W, cq_fetch *f, const kp_shape *s)
{
    if (!s) return;
    if (s->value && s->value->kind == KP_SHAPE_ATTR && s->value->path_len) leaf_hops(W, f, s->value->path, s->value->path_len);
    for (size_t i = 0; i < s->member_count; i++) {
        const kp_shape *m = s->members[i];
        switch (m->kind) {
        case KP_SHAPE_ATTR:
            if (m->path_len) leaf_hops(W, f, m->path, m->path_len);
            break;
        case KP_SHAPE_OBJECT:
            plan_members(W, f, m);
            break;
        case KP_SHAPE_EACH: case KP_SHAPE_ONE: case KP_SHAPE_COUNT: {
            if (m->is_root_set) { plan_members(W, f, m); break; }
            if (m->counted_by) break; /* the listing beside it answers it */
            cq_fetch *c = node_fetch(W, m);
            if (c) add_child(W->B, f, c);
            break;
        }
        default:
            break;
        }
    }
}

static const kp_shape *root_set_shape(const kp_shape *s)
{
    if (!s) return NULL;
    if (s->kind == KP_SHAPE_EACH && s->is_root_set) return s;
    for (size_t i = 0; i < s->member_count; i++) {
        const kp_shape *x = root_set_shape(s->members[i]);
        if (x) return x;
    }
    return NULL;
}

/* Only leaves of the root's own attributes (no hops), parameters, tokens, objects of
 * those, and exactly one $each: the parent + children fit one SELECT with statics. */
static int static_candidate(const kp_shape *s, const kp_shape **each, int depth)
{
    for (size_t i = 0; i < s->member_count; i++) {
        const kp_shape *m = s->members[i];
        if (m->kind == KP_SHAPE_ATTR && m->path_len) return 0;
        if (m->kind == KP_SHAPE_OBJECT && !static_candidate(m, each, depth + 1)) return 0;
        if (m->kind == KP_SHAPE_ONE || m->kind == KP_SHAPE_COUNT) return 0;
        if (m->kind == KP_SHAPE_EACH) {
            if (*each || depth) return 0;
            *each = m;
        }
    }
    return 1;
}

static void root_attrs(const kp_shape *s, const kp_attr **out, size_t *n, size_t max)
{
    for (size_t i = 0; i < s->member_count; i++) {
        const kp_shape *m = s->members[i];
        if (m->kind == KP_SHAPE_ATTR && !m->path_len && *n < max) {
            int have = 0;
            for (size_t k = 0; k < *n; k++) have |= out[k] == m->attr;
            if (!have) out[(*n)++] = m->attr;
        }
        if (m->kind == KP_SHAPE_OBJECT) root_attrs(m, out, n, max);
    }
}

/* Children of a root found by key whose partition key is the root's key: the values are
 * the parameters already, so they go out with the root's SELECT (same round trip). */
static void bind_from_parameters(builder *B, const kp_pattern *p, cq_fetch *root)
{
    (void)B;
    for (size_t i = 0; i < root->base.child_count; i++) {
        cq_fetch *c = kp_cq_child(root, i);
        if ((c->kind != CQ_SELECT && c->kind != CQ_COUNT) || !c->bind_count || c->edge_rel) continue;
        int ok = 1;
        for (size_t b = 0; b < c->bind_count && ok; b++) {
            const cq_bind *x = &c->binds[b];
            if (x->src != CQ_SRC_PARENT) continue;
            ok = !x->is_element && x->from->entity == p->root && x->from->key_index >= 0 && eq_on(p, x->from);
        }
        if (!ok) continue;
        for (size_t b = 0; b < c->bind_count; b++)
            if (c->binds[b].src == CQ_SRC_PARENT) bind_to(&c->binds[b], eq_on(p, c->binds[b].from));
        c->base.is_independent = 1;
    }
}

static cq_fetch *plan_pattern(builder *B, const kp_pattern *p)
{
    walk W = {B, p, 1};
    const kp_entity *e = p->root;
    cq_fetch *root = new_fetch(B, CQ_SELECT, e);
    root->is_root = 1;
    /* by key? */
    int by_key = !p->is_root_set;
    for (size_t k = 0; by_key && k < e->key_count; k++) {
        int found = 0;
        for (size_t i = 0; i < p->where_count; i++) found |= is_eq_bindable(&p->where[i]) && p->where[i].attr == e->key[k];
        by_key = found;
    }
    if (by_key) {
        root->table = B->L->base[e->index];
        cause(B, (cq_table *)root->table, p);
        for (size_t k = 0; k < e->key_count; k++)
            for (size_t i = 0; i < p->where_count; i++)
                if (is_eq_bindable(&p->where[i]) && p->where[i].attr == e->key[k]) {
                    add_bind(B, root, col_of(root->table, e->key[k]), CQ_SRC_PARAM, &p->where[i], NULL);
                    break;
                }
        for (size_t i = 0; i < p->where_count; i++) {
            const kp_cond *c = &p->where[i];
            if (!(is_eq_bindable(c) && c->attr->key_index >= 0)) {
                if (c->path_len) leaf_hops(&W, root, c->path, c->path_len);
                add_client_cond(B, root, c);
            }
        }
    } else {
        const kp_shape *rs = root_set_shape(p->returns);
        cq_table *t = new_table(B, e);
        const kp_attr *eq[16];
        size_t neq = 0;
        const kp_cond *range = NULL;
        for (size_t i = 0; i < p->where_count; i++) {
            const kp_cond *c = &p->where[i];
            if (is_eq_bindable(c) && neq < 16) {
                add_col(B, t, c->attr, e, CQ_PARTITION, 0);
                eq[neq++] = c->attr;
            } else if (c->path_len == 0 && is_range_op(c->op) && !range && kp_type_is_orderable(c->attr->type.kind) &&
                       (!rs || !rs->order_count || rs->order[0].attr == c->attr || neq == 0)) {
                range = c;
            } else if (!root->range_hi && closes_range(range, c)) {
                root->range_hi = c;
            }
        }
        for (size_t i = 0; i < p->where_count; i++) {
            const kp_cond *c = &p->where[i];
            if (c == range || c == root->range_hi || (is_eq_bindable(c))) continue;
            if (c->path_len) leaf_hops(&W, root, c->path, c->path_len);
            add_client_cond(B, root, c);
        }
        double rows = neq ? eq_partition_rows(e, eq, neq, rs) : e->count;
        if (range && rs && rs->order_count && rs->order[0].attr != range->attr) {
            /* the range column leads the clustering; the order is restored in the client */
        }
        root->table = query_table(B, t, range ? range->attr : NULL, rs, p, rows, &root->is_reversed);
        for (size_t i = 0; i < p->where_count; i++)
            if (is_eq_bindable(&p->where[i])) add_bind(B, root, col_of(root->table, p->where[i].attr), CQ_SRC_PARAM, &p->where[i], NULL);
        if (range) { root->range = range; root->range_col = col_of(root->table, range->attr); }
        if (rs) {
            root->shape = rs;
            finish_each(&W, root, rs);
        } else if (!p->is_root_set) {
            root->limit = 0;
        }
        if (!neq) {
            const char *why = kp_arena_printf(B->A, "%s has no equality condition: its rows live in %s partition%s of one "
                                              "table keyed by a %s", p->name, root->table->buckets <= 1 ? "a single" : root->table->bounds ? "the range-bucket" : "the hash-bucket",
                                              root->table->buckets > 1 ? "s" : "", root->table->buckets > 1 ? "bucket" : "constant");
            kp_decision *dc = kp_design_decide(B->d, root->table->name, "rows of the whole set under a bucketed partition key", why);
            kp_decision_add_pattern(B->d, dc, p);
        }
    }
    /* members of the root */
    const kp_shape *each = NULL;
    if (!p->is_root_set && by_key && p->returns->kind == KP_SHAPE_OBJECT && !root->client_cond_count &&
        static_candidate(p->returns, &each, 0) && each && each->hop_count == 1) {
        const kp_rel *r = each->hops[0];
        const kp_relation *rel = r->relation;
        int fits = rel->link == KP_LINK_FOREIGN_KEY && rel->holder == r->target && r->source == e && rel->fk_count == e->key_count;
        for (size_t k = 0; fits && k < rel->fk_count; k++) fits = rel->ref_attrs[k] == e->key[k];
        const kp_attr *ra[64];
        size_t nra = 0;
        root_attrs(p->returns, ra, &nra, 64);
        size_t nonkey = 0;
        for (size_t i = 0; i < nra; i++) nonkey += ra[i]->key_index < 0;
        if (fits && nonkey) {
            /* the children's table carries the parent's attributes as static columns */
            cq_table *t = new_table(B, r->target);
            t->parent = e;
            t->parent_keys = kp_arena_alloc(B->A, sizeof *t->parent_keys * (rel->fk_count + 1));
            for (size_t k = 0; k < rel->fk_count; k++) {
                add_col(B, t, rel->fk_attrs[k], r->target, CQ_PARTITION, 0);
                t->parent_keys[k] = rel->ref_attrs[k];
            }
            for (size_t i = 0; i < nra; i++)
                if (ra[i]->key_index < 0) add_col(B, t, ra[i], e, CQ_STATIC, 0);
            const kp_cond *range = NULL;
            cq_fetch *f = new_fetch(B, CQ_SELECT, r->target);
            f->rel = r;
            int ok = 1;
            for (size_t i = 0; i < each->where_count; i++) {
                const kp_cond *c = &each->where[i];
                if (c->path_len == 0 && is_range_op(c->op) && !range && kp_type_is_orderable(c->attr->type.kind) &&
                    (!each->order_count || each->order[0].attr == c->attr)) range = c;
                else if (!f->range_hi && closes_range(range, c)) f->range_hi = c;
                else ok = 0;
            }
            if (ok) {
                double rows = r->fanout && r->fanout->max > 0 ? r->fanout->max : 1;
                f->table = query_table(B, t, range ? range->attr : NULL, each, p, rows, &f->is_reversed);
                for (size_t k = 0; k < rel->fk_count; k++) {
                    const kp_cond *pc = NULL;
                    for (size_t i = 0; i < p->where_count; i++)
                        if (p->where[i].attr == rel->ref_attrs[k] && is_eq_bindable(&p->where[i])) pc = &p->where[i];
                    add_bind(B, f, col_of(f->table, rel->fk_attrs[k]), CQ_SRC_PARAM, pc, NULL);
                }
                if (range) { f->range = range; f->range_col = col_of(f->table, range->attr); }
                f->shape = each;
                f->has_statics = 1;
                f->base.is_independent = 1;
                finish_each(&W, f, each);
                plan_members(&W, f, each);
                root->kind = CQ_KEYS; /* no request of its own: the statics give it */
                root->has_statics = 1;
                root->table = f->table;
                add_child(B, root, f);
                const char *statics = "";
                for (size_t i = f->table->pk_count + f->table->ck_count; i < f->table->col_count; i++)
                    if (f->table->cols[i].role == CQ_STATIC) statics = kp_arena_printf(B->A, "%s%s%s", statics, *statics ? ", " : "", f->table->cols[i].name);
                kp_decision *dc = kp_design_decide(B->d, f->table->name,
                    kp_arena_printf(B->A, "static column%s %s for the %s the pattern returns with its %s", strchr(statics, ',') ? "s" : "", statics, e->name, r->name ? r->name : r->target->name),
                    kp_arena_printf(B->A, "%s returns %s's own attributes next to its %s: held once per partition as static "
                                    "columns, parent and children come back in one SELECT; the %s write keeps them in step",
                                    p->name, e->name, r->target->name, e->name));
                kp_decision_add_pattern(B->d, dc, p);
                plan_members(&W, root, NULL);
                return W.is_ok ? root : root;
            }
        }
    }
    if (!p->is_root_set && (p->returns->kind == KP_SHAPE_EACH || p->returns->kind == KP_SHAPE_ONE || p->returns->kind == KP_SHAPE_COUNT)) {
        /* the response is the relation itself (a bare array, an object, a count) */
        cq_fetch *c = node_fetch(&W, p->returns);
        if (c) add_child(B, root, c);
    } else {
        plan_members(&W, root, p->returns);
    }
    if (by_key) bind_from_parameters(B, p, root);
    return root;
}

/* ---- copies of referenced attributes (extended references) ---------------------------------------- */

/* A to-one hop read by key once per row of its parent (a leaf's, or a "$one"), which a
 * copy in the parent's rows could answer. */
static void find_sites(builder *B, const kp_pattern *p, cq_fetch *f, cq_fetch *parent, kp_copy_sites *out)
{
    if (!f) return;
    /* a leaf's hop, or a "$one" of the referenced record */
    const kp_rel *r = f->edge_rel ? f->edge_rel
                    : f->shape && f->shape->kind == KP_SHAPE_ONE && f->shape->hop_count == 1 ? f->rel : NULL;
    /* or the targets of an array of references the parent's row holds, read by key */
    int is_array = !r && f->rel && f->rel->relation->link == KP_LINK_ARRAY && !f->rel->is_inverse && f->shape &&
                   f->shape->kind == KP_SHAPE_EACH && f->shape->hop_count == 1 && f->is_by_key;
    if (is_array) r = f->rel;
    if (parent && r && f->kind == CQ_SELECT && f->rel == r && !f->base.child_count && !kp_cq_next_hop(f) && parent->kind == CQ_SELECT &&
        parent->table && parent->table->entity == r->source && !f->client_cond_count)
        kp_copy_sites_add(B->A, out, f, parent, p, r, parent->table->name, is_array);
    /* the targets of an N:M read by key once per join row, which copies in the join rows
     * could answer (the Chebotko query table: it holds what its listing returns) */
    const cq_fetch *t = kp_cq_next_hop(f);
    if (f->is_join && t && t->kind == CQ_SELECT && t->is_by_key && t->shape && t->shape->kind == KP_SHAPE_EACH &&
        !t->base.child_count && !kp_cq_next_hop(t) && !t->client_cond_count && !f->client_cond_count)
        kp_copy_sites_add(B->A, out, (void *)t, f, p, f->rel, f->table->name, 0);
    find_sites(B, p, kp_cq_next_hop(f), f, out);
    for (size_t i = 0; i < f->base.child_count; i++) find_sites(B, p, kp_cq_child(f, i), f, out);
}

/* The rows the parent of a site yields per request of its pattern (the reads a copy saves). */
static double site_rows(const void *of)
{
    const cq_fetch *parent = of;
    double rows = 1;
    /* a join's rows are its targets' listing's: that listing's page bounds them */
    const kp_shape *shape = parent->shape ? parent->shape : parent->is_join && kp_cq_next_hop(parent) ? kp_cq_next_hop(parent)->shape : NULL;
    if (parent->rel && parent->rel->is_many && parent->rel->fanout) rows = parent->rel->fanout->avg;
    if (shape && shape->kind == KP_SHAPE_EACH && shape->expect.is_given) rows = shape->expect.avg;
    int64_t lim = parent->limit ? parent->limit : shape && (parent->shape || parent->is_paged) ? shape_limit(shape) : 0;
    if (!parent->rel && parent->shape && lim > 0) rows = (double)lim;
    if (lim > 0 && rows > (double)lim) rows = (double)lim;
    /* rows the client tests or sorts come whole, and each reads its reference */
    if ((parent->client_cond_count || parent->is_client_ordered) && !parent->limit && !parent->limit_param)
        rows = parent->rel && parent->rel->fanout ? parent->rel->fanout->avg : parent->table->max_partition_rows;
    return rows > 0 ? rows : 1;
}

static int tree_reads(const cq_fetch *f, const cq_table *t)
{
    if (!f) return 0;
    if ((f->kind == CQ_SELECT || f->kind == CQ_COUNT) && f->table == t) return 1;
    if (tree_reads(kp_cq_next_hop(f), t)) return 1;
    for (size_t i = 0; i < f->base.child_count; i++)
        if (tree_reads(kp_cq_child(f, i), t)) return 1;
    return 0;
}

static void uncause(cq_table *t, const kp_pattern *p)
{
    for (size_t i = 0; i < t->cause_count; i++)
        if (t->causes[i] == p) {
            memmove(&t->causes[i], &t->causes[i + 1], sizeof *t->causes * (t->cause_count - i - 1));
            t->cause_count--;
            return;
        }
}

/* The column of the row entity's own attribute that the model declares a copy of r's
 * target's `a` (kp_copy_own), or -1. */
static long own_copy(const cq_table *t, const kp_rel *r, const kp_attr *a)
{
    const kp_attr *own = kp_copy_own(t->entity, r, a);
    for (size_t i = 0; own && i < t->col_count; i++)
        if (t->cols[i].attr == own && t->cols[i].entity == t->entity && !t->cols[i].via) return (long)i;
    return -1;
}

/* Adds the column that copies r's target's `a` into t's rows; returns its index. */
static size_t add_copy_col(builder *B, cq_table *t, const kp_rel *r, const kp_attr *a)
{
    for (size_t i = 0; i < t->col_count; i++)
        if (t->cols[i].via == r && t->cols[i].attr == a) return i;
    const char *name = copy_col_name(B, t, r, a);
    cq_column *c = kp_arena_push(B->A, (void **)&t->cols, &t->col_count, &t->col_cap, sizeof *c);
    c->attr = a;
    c->entity = r->target;
    c->via = r;
    c->role = CQ_REGULAR;
    c->name = name;
    c->quoted = quoted(B->A, name);
    if (r->relation->link == KP_LINK_ARRAY) {
        /* one value per element, in the array's order, null where a target has none (a CQL
         * list holds no null): JSON text */
        c->cql_type = "text";
        c->is_json = 1;
    } else {
        c->cql_type = kp_arena_strdup(B->A, kp_cq_type_text(&a->type, &c->is_json));
    }
    kp_cql_type_parse(c->cql_type, B->A, &c->type, B->err);
    return t->col_count - 1;
}

/* The join rows of an N:M answer its listing themselves: each row yields its target made
 * of the key the row holds and the copies (`cols` of the join table, for `attrs`), in the
 * order and page the join rows were read in; the reads of the targets by key go. */
static void join_answers(cq_fetch *join, cq_fetch *targets, const size_t *cols, const kp_attr **attrs, size_t n)
{
    join->is_join = 0;
    join->is_join_keys = 1;
    join->copy_cols = cols;
    join->copy_attrs = attrs;
    join->copy_count = n;
    join->shape = targets->shape;
    join->is_client_ordered |= targets->is_client_ordered;
    join->base.next_hop = NULL;
}

/* A join read that now answers its listing but was not read in its order (hash buckets, or
 * the targets sorted in the client): planned again as the listing's own read, so buckets
 * clustered by the copies answer a page each (LIMIT) and the client only merges. */
static void join_refinish(builder *B, const kp_pattern *p, cq_fetch *join)
{
    walk W = {B, p, 1};
    join->is_client_ordered = join->is_server_ordered = join->is_merged = join->reads_ties = join->is_paged = 0;
    join->limit = 0;
    join->limit_param = NULL;
    finish_each(&W, join, join->shape);
    if (join->is_client_ordered && !join->is_merged) {
        join->is_paged = 0;
        join->limit = 0;
        join->limit_param = NULL;
    }
}

static void decide_copies(builder *B)
{
    kp_copy_sites sites = {0};
    for (size_t i = 0; i < B->m->pattern_count; i++) find_sites(B, B->m->patterns[i], B->L->roots[i], NULL, &sites);
    if (kp_copy_sites_group(B->A, &sites) < 0) return;
    for (size_t i = 0, end; i < sites.count; i = end) {
        for (end = i + 1; end < sites.count && sites.items[end].group_id == sites.items[i].group_id;) end++;
        cq_table *t = (cq_table *)((const cq_fetch *)sites.items[i].parent)->table;
        const kp_rel *r = sites.items[i].rel;
        kp_copy_verdict v;
        kp_copy_weigh(B->A, B->m, B->mix, &sites.items[i], end - i, site_rows, attr_bytes, &v);
        const char *subject = kp_arena_printf(B->A, "%s.%s", t->name, r->name ? r->name : r->target->name);
        const char *columns = "";
        size_t *cols = v.is_taken ? kp_arena_alloc(B->A, sizeof *cols * (v.need.attr_count + 1)) : NULL;
        for (size_t k = 0; v.is_taken && k < v.need.attr_count; k++) {
            long own = own_copy(t, r, v.need.attrs[k]);
            if (own < 0) {
                own = (long)add_copy_col(B, t, r, v.need.attrs[k]);
                t->row_bytes += attr_bytes(v.need.attrs[k]) + 4;
                t->row_bytes_max += attr_bytes(v.need.attrs[k]) * kp_attr_max_ratio(v.need.attrs[k]) + 4;
                t->bytes = t->rows * t->row_bytes;
            }
            cols[k] = (size_t)own;
            const cq_column *c = &t->cols[own];
            columns = kp_arena_printf(B->A, "%s%s%s%s", columns, k ? ", " : "", c->name, c->via ? "" : ", the model's own copy");
        }
        kp_decision *dc = kp_design_decide(B->d, subject,
            v.is_taken ? (!v.is_all_own && v.need.attr_count ? kp_arena_printf(B->A, "copy %s.{%s} into each %s row (%s): no read of the %s", r->target->name,
                                            v.fields, t->name, columns, r->target->name)
                    : v.need.attr_count ? kp_arena_printf(B->A, "%s.{%s} from each %s row's own copy (%s): no read of the %s",
                                                        r->target->name, v.fields, t->name, columns, r->target->name)
                                    : kp_arena_printf(B->A, "the %s's key from the row's own foreign key: no read of the %s",
                                                      r->target->name, r->target->name))
                 : kp_arena_printf(B->A, "reference: read the %s by key for each %s row", r->target->name, t->name),
            v.is_stale ? kp_arena_printf(B->A, "a copy of %s.{%s} in each %s row's list would save %.1f SELECTs/s, but writes change "
                                       "or delete %s records, whose copies in an array keyplan does not keep in step",
                                       r->target->name, v.fields, t->name, v.saved, r->target->name)
            : !v.is_few ? kp_arena_printf(B->A, "the patterns read %s of the %s through %s: too much to copy into every row",
                                   v.need.is_unfit ? "more" : v.fields, r->target->name, r->name ? r->name : "the reference")
                 : v.is_all_own ? kp_arena_printf(B->A, "the model keeps the copy in step (copy_of); it saves one SELECT per row "
                                            "returned (%.1f/s)", v.saved)
                 : v.cost == 0 ? kp_arena_printf(B->A, "it saves one SELECT per row returned (%.1f/s), and no write changes %s: "
                                               "the copies never move", v.saved, v.fields)
                 : kp_arena_printf(B->A, "the reads a copy saves (one SELECT per row returned, %.1f/s) %s the rows the writes that "
                                   "change %s rewrite (%.1f/s)%s",
                                   v.saved, v.is_taken ? "outweigh" : "do not outweigh", v.fields, v.cost,
                                   v.is_taken ? "; each such write rewrites the copies in its LOGGED BATCH" : ""));
        const kp_attr **attrs = NULL;
        if (v.is_taken && v.need.attr_count) {
            attrs = kp_arena_alloc(B->A, sizeof *attrs * v.need.attr_count);
            memcpy(attrs, v.need.attrs, sizeof *attrs * v.need.attr_count);
        }
        for (size_t k = i; k < end; k++) {
            const kp_copy_site *s = &sites.items[k];
            cq_fetch *hop = s->hop;
            kp_decision_add_pattern(B->d, dc, s->p);
            if (!v.is_taken) continue;
            cq_table *base = (cq_table *)hop->table;
            if (((const cq_fetch *)s->parent)->is_join) {
                join_answers((cq_fetch *)s->parent, hop, cols, attrs, v.need.attr_count);
                if (((cq_fetch *)s->parent)->is_client_ordered) join_refinish(B, s->p, (cq_fetch *)s->parent);
                if (base && !tree_reads(B->L->roots[s->p->index], base)) uncause(base, s->p);
                continue;
            }
            hop->kind = CQ_COPY;
            hop->table = NULL;
            hop->bind_count = 0;
            hop->copy_cols = cols;
            hop->copy_attrs = attrs;
            hop->copy_count = v.need.attr_count;
            if (base && !tree_reads(B->L->roots[s->p->index], base)) uncause(base, s->p);
        }
    }
}

/* A root set's condition on a related record, tested on every row read: one read of the
 * related record per row, unless the rows copy what it tests (decide_copies). */
static void note_related_conditions(builder *B, const kp_pattern *p, const cq_fetch *root)
{
    for (size_t i = 0; p->is_root_set && i < root->client_cond_count; i++) {
        const kp_cond *c = root->client_conds[i];
        if (!c->path_len) continue;
        int copied = 0;
        for (size_t k = 0; k < root->base.child_count; k++) copied |= kp_cq_child(root, k)->edge_rel == c->path[0] && kp_cq_child(root, k)->kind == CQ_COPY;
        kp_design_note(B->d, copied ? "%s: the condition on %s.%s is tested on the copy every row holds, on every row read; as part "
                                      "of the partition key, %s would let one SELECT read only the rows that match"
                                    : "%s: the condition on %s.%s is tested on the related record of every row read (one read per "
                                      "row); a copy of %s in %s, as part of the partition key, would let one SELECT serve it",
                       p->name, c->attr->entity->name, c->attr->name, c->attr->name, p->root->name);
    }
}

/* ---- CQL text --------------------------------------------------------------------------------------- */

static const char *qualified(kp_arena *A, const cq_table *t, const char *ks, const char *prefix)
{
    char q1[300], q2[300];
    kp_cql_quote_identifier(ks, q1, sizeof q1);
    char *n = kp_arena_printf(A, "%s%s", prefix ? prefix : "", t->name);
    kp_cql_quote_identifier(n, q2, sizeof q2);
    return kp_arena_printf(A, "%s.%s", q1, q2);
}

const char *kp_cq_create_table(kp_arena *A, const cq_table *t, const char *ks, const char *prefix)
{
    const char *s = kp_arena_printf(A, "CREATE TABLE IF NOT EXISTS %s (\n", qualified(A, t, ks, prefix));
    for (size_t i = 0; i < t->col_count; i++)
        s = kp_arena_printf(A, "%s    %s %s%s,\n", s, t->cols[i].quoted, t->cols[i].cql_type, t->cols[i].role == CQ_STATIC ? " STATIC" : "");
    s = kp_arena_printf(A, "%s    PRIMARY KEY ((", s);
    for (size_t i = 0; i < t->pk_count; i++) s = kp_arena_printf(A, "%s%s%s", s, i ? ", " : "", t->cols[i].quoted);
    s = kp_arena_printf(A, "%s)", s);
    for (size_t i = t->pk_count; i < t->pk_count + t->ck_count; i++) s = kp_arena_printf(A, "%s, %s", s, t->cols[i].quoted);
    s = kp_arena_printf(A, "%s)\n)", s);
    if (t->ck_count) {
        s = kp_arena_printf(A, "%s WITH CLUSTERING ORDER BY (", s);
        for (size_t i = t->pk_count; i < t->pk_count + t->ck_count; i++)
            s = kp_arena_printf(A, "%s%s%s %s", s, i > t->pk_count ? ", " : "", t->cols[i].quoted, t->cols[i].is_desc ? "DESC" : "ASC");
        s = kp_arena_printf(A, "%s)", s);
    }
    return kp_arena_printf(A, "%s;", s);
}

static const char *op_text(kp_op op)
{
    switch (op) {
    case KP_OP_LT: return "<";
    case KP_OP_LE: return "<=";
    case KP_OP_GT: return ">";
    case KP_OP_GE: return ">=";
    default: return "=";
    }
}

const char *kp_cq_select_text(kp_arena *A, const cq_fetch *f, const char *ks, const char *prefix)
{
    const cq_table *t = f->table;
    if (!t || f->kind == CQ_KEYS || f->kind == CQ_DERIVED || f->kind == CQ_COPY) return NULL;
    const char *s = f->kind == CQ_COUNT ? "SELECT COUNT(*) FROM " : "SELECT * FROM ";
    s = kp_arena_printf(A, "%s%s WHERE ", s, qualified(A, t, ks, prefix));
    int first = 1;
    for (size_t i = 0; i < f->bind_count; i++) {
        s = kp_arena_printf(A, "%s%s%s = ?", s, first ? "" : " AND ", f->binds[i].col->quoted);
        first = 0;
    }
    if (t->has_bucket) { s = kp_arena_printf(A, "%s%sbucket = ?", s, first ? "" : " AND "); first = 0; }
    if (f->range && f->range_col) {
        const char *c = f->range_col->quoted;
        if (f->range->op == KP_OP_BETWEEN) s = kp_arena_printf(A, "%s AND %s >= ? AND %s <= ?", s, c, c);
        else if (f->range->op == KP_OP_BEGINS_WITH) s = kp_arena_printf(A, "%s AND %s >= ? AND %s < ?", s, c, c);
        else s = kp_arena_printf(A, "%s AND %s %s ?", s, c, op_text(f->range->op));
        if (f->range_hi) s = kp_arena_printf(A, "%s AND %s %s ?", s, c, op_text(f->range_hi->op));
    }
    s = kp_arena_printf(A, "%s%s", s, kp_cq_order_by(A, f));
    if (f->limit || f->limit_param) s = kp_arena_printf(A, "%s LIMIT ?", s);
    return s;
}

const char *kp_cq_order_by(kp_arena *A, const cq_fetch *f)
{
    const cq_table *t = f->table;
    if (!f->is_reversed || !t || !t->ck_count) return "";
    const char *s = " ORDER BY";
    for (size_t i = t->pk_count; i < t->pk_count + t->ck_count; i++)
        s = kp_arena_printf(A, "%s%s %s %s", s, i > t->pk_count ? "," : "", t->cols[i].quoted, t->cols[i].is_desc ? "ASC" : "DESC");
    return s;
}

/* ---- diagram ------------------------------------------------------------------------------------------ */

const char *kp_cq_table_text(kp_arena *A, const cq_table *t)
{
    size_t w = strlen(t->name) + 4;
    for (size_t i = 0; i < t->col_count; i++) {
        size_t n = strlen(t->cols[i].name) + strlen(t->cols[i].cql_type) + 6;
        if (n > w) w = n;
    }
    if (w > 70) w = 70;
    /* built in one growing text, without printf (it was the most of advise's time at 1,000 tables) */
    kp_text text = {0};
    kp_text_append(&text, "+");
    kp_text_repeat(&text, '-', w + 2);
    kp_text_append(&text, "+\n| ");
    size_t name_len = strlen(t->name);
    kp_text_appendn(&text, t->name, name_len);
    kp_text_repeat(&text, ' ', w > name_len ? w - name_len : 0);
    kp_text_append(&text, " |\n+");
    kp_text_repeat(&text, '-', w + 2);
    kp_text_append(&text, "+\n");
    for (size_t i = 0; i < t->col_count; i++) {
        const cq_column *c = &t->cols[i];
        const char *mark = c->role == CQ_PARTITION ? "K " : c->role == CQ_CLUSTERING ? (c->is_desc ? "C\xe2\x86\x93" : "C\xe2\x86\x91")
                         : c->role == CQ_STATIC ? "S " : "  ";
        /* "name type" cut to 199 bytes, as the cell it was; the arrows are 3 bytes for 1
         * column: pad by display width */
        size_t name = strlen(c->name), type = strlen(c->cql_type);
        if (name > 199) name = 199;
        if (name + 1 + type > 199) type = name < 198 ? 198 - name : 0;
        size_t cell = name + (name < 199 ? 1 + type : 0);
        kp_text_append(&text, "| ");
        kp_text_append(&text, mark);
        kp_text_append(&text, " ");
        kp_text_appendn(&text, c->name, name);
        if (name < 199) { kp_text_append(&text, " "); kp_text_appendn(&text, c->cql_type, type); }
        kp_text_repeat(&text, ' ', w - 3 > cell ? w - 3 - cell : 0);
        kp_text_append(&text, " |\n");
    }
    kp_text_append(&text, "+");
    kp_text_repeat(&text, '-', w + 2);
    kp_text_append(&text, "+\n");
    const char *out = text.is_failed ? NULL : kp_arena_strdup(A, text.data);
    kp_text_free(&text);
    return out ? out : "";
}

/* ---- plans --------------------------------------------------------------------------------------------- */

typedef struct opctx {
    builder *B;
    const kp_pattern *p;
    kp_plan *plan;
} opctx;

/* Requests a SELECT without LIMIT takes for a partition of `rows`: pages of KP_CQ_PAGE_ROWS
 * (execute.c). Expected: the pages the rows fill; at most: one more after a last page that
 * is exactly full (Cassandra sends a paging state whenever a page is full, and the next
 * page comes back empty). */
static double pages_of(double rows) { return rows > KP_CQ_PAGE_ROWS ? ceil(rows / KP_CQ_PAGE_ROWS) : 1; }
static double pages_at_most(double rows) { return rows >= KP_CQ_PAGE_ROWS ? floor(rows / KP_CQ_PAGE_ROWS) + 1 : 1; }

/* The claims of one fetch, for the shared walker (backends/fetch.c): `in` holds the expected
 * number of inputs and the most there can be (the model's maxima along the way), and its
 * round trip: the expected figures come from the first, the bounds verify holds every page
 * to from the second. */
static void price_fetch(void *ctx, const kp_fetch *node, const kp_fetch_load *in, kp_fetch_load *out)
{
    opctx *O = ctx;
    cq_fetch *f = (cq_fetch *)node;
    double parents = in->expected, parents_max = in->max;
    int exact = in->is_exact;
    builder *B = O->B;
    kp_plan *plan = O->plan;
    double per = 1, per_max = 1;
    int is_root_set = !f->rel && f->is_root && O->p->is_root_set;
    if (f->rel && f->rel->is_many && f->rel->fanout) { per = f->rel->fanout->avg; per_max = f->rel->fanout->max; }
    if (is_root_set) {
        per = f->table ? f->table->max_partition_rows : 1;
        /* one partition of a root set may hold every record of the root */
        per_max = O->p->root->count > per ? O->p->root->count : per;
    }
    if (f->shape && f->shape->kind == KP_SHAPE_EACH && f->shape->expect.is_given) {
        per = f->shape->expect.avg;
        per_max = f->shape->expect.max > per ? f->shape->expect.max : per;
    }
    /* a join paged for the listing its next hop feeds (node_fetch): that listing's page */
    const kp_shape *paged = f->shape ? f->shape : f->is_join && kp_cq_next_hop(f) ? kp_cq_next_hop(f)->shape : NULL;
    int64_t lim = f->limit ? f->limit : (f->is_paged && paged ? shape_limit(paged) : 0);
    double lim_max = f->limit_param || f->is_paged ? kp_shape_limit_max(paged) : (double)f->limit;
    if (lim_max < (double)lim) lim_max = (double)lim;
    if (lim > 0 && per > (double)lim) per = (double)lim;
    if (lim_max > 0 && per_max > lim_max) per_max = lim_max;
    if (f->binds && f->bind_count && f->binds[0].is_element && f->rel && f->rel->fanout) per = per_max = 1;
    if (f->is_by_key) per = per_max = 1; /* a record by its whole key: one row per input, whatever the relation's fan-out */
    if (per_max < per) per_max = per;
    if (parents_max < parents) parents_max = parents;
    /* rows the client sorts or filters come whole from their partitions (no LIMIT: a cut
     * before the sort or the test would be wrong), in pages of 5,000 (execute.c) */
    int reads_whole = f->kind == CQ_SELECT && (f->is_client_ordered || f->client_cond_count) && !f->limit && !f->limit_param &&
                      !f->is_paged && !(f->bind_count && f->binds[0].is_element);
    double whole = per, whole_max = per_max;
    if (reads_whole && !f->is_by_key) {
        whole = f->rel && f->rel->is_many && f->rel->fanout ? f->rel->fanout->avg
              : is_root_set && f->table ? f->table->max_partition_rows : per;
        whole_max = f->rel && f->rel->is_many && f->rel->fanout ? f->rel->fanout->max
                  : is_root_set ? (O->p->root->count > whole ? O->p->root->count : whole) : whole;
        /* a clustering range the key serves bounds the rows read, when no other test remains */
        if (f->range && !f->client_cond_count && f->shape && f->shape->expect.is_given) {
            whole = f->shape->expect.avg;
            whole_max = f->shape->expect.max > whole ? f->shape->expect.max : whole;
        }
        if (whole < per) whole = per;
        if (whole_max < whole) whole_max = whole;
    }
    double read_per = reads_whole ? whole : per;
    double produced = parents * per, produced_max = parents_max * per_max;
    int my_step = in->step;
    if (f->kind == CQ_SELECT || f->kind == CQ_COUNT) {
        f->step = my_step;
        kp_operation *o = kp_plan_add_op(B->d, plan, "SELECT", f->table->name);
        o->condition = kp_cq_select_text(&B->d->arena, f, B->L->keyspace, "");
        o->waits_for_previous = my_step > 1 && !f->base.is_independent;
        o->step = my_step;
        int buckets = f->table->buckets > 1 ? f->table->buckets : 1;
        int per_element = f->bind_count && f->binds[0].is_element;
        /* execute.c walks_buckets: a root's read in the clustering order of a range-bucketed table */
        int walks = kp_cq_walks_buckets(f) && lim > 0;
        double inputs = f->is_root || f->base.is_independent ? 1 : parents;
        double inputs_max = f->is_root || f->base.is_independent ? 1 : parents_max;
        double requests = inputs * buckets, requests_max = inputs_max * buckets;
        /* the rows one input's partition holds (a root set's: its largest partition) */
        double part_rows = is_root_set ? (f->table->max_partition_rows > 0 ? f->table->max_partition_rows : per)
                         : f->rel && f->rel->fanout ? f->rel->fanout->avg : per;
        if (per_element) {
            double elements = f->rel && f->rel->fanout ? f->rel->fanout->avg : 1;
            double elements_max = f->rel && f->rel->fanout ? f->rel->fanout->max : 1;
            requests = parents * elements;
            requests_max = parents_max * elements_max;
            produced = requests;
            produced_max = requests_max;
            exact = 0;
        }
        o->requests = requests < 1 ? 1 : requests;
        o->requests_max = requests_max < o->requests ? o->requests : requests_max;
        if (!exact) plan->is_requests_exact = 0;
        o->items = f->kind == CQ_COUNT ? 1 : produced;
        o->bytes = o->items * f->table->row_bytes;
        o->items_max = produced_max;
        o->bytes_max = o->items_max * f->table->row_bytes_max;
        if (f->kind == CQ_COUNT) {
            /* COUNT(*) reads every row it counts and sends one */
            double each = f->rel && f->rel->fanout ? f->rel->fanout->avg : per;
            double each_max = f->rel && f->rel->fanout ? f->rel->fanout->max : per_max;
            o->items = inputs * each;
            o->items_max = inputs_max * (each_max > each ? each_max : each);
            o->bytes = inputs * 8;
            o->bytes_max = inputs_max * 8;
        }
        if (reads_whole) {
            double pages = pages_of(read_per / buckets), pages_max = pages_at_most(whole_max / buckets);
            o->items = inputs * read_per;
            o->bytes = o->items * f->table->row_bytes;
            o->requests = inputs * buckets * (pages > 1 ? pages : 1);
            o->items_max = inputs_max * whole_max;
            o->bytes_max = o->items_max * f->table->row_bytes_max;
            o->requests_max = inputs_max * buckets * (pages_max > 1 ? pages_max : 1);
            /* more than one page of 5,000 rows: the request count follows the data */
            if (pages_max > 1) plan->is_requests_exact = 0;
        } else if (f->kind == CQ_SELECT && !lim && !f->limit_param && !f->is_paged && !per_element && !f->is_by_key &&
                   pages_at_most(per_max / buckets) > 1) {
            /* no LIMIT: a partition larger than a page answers in several requests */
            o->requests *= pages_of(per / buckets);
            o->requests_max *= pages_at_most(per_max / buckets);
            plan->is_requests_exact = 0;
        } else if ((buckets > 1 || f->is_merged) && lim > 0 && !per_element && (is_root_set || (f->rel && f->rel->is_many && f->rel->fanout))) {
            /* every bucket answers up to LIMIT rows (an offset page: offset + limit) before the
             * client merges them; a root set's bucket may hold any share of the root */
            double skip = 0, skip_max = 0;
            if (f->shape && f->shape->page == KP_PAGE_OFFSET && f->shape == O->p->paged) {
                const kp_param *op = f->shape->offset_param;
                skip = op && cJSON_IsNumber(op->default_value) ? op->default_value->valuedouble : 0;
                skip_max = kp_shape_offset_max(f->shape) > skip ? kp_shape_offset_max(f->shape) : skip;
            }
            double one_more = kp_cq_reads_one_more(f, O->p) ? 1 : 0;
            double cut = (double)lim + skip + one_more, cut_max = (lim_max > 0 ? lim_max : (double)lim) + skip_max + one_more;
            double total = part_rows, total_max = is_root_set ? 0 : f->rel->fanout->max;
            if (f->range && f->shape && f->shape->expect.is_given) {
                /* a clustering range: the rows in it, by the model's $expect */
                total = f->shape->expect.avg;
                total_max = f->shape->expect.max > total ? f->shape->expect.max : total;
            }
            double each = total / buckets, each_max = is_root_set ? cut_max : total_max / buckets;
            o->items = inputs * buckets * (each < cut ? each : cut);
            o->items_max = inputs_max * buckets * (each_max < cut_max ? each_max : cut_max);
            if (walks) {
                /* a walk over range buckets (execute.c walk_on): the first bucket holds a bucket's
                 * rows, about half of them past where a range starts in it; it reads on only while
                 * the page is not full, so it reads less than two pages, and at most every bucket
                 * once */
                double first = f->range ? each / 2 : each;
                double more = cut > first && each > 0 ? ceil((cut - first) / each) : 0;
                o->requests = inputs * (1 + (more < buckets - 1 ? more : buckets - 1));
                o->requests_max = inputs_max * buckets;
                o->items = inputs * (total < cut ? total : cut);
                double two_pages = 2 * cut_max - 1, all_rows = is_root_set ? two_pages : total_max;
                o->items_max = inputs_max * (two_pages < all_rows ? two_pages : all_rows);
                o->more_steps_max = buckets - 1;
                plan->is_requests_exact = 0;
            }
            o->bytes = o->items * f->table->row_bytes;
            o->bytes_max = o->items_max * f->table->row_bytes_max;
        }
        if (f->kind == CQ_SELECT && f->has_statics && f->range && !per_element) {
            /* the parent's static columns alone, beside the range (execute.c): one more row */
            o->requests += inputs;
            o->requests_max += inputs_max;
            o->items += inputs;
            o->items_max += inputs_max;
            o->bytes += inputs * f->table->row_bytes;
            o->bytes_max += inputs_max * f->table->row_bytes_max;
        }
        const char *why = "";
        if (f->bind_count) why = kp_arena_printf(&B->d->arena, "partition key bound by %s", f->is_root ? "the parameters" : f->has_statics ? "the parameters (the parent rides along as static columns)" : f->base.is_independent ? "the parameters" : "the previous answer");
        if (walks) why = kp_arena_printf(&B->d->arena, "%s; range buckets (%d) read in order: the bucket where the read starts, "
                                          "then the next only while the page is not full (up to %d SELECTs, one after another)",
                                          why, buckets, buckets);
        else if (buckets > 1) why = kp_arena_printf(&B->d->arena, f->reads_ties ? "%s; one SELECT per bucket (%d), each bucket in the "
                                               "order's first part" : f->is_merged ? "%s; one SELECT per bucket (%d), each bucket in the "
                                               "declared order" : "%s; one SELECT per bucket (%d), merged in the client", why, buckets);
        if (f->range) why = kp_arena_printf(&B->d->arena, "%s; clustering range on %s", why, f->range_col ? f->range_col->name : "?");
        if (f->is_reversed)
            why = kp_arena_printf(&B->d->arena, "%s; read backwards (ORDER BY against the clustering order): the table drawn for "
                                  "the opposite order serves this one, no second table to write", why);
        if (f->is_paged) why = kp_arena_printf(&B->d->arena, "%s; pages of %lld rows with Cassandra's paging state", why, (long long)shape_limit(paged));
        else if (f->limit || f->limit_param) {
            const char *n = f->limit_param ? f->limit_param->name : kp_arena_printf(&B->d->arena, "%lld", (long long)f->limit);
            if (f->shape && f->shape->page == KP_PAGE_OFFSET && f->shape->offset_param && f->shape == O->p->paged)
                n = kp_arena_printf(&B->d->arena, "%s + %s", n, f->shape->offset_param->name);
            if (kp_cq_reads_one_more(f, O->p)) n = kp_arena_printf(&B->d->arena, "%s + 1 (one more tells that another page follows)", n);
            why = kp_arena_printf(&B->d->arena, "%s; LIMIT %s", why, n);
        }
        if (f->client_cond_count) why = kp_arena_printf(&B->d->arena, "%s; %zu condition%s no key serves, tested by the client on the rows of the partition (no ALLOW FILTERING)", why, f->client_cond_count, f->client_cond_count == 1 ? "" : "s");
        if (f->is_merged && buckets > 1 && !walks) {
            why = kp_arena_printf(&B->d->arena, "%s; the client merges the buckets and cuts the page before reading on", why);
            o->bound_cause = f->table->hash_why;
        }
        else if (walks) why = kp_arena_printf(&B->d->arena, "%s; the client cuts the page", why);
        else if (f->is_merged && f->reads_ties)
            why = kp_arena_printf(&B->d->arena, "%s; the clustering holds the order's first part: the client orders the rows "
                                  "read and the ties read next, and cuts the page", why);
        else if (f->is_merged) why = kp_arena_printf(&B->d->arena, "%s; LIMIT covers the offset, the client skips to the page", why);
        else if (f->is_client_ordered) why = kp_arena_printf(&B->d->arena, "%s; sorted and cut in the client", why);
        if (f->kind == CQ_SELECT && f->has_statics && f->range && !per_element)
            why = kp_arena_printf(&B->d->arena, "%s; the parent's static columns read alone beside it (LIMIT 1), so a range "
                                  "that holds no row still finds the parent", why);
        if (reads_whole && f->is_by_key)
            why = kp_arena_printf(&B->d->arena, "%s; reads every one of them (about %.0f rows, up to %.0f) to do so", why,
                                  o->items, o->items_max);
        else if (reads_whole)
            why = kp_arena_printf(&B->d->arena, "%s; reads the whole partition (about %.0f rows, up to %.0f) to do so", why,
                                  o->items, o->items_max);
        o->why = why[0] == ';' ? why + 2 : why;
        if (f->reads_ties && lim > 0) {
            /* a bucket that filled the page, read again for the rows that tie with its last on
             * the first clustering column (execute.c read_ties): one more round trip */
            double rows_max = is_root_set ? (O->p->root->count > part_rows ? O->p->root->count : part_rows)
                            : f->rel && f->rel->fanout ? f->rel->fanout->max : part_rows;
            const cq_table *t = f->table;
            const char *where = "";
            for (size_t i = 0; i <= t->pk_count; i++)
                where = kp_arena_printf(&B->d->arena, "%s%s%s = ?", where, i ? " AND " : "", t->cols[i].quoted);
            kp_operation *tie = kp_plan_add_op(B->d, plan, "SELECT", t->name);
            tie->condition = kp_arena_printf(&B->d->arena, "SELECT * FROM %s.%s WHERE %s", B->L->keyspace, t->name, where);
            /* with one row more than the page read, the tie read goes only when the page's last
             * row and the one after it tie (execute.c read_ties), which a timestamp (or a unique
             * value) rarely does: not expected, one more round trip at most */
            const kp_attr *a0 = t->cols[t->pk_count].attr;
            int is_rare = kp_cq_reads_one_more(f, O->p) && a0 &&
                          (a0->is_unique || a0->type.kind == KP_T_TIMESTAMP || a0->type.kind == KP_T_TIMEUUID);
            tie->step = is_rare ? my_step : ++my_step;
            tie->more_steps_max = is_rare;
            tie->waits_for_previous = 1;
            tie->is_tie_read = 1;
            double full = part_rows / buckets >= (double)lim ? 1 : 0; /* expected: every bucket fills its page, or none */
            tie->requests = inputs * buckets * full;
            tie->requests_max = inputs_max * buckets;
            if (walks) { /* only a walk's last bucket can fill the page */
                tie->requests = inputs * (part_rows >= (double)lim ? 1 : 0);
                tie->requests_max = inputs_max;
            }
            /* a later page starts past the token's value, whose rows are read beside it (execute.c
             * send_token_ties): from its range bucket, or from every hash bucket */
            if (f->shape && f->shape == O->p->paged && f->shape->page == KP_PAGE_TOKEN)
                tie->requests_max += inputs_max * (walks ? 1 : buckets);
            if (is_rare) tie->requests = 0;
            tie->items = tie->requests;                          /* the last row again, and its rare ties */
            tie->items_max = inputs_max * rows_max;              /* every row of a bucket may tie */
            tie->bytes = tie->items * t->row_bytes;
            tie->bytes_max = tie->items_max * t->row_bytes_max;
            tie->why = kp_arena_printf(&B->d->arena, "for each bucket that filled its page%s: the rows whose %s equals its last "
                                       "row's (the clustering holds the order's first part only, so a LIMIT may cut rows the "
                                       "client orders ahead)",
                                       is_rare ? " and whose last two rows tie (rare on a timestamp: not expected)" : "",
                                       t->cols[t->pk_count].name);
            plan->is_requests_exact = 0;
        }
    }
    int next_exact = exact && (f->is_root ? !O->p->is_root_set : (f->rel && !f->rel->is_many));
    if (f->kind == CQ_KEYS && f->is_root) next_exact = exact;
    out->expected = produced;
    out->max = produced_max;
    out->step = my_step;
    out->is_exact = next_exact;
    /* the keys of a root given by the parameters: one record to go on with */
    if (f->kind == CQ_KEYS && f->is_root) out->expected = out->max = 1;
}

/* What the shared walkers must know of each fetch (backends/fetch.h): keys, derived values
 * and copies send no request; counts, derived values and copies end their branch. */
static void mark_roles(cq_fetch *f)
{
    for (; f; f = kp_cq_next_hop(f)) {
        f->base.is_free = f->kind == CQ_KEYS || f->kind == CQ_DERIVED || f->kind == CQ_COPY;
        f->base.is_terminal = f->kind == CQ_COUNT || f->kind == CQ_DERIVED || f->kind == CQ_COPY;
        for (size_t i = 0; i < f->base.child_count; i++) mark_roles(kp_cq_child(f, i));
    }
}

/* A to-one hop on the way to another, of which the pattern reads nothing but the key its
 * source's row already holds (line-invoice: the order of a line, on the way to that order's
 * shipment): no SELECT; its record is made of that key (CQ_KEYS) and the next hop binds it.
 * Every reference in the data names a record that exists (keyplan's data check). Where the
 * reference is the root's own key fixed by the parameters, the next hop binds those and goes
 * out with the root's SELECT. */
static void skip_key_hops(builder *B, const kp_pattern *p, cq_fetch *f, const cq_fetch *root, const cq_fetch *tree)
{
    for (; f; f = kp_cq_next_hop(f)) {
        cq_fetch *g = kp_cq_next_hop(f);
        const kp_rel *r = f->rel;
        int ok = g && r && !r->is_many && f->kind == CQ_SELECT && f->is_by_key && !f->shape && !f->base.child_count &&
                 !f->client_cond_count && r->relation->link == KP_LINK_FOREIGN_KEY && r->relation->holder == r->source &&
                 (g->kind == CQ_SELECT || g->kind == CQ_COUNT) && g->bind_count;
        for (size_t b = 0; ok && b < g->bind_count; b++) {
            const cq_bind *x = &g->binds[b];
            ok = x->src != CQ_SRC_PARENT || (!x->is_element && x->from->entity == f->entity && x->from->key_index >= 0);
        }
        if (ok && kp_copy_needs_only_key(p, r)) {
            f->kind = CQ_KEYS;
            /* the table it read no longer serves the pattern, unless another read of it does */
            cq_table *t = (cq_table *)f->table;
            if (t && !tree_reads(tree, t)) uncause(t, p);
            /* the root's key from the parameters: the next hop binds them (the reference's k-th
             * attribute is the target's k-th key attribute) */
            int from_params = root && f != root && root->is_root && root->kind == CQ_SELECT && r->source == root->entity;
            const kp_cond *conds[16] = {0};
            for (size_t b = 0; from_params && b < g->bind_count; b++) {
                const cq_bind *x = &g->binds[b];
                if (x->src != CQ_SRC_PARENT) continue;
                const kp_attr *held = NULL;
                for (size_t k = 0; k < r->relation->fk_count; k++)
                    if (r->relation->ref_attrs[k] == x->from) held = r->relation->fk_attrs[k];
                if (b < 16 && held) conds[b] = eq_on(p, held);
                from_params = b < 16 && held && held->key_index >= 0 && conds[b];
            }
            for (size_t b = 0; from_params && b < g->bind_count; b++)
                if (g->binds[b].src == CQ_SRC_PARENT) bind_to(&g->binds[b], conds[b]);
            if (from_params) g->base.is_independent = 1;
            kp_decision *x = kp_design_decide(
                B->d, kp_arena_printf(B->A, "%s.%s on the way", r->source->name, r->name ? r->name : r->target->name),
                kp_arena_printf(B->A, "no SELECT of the %s: its key from the %s row's own reference", r->target->name, r->source->name),
                kp_arena_printf(B->A, "'%s' reads nothing of the %s but the key the %s already holds, on the way to its %s%s", p->name,
                                r->target->name, r->source->name, g->rel && g->rel->name ? g->rel->name : g->entity->name,
                                from_params ? ", which the parameters key: its SELECT goes out with the first" : ""));
            kp_decision_add_pattern(B->d, x, p);
        }
        for (size_t i = 0; i < f->base.child_count; i++) skip_key_hops(B, p, kp_cq_child(f, i), f == root ? root : NULL, tree);
    }
}

static void plan_ops(builder *B, const kp_pattern *p, cq_fetch *root, kp_plan *plan)
{
    opctx O = {B, p, plan};
    plan->is_requests_exact = 1;
    mark_roles(root);
    kp_fetch_claim(&root->base, price_fetch, &O);
    kp_plan_total(plan);
    /* a hash-bucketed root table spreads one key's rows over its buckets (the advisors'
     * hot-partition share divides by it) */
    if (root->table && root->table->buckets > 1 && !root->table->bounds) plan->shards = root->table->buckets;
    if (root->has_statics) plan->why = "the parent's attributes are static columns of the children's partition: one SELECT";
}

/* ---- write plans ---------------------------------------------------------------------------------------- */

/* What a write plan adds up while its effects are priced. */
typedef struct write_sum {
    kp_write_plan *wp;
    double rows, copy_rows;
    size_t tables_touched;
    double reads;               /* rows read by key before the write (read_first) */
    double conditional;         /* rows whose condition a lightweight transaction tests first */
    const char *condition_why;  /* those transactions, and on which table */
    const char *read_why;       /* the tables read for key columns, and why */
    const char *value_why;      /* the derived values read before they are rewritten */
    const char *reach_why;      /* the records for_each steps reach, read by their parents */
    const kp_write_step *value_step; /* the last step and path whose values were read: the */
    const kp_derived *value_path;    /* other aggregates over that path come with the same row */
} write_sum;

/* An update or delete names its rows in every table that holds them by primary key: a key
 * column the step's where does not give by equality, or one the step assigns (the old row
 * goes), must first be read from the entity's table by key. NULL, or the first column that
 * needs it. (A for_each step's records come from the read that reaches them.) */
static const cq_column *read_first(const kp_write_step *st, const cq_table *t)
{
    if (st->op == KP_WRITE_INSERT || st->for_each_len) return NULL;
    for (size_t k = 0; k < t->pk_count + t->ck_count; k++) {
        const cq_column *c = &t->cols[k];
        if (!c->attr) continue; /* the bucket: a hash of the key */
        const kp_attr *a = t->entity == st->entity ? c->attr : NULL;
        if (!a && t->parent == st->entity && k < t->pk_count && t->parent_keys) a = t->parent_keys[k];
        if (!a) continue;       /* a child's own key under a parent's statics: not this step's row */
        int given = 0;
        for (size_t w = 0; w < st->where_count && !given; w++)
            given = !st->where[w].path_len && st->where[w].attr == a && st->where[w].op == KP_OP_EQ;
        for (size_t i = 0; i < st->assign_count && given; i++) given = st->assigns[i].attr != a;
        if (!given) return c;
    }
    return NULL;
}

/* The rows of one record in t: one, or its array's elements in a table keyed by them. */
static double record_rows(const cq_table *t) { return t->rows_per_record > 0 ? t->rows_per_record : 1; }

static kp_write_touch *new_touch(builder *B, write_sum *S, const char *container, const char *what, double count, double bytes)
{
    kp_write_touch *x = kp_write_plan_touch(B->d, S->wp);
    if (!x) return NULL;
    x->container = container;
    x->what = what;
    x->count = count;
    x->bytes = bytes;
    S->rows += count;
    S->tables_touched++;
    return x;
}

static kp_write_touch *add_touch(builder *B, write_sum *S, const kp_write_effect *fx, const char *container, const char *what,
                                 double count, double bytes)
{
    kp_write_plan_items(B->d, S->wp, fx, count);
    return new_touch(B, S, container, what, count, bytes);
}

/* The array whose elements key t's rows (a row per element of a record), or NULL. */
static const kp_attr *element_array(const cq_table *t)
{
    for (size_t k = 0; t->rows_per_record > 0 && k < t->pk_count; k++)
        if (t->cols[k].is_element) return t->cols[k].attr;
    return NULL;
}

/* The rows of `records` records of fx in t, each `factor` times (2: deleted and inserted):
 * in a table keyed by an array's elements, a row per element, which verify counts on the
 * operation's own records. */
static void add_rows(builder *B, write_sum *S, const kp_write_effect *fx, const cq_table *t, const char *what, double records,
                     double factor)
{
    double count = records * factor * record_rows(t);
    const kp_attr *array = element_array(t);
    if (!array || array->entity != fx->entity) {
        add_touch(B, S, fx, t->name, what, count, count * t->row_bytes);
        return;
    }
    kp_write_plan_element_items(B->d, S->wp, fx, array, count, records * record_rows(t));
    new_touch(B, S, t->name, what, count, count * t->row_bytes);
}

/* A step with a condition (`if`, or an insert only when absent): Cassandra tests a condition
 * with a lightweight transaction (Paxos: four round trips) on one partition, and a logged
 * batch with a condition cannot span partitions, so each conditional row goes first on its
 * own, on the table by key, and the rows of the other tables follow in the batch once it held. */
static void price_condition(builder *B, write_sum *S, const kp_write_effect *fx)
{
    const kp_write_step *st = fx->step;
    const cq_table *t = B->L->base[st->entity->index];
    double rows = fx->records > 0 ? fx->records : 1;
    S->conditional += rows;
    kp_write_plan_read(B->d, S->wp, t->name);
    const char *test = "IF NOT EXISTS";
    for (size_t i = 0; i < st->condition_count; i++) {
        const kp_cond *c = &st->conditions[i];
        const cq_column *col = c->path_len ? NULL : col_of(t, c->attr);
        test = kp_arena_printf(B->A, "%s%s%s%s %s ?", i ? test : "IF", i ? " AND " : " ", c->path_len ? "(through a relation) " : "",
                               col ? col->name : c->attr->name, c->op == KP_OP_EQ ? "=" : kp_op_name(c->op));
    }
    S->condition_why = kp_arena_printf(B->A, "%s%s%g %s row%s on %s (%s %s)", S->condition_why ? S->condition_why : "",
                                       S->condition_why ? ", " : "", rows, st->entity->name, rows == 1 ? "" : "s", t->name,
                                       st->op == KP_WRITE_INSERT ? "INSERT" : st->op == KP_WRITE_DELETE ? "DELETE" : "UPDATE", test);
}

/* Every table whose rows are the step's records (the base table and its query copies), and
 * the static columns of the partitions that belong to a record as a parent. A step writes
 * its records once per operation: its rows times the fan-out of its for_each path. */
static void price_records(builder *B, write_sum *S, const kp_write_effect *fx, const kp_index_list *tables_of)
{
    const kp_write_step *st = fx->step;
    double per = fx->records > 0 ? fx->records : 1;
    int read_counted = 0;
    const kp_index_list *mine = &tables_of[st->entity->index];
    double reach = kp_write_for_each_reads(S->wp->write, st);
    if (reach > 0) {
        S->reads += reach;
        kp_write_plan_read(B->d, S->wp, B->L->base[st->entity->index]->name);
        S->reach_why = kp_arena_printf(B->A, "%s%s%s of step %zu over %s (%g SELECT%s)", S->reach_why ? S->reach_why : "",
                                       S->reach_why ? ", " : "", st->entity->name, fx->step_index + 1,
                                       st->for_each[st->for_each_len - 1]->name, reach, reach == 1 ? "" : "s");
    }
    for (size_t j = 0; j < mine->count; j++) {
        const cq_table *t = B->L->tables[mine->at[j]];
        const cq_column *unknown = t->entity == st->entity || t->parent == st->entity ? read_first(st, t) : NULL;
        if (unknown && !read_counted) {
            S->reads += per;
            read_counted = 1;
            kp_write_plan_read(B->d, S->wp, B->L->base[st->entity->index]->name);
            S->read_why = kp_arena_printf(B->A, "%s%s%s (%s is keyed by %s)", S->read_why ? S->read_why : "", S->read_why ? ", " : "",
                                          B->L->base[st->entity->index]->name, t->name, unknown->name);
        }
        int moves = 0;  /* an update of a key column: the old row deleted, the new one inserted */
        for (size_t k = 0; t->entity == st->entity && k < t->pk_count + t->ck_count; k++)
            moves |= kp_write_step_changes(S->wp->write, st, t->cols[k].attr);
        if (t->entity == st->entity)
            add_rows(B, S, fx, t,
                     kp_arena_printf(B->A, "%s row%s%s", st->entity->name,
                                     t->is_base ? "" : kp_arena_printf(B->A, " (copy keyed by %s)", t->cols[0].name),
                                     moves ? ": its key changes, deleted and inserted again" : ""),
                     per, moves ? 2 : 1);
        int b = t->buckets > 1 ? t->buckets : 1;
        if (t->parent == st->entity && st->op != KP_WRITE_INSERT)
            add_touch(B, S, fx, t->name, kp_arena_printf(B->A, "static columns of %s (%d partition%s)", st->entity->name, b, b == 1 ? "" : "s"),
                      per * b, per * b * 64);
        else if (t->parent == st->entity)
            add_touch(B, S, fx, t->name,
                      kp_arena_printf(B->A, "static row of the new %s (%d partition%s)", st->entity->name, b, b == 1 ? "" : "s"), b,
                      b * 64.0);
    }
}

/* The rows of the records an effect reaches (fx->entity, fx->count of them) in every table
 * whose rows they are. */
static void price_rows(builder *B, write_sum *S, const kp_write_effect *fx, const kp_index_list *tables_of, const char *what)
{
    const kp_index_list *theirs = &tables_of[fx->entity->index];
    for (size_t j = 0; j < theirs->count; j++) {
        const cq_table *t = B->L->tables[theirs->at[j]];
        if (t->entity != fx->entity) continue;
        int keyed = 0;  /* a detached reference that keys the row: a key column cannot be null, the row goes */
        for (size_t k = 0; fx->kind == KP_EFFECT_DETACH && k < t->pk_count + t->ck_count; k++)
            for (size_t f = 0; f < fx->rel->relation->fk_count; f++) keyed |= t->cols[k].attr == fx->rel->relation->fk_attrs[f];
        add_rows(B, S, fx, t,
                 kp_arena_printf(B->A, "%s %s row%s%s", what, fx->entity->name,
                                 t->is_base ? "s" : kp_arena_printf(B->A, "s (copy keyed by %s)", t->cols[0].name),
                                 keyed ? ", deleted (a key column cannot be null)" : ""),
                 fx->count, 1);
    }
}

/* The tables whose rows copy the step's record's attributes (extended references; `copying`,
 * in table order), given the step's reference effects (fx .. end): a table that copies a
 * changed attribute is rewritten in every row that references the record, once per table
 * (its first such column). */
static void price_references(builder *B, write_sum *S, const kp_write_effect *fx, const kp_write_effect *end,
                             const kp_index_list *copying)
{
    const kp_write_step *st = fx->step;
    double per = fx->records > 0 ? fx->records : 1;
    for (size_t j = 0; j < copying->count; j++) {
        const cq_table *t = B->L->tables[copying->at[j]];
        const cq_column *moved = NULL;
        int keyed = 0;  /* a copy that clusters the rows (join_copies_likely): each is deleted and inserted again */
        for (size_t k = 0; k < t->col_count; k++)
            for (size_t a = 0; t->cols[k].via && t->cols[k].entity == st->entity && a < st->assign_count; a++)
                if (st->assigns[a].attr == t->cols[k].attr) {
                    if (!moved) moved = &t->cols[k];
                    keyed |= k < t->pk_count + t->ck_count;
                }
        const kp_write_effect *via = fx;
        while (moved && via < end && via->rel != moved->via) via++;
        if (!moved || via == end) continue; /* via == end never: a copy is taken only over a reference (kp_copy_sites_add) */
        double count = per * via->per_record * record_rows(t) * (keyed ? 2 : 1);
        add_touch(B, S, via, t->name, kp_arena_printf(B->A, "copy of %s.%s in the %s rows that reference it%s", st->entity->name,
                                                 moved->attr->name, t->entity->name,
                                                 keyed ? ": it keys them, deleted and inserted again" : ""),
                  count, count * t->row_bytes);
        S->copy_rows += count;
    }
}

/* A derived value the step's records change (KP_EFFECT_AGGREGATE): its column in every
 * row that holds it — the holder's own rows in each of its tables, and the static columns
 * of the partitions it is the parent of. A regular column has no increment, so the writer
 * first reads the holder's current value by key (one request per holder, in parallel) and
 * writes it in the batch; a counter table would not lose a concurrent increment but cannot
 * join a logged batch, and the plan says so. */
static void price_aggregate(builder *B, write_sum *S, const kp_write_effect *fx, const kp_index_list *tables_of)
{
    const kp_entity *holder = fx->entity;
    const kp_index_list *theirs = &tables_of[holder->index];
    double per = fx->count;
    if (per <= 0) return; /* the write inserts the holder with the value */
    int any = 0;
    for (size_t j = 0; j < theirs->count; j++) {
        const cq_table *t = B->L->tables[theirs->at[j]];
        for (size_t k = 0; k < t->col_count; k++) {
            const cq_column *c = &t->cols[k];
            if (c->attr != fx->attr || c->via) continue;
            int b = t->buckets > 1 ? t->buckets : 1;
            if (c->role == CQ_STATIC)
                add_touch(B, S, fx, t->name, kp_arena_printf(B->A, "%s.%s in the static columns of %s (%d partition%s)", holder->name,
                                                         fx->attr->name, holder->name, b, b == 1 ? "" : "s"),
                          per * b, per * b * 64);
            else if (c->role == CQ_REGULAR)
                add_touch(B, S, fx, t->name,
                          kp_arena_printf(B->A, "%s.%s in the %s row%s", holder->name, fx->attr->name, holder->name,
                                          t->is_base ? "" : kp_arena_printf(B->A, " (copy keyed by %s)", t->cols[0].name)),
                          per, per * t->row_bytes);
            else /* a key column: the row moves, its old key deleted and the new one inserted */
                add_touch(B, S, fx, t->name,
                          kp_arena_printf(B->A, "%s.%s keys the %s row%s: deleted and inserted again", holder->name, fx->attr->name,
                                          holder->name, t->is_base ? "" : kp_arena_printf(B->A, " (copy keyed by %s)", t->cols[0].name)),
                          2 * per, 2 * per * t->row_bytes);
            any = 1;
            break;
        }
    }
    if (!any) return;
    const kp_derived *d = fx->attr->derived, *last = S->value_path;
    int same = S->value_step == fx->step && last && last->path_len == d->path_len;
    for (size_t i = 0; same && i < d->path_len; i++) same = last->path[i] == d->path[i];
    if (!same) {
        S->reads += per;
        kp_write_plan_read(B->d, S->wp, B->L->base[holder->index]->name);
        S->value_step = fx->step;
        S->value_path = d;
    }
    S->value_why = kp_arena_printf(B->A, "%s%s%s.%s from %s", S->value_why ? S->value_why : "", S->value_why ? ", " : "",
                                   holder->name, fx->attr->name, B->L->base[holder->index]->name);
}

static void plan_writes(builder *B)
{
    const kp_model *m = B->m;
    size_t lists = m->entity_count ? m->entity_count : 1;
    kp_write_effects effects = {0};
    kp_error err;
    kp_index_list *tables_of = calloc(lists, sizeof *tables_of); /* tables whose rows are the entity's records or its children's */
    kp_index_list *copies_of = calloc(lists, sizeof *copies_of); /* tables whose rows copy the entity's attributes */
    if (!tables_of || !copies_of || kp_write_effects_build(m, &effects, &err)) {
        free(tables_of);
        free(copies_of);
        kp_write_effects_free(&effects);
        return;
    }
    for (size_t i = 0; i < B->L->table_count; i++) {
        const cq_table *t = B->L->tables[i];
        if (t->entity) kp_index_list_push(&tables_of[t->entity->index], i);
        if (t->parent) kp_index_list_push(&tables_of[t->parent->index], i);
        for (size_t k = 0; k < t->col_count; k++) /* once per table: a repeat of the last value is dropped */
            if (t->cols[k].via) kp_index_list_push(&copies_of[t->cols[k].entity->index], i);
    }
    for (size_t w = 0; w < m->write_count; w++) {
        const kp_write *wr = m->writes[w];
        write_sum S = {.wp = &B->d->write_plans[w]};
        kp_write_plan_begin(S.wp);
        const kp_write_effect_list *fxs = &effects.of_write[w];
        /* pairings, uniqueness and cascades are rows the model's own steps write */
        for (size_t i = 0, end; i < fxs->count; i = end) {
            const kp_write_effect *fx = &fxs->items[i];
            end = i + 1;
            if (fx->kind == KP_EFFECT_RECORDS) {
                price_records(B, &S, fx, tables_of);
                if (fx->step->condition_count || fx->step->is_if_absent) price_condition(B, &S, fx);
            } else if (fx->kind == KP_EFFECT_COPY && fx->step->op == KP_WRITE_UPDATE) {
                /* a copy the model declares: a column of each holder's row in every table of it */
                price_rows(B, &S, fx, tables_of, kp_arena_printf(B->A, "copy of %s.%s in", fx->step->entity->name,
                                                                 fx->attr->copy_of->source->name));
            } else if (fx->kind == KP_EFFECT_CASCADE || fx->kind == KP_EFFECT_DETACH) {
                /* the records a delete takes with it, or leaves without their reference: found by
                 * a read per deleted record, then their rows deleted or rewritten in every table
                 * of them (price_rows: a row keyed by the detached reference is deleted) */
                price_rows(B, &S, fx, tables_of,
                           kp_arena_printf(B->A, fx->kind == KP_EFFECT_CASCADE ? "deleted with the %s:" : "detached from the %s:",
                                           fx->rel->source->name));
                S.reads += fx->records;
                kp_write_plan_read(B->d, S.wp, B->L->base[fx->entity->index]->name);
            } else if (fx->kind == KP_EFFECT_AGGREGATE) {
                price_aggregate(B, &S, fx, tables_of);
            } else if (fx->kind == KP_EFFECT_REFERENCE) {
                while (end < fxs->count && fxs->items[end].kind == KP_EFFECT_REFERENCE && fxs->items[end].step == fx->step) end++;
                price_references(B, &S, fx, &fxs->items[end], &copies_of[fx->step->entity->index]);
            }
        }
        kp_write_plan *wp = S.wp;
        /* statements go in logged batches of KP_CQ_MAX_BATCH, in order (writes.c), after the
         * reads that find the rows' keys */
        wp->requests = (S.rows > KP_CQ_MAX_BATCH ? ceil(S.rows / KP_CQ_MAX_BATCH) : 1) + S.reads + S.conditional;
        wp->read_requests = S.reads + S.conditional; /* a condition's transaction runs before the rows verify applies */
        wp->items_per_request = KP_CQ_MAX_BATCH;
        if (S.tables_touched > 1 || wr->is_atomic) {
            wp->mechanism = "logged batch";
            wp->why = kp_arena_printf(B->A, "%.0f row write%s across tables that hold copies of the same records: one LOGGED BATCH "
                                      "so the copies change together (atomic, not isolated)", S.rows, S.rows == 1 ? "" : "s");
        } else {
            wp->mechanism = "INSERT / UPDATE";
            wp->why = "one row in one table";
        }
        if (S.copy_rows > KP_CQ_MAX_BATCH)
            wp->why = kp_arena_printf(B->A, "%s; the copies in the rows that reference the record (about %.0f) fill more than one "
                                      "batch (20 rows, 32 KiB): they follow in further batches, not atomic with the rest",
                                      wp->why, S.copy_rows);
        else if (S.rows > KP_CQ_MAX_BATCH)
            wp->why = kp_arena_printf(B->A, "%s; its %.0f rows fill more than one batch (20 rows, 32 KiB): about %.0f batches in "
                                      "order, not atomic together", wp->why, S.rows, ceil(S.rows / KP_CQ_MAX_BATCH));
        if (S.read_why || S.value_why || S.reach_why)
            wp->why = kp_arena_printf(
                B->A, "%s; first reads the changed records by key (%.0f request%s, in parallel)%s%s%s%s%s%s", wp->why, S.reads,
                S.reads == 1 ? "" : "s", S.read_why ? ", for the key columns the write does not give: " : "",
                S.read_why ? S.read_why : "", S.reach_why ? ", for the records a for_each step reaches, by their parent: " : "",
                S.reach_why ? S.reach_why : "", S.value_why ? ", for the current value of what it keeps: " : "",
                S.value_why ? kp_arena_printf(B->A, "%s (a regular column has no increment and a counter table cannot join the "
                                                    "logged batch, so concurrent writers to one record can lose an update)",
                                              S.value_why)
                            : "");
        if (S.condition_why)
            wp->why = kp_arena_printf(B->A, "%s; tests its condition first, a lightweight transaction per conditional row (Paxos, "
                                      "four round trips; a batch with a condition cannot span partitions): %s; the other rows "
                                      "follow once it held%s",
                                      wp->why, S.condition_why,
                                      S.conditional > 1 ? ", so conditions on different partitions do not hold or fail together" : "");
    }
    for (size_t i = 0; i < lists; i++) { kp_index_list_free(&tables_of[i]); kp_index_list_free(&copies_of[i]); }
    free(tables_of);
    free(copies_of);
    kp_write_effects_free(&effects);
}

/* ---- containers, decisions ------------------------------------------------------------------------------- */

/* Is t a query table whose every row is a whole record of its entity and every record has
 * its row: its key columns are the entity's own required attributes (and the bucket), none
 * a copy or an array's element? */
static int holds_every_record(const cq_table *t)
{
    if (t->is_base) return 0;
    for (size_t k = 0; k < t->pk_count + t->ck_count; k++) {
        const cq_column *c = &t->cols[k];
        if (!c->attr) continue; /* the bucket: computed from the key */
        if (c->via || c->is_element || c->entity != t->entity || c->attr->is_optional) return 0;
    }
    return 1;
}

/* Drops the tables by key that nothing reads: no access pattern's SELECT, no write's read,
 * and no write that updates, deletes or conditionally inserts their records (those find a
 * record by its key), where a query table holds every record whole (holds_every_record),
 * so seeding, verify's read-back and migrate still see every record. Such a table would
 * cost each insert one more row and serve nothing. 1 when one was dropped (the writes are
 * then priced again). */
static int drop_unread_base_tables(builder *B)
{
    cq_layout *L = B->L;
    const kp_design *d = B->d;
    /* what is read, once: the containers the plans' operations and the writes' reads name,
     * and the entities a write step tests a condition on */
    kp_strmap read = {0};
    if (kp_design_containers_read(d, B->A, &read)) return 0;
    unsigned char *tested = kp_arena_alloc(B->A, B->m->entity_count + 1);
    if (!tested) return 0;
    memset(tested, 0, B->m->entity_count + 1);
    for (size_t w = 0; w < B->m->write_count; w++)
        for (size_t s = 0; s < B->m->writes[w]->step_count; s++) {
            const kp_write_step *st = &B->m->writes[w]->steps[s];
            if (st->is_if_absent || st->condition_count) tested[st->entity->index] = 1;
        }
    const cq_table **whole_of = kp_arena_alloc(B->A, sizeof *whole_of * (B->m->entity_count + 1));
    if (!whole_of) return 0;
    memset(whole_of, 0, sizeof *whole_of * (B->m->entity_count + 1));
    for (size_t i = 0; i < L->table_count; i++)
        if (!whole_of[L->tables[i]->entity->index] && holds_every_record(L->tables[i])) whole_of[L->tables[i]->entity->index] = L->tables[i];
    int dropped = 0;
    for (size_t e = 0; e < B->m->entity_count; e++) {
        const kp_entity *en = B->m->entities[e];
        cq_table *t = L->base[e];
        const cq_table *whole = whole_of[e];
        if (!whole || tested[e] || kp_strmap_get(&read, t->name)) continue;
        t->is_dropped = 1;
        dropped = 1;
        kp_decision *dc = kp_design_decide(
            B->d, t->name, kp_arena_printf(B->A, "no table of %s by key", en->name),
            kp_arena_printf(B->A, "no access pattern or write reads %s records by their key and no write updates or deletes them, "
                                  "and each is a whole row of %s: a table by key would cost every insert one more row and serve "
                                  "nothing",
                            en->name, whole->name));
        for (size_t k = 0; k < whole->cause_count; k++) kp_decision_add_pattern(B->d, dc, whole->causes[k]);
    }
    size_t kept = 0;
    for (size_t i = 0; i < L->table_count; i++)
        if (!L->tables[i]->is_dropped) L->tables[kept++] = L->tables[i];
    L->table_count = kept;
    return dropped;
}

static void describe(builder *B)
{
    kp_text diagram = {0};
    for (size_t i = 0; i < B->L->table_count; i++) {
        cq_table *t = B->L->tables[i];
        kp_container *c = kp_design_add_container(B->d, t->name, "table");
        c->key_count = t->pk_count + t->ck_count + (t->col_count - t->pk_count - t->ck_count);
        c->keys = kp_arena_alloc(B->A, sizeof *c->keys * (t->col_count + 1));
        size_t nk = 0;
        for (size_t k = 0; k < t->col_count; k++) {
            if (t->cols[k].role == CQ_REGULAR) continue;
            kp_key_part *kp = &c->keys[nk++];
            kp->name = t->cols[k].name;
            kp->role = t->cols[k].role == CQ_PARTITION ? KP_KEY_PARTITION : t->cols[k].role == CQ_CLUSTERING ? KP_KEY_SORT : KP_KEY_STATIC;
            kp->is_desc = t->cols[k].is_desc;
            kp->format = t->cols[k].attr ? (t->cols[k].entity == t->entity ? "" : kp_arena_printf(B->A, "<%s.%s>", t->cols[k].entity->name, t->cols[k].attr->name)) : t->bounds ? kp_arena_printf(B->A, "range of %s", t->cols[t->pk_count].name) : "hash(key) % buckets";
        }
        c->key_count = nk;
        c->entities = kp_arena_alloc(B->A, sizeof *c->entities * 2);
        c->entities[0] = t->entity;
        c->entity_count = 1;
        if (t->parent) c->entities[c->entity_count++] = t->parent;
        c->items = t->rows;
        c->bytes = t->bytes;
        /* size facts for the advisors: one row (the mutation a write sends), and the
         * largest partition (one bucket of it) at the maximum fan-out */
        double per_partition = t->max_partition_rows / (t->buckets > 1 ? t->buckets : 1);
        c->max_item_bytes = t->row_bytes;
        c->max_partition_items = per_partition;
        c->max_partition_bytes = per_partition * t->row_bytes;
        c->is_partition_bounded = 1;
        const char *causes = "";
        for (size_t k = 0; k < t->cause_count; k++) causes = kp_arena_printf(B->A, "%s%s%s", causes, k ? ", " : "", t->causes[k]->name);
        c->why = t->why ? t->why : kp_arena_printf(B->A, "query table for %s", causes);
        if (!t->is_base) {
            const char *pk = "", *ck = "";
            for (size_t k = 0; k < t->pk_count; k++) pk = kp_arena_printf(B->A, "%s%s%s", pk, k ? ", " : "", t->cols[k].name);
            for (size_t k = t->pk_count; k < t->pk_count + t->ck_count; k++)
                ck = kp_arena_printf(B->A, "%s%s%s %s", ck, k > t->pk_count ? ", " : "", t->cols[k].name, t->cols[k].is_desc ? "DESC" : "ASC");
            kp_decision *dc = kp_design_decide(B->d, t->name, kp_arena_printf(B->A, "PRIMARY KEY ((%s)%s%s)", pk, *ck ? ", " : "", ck),
                kp_arena_printf(B->A, "equality → partition key, range and order → clustering (%s), the rest of %s's key appended so rows never overwrite; "
                                "%s rows of %s, about %.0f per partition at most%s", *ck ? ck : "none", t->entity->name,
                                t->is_base ? "all" : "denormalised", t->entity->name, t->max_partition_rows,
                                t->cause_count > 1 ? "; shared by the patterns below (same columns in the same roles)" : ""));
            for (size_t k = 0; k < t->cause_count; k++) kp_decision_add_pattern(B->d, dc, t->causes[k]);
            if (t->buckets > 1) {
                const char *choice, *reads;
                if (t->bounds) {
                    const cq_column *c0 = &t->cols[t->pk_count];
                    const cJSON *b0 = t->bounds[0], *bn = t->bounds[t->buckets - 2];
                    choice = kp_arena_printf(B->A, "bucket in the partition key (%d range buckets of %s: before %s, %sfrom %s on)",
                                             t->buckets, c0->name, b0->valuestring, t->buckets > 2 ? "..., " : "", bn->valuestring);
                    int searched = 0;
                    for (size_t k = 0; k < t->cause_count && !searched; k++) searched = prefix_searched(t->causes[k], c0->attr);
                    const char *walk_text = searched ? "so a prefix search reads the bucket its prefix falls in, and the next only while "
                                                  "a bound splits the prefix and the page is not full"
                                                : "so a page in the clustering order starts in the bucket where it starts and reads "
                                                  "the next only while the page is not full";
                    if (c0->attr->type.kind == KP_T_STRING) {
                        int capital = leading_letter(c0->attr) == 'A';
                        reads = kp_arena_printf(B->A, "each bucket holds one run of %s's leading letters (its format '%s': the "
                                                "two-letter prefixes %s to %s cut in equal runs, twice as many buckets as the size "
                                                "needs since initial letters do not spread evenly; one that sorts before them in the "
                                                "first bucket, after them in the last), %s, where hash buckets would all be read and "
                                                "merged", c0->name, c0->attr->format, capital ? "Aa" : "aa", capital ? "Zz" : "zz", walk_text);
                    } else if (c0->attr->type.kind == KP_T_UUID) {
                        reads = kp_arena_printf(B->A, "each bucket holds one run of %s (random uuids spread evenly: their leading hex "
                                                "digits cut in equal runs), %s, where hash buckets would all be read and merged",
                                                c0->name, walk_text);
                    } else {
                        reads = kp_arena_printf(B->A, "each bucket holds one run of %s (its declared %s to %s cut in equal parts), so a "
                                                "read in the clustering order starts in the bucket its range starts in and goes on to "
                                                "the next only when one runs out, where hash buckets would all be read and merged; the "
                                                "rows of one run share a partition, so writes that all fall in one run (the newest "
                                                "times) meet there",
                                                c0->name, cJSON_IsString(c0->attr->min) ? c0->attr->min->valuestring : "min",
                                                cJSON_IsString(c0->attr->max) ? c0->attr->max->valuestring : "max");
                    }
                } else {
                    choice = kp_arena_printf(B->A, "bucket in the partition key (%d hash buckets)", t->buckets);
                    reads = t->hash_why ? t->hash_why : "reads span every bucket and merge in the client";
                }
                kp_decision *bd = kp_design_decide(B->d, t->name, choice,
                    kp_arena_printf(B->A, "the largest partition would hold about %.0f rows (%.1f MB), past the ~100,000 rows / ~100 MB a "
                                    "Cassandra partition should stay under; %s",
                                    t->max_partition_rows, t->max_partition_rows * t->row_bytes / 1e6, reads));
                for (size_t k = 0; k < t->cause_count; k++) kp_decision_add_pattern(B->d, bd, t->causes[k]);
            }
        } else {
            kp_decision *dc = kp_design_decide(B->d, t->name, kp_arena_printf(B->A, "%s by key", t->entity->name), t->why);
            for (size_t k = 0; k < t->cause_count; k++) kp_decision_add_pattern(B->d, dc, t->causes[k]);
        }
        if (i) kp_text_append(&diagram, "\n");
        kp_text_append(&diagram, kp_cq_table_text(B->A, t));
    }
    B->d->is_diagram_of_containers = 1; /* one box per table: exactly what the containers say */
    kp_text_append(&diagram, "\nK partition key, C\xe2\x86\x91/C\xe2\x86\x93 clustering (ASC/DESC), S static column\n");
    B->d->diagram = diagram.is_failed ? NULL : kp_arena_strndup(B->A, diagram.data, diagram.len);
    kp_text_free(&diagram);
    kp_decision *nd = kp_design_decide(B->d, "filtering", "no ALLOW FILTERING, no secondary index, no materialized view",
                                       "every read names a whole partition key; a condition no key serves is tested by the client on the rows of that partition, and the plan says so");
    (void)nd;
    /* hints that ask for ALLOW FILTERING / secondary indexes are shown, not needed */
    for (size_t h = 0; h < B->m->hint_count; h++) {
        const kp_hint *hint = &B->m->hints[h];
        if (strcmp(hint->database, "cassandra")) continue;
        kp_design_note(B->d, "hint %s on %s: the query tables serve the pattern without it; kept unused", hint->kind, hint->target);
    }
}

static void fingerprint(builder *B)
{
    uint64_t h = 1469598103934665603ULL;
    for (size_t i = 0; i < B->L->table_count; i++) {
        const char *parts[2] = {B->L->tables[i]->name, B->L->tables[i]->signature};
        for (int k = 0; k < 2; k++)
            for (const char *c = parts[k]; *c; c++) { h ^= (unsigned char)*c; h *= 1099511628211ULL; }
        for (size_t k = 0; k < B->L->tables[i]->col_count; k++)
            for (const char *c = B->L->tables[i]->cols[k].cql_type; *c; c++) { h ^= (unsigned char)*c; h *= 1099511628211ULL; }
        h ^= 0xff;
        h *= 1099511628211ULL;
    }
    snprintf(B->d->fingerprint, sizeof B->d->fingerprint, "%016llx", (unsigned long long)h);
}

static void free_layout(void *layout) { free(layout); }

int kp_cq_propose(const kp_model *m, const kp_propose_options *options, kp_design_list *out, kp_error *err)
{
    extern const kp_backend kp_cassandra_backend;
    out->items = NULL;
    out->count = 0;
    const kp_mix *mix = options && options->mix ? options->mix : m->default_mix;
    kp_design *d = kp_design_new(&kp_cassandra_backend, m, mix, "query tables");
    cq_layout *L = calloc(1, sizeof *L);
    if (!d || !L) {
        kp_design_free(d);
        free(L);
        return kp_error_set(err, KP_ERR_NOMEM, NULL, 0, 0, "out of memory");
    }
    d->layout = L;
    d->free_layout = free_layout;
    builder B = {m, mix, d, L, &d->arena, err, 0, NULL};
    B.attr_cols = kp_arena_alloc(B.A, sizeof *B.attr_cols * (m->entity_count ? m->entity_count : 1));
    L->keyspace = snake(B.A, m->name);
    /* column names: snake_case collisions within an entity are reported */
    for (size_t e = 0; e < m->entity_count; e++) {
        const kp_entity *en = m->entities[e];
        const char **names = kp_arena_alloc(B.A, sizeof *names * (en->attr_count + 1));
        for (size_t i = 0; i < en->attr_count; i++) names[i] = en->attrs[i]->name;
        size_t earlier = 0;
        long clash = kp_cql_snake_collision(names, en->attr_count, &earlier);
        if (clash >= 0) {
            const kp_attr *a = en->attrs[clash];
            kp_design_free(d);
            return kp_error_set(err, KP_ERR_MODEL, m->file, a->pos.line, a->pos.column,
                                "attributes '%s' and '%s' of %s are both the Cassandra column '%s'; rename one of them",
                                en->attrs[earlier]->name, a->name, en->name, snake(B.A, a->name));
        }
    }
    make_base_tables(&B);
    L->roots = kp_arena_alloc(B.A, sizeof *L->roots * (m->pattern_count ? m->pattern_count : 1));
    for (size_t i = 0; i < m->pattern_count; i++) L->roots[i] = plan_pattern(&B, m->patterns[i]);
    if (B.is_out_of_memory) {
        kp_design_free(d);
        return kp_error_set(err, KP_ERR_NOMEM, NULL, 0, 0, "out of memory");
    }
    decide_copies(&B);
    for (size_t i = 0; i < m->pattern_count; i++) skip_key_hops(&B, m->patterns[i], L->roots[i], L->roots[i], L->roots[i]);
    for (size_t i = 0; i < m->pattern_count; i++) note_related_conditions(&B, m->patterns[i], L->roots[i]);
    for (size_t i = 0; i < m->pattern_count; i++) plan_ops(&B, m->patterns[i], L->roots[i], &d->plans[i]);
    plan_writes(&B);
    if (drop_unread_base_tables(&B)) plan_writes(&B);
    describe(&B);
    size_t query = 0, statics = 0, bucketed = 0;
    for (size_t i = 0; i < L->table_count; i++) {
        query += !L->tables[i]->is_base;
        statics += L->tables[i]->parent != NULL;
        bucketed += L->tables[i]->buckets > 1;
    }
    d->summary = kp_design_printf(d, "%zu tables (%zu by key, %zu query tables; %zu with static columns, %zu bucketed), no ALLOW FILTERING",
                                  L->table_count, L->table_count - query, query, statics, bucketed);
    fingerprint(&B);
    out->items = malloc(sizeof *out->items);
    if (!out->items) { kp_design_free(d); return kp_error_set(err, KP_ERR_NOMEM, NULL, 0, 0, "out of memory"); }
    out->items[0] = d;
    out->count = 1;
    return 0;
}
