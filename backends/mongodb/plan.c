/*
 * plan.c — the MongoDB fetch trees (one per access pattern), the indexes they need,
 * the neutral plans advisors read, the write plans, and the collections' description.
 *
 * A fetch tree mirrors the response shape. Its nodes are finds (the root from the
 * parameters; follow-ups with the parent records' values: children by their
 * reference, targets by `_id` with $in — never $lookup), counts, and records taken out
 * of documents already read (embedded arrays and subdocuments, subsets, extended
 * references, the document that holds an embedded record), which cost no request.
 * Every find registers the index it needs, Equality-Sort-Range: the equality fields,
 * then the sort (the declared order, then the key in the direction of the last order
 * key — the oracle's tie-break), then the range fields.
 * Invariant: a plan's steps count the finds that must wait for an earlier answer,
 * exactly as execute.c measures them.
 */
#include "backends/mongodb/propose.h"
#include "backends/copies.h"
#include "backends/write_effects.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- fetch nodes ------------------------------------------------------------------------------ */

static mg_fetch *new_fetch(builder *B, mg_fetch_kind kind, const mg_entity *e)
{
    mg_fetch *f = kp_arena_alloc(B->arena, sizeof *f);
    f->kind = kind;
    f->entity = e;
    f->is_server_ordered = 1;
    return f;
}

static void add_child(builder *B, mg_fetch *parent, mg_fetch *child)
{
    if (kp_fetch_add_child(B->arena, &parent->base, &child->base)) B->is_out_of_memory = 1;
}

static void add_cond(builder *B, mg_fetch *f, const kp_cond *c, const char *field)
{
    const kp_cond **conds = kp_arena_alloc(B->arena, sizeof *conds * (f->cond_count + 1));
    const char **fields = kp_arena_alloc(B->arena, sizeof *fields * (f->cond_count + 1));
    if (f->cond_count) {
        memcpy(conds, f->conds, sizeof *conds * f->cond_count);
        memcpy(fields, f->cond_fields, sizeof *fields * f->cond_count);
    }
    conds[f->cond_count] = c;
    fields[f->cond_count] = field;
    f->conds = conds;
    f->cond_fields = fields;
    f->cond_count++;
}

static void add_client_cond(builder *B, mg_fetch *f, const kp_cond *c)
{
    const kp_cond **conds = kp_arena_alloc(B->arena, sizeof *conds * (f->client_cond_count + 1));
    if (f->client_cond_count) memcpy(conds, f->client_conds, sizeof *conds * f->client_cond_count);
    conds[f->client_cond_count++] = c;
    f->client_conds = conds;
}

static void set_match(builder *B, mg_fetch *f, mg_match match, size_t n)
{
    f->match = match;
    f->match_count = n;
    f->match_fields = kp_arena_alloc(B->arena, sizeof *f->match_fields * (n ? n : 1));
    f->match_from = kp_arena_alloc(B->arena, sizeof *f->match_from * (n ? n : 1));
}

static int is_optional_param(const kp_cond *c) { return c->value.param && c->value.param->is_optional; }

/* Can the attribute be missing (so MongoDB sorts it as null, lowest)? */
static int is_nullable(const kp_attr *a)
{
    if (a->is_optional) return 1;
    if (a->derived && (a->derived->fn == KP_AGG_MIN || a->derived->fn == KP_AGG_MAX)) return 1;
    return 0;
}

/* ---- conditions as document fields -------------------------------------------------------------- */

/* The field of a condition reached from entity me's documents: its own attribute, or
 * through embedded subdocuments / an extended reference; NULL when only another find
 * can test it. */
static const char *cond_field(builder *B, const mg_entity *me, const kp_cond *c, const char *prefix)
{
    const char *path = prefix && prefix[0] ? prefix : "";
    const char *alias = c->path_len ? NULL : kp_mg_alias(me, c->attr);
    if (alias) return path[0] ? mg_bprintf(B, "%s.%s", path, alias) : alias;
    const mg_entity *at = me;
    for (size_t h = 0; h < c->path_len; h++) {
        const kp_rel *r = c->path[h];
        const mg_nested *n = NULL;
        for (size_t i = 0; at && i < at->nested_count; i++)
            if (at->nested[i].rel == r && !at->nested[i].is_array && !at->nested[i].subset) n = &at->nested[i];
        if (n) {
            path = path[0] ? mg_bprintf(B, "%s.%s", path, n->field) : n->field;
            at = n->child;
            continue;
        }
        if (h + 1 == c->path_len && at) {
            for (size_t i = 0; i < at->extref_count; i++) {
                const mg_extref *x = &at->extrefs[i];
                if (x->rel != r || x->rel->relation->link == KP_LINK_ARRAY) continue; /* a list of copies: not one value */
                for (size_t k = 0; k < x->attr_count; k++)
                    if (x->attrs[k] == c->attr)
                        return path[0] ? mg_bprintf(B, "%s.%s.%s", path, x->field, c->attr->name) : mg_bprintf(B, "%s.%s", x->field, c->attr->name);
            }
        }
        return NULL;
    }
    return path[0] ? mg_bprintf(B, "%s.%s", path, c->attr->name) : c->attr->name;
}

/* ---- sorting ---------------------------------------------------------------------------------------- */

/* The sort a find sends for shape s, each order attribute mapped to a field by `map`
 * (NULL: the attribute's own name). Returns 0 when the server cannot give the order
 * the oracle defines (a field it does not hold, nulls on the wrong side). */
typedef const char *(*field_map)(builder *B, const kp_attr *a, void *ctx);

static int make_sort(builder *B, mg_fetch *f, const kp_shape *s, field_map map, void *ctx)
{
    f->order_shape = s;
    f->is_null_split = 0;
    if (!s || s->order_count == 0) return 1;
    mg_index_field *sort = kp_arena_alloc(B->arena, sizeof *sort * s->order_count);
    size_t n = 0;
    for (size_t k = 0; k < s->order_count; k++) {
        const kp_order_key *o = &s->order[k];
        if (is_nullable(o->attr) && !((o->is_desc && !o->is_nulls_first) || (!o->is_desc && o->is_nulls_first))) {
            /* the first key of a root listing paged by offset (or not at all): its nulls in a
             * find of their own, before or after the others */
            if (k > 0 || f->rel || f->match != MG_MATCH_PARAMS || map || s->page == KP_PAGE_TOKEN) return 0;
            f->is_null_split = 1;
        }
        const char *alias = map ? NULL : kp_mg_alias(f->entity, o->attr);
        const char *field = map ? map(B, o->attr, ctx) : alias ? alias : o->attr->name;
        if (!field) return 0;
        sort[n].path = field;
        sort[n].is_desc = o->is_desc;
        n++;
        if (o->attr->is_unique && !is_nullable(o->attr)) break; /* no ties after a unique value */
    }
    f->sort = sort;
    f->sort_count = n;
    return 1;
}

/* ---- indexes ------------------------------------------------------------------------------------------- */

static const char *index_name(builder *B, const mg_index_field *fields, size_t n)
{
    const char *name = "";
    for (size_t i = 0; i < n; i++) name = mg_bprintf(B, "%s%s%s_%s", name, i ? "_" : "", fields[i].path, fields[i].is_desc ? "-1" : "1");
    return name;
}

/* Whether index x serves a find that needs `fields`, of which [sort_at, sort_end) give its
 * order: the same fields, and the order's part in the same directions or all inverted (the
 * server walks an index backwards). The directions of the fields an equality binds, before
 * the order, and of a range after it, do not change what a find reads. */
static int serves_fields(const mg_index *x, const mg_index_field *fields, size_t n, size_t sort_at, size_t sort_end,
                         int *backwards)
{
    if (x->field_count != n) return 0;
    int same = 1, inv = 1;
    for (size_t i = 0; i < n; i++) {
        if (strcmp(x->fields[i].path, fields[i].path) != 0) return 0;
        if (i < sort_at || i >= sort_end) continue;
        same &= x->fields[i].is_desc == fields[i].is_desc;
        inv &= x->fields[i].is_desc != fields[i].is_desc;
    }
    *backwards = !same && inv;
    return same || inv;
}

static mg_index *need_index(builder *B, mg_collection *c, const mg_index_field *fields, size_t n, size_t sort_at,
                            size_t sort_end, int unique, const kp_pattern *p)
{
    if (n == 0) return NULL;
    if (n == 1 && strcmp(fields[0].path, "_id") == 0) return NULL;
    mg_index *x = NULL;
    int backwards = 0;
    for (size_t i = 0; i < c->index_count && !x; i++)
        if (serves_fields(c->indexes[i], fields, n, sort_at, sort_end, &backwards)) x = c->indexes[i];
    if (!x) {
        x = kp_arena_alloc(B->arena, sizeof *x);
        x->fields = kp_arena_alloc(B->arena, sizeof *x->fields * n);
        memcpy(x->fields, fields, sizeof *x->fields * n);
        x->field_count = n;
        for (size_t i = 0; i < n; i++) x->fields[i].is_free = 1;
        x->name = index_name(B, fields, n);
        kp_arena_push(B->arena, (void **)&c->indexes, &c->index_count, &c->index_cap, sizeof *c->indexes);
        c->indexes[c->index_count - 1] = x;
    }
    for (size_t i = sort_at; i < sort_end && i < n; i++) x->fields[i].is_free = 0;
    x->is_unique |= unique;
    if (p) {
        int seen = 0;
        for (size_t i = 0; i < x->cause_count; i++) seen |= x->causes[i] == p;
        if (!seen && backwards) /* named once, like its causes */
            x->backwards = x->backwards ? mg_bprintf(B, "%s, %s", x->backwards, p->name) : p->name;
        if (!seen) {
            const kp_pattern **causes = kp_arena_alloc(B->arena, sizeof *causes * (x->cause_count + 1));
            if (x->cause_count) memcpy(causes, x->causes, sizeof *causes * x->cause_count);
            causes[x->cause_count++] = p;
            x->causes = causes;
        }
    }
    return x;
}

/* Equality, Sort, Range: the index a find needs. */
static void index_for(builder *B, mg_fetch *f, const kp_pattern *p)
{
    mg_collection *c = (mg_collection *)f->coll;
    if (!c) return;
    mg_index_field fields[96];
    size_t n = 0;
#define ADD(path_, desc_) do { int dup_ = 0; for (size_t z_ = 0; z_ < n; z_++) dup_ |= strcmp(fields[z_].path, (path_)) == 0; \
        if (!dup_ && n < 96) { fields[n].path = (path_); fields[n].is_desc = (desc_); n++; } } while (0)
    int unique = 0;
    if (f->match == MG_MATCH_KEY || f->match == MG_MATCH_PARENT) { c->id_rate += mg_pattern_rate(B, p); return; } /* _id */
    if (f->match == MG_MATCH_PARAMS && !f->shape && f->entity->collection && f->coll == f->entity->collection) {
        const kp_entity *e = f->entity->entity;
        int by_key = e->key_count > 0;
        for (size_t k = 0; by_key && k < e->key_count; k++) {
            int found = 0;
            for (size_t i = 0; i < f->cond_count; i++)
                found |= f->conds[i]->attr == e->key[k] && f->conds[i]->op == KP_OP_EQ && !f->conds[i]->path_len;
            by_key &= found;
        }
        if (by_key) { c->id_rate += mg_pattern_rate(B, p); return; } /* _id */
    }
    if (f->match == MG_MATCH_PARAMS) {
        /* a look-up by key is _id; by a unique attribute, its unique index */
        for (size_t i = 0; i < f->cond_count; i++)
            if (f->conds[i]->op == KP_OP_EQ && f->conds[i]->attr->is_unique && !f->conds[i]->path_len &&
                strchr(f->cond_fields[i], '.') == NULL && !f->shape)
                unique = !is_nullable(f->conds[i]->attr);
    }
    for (size_t i = 0; i < f->match_count; i++) ADD(f->match_fields[i], 0);
    for (size_t i = 0; i < f->cond_count; i++)
        if (f->conds[i]->op == KP_OP_EQ && !is_optional_param(f->conds[i])) ADD(f->cond_fields[i], 0);
    size_t sort_at = n;
    if (f->is_server_ordered)
        for (size_t i = 0; i < f->sort_count; i++) ADD(f->sort[i].path, f->sort[i].is_desc);
    size_t sort_end = n;
    for (size_t i = 0; i < f->cond_count; i++)
        if (f->conds[i]->op != KP_OP_EQ || is_optional_param(f->conds[i])) ADD(f->cond_fields[i], 0);
#undef ADD
    if (n == 0) {
        /* nothing to select or sort by: every document is read */
        f->is_scan = f->kind == MG_FIND;
        return;
    }
    if (unique && n > 1) unique = 0;
    f->index = need_index(B, c, fields, n, sort_at, sort_end, unique, p);
}

