/*
 * live.c — the DynamoDB backend against a live endpoint: connecting, the table and
 * its indexes, keyplan's marker item, seeding writes, read-back, teardown.
 *
 * keyplan's marker is one item in the table it created (PK "#KEYPLAN", SK "#MARKER")
 * holding the seed marker as JSON text: a table without it was not created by
 * keyplan, and nothing drops or overwrites such a table without --force.
 * Invariant: every write is an idempotent put keyed by PK/SK, so replaying any part of
 * a seed never duplicates an item.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "backends/dynamodb/conn.h"
#include "backends/dynamodb/ddb.h"

#define MARKER_PK KP_DDB_MARKER_PK
#define MARKER_SK KP_DDB_MARKER_SK

struct kp_ddb_conn {
    kp_ddb_client *client;
    char *prefix;
    char table[512];
};

kp_ddb_client *kp_ddb_conn_client(kp_ddb_conn *c) { return c->client; }

const char *kp_ddb_conn_table(kp_ddb_conn *c, const char *name)
{
    snprintf(c->table, sizeof c->table, "%s%s", c->prefix ? c->prefix : "", name);
    return c->table;
}

static cJSON *av_string(const char *s)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "S", s);
    return o;
}

/* ---- schema --------------------------------------------------------------------------- */

static void key_schema(cJSON *into, const char *pk, const char *sk)
{
    cJSON *ks = cJSON_AddArrayToObject(into, "KeySchema");
    cJSON *h = cJSON_CreateObject();
    cJSON_AddStringToObject(h, "AttributeName", pk);
    cJSON_AddStringToObject(h, "KeyType", "HASH");
    cJSON_AddItemToArray(ks, h);
    cJSON *r = cJSON_CreateObject();
    cJSON_AddStringToObject(r, "AttributeName", sk);
    cJSON_AddStringToObject(r, "KeyType", "RANGE");
    cJSON_AddItemToArray(ks, r);
}

static void attribute(cJSON *defs, const char *name)
{
    for (const cJSON *d = defs->child; d; d = d->next)
        if (strcmp(cJSON_GetObjectItem(d, "AttributeName")->valuestring, name) == 0) return;
    cJSON *a = cJSON_CreateObject();
    cJSON_AddStringToObject(a, "AttributeName", name);
    cJSON_AddStringToObject(a, "AttributeType", "S");
    cJSON_AddItemToArray(defs, a);
}

cJSON *kp_ddb_create_table_request(const kp_design *d, const char *prefix)
{
    const ddb_layout *L = d->layout;
    cJSON *req = cJSON_CreateObject();
    char name[512];
    snprintf(name, sizeof name, "%s%s", prefix ? prefix : "", L->table);
    cJSON_AddStringToObject(req, "TableName", name);
    cJSON *defs = cJSON_AddArrayToObject(req, "AttributeDefinitions");
    attribute(defs, "PK");
    attribute(defs, "SK");
    key_schema(req, "PK", "SK");
    if (L->lsi_count) {
        cJSON *lsis = cJSON_AddArrayToObject(req, "LocalSecondaryIndexes");
        for (size_t i = 0; i < L->lsi_count; i++) {
            attribute(defs, L->lsi[i].sk_attr);
            cJSON *x = cJSON_CreateObject();
            cJSON_AddStringToObject(x, "IndexName", L->lsi[i].name);
            key_schema(x, "PK", L->lsi[i].sk_attr);
            cJSON_AddStringToObject(cJSON_AddObjectToObject(x, "Projection"), "ProjectionType", "ALL");
            cJSON_AddItemToArray(lsis, x);
        }
    }
    if (L->gsi_count) {
        cJSON *gsis = cJSON_AddArrayToObject(req, "GlobalSecondaryIndexes");
        for (size_t i = 0; i < L->gsi_count; i++) {
            attribute(defs, L->gsi[i].pk_attr);
            attribute(defs, L->gsi[i].sk_attr);
            cJSON *x = cJSON_CreateObject();
            cJSON_AddStringToObject(x, "IndexName", L->gsi[i].name);
            key_schema(x, L->gsi[i].pk_attr, L->gsi[i].sk_attr);
            cJSON_AddStringToObject(cJSON_AddObjectToObject(x, "Projection"), "ProjectionType", "ALL");
            cJSON_AddItemToArray(gsis, x);
        }
    }
    cJSON_AddStringToObject(req, "BillingMode", "PAY_PER_REQUEST");
    return req;
}

