/*
 * cql_client.c — connections to one Cassandra node over the CQL native protocol v4:
 * resolution of the target, TCP/TLS, the handshake, stream multiplexing, retries.
 *
 * Every request, synchronous or not, is a `request` holding its whole encoded frame.
 * It waits in one FIFO (synchronous calls and re-prepares go to its front); when it
 * is sent, the frame's stream id is patched to a free stream of the least loaded
 * connection and the request is remembered in that connection's stream table until
 * the answer with the same stream id arrives. A request that failed in a retryable
 * way waits in a retry list sorted by due time — nothing ever sleeps: the loop simply
 * does not wake later than the next due retry or request deadline. A request whose
 * attempt timed out on the client leaves its stream "orphaned" (reserved until the
 * late answer arrives and is dropped), so an answer can never reach the wrong request.
 * Connections are non-blocking and driven by poll(2); the handshake alone runs
 * blocking-with-deadline on a fresh connection, before any other traffic.
 *
 * Invariant: every request submitted completes exactly once — answered, failed after
 * its retries, or failed by kp_cql_client_close — and every message built here from
 * server text passes kp_cql_redact before it reaches a kp_error.
 */
#include "backends/cassandra/cql_client.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

enum {
    DEFAULT_CONNECT_TIMEOUT_MS = 5000,
    DEFAULT_REQUEST_TIMEOUT_MS = 12000,
    MAX_REPREPARES = 2,
    SCHEMA_TIMEOUT_MS = 60000,
    READ_CHUNK = 64 * 1024,
    PREPARED_BUCKETS = 256
};

typedef struct request request;
typedef struct conn conn;
typedef void (*hook_fn)(kp_cql_client *c, request *rq, kp_cql_response *response, const kp_cql_failure *failure);

struct request {
    request *next;
    kp_cql_buf frame;                   /* the whole frame; its stream id is patched at each send */
    uint8_t opcode;
    const kp_cql_prepared *prepared;    /* EXECUTE: for no-metadata rows and re-prepares */
    const kp_cql_prepared **batch_prepared;   /* BATCH: its prepared statements (malloc'd) */
    size_t batch_prepared_count;
    int no_retry_after_send;
    int attempts;                       /* sent so far */
    int reprepares;                     /* resends after a re-PREPARE (not retries) */
    int is_resend;                      /* the next send follows a re-PREPARE */
    int64_t due_ms;                     /* retry list: when it may go again */
    int64_t sent_ms;
    long timeout_ms;                    /* one attempt (schema changes wait longer) */
    int conn_index, stream;             /* on the wire; -1 otherwise */
    int pinned_conn;                    /* -1: any connection */
    char snippet[96];                   /* the statement's start, for messages */
    char *secrets;                      /* PASSWORD literals of the statement (statement_secrets) */
    /* completion */
    kp_cql_done_fn done;
    void *ctx;
    hook_fn hook;                       /* internal completion (re-prepare) */
    request *waiting;                   /* hook: the request to resend after this PREPARE */
    kp_cql_prepared *reprepare_target;
    int is_sync, is_done;
    kp_cql_response response;           /* sync: the answer, handed to the caller */
    int has_response;
    kp_cql_failure failure;             /* sync: the final failure */
    int has_failure;
};

struct conn {
    int fd;
    SSL *ssl;
    int is_open;
    int wants_write_for_read;           /* TLS: a read needs the socket writable */
    uint8_t *in;
    size_t in_len, in_cap;
    uint8_t *out;
    size_t out_len, out_pos, out_cap;
    request **streams;                  /* stream id -> request, ORPHAN, or NULL */
    int stream_cap;
    int next_stream;
    int in_flight;                      /* live requests on its streams */
    int used_streams;                   /* live requests and orphans */
    int64_t reopen_due_ms;              /* after a failed open: not before */
    int open_failures;
};

struct kp_cql_prepared {
    kp_cql_prepared *next;
    char *cql;
    uint8_t *id;
    uint16_t id_len;
    kp_cql_metadata variables, columns;
    kp_arena arena;
};

struct kp_cql_client {
    kp_cql_settings settings;
    char description[1024];
    char *keyspace;
    conn conns[KP_CQL_MAX_CONNECTIONS];
    int conn_count;
    int per_conn_limit, max_in_flight, max_retries;
    /* Requests on the wire at most now: max_in_flight, halved when the server or the
     * network fails requests (a broken connection, a timeout, an overloaded node; once
     * per round of requests sent since the last cut), then grown by one for every
     * window's worth of answers — so a failing path is not flooded and every failure
     * costs the few requests on the wire their attempt, not max_in_flight of them. */
    int window, window_answers;
    int64_t window_cut_ms;
    long connect_timeout_ms, request_timeout_ms;
    uint16_t consistency;
    uint32_t max_frame;
    SSL_CTX *ssl_ctx;
    int verify_peer;
    request *queue_head, *queue_tail;
    int queued;
    request *retry_head;
    int retrying;
    int parked;                         /* waiting for a re-prepare */
    int in_flight;
    unsigned long completed;            /* completions so far (poll returns when it grows) */
    int in_callback;
    kp_cql_prepared *prepared[PREPARED_BUCKETS];
    uint64_t rng;
    int32_t last_error_code;
    kp_cql_stats stats;
    int is_opened;                      /* the first connections are up: later opens are reconnects */
};

static request orphan_marker;
#define ORPHAN (&orphan_marker)

/* ---- time, randomness, backoff -------------------------------------------------------- */

static int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static uint64_t next_random(uint64_t *state)
{
    uint64_t x = *state ? *state : 0x9E3779B97F4A7C15ull;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    *state = x;
    return x;
}

long kp_cql_backoff_ms(int attempt, uint64_t *rng)
{
    long ceiling = 2000;
    if (attempt < 6) ceiling = 50L << (attempt < 0 ? 0 : attempt);
    if (ceiling > 2000) ceiling = 2000;
    return (long)(next_random(rng) % (uint64_t)(ceiling + 1));
}

/* ---- redaction ------------------------------------------------------------------------------ */

/* Replaces text[at..at+len) with `with`, which is never longer than len. */
static void replace_span(char *text, size_t at, size_t len, const char *with)
{
    size_t total = strlen(text), wl = strlen(with);
    if (wl > len) wl = len;
    memcpy(text + at, with, wl);
    memmove(text + at + wl, text + at + len, total - at - len + 1);
}

/* At p (just after the word PASSWORD): optional spaces, '=' or ':', then a quoted
 * literal ('...' with '' inside, "...", or $$...$$). Returns the literal's start (its
 * opening quote) and sets *end past its closing quote (or the end of the text), or
 * NULL when no literal follows. */
static const char *password_literal(const char *p, const char **end)
{
    while (*p == ' ' || *p == '\t' || *p == '=' || *p == ':') p++;
    const char *q = p;
    if (*q == '$') {
        if (q[1] != '$') return NULL;
        const char *e = strstr(q + 2, "$$");
        *end = e ? e + 2 : q + strlen(q);
        return q;
    }
    if (*q != '\'' && *q != '"') return NULL;
    char quote = *q;
    const char *e = q + 1;
    for (;;) {
        e = strchr(e, quote);
        if (!e) {
            *end = q + strlen(q);
            return q;
        }
        if (e[1] == quote) {   /* a doubled quote inside the literal */
            e += 2;
            continue;
        }
        *end = e + 1;
        return q;
    }
}

void kp_cql_redact(char *text, const char *secret)
{
    if (!text) return;
    /* PASSWORD '...' / PASSWORD = '...' / HASHED PASSWORD '...' */
    for (char *p = text; *p; p++) {
        if (strncasecmp(p, "password", 8) != 0) continue;
        const char *end;
        const char *q = password_literal(p + 8, &end);
        if (!q) continue;
        size_t span = (size_t)(end - q);
        replace_span(text, (size_t)(q - text), span, span >= 5 ? "'***'" : "***");
        p = text + (q - text);
        if (!*p) break;
    }
    if (secret && strlen(secret) >= 3) {
        size_t sl = strlen(secret);
        char *hit;
        while ((hit = strstr(text, secret))) replace_span(text, (size_t)(hit - text), sl, "***");
    }
}

/* The contents of every PASSWORD literal of a statement, each NUL-terminated, the list
 * ended by an empty string (malloc'd); NULL when there is none. Server messages may
 * echo a literal without the word PASSWORD in view, so these are redacted verbatim. */
static char *statement_secrets(const char *cql)
{
    char *list = NULL;
    size_t len = 0;
    for (const char *p = cql; p && *p; p++) {
        if (strncasecmp(p, "password", 8) != 0) continue;
        const char *end;
        const char *q = password_literal(p + 8, &end);
        if (!q) continue;
        const char *from = q + (*q == '$' ? 2 : 1);
        const char *to = end;
        if (*q == '$' && to - from >= 2 && !strncmp(to - 2, "$$", 2)) to -= 2;
        else if (*q != '$' && to > from && to[-1] == *q) to--;
        size_t n = to > from ? (size_t)(to - from) : 0;
        char *grown = realloc(list, len + n + 2);
        if (!grown) break;
        list = grown;
        memcpy(list + len, from, n);
        list[len + n] = '\0';
        len += n + 1;
        list[len] = '\0';
        p = end - 1;
    }
    return list;
}

/* Redacts each literal of statement_secrets(): quoted occurrences always, bare ones
 * when at least 3 bytes long. */
static void redact_statement_secrets(char *text, const char *secrets)
{
    for (const char *s = secrets; s && *s; s += strlen(s) + 1) {
        size_t n = strlen(s);
        char quoted[600];
        if (n + 3 <= sizeof quoted) {
            snprintf(quoted, sizeof quoted, "'%s'", s);
            char *hit;
            while ((hit = strstr(text, quoted))) replace_span(text, (size_t)(hit - text), n + 2, n + 2 >= 5 ? "'***'" : "***");
        }
        if (n >= 3) {
            char *hit;
            while ((hit = strstr(text, s))) replace_span(text, (size_t)(hit - text), n, "***");
        }
    }
}

/* ---- settings --------------------------------------------------------------------------------- */

static char *dup_or_null(const char *s) { return s ? strdup(s) : NULL; }

