/*
 * propose.c — the MongoDB document design: what each collection's documents hold,
 * which relations are embedded and which referenced, the indexes and why, and for
 * every access pattern the finds that serve it (fetch.c builds those).
 *
 * The rules, in the order they are applied (each recorded as a kp_decision naming the
 * patterns that caused it):
 *  1. Embed or reference, per 1:N / 1:1 relation whose child holds the reference:
 *     a hint decides first; otherwise a child that grows without bound, whose parent
 *     document would pass 16 MB at the maximum fan-out, or whose maximum fan-out is
 *     above 1,000, is *referenced* (its own collection, holding the parent key); a
 *     child that is never read with its parent is referenced; a child that patterns
 *     reach alone (a root set, another relation, a look-up that does not name the
 *     parent) is referenced. Otherwise it is *embedded*: one-to-few (max ≤ 100) always;
 *     bounded to hundreds (max ≤ 1,000) when the reads that get parent and children
 *     together outweigh the child writes times the write amplification (parent
 *     document bytes rewritten per child change / child bytes). One level only: an
 *     embedded entity embeds nothing, and an entity embeds at most in one parent.
 *  2. Subset: a referenced relation whose parent's pattern reads its first N children
 *     (an $order and a $limit N ≤ 100, no $where, no paging) gets those N children
 *     copied into the parent document when read rate × one saved round trip is above
 *     the child write rate × one extra parent update (the threshold: reads > writes).
 *  3. Extended reference: a to-one hop from a child to the record it references whose
 *     patterns read ≤ 4 small fields of it gets those fields copied into the child
 *     document when the reads that save a follow-up find outweigh the writes that
 *     change the copied fields times the copies each change rewrites.
 *  4. Computed values: derived aggregates (count / sum / max / min) are stored on the
 *     document and updated by the writes that change them, so reads never aggregate.
 *  5. `_id` from the entity key (the value, or a subdocument of a compound key) so a
 *     resumed or repeated seed cannot duplicate a document; indexes per find following
 *     Equality-Sort-Range, with the key as the last sort field (ties broken as the
 *     oracle does), none that is a prefix of another; a shard key per collection from
 *     the equality its patterns read by; a $jsonSchema validator per collection.
 *  6. A pattern that no index can serve (a collection scan) is a defect of the design.
 * Invariant: the plan's claimed requests and round trips are what execute.c sends for
 * a first page when the data matches the model's averages.
 */
#include "backends/mongodb/propose.h"
#include "backends/copies.h"

#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *mg_bprintf(builder *B, const char *fmt, ...)
{
    char buf[2048];
    va_list ap;
    va_start(ap, fmt);
    kp_vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    return kp_arena_strdup(B->arena, buf);
}

mg_entity *mg_entity_of(builder *B, const kp_entity *e) { return &B->L->entities[e->index]; }

double mg_pattern_rate(builder *B, const kp_pattern *p) { return kp_pattern_rps(p, B->mix); }

const mg_collection *kp_mg_home(const mg_layout *L, const kp_entity *e)
{
    const mg_entity *me = &L->entities[e->index];
    while (me && !me->collection) me = me->parent;
    return me ? me->collection : NULL;
}

const char *kp_mg_path(kp_arena *arena, const mg_entity *e)
{
    if (!e->parent) return "";
    const char *up = kp_mg_path(arena, e->parent);
    return up[0] ? kp_arena_printf(arena, "%s.%s", up, e->path) : e->path;
}

/* ---- sizes ------------------------------------------------------------------------------- */

double mg_attr_bytes(const kp_attr *a)
{
    double name = (double)strlen(a->name) + 2; /* type byte, name, NUL */
    double v;
    if (a->avg_size > 0) v = a->avg_size + (kp_type_is_textual(a->type.kind) ? 5 : 0);
    else switch (a->type.kind) {
    case KP_T_STRING: v = 21; break;
    case KP_T_TIMESTAMP: case KP_T_INT: case KP_T_COUNTER: case KP_T_DOUBLE: case KP_T_DECIMAL: v = 8; break;
    case KP_T_DATE: v = 15; break;
    case KP_T_UUID: case KP_T_TIMEUUID: v = 41; break;
    case KP_T_BOOL: v = 1; break;
    case KP_T_ENUM: v = 13; break;
    case KP_T_BLOB: v = 69; break;
    case KP_T_OBJECT: {
        v = 5;
        for (size_t i = 0; i < a->type.field_count; i++) v += mg_attr_bytes(a->type.fields[i]);
        break;
    }
    case KP_T_ARRAY: case KP_T_MAP: v = 5 + (a->type.avg_items > 0 ? a->type.avg_items : 3) * 24; break;
    default: v = 8;
    }
    return name + v;
}

/* A field at the largest a read can find it (what a plan's bytes bound prices): present,
 * its value kp_attr_max_ratio times the average. */
static double attr_bound_bytes(const kp_attr *a)
{
    double name = (double)strlen(a->name) + 2;
    return name + (mg_attr_bytes(a) - name) * kp_attr_max_ratio(a);
}

/* One record's own fields (no _id, nothing nested): on average, or each at its bound. */
static double record_sized(const kp_entity *e, int bound)
{
    double t = 5;
    for (size_t i = 0; i < e->attr_count; i++)
        t += bound ? attr_bound_bytes(e->attrs[i]) : mg_attr_bytes(e->attrs[i]) * e->attrs[i]->presence;
    return t;
}

double mg_record_bytes(const kp_entity *e) { return record_sized(e, 0); }

static double id_bytes(const kp_entity *e)
{
    double t = 4;
    for (size_t k = 0; k < e->key_count; k++) t += mg_attr_bytes(e->key[k]);
    return t + (e->key_count > 1 ? 5 : 0);
}

/* An element as stored in a parent (its fields and extended references). */
static double element_sized(const mg_entity *me, int bound)
{
    double t = record_sized(me->entity, bound);
    for (size_t i = 0; i < me->alias_count; i++) /* held once, at the embedded source */
        t -= bound ? attr_bound_bytes(me->aliases[i].attr) : mg_attr_bytes(me->aliases[i].attr) * me->aliases[i].attr->presence;
    for (size_t i = 0; i < me->extref_count; i++) {
        t += (double)strlen(me->extrefs[i].field) + 7;
        /* over an array: a subdocument per element */
        const kp_rel *r = me->extrefs[i].rel;
        double per = r->relation->link == KP_LINK_ARRAY && r->fanout ? (bound ? r->fanout->max : r->fanout->avg) : 1;
        for (size_t k = 0; k < me->extrefs[i].attr_count; k++)
            t += per * (bound ? attr_bound_bytes(me->extrefs[i].attrs[k]) : mg_attr_bytes(me->extrefs[i].attrs[k]));
    }
    return t;
}

double mg_element_bytes(const mg_entity *me) { return me->has_sizes ? me->element_avg : element_sized(me, 0); }

/* An embedded array or object: its elements at the fan-out average or max (`at_max`), each
 * on average or at its bound. */
static double nested_bytes(const mg_nested *n, int at_max, int bound)
{
    double per = element_sized(n->child, bound) + 4;
    double count = n->rel->fanout ? (at_max ? n->rel->fanout->max : n->rel->fanout->avg) : 1;
    if (n->subset > 0 && count > (double)n->subset) count = (double)n->subset;
    if (!n->is_array && count > 1) count = 1;
    return (double)strlen(n->field) + 7 + count * per;
}

static double document_sized(const mg_entity *me, int with_id, int at_max, int bound)
{
    double t = element_sized(me, bound) + (with_id ? id_bytes(me->entity) : 0);
    for (size_t i = 0; i < me->nested_count; i++) t += nested_bytes(&me->nested[i], at_max, bound);
    return t;
}

double mg_document_bytes(const mg_entity *me)
{
    return me->has_sizes ? me->document_avg : document_sized(me, me->collection != NULL, 0, 0);
}

double mg_document_max_bytes(const mg_entity *me) { return me->has_sizes ? me->document_max : document_sized(me, 1, 1, 0); }

double mg_document_bound_bytes(const mg_entity *me)
{
    return me->has_sizes ? me->document_bound : document_sized(me, me->collection != NULL, 1, 1);
}

