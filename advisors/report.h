/*
 * report.h — designs as reports: the neutral JSON (docs/output.md "advise") that
 * every database fills the same way, and the readable text built from it.
 *
 * Invariant: the text, Markdown and HTML renderings are built from the JSON document,
 * never from anything else, so every format shows the same facts.
 */
#ifndef KP_REPORT_H
#define KP_REPORT_H

#include <stdio.h>
#include <cjson/cJSON.h>

#include "backends/backend.h"

/* One design as JSON (a new tree, cJSON_Delete). */
cJSON *kp_design_to_json(const kp_design *design);
/* The `advise` document: schema_version, model, mix, and one design per database. Its
 * strings refer to the designs' and the model's: free the tree before them. */
cJSON *kp_advise_json(const kp_model *model, const kp_mix *mix, kp_design *const *designs, size_t count);
/* Renders the advise document as text or GitHub Markdown. */
void kp_advise_print_text(FILE *out, const cJSON *doc, int use_color);
void kp_advise_print_markdown(FILE *out, const cJSON *doc);

#endif
