/*
 * mutate.c — applies write operations to a dataset, logging every change.
 *
 * Each step finds its records (by key when `where` pins it, else by testing every
 * record), checks its `if`, changes the records through kp_dataset_add / replace /
 * remove, and recomputes copies and aggregates. Every change — including those of
 * cascades and recomputation — is appended to the change log with before- and
 * after-images before the next one is made.
 * Invariant: undoing a log from its end back to a mark restores the dataset to
 * exactly what it was at the mark (same records, same values, same indexes).
 */
#include "core/mutate.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/value.h"

enum { STEP_APPLIED = 0, STEP_SKIPPED = 1, STEP_REFUSED = 2 };

typedef struct mctx {
    kp_dataset *ds;
    const kp_write_request *req;
    const kp_write *write;
    kp_params *params;          /* resolved */
    const kp_json_doc *doc;
    kp_change_log *log;
    kp_record_list first;       /* records the first step wrote */
    kp_record_list deleting;    /* records whose delete is in progress (cycle guard) */
    char reason[400];
    kp_error *err;
} mctx;

static int nomem(kp_error *err) { return kp_error_set(err, KP_ERR_NOMEM, NULL, 0, 0, "out of memory"); }

const char *kp_write_outcome_name(kp_write_outcome outcome)
{
    switch (outcome) {
    case KP_WRITE_APPLIED: return "applied";
    case KP_WRITE_PARTIAL: return "partial";
    case KP_WRITE_SKIPPED: return "skipped";
    case KP_WRITE_REFUSED: return "refused";
    }
    return "?";
}

static const char *op_name(kp_write_op op)
{
    switch (op) {
    case KP_WRITE_INSERT: return "insert";
    case KP_WRITE_UPDATE: return "update";
    case KP_WRITE_UPSERT: return "upsert";
    case KP_WRITE_DELETE: return "delete";
    }
    return "?";
}

static void set_reason(mctx *m, size_t step, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void set_reason(mctx *m, size_t step, const char *fmt, ...)
{
    if (m->reason[0]) return; /* keep the first */
    char text[300];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    const kp_write_step *s = &m->write->steps[step];
    snprintf(m->reason, sizeof m->reason, "step %zu (%s %s): %s", step + 1, op_name(s->op), s->entity->name, text);
}

static void key_text(const kp_record *rec, char *buf, size_t size)
{
    size_t o = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < rec->entity->key_count && o + 1 < size; i++) {
        const cJSON *v = kp_record_get(rec, rec->entity->key[i]);
        char nb[64];
        const char *t = !v ? "null" : cJSON_IsString(v) ? v->valuestring : kp_data_number_text(v, NULL, nb, sizeof nb);
        o += (size_t)snprintf(buf + o, size - o, "%s%s", i ? "/" : "", t ? t : "?");
    }
}

/* ---- the change log -------------------------------------------------------------- */

static int log_change(mctx *m, const kp_record *rec, const cJSON *before, const cJSON *after)
{
    const kp_entity *entity = rec->entity;
    kp_change_log *log = m->log;
    if (log->count == log->cap) {
        size_t cap = log->cap ? log->cap * 2 : 16;
        kp_change *items = realloc(log->items, cap * sizeof *items);
        if (!items) return nomem(m->err);
        log->items = items;
        log->cap = cap;
    }
    kp_change *c = &log->items[log->count];
    c->entity = entity;
    c->serial = rec->serial;
    c->before = before ? kp_data_copy(before, NULL) : NULL;
    c->after = after ? kp_data_copy(after, NULL) : NULL;
    if ((before && !c->before) || (after && !c->after)) {
        cJSON_Delete(c->before);
        cJSON_Delete(c->after);
        return nomem(m->err);
    }
    log->count++;
    return 0;
}

void kp_change_log_free(kp_change_log *log)
{
    if (!log) return;
    for (size_t i = 0; i < log->count; i++) {
        cJSON_Delete(log->items[i].before);
        cJSON_Delete(log->items[i].after);
    }
    free(log->items);
    memset(log, 0, sizeof *log);
}