/* The layout is final (no embedding, extended reference or alias changes after this):
 * every entity's sizes are worked out once, not at each of the plans' many asks. */
static void fix_sizes(builder *B)
{
    for (size_t e = 0; e < B->L->entity_count; e++) {
        mg_entity *me = &B->L->entities[e];
        me->element_avg = mg_element_bytes(me);
        me->document_avg = mg_document_bytes(me);
        me->document_bound = mg_document_bound_bytes(me);
        me->document_max = mg_document_max_bytes(me);
    }
    for (size_t e = 0; e < B->L->entity_count; e++) B->L->entities[e].has_sizes = 1;
}

/* ---- walking the patterns' hops ------------------------------------------------------------ */

/* Calls visit for every relation hop a pattern walks: shape nodes ($each / $one /
 * $count), leaf paths and conditions through relations. */
typedef void (*hop_visit)(builder *B, const kp_pattern *p, const mg_hop_use *use, void *ctx);

static void visit_path(builder *B, const kp_pattern *p, kp_rel *const *path, size_t n, const kp_shape *node,
                       const kp_attr *leaf, int is_cond, hop_visit fn, void *ctx)
{
    for (size_t i = 0; i < n; i++) {
        mg_hop_use u = {path[i], i, n, node, leaf, is_cond, path};
        fn(B, p, &u, ctx);
    }
}

static void walk_shape(builder *B, const kp_pattern *p, const kp_shape *s, hop_visit fn, void *ctx)
{
    switch (s->kind) {
    case KP_SHAPE_ATTR:
        if (s->path_len && !kp_copy_on(s->entity, s->path, s->path_len, s->attr))
            visit_path(B, p, s->path, s->path_len, NULL, s->attr, 0, fn, ctx);
        return;
    case KP_SHAPE_EACH: case KP_SHAPE_ONE: case KP_SHAPE_COUNT:
        if (!s->is_root_set) visit_path(B, p, s->hops, s->hop_count, s, NULL, 0, fn, ctx);
        for (size_t i = 0; i < s->where_count; i++)
            if (s->where[i].path_len) visit_path(B, p, s->where[i].path, s->where[i].path_len, NULL, s->where[i].attr, 1, fn, ctx);
        if (s->value) walk_shape(B, p, s->value, fn, ctx);
        break;
    default: break;
    }
    for (size_t i = 0; i < s->member_count; i++) walk_shape(B, p, s->members[i], fn, ctx);
}

void mg_walk_pattern(builder *B, const kp_pattern *p, hop_visit fn, void *ctx)
{
    for (size_t i = 0; i < p->where_count; i++)
        if (p->where[i].path_len) visit_path(B, p, p->where[i].path, p->where[i].path_len, NULL, p->where[i].attr, 1, fn, ctx);
    walk_shape(B, p, p->returns, fn, ctx);
}

static void note_reach(builder *B, const kp_pattern *p, const mg_hop_use *u, void *ctx)
{
    size_t *cap = ctx, e = u->rel->target->index, *n = &B->reaching_count[e];
    if (*n && B->reaching[e][*n - 1] == p->index) return;
    size_t *slot = kp_arena_push(B->arena, (void **)&B->reaching[e], n, &cap[e], sizeof *slot);
    if (slot) *slot = p->index;
}

static int index_reaching(builder *B)
{
    const kp_model *m = B->m;
    B->reaching = kp_arena_alloc(B->arena, sizeof *B->reaching * (m->entity_count + 1));
    B->reaching_count = kp_arena_alloc(B->arena, sizeof *B->reaching_count * (m->entity_count + 1));
    size_t *cap = calloc(m->entity_count + 1, sizeof *cap);
    if (!B->reaching || !B->reaching_count || !cap) {
        free(cap);
        return kp_error_set(B->err, KP_ERR_NOMEM, NULL, 0, 0, "out of memory");
    }
    for (size_t i = 0; i < m->pattern_count; i++) mg_walk_pattern(B, m->patterns[i], note_reach, cap);
    free(cap);
    return 0;
}

void mg_walk_patterns_reaching(builder *B, const kp_entity *target, hop_visit fn, void *ctx)
{
    for (size_t i = 0; i < B->reaching_count[target->index]; i++)
        mg_walk_pattern(B, B->m->patterns[B->reaching[target->index][i]], fn, ctx);
}

/* ---- rule 1: embed or reference ---------------------------------------------------------------- */

typedef struct rel_stats {
    const kp_relation *rel;
    double together;        /* rps of patterns that read the children with the parent */
    double alone;           /* rps of patterns that reach the child otherwise */
    const kp_pattern *blocker; /* a pattern that needs the child on its own */
    const char *blocker_why;
    const kp_pattern **readers;
    size_t reader_count;
} rel_stats;

static void add_reader(builder *B, rel_stats *st, const kp_pattern *p)
{
    for (size_t i = 0; i < st->reader_count; i++)
        if (st->readers[i] == p) return;
    const kp_pattern **bigger = kp_arena_alloc(B->arena, sizeof *bigger * (st->reader_count + 1));
    if (st->reader_count) memcpy(bigger, st->readers, sizeof *bigger * st->reader_count);
    bigger[st->reader_count++] = p;
    st->readers = bigger;
}

typedef struct stats_ctx {
    rel_stats *st;
    double *counted;        /* per pattern: already counted for `together` */
} stats_ctx;

static void count_use(builder *B, const kp_pattern *p, const mg_hop_use *u, void *ctx)
{
    stats_ctx *c = ctx;
    rel_stats *st = c->st;
    const kp_relation *rel = st->rel;
    if (u->rel == &rel->forward) {
        if (!c->counted[p->index]) { st->together += mg_pattern_rate(B, p); c->counted[p->index] = 1; }
        add_reader(B, st, p);
        return;
    }
    if (u->rel->target == rel->to && u->rel != &rel->forward && !st->blocker) {
        st->blocker = p;
        st->blocker_why = mg_bprintf(B, "'%s' reaches %s through %s.%s, not from its %s", p->name, rel->to->name,
                                     u->rel->source->name, u->rel->name ? u->rel->name : "(inverse)", rel->from->name);
        st->alone += mg_pattern_rate(B, p);
    }
}

/* Can a pattern rooted at the child find it through its parent's document? */
static int root_through_parent(const kp_pattern *p, const kp_relation *rel)
{
    if (p->is_root_set) return 0;
    int pinned = 1;
    for (size_t k = 0; k < rel->fk_count; k++) {
        int found = 0;
        for (size_t i = 0; i < p->where_count; i++)
            if (p->where[i].path_len == 0 && p->where[i].op == KP_OP_EQ && p->where[i].attr == rel->fk_attrs[k] &&
                !(p->where[i].value.param && p->where[i].value.param->is_optional))
                found = 1;
        pinned &= found;
    }
    if (pinned) return 1;
    for (size_t i = 0; i < p->where_count; i++)
        if (p->where[i].path_len == 0 && p->where[i].op == KP_OP_EQ && p->where[i].attr->is_unique) return 1;
    return 0;
}

static double child_write_rate(builder *B, const kp_entity *e)
{
    if (!B->write_rate_of) {
        /* one pass over every write step, summed per entity in the order a scan per entity
         * would add them */
        size_t n = B->m->entity_count ? B->m->entity_count : 1;
        B->write_rate_of = kp_arena_alloc(B->arena, sizeof *B->write_rate_of * n);
        if (!B->write_rate_of) return 0;
        for (size_t w = 0; w < B->m->write_count; w++) {
            const kp_write *wr = B->m->writes[w];
            for (size_t s = 0; s < wr->step_count; s++) {
                double rows = wr->steps[s].rows;
                for (size_t h = 0; h < wr->steps[s].for_each_len; h++)
                    rows *= wr->steps[s].for_each[h]->fanout ? wr->steps[s].for_each[h]->fanout->avg : 1;
                B->write_rate_of[wr->steps[s].entity->index] += kp_write_rps(wr, B->mix) * rows;
            }
        }
    }
    return B->write_rate_of[e->index];
}

