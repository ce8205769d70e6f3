/*
 * model_render.c — the loaded model as JSON (`check --format json`) and as a readable
 * summary (`check`).
 *
 * Invariant: both renderings are built from the resolved model only (never from the
 * source text), so what they show is what every other part of keyplan reads.
 */
#include "core/model.h"

#include <math.h>
#include <stdarg.h>
#include <string.h>

#include "core/value.h"

/* ---- shapes as one line -------------------------------------------------------------- */

typedef struct sbuf { char *p; size_t size, len; } sbuf;

static void put(sbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void put(sbuf *b, const char *fmt, ...)
{
    if (b->len + 1 >= b->size) return;
    va_list ap;
    va_start(ap, fmt);
    int n = kp_vsnprintf(b->p + b->len, b->size - b->len, fmt, ap);
    va_end(ap);
    if (n > 0) b->len = b->len + (size_t)n < b->size ? b->len + (size_t)n : b->size - 1;
}

static void put_path(sbuf *b, kp_rel **hops, size_t n)
{
    for (size_t i = 0; i < n; i++) put(b, "%s%s", i ? "." : "", hops[i]->name ? hops[i]->name : "?");
}

static void describe(sbuf *b, const kp_shape *s);

static void describe_members(sbuf *b, const kp_shape *s)
{
    put(b, "{ ");
    for (size_t i = 0; i < s->member_count; i++) {
        const kp_shape *m = s->members[i];
        put(b, "%s", i ? ", " : "");
        if (m->kind == KP_SHAPE_ATTR && m->path_len == 0 && strcmp(m->name, m->attr->name) == 0) {
            put(b, "%s", m->name);
            continue;
        }
        put(b, "%s: ", m->name);
        describe(b, m);
    }
    put(b, " }");
}

static void describe(sbuf *b, const kp_shape *s)
{
    switch (s->kind) {
    case KP_SHAPE_ATTR:
        put_path(b, s->path, s->path_len);
        put(b, "%s%s", s->path_len ? "." : "", s->attr->name);
        break;
    case KP_SHAPE_PARAM: put(b, ":%s", s->param->name); break;
    case KP_SHAPE_TOKEN: put(b, "$token"); break;
    case KP_SHAPE_COUNT:
        put(b, "count(");
        put_path(b, s->hops, s->hop_count);
        put(b, "%s)", s->where_count ? " where ..." : "");
        break;
    case KP_SHAPE_OBJECT: describe_members(b, s); break;
    case KP_SHAPE_ONE:
        put(b, "one ");
        put_path(b, s->hops, s->hop_count);
        put(b, " ");
        describe_members(b, s);
        break;
    case KP_SHAPE_EACH:
        if (s->is_root_set) put(b, "each %s", s->entity->name);
        else { put(b, "each "); put_path(b, s->hops, s->hop_count); }
        if (s->where_count) put(b, " where %zu condition%s", s->where_count, s->where_count == 1 ? "" : "s");
        if (s->declared_order_count) {
            put(b, " by");
            for (size_t i = 0; i < s->declared_order_count; i++)
                put(b, "%s %s %s", i ? "," : "", s->order[i].attr->name, s->order[i].is_desc ? "desc" : "asc");
        }
        if (s->limit_param) put(b, " limit :%s", s->limit_param->name);
        else if (s->limit) put(b, " limit %lld", (long long)s->limit);
        if (s->page == KP_PAGE_TOKEN) put(b, " paged%s%s", s->token ? " -> " : "", s->token ? s->token->name : "");
        if (s->page == KP_PAGE_OFFSET) put(b, " paged by offset :%s", s->offset_param->name);
        put(b, " ");
        if (s->value) { put(b, "["); describe(b, s->value); put(b, "]"); }
        else { put(b, "["); describe_members(b, s); put(b, "]"); }
        break;
    }
}

void kp_shape_describe(const kp_shape *shape, char *buf, size_t size)
{
    sbuf b = {buf, size, 0};
    buf[0] = '\0';
    describe(&b, shape);
}

/* ---- outline: the response as the JSON it returns, with types in place of values ---- */

static void outline(sbuf *b, const kp_shape *s, int depth);

static void indent(sbuf *b, int depth)
{
    /* what put(b, "\n%*s", depth * 2, "") writes, cut the same way */
    for (int i = 0; i <= depth * 2 && b->len + 1 < b->size; i++) b->p[b->len++] = i ? ' ' : '\n';
    if (b->size) b->p[b->len < b->size ? b->len : b->size - 1] = '\0';
}

static void outline_members(sbuf *b, const kp_shape *s, int depth)
{
    put(b, "{");
    for (size_t i = 0; i < s->member_count; i++) {
        indent(b, depth + 1);
        put(b, "\"%s\": ", s->members[i]->name);
        outline(b, s->members[i], depth + 1);
        if (i + 1 < s->member_count) put(b, ",");
    }
    indent(b, depth);
    put(b, "}");
}

static void outline(sbuf *b, const kp_shape *s, int depth)
{
    switch (s->kind) {
    case KP_SHAPE_ATTR:
        put(b, "%s%s", kp_type_name(s->attr->type.kind), s->attr->is_optional || s->path_len ? " | null" : "");
        break;
    case KP_SHAPE_PARAM: put(b, "%s (:%s)", s->param->type ? kp_type_name(s->param->type->kind) : "value", s->param->name); break;
    case KP_SHAPE_TOKEN: put(b, "token | null"); break;
    case KP_SHAPE_COUNT: put(b, "int (count of "); put_path(b, s->hops, s->hop_count); put(b, ")"); break;
    case KP_SHAPE_OBJECT: outline_members(b, s, depth); break;
    case KP_SHAPE_ONE: outline_members(b, s, depth); put(b, " | null"); break;
    case KP_SHAPE_EACH:
        put(b, "[");
        if (s->limit_param) put(b, "  // up to :%s (default %lld)", s->limit_param->name, (long long)s->limit);
        else if (s->limit) put(b, "  // up to %lld", (long long)s->limit);
        if (s->declared_order_count) {
            put(b, "%s by", s->limit || s->limit_param ? "," : "  //");
            for (size_t i = 0; i < s->declared_order_count; i++)
                put(b, "%s %s %s", i ? "," : "", s->order[i].attr->name, s->order[i].is_desc ? "desc" : "asc");
        }
        indent(b, depth + 1);
        if (s->value) outline(b, s->value, depth + 1);
        else outline_members(b, s, depth + 1);
        put(b, ", ...");
        indent(b, depth);
        put(b, "]");
        break;
    }
}

void kp_shape_outline(const kp_shape *shape, char *buf, size_t size)
{
    sbuf b = {buf, size, 0};
    buf[0] = '\0';
    outline(&b, shape, 0);
}

/* ---- summary ------------------------------------------------------------------------- */

static void format_count(double v, char *out, size_t size)
{
    if (v != floor(v) && v < 1000) { snprintf(out, size, "%.3g", v); return; }
    char digits[64];
    snprintf(digits, sizeof digits, "%.0f", v);
    size_t n = strlen(digits), o = 0;
    for (size_t i = 0; i < n && o + 2 < size; i++) {
        if (i && (n - i) % 3 == 0 && digits[i - 1] != '-') out[o++] = ',';
        out[o++] = digits[i];
    }
    out[o] = '\0';
}

const char *kp_cardinality_name(kp_cardinality c)
{
    return c == KP_CARD_ONE_ONE ? "1:1" : c == KP_CARD_ONE_MANY ? "1:N" : "N:M";
}

static void print_conditions(FILE *out, const kp_cond *conds, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        const kp_cond *c = &conds[i];
        fprintf(out, "%s", i ? " and " : "");
        for (size_t h = 0; h < c->path_len; h++) fprintf(out, "%s.", c->path[h]->name);
        fprintf(out, "%s", c->attr->name);
        /* a condition on a copy: also one written through the copy's hops (conditions_on_copies) */
        const kp_copy *cp = c->path_len ? NULL : c->attr->copy_of;
        if (cp) {
            fprintf(out, " (a copy of ");
            for (size_t h = 0; h < cp->path_len; h++) fprintf(out, "%s.", cp->path[h]->name);
            fprintf(out, "%s)", cp->source->name);
        }
        fprintf(out, " %s ", kp_op_name(c->op));
        const kp_operand *ops[2] = {&c->value, &c->upper};
        for (int k = 0; k < (c->op == KP_OP_BETWEEN ? 2 : 1); k++) {
            if (k) fprintf(out, " and ");
            if (ops[k]->param) fprintf(out, ":%s%s", ops[k]->param->name, ops[k]->param->is_optional ? "?" : "");
            else {
                char *text = cJSON_PrintUnformatted(ops[k]->literal);
                fprintf(out, "%s", text ? text : "?");
                cJSON_free(text);
            }
        }
    }
}

