/*
 * report.c — the neutral design JSON and its text and Markdown renderings.
 *
 * Invariant: kp_advise_print_* read only the JSON document (see report.h).
 */
#include "core/json.h"
#include "advisors/report.h"

#include <string.h>

/* Keys are literals (no copy); string values are copied, or referenced while a caller
 * promises the designs outlive the tree (kp_advise_json): an advise report of 1,000
 * entities holds some 300,000 strings. */
static int by_reference;

static cJSON *str(const char *v) { return by_reference ? cJSON_CreateStringReference(v) : cJSON_CreateString(v); }
static void add_str(cJSON *o, const char *k, const char *v) { cJSON_AddItemToObjectCS(o, k, str(v)); }
static void add_num(cJSON *o, const char *k, double v) { cJSON_AddItemToObjectCS(o, k, cJSON_CreateNumber(v)); }
static void add_bool(cJSON *o, const char *k, int v) { cJSON_AddItemToObjectCS(o, k, cJSON_CreateBool(v)); }
static void add_null(cJSON *o, const char *k) { cJSON_AddItemToObjectCS(o, k, cJSON_CreateNull()); }
static cJSON *add_array(cJSON *o, const char *k)
{
    cJSON *a = cJSON_CreateArray();
    cJSON_AddItemToObjectCS(o, k, a);
    return a;
}

static const char *const roles[] = {"partition", "sort", "static", "field"};

static cJSON *keys_json(const kp_key_part *keys, size_t n)
{
    cJSON *arr = cJSON_CreateArray();
    for (size_t i = 0; i < n; i++) {
        cJSON *k = cJSON_CreateObject();
        add_str(k, "name", keys[i].name);
        add_str(k, "role", roles[keys[i].role]);
        if (keys[i].is_desc) add_bool(k, "descending", 1);
        if (keys[i].format && keys[i].format[0]) add_str(k, "format", keys[i].format);
        cJSON_AddItemToArray(arr, k);
    }
    return arr;
}

static cJSON *strings(const char *const *list, size_t n)
{
    cJSON *arr = cJSON_CreateArray();
    for (size_t i = 0; i < n; i++) cJSON_AddItemToArray(arr, str(list[i]));
    return arr;
}