static const kp_hint *find_hint(builder *B, const char *kind, const kp_rel *rel)
{
    for (size_t i = 0; i < B->m->hint_count; i++) {
        const kp_hint *h = &B->m->hints[i];
        if (strcmp(h->database, "mongodb") == 0 && strcmp(h->kind, kind) == 0 && h->rel == rel) return h;
    }
    return NULL;
}

typedef struct candidate {
    const kp_relation *rel;
    rel_stats st;
    int embed;              /* the rules say embed */
    const char *why;
    const kp_hint *hint;
    double score;
} candidate;

/* Fills B->is_join_of and B->rooted_at in one pass over relations and patterns; the
 * lists are freed with the layout's arena (their arrays by free_entity_index). */
static int index_entities(builder *B)
{
    size_t n = B->m->entity_count ? B->m->entity_count : 1;
    B->is_join_of = kp_arena_alloc(B->arena, n);
    B->rooted_at = kp_arena_alloc(B->arena, sizeof *B->rooted_at * n);
    if (!B->is_join_of || !B->rooted_at) return -1;
    for (size_t r = 0; r < B->m->relation_count; r++)
        if (B->m->relations[r]->link == KP_LINK_THROUGH && B->m->relations[r]->through)
            B->is_join_of[B->m->relations[r]->through->index] = 1;
    for (size_t p = 0; p < B->m->pattern_count; p++)
        if (kp_index_list_push(&B->rooted_at[B->m->patterns[p]->root->index], p)) return -1;
    return 0;
}

static void free_entity_index(builder *B)
{
    for (size_t e = 0; B->rooted_at && e < B->m->entity_count; e++) kp_index_list_free(&B->rooted_at[e]);
}

static int is_join_entity(const builder *B, const kp_entity *e) { return B->is_join_of[e->index]; }

static void judge_rules(builder *B, candidate *c, double max, double at_max, double child, double parent, double writes);

static void judge(builder *B, candidate *c)
{
    const kp_relation *rel = c->rel;
    const kp_fanout *f = &rel->fanout;
    double child = mg_record_bytes(rel->to) + 4;
    double parent = mg_record_bytes(rel->from) + id_bytes(rel->from);
    double max = rel->cardinality == KP_CARD_ONE_ONE ? 1 : f->max;
    double at_max = parent + max * child;
    double writes = child_write_rate(B, rel->to);
    c->hint = find_hint(B, "embed", &rel->forward);
    const kp_hint *ref = find_hint(B, "reference", &rel->forward);
    if (ref) { c->hint = ref; c->embed = 0; c->why = "the model's hint asks for a reference"; return; }
    if (B->alternative == MG_REFERENCE_ALL) {
        c->hint = NULL;
        c->embed = 0;
        c->why = "the 'reference' alternative references every relation (each entity its own collection)";
        return;
    }
    const char *blocked = NULL;
    int sized = B->alternative != MG_EMBED_ALL; /* the 'embed' alternative ignores the size rules, so compare shows what they prevent */
    if (!sized) {
    } else if (f->is_unbounded) blocked = mg_bprintf(B, "%s grows without bound per %s (fan-out unbounded)", rel->to->name, rel->from->name);
    else if (at_max > KP_MG_MAX_DOC_BYTES)
        blocked = mg_bprintf(B, "a %s document with its maximum of %.0f %s would reach %.1f MB, above the 16 MB document limit",
                             rel->from->name, max, rel->to->name, at_max / 1048576);
    else if (max > 1000)
        blocked = mg_bprintf(B, "a %s has up to %.0f %s (large fan-out: every change would rewrite a big document)",
                             rel->from->name, max, rel->to->name);
    if (blocked) {
    } else if (c->st.blocker)
        blocked = c->st.blocker_why;
    else if (is_join_entity(B, rel->to))
        blocked = mg_bprintf(B, "%s is the join entity of a many-to-many relation", rel->to->name);
    for (size_t k = 0; !blocked && k < rel->fk_count; k++)
        if (rel->fk_attrs[k]->is_optional) blocked = mg_bprintf(B, "a %s may exist without a %s (%s is optional)", rel->to->name,
                                                                  rel->from->name, rel->fk_attrs[k]->name);
    const kp_index_list *rooted = &B->rooted_at[rel->to->index];
    for (size_t i = 0; !blocked && i < rooted->count; i++) {
        const kp_pattern *p = B->m->patterns[rooted->at[i]];
        if (!root_through_parent(p, rel))
            blocked = mg_bprintf(B, "'%s' lists %s on their own, across %s documents", p->name, rel->to->name, rel->from->name);
    }
    if (blocked) {
        c->embed = 0;
        c->why = blocked;
        if (c->hint) c->why = mg_bprintf(B, "the hint asks to embed, but %s", blocked);
        c->hint = c->hint ? c->hint : NULL;
        return;
    }
    const kp_hint *hint = c->hint;
    c->hint = NULL;
    if (B->alternative == MG_EMBED_ALL && c->st.together > 0) {
        c->embed = 1;
        c->score = c->st.together;
        c->why = mg_bprintf(B, "the 'embed' alternative embeds every relation read with its parent (%.0f req/s), whatever "
                               "its size: a %s document reaches %.1f KB at the maximum fan-out",
                            c->st.together, rel->from->name, at_max / 1024);
        return;
    }
    judge_rules(B, c, max, at_max, child, parent, writes);
    if (hint) {
        c->why = c->embed ? mg_bprintf(B, "the model's hint asks to embed, as the rules do: %s", c->why)
                          : mg_bprintf(B, "the model's hint asks to embed, overriding the rules (%s); cost: every %s write "
                                          "rewrites its %s document", c->why, rel->to->name, rel->from->name);
        c->hint = hint;
        c->embed = 1;
        c->score = 1e18;
    }
}

static void judge_rules(builder *B, candidate *c, double max, double at_max, double child, double parent, double writes)
{
    const kp_relation *rel = c->rel;
    const kp_fanout *f = &rel->fanout;
    if (c->st.together <= 0) {
        c->embed = 0;
        c->why = mg_bprintf(B, "no pattern reads %s with their %s, so embedding would only make %s documents bigger",
                            rel->to->name, rel->from->name, rel->from->name);
        return;
    }
    if (max <= 100) {
        c->embed = 1;
        c->score = c->st.together;
        c->why = mg_bprintf(B, "one-to-few (at most %.0f %s, a %s document stays near %.1f KB): the %.0f req/s that read "
                               "them with their %s get both in one find, and a child write rewrites one small document",
                            max, rel->to->name, rel->from->name, at_max / 1024, c->st.together, rel->from->name);
        return;
    }
    double amplification = (parent + f->avg * child) / child;
    if (c->st.together > writes * amplification) {
        c->embed = 1;
        c->score = c->st.together;
        c->why = mg_bprintf(B, "bounded to hundreds (max %.0f): reads together (%.0f req/s) outweigh child writes times the "
                               "write amplification (%.1f/s x %.0f)", max, c->st.together, writes, amplification);
    } else {
        c->embed = 0;
        c->why = mg_bprintf(B, "bounded to hundreds (max %.0f), but child writes times the write amplification (%.1f/s x %.0f) "
                               "outweigh the reads together (%.0f req/s)", max, writes, amplification, c->st.together);
    }
}

static mg_nested *add_nested(builder *B, mg_entity *parent)
{
    return kp_arena_push(B->arena, (void **)&parent->nested, &parent->nested_count, &parent->nested_cap, sizeof *parent->nested);
}