static int env_true(const char *name)
{
    const char *v = getenv(name);
    return v && (!strcasecmp(v, "1") || !strcasecmp(v, "true") || !strcasecmp(v, "yes") || !strcasecmp(v, "on"));
}

static int is_loopback_name(const char *host)
{
    if (!strcasecmp(host, "localhost") || !strcasecmp(host, "ip6-localhost")) return 1;
    size_t n = strlen(host);
    if (n > 10 && !strcasecmp(host + n - 10, ".localhost")) return 1;
    struct in_addr a4;
    struct in6_addr a6;
    if (inet_pton(AF_INET, host, &a4) == 1) return (ntohl(a4.s_addr) >> 24) == 127;
    if (inet_pton(AF_INET6, host, &a6) == 1) {
        if (IN6_IS_ADDR_LOOPBACK(&a6)) return 1;
        if (IN6_IS_ADDR_V4MAPPED(&a6)) return a6.s6_addr[12] == 127;
    }
    return 0;
}

/* "host", "host:port", "[v6]:port", "v6" -> host and port (0 when absent). */
static int split_host_port(const char *text, char *host, size_t host_size, int *port)
{
    *port = 0;
    const char *colon = NULL;
    size_t hl;
    if (text[0] == '[') {
        const char *close = strchr(text, ']');
        if (!close) return -1;
        hl = (size_t)(close - text - 1);
        if (hl == 0 || hl >= host_size) return -1;
        memcpy(host, text + 1, hl);
        host[hl] = '\0';
        if (close[1] == ':') colon = close + 1;
        else if (close[1]) return -1;
    } else {
        const char *first = strchr(text, ':');
        if (first && strchr(first + 1, ':')) {   /* a bare IPv6 address */
            hl = strlen(text);
        } else {
            colon = first;
            hl = colon ? (size_t)(colon - text) : strlen(text);
        }
        if (hl == 0 || hl >= host_size) return -1;
        memcpy(host, text, hl);
        host[hl] = '\0';
    }
    for (const char *p = host; *p; p++)
        if (isspace((unsigned char)*p) || *p == '/' || *p == '@') return -1;
    if (colon) {
        char *end;
        long v = strtol(colon + 1, &end, 10);
        if (!colon[1] || *end || v < 1 || v > 65535) return -1;
        *port = (int)v;
    }
    return 0;
}

void kp_cql_settings_clear(kp_cql_settings *s)
{
    if (!s) return;
    if (s->password) {
        volatile char *w = s->password;
        for (size_t i = 0; w[i]; i++) w[i] = 0;
    }
    free(s->host);
    free(s->source);
    free(s->username);
    free(s->password);
    memset(s, 0, sizeof *s);
}

int kp_cql_settings_resolve(const kp_cql_config *cfg, kp_cql_settings *out, kp_error *err)
{
    memset(out, 0, sizeof *out);
    const char *target = cfg && cfg->target && cfg->target[0] ? cfg->target : NULL;
    const char *source = "--target";
    char first[512];
    int use_tls = (cfg && cfg->use_tls) || env_true("CASSANDRA_SSL");
    if (!target) {
        const char *env = getenv("CASSANDRA_HOST");
        if (env && env[0]) {
            size_t n = strcspn(env, ", ");
            if (n >= sizeof first) n = sizeof first - 1;
            memcpy(first, env, n);
            first[n] = '\0';
            target = first;
            source = "CASSANDRA_HOST";
        } else {
            target = "127.0.0.1";
            source = "the default";
        }
    }
    if (!strncasecmp(target, "tls://", 6)) {
        use_tls = 1;
        target += 6;
    } else if (!strncasecmp(target, "tcp://", 6) || !strncasecmp(target, "cql://", 6)) {
        target += 6;
    }
    if (strchr(target, '@'))
        return kp_error_set(err, KP_ERR_USAGE, NULL, 0, 0,
                            "the Cassandra target from %s carries user information; give only host[:port] and set "
                            "CASSANDRA_USERNAME and CASSANDRA_PASSWORD instead",
                            source);
    char host[256];
    int port;
    if (split_host_port(target, host, sizeof host, &port))
        return kp_error_set(err, KP_ERR_USAGE, NULL, 0, 0,
                            "the Cassandra target \"%.200s\" from %s is not host[:port] (e.g. 127.0.0.1:9042, "
                            "[::1]:9042 or tls://db.example.com:9142)",
                            target, source);
    if (!port) {
        const char *env_port = getenv("CASSANDRA_PORT");
        if (env_port && env_port[0]) {
            char *end;
            long v = strtol(env_port, &end, 10);
            if (*end || v < 1 || v > 65535)
                return kp_error_set(err, KP_ERR_USAGE, NULL, 0, 0,
                                    "CASSANDRA_PORT=\"%.40s\" is not a port number (1-65535)", env_port);
            port = (int)v;
        } else {
            port = KP_CQL_DEFAULT_PORT;
        }
    }
    const char *user = cfg && cfg->username ? cfg->username : getenv("CASSANDRA_USERNAME");
    const char *password = cfg && cfg->password ? cfg->password : getenv("CASSANDRA_PASSWORD");
    if (user && !user[0]) user = NULL;
    if (password && !password[0] && !user) password = NULL;
    if (password && !user)
        return kp_error_set(err, KP_ERR_USAGE, NULL, 0, 0,
                            "a Cassandra password is set but no user name: set CASSANDRA_USERNAME too");
    int is_loopback = is_loopback_name(host);
    if (!is_loopback && !use_tls && !(cfg && cfg->is_insecure))
        return kp_error_set(err, KP_ERR_USAGE, NULL, 0, 0,
                            "refusing plain TCP to the non-loopback Cassandra host %s (from %s): credentials and data "
                            "would cross the network unencrypted; use tls://%s:%d (or CASSANDRA_SSL=true), or pass "
                            "--insecure to accept it",
                            host, source, host, port);
    out->host = strdup(host);
    out->source = strdup(source);
    out->username = dup_or_null(user);
    out->password = dup_or_null(password);
    out->port = port;
    out->use_tls = use_tls;
    out->is_loopback = is_loopback;
    if (!out->host || !out->source || (user && !out->username) || (password && !out->password)) {
        kp_cql_settings_clear(out);
        return kp_error_set(err, KP_ERR_NOMEM, NULL, 0, 0, "out of memory");
    }
    return 0;
}

/* ---- messages ------------------------------------------------------------------------------------ */

static int client_error(kp_cql_client *c, kp_error *err, int code, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static int client_error(kp_cql_client *c, kp_error *err, int code, const char *fmt, ...)
{
    char text[sizeof err->message];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    kp_cql_redact(text, c ? c->settings.password : NULL);
    return kp_error_set(err, code, NULL, 0, 0, "%s", text);
}

static const char *where(const kp_cql_client *c, char *buf, size_t size)
{
    const char *h = c->settings.host;
    snprintf(buf, size, strchr(h, ':') ? "[%s]:%d" : "%s:%d", h, c->settings.port);
    return buf;
}

static void tls_error_text(char *buf, size_t size)
{
    unsigned long e = ERR_get_error();
    if (!e) {
        snprintf(buf, size, "TLS failure");
        return;
    }
    ERR_error_string_n(e, buf, size);
    ERR_clear_error();
}

/* ---- socket and TLS I/O ---------------------------------------------------------------------------- */

/* >0 bytes read, 0 would block, -1 closed or failed (why filled). */
static ssize_t io_read(conn *k, uint8_t *buf, size_t n, char *why, size_t why_size)
{
    k->wants_write_for_read = 0;
    if (k->ssl) {
        int r = SSL_read(k->ssl, buf, n > INT32_MAX ? INT32_MAX : (int)n);
        if (r > 0) return r;
        int e = SSL_get_error(k->ssl, r);
        if (e == SSL_ERROR_WANT_READ) return 0;
        if (e == SSL_ERROR_WANT_WRITE) { k->wants_write_for_read = 1; return 0; }
        if (e == SSL_ERROR_ZERO_RETURN) snprintf(why, why_size, "the server closed the TLS connection");
        else if (e == SSL_ERROR_SYSCALL && errno == 0) snprintf(why, why_size, "the server closed the connection");
        else if (e == SSL_ERROR_SYSCALL) snprintf(why, why_size, "%s", strerror(errno));
        else tls_error_text(why, why_size);
        return -1;
    }
    ssize_t r = recv(k->fd, buf, n, 0);
    if (r > 0) return r;
    if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) return 0;
    snprintf(why, why_size, "%s", r == 0 ? "the server closed the connection" : strerror(errno));
    return -1;
}

static ssize_t io_write(conn *k, const uint8_t *buf, size_t n, char *why, size_t why_size)
{
    if (k->ssl) {
        int r = SSL_write(k->ssl, buf, n > INT32_MAX ? INT32_MAX : (int)n);
        if (r > 0) return r;
        int e = SSL_get_error(k->ssl, r);
        if (e == SSL_ERROR_WANT_WRITE || e == SSL_ERROR_WANT_READ) return 0;
        if (e == SSL_ERROR_SYSCALL) snprintf(why, why_size, "%s", errno ? strerror(errno) : "connection closed");
        else tls_error_text(why, why_size);
        return -1;
    }
    ssize_t r = send(k->fd, buf, n, MSG_NOSIGNAL);
    if (r >= 0) return r;
    if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) return 0;
    snprintf(why, why_size, "%s", strerror(errno));
    return -1;
}

/* Waits until fd is ready for `events` or the deadline passes: 1 ready, 0 timeout, -1 error. */
static int wait_fd(int fd, short events, int64_t deadline)
{
    for (;;) {
        int64_t left = deadline - now_ms();
        if (left <= 0) return 0;
        struct pollfd p = {.fd = fd, .events = events};
        int r = poll(&p, 1, left > 1000000 ? 1000000 : (int)left);
        if (r > 0) return 1;
        if (r == 0) return 0;
        if (errno != EINTR) return -1;
    }
}

static void conn_close(conn *k)
{
    if (k->ssl) {
        SSL_free(k->ssl);
        k->ssl = NULL;
    }
    if (k->fd >= 0) close(k->fd);
    k->fd = -1;
    k->is_open = 0;
    k->in_len = 0;
    k->out_len = k->out_pos = 0;
    k->in_flight = 0;
    k->used_streams = 0;
    if (k->streams) memset(k->streams, 0, (size_t)k->stream_cap * sizeof *k->streams);
}

