/*
 * test_cql_codec.c — the CQL native protocol v4 codec without a server: hand-written
 * frames laid out as doc/native_protocol_v4.spec draws them, every request and
 * response kind and every CQL type through encode -> decode -> encode, exact decimal,
 * varint, date and timestamp conversions at their edges, names (quoting, snake_case),
 * and hostile input: every truncation of every valid frame, bit flips, random bytes
 * from a seeded generator, oversized and over-deep frames — errors, never a crash or a
 * read past the input (the unit tests run under ASan in CI).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "backends/cassandra/cql_codec.h"
#include "core/json.h"

/* ---- helpers ------------------------------------------------------------------------------- */

/* A copy of a tree in which every number is a cJSON_Raw node holding its exact text
 * (the canonical form core/data.h gives records). */
static cJSON *raw_copy(const kp_json_doc *doc, const cJSON *node)
{
    if (cJSON_IsNumber(node)) {
        size_t len;
        const char *text = kp_json_number_text(doc, node, &len);
        char buf[512];
        snprintf(buf, sizeof buf, "%.*s", (int)len, text);
        return cJSON_CreateRaw(buf);
    }
    if (cJSON_IsArray(node) || cJSON_IsObject(node)) {
        cJSON *out = cJSON_IsArray(node) ? cJSON_CreateArray() : cJSON_CreateObject();
        for (const cJSON *c = node->child; c; c = c->next) {
            cJSON *copy = raw_copy(doc, c);
            if (cJSON_IsArray(node)) cJSON_AddItemToArray(out, copy);
            else cJSON_AddItemToObject(out, c->string, copy);
        }
        return out;
    }
    return cJSON_Duplicate(node, 1);
}

/* Canonical JSON from text: numbers exact (Raw). */
static cJSON *canon(const char *text)
{
    kp_json_doc *doc = NULL;
    kp_error err;
    if (kp_json_parse("test", text, strlen(text), &kp_json_model_limits, &doc, &err)) {
        fail_msg("bad JSON in the test: %s (%s)", text, err.message);
    }
    cJSON *out = raw_copy(doc, kp_json_root(doc));
    kp_json_free(doc);
    return out;
}

static char *print(const cJSON *v)
{
    char *s = cJSON_PrintUnformatted(v);
    assert_non_null(s);
    return s;
}

static void assert_json_equal(const cJSON *a, const cJSON *b)
{
    char *sa = print(a), *sb = print(b);
    if (strcmp(sa, sb)) fail_msg("JSON differs:\n  %s\n  %s", sa, sb);
    free(sa);
    free(sb);
}

static const kp_cql_type *type_of(kp_arena *arena, const char *text)
{
    const kp_cql_type *t;
    kp_error err;
    if (kp_cql_type_parse(text, arena, &t, &err)) fail_msg("type %s: %s", text, err.message);
    return t;
}

static void assert_bytes(const uint8_t *got, size_t got_len, const uint8_t *want, size_t want_len)
{
    if (got_len != want_len || memcmp(got, want, want_len)) {
        char g[1024] = "", w[1024] = "";
        for (size_t i = 0; i < got_len && i < 300; i++) snprintf(g + strlen(g), sizeof g - strlen(g), "%02x ", got[i]);
        for (size_t i = 0; i < want_len && i < 300; i++) snprintf(w + strlen(w), sizeof w - strlen(w), "%02x ", want[i]);
        fail_msg("bytes differ\n  got  (%zu) %s\n  want (%zu) %s", got_len, g, want_len, w);
    }
}

/* A whole value's [bytes] (length prefix included) for a canonical JSON text. */
static void encode_ok(const kp_cql_type *t, const char *json, kp_cql_buf *out)
{
    cJSON *v = canon(json);
    kp_error err;
    kp_cql_buf_reset(out);
    if (kp_cql_value_encode(t, v, out, &err)) fail_msg("encoding %s: %s", json, err.message);
    cJSON_Delete(v);
}

/* ---- hand-written frames --------------------------------------------------------------------- */

static void test_startup_options_and_query_frames_match_the_spec_layout(void **state)
{
    (void)state;
    kp_cql_buf b = {0};
    kp_error err;
    static const kp_cql_pair version[] = {{"CQL_VERSION", "3.0.0"}};
    kp_cql_request startup = {.opcode = KP_CQL_OP_STARTUP, .stream = 1, .options = version, .option_count = 1};
    assert_int_equal(kp_cql_request_encode(&startup, &b, &err), 0);
    static const uint8_t want_startup[] = {0x04, 0x00, 0x00, 0x01, 0x01, 0x00, 0x00, 0x00, 0x16, 0x00, 0x01,
                                           0x00, 0x0b, 'C', 'Q', 'L', '_', 'V', 'E', 'R', 'S', 'I', 'O', 'N',
                                           0x00, 0x05, '3', '.', '0', '.', '0'};
    assert_bytes(b.data, b.len, want_startup, sizeof want_startup);

    kp_cql_buf_reset(&b);
    assert_int_equal(kp_cql_encode_options(&b, 0, &err), 0);
    static const uint8_t want_options[] = {0x04, 0x00, 0x00, 0x00, 0x05, 0x00, 0x00, 0x00, 0x00};
    assert_bytes(b.data, b.len, want_options, sizeof want_options);

    kp_cql_buf_reset(&b);
    kp_cql_params one = {.consistency = KP_CQL_ONE};
    assert_int_equal(kp_cql_encode_query(&b, 5, "SELECT 1", &one, &err), 0);
    static const uint8_t want_query[] = {0x04, 0x00, 0x00, 0x05, 0x07, 0x00, 0x00, 0x00, 0x0f, 0x00, 0x00, 0x00,
                                         0x08, 'S',  'E',  'L',  'E',  'C',  'T',  ' ',  '1',  0x00, 0x01, 0x00};
    assert_bytes(b.data, b.len, want_query, sizeof want_query);

    /* QUERY with a value, page size and paging state: flags 0x01|0x04|0x08 */
    kp_cql_values values = {0};
    static const uint8_t four[] = {0, 0, 0, 42};
    assert_int_equal(kp_cql_values_add_bytes(&values, NULL, four, 4, &err), 0);
    static const uint8_t state_bytes[] = {0xAB, 0xCD};
    kp_cql_params paged = {.consistency = KP_CQL_QUORUM, .values = &values, .page_size = 100,
                           .paging_state = state_bytes, .paging_state_len = 2};
    kp_cql_buf_reset(&b);
    assert_int_equal(kp_cql_encode_query(&b, 0x1234, "Q", &paged, &err), 0);
    static const uint8_t want_paged[] = {0x04, 0x00, 0x12, 0x34, 0x07, 0x00, 0x00, 0x00, 0x1c,
                                         0x00, 0x00, 0x00, 0x01, 'Q',
                                         0x00, 0x04, 0x0d,
                                         0x00, 0x01, 0x00, 0x00, 0x00, 0x04, 0x00, 0x00, 0x00, 42,
                                         0x00, 0x00, 0x00, 0x64,
                                         0x00, 0x00, 0x00, 0x02, 0xAB, 0xCD};
    assert_bytes(b.data, b.len, want_paged, sizeof want_paged);

    /* AUTH_RESPONSE: SASL PLAIN "\0user\0pass" */
    kp_cql_buf_reset(&b);
    assert_int_equal(kp_cql_encode_auth_plain(&b, 0, "cassandra", "secret", &err), 0);
    static const uint8_t want_auth[] = {0x04, 0x00, 0x00, 0x00, 0x0f, 0x00, 0x00, 0x00, 0x15, 0x00, 0x00, 0x00, 0x11,
                                        0x00, 'c', 'a', 's', 's', 'a', 'n', 'd', 'r', 'a', 0x00, 's', 'e', 'c', 'r', 'e',
                                        't'};
    assert_bytes(b.data, b.len, want_auth, sizeof want_auth);
    kp_cql_values_free(&values);
    kp_cql_buf_free(&b);
}

static void test_ready_error_void_and_rows_frames_from_the_spec_layout_decode(void **state)
{
    (void)state;
    kp_cql_response r;
    kp_error err;
    static const uint8_t ready[] = {0x84, 0x00, 0x00, 0x00, 0x02, 0x00, 0x00, 0x00, 0x00};
    assert_int_equal(kp_cql_response_decode(ready, sizeof ready, NULL, 0, &r, &err), 0);
    assert_int_equal(r.header.opcode, KP_CQL_OP_READY);
    kp_cql_response_free(&r);

    static const uint8_t error[] = {0x84, 0x00, 0x00, 0x03, 0x00, 0x00, 0x00, 0x00, 0x0b, 0x00, 0x00,
                                    0x20, 0x00, 0x00, 0x05, 'o',  'o',  'p',  's',  '!'};
    assert_int_equal(kp_cql_response_decode(error, sizeof error, NULL, 0, &r, &err), 0);
    assert_int_equal(r.header.stream, 3);
    assert_int_equal(r.error.code, KP_CQL_ERR_SYNTAX);
    assert_string_equal(r.error.message, "oops!");
    assert_string_equal(kp_cql_error_name(r.error.code), "Syntax error");
    kp_cql_response_free(&r);

    static const uint8_t void_result[] = {0x84, 0x00, 0x00, 0x01, 0x08, 0x00, 0x00, 0x00, 0x04, 0x00, 0x00, 0x00, 0x01};
    assert_int_equal(kp_cql_response_decode(void_result, sizeof void_result, NULL, 0, &r, &err), 0);
    assert_int_equal(r.result_kind, KP_CQL_RESULT_VOID);
    kp_cql_response_free(&r);

    /* Rows: global table spec k.t, columns a int and b text, 2 rows, the second b null */
    static const uint8_t rows[] = {
        0x84, 0x00, 0x00, 0x02, 0x08, 0x00, 0x00, 0x00, 0x3a,
        0x00, 0x00, 0x00, 0x02,                          /* Rows */
        0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x02,  /* flags global, 2 columns */
        0x00, 0x01, 'k', 0x00, 0x01, 't',
        0x00, 0x01, 'a', 0x00, 0x09,
        0x00, 0x01, 'b', 0x00, 0x0d,
        0x00, 0x00, 0x00, 0x02,                          /* 2 rows */
        0x00, 0x00, 0x00, 0x04, 0x00, 0x00, 0x00, 0x2a, 0x00, 0x00, 0x00, 0x02, 'h', 'i',
        0x00, 0x00, 0x00, 0x04, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
    };
    assert_int_equal(kp_cql_response_decode(rows, sizeof rows, NULL, 0, &r, &err), 0);
    assert_int_equal(r.result_kind, KP_CQL_RESULT_ROWS);
    assert_int_equal(r.metadata.column_count, 2);
    assert_string_equal(r.metadata.columns[1].keyspace, "k");
    assert_string_equal(r.metadata.columns[1].table, "t");
    cJSON *want = canon("[{\"a\":42,\"b\":\"hi\"},{\"a\":-1,\"b\":null}]");
    assert_json_equal(r.rows, want);
    cJSON_Delete(want);
    kp_cql_response_free(&r);

    /* AUTHENTICATE names the authenticator */
    const char *name = "org.apache.cassandra.auth.PasswordAuthenticator";
    uint8_t auth[128] = {0x84, 0x00, 0x00, 0x00, 0x03, 0x00, 0x00, 0x00, (uint8_t)(strlen(name) + 2), 0x00,
                         (uint8_t)strlen(name)};
    memcpy(auth + 11, name, strlen(name));
    assert_int_equal(kp_cql_response_decode(auth, 11 + strlen(name), NULL, 0, &r, &err), 0);
    assert_string_equal(r.authenticator, name);
    kp_cql_response_free(&r);
}