static int decide_embedding(builder *B)
{
    const kp_model *m = B->m;
    candidate *cands = kp_arena_alloc(B->arena, sizeof *cands * (m->relation_count + 1));
    double *counted = calloc(m->pattern_count + 1, sizeof *counted);
    if (!cands || !counted) { free(counted); return kp_error_set(B->err, KP_ERR_NOMEM, NULL, 0, 0, "out of memory"); }
    size_t n = 0;
    for (size_t r = 0; r < m->relation_count; r++) {
        const kp_relation *rel = m->relations[r];
        if (rel->link != KP_LINK_FOREIGN_KEY || rel->holder != rel->to || rel->from == rel->to) continue;
        candidate *c = &cands[n++];
        c->rel = rel;
        c->st.rel = rel;
        stats_ctx sc = {&c->st, counted};
        mg_walk_patterns_reaching(B, rel->to, count_use, &sc);
        /* only the patterns walked can have been counted: clear those */
        for (size_t i = 0; i < B->reaching_count[rel->to->index]; i++) counted[B->reaching[rel->to->index][i]] = 0;
        judge(B, c);
    }
    free(counted);
    /* accept embeddings by score; one level, one parent per child */
    for (;;) {
        candidate *best = NULL;
        for (size_t i = 0; i < n; i++)
            if (cands[i].embed == 1 && (!best || cands[i].score > best->score)) best = &cands[i];
        if (!best) break;
        mg_entity *parent = mg_entity_of(B, best->rel->from), *child = mg_entity_of(B, best->rel->to);
        const char *conflict = NULL;
        if (child->parent) conflict = mg_bprintf(B, "%s is already embedded in %s", child->entity->name, child->parent->entity->name);
        else if (parent->parent) conflict = mg_bprintf(B, "%s is itself embedded in %s (one level only)", parent->entity->name,
                                                       parent->parent->entity->name);
        else if (child->nested_count) conflict = mg_bprintf(B, "%s embeds its own children (one level only)", child->entity->name);
        if (conflict) {
            best->embed = 0;
            best->why = mg_bprintf(B, "%s; %s", best->why, conflict);
            continue;
        }
        best->embed = 2; /* accepted */
        child->parent = parent;
        child->parent_rel = &best->rel->forward;
        child->path = best->rel->name;
        child->is_single = best->rel->cardinality == KP_CARD_ONE_ONE;
        mg_nested *nest = add_nested(B, parent);
        nest->rel = &best->rel->forward;
        nest->child = child;
        nest->field = best->rel->name;
        nest->is_array = !child->is_single;
    }
    for (size_t i = 0; i < n; i++) {
        candidate *c = &cands[i];
        const kp_relation *rel = c->rel;
        kp_decision *x;
        if (c->embed == 2) {
            x = kp_design_decide(B->d, mg_bprintf(B, "%s.%s", rel->from->name, rel->name),
                                 rel->cardinality == KP_CARD_ONE_ONE
                                     ? mg_bprintf(B, "embed: the %s as a subdocument '%s' of each %s document", rel->to->name, rel->name, rel->from->name)
                                     : mg_bprintf(B, "embed: an array '%s' of %s in each %s document", rel->name, rel->to->name, rel->from->name),
                                 c->why);
        } else {
            const char *fks = "";
            for (size_t k = 0; k < rel->fk_count; k++) fks = mg_bprintf(B, "%s%s%s", fks, k ? ", " : "", rel->fk_attrs[k]->name);
            x = kp_design_decide(B->d, mg_bprintf(B, "%s.%s", rel->from->name, rel->name),
                                 mg_bprintf(B, "reference: %s documents hold %s (the %s key)", rel->to->name, fks, rel->from->name),
                                 c->why);
        }
        if (x) {
            x->hint = c->hint;
            for (size_t k = 0; k < c->st.reader_count; k++) kp_decision_add_pattern(B->d, x, c->st.readers[k]);
            if (c->st.blocker && c->why == c->st.blocker_why) kp_decision_add_pattern(B->d, x, c->st.blocker);
        }
    }
    return 0;
}

/* ---- rule 2: subsets ---------------------------------------------------------------------------- */

static int64_t subset_size(const kp_shape *s)
{
    if (s->limit_param) {
        if (s->limit_param->max) return (int64_t)s->limit_param->max->valuedouble;
        return 0;
    }
    return s->limit;
}

static int shape_reads_only_element(const kp_shape *s)
{
    /* members whose values need no other $each of their own (leaf hops are fine) */
    for (size_t i = 0; i < s->member_count; i++)
        if (s->members[i]->kind == KP_SHAPE_EACH || s->members[i]->kind == KP_SHAPE_COUNT) return 0;
    return 1;
}

typedef struct subset_ctx {
    const kp_relation *rel;
    const kp_pattern *best;
    const kp_shape *shape;
    double best_rps;
} subset_ctx;

static void find_subset_use(builder *B, const kp_pattern *p, const mg_hop_use *u, void *ctx)
{
    subset_ctx *c = ctx;
    const kp_shape *s = u->node;
    if (u->rel != &c->rel->forward || !s || s->kind != KP_SHAPE_EACH || u->count != 1) return;
    if (!s->declared_order_count || s->where_count || s == p->paged || !shape_reads_only_element(s)) return;
    int64_t n = subset_size(s);
    if (n <= 0 || n > 100) return;
    if (!c->best || mg_pattern_rate(B, p) > c->best_rps) {
        c->best = p;
        c->shape = s;
        c->best_rps = mg_pattern_rate(B, p);
    }
}

static void decide_subsets(builder *B)
{
    const kp_model *m = B->m;
    for (size_t r = 0; r < m->relation_count; r++) {
        const kp_relation *rel = m->relations[r];
        if (rel->link != KP_LINK_FOREIGN_KEY || rel->holder != rel->to || rel->from == rel->to) continue;
        if (rel->cardinality != KP_CARD_ONE_MANY) continue;
        mg_entity *parent = mg_entity_of(B, rel->from), *child = mg_entity_of(B, rel->to);
        if (child->parent || parent->parent) continue;
        subset_ctx c = {rel, NULL, NULL, 0};
        mg_walk_patterns_reaching(B, rel->to, find_subset_use, &c);
        if (!c.best) continue;
        double writes = child_write_rate(B, rel->to);
        int64_t n = subset_size(c.shape);
        const char *order = "";
        for (size_t k = 0; k < c.shape->declared_order_count; k++)
            order = mg_bprintf(B, "%s%s%s %s", order, k ? ", " : "", c.shape->order[k].attr->name, c.shape->order[k].is_desc ? "desc" : "asc");
        const char *subject = mg_bprintf(B, "%s.%s subset", rel->from->name, rel->name);
        if (c.best_rps > writes) {
            mg_nested *nest = add_nested(B, parent);
            nest->rel = &rel->forward;
            nest->child = child;
            nest->field = rel->name;
            nest->is_array = 1;
            nest->subset = n;
            nest->order_shape = c.shape;
            kp_decision *x = kp_design_decide(
                B->d, subject,
                mg_bprintf(B, "subset: the first %lld %s by %s copied into '%s' of each %s document; all of them stay in the %s collection",
                           (long long)n, rel->to->name, order, rel->name, rel->from->name, rel->to->name),
                mg_bprintf(B, "rule: read rate x one saved round trip > child write rate x one extra %s update; here %.0f req/s "
                              "of '%s' > %.1f %s writes/s, so the first page needs no second find", rel->from->name, c.best_rps,
                           c.best->name, writes, rel->to->name));
            kp_decision_add_pattern(B->d, x, c.best);
        } else {
            kp_decision *x = kp_design_decide(
                B->d, subject, "no subset",
                mg_bprintf(B, "rule: read rate x one saved round trip > child write rate x one extra %s update; here %.0f req/s "
                              "of '%s' <= %.1f %s writes/s, so '%s' reads the %s collection", rel->from->name, c.best_rps,
                           c.best->name, writes, rel->to->name, c.best->name, rel->to->name));
            kp_decision_add_pattern(B->d, x, c.best);
        }
    }
}

/* ---- rule 3: extended references ------------------------------------------------------------------ */

/* Attributes a hop use reads on the hop's target, or -1 when the use needs the whole
 * target (further hops, nested shapes). */
static int use_attrs(const mg_hop_use *u, const kp_attr **out, size_t cap, size_t *n)
{
    *n = 0;
    if (u->index + 1 != u->count) return -1;
    if (u->is_cond) return -1;
    if (u->leaf) {
        if (u->leaf->key_index < 0 && *n < cap) out[(*n)++] = u->leaf;
        return 0;
    }
    if (!u->node || u->node->kind != KP_SHAPE_ONE) return -1;
    for (size_t i = 0; i < u->node->member_count; i++) {
        const kp_shape *m = u->node->members[i];
        if (m->kind == KP_SHAPE_PARAM || m->kind == KP_SHAPE_TOKEN) continue;
        if (m->kind != KP_SHAPE_ATTR || m->path_len) return -1;
        if (m->attr->key_index < 0 && *n < cap) out[(*n)++] = m->attr;
    }
    return 0;
}

