/*
 * execute.c — runs an access pattern's fetch tree against a live keyspace and
 * reassembles the declared response (backends/assemble.c).
 *
 * A fetch node runs over every record its parent node produced: one prepared SELECT per
 * parent record (per bucket of a bucketed table, per element of an array of keys),
 * all of them in flight at once on the client's connections, so a node costs one
 * round trip whatever its fan-out. Values are always bound, never spliced into the
 * text. The pattern's paged $each continues with Cassandra's paging state ("p:<hex>")
 * when the server gives the order; otherwise the client sorts, cuts and pages with the
 * oracle's token form (the last element's order-key values).
 * Invariant: what is measured (statements sent, round trips as the depth of the
 * chain of requests actually sent, rows returned) is counted here, never estimated.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/assemble.h"
#include "backends/cassandra/cql.h"
#include "backends/copies.h"
#include "core/data.h"
#include "core/oracle.h"

/* A record read and its context record (origin: the parent of the $each it is an element
 * of), backends/fetch.h. */
typedef kp_fetch_pair pair;
typedef kp_fetch_set pairs;

typedef struct req {
    pair at;                    /* the parent it was sent for */
    cJSON *rows;                /* owned */
    long rows_bytes;            /* the bytes of their cell values */
    int statics_only;           /* the partition's static columns alone: the parent, no child */
    int bucket;
    const cJSON *el;            /* the array element it was sent for (a per-element read) */
    const cJSON *tie;           /* the tie read's first clustering value (read_ties) */
    struct req *joins;          /* a continuation or tie read: the request whose answer it joins */
    int done, failed;
    kp_error error;
    uint8_t *paging;            /* more pages: the state */
    int32_t paging_len;
} req;

typedef struct run {
    kp_conn *conn;
    kp_cql_client *client;
    const kp_design *design;
    const kp_pattern *pattern;
    const kp_params *params;
    const char *ks;
    kp_fetched *fetched;
    kp_arena arena;
    uint8_t *page_state;        /* the paged fetch continues here */
    int32_t page_state_len;
    cJSON *after;               /* the client page token's values (bucketed reads restrict by its first) */
    char *next_state;           /* "p:<hex>" after this page */
    int requests;
    int root_added;             /* the statics' parent is the root */
    int statics_only;           /* build: the static columns alone (no range, LIMIT 1) */
    const cJSON *tie;           /* build: the rows whose first clustering column is this cell */
    int tied;                   /* read_ties sent its round trip: what follows is one step later */
    int untied;                 /* a read to the order's first part needed no tie read: its page's
                                   last rows did not tie (kp_result.is_cut_short) */
    int walked;                 /* the round trips a walk over range buckets added (walk_on) */
    struct pending *pending;    /* the SELECTs sent with the root's, answered at their own level */
    size_t pending_count;
    long items;
    long items_read;            /* rows the node sent (a COUNT: the rows it counted) */
    long bytes_read;            /* the bytes of their cell values */
    kp_error *err;
} run;

static int nomem(run *R) { return kp_error_set(R->err, KP_ERR_NOMEM, NULL, 0, 0, "out of memory"); }

static int pairs_push(pairs *p, kp_frec *rec, kp_frec *origin) { return kp_fetch_set_push(p, rec, origin, NULL); }

static void on_rows(void *ctx, const kp_cql_response *response, const kp_cql_failure *failure)
{
    req *q = ctx;
    q->done = 1;
    if (failure) {
        q->failed = 1;
        q->error = failure->error;
        return;
    }
    q->rows = response->rows ? cJSON_Duplicate(response->rows, 1) : cJSON_CreateArray();
    q->rows_bytes = (long)response->rows_bytes;
    if (response->metadata.paging_state && response->metadata.paging_state_len > 0) {
        q->paging = malloc((size_t)response->metadata.paging_state_len);
        if (q->paging) {
            memcpy(q->paging, response->metadata.paging_state, (size_t)response->metadata.paging_state_len);
            q->paging_len = response->metadata.paging_state_len;
        }
    }
}

static const cJSON *param_value(run *R, const kp_param *p) { return p ? kp_params_get(R->params, p->name) : NULL; }

/* Where the strings that start with a prefix end: the prefix followed by the last code point
 * (a begins_with range's exclusive upper end, in the run's arena; NULL when out of memory). */
static char *prefix_end_text(run *R, const cJSON *prefix)
{
    return kp_arena_printf(&R->arena, "%s\xf4\x8f\xbf\xbf", cJSON_IsString(prefix) ? prefix->valuestring : "");
}

static int64_t int_of(const cJSON *v, int64_t fallback)
{
    char buf[64];
    const char *t = v ? kp_data_number_text(v, NULL, buf, sizeof buf) : NULL;
    return t ? strtoll(t, NULL, 10) : fallback;
}

static int add_value(run *R, kp_cql_values *v, const cq_column *c, const cJSON *value)
{
    cJSON *cell = kp_cq_to_cell(c, value, R->err);
    int rc = kp_cql_values_add_json(v, NULL, c->type, cell, R->err);
    cJSON_Delete(cell);
    return rc;
}

static int hex_value(int c) { return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1; }

/* Does a condition without hops hold on a record? */
static int cond_holds(run *R, const kp_cond *c, const cJSON *rec)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(rec, c->attr->name);
    const cJSON *x = c->value.param ? kp_params_get(R->params, c->value.param->name) : c->value.literal;
    if (!x) return 1;
    const cJSON *up = c->op == KP_OP_BETWEEN ? (c->upper.param ? kp_params_get(R->params, c->upper.param->name) : c->upper.literal) : NULL;
    return kp_cond_holds(c->op, c->attr->type.kind, v, x, up, R->design->model->doc);
}

/* The LIMIT a fetch sends (0: none): an offset page's covers the offset too, which *skip
 * tells. */
static int64_t sent_limit(run *R, const cq_fetch *f, int64_t *skip)
{
    int64_t limit = f->limit_param ? int_of(param_value(R, f->limit_param), f->limit) : f->limit;
    int64_t off = 0;
    const kp_shape *sh = f->shape;
    if (limit > 0 && sh && sh == R->pattern->paged && sh->page == KP_PAGE_OFFSET) {
        off = int_of(param_value(R, sh->offset_param), 0);
        if (off < 0) off = 0;
    }
    if (skip) *skip = off;
    if (limit > 0 && kp_cq_reads_one_more(f, R->pattern)) limit++;
    return limit > 0 ? limit + off : limit;
}

/* A later page's token value of the order part the first clustering column holds (NULL: a
 * first page, or a token without it). */
