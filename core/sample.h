/*
 * sample.h — drawing parameter values that exist in the data, spread by skew.
 *
 * verify asks the server and the oracle the same questions; the questions come from
 * here. A request picks an anchor record of the pattern's root entity (Zipf over the
 * records in key order: rank r has weight 1/(r+1)^s, s = kp_pattern_skew; 0 is
 * uniform) and binds every parameter from it or from records reached from it, so
 * that a condition matches at least the anchor. Everything is a pure function of the
 * seed and the dataset's content.
 */
#ifndef KP_SAMPLE_H
#define KP_SAMPLE_H

#include <stdint.h>

#include "core/data.h"
#include "core/error.h"
#include "core/model.h"
#include "core/params.h"

/* A small deterministic generator (splitmix64). */
typedef struct kp_rng { uint64_t state; } kp_rng;
void kp_rng_seed(kp_rng *rng, uint64_t seed);
uint64_t kp_rng_next(kp_rng *rng);
uint64_t kp_rng_below(kp_rng *rng, uint64_t n);  /* uniform in [0, n); 0 when n is 0 */
double kp_rng_unit(kp_rng *rng);                 /* uniform in [0, 1) */

typedef struct kp_sampler kp_sampler;

/* A sampler over a dataset (which must outlive it). */
int kp_sampler_new(const kp_dataset *data, uint64_t seed, kp_sampler **out, kp_error *err);
void kp_sampler_free(kp_sampler *sampler);
kp_rng *kp_sampler_rng(kp_sampler *sampler);

/* A record of the entity drawn with Zipf exponent `skew` over its records in key
 * order (NULL when the entity has none). */
kp_record *kp_sample_record(kp_sampler *sampler, const kp_entity *entity, double skew);

/* Parameter values for one request of the pattern: root conditions from the anchor
 * record; conditions inside the shape ($where, $one, $count) from records reached
 * from it (or any record of that entity when none is reached); ranges around the
 * anchor's value; begins_with with a prefix of it; an optional parameter is left out
 * one time in four; page sizes within their bounds; offsets 0 or within two pages.
 * *out is a new set (kp_params_free). An entity without records gives an error
 * (KP_ERR_DATA) when a required parameter cannot be drawn. */
int kp_sample_params(kp_sampler *sampler, const kp_pattern *pattern, kp_params **out, kp_error *err);

/* How many records an entity has: the anchors a pattern rooted there can start from. */
size_t kp_sample_anchor_count(kp_sampler *sampler, const kp_entity *entity);
/* The same as kp_sample_params with a chosen anchor: the pattern's root record of rank
 * `rank` in key order (0 is the first key, the hottest under a Zipf skew). */
int kp_sample_params_at(kp_sampler *sampler, const kp_pattern *pattern, size_t rank, kp_params **out, kp_error *err);

#endif
