/*
 * write_gen.c — draws one operation of a write pattern from the data (write_gen.h).
 *
 * The steps of one operation are drawn in order and tied together the way an
 * application ties them: a record inserted by a later step references the records
 * earlier steps wrote (an order's lines name the new order), and a parameter named
 * like an attribute of a record inserted earlier takes its value (the match's
 * playerId is the player whose counter goes up). The record an update or delete
 * acts on is chosen among those for which the step can apply; only when no such
 * record exists is an operation drawn that will be skipped or refused — which is
 * still an operation worth verifying.
 *
 * Invariant: the dataset is unchanged on return — every trial application is undone
 * through its change log — and the operation is a pure function of the dataset's
 * content, the generator and the seed.
 */
#include "migrations/write_gen.h"

#include <stdlib.h>
#include <string.h>

#include "core/params.h"
#include "core/sample.h"
#include "core/value.h"

enum { FRESH_TRIES = 200, TARGET_SAMPLES = 48, DELETE_DEPTH = 3 };

typedef struct wgen {
    kp_dataset *ds;
    kp_generator *gen;
    const kp_write *write;
    kp_sampler *sampler;
    double skew;
    uint64_t sequence;          /* next fresh record number */
    kp_error *err;
    int64_t *now;               /* per entity: "now" for its timestamps (see now_for) */
    char *is_now_known;
    char *is_one_one_full;      /* per relation: every parent of this 1:1 has its partner (a fact of the data) */
    /* the operation being drawn */
    kp_params *params;
    cJSON *records;             /* item i: step i's record (or null), as in kp_write_request */
    const kp_record **targets;  /* per step: the record an update, upsert or delete was drawn for */
    int is_hopeless;            /* the first step found nothing it could apply to: another draw cannot help */
    int is_key_taken;           /* the first step's insert found no free key */
} wgen;

static int nomem(kp_error *err) { return kp_error_set(err, KP_ERR_NOMEM, NULL, 0, 0, "out of memory"); }

static cJSON *set_member(const kp_entity *e, cJSON *obj, const kp_attr *attr, const cJSON *value)
{
    cJSON *next = kp_record_with(e, obj, attr, value);
    cJSON_Delete(obj);
    return next;
}

static kp_rng *rng_of(wgen *w) { return kp_sampler_rng(w->sampler); }

/* "Now" for an entity: one second after its newest timestamp (computed once per call). */
static int64_t now_for(wgen *w, const kp_entity *e)
{
    if (w->is_now_known[e->index]) return w->now[e->index];
    int64_t newest = 0;
    int found = 0;
    size_t n = 0;
    kp_record *const *records = kp_dataset_records(w->ds, e, &n);
    for (size_t i = 0; i < n; i++)
        for (size_t a = 0; a < e->attr_count; a++) {
            if (e->attrs[a]->type.kind != KP_T_TIMESTAMP) continue;
            const cJSON *v = kp_record_get(records[i], e->attrs[a]);
            int64_t ms;
            if (v && cJSON_IsString(v) && kp_timestamp_parse(v->valuestring, &ms) == 0 && (!found || ms > newest)) {
                newest = ms;
                found = 1;
            }
        }
    w->now[e->index] = found ? newest + 1000 : 1767225600000; /* 2026-01-01T00:00:00.000Z */
    w->is_now_known[e->index] = 1;
    return w->now[e->index];
}

/* ---- fresh records ---------------------------------------------------------------------- */

/* Is the attribute one of the entity's references (a foreign key or a join entity's side)? */
static int is_reference(const kp_model *m, const kp_entity *e, const kp_attr *attr)
{
    for (size_t ri = 0; ri < m->relation_count; ri++) {
        const kp_relation *r = m->relations[ri];
        if (r->link == KP_LINK_FOREIGN_KEY && r->holder == e)
            for (size_t k = 0; k < r->fk_count; k++)
                if (r->fk_attrs[k] == attr) return 1;
        if (r->link == KP_LINK_THROUGH && r->through == e) {
            for (size_t k = 0; k < r->through_from_count; k++)
                if (r->through_from[k] == attr) return 1;
            for (size_t k = 0; k < r->through_to_count; k++)
                if (r->through_to[k] == attr) return 1;
        }
    }
    return 0;
}

static int has_dependents(wgen *w, const kp_record *rec, const kp_relation *r)
{
    kp_record_list list = {0};
    kp_error ignored;
    int any = kp_dataset_dependents(w->ds, rec, r, &list, &ignored) != 0 || list.count > 0;
    kp_record_list_free(&list);
    return any;
}

