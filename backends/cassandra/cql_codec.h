/*
 * cql_codec.h — the CQL native protocol v4 on the wire, without any I/O: frames,
 * request and response bodies, and values of every CQL type converted to and from
 * keyplan's canonical JSON (apache/cassandra doc/native_protocol_v4.spec).
 *
 * Requests and responses are plain structs. Encoding appends a whole frame (9-byte
 * header + body) to a kp_cql_buf; decoding reads a whole frame and fills a struct
 * whose strings, byte slices and types live in the struct's own arena (rows are one
 * cJSON tree it also owns), so nothing points into the input after decoding. The same
 * structs go both ways, so every frame kind round-trips: the client encodes requests
 * and decodes responses; tests, the fuzzer and a fake server do the opposite.
 *
 * Values (the canonical JSON of DESIGN.md; numbers are cJSON_Raw nodes holding their
 * exact text, as in core/data.h):
 *
 *   CQL type                          JSON value
 *   ascii, varchar (text)             string (ascii: bytes 0-127; no NUL inside)
 *   tinyint smallint int bigint       raw integer text, range-checked on encode
 *   counter varint                    raw integer text (varint: any length up to 4 KiB)
 *   decimal                           raw exact decimal text "-12.50" (scale kept; an
 *                                     exponent is accepted on encode: "1.5e3"); a scale
 *                                     that would add more than 400 zeros is refused
 *   double, float                     raw shortest round-trip text; NaN and infinities as
 *                                     the strings "NaN", "Infinity", "-Infinity"
 *   boolean                           true / false
 *   blob, custom types                base64 string (standard alphabet, padded)
 *   timestamp                         "YYYY-MM-DDTHH:MM:SS.sssZ" for years 0000-9999,
 *                                     raw epoch milliseconds outside; encode takes both
 *   date                              "YYYY-MM-DD" for years 0000-9999, raw days since
 *                                     1970-01-01 outside; encode takes both
 *   time                              "HH:MM:SS.nnnnnnnnn"; encode also takes 1-9 fraction
 *                                     digits, none, or raw nanoseconds since midnight
 *   uuid, timeuuid                    lower-case 8-4-4-4-12 (encode accepts upper case;
 *                                     timeuuid must be version 1)
 *   inet                              "192.0.2.1" or "2001:db8::1"
 *   list, set, tuple                  array (tuple: one element per component, null allowed)
 *   map                               object; keys are the text of the key value (a string
 *                                     as is, a number's text, "true"/"false", other keys
 *                                     as compact JSON); encode also takes [[k, v], ...]
 *   UDT                               object of every field, null for a null field
 *   a null value                      JSON null; a zero-length value of a fixed-width
 *                                     type (Cassandra's "empty") decodes to null too
 *
 * Invariant: every read is bounds-checked against the input; a malformed, truncated,
 * oversized or over-deep frame, body or value is a KP_ERR_TARGET error (the message
 * says what and at which body offset), never a crash or a read past the input. Counts
 * are checked against the bytes left before anything is allocated for them, so what a
 * decoded frame allocates stays within a bounded multiple of its length (about 50x at
 * worst: one JSON node per 4-byte cell).
 */
#ifndef KP_CQL_CODEC_H
#define KP_CQL_CODEC_H

#include <stddef.h>
#include <stdint.h>
#include <cjson/cJSON.h>

#include "core/arena.h"
#include "core/error.h"

enum {
    KP_CQL_HEADER_SIZE = 9,
    KP_CQL_VERSION = 0x04,              /* request byte; responses carry 0x84 */
    KP_CQL_RESPONSE_BIT = 0x80,
    KP_CQL_MAX_BODY = 256 * 1024 * 1024, /* the spec's frame limit */
    KP_CQL_MAX_STREAM = 32767,          /* v4 stream ids: 0..32767 for requests, -1 for events */
    KP_CQL_MAX_TYPE_DEPTH = 32,         /* nesting of collection/tuple/UDT types */
    KP_CQL_MAX_VARINT_BYTES = 4096      /* varint and decimal magnitudes keyplan converts */
};

/* Frame header flags. */
enum {
    KP_CQL_FLAG_COMPRESSION = 0x01,
    KP_CQL_FLAG_TRACING = 0x02,
    KP_CQL_FLAG_CUSTOM_PAYLOAD = 0x04,
    KP_CQL_FLAG_WARNING = 0x08
};

