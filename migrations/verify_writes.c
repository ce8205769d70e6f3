/*
 * verify_writes.c — `verify --writes`: generated write operations applied to the
 * target and to the oracle's data, the reads that must still agree, and the undo that
 * puts the target back exactly as it was (verify.h, "Writes" and "Undo").
 *
 * The backend gets each operation with two datasets: `before` (a copy of the data
 * kept one operation behind) and `after` (the oracle's data with the operation
 * applied); the copy then applies the same operation, so both are always equal
 * between operations.
 * Invariant: whatever happens (a failed check, server trouble, an interruption), the
 * oracle's data is restored with the change log before this file returns.
 */
#include "migrations/verify_internal.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/copies.h"
#include "core/mutate.h"
#include "migrations/generate.h"
#include "migrations/seed.h"
#include "migrations/write_gen.h"

static int nomem(kp_error *err) { return kp_error_set(err, KP_ERR_NOMEM, NULL, 0, 0, "out of memory"); }

/* ---- a copy of the data, one operation behind ----------------------------------------------- */

static int copy_dataset(const kp_dataset *src, kp_dataset **out, kp_error *err)
{
    const kp_model *m = kp_dataset_model(src);
    if (kp_dataset_new(m, out, err)) return -1;
    for (size_t e = 0; e < m->entity_count; e++) {
        size_t n = 0, len = 0, cap = 1024;
        kp_record *const *records = kp_dataset_records(src, m->entities[e], &n);
        char *text = malloc(cap);
        if (!text) { kp_dataset_free(*out); *out = NULL; return nomem(err); }
        text[0] = '\0';
        for (size_t i = 0; i < n; i++) {
            char *line = cJSON_PrintUnformatted(records[i]->object);
            size_t l = line ? strlen(line) : 0;
            if (line && len + l + 2 > cap) {
                while (len + l + 2 > cap) cap *= 2;
                char *bigger = realloc(text, cap);
                if (!bigger) { free(line); line = NULL; }
                else text = bigger;
            }
            if (!line) { free(text); kp_dataset_free(*out); *out = NULL; return nomem(err); }
            memcpy(text + len, line, l);
            len += l;
            text[len++] = '\n';
            text[len] = '\0';
            free(line);
        }
        int rc = kp_dataset_add_ndjson(*out, m->entities[e], "(verify's copy of the data)", text, len, err);
        free(text);
        if (rc) { kp_dataset_free(*out); *out = NULL; return -1; }
    }
    if (kp_dataset_finish(*out, err)) { kp_dataset_free(*out); *out = NULL; return -1; }
    return 0;
}

/* ---- reads already checked on the data as it is now ------------------------------------------ */

/* The reads (a pattern and its parameters) checked since the target last changed. The
 * same read of the same data sends the same requests and gets the same answers from the
 * target and the oracle, so it is checked once: a parent that two changed records point
 * at, or a pattern without parameters sampled again, sends nothing more. */
typedef struct checked_read {
    const kp_pattern *pattern;
    kp_params *params;          /* owned */
} checked_read;

typedef struct checked_reads {
    checked_read *items;
    size_t count, cap;
} checked_reads;

/* Forgets every read: the target and the oracle's data just changed. */
static void checked_clear(checked_reads *c)
{
    for (size_t i = 0; i < c->count; i++) kp_params_free(c->items[i].params);
    c->count = 0;
}

static void checked_free(checked_reads *c)
{
    checked_clear(c);
    free(c->items);
    memset(c, 0, sizeof *c);
}

static int same_params(const kp_params *a, const kp_params *b)
{
    if (a->count != b->count) return 0;
    for (size_t i = 0; i < a->count; i++) {
        const cJSON *other = kp_params_get(b, a->items[i].name);
        if (!other || !kp_data_equal(a->items[i].value, other, NULL)) return 0;
    }
    return 1;
}

/* 1 when this read was checked since the last change; else remembers it and returns 0;
 * -1 when out of memory. */
