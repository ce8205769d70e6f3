/*
 * model_diff.c — the change between two model versions and what it does to each
 * database's design (model_diff.h).
 */
#include "core/json.h"
#include "migrations/model_diff.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/model.h"

/* ---- a change ------------------------------------------------------------------------------ */

static void change(cJSON *list, int *count, const char *kind, const char *subject, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
static void change(cJSON *list, int *count, const char *kind, const char *subject, const char *fmt, ...)
{
    char message[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(message, sizeof message, fmt, ap);
    va_end(ap);
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "kind", kind);
    cJSON_AddStringToObject(o, "subject", subject);
    cJSON_AddStringToObject(o, "message", message);
    cJSON_AddItemToArray(list, o);
    if (count) (*count)++;
}

/* A change that breaks readers of the old version: listed among the changes, and among
 * the breaking ones with why it breaks them. */
static void breaking_change(cJSON *changes_list, int *changes, cJSON *breaking, int *breaks, const char *kind,
                            const char *subject, const char *why, const char *fmt, ...) __attribute__((format(printf, 8, 9)));
static void breaking_change(cJSON *changes_list, int *changes, cJSON *breaking, int *breaks, const char *kind,
                            const char *subject, const char *why, const char *fmt, ...)
{
    char message[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(message, sizeof message, fmt, ap);
    va_end(ap);
    change(changes_list, changes, kind, subject, "%s", message);
    change(breaking, breaks, kind, subject, "%s: %s", message, why);
}

/* ---- the model side ------------------------------------------------------------------------ */

static const kp_relation *relation_named(const kp_model *m, const char *name)
{
    for (size_t i = 0; i < m->relation_count; i++)
        if (strcmp(m->relations[i]->name, name) == 0) return m->relations[i];
    return NULL;
}

static void key_text(const kp_entity *e, char *buf, size_t size)
{
    size_t n = 0;
    buf[0] = '\0';
    for (size_t k = 0; k < e->key_count && n < size; k++)
        n += (size_t)snprintf(buf + n, size - n, "%s%s", k ? ", " : "", e->key[k]->name);
}

static void params_text(const kp_pattern *p, char *buf, size_t size)
{
    size_t n = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < p->param_count && n < size; i++) {
        const kp_param *x = p->params[i];
        n += (size_t)snprintf(buf + n, size - n, "%s:%s%s%s", i ? ", " : "", x->name, x->type ? kp_type_name(x->type->kind) : "value",
                              x->is_optional ? "?" : "");
    }
}

static void model_changes(const kp_model *o, const kp_model *n, cJSON *out, cJSON *breaking, int *changes, int *breaks)
{
    char a[4096], b[4096];
    for (size_t i = 0; i < o->entity_count; i++) {
        const kp_entity *e = o->entities[i], *f = kp_model_entity(n, e->name);
        if (!f) {
            change(out, changes, "entity-removed", e->name, "entity %s is removed", e->name);
            continue;
        }
        key_text(e, a, sizeof a);
        key_text(f, b, sizeof b);
        if (strcmp(a, b) != 0)
            breaking_change(out, changes, breaking, breaks, "key-changed", e->name, "every item, document or row that holds it "
                            "is rewritten, and readers that build the old keys no longer find them",
                            "the key of %s changes from (%s) to (%s)", e->name, a, b);
        for (size_t k = 0; k < e->attr_count; k++) {
            const kp_attr *x = e->attrs[k], *y = kp_entity_attr(f, x->name), *renamed = NULL;
            for (size_t j = 0; !y && j < f->attr_count; j++)
                if (f->attrs[j]->renamed_from && strcmp(f->attrs[j]->renamed_from, x->name) == 0) renamed = f->attrs[j];
            char subject[512];
            snprintf(subject, sizeof subject, "%s.%s", e->name, x->name);
            if (renamed) change(out, changes, "attribute-renamed", subject, "attribute %s is renamed %s (its values are kept)",
                                subject, renamed->name);
            else if (!y) change(out, changes, "attribute-removed", subject, "attribute %s is removed", subject);
            else if (x->type.kind != y->type.kind)
                change(out, changes, "attribute-type-changed", subject, "attribute %s changes from %s to %s", subject,
                       kp_type_name(x->type.kind), kp_type_name(y->type.kind));
            else if (x->is_optional != y->is_optional)
                change(out, changes, "attribute-optionality-changed", subject, "attribute %s becomes %s", subject,
                       y->is_optional ? "optional" : "required");
        }
        for (size_t k = 0; k < f->attr_count; k++) {
            const kp_attr *y = f->attrs[k];
            if (kp_entity_attr(e, y->name) || (y->renamed_from && kp_entity_attr(e, y->renamed_from))) continue;
            char subject[512], value[80] = "";
            snprintf(subject, sizeof subject, "%s.%s", f->name, y->name);
            if (y->backfill) kp_json_describe(y->backfill, value, sizeof value);
            change(out, changes, "attribute-added", subject, "attribute %s is added%s%s%s", subject,
                   y->is_optional ? " (optional)"
                   : y->copy_of || y->derived ? " (computed for existing records)"
                   : y->backfill ? " (existing records get its backfill value " : " (required, and no \"backfill\" value: `keyplan migrate` refuses it)",
                   value, y->backfill && !y->is_optional && !y->copy_of && !y->derived ? ")" : "");
        }
    }
    for (size_t i = 0; i < n->entity_count; i++)
        if (!kp_model_entity(o, n->entities[i]->name))
            change(out, changes, "entity-added", n->entities[i]->name, "entity %s is added", n->entities[i]->name);
    for (size_t i = 0; i < o->relation_count; i++) {
        const kp_relation *r = o->relations[i], *s = relation_named(n, r->name);
        if (!s) change(out, changes, "relation-removed", r->name, "relation %s (%s %s %s) is removed", r->name, r->from->name,
                       kp_cardinality_name(r->cardinality), r->to->name);
        else if (r->cardinality != s->cardinality || r->link != s->link || strcmp(r->from->name, s->from->name) ||
                 strcmp(r->to->name, s->to->name))
            change(out, changes, "relation-changed", r->name, "relation %s changes from %s %s %s to %s %s %s", r->name,
                   r->from->name, kp_cardinality_name(r->cardinality), r->to->name, s->from->name, kp_cardinality_name(s->cardinality), s->to->name);
        else if (fabs(r->fanout.avg - s->fanout.avg) > 1e-9 * (1 + fabs(r->fanout.avg)) || r->fanout.max != s->fanout.max)
            change(out, changes, "fanout-changed", r->name, "relation %s's fan-out changes from avg %g (max %g) to avg %g (max %g)",
                   r->name, r->fanout.avg, r->fanout.max, s->fanout.avg, s->fanout.max);
    }
    for (size_t i = 0; i < n->relation_count; i++)
        if (!relation_named(o, n->relations[i]->name))
            change(out, changes, "relation-added", n->relations[i]->name, "relation %s (%s %s %s) is added", n->relations[i]->name,
                   n->relations[i]->from->name, kp_cardinality_name(n->relations[i]->cardinality), n->relations[i]->to->name);
    for (size_t i = 0; i < o->pattern_count; i++) {
        const kp_pattern *p = o->patterns[i], *q = kp_model_pattern(n, p->name);
        if (!q) {
            breaking_change(out, changes, breaking, breaks, "pattern-removed", p->name, "its readers get nothing",
                            "access pattern %s is removed", p->name);
            continue;
        }
        params_text(p, a, sizeof a);
        params_text(q, b, sizeof b);
        if (strcmp(a, b) != 0)
            breaking_change(out, changes, breaking, breaks, "pattern-parameters-changed", p->name, "its callers must change",
                            "%s's parameters change from (%s) to (%s)", p->name, a, b);
        kp_shape_outline(p->returns, a, sizeof a);
        kp_shape_outline(q->returns, b, sizeof b);
        if (strcmp(a, b) != 0) {
            char why[256];
            snprintf(why, sizeof why, "readers of the old one break (was %zu bytes of outline, now %zu; `keyplan check "
                     "--format json` shows both)", strlen(a), strlen(b));
            breaking_change(out, changes, breaking, breaks, "pattern-response-changed", p->name, why, "%s returns another response",
                            p->name);
        } else if (p->rps != q->rps) {
            change(out, changes, "pattern-rate-changed", p->name, "%s's rate changes from %g to %g req/s", p->name, p->rps, q->rps);
        }
    }
    for (size_t i = 0; i < n->pattern_count; i++)
        if (!kp_model_pattern(o, n->patterns[i]->name))
            change(out, changes, "pattern-added", n->patterns[i]->name, "access pattern %s is added", n->patterns[i]->name);
    for (size_t i = 0; i < o->write_count; i++)
        if (!kp_model_write(n, o->writes[i]->name))
            change(out, changes, "write-removed", o->writes[i]->name, "write %s is removed", o->writes[i]->name);
    for (size_t i = 0; i < n->write_count; i++)
        if (!kp_model_write(o, n->writes[i]->name))
            change(out, changes, "write-added", n->writes[i]->name, "write %s is added", n->writes[i]->name);
}

/* ---- the database side --------------------------------------------------------------------- */

static void keys_text(const kp_key_part *keys, size_t n, char *buf, size_t size)
{
    size_t at = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < n && at < size; i++)
        at += (size_t)snprintf(buf + at, size - at, "%s%s %s%s%s%s", i ? ", " : "", keys[i].name,
                               keys[i].role == KP_KEY_PARTITION ? "partition" : keys[i].role == KP_KEY_SORT ? "sort"
                               : keys[i].role == KP_KEY_STATIC ? "static" : "field",
                               keys[i].is_desc ? " desc" : "", keys[i].format && keys[i].format[0] ? " = " : "",
                               keys[i].format ? keys[i].format : "");
}

