/*
 * html.c — the comparison document as one self-contained HTML page for design reviews:
 * the recommendation, one row per access pattern across every design, totals per mix,
 * risks, and inline SVG diagrams — the model's entities and relations, and one diagram
 * per database drawn from its recommended design's containers (DynamoDB item
 * collections, MongoDB documents, Cassandra tables in Chebotko style: partition keys K,
 * clustering columns C with their order, static columns S).
 * Invariant: reads only the document (compare.h); no script, no external resource, so
 * the file opens anywhere and a browser reports no console error.
 */
#include "advisors/compare.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static const char *str(const cJSON *o, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    return cJSON_IsString(v) ? v->valuestring : "";
}

static double num(const cJSON *o, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    return cJSON_IsNumber(v) ? v->valuedouble : 0;
}

/* A count as people read it: 2,000,000 (never 2e+06); fractions keep three digits. */
static void print_count(FILE *f, double v)
{
    if (v != floor(v) || fabs(v) >= 1e15) { fprintf(f, "%.3g", v); return; }
    char digits[32];
    snprintf(digits, sizeof digits, "%.0f", fabs(v));
    size_t n = strlen(digits);
    if (v < 0) fputc('-', f);
    for (size_t i = 0; i < n; i++) {
        if (i && (n - i) % 3 == 0) fputc(',', f);
        fputc(digits[i], f);
    }
}

static void esc(FILE *f, const char *s)
{
    for (; s && *s; s++) {
        switch (*s) {
        case '<': fputs("&lt;", f); break;
        case '>': fputs("&gt;", f); break;
        case '&': fputs("&amp;", f); break;
        case '"': fputs("&quot;", f); break;
        default: fputc(*s, f);
        }
    }
}

/* ---- the ER diagram: entities on a grid, relations as labelled lines -------------------------- */

#define BOX_W 190
#define ROW_H 16
#define GAP_X 70
#define GAP_Y 50

