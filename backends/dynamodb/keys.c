/*
 * keys.c — building DynamoDB key strings and converting values to AttributeValues.
 *
 * Key strings concatenate literals and attribute values with '#' as the separator.
 * So that string order is the declared order, every value byte at or below '%'
 * (controls, space, ! " # $ %) is written as %XX: escaped bytes keep their relative
 * order, still sort below every unescaped byte, and can never be taken for the
 * separator '#' (0x23), which is lower than every byte of an escaped value — so a
 * shorter value sorts before a longer one that extends it ("Ann" < "Ann Lee").
 * Integers are zero-padded to a fixed width (non-negative ranges) or offset by 2^63
 * (signed ranges); timestamps and dates are ISO text, which sorts by time.
 * Invariant: for two values a < b of the same attribute (as the oracle orders them),
 * kp_ddb_key_text(a) < kp_ddb_key_text(b) bytewise — except decimals and doubles with
 * negative values, which the report flags when they are used in a sort key.
 */
#include "backends/dynamodb/ddb.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/value.h"

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

static const char *value_text(const cJSON *value, char *buf, size_t size)
{
    if (cJSON_IsString(value) || cJSON_IsRaw(value)) return value->valuestring;
    if (cJSON_IsBool(value)) return cJSON_IsTrue(value) ? "true" : "false";
    if (cJSON_IsNumber(value)) {
        size_t n;
        return kp_number_text(value, NULL, buf, size, &n);
    }
    return NULL;
}

static int append(char *buf, size_t size, size_t *len, const char *s, size_t n)
{
    if (*len + n + 1 > size) return -1;
    memcpy(buf + *len, s, n);
    *len += n;
    buf[*len] = '\0';
    return 0;
}

static int append_escaped(char *buf, size_t size, size_t *len, const char *s)
{
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p <= '%') {
            char esc[4];
            kp_snprintf(esc, sizeof esc, "%%%02X", *p);
            if (append(buf, size, len, esc, 3)) return -1;
        } else if (append(buf, size, len, (const char *)p, 1)) {
            return -1;
        }
    }
    return 0;
}

int kp_ddb_key_text(const kp_attr *attr, int width, const cJSON *value, char *buf, size_t size)
{
    char scratch[64];
    const char *text = value_text(value, scratch, sizeof scratch);
    if (!text) return -1;
    size_t len = 0;
    buf[0] = '\0';
    kp_type_kind kind = attr->type.kind;
    if (kind == KP_T_INT || kind == KP_T_COUNTER) {
        int64_t v;
        if (kp_int_parse(text, strlen(text), &v)) return -1;
        char digits[48];
        if (width > 0 && width <= 20 && v >= 0) {
            kp_snprintf(digits, sizeof digits, "%0*lld", width, (long long)v);
        } else {
            /* offset binary: order-preserving for the whole int64 range */
            uint64_t u = (uint64_t)v ^ 0x8000000000000000ULL;
            kp_snprintf(digits, sizeof digits, "%020llu", (unsigned long long)u);
        }
        return append(buf, size, &len, digits, strlen(digits));
    }
    if (kind == KP_T_DECIMAL || kind == KP_T_DOUBLE) {
        /* non-negative: integer part padded to 20 digits, the fraction as written */
        const char *dot = strchr(text, '.');
        size_t int_len = dot ? (size_t)(dot - text) : strlen(text);
        if (text[0] != '-' && int_len < 20) {
            char pad[24];
            memset(pad, '0', 20 - int_len);
            if (append(buf, size, &len, pad, 20 - int_len)) return -1;
        }
        return append(buf, size, &len, text, strlen(text));
    }
    return append_escaped(buf, size, &len, text);
}

int kp_ddb_invertible(const kp_attr *attr)
{
    switch (attr->type.kind) {
    case KP_T_INT: case KP_T_COUNTER: case KP_T_DATE: case KP_T_UUID: case KP_T_STRING: case KP_T_ENUM: return 1;
    case KP_T_DECIMAL: /* the key text orders non-negative ones */
        return !attr->min || (cJSON_IsNumber(attr->min) ? attr->min->valuedouble >= 0
                                                        : !(cJSON_IsRaw(attr->min) && attr->min->valuestring[0] == '-'));
    case KP_T_TIMESTAMP: return attr->encoding == KP_ENC_ISO;
    default: return 0;
    }
}