static const cJSON *token_first(run *R, const cq_fetch *f)
{
    const kp_shape *sh = f->shape;
    if (!R->after || !sh || sh != R->pattern->paged) return NULL;
    const cJSON *tv = R->after->child;
    for (size_t k = 0; k < sh->order_count && tv && kp_cq_partition_binds(f->table, sh->order[k].attr); k++) tv = tv->next;
    return tv && !cJSON_IsNull(tv) ? tv : NULL;
}

/* The statement and values of a fetch for one parent (and bucket / element). */
static int build(run *R, const cq_fetch *f, const kp_frec *parent, int bucket, const cJSON *element, const char **cql,
                 kp_cql_values *v, int *page_size)
{
    const cq_table *t = f->table;
    char q1[300], q2[300];
    kp_cql_quote_identifier(R->ks, q1, sizeof q1);
    kp_cql_quote_identifier(t->name, q2, sizeof q2);
    const char *s = kp_arena_printf(&R->arena, "%s FROM %s.%s WHERE ", f->kind == CQ_COUNT ? "SELECT COUNT(*)" : "SELECT *", q1, q2);
    int first = 1;
    for (size_t i = 0; i < f->bind_count; i++) {
        const cq_bind *b = &f->binds[i];
        const cJSON *val = NULL;
        switch (b->src) {
        case CQ_SRC_PARAM: val = param_value(R, b->param); break;
        case CQ_SRC_LITERAL: val = b->literal; break;
        case CQ_SRC_PARENT: val = b->is_element ? element : parent ? cJSON_GetObjectItemCaseSensitive(parent->object, b->from->name) : NULL; break;
        case CQ_SRC_BUCKET: break;
        }
        if (!val || cJSON_IsNull(val)) return 1; /* nothing to read */
        s = kp_arena_printf(&R->arena, "%s%s%s = ?", s, first ? "" : " AND ", b->col->quoted);
        first = 0;
        if (add_value(R, v, b->col, val)) return -1;
    }
    if (t->has_bucket) {
        s = kp_arena_printf(&R->arena, "%s%sbucket = ?", s, first ? "" : " AND ");
        cJSON *b = kp_data_int(bucket);
        int rc = kp_cql_values_add_json(v, NULL, t->cols[t->pk_count - 1].type, b, R->err);
        cJSON_Delete(b);
        if (rc) return -1;
    }
    const cq_column *rc_col = f->range_col;
    const kp_shape *sh = f->shape;
    int64_t limit = sent_limit(R, f, NULL);
    if (R->tie) {
        /* the rows tying with a full bucket's last on the first clustering column: all of them */
        const cq_column *c0 = &t->cols[t->pk_count];
        *cql = kp_arena_printf(&R->arena, "%s AND %s = ?%s", s, c0->quoted, kp_cq_order_by(&R->arena, f));
        *page_size = 0;
        return kp_cql_values_add_json(v, NULL, c0->type, R->tie, R->err) ? -1 : 0;
    }
    /* a later page of a bucket read to the order's first part (reads_ties) starts past the
     * token's value of that part (the rows at that value are a tie read of their own beside
     * it, select_start): that bound replaces the range's bound on the same side (the token's
     * row met the range) */
    const cJSON *from = NULL;
    int from_lower = 0;
    if (limit > 0 && f->reads_ties && (from = token_first(R, f)) != NULL) from_lower = t->cols[t->pk_count].is_desc == f->is_reversed;
    /* a later page of a merged bucketed read starts every bucket strictly after the token:
     * one tuple slice over the clustering columns (all in one direction, see propose.c
     * buckets_merge), whose values are the token's order values; NULL where the token has no
     * value for one of them (the bucket is then read whole) */
    int is_merged_after = limit > 0 && R->after && f->is_merged && !f->reads_ties && sh == R->pattern->paged;
    const cJSON *slice_from = NULL;
    if (is_merged_after) {
        const cJSON *tv = R->after->child;
        size_t c = t->pk_count;
        slice_from = tv;
        for (size_t k = 0; k < sh->order_count && c < t->pk_count + t->ck_count; k++, tv = tv ? tv->next : NULL) {
            if (kp_cq_partition_binds(t, sh->order[k].attr)) continue;
            if (!tv || cJSON_IsNull(tv)) { slice_from = NULL; limit = 0; break; }
            c++;
        }
    }
    /* Cassandra does not mix a tuple relation with single-column ones on clustering columns:
     * beside the slice, a range on the first clustering column is written as 1-tuples, and its
     * bound on the slice's side goes (the token's row met the range, so the slice is tighter) */
    const cq_column *c0 = &t->cols[t->pk_count];
    int is_tuple_range = slice_from && rc_col == c0;
    if (!R->statics_only) {
        /* the bounds on the range column: the range's, one side replaced by the token's */
        const char *lo_op = NULL, *hi_op = NULL;
        const cJSON *lo_v = NULL, *hi_v = NULL;
        cJSON *prefix_end = NULL;
        const cq_column *col = rc_col ? rc_col : &t->cols[t->pk_count];
        if (f->range && rc_col) {
            const cJSON *lo = f->range->value.param ? param_value(R, f->range->value.param) : f->range->value.literal;
            if (lo) {
                switch (f->range->op) {
                case KP_OP_BETWEEN:
                    hi_v = f->range->upper.param ? param_value(R, f->range->upper.param) : f->range->upper.literal;
                    if (!hi_v) return 1;
                    lo_op = ">=", lo_v = lo, hi_op = "<=";
                    break;
                case KP_OP_BEGINS_WITH:
                    prefix_end = cJSON_CreateString(prefix_end_text(R, lo));
                    if (!prefix_end) return nomem(R);
                    lo_op = ">=", lo_v = lo, hi_op = "<", hi_v = prefix_end;
                    break;
                case KP_OP_LT: hi_op = "<", hi_v = lo; break;
                case KP_OP_LE: hi_op = "<=", hi_v = lo; break;
                case KP_OP_GT: lo_op = ">", lo_v = lo; break;
                default: lo_op = ">=", lo_v = lo; break;
                }
            }
            const kp_cond *hc = f->range_hi;
            const cJSON *other = !hc ? NULL : hc->value.param ? param_value(R, hc->value.param) : hc->value.literal;
            if (other && (hc->op == KP_OP_LT || hc->op == KP_OP_LE)) hi_op = hc->op == KP_OP_LT ? "<" : "<=", hi_v = other;
            else if (other) lo_op = hc->op == KP_OP_GT ? ">" : ">=", lo_v = other;
        }
        if (from && from_lower) lo_op = ">", lo_v = from;
        else if (from) hi_op = "<", hi_v = from;
        if (is_tuple_range && c0->is_desc != f->is_reversed) hi_op = NULL;
        else if (is_tuple_range) lo_op = NULL;
        const char *open = is_tuple_range ? "(" : "", *close = is_tuple_range ? ")" : "";
        int rc = 0;
        if (lo_op) {
            s = kp_arena_printf(&R->arena, "%s AND %s%s%s %s %s?%s", s, open, col->quoted, close, lo_op, open, close);
            rc = add_value(R, v, col, lo_v);
        }
        if (hi_op && rc == 0) {
            s = kp_arena_printf(&R->arena, "%s AND %s%s%s %s %s?%s", s, open, col->quoted, close, hi_op, open, close);
            rc = add_value(R, v, col, hi_v);
        }
        cJSON_Delete(prefix_end);
        if (rc) return -1;
    }
    if (R->statics_only) {
        *cql = kp_arena_printf(&R->arena, "%s LIMIT 1", s);
        *page_size = 0;
        return 0;
    }
    if (slice_from) {
        const char *cols = "", *marks = "";
        const cJSON *tv = slice_from;
        size_t c = t->pk_count;
        for (size_t k = 0; k < sh->order_count && c < t->pk_count + t->ck_count && tv; k++, tv = tv->next) {
            if (kp_cq_partition_binds(t, sh->order[k].attr)) continue;
            cols = kp_arena_printf(&R->arena, "%s%s%s", cols, *cols ? ", " : "", t->cols[c].quoted);
            marks = kp_arena_printf(&R->arena, "%s%s?", marks, *marks ? ", " : "");
            if (add_value(R, v, &t->cols[c], tv)) return -1;
            c++;
        }
        if (*cols) s = kp_arena_printf(&R->arena, "%s AND (%s) %s (%s)", s, cols, c0->is_desc != f->is_reversed ? "<" : ">", marks);
    }
    s = kp_arena_printf(&R->arena, "%s%s", s, kp_cq_order_by(&R->arena, f));
    if (limit > 0) {
        s = kp_arena_printf(&R->arena, "%s LIMIT %lld", s, (long long)limit);
    }
    *page_size = 0;
    const kp_shape *ps = f->shape ? f->shape : R->pattern->paged; /* a join's page is its targets' */
    if (f->is_paged && ps) *page_size = (int)(ps->limit_param ? int_of(param_value(R, ps->limit_param), ps->limit) : ps->limit);
    *cql = s;
    return 0;
}


