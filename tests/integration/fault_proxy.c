/*
 * fault_proxy.c — a TCP proxy on loopback that injects faults between keyplan and a
 * real database server, for tests/integration/faults_proxy.sh. Written for the tests;
 * never shipped.
 *
 *   fault_proxy --listen PORT --upstream HOST:PORT --protocol http|mongo|cql
 *               [--rate P] [--faults LIST] [--seed N] [--spare N] [--stats FILE]
 *
 * It reads whole messages — HTTP/1.1 requests and responses (Content-Length bodies),
 * MongoDB wire messages (length-prefixed), CQL v4 frames (9-byte header) — and for each
 * request, with probability P (default 0.05), applies one fault drawn from LIST
 * (comma-separated; default: all those the protocol knows):
 *   delay      hold the response 50-400 ms, then pass it on
 *   drop       forward the request (the server may apply it), then close both
 *              connections before any byte of the response
 *   truncate   forward the request, pass on the first half of the response, close
 *   throttle   answer for the server, which never sees the request:
 *                http   400 ProvisionedThroughputExceededException or ThrottlingException
 *                mongo  insert/update only: ok 0, code 91 ShutdownInProgress or 189
 *                       PrimarySteppedDown, errorLabels [RetryableWriteError]
 *                cql    QUERY/EXECUTE/BATCH only: an ERROR frame on the request's
 *                       stream id, Overloaded (0x1001), WriteTimeout (0x1100) or
 *                       ReadTimeout (0x1200)
 *   5xx        http only: 500 InternalServerError or 503 ServiceUnavailable, the
 *              request not forwarded
 * The first --spare requests of every connection (default 1: a handshake, hello or
 * STARTUP) pass unharmed; --spare 0 with --rate 1 makes a server that never answers.
 * With --stats, FILE is rewritten after every fault: one line "KIND COUNT" per kind and
 * "requests N". Prints "fault_proxy: listening on 127.0.0.1:PORT" once ready; runs until
 * killed. Random choices come from --seed (per connection: seed and connection number),
 * so a single-connection run replays exactly.
 * Invariant: a message is passed on whole and unchanged unless a fault was chosen for
 * it, and every injected fault is counted.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

enum { P_HTTP, P_MONGO, P_CQL };
enum { F_DELAY, F_DROP, F_TRUNCATE, F_THROTTLE, F_5XX, F_COUNT };
static const char *const fault_names[F_COUNT] = {"delay", "drop", "truncate", "throttle", "5xx"};

static int protocol;
static double rate = 0.05;
static int enabled[F_COUNT];
static unsigned long base_seed = 1;
static long spare = 1;
static const char *stats_path;
static char up_host[256];
static char up_port[16];
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static long counts[F_COUNT];
static long requests;
static unsigned long connections;

typedef struct buf { unsigned char *data; size_t len, cap; } buf;

static int buf_reserve(buf *b, size_t n)
{
    if (b->len + n <= b->cap) return 0;
    size_t cap = b->cap ? b->cap : 4096;
    while (cap < b->len + n) cap *= 2;
    unsigned char *d = realloc(b->data, cap);
    if (!d) return -1;
    b->data = d;
    b->cap = cap;
    return 0;
}

static int read_exact(int fd, buf *b, size_t n)
{
    if (buf_reserve(b, n)) return -1;
    while (n > 0) {
        ssize_t r = recv(fd, b->data + b->len, n, 0);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) return -1;
        b->len += (size_t)r;
        n -= (size_t)r;
    }
    return 0;
}

static int write_all(int fd, const void *data, size_t n)
{
    const unsigned char *p = data;
    while (n > 0) {
        ssize_t w = send(fd, p, n, MSG_NOSIGNAL);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) return -1;
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

/* ---- message framing ------------------------------------------------------------------ */

static int read_http(int fd, buf *b)
{
    b->len = 0;
    for (;;) {
        if (read_exact(fd, b, 1)) return -1;
        if (b->len >= 4 && memcmp(b->data + b->len - 4, "\r\n\r\n", 4) == 0) break;
        if (b->len > 65536) return -1;
    }
    long length = 0;
    for (size_t i = 0; i + 16 < b->len; i++)
        if ((i == 0 || b->data[i - 1] == '\n') && strncasecmp((char *)b->data + i, "content-length:", 15) == 0) {
            length = strtol((char *)b->data + i + 15, NULL, 10);
            break;
        }
    return length > 0 ? read_exact(fd, b, (size_t)length) : 0;
}

static int read_mongo(int fd, buf *b)
{
    b->len = 0;
    if (read_exact(fd, b, 4)) return -1;
    uint32_t n = (uint32_t)b->data[0] | (uint32_t)b->data[1] << 8 | (uint32_t)b->data[2] << 16 | (uint32_t)b->data[3] << 24;
    if (n < 16 || n > 64u << 20) return -1;
    return read_exact(fd, b, n - 4);
}

