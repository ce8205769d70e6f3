/*
 * docs.c — neutral records <-> MongoDB documents, and Extended JSON <-> bson.
 *
 * The type map (one table, docs/model.md's types on the left):
 *
 *   string, enum, uuid, timeuuid, date   BSON string (dates "YYYY-MM-DD" sort as text)
 *   int, counter                         BSON int64
 *   double                               BSON double
 *   decimal                              BSON double, exact up to 15 significant digits: the
 *                                        transform refuses a value a double cannot carry back
 *                                        (FerretDB has no Decimal128; on MongoDB proper,
 *                                        Decimal128 is the alternative)
 *   bool                                 BSON bool
 *   timestamp                            BSON date (milliseconds, what the canonical form keeps)
 *   blob                                 BSON binary, subtype 0
 *   object, map                          subdocument (map keys may not start with '$' or hold '.')
 *   array                                array
 *
 * An absent (or null) attribute is an absent field, so documents hold exactly the
 * record's normal form. `_id` is the key value itself for a one-attribute key, else one
 * string of the key parts in key order joined by '|' ('\\' and '|' escaped): deterministic,
 * so a repeated seed cannot duplicate a document, and a scalar, which every server
 * (FerretDB included) answers from the _id index — a subdocument _id makes FerretDB
 * read the whole collection.
 * Invariant: kp_mg_bson_to_ejson(kp_mg_ejson_to_bson(doc)) is the canonical form of
 * doc, which is what read-back sees — checksums on both sides are computed on it.
 */
#include "backends/assemble.h"
#include "backends/copies.h"
#include "backends/mongodb/mongo.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/data.h"
#include "core/value.h"

static cJSON *fail(kp_error *err, int code, const char *fmt, const char *a, const char *b)
{
    if (err) kp_error_set(err, code, NULL, 0, 0, fmt, a ? a : "", b ? b : "");
    return NULL;
}

/* ---- base64 (blobs) ----------------------------------------------------------------------- */

static const char b64_alphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

static uint8_t *b64_decode(const char *text, size_t *len)
{
    size_t n = strlen(text);
    uint8_t *out = malloc(n / 4 * 3 + 3);
    if (!out) return NULL;
    size_t o = 0;
    unsigned acc = 0;
    int bits = 0;
    for (size_t i = 0; i < n; i++) {
        if (text[i] == '=') break;
        const char *p = strchr(b64_alphabet, text[i]);
        if (!p || !text[i]) { free(out); return NULL; }
        acc = acc << 6 | (unsigned)(p - b64_alphabet);
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            out[o++] = (uint8_t)(acc >> bits & 0xFF);
        }
    }
    *len = o;
    return out;
}

static char *b64_encode(const uint8_t *data, size_t n)
{
    char *out = malloc((n + 2) / 3 * 4 + 1);
    if (!out) return NULL;
    size_t o = 0;
    for (size_t i = 0; i < n; i += 3) {
        unsigned v = (unsigned)data[i] << 16 | (i + 1 < n ? (unsigned)data[i + 1] << 8 : 0) | (i + 2 < n ? data[i + 2] : 0);
        out[o++] = b64_alphabet[v >> 18 & 63];
        out[o++] = b64_alphabet[v >> 12 & 63];
        out[o++] = i + 1 < n ? b64_alphabet[v >> 6 & 63] : '=';
        out[o++] = i + 2 < n ? b64_alphabet[v & 63] : '=';
    }
    out[o] = '\0';
    return out;
}

/* ---- numbers -------------------------------------------------------------------------------- */

/* The shortest text that reads back as x, without an exponent ("19.9", "500", "0.000001"). */
static void double_text(double x, char *buf, size_t size)
{
    if (x == 0) { snprintf(buf, size, "0"); return; }
    char tmp[64];
    int p;
    for (p = 1; p <= 17; p++) {
        snprintf(tmp, sizeof tmp, "%.*g", p, x);
        if (strtod(tmp, NULL) == x) break;
    }
    char *e = strchr(tmp, 'e');
    if (!e) { snprintf(buf, size, "%s", tmp); return; }
    /* expand d.ddde±X */
    int exp10 = atoi(e + 1);
    *e = '\0';
    int negative = tmp[0] == '-';
    char digits[40];
    size_t nd = 0;
    long point = 0;
    int seen_point = 0;
    for (const char *c = tmp + negative; *c; c++) {
        if (*c == '.') { seen_point = 1; continue; }
        digits[nd++] = *c;
        if (!seen_point) point++;
    }
    point += exp10;
    size_t o = 0;
    char out[512];
    if (negative) out[o++] = '-';
    if (point <= 0) {
        out[o++] = '0';
        out[o++] = '.';
        for (long i = 0; i < -point && o < sizeof out - 40; i++) out[o++] = '0';
        for (size_t i = 0; i < nd; i++) out[o++] = digits[i];
    } else {
        for (long i = 0; i < point && o < sizeof out - 40; i++) out[o++] = (size_t)i < nd ? digits[i] : '0';
        if ((size_t)point < nd) {
            out[o++] = '.';
            for (size_t i = (size_t)point; i < nd; i++) out[o++] = digits[i];
        }
    }
    out[o] = '\0';
    snprintf(buf, size, "%s", out);
}