/* ---- requests: encode -> decode -> encode ------------------------------------------------------- */

static void roundtrip_request(const kp_cql_request *rq, kp_cql_request *decoded, kp_arena *arena, kp_cql_buf *first)
{
    kp_error err;
    kp_cql_buf_reset(first);
    if (kp_cql_request_encode(rq, first, &err)) fail_msg("encode: %s", err.message);
    if (kp_cql_request_decode(first->data, first->len, arena, decoded, &err)) fail_msg("decode: %s", err.message);
    kp_cql_buf again = {0};
    if (kp_cql_request_encode(decoded, &again, &err)) fail_msg("re-encode: %s", err.message);
    assert_bytes(again.data, again.len, first->data, first->len);
    kp_cql_buf_free(&again);
    assert_int_equal(decoded->opcode, rq->opcode);
    assert_int_equal(decoded->stream, rq->stream);
}

static void test_every_request_kind_round_trips(void **state)
{
    (void)state;
    kp_arena arena = {0};
    kp_cql_buf b = {0};
    kp_cql_request d;
    kp_error err;

    static const kp_cql_pair options[] = {{"CQL_VERSION", "3.0.0"}, {"COMPRESSION", ""}};
    kp_cql_request startup = {.opcode = KP_CQL_OP_STARTUP, .stream = 7, .options = options, .option_count = 2};
    roundtrip_request(&startup, &d, &arena, &b);
    assert_int_equal(d.option_count, 2);
    assert_string_equal(d.options[0].key, "CQL_VERSION");
    assert_string_equal(d.options[0].value, "3.0.0");

    static const uint8_t token[] = {0, 'u', 0, 'p'};
    kp_cql_request auth = {.opcode = KP_CQL_OP_AUTH_RESPONSE, .stream = 0, .token = token, .token_len = 4};
    roundtrip_request(&auth, &d, &arena, &b);
    assert_int_equal(d.token_len, 4);
    assert_memory_equal(d.token, token, 4);
    kp_cql_request null_auth = {.opcode = KP_CQL_OP_AUTH_RESPONSE, .token_len = -1};
    roundtrip_request(&null_auth, &d, &arena, &b);
    assert_int_equal(d.token_len, -1);

    kp_cql_request opts = {.opcode = KP_CQL_OP_OPTIONS, .stream = 32767};
    roundtrip_request(&opts, &d, &arena, &b);

    /* QUERY with every parameter: named values (one null, one unset) */
    kp_cql_values named = {0};
    static const uint8_t v1[] = {1, 2, 3};
    assert_int_equal(kp_cql_values_add_bytes(&named, "a", v1, 3, &err), 0);
    assert_int_equal(kp_cql_values_add_bytes(&named, "b", NULL, -1, &err), 0);
    assert_int_equal(kp_cql_values_add_bytes(&named, "c", NULL, -2, &err), 0);
    assert_int_equal(kp_cql_values_add_bytes(&named, NULL, v1, 3, &err), -1);   /* all named or none */
    static const uint8_t paging[] = {9, 8, 7, 6, 5};
    kp_cql_request query = {.opcode = KP_CQL_OP_QUERY, .stream = 12, .cql = "SELECT * FROM t WHERE a = :a",
                            .params = {.consistency = KP_CQL_LOCAL_QUORUM, .values = &named, .skip_metadata = 1,
                                       .page_size = 5000, .paging_state = paging, .paging_state_len = 5,
                                       .serial_consistency = KP_CQL_LOCAL_SERIAL, .has_default_timestamp = 1,
                                       .default_timestamp = -1234567890123456LL}};
    roundtrip_request(&query, &d, &arena, &b);
    assert_string_equal(d.cql, query.cql);
    assert_int_equal(d.params.consistency, KP_CQL_LOCAL_QUORUM);
    assert_int_equal(d.params.values->count, 3);
    assert_true(d.params.values->has_names);
    assert_true(d.params.skip_metadata);
    assert_int_equal(d.params.page_size, 5000);
    assert_int_equal(d.params.paging_state_len, 5);
    assert_int_equal(d.params.serial_consistency, KP_CQL_LOCAL_SERIAL);
    assert_true(d.params.default_timestamp == -1234567890123456LL);
    /* the flags byte: 0x01 values | 0x02 skip | 0x04 page | 0x08 state | 0x10 serial | 0x20 ts | 0x40 names */
    size_t flags_at = KP_CQL_HEADER_SIZE + 4 + strlen(query.cql) + 2;
    assert_int_equal(b.data[flags_at], 0x7f);
    kp_cql_request_free_values(&d);

    kp_cql_request prepare = {.opcode = KP_CQL_OP_PREPARE, .stream = 1, .cql = "INSERT INTO t (a) VALUES (?)"};
    roundtrip_request(&prepare, &d, &arena, &b);
    assert_string_equal(d.cql, prepare.cql);

    kp_cql_values positional = {0};
    assert_int_equal(kp_cql_values_add_bytes(&positional, NULL, v1, 3, &err), 0);
    assert_int_equal(kp_cql_values_add_bytes(&positional, NULL, NULL, 0, &err), 0);   /* empty, not null */
    static const uint8_t id[] = {0xde, 0xad, 0xbe, 0xef};
    kp_cql_request execute = {.opcode = KP_CQL_OP_EXECUTE, .stream = 2, .prepared_id = id, .prepared_id_len = 4,
                              .params = {.consistency = KP_CQL_ONE, .values = &positional}};
    roundtrip_request(&execute, &d, &arena, &b);
    assert_int_equal(d.prepared_id_len, 4);
    assert_memory_equal(d.prepared_id, id, 4);
    assert_int_equal(d.params.values->count, 2);
    kp_cql_request_free_values(&d);

    for (int type = KP_CQL_BATCH_LOGGED; type <= KP_CQL_BATCH_COUNTER; type++) {
        kp_cql_batch_statement statements[] = {
            {.prepared_id = id, .prepared_id_len = 4, .values = &positional},
            {.cql = "UPDATE t SET b = 1 WHERE a = 2"},
        };
        kp_cql_request batch = {.opcode = KP_CQL_OP_BATCH, .stream = 3,
                                .batch = {.type = (uint8_t)type, .statements = statements, .count = 2,
                                          .consistency = KP_CQL_QUORUM, .serial_consistency = KP_CQL_SERIAL,
                                          .has_default_timestamp = type == KP_CQL_BATCH_UNLOGGED,
                                          .default_timestamp = 42}};
        roundtrip_request(&batch, &d, &arena, &b);
        assert_int_equal(d.batch.type, type);
        assert_int_equal(d.batch.count, 2);
        assert_int_equal(d.batch.statements[0].values->count, 2);
        assert_string_equal(d.batch.statements[1].cql, statements[1].cql);
        assert_int_equal(d.batch.consistency, KP_CQL_QUORUM);
        kp_cql_request_free_values(&d);
    }
    /* named values cannot go into a v4 batch */
    kp_cql_batch_statement bad_statement = {.cql = "x", .values = &named};
    kp_cql_request bad_batch = {.opcode = KP_CQL_OP_BATCH, .batch = {.statements = &bad_statement, .count = 1}};
    kp_cql_buf_reset(&b);
    assert_int_equal(kp_cql_request_encode(&bad_batch, &b, &err), -1);
    assert_int_equal(b.len, 0);

    static const char *events[] = {"SCHEMA_CHANGE", "STATUS_CHANGE"};
    kp_cql_request reg = {.opcode = KP_CQL_OP_REGISTER, .events = events, .event_count = 2};
    roundtrip_request(&reg, &d, &arena, &b);
    assert_int_equal(d.event_count, 2);
    assert_string_equal(d.events[1], "STATUS_CHANGE");

    kp_cql_values_free(&named);
    kp_cql_values_free(&positional);
    kp_cql_buf_free(&b);
    kp_arena_free(&arena);
}

/* ---- responses: encode -> decode -> encode ------------------------------------------------------- */

