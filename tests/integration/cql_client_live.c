/*
 * cql_client_live.c — keyplan's CQL v4 client against a live Cassandra (the local
 * node of scripts/target-cassandra.sh on 127.0.0.1:19042 by default).
 *
 *   cql_client_live [--target HOST:PORT] [--auth]            the functional test
 *   cql_client_live [--target HOST:PORT] [--auth] --bench N [--in-flight K] [--connections C]
 *                                                            N asynchronous inserts, prints rows/s
 *
 * The functional test, in a keyspace of its own (dropped first and at the end):
 * OPTIONS/SUPPORTED over a raw socket with the codec alone; a table with a column of
 * every CQL type (and a UDT, a tuple, a counter table); prepared inserts of rows with
 * every type, edge values and nulls, read back and compared value by value; QUERY
 * with typed values; 1,000 rows paged 100 at a time; a logged and an unlogged batch
 * (and a counter batch); 2,000 asynchronous inserts with 32 in flight, counted back;
 * a statement re-prepared after its table was dropped and created again (Unprepared);
 * errors with Cassandra's message and code (syntax, invalid, already exists); the
 * batch-size warning; which words Cassandra reserves, against kp_cql_is_reserved.
 * With --auth (a node started with --auth; CASSANDRA_USERNAME/PASSWORD, default
 * cassandra/cassandra): the login works, a wrong password fails with a message that
 * does not contain it, and no login fails saying what to set.
 * Exit status: 0 passed, 1 failed (also: the node refused the login), 77 nothing listens.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "backends/cassandra/cql_client.h"

#define KEYSPACE "keyplan_cql_live"

static int failures;

#define CHECK(cond, ...)                                                    \
    do {                                                                    \
        if (!(cond)) {                                                      \
            failures++;                                                     \
            fprintf(stderr, "FAIL %s:%d: %s: ", __FILE__, __LINE__, #cond); \
            fprintf(stderr, __VA_ARGS__);                                   \
            fputc('\n', stderr);                                            \
        }                                                                   \
    } while (0)

static double seconds_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static const char *target = "127.0.0.1:19042";
static int use_auth;
static const char *user = "cassandra", *password = "cassandra";

static kp_cql_config config(void)
{
    kp_cql_config cfg = {.target = target, .consistency = KP_CQL_ONE};
    if (use_auth) {
        cfg.username = user;
        cfg.password = password;
    }
    return cfg;
}

/* Runs a statement that must succeed. */
static void run(kp_cql_client *c, const char *cql)
{
    kp_error err;
    if (kp_cql_query(c, cql, NULL, NULL, NULL, &err)) {
        failures++;
        fprintf(stderr, "FAIL running %s: %s\n", cql, err.message);
    }
}

static char *print(const cJSON *v)
{
    char *s = cJSON_PrintUnformatted(v);
    return s ? s : strdup("(null)");
}

/* ---- OPTIONS over a raw socket: the codec alone against the server ------------------- */

static void test_options_over_a_raw_socket(void)
{
    char host[256];
    snprintf(host, sizeof host, "%s", target);
    char *colon = strrchr(host, ':');
    const char *port = "9042";
    if (colon) {
        *colon = '\0';
        port = colon + 1;
    }
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM}, *res;
    if (getaddrinfo(host, port, &hints, &res)) return;
    int fd = socket(res->ai_family, SOCK_STREAM, 0);
    if (connect(fd, res->ai_addr, res->ai_addrlen)) {
        freeaddrinfo(res);
        close(fd);
        return;
    }
    freeaddrinfo(res);
    kp_cql_buf b = {0};
    kp_error err;
    kp_cql_encode_options(&b, 7, &err);
    CHECK(write(fd, b.data, b.len) == (ssize_t)b.len, "write");
    uint8_t buf[65536];
    size_t got = 0;
    kp_cql_header h;
    memset(&h, 0, sizeof h);
    while (got < sizeof buf) {
        ssize_t r = read(fd, buf + got, sizeof buf - got);
        if (r <= 0) break;
        got += (size_t)r;
        if (got >= 9 && kp_cql_header_decode(buf, got, 1, 0, &h, &err) == 0 && got >= 9 + h.length) break;
    }
    close(fd);
    kp_cql_response r;
    int rc = kp_cql_response_decode(buf, got, NULL, 0, &r, &err);
    CHECK(rc == 0, "SUPPORTED did not decode: %s", err.message);
    if (rc) return;
    CHECK(r.header.opcode == KP_CQL_OP_SUPPORTED && r.header.stream == 7, "opcode 0x%02x stream %d", r.header.opcode,
          r.header.stream);
    printf("SUPPORTED:");
    for (size_t i = 0; i < r.supported_count; i++) {
        printf(" %s=[", r.supported[i].key);
        for (size_t k = 0; k < r.supported[i].value_count; k++) printf("%s%s", k ? "," : "", r.supported[i].values[k]);
        printf("]");
    }
    printf("\n");
    kp_cql_response_free(&r);
    kp_cql_buf_free(&b);
}

/* ---- every type ------------------------------------------------------------------------- */

