/*
 * client.h — keyplan's HTTP client for the DynamoDB JSON API, the same code for
 * dynalite on loopback and for AWS.
 *
 * One client is one endpoint, one region and one set of credentials, resolved once
 * when it opens (the --target URL or the conventional AWS environment, see
 * kp_ddb_settings_resolve). Requests are signed by libcurl (SigV4), sent over a
 * small pool of kept-alive connections, and retried with exponential backoff and
 * full jitter when the service throttles, fails or cannot be reached. Requests
 * that the service rejects (validation, conditions, missing tables) are never
 * retried: they come back with the service's error type and message.
 *
 * Two ways to send: kp_ddb_call waits for one answer; kp_ddb_submit queues a
 * request and kp_ddb_poll drives everything queued, calling each request's done
 * callback once, with the answer or the final failure. Both share the connections
 * and the in-flight limit.
 *
 * Invariant: no credential ever leaves this client except in the signed request
 * itself — not in an error message, not on stderr, not in kp_ddb_client_describe.
 * The client is single-threaded: call it from one thread.
 */
#ifndef KP_DDB_CLIENT_H
#define KP_DDB_CLIENT_H

#include <cjson/cJSON.h>

#include "core/error.h"

typedef struct kp_ddb_client kp_ddb_client;

enum {
    KP_DDB_DEFAULT_IN_FLIGHT = 4,   /* requests on the wire at once */
    KP_DDB_DEFAULT_RETRIES = 8,     /* retries after the first attempt */
    KP_DDB_NO_RETRIES = -1,         /* max_retries value that disables retrying */
    KP_DDB_MAX_BATCH_WRITE = 25     /* WriteRequests per BatchWriteItem */
};

typedef struct kp_ddb_config {
    const char *endpoint;       /* --target dynamodb=URL; NULL or "": the environment */
    const char *region;         /* NULL: AWS_REGION, AWS_DEFAULT_REGION, the profile's region, us-east-1 */
    const char *profile;        /* NULL: AWS_PROFILE, else "default" */
    int is_insecure;            /* --insecure: no TLS verification, plain http to any host (warned once) */
    int max_in_flight;          /* 0: KP_DDB_DEFAULT_IN_FLIGHT; at most 64 */
    int max_retries;            /* 0: KP_DDB_DEFAULT_RETRIES; KP_DDB_NO_RETRIES: none */
    long connect_timeout_ms;    /* 0: 5,000 */
    long request_timeout_ms;    /* whole request, body included; 0: 60,000 */
} kp_ddb_config;

/* ---- where the endpoint, region and credentials come from ------------------------- */

/* What a client will use. Every string is malloc'd and freed (secrets wiped first)
 * by kp_ddb_settings_clear. The *_source strings say where a value came from, for
 * messages; they never contain a secret. */
typedef struct kp_ddb_settings {
    char *endpoint;             /* "http://127.0.0.1:18000", "https://dynamodb.eu-west-1.amazonaws.com" */
    char *endpoint_source;      /* "--target", "AWS_ENDPOINT_URL_DYNAMODB", "AWS_ENDPOINT_URL",
                                   "the default for region R" */
    char *region;
    char *region_source;        /* "the caller" (cfg->region), "AWS_REGION", "AWS_DEFAULT_REGION",
                                   "profile 'x' in PATH", "the default" */
    char *access_key_id;
    char *secret_access_key;    /* secret */
    char *session_token;        /* secret; NULL without temporary credentials */
    char *credential_source;    /* "the environment (AWS_ACCESS_KEY_ID)", "profile 'dev' in /home/u/.aws/credentials",
                                   "placeholder credentials (loopback endpoint)" */
    int is_loopback;            /* the endpoint's host is localhost, 127.0.0.0/8 or ::1 */
    int is_https;
} kp_ddb_settings;

/* Resolves, in this order (DESIGN.md "The command line"):
 *  endpoint     cfg->endpoint, AWS_ENDPOINT_URL_DYNAMODB, AWS_ENDPOINT_URL (both skipped when
 *               AWS_IGNORE_CONFIGURED_ENDPOINT_URLS=true), https://dynamodb.<region>.amazonaws.com
 *               (.amazonaws.com.cn for cn- regions);
 *  region       cfg->region, AWS_REGION, AWS_DEFAULT_REGION, the profile's `region` in the config
 *               file (AWS_CONFIG_FILE or ~/.aws/config), us-east-1;
 *  credentials  with cfg->profile: that profile; otherwise AWS_ACCESS_KEY_ID +
 *               AWS_SECRET_ACCESS_KEY (+ AWS_SESSION_TOKEN), then the profile AWS_PROFILE
 *               (default "default") in the shared credentials file (AWS_SHARED_CREDENTIALS_FILE
 *               or ~/.aws/credentials), then in the config file; for a loopback endpoint
 *               only, placeholder credentials "keyplan"/"keyplan".
 * Fails with KP_ERR_USAGE for an endpoint that is not an http(s) URL, carries user
 * information, or is plain http to a non-loopback host without is_insecure; with
 * KP_ERR_TARGET when a non-loopback endpoint has no credentials (the message names
 * the variables and files to set). On failure *out holds nothing to free. */
int kp_ddb_settings_resolve(const kp_ddb_config *cfg, kp_ddb_settings *out, kp_error *err);
void kp_ddb_settings_clear(kp_ddb_settings *settings);

/* 1 when the URL's host is loopback (localhost, *.localhost, 127.0.0.0/8, ::1,
 * ::ffff:127.x.x.x), 0 when it is another host, -1 when it is not a URL. */
int kp_ddb_is_loopback_url(const char *url);

/* ---- the client --------------------------------------------------------------------- */

