/*
 * test_cql_client.c — the CQL client without Cassandra: where the node and the
 * credentials come from, redaction, the backoff schedule, and — against a scripted
 * CQL server forked from the test (the codec on the other side) — the handshake with
 * and without PasswordAuthenticator, answers out of order across many streams,
 * retries of Overloaded / timeouts and what is never retried, client-side timeouts
 * whose late answers are dropped, re-prepare after Unprepared, a dropped connection
 * reopened, an unreadable answer, and close failing what is still pending — with no
 * credential in any message.
 */
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include "backends/cassandra/cql_client.h"

#define FAKE_USER "kpuser"
#define FAKE_PASSWORD "kpSECRETpass42"

static void clear_env(void)
{
    static const char *const names[] = {"CASSANDRA_HOST", "CASSANDRA_PORT", "CASSANDRA_USERNAME",
                                        "CASSANDRA_PASSWORD", "CASSANDRA_SSL", "CASSANDRA_SSL_CA", NULL};
    for (size_t i = 0; names[i]; i++) unsetenv(names[i]);
}

/* ---- settings, redaction, backoff ------------------------------------------------------ */

static void test_the_node_comes_from_the_target_then_the_environment_then_the_default(void **state)
{
    (void)state;
    clear_env();
    kp_cql_settings s;
    kp_error err;
    assert_int_equal(kp_cql_settings_resolve(NULL, &s, &err), 0);
    assert_string_equal(s.host, "127.0.0.1");
    assert_int_equal(s.port, 9042);
    assert_string_equal(s.source, "the default");
    assert_true(s.is_loopback);
    assert_false(s.use_tls);
    assert_null(s.username);
    kp_cql_settings_clear(&s);

    setenv("CASSANDRA_HOST", "localhost, 10.0.0.2", 1);
    setenv("CASSANDRA_PORT", "19042", 1);
    assert_int_equal(kp_cql_settings_resolve(NULL, &s, &err), 0);
    assert_string_equal(s.host, "localhost");
    assert_int_equal(s.port, 19042);
    assert_string_equal(s.source, "CASSANDRA_HOST");
    kp_cql_settings_clear(&s);

    setenv("CASSANDRA_HOST", "[::1]:9999", 1);
    assert_int_equal(kp_cql_settings_resolve(NULL, &s, &err), 0);
    assert_string_equal(s.host, "::1");
    assert_int_equal(s.port, 9999);   /* a port in the host wins over CASSANDRA_PORT */
    assert_true(s.is_loopback);
    kp_cql_settings_clear(&s);

    kp_cql_config cfg = {.target = "127.0.0.7"};
    assert_int_equal(kp_cql_settings_resolve(&cfg, &s, &err), 0);
    assert_string_equal(s.host, "127.0.0.7");
    assert_int_equal(s.port, 19042);   /* CASSANDRA_PORT still applies */
    assert_string_equal(s.source, "--target");
    kp_cql_settings_clear(&s);

    cfg.target = "tls://db.example.com:9142";
    assert_int_equal(kp_cql_settings_resolve(&cfg, &s, &err), 0);
    assert_true(s.use_tls);
    assert_false(s.is_loopback);
    assert_int_equal(s.port, 9142);
    kp_cql_settings_clear(&s);

    cfg.target = "2001:db8::7";
    cfg.is_insecure = 1;
    assert_int_equal(kp_cql_settings_resolve(&cfg, &s, &err), 0);
    assert_string_equal(s.host, "2001:db8::7");
    kp_cql_settings_clear(&s);

    setenv("CASSANDRA_USERNAME", FAKE_USER, 1);
    setenv("CASSANDRA_PASSWORD", FAKE_PASSWORD, 1);
    cfg = (kp_cql_config){.target = "127.0.0.1"};
    assert_int_equal(kp_cql_settings_resolve(&cfg, &s, &err), 0);
    assert_string_equal(s.username, FAKE_USER);
    assert_string_equal(s.password, FAKE_PASSWORD);
    kp_cql_settings_clear(&s);
    clear_env();
}

static void test_bad_targets_are_usage_errors_that_never_echo_a_password(void **state)
{
    (void)state;
    clear_env();
    kp_cql_settings s;
    kp_error err;
    const char *bad[] = {"user:" FAKE_PASSWORD "@127.0.0.1:9042", "127.0.0.1:0", "127.0.0.1:70000", "host:port",
                         "[::1", "a b", ""};
    for (size_t i = 0; i + 1 < sizeof bad / sizeof bad[0]; i++) {
        kp_cql_config cfg = {.target = bad[i]};
        assert_int_equal(kp_cql_settings_resolve(&cfg, &s, &err), -1);
        assert_int_equal(err.code, KP_ERR_USAGE);
        assert_null(strstr(err.message, FAKE_PASSWORD));
    }
    setenv("CASSANDRA_PORT", "nine", 1);
    assert_int_equal(kp_cql_settings_resolve(NULL, &s, &err), -1);
    assert_non_null(strstr(err.message, "CASSANDRA_PORT"));
    clear_env();
    kp_cql_config no_user = {.password = FAKE_PASSWORD};
    assert_int_equal(kp_cql_settings_resolve(&no_user, &s, &err), -1);
    assert_non_null(strstr(err.message, "CASSANDRA_USERNAME"));
    assert_null(strstr(err.message, FAKE_PASSWORD));
    kp_cql_config remote = {.target = "db.example.com"};
    assert_int_equal(kp_cql_settings_resolve(&remote, &s, &err), -1);
    assert_non_null(strstr(err.message, "tls://db.example.com:9042"));
    assert_non_null(strstr(err.message, "--insecure"));
}

