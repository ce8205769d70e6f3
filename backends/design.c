/*
 * design.c — building and freeing kp_design, items, results and read-backs; the
 * neutral design JSON (docs/output.md "advise").
 *
 * Invariant: everything a design points to lives in its arena (or is a cJSON request
 * listed in it), so kp_design_free releases a design completely.
 */
#include "backends/backend.h"
#include "backends/write_effects.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int reads_count(const kp_shape *s, const kp_derived *kept)
{
    if (!s) return 0;
    if (s->kind == KP_SHAPE_COUNT && s->hop_count == 1 && s->hops[0] == kept->path[0]) return 1;
    for (size_t i = 0; i < s->member_count; i++)
        if (reads_count(s->members[i], kept)) return 1;
    return 0;
}

/* Does a response return attribute a itself (a kept copy a field reads)? */
static int returns_attr(const kp_shape *s, const kp_attr *a)
{
    if (!s) return 0;
    if (s->kind == KP_SHAPE_ATTR && s->attr == a) return 1;
    if (returns_attr(s->value, a)) return 1;
    for (size_t i = 0; i < s->member_count; i++)
        if (returns_attr(s->members[i], a)) return 1;
    return 0;
}

static void decide_kept(kp_design *d, const kp_model *m);

kp_design *kp_design_new(const kp_backend *backend, const kp_model *model, const kp_mix *mix, const char *candidate)
{
    kp_design *d = calloc(1, sizeof *d);
    if (!d) return NULL;
    d->backend = backend;
    d->model = model;
    d->mix = mix;
    d->candidate = kp_arena_strdup(&d->arena, candidate);
    d->plan_count = model->pattern_count;
    d->plans = kp_arena_alloc(&d->arena, sizeof *d->plans * (model->pattern_count ? model->pattern_count : 1));
    d->write_plan_count = model->write_count;
    d->write_plans = kp_arena_alloc(&d->arena, sizeof *d->write_plans * (model->write_count ? model->write_count : 1));
    if (!d->candidate || !d->plans || !d->write_plans) { kp_design_free(d); return NULL; }
    for (size_t i = 0; i < model->pattern_count; i++) d->plans[i].pattern = model->patterns[i];
    for (size_t i = 0; i < model->write_count; i++) d->write_plans[i].write = model->writes[i];
    decide_kept(d, model);
    return d;
}

void kp_design_free(kp_design *d)
{
    if (!d) return;
    for (size_t i = 0; i < d->plan_count; i++)
        for (size_t k = 0; k < d->plans[i].op_count; k++) cJSON_Delete(d->plans[i].ops[k].request);
    if (d->layout && d->free_layout) d->free_layout(d->layout);
    kp_arena_free(&d->arena);
    free(d);
}

void kp_design_list_free(kp_design_list *list)
{
    for (size_t i = 0; i < list->count; i++) kp_design_free(list->items[i]);
    free(list->items);
    list->items = NULL;
    list->count = 0;
}

/* Appends one zeroed element to an arena array. Capacities are powers of two (implied
 * by the count, so every array here must come from grow): a push copies only when the
 * array is full, keeping advise and compare linear on large models. A copied array's
 * old storage stays in the arena, so an element pointer taken before a later push
 * still points to readable memory — but to the old copy: callers re-fetch elements by
 * index after pushing to the same array. */
static void *grow(kp_design *d, void **items, size_t *count, size_t size)
{
    size_t n = *count;
    if (n == 0 || (n & (n - 1)) == 0) {
        size_t capacity = n ? n * 2 : 1;
        void *bigger = kp_arena_alloc(&d->arena, size * capacity);
        if (!bigger) return NULL;
        if (n) memcpy(bigger, *items, size * n);
        *items = bigger;
    }
    char *slot = (char *)*items + size * n;
    memset(slot, 0, size);
    (*count)++;
    return slot;
}

void kp_write_plan_begin(kp_write_plan *wp)
{
    const kp_write *w = wp->write;
    memset(wp, 0, sizeof *wp);
    wp->write = w;
}

