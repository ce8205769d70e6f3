/*
 * test_security.c — the security policies of issue #8 that need no server: which
 * endpoints each client accepts without TLS verification, what --insecure changes,
 * how secrets are kept out of messages, and that hostile names become quoted CQL
 * identifiers (never CQL text) and rejected MongoDB field names.
 *
 * The live counterparts are tests/integration/tls.sh (a self-signed TLS server on a
 * non-loopback address refused without --insecure), secrets.sh and force.sh.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "backends/cassandra/cql_client.h"
#include "backends/cassandra/cql_codec.h"
#include "backends/dynamodb/client.h"
#include "backends/mongodb/client.h"
#include "support.h"

/* ---- DynamoDB ---------------------------------------------------------------------------- */

static int ddb_resolve(const char *endpoint, int is_insecure, kp_ddb_settings *s, kp_error *err)
{
    setenv("AWS_ACCESS_KEY_ID", "AKIAKPSECUNIT0000001", 1);
    setenv("AWS_SECRET_ACCESS_KEY", "kpsecUNITsecret0000000000", 1);
    kp_ddb_config cfg = {.endpoint = endpoint, .region = "eu-west-1", .is_insecure = is_insecure};
    return kp_ddb_settings_resolve(&cfg, s, err);
}

static void test_dynamodb_refuses_plain_http_to_a_remote_host_unless_insecure(void **state)
{
    (void)state;
    kp_ddb_settings s;
    kp_error err;
    assert_int_equal(ddb_resolve("http://192.0.2.1:8000", 0, &s, &err), -1);
    assert_int_equal(err.code, KP_ERR_USAGE);
    assert_int_equal(ddb_resolve("http://192.0.2.1:8000", 1, &s, &err), 0);
    kp_ddb_settings_clear(&s);
    assert_int_equal(ddb_resolve("https://dynamodb.eu-west-1.amazonaws.com", 0, &s, &err), 0);
    assert_true(s.is_https);
    assert_false(s.is_loopback);
    kp_ddb_settings_clear(&s);
    /* look-alikes of loopback are remote */
    assert_int_equal(ddb_resolve("http://127.0.0.1.nip.io:8000", 0, &s, &err), -1);
    assert_int_equal(ddb_resolve("http://localhost.example.com:8000", 0, &s, &err), -1);
    assert_int_equal(ddb_resolve("http://127.0.0.1:18000", 0, &s, &err), 0);
    assert_true(s.is_loopback);
    kp_ddb_settings_clear(&s);
}

static void test_dynamodb_endpoint_with_user_information_is_refused_without_echoing_it(void **state)
{
    (void)state;
    kp_ddb_settings s;
    kp_error err;
    assert_int_equal(ddb_resolve("https://AKIA:kpsecUNITpassword@dynamodb.eu-west-1.amazonaws.com", 0, &s, &err), -1);
    assert_null(strstr(err.message, "kpsecUNITpassword"));
}

/* ---- MongoDB ------------------------------------------------------------------------------- */

static int mongo_check(const char *text, int is_insecure, kp_error *err)
{
    mongoc_init();
    bson_error_t e;
    mongoc_uri_t *uri = mongoc_uri_new_with_error(text, &e);
    assert_non_null(uri);
    kp_error_clear(err);
    int rc = kp_mg_uri_check(uri, is_insecure, "(uri)", err);
    mongoc_uri_destroy(uri);
    return rc;
}

static void test_mongodb_refuses_plain_text_to_a_remote_host_unless_tls_or_insecure(void **state)
{
    (void)state;
    kp_error err;
    assert_int_equal(mongo_check("mongodb://db.example.com:27017/", 0, &err), -1);
    assert_int_equal(err.code, KP_ERR_USAGE);
    assert_non_null(strstr(err.message, "db.example.com"));
    assert_non_null(strstr(err.message, "tls=true"));
    assert_int_equal(mongo_check("mongodb://127.0.0.1:28017,db.example.com:27017/", 0, &err), -1);
    assert_int_equal(mongo_check("mongodb://db.example.com:27017/?tls=true", 0, &err), 0);
    assert_int_equal(mongo_check("mongodb://db.example.com:27017/", 1, &err), 0);
    assert_int_equal(mongo_check("mongodb://127.0.0.1:28017/", 0, &err), 0);
    assert_int_equal(mongo_check("mongodb://localhost:28017/", 0, &err), 0);
    assert_int_equal(mongo_check("mongodb://127.0.0.1.nip.io:28017/", 0, &err), -1);
}

static void test_mongodb_uri_redaction_hides_every_password_shape(void **state)
{
    (void)state;
    const char *uris[] = {
        "mongodb://u:kpsecPW@host:27017/",
        "mongodb://u:a/kpsecPW@host:27017/",          /* '/' in the password (malformed, echoed in errors) */
        "mongodb://u:kpsecPW@@host/",
        "mongodb://u:kp?secPW@host/?tls=true",
        "mongodb+srv://u:kpsecPW@cluster.example.com/db",
    };
    for (size_t i = 0; i < sizeof uris / sizeof *uris; i++) {
        char buf[256];
        kp_mg_redact_uri(uris[i], buf, sizeof buf);
        assert_null(strstr(buf, "secPW"));
        assert_non_null(strstr(buf, "****"));
    }
}

/* ---- Cassandra --------------------------------------------------------------------------------- */