static void conn_free(conn *k)
{
    conn_close(k);
    free(k->in);
    free(k->out);
    free(k->streams);
    memset(k, 0, sizeof *k);
    k->fd = -1;
}

/* Blocking (with deadline) helpers for the handshake. */
static int send_all(kp_cql_client *c, conn *k, const uint8_t *data, size_t len, int64_t deadline, kp_error *err)
{
    char at[300], why[256] = "";
    size_t done = 0;
    while (done < len) {
        ssize_t w = io_write(k, data + done, len - done, why, sizeof why);
        if (w < 0)
            return client_error(c, err, KP_ERR_TARGET, "lost the connection to Cassandra at %s while sending: %s",
                                where(c, at, sizeof at), why);
        if (w == 0) {
            int r = wait_fd(k->fd, POLLOUT | POLLIN, deadline);
            if (r <= 0)
                return client_error(c, err, KP_ERR_TARGET, "Cassandra at %s did not accept data within %ld ms",
                                    where(c, at, sizeof at), c->connect_timeout_ms);
        }
        done += (size_t)(w > 0 ? w : 0);
    }
    return 0;
}

static int ensure_in(conn *k, size_t need)
{
    if (k->in_cap >= need) return 0;
    size_t cap = k->in_cap ? k->in_cap : READ_CHUNK;
    while (cap < need) cap *= 2;
    uint8_t *p = realloc(k->in, cap);
    if (!p) return -1;
    k->in = p;
    k->in_cap = cap;
    return 0;
}

/* Reads one whole response frame (handshake only: nothing else is in flight). */
static int read_frame(kp_cql_client *c, conn *k, int64_t deadline, kp_cql_response *out, kp_error *err)
{
    char at[300], why[256] = "";
    for (;;) {
        if (k->in_len >= KP_CQL_HEADER_SIZE) {
            kp_cql_header h;
            if (kp_cql_header_decode(k->in, k->in_len, 1, c->max_frame, &h, err)) return -1;
            size_t total = KP_CQL_HEADER_SIZE + (size_t)h.length;
            if (k->in_len >= total) {
                int rc = kp_cql_response_decode_body(&h, k->in + KP_CQL_HEADER_SIZE, h.length, NULL, out, err);
                memmove(k->in, k->in + total, k->in_len - total);
                k->in_len -= total;
                return rc;
            }
            if (ensure_in(k, total)) return client_error(c, err, KP_ERR_NOMEM, "out of memory");
        }
        if (ensure_in(k, k->in_len + READ_CHUNK)) return client_error(c, err, KP_ERR_NOMEM, "out of memory");
        ssize_t r = io_read(k, k->in + k->in_len, k->in_cap - k->in_len, why, sizeof why);
        if (r < 0)
            return client_error(c, err, KP_ERR_TARGET, "Cassandra at %s closed the connection during the handshake: %s",
                                where(c, at, sizeof at), why);
        if (r == 0) {
            int w = wait_fd(k->fd, k->wants_write_for_read ? POLLOUT : POLLIN, deadline);
            if (w <= 0)
                return client_error(c, err, KP_ERR_TARGET,
                                    "Cassandra at %s did not answer the handshake within %ld ms (is it a CQL port?)",
                                    where(c, at, sizeof at), c->connect_timeout_ms);
        }
        k->in_len += (size_t)(r > 0 ? r : 0);
    }
}

static int handshake_error(kp_cql_client *c, const kp_cql_response *r, const char *step, kp_error *err)
{
    char at[300];
    if (r->header.opcode == KP_CQL_OP_ERROR) {
        c->last_error_code = r->error.code;
        if (r->error.code == KP_CQL_ERR_BAD_CREDENTIALS)
            return client_error(c, err, KP_ERR_TARGET,
                                "Cassandra at %s refused the credentials of user '%s': %s (check CASSANDRA_USERNAME "
                                "and CASSANDRA_PASSWORD)",
                                where(c, at, sizeof at), c->settings.username ? c->settings.username : "",
                                r->error.message);
        return client_error(c, err, KP_ERR_TARGET, "Cassandra at %s refused %s: %s (%s, code 0x%04x)",
                            where(c, at, sizeof at), step, r->error.message, kp_cql_error_name(r->error.code),
                            (unsigned)r->error.code);
    }
    return client_error(c, err, KP_ERR_TARGET, "Cassandra at %s answered %s with an unexpected frame (opcode 0x%02x)",
                        where(c, at, sizeof at), step, r->header.opcode);
}

static int handshake(kp_cql_client *c, conn *k, int64_t deadline, kp_error *err)
{
    kp_cql_buf frame = {0};
    kp_cql_response r;
    char at[300];
    int rc = -1;
    if (kp_cql_encode_startup(&frame, 0, err) || send_all(c, k, frame.data, frame.len, deadline, err) ||
        read_frame(c, k, deadline, &r, err))
        goto done;
    if (r.header.opcode == KP_CQL_OP_AUTHENTICATE) {
        if (!c->settings.username) {
            client_error(c, err, KP_ERR_TARGET,
                         "Cassandra at %s requires authentication (%s): set CASSANDRA_USERNAME and CASSANDRA_PASSWORD",
                         where(c, at, sizeof at), r.authenticator);
            kp_cql_response_free(&r);
            goto done;
        }
        kp_cql_response_free(&r);
        kp_cql_buf_reset(&frame);
        if (kp_cql_encode_auth_plain(&frame, 0, c->settings.username,
                                     c->settings.password ? c->settings.password : "", err) ||
            send_all(c, k, frame.data, frame.len, deadline, err)) {
            goto wipe;
        }
        if (frame.data) memset(frame.data, 0, frame.cap);   /* the frame held the password */
        if (read_frame(c, k, deadline, &r, err)) goto done;
        if (r.header.opcode == KP_CQL_OP_AUTH_CHALLENGE) {
            kp_cql_response_free(&r);
            client_error(c, err, KP_ERR_TARGET,
                         "Cassandra at %s sent an authentication challenge: keyplan speaks only SASL PLAIN "
                         "(PasswordAuthenticator)",
                         where(c, at, sizeof at));
            goto done;
        }
        if (r.header.opcode != KP_CQL_OP_AUTH_SUCCESS) {
            handshake_error(c, &r, "the login", err);
            kp_cql_response_free(&r);
            goto done;
        }
    } else if (r.header.opcode != KP_CQL_OP_READY) {
        handshake_error(c, &r, "protocol v4 (STARTUP)", err);
        kp_cql_response_free(&r);
        goto done;
    }
    kp_cql_response_free(&r);
    if (c->keyspace) {
        char quoted[600], cql[640];
        kp_cql_quote_identifier(c->keyspace, quoted, sizeof quoted);
        snprintf(cql, sizeof cql, "USE %s", quoted);
        kp_cql_params params = {.consistency = KP_CQL_ONE};
        kp_cql_buf_reset(&frame);
        if (kp_cql_encode_query(&frame, 0, cql, &params, err) || send_all(c, k, frame.data, frame.len, deadline, err) ||
            read_frame(c, k, deadline, &r, err))
            goto done;
        if (r.header.opcode != KP_CQL_OP_RESULT) {
            handshake_error(c, &r, "USE of the keyspace", err);
            kp_cql_response_free(&r);
            goto done;
        }
        kp_cql_response_free(&r);
    }
    rc = 0;
    goto done;
wipe:
    if (frame.data) memset(frame.data, 0, frame.cap);
done:
    kp_cql_buf_free(&frame);
    return rc;
}

static int tls_connect(kp_cql_client *c, conn *k, int64_t deadline, kp_error *err)
{
    char at[300], why[256];
    k->ssl = SSL_new(c->ssl_ctx);
    if (!k->ssl || !SSL_set_fd(k->ssl, k->fd)) return client_error(c, err, KP_ERR_NOMEM, "cannot set up TLS");
    const char *host = c->settings.host;
    struct in6_addr any;
    int is_ip = inet_pton(AF_INET, host, &any) == 1 || inet_pton(AF_INET6, host, &any) == 1;
    if (!is_ip) SSL_set_tlsext_host_name(k->ssl, host);
    if (c->verify_peer) {
        X509_VERIFY_PARAM *param = SSL_get0_param(k->ssl);
        if (is_ip ? !X509_VERIFY_PARAM_set1_ip_asc(param, host) : !X509_VERIFY_PARAM_set1_host(param, host, 0))
            return client_error(c, err, KP_ERR_NOMEM, "cannot set up TLS host verification");
        SSL_set_verify(k->ssl, SSL_VERIFY_PEER, NULL);
    } else {
        SSL_set_verify(k->ssl, SSL_VERIFY_NONE, NULL);
    }
    for (;;) {
        int r = SSL_connect(k->ssl);
        if (r == 1) return 0;
        int e = SSL_get_error(k->ssl, r);
        if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE) {
            if (wait_fd(k->fd, e == SSL_ERROR_WANT_READ ? POLLIN : POLLOUT, deadline) <= 0)
                return client_error(c, err, KP_ERR_TARGET, "the TLS handshake with Cassandra at %s timed out after %ld ms",
                                    where(c, at, sizeof at), c->connect_timeout_ms);
            continue;
        }
        long verify = SSL_get_verify_result(k->ssl);
        if (verify != X509_V_OK)
            return client_error(c, err, KP_ERR_TARGET,
                                "the TLS certificate of Cassandra at %s did not verify: %s (give its CA with "
                                "CASSANDRA_SSL_CA, or --insecure to skip verification)",
                                where(c, at, sizeof at), X509_verify_cert_error_string(verify));
        tls_error_text(why, sizeof why);
        return client_error(c, err, KP_ERR_TARGET, "the TLS handshake with Cassandra at %s failed: %s (does the node "
                            "have client_encryption_options enabled?)",
                            where(c, at, sizeof at), why);
    }
}

