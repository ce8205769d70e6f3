/*
 * verify_sample.c — one sample of `keyplan verify` (the oracle's pages and the target's
 * pages of one parameter set, compared and measured), and a pattern's samples checked
 * with requests in flight on several connections (verify.h, "In flight").
 *
 * A sample is walked in segments of at most KP_VERIFY_SEGMENT pages. For each segment the
 * main thread first runs the oracle (the data and the oracle are never shared with
 * another thread), then the target's pages of the segment are read (backend execute
 * only: by a worker on its own connection, or inline when nothing is in flight), then
 * the main thread compares them in page order with the rules verify.h states and takes
 * every measure. A segment's target walk stops where the page-by-page walk would: at the
 * target's last page, and one page after the oracle's last (to see that the target has no
 * more). Only a difference found part-way through a segment leaves pages read that are
 * neither compared nor measured.
 *
 * Invariant: whatever the number of requests in flight and the order they come back in,
 * a pattern's report is the same: samples are numbered as they are drawn, the difference
 * kept is the lowest-numbered sample's, and the page named for an exceeded bound is the
 * lowest (sample, page).
 */
#include "migrations/verify_internal.h"

#include <limits.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "core/oracle.h"

/* Pages per segment: what a walk to the end holds in memory at once per sample. */
#define KP_VERIFY_SEGMENT 16

static int nomem(kp_error *err) { return kp_error_set(err, KP_ERR_NOMEM, NULL, 0, 0, "out of memory"); }

/* ---- walking the response shape --------------------------------------------------------- */

/* The array the paged $each produced in a response, or NULL. */
static const cJSON *paged_array(const kp_shape *shape, const cJSON *node, const kp_shape *target)
{
    if (!shape || !node) return NULL;
    if (shape == target) return cJSON_IsArray(node) ? node : NULL;
    if ((shape->kind != KP_SHAPE_OBJECT && shape->kind != KP_SHAPE_ONE) || !cJSON_IsObject(node)) return NULL;
    for (size_t i = 0; i < shape->member_count; i++) {
        const kp_shape *m = shape->members[i];
        const cJSON *found = paged_array(m, cJSON_GetObjectItemCaseSensitive(node, m->name), target);
        if (found) return found;
    }
    return NULL;
}

static void neutralize(const kp_shape *shape, cJSON *node);

static void neutralize_members(kp_shape *const *members, size_t count, cJSON *object)
{
    if (!cJSON_IsObject(object)) return;
    for (size_t i = 0; i < count; i++) {
        cJSON *child = cJSON_GetObjectItemCaseSensitive(object, members[i]->name);
        if (!child) continue;
        if (members[i]->kind == KP_SHAPE_TOKEN) {
            cJSON *null = cJSON_CreateNull();
            if (null) cJSON_ReplaceItemInObjectCaseSensitive(object, members[i]->name, null);
        } else {
            neutralize(members[i], child);
        }
    }
}

/* Sets every member that carries a continuation token to null: tokens are never compared. */
static void neutralize(const kp_shape *shape, cJSON *node)
{
    if (!shape || !node) return;
    if (shape->kind == KP_SHAPE_OBJECT || shape->kind == KP_SHAPE_ONE) {
        neutralize_members(shape->members, shape->member_count, node);
    } else if (shape->kind == KP_SHAPE_EACH && !shape->value && cJSON_IsArray(node)) {
        for (cJSON *el = node->child; el; el = el->next) neutralize_members(shape->members, shape->member_count, el);
    }
}

static int is_empty_page(const kp_pattern *p, const kp_result *res)
{
    const cJSON *array = paged_array(p->returns, res->response, p->paged);
    if (array) return cJSON_GetArraySize(array) == 0;
    return res->items_returned == 0;
}

/* ---- one sample ------------------------------------------------------------------------------ */