static const char *number_text(const cJSON *v, char *buf, size_t size)
{
    size_t len;
    return (cJSON_IsRaw(v) || cJSON_IsNumber(v)) ? kp_number_text(v, NULL, buf, size, &len) : NULL;
}

static cJSON *wrapped(const char *key, const char *text)
{
    cJSON *o = cJSON_CreateObject();
    if (o && !cJSON_AddStringToObject(o, key, text)) { cJSON_Delete(o); return NULL; }
    return o;
}

/* ---- neutral -> Extended JSON ------------------------------------------------------------------ */

/* 1 when text is one JSON number (-?(0|[1-9]d*)(.d+)?([eE][+-]?d+)?): what a server's
 * number must be before it is kept as raw JSON text, so that no answer can splice
 * other JSON into a response or a report. */
static int is_json_number(const char *t)
{
    if (!t) return 0;
    if (*t == '-') t++;
    if (*t == '0') t++;
    else if (*t >= '1' && *t <= '9') while (*t >= '0' && *t <= '9') t++;
    else return 0;
    if (*t == '.') {
        t++;
        if (!(*t >= '0' && *t <= '9')) return 0;
        while (*t >= '0' && *t <= '9') t++;
    }
    if (*t == 'e' || *t == 'E') {
        t++;
        if (*t == '+' || *t == '-') t++;
        if (!(*t >= '0' && *t <= '9')) return 0;
        while (*t >= '0' && *t <= '9') t++;
    }
    return *t == '\0';
}

static int is_bad_field_name(const char *name)
{
    return !name[0] || name[0] == '$' || strchr(name, '.') != NULL;
}

cJSON *kp_mg_to_ejson(const kp_type *type, const cJSON *v, kp_error *err)
{
    if (!v || cJSON_IsNull(v)) return NULL;
    char buf[128];
    switch (type->kind) {
    case KP_T_STRING: case KP_T_ENUM: case KP_T_UUID: case KP_T_TIMEUUID: case KP_T_DATE:
        if (!cJSON_IsString(v)) return fail(err, KP_ERR_DATA, "expected a string value%s%s", NULL, NULL);
        return cJSON_CreateString(v->valuestring);
    case KP_T_INT: case KP_T_COUNTER: {
        const char *t = number_text(v, buf, sizeof buf);
        int64_t n;
        if (!t || kp_int_parse(t, strlen(t), &n)) return fail(err, KP_ERR_DATA, "expected an integer, got %s%s", t, NULL);
        char out[32];
        snprintf(out, sizeof out, "%" PRId64, n);
        return wrapped("$numberLong", out);
    }
    case KP_T_DECIMAL: case KP_T_DOUBLE: {
        const char *t = number_text(v, buf, sizeof buf);
        if (!t) return fail(err, KP_ERR_DATA, "expected a number%s%s", NULL, NULL);
        double x = strtod(t, NULL);
        if (!isfinite(x)) return fail(err, KP_ERR_DATA, "the number %s does not fit a BSON double%s", t, NULL);
        char out[600];
        double_text(x, out, sizeof out);
        if (type->kind == KP_T_DECIMAL && kp_decimal_check(t, strlen(t)) == 0 &&
            kp_decimal_compare(out, strlen(out), t, strlen(t)) != 0)
            return fail(err, KP_ERR_DATA,
                        "the decimal %s has more significant digits than a BSON double keeps (it would read back as %s); "
                        "keyplan stores decimals as doubles on MongoDB (FerretDB has no Decimal128): round it to 15 digits",
                        t, out);
        return wrapped("$numberDouble", out);
    }
    case KP_T_BOOL:
        if (!cJSON_IsBool(v)) return fail(err, KP_ERR_DATA, "expected true or false%s%s", NULL, NULL);
        return cJSON_CreateBool(cJSON_IsTrue(v));
    case KP_T_TIMESTAMP: {
        int64_t ms;
        if (!cJSON_IsString(v) || kp_timestamp_parse(v->valuestring, &ms))
            return fail(err, KP_ERR_DATA, "expected a timestamp like \"2026-04-01T09:30:00.000Z\"%s%s", NULL, NULL);
        char out[32];
        snprintf(out, sizeof out, "%" PRId64, ms);
        cJSON *o = cJSON_CreateObject();
        cJSON *inner = wrapped("$numberLong", out);
        if (!o || !inner) { cJSON_Delete(o); cJSON_Delete(inner); return NULL; }
        cJSON_AddItemToObject(o, "$date", inner);
        return o;
    }
    case KP_T_BLOB: {
        if (!cJSON_IsString(v)) return fail(err, KP_ERR_DATA, "expected base64 text%s%s", NULL, NULL);
        cJSON *o = cJSON_CreateObject(), *inner = cJSON_CreateObject();
        if (!o || !inner) { cJSON_Delete(o); cJSON_Delete(inner); return NULL; }
        cJSON_AddStringToObject(inner, "base64", v->valuestring);
        cJSON_AddStringToObject(inner, "subType", "00");
        cJSON_AddItemToObject(o, "$binary", inner);
        return o;
    }
    case KP_T_OBJECT: {
        if (!cJSON_IsObject(v)) return fail(err, KP_ERR_DATA, "expected an object%s%s", NULL, NULL);
        cJSON *o = cJSON_CreateObject();
        for (const cJSON *m = v->child; o && m; m = m->next) {
            const kp_attr *field = NULL;
            for (size_t i = 0; i < type->field_count; i++)
                if (strcmp(type->fields[i]->name, m->string) == 0) field = type->fields[i];
            if (!field) continue;
            if (cJSON_IsNull(m)) continue;
            cJSON *x = kp_mg_to_ejson(&field->type, m, err);
            if (!x) { cJSON_Delete(o); return NULL; }
            cJSON_AddItemToObject(o, m->string, x);
        }
        return o;
    }
    case KP_T_MAP: {
        if (!cJSON_IsObject(v)) return fail(err, KP_ERR_DATA, "expected an object (a map)%s%s", NULL, NULL);
        cJSON *o = cJSON_CreateObject();
        for (const cJSON *m = v->child; o && m; m = m->next) {
            if (is_bad_field_name(m->string)) {
                cJSON_Delete(o);
                return fail(err, KP_ERR_DATA, "the map key \"%s\" cannot be a MongoDB field name (empty, starting with "
                            "'$' or holding '.')%s", m->string, NULL);
            }
            cJSON *x = cJSON_IsNull(m) ? cJSON_CreateNull() : kp_mg_to_ejson(type->item, m, err);
            if (!x) { cJSON_Delete(o); return NULL; }
            cJSON_AddItemToObject(o, m->string, x);
        }
        return o;
    }
    case KP_T_ARRAY: {
        if (!cJSON_IsArray(v)) return fail(err, KP_ERR_DATA, "expected an array%s%s", NULL, NULL);
        if (type->item && type->item->kind == KP_T_ARRAY)
            return fail(err, KP_ERR_DATA, "arrays of arrays are not stored (FerretDB has no nested arrays)%s%s", NULL, NULL);
        cJSON *a = cJSON_CreateArray();
        for (const cJSON *m = v->child; a && m; m = m->next) {
            cJSON *x = cJSON_IsNull(m) ? cJSON_CreateNull() : kp_mg_to_ejson(type->item, m, err);
            if (!x) { cJSON_Delete(a); return NULL; }
            cJSON_AddItemToArray(a, x);
        }
        return a;
    }
    default: break;
    }
    return fail(err, KP_ERR_INTERNAL, "an attribute type MongoDB does not map%s%s", NULL, NULL);
}