static void test_redaction_removes_password_literals_and_the_secret(void **state)
{
    (void)state;
    char text[512];
    snprintf(text, sizeof text, "CREATE ROLE r WITH PASSWORD = 'hunter2''s' AND LOGIN = true; ALTER USER u "
                                "WITH password 'abc' ; HASHED PASSWORD '$2a$10$xyz'; PASSWORD $$dollar$$ x " FAKE_PASSWORD);
    kp_cql_redact(text, FAKE_PASSWORD);
    assert_null(strstr(text, "hunter2"));
    assert_null(strstr(text, "abc"));
    assert_null(strstr(text, "xyz"));
    assert_null(strstr(text, "dollar"));
    assert_null(strstr(text, FAKE_PASSWORD));
    assert_non_null(strstr(text, "AND LOGIN = true"));
    assert_string_equal(text, "CREATE ROLE r WITH PASSWORD = '***' AND LOGIN = true; ALTER USER u WITH password "
                              "'***' ; HASHED PASSWORD '***'; PASSWORD '***' x ***");
    snprintf(text, sizeof text, "password: 'unterminated");
    kp_cql_redact(text, NULL);
    assert_null(strstr(text, "unterminated"));
    snprintf(text, sizeof text, "no secrets here, the password is ok");
    kp_cql_redact(text, "ab");   /* too short to redact bare */
    assert_string_equal(text, "no secrets here, the password is ok");
}

static void test_backoff_is_full_jitter_within_the_exponential_ceiling(void **state)
{
    (void)state;
    uint64_t rng = 12345;
    for (int attempt = 0; attempt < 12; attempt++) {
        long ceiling = attempt < 6 ? 50L << attempt : 2000;
        if (ceiling > 2000) ceiling = 2000;
        long max_seen = 0;
        for (int i = 0; i < 2000; i++) {
            long b = kp_cql_backoff_ms(attempt, &rng);
            assert_true(b >= 0 && b <= ceiling);
            if (b > max_seen) max_seen = b;
        }
        assert_true(max_seen > ceiling / 2);
    }
}

/* ---- the scripted server ------------------------------------------------------------------ */

/*
 * Statements the fake server understands (QUERY text):
 *   "echo N"          Rows [{n: N}]; answers to one read are sent in reverse order
 *   "overloaded K"    Overloaded K times (counted per text), then Void
 *   "wt counter"      Write timeout with write type COUNTER, always
 *   "wt simple K"     Write timeout (SIMPLE) K times, then Void
 *   "syntax"          Syntax error
 *   "slow once"       the first time answered after 600 ms, then at once
 *   "never"           never answered
 *   "hangup once"     the first time the connection is closed, then Void
 *   "hangup K"        the connection closed K times, then Void
 *   "CREATE ...", "DROP ..."   as "hangup once"
 *   "garbage"         a RESULT whose body is cut short (its length is right)
 * PREPARE x: Prepared with id = 4 bytes of a hash of x and a bind variable v int.
 * EXECUTE: the first EXECUTE of each id gets Unprepared; then Rows [{v: <bound int>}].
 */
typedef struct fake_conn {
    int fd;
    SSL *ssl;
    uint8_t in[1 << 16];
    size_t len;
} fake_conn;

static int fake_auth;
static SSL_CTX *fake_tls;   /* non-NULL: the server speaks TLS */
static int counters[1024];
static char *counted[1024]; /* the statement each counter counts (the last one: all others) */
static int executed_ids[64];
static int executed_count;

/* Every statement text has a counter of its own (the server process's). */
static int counter_for(const char *cql)
{
    int i = 0;
    while (i < 1023 && counted[i] && strcmp(counted[i], cql) != 0) i++;
    if (!counted[i]) counted[i] = strdup(cql);
    return i;
}

static void send_frame(fake_conn *fc, kp_cql_buf *b)
{
    size_t done = 0;
    while (done < b->len) {
        ssize_t w = fc->ssl ? SSL_write(fc->ssl, b->data + done, (int)(b->len - done))
                            : write(fc->fd, b->data + done, b->len - done);
        if (w <= 0) return;
        done += (size_t)w;
    }
    kp_cql_buf_reset(b);
}

static void close_fake(fake_conn *fc)
{
    if (fc->ssl) SSL_free(fc->ssl);
    close(fc->fd);
    free(fc);
}

static kp_cql_response answer(uint8_t opcode, int16_t stream)
{
    kp_cql_response r;
    memset(&r, 0, sizeof r);
    r.header.opcode = opcode;
    r.header.stream = stream;
    r.token_len = -1;
    return r;
}

static void send_error(kp_cql_buf *out, int16_t stream, int32_t code, const char *message, const char *write_type)
{
    kp_cql_response r = answer(KP_CQL_OP_ERROR, stream);
    r.error.code = code;
    r.error.message = message;
    r.error.write_type = write_type;
    r.error.consistency = KP_CQL_ONE;
    r.error.block_for = 1;
    kp_error err;
    kp_cql_response_encode(&r, NULL, out, &err);
}

static void send_void(kp_cql_buf *out, int16_t stream)
{
    kp_cql_response r = answer(KP_CQL_OP_RESULT, stream);
    r.result_kind = KP_CQL_RESULT_VOID;
    kp_error err;
    kp_cql_response_encode(&r, NULL, out, &err);
}

static void send_int_row(kp_cql_buf *out, int16_t stream, const char *name, const char *value_text)
{
    static kp_arena arena;
    static const kp_cql_type *int_type;
    kp_error err;
    if (!int_type) kp_cql_type_parse("int", &arena, &int_type, &err);
    kp_cql_column column = {"k", "t", name, int_type};
    kp_cql_response r = answer(KP_CQL_OP_RESULT, stream);
    r.result_kind = KP_CQL_RESULT_ROWS;
    r.metadata = (kp_cql_metadata){.flags = KP_CQL_MD_GLOBAL_TABLES_SPEC, .column_count = 1, .columns = &column};
    r.rows = cJSON_CreateArray();
    cJSON *row = cJSON_CreateObject();
    cJSON_AddItemToObject(row, name, cJSON_CreateRaw(value_text));
    cJSON_AddItemToArray(r.rows, row);
    kp_cql_response_encode(&r, NULL, out, &err);
    cJSON_Delete(r.rows);
}

