/*
 * test_data.c — the NDJSON loader: every kind of bad line gives its exact
 * `file:line:col: error:` message; good data keeps exact numbers and fills in
 * computed attributes. Uses the model and data of tests/fixtures/oracle, replacing
 * one entity's file per case.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "core/data.h"
#include "core/json.h"
#include "core/model.h"
#include "support.h"

static kp_model *model;

static int setup(void **state)
{
    kp_error err;
    kp_model_options options = {.scale = 1};
    if (kp_model_load(KP_SOURCE_DIR "/tests/fixtures/oracle/model.json", &options, &model, &err)) {
        kp_error_print(stderr, &err);
        return -1;
    }
    (void)state;
    return 0;
}

static int teardown(void **state)
{
    kp_model_free(model);
    (void)state;
    return 0;
}

/* Loads the fixture data with `entity`'s file replaced by `text`; returns the dataset
 * (NULL on error) and the printed error in message. */
static kp_dataset *load_with(const char *entity, const char *text, char *message, size_t size)
{
    kp_dataset *ds = NULL;
    kp_error err;
    message[0] = '\0';
    assert_int_equal(kp_dataset_new(model, &ds, &err), 0);
    for (size_t i = 0; i < model->entity_count; i++) {
        const char *name = model->entities[i]->name;
        char path[512], file[300];
        snprintf(file, sizeof file, "%s.ndjson", name);
        int rc;
        if (strcmp(name, entity) == 0) {
            rc = kp_dataset_add_ndjson(ds, model->entities[i], file, text, strlen(text), &err);
        } else {
            snprintf(path, sizeof path, "tests/fixtures/oracle/data/%s.ndjson", name);
            size_t len = 0;
            char *fixture = kp_test_read_file(path, &len);
            assert_non_null(fixture);
            rc = kp_dataset_add_ndjson(ds, model->entities[i], file, fixture, len, &err);
            free(fixture);
        }
        if (rc) goto failed;
    }
    if (kp_dataset_finish(ds, &err)) goto failed;
    return ds;
failed: {
    FILE *f = fmemopen(message, size, "w");
    kp_error_print(f, &err);
    fclose(f);
    size_t n = strlen(message);
    if (n && message[n - 1] == '\n') message[n - 1] = '\0';
    kp_dataset_free(ds);
    return NULL;
}
}

static void expect_error(const char *entity, const char *text, const char *expected)
{
    char message[1024];
    kp_dataset *ds = load_with(entity, text, message, sizeof message);
    if (ds) { kp_dataset_free(ds); fail_msg("no error for %s: %s", entity, text); }
    if (strcmp(message, expected) != 0) fail_msg("\n  expected %s\n  got      %s", expected, message);
}

static void test_a_line_that_is_not_json(void **state)
{
    expect_error("Tag", "{\"id\": \"t1\", \"label\": \"office\"}\n{\"id\": \"t2\", \"label\": }\n",
                 "Tag.ndjson:2:23: error: this is not valid JSON here: the key \"label\" has no value; write one after its ':'");
    expect_error("Tag", "{\"id\": \"t1\", \"label\": \"office\"} {\"id\": \"t2\"}\n",
                 "Tag.ndjson:1:33: error: more than one JSON value on this line; NDJSON holds one record per line");
    expect_error("Tag", "{\"id\": \"t1\",\n\"label\": \"office\"}\n",
                 "Tag.ndjson:1:13: error: the line ends before the JSON record is complete; check for a missing "
                 "bracket or quote (a record may not span lines)");
    expect_error("Tag", "{\"id\": \"t1\", \"label\": \"a\", \"label\": \"b\"}\n",
                 "Tag.ndjson:1:28: error: duplicate key \"label\" (first defined at line 1, column 14); keep one of "
                 "them");
    expect_error("Tag", "{\"id\": \"t1\", \"label\": \"caf\xe9\"}\n",
                 "Tag.ndjson:1:27: error: invalid UTF-8 (byte 0xE9); save the file as UTF-8");
    (void)state;
}