static int was_checked(checked_reads *c, const kp_pattern *p, const kp_params *params)
{
    for (size_t i = 0; i < c->count; i++)
        if (c->items[i].pattern == p && same_params(c->items[i].params, params)) return 1;
    if (c->count == c->cap) {
        size_t cap = c->cap ? c->cap * 2 : 16;
        checked_read *bigger = realloc(c->items, cap * sizeof *bigger);
        if (!bigger) return -1;
        c->items = bigger;
        c->cap = cap;
    }
    kp_params *copy = kp_params_copy(params);
    if (!copy) return -1;
    c->items[c->count++] = (checked_read){p, copy};
    return 0;
}

/* ---- generating operations (migrations/write_gen.h draws them) ------------------------------ */

typedef struct wgen {
    kp_vctx *v;
    kp_sampler *sampler;        /* for the other parameters of targeted reads */
    kp_generator *gen;          /* NULL when the model cannot be generated */
    char gen_problem[400];
    checked_reads checked;      /* since the target last changed */
} wgen;

/* The seed of operation `attempt` of a write: --seed mixed with the write's name. */
static uint64_t operation_seed(uint64_t seed, const char *name, int attempt)
{
    uint64_t h = 1469598103934665603ULL ^ seed;
    for (const char *p = name; *p; p++) { h ^= (unsigned char)*p; h *= 1099511628211ULL; }
    h ^= (uint64_t)attempt + 0x9e3779b97f4a7c15ULL;
    h = (h ^ (h >> 30)) * 0xbf58476d1ce4e5b9ULL;
    h = (h ^ (h >> 27)) * 0x94d049bb133111ebULL;
    return (h ^ (h >> 31)) & 0xFFFFFFFFFFFULL; /* write_gen multiplies it by 4096 */
}

/* ---- reads after a write ---------------------------------------------------------------------- */

typedef struct anchor {
    const kp_entity *entity;
    cJSON *object;              /* owned: the record, or just a key */
} anchor;

typedef struct anchors {
    anchor items[12];
    size_t count;
} anchors;

static void anchors_free(anchors *a)
{
    for (size_t i = 0; i < a->count; i++) cJSON_Delete(a->items[i].object);
    a->count = 0;
}

static void anchors_add(anchors *a, const kp_entity *e, cJSON *object)
{
    if (!object) return;
    for (size_t i = 0; i < a->count; i++)
        if (a->items[i].entity == e && kp_data_equal(a->items[i].object, object, NULL)) { cJSON_Delete(object); return; }
    if (a->count == sizeof a->items / sizeof a->items[0]) { cJSON_Delete(object); return; }
    a->items[a->count++] = (anchor){e, object};
}

/* A key object of `target` built from values of `holder_object`. */
static cJSON *key_object(const kp_attr *const *from, const kp_attr *const *to, size_t n, const cJSON *holder_object)
{
    cJSON *key = cJSON_CreateObject();
    for (size_t k = 0; key && k < n; k++) {
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(holder_object, from[k]->name);
        if (!v) { cJSON_Delete(key); return NULL; }
        cJSON_AddItemToObject(key, to[k]->name, kp_data_copy(v, NULL));
    }
    return key;
}

static void collect_anchors(const kp_model *m, const kp_change_log *log, size_t from, anchors *out)
{
    for (size_t i = from; i < log->count; i++) {
        const kp_change *c = &log->items[i];
        const cJSON *obj = c->after ? c->after : c->before;
        anchors_add(out, c->entity, kp_data_copy(obj, NULL));
        for (size_t r = 0; r < m->relation_count; r++) {
            const kp_relation *rel = m->relations[r];
            if (rel->link == KP_LINK_FOREIGN_KEY && rel->holder == c->entity)
                anchors_add(out, rel->referenced, key_object((const kp_attr *const *)rel->fk_attrs,
                                                             (const kp_attr *const *)rel->ref_attrs, rel->fk_count, obj));
            if (rel->link == KP_LINK_THROUGH && rel->through == c->entity) {
                if (rel->through_from_count == rel->from->key_count)
                    anchors_add(out, rel->from, key_object((const kp_attr *const *)rel->through_from,
                                                           (const kp_attr *const *)rel->from->key,
                                                           rel->through_from_count, obj));
                if (rel->through_to_count == rel->to->key_count)
                    anchors_add(out, rel->to, key_object((const kp_attr *const *)rel->through_to,
                                                         (const kp_attr *const *)rel->to->key, rel->through_to_count,
                                                         obj));
            }
        }
    }
}

