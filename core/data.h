/*
 * data.h — the neutral sample data: records of every entity, validated against the
 * model and indexed for the oracle, the write machinery and parameter sampling.
 *
 * Data files are NDJSON, one per entity: DIR/<Entity>.ndjson, one record (a JSON
 * object) per line; blank lines are skipped. Every record is checked against the
 * model and the first problem stops the load with `file:line:col: error: ...`:
 * not JSON, not an object, unknown attribute, null in a required attribute, a value
 * of the wrong type, a missing required attribute, a duplicate key or unique value,
 * a dangling reference (foreign key, join record or array element pointing nowhere),
 * and copy_of / derived values that disagree with what the data says. copy_of and
 * derived attributes may be left out of data files: the loader computes them.
 *
 * Records are held in one normal form (see kp_record). Indexes — by key, by unique
 * attribute, by foreign key (the children of a parent), by join-entity side and by
 * array element (both directions of N:M) — are kept consistent by every add, replace
 * and delete. Index structures, records and strings live in the dataset's arena;
 * each record's JSON is a cJSON tree owned by the dataset.
 */
#ifndef KP_DATA_H
#define KP_DATA_H

#include <stddef.h>
#include <stdint.h>
#include <cjson/cJSON.h>

#include "core/error.h"
#include "core/json.h"
#include "core/model.h"

typedef struct kp_dataset kp_dataset;

/* One record. Normal form of `object`: exactly the attributes that have a value
 * (null and absent are the same: absent), in the entity's declaration order; int,
 * counter, decimal and double values (also inside objects, arrays and maps) are
 * cJSON_Raw nodes holding the exact number text. */
typedef struct kp_record {
    const kp_entity *entity;
    cJSON *object;              /* owned by the dataset; replaced, never edited in place */
    uint64_t serial;            /* insertion order across the dataset (stable tie-breaker) */
    long line;                  /* line in the data file; 0 for records added by writes */
    long offset;                /* byte offset of that line, for locating errors */
    int is_deleted;             /* deleted records stay allocated until the dataset is freed */
} kp_record;

/* A growable list of record pointers (malloc'd; free with kp_record_list_free). */
typedef struct kp_record_list {
    kp_record **items;
    size_t count, cap;
} kp_record_list;

int kp_record_list_push(kp_record_list *list, kp_record *record);
void kp_record_list_free(kp_record_list *list);

/* ---- loading ------------------------------------------------------------------- */

/* Loads DIR/<Entity>.ndjson for every entity of the model (a missing file is an error:
 * write an empty file for an entity without records; a .ndjson file that names no
 * entity is an error too), then checks references, copies and derived values.
 * On success *out is a dataset the caller frees with kp_dataset_free (the model must
 * outlive it); on failure *out is NULL and err names the first problem. */
int kp_dataset_load(const kp_model *model, const char *dir, kp_dataset **out, kp_error *err);

/* The same in steps, for tests and fuzzing: an empty dataset, NDJSON text for one
 * entity (`file` names it in messages), then the cross-record checks. */
int kp_dataset_new(const kp_model *model, kp_dataset **out, kp_error *err);
int kp_dataset_add_ndjson(kp_dataset *data, const kp_entity *entity, const char *file, const char *text,
                          size_t len, kp_error *err);
int kp_dataset_finish(kp_dataset *data, kp_error *err);

void kp_dataset_free(kp_dataset *data);

const kp_model *kp_dataset_model(const kp_dataset *data);
/* Grows by one with every record added or removed (caches of record sets check it). */
uint64_t kp_dataset_generation(const kp_dataset *data);

/* ---- reading ------------------------------------------------------------------- */

/* The live records of an entity in insertion order (valid until the next change). */
kp_record *const *kp_dataset_records(const kp_dataset *data, const kp_entity *entity, size_t *count);
size_t kp_dataset_count(const kp_dataset *data, const kp_entity *entity);

/* The value of an attribute in a record (NULL when absent). */
const cJSON *kp_record_get(const kp_record *record, const kp_attr *attr);

/* The record whose key equals the given values (in entity->key order), or NULL. */
kp_record *kp_dataset_find(const kp_dataset *data, const kp_entity *entity, const cJSON *const *key_values);
/* The record with the same key as `object` (a record or just its key attributes), or NULL. */
kp_record *kp_dataset_find_like(const kp_dataset *data, const kp_entity *entity, const cJSON *object);
/* The record whose unique attribute equals value, or NULL. */
kp_record *kp_dataset_find_unique(const kp_dataset *data, const kp_attr *attr, const cJSON *value);

/* Appends the records reached from `record` over one relation direction. Order:
 * array references (KP_LINK_ARRAY, forward) in array order; everything else sorted
 * by the target's key. Returns 0, or -1 when out of memory. */
int kp_dataset_follow(const kp_dataset *data, const kp_record *record, const kp_rel *rel, kp_record_list *out,
                      kp_error *err);
/* Sorts records of one entity by key, in place (equal keys in load order); records already
 * in key order cost one pass. 0, or -1 with err when out of memory. */
int kp_dataset_sort_by_key(const kp_dataset *data, kp_record **records, size_t count, kp_error *err);
/* The one record reached over to-one hops, or NULL when a hop reaches nothing. */
kp_record *kp_dataset_follow_one(const kp_dataset *data, const kp_record *record, kp_rel *const *path,
                                 size_t path_len);
/* Appends the records reached over a relation path (multi-hop flattened in path order). */
int kp_dataset_follow_path(const kp_dataset *data, const kp_record *record, kp_rel *const *path, size_t path_len,
                           kp_record_list *out, kp_error *err);

