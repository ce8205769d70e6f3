/*
 * client.c — speaks the DynamoDB JSON API over HTTP(S) with libcurl: signing,
 * the request queue, retries, connection reuse, and errors a person can act on.
 *
 * Every request, synchronous or not, goes through one queue and one curl multi
 * handle. New requests wait in a FIFO (kp_ddb_call's go to its front); a request
 * that failed in a retryable way waits in a retry list sorted by due time (full
 * jitter backoff) — nothing ever sleeps, kp_ddb_poll simply does not wake later
 * than the next due retry. At most max_in_flight requests are on the wire, each on
 * one of max_in_flight easy handles; the multi handle keeps that many connections
 * alive between requests, so a steady load opens its connections once.
 * Signing is libcurl's CURLOPT_AWS_SIGV4 with the region and service given
 * explicitly; curl signs every header we add (X-Amz-Target, the session token).
 *
 * Invariant: every request submitted completes exactly once — answered, failed
 * after its retries, or cancelled by kp_ddb_client_close — and no message built
 * here contains the secret key or session token (kp_ddb_redact runs over every
 * text that came from the network before it reaches a kp_error).
 */
#include "backends/dynamodb/client_internal.h"

#include <ctype.h>
#include <curl/curl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#ifndef KP_VERSION
#define KP_VERSION "dev"
#endif

enum {
    KP_DDB_MAX_IN_FLIGHT = 64,
    KP_DDB_MAX_RESPONSE = 64 << 20,     /* far above DynamoDB's 1 MB pages and 16 MB batches */
    KP_DDB_TYPE_SIZE = 96,
    KP_DDB_SERVICE_MESSAGE = 2048
};

struct kp_ddb_request {
    kp_ddb_request *next;
    char operation[48];
    char *body;                         /* the serialized request, sent as is on every attempt */
    size_t body_len;
    int attempts;                       /* sent so far */
    int64_t due_ms;                     /* monotonic time it may start */
    kp_ddb_complete_fn complete;        /* internal hook, or NULL for a user request */
    void *hook_ctx;
    kp_ddb_done_fn user_done;
    void *user_ctx;
    /* while on the wire */
    struct curl_slist *headers;
    char *response;
    size_t response_len, response_cap;
    int is_response_too_large;
    char errbuf[CURL_ERROR_SIZE];
};

typedef struct kp_ddb_slot {
    CURL *easy;
    kp_ddb_request *request;            /* NULL when idle */
} kp_ddb_slot;

struct kp_ddb_client {
    kp_ddb_settings settings;
    char *sigv4;                        /* "aws:amz:<region>:dynamodb" */
    char *description;
    char *token_header;                 /* "X-Amz-Security-Token: ..." (secret) or NULL */
    CURLM *multi;
    kp_ddb_slot *slots;
    int max_in_flight, max_retries;
    long connect_timeout_ms, request_timeout_ms;
    kp_ddb_request *ready_head, *ready_tail;   /* due now, FIFO */
    kp_ddb_request *retry_head;                /* waiting, sorted by due_ms */
    int running;                        /* on the wire */
    int pending;                        /* submitted and not completed */
    int in_callback;
    int is_closing;
    int is_insecure;
    uint64_t rng;
    kp_ddb_stats stats;
    char last_type[KP_DDB_TYPE_SIZE];
    long last_status;
};

static int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* ---- backoff, classification, error bodies, redaction ----------------------------------- */

static uint64_t next_random(uint64_t *state)
{
    uint64_t x = *state ? *state : 0x9e3779b97f4a7c15ULL;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    *state = x;
    return x * 2685821657736338717ULL;
}

long kp_ddb_backoff_ms(int attempt, uint64_t *rng)
{
    long ceiling = KP_DDB_BACKOFF_BASE_MS;
    for (int i = 0; i < attempt && ceiling < KP_DDB_BACKOFF_CAP_MS; i++) ceiling *= 2;
    if (ceiling > KP_DDB_BACKOFF_CAP_MS) ceiling = KP_DDB_BACKOFF_CAP_MS;
    return (long)(next_random(rng) % (uint64_t)(ceiling + 1));
}

static int type_in(const char *type, const char *const *list)
{
    for (size_t i = 0; type && list[i]; i++)
        if (strcmp(type, list[i]) == 0) return 1;
    return 0;
}

int kp_ddb_is_throttling(const char *type)
{
    static const char *const throttling[] = {
        "ProvisionedThroughputExceededException", "ThrottlingException", "Throttling", "RequestLimitExceeded",
        "TooManyRequestsException", "RequestThrottled", "RequestThrottledException", NULL
    };
    return type_in(type, throttling);
}

int kp_ddb_is_retryable(const char *type, long http_status)
{
    static const char *const transient[] = {
        "InternalServerError", "InternalFailure", "ServiceUnavailable", "ServiceUnavailableException",
        "TransactionInProgressException", NULL
    };
    if (http_status >= 500 || http_status == 429) return 1;
    return kp_ddb_is_throttling(type) || type_in(type, transient);
}

static void copy_text(char *dst, size_t size, const char *src, size_t len)
{
    if (!size) return;
    if (len >= size) len = size - 1;
    for (size_t i = 0; i < len; i++) {
        unsigned char ch = (unsigned char)src[i];
        dst[i] = ch < 0x20 || ch == 0x7f ? ' ' : (char)ch;
    }
    dst[len] = '\0';
}

