/*
 * test_fetch.c — the shared plan tree's two walkers (backends/fetch.c): the one that
 * prices a tree (claims) and the one that runs it (execute) visit the same levels in the
 * same order with the same round trips, children are given what their parent yields,
 * and a round trip counts in a run only when a level sent a request.
 *
 * The trees are built by hand with a test node that embeds kp_fetch the way each
 * backend's node does; the "backend" here yields a fixed number of records per input.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "backends/fetch.h"

typedef struct node {
    kp_fetch base;
    const char *name;
    int per_input;              /* records read per input */
    int sends;                  /* requests per input (0: a free level) */
    int extra_trip;             /* a re-read: one more round trip */
} node;

#define MAX_VISITS 32

typedef struct trace {
    const char *names[MAX_VISITS];
    int steps[MAX_VISITS];
    double inputs[MAX_VISITS];
    double inputs_max[MAX_VISITS];
    size_t count;
    long requests;
    kp_frec pool[4096];         /* the records the fake levels read */
    size_t used;
    kp_frec header;             /* what an on-inputs child runs on */
} trace;

static kp_arena arena;

static node *make(const char *name, int per_input, int sends)
{
    node *n = kp_arena_alloc(&arena, sizeof *n);
    assert_non_null(n);
    n->name = name;
    n->per_input = per_input;
    n->sends = sends;
    n->base.is_free = sends == 0;
    return n;
}

static void add(node *parent, node *child) { assert_int_equal(kp_fetch_add_child(&arena, &parent->base, &child->base), 0); }

static void record(trace *t, const node *n, int step, double in, double in_max)
{
    assert_true(t->count < MAX_VISITS);
    t->names[t->count] = n->name;
    t->steps[t->count] = step;
    t->inputs[t->count] = in;
    t->inputs_max[t->count] = in_max;
    t->count++;
}

static void price(void *ctx, const kp_fetch *f, const kp_fetch_load *in, kp_fetch_load *out)
{
    const node *n = (const node *)f;
    record(ctx, n, in->step, in->expected, in->max);
    out->expected = in->expected * n->per_input;
    out->max = in->max * n->per_input * 2;
    if (n->extra_trip) out->step = in->step + 1;
}

static int read_level(void *ctx, const kp_fetch *f, const kp_fetch_set *in, kp_fetch_set *out, int *step)
{
    trace *t = ctx;
    const node *n = (const node *)f;
    record(t, n, *step, (double)in->count, (double)in->count);
    for (size_t i = 0; i < in->count; i++) {
        /* every record given has its context: a child's inputs are their own (backends rely on it) */
        if (in->items[i].rec) assert_non_null(in->items[i].origin);
        t->requests += n->sends;
        for (int k = 0; k < n->per_input; k++) {
            assert_true(t->used < sizeof t->pool / sizeof t->pool[0]);
            if (kp_fetch_set_push(out, &t->pool[t->used++], in->items[i].origin, in->items[i].rec)) return -1;
        }
    }
    if (n->extra_trip) {
        t->requests++;
        *step += 1;
    }
    return 0;
}

static int place(void *ctx, const kp_fetch *first, const kp_fetch *last, const kp_fetch_set *first_in,
                 const kp_fetch_set *level, kp_fetch_set *on_inputs)
{
    trace *t = ctx;
    (void)first, (void)last, (void)first_in, (void)level;
    return kp_fetch_set_push(on_inputs, &t->header, &t->header, NULL);
}

static long requests(void *ctx) { return ((trace *)ctx)->requests; }

static int setup(void **state)
{
    (void)state;
    memset(&arena, 0, sizeof arena);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    kp_arena_free(&arena);
    return 0;
}

static trace *claim(const node *root)
{
    trace *t = calloc(1, sizeof *t);
    assert_non_null(t);
    kp_fetch_claim(&root->base, price, t);
    return t;
}

static trace *run(const node *root, kp_fetch_runner *r)
{
    trace *t = calloc(1, sizeof *t);
    assert_non_null(t);
    *r = (kp_fetch_runner){.ctx = t, .read_level = read_level, .place = place, .requests = requests};
    assert_int_equal(kp_fetch_run(r, &root->base), 0);
    return t;
}

