/*
 * export.c — `seed --export dynamodb-import`: the files DynamoDB's ImportTable reads
 * from S3 (DynamoDB JSON, one {"Item": ...} per line, gzip), the marker item seeding
 * leaves, and the import-table input (`aws dynamodb import-table --cli-input-json`).
 *
 * ImportTable creates the table itself and cannot create local secondary indexes: a
 * design with one gets a note (and the README says so), since the patterns it serves
 * need `keyplan seed` or a table created first and loaded another way.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/dynamodb/conn.h"
#include "backends/dynamodb/ddb.h"
#include "backends/export.h"

struct kp_exporter {
    kp_export_files *files;
    const kp_design *d;
    char table[512];        /* with the prefix */
    char data[600];         /* TABLE/data-00001.json.gz */
};

int kp_ddb_export_open(const kp_design *d, const char *dir, const char *prefix, kp_exporter **out, kp_error *err)
{
    *out = NULL;
    kp_exporter *x = calloc(1, sizeof *x);
    if (!x) return kp_error_set(err, KP_ERR_NOMEM, NULL, 0, 0, "out of memory");
    x->d = d;
    const ddb_layout *L = d->layout;
    snprintf(x->table, sizeof x->table, "%s%s", prefix ? prefix : "", L->table);
    snprintf(x->data, sizeof x->data, "%s/data-00001.json.gz", x->table);
    if (kp_export_files_open(dir, 1, &x->files, err)) { free(x); return -1; }
    *out = x;
    return 0;
}

static int item_line(kp_exporter *x, const cJSON *item, kp_error *err)
{
    cJSON *wrap = cJSON_CreateObject();
    if (!wrap) return kp_error_set(err, KP_ERR_NOMEM, NULL, 0, 0, "out of memory");
    cJSON_AddItemReferenceToObject(wrap, "Item", (cJSON *)item);
    char *text = cJSON_PrintUnformatted(wrap);
    cJSON_Delete(wrap);
    if (!text) return kp_error_set(err, KP_ERR_NOMEM, NULL, 0, 0, "out of memory");
    int rc = kp_export_line(x->files, x->data, text, strlen(text), err);
    cJSON_free(text);
    return rc;
}

int kp_ddb_export_item(kp_exporter *x, const kp_item *item, kp_error *err) { return item_line(x, item->body, err); }

static int used_in(const cJSON *schema, const char *name)
{
    for (const cJSON *k = schema ? schema->child : NULL; k; k = k->next)
        if (strcmp(cJSON_GetObjectItem(k, "AttributeName")->valuestring, name) == 0) return 1;
    return 0;
}

/* The CreateTable request as ImportTable's TableCreationParameters: no local secondary
 * indexes (ImportTable has none) and only the attribute definitions a key still uses. */
static cJSON *creation_parameters(const kp_exporter *x, int *dropped_lsis)
{
    cJSON *req = kp_ddb_create_table_request(x->d, "");
    if (!req) return NULL;
    cJSON_ReplaceItemInObject(req, "TableName", cJSON_CreateString(x->table));
    cJSON *lsis = cJSON_DetachItemFromObject(req, "LocalSecondaryIndexes");
    *dropped_lsis = cJSON_GetArraySize(lsis);
    cJSON_Delete(lsis);
    cJSON *defs = cJSON_GetObjectItem(req, "AttributeDefinitions");
    const cJSON *gsis = cJSON_GetObjectItem(req, "GlobalSecondaryIndexes");
    cJSON *d = defs ? defs->child : NULL;
    while (d) {
        cJSON *next = d->next;
        const char *name = cJSON_GetObjectItem(d, "AttributeName")->valuestring;
        int used = used_in(cJSON_GetObjectItem(req, "KeySchema"), name);
        for (const cJSON *g = gsis ? gsis->child : NULL; g && !used; g = g->next) used = used_in(cJSON_GetObjectItem(g, "KeySchema"), name);
        if (!used) cJSON_Delete(cJSON_DetachItemViaPointer(defs, d));
        d = next;
    }
    return req;
}

