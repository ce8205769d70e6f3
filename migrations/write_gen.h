/*
 * write_gen.h — realistic operations of a write pattern, drawn from the data.
 *
 * `verify --writes` and `keyplan expect --after-write` need operations that a real
 * application would send:
 *  - an insert makes a fresh record (migrations/generate.h; an existing record with
 *    fresh key and unique values when the generator has no fresh one) whose key and
 *    unique values collide with nothing, whose references name existing records (a
 *    1:1 reference a parent that has no partner yet), and whose required timestamps
 *    are "now" (one second after the newest value of the entity, so a new record
 *    sorts first in a newest-first list; optional timestamps are left out);
 *  - the steps of one operation hang together: a record a step inserts references
 *    what earlier steps wrote (an order line names the order the first step inserts;
 *    a shipment, the order the first step ships), and a parameter named like an
 *    attribute of a record an earlier step inserts takes its value (the bid's itemId,
 *    amount and placedAt are those of the item update that follows);
 *  - an update, upsert or delete acts on a record (spread by the write's skew) for
 *    which it can apply: its `where` and `if` hold, a delete meets no restrict, a
 *    later 1:1 insert finds its slot free; an inserted record's free attribute (not
 *    key, unique or computed) that picks it is set to match the record chosen;
 *  - an upsert inserts a new key half the time and updates an existing record else.
 * An operation that cannot apply is still drawn when nothing better exists — an
 * if_absent insert when every key is taken (skipped), a delete when every record has
 * restrict dependents (refused) — since verifying it checks that the server refuses
 * or skips it too.
 */
#ifndef KP_WRITE_GEN_H
#define KP_WRITE_GEN_H

#include <stdint.h>

#include "core/data.h"
#include "core/mutate.h"
#include "migrations/generate.h"

/* Fills *out with one operation of `write` (free with kp_write_request_free). Up to 20
 * candidates are drawn and tried (each undone): the first that applies, else the one
 * with the best outcome (partial, skipped, refused). The same dataset content,
 * generator and seed give the same operation; the dataset is left exactly as it was.
 * Fails (-1, err) only when no operation can be drawn at all: out of memory, or no
 * unique value left for a new record. */
int kp_write_generate(kp_dataset *data, kp_generator *gen, const kp_write *write, uint64_t seed,
                      kp_write_request *out, kp_error *err);

#endif