void kp_ddb_parse_error_body(const char *body, size_t len, char *type, size_t type_size, char *message,
                             size_t message_size)
{
    if (type_size) type[0] = '\0';
    if (message_size) message[0] = '\0';
    if (!body || !len) return;
    cJSON *root = cJSON_ParseWithLength(body, len);
    if (cJSON_IsObject(root)) {
        const cJSON *t = cJSON_GetObjectItemCaseSensitive(root, "__type");
        if (!cJSON_IsString(t)) t = cJSON_GetObjectItemCaseSensitive(root, "code");
        if (cJSON_IsString(t) && t->valuestring) {
            const char *name = strrchr(t->valuestring, '#');
            name = name ? name + 1 : t->valuestring;
            size_t n = strcspn(name, ":");   /* "Type:http://internal.amazon.com/..." */
            copy_text(type, type_size, name, n);
        }
        const cJSON *m = cJSON_GetObjectItemCaseSensitive(root, "message");
        if (!cJSON_IsString(m)) m = cJSON_GetObjectItemCaseSensitive(root, "Message");
        if (cJSON_IsString(m) && m->valuestring) copy_text(message, message_size, m->valuestring, strlen(m->valuestring));
    } else {
        /* not JSON (a proxy's HTML page): the first line, enough to recognise it */
        size_t n = 0;
        while (n < len && n < 200 && body[n] != '\n') n++;
        copy_text(message, message_size, body, n);
    }
    cJSON_Delete(root);
}

static void replace_all(char *text, size_t size, const char *needle, const char *with)
{
    size_t needle_len = strlen(needle), with_len = strlen(with);
    char *out = malloc(size);
    if (!out) { text[0] = '\0'; return; }   /* cannot redact: say nothing rather than leak */
    size_t o = 0;
    for (const char *p = text; *p && o + 1 < size;) {
        if (strncmp(p, needle, needle_len) == 0) {
            for (size_t i = 0; i < with_len && o + 1 < size; i++) out[o++] = with[i];
            p += needle_len;
        } else {
            out[o++] = *p++;
        }
    }
    out[o] = '\0';
    memcpy(text, out, o + 1);
    free(out);
}

void kp_ddb_redact(char *text, size_t size, const char *const *secrets, size_t secret_count)
{
    static const char redacted[] = "[redacted]";
    if (!text || !size) return;
    text[size - 1] = '\0';
    /* AWS explains a signature mismatch by printing the canonical request, signed
     * header values (the session token) included. */
    char *canonical = strstr(text, "The Canonical String for this request should have been");
    if (canonical) {
        *canonical = '\0';
        size_t n = strlen(text);
        while (n && (text[n - 1] == ' ' || text[n - 1] == '\n')) text[--n] = '\0';
    }
    char *signature = strstr(text, "Signature=");
    if (signature) snprintf(signature, size - (size_t)(signature - text), "Signature=%s", redacted);
    for (size_t s = 0; s < secret_count; s++) {
        const char *secret = secrets[s];
        if (!secret || strlen(secret) < 4) continue;
        if (strstr(text, secret)) replace_all(text, size, secret, redacted);
        /* a secret cut off by an earlier truncation */
        size_t text_len = strlen(text), secret_len = strlen(secret);
        for (size_t k = secret_len - 1; k >= 8; k--) {
            if (k <= text_len && memcmp(text + text_len - k, secret, k) == 0) {
                snprintf(text + text_len - k, size - (text_len - k), "%s", redacted);
                break;
            }
        }
    }
}

static void redact_for(const kp_ddb_client *c, char *text, size_t size)
{
    const char *secrets[2] = { c->settings.secret_access_key, c->settings.session_token };
    /* the loopback placeholder ("keyplan") is no secret, and redacting it would mangle messages */
    if (c->settings.is_loopback && c->settings.secret_access_key &&
        strcmp(c->settings.secret_access_key, "keyplan") == 0)
        secrets[0] = NULL;
    kp_ddb_redact(text, size, secrets, 2);
}

/* ---- requests ------------------------------------------------------------------------------- */

static int operation_is_valid(const char *operation)
{
    size_t n = operation ? strlen(operation) : 0;
    if (n == 0 || n >= sizeof ((kp_ddb_request *)0)->operation) return 0;
    for (size_t i = 0; i < n; i++)
        if (!isalpha((unsigned char)operation[i])) return 0;
    return 1;
}

static void request_free(kp_ddb_request *req)
{
    if (!req) return;
    CU(curl_slist_free_all)(req->headers);
    free(req->body);
    free(req->response);
    free(req);
}

static void insert_retry(kp_ddb_client *c, kp_ddb_request *req)
{
    kp_ddb_request **at = &c->retry_head;
    while (*at && (*at)->due_ms <= req->due_ms) at = &(*at)->next;
    req->next = *at;
    *at = req;
}

static void queue_request(kp_ddb_client *c, kp_ddb_request *req, int at_front)
{
    req->next = NULL;
    if (req->due_ms > now_ms()) {
        insert_retry(c, req);
    } else if (at_front) {
        req->next = c->ready_head;
        c->ready_head = req;
        if (!c->ready_tail) c->ready_tail = req;
    } else {
        if (c->ready_tail) c->ready_tail->next = req;
        else c->ready_head = req;
        c->ready_tail = req;
    }
}

