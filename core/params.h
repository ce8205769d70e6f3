/*
 * params.h — parameter values of one request: name -> canonical JSON value.
 *
 * The oracle, the backends' execute and the write machinery all take a kp_params.
 * Values are canonical JSON of the bound attribute's type; numbers are held as
 * cJSON_Raw nodes carrying their exact text (never through a double).
 * Invariant: a kp_params owns its values; a name appears at most once.
 */
#ifndef KP_PARAMS_H
#define KP_PARAMS_H

#include <stddef.h>
#include <cjson/cJSON.h>

#include "core/error.h"
#include "core/model.h"

typedef struct kp_param_value {
    char *name;                 /* without the leading ':' */
    cJSON *value;               /* owned */
} kp_param_value;

typedef struct kp_params {
    kp_param_value *items;
    size_t count, cap;
} kp_params;

/* An empty set; free with kp_params_free (which also frees the struct). NULL when out of memory. */
kp_params *kp_params_new(void);
void kp_params_free(kp_params *params);
/* Sets name to value, taking ownership of value (replacing an earlier value). 0 ok, -1 out of memory. */
int kp_params_set(kp_params *params, const char *name, cJSON *value);
/* The value, or NULL when the parameter was not given. */
const cJSON *kp_params_get(const kp_params *params, const char *name);
/* A deep copy (NULL when out of memory). */
kp_params *kp_params_copy(const kp_params *params);
/* The parameters as one JSON object {name: value} (a new tree the caller frees). */
cJSON *kp_params_to_json(const kp_params *params);

/* Converts command-line text into the canonical JSON of the parameter's type:
 * int "42" -> 42 (exact), decimal "19.90" -> 19.90, bool "true", strings as they are,
 * timestamps/dates/uuids checked, objects/arrays/maps parsed as JSON. On failure err
 * says what was expected (code KP_ERR_USAGE) and *out is NULL. */
int kp_params_parse_text(const kp_param *param, const char *text, cJSON **out, kp_error *err);

/* Checks a value against the parameter's type and bounds (KP_ERR_USAGE on failure). */
int kp_params_check_value(const kp_param *param, const cJSON *value, const kp_json_doc *doc, kp_error *err);

/* The effective values of declared parameters: the given value (checked), else the
 * default, else absent when the parameter is optional or a page size / offset (the
 * shape's own limit / 0 then apply). A required parameter without a value, or a
 * given name that is not declared, is an error (KP_ERR_USAGE); `owner` ("pattern
 * 'x'") names the pattern or write in messages. *out is a new set (kp_params_free). */
int kp_params_resolve(kp_param *const *declared, size_t count, const kp_params *given, const kp_json_doc *doc,
                      const char *owner, kp_params **out, kp_error *err);

/* Looks up a declared parameter of a pattern or write by name (NULL when absent). */
kp_param *kp_pattern_param(const kp_pattern *pattern, const char *name);
kp_param *kp_write_param(const kp_write *write, const char *name);

#endif
