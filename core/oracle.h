/*
 * oracle.h — the reference answer of an access pattern over the neutral data.
 *
 * A backend passes a pattern when what it reads from a live server, reassembled into
 * the response shape, equals what kp_oracle_run returns for the same parameters.
 *
 * Response conventions (docs/model.md "The response shape"):
 *  - numbers are cJSON_Raw nodes holding their exact text (print with cJSON_Print);
 *  - an absent attribute is null; a $one that reaches nothing is null; a single root
 *    that does not exist makes the whole response null;
 *  - timestamps declared "epoch_s" / "epoch_ms" are integers (seconds are floored);
 *  - order: $order keys in turn, each with nulls last unless "nulls": "first" (the
 *    position of nulls does not depend on asc/desc), then the element key in the
 *    direction of the last $order entry (ascending without $order; model.c appends it);
 *    without $order, elements come in key order, except a forward array-of-references
 *    hop, which keeps the array's order; multi-hop paths without $order are flattened
 *    in path order (each hop in the order above), duplicates kept;
 *  - token paging: the continuation token is the last element's order-key values, a
 *    JSON array encoded base64url without padding; a page resumes strictly after
 *    those values in the declared order. The token is null (NULL) on the last page.
 */
#ifndef KP_ORACLE_H
#define KP_ORACLE_H

#include <cjson/cJSON.h>

#include "core/data.h"
#include "core/error.h"
#include "core/model.h"
#include "core/params.h"

typedef struct kp_oracle_result {
    cJSON *response;            /* the response (cJSON null when a single root is absent) */
    char *next_token;           /* malloc'd continuation of the token-paged $each; NULL: last page */
    int is_paged;               /* the pattern pages by token */
    int is_token_in_response;   /* the token is also a member of the response ({"token": "next"}) */
} kp_oracle_result;

/* Evaluates a pattern. `params` are the given values (defaults are applied, an
 * optional parameter left out drops its conditions); `page_token` resumes a
 * token-paged pattern strictly after a previous page (NULL: the first page).
 * Returns 0 with *out filled (free with kp_oracle_result_free), or -1 with err
 * (KP_ERR_USAGE for bad parameters or a token this pattern cannot have produced). */
int kp_oracle_run(const kp_dataset *data, const kp_pattern *pattern, const kp_params *params,
                  const char *page_token, kp_oracle_result *out, kp_error *err);
void kp_oracle_result_free(kp_oracle_result *result);

/* What the pages of one parameter set share: the roots, and the paged $each's records
 * after $where in their order (kept for the record it was evaluated on). Both depend on
 * the pattern, the parameters and the data, never on the page, so a walk that passes the
 * same cache for every page computes them once and finds each page's start by a binary
 * search: walking n records in pages of p costs n log n, not n^2 / p. The cache checks
 * the pattern, the resolved parameters and kp_dataset_generation on every call and starts
 * over when one differs. One thread at a time. */
typedef struct kp_oracle_cache kp_oracle_cache;
kp_oracle_cache *kp_oracle_cache_new(void);     /* NULL when out of memory */
void kp_oracle_cache_free(kp_oracle_cache *cache);
/* kp_oracle_run with a cache (NULL: none, the same as kp_oracle_run). */
int kp_oracle_run_cached(const kp_dataset *data, const kp_pattern *pattern, const kp_params *params,
                         const char *page_token, kp_oracle_cache *cache, kp_oracle_result *out, kp_error *err);

/* The first page's response: a new cJSON tree the caller frees with cJSON_Delete(),
 * or NULL with err filled. */
cJSON *kp_oracle_eval(const kp_dataset *data, const kp_pattern *pattern, const kp_params *params, kp_error *err);

/* An attribute's canonical value as a response carries it: epoch encodings of
 * timestamps applied (also inside objects), absent as null. A new tree. */
cJSON *kp_oracle_encode_value(const kp_attr *attr, const cJSON *value);

/* The token codec: values (a JSON array) -> a malloc'd opaque string, and back (a new
 * array whose numbers are cJSON_Raw). decode fails with KP_ERR_USAGE on anything that
 * is not a token. */
char *kp_oracle_token_encode(const cJSON *values);
int kp_oracle_token_decode(const char *token, cJSON **values, kp_error *err);

#endif
