/*
 * verify_internal.h — what verify.c (reads, the run) and verify_writes.c (writes and
 * their undo) share. Not part of the public API.
 */
#ifndef KP_VERIFY_INTERNAL_H
#define KP_VERIFY_INTERNAL_H

#include "migrations/verify.h"
#include "core/sample.h"

typedef struct kp_vctx {
    const kp_verify_options *o;
    const kp_backend *b;
    kp_conn *conn;
    const kp_design *design;
    kp_dataset *data;
    kp_verify_report *r;
    cJSON *marker;              /* the target's marker (owned) */
    int max_pages;
    int samples;
    int is_tty;
    double last_line;
    kp_readback readback;       /* the containers as the read-back check found them, kept for
                                   --writes' "before" (nothing is written in between) */
    int has_readback;
    double *latencies;          /* ms per page, of the pattern being checked */
    size_t latency_count, latency_cap;
    struct kp_vpool *pool;      /* workers reading pages with requests in flight; NULL: one at a time */
} kp_vctx;

typedef struct kp_vpool kp_vpool;

/* The monotonic clock, in seconds. */
double kp_verify_now(void);

/* The pages of each fresh sample `verify --writes` checks after a write's operations. */
#define KP_VERIFY_WRITES_PAGES 3

/* Checks one parameter set of a pattern, page by page. `measure` (may be NULL)
 * accumulates requests, pages, latencies and first-page claims. Returns 0 when the
 * target agreed, 1 with *diff filled (the caller owns its strings) when it did not,
 * -1 with err on server trouble (KP_ERR_TARGET) or out of memory. An execute error that
 * is not server trouble is a difference (path "$", the error as the actual value). */
int kp_verify_sample(kp_vctx *v, const kp_pattern *pattern, const kp_params *params, kp_verify_pattern *measure,
                     int sample, kp_verify_difference *diff, kp_error *err);

/* Starts `in_flight` workers (>= 2), each on a connection of its own: the run's (v->conn)
 * and in_flight - 1 more opened to `target` here. -1 with err (KP_ERR_TARGET) when one
 * cannot be opened. The backend's execute must be safe to call at the same time on
 * different connections (backend.h). */
int kp_vpool_open(kp_vctx *v, const kp_target *target, int in_flight, kp_vpool **out, kp_error *err);
void kp_vpool_close(kp_vpool *pool);

/* Draws a pattern's next parameter set: 0 with *params (the caller owns them), 1 when there
 * are no more, -1 with err. */
typedef int (*kp_verify_draw_fn)(void *ctx, kp_params **params, kp_error *err);

/* Checks every parameter set `draw` gives, numbered 1, 2, ... as drawn, with as many in
 * flight as v->pool has workers times two (one at a time without a pool), and fills vp:
 * samples, samples_failed, the lowest-numbered sample's difference, every page's measures
 * and the first page past the plan's bound. Returns 0, or -1 with err on server trouble,
 * an interrupt or out of memory (what was in flight is dropped). */
int kp_verify_samples(kp_vctx *v, const kp_pattern *p, kp_verify_pattern *vp, kp_verify_draw_fn draw, void *ctx,
                      kp_error *err);

/* Calls fn for every item the data makes under the design (backend transform, each item
 * with its id); stops at the first non-zero return. */
typedef int (*kp_verify_item_fn)(void *ctx, kp_item *item, kp_error *err);
int kp_verify_each_item(kp_vctx *v, kp_verify_item_fn fn, void *ctx, kp_error *err);

/* A sampler for a phase of the run: the seed mixed with a name. */
int kp_verify_sampler(kp_vctx *v, const char *name, kp_sampler **out, kp_error *err);

void kp_verify_difference_free(kp_verify_difference *diff);

/* The --writes phase (verify_writes.c): applies, checks, undoes; fills r->write_results.
 * Returns 0 (failures are in the report), or -1 with err when the target could not be
 * restored or answered with server trouble. */
int kp_verify_writes(kp_vctx *v, kp_error *err);

/* The progress line (TTY only). */
void kp_verify_progress(kp_vctx *v, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
