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
#include "core/json.h"
#include "advisors/compare.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>



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
#define GAP_X 150
#define GAP_Y 90

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
    /* relations first, under the boxes; their labels after the boxes, on top */
    enum { MAX_LABELS = 256 };
    struct { double x, y, w; char text[160]; } labels[MAX_LABELS];
    int label_count = 0;
    for (const cJSON *r = rels ? rels->child : NULL; r; r = r->next) {
        int a = -1, b = -1, i = 0;
        for (const cJSON *e = ents->child; e; e = e->next, i++) {
            if (strcmp(kp_json_str(e, "name"), kp_json_str(r, "from")) == 0) a = i;
            if (strcmp(kp_json_str(e, "name"), kp_json_str(r, "to")) == 0) b = i;
        }
        if (a < 0 || b < 0) continue;
        double ax = GAP_X + (a % cols) * (BOX_W + GAP_X) + BOX_W / 2.0, ay = GAP_Y + (a / cols) * (box_h + GAP_Y) + box_h / 2.0;
        double bx = GAP_X + (b % cols) * (BOX_W + GAP_X) + BOX_W / 2.0, by = GAP_Y + (b / cols) * (box_h + GAP_Y) + box_h / 2.0;
        double lx, ly;
        if (a == b) {
            /* a loop on the box's right side */
            double x0 = ax + BOX_W / 2.0, y0 = ay - 30;
            fprintf(f, "<path d=\"M%.0f %.0f h30 v40 h-30\" class=\"rel\" fill=\"none\"/>", x0, y0);
            lx = x0 + 6;
            ly = y0 - 6;
        } else if (a / cols == b / cols && abs(a - b) > 1) {
            /* the same row with boxes between: an arc over the row, its label at the top */
            double top = GAP_Y + (a / cols) * (box_h + GAP_Y), rise = fmin(24 + 8 * (abs(a - b) - 2), 40);
            fprintf(f, "<path d=\"M%.0f %.0f C%.0f %.0f %.0f %.0f %.0f %.0f\" class=\"rel\" fill=\"none\"/>", ax, top, ax,
                    top - 2 * rise, bx, top - 2 * rise, bx, top);
            lx = (ax + bx) / 2;
            ly = top - 1.5 * rise + 4;
        } else {
            fprintf(f, "<line x1=\"%.0f\" y1=\"%.0f\" x2=\"%.0f\" y2=\"%.0f\" class=\"rel\"/>", ax, ay, bx, by);
            /* the label sits on the part of the line between the two boxes, nearest its middle
             * outside every other box */
            double dx = bx - ax, dy = by - ay;
            double ta = fmin(dx ? (BOX_W / 2.0) / fabs(dx) : 1e9, dy ? (box_h / 2.0) / fabs(dy) : 1e9);
            double best = 0.5;
            for (double off = 0; off <= 0.5 - ta; off += 0.025) {
                int clear[2] = {1, 1};
                for (int side = 0; side < 2; side++) {
                    double t = 0.5 + (side ? -off : off), px = ax + dx * t, py = ay + dy * t;
                    for (int k = 0; k < n && clear[side]; k++) {
                        double x0 = GAP_X + (k % cols) * (BOX_W + GAP_X), y0 = GAP_Y + (k / cols) * (box_h + GAP_Y);
                        clear[side] = !(px > x0 - 10 && px < x0 + BOX_W + 10 && py > y0 - 6 && py < y0 + box_h + 16);
                    }
                    if (clear[side]) { best = t; break; }
                }
                if (clear[0] || clear[1]) break;
            }
            lx = ax + dx * best;
            ly = ay + dy * best;
        }
        if (label_count == MAX_LABELS) continue;
        snprintf(labels[label_count].text, sizeof labels[label_count].text, "%s %s%s avg %g", kp_json_str(r, "name"),
                 kp_json_str(r, "cardinality"), cJSON_IsTrue(cJSON_GetObjectItem(r, "unbounded")) ? " ∞" : "", kp_json_num(r, "fanout_avg"));
        double w = 7.2 * (double)strlen(labels[label_count].text);
        double x = a == b ? lx : lx - w / 2, y = ly;
        /* shift down past any label already placed that it would overlap */
        for (int moved = 1, guard = 0; moved && guard < 50; guard++) {
            moved = 0;
            for (int k = 0; k < label_count; k++)
                if (x < labels[k].x + labels[k].w && labels[k].x < x + w && fabs(y - labels[k].y) < 15) { y = labels[k].y + 15; moved = 1; }
        }
        labels[label_count].x = x < 2 ? 2 : x;
        labels[label_count].y = y;
        labels[label_count].w = w;
        label_count++;
    }
    int i = 0;
    for (const cJSON *e = ents->child; e; e = e->next, i++) {
        int x = GAP_X + (i % cols) * (BOX_W + GAP_X), y = GAP_Y + (i / cols) * (box_h + GAP_Y);
        fprintf(f, "<g class=\"entity\"><rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" rx=\"4\"/>", x, y, BOX_W, box_h);
        fprintf(f, "<text x=\"%d\" y=\"%d\" class=\"title\">", x + 8, y + 18);
        esc(f, kp_json_str(e, "name"));
        fputs(" (", f);
        print_count(f, kp_json_num(e, "count"));
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
    for (int k = 0; k < label_count; k++) {
        fprintf(f, "<text x=\"%.0f\" y=\"%.0f\" class=\"rel-label\">", labels[k].x, labels[k].y);
        esc(f, labels[k].text);
        fputs("</text>\n", f);
    }
    fputs("</svg>\n", f);
}

