/*
 * write_gen.h — realistic operations of a write pattern, drawn from the data.
 *
 * `verify --writes` and `keyplan expect --after-write` need operations that a real
 * application would send: an update picks an existing record (spread by the write's
 * skew), an insert makes a fresh record (migrations/generate.h) whose key and unique
 * values collide with nothing, whose references name existing records, and whose
 * required timestamps are "now" (one second after the newest value of the entity, so
 * a new record sorts first in a newest-first list; optional timestamps are left out).
 * A delete prefers a record it is allowed to delete (no restrict dependents).
 */
#ifndef KP_WRITE_GEN_H
#define KP_WRITE_GEN_H

#include <stdint.h>

#include "core/data.h"
#include "core/mutate.h"
#include "migrations/generate.h"

/* Fills *out with one operation of `write` (free with kp_write_request_free). The
 * same dataset content, generator and seed give the same operation. The dataset is
 * left exactly as it was (candidates are tried and undone). */
int kp_write_generate(kp_dataset *data, kp_generator *gen, const kp_write *write, uint64_t seed,
                      kp_write_request *out, kp_error *err);

#endif
