/*
 * verify.c — the read checks of `keyplan verify`: parameters drawn from the data, the
 * oracle's pages against the target's pages, measured cost against the plan's claim
 * (verify.h describes the rules; verify_writes.c does --writes, verify_report.c the
 * output).
 *
 * Invariant: verify without --writes only reads the target (inspect, execute); it
 * never writes the marker or anything else.
 */
#include "migrations/verify_internal.h"

#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "core/oracle.h"
#include "migrations/seed.h"

static int nomem(kp_error *err) { return kp_error_set(err, KP_ERR_NOMEM, NULL, 0, 0, "out of memory"); }

double kp_verify_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

void kp_verify_difference_free(kp_verify_difference *d)
{
    free(d->params);
    free(d->path);
    free(d->expected);
    free(d->actual);
    free(d->message);
    memset(d, 0, sizeof *d);
}

void kp_verify_progress(kp_vctx *v, const char *fmt, ...)
{
    if (!v->o->progress || !v->is_tty) return;
    double t = kp_verify_now();
    if (fmt && t - v->last_line < 0.1) return;
    v->last_line = t;
    fputs("\r", v->o->progress);
    if (fmt) {
        va_list ap;
        va_start(ap, fmt);
        vfprintf(v->o->progress, fmt, ap);
        va_end(ap);
    }
    fputs("\033[K", v->o->progress);
    fflush(v->o->progress);
}

/* FNV-1a of a name, from `h` on. */
static uint64_t name_hash(uint64_t h, const char *name)
{
    for (const char *p = name; *p; p++) h = (h ^ (unsigned char)*p) * 1099511628211ULL;
    return h;
}

int kp_verify_sampler(kp_vctx *v, const char *name, kp_sampler **out, kp_error *err)
{
    uint64_t z = v->o->seed ^ name_hash(1469598103934665603ULL, name);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    z ^= z >> 31;
    return kp_sampler_new(v->data, z, out, err);
}

/* ---- one pattern ------------------------------------------------------------------------------- */