/* Whether the wider index b serves every find index a serves: a's fields lead b, and the
 * ones whose direction matters run the same way in b or all the other way (b walked
 * backwards); an equality's or a range's field may run either way (user-recent-orders'
 * userId_1_placedAt_-1_orderId_-1 serves buy-again's userId and placedAt range). */
static int prefix_serves(const mg_index *a, const mg_index *b)
{
    if (b->field_count < a->field_count) return 0;
    int same = 1, inv = 1;
    for (size_t i = 0; i < a->field_count; i++) {
        if (strcmp(a->fields[i].path, b->fields[i].path) != 0) return 0;
        if (a->fields[i].is_free) continue;
        same &= a->fields[i].is_desc == b->fields[i].is_desc;
        inv &= a->fields[i].is_desc != b->fields[i].is_desc;
    }
    return same || inv;
}

void mg_finish_indexes(builder *B)
{
    for (size_t ci = 0; ci < B->L->collection_count; ci++) {
        mg_collection *c = B->L->collections[ci];
        for (size_t i = 0; i < c->index_count; i++) {
            mg_index *a = c->indexes[i];
            if (a->is_unique) continue;
            for (size_t j = 0; j < c->index_count && !a->is_redundant; j++) {
                mg_index *b = c->indexes[j];
                if (i == j || b->is_redundant || b->field_count <= a->field_count) continue;
                if (prefix_serves(a, b)) {
                    a->is_redundant = 1;
                    a->served_by = b->name;
                }
            }
        }
        /* shard key: the equality field its reads select by most (by rate) */
        const char *best = NULL;
        double best_rate = 0;
        for (size_t i = 0; i < c->index_count; i++) {
            mg_index *x = c->indexes[i];
            double rate = 0;
            for (size_t k = 0; k < x->cause_count; k++) rate += mg_pattern_rate(B, x->causes[k]);
            if (rate > best_rate && x->field_count > 0 && !strchr(x->fields[0].path, '.')) {
                best = x->fields[0].path;
                best_rate = rate;
            }
        }
        /* a field of a compound key is known to every look-up by key too */
        int in_key = 0;
        const kp_entity *owner = c->owner->entity;
        for (size_t k = 0; best && owner->key_count > 1 && k < owner->key_count; k++) in_key |= strcmp(owner->key[k]->name, best) == 0;
        if (best && (best_rate > c->id_rate || in_key)) {
            c->shard_key = mg_bprintf(B, "{ %s: 1, _id: 1 }", best);
            c->shard_why = in_key && c->id_rate > 0
                ? mg_bprintf(B, "the reads that select by %s (%.0f req/s), and the look-ups by key (%.0f req/s, which know %s: it is "
                                "part of the key), go to one shard; _id after it lets the chunks of one large %s value split",
                             best, best_rate, c->id_rate, best, best)
                : mg_bprintf(B, "the reads that select by %s (%.0f req/s) go to one shard; _id after it lets the chunks "
                                "of one large %s value split", best, best_rate, best);
        } else {
            c->shard_key = "{ _id: \"hashed\" }";
            c->shard_why = best ? mg_bprintf(B, "most reads select by _id (%.0f req/s, against %.0f by %s): a hashed _id spreads "
                                                "documents and writes evenly and keeps each look-up on one shard",
                                             c->id_rate, best_rate, best)
                                : "every read selects by _id: a hashed _id spreads documents and writes evenly and keeps each "
                                  "look-up on one shard";
        }
    }
    /* a find that used a redundant index reports the one that serves it */
    for (size_t ci = 0; ci < B->L->collection_count; ci++) {
        mg_collection *c = B->L->collections[ci];
        size_t live = 0;
        for (size_t i = 0; i < c->index_count; i++) live += !c->indexes[i]->is_redundant;
        if (live > 63)
            kp_design_defect(B->d, NULL, "collection %s needs %zu indexes, above MongoDB's 64 per collection (with _id); merge "
                                   "patterns or move some to another collection", c->name, live + 1);
    }
}

static const mg_index *serving(const mg_collection *c, const mg_index *x)
{
    if (!x || !x->is_redundant) return x;
    for (size_t i = 0; i < c->index_count; i++)
        if (strcmp(c->indexes[i]->name, x->served_by) == 0) return serving(c, c->indexes[i]);
    return x;
}

/* ---- planning a pattern --------------------------------------------------------------------------------- */

typedef struct pctx {
    builder *B;
    const kp_pattern *p;
    /* a multi-hop listing's conditions the documents of its next-to-last hop can test:
     * the last hop's records are embedded in them and copy the field (set by plan_path) */
    const kp_cond *const *held_conds;
    const char *const *held_fields;  /* the field each one tests there (NULL: the holder's own) */
    size_t held_count;
    /* ... and, where every line those documents hold passes the listing's test once the find
     * has tested them, the find's order, its limit and the order fields a tie is read on */
    const mg_index_field *held_sort;
    size_t held_sort_count, held_ties;
    const kp_attr *const *held_tie_attrs;
    int64_t held_limit;
} pctx;

/* Does the pattern reach entity t other than by to-one hops `via` that an extended
 * reference covers? */
typedef struct reach_ctx {
    const kp_entity *target;
    const kp_rel *via;
    const mg_extref *extref;
    int other;
} reach_ctx;

static int covered(const mg_extref *x, const mg_hop_use *u)
{
    if (u->index + 1 != u->count || u->is_cond) return 0;
    if (u->leaf) {
        if (u->leaf->key_index >= 0) return 1;
        for (size_t k = 0; k < x->attr_count; k++)
            if (x->attrs[k] == u->leaf) return 1;
        return 0;
    }
    int is_list = x->rel->relation->link == KP_LINK_ARRAY;
    if (!u->node || u->node->kind != (is_list ? KP_SHAPE_EACH : KP_SHAPE_ONE)) return 0;
    if (is_list && u->node->where_count) return 0;
    /* a listing over an array: the fields it sorts by and returns, its value included */
    for (size_t k = 0; is_list && k < u->node->order_count; k++) {
        int in = u->node->order[k].attr->key_index >= 0;
        for (size_t j = 0; j < x->attr_count; j++) in |= x->attrs[j] == u->node->order[k].attr;
        if (!in) return 0;
    }
    for (size_t i = 0; i <= u->node->member_count; i++) {
        const kp_shape *m = i < u->node->member_count ? u->node->members[i] : u->node->value;
        if (!m) continue;
        if (m->kind == KP_SHAPE_PARAM || m->kind == KP_SHAPE_TOKEN) continue;
        if (m->kind != KP_SHAPE_ATTR || m->path_len) return 0;
        if (m->attr->key_index >= 0) continue;
        int in = 0;
        for (size_t k = 0; k < x->attr_count; k++) in |= x->attrs[k] == m->attr;
        if (!in) return 0;
    }
    return 1;
}

static void reach_visit(builder *B, const kp_pattern *p, const mg_hop_use *u, void *ctx)
{
    (void)B;
    (void)p;
    reach_ctx *c = ctx;
    if (u->rel->target != c->target) return;
    if (u->rel == c->via && c->extref && covered(c->extref, u)) return;
    c->other = 1;
}

static int extref_usable(builder *B, const kp_pattern *p, const mg_entity *me, const kp_rel *r, const mg_extref **out)
{
    *out = NULL;
    const mg_extref *x = NULL;
    for (size_t i = 0; i < me->extref_count; i++)
        if (me->extrefs[i].rel == r) x = &me->extrefs[i];
    if (!x) return 0;
    if (p->root == r->target) return 0;
    reach_ctx c = {r->target, r, x, 0};
    mg_walk_pattern(B, p, reach_visit, &c);
    if (c.other) return 0;
    *out = x;
    return 1;
}

static int64_t shape_limit(const kp_shape *s)
{
    if (!s || s->kind != KP_SHAPE_EACH) return 0;
    if (s->limit_param) {
        if (s->limit_param->max) return (int64_t)s->limit_param->max->valuedouble;
        return 0; /* a page size without a bound: read them all, the client cuts */
    }
    return s->limit;
}

/* A listing's limit, sort and paging on a find, or client order when the server cannot. */
static void order_listing(builder *B, const kp_pattern *p, mg_fetch *f, const kp_shape *s, field_map map, void *ctx,
                          int server_filters_all)
{
    f->is_paged = s && s == p->paged;
    if (!s || s->kind != KP_SHAPE_EACH) return;
    if (!make_sort(B, f, s, map, ctx) || !server_filters_all) {
        f->is_server_ordered = 0;
        f->sort = NULL;
        f->sort_count = 0;
        f->limit = 0;
        return;
    }
    f->limit = s->limit_param ? 0 : s->limit;
    if (s->limit_param) f->limit = -1; /* from the parameter at run time */
}

/* What a join's documents hold of its targets: their key under the join's own attribute
 * names, and the fields an extended reference copies (or none). */
typedef struct join_fields {
    const kp_attr **pairs;      /* [target key attr, join attr] * n, NULL-terminated */
    const mg_extref *copies;
} join_fields;

static const char *key_field_map(builder *B, const kp_attr *a, void *ctx)
{
    const join_fields *j = ctx;
    for (size_t i = 0; j->pairs[i]; i += 2)
        if (j->pairs[i] == a) return j->pairs[i + 1]->name;
    for (size_t k = 0; j->copies && k < j->copies->attr_count; k++)
        if (j->copies->attrs[k] == a) return mg_bprintf(B, "%s.%s", j->copies->field, a->name);
    return NULL;
}

/* A listing without conditions whose order the join documents hold: the targets' key, and
 * the fields the join copies (or none). */
static int join_orders(const kp_shape *s, const kp_entity *t, const mg_extref *copies)
{
    if (s->where_count || !s->order_count) return 0;
    for (size_t k = 0; k < s->order_count; k++) {
        const kp_attr *a = s->order[k].attr;
        int held = a->entity == t && a->key_index >= 0;
        for (size_t c = 0; !held && copies && c < copies->attr_count; c++) held = copies->attrs[c] == a;
        if (!held) return 0;
    }
    return 1;
}

static double fanout_avg(const kp_rel *r) { return r && r->fanout ? r->fanout->avg : 1; }

static int plan_children(pctx *P, mg_fetch *parent, const kp_shape *s, const mg_entity *ctx);

/* A follow-up whose filter values are the single root's key, which the parameters
 * already give: it need not wait for the root's answer. */
static int from_params(const kp_pattern *p, const mg_fetch *parent, const mg_fetch *f)
{
    if (!parent || parent->rel || parent->match != MG_MATCH_PARAMS || p->is_root_set || parent->kind != MG_FIND ||
        !parent->entity->collection || kp_mg_next_hop(parent) || parent->shape)
        return 0;
    if (f->match != MG_MATCH_FK && f->match != MG_MATCH_ARRAY) return 0;
    for (size_t k = 0; k < f->match_count; k++) {
        const kp_attr *a = f->match_from[k];
        int bound = a->entity == p->root;
        if (bound) {
            bound = 0;
            for (size_t i = 0; i < p->where_count; i++)
                if (p->where[i].op == KP_OP_EQ && !p->where[i].path_len && p->where[i].attr == a && !is_optional_param(&p->where[i]))
                    bound = 1;
        }
        if (!bound) return 0;
    }
    return f->match_count > 0;
}

