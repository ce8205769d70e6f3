/*
 * model_patterns.c — parsing access patterns (conditions, parameters, response
 * shapes), writes, the workload and hints.
 *
 * Invariant: a shape node only ever reaches attributes through relations declared in
 * the model, and every parameter a pattern or write uses ends up, typed, in its params
 * table; what the format leaves to the reader (implicit key order, a root being one
 * record or a set) is decided here once, so consumers never re-derive it.
 */
#include "core/model_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/value.h"

static const kp_type int_type = {.kind = KP_T_INT};

/* ---- parameters ---------------------------------------------------------------------- */

kp_param *kp_scope_param(kp_parser *P, kp_param_scope *scope, const cJSON *node, const char *name, kp_param_role role,
                         const kp_type *type, kp_attr *attr)
{
    if (kp_check_name(P, node, name, 0, "parameter")) return NULL;
    kp_param *p = NULL;
    for (size_t i = 0; i < scope->count; i++)
        if (strcmp(scope->items[i]->name, name) == 0) p = scope->items[i];
    if (!p) {
        p = ALLOC(P, kp_param);
        p->name = kp_pstrdup(P, name);
        p->role = role;
        p->pos = kp_json_pos(P->doc, node);
        kp_param **slot = kp_arena_push(&P->m->arena, (void **)&scope->items, &scope->count, &scope->cap, sizeof *slot);
        *slot = p;
    }
    if (p->role != role && (p->role != KP_PARAM_VALUE || p->type)) {
        if (!(p->role == KP_PARAM_VALUE && !p->type)) {
            kp_perr(P, node, 0, "parameter :%s is used both as a value and as a %s; use two parameters", name,
                    role == KP_PARAM_LIMIT ? "limit" : role == KP_PARAM_OFFSET ? "page offset" : "value");
            return NULL;
        }
    }
    if (role != KP_PARAM_VALUE) p->role = role;
    if (type) {
        if (p->type && p->type->kind != type->kind) {
            kp_perr(P, node, 0, "parameter :%s is compared with %s here but with %s elsewhere; use two parameters",
                    name, kp_type_with_article(type->kind), kp_type_with_article(p->type->kind));
            return NULL;
        }
        if (!p->type) {
            p->type = type;
            p->attr = attr;
        }
    }
    return p;
}

static const char *const param_keys[] = {"type", "optional", "default", "min", "max", "description", NULL};

int kp_scope_finish(kp_parser *P, kp_param_scope *scope, kp_param ***out, size_t *count, const char *owner)
{
    const cJSON *declared = scope->declared;
    if (declared) {
        for (const cJSON *d = declared->child; d; d = d->next) {
            char what[200];
            kp_snprintf(what, sizeof what, "parameter '%s'", d->string);
            if (kp_expect_object(P, d, what) || kp_check_keys(P, d, param_keys, what)) return -1;
            kp_param *p = NULL;
            for (size_t i = 0; i < scope->count; i++)
                if (strcmp(scope->items[i]->name, d->string) == 0) p = scope->items[i];
            if (!p) {
                const char **names = ALLOC_N(P, const char *, scope->count + 1);
                for (size_t i = 0; i < scope->count; i++) names[i] = scope->items[i]->name;
                const char *guess = kp_suggest(d->string, names);
                if (guess)
                    return kp_perr(P, d, 1, "parameter '%s' is declared but %s never uses :%s (did you mean '%s'?)", d->string,
                                   owner, d->string, guess);
                return kp_perr(P, d, 1, "parameter '%s' is declared but %s never uses :%s; remove it or use it", d->string,
                               owner, d->string);
            }
            const cJSON *t = kp_json_get(d, "type");
            if (t) {
                if (kp_expect_string(P, t, "\"type\"")) return -1;
                int k = kp_type_from_name(t->valuestring);
                if (k < 0) return kp_perr(P, t, 0, "unknown type \"%s\"", t->valuestring);
                if (p->type && p->type->kind != (kp_type_kind)k)
                    return kp_perr(P, t, 0, "parameter :%s is declared %s but is used as %s", p->name,
                                   kp_type_with_article((kp_type_kind)k), kp_type_with_article(p->type->kind));
                if (!p->type) {
                    if (k == KP_T_ENUM || k == KP_T_OBJECT || k == KP_T_ARRAY || k == KP_T_MAP)
                        return kp_perr(P, t, 0, "an unbound parameter can only have a scalar type, not %s", t->valuestring);
                    kp_type *nt = ALLOC(P, kp_type);
                    nt->kind = (kp_type_kind)k;
                    p->type = nt;
                }
            }
            if (kp_get_bool(P, d, "optional", &p->is_optional)) return -1;
            const cJSON *desc = kp_json_get(d, "description");
            if (desc) {
                if (kp_expect_string(P, desc, "\"description\"")) return -1;
                p->description = kp_pstrdup(P, desc->valuestring);
            }
            p->pos = kp_json_key_pos(P->doc, d);
            for (int which = 0; which < 3; which++) {
                static const char *const names[] = {"default", "min", "max"};
                const cJSON *v = kp_json_get(d, names[which]);
                if (!v) continue;
                if (!p->type)
                    return kp_perr(P, v, 1, "parameter :%s has a %s but no type; give \"type\"", p->name, names[which]);
                if (which > 0 && !kp_type_is_numeric(p->type->kind))
                    return kp_perr(P, v, 1, "\"%s\" applies to numeric parameters; :%s is %s", names[which], p->name,
                                   kp_type_with_article(p->type->kind));
                char why[256];
                const cJSON *bad;
                if (kp_value_check(p->type, v, P->doc, &bad, why, sizeof why))
                    return kp_perr(P, v, 0, "\"%s\" of parameter :%s: %s", names[which], p->name, why);
                if (which == 0) p->default_value = v;
                else if (which == 1) p->min = v;
                else p->max = v;
            }
            if (p->min && p->max && p->min->valuedouble > p->max->valuedouble)
                return kp_perr(P, p->max, 0, "\"max\" of parameter :%s is smaller than its \"min\"", p->name);
            if (p->default_value && p->min && p->default_value->valuedouble < p->min->valuedouble)
                return kp_perr(P, p->default_value, 0, "the default of :%s is below its \"min\"", p->name);
            if (p->default_value && p->max && p->default_value->valuedouble > p->max->valuedouble)
                return kp_perr(P, p->default_value, 0, "the default of :%s is above its \"max\"", p->name);
        }
    }
    for (size_t i = 0; i < scope->count; i++) {
        kp_param *p = scope->items[i];
        if (!p->type) {
            kp_pos pos = p->pos;
            return kp_error_set(P->err, KP_ERR_MODEL, kp_json_file(P->doc), pos.line, pos.column,
                                "parameter :%s of %s is only echoed, so its type is unknown; compare it with an attribute "
                                "or declare its \"type\" under \"params\"", p->name, owner);
        }
    }
    *out = scope->items;
    *count = scope->count;
    return 0;
}

int kp_parse_operand(kp_parser *P, const cJSON *node, const kp_attr *attr, const kp_type *type, kp_param_scope *scope,
                     kp_operand *out)
{
    if (cJSON_IsString(node) && node->valuestring[0] == ':') {
        if (!scope)
            return kp_perr(P, node, 0, "parameters cannot be used here (%s); write a literal value", node->valuestring);
        out->param = kp_scope_param(P, scope, node, node->valuestring + 1, KP_PARAM_VALUE, type, (kp_attr *)attr);
        return out->param ? 0 : -1;
    }
    const cJSON *literal = node;
    if (cJSON_IsObject(node)) {
        const cJSON *l = kp_json_get(node, "literal");
        if (!l || cJSON_GetArraySize(node) != 1)
            return kp_perr(P, node, 0, "an operand is a parameter \":name\", a literal value, or {\"literal\": value}");
        literal = l;
    }
    if (cJSON_IsNull(literal))
        return kp_perr(P, literal, 0, "null cannot be compared; make the attribute optional and use a parameter");
    char why[256];
    const cJSON *bad;
    if (kp_value_check(type, literal, P->doc, &bad, why, sizeof why))
        return kp_perr(P, bad, 0, "literal for '%s': %s", attr ? attr->name : "the value", why);
    out->literal = literal;
    return 0;
}

/* ---- conditions ------------------------------------------------------------------------ */

static const char *const op_names[] = {"=", "<", "<=", ">", ">=", "between", "begins_with", NULL};

static int add_cond(kp_parser *P, kp_cond **list, size_t *count, size_t *cap, kp_cond **out)
{
    *out = kp_arena_push(&P->m->arena, (void **)list, count, cap, sizeof **list);
    return *out ? 0 : kp_error_set(P->err, KP_ERR_NOMEM, NULL, 0, 0, "out of memory");
}

/* A read's condition on another entity's value (author.surname) that ctx holds a copy of
 * (copy_of over the same hops: Message.authorName) is a condition on that copy: the model
 * keeps them equal, so every database keys or filters on the record's own attribute and
 * none follows the hops to test it. The oracle reads the copy too (the neutral data
 * computes it from its source). */
