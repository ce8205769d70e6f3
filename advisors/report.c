/*
 * report.c — the neutral design JSON and its text and Markdown renderings.
 *
 * Invariant: kp_advise_print_* read only the JSON document (see report.h).
 */
#include "core/json.h"
#include "advisors/report.h"

#include <math.h>
#include <stdarg.h>
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

/* ---- text ------------------------------------------------------------------------------
 * An advise report of 1,000 entities is some 200,000 pieces of text: copied into one
 * buffer, numbers by the helpers below, not fprintf, whose format parsing was a sixth
 * of the command. Each helper prints what its printf conversion prints, byte for byte, and
 * falls back to it wherever its own rule could differ. */

/* The report's bytes, handed to the stream 64 KiB at a time (stdio copies a short
 * string byte by byte). */
typedef struct text_out {
    FILE *f;
    size_t len;
    char buf[1 << 16];
} text_out;

static void flush_out(text_out *t)
{
    if (t->len) fwrite(t->buf, 1, t->len, t->f);
    t->len = 0;
}

static void putn(text_out *t, const char *s, size_t n)
{
    if (t->len + n > sizeof t->buf) {
        flush_out(t);
        if (n > sizeof t->buf) { fwrite(s, 1, n, t->f); return; }
    }
    memcpy(t->buf + t->len, s, n);
    t->len += n;
}

static void put(text_out *t, const char *s) { putn(t, s, strlen(s)); }
static void putch(text_out *t, char c) { putn(t, &c, 1); }

/* Strings in order, up to a NULL. */
static void say(text_out *out, const char *first, ...)
{
    va_list ap;
    va_start(ap, first);
    for (const char *s = first; s; s = va_arg(ap, const char *)) put(out, s);
    va_end(ap);
}

/* A printf conversion of one number, for the helpers' fallbacks. */
static void put_printf(text_out *out, const char *fmt, int precision, double v)
{
    char buf[400];
    int n = snprintf(buf, sizeof buf, fmt, precision, v);
    if (n > 0) putn(out, buf, (size_t)n < sizeof buf ? (size_t)n : sizeof buf - 1);
}

/* The digits of a whole number (|v| < 1e15), or 0 when v is not one or is -0. */
static size_t whole_digits(char *buf, double v)
{
    if (!(fabs(v) < 1e15) || v != floor(v) || (v == 0 && signbit(v))) return 0;
    char digits[24], *at = kp_digits(digits + sizeof digits, (unsigned long long)fabs(v), v < 0);
    memcpy(buf, at, (size_t)(digits + sizeof digits - at));
    return (size_t)(digits + sizeof digits - at);
}

/* "%g" (or "%.4g": digits 4): a whole number under 10^digits prints as its digits. */
static void put_g(text_out *out, double v, int digits)
{
    char buf[32];
    size_t n = fabs(v) < (digits == 4 ? 1e4 : 1e6) ? whole_digits(buf, v) : 0;
    if (n) putn(out, buf, n);
    else put_printf(out, "%.*g", digits, v);
}

/* "%.0f" */
static void put_f0(text_out *out, double v)
{
    char buf[32];
    size_t n = whole_digits(buf, v);
    if (n) putn(out, buf, n);
    else put_printf(out, "%.*f", 0, v);
}

/* "%.1f": tenths rounded from v * 10 where that product is far from a half (its
 * rounding error is under 1e-6 there, so the nearest tenth is the one printf picks). */
static void put_f1(text_out *out, double v)
{
    double r = v * 10, low = floor(r), frac = r - low;
    if (!(fabs(r) < 1e12) || fabs(frac - 0.5) < 1e-6) { put_printf(out, "%.*f", 1, v); return; }
    long long tenths = (long long)low + (frac > 0.5);
    if (tenths == 0 && v < 0) { put_printf(out, "%.*f", 1, v); return; }
    unsigned long long u = tenths < 0 ? 0ULL - (unsigned long long)tenths : (unsigned long long)tenths;
    char buf[32];
    size_t n = whole_digits(buf, (double)(u / 10));
    if (tenths < 0) putch(out, '-');
    putn(out, buf, n);
    putch(out, '.');
    putch(out, (char)('0' + u % 10));
}

