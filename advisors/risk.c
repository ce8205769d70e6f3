/*
 * risk.c — the risks of a design under a workload (risk.h).
 *
 * Hot partitions: a request's partition is identified by the values of its root
 * equality conditions (the key a first request reads by); with sample data, parameters
 * are drawn with the pattern's Zipf skew (core/sample) and counted per key; without,
 * the hottest key's share is the Zipf top share over the root entity's count (1 when
 * every request names the same key: a literal, or no key at all). Writes are simulated
 * only over data: sampled records go through the backend's transform, and each item's
 * partition-key fields (as the containers and indexes name them) are counted.
 * A partition is hot when its load passes the backend's per-partition limit, or when
 * one key takes half of a pattern's or write's load over a large entity on a database
 * whose partition key routes that load to one partition (its throughput can then never
 * grow past one partition; an unsharded MongoDB collection serves it from an index); the shard count that fixes it brings the
 * load under half the limit and the share under a tenth.
 * Invariant: a check whose limit the backend leaves at 0 is skipped, never guessed.
 */
#include "advisors/risk.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "advisors/cost.h"
#include "backends/write_effects.h"
#include "core/params.h"
#include "core/sample.h"

#define HOT_SHARE 0.5          /* one key takes this share of a load: a low-cardinality key */
#define HOT_MIN_RECORDS 1000.0 /* ... over an entity at least this large */
#define HOT_MIN_RPS 1.0       /* ... at this rate or more (a nightly report is not a hot spot) */
#define HOT_UNLIMITED_RPS 100.0 /* ... and, where no per-partition limit is modelled (Cassandra), at least this
                                   many requests a second on that one partition: below it, one key's replicas
                                   serve it with room to spare, and a warning would only push the design to
                                   spread what needs no spreading */
#define AMPLIFICATION_WARN 10.0
#define KP_EXPERT_REQUESTS 11.0 /* the most requests an expert's page sends: 10 shards or buckets and a header */
#define AMPLIFIED_ITEMS_PER_S 10.0

static char *vformat(const char *fmt, va_list ap)
{
    char buf[1024];
    kp_vsnprintf(buf, sizeof buf, fmt, ap);
    return strdup(buf);
}