/* Reverses the order of key texts, then appends "~", which sorts after every character the
 * inverted text can hold, so a shorter text (5, "Ann") sorts after a longer one with the
 * same start (5.5, "Ann Lee") as the reversed order wants. Numbers, dates and timestamps:
 * every digit complemented (9 - d), other characters kept; a uuid's hex digits 15 - d;
 * strings and enums (ordered bytewise): every byte b as the two hex digits of 255 - b. -1
 * when the result does not fit. */
static int invert(char *text, size_t size, kp_type_kind kind)
{
    static const char hex[] = "0123456789abcdef";
    size_t n = strlen(text);
    if (kind == KP_T_STRING || kind == KP_T_ENUM) {
        if (2 * n + 2 > size) return -1;
        for (size_t i = n; i-- > 0;) { /* from the end: each byte's two digits land at or after it */
            unsigned char c = (unsigned char)(255 - (unsigned char)text[i]);
            text[2 * i] = hex[c >> 4];
            text[2 * i + 1] = hex[c & 15];
        }
        n *= 2;
    } else {
        for (size_t i = 0; i < n; i++) {
            char c = text[i];
            if (kind == KP_T_UUID && ((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'))) {
                int v = c <= '9' ? c - '0' : (c | 0x20) - 'a' + 10;
                text[i] = hex[15 - v];
            } else if (kind != KP_T_UUID && c >= '0' && c <= '9') {
                text[i] = (char)('9' - (c - '0'));
            }
        }
    }
    if (n + 2 > size) return -1;
    text[n] = '~';
    text[n + 1] = '\0';
    return 0;
}

static int render(const ddb_format *f, const cJSON *object, const cJSON *const *values, size_t value_count, char *buf,
                  size_t size)
{
    size_t len = 0, k = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < f->count; i++) {
        const ddb_segment *s = &f->segs[i];
        if (s->literal) {
            if (append(buf, size, &len, s->literal, strlen(s->literal))) return -1;
            continue;
        }
        const cJSON *v = values ? (k < value_count ? values[k] : NULL) : cJSON_GetObjectItemCaseSensitive(object, s->attr->name);
        k++;
        if (!v || cJSON_IsNull(v)) {
            if (!s->null_text || append(buf, size, &len, s->null_text, strlen(s->null_text))) return -1;
            continue;
        }
        char part[1024];
        if (kp_ddb_key_text(s->attr, s->width, v, part, sizeof part)) return -1;
        if (s->is_inverted && invert(part, sizeof part, s->attr->type.kind)) return -1;
        if (append(buf, size, &len, part, strlen(part))) return -1;
    }
    return 0;
}

int kp_ddb_format_value(const ddb_format *f, const cJSON *object, char *buf, size_t size)
{
    return render(f, object, NULL, 0, buf, size);
}

int kp_ddb_format_values(const ddb_format *f, const cJSON *const *values, size_t value_count, char *buf, size_t size)
{
    return render(f, NULL, values, value_count, buf, size);
}

const char *kp_ddb_format_prefix(kp_arena *arena, const ddb_format *f)
{
    char buf[512];
    size_t len = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < f->count && f->segs[i].literal; i++) append(buf, sizeof buf, &len, f->segs[i].literal, strlen(f->segs[i].literal));
    return kp_arena_strdup(arena, buf);
}

const char *kp_ddb_format_describe(kp_arena *arena, const ddb_format *f)
{
    char buf[512];
    size_t len = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < f->count; i++) {
        const ddb_segment *s = &f->segs[i];
        if (s->literal) append(buf, sizeof buf, &len, s->literal, strlen(s->literal));
        else {
            char part[200];
            char how[64] = "";
            if (s->width) kp_snprintf(how, sizeof how, ":%d", s->width);
            if (s->is_inverted) kp_snprintf(how + strlen(how), sizeof how - strlen(how), ":inverted");
            if (s->null_text) kp_snprintf(how + strlen(how), sizeof how - strlen(how), ",null=%s", s->null_text);
            if (s->via) kp_snprintf(part, sizeof part, "<%s.%s%s>", s->via->name ? s->via->name : s->via->target->name, s->attr->name, how);
            else kp_snprintf(part, sizeof part, "<%s%s>", s->attr->name, how);
            append(buf, sizeof buf, &len, part, strlen(part));
        }
    }
    return kp_arena_strdup(arena, buf);
}