kp_write_touch *kp_write_plan_touch(kp_design *d, kp_write_plan *wp)
{
    return grow(d, (void **)&wp->touches, &wp->touch_count, sizeof *wp->touches);
}

/* The share of an effect's records (fx NULL: the fixed share; array: of their elements,
 * `elements` expected), its records counted once per effect. */
static kp_write_share *share_of(kp_design *d, kp_write_plan *wp, const kp_write_effect *fx, const kp_attr *array,
                                double elements)
{
    /* the documents of extended references are not records the write changes */
    const kp_entity *per = !fx || fx->kind == KP_EFFECT_REFERENCE || fx->count <= 0 ? NULL : fx->entity;
    /* their number follows the references the changed records have */
    const kp_rel *via = fx && fx->kind == KP_EFFECT_REFERENCE && fx->count > 0 ? fx->rel : NULL;
    if (!per) array = NULL;
    kp_write_share *x = NULL;
    for (size_t i = 0; i < wp->share_count && !x; i++)
        if (wp->shares[i].per == per && wp->shares[i].via == via && wp->shares[i].elements == array) x = &wp->shares[i];
    if (!x) x = grow(d, (void **)&wp->shares, &wp->share_count, sizeof *wp->shares);
    if (!x) return NULL;
    x->per = per;
    x->via = via;
    x->elements = array;
    if ((per || via) && x->last != fx) {
        x->records += fx->count;
        x->element_count += elements;
    }
    x->last = fx;
    return x;
}

void kp_write_plan_items(kp_design *d, kp_write_plan *wp, const kp_write_effect *fx, double items)
{
    wp->items += items;
    kp_write_share *x = share_of(d, wp, fx, NULL, 0);
    if (x) x->count += items;
}

void kp_write_plan_element_items(kp_design *d, kp_write_plan *wp, const kp_write_effect *fx, const kp_attr *array,
                                 double items, double elements)
{
    wp->items += items;
    kp_write_share *x = share_of(d, wp, fx, array, elements);
    if (x) x->count += items;
}

void kp_write_plan_requests(kp_design *d, kp_write_plan *wp, const kp_write_effect *fx, double requests)
{
    kp_write_share *x = share_of(d, wp, fx, NULL, 0);
    if (x) x->requests += requests;
}

void kp_write_plan_requests_once(kp_design *d, kp_write_plan *wp, const kp_write_effect *fx, double requests)
{
    kp_write_share *x = share_of(d, wp, fx, NULL, 0);
    if (x) x->once += requests;
}

/* A share's once-requests for the operation `m` describes: all of them when any of its
 * records changed. */
static double share_once(const kp_write_share *x, const kp_write_measure *m)
{
    if (x->per) return m->changed[x->per->index] > 0 ? x->once : 0;
    if (x->via && m->holders) return m->holders(m->ctx, x->via) > 0 ? x->once : 0;
    return x->once;
}

/* A share's part of the operation `m` describes. */
static double share_part(const kp_write_share *x, double value, const kp_write_measure *m)
{
    if (x->elements && m->elements && x->element_count > 0)
        return value * m->elements(m->ctx, x->elements) / x->element_count;
    if (x->per) return value * m->changed[x->per->index] / x->records;
    if (x->via && m->holders && x->records > 0) return value * m->holders(m->ctx, x->via) / x->records;
    return value;
}

double kp_write_plan_items_for(const kp_write_plan *wp, const kp_write_measure *m)
{
    double items = 0;
    for (size_t i = 0; i < wp->share_count; i++) items += share_part(&wp->shares[i], wp->shares[i].count, m);
    return items;
}

