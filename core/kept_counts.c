/*
 * kept_counts.c — counts keyplan keeps on the parent record instead of counting at read
 * time (issue #14: what an expert draws for "followerCount" on a profile).
 *
 * A `$count` of a to-many relation that no derived attribute holds is counted by every
 * read: a Query (COUNT) or SELECT COUNT(*) over every related record, a countDocuments
 * over an index range. When the reads that count cost more than the writes that would
 * keep the number on the parent (each insert or delete of a counted record updates one
 * more record), the parser adds a derived count to the parent entity — exactly what a
 * model's own `"derived": {"count": ...}` declares — marked `is_kept` with the figures
 * that chose it. From there every part treats it as a declared one: the data loader
 * computes it, every design reads it instead of counting, every write keeps it in step
 * and prices that, and verify compares what the server holds with what the oracle
 * counts. The generator leaves it out of the NDJSON it writes (the data stays the
 * model's), and `check` shows it as kept.
 *
 * Invariant: the decision reads only the model (rates without a mix, fan-outs before
 * --scale), so every database, every command and every scale sees the same entities.
 */
#include "core/model_internal.h"

#include <stdio.h>
#include <string.h>

/* A count that stays under a page (a hundred records) costs one small read; keeping it
 * would buy nothing a reader notices. */
#define KEEP_MIN_FANOUT 100.0
/* One record written costs about what ten read cost (DynamoDB: a write unit per KB, a
 * read unit per 8 KB eventually consistent; Cassandra and MongoDB: a commit-log append and
 * an index update against a page read): the reads a kept count saves must outweigh ten
 * times the records its upkeep writes. */
#define KEEP_WRITE_WEIGHT 10.0

/* The records a count of `hop` counts: the join records of an N:M through an entity, the
 * related records otherwise (NULL for an array of references: its length is on the
 * record already). */
static kp_entity *counted_entity(const kp_rel *hop)
{
    const kp_relation *r = hop->relation;
    if (r->link == KP_LINK_ARRAY) return NULL;
    return r->link == KP_LINK_THROUGH ? r->through : hop->target;
}

/* Two literals, either absent (cJSON_Compare calls two NULLs different). */
static int same_literal(const cJSON *a, const cJSON *b) { return (!a && !b) || (a && b && cJSON_Compare(a, b, 1)); }

static int same_conditions(const kp_cond *a, size_t na, const kp_cond *b, size_t nb)
{
    if (na != nb) return 0;
    for (size_t i = 0; i < na; i++)
        if (a[i].attr != b[i].attr || a[i].op != b[i].op || a[i].path_len || b[i].path_len ||
            !same_literal(a[i].value.literal, b[i].value.literal) || !same_literal(a[i].upper.literal, b[i].upper.literal))
            return 0;
    return 1;
}

/* A derived count of the source that already answers `s` (declared or kept before). */
static const kp_attr *holder(const kp_shape *s)
{
    const kp_entity *e = s->hops[0]->source;
    for (size_t a = 0; a < e->attr_count; a++) {
        const kp_derived *d = e->attrs[a]->derived;
        if (d && d->fn == KP_AGG_COUNT && d->path_len == 1 && d->path[0] == s->hops[0] &&
            same_conditions(d->where, d->where_count, s->where, s->where_count))
            return e->attrs[a];
    }
    return NULL;
}

/* Counts a kept attribute could hold: one to-many hop, literal conditions on the counted
 * records' own attributes; not one the listing beside it answers (kp_shape.counted_by). */
static int can_keep(const kp_shape *s)
{
    if (s->kind != KP_SHAPE_COUNT || s->counted_by || s->hop_count != 1 || !s->hops[0]->is_many || !counted_entity(s->hops[0]))
        return 0;
    for (size_t i = 0; i < s->where_count; i++)
        if (s->where[i].path_len || s->where[i].value.param || s->where[i].upper.param) return 0;
    return 1;
}

/* Writes a second of the records that move the count: inserts and deletes of counted
 * records, and updates that assign a link attribute or one the conditions test. */
static double upkeep_rate(const kp_shape *s, char *names, size_t size)
{
    const kp_entity *e = counted_entity(s->hops[0]);
    kp_rel *path[1] = {s->hops[0]};
    kp_derived tmp = {.fn = KP_AGG_COUNT, .path = path, .path_len = 1, .where = s->where, .where_count = s->where_count};
    const kp_derived *like = &tmp;
    double rate = 0;
    size_t len = 0;
    names[0] = 0;
    for (size_t i = 0; i < e->write_step_count; i++) {
        const kp_write_step *st = e->write_steps[i];
        if (!kp_derived_moved_by(like, st)) continue;
        double w = kp_write_rps(e->step_writes[i], NULL) * kp_write_step_records(st);
        rate += w;
        if (len + 64 < size && !strstr(names, e->step_writes[i]->name))
            len += (size_t)snprintf(names + len, size - len, "%s%s %.0f/s", len ? ", " : "", e->step_writes[i]->name, w);
    }
    return rate;
}