/* Resolves the settings and prepares the connection pool; sends nothing. With
 * is_insecure, prints a one-line warning on stderr (once per process). */
int kp_ddb_client_open(const kp_ddb_config *cfg, kp_ddb_client **out, kp_error *err);

/* Cancels what is still queued or in flight (each done callback runs with a
 * failure that says so), closes the connections, wipes the credentials. NULL is a
 * no-op. Not from inside a done callback. */
void kp_ddb_client_close(kp_ddb_client *client);

/* "endpoint http://127.0.0.1:18000 (--target), region us-east-1 (default), credentials:
 * placeholder credentials (loopback endpoint)" — for logs and --dry-run; never secret. */
const char *kp_ddb_client_describe(const kp_ddb_client *client);
const kp_ddb_settings *kp_ddb_client_settings(const kp_ddb_client *client);

/* What went wrong with a request, after its retries. */
typedef struct kp_ddb_failure {
    kp_error error;             /* a whole sentence; code KP_ERR_TARGET (KP_ERR_NOMEM, KP_ERR_INTERNAL) */
    const char *type;           /* the service's error type without its namespace:
                                   "ConditionalCheckFailedException", "ResourceNotFoundException", ...;
                                   "" when there was no service answer (connection, timeout, TLS) */
    long http_status;           /* 0 when there was no HTTP answer */
    int attempts;               /* requests sent for it, retries included */
    int is_retryable;           /* a retryable kind (throttling, 5xx, connection) whose retries ran out */
} kp_ddb_failure;

/* Sends `operation` ("GetItem", "Query", ...) with `request` (not taken) and waits
 * for the answer. On success *response is the parsed answer, which the caller frees
 * with cJSON_Delete. On failure *response is NULL, err is filled and
 * kp_ddb_last_error_type() says which service error it was. While it waits it also
 * drives earlier asynchronous submissions (their done callbacks may run); the call
 * itself goes ahead of them in the queue. Not from inside a done callback. */
int kp_ddb_call(kp_ddb_client *client, const char *operation, const cJSON *request, cJSON **response,
                kp_error *err);

/* The service error type of the last kp_ddb_call that failed ("" when it succeeded or
 * failed without a service answer), and its HTTP status (0 likewise). Test with
 * kp_ddb_error_is(client, "ConditionalCheckFailedException"). */
const char *kp_ddb_last_error_type(const kp_ddb_client *client);
long kp_ddb_last_http_status(const kp_ddb_client *client);
int kp_ddb_error_is(const kp_ddb_client *client, const char *type);

/* Called once per submitted request: on success with the parsed answer (borrowed:
 * valid during the call only; cJSON_Duplicate it to keep it) and failure == NULL; on
 * final failure with response == NULL. It may submit more work; it must not call
 * kp_ddb_poll, kp_ddb_call or kp_ddb_client_close. */
typedef void (*kp_ddb_done_fn)(void *ctx, const cJSON *response, const kp_ddb_failure *failure);

/* Queues `request` (taken: freed by the client, also on failure) for `operation`.
 * Nothing is sent until kp_ddb_poll (or kp_ddb_call) runs. Fails only for a bad
 * operation name or memory; `done` is then not called. */
int kp_ddb_submit(kp_ddb_client *client, const char *operation, cJSON *request, kp_ddb_done_fn done, void *ctx,
                  kp_error *err);

/* Starts queued requests (up to max_in_flight on the wire), waits up to timeout_ms
 * (0: do not wait; negative: until something completes) for answers and due retries,
 * runs the done callbacks of everything that completed, and returns as soon as at
 * least one request completed, the time is up, or nothing is pending. Returns the
 * number of requests still pending (queued, on the wire or waiting to retry), or -1
 * with err filled when the transfer engine itself failed or it was called from a
 * done callback. */
int kp_ddb_poll(kp_ddb_client *client, int timeout_ms, kp_error *err);

/* Requests submitted and not yet completed. */
int kp_ddb_pending(const kp_ddb_client *client);

/* Called once per kp_ddb_batch_write. `written` items are acknowledged. On success
 * unprocessed and failure are NULL. On failure `unprocessed` is the array of
 * WriteRequests not known to be written (borrowed; after a transport failure some
 * of them may have been written: puts are idempotent, resend them). */
typedef void (*kp_ddb_batch_done_fn)(void *ctx, int written, const cJSON *unprocessed,
                                     const kp_ddb_failure *failure);

/* Queues a BatchWriteItem of `write_requests` (a JSON array of at most 25
 * {"PutRequest": {"Item": ...}} / {"DeleteRequest": {"Key": ...}} objects; taken) on
 * `table`, and resubmits the UnprocessedItems the service hands back, with backoff,
 * until none remain — giving up after max_retries rounds in a row that made no
 * progress. Fails at once (done not called, the array freed) for an empty or
 * oversized array. */
int kp_ddb_batch_write(kp_ddb_client *client, const char *table, cJSON *write_requests,
                       kp_ddb_batch_done_fn done, void *ctx, kp_error *err);

/* Counters for verify's metrics and seed's report. */
typedef struct kp_ddb_stats {
    long requests_sent;         /* every HTTP request, each retry counted */
    long retries;               /* requests that were retries of a failed attempt */
    long throttled;             /* answers that were throttling errors */
    long unprocessed_rounds;    /* BatchWriteItem resubmissions of UnprocessedItems */
    long bytes_sent;            /* request bodies */
    long bytes_received;        /* response bodies */
    long connections_opened;    /* new connections (reuse keeps this at max_in_flight under a steady load) */
} kp_ddb_stats;

long kp_ddb_requests_sent(const kp_ddb_client *client);
void kp_ddb_get_stats(const kp_ddb_client *client, kp_ddb_stats *out);

#endif
