/*
 * cql_client.h — keyplan's CQL native protocol v4 client: TCP (or TLS) connections to
 * one Cassandra node, the handshake, synchronous and asynchronous statements.
 *
 * One client is one node (host:port), one identity and one keyspace, resolved once
 * when it opens (the --target string or the conventional CASSANDRA_* environment,
 * see kp_cql_settings_resolve). It opens 1-8 connections and keeps them; each speaks
 * v4 (STARTUP {"CQL_VERSION":"3.0.0"}, then SASL PLAIN for PasswordAuthenticator).
 * Requests are multiplexed over the connections by stream id, up to max_in_flight at
 * once — fewer while requests fail on the wire or by overload (the window, halved on such
 * a failure and widened by one per window's worth of answers); more wait in a queue.
 *
 * Two ways to send: kp_cql_query / kp_cql_execute / kp_cql_batch_execute wait for
 * their answer; the *_async variants queue a request whose done callback kp_cql_poll
 * runs once, with the answer or the final failure (the acknowledgement seeding
 * counts). Both share the connections and the in-flight limit; a synchronous call
 * goes ahead of queued asynchronous ones and drives them while it waits.
 *
 * Retries (bounded, exponential backoff with full jitter): Overloaded, Is
 * bootstrapping, Unavailable, Read timeout, and Write timeout unless its write type is
 * COUNTER or CAS or the statement says it must not run twice (no_retry_after_send;
 * every schema change but CREATE ... IF NOT EXISTS and DROP ... IF EXISTS); a lost
 * connection is reopened and its in-flight requests retried on the same terms, with
 * twice the retries (a request lost with its connection or timed out is most often the
 * bystander of another's failure).
 * A statement the server no longer knows (Unprepared) is prepared again and resent.
 * Everything else comes back at once with Cassandra's message and error code.
 *
 * Invariant: no credential leaves this client except in the AUTH_RESPONSE itself —
 * not in an error message (server messages pass a redaction of the password and of
 * PASSWORD '...' literals), not in kp_cql_client_describe. Single-threaded.
 */
#ifndef KP_CQL_CLIENT_H
#define KP_CQL_CLIENT_H

#include <cjson/cJSON.h>

#include "backends/cassandra/cql_codec.h"
#include "core/error.h"

typedef struct kp_cql_client kp_cql_client;
typedef struct kp_cql_prepared kp_cql_prepared;

enum {
    KP_CQL_DEFAULT_PORT = 9042,
    KP_CQL_DEFAULT_IN_FLIGHT = 32,      /* requests on the wire at once, over all connections */
    KP_CQL_MAX_IN_FLIGHT = 4096,
    KP_CQL_MAX_CONNECTIONS = 8,
    KP_CQL_DEFAULT_RETRIES = 6,         /* retries after the first attempt */
    KP_CQL_NO_RETRIES = -1              /* max_retries value that disables retrying */
};

typedef struct kp_cql_config {
    const char *target;         /* "host", "host:port", "[::1]:9042", "tls://host:port";
                                   NULL or "": CASSANDRA_HOST / CASSANDRA_PORT, else 127.0.0.1:9042 */
    const char *username;       /* NULL: CASSANDRA_USERNAME (none: no authentication offered) */
    const char *password;       /* NULL: CASSANDRA_PASSWORD */
    int use_tls;                /* TLS; also "tls://" in the target or CASSANDRA_SSL=true|1|yes */
    const char *ca_file;        /* PEM CA bundle; NULL: CASSANDRA_SSL_CA, else the system's store */
    int is_insecure;            /* --insecure: no certificate verification, plain TCP to any host (warned once) */
    const char *keyspace;       /* USE'd on every connection; NULL: none */
    int connections;            /* 0: 1; at most KP_CQL_MAX_CONNECTIONS */
    int max_in_flight;          /* 0: KP_CQL_DEFAULT_IN_FLIGHT; at most KP_CQL_MAX_IN_FLIGHT */
    int max_retries;            /* 0: KP_CQL_DEFAULT_RETRIES; KP_CQL_NO_RETRIES: none */
    long connect_timeout_ms;    /* connect + handshake; 0: 5,000 */
    long request_timeout_ms;    /* one attempt; 0: 12,000 (above Cassandra's own 2-10 s timeouts);
                                   CREATE/ALTER/DROP/TRUNCATE get at least 60,000 and are never
                                   resent when their outcome is unknown */
    uint16_t consistency;       /* used when a request's params say 0; 0 here: LOCAL_QUORUM */
    uint32_t max_frame;         /* largest response body accepted; 0: 256 MB */
} kp_cql_config;

