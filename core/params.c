/*
 * params.c — parameter values: the set, command-line conversion, checking.
 *
 * Invariant: every value held is canonical JSON of its parameter's type with numbers
 * as cJSON_Raw exact text, so that whoever reads a kp_params (the oracle, a backend)
 * never meets a double standing in for an int or a decimal.
 */
#include "core/params.h"

#include <stdlib.h>
#include <string.h>

#include "core/data.h"
#include "core/value.h"

/* "an int", "a string": the type name with its article. */
static const char *article(const char *name) { return strchr("aeiou", name[0]) ? "an" : "a"; }

kp_params *kp_params_new(void) { return calloc(1, sizeof(kp_params)); }

void kp_params_free(kp_params *params)
{
    if (!params) return;
    for (size_t i = 0; i < params->count; i++) {
        free(params->items[i].name);
        cJSON_Delete(params->items[i].value);
    }
    free(params->items);
    free(params);
}

int kp_params_set(kp_params *params, const char *name, cJSON *value)
{
    if (!value) return -1;
    for (size_t i = 0; i < params->count; i++)
        if (strcmp(params->items[i].name, name) == 0) {
            cJSON_Delete(params->items[i].value);
            params->items[i].value = value;
            return 0;
        }
    if (params->count == params->cap) {
        size_t cap = params->cap ? params->cap * 2 : 8;
        kp_param_value *items = realloc(params->items, cap * sizeof *items);
        if (!items) { cJSON_Delete(value); return -1; }
        params->items = items;
        params->cap = cap;
    }
    char *copy = strdup(name);
    if (!copy) { cJSON_Delete(value); return -1; }
    params->items[params->count].name = copy;
    params->items[params->count].value = value;
    params->count++;
    return 0;
}

const cJSON *kp_params_get(const kp_params *params, const char *name)
{
    for (size_t i = 0; params && i < params->count; i++)
        if (strcmp(params->items[i].name, name) == 0) return params->items[i].value;
    return NULL;
}

kp_params *kp_params_copy(const kp_params *params)
{
    kp_params *copy = kp_params_new();
    for (size_t i = 0; copy && params && i < params->count; i++)
        if (kp_params_set(copy, params->items[i].name, kp_data_copy(params->items[i].value, NULL))) {
            kp_params_free(copy);
            return NULL;
        }
    return copy;
}

cJSON *kp_params_to_json(const kp_params *params)
{
    cJSON *out = cJSON_CreateObject();
    for (size_t i = 0; out && params && i < params->count; i++)
        cJSON_AddItemToObject(out, params->items[i].name, kp_data_copy(params->items[i].value, NULL));
    return out;
}

kp_param *kp_pattern_param(const kp_pattern *pattern, const char *name)
{
    for (size_t i = 0; i < pattern->param_count; i++)
        if (strcmp(pattern->params[i]->name, name) == 0) return pattern->params[i];
    return NULL;
}

kp_param *kp_write_param(const kp_write *write, const char *name)
{
    for (size_t i = 0; i < write->param_count; i++)
        if (strcmp(write->params[i]->name, name) == 0) return write->params[i];
    return NULL;
}

int kp_params_check_value(const kp_param *param, const cJSON *value, const kp_json_doc *doc, kp_error *err)
{
    char why[300];
    const cJSON *bad = NULL;
    if (!param->type) return 0;
    if (kp_value_check(param->type, value, doc, &bad, why, sizeof why))
        return kp_error_set(err, KP_ERR_USAGE, NULL, 0, 0, "parameter :%s: %s", param->name, why);
    char vb[400], bb[400];
    const char *v = kp_data_number_text(value, doc, vb, sizeof vb);
    if (v && param->min) {
        const char *b = kp_data_number_text(param->min, doc, bb, sizeof bb);
        if (b && kp_data_compare(param->type->kind, value, param->min, doc) < 0)
            return kp_error_set(err, KP_ERR_USAGE, NULL, 0, 0, "parameter :%s is %s, below its minimum %s", param->name,
                                v, b);
    }
    if (v && param->max) {
        const char *b = kp_data_number_text(param->max, doc, bb, sizeof bb);
        if (b && kp_data_compare(param->type->kind, value, param->max, doc) > 0)
            return kp_error_set(err, KP_ERR_USAGE, NULL, 0, 0, "parameter :%s is %s, above its maximum %s", param->name,
                                v, b);
    }
    return 0;
}

