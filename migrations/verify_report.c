/*
 * verify_report.c — verify's report for people (an aligned table), for programs
 * (docs/output.md "verify") and for CI (JUnit XML).
 *
 * Invariant: the three outputs say the same thing: a pattern or write is failed in one
 * exactly when it is failed in the others, with the same first difference.
 */
#include "migrations/verify.h"

#include <stdlib.h>
#include <string.h>

/* ---- the page bound ----------------------------------------------------------------------------- */

/* What an expert's page reads at most (kp_page_bound) for the pattern's one limited
 * listing (and an offset with a max); 0 otherwise, with *page 0. */
static double page_bound(const kp_verify_pattern *p, double *page)
{
    const kp_shape *each = kp_pattern_page_listing(p->pattern);
    *page = 0;
    if (!each || kp_shape_offset_max(each) < 0 || p->items_read < 0 || p->pages <= 0) return 0;
    *page = kp_shape_limit_max(each) + kp_shape_offset_max(each);
    return kp_page_bound(*page, (double)p->page_requests_max);
}

/* "3 strays (k1, k2, k3)" into buf at *at. */
static void keys_part(char *buf, size_t size, size_t *at, long count, char *const *keys, const char *what)
{
    if (count <= 0 || *at >= size) return;
    *at += (size_t)snprintf(buf + *at, size - *at, "%s%ld %s (", *at && buf[*at - 1] != ' ' ? ", " : "", count, what);
    for (long k = 0; k < count && k < KP_VERIFY_KEYS_SHOWN && *at < size; k++)
        *at += (size_t)snprintf(buf + *at, size - *at, "%s%s", k ? ", " : "", keys[k] ? keys[k] : "?");
    if (*at < size) *at += (size_t)snprintf(buf + *at, size - *at, "%s)", count > KP_VERIFY_KEYS_SHOWN ? ", ..." : "");
}

/* One sentence about a container that does not hold what the data predicts, with the
 * items that differ by identity when the backend can name them. */
static void container_message(const kp_verify_container *c, char *buf, size_t size)
{
    if (c->items != c->items_expected)
        snprintf(buf, size, "container '%s' holds %ld item%s, the data makes %ld: %s behind keyplan's back", c->name,
                 c->items, c->items == 1 ? "" : "s", c->items_expected,
                 c->items > c->items_expected ? "items were added (strays no pattern or design predicts)"
                                              : "items were deleted");
    else
        snprintf(buf, size, "container '%s' holds the %ld items the data makes, but their content differs (checksum): "
                 "an item was changed behind keyplan's back", c->name, c->items);
    if (c->missing < 0) return;
    size_t at = strlen(buf);
    if (at < size) at += (size_t)snprintf(buf + at, size - at, "; by identity: ");
    size_t before = at;
    keys_part(buf, size, &at, c->missing, c->missing_keys, "missing");
    keys_part(buf, size, &at, c->strays, c->stray_keys, "strays");
    keys_part(buf, size, &at, c->changed, c->changed_keys, "changed");
    if (at == before && at < size) snprintf(buf + at, size - at, "none differs (the server reorders or rewrites values)");
}

static cJSON *keys_json(long count, char *const *keys)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddNumberToObject(o, "count", (double)count);
    cJSON *a = cJSON_AddArrayToObject(o, "keys");
    for (long k = 0; a && k < count && k < KP_VERIFY_KEYS_SHOWN; k++) cJSON_AddItemToArray(a, cJSON_CreateString(keys[k] ? keys[k] : ""));
    return o;
}

/* What a write's operations sent (items or requests) against the claims, as `name`: {operations,
 * min, max, avg, claimed, claimed_expected, claim_holds}. */
static void sent_json(cJSON *x, const char *name, const kp_verify_write *w, long min, long max, long sum, double claimed_sum,
                      double expected, int is_mismatch)
{
    cJSON *o = cJSON_AddObjectToObject(x, name);
    if (!o) return;
    if (w->sent_ops) {
        cJSON_AddNumberToObject(o, "operations", w->sent_ops);
        cJSON_AddNumberToObject(o, "min", (double)min);
        cJSON_AddNumberToObject(o, "max", (double)max);
        cJSON_AddNumberToObject(o, "avg", (double)sum / w->sent_ops);
    }
    if (w->plan) {
        if (w->sent_ops) cJSON_AddNumberToObject(o, "claimed", claimed_sum / w->sent_ops);
        cJSON_AddNumberToObject(o, "claimed_expected", expected);
        cJSON_AddBoolToObject(o, "claim_holds", !is_mismatch);
    }
}