/* ---- where the node and the credentials come from ----------------------------------- */

typedef struct kp_cql_settings {
    char *host;                 /* "127.0.0.1", "cassandra.example.com", "::1" */
    int port;
    char *source;               /* "--target", "CASSANDRA_HOST", "the default" (never secret) */
    char *username;             /* NULL: none */
    char *password;             /* secret; NULL: none */
    int use_tls;
    int is_loopback;            /* host is localhost, 127.0.0.0/8 or ::1 (by name or by address) */
} kp_cql_settings;

/* Resolves: target = cfg->target, else CASSANDRA_HOST (its first entry when it is a
 * comma list; "host:port" allowed) with CASSANDRA_PORT, else 127.0.0.1 and 9042.
 * username/password = cfg, else CASSANDRA_USERNAME / CASSANDRA_PASSWORD. Fails with
 * KP_ERR_USAGE for a target that is not host[:port] (user information in it is
 * refused without echoing it), a bad port, a password without a user name, or plain
 * TCP to a non-loopback host without TLS or is_insecure. */
int kp_cql_settings_resolve(const kp_cql_config *cfg, kp_cql_settings *out, kp_error *err);
void kp_cql_settings_clear(kp_cql_settings *settings);   /* wipes the password */

/* ---- the client ------------------------------------------------------------------------ */

/* Resolves the settings, opens the connections and completes the handshake on each
 * (STARTUP, authentication, USE keyspace). With is_insecure, prints a one-line
 * warning on stderr (once per process). KP_ERR_TARGET when the node cannot be reached,
 * refuses the credentials or the protocol; the message says what to check. */
int kp_cql_client_open(const kp_cql_config *cfg, kp_cql_client **out, kp_error *err);

/* Fails whatever is queued or in flight (each done callback runs with a failure that
 * says so), closes the connections, frees the prepared statements, wipes the
 * password. NULL is a no-op. Not from inside a done callback. */
void kp_cql_client_close(kp_cql_client *client);

/* "127.0.0.1:19042 (CASSANDRA_HOST), TLS, user cassandra, 2 connections" — never secret. */
const char *kp_cql_client_describe(const kp_cql_client *client);
const kp_cql_settings *kp_cql_client_settings(const kp_cql_client *client);

/* USE keyspace on every connection (and on those opened later). */
int kp_cql_use_keyspace(kp_cql_client *client, const char *keyspace, kp_error *err);

/* What went wrong with a request, after its retries. */
typedef struct kp_cql_failure {
    kp_error error;             /* a whole sentence with Cassandra's message; code KP_ERR_TARGET */
    int32_t cql_code;           /* Cassandra's error code (KP_CQL_ERR_*); -1 without a server answer
                                   (connection, timeout, TLS, a malformed frame) */
    int attempts;               /* requests sent for it, retries included */
    int is_retryable;           /* a retryable kind whose retries ran out */
} kp_cql_failure;

/* What the client has done since it opened (verify counts requests with it). */
typedef struct kp_cql_stats {
    unsigned long requests;     /* frames sent, every attempt and re-prepare counted */
    unsigned long retries;      /* attempts after a retryable failure */
    unsigned long reprepares;   /* statements prepared again after an Unprepared answer */
    unsigned long timeouts;     /* attempts the client gave up waiting for */
    unsigned long reconnects;   /* connections opened after the first ones */
    unsigned long window_cuts;  /* times failures halved the requests let on the wire */
    int window;                 /* requests let on the wire now (at most max_in_flight) */
} kp_cql_stats;

kp_cql_stats kp_cql_client_stats(const kp_cql_client *client);

/* Cassandra's error code of the last synchronous call that failed (-1 when it
 * succeeded or failed without a server answer). */
int32_t kp_cql_last_error_code(const kp_cql_client *client);

/* ---- prepared statements ------------------------------------------------------------------ */

/* Prepares `cql` (or finds it prepared before: one per text). The statement belongs
 * to the client and lives until it closes. */
int kp_cql_prepare(kp_cql_client *client, const char *cql, const kp_cql_prepared **out, kp_error *err);
const kp_cql_metadata *kp_cql_prepared_variables(const kp_cql_prepared *prepared);   /* bind markers */
const kp_cql_metadata *kp_cql_prepared_columns(const kp_cql_prepared *prepared);     /* result columns */
const char *kp_cql_prepared_text(const kp_cql_prepared *prepared);

