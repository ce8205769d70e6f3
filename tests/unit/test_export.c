/*
 * test_export.c — `seed --export`'s file writer (backends/export.h) and the three
 * formats on the SaaS example: lines land in their files (gzip where asked, read back
 * with zlib), CSV fields are quoted as DSBulk and cqlsh read them, a failed export removes every file
 * it wrote, and each database's export holds one line per item transform makes plus
 * keyplan's marker. Loading the files into the real servers is
 * tests/integration/export.sh.
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
#include <zlib.h>

#include <cmocka.h>

#include "backends/export.h"
#include "core/data.h"
#include "core/model.h"
#include "migrations/generate.h"
#include "migrations/seed.h"
#include "support.h"

static char *temp_dir(void)
{
    char tmpl[] = "/tmp/kp-export-test.XXXXXX";
    char *d = mkdtemp(tmpl);
    assert_non_null(d);
    return strdup(d);
}

static int exists(const char *dir, const char *name)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    struct stat st;
    return stat(path, &st) == 0;
}

static void test_lines_go_to_their_files_and_a_failed_export_removes_them(void **state)
{
    (void)state;
    char *dir = temp_dir();
    kp_export_files *x;
    kp_error err;
    assert_int_equal(kp_export_files_open(dir, 1, &x, &err), 0);
    assert_int_equal(kp_export_line(x, "t/data.json.gz", "{\"a\":1}", 7, &err), 0);
    assert_int_equal(kp_export_line(x, "t/data.json.gz", "{\"a\":2}", 7, &err), 0);
    assert_int_equal(kp_export_write(x, "README.md", "hello\n", 0, &err), 0);
    assert_int_equal(kp_export_lines(x, "t/data.json.gz"), 2);
    assert_int_equal(kp_export_files_close(x, 1, &err), 0);
    char path[1024];
    snprintf(path, sizeof path, "%s/t/data.json.gz", dir);
    gzFile gz = gzopen(path, "rb");
    assert_non_null(gz);
    char buf[64] = {0};
    int n = gzread(gz, buf, sizeof buf - 1);
    gzclose(gz);
    assert_int_equal(n, 16);
    assert_string_equal(buf, "{\"a\":1}\n{\"a\":2}\n");
    assert_true(exists(dir, "README.md"));
    /* a failed export: every file it made is gone */
    assert_int_equal(kp_export_files_open(dir, 0, &x, &err), 0);
    assert_int_equal(kp_export_line(x, "partial.csv", "a,b", 3, &err), 0);
    assert_true(exists(dir, "partial.csv"));
    assert_int_equal(kp_export_files_close(x, 0, &err), 0);
    assert_false(exists(dir, "partial.csv"));
    char cmd[1100];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    assert_int_equal(system(cmd), 0);
    free(dir);
}

static void test_csv_fields_are_quoted_as_dsbulk_and_cqlsh_read_them(void **state)
{
    (void)state;
    kp_text t = {0};
    const char *in[] = {"plain", "a,b", "say \"hi\"", "two\nlines", " padded", "", "back\\slash"};
    for (size_t i = 0; i < sizeof in / sizeof in[0]; i++) {
        if (i) kp_text_append(&t, "|");
        kp_csv_field(&t, in[i]);
    }
    assert_string_equal(t.data, "plain|\"a,b\"|\"say \\\"hi\\\"\"|\"two\nlines\"|\" padded\"||\"back\\\\slash\"");
    kp_text_free(&t);
}

/* Each database's export of the SaaS example: a line per item seeding would write, and
 * the marker as seeding leaves it once complete. */
static void test_each_format_holds_every_item_and_the_marker(void **state)
{
    (void)state;
    kp_model_options mo = {.scale = 0.0005};
    kp_model *m = NULL;
    kp_error err;
    if (kp_model_load("examples/saas-control-plane/model.json", &mo, &m, &err)) fail_msg("%s", err.message);
    char *data_dir = temp_dir();
    kp_generate_options go = {.seed = 3, .skip_space_check = 1};
    if (kp_generate_dataset(m, data_dir, &go, NULL, &err)) fail_msg("generate: %s", err.message);
    kp_dataset *data = NULL;
    if (kp_dataset_load(m, data_dir, &data, &err)) fail_msg("load: %s", err.message);
    const char *formats[] = {"dynamodb", "mongodb", "cassandra"};
    for (size_t f = 0; f < 3; f++) {
        const kp_backend *b = kp_backend_find(formats[f]);
        kp_design_list list;
        kp_propose_options po = {NULL, 0};
        if (b->propose(m, &po, &list, &err)) fail_msg("%s", err.message);
        char *out = temp_dir();
        kp_target target = {.prefix = "t1"};
        kp_seed_options so = {.model = m, .data = data, .design = list.items[0], .backend = b, .target = &target,
                              .dry_run = 1, .export_dir = out};
        kp_seed_report r;
        if (kp_seed_run(&so, &r, &err)) fail_msg("%s export: %s", formats[f], err.message);
        assert_int_equal(r.action, KP_SEED_EXPORTED);
        /* count the lines of every data file: items, plus a header per CSV, plus the marker */
        char cmd[2048];
        snprintf(cmd, sizeof cmd, "cd '%s' && { find . -name '*.gz' -exec zcat {} + ; find . \\( -name '*.json' ! -name "
                 "'import-table.json' -o -name '*.csv' \\) -exec cat {} + ; } | wc -l", out);
        FILE *p = popen(cmd, "r");
        long lines = 0;
        assert_int_equal(fscanf(p, "%ld", &lines), 1);
        pclose(p);
        snprintf(cmd, sizeof cmd, "cd '%s' && ls *.csv 2>/dev/null | wc -l", out);
        p = popen(cmd, "r");
        long csv_files = 0;
        assert_int_equal(fscanf(p, "%ld", &csv_files), 1);
        pclose(p);
        assert_int_equal(lines, r.items + 1 + csv_files);
        snprintf(cmd, sizeof cmd, "cd '%s' && { find . -name '*.gz' -exec zcat {} + ; cat *.json *.csv 2>/dev/null; } | "
                 "grep -c 'data_hash.*status.*complete'", out);
        p = popen(cmd, "r");
        long markers = 0;
        assert_int_equal(fscanf(p, "%ld", &markers), 1);
        pclose(p);
        assert_int_equal(markers, 1);
        kp_seed_report_free(&r);
        kp_design_list_free(&list);
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", out);
        assert_int_equal(system(cmd), 0);
        free(out);
    }
    kp_dataset_free(data);
    char cmd[1100];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", data_dir);
    assert_int_equal(system(cmd), 0);
    free(data_dir);
    kp_model_free(m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_lines_go_to_their_files_and_a_failed_export_removes_them),
        cmocka_unit_test(test_csv_fields_are_quoted_as_dsbulk_and_cqlsh_read_them),
        cmocka_unit_test(test_each_format_holds_every_item_and_the_marker),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
