/*
 * test_oracle.c — the oracle, writes and parameter sampling on small data whose
 * answers were computed by hand (tests/fixtures/oracle: model.json and data/).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "core/data.h"
#include "core/model.h"
#include "core/mutate.h"
#include "core/oracle.h"
#include "core/params.h"
#include "core/sample.h"
#include "core/value.h"
#include "migrations/generate.h"
#include "migrations/write_gen.h"
#include "support.h"

typedef struct fixture {
    kp_model *model;
    kp_dataset *data;
} fixture;

static int setup(void **state)
{
    fixture *f = calloc(1, sizeof *f);
    kp_error err;
    kp_model_options options = {.scale = 1};
    if (kp_model_load(KP_SOURCE_DIR "/tests/fixtures/oracle/model.json", &options, &f->model, &err)) {
        kp_error_print(stderr, &err);
        return -1;
    }
    if (kp_dataset_load(f->model, KP_SOURCE_DIR "/tests/fixtures/oracle/data", &f->data, &err)) {
        kp_error_print(stderr, &err);
        return -1;
    }
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fixture *f = *state;
    kp_dataset_free(f->data);
    kp_model_free(f->model);
    free(f);
    return 0;
}

/* Parameters from "name=value" texts, converted by each parameter's type. */
static kp_params *params_of(kp_param *const *declared, size_t count, const char *const *specs)
{
    kp_params *params = kp_params_new();
    for (size_t i = 0; specs && specs[i]; i++) {
        const char *eq = strchr(specs[i], '=');
        assert_non_null(eq);
        char name[64];
        snprintf(name, sizeof name, "%.*s", (int)(eq - specs[i]), specs[i]);
        const kp_param *p = NULL;
        for (size_t k = 0; k < count; k++)
            if (strcmp(declared[k]->name, name) == 0) p = declared[k];
        assert_non_null(p);
        cJSON *value = NULL;
        kp_error err;
        if (kp_params_parse_text(p, eq + 1, &value, &err)) fail_msg("%s", err.message);
        assert_int_equal(kp_params_set(params, name, value), 0);
    }
    return params;
}

/* Runs a pattern and compares its compact JSON; returns the next token (malloc'd) or NULL. */
static char *check_page(fixture *f, const char *pattern, const char *const *specs, const char *page,
                        const char *expected)
{
    const kp_pattern *p = kp_model_pattern(f->model, pattern);
    assert_non_null(p);
    kp_params *params = params_of(p->params, p->param_count, specs);
    kp_oracle_result result;
    kp_error err;
    if (kp_oracle_run(f->data, p, params, page, &result, &err)) fail_msg("%s: %s", pattern, err.message);
    char *text = cJSON_PrintUnformatted(result.response);
    if (strcmp(text, expected) != 0) fail_msg("%s\n  expected %s\n  got      %s", pattern, expected, text);
    free(text);
    char *token = result.next_token;
    result.next_token = NULL;
    kp_oracle_result_free(&result);
    kp_params_free(params);
    return token;
}

static void check(fixture *f, const char *pattern, const char *const *specs, const char *expected)
{
    free(check_page(f, pattern, specs, NULL, expected));
}

#define P(...) ((const char *const[]){__VA_ARGS__, NULL})

/* ---- reads ---------------------------------------------------------------------------- */

static void test_token_pages_continue_exactly_and_end_with_null(void **state)
{
    fixture *f = *state;
    /* c1's orders by placedAt desc: o4 (01-05), o2 (01-03), o3 (01-02), o1 (01-01) */
    const kp_pattern *p = kp_model_pattern(f->model, "customer-orders");
    kp_params *params = params_of(p->params, p->param_count, P("id=c1"));
    kp_oracle_result first, second;
    kp_error err;
    assert_int_equal(kp_oracle_run(f->data, p, params, NULL, &first, &err), 0);
    assert_true(first.is_paged);
    assert_true(first.is_token_in_response);
    assert_non_null(first.next_token);
    const cJSON *next = cJSON_GetObjectItemCaseSensitive(first.response, "next");
    assert_string_equal(next->valuestring, first.next_token);
    char *text = cJSON_PrintUnformatted(first.response);
    char expected[1024];
    snprintf(expected, sizeof expected,
             "{\"name\":\"Ann Lee\",\"orders\":[{\"id\":\"o4\",\"total\":7.00,\"lines\":0},"
             "{\"id\":\"o2\",\"total\":20.00,\"lines\":1}],\"next\":\"%s\"}", first.next_token);
    assert_string_equal(text, expected);
    free(text);
    /* the token is the last element's order-key values: placedAt, then the key */
    cJSON *values = NULL;
    assert_int_equal(kp_oracle_token_decode(first.next_token, &values, &err), 0);
    text = cJSON_PrintUnformatted(values);
    assert_string_equal(text, "[\"2026-01-03T00:00:00.000Z\",\"o2\"]");
    free(text);
    cJSON_Delete(values);
    assert_int_equal(kp_oracle_run(f->data, p, params, first.next_token, &second, &err), 0);
    text = cJSON_PrintUnformatted(second.response);
    assert_string_equal(text, "{\"name\":\"Ann Lee\",\"orders\":[{\"id\":\"o3\",\"total\":5.25,\"lines\":1},"
                              "{\"id\":\"o1\",\"total\":10.50,\"lines\":2}],\"next\":null}");
    free(text);
    assert_null(second.next_token);
    kp_oracle_result_free(&first);
    kp_oracle_result_free(&second);
    kp_params_free(params);
}

