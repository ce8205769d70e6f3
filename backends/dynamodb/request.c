/*
 * request.c — the DynamoDB requests a fetch sends: a Query's key condition (the
 * partition value, the sort-key prefix the equalities fix, the range), its filter,
 * order and limit; GetItem and BatchGetItem by key.
 *
 * execute.c sends these requests with the parameters' values; emit.c writes them with
 * "<name>" placeholders where the values go (ctx->params == NULL), so a request file
 * a team runs is the request keyplan verified, expression for expression.
 * Invariant: with values, the requests are byte-for-byte what the executor sent before
 * this code moved here. Names #n<i> and values :v<i> are numbered as they are made:
 * the key condition, then the filter; within one condition, in the order GCC used to
 * evaluate the arguments (right to left: "#n1 = :v0", "BETWEEN :v4 AND :v3"), now
 * spelled out so that every compiler sends and emits the same bytes.
 */
#include "backends/dynamodb/request.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/data.h"
#include "core/value.h"

static cJSON *av_string(const char *s)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "S", s);
    return o;
}

/* ---- operands: a value, or a placeholder for it ---------------------------------------- */

static int is_placeholder(const ddb_request_ctx *c, const kp_operand *o)
{
    return o->param && !c->params && !(c->is_optional_omitted && o->param->is_optional);
}

static const cJSON *operand(const ddb_request_ctx *c, const kp_operand *o)
{
    return o->param ? kp_params_get(c->params, o->param->name) : o->literal;
}

/* Does the operand have a value (an optional parameter may be left out)? */
static int has_operand(const ddb_request_ctx *c, const kp_operand *o) { return is_placeholder(c, o) || operand(c, o); }

/* The operand as it appears inside a key (escaped, padded), or "<name>"; -1 when it is
 * absent or does not fit. */
static int operand_key_text(const ddb_request_ctx *c, const kp_attr *attr, int width, const kp_operand *o, char *buf,
                            size_t size)
{
    if (is_placeholder(c, o)) {
        kp_snprintf(buf, size, "<%s>", o->param->name);
        return 0;
    }
    const cJSON *v = operand(c, o);
    if (!v || kp_ddb_key_text(attr, width, v, buf, size)) return -1;
    return 0;
}

/* The operand as an AttributeValue of attr's type; a placeholder keeps the type's tag
 * ({"N": "<limit>"}) so that a reader sees what to put there. */
static cJSON *operand_attribute_value(const ddb_request_ctx *c, const kp_attr *attr, const kp_operand *o)
{
    if (!is_placeholder(c, o)) return kp_ddb_to_attribute_value(&attr->type, operand(c, o));
    char text[300];
    kp_snprintf(text, sizeof text, "<%s>", o->param->name);
    cJSON *av = cJSON_CreateObject();
    cJSON_AddStringToObject(av, kp_ddb_attribute_type(&attr->type), text);
    return av;
}

const char *kp_ddb_attribute_type(const kp_type *type)
{
    switch (type->kind) {
    case KP_T_INT: case KP_T_DECIMAL: case KP_T_DOUBLE: case KP_T_COUNTER: return "N";
    case KP_T_BOOL: return "BOOL";
    case KP_T_BLOB: return "B";
    case KP_T_OBJECT: case KP_T_MAP: return "M";
    case KP_T_ARRAY: return "L";
    default: return "S";
    }
}

/* ---- expressions ---------------------------------------------------------------------------- */

typedef struct expr {
    char text[4096];
    cJSON *names, *values;
    int next;
} expr;

static void expr_init(expr *x)
{
    x->text[0] = '\0';
    x->names = cJSON_CreateObject();
    x->values = cJSON_CreateObject();
    x->next = 0;
}

static void expr_free(expr *x)
{
    cJSON_Delete(x->names);
    cJSON_Delete(x->values);
}

static const char *expr_name(expr *x, const char *attr)
{
    for (const cJSON *n = x->names->child; n; n = n->next)
        if (strcmp(n->valuestring, attr) == 0) return n->string;
    char key[32];
    kp_snprintf(key, sizeof key, "#n%d", x->next++);
    cJSON_AddStringToObject(x->names, key, attr);
    return cJSON_GetObjectItemCaseSensitive(x->names, key)->string;
}