typedef enum kp_cql_opcode {
    KP_CQL_OP_ERROR = 0x00,
    KP_CQL_OP_STARTUP = 0x01,
    KP_CQL_OP_READY = 0x02,
    KP_CQL_OP_AUTHENTICATE = 0x03,
    KP_CQL_OP_OPTIONS = 0x05,
    KP_CQL_OP_SUPPORTED = 0x06,
    KP_CQL_OP_QUERY = 0x07,
    KP_CQL_OP_RESULT = 0x08,
    KP_CQL_OP_PREPARE = 0x09,
    KP_CQL_OP_EXECUTE = 0x0A,
    KP_CQL_OP_REGISTER = 0x0B,
    KP_CQL_OP_EVENT = 0x0C,
    KP_CQL_OP_BATCH = 0x0D,
    KP_CQL_OP_AUTH_CHALLENGE = 0x0E,
    KP_CQL_OP_AUTH_RESPONSE = 0x0F,
    KP_CQL_OP_AUTH_SUCCESS = 0x10
} kp_cql_opcode;

typedef enum kp_cql_consistency {
    KP_CQL_ANY = 0x0000,
    KP_CQL_ONE = 0x0001,
    KP_CQL_TWO = 0x0002,
    KP_CQL_THREE = 0x0003,
    KP_CQL_QUORUM = 0x0004,
    KP_CQL_ALL = 0x0005,
    KP_CQL_LOCAL_QUORUM = 0x0006,
    KP_CQL_EACH_QUORUM = 0x0007,
    KP_CQL_SERIAL = 0x0008,
    KP_CQL_LOCAL_SERIAL = 0x0009,
    KP_CQL_LOCAL_ONE = 0x000A
} kp_cql_consistency;

/* QUERY / EXECUTE parameter flags (BATCH uses 0x10, 0x20, 0x40 alike). */
enum {
    KP_CQL_QF_VALUES = 0x01,
    KP_CQL_QF_SKIP_METADATA = 0x02,
    KP_CQL_QF_PAGE_SIZE = 0x04,
    KP_CQL_QF_PAGING_STATE = 0x08,
    KP_CQL_QF_SERIAL_CONSISTENCY = 0x10,
    KP_CQL_QF_DEFAULT_TIMESTAMP = 0x20,
    KP_CQL_QF_NAMES = 0x40
};

typedef enum kp_cql_result_kind {
    KP_CQL_RESULT_VOID = 0x0001,
    KP_CQL_RESULT_ROWS = 0x0002,
    KP_CQL_RESULT_SET_KEYSPACE = 0x0003,
    KP_CQL_RESULT_PREPARED = 0x0004,
    KP_CQL_RESULT_SCHEMA_CHANGE = 0x0005
} kp_cql_result_kind;

/* Rows metadata flags. */
enum {
    KP_CQL_MD_GLOBAL_TABLES_SPEC = 0x0001,
    KP_CQL_MD_HAS_MORE_PAGES = 0x0002,
    KP_CQL_MD_NO_METADATA = 0x0004
};

typedef enum kp_cql_batch_type {
    KP_CQL_BATCH_LOGGED = 0,
    KP_CQL_BATCH_UNLOGGED = 1,
    KP_CQL_BATCH_COUNTER = 2
} kp_cql_batch_type;

/* ERROR codes. */
enum {
    KP_CQL_ERR_SERVER = 0x0000,
    KP_CQL_ERR_PROTOCOL = 0x000A,
    KP_CQL_ERR_BAD_CREDENTIALS = 0x0100,
    KP_CQL_ERR_UNAVAILABLE = 0x1000,
    KP_CQL_ERR_OVERLOADED = 0x1001,
    KP_CQL_ERR_IS_BOOTSTRAPPING = 0x1002,
    KP_CQL_ERR_TRUNCATE = 0x1003,
    KP_CQL_ERR_WRITE_TIMEOUT = 0x1100,
    KP_CQL_ERR_READ_TIMEOUT = 0x1200,
    KP_CQL_ERR_READ_FAILURE = 0x1300,
    KP_CQL_ERR_FUNCTION_FAILURE = 0x1400,
    KP_CQL_ERR_WRITE_FAILURE = 0x1500,
    KP_CQL_ERR_SYNTAX = 0x2000,
    KP_CQL_ERR_UNAUTHORIZED = 0x2100,
    KP_CQL_ERR_INVALID = 0x2200,
    KP_CQL_ERR_CONFIG = 0x2300,
    KP_CQL_ERR_ALREADY_EXISTS = 0x2400,
    KP_CQL_ERR_UNPREPARED = 0x2500
};

