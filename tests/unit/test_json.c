/*
 * test_json.c — positioned JSON: positions, exact numbers, duplicate keys, UTF-8, and
 * hostile input (empty, junk, deep nesting, huge strings, oversized and dense files).
 */
#include <malloc.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "core/arena.h"
#include "core/json.h"
#include "core/model.h"

static kp_json_doc *parse_ok(const char *text)
{
    kp_json_doc *doc = NULL;
    kp_error err;
    int rc = kp_json_parse("t.json", text, strlen(text), NULL, &doc, &err);
    if (rc) fprintf(stderr, "unexpected error: %s\n", err.message);
    assert_int_equal(rc, 0);
    return doc;
}

static void parse_fails(const char *text, size_t len, int line, int column, const char *fragment)
{
    kp_json_doc *doc = NULL;
    kp_error err;
    assert_int_equal(kp_json_parse("t.json", text, len, NULL, &doc, &err), -1);
    assert_null(doc);
    assert_int_equal(err.code, KP_ERR_PARSE);
    if (!strstr(err.message, fragment)) fail_msg("message \"%s\" lacks \"%s\"", err.message, fragment);
    assert_int_equal(err.line, line);
    assert_int_equal(err.column, column);
    assert_int_equal(kp_error_exit_code(&err), 2);
}

static void test_every_value_and_key_has_its_line_and_column(void **state)
{
    (void)state;
    kp_json_doc *doc = parse_ok("{\n  \"a\": [1, {\"b\": true}],\n  \"é\": \"x\"\n}");
    cJSON *root = kp_json_root(doc);
    kp_pos p = kp_json_pos(doc, root);
    assert_int_equal(p.line, 1);
    assert_int_equal(p.column, 1);
    cJSON *a = cJSON_GetObjectItem(root, "a");
    p = kp_json_key_pos(doc, a);
    assert_int_equal(p.line, 2);
    assert_int_equal(p.column, 3);
    p = kp_json_pos(doc, a);
    assert_int_equal(p.column, 8);
    cJSON *b = cJSON_GetObjectItem(cJSON_GetArrayItem(a, 1), "b");
    p = kp_json_key_pos(doc, b);
    assert_int_equal(p.line, 2);
    assert_int_equal(p.column, 13);
    /* columns count code points: "é" is two bytes but one column */
    cJSON *e = cJSON_GetObjectItem(root, "\xc3\xa9");
    p = kp_json_pos(doc, e);
    assert_int_equal(p.line, 3);
    assert_int_equal(p.column, 8);
    p = kp_json_pointer_pos(doc, "/a/1/b");
    assert_int_equal(p.line, 2);
    assert_int_equal(p.column, 18);
    p = kp_json_pointer_pos(doc, "/missing");
    assert_int_equal(p.line, 0);
    kp_json_free(doc);
}

/* Columns count code points: a long ASCII run (counted eight bytes at a time) and then
 * two-byte characters before the value. */
static void test_a_column_after_long_ascii_and_multibyte_runs(void **state)
{
    (void)state;
    kp_json_doc *doc = parse_ok("{\"aaaaaaaaaaaaaaaa\": \"\xC3\xA9\xC3\xA9\xC3\xA9\xC3\xA9\xC3\xA9\xC3\xA9\xC3\xA9\xC3\xA9\xC3\xA9\", \"b\": 1}");
    const cJSON *b = kp_json_get(kp_json_root(doc), "b");
    assert_non_null(b);
    kp_pos p = kp_json_pos(doc, b);
    assert_int_equal(p.line, 1);
    assert_int_equal(p.column, 40);
    p = kp_json_key_pos(doc, b);
    assert_int_equal(p.column, 35);
    kp_json_free(doc);
}

