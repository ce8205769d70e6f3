/*
 * cql_codec.c — frames and bodies of the CQL native protocol v4, and CQL values to
 * and from canonical JSON. No I/O: bytes in, structs out, and back.
 *
 * Reading goes through one bounds-checked cursor (struct reader): every primitive
 * checks what is left before it touches a byte, and a failed read leaves the cursor
 * failed, returns zero/NULL and fills the error once, so a count read from a broken
 * body is 0 and no loop runs on garbage. Counts read from the wire are also checked
 * against the bytes left (each element needs at least its length prefix) before
 * anything is allocated for them, which bounds memory by the frame length.
 * Writing goes through kp_cql_buf, which records an allocation failure instead of
 * crashing; encoders check it once at the end.
 *
 * Invariant: nothing decoded points into the input; everything lives in the
 * response's (or request's) arena, or in the rows' cJSON tree.
 */
#include "backends/cassandra/cql_codec.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/json.h"
#include "core/value.h"

/* Canonical timestamps and dates cover years 0000-9999; outside they are numbers. */
#define KP_CQL_MIN_CANON_DAYS (-719528)              /* 0000-01-01 */
#define KP_CQL_MAX_CANON_DAYS 2932896                /* 9999-12-31 */
#define KP_CQL_MIN_CANON_MS (-62167219200000LL)
#define KP_CQL_MAX_CANON_MS 253402300799999LL
#define KP_CQL_NANOS_PER_DAY 86400000000000LL
#define KP_CQL_MAX_NUMBER_TEXT 20000                 /* digits of a decimal / varint text */
#define KP_CQL_MAX_DECIMAL_ZEROS 400                 /* zeros a decimal's scale may add to its text */

/* ---- names of codes ------------------------------------------------------------------- */

const char *kp_cql_error_name(int32_t code)
{
    switch (code) {
    case KP_CQL_ERR_SERVER: return "Server error";
    case KP_CQL_ERR_PROTOCOL: return "Protocol error";
    case KP_CQL_ERR_BAD_CREDENTIALS: return "Bad credentials";
    case KP_CQL_ERR_UNAVAILABLE: return "Unavailable";
    case KP_CQL_ERR_OVERLOADED: return "Overloaded";
    case KP_CQL_ERR_IS_BOOTSTRAPPING: return "Is bootstrapping";
    case KP_CQL_ERR_TRUNCATE: return "Truncate error";
    case KP_CQL_ERR_WRITE_TIMEOUT: return "Write timeout";
    case KP_CQL_ERR_READ_TIMEOUT: return "Read timeout";
    case KP_CQL_ERR_READ_FAILURE: return "Read failure";
    case KP_CQL_ERR_FUNCTION_FAILURE: return "Function failure";
    case KP_CQL_ERR_WRITE_FAILURE: return "Write failure";
    case KP_CQL_ERR_SYNTAX: return "Syntax error";
    case KP_CQL_ERR_UNAUTHORIZED: return "Unauthorized";
    case KP_CQL_ERR_INVALID: return "Invalid";
    case KP_CQL_ERR_CONFIG: return "Config error";
    case KP_CQL_ERR_ALREADY_EXISTS: return "Already exists";
    case KP_CQL_ERR_UNPREPARED: return "Unprepared";
    default: return "Error";
    }
}

const char *kp_cql_consistency_name(uint16_t consistency)
{
    static const char *const names[] = {"ANY", "ONE", "TWO", "THREE", "QUORUM", "ALL", "LOCAL_QUORUM",
                                        "EACH_QUORUM", "SERIAL", "LOCAL_SERIAL", "LOCAL_ONE"};
    return consistency < sizeof names / sizeof names[0] ? names[consistency] : "?";
}

static const char *opcode_name(int opcode)
{
    switch (opcode) {
    case KP_CQL_OP_ERROR: return "ERROR";
    case KP_CQL_OP_STARTUP: return "STARTUP";
    case KP_CQL_OP_READY: return "READY";
    case KP_CQL_OP_AUTHENTICATE: return "AUTHENTICATE";
    case KP_CQL_OP_OPTIONS: return "OPTIONS";
    case KP_CQL_OP_SUPPORTED: return "SUPPORTED";
    case KP_CQL_OP_QUERY: return "QUERY";
    case KP_CQL_OP_RESULT: return "RESULT";
    case KP_CQL_OP_PREPARE: return "PREPARE";
    case KP_CQL_OP_EXECUTE: return "EXECUTE";
    case KP_CQL_OP_REGISTER: return "REGISTER";
    case KP_CQL_OP_EVENT: return "EVENT";
    case KP_CQL_OP_BATCH: return "BATCH";
    case KP_CQL_OP_AUTH_CHALLENGE: return "AUTH_CHALLENGE";
    case KP_CQL_OP_AUTH_RESPONSE: return "AUTH_RESPONSE";
    case KP_CQL_OP_AUTH_SUCCESS: return "AUTH_SUCCESS";
    default: return NULL;
    }
}

static int is_response_opcode(int op)
{
    return op == KP_CQL_OP_ERROR || op == KP_CQL_OP_READY || op == KP_CQL_OP_AUTHENTICATE ||
           op == KP_CQL_OP_SUPPORTED || op == KP_CQL_OP_RESULT || op == KP_CQL_OP_EVENT ||
           op == KP_CQL_OP_AUTH_CHALLENGE || op == KP_CQL_OP_AUTH_SUCCESS;
}

static int is_request_opcode(int op)
{
    return op == KP_CQL_OP_STARTUP || op == KP_CQL_OP_OPTIONS || op == KP_CQL_OP_QUERY ||
           op == KP_CQL_OP_PREPARE || op == KP_CQL_OP_EXECUTE || op == KP_CQL_OP_REGISTER ||
           op == KP_CQL_OP_BATCH || op == KP_CQL_OP_AUTH_RESPONSE;
}

/* ---- the output buffer ------------------------------------------------------------------ */

void kp_cql_buf_reset(kp_cql_buf *buf)
{
    buf->len = 0;
    buf->is_failed = 0;
}

void kp_cql_buf_free(kp_cql_buf *buf)
{
    free(buf->data);
    memset(buf, 0, sizeof *buf);
}

static int buf_reserve(kp_cql_buf *b, size_t more)
{
    if (b->is_failed) return -1;
    if (more > SIZE_MAX / 2 - b->len) { b->is_failed = 1; return -1; }
    if (b->len + more <= b->cap) return 0;
    size_t cap = b->cap ? b->cap : 256;
    while (cap < b->len + more) cap *= 2;
    uint8_t *data = realloc(b->data, cap);
    if (!data) { b->is_failed = 1; return -1; }
    b->data = data;
    b->cap = cap;
    return 0;
}

static void put_raw(kp_cql_buf *b, const void *p, size_t n)
{
    if (n == 0 || buf_reserve(b, n)) return;
    memcpy(b->data + b->len, p, n);
    b->len += n;
}

static void put_u8(kp_cql_buf *b, uint8_t v) { put_raw(b, &v, 1); }

static void put_u16(kp_cql_buf *b, uint16_t v)
{
    uint8_t x[2] = {(uint8_t)(v >> 8), (uint8_t)v};
    put_raw(b, x, 2);
}

static void put_u32(kp_cql_buf *b, uint32_t v)
{
    uint8_t x[4] = {(uint8_t)(v >> 24), (uint8_t)(v >> 16), (uint8_t)(v >> 8), (uint8_t)v};
    put_raw(b, x, 4);
}

static void put_i32(kp_cql_buf *b, int32_t v) { put_u32(b, (uint32_t)v); }

static void put_u64(kp_cql_buf *b, uint64_t v)
{
    put_u32(b, (uint32_t)(v >> 32));
    put_u32(b, (uint32_t)v);
}

static void set_u32_at(kp_cql_buf *b, size_t at, uint32_t v)
{
    if (b->is_failed || at + 4 > b->len) return;
    b->data[at] = (uint8_t)(v >> 24);
    b->data[at + 1] = (uint8_t)(v >> 16);
    b->data[at + 2] = (uint8_t)(v >> 8);
    b->data[at + 3] = (uint8_t)v;
}

/* Writers that can refuse (a string longer than its length prefix allows). */
static int put_string(kp_cql_buf *b, const char *s, kp_error *err)
{
    size_t n = s ? strlen(s) : 0;
    if (n > 65535)
        return kp_error_set(err, KP_ERR_DATA, NULL, 0, 0,
                            "a CQL [string] holds at most 65,535 bytes; this one has %zu", n);
    put_u16(b, (uint16_t)n);
    put_raw(b, s, n);
    return 0;
}

static int put_long_string(kp_cql_buf *b, const char *s, kp_error *err)
{
    size_t n = s ? strlen(s) : 0;
    if (n > (size_t)KP_CQL_MAX_BODY)
        return kp_error_set(err, KP_ERR_DATA, NULL, 0, 0, "a CQL statement of %zu bytes is larger than a frame", n);
    put_i32(b, (int32_t)n);
    put_raw(b, s, n);
    return 0;
}

static void put_bytes(kp_cql_buf *b, const uint8_t *p, int32_t n)
{
    put_i32(b, n);
    if (n > 0) put_raw(b, p, (size_t)n);
}

static void put_short_bytes(kp_cql_buf *b, const uint8_t *p, uint16_t n)
{
    put_u16(b, n);
    put_raw(b, p, n);
}

static int put_string_list(kp_cql_buf *b, const char *const *items, size_t n, kp_error *err)
{
    if (n > 65535) return kp_error_set(err, KP_ERR_DATA, NULL, 0, 0, "a CQL string list holds at most 65,535 items");
    put_u16(b, (uint16_t)n);
    for (size_t i = 0; i < n; i++)
        if (put_string(b, items[i], err)) return -1;
    return 0;
}

static int buf_check(kp_cql_buf *b, kp_error *err)
{
    if (b->is_failed) return kp_error_set(err, KP_ERR_NOMEM, NULL, 0, 0, "out of memory while encoding a CQL frame");
    return 0;
}

/* ---- the reading cursor ---------------------------------------------------------------- */

typedef struct reader {
    const uint8_t *p;
    size_t len, pos;
    const char *what;       /* "RESULT body", "value of type int" */
    kp_error *err;
    int is_failed;
} reader;

static void reader_init(reader *r, const uint8_t *p, size_t len, const char *what, kp_error *err)
{
    r->p = p;
    r->len = len;
    r->pos = 0;
    r->what = what;
    r->err = err;
    r->is_failed = 0;
}

static size_t left(const reader *r) { return r->len - r->pos; }