static int set_difference(kp_verify_difference *d, const kp_params *params, int sample, int page, const char *path,
                          const char *expected, const char *actual, const char *prefix)
{
    memset(d, 0, sizeof *d);
    cJSON *pj = kp_params_to_json(params);
    d->params = pj ? cJSON_PrintUnformatted(pj) : strdup("{}");
    cJSON_Delete(pj);
    d->sample = sample;
    d->page = page;
    d->path = strdup(path);
    d->expected = strdup(expected);
    d->actual = strdup(actual);
    char head[160];
    if (sample > 0) snprintf(head, sizeof head, "sample %d, page %d", sample, page);
    else snprintf(head, sizeof head, "page %d", page);
    size_t n = strlen(head) + strlen(d->params ? d->params : "") + strlen(path) + strlen(expected) + strlen(actual) +
               strlen(prefix ? prefix : "") + 64;
    d->message = malloc(n);
    if (d->message)
        snprintf(d->message, n, "%s%s, params %s: %s: expected %s, actual %s", prefix ? prefix : "", head,
                 d->params ? d->params : "{}", path, expected, actual);
    if (!d->params || !d->path || !d->expected || !d->actual || !d->message) {
        kp_verify_difference_free(d);
        return -1;
    }
    return 0;
}

static int push_latency(kp_vctx *v, double ms)
{
    if (v->latency_count == v->latency_cap) {
        size_t cap = v->latency_cap ? v->latency_cap * 2 : 64;
        double *bigger = realloc(v->latencies, cap * sizeof *bigger);
        if (!bigger) return -1;
        v->latencies = bigger;
        v->latency_cap = cap;
    }
    v->latencies[v->latency_count++] = ms;
    return 0;
}

/* ---- the first page past the plan's bound -------------------------------------------------- */

/* The lowest (sample, page) that read more than the plan's bound for a page: named in the
 * pattern's note when its samples are done. */
typedef struct bound_note {
    int is_set, sample, page;
    char text[400];
} bound_note;

static void check_bound(bound_note *b, const kp_params *params, int sample, int page, const char *what, long measured,
                        double bound)
{
    if (bound <= 0 || (double)measured <= bound * (1 + 1e-9)) return;
    if (b->is_set && (b->sample < sample || (b->sample == sample && b->page <= page))) return;
    b->is_set = 1;
    b->sample = sample;
    b->page = page;
    cJSON *pj = params ? kp_params_to_json(params) : NULL;
    char *pt = pj ? cJSON_PrintUnformatted(pj) : NULL;
    cJSON_Delete(pj);
    snprintf(b->text, sizeof b->text, "page %d (params %.160s) read %ld %s; the plan's bound for a page is %.0f (the "
             "claim is wrong: it must cover what the plan reads)", page, pt ? pt : "{}", measured, what, bound);
    cJSON_free(pt);
}

static void bound_note_apply(const bound_note *b, kp_verify_pattern *m)
{
    if (!b->is_set) return;
    m->is_bound_exceeded = 1;
    size_t o = strlen(m->note);
    snprintf(m->note + o, sizeof m->note - o, "%s%s", o ? "; " : "", b->text);
}

static void measure_page(kp_vctx *v, kp_verify_pattern *m, bound_note *bn, const kp_params *params, const kp_result *res,
                         int sample, int page, double ms)
{
    v->r->requests += res->requests;
    if (!m) return;
    m->pages++;
    m->requests += res->requests;
    m->items_returned += res->items_returned;
    if (res->items_read < 0) m->items_read = -1;
    else if (m->items_read >= 0) m->items_read += res->items_read;
    if (res->bytes_read < 0) m->bytes_read = -1;
    else if (m->bytes_read >= 0) m->bytes_read += res->bytes_read;
    if (res->requests > m->page_requests_max) m->page_requests_max = res->requests;
    if (res->items_read > m->page_items_max) m->page_items_max = res->items_read;
    if (res->bytes_read > m->page_bytes_max) m->page_bytes_max = res->bytes_read;
    if (bn) {
        /* requests before items before bytes, as named when one page exceeds several */
        bound_note one = {0};
        check_bound(&one, params, sample, page, "requests", res->requests, m->bound_requests);
        if (res->items_read >= 0 && !one.is_set)
            check_bound(&one, params, sample, page, "items", res->items_read, m->bound_items);
        if (res->bytes_read >= 0 && !one.is_set)
            check_bound(&one, params, sample, page, "bytes", res->bytes_read, m->bound_bytes);
        if (one.is_set && (!bn->is_set || one.sample < bn->sample || (one.sample == bn->sample && one.page < bn->page)))
            *bn = one;
    }
    m->seconds += ms / 1000;
    push_latency(v, ms);
    if (page == 1) {
        if (res->requests < m->first_requests_min) m->first_requests_min = res->requests;
        if (res->requests > m->first_requests_max) m->first_requests_max = res->requests;
        if (res->sequential_steps < m->first_steps_min) m->first_steps_min = res->sequential_steps;
        if (res->sequential_steps > m->first_steps_max) m->first_steps_max = res->sequential_steps;
        if (res->sequential_steps < m->claimed_steps && !res->is_cut_short) m->first_short_uncut++;
    }
}

