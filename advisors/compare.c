/*
 * compare.c — builds the comparison document (compare.h) and renders it as text and
 * Markdown (html.c renders the page).
 *
 * For each workload mix (the one asked for, else every declared mix with the default
 * first, else the declared rates), every backend proposes its candidates (the
 * recommended one first, then its alternatives); each is costed (cost.c) and checked
 * (risk.c). The recommendation per mix: among the designs without a defect-level risk
 * (all of them when every one has one), the lowest neutral I/O load; designs within 5 %
 * of it are ranked by round trips weighted by rate, then by warnings.
 * Invariant: the text and Markdown renderings read only the document.
 */
#include "advisors/compare.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "advisors/report.h"
#include "core/json.h"

#define NEAR_TIE 0.05

static const char *mix_title(const cJSON *mo);

/* One design compared. Its JSON and what the recommendation names of it are built as soon
 * as it is costed, so the design itself is freed before the next database proposes (the
 * designs of every database at once were most of compare's memory). */
typedef struct entry {
    const kp_backend *backend;
    char label[160];        /* "dynamodb/single-table" */
    char candidate[128];
    char fingerprint[17];
    int is_default;         /* the database's recommended candidate */
    kp_cost cost;           /* its figures (no pointer into the design is followed once it is freed) */
    kp_risks risks;
    cJSON *json;            /* the mix's "designs" element */
    cJSON *decisions;       /* [{subject, choice}] for the recommendation */
} entry;



static const char *label(char *buf, size_t size, const kp_design *d)
{
    snprintf(buf, size, "%s/%s", d->backend->name, d->candidate);
    return buf;
}

/* Ranks a before b (negative) by the recommendation rule. */
static int better(const entry *a, const entry *b)
{
    size_t da = kp_risks_count(&a->risks, KP_RISK_DEFECT), db = kp_risks_count(&b->risks, KP_RISK_DEFECT);
    if ((da == 0) != (db == 0)) return da == 0 ? -1 : 1;
    double ia = a->cost.io_units, ib = b->cost.io_units;
    double hi = ia > ib ? ia : ib;
    if (hi > 0 && fabs(ia - ib) / hi > NEAR_TIE) return ia < ib ? -1 : 1;
    if (fabs(a->cost.weighted_round_trips - b->cost.weighted_round_trips) > 1e-9)
        return a->cost.weighted_round_trips < b->cost.weighted_round_trips ? -1 : 1;
    size_t wa = kp_risks_count(&a->risks, KP_RISK_WARNING), wb = kp_risks_count(&b->risks, KP_RISK_WARNING);
    if (wa != wb) return wa < wb ? -1 : 1;
    if (ia != ib) return ia < ib ? -1 : 1;
    return a->is_default == b->is_default ? 0 : a->is_default ? -1 : 1;
}