/* The fetch that follows hop r from records of `from` (s: the node it feeds, or NULL). */
static mg_fetch *plan_hop(pctx *P, const mg_entity *from, const kp_rel *r, const kp_shape *s, const mg_fetch *parent)
{
    builder *B = P->B;
    const kp_pattern *p = P->p;
    const kp_relation *rel = r->relation;
    mg_entity *target = mg_entity_of(B, r->target);
    int is_count = s && s->kind == KP_SHAPE_COUNT;
    if (rel->link == KP_LINK_FOREIGN_KEY && rel->holder == r->target) {
        /* children: forward 1:N / 1:1, or the far side of a 1:1 held by `from`'s partner */
        for (size_t i = 0; i < from->nested_count; i++) {
            const mg_nested *n = &from->nested[i];
            if (n->rel != r) continue;
            int usable = n->subset == 0;
            if (n->subset > 0 && s && s->kind == KP_SHAPE_EACH && !s->where_count && s != p->paged) {
                int same = n->order_shape == s;
                if (!same && s->order_count == n->order_shape->order_count) {
                    same = 1;
                    for (size_t k = 0; k < s->order_count; k++)
                        same &= s->order[k].attr == n->order_shape->order[k].attr && s->order[k].is_desc == n->order_shape->order[k].is_desc &&
                                s->order[k].is_nulls_first == n->order_shape->order[k].is_nulls_first;
                }
                int64_t lim = shape_limit(s);
                usable = same && lim > 0 && lim <= n->subset;
            }
            if (!usable) continue;
            mg_fetch *f = new_fetch(B, MG_NESTED, target);
            f->nested = n;
            f->rel = r;
            f->shape = s;
            if (s) for (size_t k = 0; k < s->where_count; k++) {
                if (s->where[k].path_len)
                    kp_design_defect(B->d, p, "'%s' filters embedded %s by %s through a relation; keyplan cannot test that "
                                           "condition on embedded elements", p->name, r->target->name, s->where[k].attr->name);
                else add_client_cond(B, f, &s->where[k]);
            }
            /* embedded arrays hold the children in key order; anything else is sorted in the client */
            f->is_server_ordered = !(s && s->kind == KP_SHAPE_EACH &&
                                     (s->declared_order_count || s->limit || s->limit_param || s->page != KP_PAGE_NONE || n->subset));
            f->is_paged = s && s == p->paged;
            return f;
        }
        if (!target->collection) {
            kp_design_defect(B->d, p, "'%s' reaches %s through %s.%s, but %s is embedded in %s: only reading every %s document "
                                   "would find it", p->name, r->target->name, r->source->name, r->name ? r->name : "?",
                             r->target->name, target->parent->entity->name, target->parent->entity->name);
            mg_fetch *f = new_fetch(B, MG_FIND, target);
            f->coll = kp_mg_home(B->L, r->target);
            f->rel = r;
            f->shape = s;
            f->is_scan = 1;
            f->is_server_ordered = 0;
            return f;
        }
        mg_fetch *f = new_fetch(B, is_count ? MG_COUNT : MG_FIND, target);
        f->coll = target->collection;
        f->rel = r;
        f->shape = s;
        set_match(B, f, MG_MATCH_FK, rel->fk_count);
        for (size_t k = 0; k < rel->fk_count; k++) {
            f->match_fields[k] = rel->fk_attrs[k]->name;
            f->match_from[k] = rel->ref_attrs[k];
        }
        int all_server = 1;
        if (s) for (size_t k = 0; k < s->where_count; k++) {
            const char *field = cond_field(B, target, &s->where[k], NULL);
            if (field) add_cond(B, f, &s->where[k], field);
            else {
                all_server = 0;
                kp_design_defect(B->d, p, "'%s' filters %s by %s through a relation that is neither embedded nor copied; "
                                       "keyplan's MongoDB design cannot apply it", p->name, r->target->name, s->where[k].attr->name);
            }
        }
        for (size_t k = 0; !s && k < P->held_count; k++) {
            const char *field = P->held_fields[k] ? P->held_fields[k] : cond_field(B, target, P->held_conds[k], NULL);
            if (field) add_cond(B, f, P->held_conds[k], field);
        }
        if (!is_count) order_listing(B, p, f, s, NULL, NULL, all_server);
        if (!s && P->held_limit) {
            /* the documents holding a bounded listing's lines (held_conds): in its order, one
             * more than its page, and the ones tying with the page's last read after (execute.c) */
            f->sort = (mg_index_field *)P->held_sort;
            f->sort_count = P->held_sort_count;
            f->limit = P->held_limit;
            f->reads_ties = P->held_ties;
            f->tie_attrs = P->held_tie_attrs;
            f->is_server_ordered = 1;
            f->is_held_page = 1;
        }
        f->is_per_parent = f->limit != 0 || f->is_paged || rel->fk_count > 1 || is_count;
        f->base.is_independent = from_params(p, parent, f);
        index_for(B, f, p);
        return f;
    }
    if (rel->link == KP_LINK_FOREIGN_KEY && rel->holder == r->source) {
        /* a to-one hop to the record `from` references */
        if (from->parent_rel && from->parent_rel->relation == rel) {
            mg_fetch *f = new_fetch(B, MG_NESTED, target);
            f->rel = r;
            f->shape = s;
            f->is_container = 1;
            return f;
        }
        const mg_extref *x;
        if (extref_usable(B, p, from, r, &x)) {
            mg_fetch *f = new_fetch(B, MG_NESTED, target);
            f->rel = r;
            f->shape = s;
            f->extref = x;
            return f;
        }
        mg_fetch *f = new_fetch(B, MG_FIND, target);
        f->coll = kp_mg_home(B->L, r->target);
        f->rel = r;
        f->shape = s;
        f->match = MG_MATCH_KEY;
        f->key_from = kp_arena_alloc(B->arena, sizeof *f->key_from * (r->target->key_count ? r->target->key_count : 1));
        for (size_t k = 0; k < r->target->key_count; k++)
            for (size_t i = 0; i < rel->fk_count; i++)
                if (rel->ref_attrs[i] == r->target->key[k]) f->key_from[k] = rel->fk_attrs[i];
        if (!target->collection)
            kp_design_defect(B->d, p, "'%s' looks up %s by key, but %s is embedded in %s", p->name, r->target->name,
                             r->target->name, target->parent->entity->name);
        return f;
    }
    if (rel->link == KP_LINK_THROUGH) {
        int forward = !r->is_inverse;
        mg_entity *join = mg_entity_of(B, rel->through);
        kp_attr **near = forward ? rel->through_from : rel->through_to;
        kp_attr **far = forward ? rel->through_to : rel->through_from;
        const kp_entity *near_side = forward ? rel->from : rel->to;
        mg_fetch *j = new_fetch(B, is_count ? MG_COUNT : MG_FIND, join);
        j->coll = kp_mg_home(B->L, rel->through);
        j->rel = r;
        set_match(B, j, MG_MATCH_FK, near_side->key_count);
        for (size_t k = 0; k < near_side->key_count; k++) {
            j->match_fields[k] = near[k]->name;
            j->match_from[k] = near_side->key[k];
        }
        j->base.is_independent = from_params(p, parent, j);
        if (is_count) {
            j->shape = s;
            j->is_per_parent = 1;
            index_for(B, j, p);
            return j;
        }
        /* the targets: their key values are in the join documents */
        const kp_attr **pairs = kp_arena_alloc(B->arena, sizeof *pairs * (2 * r->target->key_count + 1));
        for (size_t k = 0; k < r->target->key_count; k++) {
            pairs[2 * k] = r->target->key[k];
            pairs[2 * k + 1] = far[k];
        }
        int keys_only = s && s->kind == KP_SHAPE_EACH && kp_shape_reads_only_key(s, r->target);
        /* the join documents' copies of the targets' fields answer the listing (decide_join_extrefs) */
        const mg_extref *jx = NULL;
        for (size_t i = 0; !keys_only && s && s->kind == KP_SHAPE_EACH && !s->where_count && i < join->extref_count; i++)
            if (join->extrefs[i].rel == r) jx = &join->extrefs[i];
        mg_fetch *t = new_fetch(B, keys_only ? MG_KEYS : jx ? MG_NESTED : MG_FIND, target);
        t->rel = r;
        t->shape = s;
        t->extref = jx;
        if (!jx) {
            t->coll = kp_mg_home(B->L, r->target);
            t->match = MG_MATCH_KEY;
            t->key_from = kp_arena_alloc(B->arena, sizeof *t->key_from * (r->target->key_count ? r->target->key_count : 1));
            for (size_t k = 0; k < r->target->key_count; k++) t->key_from[k] = far[k];
        }
        join_fields held = {pairs, jx};
        if (keys_only && s) {
            /* order and page the join documents themselves: the order is the target's key */
            order_listing(B, p, j, s, key_field_map, &held, 1);
            j->is_per_parent = j->limit != 0 || j->is_paged;
            t->is_server_ordered = j->is_server_ordered;
        } else if (s && s->kind == KP_SHAPE_EACH && join_orders(s, r->target, jx)) {
            /* ordered by the target's key, or by fields the join documents copy: they give the
             * page (and the token's start); the targets of that page are their copies, or found
             * by _id and linked in the join documents' order (execute.c level_by_key) */
            order_listing(B, p, j, s, key_field_map, &held, 1);
            j->is_per_parent = j->limit != 0 || j->is_paged;
            t->is_server_ordered = j->is_server_ordered;
        } else {
            j->is_server_ordered = 1;
            t->is_server_ordered = !(s && s->kind == KP_SHAPE_EACH && (s->declared_order_count || s->limit || s->limit_param));
            if (s && s->kind == KP_SHAPE_EACH) t->is_server_ordered = 0;
        }
        index_for(B, j, p);
        j->base.next_hop = &t->base;
        return j;
    }
    if (rel->link == KP_LINK_ARRAY) {
        const mg_extref *x;
        if (!r->is_inverse && !is_count && extref_usable(B, p, from, r, &x)) {
            /* the document's copies of the targets, one per element (decide_array_extrefs) */
            mg_fetch *f = new_fetch(B, MG_NESTED, target);
            f->rel = r;
            f->shape = s;
            f->extref = x;
            f->is_server_ordered = !(s && s->kind == KP_SHAPE_EACH && (s->declared_order_count || s->limit || s->limit_param));
            return f;
        }
        if (!r->is_inverse) {
            mg_fetch *f = new_fetch(B, MG_FIND, target);
            f->coll = kp_mg_home(B->L, r->target);
            f->rel = r;
            f->shape = s;
            f->match = MG_MATCH_KEY;
            f->key_from = kp_arena_alloc(B->arena, sizeof *f->key_from);
            f->key_from[0] = rel->array_attr;
            /* the array's order is kept by linking in array order; a declared order is the client's */
            f->is_server_ordered = !(s && s->kind == KP_SHAPE_EACH && (s->declared_order_count || s->limit || s->limit_param));
            if (is_count) f->kind = MG_NESTED; /* the array's length: counted from the references */
            return f;
        }
        mg_fetch *f = new_fetch(B, is_count ? MG_COUNT : MG_FIND, target);
        f->coll = kp_mg_home(B->L, r->target);
        f->rel = r;
        f->shape = s;
        set_match(B, f, MG_MATCH_ARRAY, 1);
        f->match_fields[0] = rel->array_attr->name;
        f->match_from[0] = r->source->key[0];
        int all_server = 1;
        if (s) for (size_t k = 0; k < s->where_count; k++) {
            const char *field = cond_field(B, target, &s->where[k], NULL);
            if (field) add_cond(B, f, &s->where[k], field);
            else all_server = 0;
        }
        if (!is_count) order_listing(B, p, f, s, NULL, NULL, all_server);
        f->is_per_parent = 1;
        f->base.is_independent = from_params(p, parent, f);
        index_for(B, f, p);
        return f;
    }
    return NULL;
}

/* The attribute of the holder's documents that a line's attribute copies (buy-again: an
 * order line's placedAt is its order's), or NULL. */
static const kp_attr *held_source(const kp_attr *a, const kp_rel *last, const kp_rel *holder_hop)
{
    const kp_copy *copy = a ? a->copy_of : NULL;
    if (!copy || copy->path_len != 1 || copy->path[0]->relation != last->relation || copy->path[0]->target != holder_hop->target)
        return NULL;
    return copy->source;
}

/* Can the find of the documents holding a listing's lines read one page of them? When each
 * document it returns holds a line the listing keeps (its one test on the lines' own fields
 * goes to the find too) and the order starts with fields the documents hold (copies), the
 * first $limit documents in that order hold the page, up to the lines tying with the last
 * of them on those fields: read one more, and the ties only when it ties (execute.c). A
 * fixed page, not paged (a page token or offset over lines is not one over documents). */
static int held_page(pctx *P, const kp_shape *s, const kp_rel *last, const kp_rel *holder_hop, const mg_entity *holder)
{
    builder *B = P->B;
    if (s->limit <= 0 || s->limit_param || s->page != KP_PAGE_NONE || s == P->p->paged || !s->order_count) return 0;
    const kp_entity *he = holder_hop->target;
    mg_index_field *sort = kp_arena_alloc(B->arena, sizeof *sort * (s->order_count + he->key_count + 1));
    const kp_attr **tie_attrs = kp_arena_alloc(B->arena, sizeof *tie_attrs * (s->order_count + 1));
    if (!sort || !tie_attrs) return 0;
    size_t n = 0;
    int unique = 0;
    for (size_t k = 0; k < s->order_count && !unique; k++) {
        const kp_attr *source = held_source(s->order[k].attr, last, holder_hop);
        if (!source || is_nullable(source)) break;
        const char *alias = kp_mg_alias(holder, source);
        sort[n].path = alias ? alias : source->name;
        sort[n].is_desc = s->order[k].is_desc;
        tie_attrs[n] = source;
        n++;
        unique = source->is_unique;
    }
    if (n == 0) return 0;
    size_t ties = unique ? 0 : n;
    for (size_t k = 0; !unique && k < he->key_count; k++) {
        sort[n].path = he->key[k]->name;
        sort[n].is_desc = sort[n - 1].is_desc;
        n++;
    }
    P->held_sort = sort;
    P->held_sort_count = n;
    P->held_ties = ties;
    P->held_tie_attrs = tie_attrs;
    P->held_limit = s->limit;
    return 1;
}