int kp_change_log_undo(kp_dataset *ds, kp_change_log *log, size_t mark, kp_error *err)
{
    int rc = 0;
    while (log->count > mark) {
        kp_change *c = &log->items[log->count - 1];
        if (rc == 0) {
            if (!c->before) {
                kp_record *r = kp_dataset_find_like(ds, c->entity, c->after);
                if (r) rc = kp_dataset_remove(ds, r, err);
            } else if (!c->after) {
                cJSON *copy = kp_data_copy(c->before, NULL);
                rc = copy ? kp_dataset_restore(ds, c->entity, copy, c->serial, NULL, err) : nomem(err);
            } else {
                kp_record *r = kp_dataset_find_like(ds, c->entity, c->after);
                cJSON *copy = kp_data_copy(c->before, NULL);
                if (!copy) rc = nomem(err);
                else if (!r) { cJSON_Delete(copy); rc = kp_error_set(err, KP_ERR_INTERNAL, NULL, 0, 0, "undo: a changed %s record is gone", c->entity->name); }
                else rc = kp_dataset_replace(ds, r, copy, err);
            }
        }
        cJSON_Delete(c->before);
        cJSON_Delete(c->after);
        log->count--;
    }
    return rc;
}

cJSON *kp_change_log_to_json(const kp_change_log *log, size_t from)
{
    cJSON *out = cJSON_CreateArray();
    for (size_t i = from; out && i < log->count; i++) {
        const kp_change *c = &log->items[i];
        cJSON *item = cJSON_CreateObject();
        if (!item) break;
        cJSON_AddStringToObject(item, "entity", c->entity->name);
        cJSON_AddStringToObject(item, "op", !c->before ? "insert" : !c->after ? "delete" : "update");
        cJSON_AddItemToObject(item, "before", c->before ? kp_data_copy(c->before, NULL) : cJSON_CreateNull());
        cJSON_AddItemToObject(item, "after", c->after ? kp_data_copy(c->after, NULL) : cJSON_CreateNull());
        cJSON_AddItemToArray(out, item);
    }
    return out;
}

void kp_write_request_free(kp_write_request *request)
{
    if (!request) return;
    kp_params_free(request->params);
    cJSON_Delete(request->records);
    memset(request, 0, sizeof *request);
}

cJSON *kp_write_request_to_json(const kp_write_request *request)
{
    cJSON *out = cJSON_CreateObject();
    if (!out) return NULL;
    cJSON_AddStringToObject(out, "write", request->write->name);
    cJSON_AddItemToObject(out, "params", kp_params_to_json(request->params));
    cJSON_AddItemToObject(out, "records", request->records ? kp_data_copy(request->records, NULL) : cJSON_CreateArray());
    return out;
}

/* ---- changing through the log -------------------------------------------------------- */

static int do_add(mctx *m, const kp_entity *entity, cJSON *object, kp_record **out)
{
    kp_record *rec = NULL;
    if (kp_dataset_add(m->ds, entity, object, &rec, m->err)) return -1;
    if (out) *out = rec;
    return log_change(m, rec, NULL, rec->object);
}

static int do_replace(mctx *m, kp_record *rec, cJSON *object)
{
    cJSON *before = kp_data_copy(rec->object, NULL);
    if (!before) { cJSON_Delete(object); return nomem(m->err); }
    int rc = kp_dataset_replace(m->ds, rec, object, m->err);
    if (rc == 0) rc = log_change(m, rec, before, rec->object);
    cJSON_Delete(before);
    return rc;
}

static int do_remove(mctx *m, kp_record *rec)
{
    if (log_change(m, rec, rec->object, NULL)) return -1;
    return kp_dataset_remove(m->ds, rec, m->err);
}

