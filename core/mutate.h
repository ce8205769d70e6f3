/*
 * mutate.h — applying write patterns to the neutral data, and undoing them.
 *
 * `verify --writes` replays a write on a live server and on the dataset, then checks
 * that reads still agree with the oracle; every change is logged with before- and
 * after-images so that it can be undone exactly.
 *
 * Semantics (docs/model.md "Writes"):
 *  - insert: adds the step's record; with if_absent an existing key makes the step a
 *    no-op (skipped); without it an existing key refuses the step.
 *  - update: every record matching `where` whose `if` holds gets its assignments
 *    (set / increment / decrement; an optional parameter left out drops its
 *    assignment); no matching record: skipped.
 *  - upsert: an update when the record exists, else an insert of the step's record
 *    (may be null) completed with the `where` equalities and the assignments
 *    (increments start from 0).
 *  - delete: each matching record whose `if` holds is removed; for every relation
 *    whose records would dangle (kp_dataset_dependents) the relation's on_delete
 *    applies: restrict refuses the step, cascade deletes the dependents (recursively;
 *    for N:M the links: join records or array elements), detach clears their
 *    foreign key (removes the array element; deletes the join record).
 *  - for_each: the step runs once per record reached over the path from the records
 *    the first step wrote; an insert ties each new record to the reached one through
 *    `link` (setting its foreign key); an update or delete acts on the reached records.
 *  - after every step, copy_of and derived attributes are recomputed (logged too).
 *  - a skipped or refused step in an atomic write undoes the whole write; in a
 *    non-atomic write a skipped step is passed over and a refused step stops it
 *    (its own partial changes undone).
 */
#ifndef KP_MUTATE_H
#define KP_MUTATE_H

#include <stddef.h>
#include <cjson/cJSON.h>

#include "core/data.h"
#include "core/error.h"
#include "core/model.h"
#include "core/params.h"

typedef struct kp_change {
    const kp_entity *entity;
    cJSON *before;              /* the record before the change; NULL for an insert */
    cJSON *after;               /* after; NULL for a delete */
    uint64_t serial;            /* the record's serial (a deleted record is restored in place) */
} kp_change;

typedef struct kp_change_log {
    kp_change *items;           /* in the order the changes were made */
    size_t count, cap;
} kp_change_log;

/* One operation of a write pattern: parameter values and, per step, the record an
 * insert or upsert writes. */
typedef struct kp_write_request {
    const kp_write *write;
    kp_params *params;          /* owned */
    cJSON *records;             /* owned JSON array, one item per step: an object for an insert or
                                   upsert (null for other steps); an insert with for_each takes an
                                   array, item j for the j-th reached record (the last is reused) */
} kp_write_request;

typedef enum kp_write_outcome {
    KP_WRITE_APPLIED,           /* every step did its work */
    KP_WRITE_PARTIAL,           /* non-atomic: some steps were skipped */
    KP_WRITE_SKIPPED,           /* nothing changed: conditions false / already present / nothing matched */
    KP_WRITE_REFUSED            /* a restrict on_delete or a duplicate key refused it */
} kp_write_outcome;

typedef struct kp_write_result {
    kp_write_outcome outcome;
    size_t steps_applied, steps_skipped;
    size_t records_written;     /* records inserted, updated or deleted by the steps themselves */
    char reason[400];           /* why a step was skipped or refused (the first one) */
} kp_write_result;

/* Applies an operation. Every change goes to `log` (appended; may be NULL). Returns 0
 * with result filled (a refusal is a result, not an error), or -1 with err for bad
 * requests (missing parameter, a record that does not fit its entity); on -1 nothing
 * of this operation remains applied. */
int kp_write_apply(kp_dataset *data, const kp_write_request *request, kp_change_log *log, kp_write_result *result,
                   kp_error *err);

/* Undoes the logged changes from the end back to `mark` (0: all), newest first, and
 * drops them from the log. */
int kp_change_log_undo(kp_dataset *data, kp_change_log *log, size_t mark, kp_error *err);
void kp_change_log_free(kp_change_log *log);

/* The records the changes name (each once, by key) where `before` and `after` differ on
 * them: fn(ctx, entity, old, cur) with old NULL for a record `before` lacks, cur NULL for
 * one `after` lacks — in entity order, those `after` holds first, each group in record
 * order. The time a write's changes take, not the data's size. */
typedef int (*kp_change_pair_fn)(void *ctx, const kp_entity *entity, const kp_record *old, const kp_record *cur,
                                 kp_error *err);
int kp_changed_records(const kp_dataset *before, const kp_dataset *after, const kp_change *changes, size_t count,
                       kp_change_pair_fn fn, void *ctx, kp_error *err);

/* The log as JSON: [{"entity": E, "op": "insert"|"update"|"delete", "before": ..., "after": ...}]. */
cJSON *kp_change_log_to_json(const kp_change_log *log, size_t from);

void kp_write_request_free(kp_write_request *request);
/* {"write": name, "params": {...}, "records": [...]} (a new tree). */
cJSON *kp_write_request_to_json(const kp_write_request *request);

const char *kp_write_outcome_name(kp_write_outcome outcome);

#endif
