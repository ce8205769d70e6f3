/*
 * live.c — the MongoDB backend against a live server: connecting, the collections with
 * their validators and indexes, keyplan's marker, seeding writes, read-back, teardown.
 *
 * The database is the connection string's, or the model's name when it names none, so
 * two models never share a collection. keyplan's marker is one document per model in
 * the collection "<prefix>_keyplan" (`_id`: the model's name) holding the seed marker
 * as JSON text: collections without it were not created by keyplan, and nothing drops
 * or overwrites them without --force.
 * Invariant: every seeding write stores a document under its deterministic `_id`
 * (insert, or replace when it exists), so replaying any part of a seed never
 * duplicates a document.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/mongodb/conn.h"
#include "backends/mongodb/mongo.h"

struct kp_mg_conn {
    kp_mg_client *client;
    char *prefix;
    char name[512];
    int warned_validators;
};

kp_mg_client *kp_mg_conn_client(kp_mg_conn *c) { return c->client; }

void kp_mg_conn_use(kp_mg_conn *c, const kp_design *d)
{
    kp_mg_client_default_database(c->client, d->model->name);
}

const char *kp_mg_conn_collection(kp_mg_conn *c, const char *name)
{
    snprintf(c->name, sizeof c->name, "%s%s", c->prefix ? c->prefix : "", name);
    return c->name;
}

int kp_mg_connect(const kp_target *t, kp_conn **out, kp_error *err)
{
    *out = NULL;
    kp_mg_conn *c = calloc(1, sizeof *c);
    if (!c) return kp_error_set(err, KP_ERR_NOMEM, NULL, 0, 0, "out of memory");
    if (kp_mg_client_open(t->endpoint, t->is_insecure, &c->client, err)) { free(c); return -1; }
    c->prefix = strdup(t->prefix ? t->prefix : "");
    *out = (kp_conn *)c;
    return 0;
}

void kp_mg_disconnect(kp_conn *conn)
{
    kp_mg_conn *c = (kp_mg_conn *)conn;
    if (!c) return;
    kp_mg_client_close(c->client);
    free(c->prefix);
    free(c);
}

/* ---- the marker ----------------------------------------------------------------------------- */

static const char *marker_collection(kp_mg_conn *c)
{
    static char name[512];
    snprintf(name, sizeof name, "%s%s", c->prefix ? c->prefix : "", KP_MG_MARKER_COLLECTION);
    return name;
}

static int read_marker(kp_mg_conn *c, const kp_design *d, const char *shard, cJSON **marker, kp_error *err)
{
    *marker = NULL;
    char key[600];
    cJSON *filter = cJSON_CreateObject();
    cJSON_AddStringToObject(filter, "_id", kp_marker_key(d->model->name, NULL, shard, key, sizeof key));
    cJSON *docs = NULL;
    int rc = kp_mg_find(c->client, marker_collection(c), filter, NULL, &docs, err);
    cJSON_Delete(filter);
    if (rc) return -1;
    const cJSON *text = docs && docs->child ? cJSON_GetObjectItemCaseSensitive(docs->child, "marker") : NULL;
    if (cJSON_IsString(text)) *marker = cJSON_Parse(text->valuestring);
    cJSON_Delete(docs);
    return 0;
}

int kp_mg_read_marker(kp_conn *conn, const kp_design *d, const char *shard, cJSON **out, kp_error *err)
{
    kp_mg_conn *c = (kp_mg_conn *)conn;
    kp_mg_conn_use(c, d);
    return read_marker(c, d, shard, out, err);
}

int kp_mg_write_marker(kp_conn *conn, const kp_design *d, const cJSON *marker, kp_error *err)
{
    kp_mg_conn *c = (kp_mg_conn *)conn;
    kp_mg_conn_use(c, d);
    char *text = cJSON_PrintUnformatted(marker);
    if (!text) return kp_error_set(err, KP_ERR_NOMEM, NULL, 0, 0, "out of memory");
    char key[600];
    cJSON *doc = cJSON_CreateObject();
    cJSON_AddStringToObject(doc, "_id", kp_marker_key(d->model->name, marker, NULL, key, sizeof key));
    cJSON_AddStringToObject(doc, "marker", text);
    cJSON_free(text);
    int ok = 0;
    int rc = kp_mg_bulk_store(c->client, marker_collection(c), &doc, 1, 1, &ok, err);
    cJSON_Delete(doc);
    if (rc == 0 && !ok) rc = -1;
    return rc;
}

