/*
 * seed.c — the seeding pipeline: pre-scan, marker, batched asynchronous writes with a
 * resumable checkpoint, read-back (seed.h explains the whole protocol).
 *
 * Invariant: the marker's "acknowledged" never counts a record unless every item of
 * it, and of every record before it in the fixed order, was acknowledged by the
 * server — so a rerun that skips those records loses nothing; and a rerun first
 * re-checks, with read_back's counts, that the server still holds them.
 */
#include "migrations/seed.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "core/json.h"

static int nomem(kp_error *err) { return kp_error_set(err, KP_ERR_NOMEM, NULL, 0, 0, "out of memory"); }

static double now_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void iso_now(char out[32])
{
    time_t t = time(NULL);
    struct tm tm;
    gmtime_r(&t, &tm);
    strftime(out, 32, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

const char *kp_seed_action_name(kp_seed_action action)
{
    switch (action) {
    case KP_SEED_FRESH: return "fresh";
    case KP_SEED_RESUMED: return "resumed";
    case KP_SEED_ALREADY_DONE: return "already-complete";
    case KP_SEED_REPLACED: return "replaced";
    case KP_SEED_DRY_RUN: return "dry-run";
    case KP_SEED_EXPORTED: return "exported";
    }
    return "?";
}

/* ---- the data hash ------------------------------------------------------------------- */

static uint64_t fnv(uint64_t h, const void *data, size_t n)
{
    const unsigned char *p = data;
    for (size_t i = 0; i < n; i++) { h ^= p[i]; h *= 1099511628211ULL; }
    return h;
}

int kp_seed_data_hash(const kp_dataset *data, char out[17], kp_error *err)
{
    const kp_model *model = kp_dataset_model(data);
    uint64_t h = 1469598103934665603ULL;
    char *text = NULL;          /* one record's JSON, the buffer reused */
    size_t len = 0, cap = 0;
    for (size_t e = 0; e < model->entity_count; e++) {
        const kp_entity *entity = model->entities[e];
        h = fnv(h, entity->name, strlen(entity->name));
        h = fnv(h, "\n", 1);
        size_t n = 0;
        kp_record *const *records = kp_dataset_records(data, entity, &n);
        for (size_t i = 0; i < n; i++) {
            len = 0;
            if (kp_json_append_compact(&text, &len, &cap, records[i]->object)) { free(text); return nomem(err); }
            h = fnv(h, text, len);
            h = fnv(h, "\n", 1);
        }
    }
    free(text);
    snprintf(out, 17, "%016" PRIx64, h);
    return 0;
}

/* ---- the marker ------------------------------------------------------------------------ */

static const char *marker_string(const cJSON *marker, const char *name)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(marker, name);
    return cJSON_IsString(v) ? v->valuestring : NULL;
}

int kp_seed_marker_matches(const cJSON *marker, const kp_model *model, const char *data_hash, const kp_design *design,
                           char *why, size_t why_size)
{
    why[0] = '\0';
    const char *tool = marker_string(marker, "tool");
    if (!tool || strcmp(tool, "keyplan") != 0) {
        snprintf(why, why_size, "its marker was not written by keyplan");
        return 0;
    }
    const char *model_hash = marker_string(marker, "model_hash");
    if (!model_hash || strcmp(model_hash, model->hash) != 0) {
        const char *name = marker_string(marker, "model");
        snprintf(why, why_size, "it was seeded from model '%s' (hash %s), not from this model file (hash %s)",
                 name ? name : "?", model_hash ? model_hash : "none", model->hash);
        return 0;
    }
    const cJSON *scale = cJSON_GetObjectItemCaseSensitive(marker, "scale");
    double s = cJSON_IsNumber(scale) ? scale->valuedouble : 1;
    if (fabs(s - model->scale) > 1e-12 * fmax(1, fabs(s))) {
        snprintf(why, why_size, "it was seeded with --scale %g, not %g", s, model->scale);
        return 0;
    }
    const char *data = marker_string(marker, "data_hash");
    if (data_hash && (!data || strcmp(data, data_hash) != 0)) {
        snprintf(why, why_size, "it was seeded from other data (data hash %s; these files hash %s)", data ? data : "none",
                 data_hash);
        return 0;
    }
    const char *backend = marker_string(marker, "backend");
    if (backend && design->backend && strcmp(backend, design->backend->name) != 0) {
        snprintf(why, why_size, "it was seeded by the %s backend, not %s", backend, design->backend->name);
        return 0;
    }
    const char *candidate = marker_string(marker, "design");
    if (!candidate || strcmp(candidate, design->candidate) != 0) {
        snprintf(why, why_size, "it holds design '%s', not '%s'", candidate ? candidate : "?", design->candidate);
        return 0;
    }
    const char *layout = marker_string(marker, "design_hash");
    if (layout && design->fingerprint[0] && strcmp(layout, design->fingerprint) != 0) {
        snprintf(why, why_size, "it holds an older layout of design '%s' (layout %s, now %s): keyplan's proposal changed",
                 design->candidate, layout, design->fingerprint);
        return 0;
    }
    return 1;
}

int kp_seed_marker_set_status(const kp_backend *backend, kp_conn *conn, const kp_design *design, const cJSON *marker,
                              const char *status, kp_error *err)
{
    cJSON *copy = cJSON_Duplicate(marker, 1);
    if (!copy) return nomem(err);
    char now[32];
    iso_now(now);
    cJSON *s = cJSON_CreateString(status), *t = cJSON_CreateString(now);
    if (!s || !t) { cJSON_Delete(s); cJSON_Delete(t); cJSON_Delete(copy); return nomem(err); }
    if (cJSON_GetObjectItemCaseSensitive(copy, "status")) cJSON_ReplaceItemInObjectCaseSensitive(copy, "status", s);
    else cJSON_AddItemToObject(copy, "status", s);
    if (cJSON_GetObjectItemCaseSensitive(copy, "updated_at")) cJSON_ReplaceItemInObjectCaseSensitive(copy, "updated_at", t);
    else cJSON_AddItemToObject(copy, "updated_at", t);
    int rc = backend->write_marker(conn, design, copy, err);
    cJSON_Delete(copy);
    return rc;
}

int kp_seed_locate(const kp_backend *backend, kp_conn *conn, const kp_design_list *designs, const kp_design **out,
                   kp_target_state *state, kp_error *err)
{
    *out = NULL;
    memset(state, 0, sizeof *state);
    kp_target_state first = {0};
    int have_first = 0;
    for (size_t i = 0; i < designs->count; i++) {
        kp_target_state s = {0};
        if (backend->inspect(conn, designs->items[i], &s, err)) {
            if (have_first) cJSON_Delete(first.marker);
            return -1;
        }
        const char *candidate = s.marker ? marker_string(s.marker, "design") : NULL;
        if (candidate && strcmp(candidate, designs->items[i]->candidate) == 0) {
            if (have_first) cJSON_Delete(first.marker);
            *out = designs->items[i];
            *state = s;
            return 0;
        }
        if (!have_first) { first = s; have_first = 1; }
        else cJSON_Delete(s.marker);
    }
    if (have_first) {
        cJSON_Delete(first.marker);
        first.marker = NULL;
        *state = first;
    }
    return 0;
}

/* ---- report bookkeeping --------------------------------------------------------------- */

static kp_seed_container *container_of(kp_seed_report *r, const char *name)
{
    for (size_t i = 0; i < r->container_count; i++)
        if (strcmp(r->containers[i].name, name) == 0) return &r->containers[i];
    kp_seed_container *bigger = realloc(r->containers, (r->container_count + 1) * sizeof *bigger);
    if (!bigger) return NULL;
    r->containers = bigger;
    kp_seed_container *c = &r->containers[r->container_count];
    memset(c, 0, sizeof *c);
    c->name = strdup(name);
    if (!c->name) return NULL;
    c->read_back = -1;
    r->container_count++;
    return c;
}

void kp_seed_report_free(kp_seed_report *r)
{
    if (!r) return;
    for (size_t i = 0; i < r->container_count; i++) free(r->containers[i].name);
    free(r->containers);
    memset(r, 0, sizeof *r);
}

/* ---- step 1: the pre-scan ---------------------------------------------------------------- */

static int record_error(const kp_seed_options *o, const kp_record *rec, kp_error *err)
{
    if (!err->file[0] && o->data_dir) snprintf(err->file, sizeof err->file, "%s/%s.ndjson", o->data_dir, rec->entity->name);
    else if (!err->file[0]) snprintf(err->file, sizeof err->file, "%s.ndjson", rec->entity->name);
    if (err->line <= 0 && rec->line > 0) { err->line = (int)rec->line; err->column = 1; }
    if (err->code == KP_OK) err->code = KP_ERR_DATA;
    return -1;
}

/* The largest item a target takes: the backend's static limit (limits->max_item_bytes),
 * or a lower one the connected server announced (backend->server_item_limit). */
typedef struct item_limit {
    double bytes;               /* 0: no limit */
    const char *source;         /* "the 400 KB DynamoDB item limit"-like words for messages */
    char text[160];
} item_limit;

static void static_limit(const kp_backend *b, item_limit *limit)
{
    memset(limit, 0, sizeof *limit);
    limit->bytes = b->limits ? b->limits->max_item_bytes : 0;
    snprintf(limit->text, sizeof limit->text, "the %s item size limit", b->name);
    limit->source = limit->text;
}

static int transform_record(const kp_seed_options *o, const kp_backend *b, const kp_record *rec, kp_item_list *items,
                            const item_limit *limit, kp_error *err)
{
    kp_item_list_clear(items);
    kp_error_clear(err);
    if (b->transform(o->design, o->data, rec, items, err)) return record_error(o, rec, err);
    for (size_t i = 0; i < items->count; i++) {
        const kp_item *it = &items->items[i];
        if (!it->container || !it->body) {
            kp_error_set(err, KP_ERR_INTERNAL, NULL, 0, 0, "the %s backend's transform made an item without a container "
                         "or body for a %s record", b->name, rec->entity->name);
            return record_error(o, rec, err);
        }
        /* the generic guard: whatever a backend's own transform checks, no item above
         * the target's limit is ever sent (it would be refused, or half a record written) */
        if (limit && limit->bytes > 0 && (double)it->bytes > limit->bytes) {
            kp_error_set(err, KP_ERR_DATA, NULL, 0, 0,
                         "this %s record becomes a %zu-byte item in %s, above %s (%.0f bytes); it is not written: shrink "
                         "the record, or change the design so that it is split",
                         rec->entity->name, it->bytes, it->container, limit->source, limit->bytes);
            return record_error(o, rec, err);
        }
    }
    return 0;
}

/* Records that cannot be written (too large, refused by transform) are all listed, each
 * with its file:line, before anything is written; this many are printed at most. */
#define KP_SEED_LISTED_RECORDS 20

typedef struct bad_records {
    long count;
    kp_error first;
} bad_records;

/* Notes a record transform refused: data errors are collected (returns 0 to go on);
 * anything else stops the scan (returns -1 with err filled). */
static int note_bad_record(bad_records *bad, const kp_error *one, kp_error *err)
{
    if (one->code != KP_ERR_DATA) { *err = *one; return -1; }
    if (bad->count == 0) bad->first = *one;
    else {
        if (bad->count == 1) kp_error_print(stderr, &bad->first);
        if (bad->count < KP_SEED_LISTED_RECORDS) kp_error_print(stderr, one);
    }
    bad->count++;
    return 0;
}

/* After the scan: 0 when every record can be written; else -1 with err naming the
 * first record (and, when there are several, saying they are listed above). */
static int report_bad_records(const kp_backend *b, const bad_records *bad, kp_error *err)
{
    if (bad->count == 0) return 0;
    *err = bad->first;
    if (bad->count > 1) {
        char first[sizeof err->message];
        snprintf(first, sizeof first, "%s", bad->first.message);
        snprintf(err->message, sizeof err->message,
                 "%ld records cannot be written to %s (listed above%s); nothing was written. The first: %.300s",
                 bad->count, b->name, bad->count > KP_SEED_LISTED_RECORDS ? ", the first 20" : "", first);
    }
    return -1;
}

/* Transforms every record again and checks its items against a limit only the
 * connected server could tell (nothing is counted). */
static int check_sizes(const kp_seed_options *o, const kp_backend *b, const item_limit *limit, kp_error *err)
{
    kp_item_list items = {0};
    bad_records bad = {0};
    const kp_model *m = o->model;
    for (size_t e = 0; e < m->entity_count; e++) {
        size_t n = 0;
        kp_record *const *records = kp_dataset_records(o->data, m->entities[e], &n);
        for (size_t i = 0; i < n; i++) {
            kp_error one;
            if (transform_record(o, b, records[i], &items, limit, &one) && note_bad_record(&bad, &one, err)) {
                kp_item_list_free(&items);
                return -1;
            }
        }
    }
    kp_item_list_free(&items);
    return report_bad_records(b, &bad, err);
}

/* One line of --export-items: {"table": PREFIX+CONTAINER, "item": BODY}. */
static int export_item(const kp_seed_options *o, const kp_item *it, kp_error *err)
{
    char name[512];
    const char *prefix = o->target && o->target->prefix ? o->target->prefix : "";
    snprintf(name, sizeof name, "%s%s", prefix, it->container);
    cJSON *table = cJSON_CreateString(name);
    char *table_text = table ? cJSON_PrintUnformatted(table) : NULL;
    char *body_text = cJSON_PrintUnformatted(it->body);
    cJSON_Delete(table);
    if (!table_text || !body_text) { free(table_text); free(body_text); return nomem(err); }
    int rc = fprintf(o->export_items, "{\"table\":%s,\"item\":%s}\n", table_text, body_text) < 0;
    free(table_text);
    free(body_text);
    if (rc) return kp_error_set(err, KP_ERR_IO, NULL, 0, 0, "could not write the exported items: %s", strerror(errno));
    return 0;
}

/* The items the pre-scan made, kept for the writes (within kept_bytes, KP_SEED_KEPT_BYTES by
 * default): the records of a prefix of the fixed order (entities in model order, records in
 * file order). */
typedef struct kept_items {
    int is_keeping;             /* the pre-scan still keeps what it makes */
    kp_item_list items;         /* the kept records' items, in order; a taken item's body is NULL */
    size_t *first;              /* per kept record (in order): its first item in items; one more at the end */
    size_t records, cap;        /* kept records; first's room */
    size_t *base;               /* per entity: the order's number of its record 0 */
    size_t bytes, budget;
} kept_items;

static void kept_free(kept_items *k)
{
    kp_item_list_free(&k->items);
    free(k->first);
    free(k->base);
    memset(k, 0, sizeof *k);
}

/* Keeps a record's items (moved out of items) as the next record of the order; once the
 * budget is passed, or memory runs out, nothing more is kept (those are transformed again). */
static void kept_add(kept_items *k, kp_item_list *items)
{
    if (!k->is_keeping) return;
    size_t bytes = 0;
    for (size_t i = 0; i < items->count; i++) bytes += items->items[i].bytes;
    if (k->bytes + bytes > k->budget) { k->is_keeping = 0; return; }
    if (k->records + 2 > k->cap) {
        size_t cap = k->cap ? 2 * k->cap : 1024;
        size_t *bigger = realloc(k->first, cap * sizeof *bigger);
        if (!bigger) { k->is_keeping = 0; return; }
        k->first = bigger;
        k->cap = cap;
    }
    size_t at = k->items.count;
    for (size_t i = 0; i < items->count; i++) {
        kp_item *slot = kp_item_list_push(&k->items);
        if (!slot) {
            /* give back what this record moved: it is not kept */
            for (size_t j = at; j < k->items.count; j++) items->items[j - at] = k->items.items[j];
            k->items.count = at;
            k->is_keeping = 0;
            return;
        }
        *slot = items->items[i];
        memset(&items->items[i], 0, sizeof items->items[i]);
    }
    k->first[k->records] = at;
    k->first[++k->records] = k->items.count;
    k->bytes += bytes;
    items->count = 0;
}

/* Record i of entity e's kept items, moved into items (emptied first): 1, or 0 when they
 * were not kept or were taken already. */
static int kept_take(kept_items *k, size_t e, size_t i, kp_item_list *items)
{
    if (!k->base) return 0;   /* a dry run keeps nothing */
    size_t g = k->base[e] + i;
    if (g >= k->records) return 0;
    size_t from = k->first[g], to = k->first[g + 1];
    if (from < to && !k->items.items[from].body) return 0;
    kp_item_list_clear(items);
    for (size_t j = from; j < to; j++) {
        kp_item *slot = kp_item_list_push(items);
        if (!slot) return 0;   /* the rest stay kept; transform makes them all again */
        *slot = k->items.items[j];
        memset(&k->items.items[j], 0, sizeof k->items.items[j]);
    }
    return 1;
}

static int prescan(const kp_seed_options *o, const kp_backend *b, kp_seed_report *r, size_t *largest, kp_exporter *exporter,
                   kept_items *kept, kp_error *err)
{
    kp_item_list items = {0};
    int is_export = o->dry_run && o->export_items;
    const kp_model *m = o->model;
    item_limit limit;
    static_limit(b, &limit);
    bad_records bad = {0};
    *largest = 0;
    if (!o->dry_run && (kept->base = calloc(m->entity_count ? m->entity_count : 1, sizeof *kept->base))) {
        kept->is_keeping = 1;
        kept->budget = o->kept_bytes ? o->kept_bytes : KP_SEED_KEPT_BYTES;
        size_t order = 0;
        for (size_t e = 0; e < m->entity_count; e++) {
            kept->base[e] = order;
            order += kp_dataset_count(o->data, m->entities[e]);
        }
    }
    for (size_t e = 0; e < m->entity_count; e++) {
        size_t n = 0;
        kp_record *const *records = kp_dataset_records(o->data, m->entities[e], &n);
        r->records += (long)n;
        for (size_t i = 0; i < n; i++) {
            kp_error one;
            if (transform_record(o, b, records[i], &items, &limit, &one)) {
                kept->is_keeping = 0;
                if (note_bad_record(&bad, &one, err)) { kp_item_list_free(&items); return -1; }
                continue;
            }
            if (bad.count) continue;   /* only listing what cannot be written now */
            for (size_t k = 0; k < items.count; k++) {
                const kp_item *it = &items.items[k];
                kp_seed_container *c = container_of(r, it->container);
                if (!c) { kp_item_list_free(&items); return nomem(err); }
                c->items++;
                c->bytes += it->bytes;
                if (it->bytes > *largest) *largest = it->bytes;
                if (b->item_checksum) c->checksum ^= b->item_checksum(it->body);
                if (b->item_write_units) c->write_units += b->item_write_units(o->design, it);
                r->items++;
                if (is_export && export_item(o, it, err)) { kp_item_list_free(&items); return -1; }
                if (exporter && b->export_item(exporter, it, err)) { kp_item_list_free(&items); return -1; }
            }
            kept_add(kept, &items);
        }
    }
    kp_item_list_free(&items);
    if (report_bad_records(b, &bad, err)) return -1;
    for (size_t i = 0; i < r->container_count; i++) r->write_units += r->containers[i].write_units;
    return 0;
}

/* ---- step 4: the pipeline ---------------------------------------------------------------- */

typedef struct slot {
    size_t entity;
    long record;                /* index in the entity's file order */
    long outstanding;           /* items not yet acknowledged */
} slot;

typedef struct pipeline {
    const kp_seed_options *o;
    const kp_backend *b;
    kp_conn *conn;
    kp_seed_report *r;
    long *watermark;            /* per entity: records 0..w-1 fully acknowledged */
    long *totals;               /* per entity: records */
    slot *queue;                /* records in flight, in order */
    size_t q_start, q_end, q_cap;
    uint64_t q_seq0;            /* sequence number of queue[0] */
    uint64_t next_seq;
    long in_flight;             /* items submitted and not yet acked */
    int has_failed;
    kp_error failure;           /* the first item the server gave up on */
    int is_moved;               /* the watermark moved since the last marker write */
    double started, last_marker, last_bar;
    int is_tty;
    int shard, shards;          /* seed --shard I/N (shards 0: not sharded) */
    int all_records;            /* write every record, the shard's own or not (the final replay) */
    kept_items *kept;           /* what the pre-scan made, taken once */
} pipeline;

/* Does this run write record k (file order) of an entity? */
/* Requests in flight: the target's, else the database's for seeding, else the default. */
static int seed_in_flight(const kp_seed_options *o, const kp_backend *b)
{
    if (o->target && o->target->concurrency > 0) return o->target->concurrency;
    return b->limits && b->limits->seed_in_flight > 0 ? b->limits->seed_in_flight : KP_SEED_DEFAULT_IN_FLIGHT;
}

static int is_mine(const pipeline *p, long k) { return p->shards <= 1 || p->all_records || k % p->shards == p->shard - 1; }

static int queue_push(pipeline *p, size_t entity, long record, long outstanding, uint64_t *seq)
{
    if (p->q_start > 0 && p->q_start * 2 >= p->q_cap) {
        memmove(p->queue, p->queue + p->q_start, (p->q_end - p->q_start) * sizeof *p->queue);
        p->q_seq0 += p->q_start;
        p->q_end -= p->q_start;
        p->q_start = 0;
    }
    if (p->q_end == p->q_cap) {
        size_t cap = p->q_cap ? p->q_cap * 2 : 256;
        slot *bigger = realloc(p->queue, cap * sizeof *bigger);
        if (!bigger) return -1;
        p->queue = bigger;
        p->q_cap = cap;
    }
    p->queue[p->q_end] = (slot){entity, record, outstanding};
    *seq = p->q_seq0 + p->q_end;
    p->q_end++;
    return 0;
}

static void advance(pipeline *p)
{
    while (p->q_start < p->q_end && p->queue[p->q_start].outstanding == 0) {
        const slot *s = &p->queue[p->q_start];
        if (s->record + 1 > p->watermark[s->entity]) { p->watermark[s->entity] = s->record + 1; p->is_moved = 1; }
        p->q_start++;
    }
}

static void on_ack(void *ctx, const kp_item *item, int ok, const kp_error *err)
{
    pipeline *p = ctx;
    p->in_flight--;
    kp_seed_container *c = item->container ? container_of(p->r, item->container) : NULL;
    if (ok) {
        p->r->items_acknowledged++;
        if (c) c->acknowledged++;
    } else {
        p->r->items_failed++;
        if (!p->has_failed) {
            p->has_failed = 1;
            kp_error_set(&p->failure, err && err->code ? err->code : KP_ERR_TARGET, NULL, 0, 0,
                         "the server did not accept item %s of %s: %s; the checkpoint is kept, rerun the same command "
                         "to resume", item->id ? item->id : "?", item->container ? item->container : "?",
                         err && err->message[0] ? err->message : "no reason given");
        }
    }
    uint64_t tag = item->tag;
    if (tag >= p->q_seq0 + p->q_start && tag < p->q_seq0 + p->q_end) {
        slot *s = &p->queue[tag - p->q_seq0];
        if (ok && s->outstanding > 0) s->outstanding--;
        /* a failed item keeps its record (and so the watermark) where it is */
    }
}

static void draw_bar(pipeline *p, int is_final)
{
    if (!p->o->progress || !p->is_tty) return;
    double t = now_seconds();
    if (!is_final && t - p->last_bar < 0.1) return;
    p->last_bar = t;
    if (is_final) { fputs("\r\033[K", p->o->progress); fflush(p->o->progress); return; }
    long total = p->r->items > 0 ? p->r->items : 1;
    if (p->shards > 1 && !p->all_records) total = (total + p->shards - 1) / p->shards; /* about the shard's share */
    long done = p->r->items_resumed + p->r->items_acknowledged;
    double share = (double)done / (double)total;
    if (share > 1) share = 1;
    char bar[31];
    int filled = (int)(share * 30);
    for (int i = 0; i < 30; i++) bar[i] = i < filled ? '#' : '.';
    bar[30] = '\0';
    double elapsed = t - p->started;
    double rate = elapsed > 0 ? (double)p->r->items_acknowledged / elapsed : 0;
    char eta[32] = "--:--";
    if (rate > 0) {
        long left = (long)((double)(total - done) / rate);
        snprintf(eta, sizeof eta, "%ld:%02ld", left / 60, left % 60);
    }
    fprintf(p->o->progress, "\r  seeding [%s] %3d%%  %ld/%ld items  %.0f items/s  ETA %s\033[K", bar,
            (int)(share * 100), done, total, rate, eta);
    fflush(p->o->progress);
}

static cJSON *build_marker(const kp_seed_options *o, const kp_seed_report *r, const long *acknowledged,
                           const long *totals, const char *status)
{
    return kp_seed_marker_new(o->model, o->design, r->backend, r->data_hash, acknowledged, totals, r->containers,
                              r->container_count, status);
}

cJSON *kp_seed_marker_new(const kp_model *m, const kp_design *design, const char *backend, const char *data_hash,
                          const long *acknowledged, const long *totals, const kp_seed_container *containers,
                          size_t container_count, const char *status)
{
    cJSON *mk = cJSON_CreateObject();
    if (!mk) return NULL;
    char now[32];
    iso_now(now);
    cJSON_AddStringToObject(mk, "tool", "keyplan");
    cJSON_AddNumberToObject(mk, "schema_version", KP_MARKER_SCHEMA_VERSION);
    cJSON_AddStringToObject(mk, "model", m->name ? m->name : "");
    cJSON_AddStringToObject(mk, "model_hash", m->hash);
    cJSON_AddStringToObject(mk, "data_hash", data_hash);
    cJSON_AddNumberToObject(mk, "scale", m->scale);
    cJSON_AddStringToObject(mk, "backend", backend);
    cJSON_AddStringToObject(mk, "design", design->candidate);
    cJSON_AddStringToObject(mk, "design_hash", design->fingerprint);
    cJSON_AddStringToObject(mk, "status", status);
    cJSON *ack = cJSON_AddObjectToObject(mk, "acknowledged");
    cJSON *rec = cJSON_AddObjectToObject(mk, "records");
    for (size_t e = 0; ack && rec && e < m->entity_count; e++) {
        cJSON_AddNumberToObject(ack, m->entities[e]->name, (double)acknowledged[e]);
        cJSON_AddNumberToObject(rec, m->entities[e]->name, (double)totals[e]);
    }
    if (strcmp(status, "complete") == 0) {
        cJSON *items = cJSON_AddObjectToObject(mk, "items");
        for (size_t i = 0; items && i < container_count; i++)
            cJSON_AddNumberToObject(items, containers[i].name, (double)containers[i].items);
    }
    cJSON_AddStringToObject(mk, "updated_at", now);
    return mk;
}

/* Writes a marker: the shard's own (shard > 0) or the seed marker, which names the shard
 * count of a sharded seed. */
static int put_marker(pipeline *p, int shard, const long *acknowledged, const char *status, kp_error *err)
{
    cJSON *mk = build_marker(p->o, p->r, acknowledged, p->totals, status);
    if (!mk) return nomem(err);
    if (p->shards > 1) {
        char name[64];
        snprintf(name, sizeof name, "%d/%d", shard, p->shards);
        if (shard > 0) cJSON_AddStringToObject(mk, "shard", name);
        cJSON_AddNumberToObject(mk, "shards", p->shards);
    }
    int rc = p->b->write_marker(p->conn, p->o->design, mk, err);
    cJSON_Delete(mk);
    if (rc && err->code == KP_OK) err->code = KP_ERR_TARGET;
    return rc;
}

/* The run's checkpoint: the seed marker, or the shard's own when sharded (p->shard is 0
 * otherwise). */
static int write_marker(pipeline *p, const char *status, kp_error *err)
{
    int rc = put_marker(p, p->shard, p->watermark, status, err);
    p->last_marker = now_seconds();
    p->is_moved = 0;
    return rc;
}

/* Polls once; writes the marker when due. */
static int pump(pipeline *p, int timeout_ms, kp_error *err)
{
    int n = p->b->poll(p->conn, timeout_ms, err);
    if (n < 0) { if (err->code == KP_OK) err->code = KP_ERR_TARGET; return -1; }
    advance(p);
    draw_bar(p, 0);
    double every = p->o->checkpoint_seconds == 0 ? 5 : p->o->checkpoint_seconds;
    if (p->is_moved && now_seconds() - p->last_marker >= every && write_marker(p, "seeding", err)) return -1;
    return n;
}

/* Waits until nothing is in flight. */
static int drain(pipeline *p, kp_error *err)
{
    for (;;) {
        int n = pump(p, 200, err);
        if (n < 0) return -1;
        if (n == 0) {
            if (p->in_flight > 0)
                return kp_error_set(err, KP_ERR_INTERNAL, NULL, 0, 0, "the %s backend reports nothing in flight, but %ld "
                                    "items were never acknowledged", p->b->name, p->in_flight);
            return 0;
        }
    }
}

static int submit_batch(pipeline *p, kp_item_list *batch, kp_error *err)
{
    if (batch->count == 0) return 0;
    size_t n = batch->count;
    for (size_t i = 0; i < n; i++) {
        kp_seed_container *c = container_of(p->r, batch->items[i].container);
        if (!c) return nomem(err);
        c->sent++;
    }
    p->r->items_sent += (long)n;
    p->in_flight += (long)n;
    p->r->batches++;
    if (p->b->submit(p->conn, batch, on_ack, p, err)) {
        if (err->code == KP_OK) err->code = KP_ERR_TARGET;
        return -1;
    }
    kp_item_list_clear(batch); /* what the backend left in the list is ours */
    advance(p);
    return 0;
}

/* Record i of entity e's items: the pre-scan's, else transformed again. */
static int record_items(pipeline *p, size_t e, size_t i, const kp_record *rec, kp_item_list *items, kp_error *err)
{
    if (kept_take(p->kept, e, i, items)) return 0;
    return transform_record(p->o, p->b, rec, items, NULL, err);
}

static int run_pipeline(pipeline *p, kp_error *err)
{
    const kp_seed_options *o = p->o;
    const kp_model *m = o->model;
    int batch_size = o->batch_size > 0 ? o->batch_size
                     : p->b->limits && p->b->limits->max_batch_write > 0 ? p->b->limits->max_batch_write : 25;
    int in_flight = seed_in_flight(o, p->b);
    long window_items = (long)(o->window > 0 ? o->window : 2 * in_flight) * batch_size;
    kp_item_list items = {0}, batch = {0};
    int rc = 0;
    for (size_t e = 0; e < m->entity_count && rc == 0; e++) {
        size_t n = 0;
        kp_record *const *records = kp_dataset_records(o->data, m->entities[e], &n);
        long skip = p->watermark[e] < (long)n ? p->watermark[e] : (long)n;
        for (long i = 0; i < skip && rc == 0; i++) {
            if (!is_mine(p, i)) continue;
            p->r->records_skipped++;
            rc = record_items(p, e, (size_t)i, records[i], &items, err);
            for (size_t k = 0; rc == 0 && k < items.count; k++) {
                kp_seed_container *c = container_of(p->r, items.items[k].container);
                if (!c) rc = nomem(err);
                else c->resumed++;
                p->r->items_resumed++;
            }
        }
        for (size_t i = (size_t)skip; i < n && rc == 0; i++) {
            if (o->interrupted && *o->interrupted) {
                rc = kp_error_set(err, KP_ERR_TARGET, NULL, 0, 0, "interrupted; the checkpoint is kept, rerun the same "
                                  "command to resume");
                break;
            }
            if (p->has_failed) break;
            if (!is_mine(p, (long)i)) continue;
            if ((rc = record_items(p, e, i, records[i], &items, err))) break;
            uint64_t seq;
            if (queue_push(p, e, (long)i, (long)items.count, &seq)) { rc = nomem(err); break; }
            p->r->records_read++;
            for (size_t k = 0; k < items.count && rc == 0; k++) {
                kp_item *slot_item = kp_item_list_push(&batch);
                if (!slot_item) { rc = nomem(err); break; }
                *slot_item = items.items[k];
                slot_item->tag = seq;
                memset(&items.items[k], 0, sizeof items.items[k]);
                if (batch.count >= (size_t)batch_size) {
                    while (rc == 0 && !p->has_failed && p->in_flight + (long)batch.count > window_items) {
                        int left = pump(p, 100, err);
                        if (left < 0) rc = -1;
                    }
                    if (rc == 0 && !p->has_failed) rc = submit_batch(p, &batch, err);
                }
            }
            items.count = 0;
            if (rc == 0) rc = pump(p, 0, err) < 0 ? -1 : 0;
        }
    }
    if (rc == 0 && !p->has_failed) rc = submit_batch(p, &batch, err);
    kp_item_list_free(&items);
    /* drain whatever is in flight, even after an error, so the checkpoint is as far as it can be */
    kp_error drain_err;
    kp_error_clear(&drain_err);
    if (drain(p, rc ? &drain_err : err)) {
        if (rc == 0) rc = -1;
    }
    kp_item_list_free(&batch);
    draw_bar(p, 1);
    if (rc == 0 && p->has_failed) {
        *err = p->failure;
        rc = -1;
    }
    return rc;
}

/* ---- step 5: read back ---------------------------------------------------------------------- */

static int read_back(pipeline *p, kp_error *err)
{
    kp_readback rb = {0};
    if (p->b->read_back(p->conn, p->o->design, &rb, err)) {
        if (err->code == KP_OK) err->code = KP_ERR_TARGET;
        return -1;
    }
    kp_seed_report *r = p->r;
    for (size_t i = 0; i < r->container_count; i++) r->containers[i].read_back = 0;
    for (size_t i = 0; i < rb.count; i++) {
        kp_seed_container *c = container_of(r, rb.entries[i].container);
        if (!c) { kp_readback_free(&rb); return nomem(err); }
        c->read_back = rb.entries[i].items;
        c->read_back_checksum = rb.entries[i].checksum;
    }
    kp_readback_free(&rb);
    r->items_read_back = 0;
    int rc = 0;
    for (size_t i = 0; i < r->container_count; i++) {
        kp_seed_container *c = &r->containers[i];
        if (c->read_back < 0) c->read_back = 0;
        r->items_read_back += c->read_back;
        if (rc) continue;
        if (c->read_back != c->items)
            rc = kp_error_set(err, KP_ERR_CHECK, NULL, 0, 0, "container '%s': transform made %ld items, %ld were "
                              "acknowledged (%ld by earlier runs), but the target holds %ld; something else writes "
                              "there, or items were lost — reseed with --force", c->name, c->items,
                              c->acknowledged + c->resumed, c->resumed, c->read_back);
        else if (p->b->item_checksum && c->read_back_checksum != c->checksum)
            rc = kp_error_set(err, KP_ERR_CHECK, NULL, 0, 0, "container '%s': the target holds the expected %ld items, "
                              "but their content differs from what transform made (checksum %016" PRIx64 " read back, "
                              "%016" PRIx64 " expected) — reseed with --force", c->name, c->items,
                              c->read_back_checksum, c->checksum);
    }
    return rc;
}

/* Does some container hold fewer items than transform made (after read_back)? */
static int has_missing_items(const kp_seed_report *r)
{
    for (size_t i = 0; i < r->container_count; i++)
        if (r->containers[i].read_back >= 0 && r->containers[i].read_back < r->containers[i].items) return 1;
    return 0;
}

/* ---- resuming: the checkpoint re-checked against the server ---------------------------------- */

/* A resumed run skips the records below the watermark, so the server must still hold
 * every item of them: a server restarted without writes it had acknowledged (Cassandra
 * with a periodic commit log, a restored backup) would otherwise leave a hole that only
 * the final read-back reports. Counts what the server holds per container (read_back)
 * against the items of the acknowledged records; when a container holds fewer, the
 * checkpoint is not trusted and the run replays from the start (puts are idempotent,
 * so nothing is duplicated). Sets *is_replayed. */
static int recheck_checkpoint(pipeline *p, int *is_replayed, kp_error *err)
{
    const kp_seed_options *o = p->o;
    const kp_model *m = o->model;
    kp_seed_report *r = p->r;
    *is_replayed = 0;
    kp_item_list items = {0};
    for (size_t i = 0; i < r->container_count; i++) r->containers[i].resumed = 0;   /* scratch: expected items */
    for (size_t e = 0; e < m->entity_count; e++) {
        size_t n = 0;
        kp_record *const *records = kp_dataset_records(o->data, m->entities[e], &n);
        for (long i = 0; i < p->watermark[e] && (size_t)i < n; i++) {
            if (!is_mine(p, i)) continue;
            if (transform_record(o, p->b, records[i], &items, NULL, err)) { kp_item_list_free(&items); return -1; }
            for (size_t k = 0; k < items.count; k++) {
                kp_seed_container *c = container_of(r, items.items[k].container);
                if (!c) { kp_item_list_free(&items); return nomem(err); }
                c->resumed++;
            }
        }
    }
    kp_item_list_free(&items);
    kp_readback rb = {0};
    if (p->b->read_back(p->conn, o->design, &rb, err)) {
        if (err->code == KP_OK) err->code = KP_ERR_TARGET;
        return -1;
    }
    const char *short_name = NULL;
    long held = 0, expected = 0;
    for (size_t i = 0; i < r->container_count && !short_name; i++) {
        long have = 0;
        for (size_t k = 0; k < rb.count; k++)
            if (strcmp(rb.entries[k].container, r->containers[i].name) == 0) have = rb.entries[k].items;
        if (have < r->containers[i].resumed) {
            short_name = r->containers[i].name;
            held = have;
            expected = r->containers[i].resumed;
        }
    }
    if (short_name) {
        snprintf(r->note, sizeof r->note, "the checkpoint said %ld items of '%s' were acknowledged, but the target holds "
                 "%ld: replayed every record from the start (puts by key never duplicate)", expected, short_name, held);
        if (o->progress) fprintf(o->progress, "keyplan seed: %s\n", r->note);
        for (size_t e = 0; e < m->entity_count; e++) p->watermark[e] = 0;
        *is_replayed = 1;
    }
    kp_readback_free(&rb);
    for (size_t i = 0; i < r->container_count; i++) r->containers[i].resumed = 0;
    return 0;
}

/* ---- the run ------------------------------------------------------------------------------- */

static void print_summary(const kp_seed_options *o, const kp_seed_report *r, int ok)
{
    if (!o->progress) return;
    if (r->action == KP_SEED_EXPORTED) {
        fprintf(o->progress, "exported: %s on %s, %ld records as %ld items in %zu container%s, for %s, into %s; no server "
                "was touched\n", r->design, r->backend, r->records, r->items, r->container_count,
                r->container_count == 1 ? "" : "s", o->backend ? o->backend->export_format : o->design->backend->export_format,
                o->export_dir);
        return;
    }
    if (r->action == KP_SEED_DRY_RUN) {
        fprintf(o->progress, "dry run: %s on %s would write %ld records as %ld items in %zu container%s (%ld batches",
                r->design, r->backend, r->records, r->items, r->container_count, r->container_count == 1 ? "" : "s",
                r->batches);
        if (r->write_unit) fprintf(o->progress, ", about %.0f %s", r->write_units, r->write_unit);
        fprintf(o->progress, "); nothing was touched\n");
        return;
    }
    double rate = r->seconds > 0 ? (double)r->items_acknowledged / r->seconds : 0;
    if (ok && r->shard_count > 1 && !r->is_complete)
        fprintf(o->progress, "seeded shard %d/%d of %s on %s (%s): %ld of the %ld records -> sent %ld items, acknowledged "
                "%ld, resumed %ld (%.1f s, %.0f items/s); %d of %d shards complete: the last one to finish reads the target "
                "back\n", r->shard_index, r->shard_count, r->design, r->backend, kp_seed_action_name(r->action),
                r->records_read + r->records_skipped, r->records, r->items_sent, r->items_acknowledged, r->items_resumed,
                r->seconds, rate, r->shards_complete, r->shard_count);
    else if (ok)
        fprintf(o->progress, "seeded %s on %s (%s): %ld records -> %ld items in %zu container%s; sent %ld, "
                "acknowledged %ld, resumed %ld, read back %ld (%.1f s, %.0f items/s)\n", r->design, r->backend,
                kp_seed_action_name(r->action), r->records, r->items, r->container_count,
                r->container_count == 1 ? "" : "s", r->items_sent,
                r->items_acknowledged, r->items_resumed, r->items_read_back, r->seconds, rate);
    else
        fprintf(o->progress, "seed of %s on %s stopped: %ld of %ld records handled (%ld skipped as already acknowledged), "
                "%ld items sent, %ld acknowledged, %ld not accepted (%.1f s)\n", r->design, r->backend,
                r->records_skipped + r->records_read, r->records, r->records_skipped, r->items_sent,
                r->items_acknowledged, r->items_failed, r->seconds);
}

static int refuse(const kp_seed_options *o, const kp_seed_report *r, const char *why, kp_error *err)
{
    return kp_error_set(err, KP_ERR_USAGE, NULL, 0, 0, "refusing to seed design '%s' on %s%s%s: %s; pass --force to drop "
                        "what is there and seed from the start, or use another --prefix", o->design->candidate,
                        r->backend, o->target && o->target->prefix && o->target->prefix[0] ? " under prefix " : "",
                        o->target && o->target->prefix && o->target->prefix[0] ? o->target->prefix : "", why);
}

static int load_watermark(const cJSON *marker, const kp_model *m, long *watermark)
{
    const cJSON *ack = cJSON_GetObjectItemCaseSensitive(marker, "acknowledged");
    for (size_t e = 0; e < m->entity_count; e++) {
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(ack, m->entities[e]->name);
        watermark[e] = cJSON_IsNumber(v) && v->valuedouble > 0 ? (long)v->valuedouble : 0;
    }
    return 0;
}

/* ---- shards (seed.h, "Shards") ------------------------------------------------------------- */

static int marker_shards(const cJSON *marker)
{
    const cJSON *n = cJSON_GetObjectItemCaseSensitive(marker, "shards");
    return cJSON_IsNumber(n) ? (int)n->valuedouble : 0;
}

/* Is the seed marker one this shard works under: this model, data and design, "complete",
 * or "seeding" in as many shards? */
static int is_shard_setup(const pipeline *p, const cJSON *marker, char *why, size_t why_size)
{
    const kp_seed_options *o = p->o;
    if (!marker || !kp_seed_marker_matches(marker, o->model, p->r->data_hash, o->design, why, why_size)) return 0;
    const char *status = marker_string(marker, "status");
    if (status && strcmp(status, "complete") == 0) return 1;
    if (!status || strcmp(status, "seeding") != 0) {
        snprintf(why, why_size, "its marker says '%s'", status ? status : "(no status)");
        return 0;
    }
    if (marker_shards(marker) != p->shards) {
        if (marker_shards(marker) > 1) snprintf(why, why_size, "it is being seeded in %d shards, not %d", marker_shards(marker), p->shards);
        else snprintf(why, why_size, "a seed without --shard is in progress on it");
        return 0;
    }
    return 1;
}

/* Shards 2..N: inspect until shard 1 has set the target up (or the wait ends). While shard
 * 1 creates the keyspace and tables, an inspect can meet a schema in the making (Cassandra:
 * "table keyplan_marker does not exist" for a table listed a moment before, "Unknown CF"):
 * server trouble is not fatal here, only at the end of the wait. `inspected` is the first
 * inspect's result (-1: it failed, err says why). */
static int await_setup(pipeline *p, kp_target_state *state, int inspected, kp_error *err)
{
    const kp_seed_options *o = p->o;
    double limit = o->shard_wait_seconds > 0 ? o->shard_wait_seconds : 600, start = now_seconds();
    int told = 0, failing = inspected != 0;
    kp_error last = *err;
    if (failing) kp_error_clear(err);
    char why[400];
    while ((failing || !is_shard_setup(p, state->marker, why, sizeof why)) && now_seconds() - start < limit) {
        if (o->interrupted && *o->interrupted)
            return kp_error_set(err, KP_ERR_TARGET, NULL, 0, 0, "interrupted while waiting for shard 1/%d; nothing was "
                                "written", p->shards);
        if (!told && o->progress) {
            fprintf(o->progress, "keyplan seed: shard %d/%d: waiting up to %.0f s for shard 1/%d to set the target up\n",
                    p->shard, p->shards, limit, p->shards);
            told = 1;
        }
        struct timespec pause = {0, 500 * 1000000L};
        nanosleep(&pause, NULL);
        cJSON_Delete(state->marker);
        memset(state, 0, sizeof *state);
        failing = p->b->inspect(p->conn, o->design, state, err) != 0;
        if (failing && err->code != KP_ERR_TARGET && err->code != KP_OK) return -1; /* not server trouble: out of memory */
        if (failing) { last = *err; kp_error_clear(err); cJSON_Delete(state->marker); memset(state, 0, sizeof *state); }
    }
    if (failing) {
        *err = last;
        if (err->code == KP_OK) err->code = KP_ERR_TARGET;
        return -1;
    }
    return 0;
}

/* Shard i's own marker when it belongs to this seed (this model, data and design; *out
 * NULL otherwise), and its status. */
static int read_shard_marker(pipeline *p, int i, cJSON **out, const char **status, kp_error *err)
{
    char name[64], why[400];
    snprintf(name, sizeof name, "%d/%d", i, p->shards);
    *status = NULL;
    if (p->b->read_marker(p->conn, p->o->design, name, out, err)) { if (err->code == KP_OK) err->code = KP_ERR_TARGET; return -1; }
    *status = *out ? marker_string(*out, "status") : NULL;
    if (!*status || !kp_seed_marker_matches(*out, p->o->model, p->r->data_hash, p->o->design, why, sizeof why)) {
        cJSON_Delete(*out);
        *out = NULL;
        *status = NULL;
    }
    return 0;
}

/* How many of the N shard markers say complete for this model, data and design. */
static int count_complete_shards(pipeline *p, int *complete, kp_error *err)
{
    *complete = 0;
    for (int i = 1; i <= p->shards; i++) {
        cJSON *mk = NULL;
        const char *status;
        if (read_shard_marker(p, i, &mk, &status, err)) return -1;
        if (status && strcmp(status, "complete") == 0) (*complete)++;
        cJSON_Delete(mk);
    }
    return 0;
}

/* The shard's own checkpoint: its marker's watermark when it belongs to this seed; sets
 * *is_done when it says complete. */
static int load_shard_checkpoint(pipeline *p, int *is_resumed, int *is_done, kp_error *err)
{
    cJSON *mk = NULL;
    const char *status;
    *is_resumed = *is_done = 0;
    if (read_shard_marker(p, p->shard, &mk, &status, err)) return -1;
    if (mk) {
        load_watermark(mk, p->o->model, p->watermark);
        *is_resumed = 1;
        *is_done = strcmp(status, "complete") == 0;
    }
    cJSON_Delete(mk);
    return 0;
}

static int seed_run(const kp_seed_options *o, kp_seed_report *r, kept_items *kept, kp_error *err)
{
    memset(r, 0, sizeof *r);
    kp_error_clear(err);
    const kp_backend *b = o->backend ? o->backend : o->design->backend;
    r->backend = b->name;
    r->design = o->design->candidate;
    r->items_read_back = -1;
    r->write_unit = b->limits && b->item_write_units ? b->limits->write_unit : NULL;
    snprintf(r->model_hash, sizeof r->model_hash, "%s", o->model->hash);
    double started = now_seconds();

    /* the design's containers first, in its order */
    for (size_t i = 0; i < o->design->container_count; i++) {
        kp_seed_container *c = container_of(r, o->design->containers[i].name);
        if (!c) return nomem(err);
        c->kind = o->design->containers[i].kind;
    }
    if (kp_seed_data_hash(o->data, r->data_hash, err)) return -1;
    size_t largest = 0;
    kp_exporter *exporter = NULL;
    if (o->export_dir) {
        if (!b->export_open)
            return kp_error_set(err, KP_ERR_USAGE, NULL, 0, 0, "%s has no bulk-load export", b->name);
        if (b->export_open(o->design, o->export_dir, o->target && o->target->prefix ? o->target->prefix : "", &exporter, err))
            return -1;
    }
    if (prescan(o, b, r, &largest, exporter, kept, err)) {
        if (exporter) b->export_close(exporter, NULL, 0, NULL, 0, NULL);
        r->seconds = r->prepare_seconds = now_seconds() - started;
        return -1;
    }
    if (exporter) {
        /* the marker seeding leaves once complete: every record acknowledged */
        size_t entities = o->model->entity_count;
        long *totals = calloc(entities ? entities : 1, sizeof *totals);
        for (size_t e = 0; totals && e < entities; e++) totals[e] = (long)kp_dataset_count(o->data, o->model->entities[e]);
        cJSON *mk = totals ? build_marker(o, r, totals, totals, "complete") : NULL;
        free(totals);
        if (!mk) { b->export_close(exporter, NULL, 0, NULL, 0, NULL); return nomem(err); }
        int rc = b->export_close(exporter, mk, 1, r->note, sizeof r->note, err);
        cJSON_Delete(mk);
        if (rc) return -1;
    }
    r->prepare_seconds = now_seconds() - started;
    int batch_size = o->batch_size > 0 ? o->batch_size
                     : b->limits && b->limits->max_batch_write > 0 ? b->limits->max_batch_write : 25;
    if (o->dry_run) {
        r->action = exporter ? KP_SEED_EXPORTED : KP_SEED_DRY_RUN;
        r->batches = (r->items + batch_size - 1) / batch_size;
        r->seconds = now_seconds() - started;
        print_summary(o, r, 1);
        return 0;
    }

    size_t entities = o->model->entity_count;
    pipeline p;
    memset(&p, 0, sizeof p);
    p.o = o;
    p.b = b;
    p.r = r;
    p.kept = kept;
    p.watermark = calloc(entities ? entities : 1, sizeof *p.watermark);
    p.totals = calloc(entities ? entities : 1, sizeof *p.totals);
    if (!p.watermark || !p.totals) { free(p.watermark); free(p.totals); return nomem(err); }
    for (size_t e = 0; e < entities; e++) p.totals[e] = (long)kp_dataset_count(o->data, o->model->entities[e]);
    p.is_tty = o->progress && isatty(fileno(o->progress));
    if (o->shard_count > 1) {
        p.shard = r->shard_index = o->shard_index;
        p.shards = r->shard_count = o->shard_count;
    }

    int rc = 0, is_own_conn = 0;
    if (p.shards > 1 && (p.shard < 1 || p.shard > p.shards))
        rc = kp_error_set(err, KP_ERR_USAGE, NULL, 0, 0, "--shard %d/%d: the shard is a number from 1 to %d", p.shard,
                          p.shards, p.shards);
    else if (p.shards > 1 && !b->read_marker)
        rc = kp_error_set(err, KP_ERR_USAGE, NULL, 0, 0, "%s cannot seed in shards (no read_marker)", b->name);
    else if (p.shards > 1 && p.shard > 1 && o->force)
        rc = kp_error_set(err, KP_ERR_USAGE, NULL, 0, 0, "--force belongs to shard 1/%d, which sets the target up; "
                          "shard %d/%d never drops anything", p.shards, p.shard, p.shards);
    if (rc) { free(p.watermark); free(p.totals); return -1; }
    kp_target_state state = {0};
    p.conn = o->conn;
    if (!p.conn) {
        kp_target target = *o->target;
        target.concurrency = seed_in_flight(o, b);
        if (b->connect(&target, &p.conn, err)) { if (err->code == KP_OK) err->code = KP_ERR_TARGET; rc = -1; }
        else is_own_conn = 1;
    }
    int inspected = rc == 0 ? b->inspect(p.conn, o->design, &state, err) : 0;
    if (rc == 0 && p.shard > 1 && (inspected == 0 || err->code == KP_ERR_TARGET || err->code == KP_OK))
        rc = await_setup(&p, &state, inspected, err);
    else if (rc == 0 && inspected) { if (err->code == KP_OK) err->code = KP_ERR_TARGET; rc = -1; }
    /* a limit only the server knows (Cassandra's mutation size), before anything is
     * dropped, created or written */
    if (rc == 0 && b->server_item_limit) {
        item_limit limit;
        static_limit(b, &limit);
        double server = 0;
        if (b->server_item_limit(p.conn, &server, err)) { if (err->code == KP_OK) err->code = KP_ERR_TARGET; rc = -1; }
        else if (server > 0 && (limit.bytes <= 0 || server < limit.bytes) && (double)largest > server) {
            limit.bytes = server;
            snprintf(limit.text, sizeof limit.text, "the largest item this %s server accepts", b->name);
            rc = check_sizes(o, b, &limit, err);
        }
    }

    /* step 2: decide */
    int is_fresh = 0;
    if (rc == 0) {
        char why[400] = "";
        const char *status = state.marker ? marker_string(state.marker, "status") : NULL;
        int is_ours = 0;
        if (state.marker) {
            is_ours = kp_seed_marker_matches(state.marker, o->model, r->data_hash, o->design, why, sizeof why);
            if (is_ours && status && strcmp(status, "writes-in-progress") == 0) {
                is_ours = 0;
                snprintf(why, sizeof why, "a `keyplan verify --writes` on it did not finish undoing its changes");
            } else if (is_ours && (!status || (strcmp(status, "seeding") != 0 && strcmp(status, "complete") != 0))) {
                is_ours = 0;
                snprintf(why, sizeof why, "its marker has an unknown status '%s'", status ? status : "(none)");
            } else if (is_ours && p.shards > 1) {
                is_ours = is_shard_setup(&p, state.marker, why, sizeof why);
            }
        }
        if (p.shard > 1 && !is_ours) {
            /* only shard 1 creates, replaces or refuses with --force */
            if (state.marker)
                rc = kp_error_set(err, KP_ERR_USAGE, NULL, 0, 0, "shard %d/%d: refusing to seed design '%s' on %s: %s; "
                                  "shard 1/%d sets the target up (with --force it starts over)", p.shard, p.shards,
                                  o->design->candidate, r->backend, why, p.shards);
            else
                rc = kp_error_set(err, KP_ERR_TARGET, NULL, 0, 0, "shard %d/%d: shard 1/%d did not set the target up "
                                  "within %.0f s (it creates the containers and the seed marker): start it, then rerun "
                                  "this shard", p.shard, p.shards, p.shards,
                                  o->shard_wait_seconds > 0 ? o->shard_wait_seconds : 600);
        } else if (!state.exists && !state.marker) {
            r->action = KP_SEED_FRESH;
            is_fresh = 1;
        } else if (is_ours) {
            r->action = strcmp(status, "complete") == 0 ? KP_SEED_ALREADY_DONE : KP_SEED_RESUMED;
            load_watermark(state.marker, o->model, p.watermark);
        } else if (!state.marker && state.exists && state.is_empty) {
            /* created by keyplan, stopped before its marker was written (a kill between
             * CreateTable and the marker: faults_kill.sh found it), or an empty container
             * of someone else's: either way nothing to lose — seeding an empty container
             * overwrites nothing, and its marker is written before the first item. The
             * schema is applied again (every backend's apply_schema accepts what exists):
             * a kill in the middle of it leaves only some of a design's tables, indexes
             * or collections (faults_kill.sh found it on Cassandra) */
            r->action = KP_SEED_FRESH;
            is_fresh = 1;
        } else {
            if (!state.marker)
                snprintf(why, sizeof why, "the containers of this design already exist %s",
                         state.is_foreign ? "and keyplan did not create them" : "and hold data but no keyplan marker");
            if (!o->force) {
                rc = refuse(o, r, why, err);
            } else {
                snprintf(r->note, sizeof r->note, "dropped what the target held (%s) because of --force", why);
                if (o->progress) fprintf(o->progress, "keyplan seed: %s\n", r->note);
                if (b->drop(p.conn, o->design, err)) { if (err->code == KP_OK) err->code = KP_ERR_TARGET; rc = -1; }
                r->action = KP_SEED_REPLACED;
                is_fresh = 1;
            }
        }
    }
    cJSON_Delete(state.marker);
    state.marker = NULL;
    int is_shard_done = 0;
    if (rc == 0 && p.shards > 1 && r->action != KP_SEED_ALREADY_DONE) {
        /* the shard's own checkpoint, not the seed marker's (shard 1 keeps that one at 0) */
        for (size_t e = 0; e < entities; e++) p.watermark[e] = 0;
        int is_resumed = 0;
        if (!is_fresh && load_shard_checkpoint(&p, &is_resumed, &is_shard_done, err)) rc = -1;
        r->action = is_resumed ? KP_SEED_RESUMED : is_fresh ? r->action : KP_SEED_FRESH;
    }

    /* step 3: schema and marker */
    if (rc == 0 && is_fresh && b->apply_schema(p.conn, o->design, err)) { if (err->code == KP_OK) err->code = KP_ERR_TARGET; rc = -1; }
    if (rc == 0 && is_fresh && p.shards > 1 && put_marker(&p, 0, p.watermark, "seeding", err)) rc = -1;
    if (rc == 0 && r->action != KP_SEED_ALREADY_DONE && !is_shard_done && write_marker(&p, "seeding", err)) rc = -1;
    if (rc != 0 && err->code == KP_ERR_TARGET && !strstr(err->message, "rerun")) {
        /* server trouble while setting the target up: this run wrote no record yet, and a
         * rerun takes over what was created (an empty target without a marker is fresh) */
        size_t n = strlen(err->message);
        snprintf(err->message + n, sizeof err->message - n,
                 "; this run wrote no record yet: rerun the same command to resume once the server answers");
    }
    p.started = now_seconds();
    p.last_marker = p.started;
    r->setup_seconds = p.started - started - r->prepare_seconds;
    if (rc == 0 && r->action == KP_SEED_RESUMED) {
        long done = 0;
        for (size_t e = 0; e < entities; e++) done += p.watermark[e];
        if (p.shards > 1) { /* the shard's own records below its watermark */
            done = 0;
            for (size_t e = 0; e < entities; e++)
                if (p.watermark[e] >= p.shard) done += (p.watermark[e] - p.shard) / p.shards + 1;
        }
        int is_replayed = 0;
        if (done > 0 && recheck_checkpoint(&p, &is_replayed, err)) rc = -1;
        else if (!is_replayed)
            snprintf(r->note, sizeof r->note, "resumed after %ld records an earlier run had acknowledged%s", done,
                     done > 0 ? " (the target still holds their items)" : "");
    }

    /* step 4 */
    if (rc == 0 && r->action != KP_SEED_ALREADY_DONE) {
        rc = run_pipeline(&p, err);
        kp_error marker_err;
        if (rc == 0 && !is_shard_done) rc = write_marker(&p, "complete", err);
        else if (rc != 0 && p.conn && p.b->write_marker && write_marker(&p, "seeding", &marker_err) == 0) {
            /* the checkpoint is saved; the original error stands */
        }
    } else if (rc == 0) {
        for (size_t i = 0; i < r->container_count; i++) r->containers[i].resumed = r->containers[i].items;
        r->records_skipped = r->records;
        r->items_resumed = r->items;
    }

    double written = now_seconds();
    r->write_seconds = written - p.started;

    /* a shard's part is done: the last shard to finish reads the whole target back */
    int is_final = 1;
    if (rc == 0 && p.shards > 1 && r->action != KP_SEED_ALREADY_DONE) {
        rc = count_complete_shards(&p, &r->shards_complete, err);
        is_final = r->shards_complete == p.shards;
        if (rc == 0 && !is_final)
            snprintf(r->note, sizeof r->note, "shard %d/%d is complete; %d of %d shards are: the last one to finish reads "
                     "the target back and marks it complete", p.shard, p.shards, r->shards_complete, p.shards);
    }

    /* step 5 */
    if (rc == 0 && is_final) rc = read_back(&p, err);
    if (rc && err->code == KP_ERR_CHECK && (p.shards > 1 || (r->action != KP_SEED_FRESH && r->action != KP_SEED_REPLACED)) &&
        has_missing_items(r)) {
        /* an earlier run's checkpoint counted items the target no longer holds (lost by the
         * server after it acknowledged them): replay every record once — puts by key never
         * duplicate — and read back again */
        char was[512];
        snprintf(was, sizeof was, "%s", err->message);
        snprintf(r->note, sizeof r->note, "the target held fewer items than the checkpoint had acknowledged (%.300s); "
                 "replayed every record from the start", was);
        if (o->progress) fprintf(o->progress, "keyplan seed: %s\n", r->note);
        for (size_t e = 0; e < entities; e++) p.watermark[e] = 0;
        for (size_t i = 0; i < r->container_count; i++) r->containers[i].resumed = 0;
        r->items_resumed = r->records_skipped = 0;
        p.q_seq0 += p.q_end;   /* fresh sequence numbers: nothing of the first pass is in flight */
        p.q_start = p.q_end = 0;
        kp_error_clear(err);
        p.all_records = 1;   /* a shard replays the others' records too */
        rc = run_pipeline(&p, err);
        if (rc == 0) rc = write_marker(&p, "complete", err);
        if (rc == 0) rc = read_back(&p, err);
    }
    /* the seed marker says complete once the whole target is read back equal */
    if (rc == 0 && is_final && p.shards > 1 && r->action != KP_SEED_ALREADY_DONE) rc = put_marker(&p, 0, p.totals, "complete", err);
    r->is_complete = rc == 0 && is_final;
    r->seconds = now_seconds() - started;
    r->read_back_seconds = r->seconds - (written - started);
    print_summary(o, r, rc == 0);
    if (is_own_conn && p.conn) b->disconnect(p.conn);
    free(p.queue);
    free(p.watermark);
    free(p.totals);
    return rc;
}

int kp_seed_run(const kp_seed_options *o, kp_seed_report *r, kp_error *err)
{
    kept_items kept = {0};
    int rc = seed_run(o, r, &kept, err);
    kept_free(&kept);
    return rc;
}

/* ---- output ------------------------------------------------------------------------------- */

void kp_seed_report_print(FILE *out, const kp_seed_report *r)
{
    fprintf(out, "%s on %s — %s", r->design, r->backend, kp_seed_action_name(r->action));
    if (r->shard_count > 1) fprintf(out, " (shard %d/%d; %d of %d shards complete)", r->shard_index, r->shard_count,
                                    r->is_complete ? r->shard_count : r->shards_complete, r->shard_count);
    fprintf(out, "\n");
    if (r->note[0]) fprintf(out, "  %s\n", r->note);
    size_t w = 9;
    for (size_t i = 0; i < r->container_count; i++)
        if (strlen(r->containers[i].name) > w) w = strlen(r->containers[i].name);
    if (r->action == KP_SEED_DRY_RUN || r->action == KP_SEED_EXPORTED) {
        fprintf(out, "  %-*s %12s %14s %14s\n", (int)w, "container", "items", "bytes",
                r->write_unit ? r->write_unit : "write units");
        for (size_t i = 0; i < r->container_count; i++) {
            const kp_seed_container *c = &r->containers[i];
            char units[32] = "-";
            if (r->write_unit) snprintf(units, sizeof units, "%.0f", c->write_units);
            fprintf(out, "  %-*s %12ld %14" PRIu64 " %14s\n", (int)w, c->name, c->items, c->bytes, units);
        }
        fprintf(out, "  %ld records -> %ld items in %ld batches", r->records, r->items, r->batches);
        if (r->write_unit) fprintf(out, "; about %.0f %s to write", r->write_units, r->write_unit);
        fprintf(out, "\n");
        const kp_backend *backend = r->backend ? kp_backend_find(r->backend) : NULL;
        const kp_limits *lim = backend ? backend->limits : NULL;
        const kp_region_prices *price = lim && lim->pricing && lim->pricing->region_count ? &lim->pricing->regions[0] : NULL;
        if (r->write_unit && price && price->per_million_writes > 0)
            fprintf(out, "  on-demand cost of the writes: about $%.4f (at $%.3f per million %s, %s)\n",
                    r->write_units / 1e6 * price->per_million_writes, price->per_million_writes, r->write_unit, price->region);
        return;
    }
    fprintf(out, "  %-*s %10s %10s %10s %12s %10s\n", (int)w, "container", "items", "resumed", "sent", "acknowledged",
            "read back");
    for (size_t i = 0; i < r->container_count; i++) {
        const kp_seed_container *c = &r->containers[i];
        char rb[32] = "-";
        if (c->read_back >= 0) snprintf(rb, sizeof rb, "%ld", c->read_back);
        fprintf(out, "  %-*s %10ld %10ld %10ld %12ld %10s%s\n", (int)w, c->name, c->items, c->resumed, c->sent,
                c->acknowledged, rb, c->read_back >= 0 && c->read_back != c->items ? "  MISMATCH" : "");
    }
}

cJSON *kp_seed_report_to_json(const kp_seed_report *r)
{
    cJSON *o = cJSON_CreateObject();
    if (!o) return NULL;
    cJSON_AddNumberToObject(o, "schema_version", KP_SCHEMA_VERSION);
    cJSON_AddStringToObject(o, "database", r->backend);
    cJSON_AddStringToObject(o, "design", r->design);
    cJSON_AddStringToObject(o, "action", kp_seed_action_name(r->action));
    cJSON_AddStringToObject(o, "model_hash", r->model_hash);
    cJSON_AddStringToObject(o, "data_hash", r->data_hash);
    cJSON_AddBoolToObject(o, "complete", r->is_complete);
    if (r->shard_count > 1) {
        cJSON *shard = cJSON_AddObjectToObject(o, "shard");
        cJSON_AddNumberToObject(shard, "index", r->shard_index);
        cJSON_AddNumberToObject(shard, "of", r->shard_count);
        cJSON_AddNumberToObject(shard, "complete", r->is_complete ? r->shard_count : r->shards_complete);
    }
    cJSON_AddNumberToObject(o, "records", (double)r->records);
    cJSON_AddNumberToObject(o, "records_skipped", (double)r->records_skipped);
    cJSON_AddNumberToObject(o, "records_sent", (double)r->records_read);
    cJSON_AddNumberToObject(o, "items", (double)r->items);
    cJSON_AddNumberToObject(o, "items_resumed", (double)r->items_resumed);
    cJSON_AddNumberToObject(o, "items_sent", (double)r->items_sent);
    cJSON_AddNumberToObject(o, "items_acknowledged", (double)r->items_acknowledged);
    cJSON_AddNumberToObject(o, "items_failed", (double)r->items_failed);
    if (r->items_read_back >= 0) cJSON_AddNumberToObject(o, "items_read_back", (double)r->items_read_back);
    else cJSON_AddNullToObject(o, "items_read_back");
    cJSON_AddNumberToObject(o, "batches", (double)r->batches);
    if (r->write_unit) {
        cJSON_AddStringToObject(o, "write_unit", r->write_unit);
        cJSON_AddNumberToObject(o, "write_units", r->write_units);
    }
    cJSON_AddNumberToObject(o, "seconds", r->seconds);
    cJSON *phases = cJSON_AddObjectToObject(o, "phases");
    if (phases) {
        cJSON_AddNumberToObject(phases, "prepare", r->prepare_seconds);
        cJSON_AddNumberToObject(phases, "setup", r->setup_seconds);
        cJSON_AddNumberToObject(phases, "write", r->write_seconds);
        cJSON_AddNumberToObject(phases, "read_back", r->read_back_seconds);
    }
    if (r->note[0]) cJSON_AddStringToObject(o, "note", r->note);
    cJSON *cs = cJSON_AddArrayToObject(o, "containers");
    for (size_t i = 0; cs && i < r->container_count; i++) {
        const kp_seed_container *c = &r->containers[i];
        cJSON *x = cJSON_CreateObject();
        if (!x) break;
        cJSON_AddStringToObject(x, "name", c->name);
        if (c->kind) cJSON_AddStringToObject(x, "kind", c->kind);
        cJSON_AddNumberToObject(x, "items", (double)c->items);
        cJSON_AddNumberToObject(x, "bytes", (double)c->bytes);
        if (r->write_unit) cJSON_AddNumberToObject(x, "write_units", c->write_units);
        cJSON_AddNumberToObject(x, "resumed", (double)c->resumed);
        cJSON_AddNumberToObject(x, "sent", (double)c->sent);
        cJSON_AddNumberToObject(x, "acknowledged", (double)c->acknowledged);
        if (c->read_back >= 0) cJSON_AddNumberToObject(x, "read_back", (double)c->read_back);
        else cJSON_AddNullToObject(x, "read_back");
        cJSON_AddItemToArray(cs, x);
    }
    return o;
}