static const kp_index_desc *index_named(const kp_container *c, const char *name)
{
    for (size_t i = 0; c && i < c->index_count; i++)
        if (strcmp(c->indexes[i].name, name) == 0) return &c->indexes[i];
    return NULL;
}


typedef struct planner {
    const kp_design *o, *n;
    const kp_diff_options *opt;
    cJSON *steps;
    int *changes;
} planner;

/* A step that writes `items` items of about `item_bytes` each: its write units (the
 * database's own where it has them, else neutral 1 KB units), its time at the rate and,
 * where priced, its cost. */
static cJSON *step(planner *P, const char *action, const char *container, const char *index, double items, double item_bytes,
                   int online, const char *fmt, ...) __attribute__((format(printf, 8, 9)));
static cJSON *step(planner *P, const char *action, const char *container, const char *index, double items, double item_bytes,
                   int online, const char *fmt, ...)
{
    char message[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(message, sizeof message, fmt, ap);
    va_end(ap);
    cJSON *s = cJSON_CreateObject();
    cJSON_AddStringToObject(s, "action", action);
    cJSON_AddStringToObject(s, "container", container);
    if (index) cJSON_AddStringToObject(s, "index", index);
    cJSON_AddStringToObject(s, "message", message);
    cJSON_AddBoolToObject(s, "online", online);
    if (items > 0) {
        double per = ceil((item_bytes > 0 ? item_bytes : 1) / 1024.0);
        double units = items * (per < 1 ? 1 : per);
        double rate = P->opt->rate > 0 ? P->opt->rate : 1000;
        cJSON_AddNumberToObject(s, "items", round(items));
        cJSON_AddNumberToObject(s, "write_units", round(units));
        cJSON_AddNumberToObject(s, "seconds", round(items / rate));
        const kp_limits *L = P->n->backend->limits;
        const kp_pricing *pr = L ? L->pricing : NULL;
        if (pr && pr->region_count) cJSON_AddNumberToObject(s, "usd", round(units / 1e6 * pr->regions[0].per_million_writes * 100) / 100);
    }
    cJSON_AddItemToArray(P->steps, s);
    (*P->changes)++;
    return s;
}

static double avg_bytes(const kp_container *c) { return c && c->items > 0 ? c->bytes / c->items : 0; }

/* The entity a decision is about: the first model entity named in its subject. */
static const kp_entity *decision_entity(const kp_model *m, const char *subject)
{
    const kp_entity *best = NULL;
    size_t at = (size_t)-1;
    for (size_t i = 0; i < m->entity_count; i++) {
        const char *hit = strstr(subject, m->entities[i]->name);
        size_t len = strlen(m->entities[i]->name);
        while (hit && ((hit > subject && (hit[-1] >= 'A' && hit[-1] <= 'z')) || (hit[len] >= 'A' && hit[len] <= 'z')))
            hit = strstr(hit + 1, m->entities[i]->name);
        if (hit && (size_t)(hit - subject) < at) { at = (size_t)(hit - subject); best = m->entities[i]; }
    }
    return best;
}

static const kp_container *holder(const kp_design *d, const kp_entity *e)
{
    for (size_t i = 0; e && i < d->container_count; i++)
        for (size_t k = 0; k < d->containers[i].entity_count; k++)
            if (strcmp(d->containers[i].entities[k]->name, e->name) == 0) return &d->containers[i];
    return NULL;
}

static void plan_database(planner *P, cJSON *untouched)
{
    char a[2048], b[2048];
    const kp_design *o = P->o, *n = P->n;
    int *touched = calloc(n->container_count ? n->container_count : 1, sizeof *touched);
    /* containers to create, and in those kept: keys, entities, indexes */
    for (size_t i = 0; i < n->container_count; i++) {
        const kp_container *c = &n->containers[i], *old = kp_design_container(o, c->name);
        if (!old) {
            step(P, "create", c->name, NULL, c->items, avg_bytes(c), 1, "create %s %s and backfill it from the current data (%s "
                 "read from the existing containers)", c->kind, c->name, c->entity_count == 1 ? "its entity's records are" : "its entities' records are");
            touched[i] = 1;
            continue;
        }
        keys_text(old->keys, old->key_count, a, sizeof a);
        keys_text(c->keys, c->key_count, b, sizeof b);
        if (strcmp(a, b) != 0) {
            step(P, "rewrite", c->name, NULL, c->items, avg_bytes(c), 0, "the key of %s changes (%s -> %s): every item is copied "
                 "into the new layout and the old removed; readers of the old keys stop finding them", c->name, a, b);
            touched[i] = 1;
        }
        for (size_t k = 0; k < c->entity_count; k++) {
            int had = 0;
            for (size_t j = 0; j < old->entity_count; j++) had |= strcmp(old->entities[j]->name, c->entities[k]->name) == 0;
            if (!had) {
                const kp_entity *e = c->entities[k];
                step(P, "backfill", c->name, NULL, e->count, avg_bytes(c), 1, "%s now holds %s: its %.0f records are written "
                     "into it", c->name, e->name, e->count);
                touched[i] = 1;
            }
        }
        for (size_t k = 0; k < old->entity_count; k++) {
            int has = 0;
            for (size_t j = 0; j < c->entity_count; j++) has |= strcmp(old->entities[k]->name, c->entities[j]->name) == 0;
            if (!has) {
                step(P, "delete", c->name, NULL, old->entities[k]->count, avg_bytes(old), 1, "%s no longer holds %s: its items "
                     "are deleted once nothing reads them", c->name, old->entities[k]->name);
                touched[i] = 1;
            }
        }
        for (size_t k = 0; k < c->index_count; k++) {
            const kp_index_desc *x = &c->indexes[k], *y = index_named(old, x->name);
            keys_text(x->keys, x->key_count, a, sizeof a);
            if (y) keys_text(y->keys, y->key_count, b, sizeof b);
            if (y && strcmp(a, b) == 0) continue;
            /* the items that carry the index's keys: those of the entities of the patterns that caused it */
            double items = 0;
            for (size_t q = 0; q < x->caused_by_count; q++) {
                const kp_pattern *p = kp_model_pattern(n->model, x->caused_by[q]);
                if (p && p->root) {
                    int seen = 0;
                    for (size_t r = 0; r < q; r++) {
                        const kp_pattern *pp = kp_model_pattern(n->model, x->caused_by[r]);
                        seen |= pp && pp->root == p->root;
                    }
                    if (!seen) items += p->root->count;
                }
            }
            if (items <= 0 || items > c->items) items = c->items;
            if (y)
                step(P, "rebuild-index", c->name, x->name, items, avg_bytes(c), strcmp(x->kind, "lsi") != 0,
                     "%s %s on %s changes its keys (%s -> %s): built again and backfilled%s", x->kind, x->name, c->name, b, a,
                     strcmp(x->kind, "lsi") == 0 ? "; a local index exists only from table creation, so the table is rebuilt" : "");
            else
                step(P, "create-index", c->name, x->name, items, avg_bytes(c), strcmp(x->kind, "lsi") != 0,
                     "create %s %s on %s (%s) and backfill the attributes it is keyed by%s", x->kind, x->name, c->name, a,
                     strcmp(x->kind, "lsi") == 0 ? "; a local index exists only from table creation, so the table is rebuilt" : "");
            touched[i] = 1;
        }
        for (size_t k = 0; k < old->index_count; k++)
            if (!index_named(c, old->indexes[k].name)) {
                step(P, "drop-index", c->name, old->indexes[k].name, 0, 0, 1, "drop %s %s on %s once no reader uses it",
                     old->indexes[k].kind, old->indexes[k].name, c->name);
                touched[i] = 1;
            }
    }
    /* the (container, entity) pairs rewritten for their attributes: at most one per entity a container holds */
    size_t pairs = 0;
    for (size_t i = 0; i < n->container_count; i++) pairs += n->containers[i].entity_count;
    struct rewrite { const kp_container *c; const kp_entity *e; } *rewritten = calloc(pairs ? pairs : 1, sizeof *rewritten);
    size_t rewritten_count = 0;
    /* data changes the layout does not show: an attribute renamed, removed, retyped or
     * added as required is rewritten in every item that holds its entity */
    for (size_t i = 0; i < n->container_count; i++) {
        const kp_container *c = &n->containers[i];
        if (!kp_design_container(o, c->name)) continue;
        for (size_t k = 0; k < c->entity_count; k++) {
            const kp_entity *e = c->entities[k], *was = kp_model_entity(o->model, e->name);
            if (!was) continue;
            char what[512] = "";
            size_t at = 0;
            for (size_t q = 0; q < was->attr_count && at < sizeof what; q++) {
                const kp_attr *x = was->attrs[q], *y = kp_entity_attr(e, x->name), *renamed = NULL;
                for (size_t r = 0; !y && r < e->attr_count; r++)
                    if (e->attrs[r]->renamed_from && strcmp(e->attrs[r]->renamed_from, x->name) == 0) renamed = e->attrs[r];
                if (renamed)
                    at += (size_t)snprintf(what + at, sizeof what - at, "%s%s renamed %s", at ? ", " : "", x->name, renamed->name);
                else if (!y || y->type.kind != x->type.kind)
                    at += (size_t)snprintf(what + at, sizeof what - at, "%s%s %s", at ? ", " : "", x->name, y ? "retyped" : "removed");
            }
            for (size_t q = 0; q < e->attr_count && at < sizeof what; q++) {
                const kp_attr *y = e->attrs[q];
                if (kp_entity_attr(was, y->name) || y->is_optional || (y->renamed_from && kp_entity_attr(was, y->renamed_from))) continue;
                at += (size_t)snprintf(what + at, sizeof what - at, "%s%s added (%s)", at ? ", " : "", y->name,
                                       y->copy_of || y->derived ? "computed" : y->backfill ? "its backfill value" : "no backfill value");
            }
            if (!at) continue;
            step(P, "rewrite", c->name, NULL, e->count, avg_bytes(c), 1, "the %s items in %s change (%s): each is rewritten",
                 e->name, c->name, what);
            touched[i] = 1;
            if (rewritten) { rewritten[rewritten_count].c = c; rewritten[rewritten_count++].e = e; }
        }
    }
    /* layout decisions that changed: a key format, a copy, an embedding. A subject may
     * carry several decisions (a table's key and its buckets): an unchanged one is one
     * with the same subject and choice; a changed one replaces an old one of the same
     * subject that no new decision kept */
    int *kept = calloc(o->decision_count ? o->decision_count : 1, sizeof *kept);
    int *same = calloc(n->decision_count ? n->decision_count : 1, sizeof *same);
    for (size_t i = 0; kept && same && i < n->decision_count; i++)
        for (size_t j = 0; j < o->decision_count && !same[i]; j++)
            if (!kept[j] && !strcmp(n->decisions[i].subject, o->decisions[j].subject) && !strcmp(n->decisions[i].choice, o->decisions[j].choice))
                kept[j] = same[i] = 1;
    for (size_t i = 0; kept && same && i < n->decision_count; i++) {
        if (same[i]) continue;
        const kp_decision *x = &n->decisions[i], *y = NULL;
        for (size_t j = 0; j < o->decision_count && !y; j++)
            if (!kept[j] && !strcmp(x->subject, o->decisions[j].subject)) { y = &o->decisions[j]; kept[j] = 1; }
        /* a decision about an index already planned above is that index's step */
        int about_index = 0;
        for (const cJSON *st = P->steps->child; st && !about_index; st = st->next) {
            const cJSON *ix = cJSON_GetObjectItem(st, "index");
            if (cJSON_IsString(ix) && strstr(x->subject, ix->valuestring)) about_index = 1;
        }
        if (about_index) continue;
        const kp_container *c = kp_design_container(n, x->subject);
        const kp_entity *e = c && c->entity_count ? c->entities[0] : decision_entity(n->model, x->subject);
        if (!c) c = holder(n, e);
        if (!c || !kp_design_container(o, c->name)) continue;   /* part of a container created above */
        int done = 0;   /* the same items are rewritten for an attribute change already */
        for (size_t r = 0; r < rewritten_count; r++) done |= rewritten[r].c == c && (!e || rewritten[r].e == e);
        if (done) continue;
        double items = c && kp_design_container(n, x->subject) ? c->items : e ? e->count : 0;
        if (y)
            step(P, "rewrite", c->name, NULL, items, avg_bytes(c), 1, "%s: %s -> %s%s%s", x->subject, y->choice, x->choice,
                 e ? "; the items of " : "", e ? e->name : "");
        else
            step(P, "rewrite", c->name, NULL, items, avg_bytes(c), 1, "%s: %s (new)%s%s", x->subject, x->choice,
                 e ? "; the items of " : "", e ? e->name : "");
        for (size_t k = 0; k < n->container_count; k++)
            if (&n->containers[k] == c) touched[k] = 1;
    }
    free(kept);
    free(rewritten);
    free(same);
    /* containers to drop: last, once nothing reads them */
    for (size_t i = 0; i < o->container_count; i++)
        if (!kp_design_container(n, o->containers[i].name))
            step(P, "drop", o->containers[i].name, NULL, 0, 0, 1, "drop %s %s (%.0f items) last, once no reader of the old "
                 "version uses it", o->containers[i].kind, o->containers[i].name, o->containers[i].items);
    for (size_t i = 0; i < n->container_count; i++)
        if (!touched[i]) cJSON_AddItemToArray(untouched, cJSON_CreateString(n->containers[i].name));
    free(touched);
}

cJSON *kp_model_diff(const kp_model *o, const kp_model *n, const kp_diff_options *opt, int *breaking, int *changes,
                     kp_error *err)
{
    *breaking = 0;
    *changes = 0;
    cJSON *doc = cJSON_CreateObject();
    cJSON_AddNumberToObject(doc, "schema_version", KP_SCHEMA_VERSION);
    cJSON_AddStringToObject(doc, "command", "diff");
    cJSON *ov = cJSON_AddObjectToObject(doc, "old"), *nv = cJSON_AddObjectToObject(doc, "new");
    cJSON_AddStringToObject(ov, "model", o->name ? o->name : "");
    cJSON_AddStringToObject(ov, "model_hash", o->hash);
    cJSON_AddStringToObject(nv, "model", n->name ? n->name : "");
    cJSON_AddStringToObject(nv, "model_hash", n->hash);
    cJSON *model = cJSON_AddArrayToObject(doc, "model_changes");
    cJSON *breaks = cJSON_AddArrayToObject(doc, "breaking");
    model_changes(o, n, model, breaks, changes, breaking);
    cJSON *dbs = cJSON_AddArrayToObject(doc, "databases");
    for (size_t b = 0; opt->backends[b]; b++) {
        const kp_backend *be = opt->backends[b];
        kp_design_list lo = {0}, ln = {0};
        kp_propose_options po = {NULL, 0};
        if (be->propose(o, &po, &lo, err) || be->propose(n, &po, &ln, err)) {
            kp_design_list_free(&lo);
            kp_design_list_free(&ln);
            cJSON_Delete(doc);
            return NULL;
        }
        cJSON *db = cJSON_CreateObject();
        cJSON_AddStringToObject(db, "database", be->name);
        cJSON_AddStringToObject(db, "old_design", lo.items[0]->candidate);
        cJSON_AddStringToObject(db, "new_design", ln.items[0]->candidate);
        planner P = {lo.items[0], ln.items[0], opt, cJSON_AddArrayToObject(db, "steps"), changes};
        cJSON *untouched = cJSON_AddArrayToObject(db, "untouched");
        plan_database(&P, untouched);
        double items = 0, units = 0, seconds = 0, usd = 0;
        for (const cJSON *s = P.steps->child; s; s = s->next) {
            const cJSON *v;
            if ((v = cJSON_GetObjectItem(s, "items"))) items += v->valuedouble;
            if ((v = cJSON_GetObjectItem(s, "write_units"))) units += v->valuedouble;
            if ((v = cJSON_GetObjectItem(s, "seconds"))) seconds += v->valuedouble;
            if ((v = cJSON_GetObjectItem(s, "usd"))) usd += v->valuedouble;
        }
        cJSON *t = cJSON_AddObjectToObject(db, "totals");
        cJSON_AddNumberToObject(t, "steps", cJSON_GetArraySize(P.steps));
        cJSON_AddNumberToObject(t, "items", items);
        cJSON_AddNumberToObject(t, "write_units", units);
        cJSON_AddNumberToObject(t, "seconds", seconds);
        const kp_pricing *pr = be->limits ? be->limits->pricing : NULL;
        if (pr && pr->region_count) cJSON_AddNumberToObject(t, "usd", round(usd * 100) / 100);
        cJSON_AddItemToArray(dbs, db);
        kp_design_list_free(&lo);
        kp_design_list_free(&ln);
    }
    cJSON_AddNumberToObject(doc, "changes", *changes);
    cJSON_AddBoolToObject(doc, "is_breaking", *breaking > 0);
    return doc;
}

/* ---- text ---------------------------------------------------------------------------------- */



static void duration(char *buf, size_t size, double s)
{
    if (s < 120) snprintf(buf, size, "%.0f s", s);
    else if (s < 7200) snprintf(buf, size, "%.0f min", s / 60);
    else snprintf(buf, size, "%.1f h", s / 3600);
}

void kp_model_diff_print(FILE *f, const cJSON *doc, int md)
{
    const cJSON *ov = cJSON_GetObjectItem(doc, "old"), *nv = cJSON_GetObjectItem(doc, "new");
    fprintf(f, md ? "## keyplan diff: %s (%s) -> %s (%s)\n\n" : "diff %s (%s) -> %s (%s)\n\n", kp_json_str(ov, "model"), kp_json_str(ov, "model_hash"),
            kp_json_str(nv, "model"), kp_json_str(nv, "model_hash"));
    if (kp_json_num(doc, "changes") == 0) { fprintf(f, "no change: the models and every design are the same\n"); return; }
    const cJSON *breaking = cJSON_GetObjectItem(doc, "breaking");
    fprintf(f, md ? "### Breaking for readers of the old version (%d)\n\n" : "breaking for readers of the old version (%d)\n",
            cJSON_GetArraySize(breaking));
    for (const cJSON *b = breaking->child; b; b = b->next) fprintf(f, md ? "- **%s**: %s\n" : "  ! %s: %s\n", kp_json_str(b, "subject"), kp_json_str(b, "message"));
    if (!breaking->child) fprintf(f, md ? "none\n" : "  none\n");
    fprintf(f, md ? "\n### Model changes\n\n" : "\nmodel changes\n");
    for (const cJSON *c = cJSON_GetObjectItem(doc, "model_changes")->child; c; c = c->next)
        fprintf(f, md ? "- %s\n" : "  - %s\n", kp_json_str(c, "message"));
    for (const cJSON *db = cJSON_GetObjectItem(doc, "databases")->child; db; db = db->next) {
        const cJSON *t = cJSON_GetObjectItem(db, "totals");
        char d[32];
        duration(d, sizeof d, kp_json_num(t, "seconds"));
        fprintf(f, md ? "\n### %s: %s -> %s\n\n" : "\n%s: design %s -> %s\n", kp_json_str(db, "database"), kp_json_str(db, "old_design"), kp_json_str(db, "new_design"));
        int i = 1;
        for (const cJSON *s = cJSON_GetObjectItem(db, "steps")->child; s; s = s->next, i++) {
            fprintf(f, md ? "%d. **%s** `%s`%s%s%s: %s" : "  %d. %-13s %s%s%s%s: %s", i, kp_json_str(s, "action"), kp_json_str(s, "container"),
                    cJSON_GetObjectItem(s, "index") ? " " : "", md && cJSON_GetObjectItem(s, "index") ? "`" : "", kp_json_str(s, "index"),
                    kp_json_str(s, "message"));
            if (cJSON_GetObjectItem(s, "items")) {
                char sd[32];
                duration(sd, sizeof sd, kp_json_num(s, "seconds"));
                fprintf(f, " (%.0f items, %.0f write units, %s", kp_json_num(s, "items"), kp_json_num(s, "write_units"), sd);
                if (cJSON_GetObjectItem(s, "usd")) fprintf(f, ", $%.2f", kp_json_num(s, "usd"));
                fputs(")", f);
            }
            fputs(cJSON_IsTrue(cJSON_GetObjectItem(s, "online")) ? "\n" : " [not online]\n", f);
        }
        if (i == 1) fprintf(f, md ? "no step: the design is the same\n" : "  no step: the design is the same\n");
        else {
            fprintf(f, md ? "\nIn all: %.0f items, %.0f write units, about %s" : "  in all: %.0f items, %.0f write units, about %s",
                    kp_json_num(t, "items"), kp_json_num(t, "write_units"), d);
            if (cJSON_GetObjectItem(t, "usd")) fprintf(f, ", about $%.2f on demand", kp_json_num(t, "usd"));
            fputs("\n", f);
        }
        const cJSON *u = cJSON_GetObjectItem(db, "untouched");
        if (u && u->child) {
            fprintf(f, md ? "\nUntouched: " : "  untouched:");
            for (const cJSON *x = u->child; x; x = x->next)
                fprintf(f, md ? "%s`%s`" : "%s %s", x != u->child ? "," : "", x->valuestring);
            fputs("\n", f);
        }
    }
}