static void record_failure(kp_verify_write *vw, kp_verify_difference *diff, const char *context)
{
    vw->reads_failed++;
    if (vw->has_difference) { kp_verify_difference_free(diff); return; }
    vw->has_difference = 1;
    vw->difference = *diff;
    size_t n = strlen(context) + (diff->message ? strlen(diff->message) : 0) + 8;
    char *message = malloc(n);
    if (message) {
        snprintf(message, n, "%s: %s", context, diff->message ? diff->message : "");
        free(vw->difference.message);
        vw->difference.message = message;
    }
}

/* Every pattern rooted at an anchor's entity, asked about that anchor. */
static int check_anchors(kp_vctx *v, wgen *g, kp_verify_write *vw, const anchors *a, int op, kp_error *err)
{
    const kp_model *m = v->o->model;
    for (size_t i = 0; i < a->count; i++) {
        for (size_t pi = 0; pi < m->pattern_count; pi++) {
            const kp_pattern *p = m->patterns[pi];
            if (p->root != a->items[i].entity || p->is_root_set) continue;
            kp_params *params = NULL;
            kp_error ignored;
            if (kp_sample_params(g->sampler, p, &params, &ignored)) params = kp_params_new();
            if (!params) return nomem(err);
            int pinned = 0, usable = 1;
            for (size_t k = 0; k < p->where_count; k++) {
                const kp_cond *c = &p->where[k];
                if (c->op != KP_OP_EQ || c->path_len || !c->value.param) continue;
                const cJSON *value = cJSON_GetObjectItemCaseSensitive(a->items[i].object, c->attr->name);
                if (!value) { usable = 0; break; }
                if (kp_params_set(params, c->value.param->name, kp_data_copy(value, NULL))) {
                    kp_params_free(params);
                    return nomem(err);
                }
                pinned++;
            }
            if (!usable || !pinned) { kp_params_free(params); continue; }
            int seen = was_checked(&g->checked, p, params);
            if (seen) {
                kp_params_free(params);
                if (seen < 0) return nomem(err);
                continue;
            }
            kp_verify_difference diff;
            int rc = kp_verify_sample(v, p, params, NULL, 0, &diff, err);
            kp_params_free(params);
            if (rc < 0) return -1;
            vw->reads_checked++;
            if (rc == 1) {
                char context[300];
                snprintf(context, sizeof context, "after operation %d, pattern '%s' asked about the changed %s", op,
                         p->name, a->items[i].entity->name);
                record_failure(vw, &diff, context);
            }
        }
    }
    return 0;
}

/* A few fresh samples of every pattern on the changed data, their first pages (verify.h). */
static int check_all(kp_vctx *v, wgen *g, kp_verify_write *vw, kp_error *err)
{
    const kp_model *m = v->o->model;
    int max_pages = v->max_pages;
    if (v->max_pages > KP_VERIFY_WRITES_PAGES) v->max_pages = KP_VERIFY_WRITES_PAGES;
    int rc = 0;
    /* a fifth of the anchors a pattern is checked from, between 2 and 4 */
    int samples = v->samples / 5 > 4 ? 4 : v->samples / 5 > 2 ? v->samples / 5 : 2;
    for (size_t pi = 0; pi < m->pattern_count && rc == 0; pi++) {
        const kp_pattern *p = m->patterns[pi];
        char name[300];
        snprintf(name, sizeof name, "after %s: %s", vw->write->name, p->name);
        kp_sampler *sampler = NULL;
        if (kp_verify_sampler(v, name, &sampler, err)) { rc = -1; break; }
        for (int s = 1; s <= samples && rc == 0; s++) {
            kp_params *params = NULL;
            kp_error ignored;
            if (kp_sample_params(sampler, p, &params, &ignored)) break;
            int seen = was_checked(&g->checked, p, params);
            if (seen) {
                kp_params_free(params);
                if (seen < 0) rc = nomem(err);
                continue;
            }
            kp_verify_difference diff;
            int one = kp_verify_sample(v, p, params, NULL, s, &diff, err);
            kp_params_free(params);
            if (one < 0) { rc = -1; break; }
            vw->reads_checked++;
            if (one == 1) {
                char context[300];
                snprintf(context, sizeof context, "after the operations, pattern '%s'", p->name);
                record_failure(vw, &diff, context);
            }
        }
        kp_sampler_free(sampler);
    }
    v->max_pages = max_pages;
    return rc;
}