static int refresh_cb(void *ctx, const kp_record *record, const cJSON *next, kp_error *err)
{
    mctx *m = ctx;
    (void)err;
    return log_change(m, record, record->object, next);
}

/* The copies and aggregates the step's changes (log[mark..]) move, recomputed and logged. */
static int refresh_step(mctx *m, size_t mark)
{
    size_t n = 2 * (m->log->count - mark);
    const kp_entity **entities = malloc((n ? n : 1) * sizeof *entities);
    const cJSON **objects = malloc((n ? n : 1) * sizeof *objects);
    if (!entities || !objects) {
        free(entities);
        free(objects);
        return nomem(m->err);
    }
    for (size_t i = mark, k = 0; i < m->log->count; i++) {
        const kp_change *c = &m->log->items[i];
        entities[k] = c->entity;
        objects[k++] = c->before;
        entities[k] = c->entity;
        objects[k++] = c->after;
    }
    int rc = kp_dataset_refresh_near(m->ds, entities, objects, n, refresh_cb, m, m->err);
    free(entities);
    free(objects);
    return rc;
}

/* ---- conditions and values ---------------------------------------------------------- */

static const cJSON *operand(const mctx *m, const kp_operand *op, int *dropped)
{
    if (!op->param) return op->literal;
    const cJSON *v = kp_params_get(m->params, op->param->name);
    if (!v) *dropped = 1;
    return v;
}

static int conds_hold(const mctx *m, const kp_record *rec, const kp_cond *conds, size_t count)
{
    for (size_t i = 0; i < count; i++) {
        int dropped = 0;
        const cJSON *v = operand(m, &conds[i].value, &dropped);
        const cJSON *upper = conds[i].op == KP_OP_BETWEEN ? operand(m, &conds[i].upper, &dropped) : NULL;
        if (dropped) continue;
        if (!kp_data_cond_test(m->ds, rec, &conds[i], v, upper)) return 0;
    }
    return 1;
}

static void format_double(double v, char *buf, size_t size)
{
    for (int precision = 1; precision <= 17; precision++) {
        snprintf(buf, size, "%.*g", precision, v);
        if (strtod(buf, NULL) == v) return;
    }
}

/* current +/- delta for a numeric attribute; NULL with err on failure. */
static cJSON *arithmetic(mctx *m, const kp_attr *attr, const cJSON *current, const cJSON *delta, int subtract)
{
    char cb[400], db[400];
    const char *c = current ? kp_data_number_text(current, NULL, cb, sizeof cb) : "0";
    const char *d = kp_data_number_text(delta, m->doc, db, sizeof db);
    if (!c || !d) {
        kp_error_set(m->err, KP_ERR_USAGE, NULL, 0, 0, "write '%s': %s of %s.%s needs a number", m->write->name,
                     subtract ? "decrement" : "increment", attr->entity->name, attr->name);
        return NULL;
    }
    if (attr->type.kind == KP_T_DOUBLE || kp_decimal_check(c, strlen(c)) || kp_decimal_check(d, strlen(d))) {
        double v = strtod(c, NULL) + (subtract ? -1 : 1) * strtod(d, NULL);
        char buf[64];
        format_double(v, buf, sizeof buf);
        return kp_data_number(buf);
    }
    char *text = subtract ? kp_decimal_sub(c, d) : kp_decimal_add(c, d);
    if (!text) { nomem(m->err); return NULL; }
    if ((attr->type.kind == KP_T_INT || attr->type.kind == KP_T_COUNTER) && kp_int_parse(text, strlen(text), NULL)) {
        kp_error_set(m->err, KP_ERR_DATA, NULL, 0, 0, "write '%s': %s.%s would become %s, outside 64-bit integers",
                     m->write->name, attr->entity->name, attr->name, text);
        free(text);
        return NULL;
    }
    cJSON *out = kp_data_number(text);
    free(text);
    return out;
}

