/*
 * test_ddb_client.c — the DynamoDB HTTP client without a database: where endpoint,
 * region and credentials come from (environment and temporary ~/.aws files),
 * loopback detection, the backoff schedule, error bodies, redaction, the
 * UnprocessedItems loop driven through its handler, and — against a tiny scripted
 * HTTP responder forked from the test — retries, error types, signing headers,
 * callbacks, cancellation, and that no credential ever appears in what the client
 * returns or prints.
 */
#include <errno.h>
#include <fcntl.h>
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
#include <strings.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "backends/dynamodb/client.h"
#include "backends/dynamodb/client_internal.h"

#define FAKE_SECRET "kpSECRETfake123"
#define FAKE_TOKEN "kpTOKENfake456-very-long-session-token-value"
#define FAKE_KEY_ID "AKIDKEYPLANTEST"

static char temp_dir[256];

/* ---- environment helpers -------------------------------------------------------------- */

static void clear_aws_env(void)
{
    static const char *const names[] = {
        "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE", "AWS_REGION",
        "AWS_DEFAULT_REGION", "AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_DYNAMODB", "AWS_CONFIG_FILE",
        "AWS_SHARED_CREDENTIALS_FILE", "AWS_IGNORE_CONFIGURED_ENDPOINT_URLS", NULL
    };
    for (size_t i = 0; names[i]; i++) unsetenv(names[i]);
    setenv("HOME", temp_dir, 1);   /* never the developer's own ~/.aws */
}

static char *write_temp(const char *name, const char *text)
{
    static char path[512];
    snprintf(path, sizeof path, "%s/%s", temp_dir, name);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
    return path;
}

static int setup_group(void **state)
{
    (void)state;
    snprintf(temp_dir, sizeof temp_dir, "/tmp/kp-ddb-test-XXXXXX");
    if (!mkdtemp(temp_dir)) return -1;
    char aws[300];
    snprintf(aws, sizeof aws, "%s/.aws", temp_dir);
    if (mkdir(aws, 0700) != 0 && errno != EEXIST) return -1;
    return 0;
}

static int teardown_group(void **state)
{
    (void)state;
    char command[400];
    snprintf(command, sizeof command, "rm -rf '%s'", temp_dir);
    return system(command) == 0 ? 0 : -1;
}

static int resolve(const kp_ddb_config *cfg, kp_ddb_settings *s, kp_error *err)
{
    memset(err, 0, sizeof *err);
    return kp_ddb_settings_resolve(cfg, s, err);
}

static void assert_contains(const char *text, const char *fragment)
{
    if (!strstr(text, fragment)) fail_msg("\"%s\" lacks \"%s\"", text, fragment);
}

static void assert_lacks(const char *text, const char *fragment)
{
    if (strstr(text, fragment)) fail_msg("\"%s\" contains \"%s\"", text, fragment);
}

/* ---- resolution ---------------------------------------------------------------------------- */

static void test_endpoint_comes_from_target_then_service_env_then_env_then_region(void **state)
{
    (void)state;
    clear_aws_env();
    kp_ddb_settings s;
    kp_error err;
    kp_ddb_config cfg = { .endpoint = "http://127.0.0.1:18000" };
    setenv("AWS_ENDPOINT_URL_DYNAMODB", "http://localhost:8001", 1);
    setenv("AWS_ENDPOINT_URL", "http://localhost:8002", 1);
    assert_int_equal(resolve(&cfg, &s, &err), 0);
    assert_string_equal(s.endpoint, "http://127.0.0.1:18000");
    assert_string_equal(s.endpoint_source, "--target");
    assert_true(s.is_loopback);
    assert_false(s.is_https);
    kp_ddb_settings_clear(&s);

    assert_int_equal(resolve(NULL, &s, &err), 0);
    assert_string_equal(s.endpoint, "http://localhost:8001");
    assert_string_equal(s.endpoint_source, "AWS_ENDPOINT_URL_DYNAMODB");
    kp_ddb_settings_clear(&s);

    unsetenv("AWS_ENDPOINT_URL_DYNAMODB");
    assert_int_equal(resolve(NULL, &s, &err), 0);
    assert_string_equal(s.endpoint, "http://localhost:8002");
    assert_string_equal(s.endpoint_source, "AWS_ENDPOINT_URL");
    kp_ddb_settings_clear(&s);

    setenv("AWS_IGNORE_CONFIGURED_ENDPOINT_URLS", "true", 1);
    setenv("AWS_REGION", "eu-west-1", 1);
    setenv("AWS_ACCESS_KEY_ID", FAKE_KEY_ID, 1);
    setenv("AWS_SECRET_ACCESS_KEY", FAKE_SECRET, 1);
    assert_int_equal(resolve(NULL, &s, &err), 0);
    assert_string_equal(s.endpoint, "https://dynamodb.eu-west-1.amazonaws.com");
    assert_true(s.is_https);
    assert_false(s.is_loopback);
    kp_ddb_settings_clear(&s);

    setenv("AWS_REGION", "cn-north-1", 1);
    assert_int_equal(resolve(NULL, &s, &err), 0);
    assert_string_equal(s.endpoint, "https://dynamodb.cn-north-1.amazonaws.com.cn");
    kp_ddb_settings_clear(&s);
}

static void test_region_comes_from_env_then_the_profile_in_the_config_file_then_default(void **state)
{
    (void)state;
    clear_aws_env();
    kp_ddb_config cfg = { .endpoint = "http://127.0.0.1:18000" };
    kp_ddb_settings s;
    kp_error err;
    assert_int_equal(resolve(&cfg, &s, &err), 0);
    assert_string_equal(s.region, "us-east-1");
    assert_string_equal(s.region_source, "the default");
    kp_ddb_settings_clear(&s);

    /* ~/.aws/config under HOME: [default] and [profile dev]; nested settings ignored */
    write_temp(".aws/config", "[default]\nregion = eu-central-1\n\n"
                              "[profile dev]\n# a comment\ns3 =\n  region = not-this-one\nregion=ap-south-1\n");
    assert_int_equal(resolve(&cfg, &s, &err), 0);
    assert_string_equal(s.region, "eu-central-1");
    assert_contains(s.region_source, "profile 'default'");
    kp_ddb_settings_clear(&s);

    setenv("AWS_PROFILE", "dev", 1);
    assert_int_equal(resolve(&cfg, &s, &err), 0);
    assert_string_equal(s.region, "ap-south-1");
    kp_ddb_settings_clear(&s);

    setenv("AWS_DEFAULT_REGION", "us-west-2", 1);
    assert_int_equal(resolve(&cfg, &s, &err), 0);
    assert_string_equal(s.region, "us-west-2");
    assert_string_equal(s.region_source, "AWS_DEFAULT_REGION");
    kp_ddb_settings_clear(&s);

    setenv("AWS_REGION", "sa-east-1", 1);
    assert_int_equal(resolve(&cfg, &s, &err), 0);
    assert_string_equal(s.region, "sa-east-1");
    kp_ddb_settings_clear(&s);

    kp_ddb_config explicit_region = { .endpoint = "http://127.0.0.1:18000", .region = "eu-north-1" };
    assert_int_equal(resolve(&explicit_region, &s, &err), 0);
    assert_string_equal(s.region, "eu-north-1");
    kp_ddb_settings_clear(&s);

    setenv("AWS_REGION", "eu-west-1:evil", 1);
    assert_int_equal(resolve(&cfg, &s, &err), -1);
    assert_int_equal(err.code, KP_ERR_USAGE);
    assert_contains(err.message, "is not a region name");
    unlink(write_temp(".aws/config", ""));
}

