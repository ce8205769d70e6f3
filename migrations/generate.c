/*
 * generate.c — the sample-data generator: records, references, copies and derived
 * aggregates, written as NDJSON per entity (`keyplan generate`), or one record or
 * value at a time for write operations.
 *
 * Every attribute of every record is computed on demand from (seed, entity,
 * attribute, record number): a plain value from its own random stream, a key from
 * the record number, a foreign key as the referenced record's key (the record found
 * through a link, see gen_layout.c), a copy as the source attribute of the record
 * reached, a derived aggregate by listing the related records and computing their
 * values (or, for paths that cannot be listed from the source, from a vector filled
 * by one pass over the related records). Nothing is remembered per generated record,
 * so memory does not grow with the data written.
 * Invariant: the value of (entity, attribute, record) never depends on which other
 * values were computed before or in what order — the dataset, kp_generator_record
 * and kp_generator_value always agree.
 */
#include "migrations/generate.h"

#include <errno.h>
#include <stdarg.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <time.h>
#include <dirent.h>
#include <unistd.h>

#include "core/value.h"
#include "migrations/gen_internal.h"

#define MAX_DEPTH 64

typedef struct kp_gen_relation {
    const kp_relation *relation;
    kp_gen_link *link;                       /* 1:N, 1:1 */
    kp_gen_link *through_from, *through_to;  /* N:M through a join entity */
    kp_gen_attr *array;                      /* N:M as an array */
} kp_gen_relation;

struct kp_generator {
    const kp_model *model;
    uint64_t seed;
    kp_arena arena;
    kp_gen_entity *entities;
    kp_gen_relation *relations;
    kp_gen_link **links;
    size_t link_count, link_cap;
    int depth;
};

/* ---- set-up --------------------------------------------------------------------- */

static int nomem(kp_error *err) { return kp_error_set(err, KP_ERR_NOMEM, NULL, 0, 0, "out of memory while preparing sample data"); }