static const char *expr_value(expr *x, cJSON *av)
{
    char key[32];
    kp_snprintf(key, sizeof key, ":v%d", x->next++);
    cJSON_AddItemToObject(x->values, key, av);
    return cJSON_GetObjectItemCaseSensitive(x->values, key)->string;
}

static void expr_append(expr *x, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void expr_append(expr *x, const char *fmt, ...)
{
    size_t len = strlen(x->text);
    va_list ap;
    va_start(ap, fmt);
    kp_vsnprintf(x->text + len, sizeof x->text - len, fmt, ap);
    va_end(ap);
}

/* The sort-key text up to the first attribute that no equality fixes (or `stop`). */
static int sk_prefix(const ddb_request_ctx *c, const ddb_fetch *f, const kp_attr *stop, char *buf, size_t size)
{
    const ddb_format *sk = &f->placement->sk;
    size_t len = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < sk->count; i++) {
        const ddb_segment *s = &sk->segs[i];
        char part[1024];
        if (s->literal) {
            kp_snprintf(part, sizeof part, "%s", s->literal);
        } else {
            if (s->attr == stop) break;
            const kp_cond *eq = NULL;
            for (size_t k = 0; k < f->sk_eq_count; k++)
                if (f->sk_eq[k]->attr == s->attr) eq = f->sk_eq[k];
            if (!eq) break;
            if (operand_key_text(c, s->attr, s->width, &eq->value, part, sizeof part)) return -1;
        }
        size_t n = strlen(part);
        if (len + n + 1 > size) return -1;
        memcpy(buf + len, part, n + 1);
        len += n;
    }
    return 0;
}