/* What the operations sent, per operation: "3", or "1-4 (2.5)". */
static void sent_range(char *buf, size_t size, long min, long max, long sum, int ops)
{
    if (min == max) snprintf(buf, size, "%ld", min);
    else snprintf(buf, size, sum >= 1e4 * ops ? "%ld-%ld (%.0f)" : "%ld-%ld (%.4g)", min, max, (double)sum / ops);
}

static const char *pattern_result(const kp_verify_pattern *p)
{
    return p->is_skipped ? "unchecked" : p->is_pass ? "pass" : "FAIL";
}

static void range(int lo, int hi, char *buf, size_t size)
{
    if (lo == hi) snprintf(buf, size, "%d", lo);
    else snprintf(buf, size, "%d-%d", lo, hi);
}

void kp_verify_report_print(FILE *out, const kp_verify_report *r)
{
    char pages[48] = "every page to the last";
    if (r->max_pages > 0) snprintf(pages, sizeof pages, "at most %d pages each", r->max_pages);
    char anchors[64] = "every anchor";
    if (!r->is_exhaustive) snprintf(anchors, sizeof anchors, "every anchor up to %d per pattern", r->samples);
    fprintf(out, "verify: design '%s' on %s — seed %llu, %s, %s, %d in flight\n", r->design, r->backend,
            (unsigned long long)r->seed, anchors, pages, r->in_flight > 0 ? r->in_flight : 1);
    int w = 7;
    for (size_t i = 0; i < r->pattern_count; i++)
        if ((int)strlen(r->patterns[i].pattern->name) > w) w = (int)strlen(r->patterns[i].pattern->name);
    for (size_t i = 0; i < r->write_count; i++)
        if ((int)strlen(r->write_results[i].write->name) > w) w = (int)strlen(r->write_results[i].write->name);
    fprintf(out, "  %-*s %-9s %11s %9s %6s %9s %8s %6s %8s %15s %17s %8s %8s %8s\n", w, "pattern", "result", "anchors",
            "queries", "pages",
            "requests", "claimed", "steps", "claimed", "items read/max", "KB read/max", "p50 ms", "p95 ms", "p99 ms");
    for (size_t i = 0; i < r->pattern_count; i++) {
        const kp_verify_pattern *p = &r->patterns[i];
        char samples[32], req[32], steps[32], claimed_req[32] = "-", claimed_steps[32] = "-";
        snprintf(samples, sizeof samples, "%d/%d", p->samples - p->samples_failed, p->samples);
        char cover[48];
        snprintf(cover, sizeof cover, "%ld/%ld%s", p->anchors, p->anchors_total, p->is_stratified ? "*" : "");
        range(p->first_requests_min, p->first_requests_max, req, sizeof req);
        range(p->first_steps_min, p->first_steps_max, steps, sizeof steps);
        if (p->claimed_requests >= 0) {
            snprintf(claimed_req, sizeof claimed_req, "%g", p->claimed_requests);
            snprintf(claimed_steps, sizeof claimed_steps, "%d", p->claimed_steps);
        }
        /* the worst page measured against the plan's bound for a page */
        char items[48] = "-", kb[48] = "-";
        if (p->items_read >= 0 && p->pages) snprintf(items, sizeof items, "%ld/%.0f", p->page_items_max, p->bound_items);
        if (p->bytes_read >= 0 && p->pages)
            snprintf(kb, sizeof kb, "%.1f/%.1f", (double)p->page_bytes_max / 1024, p->bound_bytes / 1024);
        fprintf(out, "  %-*s %-9s %11s %9s %6ld %9s %8s %6s %8s %15s %17s %8.2f %8.2f %8.2f\n", w, p->pattern->name,
                pattern_result(p), cover, samples, p->pages, req, claimed_req, steps, claimed_steps, items, kb, p->p50_ms, p->p95_ms,
                p->p99_ms);
        if (p->has_difference && p->difference.message) fprintf(out, "      %s\n", p->difference.message);
        if (p->note[0]) fprintf(out, "      %s\n", p->note);
    }
    if (r->writes) {
        fprintf(out, "\n  %-*s %-7s %5s %8s %8s %8s %8s %7s %13s %8s %11s %8s\n", w, "write", "result", "ops", "applied", "partial",
                "skipped", "refused", "reads", "items sent", "claimed", "requests", "claimed");
        for (size_t i = 0; i < r->write_count; i++) {
            const kp_verify_write *x = &r->write_results[i];
            char reads[32], sent[48] = "-", claimed[32] = "-", requests[48] = "-", claimed_requests[32] = "-";
            snprintf(reads, sizeof reads, "%d/%d", x->reads_checked - x->reads_failed, x->reads_checked);
            if (x->sent_ops) {
                sent_range(sent, sizeof sent, x->sent_items_min, x->sent_items_max, x->sent_items_sum, x->sent_ops);
                sent_range(requests, sizeof requests, x->sent_requests_min, x->sent_requests_max, x->sent_requests_sum, x->sent_ops);
            }
            if (x->plan && x->sent_ops) {
                double on = x->claimed_sum / x->sent_ops;
                snprintf(claimed, sizeof claimed, on >= 1e4 ? "%.0f" : "%.4g", on);
                on = x->claimed_requests_sum / x->sent_ops;
                snprintf(claimed_requests, sizeof claimed_requests, on >= 1e4 ? "%.0f" : "%.4g", on);
            }
            fprintf(out, "  %-*s %-7s %5d %8d %8d %8d %8d %7s %13s %8s %11s %8s\n", w, x->write->name, x->is_pass ? "pass" : "FAIL",
                    x->ops, x->applied, x->partial, x->skipped, x->refused, reads, sent, claimed, requests, claimed_requests);
            if (x->has_difference && x->difference.message) fprintf(out, "      %s\n", x->difference.message);
            if (x->note[0]) fprintf(out, "      %s\n", x->note);
        }
        fprintf(out, "  undo: %s\n", r->undo_note[0] ? r->undo_note : r->is_undone ? "nothing to undo" : "not done");
    }
    if (r->is_read_back) {
        fprintf(out, "  containers: %zu of %zu hold exactly what the data predicts (read back: count and content)\n",
                r->container_count - (size_t)r->containers_failed, r->container_count);
        for (size_t i = 0; i < r->container_count; i++) {
            if (r->containers[i].is_match) continue;
            char m[2400];
            container_message(&r->containers[i], m, sizeof m);
            fprintf(out, "      FAIL %s\n", m);
        }
    }
    int bounded = 0, over = 0;
    char overs[400] = "";
    for (size_t i = 0; i < r->pattern_count; i++) {
        const kp_verify_pattern *p = &r->patterns[i];
        double page, bound = page_bound(p, &page);
        if (bound <= 0) continue;
        bounded++;
        if ((double)p->page_items_max <= bound) continue;
        size_t at = strlen(overs);
        if (at < sizeof overs - 80)
            snprintf(overs + at, sizeof overs - at, "%s%s (%ld items for a page of %.0f in %ld requests)", over ? ", " : "",
                     p->pattern->name, p->page_items_max, page, p->page_requests_max);
        over++;
    }
    if (bounded)
        fprintf(out, "  page bound (items read <= page x requests + requests + 1): %d of %d listings within it%s%s\n",
                bounded - over, bounded, over ? "; over: " : "", overs);
    fprintf(out, "  coverage: %ld of %ld anchors (* stratified: the hot keys and an even spread over the key order); "
            "walked to the end: %s\n", r->anchors, r->anchors_total, r->is_walked_to_end ? "yes" : "no (--pages)");
    if (r->stopped[0]) fprintf(out, "  stopped before checking everything: %s\n", r->stopped);
    fprintf(out, "  %zu patterns: %d passed, %d failed, %d not checked", r->pattern_count, r->patterns_passed,
            r->patterns_failed, r->patterns_skipped);
    if (r->writes) fprintf(out, "; %zu writes: %d passed, %d failed", r->write_count, r->writes_passed, r->writes_failed);
    fprintf(out, "; %ld requests in %.2f s\n", r->requests, r->seconds);
}

