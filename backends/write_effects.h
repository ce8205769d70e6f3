/*
 * write_effects.h — what each write of a model changes, as every backend prices it: for
 * each step, the records it writes and what else those changes reach (copies of a changed
 * attribute, records that reference the changed ones, the pairings of join records,
 * aggregates, uniqueness, cascades), each with how many records it reaches.
 *
 * The effects are facts of the model alone; a backend maps each one to its own
 * containers (items and index entries, documents, rows of every table holding the
 * entity) and prices it. Invariant: counts are the model's expected values (averages) per
 * operation of the write, and the effects of a step come after those of the steps before
 * it, in the order of the kinds below, each kind in model order (entities, then their
 * attributes or relations), so a backend that emits its touches in effect order emits
 * them in the same order on every run.
 */
#ifndef KP_WRITE_EFFECTS_H
#define KP_WRITE_EFFECTS_H

#include <stddef.h>

#include "core/arena.h"
#include "core/error.h"
#include "core/model.h"

typedef enum kp_write_effect_kind {
    KP_EFFECT_RECORDS,      /* the step's own records (entity: the step's) */
    KP_EFFECT_PAIRING,      /* an insert or delete of join records: the pairs of an N:M relation
                               through the step's entity change (rel: the relation's forward
                               direction; entity: the join entity) */
    KP_EFFECT_COPY,         /* an update assigns the source of a copy the model declares (attr:
                               the copy; entity: the records that hold it, reached back along
                               its path) */
    KP_EFFECT_REFERENCE,    /* an update changes records that others reference by a to-one
                               foreign key, or that the join records of an N:M name (rel: the
                               referencing entity's relation to the step's, or the N:M's
                               direction to it; entity: the referencing records, or the join
                               records), where a backend may keep copies of the changed
                               attributes (extended references) */
    KP_EFFECT_AGGREGATE,    /* a derived aggregate over the step's entity (attr: the aggregate;
                               entity: the record that holds it; count: the holders to update,
                               0 when the write inserts the holder with the value) */
    KP_EFFECT_UNIQUE,       /* an insert claims a value of a unique attribute (attr) */
    KP_EFFECT_CASCADE,      /* a delete reaches the records its relation cascades to (rel: the
                               relation of the step's entity, or of a record a cascade reached
                               before, depth first; entity: its target; records: the deleted
                               records of rel's source) */
    KP_EFFECT_DETACH        /* a delete leaves the records of a relation that detaches without
                               their reference (rel, entity, records: as CASCADE) */
} kp_write_effect_kind;

typedef struct kp_write_effect {
    kp_write_effect_kind kind;
    const kp_write_step *step;  /* the step that causes it; its op and assigns say what changed */
    size_t step_index;
    const kp_entity *entity;    /* whose records it reaches */
    const kp_rel *rel;          /* PAIRING, REFERENCE, CASCADE, DETACH; else NULL */
    const kp_attr *attr;        /* COPY, AGGREGATE, UNIQUE; else NULL */
    double records;             /* the step's records per operation: rows times the average fan-out
                                   of its for_each path */
    double per_record;          /* records reached per record of the step (1 for RECORDS) */
    double count;               /* records reached per operation: records * per_record */
} kp_write_effect;

typedef struct kp_write_effect_list {
    kp_write_effect *items;
    size_t count, cap;
} kp_write_effect_list;

/* The effects of every write of a model, computed once: of_write[w] for model->writes[w]. */
typedef struct kp_write_effects {
    kp_arena arena;             /* holds the lists; freed by kp_write_effects_free */
    kp_write_effect_list *of_write;
    size_t write_count;
} kp_write_effects;

/* Fills *out (which the caller frees with kp_write_effects_free, also after a failure) in
 * time linear in the model. 0, or -1 when out of memory. */
int kp_write_effects_build(const kp_model *m, kp_write_effects *out, kp_error *err);
void kp_write_effects_free(kp_write_effects *fx);

/* Does an update step of `w` change attribute `a` of its records: it assigns it, or `a` is an
 * aggregate that a step of the same write moves and the update writes along (a bid's count
 * going in with its item's update)? A key built on such an attribute moves. */
int kp_write_step_changes(const kp_write *w, const kp_write_step *st, const kp_attr *a);

#endif
