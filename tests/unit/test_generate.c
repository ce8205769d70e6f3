/*
 * test_generate.c — the sample-data generator (migrations/generate.c): the same seed
 * gives the same bytes, references are exact, fan-outs follow the declared average,
 * maximum and skew, every type is written in its canonical form, unique values never
 * repeat, copies and derived aggregates agree with the records they come from, fresh
 * records for writes collide with nothing, and `keyplan generate` fails clearly.
 */
#include <setjmp.h>
#include <signal.h>
#include <dirent.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include "core/model.h"
#include "core/value.h"
#include "migrations/gen_internal.h"
#include "migrations/generate.h"
#include "support.h"

/* A social model: 1:N with skew (posts), 1:1 (profile), N:M through a join with a
 * self-relation (follows), N:M as an array (tags), a composite key with a local
 * number, copies, derived aggregates with filters. Counts are small enough to hold
 * every record in memory here. */
static const char social_model[] =
    "{ \"model\": \"social\",\n"
    "  \"entities\": {\n"
    "    \"User\": { \"key\": [\"id\"], \"count\": 400, \"attributes\": {\n"
    "      \"id\": \"string\",\n"
    "      \"name\": { \"type\": \"string\", \"format\": \"name\" },\n"
    "      \"email\": { \"type\": \"string\", \"format\": \"email\", \"unique\": true },\n"
    "      \"handle\": { \"type\": \"string\", \"format\": \"handle\", \"unique\": true },\n"
    "      \"postCount\": { \"type\": \"int\", \"derived\": { \"count\": \"posts\" } },\n"
    "      \"publishedCount\": { \"type\": \"int\", \"derived\": { \"count\": \"posts\", \"where\": { \"status\": { \"=\": \"PUBLISHED\" } } } },\n"
    "      \"likesTotal\": { \"type\": \"int\", \"derived\": { \"sum\": \"posts.likes\" } },\n"
    "      \"earnings\": { \"type\": \"decimal\", \"derived\": { \"sum\": \"posts.revenue\", \"where\": { \"likes\": { \">=\": 50 } } } },\n"
    "      \"firstPostAt\": { \"type\": \"timestamp\", \"derived\": { \"min\": \"posts.createdAt\" } },\n"
    "      \"bestRevenue\": { \"type\": \"decimal\", \"derived\": { \"max\": \"posts.revenue\" } },\n"
    "      \"followerCount\": { \"type\": \"int\", \"derived\": { \"count\": \"followers\" } },\n"
    "      \"createdAt\": \"timestamp\" } },\n"
    "    \"Profile\": { \"key\": [\"userId\"], \"count\": 240, \"attributes\": {\n"
    "      \"userId\": \"string\", \"bio\": { \"type\": \"string\", \"format\": \"text\", \"size\": 200 },\n"
    "      \"userName\": { \"type\": \"string\", \"copy_of\": \"user.name\" } } },\n"
    "    \"Post\": { \"key\": [\"userId\", \"position\"], \"attributes\": {\n"
    "      \"userId\": \"string\", \"position\": \"int\",\n"
    "      \"title\": { \"type\": \"string\", \"format\": \"title\" },\n"
    "      \"status\": { \"type\": \"enum\", \"values\": [\"DRAFT\", \"PUBLISHED\"] },\n"
    "      \"likes\": { \"type\": \"int\", \"min\": 0, \"max\": 100 },\n"
    "      \"revenue\": { \"type\": \"decimal\", \"min\": 0, \"max\": 20 },\n"
    "      \"tagIds\": { \"type\": \"array\", \"items\": \"string\", \"avg_items\": 3, \"max_items\": 6 },\n"
    "      \"authorName\": { \"type\": \"string\", \"copy_of\": \"author.name\" },\n"
    "      \"createdAt\": \"timestamp\" } },\n"
    "    \"Follow\": { \"key\": [\"followerId\", \"followeeId\"], \"attributes\": {\n"
    "      \"followerId\": \"string\", \"followeeId\": \"string\", \"since\": \"timestamp\" } },\n"
    "    \"Tag\": { \"key\": [\"id\"], \"count\": 40, \"attributes\": { \"id\": \"string\", \"label\": { \"type\": \"string\", \"format\": \"word\" } } },\n"
    "    \"Category\": { \"key\": [\"id\"], \"count\": 50, \"attributes\": { \"id\": \"int\", \"name\": \"string\" } },\n"
    "    \"Item\": { \"key\": [\"id\"], \"attributes\": { \"id\": \"uuid\", \"categoryId\": \"int\" } }\n"
    "  },\n"
    "  \"relations\": [\n"
    "    { \"name\": \"posts\", \"from\": \"User\", \"to\": \"Post\", \"cardinality\": \"1:N\",\n"
    "      \"on\": { \"Post.userId\": \"User.id\" }, \"inverse\": \"author\", \"fanout\": { \"avg\": 5, \"max\": 120 }, \"skew\": 1.1 },\n"
    "    { \"name\": \"profile\", \"from\": \"User\", \"to\": \"Profile\", \"cardinality\": \"1:1\",\n"
    "      \"on\": { \"Profile.userId\": \"User.id\" }, \"inverse\": \"user\", \"fanout\": { \"avg\": 0.6, \"max\": 1 } },\n"
    "    { \"name\": \"following\", \"from\": \"User\", \"to\": \"User\", \"cardinality\": \"N:M\",\n"
    "      \"through\": { \"entity\": \"Follow\", \"from\": \"followerId\", \"to\": \"followeeId\" }, \"inverse\": \"followers\",\n"
    "      \"fanout\": { \"avg\": 8, \"max\": 60 }, \"inverse_fanout\": { \"avg\": 8, \"max\": 300 }, \"skew\": 1.2 },\n"
    "    { \"name\": \"tags\", \"from\": \"Post\", \"to\": \"Tag\", \"cardinality\": \"N:M\",\n"
    "      \"on\": { \"Post.tagIds\": \"Tag.id\" }, \"fanout\": { \"avg\": 3, \"max\": 6 } },\n"
    "    { \"name\": \"items\", \"from\": \"Category\", \"to\": \"Item\", \"cardinality\": \"1:N\",\n"
    "      \"on\": { \"Item.categoryId\": \"Category.id\" }, \"fanout\": { \"avg\": 40, \"max\": 60 } }\n"
    "  ],\n"
    "  \"access_patterns\": [ { \"name\": \"get-user\", \"rps\": 1, \"root\": \"User\", \"where\": { \"id\": \"=\" },\n"
    "                         \"returns\": { \"id\": \"User.id\" } } ] }\n";

