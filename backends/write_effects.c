/*
 * write_effects.c — the effects of a model's writes (write_effects.h).
 *
 * Two reverse look-ups are built once per model (the relations that reference an entity by
 * a foreign key, the N:M relations through a join entity); every other fact a step needs
 * hangs off its entity already (copied_by, aggregated_by, rels, attrs). So the whole
 * enumeration reads each write step and each thing it reaches once: linear in the model,
 * which matters on the 10,000-entity models of the benchmarks.
 */
#include "backends/write_effects.h"

#include "backends/copies.h"

#include <string.h>

/* For each entity (by index), a run of relation directions: items[first[e] .. first[e + 1]]. */
typedef struct rel_runs {
    size_t *first;
    const kp_rel **items;
} rel_runs;

/* Sizes the runs from per-entity counts (first[e + 1] holds entity e's count on entry), then
 * turns the counts into offsets; fill[e] is where entity e's next item goes. */
static int start_runs(kp_arena *arena, rel_runs *runs, size_t *fill, size_t entity_count)
{
    for (size_t e = 0; e < entity_count; e++) runs->first[e + 1] += runs->first[e];
    runs->items = kp_arena_alloc(arena, sizeof *runs->items * (runs->first[entity_count] + 1));
    if (!runs->items) return -1;
    for (size_t e = 0; e <= entity_count; e++) fill[e] = runs->first[e];
    return 0;
}

/* A direction whose records hold a reference to its target, from which a backend may copy:
 * a to-one foreign key its source holds, or an N:M whose join records name the targets (the
 * holders are then the join records), to another entity. */
static int is_reference(const kp_rel *r)
{
    const kp_relation *rel = r->relation;
    if (r->target == r->source) return 0;
    if (rel->link == KP_LINK_THROUGH) return rel->through != NULL;
    return !r->is_many && rel->link == KP_LINK_FOREIGN_KEY && rel->holder == r->source;
}

/* referencing: per entity, the references to it, in the referencing entities' model order
 * and then in the order of their relations; pairing: per join entity, the forward direction
 * of each N:M relation through it, in model order. */
static int index_model(kp_arena *arena, const kp_model *m, rel_runs *referencing, rel_runs *pairing)
{
    size_t n = m->entity_count;
    size_t *fill = kp_arena_alloc(arena, sizeof *fill * (n + 1));
    referencing->first = kp_arena_alloc(arena, sizeof *referencing->first * (n + 1));
    pairing->first = kp_arena_alloc(arena, sizeof *pairing->first * (n + 1));
    if (!fill || !referencing->first || !pairing->first) return -1;
    for (size_t e = 0; e < n; e++)
        for (size_t r = 0; r < m->entities[e]->rel_count; r++)
            if (is_reference(m->entities[e]->rels[r])) referencing->first[m->entities[e]->rels[r]->target->index + 1]++;
    for (size_t i = 0; i < m->relation_count; i++)
        if (m->relations[i]->link == KP_LINK_THROUGH) pairing->first[m->relations[i]->through->index + 1]++;
    if (start_runs(arena, referencing, fill, n)) return -1;
    for (size_t e = 0; e < n; e++)
        for (size_t r = 0; r < m->entities[e]->rel_count; r++) {
            const kp_rel *ref = m->entities[e]->rels[r];
            if (is_reference(ref)) referencing->items[fill[ref->target->index]++] = ref;
        }
    if (start_runs(arena, pairing, fill, n)) return -1;
    for (size_t i = 0; i < m->relation_count; i++)
        if (m->relations[i]->link == KP_LINK_THROUGH) pairing->items[fill[m->relations[i]->through->index]++] = &m->relations[i]->forward;
    return 0;
}

static int assigns(const kp_write_step *st, const kp_attr *a)
{
    for (size_t i = 0; i < st->assign_count; i++)
        if (st->assigns[i].attr == a) return 1;
    return 0;
}

/* Appends one effect of the step (records: the step's records per operation); NULL when out
 * of memory. */
static kp_write_effect *add(kp_arena *arena, kp_write_effect_list *list, kp_write_effect_kind kind, const kp_write_step *st,
                            size_t step_index, const kp_entity *entity, double records, double per_record)
{
    kp_write_effect *fx = kp_arena_push(arena, (void **)&list->items, &list->count, &list->cap, sizeof *fx);
    if (!fx) return NULL;
    fx->kind = kind;
    fx->step = st;
    fx->step_index = step_index;
    fx->entity = entity;
    fx->records = records;
    fx->per_record = per_record;
    fx->count = records * per_record;
    return fx;
}