static cJSON *recommend(entry *e, size_t n, const kp_mix *mix)
{
    cJSON *r = cJSON_CreateObject();
    if (n == 0) return r;
    size_t best = 0;
    for (size_t i = 1; i < n; i++)
        if (better(&e[i], &e[best]) < 0) best = i;
    size_t second = best == 0 ? 1 : 0;
    for (size_t i = 0; i < n && n > 1; i++)
        if (i != best && better(&e[i], &e[second]) < 0) second = i;
    entry *b = &e[best];
    const char *ls;
    cJSON_AddStringToObject(r, "database", b->backend->name);
    cJSON_AddStringToObject(r, "title", b->backend->title);
    cJSON_AddStringToObject(r, "candidate", b->candidate);
    cJSON_AddStringToObject(r, "design", b->label);
    cJSON_AddStringToObject(r, "fingerprint", b->fingerprint);
    cJSON_AddItemToObject(r, "decisions", b->decisions ? b->decisions : cJSON_CreateArray());
    b->decisions = NULL;
    cJSON *reasons = cJSON_AddArrayToObject(r, "reasons");
    char buf[1024];
    const char *mixname = mix ? mix->name : "declared rates";
    if (n > 1) {
        const entry *s = &e[second];
        ls = s->label;
        size_t ds = kp_risks_count(&s->risks, KP_RISK_DEFECT);
        if (ds && !kp_risks_count(&b->risks, KP_RISK_DEFECT)) {
            snprintf(buf, sizeof buf, "it has no defect, while every lighter or closer design has one (%s: %s)", ls,
                     s->risks.items[0].message);
            for (size_t i = 0; i < s->risks.count; i++)
                if (s->risks.items[i].severity == KP_RISK_DEFECT) {
                    snprintf(buf, sizeof buf, "it has no defect; the runner-up %s has %zu (%s)", ls, ds, s->risks.items[i].message);
                    break;
                }
            cJSON_AddItemToArray(reasons, cJSON_CreateString(buf));
        }
        /* the load is compared with the lightest of the others, which need not be the
         * runner-up (a near-tie between two others goes to fewer round trips) */
        for (size_t i = 0; i < n; i++)
            if (i != best && e[i].cost.io_units < s->cost.io_units &&
                !(kp_risks_count(&e[i].risks, KP_RISK_DEFECT) && !kp_risks_count(&s->risks, KP_RISK_DEFECT)))
                s = &e[i];
        ls = s->label;
        double hi = b->cost.io_units > s->cost.io_units ? b->cost.io_units : s->cost.io_units;
        if (hi > 0 && fabs(b->cost.io_units - s->cost.io_units) / hi > NEAR_TIE)
            snprintf(buf, sizeof buf,
                     "the lightest load under %s: %.0f I/O units/s (reads %.0f + %.0f x writes %.0f) against %.0f for %s",
                     mixname, b->cost.io_units, b->cost.read_io, KP_WRITE_WEIGHT, b->cost.write_io, s->cost.io_units, ls);
        else if (fabs(b->cost.weighted_round_trips - s->cost.weighted_round_trips) < 0.005 &&
                 kp_risks_count(&b->risks, KP_RISK_WARNING) == kp_risks_count(&s->risks, KP_RISK_WARNING) &&
                 b->cost.io_units + 0.5 < s->cost.io_units)
            /* as many round trips (as printed) and warnings, and a lighter load */
            snprintf(buf, sizeof buf,
                     "a near-tie with %s under %s, decided by the lighter load: %.0f against %.0f I/O units/s, in as many "
                     "round trips per request (%.2f) and with as many warnings (%zu)", ls, mixname, b->cost.io_units,
                     s->cost.io_units, b->cost.weighted_round_trips, kp_risks_count(&b->risks, KP_RISK_WARNING));
        else if (fabs(b->cost.weighted_round_trips - s->cost.weighted_round_trips) > 1e-9 ||
                 kp_risks_count(&b->risks, KP_RISK_WARNING) == kp_risks_count(&s->risks, KP_RISK_WARNING))
            snprintf(buf, sizeof buf,
                     "as light as %s under %s (%.0f against %.0f I/O units/s) with %.2f round trips per request weighted by "
                     "rate, against %.2f", ls, mixname, b->cost.io_units, s->cost.io_units, b->cost.weighted_round_trips,
                     s->cost.weighted_round_trips);
        else /* the same round trips: the near-tie went to fewer warnings (better) */
            snprintf(buf, sizeof buf,
                     "as light as %s under %s (%.0f against %.0f I/O units/s) in as many round trips per request (%.2f), with "
                     "%zu warning%s against %zu", ls, mixname, b->cost.io_units, s->cost.io_units, b->cost.weighted_round_trips,
                     kp_risks_count(&b->risks, KP_RISK_WARNING), kp_risks_count(&b->risks, KP_RISK_WARNING) == 1 ? "" : "s",
                     kp_risks_count(&s->risks, KP_RISK_WARNING));
        cJSON_AddItemToArray(reasons, cJSON_CreateString(buf));
        double write_share = b->cost.io_units > 0 ? KP_WRITE_WEIGHT * b->cost.write_io / b->cost.io_units : 0;
        snprintf(buf, sizeof buf, "writes are %.0f%% of its load (%.1f items written per second, %.1f items read)", write_share * 100,
                 b->cost.items_written, b->cost.items_read);
        cJSON_AddItemToArray(reasons, cJSON_CreateString(buf));
    } else {
        cJSON_AddItemToArray(reasons, cJSON_CreateString("the only design compared"));
    }
    if (b->cost.is_priced || b->cost.price_note[0]) {
        kp_cost_price_sentence(&b->cost, buf, sizeof buf);
        cJSON_AddItemToArray(reasons, cJSON_CreateString(buf));
    }
    size_t warnings = kp_risks_count(&b->risks, KP_RISK_WARNING);
    if (warnings) {
        for (size_t i = 0; i < b->risks.count; i++)
            if (b->risks.items[i].severity == KP_RISK_WARNING) {
                snprintf(buf, sizeof buf, "%zu warning%s to review, first: %s", warnings, warnings == 1 ? "" : "s", b->risks.items[i].message);
                break;
            }
        /* beside the reasons, not among them: a report that lists the risks links to them instead */
        cJSON_AddStringToObject(r, "to_review", buf);
    }
    cJSON_AddNumberToObject(r, "warnings", (double)warnings);
    if (kp_risks_count(&b->risks, KP_RISK_DEFECT))
        cJSON_AddItemToArray(reasons, cJSON_CreateString("every design compared has a defect: fix the model or add a hint first"));
    return r;
}

static cJSON *model_diagram(const kp_model *m)
{
    cJSON *o = cJSON_CreateObject();
    cJSON *ents = cJSON_AddArrayToObject(o, "entities");
    for (size_t i = 0; i < m->entity_count; i++) {
        const kp_entity *e = m->entities[i];
        cJSON *eo = cJSON_CreateObject();
        cJSON_AddStringToObject(eo, "name", e->name);
        cJSON_AddNumberToObject(eo, "count", e->count);
        cJSON *key = cJSON_AddArrayToObject(eo, "key");
        for (size_t k = 0; k < e->key_count; k++) cJSON_AddItemToArray(key, cJSON_CreateString(e->key[k]->name));
        cJSON *attrs = cJSON_AddArrayToObject(eo, "attributes");
        for (size_t k = 0; k < e->attr_count; k++) cJSON_AddItemToArray(attrs, cJSON_CreateString(e->attrs[k]->name));
        cJSON_AddItemToArray(ents, eo);
    }
    cJSON *rels = cJSON_AddArrayToObject(o, "relations");
    for (size_t i = 0; i < m->relation_count; i++) {
        const kp_relation *r = m->relations[i];
        cJSON *ro = cJSON_CreateObject();
        cJSON_AddStringToObject(ro, "name", r->name);
        cJSON_AddStringToObject(ro, "from", r->from->name);
        cJSON_AddStringToObject(ro, "to", r->to->name);
        cJSON_AddStringToObject(ro, "cardinality", r->cardinality == KP_CARD_ONE_ONE ? "1:1" : r->link == KP_LINK_FOREIGN_KEY ? "1:N" : "N:M");
        cJSON_AddNumberToObject(ro, "fanout_avg", r->fanout.avg);
        cJSON_AddNumberToObject(ro, "fanout_max", r->fanout.max);
        cJSON_AddBoolToObject(ro, "unbounded", r->fanout.is_unbounded);
        cJSON_AddItemToArray(rels, ro);
    }
    return o;
}

/* The document's own nodes go to options->tree_arena when one is given (the proposals'
 * trees, made between these windows, stay ordinary allocations). */
