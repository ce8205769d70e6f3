/*
 * test_model_diff.c — `keyplan diff` on the SaaS example's version pairs
 * (examples/saas-control-plane/versions/): what is breaking for readers, and the steps
 * each database's design needs, with their items.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "core/model.h"
#include "migrations/migrate.h"
#include "migrations/model_diff.h"
#include "support.h"

static cJSON *diff_of(const char *version, int *breaking, int *changes)
{
    char a[512], b[512];
    snprintf(a, sizeof a, "examples/saas-control-plane/versions/%s/old.json", version);
    snprintf(b, sizeof b, "examples/saas-control-plane/versions/%s/new.json", version);
    kp_model *o = NULL, *n = NULL;
    kp_error err;
    if (kp_model_load(a, NULL, &o, &err) || kp_model_load(b, NULL, &n, &err)) fail_msg("%s", err.message);
    const kp_backend *backends[] = {kp_backend_find("dynamodb"), kp_backend_find("mongodb"), kp_backend_find("cassandra"), NULL};
    kp_diff_options opt = {backends, 1000};
    cJSON *doc = kp_model_diff(o, n, &opt, breaking, changes, &err);
    if (!doc) fail_msg("%s", err.message);
    kp_model_free(o);
    kp_model_free(n);
    return doc;
}

/* The steps of one database whose action is `action` (and, when given, on `container`). */
static int steps(const cJSON *doc, const char *db, const char *action, double *items)
{
    int n = 0;
    if (items) *items = 0;
    for (const cJSON *d = cJSON_GetObjectItem(doc, "databases")->child; d; d = d->next) {
        if (strcmp(cJSON_GetObjectItem(d, "database")->valuestring, db) != 0) continue;
        for (const cJSON *s = cJSON_GetObjectItem(d, "steps")->child; s; s = s->next)
            if (strcmp(cJSON_GetObjectItem(s, "action")->valuestring, action) == 0) {
                n++;
                const cJSON *i = cJSON_GetObjectItem(s, "items");
                if (items && i) *items += i->valuedouble;
            }
    }
    return n;
}

static int model_change(const cJSON *doc, const char *kind, const char *subject)
{
    for (const cJSON *c = cJSON_GetObjectItem(doc, "model_changes")->child; c; c = c->next)
        if (!strcmp(cJSON_GetObjectItem(c, "kind")->valuestring, kind) && !strcmp(cJSON_GetObjectItem(c, "subject")->valuestring, subject))
            return 1;
    return 0;
}

static int breaking_kind(const cJSON *doc, const char *kind, const char *subject)
{
    for (const cJSON *b = cJSON_GetObjectItem(doc, "breaking")->child; b; b = b->next)
        if (!strcmp(cJSON_GetObjectItem(b, "kind")->valuestring, kind) && !strcmp(cJSON_GetObjectItem(b, "subject")->valuestring, subject))
            return 1;
    return 0;
}

static void test_a_new_pattern_needs_an_index_and_breaks_nothing(void **state)
{
    (void)state;
    int breaking, changes;
    cJSON *doc = diff_of("1-add-pattern-new-index", &breaking, &changes);
    assert_int_equal(breaking, 0);
    assert_true(changes > 0);
    double items;
    /* DynamoDB: a global index and its backfill over the Project items */
    assert_int_equal(steps(doc, "dynamodb", "create-index", &items), 1);
    assert_true(items >= 2000000 * 0.99 && items <= 2000000 * 1.01);
    assert_int_equal(steps(doc, "dynamodb", "drop", NULL), 0);
    /* MongoDB: an index build; Cassandra: a new query table filled from the data */
    assert_int_equal(steps(doc, "mongodb", "create-index", NULL), 1);
    assert_int_equal(steps(doc, "cassandra", "create", &items), 1);
    assert_true(items > 0);
    assert_int_equal(steps(doc, "cassandra", "rewrite", NULL), 0);
    cJSON_Delete(doc);
}