cJSON *kp_design_to_json(const kp_design *d)
{
    cJSON *o = cJSON_CreateObject();
    add_str(o, "database", d->backend->name);
    add_str(o, "title", d->backend->title);
    add_str(o, "candidate", d->candidate);
    if (d->summary) add_str(o, "summary", d->summary);
    if (d->diagram) add_str(o, "diagram", d->diagram);
    if (d->diagram) add_str(o, "diagram_shows", d->is_diagram_of_containers ? "containers" : "layout");
    cJSON *containers = add_array(o, "containers");
    for (size_t i = 0; i < d->container_count; i++) {
        const kp_container *c = &d->containers[i];
        cJSON *co = cJSON_CreateObject();
        add_str(co, "name", c->name);
        add_str(co, "kind", c->kind);
        cJSON_AddItemToObjectCS(co, "keys", keys_json(c->keys, c->key_count));
        cJSON *entities = add_array(co, "entities");
        for (size_t k = 0; k < c->entity_count; k++) cJSON_AddItemToArray(entities, str(c->entities[k]->name));
        add_num(co, "items", c->items);
        add_num(co, "bytes", c->bytes);
        if (c->why) add_str(co, "why", c->why);
        cJSON *indexes = add_array(co, "indexes");
        for (size_t k = 0; k < c->index_count; k++) {
            const kp_index_desc *x = &c->indexes[k];
            cJSON *xo = cJSON_CreateObject();
            add_str(xo, "name", x->name);
            add_str(xo, "kind", x->kind);
            cJSON_AddItemToObjectCS(xo, "keys", keys_json(x->keys, x->key_count));
            if (x->projection) add_str(xo, "projection", x->projection);
            add_bool(xo, "sparse", x->is_sparse);
            cJSON_AddItemToObjectCS(xo, "caused_by", strings(x->caused_by, x->caused_by_count));
            cJSON_AddItemToArray(indexes, xo);
        }
        cJSON_AddItemToArray(containers, co);
    }
    cJSON *patterns = add_array(o, "patterns");
    for (size_t i = 0; i < d->plan_count; i++) {
        const kp_plan *p = &d->plans[i];
        cJSON *po = cJSON_CreateObject();
        add_str(po, "name", p->pattern->name);
        add_num(po, "rps", kp_pattern_rps(p->pattern, d->mix));
        add_num(po, "round_trips", p->sequential_steps);
        add_num(po, "requests", p->requests);
        add_num(po, "items_read", p->items);
        add_num(po, "bytes_read", p->bytes);
        /* what one page may cost at most: verify fails a pattern that measures more */
        cJSON *bound = cJSON_CreateObject();
        cJSON_AddItemToObjectCS(po, "max", bound);
        add_num(bound, "requests", p->requests_max);
        add_num(bound, "items_read", p->items_max);
        add_num(bound, "bytes_read", p->bytes_max);
        if (d->backend->limits->read_unit) add_num(po, "read_units", p->read_units);
        add_bool(po, "scan", p->is_scan);
        if (p->why) add_str(po, "why", p->why);
        cJSON *ops = add_array(po, "operations");
        for (size_t k = 0; k < p->op_count; k++) {
            const kp_operation *op = &p->ops[k];
            cJSON *oo = cJSON_CreateObject();
            add_str(oo, "op", op->op);
            add_str(oo, "container", op->container);
            if (op->index) add_str(oo, "index", op->index);
            else add_null(oo, "index");
            add_str(oo, "condition", op->condition ? op->condition : "");
            add_bool(oo, "waits_for_previous", op->waits_for_previous);
            add_num(oo, "requests", op->requests);
            add_num(oo, "items", op->items);
            add_num(oo, "bytes", op->bytes);
            if (d->backend->limits->read_unit) add_num(oo, "read_units", op->read_units);
            add_bool(oo, "scan", op->is_scan);
            if (op->request) cJSON_AddItemToObjectCS(oo, "request", cJSON_Duplicate(op->request, 1));
            if (op->why) add_str(oo, "why", op->why);
            cJSON_AddItemToArray(ops, oo);
        }
        cJSON_AddItemToArray(patterns, po);
    }
    cJSON *writes = add_array(o, "writes");
    for (size_t i = 0; i < d->write_plan_count; i++) {
        const kp_write_plan *w = &d->write_plans[i];
        cJSON *wo = cJSON_CreateObject();
        add_str(wo, "name", w->write->name);
        add_num(wo, "rps", kp_write_rps(w->write, d->mix));
        add_num(wo, "requests", w->requests);
        add_num(wo, "items_written", w->items);
        if (d->backend->limits->write_unit) add_num(wo, "write_units", w->write_units);
        if (w->mechanism) add_str(wo, "mechanism", w->mechanism);
        if (w->why) add_str(wo, "why", w->why);
        cJSON *touches = add_array(wo, "touches");
        for (size_t k = 0; k < w->touch_count; k++) {
            cJSON *t = cJSON_CreateObject();
            add_str(t, "container", w->touches[k].container);
            add_str(t, "what", w->touches[k].what);
            add_num(t, "count", w->touches[k].count);
            add_num(t, "bytes", w->touches[k].bytes);
            if (d->backend->limits->write_unit) add_num(t, "write_units", w->touches[k].write_units);
            cJSON_AddItemToArray(touches, t);
        }
        cJSON_AddItemToArray(writes, wo);
    }
    cJSON *decisions = add_array(o, "decisions");
    for (size_t i = 0; i < d->decision_count; i++) {
        const kp_decision *x = &d->decisions[i];
        cJSON *xo = cJSON_CreateObject();
        add_str(xo, "subject", x->subject);
        add_str(xo, "choice", x->choice);
        add_str(xo, "why", x->why);
        cJSON *ps = add_array(xo, "patterns");
        for (size_t k = 0; k < x->pattern_count; k++) cJSON_AddItemToArray(ps, str(x->patterns[k]->name));
        if (x->hint) add_str(xo, "hint", x->hint->kind);
        cJSON_AddItemToArray(decisions, xo);
    }
    cJSON_AddItemToObjectCS(o, "defects", strings(d->defects, d->defect_count));
    cJSON_AddItemToObjectCS(o, "notes", strings(d->notes, d->note_count));
    return o;
}