static kp_ddb_request *enqueue_request(kp_ddb_client *c, const char *operation, char *body, size_t body_len,
                                       long delay_ms, int at_front, kp_error *err)
{
    if (!operation_is_valid(operation)) {
        free(body);
        kp_error_set(err, KP_ERR_INTERNAL, NULL, 0, 0, "'%.60s' is not a DynamoDB operation name",
                     operation ? operation : "(null)");
        return NULL;
    }
    if (c->is_closing) {
        free(body);
        kp_error_set(err, KP_ERR_INTERNAL, NULL, 0, 0, "DynamoDB %s was submitted while the client is closing",
                     operation);
        return NULL;
    }
    if (!body) {
        kp_error_set(err, KP_ERR_NOMEM, NULL, 0, 0, "out of memory serializing DynamoDB %s", operation);
        return NULL;
    }
    kp_ddb_request *req = calloc(1, sizeof *req);
    if (!req) {
        free(body);
        kp_error_set(err, KP_ERR_NOMEM, NULL, 0, 0, "out of memory queueing DynamoDB %s", operation);
        return NULL;
    }
    snprintf(req->operation, sizeof req->operation, "%s", operation);
    req->body = body;
    req->body_len = body_len;
    req->due_ms = delay_ms > 0 ? now_ms() + delay_ms : 0;
    queue_request(c, req, at_front);
    c->pending++;
    return req;
}

int kp_ddb_enqueue(kp_ddb_client *c, const char *operation, char *body, size_t body_len, long delay_ms,
                   int at_front, kp_ddb_complete_fn complete, void *hook_ctx, kp_error *err)
{
    kp_ddb_request *req = enqueue_request(c, operation, body, body_len, delay_ms, at_front, err);
    if (!req) return -1;
    req->complete = complete;
    req->hook_ctx = hook_ctx;
    return 0;
}

/* Runs the request's hook or done callback exactly once, then frees it. */
static void complete_request(kp_ddb_client *c, kp_ddb_request *req, cJSON *response, const kp_ddb_failure *failure)
{
    c->pending--;
    c->in_callback++;
    if (req->complete) req->complete(c, req->hook_ctx, &response, failure);
    else if (req->user_done) req->user_done(req->user_ctx, response, failure);
    c->in_callback--;
    cJSON_Delete(response);
    request_free(req);
}

/* Fails a request with a message built here (no network text in it). */
static void fail_plain(kp_ddb_client *c, kp_ddb_request *req, int code, const char *message)
{
    kp_ddb_failure failure;
    memset(&failure, 0, sizeof failure);
    kp_error_set(&failure.error, code, NULL, 0, 0, "%s", message);
    failure.type = "";
    failure.attempts = req->attempts;
    complete_request(c, req, NULL, &failure);
}

static size_t on_body(char *data, size_t size, size_t count, void *userdata)
{
    kp_ddb_request *req = userdata;
    size_t n = size * count;
    if (req->response_len + n + 1 > req->response_cap) {
        if (req->response_len + n + 1 > KP_DDB_MAX_RESPONSE) {
            req->is_response_too_large = 1;
            return 0;
        }
        size_t cap = req->response_cap ? req->response_cap : 4096;
        while (cap < req->response_len + n + 1) cap *= 2;
        char *bigger = realloc(req->response, cap);
        if (!bigger) return 0;
        req->response = bigger;
        req->response_cap = cap;
    }
    memcpy(req->response + req->response_len, data, n);
    req->response_len += n;
    req->response[req->response_len] = '\0';
    return n;
}

static int configure_handle(kp_ddb_client *c, CURL *easy)
{
    const kp_ddb_settings *s = &c->settings;
    CURLcode rc = CURLE_OK;
#define SET(option, value) do { if (rc == CURLE_OK) rc = CU(curl_easy_setopt)(easy, option, value); } while (0)
    SET(CURLOPT_URL, s->endpoint);
    SET(CURLOPT_PROTOCOLS_STR, "http,https");
    SET(CURLOPT_NOSIGNAL, 1L);
    SET(CURLOPT_HTTP_VERSION, (long)CURL_HTTP_VERSION_1_1);
    SET(CURLOPT_POST, 1L);
    SET(CURLOPT_AWS_SIGV4, c->sigv4);
    SET(CURLOPT_USERNAME, s->access_key_id);
    SET(CURLOPT_PASSWORD, s->secret_access_key);
    SET(CURLOPT_CONNECTTIMEOUT_MS, c->connect_timeout_ms);
    SET(CURLOPT_TIMEOUT_MS, c->request_timeout_ms);
    SET(CURLOPT_TCP_KEEPALIVE, 1L);
    SET(CURLOPT_USERAGENT, "keyplan/" KP_VERSION);
    SET(CURLOPT_WRITEFUNCTION, on_body);
    if (c->is_insecure) {
        SET(CURLOPT_SSL_VERIFYPEER, 0L);
        SET(CURLOPT_SSL_VERIFYHOST, 0L);
    }
    if (s->is_loopback) SET(CURLOPT_NOPROXY, "*");   /* a proxy from the environment must not see local traffic */
#undef SET
    return rc == CURLE_OK ? 0 : -1;
}

/* IEEE CRC-32, the checksum DynamoDB sends in x-amz-crc32. The table is made once, whichever
 * thread asks first (verify reads on several connections at once). */
static uint32_t crc_table[256];
static pthread_once_t crc_table_once = PTHREAD_ONCE_INIT;

