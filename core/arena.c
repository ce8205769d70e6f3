/*
 * arena.c — a bump allocator over a list of chunks.
 *
 * Invariant: a chunk is never moved, so pointers into the arena stay valid until
 * kp_arena_free.
 */
#include "core/arena.h"

#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct kp_arena_chunk {
    kp_arena_chunk *next;
    size_t used, size;
    double data[];
};

struct kp_arena_owned {
    kp_arena_owned *next;
    void *block;
};

enum { CHUNK_SIZE = 64 * 1024 };

/* A new chunk with room for `size` (rounded) bytes at its start, taken (NULL when out of
 * memory or past the limit). */
static void *bump_new_chunk(kp_arena *arena, size_t size)
{
    kp_arena_chunk *c;
    size_t chunk = arena->chunk_size ? arena->chunk_size : CHUNK_SIZE;
    size_t want = size > chunk / 2 ? size : chunk;
    if (arena->limit && arena->total + sizeof *c + want > arena->limit) return NULL;
    c = malloc(sizeof *c + want);
    if (!c) return NULL;
    c->size = want;
    c->used = size;
    if (size > chunk / 2 && arena->head) {
        /* a big block gets its own chunk behind the current one, so the current
         * chunk's free space is not wasted */
        c->next = arena->head->next;
        arena->head->next = c;
    } else {
        c->next = arena->head;
        arena->head = c;
    }
    arena->total += sizeof *c + want;
    return c->data;
}

/* size bytes, 8-byte aligned, not cleared (NULL when out of memory or past the limit) */
static inline void *bump(kp_arena *arena, size_t size)
{
    /* 8-byte alignment: enough for every type keyplan stores (pointers, int64,
     * double); no long double or vector types live in an arena */
    size = size ? (size + 7) / 8 * 8 : 8;
    kp_arena_chunk *c = arena->head;
    if (!c || c->size - c->used < size) return bump_new_chunk(arena, size);
    void *p = (char *)c->data + c->used;
    c->used += size;
    return p;
}

void *kp_arena_alloc(kp_arena *arena, size_t size)
{
    void *p = bump(arena, size);
    if (p) memset(p, 0, size ? (size + 7) / 8 * 8 : 8);
    return p;
}

void *kp_arena_alloc_raw(kp_arena *arena, size_t size) { return bump(arena, size); }

char *kp_arena_strndup(kp_arena *arena, const char *s, size_t n)
{
    if (!s) return NULL;
    char *p = bump(arena, n + 1); /* every byte of the text is written: no clearing */
    if (p) { memcpy(p, s, n); p[n] = '\0'; }
    return p;
}

char *kp_arena_strdup(kp_arena *arena, const char *s)
{
    return s ? kp_arena_strndup(arena, s, strlen(s)) : NULL;
}

char *kp_digits(char *end, unsigned long long v, int is_negative)
{
    char *p = end;
    do { *--p = (char)('0' + v % 10); v /= 10; } while (v);
    if (is_negative) *--p = '-';
    return p;
}

/* What printf's "%.0f" (decimals 0) or "%.1f" (1) writes of v, into out; its length, or 0
 * where this could differ from printf (a value at a half, a negative that rounds to zero,
 * a large one, NaN): then printf decides. The whole: v rounded to nearest, ties to even,
 * as printf rounds the double's exact value. The tenths: from v * 10 where that product is
 * far from a half (its rounding error is under 1e-6 there, so the nearest tenth is printf's). */
static int fixed_decimals(double v, int decimals, char *out)
{
    double r = decimals ? v * 10 : v;
    if (!(fabs(r) < 1e15)) return 0;
    double low = floor(r), frac = r - low, units;
    if (decimals) {
        if (fabs(frac - 0.5) < 1e-6) return 0;
        units = low + (frac > 0.5);
    } else {
        units = frac == 0.5 ? (fmod(low, 2) == 0 ? low : low + 1) : floor(r + 0.5);
    }
    if (units == 0 && (v < 0 || signbit(v))) return 0;
    unsigned long long u = (unsigned long long)fabs(units);
    char digits[32], *end = digits + sizeof digits, *p = end;
    if (decimals) {
        *--p = (char)('0' + u % 10);
        *--p = '.';
        u /= 10;
    }
    p = kp_digits(p, u, units < 0);
    memcpy(out, p, (size_t)(end - p));
    return (int)(end - p);
}

