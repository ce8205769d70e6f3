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
 * The same holds for what a listing returns of a related record that holds the link itself
 * (`"invoice": "shipping.invoice"`, a Shipment that names its order): every design would
 * read that record once per element of the page. A backend weighs copies over references
 * the referencing record holds itself (backends/copies.h); over this other direction the
 * record to copy into is not the one the write names, so keyplan keeps the copy here, by
 * the same rule, and the response field reads it.
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

kp_attr *kp_copy_on(const kp_entity *root, kp_rel *const *path, size_t n, const kp_attr *source)
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

int kp_copy_path_moves_on_insert(kp_rel *const *path, size_t n)
{
    if (!n) return 0;
    const kp_relation *r = path[n - 1]->relation;
    return r->link == KP_LINK_FOREIGN_KEY && r->holder == path[n - 1]->target;
}

/* The records a second the writes would rewrite to keep a copy of `attr` over `path` on
 * `root`: the root records that reach each changed record back along the path (fan-outs
 * before --scale), for every update that assigns the attribute, and every insert or delete
 * of its record when that moves the copy, unless the same write writes the root record
 * anyway. */
static double upkeep_rate(const kp_entity *root, kp_rel *const *path, size_t n, const kp_attr *attr, char *names, size_t size)
{
    double holders = 1;
    for (size_t h = 0; h < n; h++) {
        const kp_relation *r = path[h]->relation;
        double back = path[h]->is_inverse ? r->unscaled_fanout.avg : r->unscaled_inverse_fanout.avg;
        holders *= back > 0 ? back : 1;
    }
    const kp_entity *e = attr->entity;
    int moves = kp_copy_path_moves_on_insert(path, n);
    double rate = 0;
    size_t len = 0;
    names[0] = 0;
    for (size_t i = 0; i < e->write_step_count; i++) {
        const kp_write_step *st = e->write_steps[i];
        int counts = 0;
        if (st->op == KP_WRITE_UPDATE || st->op == KP_WRITE_UPSERT)
            for (size_t a = 0; a < st->assign_count && !counts; a++) counts = st->assigns[a].attr == attr;
        else if (moves && kp_write_writes_entity(e->step_writes[i], root)) {
            if (len + 64 < size && !strstr(names, e->step_writes[i]->name))
                len += (size_t)snprintf(names + len, size - len, "%s%s 0/s: it writes the %s anyway", len ? ", " : "",
                                        e->step_writes[i]->name, root->name);
        } else
            counts = moves;
        if (!counts) continue;
        double w = kp_write_rps(e->step_writes[i], NULL) * kp_write_step_records(st) * holders;
        rate += w;
        if (len + 64 < size && !strstr(names, e->step_writes[i]->name))
            len += (size_t)snprintf(names + len, size - len, "%s%s %.0f/s", len ? ", " : "", e->step_writes[i]->name, w);
    }
    return rate;
}

/* "shipping" + "carrier" -> "shippingCarrier": the hops, then the attribute, camel-cased. */
static void copy_name(kp_rel *const *path, size_t n, const kp_attr *attr, char *buf, size_t size)
{
    size_t o = 0;
    buf[0] = 0;
    for (size_t h = 0; h <= n && o + 1 < size; h++) {
        const char *part = h < n ? path[h]->name : attr->name;
        if (!part) part = "x";
        int at = (int)o;
        o += (size_t)snprintf(buf + o, size - o, "%s", part);
        if (o >= size) o = size - 1;
        if (h > 0 && buf[at]) buf[at] = (char)toupper((unsigned char)buf[at]);
    }
}

/* Adds the copy of `attr` over `path` to `root`, as a declared copy_of would, kept for
 * `why`; NULL when the name is taken (or out of memory: *failed). */
static kp_attr *add_copy(kp_parser *P, kp_entity *root, kp_rel **path, size_t n, kp_attr *attr, const char *why, kp_pos pos,
                         int *failed)
{
    char name[128];
    copy_name(path, n, attr, name, sizeof name);
    if (kp_entity_name_taken(root, name)) return NULL;
    kp_attr *a = ALLOC(P, kp_attr);
    kp_copy *copy = ALLOC(P, kp_copy);
    if (!a || !copy) {
        *failed = kp_perr(P, NULL, 0, "out of memory");
        return NULL;
    }
    memset(a, 0, sizeof *a);
    copy->path = path;
    copy->path_len = n;
    copy->source = attr;
    a->name = kp_pstrdup(P, name);
    a->type = attr->type;
    a->avg_size = attr->avg_size;
    a->max_size = attr->max_size;
    a->encoding = attr->encoding;
    a->entity = root;
    a->key_index = -1;
    a->is_optional = 1;        /* absent while the related record is */
    a->presence = attr->presence > 0 ? attr->presence : 1;
    a->copy_of = copy;
    a->pos = pos;
    a->is_kept = 1;
    a->kept_why = why;
    a->index = root->attr_count;
    if (!a->name || !why || kp_entity_append_attr(P, &root->attrs, &root->attr_count, a) ||
        kp_entity_append_attr(P, &attr->entity->copied_by, &attr->entity->copied_by_count, a)) {
        *failed = -1;
        return NULL;
    }
    return a;
}