/* A copy of base with the step's assignments applied (NULL with err on failure). */
static cJSON *assigned(mctx *m, const kp_write_step *step, const cJSON *base)
{
    cJSON *obj = kp_data_copy(base, NULL);
    for (size_t i = 0; obj && i < step->assign_count; i++) {
        const kp_assign *a = &step->assigns[i];
        int dropped = 0;
        const cJSON *v = operand(m, &a->value, &dropped);
        if (dropped) continue;
        cJSON *value = NULL;
        if (a->kind == KP_ASSIGN_SET) value = kp_data_copy(v, m->doc);
        else value = arithmetic(m, a->attr, cJSON_GetObjectItemCaseSensitive(obj, a->attr->name), v,
                                a->kind == KP_ASSIGN_DECREMENT);
        if (!value) { cJSON_Delete(obj); return NULL; }
        cJSON *next = kp_record_with(step->entity, obj, a->attr, value);
        cJSON_Delete(value);
        cJSON_Delete(obj);
        obj = next;
    }
    if (!obj && m->err->code == KP_OK) nomem(m->err);
    return obj;
}

/* ---- finding a step's records ------------------------------------------------------ */

static int push_unique(kp_record_list *list, kp_record *rec)
{
    for (size_t i = 0; i < list->count; i++)
        if (list->items[i] == rec) return 0;
    return kp_record_list_push(list, rec);
}

static int step_targets(mctx *m, const kp_write_step *step, kp_record_list *out)
{
    if (step->for_each) {
        for (size_t f = 0; f < m->first.count; f++) {
            if (m->first.items[f]->is_deleted) continue;
            kp_record_list reached = {0};
            if (kp_dataset_follow_path(m->ds, m->first.items[f], step->for_each, step->for_each_len, &reached, m->err)) {
                kp_record_list_free(&reached);
                return -1;
            }
            for (size_t i = 0; i < reached.count; i++) {
                kp_record *r = reached.items[i];
                if (r->entity == step->entity && conds_hold(m, r, step->where, step->where_count) &&
                    push_unique(out, r)) {
                    kp_record_list_free(&reached);
                    return nomem(m->err);
                }
            }
            kp_record_list_free(&reached);
        }
        return 0;
    }
    /* by key when the where pins it, else every record */
    const kp_entity *e = step->entity;
    const cJSON *key[16] = {0};
    size_t pinned = 0;
    for (size_t i = 0; i < step->where_count; i++) {
        const kp_cond *c = &step->where[i];
        if (c->op != KP_OP_EQ || c->path_len || c->attr->key_index < 0 || c->attr->key_index >= 16) continue;
        int dropped = 0;
        const cJSON *v = operand(m, &c->value, &dropped);
        if (!dropped && v && !key[c->attr->key_index]) { key[c->attr->key_index] = v; pinned++; }
    }
    if (pinned == e->key_count && e->key_count <= 16) {
        kp_record *r = kp_dataset_find(m->ds, e, key);
        if (r && conds_hold(m, r, step->where, step->where_count) && kp_record_list_push(out, r)) return nomem(m->err);
        return 0;
    }
    size_t n = 0;
    kp_record *const *all = kp_dataset_records(m->ds, e, &n);
    for (size_t i = 0; i < n; i++)
        if (conds_hold(m, all[i], step->where, step->where_count) && kp_record_list_push(out, all[i]))
            return nomem(m->err);
    return 0;
}

/* ---- deletes ------------------------------------------------------------------------- */

static int is_deleting(const mctx *m, const kp_record *rec)
{
    for (size_t i = 0; i < m->deleting.count; i++)
        if (m->deleting.items[i] == rec) return 1;
    return 0;
}

/* Removes the elements equal to key from a record's reference array. */
static cJSON *without_element(const kp_record *holder, const kp_attr *array_attr, const cJSON *key)
{
    const cJSON *array = kp_record_get(holder, array_attr);
    cJSON *kept = cJSON_CreateArray();
    for (const cJSON *el = array ? array->child : NULL; kept && el; el = el->next)
        if (!kp_data_equal(el, key, NULL)) cJSON_AddItemToArray(kept, kp_data_copy(el, NULL));
    if (!kept) return NULL;
    cJSON *out = kp_record_with(holder->entity, holder->object, array_attr, kept);
    cJSON_Delete(kept);
    return out;
}

