/*
 * test_expected_designs.c — every bundled example's README states the design keyplan
 * proposes for each pattern on each database (its "Expected design" section: the requests
 * of one call on average and at most, and the operations in order), and this test holds
 * the proposal to it. A change of design fails here until the README says what changed.
 *
 * Operations are written `op index-or-container`, joined by " → " when one waits for the
 * answer of the one before and by " + " when it runs beside it; requests with %.4g.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "backends/backend.h"
#include "core/json.h"

static const char *const examples[] = {"saas-control-plane", "ecommerce-single-table", "auction-mixes", "order-response",
                                       "leaderboard", "hotel-reservations", "product-catalog", "forum"};
static const char *const databases[][2] = {{"dynamodb", "DynamoDB"}, {"mongodb", "MongoDB"}, {"cassandra", "Cassandra"}};

/* The README's table for `heading` (### DynamoDB ...) in its "Expected design" section:
 * [*start, *end) from the heading to the next heading; -1 when there is none. */
static int table_of(const char *text, const char *heading, const char **start, const char **end)
{
    const char *section = strstr(text, "\n## Expected design");
    char h[64];
    snprintf(h, sizeof h, "\n### %s\n", heading);
    *start = section ? strstr(section, h) : NULL;
    if (!*start) return -1;
    *end = strstr(*start + strlen(h), "\n#");
    if (!*end) *end = *start + strlen(*start);
    return 0;
}

/* The row of `pattern` in that table, after its name, copied into row; 0 when found. */
static int readme_row(const char *text, const char *heading, const char *pattern, char *row, size_t size)
{
    const char *start, *end;
    if (table_of(text, heading, &start, &end)) return -1;
    char key[256];
    snprintf(key, sizeof key, "\n| `%s` |", pattern);
    const char *at = strstr(start, key);
    if (!at || at > end) return -1;
    at += strlen(key);
    const char *nl = strchr(at, '\n');
    size_t n = nl ? (size_t)(nl - at) : strlen(at);
    if (n >= size) n = size - 1;
    memcpy(row, at, n);
    row[n] = 0;
    return 0;
}

/* " 1 / 2 | GetItem t → Query GSI1 |" — the row as the proposal would write it. */
static void plan_row(const kp_plan *p, char *out, size_t size)
{
    size_t n = (size_t)snprintf(out, size, " %.4g / %.4g |", p->requests, p->requests_max);
    for (size_t i = 0; i < p->op_count && n < size; i++) {
        const kp_operation *o = &p->ops[i];
        n += (size_t)snprintf(out + n, size - n, "%s%s %s", i == 0 ? " " : o->waits_for_previous ? " → " : " + ", o->op,
                              o->index ? o->index : o->container);
    }
    if (n < size) snprintf(out + n, size - n, " |");
}

static int rows_in_section(const char *text, const char *heading)
{
    const char *start, *end;
    if (table_of(text, heading, &start, &end)) return -1;
    int rows = 0;
    for (const char *at = strstr(start, "\n| `"); at && at < end; at = strstr(at + 1, "\n| `")) rows++;
    return rows;
}

static void test_every_readme_states_the_design_proposed(void **state)
{
    (void)state;
    int mismatches = 0;
    for (size_t e = 0; e < sizeof examples / sizeof *examples; e++) {
        char path[256], *text = NULL;
        size_t len = 0;
        kp_error err;
        snprintf(path, sizeof path, "examples/%s/README.md", examples[e]);
        if (kp_file_read(path, 1 << 22, &text, &len, &err)) fail_msg("%s: %s", path, err.message);
        snprintf(path, sizeof path, "examples/%s/model.json", examples[e]);
        kp_model *m = NULL;
        if (kp_model_load(path, NULL, &m, &err)) fail_msg("%s: %s", path, err.message);
        for (size_t b = 0; b < 3; b++) {
            const kp_backend *backend = kp_backend_find(databases[b][0]);
            assert_non_null(backend);
            kp_propose_options o = {NULL, 0};
            kp_design_list list = {0};
            if (backend->propose(m, &o, &list, &err)) fail_msg("%s propose: %s", databases[b][0], err.message);
            assert_true(list.count >= 1);
            const kp_design *d = list.items[0];
            for (size_t i = 0; i < d->plan_count; i++) {
                char want[2048], got[2048];
                plan_row(&d->plans[i], got, sizeof got);
                if (readme_row(text, databases[b][1], d->plans[i].pattern->name, want, sizeof want)) {
                    print_error("examples/%s/README.md: no row for %s on %s; the proposal is:\n| `%s` |%s\n", examples[e],
                                d->plans[i].pattern->name, databases[b][1], d->plans[i].pattern->name, got);
                    mismatches++;
                } else if (strcmp(want, got) != 0) {
                    print_error("examples/%s/README.md, %s, %s:\n  README:   %s\n  proposed: %s\n", examples[e], databases[b][1],
                                d->plans[i].pattern->name, want, got);
                    mismatches++;
                }
            }
            if (rows_in_section(text, databases[b][1]) != (int)d->plan_count) {
                print_error("examples/%s/README.md, %s: %d rows for %zu patterns\n", examples[e], databases[b][1],
                            rows_in_section(text, databases[b][1]), d->plan_count);
                mismatches++;
            }
            kp_design_list_free(&list);
        }
        kp_model_free(m);
        free(text);
    }
    assert_int_equal(mismatches, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_readme_states_the_design_proposed),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