/* Every type and format once. */
static const char types_model[] =
    "{ \"model\": \"types\",\n"
    "  \"entities\": {\n"
    "    \"Thing\": { \"key\": [\"id\"], \"count\": 600, \"attributes\": {\n"
    "      \"id\": { \"type\": \"timeuuid\" },\n"
    "      \"code\": { \"type\": \"string\", \"format\": \"time_id\", \"unique\": true },\n"
    "      \"name\": { \"type\": \"string\", \"format\": \"name\" },\n"
    "      \"first\": { \"type\": \"string\", \"format\": \"first_name\" },\n"
    "      \"last\": { \"type\": \"string\", \"format\": \"last_name\" },\n"
    "      \"mail\": { \"type\": \"string\", \"format\": \"email\" },\n"
    "      \"nick\": { \"type\": \"string\", \"format\": \"handle\" },\n"
    "      \"headline\": { \"type\": \"string\", \"format\": \"title\" },\n"
    "      \"body\": { \"type\": \"string\", \"format\": \"text\", \"size\": 300, \"max_size\": 400 },\n"
    "      \"word\": { \"type\": \"string\", \"format\": \"word\" },\n"
    "      \"site\": { \"type\": \"string\", \"format\": \"url\" },\n"
    "      \"tel\": { \"type\": \"string\", \"format\": \"phone\", \"unique\": true },\n"
    "      \"sku\": { \"type\": \"string\", \"format\": \"sku\" },\n"
    "      \"country\": { \"type\": \"string\", \"format\": \"country\" },\n"
    "      \"city\": { \"type\": \"string\", \"format\": \"city\" },\n"
    "      \"plain\": { \"type\": \"string\", \"size\": 40 },\n"
    "      \"count\": { \"type\": \"int\", \"min\": -5, \"max\": 5 },\n"
    "      \"big\": { \"type\": \"int\", \"min\": 9007199254740993, \"max\": 9007199254740999 },\n"
    "      \"seq\": { \"type\": \"int\", \"unique\": true },\n"
    "      \"price\": { \"type\": \"decimal\", \"min\": 0.5, \"max\": 2.25 },\n"
    "      \"ratio\": { \"type\": \"double\", \"min\": -1, \"max\": 1 },\n"
    "      \"flag\": \"bool\",\n"
    "      \"at\": { \"type\": \"timestamp\", \"min\": \"2025-01-01T00:00:00.000Z\", \"max\": \"2025-01-31T23:59:59.999Z\" },\n"
    "      \"later\": \"timestamp\",\n"
    "      \"day\": { \"type\": \"date\", \"min\": \"2024-02-27\", \"max\": \"2024-03-02\" },\n"
    "      \"ref\": \"uuid\",\n"
    "      \"event\": \"timeuuid\",\n"
    "      \"state\": { \"type\": \"enum\", \"values\": [\"A\", \"B \\\"quoted\\\"\", \"C\"] },\n"
    "      \"address\": { \"type\": \"object\", \"fields\": { \"street\": \"string\", \"zip\": { \"type\": \"string\", \"optional\": true },\n"
    "                    \"geo\": { \"type\": \"object\", \"fields\": { \"lat\": \"double\", \"lng\": \"double\" } } } },\n"
    "      \"scores\": { \"type\": \"array\", \"items\": \"int\", \"avg_items\": 4, \"max_items\": 5 },\n"
    "      \"byLang\": { \"type\": \"map\", \"key\": \"string\", \"value\": \"string\", \"avg_items\": 2, \"max_items\": 4 },\n"
    "      \"byYear\": { \"type\": \"map\", \"key\": \"int\", \"value\": \"decimal\", \"avg_items\": 2, \"max_items\": 4 },\n"
    "      \"byId\": { \"type\": \"map\", \"key\": \"uuid\", \"value\": \"bool\", \"avg_items\": 2, \"max_items\": 4 },\n"
    "      \"byDay\": { \"type\": \"map\", \"key\": \"date\", \"value\": \"timestamp\", \"avg_items\": 2, \"max_items\": 4 },\n"
    "      \"visits\": \"counter\",\n"
    "      \"avatar\": { \"type\": \"blob\", \"size\": 30 },\n"
    "      \"note\": { \"type\": \"string\", \"optional\": true, \"presence\": 0.3 } } }\n"
    "  },\n"
    "  \"access_patterns\": [ { \"name\": \"get\", \"rps\": 1, \"root\": \"Thing\", \"where\": { \"id\": \"=\" },\n"
    "                         \"returns\": { \"id\": \"Thing.id\" } } ] }\n";

/* ---- helpers -------------------------------------------------------------------------- */

static kp_model *parse_model(const char *text, double scale)
{
    kp_model *m = NULL;
    kp_error err;
    kp_model_options options = {.scale = scale};
    if (kp_model_parse("test-model.json", text, strlen(text), &options, &m, &err)) {
        kp_error_print(stderr, &err);
        fail_msg("the test model did not load");
    }
    return m;
}

static kp_generator *new_generator(const kp_model *m, uint64_t seed)
{
    kp_generator *g = NULL;
    kp_error err;
    if (kp_generator_new(m, seed, &g, &err)) {
        kp_error_print(stderr, &err);
        fail_msg("the generator refused the model");
    }
    return g;
}

typedef struct dataset {
    cJSON **records;
    int64_t count;
} dataset;

static dataset generate_all(kp_generator *g, const kp_entity *e)
{
    dataset d = {NULL, kp_generator_count(g, e)};
    d.records = calloc((size_t)(d.count ? d.count : 1), sizeof *d.records);
    for (int64_t i = 0; i < d.count; i++) {
        kp_error err;
        d.records[i] = kp_generator_record(g, e, i, &err);
        if (!d.records[i]) {
            kp_error_print(stderr, &err);
            fail_msg("record %lld of %s failed", (long long)i, e->name);
        }
    }
    return d;
}

static void dataset_free(dataset *d)
{
    for (int64_t i = 0; i < d->count; i++) cJSON_Delete(d->records[i]);
    free(d->records);
}

static char *text_of(const cJSON *node)
{
    char *s = cJSON_PrintUnformatted(node);
    assert_non_null(s);
    return s;
}

/* The record's key as one string: its key attributes' JSON, joined. */
static char *key_of(const cJSON *record, const kp_entity *e)
{
    size_t cap = 256, n = 0;
    char *key = calloc(cap, 1);
    for (size_t k = 0; k < e->key_count; k++) {
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(record, e->key[k]->name);
        assert_non_null(v);
        char *t = text_of(v);
        size_t len = strlen(t);
        while (n + len + 2 > cap) { cap *= 2; key = realloc(key, cap); }
        memcpy(key + n, t, len);
        n += len;
        key[n++] = '|';
        key[n] = '\0';
        cJSON_free(t);
    }
    return key;
}

/* A sorted set of strings (owned). */
typedef struct string_set {
    char **items;
    size_t count;
} string_set;