static void test_a_removed_pattern_is_breaking_and_its_index_dropped_last(void **state)
{
    (void)state;
    int breaking, changes;
    cJSON *doc = diff_of("2-remove-pattern", &breaking, &changes);
    assert_int_equal(breaking, 1);
    assert_true(breaking_kind(doc, "pattern-removed", "list-active-projects"));
    assert_int_equal(steps(doc, "dynamodb", "drop-index", NULL), 1);
    assert_int_equal(steps(doc, "mongodb", "drop-index", NULL), 1);
    assert_int_equal(steps(doc, "cassandra", "drop", NULL), 1);
    assert_int_equal(steps(doc, "cassandra", "create", NULL), 0);
    cJSON_Delete(doc);
}

static void test_a_renamed_attribute_breaks_its_readers_and_rewrites_its_items(void **state)
{
    (void)state;
    int breaking, changes;
    cJSON *doc = diff_of("3-rename-attribute", &breaking, &changes);
    /* every pattern that returned Project.name answers otherwise */
    assert_int_equal(breaking, 3);
    assert_true(breaking_kind(doc, "pattern-response-changed", "get-project"));
    double items;
    assert_int_equal(steps(doc, "dynamodb", "rewrite", &items), 1);
    assert_true(items >= 2000000 * 0.99 && items <= 2000000 * 1.01);
    assert_int_equal(steps(doc, "mongodb", "rewrite", NULL), 1);
    /* Cassandra: every table that holds Project rows */
    assert_int_equal(steps(doc, "cassandra", "rewrite", NULL), 3);
    /* "renamed_from" makes it a rename (values kept), not a removal and an addition */
    assert_true(model_change(doc, "attribute-renamed", "Project.name"));
    assert_false(model_change(doc, "attribute-removed", "Project.name"));
    assert_false(model_change(doc, "attribute-added", "Project.title"));
    cJSON_Delete(doc);
}

static void test_another_sort_order_needs_a_new_index_and_drops_the_old(void **state)
{
    (void)state;
    int breaking, changes;
    cJSON *doc = diff_of("4-change-sort-order", &breaking, &changes);
    assert_int_equal(breaking, 1);
    assert_true(breaking_kind(doc, "pattern-response-changed", "list-projects-newest"));
    assert_int_equal(steps(doc, "mongodb", "create-index", NULL), 1);
    assert_int_equal(steps(doc, "mongodb", "drop-index", NULL), 1);
    assert_int_equal(steps(doc, "cassandra", "create", NULL), 1);
    assert_int_equal(steps(doc, "cassandra", "drop", NULL), 1);
    assert_true(steps(doc, "dynamodb", "rewrite", NULL) >= 1);
    cJSON_Delete(doc);
}

static void test_added_attributes_are_computed_or_backfilled(void **state)
{
    (void)state;
    int breaking, changes;
    cJSON *doc = diff_of("5-add-copied-attribute", &breaking, &changes);
    assert_true(model_change(doc, "attribute-added", "Project.workspacePlan"));
    assert_true(model_change(doc, "attribute-added", "Project.priority"));
    assert_int_equal(steps(doc, "cassandra", "rewrite", NULL), 3);
    cJSON_Delete(doc);
}

static void test_embedding_moves_records_into_their_parent_and_back(void **state)
{
    (void)state;
    int breaking, changes;
    cJSON *doc = diff_of("6-embed-relation", &breaking, &changes);
    assert_int_equal(steps(doc, "mongodb", "backfill", NULL), 1); /* Workspace documents now hold their projects */
    assert_int_equal(steps(doc, "mongodb", "drop", NULL), 1);     /* the Project collection, last */
    cJSON_Delete(doc);
    doc = diff_of("7-unembed-relation", &breaking, &changes);
    assert_int_equal(breaking, 0);
    assert_int_equal(steps(doc, "mongodb", "create", NULL), 1);   /* the Project collection, filled */
    assert_int_equal(steps(doc, "mongodb", "delete", NULL), 1);   /* out of the Workspace documents */
    cJSON_Delete(doc);
}