static const char *const every_type_columns =
    "id int PRIMARY KEY, a_ascii ascii, a_bigint bigint, a_blob blob, a_boolean boolean, a_decimal decimal, "
    "a_double double, a_float float, a_int int, a_timestamp timestamp, a_uuid uuid, a_text text, a_varint varint, "
    "a_timeuuid timeuuid, a_inet inet, a_date date, a_time time, a_smallint smallint, a_tinyint tinyint, "
    "a_list list<int>, a_set set<text>, a_map map<text, int>, a_udt frozen<address>, a_tuple tuple<int, text>, "
    "a_nested map<text, frozen<list<decimal>>>, a_vset set<frozen<tuple<date, time>>>";

/* Rows to insert, as canonical JSON; what Cassandra gives back must be the same. */
static const char *const every_type_rows[] = {
    "{\"id\":1,\"a_ascii\":\"plain\",\"a_bigint\":9223372036854775807,\"a_blob\":\"AAEC/w==\",\"a_boolean\":true,"
    "\"a_decimal\":-12.50,\"a_double\":0.1,\"a_float\":-1.5,\"a_int\":-2147483648,"
    "\"a_timestamp\":\"2026-04-01T09:30:00.123Z\",\"a_uuid\":\"7f1c0b7e-2a4d-4c1e-9b3f-5d6e7f809a1b\","
    "\"a_text\":\"h\\u00e9llo \\u2713\",\"a_varint\":-123456789012345678901234567890,"
    "\"a_timeuuid\":\"5c1e7a90-1d2b-11ef-8c3a-0242ac120002\",\"a_inet\":\"2001:db8::1\",\"a_date\":\"1969-12-31\","
    "\"a_time\":\"23:59:59.999999999\",\"a_smallint\":-32768,\"a_tinyint\":127,\"a_list\":[3,1,2],"
    "\"a_set\":[\"a\",\"b\"],\"a_map\":{\"x\":1,\"y\":-2},\"a_udt\":{\"street\":\"Main\",\"zip\":12345,"
    "\"tags\":[\"t1\"]},\"a_tuple\":[7,\"seven\"],\"a_nested\":{\"k\":[1.50,-0.001]},"
    "\"a_vset\":[[\"2026-04-01\",\"09:30:00.000000000\"]]}",
    "{\"id\":2,\"a_ascii\":\"\",\"a_bigint\":-9223372036854775808,\"a_blob\":\"\",\"a_boolean\":false,"
    "\"a_decimal\":123456789012345678901234567890.123456789,\"a_double\":\"NaN\",\"a_float\":\"-Infinity\","
    "\"a_int\":2147483647,\"a_timestamp\":\"1969-12-31T23:59:59.999Z\","
    "\"a_uuid\":\"00000000-0000-0000-0000-000000000000\",\"a_text\":\"\",\"a_varint\":0,"
    "\"a_timeuuid\":\"5c1e7a90-1d2b-11ef-8c3a-0242ac120002\",\"a_inet\":\"192.0.2.1\",\"a_date\":\"0001-01-01\","
    "\"a_time\":\"00:00:00.000000000\",\"a_smallint\":32767,\"a_tinyint\":-128,\"a_list\":[0],"
    "\"a_set\":[\"\"],\"a_map\":{\"\":0},\"a_udt\":{\"street\":null,\"zip\":null,\"tags\":null},"
    "\"a_tuple\":[null,null],\"a_nested\":{\"e\":[]},\"a_vset\":[[\"9999-12-31\",\"12:00:00.000000001\"]]}",
    "{\"id\":3,\"a_ascii\":null,\"a_bigint\":null,\"a_blob\":null,\"a_boolean\":null,\"a_decimal\":null,"
    "\"a_double\":null,\"a_float\":null,\"a_int\":null,\"a_timestamp\":null,\"a_uuid\":null,\"a_text\":null,"
    "\"a_varint\":null,\"a_timeuuid\":null,\"a_inet\":null,\"a_date\":null,\"a_time\":null,\"a_smallint\":null,"
    "\"a_tinyint\":null,\"a_list\":null,\"a_set\":null,\"a_map\":null,\"a_udt\":null,\"a_tuple\":null,"
    "\"a_nested\":null,\"a_vset\":null}",
    ("{\"id\":4,\"a_timestamp\":253402300800000,\"a_date\":2932897,\"a_decimal\":0.00,\"a_double\":1e+300,"
     "\"a_float\":3.4028235e+38,\"a_varint\":4294967296,\"a_text\":\"\\ud83d\\ude00\"}"),
};

static cJSON *row_from_text(const char *text);

static void compare_rows(const cJSON *got, const cJSON *want, int id)
{
    for (const cJSON *w = want->child; w; w = w->next) {
        const cJSON *g = cJSON_GetObjectItemCaseSensitive(got, w->string);
        char *gs = g ? print(g) : strdup("(absent)"), *ws = print(w);
        CHECK(!strcmp(gs, ws), "row %d column %s: got %s, expected %s", id, w->string, gs, ws);
        free(gs);
        free(ws);
    }
}