cJSON *kp_advise_json(const kp_model *model, const kp_mix *mix, kp_design *const *designs, size_t count)
{
    cJSON *doc = cJSON_CreateObject();
    add_num(doc, "schema_version", KP_SCHEMA_VERSION);
    add_str(doc, "command", "advise");
    add_str(doc, "model", model->name);
    add_str(doc, "model_hash", model->hash);
    if (mix) add_str(doc, "mix", mix->name);
    else add_null(doc, "mix");
    cJSON *arr = add_array(doc, "designs");
    by_reference = 1;
    for (size_t i = 0; i < count; i++) cJSON_AddItemToArray(arr, kp_design_to_json(designs[i]));
    by_reference = 0;
    return doc;
}

/* ---- text ------------------------------------------------------------------------------ */



static void print_keys(FILE *out, const cJSON *keys)
{
    int first = 1;
    for (const cJSON *k = keys ? keys->child : NULL; k; k = k->next) {
        fprintf(out, "%s%s (%s%s)", first ? "" : ", ", kp_json_str(k, "name"), kp_json_str(k, "role"),
                cJSON_IsTrue(cJSON_GetObjectItem(k, "descending")) ? ", desc" : "");
        first = 0;
    }
}

void kp_advise_print_text(FILE *out, const cJSON *doc, int use_color)
{
    const char *bold = use_color ? "\033[1m" : "", *dim = use_color ? "\033[2m" : "", *red = use_color ? "\033[31m" : "",
               *reset = use_color ? "\033[0m" : "";
    const cJSON *designs = cJSON_GetObjectItemCaseSensitive(doc, "designs");
    for (const cJSON *d = designs ? designs->child : NULL; d; d = d->next) {
        fprintf(out, "%s%s design for %s%s (%s)%s\n", bold, kp_json_str(d, "title"), kp_json_str(doc, "model"),
                cJSON_IsString(cJSON_GetObjectItem(doc, "mix")) ? "" : "", kp_json_str(d, "candidate"), reset);
        if (cJSON_IsString(cJSON_GetObjectItem(doc, "mix"))) fprintf(out, "  workload mix: %s\n", kp_json_str(doc, "mix"));
        fprintf(out, "  %s\n", kp_json_str(d, "summary"));
        const cJSON *containers = cJSON_GetObjectItem(d, "containers");
        for (const cJSON *c = containers ? containers->child : NULL; c; c = c->next) {
            fprintf(out, "\n%s%s %s%s  ", bold, kp_json_str(c, "kind"), kp_json_str(c, "name"), reset);
            print_keys(out, cJSON_GetObjectItem(c, "keys"));
            fprintf(out, "\n  ~%.0f items, %.1f MB\n", kp_json_num(c, "items"), kp_json_num(c, "bytes") / 1e6);
            const cJSON *indexes = cJSON_GetObjectItem(c, "indexes");
            for (const cJSON *x = indexes ? indexes->child : NULL; x; x = x->next) {
                fprintf(out, "  %-6s %-4s ", kp_json_str(x, "name"), kp_json_str(x, "kind"));
                print_keys(out, cJSON_GetObjectItem(x, "keys"));
                if (cJSON_IsTrue(cJSON_GetObjectItem(x, "sparse"))) fprintf(out, "  sparse");
                const cJSON *by = cJSON_GetObjectItem(x, "caused_by");
                if (by && by->child) {
                    fprintf(out, "  %sfor", dim);
                    for (const cJSON *p = by->child; p; p = p->next) fprintf(out, " %s", p->valuestring);
                    fprintf(out, "%s", reset);
                }
                fprintf(out, "\n");
            }
        }
        if (kp_json_str(d, "diagram")[0]) {
            fprintf(out, "\n%sLayout%s (item collections, sort-key order)\n", bold, reset);
            const char *t = kp_json_str(d, "diagram");
            while (*t) {
                const char *nl = strchr(t, '\n');
                size_t n = nl ? (size_t)(nl - t) : strlen(t);
                fprintf(out, "  %.*s\n", (int)n, t);
                t += n + (nl ? 1 : 0);
            }
        }
        fprintf(out, "\n%sDecisions%s\n", bold, reset);
        const cJSON *decisions = cJSON_GetObjectItem(d, "decisions");
        for (const cJSON *x = decisions ? decisions->child : NULL; x; x = x->next) {
            fprintf(out, "  %s: %s\n", kp_json_str(x, "subject"), kp_json_str(x, "choice"));
            fprintf(out, "    %swhy: %s", dim, kp_json_str(x, "why"));
            const cJSON *ps = cJSON_GetObjectItem(x, "patterns");
            if (ps && ps->child) {
                fprintf(out, " (");
                for (const cJSON *p = ps->child; p; p = p->next) fprintf(out, "%s%s", p == ps->child ? "" : ", ", p->valuestring);
                fprintf(out, ")");
            }
            fprintf(out, "%s\n", reset);
        }
        fprintf(out, "\n%sAccess patterns%s\n", bold, reset);
        const cJSON *patterns = cJSON_GetObjectItem(d, "patterns");
        for (const cJSON *p = patterns ? patterns->child : NULL; p; p = p->next) {
            fprintf(out, "  %s%s%s  %g rps: %g request%s, %g round trip%s, ~%.0f items, %.1f KB", bold, kp_json_str(p, "name"), reset,
                    kp_json_num(p, "rps"), kp_json_num(p, "requests"), kp_json_num(p, "requests") == 1 ? "" : "s", kp_json_num(p, "round_trips"),
                    kp_json_num(p, "round_trips") == 1 ? "" : "s", kp_json_num(p, "items_read"), kp_json_num(p, "bytes_read") / 1024);
            if (cJSON_GetObjectItem(p, "read_units")) fprintf(out, ", %.1f RCU", kp_json_num(p, "read_units"));
            if (cJSON_IsTrue(cJSON_GetObjectItem(p, "scan"))) fprintf(out, "  %sSCAN%s", red, reset);
            fprintf(out, "\n");
            const cJSON *ops = cJSON_GetObjectItem(p, "operations");
            for (const cJSON *o = ops ? ops->child : NULL; o; o = o->next) {
                fprintf(out, "    %s%s %s%s%s: ", cJSON_IsTrue(cJSON_GetObjectItem(o, "waits_for_previous")) ? "then " : "",
                        kp_json_str(o, "op"), kp_json_str(o, "container"), cJSON_IsString(cJSON_GetObjectItem(o, "index")) ? " index " : "",
                        kp_json_str(o, "index"));
                /* a condition of several commands (one a line): the others under the first */
                for (const char *c = kp_json_str(o, "condition"); *c; c++)
                    if (*c == '\n') fputs("\n      ", out);
                    else fputc(*c, out);
                fputc('\n', out);
                if (kp_json_str(o, "why")[0]) fprintf(out, "      %s%s%s\n", dim, kp_json_str(o, "why"), reset);
            }
            if (kp_json_str(p, "why")[0]) fprintf(out, "    %swhy: %s%s\n", dim, kp_json_str(p, "why"), reset);
        }
        const cJSON *writes = cJSON_GetObjectItem(d, "writes");
        if (writes && writes->child) fprintf(out, "\n%sWrites%s\n", bold, reset);
        for (const cJSON *w = writes ? writes->child : NULL; w; w = w->next) {
            double requests = kp_json_num(w, "requests");
            fprintf(out, "  %s%s%s  %g rps: %.4g request%s, %.1f items written", bold, kp_json_str(w, "name"), reset, kp_json_num(w, "rps"),
                    requests, requests == 1 ? "" : "s", kp_json_num(w, "items_written"));
            if (cJSON_GetObjectItem(w, "write_units")) fprintf(out, ", %.1f WCU", kp_json_num(w, "write_units"));
            fprintf(out, "  (%s)\n", kp_json_str(w, "mechanism"));
            const cJSON *touches = cJSON_GetObjectItem(w, "touches");
            for (const cJSON *t = touches ? touches->child : NULL; t; t = t->next)
                fprintf(out, "    %s%.1f x %s%s\n", dim, kp_json_num(t, "count"), kp_json_str(t, "what"), reset);
            if (kp_json_str(w, "why")[0]) fprintf(out, "    %swhy: %s%s\n", dim, kp_json_str(w, "why"), reset);
        }
        const cJSON *defects = cJSON_GetObjectItem(d, "defects");
        fprintf(out, "\n%sDefects%s\n", bold, reset);
        if (!defects || !defects->child) fprintf(out, "  none\n");
        for (const cJSON *x = defects ? defects->child : NULL; x; x = x->next) fprintf(out, "  %s- %s%s\n", red, x->valuestring, reset);
        const cJSON *notes = cJSON_GetObjectItem(d, "notes");
        if (notes && notes->child) fprintf(out, "\n%sNotes%s\n", bold, reset);
        for (const cJSON *x = notes ? notes->child : NULL; x; x = x->next) fprintf(out, "  - %s\n", x->valuestring);
        if (d->next) fprintf(out, "\n");
    }
}