static void conditions_on_copies(const kp_entity *ctx, kp_cond *list, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        kp_cond *c = &list[i];
        kp_attr *copy = c->path_len ? kp_copy_on(ctx, c->path, c->path_len, c->attr) : NULL;
        if (!copy) continue;
        c->attr = copy;
        c->path = NULL;
        c->path_len = 0;
    }
}

int kp_parse_conditions(kp_parser *P, const cJSON *node, kp_entity *ctx, kp_param_scope *scope, const char *what,
                        kp_cond **out, size_t *count)
{
    if (kp_expect_object(P, node, what)) return -1;
    kp_cond *list = NULL;
    size_t n = 0, cap = 0;
    for (const cJSON *c = node->child; c; c = c->next) {
        kp_rel **hops;
        size_t hop_count;
        kp_attr *attr;
        if (kp_resolve_path(P, c, ctx, c->string, 1, 1, &hops, &hop_count, &attr, NULL)) {
            /* re-point the error at the key */
            kp_pos p = kp_json_key_pos(P->doc, c);
            P->err->line = p.line;
            P->err->column = p.column;
            return -1;
        }
        if (!kp_type_is_orderable(attr->type.kind) && attr->type.kind != KP_T_BOOL && attr->type.kind != KP_T_BLOB)
            return kp_perr(P, c, 1, "'%s' is %s; conditions apply to scalar attributes", c->string,
                           kp_type_with_article(attr->type.kind));
        kp_pos pos = kp_json_key_pos(P->doc, c);
        if (cJSON_IsString(c) && c->valuestring[0] == ':') {
            /* "attr": ":param" is short for {"=": ":param"} */
            kp_cond *cond;
            if (add_cond(P, &list, &n, &cap, &cond)) return -1;
            cond->path = hops;
            cond->path_len = hop_count;
            cond->attr = attr;
            cond->op = KP_OP_EQ;
            cond->pos = pos;
            if (kp_parse_operand(P, c, attr, &attr->type, scope, &cond->value)) return -1;
            continue;
        }
        if (cJSON_IsString(c) && strcmp(c->valuestring, "=") == 0) {
            kp_cond *cond;
            if (add_cond(P, &list, &n, &cap, &cond)) return -1;
            cond->path = hops;
            cond->path_len = hop_count;
            cond->attr = attr;
            cond->op = KP_OP_EQ;
            cond->pos = pos;
            if (!scope)
                return kp_perr(P, c, 0, "parameters cannot be used here; write {\"=\": <literal>} for '%s'", c->string);
            cond->value.param = kp_scope_param(P, scope, c, attr->name, KP_PARAM_VALUE, &attr->type, attr);
            if (!cond->value.param) return -1;
            continue;
        }
        if (cJSON_IsString(c))
            return kp_perr(P, c, 0, "condition on '%s' must be \"=\" or an object such as {\">=\": \":since\"}, not \"%s\"",
                           c->string, c->valuestring);
        if (!cJSON_IsObject(c) || !c->child)
            return kp_perr(P, c, 0, "condition on '%s' must be \"=\" or an object of operators such as {\"=\": \":id\"}",
                           c->string);
        for (const cJSON *o = c->child; o; o = o->next) {
            int op = -1;
            for (int i = 0; op_names[i]; i++)
                if (strcmp(op_names[i], o->string) == 0) op = i;
            if (op < 0) {
                const char *guess = kp_suggest(o->string, op_names);
                if (guess) return kp_perr(P, o, 1, "unknown operator \"%s\" (did you mean \"%s\"?)", o->string, guess);
                return kp_perr(P, o, 1, "unknown operator \"%s\"; use =, <, <=, >, >=, between or begins_with", o->string);
            }
            if (op != KP_OP_EQ && !kp_type_is_orderable(attr->type.kind))
                return kp_perr(P, o, 1, "'%s' is %s; only \"=\" applies to it", c->string,
                               kp_type_with_article(attr->type.kind));
            if (op == KP_OP_BEGINS_WITH && attr->type.kind != KP_T_STRING)
                return kp_perr(P, o, 1, "begins_with applies to string attributes; '%s' is %s", c->string,
                               kp_type_with_article(attr->type.kind));
            kp_cond *cond;
            if (add_cond(P, &list, &n, &cap, &cond)) return -1;
            cond->path = hops;
            cond->path_len = hop_count;
            cond->attr = attr;
            cond->op = (kp_op)op;
            cond->pos = kp_json_key_pos(P->doc, o);
            if (op == KP_OP_BETWEEN) {
                if (!cJSON_IsArray(o) || cJSON_GetArraySize(o) != 2)
                    return kp_perr(P, o, 0, "between takes an array of two operands: [\":from\", \":to\"]");
                if (kp_parse_operand(P, o->child, attr, &attr->type, scope, &cond->value) ||
                    kp_parse_operand(P, o->child->next, attr, &attr->type, scope, &cond->upper))
                    return -1;
            } else if (kp_parse_operand(P, o, attr, &attr->type, scope, &cond->value)) {
                return -1;
            }
        }
    }
    *out = list;
    *count = n;
    return 0;
}

/* Does the condition list pin exactly one record of e (whole key, or a unique
 * attribute, by = on its own attributes with a required parameter or a literal)? */
static int pins_one(const kp_entity *e, const kp_cond *conds, size_t n)
{
    size_t covered = 0;
    for (size_t k = 0; k < e->key_count; k++) {
        for (size_t i = 0; i < n; i++)
            if (conds[i].op == KP_OP_EQ && conds[i].path_len == 0 && conds[i].attr == e->key[k] &&
                !(conds[i].value.param && conds[i].value.param->is_optional)) {
                covered++;
                break;
            }
    }
    if (covered == e->key_count) return 1;
    for (size_t i = 0; i < n; i++)
        if (conds[i].op == KP_OP_EQ && conds[i].path_len == 0 && conds[i].attr->is_unique &&
            !(conds[i].value.param && conds[i].value.param->is_optional))
            return 1;
    return 0;
}

/* ---- shapes ------------------------------------------------------------------------------ */

typedef struct shape_ctx {
    kp_pattern *pattern;
    kp_param_scope *scope;
    int inside_each;      /* nested in an $each (paging not allowed below) */
} shape_ctx;

static const char *const shape_keywords[] = {"$each", "$one", "$count", "$where", "$order", "$limit", "$page",
                                             "$expect", "$value", NULL};

static int parse_shape(kp_parser *P, shape_ctx *S, const cJSON *node, kp_entity *ctx, const char *name, int depth,
                       kp_shape **out);

static int parse_leaf(kp_parser *P, shape_ctx *S, const cJSON *node, kp_entity *ctx, kp_shape *s)
{
    const char *text = node->valuestring;
    if (strcmp(text, "$token") == 0) {
        s->kind = KP_SHAPE_TOKEN;
        return 0;
    }
    if (text[0] == ':') {
        s->kind = KP_SHAPE_PARAM;
        s->param = kp_scope_param(P, S->scope, node, text + 1, KP_PARAM_VALUE, NULL, NULL);
        return s->param ? 0 : -1;
    }
    if (text[0] == '$')
        return kp_perr(P, node, 0, "unknown leaf \"%s\"; a leaf is \"Entity.attribute\", \"relation.attribute\", "
                                   "\":param\" or \"$token\"", text);
    if (!ctx)
        return kp_perr(P, node, 0, "\"%s\": the root is a set of %s records here (\"where\" does not pin one by its key "
                                   "or a unique attribute); pin one, or return the records inside {\"$each\": \"$root\", ...}",
                       text, S->pattern->root->name);
    const char *dot = strchr(text, '.');
    if (!dot)
        return kp_perr(P, node, 0, "leaf \"%s\" must be written %s.<attribute> (or relation.attribute)", text, ctx->name);
    s->kind = KP_SHAPE_ATTR;
    size_t first_len = (size_t)(dot - text);
    if (strlen(ctx->name) == first_len && strncmp(ctx->name, text, first_len) == 0) {
        if (strchr(dot + 1, '.'))
            return kp_perr(P, node, 0, "\"%s\": after %s. comes one attribute name; to follow a relation write "
                                       "\"relation.attribute\"", text, ctx->name);
        s->attr = kp_entity_attr(ctx, dot + 1);
        if (!s->attr) {
            kp_attr *dummy;
            return kp_resolve_path_as(P, node, ctx, dot + 1, text, 1, 1, NULL, NULL, &dummy, NULL);
        }
        return 0;
    }
    char first[256];
    kp_snprintf(first, sizeof first, "%.*s", (int)first_len, text);
    if (!kp_entity_rel(ctx, first) && kp_model_entity(P->m, first))
        return kp_perr(P, node, 0, "\"%s\": %s is not the entity in context here (%s); reach it through a relation of %s "
                                   "(\"relation.attribute\" or $one / $each)", text, first, ctx->name, ctx->name);
    return kp_resolve_path(P, node, ctx, text, 1, 1, &s->path, &s->path_len, &s->attr, NULL);
}