typedef struct extref_ctx {
    const kp_rel *rel;
    const kp_attr *attrs[16];
    size_t attr_count;
    int is_too_many;
    double benefit;
    const kp_pattern *readers[32];
    size_t reader_count;
} extref_ctx;

/* What the patterns read over h (c) as the shared rule weighs it (kp_copy_is_few): unfit
 * beyond KP_COPY_ATTRS attributes. */
static kp_copy_need copy_need(const kp_rel *h, const extref_ctx *c)
{
    kp_copy_need need = {.rel = h, .is_unfit = c->is_too_many || c->attr_count > KP_COPY_ATTRS};
    if (!need.is_unfit) {
        need.attr_count = c->attr_count;
        memcpy(need.attrs, c->attrs, sizeof *c->attrs * c->attr_count);
    }
    return need;
}

/* What the patterns that reach h's target read of it over h, gathered by `collect` (the
 * copies' three deciders: over a reference, a join, an array of references). */
static void read_over(builder *B, const kp_rel *h, hop_visit collect, extref_ctx *c)
{
    memset(c, 0, sizeof *c);
    c->rel = h;
    mg_walk_patterns_reaching(B, h->target, collect, c);
}

/* "title, endsAt": the attributes c holds, for the decision. */
static const char *fields_text(builder *B, const extref_ctx *c)
{
    const char *fields = "";
    for (size_t k = 0; k < c->attr_count; k++) fields = mg_bprintf(B, "%s%s%s", fields, k ? ", " : "", c->attrs[k]->name);
    return fields;
}

/* Adds what pattern p reads of the target (n attributes) to c, and p as a reader once. */
static void extref_add(builder *B, extref_ctx *c, const kp_pattern *p, const kp_attr *const *attrs, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        int seen = 0;
        for (size_t k = 0; k < c->attr_count; k++) seen |= c->attrs[k] == attrs[i];
        if (seen) continue;
        if (c->attr_count == 16) { c->is_too_many = 1; continue; }
        c->attrs[c->attr_count++] = attrs[i];
    }
    int counted = 0;
    for (size_t k = 0; k < c->reader_count; k++) counted |= c->readers[k] == p;
    if (!counted && c->reader_count < 32) {
        c->readers[c->reader_count++] = p;
        c->benefit += mg_pattern_rate(B, p);
    }
}

static void collect_extref(builder *B, const kp_pattern *p, const mg_hop_use *u, void *ctx)
{
    extref_ctx *c = ctx;
    if (u->rel != c->rel) return;
    const kp_attr *attrs[16];
    size_t n;
    if (use_attrs(u, attrs, 16, &n)) return;
    extref_add(B, c, p, attrs, n);
}

/* Adds to me the extended reference over h that c collected (its field the relation's
 * name); -1 when out of memory. */
static int push_extref(builder *B, mg_entity *me, const kp_rel *h, const extref_ctx *c)
{
    /* h's extended reference, or a new one; c's attributes it lacks added to it */
    mg_extref *x = NULL;
    for (size_t i = 0; i < me->extref_count && !x; i++)
        if (me->extrefs[i].rel == h) x = &me->extrefs[i];
    if (!x) {
        x = kp_arena_push(B->arena, (void **)&me->extrefs, &me->extref_count, &me->extref_cap, sizeof *me->extrefs);
        if (!x) { B->is_out_of_memory = 1; return -1; }
        x->rel = h;
        x->field = h->name;
    }
    const kp_attr **attrs = kp_arena_alloc(B->arena, sizeof *attrs * (x->attr_count + c->attr_count + 1));
    if (!attrs) { B->is_out_of_memory = 1; return -1; }
    if (x->attr_count) memcpy(attrs, x->attrs, sizeof *attrs * x->attr_count);
    size_t n = x->attr_count;
    for (size_t k = 0; k < c->attr_count; k++) {
        int dup = 0;
        for (size_t a = 0; a < x->attr_count; a++) dup |= attrs[a] == c->attrs[k];
        if (!dup) attrs[n++] = c->attrs[k];
    }
    x->attrs = attrs;
    x->attr_count = n;
    return 0;
}

/* The same for the join documents of an N:M: what a listing over the hop returns of its
 * targets (their own fields, those it sorts by), so the join documents answer it with no
 * find of the targets; a listing with conditions on them, or reading further, is unfit. */
static void collect_join_extref(builder *B, const kp_pattern *p, const mg_hop_use *u, void *ctx)
{
    extref_ctx *c = ctx;
    const kp_shape *s = u->node;
    if (u->rel != c->rel) return;
    if (u->is_cond || u->index + 1 != u->count || !s || s->kind != KP_SHAPE_EACH || s->where_count) { c->is_too_many = 1; return; }
    const kp_attr *need[16];
    size_t n = 0;
    for (size_t k = 0; k < s->order_count && n < 16; k++)
        if (s->order[k].attr->key_index < 0) need[n++] = s->order[k].attr;
    for (size_t i = 0; i <= s->member_count; i++) {
        const kp_shape *m = i < s->member_count ? s->members[i] : s->value;
        if (!m || m->kind == KP_SHAPE_PARAM || m->kind == KP_SHAPE_TOKEN) continue;
        if (m->kind != KP_SHAPE_ATTR || m->path_len) { c->is_too_many = 1; return; }
        if (m->attr->key_index < 0 && n < 16) need[n++] = m->attr;
    }
    extref_add(B, c, p, need, n);
}

const kp_rel *mg_two_hop_listing(builder *B, const kp_shape *s)
{
    if (!s || s->kind != KP_SHAPE_EACH || s->hop_count != 2 || (s->limit <= 0 && !s->limit_param)) return NULL;
    for (size_t i = 0; i < 2; i++) {
        const kp_relation *rel = s->hops[i]->relation;
        if (s->hops[i]->is_inverse || rel->link != KP_LINK_FOREIGN_KEY || rel->holder != rel->to || !s->hops[i]->is_many)
            return NULL;
    }
    const kp_entity *t = s->hops[1]->target;
    if (mg_entity_of(B, t)->parent) return NULL;
    /* the middle documents hold them already (a subset copy), which reads fewer */
    const mg_entity *middle = mg_entity_of(B, s->hops[0]->target);
    for (size_t i = 0; i < middle->nested_count; i++)
        if (middle->nested[i].rel == s->hops[1]) return NULL;
    const kp_relation *outer = s->hops[0]->relation;
    for (size_t k = 0; k < outer->fk_count; k++)
        if (outer->fk_attrs[k]->key_index >= 0) return NULL;
    for (size_t k = 0; k < s->where_count; k++)
        if (s->where[k].path_len || s->where[k].attr->entity != t) return NULL;
    for (size_t k = 0; k < s->order_count; k++)
        if (s->order[k].attr->entity != t || s->order[k].attr->is_optional || s->order[k].attr->derived) return NULL;
    for (size_t r = 0; r < t->rel_count; r++)
        if (t->rels[r]->relation == s->hops[1]->relation && !t->rels[r]->is_many) return t->rels[r];
    return NULL;
}

const mg_extref *mg_two_hop_extref(builder *B, const kp_shape *s)
{
    const kp_rel *h = mg_two_hop_listing(B, s);
    if (!h) return NULL;
    const mg_entity *me = mg_entity_of(B, h->source);
    const kp_relation *outer = s->hops[0]->relation;
    for (size_t i = 0; i < me->extref_count; i++) {
        const mg_extref *x = &me->extrefs[i];
        if (x->rel != h) continue;
        size_t held = 0;
        for (size_t k = 0; k < outer->fk_count; k++)
            for (size_t a = 0; a < x->attr_count; a++) held += x->attrs[a] == outer->fk_attrs[k];
        if (held == outer->fk_count) return x;
    }
    return NULL;
}