static void test_numbers_keep_their_exact_text(void **state)
{
    (void)state;
    kp_json_doc *doc = parse_ok("[12345678901234567890, 19.990, -0.5e3]");
    cJSON *arr = kp_json_root(doc);
    size_t len;
    const char *t = kp_json_number_text(doc, cJSON_GetArrayItem(arr, 0), &len);
    assert_int_equal(len, 20);
    assert_memory_equal(t, "12345678901234567890", 20);
    t = kp_json_number_text(doc, cJSON_GetArrayItem(arr, 1), &len);
    assert_int_equal(len, 6);
    assert_memory_equal(t, "19.990", 6);
    t = kp_json_number_text(doc, cJSON_GetArrayItem(arr, 2), &len);
    assert_memory_equal(t, "-0.5e3", 6);
    assert_null(kp_json_number_text(doc, arr, &len));
    kp_json_free(doc);
}

static void test_duplicate_keys_are_rejected_at_the_second(void **state)
{
    (void)state;
    parse_fails("{\"a\": 1,\n \"b\": {\"x\": 1, \"x\": 2}}", 32, 2, 16, "duplicate key \"x\" (first defined at line 2, column 8)");
    parse_fails("{\"a\": 1, \"a\": 1}", 16, 1, 10, "duplicate key \"a\"");
}

static void test_invalid_utf8_is_rejected_with_its_position(void **state)
{
    (void)state;
    parse_fails("{\"a\":\n \"\xc3\x28\"}", 11, 2, 3, "invalid UTF-8");
    parse_fails("\"\xed\xa0\x80\"", 5, 1, 2, "invalid UTF-8");       /* a surrogate */
    parse_fails("\"\xe0\x80\xaf\"", 5, 1, 2, "invalid UTF-8");       /* overlong */
    parse_fails("\"\xf4\x90\x80\x80\"", 6, 1, 2, "invalid UTF-8");   /* above U+10FFFF */
    parse_fails("\"abc\xe2\x82", 6, 1, 5, "invalid UTF-8");           /* truncated */
    /* half of a UTF-16 surrogate pair written as \u escapes: at the escape, saying so */
    parse_fails("{\"a\":\n \"x\\ud83dy\"}", 18, 2, 4, "high surrogate not followed by its low surrogate");
    parse_fails("[\"\\ude00\"]", 10, 1, 3, "lone UTF-16 low surrogate");
}

static void test_empty_and_junk_input_is_a_clear_error(void **state)
{
    (void)state;
    parse_fails("", 0, 1, 1, "the file ends before the JSON value is complete");
    parse_fails("   \n", 4, 2, 1, "the file ends before");
    parse_fails("{\"a\": 1", 7, 1, 8, "ends before");
    parse_fails("{\"a\" 1}", 7, 1, 6, "not valid JSON");
    parse_fails("{} {}", 5, 1, 4, "unexpected text after the end");
    parse_fails("a\0b", 3, 1, 2, "a NUL byte");
    /* random bytes: never a crash, always a positioned parse error */
    unsigned seed = 12345;
    char junk[512];
    for (int round = 0; round < 200; round++) {
        for (size_t i = 0; i < sizeof junk; i++) {
            seed = seed * 1103515245u + 12345u;
            junk[i] = (char)(seed >> 16);
        }
        kp_json_doc *doc = NULL;
        kp_error err;
        int rc = kp_json_parse("junk", junk, sizeof junk, NULL, &doc, &err);
        if (rc == 0) kp_json_free(doc);
        else {
            assert_int_equal(err.code, KP_ERR_PARSE);
            assert_true(err.line >= 1);
        }
    }
}

static void test_deep_nesting_is_refused_without_recursion(void **state)
{
    (void)state;
    size_t depth = 100000;
    char *text = malloc(depth * 2 + 1);
    memset(text, '[', depth);
    memset(text + depth, ']', depth);
    text[depth * 2] = '\0';
    parse_fails(text, depth * 2, 1, 257, "nesting deeper than 256 levels");
    memset(text, '{', 1);
    free(text);
}