static void test_cassandra_refuses_plain_tcp_to_a_remote_host_unless_tls_or_insecure(void **state)
{
    (void)state;
    kp_cql_settings s;
    kp_error err;
    kp_cql_config plain = {.target = "192.0.2.1:9042"};
    assert_int_equal(kp_cql_settings_resolve(&plain, &s, &err), -1);
    assert_int_equal(err.code, KP_ERR_USAGE);
    kp_cql_config tls = {.target = "tls://192.0.2.1:9142"};
    assert_int_equal(kp_cql_settings_resolve(&tls, &s, &err), 0);
    assert_true(s.use_tls);
    kp_cql_settings_clear(&s);
    kp_cql_config insecure = {.target = "192.0.2.1:9042", .is_insecure = 1};
    assert_int_equal(kp_cql_settings_resolve(&insecure, &s, &err), 0);
    kp_cql_settings_clear(&s);
    kp_cql_config userinfo = {.target = "kpsec:kpsecUNITpw@127.0.0.1:19042"};
    assert_int_equal(kp_cql_settings_resolve(&userinfo, &s, &err), -1);
    assert_null(strstr(err.message, "kpsecUNITpw"));
}

/* Hostile model names: quotes, semicolons, keywords, spaces. Each must come out as one
 * identifier token that CQL reads back as exactly the name — never as CQL text. */
static void test_cql_identifiers_with_quotes_semicolons_and_keywords_are_one_quoted_token(void **state)
{
    (void)state;
    static const struct { const char *name, *cql; } cases[] = {
        {"workspace_id", "workspace_id"},
        {"select", "\"select\""},
        {"KEYSPACE", "\"KEYSPACE\""},
        {"a\"b", "\"a\"\"b\""},
        {"x; DROP KEYSPACE ks; --", "\"x; DROP KEYSPACE ks; --\""},
        {"\"); DROP TABLE t; --", "\"\"\"); DROP TABLE t; --\""},
        {"Name With Spaces", "\"Name With Spaces\""},
        {"9lives", "\"9lives\""},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        char out[128];
        size_t n = kp_cql_quote_identifier(cases[i].name, out, sizeof out);
        assert_int_equal(n, strlen(cases[i].cql));
        assert_string_equal(out, cases[i].cql);
        /* a quoted identifier has no bare '"' inside: every inner quote is doubled */
        if (out[0] == '"') {
            for (size_t k = 1; k + 1 < n; k++)
                if (out[k] == '"') { assert_int_equal(out[k + 1], '"'); k++; }
        }
    }
    /* snake_case only ever yields letters, digits and '_' */
    char snake[128];
    kp_cql_snake_case("x\"; DROP KEYSPACE ks; --", snake, sizeof snake);
    for (const char *p = snake; *p; p++)
        assert_true((*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') || *p == '_');
    /* truncation still yields a terminated string and reports the length needed */
    char small[4];
    assert_int_equal(kp_cql_quote_identifier("select", small, sizeof small), 8);
    assert_int_equal(strlen(small), 3);
}

/* Through the binary: a model naming attributes with CQL keywords gets a schema where
 * each is a quoted identifier; a `$` or dotted attribute name is refused at its key. */
static void test_cql_keyword_names_are_quoted_in_the_emitted_schema(void **state)
{
    (void)state;
    char dir[] = "/tmp/keyplan-security.XXXXXX";
    assert_non_null(mkdtemp(dir));
    char args[512], *out = NULL;
    snprintf(args, sizeof args, "emit '%s/tests/fixtures/models/cql-keywords.json' --db cassandra --out '%s'",
             KP_SOURCE_DIR, dir);
    assert_int_equal(kp_test_run(args, &out), 0);
    free(out);
    char path[600];
    snprintf(path, sizeof path, "%s/cassandra/schema.cql", dir);
    char *cql = kp_test_read_file(path, NULL);
    assert_non_null(cql);
    assert_non_null(strstr(cql, "\"select\" text"));
    assert_non_null(strstr(cql, "\"from\" text"));
    assert_non_null(strstr(cql, "\"where\" bigint"));
    assert_non_null(strstr(cql, "PRIMARY KEY ((\"select\"))"));
    assert_null(strstr(cql, " select text"));
    free(cql);
    snprintf(args, sizeof args, "rm -rf '%s'", dir);
    assert_int_equal(system(args), 0);
}

static void test_mongodb_operator_like_field_names_are_refused_at_their_key(void **state)
{
    (void)state;
    char args[512], *out = NULL;
    snprintf(args, sizeof args, "advise '%s/tests/fixtures/models/mongo-dollar-field.json' --db mongodb", KP_SOURCE_DIR);
    assert_int_equal(kp_test_run(args, &out), 2);
    assert_non_null(strstr(out, "mongo-dollar-field.json:6:"));
    assert_non_null(strstr(out, "attribute name \"$where\" is not valid"));
    free(out);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_dynamodb_refuses_plain_http_to_a_remote_host_unless_insecure),
        cmocka_unit_test(test_dynamodb_endpoint_with_user_information_is_refused_without_echoing_it),
        cmocka_unit_test(test_mongodb_refuses_plain_text_to_a_remote_host_unless_tls_or_insecure),
        cmocka_unit_test(test_mongodb_uri_redaction_hides_every_password_shape),
        cmocka_unit_test(test_cassandra_refuses_plain_tcp_to_a_remote_host_unless_tls_or_insecure),
        cmocka_unit_test(test_cql_identifiers_with_quotes_semicolons_and_keywords_are_one_quoted_token),
        cmocka_unit_test(test_cql_keyword_names_are_quoted_in_the_emitted_schema),
        cmocka_unit_test(test_mongodb_operator_like_field_names_are_refused_at_their_key),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
