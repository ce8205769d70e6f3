/*
 * diff.c — the first difference between an expected and an actual JSON response, as
 * a JSON path with both values (verify's pass/fail).
 *
 * Numbers are compared by exact value: both sides are rewritten as canonical decimal
 * text first (a backend may hand back cJSON doubles or cJSON_Raw text, the oracle
 * always hands back Raw text), never through a double when the text is available.
 * Invariant: arrays compare element by element in order (order is part of the
 * contract); objects compare by member name, whatever the member order.
 */
#include "migrations/verify.h"

#include <ctype.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- canonical numbers ------------------------------------------------------------------ */

static int canonical_text(const char *text, char *buf, size_t size)
{
    const char *p = text;
    int negative = 0;
    if (*p == '-') { negative = 1; p++; }
    else if (*p == '+') p++;
    char digits[400];
    size_t nd = 0;
    long point = 0;         /* digits before the decimal point */
    int seen = 0;
    while (isdigit((unsigned char)*p)) {
        if (nd + 1 >= sizeof digits) return -1;
        digits[nd++] = *p++;
        point++;
        seen = 1;
    }
    if (*p == '.') {
        p++;
        while (isdigit((unsigned char)*p)) {
            if (nd + 1 >= sizeof digits) return -1;
            digits[nd++] = *p++;
            seen = 1;
        }
    }
    if (!seen) return -1;
    if (*p == 'e' || *p == 'E') {
        p++;
        int exp_negative = 0;
        if (*p == '-' || *p == '+') exp_negative = *p++ == '-';
        if (!isdigit((unsigned char)*p)) return -1;
        long e = 0;
        while (isdigit((unsigned char)*p)) {
            e = e * 10 + (*p++ - '0');
            if (e > 100000) return -1;
        }
        point += exp_negative ? -e : e;
    }
    if (*p) return -1;
    /* strip leading zeros (moving the point) and trailing zeros */
    size_t start = 0;
    while (start < nd && digits[start] == '0') { start++; point--; }
    while (nd > start && digits[nd - 1] == '0') nd--;
    if (start == nd) { if (size < 2) return -1; strcpy(buf, "0"); return 0; }
    const char *d = digits + start;
    long n = (long)(nd - start);
    size_t o = 0;
#define PUT(c) do { if (o + 1 >= size) return -1; buf[o++] = (c); } while (0)
    if (negative) PUT('-');
    if (point <= 0) {
        PUT('0');
        PUT('.');
        for (long i = 0; i < -point; i++) PUT('0');
        for (long i = 0; i < n; i++) PUT(d[i]);
    } else if (point >= n) {
        for (long i = 0; i < n; i++) PUT(d[i]);
        for (long i = n; i < point; i++) PUT('0');
    } else {
        for (long i = 0; i < point; i++) PUT(d[i]);
        PUT('.');
        for (long i = point; i < n; i++) PUT(d[i]);
    }
#undef PUT
    buf[o] = '\0';
    return 0;
}

int kp_json_number_canonical(const cJSON *node, char *buf, size_t size)
{
    if (cJSON_IsRaw(node) && node->valuestring) return canonical_text(node->valuestring, buf, size);
    if (!cJSON_IsNumber(node) || !isfinite(node->valuedouble)) return -1;
    char text[64];
    for (int precision = 1; precision <= 17; precision++) {
        snprintf(text, sizeof text, "%.*g", precision, node->valuedouble);
        if (strtod(text, NULL) == node->valuedouble) break;
    }
    return canonical_text(text, buf, size);
}

/* ---- the walk ------------------------------------------------------------------------------ */

typedef struct strbuf {
    char *s;
    size_t len, cap;
    int failed;
} strbuf;

static void sb_append(strbuf *b, const char *text, size_t n)
{
    if (b->failed) return;
    if (b->len + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 64;
        while (cap < b->len + n + 1) cap *= 2;
        char *bigger = realloc(b->s, cap);
        if (!bigger) { b->failed = 1; return; }
        b->s = bigger;
        b->cap = cap;
    }
    memcpy(b->s + b->len, text, n);
    b->len += n;
    b->s[b->len] = '\0';
}

static void sb_puts(strbuf *b, const char *text) { sb_append(b, text, strlen(text)); }

static int is_identifier(const char *name)
{
    if (!name[0] || !(isalpha((unsigned char)name[0]) || name[0] == '_')) return 0;
    for (const char *p = name; *p; p++)
        if (!(isalnum((unsigned char)*p) || *p == '_')) return 0;
    return 1;
}

