/*
 * test_bad_models.c — every bad model in tests/fixtures/bad-models fails with exactly
 * the message written next to it.
 *
 * The cases are data: NN-short-name.json is a model with one defect, and
 * NN-short-name.expected holds the one line `keyplan check` must print for it
 * ("file:line:col: error: ..."). Adding a case is adding the two files. The library is
 * called directly (fast, and under ASan); one test runs the real binary to tie the
 * library's error to what the user sees, and checks that every example model passes.
 * Invariant: paths in the .expected files are relative to the repository root, the
 * working directory ctest gives these tests.
 */
#include <dirent.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "core/error.h"
#include "core/model.h"
#include "support.h"

#define BAD_MODELS "tests/fixtures/bad-models"
#define MIN_FIXTURES 60

static int compare_names(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The files of a directory whose names end in `suffix`, sorted by name; the caller
 * frees each and the list. */
static char **list_files(const char *dir, const char *suffix, size_t *count)
{
    DIR *d = opendir(dir);
    if (!d) fail_msg("cannot open %s (the tests run from the repository root)", dir);
    size_t n = 0, cap = 128;
    char **names = malloc(cap * sizeof *names);
    struct dirent *entry;
    while ((entry = readdir(d))) {
        size_t len = strlen(entry->d_name), suffix_len = strlen(suffix);
        if (len <= suffix_len || strcmp(entry->d_name + len - suffix_len, suffix) != 0) continue;
        if (n == cap) names = realloc(names, (cap *= 2) * sizeof *names);
        names[n++] = strdup(entry->d_name);
    }
    closedir(d);
    qsort(names, n, sizeof *names, compare_names);
    *count = n;
    return names;
}

static void free_list(char **names, size_t count)
{
    for (size_t i = 0; i < count; i++) free(names[i]);
    free(names);
}

/* Drops trailing newlines (and a CR before them). */
static void trim_end(char *s)
{
    size_t n = strlen(s);
    while (n > 0 && (s[n - 1] == '\n' || s[n - 1] == '\r')) s[--n] = '\0';
}

/* What `keyplan check` prints for the error, formatted by the CLI's own printer. */
static char *format_error(const kp_error *err)
{
    char *text = NULL;
    size_t size = 0;
    FILE *stream = open_memstream(&text, &size);
    assert_non_null(stream);
    kp_error_print(stream, err);
    fclose(stream);
    trim_end(text);
    return text;
}

/* Loads one fixture; returns NULL when it matches, else a readable report (malloc'd). */
static char *check_fixture(const char *name)
{
    char path[512], expected_path[512];
    snprintf(path, sizeof path, "%s/%s", BAD_MODELS, name);
    snprintf(expected_path, sizeof expected_path, "%s/%.*s.expected", BAD_MODELS, (int)(strlen(name) - 5), name);
    char *report = NULL;
    size_t report_size = 0;
    FILE *out = open_memstream(&report, &report_size);

    char *expected = kp_test_read_file(expected_path, NULL);
    kp_model *model = NULL;
    kp_error err;
    int rc = kp_model_load(path, NULL, &model, &err);
    if (!expected) {
        fprintf(out, "%s: missing %s (write the exact message the model must produce there)\n", name, expected_path);
    } else if (rc == 0) {
        fprintf(out, "%s: loaded without an error, but it must fail with\n  expected: %s\n", name, expected);
        kp_model_free(model);
    } else {
        trim_end(expected);
        char *actual = format_error(&err);
        if (strcmp(actual, expected) != 0)
            fprintf(out, "%s: wrong message\n  expected: %s\n  actual:   %s\n", name, expected, actual);
        if (kp_error_exit_code(&err) != KP_EXIT_INPUT)
            fprintf(out, "%s: error code %d maps to exit status %d, not %d (bad input)\n", name, err.code,
                    kp_error_exit_code(&err), KP_EXIT_INPUT);
        assert_null(model);
        free(actual);
    }
    free(expected);
    fclose(out);
    if (report_size == 0) {
        free(report);
        return NULL;
    }
    return report;
}

static void test_every_bad_model_fails_with_its_expected_message(void **state)
{
    (void)state;
    size_t count;
    char **names = list_files(BAD_MODELS, ".json", &count);
    size_t failures = 0;
    for (size_t i = 0; i < count; i++) {
        char *report = check_fixture(names[i]);
        if (report) {
            printf("%s", report);
            fflush(stdout);
            failures++;
            free(report);
        }
    }
    printf("%zu bad models checked, %zu failed\n", count, failures);
    free_list(names, count);
    if (failures) fail_msg("%zu of %zu bad models did not fail as expected (see above)", failures, count);
}

static void test_the_suite_holds_at_least_sixty_bad_models(void **state)
{
    (void)state;
    size_t count;
    char **names = list_files(BAD_MODELS, ".json", &count);
    free_list(names, count);
    if (count < MIN_FIXTURES) fail_msg("only %zu bad models in %s; the suite keeps at least %d", count, BAD_MODELS, MIN_FIXTURES);
}

static void test_every_expected_message_has_its_model(void **state)
{
    (void)state;
    size_t count;
    char **names = list_files(BAD_MODELS, ".expected", &count);
    for (size_t i = 0; i < count; i++) {
        char path[512];
        snprintf(path, sizeof path, "%s/%.*s.json", BAD_MODELS, (int)(strlen(names[i]) - 9), names[i]);
        FILE *f = fopen(path, "rb");
        if (!f) fail_msg("%s/%s has no model next to it (%s); restore the model or delete the message", BAD_MODELS,
                         names[i], path);
        fclose(f);
    }
    free_list(names, count);
}

static void test_check_prints_the_message_on_stderr_and_exits_2(void **state)
{
    (void)state;
    const char *name = "32-unknown-attribute-in-leaf";
    char args[512], expected_path[512];
    snprintf(args, sizeof args, "check %s/%s.json", BAD_MODELS, name);
    snprintf(expected_path, sizeof expected_path, "%s/%s.expected", BAD_MODELS, name);
    char *expected = kp_test_read_file(expected_path, NULL);
    assert_non_null(expected);
    trim_end(expected);
    /* capture stderr alone: keyplan's stderr goes to the pipe and its stdout to
     * /dev/null; "(exit $?)" hands its status on past kp_test_run's trailing 2>&1 */
    char stderr_only[600];
    snprintf(stderr_only, sizeof stderr_only, "%s 2>&1 >/dev/null; (exit $?)", args);
    char *out = NULL;
    int status = kp_test_run(stderr_only, &out);
    trim_end(out);
    if (status != 2 || strcmp(out, expected) != 0)
        fail_msg("keyplan %s\n  exit:     %d (expected 2)\n  expected: %s\n  stderr:   %s", args, status, expected, out);
    free(out);
    free(expected);
}

static void test_every_example_model_passes_check(void **state)
{
    (void)state;
    DIR *d = opendir("examples");
    assert_non_null(d);
    char **names = malloc(64 * sizeof *names);
    size_t count = 0;
    struct dirent *entry;
    while ((entry = readdir(d)) && count < 64) {
        if (entry->d_name[0] == '.') continue;
        char path[600];
        snprintf(path, sizeof path, "examples/%s/model.json", entry->d_name);
        FILE *f = fopen(path, "r");
        if (!f) continue;
        fclose(f);
        names[count++] = strdup(path);
    }
    closedir(d);
    qsort(names, count, sizeof *names, compare_names);
    assert_true(count >= 1);
    for (size_t i = 0; i < count; i++) {
        char args[700];
        snprintf(args, sizeof args, "check %s", names[i]);
        char *out = NULL;
        int status = kp_test_run(args, &out);
        if (status != 0) fail_msg("keyplan %s exited %d:\n%s", args, status, out);
        assert_non_null(strstr(out, "ok: the model is valid"));
        free(out);
    }
    free_list(names, count);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_bad_model_fails_with_its_expected_message),
        cmocka_unit_test(test_the_suite_holds_at_least_sixty_bad_models),
        cmocka_unit_test(test_every_expected_message_has_its_model),
        cmocka_unit_test(test_check_prints_the_message_on_stderr_and_exits_2),
        cmocka_unit_test(test_every_example_model_passes_check),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
