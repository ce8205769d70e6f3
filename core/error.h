/*
 * error.h — the one error type every keyplan function fills.
 *
 * A function that can fail takes a kp_error * as its last argument, returns 0 on
 * success and -1 on failure, and on failure has filled the error completely: a code
 * that decides the exit status, the file/line/column the user must look at (when
 * there is a file), and a whole sentence that says what to fix.
 * Invariant: a message never contains a credential; callers pass values that may be
 * secret through kp_redact() before formatting them.
 */
#ifndef KP_ERROR_H
#define KP_ERROR_H

#include <stdio.h>

enum kp_error_code {
    KP_OK = 0,
    KP_ERR_USAGE,   /* bad command line                          -> exit 2 */
    KP_ERR_PARSE,   /* not JSON / not UTF-8 / too large          -> exit 2 */
    KP_ERR_MODEL,   /* JSON, but not a valid model               -> exit 2 */
    KP_ERR_DATA,    /* sample data does not fit the model        -> exit 2 */
    KP_ERR_IO,      /* a file could not be read or written       -> exit 2 */
    KP_ERR_CHECK,   /* a check failed (verify mismatch, --strict) -> exit 1 */
    KP_ERR_TARGET,  /* server unreachable or failing             -> exit 3 */
    KP_ERR_NOMEM,   /* out of memory                             -> exit 3 */
    KP_ERR_INTERNAL /* a bug in keyplan                          -> exit 3 */
};

/* Exit codes shared by every command (DESIGN.md "The command line"). */
enum { KP_EXIT_OK = 0, KP_EXIT_CHECK = 1, KP_EXIT_INPUT = 2, KP_EXIT_TARGET = 3 };

typedef struct kp_error {
    int  code;          /* enum kp_error_code */
    char file[256];     /* where the user must look; empty if none */
    int  line, column;  /* 1-based; 0 if unknown */
    char message[512];  /* a full sentence with the fix */
} kp_error;

/* Clears an error to "no error". */
void kp_error_clear(kp_error *err);

/* Fills err (file may be NULL; line/column 0 when unknown) and returns -1, so that
 * `return kp_error_set(...)` reads naturally. */
int kp_error_set(kp_error *err, int code, const char *file, int line, int column,
                 const char *fmt, ...) __attribute__((format(printf, 6, 7)));

/* The exit status a command returns for this error. */
int kp_error_exit_code(const kp_error *err);

/* Prints "file:line:col: error: message" (or "keyplan: error: message" without a
 * file) on the stream, the format compilers and editors understand. */
void kp_error_print(FILE *stream, const kp_error *err);

/* Appends "did you mean 'X'?" to buf when one of the candidates is close to word
 * (edit distance <= max(2, len/3)); buf is left unchanged otherwise. candidates is a
 * NULL-terminated array. Returns the closest candidate or NULL. */
const char *kp_suggest(const char *word, const char *const *candidates);

/* Edit distance (Damerau-Levenshtein, optimal string alignment), capped at 64. */
int kp_edit_distance(const char *a, const char *b);

#endif