/* ---- one sample, segment by segment ---------------------------------------------------------- */

typedef struct vpage {
    kp_result actual;
    int rc;                     /* execute's return */
    kp_error err;               /* ... and its error */
    double ms;                  /* the wall time of the execute call */
} vpage;

typedef struct vsample {
    const kp_pattern *p;
    kp_params *params;          /* owned */
    int sample;                 /* 1-based; 0 for a targeted check after a write */
    int page;                   /* pages compared so far */
    char *oracle_token;         /* where the oracle's next segment starts (NULL: the first page) */
    char *backend_page;         /* ... and the target's */
    int oracle_done;            /* the oracle has no more pages: the target's next page must be empty */
    kp_oracle_cache *cache;     /* what the oracle's pages of this sample share */
    /* the segment under way */
    kp_oracle_result *expected; /* the oracle's pages */
    int expected_count;
    vpage *pages;               /* the target's pages (limit allocated, page_count read) */
    int limit, page_count;
    /* the outcome */
    int is_finished;
    int is_different;           /* with diff filled */
    kp_verify_difference diff;
    struct vsample *next;       /* in a pool's queue */
} vsample;

static void segment_free(vsample *s)
{
    for (int i = 0; i < s->expected_count; i++) kp_oracle_result_free(&s->expected[i]);
    for (int i = 0; i < s->page_count; i++) kp_result_free(&s->pages[i].actual);
    free(s->expected);
    free(s->pages);
    s->expected = NULL;
    s->pages = NULL;
    s->expected_count = s->page_count = s->limit = 0;
}

static void sample_free(vsample *s)
{
    if (!s) return;
    segment_free(s);
    kp_params_free(s->params);
    free(s->oracle_token);
    free(s->backend_page);
    kp_oracle_cache_free(s->cache);
    if (s->is_different) kp_verify_difference_free(&s->diff);
    free(s);
}

/* The oracle's pages of the next segment, and how many pages of the target it needs. */
static int oracle_segment(kp_vctx *v, vsample *s, kp_error *err)
{
    int room = v->max_pages - s->page;
    if (room > KP_VERIFY_SEGMENT) room = KP_VERIFY_SEGMENT;
    s->expected = s->oracle_done ? NULL : calloc((size_t)room, sizeof *s->expected);
    s->pages = calloc((size_t)room + 1, sizeof *s->pages);
    if (!s->cache) s->cache = kp_oracle_cache_new();
    if ((!s->oracle_done && !s->expected) || !s->pages || !s->cache) return nomem(err);
    if (s->oracle_done) {
        s->limit = 1;
        return 0;
    }
    const char *token = s->oracle_token;
    int is_last = 0;
    while (s->expected_count < room && !is_last) {
        kp_oracle_result *e = &s->expected[s->expected_count];
        if (kp_oracle_run_cached(v->data, s->p, s->params, token, s->cache, e, err)) return -1;
        s->expected_count++;
        token = e->next_token;
        is_last = token == NULL;
    }
    /* after the oracle's last page, one more of the target's (when the page limit allows) */
    s->limit = s->expected_count + (is_last && s->page + s->expected_count < v->max_pages);
    return 0;
}

/* The target's pages of the segment, on `conn`: touches nothing but the sample and the
 * connection, so a worker thread can run it. */
static void backend_segment(const kp_backend *b, kp_conn *conn, const kp_design *d, vsample *s,
                            volatile sig_atomic_t *interrupted)
{
    const char *token = s->backend_page;
    for (int i = 0; i < s->limit; i++) {
        vpage *pg = &s->pages[i];
        s->page_count++;
        pg->actual.items_read = pg->actual.bytes_read = -1;
        kp_error_clear(&pg->err);
        if (interrupted && *interrupted) {
            pg->rc = kp_error_set(&pg->err, KP_ERR_TARGET, NULL, 0, 0, "interrupted");
            break;
        }
        double t0 = kp_verify_now();
        pg->rc = b->execute(conn, d, s->p, s->params, token, &pg->actual, &pg->err);
        pg->ms = (kp_verify_now() - t0) * 1000;
        if (pg->rc || !pg->actual.next_page) break;
        token = pg->actual.next_page;
    }
}

