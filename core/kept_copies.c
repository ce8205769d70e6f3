/*
 * kept_copies.c — copies keyplan keeps on the root record so that a listing selects by a
 * value of a related record in its index (issue #14: order-response's day-carrier-orders,
 * the orders of a day whose shipment went with one carrier).
 *
 * A pattern whose `where` tests an attribute of another entity (`shipping.carrier`, over
 * to-one hops) cannot put that value in a key: a design reads every root record its index
 * returns, then each one's related record, and filters in the client. When those reads
 * cost more than the writes that would keep the value on the root record (each update of
 * the related attribute rewrites the records that copy it), the parser adds a copy to the
 * root entity — exactly what a model's own `"copy_of"` declares — marked `is_kept` with
 * the figures that chose it, and the pattern's condition tests the copy. The copy holds
 * the related value whenever the related record exists and is absent otherwise, so the
 * condition selects the same records. From there every part treats it as a declared
 * copy: the data loader computes it, every design keys by it, the writes that assign the
 * related attribute keep it in step and price that, and verify checks the listing against
 * the oracle, which reads the copy the loader computed. The generator leaves it out of the
 * NDJSON it writes, and `check` shows it as kept.
 *
 * Invariant: the decision reads only the model (rates without a mix, fan-outs before
 * --scale), so every database, every command and every scale sees the same entities.
 */
#include "core/model_internal.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>

/* As for kept counts: a record written costs about ten read. */
#define KEEP_WRITE_WEIGHT 10.0

/* The copy of `source` over `path` the root already holds (declared, or kept before). */
static kp_attr *copy_on(const kp_entity *root, kp_rel *const *path, size_t n, const kp_attr *source)
{
    for (size_t a = 0; a < root->attr_count; a++) {
        const kp_copy *c = root->attrs[a]->copy_of;
        if (!c || c->source != source || c->path_len != n) continue;
        size_t h = 0;
        while (h < n && c->path[h] == path[h]) h++;
        if (h == n) return root->attrs[a];
    }
    return NULL;
}

static int same_path(const kp_cond *a, const kp_cond *b)
{
    if (a->attr != b->attr || a->path_len != b->path_len) return 0;
    for (size_t h = 0; h < a->path_len; h++)
        if (a->path[h] != b->path[h]) return 0;
    return 1;
}

/* The records a second the listings that test `c`'s value read to filter it: each one's
 * declared $expect average (a listing without one is not counted), and their names. */
static double filtering_rate(const kp_model *m, const kp_entity *root, const kp_cond *c, char *names, size_t size)
{
    double rate = 0;
    size_t len = 0;
    names[0] = 0;
    for (size_t i = 0; i < m->pattern_count; i++) {
        const kp_pattern *p = m->patterns[i];
        if (p->root != root || !p->is_root_set || p->returns->kind != KP_SHAPE_EACH || !p->returns->expect.is_given) continue;
        int tests = 0;
        for (size_t w = 0; w < p->where_count && !tests; w++) tests = same_path(&p->where[w], c);
        if (!tests) continue;
        double rps = kp_pattern_rps(p, NULL);
        rate += rps * p->returns->expect.avg;
        if (len + 64 < size && !strstr(names, p->name))
            len += (size_t)snprintf(names + len, size - len, "%s%s at %g/s (%.0f each)", len ? ", " : "", p->name, rps,
                                    p->returns->expect.avg);
    }
    return rate;
}

/* The records a second the writes that assign the related attribute would rewrite: the
 * root records that reach each changed record back along the path (fan-outs before
 * --scale). */