static int compare_strings(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

static void set_finish(string_set *s) { qsort(s->items, s->count, sizeof *s->items, compare_strings); }

static int set_has(const string_set *s, const char *item)
{
    return bsearch(&item, s->items, s->count, sizeof *s->items, compare_strings) != NULL;
}

static size_t set_duplicates(const string_set *s)
{
    size_t d = 0;
    for (size_t i = 1; i < s->count; i++) d += strcmp(s->items[i - 1], s->items[i]) == 0;
    return d;
}

static void set_free(string_set *s)
{
    for (size_t i = 0; i < s->count; i++) free(s->items[i]);
    free(s->items);
}

static string_set keys_of(const dataset *d, const kp_entity *e)
{
    string_set s = {calloc((size_t)(d->count ? d->count : 1), sizeof(char *)), (size_t)d->count};
    for (int64_t i = 0; i < d->count; i++) s.items[i] = key_of(d->records[i], e);
    set_finish(&s);
    return s;
}

/* The values of one attribute over the records that have it, as JSON texts. */
static string_set values_of(const dataset *d, const char *attr)
{
    string_set s = {calloc((size_t)(d->count ? d->count : 1), sizeof(char *)), 0};
    for (int64_t i = 0; i < d->count; i++) {
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(d->records[i], attr);
        if (v) s.items[s.count++] = text_of(v);
    }
    set_finish(&s);
    return s;
}

static const char *str(const cJSON *record, const char *attr)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(record, attr);
    assert_non_null(v);
    assert_true(cJSON_IsString(v));
    return v->valuestring;
}

static const char *number_text(const cJSON *record, const char *attr)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(record, attr);
    assert_non_null(v);
    assert_true(cJSON_IsRaw(v));
    return v->valuestring;
}

static int64_t int_of(const cJSON *record, const char *attr)
{
    int64_t v;
    const char *t = number_text(record, attr);
    assert_int_equal(kp_int_parse(t, strlen(t), &v), 0);
    return v;
}

/* cents of a canonical decimal with two places */
static int64_t cents_of(const char *t)
{
    size_t n = strlen(t);
    assert_true(n >= 4 && t[n - 3] == '.');
    char digits[64];
    size_t k = 0;
    for (size_t i = 0; i < n && k + 1 < sizeof digits; i++)
        if (t[i] != '.') digits[k++] = t[i];
    digits[k] = '\0';
    return strtoll(digits, NULL, 10);
}

static char *temp_dir(void)
{
    char *dir = strdup("/tmp/kp-test-generate-XXXXXX");
    assert_non_null(mkdtemp(dir));
    return dir;
}

static void remove_tree(const char *dir)
{
    char command[600];
    snprintf(command, sizeof command, "rm -rf '%s'", dir);
    assert_int_equal(system(command), 0);
}

/* ---- determinism ------------------------------------------------------------------------ */

static void test_same_seed_and_scale_give_byte_identical_files(void **state)
{
    (void)state;
    kp_model *m = parse_model(social_model, 1);
    char *a = temp_dir(), *b = temp_dir(), *c = temp_dir();
    kp_error err;
    kp_generate_options same = {.seed = 7}, other = {.seed = 8};
    kp_generate_stats stats;
    assert_int_equal(kp_generate_dataset(m, a, &same, &stats, &err), 0);
    assert_true(stats.records > 0);
    assert_int_equal(kp_generate_dataset(m, b, &same, NULL, &err), 0);
    assert_int_equal(kp_generate_dataset(m, c, &other, NULL, &err), 0);
    int differs = 0;
    for (size_t e = 0; e < m->entity_count; e++) {
        char pa[512], pb[512], pc[512];
        snprintf(pa, sizeof pa, "%s/%s.ndjson", a, m->entities[e]->name);
        snprintf(pb, sizeof pb, "%s/%s.ndjson", b, m->entities[e]->name);
        snprintf(pc, sizeof pc, "%s/%s.ndjson", c, m->entities[e]->name);
        size_t la, lb, lc;
        char *ta = kp_test_read_file(pa, &la), *tb = kp_test_read_file(pb, &lb), *tc = kp_test_read_file(pc, &lc);
        assert_non_null(ta);
        assert_non_null(tb);
        assert_non_null(tc);
        assert_int_equal(la, lb);
        assert_memory_equal(ta, tb, la);
        differs |= la != lc || memcmp(ta, tc, la) != 0;
        free(ta);
        free(tb);
        free(tc);
    }
    assert_true(differs);
    /* the write goes through DIR/.tmp, which is gone afterwards */
    char tmp[512];
    struct stat st;
    snprintf(tmp, sizeof tmp, "%s/.tmp", a);
    assert_int_not_equal(stat(tmp, &st), 0);
    remove_tree(a);
    remove_tree(b);
    remove_tree(c);
    free(a);
    free(b);
    free(c);
    kp_model_free(m);
}

static void test_a_record_does_not_depend_on_what_was_generated_before(void **state)
{
    (void)state;
    kp_model *m = parse_model(social_model, 1);
    kp_generator *g1 = new_generator(m, 3), *g2 = new_generator(m, 3);
    kp_entity *post = kp_model_entity(m, "Post"), *user = kp_model_entity(m, "User");
    kp_error err;
    /* g1 goes in order, g2 starts at the end and asks for values one by one */
    int64_t n = kp_generator_count(g1, post);
    cJSON *last2 = kp_generator_record(g2, post, n - 1, &err);
    cJSON *user2 = kp_generator_record(g2, user, 17, &err);
    for (int64_t i = 0; i < n - 1; i++) cJSON_Delete(kp_generator_record(g1, post, i, &err));
    cJSON *last1 = kp_generator_record(g1, post, n - 1, &err);
    cJSON *user1 = kp_generator_record(g1, user, 17, &err);
    assert_true(cJSON_Compare(last1, last2, 1));
    assert_true(cJSON_Compare(user1, user2, 1));
    for (size_t a = 0; a < post->attr_count; a++) {
        cJSON *v = NULL;
        assert_int_equal(kp_generator_value(g2, post->attrs[a], n - 1, &v, &err), 0);
        const cJSON *in_record = cJSON_GetObjectItemCaseSensitive(last1, post->attrs[a]->name);
        if (!in_record) assert_null(v);
        else assert_true(cJSON_Compare(v, in_record, 1));
        cJSON_Delete(v);
    }
    cJSON_Delete(last1);
    cJSON_Delete(last2);
    cJSON_Delete(user1);
    cJSON_Delete(user2);
    kp_generator_free(g1);
    kp_generator_free(g2);
    kp_model_free(m);
}

/* ---- references ---------------------------------------------------------------------------- */