static int link_record(run *R, const cq_fetch *f, const pair *at, kp_frec *rec, pairs *out)
{
    if (f->is_root && !f->has_statics) {
        if (kp_fetched_add_root(R->fetched, rec)) return nomem(R);
        return pairs_push(out, rec, rec) ? nomem(R) : 0;
    }
    if (f->edge_rel) {
        if (at->rec && kp_fetched_link(R->fetched, f->edge_rel, at->rec, rec)) return nomem(R);
        return pairs_push(out, rec, rec) ? nomem(R) : 0;
    }
    if (f->shape && !kp_cq_next_hop(f)) {
        if (kp_fetched_link(R->fetched, f->shape, at->origin, rec)) return nomem(R);
        return pairs_push(out, rec, rec) ? nomem(R) : 0;
    }
    /* an intermediate hop or a join row: its records lead to the next hop for the same context */
    return pairs_push(out, rec, at->origin) ? nomem(R) : 0;
}

typedef struct reqs {
    req **items;
    size_t count, cap;
    int walk_step;              /* a walk over range buckets (+1 / -1; 0: every bucket at once) */
    int walk_next, walk_end;    /* the bucket it reads next, the last it may read */
} reqs;

static void reqs_free(reqs *Q)
{
    for (size_t i = 0; i < Q->count; i++) {
        cJSON_Delete(Q->items[i]->rows);
        free(Q->items[i]->paging);
        free(Q->items[i]);
    }
    free(Q->items);
    Q->items = NULL;
    Q->count = Q->cap = 0;
}

/* Sends one request of a node: for a parent, a bucket and an element; `statics_only`: the
 * partition's static columns alone (no clustering range, LIMIT 1). */
/* After an error: let what is still in flight come back (its answers are not used). */
static void drain(run *R)
{
    while (kp_cql_pending(R->client) > 0 && kp_cql_poll(R->client, 1000, R->err) >= 0) {}
}

/* Waits until every request of Q is answered. */
static int wait_all(run *R, const reqs *Q)
{
    for (;;) {
        size_t open = 0;
        for (size_t i = 0; i < Q->count; i++) open += !Q->items[i]->done;
        if (!open) return 0;
        if (kp_cql_poll(R->client, 1000, R->err) < 0) return -1;
    }
}

/* Sends one request (R->tie: a tie read); `paging`: continue a previous answer there. */
static int send_req(run *R, const cq_fetch *f, reqs *Q, const pair *at, int bucket, const cJSON *el, int statics_only,
                    const uint8_t *paging, int32_t paging_len)
{
    if (Q->count == Q->cap) {
        size_t n = Q->cap ? Q->cap * 2 : 16;
        req **bigger = realloc(Q->items, n * sizeof *bigger);
        if (!bigger) return nomem(R);
        Q->items = bigger;
        Q->cap = n;
    }
    const char *cql = NULL;
    kp_cql_values v = {0};
    int page_size = 0;
    R->statics_only = statics_only;
    int built = build(R, f, at->rec, bucket, el, &cql, &v, &page_size);
    R->statics_only = 0;
    if (built) { kp_cql_values_free(&v); return built < 0 ? -1 : 0; }
    const kp_cql_prepared *prep = NULL;
    if (kp_cql_prepare(R->client, cql, &prep, R->err)) { kp_cql_values_free(&v); return -1; }
    req *q = calloc(1, sizeof *q);   /* its address is the callback's: never moved */
    if (!q) { kp_cql_values_free(&v); return nomem(R); }
    Q->items[Q->count++] = q;
    q->at = *at;
    q->bucket = bucket;
    q->el = el;
    q->tie = R->tie;
    q->statics_only = statics_only;
    kp_cql_params params = {0};
    params.page_size = page_size > 0 ? page_size : KP_CQ_PAGE_ROWS;
    params.paging_state = paging;
    params.paging_state_len = paging ? paging_len : 0;
    int rc = kp_cql_execute_async(R->client, prep, &v, &params, on_rows, q, R->err);
    kp_cql_values_free(&v);
    if (rc == 0) R->requests++;
    else q->done = 1;
    return rc;
}

static int send_one(run *R, const cq_fetch *f, reqs *Q, const pair *at, int bucket, const cJSON *el, int statics_only)
{
    int paged = f->is_paged && R->page_state && !statics_only;
    return send_req(R, f, Q, at, bucket, el, statics_only, paged ? R->page_state : NULL, paged ? R->page_state_len : 0);
}

