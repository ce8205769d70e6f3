/*
 * copies.h — extended references, as every backend weighs them: what the patterns read of
 * the record a to-one relation reaches, and what keeping a copy of it in the referencing
 * records costs the writes.
 *
 * A backend that reads a referenced record once per record it returns (N+1) may instead
 * store a copy of the few attributes the patterns read in each referencing item or row
 * (for an N:M, in each join record: the query table holds what its listing returns).
 * These helpers only measure; each backend decides, stores and reads its copies itself.
 */
#ifndef KP_COPIES_H
#define KP_COPIES_H

#include <stddef.h>

#include "core/arena.h"
#include "core/data.h"
#include "core/model.h"

#define KP_COPY_ATTRS 4          /* a copy holds a few small attributes, never a record */
#define KP_COPY_BYTES 256.0      /* and at most this many bytes of them on average */

/* What the patterns read through one to-one relation: the attributes of the record at its
 * end, or something a copy cannot answer (a path going on past it, a "$one" with nested
 * nodes or conditions, more than KP_COPY_ATTRS attributes). */
typedef struct kp_copy_need {
    const kp_rel *rel;
    const kp_attr *attrs[KP_COPY_ATTRS];
    size_t attr_count;
    int is_unfit;
} kp_copy_need;

/* Adds what pattern p reads through need->rel (its response, its conditions). Attributes
 * the referencing record's foreign key holds are not needed. */
void kp_copy_need_pattern(kp_copy_need *need, const kp_pattern *p);

/* The rule's "a few small attributes": nothing the patterns read is unfit for a copy, and
 * need's attributes take at most KP_COPY_BYTES of the backend's own size model. */
int kp_copy_is_few(const kp_copy_need *need, double (*attr_bytes)(const kp_attr *a));

/* Will the join records of an N:M listing (os, over r, of pattern p) copy what it returns of
 * its targets? The rule a backend's decision weighs over every pattern, for this pattern
 * alone: the listing declares an order, reads a few small attributes, and the target reads
 * the copies save (`rows` join records per request) outweigh the rewrites. Then an order on
 * the targets' own attributes can key the join records (a clustering column, an index's
 * sort key). */
int kp_copy_join_likely(const kp_model *m, const kp_mix *mix, const kp_pattern *p, const kp_rel *r, const kp_shape *os,
                        double rows, double (*attr_bytes)(const kp_attr *a));

/* The records that hold copies of one record `via` reaches, on average: those that
 * reference it (the relation's fan-out), or for an N:M the join records naming it. */
double kp_copy_holders_per(const kp_rel *via);

/* Two 1:N hops (a user's orders, then their lines) as one hop from the first's source to the
 * second's target, its fan-out the product of both (what a listing over the path reads when
 * the last records copy the first hop's reference); arena-owned. NULL when out of memory or
 * a hop has no fan-out. */
const kp_rel *kp_copy_two_hop_path(kp_arena *arena, const kp_rel *first, const kp_rel *second);

/* Records rewritten per second under `mix` to keep copies of need's attributes equal to
 * their source: every update of the referenced record that assigns one of them rewrites
 * the copy in each record that references it (the relation's average fan-out). */
double kp_copy_write_rate(const kp_model *m, const kp_mix *mix, const kp_copy_need *need);

/* A place where a backend reads a referenced record once per record it returns, which a
 * copy could answer: its fetch node (`hop`) and the node whose records it follows
 * (`parent`), both the backend's own types. */
typedef struct kp_copy_site {
    void *hop;
    const void *parent;
    const kp_pattern *p;
    const kp_rel *rel;          /* the to-one relation the hop follows */
    const char *group;          /* what one decision covers: sites of one group share their copies */
    size_t group_id, order;     /* kp_copy_sites_group */
} kp_copy_site;

typedef struct kp_copy_sites { kp_copy_site *items; size_t count, cap; } kp_copy_sites;

/* Adds a site when r is a reference a copy can answer (a to-one foreign key its source
 * holds, an N:M whose join records name the targets, or with_arrays an array of references
 * its source holds, to another entity); its group is "<scope>|<source>|<relation>|<inverse>"
 * (scope: what else a decision is per, e.g. a Cassandra table; NULL: none). 0, or -1 when
 * out of memory. */
int kp_copy_sites_add(kp_arena *arena, kp_copy_sites *sites, void *hop, const void *parent, const kp_pattern *p,
                      const kp_rel *r, const char *scope, int with_arrays);

/* Would copies over r, an array of references, go stale: a write changes the attributes
 * copied (`cost`, kp_copy_write_rate, above 0) or deletes one of r's targets? A backend
 * rewrites an array's copies with the records that hold them only (their own writes, where
 * the data gives the copies again), so it takes such copies only where they never move. 0
 * for any other relation. */
int kp_copy_array_goes_stale(const kp_rel *r, double cost);

/* The attribute of `e` the model declares a copy of r's target's `a` (copy_of "<r>.<a>"),
 * or NULL: such a copy answers without one of the design's own. */