static void test_every_reference_names_an_existing_record(void **state)
{
    (void)state;
    kp_model *m = parse_model(social_model, 1);
    kp_generator *g = new_generator(m, 1);
    kp_entity *user = kp_model_entity(m, "User"), *post = kp_model_entity(m, "Post"),
              *profile = kp_model_entity(m, "Profile"), *follow = kp_model_entity(m, "Follow"),
              *tag = kp_model_entity(m, "Tag"), *category = kp_model_entity(m, "Category"),
              *item = kp_model_entity(m, "Item");
    dataset users = generate_all(g, user), posts = generate_all(g, post), profiles = generate_all(g, profile),
            follows = generate_all(g, follow), tags = generate_all(g, tag), categories = generate_all(g, category),
            items = generate_all(g, item);
    string_set user_ids = values_of(&users, "id"), tag_ids = values_of(&tags, "id"),
               category_ids = values_of(&categories, "id");
    for (int64_t i = 0; i < posts.count; i++) {
        char *t = text_of(cJSON_GetObjectItemCaseSensitive(posts.records[i], "userId"));
        assert_true(set_has(&user_ids, t));
        cJSON_free(t);
        /* N:M as an array: existing tags, no tag twice */
        const cJSON *arr = cJSON_GetObjectItemCaseSensitive(posts.records[i], "tagIds");
        assert_true(cJSON_IsArray(arr));
        assert_true(cJSON_GetArraySize(arr) <= 6);
        string_set seen = {calloc(8, sizeof(char *)), 0};
        for (const cJSON *x = arr->child; x; x = x->next) {
            char *tx = text_of(x);
            assert_true(set_has(&tag_ids, tx));
            seen.items[seen.count++] = tx;
        }
        set_finish(&seen);
        assert_int_equal(set_duplicates(&seen), 0);
        for (size_t k = 0; k < seen.count; k++) cJSON_free(seen.items[k]);
        free(seen.items);
    }
    for (int64_t i = 0; i < items.count; i++) {
        char *t = text_of(cJSON_GetObjectItemCaseSensitive(items.records[i], "categoryId"));
        assert_true(set_has(&category_ids, t));
        cJSON_free(t);
    }
    /* 1:1: every profile has an existing user, no user has two; 60 % of users have one */
    string_set profile_users = values_of(&profiles, "userId");
    assert_int_equal(profile_users.count, 240);
    assert_int_equal(set_duplicates(&profile_users), 0);
    for (size_t i = 0; i < profile_users.count; i++) assert_true(set_has(&user_ids, profile_users.items[i]));
    /* N:M through a join: both sides exist, no pair twice, nobody follows themselves */
    string_set pairs = keys_of(&follows, follow);
    assert_int_equal(set_duplicates(&pairs), 0);
    for (int64_t i = 0; i < follows.count; i++) {
        char *a = text_of(cJSON_GetObjectItemCaseSensitive(follows.records[i], "followerId"));
        char *b = text_of(cJSON_GetObjectItemCaseSensitive(follows.records[i], "followeeId"));
        assert_true(set_has(&user_ids, a));
        assert_true(set_has(&user_ids, b));
        assert_string_not_equal(a, b);
        cJSON_free(a);
        cJSON_free(b);
    }
    set_free(&pairs);
    set_free(&profile_users);
    set_free(&user_ids);
    set_free(&tag_ids);
    set_free(&category_ids);
    dataset_free(&users);
    dataset_free(&posts);
    dataset_free(&profiles);
    dataset_free(&follows);
    dataset_free(&tags);
    dataset_free(&categories);
    dataset_free(&items);
    kp_generator_free(g);
    kp_model_free(m);
}

static void test_keys_and_unique_attributes_never_repeat(void **state)
{
    (void)state;
    kp_model *m = parse_model(social_model, 1);
    kp_generator *g = new_generator(m, 1);
    for (size_t e = 0; e < m->entity_count; e++) {
        kp_entity *entity = m->entities[e];
        dataset d = generate_all(g, entity);
        string_set keys = keys_of(&d, entity);
        assert_int_equal(set_duplicates(&keys), 0);
        set_free(&keys);
        for (size_t a = 0; a < entity->attr_count; a++) {
            if (!entity->attrs[a]->is_unique) continue;
            string_set values = values_of(&d, entity->attrs[a]->name);
            assert_int_equal(set_duplicates(&values), 0);
            set_free(&values);
        }
        dataset_free(&d);
    }
    kp_generator_free(g);
    kp_model_free(m);
}

/* ---- fan-out ----------------------------------------------------------------------------- */

/* Children per parent, by the parent's key text. */
static int64_t *children_per_parent(const dataset *parents, const char *parent_key, const dataset *children,
                                    const char *child_fk, int64_t *max_out, int64_t *total)
{
    string_set ids = values_of(parents, parent_key);
    int64_t *counts = calloc(ids.count ? ids.count : 1, sizeof *counts);
    *total = 0;
    for (int64_t i = 0; i < children->count; i++) {
        char *t = text_of(cJSON_GetObjectItemCaseSensitive(children->records[i], child_fk));
        char **hit = bsearch(&t, ids.items, ids.count, sizeof *ids.items, compare_strings);
        assert_non_null(hit);
        counts[hit - ids.items]++;
        (*total)++;
        cJSON_free(t);
    }
    *max_out = 0;
    for (size_t p = 0; p < ids.count; p++)
        if (counts[p] > *max_out) *max_out = counts[p];
    set_free(&ids);
    return counts;
}

static void test_fanout_mean_is_within_5_percent_of_the_declared_average(void **state)
{
    (void)state;
    /* at scale 1 and at scale 0.5: counts scale, the average fan-out is kept */
    double scales[] = {1, 0.5};
    for (int s = 0; s < 2; s++) {
        kp_model *m = parse_model(social_model, scales[s]);
        kp_generator *g = new_generator(m, 11);
        dataset users = generate_all(g, kp_model_entity(m, "User")), posts = generate_all(g, kp_model_entity(m, "Post")),
                categories = generate_all(g, kp_model_entity(m, "Category")), items = generate_all(g, kp_model_entity(m, "Item"));
        int64_t max, total;
        free(children_per_parent(&users, "id", &posts, "userId", &max, &total));
        double mean = (double)total / (double)users.count;
        assert_true(users.count == (int64_t)(400 * scales[s]));
        assert_true(mean >= 5 * 0.95 && mean <= 5 * 1.05);
        free(children_per_parent(&categories, "id", &items, "categoryId", &max, &total));
        mean = (double)total / (double)categories.count;
        assert_true(mean >= 40 * 0.95 && mean <= 40 * 1.05);
        assert_true(max <= 60); /* no skew: spread around the average, never above the max */
        dataset_free(&users);
        dataset_free(&posts);
        dataset_free(&categories);
        dataset_free(&items);
        kp_generator_free(g);
        kp_model_free(m);
    }
}

