/*
 * json.c — positioned JSON documents: a light pre-scan plus cJSON.
 *
 * Parsing is three passes over the text, none recursive:
 *   1. kp_utf8_check rejects malformed UTF-8 with its position;
 *   2. prescan() walks the tokens once, recording for every value (in document order)
 *      its line:col, its key's line:col and, for numbers, the source span; it also
 *      counts nodes and string bytes so that the memory the parse will hold is known
 *      before cJSON allocates anything, and refuses nesting deeper than the limit;
 *   3. cJSON parses the text; a pre-order walk of its tree meets the values in the
 *      same order the pre-scan recorded them, which ties each node to its position.
 * Invariant: the i-th value the pre-scan records is the i-th node of cJSON's pre-order
 * walk. Anything that would break it (invalid JSON) is rejected by cJSON before the
 * walk happens.
 */
#include "core/json.h"

#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

const kp_json_limits kp_json_model_limits = {
    .max_bytes = 64u << 20, .max_depth = 256, .memory_factor = 10, .memory_floor = 1u << 20,
};

typedef struct value_pos {
    int32_t line, column;         /* the value */
    int32_t key_line, key_column; /* its key, when the value is an object member */
    uint32_t number_offset, number_length;
} value_pos;

typedef struct node_slot { const cJSON *node; uint32_t index; } node_slot;

struct kp_json_doc {
    char *file;
    char *text;          /* a private copy of the source, NUL-terminated */
    size_t length;
    cJSON *root;
    value_pos *values;
    size_t value_count;
    node_slot *slots;    /* open addressing, power-of-two size */
    size_t slot_mask;
};

