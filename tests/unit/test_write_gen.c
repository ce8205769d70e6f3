/*
 * test_write_gen.c — generated write operations on every example, at the small scales
 * the integration tests seed: every write pattern yields operations, most of them
 * apply, generating leaves the data alone, and undo restores it exactly.
 *
 * The data is generated in memory (seed 7, as the integration tests do) and the
 * operations by a generator of another seed, as `verify --writes` does. A write's
 * seeds are tried in order until MIN_APPLIED operations have applied (every apply
 * recomputes the data's copies and aggregates, so a full run of SEEDS per write is
 * kept for KP_TEST_VERBOSE=1, which also prints each write's outcomes).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "support.h"
#include "core/data.h"
#include "core/model.h"
#include "core/mutate.h"
#include "migrations/generate.h"
#include "migrations/write_gen.h"

#define SEEDS 10
#define MIN_APPLIED 3

typedef struct example {
    const char *name;
    double scale;
} example;

static const example EXAMPLES[] = {
    {"saas-control-plane", 0.004},
    {"ecommerce-single-table", 0.0002},
    {"leaderboard", 0.00001},
    {"order-response", 0.00002},
    {"auction-mixes", 0.0002},
    {"product-catalog", 0.01},
    {"hotel-reservations", 0.01},
};

/* Writes that cannot apply to this data at all, with the fact that forbids it (checked,
 * so that the exception goes away when the data changes). Their operations must still
 * be generated, each with the outcome the fact implies. */
static size_t users_without_orders(const kp_model *m, const kp_dataset *data)
{
    size_t n = 0, free_users = 0;
    kp_record *const *users = kp_dataset_records(data, kp_model_entity(m, "User"), &n);
    const kp_relation *orders = kp_entity_rel(kp_model_entity(m, "User"), "orders")->relation;
    for (size_t i = 0; i < n; i++) {
        kp_record_list deps = {0};
        kp_error err;
        assert_int_equal(kp_dataset_dependents(data, users[i], orders, &deps, &err), 0);
        free_users += deps.count == 0;
        kp_record_list_free(&deps);
    }
    return free_users;
}

static size_t unfollowed_pairs(const kp_model *m, const kp_dataset *data)
{
    size_t players = kp_dataset_count(data, kp_model_entity(m, "Player"));
    return players * (players - 1) - kp_dataset_count(data, kp_model_entity(m, "Follow"));
}

typedef struct exception {
    const char *example, *write;
    kp_write_outcome outcome;
    size_t (*possible)(const kp_model *, const kp_dataset *); /* 0 while the write cannot apply */
    const char *why;
} exception;

static const exception EXCEPTIONS[] = {
    {"ecommerce-single-table", "close-account", KP_WRITE_REFUSED, users_without_orders,
     "every user has orders (on_delete restrict)"},
    {"leaderboard", "follow", KP_WRITE_SKIPPED, unfollowed_pairs,
     "every player already follows every other (if_absent)"},
};

/* The example's data, as `keyplan generate --seed 7` writes it. */
static kp_dataset *generated_data(const kp_model *model)
{
    kp_error err;
    kp_generator *gen = NULL;
    kp_dataset *data = NULL;
    if (kp_generator_new(model, 7, &gen, &err)) fail_msg("%s", err.message);
    if (kp_dataset_new(model, &data, &err)) fail_msg("%s", err.message);
    char *buf = NULL;
    size_t len = 0, cap = 0;
    for (size_t e = 0; e < model->entity_count; e++) {
        const kp_entity *entity = model->entities[e];
        len = 0;
        int64_t count = kp_generator_count(gen, entity);
        for (int64_t i = 0; i < count; i++) {
            if (kp_generator_record_text(gen, entity, i, &buf, &len, &cap, &err)) fail_msg("%s", err.message);
            if (len + 1 >= cap) {
                cap = cap * 2 + 64;
                buf = realloc(buf, cap);
                assert_non_null(buf);
            }
            buf[len++] = '\n';
        }
        if (kp_dataset_add_ndjson(data, entity, entity->name, buf ? buf : "", len, &err)) fail_msg("%s", err.message);
    }
    free(buf);
    if (kp_dataset_finish(data, &err)) fail_msg("%s", err.message);
    kp_generator_free(gen);
    return data;
}

/* FNV-1a over a JSON tree: member names, types and texts, in order. */
static uint64_t hash_text(uint64_t h, const char *s)
{
    for (; s && *s; s++) { h ^= (unsigned char)*s; h *= 1099511628211ULL; }
    h ^= 0xff;
    return h * 1099511628211ULL;
}

static uint64_t hash_tree(uint64_t h, const cJSON *node)
{
    for (; node; node = node->next) {
        h = hash_text(h, node->string);
        h ^= (uint64_t)(node->type & 0xff);
        h *= 1099511628211ULL;
        h = hash_text(h, node->valuestring);
        if (cJSON_IsNumber(node)) { h ^= (uint64_t)node->valueint; h *= 1099511628211ULL; }
        h = hash_tree(h, node->child);
    }
    return h;
}

/* A fingerprint of every record of every entity, in insertion order. */
static uint64_t fingerprint(const kp_model *model, const kp_dataset *data)
{
    uint64_t h = 1469598103934665603ULL;
    for (size_t e = 0; e < model->entity_count; e++) {
        size_t n = 0;
        kp_record *const *records = kp_dataset_records(data, model->entities[e], &n);
        for (size_t i = 0; i < n; i++) h = hash_tree(h ^ records[i]->serial, records[i]->object);
    }
    return h;
}

