/*
 * migrate.c — `keyplan migrate`: a seeded target carried from one model version to the
 * next (migrate.h says the steps and why each can be repeated).
 *
 * Invariant: the progress file names the last step finished; a step begins only after
 * the one before it is recorded, and each step's writes are idempotent, so a rerun
 * after kill -9 or a server restart ends with the same target as an uninterrupted run.
 */
#include "migrations/migrate.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "backends/emit.h"
#include "core/arena.h"
#include "core/data.h"
#include "core/json.h"
#include "migrations/seed.h"

enum phase { PH_NONE, PH_SCHEMA, PH_WRITE, PH_DELETE, PH_FINAL, PH_DONE };
static const char *const phase_names[] = {"none", "schema", "write", "delete", "final", "done"};

#define BATCH_ITEMS 500

typedef struct progress {
    enum phase phase;
    long cursor;                /* write: NEW records whose items are all acknowledged */
    int emptied;                /* a container was rebuilt: every item is written */
    char old_design[128];
    char note[2048];
} progress;

static double now_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static int nomem(kp_error *err) { return kp_error_set(err, KP_ERR_NOMEM, NULL, 0, 0, "out of memory"); }


/* ---- the progress file ---------------------------------------------------------------------------- */

static int load_progress(const kp_migrate_options *o, progress *p, int *found, kp_error *err)
{
    memset(p, 0, sizeof *p);
    *found = 0;
    char path[1200];
    snprintf(path, sizeof path, "%s/progress.json", o->state_dir);
    if (access(path, F_OK) != 0) return 0; /* no migration under way here */
    char *text = NULL;
    size_t len = 0;
    if (kp_file_read(path, 1 << 20, &text, &len, err)) return -1;
    cJSON *j = cJSON_Parse(text);
    free(text);
    const char *from = kp_json_str(j, "from"), *to = kp_json_str(j, "to"), *db = kp_json_str(j, "backend");
    if (!j || !*from || !*to || !*db)
        return cJSON_Delete(j), kp_error_set(err, KP_ERR_USAGE, path, 0, 0, "this progress file is not one keyplan "
                                             "migrate wrote; remove it only if no migration of this target is under way");
    const char *phase = kp_json_str(j, "phase");
    if (strcmp(phase, "done") == 0 && (strcmp(from, o->old_model->hash) || strcmp(to, o->new_model->hash))) {
        cJSON_Delete(j); /* a finished migration between other versions: this state directory is free again */
        return 0;
    }
    if (strcmp(from, o->old_model->hash) || strcmp(to, o->new_model->hash) || strcmp(db, o->backend->name)) {
        int rc = kp_error_set(err, KP_ERR_USAGE, path, 0, 0, "this state belongs to a migration of %s from model %s to %s; "
                              "finish that one (same models and --state), or give another --state", db, from, to);
        cJSON_Delete(j);
        return rc;
    }
    for (int i = 0; i <= PH_DONE; i++)
        if (strcmp(phase, phase_names[i]) == 0) p->phase = (enum phase)i;
    p->cursor = (long)kp_json_num(j, "cursor");
    p->emptied = kp_json_num(j, "emptied") != 0;
    snprintf(p->old_design, sizeof p->old_design, "%s", kp_json_str(j, "old_design"));
    snprintf(p->note, sizeof p->note, "%s", kp_json_str(j, "note"));
    cJSON_Delete(j);
    *found = 1;
    return 0;
}

static int save_progress(const kp_migrate_options *o, const progress *p, kp_error *err)
{
    cJSON *j = cJSON_CreateObject();
    if (!j) return nomem(err);
    cJSON_AddStringToObject(j, "tool", "keyplan migrate");
    cJSON_AddStringToObject(j, "backend", o->backend->name);
    cJSON_AddStringToObject(j, "from", o->old_model->hash);
    cJSON_AddStringToObject(j, "to", o->new_model->hash);
    cJSON_AddStringToObject(j, "old_design", p->old_design);
    cJSON_AddStringToObject(j, "new_design", o->new_design->candidate);
    cJSON_AddStringToObject(j, "phase", phase_names[p->phase]);
    cJSON_AddNumberToObject(j, "cursor", (double)p->cursor);
    cJSON_AddNumberToObject(j, "emptied", p->emptied);
    cJSON_AddStringToObject(j, "note", p->note);
    char *text = cJSON_Print(j);
    cJSON_Delete(j);
    if (!text) return nomem(err);
    int rc = kp_emit_write_file(NULL, o->state_dir, "progress.json", text, strlen(text), err);
    free(text);
    return rc;
}

