/*
 * test_seed_verify.c — the seeding pipeline and verification (migrations/seed.c,
 * verify*.c, diff.c) against a FAKE in-memory backend.
 *
 * The fake below is a unit-test double: a table of items in memory that implements
 * kp_backend (one item per record, container = entity name), answers execute by
 * running the oracle over the items it holds, and can misbehave on demand (give up on
 * batches, corrupt a value, swap elements, add a page, cost more than claimed). It is
 * never used by integration tests, which always talk to a real server.
 * Data: tests/fixtures/oracle (32 records, answers known from test_oracle.c).
 */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "backends/backend.h"
#include "backends/write_effects.h"
#include "core/data.h"
#include "core/model.h"
#include "core/mutate.h"
#include "core/oracle.h"
#include "migrations/seed.h"
#include "migrations/verify.h"
#include "support.h"

#define FIXTURE KP_SOURCE_DIR "/tests/fixtures/oracle"

/* ==== the fake backend (unit-test double) ================================================ */

enum fake_mode { FAKE_OK, FAKE_CORRUPT, FAKE_SWAP, FAKE_EXTRA_PAGE, FAKE_EMPTY_EXTRA_PAGE, FAKE_COSTLY, FAKE_SHORT, FAKE_SHORT_CUT, FAKE_DROP_WRITES, FAKE_SERVER_GONE,
                 FAKE_READS_MORE, FAKE_WRITE_HALF };

typedef struct fake_item {
    char *id;
    char *container;
    cJSON *body;
    int puts;                   /* puts acknowledged through submit */
} fake_item;

struct kp_conn { int unused; };

static struct fake_store {
    const kp_model *model;
    int exists, is_foreign;
    cJSON *marker;
    cJSON *shard_markers;       /* seed --shard: "I/N" -> that shard's own marker */
    fake_item *items;
    size_t count, cap;
    uint64_t generation;        /* bumps on every change (the execute cache checks it) */
    kp_dataset *cache;
    uint64_t cache_generation;
    kp_item_list pending, failing;
    kp_ack_fn on_ack;
    void *ack_ctx;
    int batches;                /* submits so far */
    int fail_after_batches;     /* -1: never; else batches after this many are given up on */
    size_t max_item_bytes;      /* 0: no limit */
    int connects, drops, marker_writes, schemas;
    int gone_after_requests;    /* FAKE_SERVER_GONE: the pattern's requests so far */
    enum fake_mode mode;
    const char *mode_pattern;
    int writes_applied;         /* apply_write calls */
    int transforms;             /* transform calls */
    cJSON *first_pages;         /* when not NULL: "writes_applied pattern params" of every first page asked */
    struct kp_conn conn;
} S;

static void fake_reset(const kp_model *model)
{
    for (size_t i = 0; i < S.count; i++) {
        free(S.items[i].id);
        free(S.items[i].container);
        cJSON_Delete(S.items[i].body);
    }
    free(S.items);
    cJSON_Delete(S.marker);
    cJSON_Delete(S.shard_markers);
    kp_dataset_free(S.cache);
    kp_item_list_free(&S.pending);
    kp_item_list_free(&S.failing);
    cJSON_Delete(S.first_pages);
    memset(&S, 0, sizeof S);
    S.model = model;
    S.fail_after_batches = -1;
}

static fake_item *fake_find(const char *id)
{
    for (size_t i = 0; i < S.count; i++)
        if (strcmp(S.items[i].id, id) == 0) return &S.items[i];
    return NULL;
}

static fake_item *fake_put(const char *id, const char *container, const cJSON *body)
{
    fake_item *it = fake_find(id);
    if (!it) {
        if (S.count == S.cap) {
            S.cap = S.cap ? S.cap * 2 : 64;
            S.items = realloc(S.items, S.cap * sizeof *S.items);
        }
        it = &S.items[S.count++];
        memset(it, 0, sizeof *it);
        it->id = strdup(id);
        it->container = strdup(container);
    }
    cJSON_Delete(it->body);
    it->body = cJSON_Duplicate(body, 1);
    S.generation++;
    return it;
}

static void fake_delete(const char *id)
{
    fake_item *it = fake_find(id);
    if (!it) return;
    free(it->id);
    free(it->container);
    cJSON_Delete(it->body);
    *it = S.items[--S.count];
    S.generation++;
}

static const kp_limits fake_limits = {.max_item_bytes = 4096, .max_batch_write = 5, .write_unit = "WU"};

static int fake_transform(const kp_design *d, const kp_dataset *data, const kp_record *rec, kp_item_list *out,
                          kp_error *err)
{
    char id[256];
    S.transforms++;
    size_t o = (size_t)snprintf(id, sizeof id, "%s", rec->entity->name);
    for (size_t k = 0; k < rec->entity->key_count; k++) {
        const cJSON *v = kp_record_get(rec, rec->entity->key[k]);
        char *text = cJSON_PrintUnformatted(v);
        o += (size_t)snprintf(id + o, sizeof id - o, "#%s", text);
        free(text);
    }
    char *text = cJSON_PrintUnformatted(rec->object);
    size_t bytes = strlen(text);
    free(text);
    if (S.max_item_bytes && bytes > S.max_item_bytes)
        return kp_error_set(err, KP_ERR_DATA, NULL, 0, 0, "this %s record makes an item of %zu bytes, above the "
                            "fake's %zu", rec->entity->name, bytes, S.max_item_bytes);
    kp_item *it = kp_item_list_push(out);
    it->container = rec->entity->name;
    it->entity = rec->entity;
    it->body = kp_data_copy(rec->object, NULL);
    it->id = strdup(id);
    it->bytes = bytes;
    return 0;
}

static int fake_connect(const kp_target *t, kp_conn **out, kp_error *err)
{
    S.connects++;
    *out = &S.conn;
    return 0;
}

static int fake_inspect(kp_conn *c, const kp_design *d, kp_target_state *out, kp_error *err)
{
    memset(out, 0, sizeof *out);
    out->exists = S.exists;
    out->is_empty = S.count == 0;
    out->is_foreign = S.is_foreign;
    out->marker = S.marker ? cJSON_Duplicate(S.marker, 1) : NULL;
    return 0;
}

static int fake_apply_schema(kp_conn *c, const kp_design *d, kp_error *err)
{
    S.schemas++;
    S.exists = 1;
    return 0;
}

static int fake_drop(kp_conn *c, const kp_design *d, kp_error *err)
{
    S.drops++;
    while (S.count) fake_delete(S.items[0].id);
    cJSON_Delete(S.marker);
    cJSON_Delete(S.shard_markers);
    S.marker = S.shard_markers = NULL;
    S.exists = S.is_foreign = 0;
    return 0;
}

static int fake_write_marker(kp_conn *c, const kp_design *d, const cJSON *marker, kp_error *err)
{
    const cJSON *shard = cJSON_GetObjectItemCaseSensitive(marker, "shard");
    if (cJSON_IsString(shard)) {
        if (!S.shard_markers) S.shard_markers = cJSON_CreateObject();
        cJSON_DeleteItemFromObjectCaseSensitive(S.shard_markers, shard->valuestring);
        cJSON_AddItemToObject(S.shard_markers, shard->valuestring, cJSON_Duplicate(marker, 1));
        S.marker_writes++;
        return 0;
    }
    cJSON_Delete(S.marker);
    S.marker = cJSON_Duplicate(marker, 1);
    S.marker_writes++;
    return 0;
}

static int fake_read_marker(kp_conn *c, const kp_design *d, const char *shard, cJSON **out, kp_error *err)
{
    const cJSON *m = shard ? cJSON_GetObjectItemCaseSensitive(S.shard_markers, shard) : S.marker;
    *out = m ? cJSON_Duplicate(m, 1) : NULL;
    return 0;
}

static int fake_submit(kp_conn *c, kp_item_list *batch, kp_ack_fn on_ack, void *ctx, kp_error *err)
{
    int gives_up = S.fail_after_batches >= 0 && S.batches >= S.fail_after_batches;
    S.batches++;
    S.on_ack = on_ack;
    S.ack_ctx = ctx;
    kp_item_list *into = gives_up ? &S.failing : &S.pending;
    for (size_t i = 0; i < batch->count; i++) *kp_item_list_push(into) = batch->items[i];
    batch->count = 0; /* taken */
    return 0;
}

/* Acks everything in flight, newest first (acks may come in any order). */
static int fake_poll(kp_conn *c, int timeout_ms, kp_error *err)
{
    for (size_t i = S.pending.count; i-- > 0;) {
        kp_item *it = &S.pending.items[i];
        fake_put(it->id, it->container, it->body)->puts++;
        S.on_ack(S.ack_ctx, it, 1, NULL);
    }
    kp_item_list_clear(&S.pending);
    kp_error gave_up;
    kp_error_set(&gave_up, KP_ERR_TARGET, NULL, 0, 0, "throttled too often, gave up");
    for (size_t i = 0; i < S.failing.count; i++) S.on_ack(S.ack_ctx, &S.failing.items[i], 0, &gave_up);
    kp_item_list_clear(&S.failing);
    return 0;
}

/* The neutral data the fake holds, rebuilt when the items changed. */
static kp_dataset *fake_data(kp_error *err)
{
    if (S.cache && S.cache_generation == S.generation) return S.cache;
    kp_dataset_free(S.cache);
    S.cache = NULL;
    kp_dataset *ds;
    if (kp_dataset_new(S.model, &ds, err)) return NULL;
    for (size_t e = 0; e < S.model->entity_count; e++) {
        const kp_entity *entity = S.model->entities[e];
        size_t cap = 256, len = 0;
        char *text = calloc(1, cap);
        for (size_t i = 0; i < S.count; i++) {
            if (strcmp(S.items[i].container, entity->name) != 0) continue;
            char *line = cJSON_PrintUnformatted(S.items[i].body);
            size_t l = strlen(line);
            while (len + l + 2 > cap) { cap *= 2; text = realloc(text, cap); }
            memcpy(text + len, line, l);
            len += l;
            text[len++] = '\n';
            free(line);
        }
        int rc = kp_dataset_add_ndjson(ds, entity, entity->name, text, len, err);
        free(text);
        if (rc) { kp_dataset_free(ds); return NULL; }
    }
    if (kp_dataset_finish(ds, err)) { kp_dataset_free(ds); return NULL; }
    S.cache = ds;
    S.cache_generation = S.generation;
    return ds;
}