/* Conditions of a multi-hop listing's last records that the documents holding them can
 * test: the records are embedded whole in the next-to-last hop's documents and the
 * condition's attribute copies one of those documents' own (buy-again: an order line's
 * placedAt is its order's), so that find reads only the documents whose lines can match.
 * The lines are still tested in the client. Sets P->held_conds for the next-to-last hop.
 * Then held_page, when it can bound that find. */
static void held_conds(pctx *P, kp_rel *const *hops, size_t n, const kp_shape *s)
{
    builder *B = P->B;
    if (n < 2 || !s || s->kind != KP_SHAPE_EACH || !s->where_count) return;
    const kp_rel *last = hops[n - 1], *holder_hop = hops[n - 2];
    const mg_entity *holder = mg_entity_of(B, holder_hop->target);
    const mg_nested *lines = NULL;
    for (size_t i = 0; holder && i < holder->nested_count; i++)
        if (holder->nested[i].rel == last && !holder->nested[i].subset) lines = &holder->nested[i];
    if (!lines) return;
    const kp_cond **held = kp_arena_alloc(B->arena, sizeof *held * (s->where_count + 1));
    const char **fields = kp_arena_alloc(B->arena, sizeof *fields * (s->where_count + 1));
    size_t count = 0;
    const kp_cond *own = NULL; /* the one condition on the lines' own attributes */
    size_t owns = 0;
    for (size_t k = 0; held && fields && k < s->where_count; k++) {
        const kp_cond *c = &s->where[k];
        const kp_attr *source = held_source(c->path_len ? NULL : c->attr, last, holder_hop);
        if (!source) {
            owns++;
            if (!c->path_len && !c->attr->copy_of && c->op != KP_OP_BETWEEN) own = c;
            continue;
        }
        kp_cond *on_holder = kp_arena_alloc(B->arena, sizeof *on_holder);
        if (!on_holder) return;
        *on_holder = *c;
        on_holder->attr = (kp_attr *)source;
        fields[count] = NULL;
        held[count++] = on_holder;
    }
    if (!held || !fields) return;
    /* a bounded page: each document the find returns holds a line that passes every test
     * (not when that test can be left out: an optional parameter drops it) */
    if (owns == 1 && own && !is_optional_param(own) && held_page(P, s, last, holder_hop, holder)) {
        fields[count] = mg_bprintf(B, "%s.%s", lines->field, own->attr->name);
        held[count++] = own;
    } else {
        P->held_limit = 0;
    }
    P->held_conds = held;
    P->held_fields = fields;
    P->held_count = count;
}

/* A listing two 1:N hops away whose records copy the first hop's reference (propose.c
 * mg_two_hop_extref): one find on their collection by the copy, with the listing's
 * conditions, order and limit, instead of a find per hop and a client sort. NULL: not one. */
static mg_fetch *two_hop_find(pctx *P, const mg_fetch *parent, const kp_shape *s)
{
    builder *B = P->B;
    const mg_extref *x = mg_two_hop_extref(B, s);
    if (!x) return NULL;
    mg_entity *target = mg_entity_of(B, s->hops[1]->target);
    const kp_relation *outer = s->hops[0]->relation;
    const kp_rel *path = kp_copy_two_hop_path(B->arena, s->hops[0], s->hops[1]);
    if (!path) return NULL;
    mg_fetch *f = new_fetch(B, MG_FIND, target);
    f->coll = target->collection;
    f->rel = path;
    f->shape = s;
    set_match(B, f, MG_MATCH_FK, outer->fk_count);
    for (size_t k = 0; k < outer->fk_count; k++) {
        f->match_fields[k] = mg_bprintf(B, "%s.%s", x->field, outer->fk_attrs[k]->name);
        f->match_from[k] = outer->ref_attrs[k];
    }
    for (size_t k = 0; k < s->where_count; k++) {
        const char *field = cond_field(B, target, &s->where[k], NULL);
        if (!field) return NULL;
        add_cond(B, f, &s->where[k], field);
    }
    order_listing(B, P->p, f, s, NULL, NULL, 1);
    f->is_per_parent = 1;
    f->base.is_independent = from_params(P->p, parent, f);
    index_for(B, f, P->p);
    return f;
}

static int plan_path(pctx *P, mg_fetch *parent, const mg_entity *from, const kp_shape *s, kp_rel *const *hops, size_t n)
{
    builder *B = P->B;
    mg_fetch *first = NULL, *last = NULL;
    const mg_entity *at = from;
    mg_fetch *one = s && n == 2 && hops == s->hops ? two_hop_find(P, parent, s) : NULL;
    if (one) {
        add_child(B, parent, one);
        return plan_children(P, one, s, one->entity);
    }
    for (size_t i = 0; i < n; i++) {
        const kp_shape *for_shape = i + 1 == n ? s : NULL;
        if (i + 2 == n) held_conds(P, hops, n, s);
        mg_fetch *f = plan_hop(P, at, hops[i], for_shape, i == 0 ? parent : NULL);
        P->held_conds = NULL;
        P->held_count = 0;
        P->held_limit = 0;
        if (!f) return kp_error_set(B->err, KP_ERR_INTERNAL, NULL, 0, 0, "no MongoDB access path for relation '%s'",
                                    hops[i]->name ? hops[i]->name : "?");
        if (n > 1 && !f->is_held_page) {
            /* a multi-hop listing: the intermediate hops read everything, the client orders the end */
            if (i + 1 < n) { f->shape = NULL; }
            f->is_server_ordered = f->kind == MG_NESTED && !s ? f->is_server_ordered : 0;
            f->limit = 0;
            f->sort = NULL;
            f->sort_count = 0;
            f->is_per_parent = f->kind == MG_COUNT;
            /* the first hop may still go with the root's request (from_params) */
            if (i > 0) f->base.is_independent = 0;
            if (kp_mg_next_hop(f)) { kp_mg_next_hop(f)->is_server_ordered = 0; }
        }
        if (!first) first = f;
        else {
            mg_fetch *tail = last;
            while (kp_mg_next_hop(tail)) tail = kp_mg_next_hop(tail);
            tail->base.next_hop = &f->base;
        }
        last = f;
        at = mg_entity_of(B, hops[i]->target);
    }
    add_child(B, parent, first);
    mg_fetch *end = last;
    while (kp_mg_next_hop(end)) end = kp_mg_next_hop(end);
    if (s && (s->kind == KP_SHAPE_EACH || s->kind == KP_SHAPE_ONE)) return plan_children(P, end, s, end->entity);
    return 0;
}

static int plan_children(pctx *P, mg_fetch *parent, const kp_shape *s, const mg_entity *ctx)
{
    for (size_t i = 0; i < s->member_count; i++) {
        const kp_shape *m = s->members[i];
        if (m->kind == KP_SHAPE_ATTR && m->path_len > 0) {
            if (kp_copy_on(ctx->entity, m->path, m->path_len, m->attr)) continue;
            if (plan_path(P, parent, ctx, NULL, m->path, m->path_len)) return -1;
        } else if (m->kind == KP_SHAPE_EACH || m->kind == KP_SHAPE_ONE) {
            if (plan_path(P, parent, ctx, m, m->hops, m->hop_count)) return -1;
        } else if (m->kind == KP_SHAPE_COUNT) {
            int derived = m->counted_by != NULL; /* the listing beside it answers it */
            for (size_t a = 0; a < ctx->entity->attr_count; a++) {
                const kp_derived *d = ctx->entity->attrs[a]->derived;
                if (d && d->fn == KP_AGG_COUNT && d->path_len == m->hop_count && d->where_count == m->where_count &&
                    memcmp(d->path, m->hops, sizeof *d->path * d->path_len) == 0)
                    derived = 1;
            }
            if (!derived && plan_path(P, parent, ctx, m, m->hops, m->hop_count)) return -1;
        } else if (m->kind == KP_SHAPE_OBJECT) {
            if (plan_children(P, parent, m, ctx)) return -1;
        }
    }
    if (s->kind == KP_SHAPE_EACH && s->value && s->value->kind == KP_SHAPE_ATTR && s->value->path_len > 0 &&
        !kp_copy_on(ctx->entity, s->value->path, s->value->path_len, s->value->attr))
        return plan_path(P, parent, ctx, NULL, s->value->path, s->value->path_len);
    return 0;
}

int mg_plan_pattern(builder *B, const kp_pattern *p, mg_fetch **out)
{
    pctx P = {.B = B, .p = p};
    mg_entity *me = mg_entity_of(B, p->root);
    const kp_shape *each = NULL;
    if (p->is_root_set) {
        each = p->returns->kind == KP_SHAPE_EACH ? p->returns : NULL;
        for (size_t i = 0; !each && i < p->returns->member_count; i++)
            if (p->returns->members[i]->kind == KP_SHAPE_EACH && p->returns->members[i]->is_root_set) each = p->returns->members[i];
    }
    mg_fetch *f;
    mg_fetch *roots; /* the fetch whose records are the roots */
    if (me->parent) {
        /* an embedded root: its parent's document is found first */
        mg_entity *parent = me->parent;
        const kp_relation *rel = me->parent_rel->relation;
        f = new_fetch(B, MG_FIND, parent);
        f->coll = kp_mg_home(B->L, parent->entity);
        f->shape = NULL;
        int by_parent = 1;
        for (size_t k = 0; k < rel->fk_count; k++) {
            int bound = 0;
            for (size_t i = 0; i < p->where_count; i++)
                if (p->where[i].op == KP_OP_EQ && !p->where[i].path_len && p->where[i].attr == rel->fk_attrs[k] &&
                    !is_optional_param(&p->where[i]))
                    bound = 1;
            by_parent &= bound;
        }
        f->match = MG_MATCH_PARAMS;
        if (by_parent) {
            f->match = MG_MATCH_PARENT;
        } else {
            for (size_t i = 0; i < p->where_count; i++)
                if (p->where[i].op == KP_OP_EQ && !p->where[i].path_len && p->where[i].attr->is_unique)
                    add_cond(B, f, &p->where[i], mg_bprintf(B, "%s.%s", me->path, p->where[i].attr->name));
            if (!f->cond_count || p->is_root_set) {
                kp_design_defect(B->d, p, "'%s' lists %s across %s documents, where they are embedded: only a collection scan "
                                       "($unwind over every %s) would serve it", p->name, p->root->name, parent->entity->name,
                                 parent->entity->name);
                f->is_scan = 1;
            }
        }
        index_for(B, f, p);
        mg_fetch *n = new_fetch(B, MG_NESTED, me);
        for (size_t i = 0; i < parent->nested_count; i++)
            if (parent->nested[i].child == me && !parent->nested[i].subset) n->nested = &parent->nested[i];
        n->rel = me->parent_rel;
        n->shape = each;
        for (size_t i = 0; i < p->where_count; i++)
            if (!p->where[i].path_len) add_client_cond(B, n, &p->where[i]);
        f->base.next_hop = &n->base;
        roots = n;
    } else {
        f = new_fetch(B, MG_FIND, me);
        f->coll = me->collection;
        f->shape = each;
        f->match = MG_MATCH_PARAMS;
        int all_server = 1;
        for (size_t i = 0; i < p->where_count; i++) {
            const kp_cond *c = &p->where[i];
            const char *field = cond_field(B, me, c, NULL);
            if (field) { add_cond(B, f, c, field); continue; }
            /* a condition on a record of another collection: read it, filter in the client */
            all_server = 0;
            f->is_client_filtered = 1;
            kp_design_note(B->d, "'%s' filters %s by %s.%s, a value of another collection: the client reads each candidate's "
                                 "%s and filters; embedding or copying %s.%s into %s would make it one find",
                           p->name, p->root->name, c->path[0]->name ? c->path[0]->name : "?", c->attr->name,
                           c->path[0]->name ? c->path[0]->name : "?", c->path[0]->target->name, c->attr->name, p->root->name);
        }
        if (each) {
            order_listing(B, p, f, each, NULL, NULL, all_server);
            f->expected = each->expect.is_given ? each->expect.avg : p->root->count;
        }
        index_for(B, f, p);
        if (f->is_scan) {
            int allowed = 0;
            for (size_t i = 0; i < B->m->hint_count; i++)
                if (strcmp(B->m->hints[i].kind, "allow_scan") == 0 && B->m->hints[i].pattern == p &&
                    (strcmp(B->m->hints[i].database, "mongodb") == 0 || strcmp(B->m->hints[i].database, "any") == 0))
                    allowed = 1;
            if (p->root->count <= 1000 && each && !each->where_count) allowed = 1;
            if (allowed) f->is_scan = 0;
            else kp_design_defect(B->d, p, "'%s' reads every %s document with no filter and no order: a collection scan",
                                  p->name, p->root->name);
        }
        for (size_t i = 0; i < p->where_count; i++)
            if (p->where[i].path_len && !cond_field(B, me, &p->where[i], NULL))
                if (plan_path(&P, f, me, NULL, p->where[i].path, p->where[i].path_len)) return -1;
        roots = f;
    }
    *out = f;
    const kp_shape *top = each ? each : p->returns;
    if (!p->is_root_set &&
        (p->returns->kind == KP_SHAPE_EACH || p->returns->kind == KP_SHAPE_ONE || p->returns->kind == KP_SHAPE_COUNT))
        return plan_path(&P, roots, roots->entity, p->returns, p->returns->hops, p->returns->hop_count);
    return plan_children(&P, roots, top, roots->entity);
}