/* Records reached back along a copy's path from its source: each inverse hop multiplies by
 * the relation's fan-out; a to-one hop reaches one record. */
static double copy_fanout(const kp_copy *c)
{
    double fan = 1;
    for (size_t h = 0; h < c->path_len; h++) fan *= c->path[h]->is_inverse ? c->path[h]->relation->fanout.avg : 1;
    return fan;
}

/* The records a delete of `records` records of `e` takes with it, and those it leaves
 * without their reference, as the oracle finds them (kp_dataset_dependents, delete_record in
 * core/mutate.c): along every relation whose other side references e — a foreign key held
 * by the other side (cascade: deleted; detach: its key removed), the join records of an N:M
 * (deleted), the records whose array holds e's key (the element removed, detached) — and
 * theirs in turn for what is deleted (depth first; a cycle of cascades stops after 8 hops).
 * A relation that restricts refuses the delete instead: nothing. */
static int cascade(kp_arena *arena, kp_write_effect_list *list, const kp_write_step *st, size_t s, const kp_entity *e,
                   double records, int depth)
{
    for (size_t r = 0; depth < 8 && r < e->rel_count; r++) {
        const kp_rel *rel = e->rels[r];
        const kp_relation *R = rel->relation;
        if (R->on_delete == KP_DELETE_RESTRICT) continue;
        const kp_fanout *per = rel->is_inverse ? &R->inverse_fanout : &R->fanout;
        const kp_entity *gone = NULL, *detached = NULL;
        if (R->link == KP_LINK_FOREIGN_KEY) {
            /* the other side holds the key to e (from e: the relation towards the holder) */
            if (R->referenced != e || (R->holder == R->to) == rel->is_inverse) continue;
            if (R->on_delete == KP_DELETE_CASCADE) gone = R->holder;
            else detached = R->holder;
        } else if (R->link == KP_LINK_THROUGH) {
            gone = R->through;
        } else {
            if (!rel->is_inverse) continue; /* e holds the array: deleting it detaches nothing */
            detached = rel->target;
        }
        kp_write_effect *fx = add(arena, list, gone ? KP_EFFECT_CASCADE : KP_EFFECT_DETACH, st, s, gone ? gone : detached, records,
                                  per->avg > 0 ? per->avg : 1);
        if (!fx) return -1;
        fx->rel = rel;
        if (gone && cascade(arena, list, st, s, gone, fx->count, depth + 1)) return -1;
    }
    return 0;
}

/* Does `other` update the very record that holds an aggregate `st` moves? So when `st` inserts
 * one record (no for_each) of a one-hop aggregate, whose reference attributes take the
 * parameters named like them, and `other` updates the holder by its key with those same
 * parameters (a bid for :itemId, and the item :itemId updated): the value goes into that
 * update's write of the record, not one of its own. */
static int updates_holder(const kp_write_step *other, const kp_write_step *st, const kp_derived *d)
{
    if (other == st || st->op != KP_WRITE_INSERT || st->for_each_len || d->path_len != 1 ||
        (other->op != KP_WRITE_UPDATE && other->op != KP_WRITE_UPSERT) || other->for_each_len)
        return 0;
    const kp_relation *rel = d->path[0]->relation;
    if (rel->link != KP_LINK_FOREIGN_KEY || rel->fk_count == 0 || rel->fk_attrs[0]->entity != st->entity) return 0;
    for (size_t f = 0; f < rel->fk_count; f++) {
        int given = 0;
        for (size_t w = 0; w < other->where_count && !given; w++) {
            const kp_cond *c = &other->where[w];
            given = !c->path_len && c->op == KP_OP_EQ && c->attr == rel->ref_attrs[f] && c->value.param &&
                    strcmp(c->value.param->name, rel->fk_attrs[f]->name) == 0;
        }
        if (!given) return 0;
    }
    return 1;
}

int kp_write_step_changes(const kp_write *w, const kp_write_step *st, const kp_attr *a)
{
    if (!a || (st->op != KP_WRITE_UPDATE && st->op != KP_WRITE_UPSERT)) return 0;
    if (assigns(st, a)) return 1;
    for (size_t k = 0; a->derived && a->entity == st->entity && k < w->step_count; k++)
        if (kp_derived_moved_by(a->derived, &w->steps[k]) && updates_holder(st, &w->steps[k], a->derived)) return 1;
    return 0;
}

