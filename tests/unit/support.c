/*
 * support.c — helpers shared by the unit tests.
 */
#include "support.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

char *kp_test_read_file(const char *path, size_t *len)
{
    char full[4096];
    if (path[0] == '/') snprintf(full, sizeof full, "%s", path);
    else snprintf(full, sizeof full, "%s/%s", KP_SOURCE_DIR, path);
    FILE *f = fopen(full, "rb");
    if (!f) return NULL;
    size_t cap = 4096, n = 0;
    char *buf = malloc(cap);
    for (;;) {
        if (n + 1 >= cap) { cap *= 2; buf = realloc(buf, cap); }
        size_t got = fread(buf + n, 1, cap - n - 1, f);
        if (got == 0) break;
        n += got;
    }
    fclose(f);
    buf[n] = '\0';
    if (len) *len = n;
    return buf;
}

int kp_test_run(const char *args, char **output)
{
    char command[8192];
    snprintf(command, sizeof command, "cd '%s' && '%s' %s 2>&1", KP_SOURCE_DIR, KP_BINARY, args);
    FILE *p = popen(command, "r");
    if (!p) { *output = strdup(""); return -1; }
    size_t cap = 4096, n = 0;
    char *buf = malloc(cap);
    for (;;) {
        if (n + 1 >= cap) { cap *= 2; buf = realloc(buf, cap); }
        size_t got = fread(buf + n, 1, cap - n - 1, p);
        if (got == 0) break;
        n += got;
    }
    buf[n] = '\0';
    *output = buf;
    int status = pclose(p);
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

int kp_test_stale(void *ctx, const kp_record *record, const cJSON *next, kp_error *err)
{
    (void)ctx;
    char *was = cJSON_PrintUnformatted(record->object), *is = cJSON_PrintUnformatted(next);
    kp_error_set(err, KP_ERR_INTERNAL, NULL, 0, 0, "a %s record was left stale: %.200s, where its copies and aggregates "
                 "give %.200s", record->entity->name, was ? was : "?", is ? is : "?");
    cJSON_free(was);
    cJSON_free(is);
    return -1;
}