void kp_model_print_summary(FILE *out, const kp_model *m)
{
    char a[64], b[64];
    fprintf(out, "model %s (%s)%s%s\n", m->name, m->file, m->scale != 1 ? ", scaled x" : "", "");
    if (m->scale != 1) fprintf(out, "  scale %g\n", m->scale);
    fprintf(out, "\nentities (%zu)\n", m->entity_count);
    size_t width = 0;
    for (size_t i = 0; i < m->entity_count; i++)
        if (strlen(m->entities[i]->name) > width) width = strlen(m->entities[i]->name);
    for (size_t i = 0; i < m->entity_count; i++) {
        const kp_entity *e = m->entities[i];
        format_count(e->count, a, sizeof a);
        fprintf(out, "  %-*s %14s records%s  key (", (int)width, e->name, a, e->is_count_given ? "" : " (derived)");
        for (size_t k = 0; k < e->key_count; k++) fprintf(out, "%s%s", k ? ", " : "", e->key[k]->name);
        size_t kept = 0;
        for (size_t k = 0; k < e->attr_count; k++) kept += e->attrs[k]->is_kept != 0;
        fprintf(out, ")  %zu attributes", e->attr_count);
        if (kept) fprintf(out, " (%zu of them kept by keyplan: advise says why)", kept);
        fputc('\n', out);
    }
    fprintf(out, "\nrelations (%zu)\n", m->relation_count);
    for (size_t i = 0; i < m->relation_count; i++) {
        const kp_relation *r = m->relations[i];
        format_count(r->fanout.avg, a, sizeof a);
        format_count(r->fanout.max, b, sizeof b);
        fprintf(out, "  %s.%s -> %s  %s", r->from->name, r->name, r->to->name, kp_cardinality_name(r->cardinality));
        if (r->cardinality != KP_CARD_ONE_ONE)
            fprintf(out, "  fan-out avg %s, max %s%s", a, b, r->fanout.is_unbounded ? " (unbounded)" : "");
        if (r->has_skew) fprintf(out, ", skew %g", r->skew);
        if (r->link == KP_LINK_THROUGH) fprintf(out, "  through %s", r->through->name);
        if (r->link == KP_LINK_ARRAY) fprintf(out, "  held in %s.%s", r->from->name, r->array_attr->name);
        if (r->inverse_name) fprintf(out, "  inverse %s.%s", r->to->name, r->inverse_name);
        fprintf(out, "\n");
    }
    fprintf(out, "\naccess patterns (%zu)\n", m->pattern_count);
    char shape[2048];
    for (size_t i = 0; i < m->pattern_count; i++) {
        const kp_pattern *p = m->patterns[i];
        fprintf(out, "  %s  %g rps  root %s (%s)", p->name, kp_pattern_rps(p, m->default_mix), p->root->name,
                p->is_root_set ? "a set" : "one record");
        if (p->where_count) { fprintf(out, " where "); print_conditions(out, p->where, p->where_count); }
        fprintf(out, "\n");
        if (p->param_count) {
            fprintf(out, "    params:");
            for (size_t k = 0; k < p->param_count; k++)
                fprintf(out, " :%s %s%s", p->params[k]->name, kp_type_name(p->params[k]->type->kind),
                        p->params[k]->is_optional ? " (optional)" : "");
            fprintf(out, "\n");
        }
        kp_shape_describe(p->returns, shape, sizeof shape);
        fprintf(out, "    returns %s\n", shape);
    }
    if (m->write_count) {
        fprintf(out, "\nwrites (%zu)\n", m->write_count);
        static const char *const ops[] = {"insert", "update", "upsert", "delete"};
        for (size_t i = 0; i < m->write_count; i++) {
            const kp_write *w = m->writes[i];
            if (w->schedule_every_s > 0) {
                format_count(w->schedule_rows, a, sizeof a);
                fprintf(out, "  %s  scheduled: %s rows every %gs", w->name, a, w->schedule_every_s);
            } else {
                fprintf(out, "  %s  %g rps", w->name, kp_write_rps(w, m->default_mix));
            }
            fprintf(out, "%s ", w->is_atomic ? "  atomic:" : " ");
            for (size_t s = 0; s < w->step_count; s++)
                fprintf(out, "%s%s %s%s", s ? "; " : "", ops[w->steps[s].op], w->steps[s].entity->name,
                        w->steps[s].for_each ? " for each" : "");
            fprintf(out, "\n");
        }
    }
    if (m->key_skew > 0 || m->mix_count || m->group_count) {
        fprintf(out, "\nworkload: key skew %g", m->key_skew);
        if (m->mix_count) {
            fprintf(out, "; mixes");
            for (size_t i = 0; i < m->mix_count; i++)
                fprintf(out, "%s %s%s", i ? "," : "", m->mixes[i]->name, m->mixes[i] == m->default_mix ? " (default)" : "");
        }
        if (m->group_count) fprintf(out, "; %zu screen group%s", m->group_count, m->group_count == 1 ? "" : "s");
        fprintf(out, "\n");
    }
    if (m->hint_count) {
        fprintf(out, "\nhints (%zu)\n", m->hint_count);
        for (size_t i = 0; i < m->hint_count; i++)
            fprintf(out, "  %s %s %s\n", m->hints[i].database, m->hints[i].kind, m->hints[i].target);
    }
}