static void tree_begin(const kp_compare_options *o) { if (o->tree_arena) kp_json_arena_begin(o->tree_arena); }
static void tree_end(const kp_compare_options *o) { if (o->tree_arena) kp_json_arena_end(); }

static void free_entries(const kp_compare_options *o, entry *e, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        kp_cost_free(&e[i].cost);
        kp_risks_free(&e[i].risks);
        tree_begin(o); /* the document's nodes are the tree arena's (freed with it) */
        cJSON_Delete(e[i].json);
        cJSON_Delete(e[i].decisions);
        tree_end(o);
    }
}

static cJSON *risks_json(const void *risks) { return kp_risks_to_json(risks); }
static cJSON *cost_json(const void *cost) { return kp_cost_to_json(cost); }
static cJSON *design_json(const void *design) { return kp_design_to_json(design); }

/* A part of the document built in an arena of its own (the document's frees nothing before
 * its end), printed `depth` levels deep and kept as that text, which the document's arena
 * then owns: for a document that is only printed as JSON. Called inside tree_begin. */
static cJSON *as_text(const kp_compare_options *o, cJSON *(*build)(const void *), const void *what, size_t depth)
{
    kp_json_arena_end();
    kp_arena scratch = {0};
    kp_json_arena_begin(&scratch);
    cJSON *tree = build(what);
    kp_json_arena_end();
    char *text = kp_json_print_at(tree, depth);
    kp_arena_free(&scratch);
    tree_begin(o);
    if (!text) return cJSON_CreateNull();
    if (!o->tree_arena) { /* an ordinary tree: a copy the tree owns */
        cJSON *raw = cJSON_CreateRaw(text);
        free(text);
        return raw;
    }
    cJSON *raw = cJSON_CreateRaw("");
    if (!raw || !kp_arena_own(o->tree_arena, text)) return raw; /* kp_arena_own freed the text */
    raw->valuestring = text;
    return raw;
}

/* What compare keeps of a costed design: its JSON, the names the recommendation gives, its
 * decisions; and, for the first mix, the full design JSON of a database's default candidate. */
static void keep_design(const kp_compare_options *o, entry *x, const kp_design *d, cJSON *designs)
{
    tree_begin(o);
    x->backend = d->backend;
    label(x->label, sizeof x->label, d);
    snprintf(x->candidate, sizeof x->candidate, "%s", d->candidate);
    snprintf(x->fingerprint, sizeof x->fingerprint, "%s", d->fingerprint);
    cJSON *dj = cJSON_CreateObject();
    cJSON_AddStringToObject(dj, "design", x->label);
    cJSON_AddStringToObject(dj, "database", d->backend->name);
    cJSON_AddStringToObject(dj, "title", d->backend->title);
    cJSON_AddStringToObject(dj, "candidate", d->candidate);
    cJSON_AddBoolToObject(dj, "is_default_candidate", x->is_default);
    if (d->summary) cJSON_AddStringToObject(dj, "summary", d->summary);
    if (o->designs_as == KP_COMPARE_DESIGNS_TEXT) {
        /* only printed: the cost and risk rows go in as their text (depth 5: doc, mixes, a
         * mix, its designs, this design) */
        cJSON_AddItemToObject(dj, "cost", as_text(o, cost_json, &x->cost, 5));
        cJSON_AddItemToObject(dj, "risks", as_text(o, risks_json, &x->risks, 5));
    } else {
        cJSON_AddItemToObject(dj, "cost", kp_cost_to_json(&x->cost));
        cJSON_AddItemToObject(dj, "risks", kp_risks_to_json(&x->risks));
    }
    cJSON_AddNumberToObject(dj, "defects", (double)kp_risks_count(&x->risks, KP_RISK_DEFECT));
    cJSON_AddNumberToObject(dj, "warnings", (double)kp_risks_count(&x->risks, KP_RISK_WARNING));
    x->json = dj;
    x->decisions = cJSON_CreateArray();
    for (size_t i = 0; i < d->decision_count; i++) {
        cJSON *c = cJSON_CreateObject();
        cJSON_AddStringToObject(c, "subject", d->decisions[i].subject);
        cJSON_AddStringToObject(c, "choice", d->decisions[i].choice);
        cJSON_AddItemToArray(x->decisions, c);
    }
    tree_end(o);
    if (!designs || !x->is_default || o->designs_as == KP_COMPARE_DESIGNS_NONE) return;
    tree_begin(o);
    cJSON_AddItemToArray(designs, o->designs_as == KP_COMPARE_DESIGNS_TEXT ? as_text(o, design_json, d, 2) : kp_design_to_json(d));
    tree_end(o);
}

/* One mix: propose, cost, check, recommend. Adds the mix object to `mixes` and, for the
 * first mix, the recommended candidates' full design JSON to `designs`. */
