/*
 * arena.h — one allocation region per long-lived object (a model, a dataset).
 *
 * Everything allocated from an arena is freed at once by kp_arena_free; nothing in it
 * is freed individually. Invariant: allocations are zeroed and aligned for any type.
 */
#ifndef KP_ARENA_H
#define KP_ARENA_H

#include <stdarg.h>
#include <stddef.h>

typedef struct kp_arena_chunk kp_arena_chunk;
typedef struct kp_arena_owned kp_arena_owned;
typedef struct kp_arena {
    kp_arena_chunk *head;
    kp_arena_owned *owned;  /* malloc'd blocks kp_arena_own handed over, freed with the arena */
    size_t total;          /* bytes obtained from malloc, for memory accounting */
    size_t chunk_size;     /* bytes per chunk; 0 means 64 KiB */
    size_t limit;          /* refuse allocations that would take total past this; 0 = none */
} kp_arena;

/* Zeroed memory, or NULL when out of memory. */
void *kp_arena_alloc(kp_arena *arena, size_t size);
/* Memory as malloc gives it (not cleared), or NULL: for a caller that writes it all. */
void *kp_arena_alloc_raw(kp_arena *arena, size_t size);
/* Hands a malloc'd block to the arena, which frees it in kp_arena_free (a large text made
 * elsewhere joins the arena's lifetime without a copy). Returns block, or NULL (then block
 * is freed) when out of memory. */
void *kp_arena_own(kp_arena *arena, void *block);
/* A copy of s (NULL stays NULL). */
char *kp_arena_strdup(kp_arena *arena, const char *s);
char *kp_arena_strndup(kp_arena *arena, const char *s, size_t n);
/* vsnprintf's contract (at most size bytes with the NUL, returns the length the whole text
 * takes), with strings and integers (%s %d %i %u %c %%, with l, ll or z) copied without
 * libc's formatting engine; any other conversion, flag, width or precision goes to
 * vsnprintf as it is. */
int kp_vsnprintf(char *buf, size_t size, const char *fmt, va_list ap) __attribute__((format(printf, 3, 0)));
/* snprintf through kp_vsnprintf. */
int kp_snprintf(char *buf, size_t size, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* The decimal digits of v, with a '-' before them when is_negative, written backwards so
 * they end just before `end` (at most 21 bytes); returns where they start. */
char *kp_digits(char *end, unsigned long long v, int is_negative);

/* printf into the arena. */
char *kp_arena_printf(kp_arena *arena, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* The same with a va_list (left unused: the caller ends it). */
char *kp_arena_vprintf(kp_arena *arena, const char *fmt, va_list ap);
/* Grows an array of element size `size` held in *items with *count used and *cap
 * allocated, so one more fits; returns a pointer to the new (zeroed) last element. */
void *kp_arena_push(kp_arena *arena, void **items, size_t *count, size_t *cap, size_t size);
void kp_arena_free(kp_arena *arena);

/* A growing list of indexes (malloc'd; kp_index_list_free), for reverse look-ups built
 * in one pass. A zeroed list is empty. */
typedef struct kp_index_list {
    size_t *at;
    size_t count, cap;
} kp_index_list;

/* Appends v unless it is already the last value (lists built in ascending order then hold
 * each value once); -1 when out of memory. */
int kp_index_list_push(kp_index_list *list, size_t v);
void kp_index_list_free(kp_index_list *list);

/* A map from strings to pointers in an arena (open addressing, FNV-1a): for look-ups by
 * name that must stay constant-time on models of thousands of patterns or tables. Keys
 * are not copied (they must live as long as the map); values must not be NULL. A
 * zeroed kp_strmap is an empty map. */
typedef struct kp_strmap {
    const char **keys;
    void **values;
    size_t count, cap;
} kp_strmap;

/* The value stored under key, or NULL. */
void *kp_strmap_get(const kp_strmap *map, const char *key);
/* Stores value under key (replacing one stored before); -1 when out of memory. */
int kp_strmap_put(kp_arena *arena, kp_strmap *map, const char *key, void *value);

#endif