/* ---- records read back, merged by key ------------------------------------------------------------- */

typedef struct merged {
    kp_arena arena;
    kp_strmap by_key;           /* entity + key text -> index + 1 in objects[entity] */
    cJSON **objects[256];
    size_t count[256], cap[256];
} merged;

static int on_record(void *ctx, const kp_entity *entity, cJSON *object, kp_error *err)
{
    merged *m = ctx;
    if (entity->index >= 256) { cJSON_Delete(object); return kp_error_set(err, KP_ERR_MODEL, NULL, 0, 0, "more than 256 entities"); }
    kp_text key = {0};
    kp_text_printf(&key, "%zu", entity->index);
    for (size_t k = 0; k < entity->key_count; k++) {
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(object, entity->key[k]->name);
        char *t = v ? cJSON_PrintUnformatted(v) : NULL;
        kp_text_printf(&key, "\x1f%s", t ? t : "");
        free(t);
    }
    if (key.is_failed) { free(key.data); cJSON_Delete(object); return nomem(err); }
    size_t e = entity->index;
    size_t at = (size_t)(uintptr_t)kp_strmap_get(&m->by_key, key.data);
    if (at) {
        /* the same record from another place: the union of what each holds */
        cJSON *have = m->objects[e][at - 1];
        while (object->child) {
            cJSON *member = cJSON_DetachItemViaPointer(object, object->child);
            if (cJSON_GetObjectItemCaseSensitive(have, member->string)) cJSON_Delete(member);
            else cJSON_AddItemToObject(have, member->string, member);
        }
        cJSON_Delete(object);
        free(key.data);
        return 0;
    }
    if (m->count[e] == m->cap[e]) {
        size_t cap = m->cap[e] ? m->cap[e] * 2 : 256;
        cJSON **bigger = realloc(m->objects[e], cap * sizeof *bigger);
        if (!bigger) { free(key.data); cJSON_Delete(object); return nomem(err); }
        m->objects[e] = bigger;
        m->cap[e] = cap;
    }
    m->objects[e][m->count[e]++] = object;
    const char *kept = kp_arena_strdup(&m->arena, key.data); /* the map keeps the key, not a copy */
    int rc = kept ? kp_strmap_put(&m->arena, &m->by_key, kept, (void *)(uintptr_t)m->count[e]) : -1;
    free(key.data);
    return rc ? nomem(err) : 0;
}

static void merged_free(merged *m)
{
    for (size_t e = 0; e < 256; e++) {
        for (size_t i = 0; i < m->count[e]; i++) cJSON_Delete(m->objects[e][i]);
        free(m->objects[e]);
    }
    kp_arena_free(&m->arena);
}

/* Orders an entity's records by key text, so the files do not depend on scan order. */
static const kp_entity *sort_entity;
static int by_key(const void *a, const void *b)
{
    const cJSON *x = *(const cJSON *const *)a, *y = *(const cJSON *const *)b;
    for (size_t k = 0; k < sort_entity->key_count; k++) {
        const kp_attr *attr = sort_entity->key[k];
        const cJSON *u = cJSON_GetObjectItemCaseSensitive(x, attr->name), *v = cJSON_GetObjectItemCaseSensitive(y, attr->name);
        if (!u || !v) { if (u != v) return u ? 1 : -1; continue; }
        int c = kp_data_compare(attr->type.kind, u, v, NULL);
        if (c) return c;
    }
    return 0;
}

/* Writes DIR/<Entity>.ndjson for every entity of `model` from objects (NULL: none). */
static int write_records(const kp_model *model, const char *dir, cJSON **const *objects, const size_t *counts, kp_error *err)
{
    if (kp_emit_make_directory(dir, err)) return -1;
    for (size_t e = 0; e < model->entity_count; e++) {
        kp_text t = {0};
        kp_text_append(&t, "");
        for (size_t i = 0; objects[e] && i < counts[e]; i++) {
            char *line = cJSON_PrintUnformatted(objects[e][i]);
            if (!line) { free(t.data); return nomem(err); }
            kp_text_append(&t, line);
            kp_text_append(&t, "\n");
            free(line);
        }
        if (t.is_failed) { free(t.data); return nomem(err); }
        char name[600];
        snprintf(name, sizeof name, "%s.ndjson", model->entities[e]->name);
        int rc = kp_emit_write_file(NULL, dir, name, t.data, t.len, err);
        free(t.data);
        if (rc) return -1;
    }
    return 0;
}