/* A parent for a 1:1 reference: one that no record references yet, when one is found. */
static const kp_record *free_partner(wgen *w, const kp_relation *r, size_t relation_index)
{
    const kp_record *first = NULL;
    if (w->is_one_one_full[relation_index]) return kp_sample_record(w->sampler, r->referenced, w->skew);
    for (int k = 0; k < TARGET_SAMPLES; k++) {
        const kp_record *p = kp_sample_record(w->sampler, r->referenced, r->has_skew ? r->skew : w->skew);
        if (!p) return NULL;
        if (!first) first = p;
        if (!has_dependents(w, p, r)) return p;
    }
    size_t n = 0;
    kp_record *const *all = kp_dataset_records(w->ds, r->referenced, &n);
    size_t start = n ? (size_t)kp_rng_below(rng_of(w), n) : 0;
    for (size_t k = 0; k < n; k++)
        if (!has_dependents(w, all[(start + k) % n], r)) return all[(start + k) % n];
    w->is_one_one_full[relation_index] = 1;
    return first;
}

/* The content an earlier step of this operation wrote for an entity: the record it was
 * drawn to update, or the record it inserts (the first such step). NULL when none. */
static const cJSON *earlier_content(wgen *w, size_t step, const kp_entity *e)
{
    for (size_t j = 0; j < step; j++) {
        if (w->write->steps[j].entity != e || w->write->steps[j].op == KP_WRITE_DELETE) continue;
        if (w->targets[j]) return w->targets[j]->object;
        const cJSON *item = cJSON_GetArrayItem(w->records, (int)j);
        if (cJSON_IsObject(item) && w->write->steps[j].op == KP_WRITE_INSERT) return item;
    }
    return NULL;
}

/* Re-points references at existing records (a 1:1 reference at a parent without a
 * partner; not those the earlier steps decide, see tie), sets "now", drops computed values. */
static cJSON *adapt(wgen *w, size_t step, const kp_entity *e, cJSON *obj)
{
    const kp_model *m = kp_dataset_model(w->ds);
    for (size_t ri = 0; obj && ri < m->relation_count; ri++) {
        const kp_relation *r = m->relations[ri];
        if (r->link == KP_LINK_FOREIGN_KEY && r->holder == e) {
            int present = 0;
            for (size_t k = 0; k < r->fk_count; k++) present |= cJSON_GetObjectItemCaseSensitive(obj, r->fk_attrs[k]->name) != NULL;
            if (!present) continue;
            int is_tied = earlier_content(w, step, r->referenced) != NULL;
            const kp_record *parent = r->cardinality == KP_CARD_ONE_ONE && !is_tied
                                          ? free_partner(w, r, ri)
                                          : kp_sample_record(w->sampler, r->referenced, r->has_skew ? r->skew : w->skew);
            for (size_t k = 0; obj && k < r->fk_count; k++)
                obj = set_member(e, obj, r->fk_attrs[k], parent ? kp_record_get(parent, r->ref_attrs[k]) : NULL);
        } else if (r->link == KP_LINK_THROUGH && r->through == e) {
            const kp_record *from = kp_sample_record(w->sampler, r->from, w->skew);
            const kp_record *to = kp_sample_record(w->sampler, r->to, 0);
            for (int k = 0; k < 8 && r->from == r->to && from && from == to; k++) /* nobody follows themselves */
                to = kp_sample_record(w->sampler, r->to, 0);
            for (size_t k = 0; obj && k < r->through_from_count && k < r->from->key_count; k++)
                obj = set_member(e, obj, r->through_from[k], from ? kp_record_get(from, r->from->key[k]) : NULL);
            for (size_t k = 0; obj && k < r->through_to_count && k < r->to->key_count; k++)
                obj = set_member(e, obj, r->through_to[k], to ? kp_record_get(to, r->to->key[k]) : NULL);
        } else if (r->link == KP_LINK_ARRAY && r->from == e) {
            const cJSON *array = cJSON_GetObjectItemCaseSensitive(obj, r->array_attr->name);
            if (!array) continue;
            cJSON *keys = cJSON_CreateArray();
            int n = cJSON_GetArraySize(array);
            for (int i = 0; keys && i < n; i++) {
                const kp_record *t = kp_sample_record(w->sampler, r->to, 0);
                const cJSON *key = t ? kp_record_get(t, r->to->key[0]) : NULL;
                int seen = 0;
                for (const cJSON *c = keys->child; c && key; c = c->next) seen |= kp_data_equal(c, key, NULL);
                if (key && !seen) cJSON_AddItemToArray(keys, kp_data_copy(key, NULL));
            }
            if (keys) obj = set_member(e, obj, r->array_attr, keys);
            cJSON_Delete(keys);
        }
    }
    int64_t now = obj ? now_for(w, e) : 0;
    for (size_t a = 0; obj && a < e->attr_count; a++) {
        const kp_attr *attr = e->attrs[a];
        if (attr->copy_of || attr->derived) { obj = set_member(e, obj, attr, NULL); continue; }
        if (attr->type.kind != KP_T_TIMESTAMP && attr->type.kind != KP_T_DATE) continue;
        if (attr->is_optional && attr->key_index < 0) { obj = set_member(e, obj, attr, NULL); continue; }
        char text[32];
        if (attr->type.kind == KP_T_TIMESTAMP) kp_timestamp_format(now, text);
        else kp_date_format((int32_t)(now / 86400000), text);
        cJSON *v = cJSON_CreateString(text);
        obj = v ? set_member(e, obj, attr, v) : obj;
        cJSON_Delete(v);
    }
    return obj;
}