/* A read that is not the pattern's paged one takes every page of its answer: each request
 * whose answer says more rows follow is continued with its paging state (the claims count
 * these pages, propose.c price_fetch: 5,000 rows each) and the rows join its answer. */
static int read_all_pages(run *R, const cq_fetch *f, reqs *Q)
{
    if (f->is_paged || f->kind == CQ_COUNT) return 0;
    int rc = 0;
    for (;;) {
        reqs N = {0};
        for (size_t i = 0; i < Q->count && rc == 0; i++) {
            req *q = Q->items[i];
            if (q->failed || q->statics_only || !q->paging) continue;
            size_t before = N.count;
            R->tie = q->tie;
            rc = send_req(R, f, &N, &q->at, q->bucket, q->el, 0, q->paging, q->paging_len);
            R->tie = NULL;
            if (N.count > before) N.items[N.count - 1]->joins = q;
            free(q->paging);
            q->paging = NULL;
        }
        if (rc == 0) rc = wait_all(R, &N);
        else drain(R);
        for (size_t j = 0; j < N.count && rc == 0; j++) {
            req *nq = N.items[j], *q = nq->joins;
            if (nq->failed) { *R->err = nq->error; rc = -1; break; }
            cJSON *row;
            while ((row = nq->rows ? nq->rows->child : NULL) != NULL) {
                cJSON_DetachItemViaPointer(nq->rows, row);
                cJSON_AddItemToArray(q->rows, row);
            }
            q->rows_bytes += nq->rows_bytes;
            q->paging = nq->paging;
            q->paging_len = nq->paging_len;
            nq->paging = NULL;
        }
        size_t sent = N.count;
        reqs_free(&N);
        if (rc || !sent) return rc;
    }
}

/* A range's bound on the first clustering column: `upper` 0 the lower, 1 the upper (NULL:
 * none). */
static const cJSON *range_bound(run *R, const cq_fetch *f, int upper)
{
    const cq_table *t = f->table;
    const cJSON *v = NULL;
    for (int k = 0; k < 2; k++) {
        const kp_cond *c = k ? f->range_hi : f->range;
        if (!c || f->range_col != &t->cols[t->pk_count]) continue;
        const cJSON *x = c->value.param ? param_value(R, c->value.param) : c->value.literal;
        if (!x) continue;
        if (c->op == KP_OP_BETWEEN) {
            if (upper) v = c->upper.param ? param_value(R, c->upper.param) : c->upper.literal;
            else v = x;
        } else if ((c->op == KP_OP_LT || c->op == KP_OP_LE) == upper) {
            v = x;
        }
    }
    return v;
}

/* Does a read walk a range-bucketed table's buckets in order (cq_table.bounds)? A read in
 * the clustering order with a LIMIT, for one parent: it starts in the bucket where its
 * range (or the page token) starts and reads the next only while the page is not full. */
static int walks_buckets(run *R, const cq_fetch *f, const pairs *in)
{
    return kp_cq_walks_buckets(f) && in->count == 1 && sent_limit(R, f, NULL) > 0;
}

/* The buckets a walk reads, first to last, and its direction. */
static void walk_span(run *R, const cq_fetch *f, int *first, int *last, int *step)
{
    const cq_table *t = f->table;
    int ascending = t->cols[t->pk_count].is_desc == f->is_reversed;
    const cJSON *lo = range_bound(R, f, 0), *hi = range_bound(R, f, 1);
    /* a later page starts where the token's row is: its value of the order's part the
     * first clustering column holds */
    const cJSON *tv = token_first(R, f);
    /* a prefix's rows end before the prefix followed by the last code point */
    cJSON prefix_end = {0};
    if (lo && !hi && f->range && f->range->op == KP_OP_BEGINS_WITH && cJSON_IsString(lo) &&
        (prefix_end.valuestring = prefix_end_text(R, lo)) != NULL) {
        prefix_end.type = cJSON_String;
        hi = &prefix_end;
    }
    if (tv && ascending) lo = tv;
    else if (tv) hi = tv;
    int b_lo = lo ? kp_cq_range_bucket(t, lo) : 0, b_hi = hi ? kp_cq_range_bucket(t, hi) : t->buckets - 1;
    if (b_hi < b_lo) b_hi = b_lo;
    *first = ascending ? b_lo : b_hi;
    *last = ascending ? b_hi : b_lo;
    *step = ascending ? 1 : -1;
}

/* Reads on while the walk's rows do not fill the page: the next bucket, one round trip each. */
static int walk_on(run *R, const cq_fetch *f, reqs *Q)
{
    int64_t limit = sent_limit(R, f, NULL);
    int rc = 0;
    while (rc == 0 && Q->walk_step && Q->count && (Q->walk_end - Q->walk_next) * Q->walk_step >= 0) {
        int64_t rows = 0;
        for (size_t i = 0; i < Q->count; i++)
            if (!Q->items[i]->statics_only && !Q->items[i]->tie && !Q->items[i]->failed) rows += cJSON_GetArraySize(Q->items[i]->rows);
        if (rows >= limit) break;
        const req *first = NULL;
        for (size_t i = 0; i < Q->count && !first; i++)
            if (!Q->items[i]->statics_only && !Q->items[i]->tie) first = Q->items[i];
        if (!first) break;
        size_t before = Q->count;
        rc = send_one(R, f, Q, &first->at, Q->walk_next, NULL, 0);
        Q->walk_next += Q->walk_step;
        R->walked++;
        if (rc == 0 && Q->count > before) rc = wait_all(R, Q);
        if (rc == 0) rc = read_all_pages(R, f, Q);
    }
    return rc;
}

/* A later page of a read to the order's first part (reads_ties) starts past the token's
 * value of that part: the rows at that value, which may sort after the token, are read beside
 * it, from `bucket` (a range bucket: the one that value falls in; -1: every bucket). */
static int send_token_ties(run *R, const cq_fetch *f, reqs *Q, const pair *at, int bucket)
{
    const cJSON *tv = f->reads_ties && sent_limit(R, f, NULL) > 0 ? token_first(R, f) : NULL;
    if (!tv) return 0;
    int buckets = f->table->buckets > 1 ? f->table->buckets : 1, rc = 0;
    R->tie = tv;
    for (int b = bucket < 0 ? 0 : bucket; b < (bucket < 0 ? buckets : bucket + 1) && rc == 0; b++) rc = send_one(R, f, Q, at, b, NULL, 0);
    R->tie = NULL;
    return rc;
}

/* Sends every request of a node (one per parent, bucket, element); answers come later. A
 * parent read from static columns under a clustering range also gets its statics alone,
 * in the same round trip: a range that holds no row still finds the parent. A walk over
 * range buckets sends its first bucket only (walk_on reads on). */