static int compare_mix(const kp_model *m, const kp_compare_options *o, const kp_mix *mix, cJSON *mixes, cJSON *designs,
                       kp_error *err)
{
    size_t backend_count = 0;
    while (o->backends[backend_count]) backend_count++;
    size_t n = 0, cap = 0;
    entry *e = NULL;
    int rc = 0;
    for (size_t b = 0; b < backend_count && rc == 0; b++) {
        kp_propose_options po = {mix, !o->is_single_candidate};
        kp_design_list list = {0};
        if (o->backends[b]->propose(m, &po, &list, err)) { rc = -1; break; }
        for (size_t i = 0; i < list.count && rc == 0; i++) {
            if (n == cap) {
                cap = cap ? cap * 2 : 8;
                entry *grown = realloc(e, cap * sizeof *e);
                if (!grown) { rc = kp_error_set(err, KP_ERR_NOMEM, NULL, 0, 0, "out of memory"); break; }
                e = grown;
            }
            int same = 0; /* an alternative that comes out as the same layout adds nothing */
            for (size_t k = 0; k < n && i > 0; k++)
                same |= e[k].backend == list.items[i]->backend && strcmp(e[k].fingerprint, list.items[i]->fingerprint) == 0;
            if (same) continue;
            entry *x = &e[n];
            memset(x, 0, sizeof *x);
            x->is_default = i == 0;
            if (kp_cost_compute(list.items[i], mix, &o->prices, &x->cost, err)) { rc = -1; break; }
            n++;
            kp_risk_options ro = {o->data, o->samples, o->seed};
            if (kp_risk_check(list.items[i], mix, &ro, &x->risks, err)) { rc = -1; break; }
            keep_design(o, x, list.items[i], designs);
            /* only the design recommend() will pick keeps its decisions: the best so far
             * (recommend's own scan, in the same order) */
            if (n > 1) {
                size_t best = 0;
                for (size_t k = 1; k < n; k++)
                    if (better(&e[k], &e[best]) < 0) best = k;
                tree_begin(o);
                for (size_t k = 0; k < n; k++)
                    if (k != best && e[k].decisions) { cJSON_Delete(e[k].decisions); e[k].decisions = NULL; }
                tree_end(o);
            }
        }
        kp_design_list_free(&list);
    }
    if (rc == 0) {
        tree_begin(o);
        cJSON *mo = cJSON_CreateObject();
        if (mix) {
            cJSON_AddStringToObject(mo, "name", mix->name);
            if (mix->description) cJSON_AddStringToObject(mo, "description", mix->description);
        } else {
            cJSON_AddNullToObject(mo, "name");
        }
        cJSON *arr = cJSON_AddArrayToObject(mo, "designs");
        for (size_t i = 0; i < n; i++) {
            cJSON_AddItemToArray(arr, e[i].json);
            e[i].json = NULL;
        }
        cJSON_AddItemToObject(mo, "recommendation", recommend(e, n, mix));
        cJSON_AddItemToArray(mixes, mo);
        tree_end(o);
    }
    free_entries(o, e, n);
    free(e);
    return rc;
}

cJSON *kp_compare(const kp_model *m, const kp_compare_options *o, kp_error *err)
{
    tree_begin(o);
    cJSON *doc = cJSON_CreateObject();
    cJSON_AddNumberToObject(doc, "schema_version", KP_SCHEMA_VERSION);
    cJSON_AddStringToObject(doc, "command", "compare");
    cJSON_AddStringToObject(doc, "model", m->name ? m->name : "");
    cJSON_AddStringToObject(doc, "model_hash", m->hash);
    cJSON_AddBoolToObject(doc, "simulated", o->data != NULL);
    cJSON *patterns = cJSON_AddArrayToObject(doc, "patterns");
    for (size_t i = 0; i < m->pattern_count; i++) cJSON_AddItemToArray(patterns, cJSON_CreateString(m->patterns[i]->name));
    /* what each pattern returns, for a reader of the report: its description and the
     * JSON it answers with, types in place of values */
    cJSON *responses = cJSON_AddArrayToObject(doc, "responses");
    char outline[16384];
    for (size_t i = 0; i < m->pattern_count; i++) {
        const kp_pattern *p = m->patterns[i];
        cJSON *r = cJSON_CreateObject();
        cJSON_AddStringToObject(r, "pattern", p->name);
        if (p->description) cJSON_AddStringToObject(r, "description", p->description);
        kp_shape_outline(p->returns, outline, sizeof outline);
        cJSON_AddStringToObject(r, "returns", outline);
        cJSON_AddItemToArray(responses, r);
    }
    cJSON *writes = cJSON_AddArrayToObject(doc, "writes");
    for (size_t i = 0; i < m->write_count; i++) cJSON_AddItemToArray(writes, cJSON_CreateString(m->writes[i]->name));
    cJSON *mixes = cJSON_AddArrayToObject(doc, "mixes");
    cJSON *designs = cJSON_CreateArray();
    const kp_mix *list[64];
    size_t count = 0;
    if (o->mix) list[count++] = o->mix;
    else if (m->mix_count) {
        if (m->default_mix) list[count++] = m->default_mix;
        for (size_t i = 0; i < m->mix_count && count < 64; i++)
            if (m->mixes[i] != m->default_mix) list[count++] = m->mixes[i];
    } else list[count++] = NULL;
    tree_end(o);
    for (size_t i = 0; i < count; i++) {
        if (compare_mix(m, o, list[i], mixes, i == 0 ? designs : NULL, err)) {
            tree_begin(o);
            cJSON_Delete(designs);
            cJSON_Delete(doc);
            tree_end(o);
            return NULL;
        }
    }
    tree_begin(o);
    const cJSON *first = cJSON_GetObjectItem(mixes->child, "recommendation");
    cJSON_AddItemToObject(doc, "recommendation", cJSON_Duplicate(first, 1));
    int changes = 0;
    cJSON *by_mix = cJSON_AddArrayToObject(doc, "recommendation_by_mix");
    for (const cJSON *mo = mixes->child; mo; mo = mo->next) {
        const cJSON *r = cJSON_GetObjectItem(mo, "recommendation");
        cJSON *x = cJSON_CreateObject();
        const cJSON *name = cJSON_GetObjectItem(mo, "name");
        if (cJSON_IsString(name)) cJSON_AddStringToObject(x, "mix", name->valuestring);
        else cJSON_AddNullToObject(x, "mix");
        cJSON_AddStringToObject(x, "design", kp_json_str(r, "design"));
        cJSON_AddStringToObject(x, "fingerprint", kp_json_str(r, "fingerprint"));
        cJSON *differs = cJSON_AddArrayToObject(x, "differences");
        if (mo != mixes->child) {
            int other = strcmp(kp_json_str(r, "design"), kp_json_str(first, "design")) != 0;
            char buf[1024];
            if (other) {
                snprintf(buf, sizeof buf, "%s instead of %s", kp_json_str(r, "design"), kp_json_str(first, "design"));
                cJSON_AddItemToArray(differs, cJSON_CreateString(buf));
            } else {
                /* the same database and candidate, but the mix changed its decisions */
                const cJSON *mine = cJSON_GetObjectItem(r, "decisions"), *theirs = cJSON_GetObjectItem(first, "decisions");
                for (const cJSON *a = mine ? mine->child : NULL; a; a = a->next) {
                    /* a subject may have several decisions (a table's key, its buckets, its
                     * static columns): the same one is any with the same subject and choice */
                    const cJSON *b = NULL, *same = NULL;
                    for (const cJSON *t = theirs ? theirs->child : NULL; t && !same; t = t->next) {
                        if (strcmp(kp_json_str(t, "subject"), kp_json_str(a, "subject")) != 0) continue;
                        if (!b) b = t;
                        if (strcmp(kp_json_str(a, "choice"), kp_json_str(t, "choice")) == 0) same = t;
                    }
                    if (same) continue;
                    snprintf(buf, sizeof buf, "%s: %s (under %s: %s)", kp_json_str(a, "subject"), kp_json_str(a, "choice"),
                             mix_title(mixes->child), b ? kp_json_str(b, "choice") : "no such decision");
                    cJSON_AddItemToArray(differs, cJSON_CreateString(buf));
                }
            }
            changes |= cJSON_GetArraySize(differs) > 0 || strcmp(kp_json_str(r, "fingerprint"), kp_json_str(first, "fingerprint")) != 0;
        }
        cJSON_AddItemToArray(by_mix, x);
    }
    cJSON_AddBoolToObject(doc, "mix_changes_recommendation", changes);
    cJSON_AddItemToObject(doc, "model_diagram", model_diagram(m));
    cJSON_AddItemToObject(doc, "designs", designs);
    tree_end(o);
    return doc;
}

