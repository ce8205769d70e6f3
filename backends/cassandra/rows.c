/*
 * rows.c — neutral records to Cassandra rows and back: the cell value of every model
 * type, transform (a record -> a row in every table of its entity, and the static
 * rows of the tables that hold it as a parent), the record a row gives back, and the
 * checksum read-back compares.
 *
 * A row body is a JSON object: column name -> the cell in the codec's canonical JSON
 * (cql_codec.h), absent columns left out (bound as unset, so seeding writes no
 * tombstones). Objects and arrays of objects are JSON text in a text column: nesting,
 * member order and empty values survive, which frozen collections would not all keep.
 * Invariant: kp_cq_from_cell(kp_cq_to_cell(v)) is v for every value of the column's
 * type, and kp_cq_row_checksum of a row read back is the checksum of the body transform
 * made, so seeding and read-back agree.
 */
#include "backends/cassandra/cql.h"
#include "backends/copies.h"
#include "backends/emit.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/data.h"
#include "core/json.h"

const cq_table *kp_cq_table(const kp_design *d, const char *name)
{
    const cq_layout *L = d->layout;
    for (size_t i = 0; i < L->table_count; i++)
        if (!strcmp(L->tables[i]->name, name)) return L->tables[i];
    return NULL;
}

cJSON *kp_cq_to_cell(const cq_column *c, const cJSON *value, kp_error *err)
{
    (void)err;
    if (!value || cJSON_IsNull(value)) return NULL;
    if (c->is_json) {
        char *text = cJSON_PrintUnformatted(value);
        cJSON *s = text ? cJSON_CreateString(text) : NULL;
        cJSON_free(text);
        return s;
    }
    if (c->type && (c->type->code == KP_CQL_T_DOUBLE || c->type->code == KP_CQL_T_FLOAT)) {
        /* the text Cassandra gives back ("0" for "0.0"): seeding and read-back checksums agree */
        kp_cql_buf buf = {0};
        cJSON *norm = NULL;
        if (kp_cql_value_encode(c->type, value, &buf, err) == 0 && buf.len >= 4)
            norm = kp_cql_value_decode(c->type, buf.data + 4, (int32_t)(buf.len - 4), err);
        kp_cql_buf_free(&buf);
        if (norm) return norm;
        kp_error_clear(err);
    }
    return kp_data_copy(value, NULL);
}

cJSON *kp_cq_from_cell(const cq_column *c, const cJSON *cell, kp_error *err)
{
    if (!cell || cJSON_IsNull(cell)) return NULL;
    if (c->is_json && cJSON_IsString(cell)) {
        kp_json_doc *doc = NULL;
        if (kp_json_parse("cassandra", cell->valuestring, strlen(cell->valuestring), NULL, &doc, err)) return NULL;
        cJSON *v = kp_data_copy(kp_json_root(doc), doc);
        kp_json_free(doc);
        return v;
    }
    return kp_data_copy(cell, NULL);
}

static uint64_t fnv(const char *s, uint64_t h)
{
    for (; *s; s++) { h ^= (unsigned char)*s; h *= 1099511628211ULL; }
    return h;
}

int kp_cq_range_bucket(const cq_table *t, const cJSON *value)
{
    const cq_column *c0 = &t->cols[t->pk_count];
    int b = 0;
    if (!value || cJSON_IsNull(value)) return 0;
    while (b < t->buckets - 1 && kp_data_compare(c0->attr->type.kind, t->bounds[b], value, NULL) <= 0) b++;
    return b;
}

int kp_cq_bucket(const cq_table *t, const cJSON *row)
{
    if (t->buckets <= 1) return 0;
    if (t->bounds) return kp_cq_range_bucket(t, cJSON_GetObjectItemCaseSensitive(row, t->cols[t->pk_count].name));
    uint64_t h = 1469598103934665603ULL;
    kp_text text = {0};
    for (size_t i = t->pk_count; i < t->pk_count + t->ck_count; i++) {
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(row, t->cols[i].name);
        text.len = 0;
        if (v) kp_text_json_compact(&text, v);
        h = fnv(v && !text.is_failed ? text.data : "null", h);
        h = fnv("|", h);
        text.is_failed = 0;
    }
    kp_text_free(&text);
    return (int)(h % (uint64_t)t->buckets);
}