int kp_entity_append_attr(kp_parser *P, kp_attr ***list, size_t *count, kp_attr *a)
{
    kp_attr **longer = ALLOC_N(P, kp_attr *, *count + 1);
    if (!longer) return kp_perr(P, NULL, 0, "out of memory");
    if (*count) memcpy(longer, *list, *count * sizeof *longer);
    longer[(*count)++] = a;
    *list = longer;
    return 0;
}

int kp_entity_name_taken(const kp_entity *e, const char *name)
{
    for (size_t i = 0; i < e->attr_count; i++)
        if (!strcmp(e->attrs[i]->name, name)) return 1;
    for (size_t i = 0; i < e->rel_count; i++)
        if (e->rels[i]->name && !strcmp(e->rels[i]->name, name)) return 1;
    return 0;
}

/* The reads a second that would count through `s`'s relation and conditions, over every
 * pattern, and their names. */
/* A $count a kept attribute could hold, and the pattern that reads it. */
typedef struct count_site {
    const kp_shape *shape;
    const kp_pattern *owner;
} count_site;

typedef struct count_list {
    count_site *items;
    size_t count, cap;
} count_list;

static double reading_rate(const kp_shape *like, const count_list *l, char *names, size_t size)
{
    double rate = 0;
    size_t len = 0;
    names[0] = 0;
    for (size_t i = 0; i < l->count; i++) {
        const kp_shape *s = l->items[i].shape;
        const kp_pattern *p = l->items[i].owner;
        if (s->hops[0] != like->hops[0] || !same_conditions(s->where, s->where_count, like->where, like->where_count)) continue;
        double r = kp_pattern_rps(p, NULL);
        rate += r;
        if (len + 64 < size && !strstr(names, p->name))
            len += (size_t)snprintf(names + len, size - len, "%s%s %.0f/s", len ? ", " : "", p->name, r);
    }
    return rate;
}

static int collect(kp_parser *P, count_list *l, const kp_pattern *p, const kp_shape *s)
{
    if (!s) return 0;
    if (can_keep(s)) {
        count_site *site = kp_arena_push(&P->m->arena, (void **)&l->items, &l->count, &l->cap, sizeof *site);
        if (!site) return kp_perr(P, NULL, 0, "out of memory");
        *site = (count_site){s, p};
    }
    for (size_t i = 0; i < s->member_count; i++)
        if (collect(P, l, p, s->members[i])) return -1;
    return 0;
}

int kp_keep_counts(kp_parser *P)
{
    kp_model *m = P->m;
    count_list l = {0};
    for (size_t i = 0; i < m->pattern_count; i++)
        if (collect(P, &l, m->patterns[i], m->patterns[i]->returns)) return -1;
    for (size_t i = 0; i < l.count; i++) {
        const kp_shape *s = l.items[i].shape;
        if (holder(s)) continue; /* declared, or kept for an earlier pattern */
        /* the model's fan-out, not the one --scale caps: a design seeded small is the design */
        const kp_relation *rel = s->hops[0]->relation;
        const kp_fanout *f = s->hops[0]->is_inverse ? &rel->unscaled_inverse_fanout : &rel->unscaled_fanout;
        if (f->max < KEEP_MIN_FANOUT) continue;
        char readers[256], writers[256];
        double reads = reading_rate(s, &l, readers, sizeof readers);
        double writes = upkeep_rate(s, writers, sizeof writers);
        double items = reads * f->avg;
        if (items <= KEEP_WRITE_WEIGHT * writes) continue;
        kp_entity *e = s->hops[0]->source;
        char name[128];
        snprintf(name, sizeof name, "%sCount", s->hops[0]->name);
        for (int n = 2; kp_entity_name_taken(e, name) && n < 100; n++) snprintf(name, sizeof name, "%sCount%d", s->hops[0]->name, n);
        if (kp_entity_name_taken(e, name)) continue;
        kp_attr *a = ALLOC(P, kp_attr);
        kp_derived *d = ALLOC(P, kp_derived);
        kp_rel **path = ALLOC_N(P, kp_rel *, 1);
        if (!a || !d || !path) return kp_perr(P, NULL, 0, "out of memory");
        memset(a, 0, sizeof *a);
        memset(d, 0, sizeof *d);
        path[0] = s->hops[0];
        d->fn = KP_AGG_COUNT;
        d->path = path;
        d->path_len = 1;
        d->where = s->where;
        d->where_count = s->where_count;
        a->name = kp_pstrdup(P, name);
        a->type.kind = KP_T_INT;
        a->entity = e;
        a->key_index = -1;
        a->presence = 1;
        a->derived = d;
        a->pos = s->pos;
        a->is_kept = 1;
        kp_entity *counted = kp_derived_changed_by(d);
        a->kept_why = kp_arena_printf(&m->arena,
                                      "counted at read time, %s would read about %.0f %s records a second (%.0f on average, up to "
                                      "%.0f, per count); kept on %s, the writes that move it (%s) update %.0f more records a "
                                      "second",
                                      readers, items, counted->name, f->avg, f->max, e->name, *writers ? writers : "none",
                                      writes);
        a->index = e->attr_count;
        if (!a->name || !a->kept_why || kp_entity_append_attr(P, &e->attrs, &e->attr_count, a) ||
            kp_entity_append_attr(P, &counted->aggregated_by, &counted->aggregated_by_count, a))
            return -1;
    }
    return 0;
}