/* ---- inspect, schema, drop ----------------------------------------------------------------------- */

static int has_name(const cJSON *names, const char *name)
{
    for (const cJSON *n = names ? names->child : NULL; n; n = n->next)
        if (cJSON_IsString(n) && strcmp(n->valuestring, name) == 0) return 1;
    return 0;
}

int kp_mg_inspect(kp_conn *conn, const kp_design *d, kp_target_state *out, kp_error *err)
{
    kp_mg_conn *c = (kp_mg_conn *)conn;
    kp_mg_conn_use(c, d);
    const mg_layout *L = d->layout;
    memset(out, 0, sizeof *out);
    cJSON *names = NULL;
    if (kp_mg_collection_names(c->client, &names, err)) return -1;
    int any = 0;
    long documents = 0;
    for (size_t i = 0; i < L->collection_count; i++) {
        const char *name = kp_mg_conn_collection(c, L->collections[i]->name);
        if (!has_name(names, name)) continue;
        any = 1;
        long n = 0;
        if (kp_mg_count(c->client, name, NULL, &n, err)) { cJSON_Delete(names); return -1; }
        documents += n;
    }
    int has_marker_collection = has_name(names, marker_collection(c));
    cJSON_Delete(names);
    if (has_marker_collection && read_marker(c, d, NULL, &out->marker, err)) return -1;
    out->exists = any;
    out->is_empty = documents == 0;
    out->is_foreign = any && !out->marker;
    return 0;
}

static void warn_validators(kp_mg_conn *c, const char *why)
{
    if (c->warned_validators++) return;
    fprintf(stderr, "keyplan: warning: MongoDB at %s does not implement collection validators (%s); the collections are "
                    "created without their $jsonSchema (`keyplan emit` writes it for a server that has them)\n",
            kp_mg_client_uri(c->client), why);
}

/* The names of a collection's indexes on the server (listIndexes); an empty array when none. */
static int live_index_names(kp_mg_conn *c, const char *name, cJSON **names, kp_error *err)
{
    *names = cJSON_CreateArray();
    cJSON *cmd = cJSON_CreateObject(), *reply = NULL;
    cJSON_AddStringToObject(cmd, "listIndexes", name);
    int code = 0;
    kp_error e;
    kp_error_clear(&e);
    int rc = kp_mg_command(c->client, cmd, &reply, &code, &e);
    cJSON_Delete(cmd);
    if (rc && code == 26) { cJSON_Delete(reply); return 0; } /* NamespaceNotFound */
    if (rc) { cJSON_Delete(reply); *err = e; return -1; }
    const cJSON *batch = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(reply, "cursor"), "firstBatch");
    for (const cJSON *x = batch ? batch->child : NULL; x; x = x->next) {
        const cJSON *n = cJSON_GetObjectItemCaseSensitive(x, "name");
        if (cJSON_IsString(n)) cJSON_AddItemToArray(*names, cJSON_CreateString(n->valuestring));
    }
    cJSON_Delete(reply);
    return 0;
}

/* Creates a collection (an existing one is kept) and the indexes it lacks: with
 * `only_missing`, the server's index list is read first and only the others are built
 * (FerretDB fails a createIndexes that repeats an existing index). */
