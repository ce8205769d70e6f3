/*
 * emit.c — what every emitter shares: the per-database folder, atomic file writes,
 * and one JSON layout.
 *
 * Invariant: a file in the output folder is always whole — the old one or the new
 * one — because it is only ever replaced by rename() of a complete, flushed file in
 * the same directory; a failed run leaves no temporary file behind.
 */
#include "backends/emit.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/json.h"

static int io_error(kp_error *err, const char *what, const char *path)
{
    return kp_error_set(err, KP_ERR_IO, NULL, 0, 0, "cannot %s '%s': %s; choose an --out directory you can write to", what,
                        path, strerror(errno));
}

int kp_emit_make_directory(const char *path, kp_error *err)
{
    char tmp[4096];
    size_t n = strlen(path);
    if (n == 0 || n >= sizeof tmp) return kp_error_set(err, KP_ERR_IO, NULL, 0, 0, "the output directory name is empty or too long");
    memcpy(tmp, path, n + 1);
    for (size_t i = 1; i <= n; i++) {
        if (tmp[i] != '/' && tmp[i] != '\0') continue;
        char saved = tmp[i];
        tmp[i] = '\0';
        if (mkdir(tmp, 0777) != 0 && errno != EEXIST) return io_error(err, "create the directory", tmp);
        tmp[i] = saved;
    }
    struct stat st;
    if (stat(path, &st) != 0) return io_error(err, "create the directory", path);
    if (!S_ISDIR(st.st_mode)) {
        errno = ENOTDIR;
        return io_error(err, "write into", path);
    }
    return 0;
}

int kp_emit_write_file(const kp_emit_options *options, const char *dir, const char *name, const char *text, size_t len,
                       kp_error *err)
{
    char path[4096], folder[4096], tmp[4200];
    if (snprintf(path, sizeof path, "%s/%s", dir, name) >= (int)sizeof path)
        return kp_error_set(err, KP_ERR_IO, NULL, 0, 0, "the output path %s/%s is too long", dir, name);
    snprintf(folder, sizeof folder, "%s", path);
    char *slash = strrchr(folder, '/');
    *slash = '\0';
    if (kp_emit_make_directory(folder, err)) return -1;
    snprintf(tmp, sizeof tmp, "%s/.%s.XXXXXX", folder, slash + 1);
    int fd = mkstemp(tmp);
    if (fd < 0) return io_error(err, "create a file in", folder);
    size_t done = 0;
    while (done < len) {
        ssize_t w = write(fd, text + done, len - done);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) break;
        done += (size_t)w;
    }
    int saved = errno;
    if (done < len || fchmod(fd, 0644) != 0 || fsync(fd) != 0) {
        if (done < len) errno = saved;
        io_error(err, "write", path);
        close(fd);
        unlink(tmp);
        return -1;
    }
    if (close(fd) != 0) {
        io_error(err, "write", path);
        unlink(tmp);
        return -1;
    }
    if (rename(tmp, path) != 0) {
        io_error(err, "replace", path);
        unlink(tmp);
        return -1;
    }
    if (options && options->on_file) options->on_file(options->ctx, path);
    return 0;
}

int kp_emit_design(const kp_design *design, const char *dir, const kp_emit_options *options, kp_error *err)
{
    const kp_backend *b = design->backend;
    if (!b->emit)
        return kp_error_set(err, KP_ERR_USAGE, NULL, 0, 0,
                            "keyplan cannot emit %s files yet (this build has no %s emitter); `keyplan advise --db %s` "
                            "shows the design", b->title, b->title, b->name);
    char out[4096];
    if (snprintf(out, sizeof out, "%s/%s", dir, b->name) >= (int)sizeof out)
        return kp_error_set(err, KP_ERR_IO, NULL, 0, 0, "the output directory name %s is too long", dir);
    if (kp_emit_make_directory(out, err)) return -1;
    kp_emit_options none = {.prefix = ""};
    return b->emit(design, out, options ? options : &none, err);
}

/* ---- text ------------------------------------------------------------------------------- */