static void test_a_record_that_is_not_an_object(void **state)
{
    expect_error("Tag", "[\"t1\", \"office\"]\n",
                 "Tag.ndjson:1:1: error: a Tag record must be a JSON object, not an array; write one object per line");
    (void)state;
}

static void test_unknown_attribute_with_a_suggestion(void **state)
{
    expect_error("Tag", "{\"id\": \"t1\", \"lable\": \"office\"}\n",
                 "Tag.ndjson:1:14: error: unknown attribute \"lable\" for entity Tag (did you mean \"label\"?)");
    expect_error("Tag", "{\"id\": \"t1\", \"label\": \"office\", \"colour\": \"red\"}\n",
                 "Tag.ndjson:1:33: error: unknown attribute \"colour\" for entity Tag; declare it in the model or "
                 "remove it");
    (void)state;
}

static void test_wrong_types(void **state)
{
    expect_error("Tag", "{\"id\": \"t1\", \"label\": 5}\n",
                 "Tag.ndjson:1:23: error: attribute \"label\" of Tag: expected a string like \"text\", got 5");
    expect_error("Line", "{\"orderId\": \"o1\", \"n\": 1.5, \"sku\": \"p1\", \"qty\": 2, \"status\": \"OPEN\"}\n",
                 "Line.ndjson:1:24: error: attribute \"n\" of Line: expected a 64-bit integer written with digits "
                 "only, like 42, got 1.5");
    expect_error("Line", "{\"orderId\": \"o1\", \"n\": 12345678901234567890, \"sku\": \"p1\", \"qty\": 2, \"status\": "
                 "\"OPEN\"}\n",
                 "Line.ndjson:1:24: error: attribute \"n\" of Line: expected a 64-bit integer written with digits "
                 "only, like 42, got 12345678901234567890");
    expect_error("Order", "{\"id\": \"o1\", \"customerId\": \"c1\", \"status\": \"OPEN\", \"total\": 1e2, "
                 "\"placedAt\": \"2026-01-01T00:00:00.000Z\"}\n",
                 "Order.ndjson:1:61: error: attribute \"total\" of Order: expected a decimal written without an "
                 "exponent, like 19.99, got 1e2");
    expect_error("Order", "{\"id\": \"o1\", \"customerId\": \"c1\", \"status\": \"LOST\", \"total\": 1, "
                 "\"placedAt\": \"2026-01-01T00:00:00.000Z\"}\n",
                 "Order.ndjson:1:44: error: attribute \"status\" of Order: expected one of the enum's values: OPEN, "
                 "SHIPPED, got \"LOST\"");
    expect_error("Order", "{\"id\": \"o1\", \"customerId\": \"c1\", \"status\": \"OPEN\", \"total\": 1, "
                 "\"placedAt\": \"2026-01-01 00:00\"}\n",
                 "Order.ndjson:1:76: error: attribute \"placedAt\" of Order: expected a UTC timestamp with "
                 "milliseconds like \"2026-04-01T09:30:00.000Z\", got \"2026-01-01 00:00\"");
    expect_error("Product", "{\"sku\": \"p1\", \"name\": \"Pen\", \"stock\": 1, \"price\": 1, \"tagIds\": [\"t1\", 2]}\n",
                 "Product.ndjson:1:71: error: attribute \"tagIds\" of Product: expected a string like \"text\", got 2");
    (void)state;
}

static void test_null_and_missing_required_attributes(void **state)
{
    expect_error("Tag", "{\"id\": \"t1\", \"label\": null}\n",
                 "Tag.ndjson:1:23: error: attribute \"label\" of Tag is null, but it is not optional; give it a value "
                 "or mark it \"optional\" in the model");
    expect_error("Tag", "{\"id\": \"t1\"}\n",
                 "Tag.ndjson:1:1: error: the Tag record has no \"label\"; it is required (mark it \"optional\" in the "
                 "model if records may lack it)");
    expect_error("Tag", "\n  {\"label\": \"office\"}\n",
                 "Tag.ndjson:2:3: error: the Tag record has no key attribute \"id\"; every record needs its whole key");
    (void)state;
}