/* ---- synchronous statements ------------------------------------------------------------------ */

/* params NULL: the client's consistency, no paging; params->consistency 0 means the
 * client's consistency (ANY cannot be asked for here). params->values is ignored:
 * `values` is what is bound. On success *out (may be NULL) holds the response, which
 * the caller frees with kp_cql_response_free; rows with more pages carry
 * out->metadata.paging_state (pass it back in params to continue). */
int kp_cql_query(kp_cql_client *client, const char *cql, const kp_cql_values *values, const kp_cql_params *params,
                 kp_cql_response *out, kp_error *err);
int kp_cql_execute(kp_cql_client *client, const kp_cql_prepared *prepared, const kp_cql_values *values,
                   const kp_cql_params *params, kp_cql_response *out, kp_error *err);

typedef struct kp_cql_batch_entry {
    const kp_cql_prepared *prepared;    /* a prepared statement, or ... */
    const char *cql;                    /* ... a statement text */
    const kp_cql_values *values;        /* positional; NULL: none */
} kp_cql_batch_entry;

/* One BATCH (LOGGED, UNLOGGED or COUNTER) of at most 65,535 statements; params gives
 * consistency, serial consistency and timestamp (values, paging ignored). */
int kp_cql_batch_execute(kp_cql_client *client, kp_cql_batch_type type, const kp_cql_batch_entry *entries,
                         size_t count, const kp_cql_params *params, kp_cql_response *out, kp_error *err);

/* Runs a SELECT page by page (page_size rows a page; 0: 5,000) and appends every row
 * to *rows (an array, created when NULL; the caller frees it). `prepared` or `cql`.
 * *pages (may be NULL) receives the number of requests it took. */
int kp_cql_fetch_all(kp_cql_client *client, const kp_cql_prepared *prepared, const char *cql,
                     const kp_cql_values *values, int32_t page_size, cJSON **rows, int *pages, kp_error *err);

/* ---- asynchronous statements ---------------------------------------------------------------- */

/* Called once per asynchronous request: with the response (borrowed: valid during the
 * call) and failure NULL, or with response NULL and the final failure. It may submit
 * more asynchronous work; it must not call a synchronous function, kp_cql_poll or
 * kp_cql_client_close. */
typedef void (*kp_cql_done_fn)(void *ctx, const kp_cql_response *response, const kp_cql_failure *failure);

/* Queue a request; the values are serialized at once (the caller may reuse them).
 * Nothing is sent until kp_cql_poll (or a synchronous call) runs. Fails only on bad
 * arguments or memory; `done` is then not called. */
int kp_cql_execute_async(kp_cql_client *client, const kp_cql_prepared *prepared, const kp_cql_values *values,
                         const kp_cql_params *params, kp_cql_done_fn done, void *ctx, kp_error *err);
int kp_cql_query_async(kp_cql_client *client, const char *cql, const kp_cql_values *values,
                       const kp_cql_params *params, kp_cql_done_fn done, void *ctx, kp_error *err);
int kp_cql_batch_async(kp_cql_client *client, kp_cql_batch_type type, const kp_cql_batch_entry *entries,
                       size_t count, const kp_cql_params *params, kp_cql_done_fn done, void *ctx, kp_error *err);

/* Sends queued requests (up to max_in_flight on the wire), waits up to timeout_ms (0:
 * do not wait; negative: until something completes) for answers and due retries, runs
 * the done callbacks of everything that completed, and returns as soon as at least one
 * request completed, the time is up, or nothing is pending. Returns the number of
 * requests still pending (queued, in flight or waiting to retry), or -1 with err
 * filled when the client itself failed (memory). */
int kp_cql_poll(kp_cql_client *client, int timeout_ms, kp_error *err);
/* Requests queued, in flight or waiting to retry. */
int kp_cql_pending(const kp_cql_client *client);

/* ---- for tests --------------------------------------------------------------------------------- */

/* Backoff before retry `attempt` (0-based): full jitter under min(2 s, 50 ms * 2^attempt). */
long kp_cql_backoff_ms(int attempt, uint64_t *rng);
/* Replaces PASSWORD '...' literals (any case, optional '=') and every occurrence of
 * `secret` (when at least 3 bytes) in text with ***, in place. */
void kp_cql_redact(char *text, const char *secret);

#endif