/* root (1 record) -> hop (3 per input) -> its next hop (2 per input, free) -> child (sends);
 * root -> independent child; root -> count (terminal) -> a child it never reaches */
static node *sample_tree(void)
{
    node *root = make("root", 1, 1);
    node *hop = make("hop", 3, 1), *next = make("next", 2, 0), *after = make("after", 1, 1);
    node *indep = make("indep", 4, 1), *count = make("count", 1, 1), *unreached = make("unreached", 1, 1);
    indep->base.is_independent = 1;
    count->base.is_terminal = 1;
    hop->base.next_hop = &next->base;
    add(next, after);
    add(root, hop);
    add(root, indep);
    add(root, count);
    add(count, unreached);
    return root;
}

static void test_round_trips_follow_one_rule(void **state)
{
    (void)state;
    node *root = make("root", 1, 1), *free_level = make("free", 1, 0), *indep = make("indep", 1, 1);
    node *below_free = make("below", 1, 1);
    indep->base.is_independent = 1;
    add(root, free_level);
    add(root, indep);
    add(free_level, below_free);
    /* the root goes in the first round trip; a free level in its parent's; an independent
     * one in its parent's; any other one in the next */
    assert_int_equal(kp_fetch_step(&root->base, 0), 1);
    assert_int_equal(kp_fetch_step(&free_level->base, 1), 1);
    assert_int_equal(kp_fetch_step(&indep->base, 1), 1);
    assert_int_equal(kp_fetch_step(&indep->base, 0), 1);
    assert_int_equal(kp_fetch_step(&below_free->base, 1), 2);
    trace *t = claim(root);
    assert_int_equal(t->count, 4);
    assert_string_equal(t->names[0], "root");
    assert_int_equal(t->steps[0], 1);
    assert_string_equal(t->names[1], "free");
    assert_int_equal(t->steps[1], 1);
    assert_string_equal(t->names[2], "below");
    assert_int_equal(t->steps[2], 2);
    assert_string_equal(t->names[3], "indep");
    assert_int_equal(t->steps[3], 1);
    free(t);
}

static void test_claims_give_each_level_what_its_parent_yields(void **state)
{
    (void)state;
    trace *t = claim(sample_tree());
    /* root, hop, next, after, indep, count: never the count's child */
    const char *order[] = {"root", "hop", "next", "after", "indep", "count"};
    assert_int_equal(t->count, 6);
    for (size_t i = 0; i < 6; i++) assert_string_equal(t->names[i], order[i]);
    assert_true(t->inputs[0] == 1 && t->inputs_max[0] == 1);   /* the root: one input */
    assert_true(t->inputs[1] == 1 && t->inputs_max[1] == 2);   /* the root yields 1 (max 2) */
    assert_true(t->inputs[2] == 3 && t->inputs_max[2] == 12);  /* the hop: 3 per input (max x2) */
    assert_true(t->inputs[3] == 6 && t->inputs_max[3] == 48);  /* its next hop: 2 per input */
    assert_int_equal(t->steps[2], 2);                           /* the free next hop: the hop's trip */
    assert_int_equal(t->steps[3], 3);
    assert_int_equal(t->steps[4], 1);                           /* independent: the root's trip */
    free(t);
}

static void test_a_level_that_takes_one_more_trip_delays_what_follows(void **state)
{
    (void)state;
    node *root = make("root", 2, 1), *child = make("child", 1, 1);
    root->extra_trip = 1;
    add(root, child);
    trace *c = claim(root);
    assert_int_equal(c->steps[1], 3);
    kp_fetch_runner r;
    trace *x = run(root, &r);
    assert_int_equal(x->steps[1], 3);
    assert_int_equal(r.max_step, 3);
    free(c);
    free(x);
}

static void test_run_visits_the_levels_the_claims_price_in_their_order(void **state)
{
    (void)state;
    node *root = sample_tree();
    trace *c = claim(root);
    kp_fetch_runner r;
    trace *x = run(root, &r);
    assert_int_equal(x->count, c->count);
    for (size_t i = 0; i < c->count; i++) {
        assert_string_equal(x->names[i], c->names[i]);
        assert_int_equal(x->steps[i], c->steps[i]);
        /* what each level was given in the run is what the claim expected of it */
        assert_true(x->inputs[i] == c->inputs[i]);
    }
    /* the deepest round trip a request went in: "after", below the free next hop */
    assert_int_equal(r.max_step, 3);
    assert_false(r.is_cut_short);
    free(c);
    free(x);
}