static cJSON *member(cJSON *o, const char *name) { return cJSON_GetObjectItemCaseSensitive(o, name); }

static int fake_execute_alone(kp_conn *c, const kp_design *d, const kp_pattern *p, const kp_params *params,
                              const char *page, kp_result *out, kp_error *err)
{
    memset(out, 0, sizeof *out);
    kp_dataset *ds = fake_data(err);
    if (!ds) return -1;
    if (S.first_pages && !page) {
        cJSON *json = kp_params_to_json(params);
        char *text = cJSON_PrintUnformatted(json);
        char line[1024];
        snprintf(line, sizeof line, "%d %s %s", S.writes_applied, p->name, text);
        cJSON_AddItemToArray(S.first_pages, cJSON_CreateString(line));
        free(text);
        cJSON_Delete(json);
    }
    int is_mode = S.mode != FAKE_OK && S.mode_pattern && strcmp(S.mode_pattern, p->name) == 0;
    /* the server goes away on the third request of the pattern: verify must stop */
    if (is_mode && S.mode == FAKE_SERVER_GONE && ++S.gone_after_requests > 2)
        return kp_error_set(err, KP_ERR_TARGET, NULL, 0, 0, "connection refused (the fake server is gone)");
    out->requests = 1;
    out->sequential_steps = 1;
    out->items_read = out->bytes_read = -1;
    if (page && strcmp(page, "fake:extra") == 0) {
        /* the page after the last one: empty, or (misbehaving) the first page again */
        kp_oracle_result first;
        if (kp_oracle_run(ds, p, params, NULL, &first, err)) return -1;
        out->response = first.response;
        first.response = NULL;
        kp_oracle_result_free(&first);
        if (S.mode == FAKE_EMPTY_EXTRA_PAGE) {
            cJSON_ReplaceItemInObjectCaseSensitive(out->response, "orders", cJSON_CreateArray());
            out->next_page = strdup("fake:extra"); /* empty with a continuation: ends the traversal */
        }
        return 0;
    }
    kp_oracle_result r;
    if (kp_oracle_run(ds, p, params, page ? page + 5 : NULL, &r, err)) return -1;
    out->response = r.response;
    r.response = NULL;
    if (r.next_token) {
        size_t n = strlen(r.next_token) + 6;
        out->next_page = malloc(n);
        snprintf(out->next_page, n, "fake:%s", r.next_token);
        /* the response carries the fake's own token, not the oracle's */
        cJSON *next = cJSON_IsObject(out->response) ? member(out->response, "next") : NULL;
        if (cJSON_IsString(next)) cJSON_ReplaceItemInObjectCaseSensitive(out->response, "next", cJSON_CreateString(out->next_page));
    }
    kp_oracle_result_free(&r);
    cJSON *orders = cJSON_IsObject(out->response) ? member(out->response, "orders") : NULL;
    if (is_mode && S.mode == FAKE_CORRUPT && cJSON_GetArraySize(orders) >= 2)
        cJSON_ReplaceItemInObjectCaseSensitive(cJSON_GetArrayItem(orders, 1), "total", cJSON_CreateRaw("0.01"));
    if (is_mode && S.mode == FAKE_SWAP && cJSON_GetArraySize(orders) >= 2) {
        cJSON *first = cJSON_DetachItemFromArray(orders, 0);
        cJSON_InsertItemInArray(orders, 1, first);
    }
    if (is_mode && (S.mode == FAKE_EXTRA_PAGE || S.mode == FAKE_EMPTY_EXTRA_PAGE) && !out->next_page &&
        cJSON_GetArraySize(orders) > 0)
        out->next_page = strdup("fake:extra");
    if (is_mode && S.mode == FAKE_COSTLY) { out->requests = 2; out->sequential_steps = 2; }
    /* fewer round trips than claimed: because the records led nowhere, or not */
    if (is_mode && (S.mode == FAKE_SHORT || S.mode == FAKE_SHORT_CUT)) {
        out->sequential_steps = 0;
        out->is_cut_short = S.mode == FAKE_SHORT_CUT;
    }
    out->items_returned = orders ? cJSON_GetArraySize(orders) : 1;
    /* what the fake server read: the items it returned, 200 bytes each; misbehaving, a
     * whole partition of 500 items filtered in the client */
    out->items_read = is_mode && S.mode == FAKE_READS_MORE ? 500 : out->items_returned;
    out->bytes_read = out->items_read * 200;
    return 0;
}

/* verify's workers call execute at once on their connections: the fake serves one at a time */
static int fake_execute(kp_conn *c, const kp_design *d, const kp_pattern *p, const kp_params *params, const char *page,
                        kp_result *out, kp_error *err)
{
    static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
    pthread_mutex_lock(&lock);
    int rc = fake_execute_alone(c, d, p, params, page, out, err);
    pthread_mutex_unlock(&lock);
    return rc;
}

/* The target becomes exactly the items of `after` (a correct write, whatever it was). */
static int fake_apply_write(kp_conn *c, const kp_design *d, const kp_dataset *before, const kp_dataset *after,
                            const void *request, const kp_change *changes, size_t change_count, kp_write_sent *out,
                            kp_error *err)
{
    memset(out, 0, sizeof *out);
    S.writes_applied++;
    if (S.mode == FAKE_DROP_WRITES) return 0; /* misbehaving: says yes, does nothing */
    kp_item_list items = {0};
    char **keep = NULL;
    size_t keep_count = 0;
    for (size_t e = 0; e < S.model->entity_count; e++) {
        size_t n = 0;
        kp_record *const *records = kp_dataset_records(after, S.model->entities[e], &n);
        for (size_t i = 0; i < n; i++) {
            kp_item_list_clear(&items);
            if (fake_transform(d, after, records[i], &items, err)) return -1;
            fake_item *it = fake_find(items.items[0].id);
            if (!it || !kp_data_equal(it->body, items.items[0].body, NULL)) {
                fake_put(items.items[0].id, items.items[0].container, items.items[0].body);
                out->items++;
                if (S.mode == FAKE_WRITE_HALF && request) {
                    /* misbehaving: one item in, then the request fails (the rest never sent) */
                    kp_item_list_free(&items);
                    for (size_t k = 0; k < keep_count; k++) free(keep[k]);
                    free(keep);
                    return kp_error_set(err, KP_ERR_CHECK, NULL, 0, 0, "the server refused the rest of the write");
                }
            }
            keep = realloc(keep, (keep_count + 1) * sizeof *keep);
            keep[keep_count++] = strdup(items.items[0].id);
        }
    }
    kp_item_list_free(&items);
    for (size_t i = 0; i < S.count;) {
        int kept = 0;
        for (size_t k = 0; k < keep_count && !kept; k++) kept = strcmp(keep[k], S.items[i].id) == 0;
        if (kept) i++;
        else {
            fake_delete(S.items[i].id);
            out->items++;
        }
    }
    for (size_t k = 0; k < keep_count; k++) free(keep[k]);
    free(keep);
    out->requests = 1;
    out->is_atomic = request && ((const kp_write_request *)request)->write->is_atomic;
    return 0;
}

static int fake_read_back(kp_conn *c, const kp_design *d, kp_readback *out, kp_error *err)
{
    memset(out, 0, sizeof *out);
    for (size_t i = 0; i < S.count; i++) {
        kp_readback_entry *e = NULL;
        for (size_t k = 0; k < out->count && !e; k++)
            if (strcmp(out->entries[k].container, S.items[i].container) == 0) e = &out->entries[k];
        if (!e) {
            out->entries = realloc(out->entries, (out->count + 1) * sizeof *out->entries);
            e = &out->entries[out->count++];
            memset(e, 0, sizeof *e);
            e->container = strdup(S.items[i].container);
        }
        e->items++;
        e->checksum ^= kp_item_hash(S.items[i].body);
    }
    return 0;
}

static double fake_write_units(const kp_design *d, const kp_item *item) { return (double)((item->bytes + 1023) / 1024); }

static int fake_delete_items(kp_conn *c, const kp_design *d, const kp_item_list *items, kp_error *err)
{
    for (size_t i = 0; i < items->count; i++) fake_delete(items->items[i].id);
    return 0;
}

static void fake_disconnect(kp_conn *c) {}

static const kp_backend fake_backend = {
    .name = "fake",
    .title = "Fake (unit tests)",
    .limits = &fake_limits,
    .transform = fake_transform,
    .connect = fake_connect,
    .inspect = fake_inspect,
    .apply_schema = fake_apply_schema,
    .drop = fake_drop,
    .write_marker = fake_write_marker,
    .read_marker = fake_read_marker,
    .submit = fake_submit,
    .poll = fake_poll,
    .execute = fake_execute,
    .apply_write = fake_apply_write,
    .read_back = fake_read_back,
    .item_checksum = kp_item_hash,
    .disconnect = fake_disconnect,
    .item_write_units = fake_write_units,
    .delete_items = fake_delete_items,
};

static kp_design *fake_design(const kp_model *model)
{
    kp_design *d = kp_design_new(&fake_backend, model, NULL, "fake-layout");
    for (size_t e = 0; e < model->entity_count; e++) kp_design_add_container(d, model->entities[e]->name, "table");
    for (size_t i = 0; i < d->plan_count; i++) {
        kp_plan *plan = &d->plans[i];
        plan->requests = 1;
        plan->sequential_steps = 1;
        /* a page of the fixture returns at most 50 items of 200 bytes */
        plan->items = 10;
        plan->bytes = 2000;
        plan->items_max = 50;
        plan->bytes_max = 10000;
    }
    /* a write writes one item per record it changes, in one request (fake_apply_write) */
    for (size_t w = 0; w < d->write_plan_count; w++) {
        for (size_t e = 0; e < model->entity_count; e++) {
            kp_write_effect fx = {.kind = KP_EFFECT_RECORDS, .entity = model->entities[e], .count = 1};
            kp_write_plan_items(d, &d->write_plans[w], &fx, 1);
        }
        kp_write_plan_requests(d, &d->write_plans[w], NULL, 1);
    }
    return d;
}

