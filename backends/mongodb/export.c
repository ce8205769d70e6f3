/*
 * export.c — `seed --export mongoimport`: one file of Extended JSON (canonical v2, one
 * document per line: what `mongoimport --file` reads) per collection, keyplan's marker
 * document in "<prefix>_keyplan", and load.sh running mongoimport for each.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/export.h"
#include "backends/mongodb/conn.h"
#include "backends/mongodb/mongo.h"

struct kp_exporter {
    kp_export_files *files;
    const kp_design *d;
    char prefix[256];
    char **collections;     /* with the prefix, in the order first written */
    size_t count;
};

int kp_mg_export_open(const kp_design *d, const char *dir, const char *prefix, kp_exporter **out, kp_error *err)
{
    *out = NULL;
    kp_exporter *x = calloc(1, sizeof *x);
    if (!x) return kp_error_set(err, KP_ERR_NOMEM, NULL, 0, 0, "out of memory");
    x->d = d;
    snprintf(x->prefix, sizeof x->prefix, "%s", prefix ? prefix : "");
    if (kp_export_files_open(dir, 0, &x->files, err)) { free(x); return -1; }
    *out = x;
    return 0;
}

static int line(kp_exporter *x, const char *collection, const cJSON *doc, kp_error *err)
{
    char file[600];
    snprintf(file, sizeof file, "%s%s.json", x->prefix, collection);
    if (!kp_export_lines(x->files, file)) {
        char **bigger = realloc(x->collections, (x->count + 1) * sizeof *bigger);
        if (!bigger) return kp_error_set(err, KP_ERR_NOMEM, NULL, 0, 0, "out of memory");
        x->collections = bigger;
        size_t n = strlen(x->prefix) + strlen(collection) + 1;
        if (!(x->collections[x->count] = malloc(n))) return kp_error_set(err, KP_ERR_NOMEM, NULL, 0, 0, "out of memory");
        snprintf(x->collections[x->count++], n, "%s%s", x->prefix, collection);
    }
    char *text = cJSON_PrintUnformatted(doc);
    if (!text) return kp_error_set(err, KP_ERR_NOMEM, NULL, 0, 0, "out of memory");
    int rc = kp_export_line(x->files, file, text, strlen(text), err);
    cJSON_free(text);
    return rc;
}

int kp_mg_export_item(kp_exporter *x, const kp_item *item, kp_error *err) { return line(x, item->container, item->body, err); }

int kp_mg_export_close(kp_exporter *x, const cJSON *marker, int is_ok, char *note, size_t note_size, kp_error *err)
{
    (void)note;
    (void)note_size;
    int rc = 0;
    if (is_ok) {
        char *text = cJSON_PrintUnformatted(marker);
        cJSON *doc = cJSON_CreateObject();
        cJSON_AddStringToObject(doc, "_id", x->d->model->name);
        cJSON_AddStringToObject(doc, "marker", text ? text : "");
        cJSON_free(text);
        rc = text ? line(x, KP_MG_MARKER_COLLECTION, doc, err) : kp_error_set(err, KP_ERR_NOMEM, NULL, 0, 0, "out of memory");
        cJSON_Delete(doc);
        kp_text sh = {0}, readme = {0};
        kp_text_append(&sh, "#!/bin/sh\n# Loads the exported collections with mongoimport (MongoDB Database Tools) into the\n"
                            "# database MONGODB_URI names. Create the collections' validators and indexes first:\n"
                            "#   keyplan emit MODEL --db mongodb --out DIR && mongosh \"$MONGODB_URI\" DIR/mongodb/setup.mongosh.js\n"
                            "set -eu\ncd \"$(dirname \"$0\")\"\n: \"${MONGODB_URI:?set MONGODB_URI to the database to load}\"\n"
                            "# keyplan's database: the one the URI names, else the model's name\n"
                            "db=$(printf '%s' \"$MONGODB_URI\" | sed -E 's#^[a-z+]+://[^/]*/?([^?]*).*#\\1#')\n");
        kp_text_printf(&sh, "[ -n \"$db\" ] || db='%s'\n", x->d->model->name);
        kp_text_printf(&readme, "# mongoimport files for model %s\n\nOne file per collection, one document per line in "
                                "canonical Extended JSON v2:\n\n| file | documents |\n|---|--:|\n", x->d->model->name);
        for (size_t i = 0; i < x->count; i++) {
            char file[600];
            snprintf(file, sizeof file, "%s.json", x->collections[i]);
            kp_text_printf(&sh, "mongoimport --uri \"$MONGODB_URI\" --db \"$db\" --collection '%s' --file '%s' --mode insert\n",
                           x->collections[i], file);
            kp_text_printf(&readme, "| `%s` | %ld |\n", file, kp_export_lines(x->files, file));
        }
        kp_text_append(&readme, "\nThe last file is keyplan's marker, so `keyplan verify` accepts the database once "
                                "loaded. `load.sh` runs\nmongoimport for each file into the database `MONGODB_URI` names, else the one named like the model (as keyplan does); "
                                "create the validators and indexes\nfirst with `keyplan emit`'s setup.mongosh.js.\n");
        if (rc == 0) rc = sh.is_failed ? kp_error_set(err, KP_ERR_NOMEM, NULL, 0, 0, "out of memory") : kp_export_write(x->files, "load.sh", sh.data, 1, err);
        if (rc == 0) rc = readme.is_failed ? kp_error_set(err, KP_ERR_NOMEM, NULL, 0, 0, "out of memory") : kp_export_write(x->files, "README.md", readme.data, 0, err);
        kp_text_free(&sh);
        kp_text_free(&readme);
    }
    int closed = kp_export_files_close(x->files, is_ok && rc == 0, rc ? NULL : err);
    for (size_t i = 0; i < x->count; i++) free(x->collections[i]);
    free(x->collections);
    free(x);
    return rc || closed ? -1 : 0;
}