/* ---- JSON -------------------------------------------------------------------------------------- */

static cJSON *difference_json(const kp_verify_difference *d)
{
    cJSON *o = cJSON_CreateObject();
    if (!o) return NULL;
    if (d->sample) cJSON_AddNumberToObject(o, "sample", d->sample);
    else cJSON_AddNullToObject(o, "sample");
    cJSON_AddNumberToObject(o, "page", d->page);
    cJSON *params = d->params ? cJSON_Parse(d->params) : NULL;
    if (params) cJSON_AddItemToObject(o, "params", params);
    else cJSON_AddNullToObject(o, "params");
    if (d->path) cJSON_AddStringToObject(o, "path", d->path);
    else cJSON_AddNullToObject(o, "path");
    if (d->expected) cJSON_AddStringToObject(o, "expected", d->expected);
    else cJSON_AddNullToObject(o, "expected");
    if (d->actual) cJSON_AddStringToObject(o, "actual", d->actual);
    else cJSON_AddNullToObject(o, "actual");
    cJSON_AddStringToObject(o, "message", d->message ? d->message : "");
    return o;
}

/* A measured figure, or null when the backend does not measure it. */
static void add_measured(cJSON *o, const char *name, int is_measured, double value)
{
    if (is_measured) cJSON_AddNumberToObject(o, name, value);
    else cJSON_AddNullToObject(o, name);
}