static void roundtrip_response(const kp_cql_response *r, const kp_cql_metadata *known, kp_cql_response *decoded,
                               kp_cql_buf *first)
{
    kp_error err;
    kp_cql_buf_reset(first);
    if (kp_cql_response_encode(r, known, first, &err)) fail_msg("encode: %s", err.message);
    if (kp_cql_response_decode(first->data, first->len, known, 0, decoded, &err)) fail_msg("decode: %s", err.message);
    kp_cql_buf again = {0};
    if (kp_cql_response_encode(decoded, known, &again, &err)) fail_msg("re-encode: %s", err.message);
    assert_bytes(again.data, again.len, first->data, first->len);
    kp_cql_buf_free(&again);
    assert_int_equal(decoded->header.opcode, r->header.opcode);
    assert_int_equal(decoded->header.stream, r->header.stream);
    assert_int_equal(decoded->header.flags, r->header.flags);
}

static kp_cql_response response_of(uint8_t opcode, int16_t stream)
{
    kp_cql_response r;
    memset(&r, 0, sizeof r);
    r.header.opcode = opcode;
    r.header.stream = stream;
    r.token_len = -1;
    return r;
}

static void test_every_error_kind_round_trips_with_its_extra_fields(void **state)
{
    (void)state;
    kp_cql_buf b = {0};
    kp_cql_response d;
    static const char *args[] = {"int", "text"};
    static const uint8_t id[] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16};
    const kp_cql_error_info errors[] = {
        {.code = KP_CQL_ERR_SERVER, .message = "boom"},
        {.code = KP_CQL_ERR_PROTOCOL, .message = "Invalid or unsupported protocol version (5)"},
        {.code = KP_CQL_ERR_BAD_CREDENTIALS, .message = "Provided username x and/or password are incorrect"},
        {.code = KP_CQL_ERR_UNAVAILABLE, .message = "Cannot achieve consistency level QUORUM", .consistency = 4,
         .required = 2, .alive = 1},
        {.code = KP_CQL_ERR_OVERLOADED, .message = "overloaded"},
        {.code = KP_CQL_ERR_IS_BOOTSTRAPPING, .message = "bootstrapping"},
        {.code = KP_CQL_ERR_TRUNCATE, .message = "truncate"},
        {.code = KP_CQL_ERR_WRITE_TIMEOUT, .message = "Operation timed out", .consistency = 6, .received = 0,
         .block_for = 1, .write_type = "SIMPLE"},
        {.code = KP_CQL_ERR_READ_TIMEOUT, .message = "Operation timed out", .consistency = 1, .received = 0,
         .block_for = 1, .data_present = 1},
        {.code = KP_CQL_ERR_READ_FAILURE, .message = "tombstones", .consistency = 1, .received = 0, .block_for = 1,
         .failures = 1, .data_present = 0},
        {.code = KP_CQL_ERR_FUNCTION_FAILURE, .message = "fn", .keyspace = "ks", .table = "f", .arg_types = args,
         .arg_type_count = 2},
        {.code = KP_CQL_ERR_WRITE_FAILURE, .message = "write failed", .consistency = 6, .received = 1, .block_for = 2,
         .failures = 1, .write_type = "BATCH"},
        {.code = KP_CQL_ERR_SYNTAX, .message = "line 1:0 no viable alternative at input 'SELEC'"},
        {.code = KP_CQL_ERR_UNAUTHORIZED, .message = "no permission"},
        {.code = KP_CQL_ERR_INVALID, .message = "unconfigured table t"},
        {.code = KP_CQL_ERR_CONFIG, .message = "config"},
        {.code = KP_CQL_ERR_ALREADY_EXISTS, .message = "Cannot add existing keyspace \"k\"", .keyspace = "k",
         .table = ""},
        {.code = KP_CQL_ERR_UNPREPARED, .message = "Prepared query with ID ... not found", .unprepared_id = id,
         .unprepared_id_len = 16},
        {.code = 0x7777, .message = "a code from the future"},
    };
    for (size_t i = 0; i < sizeof errors / sizeof errors[0]; i++) {
        kp_cql_response r = response_of(KP_CQL_OP_ERROR, (int16_t)i);
        r.error = errors[i];
        roundtrip_response(&r, NULL, &d, &b);
        const kp_cql_error_info *e = &d.error;
        assert_int_equal(e->code, errors[i].code);
        assert_string_equal(e->message, errors[i].message);
        assert_int_equal(e->consistency, errors[i].consistency);
        assert_int_equal(e->required, errors[i].required);
        assert_int_equal(e->alive, errors[i].alive);
        assert_int_equal(e->received, errors[i].received);
        assert_int_equal(e->block_for, errors[i].block_for);
        assert_int_equal(e->failures, errors[i].failures);
        assert_int_equal(e->data_present, errors[i].data_present);
        if (errors[i].write_type) assert_string_equal(e->write_type, errors[i].write_type);
        if (errors[i].keyspace) assert_string_equal(e->keyspace, errors[i].keyspace);
        assert_int_equal(e->unprepared_id_len, errors[i].unprepared_id_len);
        assert_int_equal(e->arg_type_count, errors[i].arg_type_count);
        kp_cql_response_free(&d);
    }
    kp_cql_buf_free(&b);
}

static void test_every_other_response_kind_round_trips(void **state)
{
    (void)state;
    kp_cql_buf b = {0};
    kp_cql_response d;
    kp_arena arena = {0};

    kp_cql_response ready = response_of(KP_CQL_OP_READY, 0);
    roundtrip_response(&ready, NULL, &d, &b);
    kp_cql_response_free(&d);

    kp_cql_response auth = response_of(KP_CQL_OP_AUTHENTICATE, 0);
    auth.authenticator = "org.apache.cassandra.auth.PasswordAuthenticator";
    roundtrip_response(&auth, NULL, &d, &b);
    assert_string_equal(d.authenticator, auth.authenticator);
    kp_cql_response_free(&d);

    static const uint8_t token[] = {1, 2, 3};
    for (int op = KP_CQL_OP_AUTH_CHALLENGE; op <= KP_CQL_OP_AUTH_SUCCESS; op += 2) {
        kp_cql_response t = response_of((uint8_t)op, 0);
        roundtrip_response(&t, NULL, &d, &b);   /* a null token */
        assert_int_equal(d.token_len, -1);
        kp_cql_response_free(&d);
        t.token = token;
        t.token_len = 3;
        roundtrip_response(&t, NULL, &d, &b);
        assert_int_equal(d.token_len, 3);
        assert_memory_equal(d.token, token, 3);
        kp_cql_response_free(&d);
    }

    static const char *versions[] = {"3/v3", "4/v4", "5/v5"};
    static const char *cql[] = {"3.4.7"};
    kp_cql_multimap_entry supported[] = {{"PROTOCOL_VERSIONS", versions, 3}, {"CQL_VERSION", cql, 1},
                                         {"COMPRESSION", NULL, 0}};
    kp_cql_response sup = response_of(KP_CQL_OP_SUPPORTED, 0);
    sup.supported = supported;
    sup.supported_count = 3;
    roundtrip_response(&sup, NULL, &d, &b);
    assert_int_equal(d.supported_count, 3);
    assert_string_equal(d.supported[0].values[2], "5/v5");
    kp_cql_response_free(&d);

    kp_cql_response v = response_of(KP_CQL_OP_RESULT, 1);
    v.result_kind = KP_CQL_RESULT_VOID;
    roundtrip_response(&v, NULL, &d, &b);
    kp_cql_response_free(&d);

    /* warnings and tracing go before the body */
    static const char *warnings[] = {"Batch for [k.t] is of size 6.2KiB, exceeding specified threshold of 5.0KiB"};
    static const uint8_t tracing[16] = {0xaa, 0xbb};
    v.header.flags = KP_CQL_FLAG_WARNING | KP_CQL_FLAG_TRACING;
    v.warnings = warnings;
    v.warning_count = 1;
    v.tracing_id = tracing;
    roundtrip_response(&v, NULL, &d, &b);
    assert_int_equal(d.warning_count, 1);
    assert_string_equal(d.warnings[0], warnings[0]);
    assert_memory_equal(d.tracing_id, tracing, 16);
    kp_cql_response_free(&d);

    kp_cql_response ks = response_of(KP_CQL_OP_RESULT, 1);
    ks.result_kind = KP_CQL_RESULT_SET_KEYSPACE;
    ks.keyspace = "keyplan_test";
    roundtrip_response(&ks, NULL, &d, &b);
    assert_string_equal(d.keyspace, "keyplan_test");
    kp_cql_response_free(&d);

    /* Rows, per-column table specs, a paging state */
    kp_cql_column columns[] = {
        {"k", "t", "id", type_of(&arena, "uuid")},
        {"k", "t", "tags", type_of(&arena, "set<text>")},
        {"k", "u", "scores", type_of(&arena, "map<text, frozen<list<decimal>>>")},
    };
    static const uint8_t paging[] = {0x00, 0x10, 0x20};
    kp_cql_response rows = response_of(KP_CQL_OP_RESULT, 99);
    rows.result_kind = KP_CQL_RESULT_ROWS;
    rows.metadata = (kp_cql_metadata){.flags = KP_CQL_MD_HAS_MORE_PAGES, .column_count = 3, .columns = columns,
                                      .paging_state = paging, .paging_state_len = 3};
    rows.rows = canon("[{\"id\":\"7f1c0b7e-2a4d-4c1e-9b3f-5d6e7f809a1b\",\"tags\":[\"a\",\"b\"],"
                      "\"scores\":{\"x\":[1.50,-2]}},{\"id\":null,\"tags\":null,\"scores\":{}}]");
    roundtrip_response(&rows, NULL, &d, &b);
    assert_json_equal(d.rows, rows.rows);
    assert_int_equal(d.row_count, 2);
    assert_int_equal(d.metadata.paging_state_len, 3);
    assert_string_equal(d.metadata.columns[2].table, "u");
    kp_cql_response_free(&d);

    /* Rows without metadata: the prepared statement's columns are used */
    kp_cql_metadata known = {.flags = KP_CQL_MD_GLOBAL_TABLES_SPEC, .column_count = 3, .columns = columns};
    rows.metadata = (kp_cql_metadata){.flags = KP_CQL_MD_NO_METADATA, .column_count = 3};
    roundtrip_response(&rows, &known, &d, &b);
    assert_json_equal(d.rows, rows.rows);
    kp_cql_response_free(&d);
    {
        kp_error err;
        /* ... and without them such rows are an error, not a guess */
        assert_int_equal(kp_cql_response_decode(b.data, b.len, NULL, 0, &d, &err), -1);
        assert_non_null(strstr(err.message, "column metadata"));
    }
    cJSON_Delete(rows.rows);

    /* Prepared: id, bind metadata with partition key indexes, result metadata */
    static const uint8_t id[] = {0x11, 0x22, 0x33};
    uint16_t pk[] = {0, 2};
    kp_cql_column same_table[] = {
        {"k", "t", "a", type_of(&arena, "int")},
        {"k", "t", "b", type_of(&arena, "text")},
        {"k", "t", "c", type_of(&arena, "tuple<int, text, boolean>")},
    };
    kp_cql_response prep = response_of(KP_CQL_OP_RESULT, 4);
    prep.result_kind = KP_CQL_RESULT_PREPARED;
    prep.prepared_id = id;
    prep.prepared_id_len = 3;
    prep.metadata = (kp_cql_metadata){.flags = KP_CQL_MD_GLOBAL_TABLES_SPEC, .column_count = 3,
                                      .columns = same_table, .pk_indexes = pk, .pk_count = 2};
    prep.result_metadata = (kp_cql_metadata){.flags = KP_CQL_MD_GLOBAL_TABLES_SPEC, .column_count = 1,
                                             .columns = same_table};
    roundtrip_response(&prep, NULL, &d, &b);
    assert_int_equal(d.prepared_id_len, 3);
    assert_int_equal(d.metadata.pk_count, 2);
    assert_int_equal(d.metadata.pk_indexes[1], 2);
    assert_int_equal(d.metadata.columns[2].type->element_count, 3);
    assert_int_equal(d.result_metadata.column_count, 1);
    kp_cql_response_free(&d);
    prep.result_metadata = (kp_cql_metadata){.flags = KP_CQL_MD_NO_METADATA, .column_count = 0};
    roundtrip_response(&prep, NULL, &d, &b);
    kp_cql_response_free(&d);

    static const char *args[] = {"int"};
    const kp_cql_schema_change changes[] = {
        {"CREATED", "KEYSPACE", "k", NULL, NULL, 0},
        {"UPDATED", "TABLE", "k", "t", NULL, 0},
        {"DROPPED", "TYPE", "k", "address", NULL, 0},
        {"CREATED", "FUNCTION", "k", "f", args, 1},
        {"CREATED", "AGGREGATE", "k", "g", args, 1},
    };
    for (size_t i = 0; i < sizeof changes / sizeof changes[0]; i++) {
        kp_cql_response sc = response_of(KP_CQL_OP_RESULT, 5);
        sc.result_kind = KP_CQL_RESULT_SCHEMA_CHANGE;
        sc.schema_change = changes[i];
        roundtrip_response(&sc, NULL, &d, &b);
        assert_string_equal(d.schema_change.target, changes[i].target);
        assert_int_equal(d.schema_change.arg_type_count, changes[i].arg_type_count);
        kp_cql_response_free(&d);
        kp_cql_response ev = response_of(KP_CQL_OP_EVENT, -1);
        ev.event_type = "SCHEMA_CHANGE";
        ev.schema_change = changes[i];
        roundtrip_response(&ev, NULL, &d, &b);
        kp_cql_response_free(&d);
    }
    kp_cql_response status = response_of(KP_CQL_OP_EVENT, -1);
    status.event_type = "STATUS_CHANGE";
    status.event_change = "UP";
    snprintf(status.event_address, sizeof status.event_address, "127.0.0.1:19042");
    roundtrip_response(&status, NULL, &d, &b);
    assert_string_equal(d.event_address, "127.0.0.1:19042");
    kp_cql_response_free(&d);
    status.event_type = "TOPOLOGY_CHANGE";
    status.event_change = "NEW_NODE";
    snprintf(status.event_address, sizeof status.event_address, "[2001:db8::1]:9042");
    roundtrip_response(&status, NULL, &d, &b);
    assert_string_equal(d.event_address, "[2001:db8::1]:9042");
    kp_cql_response_free(&d);

    kp_cql_buf_free(&b);
    kp_arena_free(&arena);
}