static double upkeep_rate(const kp_cond *c, char *names, size_t size)
{
    double holders = 1;
    for (size_t h = 0; h < c->path_len; h++) {
        const kp_relation *r = c->path[h]->relation;
        double back = c->path[h]->is_inverse ? r->unscaled_fanout.avg : r->unscaled_inverse_fanout.avg;
        holders *= back > 0 ? back : 1;
    }
    const kp_entity *e = c->attr->entity;
    double rate = 0;
    size_t len = 0;
    names[0] = 0;
    for (size_t i = 0; i < e->write_step_count; i++) {
        const kp_write_step *st = e->write_steps[i];
        int assigns = 0;
        for (size_t a = 0; a < st->assign_count && !assigns; a++) assigns = st->assigns[a].attr == c->attr;
        if (!assigns || (st->op != KP_WRITE_UPDATE && st->op != KP_WRITE_UPSERT)) continue;
        double w = kp_write_rps(e->step_writes[i], NULL) * kp_write_step_records(st) * holders;
        rate += w;
        if (len + 64 < size && !strstr(names, e->step_writes[i]->name))
            len += (size_t)snprintf(names + len, size - len, "%s%s %.0f/s", len ? ", " : "", e->step_writes[i]->name, w);
    }
    return rate;
}

/* "shipping" + "carrier" -> "shippingCarrier": the hops, then the attribute, camel-cased. */
static void copy_name(const kp_cond *c, char *buf, size_t size)
{
    size_t o = 0;
    buf[0] = 0;
    for (size_t h = 0; h <= c->path_len && o + 1 < size; h++) {
        const char *part = h < c->path_len ? c->path[h]->name : c->attr->name;
        if (!part) part = "x";
        int at = (int)o;
        o += (size_t)snprintf(buf + o, size - o, "%s", part);
        if (o >= size) o = size - 1;
        if (h > 0 && buf[at]) buf[at] = (char)toupper((unsigned char)buf[at]);
    }
}

static int keep(kp_parser *P, kp_pattern *p, kp_cond *c)
{
    kp_model *m = P->m;
    kp_entity *root = p->root;
    char readers[256], writers[256], name[128];
    double reads = filtering_rate(m, root, c, readers, sizeof readers);
    double writes = upkeep_rate(c, writers, sizeof writers);
    if (reads <= 0 || reads <= KEEP_WRITE_WEIGHT * writes) return 0;
    copy_name(c, name, sizeof name);
    if (kp_entity_name_taken(root, name)) return 0;
    kp_attr *a = ALLOC(P, kp_attr);
    kp_copy *copy = ALLOC(P, kp_copy);
    if (!a || !copy) return kp_perr(P, NULL, 0, "out of memory");
    memset(a, 0, sizeof *a);
    copy->path = c->path;
    copy->path_len = c->path_len;
    copy->source = c->attr;
    a->name = kp_pstrdup(P, name);
    a->type = c->attr->type;
    a->entity = root;
    a->key_index = -1;
    a->is_optional = 1;        /* absent while the related record is */
    a->presence = c->attr->presence > 0 ? c->attr->presence : 1;
    a->copy_of = copy;
    a->pos = p->pos;
    a->is_kept = 1;
    a->kept_why = kp_arena_printf(&m->arena,
                                  "without it, %s would read about %.0f %s records a second and each one's %s to filter by "
                                  "%s; kept on %s, the writes that change %s.%s (%s) rewrite %.0f records a second",
                                  readers, reads, root->name, c->path[0]->name, c->attr->name, root->name,
                                  c->attr->entity->name, c->attr->name, *writers ? writers : "none", writes);
    a->index = root->attr_count;
    if (!a->name || !a->kept_why || kp_entity_append_attr(P, &root->attrs, &root->attr_count, a) ||
        kp_entity_append_attr(P, &c->attr->entity->copied_by, &c->attr->entity->copied_by_count, a))
        return -1;
    return 0;
}

int kp_keep_copies(kp_parser *P)
{
    kp_model *m = P->m;
    for (size_t i = 0; i < m->pattern_count; i++) {
        kp_pattern *p = m->patterns[i];
        for (size_t w = 0; p->is_root_set && w < p->where_count; w++) {
            kp_cond *c = &p->where[w];
            if (!c->path_len) continue;
            if (!copy_on(p->root, c->path, c->path_len, c->attr) && keep(P, p, c)) return -1;
            kp_attr *copy = copy_on(p->root, c->path, c->path_len, c->attr);
            if (!copy || !copy->is_kept) continue; /* a declared copy: the designs look it up themselves */
            /* the condition tests the copy: the same records, selected by the root's own value */
            c->attr = copy;
            c->path = NULL;
            c->path_len = 0;
        }
    }
    return 0;
}