static void test_bad_page_token_is_a_usage_error(void **state)
{
    fixture *f = *state;
    const kp_pattern *p = kp_model_pattern(f->model, "customer-orders");
    kp_params *params = params_of(p->params, p->param_count, P("id=c1"));
    kp_oracle_result result;
    kp_error err;
    assert_int_equal(kp_oracle_run(f->data, p, params, "not a token!", &result, &err), -1);
    assert_int_equal(err.code, KP_ERR_USAGE);
    assert_non_null(strstr(err.message, "is not a page token"));
    /* a token of the wrong length */
    cJSON *one = cJSON_Parse("[\"x\"]");
    char *token = kp_oracle_token_encode(one);
    cJSON_Delete(one);
    assert_int_equal(kp_oracle_run(f->data, p, params, token, &result, &err), -1);
    assert_non_null(strstr(err.message, "holds 1 values"));
    free(token);
    kp_params_free(params);
}

static void test_where_on_related_items_with_optional_parameter(void **state)
{
    fixture *f = *state;
    /* o5's lines in key order (n is an int: 1, 2, 10) */
    check(f, "order-lines", P("id=o5"), "[{\"n\":1,\"qty\":4},{\"n\":2,\"qty\":1},{\"n\":10,\"qty\":2}]");
    check(f, "order-lines", P("id=o5", "status=OPEN"), "[{\"n\":1,\"qty\":4},{\"n\":2,\"qty\":1}]");
    check(f, "order-lines", P("id=o4"), "[]");
}

static void test_missing_single_root_makes_the_response_null(void **state)
{
    fixture *f = *state;
    check(f, "order-lines", P("id=nope"), "null");
    check(f, "customer-by-email", P("email=nobody@x"), "null");
}

static void test_set_root_with_offset_paging_limit_parameter_and_defaults(void **state)
{
    fixture *f = *state;
    /* OPEN orders by placedAt: o1 (01-01), o3 (01-02), o5 (01-04), o4 (01-05) */
    check(f, "orders-by-status", P("status=OPEN"), "[\"o1\",\"o3\"]");
    check(f, "orders-by-status", P("status=OPEN", "skip=2"), "[\"o5\",\"o4\"]");
    check(f, "orders-by-status", P("status=OPEN", "skip=3", "n=5"), "[\"o4\"]");
    check(f, "orders-by-status", P("status=OPEN", "skip=9"), "[]");
    check(f, "orders-by-status", P("status=OPEN", "since=2026-01-02T00:00:00.000Z"), "[\"o3\",\"o5\"]");
    check(f, "orders-by-status", P("status=SHIPPED", "n=10"), "[\"o2\",\"o6\"]");
}

static void test_parameters_are_checked(void **state)
{
    fixture *f = *state;
    const kp_pattern *p = kp_model_pattern(f->model, "orders-by-status");
    kp_error err;
    cJSON *value = NULL;
    assert_int_equal(kp_params_parse_text(kp_pattern_param(p, "n"), "abc", &value, &err), -1);
    assert_string_equal(err.message, "parameter :n is an int: expected an integer like 42, got \"abc\"");
    assert_int_equal(kp_params_parse_text(kp_pattern_param(p, "n"), "11", &value, &err), -1);
    assert_string_equal(err.message, "parameter :n is 11, above its maximum 10 (from \"11\")");
    assert_int_equal(kp_params_parse_text(kp_pattern_param(p, "status"), "LOST", &value, &err), -1);
    assert_non_null(strstr(err.message, "expected one of the enum's values: OPEN, SHIPPED"));
    assert_int_equal(kp_params_parse_text(kp_pattern_param(p, "since"), "2026-01-02", &value, &err), -1);
    assert_int_equal(kp_params_parse_text(kp_pattern_param(p, "n"), "7", &value, &err), 0);
    assert_true(cJSON_IsRaw(value));
    assert_string_equal(value->valuestring, "7");
    cJSON_Delete(value);
    /* a required parameter left out, an unknown one given */
    kp_params *none = kp_params_new();
    kp_oracle_result result;
    assert_int_equal(kp_oracle_run(f->data, p, none, NULL, &result, &err), -1);
    assert_string_equal(err.message, "pattern 'orders-by-status' needs parameter :status (an enum); give it a value");
    kp_params_set(none, "stauts", cJSON_CreateString("OPEN"));
    assert_int_equal(kp_oracle_run(f->data, p, none, NULL, &result, &err), -1);
    assert_string_equal(err.message, "pattern 'orders-by-status' has no parameter :stauts (did you mean :status?)");
    kp_params_free(none);
}

