/*
 * generate.h — synthetic sample data for a model: `keyplan generate`, and single
 * records or values for write operations (verify --writes, the oracle's tests).
 *
 * Every value is a pure function of (seed, entity, attribute, record number): record
 * i of an entity is the same whether the whole dataset is written, or only that
 * record or one of its attributes is asked for, in any order. A relation is laid out
 * as a fan-out (a parent's children are a range of positions, computed on demand from
 * a split tree), so referential integrity is exact and a parent's derived aggregates
 * are computed from its children as they are generated.
 *
 * Memory does not grow with the data: about 200 KiB per relation whatever its size,
 * plus buffers — except for a derived aggregate over a path that cannot be listed
 * from its source (an N:M walked from its `to` side, or the second reference of a
 * two-reference key), which holds 8 bytes per record of the entity that has it.
 * Peak RSS measured: ~10 MiB from 0.4 to 20 million records (bench/README.md).
 *
 * Record numbers: 0 .. count-1 are the dataset's records. A number >= count names a
 * fresh record that is not in the dataset (record count + s is the s-th fresh one):
 * its keys and unique attributes collide with no dataset record and no other fresh
 * record, its foreign keys name existing records, and its derived aggregates are
 * those of a record with no related records yet (count 0, sum 0, min/max absent).
 */
#ifndef KP_GENERATE_H
#define KP_GENERATE_H

#include <stddef.h>
#include <signal.h>
#include <stdint.h>
#include <cjson/cJSON.h>

#include "core/error.h"
#include "core/model.h"

typedef struct kp_generator kp_generator;

/* Prepares a generator for a loaded model (whose counts already carry --scale).
 * Builds the relation layouts; derived aggregates are computed lazily, on first use.
 * On success *out is freed by the caller with kp_generator_free(); the model must
 * outlive it. Fails (KP_ERR_MODEL) when the model asks for something the generator
 * cannot produce consistently, e.g. a 1:1 relation whose holder has more records
 * than the other side, or a key that cannot be made unique. */
int kp_generator_new(const kp_model *model, uint64_t seed, kp_generator **out, kp_error *err);
/* A generator keeps caches (the last parent found, a parent's N:M picks): use one per
 * thread. Two generators of the same model and seed give the same values. */
void kp_generator_free(kp_generator *gen);

uint64_t kp_generator_seed(const kp_generator *gen);

/* Number of records of the entity in the generated dataset: the model's count,
 * except that a scaled-down entity that others reference keeps at least one record,
 * and an entity whose key pairs two references has at most as many records as there
 * are distinct pairs (both can happen only at small scales). */
int64_t kp_generator_count(const kp_generator *gen, const kp_entity *entity);

/* Appends record `index` of the entity as one line of canonical JSON (keys in the
 * entity's attribute order, absent optional attributes left out, no newline) to
 * *buf (a malloc'd buffer of *cap bytes, holding *len bytes; grown as needed).
 * Returns 0, or -1 with err filled. */
int kp_generator_record_text(kp_generator *gen, const kp_entity *entity, int64_t index, char **buf,
                             size_t *len, size_t *cap, kp_error *err);

/* Record `index` as a cJSON object; ints and decimals are cJSON_Raw nodes holding
 * their exact text (kp_number_text reads them). Caller frees with cJSON_Delete().
 * NULL with err filled on failure. */
cJSON *kp_generator_record(kp_generator *gen, const kp_entity *entity, int64_t index, kp_error *err);

/* A fresh record for an insert: the same as kp_generator_record(gen, entity,
 * count + sequence). Distinct sequences give records that collide neither with the
 * dataset nor with each other. */
cJSON *kp_generator_new_record(kp_generator *gen, const kp_entity *entity, uint64_t sequence, kp_error *err);

/* The canonical value of one attribute of record `index` (an entity attribute, not
 * an object sub-field). *out is a new cJSON node (caller frees), or NULL when the
 * attribute is absent from that record. Returns 0, or -1 with err filled. */
int kp_generator_value(kp_generator *gen, const kp_attr *attr, int64_t index, cJSON **out, kp_error *err);

/* A value for `set` in an update: the attribute's value in fresh record
 * count + sequence, but always present (optional attributes included). For a unique
 * attribute it differs from every value in the dataset. Foreign keys name an
 * existing record. Returns 0, or -1 with err filled. */
int kp_generator_fresh_value(kp_generator *gen, const kp_attr *attr, uint64_t sequence, cJSON **out,
                             kp_error *err);

/* ---- whole datasets ------------------------------------------------------------- */

typedef struct kp_generate_stats {
    int64_t records;            /* records written, all entities */
    int64_t bytes;              /* bytes written */
    double seconds;             /* wall time */
} kp_generate_stats;

/* Called after each entity's file is complete (may be NULL). */
typedef void (*kp_generate_progress_fn)(const kp_entity *entity, int64_t records, int64_t bytes, void *ctx);
/* Called while an entity's file is written (about every MiB): records of `total` so far. */
typedef void (*kp_generate_tick_fn)(const kp_entity *entity, int64_t records, int64_t total, void *ctx);

typedef struct kp_generate_options {
    uint64_t seed;                      /* the same seed, model and scale give identical files */
    kp_generate_progress_fn progress;   /* optional */
    void *progress_ctx;
    kp_generate_tick_fn tick;           /* optional: progress inside an entity (rate, ETA) */
    volatile sig_atomic_t *interrupted; /* set (e.g. by SIGINT) to stop; the run then leaves no file */
    int skip_space_check;               /* do not compare the estimated size with the free space */
} kp_generate_options;

/* The bytes the files of `model` will take, estimated from its counts and attribute sizes
 * (kp_generate_dataset refuses to start when the output's filesystem has less free). */
double kp_generate_estimate_bytes(const kp_model *model);

/* Writes DIR/<Entity>.ndjson for every entity (one record per line), creating DIR
 * when needed. Files are written under DIR/.tmp and renamed into place when all are
 * complete, so DIR never holds a half-written file of this run. On failure or an
 * interrupt (KP_ERR_IO naming the path, a model error, not enough free space for the
 * estimated size — checked before anything is written) nothing of this run is left: DIR/.tmp
 * is emptied and removed. stats may be NULL. */
int kp_generate_dataset(const kp_model *model, const char *dir, const kp_generate_options *options,
                        kp_generate_stats *stats, kp_error *err);

#endif