static void test_a_string_over_the_size_limit_is_refused_before_parsing(void **state)
{
    (void)state;
    size_t len = 100u << 20; /* 100 MB */
    char *text = malloc(len);
    text[0] = '"';
    memset(text + 1, 'a', len - 2);
    text[len - 1] = '"';
    kp_json_doc *doc = NULL;
    kp_error err;
    assert_int_equal(kp_json_parse("big.json", text, len, NULL, &doc, &err), -1);
    assert_non_null(strstr(err.message, "more than the 64 MiB limit"));
    free(text);
    /* a 10 MB string inside the limit parses */
    len = 10u << 20;
    text = malloc(len);
    text[0] = '"';
    memset(text + 1, 'b', len - 2);
    text[len - 1] = '"';
    assert_int_equal(kp_json_parse("ten.json", text, len, NULL, &doc, &err), 0);
    assert_int_equal(strlen(kp_json_root(doc)->valuestring), len - 2);
    kp_json_free(doc);
    free(text);
}

static void test_a_file_over_64_mib_is_refused_before_it_is_read(void **state)
{
    (void)state;
    char path[] = "/tmp/kp-big-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    assert_int_equal(ftruncate(fd, (65 << 20)), 0); /* sparse: nothing is written */
    close(fd);
    kp_model *model = NULL;
    kp_error err;
    assert_int_equal(kp_model_load(path, NULL, &model, &err), -1);
    assert_non_null(strstr(err.message, "more than the 64 MiB limit"));
    assert_int_equal(kp_error_exit_code(&err), 2);
    unlink(path);
}

static void test_dense_input_is_refused_before_it_could_take_ten_times_its_size(void **state)
{
    (void)state;
    size_t n = 1 << 20;
    char *text = malloc(n * 2 + 2);
    text[0] = '[';
    for (size_t i = 0; i < n; i++) { text[1 + 2 * i] = '0'; text[2 + 2 * i] = ','; }
    text[n * 2] = ']';
    kp_json_doc *doc = NULL;
    kp_error err;
    assert_int_equal(kp_json_parse("dense.json", text, n * 2 + 1, NULL, &doc, &err), -1);
    assert_non_null(strstr(err.message, "JSON values in"));
    assert_non_null(strstr(err.message, "this is not a model file"));
    free(text);
}

/* The memory a parse holds, measured by the allocator (not meaningful under ASan,
 * whose allocator mallinfo does not see; the normal build runs this check). */
static void test_parsing_holds_at_most_ten_times_the_file(void **state)
{
    (void)state;
#if defined(__SANITIZE_ADDRESS__)
    printf("note: memory accounting runs in the non-sanitizer build only\n");
#else
    const char *files[] = {"examples/saas-control-plane/model.json", "examples/auction-mixes/model.json",
                           "tests/fixtures/models/every-feature.json"};
    for (size_t i = 0; i < sizeof files / sizeof *files; i++) {
        char *text;
        size_t len;
        kp_error err;
        assert_int_equal(kp_file_read(files[i], 64u << 20, &text, &len, &err), 0);
        struct mallinfo2 before = mallinfo2();
        kp_json_doc *doc = NULL;
        assert_int_equal(kp_json_parse(files[i], text, len, NULL, &doc, &err), 0);
        struct mallinfo2 after = mallinfo2();
        size_t held = after.uordblks - before.uordblks;
        size_t budget = 10 * len > (1u << 20) ? 10 * len : (1u << 20);
        printf("%s: %zu bytes, parse holds %zu bytes (%.1fx)\n", files[i], len, held, (double)held / (double)len);
        assert_true(held <= budget);
        kp_json_free(doc);
        free(text);
    }
    /* a large generated model-like file: the factor holds without the 1 MiB floor */
    size_t entities = 20000, cap = entities * 160 + 64, len = 0;
    char *big = malloc(cap);
    len += (size_t)sprintf(big + len, "{\n");
    for (size_t e = 0; e < entities; e++)
        len += (size_t)sprintf(big + len, "  \"E%zu\": { \"key\": [\"id\"], \"count\": %zu, \"attributes\": { \"id\": \"string\" } }%s\n",
                               e, e + 1, e + 1 < entities ? "," : "");
    len += (size_t)sprintf(big + len, "}\n");
    struct mallinfo2 before = mallinfo2();
    kp_json_doc *doc = NULL;
    kp_error err;
    int rc = kp_json_parse("generated.json", big, len, NULL, &doc, &err);
    if (rc) printf("generated.json: %s\n", err.message);
    assert_int_equal(rc, 0);
    struct mallinfo2 after = mallinfo2();
    size_t held = after.uordblks - before.uordblks;
    printf("generated: %zu bytes, parse holds %zu bytes (%.1fx)\n", len, held, (double)held / (double)len);
    assert_true(held <= 10 * len);
    kp_json_free(doc);
    free(big);
#endif
}