/* ---- every type ---------------------------------------------------------------------------------------- */

static const kp_cql_type *address_udt(kp_arena *arena)
{
    static const char *fields[] = {"street", "zip", "tags"};
    kp_cql_type *t = kp_arena_alloc(arena, sizeof *t);
    const kp_cql_type **elements = kp_arena_alloc(arena, 3 * sizeof *elements);
    elements[0] = type_of(arena, "text");
    elements[1] = type_of(arena, "int");
    elements[2] = type_of(arena, "frozen<list<text>>");
    t->code = KP_CQL_T_UDT;
    t->keyspace = "k";
    t->name = "address";
    t->field_names = fields;
    t->elements = elements;
    t->element_count = 3;
    return t;
}

typedef struct value_case {
    const char *type;
    const char *json;
} value_case;

static const value_case round_trip_cases[] = {
    {"ascii", "\"hello\""}, {"ascii", "\"\""},
    {"text", "\"h\\u00e9llo \\u2713 \\ud83d\\ude00\""}, {"varchar", "\"\""},
    {"bigint", "0"}, {"bigint", "-1"}, {"bigint", "9223372036854775807"}, {"bigint", "-9223372036854775808"},
    {"counter", "42"}, {"counter", "-7"},
    {"blob", "\"\""}, {"blob", "\"AAEC/w==\""}, {"blob", "\"AQ==\""}, {"blob", "\"AQI=\""},
    {"boolean", "true"}, {"boolean", "false"},
    {"decimal", "0"}, {"decimal", "0.00"}, {"decimal", "-12.50"}, {"decimal", "1000"}, {"decimal", "0.000001"},
    {"decimal", "-0.5"}, {"decimal", "123456789012345678901234567890.123456789"},
    {"decimal", "-99999999999999999999999999999999999999.9999999999"},
    {"double", "0"}, {"double", "0.1"}, {"double", "-2.5e-300"}, {"double", "1e+300"}, {"double", "\"NaN\""},
    {"double", "\"Infinity\""}, {"double", "\"-Infinity\""}, {"double", "1.7976931348623157e+308"},
    {"double", "123456789.125"},
    {"float", "0.1"}, {"float", "3.4028235e+38"}, {"float", "-1.5"}, {"float", "\"NaN\""},
    {"int", "-2147483648"}, {"int", "2147483647"}, {"int", "0"},
    {"smallint", "-32768"}, {"smallint", "32767"}, {"tinyint", "-128"}, {"tinyint", "127"},
    {"timestamp", "\"1970-01-01T00:00:00.000Z\""}, {"timestamp", "\"1969-12-31T23:59:59.999Z\""},
    {"timestamp", "\"2026-04-01T09:30:00.123Z\""}, {"timestamp", "\"0000-01-01T00:00:00.000Z\""},
    {"timestamp", "\"9999-12-31T23:59:59.999Z\""}, {"timestamp", "\"1900-02-28T12:00:00.001Z\""},
    {"timestamp", "253402300800000"}, {"timestamp", "-62167219200001"}, {"timestamp", "9223372036854775807"},
    {"timestamp", "-9223372036854775808"},
    {"date", "\"1970-01-01\""}, {"date", "\"1969-12-31\""}, {"date", "\"2026-04-01\""}, {"date", "\"2000-02-29\""},
    {"date", "\"0000-01-01\""}, {"date", "\"9999-12-31\""}, {"date", "2932897"}, {"date", "-719529"},
    {"date", "-2147483648"}, {"date", "2147483647"},
    {"time", "\"00:00:00.000000000\""}, {"time", "\"23:59:59.999999999\""}, {"time", "\"09:30:00.123456789\""},
    {"uuid", "\"7f1c0b7e-2a4d-4c1e-9b3f-5d6e7f809a1b\""}, {"uuid", "\"00000000-0000-0000-0000-000000000000\""},
    {"timeuuid", "\"5c1e7a90-1d2b-11ef-8c3a-0242ac120002\""},
    {"varint", "0"}, {"varint", "-1"}, {"varint", "127"}, {"varint", "128"}, {"varint", "-128"}, {"varint", "-129"},
    {"varint", "255"}, {"varint", "256"}, {"varint", "-256"}, {"varint", "-257"}, {"varint", "4294967296"},
    {"varint", "-9223372036854775809"}, {"varint", "123456789012345678901234567890"},
    {"varint", "-123456789012345678901234567890"},
    {"inet", "\"192.0.2.1\""}, {"inet", "\"2001:db8::1\""}, {"inet", "\"::1\""},
    {"list<int>", "[1,2,3]"}, {"list<int>", "[]"}, {"list<text>", "[\"a\",\"a\"]"},
    {"set<text>", "[\"a\",\"b\"]"}, {"set<uuid>", "[\"7f1c0b7e-2a4d-4c1e-9b3f-5d6e7f809a1b\"]"},
    {"map<text, int>", "{\"a\":1,\"b\":2}"}, {"map<int, text>", "{\"-1\":\"x\",\"2\":\"y\"}"},
    {"map<timestamp, boolean>", "{\"2026-04-01T09:30:00.000Z\":true}"}, {"map<date, bigint>", "{\"1969-12-31\":1}"},
    {"map<boolean, double>", "{\"false\":0.5,\"true\":\"NaN\"}"}, {"map<decimal, varint>", "{\"1.50\":-12345}"},
    {"map<text, frozen<list<int>>>", "{\"x\":[1],\"y\":[]}"},
    {"tuple<int, text, boolean>", "[1,\"a\",null]"}, {"tuple<int, text, boolean>", "[null,null,null]"},
    {"list<frozen<map<text, tuple<int, decimal>>>>", "[{\"k\":[1,2.5]},{}]"},
    {"frozen<set<frozen<tuple<date, time>>>>", "[[\"2026-04-01\",\"09:30:00.000000000\"]]"},
    {"'org.apache.cassandra.db.marshal.DurationType'", "\"AgQG\""},
};