size_t kp_utf8_check(const char *text, size_t len)
{
    const unsigned char *s = (const unsigned char *)text;
    size_t i = 0;
    while (i < len) {
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

/* ---- pass 2: the pre-scan ------------------------------------------------------ */

typedef struct scanner {
    const char *text;
    size_t len, at;
    int32_t line, column;
} scanner;

static void advance(scanner *s)
{
    unsigned char c = (unsigned char)s->text[s->at++];
    if (c == '\n') { s->line++; s->column = 1; }
    else if ((c & 0xC0) != 0x80) s->column++;
}

static void skip_space(scanner *s)
{
    while (s->at < s->len) {
        char c = s->text[s->at];
        if (c != ' ' && c != '\t' && c != '\n' && c != '\r') break;
        advance(s);
    }
}

/* Counts values and string bytes and (when out is non-NULL) records positions.
 * Stops quietly at anything that is not JSON: cJSON reports those. Returns -1 only
 * for nesting deeper than max_depth (with *deep_offset set). */
static int prescan(const char *text, size_t len, int max_depth, value_pos *out, size_t *value_count,
                   size_t *string_bytes, size_t *deep_offset)
{
    scanner s = {text, len, 0, 1, 1};
    char *stack = malloc((size_t)max_depth + 1);
    if (!stack) return -2;
    int depth = 0, expect_key = 0;
    int32_t key_line = 0, key_column = 0;
    size_t n = 0, bytes = 0;
    int status = 0;
    for (;;) {
        skip_space(&s);
        if (s.at >= s.len) break;
        char c = text[s.at];
        if (c == '}' || c == ']') {
            if (depth > 0) depth--;
            expect_key = 0;
            advance(&s);
            continue;
        }
        if (c == ',') { expect_key = depth > 0 && stack[depth - 1] == '{'; advance(&s); continue; }
        if (c == ':') { advance(&s); continue; }
        if (c == '"' && expect_key) {
            key_line = s.line; key_column = s.column;
            advance(&s);
            while (s.at < s.len && text[s.at] != '"') {
                if (text[s.at] == '\\' && s.at + 1 < s.len) advance(&s);
                advance(&s);
                bytes++;
            }
            if (s.at < s.len) advance(&s);
            bytes += 1;
            expect_key = 0;
            continue;
        }
        /* a value starts here */
        if (out) {
            value_pos *v = &out[n];
            v->line = s.line; v->column = s.column;
            v->key_line = key_line; v->key_column = key_column;
            v->number_offset = v->number_length = 0;
        }
        n++;
        key_line = key_column = 0;
        if (c == '{' || c == '[') {
            if (depth >= max_depth) { *deep_offset = s.at; status = -1; break; }
            stack[depth++] = c;
            expect_key = c == '{';
            advance(&s);
        } else if (c == '"') {
            advance(&s);
            while (s.at < s.len && text[s.at] != '"') {
                if (text[s.at] == '\\' && s.at + 1 < s.len) advance(&s);
                advance(&s);
                bytes++;
            }
            if (s.at < s.len) advance(&s);
            bytes += 1;
        } else if (c == '-' || (c >= '0' && c <= '9')) {
            size_t start = s.at;
            while (s.at < s.len && strchr("0123456789+-.eE", text[s.at]) && text[s.at]) advance(&s);
            if (out) { out[n - 1].number_offset = (uint32_t)start; out[n - 1].number_length = (uint32_t)(s.at - start); }
            bytes += 32; /* cJSON prints numbers into a scratch buffer only on output */
        } else if (c >= 'a' && c <= 'z') {
            while (s.at < s.len && text[s.at] >= 'a' && text[s.at] <= 'z') advance(&s);
        } else {
            break; /* not JSON; cJSON will say where */
        }
    }
    free(stack);
    *value_count = n;
    *string_bytes = bytes;
    return status;
}

/* ---- the node -> position map ------------------------------------------------- */

static size_t hash_pointer(const void *p)
{
    uintptr_t x = (uintptr_t)p;
    x ^= x >> 33; x *= 0xff51afd7ed558ccdULL; x ^= x >> 33;
    return (size_t)x;
}

static void map_put(kp_json_doc *doc, const cJSON *node, uint32_t index)
{
    size_t i = hash_pointer(node) & doc->slot_mask;
    while (doc->slots[i].node) i = (i + 1) & doc->slot_mask;
    doc->slots[i].node = node;
    doc->slots[i].index = index;
}

static const value_pos *map_get(const kp_json_doc *doc, const cJSON *node)
{
    if (!doc || !node || !doc->slots) return NULL;
    size_t i = hash_pointer(node) & doc->slot_mask;
    while (doc->slots[i].node) {
        if (doc->slots[i].node == node) return &doc->values[doc->slots[i].index];
        i = (i + 1) & doc->slot_mask;
    }
    return NULL;
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
    cJSON_Delete(doc->root);
    free(doc->values);
    free(doc->slots);
    free(doc->text);
    free(doc->file);
    free(doc);
}

int kp_json_parse(const char *file, const char *text, size_t len, const kp_json_limits *limits,
                  kp_json_doc **out, kp_error *err)
{
    *out = NULL;
    if (!file) file = "<input>";
    if (!limits) limits = &kp_json_model_limits;
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
    size_t count = 0, string_bytes = 0, deep = 0;
    int scan = prescan(text, len, limits->max_depth, NULL, &count, &string_bytes, &deep);
    if (scan == -2) return kp_error_set(err, KP_ERR_NOMEM, file, 0, 0, "out of memory");
    if (scan == -1) {
        kp_pos p = kp_pos_of_offset(text, len, deep);
        return kp_error_set(err, KP_ERR_PARSE, file, p.line, p.column,
                            "nesting deeper than %d levels; a model never needs this much, check the file",
                            limits->max_depth);
    }
    /* what the parse will hold: our copy, cJSON's nodes and strings, the index */
    size_t per_node = sizeof(cJSON) + 16 + sizeof(value_pos) + 2 * sizeof(node_slot);
    size_t need = len + 1 + count * per_node + string_bytes * 2;
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
    doc->text = malloc(len + 1);
    doc->values = calloc(count ? count : 1, sizeof *doc->values);
    size_t slots = 16;
    while (slots < count * 2) slots <<= 1;
    doc->slots = calloc(slots, sizeof *doc->slots);
    doc->slot_mask = slots - 1;
    if (!doc->file || !doc->text || !doc->values || !doc->slots) {
        kp_json_free(doc);
        return kp_error_set(err, KP_ERR_NOMEM, file, 0, 0, "out of memory");
    }
    memcpy(doc->text, text, len);
    doc->text[len] = '\0';
    doc->length = len;
    prescan(doc->text, len, limits->max_depth, doc->values, &doc->value_count, &string_bytes, &deep);

    const char *end = NULL;
    doc->root = cJSON_ParseWithLengthOpts(doc->text, len, &end, 0);
    if (!doc->root) {
        size_t at = end && end >= doc->text ? (size_t)(end - doc->text) : len;
        kp_pos p = kp_pos_of_offset(doc->text, len, at);
        const char *what = len == 0 || at >= len ? "the file ends before the JSON value is complete"
                                                 : "this is not valid JSON here";
        kp_error_set(err, KP_ERR_PARSE, file, p.line, p.column, "%s; check for a missing comma, quote or bracket",
                     what);
        kp_json_free(doc);
        return -1;
    }
    /* anything after the value other than white space */
    size_t tail = end ? (size_t)(end - doc->text) : len;
    while (tail < len && strchr(" \t\r\n", doc->text[tail])) tail++;
    if (tail < len) {
        kp_pos p = kp_pos_of_offset(doc->text, len, tail);
        kp_error_set(err, KP_ERR_PARSE, file, p.line, p.column,
                     "unexpected text after the end of the JSON value; a file holds exactly one value");
        kp_json_free(doc);
        return -1;
    }

    /* tie nodes to positions: pre-order walk with an explicit stack of "next" pointers */
    size_t index = 0;
    size_t stack_size = 64, top = 0;
    const cJSON **stack = malloc(stack_size * sizeof *stack);
    if (!stack) { kp_json_free(doc); return kp_error_set(err, KP_ERR_NOMEM, file, 0, 0, "out of memory"); }
    const cJSON *node = doc->root;
    int status = 0;
    while (node) {
        if (index < doc->value_count) map_put(doc, node, (uint32_t)index);
        index++;
        if (node->child) {
            if (node->next) {
                if (top == stack_size) {
                    const cJSON **bigger = realloc(stack, stack_size * 2 * sizeof *stack);
                    if (!bigger) { status = kp_error_set(err, KP_ERR_NOMEM, file, 0, 0, "out of memory"); break; }
                    stack = bigger;
                    stack_size *= 2;
                }
                stack[top++] = node->next;
            }
            node = node->child;
        } else if (node->next) {
            node = node->next;
        } else {
            node = top ? stack[--top] : NULL;
        }
    }
    free(stack);
    if (status == 0 && index != doc->value_count) {
        status = kp_error_set(err, KP_ERR_INTERNAL, file, 0, 0,
                              "position index out of step with the parser (%zu vs %zu values); please report this",
                              index, doc->value_count);
    }
    /* duplicate keys, object by object */
    if (status == 0) {
        for (size_t i = 0; i <= doc->slot_mask && status == 0; i++) {
            const cJSON *n = doc->slots[i].node;
            if (n && cJSON_IsObject(n)) status = check_duplicates(doc, n, err);
        }
    }
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
    if (!v || !cJSON_IsNumber(node) || v->number_length == 0) return NULL;
    if (len) *len = v->number_length;
    return doc->text + v->number_offset;
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
            node = cJSON_GetObjectItemCaseSensitive(node, token);
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
