/*
 * support.c — helpers shared by the unit tests.
 */
#include "support.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

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

kp_dataset *kp_test_order_lines(const kp_model *m, const char *lines)
{
    kp_dataset *data = NULL;
    kp_error err;
    if (kp_dataset_new(m, &data, &err)) fail_msg("%s", err.message);
    char line_json[4096] = "", product_json[4096] = "";
    size_t count = 0;
    for (const char *at = lines; *at;) {
        const char *colon = strchr(at, ':'), *comma = strchr(at, ',');
        if (!colon) break;
        if (!comma) comma = at + strlen(at);
        size_t lo = strlen(line_json), po = strlen(product_json);
        snprintf(line_json + lo, sizeof line_json - lo,
                 "{\"orderId\":\"o1\",\"sku\":\"%.*s\",\"qty\":1,\"price\":500,\"status\":\"%.*s\"}\n", (int)(colon - at), at,
                 (int)(comma - colon - 1), colon + 1);
        snprintf(product_json + po, sizeof product_json - po, "{\"sku\":\"%.*s\",\"name\":\"p\",\"price\":500,\"stock\":1}\n",
                 (int)(colon - at), at);
        count++;
        at = *comma ? comma + 1 : comma;
    }
    char order[512];
    snprintf(order, sizeof order,
             "{\"orderId\":\"o1\",\"userId\":\"u1\",\"status\":\"SHIPPED\",\"placedAt\":\"2025-08-12T05:21:00.000Z\","
             "\"day\":\"2025-08-12\",\"total\":1000,\"itemCount\":%zu}\n", count);
    const char *user = "{\"userId\":\"u1\",\"name\":\"A\",\"country\":\"KR\",\"createdAt\":\"2024-01-01T00:00:00.000Z\"}\n";
    const char *entities[] = {"User", "Order", "OrderItem", "Product"};
    const char *texts[] = {user, order, line_json, product_json};
    for (size_t i = 0; i < 4; i++)
        if (kp_dataset_add_ndjson(data, kp_model_entity(m, entities[i]), entities[i], texts[i], strlen(texts[i]), &err))
            fail_msg("%s", err.message);
    if (kp_dataset_finish(data, &err)) fail_msg("%s", err.message);
    return data;
}

const kp_design *kp_test_candidate(const kp_backend *backend, const kp_model *m, const char *candidate, kp_design_list *list)
{
    kp_error err;
    kp_propose_options o = {.all_candidates = 1};
    if (backend->propose(m, &o, list, &err)) fail_msg("propose failed: %s", err.message);
    for (size_t i = 0; i < list->count; i++)
        if (strcmp(list->items[i]->candidate, candidate) == 0) return list->items[i];
    fail_msg("no candidate named %s", candidate);
    return NULL;
}

kp_model *kp_test_edited_model(const char *path, const char *const *from, const char *const *to, size_t n)
{
    char *text = kp_test_read_file(path, NULL);
    if (!text) fail_msg("%s: cannot read", path);
    for (size_t i = 0; i < n; i++) {
        char *at = strstr(text, from[i]);
        if (!at) fail_msg("%s: no %s to replace", path, from[i]);
        size_t head = (size_t)(at - text);
        char *edited = malloc(strlen(text) - strlen(from[i]) + strlen(to[i]) + 1);
        if (!edited) fail_msg("out of memory");
        memcpy(edited, text, head);
        strcpy(edited + head, to[i]);
        strcat(edited, at + strlen(from[i]));
        free(text);
        text = edited;
    }
    kp_model *m = NULL;
    kp_error err;
    if (kp_model_parse(path, text, strlen(text), NULL, &m, &err)) fail_msg("%s: %s", path, err.message);
    free(text);
    return m;
}

double kp_test_touched(const kp_design *d, const char *write, const char *what)
{
    const kp_write_plan *wp = NULL;
    for (size_t i = 0; i < d->model->write_count && i < d->write_plan_count; i++)
        if (!strcmp(d->model->writes[i]->name, write)) wp = &d->write_plans[i];
    if (!wp) fail_msg("no write plan for %s", write);
    double count = 0;
    for (size_t i = 0; i < wp->touch_count; i++)
        if (strstr(wp->touches[i].what, what)) count += wp->touches[i].count;
    return count;
}