/* NEW's text with one substitution, parsed (NULL with err when it does not parse). */
static kp_model *new_with(const char *from, const char *to, kp_error *err)
{
    size_t len = 0;
    char *text = kp_test_read_file("examples/saas-control-plane/versions/5-add-copied-attribute/new.json", &len);
    assert_non_null(text);
    char *at = strstr(text, from);
    assert_non_null(at);
    size_t n = len - strlen(from) + strlen(to) + 1;
    char *edited = malloc(n);
    snprintf(edited, n, "%.*s%s%s", (int)(at - text), text, to, at + strlen(from));
    kp_model *m = NULL;
    kp_model_parse("new.json", edited, strlen(edited), NULL, &m, err);
    free(text);
    free(edited);
    return m;
}

static void test_migrate_refuses_a_required_attribute_without_a_backfill_value(void **state)
{
    (void)state;
    kp_error err;
    kp_model *old = NULL;
    if (kp_model_load("examples/saas-control-plane/versions/5-add-copied-attribute/old.json", NULL, &old, &err))
        fail_msg("%s", err.message);
    kp_model *ok = new_with("\"backfill\": 3", "\"backfill\": 3", &err);
    assert_non_null(ok);
    assert_int_equal(kp_migrate_check_models(old, ok, &err), 0);
    /* without it: refused, pointing at the attribute, saying what to write */
    kp_model *bare = new_with("\"backfill\": 3,", "", &err);
    assert_non_null(bare);
    assert_int_equal(kp_migrate_check_models(old, bare, &err), -1);
    assert_int_equal(err.code, KP_ERR_MODEL);
    assert_true(err.line > 0);
    assert_non_null(strstr(err.message, "Project.priority"));
    assert_non_null(strstr(err.message, "backfill"));
    /* a value of another type than the attribute's, or a rename onto itself: the model is refused */
    assert_null(new_with("\"backfill\": 3", "\"backfill\": \"high\"", &err));
    assert_non_null(strstr(err.message, "backfill"));
    assert_true(err.line > 0);
    assert_null(new_with("\"backfill\": 3", "\"backfill\": 3, \"renamed_from\": \"priority\"", &err));
    assert_non_null(strstr(err.message, "renamed_from"));
    /* another model name is not a version of the same model */
    kp_model *other = new_with("\"model\": \"saas-control-plane\"", "\"model\": \"other\"", &err);
    assert_non_null(other);
    assert_int_equal(kp_migrate_check_models(old, other, &err), -1);
    assert_non_null(strstr(err.message, "name"));
    kp_model_free(ok);
    kp_model_free(bare);
    kp_model_free(other);
    kp_model_free(old);
}

static void test_the_same_model_is_no_change(void **state)
{
    (void)state;
    kp_model *m = NULL;
    kp_error err;
    if (kp_model_load("examples/saas-control-plane/model.json", NULL, &m, &err)) fail_msg("%s", err.message);
    const kp_backend *backends[] = {kp_backend_find("dynamodb"), kp_backend_find("mongodb"), kp_backend_find("cassandra"), NULL};
    kp_diff_options opt = {backends, 0};
    int breaking = -1, changes = -1;
    cJSON *doc = kp_model_diff(m, m, &opt, &breaking, &changes, &err);
    assert_non_null(doc);
    assert_int_equal(breaking, 0);
    assert_int_equal(changes, 0);
    cJSON_Delete(doc);
    kp_model_free(m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_a_new_pattern_needs_an_index_and_breaks_nothing),
        cmocka_unit_test(test_a_removed_pattern_is_breaking_and_its_index_dropped_last),
        cmocka_unit_test(test_a_renamed_attribute_breaks_its_readers_and_rewrites_its_items),
        cmocka_unit_test(test_the_same_model_is_no_change),
        cmocka_unit_test(test_another_sort_order_needs_a_new_index_and_drops_the_old),
        cmocka_unit_test(test_added_attributes_are_computed_or_backfilled),
        cmocka_unit_test(test_embedding_moves_records_into_their_parent_and_back),
        cmocka_unit_test(test_migrate_refuses_a_required_attribute_without_a_backfill_value),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