/* ---- a database's containers: one box each, keys marked (Chebotko style) -------------------- */

static const char *role_mark(const cJSON *k)
{
    const char *role = kp_json_str(k, "role");
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
    const char *drawing = kp_json_str(d, "diagram");
    /* a drawing that only redraws the containers would show every table twice */
    if (strcmp(kp_json_str(d, "diagram_shows"), "containers") == 0) drawing = "";
    int drawing_lines = 0, drawing_cols = 0, col = 0;
    for (const char *p = drawing; *p; p++) {
        if (*p == '\n') { drawing_lines++; col = 0; } else if (++col > drawing_cols) drawing_cols = col;
    }
    if (drawing[0] && drawing[strlen(drawing) - 1] != '\n') drawing_lines++;
    if (drawing_lines > 80) drawing_lines = 80;
    int width = cols * (w + 30) + 30, height = total_h + 20 + (drawing_lines ? 20 + drawing_lines * ROW_H : 0);
    if (drawing_cols * 7 + 60 > width) width = drawing_cols * 7 + 60;
    fprintf(f, "<svg class=\"diagram\" data-diagram=\"%s\" xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" "
               "viewBox=\"0 0 %d %d\" role=\"img\" aria-label=\"", kp_json_str(d, "database"), width, height, width, height);
    esc(f, kp_json_str(d, "title"));
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
        snprintf(title, sizeof title, "%s %s", kp_json_str(c, "kind"), kp_json_str(c, "name"));
        line(f, x + 8, y + 18, "title", NULL, title, NULL);
        int row = 0, yy = y + 36;
        const cJSON *keys = cJSON_GetObjectItem(c, "keys");
        for (const cJSON *k = keys ? keys->child : NULL; k && row < 40; k = k->next, row++, yy += ROW_H)
            line(f, x + 8, yy, "key", role_mark(k), kp_json_str(k, "name"), kp_json_str(k, "format"));
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
            snprintf(head, sizeof head, "%s %s%s", kp_json_str(x2, "kind"), kp_json_str(x2, "name"), cJSON_IsTrue(cJSON_GetObjectItem(x2, "sparse")) ? " (sparse)" : "");
            line(f, x + 8, yy, "index", NULL, head, NULL);
            row++;
            yy += ROW_H;
            const cJSON *ks = cJSON_GetObjectItem(x2, "keys");
            for (const cJSON *k = ks ? ks->child : NULL; k && row < 40; k = k->next, row++, yy += ROW_H)
                line(f, x + 20, yy, "key", role_mark(k), kp_json_str(k, "name"), kp_json_str(k, "format"));
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

/* ---- load and cost: one bar chart per mix ----------------------------------------------------- */

/* A bar's length: linear, or on a log scale from 1 to the largest figure. */
static int bar_length(double v, double max, int is_log, int full)
{
    if (max <= 0 || v <= 0) return 0;
    double share = is_log ? log10(1 + v) / log10(1 + max) : v / max;
    return (int)(full * share + 0.5);
}

/* Two bars per design — its I/O units per second and its price a month — each scaled to
 * the largest of the mix, with the figure written at the bar's end. */
static void load_chart(FILE *f, const cJSON *mix)
{
    const cJSON *ds = cJSON_GetObjectItem(mix, "designs");
    double max_io = 0, max_usd = 0;
    int n = 0;
    for (const cJSON *d = ds ? ds->child : NULL; d; d = d->next, n++) {
        const cJSON *cost = cJSON_GetObjectItem(d, "cost");
        double io = kp_json_num(cJSON_GetObjectItem(cost, "totals"), "io_units_per_s");
        double usd = kp_json_num(cJSON_GetObjectItem(cost, "monthly_usd"), "total");
        if (io > max_io) max_io = io;
        if (usd > max_usd) max_usd = usd;
    }
    if (n == 0) return;
    /* figures that differ by more than 100 times are drawn on a log scale, or the small ones vanish */
    double min_io = max_io, min_usd = max_usd;
    for (const cJSON *d = ds->child; d; d = d->next) {
        const cJSON *cost = cJSON_GetObjectItem(d, "cost");
        double io = kp_json_num(cJSON_GetObjectItem(cost, "totals"), "io_units_per_s");
        const cJSON *money = cJSON_GetObjectItem(cost, "monthly_usd");
        if (io > 0 && io < min_io) min_io = io;
        if (cJSON_IsObject(money) && kp_json_num(money, "total") > 0 && kp_json_num(money, "total") < min_usd) min_usd = kp_json_num(money, "total");
    }
    int log_io = min_io > 0 && max_io / min_io > 100, log_usd = min_usd > 0 && max_usd / min_usd > 100;
    const int label_w = 230, bar_w = 300, gap = 150, row = 26, top = 30;
    int width = label_w + 2 * (bar_w + gap), height = top + n * row + 10;
    fprintf(f, "<svg class=\"chart\" xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" "
               "role=\"img\" aria-label=\"load and price per design\">\n", width, height, width, height);
    fprintf(f, "<text x=\"%d\" y=\"18\" class=\"title\">I/O units per second%s</text>", label_w, log_io ? " (log scale)" : "");
    fprintf(f, "<text x=\"%d\" y=\"18\" class=\"title\">USD a month%s</text>", label_w + bar_w + gap, log_usd ? " (log scale)" : "");
    int y = top;
    for (const cJSON *d = ds ? ds->child : NULL; d; d = d->next, y += row) {
        const cJSON *cost = cJSON_GetObjectItem(d, "cost"), *money = cJSON_GetObjectItem(cost, "monthly_usd");
        double io = kp_json_num(cJSON_GetObjectItem(cost, "totals"), "io_units_per_s");
        fprintf(f, "<g class=\"bar\" data-design=\"");
        esc(f, kp_json_str(d, "design"));
        fprintf(f, "\"><text x=\"0\" y=\"%d\">", y + 14);
        esc(f, kp_json_str(d, "design"));
        int w = bar_length(io, max_io, log_io, bar_w);
        fprintf(f, "</text><rect class=\"io\" x=\"%d\" y=\"%d\" width=\"%d\" height=\"18\"/><text x=\"%d\" y=\"%d\">",
                label_w, y, w > 1 ? w : 1, label_w + (w > 1 ? w : 1) + 6, y + 14);
        print_count(f, round(io));
        fputs("</text>", f);
        if (cJSON_IsObject(money)) {
            double usd = kp_json_num(money, "total");
            w = bar_length(usd, max_usd, log_usd, bar_w);
            fprintf(f, "<rect class=\"usd\" x=\"%d\" y=\"%d\" width=\"%d\" height=\"18\"/><text x=\"%d\" y=\"%d\">$",
                    label_w + bar_w + gap, y, w > 1 ? w : 1, label_w + bar_w + gap + (w > 1 ? w : 1) + 6, y + 14);
            print_count(f, round(usd));
            fprintf(f, " %s</text>", kp_json_str(money, "tier"));
        } else {
            fprintf(f, "<text x=\"%d\" y=\"%d\" class=\"note\">not priced</text>", label_w + bar_w + gap, y + 14);
        }
        fputs("</g>\n", f);
    }
    fputs("</svg>\n", f);
}

/* ---- the page ----------------------------------------------------------------------------------- */

static const char style[] =
    "body{font:14px/1.4 system-ui,sans-serif;margin:24px auto;max-width:1400px;padding:0 24px;color:#222}"
    "h1{font-size:22px;margin-bottom:2px}h2{font-size:18px;margin-top:32px;border-bottom:1px solid #ddd}h3{font-size:15px}"
    ".meta{color:#666;margin-top:0}nav a{margin-right:14px}"
    "table{border-collapse:collapse;margin:8px 0}td,th{border:1px solid #ccc;padding:3px 8px;text-align:right}"
    "td:first-child,th:first-child{text-align:left}.scan{color:#b00;font-weight:bold}.defect{color:#b00}.warning{color:#a60}"
    ".info{color:#555}td.priced,th.priced{text-align:left;font-size:12px}tr.plan td{background:#fafafa;text-align:left}tr.plan summary{cursor:pointer;color:#036}"
    "pre{background:#f4f4f4;padding:8px;overflow:auto;font-size:12px}.ops li{font-family:monospace;font-size:12px}"
    ".rec{background:#eef7ee;border:1px solid #9c9;padding:8px 12px;margin:8px 0}"
    "svg{border:1px solid #ddd;margin:8px 0;background:#fff;max-width:100%;height:auto}"
    "svg text{font:12px monospace;fill:#222}svg .title{font-weight:bold}svg .key{fill:#036}svg .note{fill:#666}"
    "svg .index{fill:#630}svg rect{fill:#f8f8ff;stroke:#557}svg .rel{stroke:#999;stroke-width:1.5}svg .rel-label{fill:#333;paint-order:stroke;stroke:#fff;stroke-width:4px;stroke-linejoin:round}"
    "svg .drawing{white-space:pre;font-size:11px}svg rect.io{fill:#7a9cc6;stroke:none}svg rect.usd{fill:#c6a27a;stroke:none}"
    "@media print{body{margin:0;max-width:none;font-size:10px}nav,tr.plan summary{display:none}"
    "h2{break-after:avoid}svg,table,.rec{break-inside:avoid}a{color:inherit;text-decoration:none}"
    "details::details-content{content-visibility:visible;display:block}}";

static void section(FILE *f, const char *id, const char *title)
{
    fprintf(f, "<section id=\"%s\"><h2>%s</h2>\n", id, title);
}

/* The plan of a pattern in one full design: each operation with its condition and figures. */
static void plan_ops(FILE *f, const cJSON *design, const char *pattern)
{
    const cJSON *p = kp_compare_find_named(cJSON_GetObjectItem(design, "patterns"), pattern, NULL);
    if (!p) return;
    fputs("<h4>", f);
    esc(f, kp_json_str(design, "title"));
    fputs(" (", f);
    esc(f, kp_json_str(design, "candidate"));
    fputs(")", f);
    if (*kp_json_str(p, "why")) { fputs(" — ", f); esc(f, kp_json_str(p, "why")); }
    fputs("</h4><ol class=\"ops\">", f);
    const cJSON *ops = cJSON_GetObjectItem(p, "operations");
    for (const cJSON *o = ops ? ops->child : NULL; o; o = o->next) {
        fputs("<li>", f);
        esc(f, kp_json_str(o, "op"));
        fputs(" ", f);
        esc(f, kp_json_str(o, "container"));
        if (*kp_json_str(o, "index")) { fputs(".", f); esc(f, kp_json_str(o, "index")); }
        if (*kp_json_str(o, "condition")) { fputs(": ", f); esc(f, kp_json_str(o, "condition")); }
        fprintf(f, " — %g request%s, %g item%s, ", kp_json_num(o, "requests"), kp_json_num(o, "requests") == 1 ? "" : "s", kp_json_num(o, "items"),
                kp_json_num(o, "items") == 1 ? "" : "s");
        print_count(f, round(kp_json_num(o, "bytes")));
        fprintf(f, " B%s%s</li>", cJSON_IsTrue(cJSON_GetObjectItem(o, "waits_for_previous")) ? " (after the previous)" : "",
                cJSON_IsTrue(cJSON_GetObjectItem(o, "scan")) ? " <b class=\"scan\">SCAN</b>" : "");
    }
    fputs("</ol>", f);
}

static void patterns_table(FILE *f, const cJSON *doc, const cJSON *designs)
{
    section(f, "patterns", "Access patterns: round trips / requests / items read");
    fputs("<p>Open a pattern to see the JSON it returns and each database's requests.</p>\n"
          "<table id=\"patterns-table\"><thead><tr><th>pattern</th><th>req/s</th>", f);
    int columns = 2;
    for (const cJSON *d = designs ? designs->child : NULL; d; d = d->next, columns++) {
        fputs("<th>", f);
        esc(f, kp_json_str(d, "design"));
        fputs("</th>", f);
    }
    fputs("</tr></thead>\n", f);
    const cJSON *patterns = cJSON_GetObjectItem(doc, "patterns"), *responses = cJSON_GetObjectItem(doc, "responses");
    const cJSON *full = cJSON_GetObjectItem(doc, "designs");
    kp_named_cursors cur = {{0}};
    const cJSON *next_response = responses ? responses->child : NULL;
    for (const cJSON *pn = patterns ? patterns->child : NULL; pn; pn = pn->next) {
        fputs("<tbody><tr class=\"pattern\"><td>", f);
        esc(f, pn->valuestring);
        fputs("</td>", f);
        double rps = -1;
        size_t di = 0;
        char cells[8192];
        size_t used = 0;
        cells[0] = '\0';
        for (const cJSON *d = designs ? designs->child : NULL; d; d = d->next, di++) {
            const cJSON *p = kp_compare_find_named(cJSON_GetObjectItem(cJSON_GetObjectItem(d, "cost"), "patterns"), pn->valuestring, KP_CURSOR(&cur, di));
            int n;
            if (!p) n = snprintf(cells + used, sizeof cells - used, "<td>—</td>");
            else {
                if (rps < 0) rps = kp_json_num(p, "rps");
                int scan = cJSON_IsTrue(cJSON_GetObjectItem(p, "scan"));
                n = snprintf(cells + used, sizeof cells - used, "<td%s>%g / %g / %g%s</td>", scan ? " class=\"scan\"" : "",
                             kp_json_num(p, "round_trips"), kp_json_num(p, "requests"), kp_json_num(p, "items_read"), scan ? " SCAN" : "");
            }
            if (n > 0 && used + (size_t)n < sizeof cells) used += (size_t)n;
        }
        if (rps >= 0) fprintf(f, "<td>%g</td>", rps);
        else fputs("<td></td>", f);
        fputs(cells, f);
        fprintf(f, "</tr>\n<tr class=\"plan\"><td colspan=\"%d\"><details><summary>what it returns and how each database reads it"
                   "</summary>", columns);
        /* responses[] is in the patterns' order: the next one is this pattern's */
        const cJSON *r = next_response && strcmp(kp_json_str(next_response, "pattern"), pn->valuestring) == 0 ? next_response : NULL;
        for (const cJSON *x = responses ? responses->child : NULL; x && !r; x = x->next)
            if (strcmp(kp_json_str(x, "pattern"), pn->valuestring) == 0) r = x;
        next_response = r ? r->next : next_response;
        if (r && *kp_json_str(r, "description")) { fputs("<p>", f); esc(f, kp_json_str(r, "description")); fputs("</p>", f); }
        if (r) { fputs("<pre class=\"returns\">", f); esc(f, kp_json_str(r, "returns")); fputs("</pre>", f); }
        for (const cJSON *d = full ? full->child : NULL; d; d = d->next) plan_ops(f, d, pn->valuestring);
        fputs("</details></td></tr></tbody>\n", f);
    }
    fputs("</table></section>\n", f);
}

static void writes_table(FILE *f, const cJSON *doc, const cJSON *designs)
{
    const cJSON *writes = cJSON_GetObjectItem(doc, "writes");
    if (!writes || !writes->child) return;
    section(f, "writes", "Writes: items written per operation (amplification)");
    fputs("<table id=\"writes-table\"><thead><tr><th>write</th>", f);
    for (const cJSON *d = designs ? designs->child : NULL; d; d = d->next) { fputs("<th>", f); esc(f, kp_json_str(d, "design")); fputs("</th>", f); }
    fputs("</tr></thead><tbody>\n", f);
    kp_named_cursors cur = {{0}};
    for (const cJSON *wn = writes->child; wn; wn = wn->next) {
        fputs("<tr class=\"write\"><td>", f);
        esc(f, wn->valuestring);
        fputs("</td>", f);
        size_t di = 0;
        for (const cJSON *d = designs ? designs->child : NULL; d; d = d->next, di++) {
            const cJSON *w = kp_compare_find_named(cJSON_GetObjectItem(cJSON_GetObjectItem(d, "cost"), "writes"), wn->valuestring, KP_CURSOR(&cur, di));
            fprintf(f, "<td>%g (x%g)</td>", w ? kp_json_num(w, "items_written") : 0, w ? kp_json_num(w, "amplification") : 0);
        }
        fputs("</tr>\n", f);
    }
    fputs("</tbody></table></section>\n", f);
}

static void load_section(FILE *f, const cJSON *first)
{
    section(f, "load", "Load and cost per design");
    for (const cJSON *mo = first; mo; mo = mo->next) {
        const cJSON *name = cJSON_GetObjectItem(mo, "name");
        fputs("<h3>Totals per second", f);
        if (cJSON_IsString(name)) { fputs(", mix ", f); esc(f, name->valuestring); }
        fputs("</h3>\n", f);
        load_chart(f, mo);
        fputs("<table class=\"totals\"><thead><tr><th>design</th><th>reads</th><th>items read</th><th>writes</th>"
              "<th>items written</th><th>I/O units</th><th>storage GB</th><th>duplication</th><th>$/month</th><th class=\"priced\">priced as</th>"
              "</tr></thead><tbody>\n", f);
        const cJSON *ds = cJSON_GetObjectItem(mo, "designs");
        for (const cJSON *d = ds ? ds->child : NULL; d; d = d->next) {
            const cJSON *cost = cJSON_GetObjectItem(d, "cost"), *t = cJSON_GetObjectItem(cost, "totals");
            const cJSON *money = cJSON_GetObjectItem(cost, "monthly_usd");
            fputs("<tr><td>", f);
            esc(f, kp_json_str(d, "design"));
            fprintf(f, "</td><td>%.1f</td><td>%.1f</td><td>%.1f</td><td>%.1f</td><td>%.0f</td><td>%.2f</td><td>%.2f</td><td>",
                    kp_json_num(t, "read_requests_per_s"), kp_json_num(t, "items_read_per_s"), kp_json_num(t, "write_requests_per_s"),
                    kp_json_num(t, "items_written_per_s"), kp_json_num(t, "io_units_per_s"), kp_json_num(t, "storage_bytes") / 1e9, kp_json_num(t, "duplication"));
            if (cJSON_IsObject(money)) {
                fprintf(f, "%.2f</td><td class=\"priced\">", kp_json_num(money, "total"));
                esc(f, kp_json_str(money, "service"));
                fputs(" ", f);
                esc(f, *kp_json_str(money, "tier") ? kp_json_str(money, "tier") : kp_json_str(money, "capacity"));
                fputs(", ", f);
                esc(f, kp_json_str(money, "region"));
                fputs(", prices of ", f);
                esc(f, kp_json_str(money, "prices_as_of"));
            } else {
                fputs("—</td><td class=\"priced\">", f);
                esc(f, kp_json_str(cost, "price_note"));
            }
            fputs("</td></tr>\n", f);
        }
        fputs("</tbody></table>\n", f);
    }
    fputs("</section>\n", f);
}

/* Does a design list a risk of this severity with exactly this message? */
static int has_risk(const cJSON *design, const char *severity, const char *message)
{
    const cJSON *risks = cJSON_GetObjectItem(design, "risks");
    for (const cJSON *x = risks ? risks->child : NULL; x; x = x->next)
        if (strcmp(kp_json_str(x, "severity"), severity) == 0 && strcmp(kp_json_str(x, "message"), message) == 0) return 1;
    return 0;
}

/* Every risk of every design once, by severity; a message several designs share names them all. */
static void risks_section(FILE *f, const cJSON *designs)
{
    static const char *const severities[] = {"defect", "warning", "info"};
    static const char *const titles[] = {"Defects", "Warnings", "Notes"};
    section(f, "risks", "Risks");
    int any = 0;
    for (int s = 0; s < 3; s++) {
        int count = 0;
        for (const cJSON *d = designs ? designs->child : NULL; d; d = d->next) {
            const cJSON *risks = cJSON_GetObjectItem(d, "risks");
            for (const cJSON *r = risks ? risks->child : NULL; r; r = r->next) {
                const char *message = kp_json_str(r, "message");
                if (strcmp(kp_json_str(r, "severity"), severities[s]) != 0) continue;
                /* shown already with an earlier design? */
                int seen = 0;
                for (const cJSON *e = designs->child; e != d && !seen; e = e->next) seen = has_risk(e, severities[s], message);
                if (seen) continue;
                if (count++ == 0) fprintf(f, "<h3 class=\"%s\">%s</h3>\n<ul class=\"risks %s\">", severities[s], titles[s], severities[s]);
                fprintf(f, "<li class=\"%s\"><b>", severities[s]);
                int names = 0;
                for (const cJSON *e = d; e; e = e->next) {
                    if (!has_risk(e, severities[s], message)) continue;
                    if (names++) fputs(", ", f);
                    esc(f, kp_json_str(e, "design"));
                }
                fputs("</b>: ", f);
                esc(f, message);
                fputs("</li>\n", f);
            }
        }
        if (count) fputs("</ul>\n", f);
        any |= count > 0;
    }
    if (!any) fputs("<p>none found</p>\n", f);
    fputs("</section>\n", f);
}

void kp_compare_print_html(FILE *f, const cJSON *doc)
{
    const cJSON *mixes = cJSON_GetObjectItem(doc, "mixes");
    const cJSON *first = mixes ? mixes->child : NULL;
    const cJSON *designs = first ? cJSON_GetObjectItem(first, "designs") : NULL;
    /* what made the page: a review names the tool, the model version and when */
    char when[32] = "";
    const char *epoch = getenv("SOURCE_DATE_EPOCH");   /* reproducible pages, as reproducible builds do */
    time_t t = epoch && *epoch ? (time_t)strtoll(epoch, NULL, 10) : time(NULL);
    struct tm tm;
    if (gmtime_r(&t, &tm)) strftime(when, sizeof when, "%Y-%m-%d %H:%M UTC", &tm);
    fputs("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>keyplan compare: ", f);
    esc(f, kp_json_str(doc, "model"));
    fprintf(f, "</title><style>%s</style></head><body>\n<header><h1>keyplan compare: ", style);
    esc(f, kp_json_str(doc, "model"));
    fprintf(f, "</h1><p class=\"meta\">keyplan %s &middot; model hash ", KP_VERSION);
    esc(f, kp_json_str(doc, "model_hash"));
    fprintf(f, " &middot; %s</p>\n<nav><a href=\"#recommendation\">Recommendation</a><a href=\"#model\">Model</a>"
               "<a href=\"#load\">Load and cost</a><a href=\"#patterns\">Access patterns</a><a href=\"#writes\">Writes</a>"
               "<a href=\"#risks\">Risks</a><a href=\"#designs\">Designs</a></nav></header>\n", when);
    section(f, "recommendation", "Recommendation");
    for (const cJSON *mo = first; mo; mo = mo->next) {
        const cJSON *r = cJSON_GetObjectItem(mo, "recommendation");
        const cJSON *name = cJSON_GetObjectItem(mo, "name");
        fputs("<div class=\"rec\"><b>Recommendation", f);
        if (cJSON_IsString(name)) { fputs(" (mix ", f); esc(f, name->valuestring); fputs(")", f); }
        fputs(": ", f);
        esc(f, kp_json_str(r, "design"));
        fputs("</b><ul>", f);
        const cJSON *reasons = cJSON_GetObjectItem(r, "reasons");
        for (const cJSON *x = reasons ? reasons->child : NULL; x; x = x->next) { fputs("<li>", f); esc(f, x->valuestring); fputs("</li>", f); }
        int warnings = (int)kp_json_num(r, "warnings");
        if (warnings) fprintf(f, "<li><a href=\"#risks\">%d warning%s to review</a></li>", warnings, warnings == 1 ? "" : "s");
        fputs("</ul></div>\n", f);
    }
    const cJSON *by = cJSON_GetObjectItem(doc, "recommendation_by_mix");
    for (const cJSON *x = by ? by->child : NULL; x; x = x->next) {
        const cJSON *dif = cJSON_GetObjectItem(x, "differences");
        for (const cJSON *y = dif ? dif->child : NULL; y; y = y->next) {
            fputs("<p class=\"warning\">The mix changes it — under ", f);
            esc(f, kp_json_str(x, "mix"));
            fputs(": ", f);
            esc(f, y->valuestring);
            fputs("</p>\n", f);
        }
    }
    fputs("</section>\n", f);
    section(f, "model", "Model: entities and relations");
    er_diagram(f, cJSON_GetObjectItem(doc, "model_diagram"));
    fputs("</section>\n", f);
    load_section(f, first);
    patterns_table(f, doc, designs);
    writes_table(f, doc, designs);
    risks_section(f, designs);
    section(f, "designs", "Designs");
    const cJSON *full = cJSON_GetObjectItem(doc, "designs");
    for (const cJSON *d = full ? full->child : NULL; d; d = d->next) {
        fputs("<h3>", f);
        esc(f, kp_json_str(d, "title"));
        fputs(": ", f);
        esc(f, kp_json_str(d, "candidate"));
        fputs("</h3>\n<p>", f);
        esc(f, kp_json_str(d, "summary"));
        fputs("</p>\n", f);
        design_diagram(f, d);
    }
    fputs("</section>\n", f);
    fprintf(f, "<footer><p>keyplan %s &middot; model ", KP_VERSION);
    esc(f, kp_json_str(doc, "model"));
    fputs(" (hash ", f);
    esc(f, kp_json_str(doc, "model_hash"));
    fprintf(f, ") &middot; %s</p></footer>\n</body></html>\n", when);
}