/* "#pk = :pk AND <sort key condition>" */
static int key_condition(const ddb_request_ctx *c, const ddb_fetch *f, const char *pk, int with_header, expr *x)
{
    const char *pk_value = expr_value(x, av_string(pk));
    expr_append(x, "%s = %s", expr_name(x, f->placement->index->pk_attr), pk_value);
    const char *sk = expr_name(x, f->placement->index->sk_attr);
    if (c->after_sk && f->shape == c->pattern->paged) {
        /* a later page of a scatter-gather: strictly after the previous page's last sort key
         * (every item of a shard partition shares the prefix) */
        expr_append(x, " AND %s %s %s", sk, f->is_forward ? ">" : "<", expr_value(x, av_string(c->after_sk)));
        return 0;
    }
    const kp_cond *range = f->range;
    if (range && !has_operand(c, &range->value)) range = NULL; /* an optional parameter left out */
    const kp_cond *end = f->range_end && has_operand(c, &f->range_end->value) ? f->range_end : NULL;
    if (!range) range = end, end = NULL; /* the other bound alone */
    char base[2048];
    if (sk_prefix(c, f, range ? range->attr : NULL, base, sizeof base))
        return kp_error_set(c->err, KP_ERR_USAGE, NULL, 0, 0, "a parameter value does not fit the sort key of %s",
                            f->placement->index->name ? f->placement->index->name : "the table");
    if (with_header) {
        /* the header's sentinel sorts just before (!) or after ($) the "<CHILD>#" items; a
         * bound on the other side of it narrows the range (the planner only allows those) */
        char lo[3300], hi[3300];
        kp_snprintf(lo, sizeof lo, "%s!", f->entity->prefix);
        kp_snprintf(hi, sizeof hi, "%s$", f->entity->prefix);
        if (range) {
            int width = 0;
            for (size_t i = 0; i < f->placement->sk.count; i++)
                if (f->placement->sk.segs[i].attr == range->attr) width = f->placement->sk.segs[i].width;
            char v[1024];
            if (operand_key_text(c, range->attr, width, &range->value, v, sizeof v))
                return kp_error_set(c->err, KP_ERR_USAGE, NULL, 0, 0, "the value of %s does not fit the sort key", range->attr->name);
            if (range->op == KP_OP_GE) kp_snprintf(lo, sizeof lo, "%s%s", base, v);
            else if (range->op == KP_OP_GT) kp_snprintf(lo, sizeof lo, "%s%s$", base, v);
            else if (range->op == KP_OP_LE) kp_snprintf(hi, sizeof hi, "%s%s$", base, v);
            else if (range->op == KP_OP_LT) kp_snprintf(hi, sizeof hi, "%s%s", base, v);
        }
        /* riders sort just after the header, on the side the read starts from: a descending
         * read's upper bound takes the last of them */
        for (size_t i = 0; !f->is_forward && i < f->base.child_count; i++) {
            const ddb_fetch *r = kp_ddb_child(f, i);
            if (r->kind == DDB_RIDE && strcmp(r->ride_sk, hi) > 0) kp_snprintf(hi, sizeof hi, "%s", r->ride_sk);
        }
        const char *upper = expr_value(x, av_string(hi));
        expr_append(x, " AND %s BETWEEN %s AND %s", sk, expr_value(x, av_string(lo)), upper);
        return 0;
    }
    if (!range) {
        int literal_only = 1;
        for (size_t i = 0; i < f->placement->sk.count; i++) literal_only &= f->placement->sk.segs[i].attr == NULL;
        /* a look-up entry has one exact sort key; a prefix could also match longer ones */
        if (literal_only && base[0]) expr_append(x, " AND %s = %s", sk, expr_value(x, av_string(base)));
        else if (base[0]) expr_append(x, " AND begins_with(%s, %s)", sk, expr_value(x, av_string(base)));
        return 0;
    }
    int width = 0;
    for (size_t i = 0; i < f->placement->sk.count; i++)
        if (f->placement->sk.segs[i].attr == range->attr) width = f->placement->sk.segs[i].width;
    char v1[1024], v2[1024], a[3200], b[3200];
    if (operand_key_text(c, range->attr, width, &range->value, v1, sizeof v1))
        return kp_error_set(c->err, KP_ERR_USAGE, NULL, 0, 0, "the value of %s does not fit the sort key", range->attr->name);
    if (end) {
        /* both bounds on the attribute: one BETWEEN (the planner leaves a strict upper bound on
         * the key's last part a filter, as BETWEEN includes its upper end) */
        if (operand_key_text(c, end->attr, width, &end->value, v2, sizeof v2))
            return kp_error_set(c->err, KP_ERR_USAGE, NULL, 0, 0, "the value of %s does not fit the sort key", end->attr->name);
        int is_lower = range->op == KP_OP_GE || range->op == KP_OP_GT;
        const kp_cond *lo = is_lower ? range : end, *hi = is_lower ? end : range;
        const char *lo_v = is_lower ? v1 : v2, *hi_v = is_lower ? v2 : v1;
        kp_snprintf(a, sizeof a, "%s%s%s", base, lo_v, lo->op == KP_OP_GT ? "$" : "");
        kp_snprintf(b, sizeof b, "%s%s%s", base, hi_v, hi->op == KP_OP_LE ? "$" : "");
        const char *upper = expr_value(x, av_string(b));
        expr_append(x, " AND %s BETWEEN %s AND %s", sk, expr_value(x, av_string(a)), upper);
        return 0;
    }
    /* values of the range attribute are followed by "#..." in the key; '$' sorts just after '#'.
     * A one-sided range stops at the end of the prefix the equalities fix (base ends in '#':
     * base with '$' for it is past every key that starts with it), so it never reaches the
     * items of another equality value or of another entity that share the partition. */
    size_t base_len = strlen(base);
    int bounded = base_len > 0 && base[base_len - 1] == '#';
    char edge[2048];
    kp_snprintf(edge, sizeof edge, "%.*s%s", (int)(bounded ? base_len - 1 : 0), base, bounded ? "$" : "");
    switch (range->op) {
    case KP_OP_GE: case KP_OP_GT:
        kp_snprintf(a, sizeof a, "%s%s%s", base, v1, range->op == KP_OP_GT ? "$" : "");
        if (bounded) {
            const char *upper = expr_value(x, av_string(edge));
            expr_append(x, " AND %s BETWEEN %s AND %s", sk, expr_value(x, av_string(a)), upper);
        } else {
            expr_append(x, " AND %s %s %s", sk, range->op == KP_OP_GT ? ">" : ">=", expr_value(x, av_string(a)));
        }
        break;
    case KP_OP_LT: case KP_OP_LE:
        /* a key holding the value itself goes on ("<v>#..."): below "<v>", above "<v>$" */
        kp_snprintf(a, sizeof a, "%s%s%s", base, v1, range->op == KP_OP_LE ? "$" : "");
        if (bounded) {
            const char *lower = expr_value(x, av_string(base));
            expr_append(x, " AND %s BETWEEN %s AND %s", sk, lower, expr_value(x, av_string(a)));
        } else {
            expr_append(x, " AND %s < %s", sk, expr_value(x, av_string(a)));
        }
        break;
    case KP_OP_BETWEEN: {
        if (operand_key_text(c, range->attr, width, &range->upper, v2, sizeof v2))
            return kp_error_set(c->err, KP_ERR_USAGE, NULL, 0, 0, "the upper bound of %s does not fit the sort key", range->attr->name);
        kp_snprintf(a, sizeof a, "%s%s", base, v1);
        kp_snprintf(b, sizeof b, "%s%s$", base, v2);
        const char *upper = expr_value(x, av_string(b));
        expr_append(x, " AND %s BETWEEN %s AND %s", sk, expr_value(x, av_string(a)), upper);
        break;
    }
    case KP_OP_BEGINS_WITH:
        kp_snprintf(a, sizeof a, "%s%s", base, v1);
        expr_append(x, " AND begins_with(%s, %s)", sk, expr_value(x, av_string(a)));
        break;
    case KP_OP_EQ:
        kp_snprintf(a, sizeof a, "%s%s#", base, v1);
        expr_append(x, " AND begins_with(%s, %s)", sk, expr_value(x, av_string(a)));
        break;
    }
    /* the range only covers this entity's items: a lower bound below the prefix is fine
     * because the partition holds only "<PREFIX>#..." items of this index */
    return 0;
}