/* ---- connection ---------------------------------------------------------------------------- */

int kp_ddb_connect(const kp_target *t, kp_conn **out, kp_error *err)
{
    *out = NULL;
    kp_ddb_conn *c = calloc(1, sizeof *c);
    if (!c) return kp_error_set(err, KP_ERR_NOMEM, NULL, 0, 0, "out of memory");
    kp_ddb_config cfg = {0};
    cfg.endpoint = t->endpoint;
    cfg.is_insecure = t->is_insecure;
    cfg.max_in_flight = t->concurrency;
    if (kp_ddb_client_open(&cfg, &c->client, err)) { free(c); return -1; }
    c->prefix = strdup(t->prefix ? t->prefix : "");
    *out = (kp_conn *)c;
    return 0;
}

void kp_ddb_disconnect(kp_conn *conn)
{
    kp_ddb_conn *c = (kp_ddb_conn *)conn;
    if (!c) return;
    kp_ddb_client_close(c->client);
    free(c->prefix);
    free(c);
}

static int describe(kp_ddb_conn *c, const char *table, cJSON **out, int *missing, kp_error *err)
{
    cJSON *req = cJSON_CreateObject();
    cJSON_AddStringToObject(req, "TableName", table);
    int rc = kp_ddb_call(c->client, "DescribeTable", req, out, err);
    cJSON_Delete(req);
    *missing = rc && kp_ddb_error_is(c->client, "ResourceNotFoundException");
    if (*missing) kp_error_clear(err);
    return *missing ? 0 : rc;
}

static int read_marker(kp_ddb_conn *c, const char *table, const char *shard, cJSON **marker, kp_error *err)
{
    *marker = NULL;
    char sk[256];
    cJSON *req = cJSON_CreateObject();
    cJSON_AddStringToObject(req, "TableName", table);
    cJSON_AddBoolToObject(req, "ConsistentRead", 1);
    cJSON *key = cJSON_AddObjectToObject(req, "Key");
    cJSON_AddItemToObject(key, "PK", av_string(MARKER_PK));
    cJSON_AddItemToObject(key, "SK", av_string(shard ? kp_marker_key(MARKER_SK, NULL, shard, sk, sizeof sk) : MARKER_SK));
    cJSON *resp = NULL;
    int rc = kp_ddb_call(c->client, "GetItem", req, &resp, err);
    cJSON_Delete(req);
    if (rc && kp_ddb_error_is(c->client, "ResourceNotFoundException")) { kp_error_clear(err); return 0; } /* no table yet */
    if (rc) return -1;
    const cJSON *text = cJSON_GetObjectItemCaseSensitive(
        cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(resp, "Item"), "marker"), "S");
    if (cJSON_IsString(text)) *marker = cJSON_Parse(text->valuestring);
    cJSON_Delete(resp);
    return 0;
}

int kp_ddb_inspect(kp_conn *conn, const kp_design *d, kp_target_state *out, kp_error *err)
{
    kp_ddb_conn *c = (kp_ddb_conn *)conn;
    const ddb_layout *L = d->layout;
    memset(out, 0, sizeof *out);
    const char *table = kp_ddb_conn_table(c, L->table);
    char name[512];
    snprintf(name, sizeof name, "%s", table);
    cJSON *desc = NULL;
    int missing = 0;
    if (describe(c, name, &desc, &missing, err)) return -1;
    if (missing) { out->is_empty = 1; return 0; }
    out->exists = 1;
    const cJSON *count = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(desc, "Table"), "ItemCount");
    cJSON_Delete(desc);
    if (read_marker(c, name, NULL, &out->marker, err)) return -1;
    (void)count;
    /* empty: a Scan of at most two items finds nothing but the marker */
    cJSON *req = cJSON_CreateObject();
    cJSON_AddStringToObject(req, "TableName", name);
    cJSON_AddNumberToObject(req, "Limit", 2);
    cJSON *resp = NULL;
    if (kp_ddb_call(c->client, "Scan", req, &resp, err)) { cJSON_Delete(req); return -1; }
    cJSON_Delete(req);
    int items = cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(resp, "Items"));
    cJSON_Delete(resp);
    out->is_empty = items == 0 || (items == 1 && out->marker);
    out->is_foreign = !out->marker && !out->is_empty;
    if (!out->marker && out->is_empty) out->is_foreign = 1; /* an empty table keyplan did not create */
    return 0;
}