static void test_values_are_described_for_messages(void **state)
{
    (void)state;
    kp_json_doc *doc = parse_ok("[\"short\", 42, true, null, {}, []]");
    char buf[64];
    cJSON *arr = kp_json_root(doc);
    const char *expect[] = {"\"short\"", "42", "true", "null", "an object", "an array"};
    for (int i = 0; i < 6; i++) {
        kp_json_describe(cJSON_GetArrayItem(arr, i), buf, sizeof buf);
        assert_string_equal(buf, expect[i]);
    }
    kp_json_free(doc);
}

/* kp_vsnprintf writes what vsnprintf writes and returns what it returns, for the
 * conversions it copies itself and for those it hands on, whole or cut at every size. */
static int both(char *mine, char *libc, size_t size, const char *fmt, ...) __attribute__((format(printf, 4, 5)));
static int both(char *mine, char *libc, size_t size, const char *fmt, ...)
{
    va_list a, b;
    va_start(a, fmt);
    va_copy(b, a);
    int n = kp_vsnprintf(mine, size, fmt, a);
    int m = vsnprintf(libc, size, fmt, b);
    va_end(b);
    va_end(a);
    assert_int_equal(n, m);
    if (size) assert_string_equal(mine, libc);
    return n;
}

static void test_formatting_without_libc_gives_vsnprintf_s_bytes(void **state)
{
    (void)state;
    for (size_t size = 0; size < 48; size++) {
        char a[64], b[64];
        both(a, b, size, "plain text, no conversion");
        both(a, b, size, "%s and %s: %d, %i, %u%%", "one", "", -42, 7, 4000000000u);
        both(a, b, size, "%ld|%lu|%lld|%llu|%zu|%zd", -9223372036854775807L - 1, 18446744073709551615UL, 123456789012LL,
             0ULL, (size_t)99, (ptrdiff_t)-3);
        both(a, b, size, "%c%c%s%d", 'x', '#', "ITEM#", 0);
        both(a, b, size, "%d %d", -2147483647 - 1, 2147483647);
        /* handed on: a float, a width, a precision, a pointer-sized hex */
        both(a, b, size, "%s %g %.1f %-6s| %5d %.*s %x", "n", 0.1, 2.25, "ab", 42, 2, "abc", 255u);
        both(a, b, size, "100%% %s%%", "done");
    }
    char big[8];
    assert_int_equal(both(big, big, 0, "%s", "a longer text than the buffer"), 29);
    /* "%.0f" and "%.1f" from digits: halves (ties to even), near-halves, negatives that
     * round to zero, large values and ordinary ones */
    const double edge[] = {0, -0.0, 0.5, 1.5, 2.5, -2.5, -0.5, -0.3, 0.05, 0.15, 0.25, 0.35, -0.05, 1.45, 2.675, 1e15, 1e16,
                           -1e15 + 0.5, 999999999999999.4, 123.449999999, 123.45, 123.55, 7.0, -7.25, NAN, INFINITY};
    for (size_t i = 0; i < sizeof edge / sizeof *edge; i++) {
        char a[64], b[64];
        both(a, b, sizeof a, "%.0f|%.1f|%.0f%%", edge[i], edge[i], edge[i] * 100);
    }
    uint64_t x = 0x9E3779B97F4A7C15ULL;
    for (int i = 0; i < 300000; i++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        double v = (double)(int64_t)(x % 2000000001ULL - 1000000000LL) / (double)(1ULL << (x >> 58));
        if (i % 3 == 0) v = (double)(int64_t)(x % 20001 - 10000) / 20.0; /* exact halves and tenths */
        char a[64], b[64];
        both(a, b, sizeof a, "%.0f %.1f", v, v);
        both(a, b, 6, "x%.1fy", v);
    }
}