/* ---- one write pattern -------------------------------------------------------------------------- */

static void note(kp_verify_write *vw, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void note(kp_verify_write *vw, const char *fmt, ...)
{
    size_t o = strlen(vw->note);
    if (o + 3 >= sizeof vw->note) return;
    if (o) { strcpy(vw->note + o, "; "); o += 2; }
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(vw->note + o, sizeof vw->note - o, fmt, ap);
    va_end(ap);
}

static int by_record(const void *a, const void *b)
{
    const uint64_t *x = a, *y = b;
    return x[0] != y[0] ? (x[0] < y[0] ? -1 : 1) : x[1] != y[1] ? (x[1] < y[1] ? -1 : 1) : 0;
}

/* By record, then by log index: a record's first change first. */
static int by_record_then_change(const void *a, const void *b)
{
    const uint64_t *x = a, *y = b;
    int c = by_record(a, b);
    return c ? c : x[2] != y[2] ? (x[2] < y[2] ? -1 : 1) : 0;
}

/* The records an operation changed, each once: (entity index, serial, log index of its first
 * change) triples. */
typedef struct changed_set {
    const kp_dataset *data;     /* after the operation */
    const kp_change_log *log;
    const uint64_t *keys;
    size_t count;
} changed_set;

/* The records holding copies over `via` of the changed records of via->target (the join
 * records or referencing records whose items a backend rewrites), in the data after it. */
static double count_holders(void *ctx, const kp_rel *via)
{
    const changed_set *cs = ctx;
    double n = 0;
    for (size_t i = 0; i < cs->count; i++) {
        const kp_change *c = &cs->log->items[cs->keys[3 * i + 2]];
        if (c->entity != via->target || !c->after) continue;
        const kp_record *r = kp_dataset_find_like(cs->data, c->entity, c->after);
        kp_record_list holders = {0};
        kp_error err;
        if (r && kp_copy_holder_records(cs->data, r, via, &holders, &err) == 0) n += (double)holders.count;
        kp_record_list_free(&holders);
    }
    return n;
}

/* The elements of the changed records' `array` (attribute of their entity): each record's
 * before its first change in the operation and after the operation, each distinct value once
 * (the rows keyed by an element that go or come, or are rewritten). */
static double count_elements(void *ctx, const kp_attr *array)
{
    const changed_set *cs = ctx;
    double n = 0;
    for (size_t i = 0; i < cs->count; i++) {
        const kp_change *c = &cs->log->items[cs->keys[3 * i + 2]];
        if (c->entity != array->entity) continue;
        const cJSON *before = c->before ? cJSON_GetObjectItemCaseSensitive(c->before, array->name) : NULL;
        const kp_record *r = kp_dataset_find_like(cs->data, c->entity, c->after ? c->after : c->before);
        const cJSON *after = r ? kp_record_get(r, array) : NULL;
        if (!cJSON_IsArray(after)) after = NULL;
        if (!cJSON_IsArray(before)) before = NULL;
        n += after ? cJSON_GetArraySize(after) : 0;
        const cJSON *v, *w;
        cJSON_ArrayForEach(v, before) {
            int kept = 0;
            cJSON_ArrayForEach(w, after) kept |= kp_data_equal(v, w, NULL);
            n += !kept;
        }
    }
    return n;
}

/* The items one applied operation wrote (its changes: log[mark..]), against the plan's claim
 * evaluated on the records the operation changed, each record once. */
static int count_sent(const kp_model *m, const kp_dataset *data, kp_verify_write *vw, const kp_write_sent *sent,
                      const kp_change_log *log, size_t mark, kp_error *err)
{
    size_t n = log->count - mark;
    uint64_t *keys = malloc((n ? n : 1) * 3 * sizeof *keys);
    double *changed = calloc(m->entity_count ? m->entity_count : 1, sizeof *changed);
    if (!keys || !changed) {
        free(keys);
        free(changed);
        return nomem(err);
    }
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        const kp_change *c = &log->items[mark + i];
        if (c->before && c->after && kp_data_equal(c->before, c->after, NULL)) continue; /* written as it was */
        keys[3 * k] = c->entity->index;
        keys[3 * k + 1] = c->serial;
        keys[3 * k + 2] = mark + i;
        k++;
    }
    n = k;
    qsort(keys, n, 3 * sizeof *keys, by_record_then_change);
    size_t unique = 0;
    for (size_t i = 0; i < n; i++)
        if (i == 0 || by_record(&keys[3 * i], &keys[3 * unique - 3])) {
            changed[keys[3 * i]] += 1;
            memmove(&keys[3 * unique++], &keys[3 * i], 3 * sizeof *keys);
        }
    changed_set cs = {data, log, keys, unique};
    if (vw->plan) {
        /* an atomic write the server took without a transaction went item by item */
        kp_write_measure measure = {changed, count_holders, count_elements, &cs, vw->write->is_atomic && !sent->is_atomic};
        vw->claimed_sum += kp_write_plan_items_for(vw->plan, &measure);
        vw->claimed_requests_sum += kp_write_plan_requests_for(vw->plan, &measure);
    }
    free(keys);
    free(changed);

    if (vw->sent_ops == 0 || sent->items < vw->sent_items_min) vw->sent_items_min = sent->items;
    if (vw->sent_ops == 0 || sent->items > vw->sent_items_max) vw->sent_items_max = sent->items;
    vw->sent_items_sum += sent->items;
    if (vw->sent_ops == 0 || sent->requests < vw->sent_requests_min) vw->sent_requests_min = sent->requests;
    if (vw->sent_ops == 0 || sent->requests > vw->sent_requests_max) vw->sent_requests_max = sent->requests;
    vw->sent_requests_sum += sent->requests;
    vw->sent_ops++;
    return 0;
}

