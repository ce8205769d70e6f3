/*
 * propose.c — the DynamoDB single-table design: where each entity's items live, which
 * indexes exist and why, and for every access pattern the requests that serve it.
 *
 * The rules, in the order they are applied (each recorded as a kp_decision naming the
 * patterns that caused it):
 *  1. Item collections. A child entity whose parent's patterns list it (an $each over
 *     a 1:N relation) lives in the parent's partition: PK = <PARENT>#<parent key>,
 *     SK = <CHILD>#<child key>. The most-read such relation wins.
 *  2. Headers. When a pattern returns the parent's attributes with its children, the
 *     parent's item sorts at the head of the child collection in the read's direction
 *     (SK <CHILD>! for ascending reads, <CHILD>$ for descending; every value byte that
 *     low is escaped in keys), so parent + children is ONE Query.
 *  3. Orders other than the key: a local secondary index on the same partition whose
 *     sort key is <CHILD>#<equalities>#<order attributes>#<key> (LSIs cost nothing in
 *     writes beyond the item, but bound the collection to 10 GB: checked).
 *  4. Everything the base table cannot serve — a root set (feeds, cross-partition
 *     listings), a lookup by a unique attribute, a child listed from the other side of
 *     a relation — gets a global secondary index slot. Slots are overloaded: GSI<n>PK /
 *     GSI<n>SK carry different entities' keys, so a model needs as many GSIs as the
 *     largest number of such needs of one entity, not one per need.
 *  5. Sparse indexes: a root set filtered by a literal (status = "ACTIVE") only puts the
 *     matching items in the index.
 *  6. Write sharding: when the skewed load on one partition key passes 3,000 RCU or
 *     1,000 WCU (or a hint asks), the index key gets N suffixes and reads scatter-gather.
 *  7. Anything that would need a Scan is a defect of the design, never a silent plan.
 * Invariant: a plan's claimed requests and round trips are what execute.c sends for
 * a first page when the data matches the model's averages.
 */
#include "backends/copies.h"
#include "backends/dynamodb/ddb.h"
#include "backends/dynamodb/request.h"
#include "backends/emit.h"
#include "backends/write_effects.h"

#include <math.h>
#include <stdint.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct builder {
    const kp_model *m;
    const kp_mix *mix;
    kp_design *d;
    ddb_layout *L;
    kp_arena *arena;   /* the layout's arena */
    kp_error *err;
    int is_normalised; /* the "normalised" alternative (compare): no item collections, every entity in
                          its own partitions, related items reached through indexes */
    struct step_ref { const kp_write *write; const kp_write_step *step; } **steps_of; /* per entity, in model order */
    size_t *step_count_of;
    int is_out_of_memory;  /* the fetch trees could not grow */
    /* integer foreign-key attributes and the key attributes they reference: a reference's key
     * text is its target's (the same width), or a child's collection would not be its
     * parent's partition */
    const kp_attr **ref_from, **ref_to;
    size_t ref_count;
    /* per entity, its item's bytes (expected, at most) once the layout is settled
     * (propose_one: placements and copies no longer change), else NULL */
    double *settled_bytes;
} builder;

/* Indexes the integer attributes of foreign keys (few: most keys are text). */
static int index_int_references(builder *B)
{
    size_t n = 0;
    for (int pass = 0; pass < 2; pass++) {
        for (size_t i = 0; i < B->m->relation_count; i++) {
            const kp_relation *r = B->m->relations[i];
            if (r->link != KP_LINK_FOREIGN_KEY) continue;
            for (size_t k = 0; k < r->fk_count; k++) {
                if (r->fk_attrs[k]->type.kind != KP_T_INT && r->fk_attrs[k]->type.kind != KP_T_COUNTER) continue;
                if (pass) { B->ref_from[n] = r->fk_attrs[k]; B->ref_to[n] = r->ref_attrs[k]; }
                n++;
            }
        }
        if (pass || !n) break;
        B->ref_from = kp_arena_alloc(B->arena, sizeof *B->ref_from * n);
        B->ref_to = kp_arena_alloc(B->arena, sizeof *B->ref_to * n);
        if (!B->ref_from || !B->ref_to) return -1;
        n = 0;
    }
    B->ref_count = n;
    return 0;
}

/* Indexes every write step by the entity it writes (model order), so per-pattern
 * checks read only the steps of their entity. */
static int index_write_steps(builder *B)
{
    const kp_model *m = B->m;
    size_t n = m->entity_count ? m->entity_count : 1;
    B->steps_of = kp_arena_alloc(B->arena, sizeof *B->steps_of * n);
    B->step_count_of = kp_arena_alloc(B->arena, sizeof *B->step_count_of * n);
    if (!B->steps_of || !B->step_count_of) return -1;
    for (int pass = 0; pass < 2; pass++) {
        for (size_t w = 0; w < m->write_count; w++)
            for (size_t s = 0; s < m->writes[w]->step_count; s++) {
                const kp_write_step *st = &m->writes[w]->steps[s];
                size_t e = st->entity->index;
                if (pass == 1) B->steps_of[e][B->step_count_of[e]] = (struct step_ref){m->writes[w], st};
                B->step_count_of[e]++;
            }
        if (pass == 1) break;
        for (size_t e = 0; e < m->entity_count; e++) {
            B->steps_of[e] = kp_arena_alloc(B->arena, sizeof **B->steps_of * (B->step_count_of[e] ? B->step_count_of[e] : 1));
            if (!B->steps_of[e]) return -1;
            B->step_count_of[e] = 0;
        }
    }
    return 0;
}