/* The listings of mg_two_hop_listing: the last records copy the middle records' reference
 * to the first (an order line holds its order's userId, in its 'order' extended reference),
 * so one find on their collection, keyed by it and sorted as the listing asks, reads a
 * page, where the design found every middle record of the parent and each one's records
 * and sorted them in the client. Taken where the finds saved (the middle records a call
 * reads) outweigh the documents the writes that change the reference rewrite. */
typedef struct two_hop_ctx {
    kp_strmap decided;          /* subject -> its decision's index + 1: one decision per copy */
} two_hop_ctx;

static void collect_two_hop(builder *B, const kp_pattern *p, const mg_hop_use *u, void *ctx)
{
    two_hop_ctx *c = ctx;
    const kp_shape *s = u->node;
    if (u->is_cond || u->index != 1 || u->count != 2 || !s) return;
    const kp_rel *h = mg_two_hop_listing(B, s);
    if (!h) return;
    const kp_relation *outer = s->hops[0]->relation;
    extref_ctx x = {.rel = h};
    for (size_t k = 0; k < outer->fk_count && x.attr_count < 16; k++) x.attrs[x.attr_count++] = outer->fk_attrs[k];
    const char *fields = fields_text(B, &x);
    const char *subject = mg_bprintf(B, "%s.%s.{%s}", h->source->name, h->name ? h->name : "?", fields);
    size_t seen = (size_t)(uintptr_t)kp_strmap_get(&c->decided, subject);
    if (seen && seen <= B->d->decision_count && mg_two_hop_extref(B, s)) {
        /* taken for an earlier listing: this one reads the same copy */
        kp_decision_add_pattern(B->d, &B->d->decisions[seen - 1], p);
        return;
    }
    kp_copy_need need = copy_need(h, &x);
    double cost = kp_copy_write_rate(B->m, B->mix, &need);
    double middles = s->hops[0]->fanout ? s->hops[0]->fanout->avg : 1;
    double benefit = mg_pattern_rate(B, p) * middles;
    int take = benefit > cost;
    if (take && !mg_two_hop_extref(B, s) && push_extref(B, mg_entity_of(B, h->source), h, &x)) return;
    kp_decision *d = kp_design_decide(
        B->d, subject,
        take ? mg_bprintf(B, "extended reference: copy %s.{%s} into '%s' of each %s document", h->target->name, fields,
                          h->name ? h->name : "?", h->source->name)
             : mg_bprintf(B, "reference: find the %s, then their %s", h->target->name, h->source->name),
        mg_bprintf(B, "'%s' lists the %s of a %s's %s: with %s copied, one find on %s keyed by it and sorted as the "
                      "listing asks reads a page, where a find of the %s and one of their %s read every one and the "
                      "client sorts; the %s finds it saves (%.0f/s) %s the %s documents the writes that change %s "
                      "rewrite (%.1f/s)",
                   p->name, h->source->name, s->hops[0]->source->name, h->target->name, fields, h->source->name,
                   h->target->name, h->source->name, h->target->name, benefit, take ? "outweigh" : "do not outweigh",
                   h->source->name, fields, cost));
    if (d) {
        kp_decision_add_pattern(B->d, d, p);
        if (take && kp_strmap_put(B->arena, &c->decided, subject, (void *)(uintptr_t)B->d->decision_count))
            B->is_out_of_memory = 1;
    }
}

static void decide_two_hop_extrefs(builder *B)
{
    two_hop_ctx c = {.decided = {0}};
    for (size_t i = 0; i < B->m->pattern_count; i++) mg_walk_pattern(B, B->m->patterns[i], collect_two_hop, &c);
}

/* Extended references in the join documents of an N:M (the join collection holds what its
 * listings return of the targets), by the rule of decide_extrefs: the finds of the targets
 * saved against the join documents the writes that change the copied fields rewrite. */
static void decide_join_extrefs(builder *B)
{
    const kp_model *m = B->m;
    for (size_t r = 0; r < m->relation_count; r++) {
        const kp_relation *rel = m->relations[r];
        if (rel->link != KP_LINK_THROUGH || !rel->through || rel->from == rel->to) continue;
        mg_entity *je = mg_entity_of(B, rel->through);
        if (je->parent) continue;
        for (int dir = 0; dir < 2; dir++) {
            const kp_rel *h = dir ? &rel->inverse : &rel->forward;
            extref_ctx c;
            read_over(B, h, collect_join_extref, &c);
            if (!c.reader_count || !c.attr_count) continue;
            kp_copy_need need = copy_need(h, &c);
            int few = kp_copy_is_few(&need, mg_attr_bytes);
            double cost = few ? kp_copy_write_rate(m, B->mix, &need) : 0;
            int take = few && c.benefit > cost;
            const char *fields = fields_text(B, &c);
            if (take && push_extref(B, je, h, &c)) return;
            kp_decision *d = kp_design_decide(
                B->d, mg_bprintf(B, "%s.%s", rel->through->name, h->name ? h->name : "?"),
                take ? mg_bprintf(B, "extended reference: copy %s.{%s} into '%s' of each %s document", h->target->name, fields,
                                  h->name, rel->through->name)
                     : mg_bprintf(B, "reference: find the %s of the join documents by _id", h->target->name),
                !few ? mg_bprintf(B, "the listings read %s of the %s: too much to copy into every join document",
                                  c.is_too_many ? "more" : fields, h->target->name)
                     : mg_bprintf(B, "the finds of the %s it saves (%.0f req/s) %s the join documents the writes that change "
                                     "%s rewrite (%.1f/s)",
                                  h->target->name, c.benefit, take ? "outweigh" : "do not outweigh", fields, cost));
            for (size_t k = 0; d && k < c.reader_count; k++) kp_decision_add_pattern(B->d, d, c.readers[k]);
        }
    }
}

/* Extended references over an array of references a document holds (auction's Item.tagIds):
 * beside the array, an array of what the listings over it return of the targets, one per
 * element in the array's order (collect_join_extref's rule for what they read), so the
 * document answers them with no find of the targets. Taken where the finds saved outweigh
 * the writes, and only where the copies never move (kp_copy_array_goes_stale): an array's
 * copies are rewritten with the documents that hold them alone. */
static void decide_array_extrefs(builder *B)
{
    const kp_model *m = B->m;
    for (size_t e = 0; e < m->entity_count; e++) {
        const kp_entity *ent = m->entities[e];
        mg_entity *me = mg_entity_of(B, ent);
        for (size_t r = 0; r < ent->rel_count; r++) {
            const kp_rel *h = ent->rels[r];
            if (h->relation->link != KP_LINK_ARRAY || h->is_inverse || h->target == ent || !h->name) continue;
            extref_ctx c;
            read_over(B, h, collect_join_extref, &c);
            if (!c.reader_count || !c.attr_count) continue;
            kp_copy_need need = copy_need(h, &c);
            int few = kp_copy_is_few(&need, mg_attr_bytes);
            double cost = few ? kp_copy_write_rate(m, B->mix, &need) : 0;
            int stale = few && kp_copy_array_goes_stale(h, cost);
            int take = few && c.benefit > cost && !stale;
            const char *fields = fields_text(B, &c);
            if (take && push_extref(B, me, h, &c)) return;
            kp_decision *d = kp_design_decide(
                B->d, mg_bprintf(B, "%s.%s", ent->name, h->name),
                take ? mg_bprintf(B, "extended reference: copy %s.{%s} into '%s' of each %s document, one per element of %s",
                                  h->target->name, fields, h->name, ent->name, h->relation->array_attr->name)
                     : mg_bprintf(B, "reference: find the %s of %s by _id", h->target->name, h->relation->array_attr->name),
                !few ? mg_bprintf(B, "the listings read %s of the %s: too much to copy into every %s document",
                                  c.is_too_many ? "more" : fields, h->target->name, ent->name)
                : stale ? mg_bprintf(B, "a copy would save %.0f finds/s, but writes change or delete %s documents, whose copies "
                                        "in an array keyplan does not keep in step", c.benefit, h->target->name)
                : cost == 0 ? mg_bprintf(B, "it saves a find of the %s per read (%.0f req/s), and no write changes %s: the "
                                            "copies never move", h->target->name, c.benefit, fields)
                     : mg_bprintf(B, "the finds of the %s it saves (%.0f req/s) %s the documents the writes that change %s "
                                     "rewrite (%.1f/s)",
                                  h->target->name, c.benefit, take ? "outweigh" : "do not outweigh", fields, cost));
            for (size_t k = 0; d && k < c.reader_count; k++) kp_decision_add_pattern(B->d, d, c.readers[k]);
        }
    }
}