int kp_ddb_export_close(kp_exporter *x, const cJSON *marker, int is_ok, char *note, size_t note_size, kp_error *err)
{
    int rc = 0;
    if (is_ok) {
        /* the marker item seeding leaves, so `keyplan verify` accepts the imported table */
        char *text = cJSON_PrintUnformatted(marker);
        cJSON *item = cJSON_CreateObject();
        cJSON_AddItemToObject(cJSON_AddObjectToObject(item, "PK"), "S", cJSON_CreateString(KP_DDB_MARKER_PK));
        cJSON_AddItemToObject(cJSON_AddObjectToObject(item, "SK"), "S", cJSON_CreateString(KP_DDB_MARKER_SK));
        cJSON_AddItemToObject(cJSON_AddObjectToObject(item, "marker"), "S", cJSON_CreateString(text ? text : ""));
        cJSON_free(text);
        rc = text ? item_line(x, item, err) : kp_error_set(err, KP_ERR_NOMEM, NULL, 0, 0, "out of memory");
        cJSON_Delete(item);
        int dropped = 0;
        cJSON *params = rc == 0 ? creation_parameters(x, &dropped) : NULL;
        if (rc == 0 && !params) rc = kp_error_set(err, KP_ERR_NOMEM, NULL, 0, 0, "out of memory");
        if (rc == 0) {
            cJSON *input = cJSON_CreateObject();
            cJSON *s3 = cJSON_AddObjectToObject(input, "S3BucketSource");
            cJSON_AddStringToObject(s3, "S3Bucket", "REPLACE-WITH-YOUR-BUCKET");
            char key_prefix[600];
            snprintf(key_prefix, sizeof key_prefix, "%s/", x->table);
            cJSON_AddStringToObject(s3, "S3KeyPrefix", key_prefix);
            cJSON_AddStringToObject(input, "InputFormat", "DYNAMODB_JSON");
            cJSON_AddStringToObject(input, "InputCompressionType", "GZIP");
            cJSON_AddItemToObject(input, "TableCreationParameters", params);
            kp_text t = {0};
            kp_text_json(&t, input);
            cJSON_Delete(input);
            char name[600];
            snprintf(name, sizeof name, "%s/import-table.json", x->table);
            rc = t.is_failed ? kp_error_set(err, KP_ERR_NOMEM, NULL, 0, 0, "out of memory") : kp_export_write(x->files, name, t.data, 0, err);
            kp_text_free(&t);
        }
        if (rc == 0) {
            kp_text r = {0};
            kp_text_printf(&r, "# DynamoDB ImportTable files for table %s\n\n"
                               "`%s` holds %ld items in DynamoDB JSON, one `{\"Item\": ...}` per line, gzip-compressed, the\n"
                               "last one keyplan's marker (so `keyplan verify` accepts the table once imported).\n\n"
                               "```sh\naws s3 cp --recursive %s s3://YOUR-BUCKET/%s/\n"
                               "# put YOUR-BUCKET in %s/import-table.json, then:\n"
                               "aws dynamodb import-table --cli-input-json file://%s/import-table.json\n```\n\n"
                               "ImportTable creates the table (on-demand, with its global secondary indexes) and fails if it\n"
                               "exists.\n",
                           x->table, x->data, kp_export_lines(x->files, x->data), x->table, x->table, x->table, x->table);
            if (dropped) {
                kp_text_printf(&r, "\n**The design has %d local secondary index%s, which ImportTable cannot create**: the\n"
                                   "imported table lacks %s, and the access patterns that read %s fail. Create the\n"
                                   "table from `keyplan emit`'s create-table.json and load it with `keyplan seed` instead.\n",
                               dropped, dropped == 1 ? "" : "es", dropped == 1 ? "it" : "them", dropped == 1 ? "it" : "them");
                snprintf(note, note_size, "ImportTable cannot create the design's %d local secondary index%s: the imported "
                         "table lacks %s (see %s/README.md)", dropped, dropped == 1 ? "" : "es", dropped == 1 ? "it" : "them",
                         x->table);
            }
            char name[600];
            snprintf(name, sizeof name, "%s/README.md", x->table);
            rc = r.is_failed ? kp_error_set(err, KP_ERR_NOMEM, NULL, 0, 0, "out of memory") : kp_export_write(x->files, name, r.data, 0, err);
            kp_text_free(&r);
        }
    }
    int closed = kp_export_files_close(x->files, is_ok && rc == 0, rc ? NULL : err);
    free(x);
    return rc || closed ? -1 : 0;
}