/* Points the new record's references at the records earlier steps wrote (an order line
 * names the order the first step inserts; a shipment, the order the first step ships).
 * *tied_keys counts the key attributes set. */
static cJSON *tie(wgen *w, size_t step, const kp_entity *e, cJSON *obj, size_t *tied_keys)
{
    const kp_model *m = kp_dataset_model(w->ds);
    const kp_write_step *s = &w->write->steps[step];
    *tied_keys = 0;
    for (size_t ri = 0; obj && ri < m->relation_count; ri++) {
        const kp_relation *r = m->relations[ri];
        if (r->link == KP_LINK_FOREIGN_KEY && r->holder == e && !(s->link && s->link->relation == r)) {
            const cJSON *parent = earlier_content(w, step, r->referenced);
            for (size_t k = 0; parent && obj && k < r->fk_count; k++) {
                const cJSON *v = cJSON_GetObjectItemCaseSensitive(parent, r->ref_attrs[k]->name);
                if (!v) continue;
                obj = set_member(e, obj, r->fk_attrs[k], v);
                *tied_keys += r->fk_attrs[k]->key_index >= 0;
            }
        } else if (r->link == KP_LINK_THROUGH && r->through == e && r->from != r->to) {
            for (int side = 0; side < 2; side++) {
                const kp_entity *near = side ? r->to : r->from;
                kp_attr *const *attrs = side ? r->through_to : r->through_from;
                size_t count = side ? r->through_to_count : r->through_from_count;
                const cJSON *partner = earlier_content(w, step, near);
                for (size_t k = 0; partner && obj && k < count && k < near->key_count; k++) {
                    const cJSON *v = cJSON_GetObjectItemCaseSensitive(partner, near->key[k]->name);
                    if (!v) continue;
                    obj = set_member(e, obj, attrs[k], v);
                    *tied_keys += attrs[k]->key_index >= 0;
                }
            }
        }
    }
    return obj;
}

/* A record to shape into a new one when the generator has no fresh record of the entity
 * (its key pairs references whose every pair is taken in the generator's layout): an
 * existing record with fresh values for its own key and unique attributes. */
static cJSON *template_record(wgen *w, const kp_entity *e)
{
    const kp_model *m = kp_dataset_model(w->ds);
    const kp_record *like = kp_sample_record(w->sampler, e, 0);
    cJSON *obj = like ? kp_data_copy(like->object, NULL) : kp_generator_record(w->gen, e, 0, w->err);
    if (!obj) { if (like) nomem(w->err); return NULL; }
    for (size_t a = 0; obj && a < e->attr_count; a++) {
        const kp_attr *attr = e->attrs[a];
        if ((attr->key_index < 0 && !attr->is_unique) || is_reference(m, e, attr)) continue;
        cJSON *v = NULL;
        if (kp_generator_fresh_value(w->gen, attr, w->sequence++, &v, w->err)) { cJSON_Delete(obj); return NULL; }
        obj = set_member(e, obj, attr, v);
        cJSON_Delete(v);
    }
    if (!obj) nomem(w->err);
    return obj;
}