static void test_credentials_come_from_env_with_session_token(void **state)
{
    (void)state;
    clear_aws_env();
    setenv("AWS_ACCESS_KEY_ID", FAKE_KEY_ID, 1);
    setenv("AWS_SECRET_ACCESS_KEY", FAKE_SECRET, 1);
    setenv("AWS_SESSION_TOKEN", FAKE_TOKEN, 1);
    setenv("AWS_REGION", "eu-west-1", 1);
    kp_ddb_settings s;
    kp_error err;
    assert_int_equal(resolve(NULL, &s, &err), 0);
    assert_string_equal(s.access_key_id, FAKE_KEY_ID);
    assert_string_equal(s.secret_access_key, FAKE_SECRET);
    assert_string_equal(s.session_token, FAKE_TOKEN);
    assert_string_equal(s.credential_source, "the environment (AWS_ACCESS_KEY_ID)");
    kp_ddb_settings_clear(&s);
    assert_null(s.secret_access_key);

    unsetenv("AWS_SECRET_ACCESS_KEY");
    assert_int_equal(resolve(NULL, &s, &err), -1);
    assert_int_equal(err.code, KP_ERR_USAGE);
    assert_contains(err.message, "AWS_ACCESS_KEY_ID is set but AWS_SECRET_ACCESS_KEY is not");
    assert_int_equal(kp_error_exit_code(&err), 2); /* bad input, not server trouble */
}

static void test_credentials_come_from_the_profile_in_the_shared_files(void **state)
{
    (void)state;
    clear_aws_env();
    char *path = write_temp("creds.ini",
                            "; shared credentials\n[default]\naws_access_key_id = DEFAULTID\n"
                            "aws_secret_access_key = defaultsecret\n\n"
                            "[dev]\r\nAWS_ACCESS_KEY_ID=DEVID\r\naws_secret_access_key = " FAKE_SECRET "\r\n"
                            "aws_session_token = " FAKE_TOKEN "\r\n");
    setenv("AWS_SHARED_CREDENTIALS_FILE", path, 1);
    setenv("AWS_REGION", "eu-west-1", 1);
    kp_ddb_settings s;
    kp_error err;
    assert_int_equal(resolve(NULL, &s, &err), 0);
    assert_string_equal(s.access_key_id, "DEFAULTID");
    assert_null(s.session_token);
    assert_contains(s.credential_source, "profile 'default' in ");
    kp_ddb_settings_clear(&s);

    setenv("AWS_PROFILE", "dev", 1);
    assert_int_equal(resolve(NULL, &s, &err), 0);
    assert_string_equal(s.access_key_id, "DEVID");
    assert_string_equal(s.secret_access_key, FAKE_SECRET);
    assert_string_equal(s.session_token, FAKE_TOKEN);
    assert_contains(s.credential_source, "creds.ini");
    kp_ddb_settings_clear(&s);

    /* environment keys win over AWS_PROFILE; an explicit profile wins over both */
    setenv("AWS_ACCESS_KEY_ID", "ENVID", 1);
    setenv("AWS_SECRET_ACCESS_KEY", "envsecret", 1);
    assert_int_equal(resolve(NULL, &s, &err), 0);
    assert_string_equal(s.access_key_id, "ENVID");
    kp_ddb_settings_clear(&s);
    kp_ddb_config cfg = { .profile = "dev" };
    assert_int_equal(resolve(&cfg, &s, &err), 0);
    assert_string_equal(s.access_key_id, "DEVID");
    kp_ddb_settings_clear(&s);

    /* keys in the config file's [profile NAME] section also count */
    clear_aws_env();
    setenv("AWS_CONFIG_FILE", write_temp("config.ini", "[profile ops]\nregion = eu-west-3\n"
                                                      "aws_access_key_id = OPSID\naws_secret_access_key = opssecret\n"),
           1);
    setenv("AWS_PROFILE", "ops", 1);
    assert_int_equal(resolve(NULL, &s, &err), 0);
    assert_string_equal(s.access_key_id, "OPSID");
    assert_string_equal(s.region, "eu-west-3");
    assert_string_equal(s.endpoint, "https://dynamodb.eu-west-3.amazonaws.com");
    kp_ddb_settings_clear(&s);
}

static void test_loopback_endpoints_get_placeholder_credentials(void **state)
{
    (void)state;
    clear_aws_env();
    kp_ddb_config cfg = { .endpoint = "http://localhost:18000" };
    kp_ddb_settings s;
    kp_error err;
    assert_int_equal(resolve(&cfg, &s, &err), 0);
    assert_string_equal(s.access_key_id, "keyplan");
    assert_string_equal(s.secret_access_key, "keyplan");
    assert_null(s.session_token);
    assert_contains(s.credential_source, "placeholder");
    kp_ddb_settings_clear(&s);
}

static void test_a_remote_endpoint_without_credentials_says_what_to_set(void **state)
{
    (void)state;
    clear_aws_env();
    kp_ddb_settings s;
    kp_error err;
    assert_int_equal(resolve(NULL, &s, &err), -1);
    assert_int_equal(err.code, KP_ERR_USAGE);
    assert_int_equal(kp_error_exit_code(&err), 2); /* bad input: nothing was sent */
    assert_contains(err.message, "https://dynamodb.us-east-1.amazonaws.com");
    assert_contains(err.message, "AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY");
    assert_contains(err.message, "AWS_PROFILE");
    assert_contains(err.message, "/.aws/credentials");

    kp_ddb_config cfg = { .endpoint = "https://dynamodb.internal.example.com" };
    assert_int_equal(resolve(&cfg, &s, &err), -1);
    assert_int_equal(err.code, KP_ERR_USAGE);

    /* an SSO profile: say how to export its credentials */
    setenv("AWS_CONFIG_FILE", write_temp("sso.ini", "[profile corp]\nsso_session = corp\nsso_account_id = 1\n"), 1);
    setenv("AWS_PROFILE", "corp", 1);
    assert_int_equal(resolve(NULL, &s, &err), -1);
    assert_contains(err.message, "aws configure export-credentials --profile corp");
}