/* Answers one request; returns -1 to close the connection. Delayed answers go to *late. */
static int serve(const kp_cql_request *rq, kp_cql_buf *out, kp_cql_buf *late, kp_arena *arena)
{
    kp_error err;
    int16_t s = rq->stream;
    switch (rq->opcode) {
    case KP_CQL_OP_STARTUP:
        if (fake_auth) {
            kp_cql_response r = answer(KP_CQL_OP_AUTHENTICATE, s);
            r.authenticator = "org.apache.cassandra.auth.PasswordAuthenticator";
            kp_cql_response_encode(&r, NULL, out, &err);
        } else {
            kp_cql_response r = answer(KP_CQL_OP_READY, s);
            kp_cql_response_encode(&r, NULL, out, &err);
        }
        return 0;
    case KP_CQL_OP_AUTH_RESPONSE: {
        static const char want[] = "\0" FAKE_USER "\0" FAKE_PASSWORD;
        if (rq->token_len == (int32_t)(sizeof want - 1) && !memcmp(rq->token, want, sizeof want - 1)) {
            kp_cql_response r = answer(KP_CQL_OP_AUTH_SUCCESS, s);
            kp_cql_response_encode(&r, NULL, out, &err);
        } else {
            send_error(out, s, KP_CQL_ERR_BAD_CREDENTIALS, "Provided username and/or password are incorrect", NULL);
        }
        return 0;
    }
    case KP_CQL_OP_PREPARE: {
        uint8_t id[4];
        unsigned h = 5381;
        for (const char *p = rq->cql; *p; p++) h = h * 33 + (unsigned char)*p;
        memcpy(id, &h, 4);
        static kp_arena types;
        static const kp_cql_type *int_type;
        if (!int_type) kp_cql_type_parse("int", &types, &int_type, &err);
        kp_cql_column var = {"k", "t", "v", int_type};
        uint16_t pk = 0;
        kp_cql_response r = answer(KP_CQL_OP_RESULT, s);
        r.result_kind = KP_CQL_RESULT_PREPARED;
        r.prepared_id = id;
        r.prepared_id_len = 4;
        r.metadata = (kp_cql_metadata){.flags = 1, .column_count = 1, .columns = &var, .pk_indexes = &pk, .pk_count = 1};
        r.result_metadata = (kp_cql_metadata){.flags = 1, .column_count = 1, .columns = &var};
        kp_cql_response_encode(&r, NULL, out, &err);
        return 0;
    }
    case KP_CQL_OP_EXECUTE: {
        int id;
        memcpy(&id, rq->prepared_id, 4);
        int seen = 0;
        for (int i = 0; i < executed_count; i++) seen |= executed_ids[i] == id;
        if (!seen) {
            if (executed_count < 64) executed_ids[executed_count++] = id;
            kp_cql_response r = answer(KP_CQL_OP_ERROR, s);
            r.error.code = KP_CQL_ERR_UNPREPARED;
            r.error.message = "Prepared query with ID ... not found";
            r.error.unprepared_id = rq->prepared_id;
            r.error.unprepared_id_len = rq->prepared_id_len;
            kp_cql_response_encode(&r, NULL, out, &err);
            return 0;
        }
        /* the bound int, read back through the codec */
        const kp_cql_values *v = rq->params.values;
        char text[32] = "0";
        if (v && v->count == 1 && v->buf.len == 8) {
            int32_t x = (int32_t)((uint32_t)v->buf.data[4] << 24 | (uint32_t)v->buf.data[5] << 16 |
                                  (uint32_t)v->buf.data[6] << 8 | v->buf.data[7]);
            snprintf(text, sizeof text, "%d", x);
        }
        send_int_row(out, s, "v", text);
        return 0;
    }
    case KP_CQL_OP_BATCH:
        send_void(out, s);
        return 0;
    case KP_CQL_OP_QUERY:
        break;
    default:
        send_error(out, s, KP_CQL_ERR_PROTOCOL, "unexpected", NULL);
        return 0;
    }
    const char *q = rq->cql;
    int k;
    int *count = &counters[counter_for(q)];
    if (!strncmp(q, "echo ", 5)) {
        send_int_row(out, s, "n", q + 5);
    } else if (sscanf(q, "overloaded %d", &k) == 1) {
        if ((*count)++ < k) send_error(out, s, KP_CQL_ERR_OVERLOADED, "Server is in overloaded state", NULL);
        else send_void(out, s);
    } else if (!strcmp(q, "wt counter")) {
        (*count)++;
        send_error(out, s, KP_CQL_ERR_WRITE_TIMEOUT, "Operation timed out", "COUNTER");
    } else if (sscanf(q, "wt simple %d", &k) == 1) {
        if ((*count)++ < k) send_error(out, s, KP_CQL_ERR_WRITE_TIMEOUT, "Operation timed out", "SIMPLE");
        else send_void(out, s);
    } else if (!strcmp(q, "syntax")) {
        (*count)++;
        send_error(out, s, KP_CQL_ERR_SYNTAX, "line 1:0 no viable alternative at input 'syntax'", NULL);
    } else if (!strcmp(q, "slow once")) {
        send_void((*count)++ == 0 ? late : out, s);
    } else if (!strcmp(q, "never")) {
        (*count)++;
    } else if (!strcmp(q, "hangup once")) {
        if ((*count)++ == 0) return -1;
        send_void(out, s);
    } else if (!strncmp(q, "CREATE ", 7) || !strncmp(q, "DROP ", 5)) {
        if ((*count)++ == 0) return -1;
        send_void(out, s);
    } else if (sscanf(q, "hangup %d", &k) == 1) {
        if ((*count)++ < k) return -1;
        send_void(out, s);
    } else if (!strcmp(q, "garbage")) {
        kp_cql_header h = {0x84, 0, s, KP_CQL_OP_RESULT, 6};
        uint8_t frame[15];
        kp_cql_header_encode(&h, frame);
        memcpy(frame + 9, "\0\0\0\x02\0\0", 6);   /* Rows, then a cut metadata */
        for (size_t i = 0; i < sizeof frame; i++) {
            if (out->len == out->cap) {
                out->cap = out->cap ? out->cap * 2 : 256;
                out->data = realloc(out->data, out->cap);
            }
            out->data[out->len++] = frame[i];
        }
    } else {
        char message[512];
        snprintf(message, sizeof message, "unknown statement %s", q);
        send_error(out, s, KP_CQL_ERR_INVALID, message, NULL);
    }
    (void)arena;
    return 0;
}