static void test_unique_lookup_derived_values_and_echoed_parameter(void **state)
{
    fixture *f = *state;
    check(f, "customer-by-email", P("email=ann@x"),
          "{\"id\":\"c1\",\"tier\":\"GOLD\",\"orderCount\":4,\"openTotal\":22.75,\"asked\":\"ann@x\"}");
    check(f, "customer-by-email", P("email=bob@x"),
          "{\"id\":\"c2\",\"tier\":null,\"orderCount\":1,\"openTotal\":99.99,\"asked\":\"bob@x\"}");
    check(f, "customer-by-email", P("email=cy@x"),
          "{\"id\":\"c3\",\"tier\":\"SILVER\",\"orderCount\":1,\"openTotal\":0,\"asked\":\"cy@x\"}");
}

static void test_one_to_one_path_epoch_encoding_and_copies(void **state)
{
    fixture *f = *state;
    /* 2026-01-04T00:00:00.000Z = 1767484800000 ms */
    check(f, "order-with-customer", P("id=o2"),
          "{\"id\":\"o2\",\"shippedAt\":1767484800000,\"tier\":\"GOLD\",\"customer\":{\"name\":\"Ann Lee\","
          "\"email\":\"ann@x\"},\"maxQty\":1,\"customerName\":\"Ann Lee\"}");
    check(f, "order-with-customer", P("id=o4"),
          "{\"id\":\"o4\",\"shippedAt\":null,\"tier\":\"GOLD\",\"customer\":{\"name\":\"Ann Lee\","
          "\"email\":\"ann@x\"},\"maxQty\":null,\"customerName\":\"Ann Lee\"}");
    check(f, "order-with-customer", P("id=o5"),
          "{\"id\":\"o5\",\"shippedAt\":null,\"tier\":null,\"customer\":{\"name\":\"Bob Ray\","
          "\"email\":\"bob@x\"},\"maxQty\":4,\"customerName\":\"Bob Ray\"}");
}

static void test_array_references_keep_array_order_unless_ordered(void **state)
{
    fixture *f = *state;
    check(f, "product-tags", P("sku=p1"), "{\"tags\":[\"office\",\"blue\"],\"sortedTags\":[\"blue\",\"office\"]}");
    check(f, "product-tags", P("sku=p3"), "{\"tags\":[],\"sortedTags\":[]}");
    check(f, "tag-products", P("id=t1"), "[\"p1\",\"p2\"]");
    check(f, "tag-products", P("id=t3"), "[]");
}

static void test_many_to_many_through_both_directions_and_count(void **state)
{
    fixture *f = *state;
    check(f, "user-follows", P("id=u1"),
          "{\"followers\":[\"bob\",\"cat\",\"dan\"],\"following\":[\"cat\",\"bob\"],\"followingCount\":2}");
    check(f, "user-follows", P("id=u4"), "{\"followers\":[],\"following\":[\"ann\"],\"followingCount\":1}");
}

static void test_multi_hop_path_flattens_in_path_order(void **state)
{
    fixture *f = *state;
    check(f, "customer-lines", P("id=c1"),
          "[{\"order\":\"o1\",\"n\":1},{\"order\":\"o1\",\"n\":2},{\"order\":\"o2\",\"n\":1},{\"order\":\"o3\",\"n\":1}]");
    check(f, "customer-lines", P("id=c4"), "[]");
}

static void test_condition_through_a_to_one_path(void **state)
{
    fixture *f = *state;
    check(f, "orders-of-name", P("name=Ann Lee"), "[\"o1\",\"o3\",\"o2\",\"o4\"]");
    check(f, "orders-of-name", P("name=Nobody"), "[]");
}