static void test_duplicate_keys_and_unique_values(void **state)
{
    expect_error("Tag", "{\"id\": \"t1\", \"label\": \"office\"}\n{\"id\": \"t2\", \"label\": \"blue\"}\n"
                        "{\"id\": \"t1\", \"label\": \"again\"}\n",
                 "Tag.ndjson:3:8: error: duplicate key: a Tag with id \"t1\" is already on line 1; keys must be unique");
    expect_error("Follow", "{\"followerId\": \"u2\", \"followeeId\": \"u1\"}\n{\"followerId\": \"u2\", \"followeeId\": "
                           "\"u1\"}\n",
                 "Follow.ndjson:2:16: error: duplicate key: a Follow with key (\"u2\", \"u1\") is already on line 1; "
                 "keys must be unique");
    expect_error("Customer", "{\"id\": \"c1\", \"name\": \"A\", \"email\": \"a@x\"}\n{\"id\": \"c2\", \"name\": \"B\", "
                             "\"email\": \"b@x\"}\n{\"id\": \"c3\", \"name\": \"C\", \"email\": \"a@x\"}\n",
                 "Customer.ndjson:3:36: error: duplicate value for the unique attribute \"email\": the Customer with "
                 "email \"a@x\" is already on line 1");
    (void)state;
}

static void test_dangling_references(void **state)
{
    expect_error("Order", "{\"id\": \"o1\", \"customerId\": \"c1\", \"status\": \"OPEN\", \"total\": 1, \"placedAt\": "
                          "\"2026-01-01T00:00:00.000Z\"}\n{\"id\": \"o2\", \"customerId\": \"c9\", \"status\": \"OPEN\", "
                          "\"total\": 1, \"placedAt\": \"2026-01-01T00:00:00.000Z\"}\n",
                 "Order.ndjson:2:28: error: Order.customerId \"c9\" references no Customer (relation \"orders\"); add "
                 "the Customer or fix the reference");
    expect_error("Follow", "{\"followerId\": \"u2\", \"followeeId\": \"u9\"}\n",
                 "Follow.ndjson:1:36: error: Follow.followeeId \"u9\" references no User (relation \"following\" "
                 "through Follow); add the User or remove the link");
    expect_error("Product", "{\"sku\": \"p1\", \"name\": \"Pen\", \"stock\": 1, \"price\": 1, \"tagIds\": [\"t1\", "
                            "\"t9\"]}\n{\"sku\": \"p2\", \"name\": \"Pad\", \"stock\": 1, \"price\": 1, \"tagIds\": []}\n"
                            "{\"sku\": \"p3\", \"name\": \"Ink\", \"stock\": 1, \"price\": 1, \"tagIds\": []}\n",
                 "Product.ndjson:1:71: error: element \"t9\" of Product.tagIds references no Tag (relation \"tags\"); "
                 "add the Tag or remove the element");
    (void)state;
}

static void test_copies_and_derived_values_must_agree_with_the_data(void **state)
{
    size_t len = 0;
    char *orders = kp_test_read_file("tests/fixtures/oracle/data/Order.ndjson", &len);
    char *bad = malloc(len + 64);
    /* o1's copy of its customer's name is wrong */
    char *at = strstr(orders, "\"customerName\": \"Ann Lee\"");
    assert_non_null(at);
    snprintf(bad, len + 64, "%.*s\"customerName\": \"Ann Leigh\"%s", (int)(at - orders), orders,
             at + strlen("\"customerName\": \"Ann Lee\""));
    expect_error("Order", bad,
                 "Order.ndjson:1:50: error: Order.customerName is \"Ann Leigh\" but the data gives \"Ann Lee\" "
                 "(customer.name (copy_of)); fix it, or leave it out and keyplan computes it");
    free(bad);
    free(orders);
    expect_error("Customer", "{\"id\": \"c1\", \"name\": \"Ann Lee\", \"email\": \"ann@x\", \"orderCount\": 3}\n"
                             "{\"id\": \"c2\", \"name\": \"Bob Ray\", \"email\": \"bob@x\"}\n"
                             "{\"id\": \"c3\", \"name\": \"Cy Ann\", \"email\": \"cy@x\"}\n",
                 "Customer.ndjson:1:65: error: Customer.orderCount is 3 but the data gives 4 (count of orders); fix it, "
                 "or leave it out and keyplan computes it");
    expect_error("Customer", "{\"id\": \"c1\", \"name\": \"Ann Lee\", \"email\": \"ann@x\", \"openTotal\": 22.76}\n"
                             "{\"id\": \"c2\", \"name\": \"Bob Ray\", \"email\": \"bob@x\"}\n"
                             "{\"id\": \"c3\", \"name\": \"Cy Ann\", \"email\": \"cy@x\"}\n",
                 "Customer.ndjson:1:64: error: Customer.openTotal is 22.76 but the data gives 22.75 (sum of "
                 "orders.total); fix it, or leave it out and keyplan computes it");
    (void)state;
}