static void fake_server_loop(int listener)
{
    fake_conn *conns[8] = {0};
    kp_cql_buf late[8] = {{0}};
    long long late_due[8] = {0};
    for (;;) {
        struct pollfd fds[9];
        int n = 0;
        fds[n++] = (struct pollfd){.fd = listener, .events = POLLIN};
        for (int i = 0; i < 8; i++)
            if (conns[i]) fds[n++] = (struct pollfd){.fd = conns[i]->fd, .events = POLLIN};
        if (poll(fds, (nfds_t)n, 20) < 0 && errno != EINTR) _exit(1);
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        long long now = ts.tv_sec * 1000LL + ts.tv_nsec / 1000000;
        for (int i = 0; i < 8; i++)
            if (conns[i] && late[i].len && now >= late_due[i]) send_frame(conns[i], &late[i]);
        if (fds[0].revents & POLLIN) {
            int fd = accept(listener, NULL, NULL);
            SSL *ssl = NULL;
            if (fd >= 0 && fake_tls) {
                ssl = SSL_new(fake_tls);
                SSL_set_fd(ssl, fd);
                if (SSL_accept(ssl) != 1) {   /* the client gave up (a certificate it refused) */
                    SSL_free(ssl);
                    close(fd);
                    fd = -1;
                }
            }
            for (int i = 0; i < 8 && fd >= 0; i++)
                if (!conns[i]) {
                    conns[i] = calloc(1, sizeof *conns[i]);
                    conns[i]->fd = fd;
                    conns[i]->ssl = ssl;
                    fd = -1;
                }
            if (fd >= 0) close(fd);
        }
        for (int i = 0; i < 8; i++) {
            fake_conn *fc = conns[i];
            if (!fc) continue;
            struct pollfd p = {.fd = fc->fd, .events = POLLIN};
            if (!(fc->ssl && SSL_pending(fc->ssl)) && poll(&p, 1, 0) <= 0) continue;
            ssize_t r = fc->ssl ? SSL_read(fc->ssl, fc->in + fc->len, (int)(sizeof fc->in - fc->len))
                                : read(fc->fd, fc->in + fc->len, sizeof fc->in - fc->len);
            if (r <= 0) {
                close_fake(fc);
                conns[i] = NULL;
                continue;
            }
            fc->len += (size_t)r;
            /* every complete request of this read, answered in reverse order */
            kp_cql_buf answers[64];
            int count = 0, drop = 0;
            size_t pos = 0;
            while (fc->len - pos >= 9 && count < 64) {
                kp_cql_header h;
                kp_error err;
                if (kp_cql_header_decode(fc->in + pos, fc->len - pos, 0, 0, &h, &err)) _exit(2);
                if (fc->len - pos < 9 + h.length) break;
                kp_arena arena = {0};
                kp_cql_request rq;
                memset(&answers[count], 0, sizeof answers[count]);
                if (kp_cql_request_decode(fc->in + pos, 9 + h.length, &arena, &rq, &err)) _exit(3);
                if (serve(&rq, &answers[count], &late[i], &arena)) drop = 1;
                if (late[i].len && !late_due[i]) late_due[i] = now + 600;
                kp_cql_request_free_values(&rq);
                kp_arena_free(&arena);
                count++;
                pos += 9 + h.length;
            }
            memmove(fc->in, fc->in + pos, fc->len - pos);
            fc->len -= pos;
            for (int a = count - 1; a >= 0; a--) {
                if (!drop) send_frame(fc, &answers[a]);
                kp_cql_buf_free(&answers[a]);
            }
            if (drop) {
                close_fake(fc);
                conns[i] = NULL;
            }
        }
        for (int i = 0; i < 8; i++)
            if (!late[i].len) late_due[i] = 0;
    }
}

static pid_t server_pid;
static int server_port;

