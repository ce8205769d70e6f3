/*
 * export.h — the files `seed --export` writes for a database's own bulk loader: lines
 * appended to named files in one folder (gzip-compressed where the loader reads that),
 * opened on first use, all removed again when the export fails part-way, so a folder
 * never holds a partial export that a loader would take for a whole one.
 */
#ifndef KP_EXPORT_H
#define KP_EXPORT_H

#include <stddef.h>

#include "backends/backend.h"
#include "backends/emit.h"

typedef struct kp_export_files kp_export_files;

/* Makes dir (mkdir -p) and a writer into it; is_gzip compresses every data file. */
int kp_export_files_open(const char *dir, int is_gzip, kp_export_files **out, kp_error *err);
/* Appends `len` bytes and a newline to dir/name (folders in name are made). */
int kp_export_line(kp_export_files *x, const char *name, const char *line, size_t len, kp_error *err);
/* Writes dir/name whole, uncompressed (a README, a load script, a JSON input). */
int kp_export_write(kp_export_files *x, const char *name, const char *text, int is_script, kp_error *err);
/* The lines written to dir/name so far (0 when none). */
long kp_export_lines(const kp_export_files *x, const char *name);
/* Closes every file; when !is_ok (or a close fails) removes every file this writer made.
 * Frees x. */
int kp_export_files_close(kp_export_files *x, int is_ok, kp_error *err);

/* One CSV field as DSBulk and cqlsh COPY read it by default: quoted when it holds a
 * comma, quote, backslash, CR, LF or a leading or trailing space; inside quotes a quote
 * or a backslash is escaped with a backslash (their default escape character). */
void kp_csv_field(kp_text *t, const char *s);

#endif