static int delete_record(mctx *m, size_t step, kp_record *rec, int *refused)
{
    if (rec->is_deleted || is_deleting(m, rec)) return 0;
    if (kp_record_list_push(&m->deleting, rec)) return nomem(m->err);
    const kp_model *model = kp_dataset_model(m->ds);
    for (size_t ri = 0; ri < model->relation_count && !*refused; ri++) {
        const kp_relation *r = model->relations[ri];
        kp_record_list deps = {0};
        if (kp_dataset_dependents(m->ds, rec, r, &deps, m->err)) { kp_record_list_free(&deps); return -1; }
        if (deps.count && r->on_delete == KP_DELETE_RESTRICT) {
            char key[200];
            key_text(rec, key, sizeof key);
            set_reason(m, step, "%s %s still has %zu %s record%s over relation \"%s\" (on_delete restrict)",
                       rec->entity->name, key, deps.count, deps.items[0]->entity->name, deps.count == 1 ? "" : "s",
                       r->name);
            *refused = 1;
        }
        for (size_t i = 0; i < deps.count && !*refused; i++) {
            kp_record *d = deps.items[i];
            if (d->is_deleted || d == rec) continue;
            int rc = 0;
            if (r->link == KP_LINK_FOREIGN_KEY && r->on_delete == KP_DELETE_DETACH) {
                cJSON *obj = kp_data_copy(d->object, NULL);
                for (size_t k = 0; obj && k < r->fk_count; k++) cJSON_DeleteItemFromObjectCaseSensitive(obj, r->fk_attrs[k]->name);
                rc = obj ? do_replace(m, d, obj) : nomem(m->err);
            } else if (r->link == KP_LINK_ARRAY) {
                cJSON *obj = without_element(d, r->array_attr, kp_record_get(rec, r->to->key[0]));
                rc = obj ? do_replace(m, d, obj) : nomem(m->err);
            } else {
                rc = delete_record(m, step, d, refused); /* cascade, or a join record */
            }
            if (rc) { kp_record_list_free(&deps); return -1; }
        }
        kp_record_list_free(&deps);
    }
    if (*refused) return 0;
    return do_remove(m, rec);
}

/* ---- steps ---------------------------------------------------------------------------- */

static const cJSON *step_record(const mctx *m, size_t step, size_t index)
{
    const cJSON *item = m->req->records ? cJSON_GetArrayItem(m->req->records, (int)step) : NULL;
    if (!item || cJSON_IsNull(item)) return NULL;
    if (cJSON_IsArray(item)) {
        int n = cJSON_GetArraySize(item);
        if (n == 0) return NULL;
        return cJSON_GetArrayItem(item, (int)index < n ? (int)index : n - 1);
    }
    return item;
}

static int insert_one(mctx *m, size_t step, cJSON *object, kp_record **out)
{
    const kp_write_step *s = &m->write->steps[step];
    *out = NULL;
    kp_record *existing = kp_dataset_find_like(m->ds, s->entity, object);
    if (existing) {
        char key[200];
        key_text(existing, key, sizeof key);
        set_reason(m, step, "a %s with key %s already exists%s", s->entity->name, key,
                   s->is_if_absent ? " (if_absent)" : "");
        cJSON_Delete(object);
        return s->is_if_absent ? STEP_SKIPPED : STEP_REFUSED;
    }
    if (do_add(m, s->entity, object, out)) return -1;
    return STEP_APPLIED;
}

