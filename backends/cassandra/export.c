/*
 * export.c — `seed --export dsbulk`: one CSV file per table with a header row (what
 * `dsbulk load -header true` reads; `cqlsh COPY ... WITH HEADER = TRUE` too, for tables
 * without collections), the static rows of a table in "<table>.statics.csv" (their
 * partition key and static columns only), keyplan's marker row in keyplan_marker.csv,
 * and load.sh with the dsbulk commands.
 *
 * Fields: text as it is, numbers and booleans as CQL writes them, timestamps as CQL
 * literals ("2025-08-12 05:21:00.000+0000"), collections and JSON-held objects as JSON (DSBulk's default for collections);
 * an absent value is an empty field (null); quotes and backslashes inside a quoted
 * field escaped with a backslash (DSBulk's and cqlsh's default). A static row names no
 * clustering column, so load.sh loads those files with their own INSERT.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/cassandra/cql.h"
#include "backends/export.h"

struct kp_exporter {
    kp_export_files *files;
    const kp_design *d;
    char keyspace[300];
    kp_text line;
};

int kp_cq_export_open(const kp_design *d, const char *dir, const char *prefix, kp_exporter **out, kp_error *err)
{
    *out = NULL;
    kp_exporter *x = calloc(1, sizeof *x);
    if (!x) return kp_error_set(err, KP_ERR_NOMEM, NULL, 0, 0, "out of memory");
    x->d = d;
    const cq_layout *L = d->layout;
    char raw[300];
    snprintf(raw, sizeof raw, "%s%s", prefix ? prefix : "", L->keyspace);
    kp_cql_snake_case(raw, x->keyspace, sizeof x->keyspace);
    if (kp_export_files_open(dir, 0, &x->files, err)) { free(x); return -1; }
    *out = x;
    return 0;
}

static const cq_table *table_named(const kp_design *d, const char *name)
{
    const cq_layout *L = d->layout;
    return kp_strmap_get(&L->by_name, name);   /* once per item: the layout's own name map, not a scan */
}

/* the columns a row of this kind carries: a static row its partition key and statics */
static int in_row(const cq_table *t, size_t i, int statics)
{
    return statics ? i < t->pk_count || t->cols[i].role == CQ_STATIC : t->cols[i].role != CQ_STATIC;
}

static void field(kp_text *t, const cq_column *c, const cJSON *v)
{
    if (!v || cJSON_IsNull(v)) return;
    size_t n = cJSON_IsString(v) ? strlen(v->valuestring) : 0;
    if (n >= 20 && n < 64 && strcmp(c->cql_type, "timestamp") == 0 && v->valuestring[10] == 'T' && v->valuestring[n - 1] == 'Z') {
        /* 2025-08-12 05:21:00.000+0000: a CQL timestamp literal, which DSBulk and cqlsh COPY
         * both read whole (cqlsh reads "2025-08-12T05:21:00.000Z" as midnight of that day) */
        char lit[80];
        snprintf(lit, sizeof lit, "%.10s %.*s+0000", v->valuestring, (int)(n - 12), v->valuestring + 11);
        kp_csv_field(t, lit);
        return;
    }
    if (cJSON_IsString(v)) { kp_csv_field(t, v->valuestring); return; }
    if (cJSON_IsRaw(v)) { kp_csv_field(t, v->valuestring); return; }
    char *text = cJSON_PrintUnformatted(v);
    if (!text) { t->is_failed = 1; return; }
    kp_csv_field(t, text);
    cJSON_free(text);
}

static int row(kp_exporter *x, const char *file, const cq_table *t, const cJSON *body, int statics, kp_error *err)
{
    kp_text *l = &x->line;
    if (!kp_export_lines(x->files, file)) {   /* the header first */
        l->len = 0;
        int first = 1;
        for (size_t i = 0; i < t->col_count; i++) {
            if (!in_row(t, i, statics)) continue;
            if (!first) kp_text_append(l, ",");
            kp_csv_field(l, t->cols[i].name);
            first = 0;
        }
        if (l->is_failed) return kp_error_set(err, KP_ERR_NOMEM, NULL, 0, 0, "out of memory");
        if (kp_export_line(x->files, file, l->data, l->len, err)) return -1;
    }
    l->len = 0;
    if (l->data) l->data[0] = '\0';
    int first = 1;
    for (size_t i = 0; i < t->col_count; i++) {
        if (!in_row(t, i, statics)) continue;
        if (!first) kp_text_append(l, ",");
        field(l, &t->cols[i], cJSON_GetObjectItemCaseSensitive(body, t->cols[i].name));
        first = 0;
    }
    if (l->is_failed) return kp_error_set(err, KP_ERR_NOMEM, NULL, 0, 0, "out of memory");
    return kp_export_line(x->files, file, l->data ? l->data : "", l->len, err);
}

int kp_cq_export_item(kp_exporter *x, const kp_item *item, kp_error *err)
{
    const cq_table *t = table_named(x->d, item->container);
    if (!t) return kp_error_set(err, KP_ERR_INTERNAL, NULL, 0, 0, "an item of table %s, which the design lacks", item->container);
    int statics = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(item->body, "$static"));
    char file[600];
    snprintf(file, sizeof file, "%s%s.csv", t->name, statics ? ".statics" : "");
    return row(x, file, t, item->body, statics, err);
}