static void start_fake_server(int with_auth)
{
    int listener = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in addr = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    int one = 1;
    setsockopt(listener, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    assert_int_equal(bind(listener, (struct sockaddr *)&addr, sizeof addr), 0);
    socklen_t len = sizeof addr;
    getsockname(listener, (struct sockaddr *)&addr, &len);
    server_port = ntohs(addr.sin_port);
    assert_int_equal(listen(listener, 16), 0);
    pid_t parent = getpid();
    server_pid = fork();
    if (server_pid == 0) {
        /* never outlive the test (a failed assertion skips stop_fake_server) */
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (getppid() != parent) _exit(0);
        fake_auth = with_auth;
        fake_server_loop(listener);
        _exit(0);
    }
    close(listener);
}

static void stop_fake_server(void)
{
    if (server_pid <= 0) return;
    kill(server_pid, SIGKILL);
    waitpid(server_pid, NULL, 0);
    server_pid = 0;
}

/* After every test, also a failed one. */
static int reap_fake_server(void **state)
{
    (void)state;
    stop_fake_server();
    return 0;
}

static kp_cql_client *open_client(int timeout_ms, int retries, kp_error *err)
{
    char target[64];
    snprintf(target, sizeof target, "127.0.0.1:%d", server_port);
    kp_cql_config cfg = {.target = target, .request_timeout_ms = timeout_ms, .max_retries = retries,
                         .max_in_flight = 32};
    kp_cql_client *c = NULL;
    if (kp_cql_client_open(&cfg, &c, err)) return NULL;
    return c;
}

/* ---- against the scripted server ------------------------------------------------------------ */

typedef struct echo_state {
    int answered[200];
    int failed;
    int calls;
} echo_state;

typedef struct echo_ctx {
    echo_state *state;
    int n;
} echo_ctx;

static void on_echo(void *ctx, const kp_cql_response *response, const kp_cql_failure *failure)
{
    echo_ctx *e = ctx;
    e->state->calls++;
    if (failure) {
        e->state->failed++;
        return;
    }
    const cJSON *n = cJSON_GetObjectItem(response->rows->child, "n");
    if (n && atoi(n->valuestring) == e->n) e->state->answered[e->n]++;
}

/* Queues "echo K" for K in [from, from + n), each answered into s through ctx[K]. */
static void queue_echoes(kp_cql_client *c, echo_state *s, echo_ctx *ctx, int from, int n)
{
    kp_error err;
    char cql[32];
    for (int i = from; i < from + n; i++) {
        ctx[i] = (echo_ctx){s, i};
        snprintf(cql, sizeof cql, "echo %d", i);
        assert_int_equal(kp_cql_query_async(c, cql, NULL, NULL, on_echo, &ctx[i], &err), 0);
    }
}

static void test_answers_out_of_order_reach_their_own_requests(void **state)
{
    (void)state;
    clear_env();
    start_fake_server(0);
    kp_error err;
    kp_cql_client *c = open_client(0, 0, &err);
    assert_non_null(c);
    echo_state s;
    memset(&s, 0, sizeof s);
    echo_ctx ctx[200];
    queue_echoes(c, &s, ctx, 0, 200);
    assert_int_equal(kp_cql_pending(c), 200);
    int guard = 0;
    while (kp_cql_poll(c, 1000, &err) > 0 && guard++ < 1000) {}
    assert_int_equal(s.calls, 200);
    assert_int_equal(s.failed, 0);
    for (int i = 0; i < 200; i++) assert_int_equal(s.answered[i], 1);
    /* a synchronous call in between works too */
    kp_cql_response r;
    assert_int_equal(kp_cql_query(c, "echo 7", NULL, NULL, &r, &err), 0);
    assert_string_equal(cJSON_GetObjectItem(r.rows->child, "n")->valuestring, "7");
    kp_cql_response_free(&r);
    kp_cql_client_close(c);
    stop_fake_server();
}

static void test_overloaded_and_timeouts_are_retried_but_counters_and_syntax_are_not(void **state)
{
    (void)state;
    start_fake_server(0);
    kp_error err;
    kp_cql_client *c = open_client(0, 3, &err);
    assert_non_null(c);
    assert_int_equal(kp_cql_query(c, "overloaded 2", NULL, NULL, NULL, &err), 0);
    assert_int_equal(kp_cql_client_stats(c).retries, 2);
    assert_int_equal(kp_cql_query(c, "wt simple 1", NULL, NULL, NULL, &err), 0);
    assert_int_equal(kp_cql_client_stats(c).retries, 3);
    /* out of retries: the message says how many attempts */
    assert_int_equal(kp_cql_query(c, "overloaded 10", NULL, NULL, NULL, &err), -1);
    assert_int_equal(kp_cql_last_error_code(c), KP_CQL_ERR_OVERLOADED);
    assert_non_null(strstr(err.message, "after 4 attempts"));
    assert_non_null(strstr(err.message, "Overloaded, code 0x1001"));
    unsigned long before = kp_cql_client_stats(c).requests;
    assert_int_equal(kp_cql_query(c, "wt counter", NULL, NULL, NULL, &err), -1);
    assert_int_equal(kp_cql_client_stats(c).requests, before + 1);
    assert_non_null(strstr(err.message, "write type COUNTER"));
    assert_int_equal(kp_cql_query(c, "syntax", NULL, NULL, NULL, &err), -1);
    assert_int_equal(kp_cql_client_stats(c).requests, before + 2);
    assert_int_equal(kp_cql_last_error_code(c), KP_CQL_ERR_SYNTAX);
    assert_int_equal(err.code, KP_ERR_TARGET);
    assert_non_null(strstr(err.message, "refused \"syntax\": line 1:0 no viable alternative"));
    /* a statement marked as not to run twice is not retried on a write timeout */
    kp_cql_params once = {.no_retry_after_send = 1};
    assert_int_equal(kp_cql_query(c, "wt simple 1000", NULL, &once, NULL, &err), -1);
    kp_cql_client_close(c);
    stop_fake_server();
}

static void test_failures_narrow_the_window_and_answers_widen_it_again(void **state)
{
    (void)state;
    start_fake_server(0);
    kp_error err;
    kp_cql_client *c = open_client(0, 3, &err);
    assert_non_null(c);
    assert_int_equal(kp_cql_client_stats(c).window, 32);
    /* an overloaded node: half as many requests on the wire, once per failure */
    assert_int_equal(kp_cql_query(c, "overloaded 1", NULL, NULL, NULL, &err), 0);
    assert_int_equal(kp_cql_client_stats(c).window, 16);
    /* a broken connection: half again */
    assert_int_equal(kp_cql_query(c, "hangup once", NULL, NULL, NULL, &err), 0);
    assert_int_equal(kp_cql_client_stats(c).window, 8);
    assert_int_equal(kp_cql_client_stats(c).window_cuts, 2);
    /* answers widen it by one per window's worth: 8 + 9 + ... + 15 = 92 answers to reach 16 */
    echo_state s;
    memset(&s, 0, sizeof s);
    echo_ctx ctx[200];
    for (int round = 0; round < 2; round++) {
        queue_echoes(c, &s, ctx, round * 100, 100);
        int guard = 0;
        while (kp_cql_poll(c, 1000, &err) > 0 && guard++ < 1000) {}
    }
    assert_int_equal(s.failed, 0);
    kp_cql_stats st = kp_cql_client_stats(c);
    assert_true(st.window >= 16 && st.window <= 32);
    /* never past max_in_flight, however many answers */
    for (int i = 0; i < 600; i++) assert_int_equal(kp_cql_query(c, "echo 1", NULL, NULL, NULL, &err), 0);
    assert_int_equal(kp_cql_client_stats(c).window, 32);
    kp_cql_client_close(c);
    stop_fake_server();
}

static void test_a_lost_request_gets_more_retries_and_a_schema_change_only_when_it_may_run_twice(void **state)
{
    (void)state;
    start_fake_server(0);
    kp_error err;
    kp_cql_client *c = open_client(0, 1, &err);
    assert_non_null(c);
    /* a schema change lost with its connection is sent again only when it may run twice */
    assert_int_equal(kp_cql_query(c, "CREATE TABLE IF NOT EXISTS ks.t (k int PRIMARY KEY)", NULL, NULL, NULL, &err), 0);
    assert_int_equal(kp_cql_query(c, "DROP TABLE IF EXISTS ks.t", NULL, NULL, NULL, &err), 0);
    assert_int_equal(kp_cql_query(c, "CREATE TABLE ks.u (k int PRIMARY KEY)", NULL, NULL, NULL, &err), -1);
    assert_non_null(strstr(err.message, "not retried"));
    assert_int_equal(kp_cql_query(c, "DROP TABLE ks.\"if exists\"", NULL, NULL, NULL, &err), -1);
    /* a request lost with its connection gets twice the retries of one the server refuses */
    assert_int_equal(kp_cql_query(c, "hangup 2", NULL, NULL, NULL, &err), 0);
    assert_int_equal(kp_cql_query(c, "hangup 3", NULL, NULL, NULL, &err), -1);
    assert_non_null(strstr(err.message, "after 3 attempts"));
    assert_int_equal(kp_cql_query(c, "overloaded 2", NULL, NULL, NULL, &err), -1);
    assert_non_null(strstr(err.message, "after 2 attempts"));
    kp_cql_client_close(c);
    stop_fake_server();
}

static void test_a_late_answer_is_dropped_and_the_retry_answers(void **state)
{
    (void)state;
    start_fake_server(0);
    kp_error err;
    kp_cql_client *c = open_client(250, 3, &err);
    assert_non_null(c);
    assert_int_equal(kp_cql_query(c, "slow once", NULL, NULL, NULL, &err), 0);
    assert_int_equal(kp_cql_client_stats(c).timeouts, 1);
    /* the first attempt's answer arrives later on its orphaned stream: nothing breaks */
    struct timespec ts = {0, 500 * 1000000L};
    nanosleep(&ts, NULL);
    kp_cql_response r;
    assert_int_equal(kp_cql_query(c, "echo 3", NULL, NULL, &r, &err), 0);
    assert_string_equal(cJSON_GetObjectItem(r.rows->child, "n")->valuestring, "3");
    kp_cql_response_free(&r);
    /* never answered: retried, then a message with the timeout */
    assert_int_equal(kp_cql_query(c, "never", NULL, NULL, NULL, &err), -1);
    assert_non_null(strstr(err.message, "did not answer \"never\" within 250 ms"));
    assert_int_equal(kp_cql_last_error_code(c), -1);
    kp_cql_client_close(c);
    stop_fake_server();
}

static void test_unprepared_statements_are_prepared_again_and_resent(void **state)
{
    (void)state;
    start_fake_server(0);
    kp_error err;
    kp_cql_client *c = open_client(0, 0, &err);
    assert_non_null(c);
    const kp_cql_prepared *p, *same;
    assert_int_equal(kp_cql_prepare(c, "SELECT v FROM t WHERE v = ?", &p, &err), 0);
    assert_int_equal(kp_cql_prepare(c, "SELECT v FROM t WHERE v = ?", &same, &err), 0);
    assert_ptr_equal(p, same);
    assert_int_equal(kp_cql_prepared_variables(p)->column_count, 1);
    assert_string_equal(kp_cql_prepared_text(p), "SELECT v FROM t WHERE v = ?");
    kp_cql_values v = {0};
    cJSON *value = cJSON_CreateRaw("41");
    assert_int_equal(kp_cql_values_add_json(&v, NULL, kp_cql_prepared_variables(p)->columns[0].type, value, &err), 0);
    kp_cql_response r;
    assert_int_equal(kp_cql_execute(c, p, &v, NULL, &r, &err), 0);
    assert_string_equal(cJSON_GetObjectItem(r.rows->child, "v")->valuestring, "41");
    kp_cql_response_free(&r);
    assert_int_equal(kp_cql_client_stats(c).reprepares, 1);
    kp_cql_batch_entry entries[] = {{.prepared = p, .values = &v}, {.cql = "echo 1"}};
    assert_int_equal(kp_cql_batch_execute(c, KP_CQL_BATCH_UNLOGGED, entries, 2, NULL, NULL, &err), 0);
    cJSON_Delete(value);
    kp_cql_values_free(&v);
    kp_cql_client_close(c);
    stop_fake_server();
}

static void test_a_dropped_connection_is_reopened_and_unreadable_answers_fail_alone(void **state)
{
    (void)state;
    start_fake_server(0);
    kp_error err;
    kp_cql_client *c = open_client(0, 2, &err);
    assert_non_null(c);
    assert_int_equal(kp_cql_query(c, "hangup once", NULL, NULL, NULL, &err), 0);
    assert_int_equal(kp_cql_client_stats(c).reconnects, 1);
    assert_int_equal(kp_cql_query(c, "garbage", NULL, NULL, NULL, &err), -1);
    assert_non_null(strstr(err.message, "cannot read"));
    assert_int_equal(kp_cql_query(c, "echo 5", NULL, NULL, NULL, &err), 0);
    kp_cql_client_close(c);
    stop_fake_server();
}

static void on_never(void *ctx, const kp_cql_response *response, const kp_cql_failure *failure)
{
    int *failed = ctx;
    assert_null(response);
    assert_non_null(failure);
    assert_non_null(strstr(failure->error.message, "closed before an answer"));
    (*failed)++;
}

static void test_close_fails_what_is_pending_once_each(void **state)
{
    (void)state;
    start_fake_server(0);
    kp_error err;
    kp_cql_client *c = open_client(5000, 0, &err);
    assert_non_null(c);
    int failed = 0;
    for (int i = 0; i < 40; i++) assert_int_equal(kp_cql_query_async(c, "never", NULL, NULL, on_never, &failed, &err), 0);
    kp_cql_poll(c, 100, &err);   /* 32 go on the wire, 8 wait */
    assert_int_equal(kp_cql_pending(c), 40);
    kp_cql_client_close(c);
    assert_int_equal(failed, 40);
    stop_fake_server();
}

static void test_password_authentication_and_no_password_in_any_message(void **state)
{
    (void)state;
    clear_env();
    start_fake_server(1);
    char target[64];
    snprintf(target, sizeof target, "127.0.0.1:%d", server_port);
    kp_error err;
    kp_cql_client *c = NULL;
    kp_cql_config cfg = {.target = target};
    assert_int_equal(kp_cql_client_open(&cfg, &c, &err), -1);
    assert_non_null(strstr(err.message, "requires authentication (org.apache.cassandra.auth.PasswordAuthenticator)"));
    assert_non_null(strstr(err.message, "CASSANDRA_USERNAME"));
    setenv("CASSANDRA_USERNAME", FAKE_USER, 1);
    setenv("CASSANDRA_PASSWORD", FAKE_PASSWORD, 1);
    assert_int_equal(kp_cql_client_open(&cfg, &c, &err), 0);
    assert_null(strstr(kp_cql_client_describe(c), FAKE_PASSWORD));
    assert_non_null(strstr(kp_cql_client_describe(c), "user " FAKE_USER));
    /* an error that echoes the password (a server quoting a statement) is redacted */
    assert_int_equal(kp_cql_query(c, "say " FAKE_PASSWORD, NULL, NULL, NULL, &err), -1);
    assert_non_null(strstr(err.message, "unknown statement say ***"));
    assert_null(strstr(err.message, FAKE_PASSWORD));
    kp_cql_client_close(c);
    cfg.password = "not-the-" FAKE_PASSWORD;
    assert_int_equal(kp_cql_client_open(&cfg, &c, &err), -1);
    assert_non_null(strstr(err.message, "refused the credentials of user '" FAKE_USER "'"));
    assert_null(strstr(err.message, FAKE_PASSWORD));
    clear_env();
    stop_fake_server();
}

static void test_an_unreachable_node_says_where_it_looked(void **state)
{
    (void)state;
    clear_env();
    /* a port nobody listens on: bind one, close it */
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in addr = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    bind(fd, (struct sockaddr *)&addr, sizeof addr);
    socklen_t len = sizeof addr;
    getsockname(fd, (struct sockaddr *)&addr, &len);
    close(fd);
    char target[64];
    snprintf(target, sizeof target, "127.0.0.1:%d", ntohs(addr.sin_port));
    kp_cql_config cfg = {.target = target, .connect_timeout_ms = 1000};
    kp_cql_client *c = NULL;
    kp_error err;
    assert_int_equal(kp_cql_client_open(&cfg, &c, &err), -1);
    assert_int_equal(err.code, KP_ERR_TARGET);
    assert_non_null(strstr(err.message, target));
    assert_non_null(strstr(err.message, "--target"));
    assert_non_null(strstr(err.message, "refused"));
}

/* ---- TLS ---------------------------------------------------------------------------------------- */

static EVP_PKEY *tls_key;
static X509 *tls_cert;

/* A self-signed certificate for CN=keyplan-test with the IP SAN 127.0.0.1. */
static X509 *make_certificate(EVP_PKEY **key)
{
    *key = EVP_EC_gen("P-256");
    X509 *cert = X509_new();
    X509_set_version(cert, 2);
    ASN1_INTEGER_set(X509_get_serialNumber(cert), (long)getpid());
    X509_gmtime_adj(X509_getm_notBefore(cert), -3600);
    X509_gmtime_adj(X509_getm_notAfter(cert), 3600);
    X509_set_pubkey(cert, *key);
    X509_NAME *name = X509_get_subject_name(cert);
    X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC, (const unsigned char *)"keyplan-test", -1, -1, 0);
    X509_set_issuer_name(cert, name);
    X509V3_CTX ctx;
    X509V3_set_ctx_nodb(&ctx);
    X509V3_set_ctx(&ctx, cert, cert, NULL, NULL, 0);
    X509_EXTENSION *san = X509V3_EXT_conf_nid(NULL, &ctx, NID_subject_alt_name, "IP:127.0.0.1");
    X509_add_ext(cert, san, -1);
    X509_EXTENSION_free(san);
    X509_sign(cert, *key, EVP_sha256());
    return cert;
}

