/*
 * error.c — filling, printing and mapping kp_error, and "did you mean" suggestions.
 *
 * Invariant: kp_error_set always leaves a NUL-terminated message, truncating rather
 * than overflowing, and never reads past the caller's strings.
 */
#include "core/error.h"

#include <stdarg.h>
#include <string.h>

void kp_error_clear(kp_error *err)
{
    if (!err) return;
    memset(err, 0, sizeof *err);
}

int kp_error_set(kp_error *err, int code, const char *file, int line, int column,
                 const char *fmt, ...)
{
    if (!err) return -1;
    err->code = code;
    err->line = line;
    err->column = column;
    snprintf(err->file, sizeof err->file, "%s", file ? file : "");
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err->message, sizeof err->message, fmt, ap);
    va_end(ap);
    return -1;
}

int kp_error_exit_code(const kp_error *err)
{
    switch (err->code) {
    case KP_OK: return KP_EXIT_OK;
    case KP_ERR_CHECK: return KP_EXIT_CHECK;
    case KP_ERR_USAGE: case KP_ERR_PARSE: case KP_ERR_MODEL: case KP_ERR_DATA: case KP_ERR_IO:
        return KP_EXIT_INPUT;
    default: return KP_EXIT_TARGET;
    }
}

void kp_error_print(FILE *stream, const kp_error *err)
{
    if (err->file[0] && err->line > 0)
        fprintf(stream, "%s:%d:%d: error: %s\n", err->file, err->line, err->column > 0 ? err->column : 1,
                err->message);
    else if (err->file[0])
        fprintf(stream, "%s: error: %s\n", err->file, err->message);
    else
        fprintf(stream, "keyplan: error: %s\n", err->message);
}

int kp_edit_distance(const char *a, const char *b)
{
    enum { CAP = 64 };
    size_t la = strlen(a), lb = strlen(b);
    if (la >= CAP || lb >= CAP) return CAP;
    int d[CAP + 1][CAP + 1];
    for (size_t i = 0; i <= la; i++) d[i][0] = (int)i;
    for (size_t j = 0; j <= lb; j++) d[0][j] = (int)j;
    for (size_t i = 1; i <= la; i++) {
        for (size_t j = 1; j <= lb; j++) {
            int cost = a[i - 1] == b[j - 1] ? 0 : 1;
            int best = d[i - 1][j] + 1;
            if (d[i][j - 1] + 1 < best) best = d[i][j - 1] + 1;
            if (d[i - 1][j - 1] + cost < best) best = d[i - 1][j - 1] + cost;
            if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] && d[i - 2][j - 2] + 1 < best)
                best = d[i - 2][j - 2] + 1;
            d[i][j] = best;
        }
    }
    return d[la][lb];
}

const char *kp_suggest(const char *word, const char *const *candidates)
{
    const char *best = NULL;
    int best_distance = 1 << 20;
    size_t len = strlen(word);
    int limit = (int)(len / 3) > 2 ? (int)(len / 3) : 2;
    for (size_t i = 0; candidates && candidates[i]; i++) {
        int d = kp_edit_distance(word, candidates[i]);
        if (d < best_distance) { best_distance = d; best = candidates[i]; }
    }
    return best_distance <= limit ? best : NULL;
}