/* ---- JSON ----------------------------------------------------------------------------- */

static cJSON *type_json(const kp_type *t)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "type", kp_type_name(t->kind));
    if (t->kind == KP_T_ENUM) {
        cJSON *values = cJSON_AddArrayToObject(o, "values");
        for (size_t i = 0; i < t->enum_count; i++) cJSON_AddItemToArray(values, cJSON_CreateString(t->enum_values[i]));
    }
    if (t->kind == KP_T_OBJECT) {
        cJSON *fields = cJSON_AddObjectToObject(o, "fields");
        for (size_t i = 0; i < t->field_count; i++) {
            cJSON *f = type_json(&t->fields[i]->type);
            if (t->fields[i]->is_optional) cJSON_AddBoolToObject(f, "optional", 1);
            cJSON_AddItemToObject(fields, t->fields[i]->name, f);
        }
    }
    if (t->kind == KP_T_ARRAY) cJSON_AddItemToObject(o, "items", type_json(t->item));
    if (t->kind == KP_T_MAP) {
        cJSON_AddStringToObject(o, "key", kp_type_name(t->map_key));
        cJSON_AddItemToObject(o, "value", type_json(t->item));
    }
    if (t->avg_items > 0) cJSON_AddNumberToObject(o, "avg_items", t->avg_items);
    if (t->max_items > 0) cJSON_AddNumberToObject(o, "max_items", t->max_items);
    return o;
}