/* Opens connection k: TCP, TLS, STARTUP, authentication, USE. */
static int conn_open(kp_cql_client *c, conn *k, kp_error *err)
{
    char at[300], port[16];
    int64_t deadline = now_ms() + c->connect_timeout_ms;
    snprintf(port, sizeof port, "%d", c->settings.port);
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM}, *res = NULL;
    int gai = getaddrinfo(c->settings.host, port, &hints, &res);
    if (gai)
        return client_error(c, err, KP_ERR_TARGET, "cannot resolve the Cassandra host %s (from %s): %s",
                            c->settings.host, c->settings.source, gai_strerror(gai));
    int fd = -1, last_errno = 0;
    for (struct addrinfo *ai = res; ai && fd < 0; ai = ai->ai_next) {
        fd = socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, ai->ai_protocol);
        if (fd < 0) { last_errno = errno; continue; }
        if (connect(fd, ai->ai_addr, ai->ai_addrlen) == 0) break;
        if (errno == EINPROGRESS) {
            int w = wait_fd(fd, POLLOUT, deadline);
            int so = 0;
            socklen_t sl = sizeof so;
            if (w > 0 && getsockopt(fd, SOL_SOCKET, SO_ERROR, &so, &sl) == 0 && so == 0) break;
            last_errno = w == 0 ? ETIMEDOUT : so ? so : errno;
        } else {
            last_errno = errno;
        }
        close(fd);
        fd = -1;
    }
    freeaddrinfo(res);
    if (fd < 0)
        return client_error(c, err, KP_ERR_TARGET,
                            "cannot connect to Cassandra at %s (from %s): %s; is the node running with its native "
                            "transport on that port?",
                            where(c, at, sizeof at), c->settings.source, strerror(last_errno ? last_errno : ECONNREFUSED));
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof one);
    k->fd = fd;
    k->in_len = 0;
    k->out_len = k->out_pos = 0;
    if (c->ssl_ctx && tls_connect(c, k, deadline, err)) {
        conn_close(k);
        return -1;
    }
    if (handshake(c, k, deadline, err)) {
        conn_close(k);
        return -1;
    }
    if (!k->streams) {
        k->stream_cap = c->per_conn_limit * 2 + 64;
        if (k->stream_cap > KP_CQL_MAX_STREAM + 1) k->stream_cap = KP_CQL_MAX_STREAM + 1;
        k->streams = calloc((size_t)k->stream_cap, sizeof *k->streams);
        if (!k->streams) {
            conn_close(k);
            return client_error(c, err, KP_ERR_NOMEM, "out of memory");
        }
    }
    k->is_open = 1;
    k->open_failures = 0;
    if (c->is_opened) c->stats.reconnects++;
    return 0;
}

/* ---- requests ------------------------------------------------------------------------------------- */

static request *request_new(uint8_t opcode, const char *cql)
{
    request *rq = calloc(1, sizeof *rq);
    if (!rq) return NULL;
    rq->opcode = opcode;
    rq->conn_index = rq->stream = rq->pinned_conn = -1;
    if (cql) {
        size_t n = 0;
        for (const char *p = cql; *p && n + 4 < sizeof rq->snippet; p++) {
            char ch = *p == '\n' || *p == '\t' || *p == '\r' ? ' ' : *p;
            if (ch == ' ' && n && rq->snippet[n - 1] == ' ') continue;
            rq->snippet[n++] = ch;
        }
        if (strlen(cql) >= sizeof rq->snippet - 4) memcpy(rq->snippet + n, "...", 3), n += 3;
        rq->snippet[n] = '\0';
        rq->secrets = statement_secrets(cql);
        kp_cql_redact(rq->snippet, NULL);
    }
    return rq;
}

static void request_free(request *rq)
{
    if (!rq) return;
    kp_cql_buf_free(&rq->frame);
    free(rq->secrets);
    if (rq->has_response) kp_cql_response_free(&rq->response);
    free(rq->batch_prepared);
    free(rq);
}

static void queue_push_back(kp_cql_client *c, request *rq)
{
    rq->next = NULL;
    if (c->queue_tail) c->queue_tail->next = rq;
    else c->queue_head = rq;
    c->queue_tail = rq;
    c->queued++;
}

static void queue_push_front(kp_cql_client *c, request *rq)
{
    rq->next = c->queue_head;
    c->queue_head = rq;
    if (!c->queue_tail) c->queue_tail = rq;
    c->queued++;
}

static void retry_insert(kp_cql_client *c, request *rq)
{
    request **p = &c->retry_head;
    while (*p && (*p)->due_ms <= rq->due_ms) p = &(*p)->next;
    rq->next = *p;
    *p = rq;
    c->retrying++;
}

int kp_cql_pending(const kp_cql_client *c)
{
    return c ? c->queued + c->in_flight + c->retrying + c->parked : 0;
}

/* The server answered: one more answer towards a wider window. */
static void window_grow(kp_cql_client *c)
{
    if (c->window < c->max_in_flight && ++c->window_answers >= c->window) {
        c->window++;
        c->window_answers = 0;
    }
}

/* A request failed on the wire or by overload: half the window, once for the requests
 * sent since the last cut (those sent before were sent into the wider one). */
static void window_cut(kp_cql_client *c, int64_t sent_ms)
{
    if (sent_ms < c->window_cut_ms) return;
    c->window = c->window > 1 ? c->window / 2 : 1;
    c->window_answers = 0;
    c->stats.window_cuts++;
    c->window_cut_ms = now_ms();
}

/* Hands a finished request to whoever waits for it. */
static void complete(kp_cql_client *c, request *rq, kp_cql_response *response, const kp_cql_failure *failure)
{
    c->completed++;
    if (response && !failure) window_grow(c);
    if (rq->hook) {
        rq->hook(c, rq, response, failure);
        if (response) kp_cql_response_free(response);
        request_free(rq);
        return;
    }
    if (rq->is_sync) {
        if (response) {
            rq->response = *response;     /* ownership moves to the waiting caller */
            memset(response, 0, sizeof *response);
            rq->has_response = 1;
        }
        if (failure) {
            rq->failure = *failure;
            rq->has_failure = 1;
        }
        rq->is_done = 1;
        return;
    }
    if (rq->done) {
        c->in_callback++;
        rq->done(rq->ctx, failure ? NULL : response, failure);
        c->in_callback--;
    }
    if (response) kp_cql_response_free(response);
    request_free(rq);
}

static void fail_request(kp_cql_client *c, request *rq, int32_t cql_code, int is_retryable, const kp_error *error)
{
    kp_cql_failure f;
    memset(&f, 0, sizeof f);
    f.error = *error;
    f.cql_code = cql_code;
    f.attempts = rq->attempts;
    f.is_retryable = is_retryable;
    complete(c, rq, NULL, &f);
}

/* A request whose outcome is unknown or that the server asked to retry: again later,
 * or its final failure. */
static void retry_or_fail(kp_cql_client *c, request *rq, int outcome_unknown, int32_t cql_code, const kp_error *error)
{
    if (outcome_unknown && rq->no_retry_after_send) {
        kp_error e = *error;
        size_t n = strlen(e.message);
        snprintf(e.message + n, sizeof e.message - n, "%s", " (not retried: the statement may have been applied and "
                 "must not run twice)");
        fail_request(c, rq, cql_code, 0, &e);
        return;
    }
    /* a request lost with its connection or timed out is most often the bystander of one
     * failure among many in flight: twice the retries of one the server refused */
    int retries = outcome_unknown ? 2 * c->max_retries : c->max_retries;
    if (rq->attempts - rq->reprepares <= retries) {
        rq->due_ms = now_ms() + kp_cql_backoff_ms(rq->attempts - 1, &c->rng);
        retry_insert(c, rq);
        return;
    }
    kp_error e = *error;
    if (rq->attempts > 1) {
        size_t n = strlen(e.message);
        snprintf(e.message + n, sizeof e.message - n, " (after %d attempts)", rq->attempts);
    }
    fail_request(c, rq, cql_code, 1, &e);
}

/* A connection broke: every request on it is retried or failed. */
static void conn_fail(kp_cql_client *c, int index, const char *why)
{
    conn *k = &c->conns[index];
    char at[300];
    kp_error e;
    client_error(c, &e, KP_ERR_TARGET, "lost the connection to Cassandra at %s: %s", where(c, at, sizeof at), why);
    request **streams = k->streams;
    int cap = k->stream_cap;
    k->streams = NULL;          /* conn_close must not clear the table we walk */
    int lost = k->in_flight;
    if (lost) window_cut(c, c->window_cut_ms); /* one cut for the whole connection, whenever its requests went out */
    conn_close(k);
    k->streams = streams;
    c->in_flight -= lost;
    for (int s = 0; s < cap && streams; s++) {
        request *rq = streams[s];
        streams[s] = NULL;
        if (!rq || rq == ORPHAN) continue;
        rq->conn_index = rq->stream = -1;
        retry_or_fail(c, rq, 1, -1, &e);
    }
}

/* ---- the event loop -------------------------------------------------------------------------------- */

static int conn_flush(kp_cql_client *c, int index)
{
    conn *k = &c->conns[index];
    char why[256] = "";
    while (k->is_open && k->out_pos < k->out_len) {
        ssize_t w = io_write(k, k->out + k->out_pos, k->out_len - k->out_pos, why, sizeof why);
        if (w < 0) {
            conn_fail(c, index, why);
            return -1;
        }
        if (w == 0) break;
        k->out_pos += (size_t)w;
    }
    if (k->out_pos == k->out_len) k->out_pos = k->out_len = 0;
    return 0;
}

static int conn_append(conn *k, const uint8_t *data, size_t len)
{
    if (k->out_len + len > k->out_cap) {
        if (k->out_pos) {
            memmove(k->out, k->out + k->out_pos, k->out_len - k->out_pos);
            k->out_len -= k->out_pos;
            k->out_pos = 0;
        }
        if (k->out_len + len > k->out_cap) {
            size_t cap = k->out_cap ? k->out_cap : READ_CHUNK;
            while (cap < k->out_len + len) cap *= 2;
            uint8_t *p = realloc(k->out, cap);
            if (!p) return -1;
            k->out = p;
            k->out_cap = cap;
        }
    }
    memcpy(k->out + k->out_len, data, len);
    k->out_len += len;
    return 0;
}

static int free_stream(conn *k)
{
    for (int tries = 0; tries < k->stream_cap; tries++) {
        int s = k->next_stream;
        k->next_stream = (k->next_stream + 1) % k->stream_cap;
        if (!k->streams[s]) return s;
    }
    return -1;
}

/* The open connection with the fewest requests and room for one more (opening closed
 * ones as needed); -1 when none can take it now. *open_failed is set, and err filled,
 * when opening failed. */