static void test_skewed_relation_has_a_heavy_parent_with_exactly_the_declared_maximum(void **state)
{
    (void)state;
    kp_model *m = parse_model(social_model, 1);
    kp_generator *g = new_generator(m, 5);
    dataset users = generate_all(g, kp_model_entity(m, "User")), posts = generate_all(g, kp_model_entity(m, "Post")),
            follows = generate_all(g, kp_model_entity(m, "Follow"));
    int64_t max, total;
    int64_t *counts = children_per_parent(&users, "id", &posts, "userId", &max, &total);
    assert_int_equal(max, 120); /* posts: avg 5, max 120, skew 1.1 */
    /* a few very large parents, most small: the median is well below the average */
    int below_average = 0;
    for (int64_t p = 0; p < users.count; p++) below_average += counts[p] < 5;
    assert_true(below_average > users.count / 2);
    free(counts);
    /* the join's fan-out (following: avg 8, max 60, skew 1.2) */
    free(children_per_parent(&users, "id", &follows, "followerId", &max, &total));
    assert_int_equal(max, 60);
    double mean = (double)total / (double)users.count;
    assert_true(mean >= 8 * 0.95 && mean <= 8 * 1.05);
    dataset_free(&users);
    dataset_free(&posts);
    dataset_free(&follows);
    kp_generator_free(g);
    kp_model_free(m);
}

static void test_fanout_vector_sums_exactly_and_respects_the_cap(void **state)
{
    (void)state;
    kp_error err;
    struct { int64_t parents, total; double max, skew; } cases[] = {
        {1000, 200000, 1000, 1.1}, {1000, 200000, 1000000, 1.1}, {10, 1000, 500, 0.8}, {7, 3, 10, 1.5},
        {1000, 3000, 3, 0}, {1000, 3000, 0, 0}, {1, 50, 10, 1.2}, {100000, 2200000, 50, 0}};
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        kp_gen_fanout f;
        assert_int_equal(kp_gen_fanout_build(&f, cases[c].parents, cases[c].total, cases[c].max, cases[c].skew, 42, &err), 0);
        /* counts sum to the total, none above the cap, and the ranges tile [0, total) */
        int64_t top = 0, sum = 0;
        int64_t *starts = calloc((size_t)cases[c].total + 1, sizeof *starts);
        for (int64_t p = 0; p < f.parents; p++) {
            int64_t n = kp_gen_fanout_count(&f, p), start = kp_gen_fanout_start(&f, p);
            assert_true(n >= 0);
            assert_true(n <= f.max);
            assert_true(start >= 0 && start + n <= cases[c].total);
            for (int64_t k = 0; k < n; k++) starts[start + k]++;
            if (n > top) top = n;
            sum += n;
        }
        assert_int_equal(sum, cases[c].total);
        for (int64_t pos = 0; pos < cases[c].total; pos++) assert_int_equal(starts[pos], 1);
        free(starts);
        if (cases[c].skew > 0 && cases[c].parents > 1) {
            int64_t expect = (int64_t)cases[c].max;
            if (expect > (cases[c].total + 1) / 2) expect = (cases[c].total + 1) / 2;
            if (expect * cases[c].parents < cases[c].total) expect = (cases[c].total + cases[c].parents - 1) / cases[c].parents;
            assert_int_equal(top, expect);
        }
        /* the parent of every position owns it */
        for (int64_t pos = 0; pos < f.total; pos += 1 + f.total / 997) {
            int64_t p = kp_gen_fanout_parent(&f, pos);
            int64_t start = kp_gen_fanout_start(&f, p);
            assert_true(start <= pos && pos < start + kp_gen_fanout_count(&f, p));
        }
        kp_gen_fanout_free(&f);
    }
}

/* ---- values ----------------------------------------------------------------------------- */

static uint64_t timeuuid_ticks(const char *u)
{
    char low[9], mid[5], high[4];
    memcpy(low, u, 8); low[8] = '\0';
    memcpy(mid, u + 9, 4); mid[4] = '\0';
    memcpy(high, u + 15, 3); high[3] = '\0';
    return (strtoull(high, NULL, 16) << 48) | (strtoull(mid, NULL, 16) << 32) | strtoull(low, NULL, 16);
}

static void test_every_type_is_written_in_its_canonical_form(void **state)
{
    (void)state;
    kp_model *m = parse_model(types_model, 1);
    kp_generator *g = new_generator(m, 1);
    kp_entity *thing = kp_model_entity(m, "Thing");
    dataset d = generate_all(g, thing);
    assert_int_equal(d.count, 600);
    int64_t notes = 0, body_bytes = 0;
    uint64_t previous_ticks = 0;
    for (int64_t i = 0; i < d.count; i++) {
        const cJSON *r = d.records[i];
        /* every attribute present is canonical for its type; only `note` may be absent */
        for (size_t a = 0; a < thing->attr_count; a++) {
            const kp_attr *attr = thing->attrs[a];
            const cJSON *v = cJSON_GetObjectItemCaseSensitive(r, attr->name);
            if (!v) {
                assert_string_equal(attr->name, "note");
                continue;
            }
            const cJSON *bad = NULL;
            char why[256];
            if (kp_value_check(&attr->type, v, NULL, &bad, why, sizeof why)) {
                char *t = text_of(v);
                fail_msg("Thing.%s = %s: %s", attr->name, t, why);
            }
        }
        /* member order is the attribute order */
        size_t k = 0;
        for (const cJSON *member = r->child; member; member = member->next) {
            while (k < thing->attr_count && strcmp(thing->attrs[k]->name, member->string) != 0) k++;
            assert_true(k < thing->attr_count);
        }
        notes += cJSON_GetObjectItemCaseSensitive(r, "note") != NULL;
        int64_t count = int_of(r, "count");
        assert_true(count >= -5 && count <= 5);
        const char *big = number_text(r, "big"); /* exact beyond 2^53 */
        assert_true(kp_decimal_compare(big, strlen(big), "9007199254740993", 16) >= 0);
        assert_true(kp_decimal_compare(big, strlen(big), "9007199254740999", 16) <= 0);
        const char *price = number_text(r, "price");
        int64_t cents = cents_of(price);
        assert_true(cents >= 50 && cents <= 225);
        const char *ratio = number_text(r, "ratio");
        assert_true(strtod(ratio, NULL) >= -1 && strtod(ratio, NULL) <= 1);
        int64_t at;
        assert_int_equal(kp_timestamp_parse(str(r, "at"), &at), 0);
        assert_true(strncmp(str(r, "at"), "2025-01-", 8) == 0);
        int64_t later;
        assert_int_equal(kp_timestamp_parse(str(r, "later"), &later), 0);
        assert_true(later >= at); /* a timestamp without a range follows the record's first one */
        const char *day = str(r, "day");
        assert_true(strcmp(day, "2024-02-27") >= 0 && strcmp(day, "2024-03-02") <= 0);
        assert_int_equal(str(r, "ref")[14], '4'); /* uuid version 4 */
        assert_true(strchr("89ab", str(r, "ref")[19]) != NULL);
        /* timeuuids: version 1, time-ordered by record */
        const char *id = str(r, "id");
        assert_int_equal(id[14], '1');
        uint64_t ticks = timeuuid_ticks(id);
        assert_true(i == 0 || ticks > previous_ticks);
        previous_ticks = ticks;
        /* formats */
        assert_non_null(strchr(str(r, "mail"), '@'));
        assert_non_null(strstr(str(r, "site"), "https://"));
        assert_int_equal(str(r, "tel")[0], '+');
        assert_non_null(strchr(str(r, "name"), ' '));
        const char *code = str(r, "code");
        assert_int_equal(code[4], '-');
        body_bytes += (int64_t)strlen(str(r, "body"));
        assert_true(strlen(str(r, "body")) <= 400);
        const cJSON *scores = cJSON_GetObjectItemCaseSensitive(r, "scores");
        assert_true(cJSON_GetArraySize(scores) <= 5);
    }
    /* optional presence 0.3, strings near their size (300 bytes) */
    assert_true(notes > 600 * 0.22 && notes < 600 * 0.38);
    double mean_body = (double)body_bytes / 600.0;
    assert_true(mean_body > 300 * 0.9 && mean_body < 300 * 1.1);
    /* time ids are unique and increase with the record */
    string_set codes = values_of(&d, "code");
    assert_int_equal(set_duplicates(&codes), 0);
    set_free(&codes);
    for (int64_t i = 1; i < d.count; i++) assert_true(strcmp(str(d.records[i - 1], "code"), str(d.records[i], "code")) < 0);
    dataset_free(&d);
    kp_generator_free(g);
    kp_model_free(m);
}