/* A new record of the entity for step `step`: its references name existing records (or
 * what earlier steps wrote) and its key and unique values collide with nothing. When no
 * free key is found (every pair of a two-reference key taken), a record whose key is
 * taken is returned with *is_taken set: inserting it is skipped (if_absent) or refused,
 * and an upsert of it updates. NULL with w->err when not even unique values are free. */
static cJSON *fresh_record(wgen *w, size_t step, const kp_entity *e, int *is_taken)
{
    cJSON *taken = NULL;
    int use_template = 0;
    *is_taken = 0;
    for (int tries = 0; tries < FRESH_TRIES; tries++) {
        cJSON *obj = NULL;
        if (!use_template) {
            kp_error gen_err;
            obj = kp_generator_new_record(w->gen, e, w->sequence++, &gen_err);
            if (!obj && gen_err.code == KP_ERR_NOMEM) { *w->err = gen_err; cJSON_Delete(taken); return NULL; }
            if (!obj) use_template = 1;
        }
        if (!obj && !(obj = template_record(w, e))) { cJSON_Delete(taken); return NULL; }
        size_t tied_keys = 0;
        obj = adapt(w, step, e, obj);
        if (obj) obj = tie(w, step, e, obj, &tied_keys);
        if (!obj) { cJSON_Delete(taken); nomem(w->err); return NULL; }
        int key_taken = kp_dataset_find_like(w->ds, e, obj) != NULL, unique_taken = 0;
        for (size_t a = 0; !unique_taken && a < e->attr_count; a++) {
            const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, e->attrs[a]->name);
            if (e->attrs[a]->is_unique && v && kp_dataset_find_unique(w->ds, e->attrs[a], v)) unique_taken = 1;
        }
        if (!key_taken && !unique_taken) { cJSON_Delete(taken); return obj; }
        if (!unique_taken && !taken) taken = obj;
        else cJSON_Delete(obj);
        if (taken && tied_keys == e->key_count) break; /* the key is the earlier steps' choice */
    }
    if (taken) { *is_taken = 1; return taken; }
    kp_error_set(w->err, KP_ERR_DATA, NULL, 0, 0, "could not make a %s record whose unique values are not already "
                 "in the data (%d tries); the value space may be full", e->name, FRESH_TRIES);
    return NULL;
}

/* ---- parameters ------------------------------------------------------------------------- */

static int bind(wgen *w, const kp_param *p, const cJSON *value)
{
    if (!p || !value || kp_params_get(w->params, p->name)) return 0;
    cJSON *copy = kp_data_copy(value, kp_dataset_model(w->ds)->doc);
    if (!copy || kp_params_set(w->params, p->name, copy)) return nomem(w->err);
    return 0;
}

/* The value a record inserted by a step before `step` gives a parameter named like one
 * of its attributes (of the same type), or NULL. *is_free says the record may still take
 * another value there instead (an attribute that is neither key, unique, computed, part
 * of a composite reference nor a 1:1 reference): a later step then picks its record first. */
static const cJSON *inserted_value(wgen *w, size_t step, const kp_param *p, int *is_free, size_t *from_step,
                                   const kp_attr **from_attr)
{
    if (!p || !p->type) return NULL;
    const kp_model *m = kp_dataset_model(w->ds);
    for (size_t j = 0; j < step && j < w->write->step_count; j++) {
        const kp_write_step *s = &w->write->steps[j];
        if (s->op != KP_WRITE_INSERT || s->for_each) continue;
        const cJSON *rec = cJSON_GetArrayItem(w->records, (int)j);
        const kp_attr *a = kp_entity_attr(s->entity, p->name);
        if (!cJSON_IsObject(rec) || !a || a->type.kind != p->type->kind) continue;
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(rec, a->name);
        kp_error ignored;
        if (!v || kp_params_check_value(p, v, m->doc, &ignored)) continue;
        if (is_free) {
            *is_free = a->key_index < 0 && !a->is_unique && !a->copy_of && !a->derived;
            for (size_t ri = 0; *is_free && ri < m->relation_count; ri++) {
                const kp_relation *r = m->relations[ri];
                if (r->link != KP_LINK_FOREIGN_KEY || r->holder != s->entity ||
                    (r->fk_count < 2 && r->cardinality != KP_CARD_ONE_ONE))
                    continue;
                for (size_t k = 0; k < r->fk_count; k++) *is_free &= r->fk_attrs[k] != a;
            }
        }
        if (from_step) *from_step = j;
        if (from_attr) *from_attr = a;
        return v;
    }
    return NULL;
}

/* The operand's value so far: a literal, a bound parameter or a value of an inserted
 * record; NULL while it is still open (`free_inserted`: also when the inserted record
 * may still change there). */