static int read_cql(int fd, buf *b)
{
    b->len = 0;
    if (read_exact(fd, b, 9)) return -1;
    uint32_t n = (uint32_t)b->data[5] << 24 | (uint32_t)b->data[6] << 16 | (uint32_t)b->data[7] << 8 | b->data[8];
    if (n > 256u << 20) return -1;
    return n ? read_exact(fd, b, n) : 0;
}

static int read_message(int fd, buf *b)
{
    return protocol == P_HTTP ? read_http(fd, b) : protocol == P_MONGO ? read_mongo(fd, b) : read_cql(fd, b);
}

/* ---- injected answers ------------------------------------------------------------------- */

static int answer_http(int fd, int status, const char *type, const char *message)
{
    char body[512], head[512];
    int bn = snprintf(body, sizeof body, "{\"__type\":\"com.amazonaws.dynamodb.v20120810#%s\",\"message\":\"%s\"}", type,
                      message);
    int hn = snprintf(head, sizeof head, "HTTP/1.1 %d %s\r\nx-amzn-RequestId: fault-proxy\r\nContent-Type: "
                      "application/x-amz-json-1.0\r\nContent-Length: %d\r\nConnection: keep-alive\r\n\r\n", status,
                      status == 400 ? "Bad Request" : status == 500 ? "Internal Server Error" : "Service Unavailable", bn);
    return write_all(fd, head, (size_t)hn) || write_all(fd, body, (size_t)bn) ? -1 : 0;
}

static void put32(unsigned char *p, uint32_t v) { p[0] = v & 255; p[1] = v >> 8 & 255; p[2] = v >> 16 & 255; p[3] = v >> 24; }

/* the command name of an OP_MSG request (the first key of its body section), or "" */
static const char *mongo_command(const buf *m, char *out, size_t size)
{
    out[0] = '\0';
    uint32_t opcode = (uint32_t)m->data[12] | (uint32_t)m->data[13] << 8 | (uint32_t)m->data[14] << 16 | (uint32_t)m->data[15] << 24;
    if (opcode != 2013 || m->len < 16 + 4 + 1 + 4 + 2 || m->data[20] != 0) return out;
    const char *key = (const char *)m->data + 16 + 4 + 1 + 4 + 1;   /* flags, kind, doc length, element type */
    size_t max = m->len - (size_t)((const unsigned char *)key - m->data);
    size_t n = strnlen(key, max);
    snprintf(out, size, "%.*s", (int)(n < size ? n : size - 1), key);
    return out;
}

static int answer_mongo(int fd, const buf *request, int code, const char *name)
{
    unsigned char doc[512];
    size_t n = 4;
#define ELEMENT(type, key) do { doc[n++] = type; memcpy(doc + n, key, strlen(key) + 1); n += strlen(key) + 1; } while (0)
    ELEMENT(0x01, "ok");
    memset(doc + n, 0, 8); n += 8;                                  /* 0.0 */
    char msg[128];
    snprintf(msg, sizeof msg, "fault_proxy: injected %s", name);
    ELEMENT(0x02, "errmsg");
    put32(doc + n, (uint32_t)strlen(msg) + 1); n += 4;
    memcpy(doc + n, msg, strlen(msg) + 1); n += strlen(msg) + 1;
    ELEMENT(0x10, "code");
    put32(doc + n, (uint32_t)code); n += 4;
    ELEMENT(0x02, "codeName");
    put32(doc + n, (uint32_t)strlen(name) + 1); n += 4;
    memcpy(doc + n, name, strlen(name) + 1); n += strlen(name) + 1;
    ELEMENT(0x04, "errorLabels");
    size_t array_at = n;
    n += 4;
    ELEMENT(0x02, "0");
    put32(doc + n, 19 + 1); n += 4;
    memcpy(doc + n, "RetryableWriteError", 20); n += 20;
    doc[n++] = 0;
    put32(doc + array_at, (uint32_t)(n - array_at));
    doc[n++] = 0;
    put32(doc, (uint32_t)n);
#undef ELEMENT
    unsigned char head[21];
    put32(head, (uint32_t)(21 + n));
    put32(head + 4, 0x7f00ff00u);                                      /* our requestID */
    memcpy(head + 8, request->data + 4, 4);                            /* responseTo: their requestID */
    put32(head + 12, 2013);
    put32(head + 16, 0);                                               /* flagBits */
    head[20] = 0;                                                      /* section kind 0 */
    return write_all(fd, head, sizeof head) || write_all(fd, doc, n) ? -1 : 0;
}

static void put_be32(unsigned char *p, uint32_t v) { p[0] = v >> 24; p[1] = v >> 16 & 255; p[2] = v >> 8 & 255; p[3] = v & 255; }

