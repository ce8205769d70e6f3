/*
 * json.c — positioned JSON documents as cJSON trees.
 *
 * Parsing is three passes over the text, none recursive:
 *   1. kp_utf8_check rejects malformed UTF-8 with its position (and a NUL byte);
 *   2. check_syntax() holds the text to the JSON grammar, explains the first error (a
 *      missing comma, an unclosed bracket, a line break inside a string, nesting past
 *      the limit) and counts values, numbers and string bytes, so the memory the parse
 *      will hold is known and refused before anything is allocated;
 *   3. build_tree() makes the cJSON nodes in the document's arena, recording for every
 *      value (in document order) its line:col, its key's line:col and, for numbers,
 *      the source text.
 * Invariant: the i-th value build_tree records is the i-th node of a pre-order walk,
 * and its count is the one check_syntax made.
 */
#include "core/json.h"

#include "core/arena.h"

#include <errno.h>
#include <float.h>
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

const kp_json_limits kp_json_model_limits = {
    .max_bytes = 64u << 20, .max_depth = 256, .memory_factor = 10, .memory_floor = 1u << 20,
};

typedef struct value_pos {
    int32_t line, column;         /* the value */
    int32_t key_line, key_column; /* its key, when the value is an object member */
} value_pos;

/* A number's source text: value index, then where its text sits in number_text. */
typedef struct number_span { uint32_t value, offset, length; } number_span;

struct kp_json_doc {
    kp_arena nodes;      /* cJSON's nodes and strings for this document */
    char *file;
    cJSON *root;
    value_pos *values;   /* in document (pre-order) order */
    size_t value_count;
    number_span *numbers;/* sorted by value index */
    size_t number_count;
    char *number_text;   /* the numbers' source texts, back to back */
    cJSON *node_block;   /* the nodes, in document (pre-order) order: a node's value index is
                            its place in the block */
};

/* Eight bytes of text as one word (any alignment). */
static inline uint64_t load8(const unsigned char *p)
{
    uint64_t w;
    memcpy(&w, p, sizeof w);
    return w;
}

/* Where a run of spaces starting at `at` ends (the indentation of a pretty-printed file). */
static inline size_t skip_spaces(const char *text, size_t at, size_t len)
{
    while (at + 8 <= len) {
        uint64_t other = load8((const unsigned char *)text + at) ^ 0x2020202020202020ULL;
#if defined(__GNUC__) && defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
        /* the first byte that is not a space: the lowest one set */
        if (other) return at + ((size_t)__builtin_ctzll(other) >> 3);
#else
        if (other) break;
#endif
        at += 8;
    }
    while (at < len && text[at] == ' ') at++;
    return at;
}

size_t kp_utf8_check(const char *text, size_t len)
{
    const unsigned char *s = (const unsigned char *)text;
    size_t i = 0;
    while (i < len) {
        /* ASCII eight bytes at a time */
        while (i + 8 <= len && !(load8(s + i) & 0x8080808080808080ULL)) i += 8;
        if (i >= len) break;
        unsigned char c = s[i];
        if (c < 0x80) { i++; continue; }
        size_t need;
        uint32_t cp;
        if (c >= 0xC2 && c <= 0xDF) { need = 1; cp = c & 0x1F; }
        else if (c >= 0xE0 && c <= 0xEF) { need = 2; cp = c & 0x0F; }
        else if (c >= 0xF0 && c <= 0xF4) { need = 3; cp = c & 0x07; }
        else return i;
        if (len - i <= need) return i;
        for (size_t k = 1; k <= need; k++) {
            if ((s[i + k] & 0xC0) != 0x80) return i;
            cp = (cp << 6) | (s[i + k] & 0x3F);
        }
        if ((need == 2 && cp < 0x800) || (need == 3 && cp < 0x10000) || cp > 0x10FFFF ||
            (cp >= 0xD800 && cp <= 0xDFFF))
            return i;
        i += need + 1;
    }
    return len;
}

kp_pos kp_pos_of_offset(const char *text, size_t len, size_t offset)
{
    kp_pos p = {1, 1};
    if (offset > len) offset = len;
    for (size_t i = 0; i < offset; i++) {
        unsigned char c = (unsigned char)text[i];
        if (c == '\n') { p.line++; p.column = 1; }
        else if ((c & 0xC0) != 0x80) p.column++;
    }
    return p;
}


/* ---- cJSON allocations during a parse go to the document's arena -------------------
 * cJSON's hooks are process-wide; a thread-local pointer routes only the allocations
 * made inside cJSON_ParseWithLengthOpts to the document's arena (compact: no malloc
 * header per node or string, and freed at once), and the arena's limit makes the
 * memory budget exact: past it cJSON's allocation fails and so does the parse.
 * Outside a parse the hooks are plain malloc and free. Invariant: a document's tree
 * is never passed to cJSON_Delete; copy (cJSON_Duplicate) what must outlive it. */

static _Thread_local kp_arena *parse_arena;
static _Thread_local int parse_over_budget;

static void *hook_malloc(size_t size)
{
    if (!parse_arena) return malloc(size);
    void *p = kp_arena_alloc_raw(parse_arena, size); /* malloc's contract: cJSON clears its nodes itself */
    if (!p) parse_over_budget = 1;
    return p;
}

static void hook_free(void *p)
{
    if (!parse_arena) free(p); /* inside a parse the arena owns it */
}

static void init_hooks(void)
{
    cJSON_Hooks hooks = {hook_malloc, hook_free};
    cJSON_InitHooks(&hooks);
}

/* Once per process, whichever thread parses first. */
static void install_hooks(void)
{
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, init_hooks);
}

void kp_json_arena_begin(kp_arena *arena)
{
    install_hooks();
    parse_arena = arena;
    parse_over_budget = 0;
}

void kp_json_arena_end(void) { parse_arena = NULL; }

kp_arena *kp_json_arena_swap(kp_arena *arena)
{
    install_hooks();
    kp_arena *outer = parse_arena;
    parse_arena = arena;
    return outer;
}

static int is_number_byte(char c)
{
    return (c >= '0' && c <= '9') || c == '+' || c == '-' || c == '.' || c == 'e' || c == 'E';
}

/* ---- pass 2: strict syntax, with a message that says what to fix, and the sizes ---- */

/* cJSON is lenient (raw line breaks inside strings, leading zeros) and reports only an
 * offset. check_syntax() walks the text once against the JSON grammar (RFC 8259),
 * without recursion, and stops at the first error with its offset and a sentence
 * naming the fix: the missing comma or colon, the unclosed bracket, the unterminated
 * string. It runs before the tree is built, which then only ever sees well-formed text,
 * and counts what the tree will hold (values, numbers and their bytes, string bytes) so
 * the memory the parse will take is known before anything is allocated. */

