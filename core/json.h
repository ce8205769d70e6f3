/*
 * json.h — JSON documents that remember where every value came from.
 *
 * cJSON builds the tree but keeps no positions and stores numbers as doubles. A
 * kp_json_doc adds what keyplan needs on top: the line and column of every value and
 * of every object key, the exact source text of every number, and rejection (with a
 * position) of what cJSON would accept silently: duplicate keys and invalid UTF-8.
 * Input size and the memory a parse may hold are bounded before cJSON allocates.
 */
#ifndef KP_JSON_H
#define KP_JSON_H

#include <stddef.h>
#include <cjson/cJSON.h>
#include <string.h>

#include "core/arena.h"

#include "core/error.h"

typedef struct kp_pos { int line, column; } kp_pos;

typedef struct kp_json_doc kp_json_doc;

typedef struct kp_json_limits {
    size_t max_bytes;       /* larger input is refused before it is read whole */
    int    max_depth;       /* deeper nesting is refused with its position */
    size_t memory_factor;   /* a parse holds at most factor x input bytes ... */
    size_t memory_floor;    /* ... or this many bytes, whichever is larger */
} kp_json_limits;

/* The limits for model files: 64 MiB, 256 levels, 10x the file with a 1 MiB floor. */
extern const kp_json_limits kp_json_model_limits;

/* Parses len bytes of text. `file` names the source in messages (NULL: "<input>").
 * On success *out is a document the caller frees with kp_json_free(). On failure
 * err says what and where (code KP_ERR_PARSE), and *out is NULL. */
int kp_json_parse(const char *file, const char *text, size_t len, const kp_json_limits *limits,
                  kp_json_doc **out, kp_error *err);

/* Reads and parses a file (refusing it before reading when it exceeds max_bytes). */
int kp_json_load_file(const char *path, const kp_json_limits *limits, kp_json_doc **out, kp_error *err);

void kp_json_free(kp_json_doc *doc);

/* Reads a whole file into a NUL-terminated malloc'd buffer (freed by the caller),
 * refusing it before reading when it is larger than max_bytes. */
int kp_file_read(const char *path, size_t max_bytes, char **out, size_t *len, kp_error *err);

cJSON *kp_json_root(const kp_json_doc *doc);
const char *kp_json_file(const kp_json_doc *doc);

/* Position of a node's value; {0,0} when the node is not from this document. */
kp_pos kp_json_pos(const kp_json_doc *doc, const cJSON *node);
/* Position of an object member's key; the value's position for other nodes. */
kp_pos kp_json_key_pos(const kp_json_doc *doc, const cJSON *node);
/* Exact source text of a number node (not NUL-terminated), or NULL for non-numbers. */
const char *kp_json_number_text(const kp_json_doc *doc, const cJSON *node, size_t *len);
/* Position of the value at an RFC 6901 JSON pointer ("" is the root); {0,0} if absent. */
kp_pos kp_json_pointer_pos(const kp_json_doc *doc, const char *pointer);

/* Fills err with code, the document's file and the node's position (its key's
 * position when at_key is non-zero), and the formatted message. Returns -1. */
int kp_json_error(const kp_json_doc *doc, const cJSON *node, int at_key, kp_error *err, int code,
                  const char *fmt, ...) __attribute__((format(printf, 6, 7)));

/* Checks that len bytes are well-formed UTF-8 (no overlongs, no surrogates, nothing
 * above U+10FFFF). Returns the offset of the first bad byte, or len when all is well. */
size_t kp_utf8_check(const char *text, size_t len);

/* Line and column (1-based, column counted in code points) of a byte offset. */
kp_pos kp_pos_of_offset(const char *text, size_t len, size_t offset);

/* The member of object named key (case-sensitive), or NULL: what
 * cJSON_GetObjectItemCaseSensitive returns, with the first byte compared before the
 * rest (the model's parse and the reports look members up a million times). */
static inline cJSON *kp_json_get(const cJSON *object, const char *key)
{
    if (!object || !key) return NULL;
    for (cJSON *c = object->child; c; c = c->next)
        if (c->string && c->string[0] == key[0] && strcmp(c->string, key) == 0) return c;
    return NULL;
}

/* An object member read for a report: its string ("" when absent or not a string) and
 * its number (0 when absent or not a number). */
const char *kp_json_str(const cJSON *object, const char *key);
double kp_json_num(const cJSON *object, const char *key);

/* A short printable rendering of a JSON value for messages ("\"abc\"", "42", "{...}"). */
void kp_json_describe(const cJSON *node, char *buf, size_t size);

/* The same text as cJSON_Print (tabs, "key":<tab>value, arrays on one line, numbers as
 * cJSON writes them), built in one growing buffer without cJSON's per-value reprinting.
 * Returns a malloc'd string the caller frees with free() or cJSON_free(), or NULL when
 * out of memory or when the tree holds a value cJSON cannot print (a raw value or
 * string that is NULL, an invalid type). */
char *kp_json_print(const cJSON *item);
/* The same bytes as `item` printed `depth` levels deep in a larger document (for a part
 * kept as text and placed there as a cJSON_Raw). */
char *kp_json_print_at(const cJSON *item, size_t depth);
/* The same bytes and a newline, written to f through a 64 KB buffer (a report of
 * megabytes is never held whole). Returns 0, or -1 when the tree cannot be printed, memory
 * ran out or the write failed (part of it may have been written). */
int kp_json_write(FILE *f, const cJSON *item);
/* The bytes of cJSON_PrintUnformatted, appended to the malloc'd text *data of *len bytes in
 * *cap allocated (a zeroed triple is empty; it grows with realloc, and stays NUL-terminated):
 * a row's key or a hash input written without an allocation per value. Returns 0, or -1
 * when memory ran out or the tree cannot be printed (then *len is unchanged). */
int kp_json_append_compact(char **data, size_t *len, size_t *cap, const cJSON *item);
/* The length of cJSON_PrintUnformatted's text of item, without writing it; -1 when the tree
 * cannot be printed. */
long kp_json_compact_size(const cJSON *item);

/* Until kp_json_arena_end, every cJSON allocation of this thread comes from `arena`
 * (and cJSON_Delete frees nothing): for a large tree that is built, printed and dropped
 * at once with the arena. A tree made inside the window is never passed to cJSON_Delete
 * after it, and nothing made inside it may outlive the arena. Windows do not nest. */
void kp_json_arena_begin(kp_arena *arena);
void kp_json_arena_end(void);
/* Opens a window on `arena` (NULL: closes it) inside whatever window is open, and returns
 * that one (NULL: none) to be swapped back when done: for a scratch tree made and dropped
 * in the middle of other work. */
kp_arena *kp_json_arena_swap(kp_arena *arena);

#endif