static void make_crc_table(void)
{
    for (uint32_t i = 0; i < 256; i++) {
        uint32_t r = i;
        for (int k = 0; k < 8; k++) r = r & 1 ? 0xEDB88320u ^ (r >> 1) : r >> 1;
        crc_table[i] = r;
    }
}

static uint32_t crc32_of(const char *data, size_t len)
{
    const uint32_t *table = crc_table;
    pthread_once(&crc_table_once, make_crc_table);
    uint32_t crc = 0xFFFFFFFFu;
    for (size_t i = 0; i < len; i++) crc = table[(crc ^ (unsigned char)data[i]) & 0xFF] ^ (crc >> 8);
    return crc ^ 0xFFFFFFFFu;
}

/* ---- one transfer: start, finish, retry, fail ----------------------------------------------- */

static void start_request(kp_ddb_client *c, kp_ddb_request *req)
{
    kp_ddb_slot *slot = NULL;
    for (int i = 0; i < c->max_in_flight && !slot; i++)
        if (!c->slots[i].request) slot = &c->slots[i];
    if (!slot) {   /* cannot happen: callers check running < max_in_flight */
        fail_plain(c, req, KP_ERR_INTERNAL, "internal error: no free connection slot for a DynamoDB request");
        return;
    }
    char target[96];
    snprintf(target, sizeof target, "X-Amz-Target: DynamoDB_20120810.%s", req->operation);
    struct curl_slist *headers = CU(curl_slist_append)(NULL, "Content-Type: application/x-amz-json-1.0");
    struct curl_slist *more = headers ? CU(curl_slist_append)(headers, target) : NULL;
    if (more && c->token_header) more = CU(curl_slist_append)(more, c->token_header);
    if (!more) {
        CU(curl_slist_free_all)(headers);
        fail_plain(c, req, KP_ERR_NOMEM, "out of memory preparing a DynamoDB request");
        return;
    }
    CU(curl_slist_free_all)(req->headers);
    req->headers = headers;
    req->response_len = 0;
    req->is_response_too_large = 0;
    req->errbuf[0] = '\0';
    CURL *easy = slot->easy;
    CU(curl_easy_setopt)(easy, CURLOPT_HTTPHEADER, req->headers);
    CU(curl_easy_setopt)(easy, CURLOPT_POSTFIELDS, req->body);
    CU(curl_easy_setopt)(easy, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)req->body_len);
    CU(curl_easy_setopt)(easy, CURLOPT_WRITEDATA, req);
    CU(curl_easy_setopt)(easy, CURLOPT_PRIVATE, slot);
    CU(curl_easy_setopt)(easy, CURLOPT_ERRORBUFFER, req->errbuf);
    CURLMcode mc = CU(curl_multi_add_handle)(c->multi, easy);
    if (mc != CURLM_OK) {
        char message[200];
        snprintf(message, sizeof message, "the transfer engine refused a DynamoDB %s request: %s", req->operation,
                 CU(curl_multi_strerror)(mc));
        fail_plain(c, req, KP_ERR_INTERNAL, message);
        return;
    }
    slot->request = req;
    c->running++;
    if (req->attempts > 0) c->stats.retries++;
    req->attempts++;
    c->stats.requests_sent++;
    c->stats.bytes_sent += (long)req->body_len;
}

/* Schedules another attempt when retries remain; 1 when it did. */
static int schedule_retry(kp_ddb_client *c, kp_ddb_request *req)
{
    if (c->is_closing || req->attempts > c->max_retries) return 0;
    req->due_ms = now_ms() + kp_ddb_backoff_ms(req->attempts - 1, &c->rng);
    req->next = NULL;
    insert_retry(c, req);
    return 1;
}

static int transport_is_retryable(CURLcode code)
{
    switch (code) {
    case CURLE_COULDNT_CONNECT: case CURLE_OPERATION_TIMEDOUT: case CURLE_SEND_ERROR: case CURLE_RECV_ERROR:
    case CURLE_GOT_NOTHING: case CURLE_PARTIAL_FILE: case CURLE_SSL_CONNECT_ERROR: case CURLE_HTTP2:
    case CURLE_HTTP2_STREAM:
        return 1;
    default:
        return 0;
    }
}

