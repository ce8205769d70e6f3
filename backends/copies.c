/*
 * copies.c — what patterns read through a to-one relation, and what keeping copies of it
 * costs the writes (copies.h).
 */
#include "backends/copies.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* Does the referencing record hold `attr` of the record `rel` reaches: a foreign key's
 * referenced attribute, or for a join record the target's key? */
static int holds_key(const kp_rel *rel, const kp_attr *attr)
{
    const kp_relation *r = rel->relation;
    if (r->link == KP_LINK_THROUGH) {
        size_t n = rel->is_inverse ? r->through_from_count : r->through_to_count;
        for (size_t k = 0; k < n && k < rel->target->key_count; k++)
            if (rel->target->key[k] == attr) return 1;
        return 0;
    }
    for (size_t k = 0; k < r->fk_count; k++)
        if (r->ref_attrs[k] == attr) return 1;
    return 0;
}

static void need_attr(kp_copy_need *n, const kp_attr *attr)
{
    if (holds_key(n->rel, attr)) return; /* the referencing record's foreign key holds it */
    for (size_t k = 0; k < n->attr_count; k++)
        if (n->attrs[k] == attr) return;
    if (n->attr_count == KP_COPY_ATTRS) { n->is_unfit = 1; return; }
    n->attrs[n->attr_count++] = attr;
}

static void need_path(kp_copy_need *n, kp_rel *const *path, size_t len, const kp_attr *attr)
{
    for (size_t i = 0; i < len; i++) {
        if (path[i] != n->rel) continue;
        if (i + 1 < len) { n->is_unfit = 1; return; }
        need_attr(n, attr);
    }
}

/* A record's own attributes as a shape's members name them ("$one" of the referenced
 * record, or the elements of a listing over an N:M); anything more is unfit. */
static void need_members(kp_copy_need *n, const kp_shape *s)
{
    for (size_t i = 0; i <= s->member_count && !n->is_unfit; i++) {
        const kp_shape *m = i < s->member_count ? s->members[i] : s->value;
        if (!m || m->kind == KP_SHAPE_PARAM) continue;
        if (m->kind != KP_SHAPE_ATTR || m->path_len) { n->is_unfit = 1; break; }
        need_attr(n, m->attr);
    }
}