/* ---- find text (plans, emit) ------------------------------------------------------------------------------ */

static void text_value(kp_arena *arena, const char **out, const kp_operand *v)
{
    if (v->param) *out = kp_arena_printf(arena, "<%s>", v->param->name);
    else {
        char *t = cJSON_PrintUnformatted(v->literal);
        *out = kp_arena_printf(arena, "%s", t ? t : "?");
        cJSON_free(t);
    }
}

static const char *quoted_field(kp_arena *arena, const char *field)
{
    return strchr(field, '.') ? kp_arena_printf(arena, "\"%s\"", field) : field;
}

static const char *cond_text(kp_arena *arena, const kp_cond *c, const char *field, int merged);

/* Is a find's i-th condition in its text (`skip_key`: not an equality on a key field, which
 * the _id look-up holds)? */
static int cond_shown(const mg_fetch *f, size_t i, int skip_key)
{
    return !(skip_key && f->conds[i]->attr->key_index >= 0 && f->conds[i]->op == KP_OP_EQ);
}

/* The conditions of a find as "field: value" parts, several on one field merged (an
 * equality then written { $eq: value }). */
static const char *conds_text(kp_arena *arena, const mg_fetch *f, int skip_key)
{
    const char *out = "";
    for (size_t i = 0; i < f->cond_count; i++) {
        if (!cond_shown(f, i, skip_key)) continue;
        int seen = 0, shared = 0;
        for (size_t j = 0; j < i; j++) seen |= cond_shown(f, j, skip_key) && strcmp(f->cond_fields[j], f->cond_fields[i]) == 0;
        if (seen) continue;
        for (size_t j = i + 1; j < f->cond_count; j++) shared |= cond_shown(f, j, skip_key) && strcmp(f->cond_fields[j], f->cond_fields[i]) == 0;
        const char *part = cond_text(arena, f->conds[i], f->cond_fields[i], shared);
        for (size_t j = i + 1; j < f->cond_count; j++) {
            if (!cond_shown(f, j, skip_key) || strcmp(f->cond_fields[j], f->cond_fields[i]) != 0) continue;
            const char *more = cond_text(arena, f->conds[j], f->cond_fields[j], 1);
            const char *a = strstr(part, "{ "), *b = strstr(more, "{ ");
            if (a && b) part = kp_arena_printf(arena, "%.*s, %s", (int)(strlen(part) - 2), part, b + 2);
        }
        out = kp_arena_printf(arena, "%s%s%s", out, out[0] ? ", " : "", part);
    }
    return out;
}

static const char *cond_text(kp_arena *arena, const kp_cond *c, const char *field, int merged)
{
    const char *v, *u = NULL;
    text_value(arena, &v, &c->value);
    if (c->op == KP_OP_BETWEEN) text_value(arena, &u, &c->upper);
    const char *f = quoted_field(arena, field);
    switch (c->op) {
    case KP_OP_EQ: return kp_arena_printf(arena, merged ? "%s: { $eq: %s }" : "%s: %s", f, v);
    case KP_OP_LT: return kp_arena_printf(arena, "%s: { $lt: %s }", f, v);
    case KP_OP_LE: return kp_arena_printf(arena, "%s: { $lte: %s }", f, v);
    case KP_OP_GT: return kp_arena_printf(arena, "%s: { $gt: %s }", f, v);
    case KP_OP_GE: return kp_arena_printf(arena, "%s: { $gte: %s }", f, v);
    case KP_OP_BETWEEN: return kp_arena_printf(arena, "%s: { $gte: %s, $lte: %s }", f, v, u);
    case KP_OP_BEGINS_WITH: return kp_arena_printf(arena, "%s: { $regex: \"^%s\" }", f, v); /* the prefix regex-escaped */
    }
    return "";
}

/* The parameter a split listing's page skips by (offset paging), or NULL. */
static const kp_param *split_skip(const mg_fetch *f)
{
    return f->order_shape && f->order_shape->page == KP_PAGE_OFFSET ? f->order_shape->offset_param : NULL;
}

/* A server-ordered find with `filter`, its sort, skip and limit. */
static const char *sorted_find_text(kp_arena *arena, const mg_fetch *f, const char *prefix, const char *coll, const char *filter)
{
    const char *text = kp_arena_printf(arena, "db.getCollection(\"%s%s\").find({ %s%s })", prefix, coll, filter,
                                       f->is_paged && f->order_shape && f->order_shape->page == KP_PAGE_TOKEN
                                           ? kp_arena_printf(arena, "%s$or: <after the page token>", filter[0] ? ", " : "")
                                           : "");
    const char *sort = "";
    for (size_t i = 0; i < f->sort_count; i++)
        sort = kp_arena_printf(arena, "%s%s%s: %d", sort, i ? ", " : "", quoted_field(arena, f->sort[i].path), f->sort[i].is_desc ? -1 : 1);
    if (sort[0]) text = kp_arena_printf(arena, "%s.sort({ %s })", text, sort);
    if (f->is_paged && f->order_shape && f->order_shape->page == KP_PAGE_OFFSET && f->order_shape->offset_param)
        text = kp_arena_printf(arena, "%s.skip(<%s>)", text, f->order_shape->offset_param->name);
    if (f->limit > 0) text = kp_arena_printf(arena, "%s.limit(%lld)", text, (long long)f->limit + (f->reads_ties ? 1 : 0));
    else if (f->limit < 0 && f->order_shape && f->order_shape->limit_param)
        text = kp_arena_printf(arena, "%s.limit(<%s>)", text, f->order_shape->limit_param->name);
    return text;
}

const char *kp_mg_fetch_text(kp_arena *arena, const mg_fetch *f, const kp_pattern *p, const char *prefix)
{
    if (f->kind == MG_NESTED || f->kind == MG_KEYS) return NULL;
    const char *coll = f->coll ? f->coll->name : "?";
    const char *filter = "";
#define PART(...) filter = kp_arena_printf(arena, "%s%s%s", filter, filter[0] ? ", " : "", kp_arena_printf(arena, __VA_ARGS__))
    switch (f->match) {
    case MG_MATCH_PARAMS: {
        /* a look-up by the whole key is by _id */
        const kp_entity *e = f->entity->entity;
        int by_key = !f->shape && f->entity->collection && e->key_count > 0;
        for (size_t k = 0; by_key && k < e->key_count; k++) {
            int found = 0;
            for (size_t i = 0; i < f->cond_count; i++) found |= f->conds[i]->attr == e->key[k] && f->conds[i]->op == KP_OP_EQ;
            by_key &= found;
        }
        if (by_key) {
            if (e->key_count == 1) {
                for (size_t i = 0; i < f->cond_count; i++)
                    if (f->conds[i]->attr == e->key[0]) { const char *v; text_value(arena, &v, &f->conds[i]->value); PART("_id: %s", v); }
            } else {
                const char *id = "";
                for (size_t k = 0; k < e->key_count; k++)
                    for (size_t i = 0; i < f->cond_count; i++)
                        if (f->conds[i]->attr == e->key[k]) {
                            const char *v;
                            text_value(arena, &v, &f->conds[i]->value);
                            id = kp_arena_printf(arena, "%s%s%s", id, k ? " + \"|\" + " : "", v);
                        }
                PART("_id: %s", id);
            }
            const char *rest = conds_text(arena, f, 1);
            if (rest[0]) PART("%s", rest);
        } else {
            const char *all = conds_text(arena, f, 0);
            if (all[0]) PART("%s", all);
        }
        break;
    }
    case MG_MATCH_PARENT: {
        const kp_relation *rel = kp_mg_next_hop(f) && kp_mg_next_hop(f)->rel ? kp_mg_next_hop(f)->rel->relation : NULL;
        if (rel && rel->fk_count == 1) PART("_id: <%s>", rel->fk_attrs[0]->name);
        else if (rel) {
            const char *id = "";
            for (size_t k = 0; k < rel->fk_count; k++) id = kp_arena_printf(arena, "%s%s<%s>", id, k ? " + \"|\" + " : "", rel->fk_attrs[k]->name);
            PART("_id: %s", id);
        }
        break;
    }
    case MG_MATCH_FK: case MG_MATCH_ARRAY:
        for (size_t k = 0; k < f->match_count; k++) {
            const char *from = kp_arena_printf(arena, "<%s.%s>", f->match_from[k]->entity ? f->match_from[k]->entity->name : "?",
                                               f->match_from[k]->name);
            if (f->is_per_parent || f->match_count > 1) PART("%s: %s", quoted_field(arena, f->match_fields[k]), from);
            else PART("%s: { $in: [%s, ...] }", quoted_field(arena, f->match_fields[k]), from);
        }
        {
            const char *all = conds_text(arena, f, 0);
            if (all[0]) PART("%s", all);
        }
        break;
    case MG_MATCH_KEY: {
        const char *from = "";
        const kp_entity *e = f->entity->entity;
        for (size_t k = 0; k < e->key_count; k++) {
            const kp_attr *a = f->key_from ? f->key_from[k] : NULL;
            from = kp_arena_printf(arena, "%s%s<%s.%s>", from, k ? "+" : "", a && a->entity ? a->entity->name : "?", a ? a->name : "?");
        }
        PART("_id: { $in: [%s, ...] }", from);
        break;
    }
    }
    if (kp_mg_is_split(f)) {
        /* the first sort key's nulls and the others, in one round trip (execute.c) */
        const char *field = quoted_field(arena, f->sort[0].path), *sep = filter[0] ? ", " : "";
        int nulls_first = f->order_shape->order[0].is_nulls_first;
        const char *nulls = kp_arena_printf(arena, "%s%s%s: null", filter, sep, field);
        const char *others = kp_arena_printf(arena, "%s%s%s: { $ne: null }", filter, sep, field);
        const char *first = nulls_first ? nulls : others, *second = nulls_first ? others : nulls;
        const char *skip = split_skip(f) ? kp_arena_printf(arena, "<%s>", split_skip(f)->name) : NULL;
        const char *limit = f->limit > 0 ? kp_arena_printf(arena, "%lld", (long long)f->limit)
                          : f->order_shape->limit_param ? kp_arena_printf(arena, "<%s>", f->order_shape->limit_param->name) : NULL;
        mg_fetch rest = *f;
        rest.is_paged = 0;  /* its skip is the client's */
        rest.limit = 0;
        /* one command a line (emit's queries.md runs each), the count only when pages skip */
        return kp_arena_printf(arena, "%s\n%s%s%s", sorted_find_text(arena, f, prefix, coll, first),
                               skip ? kp_arena_printf(arena, "db.getCollection(\"%s%s\").countDocuments({ %s })\n", prefix, coll, first)
                                    : "",
                               sorted_find_text(arena, &rest, prefix, coll, second),
                               limit ? kp_arena_printf(arena, ".limit(%s%s%s)", skip ? skip : "", skip ? " + " : "", limit) : "");
    }
#undef PART
    const char *text;
    if (f->kind == MG_COUNT) text = kp_arena_printf(arena, "db.getCollection(\"%s%s\").countDocuments({ %s })", prefix, coll, filter);
    else if (f->kind == MG_FIND && f->is_server_ordered && f->sort_count) return sorted_find_text(arena, f, prefix, coll, filter);
    else text = kp_arena_printf(arena, "db.getCollection(\"%s%s\").find({ %s%s })", prefix, coll, filter,
                                f->is_paged && f->is_server_ordered && f->order_shape && f->order_shape->page == KP_PAGE_TOKEN
                                    ? kp_arena_printf(arena, "%s$or: <after the page token>", filter[0] ? ", " : "")
                                    : "");
    if (f->kind == MG_FIND && !f->shape && f->match == MG_MATCH_PARAMS && !f->entity->parent) {
        text = kp_arena_printf(arena, "%s.limit(1)", text);
    }
    return text;
}

/* ---- neutral plans -------------------------------------------------------------------------------------- */