static int parse_order(kp_parser *P, const cJSON *node, kp_shape *s)
{
    if (kp_expect_array(P, node, "\"$order\"")) return -1;
    size_t n = (size_t)cJSON_GetArraySize(node);
    if (n == 0) return kp_perr(P, node, 0, "\"$order\" is empty; list at least one {\"attribute\": \"asc\"|\"desc\"}");
    s->order = ALLOC_N(P, kp_order_key, n + s->entity->key_count);
    for (const cJSON *o = node->child; o; o = o->next) {
        if (!cJSON_IsObject(o))
            return kp_perr(P, o, 0, "each \"$order\" entry is an object such as {\"createdAt\": \"desc\"}");
        kp_order_key *k = &s->order[s->order_count];
        const cJSON *attr_node = NULL;
        for (const cJSON *m = o->child; m; m = m->next) {
            if (strcmp(m->string, "nulls") == 0) {
                if (!cJSON_IsString(m) || (strcmp(m->valuestring, "first") && strcmp(m->valuestring, "last")))
                    return kp_perr(P, m, 0, "\"nulls\" is \"first\" or \"last\"");
                k->is_nulls_first = strcmp(m->valuestring, "first") == 0;
                continue;
            }
            if (attr_node) return kp_perr(P, m, 1, "one attribute per \"$order\" entry; add another entry for '%s'", m->string);
            attr_node = m;
        }
        if (!attr_node) return kp_perr(P, o, 0, "this \"$order\" entry names no attribute");
        k->attr = kp_entity_attr(s->entity, attr_node->string);
        if (!k->attr) {
            kp_attr *dummy;
            kp_resolve_path(P, attr_node, s->entity, attr_node->string, 1, 1, NULL, NULL, &dummy, NULL);
            kp_pos p = kp_json_key_pos(P->doc, attr_node);
            P->err->line = p.line;
            P->err->column = p.column;
            if (strchr(attr_node->string, '.'))
                kp_snprintf(P->err->message, sizeof P->err->message,
                         "\"$order\" names '%s'; order by an attribute of %s itself (copy a related value with copy_of)",
                         attr_node->string, s->entity->name);
            return -1;
        }
        if (!kp_type_is_orderable(k->attr->type.kind))
            return kp_perr(P, attr_node, 1, "cannot order by '%s', %s; order by a scalar attribute", k->attr->name,
                           kp_type_with_article(k->attr->type.kind));
        if (!cJSON_IsString(attr_node) ||
            (strcmp(attr_node->valuestring, "asc") && strcmp(attr_node->valuestring, "desc"))) {
            char given[64];
            kp_json_describe(attr_node, given, sizeof given);
            return kp_perr(P, attr_node, 0, "the order direction of '%s' must be \"asc\" or \"desc\", not %s",
                           attr_node->string, given);
        }
        for (size_t i = 0; i < s->order_count; i++)
            if (s->order[i].attr == k->attr) return kp_perr(P, attr_node, 1, "\"$order\" lists '%s' twice", k->attr->name);
        k->is_desc = strcmp(attr_node->valuestring, "desc") == 0;
        s->order_count++;
    }
    s->declared_order_count = s->order_count;
    return 0;
}

/* Appends the element key to the order so ties are always broken: in the direction
 * of the last declared order key (ascending when none is declared), which is what an
 * index sorted on (order attributes, key) returns when read in either direction. */
static void complete_order(kp_parser *P, kp_shape *s)
{
    if (!s->order) s->order = ALLOC_N(P, kp_order_key, s->entity->key_count);
    int desc = s->order_count ? s->order[s->order_count - 1].is_desc : 0;
    for (size_t k = 0; k < s->entity->key_count; k++) {
        int present = 0;
        for (size_t i = 0; i < s->order_count; i++) present |= s->order[i].attr == s->entity->key[k];
        if (present) continue;
        kp_order_key *o = &s->order[s->order_count++];
        o->attr = s->entity->key[k];
        o->is_desc = desc;
        o->is_implicit = 1;
    }
}

static int parse_page(kp_parser *P, shape_ctx *S, const cJSON *node, kp_shape *s)
{
    if (cJSON_IsString(node) && strcmp(node->valuestring, "token") == 0) {
        s->page = KP_PAGE_TOKEN;
        return 0;
    }
    if (cJSON_IsObject(node) && cJSON_GetArraySize(node) == 1) {
        const cJSON *t = kp_json_get(node, "token");
        const cJSON *o = kp_json_get(node, "offset");
        if (t) {
            if (kp_expect_string(P, t, "the token field")) return -1;
            s->page = KP_PAGE_TOKEN;
            s->token = ALLOC(P, kp_shape);
            s->token->name = kp_pstrdup(P, t->valuestring); /* resolved to the sibling member later */
            s->token->pos = kp_json_pos(P->doc, t);
            return 0;
        }
        if (o) {
            if (!cJSON_IsString(o) || o->valuestring[0] != ':')
                return kp_perr(P, o, 0, "\"offset\" names the parameter that carries the offset, such as \":skip\"");
            s->page = KP_PAGE_OFFSET;
            s->offset_param = kp_scope_param(P, S->scope, o, o->valuestring + 1, KP_PARAM_OFFSET, &int_type, NULL);
            return s->offset_param ? 0 : -1;
        }
    }
    return kp_perr(P, node, 0, "\"$page\" is \"token\", {\"token\": \"<response field>\"} or {\"offset\": \":param\"}");
}

static int parse_members(kp_parser *P, shape_ctx *S, const cJSON *node, kp_entity *ctx, kp_shape *s, int depth)
{
    size_t n = 0;
    for (const cJSON *m = node->child; m; m = m->next) n += m->string[0] != '$';
    s->members = ALLOC_N(P, kp_shape *, n);
    for (const cJSON *m = node->child; m; m = m->next) {
        if (m->string[0] == '$') continue;
        kp_shape *child = NULL;
        if (parse_shape(P, S, m, ctx, m->string, depth + 1, &child)) return -1;
        s->members[s->member_count++] = child;
    }
    /* tie token leaves to their paged arrays */
    for (size_t i = 0; i < s->member_count; i++) {
        kp_shape *each = s->members[i];
        if (each->kind != KP_SHAPE_EACH || !each->token) continue;
        kp_shape *field = NULL;
        for (size_t j = 0; j < s->member_count; j++)
            if (strcmp(s->members[j]->name, each->token->name) == 0) field = s->members[j];
        if (field && field->kind != KP_SHAPE_TOKEN) {
            kp_pos p = field->pos;
            return kp_error_set(P->err, KP_ERR_MODEL, kp_json_file(P->doc), p.line, p.column,
                                "\"%s\" is where \"%s\" puts its continuation token (\"$page\"), so it must be "
                                "\"$token\" (or \"$page\" names another member)", field->name, each->name);
        }
        if (!field) {
            kp_pos p = each->token->pos;
            return kp_error_set(P->err, KP_ERR_MODEL, kp_json_file(P->doc), p.line, p.column,
                                "\"$page\" puts the token in \"%s\", so the enclosing object needs the member "
                                "\"%s\": \"$token\"", each->token->name, each->token->name);
        }
        if (field->paged) {
            kp_pos p = field->pos;
            return kp_error_set(P->err, KP_ERR_MODEL, kp_json_file(P->doc), p.line, p.column,
                                "two arrays put their token in \"%s\"", field->name);
        }
        field->paged = each;
        each->token = field;
    }
    for (size_t i = 0; i < s->member_count; i++) {
        kp_shape *t = s->members[i];
        if (t->kind == KP_SHAPE_TOKEN && !t->paged) {
            kp_pos p = t->pos;
            return kp_error_set(P->err, KP_ERR_MODEL, kp_json_file(P->doc), p.line, p.column,
                                "\"%s\" is \"$token\" but no array next to it pages into it; give that $each "
                                "\"$page\": {\"token\": \"%s\"}", t->name, t->name);
        }
    }
    return 0;
}

static int parse_expect(kp_parser *P, const cJSON *node, kp_expect *e)
{
    static const char *const keys[] = {"avg", "max", NULL};
    if (kp_expect_object(P, node, "\"$expect\"") || kp_check_keys(P, node, keys, "\"$expect\"")) return -1;
    int has_avg = 0, has_max = 0;
    if (kp_get_number(P, node, "avg", &e->avg, &has_avg, 0) || kp_get_number(P, node, "max", &e->max, &has_max, 0)) return -1;
    if (!has_avg) return kp_perr(P, node, 0, "\"$expect\" needs \"avg\" (and usually \"max\")");
    if (!has_max) e->max = e->avg;
    if (e->max < e->avg) return kp_perr(P, node, 0, "\"$expect\" max (%g) is smaller than its avg (%g)", e->max, e->avg);
    e->is_given = 1;
    return 0;
}