/* Step 1: the live records, through OLD's design, into DIR/old. */
static int snapshot(const kp_migrate_options *o, kp_conn *conn, const kp_design *old_design, const char *dir, kp_error *err)
{
    merged m = {0};
    int rc = o->backend->read_records(conn, old_design, on_record, &m, err);
    for (size_t e = 0; rc == 0 && e < o->old_model->entity_count; e++) {
        sort_entity = o->old_model->entities[e];
        if (m.count[e] > 1) qsort(m.objects[e], m.count[e], sizeof *m.objects[e], by_key);
    }
    if (rc == 0) rc = write_records(o->old_model, dir, m.objects, m.count, err);
    merged_free(&m);
    return rc;
}

/* ---- step 2: OLD's records as records of NEW ------------------------------------------------------ */

static const kp_attr *old_source(const kp_entity *old_entity, const kp_attr *attr)
{
    const kp_attr *same = kp_entity_attr(old_entity, attr->name);
    if (attr->renamed_from) {
        const kp_attr *was = kp_entity_attr(old_entity, attr->renamed_from);
        if (was) return was;
    }
    return same;
}

int kp_migrate_check_models(const kp_model *old_model, const kp_model *new_model, kp_error *err)
{
    if (strcmp(old_model->name ? old_model->name : "", new_model->name ? new_model->name : "") != 0)
        return kp_error_set(err, KP_ERR_MODEL, new_model->file, 0, 0, "the new version is model \"%s\", the old one \"%s\": a "
                            "migration keeps the model's name (it names the table, database or keyspace)",
                            new_model->name ? new_model->name : "", old_model->name ? old_model->name : "");
    for (size_t e = 0; e < new_model->entity_count; e++) {
        const kp_entity *ne = new_model->entities[e], *oe = kp_model_entity(old_model, ne->name);
        if (!oe) continue; /* a new entity: no records yet */
        for (size_t a = 0; a < ne->attr_count; a++) {
            const kp_attr *attr = ne->attrs[a];
            if (attr->is_optional || attr->copy_of || attr->derived || attr->backfill) continue;
            const kp_attr *src = old_source(oe, attr);
            if (src && !src->is_optional) continue;
            return kp_error_set(err, KP_ERR_MODEL, new_model->file, attr->pos.line, attr->pos.column,
                                "%s.%s is required, but %s: give it a \"backfill\" value (what existing records get), "
                                "say \"renamed_from\" if it is an attribute renamed, or make it optional", ne->name,
                                attr->name, src ? "it was optional in the old version, so records may lack it"
                                                : "records of the old version have no such attribute");
        }
    }
    return 0;
}

/* NEW's records, in OLD's order, into DIR (computed attributes left out: loading computes them). */
static int change_records(const kp_migrate_options *o, const kp_dataset *old_data, const char *dir, kp_error *err)
{
    const kp_model *nm = o->new_model;
    cJSON **objects[256] = {0};
    size_t counts[256] = {0};
    int rc = 0;
    for (size_t e = 0; e < nm->entity_count && e < 256 && rc == 0; e++) {
        const kp_entity *ne = nm->entities[e], *oe = kp_model_entity(o->old_model, ne->name);
        if (!oe) continue;
        size_t n = 0;
        kp_record *const *records = kp_dataset_records(old_data, oe, &n);
        objects[e] = calloc(n ? n : 1, sizeof *objects[e]);
        if (!objects[e]) { rc = nomem(err); break; }
        for (size_t i = 0; i < n; i++) {
            cJSON *obj = cJSON_CreateObject();
            if (!obj) { rc = nomem(err); break; }
            objects[e][counts[e]++] = obj;
            for (size_t a = 0; a < ne->attr_count; a++) {
                const kp_attr *attr = ne->attrs[a];
                if (attr->copy_of || attr->derived) continue;
                const kp_attr *src = old_source(oe, attr);
                const cJSON *v = src ? kp_record_get(records[i], src) : NULL;
                cJSON *copy = v ? kp_data_copy(v, NULL) : attr->backfill ? kp_data_copy(attr->backfill, nm->doc) : NULL;
                if (copy) cJSON_AddItemToObject(obj, attr->name, copy);
            }
        }
    }
    if (rc == 0) rc = write_records(nm, dir, objects, counts, err);
    for (size_t e = 0; e < 256; e++) {
        for (size_t i = 0; i < counts[e]; i++) cJSON_Delete(objects[e][i]);
        free(objects[e]);
    }
    return rc;
}