static int model_error(const kp_generator *g, kp_pos pos, kp_error *err, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static int model_error(const kp_generator *g, kp_pos pos, kp_error *err, const char *fmt, ...)
{
    char message[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(message, sizeof message, fmt, ap);
    va_end(ap);
    return kp_error_set(err, KP_ERR_MODEL, g->model->file, pos.line, pos.column, "%s", message);
}

static kp_gen_entity *gen_entity(kp_generator *g, const kp_entity *e) { return &g->entities[e->index]; }

static kp_gen_attr *gen_attr(kp_generator *g, const kp_attr *a) { return &gen_entity(g, a->entity)->attrs[a->index]; }

static kp_gen_relation *gen_relation(kp_generator *g, const kp_relation *r)
{
    for (size_t i = 0; i < g->model->relation_count; i++)
        if (g->relations[i].relation == r) return &g->relations[i];
    return NULL;
}

/* "OrderItem" -> "order-item", "APIKey" -> "api-key". */
static void kebab_case(const char *name, char *out, size_t size)
{
    size_t n = 0;
    for (size_t i = 0; name[i] && n + 2 < size; i++) {
        char c = name[i];
        int upper = c >= 'A' && c <= 'Z';
        if (c == '_' || c == '-') { if (n && out[n - 1] != '-') out[n++] = '-'; continue; }
        if (upper && i > 0) {
            char prev = name[i - 1], next = name[i + 1];
            int prev_lower = (prev >= 'a' && prev <= 'z') || (prev >= '0' && prev <= '9');
            int prev_upper = prev >= 'A' && prev <= 'Z';
            int next_lower = next >= 'a' && next <= 'z';
            if ((prev_lower || (prev_upper && next_lower)) && out[n - 1] != '-') out[n++] = '-';
        }
        out[n++] = upper ? (char)(c - 'A' + 'a') : c;
    }
    out[n] = '\0';
}

static kp_gen_link *new_link(kp_generator *g, kp_gen_link_kind kind, const char *name, kp_gen_entity *holder,
                             kp_gen_entity *ref, kp_attr **holder_attrs, kp_attr **ref_attrs, size_t count)
{
    kp_gen_link *link = kp_arena_alloc(&g->arena, sizeof *link);
    if (!link) return NULL;
    if (!kp_arena_push(&g->arena, (void **)&g->links, &g->link_count, &g->link_cap, sizeof *g->links)) return NULL;
    g->links[g->link_count - 1] = link;
    link->kind = kind;
    link->name = name;
    link->holder = holder;
    link->ref = ref;
    link->holder_attrs = holder_attrs;
    link->ref_attrs = ref_attrs;
    link->attr_count = count;
    link->salt = kp_gen_hash(g->seed ^ 0x6c696e6bULL, g->link_count);
    return link;
}

/* Marks the holder attributes as set by the link; fails when one already is. */
static int assign_link(kp_generator *g, kp_gen_link *link, const kp_relation *r, kp_error *err)
{
    for (size_t m = 0; m < link->attr_count; m++) {
        kp_gen_attr *ga = &link->holder->attrs[link->holder_attrs[m]->index];
        if (ga->link)
            return model_error(g, r->pos, err,
                               "relation '%s' sets %s.%s, which relation '%s' already sets; the generator can keep "
                               "them equal only when one reference implies the other (declare the attribute once)",
                               r->name, link->holder->entity->name, ga->attr->name, ga->link->name);
        ga->link = link;
        ga->link_pos = m;
        ga->role = KP_GEN_LINKED;
    }
    return 0;
}

static double fanout_max(const kp_fanout *f) { return f->max > 0 ? f->max : 0; }

static double relation_skew(const kp_relation *r) { return r->has_skew && r->skew > 0 ? r->skew : 0; }

/* N:M through a join entity: the join's records are ordered by `from` (a fan-out
 * tree), and each `from` record picks distinct `to` records. */
static int build_through(kp_generator *g, kp_gen_relation *gr, kp_error *err)
{
    const kp_relation *r = gr->relation;
    kp_gen_entity *join = gen_entity(g, r->through), *from = gen_entity(g, r->from), *to = gen_entity(g, r->to);
    if (r->through_from_count != r->from->key_count || r->through_to_count != r->to->key_count)
        return model_error(g, r->pos, err, "relation '%s': the join entity's attributes must match the keys of '%s' and '%s'",
                           r->name, r->from->name, r->to->name);
    kp_gen_link *lf = new_link(g, KP_GEN_LINK_FANOUT, r->name, join, from, r->through_from, r->from->key, r->through_from_count);
    kp_gen_link *lt = new_link(g, KP_GEN_LINK_PICKS, r->name, join, to, r->through_to, r->to->key, r->through_to_count);
    if (!lf || !lt) return nomem(err);
    int is_self = r->from == r->to;
    kp_gen_picks_init(&lt->picks, to->count, 0, is_self, lt->salt);
    int64_t capacity = kp_gen_picks_capacity(&lt->picks);
    double max = fanout_max(&r->fanout);
    if (max <= 0 || max > (double)capacity) max = (double)capacity;
    if (join->count > from->count * (capacity > 0 ? capacity : 0)) {
        /* fewer distinct pairs exist than records asked for (small scales): make them all */
        if (join->primary)
            return model_error(g, r->pos, err,
                               "relation '%s': %lld %s records cannot all be distinct pairs of %lld %s and %lld %s "
                               "records; lower the count of '%s' or raise the others",
                               r->name, (long long)join->count, r->through->name, (long long)from->count,
                               r->from->name, (long long)to->count, r->to->name, r->through->name);
        join->count = from->count * (capacity > 0 ? capacity : 0);
    }
    if (join->count > 0 && from->count == 0)
        return model_error(g, r->pos, err, "relation '%s': '%s' has records but '%s' has none to reference", r->name,
                           r->through->name, r->from->name);
    if (kp_gen_fanout_build(&lf->fanout, from->count, join->count, max, relation_skew(r), lf->salt, err)) return -1;
    if (join->primary) {
        lf->is_permuted = 1;
        kp_gen_perm_init(&lf->position, (uint64_t)join->count, kp_gen_hash(lf->salt, 9));
    } else {
        join->primary = lf;
    }
    /* popular targets only when a parent's picks stay small (bounded memory) */
    if (relation_skew(r) > 0 && lf->fanout.max <= 65536 && lf->fanout.max * 4 <= capacity) {
        kp_gen_picks_free(&lt->picks);
        kp_gen_picks_init(&lt->picks, to->count, relation_skew(r), is_self, lt->salt);
    }
    lt->base = lf;
    gr->through_from = lf;
    gr->through_to = lt;
    if (assign_link(g, lf, r, err) || assign_link(g, lt, r, err)) return -1;
    return 0;
}

/* A relation whose foreign-key attributes are already set by another link: the same
 * link, or one implied by two others (OrderItem -> Order -> User). */
static kp_gen_link *implied_link(kp_generator *g, const kp_relation *r, kp_gen_entity *holder, kp_gen_entity *ref)
{
    kp_gen_link *first = holder->attrs[r->fk_attrs[0]->index].link;
    if (!first) return NULL;
    for (size_t m = 0; m < r->fk_count; m++) {
        kp_gen_attr *ga = &holder->attrs[r->fk_attrs[m]->index];
        if (ga->link != first) return NULL;
    }
    if (first->ref == ref) {
        for (size_t m = 0; m < r->fk_count; m++)
            if (first->ref_attrs[holder->attrs[r->fk_attrs[m]->index].link_pos] != r->ref_attrs[m]) return NULL;
        return first;
    }
    kp_gen_link *second = NULL;
    for (size_t m = 0; m < r->fk_count; m++) {
        kp_attr *middle = first->ref_attrs[holder->attrs[r->fk_attrs[m]->index].link_pos];
        kp_gen_attr *gm = &first->ref->attrs[middle->index];
        if (!gm->link || gm->link->ref != ref) return NULL;
        if (second && gm->link != second) return NULL;
        second = gm->link;
        if (second->ref_attrs[gm->link_pos] != r->ref_attrs[m]) return NULL;
    }
    if (!second) return NULL;
    kp_gen_link *link = new_link(g, KP_GEN_LINK_COMPOSED, r->name, holder, ref, r->fk_attrs, r->ref_attrs, r->fk_count);
    if (!link) return NULL;
    link->first = first;
    link->second = second;
    return link;
}

static int is_key_covered(const kp_gen_entity *ge, kp_attr **a, size_t n, kp_attr **b, size_t m)
{
    const kp_entity *e = ge->entity;
    int touches = 0;
    for (size_t k = 0; k < e->key_count; k++) {
        int found = 0;
        for (size_t i = 0; i < n; i++) found |= a[i] == e->key[k];
        for (size_t i = 0; i < m; i++) {
            if (b[i] == e->key[k]) { found = 1; touches = 1; }
        }
        if (!found) return 0;
    }
    return touches;
}

static int build_foreign_key(kp_generator *g, kp_gen_relation *gr, kp_error *err)
{
    const kp_relation *r = gr->relation;
    if (!r->holder || !r->referenced || !r->fk_count)
        return model_error(g, r->pos, err, "relation '%s' has no foreign key to generate", r->name);
    kp_gen_entity *holder = gen_entity(g, r->holder), *ref = gen_entity(g, r->referenced);
    size_t assigned = 0;
    for (size_t m = 0; m < r->fk_count; m++) assigned += holder->attrs[r->fk_attrs[m]->index].link != NULL;
    if (assigned == r->fk_count) {
        gr->link = implied_link(g, r, holder, ref);
        if (gr->link) return 0;
    }
    if (assigned) {
        for (size_t m = 0; m < r->fk_count; m++) {
            kp_gen_attr *ga = &holder->attrs[r->fk_attrs[m]->index];
            if (ga->link)
                return model_error(g, r->pos, err,
                                   "relation '%s' sets %s.%s, which relation '%s' already sets, and neither implies "
                                   "the other; the generator cannot keep both true",
                                   r->name, r->holder->name, ga->attr->name, ga->link->name);
        }
    }
    if (r->cardinality == KP_CARD_ONE_ONE) {
        kp_gen_link *link = new_link(g, KP_GEN_LINK_PAIR, r->name, holder, ref, r->fk_attrs, r->ref_attrs, r->fk_count);
        if (!link) return nomem(err);
        int is_required = 0;
        for (size_t m = 0; m < r->fk_count; m++) is_required |= !r->fk_attrs[m]->is_optional;
        int64_t most = holder->count < ref->count ? holder->count : ref->count;
        int64_t pairs = most;
        if (!is_required && r->fanout.is_given && r->fanout.avg > 0 && r->fanout.avg <= 1) {
            int64_t from_count = r->from == r->holder ? holder->count : ref->count;
            pairs = llround(r->fanout.avg * (double)from_count);
        }
        if (is_required) {
            if (holder->count > ref->count)
                return model_error(g, r->pos, err,
                                   "relation '%s' is 1:1 but '%s' has %lld records and '%s' only %lld: each %s "
                                   "needs its own %s (make the foreign key optional or fix the counts)",
                                   r->name, r->holder->name, (long long)holder->count, r->referenced->name,
                                   (long long)ref->count, r->holder->name, r->referenced->name);
            pairs = holder->count;
        }
        if (pairs > most) pairs = most;
        link->pairs = pairs;
        kp_gen_perm_init(&link->ref_order, (uint64_t)ref->count, kp_gen_hash(link->salt, 1));
        kp_gen_perm_init(&link->holder_order, (uint64_t)holder->count, kp_gen_hash(link->salt, 2));
        gr->link = link;
        return assign_link(g, link, r, err);
    }
    /* 1:N */
    if (holder->count > 0 && ref->count == 0)
        return model_error(g, r->pos, err, "relation '%s': '%s' has %lld records but '%s' has none for them to reference",
                           r->name, r->holder->name, (long long)holder->count, r->referenced->name);
    kp_gen_link *link;
    if (holder->primary && is_key_covered(holder, holder->primary->holder_attrs, holder->primary->attr_count,
                                          r->fk_attrs, r->fk_count)) {
        /* the key is (primary parent, this parent): distinct per primary parent */
        link = new_link(g, KP_GEN_LINK_PICKS, r->name, holder, ref, r->fk_attrs, r->ref_attrs, r->fk_count);
        if (!link) return nomem(err);
        link->base = holder->primary;
        kp_gen_picks_init(&link->picks, ref->count, 0, r->holder == r->referenced, link->salt);
        int64_t capacity = kp_gen_picks_capacity(&link->picks);
        kp_gen_link *base = holder->primary;
        if (base->fanout.max > capacity) {
            /* a primary parent cannot have more children than there are distinct partners:
             * lay the primary out again with that cap, and when even that cannot hold every
             * record (small scales), generate only as many as have distinct keys */
            size_t others = 0;
            for (size_t k = 0; k < g->link_count; k++) others += g->links[k]->holder == holder && g->links[k] != link;
            int64_t most = base->fanout.parents * capacity;
            if (base->kind != KP_GEN_LINK_FANOUT || (holder->count > most && others > 1))
                return model_error(g, r->pos, err,
                                   "relation '%s': the key of '%s' pairs two references, but a '%s' has up to %lld "
                                   "of them and there are only %lld '%s' to pair with, so keys would repeat",
                                   r->name, r->holder->name, base->ref->entity->name, (long long)base->fanout.max,
                                   (long long)ref->count, r->referenced->name);
            if (holder->count > most) holder->count = most;
            double skew = base->fanout.skew;
            kp_gen_fanout_free(&base->fanout);
            if (kp_gen_fanout_build(&base->fanout, base->ref->count, holder->count, (double)capacity, skew, base->salt, err))
                return -1;
        }
        /* popular parents are picked more often, when a primary parent's picks stay small */
        if (relation_skew(r) > 0 && base->fanout.max <= 65536 && base->fanout.max * 4 <= capacity) {
            kp_gen_picks_free(&link->picks);
            kp_gen_picks_init(&link->picks, ref->count, relation_skew(r), r->holder == r->referenced, link->salt);
        }
    } else {
        link = new_link(g, KP_GEN_LINK_FANOUT, r->name, holder, ref, r->fk_attrs, r->ref_attrs, r->fk_count);
        if (!link) return nomem(err);
        if (kp_gen_fanout_build(&link->fanout, ref->count, holder->count, fanout_max(&r->fanout), relation_skew(r),
                                link->salt, err))
            return -1;
        if (holder->primary) {
            link->is_permuted = 1;
            kp_gen_perm_init(&link->position, (uint64_t)holder->count, kp_gen_hash(link->salt, 9));
        } else {
            holder->primary = link;
        }
    }
    gr->link = link;
    return assign_link(g, link, r, err);
}

static int build_array(kp_generator *g, kp_gen_relation *gr, kp_error *err)
{
    const kp_relation *r = gr->relation;
    if (!r->array_attr) return model_error(g, r->pos, err, "relation '%s' names no array attribute", r->name);
    kp_gen_entity *from = gen_entity(g, r->from), *to = gen_entity(g, r->to);
    kp_gen_attr *ga = gen_attr(g, r->array_attr);
    if (ga->role != KP_GEN_PLAIN)
        return model_error(g, r->pos, err, "relation '%s': %s.%s already holds another relation", r->name, r->from->name,
                           r->array_attr->name);
    ga->role = KP_GEN_ARRAY_LINK;
    ga->array_target = to;
    int is_self = r->from == r->to;
    uint64_t salt = kp_gen_hash(ga->salt, 0xa11a);
    kp_gen_picks_init(&ga->array_picks, to->count, 0, is_self, salt);
    int64_t capacity = kp_gen_picks_capacity(&ga->array_picks);
    double avg = r->fanout.avg > 0 ? r->fanout.avg : (ga->plan ? ga->plan->avg_items : 0);
    int64_t total = llround(avg * (double)from->count);
    if (total > from->count * capacity) total = from->count * capacity;
    double max = fanout_max(&r->fanout);
    if (max <= 0 || max > (double)capacity) max = (double)capacity;
    if (kp_gen_fanout_build(&ga->array_fanout, from->count, total, max, relation_skew(r), salt, err)) return -1;
    ga->has_array_layout = 1;
    if (relation_skew(r) > 0 && ga->array_fanout.max <= 65536 && ga->array_fanout.max * 4 <= capacity) {
        kp_gen_picks_free(&ga->array_picks);
        kp_gen_picks_init(&ga->array_picks, to->count, relation_skew(r), is_self, salt);
    }
    gr->array = ga;
    return 0;
}

/* One to-one step of a relation direction: the record reached from record i. */
static int to_one_hop(kp_generator *g, const kp_rel *rel, kp_gen_hop *hop)
{
    const kp_relation *r = rel->relation;
    kp_gen_relation *gr = gen_relation(g, r);
    if (!gr || !gr->link || rel->is_many) return -1;
    hop->link = gr->link;
    if (r->cardinality == KP_CARD_ONE_MANY) {
        if (!rel->is_inverse) return -1;
        hop->to_parent = 1; /* child -> parent */
        return 0;
    }
    int holder_is_from = r->holder == r->from && r->from != r->to;
    /* the step reaches the referenced record when it leaves the holder */
    int leaves_holder = rel->is_inverse ? !holder_is_from : holder_is_from;
    hop->to_parent = leaves_holder;
    return 0;
}

/* One step of a derived path walked backwards: from a target record to its source. */
static int backward_hop(kp_generator *g, const kp_rel *rel, kp_gen_hop *hop)
{
    const kp_relation *r = rel->relation;
    kp_gen_relation *gr = gen_relation(g, r);
    if (!gr || !gr->link) return -1;
    hop->link = gr->link;
    if (r->cardinality == KP_CARD_ONE_MANY) {
        if (rel->is_inverse) return -1; /* parent <- child is to-one forward: no function backwards */
        hop->to_parent = 1;
        return 0;
    }
    if (r->cardinality != KP_CARD_ONE_ONE) return -1;
    int holder_is_from = r->holder == r->from && r->from != r->to;
    /* the target holds the key when the step arrives at the holder */
    int target_is_holder = rel->is_inverse ? holder_is_from : !holder_is_from;
    hop->to_parent = target_is_holder;
    return 0;
}

/* One step of a derived path walked forwards, when its records can be listed. */
static int forward_step(kp_generator *g, const kp_rel *rel, kp_gen_step *step)
{
    const kp_relation *r = rel->relation;
    kp_gen_relation *gr = gen_relation(g, r);
    if (!gr || (rel->is_inverse && r->cardinality != KP_CARD_ONE_ONE)) return -1;
    if (r->cardinality == KP_CARD_ONE_MANY) {
        if (!gr->link || gr->link->kind != KP_GEN_LINK_FANOUT) return -1;
        step->kind = KP_GEN_STEP_CHILDREN;
        step->link = gr->link;
        return 0;
    }
    if (r->cardinality == KP_CARD_ONE_ONE) {
        if (!gr->link || gr->link->kind != KP_GEN_LINK_PAIR) return -1;
        int holder_is_from = r->holder == r->from && r->from != r->to;
        int arrives_at_holder = rel->is_inverse ? holder_is_from : !holder_is_from;
        step->kind = arrives_at_holder ? KP_GEN_STEP_PARTNER : KP_GEN_STEP_PARENT;
        step->link = gr->link;
        return 0;
    }
    if (gr->through_from && gr->through_from->kind == KP_GEN_LINK_FANOUT) {
        step->kind = KP_GEN_STEP_THROUGH;
        step->link = gr->through_from;
        step->picks_link = gr->through_to;
        return 0;
    }
    if (gr->array) {
        step->kind = KP_GEN_STEP_ARRAY;
        step->array = gr->array;
        return 0;
    }
    return -1;
}

static int plan_copy(kp_generator *g, kp_gen_attr *ga, kp_error *err)
{
    const kp_copy *c = ga->attr->copy_of;
    ga->copy_hops = kp_arena_alloc(&g->arena, (c->path_len ? c->path_len : 1) * sizeof *ga->copy_hops);
    if (!ga->copy_hops) return nomem(err);
    ga->copy_hop_count = c->path_len;
    for (size_t h = 0; h < c->path_len; h++)
        if (to_one_hop(g, c->path[h], &ga->copy_hops[h]))
            return model_error(g, ga->attr->pos, err,
                               "%s.%s copies through '%s', which the generator cannot follow as a to-one reference",
                               ga->attr->entity->name, ga->attr->name, c->path[h]->name ? c->path[h]->name : "?");
    if (!c->source || !c->source->entity) return model_error(g, ga->attr->pos, err, "%s.%s copies no attribute", ga->attr->entity->name, ga->attr->name);
    ga->copy_source = gen_attr(g, c->source);
    return 0;
}

static int plan_derived(kp_generator *g, kp_gen_attr *ga, kp_error *err)
{
    const kp_derived *d = ga->attr->derived;
    kp_gen_derived *gd = &ga->derived;
    gd->derived = d;
    gd->of_kind = d->of ? d->of->type.kind : KP_T_INT;
    gd->store = gd->of_kind == KP_T_DOUBLE && d->fn != KP_AGG_COUNT ? KP_GEN_STORE_DOUBLE : KP_GEN_STORE_INT;
    if (d->fn != KP_AGG_COUNT) {
        kp_type_kind k = gd->of_kind;
        if (!(k == KP_T_INT || k == KP_T_COUNTER || k == KP_T_DECIMAL || k == KP_T_DOUBLE || k == KP_T_TIMESTAMP ||
              k == KP_T_DATE))
            return model_error(g, ga->attr->pos, err, "%s.%s aggregates a %s, which the generator cannot order or add",
                               ga->attr->entity->name, ga->attr->name, kp_type_name(k));
    }
    for (size_t c = 0; c < d->where_count; c++)
        if (d->where[c].value.param || d->where[c].upper.param)
            return model_error(g, d->where[c].pos, err, "the filter of %s.%s must compare with literals, not parameters",
                               ga->attr->entity->name, ga->attr->name);
    if (d->path_len == 0) return model_error(g, ga->attr->pos, err, "%s.%s aggregates over no relation", ga->attr->entity->name, ga->attr->name);
    const kp_rel *last = d->path[d->path_len - 1];
    gd->target = gen_entity(g, last->target);
    /* forwards, when every step can list the records it reaches: no vector needed */
    gd->steps = kp_arena_alloc(&g->arena, d->path_len * sizeof *gd->steps);
    if (!gd->steps) return nomem(err);
    gd->step_count = d->path_len;
    for (size_t h = 0; h < d->path_len && gd->steps; h++)
        if (forward_step(g, d->path[h], &gd->steps[h])) gd->steps = NULL;
    if (gd->steps) return 0;
    gd->step_count = 0;
    if (d->path_len == 1 && last->relation->cardinality == KP_CARD_MANY_MANY) {
        kp_gen_relation *gr = gen_relation(g, last->relation);
        gd->is_inverse = last->is_inverse;
        if (gr && gr->through_from) { gd->through_from = gr->through_from; gd->through_to = gr->through_to; return 0; }
        if (gr && gr->array) { gd->array = gr->array; return 0; }
        return model_error(g, ga->attr->pos, err, "%s.%s aggregates over '%s', whose records the generator does not lay out",
                           ga->attr->entity->name, ga->attr->name, last->name ? last->name : "?");
    }
    gd->hops = kp_arena_alloc(&g->arena, d->path_len * sizeof *gd->hops);
    if (!gd->hops) return nomem(err);
    gd->hop_count = d->path_len;
    for (size_t h = 0; h < d->path_len; h++) {
        const kp_rel *rel = d->path[d->path_len - 1 - h];
        if (backward_hop(g, rel, &gd->hops[h]))
            return model_error(g, ga->attr->pos, err,
                               "%s.%s aggregates over a path through '%s'; the generator computes aggregates over "
                               "1:N and 1:1 paths, or over one N:M relation",
                               ga->attr->entity->name, ga->attr->name, rel->name ? rel->name : "?");
    }
    return 0;
}

/* Keys must never repeat: true when the key has an attribute of its own, or its
 * references are a 1:1 pairing, a (parent, distinct pick) pair, or a fan-out of at
 * most one child per parent. */
static int check_key_unique(kp_generator *g, kp_gen_entity *ge, kp_error *err)
{
    const kp_entity *e = ge->entity;
    if (ge->count <= 1 || e->key_count == 0) return 0;
    for (size_t k = 0; k < e->key_count; k++)
        if (ge->attrs[e->key[k]->index].role != KP_GEN_LINKED) return 0;
    for (size_t k = 0; k < e->key_count; k++) {
        kp_gen_link *link = ge->attrs[e->key[k]->index].link;
        if (link->kind == KP_GEN_LINK_PAIR) return 0;
        if (link->kind == KP_GEN_LINK_FANOUT && link->fanout.max <= 1) return 0;
        if (link->kind == KP_GEN_LINK_PICKS) {
            for (size_t j = 0; j < e->key_count; j++)
                if (ge->attrs[e->key[j]->index].link == link->base) return 0;
        }
    }
    return model_error(g, e->pos, err,
                       "the key of '%s' is made only of references that repeat (a parent has up to %lld of them), so "
                       "generated keys would collide; add an attribute of its own to the key, or make the relation 1:1",
                       e->name, (long long)ge->attrs[e->key[0]->index].link->fanout.max);
}

/* Orders the plain timestamps (and, separately, dates) of a record: one without a
 * declared range follows the record's first one by up to 90 days (deliveredAt after
 * shippedAt, archivedAt after createdAt); one whose declared range starts later than
 * the previous one's keeps that offset plus up to 30 days (endsAt after startsAt). */
static void plan_time_chains(kp_gen_entity *ge)
{
    for (int pass = 0; pass < 2; pass++) {
        kp_type_kind kind = pass == 0 ? KP_T_TIMESTAMP : KP_T_DATE;
        int64_t day = kind == KP_T_TIMESTAMP ? 86400000LL : 1;
        kp_gen_attr *first = NULL, *prev = NULL;
        for (size_t a = 0; a < ge->entity->attr_count; a++) {
            kp_gen_attr *ga = &ge->attrs[a];
            if (ga->role != KP_GEN_PLAIN || ga->attr->type.kind != kind || ga->plan->is_unique) continue;
            if (!prev) {
                first = prev = ga;
                continue;
            }
            if (!ga->attr->min && !ga->attr->max) {
                ga->chain_prev = first;
                ga->chain_gap = 90 * day;
            } else if (ga->plan->lo > prev->plan->lo) {
                ga->chain_prev = prev;
                ga->chain_shift = ga->plan->lo - prev->plan->lo;
                ga->chain_gap = 30 * day;
                ga->chain_clamp = 1;
            }
            prev = ga;
        }
    }
}

int kp_generator_new(const kp_model *model, uint64_t seed, kp_generator **out, kp_error *err)
{
    kp_error_clear(err);
    *out = NULL;
    kp_generator *g = calloc(1, sizeof *g);
    if (!g) return nomem(err);
    g->model = model;
    g->seed = seed;
    g->entities = kp_arena_alloc(&g->arena, (model->entity_count ? model->entity_count : 1) * sizeof *g->entities);
    g->relations = kp_arena_alloc(&g->arena, (model->relation_count ? model->relation_count : 1) * sizeof *g->relations);
    if (!g->entities || !g->relations) { kp_generator_free(g); return nomem(err); }

    for (size_t e = 0; e < model->entity_count; e++) {
        kp_gen_entity *ge = &g->entities[e];
        kp_entity *entity = model->entities[e];
        ge->entity = entity;
        /* an entity the scale shrinks below one record still has one */
        ge->count = entity->count > 0 ? llround(entity->count) : 0;
        if (entity->count > 0 && ge->count < 1) ge->count = 1;
        ge->salt = kp_gen_hash(seed, 1000 + e);
        kebab_case(entity->name, ge->prefix, sizeof ge->prefix);
        int width = 1;
        for (int64_t v = ge->count * 10 - 1; v >= 10; v /= 10) width++;
        ge->id_width = width < 6 ? 6 : width;
        ge->attrs = kp_arena_alloc(&g->arena, (entity->attr_count ? entity->attr_count : 1) * sizeof *ge->attrs);
        if (!ge->attrs) { kp_generator_free(g); return nomem(err); }
        for (size_t a = 0; a < entity->attr_count; a++) {
            kp_gen_attr *ga = &ge->attrs[a];
            ga->attr = entity->attrs[a];
            ga->salt = kp_gen_hash(ge->salt, a + 1);
            char *name = kp_arena_printf(&g->arena, "\"%s\":", ga->attr->name);
            if (!name) { kp_generator_free(g); return nomem(err); }
            ga->json_name = name;
            ga->json_name_len = strlen(name);
            if (kp_gen_plan_build(&g->arena, model, entity, ga->attr, ga->attr->name, &ga->attr->type, ge->count,
                                  ga->salt, &ga->plan, err)) {
                kp_generator_free(g);
                return -1;
            }
        }
    }
    for (size_t r = 0; r < model->relation_count; r++) g->relations[r].relation = model->relations[r];
    /* a scaled-down model may round a small parent entity to no records while its
     * children remain: children need a parent, so it keeps one */
    for (int changed = model->scale < 1; changed;) {
        changed = 0;
        for (size_t r = 0; r < model->relation_count; r++) {
            const kp_relation *rel = model->relations[r];
            const kp_entity *child = rel->link == KP_LINK_THROUGH ? rel->through : rel->cardinality == KP_CARD_ONE_MANY ? rel->holder : NULL;
            if (!child || !rel->from || gen_entity(g, child)->count == 0 || gen_entity(g, rel->from)->count > 0) continue;
            gen_entity(g, rel->from)->count = 1;
            changed = 1;
        }
    }
    /* joins first (they order their join entity), then foreign keys, then arrays */
    for (int pass = 0; pass < 3; pass++) {
        for (size_t r = 0; r < model->relation_count; r++) {
            kp_gen_relation *gr = &g->relations[r];
            int rc = 0;
            if (pass == 0 && gr->relation->link == KP_LINK_THROUGH) rc = build_through(g, gr, err);
            if (pass == 1 && gr->relation->link == KP_LINK_FOREIGN_KEY) rc = build_foreign_key(g, gr, err);
            if (pass == 2 && gr->relation->link == KP_LINK_ARRAY) rc = build_array(g, gr, err);
            if (rc) { kp_generator_free(g); return -1; }
        }
    }
    for (size_t e = 0; e < model->entity_count; e++) {
        kp_gen_entity *ge = &g->entities[e];
        for (size_t a = 0; a < ge->entity->attr_count; a++) {
            kp_gen_attr *ga = &ge->attrs[a];
            if (ga->role != KP_GEN_PLAIN) continue;
            int rc = 0;
            if (ga->attr->copy_of) { ga->role = KP_GEN_COPY; rc = plan_copy(g, ga, err); }
            else if (ga->attr->derived) { ga->role = KP_GEN_DERIVED; rc = plan_derived(g, ga, err); }
            else if (ga->attr->key_index >= 0) {
                ga->role = KP_GEN_KEY;
                /* unique within the primary parent is enough when the rest of the key is that parent */
                int is_local = ge->primary != NULL;
                for (size_t k = 0; k < ge->entity->key_count && is_local; k++) {
                    kp_gen_attr *other = &ge->attrs[ge->entity->key[k]->index];
                    if (other != ga && other->link != ge->primary) is_local = 0;
                }
                if (is_local) {
                    for (size_t m = 0; m < ge->primary->attr_count; m++)
                        if (ge->primary->holder_attrs[m]->key_index < 0) is_local = 0;
                }
                ga->is_local_key = is_local;
            }
            if (rc) { kp_generator_free(g); return -1; }
        }
        plan_time_chains(ge);
        if (check_key_unique(g, ge, err)) { kp_generator_free(g); return -1; }
    }
    *out = g;
    return 0;
}

void kp_generator_free(kp_generator *g)
{
    if (!g) return;
    for (size_t i = 0; i < g->link_count; i++) {
        kp_gen_fanout_free(&g->links[i]->fanout);
        kp_gen_picks_free(&g->links[i]->picks);
    }
    if (g->entities) {
        for (size_t e = 0; e < g->model->entity_count; e++) {
            kp_gen_entity *ge = &g->entities[e];
            if (!ge->attrs) continue;
            for (size_t a = 0; a < ge->entity->attr_count; a++) {
                kp_gen_attr *ga = &ge->attrs[a];
                if (ga->has_array_layout) {
                    kp_gen_fanout_free(&ga->array_fanout);
                    kp_gen_picks_free(&ga->array_picks);
                }
                free(ga->derived.values);
                free(ga->derived.value.data);
                free(ga->derived.tmp.data);
            }
        }
    }
    kp_arena_free(&g->arena);
    free(g);
}

uint64_t kp_generator_seed(const kp_generator *g) { return g->seed; }

int64_t kp_generator_count(const kp_generator *g, const kp_entity *entity)
{
    if (!entity || entity->index >= g->model->entity_count || g->model->entities[entity->index] != entity) return 0;
    return g->entities[entity->index].count;
}

/* ---- values --------------------------------------------------------------------- */

static int attr_value(kp_generator *g, kp_gen_entity *ge, kp_gen_attr *ga, int64_t i, int force, kp_gen_buf *out,
                      kp_error *err);

static int derived_compute(kp_generator *g, kp_gen_attr *ga, kp_error *err);
static int64_t aggregate_init(const kp_gen_derived *gd);
static int enumerate(kp_generator *g, kp_gen_attr *ga, size_t h, int64_t record, int64_t *slot, kp_error *err);

/* The record reached by one to-one step, -1 when there is none. */
static int64_t hop_step(const kp_gen_hop *hop, int64_t i)
{
    return hop->to_parent ? kp_gen_link_parent(hop->link, i) : kp_gen_link_partner(hop->link, i);
}

/* The key of record i of `target` as an N:M array element: the key attribute's value,
 * or an object of the key attributes for a composite key. */
static int key_element(kp_generator *g, kp_gen_entity *target, int64_t i, kp_gen_buf *out, kp_error *err)
{
    const kp_entity *e = target->entity;
    if (e->key_count == 1) return attr_value(g, target, &target->attrs[e->key[0]->index], i, 1, out, err) < 0 ? -1 : 0;
    kp_gen_putc(out, '{');
    for (size_t k = 0; k < e->key_count; k++) {
        kp_gen_attr *ka = &target->attrs[e->key[k]->index];
        if (k) kp_gen_putc(out, ',');
        kp_gen_putn(out, ka->json_name, ka->json_name_len);
        if (attr_value(g, target, ka, i, 1, out, err) < 0) return -1;
    }
    kp_gen_putc(out, '}');
    return 0;
}

static void put_aggregate(kp_gen_buf *out, const kp_gen_attr *ga, int64_t raw)
{
    const kp_gen_derived *gd = &ga->derived;
    kp_type_kind kind = ga->attr->type.kind;
    if (gd->derived->fn == KP_AGG_COUNT) {
        if (kind == KP_T_DECIMAL) kp_gen_put_cents(out, raw * 100);
        else if (kind == KP_T_DOUBLE) kp_gen_put_double(out, (double)raw);
        else kp_gen_put_int(out, raw);
        return;
    }
    if (gd->store == KP_GEN_STORE_DOUBLE) {
        double d;
        memcpy(&d, &raw, sizeof d);
        if (kind == KP_T_INT || kind == KP_T_COUNTER) kp_gen_put_int(out, llround(d));
        else if (kind == KP_T_DECIMAL) kp_gen_put_cents(out, llround(d * 100));
        else kp_gen_put_double(out, d);
        return;
    }
    switch (gd->of_kind) {
    case KP_T_DECIMAL: /* raw is cents */
        if (kind == KP_T_DECIMAL) kp_gen_put_cents(out, raw);
        else if (kind == KP_T_DOUBLE) kp_gen_put_double(out, (double)raw / 100.0);
        else kp_gen_put_int(out, raw / 100);
        return;
    case KP_T_TIMESTAMP: /* raw is ms */
        if (kind == KP_T_TIMESTAMP) kp_gen_put_timestamp(out, raw);
        else if (kind == KP_T_DATE) kp_gen_put_date(out, raw >= 0 ? raw / 86400000LL : -((-raw + 86399999LL) / 86400000LL));
        else kp_gen_put_int(out, raw);
        return;
    case KP_T_DATE: /* raw is days */
        if (kind == KP_T_DATE) kp_gen_put_date(out, raw);
        else if (kind == KP_T_TIMESTAMP) kp_gen_put_timestamp(out, raw * 86400000LL);
        else kp_gen_put_int(out, raw);
        return;
    default: /* ints */
        if (kind == KP_T_DECIMAL) kp_gen_put_cents(out, raw * 100);
        else if (kind == KP_T_DOUBLE) kp_gen_put_double(out, (double)raw);
        else kp_gen_put_int(out, raw);
        return;
    }
}

static const int64_t NONE_MIN = INT64_MAX, NONE_MAX = INT64_MIN;

/* A plain timestamp (ms) or date (days) of record i, following its chain. */
static int64_t chained_time(const kp_gen_attr *ga, int64_t i)
{
    kp_gen_rng rng = kp_gen_rng_at(ga->salt, (uint64_t)i);
    const kp_gen_plan *plan = ga->plan;
    if (!ga->chain_prev) return kp_gen_uniform(&rng, plan->lo, plan->hi);
    int64_t v = chained_time(ga->chain_prev, i) + ga->chain_shift + kp_gen_uniform(&rng, 0, ga->chain_gap);
    if (ga->chain_clamp) {
        if (v > plan->hi) v = plan->hi;
        if (v < plan->lo) v = plan->lo;
    }
    return v;
}

static int attr_value(kp_generator *g, kp_gen_entity *ge, kp_gen_attr *ga, int64_t i, int force, kp_gen_buf *out,
                      kp_error *err)
{
    if (g->depth >= MAX_DEPTH)
        return model_error(g, ga->attr->pos, err,
                           "%s.%s: references and copies form a cycle the generator cannot resolve (%d steps)",
                           ge->entity->name, ga->attr->name, MAX_DEPTH);
    g->depth++;
    int rc = 1;
    switch (ga->role) {
    case KP_GEN_PLAIN: {
        const kp_gen_plan *plan = ga->plan;
        if (!force && plan->presence < 1 && kp_gen_unit_of(kp_gen_hash(ga->salt ^ 0x70726573ULL, (uint64_t)i)) >= plan->presence) {
            rc = 0;
            break;
        }
        kp_type_kind kind = plan->type->kind;
        if ((kind == KP_T_TIMESTAMP || kind == KP_T_DATE) && !plan->is_unique) {
            int64_t v = chained_time(ga, i);
            if (kind == KP_T_TIMESTAMP) kp_gen_put_timestamp(out, v);
            else kp_gen_put_date(out, v);
            break;
        }
        kp_gen_rng rng = kp_gen_rng_at(ga->salt, (uint64_t)i);
        kp_gen_value(plan, &rng, i, out);
        break;
    }
    case KP_GEN_KEY: {
        int64_t local = ga->is_local_key ? kp_gen_link_local(ge->primary, i) : 0;
        kp_gen_rng rng = kp_gen_rng_at(ga->salt, (uint64_t)i);
        kp_gen_key_value(ga->plan, ge->prefix, ge->id_width, i, local, ga->is_local_key, &rng, out);
        break;
    }
    case KP_GEN_LINKED: {
        int64_t p = kp_gen_link_parent(ga->link, i);
        if (p < 0) {
            if (ga->attr->key_index >= 0) {
                rc = model_error(g, ga->attr->pos, err,
                                 "no %s record is free for %s record %lld: relation '%s' has no unused partner left",
                                 ga->link->ref->entity->name, ge->entity->name, (long long)i, ga->link->name);
            } else {
                rc = 0;
            }
            break;
        }
        kp_gen_entity *ref = ga->link->ref;
        rc = attr_value(g, ref, &ref->attrs[ga->link->ref_attrs[ga->link_pos]->index], p, 1, out, err);
        break;
    }
    case KP_GEN_ARRAY_LINK: {
        int64_t n;
        if (i < ge->count) n = kp_gen_fanout_count(&ga->array_fanout, i);
        else n = ge->count > 0 ? llround((double)ga->array_fanout.total / (double)ge->count) : 0;
        kp_gen_putc(out, '[');
        for (int64_t k = 0; k < n; k++) {
            int64_t t = kp_gen_picks_get(&ga->array_picks, i, k);
            if (t < 0) break;
            if (k) kp_gen_putc(out, ',');
            if (key_element(g, ga->array_target, t, out, err)) { rc = -1; break; }
        }
        kp_gen_putc(out, ']');
        break;
    }
    case KP_GEN_COPY: {
        int64_t cur = i;
        kp_gen_entity *at = ge;
        for (size_t h = 0; h < ga->copy_hop_count && cur >= 0; h++) {
            const kp_gen_hop *hop = &ga->copy_hops[h];
            cur = hop_step(hop, cur);
            at = hop->to_parent ? hop->link->ref : hop->link->holder;
        }
        if (cur < 0) { rc = 0; break; }
        (void)at;
        kp_gen_entity *source = gen_entity(g, ga->copy_source->attr->entity);
        rc = attr_value(g, source, ga->copy_source, cur, force, out, err);
        break;
    }
    case KP_GEN_DERIVED: {
        kp_aggregate fn = ga->derived.derived->fn;
        if (i >= ge->count) { /* a fresh record has no related records yet */
            if (fn == KP_AGG_MIN || fn == KP_AGG_MAX) { rc = 0; break; }
            put_aggregate(out, ga, 0);
            break;
        }
        int64_t raw;
        if (ga->derived.steps) {
            if (ga->derived.state == 1) {
                rc = model_error(g, ga->attr->pos, err, "%s.%s is derived from itself (through other derived attributes)",
                                 ge->entity->name, ga->attr->name);
                break;
            }
            ga->derived.state = 1;
            raw = aggregate_init(&ga->derived);
            int failed = enumerate(g, ga, 0, i, &raw, err);
            ga->derived.state = 0;
            if (failed) { rc = -1; break; }
        } else {
            if (derived_compute(g, ga, err)) { rc = -1; break; }
            raw = ga->derived.values[i];
        }
        if (fn == KP_AGG_MIN || fn == KP_AGG_MAX) {
            if (ga->derived.store == KP_GEN_STORE_DOUBLE) {
                double d;
                memcpy(&d, &raw, sizeof d);
                if (isnan(d)) { rc = 0; break; }
            } else if ((fn == KP_AGG_MIN && raw == NONE_MIN) || (fn == KP_AGG_MAX && raw == NONE_MAX)) {
                rc = 0;
                break;
            }
        }
        put_aggregate(out, ga, raw);
        break;
    }
    }
    g->depth--;
    return rc;
}

/* ---- derived aggregates ----------------------------------------------------------- */

/* The value text without JSON quotes (strings from the generator never need unescaping). */
static const char *unquoted(kp_gen_buf *b)
{
    kp_gen_terminate(b);
    if (b->failed || b->len == 0) return "";
    if (b->data[0] == '"' && b->len >= 2) {
        b->data[b->len - 1] = '\0';
        return b->data + 1;
    }
    return b->data;
}

/* Compares a generated canonical value (text, unquoted) with a literal: <0, 0, >0;
 * *ok is 0 when they cannot be compared. */
static int compare_literal(const kp_model *model, kp_type_kind kind, const char *value, const cJSON *literal, int *ok)
{
    *ok = 1;
    switch (kind) {
    case KP_T_INT: case KP_T_COUNTER: case KP_T_DECIMAL: {
        if (!(cJSON_IsNumber(literal) || cJSON_IsRaw(literal))) break;
        char buf[64];
        size_t n;
        const char *text = kp_number_text(literal, model->doc, buf, sizeof buf, &n);
        return kp_decimal_compare(value, strlen(value), text, n);
    }
    case KP_T_DOUBLE: {
        if (!cJSON_IsNumber(literal)) break;
        double a = strtod(value, NULL), b = literal->valuedouble;
        return a < b ? -1 : a > b ? 1 : 0;
    }
    case KP_T_BOOL:
        if (!cJSON_IsBool(literal)) break;
        return (strcmp(value, "true") == 0) - (cJSON_IsTrue(literal) ? 1 : 0);
    default:
        if (!cJSON_IsString(literal)) break;
        return strcmp(value, literal->valuestring);
    }
    *ok = 0;
    return 0;
}

/* Does target record t satisfy condition c? 1, 0, or -1 on error. */
static int condition_holds(kp_generator *g, kp_gen_entity *te, int64_t t, const kp_cond *c, kp_gen_buf *tmp,
                           kp_error *err)
{
    kp_gen_entity *at = te;
    int64_t cur = t;
    for (size_t h = 0; h < c->path_len; h++) {
        kp_gen_hop hop;
        if (to_one_hop(g, c->path[h], &hop))
            return model_error(g, c->pos, err, "the generator cannot follow '%s' in a derived filter",
                               c->path[h]->name ? c->path[h]->name : "?");
        cur = hop_step(&hop, cur);
        if (cur < 0) return 0;
        at = hop.to_parent ? hop.link->ref : hop.link->holder;
    }
    at = gen_entity(g, c->attr->entity);
    tmp->len = 0;
    int present = attr_value(g, at, &at->attrs[c->attr->index], cur, 0, tmp, err);
    if (present < 0) return -1;
    if (!present) return 0;
    const char *value = unquoted(tmp);
    kp_type_kind kind = c->attr->type.kind;
    int ok, cmp;
    switch (c->op) {
    case KP_OP_BEGINS_WITH:
        if (!cJSON_IsString(c->value.literal)) return 0;
        return strncmp(value, c->value.literal->valuestring, strlen(c->value.literal->valuestring)) == 0;
    case KP_OP_BETWEEN: {
        cmp = compare_literal(g->model, kind, value, c->value.literal, &ok);
        if (!ok || cmp < 0) return 0;
        cmp = compare_literal(g->model, kind, value, c->upper.literal, &ok);
        return ok && cmp <= 0;
    }
    default:
        cmp = compare_literal(g->model, kind, value, c->value.literal, &ok);
        if (!ok) return 0;
        switch (c->op) {
        case KP_OP_EQ: return cmp == 0;
        case KP_OP_LT: return cmp < 0;
        case KP_OP_LE: return cmp <= 0;
        case KP_OP_GT: return cmp > 0;
        case KP_OP_GE: return cmp >= 0;
        default: return 0;
        }
    }
}

/* The aggregate of no records: 0 for count and sum, "none" for min and max. */
static int64_t aggregate_init(const kp_gen_derived *gd)
{
    int64_t init = 0;
    if (gd->store == KP_GEN_STORE_DOUBLE && gd->derived->fn != KP_AGG_SUM) {
        double nan_value = NAN;
        memcpy(&init, &nan_value, sizeof init);
    } else if (gd->derived->fn == KP_AGG_MIN) {
        init = NONE_MIN;
    } else if (gd->derived->fn == KP_AGG_MAX) {
        init = NONE_MAX;
    }
    return init;
}

/* Adds target record t of the aggregated entity to the aggregate in *slot. */
static int contribute(kp_generator *g, kp_gen_attr *ga, int64_t *slot, int64_t t, kp_error *err)
{
    kp_gen_derived *gd = &ga->derived;
    const kp_derived *d = gd->derived;
    for (size_t c = 0; c < d->where_count; c++) {
        int holds = condition_holds(g, gd->target, t, &d->where[c], &gd->tmp, err);
        if (holds < 0) return -1;
        if (!holds) return 0;
    }
    if (d->fn == KP_AGG_COUNT) { (*slot)++; return 0; }
    gd->value.len = 0;
    int present = attr_value(g, gd->target, &gd->target->attrs[d->of->index], t, 0, &gd->value, err);
    if (present < 0) return -1;
    if (!present) return 0;
    if (gd->value.failed) return nomem(err);
    const char *text = unquoted(&gd->value);
    if (gd->store == KP_GEN_STORE_DOUBLE) {
        double v = strtod(text, NULL), cur;
        memcpy(&cur, slot, sizeof cur);
        if (d->fn == KP_AGG_SUM) cur += v;
        else if (isnan(cur) || (d->fn == KP_AGG_MIN ? v < cur : v > cur)) cur = v;
        memcpy(slot, &cur, sizeof cur);
        return 0;
    }
    int64_t v = 0;
    int bad = 0;
    switch (gd->of_kind) {
    case KP_T_DECIMAL: bad = kp_gen_parse_cents(text, strlen(text), 0, &v); break;
    case KP_T_TIMESTAMP: bad = kp_timestamp_parse(text, &v); break;
    case KP_T_DATE: { int32_t days; bad = kp_date_parse(text, &days); v = days; break; }
    default: bad = kp_int_parse(text, strlen(text), &v); break;
    }
    if (bad) return 0;
    if (d->fn == KP_AGG_SUM) *slot += v;
    else if (d->fn == KP_AGG_MIN) { if (v < *slot) *slot = v; }
    else if (v > *slot) *slot = v;
    return 0;
}

/* Aggregates every record reached from `record` by steps[h..]: the derived value of
 * one source record, computed from its related records as they are generated. */
static int enumerate(kp_generator *g, kp_gen_attr *ga, size_t h, int64_t record, int64_t *slot, kp_error *err)
{
    kp_gen_derived *gd = &ga->derived;
    if (h == gd->step_count) return contribute(g, ga, slot, record, err);
    const kp_gen_step *step = &gd->steps[h];
    switch (step->kind) {
    case KP_GEN_STEP_CHILDREN: {
        kp_gen_link *link = step->link;
        int64_t start = kp_gen_fanout_start(&link->fanout, record), n = kp_gen_fanout_count(&link->fanout, record);
        for (int64_t k = 0; k < n; k++) {
            int64_t child = start + k;
            if (link->is_permuted) child = (int64_t)kp_gen_perm_invert(&link->position, (uint64_t)child);
            if (enumerate(g, ga, h + 1, child, slot, err)) return -1;
        }
        return 0;
    }
    case KP_GEN_STEP_PARTNER: {
        int64_t other = kp_gen_link_partner(step->link, record);
        return other < 0 ? 0 : enumerate(g, ga, h + 1, other, slot, err);
    }
    case KP_GEN_STEP_PARENT: {
        int64_t other = kp_gen_link_parent(step->link, record);
        return other < 0 ? 0 : enumerate(g, ga, h + 1, other, slot, err);
    }
    case KP_GEN_STEP_THROUGH: case KP_GEN_STEP_ARRAY: {
        kp_gen_fanout *fanout = step->kind == KP_GEN_STEP_THROUGH ? &step->link->fanout : &step->array->array_fanout;
        kp_gen_picks *picks = step->kind == KP_GEN_STEP_THROUGH ? &step->picks_link->picks : &step->array->array_picks;
        int64_t n = kp_gen_fanout_count(fanout, record);
        for (int64_t k = 0; k < n; k++) {
            int64_t t = kp_gen_picks_get(picks, record, k);
            if (t < 0) break;
            if (enumerate(g, ga, h + 1, t, slot, err)) return -1;
        }
        return 0;
    }
    }
    return 0;
}

/* For paths that cannot be listed forwards (an N:M walked from its `to` side, the
 * second side of a pair key): one pass over the related records fills a vector with
 * the aggregate of every source record (8 bytes per source record). */
static int derived_compute(kp_generator *g, kp_gen_attr *ga, kp_error *err)
{
    kp_gen_derived *gd = &ga->derived;
    if (gd->state == 2) return 0;
    kp_gen_entity *source = gen_entity(g, ga->attr->entity);
    if (gd->state == 1)
        return model_error(g, ga->attr->pos, err, "%s.%s is derived from itself (through other derived attributes)",
                           source->entity->name, ga->attr->name);
    gd->state = 1;
    size_t n = (size_t)(source->count > 0 ? source->count : 1);
    gd->values = malloc(n * sizeof *gd->values);
    if (!gd->values) { gd->state = 0; return nomem(err); }
    int64_t init = aggregate_init(gd);
    for (size_t i = 0; i < n; i++) gd->values[i] = init;
    int rc = 0;
    if (gd->through_from) {
        kp_gen_entity *join = gd->through_from->holder;
        for (int64_t j = 0; j < join->count && rc == 0; j++) {
            int64_t f = kp_gen_link_parent(gd->through_from, j), t = kp_gen_link_parent(gd->through_to, j);
            if (f < 0 || t < 0) continue;
            rc = gd->is_inverse ? contribute(g, ga, &gd->values[t], f, err) : contribute(g, ga, &gd->values[f], t, err);
        }
    } else if (gd->array) {
        kp_gen_entity *from = gen_entity(g, gd->array->attr->entity);
        for (int64_t p = 0; p < from->count && rc == 0; p++) {
            int64_t c = kp_gen_fanout_count(&gd->array->array_fanout, p);
            for (int64_t k = 0; k < c && rc == 0; k++) {
                int64_t t = kp_gen_picks_get(&gd->array->array_picks, p, k);
                if (t < 0) break;
                rc = gd->is_inverse ? contribute(g, ga, &gd->values[t], p, err) : contribute(g, ga, &gd->values[p], t, err);
            }
        }
    } else {
        for (int64_t t = 0; t < gd->target->count && rc == 0; t++) {
            int64_t s = t;
            for (size_t h = 0; h < gd->hop_count && s >= 0; h++) s = hop_step(&gd->hops[h], s);
            if (s >= 0 && s < source->count) rc = contribute(g, ga, &gd->values[s], t, err);
        }
    }
    if (rc) {
        free(gd->values);
        gd->values = NULL;
        gd->state = 0;
        return -1;
    }
    gd->state = 2;
    return 0;
}

/* ---- records ------------------------------------------------------------------------ */

static int record_into(kp_generator *g, kp_gen_entity *ge, int64_t i, kp_gen_buf *out, kp_error *err)
{
    int first = 1;
    kp_gen_putc(out, '{');
    for (size_t a = 0; a < ge->entity->attr_count; a++) {
        kp_gen_attr *ga = &ge->attrs[a];
        if (ga->attr->is_kept) continue; /* keyplan's, not the model's: the loader computes it */
        size_t mark = out->len;
        if (!first) kp_gen_putc(out, ',');
        kp_gen_putn(out, ga->json_name, ga->json_name_len);
        int present = attr_value(g, ge, ga, i, 0, out, err);
        if (present < 0) return -1;
        if (!present) { out->len = mark; continue; }
        first = 0;
    }
    kp_gen_putc(out, '}');
    if (out->failed) return nomem(err);
    return 0;
}

static kp_gen_entity *checked_entity(kp_generator *g, const kp_entity *entity, int64_t index, kp_error *err)
{
    if (!entity || entity->index >= g->model->entity_count || g->model->entities[entity->index] != entity) {
        kp_error_set(err, KP_ERR_INTERNAL, NULL, 0, 0, "the entity given to the generator is not from its model");
        return NULL;
    }
    if (index < 0) {
        kp_error_set(err, KP_ERR_USAGE, NULL, 0, 0, "record numbers start at 0 (got %lld)", (long long)index);
        return NULL;
    }
    return &g->entities[entity->index];
}

int kp_generator_record_text(kp_generator *g, const kp_entity *entity, int64_t index, char **buf, size_t *len,
                             size_t *cap, kp_error *err)
{
    kp_error_clear(err);
    kp_gen_entity *ge = checked_entity(g, entity, index, err);
    if (!ge) return -1;
    kp_gen_buf b = {*buf, *len, *cap, 0};
    g->depth = 0;
    int rc = record_into(g, ge, index, &b, err);
    kp_gen_terminate(&b);
    if (!rc && b.failed) rc = nomem(err);
    *buf = b.data;
    *len = b.len;
    *cap = b.cap;
    return rc;
}

/* ---- canonical text to cJSON (numbers kept exact as raw nodes) ------------------------- */

static cJSON *parse_text(const char **p);

static char *parse_string(const char **p)
{
    const char *s = *p + 1;
    size_t cap = 32, n = 0;
    char *out = malloc(cap);
    if (!out) return NULL;
    while (*s && *s != '"') {
        char c = *s++;
        if (c == '\\') {
            char e = *s++;
            if (e == 'u') {
                unsigned v = 0;
                for (int k = 0; k < 4 && *s; k++, s++) v = v * 16 + (unsigned)(*s <= '9' ? *s - '0' : (*s | 32) - 'a' + 10);
                c = (char)v; /* the generator escapes only control characters this way */
            } else {
                c = e == 'n' ? '\n' : e == 't' ? '\t' : e == 'r' ? '\r' : e == 'b' ? '\b' : e == 'f' ? '\f' : e;
            }
        }
        if (n + 2 > cap) {
            cap *= 2;
            char *grown = realloc(out, cap);
            if (!grown) { free(out); return NULL; }
            out = grown;
        }
        out[n++] = c;
    }
    out[n] = '\0';
    *p = *s ? s + 1 : s;
    return out;
}

static cJSON *parse_text(const char **p)
{
    const char *s = *p;
    if (*s == '{' || *s == '[') {
        int is_object = *s == '{';
        cJSON *node = is_object ? cJSON_CreateObject() : cJSON_CreateArray();
        if (!node) return NULL;
        s++;
        while (*s && *s != '}' && *s != ']') {
            char *key = NULL;
            if (is_object) {
                key = parse_string(&s);
                if (!key) { cJSON_Delete(node); return NULL; }
                if (*s == ':') s++;
            }
            cJSON *item = parse_text(&s);
            if (!item) { free(key); cJSON_Delete(node); return NULL; }
            if (is_object) cJSON_AddItemToObject(node, key, item);
            else cJSON_AddItemToArray(node, item);
            free(key);
            if (*s == ',') s++;
        }
        if (*s) s++;
        *p = s;
        return node;
    }
    if (*s == '"') {
        char *text = parse_string(&s);
        if (!text) return NULL;
        cJSON *node = cJSON_CreateString(text);
        free(text);
        *p = s;
        return node;
    }
    if (strncmp(s, "true", 4) == 0) { *p = s + 4; return cJSON_CreateTrue(); }
    if (strncmp(s, "false", 5) == 0) { *p = s + 5; return cJSON_CreateFalse(); }
    if (strncmp(s, "null", 4) == 0) { *p = s + 4; return cJSON_CreateNull(); }
    const char *end = s;
    while (*end && strchr("-+.0123456789eE", *end)) end++;
    char number[128];
    size_t n = (size_t)(end - s) < sizeof number - 1 ? (size_t)(end - s) : sizeof number - 1;
    memcpy(number, s, n);
    number[n] = '\0';
    *p = end;
    return cJSON_CreateRaw(number);
}

static cJSON *text_to_json(const char *text, kp_error *err)
{
    const char *p = text;
    cJSON *node = parse_text(&p);
    if (!node) nomem(err);
    return node;
}

cJSON *kp_generator_record(kp_generator *g, const kp_entity *entity, int64_t index, kp_error *err)
{
    char *buf = NULL;
    size_t len = 0, cap = 0;
    if (kp_generator_record_text(g, entity, index, &buf, &len, &cap, err)) { free(buf); return NULL; }
    cJSON *node = text_to_json(buf, err);
    free(buf);
    return node;
}

cJSON *kp_generator_new_record(kp_generator *g, const kp_entity *entity, uint64_t sequence, kp_error *err)
{
    kp_error_clear(err);
    kp_gen_entity *ge = checked_entity(g, entity, 0, err);
    if (!ge) return NULL;
    return kp_generator_record(g, entity, ge->count + (int64_t)sequence, err);
}

static int value_of(kp_generator *g, const kp_attr *attr, int64_t index, int force, cJSON **out, kp_error *err)
{
    kp_error_clear(err);
    *out = NULL;
    if (!attr || !attr->entity)
        return kp_error_set(err, KP_ERR_INTERNAL, NULL, 0, 0, "the generator gives values of entity attributes only");
    kp_gen_entity *ge = checked_entity(g, attr->entity, index, err);
    if (!ge) return -1;
    kp_gen_buf b = {0};
    g->depth = 0;
    int present = attr_value(g, ge, &ge->attrs[attr->index], index, force, &b, err);
    kp_gen_terminate(&b);
    if (present >= 0 && b.failed) present = nomem(err);
    if (present > 0) {
        *out = text_to_json(b.data, err);
        if (!*out) present = -1;
    }
    free(b.data);
    return present < 0 ? -1 : 0;
}

int kp_generator_value(kp_generator *g, const kp_attr *attr, int64_t index, cJSON **out, kp_error *err)
{
    return value_of(g, attr, index, 0, out, err);
}

int kp_generator_fresh_value(kp_generator *g, const kp_attr *attr, uint64_t sequence, cJSON **out, kp_error *err)
{
    kp_error_clear(err);
    *out = NULL;
    if (!attr || !attr->entity)
        return kp_error_set(err, KP_ERR_INTERNAL, NULL, 0, 0, "the generator gives values of entity attributes only");
    return value_of(g, attr, kp_generator_count(g, attr->entity) + (int64_t)sequence, 1, out, err);
}

/* ---- datasets --------------------------------------------------------------------- */

static int io_error(kp_error *err, const char *what, const char *path)
{
    return kp_error_set(err, KP_ERR_IO, NULL, 0, 0, "cannot %s '%s': %s; choose a directory you can write to with --out",
                        what, path, strerror(errno));
}

/* mkdir -p */
static int make_directory(const char *path, kp_error *err)
{
    char tmp[4096];
    size_t n = strlen(path);
    if (n == 0 || n >= sizeof tmp)
        return kp_error_set(err, KP_ERR_IO, NULL, 0, 0, "the output directory name is empty or too long");
    memcpy(tmp, path, n + 1);
    for (size_t i = 1; i <= n; i++) {
        if (tmp[i] != '/' && tmp[i] != '\0') continue;
        char saved = tmp[i];
        tmp[i] = '\0';
        if (mkdir(tmp, 0777) != 0 && errno != EEXIST) return io_error(err, "create the directory", tmp);
        tmp[i] = saved;
    }
    struct stat st;
    if (stat(path, &st) != 0) return io_error(err, "create the directory", path);
    if (!S_ISDIR(st.st_mode)) {
        errno = ENOTDIR;
        return io_error(err, "write into", path);
    }
    return 0;
}

/* Empties DIR/.tmp of what an interrupted run left (regular files only). */
static int clear_directory(const char *path, kp_error *err)
{
    DIR *d = opendir(path);
    if (!d) return io_error(err, "open the directory", path);
    struct dirent *entry;
    char file[4096];
    while ((entry = readdir(d))) {
        if (strcmp(entry->d_name, ".") == 0 || strcmp(entry->d_name, "..") == 0) continue;
        if (snprintf(file, sizeof file, "%s/%s", path, entry->d_name) >= (int)sizeof file) continue;
        struct stat st;
        if (lstat(file, &st) == 0 && S_ISREG(st.st_mode)) unlink(file);
    }
    closedir(d);
    return 0;
}

static double now_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* The bytes of one value in a record's JSON, from the model's sizes or the type's usual text. */
static double value_bytes(const kp_attr *a)
{
    if (a->avg_size > 0) {
        /* sizes are of the value; strings and encoded blobs add quotes (blobs: base64) */
        if (a->type.kind == KP_T_BLOB) return a->avg_size * 4.0 / 3.0 + 2;
        return a->avg_size + (a->type.kind == KP_T_STRING || a->type.kind == KP_T_ENUM ? 2 : 0);
    }
    switch (a->type.kind) {
    case KP_T_INT: case KP_T_COUNTER: return 6;
    case KP_T_DECIMAL: return 8;
    case KP_T_DOUBLE: return 12;
    case KP_T_BOOL: return 5;
    case KP_T_TIMESTAMP: return 26;
    case KP_T_DATE: return 12;
    case KP_T_UUID: case KP_T_TIMEUUID: return 38;
    case KP_T_ENUM: return 10;
    case KP_T_OBJECT: case KP_T_ARRAY: case KP_T_MAP: return 60;
    case KP_T_BLOB: return 90;
    default: return 14;
    }
}

double kp_generate_estimate_bytes(const kp_model *model)
{
    double total = 0;
    for (size_t e = 0; e < model->entity_count; e++) {
        const kp_entity *ent = model->entities[e];
        double record = 3; /* {} and the newline */
        for (size_t a = 0; a < ent->attr_count; a++) {
            const kp_attr *attr = ent->attrs[a];
            double presence = attr->presence > 0 && attr->presence < 1 ? attr->presence : 1;
            record += presence * ((double)strlen(attr->name) + 4 + value_bytes(attr));
        }
        total += record * ent->count;
    }
    return total;
}

static int write_entity(kp_generator *g, kp_gen_entity *ge, const char *path, int64_t *bytes,
                        const kp_generate_options *options, kp_error *err)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0666);
    if (fd < 0) return io_error(err, "create", path);
    kp_gen_buf b = {0};
    int rc = 0;
    *bytes = 0;
    for (int64_t i = 0; i < ge->count && rc == 0; i++) {
        if ((i & 4095) == 0 && options && options->interrupted && *options->interrupted) {
            rc = kp_error_set(err, KP_ERR_IO, NULL, 0, 0, "interrupted; nothing of this run was kept (rerun the same command)");
            break;
        }
        g->depth = 0;
        if (record_into(g, ge, i, &b, err)) { rc = -1; break; }
        kp_gen_putc(&b, '\n');
        if (b.failed) { rc = nomem(err); break; }
        if (b.len >= (1u << 20) || i == ge->count - 1) {
            size_t done = 0;
            while (done < b.len) {
                ssize_t w = write(fd, b.data + done, b.len - done);
                if (w < 0) {
                    if (errno == EINTR) continue;
                    rc = io_error(err, "write", path);
                    break;
                }
                done += (size_t)w;
            }
            *bytes += (int64_t)b.len;
            b.len = 0;
            if (options && options->tick) options->tick(ge->entity, i + 1, ge->count, options->progress_ctx);
        }
    }
    free(b.data);
    if (close(fd) != 0 && rc == 0) rc = io_error(err, "write", path);
    return rc;
}