static cJSON *path_json(kp_rel **hops, size_t n, const kp_attr *attr)
{
    char buf[512] = "";
    sbuf b = {buf, sizeof buf, 0};
    put_path(&b, hops, n);
    if (attr) put(&b, "%s%s", n ? "." : "", attr->name);
    return cJSON_CreateString(buf);
}

static cJSON *operand_json(const kp_operand *o)
{
    if (o->param) {
        char buf[200];
        snprintf(buf, sizeof buf, ":%s", o->param->name);
        return cJSON_CreateString(buf);
    }
    return cJSON_Duplicate(o->literal, 1);
}

static cJSON *conditions_json(const kp_cond *conds, size_t n)
{
    cJSON *arr = cJSON_CreateArray();
    for (size_t i = 0; i < n; i++) {
        cJSON *c = cJSON_CreateObject();
        cJSON_AddItemToObject(c, "attribute", path_json(conds[i].path, conds[i].path_len, conds[i].attr));
        cJSON_AddStringToObject(c, "op", kp_op_name(conds[i].op));
        if (conds[i].op == KP_OP_BETWEEN) {
            cJSON *both = cJSON_AddArrayToObject(c, "value");
            cJSON_AddItemToArray(both, operand_json(&conds[i].value));
            cJSON_AddItemToArray(both, operand_json(&conds[i].upper));
        } else {
            cJSON_AddItemToObject(c, "value", operand_json(&conds[i].value));
        }
        cJSON_AddItemToArray(arr, c);
    }
    return arr;
}

