/*
 * fetch.h — the plan tree of an access pattern, as every backend builds it: one node type
 * that each backend's own fetch node embeds as its first member, the walker that computes
 * the plan's claims from the tree, and the walker that runs the same tree against a server.
 *
 * A node reads one level: for each record it is given (its inputs), the records it reaches
 * (a key look-up, a query, a find, a SELECT, or records already in hand: copies, keys,
 * embedded documents). Its next hop runs on what it read (a multi-hop path, a join); its
 * children run on what it read too. A backend supplies only what one level costs (claims)
 * and how one level is read and placed in the response (run); the order of the levels, the
 * round trip each one goes in and what each child runs on are decided here, once, for both.
 * Invariant: both walkers visit the same nodes in the same order with the same round trips
 * (kp_fetch_step): a step the claims count is a step the run can take, and no level runs
 * that the claims did not price.
 */
#ifndef KP_FETCH_H
#define KP_FETCH_H

#include <stddef.h>

#include "backends/assemble.h"
#include "core/arena.h"

typedef struct kp_fetch kp_fetch;
struct kp_fetch {
    kp_fetch *next_hop;         /* runs on each record this node reads (a path goes on) */
    kp_fetch **children;        /* run on the records this node reads, after its next hop */
    size_t child_count, child_cap;
    unsigned is_free : 1;       /* sends no request: reads what earlier answers hold */
    unsigned is_independent : 1;/* its keys come from the parameters: sent in its parent's round trip */
    unsigned is_terminal : 1;   /* nothing runs on what it reads (a count) */
    unsigned is_on_inputs : 1;  /* a child that runs on its parent's inputs, not on what the parent
                                   read (DynamoDB: the children of a header item read with a listing) */
};

/* Appends child to parent's children (arena-owned array). 0, or -1 when out of memory. */
int kp_fetch_add_child(kp_arena *arena, kp_fetch *parent, kp_fetch *child);

/* The round trip f's requests go in when its inputs arrived in round trip `parent_step` (0:
 * the parameters): the same one for a free or independent node (at least the first), the
 * next one otherwise. */
int kp_fetch_step(const kp_fetch *f, int parent_step);

/* ---- claims ------------------------------------------------------------------------------------ */

/* Records a level is given or yields. */
typedef struct kp_fetch_load {
    double expected;            /* how many, expected */
    double max;                 /* the most there can be (the model's maxima along the way) */
    int step;                   /* the round trip they come from (given) or arrive in (yielded) */
    int is_exact;               /* their count is known exactly (a request per record counts exactly) */
} kp_fetch_load;

/* A backend's price of one level: adds f's operations to its plan for `in` (in->step is f's
 * round trip) and says what f yields to its next hop and children in `out`, which starts as a
 * copy of `in` (a level that takes one more round trip, say a re-read, raises out->step). */
typedef void (*kp_fetch_price_fn)(void *ctx, const kp_fetch *f, const kp_fetch_load *in, kp_fetch_load *out);

/* Walks the tree from its root (one input, exact, before the first round trip) and prices
 * every level, parents before children. */
void kp_fetch_claim(const kp_fetch *root, kp_fetch_price_fn price, void *ctx);

/* Calls visit on every node kp_fetch_claim prices, in its order (a node, the path of its next
 * hop, then its children; nothing below a terminal node), with the node whose records it
 * runs on (NULL for the root): what lists a plan's operations (emit) lists them in the
 * plan's order. */
typedef void (*kp_fetch_visit_fn)(void *ctx, const kp_fetch *f, const kp_fetch *parent);
void kp_fetch_visit(const kp_fetch *root, kp_fetch_visit_fn visit, void *ctx);

/* ---- run --------------------------------------------------------------------------------------- */

/* A record read, the record of the response it belongs under (origin: the parent of the
 * $each it is an element of; NULL: the record itself) and the input it was read from. */
typedef struct kp_fetch_pair { kp_frec *rec; kp_frec *origin; kp_frec *from; } kp_fetch_pair;
typedef struct kp_fetch_set { kp_fetch_pair *items; size_t count, cap; } kp_fetch_set;

/* 0, or -1 when out of memory. */
int kp_fetch_set_push(kp_fetch_set *s, kp_frec *rec, kp_frec *origin, kp_frec *from);

typedef struct kp_fetch_runner {
    void *ctx;
    /* Reads one level: for each input, the records f reaches, appended to `out`. *step is f's
     * round trip; a level that needs one more (a re-read) raises it. 0, or -1 (the backend
     * holds the error). */
    int (*read_level)(void *ctx, const kp_fetch *f, const kp_fetch_set *in, kp_fetch_set *out, int *step);
    /* Places what a path read into the response: `first` is the node the path starts at and
     * `first_in` its inputs, `last` the node that read `level`. Records the children marked
     * is_on_inputs run on go to `on_inputs`. NULL: the levels place their own records. */
    int (*place)(void *ctx, const kp_fetch *first, const kp_fetch *last, const kp_fetch_set *first_in,
                 const kp_fetch_set *level, kp_fetch_set *on_inputs);
    /* Requests the backend has sent so far: a round trip counts when a level sent one. */
    long (*requests)(void *ctx);
    /* filled by kp_fetch_run */
    int max_step;               /* the deepest round trip a request went in (kp_result.sequential_steps) */
    int is_cut_short;           /* a level found nothing to go on with (kp_result.is_cut_short) */
    int is_out_of_memory;       /* the walker itself ran out of memory */
} kp_fetch_runner;

/* Runs the tree from its root (one input with no record). 0, or -1: the backend's error, or
 * is_out_of_memory. */
int kp_fetch_run(kp_fetch_runner *r, const kp_fetch *root);

#endif