/* A measured average against the claim evaluated on the same records: the claim's expected
 * parts (a sparse index holds about half of the items) allow a quarter, and at least one
 * item or request per operation. */
static int claim_holds(double sent, double claimed)
{
    return fabs(sent - claimed) <= fmax(1, 0.25 * claimed);
}

/* The items and the write requests the operations sent against the plan's claims. */
static void judge_claims(kp_verify_write *vw)
{
    if (!vw->plan || vw->sent_ops == 0) return;
    double sent = (double)vw->sent_items_sum / vw->sent_ops, claimed = vw->claimed_sum / vw->sent_ops;
    if (!claim_holds(sent, claimed)) {
        vw->is_items_mismatch = 1;
        note(vw, "the plan claims %.3g item%s written per operation on the records these operations changed; they wrote %.3g on "
             "average (%ld-%ld)", claimed, claimed == 1 ? "" : "s", sent, vw->sent_items_min, vw->sent_items_max);
    }
    sent = (double)vw->sent_requests_sum / vw->sent_ops;
    claimed = vw->claimed_requests_sum / vw->sent_ops;
    if (!claim_holds(sent, claimed)) {
        vw->is_requests_mismatch = 1;
        note(vw, "the plan claims %.3g write request%s per operation on the records these operations changed (the reads "
             "before writing not counted); they sent %.3g on average (%ld-%ld)", claimed, claimed == 1 ? "" : "s", sent,
             vw->sent_requests_min, vw->sent_requests_max);
    }
}