static void push_member(strbuf *b, const char *name)
{
    if (is_identifier(name)) {
        sb_puts(b, ".");
        sb_puts(b, name);
        return;
    }
    sb_puts(b, "[\"");
    for (const char *p = name; *p; p++) {
        if (*p == '"' || *p == '\\') sb_append(b, "\\", 1);
        sb_append(b, p, 1);
    }
    sb_puts(b, "\"]");
}

static int is_number_node(const cJSON *n, char *buf, size_t size)
{
    return (cJSON_IsNumber(n) || cJSON_IsRaw(n)) && kp_json_number_canonical(n, buf, size) == 0;
}

/* 0 equal, 1 different (path points at it, *de / *da the nodes, NULL for absent). */
static int walk(const cJSON *e, const cJSON *a, strbuf *path, const cJSON **de, const cJSON **da)
{
    char eb[420], ab[420];
    int en = is_number_node(e, eb, sizeof eb), an = is_number_node(a, ab, sizeof ab);
    if (en || an) {
        if (en && an && strcmp(eb, ab) == 0) return 0;
        if (!en && !an) goto raw;
        *de = e; *da = a;
        return 1;
    }
raw:
    if (cJSON_IsRaw(e) || cJSON_IsRaw(a)) {
        if (cJSON_IsRaw(e) && cJSON_IsRaw(a) && strcmp(e->valuestring, a->valuestring) == 0) return 0;
        *de = e; *da = a;
        return 1;
    }
    int et = e->type & 0xFF, at = a->type & 0xFF;
    if (et != at) { *de = e; *da = a; return 1; }
    if (cJSON_IsString(e)) {
        if (strcmp(e->valuestring, a->valuestring) == 0) return 0;
        *de = e; *da = a;
        return 1;
    }
    if (cJSON_IsArray(e)) {
        const cJSON *x = e->child, *y = a->child;
        for (int i = 0; x || y; i++, x = x ? x->next : NULL, y = y ? y->next : NULL) {
            size_t mark = path->len;
            char index[32];
            snprintf(index, sizeof index, "[%d]", i);
            sb_puts(path, index);
            if (!x || !y) { *de = x; *da = y; return 1; }
            if (walk(x, y, path, de, da)) return 1;
            path->len = mark;
            if (path->s) path->s[mark] = '\0';
        }
        return 0;
    }
    if (cJSON_IsObject(e)) {
        for (const cJSON *x = e->child; x; x = x->next) {
            size_t mark = path->len;
            push_member(path, x->string ? x->string : "");
            const cJSON *y = x->string ? cJSON_GetObjectItemCaseSensitive(a, x->string) : NULL;
            if (!y) { *de = x; *da = NULL; return 1; }
            if (walk(x, y, path, de, da)) return 1;
            path->len = mark;
            if (path->s) path->s[mark] = '\0';
        }
        for (const cJSON *y = a->child; y; y = y->next) {
            if (y->string && cJSON_GetObjectItemCaseSensitive(e, y->string)) continue;
            push_member(path, y->string ? y->string : "");
            *de = NULL; *da = y;
            return 1;
        }
        return 0;
    }
    return 0; /* true, false, null: same type is equal */
}

static char *describe(const cJSON *node)
{
    if (!node) return strdup("(absent)");
    char *text = cJSON_PrintUnformatted(node);
    if (!text) return NULL;
    if (strlen(text) > 300) strcpy(text + 297, "...");
    return text;
}

int kp_json_diff(const cJSON *expected, const cJSON *actual, char **path, char **expected_text, char **actual_text)
{
    *path = *expected_text = *actual_text = NULL;
    strbuf b = {0};
    sb_puts(&b, "$");
    const cJSON *de = NULL, *da = NULL;
    int rc;
    if (!expected || !actual) {
        if (!expected && !actual) { free(b.s); return 0; }
        de = expected;
        da = actual;
        rc = 1;
    } else {
        rc = walk(expected, actual, &b, &de, &da);
    }
    if (rc == 0 || b.failed) { free(b.s); return b.failed ? -1 : 0; }
    *path = b.s;
    *expected_text = describe(de);
    *actual_text = describe(da);
    if (!*expected_text || !*actual_text) {
        free(*path); free(*expected_text); free(*actual_text);
        *path = *expected_text = *actual_text = NULL;
        return -1;
    }
    return 1;
}