/* Sets the link's foreign key of a new record to the reached record's key. */
static cJSON *linked(mctx *m, const kp_write_step *s, const cJSON *record, const kp_record *reached)
{
    const kp_relation *r = s->link->relation;
    if (r->link != KP_LINK_FOREIGN_KEY || r->holder != s->entity || r->referenced != reached->entity) {
        kp_error_set(m->err, KP_ERR_MODEL, NULL, 0, 0, "write '%s': the link \"%s\" must be a foreign key held by %s",
                     m->write->name, s->link->name ? s->link->name : "?", s->entity->name);
        return NULL;
    }
    cJSON *obj = kp_data_copy(record, NULL);
    for (size_t k = 0; obj && k < r->fk_count; k++) {
        cJSON *next = kp_record_with(s->entity, obj, r->fk_attrs[k], kp_record_get(reached, r->ref_attrs[k]));
        cJSON_Delete(obj);
        obj = next;
    }
    if (!obj) nomem(m->err);
    return obj;
}

static int run_insert(mctx *m, size_t step, kp_record_list *written)
{
    const kp_write_step *s = &m->write->steps[step];
    if (!step_record(m, step, 0))
        return kp_error_set(m->err, KP_ERR_USAGE, NULL, 0, 0, "write '%s': step %zu inserts a %s, but the request has "
                            "no record for it", m->write->name, step + 1, s->entity->name);
    if (!s->for_each) {
        cJSON *obj = kp_data_copy(step_record(m, step, 0), NULL);
        kp_record *rec = NULL;
        if (!obj) return nomem(m->err);
        int rc = insert_one(m, step, obj, &rec);
        if (rc == STEP_APPLIED && kp_record_list_push(written, rec)) return nomem(m->err);
        return rc;
    }
    if (!s->link)
        return kp_error_set(m->err, KP_ERR_MODEL, NULL, 0, 0, "write '%s': step %zu inserts for_each without a link",
                            m->write->name, step + 1);
    kp_record_list reached = {0};
    for (size_t f = 0; f < m->first.count; f++)
        if (!m->first.items[f]->is_deleted &&
            kp_dataset_follow_path(m->ds, m->first.items[f], s->for_each, s->for_each_len, &reached, m->err)) {
            kp_record_list_free(&reached);
            return -1;
        }
    int status = reached.count ? STEP_APPLIED : STEP_SKIPPED;
    if (!reached.count) set_reason(m, step, "for_each reached no record");
    for (size_t i = 0; i < reached.count; i++) {
        cJSON *obj = linked(m, s, step_record(m, step, i), reached.items[i]);
        kp_record *rec = NULL;
        if (!obj) { kp_record_list_free(&reached); return -1; }
        int rc = insert_one(m, step, obj, &rec);
        if (rc < 0 || rc == STEP_REFUSED) { kp_record_list_free(&reached); return rc; }
        if (rc == STEP_APPLIED && kp_record_list_push(written, rec)) { kp_record_list_free(&reached); return nomem(m->err); }
    }
    kp_record_list_free(&reached);
    return written->count ? STEP_APPLIED : status == STEP_APPLIED ? STEP_SKIPPED : status;
}

