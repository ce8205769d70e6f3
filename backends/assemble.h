/*
 * assemble.h — turning what a backend read from a server into the declared response.
 *
 * A backend's execute fetches records with the requests its plan names, converts each
 * item / document / row back into a neutral record (the entity's attributes in
 * canonical JSON), and tells the assembler how they hang together: which records are
 * the roots, and for each response-shape node (an $each, $one or $count) and each
 * parent record, the children it read, in the order the server returned them. For a
 * leaf reached through to-one relations ("author.surname") it links the hop records.
 * kp_assemble then walks the shape and builds exactly the JSON the oracle would.
 *
 * Invariant: the assembler never reads anything the backend did not fetch, and never
 * reorders what the server ordered — unless the backend marks a node as ordered in
 * the client (the plan says so: a BatchGetItem, a scatter-gather), in which case it
 * sorts with the same comparator as the oracle and applies the limit.
 */
#ifndef KP_ASSEMBLE_H
#define KP_ASSEMBLE_H

#include <cjson/cJSON.h>

#include "core/error.h"
#include "core/model.h"
#include "core/params.h"

typedef struct kp_fetched kp_fetched;
typedef struct kp_frec {
    const kp_entity *entity;
    cJSON *object;              /* neutral record (owned by the kp_fetched) */
} kp_frec;

kp_fetched *kp_fetched_new(void);
void kp_fetched_free(kp_fetched *f);

/* Sorts records of one entity by its key, stably: the order the oracle follows a relation in
 * when the pattern declares none (a read whose server gave no order sorts its records so).
 * 0, or -1 when out of memory. */
int kp_fetched_sort_by_key(kp_frec **recs, size_t n);

/* Adds a record (taking object); the same entity and key added twice returns the
 * first record, completed with the attributes only the second held (a copy of a few
 * attributes, then the whole record), and frees the second object. NULL when out of memory. */
kp_frec *kp_fetched_add(kp_fetched *f, const kp_entity *entity, cJSON *object);
/* The root records (a single root: one; a root set: in server order). */
int kp_fetched_add_root(kp_fetched *f, kp_frec *record);
/* Appends child under (edge, parent): edge is a kp_shape (an $each / $one / $count
 * node) or a kp_rel (a to-one hop of a leaf path). */
int kp_fetched_link(kp_fetched *f, const void *edge, const kp_frec *parent, kp_frec *child);
/* A $count read as a number (Select COUNT). */
int kp_fetched_set_count(kp_fetched *f, const kp_shape *shape, const kp_frec *parent, long count);
/* Marks an $each whose children the client must sort and limit. */
void kp_fetched_client_order(kp_fetched *f, const kp_shape *shape);
/* For a client-ordered paged $each: the page starts strictly after `token` (the
 * oracle's token form: the last element's order-key values), and after kp_assemble
 * kp_fetched_next_token tells the next page's token (NULL on the last page). */
int kp_fetched_client_page(kp_fetched *f, const char *token, kp_error *err);
const char *kp_fetched_next_token(const kp_fetched *f);
/* Root-set records the client must filter by the pattern's conditions on related
 * records (reached through linked to-one hops). */
void kp_fetched_client_filter(kp_fetched *f);
/* The records linked under (edge, parent), in order. */
/* The records of one client-ordered page among recs[0..n): sorted in place by the shape's
 * order, those up to the page token dropped (is_paged: s is the pattern's token-paged
 * $each), then `skip` more (an offset page), cut at limit (0: none); returns how many now
 * lead recs. A backend that read more than the page (every bucket up to the limit) follows
 * only these on. */
size_t kp_fetched_page_cut(const kp_fetched *f, const kp_shape *s, int is_paged, int64_t skip, int64_t limit, kp_frec **recs,
                           size_t n);
kp_frec *const *kp_fetched_children(const kp_fetched *f, const void *edge, const kp_frec *parent, size_t *count);
size_t kp_fetched_record_count(const kp_fetched *f);

/* A value the server holds in a type the model does not allow for `attr` (an int stored as
 * a string): a string that can never equal the oracle's value, so verify reports a
 * mismatch at that value's JSON path, naming what was found and where (`found`: the
 * database's own rendering and the item's key) — a wrong value is a failed check of the
 * pattern, never server trouble that stops the run. A new cJSON string, or NULL when out
 * of memory. */
cJSON *kp_wrong_type_value(const kp_attr *attr, const char *found);

/* Builds the response. `model` gives its document, so conditions compare the model's
 * literals by their source text as the oracle does (kp_cond_holds); `params` are the
 * resolved parameter values; `token` is the
 * value of "$token" leaves (NULL: null). A single root with no record gives JSON null.
 * Returns a new tree (cJSON_Delete), or NULL with err filled. */
cJSON *kp_assemble(const kp_model *model, const kp_fetched *f, const kp_pattern *pattern, const kp_params *params, const char *token,
                   kp_error *err);

#endif