/* "Syntax error", "Write timeout", ... ("Error" for a code the spec does not name). */
const char *kp_cql_error_name(int32_t code);
/* "ONE", "LOCAL_QUORUM", ... ("?" for an unknown one). */
const char *kp_cql_consistency_name(uint16_t consistency);

/* ---- a growable output buffer ------------------------------------------------------ */

typedef struct kp_cql_buf {
    uint8_t *data;
    size_t len, cap;
    int is_failed;                 /* an allocation failed: the content is incomplete */
} kp_cql_buf;

void kp_cql_buf_reset(kp_cql_buf *buf);   /* len = 0, keeps the memory */
void kp_cql_buf_free(kp_cql_buf *buf);

/* ---- the frame header -------------------------------------------------------------- */

typedef struct kp_cql_header {
    uint8_t version;               /* 0x04 request, 0x84 response */
    uint8_t flags;
    int16_t stream;
    uint8_t opcode;
    uint32_t length;               /* body bytes */
} kp_cql_header;

void kp_cql_header_encode(const kp_cql_header *header, uint8_t out[KP_CQL_HEADER_SIZE]);
/* Reads a header from the first 9 bytes of buf (len >= 9) and checks it: protocol v4,
 * direction (is_response), a known opcode, length <= max_body (0: KP_CQL_MAX_BODY),
 * no compression. */
int kp_cql_header_decode(const uint8_t *buf, size_t len, int is_response, uint32_t max_body,
                         kp_cql_header *out, kp_error *err);

/* ---- types ---------------------------------------------------------------------------- */

typedef enum kp_cql_type_code {
    KP_CQL_T_CUSTOM = 0x0000,
    KP_CQL_T_ASCII = 0x0001,
    KP_CQL_T_BIGINT = 0x0002,
    KP_CQL_T_BLOB = 0x0003,
    KP_CQL_T_BOOLEAN = 0x0004,
    KP_CQL_T_COUNTER = 0x0005,
    KP_CQL_T_DECIMAL = 0x0006,
    KP_CQL_T_DOUBLE = 0x0007,
    KP_CQL_T_FLOAT = 0x0008,
    KP_CQL_T_INT = 0x0009,
    KP_CQL_T_TIMESTAMP = 0x000B,
    KP_CQL_T_UUID = 0x000C,
    KP_CQL_T_VARCHAR = 0x000D,
    KP_CQL_T_VARINT = 0x000E,
    KP_CQL_T_TIMEUUID = 0x000F,
    KP_CQL_T_INET = 0x0010,
    KP_CQL_T_DATE = 0x0011,
    KP_CQL_T_TIME = 0x0012,
    KP_CQL_T_SMALLINT = 0x0013,
    KP_CQL_T_TINYINT = 0x0014,
    KP_CQL_T_LIST = 0x0020,
    KP_CQL_T_MAP = 0x0021,
    KP_CQL_T_SET = 0x0022,
    KP_CQL_T_UDT = 0x0030,
    KP_CQL_T_TUPLE = 0x0031
} kp_cql_type_code;

typedef struct kp_cql_type kp_cql_type;
struct kp_cql_type {
    uint16_t code;                 /* kp_cql_type_code */
    const char *custom_class;      /* KP_CQL_T_CUSTOM: the server's Java class name */
    const char *keyspace, *name;   /* KP_CQL_T_UDT */
    const char **field_names;      /* KP_CQL_T_UDT: element_count names */
    const kp_cql_type **elements;  /* list, set: 1; map: key, value; tuple, UDT: one per component */
    uint16_t element_count;
};

/* A type from CQL type text: "int", "text", "frozen<map<text, list<int>>>",
 * "tuple<int, text>", "'org.apache...MyType'" (custom). User-defined types cannot be
 * written as text (their fields are unknown): build them by hand or take them from a
 * server's metadata. The type lives in `arena`. */
int kp_cql_type_parse(const char *text, kp_arena *arena, const kp_cql_type **out, kp_error *err);
/* CQL text of a type ("map<text, frozen<list<int>>>"; a UDT by its keyspace.name),
 * truncated to fit; returns out. */
char *kp_cql_type_text(const kp_cql_type *type, char *out, size_t size);
/* 1 when both types are the same (UDTs: same name and fields). */
int kp_cql_type_equal(const kp_cql_type *a, const kp_cql_type *b);
/* A deep copy into arena (NULL when out of memory). */
const kp_cql_type *kp_cql_type_copy(const kp_cql_type *type, kp_arena *arena);