static int parse_collection(kp_parser *P, shape_ctx *S, const cJSON *node, kp_entity *ctx, kp_shape *s, int depth)
{
    const cJSON *each = kp_json_get(node, "$each");
    const cJSON *one = kp_json_get(node, "$one");
    const cJSON *count = kp_json_get(node, "$count");
    const cJSON *path = each ? each : one ? one : count;
    const char *kw = each ? "$each" : one ? "$one" : "$count";
    if ((each != NULL) + (one != NULL) + (count != NULL) > 1)
        return kp_perr(P, node, 0, "a shape has one of $each, $one or $count, not several");
    s->kind = each ? KP_SHAPE_EACH : one ? KP_SHAPE_ONE : KP_SHAPE_COUNT;
    if (kp_expect_string(P, path, kw)) return -1;
    /* keywords allowed per kind */
    for (const cJSON *m = node->child; m; m = m->next) {
        if (m->string[0] != '$') {
            if (s->kind == KP_SHAPE_COUNT)
                return kp_perr(P, m, 1, "$count returns a number; it has no member \"%s\"", m->string);
            continue;
        }
        int ok = 0;
        for (int i = 0; shape_keywords[i]; i++) ok |= strcmp(shape_keywords[i], m->string) == 0;
        if (!ok) {
            const char *guess = kp_suggest(m->string, shape_keywords);
            if (guess) return kp_perr(P, m, 1, "unknown shape keyword \"%s\" (did you mean \"%s\"?)", m->string, guess);
            return kp_perr(P, m, 1, "unknown shape keyword \"%s\"", m->string);
        }
        int allowed = s->kind == KP_SHAPE_EACH ? strcmp(m->string, "$one") && strcmp(m->string, "$count")
                    : s->kind == KP_SHAPE_ONE  ? strcmp(m->string, "$one") == 0
                                               : !strcmp(m->string, "$count") || !strcmp(m->string, "$where") ||
                                                     !strcmp(m->string, "$expect");
        if (!allowed) return kp_perr(P, m, 1, "\"%s\" does not apply to %s", m->string, kw);
    }
    if (s->kind == KP_SHAPE_EACH && strcmp(path->valuestring, "$root") == 0) {
        if (!S->pattern->is_root_set)
            return kp_perr(P, path, 0, "\"$root\" lists the root set, but this pattern's \"where\" pins one %s; "
                                       "return the record's attributes directly", S->pattern->root->name);
        if (ctx || depth > 1)
            return kp_perr(P, path, 0, "{\"$each\": \"$root\"} belongs at the top of \"returns\" or as a member of the top object");
        s->is_root_set = 1;
        s->entity = S->pattern->root;
    } else {
        if (!ctx)
            return kp_perr(P, path, 0, "the root is a set of %s records here (\"where\" does not pin one by its key or a "
                                       "unique attribute); follow \"%s\" inside {\"$each\": \"$root\", ...}",
                           S->pattern->root->name, path->valuestring);
        if (kp_resolve_path(P, path, ctx, path->valuestring, 0, 0, &s->hops, &s->hop_count, NULL, &s->entity)) return -1;
        int many = 0;
        for (size_t i = 0; i < s->hop_count; i++) many |= s->hops[i]->is_many;
        if (s->kind == KP_SHAPE_ONE && many)
            return kp_perr(P, path, 0, "\"%s\" leads to many %s records; use {\"$each\": \"%s\", ...} for an array of them "
                                       "($one follows to-one relations)", path->valuestring, s->entity->name,
                           path->valuestring);
        if (s->kind == KP_SHAPE_EACH && !many)
            return kp_perr(P, path, 0, "\"%s\" leads to one %s; use {\"$one\": \"%s\", ...} for a nested object", path->valuestring,
                           s->entity->name, path->valuestring);
        if (s->kind == KP_SHAPE_COUNT && !many)
            return kp_perr(P, path, 0, "\"%s\" leads to one %s; $count counts the records of a to-many relation",
                           path->valuestring, s->entity->name);
    }
    const cJSON *where = kp_json_get(node, "$where");
    if (where) {
        if (s->is_root_set) return kp_perr(P, where, 1, "conditions on the root set go in the pattern's \"where\"");
        if (kp_parse_conditions(P, where, s->entity, S->scope, "\"$where\"", &s->where, &s->where_count)) return -1;
        conditions_on_copies(s->entity, s->where, s->where_count);
    }
    const cJSON *expect = kp_json_get(node, "$expect");
    if (expect && parse_expect(P, expect, &s->expect)) return -1;
    if (s->kind == KP_SHAPE_COUNT) return 0;
    if (s->kind == KP_SHAPE_ONE) {
        if (node->child && !node->child->next)
            return kp_perr(P, node, 0, "{\"$one\": \"%s\"} needs members: the attributes of %s to return", path->valuestring,
                           s->entity->name);
        return parse_members(P, S, node, s->entity, s, depth);
    }
    /* $each */
    const cJSON *order = kp_json_get(node, "$order");
    if (order && parse_order(P, order, s)) return -1;
    complete_order(P, s);
    const cJSON *limit = kp_json_get(node, "$limit");
    if (limit) {
        if (!order) return kp_perr(P, limit, 1, "\"$limit\" needs an \"$order\": which records come first must be declared");
        if (cJSON_IsString(limit) && limit->valuestring[0] == ':') {
            s->limit_param = kp_scope_param(P, S->scope, limit, limit->valuestring + 1, KP_PARAM_LIMIT, &int_type, NULL);
            if (!s->limit_param) return -1;
        } else if (!cJSON_IsNumber(limit) || limit->valuedouble < 1 || limit->valuedouble != floor(limit->valuedouble) ||
                   limit->valuedouble > 1e9) {
            return kp_perr(P, limit, 0, "\"$limit\" is a whole number of at least 1, or a parameter \":n\"");
        } else {
            s->limit = (int64_t)limit->valuedouble;
        }
    }
    const cJSON *page = kp_json_get(node, "$page");
    if (page) {
        if (!limit) return kp_perr(P, page, 1, "\"$page\" needs a \"$limit\": the page size");
        if (S->inside_each)
            return kp_perr(P, page, 1, "only an array that appears once in the response can page; this one is inside "
                                       "another $each");
        if (S->pattern->paged)
            return kp_perr(P, page, 1, "a pattern pages through one array; another one already has \"$page\"");
        if (parse_page(P, S, page, s)) return -1;
        if (s->token && depth <= 1 && !s->name)
            return kp_perr(P, page, 0, "a bare array has no member to hold the token; use \"$page\": \"token\"");
        S->pattern->paged = s;
    }
    const cJSON *value = kp_json_get(node, "$value");
    int saved = S->inside_each;
    S->inside_each = 1;
    int rc = 0;
    if (value) {
        for (const cJSON *m = node->child; m; m = m->next)
            if (m->string[0] != '$') {
                S->inside_each = saved;
                return kp_perr(P, m, 1, "with \"$value\" each element is one value; remove the member \"%s\"", m->string);
            }
        if (!cJSON_IsString(value) || value->valuestring[0] == '$')
            rc = kp_perr(P, value, 0, "\"$value\" is a leaf such as \"%s.id\"", s->entity->name);
        else {
            s->value = ALLOC(P, kp_shape);
            s->value->pos = kp_json_pos(P->doc, value);
            rc = parse_leaf(P, S, value, s->entity, s->value);
            if (!rc && s->value->kind == KP_SHAPE_TOKEN) rc = kp_perr(P, value, 0, "\"$value\" cannot be the token");
        }
    } else {
        int members = 0;
        for (const cJSON *m = node->child; m; m = m->next) members += m->string[0] != '$';
        if (!members)
            rc = kp_perr(P, node, 0, "{\"$each\": \"%s\"} needs members (the attributes of each %s) or \"$value\"",
                         path->valuestring, s->entity->name);
        else
            rc = parse_members(P, S, node, s->entity, s, depth);
    }
    S->inside_each = saved;
    return rc;
}

static int parse_shape(kp_parser *P, shape_ctx *S, const cJSON *node, kp_entity *ctx, const char *name, int depth,
                       kp_shape **out)
{
    if (depth > 32) return kp_perr(P, node, 0, "the response shape is nested deeper than 32 levels");
    kp_shape *s = ALLOC(P, kp_shape);
    s->name = name ? kp_pstrdup(P, name) : NULL;
    s->entity = ctx;
    s->pos = name ? kp_json_key_pos(P->doc, node) : kp_json_pos(P->doc, node);
    *out = s;
    if (cJSON_IsString(node)) {
        if (!name && strcmp(node->valuestring, "$token") == 0)
            return kp_perr(P, node, 0, "\"returns\" cannot be only the token");
        return parse_leaf(P, S, node, ctx, s);
    }
    if (!cJSON_IsObject(node))
        return kp_perr(P, node, name ? 1 : 0, "a response shape is a leaf string or an object, not %s",
                       cJSON_IsArray(node) ? "an array (use {\"$each\": ...} for arrays)" : "a literal");
    if (kp_json_get(node, "$each") || kp_json_get(node, "$one") ||
        kp_json_get(node, "$count"))
        return parse_collection(P, S, node, ctx, s, depth);
    for (const cJSON *m = node->child; m; m = m->next) {
        if (m->string[0] != '$') continue;
        const char *guess = kp_suggest(m->string, shape_keywords);
        if (guess && strcmp(guess, "$each") && strcmp(guess, "$one") && strcmp(guess, "$count"))
            return kp_perr(P, m, 1, "\"%s\" applies to an $each; this object has no $each", m->string);
        if (guess) return kp_perr(P, m, 1, "unknown shape keyword \"%s\" (did you mean \"%s\"?)", m->string, guess);
        return kp_perr(P, m, 1, "unknown shape keyword \"%s\"", m->string);
    }
    if (!node->child) return kp_perr(P, node, 0, "an empty object in the response shape; give it members");
    s->kind = KP_SHAPE_OBJECT;
    return parse_members(P, S, node, ctx, s, depth);
}