static int answer_cql(int fd, const buf *request, int which)
{
    static const char *const messages[] = {"fault_proxy: injected Overloaded", "fault_proxy: injected WriteTimeout",
                                           "fault_proxy: injected ReadTimeout"};
    static const uint32_t codes[] = {0x1001, 0x1100, 0x1200};
    unsigned char body[256];
    size_t n = 0;
    put_be32(body, codes[which]); n += 4;
    size_t len = strlen(messages[which]);
    body[n++] = (unsigned char)(len >> 8); body[n++] = (unsigned char)len;
    memcpy(body + n, messages[which], len); n += len;
    if (which > 0) {
        body[n++] = 0; body[n++] = 0x06;                              /* consistency QUORUM */
        put_be32(body + n, 0); n += 4;                                 /* received */
        put_be32(body + n, 1); n += 4;                                 /* blockfor */
        if (which == 1) { body[n++] = 0; body[n++] = 6; memcpy(body + n, "SIMPLE", 6); n += 6; }
        else body[n++] = 0;                                            /* data_present */
    }
    unsigned char head[9] = {0x84, 0, request->data[2], request->data[3], 0x00, 0, 0, 0, 0};
    put_be32(head + 5, (uint32_t)n);
    return write_all(fd, head, 9) || write_all(fd, body, n) ? -1 : 0;
}

/* ---- one connection ------------------------------------------------------------------------ */

static void write_stats(void)
{
    if (!stats_path) return;
    char tmp[4096];
    snprintf(tmp, sizeof tmp, "%s.tmp", stats_path);
    FILE *f = fopen(tmp, "w");
    if (!f) return;
    for (int i = 0; i < F_COUNT; i++) fprintf(f, "%s %ld\n", fault_names[i], counts[i]);
    fprintf(f, "requests %ld\n", requests);
    fclose(f);
    rename(tmp, stats_path);
}

static void count(int fault)
{
    pthread_mutex_lock(&lock);
    if (fault >= 0) counts[fault]++;
    else requests++;
    if (fault >= 0) write_stats();
    pthread_mutex_unlock(&lock);
}

static int connect_upstream(void)
{
    struct addrinfo hints = {0}, *res = NULL;
    hints.ai_family = AF_INET;
    hints.ai_socktype = SOCK_STREAM;
    if (getaddrinfo(up_host, up_port, &hints, &res) != 0) return -1;
    int fd = socket(res->ai_family, res->ai_socktype, 0);
    if (fd >= 0 && connect(fd, res->ai_addr, res->ai_addrlen) != 0) { close(fd); fd = -1; }
    freeaddrinfo(res);
    if (fd >= 0) { int one = 1; setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one); }
    return fd;
}

/* may this fault hit this request? */
static int applies(int fault, const buf *request)
{
    if (!enabled[fault]) return 0;
    if (fault == F_5XX) return protocol == P_HTTP;
    if (fault != F_THROTTLE) return 1;
    if (protocol == P_MONGO) {
        char name[32];
        mongo_command(request, name, sizeof name);
        return strcmp(name, "insert") == 0 || strcmp(name, "update") == 0;
    }
    if (protocol == P_CQL) return request->data[4] == 0x07 || request->data[4] == 0x0A || request->data[4] == 0x0D;
    return 1;
}

static void *serve(void *arg)
{
    int client = (int)(intptr_t)arg;
    pthread_mutex_lock(&lock);
    unsigned int rng = (unsigned int)(base_seed * 2654435761u + ++connections);
    pthread_mutex_unlock(&lock);
    int server = connect_upstream();
    buf req = {0}, resp = {0};
    long n = 0;
    while (server >= 0 && read_message(client, &req) == 0) {
        count(-1);
        int fault = -1;
        if (n++ >= spare && (double)rand_r(&rng) / ((double)RAND_MAX + 1) < rate) {
            int choices[F_COUNT], k = 0;
            for (int f = 0; f < F_COUNT; f++) if (applies(f, &req)) choices[k++] = f;
            if (k) fault = choices[rand_r(&rng) % k];
        }
        int variant = rand_r(&rng);
        if (fault == F_THROTTLE || fault == F_5XX) {
            count(fault);
            int rc;
            if (protocol == P_HTTP && fault == F_THROTTLE)
                rc = variant % 2 ? answer_http(client, 400, "ProvisionedThroughputExceededException",
                                               "The level of configured provisioned throughput for the table was exceeded (fault_proxy)")
                                 : answer_http(client, 400, "ThrottlingException", "Rate of requests exceeds the allowed throughput (fault_proxy)");
            else if (protocol == P_HTTP)
                rc = variant % 2 ? answer_http(client, 500, "InternalServerError", "Internal server error (fault_proxy)")
                                 : answer_http(client, 503, "ServiceUnavailable", "Service unavailable (fault_proxy)");
            else if (protocol == P_MONGO)
                rc = variant % 2 ? answer_mongo(client, &req, 91, "ShutdownInProgress")
                                 : answer_mongo(client, &req, 189, "PrimarySteppedDown");
            else rc = answer_cql(client, &req, variant % 3);
            if (rc) break;
            continue;
        }
        if (write_all(server, req.data, req.len)) break;
        if (fault == F_DROP) { count(fault); break; }
        if (read_message(server, &resp)) break;
        if (fault == F_TRUNCATE) {
            count(fault);
            write_all(client, resp.data, resp.len / 2);
            break;
        }
        if (fault == F_DELAY) {
            count(fault);
            int ms = 50 + variant % 351;
            struct timespec t = {ms / 1000, (long)(ms % 1000) * 1000000L};
            nanosleep(&t, NULL);
        }
        if (write_all(client, resp.data, resp.len)) break;
    }
    if (server >= 0) close(server);
    close(client);
    free(req.data);
    free(resp.data);
    return NULL;
}