static void write_pem(const char *path, X509 *cert)
{
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    PEM_write_X509(f, cert);
    fclose(f);
}

static void start_tls_server(void)
{
    if (!tls_cert) tls_cert = make_certificate(&tls_key);
    fake_tls = SSL_CTX_new(TLS_server_method());
    SSL_CTX_use_certificate(fake_tls, tls_cert);
    SSL_CTX_use_PrivateKey(fake_tls, tls_key);
    start_fake_server(0);
    SSL_CTX_free(fake_tls);   /* the child keeps its copy */
    fake_tls = NULL;
}

static void test_tls_verifies_the_certificate_against_a_given_ca(void **state)
{
    (void)state;
    clear_env();
    char ca[] = "/tmp/kp_cql_ca_XXXXXX", other[] = "/tmp/kp_cql_other_XXXXXX";
    close(mkstemp(ca));
    close(mkstemp(other));
    start_tls_server();
    write_pem(ca, tls_cert);
    EVP_PKEY *other_key;
    X509 *other_cert = make_certificate(&other_key);
    write_pem(other, other_cert);
    char target[64];
    snprintf(target, sizeof target, "tls://127.0.0.1:%d", server_port);
    kp_error err;
    kp_cql_client *c = NULL;

    /* the right CA: verified, and the whole protocol works over TLS */
    kp_cql_config cfg = {.target = target, .ca_file = ca};
    if (kp_cql_client_open(&cfg, &c, &err)) fail_msg("%s", err.message);
    assert_non_null(strstr(kp_cql_client_describe(c), ", TLS,"));
    echo_state s;
    memset(&s, 0, sizeof s);
    echo_ctx ctx[100];
    char cql[32];
    for (int i = 0; i < 100; i++) {
        ctx[i] = (echo_ctx){&s, i};
        snprintf(cql, sizeof cql, "echo %d", i);
        assert_int_equal(kp_cql_query_async(c, cql, NULL, NULL, on_echo, &ctx[i], &err), 0);
    }
    int guard = 0;
    while (kp_cql_poll(c, 1000, &err) > 0 && guard++ < 1000) {}
    assert_int_equal(s.calls, 100);
    for (int i = 0; i < 100; i++) assert_int_equal(s.answered[i], 1);
    kp_cql_client_close(c);

    /* another CA: refused, with the way out */
    cfg.ca_file = other;
    assert_int_equal(kp_cql_client_open(&cfg, &c, &err), -1);
    assert_non_null(strstr(err.message, "did not verify"));
    assert_non_null(strstr(err.message, "--insecure"));

    /* loopback without a CA: encrypted, not verified (a local test node's own certificate) */
    cfg.ca_file = NULL;
    assert_int_equal(kp_cql_client_open(&cfg, &c, &err), 0);
    assert_non_null(strstr(kp_cql_client_describe(c), "TLS without verification"));
    assert_int_equal(kp_cql_query(c, "echo 1", NULL, NULL, NULL, &err), 0);
    kp_cql_client_close(c);

    /* CASSANDRA_SSL and CASSANDRA_SSL_CA do the same from the environment */
    setenv("CASSANDRA_SSL", "true", 1);
    setenv("CASSANDRA_SSL_CA", ca, 1);
    snprintf(target, sizeof target, "127.0.0.1:%d", server_port);
    cfg.target = target;
    assert_int_equal(kp_cql_client_open(&cfg, &c, &err), 0);
    assert_non_null(strstr(kp_cql_client_describe(c), ", TLS,"));
    kp_cql_client_close(c);
    clear_env();

    X509_free(other_cert);
    EVP_PKEY_free(other_key);
    unlink(ca);
    unlink(other);
    stop_fake_server();
}