/* ---- values ----------------------------------------------------------------------------- */

/* Appends the [bytes] of `value` as `type` (int32 length, then the serialized value; a
 * NULL pointer or JSON null is length -1). On a value that does not fit the type, err
 * says why (KP_ERR_DATA): "expected an int (32-bit), got 3000000000". */
int kp_cql_value_encode(const kp_cql_type *type, const cJSON *value, kp_cql_buf *out, kp_error *err);
/* The canonical JSON of a serialized value (len < 0: null). Returns a new tree the
 * caller frees with cJSON_Delete, or NULL with err filled (KP_ERR_TARGET). */
cJSON *kp_cql_value_decode(const kp_cql_type *type, const uint8_t *bytes, int32_t len, kp_error *err);

/* Exact conversions behind decimal and varint, exposed for tests and the backend. */
/* Integer text (optional '-', digits) -> minimal big-endian two's complement. */
int kp_cql_varint_from_text(const char *text, size_t len, kp_cql_buf *out, kp_error *err);
/* Big-endian two's complement (n >= 1) -> integer text; malloc'd, or NULL with err. */
char *kp_cql_varint_to_text(const uint8_t *bytes, size_t n, kp_error *err);
/* Decimal text ("-12.50", "1e-3") -> int32 scale + varint bytes (the decimal's wire form). */
int kp_cql_decimal_from_text(const char *text, size_t len, kp_cql_buf *out, kp_error *err);
/* A decimal's wire form -> exact text ("-12.50"); malloc'd, or NULL with err. */
char *kp_cql_decimal_to_text(const uint8_t *bytes, size_t n, kp_error *err);

/* Bound values of a QUERY, EXECUTE or one BATCH statement, serialized as they are
 * added. All values are named or none is. Free with kp_cql_values_free. */
typedef struct kp_cql_values {
    kp_cql_buf buf;                /* the values as they go on the wire */
    uint16_t count;
    int has_names;
} kp_cql_values;

/* value NULL or JSON null: null. */
int kp_cql_values_add_json(kp_cql_values *values, const char *name, const kp_cql_type *type, const cJSON *value,
                           kp_error *err);
/* len -1: null, -2: unset (the column is left as it is), else bytes[0..len). */
int kp_cql_values_add_bytes(kp_cql_values *values, const char *name, const uint8_t *bytes, int32_t len,
                            kp_error *err);
void kp_cql_values_reset(kp_cql_values *values);
void kp_cql_values_free(kp_cql_values *values);

/* ---- result metadata ---------------------------------------------------------------- */

typedef struct kp_cql_column {
    const char *keyspace, *table, *name;
    const kp_cql_type *type;
} kp_cql_column;

typedef struct kp_cql_metadata {
    int32_t flags;                 /* KP_CQL_MD_* */
    int32_t column_count;
    kp_cql_column *columns;        /* NULL with KP_CQL_MD_NO_METADATA */
    const uint8_t *paging_state;   /* with KP_CQL_MD_HAS_MORE_PAGES */
    int32_t paging_state_len;
    uint16_t *pk_indexes;          /* prepared (bind) metadata only */
    int32_t pk_count;
} kp_cql_metadata;

/* Binds values for a prepared statement's variables from `row`: an object keyed by
 * the variable names (a missing key is sent unset, JSON null as null) or an array in
 * variable order. Appends to *out (unnamed). */
int kp_cql_values_bind(const kp_cql_metadata *variables, const cJSON *row, kp_cql_values *out, kp_error *err);

/* ---- requests ------------------------------------------------------------------------ */

typedef struct kp_cql_pair {
    const char *key, *value;
} kp_cql_pair;

typedef struct kp_cql_params {
    uint16_t consistency;          /* kp_cql_consistency */
    const kp_cql_values *values;   /* NULL: none */
    int skip_metadata;
    int32_t page_size;             /* > 0: ask for pages of this many rows */
    const uint8_t *paging_state;   /* non-NULL: continue where that page stopped */
    int32_t paging_state_len;
    uint16_t serial_consistency;   /* 0: not sent; else SERIAL or LOCAL_SERIAL */
    int has_default_timestamp;
    int64_t default_timestamp;     /* microseconds since the epoch */
    int no_retry_after_send;       /* not on the wire: tells cql_client.c the statement must not run
                                      twice (counter update, LWT), so it is never retried once sent */
} kp_cql_params;