/* ==== fixtures ================================================================================= */

typedef struct fixture {
    kp_model *model;
    kp_dataset *data;
    kp_design *design;
    kp_target target;
} fixture;

static int setup(void **state)
{
    fixture *f = calloc(1, sizeof *f);
    kp_error err;
    kp_model_options options = {.scale = 1};
    if (kp_model_load(FIXTURE "/model.json", &options, &f->model, &err) ||
        kp_dataset_load(f->model, FIXTURE "/data", &f->data, &err)) {
        kp_error_print(stderr, &err);
        return -1;
    }
    f->design = fake_design(f->model);
    f->target = (kp_target){.database = "fake", .prefix = ""};
    fake_reset(f->model);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fixture *f = *state;
    fake_reset(NULL);
    kp_design_free(f->design);
    kp_dataset_free(f->data);
    kp_model_free(f->model);
    free(f);
    return 0;
}

static kp_seed_options seed_options(fixture *f)
{
    return (kp_seed_options){.model = f->model, .data = f->data, .data_dir = "tests/fixtures/oracle/data",
                             .design = f->design, .target = &f->target, .checkpoint_seconds = -1};
}

static kp_verify_options verify_options(fixture *f)
{
    return (kp_verify_options){.model = f->model, .data = f->data, .design = f->design, .target = &f->target,
                               .seed = 7, .samples = 20};
}

static long total_records(fixture *f)
{
    long n = 0;
    for (size_t e = 0; e < f->model->entity_count; e++) n += (long)kp_dataset_count(f->data, f->model->entities[e]);
    return n;
}

static void seed_ok(fixture *f)
{
    kp_seed_options o = seed_options(f);
    kp_seed_report r;
    kp_error err;
    if (kp_seed_run(&o, &r, &err)) fail_msg("seed: %s", err.message);
    kp_seed_report_free(&r);
}

static const char *marker_status(void)
{
    const cJSON *s = cJSON_GetObjectItemCaseSensitive(S.marker, "status");
    return cJSON_IsString(s) ? s->valuestring : "(none)";
}

static long marker_acknowledged(void)
{
    long n = 0;
    const cJSON *ack = cJSON_GetObjectItemCaseSensitive(S.marker, "acknowledged");
    for (const cJSON *c = ack ? ack->child : NULL; c; c = c->next) n += (long)c->valuedouble;
    return n;
}

/* ==== seeding ================================================================================== */

static void test_seed_writes_every_item_once_and_reads_back_equal(void **state)
{
    fixture *f = *state;
    kp_seed_options o = seed_options(f);
    kp_seed_report r;
    kp_error err;
    assert_int_equal(kp_seed_run(&o, &r, &err), 0);
    long n = total_records(f);
    assert_int_equal(n, 32);
    /* every record transformed once: the writes take the pre-scan's items */
    assert_int_equal(S.transforms, n);
    assert_int_equal(r.action, KP_SEED_FRESH);
    assert_int_equal(r.records, n);
    assert_int_equal(r.records_read, n);
    assert_int_equal(r.items, n);
    assert_int_equal(r.items_sent, n);
    assert_int_equal(r.items_acknowledged, n);
    assert_int_equal(r.items_read_back, n);
    assert_int_equal(r.batches, (n + 4) / 5);
    assert_true(r.is_complete);
    assert_int_equal(S.count, (size_t)n);
    for (size_t i = 0; i < S.count; i++) assert_int_equal(S.items[i].puts, 1);
    for (size_t i = 0; i < r.container_count; i++) {
        assert_int_equal(r.containers[i].read_back, r.containers[i].items);
        assert_int_equal(r.containers[i].acknowledged, r.containers[i].items);
    }
    assert_string_equal(marker_status(), "complete");
    assert_int_equal(marker_acknowledged(), n);
    char hash[17];
    assert_int_equal(kp_seed_data_hash(f->data, hash, &err), 0);
    assert_string_equal(cJSON_GetObjectItemCaseSensitive(S.marker, "data_hash")->valuestring, hash);
    kp_seed_report_free(&r);

    /* the same command again: nothing to write */
    assert_int_equal(kp_seed_run(&o, &r, &err), 0);
    assert_int_equal(r.action, KP_SEED_ALREADY_DONE);
    assert_int_equal(r.items_sent, 0);
    for (size_t i = 0; i < S.count; i++) assert_int_equal(S.items[i].puts, 1);
    kp_seed_report_free(&r);
}

/* Past the budget of kept items, the writes transform the rest again: the same items, each
 * written once and read back equal. */
static void test_seed_transforms_again_what_the_pre_scan_could_not_keep(void **state)
{
    fixture *f = *state;
    kp_seed_options o = seed_options(f);
    o.kept_bytes = 2000;
    kp_seed_report r;
    kp_error err;
    assert_int_equal(kp_seed_run(&o, &r, &err), 0);
    long n = total_records(f);
    assert_true(S.transforms > n);
    assert_true(S.transforms < 2 * n);
    assert_int_equal(r.items_acknowledged, n);
    assert_int_equal(r.items_read_back, n);
    assert_true(r.is_complete);
    assert_int_equal(S.count, (size_t)n);
    for (size_t i = 0; i < S.count; i++) assert_int_equal(S.items[i].puts, 1);
    kp_seed_report_free(&r);
}

static void test_seed_resumes_after_interruption_without_duplicates(void **state)
{
    fixture *f = *state;
    kp_seed_options o = seed_options(f);
    kp_seed_report r;
    kp_error err;
    S.fail_after_batches = 3; /* 3 batches of 5 are acknowledged, the 4th is given up on */
    assert_int_equal(kp_seed_run(&o, &r, &err), -1);
    assert_int_equal(err.code, KP_ERR_TARGET);
    assert_non_null(strstr(err.message, "rerun the same command to resume"));
    assert_int_equal(r.items_acknowledged, 15);
    assert_true(r.items_failed > 0);
    kp_seed_report_free(&r);
    assert_string_equal(marker_status(), "seeding");
    assert_int_equal(marker_acknowledged(), 15);
    assert_int_equal(S.count, 15);

    S.fail_after_batches = -1;
    assert_int_equal(kp_seed_run(&o, &r, &err), 0);
    long n = total_records(f);
    assert_int_equal(r.action, KP_SEED_RESUMED);
    assert_int_equal(r.records_skipped, 15);
    assert_int_equal(r.items_resumed, 15);
    assert_int_equal(r.items_sent, n - 15);
    assert_int_equal(r.items_acknowledged, n - 15);
    assert_int_equal(r.items_read_back, n);
    assert_int_equal(S.count, (size_t)n);
    for (size_t i = 0; i < S.count; i++) {
        if (S.items[i].puts != 1) fail_msg("item %s was written %d times", S.items[i].id, S.items[i].puts);
    }
    assert_string_equal(marker_status(), "complete");
    kp_seed_report_free(&r);
}

/* seed --shard I/N (seed.h, "Shards"): three shards one after the other write every item
 * once between them; the seed marker says complete only after the last, which reads the
 * whole target back; the others leave their part complete in their own marker. */
static void test_shards_split_one_seed_and_the_last_completes_it(void **state)
{
    fixture *f = *state;
    long n = total_records(f), sent = 0;
    for (int i = 1; i <= 3; i++) {
        kp_seed_options o = seed_options(f);
        o.shard_index = i;
        o.shard_count = 3;
        kp_seed_report r;
        kp_error err;
        if (kp_seed_run(&o, &r, &err)) fail_msg("shard %d/3: %s", i, err.message);
        sent += r.items_sent;
        long mine = 0; /* records k with k mod 3 = i-1, per entity (one item each here) */
        for (size_t e = 0; e < f->model->entity_count; e++) {
            long count = (long)kp_dataset_count(f->data, f->model->entities[e]);
            if (count >= i) mine += (count - i) / 3 + 1;
        }
        assert_int_equal(r.items_sent, mine);
        assert_int_equal(r.shards_complete, i);
        assert_int_equal(r.is_complete, i == 3);
        assert_int_equal(r.items_read_back, i == 3 ? n : -1);
        assert_string_equal(marker_status(), i == 3 ? "complete" : "seeding");
        assert_int_equal(cJSON_GetObjectItemCaseSensitive(S.marker, "shards")->valueint, 3);
        char name[8];
        snprintf(name, sizeof name, "%d/3", i);
        const cJSON *own = cJSON_GetObjectItemCaseSensitive(S.shard_markers, name);
        assert_non_null(own);
        assert_string_equal(cJSON_GetObjectItemCaseSensitive(own, "status")->valuestring, "complete");
        kp_seed_report_free(&r);
    }
    assert_int_equal(sent, n);
    assert_int_equal(S.count, (size_t)n);
    for (size_t i = 0; i < S.count; i++) assert_int_equal(S.items[i].puts, 1);
    assert_int_equal(S.schemas, 1); /* only shard 1 sets the target up */
}

/* A shard given up on mid-way keeps its checkpoint in its own marker; its rerun sends only
 * the rest of its part. A shard of another count, --force on shard 2, and shard 2 without
 * shard 1 are refused before anything is written. */