static int select_start(run *R, const cq_fetch *f, const pairs *in, reqs *Q)
{
    const cq_table *t = f->table;
    int buckets = t->buckets > 1 ? t->buckets : 1;
    int rc = 0;
    if (walks_buckets(R, f, in)) {
        int first, last, step;
        walk_span(R, f, &first, &last, &step);
        rc = send_one(R, f, Q, &in->items[0], first, NULL, 0);
        Q->walk_step = step;
        Q->walk_next = first + step;
        Q->walk_end = last;
        if (rc == 0 && f->has_statics && f->range) rc = send_one(R, f, Q, &in->items[0], 0, NULL, 1);
        if (rc == 0) rc = send_token_ties(R, f, Q, &in->items[0], first);
        return rc;
    }
    for (size_t i = 0; i < in->count && rc == 0; i++) {
        const pair *at = &in->items[i];
        const cJSON *elements = NULL;
        if (f->bind_count && f->binds[0].is_element && at->rec) {
            elements = cJSON_GetObjectItemCaseSensitive(at->rec->object, f->binds[0].from->name);
            if (!cJSON_IsArray(elements)) continue;
        }
        const cJSON *el = elements ? elements->child : NULL;
        do {
            for (int b = 0; b < buckets && rc == 0; b++) rc = send_one(R, f, Q, at, b, el, 0);
            el = el ? el->next : NULL;
        } while (el && rc == 0);
        if (rc == 0 && f->kind == CQ_SELECT && f->has_statics && f->range && !elements) rc = send_one(R, f, Q, at, 0, NULL, 1);
        if (rc == 0 && f->kind == CQ_SELECT && !elements) rc = send_token_ties(R, f, Q, at, t->bounds ? kp_cq_range_bucket(t, token_first(R, f)) : -1);
    }
    return rc;
}

/* Are two rows of one table the same row (equal primary key cells)? */
static int same_row(const cq_table *t, const cJSON *a, const cJSON *b)
{
    for (size_t c = 0; c < t->pk_count + t->ck_count; c++)
        if (!cJSON_Compare(cJSON_GetObjectItemCaseSensitive(a, t->cols[c].name), cJSON_GetObjectItemCaseSensitive(b, t->cols[c].name), 1))
            return 0;
    return 1;
}

/* cq_fetch.reads_ties: every bucket that answered a full page is read again for the rows
 * whose first clustering column equals its last row's — one more round trip — and those
 * not already read join that bucket's answer, so the page cut sees every row that may
 * sort into it. Where the read takes one row more than the page, a bucket whose last two
 * rows differ there is complete: only its last row's value has rows unread, and they sort
 * after the page. */
static int read_ties(run *R, const cq_fetch *f, reqs *Q, int depth)
{
    const cq_table *t = f->table;
    int64_t limit = sent_limit(R, f, NULL);
    if (limit <= 0) return 0;
    reqs T = {0};
    int rc = 0;
    const char *c0 = t->cols[t->pk_count].name;
    int one_more = kp_cq_reads_one_more(f, R->pattern);
    for (size_t i = 0; i < Q->count && rc == 0; i++) {
        req *q = Q->items[i];
        if (q->failed || q->statics_only || q->tie || cJSON_GetArraySize(q->rows) < limit) continue;
        const cJSON *last = q->rows->child, *page_last = NULL;
        while (last->next) { page_last = last; last = last->next; }
        R->tie = cJSON_GetObjectItemCaseSensitive(last, c0);
        /* the row after the page (one more is read) that does not tie with the page's last:
         * every row that ties with one of the page sorts before it, and was read */
        if (one_more && page_last && R->tie && !kp_data_equal(cJSON_GetObjectItemCaseSensitive(page_last, c0), R->tie, NULL))
            R->tie = NULL;
        if (R->tie && !cJSON_IsNull(R->tie)) {
            size_t before = T.count;
            rc = send_one(R, f, &T, &q->at, q->bucket, NULL, 0);
            if (T.count > before) T.items[T.count - 1]->joins = q;
        }
        R->tie = NULL;
    }
    if (rc == 0 && T.count) {
        rc = wait_all(R, &T);
        if (rc == 0) rc = read_all_pages(R, f, &T);
        R->tied = 1;
    } else if (rc) {
        drain(R);
    } else {
        R->untied = 1;
    }
    for (size_t j = 0; j < T.count && rc == 0; j++) {
        req *tq = T.items[j], *q = tq->joins;
        if (tq->failed) { *R->err = tq->error; rc = -1; break; }
        R->bytes_read += tq->rows_bytes;
        cJSON *row;
        while (rc == 0 && (row = tq->rows ? tq->rows->child : NULL) != NULL) {
            cJSON_DetachItemViaPointer(tq->rows, row);
            int seen = 0;
            for (const cJSON *r = q->rows->child; r && !seen; r = r->next) seen = same_row(t, r, row);
            if (seen) {
                R->items_read++; /* read again: counted as read, not joined */
                cJSON_Delete(row);
            } else {
                cJSON_AddItemToArray(q->rows, row);
            }
        }
    }
    reqs_free(&T);
    return rc;
}

/* A merged bucketed read (cq_fetch.is_merged): every bucket answered up to the page; of
 * each parent's rows only its page goes on to the next hops (the assembler cuts the same
 * page from all of them and still sees whether another follows). The requests of one
 * parent are adjacent; ends[i] is out's count after request i. */
static int merge_buckets(run *R, const cq_fetch *f, const reqs *Q, const size_t *ends, size_t first_out, pairs *out)
{
    int64_t skip = 0, limit = sent_limit(R, f, &skip);
    if (limit <= 0 || !f->shape || out->count == first_out) return 0;
    if (kp_cq_reads_one_more(f, R->pattern)) limit--; /* that row only tells that another page follows */
    kp_frec **recs = malloc((out->count - first_out) * sizeof *recs);
    if (!recs) return nomem(R);
    size_t w = first_out, at = first_out;
    for (size_t i = 0; i < Q->count; ) {
        const kp_frec *parent = Q->items[i]->at.origin;
        while (i + 1 < Q->count && Q->items[i + 1]->at.origin == parent) i++;
        size_t n = 0;
        for (; at < ends[i]; at++) recs[n++] = out->items[at].rec;
        i++;
        size_t kept = kp_fetched_page_cut(R->fetched, f->shape, f->shape == R->pattern->paged, skip, limit - skip, recs, n);
        for (size_t k = 0; k < kept; k++) out->items[w++] = (pair){recs[k], recs[k], NULL};
    }
    out->count = w;
    free(recs);
    return 0;
}