/* kp_strmap (core/arena.h): every key found after many growths, a replaced value, and
 * a key never stored absent. */
static void test_string_map_finds_every_key_through_growth(void **state)
{
    (void)state;
    kp_arena arena = {0};
    kp_strmap map = {0};
    char *keys[2000];
    assert_null(kp_strmap_get(&map, "anything"));
    for (int i = 0; i < 2000; i++) {
        keys[i] = kp_arena_printf(&arena, "key-%d", i);
        assert_int_equal(kp_strmap_put(&arena, &map, keys[i], keys[i]), 0);
    }
    assert_int_equal(map.count, 2000);
    for (int i = 0; i < 2000; i++) {
        char probe[32];
        snprintf(probe, sizeof probe, "key-%d", i);
        assert_ptr_equal(kp_strmap_get(&map, probe), keys[i]);
    }
    assert_null(kp_strmap_get(&map, "key-2000"));
    assert_int_equal(kp_strmap_put(&arena, &map, keys[7], keys[8]), 0);
    assert_int_equal(map.count, 2000);
    assert_ptr_equal(kp_strmap_get(&map, "key-7"), keys[8]);
    kp_arena_free(&arena);
}

/* kp_json_print writes exactly the bytes cJSON_Print writes, and kp_json_append_compact
 * (after text already in its buffer) and kp_json_compact_size those of
 * cJSON_PrintUnformatted, for every kind of value. */
static void assert_prints_like_cjson(const cJSON *tree)
{
    char *expected = cJSON_Print(tree);
    char *actual = kp_json_print(tree);
    assert_non_null(expected);
    assert_non_null(actual);
    assert_string_equal(actual, expected);
    cJSON_free(expected);
    free(actual);
    char *compact = cJSON_PrintUnformatted(tree);
    assert_non_null(compact);
    char *text = NULL;
    size_t len = 0, cap = 0;
    cJSON *before = cJSON_CreateString("before");
    assert_int_equal(kp_json_append_compact(&text, &len, &cap, before), 0);
    assert_string_equal(text, "\"before\"");
    assert_int_equal(kp_json_append_compact(&text, &len, &cap, tree), 0);
    assert_int_equal(len, 8 + strlen(compact));
    assert_true(len < cap);
    assert_string_equal(text + 8, compact);
    assert_int_equal(kp_json_compact_size(tree), (long)strlen(compact));
    cJSON_Delete(before);
    cJSON_free(compact);
    free(text);
}

/* kp_json_write streams the same bytes (and a newline) through its 64 KB buffer: a tree of
 * about 1 MB with a string longer than the buffer, read back from a temporary file. */
static void test_writing_streams_the_printed_bytes(void **state)
{
    (void)state;
    cJSON *tree = cJSON_CreateArray();
    for (int i = 0; i < 20000; i++) {
        cJSON *o = cJSON_CreateObject();
        cJSON_AddNumberToObject(o, "n", i * 0.5);
        cJSON_AddStringToObject(o, "s", "a \"quoted\" value\n");
        cJSON_AddItemToArray(tree, o);
    }
    char *big = malloc(200001);
    assert_non_null(big);
    memset(big, 'x', 200000);
    big[200000] = '\0';
    cJSON_AddItemToArray(tree, cJSON_CreateString(big));
    free(big);
    char *expected = kp_json_print(tree);
    assert_non_null(expected);
    FILE *f = tmpfile();
    assert_non_null(f);
    assert_int_equal(kp_json_write(f, tree), 0);
    long size = ftell(f);
    assert_int_equal((size_t)size, strlen(expected) + 1);
    rewind(f);
    char *got = malloc((size_t)size + 1);
    assert_non_null(got);
    assert_int_equal(fread(got, 1, (size_t)size, f), (size_t)size);
    got[size] = '\0';
    assert_int_equal(got[size - 1], '\n');
    got[size - 1] = '\0';
    assert_string_equal(got, expected);
    fclose(f);
    free(got);
    free(expected);
    cJSON_Delete(tree);
}