static void test_a_shard_resumes_from_its_own_checkpoint_and_others_wait_for_shard_1(void **state)
{
    fixture *f = *state;
    kp_seed_options o = seed_options(f);
    kp_seed_report r;
    kp_error err;
    o.shard_index = 2;
    o.shard_count = 2;
    o.shard_wait_seconds = 0.2;
    assert_int_equal(kp_seed_run(&o, &r, &err), -1);          /* no shard 1 yet */
    assert_int_equal(err.code, KP_ERR_TARGET);
    assert_non_null(strstr(err.message, "did not set the target up"));
    assert_int_equal(S.count, 0);
    assert_int_equal(S.schemas, 0);
    kp_seed_report_free(&r);
    o.force = 1;
    assert_int_equal(kp_seed_run(&o, &r, &err), -1);
    assert_int_equal(err.code, KP_ERR_USAGE);
    kp_seed_report_free(&r);
    o.force = 0;

    o.shard_index = 1;
    assert_int_equal(kp_seed_run(&o, &r, &err), 0);
    kp_seed_report_free(&r);
    long n = total_records(f), first = (long)S.count;
    o.shard_count = 3;
    o.shard_index = 2;
    assert_int_equal(kp_seed_run(&o, &r, &err), -1);          /* the seed runs in 2 shards */
    assert_int_equal(err.code, KP_ERR_USAGE);
    assert_non_null(strstr(err.message, "seeded in 2 shards"));
    assert_int_equal(S.count, (size_t)first);
    kp_seed_report_free(&r);

    o.shard_count = 2;
    S.fail_after_batches = S.batches + 1;                       /* one batch of 5 acknowledged, then given up */
    assert_int_equal(kp_seed_run(&o, &r, &err), -1);
    assert_int_equal(r.items_acknowledged, 5);
    kp_seed_report_free(&r);
    const cJSON *own = cJSON_GetObjectItemCaseSensitive(S.shard_markers, "2/2");
    assert_string_equal(cJSON_GetObjectItemCaseSensitive(own, "status")->valuestring, "seeding");
    S.fail_after_batches = -1;
    assert_int_equal(kp_seed_run(&o, &r, &err), 0);
    assert_int_equal(r.action, KP_SEED_RESUMED);
    assert_int_equal(r.items_resumed, 5);
    assert_int_equal(r.items_sent, n - first - 5);
    assert_true(r.is_complete);
    assert_int_equal(r.items_read_back, n);
    kp_seed_report_free(&r);
    assert_string_equal(marker_status(), "complete");
    for (size_t i = 0; i < S.count; i++)
        if (S.items[i].puts != 1) fail_msg("item %s was written %d times", S.items[i].id, S.items[i].puts);
}

static void test_seed_refuses_a_target_seeded_from_another_model_without_force(void **state)
{
    fixture *f = *state;
    seed_ok(f);
    /* the same model file with one more byte: another model hash */
    size_t len;
    char *text = kp_test_read_file("tests/fixtures/oracle/model.json", &len);
    text = realloc(text, len + 2);
    strcpy(text + len, "\n");
    kp_model *other;
    kp_dataset *other_data;
    kp_error err;
    kp_model_options mo = {.scale = 1};
    assert_int_equal(kp_model_parse("other-model.json", text, len + 1, &mo, &other, &err), 0);
    free(text);
    assert_string_not_equal(other->hash, f->model->hash);
    assert_int_equal(kp_dataset_load(other, FIXTURE "/data", &other_data, &err), 0);
    kp_design *other_design = fake_design(other);
    S.model = other;

    kp_seed_options o = {.model = other, .data = other_data, .design = other_design, .target = &f->target};
    kp_seed_report r;
    assert_int_equal(kp_seed_run(&o, &r, &err), -1);
    assert_int_equal(err.code, KP_ERR_USAGE);
    assert_non_null(strstr(err.message, "not from this model file"));
    assert_non_null(strstr(err.message, "--force"));
    assert_int_equal(S.drops, 0);
    assert_string_equal(cJSON_GetObjectItemCaseSensitive(S.marker, "model_hash")->valuestring, f->model->hash);
    kp_seed_report_free(&r);

    o.force = 1;
    assert_int_equal(kp_seed_run(&o, &r, &err), 0);
    assert_int_equal(r.action, KP_SEED_REPLACED);
    assert_int_equal(S.drops, 1);
    assert_non_null(strstr(r.note, "--force"));
    assert_string_equal(cJSON_GetObjectItemCaseSensitive(S.marker, "model_hash")->valuestring, other->hash);
    assert_int_equal(r.items_read_back, total_records(f));
    kp_seed_report_free(&r);

    S.model = f->model;
    kp_dataset_free(S.cache);
    S.cache = NULL;
    kp_design_free(other_design);
    kp_dataset_free(other_data);
    kp_model_free(other);
}

static void test_seed_refuses_a_foreign_target_without_force(void **state)
{
    fixture *f = *state;
    S.exists = 1;
    S.is_foreign = 1;
    cJSON *body = cJSON_Parse("{\"id\":\"someone-else\"}");
    fake_put("Customer#\"someone-else\"", "Customer", body);
    cJSON_Delete(body);
    kp_seed_options o = seed_options(f);
    kp_seed_report r;
    kp_error err;
    assert_int_equal(kp_seed_run(&o, &r, &err), -1);
    assert_int_equal(err.code, KP_ERR_USAGE);
    assert_non_null(strstr(err.message, "keyplan did not create them"));
    assert_int_equal(S.count, 1);
    assert_null(S.marker);
    kp_seed_report_free(&r);

    o.force = 1;
    assert_int_equal(kp_seed_run(&o, &r, &err), 0);
    assert_int_equal(r.action, KP_SEED_REPLACED);
    assert_null(fake_find("Customer#\"someone-else\""));
    assert_int_equal(S.count, (size_t)total_records(f));
    kp_seed_report_free(&r);
}

/* A kill in the middle of apply_schema leaves a part of the design's containers, empty
 * and without a marker: the rerun seeds it as fresh and applies the whole schema again
 * (on Cassandra the missing tables made every INSERT fail). */
static void test_seed_completes_the_schema_of_an_empty_target_without_a_marker(void **state)
{
    fixture *f = *state;
    S.exists = 1;
    kp_seed_options o = seed_options(f);
    kp_seed_report r;
    kp_error err;
    assert_int_equal(kp_seed_run(&o, &r, &err), 0);
    assert_int_equal(r.action, KP_SEED_FRESH);
    assert_int_equal(S.schemas, 1);
    assert_int_equal(S.drops, 0);
    assert_int_equal(S.count, (size_t)total_records(f));
    kp_seed_report_free(&r);
}

static void test_seed_dry_run_touches_nothing(void **state)
{
    fixture *f = *state;
    kp_seed_options o = seed_options(f);
    o.dry_run = 1;
    kp_seed_report r;
    kp_error err;
    assert_int_equal(kp_seed_run(&o, &r, &err), 0);
    assert_int_equal(r.action, KP_SEED_DRY_RUN);
    assert_int_equal(r.items, total_records(f));
    assert_int_equal(r.batches, (total_records(f) + 4) / 5);
    assert_true(r.write_units >= (double)total_records(f));
    assert_string_equal(r.write_unit, "WU");
    assert_int_equal(S.connects, 0);
    assert_int_equal(S.exists, 0);
    assert_null(S.marker);
    assert_int_equal(S.count, 0);
    kp_seed_report_free(&r);
}

static void test_seed_dry_run_exports_every_item_as_ndjson(void **state)
{
    fixture *f = *state;
    kp_target target = {.database = "fake", .prefix = "px"};
    kp_seed_options o = seed_options(f);
    o.dry_run = 1;
    o.target = &target;
    o.export_items = tmpfile();
    assert_non_null(o.export_items);
    kp_seed_report r;
    kp_error err;
    assert_int_equal(kp_seed_run(&o, &r, &err), 0);
    assert_int_equal(S.connects, 0);
    rewind(o.export_items);
    char line[8192];
    long lines = 0;
    while (fgets(line, sizeof line, o.export_items)) {
        cJSON *row = cJSON_Parse(line);
        assert_non_null(row);
        const cJSON *table = cJSON_GetObjectItemCaseSensitive(row, "table");
        assert_true(cJSON_IsString(table));
        assert_memory_equal(table->valuestring, "px", 2);      /* the prefix, then the container */
        assert_true(cJSON_IsObject(cJSON_GetObjectItemCaseSensitive(row, "item")));
        assert_int_equal(cJSON_GetArraySize(row), 2);
        cJSON_Delete(row);
        lines++;
    }
    assert_int_equal(lines, r.items);
    assert_int_equal(lines, total_records(f));
    fclose(o.export_items);
    kp_seed_report_free(&r);
}

static void test_seed_names_the_record_too_large_before_writing_anything(void **state)
{
    fixture *f = *state;
    S.max_item_bytes = 170; /* only Order o2 (line 2: shippedAt, copies, aggregates: 189 bytes) is larger */
    kp_seed_options o = seed_options(f);
    kp_seed_report r;
    kp_error err;
    assert_int_equal(kp_seed_run(&o, &r, &err), -1);
    assert_int_equal(err.code, KP_ERR_DATA);
    assert_string_equal(err.file, "tests/fixtures/oracle/data/Order.ndjson");
    assert_int_equal(err.line, 2);
    assert_non_null(strstr(err.message, "189 bytes"));
    assert_int_equal(S.connects, 0);
    assert_int_equal(S.exists, 0);
    assert_int_equal(S.count, 0);
    kp_seed_report_free(&r);
}

/* ==== verifying ================================================================================== */

static void run_verify(fixture *f, kp_verify_options *o, kp_verify_report *r, int expected_rc, kp_error *err)
{
    int rc = kp_verify_run(o, r, err);
    if (getenv("KP_TEST_VERBOSE")) kp_verify_report_print(stderr, r);
    if (rc != expected_rc) {
        kp_verify_report_print(stderr, r);
        fail_msg("verify returned %d (%s)", rc, err->message);
    }
}

static const kp_verify_pattern *pattern_report(const kp_verify_report *r, const char *name)
{
    for (size_t i = 0; i < r->pattern_count; i++)
        if (strcmp(r->patterns[i].pattern->name, name) == 0) return &r->patterns[i];
    fail_msg("no pattern %s in the report", name);
    return NULL;
}