/* Adds to obj the attributes (`attrs`) a row of t copies in its columns `cols` (n of them);
 * -1 when a cell does not decode (R->err). */
static int add_copied_cells(run *R, const cq_table *t, const size_t *cols, const kp_attr *const *attrs, size_t n,
                            const cJSON *row, cJSON *obj)
{
    for (size_t k = 0; k < n; k++) {
        const cq_column *col = &t->cols[cols[k]];
        cJSON *v = kp_cq_from_cell(col, cJSON_GetObjectItemCaseSensitive(row, col->name), R->err);
        if (!v && R->err->code) return -1;
        if (v) cJSON_AddItemToObject(obj, attrs[k]->name, v);
    }
    return 0;
}

/* The records an array of references gives from the copies a row holds (c, a CQ_COPY child
 * of f over the array): one per element, in the array's order, made of the element (the
 * target's key) and its value in each copied list, linked as the listing's elements. */
static int link_array_copies(run *R, const cq_fetch *f, const cq_fetch *c, const cJSON *row, kp_frec *rec)
{
    cJSON *lists = cJSON_CreateObject();
    if (!lists) return nomem(R);
    /* the lists, decoded once, under the copied attributes' names */
    if (add_copied_cells(R, f->table, c->copy_cols, c->copy_attrs, c->copy_count, row, lists)) { cJSON_Delete(lists); return -1; }
    const cJSON *refs = cJSON_GetObjectItemCaseSensitive(rec->object, c->rel->relation->array_attr->name);
    size_t n_lists = c->copy_count < KP_COPY_ATTRS ? c->copy_count : KP_COPY_ATTRS;
    const cJSON *by_attr[KP_COPY_ATTRS] = {0};
    for (size_t k = 0; k < n_lists; k++) by_attr[k] = cJSON_GetObjectItemCaseSensitive(lists, c->copy_attrs[k]->name);
    int n = 0, rc = 0;
    for (const cJSON *ref = cJSON_IsArray(refs) ? refs->child : NULL; ref && rc == 0; ref = ref->next, n++) {
        cJSON *obj = kp_copy_element_target(c->rel, ref, c->copy_attrs, by_attr, n_lists, n);
        if (!obj) { rc = nomem(R); break; }
        kp_frec *target = kp_fetched_add(R->fetched, c->entity, obj);
        if (!target || kp_fetched_link(R->fetched, c->shape, rec, target)) rc = nomem(R);
    }
    cJSON_Delete(lists);
    return rc;
}

/* The records a row's copies give (cq_column.via): for each CQ_COPY child of f, the
 * referenced record made of the row's foreign key and the copied columns, linked under
 * the child's relation; none where the row references nothing. */
static int link_copies(run *R, const cq_fetch *f, const cJSON *row, kp_frec *rec)
{
    for (size_t i = 0; i < f->base.child_count; i++) {
        const cq_fetch *c = kp_cq_child(f, i);
        if (c->kind != CQ_COPY) continue;
        if (c->rel->relation->link == KP_LINK_ARRAY) {
            if (link_array_copies(R, f, c, row, rec)) return -1;
            continue;
        }
        int is_nomem;
        cJSON *obj = kp_copy_target_key(c->rel, rec->object, &is_nomem);
        if (!obj) { if (is_nomem) return nomem(R); continue; }
        if (add_copied_cells(R, f->table, c->copy_cols, c->copy_attrs, c->copy_count, row, obj)) { cJSON_Delete(obj); return -1; }
        kp_frec *target = kp_fetched_add(R->fetched, c->entity, obj);
        /* linked as the hop's own read would be: under a leaf's relation, or under its "$one" */
        const void *edge = c->edge_rel ? (const void *)c->edge_rel : (const void *)c->shape;
        if (!target || kp_fetched_link(R->fetched, edge, rec, target)) return nomem(R);
    }
    return 0;
}

/* Waits for a node's answers and turns its rows into linked records. `owner` (non-NULL)
 * replaces the parent every request was sent for (requests sent before their parent was
 * read, bound from the parameters). */
static int select_finish(run *R, const cq_fetch *f, reqs *Q, int depth, const pair *owner, pairs *out)
{
    const cq_table *t = f->table;
    size_t first_out = out->count;
    /* everything of this node is in flight at once: one round trip (a walk over range
     * buckets: one more for each bucket it reads on to) */
    int rc = wait_all(R, Q);
    if (rc == 0) rc = read_all_pages(R, f, Q);
    if (rc == 0) rc = walk_on(R, f, Q);
    if (rc == 0 && f->reads_ties) rc = read_ties(R, f, Q, depth);
    size_t nreq = Q->count;
    size_t *ends = f->is_merged && rc == 0 ? calloc(nreq + 1, sizeof *ends) : NULL;
    if (f->is_merged && rc == 0 && !ends) rc = nomem(R);
    for (size_t i = 0; i < nreq && rc == 0; i++) {
        req *q = Q->items[i];
        if (q->failed) { *R->err = q->error; rc = -1; break; }
        if (owner) q->at = *owner;
        if (f->kind == CQ_COUNT) {
            const cJSON *row = q->rows ? q->rows->child : NULL;
            const cJSON *n = row ? row->child : NULL;
            R->items_read += (long)int_of(n, 0);
            if (kp_fetched_set_count(R->fetched, f->shape, q->at.origin, (long)int_of(n, 0))) rc = nomem(R);
            continue;
        }
        R->items_read += cJSON_GetArraySize(q->rows);
        R->bytes_read += q->rows_bytes;
        if (f->is_paged && q->paging) {
            size_t len = 2 + (size_t)q->paging_len * 2 + 1;
            free(R->next_state);
            R->next_state = malloc(len);
            if (R->next_state) {
                strcpy(R->next_state, "p:");
                for (int32_t k = 0; k < q->paging_len; k++) sprintf(R->next_state + 2 + k * 2, "%02x", q->paging[k]);
            }
        }
        kp_frec *root = NULL;
        for (const cJSON *row = q->rows ? q->rows->child : NULL; row && rc == 0; row = row->next) {
            if (f->has_statics && !root) {
                /* the parent from the static columns (bucket 0 holds them like every bucket) */
                cJSON *parent = kp_cq_record_of(t, row, 1, R->err);
                if (!parent) { rc = R->err->code ? -1 : nomem(R); break; }
                root = kp_fetched_add(R->fetched, t->parent, parent);
                if (!root) { rc = nomem(R); break; }
                if (!R->root_added) {
                    if (kp_fetched_add_root(R->fetched, root)) { rc = nomem(R); break; }
                    R->root_added = 1;
                }
            }
            if (q->statics_only) break; /* the parent alone: its first row may be any child */
            if (t->ck_count) {
                const cJSON *ck = cJSON_GetObjectItemCaseSensitive(row, t->cols[t->pk_count].name);
                if (!ck || cJSON_IsNull(ck)) continue; /* a static-only row: a parent without children */
            }
            cJSON *obj = kp_cq_record_of(t, row, 0, R->err);
            if (!obj) { rc = R->err->code ? -1 : nomem(R); break; }
            int keep = 1;
            for (size_t c = 0; c < f->client_cond_count && keep; c++)
                if (!f->client_conds[c]->path_len) keep = cond_holds(R, f->client_conds[c], obj);
            if (!keep) { cJSON_Delete(obj); continue; }
            if (f->is_join_keys) {
                /* the target's key, which the join row holds */
                int is_nomem = 0;
                cJSON *key = kp_copy_target_key(f->rel, obj, &is_nomem);
                cJSON_Delete(obj);
                obj = key;
                if (!obj) {
                    if (is_nomem) rc = nomem(R);
                    continue;
                }
                /* and the target's attributes the row copies (join_answers in propose.c) */
                if (add_copied_cells(R, t, f->copy_cols, f->copy_attrs, f->copy_count, row, obj)) {
                    cJSON_Delete(obj);
                    rc = -1;
                    break;
                }
            }
            kp_frec *rec = kp_fetched_add(R->fetched, f->is_join_keys ? f->rel->target : t->entity, obj);
            if (!rec) { rc = nomem(R); break; }
            R->items++;
            pair at = q->at;
            if (f->has_statics) at.origin = root;
            rc = link_record(R, f, &at, rec, out);
            if (rc == 0 && f->base.child_count) rc = link_copies(R, f, row, rec);
        }
        if (ends) ends[i] = out->count;
    }
    if (rc == 0 && ends) rc = merge_buckets(R, f, Q, ends, first_out, out);
    free(ends);
    return rc;
}