int kp_vsnprintf(char *buf, size_t size, const char *fmt, va_list ap)
{
    /* one pass; a conversion it does not copy itself hands the whole format to vsnprintf,
     * from the arguments' start */
    va_list start;
    va_copy(start, ap);
    size_t n = 0;
#define PUT(s_, len_) do { size_t l_ = (len_); if (n < size) memcpy(buf + n, (s_), n + l_ < size ? l_ : size - n); n += l_; } while (0)
    for (const char *c = fmt;;) {
        const char *run = c;
        while (*c && *c != '%') c++;
        if (c > run) PUT(run, (size_t)(c - run));
        if (!*c) break;
        c++;
        if (*c == '%') { PUT("%", 1); c++; continue; }
        if (c[0] == '.' && (c[1] == '0' || c[1] == '1') && c[2] == 'f') {
            /* "%.0f", "%.1f": from the digits where printf's rounding is certain */
            char fixed[48];
            int len = fixed_decimals(va_arg(ap, double), c[1] - '0', fixed);
            if (len <= 0) {
                int r = vsnprintf(buf, size, fmt, start);
                va_end(start);
                return r;
            }
            PUT(fixed, (size_t)len);
            c += 3;
            continue;
        }
        int longs = 0, is_size = 0;
        if (*c == 'l') { longs = c[1] == 'l' ? 2 : 1; c += longs; }
        else if (*c == 'z') { is_size = 1; c++; }
        char conv = *c, num[24];
        int plain = conv == 'd' || conv == 'i' || conv == 'u' || ((conv == 's' || conv == 'c') && !longs && !is_size);
        if (!plain) {
            int r = vsnprintf(buf, size, fmt, start);
            va_end(start);
            return r;
        }
        c++;
        if (conv == 's') {
            const char *s = va_arg(ap, const char *);
            if (!s) s = "(null)";
            PUT(s, strlen(s));
        } else if (conv == 'c') {
            char ch = (char)va_arg(ap, int);
            PUT(&ch, 1);
        } else if (conv == 'u') {
            unsigned long long v = is_size ? va_arg(ap, size_t) : longs == 2 ? va_arg(ap, unsigned long long)
                                 : longs ? va_arg(ap, unsigned long) : va_arg(ap, unsigned);
            char *d = kp_digits(num + sizeof num, v, 0);
            PUT(d, (size_t)(num + sizeof num - d));
        } else {
            long long v = is_size ? (long long)va_arg(ap, ptrdiff_t) : longs == 2 ? va_arg(ap, long long)
                        : longs ? va_arg(ap, long) : va_arg(ap, int);
            unsigned long long mag = v < 0 ? 0ULL - (unsigned long long)v : (unsigned long long)v;
            char *d = kp_digits(num + sizeof num, mag, v < 0);
            PUT(d, (size_t)(num + sizeof num - d));
        }
    }
#undef PUT
    va_end(start);
    if (size) buf[n < size ? n : size - 1] = '\0';
    return (int)n;
}

int kp_snprintf(char *buf, size_t size, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = kp_vsnprintf(buf, size, fmt, ap);
    va_end(ap);
    return n;
}

char *kp_arena_vprintf(kp_arena *arena, const char *fmt, va_list ap)
{
    /* formatted once in the common case: straight into the current chunk's free space
     * (the bump is made only when it fits), else measured and formatted again */
    kp_arena_chunk *c = arena->head;
    va_list copy;
    if (c && c->size - c->used > 1) {
        char *at = (char *)c->data + c->used;
        size_t room = c->size - c->used;
        va_copy(copy, ap);
        int n = kp_vsnprintf(at, room, fmt, copy);
        va_end(copy);
        if (n < 0) return NULL;
        if ((size_t)n < room) {
            size_t used = ((size_t)n + 1 + 7) / 8 * 8;
            c->used += used <= room ? used : room;
            return at;
        }
    }
    va_copy(copy, ap);
    int n = kp_vsnprintf(NULL, 0, fmt, copy);
    va_end(copy);
    if (n < 0) return NULL;
    char *p = bump(arena, (size_t)n + 1);
    if (!p) return NULL;
    kp_vsnprintf(p, (size_t)n + 1, fmt, ap);
    return p;
}

