/*
 * support.h — small helpers shared by the unit tests: reading fixture files, running
 * the keyplan binary and capturing its output.
 */
#ifndef KP_TEST_SUPPORT_H
#define KP_TEST_SUPPORT_H

#include <stddef.h>

#include "backends/backend.h"
#include "core/data.h"

/* Reads a whole file (relative paths are taken from the source tree). Returns a
 * NUL-terminated malloc'd buffer, or NULL. */
char *kp_test_read_file(const char *path, size_t *len);

/* Runs `keyplan` (the built binary) with the given shell-quoted argument string,
 * capturing stdout and stderr together. Returns the exit status; *output is malloc'd. */
int kp_test_run(const char *args, char **output);

/* A kp_data_change_fn for kp_dataset_refresh after a write: any record whose copies or
 * aggregates a full refresh would still change was left stale by the write's own
 * (incremental) refresh; fails with a message naming it. */
int kp_test_stale(void *ctx, const kp_record *record, const cJSON *next, kp_error *err);

/* A small order-response data set (examples/order-response/model.json): user u1, its
 * SHIPPED order o1 placed at 2025-08-12T05:21:00.000Z, that order's lines for the SKUs
 * listed with their statuses ("SKU-A:SHIPPED,SKU-C:PENDING"), and a product per SKU. The
 * caller frees it; fails the test when it does not load. */
kp_dataset *kp_test_order_lines(const kp_model *m, const char *lines);

/* Every candidate `backend` proposes for m into *list (the caller frees it) and the one
 * named `candidate` among them; fails the test when propose fails or none has that name. */
const kp_design *kp_test_candidate(const kp_backend *backend, const kp_model *m, const char *candidate, kp_design_list *list);

/* The model at `path` with each of the n texts from[i] replaced, once, by to[i], parsed;
 * fails the test when a text is not there or the edited model does not parse. */
kp_model *kp_test_edited_model(const char *path, const char *const *from, const char *const *to, size_t n);

/* The items the write plan of `write` in d claims for the touches whose description holds
 * `what`, summed; fails the test when d has no plan for that write. */
double kp_test_touched(const kp_design *d, const char *write, const char *what);

#endif
