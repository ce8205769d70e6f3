/*
 * model.c — loading a model: the entry points, shared parse helpers, entities and
 * their types, relations, copies and aggregates, counts; look-ups and rates.
 *
 * Access patterns, writes, workload and hints are in model_patterns.c; the JSON and
 * text renderings in model_render.c.
 * Invariant: a model is returned only when every check passed; on any error the
 * partially built model is freed and *out stays NULL.
 */
#include "core/model_internal.h"

#include <ctype.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "core/value.h"

/* ---- type names --------------------------------------------------------------- */

/* NULL-terminated: kp_suggest() walks it to the NULL */
static const char *const type_names[KP_T_COUNT_ + 1] = {
    "string", "int", "decimal", "double", "bool", "timestamp", "date", "uuid", "timeuuid",
    "enum", "object", "array", "map", "counter", "blob", NULL,
};

const char *kp_type_name(kp_type_kind kind)
{
    return kind < KP_T_COUNT_ ? type_names[kind] : "?";
}

const char *kp_type_with_article(kp_type_kind kind)
{
    static const char *const with_article[KP_T_COUNT_] = {
        "a string", "an int", "a decimal", "a double", "a bool", "a timestamp", "a date", "a uuid", "a timeuuid",
        "an enum", "an object", "an array", "a map", "a counter", "a blob",
    };
    return kind < KP_T_COUNT_ ? with_article[kind] : "a value of unknown type";
}

int kp_type_from_name(const char *name)
{
    for (int i = 0; i < KP_T_COUNT_; i++)
        if (strcmp(type_names[i], name) == 0) return i;
    return -1;
}

int kp_type_is_textual(kp_type_kind k)
{
    return k == KP_T_STRING || k == KP_T_TIMESTAMP || k == KP_T_DATE || k == KP_T_UUID || k == KP_T_TIMEUUID ||
           k == KP_T_ENUM || k == KP_T_BLOB;
}

double kp_attr_max_ratio(const kp_attr *a)
{
    kp_type_kind k = a->type.kind;
    if (k == KP_T_ARRAY || k == KP_T_MAP) {
        if (a->type.max_items > 0 && a->type.avg_items > 0)
            return a->type.max_items > a->type.avg_items ? a->type.max_items / a->type.avg_items : 1;
        return 2;
    }
    if (k == KP_T_STRING || k == KP_T_ENUM || k == KP_T_BLOB || k == KP_T_OBJECT) {
        if (a->max_size > 0 && a->avg_size > 0) return a->max_size > a->avg_size ? a->max_size / a->avg_size : 1;
        return 2;
    }
    return 1;
}

int kp_type_is_numeric(kp_type_kind k)
{
    return k == KP_T_INT || k == KP_T_DECIMAL || k == KP_T_DOUBLE || k == KP_T_COUNTER;
}

int kp_type_is_orderable(kp_type_kind k)
{
    return kp_type_is_numeric(k) || k == KP_T_STRING || k == KP_T_TIMESTAMP || k == KP_T_DATE || k == KP_T_UUID ||
           k == KP_T_TIMEUUID || k == KP_T_ENUM;
}

static int is_scalar(kp_type_kind k) { return k != KP_T_OBJECT && k != KP_T_ARRAY && k != KP_T_MAP; }

/* ---- shared helpers -------------------------------------------------------------- */