static void er_diagram(FILE *f, const cJSON *m)
{
    const cJSON *ents = cJSON_GetObjectItem(m, "entities"), *rels = cJSON_GetObjectItem(m, "relations");
    int n = cJSON_GetArraySize(ents);
    if (n == 0) return;
    int cols = (int)ceil(sqrt((double)n));
    if (cols > 6) cols = 6;
    int max_rows = 0;
    for (const cJSON *e = ents->child; e; e = e->next) {
        int r = cJSON_GetArraySize(cJSON_GetObjectItem(e, "attributes"));
        if (r > 12) r = 12;
        if (r > max_rows) max_rows = r;
    }
    int box_h = 40 + ROW_H * max_rows;
    int rows = (n + cols - 1) / cols;
    int width = cols * (BOX_W + GAP_X) + GAP_X, height = rows * (box_h + GAP_Y) + GAP_Y;
    fprintf(f, "<svg class=\"diagram\" data-diagram=\"model\" xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" "
               "viewBox=\"0 0 %d %d\" role=\"img\" aria-label=\"entities and relations\">\n", width, height, width, height);
    /* relations first, under the boxes */
    for (const cJSON *r = rels ? rels->child : NULL; r; r = r->next) {
        int a = -1, b = -1, i = 0;
        for (const cJSON *e = ents->child; e; e = e->next, i++) {
            if (strcmp(str(e, "name"), str(r, "from")) == 0) a = i;
            if (strcmp(str(e, "name"), str(r, "to")) == 0) b = i;
        }
        if (a < 0 || b < 0) continue;
        double ax = GAP_X + (a % cols) * (BOX_W + GAP_X) + BOX_W / 2.0, ay = GAP_Y + (a / cols) * (box_h + GAP_Y) + box_h / 2.0;
        double bx = GAP_X + (b % cols) * (BOX_W + GAP_X) + BOX_W / 2.0, by = GAP_Y + (b / cols) * (box_h + GAP_Y) + box_h / 2.0;
        if (a == b) { bx += BOX_W / 2.0 + 20; by -= 20; ax += BOX_W / 2.0; }
        fprintf(f, "<line x1=\"%.0f\" y1=\"%.0f\" x2=\"%.0f\" y2=\"%.0f\" class=\"rel\"/>", ax, ay, bx, by);
        fprintf(f, "<text x=\"%.0f\" y=\"%.0f\" class=\"rel-label\">", (ax + bx) / 2, (ay + by) / 2 - 4);
        esc(f, str(r, "name"));
        fprintf(f, " %s%s (avg %g)</text>\n", str(r, "cardinality"), cJSON_IsTrue(cJSON_GetObjectItem(r, "unbounded")) ? " ∞" : "",
                num(r, "fanout_avg"));
    }
    int i = 0;
    for (const cJSON *e = ents->child; e; e = e->next, i++) {
        int x = GAP_X + (i % cols) * (BOX_W + GAP_X), y = GAP_Y + (i / cols) * (box_h + GAP_Y);
        fprintf(f, "<g class=\"entity\"><rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" rx=\"4\"/>", x, y, BOX_W, box_h);
        fprintf(f, "<text x=\"%d\" y=\"%d\" class=\"title\">", x + 8, y + 18);
        esc(f, str(e, "name"));
        fputs(" (", f);
        print_count(f, num(e, "count"));
        fputs(")</text>", f);
        int row = 0;
        const cJSON *key = cJSON_GetObjectItem(e, "key");
        for (const cJSON *a = cJSON_GetObjectItem(e, "attributes")->child; a && row < 12; a = a->next, row++) {
            int is_key = 0;
            for (const cJSON *k = key ? key->child : NULL; k; k = k->next) is_key |= strcmp(k->valuestring, a->valuestring) == 0;
            fprintf(f, "<text x=\"%d\" y=\"%d\"%s>", x + 8, y + 36 + row * ROW_H, is_key ? " class=\"key\"" : "");
            esc(f, a->valuestring);
            fputs(is_key ? " (key)" : "", f);
            fputs("</text>", f);
        }
        fputs("</g>\n", f);
    }
    fputs("</svg>\n", f);
}

/* ---- a database's containers: one box each, keys marked (Chebotko style) -------------------- */

static const char *role_mark(const cJSON *k)
{
    const char *role = str(k, "role");
    int desc = cJSON_IsTrue(cJSON_GetObjectItem(k, "descending"));
    if (strcmp(role, "partition") == 0) return "K";
    if (strcmp(role, "sort") == 0) return desc ? "C↓" : "C↑";
    if (strcmp(role, "static") == 0) return "S";
    return desc ? "↓" : "·";
}

static int container_rows(const cJSON *c)
{
    int rows = cJSON_GetArraySize(cJSON_GetObjectItem(c, "keys")) + 1;
    const cJSON *ix = cJSON_GetObjectItem(c, "indexes");
    for (const cJSON *x = ix ? ix->child : NULL; x; x = x->next) rows += 1 + cJSON_GetArraySize(cJSON_GetObjectItem(x, "keys"));
    return rows > 40 ? 40 : rows;
}

/* Characters of monospace text a container box (320 px) holds on one line. */
enum { BOX_CHARS = 42 };

/* One line of a box: cut to the box with an ellipsis when longer, the whole text then in a
 * <title> (a tooltip), so a long index or key name never runs out of its box. */
static void line(FILE *f, int x, int y, const char *cls, const char *mark, const char *text, const char *extra)
{
    char full[1024];
    snprintf(full, sizeof full, "%s%s%s%s%s", mark ? mark : "", mark ? " " : "", text, extra && extra[0] ? " " : "",
             extra && extra[0] ? extra : "");
    size_t chars = 0, cut = 0;
    for (size_t i = 0; full[i]; i++) {
        if (((unsigned char)full[i] & 0xC0) == 0x80) continue;   /* UTF-8 continuation: same character */
        if (chars == BOX_CHARS - 1) cut = i;
        chars++;
    }
    fprintf(f, "<text x=\"%d\" y=\"%d\"%s%s%s>", x, y, cls ? " class=\"" : "", cls ? cls : "", cls ? "\"" : "");
    if (chars > BOX_CHARS) {
        fputs("<title>", f);
        esc(f, full);
        fputs("</title>", f);
        full[cut] = '\0';
        esc(f, full);
        fputs("…", f);
    } else {
        esc(f, full);
    }
    fputs("</text>", f);
}