static double per_parent_items(const mg_fetch *f)
{
    const kp_shape *s = f->shape ? f->shape : f->order_shape;
    double n = fanout_avg(f->rel);
    if (f->match == MG_MATCH_KEY && f->rel && f->rel->relation->link == KP_LINK_ARRAY) n = fanout_avg(f->rel);
    else if (f->match == MG_MATCH_KEY) n = 1;
    if (f->entity->entity == (f->rel && f->rel->relation->link == KP_LINK_THROUGH ? f->rel->relation->through : NULL))
        n = fanout_avg(f->rel);
    if (s && s->kind == KP_SHAPE_EACH && s->expect.is_given) n = s->expect.avg;
    int64_t lim = s && s->kind == KP_SHAPE_EACH ? (s->limit_param && s->limit_param->default_value
                                                      ? (int64_t)s->limit_param->default_value->valuedouble
                                                      : s->limit) : 0;
    if (lim > 0 && n > (double)lim && (f->is_server_ordered || f->kind == MG_NESTED)) n = (double)lim;
    return n;
}

/* n documents cut at the largest page when the server cuts it (`paged`: the shape whose
 * page kind counts); a token-paged find reads one more to know whether another page
 * follows (execute.c). */
static double cut_at_page(const mg_fetch *f, const kp_shape *s, const kp_shape *paged, double n)
{
    double lim = s && s->kind == KP_SHAPE_EACH ? kp_shape_limit_max(s) : 0;
    if (lim <= 0 || n <= lim || !(f->is_server_ordered || f->kind == MG_NESTED)) return n;
    return lim + (f->kind == MG_FIND && f->is_paged && paged && paged->page == KP_PAGE_TOKEN ? 1 : 0);
}

/* The most documents one parent can yield: the fan-out max (or $expect max), cut at the
 * largest page. Never below the expected `per`. */
static double per_parent_items_max(const mg_fetch *f, double per)
{
    const kp_shape *s = f->shape ? f->shape : f->order_shape;
    double n = f->rel && f->rel->fanout ? f->rel->fanout->max : per;
    if (f->match == MG_MATCH_KEY && !(f->rel && f->rel->relation->link == KP_LINK_ARRAY)) n = 1;
    if (s && s->kind == KP_SHAPE_EACH && s->expect.is_given && s->expect.max > 0) n = s->expect.max;
    n = cut_at_page(f, s, f->order_shape, n);
    return n > per ? n : per;
}

typedef struct opctx {
    builder *B;
    const kp_pattern *p;
    kp_plan *plan;
    const char *why;
} opctx;

/* A held page's tie read (execute.c read_held_ties): when the document after the page's last
 * ties with it on the order's fields, the documents with those values, for the lines the
 * client orders among them. On a timestamp (or a unique value) not expected; one more round
 * trip at most; every document of a parent may tie. */
static void held_tie_op(opctx *O, const mg_fetch *f, double parents, double parents_max, double whole, double whole_max,
                        int *my_step)
{
    builder *B = O->B;
    kp_plan *plan = O->plan;
    const kp_attr *a0 = f->tie_attrs[0];
    int is_rare = f->reads_ties == 1 && a0 && (a0->is_unique || a0->type.kind == KP_T_TIMESTAMP);
    kp_operation *tie = kp_plan_add_op(B->d, plan, "find", f->coll->name);
    const mg_index *x = serving(f->coll, f->index);
    tie->index = x ? x->name : "_id_";
    const char *eq = "";
    for (size_t i = 0; i < f->reads_ties; i++)
        eq = kp_arena_printf(&B->d->arena, "%s, %s: <the %s of the document after the page>", eq, quoted_field(&B->d->arena, f->sort[i].path),
                             f->sort[i].path);
    /* the find's filter with the tie's values for the order's conditions */
    mg_fetch plain = *f;
    plain.limit = 0;
    plain.sort_count = 0;
    plain.is_server_ordered = 0;
    plain.cond_count = 0;
    plain.conds = kp_arena_alloc(&B->d->arena, sizeof *plain.conds * (f->cond_count + 1));
    plain.cond_fields = kp_arena_alloc(&B->d->arena, sizeof *plain.cond_fields * (f->cond_count + 1));
    for (size_t i = 0; plain.conds && plain.cond_fields && i < f->cond_count; i++) {
        int on_tie = 0;
        for (size_t k = 0; k < f->reads_ties; k++) on_tie |= f->conds[i]->attr == f->tie_attrs[k];
        if (on_tie) continue;
        plain.conds[plain.cond_count] = f->conds[i];
        plain.cond_fields[plain.cond_count++] = f->cond_fields[i];
    }
    const char *text = kp_mg_fetch_text(&B->d->arena, &plain, O->p, "");
    size_t len = strlen(text);
    tie->condition = len > 3 && strcmp(text + len - 3, " })") == 0
                         ? kp_arena_printf(&B->d->arena, "%.*s%s })", (int)(len - 3), text, eq) : text;
    tie->step = is_rare ? *my_step : ++*my_step;
    tie->more_steps_max = is_rare;
    tie->waits_for_previous = 1;
    tie->is_tie_read = 1;
    double sent = (double)f->limit + 1;
    tie->requests = is_rare ? 0 : parents * (whole >= sent ? 1 : 0);
    tie->requests_max = parents_max;
    tie->items = tie->requests;
    tie->items_max = parents_max * (whole_max > sent ? whole_max : sent);
    double doc = mg_document_bytes(f->coll->owner), doc_max = mg_document_bound_bytes(f->coll->owner);
    tie->bytes = tie->items * doc;
    tie->bytes_max = tie->items_max * doc_max;
    tie->why = kp_arena_printf(&B->d->arena, "only when the document after the page's last ties with it on %s%s: the documents "
                               "with its value%s, whose %s the client orders with the page's", f->sort[0].path,
                               f->reads_ties > 1 ? " and the order's next fields" : "",
                               is_rare ? " (rare on a timestamp: not expected)" : "",
                               kp_mg_next_hop(f) ? kp_mg_next_hop(f)->entity->entity->name : "lines");
    plan->is_requests_exact = 0;
}

/* The claims of one fetch, for the shared walker (backends/fetch.c): `in` holds the expected
 * number of inputs and the most there can be (the model's maxima along the way), and its
 * round trip: expected figures come from the first, the bounds that verify holds every page
 * to from the second. */
static void price_fetch(void *ctx, const kp_fetch *node, const kp_fetch_load *in, kp_fetch_load *out)
{
    opctx *O = ctx;
    const mg_fetch *f = (const mg_fetch *)node;
    double parents = in->expected, parents_max = in->max;
    int is_exact_one = in->is_exact, my_step = in->step;
    builder *B = O->B;
    kp_plan *plan = O->plan;
    double per = f->rel ? per_parent_items(f) : (f->shape ? (f->expected > 0 ? f->expected : 1) : 1);
    double per_max = f->rel ? per_parent_items_max(f, per) : per;
    if (!f->rel && f->shape && f->shape->kind == KP_SHAPE_EACH) {
        const kp_shape *s = f->shape;
        int64_t lim = s->limit_param && s->limit_param->default_value ? (int64_t)s->limit_param->default_value->valuedouble : s->limit;
        double whole = per;
        /* the bound: the $expect max, not its average, cut at the page where the server cuts */
        double whole_max = s->expect.is_given && s->expect.max > whole ? s->expect.max : whole;
        if (lim > 0 && per > (double)lim && f->is_server_ordered) per = (double)lim;
        per_max = f->is_server_ordered ? cut_at_page(f, s, s, whole_max) : whole_max;
        if (kp_mg_is_split(f)) {
            /* the first part's page, and the second part from its start to skip + limit */
            const kp_param *skip = split_skip(f);
            double at = skip && skip->default_value ? skip->default_value->valuedouble : 0;
            double at_max = skip ? (skip->max ? skip->max->valuedouble : whole_max) : 0;
            double page_max = kp_shape_limit_max(s) > 0 ? kp_shape_limit_max(s) : whole_max;
            per += fmin(whole, lim > 0 ? at + (double)lim : whole);
            per_max = fmin(whole_max, page_max) + fmin(whole_max, at_max + page_max);
        }
        if (per_max < per) per_max = per;
    }
    if (!f->rel && kp_mg_next_hop(f)) per = per_max = 1; /* the parent documents of embedded roots */
    double per_whole = per, per_whole_max = per_max; /* before a held page cuts them */
    if (f->is_held_page) {
        double sent = (double)f->limit + (f->reads_ties ? 1 : 0);
        per = fmin(per, sent);
        per_max = fmin(per_max, sent);
    }
    if (parents_max < parents) parents_max = parents;
    double produced = parents * per, produced_max = parents_max * per_max;
    if (f->kind == MG_FIND || f->kind == MG_COUNT) {
        const mg_collection *c = f->coll;
        kp_operation *o = kp_plan_add_op(B->d, plan, f->kind == MG_COUNT ? "count" : "find", c ? c->name : "?");
        const mg_index *x = c ? serving(c, f->index) : NULL;
        o->index = x ? x->name : (f->is_scan ? NULL : "_id_");
        o->condition = kp_mg_fetch_text(&B->d->arena, f, O->p, "");
        o->waits_for_previous = my_step > 1 && !f->base.is_independent;
        o->step = my_step;
        double requests = f->is_per_parent ? parents : (f->match == MG_MATCH_KEY ? ceil(produced / KP_MG_IN_BATCH) : 1);
        if (f->is_per_parent == 0 && f->match != MG_MATCH_KEY && f->rel && parents > KP_MG_IN_BATCH) requests = ceil(parents / KP_MG_IN_BATCH);
        if (requests < 1) requests = 1;
        if (kp_mg_is_split(f)) {
            /* two finds, and the count of the first part when the page skips */
            const kp_param *skip = split_skip(f);
            requests = skip && skip->default_value && skip->default_value->valuedouble > 0 ? 3 : 2;
            if (skip) plan->is_requests_exact = 0;
        }
        o->requests = requests;
        if (!is_exact_one || (f->match == MG_MATCH_KEY && f->rel) || (f->rel && f->rel->relation->link == KP_LINK_ARRAY))
            plan->is_requests_exact = 0;
        const mg_entity *holder = f->coll ? f->coll->owner : f->entity;
        double doc = mg_document_bytes(holder);
        o->items = f->kind == MG_COUNT ? 0 : produced;
        o->bytes = o->items * doc;
        if (f->kind == MG_COUNT) o->items = 0;
        /* bounds: every input at the model's maxima, every document at its largest; a count
         * sends no document back (its n comes from the index) */
        double request_max = f->is_per_parent ? parents_max
                                              : (f->match == MG_MATCH_KEY ? ceil(produced_max / KP_MG_IN_BATCH) : 1);
        if (f->is_per_parent == 0 && f->match != MG_MATCH_KEY && f->rel && parents_max > KP_MG_IN_BATCH)
            request_max = ceil(parents_max / KP_MG_IN_BATCH);
        if (kp_mg_is_split(f)) request_max = split_skip(f) ? 3 : 2;
        o->requests_max = request_max > requests ? request_max : requests;
        o->items_max = f->kind == MG_COUNT ? 0 : produced_max;
        o->bytes_max = o->items_max * mg_document_bound_bytes(holder);
        o->is_scan = f->is_scan;
        if (f->is_scan) {
            o->items = f->coll && f->coll->owner ? f->coll->owner->entity->count : 0;
            o->bytes = o->items * doc;
            o->items_max = o->items * parents_max;
            o->bytes_max = o->items_max * mg_document_bound_bytes(holder);
        }
        if (f->kind == MG_FIND && f->rel && f->rel->is_many && f->rel->fanout && !f->is_scan && f->match != MG_MATCH_KEY &&
            (!f->is_server_ordered || f->client_cond_count)) {
            /* every match is read (no limit: the client sorts or tests): one page takes the
             * whole fan-out at its largest */
            double each_max = f->rel->fanout->max > per_max ? f->rel->fanout->max : per_max;
            o->items_max = parents_max * each_max;
            o->bytes_max = o->items_max * mg_document_bound_bytes(holder);
        }
        if (kp_mg_is_split(f))
            o->why = kp_arena_printf(&B->d->arena, "MongoDB sorts a missing or null %s lowest, and the order puts its nulls %s: "
                                     "they are a find of their own, the others another, in the same round trip (and a count of "
                                     "the first part when the page skips: the second part's page starts past what the skip leaves "
                                     "of it), each read in the index's order up to the page",
                                     f->order_shape->order[0].attr->name, f->order_shape->order[0].is_nulls_first ? "first" : "last");
        else if (!f->is_server_ordered && f->shape && f->shape->kind == KP_SHAPE_EACH && f->shape->declared_order_count)
            o->why = "every match is read and the client sorts and cuts the page (the server cannot give the declared order)";
        else if (f->base.is_independent)
            o->why = "its filter comes from the parameters: sent with the first find, not after it";
        else if (f->match == MG_MATCH_KEY)
            o->why = "a follow-up find by _id with $in on the values the previous answer holds (no $lookup)";
        else if (f->kind == MG_FIND && f->is_paged && f->is_server_ordered && f->order_shape && f->order_shape->page == KP_PAGE_TOKEN)
            o->why = "reads one document more than the page to know whether another page follows";
        if (f->is_held_page) {
            const mg_fetch *lines = kp_mg_next_hop(f);
            const char *what = lines ? lines->entity->entity->name : "line";
            o->why = kp_arena_printf(&B->d->arena, "%s%seach %s it returns holds at least one %s the listing keeps (the find tests it too), so "
                                     "the first %lld in the listing's order hold its page%s", o->why ? o->why : "", o->why ? "; " : "",
                                     f->entity->entity->name, what, (long long)f->limit,
                                     f->reads_ties ? ", and one more tells whether the next ties with the last" : "");
            if (f->reads_ties) held_tie_op(O, f, parents, parents_max, per_whole, per_whole_max, &my_step);
        }
    } else if (f->kind == MG_NESTED) {
        const char *what = f->is_container ? kp_arena_printf(&B->d->arena, "the %s document that holds it", f->entity->entity->name)
                         : f->extref ? kp_arena_printf(&B->d->arena, "the copied %s fields under '%s'", f->entity->entity->name, f->extref->field)
                         : f->nested && f->nested->subset ? kp_arena_printf(&B->d->arena, "the first %lld %s copied in '%s'",
                                                                            (long long)f->nested->subset, f->entity->entity->name, f->nested->field)
                         : f->nested ? kp_arena_printf(&B->d->arena, "the %s embedded in '%s'", f->entity->entity->name, f->nested->field)
                                     : kp_arena_printf(&B->d->arena, "the %s references the document holds", f->entity->entity->name);
        if (!O->why) O->why = kp_arena_printf(&B->d->arena, "no extra request for %s", what);
        else if (!strstr(O->why, what)) O->why = kp_arena_printf(&B->d->arena, "%s; %s", O->why, what);
    }
    /* what the next levels run on */
    int exact_next = is_exact_one;
    if (f->kind == MG_FIND || f->kind == MG_NESTED || f->kind == MG_KEYS) {
        int to_one = f->rel && !f->rel->is_many;
        int required = 1;
        if (f->rel && f->rel->relation->link == KP_LINK_FOREIGN_KEY && f->rel->relation->holder == f->rel->source)
            for (size_t k = 0; k < f->rel->relation->fk_count; k++) required &= !f->rel->relation->fk_attrs[k]->is_optional;
        else required = 0;
        if (f->is_container) required = 1;
        if (!f->rel) exact_next = is_exact_one && !O->p->is_root_set && !kp_mg_next_hop(f);
        else exact_next = is_exact_one && to_one && required;
        if (!f->rel && kp_mg_next_hop(f)) exact_next = 0;
    }
    out->expected = produced;
    out->max = produced_max;
    out->is_exact = exact_next;
    out->step = my_step;
}