static void test_bad_endpoints_are_usage_errors_that_never_echo_a_password(void **state)
{
    (void)state;
    clear_aws_env();
    kp_ddb_settings s;
    kp_error err;
    kp_ddb_config cfg = { .endpoint = "http://dynamodb.internal.example.com:8000" };
    assert_int_equal(resolve(&cfg, &s, &err), -1);
    assert_int_equal(err.code, KP_ERR_USAGE);
    assert_contains(err.message, "pass --insecure");
    cfg.is_insecure = 1;
    setenv("AWS_ACCESS_KEY_ID", FAKE_KEY_ID, 1);
    setenv("AWS_SECRET_ACCESS_KEY", FAKE_SECRET, 1);
    assert_int_equal(resolve(&cfg, &s, &err), 0);
    kp_ddb_settings_clear(&s);

    kp_ddb_config with_password = { .endpoint = "https://me:" FAKE_SECRET "@dynamodb.example.com" };
    assert_int_equal(resolve(&with_password, &s, &err), -1);
    assert_int_equal(err.code, KP_ERR_USAGE);
    assert_contains(err.message, "user information");
    assert_lacks(err.message, FAKE_SECRET);

    kp_ddb_config ftp = { .endpoint = "ftp://127.0.0.1/" };
    assert_int_equal(resolve(&ftp, &s, &err), -1);
    assert_contains(err.message, "must start with http:// or https://");
    kp_ddb_config junk = { .endpoint = "not a url" };
    assert_int_equal(resolve(&junk, &s, &err), -1);
    assert_int_equal(err.code, KP_ERR_USAGE);
}

static void test_loopback_hosts_are_recognised(void **state)
{
    (void)state;
    static const struct { const char *url; int expected; } cases[] = {
        { "http://127.0.0.1:18000", 1 },      { "http://127.8.9.10", 1 },
        { "http://localhost:18000", 1 },      { "http://LOCALHOST", 1 },
        { "http://dynalite.localhost:1", 1 }, { "http://[::1]:18000", 1 },
        { "http://[::ffff:127.0.0.1]:80", 1 }, { "http://128.0.0.1", 0 },
        { "http://10.0.0.1:8000", 0 },        { "https://dynamodb.us-east-1.amazonaws.com", 0 },
        { "http://localhost.example.com", 0 }, { "http://[::2]", 0 },
        { "http://127.0.0.1.nip.io", 0 },     { "not a url", -1 },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        int got = kp_ddb_is_loopback_url(cases[i].url);
        if (got != cases[i].expected) fail_msg("%s: expected %d, got %d", cases[i].url, cases[i].expected, got);
    }
}

/* ---- backoff, classification, error bodies, redaction ---------------------------------------- */

static void test_backoff_is_full_jitter_within_the_exponential_ceiling(void **state)
{
    (void)state;
    uint64_t rng = 42;
    for (int attempt = 0; attempt < 20; attempt++) {
        long ceiling = 50L << (attempt < 10 ? attempt : 10);
        if (ceiling > 5000) ceiling = 5000;
        long low = ceiling, high = 0;
        double sum = 0;
        for (int i = 0; i < 4000; i++) {
            long b = kp_ddb_backoff_ms(attempt, &rng);
            assert_true(b >= 0 && b <= ceiling);
            if (b < low) low = b;
            if (b > high) high = b;
            sum += (double)b;
        }
        double mean = sum / 4000;
        /* uniform on [0, ceiling]: spread over the whole range, mean near the middle */
        assert_true(low <= ceiling / 10);
        assert_true(high >= ceiling - ceiling / 10);
        assert_true(mean > ceiling * 0.4 && mean < ceiling * 0.6);
    }
    assert_true(kp_ddb_backoff_ms(1000, &rng) <= 5000);
}

static void test_error_types_are_read_from_json_bodies(void **state)
{
    (void)state;
    static const struct { const char *body; const char *type; const char *message; } cases[] = {
        { "{\"__type\":\"com.amazonaws.dynamodb.v20120810#ResourceNotFoundException\","
          "\"message\":\"Requested resource not found\"}", "ResourceNotFoundException", "Requested resource not found" },
        { "{\"__type\":\"com.amazon.coral.validate#ValidationException\",\"Message\":\"1 validation error\"}",
          "ValidationException", "1 validation error" },
        { "{\"__type\":\"com.amazonaws.dynamodb.v20120810#ConditionalCheckFailedException\","
          "\"message\":\"The conditional request failed\"}", "ConditionalCheckFailedException",
          "The conditional request failed" },
        { "{\"__type\":\"ThrottlingException:http://internal.amazon.com/coral/\"}", "ThrottlingException", "" },
        { "{\"message\":\"no type\"}", "", "no type" },
        { "<html><body>Bad Gateway</body></html>\nmore", "", "<html><body>Bad Gateway</body></html>" },
        { "", "", "" },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char type[96], message[256];
        kp_ddb_parse_error_body(cases[i].body, strlen(cases[i].body), type, sizeof type, message, sizeof message);
        assert_string_equal(type, cases[i].type);
        assert_string_equal(message, cases[i].message);
    }
    char small[8];
    char type[8];
    const char *body = "{\"__type\":\"a#ProvisionedThroughputExceededException\",\"message\":\"abcdefghijkl\"}";
    kp_ddb_parse_error_body(body, strlen(body), type, sizeof type, small, sizeof small);
    assert_string_equal(type, "Provisi");
    assert_string_equal(small, "abcdefg");
}

static void test_only_throttling_and_server_errors_are_retried(void **state)
{
    (void)state;
    assert_true(kp_ddb_is_retryable("ProvisionedThroughputExceededException", 400));
    assert_true(kp_ddb_is_retryable("ThrottlingException", 400));
    assert_true(kp_ddb_is_retryable("RequestLimitExceeded", 400));
    assert_true(kp_ddb_is_retryable("InternalServerError", 500));
    assert_true(kp_ddb_is_retryable("", 503));
    assert_true(kp_ddb_is_retryable("", 429));
    assert_false(kp_ddb_is_retryable("ValidationException", 400));
    assert_false(kp_ddb_is_retryable("ConditionalCheckFailedException", 400));
    assert_false(kp_ddb_is_retryable("ResourceNotFoundException", 400));
    assert_false(kp_ddb_is_retryable("UnrecognizedClientException", 400));
    assert_false(kp_ddb_is_retryable("", 404));
    assert_true(kp_ddb_is_throttling("ProvisionedThroughputExceededException"));
    assert_false(kp_ddb_is_throttling("InternalServerError"));
}

