/*
 * value.h — canonical JSON values of the model's types (DESIGN.md "Canonical JSON").
 *
 * One place knows what a valid timestamp, date, uuid, int or decimal looks like, how
 * to write one and how two compare. The model parser checks literals with it, the
 * data loader checks records, the generator formats values, the oracle orders them.
 * Invariant: int and decimal values are handled as their exact text, never through a
 * double.
 */
#ifndef KP_VALUE_H
#define KP_VALUE_H

#include <stddef.h>
#include <stdint.h>
#include <cjson/cJSON.h>

#include "core/json.h"
#include "core/model.h"

/* Checks that `value` is the canonical JSON of `type`. Numbers' exact text comes from
 * `doc` when given (else from cJSON's double, which is exact only below 2^53). On
 * failure returns -1, points *bad at the offending (sub-)node and writes a sentence
 * such as "expected a timestamp like \"2026-04-01T09:30:00.000Z\"" into why. */
int kp_value_check(const kp_type *type, const cJSON *value, const kp_json_doc *doc, const cJSON **bad,
                   char *why, size_t why_size);

/* Exact text of a number node: from doc when it has it, else cJSON's valuestring
 * (cJSON_Raw nodes), else a %.17g rendering. Writes into buf when needed. */
const char *kp_number_text(const cJSON *node, const kp_json_doc *doc, char *buf, size_t size, size_t *len);

int kp_int_parse(const char *text, size_t len, int64_t *out);   /* canonical integer text */
int kp_decimal_check(const char *text, size_t len);             /* -?(0|[1-9]d*)(.d+)? */
/* Compares two decimal (or integer) texts exactly: <0, 0, >0. "1.50" equals "1.5". */
int kp_decimal_compare(const char *a, size_t alen, const char *b, size_t blen);

/* Timestamps as milliseconds since 1970-01-01T00:00:00.000Z (canonical form only). */
int kp_timestamp_parse(const char *text, int64_t *ms);
void kp_timestamp_format(int64_t ms, char out[32]);
/* Dates as days since 1970-01-01. */
int kp_date_parse(const char *text, int32_t *days);
void kp_date_format(int32_t days, char out[16]);

int kp_uuid_check(const char *text);      /* lower-case 8-4-4-4-12 hex */
int kp_timeuuid_check(const char *text);  /* a uuid of version 1 */
int kp_base64_check(const char *text);    /* standard alphabet, padded */

/* An example of a canonical value of the kind, for messages. */
const char *kp_value_example(kp_type_kind kind);

#endif