/* ---- AttributeValues ------------------------------------------------------------------ */

cJSON *kp_ddb_to_attribute_value(const kp_type *type, const cJSON *value)
{
    if (!value || cJSON_IsNull(value)) return NULL;
    char scratch[64];
    cJSON *av = cJSON_CreateObject();
    if (!av) return NULL;
    switch (type->kind) {
    case KP_T_INT: case KP_T_DECIMAL: case KP_T_DOUBLE: case KP_T_COUNTER: {
        const char *text = value_text(value, scratch, sizeof scratch);
        cJSON_AddStringToObject(av, "N", text ? text : "0");
        break;
    }
    case KP_T_BOOL: cJSON_AddBoolToObject(av, "BOOL", cJSON_IsTrue(value)); break;
    case KP_T_BLOB: cJSON_AddStringToObject(av, "B", value->valuestring); break;
    case KP_T_OBJECT: {
        cJSON *m = cJSON_AddObjectToObject(av, "M");
        for (size_t i = 0; i < type->field_count; i++) {
            const cJSON *field = cJSON_GetObjectItemCaseSensitive(value, type->fields[i]->name);
            cJSON *fv = kp_ddb_to_attribute_value(&type->fields[i]->type, field);
            if (fv) cJSON_AddItemToObject(m, type->fields[i]->name, fv);
        }
        break;
    }
    case KP_T_MAP: {
        cJSON *m = cJSON_AddObjectToObject(av, "M");
        for (const cJSON *e = value->child; e; e = e->next) {
            cJSON *ev = kp_ddb_to_attribute_value(type->item, e);
            if (ev) cJSON_AddItemToObject(m, e->string, ev);
        }
        break;
    }
    case KP_T_ARRAY: {
        cJSON *l = cJSON_AddArrayToObject(av, "L");
        for (const cJSON *e = value->child; e; e = e->next) {
            cJSON *ev = kp_ddb_to_attribute_value(type->item, e);
            cJSON_AddItemToArray(l, ev ? ev : cJSON_CreateObject());
        }
        break;
    }
    default: {
        const char *text = value_text(value, scratch, sizeof scratch);
        cJSON_AddStringToObject(av, "S", text ? text : "");
        break;
    }
    }
    return av;
}

