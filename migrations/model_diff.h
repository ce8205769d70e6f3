/*
 * model_diff.h — `keyplan diff OLD NEW`: what a change between two versions of a model
 * does, to its readers and to each database's design, as a plan of steps.
 *
 * The model side: entities, attributes, keys, relations, access patterns (their
 * parameters and the JSON they return) and writes added, removed or changed; a pattern
 * removed, or whose parameters or response changed, and a key changed are breaking for
 * readers of the old version. The database side, per database: the recommended design
 * of each version compared container by container (created, dropped, keys changed),
 * index by index, and decision by decision (a key format, a copy, an embedding), each
 * difference a step with the items it writes, their write units and time at a rate and,
 * where the database has unit prices, their cost. What stays as it is is listed too.
 * Invariant: reads the two models and the designs the backends propose for them;
 * touches no server.
 */
#ifndef KP_MODEL_DIFF_H
#define KP_MODEL_DIFF_H

#include <cjson/cJSON.h>

#include "backends/backend.h"

typedef struct kp_diff_options {
    const kp_backend *const *backends;  /* NULL-terminated: the databases to plan for */
    double rate;                        /* items written per second by a backfill (0: 1,000) */
} kp_diff_options;

/* The change from `old` to `new` as a document (docs/output.md "diff"); *breaking is set
 * to the number of breaking changes, *changes to the number of changes of any kind.
 * NULL with err on failure (a design that cannot be proposed). */
cJSON *kp_model_diff(const kp_model *old_model, const kp_model *new_model, const kp_diff_options *options, int *breaking,
                     int *changes, kp_error *err);

/* The document as text (md: GitHub Markdown). */
void kp_model_diff_print(FILE *out, const cJSON *doc, int is_markdown);

#endif
