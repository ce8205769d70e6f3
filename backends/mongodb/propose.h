/*
 * propose.h — what propose.c (the layout decisions) and plan.c (fetch trees, indexes,
 * plans) share while a design is being built. Private to backends/mongodb/.
 */
#ifndef KP_MONGO_PROPOSE_H
#define KP_MONGO_PROPOSE_H

#include "backends/mongodb/mongo.h"

typedef struct builder {
    const kp_model *m;
    const kp_mix *mix;
    kp_design *d;
    mg_layout *L;
    kp_arena *arena;    /* the layout's arena */
    kp_error *err;
    int alternative;    /* the alternatives compare shows (MG_RULES: the recommended design) */
    /* per entity (by index): the patterns, in model order, that walk a relation hop
     * arriving at it — the only ones a rule about a relation to it needs to walk */
    size_t **reaching;
    size_t *reaching_count;
    /* per entity (by index): the rate of records its write steps write (rows x fan-out x
     * rps), summed once over the writes in model order; NULL until computed */
    double *write_rate_of;
    /* per entity (by index), built once by index_entities(): whether it is the join entity
     * of an N:M relation, and the patterns (model order) rooted at it */
    unsigned char *is_join_of;
    kp_index_list *rooted_at;
    int is_out_of_memory;   /* a fetch tree could not grow */
} builder;

enum { MG_RULES, MG_EMBED_ALL, MG_REFERENCE_ALL };

/* One relation hop a pattern walks (mg_walk_pattern). */
typedef struct mg_hop_use {
    const kp_rel *rel;
    size_t index, count;        /* position in its path, path length */
    const kp_shape *node;       /* the $each / $one / $count the path belongs to, or NULL */
    const kp_attr *leaf;        /* a leaf path or a condition: the attribute at its end */
    int is_cond;                /* a condition's path */
    kp_rel *const *path;
} mg_hop_use;

const char *mg_bprintf(builder *B, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
mg_entity *mg_entity_of(builder *B, const kp_entity *e);
double mg_pattern_rate(builder *B, const kp_pattern *p);
void mg_walk_pattern(builder *B, const kp_pattern *p, void (*fn)(builder *, const kp_pattern *, const mg_hop_use *, void *),
                     void *ctx);
/* mg_walk_pattern over the patterns that walk a hop arriving at `target` (any
 * relation), in model order: what the rules use instead of walking every pattern. */
void mg_walk_patterns_reaching(builder *B, const kp_entity *target,
                               void (*fn)(builder *, const kp_pattern *, const mg_hop_use *, void *), void *ctx);
/* A listing two forward 1:N hops away whose last records have a collection of their own
 * and whose conditions and order are those records' own fields (buy-again in the reference
 * design: a user's orders' lines): the relation from those records to the middle ones, over
 * which they copy the first hop's reference (decide_two_hop_extrefs), else NULL. */
const kp_rel *mg_two_hop_listing(builder *B, const kp_shape *s);
/* Its copy, once decided: the extended reference of s's last records holding the first
 * hop's reference, or NULL. */
const mg_extref *mg_two_hop_extref(builder *B, const kp_shape *s);
double mg_attr_bytes(const kp_attr *a);
double mg_record_bytes(const kp_entity *e);
double mg_element_bytes(const mg_entity *me);
double mg_document_bytes(const mg_entity *me);
/* The same with every embedded array at its maximum fan-out. */
double mg_document_max_bytes(const mg_entity *me);
/* A document at the largest a read can find it (what a plan's bytes bound prices): every
 * field present at kp_attr_max_ratio times its average, embedded arrays at their fan-out max. */
double mg_document_bound_bytes(const mg_entity *me);

/* plan.c */
int mg_plan_pattern(builder *B, const kp_pattern *p, mg_fetch **out);
void mg_finish_indexes(builder *B);
void mg_plan_ops(builder *B, const kp_pattern *p, mg_fetch *root, kp_plan *plan);
void mg_plan_writes(builder *B);
void mg_describe_collections(builder *B);

#endif