static void test_verify_passes_when_the_target_answers_like_the_oracle(void **state)
{
    fixture *f = *state;
    seed_ok(f);
    int marker_writes = S.marker_writes;
    kp_verify_options o = verify_options(f);
    kp_verify_report r;
    kp_error err;
    run_verify(f, &o, &r, 0, &err);
    assert_int_equal(r.patterns_failed, 0);
    assert_int_equal(r.patterns_passed + r.patterns_skipped, (int)f->model->pattern_count);
    assert_true(r.patterns_passed >= (int)f->model->pattern_count - 1);
    const kp_verify_pattern *p = pattern_report(&r, "customer-orders");
    /* every customer is an anchor once (4 of them, fewer than the cap), every page walked */
    assert_int_equal(p->anchors_total, 4);
    assert_int_equal(p->anchors, 4);
    assert_false(p->is_stratified);
    assert_int_equal(p->samples, 4);
    assert_true(p->pages > 4); /* c1 has two pages of orders */
    assert_false(p->is_cut);
    assert_true(r.is_walked_to_end);
    assert_int_equal(p->first_requests_min, 1);
    assert_int_equal(p->first_steps_max, 1);
    assert_true(p->p99_ms >= p->p50_ms);
    assert_int_equal(S.marker_writes, marker_writes); /* verify only reads */
    kp_verify_report_free(&r);

    /* a cap below the anchors: stratified, the coverage says so; one page each is cut short */
    o.samples = 2;
    o.max_pages = 1;
    run_verify(f, &o, &r, 0, &err);
    p = pattern_report(&r, "customer-orders");
    assert_int_equal(p->anchors_total, 4);
    assert_int_equal(p->anchors, 2);
    assert_true(p->is_stratified);
    if (p->is_cut) assert_false(r.is_walked_to_end);
    cJSON *json = kp_verify_report_to_json(&r);
    char *text = cJSON_PrintUnformatted(json);
    assert_non_null(strstr(text, "\"coverage\":{\"exhaustive\":false,"));
    free(text);
    cJSON_Delete(json);
    kp_verify_report_free(&r);

    /* --exhaustive: every anchor whatever the cap */
    o.is_exhaustive = 1;
    o.max_pages = 0;
    run_verify(f, &o, &r, 0, &err);
    p = pattern_report(&r, "customer-orders");
    assert_int_equal(p->anchors, 4);
    assert_false(p->is_stratified);
    assert_true(r.is_walked_to_end);
    kp_verify_report_free(&r);
}

static void expect_difference(fixture *f, enum fake_mode mode, const char *path, const char *expected,
                              const char *actual)
{
    seed_ok(f);
    S.mode = mode;
    S.mode_pattern = "customer-orders";
    kp_verify_options o = verify_options(f);
    kp_verify_report r;
    kp_error err;
    run_verify(f, &o, &r, -1, &err);
    assert_int_equal(err.code, KP_ERR_CHECK);
    assert_int_equal(r.patterns_failed, 1);
    const kp_verify_pattern *p = pattern_report(&r, "customer-orders");
    assert_false(p->is_pass);
    assert_true(p->has_difference);
    assert_string_equal(p->difference.path, path);
    if (expected) assert_string_equal(p->difference.expected, expected);
    if (actual) assert_non_null(strstr(p->difference.actual, actual));
    assert_non_null(strstr(p->difference.message, path));
    kp_verify_report_free(&r);
}

/* A run stopped by a failing server checks nothing after that point: the pattern it
 * stopped in and those it never reached are "not checked" (never FAIL 0/0, never FAIL with
 * every sample passed), and passed + failed + not checked adds up to the patterns. */
static void test_a_run_stopped_by_the_server_counts_what_it_did_not_check(void **state)
{
    fixture *f = *state;
    seed_ok(f);
    S.mode = FAKE_SERVER_GONE;
    S.mode_pattern = f->model->patterns[1]->name;
    kp_verify_options o = verify_options(f);
    kp_verify_report r;
    kp_error err;
    run_verify(f, &o, &r, -1, &err);
    assert_int_equal(kp_error_exit_code(&err), 3);
    assert_int_equal(r.patterns_passed + r.patterns_failed + r.patterns_skipped, (int)f->model->pattern_count);
    assert_int_equal(r.patterns_failed, 0);
    const kp_verify_pattern *stopped = &r.patterns[1];
    assert_false(stopped->is_pass);
    assert_true(stopped->is_skipped);
    assert_non_null(strstr(stopped->note, "not checked: the run stopped after 2 samples"));
    for (size_t i = 2; i < r.pattern_count; i++) {
        assert_true(r.patterns[i].is_skipped);
        assert_non_null(strstr(r.patterns[i].note, "stopped before this pattern"));
    }
    assert_true(r.patterns[0].is_pass);
    kp_verify_report_free(&r);
}

/* The report without what depends on timing (latencies, seconds) or on the setting itself. */
static char *report_text(const kp_verify_report *r, int rc)
{
    cJSON *json = kp_verify_report_to_json(r);
    cJSON_DeleteItemFromObjectCaseSensitive(json, "in_flight");
    cJSON_DeleteItemFromObjectCaseSensitive(cJSON_GetObjectItemCaseSensitive(json, "totals"), "seconds");
    cJSON *p = NULL;
    cJSON_ArrayForEach(p, cJSON_GetObjectItemCaseSensitive(json, "patterns")) cJSON_DeleteItemFromObjectCaseSensitive(p, "latency_ms");
    char *body = cJSON_PrintUnformatted(json);
    cJSON_Delete(json);
    size_t n = strlen(body) + 16;
    char *text = malloc(n);
    snprintf(text, n, "rc %d %s", rc, body);
    free(body);
    return text;
}

/* With samples in flight (workers, each on a connection of its own, the fake answering in
 * whatever order they come) the report is the one a run one request at a time gives: the
 * same samples, pages, measures, first difference and notes, whatever the target does. */
static void test_verify_in_flight_reports_what_one_at_a_time_reports(void **state)
{
    fixture *f = *state;
    const enum fake_mode modes[] = {FAKE_OK, FAKE_CORRUPT, FAKE_SWAP, FAKE_EXTRA_PAGE, FAKE_COSTLY, FAKE_READS_MORE};
    for (size_t m = 0; m < sizeof modes / sizeof *modes; m++) {
        char *text[2];
        for (int k = 0; k < 2; k++) {
            seed_ok(f);
            S.mode = modes[m];
            S.mode_pattern = "customer-orders";
            kp_verify_options o = verify_options(f);
            o.in_flight = k ? 3 : 1;
            int connects = S.connects;
            kp_verify_report r;
            kp_error err;
            int rc = kp_verify_run(&o, &r, &err);
            assert_int_equal(r.in_flight, o.in_flight);
            assert_int_equal(S.connects - connects, o.in_flight); /* the run's own and one per other worker */
            text[k] = report_text(&r, rc);
            kp_verify_report_free(&r);
        }
        if (strcmp(text[0], text[1]) != 0) fail_msg("mode %zu\n  one at a time: %s\n  in flight:     %s", m, text[0], text[1]);
        if (modes[m] == FAKE_CORRUPT) assert_non_null(strstr(text[1], "\"path\":\"$.orders[1].total\""));
        if (modes[m] == FAKE_READS_MORE) assert_non_null(strstr(text[1], "read 500 items"));
        free(text[0]);
        free(text[1]);
    }
    /* server trouble part-way: the run stops, and what it did not check adds up */
    seed_ok(f);
    S.mode = FAKE_SERVER_GONE;
    S.mode_pattern = f->model->patterns[1]->name;
    kp_verify_options o = verify_options(f);
    o.in_flight = 3;
    kp_verify_report r;
    kp_error err;
    run_verify(f, &o, &r, -1, &err);
    assert_int_equal(kp_error_exit_code(&err), 3);
    assert_int_equal(r.patterns_passed + r.patterns_failed + r.patterns_skipped, (int)f->model->pattern_count);
    assert_true(r.patterns[1].is_skipped);
    kp_verify_report_free(&r);
}

static void test_verify_names_the_path_of_a_corrupted_value(void **state)
{
    /* c1's first page: o4 (7.00), o2 (20.00) — the second total is corrupted */
    expect_difference(*state, FAKE_CORRUPT, "$.orders[1].total", "20.00", "0.01");
}

static void test_verify_notices_two_swapped_elements(void **state)
{
    expect_difference(*state, FAKE_SWAP, "$.orders[0].id", "\"o4\"", "\"o2\"");
}

static void test_verify_fails_on_an_extra_page(void **state)
{
    expect_difference(*state, FAKE_EXTRA_PAGE, "$", "no more pages", "another page");
}

static void test_verify_accepts_an_empty_last_page_with_a_continuation(void **state)
{
    fixture *f = *state;
    seed_ok(f);
    S.mode = FAKE_EMPTY_EXTRA_PAGE;
    S.mode_pattern = "customer-orders";
    kp_verify_options o = verify_options(f);
    kp_verify_report r;
    kp_error err;
    run_verify(f, &o, &r, 0, &err);
    assert_true(pattern_report(&r, "customer-orders")->is_pass);
    kp_verify_report_free(&r);
}

static void test_verify_reports_measured_requests_that_differ_from_the_claim(void **state)
{
    fixture *f = *state;
    seed_ok(f);
    S.mode = FAKE_COSTLY;
    S.mode_pattern = "customer-orders";
    kp_verify_options o = verify_options(f);
    kp_verify_report r;
    kp_error err;
    run_verify(f, &o, &r, -1, &err);
    assert_int_equal(err.code, KP_ERR_CHECK);
    const kp_verify_pattern *p = pattern_report(&r, "customer-orders");
    assert_false(p->is_pass);
    assert_false(p->has_difference); /* the answers agree; the cost does not */
    assert_true(p->is_claim_mismatch);
    assert_int_equal(p->first_requests_min, 2);
    assert_non_null(strstr(p->note, "the plan claims 1 request and 1 sequential step for a first page; measured 2 "
                                    "requests and 2 steps"));
    cJSON *json = kp_verify_report_to_json(&r);
    char *text = cJSON_PrintUnformatted(json);
    assert_non_null(strstr(text, "\"claims_hold\":false"));
    free(text);
    cJSON_Delete(json);
    kp_verify_report_free(&r);
}