static void test_nulls_first_then_key_breaks_ties(void **state)
{
    fixture *f = *state;
    check(f, "customers-by-tier", NULL, "{\"first\":[\"c2\",\"c4\",\"c1\",\"c3\"]}");
}

static void test_begins_with_and_literal_conditions(void **state)
{
    fixture *f = *state;
    check(f, "customers-by-prefix", P("prefix=Ann"), "[\"c1\",\"c4\"]");
    check(f, "customers-by-prefix", P("prefix=Ann L"), "[\"c1\"]");
    /* qty > 2 (a literal): lines (o1,2) p2, (o3,1) p3, (o5,1) p2 in key order */
    check(f, "big-lines", NULL, "[\"p2\",\"p3\",\"p2\"]");
}

static void test_between_orders_decimals_exactly_with_out_of_band_token(void **state)
{
    fixture *f = *state;
    /* placed 01-02..01-05: o3 5.25, o2 20.00, o5 99.99, o4 7.00; by total desc (not as text) */
    const char *const *specs = P("from=2026-01-02T00:00:00.000Z", "to=2026-01-05T00:00:00.000Z");
    char *next = check_page(f, "orders-between", specs, NULL, "[\"o5\",\"o2\"]");
    assert_non_null(next);
    char *last = check_page(f, "orders-between", specs, next, "[\"o4\",\"o3\"]");
    assert_null(last);
    free(next);
}

/* ---- writes ----------------------------------------------------------------------------- */

static kp_write_request request(fixture *f, const char *write, const char *const *specs, const char *records)
{
    kp_write_request r;
    memset(&r, 0, sizeof r);
    r.write = kp_model_write(f->model, write);
    assert_non_null(r.write);
    r.params = params_of(r.write->params, r.write->param_count, specs);
    if (records) {
        kp_json_doc *doc = NULL;
        kp_error err;
        assert_int_equal(kp_json_parse("<test>", records, strlen(records), NULL, &doc, &err), 0);
        r.records = kp_data_copy(kp_json_root(doc), doc);
        kp_json_free(doc);
    }
    return r;
}

static kp_write_outcome apply(fixture *f, kp_change_log *log, const char *write, const char *const *specs,
                              const char *records, char *reason, size_t size)
{
    kp_write_request r = request(f, write, specs, records);
    kp_write_result result;
    kp_error err;
    if (kp_write_apply(f->data, &r, log, &result, &err)) fail_msg("%s: %s", write, err.message);
    if (reason) snprintf(reason, size, "%s", result.reason);
    kp_write_request_free(&r);
    return result.outcome;
}

static void undo(fixture *f, kp_change_log *log)
{
    kp_error err;
    if (kp_change_log_undo(f->data, log, 0, &err)) fail_msg("undo: %s", err.message);
    kp_change_log_free(log);
}

/* One walk of a pattern's pages, each page's response and token as text; with a cache or
 * without. */
static char *walk_text(fixture *f, const kp_pattern *p, const kp_params *params, kp_oracle_cache *cache)
{
    char *all = strdup(""), *token = NULL;
    kp_error err;
    for (int page = 0; page < 50; page++) {
        kp_oracle_result r;
        if (kp_oracle_run_cached(f->data, p, params, token, cache, &r, &err)) fail_msg("%s: %s", p->name, err.message);
        char *text = cJSON_PrintUnformatted(r.response);
        size_t n = strlen(all) + strlen(text) + (r.next_token ? strlen(r.next_token) : 4) + 8;
        char *bigger = malloc(n);
        snprintf(bigger, n, "%s%s|%s\n", all, text, r.next_token ? r.next_token : "none");
        free(all);
        free(text);
        all = bigger;
        free(token);
        token = r.next_token;
        r.next_token = NULL;
        kp_oracle_result_free(&r);
        if (!token) break;
    }
    free(token);
    return all;
}

