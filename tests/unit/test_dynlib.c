/*
 * test_dynlib.c — client libraries loaded on first use (core/dynlib.h): a library that
 * loads fills every pointer; a missing library or function is a TARGET error naming the
 * package to install, the same on every later call; and keyplan itself does not link
 * libmongoc or libcurl, so commands that need no server never load them.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "core/dynlib.h"
#include "support.h"

#define MATH_FUNCTIONS(X) X(cos) X(sqrt)
static struct { MATH_FUNCTIONS(KP_DYNLIB_FIELD) } math_api;
static const char *const math_names[] = {MATH_FUNCTIONS(KP_DYNLIB_NAME)};

static void test_a_library_that_loads_fills_every_function(void **state)
{
    (void)state;
    static const char *const sonames[] = {"libkeyplan-absent.so.9", "libm.so.6", NULL};
    kp_dynlib lib = {sonames, "the test", "libc6", NULL, 0, ""};
    kp_error err;
    assert_int_equal(KP_DYNLIB_LOAD(lib, math_api, math_names, &err), 0);
    assert_true(fabs(math_api.cos(0.0) - 1.0) < 1e-12);
    assert_true(fabs(math_api.sqrt(16.0) - 4.0) < 1e-12);
    /* a second load keeps what the first filled */
    assert_int_equal(KP_DYNLIB_LOAD(lib, math_api, math_names, &err), 0);
    assert_true(fabs(math_api.sqrt(9.0) - 3.0) < 1e-12);
}

static struct { void (*keyplan_no_such_function)(void); } absent_api;
static const char *const absent_names[] = {"keyplan_no_such_function"};

static void test_a_missing_library_or_function_says_what_to_install(void **state)
{
    (void)state;
    static const char *const missing[] = {"libkeyplan-absent.so.9", NULL};
    kp_dynlib lib = {missing, "MongoDB commands", "libkeyplan-absent9", NULL, 0, ""};
    kp_error err;
    for (int attempt = 0; attempt < 2; attempt++) {
        assert_int_equal(KP_DYNLIB_LOAD(lib, math_api, math_names, &err), -1);
        assert_int_equal(err.code, KP_ERR_TARGET);
        assert_non_null(strstr(err.message, "MongoDB commands need libkeyplan-absent.so.9"));
        assert_non_null(strstr(err.message, "apt-get install libkeyplan-absent9"));
    }
    static const char *const libm[] = {"libm.so.6", NULL};
    kp_dynlib old = {libm, "DynamoDB commands", "libc6", NULL, 0, ""};
    assert_int_equal(KP_DYNLIB_LOAD(old, absent_api, absent_names, &err), -1);
    assert_int_equal(err.code, KP_ERR_TARGET);
    assert_non_null(strstr(err.message, "keyplan_no_such_function"));
    assert_non_null(strstr(err.message, "a newer libc6"));
}

/* keyplan's own binary: the client libraries are not among what it links */
static void test_keyplan_does_not_link_the_client_libraries(void **state)
{
    (void)state;
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "ldd '%s' 2>&1", KP_BINARY);
    FILE *p = popen(cmd, "r");
    assert_non_null(p);
    char line[512];
    int libs = 0;
    while (fgets(line, sizeof line, p)) {
        libs++;
        assert_null(strstr(line, "libmongoc"));
        assert_null(strstr(line, "libcurl"));
    }
    pclose(p);
    assert_true(libs > 2);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_a_library_that_loads_fills_every_function),
        cmocka_unit_test(test_a_missing_library_or_function_says_what_to_install),
        cmocka_unit_test(test_keyplan_does_not_link_the_client_libraries),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