/* ---- Extended JSON -> neutral --------------------------------------------------------------------- */

static const char *wrapped_text(const cJSON *o, const char *key)
{
    if (!cJSON_IsObject(o)) return NULL;
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    return cJSON_IsString(v) ? v->valuestring : NULL;
}

/* "string", "number", "object", ... of an extended-JSON value, for messages. */
static const char *type_of_ejson(const cJSON *e)
{
    if (cJSON_IsString(e)) return "string";
    if (cJSON_IsNumber(e) || cJSON_IsRaw(e)) return "number";
    if (cJSON_IsBool(e)) return "boolean";
    if (cJSON_IsArray(e)) return "array";
    if (cJSON_IsObject(e)) return e->child && e->child->string && e->child->string[0] == '$' ? e->child->string : "object";
    return "value";
}

cJSON *kp_mg_from_ejson(const kp_type *type, const cJSON *e, kp_error *err)
{
    if (!e || cJSON_IsNull(e)) return cJSON_CreateNull();
    switch (type->kind) {
    case KP_T_STRING: case KP_T_ENUM: case KP_T_UUID: case KP_T_TIMEUUID: case KP_T_DATE:
        if (cJSON_IsString(e)) return cJSON_CreateString(e->valuestring);
        break;
    case KP_T_INT: case KP_T_COUNTER: case KP_T_DECIMAL: case KP_T_DOUBLE: {
        const char *t = wrapped_text(e, "$numberLong");
        if (!t) t = wrapped_text(e, "$numberInt");
        if (!t) t = wrapped_text(e, "$numberDouble");
        if (!t) t = wrapped_text(e, "$numberDecimal");
        if (!t || !is_json_number(t)) break;   /* NaN, Infinity or text that is not a number */
        if (type->kind == KP_T_INT || type->kind == KP_T_COUNTER) {
            /* an integral double (a server that widened the type) reads back as the integer */
            double x = strtod(t, NULL);
            char out[64];
            if (strchr(t, '.') || strchr(t, 'e') || strchr(t, 'E')) {
                if (!(fabs(x) < 9.2e18)) break;   /* not an int64: infinite, or beyond its range */
                snprintf(out, sizeof out, "%.0f", x);
                return kp_data_number(out);
            }
        }
        return kp_data_number(t);
    }
    case KP_T_BOOL:
        if (cJSON_IsBool(e)) return cJSON_CreateBool(cJSON_IsTrue(e));
        break;
    case KP_T_TIMESTAMP: {
        const cJSON *d = cJSON_IsObject(e) ? cJSON_GetObjectItemCaseSensitive(e, "$date") : NULL;
        const char *t = wrapped_text(d, "$numberLong");
        if (t) {
            char out[32];
            kp_timestamp_format(strtoll(t, NULL, 10), out);
            return cJSON_CreateString(out);
        }
        if (cJSON_IsString(d)) return cJSON_CreateString(d->valuestring);
        break;
    }
    case KP_T_BLOB: {
        const cJSON *b = cJSON_IsObject(e) ? cJSON_GetObjectItemCaseSensitive(e, "$binary") : NULL;
        const char *t = wrapped_text(b, "base64");
        if (t) return cJSON_CreateString(t);
        break;
    }
    case KP_T_OBJECT: {
        if (!cJSON_IsObject(e)) break;
        cJSON *o = cJSON_CreateObject();
        for (size_t i = 0; o && i < type->field_count; i++) {
            const cJSON *m = cJSON_GetObjectItemCaseSensitive(e, type->fields[i]->name);
            if (!m || cJSON_IsNull(m)) continue;
            cJSON *x = kp_mg_from_ejson(&type->fields[i]->type, m, err);
            if (!x) { cJSON_Delete(o); return NULL; }
            cJSON_AddItemToObject(o, type->fields[i]->name, x);
        }
        return o;
    }
    case KP_T_MAP: {
        if (!cJSON_IsObject(e)) break;
        cJSON *o = cJSON_CreateObject();
        for (const cJSON *m = e->child; o && m; m = m->next) {
            cJSON *x = kp_mg_from_ejson(type->item, m, err);
            if (!x) { cJSON_Delete(o); return NULL; }
            cJSON_AddItemToObject(o, m->string, x);
        }
        return o;
    }
    case KP_T_ARRAY: {
        if (!cJSON_IsArray(e)) break;
        cJSON *a = cJSON_CreateArray();
        for (const cJSON *m = e->child; a && m; m = m->next) {
            cJSON *x = kp_mg_from_ejson(type->item, m, err);
            if (!x) { cJSON_Delete(a); return NULL; }
            cJSON_AddItemToArray(a, x);
        }
        return a;
    }
    default: break;
    }
    /* a value of another type than the model's: a data error the caller reports as a
     * mismatch of this value (KP_ERR_DATA), not a failing server */
    (void)fail(err, KP_ERR_DATA, "a %s where the model declares %s", type_of_ejson(e), kp_type_name(type->kind));
    return NULL;
}

