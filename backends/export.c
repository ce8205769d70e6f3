/*
 * export.c — bulk-load files for `seed --export` (export.h).
 */
#include "backends/export.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

typedef struct export_file {
    char *name;        /* relative to the folder */
    char *path;
    FILE *f;           /* plain */
    gzFile gz;         /* compressed */
    long lines;
} export_file;

struct kp_export_files {
    char *dir;
    int is_gzip;
    export_file *files;
    size_t count, cap;
};

static int io_error(kp_error *err, const char *what, const char *path)
{
    return kp_error_set(err, KP_ERR_IO, path, 0, 0, "cannot %s: %s; check the folder exists, is writable and has room",
                        what, strerror(errno));
}

int kp_export_files_open(const char *dir, int is_gzip, kp_export_files **out, kp_error *err)
{
    *out = NULL;
    if (kp_emit_make_directory(dir, err)) return -1;
    kp_export_files *x = calloc(1, sizeof *x);
    if (!x || !(x->dir = strdup(dir))) { free(x); return kp_error_set(err, KP_ERR_NOMEM, NULL, 0, 0, "out of memory"); }
    x->is_gzip = is_gzip;
    *out = x;
    return 0;
}

static export_file *file_of(kp_export_files *x, const char *name, int compressed, kp_error *err)
{
    for (size_t i = 0; i < x->count; i++)
        if (strcmp(x->files[i].name, name) == 0) return &x->files[i];
    if (x->count == x->cap) {
        size_t cap = x->cap ? x->cap * 2 : 16;
        export_file *bigger = realloc(x->files, cap * sizeof *bigger);
        if (!bigger) { kp_error_set(err, KP_ERR_NOMEM, NULL, 0, 0, "out of memory"); return NULL; }
        x->files = bigger;
        x->cap = cap;
    }
    export_file *f = &x->files[x->count];
    memset(f, 0, sizeof *f);
    size_t n = strlen(x->dir) + strlen(name) + 2;
    f->name = strdup(name);
    f->path = malloc(n);
    if (!f->name || !f->path) {
        free(f->name);
        free(f->path);
        kp_error_set(err, KP_ERR_NOMEM, NULL, 0, 0, "out of memory");
        return NULL;
    }
    snprintf(f->path, n, "%s/%s", x->dir, name);
    char *slash = strrchr(f->path, '/');
    if (slash && slash > f->path + strlen(x->dir)) {
        *slash = '\0';
        int rc = kp_emit_make_directory(f->path, err);
        *slash = '/';
        if (rc) { free(f->name); free(f->path); return NULL; }
    }
    if (compressed) f->gz = gzopen(f->path, "wb6");
    else f->f = fopen(f->path, "wb");
    if (!f->gz && !f->f) {
        io_error(err, "write", f->path);
        free(f->name);
        free(f->path);
        return NULL;
    }
    x->count++;
    return f;
}

int kp_export_line(kp_export_files *x, const char *name, const char *line, size_t len, kp_error *err)
{
    export_file *f = file_of(x, name, x->is_gzip, err);
    if (!f) return -1;
    int ok;
    if (f->gz) ok = (len == 0 || gzwrite(f->gz, line, (unsigned)len) == (int)len) && gzputc(f->gz, '\n') == '\n';
    else ok = fwrite(line, 1, len, f->f) == len && fputc('\n', f->f) != EOF;
    if (!ok) return io_error(err, "write", f->path);
    f->lines++;
    return 0;
}

int kp_export_write(kp_export_files *x, const char *name, const char *text, int is_script, kp_error *err)
{
    export_file *f = file_of(x, name, 0, err);
    if (!f) return -1;
    size_t len = strlen(text);
    if (fwrite(text, 1, len, f->f) != len) return io_error(err, "write", f->path);
    if (is_script) chmod(f->path, 0755);
    return 0;
}

long kp_export_lines(const kp_export_files *x, const char *name)
{
    for (size_t i = 0; i < x->count; i++)
        if (strcmp(x->files[i].name, name) == 0) return x->files[i].lines;
    return 0;
}

int kp_export_files_close(kp_export_files *x, int is_ok, kp_error *err)
{
    if (!x) return 0;
    int rc = 0;
    for (size_t i = 0; i < x->count; i++) {
        export_file *f = &x->files[i];
        int bad = f->gz ? gzclose(f->gz) != Z_OK : fclose(f->f) != 0;
        if (bad && is_ok && rc == 0) rc = io_error(err, "write", f->path);
    }
    /* a partial export is removed, never left to be loaded */
    for (size_t i = 0; i < x->count; i++) {
        if (!is_ok || rc) unlink(x->files[i].path);
        free(x->files[i].name);
        free(x->files[i].path);
    }
    free(x->files);
    free(x->dir);
    free(x);
    return rc;
}

void kp_csv_field(kp_text *t, const char *s)
{
    size_t n = strlen(s);
    int quote = n && (s[0] == ' ' || s[n - 1] == ' ');
    for (size_t i = 0; i < n && !quote; i++) quote = s[i] == ',' || s[i] == '"' || s[i] == '\\' || s[i] == '\n' || s[i] == '\r';
    if (!quote) { kp_text_appendn(t, s, n); return; }
    kp_text_append(t, "\"");
    for (const char *p = s; *p; p++) {
        if (*p == '"' || *p == '\\') kp_text_append(t, "\\");
        kp_text_appendn(t, p, 1);
    }
    kp_text_append(t, "\"");
}