/* What the shared walkers must know of each fetch (backends/fetch.h): nested records and
 * keys send no request, a count yields nothing to go on with. */
static void mark_roles(mg_fetch *f)
{
    for (; f; f = kp_mg_next_hop(f)) {
        f->base.is_free = f->kind == MG_NESTED || f->kind == MG_KEYS;
        f->base.is_terminal = f->kind == MG_COUNT;
        for (size_t i = 0; i < f->base.child_count; i++) mark_roles(kp_mg_child(f, i));
    }
}

/* The next-hop chain of an embedded root keeps its children on its last hop. */
void mg_plan_ops(builder *B, const kp_pattern *p, mg_fetch *root, kp_plan *plan)
{
    opctx O = {B, p, plan, NULL};
    plan->is_requests_exact = 1;
    mark_roles(root);
    kp_fetch_claim(&root->base, price_fetch, &O);
    kp_plan_total(plan);
    plan->why = O.why;
    for (size_t i = 0; i < plan->op_count; i++)
        if (plan->ops[i].is_scan) {
            plan->is_scan = 1;
        }
}

/* ---- write plans ---------------------------------------------------------------------------------------------- */

static kp_write_touch *touch(builder *B, kp_write_plan *wp, const char *container, const char *what, double count, double bytes)
{
    kp_write_touch *x = kp_write_plan_touch(B->d, wp);
    if (!x) return NULL;
    x->container = container;
    x->what = what;
    x->count = count;
    x->bytes = count * bytes;
    return x;
}

/* Per entity (by index): the holders of a subset of it (entity index * 65536 + nested slot),
 * each in model order, so the touches come out in the order a full scan gives. */
static void index_subsets(const builder *B, kp_index_list *subsets)
{
    for (size_t e = 0; e < B->L->entity_count; e++) {
        const mg_entity *pe = &B->L->entities[e];
        for (size_t i = 0; i < pe->nested_count; i++)
            if (pe->nested[i].subset && i < 65536) kp_index_list_push(&subsets[pe->nested[i].child->entity->index], e * 65536 + i);
    }
}

/* What a write plan adds up while its effects are priced. */
typedef struct write_sum {
    const kp_write *wr;
    kp_write_plan *wp;
    double requests;
    const char *only_doc;       /* every step writes this one document */
    int one_doc;
    double reads;               /* of the requests, reads before writing */
} write_sum;

/* n write requests per operation when any record of the effect changes: a command per step
 * and collection, whatever it matches (writes.c sends the documents that changed), or a
 * command per KP_MG_WRITE_BATCH of the effect's documents when they are more (a copy
 * rewritten in 2,001 projects goes in 5 commands) */
static void add_requests(builder *B, write_sum *S, const kp_write_effect *fx, double n)
{
    double docs = fx && fx->count > 0 ? fx->count : 0;
    S->requests += n + (docs > KP_MG_WRITE_BATCH ? ceil(docs / KP_MG_WRITE_BATCH) - 1 : 0);
    kp_write_plan_requests_once(B->d, S->wp, fx, n);
    if (docs > 0) kp_write_plan_requests(B->d, S->wp, fx, docs / KP_MG_WRITE_BATCH);
}

/* The requests of a step that writes `rows` documents: one command, or a for_each's documents
 * in bulk commands of KP_MG_WRITE_BATCH, as many as the records it reaches need. */
static void add_step_requests(builder *B, write_sum *S, const kp_write_effect *fx, double rows)
{
    if (!fx->step->for_each) {
        add_requests(B, S, fx, 1);
        return;
    }
    S->requests += rows > KP_MG_WRITE_BATCH ? ceil(rows / KP_MG_WRITE_BATCH) : 1;
    kp_write_plan_requests(B->d, S->wp, fx, rows / KP_MG_WRITE_BATCH);
}

/* Whether the records a step reaches with for_each sit in one document of the parent that
 * embeds them: every hop to-one (one record), or, for an update or a delete, a last hop that
 * is the parent's own array of them after to-one hops. A to-many hop before that reaches
 * records in as many documents: share-match's feed items, inserted in every follower's
 * Player document, are one write per follower, not one. */
static int for_each_in_one_document(const kp_write_step *st, const mg_entity *me)
{
    size_t n = st->for_each_len;
    if (n && st->op != KP_WRITE_INSERT && st->for_each[n - 1]->source == me->parent->entity) n--;
    for (size_t k = 0; k < n; k++)
        if (st->for_each[k]->is_many) return 0;
    return 1;
}

/* The step's own document (or the one that embeds its record), its index entries and the
 * subsets that copy it. */
static void price_records(builder *B, write_sum *S, const kp_write_effect *fx, const kp_index_list *subsets)
{
    static const char *const ops[] = {"insertOne", "updateOne", "updateOne (upsert)", "deleteOne"};
    const kp_write_step *st = fx->step;
    const mg_entity *me = mg_entity_of(B, st->entity);
    double rows = fx->count;
    const mg_collection *home = kp_mg_home(B->L, st->entity);
    const char *home_name = home ? home->name : "?";
    double doc = mg_document_bytes(home ? home->owner : me);
    if (me->parent) {
        const char *what = kp_design_printf(B->d, "the %s document holding the %s in '%s' (%s)", me->parent->entity->name,
                                            st->entity->name, me->path,
                                            me->is_single ? (st->op == KP_WRITE_DELETE ? "$unset" : "$set")
                                            : st->op == KP_WRITE_INSERT ? "$push" : st->op == KP_WRITE_DELETE ? "$pull" : "positional $set");
        const char *doc_id = kp_design_printf(B->d, "%s", me->parent->entity->name);
        if (!S->only_doc) S->only_doc = doc_id;
        else if (strcmp(S->only_doc, doc_id) != 0) S->one_doc = 0;
        if (!for_each_in_one_document(st, me)) S->one_doc = 0;
        /* embedded children inserted with their parent in the same write go in its insertOne */
        int with_parent = 0;
        for (size_t k = 0; k < fx->step_index; k++)
            with_parent |= S->wr->steps[k].entity == me->parent->entity && S->wr->steps[k].op == KP_WRITE_INSERT;
        if (with_parent && st->op == KP_WRITE_INSERT) {
            touch(B, S->wp, home_name, kp_design_printf(B->d, "%s embedded in the new %s document (same insertOne)",
                                                        st->entity->name, me->parent->entity->name), rows, 0);
        } else {
            touch(B, S->wp, home_name, what, rows, doc);
            kp_write_plan_items(B->d, S->wp, fx, rows);
            add_step_requests(B, S, fx, rows);
        }
    } else {
        touch(B, S->wp, home_name, kp_design_printf(B->d, "%s document (%s)", st->entity->name, ops[st->op]), rows, doc);
        if (!S->only_doc) S->only_doc = st->entity->name;
        else if (strcmp(S->only_doc, st->entity->name) != 0) S->one_doc = 0;
        if (rows > 1.0001) S->one_doc = 0;
        kp_write_plan_items(B->d, S->wp, fx, rows);
        add_step_requests(B, S, fx, rows);
    }
    /* a condition or an insert-if-absent is tested against the document on the server: the
     * write reads its collection (place-order's stock test keeps Product needed) */
    if (home && (st->condition_count || st->is_if_absent)) kp_write_plan_read(B->d, S->wp, home->name);
    /* index entries */
    if (home) {
        size_t live = 0;
        for (size_t i = 0; i < home->index_count; i++) live += !home->indexes[i]->is_redundant;
        if (live) touch(B, S->wp, home_name, kp_design_printf(B->d, "%zu secondary index entr%s of %s", live, live == 1 ? "y" : "ies",
                                                              home_name), rows * (double)live, 0);
    }
    /* subsets that hold this entity */
    const kp_index_list *holders = &subsets[st->entity->index];
    for (size_t h = 0; h < holders->count; h++) {
        const mg_entity *pe = &B->L->entities[holders->at[h] / 65536];
        const mg_nested *n = &pe->nested[holders->at[h] % 65536];
        if (n->child != me || !n->subset) continue;
        touch(B, S->wp, pe->collection ? pe->collection->name : "?",
              kp_design_printf(B->d, "the %s document's subset '%s' (re-read the first %lld %s, $set)", pe->entity->name, n->field,
                               (long long)n->subset, st->entity->name),
              rows, mg_document_bytes(pe));
        kp_write_plan_items(B->d, S->wp, fx, rows);
        S->requests += 1; /* the re-read */
        S->reads += 1;
        if (home) kp_write_plan_read(B->d, S->wp, home->name);
        add_requests(B, S, fx, 1);
        S->one_doc = 0;
    }
}

/* The extended reference a referencing entity's documents hold over fx->rel, when it copies
 * a changed field: rewritten in every document that references the record. */
static void price_reference(builder *B, write_sum *S, const kp_write_effect *fx)
{
    const kp_write_step *st = fx->step;
    const mg_entity *ce = mg_entity_of(B, fx->entity);
    for (size_t i = 0; i < ce->extref_count; i++) {
        const mg_extref *x = &ce->extrefs[i];
        if (x->rel != fx->rel) continue;
        int changed = 0;
        for (size_t a = 0; a < st->assign_count; a++)
            for (size_t k = 0; k < x->attr_count; k++) changed |= st->assigns[a].attr == x->attrs[k];
        if (!changed) continue;
        const mg_collection *cc = kp_mg_home(B->L, ce->entity);
        touch(B, S->wp, cc ? cc->name : "?", kp_design_printf(B->d, "copies in '%s' of %s documents (updateMany)", x->field,
                                                              ce->entity->name), fx->count, 0);
        kp_write_plan_items(B->d, S->wp, fx, fx->count);
        add_requests(B, S, fx, 1);
        S->one_doc = 0;
    }
}

static void price_copy(builder *B, write_sum *S, const kp_write_effect *fx)
{
    const mg_collection *cc = kp_mg_home(B->L, fx->entity);
    touch(B, S->wp, cc ? cc->name : "?", kp_design_printf(B->d, "%s.%s copies (updateMany)", fx->entity->name, fx->attr->name),
          fx->count, 0);
    kp_write_plan_items(B->d, S->wp, fx, fx->count);
    add_requests(B, S, fx, 1);
    S->one_doc = 0;
}