const kp_attr *kp_copy_own(const kp_entity *e, const kp_rel *r, const kp_attr *a);

/* The rule every backend decides a copy by, weighed over the sites of one group (one
 * decision): take it when the patterns need a few small attributes (KP_COPY_ATTRS,
 * KP_COPY_BYTES of the backend's own size model) and the reads it saves per second
 * outweigh the copies the writes rewrite per second. */
typedef struct kp_copy_verdict {
    kp_copy_need need;          /* what the patterns read through the relation */
    kp_copy_need added;         /* of it, what the model does not copy itself (kp_copy_own) */
    double saved;               /* reads saved per second: each site's pattern rate times its parent's rows
                                   (a site whose parent is its hop: one record), times the elements of an
                                   array of references */
    double cost;                /* copies rewritten per second (kp_copy_write_rate of `added`) */
    int is_few, is_taken;
    int is_stale;               /* an array's copies would move (kp_copy_array_goes_stale): not taken */
    int is_all_own;             /* every attribute needed is a copy the model declares */
    const char *fields;         /* "nickname, name", or "its key" */
} kp_copy_verdict;

void kp_copy_weigh(kp_arena *arena, const kp_model *m, const kp_mix *mix, const kp_copy_site *sites, size_t count,
                   double (*parent_rows)(const void *parent), double (*attr_bytes)(const kp_attr *a), kp_copy_verdict *out);

/* Orders the sites by group (groups in order of first appearance), keeping the order they
 * were found in within a group, so each group is a run. Returns the number of groups, or
 * -1 when out of memory. */
long kp_copy_sites_group(kp_arena *arena, kp_copy_sites *sites);

/* The records that hold copies of `target` over `via` in `data`: those that reference it, or
 * for an N:M the join records naming it. 0, or -1 (err set). */
int kp_copy_holder_records(const kp_dataset *data, const kp_record *target, const kp_rel *via, kp_record_list *out, kp_error *err);

/* Calls fn once for each record that references `target` (reached over the reverse of
 * `via` in `target_data`) and is the same in both datasets — one whose copies of target's
 * attributes a write moved without changing it — unless `done` holds it already (then it
 * is added). A record that changed itself is its write's own. */
typedef int (*kp_copy_holder_fn)(void *ctx, const kp_record *before, const kp_record *after, kp_error *err);
int kp_copy_holders(const kp_dataset *before, const kp_dataset *after, const kp_record *target, const kp_dataset *target_data,
                    const kp_rel *via, kp_record_list *done, kp_copy_holder_fn fn, void *ctx, kp_error *err);

/* The record one element of an array of references (`via`, held by the source) names: the
 * target whose key is the element; NULL when none (or out of memory). */
const kp_record *kp_copy_element_source(const kp_dataset *data, const kp_rel *via, const cJSON *element);

/* A copy over an array of references (`via`) that `holder` holds: the targets' `a`, one per
 * element in the array's order, null where a target has none (a new array); NULL when the
 * holder has no array (or out of memory). */
cJSON *kp_copy_element_values(const kp_dataset *data, const kp_rel *via, const kp_attr *a, const kp_record *holder);

/* The target the index-th element of an array of references names, made of the element (its
 * key) and its value in each of the n copies' lists (`lists[k]` holds attrs[k]; a null or
 * missing value is left out): what a copy over an array reads back. NULL when out of memory. */
cJSON *kp_copy_element_target(const kp_rel *via, const cJSON *element, const kp_attr *const *attrs, const cJSON *const *lists,
                              size_t n, int index);

/* Does p read nothing of r's target but the key the referencing record holds (no attribute
 * of it, no path going on through it but by its key)? Then a read of the target only confirms
 * a record the data's references guarantee. */
int kp_copy_needs_only_key(const kp_pattern *p, const kp_rel *r);

/* The referenced record's key from the referencing record's foreign key (for an N:M, from
 * a join record: the side `rel` leads to), as a new object {key attribute: value}; NULL
 * when the reference is unset (or out of memory: *is_nomem). */
cJSON *kp_copy_target_key(const kp_rel *rel, const cJSON *referencing, int *is_nomem);

/* The record whose attributes `holder` copies over `via`: the one its foreign key
 * references, or for a join record of an N:M the target it names; NULL when none. */
const kp_record *kp_copy_source(const kp_dataset *data, const kp_record *holder, const kp_rel *via);

/* The rule kp_copy_holders applies to each record, for one record of entity `e` named by
 * `like` (its key attributes): fn once, when the record is in both datasets and the same in
 * both, unless `done` holds it already (then it is added). Also for the records whose
 * derived items a join record moved (DynamoDB's adjacency lists over an N:M). */
int kp_copy_once(const kp_dataset *before, const kp_dataset *after, const kp_entity *e, const cJSON *like,
                 kp_record_list *done, kp_copy_holder_fn fn, void *ctx, kp_error *err);

#endif