/* The changes of a log from `mark` on (NULL when there are none). */
static const kp_change *changes_from(const kp_change_log *log, size_t mark)
{
    return log->count > mark ? log->items + mark : NULL;
}

/* The undo of a write pattern's operations: the data back first, then the backend writes
 * the difference from the data after them (the shadow, which took the same operations,
 * a failed one included) to the data before them — each item of the records they changed
 * that differs put back as it was, those the data before them does not make deleted — in
 * time proportional to what they changed. An operation that went in half way is covered: what it wrote is among
 * those items. The read-back at the end of the phase proves the target whole. */
static int undo_difference(kp_vctx *v, kp_change_log *log, kp_change_log *shadow_log, kp_dataset *shadow, long *written,
                           kp_error *err)
{
    if (kp_change_log_undo(v->data, log, 0, err)) return -1;
    kp_write_sent sent = {0};
    int rc = v->b->apply_write(v->conn, v->design, shadow, v->data, NULL, changes_from(shadow_log, 0),
                               shadow_log->count, &sent, err);
    if (rc && err->code == KP_OK) err->code = KP_ERR_TARGET;
    *written = sent.items;
    kp_error ignored;
    if (kp_change_log_undo(shadow, shadow_log, 0, rc ? &ignored : err)) rc = -1;
    return rc;
}