static int compare_doubles(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double percentile(const double *sorted, size_t n, double p)
{
    if (n == 0) return 0;
    size_t rank = (size_t)ceil(p / 100.0 * (double)n);
    if (rank < 1) rank = 1;
    return sorted[rank - 1];
}

static void range_text(int lo, int hi, char *buf, size_t size)
{
    if (lo == hi) snprintf(buf, size, "%d", lo);
    else snprintf(buf, size, "%d-%d", lo, hi);
}

static void judge_claims(kp_verify_pattern *vp)
{
    if (vp->claimed_requests < 0 || vp->first_requests_min == INT_MAX) return;
    double c = vp->claimed_requests;
    int is_whole = fabs(c - round(c)) < 1e-9;
    /* the claim is the deepest chain of requests; a sample whose records lead nowhere
     * (an item without bids) stops earlier, but no sample may go deeper, and some must get
     * there — unless every sample that stopped short did so because its records led nowhere
     * (the backend says so: kp_result.is_cut_short), which the note then says */
    int all_cut = vp->first_steps_max < vp->claimed_steps && !vp->first_short_uncut;
    int steps_bad = (vp->first_steps_max < vp->claimed_steps && !all_cut) || vp->first_steps_max > vp->claimed_steps_max;
    /* a request count that depends on the data (one request per parent) is an estimate */
    int requests_bad = is_whole && vp->is_requests_exact &&
                       (vp->first_requests_min != (int)round(c) || vp->first_requests_max != (int)round(c));
    char req[32], steps[32];
    range_text(vp->first_requests_min, vp->first_requests_max, req, sizeof req);
    range_text(vp->first_steps_min, vp->first_steps_max, steps, sizeof steps);
    size_t o = strlen(vp->note);
    if (steps_bad || requests_bad) {
        vp->is_claim_mismatch = 1;
        snprintf(vp->note + o, sizeof vp->note - o, "%sthe plan claims %g request%s and %d sequential step%s for a first "
                 "page; measured %s request%s and %s step%s", o ? "; " : "", c, c == 1 ? "" : "s", vp->claimed_steps,
                 vp->claimed_steps == 1 ? "" : "s", req, strcmp(req, "1") == 0 ? "" : "s", steps,
                 strcmp(steps, "1") == 0 ? "" : "s");
    } else if (!is_whole || !vp->is_requests_exact) {
        snprintf(vp->note + o, sizeof vp->note - o, "%sthe plan estimates %g requests for a first page; measured %s",
                 o ? "; " : "", c, req);
    }
    o = strlen(vp->note);
    if (all_cut && !steps_bad && !requests_bad)
        snprintf(vp->note + o, sizeof vp->note - o, "%sno sample reached the plan's %d sequential steps: every one ran out "
                 "of records to follow first, or needed no read of ties (measured %s)", o ? "; " : "", vp->claimed_steps, steps);
}

static const kp_plan *plan_of(const kp_design *d, const kp_pattern *p)
{
    for (size_t i = 0; i < d->plan_count; i++)
        if (d->plans[i].pattern == p) return &d->plans[i];
    return NULL;
}

/* The ranks (in key order) of the anchors a pattern is checked from: all of them up to
 * the cap (or with --exhaustive); above it a quarter from the hottest ranks (the skew's
 * first keys; none without skew) and the rest evenly spread over the remaining ranks from
 * a seeded offset. A root without records gives one anchor (rank 0, none): the draw then
 * says whether the pattern can be checked at all. NULL when out of memory. */
static size_t *choose_anchors(kp_vctx *v, const kp_pattern *p, size_t total, size_t *count)
{
    size_t cap = (size_t)v->samples;
    size_t n = total == 0 ? 1 : v->o->is_exhaustive || total <= cap ? total : cap;
    size_t *ranks = malloc(n * sizeof *ranks);
    *count = ranks ? n : 0;
    if (!ranks) return NULL;
    if (n == total || total == 0) {
        for (size_t i = 0; i < n; i++) ranks[i] = i;
        return ranks;
    }
    double skew = kp_pattern_skew(v->o->model, p);
    size_t hot = skew > 0 ? n / 4 : 0, k = 0;
    for (; k < hot; k++) ranks[k] = k;
    size_t rest = n - hot, span = total - hot;
    uint64_t h = name_hash(v->o->seed ^ 0x9e3779b97f4a7c15ULL, p->name);
    double step = (double)span / (double)rest, offset = (double)(h % 1000003) / 1000003.0 * step;
    for (size_t i = 0; i < rest; i++) {
        size_t r = hot + (size_t)(offset + step * (double)i);
        ranks[k++] = r < total ? r : total - 1;
    }
    return ranks;
}

/* Adds a parameter set's hash to an open-addressed set of `cap` slots (more than twice
 * the sets it will hold); *is_new says whether it was absent. -1 when out of memory. */
static int remember(uint64_t *set, size_t cap, const kp_params *params, int *is_new)
{
    cJSON *json = kp_params_to_json(params);
    if (!json) return -1;
    uint64_t h = kp_item_hash(json); /* canonical: member order and number spelling do not count */
    cJSON_Delete(json);
    if (h == 0) h = 1;
    size_t i = (size_t)(h % cap);
    while (set[i] && set[i] != h) i = (i + 1) % cap;
    *is_new = set[i] == 0;
    set[i] = h;
    return 0;
}

/* The anchors of a pattern, in rank order, as parameter sets (kp_verify_draw_fn). */
typedef struct anchor_draw {
    kp_vctx *v;
    const kp_pattern *p;
    kp_verify_pattern *vp;
    kp_sampler *sampler;
    const size_t *ranks;
    size_t count, next;
    uint64_t *seen;             /* the parameter sets already drawn (count * 2 + 2 slots) */
} anchor_draw;

static int draw_anchor(void *ctx, kp_params **out, kp_error *err)
{
    anchor_draw *d = ctx;
    kp_verify_pattern *vp = d->vp;
    while (d->next < d->count) {
        size_t a = d->next++;
        kp_verify_progress(d->v, "  verifying %s: anchor %zu/%zu", d->p->name, a + 1, d->count);
        kp_params *params = NULL;
        kp_error draw_err;
        if (kp_sample_params_at(d->sampler, d->p, d->ranks[a], &params, &draw_err)) {
            if (draw_err.code != KP_ERR_DATA) { *err = draw_err; return -1; }
            vp->is_skipped = 1;
            snprintf(vp->note, sizeof vp->note, "not checked: %.480s", draw_err.message);
            return 1;
        }
        vp->anchors++;
        /* an anchor that gives a parameter set already checked adds nothing */
        int is_new = 0;
        if (remember(d->seen, d->count * 2 + 2, params, &is_new)) { kp_params_free(params); return nomem(err); }
        if (is_new) { *out = params; return 0; }
        kp_params_free(params);
    }
    return 1;
}

static int check_pattern(kp_vctx *v, size_t index, kp_error *err)
{
    const kp_pattern *p = v->o->model->patterns[index];
    kp_verify_pattern *vp = &v->r->patterns[index];
    vp->pattern = p;
    const kp_plan *plan = plan_of(v->design, p);
    vp->claimed_requests = plan ? plan->requests : -1;
    vp->is_requests_exact = plan ? plan->is_requests_exact : 0;
    vp->claimed_steps = plan ? plan->sequential_steps : 0;
    vp->claimed_steps_max = plan && plan->sequential_steps_max > vp->claimed_steps ? plan->sequential_steps_max : vp->claimed_steps;
    if (plan) {
        vp->claimed_items = plan->items;
        vp->claimed_bytes = plan->bytes;
        vp->bound_requests = plan->requests_max > plan->requests ? plan->requests_max : plan->requests;
        vp->bound_items = plan->items_max > plan->items ? plan->items_max : plan->items;
        vp->bound_bytes = (plan->bytes_max > plan->bytes ? plan->bytes_max : plan->bytes);
    }
    vp->first_requests_min = vp->first_steps_min = INT_MAX;
    vp->first_requests_max = vp->first_steps_max = INT_MIN;
    v->latency_count = 0;
    kp_sampler *sampler = NULL;
    if (kp_verify_sampler(v, p->name, &sampler, err)) return -1;
    /* a pattern without parameters asks one question whatever the anchor: one anchor */
    size_t total = p->param_count == 0 ? 1 : kp_sample_anchor_count(sampler, p->root), count = 0;
    size_t *ranks = choose_anchors(v, p, total, &count);
    uint64_t *seen = calloc(count * 2 + 2, sizeof *seen);
    int rc = ranks && seen ? 0 : nomem(err);
    vp->anchors_total = (long)total;
    vp->is_stratified = count < total;
    anchor_draw d = {v, p, vp, sampler, ranks, count, 0, seen};
    if (rc == 0) rc = kp_verify_samples(v, p, vp, draw_anchor, &d, err);
    free(ranks);
    free(seen);
    kp_sampler_free(sampler);
    if (v->latency_count) {
        qsort(v->latencies, v->latency_count, sizeof *v->latencies, compare_doubles);
        vp->p50_ms = percentile(v->latencies, v->latency_count, 50);
        vp->p95_ms = percentile(v->latencies, v->latency_count, 95);
        vp->p99_ms = percentile(v->latencies, v->latency_count, 99);
    }
    if (vp->first_requests_min == INT_MAX) vp->first_requests_min = vp->first_requests_max = 0;
    else judge_claims(vp);
    if (vp->first_steps_min == INT_MAX) vp->first_steps_min = vp->first_steps_max = 0;
    vp->is_pass = rc == 0 && !vp->is_skipped && vp->samples_failed == 0 && !vp->is_claim_mismatch && !vp->is_bound_exceeded;
    return rc;
}

/* ---- the containers: read back against what the data predicts ------------------------------------- */

static kp_verify_container *container_entry(kp_verify_report *r, const char *name)
{
    for (size_t i = 0; i < r->container_count; i++)
        if (strcmp(r->containers[i].name, name) == 0) return &r->containers[i];
    kp_verify_container *bigger = realloc(r->containers, (r->container_count + 1) * sizeof *bigger);
    if (!bigger) return NULL;
    r->containers = bigger;
    kp_verify_container *c = &r->containers[r->container_count];
    memset(c, 0, sizeof *c);
    c->name = strdup(name);
    if (!c->name) return NULL;
    r->container_count++;
    return c;
}

typedef struct with_id {
    const kp_vctx *v;
    kp_verify_item_fn fn;
    void *ctx;
} with_id;

static int item_with_id(void *p, kp_item *item, long record_index, kp_error *err)
{
    (void)record_index;
    with_id *w = p;
    if (!item->id)
        return kp_error_set(err, KP_ERR_INTERNAL, NULL, 0, 0, "the %s backend's transform made an item without an id; "
                            "verify needs ids to compare and undo", w->v->b->name);
    return w->fn(w->ctx, item, err);
}

int kp_verify_each_item(kp_vctx *v, kp_verify_item_fn fn, void *ctx, kp_error *err)
{
    with_id w = {v, fn, ctx};
    return kp_design_each_item(v->b, v->design, v->data, item_with_id, &w, err);
}

/* One item the data makes: counted, and its checksum folded into its container's. */
static int expect_item(void *ctx, kp_item *item, kp_error *err)
{
    kp_vctx *v = ctx;
    kp_verify_container *c = container_entry(v->r, item->container);
    if (!c) return nomem(err);
    c->items_expected++;
    if (v->b->item_checksum) c->checksum_expected ^= v->b->item_checksum(item->body);
    return 0;
}

/* ---- a container that differs: which items ---------------------------------------------------------- */

typedef struct expected_item {
    uint64_t checksum;
    int is_seen;
    kp_verify_container *container;
} expected_item;

typedef struct item_diag {
    kp_vctx *v;
    kp_arena arena;
    kp_strmap expected;         /* id -> expected_item *, of the containers that differ */
} item_diag;

static kp_verify_container *failed_container(kp_verify_report *r, const char *name)
{
    for (size_t i = 0; i < r->container_count; i++)
        if (!r->containers[i].is_match && strcmp(r->containers[i].name, name) == 0) return &r->containers[i];
    return NULL;
}

/* A readable identity: DynamoDB's "PK\x1fSK" as "PK | SK". */
static char *shown_key(const char *id)
{
    char *s = strdup(id);
    for (char *p = s; p && *p; p++)
        if (*p == '\x1f') *p = '|';
    return s;
}

static void note_key(long *count, char **keys, const char *id)
{
    if (*count < KP_VERIFY_KEYS_SHOWN) keys[*count] = shown_key(id);
    (*count)++;
}

static int expect_by_id(void *ctx, kp_item *item, kp_error *err)
{
    item_diag *d = ctx;
    kp_verify_container *c = failed_container(d->v->r, item->container);
    if (!c) return 0;
    expected_item *e = kp_arena_alloc(&d->arena, sizeof *e);
    const char *id = kp_arena_strdup(&d->arena, item->id);
    if (!e || !id) return nomem(err);
    e->checksum = d->v->b->item_checksum ? d->v->b->item_checksum(item->body) : 0;
    e->is_seen = 0;
    e->container = c;
    return kp_strmap_put(&d->arena, &d->expected, id, e) ? nomem(err) : 0;
}

static int classify(void *ctx, const char *container, const char *id, uint64_t checksum, kp_error *err)
{
    (void)err;
    item_diag *d = ctx;
    kp_verify_container *c = failed_container(d->v->r, container);
    if (!c) return 0;
    expected_item *e = kp_strmap_get(&d->expected, id);
    if (!e) note_key(&c->strays, c->stray_keys, id);
    else if (e->is_seen) note_key(&c->strays, c->stray_keys, id); /* the same identity twice */
    else {
        e->is_seen = 1;
        if (d->v->b->item_checksum && e->checksum != checksum) note_key(&c->changed, c->changed_keys, id);
    }
    return 0;
}

/* Names the items of every container that differs: missing, strays, changed. */
static int diagnose_containers(kp_vctx *v, kp_error *err)
{
    kp_verify_report *r = v->r;
    for (size_t i = 0; i < r->container_count; i++) r->containers[i].missing = r->containers[i].strays = r->containers[i].changed = -1;
    if (!v->b->read_items || r->containers_failed == 0) return 0;
    for (size_t i = 0; i < r->container_count; i++)
        if (!r->containers[i].is_match) r->containers[i].missing = r->containers[i].strays = r->containers[i].changed = 0;
    item_diag d = {.v = v};
    int rc = kp_verify_each_item(v, expect_by_id, &d, err);
    if (rc == 0) rc = v->b->read_items(v->conn, v->design, classify, &d, err);
    for (size_t i = 0; rc == 0 && i < d.expected.cap; i++) {
        if (!d.expected.keys || !d.expected.keys[i]) continue;
        expected_item *e = d.expected.values[i];
        if (!e->is_seen) note_key(&e->container->missing, e->container->missing_keys, d.expected.keys[i]);
    }
    kp_arena_free(&d.arena);
    if (rc && err->code == KP_OK) err->code = KP_ERR_TARGET;
    return rc;
}

static int check_containers(kp_vctx *v, kp_error *err)
{
    kp_verify_report *r = v->r;
    kp_verify_progress(v, "  reading every container back");
    int rc = kp_verify_each_item(v, expect_item, v, err);
    kp_readback rb = {0};
    if (rc == 0 && v->b->read_back(v->conn, v->design, &rb, err)) { if (err->code == KP_OK) err->code = KP_ERR_TARGET; rc = -1; }
    for (size_t i = 0; rc == 0 && i < rb.count; i++)
        if (!container_entry(r, rb.entries[i].container)) rc = nomem(err);
    for (size_t i = 0; rc == 0 && i < r->container_count; i++) {
        kp_verify_container *c = &r->containers[i];
        const kp_readback_entry *got = NULL;
        for (size_t k = 0; k < rb.count && !got; k++)
            if (strcmp(rb.entries[k].container, c->name) == 0) got = &rb.entries[k];
        c->items = got ? got->items : 0;
        c->is_content_checked = v->b->item_checksum != NULL;
        c->is_match = c->items == c->items_expected &&
                      (!c->is_content_checked || (got ? got->checksum : 0) == c->checksum_expected);
        if (!c->is_match) r->containers_failed++;
    }
    if (rc == 0) rc = diagnose_containers(v, err);
    r->is_read_back = rc == 0;
    if (rc == 0) {
        v->readback = rb;
        v->has_readback = 1;
    } else {
        kp_readback_free(&rb);
    }
    return rc;
}

/* ---- the run ------------------------------------------------------------------------------------- */

static int check_marker(kp_vctx *v, const kp_target_state *state, kp_error *err)
{
    const char *prefix = v->o->target && v->o->target->prefix ? v->o->target->prefix : "";
    if (!state->marker)
        return kp_error_set(err, KP_ERR_USAGE, NULL, 0, 0, "%s holds no keyplan seed of design '%s'%s%s; run `keyplan "
                            "seed` with the same model, data and options first", v->b->name, v->design->candidate,
                            prefix[0] ? " under prefix " : "", prefix);
    char data_hash[17], why[400];
    if (kp_seed_data_hash(v->data, data_hash, err)) return -1;
    if (!kp_seed_marker_matches(state->marker, v->o->model, data_hash, v->design, why, sizeof why))
        return kp_error_set(err, KP_ERR_USAGE, NULL, 0, 0, "the %s target was not seeded with this model, data and "
                            "design: %s; re-seed it with `keyplan seed --force`", v->b->name, why);
    const cJSON *status = cJSON_GetObjectItemCaseSensitive(state->marker, "status");
    const char *s = cJSON_IsString(status) ? status->valuestring : "";
    if (strcmp(s, "writes-in-progress") == 0)
        return kp_error_set(err, KP_ERR_USAGE, NULL, 0, 0, "a previous `keyplan verify --writes` on this %s target was "
                            "interrupted before it undid its changes, so the target no longer matches the data; "
                            "re-seed it with `keyplan seed --force`, then verify again", v->b->name);
    if (strcmp(s, "migrating") == 0)
        return kp_error_set(err, KP_ERR_USAGE, NULL, 0, 0, "a `keyplan migrate` of this %s target to another version of "
                            "the model has not finished; rerun the same migrate command to finish it, then verify "
                            "with the new model and the data it wrote", v->b->name);
    if (strcmp(s, "complete") != 0)
        return kp_error_set(err, KP_ERR_USAGE, NULL, 0, 0, "seeding of this %s target has not finished (status '%s'); "
                            "rerun the same `keyplan seed` command to complete it", v->b->name, s);
    return 0;
}

void kp_verify_report_free(kp_verify_report *r)
{
    if (!r) return;
    for (size_t i = 0; i < r->pattern_count; i++) kp_verify_difference_free(&r->patterns[i].difference);
    for (size_t i = 0; i < r->write_count; i++) kp_verify_difference_free(&r->write_results[i].difference);
    free(r->patterns);
    free(r->write_results);
    for (size_t i = 0; i < r->container_count; i++) {
        kp_verify_container *c = &r->containers[i];
        free(c->name);
        for (int k = 0; k < KP_VERIFY_KEYS_SHOWN; k++) {
            free(c->missing_keys[k]);
            free(c->stray_keys[k]);
            free(c->changed_keys[k]);
        }
    }
    free(r->containers);
    memset(r, 0, sizeof *r);
}

static void print_summary(kp_vctx *v, int rc, const kp_error *err)
{
    FILE *out = v->o->progress;
    if (!out) return;
    kp_verify_progress(v, NULL);
    const kp_verify_report *r = v->r;
    fprintf(out, "verify of %s on %s: %d/%zu patterns passed", r->design, r->backend, r->patterns_passed,
            r->pattern_count);
    if (r->patterns_failed) fprintf(out, ", %d failed", r->patterns_failed);
    if (r->patterns_skipped) fprintf(out, ", %d not checked", r->patterns_skipped);
    if (r->is_read_back)
        fprintf(out, "; containers %zu/%zu as the data predicts", r->container_count - (size_t)r->containers_failed,
                r->container_count);
    if (r->writes) fprintf(out, "; writes %d/%zu passed%s", r->writes_passed, r->write_count,
                           r->is_undone ? ", undone" : ", NOT undone");
    fprintf(out, "; coverage %ld of %ld anchors, walked to the end: %s", r->anchors, r->anchors_total,
            r->is_walked_to_end ? "yes" : "no");
    fprintf(out, "; %ld requests; seed %llu; %.1f s", r->requests, (unsigned long long)r->seed, r->seconds);
    if (rc && err->code != KP_ERR_CHECK) fprintf(out, " (stopped: %s)", err->message);
    fputc('\n', out);
}

int kp_verify_run(const kp_verify_options *o, kp_verify_report *r, kp_error *err)
{
    memset(r, 0, sizeof *r);
    kp_error_clear(err);
    double started = kp_verify_now();
    kp_vctx v;
    memset(&v, 0, sizeof v);
    v.o = o;
    v.b = o->backend ? o->backend : o->design->backend;
    v.design = o->design;
    v.data = o->data;
    v.r = r;
    v.samples = o->samples > 0 ? o->samples : KP_VERIFY_ANCHORS;
    v.max_pages = o->max_pages > 0 ? o->max_pages : INT_MAX;
    v.is_tty = o->progress && isatty(fileno(o->progress));
    r->backend = v.b->name;
    r->design = o->design->candidate;
    r->seed = o->seed;
    r->samples = v.samples;
    r->max_pages = o->max_pages > 0 ? o->max_pages : 0;
    r->is_exhaustive = o->is_exhaustive;
    r->writes = o->writes;
    r->write_ops = o->write_ops > 0 ? o->write_ops : 3;
    r->pattern_count = o->model->pattern_count;
    r->patterns = calloc(r->pattern_count ? r->pattern_count : 1, sizeof *r->patterns);
    if (!r->patterns) return nomem(err);
    for (size_t i = 0; i < r->pattern_count; i++) r->patterns[i].pattern = o->model->patterns[i];

    int rc = 0, is_own_conn = 0;
    v.conn = o->conn;
    if (!v.conn) {
        if (v.b->connect(o->target, &v.conn, err)) { if (err->code == KP_OK) err->code = KP_ERR_TARGET; rc = -1; }
        else is_own_conn = 1;
    }
    kp_target_state state = {0};
    if (rc == 0 && v.b->inspect(v.conn, v.design, &state, err)) { if (err->code == KP_OK) err->code = KP_ERR_TARGET; rc = -1; }
    if (rc == 0) rc = check_marker(&v, &state, err);
    v.marker = state.marker;
    if (rc == 0 && o->writes && !v.b->apply_write)
        rc = kp_error_set(err, KP_ERR_USAGE, NULL, 0, 0, "--writes needs a backend that can apply writes (and undo "
                          "them); the %s backend cannot, so verify without --writes", v.b->name);

    /* the patterns' pages are read with requests in flight, each worker on a connection
     * of its own; --writes and the containers use the run's connection alone */
    int in_flight = o->in_flight > 0 ? o->in_flight : 1;
    r->in_flight = in_flight > 1 && o->target ? in_flight : 1;
    if (rc == 0 && r->in_flight > 1) rc = kp_vpool_open(&v, o->target, r->in_flight, &v.pool, err);
    size_t reached = 0; /* patterns started; the last one may have stopped part-way */
    for (size_t i = 0; rc == 0 && i < r->pattern_count; i++) {
        reached = i + 1;
        rc = check_pattern(&v, i, err);
    }
    kp_vpool_close(v.pool);
    v.pool = NULL;
    if (rc == 0 && !o->no_read_back) rc = check_containers(&v, err);
    if (rc == 0 && o->writes) rc = kp_verify_writes(&v, err);

    /* a run that stopped (server trouble, an interrupt) checked nothing after that point:
     * the pattern it stopped in is "not checked" unless a sample already failed, and those
     * it never reached are "not checked" too, so the summary adds up to the table */
    if (rc && err->code != KP_ERR_CHECK) {
        for (size_t i = reached ? reached - 1 : 0; i < r->pattern_count; i++) {
            kp_verify_pattern *vp = &r->patterns[i];
            vp->pattern = o->model->patterns[i];
            if (vp->samples_failed > 0 || vp->is_skipped || vp->is_bound_exceeded) continue;
            vp->is_pass = 0;
            vp->is_skipped = 1;
            vp->is_claim_mismatch = 0;
            if (i + 1 == reached && vp->samples > 0)
                snprintf(vp->note, sizeof vp->note, "not checked: the run stopped after %d sample%s (all matched): %.380s",
                         vp->samples, vp->samples == 1 ? "" : "s", err->message);
            else
                snprintf(vp->note, sizeof vp->note, "not checked: the run stopped before this pattern: %.400s", err->message);
        }
    }
    r->is_walked_to_end = 1;
    for (size_t i = 0; i < r->pattern_count; i++) {
        const kp_verify_pattern *vp = &r->patterns[i];
        r->anchors += vp->anchors;
        r->anchors_total += vp->is_skipped ? 0 : vp->anchors_total;
        if (vp->is_cut) r->is_walked_to_end = 0;
        if (vp->is_skipped) r->patterns_skipped++;
        else if (vp->is_pass) r->patterns_passed++;
        else r->patterns_failed++;
    }
    for (size_t i = 0; i < r->write_count; i++) {
        if (r->write_results[i].is_pass) r->writes_passed++;
        else r->writes_failed++;
    }
    r->seconds = kp_verify_now() - started;
    if (rc == 0 && (r->patterns_failed || r->writes_failed || r->containers_failed)) {
        const char *first = NULL;
        for (size_t i = 0; i < r->pattern_count && !first; i++)
            if (!r->patterns[i].is_pass && !r->patterns[i].is_skipped) first = r->patterns[i].pattern->name;
        for (size_t i = 0; i < r->write_count && !first; i++)
            if (!r->write_results[i].is_pass) first = r->write_results[i].write->name;
        for (size_t i = 0; i < r->container_count && !first; i++)
            if (!r->containers[i].is_match) first = r->containers[i].name;
        rc = kp_error_set(err, KP_ERR_CHECK, NULL, 0, 0, "verification failed on %s: %d pattern%s, %d write%s and %d "
                          "container%s did not match the model and the data (first: '%s'); see the report", v.b->name,
                          r->patterns_failed, r->patterns_failed == 1 ? "" : "s", r->writes_failed,
                          r->writes_failed == 1 ? "" : "s", r->containers_failed, r->containers_failed == 1 ? "" : "s",
                          first ? first : "?");
    }
    if (rc && err->code != KP_ERR_CHECK) snprintf(r->stopped, sizeof r->stopped, "%s", err->message);
    print_summary(&v, rc, err);
    cJSON_Delete(v.marker);
    if (v.has_readback) kp_readback_free(&v.readback);
    free(v.latencies);
    if (is_own_conn) v.b->disconnect(v.conn);
    return rc;
}