static int run_update(mctx *m, size_t step, kp_record_list *written)
{
    const kp_write_step *s = &m->write->steps[step];
    kp_record_list targets = {0};
    if (step_targets(m, s, &targets)) { kp_record_list_free(&targets); return -1; }
    if (targets.count == 0 && s->op == KP_WRITE_UPSERT && !s->for_each) {
        kp_record_list_free(&targets);
        /* insert: the step's record (if any), the where equalities, the assignments */
        const cJSON *given = step_record(m, step, 0);
        cJSON *base = given ? kp_data_copy(given, NULL) : cJSON_CreateObject();
        for (size_t i = 0; base && i < s->where_count; i++) {
            const kp_cond *c = &s->where[i];
            int dropped = 0;
            const cJSON *v = operand(m, &c->value, &dropped);
            if (c->op != KP_OP_EQ || c->path_len || dropped || !v) continue;
            cJSON *next = kp_record_with(s->entity, base, c->attr, v);
            cJSON_Delete(base);
            base = next;
        }
        if (!base) return nomem(m->err);
        cJSON *obj = assigned(m, s, base);
        cJSON_Delete(base);
        if (!obj) return -1;
        kp_record *rec = NULL;
        int rc = insert_one(m, step, obj, &rec);
        if (rc == STEP_APPLIED && kp_record_list_push(written, rec)) return nomem(m->err);
        return rc;
    }
    if (targets.count == 0) {
        set_reason(m, step, "no %s matches the \"where\"", s->entity->name);
        kp_record_list_free(&targets);
        return STEP_SKIPPED;
    }
    for (size_t i = 0; i < targets.count; i++) {
        kp_record *rec = targets.items[i];
        if (rec->is_deleted) continue;
        if (!conds_hold(m, rec, s->conditions, s->condition_count)) {
            char key[200];
            key_text(rec, key, sizeof key);
            set_reason(m, step, "the \"if\" conditions do not hold for %s %s", s->entity->name, key);
            continue;
        }
        cJSON *obj = assigned(m, s, rec->object);
        if (!obj || do_replace(m, rec, obj)) { kp_record_list_free(&targets); return -1; }
        if (kp_record_list_push(written, rec)) { kp_record_list_free(&targets); return nomem(m->err); }
    }
    kp_record_list_free(&targets);
    return written->count ? STEP_APPLIED : STEP_SKIPPED;
}

static int run_delete(mctx *m, size_t step, kp_record_list *written)
{
    const kp_write_step *s = &m->write->steps[step];
    kp_record_list targets = {0};
    if (step_targets(m, s, &targets)) { kp_record_list_free(&targets); return -1; }
    if (targets.count == 0) set_reason(m, step, "no %s matches the \"where\"", s->entity->name);
    int refused = 0;
    for (size_t i = 0; i < targets.count && !refused; i++) {
        kp_record *rec = targets.items[i];
        if (rec->is_deleted) continue;
        if (!conds_hold(m, rec, s->conditions, s->condition_count)) {
            char key[200];
            key_text(rec, key, sizeof key);
            set_reason(m, step, "the \"if\" conditions do not hold for %s %s", s->entity->name, key);
            continue;
        }
        m->deleting.count = 0;
        if (delete_record(m, step, rec, &refused)) { kp_record_list_free(&targets); return -1; }
        if (!refused && kp_record_list_push(written, rec)) { kp_record_list_free(&targets); return nomem(m->err); }
    }
    kp_record_list_free(&targets);
    if (refused) return STEP_REFUSED;
    return written->count ? STEP_APPLIED : STEP_SKIPPED;
}