int main(void)
{
    signal(SIGPIPE, SIG_IGN);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_the_node_comes_from_the_target_then_the_environment_then_the_default),
        cmocka_unit_test(test_bad_targets_are_usage_errors_that_never_echo_a_password),
        cmocka_unit_test(test_redaction_removes_password_literals_and_the_secret),
        cmocka_unit_test(test_backoff_is_full_jitter_within_the_exponential_ceiling),
        cmocka_unit_test_teardown(test_answers_out_of_order_reach_their_own_requests, reap_fake_server),
        cmocka_unit_test_teardown(test_overloaded_and_timeouts_are_retried_but_counters_and_syntax_are_not, reap_fake_server),
        cmocka_unit_test_teardown(test_failures_narrow_the_window_and_answers_widen_it_again, reap_fake_server),
        cmocka_unit_test_teardown(test_a_lost_request_gets_more_retries_and_a_schema_change_only_when_it_may_run_twice,
                                  reap_fake_server),
        cmocka_unit_test_teardown(test_a_late_answer_is_dropped_and_the_retry_answers, reap_fake_server),
        cmocka_unit_test_teardown(test_unprepared_statements_are_prepared_again_and_resent, reap_fake_server),
        cmocka_unit_test_teardown(test_a_dropped_connection_is_reopened_and_unreadable_answers_fail_alone, reap_fake_server),
        cmocka_unit_test_teardown(test_close_fails_what_is_pending_once_each, reap_fake_server),
        cmocka_unit_test_teardown(test_password_authentication_and_no_password_in_any_message, reap_fake_server),
        cmocka_unit_test(test_an_unreachable_node_says_where_it_looked),
        cmocka_unit_test_teardown(test_tls_verifies_the_certificate_against_a_given_ca, reap_fake_server),
    };
    int failed = cmocka_run_group_tests(tests, NULL, NULL);
    X509_free(tls_cert);
    EVP_PKEY_free(tls_key);
    return failed;
}