/* Writes a loaded dataset back to DIR with its computed attributes (the data to verify with). */
static int write_dataset(const kp_dataset *data, const char *dir, kp_error *err)
{
    const kp_model *m = kp_dataset_model(data);
    cJSON **objects[256] = {0};
    size_t counts[256] = {0};
    int rc = 0;
    for (size_t e = 0; e < m->entity_count && e < 256 && rc == 0; e++) {
        size_t n = 0;
        kp_record *const *records = kp_dataset_records(data, m->entities[e], &n);
        objects[e] = calloc(n ? n : 1, sizeof *objects[e]);
        if (!objects[e]) rc = nomem(err);
        for (size_t i = 0; rc == 0 && i < n; i++) objects[e][counts[e]++] = records[i]->object;
    }
    if (rc == 0) rc = write_records(m, dir, objects, counts, err);
    for (size_t e = 0; e < 256; e++) free(objects[e]);
    return rc;
}

/* ---- items ---------------------------------------------------------------------------------------- */

/* id -> checksum of every item a design makes of a dataset; calls `each` with every item when given. */
typedef struct item_set {
    kp_arena arena;
    kp_strmap ids;              /* id -> uint64_t * (checksum) */
    long count;
} item_set;

static uint64_t checksum_of(const kp_backend *b, const cJSON *body)
{
    return b->item_checksum ? b->item_checksum(body) : kp_item_hash(body);
}

typedef struct collect_ctx {
    const kp_backend *b;
    item_set *set;
} collect_ctx;

static int collect(void *p, kp_item *item, long record_index, kp_error *err)
{
    (void)record_index;
    collect_ctx *c = p;
    if (!item->id) return nomem(err);
    uint64_t *sum = kp_arena_alloc(&c->set->arena, sizeof *sum);
    if (!sum) return nomem(err);
    *sum = checksum_of(c->b, item->body);
    const char *id = kp_arena_strdup(&c->set->arena, item->id); /* the map keeps the key, not a copy */
    if (!id || kp_strmap_put(&c->set->arena, &c->set->ids, id, sum)) return nomem(err);
    c->set->count++;
    return 0;
}

static int item_set_build(const kp_backend *b, const kp_design *design, const kp_dataset *data, item_set *out, kp_error *err)
{
    memset(out, 0, sizeof *out);
    collect_ctx c = {b, out};
    return kp_design_each_item(b, design, data, collect, &c, err);
}

/* ---- step 4 and 5: writes and deletes, throttled --------------------------------------------------- */

typedef struct writer {
    const kp_migrate_options *o;
    kp_conn *conn;
    const item_set *old_items;  /* NULL: write every item */
    kp_item_list batch;
    long batch_last_record;     /* the last record with items in the batch */
    long failed;
    kp_error first_failure;
    progress *p;
    kp_migrate_report *r;
    long total_items;           /* for the progress line */
    long done_items;            /* written (or deleted) by this step of this run */
    double started, last_saved, last_line;
} writer;

static void on_ack(void *ctx, const kp_item *item, int ok, const kp_error *err)
{
    (void)item;
    writer *w = ctx;
    if (!ok && !w->failed++ && err) w->first_failure = *err;
}

static void throttle(writer *w, long done)
{
    if (w->o->rate <= 0) return;
    double due = w->started + (double)done / w->o->rate, now = now_seconds();
    if (due > now) {
        double wait = due - now;
        struct timespec ts = {(time_t)wait, (long)((wait - (double)(time_t)wait) * 1e9)};
        nanosleep(&ts, NULL);
    }
}