static const cJSON *operand_value(wgen *w, size_t step, const kp_operand *op, int free_inserted)
{
    if (!op->param) return op->literal;
    const cJSON *v = kp_params_get(w->params, op->param->name);
    if (v) return v;
    int is_free = 0;
    v = inserted_value(w, step, op->param, &is_free, NULL, NULL);
    return v && is_free && free_inserted ? NULL : v;
}

static int bind_inserted(wgen *w, size_t step, const kp_operand *op)
{
    return op->param ? bind(w, op->param, inserted_value(w, step, op->param, NULL, NULL, NULL)) : 0;
}

static int bind_where(wgen *w, const kp_cond *conds, size_t count, const kp_record *rec, const cJSON *object)
{
    for (size_t i = 0; i < count; i++) {
        const kp_cond *c = &conds[i];
        const cJSON *v = NULL;
        if (rec) {
            const kp_record *at = c->path_len ? kp_dataset_follow_one(w->ds, rec, c->path, c->path_len) : rec;
            v = at ? kp_record_get(at, c->attr) : NULL;
        } else if (object && !c->path_len) {
            v = cJSON_GetObjectItemCaseSensitive(object, c->attr->name);
        }
        if (bind(w, c->value.param, v) || bind(w, c->upper.param, v)) return -1;
    }
    return 0;
}

/* Do the step's `if` conditions that use parameter p hold on the target with value v? */
static int guards_hold(wgen *w, const kp_write_step *s, const kp_record *target, const kp_param *p, const cJSON *v)
{
    for (size_t c = 0; target && c < s->condition_count; c++) {
        const kp_cond *cond = &s->conditions[c];
        if (cond->value.param != p || cond->op == KP_OP_BETWEEN) continue;
        if (!kp_data_cond_test(w->ds, target, cond, v, NULL)) return 0;
    }
    return 1;
}

static int bind_assigns(wgen *w, size_t step, const kp_record *target)
{
    const kp_write_step *s = &w->write->steps[step];
    for (size_t i = 0; i < s->assign_count; i++) {
        const kp_assign *a = &s->assigns[i];
        const kp_param *p = a->value.param;
        if (!p || kp_params_get(w->params, p->name)) continue;
        if (bind_inserted(w, step, &a->value)) return -1;
        if (kp_params_get(w->params, p->name)) continue;
        cJSON *v = NULL;
        if (a->kind == KP_ASSIGN_SET) {
            /* a fresh value; one for which the step's `if` holds when a few tries find one */
            for (int tries = 0; tries < 16; tries++) {
                cJSON_Delete(v);
                v = NULL;
                if (kp_generator_fresh_value(w->gen, a->attr, w->sequence++, &v, w->err)) return -1;
                if (!v || guards_hold(w, s, target, p, v)) break;
            }
        } else {
            /* a small amount; no more than the current value when an `if` guards it with >= */
            int64_t n = 1 + (int64_t)kp_rng_below(rng_of(w), 3);
            for (size_t c = 0; c < s->condition_count && target; c++) {
                const kp_cond *cond = &s->conditions[c];
                if (cond->attr != a->attr || cond->value.param != p || (cond->op != KP_OP_GE && cond->op != KP_OP_GT)) continue;
                const cJSON *cur = kp_record_get(target, a->attr);
                char buf[64];
                const char *t = cur ? kp_data_number_text(cur, NULL, buf, sizeof buf) : NULL;
                int64_t have = 0;
                if (t && kp_int_parse(t, strlen(t), &have) == 0 && have >= 1 && n > have) n = have;
            }
            v = kp_data_int(n);
        }
        if (!v || kp_params_set(w->params, p->name, v)) return nomem(w->err);
    }
    for (size_t c = 0; c < s->condition_count; c++) /* `if` parameters: an inserted record's, else the current value holds */
        if (bind_inserted(w, step, &s->conditions[c].value) || bind_inserted(w, step, &s->conditions[c].upper) ||
            (target && bind_where(w, &s->conditions[c], 1, target, NULL)))
            return -1;
    return 0;
}

/* ---- the records updates and deletes act on --------------------------------------------- */