const cJSON *kp_compare_recommendation(const cJSON *doc, const char *mix)
{
    const cJSON *mixes = cJSON_GetObjectItem(doc, "mixes");
    for (const cJSON *mo = mixes ? mixes->child : NULL; mo; mo = mo->next) {
        const cJSON *name = cJSON_GetObjectItem(mo, "name");
        if (!mix || (cJSON_IsString(name) && strcmp(name->valuestring, mix) == 0)) return cJSON_GetObjectItem(mo, "recommendation");
    }
    return NULL;
}

/* ---- shared rendering helpers ---------------------------------------------------------------- */

static const char *human_bytes(char *buf, size_t size, double b)
{
    if (b >= 1e12) snprintf(buf, size, "%.1f TB", b / 1e12);
    else if (b >= 1e9) snprintf(buf, size, "%.1f GB", b / 1e9);
    else if (b >= 1e6) snprintf(buf, size, "%.1f MB", b / 1e6);
    else if (b >= 1e3) snprintf(buf, size, "%.1f KB", b / 1e3);
    else snprintf(buf, size, "%.0f B", b);
    return buf;
}

static const char *short_num(char *buf, size_t size, double v)
{
    if (v >= 1e9) snprintf(buf, size, "%.1fG", v / 1e9);
    else if (v >= 1e6) snprintf(buf, size, "%.1fM", v / 1e6);
    else if (v >= 1e4) snprintf(buf, size, "%.1fk", v / 1e3);
    else if (v == floor(v)) snprintf(buf, size, "%.0f", v);
    else snprintf(buf, size, "%.2f", v);
    return buf;
}

/* One design's row of a totals table, its cells as text and Markdown print them alike:
 * reads, items read, writes, items written, I/O units, storage, duplication, $/month
 * (`no_price` where the design is not priced). */
typedef struct totals_row { char cell[8][24]; } totals_row;

static void totals_cells(const cJSON *design, const char *no_price, totals_row *r)
{
    const cJSON *cost = cJSON_GetObjectItem(design, "cost"), *t = cJSON_GetObjectItem(cost, "totals");
    const cJSON *money = cJSON_GetObjectItem(cost, "monthly_usd");
    static const char *const counts[] = {"read_requests_per_s", "items_read_per_s", "write_requests_per_s",
                                         "items_written_per_s", "io_units_per_s"};
    for (int k = 0; k < 5; k++) short_num(r->cell[k], sizeof r->cell[k], kp_json_num(t, counts[k]));
    human_bytes(r->cell[5], sizeof r->cell[5], kp_json_num(t, "storage_bytes"));
    snprintf(r->cell[6], sizeof r->cell[6], "%.2f", kp_json_num(t, "duplication"));
    if (cJSON_IsObject(money)) snprintf(r->cell[7], sizeof r->cell[7], "%.2f", kp_json_num(money, "total"));
    else snprintf(r->cell[7], sizeof r->cell[7], "%s", no_price);
}

const cJSON *kp_compare_find_named(const cJSON *arr, const char *name, const cJSON **cursor)
{
    const cJSON *start = cursor && *cursor ? *cursor : arr ? arr->child : NULL;
    for (int pass = 0; pass < 2; pass++) {
        const cJSON *from = pass == 0 ? start : arr ? arr->child : NULL, *to = pass == 0 ? NULL : start;
        for (const cJSON *x = from; x && x != to; x = x->next)
            if (strcmp(kp_json_str(x, "name"), name) == 0) {
                if (cursor) *cursor = x->next;
                return x;
            }
        if (start == (arr ? arr->child : NULL)) break;
    }
    return NULL;
}