static int run_write(kp_vctx *v, wgen *g, kp_dataset *shadow, kp_verify_write *vw, kp_error *err)
{
    const kp_write *w = vw->write;
    kp_change_log log = {0}, shadow_log = {0};
    int rc = 0, attempts = 0;
    int wanted = v->r->write_ops;
    checked_clear(&g->checked);     /* the undo of the write before changed the target */
    while (rc == 0 && vw->ops < wanted && attempts < wanted * 4) {
        if (v->o->interrupted && *v->o->interrupted) { note(vw, "interrupted"); break; }
        attempts++;
        kp_verify_progress(v, "  verifying write %s: operation %d/%d", w->name, vw->ops + 1, wanted);
        kp_write_request req;
        memset(&req, 0, sizeof req);
        if (!g->gen) {
            vw->not_generated++;
            note(vw, "not exercised: %s", g->gen_problem);
            break;
        }
        /* a delete or update needs a record to start from: at a small scale the data may hold
         * none (left), which is not an operation that "did not fit" */
        const kp_write_step *first = w->step_count ? &w->steps[0] : NULL;
        if (first && (first->op == KP_WRITE_DELETE || first->op == KP_WRITE_UPDATE) && !first->for_each_len && !kp_dataset_count(v->data, first->entity)) {
            note(vw, "no %s record left to %s after %d operation%s: the data at this scale holds too few", first->entity->name,
                 first->op == KP_WRITE_DELETE ? "delete" : "update", vw->ops, vw->ops == 1 ? "" : "s");
            break;
        }
        kp_error gen_err;
        if (kp_write_generate(v->data, g->gen, w, operation_seed(v->o->seed, w->name, attempts), &req, &gen_err)) {
            kp_write_request_free(&req);
            if (gen_err.code == KP_ERR_NOMEM || gen_err.code == KP_ERR_INTERNAL) { *err = gen_err; rc = -1; break; }
            vw->not_generated++;
            if (vw->not_generated == 1) note(vw, "an operation could not be generated: %.400s", gen_err.message);
            continue;
        }
        size_t mark = log.count;
        kp_write_result result;
        kp_error apply_err;
        if (kp_write_apply(v->data, &req, &log, &result, &apply_err)) {
            /* the generated request does not fit the data (a unique value taken, ...): try another */
            kp_write_request_free(&req);
            vw->not_generated++;
            if (vw->not_generated == 1) note(vw, "a generated operation did not fit the data: %s", apply_err.message);
            continue;
        }
        kp_write_sent sent = {0};
        kp_error backend_err;
        kp_error_clear(&backend_err);
        int brc = v->b->apply_write(v->conn, v->design, shadow, v->data, &req, changes_from(&log, mark), log.count - mark,
                                    &sent, &backend_err);
        kp_write_result shadow_result;
        kp_error shadow_err;
        if (kp_write_apply(shadow, &req, &shadow_log, &shadow_result, &shadow_err) ||
            shadow_result.outcome != result.outcome) {
            kp_write_request_free(&req);
            rc = kp_error_set(err, KP_ERR_INTERNAL, NULL, 0, 0, "write '%s' did not apply the same way twice to equal "
                              "data (a bug in keyplan)", w->name);
            break;
        }
        vw->ops++;
        switch (result.outcome) {
        case KP_WRITE_APPLIED: vw->applied++; break;
        case KP_WRITE_PARTIAL: vw->partial++; break;
        case KP_WRITE_SKIPPED: vw->skipped++; break;
        case KP_WRITE_REFUSED: vw->refused++; break;
        }
        if (sent.is_atomic) vw->atomic_exercised++;
        if (brc == 0 && result.outcome == KP_WRITE_APPLIED && count_sent(v->o->model, v->data, vw, &sent, &log, mark, err)) {
            kp_write_request_free(&req);
            rc = -1;
            break;
        }
        if (brc) {
            kp_write_request_free(&req);
            if (backend_err.code == KP_ERR_TARGET || backend_err.code == KP_ERR_NOMEM || backend_err.code == KP_OK) {
                *err = backend_err;
                if (err->code == KP_OK) err->code = KP_ERR_TARGET;
                rc = -1;
                break;
            }
            if (!vw->has_difference) {
                char context[700];
                snprintf(context, sizeof context, "operation %d: the %s backend could not apply it: %s", vw->ops,
                         v->b->name, backend_err.message);
                vw->difference.message = strdup(context);
                vw->has_difference = 1;
            }
            vw->reads_failed++;
            break;
        }
        kp_write_request_free(&req);
        checked_clear(&g->checked);
        anchors a = {0};
        collect_anchors(v->o->model, &log, mark, &a);
        rc = check_anchors(v, g, vw, &a, vw->ops, err);
        anchors_free(&a);
    }
    if (rc == 0 && vw->ops > 0 && !vw->has_difference) rc = check_all(v, g, vw, err);
    judge_claims(vw);

    long written = 0;
    kp_error undo_err;
    kp_error_clear(&undo_err);
    int urc = undo_difference(v, &log, &shadow_log, shadow, &written, &undo_err);
    kp_change_log_free(&log);
    kp_change_log_free(&shadow_log);
    if (urc == 0 && written) note(vw, "undone: %ld item%s written back", written, written == 1 ? "" : "s");
    if (vw->ops == 0 && !vw->has_difference) note(vw, "not exercised: no operation could be generated");
    vw->is_pass = rc == 0 && urc == 0 && vw->ops > 0 && vw->reads_failed == 0 && !vw->is_items_mismatch &&
                 !vw->is_requests_mismatch;
    if (urc) {
        if (rc == 0) *err = undo_err;
        return -1;
    }
    return rc;
}

/* ---- the phase ---------------------------------------------------------------------------------- */

static int readbacks_equal(const kp_readback *a, const kp_readback *b, char *why, size_t size)
{
    for (size_t i = 0; i < a->count; i++) {
        const kp_readback_entry *x = &a->entries[i], *y = NULL;
        for (size_t k = 0; k < b->count && !y; k++)
            if (strcmp(b->entries[k].container, x->container) == 0) y = &b->entries[k];
        long items = y ? y->items : 0;
        if (items != x->items || (y && x->checksum != y->checksum)) {
            snprintf(why, size, "container '%s' held %ld items before the writes and %ld after the undo%s", x->container,
                     x->items, items, items == x->items ? " (same count, different content)" : "");
            return 0;
        }
    }
    for (size_t k = 0; k < b->count; k++) {
        int known = 0;
        for (size_t i = 0; i < a->count && !known; i++) known = strcmp(a->entries[i].container, b->entries[k].container) == 0;
        if (!known && b->entries[k].items > 0) {
            snprintf(why, size, "container '%s' was empty before the writes and holds %ld items after the undo",
                     b->entries[k].container, b->entries[k].items);
            return 0;
        }
    }
    return 1;
}