static void test_every_type(kp_cql_client *c)
{
    kp_error err;
    run(c, "CREATE TYPE " KEYSPACE ".address (street text, zip int, tags frozen<list<text>>)");
    char cql[2048];
    snprintf(cql, sizeof cql, "CREATE TABLE " KEYSPACE ".every_type (%s)", every_type_columns);
    run(c, cql);
    const char *insert = "INSERT INTO " KEYSPACE ".every_type (id, a_ascii, a_bigint, a_blob, a_boolean, a_decimal, "
                         "a_double, a_float, a_int, a_timestamp, a_uuid, a_text, a_varint, a_timeuuid, a_inet, "
                         "a_date, a_time, a_smallint, a_tinyint, a_list, a_set, a_map, a_udt, a_tuple, a_nested, "
                         "a_vset) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)";
    const kp_cql_prepared *p;
    if (kp_cql_prepare(c, insert, &p, &err)) {
        CHECK(0, "prepare: %s", err.message);
        return;
    }
    const kp_cql_metadata *vars = kp_cql_prepared_variables(p);
    CHECK(vars->column_count == 26, "%d bind variables", vars->column_count);
    CHECK(vars->pk_count == 1 && vars->pk_indexes[0] == 0, "partition key index");
    for (size_t i = 0; i < sizeof every_type_rows / sizeof every_type_rows[0]; i++) {
        cJSON *row = row_from_text(every_type_rows[i]);
        kp_cql_values values = {0};
        if (kp_cql_values_bind(vars, row, &values, &err)) {
            CHECK(0, "bind row %zu: %s", i + 1, err.message);
        } else if (kp_cql_execute(c, p, &values, NULL, NULL, &err)) {
            CHECK(0, "insert row %zu: %s", i + 1, err.message);
        }
        kp_cql_values_free(&values);
        cJSON_Delete(row);
    }
    /* read back, prepared, one row at a time */
    const kp_cql_prepared *select;
    if (kp_cql_prepare(c, "SELECT * FROM " KEYSPACE ".every_type WHERE id = ?", &select, &err)) {
        CHECK(0, "prepare select: %s", err.message);
        return;
    }
    for (size_t i = 0; i < sizeof every_type_rows / sizeof every_type_rows[0]; i++) {
        cJSON *want = row_from_text(every_type_rows[i]);
        kp_cql_values key = {0};
        kp_cql_values_add_json(&key, NULL, kp_cql_prepared_variables(select)->columns[0].type,
                               cJSON_GetObjectItem(want, "id"), &err);
        kp_cql_response r;
        if (kp_cql_execute(c, select, &key, NULL, &r, &err)) {
            CHECK(0, "select row %zu: %s", i + 1, err.message);
        } else {
            CHECK(r.result_kind == KP_CQL_RESULT_ROWS && r.row_count == 1, "row %zu: kind %d, %d rows", i + 1,
                  r.result_kind, r.row_count);
            if (r.row_count == 1) compare_rows(r.rows->child, want, (int)i + 1);
            kp_cql_response_free(&r);
        }
        kp_cql_values_free(&key);
        cJSON_Delete(want);
    }
    /* a plain QUERY with typed values, and the rows of the whole table */
    kp_arena arena = {0};
    const kp_cql_type *int_type;
    kp_cql_type_parse("int", &arena, &int_type, &err);
    kp_cql_values values = {0};
    cJSON *two = cJSON_CreateRaw("2");
    kp_cql_values_add_json(&values, NULL, int_type, two, &err);
    kp_cql_response r;
    if (kp_cql_query(c, "SELECT a_decimal, a_double, writetime(a_int) AS wt FROM " KEYSPACE ".every_type WHERE id = ?",
                     &values, NULL, &r, &err) == 0) {
        char *got = print(r.rows);
        CHECK(r.row_count == 1, "%d rows", r.row_count);
        CHECK(strstr(got, "\"a_decimal\":123456789012345678901234567890.123456789,\"a_double\":\"NaN\"") != NULL,
              "got %s", got);
        free(got);
        kp_cql_response_free(&r);
    } else {
        CHECK(0, "query with values: %s", err.message);
    }
    cJSON_Delete(two);
    kp_cql_values_free(&values);
    kp_arena_free(&arena);

    cJSON *all = NULL;
    int pages = 0;
    CHECK(kp_cql_fetch_all(c, NULL, "SELECT id FROM " KEYSPACE ".every_type", NULL, 2, &all, &pages, &err) == 0, "%s",
          err.message);
    CHECK(cJSON_GetArraySize(all) == 4, "%d rows", cJSON_GetArraySize(all));
    CHECK(pages >= 2, "%d pages of 2 rows", pages);
    cJSON_Delete(all);

    /* counters live in tables of their own */
    run(c, "CREATE TABLE " KEYSPACE ".counters (id int PRIMARY KEY, hits counter)");
    const kp_cql_prepared *bump;
    if (kp_cql_prepare(c, "UPDATE " KEYSPACE ".counters SET hits = hits + ? WHERE id = ?", &bump, &err) == 0) {
        cJSON *args = row_from_text("[5, 1]");
        kp_cql_values v = {0};
        kp_cql_params once = {.no_retry_after_send = 1};
        CHECK(kp_cql_values_bind(kp_cql_prepared_variables(bump), args, &v, &err) == 0, "%s", err.message);
        for (int i = 0; i < 3; i++) CHECK(kp_cql_execute(c, bump, &v, &once, NULL, &err) == 0, "%s", err.message);
        kp_cql_batch_entry entries[] = {{.prepared = bump, .values = &v}, {.prepared = bump, .values = &v}};
        CHECK(kp_cql_batch_execute(c, KP_CQL_BATCH_COUNTER, entries, 2, NULL, NULL, &err) == 0, "counter batch: %s",
              err.message);
        kp_cql_values_free(&v);
        cJSON_Delete(args);
        if (kp_cql_query(c, "SELECT hits FROM " KEYSPACE ".counters WHERE id = 1", NULL, NULL, &r, &err) == 0) {
            char *got = print(r.rows);
            CHECK(!strcmp(got, "[{\"hits\":25}]"), "counter %s", got);
            free(got);
            kp_cql_response_free(&r);
        }
    } else {
        CHECK(0, "prepare counter update: %s", err.message);
    }
}