static int usage(void)
{
    fprintf(stderr, "usage: fault_proxy --listen PORT --upstream HOST:PORT --protocol http|mongo|cql [--rate P] "
            "[--faults delay,drop,truncate,throttle,5xx] [--seed N] [--spare N] [--stats FILE]\n");
    return 2;
}

int main(int argc, char **argv)
{
    int port = 0;
    const char *upstream = NULL, *proto = NULL, *faults = "delay,drop,truncate,throttle,5xx";
    for (int i = 1; i + 1 < argc; i += 2) {
        if (strcmp(argv[i], "--listen") == 0) port = atoi(argv[i + 1]);
        else if (strcmp(argv[i], "--upstream") == 0) upstream = argv[i + 1];
        else if (strcmp(argv[i], "--protocol") == 0) proto = argv[i + 1];
        else if (strcmp(argv[i], "--rate") == 0) rate = atof(argv[i + 1]);
        else if (strcmp(argv[i], "--faults") == 0) faults = argv[i + 1];
        else if (strcmp(argv[i], "--seed") == 0) base_seed = strtoul(argv[i + 1], NULL, 10);
        else if (strcmp(argv[i], "--spare") == 0) spare = atol(argv[i + 1]);
        else if (strcmp(argv[i], "--stats") == 0) stats_path = argv[i + 1];
        else return usage();
    }
    if (argc % 2 == 0 || port <= 0 || !upstream || !proto) return usage();
    if (strcmp(proto, "http") == 0) protocol = P_HTTP;
    else if (strcmp(proto, "mongo") == 0) protocol = P_MONGO;
    else if (strcmp(proto, "cql") == 0) protocol = P_CQL;
    else return usage();
    const char *colon = strrchr(upstream, ':');
    if (!colon) return usage();
    snprintf(up_host, sizeof up_host, "%.*s", (int)(colon - upstream), upstream);
    snprintf(up_port, sizeof up_port, "%s", colon + 1);
    char list[256];
    snprintf(list, sizeof list, "%s", faults);
    for (char *save = NULL, *f = strtok_r(list, ",", &save); f; f = strtok_r(NULL, ",", &save)) {
        int found = 0;
        for (int k = 0; k < F_COUNT; k++) if (strcmp(f, fault_names[k]) == 0) { enabled[k] = 1; found = 1; }
        if (!found) { fprintf(stderr, "fault_proxy: unknown fault '%s'\n", f); return 2; }
    }
    signal(SIGPIPE, SIG_IGN);
    int fd = socket(AF_INET, SOCK_STREAM, 0), one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    struct sockaddr_in addr = {0};
    addr.sin_family = AF_INET;
    addr.sin_port = htons((uint16_t)port);
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (bind(fd, (struct sockaddr *)&addr, sizeof addr) || listen(fd, 64)) {
        fprintf(stderr, "fault_proxy: cannot listen on 127.0.0.1:%d: %s\n", port, strerror(errno));
        return 3;
    }
    pthread_mutex_lock(&lock);
    write_stats();
    pthread_mutex_unlock(&lock);
    printf("fault_proxy: listening on 127.0.0.1:%d, %s to %s, rate %g, faults %s, seed %lu\n", port, proto, upstream, rate,
           faults, base_seed);
    fflush(stdout);
    for (;;) {
        int client = accept(fd, NULL, NULL);
        if (client < 0) { if (errno == EINTR) continue; break; }
        setsockopt(client, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        pthread_t t;
        if (pthread_create(&t, NULL, serve, (void *)(intptr_t)client) != 0) { close(client); continue; }
        pthread_detach(t);
    }
    return 3;
}