cJSON *kp_ddb_from_attribute_value(const kp_type *type, const cJSON *av, kp_error *err)
{
    if (!cJSON_IsObject(av) || !av->child) {
        kp_error_set(err, KP_ERR_TARGET, NULL, 0, 0, "DynamoDB returned a malformed attribute value");
        return NULL;
    }
    const char *tag = av->child->string;
    const cJSON *v = av->child;
    if (strcmp(tag, "NULL") == 0) return cJSON_CreateNull();
    switch (type->kind) {
    case KP_T_INT: case KP_T_DECIMAL: case KP_T_DOUBLE: case KP_T_COUNTER:
        if (strcmp(tag, "N") || !cJSON_IsString(v)) break;
        if (!is_json_number(v->valuestring)) {
            kp_error_set(err, KP_ERR_DATA, NULL, 0, 0, "N \"%.200s\" (not a number)", v->valuestring);
            return NULL;
        }
        return cJSON_CreateRaw(v->valuestring);
    case KP_T_BOOL:
        if (strcmp(tag, "BOOL") || !cJSON_IsBool(v)) break;
        return cJSON_CreateBool(cJSON_IsTrue(v));
    case KP_T_BLOB:
        if (strcmp(tag, "B") || !cJSON_IsString(v)) break;
        return cJSON_CreateString(v->valuestring);
    case KP_T_OBJECT: {
        if (strcmp(tag, "M") || !cJSON_IsObject(v)) break;
        cJSON *o = cJSON_CreateObject();
        for (size_t i = 0; i < type->field_count; i++) {
            const cJSON *f = cJSON_GetObjectItemCaseSensitive(v, type->fields[i]->name);
            if (!f) continue;
            cJSON *fv = kp_ddb_from_attribute_value(&type->fields[i]->type, f, err);
            if (!fv) { cJSON_Delete(o); return NULL; }
            cJSON_AddItemToObject(o, type->fields[i]->name, fv);
        }
        return o;
    }
    case KP_T_MAP: {
        if (strcmp(tag, "M") || !cJSON_IsObject(v)) break;
        cJSON *o = cJSON_CreateObject();
        for (const cJSON *e = v->child; e; e = e->next) {
            cJSON *ev = kp_ddb_from_attribute_value(type->item, e, err);
            if (!ev) { cJSON_Delete(o); return NULL; }
            cJSON_AddItemToObject(o, e->string, ev);
        }
        return o;
    }
    case KP_T_ARRAY: {
        if (strcmp(tag, "L") || !cJSON_IsArray(v)) break;
        cJSON *a = cJSON_CreateArray();
        for (const cJSON *e = v->child; e; e = e->next) {
            cJSON *ev = kp_ddb_from_attribute_value(type->item, e, err);
            if (!ev) { cJSON_Delete(a); return NULL; }
            cJSON_AddItemToArray(a, ev);
        }
        return a;
    }
    default:
        if (strcmp(tag, "S") || !cJSON_IsString(v)) break;
        return cJSON_CreateString(v->valuestring);
    }
    /* the server holds a value of another type than the model's: a data error the caller
     * can report as a mismatch of the value (KP_ERR_DATA), not a failing server */
    char *text = cJSON_PrintUnformatted(v);
    kp_error_set(err, KP_ERR_DATA, NULL, 0, 0, "%s %.200s (the model declares %s)", tag, text ? text : "?",
                 kp_type_name(type->kind));
    cJSON_free(text);
    return NULL;
}

static size_t av_size(const cJSON *av)
{
    if (!cJSON_IsObject(av) || !av->child) return 0;
    const char *tag = av->child->string;
    const cJSON *v = av->child;
    if (strcmp(tag, "S") == 0) return cJSON_IsString(v) ? strlen(v->valuestring) : 0;
    if (strcmp(tag, "B") == 0) {
        /* binary travels as base64 but is stored and billed as its raw bytes */
        size_t n = cJSON_IsString(v) ? strlen(v->valuestring) : 0, pad = 0;
        while (pad < 2 && n > pad && v->valuestring[n - 1 - pad] == '=') pad++;
        return n / 4 * 3 + (n % 4 ? n % 4 - 1 : 0) - (n % 4 ? 0 : pad);
    }
    if (strcmp(tag, "N") == 0) return cJSON_IsString(v) ? (strlen(v->valuestring) + 1) / 2 + 1 : 0;
    if (strcmp(tag, "BOOL") == 0 || strcmp(tag, "NULL") == 0) return 1;
    size_t total = 3;
    for (const cJSON *e = v->child; e; e = e->next) total += 1 + (e->string ? strlen(e->string) : 0) + av_size(e);
    return total;
}

size_t kp_ddb_item_size(const cJSON *item)
{
    size_t total = 0;
    if (!cJSON_IsObject(item)) return 0;   /* also read on answers, which may be anything */
    for (const cJSON *a = item->child; a; a = a->next) total += strlen(a->string) + av_size(a);
    return total;
}

const char *kp_ddb_entity_prefix(kp_arena *arena, const kp_model *model, const kp_entity *entity)
{
    /* the upper-cased name: readable, and unique because entity names are */
    char buf[160];
    size_t n = 0;
    for (const char *c = entity->name; *c && n + 1 < sizeof buf; c++)
        if (isalnum((unsigned char)*c)) buf[n++] = (char)toupper((unsigned char)*c);
    buf[n] = '\0';
    (void)model;
    return kp_arena_strdup(arena, buf);
}