static void design_diagram(FILE *f, const cJSON *d)
{
    const cJSON *cs = cJSON_GetObjectItem(d, "containers");
    int n = cJSON_GetArraySize(cs);
    const int w = 320, cols = n < 3 ? (n ? n : 1) : 3;
    int heights[512], total_h = 20, row_h = 0, i = 0;
    for (const cJSON *c = cs ? cs->child : NULL; c && i < 512; c = c->next, i++) {
        heights[i] = 46 + container_rows(c) * ROW_H;
        if (heights[i] > row_h) row_h = heights[i];
        if (i % cols == cols - 1 || !c->next) { total_h += row_h + 30; row_h = 0; }
    }
    /* the backend's own drawing of its layout (DynamoDB: the item collections), under the boxes */
    const char *drawing = str(d, "diagram");
    /* a drawing that only redraws the containers would show every table twice */
    if (strcmp(str(d, "diagram_shows"), "containers") == 0) drawing = "";
    int drawing_lines = 0, drawing_cols = 0, col = 0;
    for (const char *p = drawing; *p; p++) {
        if (*p == '\n') { drawing_lines++; col = 0; } else if (++col > drawing_cols) drawing_cols = col;
    }
    if (drawing[0] && drawing[strlen(drawing) - 1] != '\n') drawing_lines++;
    if (drawing_lines > 80) drawing_lines = 80;
    int width = cols * (w + 30) + 30, height = total_h + 20 + (drawing_lines ? 20 + drawing_lines * ROW_H : 0);
    if (drawing_cols * 7 + 60 > width) width = drawing_cols * 7 + 60;
    fprintf(f, "<svg class=\"diagram\" data-diagram=\"%s\" xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" "
               "viewBox=\"0 0 %d %d\" role=\"img\" aria-label=\"", str(d, "database"), width, height, width, height);
    esc(f, str(d, "title"));
    fputs(" layout\">\n", f);
    int y = 20;
    row_h = 0;
    i = 0;
    for (const cJSON *c = cs ? cs->child : NULL; c && i < 512; c = c->next, i++) {
        int x = 30 + (i % cols) * (w + 30);
        int h = heights[i];
        if (h > row_h) row_h = h;
        fprintf(f, "<g class=\"container\"><rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" rx=\"4\"/>", x, y, w, h);
        char title[300];
        snprintf(title, sizeof title, "%s %s", str(c, "kind"), str(c, "name"));
        line(f, x + 8, y + 18, "title", NULL, title, NULL);
        int row = 0, yy = y + 36;
        const cJSON *keys = cJSON_GetObjectItem(c, "keys");
        for (const cJSON *k = keys ? keys->child : NULL; k && row < 40; k = k->next, row++, yy += ROW_H)
            line(f, x + 8, yy, "key", role_mark(k), str(k, "name"), str(k, "format"));
        char ents[400] = "holds:";
        const cJSON *es = cJSON_GetObjectItem(c, "entities");
        for (const cJSON *e = es ? es->child : NULL; e; e = e->next) {
            size_t len = strlen(ents);
            snprintf(ents + len, sizeof ents - len, " %s", e->valuestring);
        }
        line(f, x + 8, yy, "note", NULL, ents, NULL);
        row++;
        yy += ROW_H;
        const cJSON *ix = cJSON_GetObjectItem(c, "indexes");
        for (const cJSON *x2 = ix ? ix->child : NULL; x2 && row < 40; x2 = x2->next) {
            char head[200];
            snprintf(head, sizeof head, "%s %s%s", str(x2, "kind"), str(x2, "name"), cJSON_IsTrue(cJSON_GetObjectItem(x2, "sparse")) ? " (sparse)" : "");
            line(f, x + 8, yy, "index", NULL, head, NULL);
            row++;
            yy += ROW_H;
            const cJSON *ks = cJSON_GetObjectItem(x2, "keys");
            for (const cJSON *k = ks ? ks->child : NULL; k && row < 40; k = k->next, row++, yy += ROW_H)
                line(f, x + 20, yy, "key", role_mark(k), str(k, "name"), str(k, "format"));
        }
        fputs("</g>\n", f);
        if (i % cols == cols - 1) { y += row_h + 30; row_h = 0; }
    }
    if (drawing_lines) {
        int yy = total_h + 30, drawn = 0;
        const char *p = drawing;
        while (*p && drawn < drawing_lines) {
            const char *end = strchr(p, '\n');
            size_t len = end ? (size_t)(end - p) : strlen(p);
            char buf[1024];
            snprintf(buf, sizeof buf, "%.*s", (int)(len < sizeof buf - 1 ? len : sizeof buf - 1), p);
            fprintf(f, "<text x=\"30\" y=\"%d\" class=\"drawing\" xml:space=\"preserve\">", yy);
            esc(f, buf);
            fputs("</text>", f);
            yy += ROW_H;
            drawn++;
            p = end ? end + 1 : p + len;
        }
    }
    fputs("</svg>\n", f);
}