typedef struct visits { const char *names[MAX_VISITS]; const char *parents[MAX_VISITS]; size_t count; } visits;

static void visit(void *ctx, const kp_fetch *f, const kp_fetch *parent)
{
    visits *v = ctx;
    assert_true(v->count < MAX_VISITS);
    v->names[v->count] = ((const node *)f)->name;
    v->parents[v->count] = parent ? ((const node *)parent)->name : NULL;
    v->count++;
}

static void test_a_visit_lists_the_levels_in_the_order_the_claims_price_them(void **state)
{
    (void)state;
    node *root = sample_tree();
    trace *c = claim(root);
    visits v = {.count = 0};
    kp_fetch_visit(&root->base, visit, &v);
    assert_int_equal(v.count, c->count);
    for (size_t i = 0; i < c->count; i++) assert_string_equal(v.names[i], c->names[i]);
    /* each with the level whose records it runs on */
    assert_null(v.parents[0]);
    assert_string_equal(v.parents[2], "hop");      /* the next hop runs on the hop's records */
    assert_string_equal(v.parents[3], "next");
    assert_string_equal(v.parents[4], "root");
    free(c);
}

static void test_a_round_trip_counts_only_when_a_level_sent_a_request(void **state)
{
    (void)state;
    /* a free level under the root, and below it a level that reads nothing on the server */
    node *root = make("root", 1, 1), *keys = make("keys", 1, 0), *quiet = make("quiet", 1, 1);
    quiet->sends = 0;
    add(root, keys);
    add(keys, quiet);
    kp_fetch_runner r;
    trace *x = run(root, &r);
    assert_int_equal(x->count, 3);
    assert_int_equal(x->steps[2], 2);   /* its trip, had it sent one */
    assert_int_equal(r.max_step, 1);    /* but only the root sent */
    free(x);
}

static void test_a_level_that_reads_nothing_cuts_the_page_short(void **state)
{
    (void)state;
    node *root = make("root", 1, 1), *empty = make("empty", 0, 1), *below = make("below", 1, 1);
    add(root, empty);
    add(empty, below);
    kp_fetch_runner r;
    trace *x = run(root, &r);
    assert_int_equal(x->count, 2);      /* "below" had nothing to run on */
    assert_true(r.is_cut_short);
    free(x);
}

static void test_an_on_inputs_child_runs_on_what_place_gives(void **state)
{
    (void)state;
    /* a listing read with its header: the header's children run on the header record,
     * once, not on each of the listing's 5 items; the claims give it the listing's inputs */
    node *root = make("listing", 5, 1), *on_header = make("on-header", 1, 1), *per_item = make("per-item", 1, 1);
    on_header->base.is_on_inputs = 1;
    add(root, on_header);
    add(root, per_item);
    trace *c = claim(root);
    assert_true(c->inputs[1] == 1);
    assert_true(c->inputs[2] == 5);
    kp_fetch_runner r;
    trace *x = run(root, &r);
    assert_true(x->inputs[1] == 1);
    assert_true(x->inputs[2] == 5);
    free(c);
    free(x);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_round_trips_follow_one_rule, setup, teardown),
        cmocka_unit_test_setup_teardown(test_claims_give_each_level_what_its_parent_yields, setup, teardown),
        cmocka_unit_test_setup_teardown(test_a_level_that_takes_one_more_trip_delays_what_follows, setup, teardown),
        cmocka_unit_test_setup_teardown(test_run_visits_the_levels_the_claims_price_in_their_order, setup, teardown),
        cmocka_unit_test_setup_teardown(test_a_visit_lists_the_levels_in_the_order_the_claims_price_them, setup, teardown),
        cmocka_unit_test_setup_teardown(test_a_round_trip_counts_only_when_a_level_sent_a_request, setup, teardown),
        cmocka_unit_test_setup_teardown(test_a_level_that_reads_nothing_cuts_the_page_short, setup, teardown),
        cmocka_unit_test_setup_teardown(test_an_on_inputs_child_runs_on_what_place_gives, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