static const exception *exception_for(const char *example_name, const char *write)
{
    for (size_t i = 0; i < sizeof EXCEPTIONS / sizeof EXCEPTIONS[0]; i++)
        if (strcmp(EXCEPTIONS[i].example, example_name) == 0 && strcmp(EXCEPTIONS[i].write, write) == 0) return &EXCEPTIONS[i];
    return NULL;
}

static void append(char *buf, size_t size, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void append(char *buf, size_t size, const char *fmt, ...)
{
    size_t used = strlen(buf);
    if (used + 1 >= size) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf + used, size - used, fmt, ap);
    va_end(ap);
}

static void test_every_write_of_every_example_yields_operations_that_mostly_apply(void **state)
{
    (void)state;
    int verbose = getenv("KP_TEST_VERBOSE") != NULL;
    char problems[8192] = "";
    for (size_t x = 0; x < sizeof EXAMPLES / sizeof EXAMPLES[0]; x++) {
        const char *name = EXAMPLES[x].name;
        char path[512];
        snprintf(path, sizeof path, "%s/examples/%s/model.json", KP_SOURCE_DIR, name);
        kp_model_options options = {.scale = EXAMPLES[x].scale};
        kp_model *model = NULL;
        kp_error err;
        if (kp_model_load(path, &options, &model, &err)) fail_msg("%s", err.message);
        kp_dataset *data = generated_data(model);
        kp_generator *gen = NULL;
        if (kp_generator_new(model, 1234, &gen, &err)) fail_msg("%s", err.message);
        uint64_t before = fingerprint(model, data);
        for (size_t w = 0; w < model->write_count; w++) {
            const kp_write *write = model->writes[w];
            const exception *exempt = exception_for(name, write->name);
            if (exempt && exempt->possible(model, data))
                append(problems, sizeof problems, "\n%s/%s: the data now allows it (remove the exception: %s)", name,
                       write->name, exempt->why);
            int outcomes[4] = {0}, failed = 0;
            char first_failure[600] = "";
            int tried = 0;
            for (uint64_t seed = 1; seed <= SEEDS; seed++) {
                int shown = exempt ? tried : outcomes[KP_WRITE_APPLIED] + outcomes[KP_WRITE_PARTIAL];
                if (!verbose && shown >= MIN_APPLIED) break;
                tried++;
                kp_write_request request;
                if (kp_write_generate(data, gen, write, seed * 7919, &request, &err)) {
                    if (!failed++) snprintf(first_failure, sizeof first_failure, "%s", err.message);
                    continue;
                }
                kp_change_log log = {0};
                kp_write_result result;
                if (kp_write_apply(data, &request, &log, &result, &err))
                    fail_msg("%s/%s (seed %llu): %s", name, write->name, (unsigned long long)seed, err.message);
                /* applying recomputed every copy and aggregate the write moves (only those
                 * near its changes): recomputing all of them moves none */
                if (kp_dataset_refresh(data, kp_test_stale, NULL, &err))
                    fail_msg("%s/%s (seed %llu): %s", name, write->name, (unsigned long long)seed, err.message);
                outcomes[result.outcome]++;
                if (verbose && result.outcome != KP_WRITE_APPLIED)
                    printf("    %s seed %llu: %s: %s\n", write->name, (unsigned long long)seed,
                           kp_write_outcome_name(result.outcome), result.reason);
                assert_int_equal(kp_change_log_undo(data, &log, 0, &err), 0);
                kp_change_log_free(&log);
                kp_write_request_free(&request);
                /* generating leaves the data alone, and undo restores what applying changed */
                if (fingerprint(model, data) != before)
                    fail_msg("%s/%s (seed %llu): generating, or applying and undoing, changed the data", name,
                             write->name, (unsigned long long)seed);
            }
            int applied = outcomes[KP_WRITE_APPLIED] + outcomes[KP_WRITE_PARTIAL];
            if (verbose)
                printf("%-24s %-20s applied %d partial %d skipped %d refused %d not generated %d%s%s\n", name,
                       write->name, outcomes[KP_WRITE_APPLIED], outcomes[KP_WRITE_PARTIAL],
                       outcomes[KP_WRITE_SKIPPED], outcomes[KP_WRITE_REFUSED], failed, failed ? ": " : "",
                       first_failure);
            if (failed)
                append(problems, sizeof problems, "\n%s/%s: %d of %d operations not generated: %s", name, write->name,
                       failed, tried, first_failure);
            else if (exempt && outcomes[exempt->outcome] != tried)
                append(problems, sizeof problems, "\n%s/%s: expected every operation %s (%s)", name, write->name,
                       kp_write_outcome_name(exempt->outcome), exempt->why);
            else if (!exempt && applied < MIN_APPLIED)
                append(problems, sizeof problems, "\n%s/%s: only %d of %d operations apply", name, write->name,
                       applied, tried);
        }
        kp_generator_free(gen);
        kp_dataset_free(data);
        kp_model_free(model);
    }
    if (problems[0]) fail_msg("%s", problems);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_write_of_every_example_yields_operations_that_mostly_apply),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