static int enumerate_step(kp_arena *arena, kp_write_effect_list *list, const kp_write *w, const kp_write_step *st, size_t s,
                          const rel_runs *referencing, const rel_runs *pairing)
{
    const kp_entity *e = st->entity;
    int is_update = st->op == KP_WRITE_UPDATE || st->op == KP_WRITE_UPSERT;
    double records = kp_write_step_records(st);
    kp_write_effect *fx = add(arena, list, KP_EFFECT_RECORDS, st, s, e, records, 1);
    if (!fx) return -1;
    for (size_t i = pairing->first[e->index];
         (st->op == KP_WRITE_INSERT || st->op == KP_WRITE_DELETE) && i < pairing->first[e->index + 1]; i++) {
        if (!(fx = add(arena, list, KP_EFFECT_PAIRING, st, s, e, records, 1))) return -1;
        fx->rel = pairing->items[i];
    }
    for (size_t i = 0; is_update && i < e->copied_by_count; i++) {
        const kp_attr *copy = e->copied_by[i];
        if (!assigns(st, copy->copy_of->source)) continue;
        if (!(fx = add(arena, list, KP_EFFECT_COPY, st, s, copy->entity, records, copy_fanout(copy->copy_of)))) return -1;
        fx->attr = copy;
    }
    /* an insert or delete of a record that holds the link to the copy's holders (a Shipment
     * naming its order) sets or clears their copies, unless the write writes them anyway */
    for (size_t i = 0; !is_update && i < e->copied_by_count; i++) {
        const kp_attr *copy = e->copied_by[i];
        if (!kp_copy_path_moves_on_insert(copy->copy_of->path, copy->copy_of->path_len) || kp_write_writes_entity(w, copy->entity)) continue;
        if (!(fx = add(arena, list, KP_EFFECT_COPY, st, s, copy->entity, records, copy_fanout(copy->copy_of)))) return -1;
        fx->attr = copy;
    }
    for (size_t i = referencing->first[e->index]; is_update && i < referencing->first[e->index + 1]; i++) {
        const kp_rel *ref = referencing->items[i];
        const kp_entity *holder = ref->relation->link == KP_LINK_THROUGH ? ref->relation->through : ref->source;
        if (!(fx = add(arena, list, KP_EFFECT_REFERENCE, st, s, holder, records, kp_copy_holders_per(ref)))) return -1;
        fx->rel = ref;
    }
    for (size_t i = 0; i < e->aggregated_by_count; i++) {
        if (!kp_derived_moved_by(e->aggregated_by[i]->derived, st)) continue;
        const kp_entity *holder = e->aggregated_by[i]->entity;
        /* the records that hold the value: none to update when the write inserts the holder
         * itself (the value goes in with it); without for_each, a step's rows change the
         * value of one holder (an order's lines, its one order); with it, one per record */
        int inserted = 0;
        for (size_t k = 0; k < w->step_count; k++)
            inserted |= w->steps[k].entity == holder && (w->steps[k].op == KP_WRITE_INSERT ||
                                                         updates_holder(&w->steps[k], st, e->aggregated_by[i]->derived));
        double holders = inserted ? 0 : st->for_each_len || records < 1 ? records : 1;
        if (!(fx = add(arena, list, KP_EFFECT_AGGREGATE, st, s, holder, records, records > 0 ? holders / records : 0))) return -1;
        fx->attr = e->aggregated_by[i];
    }
    for (size_t a = 0; st->op == KP_WRITE_INSERT && a < e->attr_count; a++) {
        if (!e->attrs[a]->is_unique) continue;
        if (!(fx = add(arena, list, KP_EFFECT_UNIQUE, st, s, e, records, 1))) return -1;
        fx->attr = e->attrs[a];
    }
    return st->op == KP_WRITE_DELETE ? cascade(arena, list, st, s, e, records, 0) : 0;
}

int kp_write_effects_build(const kp_model *m, kp_write_effects *out, kp_error *err)
{
    rel_runs referencing = {0}, pairing = {0};
    *out = (kp_write_effects){0};
    out->of_write = kp_arena_alloc(&out->arena, sizeof *out->of_write * (m->write_count ? m->write_count : 1));
    if (!out->of_write || index_model(&out->arena, m, &referencing, &pairing))
        return kp_error_set(err, KP_ERR_NOMEM, NULL, 0, 0, "out of memory while listing what the writes change");
    out->write_count = m->write_count;
    for (size_t w = 0; w < m->write_count; w++)
        for (size_t s = 0; s < m->writes[w]->step_count; s++)
            if (enumerate_step(&out->arena, &out->of_write[w], m->writes[w], &m->writes[w]->steps[s], s, &referencing, &pairing))
                return kp_error_set(err, KP_ERR_NOMEM, NULL, 0, 0, "out of memory while listing what the writes change");
    return 0;
}

void kp_write_effects_free(kp_write_effects *fx)
{
    kp_arena_free(&fx->arena);
    *fx = (kp_write_effects){0};
}
