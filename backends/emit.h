/*
 * emit.h — writing a design's files (`keyplan emit`): one folder per database, every
 * file replaced atomically, JSON laid out the same way by every emitter.
 */
#ifndef KP_EMIT_H
#define KP_EMIT_H

#include <stdarg.h>
#include <stddef.h>
#include <cjson/cJSON.h>

#include "backends/backend.h"

/* Writes the design's files into dir/<database>/ (both created when missing) through
 * its backend's emit. KP_ERR_USAGE when the backend has no emitter yet, KP_ERR_IO
 * naming the path that could not be written. Files already there that this run does
 * not write are left alone. */
int kp_emit_design(const kp_design *design, const char *dir, const kp_emit_options *options, kp_error *err);

/* mkdir -p; KP_ERR_IO when a part exists and is not a directory, or cannot be made. */
int kp_emit_make_directory(const char *path, kp_error *err);

/* Writes dir/name (name may hold '/': the folders are made) atomically: the text goes
 * to a temporary file next to it, is flushed to disk, then renamed over the old file,
 * so a reader sees the old file or the new one, never a part. Tells options->on_file. */
int kp_emit_write_file(const kp_emit_options *options, const char *dir, const char *name, const char *text, size_t len,
                       kp_error *err);

/* ---- text built in memory ------------------------------------------------------------- */

typedef struct kp_text {
    char *data;                 /* NUL-terminated; malloc'd */
    size_t len, cap;
    int is_failed;              /* an allocation failed: the text is incomplete */
} kp_text;

void kp_text_printf(kp_text *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void kp_text_append(kp_text *t, const char *s);
/* n bytes of s; c repeated n times. */
void kp_text_appendn(kp_text *t, const char *s, size_t n);
void kp_text_repeat(kp_text *t, char c, size_t n);
/* JSON with two-space indentation, members in tree order, a newline at the end: the
 * layout every emitted .json file has. */
void kp_text_json(kp_text *t, const cJSON *json);
/* json as cJSON_PrintUnformatted writes it (kp_json_append_compact), appended. */
void kp_text_json_compact(kp_text *t, const cJSON *json);
void kp_text_free(kp_text *t);

/* kp_text_json into dir/name. */
int kp_emit_write_json(const kp_emit_options *options, const char *dir, const char *name, const cJSON *json,
                       kp_error *err);

#endif