double kp_write_plan_requests_for(const kp_write_plan *wp, const kp_write_measure *m)
{
    if (wp->items_per_request > 0 && !(m->without_transaction && isinf(wp->items_per_request))) {
        double items = kp_write_plan_items_for(wp, m); /* none changed: nothing sent */
        return items > 0 ? fmax(1, ceil(items / wp->items_per_request)) : 0;
    }
    double requests = 0;
    /* a share's once-requests are the least it sends when its records changed; its
     * per-record requests (commands of a batch size) count where they come to more */
    for (size_t i = 0; i < wp->share_count; i++)
        requests += fmax(share_part(&wp->shares[i], wp->shares[i].requests, m), share_once(&wp->shares[i], m));
    return requests;
}

void kp_write_plan_read(kp_design *d, kp_write_plan *wp, const char *container)
{
    const char **slot = grow(d, (void **)&wp->reads, &wp->read_count, sizeof *wp->reads);
    if (slot) *slot = container;
}

kp_container *kp_design_add_container(kp_design *d, const char *name, const char *kind)
{
    kp_container *c = grow(d, (void **)&d->containers, &d->container_count, sizeof *c);
    if (!c) return NULL;
    c->name = kp_arena_strdup(&d->arena, name);
    c->kind = kp_arena_strdup(&d->arena, kind);
    return c;
}

kp_decision *kp_design_decide(kp_design *d, const char *subject, const char *choice, const char *why)
{
    kp_decision *x = grow(d, (void **)&d->decisions, &d->decision_count, sizeof *x);
    if (!x) return NULL;
    x->subject = kp_arena_strdup(&d->arena, subject);
    x->choice = kp_arena_strdup(&d->arena, choice);
    x->why = kp_arena_strdup(&d->arena, why);
    return x;
}

void kp_design_undecide(kp_design *d, const char *subject)
{
    size_t w = 0;
    for (size_t i = 0; i < d->decision_count; i++)
        if (strcmp(d->decisions[i].subject, subject) != 0) d->decisions[w++] = d->decisions[i];
    d->decision_count = w;
}

/* Does a pattern's where test attribute a (a kept copy it selects by)? */
static int selects_by(const kp_pattern *p, const kp_attr *a)
{
    for (size_t i = 0; i < p->where_count; i++)
        if (p->where[i].attr == a) return 1;
    return 0;
}

/* The counts and copies keyplan keeps (core/kept_counts.c, core/kept_copies.c) are the same
 * choice on every database: each design states it, with the patterns that read it. */
static void decide_kept(kp_design *d, const kp_model *m)
{
    for (size_t e = 0; e < m->entity_count; e++)
        for (size_t a = 0; a < m->entities[e]->attr_count; a++) {
            const kp_attr *k = m->entities[e]->attrs[a];
            if (!k->is_kept) continue;
            int selected = 0;
            for (size_t p = 0; !k->derived && p < m->pattern_count; p++) selected |= selects_by(m->patterns[p], k);
            const char *choice =
                k->derived ? kp_design_printf(d, "a count of %s kept on each %s record by the writes, read instead of counted",
                                              k->derived->path[0]->name, k->entity->name)
                           : kp_design_printf(d, "a copy of %s.%s kept on each %s record by the writes, %s instead of reading each "
                                                 "record's %s",
                                              k->copy_of->path[0]->name, k->copy_of->source->name, k->entity->name,
                                              selected ? "selected by in the index" : "returned from it",
                                              k->copy_of->path[0]->name);
            kp_decision *x = kp_design_decide(d, kp_design_printf(d, "%s.%s", k->entity->name, k->name), choice, k->kept_why);
            for (size_t p = 0; x && p < m->pattern_count; p++)
                if (k->derived ? reads_count(m->patterns[p]->returns, k->derived)
                               : selects_by(m->patterns[p], k) || returns_attr(m->patterns[p]->returns, k))
                    kp_decision_add_pattern(d, x, m->patterns[p]);
        }
}

void kp_decision_add_pattern(kp_design *d, kp_decision *x, const kp_pattern *p)
{
    for (size_t i = 0; i < x->pattern_count; i++)
        if (x->patterns[i] == p) return;
    const kp_pattern **slot = grow(d, (void **)&x->patterns, &x->pattern_count, sizeof *slot);
    if (slot) *slot = p;
}

