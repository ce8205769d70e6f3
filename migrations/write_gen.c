/*
 * write_gen.c — draws one operation of a write pattern from the data (write_gen.h).
 *
 * Invariant: the dataset is unchanged on return — every trial application is undone
 * through its change log — and the operation is a pure function of the dataset's
 * content, the generator and the seed.
 */
#include "migrations/write_gen.h"

#include <stdlib.h>
#include <string.h>

#include "core/sample.h"
#include "core/value.h"

typedef struct wgen {
    kp_dataset *ds;
    kp_generator *gen;
    const kp_write *write;
    kp_sampler *sampler;
    double skew;
    uint64_t sequence;          /* next fresh record number */
    kp_params *params;
    kp_error *err;
} wgen;

static int nomem(kp_error *err) { return kp_error_set(err, KP_ERR_NOMEM, NULL, 0, 0, "out of memory"); }

static cJSON *set_member(const kp_entity *e, cJSON *obj, const kp_attr *attr, const cJSON *value)
{
    cJSON *next = kp_record_with(e, obj, attr, value);
    cJSON_Delete(obj);
    return next;
}

/* "Now" for an entity: one second after its newest timestamp. */
static int64_t now_for(const kp_dataset *ds, const kp_entity *e)
{
    int64_t newest = 0;
    int found = 0;
    size_t n = 0;
    kp_record *const *records = kp_dataset_records(ds, e, &n);
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
    return found ? newest + 1000 : 1767225600000; /* 2026-01-01T00:00:00.000Z */
}