static void test_good_data_keeps_exact_numbers_and_fills_computed_values(void **state)
{
    char message[1024];
    size_t len = 0;
    char *lines = kp_test_read_file("tests/fixtures/oracle/data/Line.ndjson", &len);
    char *text = malloc(len + 256);
    snprintf(text, len + 256, "\r\n%s{\"orderId\": \"o4\", \"n\": 9007199254740993, \"sku\": \"p1\", \"qty\": 2, "
             "\"status\": \"OPEN\"}\r\n\n   \n", lines);
    kp_dataset *ds = load_with("Line", text, message, sizeof message);
    free(lines);
    free(text);
    if (!ds) fail_msg("%s", message);
    const kp_entity *line = kp_model_entity(model, "Line");
    assert_int_equal(kp_dataset_count(ds, line), 8);
    size_t n = 0;
    kp_record *const *records = kp_dataset_records(ds, line, &n);
    assert_int_equal(records[0]->line, 2);
    assert_int_equal(records[7]->line, 9);
    const cJSON *big = kp_record_get(records[7], kp_entity_attr(line, "n"));
    assert_true(cJSON_IsRaw(big));
    assert_string_equal(big->valuestring, "9007199254740993");
    /* derived values left out of the files are computed; decimals keep their text */
    const kp_entity *customer = kp_model_entity(model, "Customer");
    const cJSON *id = cJSON_CreateString("c2");
    const kp_record *c2 = kp_dataset_find(ds, customer, &id);
    cJSON_Delete((cJSON *)id);
    text = cJSON_PrintUnformatted(c2->object);
    assert_string_equal(text, "{\"id\":\"c2\",\"name\":\"Bob Ray\",\"email\":\"bob@x\",\"orderCount\":1,"
                              "\"openTotal\":99.99}");
    free(text);
    kp_dataset_free(ds);
    (void)state;
}

static void write_file(const char *dir, const char *name, const char *text)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