/* The copies of a step's changed fields (fx .. end: its copy and reference effects, each kind
 * in entity order), by the entity that holds them: its extended references, then its own
 * copy_of attributes. */
static void price_copies(builder *B, write_sum *S, const kp_write_effect *fx, const kp_write_effect *end)
{
    const kp_write_effect *copy = fx, *ref = fx;
    while (ref < end && ref->kind == KP_EFFECT_COPY) ref++;
    const kp_write_effect *copies_end = ref;
    while (copy < copies_end || ref < end) {
        const kp_entity *e = copy == copies_end ? ref->entity
                           : ref == end || copy->entity->index < ref->entity->index ? copy->entity : ref->entity;
        for (; ref < end && ref->entity == e; ref++) price_reference(B, S, ref);
        for (; copy < copies_end && copy->entity == e; copy++) price_copy(B, S, copy);
    }
}

void mg_plan_writes(builder *B)
{
    const kp_model *m = B->m;
    size_t lists = m->entity_count ? m->entity_count : 1;
    kp_write_effects effects = {0};
    kp_error err;
    kp_index_list *subsets = calloc(lists, sizeof *subsets);
    if (!subsets || kp_write_effects_build(m, &effects, &err)) {
        free(subsets);
        kp_write_effects_free(&effects);
        return;
    }
    index_subsets(B, subsets);
    for (size_t w = 0; w < m->write_count; w++) {
        const kp_write *wr = m->writes[w];
        write_sum S = {.wr = wr, .wp = &B->d->write_plans[w], .one_doc = 1};
        kp_write_plan_begin(S.wp);
        const kp_write_effect_list *fxs = &effects.of_write[w];
        for (size_t i = 0, end; i < fxs->count; i = end) {
            const kp_write_effect *fx = &fxs->items[i];
            end = i + 1;
            switch (fx->kind) {
            case KP_EFFECT_RECORDS: price_records(B, &S, fx, subsets); break;
            case KP_EFFECT_COPY:
            case KP_EFFECT_REFERENCE:
                while (end < fxs->count && fxs->items[end].step == fx->step &&
                       (fxs->items[end].kind == KP_EFFECT_COPY || fxs->items[end].kind == KP_EFFECT_REFERENCE))
                    end++;
                price_copies(B, &S, fx, &fxs->items[end]);
                break;
            case KP_EFFECT_AGGREGATE: {
                /* a computed value over this entity (none to update when the write inserts its holder) */
                if (fx->count <= 0) break;
                const mg_collection *cc = kp_mg_home(B->L, fx->entity), *home = kp_mg_home(B->L, fx->step->entity);
                int same_doc = cc && home && cc == home;
                touch(B, S.wp, cc ? cc->name : "?", kp_design_printf(B->d, "%s.%s (computed, $inc / $set)%s", fx->entity->name,
                                                                     fx->attr->name, same_doc ? " in the same document" : ""),
                      fx->count, 0);
                if (!same_doc) { kp_write_plan_items(B->d, S.wp, fx, fx->count); add_requests(B, &S, fx, 1); S.one_doc = 0; }
                break;
            }
            case KP_EFFECT_CASCADE:
            case KP_EFFECT_DETACH: {
                /* the referenced records a delete takes with it or detaches, unless embedded
                 * (gone with the document) */
                if (mg_entity_of(B, fx->entity)->parent == mg_entity_of(B, fx->rel->source)) break;
                const mg_collection *cc = kp_mg_home(B->L, fx->entity);
                touch(B, S.wp, cc ? cc->name : "?",
                      kp_design_printf(B->d, fx->kind == KP_EFFECT_CASCADE ? "%s documents of the deleted %s (deleteMany)"
                                                                           : "%s documents of the deleted %s, detached (updateMany)",
                                       fx->entity->name, fx->rel->source->name), fx->count, 0);
                kp_write_plan_items(B->d, S.wp, fx, fx->count);
                add_requests(B, &S, fx, 1);
                S.one_doc = 0;
                break;
            }
            case KP_EFFECT_PAIRING: /* a join record is a document of its own: its own records */
            case KP_EFFECT_UNIQUE:  /* a unique index entry: one of the index entries */
                break;
            }
        }
        kp_write_plan *wp = S.wp;
        wp->requests = S.requests > 0 ? S.requests : 1;
        wp->read_requests = S.reads;
        if (S.one_doc && S.only_doc) {
            wp->mechanism = kp_design_printf(B->d, "one write to one %s document: atomic without a transaction", S.only_doc);
            wp->requests = 1;
            wp->read_requests = 0;
            wp->items_per_request = INFINITY;
            wp->items = 1;
            if (wp->share_count) {  /* whatever the steps change, one document per operation */
                wp->shares[0] = (kp_write_share){.count = 1};
                wp->share_count = 1;
            }
        } else if (wr->is_atomic) {
            wp->mechanism = "a multi-document transaction (session.withTransaction); FerretDB has none, so verify applies the "
                            "documents in order and reports atomicity as not exercised";
        } else if (wr->schedule_every_s > 0) {
            wp->mechanism = "bulkWrite, unordered, 500 operations per request";
        } else {
            wp->mechanism = S.requests > 1.5 ? "one request per document group, in order" : "one request";
        }
    }
    for (size_t i = 0; i < lists; i++) kp_index_list_free(&subsets[i]);
    free(subsets);
    kp_write_effects_free(&effects);
}

/* ---- containers ------------------------------------------------------------------------------------------------- */

void mg_describe_collections(builder *B)
{
    for (size_t ci = 0; ci < B->L->collection_count; ci++) {
        mg_collection *col = B->L->collections[ci];
        const mg_entity *owner = col->owner;
        kp_container *c = kp_design_add_container(B->d, col->name, "collection");
        /* shard key fields (partition) and _id */
        const char *sk = col->shard_key;
        kp_key_part *keys = kp_arena_alloc(&B->d->arena, sizeof *keys * 3);
        size_t kn = 0;
        char first[256] = "";
        if (sk && sscanf(sk, "{ %255[^:]", first) == 1 && strcmp(first, "_id") != 0) {
            keys[kn++] = (kp_key_part){kp_design_printf(B->d, "%s", first), KP_KEY_PARTITION, 0, ""};
        }
        const char *idf = "";
        for (size_t k = 0; k < owner->entity->key_count; k++)
            idf = kp_design_printf(B->d, "%s%s<%s.%s>", idf, k ? ", " : "", owner->entity->name, owner->entity->key[k]->name);
        keys[kn++] = (kp_key_part){"_id", strcmp(first, "_id") == 0 ? KP_KEY_PARTITION : KP_KEY_FIELD, 0,
                                   owner->entity->key_count > 1 ? kp_design_printf(B->d, "{ %s }", idf) : idf};
        c->keys = keys;
        c->key_count = kn;
        /* entities held here: the owner, embedded ones, subset copies */
        const kp_entity **ents = kp_arena_alloc(&B->d->arena, sizeof *ents * (owner->nested_count + 1));
        size_t en = 0;
        ents[en++] = owner->entity;
        for (size_t i = 0; i < owner->nested_count; i++) {
            int seen = 0;
            for (size_t k = 0; k < en; k++) seen |= ents[k] == owner->nested[i].child->entity;
            if (!seen) ents[en++] = owner->nested[i].child->entity;
        }
        c->entities = ents;
        c->entity_count = en;
        c->items = owner->entity->count;
        c->bytes = owner->entity->count * mg_document_bytes(owner);
        c->max_item_bytes = mg_document_max_bytes(owner);
        const char *why = kp_design_printf(B->d, "one document per %s", owner->entity->name);
        for (size_t i = 0; i < owner->nested_count; i++) {
            const mg_nested *n = &owner->nested[i];
            why = kp_design_printf(B->d, "%s; %s %s in '%s'", why,
                                   n->subset ? kp_design_printf(B->d, "the first %lld", (long long)n->subset) : n->is_array ? "its" : "its",
                                   n->child->entity->name, n->field);
        }
        for (size_t i = 0; i < owner->extref_count; i++)
            why = kp_design_printf(B->d, "%s; copies of %s fields in '%s'", why, owner->extrefs[i].rel->target->name, owner->extrefs[i].field);
        c->why = why;
        size_t live = 0;
        for (size_t i = 0; i < col->index_count; i++) live += !col->indexes[i]->is_redundant;
        c->indexes = kp_arena_alloc(&B->d->arena, sizeof *c->indexes * (live ? live : 1));
        for (size_t i = 0; i < col->index_count; i++) {
            const mg_index *x = col->indexes[i];
            if (x->is_redundant) continue;
            kp_index_desc *d = &c->indexes[c->index_count++];
            d->name = kp_design_printf(B->d, "%s", x->name);
            d->kind = x->is_unique ? "unique index" : "index";
            d->key_count = x->field_count;
            d->keys = kp_arena_alloc(&B->d->arena, sizeof *d->keys * x->field_count);
            for (size_t k = 0; k < x->field_count; k++)
                d->keys[k] = (kp_key_part){kp_design_printf(B->d, "%s", x->fields[k].path), KP_KEY_FIELD, x->fields[k].is_desc, ""};
            /* causes, with those of the indexes it absorbed */
            size_t most = 1;
            for (size_t j = 0; j < col->index_count; j++)
                if (col->indexes[j] == x || (col->indexes[j]->is_redundant && serving(col, col->indexes[j]) == x))
                    most += col->indexes[j]->cause_count;
            const char **causes = kp_arena_alloc(&B->d->arena, sizeof *causes * most);
            size_t cn = 0;
            for (size_t j = 0; j < col->index_count; j++) {
                const mg_index *y = col->indexes[j];
                if (y != x && !(y->is_redundant && serving(col, y) == x)) continue;
                for (size_t k = 0; k < y->cause_count; k++) {
                    int seen = 0;
                    for (size_t z = 0; z < cn; z++) seen |= strcmp(causes[z], y->causes[k]->name) == 0;
                    if (!seen) causes[cn++] = y->causes[k]->name;
                }
            }
            d->caused_by = causes;
            d->caused_by_count = cn;
            const char *fields = "";
            for (size_t k = 0; k < x->field_count; k++)
                fields = kp_design_printf(B->d, "%s%s%s: %d", fields, k ? ", " : "", x->fields[k].path, x->fields[k].is_desc ? -1 : 1);
            kp_decision *dec = kp_design_decide(
                B->d, kp_design_printf(B->d, "%s index %s", col->name, x->name),
                kp_design_printf(B->d, "%s{ %s }", x->is_unique ? "unique " : "", fields),
                x->is_unique ? kp_design_printf(B->d, "a look-up by the unique %s is one index probe, and the index keeps it unique",
                                                x->fields[0].path)
                             : kp_design_printf(B->d, "Equality-Sort-Range: the equality fields first, then the sort (the key last, "
                                                "so ties break as declared), then the range; the find reads only the documents "
                                                "it returns%s%s%s", x->backwards ? "; " : "", x->backwards ? x->backwards : "",
                                                x->backwards ? " walks it backwards for the opposite order (no second index)" : ""));
            for (size_t j = 0; dec && j < col->index_count; j++) {
                const mg_index *y = col->indexes[j];
                if (y != x && !(y->is_redundant && serving(col, y) == x)) continue;
                for (size_t k = 0; k < y->cause_count; k++) kp_decision_add_pattern(B->d, dec, y->causes[k]);
            }
        }
        for (size_t i = 0; i < col->index_count; i++) {
            const mg_index *x = col->indexes[i];
            if (!x->is_redundant) continue;
            kp_design_note(B->d, "%s: the index %s would be a prefix of %s, which serves its finds; it is not created",
                           col->name, x->name, x->served_by);
        }
        kp_design_decide(B->d, kp_design_printf(B->d, "%s shard key", col->name), col->shard_key, col->shard_why);
        /* the validator */
        const char *required = "";
        for (size_t a = 0; a < owner->entity->attr_count; a++)
            if (!owner->entity->attrs[a]->is_optional && !owner->entity->attrs[a]->derived)
                required = kp_design_printf(B->d, "%s%s%s", required, required[0] ? ", " : "", owner->entity->attrs[a]->name);
        kp_design_decide(B->d, kp_design_printf(B->d, "%s validator", col->name),
                         kp_design_printf(B->d, "$jsonSchema: bsonType per attribute, enums, required [%s]", required),
                         "the server refuses a document that does not fit the model (where it implements validators; "
                         "FerretDB does not, and keyplan warns)");
        if (mg_document_bytes(owner) > KP_MG_MAX_DOC_BYTES)
            kp_design_defect(B->d, NULL, "a %s document averages %.1f MB, above MongoDB's 16 MB document limit", owner->entity->name,
                             mg_document_bytes(owner) / 1048576);
    }
}