static void test_redaction_removes_secrets_tokens_signatures_and_canonical_strings(void **state)
{
    (void)state;
    const char *secrets[] = { FAKE_SECRET, FAKE_TOKEN, NULL };
    char text[512];
    snprintf(text, sizeof text, "bad key " FAKE_SECRET " and " FAKE_SECRET ", token " FAKE_TOKEN " end");
    kp_ddb_redact(text, sizeof text, secrets, 3);
    assert_string_equal(text, "bad key [redacted] and [redacted], token [redacted] end");

    snprintf(text, sizeof text, "The request signature we calculated does not match. The Canonical String for "
                                "this request should have been 'POST\n/\n\nx-amz-security-token:" FAKE_TOKEN "'");
    kp_ddb_redact(text, sizeof text, secrets, 2);
    assert_string_equal(text, "The request signature we calculated does not match.");

    snprintf(text, sizeof text, "Authorization: AWS4-HMAC-SHA256 Credential=X, Signature=abcdef0123 trailing");
    kp_ddb_redact(text, sizeof text, secrets, 2);
    assert_string_equal(text, "Authorization: AWS4-HMAC-SHA256 Credential=X, Signature=[redacted]");

    /* a token cut off by an earlier truncation is redacted too */
    snprintf(text, sizeof text, "token was kpTOKENfake456-very");
    kp_ddb_redact(text, sizeof text, secrets, 2);
    assert_string_equal(text, "token was [redacted]");

    /* a tiny buffer never overflows */
    char tiny[18];
    snprintf(tiny, sizeof tiny, "x" FAKE_SECRET);
    kp_ddb_redact(tiny, sizeof tiny, secrets, 2);
    assert_lacks(tiny, "kpSECRET");
}

/* ---- BatchWriteItem and UnprocessedItems, through the handler -------------------------------- */

typedef struct batch_result {
    int calls, written, unprocessed;
    char message[512];
    int has_failure;
} batch_result;

static void on_batch(void *ctx, int written, const cJSON *unprocessed, const kp_ddb_failure *failure)
{
    batch_result *r = ctx;
    r->calls++;
    r->written = written;
    r->unprocessed = unprocessed ? cJSON_GetArraySize(unprocessed) : 0;
    r->has_failure = failure != NULL;
    if (failure) snprintf(r->message, sizeof r->message, "%s", failure->error.message);
}

static cJSON *put_requests(int n, int first)
{
    cJSON *array = cJSON_CreateArray();
    for (int i = 0; i < n; i++) {
        char text[128];
        snprintf(text, sizeof text, "{\"PutRequest\":{\"Item\":{\"PK\":{\"S\":\"item-%d\"}}}}", first + i);
        cJSON_AddItemToArray(array, cJSON_Parse(text));
    }
    return array;
}

static cJSON *answer_with_unprocessed(const char *table, int n, int first)
{
    cJSON *response = cJSON_CreateObject();
    cJSON *map = cJSON_AddObjectToObject(response, "UnprocessedItems");
    if (n > 0) cJSON_AddItemToObject(map, table, put_requests(n, first));
    return response;
}

static kp_ddb_client *open_loopback_client(int max_retries)
{
    clear_aws_env();
    kp_ddb_config cfg = { .endpoint = "http://127.0.0.1:9", .max_retries = max_retries };
    kp_ddb_client *client = NULL;
    kp_error err;
    if (kp_ddb_client_open(&cfg, &client, &err) != 0) fail_msg("open: %s", err.message);
    kp_ddb_seed_backoff(client, 7);
    return client;
}

/* The body of the i-th queued request: its WriteRequests for `table`, as a new tree. */
static cJSON *queued_write_requests(kp_ddb_client *client, int index, const char *table, long *due_in)
{
    const char *operation, *body;
    assert_int_equal(kp_ddb_queued_peek(client, index, &operation, &body, due_in), 0);
    assert_string_equal(operation, "BatchWriteItem");
    cJSON *sent = cJSON_Parse(body);
    cJSON *items = cJSON_DetachItemFromObject(cJSON_GetObjectItem(sent, "RequestItems"), table);
    cJSON_Delete(sent);
    assert_non_null(items);
    return items;
}

static const char *first_pk(const cJSON *write_requests)
{
    const cJSON *put = cJSON_GetObjectItem(cJSON_GetArrayItem(write_requests, 0), "PutRequest");
    return cJSON_GetObjectItem(cJSON_GetObjectItem(cJSON_GetObjectItem(put, "Item"), "PK"), "S")->valuestring;
}

static void test_unprocessed_items_are_resubmitted_with_backoff_until_none_remain(void **state)
{
    (void)state;
    kp_ddb_client *client = open_loopback_client(0);
    batch_result result = { 0 };
    kp_error err;
    assert_int_equal(kp_ddb_batch_write(client, "Orders", put_requests(25, 0), on_batch, &result, &err), 0);
    long due_in = -1;
    cJSON *sent = queued_write_requests(client, 0, "Orders", &due_in);
    assert_int_equal(cJSON_GetArraySize(sent), 25);
    assert_true(due_in <= 0);
    cJSON_Delete(sent);

    /* the service takes 22 of 25 and hands 3 back: those 3 are queued again, due within 50 ms */
    assert_int_equal(kp_ddb_queued_complete(client, 0, answer_with_unprocessed("Orders", 3, 22), NULL), 0);
    assert_int_equal(result.calls, 0);
    assert_int_equal(kp_ddb_queued_count(client), 1);
    assert_int_equal(kp_ddb_pending(client), 1);
    sent = queued_write_requests(client, 0, "Orders", &due_in);
    assert_int_equal(cJSON_GetArraySize(sent), 3);
    assert_string_equal(first_pk(sent), "item-22");
    assert_true(due_in >= 0 && due_in <= KP_DDB_BACKOFF_BASE_MS);
    cJSON_Delete(sent);

    /* then 1 of the 3 comes back again (the second round waits up to 100 ms) */
    assert_int_equal(kp_ddb_queued_complete(client, 0, answer_with_unprocessed("Orders", 1, 24), NULL), 0);
    sent = queued_write_requests(client, 0, "Orders", &due_in);
    assert_int_equal(cJSON_GetArraySize(sent), 1);
    assert_string_equal(first_pk(sent), "item-24");
    assert_true(due_in >= 0 && due_in <= 2 * KP_DDB_BACKOFF_BASE_MS);
    cJSON_Delete(sent);
    kp_ddb_stats stats;
    kp_ddb_get_stats(client, &stats);
    assert_int_equal(stats.unprocessed_rounds, 2);

    /* and then everything is written: done runs once, with all 25 */
    assert_int_equal(kp_ddb_queued_complete(client, 0, answer_with_unprocessed("Orders", 0, 0), NULL), 0);
    assert_int_equal(result.calls, 1);
    assert_int_equal(result.written, 25);
    assert_false(result.has_failure);
    assert_int_equal(kp_ddb_pending(client), 0);
    kp_ddb_client_close(client);
    assert_int_equal(result.calls, 1);
}