static void test_fast_time_formatting_matches_core_value(void **state)
{
    (void)state;
    kp_gen_buf b = {0};
    kp_gen_rng rng = {99};
    for (int k = 0; k < 20000; k++) {
        /* 1900 .. 2200, plus the edges of days and leap years */
        int64_t ms = -2208988800000LL + (int64_t)kp_gen_below(&rng, 9467280000000ULL);
        if (k < 4) ms = (int64_t[]){0, -1, 951782400000LL, 951868799999LL}[k];
        char expect[32], quoted[40];
        kp_timestamp_format(ms, expect);
        snprintf(quoted, sizeof quoted, "\"%s\"", expect);
        b.len = 0;
        kp_gen_put_timestamp(&b, ms);
        kp_gen_terminate(&b);
        assert_string_equal(b.data, quoted);
        int32_t days = (int32_t)(ms / 86400000LL);
        char date[16];
        kp_date_format(days, date);
        snprintf(quoted, sizeof quoted, "\"%s\"", date);
        b.len = 0;
        kp_gen_put_date(&b, days);
        kp_gen_terminate(&b);
        assert_string_equal(b.data, quoted);
    }
    free(b.data);
}

/* A server may send any 64-bit millisecond count (fuzz_mongo_reply found one near INT64_MAX):
 * the floor division must not overflow, and the seconds just before the epoch stay right. */
static void test_a_timestamp_at_the_ends_of_int64_formats_without_overflow(void **state)
{
    (void)state;
    char out[32];
    kp_timestamp_format(-1, out);
    assert_string_equal(out, "1969-12-31T23:59:59.999Z");
    kp_timestamp_format(-1000, out);
    assert_string_equal(out, "1969-12-31T23:59:59.000Z");
    kp_timestamp_format(-86400001LL, out);
    assert_string_equal(out, "1969-12-30T23:59:59.999Z");
    int64_t ends[] = {INT64_MIN, INT64_MIN + 1, INT64_MAX, INT64_MAX - 41};
    for (size_t i = 0; i < sizeof ends / sizeof *ends; i++) {
        kp_timestamp_format(ends[i], out);
        size_t n = strlen(out);
        assert_true(n > 0 && out[n - 1] == 'Z');
    }
}

/* ---- copies and aggregates ------------------------------------------------------------------ */

static void test_copies_and_derived_aggregates_agree_with_the_records(void **state)
{
    (void)state;
    kp_model *m = parse_model(social_model, 1);
    kp_generator *g = new_generator(m, 2);
    dataset users = generate_all(g, kp_model_entity(m, "User")), posts = generate_all(g, kp_model_entity(m, "Post")),
            profiles = generate_all(g, kp_model_entity(m, "Profile")), follows = generate_all(g, kp_model_entity(m, "Follow"));
    for (int64_t u = 0; u < users.count; u++) {
        const cJSON *user = users.records[u];
        const char *id = str(user, "id");
        int64_t count = 0, published = 0, likes = 0, earnings = 0, best = -1, followers = 0;
        const char *first = NULL;
        for (int64_t p = 0; p < posts.count; p++) {
            const cJSON *post = posts.records[p];
            if (strcmp(str(post, "userId"), id) != 0) continue;
            assert_string_equal(str(post, "authorName"), str(user, "name")); /* copy_of author.name */
            count++;
            published += strcmp(str(post, "status"), "PUBLISHED") == 0;
            int64_t l = int_of(post, "likes");
            likes += l;
            int64_t revenue = cents_of(number_text(post, "revenue"));
            if (l >= 50) earnings += revenue;
            if (revenue > best) best = revenue;
            if (!first || strcmp(str(post, "createdAt"), first) < 0) first = str(post, "createdAt");
        }
        for (int64_t f = 0; f < follows.count; f++) followers += strcmp(str(follows.records[f], "followeeId"), id) == 0;
        assert_int_equal(int_of(user, "postCount"), count);
        assert_int_equal(int_of(user, "publishedCount"), published);
        assert_int_equal(int_of(user, "likesTotal"), likes);
        assert_int_equal(cents_of(number_text(user, "earnings")), earnings);
        assert_int_equal(int_of(user, "followerCount"), followers);
        if (count) {
            assert_string_equal(str(user, "firstPostAt"), first);
            assert_int_equal(cents_of(number_text(user, "bestRevenue")), best);
        } else {
            /* min and max over no records are absent */
            assert_null(cJSON_GetObjectItemCaseSensitive(user, "firstPostAt"));
            assert_null(cJSON_GetObjectItemCaseSensitive(user, "bestRevenue"));
        }
    }
    for (int64_t p = 0; p < profiles.count; p++) {
        const char *uid = str(profiles.records[p], "userId");
        int found = 0;
        for (int64_t u = 0; u < users.count && !found; u++) {
            if (strcmp(str(users.records[u], "id"), uid) != 0) continue;
            assert_string_equal(str(profiles.records[p], "userName"), str(users.records[u], "name"));
            found = 1;
        }
        assert_true(found);
    }
    /* a local number in a composite key counts 1, 2, ... within its parent */
    const char *previous_user = "";
    int64_t expect = 0;
    for (int64_t p = 0; p < posts.count; p++) {
        const char *uid = str(posts.records[p], "userId");
        expect = strcmp(uid, previous_user) == 0 ? expect + 1 : 1;
        previous_user = uid;
        assert_int_equal(int_of(posts.records[p], "position"), expect);
    }
    dataset_free(&users);
    dataset_free(&posts);
    dataset_free(&profiles);
    dataset_free(&follows);
    kp_generator_free(g);
    kp_model_free(m);
}