static int exec_keys(run *R, const cq_fetch *f, const pairs *in, pairs *out)
{
    const kp_rel *r = f->rel;
    const kp_relation *rel = r->relation;
    for (size_t i = 0; i < in->count; i++) {
        const pair *at = &in->items[i];
        if (!at->rec) continue;
        if (rel->link == KP_LINK_THROUGH) {
            kp_attr **theirs = r->is_inverse ? rel->through_from : rel->through_to;
            size_t n = r->is_inverse ? rel->through_from_count : rel->through_to_count;
            cJSON *obj = cJSON_CreateObject();
            for (size_t k = 0; k < n && k < r->target->key_count; k++) {
                const cJSON *v = cJSON_GetObjectItemCaseSensitive(at->rec->object, theirs[k]->name);
                if (v) cJSON_AddItemToObject(obj, r->target->key[k]->name, kp_data_copy(v, NULL));
            }
            kp_frec *rec = kp_fetched_add(R->fetched, r->target, obj);
            if (!rec) return nomem(R);
            if (link_record(R, f, at, rec, out)) return -1;
        } else if (rel->link == KP_LINK_FOREIGN_KEY) {
            /* a to-one hop read for its key alone (propose.c skip_key_hops): the source's reference */
            int is_nomem = 0;
            cJSON *obj = kp_copy_target_key(r, at->rec->object, &is_nomem);
            if (!obj) { if (is_nomem) return nomem(R); continue; }
            kp_frec *rec = kp_fetched_add(R->fetched, r->target, obj);
            if (!rec) return nomem(R);
            if (link_record(R, f, at, rec, out)) return -1;
        } else if (rel->link == KP_LINK_ARRAY) {
            const cJSON *arr = cJSON_GetObjectItemCaseSensitive(at->rec->object, rel->array_attr->name);
            for (const cJSON *v = cJSON_IsArray(arr) ? arr->child : NULL; v; v = v->next) {
                cJSON *obj = cJSON_CreateObject();
                cJSON_AddItemToObject(obj, r->target->key[0]->name, kp_data_copy(v, NULL));
                kp_frec *rec = kp_fetched_add(R->fetched, r->target, obj);
                if (!rec) return nomem(R);
                if (link_record(R, f, at, rec, out)) return -1;
            }
        }
    }
    return 0;
}

static int exec_select(run *R, const cq_fetch *f, const pairs *in, int depth, pairs *out)
{
    reqs Q = {0};
    int rc = select_start(R, f, in, &Q);
    if (rc == 0) rc = select_finish(R, f, &Q, depth, NULL, out);
    else {
        drain(R);
    }
    reqs_free(&Q);
    return rc;
}

static int is_sent_with_root(const cq_fetch *root, const cq_fetch *c)
{
    return root->is_root && root->kind == CQ_SELECT && c->base.is_independent && (c->kind == CQ_SELECT || c->kind == CQ_COUNT);
}

/* A child's requests sent with the root's; dropped when there was no single root to read
 * them for (what was read is not part of the response). */
typedef struct pending { const cq_fetch *fetch; reqs q; int is_dropped; } pending;

static pending *pending_of(run *R, const cq_fetch *f)
{
    for (size_t i = 0; i < R->pending_count; i++)
        if (R->pending[i].fetch == f) return &R->pending[i];
    return NULL;
}

/* Lets what is still in flight come back, then frees every pending request. */
static void pending_free(run *R)
{
    int open = 0;
    for (size_t i = 0; i < R->pending_count; i++)
        for (size_t k = 0; k < R->pending[i].q.count; k++) open |= !R->pending[i].q.items[k]->done;
    if (open) drain(R);
    for (size_t i = 0; i < R->pending_count; i++) reqs_free(&R->pending[i].q);
    free(R->pending);
    R->pending = NULL;
    R->pending_count = 0;
}

/* The root by key and the SELECTs of its children bound from the same parameters: one
 * round trip. The children's answers wait in R->pending until the walker reaches them. */
static int read_root(run *R, const cq_fetch *f, const pairs *in, pairs *out, int step)
{
    reqs root_q = {0};
    pairs none = {0};
    int rc = 0;
    R->pending = calloc(f->base.child_count + 1, sizeof *R->pending);
    if (!R->pending || pairs_push(&none, NULL, NULL)) rc = nomem(R);
    if (rc == 0) rc = select_start(R, f, in, &root_q);
    for (size_t i = 0; rc == 0 && i < f->base.child_count; i++) {
        const cq_fetch *c = kp_cq_child(f, i);
        /* a hop read for its key alone passes the root's key on: what it leads to goes too */
        if (c->kind == CQ_KEYS && kp_cq_next_hop(c)) c = kp_cq_next_hop(c);
        if (!is_sent_with_root(f, c)) continue;
        if (c->shape && c->is_client_ordered) kp_fetched_client_order(R->fetched, c->shape);
        pending *w = &R->pending[R->pending_count++];
        w->fetch = c;
        rc = select_start(R, c, &none, &w->q);
    }
    if (rc == 0) rc = select_finish(R, f, &root_q, step, NULL, out);
    if (rc == 0 && out->count != 1) {
        /* no root: what was read for it is not part of the response */
        drain(R);
        for (size_t i = 0; i < R->pending_count; i++) {
            reqs_free(&R->pending[i].q);
            R->pending[i].is_dropped = 1;
        }
    } else if (rc) {
        drain(R);
    }
    reqs_free(&root_q);
    free(none.items);
    return rc;
}