int kp_generate_dataset(const kp_model *model, const char *dir, const kp_generate_options *options,
                        kp_generate_stats *stats, kp_error *err)
{
    kp_error_clear(err);
    double started = now_seconds();
    if (stats) memset(stats, 0, sizeof *stats);
    kp_generator *g;
    if (kp_generator_new(model, options ? options->seed : 1, &g, err)) return -1;
    char tmp_dir[4096], from[4096], to[4096];
    if (snprintf(tmp_dir, sizeof tmp_dir, "%s/.tmp", dir) >= (int)sizeof tmp_dir) {
        kp_generator_free(g);
        return kp_error_set(err, KP_ERR_IO, NULL, 0, 0, "the output directory name is too long");
    }
    if (make_directory(dir, err) || make_directory(tmp_dir, err) || clear_directory(tmp_dir, err) ||
        access(dir, W_OK) != 0) {
        if (err->code == KP_OK) io_error(err, "write into", dir);
        kp_generator_free(g);
        return -1;
    }
    /* the files must fit: refused before anything is written, not when the disk is full */
    struct statvfs fs;
    if (!(options && options->skip_space_check) && statvfs(dir, &fs) == 0) {
        double need = kp_generate_estimate_bytes(model), room = (double)fs.f_bavail * (double)fs.f_frsize;
        if (need > room) {
            rmdir(tmp_dir);
            kp_generator_free(g);
            return kp_error_set(err, KP_ERR_IO, NULL, 0, 0,
                                "the data would take about %.1f GB and %s has %.1f GB free; pick a smaller --scale or "
                                "another --out (or --no-space-check when the estimate is wrong)",
                                need / 1e9, dir, room / 1e9);
        }
    }
    int rc = 0;
    int64_t records = 0, bytes = 0;
    for (size_t e = 0; e < model->entity_count && rc == 0; e++) {
        kp_gen_entity *ge = &g->entities[e];
        int64_t written = 0;
        if (snprintf(from, sizeof from, "%s/%s.ndjson", tmp_dir, ge->entity->name) >= (int)sizeof from) {
            rc = kp_error_set(err, KP_ERR_IO, NULL, 0, 0, "the output directory name is too long");
            break;
        }
        rc = write_entity(g, ge, from, &written, options, err);
        if (rc) break;
        records += ge->count;
        bytes += written;
        if (options && options->progress) options->progress(ge->entity, ge->count, written, options->progress_ctx);
    }
    for (size_t e = 0; e < model->entity_count && rc == 0; e++) {
        if (snprintf(from, sizeof from, "%s/%s.ndjson", tmp_dir, model->entities[e]->name) >= (int)sizeof from ||
            snprintf(to, sizeof to, "%s/%s.ndjson", dir, model->entities[e]->name) >= (int)sizeof to)
            rc = kp_error_set(err, KP_ERR_IO, NULL, 0, 0, "the output directory name is too long");
        else if (rename(from, to) != 0)
            rc = io_error(err, "move the finished file into", to);
    }
    if (rc) { /* failed or interrupted: no partial file stays */
        kp_error ignored;
        clear_directory(tmp_dir, &ignored);
    }
    rmdir(tmp_dir);
    kp_generator_free(g);
    if (stats) {
        stats->records = records;
        stats->bytes = bytes;
        stats->seconds = now_seconds() - started;
    }
    return rc;
}