char *kp_cq_item_id(const cq_table *t, const cJSON *body, int statics)
{
    /* TABLE[#static]:[KEY VALUES AS JSON] */
    size_t n = t->pk_count + (statics ? 0 : t->ck_count);
    kp_text id = {0};
    kp_text_append(&id, t->name);
    kp_text_append(&id, statics ? "#static:[" : ":[");
    for (size_t i = 0; i < n; i++) {
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(body, t->cols[i].name);
        if (i) kp_text_append(&id, ",");
        if (v) kp_text_json_compact(&id, v);
        else kp_text_append(&id, "null");
    }
    kp_text_append(&id, "]");
    if (id.is_failed) { free(id.data); return NULL; }
    return id.data;
}

static int push_item(kp_item_list *out, const cq_table *t, const kp_record *r, cJSON *body, int statics, kp_error *err)
{
    long printed = kp_json_compact_size(body);
    size_t bytes = printed > 0 ? (size_t)printed : 0;
    if (bytes > 16u * 1024 * 1024) {
        cJSON_Delete(body);
        return kp_error_set(err, KP_ERR_DATA, NULL, (int)r->line, 0,
                            "this %s record becomes a %zu-byte row of %s, above Cassandra's 16 MB mutation limit; it is not written",
                            r->entity->name, bytes, t->name);
    }
    kp_item *it = kp_item_list_push(out);
    if (!it) { cJSON_Delete(body); return kp_error_set(err, KP_ERR_NOMEM, NULL, 0, 0, "out of memory"); }
    it->container = t->name;
    it->entity = r->entity;
    it->body = body;
    it->bytes = bytes;
    it->id = kp_cq_item_id(t, body, statics);
    if (statics) {
        /* a static row: marked so the writer binds only its partition and static columns */
        cJSON_AddTrueToObject(body, "$static");
    }
    if (!it->id) return kp_error_set(err, KP_ERR_NOMEM, NULL, 0, 0, "out of memory");
    return 0;
}

/* The value a column takes for record r: its own attribute, or a copy of the attribute
 * of the record r references (absent when the reference leads nowhere or no data is
 * given). */
static const cJSON *column_value(const cq_column *c, const kp_dataset *data, const kp_record *r)
{
    if (!c->via) return kp_record_get(r, c->attr);
    const kp_record *source = data ? kp_copy_source(data, r, c->via) : NULL;
    return source ? kp_record_get(source, c->attr) : NULL;
}

/* The rows of table t for record r (several for a table keyed by array elements). */
static int table_rows(const cq_table *t, const kp_dataset *data, const kp_record *r, kp_item_list *out, kp_error *err)
{
    const cq_column *element = NULL;
    for (size_t i = 0; i < t->pk_count; i++)
        if (t->cols[i].is_element) element = &t->cols[i];
    cJSON *body = cJSON_CreateObject();
    if (!body) return kp_error_set(err, KP_ERR_NOMEM, NULL, 0, 0, "out of memory");
    for (size_t i = 0; i < t->col_count; i++) {
        const cq_column *c = &t->cols[i];
        if (!c->attr || c->role == CQ_STATIC || c->is_element) continue;
        /* a copy over an array of references: the targets' values, in the array's order */
        cJSON *list = data && c->via && c->via->relation->link == KP_LINK_ARRAY ? kp_copy_element_values(data, c->via, c->attr, r) : NULL;
        cJSON *cell = kp_cq_to_cell(c, list ? list : column_value(c, data, r), err);
        cJSON_Delete(list);
        if (cell) cJSON_AddItemToObject(body, c->name, cell);
    }
    /* a key column without a value cannot be written: such a record has no row here */
    for (size_t i = 0; i < t->pk_count + t->ck_count; i++) {
        const cq_column *c = &t->cols[i];
        if (c->attr && !c->is_element && !cJSON_GetObjectItemCaseSensitive(body, c->name)) { cJSON_Delete(body); return 0; }
    }
    if (!element) {
        if (t->has_bucket) cJSON_AddItemToObject(body, "bucket", kp_data_int(kp_cq_bucket(t, body)));
        return push_item(out, t, r, body, 0, err);
    }
    const cJSON *arr = kp_record_get(r, element->attr);
    int rc = 0;
    for (const cJSON *v = cJSON_IsArray(arr) ? arr->child : NULL; v && rc == 0; v = v->next) {
        int dup = 0;
        for (const cJSON *w = arr->child; w != v; w = w->next) dup |= kp_data_equal(v, w, NULL);
        if (dup) continue;
        cJSON *b = cJSON_Duplicate(body, 1);
        cJSON_AddItemToObject(b, element->name, kp_data_copy(v, NULL));
        if (t->has_bucket) cJSON_AddItemToObject(b, "bucket", kp_data_int(kp_cq_bucket(t, b)));
        rc = push_item(out, t, r, b, 0, err);
    }
    cJSON_Delete(body);
    return rc;
}