static const char *mix_title(const cJSON *mo)
{
    const cJSON *n = cJSON_GetObjectItem(mo, "name");
    return cJSON_IsString(n) ? n->valuestring : "declared rates";
}

/* One row per design for a pattern: the cells as text (shared by text and Markdown). */
typedef struct pattern_cells { char rt[16], req[24], items[24], bytes[24], units[32], scan[8]; } pattern_cells;

static void fill_pattern_cells(pattern_cells *c, const cJSON *p, const cJSON *totals)
{
    char tmp[24];
    snprintf(c->rt, sizeof c->rt, "%.0f", kp_json_num(p, "round_trips"));
    snprintf(c->req, sizeof c->req, "%s", short_num(tmp, sizeof tmp, kp_json_num(p, "requests")));
    snprintf(c->items, sizeof c->items, "%s", short_num(tmp, sizeof tmp, kp_json_num(p, "items_read")));
    human_bytes(c->bytes, sizeof c->bytes, kp_json_num(p, "bytes_read"));
    if (cJSON_GetObjectItem(p, "read_units"))
        snprintf(c->units, sizeof c->units, "%s %s", short_num(tmp, sizeof tmp, kp_json_num(p, "read_units")), kp_json_str(totals, "read_unit"));
    else snprintf(c->units, sizeof c->units, "%s io", short_num(tmp, sizeof tmp, kp_json_num(p, "io_units")));
    snprintf(c->scan, sizeof c->scan, "%s", cJSON_IsTrue(cJSON_GetObjectItem(p, "scan")) ? "SCAN" : "");
}

/* ---- text ---------------------------------------------------------------------------------------- */

void kp_compare_print_text(FILE *out, const cJSON *doc, int use_color)
{
    const char *bold = use_color ? "\033[1m" : "", *red = use_color ? "\033[31m" : "", *yellow = use_color ? "\033[33m" : "",
               *reset = use_color ? "\033[0m" : "";
    const cJSON *mixes = cJSON_GetObjectItem(doc, "mixes");
    const cJSON *first = mixes ? mixes->child : NULL;
    if (!first) return;
    const cJSON *designs = cJSON_GetObjectItem(first, "designs");
    fprintf(out, "%scompare %s%s — workload mix: %s\n\n", bold, kp_json_str(doc, "model"), reset, mix_title(first));
    fprintf(out, "designs (* = the database's recommended candidate):\n");
    for (const cJSON *d = designs ? designs->child : NULL; d; d = d->next)
        fprintf(out, "  %c %-28s %s\n", cJSON_IsTrue(cJSON_GetObjectItem(d, "is_default_candidate")) ? '*' : ' ', kp_json_str(d, "design"),
                kp_json_str(d, "summary"));
    const cJSON *patterns = cJSON_GetObjectItem(doc, "patterns");
    kp_named_cursors cur1 = {{0}}, cur2 = {{0}}, cur4 = {{0}};
    for (const cJSON *pn = patterns ? patterns->child : NULL; pn; pn = pn->next) {
        double rps = 0;
        size_t di1 = 0;
        for (const cJSON *d = designs ? designs->child : NULL; d; d = d->next, di1++) {
            const cJSON *p = kp_compare_find_named(cJSON_GetObjectItem(cJSON_GetObjectItem(d, "cost"), "patterns"), pn->valuestring, KP_CURSOR(&cur1, di1));
            if (p) { rps = kp_json_num(p, "rps"); break; }
        }
        fprintf(out, "\n%saccess pattern %s%s  (%g req/s)\n", bold, pn->valuestring, reset, rps);
        fprintf(out, "  %-28s %11s %9s %9s %10s %12s\n", "design", "round trips", "requests", "items", "bytes", "units");
        size_t dk = 0;
        for (const cJSON *d = designs ? designs->child : NULL; d; d = d->next, dk++) {
            const cJSON *cost = cJSON_GetObjectItem(d, "cost");
            const cJSON *p = kp_compare_find_named(cJSON_GetObjectItem(cost, "patterns"), pn->valuestring, KP_CURSOR(&cur4, dk));
            if (!p) continue;
            pattern_cells c;
            fill_pattern_cells(&c, p, cJSON_GetObjectItem(cost, "totals"));
            fprintf(out, "  %-28s %11s %9s %9s %10s %12s %s%s%s\n", kp_json_str(d, "design"), c.rt, c.req, c.items, c.bytes, c.units, red,
                    c.scan, reset);
        }
    }
    const cJSON *writes = cJSON_GetObjectItem(doc, "writes");
    if (writes && writes->child) {
        fprintf(out, "\n%swrites%s: items written per operation (amplification)\n", bold, reset);
        fprintf(out, "  %-24s", "write");
        for (const cJSON *d = designs ? designs->child : NULL; d; d = d->next) fprintf(out, " %22s", kp_json_str(d, "design"));
        fputc('\n', out);
        for (const cJSON *wn = writes->child; wn; wn = wn->next) {
            fprintf(out, "  %-24s", wn->valuestring);
            size_t di2 = 0;
            for (const cJSON *d = designs ? designs->child : NULL; d; d = d->next, di2++) {
                const cJSON *w = kp_compare_find_named(cJSON_GetObjectItem(cJSON_GetObjectItem(d, "cost"), "writes"), wn->valuestring, KP_CURSOR(&cur2, di2));
                char cell[48];
                snprintf(cell, sizeof cell, "%g (x%g)", w ? kp_json_num(w, "items_written") : 0, w ? kp_json_num(w, "amplification") : 0);
                fprintf(out, " %22s", cell);
            }
            fputc('\n', out);
        }
    }
    for (const cJSON *mo = first; mo; mo = mo->next) {
        fprintf(out, "\n%stotals per second — mix %s%s\n", bold, mix_title(mo), reset);
        fprintf(out, "  %-28s %9s %10s %9s %10s %10s %9s %6s %10s\n", "design", "reads", "items rd", "writes", "items wr", "io units",
                "storage", "dup", "$/month");
        const cJSON *ds = cJSON_GetObjectItem(mo, "designs");
        for (const cJSON *d = ds ? ds->child : NULL; d; d = d->next) {
            totals_row r;
            totals_cells(d, "-", &r);
            fprintf(out, "  %-28s %9s %10s %9s %10s %10s %9s %6s %10s\n", kp_json_str(d, "design"), r.cell[0], r.cell[1],
                    r.cell[2], r.cell[3], r.cell[4], r.cell[5], r.cell[6], r.cell[7]);
        }
        for (const cJSON *d = ds ? ds->child : NULL; d; d = d->next) {
            const cJSON *note = cJSON_GetObjectItem(cJSON_GetObjectItem(d, "cost"), "price_note");
            if (cJSON_IsString(note)) fprintf(out, "  %s: %s\n", kp_json_str(d, "design"), note->valuestring);
        }
    }
    fprintf(out, "\n%srisks%s\n", bold, reset);
    int any = 0;
    for (const cJSON *d = designs ? designs->child : NULL; d; d = d->next) {
        const cJSON *risks = cJSON_GetObjectItem(d, "risks");
        for (const cJSON *r = risks ? risks->child : NULL; r; r = r->next) {
            int defect = strcmp(kp_json_str(r, "severity"), "defect") == 0;
            fprintf(out, "  %s%-7s%s %-24s %s\n", defect ? red : yellow, kp_json_str(r, "severity"), reset, kp_json_str(d, "design"), kp_json_str(r, "message"));
            any = 1;
        }
    }
    if (!any) fprintf(out, "  none found\n");
    for (const cJSON *mo = first; mo; mo = mo->next) {
        const cJSON *r = cJSON_GetObjectItem(mo, "recommendation");
        fprintf(out, "\n%srecommendation — mix %s: %s%s\n", bold, mix_title(mo), kp_json_str(r, "design"), reset);
        const cJSON *reasons = cJSON_GetObjectItem(r, "reasons");
        for (const cJSON *x = reasons ? reasons->child : NULL; x; x = x->next) fprintf(out, "  - %s\n", x->valuestring);
        if (*kp_json_str(r, "to_review")) fprintf(out, "  - %s\n", kp_json_str(r, "to_review"));
    }
    if (cJSON_IsTrue(cJSON_GetObjectItem(doc, "mix_changes_recommendation"))) {
        fprintf(out, "\n%sthe workload mix changes the recommendation%s\n", bold, reset);
        const cJSON *by = cJSON_GetObjectItem(doc, "recommendation_by_mix");
        for (const cJSON *x = by ? by->child : NULL; x; x = x->next) {
            const cJSON *dif = cJSON_GetObjectItem(x, "differences");
            for (const cJSON *y = dif ? dif->child : NULL; y; y = y->next) fprintf(out, "  - under %s: %s\n", kp_json_str(x, "mix"), y->valuestring);
        }
    }
}