static int wait_active(kp_ddb_conn *c, const char *table, long limit_ms, kp_error *err)
{
    /* 10, 20, 40, 80 ms, then every 100 ms: a local server is ACTIVE at once, AWS takes seconds */
    long pause_ms = 10, waited_ms = 0;
    while (waited_ms < limit_ms) {
        cJSON *desc = NULL;
        int missing = 0;
        if (describe(c, table, &desc, &missing, err)) return -1;
        const cJSON *t = cJSON_GetObjectItemCaseSensitive(desc, "Table");
        const cJSON *status = cJSON_GetObjectItemCaseSensitive(t, "TableStatus");
        int active = !missing && cJSON_IsString(status) && strcmp(status->valuestring, "ACTIVE") == 0;
        const cJSON *gsis = cJSON_GetObjectItemCaseSensitive(t, "GlobalSecondaryIndexes");
        for (const cJSON *g = gsis ? gsis->child : NULL; g && active; g = g->next) {
            const cJSON *gs = cJSON_GetObjectItemCaseSensitive(g, "IndexStatus");
            active = !cJSON_IsString(gs) || strcmp(gs->valuestring, "ACTIVE") == 0;
        }
        cJSON_Delete(desc);
        if (active) return 0;
        struct timespec pause = {0, pause_ms * 1000000L};
        nanosleep(&pause, NULL);
        waited_ms += pause_ms;
        pause_ms = pause_ms * 2 > 100 ? 100 : pause_ms * 2;
    }
    return kp_error_set(err, KP_ERR_TARGET, NULL, 0, 0, "table %s (or an index of it) did not become ACTIVE within %ld s; "
                        "run the command again once it is", table, limit_ms / 1000);
}

int kp_ddb_apply_schema(kp_conn *conn, const kp_design *d, kp_error *err)
{
    kp_ddb_conn *c = (kp_ddb_conn *)conn;
    cJSON *req = kp_ddb_create_table_request(d, c->prefix);
    char table[512];
    snprintf(table, sizeof table, "%s", cJSON_GetObjectItem(req, "TableName")->valuestring);
    cJSON *resp = NULL;
    int rc = kp_ddb_call(c->client, "CreateTable", req, &resp, err);
    cJSON_Delete(req);
    cJSON_Delete(resp);
    if (rc && kp_ddb_error_is(c->client, "ResourceInUseException")) {
        kp_error_clear(err);
        rc = 0; /* it exists: inspect decided it is ours */
    }
    if (rc) return -1;
    return wait_active(c, table, 60000, err);
}

int kp_ddb_drop(kp_conn *conn, const kp_design *d, kp_error *err)
{
    kp_ddb_conn *c = (kp_ddb_conn *)conn;
    const ddb_layout *L = d->layout;
    char table[512];
    snprintf(table, sizeof table, "%s", kp_ddb_conn_table(c, L->table));
    cJSON *req = cJSON_CreateObject();
    cJSON_AddStringToObject(req, "TableName", table);
    cJSON *resp = NULL;
    int rc = kp_ddb_call(c->client, "DeleteTable", req, &resp, err);
    cJSON_Delete(req);
    cJSON_Delete(resp);
    if (rc && kp_ddb_error_is(c->client, "ResourceNotFoundException")) { kp_error_clear(err); return 0; }
    if (rc) return -1;
    /* wait until it is gone, so a new table of the same name can be created */
    for (int attempt = 0; attempt < 600; attempt++) {
        cJSON *desc = NULL;
        int missing = 0;
        if (describe(c, table, &desc, &missing, err)) return -1;
        cJSON_Delete(desc);
        if (missing) return 0;
        struct timespec pause = {0, 100 * 1000000L};
        nanosleep(&pause, NULL);
    }
    return kp_error_set(err, KP_ERR_TARGET, NULL, 0, 0, "table %s was still being deleted after 60 s", table);
}