static void test_a_walk_with_the_oracle_cache_gives_every_page_as_without(void **state)
{
    fixture *f = *state;
    kp_error err;
    /* one cache for every pattern and parameter set: it must notice each change */
    kp_oracle_cache *cache = kp_oracle_cache_new();
    assert_non_null(cache);
    int paged_walks = 0;
    for (size_t i = 0; i < f->model->pattern_count; i++) {
        const kp_pattern *p = f->model->patterns[i];
        kp_sampler *sampler = NULL;
        assert_int_equal(kp_sampler_new(f->data, 7, &sampler, &err), 0);
        for (int k = 0; k < 8; k++) {
            kp_params *x = NULL;
            if (kp_sample_params(sampler, p, &x, &err)) fail_msg("%s: %s", p->name, err.message);
            char *plain = walk_text(f, p, x, NULL), *cached = walk_text(f, p, x, cache);
            if (strcmp(plain, cached) != 0) fail_msg("%s\n  without: %s\n  with:    %s", p->name, plain, cached);
            if (strchr(plain, '\n') != strrchr(plain, '\n')) paged_walks++;
            free(plain);
            free(cached);
            kp_params_free(x);
        }
        kp_sampler_free(sampler);
    }
    /* some walks had several pages, so later pages came from the cache */
    assert_true(paged_walks > 0);
    /* a change to the data after the first page: the cache starts over */
    const kp_pattern *p = kp_model_pattern(f->model, "customer-orders");
    kp_params *params = params_of(p->params, p->param_count, P("id=c1"));
    char *before = walk_text(f, p, params, cache);
    kp_change_log log = {0};
    const char *order = "[{\"id\": \"o8\", \"customerId\": \"c1\", \"status\": \"OPEN\", \"total\": 3.00, "
                        "\"placedAt\": \"2026-02-01T00:00:00.000Z\"}]";
    assert_int_equal(apply(f, &log, "add-order", NULL, order, NULL, 0), KP_WRITE_APPLIED);
    char *plain = walk_text(f, p, params, NULL), *cached = walk_text(f, p, params, cache);
    assert_string_equal(plain, cached);
    assert_non_null(strstr(cached, "\"o8\""));
    assert_string_not_equal(before, cached);
    undo(f, &log);
    free(before);
    free(plain);
    free(cached);
    kp_params_free(params);
    kp_oracle_cache_free(cache);
}

static void test_update_follows_copies_and_undo_restores(void **state)
{
    fixture *f = *state;
    kp_change_log log = {0};
    assert_int_equal(apply(f, &log, "rename-customer", P("id=c1", "name=Ann Smith"), NULL, NULL, 0), KP_WRITE_APPLIED);
    check(f, "order-with-customer", P("id=o2"),
          "{\"id\":\"o2\",\"shippedAt\":1767484800000,\"tier\":\"GOLD\",\"customer\":{\"name\":\"Ann Smith\","
          "\"email\":\"ann@x\"},\"maxQty\":1,\"customerName\":\"Ann Smith\"}");
    check(f, "orders-of-name", P("name=Ann Lee"), "[]");
    check(f, "orders-of-name", P("name=Ann Smith"), "[\"o1\",\"o3\",\"o2\",\"o4\"]");
    /* the customer plus its four orders' copies */
    assert_int_equal(log.count, 5);
    undo(f, &log);
    check(f, "orders-of-name", P("name=Ann Lee"), "[\"o1\",\"o3\",\"o2\",\"o4\"]");
}

static void test_insert_recomputes_aggregates_and_if_absent_skips(void **state)
{
    fixture *f = *state;
    kp_change_log log = {0};
    char reason[400];
    const char *order = "[{\"id\": \"o7\", \"customerId\": \"c2\", \"status\": \"OPEN\", \"total\": 1.01, "
                        "\"placedAt\": \"2026-02-01T00:00:00.000Z\"}]";
    assert_int_equal(apply(f, &log, "add-order", NULL, order, NULL, 0), KP_WRITE_APPLIED);
    check(f, "customer-by-email", P("email=bob@x"),
          "{\"id\":\"c2\",\"tier\":null,\"orderCount\":2,\"openTotal\":101.00,\"asked\":\"bob@x\"}");
    check(f, "order-with-customer", P("id=o7"),
          "{\"id\":\"o7\",\"shippedAt\":null,\"tier\":null,\"customer\":{\"name\":\"Bob Ray\","
          "\"email\":\"bob@x\"},\"maxQty\":null,\"customerName\":\"Bob Ray\"}");
    assert_int_equal(apply(f, &log, "add-order", NULL, order, reason, sizeof reason), KP_WRITE_SKIPPED);
    assert_string_equal(reason, "step 1 (insert Order): a Order with key o7 already exists (if_absent)");
    undo(f, &log);
    check(f, "order-with-customer", P("id=o7"), "null");
    check(f, "customer-by-email", P("email=bob@x"),
          "{\"id\":\"c2\",\"tier\":null,\"orderCount\":1,\"openTotal\":99.99,\"asked\":\"bob@x\"}");
}