/* A copy of `node` whose numbers are Raw nodes holding the next texts of `numbers`
 * (document order is the order cJSON keeps). */
static cJSON *with_raw_numbers(const cJSON *node, const char *const *numbers, const size_t *lengths, size_t *next)
{
    if (cJSON_IsNumber(node)) {
        char buf[256];
        snprintf(buf, sizeof buf, "%.*s", (int)lengths[*next], numbers[*next]);
        (*next)++;
        return cJSON_CreateRaw(buf);
    }
    if (!cJSON_IsArray(node) && !cJSON_IsObject(node)) return cJSON_Duplicate(node, 1);
    cJSON *out = cJSON_IsArray(node) ? cJSON_CreateArray() : cJSON_CreateObject();
    for (const cJSON *c = node->child; c; c = c->next) {
        cJSON *copy = with_raw_numbers(c, numbers, lengths, next);
        if (cJSON_IsArray(node)) cJSON_AddItemToArray(out, copy);
        else cJSON_AddItemToObject(out, c->string, copy);
    }
    return out;
}

/* Canonical JSON from text: numbers keep their exact text (cJSON_Raw), as in records. */
static cJSON *row_from_text(const char *text)
{
    cJSON *tree = cJSON_Parse(text);
    if (!tree) {
        fprintf(stderr, "bad JSON in the test: %s\n", text);
        exit(1);
    }
    const char *numbers[256];
    size_t lengths[256], count = 0;
    int in_string = 0;
    for (const char *p = text; *p; p++) {
        if (in_string) {
            if (*p == '\\') p++;
            else if (*p == '"') in_string = 0;
            continue;
        }
        if (*p == '"') {
            in_string = 1;
            continue;
        }
        if (*p == '-' || (*p >= '0' && *p <= '9')) {
            const char *start = p;
            while (p[1] && strchr("0123456789.eE+-", p[1])) p++;
            if (count < 256) {
                numbers[count] = start;
                lengths[count++] = (size_t)(p - start + 1);
            }
        }
    }
    size_t next = 0;
    cJSON *out = with_raw_numbers(tree, numbers, lengths, &next);
    cJSON_Delete(tree);
    return out;
}

/* ---- paging ---------------------------------------------------------------------------------- */

typedef struct ack_state {
    int acked, failed;
    char first_error[512];
} ack_state;

static void on_ack(void *ctx, const kp_cql_response *response, const kp_cql_failure *failure)
{
    ack_state *s = ctx;
    if (failure) {
        if (!s->failed) snprintf(s->first_error, sizeof s->first_error, "%s", failure->error.message);
        s->failed++;
    } else {
        s->acked++;
    }
    (void)response;
}

static int insert_async(kp_cql_client *c, const kp_cql_prepared *p, int partitions, int rows, int in_flight,
                        double *seconds)
{
    kp_error err;
    ack_state s = {0};
    double start = seconds_now();
    kp_cql_values v = {0};
    const kp_cql_metadata *vars = kp_cql_prepared_variables(p);
    for (int i = 0; i < rows; i++) {
        char text[256];
        snprintf(text, sizeof text, "[%d, %d, \"value %d\", %d.%02d]", i % partitions, i, i, i, i % 100);
        cJSON *args = row_from_text(text);
        kp_cql_values_reset(&v);
        if (kp_cql_values_bind(vars, args, &v, &err) ||
            kp_cql_execute_async(c, p, &v, NULL, on_ack, &s, &err)) {
            CHECK(0, "submit: %s", err.message);
            cJSON_Delete(args);
            break;
        }
        cJSON_Delete(args);
        /* keep the queue short: the client keeps `in_flight` on the wire */
        while (kp_cql_pending(c) >= in_flight * 2) kp_cql_poll(c, 1000, &err);
    }
    while (kp_cql_pending(c) > 0) kp_cql_poll(c, 1000, &err);
    *seconds = seconds_now() - start;
    kp_cql_values_free(&v);
    CHECK(s.failed == 0, "%d inserts failed, first: %s", s.failed, s.first_error);
    return s.acked;
}