/* A first page with fewer round trips than the plan's deepest chain fails, unless every
 * such page stopped because its records led nowhere (kp_result.is_cut_short): then it
 * passes and the note says no sample got there. */
static void test_verify_excuses_fewer_steps_only_when_the_records_led_nowhere(void **state)
{
    fixture *f = *state;
    seed_ok(f);
    for (int cut = 0; cut < 2; cut++) {
        S.mode = cut ? FAKE_SHORT_CUT : FAKE_SHORT;
        S.mode_pattern = "customer-orders";
        kp_verify_options o = verify_options(f);
        kp_verify_report r;
        kp_error err;
        run_verify(f, &o, &r, cut ? 0 : -1, &err);
        const kp_verify_pattern *p = pattern_report(&r, "customer-orders");
        assert_int_equal(p->first_steps_max, 0);
        if (cut) {
            assert_true(p->is_pass);
            assert_non_null(strstr(p->note, "no sample reached the plan's 1 sequential steps"));
        } else {
            assert_false(p->is_pass);
            assert_true(p->is_claim_mismatch);
            assert_non_null(strstr(p->note, "measured 1 request and 0 steps"));
        }
        kp_verify_report_free(&r);
    }
}

/* A plan that claims one page but reads a whole partition (a client-side filter) fails,
 * with the measured figure beside the bound, in the text note and in the JSON's claimed
 * and measured objects. */
static void test_verify_fails_a_page_that_reads_more_than_the_claimed_bound(void **state)
{
    fixture *f = *state;
    seed_ok(f);
    S.mode = FAKE_READS_MORE;
    S.mode_pattern = "customer-orders";
    kp_verify_options o = verify_options(f);
    kp_verify_report r;
    kp_error err;
    run_verify(f, &o, &r, -1, &err);
    assert_int_equal(err.code, KP_ERR_CHECK);
    const kp_verify_pattern *p = pattern_report(&r, "customer-orders");
    assert_false(p->is_pass);
    assert_false(p->has_difference); /* the answers agree; what was read does not */
    assert_true(p->is_bound_exceeded);
    assert_int_equal(p->page_items_max, 500);
    assert_non_null(strstr(p->note, "read 500 items; the plan's bound for a page is 50"));
    /* the other patterns read what they claim and pass */
    for (size_t i = 0; i < r.pattern_count; i++)
        if (strcmp(r.patterns[i].pattern->name, "customer-orders") != 0 && !r.patterns[i].is_skipped)
            assert_true(r.patterns[i].is_pass);
    cJSON *json = kp_verify_report_to_json(&r);
    const cJSON *pj = NULL;
    cJSON_ArrayForEach(pj, cJSON_GetObjectItemCaseSensitive(json, "patterns"))
        if (strcmp(cJSON_GetObjectItemCaseSensitive(pj, "name")->valuestring, "customer-orders") == 0) break;
    assert_non_null(pj);
    const cJSON *claimed = cJSON_GetObjectItemCaseSensitive(pj, "claimed");
    const cJSON *measured = cJSON_GetObjectItemCaseSensitive(pj, "measured");
    assert_int_equal((int)cJSON_GetObjectItemCaseSensitive(claimed, "items_read_max")->valuedouble, 50);
    assert_int_equal((int)cJSON_GetObjectItemCaseSensitive(measured, "items_read_max")->valuedouble, 500);
    assert_int_equal((int)cJSON_GetObjectItemCaseSensitive(measured, "bytes_read_max")->valuedouble, 100000);
    assert_true(cJSON_IsFalse(cJSON_GetObjectItemCaseSensitive(pj, "claims_hold")));
    /* and past what an expert's page reads: the page from each request, a header each, one more */
    const cJSON *pb = cJSON_GetObjectItemCaseSensitive(pj, "page_bound");
    assert_true(cJSON_IsObject(pb));
    double page = cJSON_GetObjectItemCaseSensitive(pb, "page")->valuedouble;
    double req = cJSON_GetObjectItemCaseSensitive(pb, "requests_max")->valuedouble;
    assert_true(page > 0 && req >= 1);
    assert_true(cJSON_GetObjectItemCaseSensitive(pb, "bound")->valuedouble == page * req + req + 1);
    assert_int_equal((int)cJSON_GetObjectItemCaseSensitive(pb, "items_read_max")->valuedouble, 500);
    assert_true(cJSON_IsFalse(cJSON_GetObjectItemCaseSensitive(pb, "holds")));
    char *text = NULL;
    size_t text_len = 0;
    FILE *mem = open_memstream(&text, &text_len);
    assert_non_null(mem);
    kp_verify_report_print(mem, &r);
    fclose(mem);
    assert_non_null(strstr(text, "listings within it; over: customer-orders (500 items for a page of"));
    free(text);
    cJSON_Delete(json);
    kp_verify_report_free(&r);
}

/* An item changed behind keyplan's back where no pattern reads fails its container: the
 * read-back compares every container's count and content with what the data makes. */
static void test_verify_reads_every_container_back(void **state)
{
    fixture *f = *state;
    seed_ok(f);
    assert_true(S.count > 1);
    /* one field of the last item stored, as another client would */
    cJSON *body = S.items[S.count - 1].body;
    cJSON_AddStringToObject(body, "touched", "behind keyplan's back");
    kp_verify_options o = verify_options(f);
    kp_verify_report r;
    kp_error err;
    run_verify(f, &o, &r, -1, &err);
    assert_int_equal(err.code, KP_ERR_CHECK);
    assert_true(r.is_read_back);
    assert_int_equal(r.containers_failed, 1);
    assert_non_null(strstr(err.message, "1 container"));
    cJSON *json = kp_verify_report_to_json(&r);
    char *text = cJSON_PrintUnformatted(json);
    assert_non_null(strstr(text, "their content differs (checksum)"));
    assert_non_null(strstr(text, "\"passed\":false"));
    free(text);
    cJSON_Delete(json);
    kp_verify_report_free(&r);

    /* an extra item: the count says so; with no_read_back the check is skipped */
    cJSON_DeleteItemFromObject(body, "touched");
    run_verify(f, &o, &r, 0, &err);
    assert_int_equal(r.containers_failed, 0);
    kp_verify_report_free(&r);
    o.no_read_back = 1;
    cJSON_AddStringToObject(body, "touched", "again");
    run_verify(f, &o, &r, 0, &err);
    assert_false(r.is_read_back);
    assert_int_equal(r.container_count, 0);
    kp_verify_report_free(&r);
}

static void test_verify_refuses_a_target_left_by_interrupted_writes(void **state)
{
    fixture *f = *state;
    seed_ok(f);
    cJSON_ReplaceItemInObjectCaseSensitive(S.marker, "status", cJSON_CreateString("writes-in-progress"));
    kp_verify_options o = verify_options(f);
    kp_verify_report r;
    kp_error err;
    assert_int_equal(kp_verify_run(&o, &r, &err), -1);
    assert_int_equal(err.code, KP_ERR_USAGE);
    assert_non_null(strstr(err.message, "re-seed"));
    kp_verify_report_free(&r);

    /* and seeding refuses too, until --force */
    kp_seed_options so = seed_options(f);
    kp_seed_report sr;
    assert_int_equal(kp_seed_run(&so, &sr, &err), -1);
    assert_int_equal(err.code, KP_ERR_USAGE);
    assert_non_null(strstr(err.message, "verify --writes"));
    kp_seed_report_free(&sr);
}

/* A minimal XML reader: well-formed nesting, counts of elements, attribute lookup. */
static int xml_check(const char *xml, int *testcases, int *failures, char *first_failure, size_t size)
{
    const char *stack[32];
    size_t lens[32];
    int depth = 0;
    *testcases = *failures = 0;
    first_failure[0] = '\0';
    const char *p = xml;
    if (strncmp(p, "<?xml", 5) != 0) return -1;
    p = strstr(p, "?>");
    if (!p) return -1;
    p += 2;
    while ((p = strchr(p, '<'))) {
        if (p[1] == '/') {
            const char *name = p + 2;
            size_t n = strcspn(name, ">");
            if (depth == 0 || lens[depth - 1] != n || strncmp(stack[depth - 1], name, n) != 0) return -1;
            depth--;
            p = name + n;
            continue;
        }
        const char *name = p + 1;
        size_t n = strcspn(name, " />");
        const char *end = strchr(name, '>');
        if (!end) return -1;
        for (const char *q = name; q < end; q++)
            if (*q == '<') return -1;
        if (n == 8 && strncmp(name, "testcase", 8) == 0) (*testcases)++;
        if (n == 7 && strncmp(name, "failure", 7) == 0) {
            (*failures)++;
            const char *m = strstr(name, "message=\"");
            if (m && !first_failure[0] && m < end) {
                m += 9;
                size_t k = strcspn(m, "\"");
                snprintf(first_failure, size, "%.*s", (int)k, m);
            }
        }
        if (end[-1] != '/') {
            if (depth == 32) return -1;
            stack[depth] = name;
            lens[depth++] = n;
        }
        p = end;
    }
    return depth == 0 ? 0 : -1;
}

static void test_junit_output_is_well_formed_with_one_case_per_pattern(void **state)
{
    fixture *f = *state;
    seed_ok(f);
    S.mode = FAKE_CORRUPT;
    S.mode_pattern = "customer-orders";
    kp_verify_options o = verify_options(f);
    kp_verify_report r;
    kp_error err;
    run_verify(f, &o, &r, -1, &err);
    char *xml = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&xml, &len);
    const kp_verify_report *reports[] = {&r};
    assert_int_equal(kp_verify_write_junit(out, reports, 1), 0);
    fclose(out);
    int testcases, failures;
    char first[600];
    if (xml_check(xml, &testcases, &failures, first, sizeof first)) fail_msg("not well-formed:\n%s", xml);
    /* one case per pattern and one per container (the read-back check, all matching) */
    assert_true(r.container_count > 0);
    assert_int_equal(r.containers_failed, 0);
    assert_int_equal(testcases, (int)f->model->pattern_count + (int)r.container_count);
    assert_int_equal(failures, 1);
    assert_non_null(strstr(first, "$.orders[1].total: expected 20.00, actual 0.01"));
    assert_non_null(strstr(xml, "params {&quot;id&quot;:&quot;c1&quot;}"));
    free(xml);
    kp_verify_report_free(&r);
}