int kp_verify_writes(kp_vctx *v, kp_error *err)
{
    const kp_model *m = v->o->model;
    kp_verify_report *r = v->r;
    r->write_count = m->write_count;
    r->write_results = calloc(m->write_count ? m->write_count : 1, sizeof *r->write_results);
    if (!r->write_results) return nomem(err);
    for (size_t i = 0; i < m->write_count; i++) {
        r->write_results[i].write = m->writes[i];
        for (size_t k = 0; k < v->design->write_plan_count; k++)
            if (v->design->write_plans[k].write == m->writes[i]) r->write_results[i].plan = &v->design->write_plans[k];
    }
    if (m->write_count == 0) { r->is_undone = 1; return 0; }

    wgen g;
    memset(&g, 0, sizeof g);
    g.v = v;
    if (kp_verify_sampler(v, "--writes", &g.sampler, err)) return -1;
    kp_error gen_err;
    if (kp_generator_new(m, v->o->seed, &g.gen, &gen_err)) {
        g.gen = NULL;
        snprintf(g.gen_problem, sizeof g.gen_problem, "fresh records cannot be generated for this model: %.330s",
                 gen_err.message);
    }
    kp_dataset *shadow = NULL;
    kp_readback before = {0}, after = {0};
    int rc = copy_dataset(v->data, &shadow, err);
    if (rc == 0 && v->has_readback) {
        /* the read-back check just read every container: nothing was written since */
        before = v->readback;
        memset(&v->readback, 0, sizeof v->readback);
        v->has_readback = 0;
    } else if (rc == 0 && v->b->read_back(v->conn, v->design, &before, err)) {
        if (err->code == KP_OK) err->code = KP_ERR_TARGET;
        rc = -1;
    }
    int is_marked = 0;
    if (rc == 0) {
        rc = kp_seed_marker_set_status(v->b, v->conn, v->design, v->marker, "writes-in-progress", err);
        is_marked = rc == 0;
    }
    for (size_t i = 0; rc == 0 && i < m->write_count; i++) rc = run_write(v, &g, shadow, &r->write_results[i], err);
    kp_verify_progress(v, NULL);

    /* the target must hold exactly what it held before */
    if (is_marked) {
        kp_error check_err;
        kp_error_clear(&check_err);
        char why[400] = "";
        int same = 0;
        if (v->b->read_back(v->conn, v->design, &after, &check_err) == 0) same = readbacks_equal(&before, &after, why, sizeof why);
        else snprintf(why, sizeof why, "reading it back failed: %.360s", check_err.message);
        if (same && rc == 0) {
            r->is_undone = 1;
            snprintf(r->undo_note, sizeof r->undo_note, "the target holds exactly what it held before the writes");
            rc = kp_seed_marker_set_status(v->b, v->conn, v->design, v->marker, "complete", err);
        } else if (same) {
            r->is_undone = 1;
            snprintf(r->undo_note, sizeof r->undo_note, "the target holds exactly what it held before the writes");
            kp_error ignored;
            kp_seed_marker_set_status(v->b, v->conn, v->design, v->marker, "complete", &ignored);
        } else {
            snprintf(r->undo_note, sizeof r->undo_note, "the writes could not be undone exactly: %.380s; the marker says "
                     "\"writes-in-progress\", re-seed with `keyplan seed --force`", why);
            if (rc == 0) rc = kp_error_set(err, KP_ERR_CHECK, NULL, 0, 0, "%s", r->undo_note);
        }
    }
    kp_readback_free(&before);
    kp_readback_free(&after);
    kp_dataset_free(shadow);
    kp_generator_free(g.gen);
    kp_sampler_free(g.sampler);
    checked_free(&g.checked);
    return rc;
}
