/*
 * fetch.c — the two walkers of a plan tree: one prices it (the claims advise, compare and
 * verify hold a design to), one runs it (execute). See fetch.h.
 *
 * Invariant: the walkers differ only in what they do at a level; which levels follow which,
 * the round trip of each and the records each child is given are the same code's answer.
 */
#include <stdlib.h>

#include "backends/fetch.h"

int kp_fetch_add_child(kp_arena *arena, kp_fetch *parent, kp_fetch *child)
{
    kp_fetch **slot = kp_arena_push(arena, (void **)&parent->children, &parent->child_count, &parent->child_cap, sizeof *slot);
    if (!slot) return -1;
    *slot = child;
    return 0;
}

int kp_fetch_step(const kp_fetch *f, int parent_step)
{
    if (f->is_free) return parent_step;
    if (f->is_independent) return parent_step > 0 ? parent_step : 1;
    return parent_step + 1;
}

/* ---- claims ------------------------------------------------------------------------------------ */

static void claim(const kp_fetch *f, const kp_fetch_load *given, int parent_step, kp_fetch_price_fn price, void *ctx)
{
    kp_fetch_load in = *given;
    in.step = kp_fetch_step(f, parent_step);
    kp_fetch_load out = in;
    price(ctx, f, &in, &out);
    if (f->is_terminal) return;
    /* what the next levels run on: at least one record (a claim is for a page that has one) */
    kp_fetch_load next = out;
    if (next.expected <= 0) next.expected = 1;
    if (next.max <= 0) next.max = 1;
    if (f->next_hop) claim(f->next_hop, &next, out.step, price, ctx);
    for (size_t i = 0; i < f->child_count; i++) {
        const kp_fetch *c = f->children[i];
        kp_fetch_load on = c->is_on_inputs ? in : next;
        on.is_exact = next.is_exact;
        claim(c, &on, out.step, price, ctx);
    }
}

void kp_fetch_claim(const kp_fetch *root, kp_fetch_price_fn price, void *ctx)
{
    kp_fetch_load one = {.expected = 1, .max = 1, .step = 0, .is_exact = 1};
    claim(root, &one, 0, price, ctx);
}

static void visit(const kp_fetch *f, const kp_fetch *parent, kp_fetch_visit_fn fn, void *ctx)
{
    fn(ctx, f, parent);
    if (f->is_terminal) return;
    if (f->next_hop) visit(f->next_hop, f, fn, ctx);
    for (size_t i = 0; i < f->child_count; i++) visit(f->children[i], f, fn, ctx);
}

void kp_fetch_visit(const kp_fetch *root, kp_fetch_visit_fn fn, void *ctx) { visit(root, NULL, fn, ctx); }

/* ---- run --------------------------------------------------------------------------------------- */

int kp_fetch_set_push(kp_fetch_set *s, kp_frec *rec, kp_frec *origin, kp_frec *from)
{
    if (s->count == s->cap) {
        size_t cap = s->cap ? s->cap * 2 : 16;
        kp_fetch_pair *bigger = realloc(s->items, cap * sizeof *bigger);
        if (!bigger) return -1;
        s->items = bigger;
        s->cap = cap;
    }
    s->items[s->count++] = (kp_fetch_pair){rec, origin, from};
    return 0;
}

static int nomem(kp_fetch_runner *r)
{
    r->is_out_of_memory = 1;
    return -1;
}

static int run(kp_fetch_runner *r, const kp_fetch *f, const kp_fetch_set *in, int parent_step, const kp_fetch *first,
               const kp_fetch_set *first_in)
{
    int step = kp_fetch_step(f, parent_step);
    kp_fetch_set level = {0}, on_inputs = {0};
    long before = r->requests(r->ctx);
    int rc = r->read_level(r->ctx, f, in, &level, &step);
    if (rc == 0 && r->requests(r->ctx) > before && step > r->max_step) r->max_step = step;
    if (rc == 0 && f->next_hop) {
        /* the path goes on from what this level read, for the same context records */
        if (!level.count) r->is_cut_short = 1;
        else rc = run(r, f->next_hop, &level, step, first, first_in);
    } else if (rc == 0 && r->place) {
        rc = r->place(r->ctx, first, f, first_in, &level, &on_inputs);
    }
    /* the children run on the records this level read, each its own context (origin) */
    kp_fetch_set mine = {0};
    for (size_t k = 0; rc == 0 && !f->is_terminal && f->child_count && k < level.count; k++)
        if (kp_fetch_set_push(&mine, level.items[k].rec, level.items[k].rec, NULL)) rc = nomem(r);
    for (size_t i = 0; rc == 0 && !f->is_terminal && i < f->child_count; i++) {
        const kp_fetch *c = f->children[i];
        const kp_fetch_set *given = c->is_on_inputs ? &on_inputs : &mine;
        if (!given->count) r->is_cut_short = 1;
        else rc = run(r, c, given, step, c, given);
    }
    free(mine.items);
    free(on_inputs.items);
    free(level.items);
    return rc;
}

int kp_fetch_run(kp_fetch_runner *r, const kp_fetch *root)
{
    r->max_step = 0;
    r->is_cut_short = 0;
    r->is_out_of_memory = 0;
    kp_fetch_set in = {0};
    int rc = kp_fetch_set_push(&in, NULL, NULL, NULL) ? nomem(r) : run(r, root, &in, 0, root, &in);
    free(in.items);
    return rc;
}