/* Could deleting the record go through (no restrict dependents, also down cascades)? */
static int is_deletable(wgen *w, const kp_record *rec, int depth)
{
    const kp_model *m = kp_dataset_model(w->ds);
    for (size_t ri = 0; ri < m->relation_count; ri++) {
        const kp_relation *r = m->relations[ri];
        kp_record_list deps = {0};
        kp_error ignored;
        if (kp_dataset_dependents(w->ds, rec, r, &deps, &ignored)) { kp_record_list_free(&deps); return 0; }
        int ok = !(deps.count && r->on_delete == KP_DELETE_RESTRICT);
        int cascades = r->link == KP_LINK_THROUGH || (r->link == KP_LINK_FOREIGN_KEY && r->on_delete == KP_DELETE_CASCADE);
        for (size_t i = 0; ok && cascades && depth > 1 && i < deps.count && i < 64; i++)
            if (deps.items[i] != rec) ok = is_deletable(w, deps.items[i], depth - 1);
        kp_record_list_free(&deps);
        if (!ok) return 0;
    }
    return 1;
}

/* Can step `step` apply to the record, as far as this operation is drawn so far? */
static int is_applicable(wgen *w, size_t step, const kp_record *rec)
{
    const kp_write_step *s = &w->write->steps[step];
    for (size_t i = 0; i < s->where_count; i++) {
        const kp_cond *c = &s->where[i];
        int pinnable = c->op == KP_OP_EQ && !c->path_len;
        const cJSON *v = operand_value(w, step, &c->value, pinnable);
        const cJSON *upper = c->op == KP_OP_BETWEEN ? operand_value(w, step, &c->upper, 0) : NULL;
        if (!v || (c->op == KP_OP_BETWEEN && !upper)) continue; /* open: taken from the record */
        if (!kp_data_cond_test(w->ds, rec, c, v, upper)) return 0;
    }
    for (size_t i = 0; i < s->condition_count; i++) {
        const kp_cond *c = &s->conditions[i];
        const cJSON *v = operand_value(w, step, &c->value, 0);
        const cJSON *upper = c->op == KP_OP_BETWEEN ? operand_value(w, step, &c->upper, 0) : NULL;
        if (!v || (c->op == KP_OP_BETWEEN && !upper)) continue;
        if (!kp_data_cond_test(w->ds, rec, c, v, upper)) return 0;
    }
    if (s->op == KP_WRITE_DELETE && !is_deletable(w, rec, DELETE_DEPTH)) return 0;
    /* a later step that inserts the record's 1:1 partner needs the slot free */
    const kp_model *m = kp_dataset_model(w->ds);
    for (size_t j = step + 1; j < w->write->step_count; j++) {
        const kp_write_step *later = &w->write->steps[j];
        if (later->op != KP_WRITE_INSERT) continue;
        for (size_t ri = 0; ri < m->relation_count; ri++) {
            const kp_relation *r = m->relations[ri];
            if (r->link == KP_LINK_FOREIGN_KEY && r->cardinality == KP_CARD_ONE_ONE && r->holder == later->entity &&
                r->referenced == s->entity && has_dependents(w, rec, r))
                return 0;
        }
    }
    return 1;
}

/* The record step `step` acts on: the one its `where` pins when it pins a whole key,
 * else one (drawn with the write's skew) for which the step can apply, else — when no
 * record qualifies — a drawn one (the step will be skipped or refused). */
static const kp_record *choose_target(wgen *w, size_t step)
{
    const kp_write_step *s = &w->write->steps[step];
    const kp_entity *e = s->entity;
    const cJSON *key[16] = {0};
    size_t pinned = 0;
    for (size_t i = 0; i < s->where_count && e->key_count <= 16; i++) {
        const kp_cond *c = &s->where[i];
        if (c->op != KP_OP_EQ || c->path_len || c->attr->key_index < 0) continue;
        const cJSON *v = operand_value(w, step, &c->value, 1);
        if (v && !key[c->attr->key_index]) { key[c->attr->key_index] = v; pinned++; }
    }
    if (pinned == e->key_count && pinned > 0) return kp_dataset_find(w->ds, e, key);
    const kp_record *first = NULL;
    for (int k = 0; k < TARGET_SAMPLES; k++) {
        const kp_record *r = kp_sample_record(w->sampler, e, w->skew);
        if (!r) return NULL;
        if (!first) first = r;
        if (is_applicable(w, step, r)) return r;
    }
    size_t n = 0;
    kp_record *const *all = kp_dataset_records(w->ds, e, &n);
    size_t start = n ? (size_t)kp_rng_below(rng_of(w), n) : 0;
    for (size_t k = 0; k < n; k++)
        if (is_applicable(w, step, all[(start + k) % n])) return all[(start + k) % n];
    if (step == 0) w->is_hopeless = 1; /* nothing depended on earlier choices */
    return first;
}