int kp_ddb_write_marker(kp_conn *conn, const kp_design *d, const cJSON *marker, kp_error *err)
{
    kp_ddb_conn *c = (kp_ddb_conn *)conn;
    const ddb_layout *L = d->layout;
    char *text = cJSON_PrintUnformatted(marker);
    if (!text) return kp_error_set(err, KP_ERR_NOMEM, NULL, 0, 0, "out of memory");
    cJSON *req = cJSON_CreateObject();
    cJSON_AddStringToObject(req, "TableName", kp_ddb_conn_table(c, L->table));
    cJSON *item = cJSON_AddObjectToObject(req, "Item");
    char sk[256];
    cJSON_AddItemToObject(item, "PK", av_string(MARKER_PK));
    cJSON_AddItemToObject(item, "SK", av_string(kp_marker_key(MARKER_SK, marker, NULL, sk, sizeof sk)));
    cJSON_AddItemToObject(item, "marker", av_string(text));
    cJSON_free(text);
    cJSON *resp = NULL;
    int rc = kp_ddb_call(c->client, "PutItem", req, &resp, err);
    cJSON_Delete(req);
    cJSON_Delete(resp);
    return rc;
}

int kp_ddb_read_marker(kp_conn *conn, const kp_design *d, const char *shard, cJSON **out, kp_error *err)
{
    kp_ddb_conn *c = (kp_ddb_conn *)conn;
    const ddb_layout *L = d->layout;
    char name[512];
    snprintf(name, sizeof name, "%s", kp_ddb_conn_table(c, L->table));
    return read_marker(c, name, shard, out, err);
}

/* ---- seeding writes -------------------------------------------------------------------------- */

typedef struct batch_ctx {
    kp_item *items;             /* shallow copies: container, entity, id (owned) */
    size_t count;
    kp_ack_fn on_ack;
    void *ctx;
} batch_ctx;

static void batch_done(void *p, int written, const cJSON *unprocessed, const kp_ddb_failure *failure)
{
    batch_ctx *b = p;
    (void)written;
    for (size_t i = 0; i < b->count; i++) {
        int ok = failure == NULL;
        if (!ok && unprocessed) {
            /* only the requests still unprocessed failed */
            ok = 1;
            for (const cJSON *w = unprocessed->child; w && ok; w = w->next) {
                const cJSON *item = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(w, "PutRequest"), "Item");
                const cJSON *pk = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(item, "PK"), "S");
                const cJSON *sk = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(item, "SK"), "S");
                char id[4200];
                if (cJSON_IsString(pk) && cJSON_IsString(sk)) {
                    snprintf(id, sizeof id, "%s\x1f%s", pk->valuestring, sk->valuestring);
                    if (b->items[i].id && strcmp(id, b->items[i].id) == 0) ok = 0;
                }
            }
        }
        b->on_ack(b->ctx, &b->items[i], ok, ok ? NULL : &failure->error);
        free(b->items[i].id);
    }
    free(b->items);
    free(b);
}