cJSON *kp_verify_report_to_json(const kp_verify_report *r)
{
    cJSON *o = cJSON_CreateObject();
    if (!o) return NULL;
    cJSON_AddStringToObject(o, "database", r->backend);
    cJSON_AddStringToObject(o, "design", r->design);
    cJSON_AddBoolToObject(o, "passed", r->patterns_failed == 0 && r->writes_failed == 0 && r->containers_failed == 0 &&
                                           (!r->writes || r->is_undone) && !r->stopped[0]);
    if (r->stopped[0]) cJSON_AddStringToObject(o, "stopped", r->stopped);
    cJSON_AddNumberToObject(o, "seed", (double)r->seed);
    cJSON_AddNumberToObject(o, "samples", r->samples);
    if (r->max_pages > 0) cJSON_AddNumberToObject(o, "max_pages", r->max_pages);
    else cJSON_AddNullToObject(o, "max_pages");
    cJSON_AddNumberToObject(o, "in_flight", r->in_flight > 0 ? r->in_flight : 1);
    cJSON *cov = cJSON_AddObjectToObject(o, "coverage");
    if (cov) {
        cJSON_AddBoolToObject(cov, "exhaustive", r->is_exhaustive);
        cJSON_AddNumberToObject(cov, "anchors", (double)r->anchors);
        cJSON_AddNumberToObject(cov, "anchors_total", (double)r->anchors_total);
        cJSON_AddBoolToObject(cov, "walked_to_end", r->is_walked_to_end);
    }
    cJSON *patterns = cJSON_AddArrayToObject(o, "patterns");
    for (size_t i = 0; patterns && i < r->pattern_count; i++) {
        const kp_verify_pattern *p = &r->patterns[i];
        cJSON *x = cJSON_CreateObject();
        if (!x) break;
        cJSON_AddStringToObject(x, "name", p->pattern->name);
        cJSON_AddStringToObject(x, "result", p->is_skipped ? "skipped" : p->is_pass ? "pass" : "fail");
        cJSON_AddNumberToObject(x, "samples", p->samples);
        cJSON_AddNumberToObject(x, "anchors", (double)p->anchors);
        cJSON_AddNumberToObject(x, "anchors_total", (double)p->anchors_total);
        cJSON_AddBoolToObject(x, "stratified", p->is_stratified);
        cJSON_AddBoolToObject(x, "walked_to_end", !p->is_cut);
        cJSON_AddNumberToObject(x, "samples_failed", p->samples_failed);
        cJSON_AddNumberToObject(x, "pages", (double)p->pages);
        cJSON *req = cJSON_AddObjectToObject(x, "requests");
        if (req) {
            if (p->claimed_requests >= 0) cJSON_AddNumberToObject(req, "claimed", p->claimed_requests);
            else cJSON_AddNullToObject(req, "claimed");
            cJSON_AddNumberToObject(req, "first_page_min", p->first_requests_min);
            cJSON_AddNumberToObject(req, "first_page_max", p->first_requests_max);
            cJSON_AddNumberToObject(req, "total", (double)p->requests);
        }
        cJSON *steps = cJSON_AddObjectToObject(x, "sequential_steps");
        if (steps) {
            if (p->claimed_requests >= 0) cJSON_AddNumberToObject(steps, "claimed", p->claimed_steps);
            else cJSON_AddNullToObject(steps, "claimed");
            cJSON_AddNumberToObject(steps, "first_page_min", p->first_steps_min);
            cJSON_AddNumberToObject(steps, "first_page_max", p->first_steps_max);
        }
        cJSON_AddBoolToObject(x, "claims_hold", !p->is_claim_mismatch && !p->is_bound_exceeded);
        cJSON_AddNumberToObject(x, "items_returned", (double)p->items_returned);
        add_measured(x, "items_read", p->items_read >= 0, (double)p->items_read);
        /* one page: the plan's claim and the measured figures under the same names */
        if (p->claimed_requests >= 0) {
            cJSON *c = cJSON_AddObjectToObject(x, "claimed");
            if (c) {
                cJSON_AddNumberToObject(c, "requests", p->claimed_requests);
                cJSON_AddNumberToObject(c, "sequential_steps", p->claimed_steps);
                cJSON_AddNumberToObject(c, "sequential_steps_max", p->claimed_steps_max);
                cJSON_AddNumberToObject(c, "items_read", p->claimed_items);
                cJSON_AddNumberToObject(c, "bytes_read", p->claimed_bytes);
                cJSON_AddNumberToObject(c, "requests_max", p->bound_requests);
                cJSON_AddNumberToObject(c, "items_read_max", p->bound_items);
                cJSON_AddNumberToObject(c, "bytes_read_max", p->bound_bytes);
            }
        } else {
            cJSON_AddNullToObject(x, "claimed");
        }
        cJSON *m = cJSON_AddObjectToObject(x, "measured");
        if (m) {
            double pages = p->pages > 0 ? (double)p->pages : 1;
            cJSON_AddNumberToObject(m, "pages", (double)p->pages);
            cJSON_AddNumberToObject(m, "requests", (double)p->requests / pages);
            cJSON_AddNumberToObject(m, "sequential_steps", p->first_steps_max);
            add_measured(m, "items_read", p->items_read >= 0, (double)p->items_read / pages);
            add_measured(m, "bytes_read", p->bytes_read >= 0, (double)p->bytes_read / pages);
            cJSON_AddNumberToObject(m, "requests_max", (double)p->page_requests_max);
            add_measured(m, "items_read_max", p->items_read >= 0, (double)p->page_items_max);
            add_measured(m, "bytes_read_max", p->bytes_read >= 0, (double)p->page_bytes_max);
        }
        double page, bound = page_bound(p, &page);
        if (bound > 0) {
            cJSON *b = cJSON_AddObjectToObject(x, "page_bound");
            if (b) {
                cJSON_AddNumberToObject(b, "page", page);
                cJSON_AddNumberToObject(b, "requests_max", (double)p->page_requests_max);
                cJSON_AddNumberToObject(b, "bound", bound);
                cJSON_AddNumberToObject(b, "items_read_max", (double)p->page_items_max);
                cJSON_AddBoolToObject(b, "holds", (double)p->page_items_max <= bound);
            }
        } else {
            cJSON_AddNullToObject(x, "page_bound");
        }
        cJSON *lat = cJSON_AddObjectToObject(x, "latency_ms");
        if (lat) {
            cJSON_AddNumberToObject(lat, "p50", p->p50_ms);
            cJSON_AddNumberToObject(lat, "p95", p->p95_ms);
            cJSON_AddNumberToObject(lat, "p99", p->p99_ms);
        }
        if (p->has_difference) cJSON_AddItemToObject(x, "difference", difference_json(&p->difference));
        else cJSON_AddNullToObject(x, "difference");
        if (p->note[0]) cJSON_AddStringToObject(x, "note", p->note);
        cJSON_AddItemToArray(patterns, x);
    }
    if (r->writes) {
        cJSON *writes = cJSON_AddArrayToObject(o, "writes");
        for (size_t i = 0; writes && i < r->write_count; i++) {
            const kp_verify_write *w = &r->write_results[i];
            cJSON *x = cJSON_CreateObject();
            if (!x) break;
            cJSON_AddStringToObject(x, "name", w->write->name);
            cJSON_AddStringToObject(x, "result", w->is_pass ? "pass" : "fail");
            cJSON_AddNumberToObject(x, "operations", w->ops);
            cJSON_AddNumberToObject(x, "not_generated", w->not_generated);
            cJSON *outcomes = cJSON_AddObjectToObject(x, "outcomes");
            if (outcomes) {
                cJSON_AddNumberToObject(outcomes, "applied", w->applied);
                cJSON_AddNumberToObject(outcomes, "partial", w->partial);
                cJSON_AddNumberToObject(outcomes, "skipped", w->skipped);
                cJSON_AddNumberToObject(outcomes, "refused", w->refused);
            }
            cJSON_AddNumberToObject(x, "atomic_exercised", w->atomic_exercised);
            sent_json(x, "items_written", w, w->sent_items_min, w->sent_items_max, w->sent_items_sum, w->claimed_sum,
                      w->plan ? w->plan->items : 0, w->is_items_mismatch);
            sent_json(x, "write_requests", w, w->sent_requests_min, w->sent_requests_max, w->sent_requests_sum,
                      w->claimed_requests_sum, w->plan ? w->plan->requests - w->plan->read_requests : 0,
                      w->is_requests_mismatch);
            cJSON_AddNumberToObject(x, "reads_checked", w->reads_checked);
            cJSON_AddNumberToObject(x, "reads_failed", w->reads_failed);
            if (w->has_difference) cJSON_AddItemToObject(x, "difference", difference_json(&w->difference));
            else cJSON_AddNullToObject(x, "difference");
            if (w->note[0]) cJSON_AddStringToObject(x, "note", w->note);
            cJSON_AddItemToArray(writes, x);
        }
        cJSON *undo = cJSON_AddObjectToObject(o, "undo");
        if (undo) {
            cJSON_AddBoolToObject(undo, "done", r->is_undone);
            cJSON_AddStringToObject(undo, "note", r->undo_note);
        }
    }
    if (r->is_read_back) {
        cJSON *cs = cJSON_AddArrayToObject(o, "containers");
        for (size_t i = 0; cs && i < r->container_count; i++) {
            const kp_verify_container *c = &r->containers[i];
            cJSON *x = cJSON_CreateObject();
            if (!x) break;
            cJSON_AddStringToObject(x, "name", c->name);
            cJSON_AddStringToObject(x, "result", c->is_match ? "pass" : "fail");
            cJSON_AddNumberToObject(x, "items_expected", (double)c->items_expected);
            cJSON_AddNumberToObject(x, "items", (double)c->items);
            cJSON_AddBoolToObject(x, "content_checked", c->is_content_checked);
            if (!c->is_match) {
                char m[2400];
                container_message(c, m, sizeof m);
                cJSON_AddStringToObject(x, "message", m);
                if (c->missing >= 0) {
                    cJSON_AddItemToObject(x, "missing", keys_json(c->missing, c->missing_keys));
                    cJSON_AddItemToObject(x, "strays", keys_json(c->strays, c->stray_keys));
                    cJSON_AddItemToObject(x, "changed", keys_json(c->changed, c->changed_keys));
                }
            }
            cJSON_AddItemToArray(cs, x);
        }
    } else {
        cJSON_AddNullToObject(o, "containers");
    }
    cJSON *totals = cJSON_AddObjectToObject(o, "totals");
    if (totals) {
        cJSON_AddNumberToObject(totals, "patterns", (double)r->pattern_count);
        cJSON_AddNumberToObject(totals, "passed", r->patterns_passed);
        cJSON_AddNumberToObject(totals, "failed", r->patterns_failed);
        cJSON_AddNumberToObject(totals, "skipped", r->patterns_skipped);
        if (r->writes) {
            cJSON_AddNumberToObject(totals, "writes_passed", r->writes_passed);
            cJSON_AddNumberToObject(totals, "writes_failed", r->writes_failed);
        }
        cJSON_AddNumberToObject(totals, "requests", (double)r->requests);
        cJSON_AddNumberToObject(totals, "seconds", r->seconds);
    }
    return o;
}