static int create_collection(kp_mg_conn *c, const kp_design *d, const mg_collection *col, int only_missing, kp_error *err)
{
    char name[512];
    snprintf(name, sizeof name, "%s", kp_mg_conn_collection(c, col->name));
    cJSON *cmd = cJSON_CreateObject();
    cJSON_AddStringToObject(cmd, "create", name);
    cJSON_AddItemToObject(cmd, "validator", kp_mg_json_schema(d, col));
    int code = 0;
    kp_error e;
    kp_error_clear(&e);
    int rc = kp_mg_command(c->client, cmd, NULL, &code, &e);
    cJSON_Delete(cmd);
    if (rc && code == 238) { /* NotImplemented: FerretDB */
        warn_validators(c, "NotImplemented");
        cmd = cJSON_CreateObject();
        cJSON_AddStringToObject(cmd, "create", name);
        kp_error_clear(&e);
        rc = kp_mg_command(c->client, cmd, NULL, &code, &e);
        cJSON_Delete(cmd);
    }
    if (rc && code == 48) rc = 0; /* NamespaceExists: inspect decided it is ours */
    if (rc) { *err = e; return -1; }
    cJSON *specs = kp_mg_index_specs(col), *have = NULL;
    if (only_missing && live_index_names(c, name, &have, err)) { cJSON_Delete(specs); return -1; }
    cJSON *spec = specs->child;
    while (spec && have) {
        cJSON *next = spec->next;
        const cJSON *n = cJSON_GetObjectItemCaseSensitive(spec, "name");
        for (const cJSON *h = have->child; h; h = h->next)
            if (cJSON_IsString(n) && strcmp(h->valuestring, n->valuestring) == 0) {
                cJSON_Delete(cJSON_DetachItemViaPointer(specs, spec));
                break;
            }
        spec = next;
    }
    cJSON_Delete(have);
    if (!specs->child) { cJSON_Delete(specs); return 0; }
    cmd = cJSON_CreateObject();
    cJSON_AddStringToObject(cmd, "createIndexes", name);
    cJSON_AddItemToObject(cmd, "indexes", specs);
    rc = kp_mg_command(c->client, cmd, NULL, NULL, err);
    cJSON_Delete(cmd);
    return rc ? -1 : 0;
}

int kp_mg_apply_schema(kp_conn *conn, const kp_design *d, kp_error *err)
{
    kp_mg_conn *c = (kp_mg_conn *)conn;
    kp_mg_conn_use(c, d);
    const mg_layout *L = d->layout;
    for (size_t i = 0; i < L->collection_count; i++)
        if (create_collection(c, d, L->collections[i], 0, err)) return -1;
    return 0;
}

int kp_mg_drop(kp_conn *conn, const kp_design *d, kp_error *err)
{
    kp_mg_conn *c = (kp_mg_conn *)conn;
    kp_mg_conn_use(c, d);
    const mg_layout *L = d->layout;
    for (size_t i = 0; i < L->collection_count; i++)
        if (kp_mg_drop_collection(c->client, kp_mg_conn_collection(c, L->collections[i]->name), err)) return -1;
    /* the seed marker and the shards' own (seed --shard) */
    cJSON *docs = NULL;
    if (kp_mg_find(c->client, marker_collection(c), NULL, NULL, &docs, err)) return -1;
    cJSON *ids = cJSON_CreateArray();
    cJSON_AddItemToArray(ids, cJSON_CreateString(d->model->name));
    for (const cJSON *doc = docs ? docs->child : NULL; doc; doc = doc->next) {
        const cJSON *id = cJSON_GetObjectItemCaseSensitive(doc, "_id");
        if (cJSON_IsString(id) && kp_marker_key_is_shard(d->model->name, id->valuestring))
            cJSON_AddItemToArray(ids, cJSON_CreateString(id->valuestring));
    }
    cJSON_Delete(docs);
    int rc = kp_mg_delete_ids(c->client, marker_collection(c), ids, err);
    cJSON_Delete(ids);
    if (rc) return -1;
    long left = 0;
    if (kp_mg_count(c->client, marker_collection(c), NULL, &left, err)) return -1;
    if (left == 0 && kp_mg_drop_collection(c->client, marker_collection(c), err)) return -1;
    return 0;
}

/* ---- seeding writes ------------------------------------------------------------------------------- */