/* The attribute a condition reads on the items (a copy for a path), or NULL. */
static const kp_attr *filter_attr(const ddb_fetch *f, const kp_cond *c)
{
    return c->path_len ? kp_copy_on(f->entity->entity, c->path, c->path_len, c->attr) : c->attr;
}

static void filter_expression(const ddb_request_ctx *ctx, const ddb_fetch *f, expr *x)
{
    for (size_t i = 0; i < f->filter_count; i++) {
        const kp_cond *c = f->filters[i];
        const kp_attr *attr = filter_attr(f, c);
        if (!attr || !has_operand(ctx, &c->value)) continue;
        const char *name = expr_name(x, attr->name);
        const char *a = expr_value(x, operand_attribute_value(ctx, attr, &c->value));
        expr_append(x, "%s", x->text[0] ? " AND " : "");
        switch (c->op) {
        case KP_OP_EQ: expr_append(x, "%s = %s", name, a); break;
        case KP_OP_LT: expr_append(x, "%s < %s", name, a); break;
        case KP_OP_LE: expr_append(x, "%s <= %s", name, a); break;
        case KP_OP_GT: expr_append(x, "%s > %s", name, a); break;
        case KP_OP_GE: expr_append(x, "%s >= %s", name, a); break;
        case KP_OP_BEGINS_WITH: expr_append(x, "begins_with(%s, %s)", name, a); break;
        case KP_OP_BETWEEN:
            expr_append(x, "%s BETWEEN %s AND %s", name, a, expr_value(x, operand_attribute_value(ctx, attr, &c->upper)));
            break;
        }
    }
}

/* ---- requests -------------------------------------------------------------------------------- */

int64_t kp_ddb_param_int(const kp_params *params, const kp_param *param, int64_t fallback)
{
    const cJSON *v = param ? kp_params_get(params, param->name) : NULL;
    char buf[64];
    const char *t = v ? kp_data_number_text(v, NULL, buf, sizeof buf) : NULL;
    int64_t n = fallback;
    if (t && kp_int_parse(t, strlen(t), &n)) n = fallback;
    return n;
}