static void test_paging(kp_cql_client *c)
{
    kp_error err;
    run(c, "CREATE TABLE " KEYSPACE ".paged (p int, n int, v text, d decimal, PRIMARY KEY (p, n))");
    const kp_cql_prepared *insert;
    if (kp_cql_prepare(c, "INSERT INTO " KEYSPACE ".paged (p, n, v, d) VALUES (?, ?, ?, ?)", &insert, &err)) {
        CHECK(0, "%s", err.message);
        return;
    }
    double seconds;
    int acked = insert_async(c, insert, 1, 1000, 32, &seconds);
    CHECK(acked == 1000, "%d acknowledged", acked);
    const kp_cql_prepared *select;
    if (kp_cql_prepare(c, "SELECT n, v FROM " KEYSPACE ".paged WHERE p = 0", &select, &err)) {
        CHECK(0, "%s", err.message);
        return;
    }
    /* page by page, by hand: paging state in, paging state out */
    kp_cql_params params = {.page_size = 100};
    uint8_t state[512];
    int pages = 0, rows = 0, expected_n = 0, empty_pages = 0;
    for (;;) {
        kp_cql_response r;
        if (kp_cql_execute(c, select, NULL, &params, &r, &err)) {
            CHECK(0, "page %d: %s", pages + 1, err.message);
            break;
        }
        pages++;
        if (r.row_count == 0) empty_pages++;
        CHECK(r.row_count <= 100, "page %d has %d rows", pages, r.row_count);
        for (cJSON *row = r.rows ? r.rows->child : NULL; row; row = row->next, rows++, expected_n++) {
            cJSON *n = cJSON_GetObjectItem(row, "n");
            CHECK(n && atoi(n->valuestring) == expected_n, "row %d out of order", rows);
        }
        int more = (r.metadata.flags & KP_CQL_MD_HAS_MORE_PAGES) != 0;
        if (more) {
            CHECK(r.metadata.paging_state_len > 0 && (size_t)r.metadata.paging_state_len <= sizeof state, "state");
            memcpy(state, r.metadata.paging_state, (size_t)r.metadata.paging_state_len);
            params.paging_state = state;
            params.paging_state_len = r.metadata.paging_state_len;
        }
        kp_cql_response_free(&r);
        if (!more || pages > 20) break;
    }
    CHECK(rows == 1000, "%d rows over %d pages", rows, pages);
    CHECK(pages == 10 || (pages == 11 && empty_pages == 1), "%d pages (%d empty)", pages, empty_pages);
    printf("paging: 1,000 rows in %d pages of 100 (%d empty)\n", pages, empty_pages);
}

/* ---- batches ------------------------------------------------------------------------------------ */