/* ---- Markdown ---------------------------------------------------------------------------------- */

static void md_escape(FILE *f, const char *s)
{
    for (; *s; s++) {
        if (*s == '|' || *s == '*' || *s == '_' || *s == '<' || *s == '>' || *s == '`') fputc('\\', f);
        fputc(*s == '\n' ? ' ' : *s, f);
    }
}

static void render_markdown(FILE *f, const cJSON *doc)
{
    const cJSON *mixes = cJSON_GetObjectItem(doc, "mixes");
    const cJSON *first = mixes ? mixes->child : NULL;
    if (!first) return;
    const cJSON *designs = cJSON_GetObjectItem(first, "designs");
    fprintf(f, "## keyplan compare: `%s`\n\n", kp_json_str(doc, "model"));
    const cJSON *rec = cJSON_GetObjectItem(first, "recommendation");
    fprintf(f, "**Recommendation (mix %s): `%s`**\n\n", mix_title(first), kp_json_str(rec, "design"));
    const cJSON *reasons = cJSON_GetObjectItem(rec, "reasons");
    for (const cJSON *x = reasons ? reasons->child : NULL; x; x = x->next) { fputs("- ", f); md_escape(f, x->valuestring); fputc('\n', f); }
    if (*kp_json_str(rec, "to_review")) { fputs("- ", f); md_escape(f, kp_json_str(rec, "to_review")); fputc('\n', f); }
    const cJSON *by = cJSON_GetObjectItem(doc, "recommendation_by_mix");
    for (const cJSON *x = by ? by->child : NULL; x; x = x->next) {
        const cJSON *dif = cJSON_GetObjectItem(x, "differences");
        for (const cJSON *y = dif ? dif->child : NULL; y; y = y->next) {
            fprintf(f, "- **the mix changes it** — under %s: ", kp_json_str(x, "mix"));
            md_escape(f, y->valuestring);
            fputc('\n', f);
        }
    }
    for (const cJSON *mo = first->next; mo; mo = mo->next) {
        const cJSON *r = cJSON_GetObjectItem(mo, "recommendation");
        fprintf(f, "\n**Under mix %s: `%s`**\n\n", mix_title(mo), kp_json_str(r, "design"));
        const cJSON *rs = cJSON_GetObjectItem(r, "reasons");
        for (const cJSON *x = rs ? rs->child : NULL; x; x = x->next) { fputs("- ", f); md_escape(f, x->valuestring); fputc('\n', f); }
        if (*kp_json_str(r, "to_review")) { fputs("- ", f); md_escape(f, kp_json_str(r, "to_review")); fputc('\n', f); }
    }
    fprintf(f, "\n### Designs\n\n| design | default | summary |\n|---|---|---|\n");
    for (const cJSON *d = designs ? designs->child : NULL; d; d = d->next) {
        fprintf(f, "| `%s` | %s | ", kp_json_str(d, "design"), cJSON_IsTrue(cJSON_GetObjectItem(d, "is_default_candidate")) ? "yes" : "");
        md_escape(f, kp_json_str(d, "summary"));
        fputs(" |\n", f);
    }
    for (const cJSON *mo = first; mo; mo = mo->next) {
        fprintf(f, "\n### Totals per second, mix %s\n\n", mix_title(mo));
        fprintf(f, "| design | reads | items read | writes | items written | I/O units | storage | duplication | $/month |\n"
                   "|---|--:|--:|--:|--:|--:|--:|--:|--:|\n");
        const cJSON *ds = cJSON_GetObjectItem(mo, "designs");
        for (const cJSON *d = ds ? ds->child : NULL; d; d = d->next) {
            totals_row r;
            totals_cells(d, "—", &r);
            fprintf(f, "| `%s` | %s | %s | %s | %s | %s | %s | %s | %s |\n", kp_json_str(d, "design"), r.cell[0], r.cell[1],
                    r.cell[2], r.cell[3], r.cell[4], r.cell[5], r.cell[6], r.cell[7]);
        }
        for (const cJSON *d = ds ? ds->child : NULL; d; d = d->next) {
            const cJSON *note = cJSON_GetObjectItem(cJSON_GetObjectItem(d, "cost"), "price_note");
            if (cJSON_IsString(note)) { fprintf(f, "\n`%s`: ", kp_json_str(d, "design")); md_escape(f, note->valuestring); fputc('\n', f); }
        }
    }
    fprintf(f, "\n### Risks (mix %s)\n\n", mix_title(first));
    int any = 0;
    for (const cJSON *d = designs ? designs->child : NULL; d; d = d->next) {
        const cJSON *risks = cJSON_GetObjectItem(d, "risks");
        for (const cJSON *r = risks ? risks->child : NULL; r; r = r->next) {
            if (!any) fprintf(f, "| design | severity | kind | risk |\n|---|---|---|---|\n");
            fprintf(f, "| `%s` | %s | %s | ", kp_json_str(d, "design"), kp_json_str(r, "severity"), kp_json_str(r, "kind"));
            md_escape(f, kp_json_str(r, "message"));
            fputs(" |\n", f);
            any = 1;
        }
    }
    if (!any) fputs("None found.\n", f);
    fprintf(f, "\n### Access patterns (mix %s)\n", mix_title(first));
    const cJSON *patterns = cJSON_GetObjectItem(doc, "patterns");
    kp_named_cursors cur3 = {{0}}, cur5 = {{0}};
    for (const cJSON *pn = patterns ? patterns->child : NULL; pn; pn = pn->next) {
        fprintf(f, "\n#### `%s`\n\n| design | round trips | requests | items | bytes | units | scan |\n|---|--:|--:|--:|--:|--:|---|\n",
                pn->valuestring);
        size_t dk = 0;
        for (const cJSON *d = designs ? designs->child : NULL; d; d = d->next, dk++) {
            const cJSON *cost = cJSON_GetObjectItem(d, "cost");
            const cJSON *p = kp_compare_find_named(cJSON_GetObjectItem(cost, "patterns"), pn->valuestring, KP_CURSOR(&cur5, dk));
            if (!p) continue;
            pattern_cells c;
            fill_pattern_cells(&c, p, cJSON_GetObjectItem(cost, "totals"));
            fprintf(f, "| `%s` | %s | %s | %s | %s | %s | %s |\n", kp_json_str(d, "design"), c.rt, c.req, c.items, c.bytes, c.units,
                    c.scan[0] ? "**scan**" : "");
        }
    }
    const cJSON *writes = cJSON_GetObjectItem(doc, "writes");
    if (writes && writes->child) {
        fprintf(f, "\n### Writes: items written per operation (amplification)\n\n| write |");
        for (const cJSON *d = designs ? designs->child : NULL; d; d = d->next) fprintf(f, " `%s` |", kp_json_str(d, "design"));
        fputs("\n|---|", f);
        for (const cJSON *d = designs ? designs->child : NULL; d; d = d->next) fputs("--:|", f);
        fputc('\n', f);
        for (const cJSON *wn = writes->child; wn; wn = wn->next) {
            fprintf(f, "| `%s` |", wn->valuestring);
            size_t di3 = 0;
            for (const cJSON *d = designs ? designs->child : NULL; d; d = d->next, di3++) {
                const cJSON *w = kp_compare_find_named(cJSON_GetObjectItem(cJSON_GetObjectItem(d, "cost"), "writes"), wn->valuestring, KP_CURSOR(&cur3, di3));
                fprintf(f, " %g (x%g) |", w ? kp_json_num(w, "items_written") : 0, w ? kp_json_num(w, "amplification") : 0);
            }
            fputc('\n', f);
        }
    }
}

char *kp_compare_markdown(const cJSON *doc)
{
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    if (!f) return NULL;
    render_markdown(f, doc);
    if (fclose(f)) { free(text); return NULL; }
    if (len <= KP_MARKDOWN_LIMIT) return text;
    static const char note[] =
        "\n\n> _Truncated to fit a pull-request comment (65,536 characters): run `keyplan compare --format md --out FILE` "
        "or `--format html` for the whole report._\n";
    size_t keep = KP_MARKDOWN_LIMIT - (sizeof note - 1);
    while (keep > 0 && text[keep - 1] != '\n') keep--;
    memcpy(text + keep, note, sizeof note);
    return text;
}