/* ---- ids, records, documents ------------------------------------------------------------------------ */

/* One key part as text inside a compound _id: the canonical value, '\\' and '|' escaped. */
static int key_part_text(const kp_attr *a, const cJSON *v, char *buf, size_t size)
{
    char tmp[1024];
    const char *t;
    if (cJSON_IsString(v)) t = v->valuestring;
    else if (cJSON_IsBool(v)) t = cJSON_IsTrue(v) ? "true" : "false";
    else t = number_text(v, tmp, sizeof tmp);
    if (!t) return -1;
    (void)a;
    size_t o = 0;
    for (; *t; t++) {
        if (o + 3 >= size) return -1;
        if (*t == '\\' || *t == '|') buf[o++] = '\\';
        buf[o++] = *t;
    }
    buf[o] = '\0';
    return 0;
}

cJSON *kp_mg_id(const kp_entity *entity, const cJSON *object, kp_error *err)
{
    if (entity->key_count == 1) {
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(object, entity->key[0]->name);
        cJSON *id = v ? kp_mg_to_ejson(&entity->key[0]->type, v, err) : NULL;
        if (!id && err && !err->code)
            kp_error_set(err, KP_ERR_DATA, NULL, 0, 0, "a %s record has no %s, its key", entity->name, entity->key[0]->name);
        return id;
    }
    /* a compound key: one string of its parts, so the _id stays a scalar every server looks up by index */
    char text[4096] = "";
    size_t len = 0;
    for (size_t k = 0; k < entity->key_count; k++) {
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(object, entity->key[k]->name);
        char part[2048];
        if (!v || cJSON_IsNull(v) || key_part_text(entity->key[k], v, part, sizeof part)) {
            if (err && !err->code)
                kp_error_set(err, KP_ERR_DATA, NULL, 0, 0, "a %s record has no usable %s, part of its key", entity->name,
                             entity->key[k]->name);
            return NULL;
        }
        int n = snprintf(text + len, sizeof text - len, "%s%s", k ? "|" : "", part);
        if (n < 0 || (size_t)n >= sizeof text - len) {
            if (err) kp_error_set(err, KP_ERR_DATA, NULL, 0, 0, "a %s key is longer than 4 KB", entity->name);
            return NULL;
        }
        len += (size_t)n;
    }
    return cJSON_CreateString(text);
}