static void need_shape(kp_copy_need *n, const kp_shape *s)
{
    if (!s) return;
    if (s->kind == KP_SHAPE_ATTR) { need_path(n, s->path, s->path_len, s->attr); return; }
    if (s->kind == KP_SHAPE_ONE && s->hop_count == 1 && s->hops[0] == n->rel) {
        /* "$one": the record itself: its own attributes only */
        if (s->where_count || s->value) n->is_unfit = 1;
        need_members(n, s);
        return;
    }
    if (s->kind == KP_SHAPE_EACH && s->hop_count == 1 && s->hops[0] == n->rel) {
        /* the targets of an N:M listing, from its join records: their own attributes, and
         * those the listing sorts by; a condition on them is not a copy's to test */
        if (s->where_count) n->is_unfit = 1;
        for (size_t i = 0; i < s->order_count && !n->is_unfit; i++) need_attr(n, s->order[i].attr);
        need_members(n, s);
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

int kp_copy_is_few(const kp_copy_need *need, double (*attr_bytes)(const kp_attr *a))
{
    double bytes = 0;
    for (size_t k = 0; k < need->attr_count; k++) bytes += attr_bytes(need->attrs[k]);
    return !need->is_unfit && bytes <= KP_COPY_BYTES;
}

int kp_copy_join_likely(const kp_model *m, const kp_mix *mix, const kp_pattern *p, const kp_rel *r, const kp_shape *os,
                        double rows, double (*attr_bytes)(const kp_attr *a))
{
    if (!os || os->kind != KP_SHAPE_EACH || !os->declared_order_count || r->target == r->source) return 0;
    if (r->relation->link != KP_LINK_THROUGH) return 0;
    kp_copy_need need = {.rel = r};
    kp_copy_need_pattern(&need, p);
    if (!need.attr_count || !kp_copy_is_few(&need, attr_bytes)) return 0;
    return kp_pattern_rps(p, mix) * rows > kp_copy_write_rate(m, mix, &need);
}

double kp_copy_holders_per(const kp_rel *via)
{
    const kp_relation *rel = via->relation;
    /* an N:M's join records naming one target, or the records whose array names it: the
     * fan-out of the way back */
    const kp_fanout *back = rel->link != KP_LINK_FOREIGN_KEY && !via->is_inverse ? &rel->inverse_fanout : &rel->fanout;
    return back->avg > 0 ? back->avg : 1;
}

double kp_copy_write_rate(const kp_model *m, const kp_mix *mix, const kp_copy_need *need)
{
    double copies = kp_copy_holders_per(need->rel), rate = 0;
    (void)m;
    const kp_entity *target = need->rel->target;
    for (size_t i = 0; i < target->write_step_count; i++) {
        const kp_write_step *st = target->write_steps[i];
        if (st->op != KP_WRITE_UPDATE && st->op != KP_WRITE_UPSERT) continue;
        int touches = 0;
        for (size_t a = 0; a < st->assign_count; a++)
            for (size_t k = 0; k < need->attr_count; k++) touches |= st->assigns[a].attr == need->attrs[k];
        if (touches) rate += kp_write_rps(target->step_writes[i], mix) * (st->rows > 0 ? st->rows : 1) * copies;
    }
    return rate;
}

int kp_copy_array_goes_stale(const kp_rel *r, double cost)
{
    if (r->relation->link != KP_LINK_ARRAY) return 0;
    int stale = cost > 0;
    for (size_t k = 0; k < r->target->write_step_count && !stale; k++) stale = r->target->write_steps[k]->op == KP_WRITE_DELETE;
    return stale;
}

int kp_copy_sites_add(kp_arena *arena, kp_copy_sites *sites, void *hop, const void *parent, const kp_pattern *p,
                      const kp_rel *r, const char *scope, int with_arrays)
{
    int is_join = r->relation->link == KP_LINK_THROUGH;
    int is_array = with_arrays && r->relation->link == KP_LINK_ARRAY && !r->is_inverse;
    if (r->target == r->source ||
        (!is_join && !is_array && (r->relation->link != KP_LINK_FOREIGN_KEY || r->relation->holder != r->source)))
        return 0;
    kp_copy_site *site = kp_arena_push(arena, (void **)&sites->items, &sites->count, &sites->cap, sizeof *site);
    if (!site) return -1;
    site->hop = hop;
    site->parent = parent;
    site->p = p;
    site->rel = r;
    site->group = kp_arena_printf(arena, "%s%s%s|%s|%d", scope ? scope : "", scope ? "|" : "", r->source->name,
                                  r->name ? r->name : "", r->is_inverse);
    return site->group ? 0 : -1;
}

static int by_group(const void *a, const void *b)
{
    const kp_copy_site *x = a, *y = b;
    if (x->group_id != y->group_id) return x->group_id < y->group_id ? -1 : 1;
    return x->order < y->order ? -1 : x->order > y->order;
}

long kp_copy_sites_group(kp_arena *arena, kp_copy_sites *sites)
{
    kp_strmap groups = {0};
    size_t count = 0;
    for (size_t i = 0; i < sites->count; i++) {
        kp_copy_site *s = &sites->items[i];
        void *g = kp_strmap_get(&groups, s->group);
        if (!g) {
            g = (void *)(uintptr_t)++count;
            if (kp_strmap_put(arena, &groups, s->group, g)) return -1;
        }
        s->group_id = (size_t)(uintptr_t)g;
        s->order = i;
    }
    if (sites->count) qsort(sites->items, sites->count, sizeof *sites->items, by_group);
    return (long)count;
}

static const kp_rel *reverse(const kp_rel *r) { return r->is_inverse ? &r->relation->forward : &r->relation->inverse; }

int kp_copy_holder_records(const kp_dataset *data, const kp_record *target, const kp_rel *via, kp_record_list *out, kp_error *err)
{
    /* the referencing records, or an N:M's join records */
    if (via->relation->link == KP_LINK_THROUGH) return kp_dataset_dependents(data, target, via->relation, out, err);
    return kp_dataset_follow(data, target, reverse(via), out, err);
}

int kp_copy_holders(const kp_dataset *before, const kp_dataset *after, const kp_record *target, const kp_dataset *target_data,
                    const kp_rel *via, kp_record_list *done, kp_copy_holder_fn fn, void *ctx, kp_error *err)
{
    kp_record_list refs = {0};
    if (kp_copy_holder_records(target_data, target, via, &refs, err)) return -1;
    int rc = 0;
    for (size_t j = 0; j < refs.count && rc == 0; j++)
        rc = kp_copy_once(before, after, refs.items[j]->entity, refs.items[j]->object, done, fn, ctx, err);
    kp_record_list_free(&refs);
    return rc;
}

int kp_copy_once(const kp_dataset *before, const kp_dataset *after, const kp_entity *e, const cJSON *like,
                 kp_record_list *done, kp_copy_holder_fn fn, void *ctx, kp_error *err)
{
    kp_record *old = kp_dataset_find_like(before, e, like);
    kp_record *cur = kp_dataset_find_like(after, e, like);
    if (!old || !cur || !kp_data_equal(old->object, cur->object, NULL)) return 0; /* a change of its own */
    for (size_t x = 0; x < done->count; x++)
        if (done->items[x] == cur) return 0;
    if (kp_record_list_push(done, cur)) return kp_error_set(err, KP_ERR_NOMEM, NULL, 0, 0, "out of memory");
    return fn(ctx, old, cur, err);
}

cJSON *kp_copy_target_key(const kp_rel *rel, const cJSON *referencing, int *is_nomem)
{
    const kp_relation *r = rel->relation;
    *is_nomem = 0;
    cJSON *obj = cJSON_CreateObject();
    if (!obj) { *is_nomem = 1; return NULL; }
    /* an N:M's join record holds each side's key: the target's is the side it points to */
    int is_join = r->link == KP_LINK_THROUGH;
    kp_attr *const *held = is_join ? (rel->is_inverse ? r->through_from : r->through_to) : r->fk_attrs;
    size_t n = is_join ? (rel->is_inverse ? r->through_from_count : r->through_to_count) : r->fk_count;
    for (size_t k = 0; k < n; k++) {
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(referencing, held[k]->name);
        if (!v || cJSON_IsNull(v)) { cJSON_Delete(obj); return NULL; }
        const kp_attr *to = is_join ? rel->target->key[k] : r->ref_attrs[k];
        cJSON_AddItemToObject(obj, to->name, kp_data_copy(v, NULL));
    }
    return obj;
}

const kp_attr *kp_copy_own(const kp_entity *e, const kp_rel *r, const kp_attr *a)
{
    for (size_t i = 0; i < e->attr_count; i++) {
        const kp_copy *c = e->attrs[i]->copy_of;
        if (c && c->path_len == 1 && c->path[0] == r && c->source == a) return e->attrs[i];
    }
    return NULL;
}

void kp_copy_weigh(kp_arena *arena, const kp_model *m, const kp_mix *mix, const kp_copy_site *sites, size_t count,
                   double (*parent_rows)(const void *parent), double (*attr_bytes)(const kp_attr *a), kp_copy_verdict *out)
{
    const kp_rel *r = sites[0].rel;
    memset(out, 0, sizeof *out);
    out->need.rel = out->added.rel = r;
    const kp_pattern *seen = NULL;
    for (size_t k = 0; k < count; k++) {
        if (sites[k].p != seen) kp_copy_need_pattern(&out->need, sites[k].p);
        seen = sites[k].p;
        double rows = sites[k].parent == sites[k].hop ? 1 : parent_rows(sites[k].parent);
        out->saved += kp_pattern_rps(sites[k].p, mix) * rows;
    }
    /* over an array of references, a read of each element is saved */
    if (r->relation->link == KP_LINK_ARRAY && r->fanout && r->fanout->avg > 1) out->saved *= r->fanout->avg;
    /* what the model copies itself costs nothing more: the cost and size are the new copies' */
    out->added.is_unfit = out->need.is_unfit;
    for (size_t k = 0; k < out->need.attr_count; k++)
        if (!kp_copy_own(r->source, r, out->need.attrs[k])) out->added.attrs[out->added.attr_count++] = out->need.attrs[k];
    out->cost = kp_copy_write_rate(m, mix, &out->added);
    out->is_all_own = out->need.attr_count && !out->added.attr_count;
    out->is_few = kp_copy_is_few(&out->added, attr_bytes);
    out->is_taken = out->is_few && out->saved > out->cost;
    out->is_stale = out->is_taken && kp_copy_array_goes_stale(r, out->cost);
    if (out->is_stale) out->is_taken = 0;
    out->fields = "";
    for (size_t k = 0; k < out->need.attr_count; k++)
        out->fields = kp_arena_printf(arena, "%s%s%s", out->fields, k ? ", " : "", out->need.attrs[k]->name);
    if (!out->need.attr_count) out->fields = "its key";
}

const kp_record *kp_copy_source(const kp_dataset *data, const kp_record *holder, const kp_rel *via)
{
    if (via->relation->link != KP_LINK_THROUGH) return kp_dataset_follow_one(data, holder, (kp_rel *const *)&via, 1);
    int is_nomem = 0;
    cJSON *key = kp_copy_target_key(via, holder->object, &is_nomem);
    const kp_record *source = key ? kp_dataset_find_like(data, via->target, key) : NULL;
    cJSON_Delete(key);
    return source;
}

const kp_record *kp_copy_element_source(const kp_dataset *data, const kp_rel *via, const cJSON *element)
{
    cJSON *key = cJSON_CreateObject();
    if (!key) return NULL;
    cJSON_AddItemToObject(key, via->target->key[0]->name, kp_data_copy(element, NULL));
    const kp_record *source = kp_dataset_find_like(data, via->target, key);
    cJSON_Delete(key);
    return source;
}

cJSON *kp_copy_element_values(const kp_dataset *data, const kp_rel *via, const kp_attr *a, const kp_record *holder)
{
    const cJSON *refs = kp_record_get(holder, via->relation->array_attr);
    if (!cJSON_IsArray(refs)) return NULL;
    cJSON *list = cJSON_CreateArray();
    for (const cJSON *ref = refs->child; list && ref; ref = ref->next) {
        const kp_record *source = kp_copy_element_source(data, via, ref);
        const cJSON *v = source ? kp_record_get(source, a) : NULL;
        cJSON_AddItemToArray(list, v ? kp_data_copy(v, NULL) : cJSON_CreateNull());
    }
    return list;
}

cJSON *kp_copy_element_target(const kp_rel *via, const cJSON *element, const kp_attr *const *attrs, const cJSON *const *lists,
                              size_t n, int index)
{
    cJSON *obj = cJSON_CreateObject();
    if (!obj) return NULL;
    cJSON_AddItemToObject(obj, via->target->key[0]->name, kp_data_copy(element, NULL));
    for (size_t k = 0; k < n; k++) {
        const cJSON *v = cJSON_GetArrayItem(lists[k], index);
        if (v && !cJSON_IsNull(v)) cJSON_AddItemToObject(obj, attrs[k]->name, kp_data_copy(v, NULL));
    }
    return obj;
}

int kp_copy_needs_only_key(const kp_pattern *p, const kp_rel *r)
{
    kp_copy_need need = {.rel = r};
    kp_copy_need_pattern(&need, p);
    return !need.is_unfit && need.attr_count == 0;
}

const kp_rel *kp_copy_two_hop_path(kp_arena *arena, const kp_rel *first, const kp_rel *second)
{
    if (!first->fanout || !second->fanout) return NULL;
    kp_rel *path = kp_arena_alloc(arena, sizeof *path);
    kp_fanout *fan = kp_arena_alloc(arena, sizeof *fan);
    if (!path || !fan) return NULL;
    *path = *first;
    *fan = *first->fanout;
    fan->avg *= second->fanout->avg;
    fan->max *= second->fanout->max;
    path->target = second->target;
    path->fanout = fan;
    return path;
}