/* The inserted records whose values pick the target take the target's values (the bid
 * names the item it raises). */
static int follow_target(wgen *w, size_t step, const kp_record *target)
{
    const kp_write_step *s = &w->write->steps[step];
    for (size_t i = 0; target && i < s->where_count; i++) {
        const kp_cond *c = &s->where[i];
        if (c->op != KP_OP_EQ || c->path_len || !c->value.param || kp_params_get(w->params, c->value.param->name))
            continue;
        int is_free = 0;
        size_t j = 0;
        const kp_attr *attr = NULL;
        if (!inserted_value(w, step, c->value.param, &is_free, &j, &attr) || !is_free) continue;
        const cJSON *v = kp_record_get(target, c->attr);
        cJSON *rec = cJSON_GetArrayItem(w->records, (int)j);
        cJSON *next = kp_record_with(w->write->steps[j].entity, rec, attr, v);
        if (!next) return nomem(w->err);
        cJSON_ReplaceItemInArray(w->records, (int)j, next);
    }
    return 0;
}

/* ---- one operation ---------------------------------------------------------------------- */

/* How many records a for_each step reaches from the first step's records. */
static size_t reached_count(wgen *w, const kp_write_step *s)
{
    const kp_write_step *first = &w->write->steps[0];
    const cJSON *first_new = cJSON_GetArrayItem(w->records, 0);
    kp_record *temp = NULL;
    kp_error ignored;
    if (cJSON_IsObject(first_new) && !w->targets[0]) {
        cJSON *copy = kp_data_copy(first_new, NULL);
        if (!copy || kp_dataset_add(w->ds, first->entity, copy, &temp, &ignored)) temp = NULL;
    }
    const kp_record *from = temp ? temp : w->targets[0];
    kp_record_list list = {0};
    if (from) kp_dataset_follow_path(w->ds, from, s->for_each, s->for_each_len, &list, &ignored);
    size_t n = list.count;
    kp_record_list_free(&list);
    if (temp) kp_dataset_remove(w->ds, temp, &ignored);
    return n;
}

static int draw_step(wgen *w, size_t i)
{
    const kp_write_step *s = &w->write->steps[i];
    cJSON *record = NULL;
    const kp_record *target = NULL;
    int is_taken = 0;
    if (s->op == KP_WRITE_INSERT && s->for_each) {
        size_t n = reached_count(w, s);
        if (!(record = cJSON_CreateArray())) return nomem(w->err);
        for (size_t k = 0; k < n; k++) {
            cJSON *one = fresh_record(w, i, s->entity, &is_taken);
            if (!one) { cJSON_Delete(record); return -1; }
            cJSON_AddItemToArray(record, one);
        }
    } else if (s->op == KP_WRITE_INSERT) {
        if (!(record = fresh_record(w, i, s->entity, &is_taken))) return -1;
        if (i == 0 && is_taken) w->is_key_taken = 1;
        if (bind_where(w, s->conditions, s->condition_count, NULL, record)) { cJSON_Delete(record); return -1; }
    } else if (!s->for_each) {
        if (s->op == KP_WRITE_UPSERT) {
            /* half the time a new key (an insert), else an existing record; a full key space updates */
            int is_fresh_key = (int)kp_rng_below(rng_of(w), 2);
            record = fresh_record(w, i, s->entity, &is_taken);
            if (!record && w->err->code == KP_ERR_NOMEM) return -1;
            if (!record) kp_error_clear(w->err);
            if (record && is_fresh_key) target = is_taken ? kp_dataset_find_like(w->ds, s->entity, record) : NULL;
            else target = choose_target(w, i);
        } else {
            target = choose_target(w, i);
        }
        if (follow_target(w, i, target)) { cJSON_Delete(record); return -1; }
        for (size_t c = 0; c < s->where_count; c++)
            if (bind_inserted(w, i, &s->where[c].value) || bind_inserted(w, i, &s->where[c].upper)) {
                cJSON_Delete(record);
                return -1;
            }
        if (bind_where(w, s->where, s->where_count, target, target ? NULL : record) || bind_assigns(w, i, target)) {
            cJSON_Delete(record);
            return -1;
        }
    } else if (bind_assigns(w, i, NULL)) {
        return -1;
    }
    w->targets[i] = target;
    cJSON_AddItemToArray(w->records, record ? record : cJSON_CreateNull());
    return 0;
}