static void test_a_batch_gives_up_after_rounds_without_progress_and_reports_what_is_left(void **state)
{
    (void)state;
    kp_ddb_client *client = open_loopback_client(2);
    batch_result result = { 0 };
    kp_error err;
    assert_int_equal(kp_ddb_batch_write(client, "Orders", put_requests(10, 0), on_batch, &result, &err), 0);
    /* progress (6 written), then two rounds without progress are tolerated, the third is not */
    for (int round = 0; round < 3; round++) {
        assert_int_equal(kp_ddb_queued_complete(client, 0, answer_with_unprocessed("Orders", 4, 6), NULL), 0);
        assert_int_equal(result.calls, 0);
    }
    assert_int_equal(kp_ddb_queued_complete(client, 0, answer_with_unprocessed("Orders", 4, 6), NULL), 0);
    assert_int_equal(result.calls, 1);
    assert_true(result.has_failure);
    assert_int_equal(result.written, 6);
    assert_int_equal(result.unprocessed, 4);
    assert_contains(result.message, "left 4 of 10 items unprocessed");
    assert_contains(result.message, "throttled");
    assert_int_equal(kp_ddb_pending(client), 0);
    kp_ddb_client_close(client);

    /* a request that failed finishes the batch with everything it was sending */
    client = open_loopback_client(0);
    memset(&result, 0, sizeof result);
    assert_int_equal(kp_ddb_batch_write(client, "Orders", put_requests(5, 0), on_batch, &result, &err), 0);
    kp_ddb_failure failure = { .type = "ValidationException", .http_status = 400, .attempts = 1 };
    snprintf(failure.error.message, sizeof failure.error.message, "bad item");
    assert_int_equal(kp_ddb_queued_complete(client, 0, NULL, &failure), 0);
    assert_int_equal(result.calls, 1);
    assert_int_equal(result.written, 0);
    assert_int_equal(result.unprocessed, 5);
    assert_string_equal(result.message, "bad item");
    kp_ddb_client_close(client);
}

static void test_batch_write_refuses_empty_and_oversized_batches_and_close_cancels_queued_ones(void **state)
{
    (void)state;
    kp_ddb_client *client = open_loopback_client(0);
    batch_result result = { 0 };
    kp_error err;
    assert_int_equal(kp_ddb_batch_write(client, "Orders", put_requests(26, 0), on_batch, &result, &err), -1);
    assert_contains(err.message, "1 to 25");
    assert_int_equal(kp_ddb_batch_write(client, "Orders", cJSON_CreateArray(), on_batch, &result, &err), -1);
    assert_int_equal(result.calls, 0);
    assert_int_equal(kp_ddb_batch_write(client, "Orders", put_requests(25, 0), on_batch, &result, &err), 0);
    assert_int_equal(kp_ddb_pending(client), 1);
    kp_ddb_client_close(client);
    assert_int_equal(result.calls, 1);
    assert_true(result.has_failure);
    assert_int_equal(result.unprocessed, 25);
    assert_contains(result.message, "closed before the request completed");
}

/* ---- a scripted HTTP responder --------------------------------------------------------------- */

typedef struct scripted {
    int status;                 /* 0: close the connection without answering */
    const char *body;
    const char *extra_headers;  /* "Name: value\r\n"... */
} scripted;

typedef struct responder {
    pid_t pid;
    int port;
    char log_path[300];
} responder;

static char *find_header(char *text, const char *name)
{
    size_t n = strlen(name);
    for (char *p = text; *p; p++)
        if (strncasecmp(p, name, n) == 0) return p;
    return NULL;
}

/* Runs in the forked child until killed; leaves by itself when the test process is
 * gone (a failed assertion never leaves a responder behind). */
static void serve(int listener, const scripted *script, size_t count, const char *log_path, pid_t parent)
{
    FILE *log = fopen(log_path, "w");
    struct pollfd fds[16];
    char *buffers[16] = { 0 };
    size_t lens[16] = { 0 };
    int nfds = 1;
    fds[0].fd = listener;
    fds[0].events = POLLIN;
    size_t next = 0;
    for (;;) {
        int ready = poll(fds, (nfds_t)nfds, 500);
        if (getppid() != parent) _exit(0);
        if (ready <= 0) continue;
        if (fds[0].revents & POLLIN) {
            int fd = accept(listener, NULL, NULL);
            if (fd >= 0 && nfds < 16) {
                fds[nfds].fd = fd;
                fds[nfds].events = POLLIN;
                fds[nfds].revents = 0;
                buffers[nfds] = calloc(1, 1 << 20);
                lens[nfds] = 0;
                nfds++;
            } else if (fd >= 0) {
                close(fd);
            }
        }
        for (int i = 1; i < nfds; i++) {
            if (!(fds[i].revents & (POLLIN | POLLHUP))) continue;
            ssize_t got = read(fds[i].fd, buffers[i] + lens[i], (1 << 20) - 1 - lens[i]);
            int must_close = got <= 0;
            if (got > 0) lens[i] += (size_t)got;
            buffers[i][lens[i]] = '\0';
            for (;;) {
                char *end = strstr(buffers[i], "\r\n\r\n");
                if (!end) break;
                char *cl = find_header(buffers[i], "content-length:");
                size_t body_len = cl && cl < end ? strtoul(cl + 15, NULL, 10) : 0;
                size_t total = (size_t)(end + 4 - buffers[i]) + body_len;
                if (lens[i] < total) break;
                fprintf(log, "%.*s\n====\n", (int)total, buffers[i]);
                fflush(log);
                const scripted *s = next < count ? &script[next] : &script[count - 1];
                next++;
                if (s->status == 0) {
                    must_close = 1;
                    lens[i] = 0;
                    break;
                }
                char header[1024];
                int n = snprintf(header, sizeof header,
                                 "HTTP/1.1 %d X\r\nContent-Type: application/x-amz-json-1.0\r\n"
                                 "x-amzn-RequestId: REQ%zu\r\n%sContent-Length: %zu\r\n\r\n",
                                 s->status, next, s->extra_headers ? s->extra_headers : "", strlen(s->body));
                if (write(fds[i].fd, header, (size_t)n) < 0 || write(fds[i].fd, s->body, strlen(s->body)) < 0)
                    must_close = 1;
                memmove(buffers[i], buffers[i] + total, lens[i] - total);
                lens[i] -= total;
                buffers[i][lens[i]] = '\0';
            }
            if (must_close) {
                close(fds[i].fd);
                free(buffers[i]);
                fds[i] = fds[nfds - 1];
                buffers[i] = buffers[nfds - 1];
                lens[i] = lens[nfds - 1];
                nfds--;
                i--;
            }
        }
    }
}