int kp_params_parse_text(const kp_param *param, const char *text, cJSON **out, kp_error *err)
{
    *out = NULL;
    kp_type_kind kind = param->type ? param->type->kind : KP_T_STRING;
    cJSON *value = NULL;
    if (kind == KP_T_BOOL) {
        if (strcmp(text, "true") == 0) value = cJSON_CreateTrue();
        else if (strcmp(text, "false") == 0) value = cJSON_CreateFalse();
        else return kp_error_set(err, KP_ERR_USAGE, NULL, 0, 0, "parameter :%s is a bool: give true or false, not "
                                 "\"%s\"", param->name, text);
    } else if (kp_type_is_textual(kind)) {
        value = cJSON_CreateString(text);
    } else {
        /* numbers and structured values: read as JSON, keeping numbers' exact text */
        kp_json_doc *doc = NULL;
        kp_error parse_error;
        if (kp_json_parse("<param>", text, strlen(text), NULL, &doc, &parse_error)) {
            const char *what = kind == KP_T_INT || kind == KP_T_COUNTER ? "an integer like 42"
                               : kind == KP_T_DECIMAL                    ? "a decimal like 19.99"
                               : kind == KP_T_DOUBLE                     ? "a number like 0.25"
                                                                         : "a JSON value";
            return kp_error_set(err, KP_ERR_USAGE, NULL, 0, 0, "parameter :%s is %s %s: expected %s, got \"%s\"",
                                param->name, article(kp_type_name(kind)), kp_type_name(kind), what, text);
        }
        value = kp_data_copy(kp_json_root(doc), doc);
        kp_json_free(doc);
    }
    if (!value) return kp_error_set(err, KP_ERR_NOMEM, NULL, 0, 0, "out of memory");
    if (kp_params_check_value(param, value, NULL, err)) {
        char again[sizeof err->message];
        snprintf(again, sizeof again, "%.400s (from \"%.80s\")", err->message, text);
        snprintf(err->message, sizeof err->message, "%s", again);
        cJSON_Delete(value);
        return -1;
    }
    *out = value;
    return 0;
}

int kp_params_resolve(kp_param *const *declared, size_t count, const kp_params *given, const kp_json_doc *doc,
                      const char *owner, kp_params **out, kp_error *err)
{
    *out = NULL;
    for (size_t i = 0; given && i < given->count; i++) {
        const char *name = given->items[i].name;
        int known = 0;
        for (size_t d = 0; d < count; d++)
            if (strcmp(declared[d]->name, name) == 0) known = 1;
        if (known) continue;
        const char **names = calloc(count + 1, sizeof *names);
        if (!names) return kp_error_set(err, KP_ERR_NOMEM, NULL, 0, 0, "out of memory");
        for (size_t d = 0; d < count; d++) names[d] = declared[d]->name;
        const char *guess = kp_suggest(name, names);
        if (guess)
            kp_error_set(err, KP_ERR_USAGE, NULL, 0, 0, "%s has no parameter :%s (did you mean :%s?)", owner, name, guess);
        else if (count == 0)
            kp_error_set(err, KP_ERR_USAGE, NULL, 0, 0, "%s has no parameters, but :%s was given", owner, name);
        else {
            char list[300] = "";
            for (size_t d = 0; d < count && strlen(list) < 240; d++) {
                strcat(list, d ? ", :" : ":");
                strncat(list, declared[d]->name, 40);
            }
            kp_error_set(err, KP_ERR_USAGE, NULL, 0, 0, "%s has no parameter :%s; its parameters are %s", owner, name,
                         list);
        }
        free(names);
        return -1;
    }
    kp_params *resolved = kp_params_new();
    if (!resolved) return kp_error_set(err, KP_ERR_NOMEM, NULL, 0, 0, "out of memory");
    for (size_t d = 0; d < count; d++) {
        const kp_param *p = declared[d];
        const cJSON *v = kp_params_get(given, p->name);
        if (v) {
            if (kp_params_check_value(p, v, NULL, err)) { kp_params_free(resolved); return -1; }
        } else if (p->default_value) {
            v = p->default_value;
        } else if (p->is_optional || p->role != KP_PARAM_VALUE) {
            continue;
        } else {
            kp_params_free(resolved);
            const char *type = p->type ? kp_type_name(p->type->kind) : "value";
            return kp_error_set(err, KP_ERR_USAGE, NULL, 0, 0, "%s needs parameter :%s (%s %s); give it a value", owner,
                                p->name, article(type), type);
        }
        if (kp_params_set(resolved, p->name, kp_data_copy(v, doc))) {
            kp_params_free(resolved);
            return kp_error_set(err, KP_ERR_NOMEM, NULL, 0, 0, "out of memory");
        }
    }
    *out = resolved;
    return 0;
}