cJSON *kp_mg_record_of(const kp_entity *entity, const cJSON *doc, kp_error *err)
{
    cJSON *o = cJSON_CreateObject();
    for (size_t i = 0; o && i < entity->attr_count; i++) {
        const kp_attr *a = entity->attrs[i];
        const cJSON *f = cJSON_GetObjectItemCaseSensitive(doc, a->name);
        if (!f || cJSON_IsNull(f)) continue;
        kp_error value_err = {0};
        cJSON *v = kp_mg_from_ejson(&a->type, f, &value_err);
        if (!v && value_err.code == KP_ERR_DATA) {
            /* a value of the wrong type is a mismatch of this value, reported with its path */
            char *text = cJSON_PrintUnformatted(f), *id = cJSON_PrintUnformatted(cJSON_GetObjectItemCaseSensitive(doc, "_id"));
            char found[700];
            snprintf(found, sizeof found, "MongoDB %.200s (%.200s) in the document _id %.200s", text ? text : "?",
                     value_err.message, id ? id : "?");
            cJSON_free(text);
            cJSON_free(id);
            v = kp_wrong_type_value(a, found);
        } else if (!v && err) {
            *err = value_err;
        }
        if (!v) { cJSON_Delete(o); return NULL; }
        if (cJSON_IsNull(v)) { cJSON_Delete(v); continue; }
        cJSON_AddItemToObject(o, a->name, v);
    }
    if (!o && err) kp_error_set(err, KP_ERR_NOMEM, NULL, 0, 0, "out of memory");
    return o;
}

/* Orders records as a shape's $order does (the oracle's comparator: nulls last unless
 * "nulls": "first", then the key). */
