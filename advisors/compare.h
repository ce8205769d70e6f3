/*
 * compare.h — the comparison document `keyplan compare` and `keyplan run` print: every
 * candidate design of every database (the alternatives each backend proposes), costed
 * and risk-checked under each workload mix, with a recommendation per mix and its
 * reasons; rendered as text, GitHub Markdown (at most 65,536 characters) and one
 * self-contained HTML page with inline SVG diagrams.
 *
 * Invariant: the renderings read only the JSON document (docs/output.md "compare").
 */
#ifndef KP_COMPARE_H
#define KP_COMPARE_H

#include <stdint.h>
#include <stdio.h>
#include <cjson/cJSON.h>

#include "advisors/cost.h"
#include "advisors/risk.h"
#include "backends/backend.h"

/* A pull-request comment's limit (GitHub). */
#define KP_MARKDOWN_LIMIT 65536

enum { KP_COMPARE_DESIGNS_TREE, KP_COMPARE_DESIGNS_TEXT, KP_COMPARE_DESIGNS_NONE };

typedef struct kp_compare_options {
    const kp_backend *const *backends;  /* NULL-terminated */
    const kp_mix *mix;                  /* only this mix; NULL: every declared mix (the default first) */
    kp_prices prices;
    const kp_dataset *data;             /* sample data for the hot-partition simulation, or NULL */
    int samples;                        /* draws per pattern (0: 2,000) */
    uint64_t seed;
    int is_single_candidate;            /* only each database's recommended candidate (no alternatives) */
    int designs_as;                     /* the recommended designs' full JSON ("designs"): KP_COMPARE_DESIGNS_TREE,
                                           _TEXT (printed at once into cJSON_Raw nodes, with each design's cost
                                           and risk rows: only for printing the document as JSON), _NONE (left out: text and Markdown show none) */
    kp_arena *tree_arena;               /* non-NULL: the document is built in this arena, which the caller
                                           frees instead of calling cJSON_Delete (a large document is
                                           dropped at once); NULL: an ordinary cJSON tree */
} kp_compare_options;

/* The comparison document (a new tree, cJSON_Delete unless options->tree_arena holds it);
 * NULL with err on failure. */
cJSON *kp_compare(const kp_model *model, const kp_compare_options *options, kp_error *err);

/* The recommendation of the document's first mix: "database/candidate" in buf. */
const cJSON *kp_compare_recommendation(const cJSON *doc, const char *mix);

/* The member of a document array whose "name" is `name`, or NULL. The search starts at
 * *cursor (when not NULL) and wraps, and leaves *cursor after the match: lookups in the
 * array's order cost one step each (compare's tables walk thousands of patterns per
 * design). cursor may be NULL; a stale cursor only costs time. */
const cJSON *kp_compare_find_named(const cJSON *arr, const char *name, const cJSON **cursor);

/* One cursor per design column of a table (designs past the last share the last). */
typedef struct kp_named_cursors { const cJSON *at[32]; } kp_named_cursors;
#define KP_CURSOR(c, i) (&(c)->at[(i) < 32 ? (i) : 31])

void kp_compare_print_text(FILE *out, const cJSON *doc, int use_color);
/* GitHub-flavoured Markdown of at most KP_MARKDOWN_LIMIT characters (cut at a line with a
 * note when longer); malloc'd, the caller frees. */
char *kp_compare_markdown(const cJSON *doc);
/* One self-contained HTML page: tables, the ER diagram and one diagram per database. */
void kp_compare_print_html(FILE *out, const cJSON *doc);

#endif
