/*
 * sample.c — deterministic parameter drawing for verification (see sample.h).
 *
 * Invariant: for a given seed and dataset content the sequence of drawn parameter
 * sets is always the same — records are ranked by key, never by memory address or
 * hash order, and all randomness comes from one splitmix64 stream.
 */
#include "core/sample.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/value.h"

void kp_rng_seed(kp_rng *rng, uint64_t seed) { rng->state = seed ^ 0x6a09e667f3bcc909ULL; }

uint64_t kp_rng_next(kp_rng *rng)
{
    uint64_t z = (rng->state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

uint64_t kp_rng_below(kp_rng *rng, uint64_t n) { return n ? kp_rng_next(rng) % n : 0; }

double kp_rng_unit(kp_rng *rng) { return (double)(kp_rng_next(rng) >> 11) / 9007199254740992.0; }

typedef struct zipf_cache {
    uint64_t generation;
    double skew;
    int is_valid;
    kp_record **sorted;         /* the entity's records in key order */
    double *cdf;                /* cumulative weights */
    size_t count;
} zipf_cache;

struct kp_sampler {
    const kp_dataset *ds;
    kp_rng rng;
    zipf_cache *caches;         /* per entity */
};

int kp_sampler_new(const kp_dataset *data, uint64_t seed, kp_sampler **out, kp_error *err)
{
    const kp_model *m = kp_dataset_model(data);
    kp_sampler *s = calloc(1, sizeof *s);
    if (s) s->caches = calloc(m->entity_count ? m->entity_count : 1, sizeof *s->caches);
    if (!s || !s->caches) {
        free(s);
        *out = NULL;
        return kp_error_set(err, KP_ERR_NOMEM, NULL, 0, 0, "out of memory");
    }
    s->ds = data;
    kp_rng_seed(&s->rng, seed);
    *out = s;
    return 0;
}

void kp_sampler_free(kp_sampler *s)
{
    if (!s) return;
    const kp_model *m = kp_dataset_model(s->ds);
    for (size_t i = 0; i < m->entity_count; i++) {
        free(s->caches[i].sorted);
        free(s->caches[i].cdf);
    }
    free(s->caches);
    free(s);
}

kp_rng *kp_sampler_rng(kp_sampler *s) { return &s->rng; }

static zipf_cache *cache_for(kp_sampler *s, const kp_entity *entity, double skew)
{
    zipf_cache *c = &s->caches[entity->index];
    uint64_t generation = kp_dataset_generation(s->ds);
    if (c->is_valid && c->generation == generation && c->skew == skew) return c;
    size_t n = 0;
    kp_record *const *records = kp_dataset_records(s->ds, entity, &n);
    free(c->sorted);
    free(c->cdf);
    c->sorted = malloc((n ? n : 1) * sizeof *c->sorted);
    c->cdf = malloc((n ? n : 1) * sizeof *c->cdf);
    kp_error ignored;
    if (c->sorted && n) memcpy(c->sorted, records, n * sizeof *c->sorted);
    if (!c->sorted || !c->cdf || kp_dataset_sort_by_key(s->ds, c->sorted, n, &ignored)) {
        free(c->sorted); free(c->cdf);
        c->sorted = NULL; c->cdf = NULL; c->is_valid = 0;
        return NULL;
    }
    double total = 0;
    for (size_t i = 0; i < n; i++) {
        total += skew > 0 ? 1.0 / pow((double)(i + 1), skew) : 1.0;
        c->cdf[i] = total;
    }
    c->count = n;
    c->generation = generation;
    c->skew = skew;
    c->is_valid = 1;
    return c;
}

kp_record *kp_sample_record(kp_sampler *s, const kp_entity *entity, double skew)
{
    zipf_cache *c = cache_for(s, entity, skew);
    if (!c || c->count == 0) return NULL;
    double u = kp_rng_unit(&s->rng) * c->cdf[c->count - 1];
    size_t lo = 0, hi = c->count - 1;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (c->cdf[mid] > u) hi = mid;
        else lo = mid + 1;
    }
    return c->sorted[lo];
}

/* ---- drawing parameters ---------------------------------------------------------------- */

typedef struct draw {
    kp_sampler *s;
    const kp_pattern *pattern;
    kp_params *params;
    const char *omitted[64];    /* optional parameters decided to be left out */
    size_t omitted_count;
    const kp_record *anchor;
    kp_error *err;
} draw;

static int is_decided(const draw *d, const kp_param *p)
{
    if (kp_params_get(d->params, p->name)) return 1;
    for (size_t i = 0; i < d->omitted_count; i++)
        if (strcmp(d->omitted[i], p->name) == 0) return 1;
    return 0;
}

static int omit_sometimes(draw *d, const kp_param *p)
{
    if (!p->is_optional || d->omitted_count >= 64) return 0;
    if (kp_rng_below(&d->s->rng, 4) != 0) return 0;
    d->omitted[d->omitted_count++] = p->name;
    return 1;
}

static int set_param(draw *d, const kp_param *p, cJSON *value)
{
    if (!value || kp_params_set(d->params, p->name, value))
        return kp_error_set(d->err, KP_ERR_NOMEM, NULL, 0, 0, "out of memory");
    return 0;
}

/* A record of the entity that has a value for attr (starting at a random one), or NULL. */
static const kp_record *any_with(draw *d, const kp_attr *attr)
{
    size_t n = 0;
    kp_record *const *records = kp_dataset_records(d->s->ds, attr->entity, &n);
    if (n == 0) return NULL;
    const kp_record *first = kp_sample_record(d->s, attr->entity, kp_pattern_skew(kp_dataset_model(d->s->ds), d->pattern));
    if (first && kp_record_get(first, attr)) return first;
    size_t start = (size_t)kp_rng_below(&d->s->rng, n);
    for (size_t i = 0; i < n; i++)
        if (kp_record_get(records[(start + i) % n], attr)) return records[(start + i) % n];
    return NULL;
}

/* The value of a condition's attribute seen from a record (NULL when absent). */
static const cJSON *cond_value(const draw *d, const kp_cond *c, const kp_record *from)
{
    const kp_record *at = from && c->path_len ? kp_dataset_follow_one(d->s->ds, from, c->path, c->path_len) : from;
    if (at && at->entity != c->attr->entity) return NULL;
    return at ? kp_record_get(at, c->attr) : NULL;
}

/* A prefix of the anchor's value: its first half, or one time in four its first character
 * (a prefix many records share: its pages run long and cross the bounds of range buckets). */
static cJSON *prefix_of(draw *d, const cJSON *v)
{
    if (!cJSON_IsString(v)) return kp_data_copy(v, NULL);
    size_t len = strlen(v->valuestring), cut = len / 2 ? len / 2 : len;
    if (len > 1 && kp_rng_below(&d->s->rng, 4) == 0) cut = 1;
    while (cut < len && ((unsigned char)v->valuestring[cut] & 0xC0) == 0x80) cut++; /* whole UTF-8 characters */
    char *text = malloc(cut + 1);
    if (!text) return NULL;
    memcpy(text, v->valuestring, cut);
    text[cut] = '\0';
    cJSON *out = cJSON_CreateString(text);
    free(text);
    return out;
}

static int bind_cond(draw *d, const kp_cond *c, const kp_record *from)
{
    const kp_param *p = c->value.param, *upper = c->op == KP_OP_BETWEEN ? c->upper.param : NULL;
    if ((!p || is_decided(d, p)) && (!upper || is_decided(d, upper))) return 0;
    if (p && !is_decided(d, p) && omit_sometimes(d, p)) p = NULL;
    if (upper && !is_decided(d, upper) && omit_sometimes(d, upper)) upper = NULL;
    if (!p && !upper) return 0;
    const cJSON *v = cond_value(d, c, from);
    if (!v) {
        const kp_record *other = any_with(d, c->attr);
        v = other ? kp_record_get(other, c->attr) : NULL;
    }
    if (!v) {
        if (p && !is_decided(d, p) && !p->is_optional && !p->default_value)
            return kp_error_set(d->err, KP_ERR_DATA, NULL, 0, 0, "no %s record has a value for %s, so parameter :%s of "
                                "pattern '%s' cannot be drawn from the data", c->attr->entity->name, c->attr->name,
                                p->name, d->pattern->name);
        return 0;
    }
    if (c->op == KP_OP_BEGINS_WITH) return p && !is_decided(d, p) ? set_param(d, p, prefix_of(d, v)) : 0;
    if (c->op != KP_OP_BETWEEN) return p && !is_decided(d, p) ? set_param(d, p, kp_data_copy(v, NULL)) : 0;
    /* between: the anchor's value and another record's, in order */
    const kp_record *other = any_with(d, c->attr);
    const cJSON *w = other ? kp_record_get(other, c->attr) : v;
    const cJSON *lo = v, *hi = w;
    if (kp_data_compare(c->attr->type.kind, lo, hi, NULL) > 0) { lo = w; hi = v; }
    if (!c->upper.param && c->upper.literal) hi = v, lo = v;
    if (!c->value.param && c->value.literal) lo = v, hi = v;
    if (p && !is_decided(d, p) && set_param(d, p, kp_data_copy(lo, NULL))) return -1;
    if (upper && !is_decided(d, upper) && set_param(d, upper, kp_data_copy(hi, NULL))) return -1;
    return 0;
}

static int64_t int_of(const cJSON *v, int64_t fallback)
{
    char buf[64];
    const char *t = v ? kp_data_number_text(v, NULL, buf, sizeof buf) : NULL;
    int64_t n = fallback;
    if (t && kp_int_parse(t, strlen(t), &n)) n = fallback;
    return n;
}

static int bind_limit(draw *d, const kp_shape *shape)
{
    const kp_param *p = shape->limit_param;
    if (!p || is_decided(d, p)) return 0;
    int64_t lo = p->min ? int_of(p->min, 1) : 1;
    int64_t hi = p->max ? int_of(p->max, lo) : lo;
    int64_t n;
    if (p->min && p->max && hi >= lo) n = lo + (int64_t)kp_rng_below(&d->s->rng, (uint64_t)(hi - lo) + 1);
    else if (p->default_value) n = int_of(p->default_value, 10);
    else n = shape->limit > 0 ? shape->limit : 10;
    return set_param(d, p, kp_data_int(n));
}

static int bind_offset(draw *d, const kp_shape *shape)
{
    const kp_param *p = shape->offset_param;
    if (!p || is_decided(d, p)) return 0;
    int64_t limit = shape->limit_param ? int_of(kp_params_get(d->params, shape->limit_param->name), shape->limit)
                                       : shape->limit;
    if (limit <= 0) limit = 10;
    int64_t n = kp_rng_below(&d->s->rng, 2) ? 0 : (int64_t)kp_rng_below(&d->s->rng, (uint64_t)(2 * limit) + 1);
    return set_param(d, p, kp_data_int(n));
}

static int walk(draw *d, const kp_shape *shape, const kp_record *context)
{
    if (!shape) return 0;
    const kp_record *next = context;
    if (shape->kind == KP_SHAPE_EACH || shape->kind == KP_SHAPE_COUNT || shape->kind == KP_SHAPE_ONE) {
        kp_record_list reached = {0};
        if (shape->is_root_set) {
            if (d->anchor && kp_record_list_push(&reached, (kp_record *)d->anchor)) goto nomem;
        } else if (context &&
                   kp_dataset_follow_path(d->s->ds, context, shape->hops, shape->hop_count, &reached, d->err)) {
            kp_record_list_free(&reached);
            return -1;
        }
        next = reached.count ? reached.items[kp_rng_below(&d->s->rng, reached.count)] : NULL;
        kp_record_list_free(&reached);
        for (size_t i = 0; i < shape->where_count; i++)
            if (bind_cond(d, &shape->where[i], next)) return -1;
        if (bind_limit(d, shape) || bind_offset(d, shape)) return -1;
    }
    for (size_t i = 0; i < shape->member_count; i++)
        if (walk(d, shape->members[i], next)) return -1;
    return walk(d, shape->value, next);
nomem:
    return kp_error_set(d->err, KP_ERR_NOMEM, NULL, 0, 0, "out of memory");
}

size_t kp_sample_anchor_count(kp_sampler *s, const kp_entity *entity)
{
    zipf_cache *c = cache_for(s, entity, 0);
    return c ? c->count : 0;
}

static int params_from(kp_sampler *s, const kp_pattern *pattern, const kp_record *anchor, kp_params **out, kp_error *err);

int kp_sample_params(kp_sampler *s, const kp_pattern *pattern, kp_params **out, kp_error *err)
{
    double skew = kp_pattern_skew(kp_dataset_model(s->ds), pattern);
    return params_from(s, pattern, kp_sample_record(s, pattern->root, skew), out, err);
}

int kp_sample_params_at(kp_sampler *s, const kp_pattern *pattern, size_t rank, kp_params **out, kp_error *err)
{
    /* the key order does not depend on the skew: the cache is rebuilt only when it changes */
    zipf_cache *c = cache_for(s, pattern->root, kp_pattern_skew(kp_dataset_model(s->ds), pattern));
    const kp_record *anchor = c && rank < c->count ? c->sorted[rank] : NULL;
    return params_from(s, pattern, anchor, out, err);
}

static int params_from(kp_sampler *s, const kp_pattern *pattern, const kp_record *anchor, kp_params **out, kp_error *err)
{
    *out = NULL;
    draw d;
    memset(&d, 0, sizeof d);
    d.s = s;
    d.pattern = pattern;
    d.err = err;
    d.params = kp_params_new();
    if (!d.params) return kp_error_set(err, KP_ERR_NOMEM, NULL, 0, 0, "out of memory");
    d.anchor = anchor;
    int rc = 0;
    for (size_t i = 0; i < pattern->where_count && rc == 0; i++) rc = bind_cond(&d, &pattern->where[i], d.anchor);
    if (rc == 0) rc = walk(&d, pattern->returns, pattern->is_root_set ? NULL : d.anchor);
    /* whatever is left: from any record that has the attribute */
    for (size_t i = 0; i < pattern->param_count && rc == 0; i++) {
        const kp_param *p = pattern->params[i];
        if (is_decided(&d, p) || p->is_optional || p->default_value || p->role != KP_PARAM_VALUE) continue;
        const kp_record *r = p->attr ? any_with(&d, p->attr) : NULL;
        if (!r) {
            rc = kp_error_set(err, KP_ERR_DATA, NULL, 0, 0, "parameter :%s of pattern '%s' cannot be drawn: no %s "
                              "record has a value for it", p->name, pattern->name,
                              p->attr ? p->attr->entity->name : "matching");
            break;
        }
        rc = set_param(&d, p, kp_data_copy(kp_record_get(r, p->attr), NULL));
    }
    if (rc) { kp_params_free(d.params); return -1; }
    *out = d.params;
    return 0;
}