static int finish(vsample *s, int is_different)
{
    s->is_finished = 1;
    s->is_different = is_different;
    return 0;
}

static int differ(vsample *s, const char *path, const char *expected, const char *actual, kp_error *err)
{
    if (set_difference(&s->diff, s->params, s->sample, s->page, path, expected, actual, NULL)) return nomem(err);
    return finish(s, 1);
}

/* Compares the segment's pages in order and measures each. -1 with err on server trouble
 * or out of memory; otherwise 0, with the sample finished or ready for its next segment. */
static int compare_segment(kp_vctx *v, vsample *s, kp_verify_pattern *measure, bound_note *bn, kp_error *err)
{
    int rc = 0;
    for (int i = 0; i < s->page_count && rc == 0 && !s->is_finished; i++) {
        vpage *pg = &s->pages[i];
        s->page++;
        if (pg->rc) {
            if (pg->err.code == KP_ERR_TARGET || pg->err.code == KP_ERR_NOMEM || pg->err.code == KP_OK) {
                *err = pg->err;
                if (err->code == KP_OK) err->code = KP_ERR_TARGET;
                rc = -1;
                break;
            }
            char actual_text[600];
            snprintf(actual_text, sizeof actual_text, "an error from the %s backend: %s", v->b->name, pg->err.message);
            rc = differ(s, "$", "a response", actual_text, err);
            break;
        }
        const kp_result *actual = &pg->actual;
        measure_page(v, measure, bn, s->params, actual, s->sample, s->page, pg->ms);
        if (s->oracle_done) {
            /* the oracle has nothing more: the backend's extra page must be empty; an empty
             * page (with or without a continuation) ends the traversal */
            if (is_empty_page(s->p, actual)) {
                rc = finish(s, 0);
            } else {
                const cJSON *array = paged_array(s->p->returns, actual->response, s->p->paged);
                char *text = cJSON_PrintUnformatted(array ? array : actual->response);
                char actual_text[400];
                snprintf(actual_text, sizeof actual_text, "another page: %.300s%s", text ? text : "?",
                         text && strlen(text) > 300 ? "..." : "");
                free(text);
                rc = differ(s, "$", "no more pages", actual_text, err);
            }
            break;
        }
        kp_oracle_result *expected = &s->expected[i];
        neutralize(s->p->returns, expected->response);
        neutralize(s->p->returns, pg->actual.response);
        char *path = NULL, *et = NULL, *at = NULL;
        int d = kp_json_diff(expected->response, actual->response, &path, &et, &at);
        if (d < 0) rc = nomem(err);
        else if (d > 0) rc = differ(s, path, et, at, err);
        free(path);
        free(et);
        free(at);
        if (rc || s->is_finished) break;
        if (expected->next_token && !actual->next_page) {
            rc = differ(s, "$", "a next page (the oracle has more results)", "no continuation", err);
        } else if (!expected->next_token && !actual->next_page) {
            rc = finish(s, 0);
        } else {
            if (!expected->next_token) s->oracle_done = 1;
            free(s->oracle_token);
            s->oracle_token = expected->next_token;
            expected->next_token = NULL;
            free(s->backend_page);
            s->backend_page = pg->actual.next_page;
            pg->actual.next_page = NULL;
        }
    }
    if (rc == 0 && !s->is_finished && s->page >= v->max_pages) {
        /* the page limit stopped a walk that had pages left */
        if (measure && v->max_pages != INT_MAX) measure->is_cut = 1;
        finish(s, 0);
    }
    segment_free(s);
    return rc;
}