/* The static rows a parent record writes into the tables that hold it (every bucket). */
static int static_rows(const cq_table *t, const kp_record *r, kp_item_list *out, kp_error *err)
{
    int buckets = t->buckets > 1 ? t->buckets : 1;
    for (int b = 0; b < buckets; b++) {
        cJSON *body = cJSON_CreateObject();
        size_t k = 0;
        for (size_t i = 0; i < t->pk_count; i++) {
            const cq_column *c = &t->cols[i];
            if (!c->attr) { cJSON_AddItemToObject(body, "bucket", kp_data_int(b)); continue; }
            cJSON *cell = kp_cq_to_cell(c, kp_record_get(r, t->parent_keys[k++]), err);
            if (!cell) { cJSON_Delete(body); return 0; }
            cJSON_AddItemToObject(body, c->name, cell);
        }
        for (size_t i = 0; i < t->col_count; i++) {
            const cq_column *c = &t->cols[i];
            if (c->role != CQ_STATIC) continue;
            cJSON *cell = kp_cq_to_cell(c, kp_record_get(r, c->attr), err);
            if (cell) cJSON_AddItemToObject(body, c->name, cell);
        }
        if (push_item(out, t, r, body, 1, err)) return -1;
    }
    return 0;
}

int kp_cq_transform(const kp_design *d, const kp_dataset *data, const kp_record *r, kp_item_list *out, kp_error *err)
{
    const cq_layout *L = d->layout;
    for (size_t i = 0; i < L->table_count; i++) {
        const cq_table *t = L->tables[i];
        if (t->entity == r->entity && table_rows(t, data, r, out, err)) return -1;
        if (t->parent == r->entity && static_rows(t, r, out, err)) return -1;
    }
    return 0;
}

cJSON *kp_cq_record_of(const cq_table *t, const cJSON *row, int statics, kp_error *err)
{
    cJSON *rec = cJSON_CreateObject();
    if (!rec) return NULL;
    const kp_entity *e = statics ? t->parent : t->entity;
    size_t k = 0;
    for (size_t i = 0; i < t->col_count; i++) {
        const cq_column *c = &t->cols[i];
        if (!c->attr || c->is_element) { if (statics && i < t->pk_count && c->attr) k++; continue; }
        if (c->via) continue; /* a copy: the record it belongs to is made apart (execute.c) */
        const kp_attr *a = c->attr;
        if (statics) {
            if (i < t->pk_count) a = t->parent_keys[k++];
            else if (c->role != CQ_STATIC) continue;
        } else if (c->role == CQ_STATIC) {
            continue;
        }
        cJSON *v = kp_cq_from_cell(c, cJSON_GetObjectItemCaseSensitive(row, c->name), err);
        if (!v && err->code) { cJSON_Delete(rec); return NULL; }
        if (v && !cJSON_GetObjectItemCaseSensitive(rec, a->name)) cJSON_AddItemToObject(rec, a->name, v);
        else cJSON_Delete(v);
    }
    /* attributes absent from the row are absent from the record (the oracle's null) */
    (void)e;
    return rec;
}

/* Not a column the node holds: the static-row mark, and nulls (never written, unset,
 * and read back as absent). */
static int is_not_stored(const cJSON *member, const void *ctx)
{
    (void)ctx;
    return cJSON_IsNull(member) || strcmp(member->string, "$static") == 0;
}

uint64_t kp_cq_item_checksum(const cJSON *body)
{
    return kp_item_hash_without(body, is_not_stored, NULL);
}

typedef struct row_part {
    const cq_table *t;
    int statics;
} row_part;

/* Not a cell of the part read: a null, or a column of the other part (a row holds its
 * partition's statics too; a static row is the partition key and the statics). */
static int is_not_in_part(const cJSON *member, const void *ctx)
{
    const row_part *part = ctx;
    if (cJSON_IsNull(member)) return 1;
    for (size_t i = 0; i < part->t->col_count; i++) {
        const cq_column *c = &part->t->cols[i];
        if (strcmp(c->name, member->string) == 0)
            return part->statics ? i >= part->t->pk_count && c->role != CQ_STATIC : c->role == CQ_STATIC;
    }
    return 1;
}

uint64_t kp_cq_row_checksum(const cq_table *t, const cJSON *row, int statics)
{
    row_part part = {t, statics};
    return kp_item_hash_without(row, is_not_in_part, &part);
}