int kp_cq_export_close(kp_exporter *x, const cJSON *marker, int is_ok, char *note, size_t note_size, kp_error *err)
{
    (void)note;
    (void)note_size;
    int rc = 0;
    if (is_ok) {
        /* keyplan's marker row: model text PRIMARY KEY, marker text */
        char *text = cJSON_PrintUnformatted(marker);
        if (!text) rc = kp_error_set(err, KP_ERR_NOMEM, NULL, 0, 0, "out of memory");
        kp_text *l = &x->line;
        if (rc == 0) {
            l->len = 0;
            kp_text_append(l, "model,marker");
            rc = kp_export_line(x->files, KP_CQ_MARKER_TABLE ".csv", l->data, l->len, err);
        }
        if (rc == 0) {
            l->len = 0;
            kp_csv_field(l, x->d->model->name);
            kp_text_append(l, ",");
            kp_csv_field(l, text);
            rc = l->is_failed ? kp_error_set(err, KP_ERR_NOMEM, NULL, 0, 0, "out of memory")
                              : kp_export_line(x->files, KP_CQ_MARKER_TABLE ".csv", l->data, l->len, err);
        }
        cJSON_free(text);
        kp_text sh = {0}, readme = {0};
        kp_text_printf(&sh, "#!/bin/sh\n# Loads the exported tables with DSBulk into keyspace %s. Create the keyspace and\n"
                            "# tables first: keyplan emit MODEL --db cassandra --out DIR && cqlsh -f DIR/cassandra/schema.cql\n"
                            "# (with the same --prefix). DSBULK_OPTS may add -h HOST, -u USER, -p PASSWORD and the like.\n"
                            "set -eu\ncd \"$(dirname \"$0\")\"\n"
                            "cqlsh ${CQLSH_OPTS:-} -e \"CREATE TABLE IF NOT EXISTS %s.%s (model text PRIMARY KEY, marker text)\"\n",
                       x->keyspace, x->keyspace, KP_CQ_MARKER_TABLE);
        kp_text_printf(&readme, "# DSBulk files for keyspace %s\n\nOne CSV file per table with a header row; a table's "
                                "static rows (partition key and static\ncolumns only) in `<table>.statics.csv`:\n\n"
                                "| file | rows |\n|---|--:|\n", x->keyspace);
        const cq_layout *L = x->d->layout;
        for (size_t i = 0; i <= L->table_count; i++) {
            for (int statics = 0; statics < 2; statics++) {
                char file[600];
                const char *table = i < L->table_count ? L->tables[i]->name : KP_CQ_MARKER_TABLE;
                if (i == L->table_count && statics) continue;
                snprintf(file, sizeof file, "%s%s.csv", table, statics ? ".statics" : "");
                long lines = kp_export_lines(x->files, file);
                if (!lines) continue;
                kp_text_printf(&sh, "dsbulk load ${DSBULK_OPTS:-} -k '%s' -t '%s' -url '%s' -header true", x->keyspace, table, file);
                if (statics) {
                    /* a static row names no clustering column: its own INSERT, not the table's mapping */
                    const cq_table *t = L->tables[i];
                    kp_text_printf(&sh, " -query \"INSERT INTO %s.%s (", x->keyspace, table);
                    for (int pass = 0; pass < 2; pass++) {
                        int first = 1;
                        for (size_t k = 0; k < t->col_count; k++) {
                            if (!in_row(t, k, 1)) continue;
                            kp_text_printf(&sh, "%s%s%s", first ? "" : ", ", pass ? ":" : "", t->cols[k].name);
                            first = 0;
                        }
                        kp_text_append(&sh, pass ? ")\"" : ") VALUES (");
                    }
                }
                kp_text_append(&sh, "\n");
                kp_text_printf(&readme, "| `%s` | %ld |\n", file, lines - 1);
            }
        }
        kp_text_append(&readme, "\nThe marker row in `keyplan_marker.csv` lets `keyplan verify` accept the keyspace once "
                                "loaded. Fields: text\nas it is, timestamps as CQL literals (2025-08-12 05:21:00.000+0000), collections and JSON-held objects "
                                "as JSON (DSBulk's default), an empty\nfield for null. `cqlsh COPY <table> (<header>) FROM "
                                "'<file>' WITH HEADER = TRUE` loads the tables\nwithout collection columns too (not the static rows: COPY wants every primary key column).\n");
        if (rc == 0) rc = sh.is_failed ? kp_error_set(err, KP_ERR_NOMEM, NULL, 0, 0, "out of memory") : kp_export_write(x->files, "load.sh", sh.data, 1, err);
        if (rc == 0) rc = readme.is_failed ? kp_error_set(err, KP_ERR_NOMEM, NULL, 0, 0, "out of memory") : kp_export_write(x->files, "README.md", readme.data, 0, err);
        kp_text_free(&sh);
        kp_text_free(&readme);
    }
    int closed = kp_export_files_close(x->files, is_ok && rc == 0, rc ? NULL : err);
    kp_text_free(&x->line);
    free(x);
    return rc || closed ? -1 : 0;
}