int kp_write_apply(kp_dataset *ds, const kp_write_request *request, kp_change_log *log, kp_write_result *result,
                   kp_error *err)
{
    memset(result, 0, sizeof *result);
    kp_change_log local = {0};
    mctx m;
    memset(&m, 0, sizeof m);
    m.ds = ds;
    m.req = request;
    m.write = request->write;
    m.doc = kp_dataset_model(ds)->doc;
    m.log = log ? log : &local;
    m.err = err;
    kp_error_clear(err);
    char owner[300];
    snprintf(owner, sizeof owner, "write '%s'", m.write->name);
    if (kp_params_resolve(m.write->params, m.write->param_count, request->params, m.doc, owner, &m.params, err))
        return -1;
    size_t mark = m.log->count;
    int rc = 0, stop = 0;
    for (size_t i = 0; i < m.write->step_count && rc == 0 && !stop; i++) {
        const kp_write_step *s = &m.write->steps[i];
        size_t step_mark = m.log->count;
        kp_record_list written = {0};
        int status;
        switch (s->op) {
        case KP_WRITE_INSERT: status = run_insert(&m, i, &written); break;
        case KP_WRITE_UPDATE: case KP_WRITE_UPSERT: status = run_update(&m, i, &written); break;
        default: status = run_delete(&m, i, &written); break;
        }
        if (status >= 0 && status != STEP_REFUSED && refresh_step(&m, step_mark)) status = -1;
        if (status < 0) { rc = -1; kp_record_list_free(&written); break; }
        result->records_written += status == STEP_APPLIED ? written.count : 0;
        if (i == 0) { m.first = written; written.items = NULL; written.count = written.cap = 0; }
        kp_record_list_free(&written);
        if (status == STEP_APPLIED) { result->steps_applied++; continue; }
        if (status == STEP_SKIPPED) result->steps_skipped++;
        if (status == STEP_REFUSED) {
            result->outcome = KP_WRITE_REFUSED;
            if (kp_change_log_undo(ds, m.log, m.write->is_atomic ? mark : step_mark, err)) rc = -1;
            stop = 1;
        } else if (m.write->is_atomic) {
            result->outcome = KP_WRITE_SKIPPED;
            if (kp_change_log_undo(ds, m.log, mark, err)) rc = -1;
            stop = 1;
        }
    }
    if (rc == 0 && !stop) {
        if (result->steps_skipped == 0) result->outcome = KP_WRITE_APPLIED;
        else if (result->steps_applied == 0) result->outcome = KP_WRITE_SKIPPED;
        else result->outcome = KP_WRITE_PARTIAL;
    }
    if (stop && m.write->is_atomic) result->steps_applied = 0, result->records_written = 0;
    if (rc) {
        kp_error saved = *err;
        kp_error ignored;
        kp_change_log_undo(ds, m.log, mark, &ignored);
        *err = saved;
    }
    snprintf(result->reason, sizeof result->reason, "%s", m.reason);
    kp_record_list_free(&m.first);
    kp_record_list_free(&m.deleting);
    kp_params_free(m.params);
    kp_change_log_free(&local);
    return rc;
}

/* ---- the records a list of changes names ------------------------------------------------ */

typedef struct change_pair {
    const kp_entity *entity;
    const kp_record *old, *cur;
} change_pair;

static int pair_order(const void *a, const void *b)
{
    const change_pair *x = a, *y = b;
    if (x->entity->index != y->entity->index) return x->entity->index < y->entity->index ? -1 : 1;
    if (!x->cur != !y->cur) return x->cur ? -1 : 1;
    const kp_record *p = x->cur ? x->cur : x->old, *q = y->cur ? y->cur : y->old;
    if (p->serial != q->serial) return p->serial < q->serial ? -1 : 1;
    uintptr_t u = (uintptr_t)x->old, v = (uintptr_t)y->old;
    return u < v ? -1 : u > v;
}

int kp_changed_records(const kp_dataset *before, const kp_dataset *after, const kp_change *changes, size_t count,
                       kp_change_pair_fn fn, void *ctx, kp_error *err)
{
    change_pair *pairs = malloc((count ? count : 1) * sizeof *pairs);
    if (!pairs) return nomem(err);
    size_t n = 0;
    for (size_t i = 0; i < count; i++) {
        const cJSON *like = changes[i].after ? changes[i].after : changes[i].before;
        if (!like) continue;
        const kp_record *old = kp_dataset_find_like(before, changes[i].entity, like);
        const kp_record *cur = kp_dataset_find_like(after, changes[i].entity, like);
        if (!old && !cur) continue;
        if (old && cur && kp_data_equal(old->object, cur->object, NULL)) continue;
        pairs[n++] = (change_pair){changes[i].entity, old, cur};
    }
    qsort(pairs, n, sizeof *pairs, pair_order);
    int rc = 0;
    for (size_t i = 0; i < n && rc == 0; i++) {
        if (i && pairs[i].old == pairs[i - 1].old && pairs[i].cur == pairs[i - 1].cur) continue;
        rc = fn(ctx, pairs[i].entity, pairs[i].old, pairs[i].cur, err);
    }
    free(pairs);
    return rc;
}