/* A copy keyplan keeps on a record (core/kept_copies.c) whose source this document embeds
 * already, over to-one hops (Order.shippingCarrier, and the order embeds its shipping): the
 * document holds it once, at the embedded field, and finds and indexes read it there. */
static void decide_aliases(builder *B)
{
    for (size_t e = 0; e < B->L->entity_count; e++) {
        mg_entity *me = &B->L->entities[e];
        for (size_t a = 0; a < me->entity->attr_count; a++) {
            const kp_attr *attr = me->entity->attrs[a];
            if (!attr->is_kept || !attr->copy_of || !attr->copy_of->path_len) continue;
            const mg_entity *at = me;
            const char *path = "";
            for (size_t h = 0; at && h < attr->copy_of->path_len; h++) {
                const mg_nested *n = NULL;
                for (size_t i = 0; i < at->nested_count && !n; i++)
                    if (at->nested[i].rel == attr->copy_of->path[h] && !at->nested[i].is_array && !at->nested[i].subset)
                        n = &at->nested[i];
                path = n ? mg_bprintf(B, "%s%s%s", path, *path ? "." : "", n->field) : NULL;
                at = n ? n->child : NULL;
            }
            if (!at || !path) continue;
            path = mg_bprintf(B, "%s.%s", path, attr->copy_of->source->name);
            mg_alias *alias = kp_arena_push(B->arena, (void **)&me->aliases, &me->alias_count, &me->alias_cap, sizeof *alias);
            if (!alias) { B->is_out_of_memory = 1; return; }
            alias->attr = attr;
            alias->path = path;
            kp_design_decide(B->d, kp_design_printf(B->d, "%s.%s in the %s document", me->entity->name, attr->name, me->entity->name),
                             kp_design_printf(B->d, "the embedded %s answers it: not stored twice", path),
                             kp_design_printf(B->d, "the %s document embeds %s, the copy's source, so finds test it and "
                                                    "indexes key it there",
                                              me->entity->name, attr->copy_of->path[0]->name));
        }
    }
}

static void decide_extrefs(builder *B)
{
    const kp_model *m = B->m;
    for (size_t e = 0; e < m->entity_count; e++) {
        const kp_entity *ent = m->entities[e];
        mg_entity *me = mg_entity_of(B, ent);
        for (size_t r = 0; r < ent->rel_count; r++) {
            const kp_rel *h = ent->rels[r];
            const kp_relation *rel = h->relation;
            if (h->is_many || rel->link != KP_LINK_FOREIGN_KEY || rel->holder != ent || h->target == ent) continue;
            if (me->parent_rel && me->parent_rel->relation == rel) continue; /* the containing document answers it */
            const kp_hint *hint = find_hint(B, "embed", h);
            extref_ctx c;
            read_over(B, h, collect_extref, &c);
            if (!c.reader_count && !hint) continue;
            if (c.attr_count == 0) {
                if (!hint) continue;
                for (size_t k = 0; k < h->target->attr_count && c.attr_count < 16; k++)
                    if (h->target->attrs[k]->key_index < 0) c.attrs[c.attr_count++] = h->target->attrs[k];
            }
            double bytes = 0;
            for (size_t k = 0; k < c.attr_count; k++) bytes += mg_attr_bytes(c.attrs[k]);
            /* the writes that change a copied field, times the copies each rewrites */
            double copies = rel->fanout.avg > 0 ? rel->fanout.avg : 1;
            double cost = 0;
            for (size_t i = 0; i < h->target->write_step_count; i++) {
                const kp_write_step *st = h->target->write_steps[i];
                if (st->op != KP_WRITE_UPDATE && st->op != KP_WRITE_UPSERT) continue;
                int touches = 0;
                for (size_t a = 0; a < st->assign_count; a++)
                    for (size_t k = 0; k < c.attr_count; k++) touches |= st->assigns[a].attr == c.attrs[k];
                if (touches) cost += kp_write_rps(h->target->step_writes[i], B->mix) * st->rows * copies;
            }
            const char *fields = fields_text(B, &c);
            const char *subject = mg_bprintf(B, "%s.%s", ent->name, h->name ? h->name : "?");
            kp_copy_need need = copy_need(h, &c);
            int few = kp_copy_is_few(&need, mg_attr_bytes);
            int take = hint ? 1 : few && c.benefit > cost;
            if (take && push_extref(B, me, h, &c)) return;
            kp_decision *d = kp_design_decide(
                B->d, subject,
                take ? mg_bprintf(B, "extended reference: copy %s.{%s} into '%s' of each %s document", h->target->name, fields,
                                  h->name, ent->name)
                     : mg_bprintf(B, "reference: read the %s by key with a follow-up find", h->target->name),
                hint ? mg_bprintf(B, "the model's hint asks to embed %s in %s: its fields are copied (an extended reference), "
                                     "kept equal by every write that changes them (%.1f document updates/s)",
                                  h->target->name, ent->name, cost)
                     : !few ? mg_bprintf(B, "the patterns read %zu fields (%.0f bytes) of the %s: too many to copy",
                                        c.attr_count, bytes, h->target->name)
                     : mg_bprintf(B, "reads that save a follow-up find (%.0f req/s) %s the writes that change the copied fields "
                                     "times the copies each rewrites (%.1f/s)",
                                  c.benefit, take ? "outweigh" : "do not outweigh", cost));
            if (d) {
                d->hint = hint;
                for (size_t k = 0; k < c.reader_count; k++) kp_decision_add_pattern(B->d, d, c.readers[k]);
            }
        }
    }
}

/* ---- collections -------------------------------------------------------------------------------------- */

static void make_collections(builder *B)
{
    const kp_model *m = B->m;
    B->L->collections = kp_arena_alloc(B->arena, sizeof *B->L->collections * (m->entity_count ? m->entity_count : 1));
    for (size_t e = 0; e < m->entity_count; e++) {
        mg_entity *me = mg_entity_of(B, m->entities[e]);
        if (me->parent) continue;
        mg_collection *c = kp_arena_alloc(B->arena, sizeof *c);
        c->name = m->entities[e]->name;
        c->owner = me;
        me->collection = c;
        B->L->collections[B->L->collection_count++] = c;
        const kp_entity *ent = me->entity;
        const char *id = ent->key_count == 1 ? mg_bprintf(B, "_id = the %s value", ent->key[0]->name) : "_id = \"";
        if (ent->key_count > 1) {
            for (size_t k = 0; k < ent->key_count; k++) id = mg_bprintf(B, "%s%s<%s>", id, k ? "|" : "", ent->key[k]->name);
            id = mg_bprintf(B, "%s\" (the key parts joined by '|', escaped)", id);
        }
        double at_max = mg_document_max_bytes(me);
        if (me->nested_count && at_max > KP_MG_MAX_DOC_BYTES / 4)
            kp_design_note(B->d, "a %s document with every embedded array at its maximum fan-out reaches %.1f MB (the limit is 16 MB)",
                           c->name, at_max / 1048576);
        kp_design_decide(B->d, mg_bprintf(B, "%s _id", c->name), id,
                         ent->key_count > 1
                             ? "derived from the entity key, never generated: a resumed or repeated seed writes the same _id and "
                               "cannot duplicate a document; one scalar rather than a subdocument, so a look-up by key is an "
                               "_id probe on every server (FerretDB reads a whole collection for a subdocument _id); the key "
                               "attributes also stay as fields, for indexes and the schema"
                             : "derived from the entity key, never generated: a resumed or repeated seed writes the same _id and "
                               "cannot duplicate a document; the key attribute also stays as a field, for indexes and the schema");
    }
}