static void progress_line(writer *w, const char *what, int is_last)
{
    FILE *out = w->o->progress;
    if (!out) return;
    double now = now_seconds();
    int tty = isatty(fileno(out));
    if (!is_last && (!tty || now - w->last_line < 0.2)) return;
    w->last_line = now;
    double elapsed = now - w->started;
    double rate = elapsed > 0 ? (double)w->done_items / elapsed : 0;
    long left = w->total_items - w->done_items;
    char eta[32] = "-";
    if (rate > 0 && left > 0) snprintf(eta, sizeof eta, "%.0f s", (double)left / rate);
    fprintf(out, "%s  migrate %s: %s %ld/%ld items  %.0f items/s  ETA %s%s", tty ? "\r" : "", w->o->backend->name, what,
            w->done_items, w->total_items, rate, eta, tty && !is_last ? "\033[K" : "\n");
    fflush(out);
}

/* After a batch of n items the server took: counted, shown, and an interruption honoured. */
static int batch_done(writer *w, long n, const char *what, kp_error *err)
{
    w->done_items += n;
    progress_line(w, what, 0);
    if (w->o->interrupted && *w->o->interrupted)
        return kp_error_set(err, KP_ERR_TARGET, NULL, 0, 0, "interrupted; run the same command again to resume");
    return 0;
}

/* Is this item of NEW's design on the target already (OLD made it, same identity and content)? */
static int is_unchanged(const kp_backend *b, const item_set *old_items, const kp_item *item)
{
    const uint64_t *sum = old_items && item->id ? kp_strmap_get(&old_items->ids, item->id) : NULL;
    return sum && *sum == checksum_of(b, item->body);
}

/* Is this item of OLD's design one to delete: NEW lacks it, in a container NEW keeps (the
 * containers NEW drops go whole in the last step)? */
static int is_stale(const item_set *new_items, const kp_design *new_design, const kp_item *item)
{
    return item->id && !kp_strmap_get(&new_items->ids, item->id) && kp_design_container(new_design, item->container);
}

/* Sends the batch and waits for every ack; then the records up to batch_last_record are done. */
static int flush(writer *w, kp_error *err)
{
    const kp_backend *b = w->o->backend;
    long n = (long)w->batch.count;
    if (n == 0) return 0;
    throttle(w, w->done_items + n);
    if (b->submit(w->conn, &w->batch, on_ack, w, err)) return -1;
    kp_item_list_clear(&w->batch);
    for (;;) {
        int left = b->poll(w->conn, 1000, err);
        if (left < 0) return -1;
        if (left == 0) break;
    }
    if (w->failed) {
        *err = w->first_failure;
        if (err->code == KP_OK) kp_error_set(err, KP_ERR_TARGET, NULL, 0, 0, "the server refused an item");
        return -1;
    }
    w->r->items_written += n;
    w->p->cursor = w->batch_last_record + 1;
    double now = now_seconds();
    if (now - w->last_saved >= 1.0) {
        if (save_progress(w->o, w->p, err)) return -1;
        w->last_saved = now;
    }
    return batch_done(w, n, "writing", err);
}

static int write_item(void *ctx, kp_item *item, long record_index, kp_error *err)
{
    writer *w = ctx;
    if (record_index < w->p->cursor) return 0;
    /* a batch ends only between records, so the cursor never splits one */
    if (w->batch.count >= BATCH_ITEMS && record_index != w->batch_last_record && flush(w, err)) return -1;
    if (is_unchanged(w->o->backend, w->old_items, item)) {
        w->r->items_unchanged++;
        w->total_items--;
        return 0;
    }
    kp_item *to = kp_item_list_push(&w->batch);
    if (!to) return nomem(err);
    *to = *item;
    memset(item, 0, sizeof *item); /* the batch owns it now */
    w->batch_last_record = record_index;
    return 0;
}

typedef struct deleter {
    writer *w;
    const item_set *new_items;
    const kp_design *new_design;
    const kp_design *old_design;
} deleter;

static int flush_deletes(deleter *d, kp_error *err)
{
    writer *w = d->w;
    long n = (long)w->batch.count;
    if (n == 0) return 0;
    throttle(w, w->done_items + n);
    int rc = w->o->backend->delete_items(w->conn, d->old_design, &w->batch, err);
    kp_item_list_clear(&w->batch);
    if (rc) return -1;
    w->r->items_deleted += n;
    return batch_done(w, n, "deleting", err);
}