static void test_every_type_round_trips_through_its_wire_form(void **state)
{
    (void)state;
    kp_arena arena = {0};
    kp_cql_buf b = {0};
    kp_error err;
    for (size_t i = 0; i < sizeof round_trip_cases / sizeof round_trip_cases[0]; i++) {
        const value_case *c = &round_trip_cases[i];
        const kp_cql_type *t = type_of(&arena, c->type);
        encode_ok(t, c->json, &b);
        assert_true(b.len >= 4);
        int32_t len = (int32_t)((uint32_t)b.data[0] << 24 | (uint32_t)b.data[1] << 16 | (uint32_t)b.data[2] << 8 |
                                b.data[3]);
        assert_int_equal((size_t)len, b.len - 4);
        cJSON *back = kp_cql_value_decode(t, b.data + 4, len, &err);
        if (!back) fail_msg("%s %s: %s", c->type, c->json, err.message);
        cJSON *want = canon(c->json);
        assert_json_equal(back, want);
        cJSON_Delete(want);
        /* and the decoded value encodes to the same bytes */
        kp_cql_buf again = {0};
        assert_int_equal(kp_cql_value_encode(t, back, &again, &err), 0);
        assert_bytes(again.data, again.len, b.data, b.len);
        kp_cql_buf_free(&again);
        cJSON_Delete(back);
    }
    /* a UDT, with a null field and a missing one (sent as null) */
    const kp_cql_type *udt = address_udt(&arena);
    encode_ok(udt, "{\"street\":\"Main\",\"zip\":12345,\"tags\":[\"a\"]}", &b);
    cJSON *back = kp_cql_value_decode(udt, b.data + 4, (int32_t)b.len - 4, &err);
    cJSON *want = canon("{\"street\":\"Main\",\"zip\":12345,\"tags\":[\"a\"]}");
    assert_json_equal(back, want);
    cJSON_Delete(back);
    cJSON_Delete(want);
    encode_ok(udt, "{\"zip\":null,\"street\":\"x\"}", &b);
    back = kp_cql_value_decode(udt, b.data + 4, (int32_t)b.len - 4, &err);
    want = canon("{\"street\":\"x\",\"zip\":null,\"tags\":null}");
    assert_json_equal(back, want);
    cJSON_Delete(back);
    cJSON_Delete(want);
    /* a UDT value written before fields were added: the missing tail is null */
    static const uint8_t short_udt[] = {0, 0, 0, 1, 'x'};
    back = kp_cql_value_decode(udt, short_udt, sizeof short_udt, &err);
    want = canon("{\"street\":\"x\",\"zip\":null,\"tags\":null}");
    assert_json_equal(back, want);
    cJSON_Delete(back);
    cJSON_Delete(want);
    /* a null value is -1; a decoded null is JSON null */
    kp_cql_buf_reset(&b);
    assert_int_equal(kp_cql_value_encode(type_of(&arena, "int"), NULL, &b, &err), 0);
    static const uint8_t minus_one[] = {0xff, 0xff, 0xff, 0xff};
    assert_bytes(b.data, b.len, minus_one, 4);
    back = kp_cql_value_decode(type_of(&arena, "int"), NULL, -1, &err);
    assert_true(cJSON_IsNull(back));
    cJSON_Delete(back);
    /* Cassandra's "empty" value of a fixed-width type reads as null */
    back = kp_cql_value_decode(type_of(&arena, "bigint"), (const uint8_t *)"", 0, &err);
    assert_true(cJSON_IsNull(back));
    cJSON_Delete(back);
    /* a map given as [[key, value], ...] */
    encode_ok(type_of(&arena, "map<int, text>"), "[[1,\"a\"],[2,\"b\"]]", &b);
    back = kp_cql_value_decode(type_of(&arena, "map<int, text>"), b.data + 4, (int32_t)b.len - 4, &err);
    want = canon("{\"1\":\"a\",\"2\":\"b\"}");
    assert_json_equal(back, want);
    cJSON_Delete(back);
    cJSON_Delete(want);
    kp_cql_buf_free(&b);
    kp_arena_free(&arena);
}

static void test_numbers_and_times_have_the_exact_wire_bytes(void **state)
{
    (void)state;
    kp_arena arena = {0};
    kp_cql_buf b = {0};
    struct {
        const char *type, *json;
        uint8_t bytes[16];
        size_t len;
    } cases[] = {
        {"varint", "0", {0x00}, 1},
        {"varint", "127", {0x7f}, 1},
        {"varint", "128", {0x00, 0x80}, 2},
        {"varint", "-1", {0xff}, 1},
        {"varint", "-128", {0x80}, 1},
        {"varint", "-129", {0xff, 0x7f}, 2},
        {"varint", "256", {0x01, 0x00}, 2},
        {"varint", "-32768", {0x80, 0x00}, 2},
        {"varint", "65535", {0x00, 0xff, 0xff}, 3},
        {"decimal", "-12.50", {0, 0, 0, 2, 0xfb, 0x1e}, 6},
        {"decimal", "0.00", {0, 0, 0, 2, 0x00}, 5},
        {"decimal", "1.5e3", {0xff, 0xff, 0xff, 0xfe, 0x0f}, 5},
        {"decimal", "1E-3", {0, 0, 0, 3, 0x01}, 5},
        {"date", "\"1970-01-01\"", {0x80, 0, 0, 0}, 4},
        {"date", "\"1969-12-31\"", {0x7f, 0xff, 0xff, 0xff}, 4},
        {"date", "\"1970-01-02\"", {0x80, 0, 0, 1}, 4},
        {"timestamp", "\"1970-01-01T00:00:00.000Z\"", {0, 0, 0, 0, 0, 0, 0, 0}, 8},
        {"timestamp", "\"1969-12-31T23:59:59.999Z\"", {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}, 8},
        {"timestamp", "1000", {0, 0, 0, 0, 0, 0, 0x03, 0xe8}, 8},
        {"time", "\"00:00:01\"", {0, 0, 0, 0, 0x3b, 0x9a, 0xca, 0x00}, 8},
        {"time", "\"00:00:00.5\"", {0, 0, 0, 0, 0x1d, 0xcd, 0x65, 0x00}, 8},
        {"int", "-2", {0xff, 0xff, 0xff, 0xfe}, 4},
        {"smallint", "258", {0x01, 0x02}, 2},
        {"boolean", "true", {0x01}, 1},
        {"double", "1", {0x3f, 0xf0, 0, 0, 0, 0, 0, 0}, 8},
        {"float", "1", {0x3f, 0x80, 0, 0}, 4},
        {"inet", "\"127.0.0.1\"", {127, 0, 0, 1}, 4},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        encode_ok(type_of(&arena, cases[i].type), cases[i].json, &b);
        assert_bytes(b.data + 4, b.len - 4, cases[i].bytes, cases[i].len);
    }
    /* decimals read back in their exact text, scale kept */
    kp_error err;
    static const uint8_t scaled[] = {0, 0, 0, 5, 0x30, 0x39};   /* 12345 * 10^-5 */
    char *text = kp_cql_decimal_to_text(scaled, sizeof scaled, &err);
    assert_string_equal(text, "0.12345");
    free(text);
    static const uint8_t negative_scale[] = {0xff, 0xff, 0xff, 0xfd, 0xf9};   /* -7 * 10^3 */
    text = kp_cql_decimal_to_text(negative_scale, sizeof negative_scale, &err);
    assert_string_equal(text, "-7000");
    free(text);
    static const uint8_t tiny[] = {0, 0, 0, 9, 0x01};
    text = kp_cql_decimal_to_text(tiny, sizeof tiny, &err);
    assert_string_equal(text, "0.000000001");
    free(text);
    static const uint8_t huge_scale[] = {0x80, 0, 0, 0, 0x01};   /* 10^(2^31): refused, not allocated */
    assert_null(kp_cql_decimal_to_text(huge_scale, sizeof huge_scale, &err));
    assert_int_equal(err.code, KP_ERR_TARGET);
    static const uint8_t long_scale[] = {0, 0, 0x01, 0x92, 0x01};   /* 1e-402: 401 zeros after "0." */
    assert_null(kp_cql_decimal_to_text(long_scale, sizeof long_scale, &err));
    static const uint8_t ok_scale[] = {0, 0, 0x01, 0x91, 0x01};     /* 1e-401: 400 zeros */
    text = kp_cql_decimal_to_text(ok_scale, sizeof ok_scale, &err);
    assert_non_null(text);
    assert_int_equal(strlen(text), 403);
    free(text);
    /* a long varint both ways */
    char digits[3001];
    memset(digits, '9', 3000);
    digits[3000] = '\0';
    kp_cql_buf_reset(&b);
    assert_int_equal(kp_cql_varint_from_text(digits, 3000, &b, &err), 0);
    text = kp_cql_varint_to_text(b.data, b.len, &err);
    assert_string_equal(text, digits);
    free(text);
    /* the most negative value of n bytes has no positive twin */
    static const uint8_t min128[] = {0x80, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0};
    text = kp_cql_varint_to_text(min128, 16, &err);
    assert_string_equal(text, "-170141183460469231731687303715884105728");
    free(text);
    /* a non-minimal encoding still reads right */
    static const uint8_t padded[] = {0x00, 0x00, 0x01};
    text = kp_cql_varint_to_text(padded, 3, &err);
    assert_string_equal(text, "1");
    free(text);
    kp_cql_buf_free(&b);
    kp_arena_free(&arena);
}