static int pick_conn(kp_cql_client *c, int pinned, int *open_failed, kp_error *err)
{
    int best = -1;
    int64_t t = now_ms();
    for (int i = 0; i < c->conn_count; i++) {
        if (pinned >= 0 && i != pinned) continue;
        conn *k = &c->conns[i];
        if (!k->is_open) {
            if (pinned >= 0) continue;
            if (t < k->reopen_due_ms) continue;
            /* reopen only when no open connection has room */
            int has_room = 0;
            for (int j = 0; j < c->conn_count; j++)
                if (c->conns[j].is_open && c->conns[j].in_flight < c->per_conn_limit) has_room = 1;
            if (has_room) continue;
            if (conn_open(c, k, err)) {
                k->open_failures++;
                k->reopen_due_ms = now_ms() + kp_cql_backoff_ms(k->open_failures, &c->rng);
                *open_failed = 1;
                continue;
            }
        }
        if (k->in_flight >= c->per_conn_limit || k->used_streams >= k->stream_cap) continue;
        if (best < 0 || k->in_flight < c->conns[best].in_flight) best = i;
    }
    return best;
}

/* Moves queued requests onto connections while there is room. */
static void dispatch(kp_cql_client *c)
{
    while (c->queue_head && c->in_flight < c->window) {
        request *rq = c->queue_head;
        int open_failed = 0;
        kp_error open_err;
        kp_error_clear(&open_err);
        int index = pick_conn(c, rq->pinned_conn, &open_failed, &open_err);
        if (index < 0) {
            if (rq->pinned_conn >= 0 && !c->conns[rq->pinned_conn].is_open) {
                /* the connection it was meant for is gone: a reopened one gets the keyspace anyway */
                c->queue_head = rq->next;
                if (!c->queue_head) c->queue_tail = NULL;
                c->queued--;
                kp_cql_response empty;
                memset(&empty, 0, sizeof empty);
                empty.header.opcode = KP_CQL_OP_RESULT;
                empty.result_kind = KP_CQL_RESULT_VOID;
                complete(c, rq, &empty, NULL);
                continue;
            }
            if (open_failed) {
                /* no connection at all: every queued request spends an attempt waiting */
                while (c->queue_head) {
                    request *q = c->queue_head;
                    c->queue_head = q->next;
                    c->queued--;
                    q->attempts++;
                    retry_or_fail(c, q, 0, -1, &open_err);
                }
                c->queue_tail = NULL;
            }
            return;
        }
        conn *k = &c->conns[index];
        int s = free_stream(k);
        if (s < 0) return;
        c->queue_head = rq->next;
        if (!c->queue_head) c->queue_tail = NULL;
        c->queued--;
        rq->next = NULL;
        rq->frame.data[2] = (uint8_t)(s >> 8);
        rq->frame.data[3] = (uint8_t)s;
        if (conn_append(k, rq->frame.data, rq->frame.len)) {
            kp_error e;
            kp_error_set(&e, KP_ERR_NOMEM, NULL, 0, 0, "out of memory while sending a CQL request");
            fail_request(c, rq, -1, 0, &e);
            continue;
        }
        k->streams[s] = rq;
        k->in_flight++;
        k->used_streams++;
        c->in_flight++;
        rq->conn_index = index;
        rq->stream = s;
        rq->attempts++;
        rq->sent_ms = now_ms();
        if (!rq->timeout_ms) rq->timeout_ms = c->request_timeout_ms;
        c->stats.requests++;
        if (rq->is_resend) rq->is_resend = 0;
        else if (rq->attempts > 1) c->stats.retries++;
    }
}

static void promote_due_retries(kp_cql_client *c, int64_t t)
{
    /* due retries go to the queue in due order, ahead of new work */
    request *due_head = NULL, **due_tail = &due_head;
    while (c->retry_head && c->retry_head->due_ms <= t) {
        request *rq = c->retry_head;
        c->retry_head = rq->next;
        c->retrying--;
        rq->next = NULL;
        *due_tail = rq;
        due_tail = &rq->next;
    }
    if (!due_head) return;
    int n = 0;
    for (request *r = due_head; r; r = r->next) n++;
    request *last = due_head;
    while (last->next) last = last->next;
    last->next = c->queue_head;
    c->queue_head = due_head;
    if (!c->queue_tail) c->queue_tail = last;
    c->queued += n;
}

static int is_retryable_error(const request *rq, const kp_cql_error_info *e)
{
    switch (e->code) {
    case KP_CQL_ERR_OVERLOADED: case KP_CQL_ERR_IS_BOOTSTRAPPING: case KP_CQL_ERR_UNAVAILABLE:
    case KP_CQL_ERR_READ_TIMEOUT:
        return 1;
    case KP_CQL_ERR_WRITE_TIMEOUT:
        if (rq->no_retry_after_send) return 0;
        if (e->write_type && (!strcmp(e->write_type, "COUNTER") || !strcmp(e->write_type, "CAS"))) return 0;
        return 1;
    default:
        return 0;
    }
}

static void server_error(kp_cql_client *c, const request *rq, const kp_cql_error_info *e, kp_error *out)
{
    char at[300], detail[200] = "";
    switch (e->code) {
    case KP_CQL_ERR_UNAVAILABLE:
        snprintf(detail, sizeof detail, "; %" PRId32 " of %" PRId32 " replicas alive at %s", e->alive, e->required,
                 kp_cql_consistency_name(e->consistency));
        break;
    case KP_CQL_ERR_WRITE_TIMEOUT: case KP_CQL_ERR_WRITE_FAILURE:
        snprintf(detail, sizeof detail, "; %" PRId32 " of %" PRId32 " replicas acknowledged at %s, write type %s",
                 e->received, e->block_for, kp_cql_consistency_name(e->consistency), e->write_type ? e->write_type : "?");
        break;
    case KP_CQL_ERR_READ_TIMEOUT: case KP_CQL_ERR_READ_FAILURE:
        snprintf(detail, sizeof detail, "; %" PRId32 " of %" PRId32 " replicas answered at %s", e->received, e->block_for,
                 kp_cql_consistency_name(e->consistency));
        break;
    default:
        break;
    }
    if (rq->snippet[0])
        client_error(c, out, KP_ERR_TARGET, "Cassandra at %s refused \"%s\": %s (%s, code 0x%04x%s)",
                     where(c, at, sizeof at), rq->snippet, e->message ? e->message : "", kp_cql_error_name(e->code),
                     (unsigned)e->code, detail);
    else
        client_error(c, out, KP_ERR_TARGET, "Cassandra at %s refused the request: %s (%s, code 0x%04x%s)",
                     where(c, at, sizeof at), e->message ? e->message : "", kp_cql_error_name(e->code),
                     (unsigned)e->code, detail);
    redact_statement_secrets(out->message, rq->secrets);
}

static kp_cql_prepared *find_prepared_by_id(kp_cql_client *c, const uint8_t *id, uint16_t len)
{
    for (int b = 0; b < PREPARED_BUCKETS; b++)
        for (kp_cql_prepared *p = c->prepared[b]; p; p = p->next)
            if (p->id_len == len && !memcmp(p->id, id, len)) return p;
    return NULL;
}

/* After a re-PREPARE: resend the request that was waiting for it. */
static void reprepared(kp_cql_client *c, request *prq, kp_cql_response *response, const kp_cql_failure *failure)
{
    request *waiting = prq->waiting;
    kp_cql_prepared *p = prq->reprepare_target;
    c->parked--;
    if (failure) {
        fail_request(c, waiting, failure->cql_code, failure->is_retryable, &failure->error);
        return;
    }
    if (response->result_kind != KP_CQL_RESULT_PREPARED) {
        kp_error e;
        kp_error_set(&e, KP_ERR_TARGET, NULL, 0, 0, "Cassandra answered a PREPARE with result kind %" PRId32,
                     response->result_kind);
        fail_request(c, waiting, -1, 0, &e);
        return;
    }
    if (response->prepared_id_len != p->id_len || memcmp(response->prepared_id, p->id, p->id_len)) {
        /* the server now knows the statement under another id: EXECUTE frames carry it right
         * after the header, so an id of the same length is patched in place */
        if (waiting->opcode == KP_CQL_OP_EXECUTE && response->prepared_id_len == p->id_len &&
            waiting->frame.len >= KP_CQL_HEADER_SIZE + 2u + p->id_len) {
            memcpy(p->id, response->prepared_id, p->id_len);
            memcpy(waiting->frame.data + KP_CQL_HEADER_SIZE + 2, p->id, p->id_len);
        } else {
            char at[300];
            kp_error e;
            client_error(c, &e, KP_ERR_TARGET,
                         "Cassandra at %s re-prepared \"%s\" under a different id; prepare it again and resend",
                         where(c, at, sizeof at), p->cql);
            fail_request(c, waiting, KP_CQL_ERR_UNPREPARED, 0, &e);
            return;
        }
    }
    waiting->reprepares++;
    waiting->is_resend = 1;
    queue_push_front(c, waiting);
}

/* Handles an ERROR answer to rq. Takes the response. */
static void handle_error(kp_cql_client *c, request *rq, kp_cql_response *response)
{
    const kp_cql_error_info *e = &response->error;
    if (e->code == KP_CQL_ERR_UNPREPARED && rq->reprepares < MAX_REPREPARES) {
        kp_cql_prepared *p = find_prepared_by_id(c, e->unprepared_id, e->unprepared_id_len);
        request *prq = p ? request_new(KP_CQL_OP_PREPARE, p->cql) : NULL;
        kp_error err;
        if (prq && kp_cql_encode_prepare(&prq->frame, 0, p->cql, &err) == 0) {
            prq->hook = reprepared;
            c->stats.reprepares++;
            prq->waiting = rq;
            prq->reprepare_target = p;
            c->parked++;
            queue_push_front(c, prq);
            kp_cql_response_free(response);
            return;
        }
        request_free(prq);
    }
    kp_error error;
    server_error(c, rq, e, &error);
    int32_t code = e->code;
    if (is_retryable_error(rq, e)) {
        kp_cql_response_free(response);
        window_cut(c, rq->sent_ms);
        retry_or_fail(c, rq, 0, code, &error);
        return;
    }
    kp_cql_response_free(response);
    fail_request(c, rq, code, 0, &error);
}