/* ---- the page ----------------------------------------------------------------------------------- */

static const char style[] =
    "body{font:14px/1.4 system-ui,sans-serif;margin:24px;color:#222}h1{font-size:22px}h2{font-size:18px;margin-top:32px}"
    "table{border-collapse:collapse;margin:8px 0}td,th{border:1px solid #ccc;padding:3px 8px;text-align:right}"
    "td:first-child,th:first-child{text-align:left}.scan{color:#b00;font-weight:bold}.defect{color:#b00}.warning{color:#a60}"
    ".rec{background:#eef7ee;border:1px solid #9c9;padding:8px 12px}svg{border:1px solid #ddd;margin:8px 0;background:#fff}"
    "svg text{font:12px monospace;fill:#222}svg .title{font-weight:bold}svg .key{fill:#036}svg .note{fill:#666}"
    "svg .index{fill:#630}svg rect{fill:#f8f8ff;stroke:#557}svg .rel{stroke:#999;stroke-width:1.5}svg .rel-label{fill:#555}svg .drawing{white-space:pre;font-size:11px}";

void kp_compare_print_html(FILE *f, const cJSON *doc)
{
    const cJSON *mixes = cJSON_GetObjectItem(doc, "mixes");
    const cJSON *first = mixes ? mixes->child : NULL;
    const cJSON *designs = first ? cJSON_GetObjectItem(first, "designs") : NULL;
    fputs("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>keyplan compare: ", f);
    esc(f, str(doc, "model"));
    fprintf(f, "</title><style>%s</style></head><body>\n<h1>keyplan compare: ", style);
    esc(f, str(doc, "model"));
    fputs("</h1>\n", f);
    for (const cJSON *mo = first; mo; mo = mo->next) {
        const cJSON *r = cJSON_GetObjectItem(mo, "recommendation");
        const cJSON *name = cJSON_GetObjectItem(mo, "name");
        fputs("<div class=\"rec\"><b>Recommendation", f);
        if (cJSON_IsString(name)) { fputs(" (mix ", f); esc(f, name->valuestring); fputs(")", f); }
        fputs(": ", f);
        esc(f, str(r, "design"));
        fputs("</b><ul>", f);
        const cJSON *reasons = cJSON_GetObjectItem(r, "reasons");
        for (const cJSON *x = reasons ? reasons->child : NULL; x; x = x->next) { fputs("<li>", f); esc(f, x->valuestring); fputs("</li>", f); }
        fputs("</ul></div>\n", f);
    }
    const cJSON *by = cJSON_GetObjectItem(doc, "recommendation_by_mix");
    for (const cJSON *x = by ? by->child : NULL; x; x = x->next) {
        const cJSON *dif = cJSON_GetObjectItem(x, "differences");
        for (const cJSON *y = dif ? dif->child : NULL; y; y = y->next) {
            fputs("<p class=\"warning\">The mix changes it — under ", f);
            esc(f, str(x, "mix"));
            fputs(": ", f);
            esc(f, y->valuestring);
            fputs("</p>\n", f);
        }
    }
    fputs("<h2>Access patterns: round trips / requests / items read</h2>\n<table id=\"patterns\"><thead><tr><th>pattern</th><th>req/s</th>", f);
    for (const cJSON *d = designs ? designs->child : NULL; d; d = d->next) { fputs("<th>", f); esc(f, str(d, "design")); fputs("</th>", f); }
    fputs("</tr></thead><tbody>\n", f);
    const cJSON *patterns = cJSON_GetObjectItem(doc, "patterns");
    kp_named_cursors cur1 = {{0}}, cur2 = {{0}}, cur3 = {{0}};
    for (const cJSON *pn = patterns ? patterns->child : NULL; pn; pn = pn->next) {
        fputs("<tr class=\"pattern\"><td>", f);
        esc(f, pn->valuestring);
        fputs("</td>", f);
        int has_rps = 0;
        size_t di1 = 0;
        for (const cJSON *d = designs ? designs->child : NULL; d; d = d->next, di1++) {
            const cJSON *p = kp_compare_find_named(cJSON_GetObjectItem(cJSON_GetObjectItem(d, "cost"), "patterns"), pn->valuestring, KP_CURSOR(&cur1, di1));
            if (p && !has_rps) { fprintf(f, "<td>%g</td>", num(p, "rps")); has_rps = 1; }
        }
        if (!has_rps) fputs("<td></td>", f);
        size_t di2 = 0;
        for (const cJSON *d = designs ? designs->child : NULL; d; d = d->next, di2++) {
            const cJSON *p = kp_compare_find_named(cJSON_GetObjectItem(cJSON_GetObjectItem(d, "cost"), "patterns"), pn->valuestring, KP_CURSOR(&cur2, di2));
            if (!p) { fputs("<td>—</td>", f); continue; }
            int scan = cJSON_IsTrue(cJSON_GetObjectItem(p, "scan"));
            fprintf(f, "<td%s>%g / %g / %g%s</td>", scan ? " class=\"scan\"" : "", num(p, "round_trips"), num(p, "requests"),
                    num(p, "items_read"), scan ? " SCAN" : "");
        }
        fputs("</tr>\n", f);
    }
    fputs("</tbody></table>\n", f);
    const cJSON *writes = cJSON_GetObjectItem(doc, "writes");
    if (writes && writes->child) {
        fputs("<h2>Writes: items written per operation (amplification)</h2>\n<table id=\"writes\"><thead><tr><th>write</th>", f);
        for (const cJSON *d = designs ? designs->child : NULL; d; d = d->next) { fputs("<th>", f); esc(f, str(d, "design")); fputs("</th>", f); }
        fputs("</tr></thead><tbody>\n", f);
        for (const cJSON *wn = writes->child; wn; wn = wn->next) {
            fputs("<tr class=\"write\"><td>", f);
            esc(f, wn->valuestring);
            fputs("</td>", f);
            size_t di3 = 0;
            for (const cJSON *d = designs ? designs->child : NULL; d; d = d->next, di3++) {
                const cJSON *w = kp_compare_find_named(cJSON_GetObjectItem(cJSON_GetObjectItem(d, "cost"), "writes"), wn->valuestring, KP_CURSOR(&cur3, di3));
                fprintf(f, "<td>%g (x%g)</td>", w ? num(w, "items_written") : 0, w ? num(w, "amplification") : 0);
            }
            fputs("</tr>\n", f);
        }
        fputs("</tbody></table>\n", f);
    }
    for (const cJSON *mo = first; mo; mo = mo->next) {
        const cJSON *name = cJSON_GetObjectItem(mo, "name");
        fputs("<h2>Totals per second", f);
        if (cJSON_IsString(name)) { fputs(", mix ", f); esc(f, name->valuestring); }
        fputs("</h2>\n<table class=\"totals\"><thead><tr><th>design</th><th>reads</th><th>items read</th><th>writes</th>"
              "<th>items written</th><th>I/O units</th><th>storage GB</th><th>duplication</th><th>$/month</th></tr></thead><tbody>\n", f);
        const cJSON *ds = cJSON_GetObjectItem(mo, "designs");
        for (const cJSON *d = ds ? ds->child : NULL; d; d = d->next) {
            const cJSON *cost = cJSON_GetObjectItem(d, "cost"), *t = cJSON_GetObjectItem(cost, "totals");
            const cJSON *money = cJSON_GetObjectItem(cost, "monthly_usd");
            fputs("<tr><td>", f);
            esc(f, str(d, "design"));
            fprintf(f, "</td><td>%.1f</td><td>%.1f</td><td>%.1f</td><td>%.1f</td><td>%.0f</td><td>%.2f</td><td>%.2f</td><td>",
                    num(t, "read_requests_per_s"), num(t, "items_read_per_s"), num(t, "write_requests_per_s"),
                    num(t, "items_written_per_s"), num(t, "io_units_per_s"), num(t, "storage_bytes") / 1e9, num(t, "duplication"));
            if (cJSON_IsObject(money)) fprintf(f, "%.2f", num(money, "total"));
            else fputs("—", f);
            fputs("</td></tr>\n", f);
        }
        fputs("</tbody></table>\n", f);
    }
    fputs("<h2>Risks</h2>\n<ul id=\"risks\">", f);
    int any = 0;
    for (const cJSON *d = designs ? designs->child : NULL; d; d = d->next) {
        const cJSON *risks = cJSON_GetObjectItem(d, "risks");
        for (const cJSON *r = risks ? risks->child : NULL; r; r = r->next) {
            fprintf(f, "<li class=\"%s\"><b>", str(r, "severity"));
            esc(f, str(d, "design"));
            fputs("</b> ", f);
            esc(f, str(r, "severity"));
            fputs(": ", f);
            esc(f, str(r, "message"));
            fputs("</li>\n", f);
            any = 1;
        }
    }
    if (!any) fputs("<li>none found</li>", f);
    fputs("</ul>\n<h2>Model: entities and relations</h2>\n", f);
    er_diagram(f, cJSON_GetObjectItem(doc, "model_diagram"));
    const cJSON *full = cJSON_GetObjectItem(doc, "designs");
    for (const cJSON *d = full ? full->child : NULL; d; d = d->next) {
        fputs("<h2>", f);
        esc(f, str(d, "title"));
        fputs(": ", f);
        esc(f, str(d, "candidate"));
        fputs("</h2>\n<p>", f);
        esc(f, str(d, "summary"));
        fputs("</p>\n", f);
        design_diagram(f, d);
    }
    /* what made the page: a review names the tool, the model version and when */
    char when[32] = "";
    const char *epoch = getenv("SOURCE_DATE_EPOCH");   /* reproducible pages, as reproducible builds do */
    time_t t = epoch && *epoch ? (time_t)strtoll(epoch, NULL, 10) : time(NULL);
    struct tm tm;
    if (gmtime_r(&t, &tm)) strftime(when, sizeof when, "%Y-%m-%d %H:%M UTC", &tm);
    fprintf(f, "<footer><p>keyplan %s &middot; model ", KP_VERSION);
    esc(f, str(doc, "model"));
    fputs(" (hash ", f);
    esc(f, str(doc, "model_hash"));
    fprintf(f, ") &middot; %s</p></footer>\n</body></html>\n", when);
}