static const char *vformat(kp_design *d, const char *fmt, va_list ap)
{
    return kp_arena_vprintf(&d->arena, fmt, ap);
}

const char *kp_design_printf(kp_design *d, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    const char *s = vformat(d, fmt, ap);
    va_end(ap);
    return s;
}

int kp_design_defect(kp_design *d, const kp_pattern *about, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    const char *s = vformat(d, fmt, ap);
    va_end(ap);
    size_t count = d->defect_count;
    const kp_pattern **pslot = grow(d, (void **)&d->defect_patterns, &count, sizeof *pslot);
    const char **slot = pslot ? grow(d, (void **)&d->defects, &d->defect_count, sizeof *slot) : NULL;
    if (!slot || !s) return -1;
    *slot = s;
    *pslot = about;
    return 0;
}

int kp_design_note(kp_design *d, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    const char *s = vformat(d, fmt, ap);
    va_end(ap);
    const char **slot = grow(d, (void **)&d->notes, &d->note_count, sizeof *slot);
    if (!slot || !s) return -1;
    *slot = s;
    return 0;
}

kp_operation *kp_plan_add_op(kp_design *d, kp_plan *plan, const char *op, const char *container)
{
    kp_operation *o = grow(d, (void **)&plan->ops, &plan->op_count, sizeof *o);
    if (!o) return NULL;
    o->op = kp_arena_strdup(&d->arena, op);
    o->container = kp_arena_strdup(&d->arena, container);
    o->requests = 1;
    return o;
}

void kp_plan_total(kp_plan *plan)
{
    plan->requests = 0;
    plan->sequential_steps = plan->op_count ? 1 : 0;
    int has_steps = 0;
    for (size_t i = 0; i < plan->op_count; i++) has_steps |= plan->ops[i].step > 0;
    plan->items = plan->bytes = plan->read_units = 0;
    plan->requests_max = plan->items_max = plan->bytes_max = 0;
    plan->is_scan = 0;
    int more_steps = 0;
    for (size_t i = 0; i < plan->op_count; i++) {
        const kp_operation *o = &plan->ops[i];
        more_steps += o->more_steps_max;
        plan->requests += o->requests;
        if (has_steps) {
            if (o->step > plan->sequential_steps) plan->sequential_steps = o->step;
        } else if (i > 0 && o->waits_for_previous) {
            plan->sequential_steps++;
        }
        plan->items += o->items;
        plan->bytes += o->bytes;
        plan->read_units += o->read_units;
        plan->requests_max += o->requests_max > o->requests ? o->requests_max : o->requests;
        plan->items_max += o->items_max > o->items ? o->items_max : o->items;
        plan->bytes_max += o->bytes_max > o->bytes ? o->bytes_max : o->bytes;
        plan->is_scan |= o->is_scan;
    }
    plan->sequential_steps_max = plan->sequential_steps + more_steps;
}

/* ---- items, results, read-backs ------------------------------------------------------- */

kp_item *kp_item_list_push(kp_item_list *list)
{
    if (list->count == list->cap) {
        size_t cap = list->cap ? list->cap * 2 : 16;
        kp_item *bigger = realloc(list->items, cap * sizeof *bigger);
        if (!bigger) return NULL;
        list->items = bigger;
        list->cap = cap;
    }
    kp_item *item = &list->items[list->count++];
    memset(item, 0, sizeof *item);
    return item;
}

void kp_item_list_clear(kp_item_list *list)
{
    for (size_t i = 0; i < list->count; i++) {
        cJSON_Delete(list->items[i].body);
        free(list->items[i].id);
    }
    list->count = 0;
}

void kp_item_list_free(kp_item_list *list)
{
    kp_item_list_clear(list);
    free(list->items);
    list->items = NULL;
    list->cap = 0;
}

void kp_result_free(kp_result *r)
{
    cJSON_Delete(r->response);
    free(r->next_page);
    memset(r, 0, sizeof *r);
}