static void responder_start(responder *r, const scripted *script, size_t count)
{
    int listener = socket(AF_INET, SOCK_STREAM, 0);
    assert_true(listener >= 0);
    struct sockaddr_in addr = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
    assert_int_equal(bind(listener, (struct sockaddr *)&addr, sizeof addr), 0);
    assert_int_equal(listen(listener, 16), 0);
    socklen_t len = sizeof addr;
    getsockname(listener, (struct sockaddr *)&addr, &len);
    r->port = ntohs(addr.sin_port);
    snprintf(r->log_path, sizeof r->log_path, "%s/requests-%d.log", temp_dir, r->port);
    fflush(NULL);
    pid_t parent = getpid();
    r->pid = fork();
    assert_true(r->pid >= 0);
    if (r->pid == 0) {
        serve(listener, script, count, r->log_path, parent);
        _exit(0);
    }
    close(listener);
}

static char *responder_stop(responder *r)
{
    kill(r->pid, SIGKILL);
    waitpid(r->pid, NULL, 0);
    FILE *f = fopen(r->log_path, "r");
    char *text = calloc(1, 1 << 20);
    if (f) {
        size_t n = fread(text, 1, (1 << 20) - 1, f);
        text[n] = '\0';
        fclose(f);
    }
    return text;
}

static kp_ddb_client *open_against(const responder *r, int max_retries, int max_in_flight)
{
    char url[64];
    snprintf(url, sizeof url, "http://127.0.0.1:%d", r->port);
    kp_ddb_config cfg = { .endpoint = url, .max_retries = max_retries, .max_in_flight = max_in_flight,
                          .request_timeout_ms = 5000 };
    kp_ddb_client *client = NULL;
    kp_error err;
    if (kp_ddb_client_open(&cfg, &client, &err) != 0) fail_msg("open: %s", err.message);
    return client;
}

static int count_of(const char *text, const char *needle)
{
    int n = 0;
    for (const char *p = strstr(text, needle); p; p = strstr(p + 1, needle)) n++;
    return n;
}

static const char throttled[] = "{\"__type\":\"com.amazonaws.dynamodb.v20120810#"
                                "ProvisionedThroughputExceededException\",\"message\":\"Rate exceeded\"}";

static void test_throttling_is_retried_and_every_request_is_signed_and_counted(void **state)
{
    (void)state;
    clear_aws_env();
    setenv("AWS_ACCESS_KEY_ID", FAKE_KEY_ID, 1);
    setenv("AWS_SECRET_ACCESS_KEY", FAKE_SECRET, 1);
    setenv("AWS_SESSION_TOKEN", FAKE_TOKEN, 1);
    setenv("AWS_REGION", "eu-west-1", 1);
    static const scripted script[] = {
        { 0, "", NULL },   /* a new connection dropped without an answer: retried */
        { 400, throttled, NULL },
        { 200, "{\"Item\":{\"PK\":{\"S\":\"a\"}}}", NULL },
    };
    responder r;
    responder_start(&r, script, 3);
    kp_ddb_client *client = open_against(&r, 3, 1);
    cJSON *request = cJSON_Parse("{\"TableName\":\"Orders\",\"Key\":{\"PK\":{\"S\":\"a\"}}}");
    cJSON *response = NULL;
    kp_error err;
    assert_int_equal(kp_ddb_call(client, "GetItem", request, &response, &err), 0);
    assert_string_equal(cJSON_GetObjectItem(cJSON_GetObjectItem(cJSON_GetObjectItem(response, "Item"), "PK"), "S")
                            ->valuestring, "a");
    assert_string_equal(kp_ddb_last_error_type(client), "");
    kp_ddb_stats stats;
    kp_ddb_get_stats(client, &stats);
    assert_int_equal(stats.requests_sent, 3);
    assert_int_equal(kp_ddb_requests_sent(client), 3);
    assert_int_equal(stats.retries, 2);
    assert_int_equal(stats.throttled, 1);
    cJSON_Delete(response);
    cJSON_Delete(request);
    kp_ddb_client_close(client);
    char *log = responder_stop(&r);
    assert_int_equal(count_of(log, "X-Amz-Target: DynamoDB_20120810.GetItem"), 3);
    assert_int_equal(count_of(log, "Content-Type: application/x-amz-json-1.0"), 3);
    assert_int_equal(count_of(log, "Authorization: AWS4-HMAC-SHA256 Credential=" FAKE_KEY_ID "/"), 3);
    assert_contains(log, "/eu-west-1/dynamodb/aws4_request");
    assert_contains(log, "SignedHeaders=content-type;host;x-amz-date;x-amz-security-token;x-amz-target");
    assert_int_equal(count_of(log, "X-Amz-Security-Token: " FAKE_TOKEN), 3);
    assert_int_equal(count_of(log, "{\"TableName\":\"Orders\",\"Key\":{\"PK\":{\"S\":\"a\"}}}"), 3);
    assert_lacks(log, FAKE_SECRET);   /* the secret signs; it is never sent */
    free(log);
}