static void test_printing_gives_the_bytes_cjson_gives(void **state)
{
    (void)state;
    const char *texts[] = {
        "{}", "[]", "null", "true", "\"\"", "0", "{\"a\":{}}", "[[],[{}],{\"x\":[]}]",
        "{\"a\":[{\"b\":[1,{\"c\":\"d\"}]},2,[3,[4]]],\"e\":{\"f\":{\"g\":null}}}",
        "[1, -1, 2147483647, 2147483648, -2147483648, -2147483649, 9007199254740993, 0.1, 1e300, -1e-300]",
        "[0.30000000000000004, 123456789.123456789, 1.5, 3.14159265358979, 2.5e-7, 1e21, 999999999999999]",
        "{\"esc\":\"q\\\" b\\\\ \\b\\f\\n\\r\\t \\u0001\\u001f caf\\u00e9 \\ud83d\\ude00 /\"}",
    };
    for (size_t i = 0; i < sizeof texts / sizeof *texts; i++) {
        cJSON *tree = cJSON_Parse(texts[i]);
        assert_non_null(tree);
        assert_prints_like_cjson(tree);
        cJSON_Delete(tree);
    }
    cJSON *odd = cJSON_CreateArray();
    cJSON_AddItemToArray(odd, cJSON_CreateNumber(1.0 / 3.0));
    cJSON_AddItemToArray(odd, cJSON_CreateNumber(NAN));
    cJSON_AddItemToArray(odd, cJSON_CreateNumber(INFINITY));
    cJSON_AddItemToArray(odd, cJSON_CreateRaw("12345678901234567890"));
    cJSON_AddItemToArray(odd, cJSON_CreateBool(0));
    assert_prints_like_cjson(odd);
    cJSON_Delete(odd);
    /* a character that needs an escape (or looks close to one) at every place of a string
     * read eight bytes at a time: first, inside, straddling and past a word */
    const char specials[] = {'"', '\\', '\n', '\x01', '\x1f', ' ', '!', '#', '[', ']', '\x7f', (char)0xC3, (char)0xA2, (char)0xDC, (char)0xA0};
    cJSON *strings = cJSON_CreateArray();
    for (size_t k = 0; k < sizeof specials; k++)
        for (size_t at = 0; at < 20; at++)
            for (size_t len = at + 1; len <= 21; len += 4) {
                char text[24];
                memset(text, 'a', len);
                text[at] = specials[k];
                /* a byte from 0x80 on: in a whole two-byte character, as its lead (0xC3, 0xDC)
                 * or its second byte (0xA2, 0xA0) */
                if ((unsigned char)specials[k] >= 0x80) {
                    if (at + 1 >= len) continue;
                    int lead = (unsigned char)specials[k] >= 0xC0;
                    text[at] = lead ? specials[k] : (char)0xC3;
                    text[at + 1] = lead ? (char)0xA9 : specials[k];
                }
                text[len] = '\0';
                cJSON_AddItemToArray(strings, cJSON_CreateString(text));
            }
    assert_prints_like_cjson(strings);
    /* and read back (escaped by cJSON) to the same strings */
    char *printed = cJSON_PrintUnformatted(strings);
    assert_non_null(printed);
    kp_json_doc *doc = NULL;
    kp_error perr;
    assert_int_equal(kp_json_parse("strings.json", printed, strlen(printed), NULL, &doc, &perr), 0);
    const cJSON *back = kp_json_root(doc)->child;
    for (const cJSON *x = strings->child; x; x = x->next, back = back->next) {
        assert_non_null(back);
        assert_string_equal(back->valuestring, x->valuestring);
    }
    assert_null(back);
    kp_json_free(doc);
    cJSON_free(printed);
    cJSON_Delete(strings);
    const char *files[] = {"examples/saas-control-plane/model.json", "examples/auction-mixes/model.json",
                           "tests/fixtures/models/every-feature.json"};
    for (size_t i = 0; i < sizeof files / sizeof *files; i++) {
        char *text;
        size_t len;
        kp_error err;
        assert_int_equal(kp_file_read(files[i], 64u << 20, &text, &len, &err), 0);
        cJSON *tree = cJSON_Parse(text);
        assert_non_null(tree);
        assert_prints_like_cjson(tree);
        cJSON_Delete(tree);
        free(text);
    }
}