static kp_risk *add(kp_risks *r, const char *kind, kp_risk_severity severity, const char *subject, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
static kp_risk *add(kp_risks *r, const char *kind, kp_risk_severity severity, const char *subject, const char *fmt, ...)
{
    if (r->count == r->cap) {
        size_t cap = r->cap ? r->cap * 2 : 16;
        kp_risk *items = realloc(r->items, cap * sizeof *items);
        if (!items) return NULL;
        r->items = items;
        r->cap = cap;
    }
    kp_risk *k = &r->items[r->count];
    memset(k, 0, sizeof *k);
    k->kind = kind;
    k->severity = severity;
    k->subject = strdup(subject ? subject : "");
    va_list ap;
    va_start(ap, fmt);
    k->message = vformat(fmt, ap);
    va_end(ap);
    if (!k->subject || !k->message) { free(k->subject); free(k->message); return NULL; }
    r->count++;
    return k;
}

void kp_risks_free(kp_risks *r)
{
    for (size_t i = 0; i < r->count; i++) { free(r->items[i].subject); free(r->items[i].message); }
    free(r->items);
    memset(r, 0, sizeof *r);
}

size_t kp_risks_count(const kp_risks *r, kp_risk_severity severity)
{
    size_t n = 0;
    for (size_t i = 0; i < r->count; i++) n += r->items[i].severity == severity;
    return n;
}

const kp_risk *kp_risks_find(const kp_risks *r, const char *kind, const char *subject)
{
    for (size_t i = 0; i < r->count; i++)
        if (strcmp(r->items[i].kind, kind) == 0 && (!subject || strcmp(r->items[i].subject, subject) == 0)) return &r->items[i];
    return NULL;
}

const char *kp_risk_severity_name(kp_risk_severity s)
{
    return s == KP_RISK_DEFECT ? "defect" : s == KP_RISK_WARNING ? "warning" : "info";
}

cJSON *kp_risks_to_json(const kp_risks *r)
{
    cJSON *arr = cJSON_CreateArray();
    for (size_t i = 0; i < r->count; i++) {
        const kp_risk *k = &r->items[i];
        cJSON *o = cJSON_CreateObject();
        cJSON_AddItemToObjectCS(o, "kind", cJSON_CreateString(k->kind));
        cJSON_AddItemToObjectCS(o, "severity", cJSON_CreateStringReference(kp_risk_severity_name(k->severity)));
        cJSON_AddItemToObjectCS(o, "subject", cJSON_CreateString(k->subject));
        cJSON_AddItemToObjectCS(o, "message", cJSON_CreateString(k->message));
        if (strcmp(k->kind, "hot-partition") == 0) {
            cJSON_AddItemToObjectCS(o, "share", cJSON_CreateNumber(round(k->share * 1000) / 1000));
            cJSON_AddItemToObjectCS(o, "load_per_s", cJSON_CreateNumber(round(k->load * 100) / 100));
            cJSON_AddItemToObjectCS(o, "limit_per_s", cJSON_CreateNumber(k->limit));
            cJSON_AddItemToObjectCS(o, "shards_to_fix", cJSON_CreateNumber(k->shards));
            cJSON_AddItemToObjectCS(o, "simulated", cJSON_CreateBool(k->is_simulated));
        }
        cJSON_AddItemToArray(arr, o);
    }
    return arr;
}

/* Share of requests on the most popular of n keys under Zipf(s): exact first terms,
 * then the Euler-Maclaurin tail (fast enough for 5,000 patterns over millions of keys). */
static double zipf_top_share(double n, double s)
{
    if (n <= 1) return 1;
    if (s <= 0) return 1 / n;
    /* the first terms' running sums, kept for the last exponent (most patterns share the
     * model's skew): the same additions in the same order as summing them each time */
    static _Thread_local double partial[65], partial_s = -1;
    if (s != partial_s) {
        partial[0] = 0;
        for (int k = 1; k <= 64; k++) partial[k] = partial[k - 1] + pow(k, -s);
        partial_s = s;
    }
    double sum = partial[n >= 64 ? 64 : (int)floor(n)];
    if (n > 64) {
        double a = 64.5, b = n + 0.5;
        sum += fabs(s - 1) < 1e-9 ? log(b / a) : (pow(b, 1 - s) - pow(a, 1 - s)) / (1 - s);
    }
    return 1 / sum;
}

/* ---- hot partitions: reads ----------------------------------------------------------------- */

typedef struct key_count { char *key; long count; } key_count;

typedef struct counter {
    key_count *slots;   /* open addressing */
    size_t cap, used;
    long total, top;
} counter;

static uint64_t hash_text(const char *s)
{
    uint64_t h = 1469598103934665603ull;
    for (; *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return h;
}

static int counter_add(counter *c, const char *key)
{
    if ((c->used + 1) * 2 > c->cap) {
        size_t cap = c->cap ? c->cap * 2 : 256;
        key_count *slots = calloc(cap, sizeof *slots);
        if (!slots) return -1;
        for (size_t i = 0; i < c->cap; i++) {
            if (!c->slots[i].key) continue;
            size_t j = hash_text(c->slots[i].key) & (cap - 1);
            while (slots[j].key) j = (j + 1) & (cap - 1);
            slots[j] = c->slots[i];
        }
        free(c->slots);
        c->slots = slots;
        c->cap = cap;
    }
    size_t j = hash_text(key) & (c->cap - 1);
    while (c->slots[j].key && strcmp(c->slots[j].key, key) != 0) j = (j + 1) & (c->cap - 1);
    if (!c->slots[j].key) {
        c->slots[j].key = strdup(key);
        if (!c->slots[j].key) return -1;
        c->used++;
    }
    long n = ++c->slots[j].count;
    if (n > c->top) c->top = n;
    c->total++;
    return 0;
}

static void counter_free(counter *c)
{
    for (size_t i = 0; i < c->cap; i++) free(c->slots[i].key);
    free(c->slots);
    memset(c, 0, sizeof *c);
}

/* How many root equality conditions name a parameter (0: every request reads one key). */
static size_t key_params(const kp_pattern *p)
{
    size_t n = 0;
    for (size_t i = 0; i < p->where_count; i++) n += p->where[i].op == KP_OP_EQ && p->where[i].value.param != NULL;
    return n;
}

/* The share of the hottest key, simulated over the data. -1 when it cannot be drawn. */
static double simulate_read_share(const kp_pattern *p, const kp_risk_options *o, kp_sampler *sampler)
{
    counter c = {0};
    int samples = o->samples > 0 ? o->samples : 2000;
    for (int i = 0; i < samples; i++) {
        kp_params *params = NULL;
        kp_error err;
        if (kp_sample_params(sampler, p, &params, &err) || !params) { counter_free(&c); return -1; }
        char key[1024] = "";
        size_t len = 0;
        for (size_t k = 0; k < p->where_count; k++) {
            const kp_cond *cond = &p->where[k];
            if (cond->op != KP_OP_EQ || !cond->value.param) continue;
            const cJSON *v = kp_params_get(params, cond->value.param->name);
            char *text = v ? cJSON_PrintUnformatted(v) : NULL;
            len += (size_t)snprintf(key + len, len < sizeof key ? sizeof key - len : 0, "%s|", text ? text : "null");
            if (len >= sizeof key) len = sizeof key - 1;
            cJSON_free(text);
        }
        kp_params_free(params);
        if (counter_add(&c, key)) { counter_free(&c); return -1; }
    }
    double share = c.total ? (double)c.top / (double)c.total : -1;
    counter_free(&c);
    return share;
}

static double first_step_units(const kp_design *d, const kp_plan *p)
{
    double units = 0, io = 0;
    for (size_t i = 0; i < p->op_count; i++) {
        const kp_operation *op = &p->ops[i];
        if (op->step > 1) continue;
        units += op->read_units;
        double by_bytes = ceil(op->bytes / KP_READ_UNIT_BYTES);
        io += by_bytes > op->requests ? by_bytes : op->requests;
    }
    return d->backend->limits->read_unit ? units : io;
}

static int fix_shards(double load, double limit, double share)
{
    int n = 1;
    if (limit > 0 && load > limit / 2) n = (int)ceil(load / (limit / 2));
    int by_share = (int)ceil(share * 10 - 1e-9);
    if (share >= HOT_SHARE && by_share > n) n = by_share;
    return n;
}

static void check_hot_reads(const kp_design *d, const kp_mix *mix, const kp_risk_options *o, kp_sampler *sampler, kp_risks *out)
{
    const kp_limits *L = d->backend->limits;
    /* a database without a per-partition throughput limit (Cassandra, MongoDB) still has
     * one partition (one token range's replicas, one shard's chunk) serving one key: only
     * the low-cardinality check applies there */
    const char *unit = L->read_unit ? L->read_unit : "read units";
    for (size_t i = 0; i < d->plan_count; i++) {
        const kp_plan *plan = &d->plans[i];
        const kp_pattern *p = plan->pattern;
        double rps = kp_pattern_rps(p, mix);
        if (rps <= 0 || plan->op_count == 0) continue;
        double share;
        int simulated = 0;
        if (key_params(p) == 0) {
            share = 1;
        } else {
            share = -1;
            if (sampler) { share = simulate_read_share(p, o, sampler); simulated = share >= 0; }
            if (share < 0) share = zipf_top_share(p->root->count, kp_pattern_skew(d->model, p));
        }
        int shards = plan->shards > 1 ? plan->shards : 1;
        double per_shard = share / shards;
        double load = rps * share * first_step_units(d, plan) / shards;
        int over = L->partition_read_per_s > 0 && load > L->partition_read_per_s;
        /* one key's share matters where a partition key routes its load to one partition */
        int low_cardinality = L->routes_by_partition_key && per_shard >= HOT_SHARE && p->root->count >= HOT_MIN_RECORDS &&
                              rps >= HOT_MIN_RPS && (L->partition_read_per_s > 0 || rps * per_shard >= HOT_UNLIMITED_RPS);
        if (!over && !low_cardinality) continue;
        int fix = fix_shards(load * shards, L->partition_read_per_s, share) ;
        if (L->partition_read_per_s <= 0) {
            kp_risk *k = add(out, "hot-partition", KP_RISK_WARNING, p->name,
                             "'%s': the hottest partition key takes %.0f%% of its reads (%s), %.0f req/s that one partition "
                             "(one token range's replicas, one shard) serves however many nodes the cluster has; spread the key "
                             "over %d shards (write sharding, reads scatter-gather)",
                             p->name, per_shard * 100,
                             key_params(p) == 0 ? "every request reads the same key" : simulated ? "simulated over the data"
                                                                                                 : "Zipf estimate from the model",
                             rps * share / shards, fix);
            if (k) { k->share = per_shard; k->load = rps * share / shards; k->limit = 0; k->shards = fix; k->is_simulated = simulated; }
            continue;
        }
        kp_risk *k = add(out, "hot-partition", over ? KP_RISK_DEFECT : KP_RISK_WARNING, p->name,
                         "'%s': the hottest partition key takes %.0f%% of its reads (%s), %.1f %s/s against the per-partition "
                         "limit of %.0f%s; spread the key over %d shards (write sharding, reads scatter-gather)",
                         p->name, per_shard * 100,
                         key_params(p) == 0 ? "every request reads the same key" : simulated ? "simulated over the data"
                                                                                             : "Zipf estimate from the model",
                         load, unit, L->partition_read_per_s,
                         over ? "" : "; one key cannot grow past one partition's throughput", fix);
        if (k) { k->share = per_shard; k->load = load; k->limit = L->partition_read_per_s; k->shards = fix; k->is_simulated = simulated; }
    }
}

/* ---- hot partitions: writes (simulated over data) -------------------------------------------- */

static const kp_container *find_container(const kp_design *d, const char *name)
{
    for (size_t i = 0; i < d->container_count; i++)
        if (strcmp(d->containers[i].name, name) == 0) return &d->containers[i];
    return NULL;
}

typedef struct key_slot { const char *container, *field; counter c; } key_slot;

static void count_item(key_slot *slots, size_t *n, size_t max, const kp_container *c, const kp_key_part *parts, size_t count,
                       const cJSON *body)
{
    for (size_t k = 0; k < count; k++) {
        if (parts[k].role != KP_KEY_PARTITION) continue;
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(body, parts[k].name);
        if (!v) continue;
        size_t s = 0;
        while (s < *n && !(slots[s].container == c->name && slots[s].field == parts[k].name)) s++;
        if (s == *n) {
            if (*n == max) continue;
            slots[s] = (key_slot){c->name, parts[k].name, {0}};
            (*n)++;
        }
        char *text = cJSON_PrintUnformatted(v);
        if (text) counter_add(&slots[s].c, text);
        cJSON_free(text);
    }
}

static void check_hot_writes(const kp_design *d, const kp_mix *mix, const kp_risk_options *o, kp_sampler *sampler, kp_risks *out)
{
    const kp_limits *L = d->backend->limits;
    if (!sampler || !d->backend->transform) return;
    const char *unit = L->write_unit ? L->write_unit : "write units";
    int samples = o->samples > 0 ? o->samples / 2 : 1000;
    for (size_t w = 0; w < d->model->write_count; w++) {
        const kp_write *wr = d->model->writes[w];
        double rps = kp_write_rps(wr, mix);
        if (rps <= 0) continue;
        for (size_t s = 0; s < wr->step_count; s++) {
            const kp_write_step *step = &wr->steps[s];
            if (step->op == KP_WRITE_DELETE) continue;
            key_slot slots[16];
            size_t n = 0;
            double units = 0, items = 0;
            for (int i = 0; i < samples; i++) {
                kp_record *r = kp_sample_record(sampler, step->entity, kp_write_skew(d->model, wr));
                if (!r) break;
                kp_item_list list = {0};
                kp_error err;
                if (d->backend->transform(d, o->data, r, &list, &err) == 0) {
                    for (size_t k = 0; k < list.count; k++) {
                        const kp_container *c = find_container(d, list.items[k].container);
                        if (!c || !list.items[k].body) continue;
                        items++;
                        units += d->backend->item_write_units ? d->backend->item_write_units(d, &list.items[k])
                                                               : ceil((double)list.items[k].bytes / KP_WRITE_UNIT_BYTES);
                        count_item(slots, &n, 16, c, c->keys, c->key_count, list.items[k].body);
                        for (size_t x = 0; x < c->index_count; x++)
                            count_item(slots, &n, 16, c, c->indexes[x].keys, c->indexes[x].key_count, list.items[k].body);
                    }
                }
                kp_item_list_free(&list);
            }
            double rows = step->rows > 0 ? step->rows : 1;
            double units_per_item = items > 0 ? units / items : 1;
            for (size_t k = 0; k < n; k++) {
                counter *c = &slots[k].c;
                if (c->total == 0) continue;
                double share = (double)c->top / (double)c->total;
                double load = rps * rows * share * units_per_item;
                int over = L->partition_write_per_s > 0 && load > L->partition_write_per_s;
                int low = L->routes_by_partition_key && share >= HOT_SHARE && c->used < 4 && step->entity->count >= HOT_MIN_RECORDS &&
                          rps * rows >= HOT_MIN_RPS;
                if (over || low) {
                    char subject[256];
                    snprintf(subject, sizeof subject, "%s", wr->name);
                    int fix = fix_shards(load, L->partition_write_per_s, share);
                    if (L->partition_write_per_s <= 0) {
                        kp_risk *r = add(out, "hot-partition", KP_RISK_WARNING, subject,
                                         "'%s': %.0f%% of its %s writes land on one %s value of %s (simulated over the data: %zu "
                                         "distinct keys), %.1f rows/s that one partition serves however many nodes the cluster "
                                         "has; spread the key over %d shards",
                                         wr->name, share * 100, step->entity->name, slots[k].field, slots[k].container, c->used,
                                         rps * rows * share, fix);
                        if (r) { r->share = share; r->load = rps * rows * share; r->limit = 0; r->shards = fix; r->is_simulated = 1; }
                        counter_free(c);
                        continue;
                    }
                    kp_risk *r = add(out, "hot-partition", over ? KP_RISK_DEFECT : KP_RISK_WARNING, subject,
                                     "'%s': %.0f%% of its %s writes land on one %s value of %s (simulated over the data: %zu "
                                     "distinct keys), %.1f %s/s against the per-partition limit of %.0f; spread the key over %d shards",
                                     wr->name, share * 100, step->entity->name, slots[k].field, slots[k].container, c->used, load,
                                     unit, L->partition_write_per_s, fix);
                    if (r) { r->share = share; r->load = load; r->limit = L->partition_write_per_s; r->shards = fix; r->is_simulated = 1; }
                }
                counter_free(c);
            }
        }
    }
}

/* ---- sizes, scans, indexes, amplification ------------------------------------------------------ */

/* An unbounded relation both of whose ends the container holds, or NULL (asked only for an
 * item over the limit: every container times every relation would grow with the model's
 * square). */
static const char *unbounded_in(const kp_design *d, const kp_container *c)
{
    for (size_t r = 0; r < d->model->relation_count; r++) {
        const kp_relation *rel = d->model->relations[r];
        if (!rel->fanout.is_unbounded) continue;
        int from = 0, to = 0;
        for (size_t e = 0; e < c->entity_count; e++) { from |= c->entities[e] == rel->from; to |= c->entities[e] == rel->to; }
        if (from && to) return rel->name;
    }
    return NULL;
}

static void check_sizes(const kp_design *d, kp_risks *out)
{
    const kp_limits *L = d->backend->limits;
    for (size_t i = 0; i < d->container_count; i++) {
        const kp_container *c = &d->containers[i];
        const char *unbounded = L->max_item_bytes > 0 && c->max_item_bytes > L->max_item_bytes ? unbounded_in(d, c) : NULL;
        if (L->max_item_bytes > 0 && c->max_item_bytes > L->max_item_bytes)
            add(out, "item-size", KP_RISK_DEFECT, c->name,
                "the largest %s item reaches %.1f MB at the maximum fan-out%s%s%s, above the %.1f MB limit; reference the "
                "children (their own items) instead of holding them inside one",
                c->name, c->max_item_bytes / 1048576, unbounded ? " (relation '" : "", unbounded ? unbounded : "",
                unbounded ? "' is unbounded: it grows forever)" : "", L->max_item_bytes / 1048576);
        else if (L->max_item_bytes > 0 && c->max_item_bytes > L->max_item_bytes / 2)
            add(out, "item-size", KP_RISK_WARNING, c->name, "the largest %s item reaches %.0f%% of the %.1f MB limit at the maximum fan-out",
                c->name, 100 * c->max_item_bytes / L->max_item_bytes, L->max_item_bytes / 1048576);
        if (c->is_partition_bounded && L->max_collection_bytes > 0 && c->max_partition_bytes > L->max_collection_bytes)
            add(out, "partition-size", KP_RISK_DEFECT, c->name,
                "one partition of %s reaches %.1f GB at the maximum fan-out, above the %.1f GB partition limit",
                c->name, c->max_partition_bytes / 1e9, L->max_collection_bytes / 1e9);
        if (L->max_partition_rows > 0 && c->max_partition_items > L->max_partition_rows)
            add(out, "partition-size", KP_RISK_DEFECT, c->name,
                "one partition of %s holds up to %.0f rows at the maximum fan-out, above the ~%.0f a partition should hold; "
                "add a bucket to the partition key", c->name, c->max_partition_items, L->max_partition_rows);
    }
}

static void check_scans(const kp_design *d, kp_risks *out)
{
    for (size_t i = 0; i < d->plan_count; i++) {
        const kp_plan *p = &d->plans[i];
        if (!p->is_scan) continue;
        int is_defect = 0;
        for (size_t k = 0; k < d->defect_count; k++) is_defect |= d->defect_patterns[k] == p->pattern;
        const char *op = "a scan";
        for (size_t k = 0; k < p->op_count; k++)
            if (p->ops[k].is_scan) { op = p->ops[k].op; break; }
        add(out, "scan", is_defect ? KP_RISK_DEFECT : KP_RISK_WARNING, p->pattern->name,
            "'%s' is served by %s that reads the whole %s%s", p->pattern->name, op, "container",
            is_defect ? "" : " (allowed by a hint: it reads everything each time)");
    }
    for (size_t k = 0; k < d->defect_count; k++) {
        int covered = 0;
        for (size_t i = 0; i < d->plan_count; i++) covered |= d->plans[i].is_scan && d->defect_patterns[k] == d->plans[i].pattern;
        if (!covered) add(out, "defect", KP_RISK_DEFECT, d->candidate, "%s", d->defects[k]);
    }
}

/* The attribute a listing's range condition is on (its own, or the root's for a listing of
 * the root set), when its order does not start with it: no index key holds both, so every
 * design reads the range whole to sort it. NULL when the order starts with the range. */
static const kp_attr *range_apart_from_order(const kp_pattern *p, const kp_shape *each)
{
    const kp_attr *first = each->order_count ? each->order[0].attr : NULL;
    for (int pass = 0; pass < 2; pass++) {
        const kp_cond *w = pass ? p->where : each->where;
        size_t n = pass ? (each->is_root_set ? p->where_count : 0) : each->where_count;
        for (size_t k = 0; k < n; k++)
            if (!w[k].path_len && w[k].op != KP_OP_EQ && w[k].op != KP_OP_BEGINS_WITH && w[k].attr != first) return w[k].attr;
    }
    return NULL;
}

/* A plan that may read more for one page than an expert's bound (kp_page_bound: the page
 * from each request, a header each and one more): a warning with the figures, the operation
 * that reads them and, where the model makes every design do so, the change to the model
 * that would let a page be read alone. Scans are reported as scans. */
static void check_page_bounds(const kp_design *d, kp_risks *out)
{
    for (size_t i = 0; i < d->plan_count; i++) {
        const kp_plan *p = &d->plans[i];
        const kp_shape *each = p->is_scan ? NULL : kp_pattern_page_listing(p->pattern);
        if (!each) continue;
        double limit = kp_shape_limit_max(each), offset = kp_shape_offset_max(each);
        double requests = p->requests_max > p->requests ? p->requests_max : p->requests;
        double items = p->items_max > p->items ? p->items_max : p->items;
        double bound = kp_page_bound(limit + (offset > 0 ? offset : 0), requests < KP_EXPERT_REQUESTS ? requests : KP_EXPERT_REQUESTS);
        if (items <= bound) continue;
        const kp_operation *most = NULL;
        double ties = 0; /* what the reads of ties may add */
        for (size_t k = 0; k < p->op_count; k++) {
            double n = p->ops[k].items_max > p->ops[k].items ? p->ops[k].items_max : p->ops[k].items;
            double m = most ? (most->items_max > most->items ? most->items_max : most->items) : -1;
            if (n > m) most = &p->ops[k];
            if (p->ops[k].is_tie_read) ties += n;
        }
        char cause[800] = "";
        size_t at = 0;
        const kp_attr *range = range_apart_from_order(p->pattern, each);
        if (range)
            at += (size_t)snprintf(cause, sizeof cause, "its range (%s) and its order (%s first) cannot lead one index key "
                                   "together: every design reads the range whole and sorts it; order by %s first, or make "
                                   "the range an equality", range->name, each->order[0].attr->name, range->name);
        if (offset < 0 && at < sizeof cause)
            at += (size_t)snprintf(cause + at, sizeof cause - at, "%sits offset :%s has no max (a page at offset S reads "
                                   "S + %.0f): give it one", at ? "; " : "", each->offset_param->name, limit);
        if (!at && ties > 0 && items - ties <= bound)
            at += (size_t)snprintf(cause, sizeof cause, "only its read of what ties with the page's last on the order's first "
                                   "field passes it (at the model's maxima every one it reads may tie); a page reads past the "
                                   "bound only as far as values tie");
        if (!at && most && most->bound_cause) snprintf(cause, sizeof cause, "%s", most->bound_cause);
        else if (!at) snprintf(cause, sizeof cause, "keyplan's plan reads past the page (it serves this shape no better yet)");
        add(out, "page-bound", KP_RISK_WARNING, p->pattern->name,
            "'%s' may read up to %.0f items for a page of %.0f, where an expert's plan reads at most %.0f%s%s%s%s%s: %s",
            p->pattern->name, items, limit, bound, most ? " (most of them in " : "", most ? most->op : "",
            most ? " " : "", most ? most->container : "", most ? ")" : "", cause);
    }
}

static int same_prefix(const kp_index_desc *a, const kp_index_desc *b)
{
    if (a->key_count > b->key_count || a->key_count == 0) return 0;
    for (size_t k = 0; k < a->key_count; k++)
        if (strcmp(a->keys[k].name, b->keys[k].name) != 0 || a->keys[k].is_desc != b->keys[k].is_desc) return 0;
    return 1;
}

static void check_indexes(const kp_design *d, kp_risks *out)
{
    for (size_t i = 0; i < d->container_count; i++) {
        const kp_container *c = &d->containers[i];
        for (size_t x = 0; x < c->index_count; x++) {
            const kp_index_desc *ix = &c->indexes[x];
            char subject[256];
            snprintf(subject, sizeof subject, "%s.%s", c->name, ix->name);
            if (ix->caused_by_count == 0)
                add(out, "unused-index", KP_RISK_WARNING, subject,
                    "index %s on %s serves no access pattern: it costs a write on every change; drop it", ix->name, c->name);
            for (size_t y = 0; y < c->index_count; y++) {
                if (y == x || !same_prefix(ix, &c->indexes[y])) continue;
                if (ix->key_count == c->indexes[y].key_count && y < x) continue; /* identical: report once */
                if (ix->is_sparse != c->indexes[y].is_sparse || strcmp(ix->kind, c->indexes[y].kind) != 0) continue;
                add(out, "redundant-index", KP_RISK_WARNING, subject, "index %s on %s is a prefix of %s, which serves the same reads; drop it",
                    ix->name, c->name, c->indexes[y].name);
                break;
            }
        }
    }
}

/* A container that no access pattern reads and no write reads before writing costs every
 * write that keeps it and serves nothing the model asks for. Linear in the design: the names
 * read and the writes touching each container are gathered once (models of thousands of
 * tables). */
typedef struct unread_cost { double per_s; char writes[200]; size_t used; } unread_cost;

static void check_unread(const kp_design *d, const kp_mix *mix, kp_risks *out)
{
    kp_arena arena = {0};
    kp_strmap read = {0}, costs = {0};
    int ok = kp_design_containers_read(d, &arena, &read) == 0;
    /* what each write costs each container it touches, for the containers nothing reads */
    for (size_t w = 0; w < d->write_plan_count && ok; w++) {
        const kp_write_plan *wp = &d->write_plans[w];
        for (size_t k = 0; k < wp->touch_count && ok; k++) {
            const char *name = wp->touches[k].container;
            if (kp_strmap_get(&read, name) || wp->touches[k].count <= 0) continue;
            unread_cost *c = kp_strmap_get(&costs, name);
            if (!c && (!(c = kp_arena_alloc(&arena, sizeof *c)) || kp_strmap_put(&arena, &costs, name, c))) { ok = 0; break; }
            /* a write named once per container, with all its touches of it */
            int seen = 0;
            for (size_t j = 0; j < k && !seen; j++) seen = !strcmp(wp->touches[j].container, name) && wp->touches[j].count > 0;
            c->per_s += wp->touches[k].count * kp_write_rps(wp->write, mix);
            if (seen || c->used >= sizeof c->writes - 1) continue;
            int n = snprintf(c->writes + c->used, sizeof c->writes - c->used, "%s'%s'", c->used ? ", " : "", wp->write->name);
            c->used = n < 0 ? sizeof c->writes - 1 : c->used + (size_t)n < sizeof c->writes ? c->used + (size_t)n : sizeof c->writes - 1;
        }
    }
    for (size_t i = 0; i < d->container_count && ok; i++) {
        const kp_container *c = &d->containers[i];
        if (kp_strmap_get(&read, c->name)) continue;
        const unread_cost *uc = kp_strmap_get(&costs, c->name);
        char cost[260] = "";
        if (uc && uc->per_s > 0) snprintf(cost, sizeof cost, ": it costs %.3g item writes/s (%s)", uc->per_s, uc->writes);
        add(out, "unread-container", KP_RISK_WARNING, c->name,
            "%s %s is read by no access pattern and by no write%s; drop it unless something outside the model reads it", c->kind,
            c->name, cost);
    }
    kp_arena_free(&arena);
}

static void check_amplification(const kp_design *d, const kp_mix *mix, kp_risks *out)
{
    kp_write_effects fx;
    kp_error err;
    int have_effects = kp_write_effects_build(d->model, &fx, &err) == 0;
    for (size_t i = 0; i < d->write_plan_count; i++) {
        const kp_write_plan *w = &d->write_plans[i];
        double rps = kp_write_rps(w->write, mix);
        double rows = 0;
        /* records changed: a for_each step's once per record it reaches (the model's fan-out, not a copy),
         * and the records its deletes take with them or detach */
        for (size_t s = 0; s < w->write->step_count; s++) {
            double n = kp_write_step_records(&w->write->steps[s]);
            rows += n > 0 ? n : 1;
        }
        for (size_t k = 0; have_effects && w->write->index < fx.write_count && k < fx.of_write[w->write->index].count; k++) {
            const kp_write_effect *e = &fx.of_write[w->write->index].items[k];
            if (e->kind == KP_EFFECT_CASCADE || e->kind == KP_EFFECT_DETACH) rows += e->count;
        }
        if (rows <= 0) rows = 1;
        double amplification = w->items / rows;
        if (amplification < AMPLIFICATION_WARN || rps * w->items < AMPLIFIED_ITEMS_PER_S) continue;
        add(out, "write-amplification", KP_RISK_WARNING, w->write->name,
            "'%s' writes %.0f items per operation for %.0f record%s changed (x%.0f), %.0f items/s at %.2g/s: every copy it "
            "keeps in step costs a write; weigh the reads the copies save against this",
            w->write->name, w->items, rows, rows == 1 ? "" : "s", amplification, rps * w->items, rps);
    }
    kp_write_effects_free(&fx);
}

int kp_risk_check(const kp_design *d, const kp_mix *mix, const kp_risk_options *options, kp_risks *out, kp_error *err)
{
    kp_risk_options none = {0};
    const kp_risk_options *o = options ? options : &none;
    kp_sampler *sampler = NULL;
    if (o->data && kp_sampler_new(o->data, o->seed ? o->seed : 1, &sampler, err)) return -1;
    check_scans(d, out);
    check_page_bounds(d, out);
    check_sizes(d, out);
    check_hot_reads(d, mix, o, sampler, out);
    check_hot_writes(d, mix, o, sampler, out);
    check_indexes(d, out);
    check_unread(d, mix, out);
    check_amplification(d, mix, out);
    kp_sampler_free(sampler);
    return 0;
}