int kp_ddb_submit_items(kp_conn *conn, kp_item_list *batch, kp_ack_fn on_ack, void *ctx, kp_error *err)
{
    kp_ddb_conn *c = (kp_ddb_conn *)conn;
    size_t i = 0;
    while (i < batch->count) {
        /* one BatchWriteItem per table and 25 items; no duplicate keys in one request */
        const char *container = batch->items[i].container;
        batch_ctx *b = calloc(1, sizeof *b);
        cJSON *requests = cJSON_CreateArray();
        if (b) b->items = calloc(KP_DDB_MAX_BATCH_WRITE, sizeof *b->items);
        if (!b || !b->items || !requests) {
            if (b) free(b->items);
            free(b);
            cJSON_Delete(requests);
            return kp_error_set(err, KP_ERR_NOMEM, NULL, 0, 0, "out of memory");
        }
        b->on_ack = on_ack;
        b->ctx = ctx;
        while (i < batch->count && b->count < KP_DDB_MAX_BATCH_WRITE && strcmp(batch->items[i].container, container) == 0) {
            kp_item *it = &batch->items[i];
            int dup = 0;
            for (size_t k = 0; k < b->count && !dup; k++) dup = it->id && b->items[k].id && strcmp(it->id, b->items[k].id) == 0;
            if (dup) break;
            /* the body and id move into the request and the ack context: the caller
             * clears the list after this returns, so copying them would only be freed */
            cJSON *put = cJSON_CreateObject();
            cJSON *request = put ? cJSON_AddObjectToObject(put, "PutRequest") : NULL;
            if (!request || !cJSON_AddItemToObject(request, "Item", it->body)) {
                cJSON_Delete(put);
                for (size_t k = 0; k < b->count; k++) free(b->items[k].id);
                free(b->items);
                free(b);
                cJSON_Delete(requests);
                return kp_error_set(err, KP_ERR_NOMEM, NULL, 0, 0, "out of memory");
            }
            cJSON_AddItemToArray(requests, put);
            b->items[b->count] = *it;
            b->items[b->count].body = NULL;
            it->body = NULL;
            it->id = NULL;
            b->count++;
            i++;
        }
        if (kp_ddb_batch_write(c->client, kp_ddb_conn_table(c, container), requests, batch_done, b, err)) {
            for (size_t k = 0; k < b->count; k++) free(b->items[k].id);
            free(b->items);
            free(b);
            return -1;
        }
    }
    return 0;
}

int kp_ddb_poll_conn(kp_conn *conn, int timeout_ms, kp_error *err)
{
    return kp_ddb_poll(((kp_ddb_conn *)conn)->client, timeout_ms, err);
}

/* ---- read-back --------------------------------------------------------------------------------- */

/* The length of a number's text without the zeros that end its fraction, nor the point
 * left alone after them ("1.50" -> 3, "2." -> 1); strlen when it has no point. */
static size_t canonical_length(const char *t)
{
    size_t n = strlen(t);
    if (!strchr(t, '.')) return n;
    while (n > 0 && t[n - 1] == '0') n--;
    if (n > 0 && t[n - 1] == '.') n--;
    return n;
}

/* A checksum that does not depend on how the service writes numbers back ("1.50" -> "1.5"). */
static void canonical_numbers(cJSON *av)
{
    if (!cJSON_IsObject(av)) return;
    for (cJSON *m = av->child; m; m = m->next) {
        if (m->string && strcmp(m->string, "N") == 0 && cJSON_IsString(m)) {
            m->valuestring[canonical_length(m->valuestring)] = '\0';
        } else if (cJSON_IsObject(m) || cJSON_IsArray(m)) {
            for (cJSON *e = m->child; e; e = e->next) canonical_numbers(e);
            canonical_numbers(m);
        }
    }
}

/* Would canonical_numbers change av (the same walk, reading only)? */
static int has_uncanonical_numbers(const cJSON *av)
{
    if (!cJSON_IsObject(av)) return 0;
    for (const cJSON *m = av->child; m; m = m->next) {
        if (m->string && strcmp(m->string, "N") == 0 && cJSON_IsString(m)) {
            if (m->valuestring[canonical_length(m->valuestring)]) return 1;
        } else if (cJSON_IsObject(m) || cJSON_IsArray(m)) {
            for (const cJSON *e = m->child; e; e = e->next)
                if (has_uncanonical_numbers(e)) return 1;
            if (has_uncanonical_numbers(m)) return 1;
        }
    }
    return 0;
}

uint64_t kp_ddb_item_checksum(const cJSON *body)
{
    int is_canonical = 1;
    for (const cJSON *a = body ? body->child : NULL; a && is_canonical; a = a->next) is_canonical = !has_uncanonical_numbers(a);
    if (is_canonical) return kp_item_hash(body);   /* what the copy would hash: nothing to change */
    cJSON *copy = cJSON_Duplicate(body, 1);
    for (cJSON *a = copy ? copy->child : NULL; a; a = a->next) canonical_numbers(a);
    uint64_t h = kp_item_hash(copy);
    cJSON_Delete(copy);
    return h;
}