static const char *const shape_kinds[] = {"object", "attribute", "param", "each", "one", "count", "token"};

static cJSON *shape_json(const kp_shape *s)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "kind", shape_kinds[s->kind]);
    if (s->name) cJSON_AddStringToObject(o, "name", s->name);
    switch (s->kind) {
    case KP_SHAPE_ATTR:
        cJSON_AddItemToObject(o, "path", path_json(s->path, s->path_len, s->attr));
        break;
    case KP_SHAPE_PARAM: cJSON_AddStringToObject(o, "param", s->param->name); break;
    case KP_SHAPE_TOKEN: break;
    default:
        if (s->kind != KP_SHAPE_OBJECT) {
            if (s->is_root_set) cJSON_AddStringToObject(o, "relation", "$root");
            else cJSON_AddItemToObject(o, "relation", path_json(s->hops, s->hop_count, NULL));
            cJSON_AddStringToObject(o, "entity", s->entity->name);
        }
        if (s->where_count) cJSON_AddItemToObject(o, "where", conditions_json(s->where, s->where_count));
        if (s->kind == KP_SHAPE_EACH) {
            cJSON *order = cJSON_AddArrayToObject(o, "order");
            for (size_t i = 0; i < s->order_count; i++) {
                cJSON *k = cJSON_CreateObject();
                cJSON_AddStringToObject(k, "attribute", s->order[i].attr->name);
                cJSON_AddStringToObject(k, "direction", s->order[i].is_desc ? "desc" : "asc");
                cJSON_AddStringToObject(k, "nulls", s->order[i].is_nulls_first ? "first" : "last");
                if (s->order[i].is_implicit) cJSON_AddBoolToObject(k, "implicit", 1);
                cJSON_AddItemToArray(order, k);
            }
            if (s->limit_param) {
                char buf[200];
                snprintf(buf, sizeof buf, ":%s", s->limit_param->name);
                cJSON_AddStringToObject(o, "limit", buf);
            } else if (s->limit) {
                cJSON_AddNumberToObject(o, "limit", (double)s->limit);
            }
            if (s->page == KP_PAGE_TOKEN) {
                cJSON *page = cJSON_AddObjectToObject(o, "page");
                cJSON_AddStringToObject(page, "kind", "token");
                if (s->token) cJSON_AddStringToObject(page, "field", s->token->name);
            } else if (s->page == KP_PAGE_OFFSET) {
                cJSON *page = cJSON_AddObjectToObject(o, "page");
                cJSON_AddStringToObject(page, "kind", "offset");
                cJSON_AddStringToObject(page, "param", s->offset_param->name);
            }
            if (s->value) cJSON_AddItemToObject(o, "value", shape_json(s->value));
        }
        if (s->expect.is_given) {
            cJSON *e = cJSON_AddObjectToObject(o, "expect");
            cJSON_AddNumberToObject(e, "avg", s->expect.avg);
            cJSON_AddNumberToObject(e, "max", s->expect.max);
        }
        if (s->member_count) {
            cJSON *members = cJSON_AddArrayToObject(o, "members");
            for (size_t i = 0; i < s->member_count; i++) cJSON_AddItemToArray(members, shape_json(s->members[i]));
        }
    }
    return o;
}