/* ---- changing (used by writes; no reference checks here: see mutate.h) ----------- */

/* Adds a record: `object` is validated against the entity (types, unknown and
 * required attributes — copies and derived values may be absent), normalised, and
 * indexed; a duplicate key or unique value is refused. Takes ownership of object
 * (freed on failure too). *out (may be NULL) receives the new record. */
int kp_dataset_add(kp_dataset *data, const kp_entity *entity, cJSON *object, kp_record **out, kp_error *err);
/* The same, restoring a removed record at its old place: `serial` is the removed
 * record's serial (the table stays in serial order). Used to undo deletes. */
int kp_dataset_restore(kp_dataset *data, const kp_entity *entity, cJSON *object, uint64_t serial, kp_record **out,
                       kp_error *err);
/* Replaces a record's content (the key may not change), re-indexing it. Takes
 * ownership of object. The kp_record pointer stays valid. */
int kp_dataset_replace(kp_dataset *data, kp_record *record, cJSON *object, kp_error *err);
/* Removes a record from the entity and every index. */
int kp_dataset_remove(kp_dataset *data, kp_record *record, kp_error *err);

/* A new object equal to `object` with attribute `attr` set to a copy of value (NULL:
 * removed), in the entity's declaration order. NULL when out of memory. */
cJSON *kp_record_with(const kp_entity *entity, const cJSON *object, const kp_attr *attr, const cJSON *value);

/* Does a condition hold on a record, the operands already resolved (value is the
 * operand, upper the upper bound of between)? An absent attribute (or one reached
 * through a to-one hop that reaches nothing) satisfies no condition. */
/* The one test of a condition's operator on a value, for the oracle and every backend's
 * client-side filter alike: v the record's value, value (and upper, for BETWEEN) the
 * operands; numbers compared exactly (a model literal by its source text, through doc,
 * the model's document). 0 when v or value is absent. */
int kp_cond_holds(kp_op op, kp_type_kind kind, const cJSON *v, const cJSON *value, const cJSON *upper, const kp_json_doc *doc);
int kp_data_cond_test(const kp_dataset *data, const kp_record *record, const kp_cond *cond, const cJSON *value,
                      const cJSON *upper);

/* The records that reference `record` over a relation and would dangle without it:
 * for a foreign key the holders pointing at it, for a join entity the join records
 * naming it (either side), for an array of references the records whose array holds
 * its key. Appended in key order. */
int kp_dataset_dependents(const kp_dataset *data, const kp_record *record, const kp_relation *relation,
                          kp_record_list *out, kp_error *err);

/* Recomputes every copy_of and derived attribute until nothing changes. `changed`
 * (may be NULL) is called with each record and its next content just before the
 * record is replaced. */
typedef int (*kp_data_change_fn)(void *ctx, const kp_record *record, const cJSON *next, kp_error *err);
int kp_dataset_refresh(kp_dataset *data, kp_data_change_fn changed, void *ctx, kp_error *err);

/* The same after a change of a few records, in time proportional to what they reach: only
 * the records whose computed attributes can read them are recomputed (the records a
 * copy's or aggregate's path reaches them from, at any step, and through a join record),
 * then those that read what moved, until nothing moves. `entities[i]`/`objects[i]` name
 * each changed record's content before and after the change (an object may be NULL: an
 * insert's before, a delete's after). Falls back to kp_dataset_refresh where a computed
 * attribute is itself a link or a derived filter reaches past its records. */
int kp_dataset_refresh_near(kp_dataset *data, const kp_entity *const *entities, const cJSON *const *objects, size_t n,
                            kp_data_change_fn changed, void *ctx, kp_error *err);

/* The value a copy_of or derived attribute must have in a record (a new tree, NULL
 * for "absent"). *failed is set on out-of-memory. */
cJSON *kp_dataset_compute(const kp_dataset *data, const kp_record *record, const kp_attr *attr, int *failed);

/* ---- canonical values (shared by the oracle, writes and sampling) --------------- */

/* Compares two canonical values of the same kind: strings (and timestamps, dates,
 * uuids, enums, blobs) bytewise; int, counter and decimal exactly; double
 * numerically; false < true; structured values by their compact JSON text.
 * `doc` supplies the exact text of number nodes that came from a model file. */
int kp_data_compare(kp_type_kind kind, const cJSON *a, const cJSON *b, const kp_json_doc *doc);
/* Structural equality (numbers compared as numbers). */
int kp_data_equal(const cJSON *a, const cJSON *b, const kp_json_doc *doc);
/* A deep copy whose numbers are cJSON_Raw nodes with the exact text. */
cJSON *kp_data_copy(const cJSON *value, const kp_json_doc *doc);
/* Converts every number node of a tree in place to cJSON_Raw with its exact text. 0/-1. */
int kp_data_rawify(cJSON *value, const kp_json_doc *doc);
/* A number node (cJSON_Raw) from text / an int64. */
cJSON *kp_data_number(const char *text);
cJSON *kp_data_int(int64_t value);
/* Exact text of a number node (Raw or from doc); NULL for non-numbers. */
const char *kp_data_number_text(const cJSON *node, const kp_json_doc *doc, char *buf, size_t size);
/* Exact decimal arithmetic on number texts: a malloc'd result with as many fraction
 * digits as the longer operand ("19.99" + "0.01" = "20.00"). NULL on bad input. */
char *kp_decimal_add(const char *a, const char *b);
char *kp_decimal_sub(const char *a, const char *b);

#endif