static void test_values_that_do_not_fit_their_type_are_data_errors(void **state)
{
    (void)state;
    kp_arena arena = {0};
    kp_cql_buf b = {0};
    kp_error err;
    const value_case bad[] = {
        {"int", "2147483648"}, {"int", "1.5"}, {"int", "\"1\""}, {"tinyint", "128"}, {"smallint", "-32769"},
        {"bigint", "9223372036854775808"}, {"varint", "1.0"}, {"decimal", "\"abc\""}, {"decimal", "true"},
        {"text", "1"}, {"ascii", "\"\\u00e9\""}, {"boolean", "1"}, {"blob", "\"abc\""}, {"blob", "\"A===\""},
        {"uuid", "\"not-a-uuid\""}, {"timeuuid", "\"7f1c0b7e-2a4d-4c1e-9b3f-5d6e7f809a1b\""},
        {"timestamp", "\"2026-04-01T09:30:00Z\""}, {"date", "\"2026-02-30\""}, {"date", "2147483648"},
        {"time", "\"24:00:00\""}, {"time", "86400000000000"}, {"time", "\"09:30:00.\""}, {"inet", "\"1.2.3\""},
        {"double", "\"1.5\""}, {"float", "{}"}, {"list<int>", "[1,null]"}, {"list<int>", "{}"},
        {"set<int>", "[\"a\"]"}, {"map<int, text>", "{\"x\":\"y\"}"}, {"map<text, int>", "[[\"a\"]]"},
        {"tuple<int, int>", "[1,2,3]"}, {"tuple<int>", "{}"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        cJSON *v = canon(bad[i].json);
        kp_cql_buf_reset(&b);
        if (kp_cql_value_encode(type_of(&arena, bad[i].type), v, &b, &err) != -1)
            fail_msg("%s %s was accepted", bad[i].type, bad[i].json);
        assert_int_equal(err.code, KP_ERR_DATA);
        assert_non_null(strstr(err.message, "expected"));
        assert_int_equal(b.len, 0);   /* nothing half-written */
        cJSON_Delete(v);
    }
    cJSON *v = canon("{\"street\":\"x\",\"country\":\"y\"}");
    assert_int_equal(kp_cql_value_encode(address_udt(&arena), v, &b, &err), -1);
    assert_non_null(strstr(err.message, "no field \"country\""));
    cJSON_Delete(v);
    v = canon("2147483648");
    assert_int_equal(kp_cql_value_encode(type_of(&arena, "int"), v, &b, &err), -1);
    assert_string_equal(err.message, "expected a 32-bit integer for CQL type int, got 2147483648");
    cJSON_Delete(v);
    kp_cql_buf_free(&b);
    kp_arena_free(&arena);
}

static void test_malformed_values_are_target_errors(void **state)
{
    (void)state;
    kp_arena arena = {0};
    kp_error err;
    struct {
        const char *type;
        const uint8_t *bytes;
        int32_t len;
        const char *says;
    } bad[] = {
        {"int", (const uint8_t *)"\x00\x00\x01", 3, "3 bytes, expected 4"},
        {"uuid", (const uint8_t *)"0123456789abcde", 15, "expected 16"},
        {"text", (const uint8_t *)"\xc3\x28", 2, "UTF-8"},
        {"text", (const uint8_t *)"a\0b", 3, "NUL"},
        {"ascii", (const uint8_t *)"\x80", 1, "not ASCII"},
        {"list<int>", (const uint8_t *)"\x7f\xff\xff\xff", 4, "elements announced"},
        {"list<int>", (const uint8_t *)"\x00\x00\x00\x01\x00\x00\x00\x08\x00", 9, "needs 8 bytes"},
        {"list<int>", (const uint8_t *)"\x00\x00\x00\x00\x01", 5, "left after"},
        {"map<int, int>", (const uint8_t *)"\x00\x00\x00\x01\x00\x00\x00\x04\x00\x00\x00\x01", 12, "map value"},
        {"time", (const uint8_t *)"\x7f\xff\xff\xff\xff\xff\xff\xff", 8, "not a time of day"},
        {"time", (const uint8_t *)"\xff\xff\xff\xff\xff\xff\xff\xff", 8, "not a time of day"},
        {"inet", (const uint8_t *)"\x01\x02\x03\x04\x05", 5, "5 bytes"},
        {"decimal", (const uint8_t *)"\x00\x00\x01", 3, "at least 5"},
        {"tuple<int>", (const uint8_t *)"\x00\x00\x00\x09\x00", 5, "needs 9 bytes"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        /* an exact-size copy, so ASan sees any read past it */
        uint8_t *copy = malloc((size_t)bad[i].len);
        memcpy(copy, bad[i].bytes, (size_t)bad[i].len);
        cJSON *v = kp_cql_value_decode(type_of(&arena, bad[i].type), copy, bad[i].len, &err);
        if (v) fail_msg("case %zu (%s) decoded", i, bad[i].type);
        assert_int_equal(err.code, KP_ERR_TARGET);
        if (!strstr(err.message, bad[i].says)) fail_msg("case %zu: \"%s\" lacks \"%s\"", i, err.message, bad[i].says);
        free(copy);
    }
    kp_arena_free(&arena);
}

/* ---- types and bound values ------------------------------------------------------------------------------ */

static void test_type_text_parses_and_prints_back(void **state)
{
    (void)state;
    kp_arena arena = {0};
    kp_error err;
    char text[256];
    const char *ok[][2] = {
        {"int", "int"}, {"TEXT", "text"}, {"varchar", "text"}, {" map < text , frozen<list<int>> > ", "map<text, list<int>>"},
        {"tuple<int, text, boolean>", "tuple<int, text, boolean>"}, {"set<frozen<tuple<date, time>>>", "set<tuple<date, time>>"},
        {"'org.apache.cassandra.db.marshal.DurationType'", "'org.apache.cassandra.db.marshal.DurationType'"},
    };
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++)
        assert_string_equal(kp_cql_type_text(type_of(&arena, ok[i][0]), text, sizeof text), ok[i][1]);
    const char *bad[] = {"", "integer", "map<int>", "list<int, int>", "list<int", "frozen<int, int>", "address",
                         "int int", "'unterminated"};
    const kp_cql_type *t;
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        assert_int_equal(kp_cql_type_parse(bad[i], &arena, &t, &err), -1);
        assert_int_equal(err.code, KP_ERR_USAGE);
    }
    char deep[400] = "";
    for (int i = 0; i < 40; i++) strcat(deep, "list<");
    strcat(deep, "int");
    for (int i = 0; i < 40; i++) strcat(deep, ">");
    assert_int_equal(kp_cql_type_parse(deep, &arena, &t, &err), -1);
    assert_true(kp_cql_type_equal(type_of(&arena, "map<text, int>"), type_of(&arena, "map<varchar, int>")));
    assert_false(kp_cql_type_equal(type_of(&arena, "map<text, int>"), type_of(&arena, "map<text, bigint>")));
    kp_arena copy = {0};
    const kp_cql_type *udt = address_udt(&arena);
    assert_true(kp_cql_type_equal(kp_cql_type_copy(udt, &copy), udt));
    kp_arena_free(&copy);
    kp_arena_free(&arena);
}

static void test_values_bind_by_variable_name_with_unset_for_missing_keys(void **state)
{
    (void)state;
    kp_arena arena = {0};
    kp_error err;
    kp_cql_column variables[] = {
        {"k", "t", "id", type_of(&arena, "int")},
        {"k", "t", "name", type_of(&arena, "text")},
        {"k", "t", "score", type_of(&arena, "decimal")},
    };
    kp_cql_metadata md = {.column_count = 3, .columns = variables};
    kp_cql_values v = {0};
    cJSON *row = canon("{\"id\":7,\"name\":null}");
    assert_int_equal(kp_cql_values_bind(&md, row, &v, &err), 0);
    assert_int_equal(v.count, 3);
    static const uint8_t want[] = {0, 0, 0, 4, 0, 0, 0, 7, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xfe};
    assert_bytes(v.buf.data, v.buf.len, want, sizeof want);
    cJSON_Delete(row);
    kp_cql_values_reset(&v);
    row = canon("[1,\"a\",2.50]");
    assert_int_equal(kp_cql_values_bind(&md, row, &v, &err), 0);
    assert_int_equal(v.count, 3);
    cJSON_Delete(row);
    kp_cql_values_reset(&v);
    row = canon("{\"id\":\"seven\"}");
    assert_int_equal(kp_cql_values_bind(&md, row, &v, &err), -1);
    assert_non_null(strstr(err.message, "column id:"));
    cJSON_Delete(row);
    row = canon("[1]");
    assert_int_equal(kp_cql_values_bind(&md, row, &v, &err), -1);
    cJSON_Delete(row);
    kp_cql_values_free(&v);
    kp_arena_free(&arena);
}

/* ---- names --------------------------------------------------------------------------------------------------- */

static void test_identifiers_are_quoted_only_when_they_must_be(void **state)
{
    (void)state;
    char out[64];
    const char *cases[][2] = {
        {"workspace_id", "workspace_id"}, {"a1", "a1"}, {"_x", "\"_x\""}, {"WorkspaceId", "\"WorkspaceId\""},
        {"select", "\"select\""}, {"TABLE", "\"TABLE\""}, {"token", "\"token\""}, {"1abc", "\"1abc\""},
        {"a\"b", "\"a\"\"b\""}, {"", "\"\""}, {"order-items", "\"order-items\""}, {"key", "key"}, {"ttl", "ttl"},
        {"text", "text"}, {"count", "count"}, {"default", "\"default\""}, {"is", "\"is\""},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        size_t n = kp_cql_quote_identifier(cases[i][0], out, sizeof out);
        assert_string_equal(out, cases[i][1]);
        assert_int_equal(n, strlen(cases[i][1]));
    }
    /* truncation never overflows and reports the length needed */
    char small[4];
    assert_int_equal(kp_cql_quote_identifier("WorkspaceId", small, sizeof small), 13);
    assert_int_equal(strlen(small), 3);
    assert_true(kp_cql_is_reserved("Select"));
    assert_false(kp_cql_is_reserved("workspace"));
}