static void hint_for(const kp_ddb_client *c, const kp_ddb_request *req, const char *type, long status,
                     CURLcode transport, char *hint, size_t size)
{
    const kp_ddb_settings *s = &c->settings;
    hint[0] = '\0';
    if (!status) {
        if (transport == CURLE_COULDNT_CONNECT && s->is_loopback)
            snprintf(hint, size, "; is the local server running? (scripts/target-dynalite.sh start)");
        else if (transport == CURLE_COULDNT_CONNECT)
            snprintf(hint, size, "; check the endpoint (from %s) and the network", s->endpoint_source);
        else if (transport == CURLE_COULDNT_RESOLVE_HOST)
            snprintf(hint, size, "; check the host name of the endpoint (from %s)", s->endpoint_source);
        else if (transport == CURLE_PEER_FAILED_VERIFICATION)
            snprintf(hint, size, "; the server's TLS certificate is not trusted: install its CA certificate, "
                                 "or pass --insecure for a test server");
        else if (transport == CURLE_OPERATION_TIMEDOUT)
            snprintf(hint, size, "; the server did not answer in time");
        return;
    }
    if (kp_ddb_is_throttling(type))
        snprintf(hint, size, "; the table is throttled: lower the requests in flight or raise its capacity");
    else if (status >= 500)
        snprintf(hint, size, "; the service keeps failing: try again later");
    else if (strcmp(type, "UnrecognizedClientException") == 0 || strcmp(type, "InvalidSignatureException") == 0 ||
             strcmp(type, "MissingAuthenticationTokenException") == 0 ||
             strcmp(type, "IncompleteSignatureException") == 0 || strcmp(type, "SignatureDoesNotMatch") == 0)
        snprintf(hint, size, "; check the credentials from %s and the region (%s, from %s)", s->credential_source,
                 s->region, s->region_source);
    else if (strncmp(type, "ExpiredToken", 12) == 0)
        snprintf(hint, size, "; the session token has expired: refresh the credentials from %s",
                 s->credential_source);
    else if (strcmp(type, "AccessDeniedException") == 0)
        snprintf(hint, size, "; the credentials from %s may not call dynamodb:%s here", s->credential_source,
                 req->operation);
    else if (strcmp(type, "UnknownOperationException") == 0)
        snprintf(hint, size, "; this server does not implement %s", req->operation);
    else if (!type[0])
        snprintf(hint, size, "; is %s a DynamoDB endpoint?", s->endpoint);
}

/* Fails a request with what the network said; detail is redacted in place first. */
static void fail_request(kp_ddb_client *c, kp_ddb_request *req, const char *type, long status, char *detail,
                         size_t detail_size, int is_retryable, CURLcode transport, const char *request_id)
{
    redact_for(c, detail, detail_size);
    char attempts[48] = "", rid[96] = "", hint[512];
    if (req->attempts > 1) snprintf(attempts, sizeof attempts, " after %d attempts", req->attempts);
    if (request_id && request_id[0] && !c->settings.is_loopback)
        snprintf(rid, sizeof rid, ", request id %.60s", request_id);
    hint_for(c, req, type, status, transport, hint, sizeof hint);
    kp_ddb_failure failure;
    memset(&failure, 0, sizeof failure);
    if (status)
        kp_error_set(&failure.error, KP_ERR_TARGET, NULL, 0, 0, "DynamoDB %s at %s failed%s: %s%s%s (HTTP %ld%s)%s",
                     req->operation, c->settings.endpoint, attempts, type[0] ? type : "error",
                     detail[0] ? ": " : "", detail, status, rid, hint);
    else
        kp_error_set(&failure.error, KP_ERR_TARGET, NULL, 0, 0, "DynamoDB %s could not be sent to %s%s: %s%s",
                     req->operation, c->settings.endpoint, attempts, detail, hint);
    redact_for(c, failure.error.message, sizeof failure.error.message);
    failure.type = type;
    failure.http_status = status;
    failure.attempts = req->attempts;
    failure.is_retryable = is_retryable;
    complete_request(c, req, NULL, &failure);
}

static void header_value(CURL *easy, const char *name, char *out, size_t size)
{
    struct curl_header *h = NULL;
    out[0] = '\0';
    if (CU(curl_easy_header)(easy, name, 0, CURLH_HEADER, -1, &h) == CURLHE_OK && h && h->value)
        copy_text(out, size, h->value, strlen(h->value));
}

/* A transfer ended: answer, retry or failure. Returns 1 when the request completed. */
static int finish_transfer(kp_ddb_client *c, kp_ddb_slot *slot, CURLcode result)
{
    CURL *easy = slot->easy;
    kp_ddb_request *req = slot->request;
    long status = 0, connects = 0;
    CU(curl_easy_getinfo)(easy, CURLINFO_RESPONSE_CODE, &status);
    CU(curl_easy_getinfo)(easy, CURLINFO_NUM_CONNECTS, &connects);
    c->stats.connections_opened += connects;
    char request_id[80], crc_text[24];
    header_value(easy, "x-amzn-RequestId", request_id, sizeof request_id);
    header_value(easy, "x-amz-crc32", crc_text, sizeof crc_text);
    CU(curl_multi_remove_handle)(c->multi, easy);
    slot->request = NULL;
    c->running--;
    CU(curl_slist_free_all)(req->headers);
    req->headers = NULL;
    c->stats.bytes_received += (long)req->response_len;

    if (result != CURLE_OK) {
        int is_retryable = transport_is_retryable(result) && !req->is_response_too_large;
        if (is_retryable && schedule_retry(c, req)) return 0;
        char detail[CURL_ERROR_SIZE + 128];
        if (req->is_response_too_large)
            snprintf(detail, sizeof detail, "the answer is larger than %d MiB", KP_DDB_MAX_RESPONSE >> 20);
        else
            snprintf(detail, sizeof detail, "%s", req->errbuf[0] ? req->errbuf : CU(curl_easy_strerror)(result));
        fail_request(c, req, "", 0, detail, sizeof detail, is_retryable, result, request_id);
        return 1;
    }
    if (crc_text[0] && strtoul(crc_text, NULL, 10) != crc32_of(req->response ? req->response : "", req->response_len)) {
        if (schedule_retry(c, req)) return 0;
        char detail[] = "the answer was corrupted in transit (CRC32 mismatch)";
        fail_request(c, req, "", 0, detail, sizeof detail, 1, CURLE_OK, request_id);
        return 1;
    }
    if (status == 200) {
        cJSON *response = req->response_len ? cJSON_ParseWithLength(req->response, req->response_len)
                                             : cJSON_CreateObject();
        if (!response) {
            char detail[] = "the answer is not JSON";
            fail_request(c, req, "", status, detail, sizeof detail, 0, CURLE_OK, request_id);
            return 1;
        }
        complete_request(c, req, response, NULL);
        return 1;
    }
    char type[KP_DDB_TYPE_SIZE], message[KP_DDB_SERVICE_MESSAGE];
    kp_ddb_parse_error_body(req->response, req->response_len, type, sizeof type, message, sizeof message);
    if (kp_ddb_is_throttling(type)) c->stats.throttled++;
    int is_retryable = kp_ddb_is_retryable(type, status);
    if (is_retryable && schedule_retry(c, req)) return 0;
    fail_request(c, req, type, status, message, sizeof message, is_retryable, CURLE_OK, request_id);
    return 1;
}