/* ---- rule 4: computed values --------------------------------------------------------------------------- */

static void decide_computed(builder *B)
{
    const kp_model *m = B->m;
    static const char *const fns[] = {"count", "sum", "min", "max"};
    /* the patterns (in model order) that return each derived attribute, found in one walk
     * of every pattern's shape; slot = the attribute's place among all entities' attributes */
    size_t *first_slot = calloc(m->entity_count + 1, sizeof *first_slot);
    if (!first_slot) return;
    for (size_t e = 0; e < m->entity_count; e++) first_slot[e + 1] = first_slot[e] + m->entities[e]->attr_count;
    kp_index_list *users = calloc(first_slot[m->entity_count] + 1, sizeof *users);
    if (!users) { free(first_slot); return; }
    for (size_t p = 0; p < m->pattern_count; p++) {
        const kp_shape *stack[256];
        size_t top = 0;
        stack[top++] = m->patterns[p]->returns;
        while (top) {
            const kp_shape *s = stack[--top];
            if (s->kind == KP_SHAPE_ATTR && s->attr && s->attr->derived && s->attr->entity)
                kp_index_list_push(&users[first_slot[s->attr->entity->index] + s->attr->index], p);
            for (size_t i = 0; i < s->member_count && top < 255; i++) stack[top++] = s->members[i];
        }
    }
    for (size_t e = 0; e < m->entity_count; e++)
        for (size_t a = 0; a < m->entities[e]->attr_count; a++) {
            const kp_attr *attr = m->entities[e]->attrs[a];
            if (!attr->derived || attr->is_kept) continue; /* a kept count is every design's decision (design.c) */
            const kp_derived *dv = attr->derived;
            const char *path = "";
            for (size_t h = 0; h < dv->path_len; h++) path = mg_bprintf(B, "%s%s%s", path, h ? "." : "", dv->path[h]->name ? dv->path[h]->name : "?");
            const kp_entity *source = dv->path_len ? kp_derived_changed_by(dv) : m->entities[e];
            kp_decision *x = kp_design_decide(
                B->d, mg_bprintf(B, "%s.%s", m->entities[e]->name, attr->name),
                mg_bprintf(B, "computed: the %s of %s stored on the %s document", fns[dv->fn], path, m->entities[e]->name),
                mg_bprintf(B, "every %s write that changes it also updates the %s document, so reads never aggregate "
                              "(FerretDB's $group has only $sum and $count, and no pattern pays for a pipeline)",
                           source->name, m->entities[e]->name));
            const kp_index_list *used = &users[first_slot[e] + a];
            for (size_t k = 0; x && k < used->count; k++) kp_decision_add_pattern(B->d, x, m->patterns[used->at[k]]);
        }
    for (size_t i = 0; i < first_slot[m->entity_count]; i++) kp_index_list_free(&users[i]);
    free(users);
    free(first_slot);
}

/* ---- the layout's arena, the design ------------------------------------------------------------------ */

static void free_layout(void *layout)
{
    mg_layout *L = layout;
    kp_arena_free(&L->arena);
    free(L);
}

static void fingerprint(builder *B)
{
    uint64_t h = 1469598103934665603ULL;
#define MIX(s) do { for (const char *c_ = (s); c_ && *c_; c_++) { h ^= (unsigned char)*c_; h *= 1099511628211ULL; } h ^= 0xff; h *= 1099511628211ULL; } while (0)
    for (size_t e = 0; e < B->L->entity_count; e++) {
        const mg_entity *me = &B->L->entities[e];
        MIX(me->entity->name);
        MIX(me->collection ? me->collection->name : "-");
        MIX(me->parent ? me->parent->entity->name : "-");
        MIX(me->path);
        for (size_t i = 0; i < me->nested_count; i++) {
            char n[32];
            snprintf(n, sizeof n, "%lld", (long long)me->nested[i].subset);
            MIX(me->nested[i].field);
            MIX(n);
        }
        for (size_t i = 0; i < me->extref_count; i++) {
            MIX(me->extrefs[i].field);
            for (size_t k = 0; k < me->extrefs[i].attr_count; k++) MIX(me->extrefs[i].attrs[k]->name);
        }
    }
    for (size_t c = 0; c < B->L->collection_count; c++) {
        const mg_collection *col = B->L->collections[c];
        for (size_t i = 0; i < col->index_count; i++)
            if (!col->indexes[i]->is_redundant) MIX(col->indexes[i]->name);
    }
#undef MIX
    snprintf(B->d->fingerprint, sizeof B->d->fingerprint, "%016llx", (unsigned long long)h);
}

/* One candidate: the rules' design, or one of the alternatives compare shows. */
static int propose_one(const kp_model *m, const kp_mix *mix, int alternative, kp_design **out, kp_error *err)
{
    extern const kp_backend kp_mongodb_backend;
    static const char *const names[] = {"documents", "embed", "reference"};
    *out = NULL;
    kp_design *d = kp_design_new(&kp_mongodb_backend, m, mix, names[alternative]);
    mg_layout *L = calloc(1, sizeof *L);
    if (!d || !L) {
        kp_design_free(d);
        free(L);
        return kp_error_set(err, KP_ERR_NOMEM, NULL, 0, 0, "out of memory");
    }
    d->layout = L;
    d->free_layout = free_layout;
    builder B = {m, mix, d, L, &L->arena, err, alternative, NULL, NULL, NULL, NULL, NULL, 0};
    L->entity_count = m->entity_count;
    L->entities = kp_arena_alloc(&L->arena, sizeof *L->entities * (m->entity_count ? m->entity_count : 1));
    L->roots = kp_arena_alloc(&L->arena, sizeof *L->roots * (m->pattern_count ? m->pattern_count : 1));
    for (size_t e = 0; e < m->entity_count; e++) L->entities[e].entity = m->entities[e];
    if (index_entities(&B)) { free_entity_index(&B); kp_design_free(d); return kp_error_set(err, KP_ERR_NOMEM, NULL, 0, 0, "out of memory"); }
    if (index_reaching(&B) || decide_embedding(&B)) { free_entity_index(&B); kp_design_free(d); return -1; }
    free_entity_index(&B); /* only the embedding rules read it */
    B.rooted_at = NULL;
    make_collections(&B);
    decide_subsets(&B);
    decide_extrefs(&B);
    decide_two_hop_extrefs(&B);
    decide_join_extrefs(&B);
    decide_array_extrefs(&B);
    decide_aliases(&B);
    decide_computed(&B);
    fix_sizes(&B);
    int rc = 0;
    for (size_t i = 0; rc == 0 && i < m->pattern_count; i++) rc = mg_plan_pattern(&B, m->patterns[i], &L->roots[i]);
    if (rc == 0 && B.is_out_of_memory) rc = kp_error_set(err, KP_ERR_NOMEM, NULL, 0, 0, "out of memory");
    if (rc) { kp_design_free(d); return -1; }
    mg_finish_indexes(&B);
    for (size_t i = 0; i < m->pattern_count; i++) mg_plan_ops(&B, m->patterns[i], L->roots[i], &d->plans[i]);
    mg_plan_writes(&B);
    mg_describe_collections(&B);
    size_t embedded = 0, indexes = 0;
    for (size_t e = 0; e < L->entity_count; e++) embedded += L->entities[e].parent != NULL;
    for (size_t c = 0; c < L->collection_count; c++)
        for (size_t i = 0; i < L->collections[c]->index_count; i++) indexes += !L->collections[c]->indexes[i]->is_redundant;
    d->summary = kp_design_printf(d, "%zu collection%s, %zu embedded entit%s, %zu secondary index%s", L->collection_count,
                                  L->collection_count == 1 ? "" : "s", embedded, embedded == 1 ? "y" : "ies", indexes,
                                  indexes == 1 ? "" : "es");
    fingerprint(&B);
    *out = d;
    return 0;
}

int kp_mg_propose(const kp_model *m, const kp_propose_options *options, kp_design_list *out, kp_error *err)
{
    out->items = NULL;
    out->count = 0;
    const kp_mix *mix = options && options->mix ? options->mix : m->default_mix;
    size_t want = options && options->all_candidates ? 3 : 1;
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