int kp_verify_sample(kp_vctx *v, const kp_pattern *p, const kp_params *params, kp_verify_pattern *measure, int sample,
                     kp_verify_difference *diff, kp_error *err)
{
    memset(diff, 0, sizeof *diff);
    vsample *s = calloc(1, sizeof *s);
    if (!s || !(s->params = kp_params_copy(params))) { free(s); return nomem(err); }
    s->p = p;
    s->sample = sample;
    bound_note bn = {0};
    int rc = 0;
    while (rc == 0 && !s->is_finished) {
        rc = oracle_segment(v, s, err);
        if (rc == 0) {
            backend_segment(v->b, v->conn, v->design, s, v->o->interrupted);
            rc = compare_segment(v, s, measure, &bn, err);
        }
    }
    if (measure) bound_note_apply(&bn, measure);
    if (rc == 0 && s->is_different) {
        *diff = s->diff;
        s->is_different = 0;
        rc = 1;
    }
    sample_free(s);
    return rc;
}

/* ---- in flight: workers, each on a connection of its own ------------------------------------ */

struct kp_vpool {
    kp_vctx *v;
    pthread_mutex_t lock;
    pthread_cond_t has_work, has_done;
    vsample *todo, *todo_tail;  /* segments to read, oldest first */
    vsample *done, *done_tail;  /* segments read, to compare */
    int is_closing;
    size_t count;               /* workers started */
    pthread_t *threads;
    kp_conn **conns;            /* conns[0] is the run's own (not closed here) */
    size_t conn_count;
};

typedef struct worker_arg { kp_vpool *pool; kp_conn *conn; } worker_arg;

static void push(vsample **head, vsample **tail, vsample *s)
{
    s->next = NULL;
    if (*tail) (*tail)->next = s;
    else *head = s;
    *tail = s;
}

static vsample *pop(vsample **head, vsample **tail)
{
    vsample *s = *head;
    if (!s) return NULL;
    *head = s->next;
    if (!*head) *tail = NULL;
    s->next = NULL;
    return s;
}

static void *worker_main(void *p)
{
    worker_arg *a = p;
    kp_vpool *pool = a->pool;
    pthread_mutex_lock(&pool->lock);
    for (;;) {
        while (!pool->todo && !pool->is_closing) pthread_cond_wait(&pool->has_work, &pool->lock);
        vsample *s = pop(&pool->todo, &pool->todo_tail);
        if (!s) break; /* closing, nothing left */
        pthread_mutex_unlock(&pool->lock);
        backend_segment(pool->v->b, a->conn, pool->v->design, s, pool->v->o->interrupted);
        pthread_mutex_lock(&pool->lock);
        push(&pool->done, &pool->done_tail, s);
        pthread_cond_signal(&pool->has_done);
    }
    pthread_mutex_unlock(&pool->lock);
    free(a);
    return NULL;
}

void kp_vpool_close(kp_vpool *pool)
{
    if (!pool) return;
    pthread_mutex_lock(&pool->lock);
    pool->is_closing = 1;
    pthread_cond_broadcast(&pool->has_work);
    pthread_mutex_unlock(&pool->lock);
    for (size_t i = 0; i < pool->count; i++) pthread_join(pool->threads[i], NULL);
    for (size_t i = 1; i < pool->conn_count; i++) pool->v->b->disconnect(pool->conns[i]);
    pthread_mutex_destroy(&pool->lock);
    pthread_cond_destroy(&pool->has_work);
    pthread_cond_destroy(&pool->has_done);
    free(pool->threads);
    free(pool->conns);
    free(pool);
}

int kp_vpool_open(kp_vctx *v, const kp_target *target, int in_flight, kp_vpool **out, kp_error *err)
{
    *out = NULL;
    kp_vpool *pool = calloc(1, sizeof *pool);
    if (!pool) return nomem(err);
    pool->v = v;
    pool->threads = calloc((size_t)in_flight, sizeof *pool->threads);
    pool->conns = calloc((size_t)in_flight, sizeof *pool->conns);
    if (!pool->threads || !pool->conns || pthread_mutex_init(&pool->lock, NULL)) {
        free(pool->threads);
        free(pool->conns);
        free(pool);
        return nomem(err);
    }
    pthread_cond_init(&pool->has_work, NULL);
    pthread_cond_init(&pool->has_done, NULL);
    /* every connection is opened here, on this thread, before any worker starts */
    pool->conns[pool->conn_count++] = v->conn;
    int rc = 0;
    while (rc == 0 && pool->conn_count < (size_t)in_flight) {
        if (v->b->connect(target, &pool->conns[pool->conn_count], err)) {
            if (err->code == KP_OK) err->code = KP_ERR_TARGET;
            rc = -1;
        } else {
            pool->conn_count++;
        }
    }
    for (size_t i = 0; rc == 0 && i < pool->conn_count; i++) {
        worker_arg *a = malloc(sizeof *a);
        if (a) *a = (worker_arg){pool, pool->conns[i]};
        if (!a || pthread_create(&pool->threads[i], NULL, worker_main, a)) {
            free(a);
            rc = kp_error_set(err, KP_ERR_NOMEM, NULL, 0, 0, "cannot start a verify worker thread");
        } else {
            pool->count++;
        }
    }
    if (rc) { kp_vpool_close(pool); return -1; }
    *out = pool;
    return 0;
}