static void start_due(kp_ddb_client *c)
{
    int64_t now = now_ms();
    while (c->running < c->max_in_flight) {
        kp_ddb_request *req;
        if (c->retry_head && c->retry_head->due_ms <= now) {
            req = c->retry_head;
            c->retry_head = req->next;
        } else if (c->ready_head) {
            req = c->ready_head;
            c->ready_head = req->next;
            if (!c->ready_head) c->ready_tail = NULL;
        } else {
            break;
        }
        req->next = NULL;
        start_request(c, req);
    }
}

/* Handles every finished transfer; returns how many requests completed. */
static int drain_finished(kp_ddb_client *c)
{
    int completed = 0, left = 0;
    CURLMsg *msg;
    while ((msg = CU(curl_multi_info_read)(c->multi, &left))) {
        if (msg->msg != CURLMSG_DONE) continue;
        CURL *easy = msg->easy_handle;
        CURLcode result = msg->data.result;
        kp_ddb_slot *slot = NULL;
        CU(curl_easy_getinfo)(easy, CURLINFO_PRIVATE, (char **)&slot);
        if (slot && slot->request) completed += finish_transfer(c, slot, result);
    }
    return completed;
}

/* Fails everything queued, waiting or on the wire with the same message. */
static void cancel_all(kp_ddb_client *c, const char *message)
{
    for (int i = 0; i < c->max_in_flight; i++) {
        kp_ddb_request *req = c->slots[i].request;
        if (!req) continue;
        CU(curl_multi_remove_handle)(c->multi, c->slots[i].easy);
        c->slots[i].request = NULL;
        c->running--;
        fail_plain(c, req, KP_ERR_TARGET, message);
    }
    kp_ddb_request *lists[2] = { c->ready_head, c->retry_head };
    c->ready_head = c->ready_tail = c->retry_head = NULL;
    for (int l = 0; l < 2; l++) {
        for (kp_ddb_request *req = lists[l], *next; req; req = next) {
            next = req->next;
            fail_plain(c, req, KP_ERR_TARGET, message);
        }
    }
}

static int engine_failure(kp_ddb_client *c, CURLMcode code, kp_error *err)
{
    char message[256];
    snprintf(message, sizeof message, "the HTTP transfer engine failed (%s); the request was abandoned",
             CU(curl_multi_strerror)(code));
    cancel_all(c, message);
    return kp_error_set(err, KP_ERR_INTERNAL, NULL, 0, 0, "%s", message);
}

int kp_ddb_poll(kp_ddb_client *c, int timeout_ms, kp_error *err)
{
    if (c->in_callback)
        return kp_error_set(err, KP_ERR_INTERNAL, NULL, 0, 0,
                            "internal error: kp_ddb_poll was called from a DynamoDB done callback");
    int64_t deadline = timeout_ms < 0 ? INT64_MAX : now_ms() + timeout_ms;
    for (;;) {
        start_due(c);
        int still_running = 0;
        CURLMcode mc = CU(curl_multi_perform)(c->multi, &still_running);
        if (mc != CURLM_OK) return engine_failure(c, mc, err);
        if (drain_finished(c) > 0) {
            /* what the callbacks queued starts now, while the caller works */
            start_due(c);
            mc = CU(curl_multi_perform)(c->multi, &still_running);
            if (mc != CURLM_OK) return engine_failure(c, mc, err);
            return c->pending;
        }
        if (c->pending == 0) return 0;
        int64_t now = now_ms();
        if (now >= deadline) return c->pending;
        int64_t wait = deadline - now;
        if (c->running < c->max_in_flight) {
            if (c->ready_head) wait = 0;
            else if (c->retry_head && c->retry_head->due_ms - now < wait)
                wait = c->retry_head->due_ms > now ? c->retry_head->due_ms - now : 0;
        }
        if (wait > 1000) wait = 1000;
        mc = CU(curl_multi_poll)(c->multi, NULL, 0, (int)wait, NULL);
        if (mc != CURLM_OK) return engine_failure(c, mc, err);
    }
}

int kp_ddb_pending(const kp_ddb_client *c)
{
    return c->pending;
}

/* ---- the synchronous call -------------------------------------------------------------------- */

typedef struct sync_state {
    int is_done;
    cJSON *response;
    kp_error error;
    char type[KP_DDB_TYPE_SIZE];
    long http_status;
} sync_state;

static void sync_complete(kp_ddb_client *c, void *hook_ctx, cJSON **response, const kp_ddb_failure *failure)
{
    sync_state *st = hook_ctx;
    st->is_done = 1;
    if (failure) {
        st->error = failure->error;
        snprintf(st->type, sizeof st->type, "%s", failure->type ? failure->type : "");
        st->http_status = failure->http_status;
    } else {
        st->response = *response;
        *response = NULL;
    }
}