static cJSON *params_json(kp_param **params, size_t n)
{
    cJSON *arr = cJSON_CreateArray();
    static const char *const roles[] = {"value", "limit", "offset"};
    for (size_t i = 0; i < n; i++) {
        const kp_param *p = params[i];
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "name", p->name);
        cJSON_AddStringToObject(o, "type", kp_type_name(p->type->kind));
        cJSON_AddStringToObject(o, "role", roles[p->role]);
        if (p->attr && p->attr->entity) {
            char buf[300];
            snprintf(buf, sizeof buf, "%s.%s", p->attr->entity->name, p->attr->name);
            cJSON_AddStringToObject(o, "attribute", buf);
        }
        cJSON_AddBoolToObject(o, "optional", p->is_optional);
        if (p->default_value) cJSON_AddItemToObject(o, "default", cJSON_Duplicate(p->default_value, 1));
        cJSON_AddItemToArray(arr, o);
    }
    return arr;
}

cJSON *kp_model_to_json(const kp_model *m)
{
    cJSON *root = cJSON_CreateObject();
    cJSON_AddNumberToObject(root, "schema_version", KP_SCHEMA_VERSION);
    cJSON_AddStringToObject(root, "model", m->name);
    cJSON_AddStringToObject(root, "file", m->file);
    cJSON_AddStringToObject(root, "hash", m->hash);
    cJSON_AddNumberToObject(root, "scale", m->scale);
    cJSON *entities = cJSON_AddArrayToObject(root, "entities");
    for (size_t i = 0; i < m->entity_count; i++) {
        const kp_entity *e = m->entities[i];
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "name", e->name);
        cJSON *key = cJSON_AddArrayToObject(o, "key");
        for (size_t k = 0; k < e->key_count; k++) cJSON_AddItemToArray(key, cJSON_CreateString(e->key[k]->name));
        cJSON_AddNumberToObject(o, "count", e->count);
        cJSON_AddBoolToObject(o, "count_derived", !e->is_count_given);
        cJSON *attrs = cJSON_AddArrayToObject(o, "attributes");
        for (size_t k = 0; k < e->attr_count; k++) {
            const kp_attr *a = e->attrs[k];
            cJSON *ao = type_json(&a->type);
            cJSON_AddItemToObject(ao, "name", cJSON_CreateString(a->name));
            if (a->is_optional) cJSON_AddBoolToObject(ao, "optional", 1);
            if (a->presence < 1) cJSON_AddNumberToObject(ao, "presence", a->presence);
            if (a->is_unique) cJSON_AddBoolToObject(ao, "unique", 1);
            if (a->avg_size > 0) cJSON_AddNumberToObject(ao, "size", a->avg_size);
            if (a->encoding != KP_ENC_ISO)
                cJSON_AddStringToObject(ao, "encoding", a->encoding == KP_ENC_EPOCH_S ? "epoch_s" : "epoch_ms");
            if (a->copy_of) cJSON_AddItemToObject(ao, "copy_of", path_json(a->copy_of->path, a->copy_of->path_len, a->copy_of->source));
            if (a->copy_of && a->is_kept) cJSON_AddStringToObject(ao, "kept", a->kept_why);
            if (a->derived) {
                static const char *const fns[] = {"count", "sum", "min", "max"};
                cJSON *d = cJSON_AddObjectToObject(ao, "derived");
                cJSON_AddItemToObject(d, fns[a->derived->fn], path_json(a->derived->path, a->derived->path_len, a->derived->of));
                if (a->derived->where_count)
                    cJSON_AddItemToObject(d, "where", conditions_json(a->derived->where, a->derived->where_count));
                if (a->is_kept) cJSON_AddStringToObject(d, "kept", a->kept_why);
            }
            cJSON_AddItemToArray(attrs, ao);
        }
        cJSON_AddItemToArray(entities, o);
    }
    cJSON *relations = cJSON_AddArrayToObject(root, "relations");
    static const char *const links[] = {"foreign_key", "through", "array"};
    static const char *const deletes[] = {"restrict", "cascade", "detach"};
    for (size_t i = 0; i < m->relation_count; i++) {
        const kp_relation *r = m->relations[i];
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "name", r->name);
        if (r->inverse_name) cJSON_AddStringToObject(o, "inverse", r->inverse_name);
        cJSON_AddStringToObject(o, "from", r->from->name);
        cJSON_AddStringToObject(o, "to", r->to->name);
        cJSON_AddStringToObject(o, "cardinality", kp_cardinality_name(r->cardinality));
        cJSON_AddStringToObject(o, "link", links[r->link]);
        if (r->link == KP_LINK_THROUGH) cJSON_AddStringToObject(o, "through", r->through->name);
        cJSON *f = cJSON_AddObjectToObject(o, "fanout");
        cJSON_AddNumberToObject(f, "avg", r->fanout.avg);
        cJSON_AddNumberToObject(f, "max", r->fanout.max);
        cJSON_AddBoolToObject(f, "unbounded", r->fanout.is_unbounded);
        cJSON *inv = cJSON_AddObjectToObject(o, "inverse_fanout");
        cJSON_AddNumberToObject(inv, "avg", r->inverse_fanout.avg);
        cJSON_AddNumberToObject(inv, "max", r->inverse_fanout.max);
        cJSON_AddNumberToObject(o, "skew", r->has_skew ? r->skew : 0);
        cJSON_AddStringToObject(o, "on_delete", deletes[r->on_delete]);
        cJSON_AddItemToArray(relations, o);
    }
    cJSON *patterns = cJSON_AddArrayToObject(root, "access_patterns");
    for (size_t i = 0; i < m->pattern_count; i++) {
        const kp_pattern *p = m->patterns[i];
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "name", p->name);
        cJSON_AddStringToObject(o, "root", p->root->name);
        cJSON_AddBoolToObject(o, "root_is_set", p->is_root_set);
        cJSON_AddNumberToObject(o, "rps", p->rps);
        cJSON_AddNumberToObject(o, "skew", kp_pattern_skew(m, p));
        cJSON_AddItemToObject(o, "where", conditions_json(p->where, p->where_count));
        cJSON_AddItemToObject(o, "params", params_json(p->params, p->param_count));
        cJSON_AddItemToObject(o, "returns", shape_json(p->returns));
        cJSON_AddItemToArray(patterns, o);
    }
    cJSON *writes = cJSON_AddArrayToObject(root, "writes");
    static const char *const ops[] = {"insert", "update", "upsert", "delete"};
    static const char *const assigns[] = {"set", "increment", "decrement"};
    for (size_t i = 0; i < m->write_count; i++) {
        const kp_write *w = m->writes[i];
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "name", w->name);
        cJSON_AddNumberToObject(o, "rps", w->rps);
        if (w->schedule_every_s > 0) {
            cJSON *s = cJSON_AddObjectToObject(o, "schedule");
            cJSON_AddNumberToObject(s, "every_seconds", w->schedule_every_s);
            cJSON_AddNumberToObject(s, "rows", w->schedule_rows);
        }
        cJSON_AddBoolToObject(o, "atomic", w->is_atomic);
        cJSON_AddNumberToObject(o, "skew", kp_write_skew(m, w));
        cJSON_AddItemToObject(o, "params", params_json(w->params, w->param_count));
        cJSON *steps = cJSON_AddArrayToObject(o, "steps");
        for (size_t s = 0; s < w->step_count; s++) {
            const kp_write_step *st = &w->steps[s];
            cJSON *so = cJSON_CreateObject();
            cJSON_AddStringToObject(so, "entity", st->entity->name);
            cJSON_AddStringToObject(so, "op", ops[st->op]);
            if (st->where_count) cJSON_AddItemToObject(so, "where", conditions_json(st->where, st->where_count));
            if (st->condition_count) cJSON_AddItemToObject(so, "if", conditions_json(st->conditions, st->condition_count));
            if (st->is_if_absent) cJSON_AddBoolToObject(so, "if_absent", 1);
            if (st->assign_count) {
                cJSON *as = cJSON_AddArrayToObject(so, "assign");
                for (size_t k = 0; k < st->assign_count; k++) {
                    cJSON *ao = cJSON_CreateObject();
                    cJSON_AddStringToObject(ao, "attribute", st->assigns[k].attr->name);
                    cJSON_AddStringToObject(ao, "kind", assigns[st->assigns[k].kind]);
                    cJSON_AddItemToObject(ao, "value", operand_json(&st->assigns[k].value));
                    cJSON_AddItemToArray(as, ao);
                }
            }
            if (st->for_each) cJSON_AddItemToObject(so, "for_each", path_json(st->for_each, st->for_each_len, NULL));
            if (st->link) cJSON_AddStringToObject(so, "link", st->link->name);
            cJSON_AddNumberToObject(so, "rows", st->rows);
            cJSON_AddItemToArray(steps, so);
        }
        cJSON_AddItemToArray(writes, o);
    }
    cJSON *workload = cJSON_AddObjectToObject(root, "workload");
    cJSON_AddNumberToObject(workload, "key_skew", m->key_skew);
    if (m->default_mix) cJSON_AddStringToObject(workload, "default_mix", m->default_mix->name);
    cJSON *mixes = cJSON_AddArrayToObject(workload, "mixes");
    for (size_t i = 0; i < m->mix_count; i++) {
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "name", m->mixes[i]->name);
        cJSON *rates = cJSON_AddObjectToObject(o, "rates");
        for (size_t k = 0; k < m->mixes[i]->rate_count; k++) {
            const kp_rate *r = &m->mixes[i]->rates[k];
            cJSON_AddNumberToObject(rates, r->pattern ? r->pattern->name : r->write->name, r->rps);
        }
        cJSON_AddItemToArray(mixes, o);
    }
    cJSON *groups = cJSON_AddArrayToObject(workload, "groups");
    for (size_t i = 0; i < m->group_count; i++) {
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "name", m->groups[i]->name);
        cJSON *ps = cJSON_AddArrayToObject(o, "patterns");
        for (size_t k = 0; k < m->groups[i]->pattern_count; k++)
            cJSON_AddItemToArray(ps, cJSON_CreateString(m->groups[i]->patterns[k]->name));
        cJSON_AddItemToArray(groups, o);
    }
    cJSON *hints = cJSON_AddArrayToObject(root, "hints");
    for (size_t i = 0; i < m->hint_count; i++) {
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "database", m->hints[i].database);
        cJSON_AddStringToObject(o, "hint", m->hints[i].kind);
        cJSON_AddStringToObject(o, "target", m->hints[i].target);
        if (m->hints[i].number > 0) cJSON_AddNumberToObject(o, "value", m->hints[i].number);
        cJSON_AddItemToArray(hints, o);
    }
    return root;
}