static void test_validation_and_condition_failures_are_not_retried_and_keep_their_type(void **state)
{
    (void)state;
    clear_aws_env();
    static const scripted script[] = {
        { 400, "{\"__type\":\"com.amazonaws.dynamodb.v20120810#ConditionalCheckFailedException\","
               "\"message\":\"The conditional request failed\"}", NULL },
        { 400, "{\"__type\":\"com.amazon.coral.validate#ValidationException\","
               "\"message\":\"One or more parameter values were invalid\"}", NULL },
        { 400, "{\"__type\":\"com.amazonaws.dynamodb.v20120810#ResourceNotFoundException\","
               "\"message\":\"Requested resource not found\"}", NULL },
        { 200, "{}", NULL },
    };
    responder r;
    responder_start(&r, script, 4);
    kp_ddb_client *client = open_against(&r, 3, 2);
    cJSON *request = cJSON_Parse("{\"TableName\":\"Orders\"}");
    cJSON *response = NULL;
    kp_error err;
    assert_int_equal(kp_ddb_call(client, "PutItem", request, &response, &err), -1);
    assert_null(response);
    assert_int_equal(err.code, KP_ERR_TARGET);
    assert_true(kp_ddb_error_is(client, "ConditionalCheckFailedException"));
    assert_int_equal(kp_ddb_last_http_status(client), 400);
    assert_contains(err.message, "DynamoDB PutItem at http://127.0.0.1:");
    assert_contains(err.message, "ConditionalCheckFailedException: The conditional request failed (HTTP 400)");
    assert_lacks(err.message, "attempts");

    assert_int_equal(kp_ddb_call(client, "PutItem", request, &response, &err), -1);
    assert_string_equal(kp_ddb_last_error_type(client), "ValidationException");
    assert_int_equal(kp_ddb_call(client, "DescribeTable", request, &response, &err), -1);
    assert_string_equal(kp_ddb_last_error_type(client), "ResourceNotFoundException");
    assert_contains(err.message, "Requested resource not found");
    assert_int_equal(kp_ddb_call(client, "DescribeTable", request, &response, &err), 0);
    assert_string_equal(kp_ddb_last_error_type(client), "");
    cJSON_Delete(response);
    assert_int_equal(kp_ddb_requests_sent(client), 4);

    assert_int_equal(kp_ddb_call(client, "Get Item\r\nX-Evil: 1", request, &response, &err), -1);
    assert_int_equal(err.code, KP_ERR_INTERNAL);
    cJSON_Delete(request);
    kp_ddb_client_close(client);
    free(responder_stop(&r));
}

static void test_server_errors_run_out_of_retries_with_a_message_that_says_so(void **state)
{
    (void)state;
    clear_aws_env();
    static const scripted script[] = {
        { 500, "{\"__type\":\"com.amazonaws.dynamodb.v20120810#InternalServerError\",\"message\":\"boom\"}", NULL },
    };
    responder r;
    responder_start(&r, script, 1);
    kp_ddb_client *client = open_against(&r, 2, 1);
    cJSON *response = NULL;
    kp_error err;
    assert_int_equal(kp_ddb_call(client, "ListTables", NULL, &response, &err), -1);
    assert_contains(err.message, "failed after 3 attempts: InternalServerError: boom (HTTP 500)");
    assert_contains(err.message, "try again later");
    assert_int_equal(kp_ddb_requests_sent(client), 3);

    /* an answer whose checksum does not match is retried, then reported */
    kp_ddb_client_close(client);
    free(responder_stop(&r));
    static const scripted corrupt[] = { { 200, "{\"TableNames\":[]}", "x-amz-crc32: 12345\r\n" } };
    responder_start(&r, corrupt, 1);
    client = open_against(&r, 1, 1);
    assert_int_equal(kp_ddb_call(client, "ListTables", NULL, &response, &err), -1);
    assert_contains(err.message, "CRC32 mismatch");
    assert_int_equal(kp_ddb_requests_sent(client), 2);
    kp_ddb_client_close(client);
    free(responder_stop(&r));

    /* the right checksum is accepted (crc32 of {"TableNames":[]} as dynalite sends it) */
    static const scripted good[] = { { 200, "{\"TableNames\":[]}", "x-amz-crc32: 1315925753\r\n" } };
    responder_start(&r, good, 1);
    client = open_against(&r, 1, 1);
    assert_int_equal(kp_ddb_call(client, "ListTables", NULL, &response, &err), 0);
    cJSON_Delete(response);
    kp_ddb_client_close(client);
    free(responder_stop(&r));
}

static void test_an_unreachable_local_server_gets_a_hint(void **state)
{
    (void)state;
    clear_aws_env();
    /* a port that was just free */
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in addr = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
    bind(fd, (struct sockaddr *)&addr, sizeof addr);
    socklen_t len = sizeof addr;
    getsockname(fd, (struct sockaddr *)&addr, &len);
    close(fd);
    char url[64];
    snprintf(url, sizeof url, "http://127.0.0.1:%d", ntohs(addr.sin_port));
    kp_ddb_config cfg = { .endpoint = url, .max_retries = 1 };
    kp_ddb_client *client = NULL;
    kp_error err;
    assert_int_equal(kp_ddb_client_open(&cfg, &client, &err), 0);
    cJSON *response = NULL;
    assert_int_equal(kp_ddb_call(client, "ListTables", NULL, &response, &err), -1);
    assert_int_equal(err.code, KP_ERR_TARGET);
    assert_int_equal(kp_error_exit_code(&err), 3);
    assert_contains(err.message, "could not be sent to http://127.0.0.1:");
    assert_contains(err.message, "after 2 attempts");
    assert_contains(err.message, "is the local server running?");
    assert_string_equal(kp_ddb_last_error_type(client), "");
    kp_ddb_client_close(client);
}

typedef struct async_log {
    int ok, failed;
    char last_error[512];
    kp_ddb_client *client;
    int resubmit;
} async_log;

static void on_done(void *ctx, const cJSON *response, const kp_ddb_failure *failure)
{
    async_log *log = ctx;
    if (failure) {
        log->failed++;
        snprintf(log->last_error, sizeof log->last_error, "%s", failure->error.message);
        return;
    }
    assert_non_null(response);
    log->ok++;
    if (log->resubmit > 0) {   /* callbacks may submit more work */
        log->resubmit--;
        kp_error err;
        assert_int_equal(kp_ddb_submit(log->client, "ListTables", cJSON_CreateObject(), on_done, log, &err), 0);
        kp_ddb_stats s;
        kp_ddb_get_stats(log->client, &s);
        /* but may not drive the client */
        assert_int_equal(kp_ddb_poll(log->client, 0, &err), -1);
        assert_int_equal(err.code, KP_ERR_INTERNAL);
    }
}

static void test_async_submissions_complete_once_each_and_close_cancels_the_rest(void **state)
{
    (void)state;
    clear_aws_env();
    static const scripted script[] = {
        { 400, throttled, NULL },
        { 200, "{\"TableNames\":[]}", NULL },
    };
    responder r;
    responder_start(&r, script, 2);
    kp_ddb_client *client = open_against(&r, 3, 4);
    async_log log = { .client = client, .resubmit = 2 };
    kp_error err;
    for (int i = 0; i < 10; i++)
        assert_int_equal(kp_ddb_submit(client, "ListTables", cJSON_CreateObject(), on_done, &log, &err), 0);
    assert_int_equal(kp_ddb_pending(client), 10);
    int pending;
    int rounds = 0;
    while ((pending = kp_ddb_poll(client, 1000, &err)) > 0) assert_true(++rounds < 1000);
    assert_int_equal(pending, 0);
    assert_int_equal(log.ok, 12);
    assert_int_equal(log.failed, 0);
    assert_int_equal(kp_ddb_requests_sent(client), 13);   /* one throttled, retried */

    assert_int_equal(kp_ddb_submit(client, "ListTables", cJSON_CreateObject(), on_done, &log, &err), 0);
    assert_int_equal(kp_ddb_submit(client, "Bad-Name", cJSON_CreateObject(), on_done, &log, &err), -1);
    kp_ddb_client_close(client);
    assert_int_equal(log.failed, 1);
    assert_contains(log.last_error, "closed before the request completed");
    free(responder_stop(&r));
}