/* Sorted "id=body" lines of everything the fake holds. */
static char *store_snapshot(void)
{
    char **lines = calloc(S.count + 1, sizeof *lines);
    size_t total = 1;
    for (size_t i = 0; i < S.count; i++) {
        char *body = cJSON_PrintUnformatted(S.items[i].body);
        size_t n = strlen(S.items[i].id) + strlen(body) + 3;
        lines[i] = malloc(n);
        snprintf(lines[i], n, "%s=%s\n", S.items[i].id, body);
        total += n;
        free(body);
    }
    for (size_t i = 0; i < S.count; i++)
        for (size_t k = i + 1; k < S.count; k++)
            if (strcmp(lines[k], lines[i]) < 0) { char *t = lines[i]; lines[i] = lines[k]; lines[k] = t; }
    char *out = calloc(1, total);
    for (size_t i = 0; i < S.count; i++) { strcat(out, lines[i]); free(lines[i]); }
    free(lines);
    return out;
}

static void test_verify_writes_then_undoes_them_exactly(void **state)
{
    fixture *f = *state;
    seed_ok(f);
    char *before = store_snapshot();
    char hash_before[17], hash_after[17];
    kp_error err;
    assert_int_equal(kp_seed_data_hash(f->data, hash_before, &err), 0);
    kp_verify_options o = verify_options(f);
    o.writes = 1;
    o.samples = 5;
    kp_verify_report r;
    run_verify(f, &o, &r, 0, &err);
    assert_int_equal((int)r.write_count, (int)f->model->write_count);
    assert_true(r.is_undone);
    int applied = 0;
    for (size_t i = 0; i < r.write_count; i++) {
        const kp_verify_write *w = &r.write_results[i];
        if (!w->is_pass) fail_msg("write %s: %s %s", w->write->name, w->note,
                                  w->difference.message ? w->difference.message : "");
        assert_true(w->ops > 0);
        assert_true(w->reads_checked > 0);
        applied += w->applied + w->partial;
    }
    assert_true(applied > 0);
    char *after = store_snapshot();
    assert_string_equal(after, before);
    assert_int_equal(kp_seed_data_hash(f->data, hash_after, &err), 0);
    assert_string_equal(hash_after, hash_before);
    assert_string_equal(marker_status(), "complete");
    free(before);
    free(after);
    kp_verify_report_free(&r);
}

/* Verify with writes after multiplying every write plan's claims (items, requests). */
static void verify_with_claims_times(fixture *f, double items, double requests, kp_verify_report *r)
{
    seed_ok(f);
    for (size_t w = 0; w < f->design->write_plan_count; w++)
        for (size_t i = 0; i < f->design->write_plans[w].share_count; i++) {
            f->design->write_plans[w].shares[i].count *= items;
            f->design->write_plans[w].shares[i].requests *= requests;
        }
    kp_verify_options o = verify_options(f);
    o.writes = 1;
    o.samples = 5;
    kp_error err;
    run_verify(f, &o, r, -1, &err);
}

/* A write plan that claims three items per record changed, where the target writes one: the
 * write fails, and says what it claimed and what was written. */
static void test_verify_writes_fail_a_wrong_items_claim(void **state)
{
    fixture *f = *state;
    kp_verify_report r;
    verify_with_claims_times(f, 3, 1, &r);
    int judged = 0;
    for (size_t i = 0; i < r.write_count; i++) {
        const kp_verify_write *w = &r.write_results[i];
        if (w->sent_ops == 0 || w->sent_items_sum == 0) continue;
        judged++;
        assert_false(w->is_pass);
        assert_true(w->is_items_mismatch);
        assert_false(w->is_requests_mismatch);
        assert_non_null(strstr(w->note, "the plan claims"));
        assert_true(fabs(w->claimed_sum - 3.0 * (double)w->sent_items_sum) < 1e-9);
    }
    assert_true(judged > 0);
    kp_verify_report_free(&r);
}

/* A write plan that claims four write requests per operation, where the target sends one:
 * the write fails on its requests (its items hold), and says both. */
static void test_verify_writes_fail_a_wrong_requests_claim(void **state)
{
    fixture *f = *state;
    kp_verify_report r;
    verify_with_claims_times(f, 1, 4, &r);
    int judged = 0;
    for (size_t i = 0; i < r.write_count; i++) {
        const kp_verify_write *w = &r.write_results[i];
        if (w->sent_ops == 0 || w->sent_items_sum == 0) continue;
        judged++;
        assert_false(w->is_pass);
        assert_false(w->is_items_mismatch);
        assert_true(w->is_requests_mismatch);
        assert_int_equal((int)w->sent_requests_sum, w->sent_ops);
        assert_true(fabs(w->claimed_requests_sum - 4.0 * w->sent_ops) < 1e-9);
        assert_non_null(strstr(w->note, "write requests per operation"));
    }
    assert_true(judged > 0);
    kp_verify_report_free(&r);
}

static void test_verify_writes_ask_a_read_once_while_the_data_stays_the_same(void **state)
{
    fixture *f = *state;
    seed_ok(f);
    S.first_pages = cJSON_CreateArray();
    kp_verify_options o = verify_options(f);
    o.writes = 1;
    o.samples = 5;
    kp_verify_report r;
    kp_error err;
    run_verify(f, &o, &r, 0, &err);
    for (size_t i = 0; i < r.write_count; i++) assert_true(r.write_results[i].is_pass);
    int asked = 0;
    for (const cJSON *a = S.first_pages->child; a; a = a->next) {
        /* after the same operation (and before the next: the undo comes after the last read) */
        if (atoi(a->valuestring) == 0) continue; /* the patterns' own samples */
        asked++;
        for (const cJSON *b = a->next; b; b = b->next)
            if (strcmp(a->valuestring, b->valuestring) == 0) fail_msg("asked twice of the same data: %s", a->valuestring);
    }
    assert_true(asked > 0);
    kp_verify_report_free(&r);
}

/* A write that fails half way leaves the target in a state the data does not say: the undo
 * writes back every item of the records the operations changed, the failed one's too. */
static void test_verify_writes_that_fail_half_way_are_still_undone(void **state)
{
    fixture *f = *state;
    seed_ok(f);
    char *before = store_snapshot();
    S.mode = FAKE_WRITE_HALF;
    kp_verify_options o = verify_options(f);
    o.writes = 1;
    o.samples = 5;
    kp_verify_report r;
    kp_error err;
    run_verify(f, &o, &r, -1, &err);
    assert_true(r.writes_failed > 0);
    int named = 0, written_back = 0;
    for (size_t i = 0; i < r.write_count; i++) {
        const kp_verify_write *w = &r.write_results[i];
        if (w->difference.message && strstr(w->difference.message, "the server refused the rest")) named++;
        if (strstr(w->note, "written back")) written_back++;
    }
    assert_true(named > 0);
    assert_true(written_back > 0);
    assert_true(r.is_undone);
    char *after = store_snapshot();
    assert_string_equal(after, before);
    assert_string_equal(marker_status(), "complete");
    free(before);
    free(after);
    kp_verify_report_free(&r);
}

static void test_verify_writes_fail_when_the_target_drops_them_and_are_still_undone(void **state)
{
    fixture *f = *state;
    seed_ok(f);
    char *before = store_snapshot();
    S.mode = FAKE_DROP_WRITES;
    kp_verify_options o = verify_options(f);
    o.writes = 1;
    o.samples = 5;
    kp_verify_report r;
    kp_error err;
    run_verify(f, &o, &r, -1, &err);
    assert_int_equal(err.code, KP_ERR_CHECK);
    assert_int_equal(r.patterns_failed, 0);
    const kp_verify_write *rename = NULL;
    for (size_t i = 0; i < r.write_count; i++)
        if (strcmp(r.write_results[i].write->name, "rename-customer") == 0) rename = &r.write_results[i];
    assert_non_null(rename);
    assert_false(rename->is_pass);
    assert_true(rename->reads_failed > 0);
    assert_non_null(strstr(rename->difference.message, "after operation 1"));
    assert_true(r.writes_failed > 0);
    assert_true(r.is_undone);
    char *after = store_snapshot();
    assert_string_equal(after, before);
    assert_string_equal(marker_status(), "complete");
    free(before);
    free(after);
    kp_verify_report_free(&r);
}

/* ==== the commands (no server: usage errors and dry runs) ======================================== */

static void expect_run(const char *args, int status, const char *text)
{
    char *out = NULL;
    int rc = kp_test_run(args, &out);
    if (rc != status || (text && !strstr(out, text)))
        fail_msg("keyplan %s\n  exit %d (expected %d)\n%s", args, rc, status, out);
    free(out);
}