int kp_perr(kp_parser *P, const cJSON *node, int at_key, const char *fmt, ...)
{
    char message[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(message, sizeof message, fmt, ap);
    va_end(ap);
    return kp_json_error(P->doc, node, at_key, P->err, KP_ERR_MODEL, "%s", message);
}

char *kp_pstrdup(kp_parser *P, const char *s) { return kp_arena_strdup(&P->m->arena, s); }

static const char *json_kind(const cJSON *n)
{
    if (cJSON_IsObject(n)) return "an object";
    if (cJSON_IsArray(n)) return "an array";
    if (cJSON_IsString(n)) return "a string";
    if (cJSON_IsNumber(n)) return "a number";
    if (cJSON_IsBool(n)) return "a boolean";
    if (cJSON_IsNull(n)) return "null";
    return "a value";
}

int kp_expect_object(kp_parser *P, const cJSON *node, const char *what)
{
    if (cJSON_IsObject(node)) return 0;
    return kp_perr(P, node, 0, "%s must be an object, not %s", what, json_kind(node));
}

int kp_expect_array(kp_parser *P, const cJSON *node, const char *what)
{
    if (cJSON_IsArray(node)) return 0;
    return kp_perr(P, node, 0, "%s must be an array, not %s", what, json_kind(node));
}

int kp_expect_string(kp_parser *P, const cJSON *node, const char *what)
{
    if (cJSON_IsString(node)) return 0;
    return kp_perr(P, node, 0, "%s must be a string, not %s", what, json_kind(node));
}

int kp_check_keys(kp_parser *P, const cJSON *object, const char *const *allowed, const char *what)
{
    for (const cJSON *member = object->child; member; member = member->next) {
        int known = 0;
        for (size_t i = 0; allowed[i]; i++)
            if (strcmp(allowed[i], member->string) == 0) { known = 1; break; }
        if (known) continue;
        const char *guess = kp_suggest(member->string, allowed);
        if (guess)
            return kp_perr(P, member, 1, "unknown key \"%s\" in %s (did you mean \"%s\"?)", member->string, what, guess);
        char list[300] = "";
        for (size_t i = 0; allowed[i] && strlen(list) < 240; i++) {
            if (allowed[i][0] == '$' && strcmp(allowed[i], "$schema") == 0) continue;
            strcat(list, list[0] ? ", " : "");
            strncat(list, allowed[i], 40);
        }
        return kp_perr(P, member, 1, "unknown key \"%s\" in %s; allowed keys: %s", member->string, what, list);
    }
    return 0;
}

int kp_get_number(kp_parser *P, const cJSON *object, const char *key, double *out, int *present, double min)
{
    const cJSON *n = kp_json_get(object, key);
    if (present) *present = n != NULL;
    if (!n) return 0;
    if (!cJSON_IsNumber(n)) return kp_perr(P, n, 0, "\"%s\" must be a number, not %s", key, json_kind(n));
    if (n->valuedouble < min || !isfinite(n->valuedouble))
        return kp_perr(P, n, 0, "\"%s\" must be at least %g (it is %g)", key, min, n->valuedouble);
    *out = n->valuedouble;
    return 0;
}

int kp_get_bool(kp_parser *P, const cJSON *object, const char *key, int *out)
{
    const cJSON *n = kp_json_get(object, key);
    if (!n) return 0;
    if (!cJSON_IsBool(n)) return kp_perr(P, n, 0, "\"%s\" must be true or false, not %s", key, json_kind(n));
    *out = cJSON_IsTrue(n);
    return 0;
}

int kp_check_name(kp_parser *P, const cJSON *node, const char *name, int allow_dash, const char *what)
{
    int ok = name[0] && (isalpha((unsigned char)name[0]) || name[0] == '_');
    for (const char *c = name; ok && *c; c++)
        ok = isalnum((unsigned char)*c) || *c == '_' || (allow_dash && *c == '-');
    if (ok && strlen(name) <= 128) return 0;
    return kp_perr(P, node, 1, "%s name \"%s\" is not valid: use letters, digits and _%s, starting with a letter",
                   what, name, allow_dash ? " or -" : "");
}

const char **kp_entity_names(kp_parser *P)
{
    const char **names = ALLOC_N(P, const char *, P->m->entity_count + 1);
    for (size_t i = 0; names && i < P->m->entity_count; i++) names[i] = P->m->entities[i]->name;
    return names;
}

const char **kp_attr_and_rel_names(kp_parser *P, const kp_entity *e)
{
    const char **names = ALLOC_N(P, const char *, e->attr_count + e->rel_count + 1);
    size_t n = 0;
    for (size_t i = 0; names && i < e->attr_count; i++) names[n++] = e->attrs[i]->name;
    for (size_t i = 0; names && i < e->rel_count; i++) names[n++] = e->rels[i]->name;
    return names;
}

kp_entity *kp_resolve_entity(kp_parser *P, const cJSON *node, const char *name, const char *what)
{
    kp_entity *e = kp_model_entity(P->m, name);
    if (e) return e;
    const char *guess = kp_suggest(name, kp_entity_names(P));
    if (guess) kp_perr(P, node, 0, "%s names unknown entity '%s' (did you mean '%s'?)", what, name, guess);
    else kp_perr(P, node, 0, "%s names unknown entity '%s'; declare it under \"entities\"", what, name);
    return NULL;
}

int kp_resolve_path(kp_parser *P, const cJSON *node, kp_entity *from, const char *path, int want_attr,
                    int to_one_only, kp_rel ***hops, size_t *hop_count, kp_attr **attr, kp_entity **end)
{
    return kp_resolve_path_as(P, node, from, path, path, want_attr, to_one_only, hops, hop_count, attr, end);
}

int kp_resolve_path_as(kp_parser *P, const cJSON *node, kp_entity *from, const char *path, const char *shown,
                       int want_attr, int to_one_only, kp_rel ***hops, size_t *hop_count, kp_attr **attr, kp_entity **end)
{
    size_t path_len = strlen(path);
    if (path_len == 0) return kp_perr(P, node, 0, "the path is empty; name a relation or attribute of %s", from->name);
    if (path[0] == '.' || path[path_len - 1] == '.' || strstr(path, ".."))
        return kp_perr(P, node, 0, "\"%s\" has an empty part (a leading, trailing or doubled dot); join names with single "
                                   "dots, such as \"relation.attribute\"", shown);
    char buf[512];
    kp_snprintf(buf, sizeof buf, "%s", path);
    size_t segments = 1;
    for (const char *c = buf; *c; c++) segments += *c == '.';
    kp_rel **list = ALLOC_N(P, kp_rel *, segments);
    size_t n = 0;
    kp_entity *at = from;
    char *save = NULL;
    char *seg = strtok_r(buf, ".", &save);
    size_t index = 0;
    while (seg) {
        index++;
        int last = index == segments;
        if (last && want_attr) {
            kp_attr *a = kp_entity_attr(at, seg);
            if (!a) {
                const char *guess = kp_suggest(seg, kp_attr_and_rel_names(P, at));
                if (kp_entity_rel(at, seg))
                    return kp_perr(P, node, 0, "\"%s\": '%s' is a relation of %s, not an attribute; name an attribute after it",
                                   shown, seg, at->name);
                if (guess)
                    return kp_perr(P, node, 0, "\"%s\": %s has no attribute '%s' (did you mean '%s'?)", shown, at->name, seg,
                                   guess);
                return kp_perr(P, node, 0, "\"%s\": %s has no attribute '%s'; declare it or name one of its attributes",
                               shown, at->name, seg);
            }
            *attr = a;
        } else {
            kp_rel *r = kp_entity_rel(at, seg);
            if (!r) {
                const char *guess = kp_suggest(seg, kp_attr_and_rel_names(P, at));
                if (kp_entity_attr(at, seg))
                    return kp_perr(P, node, 0, "\"%s\": '%s' is an attribute of %s, not a relation; name a relation here",
                                   shown, seg, at->name);
                if (guess)
                    return kp_perr(P, node, 0, "\"%s\": %s has no relation '%s' (did you mean '%s'?)", shown, at->name, seg,
                                   guess);
                return kp_perr(P, node, 0, "\"%s\": %s has no relation '%s'; declare it under \"relations\" (or its "
                                           "\"inverse\")", shown, at->name, seg);
            }
            if (to_one_only && r->is_many)
                return kp_perr(P, node, 0, "\"%s\": '%s' leads to many %s records; only to-one relations can be followed here",
                               shown, seg, r->target->name);
            list[n++] = r;
            at = r->target;
        }
        seg = strtok_r(NULL, ".", &save);
    }
    if (hops) *hops = list;
    if (hop_count) *hop_count = n;
    if (end) *end = at;
    return 0;
}

/* ---- attribute types ------------------------------------------------------------ */

enum attr_context { CTX_ENTITY, CTX_FIELD, CTX_ITEM };

static const char *const attr_keys[] = {"type", "values", "fields", "items", "key", "value", "avg_items",
                                        "max_items", "optional", "presence", "size", "max_size", "unique",
                                        "encoding", "format", "min", "max", "copy_of", "derived", "description",
                                        "renamed_from", "backfill", NULL};
static const char *const field_keys[] = {"type", "values", "fields", "items", "key", "value", "avg_items",
                                         "max_items", "optional", "presence", "size", "max_size", "encoding",
                                         "format", "min", "max", "description", NULL};
static const char *const item_keys[] = {"type", "values", "fields", "items", "key", "value", "avg_items",
                                        "max_items", "size", "max_size", "encoding", "format", "min", "max",
                                        "description", NULL};
static const char *const formats[] = {"name", "first_name", "last_name", "email", "handle", "title", "text",
                                      "word", "url", "phone", "sku", "country", "city", "time_id", NULL};

static int parse_attr(kp_parser *P, const cJSON *node, const char *name, kp_entity *entity, enum attr_context ctx,
                      int depth, kp_attr **out);

static int type_by_name(kp_parser *P, const cJSON *node, const char *name, kp_type_kind *kind)
{
    int k = kp_type_from_name(name);
    if (k >= 0) { *kind = (kp_type_kind)k; return 0; }
    const char *guess = kp_suggest(name, type_names);
    if (guess) return kp_perr(P, node, 0, "unknown type \"%s\" (did you mean \"%s\"?)", name, guess);
    return kp_perr(P, node, 0,
                   "unknown type \"%s\"; the types are string, int, decimal, double, bool, timestamp, date, uuid, "
                   "timeuuid, enum, object, array, map, counter, blob", name);
}

/* Checks that a key only present for some types is used with one of them. */
static int only_for(kp_parser *P, const cJSON *spec, const char *key, kp_type_kind kind, int allowed, const char *types)
{
    const cJSON *n = kp_json_get(spec, key);
    if (!n || allowed) return 0;
    return kp_perr(P, n, 1, "\"%s\" applies only to %s attributes, not to %s", key, types, kp_type_with_article(kind));
}

static int parse_type(kp_parser *P, const cJSON *node, kp_type *type, const char *name, enum attr_context ctx,
                      int depth, kp_attr *attr)
{
    if (depth > 16) return kp_perr(P, node, 0, "types nested deeper than 16 levels under '%s'", name);
    if (cJSON_IsString(node)) {
        if (type_by_name(P, node, node->valuestring, &type->kind)) return -1;
        if (type->kind == KP_T_ENUM)
            return kp_perr(P, node, 0, "'%s' is an enum: write {\"type\": \"enum\", \"values\": [...]}", name);
        if (type->kind == KP_T_OBJECT)
            return kp_perr(P, node, 0, "'%s' is an object: write {\"type\": \"object\", \"fields\": {...}}", name);
        if (type->kind == KP_T_ARRAY)
            return kp_perr(P, node, 0, "'%s' is an array: write {\"type\": \"array\", \"items\": \"<type>\"}", name);
        if (type->kind == KP_T_MAP)
            return kp_perr(P, node, 0, "'%s' is a map: write {\"type\": \"map\", \"value\": \"<type>\"}", name);
        return 0;
    }
    if (!cJSON_IsObject(node))
        return kp_perr(P, node, 0, "attribute '%s' must be a type name such as \"string\" or an object with \"type\", not %s",
                       name, json_kind(node));
    const char *const *keys = ctx == CTX_ENTITY ? attr_keys : ctx == CTX_FIELD ? field_keys : item_keys;
    char what[200];
    kp_snprintf(what, sizeof what, "attribute '%s'", name);
    if (kp_check_keys(P, node, keys, what)) return -1;
    const cJSON *t = kp_json_get(node, "type");
    if (!t) return kp_perr(P, node, 0, "attribute '%s' needs a \"type\"", name);
    if (kp_expect_string(P, t, "\"type\"") || type_by_name(P, t, t->valuestring, &type->kind)) return -1;
    kp_type_kind k = type->kind;
    if (only_for(P, node, "values", k, k == KP_T_ENUM, "enum") || only_for(P, node, "fields", k, k == KP_T_OBJECT, "object") ||
        only_for(P, node, "items", k, k == KP_T_ARRAY, "array") || only_for(P, node, "key", k, k == KP_T_MAP, "map") ||
        only_for(P, node, "value", k, k == KP_T_MAP, "map") ||
        only_for(P, node, "avg_items", k, k == KP_T_ARRAY || k == KP_T_MAP, "array and map") ||
        only_for(P, node, "max_items", k, k == KP_T_ARRAY || k == KP_T_MAP, "array and map") ||
        only_for(P, node, "encoding", k, k == KP_T_TIMESTAMP, "timestamp") ||
        only_for(P, node, "format", k, k == KP_T_STRING, "string") ||
        only_for(P, node, "unique", k, is_scalar(k) && k != KP_T_BOOL && k != KP_T_COUNTER, "scalar") ||
        only_for(P, node, "min", k, kp_type_is_numeric(k) || k == KP_T_TIMESTAMP || k == KP_T_DATE,
                 "int, decimal, double, counter, timestamp and date") ||
        only_for(P, node, "max", k, kp_type_is_numeric(k) || k == KP_T_TIMESTAMP || k == KP_T_DATE,
                 "int, decimal, double, counter, timestamp and date"))
        return -1;
    if (k == KP_T_ENUM) {
        const cJSON *values = kp_json_get(node, "values");
        if (!values) return kp_perr(P, node, 0, "enum '%s' needs \"values\": an array of its allowed strings", name);
        if (kp_expect_array(P, values, "\"values\"")) return -1;
        int n = cJSON_GetArraySize(values);
        if (n == 0) return kp_perr(P, values, 0, "enum '%s' needs at least one value", name);
        type->enum_values = ALLOC_N(P, const char *, (size_t)n);
        for (const cJSON *v = values->child; v; v = v->next) {
            if (kp_expect_string(P, v, "an enum value")) return -1;
            for (size_t i = 0; i < type->enum_count; i++)
                if (strcmp(type->enum_values[i], v->valuestring) == 0)
                    return kp_perr(P, v, 0, "enum '%s' lists \"%s\" twice", name, v->valuestring);
            type->enum_values[type->enum_count++] = kp_pstrdup(P, v->valuestring);
        }
    } else if (k == KP_T_OBJECT) {
        const cJSON *fields = kp_json_get(node, "fields");
        if (!fields) return kp_perr(P, node, 0, "object '%s' needs \"fields\": an object of field name to type", name);
        if (kp_expect_object(P, fields, "\"fields\"")) return -1;
        int n = cJSON_GetArraySize(fields);
        if (n == 0) return kp_perr(P, fields, 0, "object '%s' needs at least one field", name);
        type->fields = ALLOC_N(P, kp_attr *, (size_t)n);
        for (const cJSON *f = fields->child; f; f = f->next) {
            if (kp_check_name(P, f, f->string, 0, "field")) return -1;
            kp_attr *field;
            if (parse_attr(P, f, f->string, NULL, CTX_FIELD, depth + 1, &field)) return -1;
            field->index = type->field_count;
            type->fields[type->field_count++] = field;
        }
    } else if (k == KP_T_ARRAY || k == KP_T_MAP) {
        const cJSON *item = kp_json_get(node, k == KP_T_ARRAY ? "items" : "value");
        if (!item)
            return kp_perr(P, node, 0, "%s '%s' needs \"%s\": the type of its %s", kp_type_name(k), name,
                           k == KP_T_ARRAY ? "items" : "value", k == KP_T_ARRAY ? "items" : "values");
        type->item = ALLOC(P, kp_type);
        char item_name[200];
        kp_snprintf(item_name, sizeof item_name, "%s[]", name);
        if (parse_type(P, item, type->item, item_name, CTX_ITEM, depth + 1, NULL)) return -1;
        if (k == KP_T_ARRAY && type->item->kind == KP_T_ARRAY)
            return kp_perr(P, item, 0, "arrays of arrays are not supported ('%s'); wrap the inner array in an object", name);
        if (type->item->kind == KP_T_COUNTER)
            return kp_perr(P, item, 0, "counters cannot be inside an array or map ('%s')", name);
        type->map_key = KP_T_STRING;
        const cJSON *key = kp_json_get(node, "key");
        if (key) {
            if (kp_expect_string(P, key, "a map \"key\"") || type_by_name(P, key, key->valuestring, &type->map_key)) return -1;
            if (type->map_key != KP_T_STRING && type->map_key != KP_T_INT && type->map_key != KP_T_UUID &&
                type->map_key != KP_T_DATE)
                return kp_perr(P, key, 0, "a map key must be string, int, uuid or date, not %s", key->valuestring);
        }
        int given_avg = 0, given_max = 0;
        if (kp_get_number(P, node, "avg_items", &type->avg_items, &given_avg, 0) ||
            kp_get_number(P, node, "max_items", &type->max_items, &given_max, 0))
            return -1;
        if (given_avg && given_max && type->max_items < type->avg_items)
            return kp_perr(P, kp_json_get(node, "max_items"), 0,
                           "max_items (%g) is smaller than avg_items (%g)", type->max_items, type->avg_items);
    }
    if (attr) {
        const cJSON *enc = kp_json_get(node, "encoding");
        if (enc) {
            if (kp_expect_string(P, enc, "\"encoding\"")) return -1;
            static const char *const encodings[] = {"iso", "epoch_s", "epoch_ms", NULL};
            int found = -1;
            for (int i = 0; encodings[i]; i++)
                if (strcmp(encodings[i], enc->valuestring) == 0) found = i;
            if (found < 0) return kp_perr(P, enc, 0, "unknown encoding \"%s\"; use iso, epoch_s or epoch_ms", enc->valuestring);
            attr->encoding = (kp_encoding)found;
        }
        const cJSON *fmt = kp_json_get(node, "format");
        if (fmt) {
            if (kp_expect_string(P, fmt, "\"format\"")) return -1;
            int found = 0;
            for (int i = 0; formats[i]; i++) found |= strcmp(formats[i], fmt->valuestring) == 0;
            if (!found) {
                const char *guess = kp_suggest(fmt->valuestring, formats);
                if (guess) return kp_perr(P, fmt, 0, "unknown format \"%s\" (did you mean \"%s\"?)", fmt->valuestring, guess);
                return kp_perr(P, fmt, 0, "unknown format \"%s\"; see docs/model.md for the formats", fmt->valuestring);
            }
            attr->format = kp_pstrdup(P, fmt->valuestring);
        }
        for (int bound = 0; bound < 2; bound++) {
            const cJSON *b = kp_json_get(node, bound ? "max" : "min");
            if (!b) continue;
            char why[256];
            const cJSON *bad = NULL;
            kp_type check = *type;
            if (check.kind == KP_T_COUNTER) check.kind = KP_T_INT;
            if (kp_value_check(&check, b, P->doc, &bad, why, sizeof why))
                return kp_perr(P, b, 0, "\"%s\" of '%s': %s", bound ? "max" : "min", name, why);
            if (bound) attr->max = b; else attr->min = b;
        }
        if (attr->min && attr->max) {
            int reversed;
            if (kp_type_is_numeric(type->kind)) {
                char b1[64], b2[64];
                size_t l1, l2;
                const char *t1 = kp_number_text(attr->min, P->doc, b1, sizeof b1, &l1);
                const char *t2 = kp_number_text(attr->max, P->doc, b2, sizeof b2, &l2);
                reversed = type->kind == KP_T_DOUBLE ? attr->min->valuedouble > attr->max->valuedouble
                                                     : kp_decimal_compare(t1, l1, t2, l2) > 0;
            } else {
                reversed = strcmp(attr->min->valuestring, attr->max->valuestring) > 0;
            }
            if (reversed) return kp_perr(P, attr->max, 0, "\"max\" of '%s' is smaller than its \"min\"", name);
        }
        int given = 0;
        if (kp_get_number(P, node, "size", &attr->avg_size, NULL, 0) ||
            kp_get_number(P, node, "max_size", &attr->max_size, &given, 0))
            return -1;
        if (given && attr->avg_size > attr->max_size)
            return kp_perr(P, kp_json_get(node, "max_size"), 0,
                           "max_size (%g) is smaller than size (%g) for '%s'", attr->max_size, attr->avg_size, name);
    }
    return 0;
}

static int parse_attr(kp_parser *P, const cJSON *node, const char *name, kp_entity *entity, enum attr_context ctx,
                      int depth, kp_attr **out)
{
    kp_attr *a = ALLOC(P, kp_attr);
    if (!a) return kp_error_set(P->err, KP_ERR_NOMEM, NULL, 0, 0, "out of memory");
    a->name = kp_pstrdup(P, name);
    a->entity = entity;
    a->key_index = -1;
    a->presence = 1;
    kp_pos p = kp_json_key_pos(P->doc, node);
    a->pos = p;
    if (parse_type(P, node, &a->type, name, ctx, depth, a)) return -1;
    if (cJSON_IsObject(node)) {
        if (kp_get_bool(P, node, "optional", &a->is_optional) || kp_get_bool(P, node, "unique", &a->is_unique)) return -1;
        int has_presence = 0;
        if (kp_get_number(P, node, "presence", &a->presence, &has_presence, 0)) return -1;
        if (has_presence) {
            const cJSON *pr = kp_json_get(node, "presence");
            if (a->presence > 1) return kp_perr(P, pr, 0, "\"presence\" is a share between 0 and 1, not %g", a->presence);
            const cJSON *opt = kp_json_get(node, "optional");
            if (a->presence < 1 && opt && cJSON_IsFalse(opt))
                return kp_perr(P, pr, 0, "'%s' has presence %g but says \"optional\": false; a sparse attribute is optional",
                               name, a->presence);
            if (a->presence < 1) a->is_optional = 1;
        }
        const cJSON *desc = kp_json_get(node, "description");
        if (desc) {
            if (kp_expect_string(P, desc, "\"description\"")) return -1;
            a->description = kp_pstrdup(P, desc->valuestring);
        }
        /* model versions (keyplan migrate): the name it had, the value existing records get */
        const cJSON *was = kp_json_get(node, "renamed_from");
        if (was) {
            if (kp_expect_string(P, was, "\"renamed_from\"")) return -1;
            if (strcmp(was->valuestring, name) == 0)
                return kp_perr(P, was, 0, "'%s' is \"renamed_from\" itself; give the name the attribute had in the "
                               "previous version of the model", name);
            a->renamed_from = kp_pstrdup(P, was->valuestring);
        }
        const cJSON *backfill = kp_json_get(node, "backfill");
        if (backfill) {
            const cJSON *bad = NULL;
            char why[300];
            if (cJSON_IsNull(backfill))
                return kp_perr(P, backfill, 0, "\"backfill\" of '%s' is null; give a value, or make '%s' optional and "
                               "leave \"backfill\" out", name, name);
            if (kp_value_check(&a->type, backfill, P->doc, &bad, why, sizeof why))
                return kp_perr(P, bad, 0, "\"backfill\" of '%s': %s", name, why);
            a->backfill = backfill;
        }
    }
    *out = a;
    return 0;
}

/* ---- entities ---------------------------------------------------------------------- */

static const char *const entity_keys[] = {"key", "count", "attributes", "description", NULL};

int kp_parse_entities(kp_parser *P, const cJSON *entities)
{
    kp_model *m = P->m;
    if (kp_expect_object(P, entities, "\"entities\"")) return -1;
    size_t n = (size_t)cJSON_GetArraySize(entities);
    if (n == 0) return kp_perr(P, entities, 0, "\"entities\" is empty; declare at least one entity");
    m->entities = ALLOC_N(P, kp_entity *, n);
    for (const cJSON *en = entities->child; en; en = en->next) {
        if (kp_check_name(P, en, en->string, 1, "entity")) return -1;
        char what[200];
        kp_snprintf(what, sizeof what, "entity '%s'", en->string);
        if (kp_expect_object(P, en, what) || kp_check_keys(P, en, entity_keys, what)) return -1;
        kp_entity *e = ALLOC(P, kp_entity);
        e->name = kp_pstrdup(P, en->string);
        e->index = m->entity_count;
        e->pos = kp_json_key_pos(P->doc, en);
        m->entities[m->entity_count++] = e;
        if (kp_strmap_put(&m->arena, &m->entity_by_name, e->name, e)) return kp_perr(P, en, 0, "out of memory");
        const cJSON *attrs = kp_json_get(en, "attributes");
        if (!attrs) return kp_perr(P, en, 1, "entity '%s' needs \"attributes\"", e->name);
        if (kp_expect_object(P, attrs, "\"attributes\"")) return -1;
        size_t an = (size_t)cJSON_GetArraySize(attrs);
        if (an == 0) return kp_perr(P, attrs, 0, "entity '%s' has no attributes", e->name);
        e->attrs = ALLOC_N(P, kp_attr *, an);
        for (const cJSON *a = attrs->child; a; a = a->next) {
            if (kp_check_name(P, a, a->string, 0, "attribute")) return -1;
            kp_attr *attr;
            if (parse_attr(P, a, a->string, e, CTX_ENTITY, 0, &attr)) return -1;
            attr->index = e->attr_count;
            e->attrs[e->attr_count++] = attr;
        }
        const cJSON *key = kp_json_get(en, "key");
        if (!key) return kp_perr(P, en, 1, "entity '%s' needs a \"key\": the attribute(s) that identify a record", e->name);
        size_t kn = cJSON_IsArray(key) ? (size_t)cJSON_GetArraySize(key) : 1;
        if (!cJSON_IsArray(key) && !cJSON_IsString(key))
            return kp_perr(P, key, 0, "\"key\" must be an attribute name or an array of attribute names");
        if (kn == 0) return kp_perr(P, key, 0, "\"key\" of '%s' is empty; name at least one attribute", e->name);
        e->key = ALLOC_N(P, kp_attr *, kn);
        const cJSON *k = cJSON_IsArray(key) ? key->child : key;
        for (; k; k = cJSON_IsArray(key) ? k->next : NULL) {
            if (kp_expect_string(P, k, "a key attribute")) return -1;
            kp_attr *attr = kp_entity_attr(e, k->valuestring);
            if (!attr) {
                const char **names = ALLOC_N(P, const char *, e->attr_count + 1);
                for (size_t i = 0; i < e->attr_count; i++) names[i] = e->attrs[i]->name;
                const char *guess = kp_suggest(k->valuestring, names);
                if (guess)
                    return kp_perr(P, k, 0, "key of '%s' names unknown attribute '%s' (did you mean '%s'?)", e->name,
                                   k->valuestring, guess);
                return kp_perr(P, k, 0, "key of '%s' names unknown attribute '%s'; declare it under \"attributes\"",
                               e->name, k->valuestring);
            }
            if (attr->key_index >= 0) return kp_perr(P, k, 0, "key of '%s' lists '%s' twice", e->name, attr->name);
            if (attr->is_optional)
                return kp_perr(P, k, 0, "key attribute '%s' of '%s' cannot be optional", attr->name, e->name);
            if (!is_scalar(attr->type.kind) || attr->type.kind == KP_T_COUNTER || attr->type.kind == KP_T_DOUBLE)
                return kp_perr(P, k, 0, "key attribute '%s' of '%s' is %s; keys must be strings, numbers (not double), "
                               "dates, timestamps, uuids, enums, bools or blobs", attr->name, e->name,
                               kp_type_with_article(attr->type.kind));
            attr->key_index = (int)e->key_count;
            e->key[e->key_count++] = attr;
        }
        const cJSON *count = kp_json_get(en, "count");
        if (count) {
            if (kp_get_number(P, en, "count", &e->count, NULL, 0)) return -1;
            if (e->count != floor(e->count)) return kp_perr(P, count, 0, "\"count\" must be a whole number, not %g", e->count);
            e->is_count_given = 1;
        }
        const cJSON *desc = kp_json_get(en, "description");
        if (desc) {
            if (kp_expect_string(P, desc, "\"description\"")) return -1;
            e->description = kp_pstrdup(P, desc->valuestring);
        }
    }
    return 0;
}

/* ---- relations ------------------------------------------------------------------------ */

static const char *const relation_keys[] = {"name", "from", "to", "cardinality", "on", "through", "inverse",
                                            "fanout", "inverse_fanout", "skew", "on_delete", "description", NULL};
static const char *const fanout_keys[] = {"avg", "max", "unbounded", NULL};
static const char *const through_keys[] = {"entity", "from", "to", NULL};

static int add_rel(kp_parser *P, kp_entity *e, kp_rel *r, const cJSON *node)
{
    if (kp_entity_attr(e, r->name))
        return kp_perr(P, node, 0, "relation name '%s' is already an attribute of %s; rename one of them", r->name, e->name);
    if (kp_entity_rel(e, r->name))
        return kp_perr(P, node, 0, "%s already has a relation named '%s'; relation names are unique per entity", e->name,
                       r->name);
    kp_rel **bigger = ALLOC_N(P, kp_rel *, e->rel_count + 1);
    if (e->rel_count) memcpy(bigger, e->rels, e->rel_count * sizeof *bigger);
    bigger[e->rel_count++] = r;
    e->rels = bigger;
    return 0;
}

static int parse_fanout(kp_parser *P, const cJSON *node, kp_fanout *f, int is_one_one)
{
    if (kp_expect_object(P, node, "a fan-out") || kp_check_keys(P, node, fanout_keys, "a fan-out")) return -1;
    int has_avg = 0, has_max = 0;
    if (kp_get_number(P, node, "avg", &f->avg, &has_avg, 0) || kp_get_number(P, node, "max", &f->max, &has_max, 0) ||
        kp_get_bool(P, node, "unbounded", &f->is_unbounded))
        return -1;
    f->is_given = 1;
    if (is_one_one) {
        if (has_avg && f->avg > 1)
            return kp_perr(P, kp_json_get(node, "avg"), 0,
                           "a 1:1 relation's fan-out avg is the share of records that have one (at most 1), not %g", f->avg);
        if (has_max && f->max != 1)
            return kp_perr(P, kp_json_get(node, "max"), 0, "a 1:1 relation's fan-out max is 1");
        if (f->is_unbounded) return kp_perr(P, node, 0, "a 1:1 relation cannot be unbounded");
        if (!has_avg) f->avg = 1;
        f->max = 1;
        return 0;
    }
    if (!has_max && !f->is_unbounded)
        return kp_perr(P, node, 0, "the fan-out needs a \"max\" (or \"unbounded\": true for one that grows forever)");
    if (has_avg && has_max && f->max < f->avg)
        return kp_perr(P, kp_json_get(node, "max"), 0,
                       "fan-out max (%g) is smaller than its avg (%g); max >= avg >= 0", f->max, f->avg);
    if (!has_avg) f->avg = -1; /* derived from the counts later */
    if (!has_max) f->max = -1; /* unbounded without a horizon: set from avg later */
    return 0;
}

/* Reads "Entity.attr" into its parts. */
static int split_ref(kp_parser *P, const cJSON *node, int at_key, const char *text, char *entity, size_t esize,
                     char *attr, size_t asize)
{
    const char *dot = strchr(text, '.');
    if (!dot || dot == text || !dot[1] || strchr(dot + 1, '.'))
        return kp_perr(P, node, at_key, "\"%s\" must be written Entity.attribute", text);
    kp_snprintf(entity, esize, "%.*s", (int)(dot - text), text);
    kp_snprintf(attr, asize, "%s", dot + 1);
    return 0;
}

static kp_attr *resolve_attr(kp_parser *P, const cJSON *node, int at_key, kp_entity *e, const char *name)
{
    kp_attr *a = kp_entity_attr(e, name);
    if (a) return a;
    const char **names = ALLOC_N(P, const char *, e->attr_count + 1);
    for (size_t i = 0; i < e->attr_count; i++) names[i] = e->attrs[i]->name;
    const char *guess = kp_suggest(name, names);
    if (guess) kp_perr(P, node, at_key, "%s has no attribute '%s' (did you mean '%s'?)", e->name, name, guess);
    else kp_perr(P, node, at_key, "%s has no attribute '%s'; declare it under the entity's \"attributes\"", e->name, name);
    return NULL;
}

/* "id" or "workspaceId, id": an entity's key attributes, for messages. */
static void key_names(const kp_entity *e, char *buf, size_t size)
{
    buf[0] = '\0';
    for (size_t i = 0; i < e->key_count && strlen(buf) + 48 < size; i++) {
        strcat(buf, i ? ", " : "");
        strncat(buf, e->key[i]->name, 40);
    }
}

/* Reorders referenced attributes to the referenced entity's key order and checks they
 * are exactly that key. node is the "on" object; its i-th pair links holder_attrs[i]
 * to ref_attrs[i] (the referenced attribute is the pair's value). */
static int check_whole_key(kp_parser *P, const cJSON *node, kp_entity *referenced, kp_attr **holder_attrs,
                           kp_attr **ref_attrs, size_t n)
{
    char keys[256];
    key_names(referenced, keys, sizeof keys);
    if (n != referenced->key_count) {
        return kp_perr(P, node, 0, "\"on\" must reference the whole key of %s (%s), not %zu attribute%s; give one pair "
                                   "per key attribute", referenced->name, keys, n, n == 1 ? "" : "s");
    }
    kp_attr *h[64], *r[64];
    if (n > 64) return kp_perr(P, node, 0, "too many key attributes");
    const cJSON *pair = node->child;
    for (size_t i = 0; i < n; i++, pair = pair ? pair->next : NULL) {
        const cJSON *at = pair ? pair : node;
        if (ref_attrs[i]->key_index < 0)
            return kp_perr(P, at, 0, "'%s.%s' is not the key of %s; \"on\" must reference its key (%s)", referenced->name,
                           ref_attrs[i]->name, referenced->name, keys);
        if (holder_attrs[i]->type.kind != ref_attrs[i]->type.kind)
            return kp_perr(P, at, 1, "'%s.%s' is %s but references '%s.%s', %s; the types must match",
                           holder_attrs[i]->entity->name, holder_attrs[i]->name,
                           kp_type_with_article(holder_attrs[i]->type.kind), referenced->name, ref_attrs[i]->name,
                           kp_type_with_article(ref_attrs[i]->type.kind));
        h[ref_attrs[i]->key_index] = holder_attrs[i];
        r[ref_attrs[i]->key_index] = ref_attrs[i];
    }
    for (size_t i = 0; i < n; i++) {
        holder_attrs[i] = h[i];
        ref_attrs[i] = r[i];
    }
    return 0;
}

static int parse_on(kp_parser *P, kp_relation *r, const cJSON *on)
{
    if (kp_expect_object(P, on, "\"on\"")) return -1;
    size_t n = (size_t)cJSON_GetArraySize(on);
    if (n == 0) return kp_perr(P, on, 0, "\"on\" is empty; map the linking attributes: {\"Child.parentId\": \"Parent.id\"}");
    r->fk_attrs = ALLOC_N(P, kp_attr *, n);
    r->ref_attrs = ALLOC_N(P, kp_attr *, n);
    for (const cJSON *pair = on->child; pair; pair = pair->next) {
        char he[128], ha[128], re[128], ra[128];
        if (split_ref(P, pair, 1, pair->string, he, sizeof he, ha, sizeof ha)) return -1;
        if (kp_expect_string(P, pair, "the referenced attribute") ||
            split_ref(P, pair, 0, pair->valuestring, re, sizeof re, ra, sizeof ra))
            return -1;
        kp_entity *holder = kp_resolve_entity(P, pair, he, "\"on\"");
        if (!holder) {
            /* the holder is named in the pair's key: point there */
            kp_pos p = kp_json_key_pos(P->doc, pair);
            P->err->line = p.line;
            P->err->column = p.column;
            return -1;
        }
        kp_entity *referenced = kp_resolve_entity(P, pair, re, "\"on\"");
        if (!referenced) return -1;
        int fits = (holder == r->from && referenced == r->to) || (holder == r->to && referenced == r->from);
        if (!fits)
            return kp_perr(P, pair, 1, "\"on\" must link %s and %s, the relation's two sides, not %s and %s", r->from->name,
                           r->to->name, holder->name, referenced->name);
        if (r->holder && (r->holder != holder || r->referenced != referenced))
            return kp_perr(P, pair, 1, "all pairs of \"on\" must go the same way (holder attribute on the left)");
        r->holder = holder;
        r->referenced = referenced;
        kp_attr *h = resolve_attr(P, pair, 1, holder, ha);
        kp_attr *ref = h ? resolve_attr(P, pair, 0, referenced, ra) : NULL;
        if (!h || !ref) return -1;
        r->fk_attrs[r->fk_count] = h;
        r->ref_attrs[r->fk_count] = ref;
        r->fk_count++;
    }
    return 0;
}

static int parse_through_side(kp_parser *P, const cJSON *node, kp_entity *join, kp_entity *side, kp_attr ***out,
                              size_t *count)
{
    size_t n = cJSON_IsArray(node) ? (size_t)cJSON_GetArraySize(node) : 1;
    if (!cJSON_IsArray(node) && !cJSON_IsString(node))
        return kp_perr(P, node, 0, "\"through\" sides are an attribute name or an array of names of %s", join->name);
    kp_attr **list = ALLOC_N(P, kp_attr *, n);
    kp_attr **refs = ALLOC_N(P, kp_attr *, n);
    size_t i = 0;
    const cJSON *k = cJSON_IsArray(node) ? node->child : node;
    for (; k; k = cJSON_IsArray(node) ? k->next : NULL) {
        if (kp_expect_string(P, k, "a \"through\" attribute")) return -1;
        list[i] = resolve_attr(P, k, 0, join, k->valuestring);
        if (!list[i]) return -1;
        if (i < side->key_count) refs[i] = side->key[i];
        i++;
    }
    if (n != side->key_count)
        return kp_perr(P, node, 0, "%s's key has %zu attribute%s; \"through\" must name as many attributes of %s",
                       side->name, side->key_count, side->key_count == 1 ? "" : "s", join->name);
    for (i = 0; i < n; i++)
        if (list[i]->type.kind != refs[i]->type.kind)
            return kp_perr(P, node, 0, "'%s.%s' is %s but %s's key '%s' is %s; the types must match", join->name,
                           list[i]->name, kp_type_with_article(list[i]->type.kind), side->name, refs[i]->name,
                           kp_type_with_article(refs[i]->type.kind));
    *out = list;
    *count = n;
    return 0;
}

static int parse_relation(kp_parser *P, const cJSON *node)
{
    kp_model *m = P->m;
    if (kp_expect_object(P, node, "a relation") || kp_check_keys(P, node, relation_keys, "a relation")) return -1;
    kp_relation *r = ALLOC(P, kp_relation);
    r->pos = kp_json_pos(P->doc, node);
    const cJSON *name = kp_json_get(node, "name");
    if (!name) return kp_perr(P, node, 0, "a relation needs a \"name\": how it is navigated from its \"from\" entity");
    if (kp_expect_string(P, name, "\"name\"") || kp_check_name(P, name, name->valuestring, 0, "relation")) return -1;
    r->name = kp_pstrdup(P, name->valuestring);
    const cJSON *from = kp_json_get(node, "from");
    const cJSON *to = kp_json_get(node, "to");
    if (!from || !to) return kp_perr(P, node, 0, "relation '%s' needs \"from\" and \"to\" entities", r->name);
    char what[200];
    kp_snprintf(what, sizeof what, "relation '%s'", r->name);
    if (kp_expect_string(P, from, "\"from\"") || kp_expect_string(P, to, "\"to\"")) return -1;
    if (!(r->from = kp_resolve_entity(P, from, from->valuestring, what))) return -1;
    if (!(r->to = kp_resolve_entity(P, to, to->valuestring, what))) return -1;
    const cJSON *card = kp_json_get(node, "cardinality");
    if (!card) return kp_perr(P, node, 0, "relation '%s' needs a \"cardinality\": \"1:1\", \"1:N\" or \"N:M\"", r->name);
    if (kp_expect_string(P, card, "\"cardinality\"")) return -1;
    if (strcmp(card->valuestring, "1:1") == 0) r->cardinality = KP_CARD_ONE_ONE;
    else if (strcmp(card->valuestring, "1:N") == 0) r->cardinality = KP_CARD_ONE_MANY;
    else if (strcmp(card->valuestring, "N:M") == 0) r->cardinality = KP_CARD_MANY_MANY;
    else if (strcmp(card->valuestring, "N:1") == 0)
        return kp_perr(P, card, 0, "cardinality \"N:1\" is written as \"1:N\" from the other side: swap \"from\" and \"to\"");
    else return kp_perr(P, card, 0, "unknown cardinality \"%s\"; use \"1:1\", \"1:N\" or \"N:M\"", card->valuestring);

    const cJSON *on = kp_json_get(node, "on");
    const cJSON *through = kp_json_get(node, "through");
    if (on && through) return kp_perr(P, through, 1, "relation '%s' has both \"on\" and \"through\"; keep one", r->name);
    if (r->cardinality != KP_CARD_MANY_MANY) {
        if (through) return kp_perr(P, through, 1, "\"through\" is for N:M relations; a %s relation links with \"on\"",
                                    card->valuestring);
        if (!on) return kp_perr(P, node, 0, "relation '%s' needs \"on\": {\"%s.<foreign key>\": \"%s.<key>\"}", r->name,
                                r->to->name, r->from->name);
        if (parse_on(P, r, on)) return -1;
        r->link = KP_LINK_FOREIGN_KEY;
        if (r->cardinality == KP_CARD_ONE_MANY && r->holder != r->to)
            return kp_perr(P, on, 0, "in a 1:N relation the foreign key is on the many side: write {\"%s.<attr>\": \"%s.<key>\"}",
                           r->to->name, r->from->name);
        if (check_whole_key(P, on, r->referenced, r->fk_attrs, r->ref_attrs, r->fk_count)) return -1;
    } else if (through) {
        if (kp_expect_object(P, through, "\"through\"") || kp_check_keys(P, through, through_keys, "\"through\"")) return -1;
        const cJSON *je = kp_json_get(through, "entity");
        const cJSON *jf = kp_json_get(through, "from");
        const cJSON *jt = kp_json_get(through, "to");
        if (!je || !jf || !jt)
            return kp_perr(P, through, 0, "\"through\" needs \"entity\", \"from\" and \"to\" (the join entity's attributes "
                                          "that reference each side's key)");
        if (kp_expect_string(P, je, "\"entity\"")) return -1;
        if (!(r->through = kp_resolve_entity(P, je, je->valuestring, what))) return -1;
        if (r->through == r->from || r->through == r->to)
            return kp_perr(P, je, 0, "the join entity of '%s' must differ from both sides", r->name);
        if (parse_through_side(P, jf, r->through, r->from, &r->through_from, &r->through_from_count) ||
            parse_through_side(P, jt, r->through, r->to, &r->through_to, &r->through_to_count))
            return -1;
        r->link = KP_LINK_THROUGH;
    } else if (on) {
        if (kp_expect_object(P, on, "\"on\"")) return -1;
        if (cJSON_GetArraySize(on) != 1)
            return kp_perr(P, on, 0, "an N:M relation held as an array has one pair in \"on\": {\"%s.<array>\": \"%s.<key>\"}",
                           r->from->name, r->to->name);
        if (parse_on(P, r, on)) return -1;
        kp_attr *arr = r->fk_attrs[0];
        if (r->holder != r->from || arr->type.kind != KP_T_ARRAY)
            return kp_perr(P, on->child, 1,
                           "an N:M relation needs \"through\" (a join entity) or an array attribute of %s holding %s keys",
                           r->from->name, r->to->name);
        if (r->to->key_count != 1 || r->ref_attrs[0] != r->to->key[0])
            return kp_perr(P, on->child, 0, "the array '%s' must hold the key of %s, which must be a single attribute",
                           arr->name, r->to->name);
        if (arr->type.item->kind != r->to->key[0]->type.kind)
            return kp_perr(P, on->child, 0, "the array '%s' holds %s values but %s's key '%s' is %s; the types must match",
                           arr->name, kp_type_name(arr->type.item->kind), r->to->name, r->to->key[0]->name,
                           kp_type_with_article(r->to->key[0]->type.kind));
        r->array_attr = arr;
        r->link = KP_LINK_ARRAY;
    } else {
        return kp_perr(P, node, 0, "N:M relation '%s' needs \"through\" (a join entity) or \"on\" with an array attribute",
                       r->name);
    }

    const cJSON *fan = kp_json_get(node, "fanout");
    if (fan) {
        if (parse_fanout(P, fan, &r->fanout, r->cardinality == KP_CARD_ONE_ONE)) return -1;
    } else if (r->cardinality == KP_CARD_ONE_ONE) {
        r->fanout.avg = r->fanout.max = 1;
    } else {
        return kp_perr(P, node, 0, "relation '%s' needs a \"fanout\": {\"avg\": ..., \"max\": ...} (%s records per %s)",
                       r->name, r->to->name, r->from->name);
    }
    const cJSON *ifan = kp_json_get(node, "inverse_fanout");
    if (ifan) {
        if (r->cardinality != KP_CARD_MANY_MANY)
            return kp_perr(P, ifan, 1, "\"inverse_fanout\" is for N:M relations; the inverse of a %s relation is to-one",
                           card->valuestring);
        if (parse_fanout(P, ifan, &r->inverse_fanout, 0)) return -1;
    } else if (r->cardinality == KP_CARD_MANY_MANY) {
        r->inverse_fanout.avg = -1;
        r->inverse_fanout.max = -1;
    } else {
        r->inverse_fanout.avg = r->inverse_fanout.max = 1;
    }
    int has_skew = 0;
    if (kp_get_number(P, node, "skew", &r->skew, &has_skew, 0)) return -1;
    r->has_skew = has_skew;
    const cJSON *del = kp_json_get(node, "on_delete");
    if (del) {
        if (kp_expect_string(P, del, "\"on_delete\"")) return -1;
        if (strcmp(del->valuestring, "restrict") == 0) r->on_delete = KP_DELETE_RESTRICT;
        else if (strcmp(del->valuestring, "cascade") == 0) r->on_delete = KP_DELETE_CASCADE;
        else if (strcmp(del->valuestring, "detach") == 0) r->on_delete = KP_DELETE_DETACH;
        else return kp_perr(P, del, 0, "unknown on_delete \"%s\"; use cascade, restrict or detach", del->valuestring);
        if (r->on_delete == KP_DELETE_DETACH && r->link == KP_LINK_FOREIGN_KEY && r->holder == r->to)
            for (size_t i = 0; i < r->fk_count; i++)
                if (!r->fk_attrs[i]->is_optional)
                    return kp_perr(P, del, 0, "on_delete \"detach\" clears '%s.%s', which must then be optional",
                                   r->to->name, r->fk_attrs[i]->name);
    }
    const cJSON *desc = kp_json_get(node, "description");
    if (desc) {
        if (kp_expect_string(P, desc, "\"description\"")) return -1;
        r->description = kp_pstrdup(P, desc->valuestring);
    }

    /* the two navigable directions */
    r->forward.name = r->name;
    r->forward.relation = r;
    r->forward.source = r->from;
    r->forward.target = r->to;
    r->forward.is_many = r->cardinality != KP_CARD_ONE_ONE;
    r->forward.fanout = &r->fanout;
    r->inverse.relation = r;
    r->inverse.source = r->to;
    r->inverse.target = r->from;
    r->inverse.is_many = r->cardinality == KP_CARD_MANY_MANY;
    r->inverse.is_inverse = 1;
    r->inverse.fanout = &r->inverse_fanout;
    if (add_rel(P, r->from, &r->forward, name)) return -1;
    const cJSON *inv = kp_json_get(node, "inverse");
    if (inv) {
        if (kp_expect_string(P, inv, "\"inverse\"") || kp_check_name(P, inv, inv->valuestring, 0, "relation")) return -1;
        r->inverse_name = kp_pstrdup(P, inv->valuestring);
        r->inverse.name = r->inverse_name;
        if (add_rel(P, r->to, &r->inverse, inv)) return -1;
    }
    m->relations[m->relation_count++] = r;
    return 0;
}

int kp_parse_relations(kp_parser *P, const cJSON *relations)
{
    if (!relations) return 0;
    if (kp_expect_array(P, relations, "\"relations\"")) return -1;
    P->m->relations = ALLOC_N(P, kp_relation *, (size_t)cJSON_GetArraySize(relations));
    for (const cJSON *r = relations->child; r; r = r->next)
        if (parse_relation(P, r)) return -1;
    return 0;
}

/* ---- copies and aggregates (need relations) ------------------------------------------ */

static const char *const derived_keys[] = {"count", "sum", "min", "max", "where", NULL};

static int resolve_derived(kp_parser *P, kp_attr *a, const cJSON *node)
{
    if (kp_expect_object(P, node, "\"derived\"") || kp_check_keys(P, node, derived_keys, "\"derived\"")) return -1;
    kp_derived *d = ALLOC(P, kp_derived);
    const cJSON *fn = NULL;
    static const char *const fns[] = {"count", "sum", "min", "max"};
    for (int i = 0; i < 4; i++) {
        const cJSON *f = kp_json_get(node, fns[i]);
        if (!f) continue;
        if (fn) return kp_perr(P, f, 1, "\"derived\" of '%s' names two aggregates; keep one", a->name);
        fn = f;
        d->fn = (kp_aggregate)i;
    }
    if (!fn) return kp_perr(P, node, 0, "\"derived\" of '%s' needs one of count, sum, min, max", a->name);
    if (kp_expect_string(P, fn, "the aggregate's path")) return -1;
    kp_entity *end;
    if (kp_resolve_path(P, fn, a->entity, fn->valuestring, d->fn != KP_AGG_COUNT, 0, &d->path, &d->path_len, &d->of, &end))
        return -1;
    int many = 0;
    for (size_t i = 0; i < d->path_len; i++) many |= d->path[i]->is_many;
    if (d->path_len == 0 || !many)
        return kp_perr(P, fn, 0, "\"%s\" of '%s' must follow a to-many relation (an aggregate over one record is a copy_of)",
                       fns[d->fn], a->name);
    kp_type_kind k = a->type.kind;
    if (d->fn == KP_AGG_COUNT) {
        if (k != KP_T_INT && k != KP_T_COUNTER)
            return kp_perr(P, fn, 1, "'%s' counts records, so it must be an int or counter, not %s", a->name,
                           kp_type_with_article(k));
    } else if (d->fn == KP_AGG_SUM) {
        if (!kp_type_is_numeric(d->of->type.kind))
            return kp_perr(P, fn, 0, "cannot sum '%s', %s; sum needs a number", d->of->name,
                           kp_type_with_article(d->of->type.kind));
        if (!kp_type_is_numeric(k))
            return kp_perr(P, fn, 1, "'%s' holds a sum, so it must be numeric, not %s", a->name, kp_type_with_article(k));
    } else {
        kp_type_kind src = d->of->type.kind == KP_T_COUNTER ? KP_T_INT : d->of->type.kind;
        kp_type_kind dst = k == KP_T_COUNTER ? KP_T_INT : k;
        if (!kp_type_is_orderable(src) || src != dst)
            return kp_perr(P, fn, 1, "'%s' (%s) cannot hold the %s of '%s' (%s); the types must match", a->name,
                           kp_type_with_article(k), fns[d->fn], d->of->name, kp_type_with_article(d->of->type.kind));
    }
    if (a->key_index >= 0) return kp_perr(P, node, 1, "key attribute '%s' cannot be derived", a->name);
    a->is_optional = a->is_optional || d->fn == KP_AGG_MIN || d->fn == KP_AGG_MAX; /* no records -> null */
    const cJSON *where = kp_json_get(node, "where");
    if (where && kp_parse_conditions(P, where, end, NULL, "the aggregate's \"where\"", &d->where, &d->where_count)) return -1;
    a->derived = d;
    return 0;
}

static int resolve_copy(kp_parser *P, kp_attr *a, const cJSON *node)
{
    if (kp_expect_string(P, node, "\"copy_of\"")) return -1;
    kp_copy *c = ALLOC(P, kp_copy);
    if (!strchr(node->valuestring, '.'))
        return kp_perr(P, node, 0, "\"copy_of\" is a path \"relation.attribute\" from %s, not \"%s\"", a->entity->name,
                       node->valuestring);
    if (kp_resolve_path(P, node, a->entity, node->valuestring, 1, 0, &c->path, &c->path_len, &c->source, NULL)) return -1;
    for (size_t i = 0; i < c->path_len; i++)
        if (c->path[i]->is_many)
            return kp_perr(P, node, 0, "\"copy_of\": '%s' leads to many %s records, but a copy follows to-one relations "
                                       "only; to aggregate them use \"derived\"", c->path[i]->name, c->path[i]->target->name);
    if (c->source->type.kind != a->type.kind)
        return kp_perr(P, node, 0, "'%s' is %s but copies '%s', %s; the types must match", a->name,
                       kp_type_with_article(a->type.kind), c->source->name, kp_type_with_article(c->source->type.kind));
    if (a->key_index >= 0) return kp_perr(P, node, 1, "key attribute '%s' cannot be a copy", a->name);
    a->copy_of = c;
    return 0;
}

int kp_resolve_attribute_links(kp_parser *P, const cJSON *entities)
{
    for (const cJSON *en = entities->child; en; en = en->next) {
        kp_entity *e = kp_model_entity(P->m, en->string);
        const cJSON *attrs = kp_json_get(en, "attributes");
        for (const cJSON *an = attrs->child; an; an = an->next) {
            if (!cJSON_IsObject(an)) continue;
            kp_attr *a = kp_entity_attr(e, an->string);
            const cJSON *copy = kp_json_get(an, "copy_of");
            const cJSON *derived = kp_json_get(an, "derived");
            if (copy && derived) return kp_perr(P, derived, 1, "'%s' cannot be both a copy and derived", a->name);
            if (copy && resolve_copy(P, a, copy)) return -1;
            if (derived && resolve_derived(P, a, derived)) return -1;
        }
    }
    return 0;
}

/* ---- counts -------------------------------------------------------------------------- */

/* The relation that makes `e` a child (1:N holder, or N:M join entity) whose parent has
 * a known count, with the multiplier; NULL when none. */
/* Can r give e's count (e the many side of a 1:N, or the join entity of an N:M)? */
static int derives(const kp_relation *r, const kp_entity *e)
{
    return (r->cardinality == KP_CARD_ONE_MANY && r->to == e && r->from != e) || (r->link == KP_LINK_THROUGH && r->through == e);
}

/* The first relation (model order) among e's candidates that gives its count from a known
 * parent count; `by[first[i]..first[i+1]]` lists the relations that can derive entity i's
 * (so the passes stay linear in the model, not entities times relations). */
static const kp_relation *deriving_relation(const kp_model *m, const kp_entity *e, const int *known, const size_t *first,
                                            const kp_relation *const *by)
{
    (void)m;
    for (size_t k = first[e->index]; k < first[e->index + 1]; k++) {
        const kp_relation *r = by[k];
        if (known[r->from->index] && r->fanout.avg >= 0) return r;
    }
    return NULL;
}

/* Fills each entity's write_steps (model order), counting first. */
static int index_write_steps(kp_parser *P)
{
    kp_model *m = P->m;
    for (int pass = 0; pass < 2; pass++) {
        for (size_t i = 0; pass == 1 && i < m->entity_count; i++) {
            kp_entity *e = m->entities[i];
            e->write_steps = ALLOC_N(P, const kp_write_step *, e->write_step_count);
            e->step_writes = ALLOC_N(P, const kp_write *, e->write_step_count);
            if (!e->write_steps || !e->step_writes) return kp_perr(P, NULL, 0, "out of memory");
            e->write_step_count = 0;
        }
        for (size_t w = 0; w < m->write_count; w++)
            for (size_t s = 0; s < m->writes[w]->step_count; s++) {
                kp_entity *e = m->writes[w]->steps[s].entity;
                if (pass == 1) {
                    e->write_steps[e->write_step_count] = &m->writes[w]->steps[s];
                    e->step_writes[e->write_step_count] = m->writes[w];
                }
                e->write_step_count++;
            }
    }
    return 0;
}

/* Fills each entity's copied_by and aggregated_by (model order), counting first. */
static int link_reverse(kp_parser *P)
{
    kp_model *m = P->m;
    for (int pass = 0; pass < 2; pass++) {
        for (size_t i = 0; i < m->entity_count; i++) {
            kp_entity *e = m->entities[i];
            if (pass == 1) {
                e->copied_by = e->copied_by_count ? ALLOC_N(P, kp_attr *, e->copied_by_count) : NULL;
                e->aggregated_by = e->aggregated_by_count ? ALLOC_N(P, kp_attr *, e->aggregated_by_count) : NULL;
                if ((e->copied_by_count && !e->copied_by) || (e->aggregated_by_count && !e->aggregated_by))
                    return kp_perr(P, NULL, 0, "out of memory");
                e->copied_by_count = e->aggregated_by_count = 0;
            }
        }
        for (size_t i = 0; i < m->entity_count; i++) {
            const kp_entity *other = m->entities[i];
            for (size_t a = 0; a < other->attr_count; a++) {
                kp_attr *attr = other->attrs[a];
                if (attr->copy_of && attr->copy_of->source && attr->copy_of->source->entity) {
                    kp_entity *to = attr->copy_of->source->entity;
                    if (pass == 1) to->copied_by[to->copied_by_count] = attr;
                    to->copied_by_count++;
                }
                kp_entity *to = attr->derived ? kp_derived_changed_by(attr->derived) : NULL;
                if (to) {
                    if (pass == 1) to->aggregated_by[to->aggregated_by_count] = attr;
                    to->aggregated_by_count++;
                }
            }
        }
    }
    return 0;
}

int kp_derive_counts(kp_parser *P, double scale)
{
    kp_model *m = P->m;
    int *known = ALLOC_N(P, int, m->entity_count);
    for (size_t i = 0; i < m->entity_count; i++) known[i] = m->entities[i]->is_count_given;
    /* averages derived from two given counts */
    for (size_t i = 0; i < m->relation_count; i++) {
        kp_relation *r = m->relations[i];
        kp_entity *child = r->link == KP_LINK_THROUGH ? r->through : r->to;
        if (r->fanout.avg < 0) {
            if (!r->from->is_count_given || !child->is_count_given) {
                kp_pos p = r->pos;
                return kp_error_set(P->err, KP_ERR_MODEL, kp_json_file(P->doc), p.line, p.column,
                                    "relation '%s' has no fan-out avg and %s or %s has no count; give one of them",
                                    r->name, r->from->name, child->name);
            }
            r->fanout.avg = r->from->count > 0 ? child->count / r->from->count : 0;
            if (r->fanout.max >= 0 && r->fanout.max < r->fanout.avg) {
                kp_pos p = r->pos;
                return kp_error_set(P->err, KP_ERR_MODEL, kp_json_file(P->doc), p.line, p.column,
                                    "relation '%s': the counts give a fan-out avg of %g, above its max %g", r->name,
                                    r->fanout.avg, r->fanout.max);
            }
        }
    }
    /* each relation listed under the entities whose count it can give (its "to", its join
     * entity; once when they are the same), in model order */
    size_t *first = ALLOC_N(P, size_t, m->entity_count + 1);
    const kp_relation **by = ALLOC_N(P, const kp_relation *, 2 * m->relation_count + 1);
    size_t *fill = ALLOC_N(P, size_t, m->entity_count + 1);
    if (!known || !first || !by || !fill) return kp_perr(P, NULL, 0, "out of memory");
    for (size_t i = 0; i < m->relation_count; i++)
        for (size_t e = 0; e < 2; e++) {
            const kp_entity *x = e ? m->relations[i]->through : m->relations[i]->to;
            if (x && derives(m->relations[i], x) && (e == 1 || x != m->relations[i]->through)) first[x->index + 1]++;
        }
    for (size_t i = 0; i < m->entity_count; i++) first[i + 1] += first[i];
    for (size_t i = 0; i <= m->entity_count; i++) fill[i] = first[i];
    for (size_t i = 0; i < m->relation_count; i++)
        for (size_t e = 0; e < 2; e++) {
            const kp_entity *x = e ? m->relations[i]->through : m->relations[i]->to;
            if (x && derives(m->relations[i], x) && (e == 1 || x != m->relations[i]->through)) by[fill[x->index]++] = m->relations[i];
        }
    for (size_t pass = 0; pass < m->entity_count; pass++) {
        int progress = 0;
        for (size_t i = 0; i < m->entity_count; i++) {
            kp_entity *e = m->entities[i];
            if (known[i]) continue;
            const kp_relation *r = deriving_relation(m, e, known, first, by);
            if (!r) continue;
            e->count = floor(r->from->count * r->fanout.avg + 0.5);
            known[i] = 1;
            progress = 1;
        }
        if (!progress) break;
    }
    for (size_t i = 0; i < m->entity_count; i++) {
        if (known[i]) continue;
        kp_entity *e = m->entities[i];
        return kp_error_set(P->err, KP_ERR_MODEL, kp_json_file(P->doc), e->pos.line, e->pos.column,
                            "entity '%s' has no \"count\" and is not the many side of a 1:N relation whose parent has "
                            "one; give it a count", e->name);
    }
    /* a declared fan-out must agree with the counts within 10 %: the counts given, and those
     * derived through another relation (the generator would otherwise make a number of
     * children per parent the model never declared) */
    for (size_t i = 0; i < m->relation_count; i++) {
        kp_relation *r = m->relations[i];
        kp_entity *child = r->cardinality == KP_CARD_ONE_MANY ? r->to : r->link == KP_LINK_THROUGH ? r->through : NULL;
        if (!child || child == r->from || !r->fanout.is_given || r->from->count <= 0) continue;
        double implied = r->from->count * r->fanout.avg;
        double big = implied > child->count ? implied : child->count;
        if (fabs(implied - child->count) > 0.10 * big) {
            if (child->is_count_given && r->from->is_count_given)
                return kp_error_set(P->err, KP_ERR_MODEL, kp_json_file(P->doc), r->pos.line, r->pos.column,
                                    "relation '%s': %s count %g x fan-out avg %g = %g, but %s count is %g (more than 10%% apart); "
                                    "fix one of them or omit the child's count", r->name, r->from->name, r->from->count,
                                    r->fanout.avg, implied, child->name, child->count);
            return kp_error_set(P->err, KP_ERR_MODEL, kp_json_file(P->doc), r->pos.line, r->pos.column,
                                "relation '%s' declares a fan-out avg of %g %s per %s, but the counts give %.3g (%s %.0f%s, %s %.0f%s); "
                                "fix the fan-out to about %.3g, or the counts", r->name, r->fanout.avg, child->name, r->from->name,
                                child->count / r->from->count, r->from->name, r->from->count,
                                r->from->is_count_given ? "" : " derived", child->name, child->count,
                                child->is_count_given ? "" : " derived", child->count / r->from->count);
        }
    }
    /* inverse fan-out of N:M and unbounded horizons */
    for (size_t i = 0; i < m->relation_count; i++) {
        kp_relation *r = m->relations[i];
        if (r->fanout.max < 0) r->fanout.max = r->fanout.avg * 10 > 1 ? ceil(r->fanout.avg * 10) : 1;
        if (r->cardinality == KP_CARD_MANY_MANY) {
            if (r->inverse_fanout.avg < 0)
                r->inverse_fanout.avg = r->to->count > 0 ? r->from->count * r->fanout.avg / r->to->count : 0;
            if (r->inverse_fanout.max < 0)
                r->inverse_fanout.max = r->inverse_fanout.avg * 10 > 1 ? ceil(r->inverse_fanout.avg * 10) : 1;
        }
    }
    for (size_t i = 0; i < m->relation_count; i++) {
        m->relations[i]->unscaled_fanout = m->relations[i]->fanout;
        m->relations[i]->unscaled_inverse_fanout = m->relations[i]->inverse_fanout;
    }
    /* --scale: counts multiplied; fan-outs kept, capped by the scaled child count */
    if (scale > 0 && scale != 1) {
        for (size_t i = 0; i < m->entity_count; i++) {
            kp_entity *e = m->entities[i];
            double scaled = floor(e->count * scale + 0.5);
            e->count = scaled < 1 && e->count > 0 ? 1 : scaled; /* an entity that exists keeps a record */
        }
        for (size_t i = 0; i < m->relation_count; i++) {
            kp_relation *r = m->relations[i];
            if (r->fanout.max > r->to->count) r->fanout.max = r->to->count;
            if (r->fanout.avg > r->fanout.max) r->fanout.avg = r->fanout.max;
            if (r->inverse_fanout.max > r->from->count) r->inverse_fanout.max = r->from->count;
            if (r->inverse_fanout.avg > r->inverse_fanout.max) r->inverse_fanout.avg = r->inverse_fanout.max;
        }
    }
    m->scale = scale > 0 ? scale : 1;
    return 0;
}

/* ---- entry points ---------------------------------------------------------------------- */

static const char *const top_keys[] = {"$schema", "model", "description", "entities", "relations",
                                       "access_patterns", "writes", "workload", "hints", NULL};

static void hash_text(kp_model *m, const char *text, size_t len)
{
    uint64_t h = 1469598103934665603ULL;
    for (size_t i = 0; i < len; i++) { h ^= (unsigned char)text[i]; h *= 1099511628211ULL; }
    kp_snprintf(m->hash, sizeof m->hash, "%016llx", (unsigned long long)h);
}

static int parse_model(kp_parser *P, const kp_model_options *options)
{
    const cJSON *root = kp_json_root(P->doc);
    if (!cJSON_IsObject(root)) return kp_perr(P, root, 0, "a model is a JSON object with \"model\", \"entities\" and \"access_patterns\"");
    if (kp_check_keys(P, root, top_keys, "the model")) return -1;
    const cJSON *name = kp_json_get(root, "model");
    if (!name) return kp_perr(P, root, 0, "the model needs a \"model\" name");
    if (kp_expect_string(P, name, "\"model\"") || kp_check_name(P, name, name->valuestring, 1, "model")) return -1;
    P->m->name = kp_pstrdup(P, name->valuestring);
    const cJSON *desc = kp_json_get(root, "description");
    if (desc) {
        if (kp_expect_string(P, desc, "\"description\"")) return -1;
        P->m->description = kp_pstrdup(P, desc->valuestring);
    }
    const cJSON *entities = kp_json_get(root, "entities");
    if (!entities) return kp_perr(P, root, 0, "the model needs \"entities\"");
    const cJSON *patterns = kp_json_get(root, "access_patterns");
    if (kp_parse_entities(P, entities) || kp_parse_relations(P, kp_json_get(root, "relations")) ||
        kp_resolve_attribute_links(P, entities) || link_reverse(P) || kp_derive_counts(P, options ? options->scale : 1))
        return -1;
    if (!patterns) return kp_perr(P, root, 0, "the model needs \"access_patterns\": what each screen or API reads");
    if (kp_parse_patterns(P, patterns) || kp_parse_writes(P, kp_json_get(root, "writes")) ||
        kp_parse_workload(P, kp_json_get(root, "workload")) ||
        kp_parse_hints(P, kp_json_get(root, "hints")) || index_write_steps(P) ||
        kp_keep_counts(P) || kp_keep_copies(P))
        return -1;
    return 0;
}

int kp_model_parse(const char *file, const char *text, size_t len, const kp_model_options *options, kp_model **out,
                   kp_error *err)
{
    *out = NULL;
    kp_error_clear(err);
    kp_json_doc *doc;
    if (kp_json_parse(file, text, len, &kp_json_model_limits, &doc, err)) return -1;
    kp_model *m = calloc(1, sizeof *m);
    if (!m) { kp_json_free(doc); return kp_error_set(err, KP_ERR_NOMEM, file, 0, 0, "out of memory"); }
    m->doc = doc;
    m->file = kp_arena_strdup(&m->arena, kp_json_file(doc));
    m->scale = 1;
    hash_text(m, text, len);
    kp_parser P = {m, doc, err, {0}};
    if (parse_model(&P, options)) {
        kp_model_free(m);
        return -1;
    }
    *out = m;
    return 0;
}

int kp_model_load(const char *path, const kp_model_options *options, kp_model **out, kp_error *err)
{
    *out = NULL;
    kp_error_clear(err);
    char *text;
    size_t len;
    if (kp_file_read(path, kp_json_model_limits.max_bytes, &text, &len, err)) return -1;
    int rc = kp_model_parse(path, text, len, options, out, err);
    free(text);
    return rc;
}

void kp_model_free(kp_model *model)
{
    if (!model) return;
    kp_json_free(model->doc);
    kp_arena_free(&model->arena);
    free(model);
}

/* ---- look-ups and rates ------------------------------------------------------------------ */

kp_entity *kp_model_entity(const kp_model *m, const char *name)
{
    if (m->entity_by_name.count == m->entity_count) return kp_strmap_get(&m->entity_by_name, name);
    for (size_t i = 0; i < m->entity_count; i++)
        if (strcmp(m->entities[i]->name, name) == 0) return m->entities[i];
    return NULL;
}

kp_attr *kp_entity_attr(const kp_entity *e, const char *name)
{
    for (size_t i = 0; i < e->attr_count; i++)
        if (strcmp(e->attrs[i]->name, name) == 0) return e->attrs[i];
    return NULL;
}

kp_rel *kp_entity_rel(const kp_entity *e, const char *name)
{
    for (size_t i = 0; i < e->rel_count; i++)
        if (strcmp(e->rels[i]->name, name) == 0) return e->rels[i];
    return NULL;
}

kp_pattern *kp_model_pattern(const kp_model *m, const char *name)
{
    for (size_t i = 0; i < m->pattern_count; i++)
        if (strcmp(m->patterns[i]->name, name) == 0) return m->patterns[i];
    return NULL;
}

kp_write *kp_model_write(const kp_model *m, const char *name)
{
    for (size_t i = 0; i < m->write_count; i++)
        if (strcmp(m->writes[i]->name, name) == 0) return m->writes[i];
    return NULL;
}

kp_mix *kp_model_mix(const kp_model *m, const char *name)
{
    for (size_t i = 0; i < m->mix_count; i++)
        if (strcmp(m->mixes[i]->name, name) == 0) return m->mixes[i];
    return NULL;
}

double kp_write_step_records(const kp_write_step *st)
{
    double fan = 1;
    for (size_t h = 0; h < st->for_each_len; h++) fan *= st->for_each[h]->fanout ? st->for_each[h]->fanout->avg : 1;
    return st->rows * fan;
}

int kp_write_writes_entity(const kp_write *w, const kp_entity *e)
{
    for (size_t k = 0; k < w->step_count; k++)
        if (w->steps[k].entity == e && w->steps[k].op != KP_WRITE_DELETE) return 1;
    return 0;
}

double kp_write_for_each_reads(const kp_write *w, const kp_write_step *st)
{
    if (!st->for_each_len || !w->step_count) return 0;
    for (const kp_write_step *k = w->steps; k < st; k++) { /* reached already by an earlier step */
        int same = k->for_each_len == st->for_each_len;
        for (size_t h = 0; same && h < st->for_each_len; h++) same = k->for_each[h] == st->for_each[h];
        if (same) return 0;
    }
    double from = w->steps[0].rows, reads = 0;
    for (size_t h = 0; h < st->for_each_len; h++) {
        reads += from;
        from *= st->for_each[h]->fanout ? st->for_each[h]->fanout->avg : 1;
    }
    return reads;
}

kp_entity *kp_derived_changed_by(const kp_derived *d)
{
    if (!d || !d->path_len) return NULL;
    const kp_rel *last = d->path[d->path_len - 1];
    /* a count through a join entity changes with the join records, not with the far side */
    if (d->fn == KP_AGG_COUNT && last->relation->link == KP_LINK_THROUGH) return last->relation->through;
    return last->target;
}

int kp_derived_moved_by(const kp_derived *d, const kp_write_step *st)
{
    if (st->op != KP_WRITE_UPDATE) return 1; /* a record comes or goes */
    const kp_relation *r = d->path_len ? d->path[d->path_len - 1]->relation : NULL;
    for (size_t k = 0; k < st->assign_count; k++) {
        const kp_attr *a = st->assigns[k].attr;
        if (a == d->of) return 1;
        for (size_t j = 0; j < d->where_count; j++)
            if (d->where[j].attr == a) return 1;
        for (size_t j = 0; r && j < r->fk_count; j++)
            if (r->fk_attrs[j] == a) return 1;
        for (size_t j = 0; r && j < r->through_from_count; j++)
            if (r->through_from[j] == a) return 1;
        for (size_t j = 0; r && j < r->through_to_count; j++)
            if (r->through_to[j] == a) return 1;
    }
    return 0;
}

double kp_pattern_rps(const kp_pattern *p, const kp_mix *mix)
{
    for (size_t i = 0; mix && i < mix->rate_count; i++)
        if (mix->rates[i].pattern == p) return mix->rates[i].rps;
    return p->rps;
}

double kp_write_rps(const kp_write *w, const kp_mix *mix)
{
    for (size_t i = 0; mix && i < mix->rate_count; i++)
        if (mix->rates[i].write == w) return mix->rates[i].rps;
    return w->rps;
}

double kp_pattern_skew(const kp_model *m, const kp_pattern *p) { return p->has_skew ? p->skew : m->key_skew; }

double kp_shape_limit_max(const kp_shape *s)
{
    if (!s) return 0;
    if (s->limit_param) {
        if (cJSON_IsNumber(s->limit_param->max)) return s->limit_param->max->valuedouble;
        if (cJSON_IsNumber(s->limit_param->default_value)) return s->limit_param->default_value->valuedouble;
    }
    return s->limit > 0 ? (double)s->limit : 0;
}

int kp_shape_reads_only_key(const kp_shape *s, const kp_entity *t)
{
    if (s->where_count) return 0;
    for (size_t k = 0; k < s->order_count; k++)
        if (s->order[k].attr->key_index < 0) return 0;
    if (s->value) return s->value->kind == KP_SHAPE_ATTR && !s->value->path_len && s->value->attr->key_index >= 0 &&
                         s->value->attr->entity == t;
    for (size_t i = 0; i < s->member_count; i++) {
        const kp_shape *m = s->members[i];
        if (m->kind == KP_SHAPE_PARAM || m->kind == KP_SHAPE_TOKEN) continue;
        if (m->kind != KP_SHAPE_ATTR || m->path_len || m->attr->key_index < 0) return 0;
    }
    return 1;
}

double kp_shape_offset_max(const kp_shape *s)
{
    if (!s || s->page != KP_PAGE_OFFSET || !s->offset_param) return 0;
    return cJSON_IsNumber(s->offset_param->max) ? s->offset_param->max->valuedouble : -1;
}

static void count_listings(const kp_shape *s, int *n, const kp_shape **one)
{
    if (!s) return;
    if (s->kind == KP_SHAPE_EACH) { (*n)++; *one = s; }
    for (size_t i = 0; i < s->member_count; i++) count_listings(s->members[i], n, one);
}

const kp_shape *kp_pattern_page_listing(const kp_pattern *p)
{
    int n = 0;
    const kp_shape *each = NULL;
    count_listings(p->returns, &n, &each);
    return n == 1 && kp_shape_limit_max(each) > 0 ? each : NULL;
}

double kp_page_bound(double page, double requests) { return page * requests + requests + 1; }

double kp_shape_items_max(const kp_shape *s, const kp_rel *last)
{
    double n = last && last->fanout ? last->fanout->max : 1;
    if (s && s->expect.is_given) n = s->expect.max > 0 ? s->expect.max : s->expect.avg;
    double limit = kp_shape_limit_max(s);
    if (limit > 0 && n > limit) n = limit;
    return n;
}
double kp_write_skew(const kp_model *m, const kp_write *w) { return w->has_skew ? w->skew : m->key_skew; }

const char *kp_op_name(kp_op op)
{
    static const char *const names[] = {"=", "<", "<=", ">", ">=", "between", "begins_with"};
    return op <= KP_OP_BEGINS_WITH ? names[op] : "?";
}