/* Re-points references at existing records, sets "now", drops computed values. */
static cJSON *adapt(wgen *w, const kp_entity *e, cJSON *obj)
{
    const kp_model *m = kp_dataset_model(w->ds);
    for (size_t ri = 0; obj && ri < m->relation_count; ri++) {
        const kp_relation *r = m->relations[ri];
        if (r->link == KP_LINK_FOREIGN_KEY && r->holder == e) {
            int present = 0;
            for (size_t k = 0; k < r->fk_count; k++) present |= cJSON_GetObjectItemCaseSensitive(obj, r->fk_attrs[k]->name) != NULL;
            if (!present) continue;
            const kp_record *parent = kp_sample_record(w->sampler, r->referenced, r->has_skew ? r->skew : w->skew);
            for (size_t k = 0; obj && k < r->fk_count; k++)
                obj = set_member(e, obj, r->fk_attrs[k], parent ? kp_record_get(parent, r->ref_attrs[k]) : NULL);
        } else if (r->link == KP_LINK_THROUGH && r->through == e) {
            const kp_record *from = kp_sample_record(w->sampler, r->from, w->skew);
            const kp_record *to = kp_sample_record(w->sampler, r->to, 0);
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
    int64_t now = now_for(w->ds, e);
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

/* A fresh record of the entity that collides with nothing in the dataset. */
static cJSON *fresh_record(wgen *w, const kp_entity *e)
{
    for (int tries = 0; tries < 200; tries++) {
        cJSON *obj = kp_generator_new_record(w->gen, e, w->sequence++, w->err);
        if (!obj) return NULL;
        obj = adapt(w, e, obj);
        if (!obj) { nomem(w->err); return NULL; }
        int collides = kp_dataset_find_like(w->ds, e, obj) != NULL;
        for (size_t a = 0; !collides && a < e->attr_count; a++) {
            const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, e->attrs[a]->name);
            if (e->attrs[a]->is_unique && v && kp_dataset_find_unique(w->ds, e->attrs[a], v)) collides = 1;
        }
        if (!collides) return obj;
        cJSON_Delete(obj);
    }
    kp_error_set(w->err, KP_ERR_DATA, NULL, 0, 0, "could not make a %s record whose key is not already in the data "
                 "(200 tries); the key space may be full", e->name);
    return NULL;
}

static int bind(wgen *w, const kp_param *p, const cJSON *value)
{
    if (!p || !value || kp_params_get(w->params, p->name)) return 0;
    cJSON *copy = kp_data_copy(value, kp_dataset_model(w->ds)->doc);
    if (!copy || kp_params_set(w->params, p->name, copy)) return nomem(w->err);
    return 0;
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

static int bind_assigns(wgen *w, const kp_write_step *s, const kp_record *target)
{
    for (size_t i = 0; i < s->assign_count; i++) {
        const kp_assign *a = &s->assigns[i];
        const kp_param *p = a->value.param;
        if (!p || kp_params_get(w->params, p->name)) continue;
        cJSON *v = NULL;
        if (a->kind == KP_ASSIGN_SET) {
            if (kp_generator_fresh_value(w->gen, a->attr, w->sequence++, &v, w->err)) return -1;
        } else {
            /* a small amount; no more than the current value when an `if` guards it with >= */
            int64_t n = 1 + (int64_t)kp_rng_below(kp_sampler_rng(w->sampler), 3);
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
    for (size_t c = 0; target && c < s->condition_count; c++) /* `if` parameters: the current value holds */
        if (bind_where(w, &s->conditions[c], 1, target, NULL)) return -1;
    return 0;
}

/* How many records a for_each step reaches from the first step's records. */
static size_t reached_count(wgen *w, const kp_write_step *s, const cJSON *first_new, const kp_record *first_target)
{
    const kp_write_step *first = &w->write->steps[0];
    kp_record *temp = NULL;
    kp_error ignored;
    if (first_new && !first_target) {
        cJSON *copy = kp_data_copy(first_new, NULL);
        if (!copy || kp_dataset_add(w->ds, first->entity, copy, &temp, &ignored)) temp = NULL;
    }
    const kp_record *from = temp ? temp : first_target;
    kp_record_list list = {0};
    if (from) kp_dataset_follow_path(w->ds, from, s->for_each, s->for_each_len, &list, &ignored);
    size_t n = list.count;
    kp_record_list_free(&list);
    if (temp) kp_dataset_remove(w->ds, temp, &ignored);
    return n;
}

static int draw_once(wgen *w, kp_write_request *out)
{
    const kp_write *write = w->write;
    out->write = write;
    out->params = w->params = kp_params_new();
    out->records = cJSON_CreateArray();
    if (!out->params || !out->records) return nomem(w->err);
    const cJSON *first_new = NULL;
    const kp_record *first_target = NULL;
    for (size_t i = 0; i < write->step_count; i++) {
        const kp_write_step *s = &write->steps[i];
        cJSON *record = NULL;
        const kp_record *target = NULL;
        if (s->op == KP_WRITE_INSERT && s->for_each) {
            size_t n = reached_count(w, s, first_new, first_target);
            record = cJSON_CreateArray();
            for (size_t k = 0; record && k < n; k++) {
                cJSON *one = fresh_record(w, s->entity);
                if (!one) { cJSON_Delete(record); return -1; }
                cJSON_AddItemToArray(record, one);
            }
        } else if (s->op == KP_WRITE_INSERT) {
            if (!(record = fresh_record(w, s->entity))) return -1;
            if (bind_where(w, s->conditions, s->condition_count, NULL, record)) { cJSON_Delete(record); return -1; }
        } else if (!s->for_each) {
            int fresh_key = s->op == KP_WRITE_UPSERT && kp_rng_below(kp_sampler_rng(w->sampler), 2);
            if (s->op == KP_WRITE_UPSERT && !(record = fresh_record(w, s->entity))) return -1;
            target = fresh_key ? NULL : kp_sample_record(w->sampler, s->entity, w->skew);
            if (bind_where(w, s->where, s->where_count, target, target ? NULL : record)) { cJSON_Delete(record); return -1; }
            if (bind_assigns(w, s, target)) { cJSON_Delete(record); return -1; }
        } else if (bind_assigns(w, s, NULL)) {
            return -1;
        }
        if (i == 0) first_target = target;
        cJSON_AddItemToArray(out->records, record ? record : cJSON_CreateNull());
        if (i == 0 && record && cJSON_IsObject(record)) first_new = record;
    }
    /* parameters nothing above bound (e.g. only in `if`): from any record */
    for (size_t i = 0; i < write->param_count; i++) {
        const kp_param *p = write->params[i];
        if (kp_params_get(w->params, p->name) || p->is_optional || p->default_value || !p->attr) continue;
        const kp_record *r = kp_sample_record(w->sampler, p->attr->entity, w->skew);
        if (r && bind(w, p, kp_record_get(r, p->attr))) return -1;
    }
    return 0;
}

int kp_write_generate(kp_dataset *ds, kp_generator *gen, const kp_write *write, uint64_t seed,
                      kp_write_request *out, kp_error *err)
{
    memset(out, 0, sizeof *out);
    wgen w;
    memset(&w, 0, sizeof w);
    w.ds = ds;
    w.gen = gen;
    w.write = write;
    w.err = err;
    w.skew = kp_write_skew(kp_dataset_model(ds), write);
    w.sequence = seed * 4096;
    if (kp_sampler_new(ds, seed, &w.sampler, err)) return -1;
    int rc = -1;
    for (int attempt = 0; attempt < 20; attempt++) {
        kp_write_request_free(out);
        if (draw_once(&w, out)) break;
        /* try it, and undo: prefer an operation that applies */
        kp_change_log log = {0};
        kp_write_result result;
        kp_error trial;
        int tried = kp_write_apply(ds, out, &log, &result, &trial);
        kp_error undo_error;
        if (kp_change_log_undo(ds, &log, 0, &undo_error)) { *err = undo_error; kp_change_log_free(&log); break; }
        kp_change_log_free(&log);
        rc = 0;
        if (tried == 0 && result.outcome == KP_WRITE_APPLIED) break;
    }
    if (rc) kp_write_request_free(out);
    kp_sampler_free(w.sampler);
    return rc;
}