/* ---- writes ------------------------------------------------------------------------------- */

/* verify --writes draws fresh values at sequence numbers far past the data set (seed ×
 * 4096 and up): every type gives a value there, in defined arithmetic (the test suite
 * also runs under UBSan, which found a signed overflow in the timeuuid ticks). */
static void test_fresh_values_far_past_the_data_set_stay_defined(void **state)
{
    (void)state;
    kp_model *m = parse_model(types_model, 1);
    kp_generator *g = new_generator(m, 3);
    kp_entity *thing = kp_model_entity(m, "Thing");
    const uint64_t far[] = {4096ULL * 3, 1ULL << 40, (1ULL << 62) + 7, INT64_MAX - 1000};
    for (size_t f = 0; f < sizeof far / sizeof far[0]; f++) {
        for (size_t a = 0; a < thing->attr_count; a++) {
            cJSON *v = NULL;
            kp_error err;
            if (kp_generator_fresh_value(g, thing->attrs[a], far[f], &v, &err)) {
                kp_error_print(stderr, &err);
                fail_msg("no fresh %s at %llu", thing->attrs[a]->name, (unsigned long long)far[f]);
            }
            assert_non_null(v);
            cJSON_Delete(v);
        }
    }
    kp_generator_free(g);
    kp_model_free(m);
}

static void test_fresh_records_collide_with_nothing_and_reference_existing_records(void **state)
{
    (void)state;
    kp_model *m = parse_model(social_model, 1);
    kp_generator *g = new_generator(m, 4);
    const char *names[] = {"Post", "User", "Follow", "Item"};
    dataset users = generate_all(g, kp_model_entity(m, "User"));
    string_set user_ids = values_of(&users, "id"), emails = values_of(&users, "email");
    for (size_t n = 0; n < sizeof names / sizeof names[0]; n++) {
        kp_entity *e = kp_model_entity(m, names[n]);
        dataset d = generate_all(g, e);
        string_set keys = keys_of(&d, e);
        string_set fresh = {calloc(50, sizeof(char *)), 0};
        kp_error err;
        for (uint64_t s = 0; s < 50; s++) {
            cJSON *r = kp_generator_new_record(g, e, s, &err);
            if (!r) {
                kp_error_print(stderr, &err);
                fail_msg("fresh %s %llu failed", names[n], (unsigned long long)s);
            }
            char *key = key_of(r, e);
            assert_false(set_has(&keys, key));
            fresh.items[fresh.count++] = key;
            if (strcmp(names[n], "Post") == 0) {
                char *t = text_of(cJSON_GetObjectItemCaseSensitive(r, "userId"));
                assert_true(set_has(&user_ids, t));
                cJSON_free(t);
            }
            if (strcmp(names[n], "User") == 0) {
                char *t = text_of(cJSON_GetObjectItemCaseSensitive(r, "email"));
                assert_false(set_has(&emails, t));
                cJSON_free(t);
                assert_int_equal(int_of(r, "postCount"), 0); /* no related records yet */
                assert_null(cJSON_GetObjectItemCaseSensitive(r, "firstPostAt"));
            }
            if (strcmp(names[n], "Follow") == 0) {
                char *a = text_of(cJSON_GetObjectItemCaseSensitive(r, "followerId"));
                char *b = text_of(cJSON_GetObjectItemCaseSensitive(r, "followeeId"));
                assert_true(set_has(&user_ids, a));
                assert_true(set_has(&user_ids, b));
                cJSON_free(a);
                cJSON_free(b);
            }
            cJSON_Delete(r);
        }
        set_finish(&fresh);
        assert_int_equal(set_duplicates(&fresh), 0);
        set_free(&fresh);
        set_free(&keys);
        dataset_free(&d);
    }
    /* fresh values for updates: present, and unique ones new */
    kp_attr *email = kp_entity_attr(kp_model_entity(m, "User"), "email");
    for (uint64_t s = 0; s < 20; s++) {
        cJSON *v = NULL;
        kp_error err;
        assert_int_equal(kp_generator_fresh_value(g, email, s, &v, &err), 0);
        assert_non_null(v);
        char *t = text_of(v);
        assert_false(set_has(&emails, t));
        cJSON_free(t);
        cJSON_Delete(v);
    }
    set_free(&user_ids);
    set_free(&emails);
    dataset_free(&users);
    kp_generator_free(g);
    kp_model_free(m);
}

/* ---- the command ---------------------------------------------------------------------------- */

static void test_generate_command_prints_the_seed_and_fails_clearly_on_an_unwritable_directory(void **state)
{
    (void)state;
    char *dir = temp_dir();
    char model_path[512], out[600], args[2048], blocker[600];
    snprintf(model_path, sizeof model_path, "%s/model.json", dir);
    FILE *f = fopen(model_path, "w");
    assert_non_null(f);
    fputs(social_model, f);
    fclose(f);
    char *output = NULL;
    snprintf(out, sizeof out, "%s/data", dir);
    snprintf(args, sizeof args, "generate '%s' --out '%s' --seed 42 --scale 0.5", model_path, out);
    assert_int_equal(kp_test_run(args, &output), 0);
    assert_non_null(strstr(output, "seed 42"));
    free(output);
    char file[700];
    snprintf(file, sizeof file, "%s/User.ndjson", out);
    size_t len;
    char *users = kp_test_read_file(file, &len);
    assert_non_null(users);
    size_t lines = 0;
    for (size_t i = 0; i < len; i++) lines += users[i] == '\n';
    assert_int_equal(lines, 200);
    free(users);
    /* a path under a regular file cannot be a directory */
    snprintf(blocker, sizeof blocker, "%s/not-a-dir/data", model_path);
    snprintf(args, sizeof args, "generate '%s' --out '%s'", model_path, blocker);
    assert_int_equal(kp_test_run(args, &output), 2);
    assert_non_null(strstr(output, "error:"));
    assert_non_null(strstr(output, "not-a-dir"));
    free(output);
    /* --out is required; the seed must be a number */
    snprintf(args, sizeof args, "generate '%s'", model_path);
    assert_int_equal(kp_test_run(args, &output), 2);
    free(output);
    snprintf(args, sizeof args, "generate '%s' --out '%s' --seed x", model_path, out);
    assert_int_equal(kp_test_run(args, &output), 2);
    free(output);
    assert_int_equal(kp_test_run("generate --help", &output), 0);
    assert_non_null(strstr(output, "example:"));
    free(output);
    remove_tree(dir);
    free(dir);
}