char *kp_arena_printf(kp_arena *arena, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *p = kp_arena_vprintf(arena, fmt, ap);
    va_end(ap);
    return p;
}

void *kp_arena_push(kp_arena *arena, void **items, size_t *count, size_t *cap, size_t size)
{
    if (*count == *cap) {
        size_t grown = *cap ? *cap * 2 : 4;
        void *bigger = kp_arena_alloc(arena, grown * size);
        if (!bigger) return NULL;
        if (*count) memcpy(bigger, *items, *count * size);
        *items = bigger;
        *cap = grown;
    }
    void *slot = (char *)*items + (*count)++ * size;
    memset(slot, 0, size);
    return slot;
}

/* ---- index lists ------------------------------------------------------------------------- */

int kp_index_list_push(kp_index_list *list, size_t v)
{
    if (list->count && list->at[list->count - 1] == v) return 0;
    if (list->count == list->cap) {
        size_t cap = list->cap ? list->cap * 2 : 4;
        size_t *bigger = realloc(list->at, cap * sizeof *bigger);
        if (!bigger) return -1;
        list->at = bigger;
        list->cap = cap;
    }
    list->at[list->count++] = v;
    return 0;
}

void kp_index_list_free(kp_index_list *list)
{
    free(list->at);
    *list = (kp_index_list){0};
}

/* ---- string maps ------------------------------------------------------------------------- */

static size_t strmap_slot(const char *const *keys, size_t cap, const char *key)
{
    uint64_t h = 1469598103934665603ULL;
    for (const unsigned char *c = (const unsigned char *)key; *c; c++) { h ^= *c; h *= 1099511628211ULL; }
    size_t at = (size_t)h & (cap - 1);
    while (keys[at] && strcmp(keys[at], key) != 0) at = (at + 1) & (cap - 1);
    return at;
}

void *kp_strmap_get(const kp_strmap *map, const char *key)
{
    if (!map->cap) return NULL;
    size_t at = strmap_slot(map->keys, map->cap, key);
    return map->keys[at] ? map->values[at] : NULL;
}

int kp_strmap_put(kp_arena *arena, kp_strmap *map, const char *key, void *value)
{
    if ((map->count + 1) * 2 > map->cap) {
        size_t cap = map->cap ? map->cap * 2 : 64;
        const char **keys = kp_arena_alloc(arena, sizeof *keys * cap);
        void **values = kp_arena_alloc(arena, sizeof *values * cap);
        if (!keys || !values) return -1;
        for (size_t i = 0; i < map->cap; i++) {
            if (!map->keys[i]) continue;
            size_t at = strmap_slot(keys, cap, map->keys[i]);
            keys[at] = map->keys[i];
            values[at] = map->values[i];
        }
        map->keys = keys;
        map->values = values;
        map->cap = cap;
    }
    size_t at = strmap_slot(map->keys, map->cap, key);
    if (!map->keys[at]) map->count++;
    map->keys[at] = key;
    map->values[at] = value;
    return 0;
}

void *kp_arena_own(kp_arena *arena, void *block)
{
    if (!block) return NULL;
    kp_arena_owned *o = kp_arena_alloc(arena, sizeof *o);
    if (!o) { free(block); return NULL; }
    o->block = block;
    o->next = arena->owned;
    arena->owned = o;
    return block;
}

void kp_arena_free(kp_arena *arena)
{
    for (kp_arena_owned *o = arena->owned; o; o = o->next) free(o->block);
    arena->owned = NULL;
    kp_arena_chunk *c = arena->head;
    while (c) {
        kp_arena_chunk *next = c->next;
        free(c);
        c = next;
    }
    arena->head = NULL;
    arena->total = 0;
}