/* ---- access patterns --------------------------------------------------------------------- */

static int same_operand(const kp_operand *a, const kp_operand *b)
{
    if (a->param || b->param) return a->param == b->param;
    if (!a->literal || !b->literal) return a->literal == b->literal;
    return cJSON_Compare(a->literal, b->literal, 1);
}

/* kp_shape.counted_by: a $count next to a $each over the same foreign-key path with the same
 * conditions (in the same order) and neither limit nor page is the length of that listing. */
static void link_counts(kp_shape *s)
{
    for (size_t i = 0; s && i < s->member_count; i++) {
        kp_shape *m = s->members[i];
        link_counts(m);
        if (m->kind != KP_SHAPE_COUNT) continue;
        for (size_t j = 0; j < s->member_count && !m->counted_by; j++) {
            const kp_shape *e = s->members[j];
            if (e->kind != KP_SHAPE_EACH || e->is_root_set || e->limit || e->limit_param || e->page != KP_PAGE_NONE ||
                e->hop_count != m->hop_count || e->where_count != m->where_count)
                continue;
            int same = 1;
            for (size_t k = 0; k < e->hop_count && same; k++)
                same = e->hops[k] == m->hops[k] && e->hops[k]->relation->link == KP_LINK_FOREIGN_KEY;
            for (size_t k = 0; k < e->where_count && same; k++) {
                const kp_cond *a = &e->where[k], *b = &m->where[k];
                same = a->attr == b->attr && a->op == b->op && !a->path_len && !b->path_len && same_operand(&a->value, &b->value) &&
                       (a->op != KP_OP_BETWEEN || same_operand(&a->upper, &b->upper));
            }
            if (same) m->counted_by = e;
        }
    }
}

static const char *const pattern_keys[] = {"name", "description", "root", "where", "params", "returns", "rps", "skew",
                                           NULL};

/* 1 when a pattern or write already has this name; else the name is taken now. An
 * allocation failure falls back to the model's own (linear) look-ups. */
static int name_taken(kp_parser *P, const char *name)
{
    if (kp_strmap_get(&P->names, name)) return 1;
    if (kp_strmap_put(&P->m->arena, &P->names, name, (void *)name)) return kp_model_pattern(P->m, name) || kp_model_write(P->m, name);
    return 0;
}

static int find_root_each(const kp_shape *s)
{
    if (s->kind == KP_SHAPE_EACH) return s->is_root_set;
    if (s->kind != KP_SHAPE_OBJECT) return 0;
    int found = 0;
    for (size_t i = 0; i < s->member_count; i++) found += s->members[i]->kind == KP_SHAPE_EACH && s->members[i]->is_root_set;
    return found;
}

static const kp_shape *root_each(const kp_shape *s)
{
    if (s->kind == KP_SHAPE_EACH) return s;
    for (size_t i = 0; i < s->member_count; i++)
        if (s->members[i]->kind == KP_SHAPE_EACH && s->members[i]->is_root_set) return s->members[i];
    return NULL;
}

static int parse_pattern(kp_parser *P, const cJSON *node)
{
    kp_model *m = P->m;
    if (kp_expect_object(P, node, "an access pattern") || kp_check_keys(P, node, pattern_keys, "an access pattern"))
        return -1;
    kp_pattern *p = ALLOC(P, kp_pattern);
    p->pos = kp_json_pos(P->doc, node);
    const cJSON *name = kp_json_get(node, "name");
    if (!name) return kp_perr(P, node, 0, "an access pattern needs a \"name\"");
    if (kp_expect_string(P, name, "\"name\"") || kp_check_name(P, name, name->valuestring, 1, "pattern")) return -1;
    if (name_taken(P, name->valuestring))
        return kp_perr(P, name, 0, "there is already a pattern or write named '%s'", name->valuestring);
    p->name = kp_pstrdup(P, name->valuestring);
    char owner[200];
    kp_snprintf(owner, sizeof owner, "pattern '%s'", p->name);
    const cJSON *desc = kp_json_get(node, "description");
    if (desc) {
        if (kp_expect_string(P, desc, "\"description\"")) return -1;
        p->description = kp_pstrdup(P, desc->valuestring);
    }
    const cJSON *root = kp_json_get(node, "root");
    if (!root) return kp_perr(P, node, 0, "pattern '%s' needs a \"root\": the entity it starts from", p->name);
    if (kp_expect_string(P, root, "\"root\"") || !(p->root = kp_resolve_entity(P, root, root->valuestring, owner))) return -1;
    const cJSON *rps = kp_json_get(node, "rps");
    if (!rps) return kp_perr(P, node, 0, "pattern '%s' needs \"rps\": how many requests per second it serves", p->name);
    int has_skew = 0;
    if (kp_get_number(P, node, "rps", &p->rps, NULL, 0) || kp_get_number(P, node, "skew", &p->skew, &has_skew, 0)) return -1;
    p->has_skew = has_skew;
    kp_param_scope scope = {0};
    scope.declared = kp_json_get(node, "params");
    if (scope.declared && kp_expect_object(P, scope.declared, "\"params\"")) return -1;
    /* optional flags must be known before deciding whether the root is pinned */
    const cJSON *where = kp_json_get(node, "where");
    if (where && kp_parse_conditions(P, where, p->root, &scope, "\"where\"", &p->where, &p->where_count)) return -1;
    conditions_on_copies(p->root, p->where, p->where_count);
    if (scope.declared)
        for (size_t i = 0; i < scope.count; i++) {
            const cJSON *d = kp_json_get(scope.declared, scope.items[i]->name);
            if (d && cJSON_IsObject(d) && cJSON_IsTrue(kp_json_get(d, "optional")))
                scope.items[i]->is_optional = 1;
        }
    p->is_root_set = !pins_one(p->root, p->where, p->where_count);
    const cJSON *returns = kp_json_get(node, "returns");
    if (!returns) return kp_perr(P, node, 0, "pattern '%s' needs \"returns\": the exact JSON it must return", p->name);
    shape_ctx S = {p, &scope, 0};
    if (parse_shape(P, &S, returns, p->is_root_set ? NULL : p->root, NULL, 0, &p->returns)) return -1;
    if (p->is_root_set) {
        int n = find_root_each(p->returns);
        if (n != 1)
            return kp_perr(P, returns, 0, "the root of '%s' is a set (its \"where\" does not pin one %s by key or a unique "
                                          "attribute), so \"returns\" must hold one {\"$each\": \"$root\", ...}",
                           p->name, p->root->name);
        const kp_shape *each = root_each(p->returns);
        if (p->root->count > 1000 && !each->limit && !each->limit_param) {
            kp_pos pos = each->pos;
            return kp_error_set(P->err, KP_ERR_MODEL, kp_json_file(P->doc), pos.line, pos.column,
                                "pattern '%s' lists %s, a set of %.0f records: a feed needs \"$order\" and \"$limit\"",
                                p->name, p->root->name, p->root->count);
        }
    }
    if (kp_scope_finish(P, &scope, &p->params, &p->param_count, owner)) return -1;
    link_counts(p->returns);
    for (size_t i = 0; i < p->param_count; i++) {
        kp_param *param = p->params[i];
        if (param->role == KP_PARAM_LIMIT && !param->default_value && param->is_optional)
            return kp_perr(P, scope.declared, 0, "the page-size parameter :%s is optional, so it needs a \"default\"",
                           param->name);
        /* an unbounded page size makes every claim a guess: a caller could ask for the whole set */
        if (param->role == KP_PARAM_LIMIT && !param->max)
            return kp_error_set(P->err, KP_ERR_MODEL, kp_json_file(P->doc), param->pos.line, param->pos.column,
                                "the page-size parameter :%s has no \"max\"; declare it under the pattern's \"params\", "
                                "e.g. \"%s\": {\"type\": \"int\", \"default\": 20, \"min\": 1, \"max\": 100}, so costs are "
                                "planned for the largest page a caller may ask for", param->name, param->name);
    }
    p->index = m->pattern_count;
    m->patterns[m->pattern_count++] = p;
    return 0;
}

int kp_parse_patterns(kp_parser *P, const cJSON *patterns)
{
    if (kp_expect_array(P, patterns, "\"access_patterns\"")) return -1;
    size_t n = (size_t)cJSON_GetArraySize(patterns);
    if (n == 0) return kp_perr(P, patterns, 0, "\"access_patterns\" is empty; a design is driven by at least one pattern");
    P->m->patterns = ALLOC_N(P, kp_pattern *, n);
    for (const cJSON *p = patterns->child; p; p = p->next)
        if (parse_pattern(P, p)) return -1;
    return 0;
}

/* ---- writes ---------------------------------------------------------------------------- */

static const char *const write_keys[] = {"name", "description", "rps", "schedule", "atomic", "skew", "params", "steps",
                                         "entity", "op", "where", "set", "increment", "decrement", "if", "if_absent",
                                         "for_each", "link", "rows", NULL};