static void test_every_example_generates_with_exact_references(void **state)
{
    (void)state;
    const char *examples[] = {"saas-control-plane", "ecommerce-single-table", "order-response", "auction-mixes",
                              "leaderboard"};
    for (size_t x = 0; x < sizeof examples / sizeof examples[0]; x++) {
        char path[512];
        snprintf(path, sizeof path, "%s/examples/%s/model.json", KP_SOURCE_DIR, examples[x]);
        if (access(path, R_OK) != 0) continue;
        kp_model *m = NULL;
        kp_error err;
        kp_model_options options = {.scale = 0.0002};
        if (kp_model_load(path, &options, &m, &err)) {
            kp_error_print(stderr, &err);
            fail_msg("%s did not load", path);
        }
        kp_generator *g = new_generator(m, 1);
        /* every key unique; every foreign key of a 1:N or 1:1 names an existing record */
        for (size_t r = 0; r < m->relation_count; r++) {
            const kp_relation *rel = m->relations[r];
            if (rel->link != KP_LINK_FOREIGN_KEY || rel->fk_count != 1) continue;
            dataset parents = generate_all(g, rel->referenced), children = generate_all(g, rel->holder);
            string_set ids = values_of(&parents, rel->ref_attrs[0]->name);
            for (int64_t i = 0; i < children.count; i++) {
                const cJSON *v = cJSON_GetObjectItemCaseSensitive(children.records[i], rel->fk_attrs[0]->name);
                if (!v) continue;
                char *t = text_of(v);
                if (!set_has(&ids, t)) fail_msg("%s: %s.%s = %s names no %s", examples[x], rel->holder->name,
                                                rel->fk_attrs[0]->name, t, rel->referenced->name);
                cJSON_free(t);
            }
            set_free(&ids);
            dataset_free(&parents);
            dataset_free(&children);
        }
        for (size_t e = 0; e < m->entity_count; e++) {
            dataset d = generate_all(g, m->entities[e]);
            string_set keys = keys_of(&d, m->entities[e]);
            assert_int_equal(set_duplicates(&keys), 0);
            set_free(&keys);
            dataset_free(&d);
        }
        kp_generator_free(g);
        kp_model_free(m);
    }
}

/* The free-space check rests on the size estimate: within a factor of two of what is
 * written, for every example. */
static void test_the_size_estimate_is_within_twice_what_is_written(void **state)
{
    (void)state;
    const char *examples[][2] = {{"examples/saas-control-plane/model.json", "0.01"}, {"examples/leaderboard/model.json", "0.0001"},
                                 {"examples/auction-mixes/model.json", "0.001"}, {"examples/order-response/model.json", "0.001"},
                                 {"examples/ecommerce-single-table/model.json", "0.001"}};
    for (size_t i = 0; i < sizeof examples / sizeof *examples; i++) {
        kp_model *m;
        kp_error err;
        kp_model_options o = {.scale = atof(examples[i][1])};
        assert_int_equal(kp_model_load(examples[i][0], &o, &m, &err), 0);
        char *dir = temp_dir();
        kp_generate_options go = {.seed = 1};
        kp_generate_stats stats;
        assert_int_equal(kp_generate_dataset(m, dir, &go, &stats, &err), 0);
        double estimate = kp_generate_estimate_bytes(m), actual = (double)stats.bytes;
        printf("%s at %s: estimated %.0f bytes, wrote %.0f (%.2fx)\n", examples[i][0], examples[i][1], estimate, actual,
               estimate / actual);
        assert_true(estimate >= actual / 2 && estimate <= actual * 2);
        remove_tree(dir);
        free(dir);
        kp_model_free(m);
    }
}

/* An interrupted run (the flag a SIGINT handler sets) stops, and leaves neither a file of
 * its own nor DIR/.tmp behind. */
static void test_an_interrupted_run_leaves_no_file(void **state)
{
    (void)state;
    kp_model *m = parse_model(social_model, 1);
    char *dir = temp_dir();
    volatile sig_atomic_t stop = 1;
    kp_generate_options go = {.seed = 1, .interrupted = &stop};
    kp_generate_stats stats;
    kp_error err;
    assert_int_equal(kp_generate_dataset(m, dir, &go, &stats, &err), -1);
    assert_non_null(strstr(err.message, "interrupted"));
    char probe[700];
    snprintf(probe, sizeof probe, "%s/.tmp", dir);
    struct stat st;
    assert_int_not_equal(stat(probe, &st), 0);
    DIR *d = opendir(dir);
    assert_non_null(d);
    int entries = 0;
    for (struct dirent *e; (e = readdir(d)) != NULL;) entries += e->d_name[0] != '.';
    closedir(d);
    assert_int_equal(entries, 0);
    remove_tree(dir);
    free(dir);
    kp_model_free(m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_same_seed_and_scale_give_byte_identical_files),
        cmocka_unit_test(test_a_record_does_not_depend_on_what_was_generated_before),
        cmocka_unit_test(test_every_reference_names_an_existing_record),
        cmocka_unit_test(test_keys_and_unique_attributes_never_repeat),
        cmocka_unit_test(test_fanout_mean_is_within_5_percent_of_the_declared_average),
        cmocka_unit_test(test_skewed_relation_has_a_heavy_parent_with_exactly_the_declared_maximum),
        cmocka_unit_test(test_fanout_vector_sums_exactly_and_respects_the_cap),
        cmocka_unit_test(test_every_type_is_written_in_its_canonical_form),
        cmocka_unit_test(test_fast_time_formatting_matches_core_value),
        cmocka_unit_test(test_a_timestamp_at_the_ends_of_int64_formats_without_overflow),
        cmocka_unit_test(test_copies_and_derived_aggregates_agree_with_the_records),
        cmocka_unit_test(test_fresh_values_far_past_the_data_set_stay_defined),
        cmocka_unit_test(test_fresh_records_collide_with_nothing_and_reference_existing_records),
        cmocka_unit_test(test_generate_command_prints_the_seed_and_fails_clearly_on_an_unwritable_directory),
        cmocka_unit_test(test_every_example_generates_with_exact_references),
        cmocka_unit_test(test_the_size_estimate_is_within_twice_what_is_written),
        cmocka_unit_test(test_an_interrupted_run_leaves_no_file),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