typedef struct kp_cql_batch_statement {
    const char *cql;               /* a statement text, or ... */
    const uint8_t *prepared_id;    /* ... a prepared statement's id */
    uint16_t prepared_id_len;
    const kp_cql_values *values;   /* NULL: none (never named in v4 batches) */
} kp_cql_batch_statement;

typedef struct kp_cql_batch {
    uint8_t type;                  /* kp_cql_batch_type */
    const kp_cql_batch_statement *statements;
    uint16_t count;
    uint16_t consistency;
    uint16_t serial_consistency;   /* 0: not sent */
    int has_default_timestamp;
    int64_t default_timestamp;
} kp_cql_batch;

typedef struct kp_cql_request {
    uint8_t opcode;                /* STARTUP, AUTH_RESPONSE, OPTIONS, QUERY, PREPARE, EXECUTE, BATCH, REGISTER */
    uint8_t flags;                 /* header flags (0) */
    int16_t stream;
    const kp_cql_pair *options;    /* STARTUP */
    size_t option_count;
    const uint8_t *token;          /* AUTH_RESPONSE; token_len -1: null */
    int32_t token_len;
    const char *cql;               /* QUERY, PREPARE */
    const uint8_t *prepared_id;    /* EXECUTE */
    uint16_t prepared_id_len;
    kp_cql_params params;          /* QUERY, EXECUTE */
    kp_cql_batch batch;            /* BATCH */
    const char **events;           /* REGISTER */
    size_t event_count;
} kp_cql_request;

/* Appends the whole frame of a request to out. */
int kp_cql_request_encode(const kp_cql_request *request, kp_cql_buf *out, kp_error *err);

/* Shorthands the client uses. */
int kp_cql_encode_startup(kp_cql_buf *out, int16_t stream, kp_error *err);   /* CQL_VERSION 3.0.0 */
int kp_cql_encode_options(kp_cql_buf *out, int16_t stream, kp_error *err);
/* AUTH_RESPONSE with the SASL PLAIN token "\0user\0password" (PasswordAuthenticator). */
int kp_cql_encode_auth_plain(kp_cql_buf *out, int16_t stream, const char *username, const char *password,
                             kp_error *err);
int kp_cql_encode_query(kp_cql_buf *out, int16_t stream, const char *cql, const kp_cql_params *params,
                        kp_error *err);
int kp_cql_encode_prepare(kp_cql_buf *out, int16_t stream, const char *cql, kp_error *err);
int kp_cql_encode_execute(kp_cql_buf *out, int16_t stream, const uint8_t *id, uint16_t id_len,
                          const kp_cql_params *params, kp_error *err);
int kp_cql_encode_batch(kp_cql_buf *out, int16_t stream, const kp_cql_batch *batch, kp_error *err);

/* A request frame as a server reads it, everything held by `arena` (values of
 * QUERY/EXECUTE/BATCH are rebuilt as kp_cql_values there too: free the request with
 * kp_cql_request_free_values before the arena). len must be the whole frame. */
int kp_cql_request_decode(const uint8_t *frame, size_t len, kp_arena *arena, kp_cql_request *out, kp_error *err);
void kp_cql_request_free_values(kp_cql_request *request);

/* ---- responses ----------------------------------------------------------------------- */

typedef struct kp_cql_error_info {
    int32_t code;                  /* KP_CQL_ERR_* */
    const char *message;           /* the server's own words */
    /* Unavailable, timeouts, failures */
    uint16_t consistency;
    int32_t required, alive;       /* Unavailable */
    int32_t received, block_for;   /* Write/Read timeout, Read/Write failure */
    int32_t failures;              /* Read/Write failure: nodes that failed */
    int data_present;              /* Read timeout / failure */
    const char *write_type;        /* Write timeout / failure: "SIMPLE", "BATCH", "COUNTER", "CAS", ... */
    /* Already exists, Function failure */
    const char *keyspace, *table;  /* table "" when a keyspace already exists; function name for 0x1400 */
    const char **arg_types;        /* Function failure */
    size_t arg_type_count;
    /* Unprepared */
    const uint8_t *unprepared_id;
    uint16_t unprepared_id_len;
} kp_cql_error_info;

typedef struct kp_cql_schema_change {
    const char *change_type;       /* CREATED, UPDATED, DROPPED */
    const char *target;            /* KEYSPACE, TABLE, TYPE, FUNCTION, AGGREGATE */
    const char *keyspace;
    const char *name;              /* table / type / function (NULL for KEYSPACE) */
    const char **arg_types;        /* FUNCTION / AGGREGATE */
    size_t arg_type_count;
} kp_cql_schema_change;