/* Scans the whole table (consistent reads, every page) and passes each item but keyplan's marker. */
static int scan_items(kp_ddb_conn *c, const char *table, int (*fn)(void *ctx, const cJSON *item, kp_error *err), void *ctx,
                      kp_error *err)
{
    cJSON *start = NULL;
    do {
        cJSON *req = cJSON_CreateObject();
        cJSON_AddStringToObject(req, "TableName", table);
        cJSON_AddBoolToObject(req, "ConsistentRead", 1);
        if (start) cJSON_AddItemToObject(req, "ExclusiveStartKey", start);
        start = NULL;
        cJSON *resp = NULL;
        int rc = kp_ddb_call(c->client, "Scan", req, &resp, err);
        cJSON_Delete(req);
        if (rc) return -1;
        const cJSON *items = cJSON_GetObjectItemCaseSensitive(resp, "Items");
        for (const cJSON *it = items ? items->child : NULL; it && rc == 0; it = it->next) {
            const cJSON *pk = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(it, "PK"), "S");
            if (cJSON_IsString(pk) && strcmp(pk->valuestring, MARKER_PK) == 0) continue;
            rc = fn(ctx, it, err);
        }
        const cJSON *last = cJSON_GetObjectItemCaseSensitive(resp, "LastEvaluatedKey");
        if (rc == 0 && cJSON_IsObject(last) && last->child) start = cJSON_Duplicate(last, 1);
        cJSON_Delete(resp);
        if (rc) return -1;
    } while (start);
    return 0;
}

typedef struct items_ctx {
    const char *container;
    kp_read_item_fn fn;
    void *ctx;
} items_ctx;

/* One item: its identity as transform names it (PK, SK) and its checksum. */
static int pass_item(void *p, const cJSON *it, kp_error *err)
{
    items_ctx *x = p;
    const cJSON *pk = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(it, "PK"), "S");
    const cJSON *sk = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(it, "SK"), "S");
    char id[4200];
    snprintf(id, sizeof id, "%s\x1f%s", cJSON_IsString(pk) ? pk->valuestring : "", cJSON_IsString(sk) ? sk->valuestring : "");
    return x->fn(x->ctx, x->container, id, kp_ddb_item_checksum(it), err);
}

int kp_ddb_read_items(kp_conn *conn, const kp_design *d, kp_read_item_fn fn, void *ctx, kp_error *err)
{
    kp_ddb_conn *c = (kp_ddb_conn *)conn;
    const ddb_layout *L = d->layout;
    char table[512];
    snprintf(table, sizeof table, "%s", kp_ddb_conn_table(c, L->table));
    items_ctx x = {L->table, fn, ctx};
    return scan_items(c, table, pass_item, &x, err);
}

int kp_ddb_read_back(kp_conn *conn, const kp_design *d, kp_readback *out, kp_error *err)
{
    return kp_read_back_from_items(kp_ddb_read_items, conn, d, out, err);
}

/* ---- migrate: records read back, schema changes ------------------------------------------------------ */

typedef struct records_ctx {
    const kp_design *d;
    kp_read_record_fn on_record;
    void *ctx;
} records_ctx;

/* One item back into its record: the entity it names, the attributes of that entity. */
static int record_of_item(void *p, const cJSON *it, kp_error *err)
{
    records_ctx *r = p;
    const cJSON *type = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(it, KP_DDB_TYPE_ATTR), "S");
    if (!cJSON_IsString(type)) return 0; /* an item keyplan did not write */
    if (cJSON_GetObjectItemCaseSensitive(it, KP_DDB_ELEMENT_ATTR)) return 0; /* an element item: its record is elsewhere */
    const kp_entity *e = kp_model_entity(r->d->model, type->valuestring);
    if (!e) {
        const cJSON *pk = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(it, "PK"), "S");
        return kp_error_set(err, KP_ERR_DATA, NULL, 0, 0, "the item PK=%s names entity \"%s\", which the model lacks",
                            cJSON_IsString(pk) ? pk->valuestring : "?", type->valuestring);
    }
    cJSON *object = cJSON_CreateObject();
    if (!object) return kp_error_set(err, KP_ERR_NOMEM, NULL, 0, 0, "out of memory");
    for (size_t i = 0; i < e->attr_count; i++) {
        const cJSON *av = cJSON_GetObjectItemCaseSensitive(it, e->attrs[i]->name);
        if (!av) continue;
        cJSON *v = kp_ddb_from_attribute_value(&e->attrs[i]->type, av, err);
        if (!v) { cJSON_Delete(object); return -1; }
        if (cJSON_IsNull(v)) cJSON_Delete(v);
        else cJSON_AddItemToObject(object, e->attrs[i]->name, v);
    }
    return r->on_record(r->ctx, e, object, err);
}

