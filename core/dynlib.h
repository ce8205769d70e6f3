/*
 * dynlib.h — a database client library loaded when a command first talks to that
 * database, not at start-up: commands that need no server (check, advise, compare,
 * emit, generate) never pay for loading libmongoc or libcurl and what they pull in
 * (TLS, Kerberos, LDAP, ICU: ~40 shared libraries and libmongoc's own start-up).
 *
 * A backend lists the functions it calls (an X-macro), keeps them in a struct of
 * pointers and calls them through it; KP_DYNLIB_LOAD fills the struct once.
 * Invariant: a library that cannot be loaded is a clear error naming the Debian
 * package to install, never a crash.
 */
#ifndef KP_DYNLIB_H
#define KP_DYNLIB_H

#include <stddef.h>
#include <string.h>

#include "core/error.h"

typedef struct kp_dynlib {
    const char *const *sonames;  /* tried in order: "libmongoc-1.0.so.0", NULL */
    const char *needed_for;      /* "MongoDB commands" */
    const char *package;         /* the Debian package that ships it: "libmongoc-1.0-0" */
    void *handle;                /* once loaded */
    int state;                   /* 0 not tried, 1 loaded, -1 failed */
    char failure[512];           /* the message of a failed load, repeated to later callers */
} kp_dynlib;


/* For a backend's X-macro list of functions: a typed pointer field per function, and
 * its name for dlsym. */
#define KP_DYNLIB_FIELD(f) __typeof__(f) *f;
#define KP_DYNLIB_NAME(f) #f,

/* Loads `lib` into `api`, a struct of KP_DYNLIB_FIELD pointers named by `names[]`. */
#define KP_DYNLIB_LOAD(lib, api, names, err) \
    kp_dynlib_load_into(&(lib), (names), sizeof(names) / sizeof((names)[0]), &(api), sizeof(api), (err))

/* KP_DYNLIB_LOAD's work: opens lib once (thread-safe) and fills `api`, `count` function
 * pointers in the order of `names`. Returns 0, or -1 with err set (KP_ERR_TARGET) naming
 * the package to install; a failed load fails every later call the same way. */
int kp_dynlib_load_into(kp_dynlib *lib, const char *const *names, size_t count, void *api, size_t api_size, kp_error *err);

#endif