int kp_mg_submit(kp_conn *conn, kp_item_list *batch, kp_ack_fn on_ack, void *ctx, kp_error *err)
{
    kp_mg_conn *c = (kp_mg_conn *)conn;
    size_t i = 0;
    while (i < batch->count) {
        /* one unordered bulk per run of items of one collection */
        size_t start = i;
        const char *container = batch->items[i].container;
        while (i < batch->count && i - start < KP_MG_BATCH && strcmp(batch->items[i].container, container) == 0) i++;
        size_t n = i - start;
        cJSON **docs = malloc(sizeof *docs * n);
        int *ok = calloc(n, sizeof *ok);
        if (!docs || !ok) { free(docs); free(ok); return kp_error_set(err, KP_ERR_NOMEM, NULL, 0, 0, "out of memory"); }
        for (size_t k = 0; k < n; k++) docs[k] = batch->items[start + k].body;
        char name[512];
        snprintf(name, sizeof name, "%s", kp_mg_conn_collection(c, container));
        kp_error bulk_err;
        kp_error_clear(&bulk_err);
        int rc = kp_mg_bulk_store(c->client, name, docs, n, 1, ok, &bulk_err);
        for (size_t k = 0; k < n; k++) on_ack(ctx, &batch->items[start + k], ok[k], ok[k] ? NULL : &bulk_err);
        free(docs);
        free(ok);
        if (rc && bulk_err.code != KP_ERR_TARGET) { *err = bulk_err; return -1; }
    }
    return 0;
}

int kp_mg_poll(kp_conn *conn, int timeout_ms, kp_error *err)
{
    (void)conn;
    (void)timeout_ms;
    (void)err;
    return 0; /* submit is synchronous: nothing is ever in flight */
}

/* ---- read-back -------------------------------------------------------------------------------------- */

/* Every document of the design's collections (one find each), passed with its collection. */
static int each_document(kp_mg_conn *c, const kp_design *d,
                         int (*fn)(void *ctx, const mg_collection *col, const cJSON *doc, kp_error *err), void *ctx,
                         kp_error *err)
{
    kp_mg_conn_use(c, d);
    const mg_layout *L = d->layout;
    for (size_t i = 0; i < L->collection_count; i++) {
        const mg_collection *col = L->collections[i];
        cJSON *options = cJSON_CreateObject();
        cJSON_AddNumberToObject(options, "batchSize", 10000);
        cJSON *docs = NULL;
        int rc = kp_mg_find(c->client, kp_mg_conn_collection(c, col->name), NULL, options, &docs, err);
        cJSON_Delete(options);
        for (const cJSON *doc = docs ? docs->child : NULL; doc && rc == 0; doc = doc->next) rc = fn(ctx, col, doc, err);
        cJSON_Delete(docs);
        if (rc) return -1;
    }
    return 0;
}

typedef struct items_ctx {
    kp_read_item_fn fn;
    void *ctx;
} items_ctx;

static int pass_document(void *p, const mg_collection *col, const cJSON *doc, kp_error *err)
{
    items_ctx *x = p;
    char *id = kp_mg_item_id(col->name, doc);
    int rc = id ? x->fn(x->ctx, col->name, id, kp_item_hash(doc), err) : kp_error_set(err, KP_ERR_NOMEM, NULL, 0, 0, "out of memory");
    free(id);
    return rc;
}

int kp_mg_read_items(kp_conn *conn, const kp_design *d, kp_read_item_fn fn, void *ctx, kp_error *err)
{
    items_ctx x = {fn, ctx};
    return each_document((kp_mg_conn *)conn, d, pass_document, &x, err);
}

int kp_mg_read_back(kp_conn *conn, const kp_design *d, kp_readback *out, kp_error *err)
{
    return kp_read_back_from_items(kp_mg_read_items, conn, d, out, err);
}

/* ---- migrate: records read back, schema changes ------------------------------------------------------ */

typedef struct records_ctx {
    kp_read_record_fn on_record;
    void *ctx;
} records_ctx;

/* A document back into its owner's record and the records embedded in it (their only
 * home; subsets are copies of records kept elsewhere). */