int64_t kp_ddb_request_limit(const ddb_request_ctx *c, const ddb_fetch *f)
{
    const kp_shape *s = f->shape;
    /* no Limit when the client tests conditions through other records or sorts: a cut
     * before the test would drop matches that lie further on. A FilterExpression on a
     * listing read in its order keeps the Limit, which counts the items evaluated: the
     * pages go on until enough match (execute.c run_query), except under token paging,
     * whose next page must start after the last item returned, not the last evaluated */
    if (!s || s->kind != KP_SHAPE_EACH || !f->is_server_ordered || f->is_client_filtered) return 0;
    if (f->filter_count && (s->page == KP_PAGE_TOKEN || f->shards > 1)) return 0;
    /* a page size given by a parameter: its value, else its declared default (an emitted
     * request carries the default, as the README says: the same request verify sends) */
    int64_t fallback = s->limit;
    if (s->limit_param && fallback <= 0 && cJSON_IsNumber(s->limit_param->default_value))
        fallback = (int64_t)s->limit_param->default_value->valuedouble;
    int64_t limit = s->limit_param ? kp_ddb_param_int(c->params, s->limit_param, fallback) : s->limit;
    if (limit <= 0) return 0;
    if (s->page == KP_PAGE_OFFSET) limit += kp_ddb_param_int(c->params, s->offset_param, 0);
    return limit;
}

cJSON *kp_ddb_query_request(const ddb_request_ctx *c, const ddb_fetch *f, const char *pk, int with_header, int64_t limit)
{
    expr x;
    expr_init(&x);
    if (key_condition(c, f, pk, with_header, &x)) {
        expr_free(&x);
        return NULL;
    }
    char key_text[sizeof x.text];
    kp_snprintf(key_text, sizeof key_text, "%s", x.text);
    x.text[0] = '\0';
    filter_expression(c, f, &x);
    cJSON *req = cJSON_CreateObject();
    cJSON_AddStringToObject(req, "TableName", c->table);
    if (f->placement->index->kind != DDB_BASE) cJSON_AddStringToObject(req, "IndexName", f->placement->index->name);
    cJSON_AddStringToObject(req, "KeyConditionExpression", key_text);
    if (x.text[0]) cJSON_AddStringToObject(req, "FilterExpression", x.text);
    cJSON_AddItemToObject(req, "ExpressionAttributeNames", x.names);
    cJSON_AddItemToObject(req, "ExpressionAttributeValues", x.values);
    cJSON_AddBoolToObject(req, "ScanIndexForward", f->is_forward);
    if (f->kind == DDB_COUNT) cJSON_AddStringToObject(req, "Select", "COUNT");
    if (limit > 0) cJSON_AddNumberToObject(req, "Limit", (double)limit);
    return req;
}

cJSON *kp_ddb_get_item_request(const char *table, const char *pk, const char *sk)
{
    cJSON *req = cJSON_CreateObject();
    cJSON_AddStringToObject(req, "TableName", table);
    cJSON *key = cJSON_AddObjectToObject(req, "Key");
    cJSON_AddItemToObject(key, "PK", av_string(pk));
    cJSON_AddItemToObject(key, "SK", av_string(sk));
    return req;
}

cJSON *kp_ddb_batch_get_request(const char *table, cJSON *keys)
{
    cJSON *req = cJSON_CreateObject();
    cJSON *t = cJSON_AddObjectToObject(cJSON_AddObjectToObject(req, "RequestItems"), table);
    cJSON_AddItemToObject(t, "Keys", keys);
    return req;
}

cJSON *kp_ddb_scan_request(const char *table, const ddb_fetch *f, cJSON *key)
{
    const kp_relation *rel = f->rel->relation;
    expr x;
    expr_init(&x);
    const char *key_value = expr_value(&x, key);
    const char *array = expr_name(&x, rel->array_attr->name);
    const char *entity = expr_value(&x, av_string(f->entity->entity->name));
    expr_append(&x, "%s = %s AND contains(%s, %s)", expr_name(&x, KP_DDB_TYPE_ATTR), entity, array, key_value);
    cJSON *req = cJSON_CreateObject();
    cJSON_AddStringToObject(req, "TableName", table);
    cJSON_AddStringToObject(req, "FilterExpression", x.text);
    cJSON_AddItemToObject(req, "ExpressionAttributeNames", x.names);
    cJSON_AddItemToObject(req, "ExpressionAttributeValues", x.values);
    return req;
}