int kp_ddb_read_records(kp_conn *conn, const kp_design *d, kp_read_record_fn on_record, void *ctx, kp_error *err)
{
    kp_ddb_conn *c = (kp_ddb_conn *)conn;
    const ddb_layout *L = d->layout;
    char table[512];
    snprintf(table, sizeof table, "%s", kp_ddb_conn_table(c, L->table));
    records_ctx r = {d, on_record, ctx};
    return scan_items(c, table, record_of_item, &r, err);
}

/* The names of the live table's indexes of one kind ("GlobalSecondaryIndexes"), as a JSON
 * array of strings; NULL when the table is missing (*missing set). */
static int live_indexes(kp_ddb_conn *c, const char *table, cJSON **gsis, cJSON **lsis, int *missing, kp_error *err)
{
    cJSON *desc = NULL;
    *gsis = cJSON_CreateArray();
    *lsis = cJSON_CreateArray();
    if (describe(c, table, &desc, missing, err)) return -1;
    const cJSON *t = cJSON_GetObjectItemCaseSensitive(desc, "Table");
    const char *kinds[2] = {"GlobalSecondaryIndexes", "LocalSecondaryIndexes"};
    for (int k = 0; k < 2; k++) {
        const cJSON *list = cJSON_GetObjectItemCaseSensitive(t, kinds[k]);
        for (const cJSON *x = list ? list->child : NULL; x; x = x->next) {
            const cJSON *name = cJSON_GetObjectItemCaseSensitive(x, "IndexName");
            if (cJSON_IsString(name)) cJSON_AddItemToArray(k ? *lsis : *gsis, cJSON_CreateString(name->valuestring));
        }
    }
    cJSON_Delete(desc);
    return 0;
}

static int has_string(const cJSON *array, const char *s)
{
    for (const cJSON *x = array ? array->child : NULL; x; x = x->next)
        if (cJSON_IsString(x) && strcmp(x->valuestring, s) == 0) return 1;
    return 0;
}

static int update_index(kp_ddb_conn *c, const char *table, const ddb_index *gsi, int is_create, kp_error *err)
{
    cJSON *req = cJSON_CreateObject();
    cJSON_AddStringToObject(req, "TableName", table);
    if (is_create) {
        cJSON *defs = cJSON_AddArrayToObject(req, "AttributeDefinitions");
        attribute(defs, gsi->pk_attr);
        attribute(defs, gsi->sk_attr);
    }
    cJSON *updates = cJSON_AddArrayToObject(req, "GlobalSecondaryIndexUpdates");
    cJSON *u = cJSON_CreateObject();
    cJSON *x = cJSON_AddObjectToObject(u, is_create ? "Create" : "Delete");
    cJSON_AddStringToObject(x, "IndexName", gsi->name);
    if (is_create) {
        key_schema(x, gsi->pk_attr, gsi->sk_attr);
        cJSON_AddStringToObject(cJSON_AddObjectToObject(x, "Projection"), "ProjectionType", "ALL");
    }
    cJSON_AddItemToArray(updates, u);
    cJSON *resp = NULL;
    int rc = kp_ddb_call(c->client, "UpdateTable", req, &resp, err);
    cJSON_Delete(req);
    cJSON_Delete(resp);
    return rc;
}


/* Drops the table and creates it with `to`'s indexes: every item must be written again. */
static int rebuild(kp_ddb_conn *c, const kp_design *from, const kp_design *to, int *emptied, kp_error *err)
{
    if (kp_ddb_drop((kp_conn *)c, from, err) || kp_ddb_apply_schema((kp_conn *)c, to, err)) return -1;
    *emptied = 1;
    return 0;
}