/* Numbers with a few decimals (what costs and sizes are: 4.05, 0.7, 1234.5), printed
 * without printf: the bytes cJSON prints, over every count of decimals, magnitudes from
 * 1e-5 to 1e15, both signs, the ends of the fixed notation and doubles that are not short. */
static void test_numbers_with_few_decimals_print_as_cjson_prints_them(void **state)
{
    (void)state;
    cJSON *numbers = cJSON_CreateArray();
    uint64_t x = 88172645463325252ULL;
    static const double tens[] = {1, 10, 100, 1000, 10000, 100000, 1000000, 10000000};
    for (int i = 0; i < 200000; i++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        int k = (int)(x % 8), digits = 1 + (int)((x >> 8) % 16);
        double r = (double)((x >> 16) % 1000000000000000ULL);
        while (r >= 1 && floor(log10(r)) + 1 > digits) r = floor(r / 10);
        double d = r / tens[k];
        if (x & (1ULL << 60)) d = -d;
        cJSON_AddItemToArray(numbers, cJSON_CreateNumber(d));
        /* a double that is not a short decimal, beside it */
        if (i % 8 == 0) cJSON_AddItemToArray(numbers, cJSON_CreateNumber(d / 3.0 + 1e-7));
    }
    const double ends[] = {1e-4, 0.00011, 0.000099, 99999999999999.9, 100000000000000.5, 0.1 + 0.2, 1.005, 2.675,
                           1e14 - 0.5, 123456789012.345, 0.000123456, -0.5};
    for (size_t i = 0; i < sizeof ends / sizeof *ends; i++) cJSON_AddItemToArray(numbers, cJSON_CreateNumber(ends[i]));
    assert_prints_like_cjson(numbers);
    cJSON_Delete(numbers);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_value_and_key_has_its_line_and_column),
        cmocka_unit_test(test_a_column_after_long_ascii_and_multibyte_runs),
        cmocka_unit_test(test_numbers_keep_their_exact_text),
        cmocka_unit_test(test_duplicate_keys_are_rejected_at_the_second),
        cmocka_unit_test(test_invalid_utf8_is_rejected_with_its_position),
        cmocka_unit_test(test_empty_and_junk_input_is_a_clear_error),
        cmocka_unit_test(test_deep_nesting_is_refused_without_recursion),
        cmocka_unit_test(test_a_string_over_the_size_limit_is_refused_before_parsing),
        cmocka_unit_test(test_a_file_over_64_mib_is_refused_before_it_is_read),
        cmocka_unit_test(test_dense_input_is_refused_before_it_could_take_ten_times_its_size),
        cmocka_unit_test(test_parsing_holds_at_most_ten_times_the_file),
        cmocka_unit_test(test_values_are_described_for_messages),
        cmocka_unit_test(test_formatting_without_libc_gives_vsnprintf_s_bytes),
        cmocka_unit_test(test_string_map_finds_every_key_through_growth),
        cmocka_unit_test(test_printing_gives_the_bytes_cjson_gives),
        cmocka_unit_test(test_numbers_with_few_decimals_print_as_cjson_prints_them),
        cmocka_unit_test(test_writing_streams_the_printed_bytes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