static int delete_item(void *ctx, kp_item *item, long record_index, kp_error *err)
{
    (void)record_index;
    deleter *d = ctx;
    if (!is_stale(d->new_items, d->new_design, item)) return 0;
    kp_item *to = kp_item_list_push(&d->w->batch);
    if (!to) return nomem(err);
    *to = *item;
    memset(item, 0, sizeof *item);
    if (d->w->batch.count >= BATCH_ITEMS) return flush_deletes(d, err);
    return 0;
}

/* ---- dry run: counts only -------------------------------------------------------------------------- */

typedef struct dry_count {
    const kp_backend *b;
    const item_set *old_items, *new_items;
    const kp_design *new_design;
    kp_migrate_report *r;
} dry_count;

static int count_write(void *ctx, kp_item *item, long record_index, kp_error *err)
{
    (void)record_index;
    (void)err;
    dry_count *c = ctx;
    if (is_unchanged(c->b, c->old_items, item)) c->r->items_unchanged++;
    else c->r->items_written++;
    return 0;
}

static int count_delete(void *ctx, kp_item *item, long record_index, kp_error *err)
{
    (void)record_index;
    (void)err;
    dry_count *c = ctx;
    if (is_stale(c->new_items, c->new_design, item)) c->r->items_deleted++;
    return 0;
}

/* ---- the run -------------------------------------------------------------------------------------- */

static const kp_design *design_named(const kp_design_list *list, const char *candidate)
{
    for (size_t i = 0; candidate && i < list->count; i++)
        if (strcmp(list->items[i]->candidate, candidate) == 0) return list->items[i];
    return list->count ? list->items[0] : NULL;
}

typedef struct container_count {
    kp_seed_container *containers;
    size_t count;
} container_count;

static int count_container(void *ctx, kp_item *item, long record_index, kp_error *err)
{
    (void)record_index;
    (void)err;
    container_count *c = ctx;
    for (size_t i = 0; i < c->count; i++)
        if (strcmp(c->containers[i].name, item->container) == 0) { c->containers[i].items++; break; }
    return 0;
}

/* The marker a complete seed of NEW's data leaves. */
static int final_marker(const kp_migrate_options *o, kp_conn *conn, const kp_dataset *data, kp_error *err)
{
    const kp_model *m = o->new_model;
    long *totals = calloc(m->entity_count ? m->entity_count : 1, sizeof *totals);
    kp_seed_container *containers = calloc(o->new_design->container_count + 1, sizeof *containers);
    if (!totals || !containers) { free(totals); free(containers); return nomem(err); }
    size_t count = 0;
    for (size_t i = 0; i < o->new_design->container_count; i++) containers[count++].name = (char *)o->new_design->containers[i].name;
    for (size_t e = 0; e < m->entity_count; e++) totals[e] = (long)kp_dataset_count(data, m->entities[e]);
    /* items per container, as transform makes them */
    container_count cc = {containers, count};
    int rc = kp_design_each_item(o->backend, o->new_design, data, count_container, &cc, err);
    char data_hash[17];
    if (rc == 0) rc = kp_seed_data_hash(data, data_hash, err);
    cJSON *mk = rc == 0 ? kp_seed_marker_new(m, o->new_design, o->backend->name, data_hash, totals, totals, containers, count,
                                             "complete")
                        : NULL;
    if (rc == 0 && !mk) rc = nomem(err);
    if (rc == 0) rc = o->backend->write_marker(conn, o->new_design, mk, err);
    cJSON_Delete(mk);
    free(totals);
    free(containers);
    return rc;
}