void kp_readback_free(kp_readback *r)
{
    for (size_t i = 0; i < r->count; i++) free(r->entries[i].container);
    free(r->entries);
    r->entries = NULL;
    r->count = 0;
}

static uint64_t fnv(uint64_t h, const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++) { h ^= (unsigned char)s[i]; h *= 1099511628211ULL; }
    return h;
}

static int compare_members(const void *a, const void *b)
{
    return strcmp((*(const cJSON *const *)a)->string, (*(const cJSON *const *)b)->string);
}

static uint64_t hash_node(uint64_t h, const cJSON *n);

/* An object's members but those drop says yes to (drop NULL: all), in name order. */
static uint64_t hash_object(uint64_t h, const cJSON *n, int (*drop)(const cJSON *member, const void *ctx), const void *ctx)
{
    size_t count = 0;
    for (const cJSON *c = n->child; c; c = c->next) count++;
    const cJSON *few[32];
    const cJSON **members = count <= 32 ? few : malloc(count * sizeof *members);
    if (!members) return h;
    size_t i = 0;
    for (const cJSON *c = n->child; c; c = c->next)
        if (!drop || !drop(c, ctx)) members[i++] = c;
    count = i;
    if (members != few) qsort(members, count, sizeof *members, compare_members);
    else {
        /* a few members: insertion sort, without qsort's call per comparison (names are unique) */
        for (size_t j = 1; j < count; j++) {
            const cJSON *m = members[j];
            size_t k = j;
            for (; k > 0 && strcmp(members[k - 1]->string, m->string) > 0; k--) members[k] = members[k - 1];
            members[k] = m;
        }
    }
    h = fnv(h, "{", 1);
    for (i = 0; i < count; i++) {
        h = fnv(h, members[i]->string, strlen(members[i]->string) + 1);
        h = hash_node(h, members[i]);
    }
    if (members != few) free(members);
    return fnv(h, "}", 1);
}

static uint64_t hash_node(uint64_t h, const cJSON *n)
{
    if (cJSON_IsObject(n)) return hash_object(h, n, NULL, NULL);
    if (cJSON_IsArray(n)) {
        h = fnv(h, "[", 1);
        for (const cJSON *c = n->child; c; c = c->next) h = hash_node(h, c);
        return fnv(h, "]", 1);
    }
    if (cJSON_IsString(n) || cJSON_IsRaw(n)) return fnv(fnv(h, cJSON_IsRaw(n) ? "#" : "\"", 1), n->valuestring, strlen(n->valuestring));
    if (cJSON_IsNumber(n)) {
        char buf[64];
        double d = n->valuedouble;
        if (d == floor(d) && fabs(d) < 1e17) {
            /* a whole number: "%.17g" prints its digits */
            char *p = kp_digits(buf + sizeof buf, (unsigned long long)fabs(d), signbit(d) != 0);
            *--p = '#';
            return fnv(h, p, (size_t)(buf + sizeof buf - p));
        }
        snprintf(buf, sizeof buf, "#%.17g", d);
        return fnv(h, buf, strlen(buf));
    }
    if (cJSON_IsTrue(n)) return fnv(h, "t", 1);
    if (cJSON_IsFalse(n)) return fnv(h, "f", 1);
    return fnv(h, "n", 1);
}

uint64_t kp_item_hash(const cJSON *body)
{
    return hash_node(1469598103934665603ULL, body);
}

uint64_t kp_item_hash_without(const cJSON *body, int (*drop)(const cJSON *member, const void *ctx), const void *ctx)
{
    return cJSON_IsObject(body) ? hash_object(1469598103934665603ULL, body, drop, ctx) : kp_item_hash(body);
}

void kp_note_add(char *note, size_t size, const char *text)
{
    if (!text || !*text || strstr(note, text)) return;
    size_t n = strlen(note);
    if (n + 2 < size) snprintf(note + n, size - n, "%s%s", n ? "; " : "", text);
}

#define SHARD_KEY "#shard "