static const char *const step_keys[] = {"entity", "op", "where", "set", "increment", "decrement", "if", "if_absent",
                                        "for_each", "link", "rows", "description", NULL};
static const char *const write_ops[] = {"insert", "update", "upsert", "delete", NULL};

static int assignable(kp_parser *P, const cJSON *node, kp_attr *a, kp_assign_kind kind)
{
    if (a->key_index >= 0) return kp_perr(P, node, 1, "'%s' is part of the key of %s and cannot be changed", a->name, a->entity->name);
    if (a->derived)
        return kp_perr(P, node, 1, "'%s' is derived; it follows its relation and is never written directly", a->name);
    if (a->copy_of)
        return kp_perr(P, node, 1, "'%s' is a copy of '%s'; write the source and the copy follows", a->name,
                       a->copy_of->source->name);
    if (kind == KP_ASSIGN_SET && a->type.kind == KP_T_COUNTER)
        return kp_perr(P, node, 1, "'%s' is a counter; counters can only be incremented or decremented", a->name);
    if (kind != KP_ASSIGN_SET && !kp_type_is_numeric(a->type.kind))
        return kp_perr(P, node, 1, "'%s' is %s; only numbers can be incremented or decremented", a->name,
                       kp_type_with_article(a->type.kind));
    return 0;
}

static int parse_assigns(kp_parser *P, const cJSON *step, kp_write_step *s, kp_param_scope *scope)
{
    static const char *const kinds[] = {"set", "increment", "decrement"};
    size_t cap = 0;
    for (int k = 0; k < 3; k++) {
        const cJSON *node = kp_json_get(step, kinds[k]);
        if (!node) continue;
        if (s->op == KP_WRITE_INSERT || s->op == KP_WRITE_DELETE)
            return kp_perr(P, node, 1, "\"%s\" applies to update and upsert steps, not %s", kinds[k],
                           write_ops[s->op]);
        if (k == 0 && cJSON_IsArray(node)) {
            for (const cJSON *n = node->child; n; n = n->next) {
                if (kp_expect_string(P, n, "an attribute name")) return -1;
                kp_attr *a = kp_entity_attr(s->entity, n->valuestring);
                if (!a) {
                    kp_attr *dummy;
                    return kp_resolve_path(P, n, s->entity, n->valuestring, 1, 1, NULL, NULL, &dummy, NULL);
                }
                if (assignable(P, n, a, KP_ASSIGN_SET)) return -1;
                kp_assign *as = kp_arena_push(&P->m->arena, (void **)&s->assigns, &s->assign_count, &cap, sizeof *as);
                as->attr = a;
                as->kind = KP_ASSIGN_SET;
                as->value.param = kp_scope_param(P, scope, n, a->name, KP_PARAM_VALUE, &a->type, a);
                if (!as->value.param) return -1;
            }
            continue;
        }
        if (kp_expect_object(P, node, kinds[k])) return -1;
        for (const cJSON *n = node->child; n; n = n->next) {
            kp_attr *a = kp_entity_attr(s->entity, n->string);
            if (!a) {
                kp_attr *dummy;
                kp_resolve_path(P, n, s->entity, n->string, 1, 1, NULL, NULL, &dummy, NULL);
                kp_pos p = kp_json_key_pos(P->doc, n);
                P->err->line = p.line;
                P->err->column = p.column;
                return -1;
            }
            if (assignable(P, n, a, (kp_assign_kind)k)) return -1;
            for (size_t i = 0; i < s->assign_count; i++)
                if (s->assigns[i].attr == a) return kp_perr(P, n, 1, "'%s' is written twice in one step", a->name);
            kp_assign *as = kp_arena_push(&P->m->arena, (void **)&s->assigns, &s->assign_count, &cap, sizeof *as);
            as->attr = a;
            as->kind = (kp_assign_kind)k;
            const kp_type *t = &a->type;
            static const kp_type int_like = {.kind = KP_T_INT};
            if (a->type.kind == KP_T_COUNTER) t = &int_like;
            if (kp_parse_operand(P, n, a, t, scope, &as->value)) return -1;
        }
    }
    return 0;
}

static int parse_step(kp_parser *P, const cJSON *node, kp_write *w, kp_write_step *s, size_t index, kp_param_scope *scope,
                      int at_top)
{
    if (!at_top && (kp_expect_object(P, node, "a write step") || kp_check_keys(P, node, step_keys, "a write step")))
        return -1;
    s->pos = kp_json_pos(P->doc, node);
    s->rows = 1;
    const cJSON *entity = kp_json_get(node, "entity");
    const cJSON *op = kp_json_get(node, "op");
    if (!entity || !op) return kp_perr(P, node, 0, "a write step needs \"entity\" and \"op\" (insert, update, upsert or delete)");
    char owner[200];
    kp_snprintf(owner, sizeof owner, "write '%s'", w->name);
    if (kp_expect_string(P, entity, "\"entity\"") || !(s->entity = kp_resolve_entity(P, entity, entity->valuestring, owner)))
        return -1;
    if (kp_expect_string(P, op, "\"op\"")) return -1;
    int found = -1;
    for (int i = 0; write_ops[i]; i++)
        if (strcmp(write_ops[i], op->valuestring) == 0) found = i;
    if (found < 0) {
        const char *guess = kp_suggest(op->valuestring, write_ops);
        if (guess) return kp_perr(P, op, 0, "unknown op \"%s\" (did you mean \"%s\"?)", op->valuestring, guess);
        return kp_perr(P, op, 0, "unknown op \"%s\"; use insert, update, upsert or delete", op->valuestring);
    }
    s->op = (kp_write_op)found;
    const cJSON *desc = kp_json_get(node, "description");
    if (desc && !at_top) {
        if (kp_expect_string(P, desc, "\"description\"")) return -1;
        s->description = kp_pstrdup(P, desc->valuestring);
    }
    const cJSON *for_each = kp_json_get(node, "for_each");
    if (for_each) {
        if (index == 0)
            return kp_perr(P, for_each, 1, "\"for_each\" starts from the first step's record, so it cannot be on the first step");
        if (kp_expect_string(P, for_each, "\"for_each\"")) return -1;
        kp_entity *end;
        if (kp_resolve_path(P, for_each, w->steps[0].entity, for_each->valuestring, 0, 0, &s->for_each, &s->for_each_len,
                            NULL, &end))
            return -1;
        const cJSON *link = kp_json_get(node, "link");
        if (s->op == KP_WRITE_INSERT) {
            if (!link)
                return kp_perr(P, for_each, 1, "an insert with \"for_each\" needs \"link\": the relation of %s that ties "
                                               "each new record to the %s it is created for", s->entity->name, end->name);
            if (kp_expect_string(P, link, "\"link\"")) return -1;
            s->link = kp_entity_rel(s->entity, link->valuestring);
            if (!s->link || s->link->is_many || s->link->target != end)
                return kp_perr(P, link, 0, "\"link\" must name a to-one relation of %s leading to %s", s->entity->name,
                               end->name);
        } else {
            if (link) return kp_perr(P, link, 1, "\"link\" is for inserts with \"for_each\"");
            if (end != s->entity)
                return kp_perr(P, for_each, 0, "\"for_each\": \"%s\" reaches %s records, but this step writes %s",
                               for_each->valuestring, end->name, s->entity->name);
        }
    } else if (kp_json_get(node, "link")) {
        return kp_perr(P, kp_json_get(node, "link"), 1, "\"link\" goes with \"for_each\"");
    }
    const cJSON *where = kp_json_get(node, "where");
    if (s->op == KP_WRITE_INSERT) {
        if (where) return kp_perr(P, where, 1, "an insert creates a record; \"where\" is for update, upsert and delete");
        if (kp_json_get(node, "if"))
            return kp_perr(P, kp_json_get(node, "if"), 1,
                           "an insert has no current record to test; use \"if_absent\": true");
    } else {
        if (where && kp_parse_conditions(P, where, s->entity, scope, "\"where\"", &s->where, &s->where_count)) return -1;
        if (!for_each && !pins_one(s->entity, s->where, s->where_count)) {
            const cJSON *at = where ? where : node;
            char keys[200] = "";
            for (size_t i = 0; i < s->entity->key_count; i++) {
                strcat(keys, i ? ", " : "");
                strncat(keys, s->entity->key[i]->name, 40);
            }
            return kp_perr(P, at, 0, "the %s of %s must pin one record: give \"where\" with = on its key (%s) or a unique "
                                     "attribute; for many records use \"for_each\"", write_ops[s->op], s->entity->name, keys);
        }
        if (s->op == KP_WRITE_UPDATE && !kp_json_get(node, "set") &&
            !kp_json_get(node, "increment") && !kp_json_get(node, "decrement"))
            return kp_perr(P, node, 0, "an update needs \"set\", \"increment\" or \"decrement\"");
        const cJSON *cond = kp_json_get(node, "if");
        if (cond && kp_parse_conditions(P, cond, s->entity, scope, "\"if\"", &s->conditions, &s->condition_count)) return -1;
    }
    const cJSON *absent = kp_json_get(node, "if_absent");
    if (absent) {
        if (s->op != KP_WRITE_INSERT) return kp_perr(P, absent, 1, "\"if_absent\" applies to inserts");
        if (kp_get_bool(P, node, "if_absent", &s->is_if_absent)) return -1;
    }
    if (parse_assigns(P, node, s, scope)) return -1;
    int has_rows = 0;
    if (kp_get_number(P, node, "rows", &s->rows, &has_rows, 0)) return -1;
    if (has_rows && s->rows <= 0) return kp_perr(P, kp_json_get(node, "rows"), 0, "\"rows\" must be above 0");
    return 0;
}