static const char *bprintf(builder *B, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static const char *bprintf(builder *B, const char *fmt, ...)
{
    char buf[1024];
    va_list ap;
    va_start(ap, fmt);
    kp_vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    return kp_arena_strdup(B->arena, buf);
}

static ddb_entity *entity_of(builder *B, const kp_entity *e) { return &B->L->entities[e->index]; }

/* ---- key formats ------------------------------------------------------------------ */

static void fmt_literal(builder *B, ddb_format *f, const char *text)
{
    ddb_segment *segs = kp_arena_alloc(B->arena, sizeof *segs * (f->count + 1));
    if (f->count) memcpy(segs, f->segs, sizeof *segs * f->count);
    segs[f->count].literal = kp_arena_strdup(B->arena, text);
    f->segs = segs;
    f->count++;
}

static int int_width(const kp_attr *a)
{
    if (!a->min || !a->max) return 0;
    double lo = a->min->valuedouble, hi = a->max->valuedouble;
    if (lo < 0) return 0;
    int w = 1;
    while (hi >= 10) { hi /= 10; w++; }
    return w;
}

static void fmt_attr(builder *B, ddb_format *f, const kp_attr *a)
{
    ddb_segment *segs = kp_arena_alloc(B->arena, sizeof *segs * (f->count + 1));
    if (f->count) memcpy(segs, f->segs, sizeof *segs * f->count);
    segs[f->count].attr = a;
    /* an integer reference takes its target's width, through chains of references */
    const kp_attr *w = a;
    int is_int = a->type.kind == KP_T_INT || a->type.kind == KP_T_COUNTER;
    for (int hops = 0; is_int && hops < 8; hops++) {
        size_t k = 0;
        while (k < B->ref_count && B->ref_from[k] != w) k++;
        if (k == B->ref_count || B->ref_to[k] == w) break;
        w = B->ref_to[k];
    }
    segs[f->count].width = is_int ? int_width(w) : 0;
    f->segs = segs;
    f->count++;
}

/* "<PREFIX>#<a1>#<a2>" */
static ddb_format fmt_keyed(builder *B, const char *prefix, const kp_attr *const *attrs, size_t n)
{
    ddb_format f = {0};
    fmt_literal(B, &f, prefix);
    for (size_t i = 0; i < n; i++) {
        fmt_literal(B, &f, "#");
        fmt_attr(B, &f, attrs[i]);
    }
    return f;
}

static size_t fmt_attr_count(const ddb_format *f)
{
    size_t n = 0;
    for (size_t i = 0; i < f->count; i++) n += f->segs[i].attr != NULL;
    return n;
}

/* Does the key format hold these attributes and no other (a Query can name it from them)? */
static int keyed_by_only(const ddb_format *f, kp_attr *const *attrs, size_t n)
{
    if (fmt_attr_count(f) != n) return 0;
    for (size_t i = 0; i < f->count; i++) {
        int in = !f->segs[i].attr;
        for (size_t k = 0; k < n && !in; k++) in = f->segs[i].attr == attrs[k];
        if (!in) return 0;
    }
    return 1;
}

/* ---- placements ------------------------------------------------------------------- */

/* Placements never move (fetches point at them): room for the base table, every LSI
 * and every GSI is reserved up front. */
enum { MAX_PLACEMENTS = 1 + KP_DDB_MAX_LSI + KP_DDB_MAX_GSI + 8 };

static ddb_placement *add_placement(builder *B, ddb_entity *e)
{
    if (!e->placements) {
        e->placements = kp_arena_alloc(B->arena, sizeof *e->placements * MAX_PLACEMENTS);
        e->placement_cap = MAX_PLACEMENTS;
    }
    if (e->placement_count == e->placement_cap) return NULL;
    ddb_placement *p = &e->placements[e->placement_count++];
    memset(p, 0, sizeof *p);
    p->shards = 1;
    return p;
}

/* The lowest GSI slot this entity does not use yet (overloading). */
static const ddb_index *gsi_slot(builder *B, ddb_entity *e)
{
    for (size_t n = 0; n < sizeof B->L->gsi / sizeof *B->L->gsi; n++) {
        int taken = 0;
        for (size_t i = 0; i < e->placement_count; i++) taken |= e->placements[i].index == &B->L->gsi[n];
        if (taken) continue;
        if (n == B->L->gsi_count) {
            ddb_index *g = &B->L->gsi[n];
            g->kind = DDB_GSI;
            g->number = (int)n + 1;
            g->name = bprintf(B, "GSI%d", g->number);
            g->pk_attr = bprintf(B, "GSI%dPK", g->number);
            g->sk_attr = bprintf(B, "GSI%dSK", g->number);
            B->L->gsi_count++;
        }
        return &B->L->gsi[n];
    }
    return NULL;
}

static const ddb_index *lsi_slot(builder *B, ddb_entity *e)
{
    for (size_t n = 0; n < KP_DDB_MAX_LSI; n++) {
        int taken = 0;
        for (size_t i = 0; i < e->placement_count; i++) taken |= e->placements[i].index == &B->L->lsi[n];
        if (taken) continue;
        if (n == B->L->lsi_count) {
            ddb_index *l = &B->L->lsi[n];
            l->kind = DDB_LSI;
            l->number = (int)n + 1;
            l->name = bprintf(B, "LSI%d", l->number);
            l->pk_attr = "PK";
            l->sk_attr = bprintf(B, "LSI%dSK", l->number);
            B->L->lsi_count++;
        }
        return &B->L->lsi[n];
    }
    return NULL;
}

static int same_format(const ddb_format *a, const ddb_format *b)
{
    if (a->count != b->count) return 0;
    for (size_t i = 0; i < a->count; i++) {
        if ((a->segs[i].literal == NULL) != (b->segs[i].literal == NULL)) return 0;
        if (a->segs[i].literal ? strcmp(a->segs[i].literal, b->segs[i].literal) : a->segs[i].attr != b->segs[i].attr) return 0;
        if (a->segs[i].via != b->segs[i].via) return 0;
        if (a->segs[i].is_inverted != b->segs[i].is_inverted || (a->segs[i].null_text == NULL) != (b->segs[i].null_text == NULL) ||
            (a->segs[i].null_text && strcmp(a->segs[i].null_text, b->segs[i].null_text)))
            return 0;
    }
    return 1;
}

static int same_conditions(const kp_cond *a, size_t an, const kp_cond *b, size_t bn)
{
    if (an != bn) return 0;
    for (size_t i = 0; i < an; i++)
        if (a[i].attr != b[i].attr || a[i].op != b[i].op || !a[i].value.literal || !b[i].value.literal ||
            !cJSON_Compare(a[i].value.literal, b[i].value.literal, 1))
            return 0;
    return 1;
}

/* Finds an existing placement of e on a secondary index with the same keys, or adds one. */
static ddb_placement *secondary(builder *B, ddb_entity *e, int local, ddb_format pk, ddb_format sk, const kp_cond *only,
                                size_t only_count, const kp_pattern *cause, int *is_new)
{
    for (size_t i = 1; i < e->placement_count; i++) {
        ddb_placement *p = &e->placements[i];
        if ((p->index->kind == DDB_LSI) != (local != 0)) continue;
        /* a look-up entry (a literal sort key) is found by its partition alone, so it
         * is shared whatever its literal (a header's sentinel included) */
        int lookups = fmt_attr_count(&p->sk) == 0 && fmt_attr_count(&sk) == 0;
        if (same_format(&p->pk, &pk) && (lookups || same_format(&p->sk, &sk)) &&
            same_conditions(p->only_when, p->only_when_count, only, only_count)) {
            if (is_new) *is_new = 0;
            return p;
        }
    }
    const ddb_index *slot = local ? lsi_slot(B, e) : gsi_slot(B, e);
    if (!slot) return NULL;
    ddb_placement *p = add_placement(B, e);
    if (!p) return NULL;
    p->index = slot;
    p->pk = pk;
    p->sk = sk;
    p->only_when = only;
    p->only_when_count = only_count;
    p->cause = cause;
    if (is_new) *is_new = 1;
    return p;
}

/* ---- sizes and rates ----------------------------------------------------------------- */

static double attr_bytes(const kp_attr *a)
{
    if (a->avg_size > 0) return a->avg_size;
    switch (a->type.kind) {
    case KP_T_STRING: return 16;
    case KP_T_TIMESTAMP: return 24;
    case KP_T_DATE: return 10;
    case KP_T_UUID: case KP_T_TIMEUUID: return 36;
    case KP_T_BOOL: return 1;
    case KP_T_ENUM: return 8;
    case KP_T_BLOB: return 64;
    case KP_T_OBJECT: {
        double t = 3;
        for (size_t i = 0; i < a->type.field_count; i++) t += strlen(a->type.fields[i]->name) + attr_bytes(a->type.fields[i]);
        return t;
    }
    case KP_T_ARRAY: case KP_T_MAP: return 3 + (a->type.avg_items > 0 ? a->type.avg_items : 3) * 16;
    default: return 8;
    }
}

/* The bytes a key format's values take: literals as written, attribute values at their
 * average size (or at their largest). */
static double format_bytes(const ddb_format *f, int at_max)
{
    double t = 0;
    for (size_t i = 0; i < f->count; i++) {
        const ddb_segment *g = &f->segs[i];
        if (g->literal) { t += (double)strlen(g->literal); continue; }
        double v = attr_bytes(g->attr) * (at_max ? kp_attr_max_ratio(g->attr) : 1);
        t += g->width > v ? g->width : v;
    }
    return t;
}

/* An item as DynamoDB sizes it: attribute names and values, the entity tag, and the key
 * attributes of every placement (base table and indexes) with their formatted values.
 * At its largest: every attribute present, each at kp_attr_max_ratio times its average. */
static double entity_item_bytes(builder *B, const kp_entity *e, int at_max)
{
    if (B->settled_bytes) return B->settled_bytes[2 * e->index + (at_max ? 1 : 0)];
    double t = (double)strlen(KP_DDB_TYPE_ATTR) + (double)strlen(e->name);
    for (size_t i = 0; i < e->attr_count; i++) {
        const kp_attr *a = e->attrs[i];
        t += at_max ? (double)strlen(a->name) + attr_bytes(a) * kp_attr_max_ratio(a)
                    : ((double)strlen(a->name) + attr_bytes(a)) * a->presence;
    }
    const ddb_entity *de = B->L && B->L->entities ? &B->L->entities[e->index] : NULL;
    for (size_t k = 0; de && k < de->copy_count; k++) {
        const kp_attr *a = de->copies[k].attr;
        /* an array's copy: one value per element */
        const kp_fanout *n = de->copies[k].is_array ? de->copies[k].rel->fanout : NULL;
        double values = n ? (at_max ? n->max : n->avg) : 1;
        t += (double)strlen(de->copies[k].name) +
             values * (at_max ? attr_bytes(a) * kp_attr_max_ratio(a) : attr_bytes(a) * a->presence);
    }
    for (size_t k = 0; de && k < de->placement_count; k++) {
        const ddb_placement *pl = &de->placements[k];
        /* a local index shares the table's partition key: only its sort key is another attribute */
        double keys = pl->index->kind == DDB_LSI ? 0
                                                 : (double)strlen(pl->index->pk_attr) + format_bytes(&pl->pk, at_max) + (pl->shards > 1 ? 4 : 0);
        if (pl->index->sk_attr)
            keys += (double)strlen(pl->index->sk_attr) + (pl->sentinel_sk ? (double)strlen(pl->sentinel_sk) : format_bytes(&pl->sk, at_max));
        /* a sparse index's keys are on some items only */
        t += k > 0 && pl->only_when_count && !at_max ? keys * 0.5 : keys;
    }
    if (!de || de->placement_count == 0) t += 60; /* before the keys are placed: PK, SK and their names */
    return t;
}

static double item_bytes(builder *B, const kp_entity *e) { return entity_item_bytes(B, e, 0); }

static double item_bytes_max(builder *B, const kp_entity *e) { return entity_item_bytes(B, e, 1); }

/* The bytes `count` items of a fetch take for `inputs` inputs: a header Query returns one
 * parent item per input besides the children. */
static double element_item_bytes(const ddb_placement *pl, int at_max);

static double fetch_bytes(builder *B, const ddb_fetch *f, double count, double inputs, int at_max)
{
    double child = f->placement && f->placement->elements ? element_item_bytes(f->placement, at_max)
                                                          : entity_item_bytes(B, f->entity->entity, at_max);
    if (!f->header) return count * child;
    /* one header per input, and each rider it returns (DDB_RIDE children) */
    double heads = entity_item_bytes(B, f->header->entity, at_max);
    for (size_t i = 0; i < f->base.child_count; i++) {
        const ddb_fetch *c = kp_ddb_child(f, i);
        if (c->kind == DDB_RIDE) heads += entity_item_bytes(B, c->entity->entity, at_max);
    }
    return (count - inputs * (1 + f->rider_count)) * child + inputs * heads;
}

static double read_units(double bytes)
{
    /* eventually consistent reads: half a unit per 4 KB, rounded up per request */
    return ceil((bytes > 0 ? bytes : 1) / 4096.0) * 0.5;
}

static double write_units(double bytes) { return ceil((bytes > 0 ? bytes : 1) / 1024.0); }

static double pattern_rate(builder *B, const kp_pattern *p) { return kp_pattern_rps(p, B->mix); }

/* Share of requests that hit the most popular of n keys under Zipf(s). */
static double zipf_top_share(double n, double s)
{
    if (n <= 1) return 1;
    if (s <= 0) return 1 / n;
    double sum = 0;
    double limit = n < 100000 ? n : 100000;
    for (double k = 1; k <= limit; k++) sum += 1 / pow(k, s);
    return 1 / sum;
}

/* ---- rule 1 and 2: homes ---------------------------------------------------------------- */

static void each_shape(const kp_shape *s, void (*fn)(builder *, const kp_pattern *, const kp_shape *), builder *B,
                       const kp_pattern *p)
{
    fn(B, p, s);
    for (size_t i = 0; i < s->member_count; i++) each_shape(s->members[i], fn, B, p);
}

typedef struct home_vote { const kp_relation *relation; double weight; } home_vote;
static home_vote *votes; /* per entity, during propose (single-threaded) */

static void vote_homes(builder *B, const kp_pattern *p, const kp_shape *s)
{
    if ((s->kind != KP_SHAPE_EACH && s->kind != KP_SHAPE_COUNT && s->kind != KP_SHAPE_ONE) || s->is_root_set ||
        s->hop_count == 0)
        return;
    const kp_rel *r = s->hops[0];
    const kp_relation *rel = r->relation;
    if (r->is_inverse || rel->link != KP_LINK_FOREIGN_KEY || rel->holder != rel->to || rel->from == rel->to) return;
    /* a reference that may be absent (or is cleared by a detach) cannot be a partition key */
    for (size_t i = 0; i < rel->fk_count; i++)
        if (rel->fk_attrs[i]->is_optional) return;
    double w = pattern_rate(B, p) + 1e-6;
    home_vote *v = &votes[rel->to->index];
    if (!v->relation || w > v->weight) {
        if (v->relation != rel) v->weight = 0;
        v->relation = rel;
    }
    if (v->relation == rel) v->weight += w;
}

/* The sort key of a child in its parent's collection holds the child's key parts (those
 * not in the partition key): put them in the order the collection is listed in, when a
 * listing orders by key parts only, in one direction — the base sort key then serves it and
 * no local index is needed (an LSI would bound the collection to 10 GB). */
static void key_parts_in_order(const kp_model *m, const size_t *listings, size_t count, const kp_relation *home,
                               const kp_attr **rest, size_t n)
{
    for (size_t k = 0; k < count; k++) {
        const kp_shape *ret = m->patterns[listings[k]]->returns;
        for (size_t j = 0; j < ret->member_count + 1; j++) {
            const kp_shape *s = j < ret->member_count ? ret->members[j] : ret;
            if (s->kind != KP_SHAPE_EACH || !s->hop_count || s->hops[0]->relation != home || s->hops[0]->is_inverse ||
                !s->declared_order_count)
                continue;
            const kp_attr *ordered[32];
            size_t placed = 0;
            for (size_t o = 0; o < s->declared_order_count && placed < n; o++) {
                size_t at = n;
                for (size_t x = placed; x < n; x++) if (rest[x] == s->order[o].attr) at = x;
                if (at == n || s->order[o].is_desc != s->order[0].is_desc) { placed = 0; break; }
                ordered[placed++] = rest[at];
            }
            if (!placed) continue;
            /* the ordered parts first, the others after them as they were */
            size_t w = placed;
            for (size_t x = 0; x < n; x++) {
                int taken = 0;
                for (size_t y = 0; y < placed; y++) taken |= ordered[y] == rest[x];
                if (!taken) ordered[w++] = rest[x];
            }
            memcpy(rest, ordered, n * sizeof *rest);
            return;
        }
    }
}

static int place_entities(builder *B)
{
    const kp_model *m = B->m;
    votes = calloc(m->entity_count ? m->entity_count : 1, sizeof *votes);
    if (!votes) return kp_error_set(B->err, KP_ERR_NOMEM, NULL, 0, 0, "out of memory");
    for (size_t i = 0; i < m->pattern_count; i++) each_shape(m->patterns[i]->returns, vote_homes, B, m->patterns[i]);
    /* one pass each over relations and patterns, not one per entity: the N:M relation an
     * entity is the join entity of, and per entity the patterns whose returned lists or
     * counts start with a forward hop to it (the item collection's causes) */
    const kp_relation **through_of = kp_arena_alloc(B->arena, sizeof *through_of * (m->entity_count + 1));
    size_t **listing = kp_arena_alloc(B->arena, sizeof *listing * (m->entity_count + 1));
    size_t *listing_count = kp_arena_alloc(B->arena, sizeof *listing_count * (m->entity_count + 1));
    size_t *listing_cap = calloc(m->entity_count + 1, sizeof *listing_cap);
    if (!through_of || !listing || !listing_count || !listing_cap) {
        free(listing_cap);
        free(votes);
        votes = NULL;
        return kp_error_set(B->err, KP_ERR_NOMEM, NULL, 0, 0, "out of memory");
    }
    for (size_t r = 0; r < m->relation_count; r++)
        if (m->relations[r]->link == KP_LINK_THROUGH && m->relations[r]->through)
            through_of[m->relations[r]->through->index] = m->relations[r];
    for (size_t p = 0; p < m->pattern_count; p++) {
        const kp_shape *ret = m->patterns[p]->returns;
        for (size_t k = 0; k < ret->member_count + 1; k++) {
            const kp_shape *s = k < ret->member_count ? ret->members[k] : ret;
            if ((s->kind != KP_SHAPE_EACH && s->kind != KP_SHAPE_COUNT) || !s->hop_count || s->hops[0]->is_inverse) continue;
            size_t e = s->hops[0]->target->index;
            size_t *slot = kp_arena_push(B->arena, (void **)&listing[e], &listing_count[e], &listing_cap[e], sizeof *slot);
            if (slot) *slot = p;
        }
    }
    free(listing_cap);
    /* a join entity lives with the "from" side of its N:M relation */
    for (size_t i = 0; i < m->entity_count; i++) {
        const kp_entity *e = m->entities[i];
        ddb_entity *de = entity_of(B, e);
        de->entity = e;
        de->prefix = kp_ddb_entity_prefix(B->arena, m, e);
        ddb_placement *base = add_placement(B, de);
        base->index = &B->L->base;
        const kp_relation *home = B->is_normalised ? NULL : votes[i].relation;
        const kp_relation *through = B->is_normalised ? NULL : through_of[i];
        if (home) {
            const kp_entity *parent = home->from;
            base->pk = fmt_keyed(B, entity_of(B, parent)->prefix ? entity_of(B, parent)->prefix
                                                                 : kp_ddb_entity_prefix(B->arena, m, parent),
                                 (const kp_attr *const *)home->fk_attrs, home->fk_count);
            /* the sort key: the child's key attributes that are not the foreign key */
            const kp_attr *rest[32];
            size_t n = 0;
            for (size_t k = 0; k < e->key_count && n < 32; k++) {
                int in_fk = 0;
                for (size_t f = 0; f < home->fk_count; f++) in_fk |= home->fk_attrs[f] == e->key[k];
                if (!in_fk) rest[n++] = e->key[k];
            }
            key_parts_in_order(m, listing[i], listing_count[i], home, rest, n);
            base->sk = fmt_keyed(B, de->prefix, rest, n);
            de->is_in_parent_collection = 1;
            de->home = home;
            char why[512];
            kp_snprintf(why, sizeof why,
                     "%s items live in the partition of their %s (an item collection), so listing the %s of one %s is one "
                     "Query on PK with begins_with(SK, \"%s#\")", e->name, parent->name, home->name, parent->name, de->prefix);
            kp_decision *x = kp_design_decide(B->d, kp_design_printf(B->d, "%s.%s", parent->name, home->name),
                                              kp_design_printf(B->d, "item collection: PK=%s, SK=%s",
                                                               kp_ddb_format_describe(B->arena, &base->pk),
                                                               kp_ddb_format_describe(B->arena, &base->sk)),
                                              why);
            for (size_t k = 0; k < listing_count[i]; k++) {
                const kp_pattern *pat = m->patterns[listing[i][k]];
                for (size_t j = 0; j < pat->returns->member_count + 1; j++) {
                    const kp_shape *s = j < pat->returns->member_count ? pat->returns->members[j] : pat->returns;
                    if ((s->kind == KP_SHAPE_EACH || s->kind == KP_SHAPE_COUNT) && s->hop_count && s->hops[0]->relation == home &&
                        !s->hops[0]->is_inverse)
                        kp_decision_add_pattern(B->d, x, pat);
                }
            }
        } else if (through) {
            /* a join record sits in the partition of its "from" record */
            base->pk = fmt_keyed(B, kp_ddb_entity_prefix(B->arena, m, through->from), (const kp_attr *const *)through->through_from,
                                 through->through_from_count);
            base->sk = fmt_keyed(B, de->prefix, (const kp_attr *const *)through->through_to, through->through_to_count);
            de->is_in_parent_collection = 1;
            kp_design_decide(B->d, kp_design_printf(B->d, "%s.%s", through->from->name, through->name),
                             kp_design_printf(B->d, "join items in the %s partition: PK=%s, SK=%s", through->from->name,
                                              kp_ddb_format_describe(B->arena, &base->pk),
                                              kp_ddb_format_describe(B->arena, &base->sk)),
                             kp_design_printf(B->d, "the N:M relation '%s' is held by %s items under each %s, so its "
                                                    "forward side is one Query", through->name, e->name, through->from->name));
        } else {
            base->pk = fmt_keyed(B, de->prefix, (const kp_attr *const *)e->key, e->key_count);
            base->sk = (ddb_format){0};
            fmt_literal(B, &base->sk, "META");
        }
    }
    free(votes);
    votes = NULL;
    return 0;
}

/* ---- fetch trees ---------------------------------------------------------------------- */

static ddb_fetch *new_fetch(builder *B, ddb_fetch_kind kind, const ddb_placement *pl, const ddb_entity *e)
{
    ddb_fetch *f = kp_arena_alloc(B->arena, sizeof *f);
    f->kind = kind;
    f->placement = pl;
    f->entity = e;
    f->is_forward = 1;
    f->is_server_ordered = 1;
    f->shards = pl ? pl->shards : 1;
    return f;
}

static void add_child(builder *B, ddb_fetch *parent, ddb_fetch *child)
{
    if (kp_fetch_add_child(B->arena, &parent->base, &child->base)) B->is_out_of_memory = 1;
}

/* The parameter bound by an = condition on attr (NULL when none). */
static const kp_cond *eq_cond(const kp_cond *conds, size_t n, const kp_attr *attr)
{
    for (size_t i = 0; i < n; i++)
        if (conds[i].op == KP_OP_EQ && conds[i].path_len == 0 && conds[i].attr == attr) return &conds[i];
    return NULL;
}

/* Binds each attribute segment of a format to a parameter of the pattern's where. */
static int bind_params(builder *B, ddb_fetch *f, const ddb_format *pk, const kp_pattern *p)
{
    size_t n = fmt_attr_count(pk), k = 0;
    f->pk_params = kp_arena_alloc(B->arena, sizeof *f->pk_params * (n ? n : 1));
    for (size_t i = 0; i < pk->count; i++) {
        if (!pk->segs[i].attr) continue;
        const kp_cond *c = eq_cond(p->where, p->where_count, pk->segs[i].attr);
        if (!c || !c->value.param) return -1;
        f->pk_params[k++] = c->value.param;
    }
    f->source = DDB_FROM_PARAMS;
    return 0;
}

/* Does the pattern's where give every attribute of the format (by = with a parameter)? */
static int params_cover(const ddb_format *f, const kp_pattern *p)
{
    for (size_t i = 0; i < f->count; i++)
        if (f->segs[i].attr) {
            const kp_cond *c = eq_cond(p->where, p->where_count, f->segs[i].attr);
            if (!c || !c->value.param) return 0;
        }
    return 1;
}

static double expected_items(const kp_shape *s, const kp_rel *last)
{
    double n = last && last->fanout ? last->fanout->avg : 1;
    if (s && s->expect.is_given) n = s->expect.avg;
    if (s && s->limit > 0 && n > (double)s->limit) n = (double)s->limit;
    if (s && s->limit_param && s->limit_param->default_value && n > s->limit_param->default_value->valuedouble)
        n = s->limit_param->default_value->valuedouble;
    return n;
}

static int order_is_key(const kp_shape *s, const ddb_entity *e, const ddb_format *sk, int *forward)
{
    /* server order on the base table: the declared order is the sort key's attributes in
     * order, all one direction */
    if (s->declared_order_count == 0) { *forward = 1; return 1; }
    size_t k = 0;
    int dir = s->order[0].is_desc;
    const ddb_format *pk = &e->placements[0].pk;
    for (size_t i = 0; i < sk->count; i++) {
        if (!sk->segs[i].attr) continue;
        /* an order part the partition key binds is one value in the collection */
        for (int bound = 1; bound && k < s->order_count; ) {
            bound = 0;
            for (size_t x = 0; x < pk->count; x++) bound |= pk->segs[x].attr == s->order[k].attr;
            if (bound) k++;
        }
        if (k >= s->order_count) break;
        if (s->order[k].attr != sk->segs[i].attr || s->order[k].is_desc != dir) return 0;
        k++;
    }
    if (k < s->declared_order_count) return 0;
    *forward = !dir;
    return 1;
}

/* Is attr the sort key's attribute that follows its first `skip` attribute segments? */
static int range_in_sk(const ddb_format *sk, const kp_attr *attr, size_t skip)
{
    size_t k = 0;
    for (size_t i = 0; i < sk->count; i++) {
        if (!sk->segs[i].attr) continue;
        if (k++ == skip) return sk->segs[i].attr == attr;
    }
    return 0;
}

/* The other bound of a key range on the same attribute (`placedAt >= :from` with `<= :until`),
 * taken out of the filters: the two make one BETWEEN, so the server reads only the range. A
 * strict upper bound on the last part of the sort key stays a filter (BETWEEN includes its
 * upper end, and there the key could be the bound itself). */
static const kp_cond *take_range_end(const ddb_format *sk, const kp_cond *range, const kp_cond **filters, size_t *filter_count)
{
    if (!range) return NULL;
    int is_lower = range->op == KP_OP_GE || range->op == KP_OP_GT;
    if (!is_lower && range->op != KP_OP_LE && range->op != KP_OP_LT) return NULL;
    int is_last = 0;
    for (size_t i = 0; i < sk->count; i++)
        if (sk->segs[i].attr) is_last = sk->segs[i].attr == range->attr;
    for (size_t i = 0; i < *filter_count; i++) {
        const kp_cond *c = filters[i];
        if (c == range || c->attr != range->attr || c->path_len) continue;
        const kp_cond *upper = is_lower ? c : range;
        int fits = is_lower ? (c->op == KP_OP_LE || c->op == KP_OP_LT) : (c->op == KP_OP_GE || c->op == KP_OP_GT);
        if (!fits || (upper->op == KP_OP_LT && is_last)) continue;
        memmove(&filters[i], &filters[i + 1], sizeof *filters * (*filter_count - i - 1));
        (*filter_count)--;
        return c;
    }
    return NULL;
}

/* A sort-key format for an ordered listing: <PREFIX>#<eq attrs>#<order attrs>#<key rest>. */
static ddb_format ordered_sk(builder *B, const ddb_entity *e, const kp_cond *const *eqs, size_t eq_count, const kp_shape *s,
                             const kp_attr *const *exclude, size_t exclude_count)
{
    const kp_attr *attrs[64] = {0};
    size_t n = 0;
    for (size_t i = 0; i < eq_count && n < 64; i++) attrs[n++] = eqs[i]->attr;
    for (size_t i = 0; s && i < s->order_count && n < 64; i++) {
        int skip = 0;
        for (size_t x = 0; x < exclude_count; x++) skip |= exclude[x] == s->order[i].attr;
        for (size_t x = 0; x < n; x++) skip |= attrs[x] == s->order[i].attr;
        if (!skip) attrs[n++] = s->order[i].attr;
    }
    for (size_t k = 0; k < e->entity->key_count && n < 64; k++) {
        int skip = 0;
        for (size_t x = 0; x < exclude_count; x++) skip |= exclude[x] == e->entity->key[k];
        for (size_t x = 0; x < n; x++) skip |= attrs[x] == e->entity->key[k];
        if (!skip) attrs[n++] = e->entity->key[k];
    }
    ddb_format f = fmt_keyed(B, e->prefix, attrs, n);
    /* the declared order's parts: one against the read direction inverted, an optional one
     * given the text its absence sorts at (nulls last along the read: "~" reading forward) */
    for (size_t i = 0; s && i < s->order_count; i++) { /* the key parts that break ties too */
        const kp_order_key *o = &s->order[i];
        int backward = s->order[0].is_desc, nulls_last = !o->is_nulls_first;
        for (size_t k = 0; k < f.count; k++) {
            ddb_segment *seg = &f.segs[k];
            if (seg->attr != o->attr) continue;
            int is_eq = 0;
            for (size_t x = 0; x < eq_count; x++) is_eq |= eqs[x]->attr == o->attr;
            if (is_eq) break;
            seg->is_inverted = o->is_desc != s->order[0].is_desc;
            if (o->attr->is_optional) seg->null_text = nulls_last != backward ? "~" : "!";
            break;
        }
    }
    return f;
}

/* Can a sort key hold the declared order? Parts against the first one's direction are
 * inverted (their types must allow it), optional parts sort their absence where `nulls`
 * says; an optional first part only when no range is on it (a key range on it would reach
 * the items that lack it, sorted at one end). Otherwise the client sorts. */
static int key_orderable(const kp_shape *s)
{
    for (size_t i = 0; s && i < s->order_count; i++) { /* ties are broken in the last part's direction */
        const kp_order_key *o = &s->order[i];
        for (size_t w = 0; i == 0 && o->attr->is_optional && w < s->where_count; w++)
            if (s->where[w].attr == o->attr && !s->where[w].path_len && s->where[w].op != KP_OP_EQ) return 0;
        if (o->is_desc != s->order[0].is_desc && !kp_ddb_invertible(o->attr)) return 0;
    }
    return 1;
}

/* Splits $where conditions into equalities (foldable into a sort key) and the rest. */
static void split_where(builder *B, const kp_shape *s, const kp_cond ***eqs, size_t *eq_count, const kp_cond **range,
                        const kp_cond ***filters, size_t *filter_count)
{
    *eqs = kp_arena_alloc(B->arena, sizeof **eqs * (s->where_count + 1));
    *filters = kp_arena_alloc(B->arena, sizeof **filters * (s->where_count + 1));
    *eq_count = *filter_count = 0;
    *range = NULL;
    for (size_t i = 0; i < s->where_count; i++) {
        const kp_cond *c = &s->where[i];
        int optional = c->value.param && c->value.param->is_optional;
        if (c->path_len == 0 && c->op == KP_OP_EQ && !optional) (*eqs)[(*eq_count)++] = c;
        else if (c->path_len == 0 && !*range && c->op != KP_OP_EQ && s->declared_order_count &&
                 s->order[0].attr == c->attr)
            *range = c; /* an optional bound left out simply drops the range */
        else (*filters)[(*filter_count)++] = c;
    }
}

static void describe_conditions(char *buf, size_t size, const kp_cond *const *conds, size_t n)
{
    size_t len = strlen(buf);
    for (size_t i = 0; i < n && len + 2 < size; i++) {
        kp_snprintf(buf + len, size - len, "%s%s %s ", len ? ", " : "", conds[i]->attr->name, kp_op_name(conds[i]->op));
        len = strlen(buf);
        if (conds[i]->value.param) kp_snprintf(buf + len, size - len, ":%s", conds[i]->value.param->name);
        else {
            char *t = cJSON_PrintUnformatted(conds[i]->value.literal);
            kp_snprintf(buf + len, size - len, "%s", t ? t : "?");
            cJSON_free(t);
        }
        len = strlen(buf);
    }
}

static int plan_shape_children(builder *B, const kp_pattern *p, ddb_fetch *parent, const kp_shape *s,
                               const ddb_entity *ctx);

/* `first` then `rest` as one array of conditions (the server filters them); *rest_count
 * becomes the total. */
static const kp_cond **joined_conds(builder *B, const kp_cond *const *first, size_t first_count, const kp_cond **rest,
                                    size_t *rest_count)
{
    const kp_cond **all = kp_arena_alloc(B->arena, sizeof *all * (first_count + *rest_count + 1));
    size_t t = 0;
    for (size_t i = 0; i < first_count; i++) all[t++] = first[i];
    for (size_t i = 0; i < *rest_count; i++) all[t++] = rest[i];
    *rest_count = t;
    return all;
}

/* The attributes of `e` a listing's shape reads of its elements (their leaves, order and
 * conditions, and the key), or NULL (*n = 0) when it needs more than its own attributes
 * (a path through a relation, a nested node): then the element items hold every attribute. */
static const kp_attr **listing_holds(builder *B, const kp_shape *s, const kp_entity *e, size_t *n)
{
    const kp_attr **out = kp_arena_alloc(B->arena, sizeof *out * (e->attr_count + 1));
    *n = 0;
    int all = !s || s->kind != KP_SHAPE_EACH || (s->value && (s->value->kind != KP_SHAPE_ATTR || s->value->path_len));
    for (size_t i = 0; s && !all && i < s->member_count; i++) {
        const kp_shape *m = s->members[i];
        if (m->kind == KP_SHAPE_PARAM) continue;
        all = m->kind != KP_SHAPE_ATTR || m->path_len;
    }
    for (size_t i = 0; s && !all && i < s->where_count; i++) all = s->where[i].path_len > 0;
    for (size_t a = 0; a < e->attr_count; a++) {
        const kp_attr *x = e->attrs[a];
        int used = all || x->key_index >= 0 || (s->value && s->value->attr == x);
        for (size_t i = 0; !used && i < s->member_count; i++) used = s->members[i]->kind == KP_SHAPE_ATTR && s->members[i]->attr == x;
        for (size_t i = 0; !used && i < s->order_count; i++) used = s->order[i].attr == x;
        for (size_t i = 0; !used && i < s->where_count; i++) used = s->where[i].attr == x;
        if (used) out[(*n)++] = x;
    }
    return out;
}

/* A listing of the records whose array of references holds the parent's key (r: the
 * inverse of an array relation), or that join records pair with it (r: the inverse of an
 * N:M through a join entity): an adjacency list — an item per (element, record) pair in
 * the referenced record's partition, sorted as the listing declares and holding what it
 * reads, written and kept in step by every write of the record (and of its join records).
 * One Query per page. */
static ddb_fetch *element_listing(builder *B, const kp_pattern *p, const kp_rel *r, const kp_shape *s, ddb_entity *holder)
{
    const kp_relation *rel = r->relation;
    const kp_cond **eqs = NULL, **filters = NULL, *range = NULL;
    size_t eq_count = 0, filter_count = 0;
    const kp_shape *os = s && s->kind == KP_SHAPE_EACH ? s : NULL;
    if (os) split_where(B, os, &eqs, &eq_count, &range, &filters, &filter_count);
    int orderable = !os || key_orderable(os);
    ddb_format pk = fmt_keyed(B, kp_ddb_entity_prefix(B->arena, B->m, r->source), (const kp_attr *const *)r->source->key, 1);
    ddb_format sk = orderable ? ordered_sk(B, holder, eqs, eq_count, os, NULL, 0)
                              : fmt_keyed(B, holder->prefix, (const kp_attr *const *)holder->entity->key, holder->entity->key_count);
    size_t hold_count = 0;
    const kp_attr **holds = listing_holds(B, os, holder->entity, &hold_count);
    ddb_placement *pl = NULL;
    for (size_t i = 0; i < holder->element_count && !pl; i++) {
        ddb_placement *x = &holder->element_items[i];
        if (x->elements == r && same_format(&x->sk, &sk)) pl = x;
    }
    int is_new = !pl;
    if (!pl) {
        pl = kp_arena_push(B->arena, (void **)&holder->element_items, &holder->element_count, &holder->element_cap, sizeof *pl);
        pl->index = &B->L->base;
        pl->pk = pk;
        pl->sk = sk;
        pl->shards = 1;
        pl->cause = p;
        pl->elements = r;
        pl->holds = kp_arena_alloc(B->arena, sizeof *pl->holds * (holder->entity->attr_count + 1));
    }
    for (size_t i = 0; i < hold_count; i++) { /* the union of what every listing on it reads */
        int have = 0;
        for (size_t k = 0; k < pl->hold_count; k++) have |= pl->holds[k] == holds[i];
        if (!have) pl->holds[pl->hold_count++] = holds[i];
    }
    pl->is_read = 1;
    if (is_new) {
        const char *held = "";
        for (size_t i = 0; i < hold_count; i++) held = bprintf(B, "%s%s%s", held, i ? ", " : "", holds[i]->name);
        const char *why =
            rel->array_attr
                ? bprintf(B, "'%s' lists the %s whose %s holds a %s; DynamoDB cannot index the elements of an array, so each %s "
                             "also writes one item per element into that %s's partition, in the listing's order: one Query per "
                             "page, not a Scan. Every write of a %s writes its element items too (they hold only what the "
                             "listings read)",
                          p->name, r->target->name, rel->array_attr->name, r->source->name, r->target->name, r->source->name,
                          r->target->name)
                : bprintf(B, "'%s' lists the %s paired with a %s by %s join items, which hold only the two keys and cannot give "
                             "a %s item's key (%s) nor the listing's order; so each %s also writes one item per %s it is paired "
                             "with into that %s's partition, in the listing's order: one Query per page, not a Query of every "
                             "join item and a read of each %s. Every write of a %s or of a %s writes these items too (they hold "
                             "only what the listings read)",
                          p->name, r->target->name, r->source->name, rel->through->name, r->target->name,
                          kp_ddb_format_describe(B->arena, &holder->placements[0].pk), r->target->name, r->source->name,
                          r->source->name, r->target->name, r->target->name, rel->through->name);
        kp_decision *x = kp_design_decide(
            B->d, bprintf(B, "%s.%s elements", r->target->name, kp_ddb_elements_name(rel)),
            bprintf(B, "an item per element (adjacency list): PK=%s, SK=%s, holding {%s}", kp_ddb_format_describe(B->arena, &pk),
                    kp_ddb_format_describe(B->arena, &sk), held),
            why);
        kp_decision_add_pattern(B->d, x, p);
    }
    ddb_fetch *f = new_fetch(B, s && s->kind == KP_SHAPE_COUNT ? DDB_COUNT : DDB_QUERY, pl, holder);
    f->rel = r;
    f->shape = s;
    f->source = DDB_FROM_PARENT;
    f->pk_from = kp_arena_alloc(B->arena, sizeof *f->pk_from);
    f->pk_from[0] = r->source->key[0];
    f->sk_prefix = kp_ddb_format_prefix(B->arena, &sk);
    f->sk_eq = eqs;
    f->sk_eq_count = orderable ? eq_count : 0;
    if (!orderable) filters = joined_conds(B, eqs, eq_count, filters, &filter_count);
    f->range = range && orderable && range_in_sk(&sk, range->attr, eq_count) ? range : NULL;
    if (range && !f->range) filters = joined_conds(B, &range, 1, filters, &filter_count);
    f->range_end = take_range_end(&sk, f->range, filters, &filter_count);
    f->filters = filters;
    f->filter_count = filter_count;
    f->is_forward = os && os->declared_order_count ? !os->order[0].is_desc : 1;
    f->is_server_ordered = orderable;
    if (os && orderable && filter_count == 0) f->limit = os->limit;
    return f;
}

/* An element item's size (ddb_placement.elements): its keys, type tags and what it holds. */
static double element_item_bytes(const ddb_placement *pl, int at_max)
{
    double t = 4 + format_bytes(&pl->pk, at_max) + 4 + format_bytes(&pl->sk, at_max) + 40;
    for (size_t i = 0; i < pl->hold_count; i++) {
        const kp_attr *a = pl->holds[i];
        t += (double)strlen(a->name) + (at_max ? attr_bytes(a) * kp_attr_max_ratio(a) : attr_bytes(a) * a->presence);
    }
    return t;
}

/* A listing of `child` items by relation hop r from a parent record: rules 1, 3, 4. */
/* The attribute a target item's base key needs beyond the target's own key (a parent's id,
 * an item collection's partition), which join items holding only that key cannot give; NULL
 * when the key is the target's own. */
static const kp_attr *target_key_gap(const ddb_entity *target, const kp_entity *e)
{
    const ddb_placement *tp = &target->placements[0];
    for (int part = 0; part < 2; part++) {
        const ddb_format *fm = part ? &tp->sk : &tp->pk;
        for (size_t i = 0; i < fm->count; i++) {
            const kp_attr *a = fm->segs[i].attr;
            int is_key = !a;
            for (size_t k = 0; a && k < e->key_count; k++) is_key |= e->key[k] == a;
            if (!is_key) return a;
        }
    }
    return NULL;
}

/* Do the join items of placement `pl` give a listing over an N:M (r) in its order? So: the
 * target's key is one text attribute (a sort key orders it as the data does), the join
 * items' sort key is that attribute after a literal prefix, the listing has no condition and
 * is ordered by the key alone, in one direction. */
static int join_orders(const kp_shape *s, const kp_rel *r, const ddb_placement *pl)
{
    const kp_relation *rel = r->relation;
    const kp_entity *t = r->target;
    if (!s || s->kind != KP_SHAPE_EACH || s->where_count || t->key_count != 1 || !s->order_count) return 0;
    kp_type_kind kind = t->key[0]->type.kind;
    if (kind != KP_T_STRING && kind != KP_T_UUID) return 0;
    if ((r->is_inverse ? rel->through_from_count : rel->through_to_count) != 1) return 0;
    const kp_attr *held = r->is_inverse ? rel->through_from[0] : rel->through_to[0];
    size_t attrs = 0;
    for (size_t i = 0; i < pl->sk.count; i++) {
        if (!pl->sk.segs[i].attr) continue;
        if (pl->sk.segs[i].attr != held || i + 1 != pl->sk.count) return 0;
        attrs++;
    }
    if (attrs != 1) return 0;
    for (size_t i = 0; i < s->order_count; i++)
        if (s->order[i].attr != t->key[0] || s->order[i].is_desc != s->order[0].is_desc) return 0;
    return 1;
}

/* The item attribute of `holder` (a referencing entity, or an N:M's join entity) that holds
 * a copy of attribute a of the record r reaches ("posts.publishedAt"): one ddb_copy, added
 * the first time (an index key may need it before the copy decision takes the rest). */
static const char *held_copy(builder *B, ddb_entity *holder, const kp_rel *r, const kp_attr *a)
{
    for (size_t k = 0; k < holder->copy_count; k++)
        if (holder->copies[k].rel == r && holder->copies[k].attr == a) return holder->copies[k].name;
    ddb_copy *c = kp_arena_push(B->arena, (void **)&holder->copies, &holder->copy_count, &holder->copy_cap, sizeof *c);
    if (!c) return NULL;
    c->rel = r;
    c->attr = a;
    c->name = bprintf(B, "%s.%s", r->name ? r->name : r->target->name, a->name);
    c->is_array = r->relation->link == KP_LINK_ARRAY;
    return c->name;
}

/* A listing over an N:M (r) ordered by its targets' own attributes, which the join items
 * will copy (kp_copy_join_likely): a global index on the join items, partitioned by the
 * source's key and sorted by the copies, then the target's key (the Cassandra
 * documentation's posts_by_tag, as an index). The join items hold the copies the key needs
 * whatever the copy decision says. NULL: the order cannot be a sort key (an optional part,
 * a type whose key text does not sort as its values, a direction a part cannot invert). */
static ddb_placement *copy_ordered_index(builder *B, const kp_pattern *p, const kp_rel *r, const kp_shape *s, ddb_entity *join)
{
    const kp_relation *rel = r->relation;
    const kp_entity *t = r->target;
    if (!s || s->kind != KP_SHAPE_EACH || s->where_count || !s->order_count || t->key_count != 1) return NULL;
    if ((r->is_inverse ? rel->through_from_count : rel->through_to_count) != 1) return NULL;
    const kp_attr *held = r->is_inverse ? rel->through_from[0] : rel->through_to[0];
    if (held->type.kind != KP_T_STRING && held->type.kind != KP_T_UUID) return NULL;
    double rows = s->limit > 0 ? (double)s->limit : r->fanout && r->fanout->avg > 0 ? r->fanout->avg : 1;
    if (!kp_copy_join_likely(B->m, B->mix, p, r, s, rows, attr_bytes)) return NULL;
    ddb_format sk = {0};
    fmt_literal(B, &sk, join->prefix);
    int keyed = 0, copied = 0;
    for (size_t i = 0; i < s->order_count && !keyed; i++) {
        const kp_order_key *o = &s->order[i];
        const kp_attr *a = o->attr;
        int inverted = o->is_desc != s->order[0].is_desc;
        if (a->entity != t || a->is_optional || (inverted && !kp_ddb_invertible(a))) return NULL;
        fmt_literal(B, &sk, "#");
        if (a == t->key[0]) {
            if (inverted) return NULL;
            fmt_attr(B, &sk, held); /* the key breaks every tie: what follows never decides */
            keyed = 1;
            continue;
        }
        switch (a->type.kind) {
        case KP_T_STRING: case KP_T_INT: case KP_T_COUNTER: case KP_T_DATE: case KP_T_UUID: break;
        case KP_T_TIMESTAMP: if (a->encoding == KP_ENC_ISO) break; return NULL;
        case KP_T_DECIMAL: if (kp_ddb_invertible(a)) break; return NULL;
        default: return NULL;
        }
        fmt_attr(B, &sk, a);
        sk.segs[sk.count - 1].via = r;
        sk.segs[sk.count - 1].is_inverted = inverted;
        copied = 1;
    }
    if (!copied) return NULL;
    if (!keyed) {
        fmt_literal(B, &sk, "#");
        fmt_attr(B, &sk, held);
    }
    const kp_entity *side = r->is_inverse ? rel->to : rel->from;
    ddb_format pk = fmt_keyed(B, kp_ddb_entity_prefix(B->arena, B->m, side),
                              (const kp_attr *const *)(r->is_inverse ? rel->through_to : rel->through_from),
                              r->is_inverse ? rel->through_to_count : rel->through_from_count);
    int is_new = 0;
    ddb_placement *gp = secondary(B, join, 0, pk, sk, NULL, 0, p, &is_new);
    if (!gp) return NULL;
    for (size_t i = 0; i < sk.count; i++)
        if (sk.segs[i].via && !held_copy(B, join, r, sk.segs[i].attr)) return NULL;
    if (is_new) {
        kp_decision *x = kp_design_decide(
            B->d, kp_design_printf(B->d, "%s %s", gp->index->name, rel->through->name),
            kp_design_printf(B->d, "index on the join items sorted by the copies: %s=%s, %s=%s", gp->index->pk_attr,
                             kp_ddb_format_describe(B->arena, &pk), gp->index->sk_attr, kp_ddb_format_describe(B->arena, &sk)),
            kp_design_printf(B->d, "'%s' lists %s.%s of a %s by %s's own attributes: the join items copy them (the reads "
                                   "saved outweigh the rewrites), so one Query reads a page in the listing's order, where "
                                   "the join items' key order would make the client read and sort them all",
                             p->name, side->name, r->name ? r->name : t->name, side->name, t->name));
        kp_decision_add_pattern(B->d, x, p);
    }
    return gp;
}

/* `is_ordered`: the listing is read in its own order (not the last hop of a longer path,
 * which the client sorts whatever each hop's order: no index is made for it). */
static ddb_fetch *plan_listing(builder *B, const kp_pattern *p, const kp_rel *r, const kp_shape *s, int is_ordered)
{
    const kp_relation *rel = r->relation;
    ddb_entity *child = entity_of(B, r->target);
    if (!r->is_inverse && rel->link == KP_LINK_FOREIGN_KEY && rel->holder == rel->to) {
        /* forward 1:N (or 1:1 with the key on the child) */
        const kp_cond **eqs, **filters, *range;
        size_t eq_count, filter_count;
        if (s && s->kind == KP_SHAPE_EACH) split_where(B, s, &eqs, &eq_count, &range, &filters, &filter_count);
        else if (s) split_where(B, s, &eqs, &eq_count, &range, &filters, &filter_count);
        else { eqs = filters = NULL; eq_count = filter_count = 0; range = NULL; }
        const ddb_placement *pl = NULL;
        int forward = 1, server_ordered = 1;
        const char *prefix;
        if (child->home == rel) {
            int ok = s && s->kind == KP_SHAPE_EACH ? order_is_key(s, child, &child->placements[0].sk, &forward) : 1;
            /* the base sort key serves the order, and a range on its first attribute: no index */
            if (ok && eq_count == 0 && (!range || range_in_sk(&child->placements[0].sk, range->attr, 0))) {
                pl = &child->placements[0];
            } else if (s && is_ordered && key_orderable(s)) {
                /* rule 3: an LSI on the collection ordered as declared */
                const kp_attr *const *fk = (const kp_attr *const *)rel->fk_attrs;
                ddb_format sk = ordered_sk(B, child, eqs, eq_count, s, fk, rel->fk_count);
                int is_new = 0;
                ddb_placement *lp = secondary(B, child, 1, child->placements[0].pk, sk, NULL, 0, p, &is_new);
                if (lp) {
                    pl = lp;
                    forward = s->declared_order_count ? !s->order[0].is_desc : 1;
                    if (is_new) {
                        kp_decision *x = kp_design_decide(
                            B->d, kp_design_printf(B->d, "%s %s", lp->index->name, r->target->name),
                            kp_design_printf(B->d, "local index on the %s collection: %s=%s", r->source->name, lp->index->sk_attr,
                                             kp_ddb_format_describe(B->arena, &sk)),
                            kp_design_printf(B->d, "'%s' lists %s in an order the base sort key does not have; a local index "
                                                   "keeps it one Query on the same partition (LSIs must exist at table "
                                                   "creation and bound the item collection to 10 GB)",
                                             p->name, r->target->name));
                        kp_decision_add_pattern(B->d, x, p);
                    }
                } else {
                    pl = &child->placements[0];
                    server_ordered = 0;
                }
            } else {
                pl = &child->placements[0];
                server_ordered = 0;
            }
        } else {
            /* rule 4: the child lives elsewhere; a GSI keyed by the parent reference */
            ddb_format pk = fmt_keyed(B, kp_ddb_entity_prefix(B->arena, B->m, r->source), (const kp_attr *const *)rel->fk_attrs,
                                      rel->fk_count);
            ddb_format sk = s && is_ordered && key_orderable(s) ? ordered_sk(B, child, eqs, eq_count, s, NULL, 0)
                                                      : fmt_keyed(B, child->prefix, (const kp_attr *const *)r->target->key,
                                                                  r->target->key_count);
            int is_new = 0;
            ddb_placement *gp = secondary(B, child, 0, pk, sk, NULL, 0, p, &is_new);
            if (!gp) return NULL;
            pl = gp;
            forward = s && s->declared_order_count ? !s->order[0].is_desc : 1;
            server_ordered = !s || (is_ordered && key_orderable(s));
            if (is_new) {
                kp_decision *x = kp_design_decide(
                    B->d, kp_design_printf(B->d, "%s %s", gp->index->name, r->target->name),
                    kp_design_printf(B->d, "%s=%s, %s=%s", gp->index->pk_attr, kp_ddb_format_describe(B->arena, &pk),
                                     gp->index->sk_attr, kp_ddb_format_describe(B->arena, &sk)),
                    kp_design_printf(B->d, "%s items live in another collection, so listing them by their %s needs a global "
                                           "index keyed by the reference", r->target->name, r->source->name));
                kp_decision_add_pattern(B->d, x, p);
            }
        }
        ddb_fetch *f = new_fetch(B, (s && s->kind == KP_SHAPE_COUNT) ? DDB_COUNT : DDB_QUERY, pl, child);
        f->rel = r;
        f->shape = s;
        f->source = DDB_FROM_PARENT;
        /* the partition value comes from the parent record's referenced attributes */
        size_t n = fmt_attr_count(&pl->pk), k = 0;
        f->pk_from = kp_arena_alloc(B->arena, sizeof *f->pk_from * (n ? n : 1));
        for (size_t i = 0; i < pl->pk.count; i++) {
            if (!pl->pk.segs[i].attr) continue;
            const kp_attr *parent_attr = NULL;
            for (size_t x = 0; x < rel->fk_count; x++)
                if (rel->fk_attrs[x] == pl->pk.segs[i].attr) parent_attr = rel->ref_attrs[x];
            f->pk_from[k++] = parent_attr;
        }
        prefix = kp_ddb_format_prefix(B->arena, &pl->sk);
        f->sk_prefix = prefix;
        f->sk_eq = eqs;
        /* the equalities are key conditions where the sort key starts with them (an index
         * ordered_sk made); the base sort key, or an index keyed by the children's own key,
         * cannot hold them: they become filters */
        int eq_in_sk = pl != &child->placements[0];
        for (size_t i = 0, seen = 0; eq_in_sk && i < pl->sk.count && seen < eq_count; i++) {
            if (!pl->sk.segs[i].attr) continue;
            int is_eq = 0;
            for (size_t x = 0; x < eq_count; x++) is_eq |= eqs[x]->attr == pl->sk.segs[i].attr;
            eq_in_sk = is_eq;
            seen++;
        }
        f->sk_eq_count = eq_in_sk ? eq_count : 0;
        if (!eq_in_sk && eq_count) filters = joined_conds(B, eqs, eq_count, filters, &filter_count);
        /* a range is a key condition only where the sort key holds it right after the
         * equalities; elsewhere the server filters it */
        f->range = range && range_in_sk(&pl->sk, range->attr, eq_in_sk ? eq_count : 0) ? range : NULL;
        if (range && !f->range) filters[filter_count++] = range;
        f->range_end = take_range_end(&pl->sk, f->range, filters, &filter_count);
        f->filters = filters;
        f->filter_count = filter_count;
        f->is_forward = forward;
        f->is_server_ordered = server_ordered;
        if (s && s->kind == KP_SHAPE_EACH && server_ordered && filter_count == 0) f->limit = s->limit;
        return f;
    }
    if (r->is_inverse && rel->link == KP_LINK_FOREIGN_KEY && rel->holder == rel->to) {
        /* to-one towards the referenced parent: a key look-up */
        ddb_entity *target = entity_of(B, r->target);
        ddb_fetch *f = new_fetch(B, DDB_GET, &target->placements[0], target);
        f->rel = r;
        f->shape = s;
        f->source = DDB_FROM_PARENT;
        if (target->is_in_parent_collection && fmt_attr_count(&target->placements[0].pk) + fmt_attr_count(&target->placements[0].sk) >
                                                   r->target->key_count) {
            /* the parent's own key does not give its partition: look it up by key on a GSI */
            ddb_format pk = fmt_keyed(B, target->prefix, (const kp_attr *const *)r->target->key, r->target->key_count);
            ddb_format sk = {0};
            fmt_literal(B, &sk, target->prefix);
            int is_new = 0;
            ddb_placement *gp = secondary(B, target, 0, pk, sk, NULL, 0, p, &is_new);
            if (!gp) return NULL;
            f->kind = DDB_QUERY;
            f->placement = gp;
            f->shards = 1;
            f->sk_prefix = target->prefix;
            if (is_new) {
                kp_decision *x = kp_design_decide(
                    B->d, kp_design_printf(B->d, "%s %s", gp->index->name, r->target->name),
                    kp_design_printf(B->d, "%s=%s (inverted: find a %s by its own key)", gp->index->pk_attr,
                                     kp_ddb_format_describe(B->arena, &pk), r->target->name),
                    kp_design_printf(B->d, "%s items live in their parent's collection, so looking one up by its own key needs "
                                           "an index keyed by it", r->target->name));
                kp_decision_add_pattern(B->d, x, p);
            }
        }
        return f;
    }
    if (rel->link == KP_LINK_FOREIGN_KEY && rel->holder == rel->from) {
        /* 1:1 with the key on the "from" side: forward is a look-up by key */
        ddb_entity *target = entity_of(B, r->target);
        if (!r->is_inverse) {
            ddb_fetch *f = new_fetch(B, DDB_GET, &target->placements[0], target);
            f->rel = r;
            f->shape = s;
            f->source = DDB_FROM_PARENT;
            return f;
        }
        ddb_format pk = fmt_keyed(B, kp_ddb_entity_prefix(B->arena, B->m, r->source), (const kp_attr *const *)rel->fk_attrs,
                                  rel->fk_count);
        ddb_format sk = {0};
        fmt_literal(B, &sk, target->prefix);
        ddb_placement *gp = secondary(B, target, 0, pk, sk, NULL, 0, p, NULL);
        if (!gp) return NULL;
        ddb_fetch *f = new_fetch(B, DDB_QUERY, gp, target);
        f->rel = r;
        f->shape = s;
        f->source = DDB_FROM_PARENT;
        f->sk_prefix = target->prefix;
        return f;
    }
    if (rel->link == KP_LINK_THROUGH) {
        /* join items, then the targets by key (BatchGetItem) */
        ddb_entity *join = entity_of(B, rel->through);
        const ddb_placement *pl = &join->placements[0];
        const kp_attr *unkeyed = s && s->kind == KP_SHAPE_COUNT ? NULL : target_key_gap(entity_of(B, r->target), r->target);
        if (unkeyed && s && s->kind == KP_SHAPE_EACH && r->source->key_count == 1)
            /* the join items cannot name the targets' items: the listing reads an adjacency
             * list its targets write instead */
            return element_listing(B, p, r, s, entity_of(B, r->target));
        const ddb_placement *copy_ordered = unkeyed ? NULL : copy_ordered_index(B, p, r, s, join);
        kp_attr *const *near = r->is_inverse ? rel->through_to : rel->through_from;
        kp_attr *const *far = r->is_inverse ? rel->through_from : rel->through_to;
        size_t near_count = r->is_inverse ? rel->through_to_count : rel->through_from_count;
        size_t far_count = r->is_inverse ? rel->through_from_count : rel->through_to_count;
        if (copy_ordered) {
            pl = copy_ordered;
        } else if (r->is_inverse || !keyed_by_only(&pl->pk, near, near_count)) {
            /* the join items by this side's key: the inverse walk, or a forward one where the
             * join items have partitions of their own (the normalised design) */
            const kp_entity *near_side = r->is_inverse ? rel->to : rel->from;
            ddb_format pk = fmt_keyed(B, kp_ddb_entity_prefix(B->arena, B->m, near_side), (const kp_attr *const *)near,
                                      near_count);
            ddb_format sk = fmt_keyed(B, join->prefix, (const kp_attr *const *)far, far_count);
            int is_new = 0;
            ddb_placement *gp = secondary(B, join, 0, pk, sk, NULL, 0, p, &is_new);
            if (!gp) return NULL;
            pl = gp;
            if (is_new) {
                kp_decision *x = kp_design_decide(
                    B->d, kp_design_printf(B->d, "%s %s", gp->index->name, rel->through->name),
                    kp_design_printf(B->d, "%s on the join items: %s=%s", r->is_inverse ? "inverted index" : "index",
                                     gp->index->pk_attr, kp_ddb_format_describe(B->arena, &pk)),
                    kp_design_printf(B->d, "'%s' walks %s.%s from the %s side; the join items are indexed by that side's key",
                                     p->name, near_side->name, r->name, near_side->name));
                kp_decision_add_pattern(B->d, x, p);
            }
        }
        ddb_fetch *f = new_fetch(B, DDB_QUERY, pl, join);
        f->rel = r;
        f->shape = NULL;
        f->source = DDB_FROM_PARENT;
        f->sk_prefix = join->prefix;
        /* the partition value is the source's key, held by the join items' side of it: a
         * source read by the parameters' key need not answer first (mark_independent) */
        kp_attr *const *side = near;
        size_t side_count = near_count, n = fmt_attr_count(&pl->pk), k = 0;
        f->pk_from = kp_arena_alloc(B->arena, sizeof *f->pk_from * (n ? n : 1));
        for (size_t i = 0; f->pk_from && i < pl->pk.count; i++) {
            if (!pl->pk.segs[i].attr) continue;
            const kp_attr *from = NULL;
            for (size_t x = 0; x < side_count && x < r->source->key_count; x++)
                if (side[x] == pl->pk.segs[i].attr) from = r->source->key[x];
            f->pk_from[k++] = from;
        }
        int is_join_ordered = copy_ordered || join_orders(s, r, pl);
        if (is_join_ordered) {
            /* the join items come in the listing's order: their Query reads a page (and pages) */
            f->shape = s;
            f->is_forward = !s->order[0].is_desc;
            f->is_server_ordered = 1;
            f->limit = s->limit;
        }
        if (is_join_ordered && kp_shape_reads_only_key(s, r->target)) {
            /* the join items hold all the listing returns: no read of the targets */
            f->is_join_target = 1;
            return f;
        }
        ddb_entity *target = entity_of(B, r->target);
        if (unkeyed) {
            const ddb_placement *tp = &target->placements[0];
            kp_design_defect(B->d, p, "'%s' reads %s items from %s join items, but a %s item's key (%s = %s) needs %s.%s, "
                                   "which the join items do not hold: the plan cannot build the keys it reads; hold a "
                                   "copy of %s.%s in %s, or key %s by its own key",
                             p->name, r->target->name, rel->through->name, r->target->name, tp->index->pk_attr,
                             kp_ddb_format_describe(B->arena, &tp->pk), r->target->name, unkeyed->name, r->target->name,
                             unkeyed->name, rel->through->name, r->target->name);
        }
        ddb_fetch *g = new_fetch(B, (s && s->kind == KP_SHAPE_COUNT) ? DDB_COUNT : DDB_BATCH_GET, &target->placements[0], target);
        g->rel = r;
        g->shape = s;
        g->source = DDB_FROM_PARENT;
        g->is_server_ordered = is_join_ordered; /* BatchGetItem's answers are put in the keys' order (execute.c) */
        f->is_join_ordered = is_join_ordered;
        if (s && s->kind == KP_SHAPE_COUNT) {
            /* counting join items is enough */
            f->kind = DDB_COUNT;
            f->shape = s;
            return f;
        }
        f->base.next_hop = &g->base;
        return f;
    }
    if (rel->link == KP_LINK_ARRAY) {
        ddb_entity *target = entity_of(B, r->target);
        if (r->is_inverse) return element_listing(B, p, r, s, target);
        ddb_fetch *f = new_fetch(B, (s && s->kind == KP_SHAPE_COUNT) ? DDB_COUNT : DDB_BATCH_GET, &target->placements[0], target);
        f->rel = r;
        f->shape = s;
        f->source = DDB_FROM_PARENT;
        f->is_server_ordered = 0;
        return f;
    }
    return NULL;
}

/* A listing two 1:N hops away (the order lines of a user's orders) that the last entity's
 * own attributes can order and select: a global index on its items, partitioned
 * by the first hop's reference, which they copy over the second hop's inverse (a line holds
 * its order's userId), and sorted as the listing asks. One Query reads the page in order,
 * where a Query per intermediate record would read every item of every one of them and
 * sort in the client. NULL: the shape is not such a listing. */
static ddb_fetch *two_hop_index(builder *B, const kp_pattern *p, const kp_shape *s, kp_rel *const *hops, size_t hop_count)
{
    if (hop_count != 2 || !s || s->kind != KP_SHAPE_EACH || !key_orderable(s)) return NULL;
    for (size_t i = 0; i < 2; i++) {
        const kp_relation *rel = hops[i]->relation;
        if (hops[i]->is_inverse || rel->link != KP_LINK_FOREIGN_KEY || rel->holder != rel->to || !hops[i]->is_many) return NULL;
    }
    const kp_relation *outer = hops[0]->relation;
    const kp_rel *up = &hops[1]->relation->inverse; /* a line -> its order */
    const kp_cond **eqs, **filters, *range;
    size_t eq_count, filter_count;
    split_where(B, s, &eqs, &eq_count, &range, &filters, &filter_count);
    if (filter_count) return NULL;
    for (size_t i = 0; i < s->order_count; i++)
        if (s->order[i].attr->entity != hops[1]->target || s->order[i].attr->is_optional) return NULL;
    ddb_entity *child = entity_of(B, hops[1]->target);
    ddb_format pk = fmt_keyed(B, kp_ddb_entity_prefix(B->arena, B->m, hops[0]->source), (const kp_attr *const *)outer->fk_attrs,
                              outer->fk_count);
    for (size_t i = 0; i < pk.count; i++)
        if (pk.segs[i].attr) pk.segs[i].via = up;
    ddb_format sk = ordered_sk(B, child, eqs, eq_count, s, NULL, 0);
    if (range && !range_in_sk(&sk, range->attr, eq_count)) return NULL;
    /* only the items a literal equality selects enter the index (sparse: the shipped lines),
     * so the writes of the others do not touch it; the literal stays in the sort key */
    kp_cond *only = kp_arena_alloc(B->arena, sizeof *only * (eq_count ? eq_count : 1));
    size_t only_count = 0;
    for (size_t i = 0; only && i < eq_count; i++)
        if (eqs[i]->value.literal) only[only_count++] = *eqs[i];
    int is_new = 0;
    ddb_placement *gp = secondary(B, child, 0, pk, sk, only_count ? only : NULL, only_count, p, &is_new);
    if (!gp) return NULL;
    for (size_t i = 0; i < pk.count; i++)
        if (pk.segs[i].attr && !held_copy(B, child, up, pk.segs[i].attr)) return NULL;
    if (is_new) {
        kp_decision *x = kp_design_decide(
            B->d, kp_design_printf(B->d, "%s %s", gp->index->name, hops[1]->target->name),
            kp_design_printf(B->d, "%s=%s, %s=%s%s", gp->index->pk_attr, kp_ddb_format_describe(B->arena, &pk), gp->index->sk_attr,
                             kp_ddb_format_describe(B->arena, &sk), only_count ? " (sparse)" : ""),
            kp_design_printf(B->d, "'%s' lists the %s of a %s's %s: the %s items copy their %s's reference to the %s, so a "
                                   "global index keyed by it and sorted as the listing asks reads a page in one Query, where a "
                                   "Query per %s would read all their items and sort them in the client",
                             p->name, hops[1]->name ? hops[1]->name : hops[1]->target->name, hops[0]->source->name,
                             hops[0]->name ? hops[0]->name : hops[0]->target->name, hops[1]->target->name,
                             hops[0]->target->name, hops[0]->source->name, hops[0]->target->name));
        kp_decision_add_pattern(B->d, x, p);
    }
    /* the path as one hop from the first hop's source (its partition value: the source's
     * key, virtual_targets), its fan-out the product of both (the key range's size) */
    const kp_rel *path = kp_copy_two_hop_path(B->arena, hops[0], hops[1]);
    if (!path) return NULL;
    ddb_fetch *f = new_fetch(B, DDB_QUERY, gp, child);
    f->rel = path;
    f->shape = s;
    f->source = DDB_FROM_PARENT;
    f->pk_from = kp_arena_alloc(B->arena, sizeof *f->pk_from * (outer->fk_count ? outer->fk_count : 1));
    for (size_t i = 0; f->pk_from && i < outer->fk_count; i++) f->pk_from[i] = outer->ref_attrs[i];
    f->sk_prefix = kp_ddb_format_prefix(B->arena, &gp->sk);
    f->sk_eq = eqs;
    f->sk_eq_count = eq_count;
    f->range = range;
    f->range_end = take_range_end(&gp->sk, f->range, filters, &filter_count);
    f->filters = filters;
    f->filter_count = filter_count;
    f->is_forward = s->declared_order_count ? !s->order[0].is_desc : 1;
    f->is_server_ordered = 1;
    f->limit = s->limit;
    return f;
}

static int plan_hops(builder *B, const kp_pattern *p, ddb_fetch *parent, const kp_shape *s, kp_rel *const *hops,
                     size_t hop_count)
{
    ddb_fetch *two_hop = two_hop_index(B, p, s, hops, hop_count);
    if (two_hop) {
        add_child(B, parent, two_hop);
        return plan_shape_children(B, p, two_hop, s, two_hop->entity);
    }
    ddb_fetch *first = NULL, *last = NULL;
    for (size_t i = 0; i < hop_count; i++) {
        const kp_shape *for_shape = i + 1 == hop_count ? s : NULL;
        ddb_fetch *f = plan_listing(B, p, hops[i], for_shape, hop_count == 1);
        if (!f) return kp_error_set(B->err, KP_ERR_INTERNAL, NULL, 0, 0,
                                    "no DynamoDB access path for relation '%s' (too many indexes?)", hops[i]->name ? hops[i]->name : "?");
        if (i + 1 < hop_count) f->shape = NULL;
        if (hop_count > 1) f->is_server_ordered = 0, f->limit = 0;
        if (!first) first = f;
        else {
            ddb_fetch *tail = last;
            while (kp_ddb_next_hop(tail)) tail = kp_ddb_next_hop(tail);
            tail->base.next_hop = &f->base;
        }
        last = f;
    }
    add_child(B, parent, first);
    ddb_fetch *end = last;
    while (kp_ddb_next_hop(end)) end = kp_ddb_next_hop(end);
    if (s && (s->kind == KP_SHAPE_EACH || s->kind == KP_SHAPE_ONE))
        return plan_shape_children(B, p, end, s, end->entity);
    return 0;
}

/* Does parent already follow this to-one path (a leaf's hops), so another leaf on it reads
 * nothing more? */
static int follows_path(const ddb_fetch *parent, kp_rel *const *path, size_t n)
{
    for (size_t i = 0; i < parent->base.child_count; i++) {
        const ddb_fetch *f = kp_ddb_child(parent, i);
        size_t k = 0;
        for (; f && k < n && !f->shape && f->rel == path[k]; f = kp_ddb_next_hop(f)) k++;
        if (k == n && !f) return 1;
    }
    return 0;
}

/* Plans what a shape node needs below a fetch whose records are of entity ctx. */
static int plan_shape_children(builder *B, const kp_pattern *p, ddb_fetch *parent, const kp_shape *s, const ddb_entity *ctx)
{
    for (size_t i = 0; i < s->member_count; i++) {
        const kp_shape *m = s->members[i];
        if (m->kind == KP_SHAPE_ATTR && m->path_len > 0) {
            if (kp_copy_on(ctx->entity, m->path, m->path_len, m->attr)) continue; /* a denormalised copy answers it */
            if (follows_path(parent, m->path, m->path_len)) continue;      /* read once for every leaf on it */
            if (plan_hops(B, p, parent, NULL, m->path, m->path_len)) return -1;
        } else if (m->kind == KP_SHAPE_EACH || m->kind == KP_SHAPE_ONE) {
            if (plan_hops(B, p, parent, m, m->hops, m->hop_count)) return -1;
        } else if (m->kind == KP_SHAPE_COUNT) {
            /* a derived count on the record, or the listing beside it, answers it without a request */
            int derived = m->counted_by != NULL;
            for (size_t a = 0; a < ctx->entity->attr_count; a++) {
                const kp_derived *d = ctx->entity->attrs[a]->derived;
                if (d && d->fn == KP_AGG_COUNT && d->path_len == m->hop_count && d->where_count == m->where_count &&
                    memcmp(d->path, m->hops, sizeof *d->path * d->path_len) == 0)
                    derived = 1;
            }
            if (!derived && plan_hops(B, p, parent, m, m->hops, m->hop_count)) return -1;
        } else if (m->kind == KP_SHAPE_OBJECT) {
            if (plan_shape_children(B, p, parent, m, ctx)) return -1;
        }
    }
    if (s->kind == KP_SHAPE_EACH && s->value && s->value->kind == KP_SHAPE_ATTR && s->value->path_len > 0 &&
        !kp_copy_on(ctx->entity, s->value->path, s->value->path_len, s->value->attr))
        return plan_hops(B, p, parent, NULL, s->value->path, s->value->path_len);
    /* where conditions through to-one paths need the related record too */
    for (size_t i = 0; i < s->where_count; i++)
        if (s->where[i].path_len > 0 && !kp_copy_on(ctx->entity, s->where[i].path, s->where[i].path_len, s->where[i].attr))
            kp_design_note(B->d, "'%s' filters %s by %s through a relation; the condition is applied after reading",
                           p->name, ctx->entity->name, s->where[i].attr->name);
    return 0;
}

/* Rule 6: shards for a partition key that takes a skewed share of the load. */
static int shards_for(builder *B, const kp_pattern *p, const ddb_entity *e, double share_items, double read_share,
                      double bytes_per_read)
{
    for (size_t i = 0; i < B->m->hint_count; i++) {
        const kp_hint *h = &B->m->hints[i];
        if (strcmp(h->database, "dynamodb") == 0 && strcmp(h->kind, "shards") == 0 && h->pattern == p) return (int)h->number;
    }
    double reads = pattern_rate(B, p) * read_share * read_units(bytes_per_read);
    double writes = 0;
    size_t ei = e->entity->index;
    for (size_t k = 0; k < B->step_count_of[ei]; k++) {
        const struct step_ref *r = &B->steps_of[ei][k];
        if (r->step->op != KP_WRITE_DELETE)
            writes += kp_write_rps(r->write, B->mix) * r->step->rows * share_items * write_units(item_bytes(B, e->entity));
    }
    int n = 1;
    if (reads > 3000) n = (int)ceil(reads / 3000 * 2);
    if (writes > 1000 && (int)ceil(writes / 1000 * 2) > n) n = (int)ceil(writes / 1000 * 2);
    return n > 100 ? 100 : n;
}

static int plan_root(builder *B, const kp_pattern *p, ddb_fetch **out)
{
    ddb_entity *e = entity_of(B, p->root);
    const ddb_placement *base = &e->placements[0];
    ddb_fetch *f = NULL;
    if (!p->is_root_set) {
        const kp_cond *unique = NULL;
        int by_key = 1;
        for (size_t k = 0; k < p->root->key_count; k++) by_key &= eq_cond(p->where, p->where_count, p->root->key[k]) != NULL;
        if (!by_key)
            for (size_t i = 0; i < p->where_count; i++)
                if (p->where[i].op == KP_OP_EQ && p->where[i].path_len == 0 && p->where[i].attr->is_unique) unique = &p->where[i];
        if (by_key && params_cover(&base->pk, p) && params_cover(&base->sk, p)) {
            f = new_fetch(B, DDB_GET, base, e);
            bind_params(B, f, &base->pk, p);
        } else {
            /* a look-up by a unique attribute, or by a key the base partition does not hold */
            const kp_attr *const *attrs = unique ? (const kp_attr *const *)&unique->attr : (const kp_attr *const *)p->root->key;
            size_t n = unique ? 1 : p->root->key_count;
            ddb_format pk = {0};
            char label[300];
            kp_snprintf(label, sizeof label, "%s%s%s", e->prefix, unique ? "#" : "", unique ? unique->attr->name : "");
            for (char *c = label; *c; c++) if (*c >= 'a' && *c <= 'z') *c = (char)(*c - 'a' + 'A');
            pk = fmt_keyed(B, label, attrs, n);
            ddb_format sk = {0};
            fmt_literal(B, &sk, e->prefix);
            int is_new = 0;
            ddb_placement *gp = secondary(B, e, 0, pk, sk, NULL, 0, p, &is_new);
            if (!gp) return kp_error_set(B->err, KP_ERR_INTERNAL, NULL, 0, 0, "out of index slots");
            f = new_fetch(B, DDB_QUERY, gp, e);
            f->sk_prefix = e->prefix;
            bind_params(B, f, &gp->pk, p);
            if (is_new) {
                kp_decision *x = kp_design_decide(
                    B->d, kp_design_printf(B->d, "%s %s", gp->index->name, p->root->name),
                    kp_design_printf(B->d, "%s=%s", gp->index->pk_attr, kp_ddb_format_describe(B->arena, &pk)),
                    unique ? kp_design_printf(B->d, "'%s' finds a %s by its unique %s: a global index keyed by it makes that "
                                                    "one Query (writes keep it unique with a condition on a uniqueness item)",
                                              p->name, p->root->name, unique->attr->name)
                           : kp_design_printf(B->d, "%s items live in a parent's collection; '%s' knows only the %s's own key",
                                              p->root->name, p->name, p->root->name));
                kp_decision_add_pattern(B->d, x, p);
            }
        }
        f->shape = NULL;
        *out = f;
        /* a bare array (or $one / $count) at the top is a listing of the root itself */
        if (p->returns->kind == KP_SHAPE_EACH || p->returns->kind == KP_SHAPE_ONE || p->returns->kind == KP_SHAPE_COUNT)
            return plan_hops(B, p, f, p->returns, p->returns->hops, p->returns->hop_count);
        return plan_shape_children(B, p, f, p->returns, e);
    }
    /* a root set: rule 4/5/6 — a GSI keyed by the equalities, sorted as declared */
    const kp_shape *each = p->returns->kind == KP_SHAPE_EACH ? p->returns : NULL;
    for (size_t i = 0; !each && i < p->returns->member_count; i++)
        if (p->returns->members[i]->kind == KP_SHAPE_EACH && p->returns->members[i]->is_root_set) each = p->returns->members[i];
    const kp_cond **eqs = kp_arena_alloc(B->arena, sizeof *eqs * (p->where_count + 1));
    const kp_cond **literal_eqs = kp_arena_alloc(B->arena, sizeof *literal_eqs * (p->where_count + 1));
    const kp_cond **filters = kp_arena_alloc(B->arena, sizeof *filters * (p->where_count + 1));
    const kp_cond **path_filters = kp_arena_alloc(B->arena, sizeof *path_filters * (p->where_count + 1));
    size_t path_filter_count = 0;
    kp_cond *sparse = kp_arena_alloc(B->arena, sizeof *sparse * (p->where_count + 1));
    size_t eq_count = 0, literal_count = 0, filter_count = 0, sparse_count = 0;
    const kp_cond *range = NULL;
    for (size_t i = 0; i < p->where_count; i++) {
        const kp_cond *c = &p->where[i];
        int optional = c->value.param && c->value.param->is_optional;
        const kp_attr *copy = c->path_len ? kp_copy_on(p->root, c->path, c->path_len, c->attr) : NULL;
        if (c->path_len && !copy) {
            kp_design_note(B->d, "'%s' filters %s by %s.%s, a value of another entity: every %s the index returns is read "
                                 "with its %s and filtered in the client; a copy (copy_of) of %s.%s on %s would make it "
                                 "one Query",
                           p->name, p->root->name, c->path[0]->name, c->attr->name, p->root->name, c->path[0]->name,
                           c->path[0]->name, c->attr->name, p->root->name);
            path_filters[path_filter_count++] = c;
            continue;
        }
        if (c->op == KP_OP_EQ && !optional && c->value.literal) {
            literal_eqs[literal_count++] = c;
            sparse[sparse_count++] = *c;
        } else if (c->op == KP_OP_EQ && !optional && !c->path_len) {
            eqs[eq_count++] = c;
        } else if (!range && !optional && each && each->declared_order_count && each->order[0].attr == c->attr && !c->path_len) {
            range = c;
        } else {
            filters[filter_count++] = c;
        }
    }
    /* the index partition: <ENTITY>[#<literal values>]#<param equalities> */
    char label[512];
    kp_snprintf(label, sizeof label, "%s", e->prefix);
    for (size_t i = 0; i < literal_count; i++) {
        /* an equality needs no order-preserving encoding: a number or a truth value reads as
         * the condition it stands for (ITEM#bidCount=0, not ITEM#09223372036854775808);
         * text and enum values are their own names (PROJECT#ACTIVE) */
        const cJSON *lit = literal_eqs[i]->value.literal;
        char part[256];
        if (cJSON_IsNumber(lit) || cJSON_IsBool(lit) || cJSON_IsRaw(lit)) {
            char *text = cJSON_PrintUnformatted(lit);
            kp_snprintf(label + strlen(label), sizeof label - strlen(label), "#%s=%s", literal_eqs[i]->attr->name, text ? text : "?");
            cJSON_free(text);
        } else if (kp_ddb_key_text(literal_eqs[i]->attr, 0, lit, part, sizeof part) == 0) {
            kp_snprintf(label + strlen(label), sizeof label - strlen(label), "#%s", part);
        }
    }
    const kp_attr *eq_attrs[32] = {0};
    for (size_t i = 0; i < eq_count && i < 32; i++) eq_attrs[i] = eqs[i]->attr;
    ddb_format pk = fmt_keyed(B, label, eq_attrs, eq_count < 32 ? eq_count : 32);
    int client_sorted = each && !key_orderable(each);
    ddb_format sk = ordered_sk(B, e, NULL, 0, client_sorted ? NULL : each, eq_attrs, eq_count);
    double rows = p->root->count;
    for (size_t i = 0; i < literal_count; i++)
        if (literal_eqs[i]->attr->type.kind == KP_T_ENUM) rows /= (double)literal_eqs[i]->attr->type.enum_count;
    int is_new = 0;
    ddb_placement *gp = secondary(B, e, 0, pk, sk, sparse_count ? sparse : NULL, sparse_count, p, &is_new);
    if (!gp) return kp_error_set(B->err, KP_ERR_INTERNAL, NULL, 0, 0, "out of index slots");
    double items = each && each->expect.is_given ? each->expect.avg : rows;
    if (each && each->limit > 0 && items > (double)each->limit) items = (double)each->limit;
    if (each && each->limit_param && each->limit_param->default_value && items > each->limit_param->default_value->valuedouble)
        items = each->limit_param->default_value->valuedouble;
    /* the hottest partition key's share: one value of the equalities under the pattern's
     * skew, or all of it when the key is a constant */
    double partitions = eq_count ? (rows / (items > 1 ? items : 1)) : 1;
    double hot = eq_count ? zipf_top_share(partitions, kp_pattern_skew(B->m, p)) : 1.0;
    double written_share = eq_count ? hot : (literal_count ? 1.0 / (double)(literal_count + 1) : 1.0);
    int shards = shards_for(B, p, e, written_share, hot, items * item_bytes(B, p->root));
    if (is_new || gp->shards < shards) gp->shards = shards;
    if (is_new) {
        kp_decision *x = kp_design_decide(
            B->d, kp_design_printf(B->d, "%s %s", gp->index->name, p->root->name),
            kp_design_printf(B->d, "%s=%s%s, %s=%s%s", gp->index->pk_attr, kp_ddb_format_describe(B->arena, &pk),
                             gp->shards > 1 ? kp_design_printf(B->d, "#<0..%d>", gp->shards - 1) : "", gp->index->sk_attr,
                             kp_ddb_format_describe(B->arena, &sk), sparse_count ? " (sparse)" : ""),
            kp_design_printf(B->d, "'%s' lists %s across partitions%s; a global index %s serves it as one Query%s",
                             p->name, p->root->name, sparse_count ? " filtered by a literal" : "",
                             sparse_count ? "that only matching items enter (sparse), its key naming the condition they meet,"
                                          : "keyed by its equalities",
                             gp->shards > 1 ? kp_design_printf(B->d, "; its key is write-sharded into %d suffixes (the load on one "
                                                                      "partition key would pass the per-partition limits), "
                                                                      "so reads scatter-gather %d Queries in parallel",
                                                               gp->shards, gp->shards)
                                            : ""));
        kp_decision_add_pattern(B->d, x, p);
    }
    f = new_fetch(B, DDB_QUERY, gp, e);
    f->shape = each;
    f->shards = gp->shards;
    f->expected = items;
    f->whole = rows;
    bind_params(B, f, &gp->pk, p);
    f->sk_prefix = e->prefix;
    f->range = range;
    /* a sharded read continues each shard after its last key alone (request.c), which
     * would drop the far bound: there it stays a filter */
    if (!client_sorted && gp->shards <= 1) f->range_end = take_range_end(&sk, range, filters, &filter_count);
    f->filters = filters;
    f->filter_count = filter_count;
    f->is_forward = each && each->declared_order_count ? !each->order[0].is_desc : 1;
    f->is_server_ordered = !client_sorted; /* per shard; shards are merged in the client */
    f->limit = each && filter_count == 0 && !client_sorted ? each->limit : 0;
    if (client_sorted && range) {
        /* the index is not sorted on the range attribute: the range is a filter */
        filters[filter_count++] = range;
        f->filter_count = filter_count;
        f->range = NULL;
    }
    f->is_paged = each && each->page != KP_PAGE_NONE;
    *out = f;
    if (path_filter_count) {
        /* read every candidate and the records its conditions name; filter, sort and page in the client */
        f->is_client_filtered = 1;
        f->limit = 0;
        for (size_t i = 0; i < path_filter_count; i++)
            if (plan_hops(B, p, f, NULL, path_filters[i]->path, path_filters[i]->path_len)) return -1;
    }
    if (each) return plan_shape_children(B, p, f, each, e);
    return 0;
}

/* Rule 2: a pinned root fetched with GetItem whose first listing is its own collection
 * becomes one Query returning the header and the children. */
static void merge_into(builder *B, const kp_pattern *p, ddb_fetch *root, size_t i, const char *sentinel);

/* Records of entity e written per second: every write step that inserts, updates or deletes
 * some, times the records each writes. */
static double entity_write_rate(builder *B, const kp_entity *e)
{
    double rate = 0;
    for (size_t k = 0; k < e->write_step_count; k++) {
        double n = kp_write_step_records(e->write_steps[k]);
        rate += kp_write_rps(e->step_writes[k], B->mix) * (n > 0 ? n : 1);
    }
    return rate;
}

/* Rule 2's riders: a record the header's children read by the header's own key — a 1:1 whose
 * other side holds the reference (an order's shipment) — enters the header's collection on
 * the GSI too, its sort key the header's sentinel followed by its prefix
 * ("ORDERITEM!SHIPMENT"), which sorts between the header and the first child in the read's
 * direction: the one Query returns it beside the header, instead of a request of its own
 * after it. Taken when the requests saved outweigh the index entries its writes add; not on
 * a paged listing (a later page starts past the header, and would read the rider apart). */
static void take_riders(builder *B, const kp_pattern *p, ddb_fetch *root, const ddb_placement *hp, const char *sentinel)
{
    if (root->is_paged || root->shards > 1) return;
    const kp_entity *parent = root->header->entity;
    for (size_t i = 0; i < root->base.child_count && root->rider_count < 8; i++) {
        ddb_fetch *c = kp_ddb_child(root, i);
        const kp_rel *r = c->rel;
        if ((c->kind != DDB_GET && c->kind != DDB_QUERY) || c->base.child_count || kp_ddb_next_hop(c) || c->is_scan) continue;
        if (!r || r->source != parent || r->is_many || (c->shape && (c->shape->kind != KP_SHAPE_ONE || c->shape->hop_count != 1)))
            continue;
        const kp_relation *rel = r->relation;
        ddb_entity *rider = (ddb_entity *)c->entity;
        if (rel->link != KP_LINK_FOREIGN_KEY || rel->holder != rider->entity || rel->referenced != parent ||
            rel->fk_count != parent->key_count || rider == root->entity || rider->entity == parent)
            continue;
        int taken = 0;
        for (size_t k = 0; k < rider->placement_count; k++) taken |= rider->placements[k].index == hp->index;
        if (taken) continue;
        double saved = pattern_rate(B, p), cost = entity_write_rate(B, rider->entity);
        int is_taken = saved > cost;
        ddb_placement *cp = is_taken ? add_placement(B, rider) : NULL;
        if (cp) {
            cp->index = hp->index;
            fmt_literal(B, &cp->pk, kp_ddb_format_prefix(B->arena, &hp->pk));
            for (size_t k = 0; k < rel->fk_count; k++) {
                if (k) fmt_literal(B, &cp->pk, "#");
                fmt_attr(B, &cp->pk, rel->fk_attrs[k]);
            }
            cp->sentinel_sk = bprintf(B, "%s%s", sentinel, rider->prefix);
            fmt_literal(B, &cp->sk, cp->sentinel_sk);
            cp->cause = p;
            c->kind = DDB_RIDE;
            c->placement = cp;
            c->ride_sk = cp->sentinel_sk;
            root->rider_count++;
        }
        kp_decision *x = kp_design_decide(
            B->d, kp_design_printf(B->d, "%s %s rider", hp->index->name, rider->entity->name),
            cp ? kp_design_printf(B->d, "the %s item also enters %s in its %s's collection: %s=%s, %s=\"%s\"", rider->entity->name,
                                  hp->index->name, parent->name, hp->index->pk_attr, kp_ddb_format_describe(B->arena, &cp->pk),
                                  hp->index->sk_attr, cp->sentinel_sk)
               : kp_design_printf(B->d, "the %s item is read by key after the %s header", rider->entity->name, parent->name),
            cp ? kp_design_printf(B->d, "'%s' returns the %s's %s: sorting just after the header, it comes back from the Query "
                                        "that returns the header and its %s, one request fewer (%.1f/s) against one more index "
                                        "entry per %s write (%.1f/s)",
                                  p->name, parent->name, r->name, root->rel->name, saved, rider->entity->name, cost)
               : kp_design_printf(B->d, "'%s' returns the %s's %s: placed in the header's collection on %s it would come back "
                                        "with the header (%.1f requests/s saved), but every %s write would write one more index "
                                        "entry (%.1f/s)",
                                  p->name, parent->name, r->name, hp->index->name, saved, rider->entity->name, cost));
        kp_decision_add_pattern(B->d, x, p);
    }
}

/* Rule 2 on a global index: a root found by a lookup on a GSI (its own key, or a unique
 * attribute) whose first listing is its own 1:N children: the children also enter that
 * GSI under the same partition value, and the root's entry becomes their header — the
 * inverted index of seed 001, one Query for "an order with its items". */
static void merge_header_on_gsi(builder *B, const kp_pattern *p, ddb_fetch *root)
{
    if (root->kind != DDB_QUERY || root->shape || root->placement->index->kind != DDB_GSI) return;
    ddb_placement *rp = (ddb_placement *)root->placement;
    ddb_entity *parent = (ddb_entity *)root->entity;
    /* only a lookup by the parent's own key: the children's reference is that key */
    if (fmt_attr_count(&rp->pk) != parent->entity->key_count) return;
    for (size_t k = 0; k < rp->pk.count; k++)
        if (rp->pk.segs[k].attr && rp->pk.segs[k].attr->key_index < 0) return;
    for (size_t i = 0; i < root->base.child_count; i++) {
        ddb_fetch *c = kp_ddb_child(root, i);
        if (c->kind != DDB_QUERY || !c->shape || c->shape->kind != KP_SHAPE_EACH || kp_ddb_next_hop(c) || !c->rel) continue;
        if (c->sk_eq_count || c->range || c->filter_count) continue;
        const kp_relation *rel = c->rel->relation;
        if (c->rel->is_inverse || rel->link != KP_LINK_FOREIGN_KEY || rel->from != parent->entity || rel->holder != rel->to) continue;
        ddb_entity *child = (ddb_entity *)c->entity;
        int taken = 0;
        for (size_t k = 0; k < child->placement_count; k++) taken |= child->placements[k].index == rp->index;
        if (taken || !c->is_server_ordered) continue;
        /* the child's entry: the same partition value, built from its reference */
        ddb_format pk = {0};
        fmt_literal(B, &pk, kp_ddb_format_prefix(B->arena, &rp->pk));
        for (size_t k = 0; k < rel->fk_count; k++) {
            if (k) fmt_literal(B, &pk, "#");
            fmt_attr(B, &pk, rel->fk_attrs[k]);
        }
        ddb_placement *cp = add_placement(B, child);
        if (!cp) continue;
        cp->index = rp->index;
        cp->pk = pk;
        cp->sk = c->placement->sk;
        cp->cause = p;
        const char *sentinel = bprintf(B, "%s%s", child->prefix, c->is_forward ? "!" : "$");
        rp->sk = (ddb_format){0};
        fmt_literal(B, &rp->sk, sentinel);
        rp->sentinel_sk = sentinel;
        c->placement = cp;
        merge_into(B, p, root, i, sentinel);
        take_riders(B, p, root, rp, sentinel);
        return;
    }
}

static void merge_header(builder *B, const kp_pattern *p, ddb_fetch *root)
{
    if (root->kind == DDB_QUERY) { merge_header_on_gsi(B, p, root); return; }
    if (root->kind != DDB_GET || root->placement != &root->entity->placements[0] || root->entity->is_in_parent_collection) return;
    for (size_t i = 0; i < root->base.child_count; i++) {
        ddb_fetch *c = kp_ddb_child(root, i);
        if (c->kind != DDB_QUERY || !c->shape || c->shape->kind != KP_SHAPE_EACH || kp_ddb_next_hop(c)) continue;
        /* the header range cannot also carry the listing's own key conditions, except a
         * bound on the far side of the header (the newest since X, read newest first) */
        int range_fits = !c->range || (!c->is_forward && (c->range->op == KP_OP_GE || c->range->op == KP_OP_GT)) ||
                         (c->is_forward && (c->range->op == KP_OP_LE || c->range->op == KP_OP_LT));
        if (c->sk_eq_count || !range_fits || c->range_end || c->filter_count) continue;
        if (c->entity->home == NULL || c->entity->home->from != root->entity->entity || c->rel->relation != c->entity->home) continue;
        /* the header must sort first in the read's direction, on the index the children use */
        ddb_entity *parent = (ddb_entity *)root->entity;
        const char *sentinel = bprintf(B, "%s%s", c->entity->prefix, c->is_forward ? "!" : "$");
        if (c->placement->index->kind == DDB_BASE) {
            /* the parent's base SK becomes the sentinel, if no other read claimed it */
            ddb_placement *base = &parent->placements[0];
            if (base->sentinel_sk && strcmp(base->sentinel_sk, sentinel) != 0) continue;
            base->sentinel_sk = sentinel;
            base->sk = (ddb_format){0};
            fmt_literal(B, &base->sk, sentinel);
        } else {
            /* the parent item also carries the LSI's sort key, set to the sentinel */
            int found = 0;
            for (size_t k = 1; k < parent->placement_count; k++)
                if (parent->placements[k].index == c->placement->index) {
                    found = 1;
                    if (!parent->placements[k].sentinel_sk || strcmp(parent->placements[k].sentinel_sk, sentinel)) found = 2;
                }
            if (found == 2) continue;
            if (!found) {
                ddb_placement *hp = add_placement(B, parent);
                if (!hp) continue;
                hp->index = c->placement->index;
                hp->pk = parent->placements[0].pk;
                hp->sentinel_sk = sentinel;
                hp->sk = (ddb_format){0};
                fmt_literal(B, &hp->sk, sentinel);
                hp->cause = p;
            }
        }
        merge_into(B, p, root, i, sentinel);
        return;
    }
}

/* The root fetch becomes its child listing's Query, which also returns the header. */
static void merge_into(builder *B, const kp_pattern *p, ddb_fetch *root, size_t i, const char *sentinel)
{
    ddb_fetch *c = kp_ddb_child(root, i);
    ddb_entity *parent = (ddb_entity *)root->entity;
    {
        c->header = parent;
        c->header_sk = sentinel;
        c->source = DDB_FROM_PARAMS;
        c->pk_params = root->pk_params;
        /* the root fetch is now this Query: move the other children under it */
        root->kind = DDB_QUERY;
        root->placement = c->placement;
        root->header = parent;
        root->header_sk = sentinel;
        root->rel = c->rel;
        root->shape = c->shape;
        root->sk_prefix = c->sk_prefix;
        root->range = c->range;
        root->range_end = c->range_end;
        root->sk_eq = c->sk_eq;
        root->sk_eq_count = c->sk_eq_count;
        root->filters = c->filters;
        root->filter_count = c->filter_count;
        root->is_forward = c->is_forward;
        root->is_server_ordered = c->is_server_ordered;
        root->limit = c->limit;
        root->entity = c->entity;
        root->is_paged = c->shape == p->paged;
        kp_fetch **rest = kp_arena_alloc(B->arena, sizeof *rest * (root->base.child_count + c->base.child_count + 1));
        if (!rest) { B->is_out_of_memory = 1; return; }
        size_t n = 0;
        for (size_t k = 0; k < root->base.child_count; k++)
            if (k != i) rest[n++] = root->base.children[k];
        for (size_t k = 0; k < c->base.child_count; k++) rest[n++] = c->base.children[k];
        root->base.children = rest;
        root->base.child_count = n;
        root->base.child_cap = n;
        kp_decision *x = kp_design_decide(
            B->d, kp_design_printf(B->d, "%s header", parent->entity->name),
            kp_design_printf(B->d, "the %s item sorts at the head of its %s (%s=\"%s\")", parent->entity->name,
                             c->rel->name, c->placement->index->sk_attr, sentinel),
            kp_design_printf(B->d, "'%s' returns the %s with its %s; placing its item first in the %s read makes the "
                                   "header and the first page one Query instead of a GetItem and a Query",
                             p->name, parent->entity->name, c->rel->name, c->is_forward ? "ascending" : "descending"));
        kp_decision_add_pattern(B->d, x, p);
    }
}

/* ---- neutral plans from fetch trees ------------------------------------------------------ */

static const char *index_name(const ddb_fetch *f)
{
    return f->placement && f->placement->index->kind != DDB_BASE ? f->placement->index->name : NULL;
}

/* A request's expression as a reader reads it: each #name its attribute, each :value its
 * value — a literal in quotes, a key made of placeholders (AUTHOR#<authorId>) as it is. */
static void render_expression(const char *e, const cJSON *names, const cJSON *values, char *buf, size_t size)
{
    size_t n = strlen(buf);
    while (*e && n + 1 < size) {
        if ((e[0] == '#' && e[1] == 'n') || (e[0] == ':' && e[1] == 'v')) {
            char key[32];
            size_t k = 0;
            key[k++] = *e++;
            while ((*e == 'n' || *e == 'v' || (*e >= '0' && *e <= '9')) && k + 1 < sizeof key) key[k++] = *e++;
            key[k] = '\0';
            const cJSON *v = cJSON_GetObjectItemCaseSensitive(key[0] == '#' ? names : values, key);
            const char *text = "?";
            int quote = 0;
            if (key[0] == '#' && cJSON_IsString(v)) text = v->valuestring;
            else if (v && v->child && cJSON_IsString(v->child)) {
                text = v->child->valuestring;
                quote = strcmp(v->child->string, "S") == 0 && !strchr(text, '<');
            }
            n += (size_t)kp_snprintf(buf + n, size - n, quote ? "\"%s\"" : "%s", text);
            if (n >= size) n = size - 1;
            continue;
        }
        buf[n++] = *e++;
        buf[n] = '\0';
    }
}

static void describe_fetch(builder *B, const kp_pattern *p, const ddb_fetch *f, char *buf, size_t size)
{
    if (f->kind == DDB_QUERY && f->placement && !f->is_scan) {
        /* the key condition the executor sends, built by the same function (request.c), with
         * the parameters as placeholders: what advise prints is what runs */
        kp_error ignored;
        ddb_request_ctx ctx = {.pattern = p, .params = NULL, .table = B->L->table, .err = &ignored};
        char pk[1024];
        kp_snprintf(pk, sizeof pk, "%s%s", kp_ddb_format_describe(B->arena, &f->placement->pk), f->shards > 1 ? "#<shard>" : "");
        /* the request's nodes in a scratch arena, dropped at once (no cJSON_Delete) */
        kp_arena scratch = {0};
        kp_arena *outer = kp_json_arena_swap(&scratch);
        cJSON *req = kp_ddb_query_request(&ctx, f, pk, f->header != NULL, 0);
        kp_json_arena_swap(outer);
        const cJSON *key = cJSON_GetObjectItemCaseSensitive(req, "KeyConditionExpression");
        buf[0] = '\0';
        if (cJSON_IsString(key)) {
            const cJSON *names = cJSON_GetObjectItemCaseSensitive(req, "ExpressionAttributeNames");
            const cJSON *values = cJSON_GetObjectItemCaseSensitive(req, "ExpressionAttributeValues");
            render_expression(key->valuestring, names, values, buf, size);
            const cJSON *filter = cJSON_GetObjectItemCaseSensitive(req, "FilterExpression");
            if (cJSON_IsString(filter)) {
                size_t n = strlen(buf);
                kp_snprintf(buf + n, size - n, " FILTER ");
                render_expression(filter->valuestring, names, values, buf, size);
            }
        }
        kp_arena_free(&scratch);
        if (buf[0]) return;
    }
    const ddb_placement *pl = f->placement;
    const char *pk_attr = pl ? pl->index->pk_attr : "PK";
    const char *sk_attr = pl ? pl->index->sk_attr : "SK";
    const char *pk = pl ? kp_ddb_format_describe(B->arena, &pl->pk) : "?";
    if (f->kind == DDB_GET) {
        kp_snprintf(buf, size, "%s = %s AND %s = %s", pk_attr, pk, sk_attr, kp_ddb_format_describe(B->arena, &pl->sk));
    } else if (f->kind == DDB_BATCH_GET) {
        kp_snprintf(buf, size, "keys %s = %s, %s = %s for each reference", pk_attr, pk, sk_attr,
                 kp_ddb_format_describe(B->arena, &pl->sk));
    } else {
        char sk[400];
        if (f->header) kp_snprintf(sk, sizeof sk, "%s BETWEEN \"%s!\" AND \"%s$\"", sk_attr, f->entity->prefix, f->entity->prefix);
        else if (f->range_end) kp_snprintf(sk, sizeof sk, "%s BETWEEN (%s range)", sk_attr, f->range->attr->name);
        else if (f->range) kp_snprintf(sk, sizeof sk, "%s %s (%s range)", sk_attr, kp_op_name(f->range->op), f->range->attr->name);
        else kp_snprintf(sk, sizeof sk, "begins_with(%s, \"%s\")", sk_attr, f->sk_prefix ? f->sk_prefix : "");
        kp_snprintf(buf, size, "%s = %s%s AND %s", pk_attr, pk, f->shards > 1 ? "#<shard>" : "", sk);
        if (f->filter_count) {
            size_t len = strlen(buf);
            kp_snprintf(buf + len, size - len, " FILTER ");
            buf[strlen(buf)] = '\0';
            char conds[300] = "";
            describe_conditions(conds, sizeof conds, f->filters, f->filter_count);
            kp_snprintf(buf + strlen(buf), size - strlen(buf), "%s", conds);
        }
    }
    (void)p;
}

/* The claims of one fetch, for the shared walker (backends/fetch.c): `in` holds its expected
 * inputs and the most it can get (the model's maxima along the way), and its round trip. The
 * operation's expected figures come from the first, its bounds (what verify holds every page
 * to) from the second. */
typedef struct opctx {
    builder *B;
    const kp_pattern *p;
    kp_plan *plan;
} opctx;

/* ", its Shipment" for the riders a header Query returns, else "". */
static const char *riders_named(builder *B, const ddb_fetch *f)
{
    const char *names = "";
    for (size_t i = 0; i < f->base.child_count; i++) {
        const ddb_fetch *c = kp_ddb_child(f, i);
        if (c->kind == DDB_RIDE) names = bprintf(B, "%s, its %s", names, c->entity->entity->name);
    }
    return names;
}

static void price_fetch(void *ctx, const kp_fetch *node, const kp_fetch_load *in, kp_fetch_load *out)
{
    const opctx *O = ctx;
    builder *B = O->B;
    const kp_pattern *p = O->p;
    kp_plan *plan = O->plan;
    const ddb_fetch *f = (const ddb_fetch *)node;
    double parents = in->expected, parents_max = in->max;
    int step = in->step;
    static const char *const ops[] = {"GetItem", "Query", "BatchGetItem", "Query (COUNT)"};
    /* the parent's items hold it, or the header Query returned it: no request (out: one per input) */
    if (f->kind == DDB_COPY || f->kind == DDB_RIDE) return;
    /* a key look-up for several parents is one BatchGetItem per 100 keys (execute.c) */
    int batched = f->kind == DDB_GET && parents > 1;
    kp_operation *o = kp_plan_add_op(B->d, plan, ops[batched ? DDB_BATCH_GET : f->kind], B->L->table);
    const char *idx = index_name(f);
    o->index = idx ? kp_design_printf(B->d, "%s", idx) : NULL;
    char cond[1024];
    describe_fetch(B, p, f, cond, sizeof cond);
    o->condition = kp_design_printf(B->d, "%s", cond);
    o->waits_for_previous = step > 1 && !f->base.is_independent;
    o->step = step;
    /* a request count that follows the data (one per parent, per reference) is an estimate */
    if (parents != 1 || f->kind == DDB_BATCH_GET || (f->kind == DDB_QUERY && !f->limit && f->rel)) plan->is_requests_exact = 0;
    double per = 1;
    const kp_shape *s = f->shape;
    /* a BatchGetItem after a join's Query reads one item per join item (its inputs); on an
     * array of references, the array's elements */
    const kp_fanout *refs = f->kind == DDB_BATCH_GET && f->rel && f->rel->relation->link != KP_LINK_THROUGH ? f->rel->fanout : NULL;
    if (f->kind == DDB_GET) per = 1;
    else if (f->kind == DDB_BATCH_GET) per = refs ? refs->avg : 1;
    else if (f->rel) per = expected_items(s && s->kind == KP_SHAPE_EACH ? s : NULL, f->rel);
    else per = expected_items(s, NULL);
    if (!f->rel && !s) per = 1;
    if (f->kind == DDB_QUERY && !f->rel && s && s->is_root_set) per = f->is_client_filtered ? (s->expect.is_given ? s->expect.avg : f->expected) : f->expected;
    /* no Limit is sent when the client sorts or the server filters (request.c): the Query
     * reads every item of its key range, whatever the page size — that is the claim */
    int reads_whole = f->kind == DDB_QUERY && s && s->kind == KP_SHAPE_EACH &&
                      (!f->is_server_ordered || f->filter_count || f->is_client_filtered);
    /* a FilterExpression on a listing read in its order with a Limit (request.c): the pages
     * go on until the page's items match, so it reads about page / (the share that
     * matches), at most the whole key range */
    ddb_request_ctx lc = {.pattern = p};
    int64_t needed = reads_whole && f->is_server_ordered && !f->is_client_filtered ? kp_ddb_request_limit(&lc, f) : 0;
    double whole_max = 0;
    if (needed > 0) {
        double whole = f->rel ? (f->rel->fanout ? f->rel->fanout->avg : 1) : (f->whole > 0 ? f->whole : per);
        /* the matches in the key range: the $expect, else half of it (a range on another
         * attribute, say; the model's $expect makes the estimate its own) */
        double matches = s->expect.is_given ? s->expect.avg : whole / 2;
        double read = matches > 0 ? (double)needed * whole / matches : whole;
        if (read > whole) read = whole;
        if (read < per) read = per;
        whole_max = f->rel ? (f->rel->fanout ? f->rel->fanout->max : whole) : (f->whole > whole ? f->whole : whole);
        per = read;
        plan->is_requests_exact = 0;
        reads_whole = 0;
    } else if (reads_whole) {
        /* a root listing the client filters through other records: the expected matches of
         * its partition (the $expect, else the equality's share), up to every root record */
        double whole = f->rel ? (f->rel->fanout ? f->rel->fanout->avg : 1)
                     : f->is_client_filtered && !f->filter_count ? per : (f->whole > 0 ? f->whole : per);
        whole_max = f->rel ? (f->rel->fanout ? f->rel->fanout->max : whole) : (f->whole > whole ? f->whole : whole);
        if (whole > per) per = whole;
        if (whole_max < per) whole_max = per;
        plan->is_requests_exact = 0;
    }
    /* the most one input can yield: the page size at its largest, else the fan-out max */
    double per_max = 1;
    if (f->kind == DDB_BATCH_GET) per_max = refs ? refs->max : 1;
    else if (f->kind != DDB_GET && (f->rel || s)) per_max = kp_shape_items_max(s && s->kind == KP_SHAPE_EACH ? s : (f->rel ? NULL : s), f->rel);
    if (f->kind == DDB_QUERY && !f->rel && s && s->is_root_set && f->expected > per_max && !kp_shape_limit_max(s)) per_max = f->expected;
    if (per_max < per) per_max = per;
    if ((reads_whole || needed > 0) && whole_max > per_max) per_max = whole_max;
    if (f->kind == DDB_QUERY && !reads_whole && kp_shape_offset_max(s) != 0) {
        /* offset paging reads the skipped items before the page (request.c): at most the
         * offset's max more, and never more than the whole key range */
        double all = f->rel && f->rel->fanout ? f->rel->fanout->max : (f->whole > 0 ? f->whole : per_max);
        double skip = kp_shape_offset_max(s);
        per_max = skip < 0 || per_max + skip > all ? (all > per_max ? all : per_max) : per_max + skip;
    }
    if (f->kind == DDB_QUERY && f->shards > 1 && !reads_whole) {
        /* scatter-gather: every shard's Query reads up to a page, the client merges them */
        double each = f->whole > 0 ? f->whole / f->shards : per;
        per = f->shards * (each < per ? each : per);
        per_max = f->shards * per_max;
    }
    if (f->header) { per += 1 + f->rider_count; per_max += 1 + f->rider_count; }
    if (parents_max < parents) parents_max = parents;
    double count = parents * per;
    double bytes = fetch_bytes(B, f, count, parents, 0);
    o->items = count; /* a COUNT reads (and pays for) every item it counts: ScannedCount */
    o->bytes = bytes;
    double requests = f->kind == DDB_BATCH_GET || batched ? ceil(parents * per / 100.0) : parents * f->shards;
    if (requests < 1) requests = 1;
    /* pages: a Query page stops at 1 MB of items read, a COUNT's too (it follows
     * LastEvaluatedKey to the end of its key range: execute.c) */
    int is_query = f->kind == DDB_QUERY || f->kind == DDB_COUNT;
    if (is_query && bytes / (parents > 0 ? parents : 1) > 1048576) requests *= ceil(bytes / parents / 1048576);
    if (needed > 0) requests = parents * ceil(per / (double)needed); /* each page evaluates `needed` items */
    o->requests = requests;
    o->read_units = f->kind == DDB_GET || f->kind == DDB_BATCH_GET ? count * read_units(item_bytes(B, f->entity->entity))
                                                                    : requests * read_units(bytes / requests);
    /* bounds: every input at the model's maxima, every item at its largest; a COUNT reads
     * its items on the server (ScannedCount) but sends none back */
    double max_count = parents_max * per_max;
    o->items_max = max_count;
    double bytes_max = fetch_bytes(B, f, max_count, parents_max, 1);
    o->bytes_max = f->kind == DDB_COUNT ? 0 : bytes_max;
    double per_parent = bytes_max / (parents_max > 0 ? parents_max : 1);
    int is_batched_max = f->kind == DDB_BATCH_GET || (f->kind == DDB_GET && parents_max > 1);
    o->requests_max = is_batched_max ? ceil(max_count / 100.0)
                                     : parents_max * f->shards * (is_query && per_parent > 1048576 ? ceil(per_parent / 1048576) : 1);
    if (needed > 0) o->requests_max = parents_max * ceil(per_max / (double)needed);
    if (o->requests_max < 1) o->requests_max = 1;
    /* a later page's Query starts past the header item, which a GetItem then reads (execute.c) */
    if (f->header && f->is_paged && f->shape->page == KP_PAGE_TOKEN) o->requests_max += parents_max;
    o->is_scan = f->is_scan;
    if (f->is_scan) {
        o->op = "Scan";
        o->index = NULL;
        o->condition = kp_design_printf(B->d, "every item, filtered on %s", f->rel ? f->rel->relation->array_attr->name : "?");
        /* a Scan reads every item of the table, whatever its entity, in 1 MB pages */
        double table_items = 0, table_bytes = 0, table_bytes_max = 0;
        for (size_t i = 0; i < B->m->entity_count; i++) {
            table_items += B->m->entities[i]->count;
            table_bytes += B->m->entities[i]->count * item_bytes(B, B->m->entities[i]);
            table_bytes_max += B->m->entities[i]->count * item_bytes_max(B, B->m->entities[i]);
        }
        table_items += 1; /* keyplan's seed marker is an item of the table too */
        o->items = parents * table_items;
        o->bytes = parents * table_bytes;
        o->items_max = parents_max * table_items;
        o->bytes_max = parents_max * table_bytes_max;
        o->requests = parents * (table_bytes > 1048576 ? ceil(table_bytes / 1048576) : 1);
        o->requests_max = parents_max * (table_bytes_max > 1048576 ? ceil(table_bytes_max / 1048576) : 1);
        o->read_units = o->requests * read_units(table_bytes / (o->requests / (parents > 0 ? parents : 1)));
    }
    o->why = f->header ? kp_design_printf(B->d, "returns the %s header%s and the first %s items in one request",
                                          f->header->entity->name, riders_named(B, f), f->entity->entity->name)
                       : NULL;
    if ((!f->is_server_ordered || f->shards > 1) && f->shape && f->shape->kind == KP_SHAPE_EACH && f->shape->declared_order_count)
        o->why = kp_design_printf(B->d, "results are merged and sorted in the client (%s)",
                                  f->shards > 1 ? "scatter-gather over shards" : "the index cannot hold this order");
    if (needed > 0)
        o->why = kp_design_printf(B->d, "the server filters after reading (FilterExpression): pages of %lld evaluated items until "
                                  "%lld match, about %.0f items read%s (up to %.0f, the whole key range)", (long long)needed,
                                  (long long)needed, o->items, s->expect.is_given ? "" : " if half of them match (no $expect)",
                                  o->items_max);
    if (reads_whole)
        o->why = kp_design_printf(B->d, "reads every item of the key range (about %.0f, up to %.0f): %s, so no Limit is sent",
                                  o->items, o->items_max,
                                  !f->is_server_ordered ? "the index cannot hold the declared order and the client sorts"
                                                        : "the server filters after reading (FilterExpression)");
    /* children: one more round trip below this one */
    double produced = f->kind == DDB_COUNT ? 0 : count - (f->header ? parents * (1 + f->rider_count) : 0);
    if (needed > 0 && produced > parents * (double)needed) produced = parents * (double)needed; /* what matches goes on */
    double produced_max = f->kind == DDB_COUNT ? 0 : max_count - (f->header ? parents_max * (1 + f->rider_count) : 0);
    /* the header's children run on the header record (kp_fetch.is_on_inputs: one per input) */
    out->expected = produced;
    out->max = produced_max;
}

/* ---- write plans ---------------------------------------------------------------------------- */

/* For each entity (index), the adjacency lists over an N:M through it, in entity order: the
 * element items of the records a join record pairs, so a pairing effect looks them up
 * instead of scanning every entity (quadratic in the model). */
typedef struct paired_index {
    size_t *first, *holder, *k; /* element_items[k[i]] of entity holder[i], i in first[e] .. first[e + 1] */
} paired_index;

static int index_paired(builder *B, paired_index *X)
{
    const ddb_layout *L = B->L;
    size_t n = L->entity_count, pairs = 0;
    for (size_t e = 0; e < n; e++) pairs += L->entities[e].element_count;
    X->first = kp_arena_alloc(B->arena, sizeof(size_t) * (n + 1));
    X->holder = kp_arena_alloc(B->arena, sizeof(size_t) * (pairs + 1));
    X->k = kp_arena_alloc(B->arena, sizeof(size_t) * (pairs + 1));
    size_t *fill = kp_arena_alloc(B->arena, sizeof(size_t) * (n + 1));
    if (!X->first || !X->holder || !X->k || !fill) return -1;
    for (size_t e = 0; e < n; e++)
        for (size_t k = 0; k < L->entities[e].element_count; k++) {
            const kp_entity *through = L->entities[e].element_items[k].elements->relation->through;
            if (through) X->first[through->index + 1]++;
        }
    for (size_t t = 0; t < n; t++) X->first[t + 1] += X->first[t];
    for (size_t t = 0; t <= n; t++) fill[t] = X->first[t];
    for (size_t e = 0; e < n; e++)
        for (size_t k = 0; k < L->entities[e].element_count; k++) {
            const kp_entity *through = L->entities[e].element_items[k].elements->relation->through;
            if (through) X->holder[fill[through->index]] = e, X->k[fill[through->index]++] = k;
        }
    return 0;
}

/* What a write plan adds up while its effects are priced. */
typedef struct write_sum {
    const kp_write *wr;
    kp_write_plan *wp;
    double units, requests;
    double reads;               /* Queries that find an item's key before it is written */
    double entries;             /* of the items written, index entries (not puts, updates or deletes) */
    const char *read_why;
} write_sum;

/* Write requests that go with an effect's records, one per item put or deleted (verify
 * evaluates them on its own records): what the write sends unless one TransactWriteItems
 * holds them all (items_per_request), and what it sends where the server has no transactions. */
static void add_requests(builder *B, write_sum *S, const kp_write_effect *fx, double n)
{
    S->requests += n;
    kp_write_plan_requests(B->d, S->wp, fx, n);
}

static kp_write_touch *add_touch(builder *B, write_sum *S, const kp_write_effect *fx, const char *what, double count, double bytes,
                                 double units)
{
    kp_write_touch *t = kp_write_plan_touch(B->d, S->wp);
    if (!t) return NULL;
    t->container = B->L->table;
    t->what = what;
    t->count = count;
    t->bytes = bytes;
    t->write_units = units;
    kp_write_plan_items(B->d, S->wp, fx, count);
    S->units += units;
    return t;
}

/* An update or delete names its item by the table's key: the attribute of PK or SK that the
 * step's where does not give by equality (the item cannot be found without it; no index
 * answers a lookup by the where), or NULL. A for_each step's items come from the read that
 * reaches them. */
static const kp_attr *unaddressed(const kp_write_step *st, const ddb_placement *base)
{
    if (st->op == KP_WRITE_INSERT || st->for_each_len) return NULL;
    const ddb_format *parts[2] = {&base->pk, &base->sk};
    for (int f = 0; f < (base->sentinel_sk ? 1 : 2); f++) /* a header's fixed SK needs nothing */
        for (size_t k = 0; k < parts[f]->count; k++) {
            const kp_attr *a = parts[f]->segs[k].attr;
            int given = !a;
            for (size_t w = 0; w < st->where_count && !given; w++)
                given = !st->where[w].path_len && st->where[w].attr == a && st->where[w].op == KP_OP_EQ;
            if (!given) return a;
        }
    return NULL;
}

/* Every index the items of `e` are in is one more write per item written (`rows`): a GSI's on
 * its own capacity, an LSI's on the table's (DynamoDB charges both); a sparse one for about
 * half of them. */
static void index_entries(builder *B, write_sum *S, const kp_write_effect *fx, const ddb_entity *e, double rows, const char *which)
{
    double size = item_bytes(B, e->entity), wcu = write_units(size);
    for (size_t k = 1; k < e->placement_count; k++) {
        const ddb_placement *x = &e->placements[k];
        if (x->index->kind == DDB_BASE) continue;
        /* an update of an attribute the index key is built on moves the entry: a delete and a put */
        int moves = 0;
        const ddb_format *parts[2] = {&x->pk, &x->sk};
        for (int f = 0; f < 2; f++)
            for (size_t g = 0; g < parts[f]->count; g++) {
                /* a key built on a copy moves with the copy the step changes: one the items
                 * reach over a reference, or a copy_of attribute of their own */
                const ddb_segment *seg = &parts[f]->segs[g];
                if (fx->kind == KP_EFFECT_COPY) moves |= !seg->via && seg->attr == fx->attr;
                else if (fx->kind == KP_EFFECT_RECORDS ? !seg->via : fx->kind == KP_EFFECT_REFERENCE && seg->via == fx->rel)
                    moves |= kp_write_step_changes(S->wr, fx->step, seg->attr);
            }
        double count = rows * (x->only_when_count ? 0.5 : 1) * (moves ? 2 : 1);
        S->entries += count;
        add_touch(B, S, fx, kp_design_printf(B->d, "%s entry of the %s%s item%s%s", x->index->name, which, e->entity->name,
                                             *which ? "s" : "", moves ? " (its key moves: deleted and put)" : ""),
                  count, count * size, count * wcu);
    }
}

/* The step's own item, its entries in every index it is in, and its element items. */
static void price_records(builder *B, write_sum *S, const kp_write_effect *fx)
{
    const kp_write_step *st = fx->step;
    const ddb_entity *e = entity_of(B, st->entity);
    const kp_attr *missing = e->placement_count ? unaddressed(st, &e->placements[0]) : NULL;
    const ddb_placement *via = NULL;
    for (size_t k = 1; missing && !via && k < e->placement_count; k++) {
        /* a global index keyed by what the where gives finds the item's key: one Query first
         * (every item is in it: not sparse; one partition: not sharded) */
        const ddb_placement *x = &e->placements[k];
        if (x->index->kind == DDB_GSI && !x->only_when_count && x->shards <= 1 && !unaddressed(st, x)) via = x;
    }
    if (via) {
        S->requests += fx->count;
        S->reads += fx->count;
        S->read_why = kp_design_printf(B->d, "%s%sfinds each %s item's key first with a Query on %s (%s = %s): its key needs %s, "
                                       "which the write does not give (the index is eventually consistent)",
                                       S->read_why ? S->read_why : "", S->read_why ? "; " : "", st->entity->name,
                                       via->index->name, via->index->pk_attr, kp_ddb_format_describe(&B->d->arena, &via->pk),
                                       missing->name);
        kp_write_plan_read(B->d, S->wp, B->L->table);
    } else if (missing)
        kp_design_defect(B->d, NULL, "'%s' %s %s by its where, but a %s item's key (PK = %s, SK = %s) needs %s.%s, which the write "
                         "does not give: add it to the step's where (the caller knows it), or the item can only be found by a Scan",
                         S->wr->name, st->op == KP_WRITE_DELETE ? "deletes" : "updates", st->entity->name, st->entity->name,
                         kp_ddb_format_describe(&B->d->arena, &e->placements[0].pk),
                         kp_ddb_format_describe(&B->d->arena, &e->placements[0].sk), st->entity->name, missing->name);
    double rows = fx->count, size = item_bytes(B, st->entity), wcu = write_units(size);
    add_touch(B, S, fx, kp_design_printf(B->d, "%s item (%s)", st->entity->name,
                                     st->op == KP_WRITE_INSERT ? "PutItem" : st->op == KP_WRITE_DELETE ? "DeleteItem" : "UpdateItem"),
              rows, rows * size, rows * wcu * (S->wr->is_atomic ? 2 : 1));
    add_requests(B, S, fx, rows); /* one request per item (writes.c one_by_one), unless a transaction holds them */
    double reach = kp_write_for_each_reads(S->wr, st);
    if (reach > 0) {
        S->requests += reach;
        S->reads += reach;
        S->read_why = kp_design_printf(B->d, "%s%sreaches the %s items of step %zu with %g Quer%s over %s first", S->read_why ? S->read_why : "",
                                       S->read_why ? "; " : "", st->entity->name, fx->step_index + 1, reach, reach == 1 ? "y" : "ies",
                                       st->for_each[st->for_each_len - 1]->name);
        kp_write_plan_read(B->d, S->wp, B->L->table);
    }
    index_entries(B, S, fx, e, rows, "");
    /* element items (adjacency lists): written with the record, again when an update changes
     * what they hold or the array itself */
    for (size_t k = 0; k < e->element_count; k++) {
        const ddb_placement *ep = &e->element_items[k];
        const kp_relation *erel = ep->elements->relation;
        const kp_attr *arr = erel->array_attr; /* NULL: an N:M through a join entity */
        /* a new record has no join records yet: those come with them (pairing effects) */
        int moved = st->op == KP_WRITE_DELETE || (st->op == KP_WRITE_INSERT && arr);
        for (size_t x = 0; !moved && x < st->assign_count; x++) {
            moved = arr && st->assigns[x].attr == arr;
            for (size_t h = 0; !moved && h < ep->hold_count; h++) moved = st->assigns[x].attr == ep->holds[h];
        }
        if (!moved) continue;
        /* an array holds at most as many distinct references as there are targets (--scale
         * caps the relation's fan-out; the attribute's own average is not) */
        double per = erel->fanout.avg > 0 ? erel->fanout.avg : 1;
        if (arr && arr->type.avg_items > 0 && arr->type.avg_items < per) per = arr->type.avg_items;
        double bytes = element_item_bytes(ep, 0), count = rows * per;
        add_touch(B, S, fx, kp_design_printf(B->d, "%s element items of the %s item (one per element of %s)",
                                         st->op == KP_WRITE_DELETE ? "deleted" : "put", st->entity->name, kp_ddb_elements_name(erel)),
                  count, count * bytes, count * write_units(bytes) * (S->wr->is_atomic ? 2 : 1));
        add_requests(B, S, fx, count);
    }
}

/* A join record added or removed adds or removes one element item of each record it pairs
 * that keeps an adjacency list over the relation. */
static void price_pairing(builder *B, write_sum *S, const kp_write_effect *fx, const paired_index *X)
{
    const kp_write_step *st = fx->step;
    for (size_t i = X->first[st->entity->index]; i < X->first[st->entity->index + 1]; i++) {
        const ddb_entity *holder = &B->L->entities[X->holder[i]];
        const ddb_placement *ep = &holder->element_items[X->k[i]];
        if (ep->elements->relation != fx->rel->relation) continue;
        double bytes = element_item_bytes(ep, 0);
        add_touch(B, S, fx, kp_design_printf(B->d, "%s element item of the %s it pairs (%s)", st->op == KP_WRITE_DELETE ? "deleted" : "put",
                                         holder->entity->name, ep->elements->relation->name),
                  fx->count, fx->count * bytes, fx->count * write_units(bytes) * (S->wr->is_atomic ? 2 : 1));
        add_requests(B, S, fx, fx->count);
    }
}

/* The references of one entity to the step's (fx .. end, consecutive in the list) move the
 * copies its items hold (extended references): one touch per referencing entity, for the
 * first of its copies (layout order) of a changed attribute, rewritten in each item that
 * references the record. */
static void price_references(builder *B, write_sum *S, const kp_write_effect *fx, const kp_write_effect *end)
{
    const kp_write_step *st = fx->step;
    const ddb_entity *other = entity_of(B, fx->entity);
    const ddb_copy *moved = NULL;
    for (size_t k = 0; k < other->copy_count && !moved; k++)
        for (size_t x = 0; other->copies[k].rel->target == st->entity && x < st->assign_count; x++)
            if (st->assigns[x].attr == other->copies[k].attr) moved = &other->copies[k];
    if (!moved) return;
    while (fx < end && fx->rel != moved->rel) fx++;
    if (fx == end) return; /* never: a copy is taken only over a reference (kp_copy_sites_add) */
    double size = item_bytes(B, other->entity);
    add_touch(B, S, fx, kp_design_printf(B->d, "copy of %s.%s in the %s items that reference it (PutItem each)", st->entity->name,
                                     moved->attr->name, other->entity->name),
              fx->count, fx->count * size, fx->count * write_units(size));
    index_entries(B, S, fx, other, fx->count, "copying ");
    add_requests(B, S, fx, fx->count);
}

static void price_effect(builder *B, write_sum *S, const kp_write_effect *fx, const paired_index *X)
{
    const kp_write_step *st = fx->step;
    switch (fx->kind) {
    case KP_EFFECT_RECORDS: price_records(B, S, fx); break;
    case KP_EFFECT_PAIRING: price_pairing(B, S, fx, X); break;
    case KP_EFFECT_COPY: {
        /* a denormalised copy of a changed attribute, elsewhere: found by a Query, then updated */
        double size = item_bytes(B, fx->entity);
        add_touch(B, S, fx, kp_design_printf(B->d, "copy of %s.%s in %s items (Query, then UpdateItem each)", st->entity->name,
                                         fx->attr->copy_of->source->name, fx->entity->name),
                  fx->count, fx->count * size, fx->count * write_units(size));
        S->requests += 1; /* the Query */
        S->reads += 1;
        add_requests(B, S, fx, fx->count);
        index_entries(B, S, fx, entity_of(B, fx->entity), fx->count, "copying ");
        break;
    }
    case KP_EFFECT_CASCADE:
    case KP_EFFECT_DETACH: {
        /* the records a delete takes with it, or leaves without their reference: found by a
         * Query per deleted record, then each item deleted or updated, with its index entries */
        int gone = fx->kind == KP_EFFECT_CASCADE;
        double size = item_bytes(B, fx->entity);
        add_touch(B, S, fx, kp_design_printf(B->d, "%s items %s the %s (Query, then %s each)", fx->entity->name,
                                             gone ? "deleted with" : "detached from", fx->rel->source->name,
                                             gone ? "DeleteItem" : "UpdateItem"),
                  fx->count, fx->count * size, fx->count * write_units(size) * (S->wr->is_atomic ? 2 : 1));
        index_entries(B, S, fx, entity_of(B, fx->entity), fx->count, gone ? "deleted " : "detached ");
        S->requests += fx->records;
        S->reads += fx->records;
        add_requests(B, S, fx, fx->count);
        kp_write_plan_read(B->d, S->wp, B->L->table);
        break;
    }
    case KP_EFFECT_AGGREGATE: {
        if (fx->count <= 0) break; /* the write inserts the holder with the value */
        double size = item_bytes(B, fx->entity);
        add_touch(B, S, fx, kp_design_printf(B->d, "%s.%s on the %s item (UpdateItem)", fx->entity->name, fx->attr->name, fx->entity->name),
                  fx->count, fx->count * size, fx->count * write_units(size));
        index_entries(B, S, fx, entity_of(B, fx->entity), fx->count, "changed ");
        add_requests(B, S, fx, 1);
        break;
    }
    case KP_EFFECT_UNIQUE:
        add_touch(B, S, fx, kp_design_printf(B->d, "uniqueness item for %s.%s (conditional put)", st->entity->name, fx->attr->name),
                  fx->count, fx->count * 64, fx->count);
        break;
    case KP_EFFECT_REFERENCE: /* priced by referencing entity: plan_writes */
        break;
    }
}

static void plan_writes(builder *B)
{
    const kp_model *m = B->m;
    paired_index X = {0};
    kp_write_effects effects;
    kp_error err;
    if (kp_write_effects_build(m, &effects, &err) || index_paired(B, &X)) {
        kp_write_effects_free(&effects);
        return;
    }
    for (size_t w = 0; w < m->write_count; w++) {
        const kp_write *wr = m->writes[w];
        write_sum S = {.wr = wr, .wp = &B->d->write_plans[w]};
        kp_write_plan_begin(S.wp);
        const kp_write_effect_list *fxs = &effects.of_write[w];
        for (size_t i = 0, end; i < fxs->count; i = end) {
            const kp_write_effect *fx = &fxs->items[i];
            end = i + 1;
            if (fx->kind != KP_EFFECT_REFERENCE) {
                price_effect(B, &S, fx, &X);
                continue;
            }
            while (end < fxs->count && fxs->items[end].kind == KP_EFFECT_REFERENCE && fxs->items[end].step == fx->step &&
                   fxs->items[end].entity == fx->entity)
                end++;
            price_references(B, &S, fx, &fxs->items[end]);
        }
        kp_write_plan *wp = S.wp;
        wp->write_units = S.units;
        /* a TransactWriteItems holds at most 100 puts, updates and deletes: more go one by one
         * (writes.c), and the write is not all or nothing */
        double actions = wp->items - S.entries;
        int fits = !wr->is_atomic || actions <= KP_DDB_MAX_TRANSACT_ITEMS;
        if (!fits)
            kp_design_defect(B->d, NULL, "'%s' is atomic, but writes about %.0f items: more than the %d a TransactWriteItems "
                             "holds, so they go one request each and the write is not all or nothing; split it, or keep "
                             "what it rewrites out of the transaction",
                             wr->name, actions, KP_DDB_MAX_TRANSACT_ITEMS);
        wp->requests = wr->is_atomic && fits ? 1 + S.reads : S.requests;
        wp->read_requests = S.reads;
        if (wr->is_atomic && fits) wp->items_per_request = INFINITY; /* one TransactWriteItems */
        wp->mechanism = wr->is_atomic && fits ? "TransactWriteItems (all steps or none; 2 WCU per KB)"
                      : wr->schedule_every_s > 0 ? "BatchWriteItem (25 items per request)"
                      : S.requests > 1.5 ? "one request per item written, in order" : "one request";
        wp->why = S.read_why;
    }
    kp_write_effects_free(&effects);
}

/* ---- containers and limits --------------------------------------------------------------------- */

static kp_key_part key_part(builder *B, const char *name, kp_key_role role, const char *format)
{
    kp_key_part k = {kp_design_printf(B->d, "%s", name), role, 0, format ? kp_design_printf(B->d, "%s", format) : ""};
    return k;
}

static void describe_table(builder *B)
{
    const kp_model *m = B->m;
    kp_container *c = kp_design_add_container(B->d, B->L->table, "table");
    c->key_count = 2;
    c->keys = kp_arena_alloc(&B->d->arena, sizeof *c->keys * 2);
    c->keys[0] = key_part(B, "PK", KP_KEY_PARTITION, NULL);
    c->keys[1] = key_part(B, "SK", KP_KEY_SORT, NULL);
    c->entity_count = m->entity_count;
    c->entities = kp_arena_alloc(&B->d->arena, sizeof *c->entities * (m->entity_count ? m->entity_count : 1));
    double items = 0, bytes = 0;
    for (size_t i = 0; i < m->entity_count; i++) {
        c->entities[i] = m->entities[i];
        items += m->entities[i]->count;
        bytes += m->entities[i]->count * item_bytes(B, m->entities[i]);
        const ddb_entity *e = entity_of(B, m->entities[i]);
        for (size_t k = 1; k < e->placement_count; k++)
            if (e->placements[k].index->kind == DDB_GSI) bytes += m->entities[i]->count * item_bytes(B, m->entities[i]);
    }
    c->items = items;
    c->bytes = bytes;
    c->why = B->is_normalised ? "every entity in its own partitions (what one table per entity costs): related items are "
                                "reached through global indexes, one request per entity"
                              : "one table for every entity (single-table design): related items share partitions so one request reads them together";
    /* size facts for the advisors: the largest item, and the largest item collection at the maximum fan-out */
    for (size_t i = 0; i < m->entity_count; i++)
        if (item_bytes(B, m->entities[i]) > c->max_item_bytes) c->max_item_bytes = item_bytes(B, m->entities[i]);
    for (size_t i = 0; i < m->relation_count; i++) {
        const kp_relation *r = m->relations[i];
        if (entity_of(B, r->to)->home != r) continue;
        double collection = item_bytes(B, r->from) + r->fanout.max * item_bytes(B, r->to);
        if (collection > c->max_partition_bytes) {
            c->max_partition_bytes = collection;
            c->max_partition_items = r->fanout.max + 1;
        }
    }
    c->is_partition_bounded = B->L->lsi_count > 0;
    size_t n = B->L->lsi_count + B->L->gsi_count;
    c->indexes = kp_arena_alloc(&B->d->arena, sizeof *c->indexes * (n ? n : 1));
    for (size_t i = 0; i < B->L->lsi_count + B->L->gsi_count; i++) {
        const ddb_index *ix = i < B->L->lsi_count ? &B->L->lsi[i] : &B->L->gsi[i - B->L->lsi_count];
        kp_index_desc *d = &c->indexes[c->index_count++];
        d->name = kp_design_printf(B->d, "%s", ix->name);
        d->kind = ix->kind == DDB_LSI ? "lsi" : "gsi";
        d->key_count = 2;
        d->keys = kp_arena_alloc(&B->d->arena, sizeof *d->keys * 2);
        d->keys[0] = key_part(B, ix->pk_attr, KP_KEY_PARTITION, NULL);
        d->keys[1] = key_part(B, ix->sk_attr, KP_KEY_SORT, NULL);
        d->projection = "ALL";
        /* causes and formats */
        const char **causes = kp_arena_alloc(&B->d->arena, sizeof *causes * (m->pattern_count + 1));
        size_t cn = 0;
        int sparse = 0;
        kp_strmap seen = {0};
        for (size_t e = 0; e < m->entity_count; e++) {
            const ddb_entity *de = &B->L->entities[e];
            for (size_t k = 1; k < de->placement_count; k++) {
                const ddb_placement *pl = &de->placements[k];
                if (pl->index != ix) continue;
                sparse |= pl->only_when_count > 0;
                if (pl->cause && !kp_strmap_get(&seen, pl->cause->name)) {
                    causes[cn++] = pl->cause->name;
                    kp_strmap_put(B->arena, &seen, pl->cause->name, (void *)pl->cause);
                }
            }
        }
        d->caused_by = causes;
        d->caused_by_count = cn;
        d->is_sparse = sparse;
    }
    if (B->L->gsi_count > KP_DDB_MAX_GSI)
        kp_design_defect(B->d, NULL, "the design needs %zu global secondary indexes, more than DynamoDB's quota of %d per table; "
                               "split the model into two tables (the entities of the least related patterns) or hint "
                               "separate_table", B->L->gsi_count, KP_DDB_MAX_GSI);
    /* LSIs bound every item collection to 10 GB */
    if (B->L->lsi_count) {
        for (size_t i = 0; i < m->relation_count; i++) {
            const kp_relation *r = m->relations[i];
            const ddb_entity *child = entity_of(B, r->to);
            if (child->home != r) continue;
            double bytes_max = r->fanout.max * item_bytes(B, r->to);
            if (bytes_max > 10e9)
                kp_design_defect(B->d, NULL, "the %s collection of one %s can reach %.1f GB (fan-out max %.0f), above the 10 GB "
                                       "item-collection limit that local indexes impose", r->name, r->from->name, bytes_max / 1e9,
                                 r->fanout.max);
        }
    }
    for (size_t i = 0; i < m->entity_count; i++) {
        double size = item_bytes(B, m->entities[i]);
        if (size > 400 * 1024)
            kp_design_defect(B->d, NULL, "a %s item averages %.0f KB, above DynamoDB's 400 KB item limit", m->entities[i]->name, size / 1024);
    }
}

/* The item collections as text, like NoSQL Workbench's aggregate view: per partition
 * key format, the items that share it in sort-key order, with their index keys. */
static void draw(builder *B)
{
    const ddb_layout *L = B->L;
    kp_text t = {0};
    const char *done[64];
    size_t done_count = 0;
    for (size_t e = 0; e < L->entity_count; e++) {
        /* partitions are grouped by their literal prefix: WORKSPACE#<id> and
         * WORKSPACE#<workspaceId> are the same partition seen from two entities */
        const char *pk = kp_ddb_format_prefix(B->arena, &L->entities[e].placements[0].pk);
        int seen = 0;
        for (size_t k = 0; k < done_count; k++) seen |= strcmp(done[k], pk) == 0;
        if (seen) continue;
        if (done_count == 64) {
            kp_text_append(&t, "(more partition key formats; the first 64 are drawn)\n");
            break;
        }
        done[done_count++] = pk;
        kp_text_printf(&t, "PK = %s\n", kp_ddb_format_describe(B->arena, &L->entities[e].placements[0].pk));
        for (size_t o = 0; o < L->entity_count; o++) {
            const ddb_entity *de = &L->entities[o];
            const ddb_placement *base = &de->placements[0];
            if (strcmp(kp_ddb_format_prefix(B->arena, &base->pk), pk) != 0) continue;
            kp_text_printf(&t, "  SK = %-34s %-14s", kp_ddb_format_describe(B->arena, &base->sk), de->entity->name);
            for (size_t k = 1; k < de->placement_count; k++) {
                const ddb_placement *pl = &de->placements[k];
                if (pl->index->kind == DDB_GSI)
                    kp_text_printf(&t, " %s=%s%s", pl->index->pk_attr, kp_ddb_format_describe(B->arena, &pl->pk),
                                   pl->shards > 1 ? "#<shard>" : "");
                kp_text_printf(&t, " %s=%s", pl->index->sk_attr, kp_ddb_format_describe(B->arena, &pl->sk));
            }
            kp_text_append(&t, "\n");
        }
    }
    B->d->diagram = t.data && !t.is_failed ? kp_design_printf(B->d, "%s", t.data) : NULL;
    kp_text_free(&t);
}

/* A hash of everything that decides what the items look like. */
static void fingerprint(builder *B)
{
    uint64_t h = 1469598103934665603ULL;
    const ddb_layout *L = B->L;
    for (size_t e = 0; e < L->entity_count; e++) {
        const ddb_entity *de = &L->entities[e];
        for (size_t k = 0; k < de->placement_count; k++) {
            const ddb_placement *pl = &de->placements[k];
            const char *parts[] = {de->entity->name, pl->index->sk_attr, kp_ddb_format_describe(B->arena, &pl->pk),
                                   kp_ddb_format_describe(B->arena, &pl->sk)};
            for (size_t x = 0; x < 4; x++)
                for (const char *c = parts[x]; c && *c; c++) { h ^= (unsigned char)*c; h *= 1099511628211ULL; }
            h ^= (uint64_t)pl->shards * 31 + pl->only_when_count;
            h *= 1099511628211ULL;
        }
        for (size_t k = 0; k < de->copy_count; k++)
            for (const char *c = de->copies[k].name; *c; c++) { h ^= (unsigned char)*c; h *= 1099511628211ULL; }
    }
    kp_snprintf(B->d->fingerprint, sizeof B->d->fingerprint, "%016llx", (unsigned long long)h);
}

static void free_layout(void *layout)
{
    ddb_layout *L = layout;
    kp_arena_free(&L->arena);
    free(L);
}

/* One candidate: the single-table design, or (is_normalised) the same rules with no item
 * collections, which costs what one table per entity costs. */
/* A child of a root read by key whose partition key is the root's key, which the
 * parameters give, needs nothing of the root's answer: it belongs to the root's round
 * trip (list-category-items: the category's GetItem and its items' Query). */
/* Is root one record read by its key from the parameters: a GetItem, or a Query of its entry
 * on an index (no header merged into it)? */
static int is_single_root(const ddb_fetch *root)
{
    return root && (root->kind == DDB_GET || (root->kind == DDB_QUERY && !root->shape && !root->is_scan && root->shards <= 1)) &&
           root->source == DDB_FROM_PARAMS && !root->header;
}

/* Does the pattern's parameters give root attribute a: a key attribute of the root with an
 * equality? */
static int is_param_key(const kp_pattern *p, const ddb_fetch *root, const kp_attr *a)
{
    return a && a->key_index >= 0 && a->entity == root->entity->entity && eq_cond(p->where, p->where_count, a);
}

static void mark_independent(const kp_pattern *p, ddb_fetch *root)
{
    if (!is_single_root(root)) return;
    for (size_t i = 0; i < root->base.child_count; i++) {
        ddb_fetch *c = kp_ddb_child(root, i);
        if (c->source != DDB_FROM_PARENT || !c->pk_from || c->kind == DDB_BATCH_GET) continue;
        size_t n = fmt_attr_count(&c->placement->pk);
        int ok = n > 0;
        for (size_t k = 0; ok && k < n; k++) ok = is_param_key(p, root, c->pk_from[k]);
        c->base.is_independent = ok;
    }
}

/* What the shared walkers must know of each fetch (backends/fetch.h): a copy sends no
 * request, a count yields nothing to go on with, and the children of a header read with a
 * listing run on the header record (the listing's inputs), not on the listing's items. */
static void mark_roles(ddb_fetch *f)
{
    for (; f; f = kp_ddb_next_hop(f)) {
        f->base.is_free = f->kind == DDB_COPY || f->kind == DDB_RIDE;
        f->base.is_terminal = f->kind == DDB_COUNT;
        for (size_t i = 0; i < f->base.child_count; i++) {
            ddb_fetch *c = kp_ddb_child(f, i);
            c->base.is_on_inputs = f->header && c->rel && c->rel->source == f->header->entity;
            mark_roles(c);
        }
    }
}

static void mark_read(ddb_layout *L, ddb_fetch *f)
{
    for (; f; f = kp_ddb_next_hop(f)) {
        if (f->placement) ((ddb_placement *)f->placement)->is_read = 1;
        if (f->header && f->placement) {
            ddb_entity *h = &L->entities[f->header->entity->index];
            for (size_t k = 0; k < h->placement_count; k++)
                if (h->placements[k].index == f->placement->index) h->placements[k].is_read = 1;
        }
        for (size_t i = 0; i < f->base.child_count; i++) mark_read(L, kp_ddb_child(f, i));
    }
}

static void repoint(ddb_fetch *f, const ddb_placement *from, const ddb_placement *to)
{
    for (; f; f = kp_ddb_next_hop(f)) {
        if (f->placement == from) f->placement = to;
        for (size_t i = 0; i < f->base.child_count; i++) repoint(kp_ddb_child(f, i), from, to);
    }
}

/* An index placement no fetch reads (a listing a header merge moved to another index, say)
 * costs a write per item and serves nothing: dropped, with its decision, when its index
 * keeps items another fetch reads (an emptied index would renumber the others: kept). */
static void prune_placements(builder *B)
{
    ddb_layout *L = B->L;
    for (size_t i = 0; i < B->m->pattern_count; i++) mark_read(L, L->roots[i]);
    for (size_t i = 0; i < L->entity_count; i++) {
        ddb_entity *e = &L->entities[i];
        size_t w = 1;
        for (size_t k = 1; k < e->placement_count; k++) {
            ddb_placement *pl = &e->placements[k];
            int index_read = 0; /* another placement a fetch reads keeps the index */
            for (size_t j = 0; !pl->is_read && !index_read && j < L->entity_count; j++)
                for (size_t x = 1; x < L->entities[j].placement_count; x++)
                    index_read |= L->entities[j].placements[x].index == pl->index && L->entities[j].placements[x].is_read;
            int keep = pl->is_read || !index_read;
            if (!keep) {
                const char *subject = kp_design_printf(B->d, "%s %s", pl->index->name, e->entity->name);
                kp_design_undecide(B->d, subject);
                continue;
            }
            if (w != k) {
                e->placements[w] = *pl;
                for (size_t r = 0; r < B->m->pattern_count; r++) repoint(L->roots[r], pl, &e->placements[w]);
            }
            w++;
        }
        e->placement_count = w;
    }
}

/* ---- copies of referenced attributes (extended references) ---------------------------------------- */

/* A read of a referenced item by key once per item its parent returns (N+1), which a copy
 * in the parent's items could answer. */
static void find_copy_sites(builder *B, const kp_pattern *p, ddb_fetch *f, const ddb_fetch *parent, kp_copy_sites *out)
{
    if (!f) return;
    const kp_rel *r = f->rel;
    int is_array = r && r->relation->link == KP_LINK_ARRAY && !r->is_inverse;
    int is_hop = !f->shape || (f->shape->kind == KP_SHAPE_ONE && f->shape->hop_count == 1) ||
                 (is_array && f->shape->kind == KP_SHAPE_EACH && f->shape->hop_count == 1);
    /* the parent's items, or the header item its Query returns with them (the record f runs on) */
    const ddb_entity *from = parent && parent->header && parent->header->entity == r->source ? parent->header
                           : parent ? parent->entity : NULL;
    /* a to-one read is a GetItem, or a Query of the one entry its key has on an index (an
     * order found by its id on the index where it heads its lines) */
    int reads_one = f->kind == DDB_GET || f->kind == DDB_BATCH_GET ||
                    (f->kind == DDB_QUERY && r && !r->is_many && f->shards <= 1 && !f->filter_count);
    if (parent && r && is_hop && reads_one && !f->is_scan && !f->base.child_count &&
        !kp_ddb_next_hop(f) && f->source == DDB_FROM_PARENT && !f->base.is_independent && from && from->entity == r->source)
        /* a header is one item a request: the hop itself stands for it (copy_site_items: 1) */
        kp_copy_sites_add(B->arena, out, f, from == parent->entity ? (const void *)parent : (const void *)f, p, r, NULL, 1);
    /* the targets of an N:M read by key after a page of its join items, which copies in the
     * join items could answer (an adjacency list that holds what its listing returns) */
    ddb_fetch *g = kp_ddb_next_hop(f);
    if (f->is_join_ordered && g && g->kind == DDB_BATCH_GET && g->shape && g->shape->kind == KP_SHAPE_EACH &&
        !g->base.child_count && !kp_ddb_next_hop(g) && !g->is_scan)
        kp_copy_sites_add(B->arena, out, g, f, p, f->rel, NULL, 0);
    const ddb_fetch *end = f;
    for (ddb_fetch *h = kp_ddb_next_hop(f); h; h = kp_ddb_next_hop(h)) { find_copy_sites(B, p, h, end, out); end = h; }
    for (size_t i = 0; i < end->base.child_count; i++) find_copy_sites(B, p, kp_ddb_child(end, i), end, out);
}

/* The items a site's parent returns per request of its pattern (the reads a copy saves). */
static double copy_site_items(const void *of)
{
    const ddb_fetch *parent = of;
    double n = 1;
    if (parent->rel && parent->rel->is_many && parent->rel->fanout) n = parent->rel->fanout->avg;
    if (parent->shape && parent->shape->kind == KP_SHAPE_EACH && parent->shape->expect.is_given) n = parent->shape->expect.avg;
    if (!parent->rel && parent->shape && parent->shape->limit > 0) n = (double)parent->shape->limit;
    if (parent->limit > 0 && n > (double)parent->limit) n = (double)parent->limit;
    return n > 0 ? n : 1;
}

/* Where a pattern reads a referenced item by key for every item it returns, the items may
 * hold a copy of the few attributes it returns: taken when the reads saved outweigh the
 * items the writes that change the copied attributes rewrite. One decision per relation. */
static void decide_copies(builder *B)
{
    kp_copy_sites sites = {0};
    for (size_t i = 0; i < B->m->pattern_count; i++) find_copy_sites(B, B->m->patterns[i], B->L->roots[i], NULL, &sites);
    if (kp_copy_sites_group(B->arena, &sites) < 0) return;
    for (size_t i = 0, end; i < sites.count; i = end) {
        for (end = i + 1; end < sites.count && sites.items[end].group_id == sites.items[i].group_id;) end++;
        const kp_rel *r = sites.items[i].rel;
        /* the items that hold the copies: the referencing entity's, or an N:M's join items */
        const kp_entity *holder = r->relation->link == KP_LINK_THROUGH ? r->relation->through : r->source;
        ddb_entity *de = entity_of(B, holder);
        kp_copy_verdict v;
        kp_copy_weigh(B->arena, B->m, B->mix, &sites.items[i], end - i, copy_site_items, attr_bytes, &v);
        const char *names = "";
        const char **copy_names = v.is_taken ? kp_arena_alloc(B->arena, sizeof *copy_names * (v.need.attr_count + 1)) : NULL;
        for (size_t k = 0; v.is_taken && k < v.need.attr_count; k++) {
            const kp_attr *own = kp_copy_own(r->source, r, v.need.attrs[k]);
            copy_names[k] = own ? own->name : held_copy(B, de, r, v.need.attrs[k]);
            names = bprintf(B, "%s%s%s", names, k ? ", " : "", copy_names[k]);
        }
        kp_decision *dc = kp_design_decide(B->d, bprintf(B, "%s.%s", holder->name, r->name ? r->name : r->target->name),
            v.is_taken ? (v.added.attr_count ? bprintf(B, "copy %s.{%s} into each %s item (%s): no read of the %s item", r->target->name, v.fields,
                                              holder->name, names, r->target->name)
                    : v.need.attr_count ? bprintf(B, "%s.{%s} from each %s item's own copy (%s): no read of the %s item", r->target->name,
                                                v.fields, holder->name, names, r->target->name)
                                      : bprintf(B, "the %s's key from the %s item's own foreign key: no read of the %s item",
                                                r->target->name, holder->name, r->target->name))
                 : bprintf(B, "reference: read the %s item by key for each %s item", r->target->name, holder->name),
            v.is_stale ? bprintf(B, "a copy of %s.{%s} in each %s's list would save reading %.1f items/s, but writes change or delete "
                                  "%s records, whose copies in an array keyplan does not keep in step",
                               r->target->name, v.fields, holder->name, v.saved, r->target->name)
            : !v.is_few ? bprintf(B, "the patterns read %s of the %s through %s: too much to copy into every item",
                           v.need.is_unfit ? "more" : v.fields, r->target->name, r->name ? r->name : "the reference")
                 : v.is_all_own ? bprintf(B, "the model keeps the copy in step (copy_of); it saves reading "
                                                                    "one item per item returned (%.1f/s)", v.saved)
                 : v.cost == 0 ? bprintf(B, "it saves reading one item per item returned (%.1f/s), and no write changes %s: the "
                                          "copies never move", v.saved, v.fields)
                 : bprintf(B, "the reads a copy saves (one item per item returned, %.1f/s) %s the items the writes that change %s "
                              "rewrite (%.1f/s)", v.saved, v.is_taken ? "outweigh" : "do not outweigh", v.fields, v.cost));
        const kp_attr **attrs = NULL;
        if (v.is_taken && v.need.attr_count) {
            attrs = kp_arena_alloc(B->arena, sizeof *attrs * v.need.attr_count);
            memcpy(attrs, v.need.attrs, sizeof *attrs * v.need.attr_count);
        }
        for (size_t k = i; k < end; k++) {
            const kp_copy_site *s = &sites.items[k];
            ddb_fetch *hop = s->hop;
            kp_decision_add_pattern(B->d, dc, s->p);
            if (!v.is_taken) continue;
            if (holder != r->source) {
                /* the join items' page answers the listing: no BatchGetItem */
                ddb_fetch *join = (ddb_fetch *)s->parent;
                join->is_join_target = 1;
                join->base.next_hop = NULL;
                join->copy_names = copy_names;
                join->copy_attrs = attrs;
                join->copy_count = v.need.attr_count;
                continue;
            }
            hop->kind = DDB_COPY;
            hop->copy_names = copy_names;
            hop->copy_attrs = attrs;
            hop->copy_count = v.need.attr_count;
        }
    }
}

/* Does g, the next hop after f, need of f's record only attributes of f's key? (the values
 * a record made of that key holds: virtual_targets in execute.c reads these) */
static int keys_by_key(const ddb_fetch *f, const ddb_fetch *g)
{
    const kp_relation *rel = g->rel ? g->rel->relation : NULL;
    if (!rel || rel->link != KP_LINK_FOREIGN_KEY || g->rel->source != f->entity->entity || (g->placement && g->placement->elements))
        return 0;
    int holder_is_source = rel->holder == g->rel->source;
    for (size_t i = 0; i < rel->fk_count; i++) {
        const kp_attr *a = holder_is_source ? rel->fk_attrs[i] : rel->ref_attrs[i];
        if (a->key_index < 0 || a->entity != f->entity->entity) return 0;
    }
    return 1;
}

/* A to-one hop on the way to another, of which the pattern reads nothing but the key its
 * source's reference already holds (line-invoice: the order of a line, on the way to that
 * order's shipment): not read; its record is made of that key (a DDB_COPY of no attributes)
 * and the next hop keys by it. Every reference in the data names a record that exists
 * (keyplan's data check), so the read would only have confirmed it. Where the reference is
 * a key the parameters fix (the root's own), the next hop goes in the root's round trip. */
static void skip_key_hops(builder *B, const kp_pattern *p, ddb_fetch *f, const ddb_fetch *root)
{
    for (; f; f = kp_ddb_next_hop(f)) {
        ddb_fetch *g = kp_ddb_next_hop(f);
        const kp_rel *r = f->rel;
        if (g && r && !r->is_many && !f->shape && !f->base.child_count && (f->kind == DDB_GET || f->kind == DDB_QUERY) &&
            !f->is_scan && !f->header && !f->filter_count && f->source == DDB_FROM_PARENT &&
            r->relation->link == KP_LINK_FOREIGN_KEY && r->relation->holder == r->source && keys_by_key(f, g)) {
            if (kp_copy_needs_only_key(p, r)) {
                f->kind = DDB_COPY;
                f->copy_count = 0;
                f->base.is_free = 1;
                int from_params = f != root && is_single_root(root) && r->source == root->entity->entity;
                for (size_t k = 0; from_params && k < r->relation->fk_count; k++)
                    from_params = is_param_key(p, root, r->relation->fk_attrs[k]);
                if (from_params && g->kind != DDB_BATCH_GET) g->base.is_independent = 1;
                kp_decision *x = kp_design_decide(
                    B->d, bprintf(B, "%s.%s on the way", r->source->name, r->name ? r->name : r->target->name),
                    bprintf(B, "no read of the %s item: its key from the %s item's own reference", r->target->name, r->source->name),
                    bprintf(B, "'%s' reads nothing of the %s but the key the %s already holds, on the way to its %s%s", p->name,
                            r->target->name, r->source->name, g->rel->name ? g->rel->name : g->entity->entity->name,
                            g->base.is_independent ? ", which the parameters key: it goes in the first round trip" : ""));
                kp_decision_add_pattern(B->d, x, p);
            }
        }
        /* the root's own children may key by the parameters through it */
        for (size_t i = 0; i < f->base.child_count; i++) skip_key_hops(B, p, kp_ddb_child(f, i), f == root ? root : NULL);
    }
}

static int propose_one(const kp_model *m, const kp_mix *mix, int is_normalised, kp_design **out, kp_error *err)
{
    extern const kp_backend kp_dynamodb_backend;
    *out = NULL;
    kp_design *d = kp_design_new(&kp_dynamodb_backend, m, mix, is_normalised ? "normalised" : "single-table");
    ddb_layout *L = calloc(1, sizeof *L);
    if (!d || !L) {
        kp_design_free(d);
        free(L);
        return kp_error_set(err, KP_ERR_NOMEM, NULL, 0, 0, "out of memory");
    }
    d->layout = L;
    d->free_layout = free_layout;
    builder B = {m, mix, d, L, &L->arena, err, is_normalised, NULL, NULL, 0, NULL, NULL, 0, NULL};
    L->table = kp_arena_strdup(&L->arena, m->name);
    L->base.kind = DDB_BASE;
    L->base.pk_attr = "PK";
    L->base.sk_attr = "SK";
    L->entity_count = m->entity_count;
    L->entities = kp_arena_alloc(&L->arena, sizeof *L->entities * (m->entity_count ? m->entity_count : 1));
    L->roots = kp_arena_alloc(&L->arena, sizeof *L->roots * (m->pattern_count ? m->pattern_count : 1));
    if (index_write_steps(&B) || index_int_references(&B)) {
        kp_design_free(d);
        return kp_error_set(err, KP_ERR_NOMEM, NULL, 0, 0, "out of memory");
    }
    int rc = place_entities(&B);
    for (size_t i = 0; rc == 0 && i < m->pattern_count; i++) {
        rc = plan_root(&B, m->patterns[i], &L->roots[i]);
        if (rc == 0) merge_header(&B, m->patterns[i], L->roots[i]);
        if (rc == 0) mark_independent(m->patterns[i], L->roots[i]);
    }
    if (rc == 0 && B.is_out_of_memory) rc = kp_error_set(err, KP_ERR_NOMEM, NULL, 0, 0, "out of memory");
    if (rc) { kp_design_free(d); return -1; }
    prune_placements(&B);
    decide_copies(&B);
    for (size_t i = 0; i < m->pattern_count; i++) skip_key_hops(&B, m->patterns[i], L->roots[i], L->roots[i]);
    for (size_t i = 0; i < m->pattern_count; i++) mark_roles(L->roots[i]);
    /* the layout is settled: each entity's item bytes once */
    double *settled = kp_arena_alloc(B.arena, sizeof *settled * 2 * (m->entity_count ? m->entity_count : 1));
    for (size_t e = 0; settled && e < m->entity_count; e++) {
        settled[2 * e] = entity_item_bytes(&B, m->entities[e], 0);
        settled[2 * e + 1] = entity_item_bytes(&B, m->entities[e], 1);
    }
    B.settled_bytes = settled;
    for (size_t i = 0; i < m->pattern_count; i++) {
        kp_plan *plan = &d->plans[i];
        plan->is_requests_exact = 1;
        opctx O = {&B, m->patterns[i], plan};
        kp_fetch_claim(&L->roots[i]->base, price_fetch, &O);
        kp_plan_total(plan);
        plan->shards = L->roots[i]->shards;
        plan->why = L->roots[i]->header
                        ? kp_design_printf(d, "the %s header%s and its %s come back from one Query", L->roots[i]->header->entity->name,
                                           riders_named(&B, L->roots[i]), L->roots[i]->rel->name)
                        : NULL;
    }
    plan_writes(&B);
    describe_table(&B);
    d->summary = kp_design_printf(d, "%s'%s' with %zu local and %zu global secondary indexes",
                                  is_normalised ? "no item collections (the cost of a table per entity): one table " : "one table ",
                                  L->table, L->lsi_count, L->gsi_count);
    fingerprint(&B);
    draw(&B);
    *out = d;
    return 0;
}

int kp_ddb_propose(const kp_model *m, const kp_propose_options *options, kp_design_list *out, kp_error *err)
{
    out->items = NULL;
    out->count = 0;
    const kp_mix *mix = options && options->mix ? options->mix : m->default_mix;
    size_t want = options && options->all_candidates ? 2 : 1;
    out->items = calloc(want, sizeof *out->items);
    if (!out->items) return kp_error_set(err, KP_ERR_NOMEM, NULL, 0, 0, "out of memory");
    for (size_t i = 0; i < want; i++) {
        if (propose_one(m, mix, (int)i, &out->items[i], err)) {
            kp_design_list_free(out);
            return -1;
        }
        out->count++;
    }
    return 0;
}