int kp_ddb_migrate_schema(kp_conn *conn, const kp_design *from, const kp_design *to, int is_final, int *emptied,
                          char *note, size_t note_size, kp_error *err)
{
    kp_ddb_conn *c = (kp_ddb_conn *)conn;
    const ddb_layout *T = to->layout;
    char table[512], line[800];
    snprintf(table, sizeof table, "%s", kp_ddb_conn_table(c, T->table));
    cJSON *gsis = NULL, *lsis = NULL;
    int missing = 0, rc = 0;
    if (live_indexes(c, table, &gsis, &lsis, &missing, err)) { cJSON_Delete(gsis); cJSON_Delete(lsis); return -1; }
    if (missing) {
        cJSON_Delete(gsis);
        cJSON_Delete(lsis);
        if (is_final) return 0;
        *emptied = 1;
        return kp_ddb_apply_schema(conn, to, err);
    }
    if (is_final) {
        for (const cJSON *g = gsis->child; g && rc == 0; g = g->next) {
            int kept = 0;
            for (size_t i = 0; i < T->gsi_count; i++) kept |= strcmp(T->gsi[i].name, g->valuestring) == 0;
            if (kept) continue;
            ddb_index gone = {.kind = DDB_GSI, .name = g->valuestring};
            rc = update_index(c, table, &gone, 0, err);
            if (rc == 0) rc = wait_active(c, table, 600000, err);
            cJSON *now = NULL, *nl = NULL;
            int m = 0;
            if (rc == 0 && live_indexes(c, table, &now, &nl, &m, err) == 0 && has_string(now, g->valuestring)) {
                snprintf(line, sizeof line, "the server accepted the deletion of index %s but still has it (dynalite "
                         "implements only throughput updates); it is unused and can be left or dropped by hand", g->valuestring);
                kp_note_add(note, note_size, line);
            }
            cJSON_Delete(now);
            cJSON_Delete(nl);
        }
        cJSON_Delete(gsis);
        cJSON_Delete(lsis);
        return rc;
    }
    /* local indexes exist only from the table's creation: another set means a rebuild */
    int same_lsis = (size_t)cJSON_GetArraySize(lsis) == T->lsi_count;
    for (size_t i = 0; i < T->lsi_count; i++) same_lsis &= has_string(lsis, T->lsi[i].name);
    if (!same_lsis) {
        snprintf(line, sizeof line, "table %s is rebuilt: its local secondary indexes change and DynamoDB creates those "
                 "only with the table (not online: the table is empty until every item is written again)", table);
        kp_note_add(note, note_size, line);
        rc = rebuild(c, from, to, emptied, err);
    }
    for (size_t i = 0; rc == 0 && same_lsis && i < T->gsi_count; i++) {
        if (has_string(gsis, T->gsi[i].name)) continue;
        rc = update_index(c, table, &T->gsi[i], 1, err);
        char refused[300] = "";
        if (rc && kp_ddb_error_is(c->client, "ValidationException")) {
            /* dynalite validates an on-demand index creation as lacking ProvisionedThroughput (DynamoDB
             * accepts it) and creates no index online anyway: the rebuild below */
            snprintf(refused, sizeof refused, " (it refused UpdateTable: %.200s)", err->message);
            kp_error_clear(err);
            rc = 0;
        }
        cJSON *now = NULL, *nl = NULL;
        int m = 0;
        if (rc == 0) rc = live_indexes(c, table, &now, &nl, &m, err);
        if (rc == 0 && !has_string(now, T->gsi[i].name)) {
            snprintf(line, sizeof line, "the server did not create index %s online%s; dynalite implements only throughput "
                     "updates: table %s is rebuilt instead (not online: the table is empty until every item is written "
                     "again); DynamoDB itself creates the index online", T->gsi[i].name, refused, table);
            kp_note_add(note, note_size, line);
            rc = rebuild(c, from, to, emptied, err);
            same_lsis = 0; /* rebuilt with every index: done */
        } else if (rc == 0) {
            rc = wait_active(c, table, 3600000, err); /* DynamoDB backfills the new index from the items */
        }
        cJSON_Delete(now);
        cJSON_Delete(nl);
    }
    cJSON_Delete(gsis);
    cJSON_Delete(lsis);
    return rc;
}