typedef struct text_sizes {
    size_t values, numbers, number_bytes, string_bytes;
} text_sizes;

typedef struct syntax_error {
    size_t offset;
    char message[400];
} syntax_error;

static int syntax_fail(syntax_error *e, size_t offset, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int syntax_fail(syntax_error *e, size_t offset, const char *fmt, ...)
{
    e->offset = offset;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(e->message, sizeof e->message, fmt, ap);
    va_end(ap);
    return -1;
}

static int is_hex(char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'); }
static int is_word_char(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

/* A string starting at the quote text[*at]; *at is left after the closing quote. */
static int scan_string(const char *text, size_t len, size_t *at, syntax_error *e)
{
    size_t quote = *at, i = quote + 1;
    while (i < len) {
        unsigned char c = (unsigned char)text[i];
        if (c == '"') { *at = i + 1; return 0; }
        if (c == '\\') {
            if (i + 1 >= len) break;
            char x = text[i + 1];
            if (x == 'u') {
                if (i + 5 >= len || !is_hex(text[i + 2]) || !is_hex(text[i + 3]) || !is_hex(text[i + 4]) ||
                    !is_hex(text[i + 5]))
                    return syntax_fail(e, i, "\"\\u\" in a string takes four hex digits, such as \\u00e9");
                i += 6;
                continue;
            }
            if (!strchr("\"\\/bfnrt", x) || x == '\0')
                return syntax_fail(e, i, "'\\%c' is not a JSON escape; write a backslash itself as \\\\ (the escapes are "
                                         "\\\" \\\\ \\/ \\b \\f \\n \\r \\t and \\uXXXX)", x);
            i += 2;
            continue;
        }
        if (c == '\n' || c == '\r')
            return syntax_fail(e, quote, "this string is not closed before the end of its line; add the closing '\"' "
                                         "(a line break inside a string is written \\n)");
        if (c < 0x20)
            return syntax_fail(e, i, "a control character (0x%02X) inside a string; write it escaped, as \\u%04X", c, c);
        i++;
    }
    return syntax_fail(e, quote, "this string has no closing quote; add the missing '\"'");
}

/* A number starting at text[*at] ('-' or a digit). */
static int scan_number(const char *text, size_t len, size_t *at, syntax_error *e)
{
    size_t start = *at, i = start;
    if (i < len && text[i] == '-') i++;
    int ok = i < len && text[i] >= '0' && text[i] <= '9';
    if (ok && text[i] == '0') i++;
    else while (i < len && text[i] >= '0' && text[i] <= '9') i++;
    if (ok && i < len && text[i] == '.') {
        i++;
        ok = i < len && text[i] >= '0' && text[i] <= '9';
        while (i < len && text[i] >= '0' && text[i] <= '9') i++;
    }
    if (ok && i < len && (text[i] == 'e' || text[i] == 'E')) {
        i++;
        if (i < len && (text[i] == '+' || text[i] == '-')) i++;
        ok = i < len && text[i] >= '0' && text[i] <= '9';
        while (i < len && text[i] >= '0' && text[i] <= '9') i++;
    }
    /* the whole token, for the message: what a reader sees as one number */
    size_t end = start;
    while (end < len && (is_word_char(text[end]) || text[end] == '.' || text[end] == '+' || text[end] == '-')) end++;
    if (!ok || i != end)
        return syntax_fail(e, start, "'%.*s' is not a JSON number; write numbers like 42, -7, 19.99 or 1e6 (no leading "
                                     "zeros, no '+', no '.' without digits after it)", (int)(end - start > 40 ? 40 : end - start),
                           text + start);
    *at = i;
    return 0;
}

/* A scalar value starting at text[*at] ('{' and '[' are the caller's). */
static int scan_scalar(const char *text, size_t len, size_t *at, syntax_error *e)
{
    char c = text[*at];
    if (c == '"') return scan_string(text, len, at, e);
    if (c == '-' || (c >= '0' && c <= '9')) return scan_number(text, len, at, e);
    if (is_word_char(c)) {
        size_t end = *at;
        while (end < len && is_word_char(text[end])) end++;
        size_t n = end - *at;
        const char *w = text + *at;
        if ((n == 4 && !memcmp(w, "true", 4)) || (n == 5 && !memcmp(w, "false", 5)) || (n == 4 && !memcmp(w, "null", 4))) {
            *at = end;
            return 0;
        }
        int shown = n > 40 ? 40 : (int)n;
        return syntax_fail(e, *at, "'%.*s' is not a JSON value; write text in double quotes (\"%.*s\"), or true, false "
                                   "or null in lower case", shown, w, shown, w);
    }
    if (c == '\'')
        return syntax_fail(e, *at, "JSON strings are written in double quotes, not single quotes");
    if (c == '/')
        return syntax_fail(e, *at, "JSON has no comments; remove it (notes go in a \"description\")");
    return syntax_fail(e, *at, "this is not valid JSON here: expected a value (a string in double quotes, a number, "
                               "an object, an array, true, false or null)");
}

static int check_syntax(const char *text, size_t len, int max_depth, syntax_error *e, text_sizes *sizes)
{
    text_sizes counted = {0, 0, 0, 0};
    enum { VALUE, FIRST_VALUE, VALUE_AFTER_COMMA, FIRST_KEY, KEY_AFTER_COMMA, COLON, COMMA_OR_CLOSE, END } state = VALUE;
    typedef struct opener { char kind; size_t offset; } opener;
    opener *stack = malloc(((size_t)max_depth + 1) * sizeof *stack);
    if (!stack) return -2;
    int depth = 0, rc = 0;
    size_t at = 0, comma = 0, value_last = 0, key_start = 0, key_len = 0;
    int any = 0;
    for (;;) {
        while (at < len && (text[at] == ' ' || text[at] == '\t' || text[at] == '\n' || text[at] == '\r'))
            at = text[at] == ' ' ? skip_spaces(text, at, len) : at + 1;
        if (at >= len) {
            if (state == END) break;
            if (!any) {
                rc = syntax_fail(e, len, "the file ends before the JSON value is complete: it is empty; it must hold one "
                                         "JSON value");
            } else if (depth > 0) {
                kp_pos p = kp_pos_of_offset(text, len, stack[depth - 1].offset);
                int is_object = stack[depth - 1].kind == '{';
                rc = syntax_fail(e, len, "the file ends before the JSON value is complete: the %s opened at line %d, "
                                         "column %d is not closed; add what is missing and its '%c'",
                                 is_object ? "object" : "array", p.line, p.column, is_object ? '}' : ']');
            } else {
                rc = syntax_fail(e, len, "the file ends before the JSON value is complete");
            }
            break;
        }
        char c = text[at];
        int in_object = depth > 0 && stack[depth - 1].kind == '{';
        char closer = in_object ? '}' : ']';
        any = 1;
        if (state == END) {
            rc = syntax_fail(e, at, "unexpected text after the end of the JSON value; a file holds one value: remove this "
                                    "text, or check the brackets before it");
            break;
        }
        if (state == COLON) {
            if (c == ':') { at++; state = VALUE; continue; }
            rc = syntax_fail(e, at, "this is not valid JSON here: a ':' must follow the key \"%.*s\"",
                             (int)(key_len > 60 ? 60 : key_len), text + key_start);
            break;
        }
        if (state == COMMA_OR_CLOSE) {
            if (c == ',') {
                comma = at++;
                state = in_object ? KEY_AFTER_COMMA : VALUE_AFTER_COMMA;
                continue;
            }
            if (c == closer) { at++; depth--; goto after_value; }
            if (c == '}' || c == ']') {
                kp_pos p = kp_pos_of_offset(text, len, stack[depth - 1].offset);
                rc = syntax_fail(e, at, "this '%c' does not match the %s opened at line %d, column %d; close that with '%c'",
                                 c, in_object ? "object" : "array", p.line, p.column, closer);
                break;
            }
            if (c == '"' || c == '{' || c == '[' || c == '-' || is_word_char(c)) {
                kp_pos p = kp_pos_of_offset(text, len, value_last);
                rc = syntax_fail(e, at, "this is not valid JSON here: a ',' is missing after the value that ends at line %d, "
                                        "column %d", p.line, p.column);
                break;
            }
            rc = syntax_fail(e, at, "this is not valid JSON here: expected ',' or '%c'", closer);
            break;
        }
        if (state == FIRST_KEY || state == KEY_AFTER_COMMA) {
            if (c == '}' && state == FIRST_KEY) { at++; depth--; goto after_value; }
            if (c == '}' || c == ']') {
                rc = syntax_fail(e, comma, "a comma before the closing '%c'; remove this comma (JSON allows none after the "
                                           "last member)", c);
                break;
            }
            if (c == '"') {
                key_start = at + 1;
                if ((rc = scan_string(text, len, &at, e))) break;
                key_len = at - 1 - key_start;
                counted.string_bytes += key_len + 1;
                state = COLON;
                continue;
            }
            if (c == '\'') { rc = syntax_fail(e, at, "JSON keys are written in double quotes, not single quotes"); break; }
            if (c == '/') { rc = syntax_fail(e, at, "JSON has no comments; remove it (notes go in a \"description\")"); break; }
            if (is_word_char(c)) {
                size_t end = at;
                while (end < len && is_word_char(text[end])) end++;
                int n = end - at > 40 ? 40 : (int)(end - at);
                rc = syntax_fail(e, at, "object keys are written in double quotes: \"%.*s\"", n, text + at);
                break;
            }
            rc = syntax_fail(e, at, "this is not valid JSON here: expected a key in double quotes%s",
                             state == FIRST_KEY ? " or '}'" : "");
            break;
        }
        /* a value is expected */
        if (c == ',' && state != VALUE) {
            rc = syntax_fail(e, at, "this is not valid JSON here: a value is missing before this ','");
            break;
        }
        if (c == ']' && state == FIRST_VALUE) { at++; depth--; goto after_value; }
        if ((c == '}' || c == ']') && state == VALUE_AFTER_COMMA) {
            rc = syntax_fail(e, comma, "a comma before the closing '%c'; remove this comma (JSON allows none after the last "
                                       "element)", c);
            break;
        }
        if ((c == '}' || c == ']' || c == ',') && state == VALUE && depth > 0 && in_object) {
            rc = syntax_fail(e, at, "this is not valid JSON here: the key \"%.*s\" has no value; write one after its ':'",
                             (int)(key_len > 60 ? 60 : key_len), text + key_start);
            break;
        }
        if (c == '{' || c == '[') {
            if (depth >= max_depth) {
                rc = syntax_fail(e, at, "nesting deeper than %d levels; a model never needs this much, check the file",
                                 max_depth);
                break;
            }
            counted.values++;
            stack[depth].kind = c;
            stack[depth].offset = at;
            depth++;
            at++;
            state = c == '{' ? FIRST_KEY : FIRST_VALUE;
            continue;
        }
        size_t start = at;
        if ((rc = scan_scalar(text, len, &at, e))) break;
        counted.values++;
        if (c == '"') counted.string_bytes += at - start - 1;
        else if (c == '-' || (c >= '0' && c <= '9')) { counted.numbers++; counted.number_bytes += at - start; }
    after_value:
        value_last = at - 1;
        state = depth == 0 ? END : COMMA_OR_CLOSE;
    }
    free(stack);
    *sizes = counted;
    return rc;
}

/* ---- pass 3: the tree ------------------------------------------------------------
 * Text that check_syntax accepted, turned into cJSON nodes in the document's arena in
 * one pass: each value's position, its key's position and a number's source text are
 * recorded as the node is made (in pre-order, the order check_syntax counted), so no
 * second scan and no walk are needed to tie them. The nodes are what cJSON's own parser
 * makes (types, valueint saturated like cJSON's, an array's first child's prev pointing
 * at its last) so every cJSON function reads them. */

typedef struct tree_builder {
    const char *text;
    size_t len, at;
    int32_t line;
    size_t mark;          /* columns are counted lazily from here ... */
    int32_t mark_column;  /* ... which is at this column */
    kp_json_doc *doc;
    size_t count, numbers, number_bytes;
    size_t fail_at;       /* where a value could not be made */
    const char *fail_why;
} tree_builder;

static int32_t column_at(tree_builder *b, size_t at)
{
    const unsigned char *t = (const unsigned char *)b->text;
    int32_t col = b->mark_column;
    size_t i = b->mark;
    /* ASCII eight bytes at a time: a byte a column */
    while (i + 8 <= at && !(load8(t + i) & 0x8080808080808080ULL)) { col += 8; i += 8; }
    for (; i < at; i++) col += (t[i] & 0xC0) != 0x80;
    b->mark = at;
    b->mark_column = col;
    return col;
}

static void tree_space(tree_builder *b)
{
    const char *t = b->text;
    size_t at = b->at, len = b->len;
    while (at < len) {
        char c = t[at];
        if (c == '\n') { b->line++; b->mark = at + 1; b->mark_column = 1; }
        else if (c == ' ') { at = skip_spaces(t, at, len); continue; }
        else if (c != '\t' && c != '\r') break;
        at++;
    }
    b->at = at;
}

static cJSON *tree_node(tree_builder *b, int type, int32_t key_line, int32_t key_column)
{
    if (b->count >= b->doc->value_count) return NULL; /* out of step with check_syntax's count */
    cJSON *n = &b->doc->node_block[b->count];
    n->type = type;
    value_pos *v = &b->doc->values[b->count];
    v->line = b->line;
    v->column = column_at(b, b->at);
    v->key_line = key_line;
    v->key_column = key_column;
    b->count++;
    return n;
}

static unsigned hex4(const char *h)
{
    unsigned v = 0;
    for (int i = 0; i < 4; i++) {
        char c = h[i];
        v = v * 16 + (unsigned)(c <= '9' ? c - '0' : (c | 0x20) - 'a' + 10);
    }
    return v;
}

/* The string whose opening quote is at b->at, decoded into the arena; b->at is left
 * after the closing quote. NULL when out of budget, or (fail_why set) when a \u escape
 * is half of a UTF-16 surrogate pair. */
static char *tree_string(tree_builder *b)
{
    const char *t = b->text;
    size_t start = b->at + 1, end = start;
    int has_escape = 0;
    while (t[end] != '"') {
        if (t[end] == '\\') { has_escape = 1; end++; }
        end++;
    }
    char *out = kp_arena_alloc(&b->doc->nodes, end - start + 1);
    if (!out) return NULL;
    b->at = end + 1;
    if (!has_escape) { memcpy(out, t + start, end - start); return out; }
    char *o = out;
    for (size_t i = start; i < end; i++) {
        if (t[i] != '\\') { *o++ = t[i]; continue; }
        char x = t[++i];
        switch (x) {
        case 'b': *o++ = '\b'; break;
        case 'f': *o++ = '\f'; break;
        case 'n': *o++ = '\n'; break;
        case 'r': *o++ = '\r'; break;
        case 't': *o++ = '\t'; break;
        case 'u': {
            unsigned cp = hex4(t + i + 1);
            size_t escape = i - 1;
            i += 4;
            if (cp >= 0xDC00 && cp <= 0xDFFF) { b->fail_at = escape; b->fail_why = "a \\u escape of a lone UTF-16 low surrogate (\\uDC00-\\uDFFF)"; return NULL; }
            if (cp >= 0xD800 && cp <= 0xDBFF) {
                if (i + 6 >= end || t[i + 1] != '\\' || t[i + 2] != 'u') {
                    b->fail_at = escape;
                    b->fail_why = "a \\u escape of a UTF-16 high surrogate not followed by its low surrogate";
                    return NULL;
                }
                unsigned low = hex4(t + i + 3);
                if (low < 0xDC00 || low > 0xDFFF) {
                    b->fail_at = escape;
                    b->fail_why = "a \\u escape of a UTF-16 high surrogate not followed by its low surrogate";
                    return NULL;
                }
                cp = 0x10000 + (((cp & 0x3FF) << 10) | (low & 0x3FF));
                i += 6;
            }
            if (cp < 0x80) *o++ = (char)cp;
            else if (cp < 0x800) { *o++ = (char)(0xC0 | (cp >> 6)); *o++ = (char)(0x80 | (cp & 0x3F)); }
            else if (cp < 0x10000) {
                *o++ = (char)(0xE0 | (cp >> 12)); *o++ = (char)(0x80 | ((cp >> 6) & 0x3F)); *o++ = (char)(0x80 | (cp & 0x3F));
            } else {
                *o++ = (char)(0xF0 | (cp >> 18)); *o++ = (char)(0x80 | ((cp >> 12) & 0x3F));
                *o++ = (char)(0x80 | ((cp >> 6) & 0x3F)); *o++ = (char)(0x80 | (cp & 0x3F));
            }
            break;
        }
        default: *o++ = x; /* \" \\ \/ */
        }
    }
    return out;
}

static void tree_number(tree_builder *b, cJSON *n)
{
    const char *t = b->text;
    size_t start = b->at, end = start;
    int integral = 1;
    while (end < b->len && is_number_byte(t[end])) { if (t[end] == '.' || t[end] == 'e' || t[end] == 'E') integral = 0; end++; }
    size_t digits = end - start - (t[start] == '-');
    double v;
    if (integral && digits <= 15) {
        /* exact in a double: what strtod gives, without it */
        int64_t x = 0;
        for (size_t i = start + (t[start] == '-'); i < end; i++) x = x * 10 + (t[i] - '0');
        v = t[start] == '-' ? -(double)x : (double)x;
    } else {
        char buf[64], *heap = NULL, *p = buf;
        if (end - start >= sizeof buf) p = heap = malloc(end - start + 1);
        if (p) {
            memcpy(p, t + start, end - start);
            p[end - start] = '\0';
            v = strtod(p, NULL);
        } else {
            v = 0;
        }
        free(heap);
    }
    n->valuedouble = v;
    n->valueint = v >= INT_MAX ? INT_MAX : v <= (double)INT_MIN ? INT_MIN : (int)v;
    number_span *span = &b->doc->numbers[b->numbers++];
    span->value = (uint32_t)(b->count - 1);
    span->offset = (uint32_t)b->number_bytes;
    span->length = (uint32_t)(end - start);
    memcpy(b->doc->number_text + b->number_bytes, t + start, end - start);
    b->number_bytes += end - start;
    b->at = end;
}

/* Returns the root, or NULL: out of the arena's budget, or b->fail_why set. */
static cJSON *build_tree(tree_builder *b, int max_depth)
{
    typedef struct frame { cJSON *node, *last; } frame;
    frame *stack = malloc(((size_t)max_depth + 1) * sizeof *stack);
    if (!stack) return NULL;
    int depth = 0;
    cJSON *root = NULL;
    for (;;) {
        tree_space(b);
        char c = b->text[b->at];
        if (depth > 0 && (c == '}' || c == ']')) {
            b->at++;
            frame *f = &stack[--depth];
            if (f->node->child) f->node->child->prev = f->last;
            if (depth == 0) break;
            continue;
        }
        if (c == ',') { b->at++; tree_space(b); c = b->text[b->at]; }
        int32_t key_line = 0, key_column = 0;
        char *key = NULL;
        if (depth > 0 && stack[depth - 1].node->type == cJSON_Object) {
            key_line = b->line;
            key_column = column_at(b, b->at);
            if (!(key = tree_string(b))) break;
            tree_space(b);
            b->at++; /* ':' */
            tree_space(b);
            c = b->text[b->at];
        }
        cJSON *n;
        if (c == '{' || c == '[') {
            if (!(n = tree_node(b, c == '{' ? cJSON_Object : cJSON_Array, key_line, key_column))) break;
            b->at++;
        } else if (c == '"') {
            if (!(n = tree_node(b, cJSON_String, key_line, key_column))) break;
            if (!(n->valuestring = tree_string(b))) break;
        } else if (c == 't' || c == 'f' || c == 'n') {
            if (!(n = tree_node(b, c == 't' ? cJSON_True : c == 'f' ? cJSON_False : cJSON_NULL, key_line, key_column))) break;
            if (c == 't') n->valueint = 1;
            b->at += c == 'f' ? 5 : 4;
        } else {
            if (!(n = tree_node(b, cJSON_Number, key_line, key_column))) break;
            tree_number(b, n);
        }
        n->string = key;
        if (depth > 0) {
            frame *f = &stack[depth - 1];
            if (f->last) { f->last->next = n; n->prev = f->last; }
            else f->node->child = n;
            f->last = n;
        } else {
            root = n;
        }
        if (c == '{' || c == '[') {
            stack[depth].node = n;
            stack[depth].last = NULL;
            depth++;
        } else if (depth == 0) {
            break;
        }
    }
    int complete = depth == 0 && root && !b->fail_why;
    free(stack);
    return complete ? root : NULL;
}

/* ---- the node -> position map ------------------------------------------------- */

static const value_pos *map_get(const kp_json_doc *doc, const cJSON *node)
{
    if (!doc || !node || !doc->node_block || node < doc->node_block || node >= doc->node_block + doc->value_count) return NULL;
    return &doc->values[node - doc->node_block];
}

static int compare_names(const void *a, const void *b)
{
    const cJSON *x = *(const cJSON *const *)a, *y = *(const cJSON *const *)b;
    int c = strcmp(x->string, y->string);
    if (c) return c;
    return x < y ? -1 : x > y;
}

static int check_duplicates(kp_json_doc *doc, const cJSON *object, kp_error *err)
{
    size_t n = 0;
    for (const cJSON *c = object->child; c; c = c->next) n++;
    if (n < 2) return 0;
    if (n <= 16) {
        /* the common small object: no duplicate in a pairwise look, no sort needed */
        int has_duplicate = 0;
        for (const cJSON *a = object->child; a && !has_duplicate; a = a->next)
            for (const cJSON *b = a->next; b && !has_duplicate; b = b->next) has_duplicate = strcmp(a->string, b->string) == 0;
        if (!has_duplicate) return 0;
    }
    const cJSON **members = malloc(n * sizeof *members);
    if (!members) return kp_error_set(err, KP_ERR_NOMEM, doc->file, 0, 0, "out of memory while checking keys");
    size_t i = 0;
    for (const cJSON *c = object->child; c; c = c->next) members[i++] = c;
    qsort(members, n, sizeof *members, compare_names);
    const cJSON *dup = NULL, *first = NULL;
    for (i = 1; i < n; i++) {
        if (strcmp(members[i]->string, members[i - 1]->string) == 0) {
            /* report the later occurrence in document order */
            const value_pos *a = map_get(doc, members[i - 1]), *b = map_get(doc, members[i]);
            int later = a && b && (b->key_line > a->key_line ||
                                   (b->key_line == a->key_line && b->key_column > a->key_column));
            dup = later ? members[i] : members[i - 1];
            first = later ? members[i - 1] : members[i];
            break;
        }
    }
    free(members);
    if (!dup) return 0;
    kp_pos p = kp_json_key_pos(doc, first);
    return kp_json_error(doc, dup, 1, err, KP_ERR_PARSE,
                         "duplicate key \"%s\" (first defined at line %d, column %d); keep one of them",
                         dup->string, p.line, p.column);
}

/* ---- parse ------------------------------------------------------------------------ */

void kp_json_free(kp_json_doc *doc)
{
    if (!doc) return;
    kp_arena_free(&doc->nodes);
    free(doc->values);
    free(doc->numbers);
    free(doc->number_text);
    free(doc->file);
    free(doc);
}

int kp_json_parse(const char *file, const char *text, size_t len, const kp_json_limits *limits,
                  kp_json_doc **out, kp_error *err)
{
    *out = NULL;
    if (!file) file = "<input>";
    if (!limits) limits = &kp_json_model_limits;
    /* a UTF-8 byte-order mark, which some editors write, is not part of the value */
    if (len >= 3 && memcmp(text, "\xEF\xBB\xBF", 3) == 0) {
        text += 3;
        len -= 3;
    }
    if (len > limits->max_bytes)
        return kp_error_set(err, KP_ERR_PARSE, file, 0, 0,
                            "the file is %zu bytes, more than the %zu MiB limit; split it or check that it is the right file",
                            len, limits->max_bytes >> 20);
    size_t bad = kp_utf8_check(text, len);
    if (bad < len) {
        kp_pos p = kp_pos_of_offset(text, len, bad);
        return kp_error_set(err, KP_ERR_PARSE, file, p.line, p.column,
                            "invalid UTF-8 (byte 0x%02X); save the file as UTF-8", (unsigned char)text[bad]);
    }
    if (memchr(text, '\0', len)) {
        size_t at = (size_t)((const char *)memchr(text, '\0', len) - text);
        kp_pos p = kp_pos_of_offset(text, len, at);
        return kp_error_set(err, KP_ERR_PARSE, file, p.line, p.column,
                            "a NUL byte in the file; this is not a JSON text file");
    }
    syntax_error syntax;
    text_sizes sizes;
    int syntax_rc = check_syntax(text, len, limits->max_depth, &syntax, &sizes);
    if (syntax_rc == -2) return kp_error_set(err, KP_ERR_NOMEM, file, 0, 0, "out of memory");
    if (syntax_rc) {
        kp_pos p = kp_pos_of_offset(text, len, syntax.offset);
        return kp_error_set(err, KP_ERR_PARSE, file, p.line, p.column, "%s", syntax.message);
    }
    size_t count = sizes.values, numbers = sizes.numbers, number_bytes = sizes.number_bytes, string_bytes = sizes.string_bytes;
    /* what the parse will hold: the position index, the numbers' text, and cJSON's
     * nodes and strings in the arena (its limit enforces the rest exactly) */
    size_t index_bytes = count * sizeof(value_pos) + numbers * sizeof(number_span) + number_bytes + 1;
    size_t need = index_bytes + count * sizeof(cJSON) + string_bytes;
    size_t budget = limits->memory_factor * len;
    if (budget < limits->memory_floor) budget = limits->memory_floor;
    if (need > budget)
        return kp_error_set(err, KP_ERR_PARSE, file, 1, 1,
                            "the file holds %zu JSON values in %zu bytes; parsing it would need about %zu KiB, "
                            "more than %zux its size; this is not a model file",
                            count, len, need >> 10, limits->memory_factor);

    kp_json_doc *doc = calloc(1, sizeof *doc);
    if (!doc) return kp_error_set(err, KP_ERR_NOMEM, file, 0, 0, "out of memory");
    doc->file = strdup(file);
    doc->values = malloc((count ? count : 1) * sizeof *doc->values);
    doc->numbers = malloc((numbers ? numbers : 1) * sizeof *doc->numbers);
    doc->number_text = malloc(number_bytes + 1);
    if (!doc->file || !doc->values || !doc->numbers || !doc->number_text) {
        kp_json_free(doc);
        return kp_error_set(err, KP_ERR_NOMEM, file, 0, 0, "out of memory");
    }
    doc->value_count = count;
    doc->number_count = numbers;
    doc->nodes.chunk_size = len * 4 < 1024 ? 1024 : len * 4 > 65536 ? 65536 : len * 4;
    doc->nodes.limit = budget > index_bytes ? budget - index_bytes : 1;
    /* every node in one block, in the order they are made */
    doc->node_block = kp_arena_alloc(&doc->nodes, (count ? count : 1) * sizeof *doc->node_block);
    tree_builder b = {.text = text, .len = len, .line = 1, .mark_column = 1, .doc = doc};
    doc->root = doc->node_block ? build_tree(&b, limits->max_depth) : NULL;
    int status = 0;
    if (!doc->root && b.fail_why) {
        kp_pos p = kp_pos_of_offset(text, len, b.fail_at);
        status = kp_error_set(err, KP_ERR_PARSE, file, p.line, p.column, "%s; write the character itself (the file is "
                              "UTF-8) or both halves of the pair", b.fail_why);
    } else if (!doc->root) {
        status = kp_error_set(err, KP_ERR_PARSE, file, 1, 1,
                              "parsing the file would need more than %zux its size (%zu bytes); this is not a model file",
                              limits->memory_factor, len);
    } else if (b.count != count || b.numbers != numbers) {
        status = kp_error_set(err, KP_ERR_INTERNAL, file, 0, 0,
                              "position index out of step with the parser (%zu vs %zu values); please report this",
                              b.count, count);
    }
    /* duplicate keys, object by object */
    for (size_t i = 0; status == 0 && i < doc->value_count; i++)
        if (cJSON_IsObject(&doc->node_block[i])) status = check_duplicates(doc, &doc->node_block[i], err);
    if (status) { kp_json_free(doc); return -1; }
    *out = doc;
    return 0;
}

int kp_file_read(const char *path, size_t max_bytes, char **out, size_t *out_len, kp_error *err)
{
    *out = NULL;
    *out_len = 0;
    struct stat st;
    if (stat(path, &st) != 0)
        return kp_error_set(err, KP_ERR_IO, path, 0, 0, "cannot read the file: %s", strerror(errno));
    if (S_ISDIR(st.st_mode))
        return kp_error_set(err, KP_ERR_IO, path, 0, 0, "this is a directory; give the path of a file");
    if ((size_t)st.st_size > max_bytes)
        return kp_error_set(err, KP_ERR_PARSE, path, 0, 0,
                            "the file is %lld bytes, more than the %zu MiB limit; check that it is the right file",
                            (long long)st.st_size, max_bytes >> 20);
    FILE *f = fopen(path, "rb");
    if (!f) return kp_error_set(err, KP_ERR_IO, path, 0, 0, "cannot open the file: %s", strerror(errno));
    size_t cap = (size_t)st.st_size + 1, len = 0;
    char *buf = malloc(cap);
    if (!buf) { fclose(f); return kp_error_set(err, KP_ERR_NOMEM, path, 0, 0, "out of memory"); }
    for (;;) {
        if (len + 1 >= cap) {
            if (cap > max_bytes + 1) {
                free(buf);
                fclose(f);
                return kp_error_set(err, KP_ERR_PARSE, path, 0, 0, "the file grew past the %zu MiB limit while being read",
                                    max_bytes >> 20);
            }
            char *bigger = realloc(buf, cap * 2);
            if (!bigger) { free(buf); fclose(f); return kp_error_set(err, KP_ERR_NOMEM, path, 0, 0, "out of memory"); }
            buf = bigger;
            cap *= 2;
        }
        size_t got = fread(buf + len, 1, cap - len - 1, f);
        len += got;
        if (got == 0) break;
    }
    int failed = ferror(f);
    fclose(f);
    if (failed) { free(buf); return kp_error_set(err, KP_ERR_IO, path, 0, 0, "error while reading the file"); }
    buf[len] = '\0';
    *out = buf;
    *out_len = len;
    return 0;
}

int kp_json_load_file(const char *path, const kp_json_limits *limits, kp_json_doc **out, kp_error *err)
{
    *out = NULL;
    if (!limits) limits = &kp_json_model_limits;
    char *buf;
    size_t len;
    if (kp_file_read(path, limits->max_bytes, &buf, &len, err)) return -1;
    int rc = kp_json_parse(path, buf, len, limits, out, err);
    free(buf);
    return rc;
}

cJSON *kp_json_root(const kp_json_doc *doc) { return doc ? doc->root : NULL; }
const char *kp_json_file(const kp_json_doc *doc) { return doc ? doc->file : ""; }

kp_pos kp_json_pos(const kp_json_doc *doc, const cJSON *node)
{
    const value_pos *v = map_get(doc, node);
    kp_pos p = {0, 0};
    if (v) { p.line = v->line; p.column = v->column; }
    return p;
}

kp_pos kp_json_key_pos(const kp_json_doc *doc, const cJSON *node)
{
    const value_pos *v = map_get(doc, node);
    kp_pos p = {0, 0};
    if (v) {
        p.line = v->key_line ? v->key_line : v->line;
        p.column = v->key_line ? v->key_column : v->column;
    }
    return p;
}

const char *kp_json_number_text(const kp_json_doc *doc, const cJSON *node, size_t *len)
{
    const value_pos *v = map_get(doc, node);
    if (!v || !cJSON_IsNumber(node)) return NULL;
    uint32_t value = (uint32_t)(v - doc->values);
    size_t lo = 0, hi = doc->number_count;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (doc->numbers[mid].value < value) lo = mid + 1;
        else hi = mid;
    }
    if (lo == doc->number_count || doc->numbers[lo].value != value) return NULL;
    if (len) *len = doc->numbers[lo].length;
    return doc->number_text + doc->numbers[lo].offset;
}

kp_pos kp_json_pointer_pos(const kp_json_doc *doc, const char *pointer)
{
    kp_pos none = {0, 0};
    if (!doc) return none;
    const cJSON *node = doc->root;
    const char *p = pointer;
    char token[512];
    while (node && *p == '/') {
        p++;
        size_t n = 0;
        while (*p && *p != '/' && n + 1 < sizeof token) {
            if (p[0] == '~' && p[1] == '1') { token[n++] = '/'; p += 2; }
            else if (p[0] == '~' && p[1] == '0') { token[n++] = '~'; p += 2; }
            else token[n++] = *p++;
        }
        token[n] = '\0';
        if (cJSON_IsArray(node)) {
            char *endp;
            long idx = strtol(token, &endp, 10);
            node = *endp || idx < 0 ? NULL : cJSON_GetArrayItem(node, (int)idx);
        } else if (cJSON_IsObject(node)) {
            node = kp_json_get(node, token);
        } else {
            node = NULL;
        }
    }
    return node && *p == '\0' ? kp_json_pos(doc, node) : none;
}

int kp_json_error(const kp_json_doc *doc, const cJSON *node, int at_key, kp_error *err, int code,
                  const char *fmt, ...)
{
    kp_pos p = at_key ? kp_json_key_pos(doc, node) : kp_json_pos(doc, node);
    char message[sizeof err->message];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(message, sizeof message, fmt, ap);
    va_end(ap);
    return kp_error_set(err, code, kp_json_file(doc), p.line, p.column, "%s", message);
}

void kp_json_describe(const cJSON *node, char *buf, size_t size)
{
    if (!node) { snprintf(buf, size, "nothing"); return; }
    if (cJSON_IsString(node)) {
        if (strlen(node->valuestring) > 40) snprintf(buf, size, "\"%.37s...\"", node->valuestring);
        else snprintf(buf, size, "\"%s\"", node->valuestring);
    } else if (cJSON_IsNumber(node)) snprintf(buf, size, "%.17g", node->valuedouble);
    else if (cJSON_IsBool(node)) snprintf(buf, size, "%s", cJSON_IsTrue(node) ? "true" : "false");
    else if (cJSON_IsNull(node)) snprintf(buf, size, "null");
    else if (cJSON_IsArray(node)) snprintf(buf, size, "an array");
    else if (cJSON_IsObject(node)) snprintf(buf, size, "an object");
    else snprintf(buf, size, "a value");
}

/* ---- printing: the bytes of cJSON_Print, faster ------------------------------------- */

typedef struct out_buf {
    char *data;
    size_t len, cap;
    int is_failed;
    FILE *sink;                 /* kp_json_write: a full buffer goes here and starts over */
    int is_compact;             /* cJSON_PrintUnformatted's layout: no spaces, tabs or newlines */
} out_buf;

static void out_reserve(out_buf *b, size_t more)
{
    if (b->is_failed || b->len + more + 1 <= b->cap) return;
    if (b->sink && b->len) {
        if (fwrite(b->data, 1, b->len, b->sink) != b->len) { b->is_failed = 1; return; }
        b->len = 0;
        if (more + 1 <= b->cap) return;
    }
    size_t cap = b->cap ? b->cap : 4096;
    while (cap < b->len + more + 1) cap *= 2;
    char *bigger = realloc(b->data, cap);
    if (!bigger) { b->is_failed = 1; return; }
    b->data = bigger;
    b->cap = cap;
}

static inline void out_bytes(out_buf *b, const char *s, size_t n)
{
    if (b->len + n + 1 > b->cap) {
        out_reserve(b, n);
        if (b->is_failed) return;
    }
    memcpy(b->data + b->len, s, n);
    b->len += n;
}

static void out_char(out_buf *b, char c) { out_bytes(b, &c, 1); }

static void out_tabs(out_buf *b, size_t n)
{
    static const char tabs[] = "\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t";
    for (; n > sizeof tabs - 1; n -= sizeof tabs - 1) out_bytes(b, tabs, sizeof tabs - 1);
    out_bytes(b, tabs, n);
}

/* Bytes a JSON string writes escaped: controls, '"' and '\\'. */
static const unsigned char needs_escape[256] = {
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
    0, 0, 1, ['\\'] = 1,
};

/* The letter after the backslash of a byte's two-byte escape; 0: \u00XX (six bytes). */
static const char short_escape[256] = {
    ['"'] = '"', ['\\'] = '\\', ['\b'] = 'b', ['\f'] = 'f', ['\n'] = 'n', ['\r'] = 'r', ['\t'] = 't',
};

static void out_string(out_buf *b, const char *s)
{
    out_char(b, '"');
    const unsigned char *c = (const unsigned char *)(s ? s : "");
    for (;;) {
        const unsigned char *run = c;
        while (!needs_escape[*c]) c++;
        out_bytes(b, (const char *)run, (size_t)(c - run));
        if (!*c) break;
        char e[8] = {'\\', short_escape[*c]};
        if (e[1]) out_bytes(b, e, 2);
        else {
            snprintf(e, sizeof e, "\\u%04x", *c);
            out_bytes(b, e, 6);
        }
        c++;
    }
    out_char(b, '"');
}

/* A number with at most six decimals and fifteen digits in all (4.05, 0.7, 1234.5): the
 * double nearest r / 10^k is d for the fewest such k, so %1.15g, which rounds d to fifteen
 * significant digits and drops trailing zeros, prints exactly those digits, in fixed
 * notation from 1e-4 on. Their length, or 0 for any other number (then printf). */
static int few_decimals(double d, char *text)
{
    static const double tens[] = {1, 10, 100, 1000, 10000, 100000, 1000000};
    double m = fabs(d);
    if (!(m >= 1e-4 && m < 1e14)) return 0;
    for (int k = 1; k <= 6; k++) {
        double scaled = m * tens[k], r = floor(scaled + 0.5);
        if (r >= 1e15 || r / tens[k] != m) continue;
        unsigned long long whole = (unsigned long long)r / (unsigned long long)tens[k];
        unsigned long long frac = (unsigned long long)r % (unsigned long long)tens[k];
        char buf[40], *end = buf + sizeof buf, *p = end;
        for (int i = 0; i < k; i++) { *--p = (char)('0' + frac % 10); frac /= 10; }
        if (end[-1] == '0') return 0; /* never with the fewest decimals; printf decides then */
        *--p = '.';
        p = kp_digits(p, whole, signbit(d) != 0);
        int n = (int)(end - p);
        memcpy(text, p, (size_t)n);
        return n;
    }
    return 0;
}

/* The text cJSON writes of a number (at most 25 bytes), into text; its length. */
#define NUMBER_TEXT 32

static int number_text(double d, char text[NUMBER_TEXT])
{
    int n;
    if (isnan(d) || isinf(d)) {
        n = snprintf(text, NUMBER_TEXT, "null");
    } else if (d == floor(d) && fabs(d) < 1e15) {
        /* a whole number prints as its digits under %1.15g: no formatting engine needed */
        char *digits = kp_digits(text + NUMBER_TEXT, (unsigned long long)fabs(d), signbit(d) != 0);
        n = (int)(text + NUMBER_TEXT - digits);
        memmove(text, digits, (size_t)n);
    } else if ((n = few_decimals(d, text)) > 0) {
        /* as %1.15g prints it */
    } else {
        /* shortest of 15 significant digits when it reads back as the same double
         * (within cJSON's epsilon), else 17 */
        n = snprintf(text, NUMBER_TEXT, "%1.15g", d);
        double back = strtod(text, NULL);
        double larger = fabs(back) > fabs(d) ? fabs(back) : fabs(d);
        if (!(fabs(back - d) <= larger * DBL_EPSILON)) n = snprintf(text, NUMBER_TEXT, "%1.17g", d);
    }
    return n;
}

static void out_number(out_buf *b, const cJSON *item)
{
    char text[NUMBER_TEXT];
    int n = number_text(item->valuedouble, text);
    out_bytes(b, text, (size_t)n);
}

static int out_value(out_buf *b, const cJSON *item, size_t depth)
{
    switch (item->type & 0xFF) {
    case cJSON_NULL: out_bytes(b, "null", 4); return 0;
    case cJSON_False: out_bytes(b, "false", 5); return 0;
    case cJSON_True: out_bytes(b, "true", 4); return 0;
    case cJSON_Number: out_number(b, item); return 0;
    case cJSON_Raw:
        if (!item->valuestring) return -1;
        out_bytes(b, item->valuestring, strlen(item->valuestring));
        return 0;
    case cJSON_String:
        if (!item->valuestring) return -1;
        out_string(b, item->valuestring);
        return 0;
    case cJSON_Array:
        out_char(b, '[');
        for (const cJSON *c = item->child; c; c = c->next) {
            if (out_value(b, c, depth + 1)) return -1;
            if (c->next) out_bytes(b, ", ", b->is_compact ? 1 : 2);
        }
        out_char(b, ']');
        return 0;
    case cJSON_Object:
        if (b->is_compact) {
            out_char(b, '{');
            for (const cJSON *c = item->child; c; c = c->next) {
                out_string(b, c->string);
                out_char(b, ':');
                if (out_value(b, c, depth + 1)) return -1;
                if (c->next) out_char(b, ',');
            }
            out_char(b, '}');
            return 0;
        }
        out_bytes(b, "{\n", 2);
        for (const cJSON *c = item->child; c; c = c->next) {
            out_tabs(b, depth + 1);
            out_string(b, c->string);
            out_bytes(b, ":\t", 2);
            if (out_value(b, c, depth + 1)) return -1;
            if (c->next) out_char(b, ',');
            out_char(b, '\n');
        }
        out_tabs(b, depth);
        out_char(b, '}');
        return 0;
    default:
        return -1;
    }
}

char *kp_json_print_at(const cJSON *item, size_t depth)
{
    if (!item) return NULL;
    out_buf b = {0};
    if (out_value(&b, item, depth) || b.is_failed) {
        free(b.data);
        return NULL;
    }
    out_reserve(&b, 0);
    if (b.is_failed) { free(b.data); return NULL; }
    b.data[b.len] = '\0';
    return b.data;
}

char *kp_json_print(const cJSON *item) { return kp_json_print_at(item, 0); }

int kp_json_append_compact(char **data, size_t *len, size_t *cap, const cJSON *item)
{
    if (!item) return -1;
    out_buf b = {.data = *data, .len = *len, .cap = *cap, .is_compact = 1};
    int rc = out_value(&b, item, 0) ? -1 : 0;
    out_reserve(&b, 0);
    *data = b.data;
    *cap = b.cap;
    if (b.is_failed) rc = -1;
    if (rc == 0) *len = b.len;
    if (b.data && *len < b.cap) b.data[*len] = '\0';
    return rc;
}

/* The bytes out_string writes of s. */
static size_t string_size(const char *s)
{
    size_t n = 2;
    for (const unsigned char *c = (const unsigned char *)s; *c; c++) {
        if (!needs_escape[*c]) { n++; continue; }
        n += short_escape[*c] ? 2 : 6;
    }
    return n;
}

long kp_json_compact_size(const cJSON *item)
{
    if (!item) return -1;
    switch (item->type & 0xFF) {
    case cJSON_NULL: return 4;
    case cJSON_False: return 5;
    case cJSON_True: return 4;
    case cJSON_String: return item->valuestring ? (long)string_size(item->valuestring) : -1;
    case cJSON_Array:
    case cJSON_Object: {
        long n = 2;
        for (const cJSON *c = item->child; c; c = c->next) {
            long one = kp_json_compact_size(c);
            if (one < 0) return -1;
            n += one + (c->next ? 1 : 0);
            if ((item->type & 0xFF) == cJSON_Object) n += (long)string_size(c->string ? c->string : "") + 1;
        }
        return n;
    }
    case cJSON_Number: {
        char text[NUMBER_TEXT];
        return number_text(item->valuedouble, text);
    }
    case cJSON_Raw: return item->valuestring ? (long)strlen(item->valuestring) : -1;
    default: return -1;
    }
}

int kp_json_write(FILE *f, const cJSON *item)
{
    if (!item) return -1;
    out_buf b = {.data = malloc(65536), .cap = 65536, .sink = f};
    if (!b.data) return -1;
    int rc = out_value(&b, item, 0) || b.is_failed ? -1 : 0;
    if (rc == 0) {
        out_char(&b, '\n');
        if (b.is_failed || fwrite(b.data, 1, b.len, f) != b.len || fflush(f)) rc = -1;
    }
    free(b.data);
    return rc;
}

const char *kp_json_str(const cJSON *o, const char *key)
{
    const cJSON *v = kp_json_get(o, key);
    return cJSON_IsString(v) ? v->valuestring : "";
}

double kp_json_num(const cJSON *o, const char *key)
{
    const cJSON *v = kp_json_get(o, key);
    return cJSON_IsNumber(v) ? v->valuedouble : 0;
}