static int compare_records(const kp_shape *s, const kp_record *a, const kp_record *b)
{
    for (size_t k = 0; k < s->order_count; k++) {
        const kp_order_key *key = &s->order[k];
        const cJSON *x = kp_record_get(a, key->attr), *y = kp_record_get(b, key->attr);
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

static void merge_sort(const kp_shape *s, kp_record **items, kp_record **tmp, size_t n)
{
    if (n < 2) return;
    size_t half = n / 2;
    merge_sort(s, items, tmp, half);
    merge_sort(s, items + half, tmp, n - half);
    size_t i = 0, j = half, o = 0;
    while (i < half && j < n) tmp[o++] = compare_records(s, items[j], items[i]) < 0 ? items[j++] : items[i++];
    while (i < half) tmp[o++] = items[i++];
    while (j < n) tmp[o++] = items[j++];
    memcpy(items, tmp, n * sizeof *items);
}

const char *kp_mg_alias(const mg_entity *me, const kp_attr *a)
{
    for (size_t i = 0; me && i < me->alias_count; i++)
        if (me->aliases[i].attr == a) return me->aliases[i].path;
    return NULL;
}

cJSON *kp_mg_record_of_entity(const mg_entity *me, const cJSON *doc, kp_error *err)
{
    cJSON *o = kp_mg_record_of(me->entity, doc, err);
    for (size_t i = 0; o && i < me->alias_count; i++) {
        /* "shipping.carrier": the embedded subdocument's field */
        const cJSON *at = doc;
        const char *path = me->aliases[i].path;
        char part[256];
        while (at && *path) {
            size_t n = strcspn(path, ".");
            if (n >= sizeof part) { at = NULL; break; }
            memcpy(part, path, n);
            part[n] = '\0';
            at = cJSON_IsObject(at) ? cJSON_GetObjectItemCaseSensitive(at, part) : NULL;
            path += n + (path[n] == '.');
        }
        if (!at || cJSON_IsNull(at)) continue;
        kp_error value_err = {0};
        cJSON *v = kp_mg_from_ejson(&me->aliases[i].attr->type, at, &value_err);
        if (v) cJSON_AddItemToObject(o, me->aliases[i].attr->name, v);
    }
    return o;
}

static int add_attributes(const mg_entity *me, cJSON *doc, const kp_record *r, kp_error *err)
{
    for (size_t i = 0; i < r->entity->attr_count; i++) {
        const kp_attr *a = r->entity->attrs[i];
        if (kp_mg_alias(me, a)) continue; /* held at its embedded source */
        const cJSON *v = kp_record_get(r, a);
        if (!v || cJSON_IsNull(v)) continue;
        cJSON *x = kp_mg_to_ejson(&a->type, v, err);
        if (!x) {
            if (err->code == KP_OK) kp_error_set(err, KP_ERR_NOMEM, NULL, 0, 0, "out of memory");
            char msg[1200];
            snprintf(msg, sizeof msg, "%s.%s: %s", r->entity->name, a->name, err->message);
            size_t n = strlen(msg) < sizeof err->message - 1 ? strlen(msg) : sizeof err->message - 1;
            memcpy(err->message, msg, n);
            err->message[n] = '\0';
            return -1;
        }
        cJSON_AddItemToObject(doc, a->name, x);
    }
    return 0;
}

/* The copies over an array of references: one subdocument per element, in the array's
 * order (empty where the target has none of the fields). */
static int add_array_extref(const mg_extref *x, const kp_dataset *data, const kp_record *r, cJSON *doc, kp_error *err)
{
    const cJSON *refs = kp_record_get(r, x->rel->relation->array_attr);
    if (!cJSON_IsArray(refs) || !data) return 0;
    cJSON *list = cJSON_CreateArray();
    for (const cJSON *ref = refs->child; list && ref; ref = ref->next) {
        cJSON *sub = cJSON_CreateObject();
        if (!sub) { cJSON_Delete(list); return kp_error_set(err, KP_ERR_NOMEM, NULL, 0, 0, "out of memory"); }
        const kp_record *target = kp_copy_element_source(data, x->rel, ref);
        for (size_t k = 0; target && k < x->attr_count; k++) {
            const cJSON *v = kp_record_get(target, x->attrs[k]);
            if (!v || cJSON_IsNull(v)) continue;
            cJSON *e = kp_mg_to_ejson(&x->attrs[k]->type, v, err);
            if (!e) { cJSON_Delete(sub); cJSON_Delete(list); return -1; }
            cJSON_AddItemToObject(sub, x->attrs[k]->name, e);
        }
        cJSON_AddItemToArray(list, sub);
    }
    if (!list) return kp_error_set(err, KP_ERR_NOMEM, NULL, 0, 0, "out of memory");
    cJSON_AddItemToObject(doc, x->field, list);
    return 0;
}

static int add_extrefs(const mg_entity *me, const kp_dataset *data, const kp_record *r, cJSON *doc, const kp_rel *inside,
                       kp_error *err)
{
    for (size_t i = 0; i < me->extref_count; i++) {
        const mg_extref *x = &me->extrefs[i];
        if (inside && x->rel->relation == inside->relation) continue; /* a copy of the document it sits in */
        if (x->rel->relation->link == KP_LINK_ARRAY) {
            if (add_array_extref(x, data, r, doc, err)) return -1;
            continue;
        }
        const kp_record *target = kp_copy_source(data, r, x->rel);
        if (!target) continue;
        cJSON *sub = cJSON_CreateObject();
        for (size_t k = 0; sub && k < x->attr_count; k++) {
            const cJSON *v = kp_record_get(target, x->attrs[k]);
            if (!v || cJSON_IsNull(v)) continue;
            cJSON *e = kp_mg_to_ejson(&x->attrs[k]->type, v, err);
            if (!e) { cJSON_Delete(sub); return -1; }
            cJSON_AddItemToObject(sub, x->attrs[k]->name, e);
        }
        if (!sub) return kp_error_set(err, KP_ERR_NOMEM, NULL, 0, 0, "out of memory");
        cJSON_AddItemToObject(doc, x->field, sub);
    }
    return 0;
}

/* A record's fields: `_id` (when asked), attributes, nested children, extended references
 * (except a copy of the parent it is nested in, `inside`). */
static int build(const mg_layout *L, const kp_dataset *data, const kp_record *r, int with_id, int with_nested,
                 const kp_rel *inside, cJSON **out, kp_error *err)
{
    const mg_entity *me = &L->entities[r->entity->index];
    cJSON *doc = cJSON_CreateObject();
    if (!doc) return kp_error_set(err, KP_ERR_NOMEM, NULL, 0, 0, "out of memory");
    if (with_id) {
        cJSON *id = kp_mg_id(r->entity, r->object, err);
        if (!id) { cJSON_Delete(doc); return -1; }
        cJSON_AddItemToObject(doc, "_id", id);
    }
    if (add_attributes(me, doc, r, err)) { cJSON_Delete(doc); return -1; }
    for (size_t i = 0; with_nested && i < me->nested_count; i++) {
        const mg_nested *n = &me->nested[i];
        kp_record_list children = {0};
        if (kp_dataset_follow(data, r, n->rel, &children, err)) { cJSON_Delete(doc); return -1; }
        size_t count = children.count;
        if (n->subset > 0 && n->order_shape) {
            kp_record **tmp = malloc((count ? count : 1) * sizeof *tmp);
            if (!tmp) { kp_record_list_free(&children); cJSON_Delete(doc); return kp_error_set(err, KP_ERR_NOMEM, NULL, 0, 0, "out of memory"); }
            merge_sort(n->order_shape, children.items, tmp, count);
            free(tmp);
            if (count > (size_t)n->subset) count = (size_t)n->subset;
        }
        if (!n->is_array) {
            if (count) {
                cJSON *child = NULL;
                if (build(L, data, children.items[0], 0, 0, n->rel, &child, err)) { kp_record_list_free(&children); cJSON_Delete(doc); return -1; }
                cJSON_AddItemToObject(doc, n->field, child);
            }
        } else {
            cJSON *arr = cJSON_CreateArray();
            for (size_t k = 0; arr && k < count; k++) {
                cJSON *child = NULL;
                if (build(L, data, children.items[k], 0, 0, n->rel, &child, err)) { kp_record_list_free(&children); cJSON_Delete(arr); cJSON_Delete(doc); return -1; }
                cJSON_AddItemToArray(arr, child);
            }
            if (!arr) { kp_record_list_free(&children); cJSON_Delete(doc); return kp_error_set(err, KP_ERR_NOMEM, NULL, 0, 0, "out of memory"); }
            cJSON_AddItemToObject(doc, n->field, arr);
        }
        kp_record_list_free(&children);
    }
    if (add_extrefs(me, data, r, doc, inside, err)) { cJSON_Delete(doc); return -1; }
    *out = doc;
    return 0;
}

int kp_mg_document(const kp_design *d, const kp_dataset *data, const kp_record *r, cJSON **out, kp_error *err)
{
    const mg_layout *L = d->layout;
    const mg_entity *me = &L->entities[r->entity->index];
    return build(L, data, r, me->collection != NULL, 1, NULL, out, err);
}

/* ---- Extended JSON <-> bson ------------------------------------------------------------------------ */

static int append_value(bson_t *b, const char *key, const cJSON *v, kp_error *err);

static int append_members(bson_t *b, const cJSON *object, kp_error *err)
{
    for (const cJSON *m = object->child; m; m = m->next)
        if (append_value(b, m->string, m, err)) return -1;
    return 0;
}

static int append_number_text(bson_t *b, const char *key, const char *t)
{
    int64_t n;
    if (kp_int_parse(t, strlen(t), &n) == 0) {
        if (n >= INT32_MIN && n <= INT32_MAX) return bson_append_int32(b, key, -1, (int32_t)n) ? 0 : -1;
        return bson_append_int64(b, key, -1, n) ? 0 : -1;
    }
    return bson_append_double(b, key, -1, strtod(t, NULL)) ? 0 : -1;
}

static int append_value(bson_t *b, const char *key, const cJSON *v, kp_error *err)
{
    int ok = 1;
    if (cJSON_IsString(v)) ok = bson_append_utf8(b, key, -1, v->valuestring, -1);
    else if (cJSON_IsTrue(v)) ok = bson_append_bool(b, key, -1, true);
    else if (cJSON_IsFalse(v)) ok = bson_append_bool(b, key, -1, false);
    else if (cJSON_IsNull(v)) ok = bson_append_null(b, key, -1);
    else if (cJSON_IsRaw(v)) ok = append_number_text(b, key, v->valuestring) == 0;
    else if (cJSON_IsNumber(v)) {
        double x = v->valuedouble;
        if (x == floor(x) && fabs(x) < 9.2e18) {
            if (x >= INT32_MIN && x <= INT32_MAX) ok = bson_append_int32(b, key, -1, (int32_t)x);
            else ok = bson_append_int64(b, key, -1, (int64_t)x);
        } else ok = bson_append_double(b, key, -1, x);
    } else if (cJSON_IsArray(v)) {
        bson_t child;
        ok = bson_append_array_begin(b, key, -1, &child);
        int i = 0;
        for (const cJSON *m = v->child; ok && m; m = m->next, i++) {
            char index[16];
            snprintf(index, sizeof index, "%d", i);
            if (append_value(&child, index, m, err)) { bson_append_array_end(b, &child); return -1; }
        }
        if (ok) ok = bson_append_array_end(b, &child);
    } else if (cJSON_IsObject(v)) {
        const cJSON *only = v->child && !v->child->next ? v->child : NULL;
        const char *k = only ? only->string : "";
        if (only && strcmp(k, "$numberLong") == 0 && cJSON_IsString(only)) {
            ok = bson_append_int64(b, key, -1, strtoll(only->valuestring, NULL, 10));
        } else if (only && strcmp(k, "$numberInt") == 0 && cJSON_IsString(only)) {
            ok = bson_append_int32(b, key, -1, (int32_t)strtol(only->valuestring, NULL, 10));
        } else if (only && strcmp(k, "$numberDouble") == 0 && cJSON_IsString(only)) {
            ok = bson_append_double(b, key, -1, strtod(only->valuestring, NULL));
        } else if (only && strcmp(k, "$date") == 0) {
            const char *ms = wrapped_text(only, "$numberLong");
            int64_t t = 0;
            if (ms) t = strtoll(ms, NULL, 10);
            else if (!cJSON_IsString(only) || kp_timestamp_parse(only->valuestring, &t))
                return kp_error_set(err, KP_ERR_INTERNAL, NULL, 0, 0, "a $date that is not a date");
            ok = bson_append_date_time(b, key, -1, t);
        } else if (only && strcmp(k, "$binary") == 0) {
            const char *text = wrapped_text(only, "base64");
            size_t n = 0;
            uint8_t *bytes = text ? b64_decode(text, &n) : NULL;
            if (!bytes) return kp_error_set(err, KP_ERR_DATA, NULL, 0, 0, "a blob that is not base64");
            ok = bson_append_binary(b, key, -1, BSON_SUBTYPE_BINARY, bytes, (uint32_t)n);
            free(bytes);
        } else if (only && strcmp(k, "$regularExpression") == 0) {
            const char *pattern = wrapped_text(only, "pattern"), *options = wrapped_text(only, "options");
            ok = bson_append_regex(b, key, -1, pattern ? pattern : "", options ? options : "");
        } else {
            bson_t child;
            ok = bson_append_document_begin(b, key, -1, &child);
            if (ok && append_members(&child, v, err)) { bson_append_document_end(b, &child); return -1; }
            if (ok) ok = bson_append_document_end(b, &child);
        }
    }
    if (!ok) return kp_error_set(err, KP_ERR_DATA, NULL, 0, 0, "a document is too large for BSON (field '%s')", key);
    return 0;
}

int kp_mg_ejson_to_bson(const cJSON *ejson, bson_t *out, kp_error *err)
{
    bson_init(out);
    if (!cJSON_IsObject(ejson)) return kp_error_set(err, KP_ERR_INTERNAL, NULL, 0, 0, "a document that is not an object");
    if (append_members(out, ejson, err)) { bson_destroy(out); bson_init(out); return -1; }
    return 0;
}

static cJSON *iter_value(bson_iter_t *it);

static cJSON *iter_document(bson_iter_t *child, int is_array)
{
    cJSON *o = is_array ? cJSON_CreateArray() : cJSON_CreateObject();
    while (o && bson_iter_next(child)) {
        cJSON *v = iter_value(child);
        if (!v) { cJSON_Delete(o); return NULL; }
        if (is_array) cJSON_AddItemToArray(o, v);
        else cJSON_AddItemToObject(o, bson_iter_key(child), v);
    }
    return o;
}

static cJSON *iter_value(bson_iter_t *it)
{
    char buf[64];
    switch (bson_iter_type(it)) {
    case BSON_TYPE_UTF8: {
        uint32_t len;
        const char *s = bson_iter_utf8(it, &len);
        return cJSON_CreateString(s);
    }
    case BSON_TYPE_INT32:
        snprintf(buf, sizeof buf, "%d", (int)bson_iter_int32(it));
        return wrapped("$numberLong", buf);
    case BSON_TYPE_INT64:
        snprintf(buf, sizeof buf, "%" PRId64, bson_iter_int64(it));
        return wrapped("$numberLong", buf);
    case BSON_TYPE_DOUBLE: {
        char out[600];
        double_text(bson_iter_double(it), out, sizeof out);
        return wrapped("$numberDouble", out);
    }
    case BSON_TYPE_BOOL: return cJSON_CreateBool(bson_iter_bool(it));
    case BSON_TYPE_NULL: case BSON_TYPE_UNDEFINED: return cJSON_CreateNull();
    case BSON_TYPE_DATE_TIME: {
        snprintf(buf, sizeof buf, "%" PRId64, bson_iter_date_time(it));
        cJSON *o = cJSON_CreateObject(), *inner = wrapped("$numberLong", buf);
        if (!o || !inner) { cJSON_Delete(o); cJSON_Delete(inner); return NULL; }
        cJSON_AddItemToObject(o, "$date", inner);
        return o;
    }
    case BSON_TYPE_BINARY: {
        bson_subtype_t subtype;
        uint32_t len;
        const uint8_t *bytes;
        bson_iter_binary(it, &subtype, &len, &bytes);
        char *text = b64_encode(bytes, len);
        cJSON *o = cJSON_CreateObject(), *inner = cJSON_CreateObject();
        if (!text || !o || !inner) { free(text); cJSON_Delete(o); cJSON_Delete(inner); return NULL; }
        cJSON_AddStringToObject(inner, "base64", text);
        snprintf(buf, sizeof buf, "%02x", (unsigned)subtype);
        cJSON_AddStringToObject(inner, "subType", buf);
        cJSON_AddItemToObject(o, "$binary", inner);
        free(text);
        return o;
    }
    case BSON_TYPE_DOCUMENT: case BSON_TYPE_ARRAY: {
        bson_iter_t child;
        if (!bson_iter_recurse(it, &child)) return NULL;
        return iter_document(&child, bson_iter_type(it) == BSON_TYPE_ARRAY);
    }
    case BSON_TYPE_OID: {
        char hex[25];
        bson_oid_to_string(bson_iter_oid(it), hex);
        return wrapped("$oid", hex);
    }
    case BSON_TYPE_DECIMAL128: {
        bson_decimal128_t dec;
        char text[BSON_DECIMAL128_STRING];
        bson_iter_decimal128(it, &dec);
        bson_decimal128_to_string(&dec, text);
        return wrapped("$numberDecimal", text);
    }
    default:
        return wrapped("$unsupported", "a BSON type keyplan does not write");
    }
}

cJSON *kp_mg_bson_to_ejson(const bson_t *doc)
{
    bson_iter_t it;
    if (!bson_iter_init(&it, doc)) return NULL;
    return iter_document(&it, 0);
}

size_t kp_mg_document_size(const cJSON *doc)
{
    bson_t b;
    kp_error err;
    kp_error_clear(&err);
    if (kp_mg_ejson_to_bson(doc, &b, &err)) return 0;
    size_t n = b.len;
    bson_destroy(&b);
    return n;
}

uint64_t kp_mg_item_checksum(const cJSON *body)
{
    bson_t b;
    kp_error err;
    kp_error_clear(&err);
    if (kp_mg_ejson_to_bson(body, &b, &err)) return kp_item_hash(body);
    /* the document as the server gives it back, made in a scratch arena and dropped with it */
    kp_arena scratch = {.chunk_size = 16384};
    kp_arena *outer = kp_json_arena_swap(&scratch);
    cJSON *round = kp_mg_bson_to_ejson(&b);
    uint64_t h = kp_item_hash(round ? round : body);
    kp_json_arena_swap(outer);
    kp_arena_free(&scratch);
    bson_destroy(&b);
    return h;
}

char *kp_mg_item_id(const char *collection, const cJSON *doc)
{
    const cJSON *id = cJSON_GetObjectItemCaseSensitive(doc, "_id");
    char *text = id ? cJSON_PrintUnformatted(id) : NULL;
    if (!text) return NULL;
    size_t n = strlen(collection) + strlen(text) + 2;
    char *out = malloc(n);
    if (out) snprintf(out, n, "%s:%s", collection, text);
    cJSON_free(text);
    return out;
}