int kp_ddb_call(kp_ddb_client *c, const char *operation, const cJSON *request, cJSON **response, kp_error *err)
{
    *response = NULL;
    c->last_type[0] = '\0';
    c->last_status = 0;
    if (c->in_callback)
        return kp_error_set(err, KP_ERR_INTERNAL, NULL, 0, 0,
                            "internal error: kp_ddb_call was called from a DynamoDB done callback");
    char *body = request ? cJSON_PrintUnformatted(request) : strdup("{}");
    sync_state st;
    memset(&st, 0, sizeof st);
    if (kp_ddb_enqueue(c, operation, body, body ? strlen(body) : 0, 0, 1, sync_complete, &st, err) != 0) return -1;
    while (!st.is_done) {
        kp_error poll_error;
        if (kp_ddb_poll(c, -1, &poll_error) < 0 && !st.is_done) {
            if (err) *err = poll_error;
            return -1;
        }
    }
    if (!st.response) {
        if (err) *err = st.error;
        snprintf(c->last_type, sizeof c->last_type, "%s", st.type);
        c->last_status = st.http_status;
        return -1;
    }
    *response = st.response;
    return 0;
}

const char *kp_ddb_last_error_type(const kp_ddb_client *c)
{
    return c->last_type;
}

long kp_ddb_last_http_status(const kp_ddb_client *c)
{
    return c->last_status;
}

int kp_ddb_error_is(const kp_ddb_client *c, const char *type)
{
    return type && strcmp(c->last_type, type) == 0;
}

/* ---- asynchronous submission ----------------------------------------------------------------- */

int kp_ddb_submit(kp_ddb_client *c, const char *operation, cJSON *request, kp_ddb_done_fn done, void *ctx,
                  kp_error *err)
{
    char *body = request ? cJSON_PrintUnformatted(request) : strdup("{}");
    cJSON_Delete(request);
    kp_ddb_request *req = enqueue_request(c, operation, body, body ? strlen(body) : 0, 0, 0, err);
    if (!req) return -1;
    req->user_done = done;
    req->user_ctx = ctx;
    return 0;
}

/* ---- open and close ---------------------------------------------------------------------------- */

static void warn_insecure_once(const kp_ddb_settings *s)
{
    static int has_warned;
    if (has_warned) return;
    has_warned = 1;
    if (s->is_https)
        fprintf(stderr, "keyplan: warning: --insecure: the TLS certificate of %s is not verified; anyone on the "
                        "path could read or change this traffic\n", s->endpoint);
    else if (!s->is_loopback)
        fprintf(stderr, "keyplan: warning: --insecure: requests to %s travel unencrypted over plain http\n",
                s->endpoint);
    else
        has_warned = 0;   /* plain http on loopback: nothing to warn about */
}

int kp_ddb_client_open(const kp_ddb_config *cfg, kp_ddb_client **out, kp_error *err)
{
    static const kp_ddb_config defaults;
    *out = NULL;
    if (!cfg) cfg = &defaults;
    if (kp_curl_load(err)) return -1;
    if (CU(curl_global_init)(CURL_GLOBAL_DEFAULT) != CURLE_OK)
        return kp_error_set(err, KP_ERR_INTERNAL, NULL, 0, 0, "libcurl could not be initialised");
    kp_ddb_client *c = calloc(1, sizeof *c);
    if (!c) {
        CU(curl_global_cleanup)();
        return kp_error_set(err, KP_ERR_NOMEM, NULL, 0, 0, "out of memory opening the DynamoDB client");
    }
    if (kp_ddb_settings_resolve(cfg, &c->settings, err) != 0) {
        free(c);
        CU(curl_global_cleanup)();
        return -1;
    }
    const kp_ddb_settings *s = &c->settings;
    c->is_insecure = cfg->is_insecure;
    c->max_in_flight = cfg->max_in_flight > 0 ? cfg->max_in_flight : KP_DDB_DEFAULT_IN_FLIGHT;
    if (c->max_in_flight > KP_DDB_MAX_IN_FLIGHT) c->max_in_flight = KP_DDB_MAX_IN_FLIGHT;
    c->max_retries = cfg->max_retries > 0 ? cfg->max_retries
                     : cfg->max_retries == 0 ? KP_DDB_DEFAULT_RETRIES : 0;
    c->connect_timeout_ms = cfg->connect_timeout_ms > 0 ? cfg->connect_timeout_ms : 5000;
    c->request_timeout_ms = cfg->request_timeout_ms > 0 ? cfg->request_timeout_ms : 60000;
    c->rng = (uint64_t)time(NULL) ^ ((uint64_t)getpid() << 32) ^ (uint64_t)(uintptr_t)c ^ (uint64_t)now_ms();

    size_t sigv4_size = strlen(s->region) + 32;
    c->sigv4 = malloc(sigv4_size);
    if (c->sigv4) snprintf(c->sigv4, sigv4_size, "aws:amz:%s:dynamodb", s->region);
    if (s->session_token) {
        size_t n = strlen(s->session_token) + 32;
        c->token_header = malloc(n);
        if (c->token_header) snprintf(c->token_header, n, "X-Amz-Security-Token: %s", s->session_token);
    }
    size_t describe_size = strlen(s->endpoint) + strlen(s->endpoint_source) + strlen(s->region) +
                           strlen(s->region_source) + strlen(s->credential_source) + 96;
    c->description = malloc(describe_size);
    if (c->description)
        snprintf(c->description, describe_size, "endpoint %s (from %s), region %s (from %s), credentials: %s",
                 s->endpoint, s->endpoint_source, s->region, s->region_source, s->credential_source);
    c->multi = CU(curl_multi_init)();
    c->slots = calloc((size_t)c->max_in_flight, sizeof *c->slots);
    if (!c->sigv4 || (s->session_token && !c->token_header) || !c->description || !c->multi || !c->slots) {
        kp_ddb_client_close(c);
        return kp_error_set(err, KP_ERR_NOMEM, NULL, 0, 0, "out of memory opening the DynamoDB client");
    }
    /* Exactly max_in_flight connections, kept alive between requests. */
    CU(curl_multi_setopt)(c->multi, CURLMOPT_MAX_HOST_CONNECTIONS, (long)c->max_in_flight);
    CU(curl_multi_setopt)(c->multi, CURLMOPT_MAX_TOTAL_CONNECTIONS, (long)c->max_in_flight);
    CU(curl_multi_setopt)(c->multi, CURLMOPT_MAXCONNECTS, (long)c->max_in_flight);
    for (int i = 0; i < c->max_in_flight; i++) {
        c->slots[i].easy = CU(curl_easy_init)();
        if (!c->slots[i].easy || configure_handle(c, c->slots[i].easy) != 0) {
            kp_ddb_client_close(c);
            return kp_error_set(err, KP_ERR_INTERNAL, NULL, 0, 0,
                                "libcurl lacks a feature keyplan needs (AWS SigV4 signing, libcurl >= 7.85)");
        }
    }
    if (c->is_insecure) warn_insecure_once(s);
    *out = c;
    return 0;
}