static void test_delete_cascades_and_undo_restores_everything(void **state)
{
    fixture *f = *state;
    kp_change_log log = {0};
    assert_int_equal(apply(f, &log, "delete-customer", P("id=c1"), NULL, NULL, 0), KP_WRITE_APPLIED);
    check(f, "customer-by-email", P("email=ann@x"), "null");
    check(f, "order-lines", P("id=o1"), "null");
    check(f, "big-lines", NULL, "[\"p2\"]");
    check(f, "orders-by-status", P("status=OPEN", "n=10"), "[\"o5\"]");
    /* c1, its 4 orders and their 4 lines */
    size_t deletes = 0;
    for (size_t i = 0; i < log.count; i++) deletes += log.items[i].after == NULL;
    assert_int_equal(deletes, 9);
    undo(f, &log);
    check(f, "big-lines", NULL, "[\"p2\",\"p3\",\"p2\"]");
    check(f, "customer-by-email", P("email=ann@x"),
          "{\"id\":\"c1\",\"tier\":\"GOLD\",\"orderCount\":4,\"openTotal\":22.75,\"asked\":\"ann@x\"}");
    check(f, "customer-orders", P("id=c1"), "{\"name\":\"Ann Lee\",\"orders\":[{\"id\":\"o4\",\"total\":7.00,"
          "\"lines\":0},{\"id\":\"o2\",\"total\":20.00,\"lines\":1}],\"next\":\"WyIyMDI2LTAxLTAzVDAwOjAwOjAwLjAwMFoiLCJvMiJd\"}");
}

static void test_delete_restricted_by_dependents_is_refused(void **state)
{
    fixture *f = *state;
    kp_change_log log = {0};
    char reason[400];
    assert_int_equal(apply(f, &log, "delete-product", P("sku=p1"), NULL, reason, sizeof reason), KP_WRITE_REFUSED);
    assert_string_equal(reason, "step 1 (delete Product): Product p1 still has 3 Line records over relation "
                                "\"lineItems\" (on_delete restrict)");
    assert_int_equal(log.count, 0);
    check(f, "product", P("sku=p1"), "{\"stock\":10,\"price\":1.50,\"tagIds\":[\"t1\",\"t2\"]}");
    kp_change_log_free(&log);
}

static void test_delete_of_array_target_removes_the_references(void **state)
{
    fixture *f = *state;
    kp_change_log log = {0};
    assert_int_equal(apply(f, &log, "delete-tag", P("id=t1"), NULL, NULL, 0), KP_WRITE_APPLIED);
    check(f, "product-tags", P("sku=p1"), "{\"tags\":[\"blue\"],\"sortedTags\":[\"blue\"]}");
    check(f, "product", P("sku=p2"), "{\"stock\":3,\"price\":2.00,\"tagIds\":[]}");
    undo(f, &log);
    check(f, "product-tags", P("sku=p1"), "{\"tags\":[\"office\",\"blue\"],\"sortedTags\":[\"blue\",\"office\"]}");
}

static void test_upsert_inserts_or_updates(void **state)
{
    fixture *f = *state;
    kp_change_log log = {0};
    assert_int_equal(apply(f, &log, "upsert-tag", P("id=t9", "label=new"), NULL, NULL, 0), KP_WRITE_APPLIED);
    assert_int_equal(apply(f, &log, "upsert-tag", P("id=t2", "label=navy"), NULL, NULL, 0), KP_WRITE_APPLIED);
    check(f, "product-tags", P("sku=p1"), "{\"tags\":[\"office\",\"navy\"],\"sortedTags\":[\"navy\",\"office\"]}");
    cJSON *key = cJSON_Parse("{\"id\":\"t9\"}");
    assert_non_null(kp_dataset_find_like(f->data, kp_model_entity(f->model, "Tag"), key));
    cJSON_Delete(key);
    undo(f, &log);
    check(f, "product-tags", P("sku=p1"), "{\"tags\":[\"office\",\"blue\"],\"sortedTags\":[\"blue\",\"office\"]}");
}

static void test_atomic_write_with_false_condition_changes_nothing(void **state)
{
    fixture *f = *state;
    kp_change_log log = {0};
    char reason[400];
    const char *line = "[{\"orderId\": \"o4\", \"n\": 1, \"sku\": \"p2\", \"qty\": 2, \"status\": \"OPEN\"}, null]";
    assert_int_equal(apply(f, &log, "take-stock", P("sku=p2", "qty=2"), line, NULL, 0), KP_WRITE_APPLIED);
    check(f, "product", P("sku=p2"), "{\"stock\":1,\"price\":2.00,\"tagIds\":[\"t1\"]}");
    check(f, "order-lines", P("id=o4"), "[{\"n\":1,\"qty\":2}]");
    const char *line2 = "[{\"orderId\": \"o4\", \"n\": 2, \"sku\": \"p2\", \"qty\": 2, \"status\": \"OPEN\"}, null]";
    assert_int_equal(apply(f, &log, "take-stock", P("sku=p2", "qty=2"), line2, reason, sizeof reason),
                     KP_WRITE_SKIPPED);
    assert_string_equal(reason, "step 2 (update Product): the \"if\" conditions do not hold for Product p2");
    check(f, "order-lines", P("id=o4"), "[{\"n\":1,\"qty\":2}]");
    check(f, "product", P("sku=p2"), "{\"stock\":1,\"price\":2.00,\"tagIds\":[\"t1\"]}");
    undo(f, &log);
    check(f, "order-lines", P("id=o4"), "[]");
    check(f, "product", P("sku=p2"), "{\"stock\":3,\"price\":2.00,\"tagIds\":[\"t1\"]}");
}