static int run(const kp_migrate_options *o, kp_conn *conn, kp_migrate_report *r, kp_error *err)
{
    const kp_backend *b = o->backend;
    if (!b->read_records || !b->migrate_schema || !b->delete_items)
        return kp_error_set(err, KP_ERR_USAGE, NULL, 0, 0, "keyplan cannot migrate a %s target yet", b->title);
    if (kp_migrate_check_models(o->old_model, o->new_model, err)) return -1;
    progress p;
    int found = 0;
    if (load_progress(o, &p, &found, err)) return -1;
    if (found && p.phase == PH_DONE) { /* an earlier run finished: the target says where it stands now */
        found = 0;
        memset(&p, 0, sizeof p);
    }
    r->is_resumed = found && p.phase != PH_NONE;
    snprintf(r->note, sizeof r->note, "%s", p.note);

    /* where the target stands */
    const kp_design *old_design = NULL;
    kp_target_state state = {0};
    if (kp_seed_locate(b, conn, o->old_designs, &old_design, &state, err)) return -1;
    const cJSON *mk = state.marker;
    const char *model_hash = kp_json_str(mk, "model_hash"), *status = kp_json_str(mk, "status");
    int rc = 0;
    if (!found || p.phase == PH_NONE) {
        if (mk && strcmp(model_hash, o->new_model->hash) == 0 && strcmp(status, "complete") == 0) {
            r->is_already_done = 1;
            cJSON_Delete(state.marker);
            return 0;
        }
        if (!o->is_force) {
            const char *why = NULL;
            if (!mk) why = state.exists ? "its containers hold no keyplan marker" : "it holds nothing keyplan seeded";
            else if (strcmp(model_hash, o->old_model->hash) != 0) why = "it was seeded from another model (or version)";
            else if (strcmp(status, "complete") && strcmp(status, "migrating")) why = "its seeding has not finished";
            if (why) {
                rc = kp_error_set(err, KP_ERR_USAGE, NULL, 0, 0, "the %s target is not a complete seed of the old model: %s; "
                                  "migrate starts from what `keyplan seed OLD` left (--force to take it as it is)",
                                  b->name, why);
                cJSON_Delete(state.marker);
                return rc;
            }
        }
        if (!old_design) old_design = o->old_designs->items[0];
        snprintf(p.old_design, sizeof p.old_design, "%s", old_design->candidate);
    } else {
        old_design = design_named(o->old_designs, p.old_design);
    }
    r->old_design = old_design->candidate;
    r->new_design = o->new_design->candidate;

    char old_dir[1100], new_dir[1100];
    snprintf(old_dir, sizeof old_dir, "%s/old", o->state_dir);
    snprintf(new_dir, sizeof new_dir, "%s/new", o->state_dir);
    snprintf(r->data_dir, sizeof r->data_dir, "%s", new_dir);

    /* 1. snapshot (only before anything changed) */
    if (!found || p.phase == PH_NONE) {
        if (o->progress) fprintf(o->progress, "  migrate %s: reading every record from the target\n", b->name);
        if (snapshot(o, conn, old_design, old_dir, err)) { cJSON_Delete(state.marker); return -1; }
    }
    kp_dataset *old_data = NULL, *new_data = NULL;
    if (kp_dataset_load(o->old_model, old_dir, &old_data, err)) {
        cJSON_Delete(state.marker);
        if (err->code == KP_ERR_IO)
            return kp_error_set(err, KP_ERR_USAGE, NULL, 0, 0, "the snapshot of the interrupted migration (%s) cannot be "
                                "read: %s; rerun with the --state directory the migration began with", old_dir, err->message);
        char msg[900];
        snprintf(msg, sizeof msg, "%s", err->message);
        return kp_error_set(err, KP_ERR_DATA, err->file, err->line, err->column, "the data read from the %s target does not "
                            "fit the old model: %s", b->name, msg);
    }
    for (size_t e = 0; e < o->old_model->entity_count; e++) r->records_old += (long)kp_dataset_count(old_data, o->old_model->entities[e]);

    /* 2. the model change */
    rc = change_records(o, old_data, new_dir, err);
    if (rc == 0 && kp_dataset_load(o->new_model, new_dir, &new_data, err)) {
        char msg[900];
        snprintf(msg, sizeof msg, "%s", err->message);
        kp_error_set(err, KP_ERR_DATA, err->file, err->line, err->column, "the old records do not fit the new model: %s", msg);
        rc = -1;
    }
    if (rc == 0) rc = write_dataset(new_data, new_dir, err);
    for (size_t e = 0; rc == 0 && e < o->new_model->entity_count; e++)
        r->records_new += (long)kp_dataset_count(new_data, o->new_model->entities[e]);

    item_set old_items = {0}, new_items = {0};
    if (rc == 0) rc = item_set_build(b, old_design, old_data, &old_items, err);
    if (rc == 0) rc = item_set_build(b, o->new_design, new_data, &new_items, err);
    r->items_new = new_items.count;

    writer w = {.o = o, .conn = conn, .p = &p, .r = r, .started = now_seconds(), .last_saved = now_seconds()};
    if (rc == 0 && o->is_dry_run) {
        /* what the write and delete steps would do; nothing is sent */
        dry_count c = {b, &old_items, &new_items, o->new_design, r};
        rc = kp_design_each_item(b, o->new_design, new_data, count_write, &c, err);
        if (rc == 0) rc = kp_design_each_item(b, old_design, old_data, count_delete, &c, err);
        goto done;
    }

    if (rc == 0 && (!found || p.phase == PH_NONE)) {
        p.phase = PH_SCHEMA;
        rc = save_progress(o, &p, err);
        if (rc == 0 && mk) {
            /* OLD's marker, saying a migration to NEW is under way (seed and verify refuse it) */
            cJSON *m = cJSON_Duplicate(mk, 1);
            cJSON_DeleteItemFromObjectCaseSensitive(m, "migrating_to");
            cJSON_AddStringToObject(m, "migrating_to", o->new_model->hash);
            rc = m ? kp_seed_marker_set_status(b, conn, old_design, m, "migrating", err) : nomem(err);
            cJSON_Delete(m);
        }
    }
    /* 3. schema: what NEW needs, next to what OLD has */
    if (rc == 0 && p.phase == PH_SCHEMA) {
        if (r->is_resumed) p.emptied = 1; /* an interrupted rebuild may have emptied a container: write everything */
        char note[2048] = "";
        int emptied = 0;
        rc = b->migrate_schema(conn, old_design, o->new_design, 0, &emptied, note, sizeof note, err);
        p.emptied |= emptied;
        kp_note_add(p.note, sizeof p.note, note);
        if (rc == 0) { p.phase = PH_WRITE; p.cursor = 0; rc = save_progress(o, &p, err); }
    }
    r->is_rebuilt = p.emptied;
    snprintf(r->note, sizeof r->note, "%s", p.note);
    /* 4. NEW's items */
    if (rc == 0 && p.phase == PH_WRITE) {
        kp_target_state st = {0};
        rc = b->inspect(conn, o->new_design, &st, err); /* the connection now speaks NEW's design */
        cJSON_Delete(st.marker);
        w.old_items = p.emptied ? NULL : &old_items;
        w.total_items = new_items.count;
        w.batch_last_record = -1;
        if (rc == 0) rc = kp_design_each_item(b, o->new_design, new_data, write_item, &w, err);
        if (rc == 0) rc = flush(&w, err);
        kp_item_list_free(&w.batch);
        if (rc == 0) { progress_line(&w, "written", 1); p.phase = PH_DELETE; rc = save_progress(o, &p, err); }
    }
    /* 5. OLD's items NEW does not have */
    if (rc == 0 && p.phase == PH_DELETE) {
        deleter d = {&w, &new_items, o->new_design, old_design};
        w.total_items = old_items.count;
        w.done_items = 0;
        w.started = now_seconds();
        memset(&w.batch, 0, sizeof w.batch);
        rc = kp_design_each_item(b, old_design, old_data, delete_item, &d, err);
        if (rc == 0) rc = flush_deletes(&d, err);
        kp_item_list_free(&w.batch);
        if (rc == 0) { p.phase = PH_FINAL; rc = save_progress(o, &p, err); }
    }
    /* 6. what only OLD had; the marker of NEW */
    if (rc == 0 && p.phase == PH_FINAL) {
        char note[2048] = "";
        int emptied = 0;
        rc = b->migrate_schema(conn, old_design, o->new_design, 1, &emptied, note, sizeof note, err);
        kp_note_add(p.note, sizeof p.note, note);
        snprintf(r->note, sizeof r->note, "%s", p.note);
        if (rc == 0) rc = final_marker(o, conn, new_data, err);
        if (rc == 0) { p.phase = PH_DONE; rc = save_progress(o, &p, err); }
    }
done:
    kp_arena_free(&old_items.arena);
    kp_arena_free(&new_items.arena);
    kp_dataset_free(old_data);
    kp_dataset_free(new_data);
    cJSON_Delete(state.marker);
    return rc;
}

int kp_migrate_run(const kp_migrate_options *o, kp_migrate_report *r, kp_error *err)
{
    memset(r, 0, sizeof *r);
    r->backend = o->backend->name;
    double started = now_seconds();
    if (kp_emit_make_directory(o->state_dir, err)) return -1;
    kp_conn *conn = NULL;
    if (o->backend->connect(o->target, &conn, err)) return -1;
    int rc = run(o, conn, r, err);
    o->backend->disconnect(conn);
    r->seconds = now_seconds() - started;
    return rc;
}