typedef struct kp_cql_multimap_entry {
    const char *key;
    const char **values;
    size_t value_count;
} kp_cql_multimap_entry;

typedef struct kp_cql_response {
    kp_cql_header header;          /* opcode, stream, flags */
    const uint8_t *tracing_id;     /* 16 bytes with KP_CQL_FLAG_TRACING */
    const char **warnings;         /* with KP_CQL_FLAG_WARNING */
    size_t warning_count;
    size_t custom_payload_count;   /* with KP_CQL_FLAG_CUSTOM_PAYLOAD (the entries are skipped) */

    kp_cql_error_info error;       /* ERROR */
    const char *authenticator;     /* AUTHENTICATE */
    const uint8_t *token;          /* AUTH_CHALLENGE, AUTH_SUCCESS; token_len -1: null */
    int32_t token_len;
    kp_cql_multimap_entry *supported;   /* SUPPORTED */
    size_t supported_count;

    int32_t result_kind;           /* RESULT: kp_cql_result_kind */
    kp_cql_metadata metadata;      /* Rows: result metadata; Prepared: bind variables */
    cJSON *rows;                   /* Rows: an array of objects, column name -> value (owned) */
    int32_t row_count;
    int64_t rows_bytes;            /* Rows: the bytes of their cell values (what the node read and sent) */
    const char *keyspace;          /* Set_keyspace */
    const uint8_t *prepared_id;    /* Prepared */
    uint16_t prepared_id_len;
    kp_cql_metadata result_metadata;    /* Prepared: the rows it will return */
    kp_cql_schema_change schema_change; /* Schema_change result, SCHEMA_CHANGE event */

    const char *event_type;        /* EVENT: TOPOLOGY_CHANGE, STATUS_CHANGE, SCHEMA_CHANGE */
    const char *event_change;      /* NEW_NODE, UP, ... */
    char event_address[64];        /* "127.0.0.1:9042" */

    kp_arena arena;                /* everything above except rows */
} kp_cql_response;

/* Decodes a whole response frame (len must be 9 + its body length). `known` gives the
 * columns of a Rows result sent with KP_CQL_MD_NO_METADATA (the prepared statement's
 * result metadata; NULL: such rows are an error). max_body: the largest body accepted
 * (0: KP_CQL_MAX_BODY). On failure *out holds nothing. */
int kp_cql_response_decode(const uint8_t *frame, size_t len, const kp_cql_metadata *known, uint32_t max_body,
                           kp_cql_response *out, kp_error *err);
/* The same with the header already read (the client reads headers first). */
int kp_cql_response_decode_body(const kp_cql_header *header, const uint8_t *body, size_t len,
                                const kp_cql_metadata *known, kp_cql_response *out, kp_error *err);
void kp_cql_response_free(kp_cql_response *response);

/* Appends a whole response frame (what a server sends): rows are encoded with the
 * metadata's column types (or `known`'s when the metadata says no metadata). */
int kp_cql_response_encode(const kp_cql_response *response, const kp_cql_metadata *known, kp_cql_buf *out,
                           kp_error *err);

/* Deep copies of metadata into an arena (the client keeps prepared statements' metadata). */
int kp_cql_metadata_copy(const kp_cql_metadata *from, kp_arena *arena, kp_cql_metadata *to);

/* ---- names ------------------------------------------------------------------------------ */

/* 1 when `word` (any case) is a reserved CQL keyword that cannot be a bare identifier. */
int kp_cql_is_reserved(const char *word);
/* Writes an identifier as CQL must see it: bare when it is lower-case letters, digits
 * and underscores, starts with a letter and is not reserved; otherwise double-quoted
 * with '"' doubled. Returns the length it needs (like snprintf). */
size_t kp_cql_quote_identifier(const char *name, char *out, size_t size);
/* workspaceId -> workspace_id, HTTPServer -> http_server, order-items -> order_items:
 * lower-case words joined by '_' (a non-alphanumeric character separates words).
 * Returns the length it needs (like snprintf). Two names that give the same text
 * collide: kp_cql_snake_collision finds such a pair. */
size_t kp_cql_snake_case(const char *name, char *out, size_t size);
/* Over `count` names: -1 when their snake_case forms are distinct, else the index of
 * the first name whose form equals an earlier one's (*earlier receives that index). */
long kp_cql_snake_collision(const char *const *names, size_t count, size_t *earlier);

#endif