const char *kp_marker_key(const char *base, const cJSON *marker, const char *shard, char *buf, size_t size)
{
    if (!shard) {
        const cJSON *s = cJSON_GetObjectItemCaseSensitive(marker, "shard");
        shard = cJSON_IsString(s) ? s->valuestring : NULL;
    }
    if (shard) snprintf(buf, size, "%s" SHARD_KEY "%s", base, shard);
    else snprintf(buf, size, "%s", base);
    return buf;
}

int kp_marker_key_is_shard(const char *base, const char *key)
{
    size_t n = strlen(base);
    return strncmp(key, base, n) == 0 && strncmp(key + n, SHARD_KEY, strlen(SHARD_KEY)) == 0;
}

static kp_readback_entry *readback_entry(kp_readback *r, const char *container)
{
    for (size_t i = 0; i < r->count; i++)
        if (strcmp(r->entries[i].container, container) == 0) return &r->entries[i];
    kp_readback_entry *bigger = realloc(r->entries, (r->count + 1) * sizeof *bigger);
    if (!bigger) return NULL;
    r->entries = bigger;
    kp_readback_entry *e = &r->entries[r->count];
    memset(e, 0, sizeof *e);
    e->container = strdup(container);
    if (!e->container) return NULL;
    r->count++;
    return e;
}

static int fold_item(void *ctx, const char *container, const char *id, uint64_t checksum, kp_error *err)
{
    (void)id;
    kp_readback_entry *e = readback_entry(ctx, container);
    if (!e) return kp_error_set(err, KP_ERR_NOMEM, NULL, 0, 0, "out of memory");
    e->items++;
    e->checksum ^= checksum;
    return 0;
}

int kp_read_back_from_items(int (*read_items)(kp_conn *, const kp_design *, kp_read_item_fn, void *, kp_error *),
                            kp_conn *conn, const kp_design *design, kp_readback *out, kp_error *err)
{
    memset(out, 0, sizeof *out);
    for (size_t i = 0; i < design->container_count; i++)
        if (!readback_entry(out, design->containers[i].name)) {
            kp_readback_free(out);
            return kp_error_set(err, KP_ERR_NOMEM, NULL, 0, 0, "out of memory");
        }
    if (read_items(conn, design, fold_item, out, err)) { kp_readback_free(out); return -1; }
    return 0;
}

int kp_design_each_item(const kp_backend *b, const kp_design *design, const kp_dataset *data, kp_each_item_fn fn,
                        void *ctx, kp_error *err)
{
    const kp_model *m = kp_dataset_model(data);
    kp_item_list items = {0};
    long index = 0;
    int rc = 0;
    for (size_t e = 0; e < m->entity_count && rc == 0; e++) {
        size_t n = 0;
        kp_record *const *records = kp_dataset_records(data, m->entities[e], &n);
        for (size_t i = 0; i < n && rc == 0; i++, index++) {
            kp_item_list_clear(&items);
            rc = b->transform(design, data, records[i], &items, err);
            for (size_t k = 0; k < items.count && rc == 0; k++) rc = fn(ctx, &items.items[k], index, err);
        }
    }
    kp_item_list_free(&items);
    return rc;
}

const kp_container *kp_design_container(const kp_design *d, const char *name)
{
    for (size_t i = 0; i < d->container_count; i++)
        if (strcmp(d->containers[i].name, name) == 0) return &d->containers[i];
    return NULL;
}

int kp_design_containers_read(const kp_design *design, kp_arena *arena, kp_strmap *read)
{
    static int yes = 1;
    for (size_t p = 0; p < design->plan_count; p++)
        for (size_t k = 0; k < design->plans[p].op_count; k++)
            if (design->plans[p].ops[k].container && kp_strmap_put(arena, read, design->plans[p].ops[k].container, &yes)) return -1;
    for (size_t w = 0; w < design->write_plan_count; w++)
        for (size_t k = 0; k < design->write_plans[w].read_count; k++)
            if (kp_strmap_put(arena, read, design->write_plans[w].reads[k], &yes)) return -1;
    return 0;
}