static void test_data_directory_needs_one_file_per_entity_and_no_strangers(void **state)
{
    char dir[] = "/tmp/kp-test-data-XXXXXX";
    assert_non_null(mkdtemp(dir));
    for (size_t i = 0; i < model->entity_count; i++) {
        char name[300];
        snprintf(name, sizeof name, "%s.ndjson", model->entities[i]->name);
        write_file(dir, name, "");
    }
    kp_dataset *ds = NULL;
    kp_error err;
    assert_int_equal(kp_dataset_load(model, dir, &ds, &err), 0);
    assert_int_equal(kp_dataset_count(ds, kp_model_entity(model, "Tag")), 0);
    kp_dataset_free(ds);
    /* a record on a line of a real file: the message names the path */
    write_file(dir, "Tag.ndjson", "{\"id\": \"t1\", \"label\": 1}\n");
    assert_int_equal(kp_dataset_load(model, dir, &ds, &err), -1);
    char expected[600];
    snprintf(expected, sizeof expected, "%s/Tag.ndjson", dir);
    assert_string_equal(err.file, expected);
    assert_int_equal(err.line, 1);
    assert_int_equal(err.column, 23);
    write_file(dir, "Tag.ndjson", "");
    /* a reference error found after loading is located by re-reading its line */
    write_file(dir, "Follow.ndjson", "{\"followerId\": \"u1\", \"followeeId\": \"u2\"}\n");
    assert_int_equal(kp_dataset_load(model, dir, &ds, &err), -1);
    assert_int_equal(err.line, 1);
    assert_int_equal(err.column, 16);
    assert_string_equal(err.message, "Follow.followerId \"u1\" references no User (relation \"following\" through "
                                     "Follow); add the User or remove the link");
    write_file(dir, "Follow.ndjson", "");
    write_file(dir, "Tags.ndjson", "");
    assert_int_equal(kp_dataset_load(model, dir, &ds, &err), -1);
    assert_int_equal(err.code, KP_ERR_DATA);
    assert_string_equal(err.message, "the data file names no entity of model oracle-shop (did you mean 'Tag.ndjson'?); "
                                     "rename or remove it");
    char path[600];
    snprintf(path, sizeof path, "%s/Tags.ndjson", dir);
    unlink(path);
    snprintf(path, sizeof path, "%s/User.ndjson", dir);
    unlink(path);
    assert_int_equal(kp_dataset_load(model, dir, &ds, &err), -1);
    assert_int_equal(err.code, KP_ERR_IO);
    assert_string_equal(err.message, "no data file for entity User; write one record per line (an empty file for an "
                                     "entity without records)");
    for (size_t i = 0; i < model->entity_count; i++) {
        snprintf(path, sizeof path, "%s/%s.ndjson", dir, model->entities[i]->name);
        unlink(path);
    }
    rmdir(dir);
    (void)state;
}

static void test_records_added_later_are_checked_and_indexed(void **state)
{
    char message[1024];
    kp_dataset *ds = load_with("Tag", "{\"id\": \"t1\", \"label\": \"office\"}\n{\"id\": \"t2\", \"label\": \"b\"}\n"
                                      "{\"id\": \"t3\", \"label\": \"c\"}\n", message, sizeof message);
    assert_non_null(ds);
    const kp_entity *tag = kp_model_entity(model, "Tag");
    kp_error err;
    assert_int_equal(kp_dataset_add(ds, tag, cJSON_Parse("{\"id\": \"t1\", \"label\": \"x\"}"), NULL, &err), -1);
    assert_string_equal(err.message, "duplicate key: a Tag with id \"t1\" is already on line 1; keys must be unique");
    assert_int_equal(kp_dataset_add(ds, tag, cJSON_Parse("{\"id\": \"t4\"}"), NULL, &err), -1);
    kp_record *added = NULL;
    assert_int_equal(kp_dataset_add(ds, tag, cJSON_Parse("{\"label\": \"new\", \"id\": \"t4\"}"), &added, &err), 0);
    char *text = cJSON_PrintUnformatted(added->object);
    assert_string_equal(text, "{\"id\":\"t4\",\"label\":\"new\"}");
    free(text);
    /* reachable over the inverse of the array relation once a product names it */
    const kp_entity *product = kp_model_entity(model, "Product");
    const cJSON *sku = cJSON_CreateString("p3");
    kp_record *p3 = kp_dataset_find(ds, product, &sku);
    cJSON_Delete((cJSON *)sku);
    assert_int_equal(kp_dataset_replace(ds, p3, cJSON_Parse("{\"sku\": \"p3\", \"name\": \"Ink\", \"stock\": 0, "
                                                            "\"price\": 9.99, \"tagIds\": [\"t4\"]}"), &err), 0);
    kp_record_list list = {0};
    assert_int_equal(kp_dataset_follow(ds, added, &kp_entity_rel(tag, "products")->relation->inverse, &list, &err), 0);
    assert_int_equal(list.count, 1);
    assert_ptr_equal(list.items[0], p3);
    kp_record_list_free(&list);
    assert_int_equal(kp_dataset_remove(ds, p3, &err), 0);
    assert_int_equal(kp_dataset_follow(ds, added, &kp_entity_rel(tag, "products")->relation->inverse, &list, &err), 0);
    assert_int_equal(list.count, 0);
    kp_record_list_free(&list);
    kp_dataset_free(ds);
    (void)state;
}

