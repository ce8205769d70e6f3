/*
 * registry.c — the only place that names every database keyplan supports.
 *
 * Invariant: kp_backends lists each backend once, in the order reports show them.
 */
#include "backends/backend.h"

#include <stdio.h>
#include <string.h>

extern const kp_backend kp_dynamodb_backend;
extern const kp_backend kp_mongodb_backend;
extern const kp_backend kp_cassandra_backend;

const kp_backend *const kp_backends[] = {
    &kp_dynamodb_backend,
    &kp_mongodb_backend,
    &kp_cassandra_backend,
    NULL,
};

const kp_backend *kp_backend_find(const char *name)
{
    for (size_t i = 0; kp_backends[i]; i++)
        if (strcmp(kp_backends[i]->name, name) == 0) return kp_backends[i];
    return NULL;
}

const char *kp_backend_names(void)
{
    /* "dynamodb, mongodb, cassandra": built once from the list above, never written by hand */
    static char names[256];
    if (!names[0]) {
        size_t at = 0;
        for (size_t i = 0; kp_backends[i] && at < sizeof names; i++)
            at += (size_t)snprintf(names + at, sizeof names - at, "%s%s", i ? ", " : "", kp_backends[i]->name);
    }
    return names;
}

int kp_backend_parse_list(const char *text, const kp_backend **out, size_t max, kp_error *err)
{
    size_t n = 0;
    if (strcmp(text, "all") == 0) {
        for (size_t i = 0; kp_backends[i] && n + 1 < max; i++) out[n++] = kp_backends[i];
        out[n] = NULL;
        return 0;
    }
    char buf[256];
    snprintf(buf, sizeof buf, "%s", text);
    char *save = NULL;
    for (char *name = strtok_r(buf, ",", &save); name; name = strtok_r(NULL, ",", &save)) {
        const kp_backend *b = kp_backend_find(name);
        if (!b) {
            const char *names[16];
            size_t k = 0;
            for (size_t i = 0; kp_backends[i] && k < 15; i++) names[k++] = kp_backends[i]->name;
            names[k] = NULL;
            const char *guess = kp_suggest(name, names);
            if (guess) return kp_error_set(err, KP_ERR_USAGE, NULL, 0, 0, "--db: unknown database '%s' (did you mean '%s'?)", name, guess);
            return kp_error_set(err, KP_ERR_USAGE, NULL, 0, 0, "--db: unknown database '%s'; use one of %s, a comma list of them, or all",
                                name, kp_backend_names());
        }
        for (size_t i = 0; i < n; i++)
            if (out[i] == b) return kp_error_set(err, KP_ERR_USAGE, NULL, 0, 0, "--db names '%s' twice", name);
        if (n + 1 >= max) return kp_error_set(err, KP_ERR_USAGE, NULL, 0, 0, "--db names too many databases");
        out[n++] = b;
    }
    if (n == 0)
        return kp_error_set(err, KP_ERR_USAGE, NULL, 0, 0, "--db needs a database: one of %s, a comma list of them, or all",
                            kp_backend_names());
    out[n] = NULL;
    return 0;
}