static int fail(reader *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int fail(reader *r, const char *fmt, ...)
{
    if (r->is_failed) return -1;
    r->is_failed = 1;
    char why[400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, sizeof why, fmt, ap);
    va_end(ap);
    return kp_error_set(r->err, KP_ERR_TARGET, NULL, 0, 0, "malformed CQL %s at byte %zu: %s", r->what, r->pos, why);
}

static void fail_nomem(reader *r)
{
    if (r->is_failed) return;
    r->is_failed = 1;
    kp_error_set(r->err, KP_ERR_NOMEM, NULL, 0, 0, "out of memory while decoding a CQL %s", r->what);
}

static int need(reader *r, size_t n, const char *item)
{
    if (r->is_failed) return -1;
    if (left(r) < n) return fail(r, "%s needs %zu bytes, only %zu left", item, n, left(r));
    return 0;
}

static uint8_t rd_u8(reader *r, const char *item)
{
    if (need(r, 1, item)) return 0;
    return r->p[r->pos++];
}

static uint16_t rd_u16(reader *r, const char *item)
{
    if (need(r, 2, item)) return 0;
    uint16_t v = (uint16_t)(r->p[r->pos] << 8 | r->p[r->pos + 1]);
    r->pos += 2;
    return v;
}

static uint32_t rd_u32(reader *r, const char *item)
{
    if (need(r, 4, item)) return 0;
    const uint8_t *p = r->p + r->pos;
    r->pos += 4;
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static int32_t rd_i32(reader *r, const char *item) { return (int32_t)rd_u32(r, item); }

static uint64_t rd_u64(reader *r, const char *item)
{
    if (need(r, 8, item)) return 0;
    uint64_t hi = rd_u32(r, item);
    return hi << 32 | rd_u32(r, item);
}

/* A [string]: a NUL-terminated copy in the arena (NULL on failure). */
static char *rd_string(reader *r, kp_arena *a, const char *item)
{
    uint16_t n = rd_u16(r, item);
    if (need(r, n, item)) return NULL;
    char *s = kp_arena_strndup(a, (const char *)r->p + r->pos, n);
    if (!s) { fail_nomem(r); return NULL; }
    r->pos += n;
    return s;
}

static char *rd_long_string(reader *r, kp_arena *a, const char *item)
{
    int32_t n = rd_i32(r, item);
    if (r->is_failed) return NULL;
    if (n < 0) { fail(r, "%s has a negative length %" PRId32, item, n); return NULL; }
    if (need(r, (size_t)n, item)) return NULL;
    char *s = kp_arena_strndup(a, (const char *)r->p + r->pos, (size_t)n);
    if (!s) { fail_nomem(r); return NULL; }
    r->pos += (size_t)n;
    return s;
}

/* A [bytes] slice of the input (not copied): *len -1 for null; -2 (unset) only when
 * allow_unset. Returns a pointer into the input, or NULL for null/unset/failure. */
static const uint8_t *rd_bytes_view(reader *r, int32_t *len, int allow_unset, const char *item)
{
    *len = -1;
    int32_t n = rd_i32(r, item);
    if (r->is_failed) return NULL;
    if (n < 0) {
        if (n == -1 || (n == -2 && allow_unset)) { *len = n; return NULL; }
        fail(r, "%s has an invalid length %" PRId32, item, n);
        return NULL;
    }
    if (need(r, (size_t)n, item)) return NULL;
    const uint8_t *p = r->p + r->pos;
    r->pos += (size_t)n;
    *len = n;
    return p;
}

static const uint8_t *copy_bytes(reader *r, kp_arena *a, const uint8_t *p, size_t n)
{
    uint8_t *c = kp_arena_alloc(a, n ? n : 1);
    if (!c) { fail_nomem(r); return NULL; }
    if (n) memcpy(c, p, n);
    return c;
}

static const uint8_t *rd_bytes(reader *r, kp_arena *a, int32_t *len, const char *item)
{
    const uint8_t *p = rd_bytes_view(r, len, 0, item);
    if (!p) return NULL;
    return copy_bytes(r, a, p, (size_t)*len);
}

static const uint8_t *rd_short_bytes(reader *r, kp_arena *a, uint16_t *len, const char *item)
{
    *len = rd_u16(r, item);
    if (need(r, *len, item)) { *len = 0; return NULL; }
    const uint8_t *p = copy_bytes(r, a, r->p + r->pos, *len);
    r->pos += *len;
    return p;
}

static const char **rd_string_list(reader *r, kp_arena *a, size_t *count, const char *item)
{
    *count = 0;
    uint16_t n = rd_u16(r, item);
    if (r->is_failed) return NULL;
    if ((size_t)n * 2 > left(r)) { fail(r, "%s announces %u strings in %zu bytes", item, n, left(r)); return NULL; }
    const char **list = kp_arena_alloc(a, (n ? n : 1) * sizeof *list);
    if (!list) { fail_nomem(r); return NULL; }
    for (uint16_t i = 0; i < n; i++) {
        list[i] = rd_string(r, a, item);
        if (!list[i]) return NULL;
    }
    *count = n;
    return list;
}

/* ---- the header ------------------------------------------------------------------------- */

void kp_cql_header_encode(const kp_cql_header *h, uint8_t out[KP_CQL_HEADER_SIZE])
{
    out[0] = h->version;
    out[1] = h->flags;
    out[2] = (uint8_t)((uint16_t)h->stream >> 8);
    out[3] = (uint8_t)h->stream;
    out[4] = h->opcode;
    out[5] = (uint8_t)(h->length >> 24);
    out[6] = (uint8_t)(h->length >> 16);
    out[7] = (uint8_t)(h->length >> 8);
    out[8] = (uint8_t)h->length;
}

int kp_cql_header_decode(const uint8_t *buf, size_t len, int is_response, uint32_t max_body, kp_cql_header *out,
                         kp_error *err)
{
    if (len < KP_CQL_HEADER_SIZE)
        return kp_error_set(err, KP_ERR_TARGET, NULL, 0, 0,
                            "truncated CQL frame: a header needs 9 bytes, got %zu", len);
    kp_cql_header h;
    h.version = buf[0];
    h.flags = buf[1];
    h.stream = (int16_t)(uint16_t)(buf[2] << 8 | buf[3]);
    h.opcode = buf[4];
    h.length = (uint32_t)buf[5] << 24 | (uint32_t)buf[6] << 16 | (uint32_t)buf[7] << 8 | buf[8];
    if ((h.version & 0x7F) != KP_CQL_VERSION)
        return kp_error_set(err, KP_ERR_TARGET, NULL, 0, 0,
                            "the server answered with CQL native protocol version %d, not 4 (version byte 0x%02x): "
                            "keyplan speaks v4, which Cassandra 3.0 and later support",
                            h.version & 0x7F, h.version);
    if (!!(h.version & KP_CQL_RESPONSE_BIT) != !!is_response)
        return kp_error_set(err, KP_ERR_TARGET, NULL, 0, 0,
                            "malformed CQL frame: a %s frame carries the %s direction bit (version byte 0x%02x)",
                            is_response ? "response" : "request", is_response ? "request" : "response", h.version);
    if (is_response ? !is_response_opcode(h.opcode) : !is_request_opcode(h.opcode))
        return kp_error_set(err, KP_ERR_TARGET, NULL, 0, 0, "malformed CQL frame: opcode 0x%02x is not a %s", h.opcode,
                            is_response ? "response" : "request");
    uint32_t limit = max_body ? max_body : (uint32_t)KP_CQL_MAX_BODY;
    if (limit > (uint32_t)KP_CQL_MAX_BODY) limit = KP_CQL_MAX_BODY;
    if (h.length > limit)
        return kp_error_set(err, KP_ERR_TARGET, NULL, 0, 0,
                            "CQL %s frame of %" PRIu32 " bytes is larger than the %" PRIu32 "-byte limit",
                            opcode_name(h.opcode), h.length, limit);
    if (h.flags & KP_CQL_FLAG_COMPRESSION)
        return kp_error_set(err, KP_ERR_TARGET, NULL, 0, 0,
                            "the server sent a compressed CQL frame although keyplan never asks for compression");
    if (is_response && h.stream < -1)
        return kp_error_set(err, KP_ERR_TARGET, NULL, 0, 0, "malformed CQL frame: stream id %d", h.stream);
    *out = h;
    return 0;
}

/* ---- types --------------------------------------------------------------------------------- */

#define SIMPLE(c) {.code = (c)}
static const kp_cql_type simple_types[] = {
    SIMPLE(0x00), SIMPLE(0x01), SIMPLE(0x02), SIMPLE(0x03), SIMPLE(0x04), SIMPLE(0x05), SIMPLE(0x06),
    SIMPLE(0x07), SIMPLE(0x08), SIMPLE(0x09), SIMPLE(0x0A), SIMPLE(0x0B), SIMPLE(0x0C), SIMPLE(0x0D),
    SIMPLE(0x0E), SIMPLE(0x0F), SIMPLE(0x10), SIMPLE(0x11), SIMPLE(0x12), SIMPLE(0x13), SIMPLE(0x14),
};
#undef SIMPLE

static int is_simple_code(unsigned code)
{
    return code >= KP_CQL_T_ASCII && code <= KP_CQL_T_TINYINT && code != 0x000A;
}

static const char *simple_name(unsigned code)
{
    switch (code) {
    case KP_CQL_T_ASCII: return "ascii";
    case KP_CQL_T_BIGINT: return "bigint";
    case KP_CQL_T_BLOB: return "blob";
    case KP_CQL_T_BOOLEAN: return "boolean";
    case KP_CQL_T_COUNTER: return "counter";
    case KP_CQL_T_DECIMAL: return "decimal";
    case KP_CQL_T_DOUBLE: return "double";
    case KP_CQL_T_FLOAT: return "float";
    case KP_CQL_T_INT: return "int";
    case KP_CQL_T_TIMESTAMP: return "timestamp";
    case KP_CQL_T_UUID: return "uuid";
    case KP_CQL_T_VARCHAR: return "text";
    case KP_CQL_T_VARINT: return "varint";
    case KP_CQL_T_TIMEUUID: return "timeuuid";
    case KP_CQL_T_INET: return "inet";
    case KP_CQL_T_DATE: return "date";
    case KP_CQL_T_TIME: return "time";
    case KP_CQL_T_SMALLINT: return "smallint";
    case KP_CQL_T_TINYINT: return "tinyint";
    default: return NULL;
    }
}

static const kp_cql_type *rd_type(reader *r, kp_arena *a, int depth)
{
    if (depth > KP_CQL_MAX_TYPE_DEPTH) { fail(r, "a type nests deeper than %d levels", KP_CQL_MAX_TYPE_DEPTH); return NULL; }
    uint16_t code = rd_u16(r, "type option");
    if (r->is_failed) return NULL;
    if (is_simple_code(code)) return &simple_types[code];
    kp_cql_type *t = kp_arena_alloc(a, sizeof *t);
    if (!t) { fail_nomem(r); return NULL; }
    t->code = code;
    size_t n;
    switch (code) {
    case KP_CQL_T_CUSTOM:
        t->custom_class = rd_string(r, a, "custom type class");
        return t->custom_class ? t : NULL;
    case KP_CQL_T_LIST: case KP_CQL_T_SET: case KP_CQL_T_MAP:
        n = code == KP_CQL_T_MAP ? 2 : 1;
        break;
    case KP_CQL_T_UDT:
        t->keyspace = rd_string(r, a, "UDT keyspace");
        t->name = rd_string(r, a, "UDT name");
        n = rd_u16(r, "UDT field count");
        if (r->is_failed) return NULL;
        if (n * 4 > left(r)) { fail(r, "a UDT announces %zu fields in %zu bytes", n, left(r)); return NULL; }
        t->field_names = kp_arena_alloc(a, (n ? n : 1) * sizeof *t->field_names);
        if (!t->field_names) { fail_nomem(r); return NULL; }
        break;
    case KP_CQL_T_TUPLE:
        n = rd_u16(r, "tuple size");
        if (r->is_failed) return NULL;
        if (n * 2 > left(r)) { fail(r, "a tuple announces %zu components in %zu bytes", n, left(r)); return NULL; }
        break;
    default:
        fail(r, "unknown type code 0x%04x", code);
        return NULL;
    }
    const kp_cql_type **elements = kp_arena_alloc(a, (n ? n : 1) * sizeof *elements);
    if (!elements) { fail_nomem(r); return NULL; }
    for (size_t i = 0; i < n; i++) {
        if (code == KP_CQL_T_UDT) {
            t->field_names[i] = rd_string(r, a, "UDT field name");
            if (!t->field_names[i]) return NULL;
        }
        elements[i] = rd_type(r, a, depth + 1);
        if (!elements[i]) return NULL;
    }
    t->elements = elements;
    t->element_count = (uint16_t)n;
    return t;
}

static int put_type(kp_cql_buf *b, const kp_cql_type *t, int depth, kp_error *err)
{
    if (!t || depth > KP_CQL_MAX_TYPE_DEPTH)
        return kp_error_set(err, KP_ERR_INTERNAL, NULL, 0, 0, "a CQL type is missing or nests too deep to encode");
    put_u16(b, t->code);
    switch (t->code) {
    case KP_CQL_T_CUSTOM: return put_string(b, t->custom_class ? t->custom_class : "", err);
    case KP_CQL_T_LIST: case KP_CQL_T_SET: case KP_CQL_T_MAP:
        if (t->element_count != (t->code == KP_CQL_T_MAP ? 2 : 1))
            return kp_error_set(err, KP_ERR_INTERNAL, NULL, 0, 0, "a CQL collection type has %u element types",
                                t->element_count);
        for (unsigned i = 0; i < t->element_count; i++)
            if (put_type(b, t->elements[i], depth + 1, err)) return -1;
        return 0;
    case KP_CQL_T_UDT:
        if (put_string(b, t->keyspace, err) || put_string(b, t->name, err)) return -1;
        put_u16(b, t->element_count);
        for (unsigned i = 0; i < t->element_count; i++)
            if (put_string(b, t->field_names[i], err) || put_type(b, t->elements[i], depth + 1, err)) return -1;
        return 0;
    case KP_CQL_T_TUPLE:
        put_u16(b, t->element_count);
        for (unsigned i = 0; i < t->element_count; i++)
            if (put_type(b, t->elements[i], depth + 1, err)) return -1;
        return 0;
    default:
        if (!is_simple_code(t->code))
            return kp_error_set(err, KP_ERR_INTERNAL, NULL, 0, 0, "unknown CQL type code 0x%04x", t->code);
        return 0;
    }
}

int kp_cql_type_equal(const kp_cql_type *a, const kp_cql_type *b)
{
    if (a == b) return 1;
    if (!a || !b || a->code != b->code || a->element_count != b->element_count) return 0;
    if (a->code == KP_CQL_T_CUSTOM) return a->custom_class && b->custom_class && !strcmp(a->custom_class, b->custom_class);
    if (a->code == KP_CQL_T_UDT) {
        if (strcmp(a->keyspace ? a->keyspace : "", b->keyspace ? b->keyspace : "") ||
            strcmp(a->name ? a->name : "", b->name ? b->name : ""))
            return 0;
        for (unsigned i = 0; i < a->element_count; i++)
            if (strcmp(a->field_names[i], b->field_names[i])) return 0;
    }
    for (unsigned i = 0; i < a->element_count; i++)
        if (!kp_cql_type_equal(a->elements[i], b->elements[i])) return 0;
    return 1;
}

const kp_cql_type *kp_cql_type_copy(const kp_cql_type *t, kp_arena *a)
{
    if (!t) return NULL;
    if (is_simple_code(t->code)) return &simple_types[t->code];
    kp_cql_type *c = kp_arena_alloc(a, sizeof *c);
    if (!c) return NULL;
    c->code = t->code;
    c->element_count = t->element_count;
    if (t->custom_class && !(c->custom_class = kp_arena_strdup(a, t->custom_class))) return NULL;
    if (t->keyspace && !(c->keyspace = kp_arena_strdup(a, t->keyspace))) return NULL;
    if (t->name && !(c->name = kp_arena_strdup(a, t->name))) return NULL;
    if (t->element_count) {
        const kp_cql_type **e = kp_arena_alloc(a, t->element_count * sizeof *e);
        if (!e) return NULL;
        for (unsigned i = 0; i < t->element_count; i++)
            if (!(e[i] = kp_cql_type_copy(t->elements[i], a))) return NULL;
        c->elements = e;
        if (t->field_names) {
            const char **f = kp_arena_alloc(a, t->element_count * sizeof *f);
            if (!f) return NULL;
            for (unsigned i = 0; i < t->element_count; i++)
                if (!(f[i] = kp_arena_strdup(a, t->field_names[i]))) return NULL;
            c->field_names = f;
        }
    }
    return c;
}

/* Appends to out[*pos..size) without overflowing, keeping it NUL-terminated. */
static void append(char *out, size_t size, size_t *pos, const char *s)
{
    size_t n = strlen(s);
    if (*pos + 1 >= size) return;
    if (n > size - 1 - *pos) n = size - 1 - *pos;
    memcpy(out + *pos, s, n);
    *pos += n;
    out[*pos] = '\0';
}

static void type_text(const kp_cql_type *t, char *out, size_t size, size_t *pos, int depth)
{
    if (!t || depth > KP_CQL_MAX_TYPE_DEPTH) { append(out, size, pos, "?"); return; }
    const char *simple = simple_name(t->code);
    if (simple) { append(out, size, pos, simple); return; }
    switch (t->code) {
    case KP_CQL_T_CUSTOM:
        append(out, size, pos, "'");
        append(out, size, pos, t->custom_class ? t->custom_class : "");
        append(out, size, pos, "'");
        return;
    case KP_CQL_T_UDT:
        append(out, size, pos, t->keyspace ? t->keyspace : "");
        append(out, size, pos, ".");
        append(out, size, pos, t->name ? t->name : "");
        return;
    default: break;
    }
    append(out, size, pos, t->code == KP_CQL_T_LIST ? "list<" : t->code == KP_CQL_T_SET ? "set<" :
                           t->code == KP_CQL_T_MAP  ? "map<"  : t->code == KP_CQL_T_TUPLE ? "tuple<" : "?<");
    for (unsigned i = 0; i < t->element_count; i++) {
        if (i) append(out, size, pos, ", ");
        type_text(t->elements[i], out, size, pos, depth + 1);
    }
    append(out, size, pos, ">");
}

char *kp_cql_type_text(const kp_cql_type *type, char *out, size_t size)
{
    size_t pos = 0;
    if (size) out[0] = '\0';
    type_text(type, out, size, &pos, 0);
    return out;
}

/* ---- parsing CQL type text --------------------------------------------------------------- */

typedef struct type_parser {
    const char *s;
    size_t pos;
    kp_arena *arena;
    kp_error *err;
} type_parser;

static void skip_space(type_parser *p)
{
    while (isspace((unsigned char)p->s[p->pos])) p->pos++;
}

static const kp_cql_type *parse_type(type_parser *p, int depth);

static int parse_fail(type_parser *p, const char *why)
{
    return kp_error_set(p->err, KP_ERR_USAGE, NULL, 0, 0, "cannot read the CQL type \"%.200s\": %s at character %zu",
                        p->s, why, p->pos + 1);
}

static const kp_cql_type *parse_type(type_parser *p, int depth)
{
    if (depth > KP_CQL_MAX_TYPE_DEPTH) { parse_fail(p, "nested too deep"); return NULL; }
    skip_space(p);
    if (p->s[p->pos] == '\'') {
        size_t start = ++p->pos;
        while (p->s[p->pos] && p->s[p->pos] != '\'') p->pos++;
        if (!p->s[p->pos]) { parse_fail(p, "unterminated custom class"); return NULL; }
        kp_cql_type *t = kp_arena_alloc(p->arena, sizeof *t);
        if (!t || !(t->custom_class = kp_arena_strndup(p->arena, p->s + start, p->pos - start))) {
            kp_error_set(p->err, KP_ERR_NOMEM, NULL, 0, 0, "out of memory");
            return NULL;
        }
        t->code = KP_CQL_T_CUSTOM;
        p->pos++;
        return t;
    }
    char word[32];
    size_t n = 0;
    while (isalnum((unsigned char)p->s[p->pos]) || p->s[p->pos] == '_') {
        if (n + 1 < sizeof word) word[n++] = (char)tolower((unsigned char)p->s[p->pos]);
        p->pos++;
    }
    word[n] = '\0';
    if (!n) { parse_fail(p, "expected a type name"); return NULL; }
    static const struct { const char *name; uint16_t code; } simple[] = {
        {"ascii", KP_CQL_T_ASCII}, {"bigint", KP_CQL_T_BIGINT}, {"blob", KP_CQL_T_BLOB},
        {"boolean", KP_CQL_T_BOOLEAN}, {"counter", KP_CQL_T_COUNTER}, {"decimal", KP_CQL_T_DECIMAL},
        {"double", KP_CQL_T_DOUBLE}, {"float", KP_CQL_T_FLOAT}, {"int", KP_CQL_T_INT},
        {"timestamp", KP_CQL_T_TIMESTAMP}, {"uuid", KP_CQL_T_UUID}, {"varchar", KP_CQL_T_VARCHAR},
        {"text", KP_CQL_T_VARCHAR}, {"varint", KP_CQL_T_VARINT}, {"timeuuid", KP_CQL_T_TIMEUUID},
        {"inet", KP_CQL_T_INET}, {"date", KP_CQL_T_DATE}, {"time", KP_CQL_T_TIME},
        {"smallint", KP_CQL_T_SMALLINT}, {"tinyint", KP_CQL_T_TINYINT},
    };
    for (size_t i = 0; i < sizeof simple / sizeof simple[0]; i++)
        if (!strcmp(word, simple[i].name)) return &simple_types[simple[i].code];
    uint16_t code;
    int is_frozen = !strcmp(word, "frozen");
    if (is_frozen) code = 0;
    else if (!strcmp(word, "list")) code = KP_CQL_T_LIST;
    else if (!strcmp(word, "set")) code = KP_CQL_T_SET;
    else if (!strcmp(word, "map")) code = KP_CQL_T_MAP;
    else if (!strcmp(word, "tuple")) code = KP_CQL_T_TUPLE;
    else {
        parse_fail(p, "unknown type (user-defined types cannot be read from text)");
        return NULL;
    }
    skip_space(p);
    if (p->s[p->pos] != '<') { parse_fail(p, "expected '<'"); return NULL; }
    p->pos++;
    const kp_cql_type *items[64];
    size_t count = 0;
    for (;;) {
        if (count == sizeof items / sizeof items[0]) { parse_fail(p, "too many components"); return NULL; }
        items[count] = parse_type(p, depth + 1);
        if (!items[count]) return NULL;
        count++;
        skip_space(p);
        if (p->s[p->pos] == ',') { p->pos++; continue; }
        if (p->s[p->pos] == '>') { p->pos++; break; }
        parse_fail(p, "expected ',' or '>'");
        return NULL;
    }
    if (is_frozen) {
        if (count != 1) { parse_fail(p, "frozen<> takes one type"); return NULL; }
        return items[0];
    }
    if ((code == KP_CQL_T_MAP && count != 2) || ((code == KP_CQL_T_LIST || code == KP_CQL_T_SET) && count != 1)) {
        parse_fail(p, "wrong number of element types");
        return NULL;
    }
    kp_cql_type *t = kp_arena_alloc(p->arena, sizeof *t);
    const kp_cql_type **e = kp_arena_alloc(p->arena, count * sizeof *e);
    if (!t || !e) { kp_error_set(p->err, KP_ERR_NOMEM, NULL, 0, 0, "out of memory"); return NULL; }
    memcpy(e, items, count * sizeof *e);
    t->code = code;
    t->elements = e;
    t->element_count = (uint16_t)count;
    return t;
}

int kp_cql_type_parse(const char *text, kp_arena *arena, const kp_cql_type **out, kp_error *err)
{
    type_parser p = {.s = text ? text : "", .arena = arena, .err = err};
    const kp_cql_type *t = parse_type(&p, 0);
    if (!t) return -1;
    skip_space(&p);
    if (p.s[p.pos]) return parse_fail(&p, "unexpected text after the type");
    *out = t;
    return 0;
}

/* ---- big integers (varint, decimal) -------------------------------------------------------- */

/* A magnitude in base 2^32, least significant limb first. */
typedef struct bignum {
    uint32_t *limbs;
    size_t n;
} bignum;

static int big_mul_add(bignum *b, uint32_t mul, uint32_t add, size_t cap)
{
    uint64_t carry = add;
    for (size_t i = 0; i < b->n; i++) {
        uint64_t v = (uint64_t)b->limbs[i] * mul + carry;
        b->limbs[i] = (uint32_t)v;
        carry = v >> 32;
    }
    if (carry) {
        if (b->n == cap) return -1;
        b->limbs[b->n++] = (uint32_t)carry;
    }
    return 0;
}

/* Divides by d in place and returns the remainder; drops leading zero limbs. */
static uint32_t big_div(bignum *b, uint32_t d)
{
    uint64_t rem = 0;
    for (size_t i = b->n; i-- > 0;) {
        uint64_t cur = rem << 32 | b->limbs[i];
        b->limbs[i] = (uint32_t)(cur / d);
        rem = cur % d;
    }
    while (b->n && b->limbs[b->n - 1] == 0) b->n--;
    return (uint32_t)rem;
}

/* Digits (no sign, at least one) -> two's complement bytes appended to out. */
static int varint_from_digits(const char *digits, size_t len, int negative, kp_cql_buf *out, kp_error *err)
{
    if (len > KP_CQL_MAX_NUMBER_TEXT)
        return kp_error_set(err, KP_ERR_DATA, NULL, 0, 0, "an integer of %zu digits is longer than keyplan converts (%d)",
                            len, KP_CQL_MAX_NUMBER_TEXT);
    size_t cap = len / 9 + 2;
    bignum b = {calloc(cap, sizeof(uint32_t)), 0};
    if (!b.limbs) return kp_error_set(err, KP_ERR_NOMEM, NULL, 0, 0, "out of memory");
    static const uint32_t pow10[] = {1, 10, 100, 1000, 10000, 100000, 1000000, 10000000, 100000000, 1000000000};
    size_t i = 0;
    while (i < len) {
        size_t k = len - i < 9 ? len - i : 9;
        uint32_t chunk = 0;
        for (size_t j = 0; j < k; j++) chunk = chunk * 10 + (uint32_t)(digits[i + j] - '0');
        big_mul_add(&b, pow10[k], chunk, cap);
        i += k;
    }
    /* magnitude, big-endian, with one leading zero byte of headroom */
    size_t nbytes = b.n * 4 + 1;
    uint8_t *m = calloc(nbytes, 1);
    if (!m) { free(b.limbs); return kp_error_set(err, KP_ERR_NOMEM, NULL, 0, 0, "out of memory"); }
    for (size_t l = 0; l < b.n; l++)
        for (int byte = 0; byte < 4; byte++)
            m[nbytes - 1 - (l * 4 + (size_t)byte)] = (uint8_t)(b.limbs[l] >> (8 * byte));
    free(b.limbs);
    int is_zero = 1;
    for (size_t k = 0; k < nbytes; k++) if (m[k]) is_zero = 0;
    if (negative && !is_zero) {
        for (size_t k = 0; k < nbytes; k++) m[k] = (uint8_t)~m[k];
        for (size_t k = nbytes; k-- > 0;) if (++m[k] != 0) break;
    }
    /* minimal two's complement: drop a leading byte that only repeats the sign */
    size_t start = 0;
    while (start + 1 < nbytes &&
           ((m[start] == 0x00 && !(m[start + 1] & 0x80)) || (m[start] == 0xFF && (m[start + 1] & 0x80))))
        start++;
    if (nbytes - start > KP_CQL_MAX_VARINT_BYTES) {
        free(m);
        return kp_error_set(err, KP_ERR_DATA, NULL, 0, 0, "an integer of %zu bytes is larger than keyplan converts (%d)",
                            nbytes - start, KP_CQL_MAX_VARINT_BYTES);
    }
    put_raw(out, m + start, nbytes - start);
    free(m);
    return buf_check(out, err);
}

int kp_cql_varint_from_text(const char *text, size_t len, kp_cql_buf *out, kp_error *err)
{
    size_t i = 0;
    int negative = 0;
    if (i < len && (text[i] == '-' || text[i] == '+')) negative = text[i++] == '-';
    if (i == len) return kp_error_set(err, KP_ERR_DATA, NULL, 0, 0, "expected an integer, got \"%.*s\"", (int)len, text);
    for (size_t k = i; k < len; k++)
        if (!isdigit((unsigned char)text[k]))
            return kp_error_set(err, KP_ERR_DATA, NULL, 0, 0, "expected an integer, got \"%.*s\"",
                                (int)(len > 60 ? 60 : len), text);
    return varint_from_digits(text + i, len - i, negative, out, err);
}

/* Two's complement -> sign and decimal digits of the magnitude (malloc'd). */
static char *varint_digits(const uint8_t *bytes, size_t n, int *negative, kp_error *err)
{
    if (n == 0) { kp_error_set(err, KP_ERR_TARGET, NULL, 0, 0, "malformed CQL varint: no bytes"); return NULL; }
    if (n > KP_CQL_MAX_VARINT_BYTES + 1) {
        kp_error_set(err, KP_ERR_TARGET, NULL, 0, 0, "a CQL varint of %zu bytes is larger than keyplan converts (%d)", n,
                     KP_CQL_MAX_VARINT_BYTES);
        return NULL;
    }
    *negative = bytes[0] & 0x80;
    uint8_t *m = malloc(n);
    size_t limb_count = n / 4 + 1;
    bignum b = {calloc(limb_count, sizeof(uint32_t)), 0};
    char *digits = malloc(n * 3 + 16);
    if (!m || !b.limbs || !digits) {
        free(m); free(b.limbs); free(digits);
        kp_error_set(err, KP_ERR_NOMEM, NULL, 0, 0, "out of memory");
        return NULL;
    }
    memcpy(m, bytes, n);
    if (*negative) {
        for (size_t k = 0; k < n; k++) m[k] = (uint8_t)~m[k];
        for (size_t k = n; k-- > 0;) if (++m[k] != 0) break;
    }
    /* -2^(8n-1) negates to itself: m now reads as the unsigned magnitude either way */
    for (size_t k = 0; k < n; k++) {
        size_t bit = (n - 1 - k) * 8;
        b.limbs[bit / 32] |= (uint32_t)m[k] << (bit % 32);
    }
    free(m);
    b.n = limb_count;
    while (b.n && b.limbs[b.n - 1] == 0) b.n--;
    size_t len = 0;
    /* digits in reverse, 9 at a time */
    do {
        uint32_t chunk = big_div(&b, 1000000000u);
        for (int k = 0; k < 9; k++) {
            digits[len++] = (char)('0' + chunk % 10);
            chunk /= 10;
            if (b.n == 0 && chunk == 0) break;
        }
    } while (b.n);
    free(b.limbs);
    while (len > 1 && digits[len - 1] == '0') len--;
    for (size_t k = 0; k < len / 2; k++) {
        char c = digits[k];
        digits[k] = digits[len - 1 - k];
        digits[len - 1 - k] = c;
    }
    digits[len] = '\0';
    if (len == 1 && digits[0] == '0') *negative = 0;
    return digits;
}

char *kp_cql_varint_to_text(const uint8_t *bytes, size_t n, kp_error *err)
{
    int negative;
    char *digits = varint_digits(bytes, n, &negative, err);
    if (!digits || !negative) return digits;
    size_t len = strlen(digits);
    char *text = malloc(len + 2);
    if (!text) { free(digits); kp_error_set(err, KP_ERR_NOMEM, NULL, 0, 0, "out of memory"); return NULL; }
    text[0] = '-';
    memcpy(text + 1, digits, len + 1);
    free(digits);
    return text;
}

int kp_cql_decimal_from_text(const char *text, size_t len, kp_cql_buf *out, kp_error *err)
{
    size_t i = 0;
    int negative = 0;
    if (i < len && (text[i] == '-' || text[i] == '+')) negative = text[i++] == '-';
    size_t int_start = i;
    while (i < len && isdigit((unsigned char)text[i])) i++;
    size_t int_len = i - int_start, frac_start = i, frac_len = 0;
    if (i < len && text[i] == '.') {
        frac_start = ++i;
        while (i < len && isdigit((unsigned char)text[i])) i++;
        frac_len = i - frac_start;
    }
    int64_t exponent = 0;
    int bad = int_len + frac_len == 0;
    if (!bad && i < len && (text[i] == 'e' || text[i] == 'E')) {
        i++;
        int exp_negative = 0;
        if (i < len && (text[i] == '-' || text[i] == '+')) exp_negative = text[i++] == '-';
        if (i == len) bad = 1;
        while (i < len && isdigit((unsigned char)text[i])) {
            if (exponent < 1000000000) exponent = exponent * 10 + (text[i] - '0');
            i++;
        }
        if (exp_negative) exponent = -exponent;
    }
    if (bad || i != len)
        return kp_error_set(err, KP_ERR_DATA, NULL, 0, 0, "expected a decimal like 19.99, got \"%.*s\"",
                            (int)(len > 60 ? 60 : len), text);
    int64_t scale = (int64_t)frac_len - exponent;
    if (scale > INT32_MAX || scale < INT32_MIN)
        return kp_error_set(err, KP_ERR_DATA, NULL, 0, 0, "the decimal \"%.*s\" has a scale beyond 32 bits",
                            (int)(len > 60 ? 60 : len), text);
    if (int_len + frac_len > KP_CQL_MAX_NUMBER_TEXT)
        return kp_error_set(err, KP_ERR_DATA, NULL, 0, 0, "a decimal of %zu digits is longer than keyplan converts (%d)",
                            int_len + frac_len, KP_CQL_MAX_NUMBER_TEXT);
    char *digits = malloc(int_len + frac_len + 1);
    if (!digits) return kp_error_set(err, KP_ERR_NOMEM, NULL, 0, 0, "out of memory");
    memcpy(digits, text + int_start, int_len);
    memcpy(digits + int_len, text + frac_start, frac_len);
    put_i32(out, (int32_t)scale);
    int rc = varint_from_digits(digits, int_len + frac_len, negative, out, err);
    free(digits);
    return rc;
}

char *kp_cql_decimal_to_text(const uint8_t *bytes, size_t n, kp_error *err)
{
    if (n < 5) {
        kp_error_set(err, KP_ERR_TARGET, NULL, 0, 0, "malformed CQL decimal: %zu bytes, at least 5 needed", n);
        return NULL;
    }
    int32_t scale = (int32_t)((uint32_t)bytes[0] << 24 | (uint32_t)bytes[1] << 16 | (uint32_t)bytes[2] << 8 | bytes[3]);
    int negative;
    char *digits = varint_digits(bytes + 4, n - 4, &negative, err);
    if (!digits) return NULL;
    size_t dlen = strlen(digits);
    int is_zero = dlen == 1 && digits[0] == '0';
    /* zeros the text needs beyond the digits: bounded, so that a 5-byte value cannot
     * become a huge string (real decimals have scales of a few dozen at most) */
    int64_t zeros = 0;
    if (scale < 0 && !is_zero) zeros = -(int64_t)scale;
    if (scale > 0 && scale > (int64_t)dlen) zeros = scale - (int64_t)dlen;
    int64_t total = (int64_t)dlen + 3 + zeros;
    if (zeros > KP_CQL_MAX_DECIMAL_ZEROS) {
        free(digits);
        kp_error_set(err, KP_ERR_TARGET, NULL, 0, 0,
                     "a CQL decimal with scale %" PRId32 " is too long for keyplan's exact text", scale);
        return NULL;
    }
    char *text = malloc((size_t)total + 1);
    if (!text) { free(digits); kp_error_set(err, KP_ERR_NOMEM, NULL, 0, 0, "out of memory"); return NULL; }
    size_t p = 0;
    if (negative) text[p++] = '-';
    if (scale <= 0) {
        memcpy(text + p, digits, dlen);
        p += dlen;
        if (!is_zero)
            for (int64_t k = 0; k < -(int64_t)scale; k++) text[p++] = '0';
    } else if ((int64_t)dlen > scale) {
        size_t int_len = dlen - (size_t)scale;
        memcpy(text + p, digits, int_len);
        p += int_len;
        text[p++] = '.';
        memcpy(text + p, digits + int_len, (size_t)scale);
        p += (size_t)scale;
    } else {
        text[p++] = '0';
        text[p++] = '.';
        for (int64_t k = 0; k < scale - (int64_t)dlen; k++) text[p++] = '0';
        memcpy(text + p, digits, dlen);
        p += dlen;
    }
    text[p] = '\0';
    free(digits);
    return text;
}

/* ---- base64 ---------------------------------------------------------------------------------- */

static const char b64_alphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

static char *base64_encode(const uint8_t *p, size_t n)
{
    char *out = malloc((n + 2) / 3 * 4 + 1);
    if (!out) return NULL;
    size_t o = 0;
    for (size_t i = 0; i < n; i += 3) {
        uint32_t v = (uint32_t)p[i] << 16 | (i + 1 < n ? (uint32_t)p[i + 1] << 8 : 0) | (i + 2 < n ? p[i + 2] : 0);
        out[o++] = b64_alphabet[v >> 18 & 63];
        out[o++] = b64_alphabet[v >> 12 & 63];
        out[o++] = i + 1 < n ? b64_alphabet[v >> 6 & 63] : '=';
        out[o++] = i + 2 < n ? b64_alphabet[v & 63] : '=';
    }
    out[o] = '\0';
    return out;
}

static int b64_value(char c)
{
    const char *at = c ? strchr(b64_alphabet, c) : NULL;
    return at ? (int)(at - b64_alphabet) : -1;
}

/* Appends the decoded bytes; -1 when the text is not canonical padded base64. */
static int base64_decode(const char *s, kp_cql_buf *out)
{
    size_t n = strlen(s);
    if (n % 4) return -1;
    for (size_t i = 0; i < n; i += 4) {
        int v[4];
        for (int k = 0; k < 4; k++) {
            v[k] = b64_value(s[i + (size_t)k]);
            if (v[k] < 0 && !(s[i + (size_t)k] == '=' && i + 4 == n && k >= 2)) return -1;
        }
        if (v[2] < 0 && v[3] >= 0) return -1;
        uint32_t x = (uint32_t)v[0] << 18 | (uint32_t)v[1] << 12 | (uint32_t)(v[2] < 0 ? 0 : v[2]) << 6 |
                     (uint32_t)(v[3] < 0 ? 0 : v[3]);
        put_u8(out, (uint8_t)(x >> 16));
        if (v[2] >= 0) put_u8(out, (uint8_t)(x >> 8));
        if (v[3] >= 0) put_u8(out, (uint8_t)x);
    }
    return 0;
}

/* ---- values: JSON -> bytes ------------------------------------------------------------------- */

static int value_error(kp_error *err, const kp_cql_type *type, const cJSON *value, const char *why)
{
    char got[80], tname[120];
    if (cJSON_IsRaw(value) && value->valuestring) {
        if (strlen(value->valuestring) > 40) snprintf(got, sizeof got, "%.37s...", value->valuestring);
        else snprintf(got, sizeof got, "%s", value->valuestring);
    } else {
        kp_json_describe(value, got, sizeof got);
    }
    kp_cql_type_text(type, tname, sizeof tname);
    return kp_error_set(err, KP_ERR_DATA, NULL, 0, 0, "expected %s for CQL type %s, got %s", why, tname, got);
}

/* The exact text of a number node (cJSON_Raw or cJSON_Number), or NULL. */
static const char *number_text(const cJSON *v, char *buf, size_t size, size_t *len)
{
    if (cJSON_IsRaw(v) && v->valuestring) {
        *len = strlen(v->valuestring);
        return v->valuestring;
    }
    if (cJSON_IsNumber(v)) return kp_number_text(v, NULL, buf, size, len);
    return NULL;
}

static int parse_int_node(const cJSON *v, int64_t min, int64_t max, int64_t *out)
{
    char buf[64];
    size_t len;
    const char *t = number_text(v, buf, sizeof buf, &len);
    if (!t) return -1;
    int64_t x;
    if (kp_int_parse(t, len, &x) && !(len == 2 && t[0] == '-' && t[1] == '0')) return -1;
    if (len == 2 && t[0] == '-' && t[1] == '0') x = 0;
    if (x < min || x > max) return -1;
    *out = x;
    return 0;
}

static int parse_uuid(const char *s, uint8_t out[16])
{
    if (strlen(s) != 36) return -1;
    int k = 0;
    for (int i = 0; i < 36; i++) {
        if (i == 8 || i == 13 || i == 18 || i == 23) {
            if (s[i] != '-') return -1;
            continue;
        }
        int hi = isxdigit((unsigned char)s[i]) ? s[i] : -1;
        if (hi < 0) return -1;
        int d = isdigit(hi) ? hi - '0' : tolower(hi) - 'a' + 10;
        if (k % 2 == 0) out[k / 2] = (uint8_t)(d << 4);
        else out[k / 2] |= (uint8_t)d;
        k++;
    }
    return 0;
}

/* "HH:MM:SS[.f{1,9}]" -> nanoseconds since midnight. */
static int parse_time(const char *s, int64_t *out)
{
    if (strlen(s) < 8 || s[2] != ':' || s[5] != ':') return -1;
    for (int i = 0; i < 8; i++)
        if (i != 2 && i != 5 && !isdigit((unsigned char)s[i])) return -1;
    int h = (s[0] - '0') * 10 + s[1] - '0', m = (s[3] - '0') * 10 + s[4] - '0', sec = (s[6] - '0') * 10 + s[7] - '0';
    if (h > 23 || m > 59 || sec > 59) return -1;
    int64_t nanos = 0;
    const char *f = s + 8;
    if (*f == '.') {
        f++;
        int digits = 0;
        while (isdigit((unsigned char)*f) && digits < 9) { nanos = nanos * 10 + (*f - '0'); f++; digits++; }
        if (digits == 0) return -1;
        for (; digits < 9; digits++) nanos *= 10;
    }
    if (*f) return -1;
    *out = ((int64_t)h * 3600 + m * 60 + sec) * 1000000000LL + nanos;
    return 0;
}

static int encode_element(const kp_cql_type *type, const cJSON *value, kp_cql_buf *out, int depth, kp_error *err);

/* A map key given as object member text -> the key's JSON for its type. */
static cJSON *map_key_json(const kp_cql_type *key_type, const char *text)
{
    switch (key_type->code) {
    case KP_CQL_T_TINYINT: case KP_CQL_T_SMALLINT: case KP_CQL_T_INT: case KP_CQL_T_BIGINT:
    case KP_CQL_T_COUNTER: case KP_CQL_T_VARINT: case KP_CQL_T_DECIMAL:
        return cJSON_CreateRaw(text);
    case KP_CQL_T_DOUBLE: case KP_CQL_T_FLOAT:
        if (!strcmp(text, "NaN") || !strcmp(text, "Infinity") || !strcmp(text, "-Infinity"))
            return cJSON_CreateString(text);
        return cJSON_CreateRaw(text);
    case KP_CQL_T_TIMESTAMP: case KP_CQL_T_DATE:
        if (text[0] == '-' || (isdigit((unsigned char)text[0]) && !strchr(text, '-'))) return cJSON_CreateRaw(text);
        return cJSON_CreateString(text);
    case KP_CQL_T_BOOLEAN:
        if (!strcmp(text, "true")) return cJSON_CreateTrue();
        if (!strcmp(text, "false")) return cJSON_CreateFalse();
        return cJSON_CreateString(text);
    case KP_CQL_T_LIST: case KP_CQL_T_SET: case KP_CQL_T_MAP: case KP_CQL_T_TUPLE: case KP_CQL_T_UDT: {
        cJSON *parsed = cJSON_Parse(text);
        return parsed ? parsed : cJSON_CreateString(text);
    }
    default:
        return cJSON_CreateString(text);
    }
}

/* The serialized content (no length prefix) of a non-null value. */
static int encode_content(const kp_cql_type *t, const cJSON *v, kp_cql_buf *out, int depth, kp_error *err)
{
    char buf[64];
    size_t len;
    int64_t x;
    switch (t->code) {
    case KP_CQL_T_ASCII: case KP_CQL_T_VARCHAR: {
        if (!cJSON_IsString(v) || !v->valuestring) return value_error(err, t, v, "a string");
        size_t n = strlen(v->valuestring);
        if (t->code == KP_CQL_T_ASCII) {
            for (size_t i = 0; i < n; i++)
                if ((unsigned char)v->valuestring[i] > 127) return value_error(err, t, v, "an ASCII string");
        } else if (kp_utf8_check(v->valuestring, n) != n) {
            return value_error(err, t, v, "a UTF-8 string");
        }
        put_raw(out, v->valuestring, n);
        return 0;
    }
    case KP_CQL_T_BLOB: case KP_CQL_T_CUSTOM:
        if (!cJSON_IsString(v) || !v->valuestring || base64_decode(v->valuestring, out))
            return value_error(err, t, v, "a base64 string");
        return 0;
    case KP_CQL_T_BOOLEAN:
        if (!cJSON_IsBool(v)) return value_error(err, t, v, "true or false");
        put_u8(out, cJSON_IsTrue(v) ? 1 : 0);
        return 0;
    case KP_CQL_T_TINYINT:
        if (parse_int_node(v, INT8_MIN, INT8_MAX, &x)) return value_error(err, t, v, "an integer from -128 to 127");
        put_u8(out, (uint8_t)x);
        return 0;
    case KP_CQL_T_SMALLINT:
        if (parse_int_node(v, INT16_MIN, INT16_MAX, &x))
            return value_error(err, t, v, "an integer from -32768 to 32767");
        put_u16(out, (uint16_t)x);
        return 0;
    case KP_CQL_T_INT:
        if (parse_int_node(v, INT32_MIN, INT32_MAX, &x)) return value_error(err, t, v, "a 32-bit integer");
        put_u32(out, (uint32_t)x);
        return 0;
    case KP_CQL_T_BIGINT: case KP_CQL_T_COUNTER:
        if (parse_int_node(v, INT64_MIN, INT64_MAX, &x)) return value_error(err, t, v, "a 64-bit integer");
        put_u64(out, (uint64_t)x);
        return 0;
    case KP_CQL_T_VARINT: {
        const char *text = number_text(v, buf, sizeof buf, &len);
        if (!text) return value_error(err, t, v, "an integer");
        kp_error inner;
        if (kp_cql_varint_from_text(text, len, out, &inner)) return value_error(err, t, v, "an integer");
        return 0;
    }
    case KP_CQL_T_DECIMAL: {
        const char *text = number_text(v, buf, sizeof buf, &len);
        if (!text) return value_error(err, t, v, "a decimal number");
        kp_error inner;
        if (kp_cql_decimal_from_text(text, len, out, &inner)) return value_error(err, t, v, "a decimal number");
        return 0;
    }
    case KP_CQL_T_DOUBLE: case KP_CQL_T_FLOAT: {
        double d;
        if (cJSON_IsString(v) && v->valuestring) {
            if (!strcmp(v->valuestring, "NaN")) d = NAN;
            else if (!strcmp(v->valuestring, "Infinity")) d = INFINITY;
            else if (!strcmp(v->valuestring, "-Infinity")) d = -INFINITY;
            else return value_error(err, t, v, "a number");
        } else {
            const char *text = number_text(v, buf, sizeof buf, &len);
            if (!text) return value_error(err, t, v, "a number");
            char tmp[400];
            if (len >= sizeof tmp) return value_error(err, t, v, "a number");
            memcpy(tmp, text, len);
            tmp[len] = '\0';
            char *end;
            errno = 0;
            if (t->code == KP_CQL_T_FLOAT) d = strtof(tmp, &end);
            else d = strtod(tmp, &end);
            if (end == tmp || *end || isinf(d) || isnan(d)) return value_error(err, t, v, "a finite number");
        }
        if (t->code == KP_CQL_T_FLOAT) {
            float f = (float)d;
            uint32_t bits;
            memcpy(&bits, &f, 4);
            put_u32(out, bits);
        } else {
            uint64_t bits;
            memcpy(&bits, &d, 8);
            put_u64(out, bits);
        }
        return 0;
    }
    case KP_CQL_T_TIMESTAMP:
        if (cJSON_IsString(v) && v->valuestring && !kp_timestamp_parse(v->valuestring, &x)) {
            put_u64(out, (uint64_t)x);
            return 0;
        }
        if (!parse_int_node(v, INT64_MIN, INT64_MAX, &x)) {
            put_u64(out, (uint64_t)x);
            return 0;
        }
        return value_error(err, t, v, "a timestamp like \"2026-04-01T09:30:00.000Z\" (or epoch milliseconds)");
    case KP_CQL_T_DATE: {
        int32_t days;
        if (cJSON_IsString(v) && v->valuestring && !kp_date_parse(v->valuestring, &days)) x = days;
        else if (parse_int_node(v, INT32_MIN, INT32_MAX, &x))
            return value_error(err, t, v, "a date like \"2026-04-01\" (or days since 1970-01-01)");
        put_u32(out, (uint32_t)(x + 2147483648LL));
        return 0;
    }
    case KP_CQL_T_TIME:
        if (cJSON_IsString(v) && v->valuestring && !parse_time(v->valuestring, &x)) {
            put_u64(out, (uint64_t)x);
            return 0;
        }
        if (!parse_int_node(v, 0, KP_CQL_NANOS_PER_DAY - 1, &x)) {
            put_u64(out, (uint64_t)x);
            return 0;
        }
        return value_error(err, t, v, "a time like \"09:30:00.000000000\" (or nanoseconds since midnight)");
    case KP_CQL_T_UUID: case KP_CQL_T_TIMEUUID: {
        uint8_t u[16];
        if (!cJSON_IsString(v) || !v->valuestring || parse_uuid(v->valuestring, u))
            return value_error(err, t, v, "a uuid like \"7f1c0b7e-2a4d-4c1e-9b3f-5d6e7f809a1b\"");
        if (t->code == KP_CQL_T_TIMEUUID && (u[6] >> 4) != 1)
            return value_error(err, t, v, "a version-1 (time-based) uuid");
        put_raw(out, u, 16);
        return 0;
    }
    case KP_CQL_T_INET: {
        uint8_t a[16];
        if (cJSON_IsString(v) && v->valuestring) {
            if (inet_pton(AF_INET, v->valuestring, a) == 1) { put_raw(out, a, 4); return 0; }
            if (inet_pton(AF_INET6, v->valuestring, a) == 1) { put_raw(out, a, 16); return 0; }
        }
        return value_error(err, t, v, "an IP address like \"192.0.2.1\"");
    }
    case KP_CQL_T_LIST: case KP_CQL_T_SET: {
        if (!cJSON_IsArray(v)) return value_error(err, t, v, "an array");
        int n = cJSON_GetArraySize(v);
        put_i32(out, n);
        for (const cJSON *e = v->child; e; e = e->next) {
            if (cJSON_IsNull(e)) return value_error(err, t, v, "an array without nulls (CQL collections hold none)");
            if (encode_element(t->elements[0], e, out, depth + 1, err)) return -1;
        }
        return 0;
    }
    case KP_CQL_T_MAP: {
        if (cJSON_IsArray(v)) {   /* [[key, value], ...] */
            put_i32(out, cJSON_GetArraySize(v));
            for (const cJSON *pair = v->child; pair; pair = pair->next) {
                if (!cJSON_IsArray(pair) || cJSON_GetArraySize(pair) != 2)
                    return value_error(err, t, v, "an object or an array of [key, value] pairs");
                if (encode_element(t->elements[0], pair->child, out, depth + 1, err) ||
                    encode_element(t->elements[1], pair->child->next, out, depth + 1, err))
                    return -1;
            }
            return 0;
        }
        if (!cJSON_IsObject(v)) return value_error(err, t, v, "an object");
        put_i32(out, cJSON_GetArraySize(v));
        for (const cJSON *e = v->child; e; e = e->next) {
            cJSON *key = map_key_json(t->elements[0], e->string ? e->string : "");
            if (!key) return kp_error_set(err, KP_ERR_NOMEM, NULL, 0, 0, "out of memory");
            int rc = encode_element(t->elements[0], key, out, depth + 1, err);
            cJSON_Delete(key);
            if (rc || encode_element(t->elements[1], e, out, depth + 1, err)) return -1;
        }
        return 0;
    }
    case KP_CQL_T_TUPLE: {
        if (!cJSON_IsArray(v) || cJSON_GetArraySize(v) > t->element_count)
            return value_error(err, t, v, "an array with one element per tuple component");
        const cJSON *e = v->child;
        for (unsigned i = 0; i < t->element_count; i++) {
            if (encode_element(t->elements[i], e, out, depth + 1, err)) return -1;
            if (e) e = e->next;
        }
        return 0;
    }
    case KP_CQL_T_UDT: {
        if (!cJSON_IsObject(v)) return value_error(err, t, v, "an object of the type's fields");
        for (const cJSON *e = v->child; e; e = e->next) {
            unsigned i = 0;
            while (i < t->element_count && strcmp(t->field_names[i], e->string ? e->string : "")) i++;
            if (i == t->element_count) {
                char tname[120];
                return kp_error_set(err, KP_ERR_DATA, NULL, 0, 0, "the CQL type %s has no field \"%.100s\"",
                                    kp_cql_type_text(t, tname, sizeof tname), e->string ? e->string : "");
            }
        }
        for (unsigned i = 0; i < t->element_count; i++)
            if (encode_element(t->elements[i], cJSON_GetObjectItemCaseSensitive(v, t->field_names[i]), out, depth + 1,
                               err))
                return -1;
        return 0;
    }
    default: {
        char tname[120];
        return kp_error_set(err, KP_ERR_DATA, NULL, 0, 0, "keyplan cannot encode values of the CQL type %s",
                            kp_cql_type_text(t, tname, sizeof tname));
    }
    }
}

/* [bytes]: int32 length + content; -1 for null. */
static int encode_element(const kp_cql_type *type, const cJSON *value, kp_cql_buf *out, int depth, kp_error *err)
{
    if (!type) return kp_error_set(err, KP_ERR_INTERNAL, NULL, 0, 0, "a CQL value has no type");
    if (depth > KP_CQL_MAX_TYPE_DEPTH) return value_error(err, type, value, "a value nested less deeply");
    if (!value || cJSON_IsNull(value)) {
        put_i32(out, -1);
        return 0;
    }
    size_t at = out->len;
    put_i32(out, 0);
    if (buf_check(out, err)) return -1;
    size_t start = out->len;
    if (encode_content(type, value, out, depth, err)) {
        if (!out->is_failed) out->len = at;
        return -1;
    }
    if (buf_check(out, err)) return -1;
    size_t n = out->len - start;
    if (n > (size_t)KP_CQL_MAX_BODY) {
        out->len = at;
        return kp_error_set(err, KP_ERR_DATA, NULL, 0, 0, "a CQL value of %zu bytes is larger than a frame", n);
    }
    set_u32_at(out, at, (uint32_t)n);
    return 0;
}

int kp_cql_value_encode(const kp_cql_type *type, const cJSON *value, kp_cql_buf *out, kp_error *err)
{
    return encode_element(type, value, out, 0, err);
}

/* ---- values: bytes -> JSON --------------------------------------------------------------------- */

static cJSON *decode_fail(kp_error *err, const kp_cql_type *t, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static cJSON *decode_fail(kp_error *err, const kp_cql_type *t, const char *fmt, ...)
{
    char why[256], tname[120];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, sizeof why, fmt, ap);
    va_end(ap);
    kp_error_set(err, KP_ERR_TARGET, NULL, 0, 0, "malformed CQL value of type %s: %s",
                 kp_cql_type_text(t, tname, sizeof tname), why);
    return NULL;
}

static cJSON *nomem(kp_error *err)
{
    kp_error_set(err, KP_ERR_NOMEM, NULL, 0, 0, "out of memory while decoding a CQL value");
    return NULL;
}

static cJSON *raw_text(const char *text, kp_error *err)
{
    cJSON *v = cJSON_CreateRaw(text);
    return v ? v : nomem(err);
}

static cJSON *raw_int(int64_t x, kp_error *err)
{
    char buf[32];
    snprintf(buf, sizeof buf, "%" PRId64, x);
    return raw_text(buf, err);
}

static cJSON *string_value(const char *text, kp_error *err)
{
    cJSON *v = cJSON_CreateString(text);
    return v ? v : nomem(err);
}

static int64_t be_int(const uint8_t *p, int width)
{
    uint64_t v = (p[0] & 0x80) ? UINT64_MAX : 0;
    for (int i = 0; i < width; i++) v = v << 8 | p[i];
    return (int64_t)v;
}

static cJSON *double_value(double d, int is_float, kp_error *err)
{
    if (isnan(d)) return string_value("NaN", err);
    if (isinf(d)) return string_value(d > 0 ? "Infinity" : "-Infinity", err);
    char buf[48];
    for (int p = 1; p <= 17; p++) {
        snprintf(buf, sizeof buf, "%.*g", p, d);
        if (is_float ? strtof(buf, NULL) == (float)d : strtod(buf, NULL) == d) break;
    }
    return raw_text(buf, err);
}

static cJSON *decode_element(const kp_cql_type *t, const uint8_t *p, int32_t n, int depth, kp_error *err);

static const char *map_key_text(const cJSON *key, char **owned)
{
    *owned = NULL;
    if (cJSON_IsString(key)) return key->valuestring;
    if (cJSON_IsRaw(key)) return key->valuestring;
    if (cJSON_IsTrue(key)) return "true";
    if (cJSON_IsFalse(key)) return "false";
    if (cJSON_IsNull(key)) return "null";
    *owned = cJSON_PrintUnformatted(key);
    return *owned;
}

/* A collection, tuple or UDT: a sequence of [bytes] (with an int32 count for collections). */
static cJSON *decode_composite(const kp_cql_type *t, const uint8_t *p, int32_t n, int depth, kp_error *err)
{
    reader r;
    char tname[120];
    char what[160];
    snprintf(what, sizeof what, "value of type %s", kp_cql_type_text(t, tname, sizeof tname));
    reader_init(&r, p, (size_t)n, what, err);
    int is_map = t->code == KP_CQL_T_MAP, is_udt = t->code == KP_CQL_T_UDT;
    cJSON *out = is_map || is_udt ? cJSON_CreateObject() : cJSON_CreateArray();
    if (!out) return nomem(err);
    size_t count;
    if (t->code == KP_CQL_T_LIST || t->code == KP_CQL_T_SET || is_map) {
        int32_t c = rd_i32(&r, "element count");
        if (r.is_failed) goto fail;
        size_t per = is_map ? 8 : 4;
        if (c < 0 || (size_t)c > left(&r) / per) {
            fail(&r, "%" PRId32 " elements announced in %zu bytes", c, left(&r));
            goto fail;
        }
        count = (size_t)c;
    } else {
        count = t->element_count;
    }
    for (size_t i = 0; i < count; i++) {
        if (!is_map && !(t->code == KP_CQL_T_LIST || t->code == KP_CQL_T_SET) && left(&r) == 0) {
            /* a UDT or tuple value may stop early: the remaining components are null */
            for (; i < count; i++) {
                cJSON *null = cJSON_CreateNull();
                if (!null) { nomem(err); goto fail_quiet; }
                if (is_udt) cJSON_AddItemToObject(out, t->field_names[i], null);
                else cJSON_AddItemToArray(out, null);
            }
            break;
        }
        int32_t len;
        const kp_cql_type *et = is_map ? t->elements[0] : (t->code == KP_CQL_T_LIST || t->code == KP_CQL_T_SET)
                                                              ? t->elements[0] : t->elements[i];
        const uint8_t *ep = rd_bytes_view(&r, &len, 0, is_map ? "map key" : "element");
        if (r.is_failed) goto fail;
        cJSON *e = decode_element(et, ep, len, depth + 1, err);
        if (!e) goto fail_quiet;
        if (is_map) {
            const uint8_t *vp = rd_bytes_view(&r, &len, 0, "map value");
            if (r.is_failed) { cJSON_Delete(e); goto fail; }
            cJSON *value = decode_element(t->elements[1], vp, len, depth + 1, err);
            if (!value) { cJSON_Delete(e); goto fail_quiet; }
            char *owned;
            const char *key = map_key_text(e, &owned);
            if (!key) { cJSON_Delete(e); cJSON_Delete(value); nomem(err); goto fail_quiet; }
            cJSON_AddItemToObject(out, key, value);
            free(owned);
            cJSON_Delete(e);
        } else if (is_udt) {
            cJSON_AddItemToObject(out, t->field_names[i], e);
        } else {
            cJSON_AddItemToArray(out, e);
        }
    }
    if (!r.is_failed && left(&r)) fail(&r, "%zu bytes left after the last element", left(&r));
    if (r.is_failed) goto fail;
    return out;
fail:
fail_quiet:
    cJSON_Delete(out);
    return NULL;
}

static cJSON *decode_element(const kp_cql_type *t, const uint8_t *p, int32_t n, int depth, kp_error *err)
{
    if (!t) { kp_error_set(err, KP_ERR_INTERNAL, NULL, 0, 0, "a CQL value has no type"); return NULL; }
    if (depth > KP_CQL_MAX_TYPE_DEPTH) return decode_fail(err, t, "nested too deep");
    if (n < 0 || !p) {
        cJSON *null = cJSON_CreateNull();
        return null ? null : nomem(err);
    }
    static const struct { uint16_t code; int32_t width; } fixed[] = {
        {KP_CQL_T_BIGINT, 8}, {KP_CQL_T_COUNTER, 8}, {KP_CQL_T_BOOLEAN, 1}, {KP_CQL_T_DOUBLE, 8},
        {KP_CQL_T_FLOAT, 4}, {KP_CQL_T_INT, 4}, {KP_CQL_T_TIMESTAMP, 8}, {KP_CQL_T_UUID, 16},
        {KP_CQL_T_TIMEUUID, 16}, {KP_CQL_T_DATE, 4}, {KP_CQL_T_TIME, 8}, {KP_CQL_T_SMALLINT, 2},
        {KP_CQL_T_TINYINT, 1},
    };
    for (size_t i = 0; i < sizeof fixed / sizeof fixed[0]; i++) {
        if (fixed[i].code != t->code) continue;
        if (n == 0) {   /* Cassandra's "empty" value of a fixed-width type */
            cJSON *null = cJSON_CreateNull();
            return null ? null : nomem(err);
        }
        if (n != fixed[i].width) return decode_fail(err, t, "%" PRId32 " bytes, expected %" PRId32, n, fixed[i].width);
    }
    char text[64];
    switch (t->code) {
    case KP_CQL_T_ASCII: case KP_CQL_T_VARCHAR: {
        if (memchr(p, 0, (size_t)n)) return decode_fail(err, t, "the text holds a NUL character, which keyplan's JSON values cannot carry");
        if (t->code == KP_CQL_T_ASCII) {
            for (int32_t i = 0; i < n; i++)
                if (p[i] > 127) return decode_fail(err, t, "byte 0x%02x is not ASCII", p[i]);
        } else if (kp_utf8_check((const char *)p, (size_t)n) != (size_t)n) {
            return decode_fail(err, t, "not valid UTF-8");
        }
        char *s = malloc((size_t)n + 1);
        if (!s) return nomem(err);
        memcpy(s, p, (size_t)n);
        s[n] = '\0';
        cJSON *v = string_value(s, err);
        free(s);
        return v;
    }
    case KP_CQL_T_BLOB: case KP_CQL_T_CUSTOM: {
        char *s = base64_encode(p, (size_t)n);
        if (!s) return nomem(err);
        cJSON *v = string_value(s, err);
        free(s);
        return v;
    }
    case KP_CQL_T_BOOLEAN: {
        cJSON *v = cJSON_CreateBool(p[0] != 0);
        return v ? v : nomem(err);
    }
    case KP_CQL_T_TINYINT: return raw_int(be_int(p, 1), err);
    case KP_CQL_T_SMALLINT: return raw_int(be_int(p, 2), err);
    case KP_CQL_T_INT: return raw_int(be_int(p, 4), err);
    case KP_CQL_T_BIGINT: case KP_CQL_T_COUNTER: return raw_int(be_int(p, 8), err);
    case KP_CQL_T_VARINT: case KP_CQL_T_DECIMAL: {
        if (n == 0) {
            cJSON *null = cJSON_CreateNull();
            return null ? null : nomem(err);
        }
        char *s = t->code == KP_CQL_T_VARINT ? kp_cql_varint_to_text(p, (size_t)n, err)
                                              : kp_cql_decimal_to_text(p, (size_t)n, err);
        if (!s) return NULL;
        cJSON *v = raw_text(s, err);
        free(s);
        return v;
    }
    case KP_CQL_T_DOUBLE: {
        uint64_t bits = (uint64_t)be_int(p, 8);
        double d;
        memcpy(&d, &bits, 8);
        return double_value(d, 0, err);
    }
    case KP_CQL_T_FLOAT: {
        uint32_t bits = (uint32_t)be_int(p, 4);
        float f;
        memcpy(&f, &bits, 4);
        return double_value(f, 1, err);
    }
    case KP_CQL_T_TIMESTAMP: {
        int64_t ms = be_int(p, 8);
        if (ms < KP_CQL_MIN_CANON_MS || ms > KP_CQL_MAX_CANON_MS) return raw_int(ms, err);
        char out[32];
        kp_timestamp_format(ms, out);
        return string_value(out, err);
    }
    case KP_CQL_T_DATE: {
        int64_t days = (int64_t)(uint32_t)be_int(p, 4) - 2147483648LL;
        if (days < KP_CQL_MIN_CANON_DAYS || days > KP_CQL_MAX_CANON_DAYS) return raw_int(days, err);
        char out[16];
        kp_date_format((int32_t)days, out);
        return string_value(out, err);
    }
    case KP_CQL_T_TIME: {
        int64_t ns = be_int(p, 8);
        if (ns < 0 || ns >= KP_CQL_NANOS_PER_DAY) return decode_fail(err, t, "%" PRId64 " ns is not a time of day", ns);
        int64_t s = ns / 1000000000LL;
        snprintf(text, sizeof text, "%02d:%02d:%02d.%09" PRId64, (int)(s / 3600), (int)(s / 60 % 60), (int)(s % 60),
                 (int64_t)(ns % 1000000000));
        return string_value(text, err);
    }
    case KP_CQL_T_UUID: case KP_CQL_T_TIMEUUID:
        snprintf(text, sizeof text, "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", p[0], p[1],
                 p[2], p[3], p[4], p[5], p[6], p[7], p[8], p[9], p[10], p[11], p[12], p[13], p[14], p[15]);
        return string_value(text, err);
    case KP_CQL_T_INET:
        if (n == 0) {
            cJSON *null = cJSON_CreateNull();
            return null ? null : nomem(err);
        }
        if (n != 4 && n != 16) return decode_fail(err, t, "an address of %" PRId32 " bytes", n);
        if (!inet_ntop(n == 4 ? AF_INET : AF_INET6, p, text, sizeof text)) return decode_fail(err, t, "bad address");
        return string_value(text, err);
    case KP_CQL_T_LIST: case KP_CQL_T_SET: case KP_CQL_T_MAP: case KP_CQL_T_TUPLE: case KP_CQL_T_UDT:
        if (n == 0 && t->code != KP_CQL_T_TUPLE && t->code != KP_CQL_T_UDT) {
            cJSON *null = cJSON_CreateNull();
            return null ? null : nomem(err);
        }
        if ((t->code == KP_CQL_T_MAP && t->element_count != 2) ||
            ((t->code == KP_CQL_T_LIST || t->code == KP_CQL_T_SET) && t->element_count != 1))
            return decode_fail(err, t, "a collection type without its element types");
        return decode_composite(t, p, n, depth, err);
    default:
        return decode_fail(err, t, "unknown type code 0x%04x", t->code);
    }
}

cJSON *kp_cql_value_decode(const kp_cql_type *type, const uint8_t *bytes, int32_t len, kp_error *err)
{
    return decode_element(type, bytes, len, 0, err);
}

/* ---- bound values ------------------------------------------------------------------------------- */

static int values_check_name(kp_cql_values *v, const char *name, kp_error *err)
{
    if (v->count == 65535) return kp_error_set(err, KP_ERR_DATA, NULL, 0, 0, "a CQL statement binds at most 65,535 values");
    if (v->count && !!name != !!v->has_names)
        return kp_error_set(err, KP_ERR_INTERNAL, NULL, 0, 0, "CQL values must be all named or all positional");
    v->has_names = name != NULL;
    if (name) return put_string(&v->buf, name, err);
    return 0;
}

int kp_cql_values_add_json(kp_cql_values *v, const char *name, const kp_cql_type *type, const cJSON *value,
                           kp_error *err)
{
    size_t at = v->buf.len;
    if (values_check_name(v, name, err) || kp_cql_value_encode(type, value, &v->buf, err)) {
        if (!v->buf.is_failed) v->buf.len = at;
        return -1;
    }
    if (buf_check(&v->buf, err)) return -1;
    v->count++;
    return 0;
}

int kp_cql_values_add_bytes(kp_cql_values *v, const char *name, const uint8_t *bytes, int32_t len, kp_error *err)
{
    if (len < -2 || (len > 0 && !bytes))
        return kp_error_set(err, KP_ERR_INTERNAL, NULL, 0, 0, "a CQL value of length %" PRId32, len);
    size_t at = v->buf.len;
    if (values_check_name(v, name, err)) {
        if (!v->buf.is_failed) v->buf.len = at;
        return -1;
    }
    put_bytes(&v->buf, bytes, len);
    if (buf_check(&v->buf, err)) return -1;
    v->count++;
    return 0;
}

void kp_cql_values_reset(kp_cql_values *v)
{
    kp_cql_buf_reset(&v->buf);
    v->count = 0;
    v->has_names = 0;
}

void kp_cql_values_free(kp_cql_values *v)
{
    kp_cql_buf_free(&v->buf);
    v->count = 0;
    v->has_names = 0;
}

int kp_cql_values_bind(const kp_cql_metadata *vars, const cJSON *row, kp_cql_values *out, kp_error *err)
{
    if (!vars->columns)
        return kp_error_set(err, KP_ERR_INTERNAL, NULL, 0, 0, "binding values needs the statement's variable types");
    if (cJSON_IsArray(row)) {
        if (cJSON_GetArraySize(row) != vars->column_count)
            return kp_error_set(err, KP_ERR_DATA, NULL, 0, 0, "the statement has %" PRId32 " variables, got %d values",
                                vars->column_count, cJSON_GetArraySize(row));
        const cJSON *e = row->child;
        for (int32_t i = 0; i < vars->column_count; i++, e = e->next)
            if (kp_cql_values_add_json(out, NULL, vars->columns[i].type, e, err)) return -1;
        return 0;
    }
    if (!cJSON_IsObject(row))
        return kp_error_set(err, KP_ERR_INTERNAL, NULL, 0, 0, "values to bind must be an object or an array");
    for (int32_t i = 0; i < vars->column_count; i++) {
        const cJSON *e = cJSON_GetObjectItemCaseSensitive(row, vars->columns[i].name);
        int rc = e ? kp_cql_values_add_json(out, NULL, vars->columns[i].type, e, err)
                   : kp_cql_values_add_bytes(out, NULL, NULL, -2, err);
        if (rc) {
            if (err && err->code == KP_ERR_DATA) {
                char why[sizeof err->message];
                snprintf(why, sizeof why, "%s", err->message);
                kp_error_set(err, KP_ERR_DATA, NULL, 0, 0, "column %s: %s", vars->columns[i].name, why);
            }
            return -1;
        }
    }
    return 0;
}

/* ---- requests -------------------------------------------------------------------------------------- */

static size_t begin_frame(kp_cql_buf *b, uint8_t version, uint8_t flags, int16_t stream, uint8_t opcode)
{
    size_t at = b->len;
    kp_cql_header h = {version, flags, stream, opcode, 0};
    uint8_t raw[KP_CQL_HEADER_SIZE];
    kp_cql_header_encode(&h, raw);
    put_raw(b, raw, sizeof raw);
    return at;
}

static int end_frame(kp_cql_buf *b, size_t at, kp_error *err)
{
    if (buf_check(b, err)) return -1;
    size_t body = b->len - at - KP_CQL_HEADER_SIZE;
    if (body > (size_t)KP_CQL_MAX_BODY) {
        b->len = at;
        return kp_error_set(err, KP_ERR_DATA, NULL, 0, 0, "a CQL frame of %zu bytes is larger than the protocol's 256 MB",
                            body);
    }
    set_u32_at(b, at + 5, (uint32_t)body);
    return 0;
}

static int put_values(kp_cql_buf *b, const kp_cql_values *v)
{
    put_u16(b, v->count);
    put_raw(b, v->buf.data, v->buf.len);
    return 0;
}

static int put_params(kp_cql_buf *b, const kp_cql_params *p, kp_error *err)
{
    uint8_t flags = 0;
    if (p->values && p->values->count) {
        flags |= KP_CQL_QF_VALUES;
        if (p->values->has_names) flags |= KP_CQL_QF_NAMES;
        if (p->values->buf.is_failed)
            return kp_error_set(err, KP_ERR_NOMEM, NULL, 0, 0, "out of memory while binding CQL values");
    }
    if (p->skip_metadata) flags |= KP_CQL_QF_SKIP_METADATA;
    if (p->page_size > 0) flags |= KP_CQL_QF_PAGE_SIZE;
    if (p->paging_state) flags |= KP_CQL_QF_PAGING_STATE;
    if (p->serial_consistency) flags |= KP_CQL_QF_SERIAL_CONSISTENCY;
    if (p->has_default_timestamp) flags |= KP_CQL_QF_DEFAULT_TIMESTAMP;
    put_u16(b, p->consistency);
    put_u8(b, flags);
    if (flags & KP_CQL_QF_VALUES) put_values(b, p->values);
    if (flags & KP_CQL_QF_PAGE_SIZE) put_i32(b, p->page_size);
    if (flags & KP_CQL_QF_PAGING_STATE) put_bytes(b, p->paging_state, p->paging_state_len < 0 ? 0 : p->paging_state_len);
    if (flags & KP_CQL_QF_SERIAL_CONSISTENCY) put_u16(b, p->serial_consistency);
    if (flags & KP_CQL_QF_DEFAULT_TIMESTAMP) put_u64(b, (uint64_t)p->default_timestamp);
    return 0;
}

static int put_batch(kp_cql_buf *b, const kp_cql_batch *batch, kp_error *err)
{
    if (batch->type > KP_CQL_BATCH_COUNTER)
        return kp_error_set(err, KP_ERR_INTERNAL, NULL, 0, 0, "unknown CQL batch type %u", batch->type);
    put_u8(b, batch->type);
    put_u16(b, batch->count);
    for (uint16_t i = 0; i < batch->count; i++) {
        const kp_cql_batch_statement *s = &batch->statements[i];
        if (s->prepared_id) {
            put_u8(b, 1);
            put_short_bytes(b, s->prepared_id, s->prepared_id_len);
        } else {
            put_u8(b, 0);
            if (put_long_string(b, s->cql, err)) return -1;
        }
        if (s->values && s->values->has_names && s->values->count)
            return kp_error_set(err, KP_ERR_INTERNAL, NULL, 0, 0, "CQL v4 batches cannot carry named values");
        if (s->values) {
            if (s->values->buf.is_failed)
                return kp_error_set(err, KP_ERR_NOMEM, NULL, 0, 0, "out of memory while binding CQL values");
            put_values(b, s->values);
        } else {
            put_u16(b, 0);
        }
    }
    uint8_t flags = 0;
    if (batch->serial_consistency) flags |= KP_CQL_QF_SERIAL_CONSISTENCY;
    if (batch->has_default_timestamp) flags |= KP_CQL_QF_DEFAULT_TIMESTAMP;
    put_u16(b, batch->consistency);
    put_u8(b, flags);
    if (batch->serial_consistency) put_u16(b, batch->serial_consistency);
    if (batch->has_default_timestamp) put_u64(b, (uint64_t)batch->default_timestamp);
    return 0;
}

int kp_cql_request_encode(const kp_cql_request *rq, kp_cql_buf *out, kp_error *err)
{
    if (!is_request_opcode(rq->opcode))
        return kp_error_set(err, KP_ERR_INTERNAL, NULL, 0, 0, "0x%02x is not a CQL request opcode", rq->opcode);
    if (rq->stream < 0)
        return kp_error_set(err, KP_ERR_INTERNAL, NULL, 0, 0, "CQL requests need a stream id >= 0, not %d", rq->stream);
    size_t at = begin_frame(out, KP_CQL_VERSION, rq->flags, rq->stream, rq->opcode);
    int rc = 0;
    switch (rq->opcode) {
    case KP_CQL_OP_STARTUP:
        if (rq->option_count > 65535) { rc = kp_error_set(err, KP_ERR_INTERNAL, NULL, 0, 0, "too many STARTUP options"); break; }
        put_u16(out, (uint16_t)rq->option_count);
        for (size_t i = 0; i < rq->option_count && !rc; i++)
            rc = put_string(out, rq->options[i].key, err) || put_string(out, rq->options[i].value, err) ? -1 : 0;
        break;
    case KP_CQL_OP_AUTH_RESPONSE:
        put_bytes(out, rq->token, rq->token_len);
        break;
    case KP_CQL_OP_OPTIONS:
        break;
    case KP_CQL_OP_QUERY:
        rc = put_long_string(out, rq->cql, err) || put_params(out, &rq->params, err) ? -1 : 0;
        break;
    case KP_CQL_OP_PREPARE:
        rc = put_long_string(out, rq->cql, err);
        break;
    case KP_CQL_OP_EXECUTE:
        put_short_bytes(out, rq->prepared_id, rq->prepared_id_len);
        rc = put_params(out, &rq->params, err);
        break;
    case KP_CQL_OP_BATCH:
        rc = put_batch(out, &rq->batch, err);
        break;
    case KP_CQL_OP_REGISTER:
        rc = put_string_list(out, rq->events, rq->event_count, err);
        break;
    }
    if (rc) {
        if (!out->is_failed) out->len = at;
        return -1;
    }
    return end_frame(out, at, err);
}

int kp_cql_encode_startup(kp_cql_buf *out, int16_t stream, kp_error *err)
{
    static const kp_cql_pair options[] = {{"CQL_VERSION", "3.0.0"}, {"DRIVER_NAME", "keyplan"}};
    kp_cql_request rq = {.opcode = KP_CQL_OP_STARTUP, .stream = stream, .options = options, .option_count = 2};
    return kp_cql_request_encode(&rq, out, err);
}

int kp_cql_encode_options(kp_cql_buf *out, int16_t stream, kp_error *err)
{
    kp_cql_request rq = {.opcode = KP_CQL_OP_OPTIONS, .stream = stream};
    return kp_cql_request_encode(&rq, out, err);
}

int kp_cql_encode_auth_plain(kp_cql_buf *out, int16_t stream, const char *username, const char *password,
                             kp_error *err)
{
    size_t u = strlen(username), p = strlen(password);
    if (u > 65535 || p > 65535)
        return kp_error_set(err, KP_ERR_USAGE, NULL, 0, 0, "a Cassandra user name or password longer than 65,535 bytes");
    size_t n = u + p + 2;
    uint8_t *token = malloc(n);
    if (!token) return kp_error_set(err, KP_ERR_NOMEM, NULL, 0, 0, "out of memory");
    token[0] = 0;
    memcpy(token + 1, username, u);
    token[1 + u] = 0;
    memcpy(token + 2 + u, password, p);
    kp_cql_request rq = {.opcode = KP_CQL_OP_AUTH_RESPONSE, .stream = stream, .token = token, .token_len = (int32_t)n};
    int rc = kp_cql_request_encode(&rq, out, err);
    /* the token holds the password: wipe it before it goes back to the allocator */
    volatile uint8_t *wipe = token;
    for (size_t i = 0; i < n; i++) wipe[i] = 0;
    free(token);
    return rc;
}

int kp_cql_encode_query(kp_cql_buf *out, int16_t stream, const char *cql, const kp_cql_params *params, kp_error *err)
{
    kp_cql_request rq = {.opcode = KP_CQL_OP_QUERY, .stream = stream, .cql = cql, .params = *params};
    return kp_cql_request_encode(&rq, out, err);
}

int kp_cql_encode_prepare(kp_cql_buf *out, int16_t stream, const char *cql, kp_error *err)
{
    kp_cql_request rq = {.opcode = KP_CQL_OP_PREPARE, .stream = stream, .cql = cql};
    return kp_cql_request_encode(&rq, out, err);
}

int kp_cql_encode_execute(kp_cql_buf *out, int16_t stream, const uint8_t *id, uint16_t id_len,
                          const kp_cql_params *params, kp_error *err)
{
    kp_cql_request rq = {.opcode = KP_CQL_OP_EXECUTE, .stream = stream, .prepared_id = id, .prepared_id_len = id_len,
                         .params = *params};
    return kp_cql_request_encode(&rq, out, err);
}

int kp_cql_encode_batch(kp_cql_buf *out, int16_t stream, const kp_cql_batch *batch, kp_error *err)
{
    kp_cql_request rq = {.opcode = KP_CQL_OP_BATCH, .stream = stream, .batch = *batch};
    return kp_cql_request_encode(&rq, out, err);
}

/* Reads count values ([bytes], or [string][bytes] with names) into a new kp_cql_values. */
static kp_cql_values *rd_values(reader *r, kp_arena *a, int has_names)
{
    uint16_t n = rd_u16(r, "value count");
    if (r->is_failed) return NULL;
    if ((size_t)n * 4 > left(r)) { fail(r, "%u values announced in %zu bytes", n, left(r)); return NULL; }
    kp_cql_values *v = kp_arena_alloc(a, sizeof *v);
    if (!v) { fail_nomem(r); return NULL; }
    for (uint16_t i = 0; i < n; i++) {
        const char *name = has_names ? rd_string(r, a, "value name") : NULL;
        int32_t len;
        const uint8_t *p = rd_bytes_view(r, &len, 1, "value");
        if (r->is_failed || kp_cql_values_add_bytes(v, name, p, len, r->err)) {
            if (!r->is_failed) r->is_failed = 1;
            kp_cql_values_free(v);
            return NULL;
        }
    }
    return v;
}

static void rd_params(reader *r, kp_arena *a, kp_cql_params *p)
{
    p->consistency = rd_u16(r, "consistency");
    uint8_t flags = rd_u8(r, "query flags");
    if (r->is_failed) return;
    if (flags & 0x80) { fail(r, "unknown query flags 0x%02x", flags); return; }
    if (flags & KP_CQL_QF_VALUES) {
        p->values = rd_values(r, a, flags & KP_CQL_QF_NAMES);
        if (!p->values) return;
    }
    p->skip_metadata = !!(flags & KP_CQL_QF_SKIP_METADATA);
    if (flags & KP_CQL_QF_PAGE_SIZE) p->page_size = rd_i32(r, "page size");
    if (flags & KP_CQL_QF_PAGING_STATE) {
        int32_t len;
        p->paging_state = rd_bytes(r, a, &len, "paging state");
        p->paging_state_len = len < 0 ? 0 : len;
        if (!p->paging_state && !r->is_failed) fail(r, "a null paging state");
    }
    if (flags & KP_CQL_QF_SERIAL_CONSISTENCY) p->serial_consistency = rd_u16(r, "serial consistency");
    if (flags & KP_CQL_QF_DEFAULT_TIMESTAMP) {
        p->has_default_timestamp = 1;
        p->default_timestamp = (int64_t)rd_u64(r, "default timestamp");
    }
}

void kp_cql_request_free_values(kp_cql_request *rq)
{
    if (rq->params.values) kp_cql_values_free((kp_cql_values *)rq->params.values);
    rq->params.values = NULL;
    for (uint16_t i = 0; rq->opcode == KP_CQL_OP_BATCH && i < rq->batch.count && rq->batch.statements; i++)
        if (rq->batch.statements[i].values) kp_cql_values_free((kp_cql_values *)rq->batch.statements[i].values);
    rq->batch.count = 0;
}

int kp_cql_request_decode(const uint8_t *frame, size_t len, kp_arena *a, kp_cql_request *out, kp_error *err)
{
    kp_cql_header h = {0};
    memset(out, 0, sizeof *out);
    if (kp_cql_header_decode(frame, len, 0, 0, &h, err)) return -1;
    if (len - KP_CQL_HEADER_SIZE != h.length)
        return kp_error_set(err, KP_ERR_TARGET, NULL, 0, 0,
                            "truncated CQL frame: the header announces %" PRIu32 " body bytes, %zu present", h.length,
                            len - KP_CQL_HEADER_SIZE);
    out->opcode = h.opcode;
    out->flags = h.flags;
    out->stream = h.stream;
    char what[48];
    snprintf(what, sizeof what, "%s body", opcode_name(h.opcode));
    reader r;
    reader_init(&r, frame + KP_CQL_HEADER_SIZE, h.length, what, err);
    switch (h.opcode) {
    case KP_CQL_OP_STARTUP: {
        uint16_t n = rd_u16(&r, "option count");
        if (r.is_failed) break;
        if ((size_t)n * 4 > left(&r)) { fail(&r, "%u options announced in %zu bytes", n, left(&r)); break; }
        kp_cql_pair *options = kp_arena_alloc(a, (n ? n : 1) * sizeof *options);
        if (!options) { fail_nomem(&r); break; }
        for (uint16_t i = 0; i < n && !r.is_failed; i++) {
            options[i].key = rd_string(&r, a, "option name");
            options[i].value = rd_string(&r, a, "option value");
        }
        out->options = options;
        out->option_count = r.is_failed ? 0 : n;
        break;
    }
    case KP_CQL_OP_AUTH_RESPONSE:
        out->token = rd_bytes(&r, a, &out->token_len, "token");
        break;
    case KP_CQL_OP_OPTIONS:
        break;
    case KP_CQL_OP_QUERY:
        out->cql = rd_long_string(&r, a, "statement");
        rd_params(&r, a, &out->params);
        break;
    case KP_CQL_OP_PREPARE:
        out->cql = rd_long_string(&r, a, "statement");
        break;
    case KP_CQL_OP_EXECUTE:
        out->prepared_id = rd_short_bytes(&r, a, &out->prepared_id_len, "prepared id");
        rd_params(&r, a, &out->params);
        break;
    case KP_CQL_OP_BATCH: {
        kp_cql_batch *b = &out->batch;
        b->type = rd_u8(&r, "batch type");
        uint16_t n = rd_u16(&r, "statement count");
        if (r.is_failed) break;
        if (b->type > KP_CQL_BATCH_COUNTER) { fail(&r, "unknown batch type %u", b->type); break; }
        if ((size_t)n * 5 > left(&r)) { fail(&r, "%u statements announced in %zu bytes", n, left(&r)); break; }
        kp_cql_batch_statement *s = kp_arena_alloc(a, (n ? n : 1) * sizeof *s);
        if (!s) { fail_nomem(&r); break; }
        b->statements = s;
        for (uint16_t i = 0; i < n && !r.is_failed; i++) {
            uint8_t kind = rd_u8(&r, "statement kind");
            if (kind == 0) s[i].cql = rd_long_string(&r, a, "statement");
            else if (kind == 1) s[i].prepared_id = rd_short_bytes(&r, a, &s[i].prepared_id_len, "prepared id");
            else if (!r.is_failed) fail(&r, "unknown batch statement kind %u", kind);
            if (r.is_failed) break;
            s[i].values = rd_values(&r, a, 0);
            b->count = (uint16_t)(i + 1);
        }
        b->consistency = rd_u16(&r, "consistency");
        uint8_t flags = rd_u8(&r, "batch flags");
        if (r.is_failed) break;
        if (flags & ~(KP_CQL_QF_SERIAL_CONSISTENCY | KP_CQL_QF_DEFAULT_TIMESTAMP | KP_CQL_QF_NAMES)) {
            fail(&r, "unknown batch flags 0x%02x", flags);
            break;
        }
        if (flags & KP_CQL_QF_SERIAL_CONSISTENCY) b->serial_consistency = rd_u16(&r, "serial consistency");
        if (flags & KP_CQL_QF_DEFAULT_TIMESTAMP) {
            b->has_default_timestamp = 1;
            b->default_timestamp = (int64_t)rd_u64(&r, "default timestamp");
        }
        break;
    }
    case KP_CQL_OP_REGISTER:
        out->events = rd_string_list(&r, a, &out->event_count, "event types");
        break;
    }
    if (!r.is_failed && left(&r)) fail(&r, "%zu unexpected bytes after the body", left(&r));
    if (r.is_failed) {
        kp_cql_request_free_values(out);
        return -1;
    }
    return 0;
}

/* ---- responses -------------------------------------------------------------------------------------- */

static void rd_metadata(reader *r, kp_arena *a, kp_cql_metadata *md, int is_prepared, const kp_cql_metadata *known)
{
    md->flags = rd_i32(r, "metadata flags");
    md->column_count = rd_i32(r, "column count");
    if (r->is_failed) return;
    if (md->column_count < 0) { fail(r, "a negative column count %" PRId32, md->column_count); return; }
    if (is_prepared) {
        md->pk_count = rd_i32(r, "partition key count");
        if (r->is_failed) return;
        if (md->pk_count < 0 || (size_t)md->pk_count > left(r) / 2) {
            fail(r, "%" PRId32 " partition key indexes announced in %zu bytes", md->pk_count, left(r));
            return;
        }
        md->pk_indexes = kp_arena_alloc(a, (md->pk_count ? (size_t)md->pk_count : 1) * sizeof *md->pk_indexes);
        if (!md->pk_indexes) { fail_nomem(r); return; }
        for (int32_t i = 0; i < md->pk_count; i++) md->pk_indexes[i] = rd_u16(r, "partition key index");
    } else if (md->flags & KP_CQL_MD_HAS_MORE_PAGES) {
        md->paging_state = rd_bytes(r, a, &md->paging_state_len, "paging state");
        if (!md->paging_state && !r->is_failed) { fail(r, "a null paging state"); return; }
    }
    if (!is_prepared && (md->flags & KP_CQL_MD_NO_METADATA)) {
        if (known && known->columns) {
            if (known->column_count != md->column_count) {
                fail(r, "%" PRId32 " columns where the prepared statement has %" PRId32, md->column_count,
                     known->column_count);
                return;
            }
            md->columns = known->columns;
        }
        return;
    }
    const char *global_keyspace = NULL, *global_table = NULL;
    if (md->flags & KP_CQL_MD_GLOBAL_TABLES_SPEC) {
        global_keyspace = rd_string(r, a, "keyspace");
        global_table = rd_string(r, a, "table");
        if (r->is_failed) return;
    }
    size_t per = md->flags & KP_CQL_MD_GLOBAL_TABLES_SPEC ? 4 : 8;
    if ((size_t)md->column_count > left(r) / per) {
        fail(r, "%" PRId32 " column specs announced in %zu bytes", md->column_count, left(r));
        return;
    }
    md->columns = kp_arena_alloc(a, (md->column_count ? (size_t)md->column_count : 1) * sizeof *md->columns);
    if (!md->columns) { fail_nomem(r); return; }
    for (int32_t i = 0; i < md->column_count && !r->is_failed; i++) {
        kp_cql_column *c = &md->columns[i];
        if (global_keyspace) {
            c->keyspace = global_keyspace;
            c->table = global_table;
        } else {
            c->keyspace = rd_string(r, a, "column keyspace");
            c->table = rd_string(r, a, "column table");
        }
        c->name = rd_string(r, a, "column name");
        c->type = rd_type(r, a, 0);
    }
}

static void rd_schema_change(reader *r, kp_arena *a, kp_cql_schema_change *sc)
{
    sc->change_type = rd_string(r, a, "change type");
    sc->target = rd_string(r, a, "change target");
    sc->keyspace = rd_string(r, a, "keyspace");
    if (r->is_failed) return;
    if (!strcmp(sc->target, "KEYSPACE")) return;
    sc->name = rd_string(r, a, "name");
    if (!strcmp(sc->target, "FUNCTION") || !strcmp(sc->target, "AGGREGATE"))
        sc->arg_types = rd_string_list(r, a, &sc->arg_type_count, "argument types");
    else if (strcmp(sc->target, "TABLE") && strcmp(sc->target, "TYPE") && !r->is_failed)
        fail(r, "unknown schema change target \"%.40s\"", sc->target);
}

static void rd_rows(reader *r, kp_cql_response *out, const kp_cql_metadata *known)
{
    rd_metadata(r, &out->arena, &out->metadata, 0, known);
    out->row_count = rd_i32(r, "row count");
    if (r->is_failed) return;
    const kp_cql_metadata *md = &out->metadata;
    if (out->row_count < 0) { fail(r, "a negative row count %" PRId32, out->row_count); return; }
    if (out->row_count > 0 && !md->columns) {
        fail(r, "rows without column metadata (the statement was not prepared by this client)");
        return;
    }
    if (out->row_count > 0 && md->column_count == 0) { fail(r, "rows without columns"); return; }
    if (md->column_count > 0 && (size_t)out->row_count > left(r) / 4 / (size_t)md->column_count) {
        fail(r, "%" PRId32 " rows of %" PRId32 " columns announced in %zu bytes", out->row_count, md->column_count,
             left(r));
        return;
    }
    out->rows = cJSON_CreateArray();
    if (!out->rows) { fail_nomem(r); return; }
    for (int32_t i = 0; i < out->row_count; i++) {
        cJSON *row = cJSON_CreateObject();
        if (!row) { fail_nomem(r); return; }
        cJSON_AddItemToArray(out->rows, row);
        for (int32_t c = 0; c < md->column_count; c++) {
            int32_t len;
            const uint8_t *p = rd_bytes_view(r, &len, 0, "cell");
            if (r->is_failed) return;
            if (len > 0) out->rows_bytes += len;
            cJSON *v = kp_cql_value_decode(md->columns[c].type, p, len, r->err);
            if (!v) {
                /* name the column: the value's own message says what was wrong */
                char why[sizeof r->err->message];
                snprintf(why, sizeof why, "%s", r->err ? r->err->message : "");
                int code = r->err ? r->err->code : KP_ERR_TARGET;
                r->is_failed = 1;
                kp_error_set(r->err, code, NULL, 0, 0, "row %" PRId32 ", column %s: %s", i + 1, md->columns[c].name, why);
                return;
            }
            cJSON_AddItemToObject(row, md->columns[c].name, v);
        }
    }
}

int kp_cql_response_decode_body(const kp_cql_header *h, const uint8_t *body, size_t len, const kp_cql_metadata *known,
                                kp_cql_response *out, kp_error *err)
{
    memset(out, 0, sizeof *out);
    out->header = *h;
    out->token_len = -1;
    kp_arena *a = &out->arena;
    if (len != h->length)
        return kp_error_set(err, KP_ERR_TARGET, NULL, 0, 0,
                            "truncated CQL frame: the header announces %" PRIu32 " body bytes, %zu present", h->length, len);
    char what[48];
    snprintf(what, sizeof what, "%s body", opcode_name(h->opcode) ? opcode_name(h->opcode) : "response");
    reader r;
    reader_init(&r, body, len, what, err);
    if (h->flags & KP_CQL_FLAG_TRACING) {
        if (!need(&r, 16, "tracing id")) {
            out->tracing_id = copy_bytes(&r, a, r.p + r.pos, 16);
            r.pos += 16;
        }
    }
    if (h->flags & KP_CQL_FLAG_WARNING) out->warnings = rd_string_list(&r, a, &out->warning_count, "warnings");
    if (h->flags & KP_CQL_FLAG_CUSTOM_PAYLOAD) {
        uint16_t n = rd_u16(&r, "custom payload size");
        for (uint16_t i = 0; i < n && !r.is_failed; i++) {
            int32_t blen;
            if (!rd_string(&r, a, "custom payload key")) break;
            rd_bytes_view(&r, &blen, 0, "custom payload value");
        }
        out->custom_payload_count = r.is_failed ? 0 : n;
    }
    switch (h->opcode) {
    case KP_CQL_OP_ERROR: {
        kp_cql_error_info *e = &out->error;
        e->code = rd_i32(&r, "error code");
        e->message = rd_string(&r, a, "error message");
        if (r.is_failed) break;
        switch (e->code) {
        case KP_CQL_ERR_UNAVAILABLE:
            e->consistency = rd_u16(&r, "consistency");
            e->required = rd_i32(&r, "required");
            e->alive = rd_i32(&r, "alive");
            break;
        case KP_CQL_ERR_WRITE_TIMEOUT:
            e->consistency = rd_u16(&r, "consistency");
            e->received = rd_i32(&r, "received");
            e->block_for = rd_i32(&r, "blockfor");
            e->write_type = rd_string(&r, a, "write type");
            break;
        case KP_CQL_ERR_READ_TIMEOUT:
            e->consistency = rd_u16(&r, "consistency");
            e->received = rd_i32(&r, "received");
            e->block_for = rd_i32(&r, "blockfor");
            e->data_present = rd_u8(&r, "data present") != 0;
            break;
        case KP_CQL_ERR_READ_FAILURE:
            e->consistency = rd_u16(&r, "consistency");
            e->received = rd_i32(&r, "received");
            e->block_for = rd_i32(&r, "blockfor");
            e->failures = rd_i32(&r, "failure count");
            e->data_present = rd_u8(&r, "data present") != 0;
            break;
        case KP_CQL_ERR_WRITE_FAILURE:
            e->consistency = rd_u16(&r, "consistency");
            e->received = rd_i32(&r, "received");
            e->block_for = rd_i32(&r, "blockfor");
            e->failures = rd_i32(&r, "failure count");
            e->write_type = rd_string(&r, a, "write type");
            break;
        case KP_CQL_ERR_FUNCTION_FAILURE:
            e->keyspace = rd_string(&r, a, "keyspace");
            e->table = rd_string(&r, a, "function");
            e->arg_types = rd_string_list(&r, a, &e->arg_type_count, "argument types");
            break;
        case KP_CQL_ERR_ALREADY_EXISTS:
            e->keyspace = rd_string(&r, a, "keyspace");
            e->table = rd_string(&r, a, "table");
            break;
        case KP_CQL_ERR_UNPREPARED:
            e->unprepared_id = rd_short_bytes(&r, a, &e->unprepared_id_len, "statement id");
            break;
        default:
            break;
        }
        break;
    }
    case KP_CQL_OP_READY:
        break;
    case KP_CQL_OP_AUTHENTICATE:
        out->authenticator = rd_string(&r, a, "authenticator");
        break;
    case KP_CQL_OP_AUTH_CHALLENGE: case KP_CQL_OP_AUTH_SUCCESS:
        out->token = rd_bytes(&r, a, &out->token_len, "token");
        break;
    case KP_CQL_OP_SUPPORTED: {
        uint16_t n = rd_u16(&r, "option count");
        if (r.is_failed) break;
        if ((size_t)n * 4 > left(&r)) { fail(&r, "%u options announced in %zu bytes", n, left(&r)); break; }
        out->supported = kp_arena_alloc(a, (n ? n : 1) * sizeof *out->supported);
        if (!out->supported) { fail_nomem(&r); break; }
        for (uint16_t i = 0; i < n && !r.is_failed; i++) {
            out->supported[i].key = rd_string(&r, a, "option name");
            out->supported[i].values = rd_string_list(&r, a, &out->supported[i].value_count, "option values");
        }
        out->supported_count = r.is_failed ? 0 : n;
        break;
    }
    case KP_CQL_OP_RESULT:
        out->result_kind = rd_i32(&r, "result kind");
        if (r.is_failed) break;
        switch (out->result_kind) {
        case KP_CQL_RESULT_VOID: break;
        case KP_CQL_RESULT_ROWS: rd_rows(&r, out, known); break;
        case KP_CQL_RESULT_SET_KEYSPACE: out->keyspace = rd_string(&r, a, "keyspace"); break;
        case KP_CQL_RESULT_PREPARED:
            out->prepared_id = rd_short_bytes(&r, a, &out->prepared_id_len, "statement id");
            rd_metadata(&r, a, &out->metadata, 1, NULL);
            rd_metadata(&r, a, &out->result_metadata, 0, NULL);
            break;
        case KP_CQL_RESULT_SCHEMA_CHANGE: rd_schema_change(&r, a, &out->schema_change); break;
        default: fail(&r, "unknown result kind %" PRId32, out->result_kind); break;
        }
        break;
    case KP_CQL_OP_EVENT:
        out->event_type = rd_string(&r, a, "event type");
        if (r.is_failed) break;
        if (!strcmp(out->event_type, "SCHEMA_CHANGE")) {
            rd_schema_change(&r, a, &out->schema_change);
        } else if (!strcmp(out->event_type, "TOPOLOGY_CHANGE") || !strcmp(out->event_type, "STATUS_CHANGE")) {
            out->event_change = rd_string(&r, a, "change");
            uint8_t n = rd_u8(&r, "address size");
            if (r.is_failed) break;
            if (n != 4 && n != 16) { fail(&r, "an address of %u bytes", n); break; }
            if (need(&r, n, "address")) break;
            char host[48];
            inet_ntop(n == 4 ? AF_INET : AF_INET6, r.p + r.pos, host, sizeof host);
            r.pos += n;
            int32_t port = rd_i32(&r, "port");
            snprintf(out->event_address, sizeof out->event_address, n == 4 ? "%s:%" PRId32 : "[%s]:%" PRId32, host, port);
        } else {
            fail(&r, "unknown event type \"%.40s\"", out->event_type);
        }
        break;
    default:
        fail(&r, "opcode 0x%02x is not a response", h->opcode);
        break;
    }
    if (!r.is_failed && left(&r)) fail(&r, "%zu unexpected bytes after the body", left(&r));
    if (r.is_failed) {
        kp_cql_response_free(out);
        return -1;
    }
    return 0;
}

int kp_cql_response_decode(const uint8_t *frame, size_t len, const kp_cql_metadata *known, uint32_t max_body,
                           kp_cql_response *out, kp_error *err)
{
    kp_cql_header h;
    memset(out, 0, sizeof *out);
    if (kp_cql_header_decode(frame, len, 1, max_body, &h, err)) return -1;
    return kp_cql_response_decode_body(&h, frame + KP_CQL_HEADER_SIZE, len - KP_CQL_HEADER_SIZE, known, out, err);
}

void kp_cql_response_free(kp_cql_response *r)
{
    if (!r) return;
    cJSON_Delete(r->rows);
    r->rows = NULL;
    kp_arena_free(&r->arena);
    memset(r, 0, sizeof *r);
}

static int put_metadata(kp_cql_buf *b, const kp_cql_metadata *md, int is_prepared, kp_error *err)
{
    put_i32(b, md->flags);
    put_i32(b, md->column_count);
    if (is_prepared) {
        put_i32(b, md->pk_count);
        for (int32_t i = 0; i < md->pk_count; i++) put_u16(b, md->pk_indexes[i]);
    } else if (md->flags & KP_CQL_MD_HAS_MORE_PAGES) {
        put_bytes(b, md->paging_state, md->paging_state_len);
    }
    if (!is_prepared && (md->flags & KP_CQL_MD_NO_METADATA)) return 0;
    if (md->column_count && !md->columns)
        return kp_error_set(err, KP_ERR_INTERNAL, NULL, 0, 0, "CQL metadata without its columns");
    int is_global = md->flags & KP_CQL_MD_GLOBAL_TABLES_SPEC;
    if (is_global && md->column_count > 0)
        if (put_string(b, md->columns[0].keyspace, err) || put_string(b, md->columns[0].table, err)) return -1;
    if (is_global && md->column_count == 0)
        if (put_string(b, "", err) || put_string(b, "", err)) return -1;
    for (int32_t i = 0; i < md->column_count; i++) {
        const kp_cql_column *c = &md->columns[i];
        if (!is_global && (put_string(b, c->keyspace, err) || put_string(b, c->table, err))) return -1;
        if (put_string(b, c->name, err) || put_type(b, c->type, 0, err)) return -1;
    }
    return 0;
}

static int put_schema_change(kp_cql_buf *b, const kp_cql_schema_change *sc, kp_error *err)
{
    if (put_string(b, sc->change_type, err) || put_string(b, sc->target, err) || put_string(b, sc->keyspace, err))
        return -1;
    if (!sc->target || !strcmp(sc->target, "KEYSPACE")) return 0;
    if (put_string(b, sc->name, err)) return -1;
    if (!strcmp(sc->target, "FUNCTION") || !strcmp(sc->target, "AGGREGATE"))
        return put_string_list(b, sc->arg_types, sc->arg_type_count, err);
    return 0;
}

static int put_response_body(kp_cql_buf *b, const kp_cql_response *r, const kp_cql_metadata *known, kp_error *err)
{
    const kp_cql_header *h = &r->header;
    if (h->flags & KP_CQL_FLAG_TRACING) {
        static const uint8_t zero[16];
        put_raw(b, r->tracing_id ? r->tracing_id : zero, 16);
    }
    if ((h->flags & KP_CQL_FLAG_WARNING) && put_string_list(b, r->warnings, r->warning_count, err)) return -1;
    if (h->flags & KP_CQL_FLAG_CUSTOM_PAYLOAD) put_u16(b, 0);
    switch (h->opcode) {
    case KP_CQL_OP_ERROR: {
        const kp_cql_error_info *e = &r->error;
        put_i32(b, e->code);
        if (put_string(b, e->message, err)) return -1;
        switch (e->code) {
        case KP_CQL_ERR_UNAVAILABLE:
            put_u16(b, e->consistency); put_i32(b, e->required); put_i32(b, e->alive);
            return 0;
        case KP_CQL_ERR_WRITE_TIMEOUT:
            put_u16(b, e->consistency); put_i32(b, e->received); put_i32(b, e->block_for);
            return put_string(b, e->write_type, err);
        case KP_CQL_ERR_READ_TIMEOUT:
            put_u16(b, e->consistency); put_i32(b, e->received); put_i32(b, e->block_for);
            put_u8(b, e->data_present ? 1 : 0);
            return 0;
        case KP_CQL_ERR_READ_FAILURE:
            put_u16(b, e->consistency); put_i32(b, e->received); put_i32(b, e->block_for);
            put_i32(b, e->failures); put_u8(b, e->data_present ? 1 : 0);
            return 0;
        case KP_CQL_ERR_WRITE_FAILURE:
            put_u16(b, e->consistency); put_i32(b, e->received); put_i32(b, e->block_for);
            put_i32(b, e->failures);
            return put_string(b, e->write_type, err);
        case KP_CQL_ERR_FUNCTION_FAILURE:
            if (put_string(b, e->keyspace, err) || put_string(b, e->table, err)) return -1;
            return put_string_list(b, e->arg_types, e->arg_type_count, err);
        case KP_CQL_ERR_ALREADY_EXISTS:
            return put_string(b, e->keyspace, err) || put_string(b, e->table, err) ? -1 : 0;
        case KP_CQL_ERR_UNPREPARED:
            put_short_bytes(b, e->unprepared_id, e->unprepared_id_len);
            return 0;
        default:
            return 0;
        }
    }
    case KP_CQL_OP_READY:
        return 0;
    case KP_CQL_OP_AUTHENTICATE:
        return put_string(b, r->authenticator, err);
    case KP_CQL_OP_AUTH_CHALLENGE: case KP_CQL_OP_AUTH_SUCCESS:
        put_bytes(b, r->token, r->token_len);
        return 0;
    case KP_CQL_OP_SUPPORTED:
        if (r->supported_count > 65535) return kp_error_set(err, KP_ERR_INTERNAL, NULL, 0, 0, "too many options");
        put_u16(b, (uint16_t)r->supported_count);
        for (size_t i = 0; i < r->supported_count; i++)
            if (put_string(b, r->supported[i].key, err) ||
                put_string_list(b, r->supported[i].values, r->supported[i].value_count, err))
                return -1;
        return 0;
    case KP_CQL_OP_RESULT:
        put_i32(b, r->result_kind);
        switch (r->result_kind) {
        case KP_CQL_RESULT_VOID: return 0;
        case KP_CQL_RESULT_SET_KEYSPACE: return put_string(b, r->keyspace, err);
        case KP_CQL_RESULT_SCHEMA_CHANGE: return put_schema_change(b, &r->schema_change, err);
        case KP_CQL_RESULT_PREPARED:
            put_short_bytes(b, r->prepared_id, r->prepared_id_len);
            return put_metadata(b, &r->metadata, 1, err) || put_metadata(b, &r->result_metadata, 0, err) ? -1 : 0;
        case KP_CQL_RESULT_ROWS: {
            const kp_cql_metadata *md = &r->metadata;
            if (put_metadata(b, md, 0, err)) return -1;
            const kp_cql_column *columns = md->columns ? md->columns : known ? known->columns : NULL;
            int rows = r->rows ? cJSON_GetArraySize(r->rows) : 0;
            put_i32(b, rows);
            if (rows && !columns)
                return kp_error_set(err, KP_ERR_INTERNAL, NULL, 0, 0, "rows to encode without column types");
            for (const cJSON *row = r->rows ? r->rows->child : NULL; row; row = row->next) {
                if (cJSON_GetArraySize(row) != md->column_count)
                    return kp_error_set(err, KP_ERR_INTERNAL, NULL, 0, 0, "a row with %d values for %" PRId32 " columns",
                                        cJSON_GetArraySize(row), md->column_count);
                const cJSON *cell = row->child;
                for (int32_t c = 0; c < md->column_count; c++, cell = cell->next)
                    if (kp_cql_value_encode(columns[c].type, cell, b, err)) return -1;
            }
            return 0;
        }
        default:
            return kp_error_set(err, KP_ERR_INTERNAL, NULL, 0, 0, "unknown result kind %" PRId32, r->result_kind);
        }
    case KP_CQL_OP_EVENT: {
        if (put_string(b, r->event_type, err)) return -1;
        if (r->event_type && !strcmp(r->event_type, "SCHEMA_CHANGE")) return put_schema_change(b, &r->schema_change, err);
        if (put_string(b, r->event_change, err)) return -1;
        /* "host:port" or "[v6]:port" */
        char host[64];
        snprintf(host, sizeof host, "%s", r->event_address);
        char *colon = strrchr(host, ':');
        int32_t port = colon ? (int32_t)atoi(colon + 1) : 0;
        if (colon) *colon = '\0';
        char *h6 = host;
        if (h6[0] == '[') {
            h6++;
            char *close = strchr(h6, ']');
            if (close) *close = '\0';
        }
        uint8_t addr[16];
        if (inet_pton(AF_INET, h6, addr) == 1) { put_u8(b, 4); put_raw(b, addr, 4); }
        else if (inet_pton(AF_INET6, h6, addr) == 1) { put_u8(b, 16); put_raw(b, addr, 16); }
        else return kp_error_set(err, KP_ERR_INTERNAL, NULL, 0, 0, "an event address that is not an IP address");
        put_i32(b, port);
        return 0;
    }
    default:
        return kp_error_set(err, KP_ERR_INTERNAL, NULL, 0, 0, "0x%02x is not a CQL response opcode", h->opcode);
    }
}

int kp_cql_response_encode(const kp_cql_response *r, const kp_cql_metadata *known, kp_cql_buf *out, kp_error *err)
{
    size_t at = begin_frame(out, KP_CQL_VERSION | KP_CQL_RESPONSE_BIT, r->header.flags, r->header.stream,
                            r->header.opcode);
    if (put_response_body(out, r, known, err)) {
        if (!out->is_failed) out->len = at;
        return -1;
    }
    return end_frame(out, at, err);
}

int kp_cql_metadata_copy(const kp_cql_metadata *from, kp_arena *a, kp_cql_metadata *to)
{
    memset(to, 0, sizeof *to);
    to->flags = from->flags;
    to->column_count = from->column_count;
    if (from->paging_state) {
        uint8_t *p = kp_arena_alloc(a, from->paging_state_len ? (size_t)from->paging_state_len : 1);
        if (!p) return -1;
        memcpy(p, from->paging_state, (size_t)from->paging_state_len);
        to->paging_state = p;
        to->paging_state_len = from->paging_state_len;
    }
    if (from->pk_indexes) {
        to->pk_indexes = kp_arena_alloc(a, (from->pk_count ? (size_t)from->pk_count : 1) * sizeof *to->pk_indexes);
        if (!to->pk_indexes) return -1;
        memcpy(to->pk_indexes, from->pk_indexes, (size_t)from->pk_count * sizeof *to->pk_indexes);
        to->pk_count = from->pk_count;
    }
    if (from->columns) {
        to->columns = kp_arena_alloc(a, (from->column_count ? (size_t)from->column_count : 1) * sizeof *to->columns);
        if (!to->columns) return -1;
        for (int32_t i = 0; i < from->column_count; i++) {
            const kp_cql_column *f = &from->columns[i];
            kp_cql_column *t = &to->columns[i];
            if ((f->keyspace && !(t->keyspace = kp_arena_strdup(a, f->keyspace))) ||
                (f->table && !(t->table = kp_arena_strdup(a, f->table))) ||
                (f->name && !(t->name = kp_arena_strdup(a, f->name))) || !(t->type = kp_cql_type_copy(f->type, a)))
                return -1;
        }
    }
    return 0;
}

/* ---- names ---------------------------------------------------------------------------------------- */

/* Cassandra 5.0's reserved keywords (org.apache.cassandra.cql3.ReservedKeywords), sorted. */
static const char *const reserved_words[] = {
    "ADD", "ALLOW", "ALTER", "AND", "APPLY", "ASC", "AUTHORIZE", "BATCH", "BEGIN", "BY", "COLUMNFAMILY",
    "CREATE", "DEFAULT", "DELETE", "DESC", "DESCRIBE", "DROP", "ENTRIES", "EXECUTE", "FOR", "FROM", "FULL",
    "GRANT", "IF", "IN", "INDEX", "INFINITY", "INSERT", "INTO", "IS", "KEYSPACE", "LIMIT", "MATERIALIZED",
    "MBEAN", "MBEANS", "MODIFY", "NAN", "NORECURSIVE", "NOT", "NULL", "OF", "ON", "OR", "ORDER", "PRIMARY",
    "RENAME", "REPLACE", "RESTRICT", "REVOKE", "SCHEMA", "SELECT", "SET", "TABLE", "TO", "TOKEN", "TRUNCATE",
    "UNLOGGED", "UNRESTRICT", "UNSET", "UPDATE", "USE", "USING", "VIEW", "WHERE", "WITH",
};

int kp_cql_is_reserved(const char *word)
{
    char upper[32];
    size_t n = strlen(word);
    if (n == 0 || n >= sizeof upper) return 0;
    for (size_t i = 0; i <= n; i++) upper[i] = (char)toupper((unsigned char)word[i]);
    size_t lo = 0, hi = sizeof reserved_words / sizeof reserved_words[0];
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        int c = strcmp(upper, reserved_words[mid]);
        if (c == 0) return 1;
        if (c < 0) hi = mid;
        else lo = mid + 1;
    }
    return 0;
}

size_t kp_cql_quote_identifier(const char *name, char *out, size_t size)
{
    int is_bare = name[0] >= 'a' && name[0] <= 'z';
    for (const char *p = name; *p && is_bare; p++)
        if (!((*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') || *p == '_')) is_bare = 0;
    if (is_bare && kp_cql_is_reserved(name)) is_bare = 0;
    size_t need = 0;
    if (is_bare) {
        need = strlen(name);
        if (size) {
            size_t n = need < size ? need : size - 1;
            memcpy(out, name, n);
            out[n] = '\0';
        }
        return need;
    }
    size_t o = 0;
#define EMIT(c) do { if (o + 1 < size) out[o] = (c); o++; } while (0)
    EMIT('"');
    for (const char *p = name; *p; p++) {
        if (*p == '"') EMIT('"');
        EMIT(*p);
    }
    EMIT('"');
#undef EMIT
    if (size) out[o < size ? o : size - 1] = '\0';
    return o;
}

size_t kp_cql_snake_case(const char *name, char *out, size_t size)
{
    size_t o = 0;
    int pending_separator = 0;
#define EMIT(c) do { if (o + 1 < size) out[o] = (c); o++; } while (0)
    for (size_t i = 0; name[i]; i++) {
        unsigned char c = (unsigned char)name[i];
        if (!isalnum(c) && c < 0x80) {   /* '_', '-', ' ', '.': a word boundary */
            if (o) pending_separator = 1;
            continue;
        }
        if (isupper(c) && i > 0) {
            unsigned char prev = (unsigned char)name[i - 1], next = (unsigned char)name[i + 1];
            /* workspaceId -> workspace_id; HTTPServer -> http_server; v2Beta -> v2_beta */
            if (islower(prev) || isdigit(prev) || (isupper(prev) && islower(next))) pending_separator = o > 0;
        }
        if (pending_separator) { EMIT('_'); pending_separator = 0; }
        EMIT((char)(c < 0x80 ? tolower(c) : c));
    }
#undef EMIT
    if (size) out[o < size ? o : size - 1] = '\0';
    return o;
}

long kp_cql_snake_collision(const char *const *names, size_t count, size_t *earlier)
{
    char a[256], b[256];
    for (size_t i = 1; i < count; i++) {
        kp_cql_snake_case(names[i], a, sizeof a);
        for (size_t j = 0; j < i; j++) {
            kp_cql_snake_case(names[j], b, sizeof b);
            if (!strcmp(a, b)) {
                if (earlier) *earlier = j;
                return (long)i;
            }
        }
    }
    return -1;
}