static void test_decimal_arithmetic_is_exact(void **state)
{
    static const char *const cases[][4] = {
        {"19.99", "0.01", "20.00", "19.98"}, {"-1.5", "1.5", "0.0", "-3.0"}, {"0", "0.001", "0.001", "-0.001"},
        {"99999999999999999999", "1", "100000000000000000000", "99999999999999999998"}, {"1.10", "2.2", "3.30", "-1.10"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char *sum = kp_decimal_add(cases[i][0], cases[i][1]), *difference = kp_decimal_sub(cases[i][0], cases[i][1]);
        assert_string_equal(sum, cases[i][2]);
        assert_string_equal(difference, cases[i][3]);
        free(sum);
        free(difference);
    }
    assert_null(kp_decimal_add("1e3", "1"));
    (void)state;
}

/* One test of a condition for the oracle and every backend's client-side filter: a
 * model literal compares by its source text, not as a double (0.1 and a value one part
 * in 10^17 above it are two values), and every operator reads the same way. */
static void test_one_condition_test_compares_numbers_exactly(void **state)
{
    (void)state;
    kp_json_doc *doc = NULL;
    kp_error err;
    assert_int_equal(kp_json_parse("lit.json", "[0.1, 5, 10]", 12, NULL, &doc, &err), 0);
    const cJSON *lit = kp_json_root(doc)->child, *five = lit->next, *ten = five->next;
    cJSON *above = cJSON_CreateRaw("0.10000000000000000555");
    cJSON *same = cJSON_CreateRaw("0.100");
    assert_false(kp_cond_holds(KP_OP_EQ, KP_T_DECIMAL, above, lit, NULL, doc));
    assert_true(kp_cond_holds(KP_OP_GT, KP_T_DECIMAL, above, lit, NULL, doc));
    assert_true(kp_cond_holds(KP_OP_EQ, KP_T_DECIMAL, same, lit, NULL, doc));
    cJSON *seven = cJSON_CreateNumber(7);
    assert_true(kp_cond_holds(KP_OP_BETWEEN, KP_T_INT, seven, five, ten, doc));
    assert_false(kp_cond_holds(KP_OP_BETWEEN, KP_T_INT, seven, ten, five, doc));
    assert_false(kp_cond_holds(KP_OP_LT, KP_T_INT, seven, five, NULL, doc));
    /* absent values satisfy nothing */
    assert_false(kp_cond_holds(KP_OP_EQ, KP_T_INT, NULL, five, NULL, doc));
    cJSON *null = cJSON_CreateNull();
    assert_false(kp_cond_holds(KP_OP_LE, KP_T_INT, null, five, NULL, doc));
    cJSON *s = cJSON_CreateString("PROJECT#42"), *prefix = cJSON_CreateString("PROJECT#");
    assert_true(kp_cond_holds(KP_OP_BEGINS_WITH, KP_T_STRING, s, prefix, NULL, doc));
    cJSON_Delete(above); cJSON_Delete(same); cJSON_Delete(seven); cJSON_Delete(null); cJSON_Delete(s); cJSON_Delete(prefix);
    kp_json_free(doc);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_one_condition_test_compares_numbers_exactly),
        cmocka_unit_test(test_a_line_that_is_not_json),
        cmocka_unit_test(test_a_record_that_is_not_an_object),
        cmocka_unit_test(test_unknown_attribute_with_a_suggestion),
        cmocka_unit_test(test_wrong_types),
        cmocka_unit_test(test_null_and_missing_required_attributes),
        cmocka_unit_test(test_duplicate_keys_and_unique_values),
        cmocka_unit_test(test_dangling_references),
        cmocka_unit_test(test_copies_and_derived_values_must_agree_with_the_data),
        cmocka_unit_test(test_good_data_keeps_exact_numbers_and_fills_computed_values),
        cmocka_unit_test(test_data_directory_needs_one_file_per_entity_and_no_strangers),
        cmocka_unit_test(test_records_added_later_are_checked_and_indexed),
        cmocka_unit_test(test_decimal_arithmetic_is_exact),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