static const kp_cql_metadata *known_columns(const request *rq)
{
    return rq->prepared ? &rq->prepared->columns : NULL;
}

/* One complete response frame on connection `index`. */
static void handle_frame(kp_cql_client *c, int index, const kp_cql_header *h, const uint8_t *body)
{
    conn *k = &c->conns[index];
    if (h->stream < 0 || h->stream >= k->stream_cap) return;   /* events (-1): not registered for */
    request *rq = k->streams[h->stream];
    if (!rq) return;
    k->streams[h->stream] = NULL;
    k->used_streams--;
    if (rq == ORPHAN) return;   /* the late answer of an attempt that timed out */
    k->in_flight--;
    c->in_flight--;
    rq->conn_index = rq->stream = -1;
    kp_cql_response response;
    kp_error err;
    if (kp_cql_response_decode_body(h, body, h->length, known_columns(rq), &response, &err)) {
        char at[300];
        kp_error e;
        client_error(c, &e, KP_ERR_TARGET, "Cassandra at %s sent an answer keyplan cannot read: %s",
                     where(c, at, sizeof at), err.message);
        fail_request(c, rq, -1, 0, &e);
        return;
    }
    if (h->opcode == KP_CQL_OP_ERROR) {
        handle_error(c, rq, &response);
        return;
    }
    complete(c, rq, &response, NULL);
    kp_cql_response_free(&response);
}

static int conn_read(kp_cql_client *c, int index)
{
    conn *k = &c->conns[index];
    char why[256] = "";
    for (;;) {
        if (ensure_in(k, k->in_len + READ_CHUNK)) {
            conn_fail(c, index, "out of memory");
            return -1;
        }
        ssize_t r = io_read(k, k->in + k->in_len, k->in_cap - k->in_len, why, sizeof why);
        if (r < 0) {
            conn_fail(c, index, why);
            return -1;
        }
        if (r == 0) break;
        k->in_len += (size_t)r;
        /* complete frames */
        size_t pos = 0;
        while (k->in_len - pos >= KP_CQL_HEADER_SIZE) {
            kp_cql_header h;
            kp_error err;
            if (kp_cql_header_decode(k->in + pos, k->in_len - pos, 1, c->max_frame, &h, &err)) {
                conn_fail(c, index, err.message);
                return -1;
            }
            size_t total = KP_CQL_HEADER_SIZE + (size_t)h.length;
            if (k->in_len - pos < total) break;
            handle_frame(c, index, &h, k->in + pos + KP_CQL_HEADER_SIZE);
            if (!k->is_open) return -1;
            pos += total;
        }
        if (pos) {
            memmove(k->in, k->in + pos, k->in_len - pos);
            k->in_len -= pos;
        }
    }
    return 0;
}

/* Attempts on the wire longer than the request timeout: their streams become orphans. */
static void check_timeouts(kp_cql_client *c, int64_t t)
{
    char at[300];
    for (int i = 0; i < c->conn_count; i++) {
        conn *k = &c->conns[i];
        if (!k->is_open || !k->in_flight) continue;
        for (int s = 0; s < k->stream_cap; s++) {
            request *rq = k->streams[s];
            if (!rq || rq == ORPHAN || t - rq->sent_ms < rq->timeout_ms) continue;
            k->streams[s] = ORPHAN;
            c->stats.timeouts++;
            k->in_flight--;
            c->in_flight--;
            rq->conn_index = rq->stream = -1;
            kp_error e;
            client_error(c, &e, KP_ERR_TARGET, "Cassandra at %s did not answer \"%s\" within %ld ms",
                         where(c, at, sizeof at), rq->snippet[0] ? rq->snippet : "a request", rq->timeout_ms);
            window_cut(c, rq->sent_ms);
            retry_or_fail(c, rq, 1, -1, &e);
        }
        /* a connection clogged with orphans is replaced */
        if (k->is_open && k->used_streams - k->in_flight > k->stream_cap / 2)
            conn_fail(c, i, "too many requests timed out on it");
    }
}

static int64_t next_wakeup(const kp_cql_client *c, int64_t until)
{
    int64_t w = until;
    if (c->retry_head && c->retry_head->due_ms < w) w = c->retry_head->due_ms;
    if (c->in_flight) {
        for (int i = 0; i < c->conn_count; i++) {
            const conn *k = &c->conns[i];
            if (!k->is_open || !k->in_flight) continue;
            for (int s = 0; s < k->stream_cap; s++) {
                const request *rq = k->streams[s];
                if (rq && rq != ORPHAN && rq->sent_ms + rq->timeout_ms < w) w = rq->sent_ms + rq->timeout_ms;
            }
        }
    }
    if (c->queue_head) {
        /* queued work waits for a connection to reopen */
        for (int i = 0; i < c->conn_count; i++)
            if (!c->conns[i].is_open && c->conns[i].reopen_due_ms < w) w = c->conns[i].reopen_due_ms;
    }
    return w;
}

/* Runs the loop until something completes, the time is up or nothing is pending; the
 * sockets are looked at at least once, also with timeout_ms 0. */
static void drive(kp_cql_client *c, int timeout_ms)
{
    int64_t start = now_ms();
    int64_t until = timeout_ms < 0 ? INT64_MAX : start + timeout_ms;
    unsigned long completed_before = c->completed;
    for (;;) {
        promote_due_retries(c, now_ms());
        dispatch(c);
        for (int i = 0; i < c->conn_count; i++)
            if (c->conns[i].is_open && c->conns[i].out_len > c->conns[i].out_pos) conn_flush(c, i);
        if (c->completed != completed_before || !kp_cql_pending(c)) return;
        int64_t t = now_ms();
        int64_t wake = next_wakeup(c, until);
        struct pollfd fds[KP_CQL_MAX_CONNECTIONS];
        int map[KP_CQL_MAX_CONNECTIONS], n = 0;
        for (int i = 0; i < c->conn_count; i++) {
            conn *k = &c->conns[i];
            if (!k->is_open) continue;
            fds[n].fd = k->fd;
            fds[n].events = POLLIN;
            if (k->out_len > k->out_pos || k->wants_write_for_read) fds[n].events |= POLLOUT;
            fds[n].revents = 0;
            map[n++] = i;
        }
        int64_t wait = wake - t;
        if (wait < 0) wait = 0;
        if (wait > 60000) wait = 60000;
        int r = n ? poll(fds, (nfds_t)n, (int)wait) : 0;
        if (!n && wait > 0) {
            struct timespec ts = {.tv_sec = wait / 1000, .tv_nsec = (wait % 1000) * 1000000L};
            nanosleep(&ts, NULL);
        }
        if (r > 0) {
            for (int j = 0; j < n; j++) {
                int i = map[j];
                if (!c->conns[i].is_open) continue;
                if (fds[j].revents & (POLLIN | POLLHUP | POLLERR)) conn_read(c, i);
                else if (c->conns[i].wants_write_for_read && (fds[j].revents & POLLOUT)) conn_read(c, i);
                if (c->conns[i].is_open && (fds[j].revents & POLLOUT)) conn_flush(c, i);
            }
        }
        check_timeouts(c, now_ms());
        /* what completed may have queued more: the top of the loop sends it, then returns */
        if (c->completed == completed_before && now_ms() >= until) return;
    }
}

/* ---- opening and closing ----------------------------------------------------------------------------- */