static void print_keys(text_out *out, const cJSON *keys)
{
    int first = 1;
    for (const cJSON *k = keys ? keys->child : NULL; k; k = k->next) {
        say(out, first ? "" : ", ", kp_json_str(k, "name"), " (", kp_json_str(k, "role"),
            cJSON_IsTrue(kp_json_get(k, "descending")) ? ", desc)" : ")", NULL);
        first = 0;
    }
}

/* "%-Ns": s, then spaces up to width N. */
static void put_padded(text_out *out, const char *s, size_t width)
{
    put(out, s);
    for (size_t n = strlen(s); n < width; n++) putch(out, ' ');
}

static void print_text(text_out *out, const cJSON *doc, int use_color)
{
    const char *bold = use_color ? "\033[1m" : "", *dim = use_color ? "\033[2m" : "", *red = use_color ? "\033[31m" : "",
               *reset = use_color ? "\033[0m" : "";
    const cJSON *designs = kp_json_get(doc, "designs");
    for (const cJSON *d = designs ? designs->child : NULL; d; d = d->next) {
        say(out, bold, kp_json_str(d, "title"), " design for ", kp_json_str(doc, "model"), " (", kp_json_str(d, "candidate"), ")",
            reset, "\n", NULL);
        if (cJSON_IsString(kp_json_get(doc, "mix"))) say(out, "  workload mix: ", kp_json_str(doc, "mix"), "\n", NULL);
        say(out, "  ", kp_json_str(d, "summary"), "\n", NULL);
        const cJSON *containers = kp_json_get(d, "containers");
        for (const cJSON *c = containers ? containers->child : NULL; c; c = c->next) {
            say(out, "\n", bold, kp_json_str(c, "kind"), " ", kp_json_str(c, "name"), reset, "  ", NULL);
            print_keys(out, kp_json_get(c, "keys"));
            put(out, "\n  ~");
            put_f0(out, kp_json_num(c, "items"));
            put(out, " items, ");
            put_f1(out, kp_json_num(c, "bytes") / 1e6);
            put(out, " MB\n");
            const cJSON *indexes = kp_json_get(c, "indexes");
            for (const cJSON *x = indexes ? indexes->child : NULL; x; x = x->next) {
                put(out, "  ");
                put_padded(out, kp_json_str(x, "name"), 6);
                putch(out, ' ');
                put_padded(out, kp_json_str(x, "kind"), 4);
                putch(out, ' ');
                print_keys(out, kp_json_get(x, "keys"));
                if (cJSON_IsTrue(kp_json_get(x, "sparse"))) put(out, "  sparse");
                const cJSON *by = kp_json_get(x, "caused_by");
                if (by && by->child) {
                    say(out, "  ", dim, "for", NULL);
                    for (const cJSON *p = by->child; p; p = p->next) say(out, " ", p->valuestring, NULL);
                    put(out, reset);
                }
                putch(out, '\n');
            }
        }
        if (kp_json_str(d, "diagram")[0]) {
            say(out, "\n", bold, "Layout", reset, " (item collections, sort-key order)\n", NULL);
            const char *t = kp_json_str(d, "diagram");
            while (*t) {
                const char *nl = strchr(t, '\n');
                size_t n = nl ? (size_t)(nl - t) : strlen(t);
                put(out, "  ");
                putn(out, t, n);
                putch(out, '\n');
                t += n + (nl ? 1 : 0);
            }
        }
        say(out, "\n", bold, "Decisions", reset, "\n", NULL);
        const cJSON *decisions = kp_json_get(d, "decisions");
        for (const cJSON *x = decisions ? decisions->child : NULL; x; x = x->next) {
            say(out, "  ", kp_json_str(x, "subject"), ": ", kp_json_str(x, "choice"), "\n", NULL);
            say(out, "    ", dim, "why: ", kp_json_str(x, "why"), NULL);
            const cJSON *ps = kp_json_get(x, "patterns");
            if (ps && ps->child) {
                put(out, " (");
                for (const cJSON *p = ps->child; p; p = p->next) say(out, p == ps->child ? "" : ", ", p->valuestring, NULL);
                putch(out, ')');
            }
            say(out, reset, "\n", NULL);
        }
        say(out, "\n", bold, "Access patterns", reset, "\n", NULL);
        const cJSON *patterns = kp_json_get(d, "patterns");
        for (const cJSON *p = patterns ? patterns->child : NULL; p; p = p->next) {
            double requests = kp_json_num(p, "requests"), round_trips = kp_json_num(p, "round_trips");
            say(out, "  ", bold, kp_json_str(p, "name"), reset, "  ", NULL);
            put_g(out, kp_json_num(p, "rps"), 6);
            put(out, " rps: ");
            put_g(out, requests, 6);
            put(out, requests == 1 ? " request, " : " requests, ");
            put_g(out, round_trips, 6);
            put(out, round_trips == 1 ? " round trip, ~" : " round trips, ~");
            put_f0(out, kp_json_num(p, "items_read"));
            put(out, " items, ");
            put_f1(out, kp_json_num(p, "bytes_read") / 1024);
            put(out, " KB");
            if (kp_json_get(p, "read_units")) {
                put(out, ", ");
                put_f1(out, kp_json_num(p, "read_units"));
                put(out, " RCU");
            }
            if (cJSON_IsTrue(kp_json_get(p, "scan"))) say(out, "  ", red, "SCAN", reset, NULL);
            putch(out, '\n');
            const cJSON *ops = kp_json_get(p, "operations");
            for (const cJSON *o = ops ? ops->child : NULL; o; o = o->next) {
                say(out, "    ", cJSON_IsTrue(kp_json_get(o, "waits_for_previous")) ? "then " : "", kp_json_str(o, "op"), " ",
                    kp_json_str(o, "container"), cJSON_IsString(kp_json_get(o, "index")) ? " index " : "",
                    kp_json_str(o, "index"), ": ", NULL);
                /* a condition of several commands (one a line): the others under the first */
                for (const char *c = kp_json_str(o, "condition"); *c;) {
                    const char *nl = strchr(c, '\n');
                    size_t n = nl ? (size_t)(nl - c) : strlen(c);
                    putn(out, c, n);
                    if (!nl) break;
                    put(out, "\n      ");
                    c = nl + 1;
                }
                putch(out, '\n');
                if (kp_json_str(o, "why")[0]) say(out, "      ", dim, kp_json_str(o, "why"), reset, "\n", NULL);
            }
            if (kp_json_str(p, "why")[0]) say(out, "    ", dim, "why: ", kp_json_str(p, "why"), reset, "\n", NULL);
        }
        const cJSON *writes = kp_json_get(d, "writes");
        if (writes && writes->child) say(out, "\n", bold, "Writes", reset, "\n", NULL);
        for (const cJSON *w = writes ? writes->child : NULL; w; w = w->next) {
            double requests = kp_json_num(w, "requests");
            say(out, "  ", bold, kp_json_str(w, "name"), reset, "  ", NULL);
            put_g(out, kp_json_num(w, "rps"), 6);
            put(out, " rps: ");
            put_g(out, requests, 4);
            put(out, requests == 1 ? " request, " : " requests, ");
            put_f1(out, kp_json_num(w, "items_written"));
            put(out, " items written");
            if (kp_json_get(w, "write_units")) {
                put(out, ", ");
                put_f1(out, kp_json_num(w, "write_units"));
                put(out, " WCU");
            }
            say(out, "  (", kp_json_str(w, "mechanism"), ")\n", NULL);
            const cJSON *touches = kp_json_get(w, "touches");
            for (const cJSON *t = touches ? touches->child : NULL; t; t = t->next) {
                say(out, "    ", dim, NULL);
                put_f1(out, kp_json_num(t, "count"));
                say(out, " x ", kp_json_str(t, "what"), reset, "\n", NULL);
            }
            if (kp_json_str(w, "why")[0]) say(out, "    ", dim, "why: ", kp_json_str(w, "why"), reset, "\n", NULL);
        }
        const cJSON *defects = kp_json_get(d, "defects");
        say(out, "\n", bold, "Defects", reset, "\n", NULL);
        if (!defects || !defects->child) put(out, "  none\n");
        for (const cJSON *x = defects ? defects->child : NULL; x; x = x->next) say(out, "  ", red, "- ", x->valuestring, reset, "\n", NULL);
        const cJSON *notes = kp_json_get(d, "notes");
        if (notes && notes->child) say(out, "\n", bold, "Notes", reset, "\n", NULL);
        for (const cJSON *x = notes ? notes->child : NULL; x; x = x->next) say(out, "  - ", x->valuestring, "\n", NULL);
        if (d->next) putch(out, '\n');
    }
}

void kp_advise_print_text(FILE *out, const cJSON *doc, int use_color)
{
    text_out t;
    t.f = out;
    t.len = 0;
    print_text(&t, doc, use_color);
    flush_out(&t);
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