static void test_attribute_names_become_snake_case_and_collisions_are_found(void **state)
{
    (void)state;
    char out[64];
    const char *cases[][2] = {
        {"workspaceId", "workspace_id"}, {"WorkspaceId", "workspace_id"}, {"HTTPServer", "http_server"},
        {"userID", "user_id"}, {"already_snake", "already_snake"}, {"order-items", "order_items"},
        {"v2Beta", "v2_beta"}, {"ID", "id"}, {"createdAt", "created_at"}, {"a", "a"}, {"ABCDef", "abc_def"},
        {"placedAt2", "placed_at2"}, {"__x", "x"}, {"x__y", "x_y"}, {"some value", "some_value"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        kp_cql_snake_case(cases[i][0], out, sizeof out);
        if (strcmp(out, cases[i][1])) fail_msg("%s -> %s, expected %s", cases[i][0], out, cases[i][1]);
    }
    const char *names[] = {"id", "workspaceId", "name", "workspace_id"};
    size_t earlier = 99;
    assert_int_equal(kp_cql_snake_collision(names, 4, &earlier), 3);
    assert_int_equal(earlier, 1);
    const char *distinct[] = {"id", "workspaceId", "name"};
    assert_int_equal(kp_cql_snake_collision(distinct, 3, NULL), -1);
}

/* ---- hostile input ---------------------------------------------------------------------------------------------- */

/* Valid response frames of every kind (the corpus the hostile tests start from). */
static size_t build_valid_responses(kp_cql_buf *frames, size_t max, kp_arena *arena)
{
    size_t n = 0;
    kp_error err;
    kp_cql_response r;
#define ADD(resp)                                                                                  \
    do {                                                                                           \
        assert_true(n < max);                                                                      \
        if (kp_cql_response_encode(&(resp), NULL, &frames[n], &err)) fail_msg("%s", err.message); \
        n++;                                                                                       \
    } while (0)
    r = response_of(KP_CQL_OP_READY, 0);
    ADD(r);
    r = response_of(KP_CQL_OP_AUTHENTICATE, 0);
    r.authenticator = "org.apache.cassandra.auth.PasswordAuthenticator";
    ADD(r);
    r = response_of(KP_CQL_OP_ERROR, 3);
    r.error = (kp_cql_error_info){.code = KP_CQL_ERR_WRITE_TIMEOUT, .message = "timeout", .consistency = 6,
                                  .received = 0, .block_for = 1, .write_type = "BATCH_LOG"};
    ADD(r);
    r.error = (kp_cql_error_info){.code = KP_CQL_ERR_READ_FAILURE, .message = "f", .failures = 1};
    ADD(r);
    static const uint8_t id[] = {1, 2, 3, 4};
    r.error = (kp_cql_error_info){.code = KP_CQL_ERR_UNPREPARED, .message = "u", .unprepared_id = id,
                                  .unprepared_id_len = 4};
    ADD(r);
    static const char *warnings[] = {"careful", "very careful"};
    static const char *versions[] = {"3/v3", "4/v4"};
    kp_cql_multimap_entry supported[] = {{"PROTOCOL_VERSIONS", versions, 2}};
    r = response_of(KP_CQL_OP_SUPPORTED, 0);
    r.supported = supported;
    r.supported_count = 1;
    ADD(r);
    kp_cql_column columns[] = {
        {"k", "t", "id", type_of(arena, "uuid")},
        {"k", "t", "n", type_of(arena, "varint")},
        {"k", "t", "d", type_of(arena, "decimal")},
        {"k", "t", "m", type_of(arena, "map<text, frozen<list<tuple<int, date>>>>")},
        {"k", "t", "u", address_udt(arena)},
        {"k", "t", "s", type_of(arena, "text")},
    };
    static const uint8_t paging[] = {0xAB, 0xCD, 0xEF};
    r = response_of(KP_CQL_OP_RESULT, 11);
    r.header.flags = KP_CQL_FLAG_WARNING;
    r.warnings = warnings;
    r.warning_count = 2;
    r.result_kind = KP_CQL_RESULT_ROWS;
    r.metadata = (kp_cql_metadata){.flags = KP_CQL_MD_HAS_MORE_PAGES | KP_CQL_MD_GLOBAL_TABLES_SPEC,
                                   .column_count = 6, .columns = columns, .paging_state = paging,
                                   .paging_state_len = 3};
    r.rows = canon("[{\"id\":\"7f1c0b7e-2a4d-4c1e-9b3f-5d6e7f809a1b\",\"n\":-123456789012345678901,\"d\":-1.05,"
                   "\"m\":{\"a\":[[1,\"2026-04-01\"]]},\"u\":{\"street\":\"s\",\"zip\":1,\"tags\":[\"t\"]},\"s\":\"x\"},"
                   "{\"id\":null,\"n\":0,\"d\":0.000,\"m\":{},\"u\":null,\"s\":\"\"}]");
    ADD(r);
    cJSON_Delete(r.rows);
    uint16_t pk[] = {0};
    r = response_of(KP_CQL_OP_RESULT, 12);
    r.result_kind = KP_CQL_RESULT_PREPARED;
    r.prepared_id = id;
    r.prepared_id_len = 4;
    r.metadata = (kp_cql_metadata){.column_count = 2, .columns = columns, .pk_indexes = pk, .pk_count = 1};
    r.result_metadata = (kp_cql_metadata){.flags = KP_CQL_MD_GLOBAL_TABLES_SPEC, .column_count = 6, .columns = columns};
    ADD(r);
    r = response_of(KP_CQL_OP_RESULT, 13);
    r.result_kind = KP_CQL_RESULT_SCHEMA_CHANGE;
    static const char *args[] = {"int", "text"};
    r.schema_change = (kp_cql_schema_change){"CREATED", "FUNCTION", "k", "f", args, 2};
    ADD(r);
    r = response_of(KP_CQL_OP_RESULT, 14);
    r.result_kind = KP_CQL_RESULT_SET_KEYSPACE;
    r.keyspace = "k";
    ADD(r);
    r = response_of(KP_CQL_OP_EVENT, -1);
    r.event_type = "STATUS_CHANGE";
    r.event_change = "DOWN";
    snprintf(r.event_address, sizeof r.event_address, "10.0.0.1:9042");
    ADD(r);
#undef ADD
    return n;
}

/* Decodes len bytes from an exact-size heap copy; returns the decode's result. */
static int decode_copy(const uint8_t *bytes, size_t len, int as_request)
{
    uint8_t *copy = malloc(len ? len : 1);
    if (len) memcpy(copy, bytes, len);
    kp_error err;
    kp_error_clear(&err);
    int rc;
    if (as_request) {
        kp_arena arena = {0};
        kp_cql_request rq;
        rc = kp_cql_request_decode(copy, len, &arena, &rq, &err);
        if (rc == 0) kp_cql_request_free_values(&rq);
        kp_arena_free(&arena);
    } else {
        kp_cql_response r;
        rc = kp_cql_response_decode(copy, len, NULL, 0, &r, &err);
        if (rc == 0) kp_cql_response_free(&r);
    }
    if (rc) {
        assert_true(err.code == KP_ERR_TARGET || err.code == KP_ERR_NOMEM);
        assert_true(err.message[0] != '\0');
    }
    free(copy);
    return rc;
}

static void set_length(uint8_t *frame, uint32_t length)
{
    frame[5] = (uint8_t)(length >> 24);
    frame[6] = (uint8_t)(length >> 16);
    frame[7] = (uint8_t)(length >> 8);
    frame[8] = (uint8_t)length;
}

static void test_every_truncation_of_every_valid_frame_is_an_error(void **state)
{
    (void)state;
    kp_arena arena = {0};
    kp_cql_buf frames[16];
    memset(frames, 0, sizeof frames);
    size_t n = build_valid_responses(frames, 16, &arena);
    for (size_t f = 0; f < n; f++) {
        const kp_cql_buf *frame = &frames[f];
        assert_int_equal(decode_copy(frame->data, frame->len, 0), 0);
        uint8_t *cut = malloc(frame->len);
        for (size_t len = 0; len < frame->len; len++) {
            /* as it is: the header promises more than there is */
            assert_int_equal(decode_copy(frame->data, len, 0), -1);
            /* with the header's length fixed to what is left: the body parser meets the end */
            if (len >= KP_CQL_HEADER_SIZE) {
                memcpy(cut, frame->data, len);
                set_length(cut, (uint32_t)(len - KP_CQL_HEADER_SIZE));
                if (decode_copy(cut, len, 0) == 0) {
                    /* only bodies whose kind has an empty form may decode: none of these */
                    fail_msg("frame %zu truncated to %zu bytes decoded", f, len);
                }
            }
        }
        free(cut);
    }
    /* requests too */
    kp_cql_buf req = {0};
    kp_error err;
    kp_cql_values values = {0};
    static const uint8_t v[] = {1, 2};
    kp_cql_values_add_bytes(&values, "x", v, 2, &err);
    static const uint8_t state_bytes[] = {5, 6};
    kp_cql_params params = {.consistency = 1, .values = &values, .page_size = 10, .paging_state = state_bytes,
                            .paging_state_len = 2, .serial_consistency = 9, .has_default_timestamp = 1};
    assert_int_equal(kp_cql_encode_query(&req, 1, "SELECT x FROM t", &params, &err), 0);
    for (size_t len = KP_CQL_HEADER_SIZE; len < req.len; len++) {
        uint8_t *cut = malloc(len);
        memcpy(cut, req.data, len);
        set_length(cut, (uint32_t)(len - KP_CQL_HEADER_SIZE));
        assert_int_equal(decode_copy(cut, len, 1), -1);
        free(cut);
    }
    kp_cql_values_free(&values);
    kp_cql_buf_free(&req);
    for (size_t f = 0; f < n; f++) kp_cql_buf_free(&frames[f]);
    kp_arena_free(&arena);
}

static uint64_t rng_state;
static uint32_t next_rand(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return (uint32_t)(rng_state >> 16);
}

static void test_bit_flips_and_random_bytes_never_crash_the_decoder(void **state)
{
    (void)state;
    const char *env = getenv("KP_TEST_SEED");
    uint64_t seed = env ? strtoull(env, NULL, 10) : 20261201;
    rng_state = seed ? seed : 1;
    printf("test_bit_flips_and_random_bytes: seed %llu (KP_TEST_SEED)\n", (unsigned long long)seed);
    kp_arena arena = {0};
    kp_cql_buf frames[16];
    memset(frames, 0, sizeof frames);
    size_t n = build_valid_responses(frames, 16, &arena);
    uint8_t buf[4096];
    int decoded = 0;
    for (int i = 0; i < 20000; i++) {
        const kp_cql_buf *frame = &frames[next_rand() % n];
        size_t len = frame->len < sizeof buf ? frame->len : sizeof buf;
        memcpy(buf, frame->data, len);
        int flips = 1 + (int)(next_rand() % 4);
        for (int k = 0; k < flips; k++) {
            size_t at = KP_CQL_HEADER_SIZE + next_rand() % (len - KP_CQL_HEADER_SIZE > 0 ? len - KP_CQL_HEADER_SIZE : 1);
            if (at >= len) continue;
            if (next_rand() % 3 == 0) buf[at] = (uint8_t)next_rand();   /* a random byte */
            else buf[at] ^= (uint8_t)(1u << (next_rand() % 8));
        }
        decoded += decode_copy(buf, len, 0) == 0;
    }
    /* random bodies behind a valid header of each response opcode */
    static const uint8_t opcodes[] = {0x00, 0x02, 0x03, 0x06, 0x08, 0x0c, 0x0e, 0x10};
    for (int i = 0; i < 20000; i++) {
        size_t body = next_rand() % 200;
        buf[0] = 0x84;
        buf[1] = (uint8_t)(next_rand() % 16) & (uint8_t)~KP_CQL_FLAG_COMPRESSION;
        buf[2] = 0;
        buf[3] = 1;
        buf[4] = opcodes[next_rand() % sizeof opcodes];
        set_length(buf, (uint32_t)body);
        for (size_t k = 0; k < body; k++) buf[KP_CQL_HEADER_SIZE + k] = (uint8_t)next_rand();
        /* a plausible result kind now and then, to get past the first field */
        if (buf[4] == 0x08 && body >= 4 && next_rand() % 2) {
            buf[9] = buf[10] = buf[11] = 0;
            buf[12] = (uint8_t)(1 + next_rand() % 5);
        }
        decode_copy(buf, KP_CQL_HEADER_SIZE + body, 0);
        decode_copy(buf, KP_CQL_HEADER_SIZE + body, 1);   /* and as a request: refused by direction */
        buf[0] = 0x04;
        buf[4] = (uint8_t)(next_rand() % 0x12);
        decode_copy(buf, KP_CQL_HEADER_SIZE + body, 1);
    }
    /* pure noise of any length */
    for (int i = 0; i < 5000; i++) {
        size_t len = next_rand() % 64;
        for (size_t k = 0; k < len; k++) buf[k] = (uint8_t)next_rand();
        decode_copy(buf, len, 0);
        decode_copy(buf, len, 1);
    }
    printf("  %d of 20000 mutated frames still decoded\n", decoded);
    for (size_t f = 0; f < n; f++) kp_cql_buf_free(&frames[f]);
    kp_arena_free(&arena);
}

static void test_bad_headers_and_oversized_or_deep_frames_are_refused(void **state)
{
    (void)state;
    kp_error err;
    kp_cql_header h;
    uint8_t frame[64] = {0x84, 0x00, 0x00, 0x00, 0x02, 0x00, 0x00, 0x00, 0x00};
    assert_int_equal(kp_cql_header_decode(frame, 8, 1, 0, &h, &err), -1);
    assert_non_null(strstr(err.message, "9 bytes"));
    frame[0] = 0x83;
    assert_int_equal(kp_cql_header_decode(frame, 9, 1, 0, &h, &err), -1);
    assert_non_null(strstr(err.message, "version 3"));
    frame[0] = 0x04;   /* a request where a response belongs */
    assert_int_equal(kp_cql_header_decode(frame, 9, 1, 0, &h, &err), -1);
    frame[0] = 0x84;
    frame[4] = 0x07;   /* QUERY is not a response */
    assert_int_equal(kp_cql_header_decode(frame, 9, 1, 0, &h, &err), -1);
    frame[4] = 0x02;
    frame[1] = KP_CQL_FLAG_COMPRESSION;
    assert_int_equal(kp_cql_header_decode(frame, 9, 1, 0, &h, &err), -1);
    assert_non_null(strstr(err.message, "compressed"));
    frame[1] = 0;
    set_length(frame, 256u * 1024 * 1024 + 1);
    assert_int_equal(kp_cql_header_decode(frame, 9, 1, 0, &h, &err), -1);
    assert_non_null(strstr(err.message, "larger than"));
    set_length(frame, 1000);
    assert_int_equal(kp_cql_header_decode(frame, 9, 1, 999, &h, &err), -1);
    assert_int_equal(kp_cql_header_decode(frame, 9, 1, 1000, &h, &err), 0);
    assert_int_equal(h.length, 1000);
    frame[2] = 0xff;
    frame[3] = 0xfe;   /* stream -2 */
    assert_int_equal(kp_cql_header_decode(frame, 9, 1, 0, &h, &err), -1);

    /* a type nested deeper than the limit, inside a Rows result */
    kp_cql_buf b = {0};
    uint8_t head[] = {0x84, 0, 0, 1, 0x08, 0, 0, 0, 0, 0, 0, 0, 2, 0, 0, 0, 1, 0, 0, 0, 1, 0, 1, 'k', 0, 1, 't', 0, 1, 'c'};
    for (size_t i = 0; i < sizeof head; i++) {
        b.data = realloc(b.data, b.len + 1);
        b.data[b.len++] = head[i];
    }
    for (int i = 0; i < 100; i++) {
        b.data = realloc(b.data, b.len + 2);
        b.data[b.len++] = 0x00;
        b.data[b.len++] = 0x20;   /* list< ... */
    }
    b.data = realloc(b.data, b.len + 6);
    b.data[b.len++] = 0x00;
    b.data[b.len++] = 0x09;
    for (int i = 0; i < 4; i++) b.data[b.len++] = 0;   /* 0 rows */
    set_length(b.data, (uint32_t)(b.len - KP_CQL_HEADER_SIZE));
    kp_cql_response r;
    assert_int_equal(kp_cql_response_decode(b.data, b.len, NULL, 0, &r, &err), -1);
    assert_non_null(strstr(err.message, "deeper"));
    free(b.data);

    /* counts that promise more than the frame holds are refused before allocating */
    uint8_t many_rows[] = {0x84, 0, 0, 1, 0x08, 0, 0, 0, 29, 0, 0, 0, 2, 0, 0, 0, 1, 0, 0, 0, 1,
                                        0, 1, 'k', 0, 1, 't', 0, 1, 'c', 0, 9, 0x7f, 0xff, 0xff, 0xff};
    set_length(many_rows, sizeof many_rows - KP_CQL_HEADER_SIZE);
    assert_int_equal(kp_cql_response_decode(many_rows, sizeof many_rows, NULL, 0, &r, &err), -1);
    assert_non_null(strstr(err.message, "rows of 1 columns announced"));
    static const uint8_t many_columns[] = {0x84, 0, 0, 1, 0x08, 0, 0, 0, 12, 0, 0, 0, 2, 0, 0, 0, 0, 0x7f, 0xff, 0xff, 0xff};
    assert_int_equal(kp_cql_response_decode(many_columns, sizeof many_columns, NULL, 0, &r, &err), -1);
    /* and extra bytes after a body are an error too */
    static const uint8_t trailing[] = {0x84, 0, 0, 1, 0x08, 0, 0, 0, 5, 0, 0, 0, 1, 0xee};
    assert_int_equal(kp_cql_response_decode(trailing, sizeof trailing, NULL, 0, &r, &err), -1);
    assert_non_null(strstr(err.message, "unexpected bytes"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_startup_options_and_query_frames_match_the_spec_layout),
        cmocka_unit_test(test_ready_error_void_and_rows_frames_from_the_spec_layout_decode),
        cmocka_unit_test(test_every_request_kind_round_trips),
        cmocka_unit_test(test_every_error_kind_round_trips_with_its_extra_fields),
        cmocka_unit_test(test_every_other_response_kind_round_trips),
        cmocka_unit_test(test_every_type_round_trips_through_its_wire_form),
        cmocka_unit_test(test_numbers_and_times_have_the_exact_wire_bytes),
        cmocka_unit_test(test_values_that_do_not_fit_their_type_are_data_errors),
        cmocka_unit_test(test_malformed_values_are_target_errors),
        cmocka_unit_test(test_type_text_parses_and_prints_back),
        cmocka_unit_test(test_values_bind_by_variable_name_with_unset_for_missing_keys),
        cmocka_unit_test(test_identifiers_are_quoted_only_when_they_must_be),
        cmocka_unit_test(test_attribute_names_become_snake_case_and_collisions_are_found),
        cmocka_unit_test(test_every_truncation_of_every_valid_frame_is_an_error),
        cmocka_unit_test(test_bit_flips_and_random_bytes_never_crash_the_decoder),
        cmocka_unit_test(test_bad_headers_and_oversized_or_deep_frames_are_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