static void test_batches(kp_cql_client *c)
{
    kp_error err;
    run(c, "CREATE TABLE " KEYSPACE ".batched (p int, n int, v text, PRIMARY KEY (p, n))");
    const kp_cql_prepared *insert;
    if (kp_cql_prepare(c, "INSERT INTO " KEYSPACE ".batched (p, n, v) VALUES (?, ?, ?)", &insert, &err)) {
        CHECK(0, "%s", err.message);
        return;
    }
    kp_cql_values values[10];
    kp_cql_batch_entry entries[11];
    memset(values, 0, sizeof values);
    for (int i = 0; i < 10; i++) {
        char text[128];
        snprintf(text, sizeof text, "[%d, %d, \"logged %d\"]", i, i, i);   /* 10 partitions */
        cJSON *args = row_from_text(text);
        kp_cql_values_bind(kp_cql_prepared_variables(insert), args, &values[i], &err);
        cJSON_Delete(args);
        entries[i] = (kp_cql_batch_entry){.prepared = insert, .values = &values[i]};
    }
    entries[10] = (kp_cql_batch_entry){.cql = "INSERT INTO " KEYSPACE ".batched (p, n, v) VALUES (100, 0, 'text')"};
    kp_cql_response r;
    CHECK(kp_cql_batch_execute(c, KP_CQL_BATCH_LOGGED, entries, 11, NULL, &r, &err) == 0, "logged: %s", err.message);
    CHECK(r.result_kind == KP_CQL_RESULT_VOID, "kind %d", r.result_kind);
    kp_cql_response_free(&r);
    for (int i = 0; i < 10; i++) {
        char text[128];
        snprintf(text, sizeof text, "[200, %d, \"unlogged %d\"]", i, i);   /* one partition */
        cJSON *args = row_from_text(text);
        kp_cql_values_reset(&values[i]);
        kp_cql_values_bind(kp_cql_prepared_variables(insert), args, &values[i], &err);
        cJSON_Delete(args);
    }
    CHECK(kp_cql_batch_execute(c, KP_CQL_BATCH_UNLOGGED, entries, 10, NULL, &r, &err) == 0, "unlogged: %s", err.message);
    kp_cql_response_free(&r);
    cJSON *rows = NULL;
    CHECK(kp_cql_fetch_all(c, NULL, "SELECT p, n, v FROM " KEYSPACE ".batched", NULL, 0, &rows, NULL, &err) == 0, "%s",
          err.message);
    CHECK(cJSON_GetArraySize(rows) == 21, "%d rows after the batches", cJSON_GetArraySize(rows));
    cJSON_Delete(rows);
    /* an unlogged batch over many partitions and above 5 KiB: Cassandra warns */
    char big[3000];
    memset(big, 'x', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    for (int i = 0; i < 10; i++) {
        kp_cql_values_reset(&values[i]);
        char text[3200];
        snprintf(text, sizeof text, "[%d, %d, \"%s\"]", 300 + i, i, big);
        cJSON *args = row_from_text(text);
        kp_cql_values_bind(kp_cql_prepared_variables(insert), args, &values[i], &err);
        cJSON_Delete(args);
    }
    if (kp_cql_batch_execute(c, KP_CQL_BATCH_UNLOGGED, entries, 10, NULL, &r, &err) == 0) {
        CHECK(r.warning_count >= 1, "no warning for a 30 KB batch");
        for (size_t i = 0; i < r.warning_count; i++) printf("server warning: %s\n", r.warnings[i]);
        kp_cql_response_free(&r);
    } else {
        CHECK(0, "big batch: %s", err.message);
    }
    for (int i = 0; i < 10; i++) kp_cql_values_free(&values[i]);
}

/* ---- asynchronous inserts ------------------------------------------------------------------------ */

static void test_async(kp_cql_client *c)
{
    kp_error err;
    run(c, "CREATE TABLE " KEYSPACE ".seeded (p int, n int, v text, d decimal, PRIMARY KEY (p, n))");
    const kp_cql_prepared *insert;
    if (kp_cql_prepare(c, "INSERT INTO " KEYSPACE ".seeded (p, n, v, d) VALUES (?, ?, ?, ?)", &insert, &err)) {
        CHECK(0, "%s", err.message);
        return;
    }
    double seconds;
    int acked = insert_async(c, insert, 97, 2000, 32, &seconds);
    CHECK(acked == 2000, "%d of 2,000 acknowledged", acked);
    printf("async: 2,000 inserts, 32 in flight: %.2f s, %.0f rows/s\n", seconds, 2000 / seconds);
    /* large pages: frames of several hundred KB */
    cJSON *rows = NULL;
    int pages = 0;
    CHECK(kp_cql_fetch_all(c, NULL, "SELECT * FROM " KEYSPACE ".seeded", NULL, 5000, &rows, &pages, &err) == 0, "%s",
          err.message);
    CHECK(cJSON_GetArraySize(rows) == 2000, "%d rows read back", cJSON_GetArraySize(rows));
    cJSON_Delete(rows);
    kp_cql_response r;
    if (kp_cql_query(c, "SELECT count(*) FROM " KEYSPACE ".seeded", NULL, NULL, &r, &err) == 0) {
        char *got = print(r.rows);
        CHECK(!strcmp(got, "[{\"count\":2000}]"), "count %s", got);
        if (r.warning_count) printf("server warning: %s\n", r.warnings[0]);
        free(got);
        kp_cql_response_free(&r);
    } else {
        CHECK(0, "count: %s", err.message);
    }
}

/* ---- re-prepare, errors, reserved words ------------------------------------------------------------ */

static void test_unprepared_statements_are_prepared_again(kp_cql_client *c)
{
    kp_error err;
    run(c, "CREATE TABLE " KEYSPACE ".again (id int PRIMARY KEY, v text)");
    const kp_cql_prepared *insert;
    if (kp_cql_prepare(c, "INSERT INTO " KEYSPACE ".again (id, v) VALUES (?, ?)", &insert, &err)) {
        CHECK(0, "%s", err.message);
        return;
    }
    cJSON *args = row_from_text("[1, \"before\"]");
    kp_cql_values v = {0};
    kp_cql_values_bind(kp_cql_prepared_variables(insert), args, &v, &err);
    CHECK(kp_cql_execute(c, insert, &v, NULL, NULL, &err) == 0, "%s", err.message);
    /* dropping the table evicts its prepared statements on the server */
    run(c, "DROP TABLE " KEYSPACE ".again");
    run(c, "CREATE TABLE " KEYSPACE ".again (id int PRIMARY KEY, v text)");
    unsigned long before = kp_cql_client_stats(c).reprepares;
    int rc = kp_cql_execute(c, insert, &v, NULL, NULL, &err);
    CHECK(rc == 0, "after DROP/CREATE: %s", err.message);
    CHECK(kp_cql_client_stats(c).reprepares == before + 1, "the server did not say Unprepared (%lu re-prepares)",
          kp_cql_client_stats(c).reprepares - before);
    kp_cql_response r;
    if (kp_cql_query(c, "SELECT v FROM " KEYSPACE ".again WHERE id = 1", NULL, NULL, &r, &err) == 0) {
        CHECK(r.row_count == 1, "%d rows", r.row_count);
        kp_cql_response_free(&r);
    }
    kp_cql_values_free(&v);
    cJSON_Delete(args);
}

static void test_errors_carry_the_message_and_code(kp_cql_client *c)
{
    kp_error err;
    int rc = kp_cql_query(c, "SELEC * FROM " KEYSPACE ".every_type", NULL, NULL, NULL, &err);
    CHECK(rc == -1 && kp_cql_last_error_code(c) == KP_CQL_ERR_SYNTAX, "rc %d code 0x%04x", rc,
          (unsigned)kp_cql_last_error_code(c));
    CHECK(err.code == KP_ERR_TARGET, "code %d", err.code);
    CHECK(strstr(err.message, "Syntax error") && strstr(err.message, "SELEC"), "%s", err.message);
    printf("syntax error: %s\n", err.message);
    rc = kp_cql_query(c, "SELECT * FROM " KEYSPACE ".no_such_table", NULL, NULL, NULL, &err);
    CHECK(rc == -1 && kp_cql_last_error_code(c) == KP_CQL_ERR_INVALID, "code 0x%04x", (unsigned)kp_cql_last_error_code(c));
    printf("invalid: %s\n", err.message);
    rc = kp_cql_query(c, "CREATE KEYSPACE " KEYSPACE " WITH replication = {'class': 'SimpleStrategy', "
                         "'replication_factor': 1}", NULL, NULL, NULL, &err);
    CHECK(rc == -1 && kp_cql_last_error_code(c) == KP_CQL_ERR_ALREADY_EXISTS, "code 0x%04x",
          (unsigned)kp_cql_last_error_code(c));
    printf("already exists: %s\n", err.message);
    const kp_cql_prepared *p;
    rc = kp_cql_prepare(c, "INSERT INTO " KEYSPACE ".every_type (id, nope) VALUES (?, ?)", &p, &err);
    CHECK(rc == -1, "prepared a bad statement");
    /* a value of the wrong size for its type: Cassandra refuses it, we report it */
    kp_cql_values v = {0};
    static const uint8_t three[] = {1, 2, 3};
    kp_cql_values_add_bytes(&v, NULL, three, 3, &err);
    if (kp_cql_prepare(c, "SELECT * FROM " KEYSPACE ".every_type WHERE id = ?", &p, &err) == 0) {
        rc = kp_cql_execute(c, p, &v, NULL, NULL, &err);
        CHECK(rc == -1 && kp_cql_last_error_code(c) == KP_CQL_ERR_INVALID, "code 0x%04x: %s",
              (unsigned)kp_cql_last_error_code(c), err.message);
        printf("bad value: %s\n", err.message);
    }
    kp_cql_values_free(&v);
    /* a statement with a password literal never shows it in the message */
    rc = kp_cql_query(c, "CREATE ROLE keyplan_nobody WITH PASSWORD = 'hunter2-secret' AND LOGIN = maybe", NULL, NULL,
                      NULL, &err);
    CHECK(rc == -1 && !strstr(err.message, "hunter2"), "%s", err.message);
}

static void test_reserved_words_match_the_server(kp_cql_client *c)
{
    static const char *const words[] = {
        "add", "allow", "alter", "and", "apply", "asc", "authorize", "batch", "begin", "by", "columnfamily", "create",
        "default", "delete", "desc", "describe", "drop", "entries", "execute", "for", "from", "full", "grant", "if",
        "in", "index", "infinity", "insert", "into", "is", "keyspace", "limit", "materialized", "mbean", "mbeans",
        "modify", "nan", "norecursive", "not", "null", "of", "on", "or", "order", "primary", "rename", "replace",
        "restrict", "revoke", "schema", "select", "set", "table", "to", "token", "truncate", "unlogged", "unrestrict",
        "unset", "update", "use", "using", "view", "where", "with",
        /* words that look reserved but are not (or are new) */
        "key", "ttl", "count", "text", "type", "user", "role", "json", "as", "all", "between", "like", "masked",
        "unmask", "select_masked", "ann", "contains", "distinct", "exists", "function", "keys", "list", "map",
        "static", "timestamp", "values", "writetime", "maxwritetime", "vector", "duration", "frozen", "tuple",
        "trigger", "custom", "login", "superuser", "password", "access", "datacenters", "cidrs", "hashed", "ascii",
        "bigint", "blob", "boolean", "counter", "date", "time", "uuid", "timeuuid", "varchar", "varint", "inet",
        "smallint", "tinyint", "decimal", "double", "float", "int", "filtering", "clustering", "compact", "storage",
        "group", "per", "partition", "options", "keyspaces", "permission", "permissions", "roles", "users",
    };
    int mismatches = 0, extra = 0;
    for (size_t i = 0; i < sizeof words / sizeof words[0]; i++) {
        char cql[256];
        snprintf(cql, sizeof cql, "SELECT release_version AS %s FROM system.local", words[i]);
        kp_error err;
        int rc = kp_cql_query(c, cql, NULL, NULL, NULL, &err);
        int server_reserved = rc != 0;
        /* keyplan quotes Cassandra's own ReservedKeywords list, which is wider than what the
         * grammar refuses: quoting too much is harmless, too little breaks a statement */
        if (server_reserved && !kp_cql_is_reserved(words[i])) {
            mismatches++;
            fprintf(stderr, "reserved word mismatch: the server refuses '%s' bare, keyplan leaves it bare\n",
                    words[i]);
        } else if (!server_reserved && kp_cql_is_reserved(words[i])) {
            printf("%s'%s'", extra++ ? ", " : "quoted by keyplan although the grammar accepts them bare: ", words[i]);
        }
        /* and a quoted identifier always works */
        char quoted[128];
        kp_cql_quote_identifier(words[i], quoted, sizeof quoted);
        snprintf(cql, sizeof cql, "SELECT release_version AS %s FROM system.local", quoted);
        CHECK(kp_cql_query(c, cql, NULL, NULL, NULL, &err) == 0, "%s: %s", quoted, err.message);
    }
    if (extra) printf("\n");
    CHECK(mismatches == 0, "%d reserved-word mismatches", mismatches);
}

static void test_authentication(void)
{
    kp_error err;
    kp_cql_client *c = NULL;
    kp_cql_config cfg = config();
    int rc = kp_cql_client_open(&cfg, &c, &err);
    CHECK(rc == 0, "login as %s: %s", user, err.message);
    kp_cql_client_close(c);
    cfg.password = "wrong-password-xyz";
    rc = kp_cql_client_open(&cfg, &c, &err);
    CHECK(rc == -1 && err.code == KP_ERR_TARGET, "a wrong password was accepted");
    CHECK(!strstr(err.message, "wrong-password-xyz"), "the password is in: %s", err.message);
    CHECK(strstr(err.message, "CASSANDRA_PASSWORD") != NULL, "%s", err.message);
    printf("bad credentials: %s\n", err.message);
    cfg.username = NULL;
    cfg.password = NULL;
    unsetenv("CASSANDRA_USERNAME");
    unsetenv("CASSANDRA_PASSWORD");
    rc = kp_cql_client_open(&cfg, &c, &err);
    CHECK(rc == -1 && strstr(err.message, "CASSANDRA_USERNAME"), "%s", rc ? err.message : "accepted");
    printf("no credentials: %s\n", err.message);
}

static int bench(int rows, int in_flight, int connections)
{
    kp_error err;
    kp_cql_client *c;
    kp_cql_config cfg = config();
    cfg.max_in_flight = in_flight;
    cfg.connections = connections;
    if (kp_cql_client_open(&cfg, &c, &err)) {
        fprintf(stderr, "%s\n", err.message);
        return strstr(err.message, "cannot connect") ? 77 : 1;
    }
    run(c, "DROP KEYSPACE IF EXISTS " KEYSPACE "_bench");
    run(c, "CREATE KEYSPACE " KEYSPACE "_bench WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}");
    run(c, "CREATE TABLE " KEYSPACE "_bench.items (p int, n int, v text, d decimal, PRIMARY KEY (p, n))");
    const kp_cql_prepared *insert;
    if (kp_cql_prepare(c, "INSERT INTO " KEYSPACE "_bench.items (p, n, v, d) VALUES (?, ?, ?, ?)", &insert, &err)) {
        fprintf(stderr, "%s\n", err.message);
        return 1;
    }
    double seconds;
    int acked = insert_async(c, insert, 1000, rows, in_flight, &seconds);
    printf("bench: %d rows, %d in flight, %d connection%s: %.2f s, %.0f rows/s\n", acked, in_flight, connections,
           connections == 1 ? "" : "s", seconds, acked / seconds);
    run(c, "DROP KEYSPACE IF EXISTS " KEYSPACE "_bench");
    kp_cql_client_close(c);
    return failures ? 1 : 0;
}

int main(int argc, char **argv)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    int bench_rows = 0, in_flight = 32, connections = 1;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--target") && i + 1 < argc) target = argv[++i];
        else if (!strcmp(argv[i], "--auth")) use_auth = 1;
        else if (!strcmp(argv[i], "--bench") && i + 1 < argc) bench_rows = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--in-flight") && i + 1 < argc) in_flight = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--connections") && i + 1 < argc) connections = atoi(argv[++i]);
        else {
            fprintf(stderr, "usage: %s [--target HOST:PORT] [--auth] [--bench N [--in-flight K] [--connections C]]\n",
                    argv[0]);
            return 2;
        }
    }
    if (use_auth) {
        if (getenv("CASSANDRA_USERNAME")) user = getenv("CASSANDRA_USERNAME");
        if (getenv("CASSANDRA_PASSWORD")) password = getenv("CASSANDRA_PASSWORD");
    }
    if (bench_rows > 0) return bench(bench_rows, in_flight, connections);

    kp_error err;
    kp_cql_client *c;
    kp_cql_config cfg = config();
    cfg.connections = 2;
    if (kp_cql_client_open(&cfg, &c, &err)) {
        /* 77 (skipped) only when nothing answers; a node that refuses us is a failure */
        int unreachable = strstr(err.message, "cannot connect") != NULL;
        fprintf(stderr, "%s: %s%s\n", unreachable ? "no Cassandra" : "FAIL", err.message,
                !unreachable && !use_auth && strstr(err.message, "requires authentication") ? " (run with --auth)" : "");
        return unreachable ? 77 : 1;
    }
    printf("connected: %s\n", kp_cql_client_describe(c));
    kp_cql_response r;
    if (kp_cql_query(c, "SELECT release_version FROM system.local", NULL, NULL, &r, &err) == 0) {
        printf("Cassandra %s\n", cJSON_GetObjectItem(r.rows->child, "release_version")->valuestring);
        kp_cql_response_free(&r);
    }
    test_options_over_a_raw_socket();
    run(c, "DROP KEYSPACE IF EXISTS " KEYSPACE);
    run(c, "CREATE KEYSPACE " KEYSPACE " WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}");
    test_every_type(c);
    test_paging(c);
    test_batches(c);
    test_async(c);
    test_unprepared_statements_are_prepared_again(c);
    test_errors_carry_the_message_and_code(c);
    test_reserved_words_match_the_server(c);
    CHECK(kp_cql_use_keyspace(c, KEYSPACE, &err) == 0, "%s", err.message);
    CHECK(kp_cql_query(c, "SELECT id FROM every_type WHERE id = 1", NULL, NULL, NULL, &err) == 0, "USE: %s",
          err.message);
    run(c, "DROP KEYSPACE IF EXISTS " KEYSPACE);
    kp_cql_stats stats = kp_cql_client_stats(c);
    printf("client: %lu requests, %lu retries, %lu re-prepares, %lu timeouts, %lu reconnects\n", stats.requests,
           stats.retries, stats.reprepares, stats.timeouts, stats.reconnects);
    kp_cql_client_close(c);
    if (use_auth) test_authentication();
    printf("%s\n", failures ? "FAILED" : "passed");
    return failures ? 1 : 0;
}