static int make_tls_context(kp_cql_client *c, const kp_cql_config *cfg, kp_error *err)
{
    c->ssl_ctx = SSL_CTX_new(TLS_client_method());
    if (!c->ssl_ctx) return client_error(c, err, KP_ERR_NOMEM, "cannot create a TLS context");
    SSL_CTX_set_min_proto_version(c->ssl_ctx, TLS1_2_VERSION);
    SSL_CTX_set_mode(c->ssl_ctx, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
    int is_insecure = cfg && cfg->is_insecure;
    c->verify_peer = !is_insecure && !c->settings.is_loopback;
    const char *ca = cfg && cfg->ca_file ? cfg->ca_file : getenv("CASSANDRA_SSL_CA");
    if (ca && ca[0]) {
        if (SSL_CTX_load_verify_locations(c->ssl_ctx, ca, NULL) != 1) {
            char why[256];
            tls_error_text(why, sizeof why);
            return client_error(c, err, KP_ERR_USAGE, "cannot read the CA file %s: %s", ca, why);
        }
        c->verify_peer = !is_insecure;   /* a CA given: verify loopback hosts too */
    } else {
        SSL_CTX_set_default_verify_paths(c->ssl_ctx);
    }
    /* writes to a closed TLS socket must fail, not kill the process */
    struct sigaction current;
    if (sigaction(SIGPIPE, NULL, &current) == 0 && current.sa_handler == SIG_DFL) signal(SIGPIPE, SIG_IGN);
    return 0;
}

int kp_cql_client_open(const kp_cql_config *cfg, kp_cql_client **out, kp_error *err)
{
    static int warned_insecure;
    *out = NULL;
    kp_cql_client *c = calloc(1, sizeof *c);
    if (!c) return kp_error_set(err, KP_ERR_NOMEM, NULL, 0, 0, "out of memory");
    for (int i = 0; i < KP_CQL_MAX_CONNECTIONS; i++) c->conns[i].fd = -1;
    c->last_error_code = -1;
    if (kp_cql_settings_resolve(cfg, &c->settings, err)) {
        free(c);
        return -1;
    }
    c->conn_count = cfg && cfg->connections > 0 ? cfg->connections : 1;
    if (c->conn_count > KP_CQL_MAX_CONNECTIONS) c->conn_count = KP_CQL_MAX_CONNECTIONS;
    c->max_in_flight = cfg && cfg->max_in_flight > 0 ? cfg->max_in_flight : KP_CQL_DEFAULT_IN_FLIGHT;
    if (c->max_in_flight > KP_CQL_MAX_IN_FLIGHT) c->max_in_flight = KP_CQL_MAX_IN_FLIGHT;
    c->per_conn_limit = (c->max_in_flight + c->conn_count - 1) / c->conn_count;
    c->window = c->max_in_flight;
    c->max_retries = !cfg || cfg->max_retries == 0 ? KP_CQL_DEFAULT_RETRIES
                     : cfg->max_retries < 0        ? 0 : cfg->max_retries;
    c->connect_timeout_ms = cfg && cfg->connect_timeout_ms > 0 ? cfg->connect_timeout_ms : DEFAULT_CONNECT_TIMEOUT_MS;
    c->request_timeout_ms = cfg && cfg->request_timeout_ms > 0 ? cfg->request_timeout_ms : DEFAULT_REQUEST_TIMEOUT_MS;
    c->consistency = cfg && cfg->consistency ? cfg->consistency : KP_CQL_LOCAL_QUORUM;
    c->max_frame = cfg && cfg->max_frame ? cfg->max_frame : KP_CQL_MAX_BODY;
    c->rng = (uint64_t)now_ms() * 0x9E3779B97F4A7C15ull ^ (uint64_t)getpid();
    if (cfg && cfg->keyspace && !(c->keyspace = strdup(cfg->keyspace))) {
        kp_cql_client_close(c);
        return kp_error_set(err, KP_ERR_NOMEM, NULL, 0, 0, "out of memory");
    }
    if (cfg && cfg->is_insecure && !warned_insecure) {
        warned_insecure = 1;
        fprintf(stderr, "keyplan: warning: --insecure: the Cassandra connection is not verified (TLS certificates are "
                        "not checked; plain TCP is allowed to any host)\n");
    }
    if (c->settings.use_tls && make_tls_context(c, cfg, err)) {
        kp_cql_client_close(c);
        return -1;
    }
    char at[300];
    snprintf(c->description, sizeof c->description, "%s (%s), %s%s%s, %d connection%s", where(c, at, sizeof at),
             c->settings.source,
             c->settings.use_tls ? (c->verify_peer ? "TLS" : "TLS without verification") : "plain TCP",
             c->settings.username ? ", user " : "", c->settings.username ? c->settings.username : "",
             c->conn_count, c->conn_count == 1 ? "" : "s");
    for (int i = 0; i < c->conn_count; i++) {
        if (conn_open(c, &c->conns[i], err)) {
            kp_cql_client_close(c);
            return -1;
        }
    }
    c->is_opened = 1;
    *out = c;
    return 0;
}

void kp_cql_client_close(kp_cql_client *c)
{
    if (!c) return;
    char at[300];
    kp_error e;
    client_error(c, &e, KP_ERR_TARGET, "the Cassandra client for %s was closed before an answer came",
                 where(c, at, sizeof at));
    /* in flight */
    for (int i = 0; i < c->conn_count; i++) {
        conn *k = &c->conns[i];
        for (int s = 0; k->streams && s < k->stream_cap; s++) {
            request *rq = k->streams[s];
            k->streams[s] = NULL;
            if (!rq || rq == ORPHAN) continue;
            c->in_flight--;
            fail_request(c, rq, -1, 0, &e);
        }
    }
    /* queued and waiting to retry; a failing re-PREPARE fails the request parked behind it */
    for (;;) {
        request *rq = c->queue_head;
        if (rq) {
            c->queue_head = rq->next;
            c->queued--;
        } else if ((rq = c->retry_head)) {
            c->retry_head = rq->next;
            c->retrying--;
        } else {
            break;
        }
        fail_request(c, rq, -1, 0, &e);
    }
    c->queue_tail = NULL;
    for (int i = 0; i < KP_CQL_MAX_CONNECTIONS; i++) conn_free(&c->conns[i]);
    for (int b = 0; b < PREPARED_BUCKETS; b++) {
        kp_cql_prepared *p = c->prepared[b];
        while (p) {
            kp_cql_prepared *next = p->next;
            kp_arena_free(&p->arena);
            free(p);
            p = next;
        }
    }
    if (c->ssl_ctx) SSL_CTX_free(c->ssl_ctx);
    kp_cql_settings_clear(&c->settings);
    free(c->keyspace);
    free(c);
}

const char *kp_cql_client_describe(const kp_cql_client *c) { return c ? c->description : ""; }
const kp_cql_settings *kp_cql_client_settings(const kp_cql_client *c) { return c ? &c->settings : NULL; }
int32_t kp_cql_last_error_code(const kp_cql_client *c) { return c ? c->last_error_code : -1; }

kp_cql_stats kp_cql_client_stats(const kp_cql_client *c)
{
    kp_cql_stats none = {0};
    if (!c) return none;
    kp_cql_stats s = c->stats;
    s.window = c->window;
    return s;
}

/* ---- building requests ---------------------------------------------------------------------------------- */

static kp_cql_params effective_params(const kp_cql_client *c, const kp_cql_params *params, const kp_cql_values *values)
{
    kp_cql_params p;
    if (params) p = *params;
    else memset(&p, 0, sizeof p);
    if (!p.consistency) p.consistency = c->consistency;
    p.values = values && values->count ? values : NULL;
    return p;
}

static int check_not_in_callback(const kp_cql_client *c, kp_error *err)
{
    if (c->in_callback)
        return kp_error_set(err, KP_ERR_INTERNAL, NULL, 0, 0,
                            "a synchronous Cassandra call or poll from inside a done callback");
    return 0;
}

/* Queues rq at the front and drives the loop until it is done. Takes rq. */
static int run_sync(kp_cql_client *c, request *rq, kp_cql_response *out, kp_error *err)
{
    rq->is_sync = 1;
    queue_push_front(c, rq);
    while (!rq->is_done) drive(c, -1);
    int rc = 0;
    if (rq->has_failure) {
        *err = rq->failure.error;
        c->last_error_code = rq->failure.cql_code;
        rc = -1;
    } else {
        c->last_error_code = -1;
        if (out) {
            *out = rq->response;
            memset(&rq->response, 0, sizeof rq->response);
            rq->has_response = 0;
        }
    }
    request_free(rq);
    return rc;
}

enum { SCHEMA_CREATE = 1, SCHEMA_ALTER, SCHEMA_DROP, SCHEMA_TRUNCATE };

/* CREATE, ALTER, DROP, TRUNCATE (after blanks and comments): SCHEMA_*, or 0. */
static int is_schema_statement(const char *cql)
{
    const char *p = cql;
    for (;;) {
        while (isspace((unsigned char)*p)) p++;
        if (p[0] == '-' && p[1] == '-') {
            while (*p && *p != '\n') p++;
        } else if (p[0] == '/' && p[1] == '/') {
            while (*p && *p != '\n') p++;
        } else if (p[0] == '/' && p[1] == '*') {
            const char *end = strstr(p + 2, "*/");
            p = end ? end + 2 : p + strlen(p);
        } else {
            break;
        }
    }
    static const char *const words[] = {"CREATE", "ALTER", "DROP", "TRUNCATE"};
    for (size_t i = 0; i < sizeof words / sizeof words[0]; i++) {
        size_t n = strlen(words[i]);
        if (!strncasecmp(p, words[i], n) && !isalnum((unsigned char)p[n]) && p[n] != '_') return (int)i + 1;
    }
    return 0;
}

/* A schema statement (is_schema_statement's kind) that says it may run twice: CREATE ...
 * IF NOT EXISTS, DROP ... IF EXISTS. */
static int may_run_twice(const char *cql, int kind)
{
    const char *want = kind == SCHEMA_CREATE ? "IF NOT EXISTS" : kind == SCHEMA_DROP ? "IF EXISTS" : NULL;
    size_t n = want ? strlen(want) : 0;
    for (const char *p = cql; want && *p; p++)
        if (!strncasecmp(p, want, n) && p > cql && isspace((unsigned char)p[-1]) && !isalnum((unsigned char)p[n])) return 1;
    return 0;
}

static request *build_query(kp_cql_client *c, const char *cql, const kp_cql_values *values, const kp_cql_params *params,
                            kp_error *err)
{
    if (!cql) {
        kp_error_set(err, KP_ERR_INTERNAL, NULL, 0, 0, "a CQL query without text");
        return NULL;
    }
    request *rq = request_new(KP_CQL_OP_QUERY, cql);
    if (!rq) {
        kp_error_set(err, KP_ERR_NOMEM, NULL, 0, 0, "out of memory");
        return NULL;
    }
    kp_cql_params p = effective_params(c, params, values);
    rq->no_retry_after_send = params && params->no_retry_after_send;
    int kind = is_schema_statement(cql);
    if (kind) {
        /* a schema change can take long (schema agreement), and sent twice a CREATE says
         * "already exists": wait longer, and never resend one whose outcome is unknown
         * unless it says it may run twice (IF NOT EXISTS, IF EXISTS) */
        rq->timeout_ms = c->request_timeout_ms > SCHEMA_TIMEOUT_MS ? c->request_timeout_ms : SCHEMA_TIMEOUT_MS;
        if (!may_run_twice(cql, kind)) rq->no_retry_after_send = 1;
    }
    if (kp_cql_encode_query(&rq->frame, 0, cql, &p, err)) {
        request_free(rq);
        return NULL;
    }
    return rq;
}

static request *build_execute(kp_cql_client *c, const kp_cql_prepared *prepared, const kp_cql_values *values,
                              const kp_cql_params *params, kp_error *err)
{
    if (!prepared) {
        kp_error_set(err, KP_ERR_INTERNAL, NULL, 0, 0, "EXECUTE without a prepared statement");
        return NULL;
    }
    request *rq = request_new(KP_CQL_OP_EXECUTE, prepared->cql);
    if (!rq) {
        kp_error_set(err, KP_ERR_NOMEM, NULL, 0, 0, "out of memory");
        return NULL;
    }
    kp_cql_params p = effective_params(c, params, values);
    rq->prepared = prepared;
    rq->no_retry_after_send = params && params->no_retry_after_send;
    if (kp_cql_encode_execute(&rq->frame, 0, prepared->id, prepared->id_len, &p, err)) {
        request_free(rq);
        return NULL;
    }
    return rq;
}

static request *build_batch(kp_cql_client *c, kp_cql_batch_type type, const kp_cql_batch_entry *entries, size_t count,
                            const kp_cql_params *params, kp_error *err)
{
    if (count == 0 || count > 65535) {
        kp_error_set(err, KP_ERR_INTERNAL, NULL, 0, 0, "a CQL batch holds 1 to 65,535 statements, not %zu", count);
        return NULL;
    }
    kp_cql_batch_statement *statements = calloc(count, sizeof *statements);
    const kp_cql_prepared **prepared = calloc(count, sizeof *prepared);
    char label[96];
    snprintf(label, sizeof label, "%s BATCH of %zu statements",
             type == KP_CQL_BATCH_LOGGED ? "LOGGED" : type == KP_CQL_BATCH_UNLOGGED ? "UNLOGGED" : "COUNTER", count);
    request *rq = statements && prepared ? request_new(KP_CQL_OP_BATCH, label) : NULL;
    if (!rq) {
        free(statements);
        free(prepared);
        kp_error_set(err, KP_ERR_NOMEM, NULL, 0, 0, "out of memory");
        return NULL;
    }
    for (size_t i = 0; i < count; i++) {
        if (entries[i].prepared) {
            statements[i].prepared_id = entries[i].prepared->id;
            statements[i].prepared_id_len = entries[i].prepared->id_len;
            prepared[i] = entries[i].prepared;
        } else {
            statements[i].cql = entries[i].cql;
        }
        statements[i].values = entries[i].values;
    }
    kp_cql_batch batch = {.type = (uint8_t)type, .statements = statements, .count = (uint16_t)count,
                          .consistency = params && params->consistency ? params->consistency : c->consistency,
                          .serial_consistency = params ? params->serial_consistency : 0,
                          .has_default_timestamp = params && params->has_default_timestamp,
                          .default_timestamp = params ? params->default_timestamp : 0};
    rq->batch_prepared = prepared;
    rq->batch_prepared_count = count;
    rq->no_retry_after_send = (params && params->no_retry_after_send) || type == KP_CQL_BATCH_COUNTER;
    int rc = kp_cql_encode_batch(&rq->frame, 0, &batch, err);
    free(statements);
    if (rc) {
        request_free(rq);
        return NULL;
    }
    return rq;
}

/* ---- public calls ----------------------------------------------------------------------------------------- */

int kp_cql_query(kp_cql_client *c, const char *cql, const kp_cql_values *values, const kp_cql_params *params,
                 kp_cql_response *out, kp_error *err)
{
    if (out) memset(out, 0, sizeof *out);
    if (check_not_in_callback(c, err)) return -1;
    request *rq = build_query(c, cql, values, params, err);
    return rq ? run_sync(c, rq, out, err) : -1;
}

int kp_cql_execute(kp_cql_client *c, const kp_cql_prepared *prepared, const kp_cql_values *values,
                   const kp_cql_params *params, kp_cql_response *out, kp_error *err)
{
    if (out) memset(out, 0, sizeof *out);
    if (check_not_in_callback(c, err)) return -1;
    request *rq = build_execute(c, prepared, values, params, err);
    return rq ? run_sync(c, rq, out, err) : -1;
}

int kp_cql_batch_execute(kp_cql_client *c, kp_cql_batch_type type, const kp_cql_batch_entry *entries, size_t count,
                         const kp_cql_params *params, kp_cql_response *out, kp_error *err)
{
    if (out) memset(out, 0, sizeof *out);
    if (check_not_in_callback(c, err)) return -1;
    request *rq = build_batch(c, type, entries, count, params, err);
    return rq ? run_sync(c, rq, out, err) : -1;
}

int kp_cql_execute_async(kp_cql_client *c, const kp_cql_prepared *prepared, const kp_cql_values *values,
                         const kp_cql_params *params, kp_cql_done_fn done, void *ctx, kp_error *err)
{
    request *rq = build_execute(c, prepared, values, params, err);
    if (!rq) return -1;
    rq->done = done;
    rq->ctx = ctx;
    queue_push_back(c, rq);
    return 0;
}

int kp_cql_query_async(kp_cql_client *c, const char *cql, const kp_cql_values *values, const kp_cql_params *params,
                       kp_cql_done_fn done, void *ctx, kp_error *err)
{
    request *rq = build_query(c, cql, values, params, err);
    if (!rq) return -1;
    rq->done = done;
    rq->ctx = ctx;
    queue_push_back(c, rq);
    return 0;
}

int kp_cql_batch_async(kp_cql_client *c, kp_cql_batch_type type, const kp_cql_batch_entry *entries, size_t count,
                       const kp_cql_params *params, kp_cql_done_fn done, void *ctx, kp_error *err)
{
    request *rq = build_batch(c, type, entries, count, params, err);
    if (!rq) return -1;
    rq->done = done;
    rq->ctx = ctx;
    queue_push_back(c, rq);
    return 0;
}

int kp_cql_poll(kp_cql_client *c, int timeout_ms, kp_error *err)
{
    if (check_not_in_callback(c, err)) return -1;
    drive(c, timeout_ms);
    return kp_cql_pending(c);
}

static unsigned hash_text(const char *s)
{
    uint32_t h = 2166136261u;
    for (; *s; s++) h = (h ^ (uint8_t)*s) * 16777619u;
    return h % PREPARED_BUCKETS;
}

int kp_cql_prepare(kp_cql_client *c, const char *cql, const kp_cql_prepared **out, kp_error *err)
{
    *out = NULL;
    if (check_not_in_callback(c, err)) return -1;
    unsigned b = hash_text(cql);
    for (kp_cql_prepared *p = c->prepared[b]; p; p = p->next)
        if (!strcmp(p->cql, cql)) {
            *out = p;
            return 0;
        }
    request *rq = request_new(KP_CQL_OP_PREPARE, cql);
    if (!rq) return kp_error_set(err, KP_ERR_NOMEM, NULL, 0, 0, "out of memory");
    if (kp_cql_encode_prepare(&rq->frame, 0, cql, err)) {
        request_free(rq);
        return -1;
    }
    kp_cql_response r;
    if (run_sync(c, rq, &r, err)) return -1;
    if (r.header.opcode != KP_CQL_OP_RESULT || r.result_kind != KP_CQL_RESULT_PREPARED) {
        kp_cql_response_free(&r);
        return kp_error_set(err, KP_ERR_TARGET, NULL, 0, 0, "Cassandra answered a PREPARE with result kind %" PRId32,
                            r.result_kind);
    }
    kp_cql_prepared *p = calloc(1, sizeof *p);
    int ok = p != NULL;
    if (ok) {
        p->cql = kp_arena_strdup(&p->arena, cql);
        p->id = kp_arena_alloc(&p->arena, r.prepared_id_len ? r.prepared_id_len : 1);
        ok = p->cql && p->id && !kp_cql_metadata_copy(&r.metadata, &p->arena, &p->variables) &&
             !kp_cql_metadata_copy(&r.result_metadata, &p->arena, &p->columns);
        if (ok) {
            memcpy(p->id, r.prepared_id, r.prepared_id_len);
            p->id_len = r.prepared_id_len;
        }
    }
    kp_cql_response_free(&r);
    if (!ok) {
        if (p) kp_arena_free(&p->arena);
        free(p);
        return kp_error_set(err, KP_ERR_NOMEM, NULL, 0, 0, "out of memory");
    }
    p->next = c->prepared[b];
    c->prepared[b] = p;
    *out = p;
    return 0;
}

const kp_cql_metadata *kp_cql_prepared_variables(const kp_cql_prepared *p) { return &p->variables; }
const kp_cql_metadata *kp_cql_prepared_columns(const kp_cql_prepared *p) { return &p->columns; }
const char *kp_cql_prepared_text(const kp_cql_prepared *p) { return p->cql; }

int kp_cql_use_keyspace(kp_cql_client *c, const char *keyspace, kp_error *err)
{
    if (check_not_in_callback(c, err)) return -1;
    char *copy = strdup(keyspace);
    if (!copy) return kp_error_set(err, KP_ERR_NOMEM, NULL, 0, 0, "out of memory");
    free(c->keyspace);
    c->keyspace = copy;
    char quoted[600], cql[640];
    kp_cql_quote_identifier(keyspace, quoted, sizeof quoted);
    snprintf(cql, sizeof cql, "USE %s", quoted);
    for (int i = 0; i < c->conn_count; i++) {
        if (!c->conns[i].is_open) continue;
        request *rq = build_query(c, cql, NULL, NULL, err);
        if (!rq) return -1;
        rq->pinned_conn = i;
        if (run_sync(c, rq, NULL, err)) return -1;
    }
    return 0;
}

int kp_cql_fetch_all(kp_cql_client *c, const kp_cql_prepared *prepared, const char *cql, const kp_cql_values *values,
                     int32_t page_size, cJSON **rows, int *pages, kp_error *err)
{
    if (pages) *pages = 0;
    int created = 0;
    if (!*rows) {
        if (!(*rows = cJSON_CreateArray())) return kp_error_set(err, KP_ERR_NOMEM, NULL, 0, 0, "out of memory");
        created = 1;
    }
    kp_cql_params params = {.page_size = page_size > 0 ? page_size : 5000};
    uint8_t *state = NULL;
    int rc = 0;
    for (;;) {
        kp_cql_response r;
        rc = prepared ? kp_cql_execute(c, prepared, values, &params, &r, err) : kp_cql_query(c, cql, values, &params, &r, err);
        if (rc) break;
        if (pages) (*pages)++;
        if (r.header.opcode != KP_CQL_OP_RESULT || r.result_kind != KP_CQL_RESULT_ROWS) {
            kp_cql_response_free(&r);
            rc = kp_error_set(err, KP_ERR_TARGET, NULL, 0, 0, "a statement read page by page returned no rows result");
            break;
        }
        cJSON *row;
        while (r.rows && (row = cJSON_DetachItemFromArray(r.rows, 0))) cJSON_AddItemToArray(*rows, row);
        free(state);
        state = NULL;
        if ((r.metadata.flags & KP_CQL_MD_HAS_MORE_PAGES) && r.metadata.paging_state) {
            state = malloc((size_t)r.metadata.paging_state_len + 1);
            if (!state) {
                kp_cql_response_free(&r);
                rc = kp_error_set(err, KP_ERR_NOMEM, NULL, 0, 0, "out of memory");
                break;
            }
            memcpy(state, r.metadata.paging_state, (size_t)r.metadata.paging_state_len);
            params.paging_state = state;
            params.paging_state_len = r.metadata.paging_state_len;
            kp_cql_response_free(&r);
            continue;
        }
        kp_cql_response_free(&r);
        break;
    }
    free(state);
    if (rc && created) {
        cJSON_Delete(*rows);
        *rows = NULL;
    }
    return rc;
}