static int draw_once(wgen *w, kp_write_request *out)
{
    const kp_write *write = w->write;
    out->write = write;
    out->params = w->params = kp_params_new();
    out->records = w->records = cJSON_CreateArray();
    if (!out->params || !out->records) return nomem(w->err);
    memset(w->targets, 0, write->step_count * sizeof *w->targets);
    w->is_hopeless = w->is_key_taken = 0;
    for (size_t i = 0; i < write->step_count; i++)
        if (draw_step(w, i)) return -1;
    /* parameters nothing above bound (e.g. only in `if`): an inserted record's, else from any record */
    for (size_t i = 0; i < write->param_count; i++) {
        const kp_param *p = write->params[i];
        if (kp_params_get(w->params, p->name)) continue;
        if (bind(w, p, inserted_value(w, write->step_count, p, NULL, NULL, NULL))) return -1;
        if (kp_params_get(w->params, p->name) || p->is_optional || p->default_value || !p->attr) continue;
        const kp_record *r = kp_sample_record(w->sampler, p->attr->entity, w->skew);
        if (r && bind(w, p, kp_record_get(r, p->attr))) return -1;
    }
    return 0;
}

static void wgen_free(wgen *w)
{
    kp_sampler_free(w->sampler);
    free(w->now);
    free(w->is_now_known);
    free(w->targets);
    free(w->is_one_one_full);
}

static int outcome_rank(kp_write_outcome outcome)
{
    switch (outcome) {
    case KP_WRITE_APPLIED: return 4;
    case KP_WRITE_PARTIAL: return 3;
    case KP_WRITE_SKIPPED: return 2;
    case KP_WRITE_REFUSED: return 1;
    }
    return 0;
}

int kp_write_generate(kp_dataset *ds, kp_generator *gen, const kp_write *write, uint64_t seed,
                      kp_write_request *out, kp_error *err)
{
    memset(out, 0, sizeof *out);
    kp_error_clear(err);
    const kp_model *m = kp_dataset_model(ds);
    wgen w;
    memset(&w, 0, sizeof w);
    w.ds = ds;
    w.gen = gen;
    w.write = write;
    w.err = err;
    w.skew = kp_write_skew(m, write);
    w.sequence = seed * 4096;
    w.now = calloc(m->entity_count ? m->entity_count : 1, sizeof *w.now);
    w.is_now_known = calloc(m->entity_count ? m->entity_count : 1, 1);
    w.targets = calloc(write->step_count ? write->step_count : 1, sizeof *w.targets);
    w.is_one_one_full = calloc(m->relation_count ? m->relation_count : 1, 1);
    if (!w.now || !w.is_now_known || !w.targets || !w.is_one_one_full) {
        wgen_free(&w);
        return nomem(err);
    }
    if (kp_sampler_new(ds, seed, &w.sampler, err)) {
        wgen_free(&w);
        return -1;
    }
    /* draw, try (and undo) — the first operation that applies, else the best outcome seen */
    kp_write_request best;
    memset(&best, 0, sizeof best);
    int best_rank = 0, rc = -1, taken_draws = 0;
    for (int attempt = 0; attempt < 20; attempt++) {
        kp_write_request draw;
        memset(&draw, 0, sizeof draw);
        if (draw_once(&w, &draw)) {
            kp_write_request_free(&draw);
            if (err->code == KP_ERR_NOMEM) rc = -1;
            break;
        }
        kp_change_log log = {0};
        kp_write_result result;
        kp_error trial;
        int tried = kp_write_apply(ds, &draw, &log, &result, &trial);
        kp_error undo_error;
        if (kp_change_log_undo(ds, &log, 0, &undo_error)) {
            *err = undo_error;
            kp_change_log_free(&log);
            kp_write_request_free(&draw);
            rc = -1;
            break;
        }
        kp_change_log_free(&log);
        int rank = tried == 0 ? outcome_rank(result.outcome) : 0;
        if (rc || rank > best_rank) {
            kp_write_request_free(&best);
            best = draw;
            best_rank = rank;
        } else {
            kp_write_request_free(&draw);
        }
        rc = 0;
        taken_draws += w.is_key_taken;
        if (best_rank == outcome_rank(KP_WRITE_APPLIED) || w.is_hopeless || taken_draws >= 3) break;
    }
    if (rc == 0) {
        *out = best;
        kp_error_clear(err);
    } else {
        kp_write_request_free(&best);
    }
    wgen_free(&w);
    return rc;
}
