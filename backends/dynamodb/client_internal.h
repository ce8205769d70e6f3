/*
 * client_internal.h — the DynamoDB client's pieces that its own files share and its
 * unit tests reach into: backoff, error classification, redaction, the queue, and
 * the BatchWriteItem completion handler. Nothing outside backends/dynamodb/ and
 * tests/ includes this header.
 *
 * Invariant: every function here is deterministic given its inputs (the backoff
 * takes its random state), so the tests can pin the behaviour down.
 */
#ifndef KP_DDB_CLIENT_INTERNAL_H
#define KP_DDB_CLIENT_INTERNAL_H

#include <curl/curl.h>
#include <stddef.h>
#include <stdint.h>

#include "backends/dynamodb/client.h"
#include "core/dynlib.h"

/* libcurl is loaded when a command first talks to DynamoDB (core/dynlib.h): the commands
 * that need no server do not pay for it and the libraries it pulls in. Every function of
 * it keyplan calls: */
#define KP_CURL_FUNCTIONS(X) \
    X(curl_easy_cleanup) \
    X(curl_easy_getinfo) \
    X(curl_easy_header) \
    X(curl_easy_init) \
    X(curl_easy_setopt) \
    X(curl_easy_strerror) \
    X(curl_free) \
    X(curl_global_cleanup) \
    X(curl_global_init) \
    X(curl_multi_add_handle) \
    X(curl_multi_cleanup) \
    X(curl_multi_info_read) \
    X(curl_multi_init) \
    X(curl_multi_perform) \
    X(curl_multi_poll) \
    X(curl_multi_remove_handle) \
    X(curl_multi_setopt) \
    X(curl_multi_strerror) \
    X(curl_slist_append) \
    X(curl_slist_free_all) \
    X(curl_url) \
    X(curl_url_cleanup) \
    X(curl_url_get) \
    X(curl_url_set)

typedef struct kp_curl_api {
    KP_CURL_FUNCTIONS(KP_DYNLIB_FIELD)
} kp_curl_api;
extern kp_curl_api kp_curl;
/* Loads libcurl once; every entry point that calls it first calls this. */
int kp_curl_load(kp_error *err);
#define CU(f) (kp_curl.f)

enum {
    KP_DDB_BACKOFF_BASE_MS = 50,
    KP_DDB_BACKOFF_CAP_MS = 5000
};

/* Full jitter: a uniform draw in [0, min(cap, base * 2^attempt)] milliseconds, where
 * attempt 0 is the wait before the first retry. *rng is xorshift state (never 0). */
long kp_ddb_backoff_ms(int attempt, uint64_t *rng);

/* 1 when an answer with this service error type (may be "") and HTTP status is worth
 * retrying: throttling, internal errors, 5xx, 429. */
int kp_ddb_is_retryable(const char *type, long http_status);

/* 1 when the type is a throttling error (counted in kp_ddb_stats.throttled). */
int kp_ddb_is_throttling(const char *type);

/* Reads an error body: `{"__type": "com.amazonaws.dynamodb.v20120810#X", "message": "..."}`
 * (also "Message", and bodies that are not JSON). type gets the part after the last
 * '#' ("" when absent), message the service's text ("" when absent). Both are always
 * NUL-terminated and truncated to their sizes. */
void kp_ddb_parse_error_body(const char *body, size_t len, char *type, size_t type_size, char *message,
                             size_t message_size);

/* Removes credentials from text in place: every occurrence of each non-NULL secret
 * (at least 4 characters) becomes "[redacted]", as does a trailing prefix (8+
 * characters) of one that was cut off; AWS's "The Canonical String for this request
 * should have been ..." explanation (which echoes signed headers such as the
 * session token) is dropped, and so is anything after "Signature=". */
void kp_ddb_redact(char *text, size_t size, const char *const *secrets, size_t secret_count);

/* Parses and validates an endpoint URL: 0 with *is_loopback / *is_https set, or -1
 * with err (KP_ERR_USAGE). `source` names where it came from, for the message. */
int kp_ddb_check_endpoint(const char *url, const char *source, int *is_loopback, int *is_https, kp_error *err);

/* ---- the queue (client.c), for the batch helper and the tests --------------------------- */

typedef struct kp_ddb_request kp_ddb_request;

/* How a request reports back inside the client. *response is owned by the client
 * and freed after the call unless the hook sets it to NULL (takes it). */
typedef void (*kp_ddb_complete_fn)(kp_ddb_client *client, void *hook_ctx, cJSON **response,
                                   const kp_ddb_failure *failure);

/* Queues a serialized body (taken) for `operation`, due after delay_ms (0: now);
 * `at_front` puts it ahead of the queued requests. */
int kp_ddb_enqueue(kp_ddb_client *client, const char *operation, char *body, size_t body_len,
                   long delay_ms, int at_front, kp_ddb_complete_fn complete, void *hook_ctx, kp_error *err);

/* Queued requests (not on the wire), in the order they will start; for tests. */
int kp_ddb_queued_count(const kp_ddb_client *client);
/* The i-th queued request's operation, body and milliseconds until it is due
 * (<= 0: due now); returns -1 when there is no such request. */
int kp_ddb_queued_peek(const kp_ddb_client *client, int index, const char **operation, const char **body,
                       long *due_in_ms);
/* Takes the i-th queued request off the queue and completes it as if the service had
 * answered `response` (taken; NULL with a failure): the request's own hook or done
 * callback runs. For tests of what happens after an answer (UnprocessedItems).
 * Returns -1 when there is no such request. */
int kp_ddb_queued_complete(kp_ddb_client *client, int index, cJSON *response, const kp_ddb_failure *failure);
/* Overrides the backoff random state (tests). */
void kp_ddb_seed_backoff(kp_ddb_client *client, uint64_t seed);
int kp_ddb_max_retries(const kp_ddb_client *client);
void kp_ddb_count_unprocessed_round(kp_ddb_client *client);
long kp_ddb_next_backoff(kp_ddb_client *client, int attempt);

/* ---- BatchWriteItem (batch.c) ------------------------------------------------------------ */

typedef struct kp_ddb_batch kp_ddb_batch;

/* A batch's state; write_requests is taken. NULL on memory failure (array freed). */
kp_ddb_batch *kp_ddb_batch_new(const char *table, cJSON *write_requests, kp_ddb_batch_done_fn done, void *ctx);
/* Serializes and queues the batch's current WriteRequests after delay_ms. On failure
 * the batch is left to the caller. */
int kp_ddb_batch_send(kp_ddb_client *client, kp_ddb_batch *batch, long delay_ms, kp_error *err);
/* The completion handler of a batch's BatchWriteItem: with the service's answer (or
 * the failure) it either finishes the batch (runs done, frees the batch; returns 1)
 * or queues the UnprocessedItems again after a backoff (returns 0). */
int kp_ddb_batch_handle(kp_ddb_client *client, kp_ddb_batch *batch, const cJSON *response,
                        const kp_ddb_failure *failure);

#endif