/* ---- JUnit XML --------------------------------------------------------------------------------- */

static void xml_text(FILE *out, const char *s)
{
    for (const unsigned char *p = (const unsigned char *)(s ? s : ""); *p; p++) {
        switch (*p) {
        case '&': fputs("&amp;", out); break;
        case '<': fputs("&lt;", out); break;
        case '>': fputs("&gt;", out); break;
        case '"': fputs("&quot;", out); break;
        case '\'': fputs("&apos;", out); break;
        default:
            if (*p < 0x20 && *p != '\n' && *p != '\t') fputc('?', out); /* not allowed in XML 1.0 */
            else fputc(*p, out);
        }
    }
}

static void junit_case(FILE *out, const char *classname, const char *name, double seconds, int is_pass,
                       int is_skipped, const char *message, const char *details)
{
    fputs("    <testcase classname=\"", out);
    xml_text(out, classname);
    fputs("\" name=\"", out);
    xml_text(out, name);
    fprintf(out, "\" time=\"%.6f\"", seconds);
    if (is_pass) { fputs("/>\n", out); return; }
    fputs(">\n", out);
    if (is_skipped) {
        fputs("      <skipped message=\"", out);
        xml_text(out, message);
        fputs("\"/>\n", out);
    } else {
        fputs("      <failure type=\"mismatch\" message=\"", out);
        xml_text(out, message);
        fputs("\">", out);
        xml_text(out, details);
        fputs("</failure>\n", out);
    }
    fputs("    </testcase>\n", out);
}