static int parse_period(const char *text, double *seconds)
{
    char *end;
    double v = strtod(text, &end);
    if (end == text || v <= 0 || !end[0] || end[1]) return -1;
    double unit = end[0] == 's' ? 1 : end[0] == 'm' ? 60 : end[0] == 'h' ? 3600 : end[0] == 'd' ? 86400
                : end[0] == 'w' ? 604800 : 0;
    if (unit == 0) return -1;
    *seconds = v * unit;
    return 0;
}

static int parse_write(kp_parser *P, const cJSON *node)
{
    kp_model *m = P->m;
    if (kp_expect_object(P, node, "a write") || kp_check_keys(P, node, write_keys, "a write")) return -1;
    kp_write *w = ALLOC(P, kp_write);
    w->pos = kp_json_pos(P->doc, node);
    const cJSON *name = kp_json_get(node, "name");
    if (!name) return kp_perr(P, node, 0, "a write needs a \"name\"");
    if (kp_expect_string(P, name, "\"name\"") || kp_check_name(P, name, name->valuestring, 1, "write")) return -1;
    if (name_taken(P, name->valuestring))
        return kp_perr(P, name, 0, "there is already a pattern or write named '%s'", name->valuestring);
    w->name = kp_pstrdup(P, name->valuestring);
    const cJSON *desc = kp_json_get(node, "description");
    if (desc) {
        if (kp_expect_string(P, desc, "\"description\"")) return -1;
        w->description = kp_pstrdup(P, desc->valuestring);
    }
    int has_rps = 0, has_skew = 0;
    if (kp_get_number(P, node, "rps", &w->rps, &has_rps, 0) || kp_get_number(P, node, "skew", &w->skew, &has_skew, 0) ||
        kp_get_bool(P, node, "atomic", &w->is_atomic))
        return -1;
    w->has_skew = has_skew;
    const cJSON *schedule = kp_json_get(node, "schedule");
    if (schedule && has_rps)
        return kp_perr(P, schedule, 1, "write '%s' has both \"rps\" and \"schedule\"; a scheduled job's rate follows from "
                                       "its rows and period", w->name);
    if (!schedule && !has_rps)
        return kp_perr(P, node, 0, "write '%s' needs \"rps\", or \"schedule\": {\"every\": \"1d\", \"rows\": N} for a batch job",
                       w->name);
    if (schedule) {
        static const char *const keys[] = {"every", "rows", NULL};
        if (kp_expect_object(P, schedule, "\"schedule\"") || kp_check_keys(P, schedule, keys, "\"schedule\"")) return -1;
        const cJSON *every = kp_json_get(schedule, "every");
        int has_rows = 0;
        if (!every || kp_expect_string(P, every, "\"every\"")) {
            if (!every) return kp_perr(P, schedule, 0, "\"schedule\" needs \"every\": a period such as \"1d\" or \"15m\"");
            return -1;
        }
        if (parse_period(every->valuestring, &w->schedule_every_s))
            return kp_perr(P, every, 0, "\"every\" is a number and a unit (s, m, h, d, w) such as \"1d\", not \"%s\"",
                           every->valuestring);
        if (kp_get_number(P, schedule, "rows", &w->schedule_rows, &has_rows, 1)) return -1;
        if (!has_rows) return kp_perr(P, schedule, 0, "\"schedule\" needs \"rows\": the records one run writes");
        w->rps = w->schedule_rows / w->schedule_every_s;
    }
    kp_param_scope scope = {0};
    scope.declared = kp_json_get(node, "params");
    if (scope.declared && kp_expect_object(P, scope.declared, "\"params\"")) return -1;
    const cJSON *steps = kp_json_get(node, "steps");
    if (steps) {
        for (int i = 0; step_keys[i]; i++) {
            const cJSON *k = kp_json_get(node, step_keys[i]);
            if (k && strcmp(step_keys[i], "description"))
                return kp_perr(P, k, 1, "write '%s' has \"steps\", so \"%s\" belongs inside a step", w->name, step_keys[i]);
        }
        if (kp_expect_array(P, steps, "\"steps\"")) return -1;
        size_t n = (size_t)cJSON_GetArraySize(steps);
        if (n == 0) return kp_perr(P, steps, 0, "\"steps\" is empty");
        w->steps = ALLOC_N(P, kp_write_step, n);
        for (const cJSON *s = steps->child; s; s = s->next) {
            if (parse_step(P, s, w, &w->steps[w->step_count], w->step_count, &scope, 0)) return -1;
            w->step_count++;
        }
    } else {
        w->steps = ALLOC_N(P, kp_write_step, 1);
        if (parse_step(P, node, w, &w->steps[0], 0, &scope, 1)) return -1;
        w->step_count = 1;
    }
    if (w->is_atomic && w->step_count < 2)
        return kp_perr(P, kp_json_get(node, "atomic"), 1,
                       "\"atomic\" applies to writes of several steps; a single step is atomic already");
    char owner[200];
    kp_snprintf(owner, sizeof owner, "write '%s'", w->name);
    if (kp_scope_finish(P, &scope, &w->params, &w->param_count, owner)) return -1;
    w->index = m->write_count;
    m->writes[m->write_count++] = w;
    return 0;
}

int kp_parse_writes(kp_parser *P, const cJSON *writes)
{
    if (!writes) return 0;
    if (kp_expect_array(P, writes, "\"writes\"")) return -1;
    P->m->writes = ALLOC_N(P, kp_write *, (size_t)cJSON_GetArraySize(writes));
    for (const cJSON *w = writes->child; w; w = w->next)
        if (parse_write(P, w)) return -1;
    return 0;
}

/* ---- workload ------------------------------------------------------------------------------- */

static const char *const workload_keys[] = {"key_skew", "default_mix", "mixes", "groups", NULL};
static const char *const mix_keys[] = {"description", "rates", NULL};

static const char **pattern_and_write_names(kp_parser *P)
{
    kp_model *m = P->m;
    const char **names = ALLOC_N(P, const char *, m->pattern_count + m->write_count + 1);
    size_t n = 0;
    for (size_t i = 0; i < m->pattern_count; i++) names[n++] = m->patterns[i]->name;
    for (size_t i = 0; i < m->write_count; i++) names[n++] = m->writes[i]->name;
    return names;
}