/* Text for GitHub Markdown outside code: '<' and '>' as entities (key templates such as
 * PK=AUTHOR#<authorId> would otherwise be eaten as HTML tags) and '|' escaped (tables). */
static void md_text(FILE *out, const char *s)
{
    for (; s && *s; s++) {
        if (*s == '<') fputs("&lt;", out);
        else if (*s == '>') fputs("&gt;", out);
        else if (*s == '|') fputs("\\|", out);
        else fputc(*s, out);
    }
}

void kp_advise_print_markdown(FILE *out, const cJSON *doc)
{
    const cJSON *designs = cJSON_GetObjectItemCaseSensitive(doc, "designs");
    fprintf(out, "## keyplan advise: ");
    md_text(out, kp_json_str(doc, "model"));
    fprintf(out, "\n\n");
    for (const cJSON *d = designs ? designs->child : NULL; d; d = d->next) {
        fprintf(out, "### %s (%s)\n\n", kp_json_str(d, "title"), kp_json_str(d, "candidate"));
        md_text(out, kp_json_str(d, "summary"));
        fprintf(out, "\n\n");
        if (kp_json_str(d, "diagram")[0]) fprintf(out, "```\n%s```\n\n", kp_json_str(d, "diagram"));
        fprintf(out, "| pattern | rps | requests | round trips | items | KB | scan |\n|---|---:|---:|---:|---:|---:|---|\n");
        const cJSON *patterns = cJSON_GetObjectItem(d, "patterns");
        for (const cJSON *p = patterns ? patterns->child : NULL; p; p = p->next) {
            fprintf(out, "| ");
            md_text(out, kp_json_str(p, "name"));
            fprintf(out, " | %g | %g | %g | %.0f | %.1f | %s |\n", kp_json_num(p, "rps"), kp_json_num(p, "requests"), kp_json_num(p, "round_trips"),
                    kp_json_num(p, "items_read"), kp_json_num(p, "bytes_read") / 1024, cJSON_IsTrue(cJSON_GetObjectItem(p, "scan")) ? "**yes**" : "no");
        }
        fprintf(out, "\n**Decisions**\n\n");
        const cJSON *decisions = cJSON_GetObjectItem(d, "decisions");
        for (const cJSON *x = decisions ? decisions->child : NULL; x; x = x->next) {
            fprintf(out, "- **");
            md_text(out, kp_json_str(x, "subject"));
            fprintf(out, "**: ");
            md_text(out, kp_json_str(x, "choice"));
            fprintf(out, " — ");
            md_text(out, kp_json_str(x, "why"));
            fprintf(out, "\n");
        }
        const cJSON *defects = cJSON_GetObjectItem(d, "defects");
        fprintf(out, "\n**Defects**: %s\n", defects && defects->child ? "" : "none");
        for (const cJSON *x = defects ? defects->child : NULL; x; x = x->next) {
            fprintf(out, "- ");
            md_text(out, x->valuestring);
            fprintf(out, "\n");
        }
        fprintf(out, "\n");
    }
}