void kp_ddb_client_close(kp_ddb_client *c)
{
    if (!c) return;
    c->is_closing = 1;
    if (c->slots) cancel_all(c, "the DynamoDB client was closed before the request completed");
    for (int i = 0; c->slots && i < c->max_in_flight; i++)
        if (c->slots[i].easy) CU(curl_easy_cleanup)(c->slots[i].easy);
    free(c->slots);
    if (c->multi) CU(curl_multi_cleanup)(c->multi);
    free(c->sigv4);
    free(c->description);
    if (c->token_header) {
        volatile char *p = c->token_header;
        while (*p) *p++ = 0;
        free(c->token_header);
    }
    kp_ddb_settings_clear(&c->settings);
    free(c);
    CU(curl_global_cleanup)();
}

const char *kp_ddb_client_describe(const kp_ddb_client *c)
{
    return c->description;
}

const kp_ddb_settings *kp_ddb_client_settings(const kp_ddb_client *c)
{
    return &c->settings;
}

/* ---- counters and test hooks ------------------------------------------------------------------ */

long kp_ddb_requests_sent(const kp_ddb_client *c)
{
    return c->stats.requests_sent;
}

void kp_ddb_get_stats(const kp_ddb_client *c, kp_ddb_stats *out)
{
    *out = c->stats;
}

int kp_ddb_queued_count(const kp_ddb_client *c)
{
    int n = 0;
    for (const kp_ddb_request *r = c->ready_head; r; r = r->next) n++;
    for (const kp_ddb_request *r = c->retry_head; r; r = r->next) n++;
    return n;
}

int kp_ddb_queued_peek(const kp_ddb_client *c, int index, const char **operation, const char **body,
                       long *due_in_ms)
{
    const kp_ddb_request *lists[2] = { c->ready_head, c->retry_head };
    int64_t now = now_ms();
    for (int l = 0; l < 2; l++) {
        for (const kp_ddb_request *r = lists[l]; r; r = r->next) {
            if (index-- > 0) continue;
            if (operation) *operation = r->operation;
            if (body) *body = r->body;
            if (due_in_ms) *due_in_ms = r->due_ms ? (long)(r->due_ms - now) : 0;
            return 0;
        }
    }
    return -1;
}

int kp_ddb_queued_complete(kp_ddb_client *c, int index, cJSON *response, const kp_ddb_failure *failure)
{
    kp_ddb_request **lists[2] = { &c->ready_head, &c->retry_head };
    for (int l = 0; l < 2; l++) {
        kp_ddb_request *previous = NULL;
        for (kp_ddb_request **at = lists[l]; *at; previous = *at, at = &(*at)->next) {
            if (index-- > 0) continue;
            kp_ddb_request *req = *at;
            *at = req->next;
            if (l == 0 && c->ready_tail == req) c->ready_tail = previous;
            req->next = NULL;
            complete_request(c, req, response, failure);
            return 0;
        }
    }
    cJSON_Delete(response);
    return -1;
}

void kp_ddb_seed_backoff(kp_ddb_client *c, uint64_t seed)
{
    c->rng = seed ? seed : 1;
}

int kp_ddb_max_retries(const kp_ddb_client *c)
{
    return c->max_retries;
}

void kp_ddb_count_unprocessed_round(kp_ddb_client *c)
{
    c->stats.unprocessed_rounds++;
}

long kp_ddb_next_backoff(kp_ddb_client *c, int attempt)
{
    return kp_ddb_backoff_ms(attempt, &c->rng);
}