static void test_commands_check_their_arguments_and_dry_run_without_a_server(void **state)
{
    const char *model = "tests/fixtures/oracle/model.json", *data = "tests/fixtures/oracle/data";
    char args[1024];
    snprintf(args, sizeof args, "seed %s --db dynamodb", model);
    expect_run(args, 2, "--data DIR");
    snprintf(args, sizeof args, "seed %s --db dynamodb --data %s --target dynamo=http://127.0.0.1:1", model, data);
    expect_run(args, 2, "did you mean 'dynamodb'?");
    snprintf(args, sizeof args, "seed %s --db dynamodb --data %s --prefix 'no spaces'", model, data);
    expect_run(args, 2, "--prefix 'no spaces'");
    snprintf(args, sizeof args, "seed %s --db dynamodb --data %s --dry-run --target dynamodb=http://127.0.0.1:1", model, data);
    /* tag-products lists the products whose tags hold a tag: 3 element items (an adjacency list) */
    expect_run(args, 0, "32 records -> 35 items");
    snprintf(args, sizeof args, "seed %s --db dynamodb --data %s --export-items /dev/null", model, data);
    expect_run(args, 2, "add --dry-run");
    snprintf(args, sizeof args, "seed %s --db dynamodb --data %s --shard 4/3", model, data);
    expect_run(args, 2, "--shard takes I/N");
    snprintf(args, sizeof args, "seed %s --db dynamodb --data %s --shard 2/3 --dry-run", model, data);
    expect_run(args, 2, "leave --shard out");
    snprintf(args, sizeof args, "seed %s --db dynamodb --data %s --shard-wait 5", model, data);
    expect_run(args, 2, "give --shard I/N too");
    char export_path[] = "/tmp/kp-export-XXXXXX";
    int fd = mkstemp(export_path);
    assert_true(fd >= 0);
    close(fd);
    snprintf(args, sizeof args, "seed %s --db dynamodb --data %s --dry-run --export-items %s --prefix ci", model, data,
             export_path);
    expect_run(args, 0, "32 records -> 35 items");
    FILE *exported = fopen(export_path, "r");
    assert_non_null(exported);
    char line[8192];
    int lines = 0, elements = 0;
    while (fgets(line, sizeof line, exported)) {
        if (lines == 0) assert_non_null(strstr(line, "{\"table\":\"ci"));
        assert_non_null(strstr(line, "\"item\":{\"PK\":{\"S\":"));
        elements += strstr(line, "\"_el\":{\"S\":\"tagIds\"}") != NULL;
        lines++;
    }
    fclose(exported);
    remove(export_path);
    assert_int_equal(lines, 35);
    assert_int_equal(elements, 3);
    snprintf(args, sizeof args, "verify %s --db dynamodb --data %s --dry-run --seed 5", model, data);
    expect_run(args, 0, "customer-orders");
    snprintf(args, sizeof args, "verify %s --db dynamodb --data %s --samples 0", model, data);
    expect_run(args, 2, "--samples takes a whole number");
    expect_run("teardown --help", 0, "keyplan teardown examples/");
    expect_run("help verify", 0, "--junit FILE");
}

/* ==== the diff ==================================================================================== */

static void diff_of(const char *expected, const char *actual, const char *path, const char *e, const char *a)
{
    cJSON *x = cJSON_Parse(expected), *y = cJSON_Parse(actual);
    assert_non_null(x);
    assert_non_null(y);
    char *p, *et, *at;
    int rc = kp_json_diff(x, y, &p, &et, &at);
    if (!path) {
        if (rc != 0) fail_msg("%s vs %s: unexpected difference at %s", expected, actual, p);
    } else {
        assert_int_equal(rc, 1);
        assert_string_equal(p, path);
        assert_string_equal(et, e);
        assert_string_equal(at, a);
    }
    free(p);
    free(et);
    free(at);
    cJSON_Delete(x);
    cJSON_Delete(y);
}

static void test_diff_reports_the_first_difference_as_a_json_path(void **state)
{
    diff_of("{\"a\":[1,{\"b\":\"x\"}]}", "{\"a\":[1,{\"b\":\"y\"}]}", "$.a[1].b", "\"x\"", "\"y\"");
    diff_of("{\"a\":1,\"b\":2}", "{\"b\":2,\"a\":1}", NULL, NULL, NULL);
    diff_of("[1,2]", "[2,1]", "$[0]", "1", "2");
    diff_of("[1,2,3]", "[1,2]", "$[2]", "3", "(absent)");
    diff_of("{\"a\":null}", "{}", "$.a", "null", "(absent)");
    diff_of("{}", "{\"odd key\":1}", "$[\"odd key\"]", "(absent)", "1");
    diff_of("{\"a\":\"1\"}", "{\"a\":1}", "$.a", "\"1\"", "1");
}

static void test_diff_compares_numbers_exactly_not_through_doubles(void **state)
{
    cJSON *raw = cJSON_CreateRaw("20.00"), *num = cJSON_CreateNumber(20);
    char *p, *e, *a;
    assert_int_equal(kp_json_diff(raw, num, &p, &e, &a), 0);
    cJSON_Delete(raw);
    cJSON_Delete(num);
    raw = cJSON_CreateRaw("9007199254740993");
    cJSON *raw2 = cJSON_CreateRaw("9007199254740992");
    assert_int_equal(kp_json_diff(raw, raw2, &p, &e, &a), 1);
    assert_string_equal(e, "9007199254740993");
    free(p); free(e); free(a);
    cJSON_Delete(raw2);
    raw2 = cJSON_CreateRaw("9.007199254740993e15");
    assert_int_equal(kp_json_diff(raw, raw2, &p, &e, &a), 0);
    cJSON_Delete(raw);
    cJSON_Delete(raw2);
    char buf[64];
    cJSON *n = cJSON_CreateRaw("-0.000");
    assert_int_equal(kp_json_number_canonical(n, buf, sizeof buf), 0);
    assert_string_equal(buf, "0");
    cJSON_Delete(n);
    n = cJSON_CreateNumber(0.1);
    assert_int_equal(kp_json_number_canonical(n, buf, sizeof buf), 0);
    assert_string_equal(buf, "0.1");
    cJSON_Delete(n);
    n = cJSON_CreateRaw("1.5E-3");
    assert_int_equal(kp_json_number_canonical(n, buf, sizeof buf), 0);
    assert_string_equal(buf, "0.0015");
    cJSON_Delete(n);
}

/* kp_item_hash, which seeding and read-back compare: an object's members hash in name order
 * whatever their order (few members and more than 32), and a number hashes as the text
 * "%.17g" writes of it (a raw value of that text hashes the same). */
static void test_item_hash_sorts_members_and_writes_numbers_as_printf(void **state)
{
    (void)state;
    const double numbers[] = {0, -0.0, 1, -1, 42, -7e3, 1e15, 1e16, 99999999999999984.0, 1e17, -1e17, 123456789012345678.0,
                              0.5, -2.25, 1.0 / 3, 1e300, -1e-300, 9007199254740993.0, 4.05};
    for (size_t i = 0; i < sizeof numbers / sizeof *numbers; i++) {
        char text[64];
        snprintf(text, sizeof text, "%.17g", numbers[i]);
        cJSON *n = cJSON_CreateNumber(numbers[i]), *raw = cJSON_CreateRaw(text);
        assert_true(kp_item_hash(n) == kp_item_hash(raw));
        cJSON_Delete(n);
        cJSON_Delete(raw);
    }
    for (int count = 3; count <= 40; count += 37) {
        cJSON *forward = cJSON_CreateObject(), *backward = cJSON_CreateObject(), *changed = cJSON_CreateObject();
        for (int i = 0; i < count; i++) {
            char name[16];
            snprintf(name, sizeof name, "m%02d", i);
            cJSON_AddNumberToObject(forward, name, i);
            cJSON_AddNumberToObject(changed, name, i == count / 2 ? -1 : i);
            snprintf(name, sizeof name, "m%02d", count - 1 - i);
            cJSON_AddNumberToObject(backward, name, count - 1 - i);
        }
        assert_true(kp_item_hash(forward) == kp_item_hash(backward));
        assert_true(kp_item_hash(forward) != kp_item_hash(changed));
        cJSON_Delete(forward);
        cJSON_Delete(backward);
        cJSON_Delete(changed);
    }
}

int main(void)
{
#define T(name) cmocka_unit_test_setup_teardown(name, setup, teardown)
    const struct CMUnitTest tests[] = {
        T(test_seed_writes_every_item_once_and_reads_back_equal),
        T(test_seed_transforms_again_what_the_pre_scan_could_not_keep),
        T(test_seed_resumes_after_interruption_without_duplicates),
        T(test_shards_split_one_seed_and_the_last_completes_it),
        T(test_a_shard_resumes_from_its_own_checkpoint_and_others_wait_for_shard_1),
        T(test_seed_refuses_a_target_seeded_from_another_model_without_force),
        T(test_seed_refuses_a_foreign_target_without_force),
        T(test_seed_completes_the_schema_of_an_empty_target_without_a_marker),
        T(test_seed_dry_run_touches_nothing),
        T(test_seed_dry_run_exports_every_item_as_ndjson),
        T(test_seed_names_the_record_too_large_before_writing_anything),
        T(test_verify_passes_when_the_target_answers_like_the_oracle),
        T(test_verify_in_flight_reports_what_one_at_a_time_reports),
        T(test_verify_names_the_path_of_a_corrupted_value),
        T(test_a_run_stopped_by_the_server_counts_what_it_did_not_check),
        T(test_verify_notices_two_swapped_elements),
        T(test_verify_fails_on_an_extra_page),
        T(test_verify_accepts_an_empty_last_page_with_a_continuation),
        T(test_verify_reports_measured_requests_that_differ_from_the_claim),
        T(test_verify_excuses_fewer_steps_only_when_the_records_led_nowhere),
        T(test_verify_fails_a_page_that_reads_more_than_the_claimed_bound),
        T(test_verify_reads_every_container_back),
        T(test_verify_refuses_a_target_left_by_interrupted_writes),
        T(test_junit_output_is_well_formed_with_one_case_per_pattern),
        T(test_verify_writes_then_undoes_them_exactly),
        T(test_verify_writes_fail_a_wrong_items_claim),
        T(test_verify_writes_fail_a_wrong_requests_claim),
        T(test_verify_writes_ask_a_read_once_while_the_data_stays_the_same),
        T(test_verify_writes_fail_when_the_target_drops_them_and_are_still_undone),
        T(test_verify_writes_that_fail_half_way_are_still_undone),
        cmocka_unit_test(test_commands_check_their_arguments_and_dry_run_without_a_server),
        cmocka_unit_test(test_diff_reports_the_first_difference_as_a_json_path),
        cmocka_unit_test(test_item_hash_sorts_members_and_writes_numbers_as_printf),
        cmocka_unit_test(test_diff_compares_numbers_exactly_not_through_doubles),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