int kp_verify_write_junit(FILE *out, const kp_verify_report *const *reports, size_t count)
{
    int tests = 0, failures = 0, skipped = 0;
    for (size_t k = 0; k < count; k++) {
        const kp_verify_report *r = reports[k];
        tests += (int)r->pattern_count + (int)r->write_count + (int)r->container_count;
        failures += r->patterns_failed + r->writes_failed + r->containers_failed;
        skipped += r->patterns_skipped;
    }
    fprintf(out, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    fprintf(out, "<testsuites name=\"keyplan verify\" tests=\"%d\" failures=\"%d\" skipped=\"%d\">\n", tests, failures,
            skipped);
    for (size_t k = 0; k < count; k++) {
        const kp_verify_report *r = reports[k];
        char classname[300];
        snprintf(classname, sizeof classname, "keyplan.verify.%s.%s", r->backend, r->design);
        fputs("  <testsuite name=\"", out);
        xml_text(out, classname);
        fprintf(out, "\" tests=\"%zu\" failures=\"%d\" skipped=\"%d\" time=\"%.6f\">\n",
                r->pattern_count + r->write_count + r->container_count,
                r->patterns_failed + r->writes_failed + r->containers_failed, r->patterns_skipped,
                r->seconds);
        fprintf(out, "    <properties><property name=\"seed\" value=\"%llu\"/><property name=\"samples\" "
                "value=\"%d\"/><property name=\"max_pages\" value=\"%d\"/></properties>\n",
                (unsigned long long)r->seed, r->samples, r->max_pages);
        for (size_t i = 0; i < r->pattern_count; i++) {
            const kp_verify_pattern *p = &r->patterns[i];
            const char *message = p->has_difference && p->difference.message ? p->difference.message : p->note;
            char details[1400];
            snprintf(details, sizeof details, "%s%s%s", p->has_difference && p->difference.message ? p->difference.message : "",
                     p->has_difference && p->note[0] ? "\n" : "", p->has_difference ? p->note : "");
            if (!p->has_difference) snprintf(details, sizeof details, "%s", p->note);
            junit_case(out, classname, p->pattern->name, p->seconds, p->is_pass, p->is_skipped, message, details);
        }
        for (size_t i = 0; i < r->write_count; i++) {
            const kp_verify_write *w = &r->write_results[i];
            char name[300];
            snprintf(name, sizeof name, "write:%s", w->write->name);
            const char *message = w->has_difference && w->difference.message ? w->difference.message : w->note;
            junit_case(out, classname, name, 0, w->is_pass, 0, message, w->note);
        }
        for (size_t i = 0; i < r->container_count; i++) {
            const kp_verify_container *c = &r->containers[i];
            char name[300], m[2400] = "";
            snprintf(name, sizeof name, "container:%s", c->name);
            if (!c->is_match) container_message(c, m, sizeof m);
            junit_case(out, classname, name, 0, c->is_match, 0, m, m);
        }
        fputs("  </testsuite>\n", out);
    }
    fputs("</testsuites>\n", out);
    return ferror(out) ? -1 : 0;
}