/* A copy for a listing's condition: the records its listings filter a second against the
 * writes that would keep it. */
static int keep_filter(kp_parser *P, kp_pattern *p, kp_cond *c)
{
    kp_model *m = P->m;
    kp_entity *root = p->root;
    char readers[256], writers[256];
    double reads = filtering_rate(m, root, c, readers, sizeof readers);
    double writes = upkeep_rate(root, c->path, c->path_len, c->attr, writers, sizeof writers);
    if (reads <= 0 || reads <= KEEP_WRITE_WEIGHT * writes) return 0;
    const char *why = kp_arena_printf(&m->arena,
                                      "without it, %s would read about %.0f %s records a second and each one's %s to filter by "
                                      "%s; kept on %s, the writes that change %s.%s (%s) rewrite %.0f records a second",
                                      readers, reads, root->name, c->path[0]->name, c->attr->name, root->name,
                                      c->attr->entity->name, c->attr->name, *writers ? writers : "none", writes);
    int failed = 0;
    add_copy(P, root, c->path, c->path_len, c->attr, why, p->pos, &failed);
    return failed;
}

/* The listing over the pattern's root set its response is, or holds as a member; NULL. */
static kp_shape *root_listing(const kp_pattern *p)
{
    kp_shape *s = p->returns;
    if (s->kind == KP_SHAPE_EACH) return s->is_root_set ? s : NULL;
    for (size_t i = 0; s->kind == KP_SHAPE_OBJECT && i < s->member_count; i++)
        if (s->members[i]->kind == KP_SHAPE_EACH && s->members[i]->is_root_set) return s->members[i];
    return NULL;
}

/* A field of the listing's elements that reads a related record which holds the link
 * itself (a backend's own copies answer references: backends/copies.h). */
static int wants_field_copy(const kp_shape *f)
{
    if (f->kind != KP_SHAPE_ATTR || !f->path_len || f->attr->copy_of || f->attr->derived) return 0;
    for (size_t h = 0; h < f->path_len; h++) {
        const kp_relation *r = f->path[h]->relation;
        if (r->link != KP_LINK_FOREIGN_KEY || r->holder != f->path[h]->source) return 1;
    }
    return 0;
}

/* A copy for a field the listing returns: the related records its pages read a second (the
 * page, or the $expect average when smaller) against the writes that would keep it. */
static int keep_field(kp_parser *P, kp_pattern *p, const kp_shape *each, kp_shape *f)
{
    kp_model *m = P->m;
    kp_entity *root = p->root;
    double page = each->limit > 0 ? (double)each->limit : 0;
    if (each->expect.is_given && (page <= 0 || each->expect.avg < page)) page = each->expect.avg;
    if (page <= 0) return 0;
    double rps = kp_pattern_rps(p, NULL);
    double reads = rps * page;
    char writers[256];
    double writes = upkeep_rate(root, f->path, f->path_len, f->attr, writers, sizeof writers);
    if (reads <= 0 || reads <= KEEP_WRITE_WEIGHT * writes) return 0;
    const char *why = kp_arena_printf(&m->arena,
                                      "without it, %s at %g/s would read each of its %.0f %s records' %s to return %s (%.0f reads "
                                      "a second); kept on %s, the writes that change %s.%s (%s) rewrite %.0f records a second",
                                      p->name, rps, page, root->name, f->path[0]->name, f->attr->name, reads, root->name,
                                      f->attr->entity->name, f->attr->name, *writers ? writers : "none", writes);
    int failed = 0;
    add_copy(P, root, f->path, f->path_len, f->attr, why, f->pos, &failed);
    return failed;
}

int kp_keep_copies(kp_parser *P)
{
    kp_model *m = P->m;
    for (size_t i = 0; i < m->pattern_count; i++) {
        kp_pattern *p = m->patterns[i];
        for (size_t w = 0; p->is_root_set && w < p->where_count; w++) {
            kp_cond *c = &p->where[w];
            if (!c->path_len) continue;
            if (!kp_copy_on(p->root, c->path, c->path_len, c->attr) && keep_filter(P, p, c)) return -1;
            kp_attr *copy = kp_copy_on(p->root, c->path, c->path_len, c->attr);
            if (!copy || !copy->is_kept) continue; /* a declared copy: the designs look it up themselves */
            /* the condition tests the copy: the same records, selected by the root's own value */
            c->attr = copy;
            c->path = NULL;
            c->path_len = 0;
        }
        kp_shape *each = p->is_root_set ? root_listing(p) : NULL;
        for (size_t k = 0; each && k <= each->member_count; k++) {
            kp_shape *f = k < each->member_count ? each->members[k] : each->value;
            if (!f || !wants_field_copy(f)) continue;
            if (!kp_copy_on(p->root, f->path, f->path_len, f->attr) && keep_field(P, p, each, f)) return -1;
            kp_attr *copy = kp_copy_on(p->root, f->path, f->path_len, f->attr);
            if (!copy || !copy->is_kept) continue;
            /* the field reads the copy: the related value, or null when there is none */
            f->attr = copy;
            f->path = NULL;
            f->path_len = 0;
        }
    }
    return 0;
}