static int records_of_document(void *p, const mg_collection *col, const cJSON *doc, kp_error *err)
{
    records_ctx *r = p;
    cJSON *object = kp_mg_record_of_entity(col->owner, doc, err);
    int rc = object ? r->on_record(r->ctx, col->owner->entity, object, err) : -1;
    for (size_t n = 0; rc == 0 && n < col->owner->nested_count; n++) {
        const mg_nested *nest = &col->owner->nested[n];
        if (nest->child->collection || nest->subset > 0) continue;
        const cJSON *held = cJSON_GetObjectItemCaseSensitive(doc, nest->field);
        const cJSON *one = cJSON_IsObject(held) ? held : NULL;
        for (const cJSON *sub = one ? one : cJSON_IsArray(held) ? held->child : NULL; sub && rc == 0; sub = one ? NULL : sub->next) {
            cJSON *child = kp_mg_record_of_entity(nest->child, sub, err);
            rc = child ? r->on_record(r->ctx, nest->child->entity, child, err) : -1;
        }
    }
    return rc;
}

int kp_mg_read_records(kp_conn *conn, const kp_design *d, kp_read_record_fn on_record, void *ctx, kp_error *err)
{
    records_ctx r = {on_record, ctx};
    return each_document((kp_mg_conn *)conn, d, records_of_document, &r, err);
}

static const mg_collection *collection_named(const mg_layout *L, const char *name)
{
    for (size_t i = 0; i < L->collection_count; i++)
        if (strcmp(L->collections[i]->name, name) == 0) return L->collections[i];
    return NULL;
}

int kp_mg_migrate_schema(kp_conn *conn, const kp_design *from, const kp_design *to, int is_final, int *emptied,
                         char *note, size_t note_size, kp_error *err)
{
    (void)emptied;
    (void)note;
    (void)note_size;
    kp_mg_conn *c = (kp_mg_conn *)conn;
    const mg_layout *F = from->layout, *T = to->layout;
    if (!is_final) {
        /* new collections and index builds (what exists stays); the new validators, so the
         * documents rewritten next are accepted (a validator checks writes only) */
        kp_mg_conn_use(c, to);
        for (size_t i = 0; i < T->collection_count; i++)
            if (create_collection(c, to, T->collections[i], 1, err)) return -1;
        for (size_t i = 0; i < T->collection_count; i++) {
            if (!collection_named(F, T->collections[i]->name)) continue;
            cJSON *cmd = cJSON_CreateObject();
            cJSON_AddStringToObject(cmd, "collMod", kp_mg_conn_collection(c, T->collections[i]->name));
            cJSON_AddItemToObject(cmd, "validator", kp_mg_json_schema(to, T->collections[i]));
            int code = 0;
            kp_error e;
            kp_error_clear(&e);
            int rc = kp_mg_command(c->client, cmd, NULL, &code, &e);
            cJSON_Delete(cmd);
            if (rc && code != 238 && code != 59) { *err = e; return -1; } /* FerretDB: no validators (warned at creation) */
        }
        return 0;
    }
    kp_mg_conn_use(c, to);
    for (size_t i = 0; i < F->collection_count; i++) {
        const mg_collection *old = F->collections[i], *now = collection_named(T, old->name);
        char name[512];
        snprintf(name, sizeof name, "%s", kp_mg_conn_collection(c, old->name));
        if (!now) {
            if (kp_mg_drop_collection(c->client, name, err)) return -1;
            continue;
        }
        cJSON *keep = kp_mg_index_specs(now), *had = kp_mg_index_specs(old);
        int rc = 0;
        for (const cJSON *spec = had->child; spec && rc == 0; spec = spec->next) {
            const char *index = cJSON_GetObjectItemCaseSensitive(spec, "name")->valuestring;
            int kept = 0;
            for (const cJSON *k = keep->child; k; k = k->next)
                kept |= strcmp(cJSON_GetObjectItemCaseSensitive(k, "name")->valuestring, index) == 0;
            if (kept) continue;
            cJSON *cmd = cJSON_CreateObject();
            cJSON_AddStringToObject(cmd, "dropIndexes", name);
            cJSON_AddStringToObject(cmd, "index", index);
            int code = 0;
            rc = kp_mg_command(c->client, cmd, NULL, &code, err);
            if (rc && code == 27) { kp_error_clear(err); rc = 0; } /* IndexNotFound: dropped by an earlier run */
            cJSON_Delete(cmd);
        }
        cJSON_Delete(keep);
        cJSON_Delete(had);
        if (rc) return -1;
    }
    return 0;
}