/* Hands a segment to read to the pool, or reads it here when there is no pool. */
static void send_segment(kp_vctx *v, vsample *s, vsample **done, vsample **done_tail)
{
    kp_vpool *pool = v->pool;
    if (!pool) {
        backend_segment(v->b, v->conn, v->design, s, v->o->interrupted);
        push(done, done_tail, s);
        return;
    }
    pthread_mutex_lock(&pool->lock);
    push(&pool->todo, &pool->todo_tail, s);
    pthread_cond_signal(&pool->has_work);
    pthread_mutex_unlock(&pool->lock);
}

static vsample *next_done(kp_vctx *v, vsample **done, vsample **done_tail)
{
    kp_vpool *pool = v->pool;
    if (!pool) return pop(done, done_tail);
    pthread_mutex_lock(&pool->lock);
    while (!pool->done) pthread_cond_wait(&pool->has_done, &pool->lock);
    vsample *s = pop(&pool->done, &pool->done_tail);
    pthread_mutex_unlock(&pool->lock);
    return s;
}

/* A finished sample's outcome, into the pattern's report. */
static void record_sample(kp_verify_pattern *vp, vsample *s)
{
    vp->samples++;
    if (!s->is_different) return;
    vp->samples_failed++;
    if (vp->has_difference && vp->difference.sample < s->sample) return;
    if (vp->has_difference) kp_verify_difference_free(&vp->difference);
    vp->difference = s->diff;
    vp->has_difference = 1;
    s->is_different = 0;
}

int kp_verify_samples(kp_vctx *v, const kp_pattern *p, kp_verify_pattern *vp, kp_verify_draw_fn draw, void *ctx,
                      kp_error *err)
{
    int window = v->pool ? (int)v->pool->count * 2 : 1;
    int in_flight = 0, is_drawing = 1, next_sample = 1, rc = 0;
    vsample *done = NULL, *done_tail = NULL;
    bound_note bn = {0};
    while (in_flight > 0 || (rc == 0 && is_drawing)) {
        while (rc == 0 && is_drawing && in_flight < window) {
            if (v->o->interrupted && *v->o->interrupted) {
                rc = kp_error_set(err, KP_ERR_TARGET, NULL, 0, 0, "interrupted");
                break;
            }
            kp_params *params = NULL;
            int d = draw(ctx, &params, err);
            if (d < 0) rc = -1;
            if (d != 0) { is_drawing = 0; break; }
            vsample *s = calloc(1, sizeof *s);
            if (!s) { kp_params_free(params); rc = nomem(err); break; }
            s->p = p;
            s->params = params;
            s->sample = next_sample++;
            if (oracle_segment(v, s, err)) { sample_free(s); rc = -1; break; }
            send_segment(v, s, &done, &done_tail);
            in_flight++;
        }
        if (in_flight == 0) break;
        vsample *s = next_done(v, &done, &done_tail);
        /* after a stop, what is still in flight is collected and dropped */
        int is_kept = rc == 0;
        if (is_kept && compare_segment(v, s, vp, &bn, err)) is_kept = 0, rc = -1;
        if (is_kept && !s->is_finished) {
            if (oracle_segment(v, s, err) == 0) {
                send_segment(v, s, &done, &done_tail);
                continue;
            }
            is_kept = 0;
            rc = -1;
        }
        if (is_kept) record_sample(vp, s);
        sample_free(s);
        in_flight--;
    }
    bound_note_apply(&bn, vp);
    return rc;
}