static void test_increment_is_exact_for_ints_and_decimals(void **state)
{
    fixture *f = *state;
    kp_change_log log = {0};
    assert_int_equal(apply(f, &log, "restock", P("sku=p3", "qty=5"), NULL, NULL, 0), KP_WRITE_APPLIED);
    check(f, "product", P("sku=p3"), "{\"stock\":5,\"price\":10.04,\"tagIds\":[]}");
    undo(f, &log);
    check(f, "product", P("sku=p3"), "{\"stock\":0,\"price\":9.99,\"tagIds\":[]}");
}

static void test_for_each_updates_every_reached_record(void **state)
{
    fixture *f = *state;
    kp_change_log log = {0};
    assert_int_equal(apply(f, &log, "ship-all", P("id=c2"), NULL, NULL, 0), KP_WRITE_APPLIED);
    check(f, "customer-by-email", P("email=bob@x"),
          "{\"id\":\"c2\",\"tier\":\"GOLD\",\"orderCount\":1,\"openTotal\":0,\"asked\":\"bob@x\"}");
    check(f, "orders-by-status", P("status=SHIPPED", "n=10"), "[\"o2\",\"o5\",\"o6\"]");
    undo(f, &log);
    check(f, "orders-by-status", P("status=SHIPPED", "n=10"), "[\"o2\",\"o6\"]");
}

/* Every record of every entity as one text, for before/after comparisons. */
static char *snapshot(fixture *f)
{
    cJSON *all = cJSON_CreateArray();
    for (size_t e = 0; e < f->model->entity_count; e++) {
        size_t n = 0;
        kp_record *const *records = kp_dataset_records(f->data, f->model->entities[e], &n);
        for (size_t i = 0; i < n; i++) cJSON_AddItemToArray(all, kp_data_copy(records[i]->object, NULL));
    }
    char *text = cJSON_PrintUnformatted(all);
    cJSON_Delete(all);
    return text;
}

static void test_generated_writes_apply_and_undo_exactly(void **state)
{
    fixture *f = *state;
    kp_error err;
    kp_generator *gen = NULL;
    if (kp_generator_new(f->model, 5, &gen, &err)) fail_msg("%s", err.message);
    char *before = snapshot(f);
    size_t applied = 0;
    for (size_t w = 0; w < f->model->write_count; w++)
        for (uint64_t seed = 1; seed <= 4; seed++) {
            kp_write_request request;
            if (kp_write_generate(f->data, gen, f->model->writes[w], seed, &request, &err))
                fail_msg("%s: %s", f->model->writes[w]->name, err.message);
            char *unchanged = snapshot(f);
            assert_string_equal(unchanged, before); /* generating leaves the data alone */
            free(unchanged);
            kp_change_log log = {0};
            kp_write_result result;
            if (kp_write_apply(f->data, &request, &log, &result, &err))
                fail_msg("%s: %s", f->model->writes[w]->name, err.message);
            /* the copies and aggregates it moved are recomputed: a full refresh moves none */
            if (kp_dataset_refresh(f->data, kp_test_stale, NULL, &err))
                fail_msg("%s: %s", f->model->writes[w]->name, err.message);
            applied += result.outcome == KP_WRITE_APPLIED;
            assert_int_equal(kp_change_log_undo(f->data, &log, 0, &err), 0);
            char *after = snapshot(f);
            assert_string_equal(after, before);
            free(after);
            kp_change_log_free(&log);
            kp_write_request_free(&request);
        }
    /* delete-product is always refused (every product has lines); most others apply */
    assert_true(applied >= 4 * (f->model->write_count - 2));
    free(before);
    kp_generator_free(gen);
}

/* ---- sampling --------------------------------------------------------------------------- */