/* The shared walker's read of one level (backends/fetch.h): what f reads for its inputs,
 * each placed in the response as it is read (link_record). */
static int read_level(void *ctx, const kp_fetch *node, const pairs *in, pairs *out, int *step)
{
    run *R = ctx;
    const cq_fetch *f = (const cq_fetch *)node;
    pending *w = pending_of(R, f);
    if (f->shape && f->is_client_ordered && !w) kp_fetched_client_order(R->fetched, f->shape);
    int rc = 0;
    switch (f->kind) {
    case CQ_SELECT: case CQ_COUNT:
        if (w && w->is_dropped) break;
        if (w) {
            rc = select_finish(R, f, &w->q, *step, &in->items[0], out);
            reqs_free(&w->q);
        } else if (f->is_root && f->kind == CQ_SELECT) {
            rc = read_root(R, f, in, out, *step);
        } else {
            rc = exec_select(R, f, in, *step, out);
        }
        *step += R->tied + R->walked;
        R->tied = R->walked = 0;
        break;
    case CQ_KEYS:
        if (f->is_root) {
            for (size_t i = 0; i < in->count && rc == 0; i++) rc = pairs_push(out, NULL, NULL) ? nomem(R) : 0;
        } else {
            rc = exec_keys(R, f, in, out);
        }
        break;
    case CQ_DERIVED: case CQ_COPY:
        break;
    }
    return rc;
}

/* The levels place their own rows (link_record); a path that starts with a read of several
 * buckets, not merged in the declared order, gives its elements in no order: the assembler
 * puts them in the order the oracle gives (kp_fetched_client_order: key order where the
 * pattern declares none). */
static int place(void *ctx, const kp_fetch *first_node, const kp_fetch *last_node, const pairs *first_in,
                 const pairs *level, pairs *on_inputs)
{
    run *R = ctx;
    const cq_fetch *first = (const cq_fetch *)first_node, *last = (const cq_fetch *)last_node;
    (void)first_in, (void)level, (void)on_inputs;
    if (first->kind == CQ_SELECT && first->table && first->table->buckets > 1 && !first->is_merged && last->shape &&
        last->shape->kind == KP_SHAPE_EACH)
        kp_fetched_client_order(R->fetched, last->shape);
    return 0;
}

static long requests_sent(void *ctx)
{
    run *R = ctx;
    return R->requests;
}

static int has_statics_root(const cq_fetch *root) { return root->kind == CQ_KEYS && root->is_root && root->has_statics; }

static int find_client_paged(const cq_fetch *f, const kp_shape *s)
{
    if (!f) return 0;
    if (f->shape == s && f->is_client_ordered) return 1;
    if (find_client_paged(kp_cq_next_hop(f), s)) return 1;
    for (size_t i = 0; i < f->base.child_count; i++)
        if (find_client_paged(kp_cq_child(f, i), s)) return 1;
    return 0;
}

int kp_cq_execute(kp_conn *conn, const kp_design *d, const kp_pattern *p, const kp_params *params, const char *page,
                  kp_result *out, kp_error *err)
{
    memset(out, 0, sizeof *out);
    out->items_read = -1;
    out->bytes_read = -1;
    kp_error_clear(err);
    const cq_layout *L = d->layout;
    run R;
    memset(&R, 0, sizeof R);
    R.conn = conn;
    R.client = kp_cq_conn_client(conn);
    R.design = d;
    R.pattern = p;
    R.params = params;
    R.err = err;
    R.ks = kp_cq_conn_keyspace(conn, d);
    R.fetched = kp_fetched_new();
    if (!R.fetched) return nomem(&R);
    const cq_fetch *root = L->roots[p->index];
    int rc = 0;
    if (page && page[0]) {
        if (!strncmp(page, "p:", 2)) {
            size_t n = strlen(page + 2) / 2;
            R.page_state = malloc(n ? n : 1);
            R.page_state_len = (int32_t)n;
            for (size_t i = 0; R.page_state && i < n; i++) {
                int hi = hex_value(page[2 + 2 * i]), lo = hex_value(page[3 + 2 * i]);
                if (hi < 0 || lo < 0) { rc = kp_error_set(err, KP_ERR_USAGE, NULL, 0, 0, "the page token is not one this design produced"); break; }
                R.page_state[i] = (uint8_t)(hi * 16 + lo);
            }
        } else if (p->paged && find_client_paged(root, p->paged)) {
            rc = kp_fetched_client_page(R.fetched, page, err);
            if (rc == 0) rc = kp_oracle_token_decode(page, &R.after, err);
        } else {
            rc = kp_error_set(err, KP_ERR_USAGE, NULL, 0, 0, "the page token is not one this design produced");
        }
    }
    /* root conditions through to-one hops: the assembler filters on the linked records */
    for (size_t i = 0; i < root->client_cond_count; i++)
        if (root->client_conds[i]->path_len && p->is_root_set) kp_fetched_client_filter(R.fetched);
    kp_fetch_runner walk = {.ctx = &R, .read_level = read_level, .place = place, .requests = requests_sent};
    if (rc == 0) rc = kp_fetch_run(&walk, &root->base);
    if (rc && walk.is_out_of_memory) nomem(&R);
    pending_free(&R);
    (void)has_statics_root;
    if (rc == 0) {
        char *token = R.next_state;
        R.next_state = NULL;
        out->response = kp_assemble(R.design->model, R.fetched, p, params, token, err);
        if (!token && kp_fetched_next_token(R.fetched)) token = strdup(kp_fetched_next_token(R.fetched));
        out->next_page = token;
        if (!out->response) rc = -1;
    }
    out->requests = R.requests;
    out->sequential_steps = walk.max_step;
    out->is_cut_short = walk.is_cut_short || R.untied;
    out->items_returned = R.items;
    out->items_read = R.items_read;
    out->bytes_read = R.bytes_read;
    free(R.page_state);
    free(R.next_state);
    cJSON_Delete(R.after);
    kp_fetched_free(R.fetched);
    kp_arena_free(&R.arena);
    if (rc) kp_result_free(out);
    return rc;
}