static int reserve(kp_text *t, size_t more)
{
    if (t->is_failed) return -1;
    if (t->len + more + 1 <= t->cap) return 0;
    size_t cap = t->cap ? t->cap : 256;
    while (cap < t->len + more + 1) cap *= 2;
    char *bigger = realloc(t->data, cap);
    if (!bigger) {
        t->is_failed = 1;
        return -1;
    }
    t->data = bigger;
    t->cap = cap;
    return 0;
}

void kp_text_append(kp_text *t, const char *s)
{
    size_t n = strlen(s);
    if (reserve(t, n)) return;
    memcpy(t->data + t->len, s, n + 1);
    t->len += n;
}

void kp_text_appendn(kp_text *t, const char *s, size_t n)
{
    if (reserve(t, n)) return;
    memcpy(t->data + t->len, s, n);
    t->len += n;
    t->data[t->len] = '\0';
}

void kp_text_repeat(kp_text *t, char c, size_t n)
{
    if (reserve(t, n)) return;
    memset(t->data + t->len, c, n);
    t->len += n;
    t->data[t->len] = '\0';
}

void kp_text_printf(kp_text *t, const char *fmt, ...)
{
    /* formatted once in the common case: straight into the room already there */
    if (t->is_failed || (!t->data && reserve(t, 0))) return;
    va_list ap;
    va_start(ap, fmt);
    int n = kp_vsnprintf(t->data + t->len, t->cap - t->len, fmt, ap);
    va_end(ap);
    if (n < 0) { t->data[t->len] = '\0'; return; }
    if ((size_t)n < t->cap - t->len) { t->len += (size_t)n; return; }
    t->data[t->len] = '\0';
    if (reserve(t, (size_t)n)) return;
    va_start(ap, fmt);
    kp_vsnprintf(t->data + t->len, (size_t)n + 1, fmt, ap);
    va_end(ap);
    t->len += (size_t)n;
}

void kp_text_free(kp_text *t)
{
    free(t->data);
    memset(t, 0, sizeof *t);
}

static void json_scalar(kp_text *t, const cJSON *j)
{
    /* a detached copy prints as a bare value, whatever its name in the parent */
    cJSON *copy = cJSON_Duplicate(j, 0);
    char *s = copy ? cJSON_PrintUnformatted(copy) : NULL;
    if (s) kp_text_append(t, s);
    else t->is_failed = 1;
    cJSON_free(s);
    cJSON_Delete(copy);
}

static void json_string(kp_text *t, const char *s)
{
    cJSON *str = cJSON_CreateString(s);
    json_scalar(t, str);
    cJSON_Delete(str);
}

static void json_value(kp_text *t, const cJSON *j, int depth)
{
    int is_object = cJSON_IsObject(j);
    if (!is_object && !cJSON_IsArray(j)) {
        json_scalar(t, j);
        return;
    }
    if (!j->child) {
        kp_text_append(t, is_object ? "{}" : "[]");
        return;
    }
    kp_text_append(t, is_object ? "{\n" : "[\n");
    for (const cJSON *c = j->child; c; c = c->next) {
        kp_text_printf(t, "%*s", (depth + 1) * 2, "");
        if (is_object) {
            json_string(t, c->string ? c->string : "");
            kp_text_append(t, ": ");
        }
        json_value(t, c, depth + 1);
        kp_text_append(t, c->next ? ",\n" : "\n");
    }
    kp_text_printf(t, "%*s%s", depth * 2, "", is_object ? "}" : "]");
}

void kp_text_json(kp_text *t, const cJSON *json)
{
    json_value(t, json, 0);
    kp_text_append(t, "\n");
}

void kp_text_json_compact(kp_text *t, const cJSON *json)
{
    if (!t->is_failed && kp_json_append_compact(&t->data, &t->len, &t->cap, json)) t->is_failed = 1;
}

int kp_emit_write_json(const kp_emit_options *options, const char *dir, const char *name, const cJSON *json, kp_error *err)
{
    kp_text t = {0};
    kp_text_json(&t, json);
    int rc = t.is_failed ? kp_error_set(err, KP_ERR_NOMEM, NULL, 0, 0, "out of memory")
                         : kp_emit_write_file(options, dir, name, t.data, t.len, err);
    kp_text_free(&t);
    return rc;
}