int kp_parse_workload(kp_parser *P, const cJSON *workload)
{
    kp_model *m = P->m;
    if (!workload) return 0;
    if (kp_expect_object(P, workload, "\"workload\"") || kp_check_keys(P, workload, workload_keys, "\"workload\"")) return -1;
    if (kp_get_number(P, workload, "key_skew", &m->key_skew, NULL, 0)) return -1;
    const cJSON *mixes = kp_json_get(workload, "mixes");
    if (mixes) {
        if (kp_expect_object(P, mixes, "\"mixes\"")) return -1;
        m->mixes = ALLOC_N(P, kp_mix *, (size_t)cJSON_GetArraySize(mixes));
        for (const cJSON *mx = mixes->child; mx; mx = mx->next) {
            char what[200];
            kp_snprintf(what, sizeof what, "mix '%s'", mx->string);
            if (kp_check_name(P, mx, mx->string, 1, "mix") || kp_expect_object(P, mx, what) ||
                kp_check_keys(P, mx, mix_keys, what))
                return -1;
            kp_mix *mix = ALLOC(P, kp_mix);
            mix->name = kp_pstrdup(P, mx->string);
            mix->pos = kp_json_key_pos(P->doc, mx);
            const cJSON *desc = kp_json_get(mx, "description");
            if (desc) {
                if (kp_expect_string(P, desc, "\"description\"")) return -1;
                mix->description = kp_pstrdup(P, desc->valuestring);
            }
            const cJSON *rates = kp_json_get(mx, "rates");
            if (!rates) return kp_perr(P, mx, 1, "mix '%s' needs \"rates\": pattern or write name -> rps", mix->name);
            if (kp_expect_object(P, rates, "\"rates\"")) return -1;
            mix->rates = ALLOC_N(P, kp_rate, (size_t)cJSON_GetArraySize(rates));
            for (const cJSON *r = rates->child; r; r = r->next) {
                kp_rate *rate = &mix->rates[mix->rate_count];
                rate->pattern = kp_model_pattern(m, r->string);
                rate->write = rate->pattern ? NULL : kp_model_write(m, r->string);
                if (!rate->pattern && !rate->write) {
                    const char *guess = kp_suggest(r->string, pattern_and_write_names(P));
                    if (guess)
                        return kp_perr(P, r, 1, "mix '%s' rates unknown pattern or write '%s' (did you mean '%s'?)", mix->name,
                                       r->string, guess);
                    return kp_perr(P, r, 1, "mix '%s' rates unknown pattern or write '%s'", mix->name, r->string);
                }
                if (!cJSON_IsNumber(r) || r->valuedouble < 0)
                    return kp_perr(P, r, 0, "a rate is a number of requests per second (>= 0)");
                rate->rps = r->valuedouble;
                mix->rate_count++;
            }
            m->mixes[m->mix_count++] = mix;
        }
    }
    const cJSON *def = kp_json_get(workload, "default_mix");
    if (def) {
        if (kp_expect_string(P, def, "\"default_mix\"")) return -1;
        m->default_mix = kp_model_mix(m, def->valuestring);
        if (!m->default_mix) {
            const char **names = ALLOC_N(P, const char *, m->mix_count + 1);
            for (size_t i = 0; i < m->mix_count; i++) names[i] = m->mixes[i]->name;
            const char *guess = kp_suggest(def->valuestring, names);
            if (guess) return kp_perr(P, def, 0, "\"default_mix\" names unknown mix '%s' (did you mean '%s'?)", def->valuestring, guess);
            return kp_perr(P, def, 0, "\"default_mix\" names unknown mix '%s'; declare it under \"mixes\"", def->valuestring);
        }
    }
    const cJSON *groups = kp_json_get(workload, "groups");
    if (groups) {
        if (kp_expect_object(P, groups, "\"groups\"")) return -1;
        m->groups = ALLOC_N(P, kp_group *, (size_t)cJSON_GetArraySize(groups));
        for (const cJSON *g = groups->child; g; g = g->next) {
            if (kp_check_name(P, g, g->string, 1, "group") || kp_expect_array(P, g, "a group")) return -1;
            kp_group *group = ALLOC(P, kp_group);
            group->name = kp_pstrdup(P, g->string);
            group->pos = kp_json_key_pos(P->doc, g);
            group->patterns = ALLOC_N(P, kp_pattern *, (size_t)cJSON_GetArraySize(g));
            for (const cJSON *p = g->child; p; p = p->next) {
                if (kp_expect_string(P, p, "a pattern name")) return -1;
                kp_pattern *pattern = kp_model_pattern(m, p->valuestring);
                if (!pattern && kp_model_write(m, p->valuestring))
                    return kp_perr(P, p, 0, "group '%s' names '%s', which is a write; a group lists the access patterns "
                                            "one screen reads together", group->name, p->valuestring);
                if (!pattern) {
                    const char **names = ALLOC_N(P, const char *, m->pattern_count + 1);
                    for (size_t i = 0; i < m->pattern_count; i++) names[i] = m->patterns[i]->name;
                    const char *guess = kp_suggest(p->valuestring, names);
                    if (guess)
                        return kp_perr(P, p, 0, "group '%s' names unknown pattern '%s' (did you mean '%s'?)", group->name,
                                       p->valuestring, guess);
                    return kp_perr(P, p, 0, "group '%s' names unknown pattern '%s'", group->name, p->valuestring);
                }
                group->patterns[group->pattern_count++] = pattern;
            }
            m->groups[m->group_count++] = group;
        }
    }
    return 0;
}

/* ---- hints --------------------------------------------------------------------------------- */

typedef struct hint_rule {
    const char *database; /* NULL: any */
    const char *kind;
    kp_hint_target target;
    int is_counted;       /* object name -> number, else array of names */
} hint_rule;

static const hint_rule hint_rules[] = {
    {NULL, "shards", KP_HINT_PATTERN, 1},
    {NULL, "allow_scan", KP_HINT_PATTERN, 0},
    {"mongodb", "embed", KP_HINT_RELATION, 0},
    {"mongodb", "reference", KP_HINT_RELATION, 0},
    {"dynamodb", "denormalize", KP_HINT_RELATION, 0},
    {"dynamodb", "separate_table", KP_HINT_ENTITY, 0},
    {"cassandra", "allow_filtering", KP_HINT_PATTERN, 0},
    {"cassandra", "secondary_index", KP_HINT_PATTERN, 0},
};
static const char *const databases[] = {"dynamodb", "mongodb", "cassandra", NULL};

static int resolve_hint_target(kp_parser *P, const cJSON *node, const char *target, const hint_rule *rule, kp_hint *h)
{
    kp_model *m = P->m;
    h->target = kp_pstrdup(P, target);
    h->target_kind = rule->target;
    if (rule->target == KP_HINT_PATTERN) {
        h->pattern = kp_model_pattern(m, target);
        if (!h->pattern && strcmp(rule->kind, "shards") == 0) {
            h->write = kp_model_write(m, target);
            if (h->write) h->target_kind = KP_HINT_WRITE;
        }
        if (h->pattern || h->write) return 0;
        const char *guess = kp_suggest(target, pattern_and_write_names(P));
        if (guess) return kp_perr(P, node, 0, "hint \"%s\" names unknown pattern '%s' (did you mean '%s'?)", rule->kind, target, guess);
        return kp_perr(P, node, 0, "hint \"%s\" names unknown pattern '%s'", rule->kind, target);
    }
    if (rule->target == KP_HINT_ENTITY) {
        h->entity = kp_resolve_entity(P, node, target, "the hint");
        return h->entity ? 0 : -1;
    }
    const char *dot = strchr(target, '.');
    if (!dot) return kp_perr(P, node, 0, "hint \"%s\" names a relation as \"Entity.relation\", not \"%s\"", rule->kind, target);
    char entity[256];
    kp_snprintf(entity, sizeof entity, "%.*s", (int)(dot - target), target);
    kp_entity *e = kp_resolve_entity(P, node, entity, "the hint");
    if (!e) return -1;
    h->entity = e;
    if (kp_resolve_path_as(P, node, e, dot + 1, target, 0, 0, NULL, NULL, NULL, NULL)) return -1;
    h->rel = kp_entity_rel(e, dot + 1);
    if (!h->rel) return kp_perr(P, node, 0, "hint \"%s\" names '%s', which is not one relation of %s", rule->kind, target, e->name);
    return 0;
}

int kp_parse_hints(kp_parser *P, const cJSON *hints)
{
    kp_model *m = P->m;
    if (!hints) return 0;
    if (kp_expect_object(P, hints, "\"hints\"") || kp_check_keys(P, hints, databases, "\"hints\"")) return -1;
    size_t cap = 0;
    for (const cJSON *db = hints->child; db; db = db->next) {
        char what[200];
        kp_snprintf(what, sizeof what, "the %s hints", db->string);
        if (kp_expect_object(P, db, what)) return -1;
        const char *kinds[16];
        size_t nk = 0;
        for (size_t i = 0; i < sizeof hint_rules / sizeof *hint_rules; i++)
            if (!hint_rules[i].database || strcmp(hint_rules[i].database, db->string) == 0) kinds[nk++] = hint_rules[i].kind;
        kinds[nk] = NULL;
        if (kp_check_keys(P, db, kinds, what)) return -1;
        for (const cJSON *k = db->child; k; k = k->next) {
            const hint_rule *rule = NULL;
            for (size_t i = 0; i < sizeof hint_rules / sizeof *hint_rules; i++)
                if (strcmp(hint_rules[i].kind, k->string) == 0 &&
                    (!hint_rules[i].database || strcmp(hint_rules[i].database, db->string) == 0))
                    rule = &hint_rules[i];
            if (rule->is_counted) {
                if (kp_expect_object(P, k, "\"shards\"")) return -1;
            } else if (kp_expect_array(P, k, k->string)) {
                return -1;
            }
            for (const cJSON *t = k->child; t; t = t->next) {
                kp_hint *h = kp_arena_push(&m->arena, (void **)&m->hints, &m->hint_count, &cap, sizeof *h);
                h->database = kp_pstrdup(P, db->string);
                h->kind = kp_pstrdup(P, k->string);
                h->pos = kp_json_pos(P->doc, t);
                const char *target;
                if (rule->is_counted) {
                    target = t->string;
                    if (!cJSON_IsNumber(t) || t->valuedouble < 1 || t->valuedouble != floor(t->valuedouble)) {
                        char given[64];
                        kp_json_describe(t, given, sizeof given);
                        return kp_perr(P, t, 0, "the shard count of '%s' must be a whole number of at least 1, not %s",
                                       t->string, given);
                    }
                    h->number = t->valuedouble;
                } else {
                    if (kp_expect_string(P, t, "a hint target")) return -1;
                    target = t->valuestring;
                }
                if (resolve_hint_target(P, t, target, rule, h)) return -1;
                for (size_t i = 0; i + 1 < m->hint_count; i++) {
                    kp_hint *o = &m->hints[i];
                    if (strcmp(o->database, h->database) || strcmp(o->target, h->target)) continue;
                    int clash = !strcmp(o->kind, h->kind) || (!strcmp(o->kind, "embed") && !strcmp(h->kind, "reference")) ||
                                (!strcmp(o->kind, "reference") && !strcmp(h->kind, "embed"));
                    if (clash)
                        return kp_perr(P, t, 0, "%s hints \"%s\" and \"%s\" both name '%s'; keep one", h->database, o->kind,
                                       h->kind, h->target);
                }
            }
        }
    }
    return 0;
}