static void test_sampled_parameters_exist_in_the_data_and_repeat_for_a_seed(void **state)
{
    fixture *f = *state;
    kp_error err;
    for (size_t i = 0; i < f->model->pattern_count; i++) {
        const kp_pattern *p = f->model->patterns[i];
        kp_sampler *a = NULL, *b = NULL;
        assert_int_equal(kp_sampler_new(f->data, 42, &a, &err), 0);
        assert_int_equal(kp_sampler_new(f->data, 42, &b, &err), 0);
        for (int k = 0; k < 20; k++) {
            kp_params *x = NULL, *y = NULL;
            if (kp_sample_params(a, p, &x, &err)) fail_msg("%s: %s", p->name, err.message);
            assert_int_equal(kp_sample_params(b, p, &y, &err), 0);
            cJSON *jx = kp_params_to_json(x), *jy = kp_params_to_json(y);
            char *tx = cJSON_PrintUnformatted(jx), *ty = cJSON_PrintUnformatted(jy);
            assert_string_equal(tx, ty);
            free(tx);
            free(ty);
            cJSON_Delete(jx);
            cJSON_Delete(jy);
            kp_oracle_result result;
            if (kp_oracle_run(f->data, p, x, NULL, &result, &err)) fail_msg("%s: %s", p->name, err.message);
            /* a single root drawn from the data always exists */
            if (!p->is_root_set) assert_false(cJSON_IsNull(result.response));
            kp_oracle_result_free(&result);
            kp_params_free(x);
            kp_params_free(y);
        }
        kp_sampler_free(a);
        kp_sampler_free(b);
    }
}

static void test_skewed_sampling_favours_the_first_keys(void **state)
{
    fixture *f = *state;
    kp_error err;
    kp_sampler *s = NULL;
    assert_int_equal(kp_sampler_new(f->data, 7, &s, &err), 0);
    const kp_entity *order = kp_model_entity(f->model, "Order");
    int first = 0, last = 0;
    for (int i = 0; i < 2000; i++) {
        const kp_record *r = kp_sample_record(s, order, 2.0);
        const char *id = cJSON_GetObjectItemCaseSensitive(r->object, "id")->valuestring;
        first += strcmp(id, "o1") == 0;
        last += strcmp(id, "o6") == 0;
    }
    /* weights 1, 1/4, ..., 1/36: o1 gets about 67 %, o6 about 2 % */
    assert_true(first > 1200 && first < 1500);
    assert_true(last > 10 && last < 100);
    kp_sampler_free(s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_token_pages_continue_exactly_and_end_with_null),
        cmocka_unit_test(test_bad_page_token_is_a_usage_error),
        cmocka_unit_test(test_where_on_related_items_with_optional_parameter),
        cmocka_unit_test(test_missing_single_root_makes_the_response_null),
        cmocka_unit_test(test_set_root_with_offset_paging_limit_parameter_and_defaults),
        cmocka_unit_test(test_parameters_are_checked),
        cmocka_unit_test(test_unique_lookup_derived_values_and_echoed_parameter),
        cmocka_unit_test(test_one_to_one_path_epoch_encoding_and_copies),
        cmocka_unit_test(test_array_references_keep_array_order_unless_ordered),
        cmocka_unit_test(test_many_to_many_through_both_directions_and_count),
        cmocka_unit_test(test_multi_hop_path_flattens_in_path_order),
        cmocka_unit_test(test_condition_through_a_to_one_path),
        cmocka_unit_test(test_nulls_first_then_key_breaks_ties),
        cmocka_unit_test(test_begins_with_and_literal_conditions),
        cmocka_unit_test(test_between_orders_decimals_exactly_with_out_of_band_token),
        cmocka_unit_test(test_a_walk_with_the_oracle_cache_gives_every_page_as_without),
        cmocka_unit_test(test_update_follows_copies_and_undo_restores),
        cmocka_unit_test(test_insert_recomputes_aggregates_and_if_absent_skips),
        cmocka_unit_test(test_delete_cascades_and_undo_restores_everything),
        cmocka_unit_test(test_delete_restricted_by_dependents_is_refused),
        cmocka_unit_test(test_delete_of_array_target_removes_the_references),
        cmocka_unit_test(test_upsert_inserts_or_updates),
        cmocka_unit_test(test_atomic_write_with_false_condition_changes_nothing),
        cmocka_unit_test(test_increment_is_exact_for_ints_and_decimals),
        cmocka_unit_test(test_for_each_updates_every_reached_record),
        cmocka_unit_test(test_generated_writes_apply_and_undo_exactly),
        cmocka_unit_test(test_sampled_parameters_exist_in_the_data_and_repeat_for_a_seed),
        cmocka_unit_test(test_skewed_sampling_favours_the_first_keys),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