/* ---- no credential in anything the client returns or prints ---------------------------------- */

static void test_no_credential_ever_appears_in_errors_or_on_stderr(void **state)
{
    (void)state;
    clear_aws_env();
    setenv("AWS_ACCESS_KEY_ID", FAKE_KEY_ID, 1);
    setenv("AWS_SECRET_ACCESS_KEY", FAKE_SECRET, 1);
    setenv("AWS_SESSION_TOKEN", FAKE_TOKEN, 1);

    char stderr_path[400];
    snprintf(stderr_path, sizeof stderr_path, "%s/stderr.txt", temp_dir);
    fflush(stderr);
    int saved = dup(2);
    int capture = open(stderr_path, O_CREAT | O_TRUNC | O_WRONLY, 0600);
    dup2(capture, 2);
    close(capture);

    char collected[16384] = "";
#define COLLECT(text) strncat(collected, text, sizeof collected - strlen(collected) - 2), strcat(collected, "\n")

    /* a hostile server echoes the secret, the token, a signature and the canonical string */
    static const scripted script[] = {
        { 400, "{\"__type\":\"com.amazon.coral.service#InvalidSignatureException\",\"message\":\"The request "
               "signature we calculated does not match the signature you provided. Check your AWS Secret Access "
               "Key " FAKE_SECRET " and signing method. Signature=0123456789abcdef The Canonical String for this "
               "request should have been 'POST\\n/\\n\\ncontent-type:application/x-amz-json-1.0\\n"
               "x-amz-security-token:" FAKE_TOKEN "'\"}", NULL },
        { 400, "{\"__type\":\"com.amazon.coral.service#UnrecognizedClientException\",\"message\":\"token "
               FAKE_TOKEN " is invalid; " FAKE_TOKEN FAKE_TOKEN FAKE_TOKEN FAKE_TOKEN FAKE_TOKEN FAKE_TOKEN
               FAKE_TOKEN FAKE_TOKEN FAKE_TOKEN FAKE_TOKEN "\"}", NULL },
        { 503, "<html>" FAKE_SECRET "</html>", NULL },
    };
    responder r;
    responder_start(&r, script, 3);
    kp_ddb_client *client = open_against(&r, KP_DDB_NO_RETRIES, 1);
    COLLECT(kp_ddb_client_describe(client));
    cJSON *response = NULL;
    kp_error err;
    for (int i = 0; i < 3; i++) {
        assert_int_equal(kp_ddb_call(client, "ListTables", NULL, &response, &err), -1);
        COLLECT(err.message);
        kp_error_print(stderr, &err);
    }
    assert_contains(collected, "check the credentials from the environment (AWS_ACCESS_KEY_ID)");
    kp_ddb_client_close(client);
    free(responder_stop(&r));

    /* a refused connection, and --insecure against https and plain http */
    kp_ddb_config insecure = { .endpoint = "https://127.0.0.1:1", .is_insecure = 1, .max_retries = -1,
                               .connect_timeout_ms = 2000 };
    assert_int_equal(kp_ddb_client_open(&insecure, &client, &err), 0);
    COLLECT(kp_ddb_client_describe(client));
    assert_int_equal(kp_ddb_call(client, "ListTables", NULL, &response, &err), -1);
    COLLECT(err.message);
    kp_ddb_client_close(client);
    kp_ddb_config missing = { .endpoint = "https://user:" FAKE_SECRET "@example.com" };
    assert_int_equal(kp_ddb_client_open(&missing, &client, &err), -1);
    COLLECT(err.message);

    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    FILE *f = fopen(stderr_path, "r");
    char printed[8192] = "";
    size_t n = fread(printed, 1, sizeof printed - 1, f);
    printed[n] = '\0';
    fclose(f);
    assert_contains(printed, "warning: --insecure");
    assert_contains(printed, "error: DynamoDB ListTables");
    COLLECT(printed);

    const char *fragments[] = { FAKE_SECRET, FAKE_TOKEN, "kpTOKENfake", "kpSECRET", "Signature=0123", "x-amz-security-token:" };
    for (size_t i = 0; i < sizeof fragments / sizeof fragments[0]; i++) assert_lacks(collected, fragments[i]);
    assert_contains(collected, "[redacted]");
#undef COLLECT
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_endpoint_comes_from_target_then_service_env_then_env_then_region),
        cmocka_unit_test(test_region_comes_from_env_then_the_profile_in_the_config_file_then_default),
        cmocka_unit_test(test_credentials_come_from_env_with_session_token),
        cmocka_unit_test(test_credentials_come_from_the_profile_in_the_shared_files),
        cmocka_unit_test(test_loopback_endpoints_get_placeholder_credentials),
        cmocka_unit_test(test_a_remote_endpoint_without_credentials_says_what_to_set),
        cmocka_unit_test(test_bad_endpoints_are_usage_errors_that_never_echo_a_password),
        cmocka_unit_test(test_loopback_hosts_are_recognised),
        cmocka_unit_test(test_backoff_is_full_jitter_within_the_exponential_ceiling),
        cmocka_unit_test(test_error_types_are_read_from_json_bodies),
        cmocka_unit_test(test_only_throttling_and_server_errors_are_retried),
        cmocka_unit_test(test_redaction_removes_secrets_tokens_signatures_and_canonical_strings),
        cmocka_unit_test(test_unprocessed_items_are_resubmitted_with_backoff_until_none_remain),
        cmocka_unit_test(test_a_batch_gives_up_after_rounds_without_progress_and_reports_what_is_left),
        cmocka_unit_test(test_batch_write_refuses_empty_and_oversized_batches_and_close_cancels_queued_ones),
        cmocka_unit_test(test_throttling_is_retried_and_every_request_is_signed_and_counted),
        cmocka_unit_test(test_validation_and_condition_failures_are_not_retried_and_keep_their_type),
        cmocka_unit_test(test_server_errors_run_out_of_retries_with_a_message_that_says_so),
        cmocka_unit_test(test_an_unreachable_local_server_gets_a_hint),
        cmocka_unit_test(test_async_submissions_complete_once_each_and_close_cancels_the_rest),
        cmocka_unit_test(test_no_credential_ever_appears_in_errors_or_on_stderr),
    };
    return cmocka_run_group_tests(tests, setup_group, teardown_group);
}
