/*
 * copies.c — what patterns read through a to-one relation, and what keeping copies of it
 * costs the writes (copies.h).
 */
#include "backends/copies.h"

static void need_path(kp_copy_need *n, kp_rel *const *path, size_t len, const kp_attr *attr)
{
    for (size_t i = 0; i < len; i++) {
        if (path[i] != n->rel) continue;
        if (i + 1 < len) { n->is_unfit = 1; return; }
        const kp_relation *rel = n->rel->relation;
        for (size_t k = 0; k < rel->fk_count; k++)
            if (rel->ref_attrs[k] == attr) return; /* the referencing record's foreign key holds it */
        for (size_t k = 0; k < n->attr_count; k++)
            if (n->attrs[k] == attr) return;
        if (n->attr_count == KP_COPY_ATTRS) { n->is_unfit = 1; return; }
        n->attrs[n->attr_count++] = attr;
    }
}

static void need_shape(kp_copy_need *n, const kp_shape *s)
{
    if (!s) return;
    if (s->kind == KP_SHAPE_ATTR) { need_path(n, s->path, s->path_len, s->attr); return; }
    if (s->kind == KP_SHAPE_ONE && s->hop_count == 1 && s->hops[0] == n->rel) {
        /* "$one": the record itself: its own attributes only */
        if (s->where_count || s->value) n->is_unfit = 1;
        for (size_t i = 0; i < s->member_count && !n->is_unfit; i++) {
            const kp_shape *m = s->members[i];
            if (m->kind == KP_SHAPE_PARAM) continue;
            if (m->kind != KP_SHAPE_ATTR || m->path_len) { n->is_unfit = 1; break; }
            kp_rel *hop = (kp_rel *)n->rel;
            need_path(n, &hop, 1, m->attr);
        }
        return;
    }
    for (size_t i = 0; i < s->where_count; i++) need_path(n, s->where[i].path, s->where[i].path_len, s->where[i].attr);
    need_shape(n, s->value);
    for (size_t i = 0; i < s->member_count; i++) need_shape(n, s->members[i]);
}

void kp_copy_need_pattern(kp_copy_need *need, const kp_pattern *p)
{
    need_shape(need, p->returns);
    for (size_t c = 0; c < p->where_count; c++) need_path(need, p->where[c].path, p->where[c].path_len, p->where[c].attr);
}

double kp_copy_write_rate(const kp_model *m, const kp_mix *mix, const kp_copy_need *need)
{
    const kp_relation *rel = need->rel->relation;
    double copies = rel->fanout.avg > 0 ? rel->fanout.avg : 1, rate = 0;
    for (size_t w = 0; w < m->write_count; w++) {
        const kp_write *wr = m->writes[w];
        for (size_t s = 0; s < wr->step_count; s++) {
            const kp_write_step *st = &wr->steps[s];
            if (st->entity != need->rel->target || (st->op != KP_WRITE_UPDATE && st->op != KP_WRITE_UPSERT)) continue;
            int touches = 0;
            for (size_t a = 0; a < st->assign_count; a++)
                for (size_t k = 0; k < need->attr_count; k++) touches |= st->assigns[a].attr == need->attrs[k];
            if (touches) rate += kp_write_rps(wr, mix) * (st->rows > 0 ? st->rows : 1) * copies;
        }
    }
    return rate;
}
