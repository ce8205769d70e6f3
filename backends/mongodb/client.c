/*
 * client.c — keyplan's MongoDB client (client.h) on libmongoc.
 *
 * One mongoc_client_t per connection, bulk writes sent one after the other. Measured on
 * FerretDB (SQLite, 2 cores, 10,000 documents of ~300 bytes): one client with unordered
 * bulks of 500 inserts 11,000 documents/s (100: 10,500; 1,000: 13,000); two or four
 * clients in parallel 13,500 — the server writes one SQLite file at a time, so a client
 * pool would buy at most a fifth: not worth threads. Seeding sends bulks of KP_MG_BATCH
 * (5,000: its write phase 20 % shorter than with 500, bench/README.md "MongoDB seeding");
 * the driver cuts a bulk at the server's message and batch limits. Every command the driver starts is counted through
 * the APM callbacks, so getMores and retries are in the request count verify reports.
 * Transient failures (network errors, a primary stepping down, server selection
 * timeouts) are retried up to 5 times with a growing pause. Writes use w:majority,
 * j:true (wtimeout 30 s) unless the connection string names a write concern.
 * Invariant: messages name the server by the redacted connection string only.
 */
#include "backends/mongodb/client.h"

#include <mongoc/mongoc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>

#include "backends/mongodb/mongo.h"
#include "core/dynlib.h"

/* libmongoc is loaded when a command first connects (core/dynlib.h): the commands that
 * need no server do not pay for its start-up. Every function of it called here: */
#define MONGOC_FUNCTIONS(X) \
    X(mongoc_apm_callbacks_destroy) \
    X(mongoc_apm_callbacks_new) \
    X(mongoc_apm_command_started_get_command) \
    X(mongoc_apm_command_started_get_command_name) \
    X(mongoc_apm_command_started_get_context) \
    X(mongoc_apm_set_command_started_cb) \
    X(mongoc_bulk_operation_destroy) \
    X(mongoc_bulk_operation_execute) \
    X(mongoc_bulk_operation_insert_with_opts) \
    X(mongoc_client_command_simple) \
    X(mongoc_client_destroy) \
    X(mongoc_client_get_database) \
    X(mongoc_client_new_from_uri_with_error) \
    X(mongoc_client_set_apm_callbacks) \
    X(mongoc_client_set_error_api) \
    X(mongoc_client_set_write_concern) \
    X(mongoc_collection_create_bulk_operation_with_opts) \
    X(mongoc_collection_destroy) \
    X(mongoc_collection_find_with_opts) \
    X(mongoc_cursor_destroy) \
    X(mongoc_cursor_error) \
    X(mongoc_cursor_next) \
    X(mongoc_database_command_simple) \
    X(mongoc_database_destroy) \
    X(mongoc_database_get_collection) \
    X(mongoc_init) \
    X(mongoc_log_set_handler) \
    X(mongoc_uri_destroy) \
    X(mongoc_uri_get_database) \
    X(mongoc_uri_get_hosts) \
    X(mongoc_uri_get_tls) \
    X(mongoc_uri_get_write_concern) \
    X(mongoc_uri_has_option) \
    X(mongoc_uri_new_with_error) \
    X(mongoc_uri_set_option_as_bool) \
    X(mongoc_uri_set_option_as_int32) \
    X(mongoc_uri_set_option_as_utf8) \
    X(mongoc_write_concern_destroy) \
    X(mongoc_write_concern_get_w) \
    X(mongoc_write_concern_get_wtag) \
    X(mongoc_write_concern_journal_is_set) \
    X(mongoc_write_concern_new) \
    X(mongoc_write_concern_set_journal) \
    X(mongoc_write_concern_set_wmajority)

static struct {
    MONGOC_FUNCTIONS(KP_DYNLIB_FIELD)
} mongoc_api;
static const char *const mongoc_names[] = {MONGOC_FUNCTIONS(KP_DYNLIB_NAME)};
static const char *const mongoc_sonames[] = {"libmongoc-1.0.so.0", "libmongoc-1.0.so", NULL};
static kp_dynlib mongoc_lib = {mongoc_sonames, "MongoDB commands", "libmongoc-1.0-0", NULL, 0, ""};
#define MG(f) (mongoc_api.f)

static int load_driver(kp_error *err) { return KP_DYNLIB_LOAD(mongoc_lib, mongoc_api, mongoc_names, err); }

#define RETRIES 5

struct kp_mg_client {
    mongoc_client_t *client;
    mongoc_database_t *db;
    char *uri;          /* redacted */
    char *database;
    int is_database_named;      /* the URI names the database */
    long requests;
    long docs_read;             /* documents finds returned (a count sends none) */
    long bytes_read;            /* their BSON sizes */
};

static void quiet_log(mongoc_log_level_t level, const char *domain, const char *message, void *data)
{
    (void)data;
    /* FerretDB answers endSessions with CommandNotFound at every close: not worth a line */
    if (level <= MONGOC_LOG_LEVEL_ERROR || getenv("KP_MONGO_DEBUG")) fprintf(stderr, "libmongoc %s: %s\n", domain, message);
}

static int initialised;

static void init_driver(void)
{
    if (initialised) return;
    MG(mongoc_log_set_handler)(quiet_log, NULL);
    MG(mongoc_init)();
    initialised = 1;
}

static void on_started(const mongoc_apm_command_started_t *event)
{
    kp_mg_client *c = MG(mongoc_apm_command_started_get_context)(event);
    c->requests++;
    if (getenv("KP_TRACE_REQUESTS")) {
        char *json = bson_as_relaxed_extended_json(MG(mongoc_apm_command_started_get_command)(event), NULL);
        fprintf(stderr, "mongodb %s %s\n", MG(mongoc_apm_command_started_get_command_name)(event), json ? json : "");
        bson_free(json);
    }
}

void kp_mg_redact_uri(const char *uri, char *buf, size_t size)
{
    const char *scheme = strstr(uri, "://");
    const char *start = scheme ? scheme + 3 : uri;
    /* the last '@': a password may hold '/', '?' or '@' itself (a malformed string is
     * echoed in errors too); hiding too much is better than showing a password */
    const char *at = strrchr(start, '@');
    if (at) {
        const char *colon = memchr(start, ':', (size_t)(at - start));
        if (colon) {
            snprintf(buf, size, "%.*s****%s", (int)(colon + 1 - uri), uri, at);
            return;
        }
    }
    snprintf(buf, size, "%s", uri);
}

static int is_loopback_host(const char *host)
{
    if (!host) return 0;
    if (strcasecmp(host, "localhost") == 0 || strcmp(host, "::1") == 0) return 1;
    size_t n = strlen(host);
    if (n > 10 && strcasecmp(host + n - 10, ".localhost") == 0) return 1;
    if (strncmp(host, "127.", 4) == 0) {
        for (const char *p = host + 4; *p; p++)
            if (!((*p >= '0' && *p <= '9') || *p == '.')) return 0;
        return 1;
    }
    return 0;
}

int kp_mg_uri_check(const mongoc_uri_t *uri, int is_insecure, const char *redacted, kp_error *err)
{
    if (load_driver(err)) return -1;
    if (is_insecure || MG(mongoc_uri_get_tls)(uri)) return 0;   /* libmongoc verifies TLS unless told not to */
    for (const mongoc_host_list_t *h = MG(mongoc_uri_get_hosts)(uri); h; h = h->next) {
        if (h->family == AF_UNIX || is_loopback_host(h->host)) continue;
        return kp_error_set(err, KP_ERR_USAGE, NULL, 0, 0,
                            "refusing a plain-text connection to the non-loopback MongoDB host %s (%s): credentials and "
                            "data would cross the network unencrypted; add tls=true to the connection string, or pass "
                            "--insecure to accept it", h->host, redacted);
    }
    return 0;
}

static int is_transient(const bson_error_t *e);
static void pause_ms(int ms);

int kp_mg_client_open(const char *uri_text, int is_insecure, kp_mg_client **out, kp_error *err)
{
    *out = NULL;
    if (!uri_text || !uri_text[0]) uri_text = getenv("MONGODB_URI");
    if (!uri_text || !uri_text[0])
        return kp_error_set(err, KP_ERR_USAGE, NULL, 0, 0, "no MongoDB server named: pass --target mongodb=URI (for example "
                            "mongodb://127.0.0.1:28017/, what scripts/target-ferretdb.sh start runs) or set MONGODB_URI");
    if (load_driver(err)) return -1;
    init_driver();
    char redacted[1024];
    kp_mg_redact_uri(uri_text, redacted, sizeof redacted);
    bson_error_t e;
    mongoc_uri_t *uri = MG(mongoc_uri_new_with_error)(uri_text, &e);
    if (!uri) return kp_error_set(err, KP_ERR_USAGE, NULL, 0, 0, "the MongoDB connection string %s is not valid: %s", redacted, e.message);
    if (!MG(mongoc_uri_has_option)(uri, MONGOC_URI_SERVERSELECTIONTIMEOUTMS))
        MG(mongoc_uri_set_option_as_int32)(uri, MONGOC_URI_SERVERSELECTIONTIMEOUTMS, 5000);
    if (kp_mg_uri_check(uri, is_insecure, redacted, err)) { MG(mongoc_uri_destroy)(uri); return -1; }
    if (is_insecure) MG(mongoc_uri_set_option_as_bool)(uri, MONGOC_URI_TLSINSECURE, true);
    MG(mongoc_uri_set_option_as_utf8)(uri, MONGOC_URI_APPNAME, "keyplan");
    kp_mg_client *c = calloc(1, sizeof *c);
    if (!c) { MG(mongoc_uri_destroy)(uri); return kp_error_set(err, KP_ERR_NOMEM, NULL, 0, 0, "out of memory"); }
    c->client = MG(mongoc_client_new_from_uri_with_error)(uri, &e);
    const char *db = MG(mongoc_uri_get_database)(uri);
    c->is_database_named = db && db[0];
    /* nothing lost: unless the connection string names a write concern, writes are
     * acknowledged only once a majority has them in its journal (docs/reliability.md) */
    const mongoc_write_concern_t *uri_wc = MG(mongoc_uri_get_write_concern)(uri);
    int is_write_concern_named = MG(mongoc_write_concern_get_w)(uri_wc) != MONGOC_WRITE_CONCERN_W_DEFAULT ||
                                 MG(mongoc_write_concern_get_wtag)(uri_wc) || MG(mongoc_write_concern_journal_is_set)(uri_wc);
    c->database = strdup(db && db[0] ? db : "keyplan");
    c->uri = strdup(redacted);
    MG(mongoc_uri_destroy)(uri);
    if (!c->client) {
        kp_mg_client_close(c);
        return kp_error_set(err, KP_ERR_TARGET, NULL, 0, 0, "cannot use the MongoDB connection string %s: %s", redacted, e.message);
    }
    MG(mongoc_client_set_error_api)(c->client, MONGOC_ERROR_API_VERSION_2);
    if (!is_write_concern_named) {
        mongoc_write_concern_t *wc = MG(mongoc_write_concern_new)();
        MG(mongoc_write_concern_set_wmajority)(wc, 30000);  /* wtimeout: report, never hang, when no majority answers */
        MG(mongoc_write_concern_set_journal)(wc, true);
        MG(mongoc_client_set_write_concern)(c->client, wc);
        MG(mongoc_write_concern_destroy)(wc);
    }
    mongoc_apm_callbacks_t *cb = MG(mongoc_apm_callbacks_new)();
    MG(mongoc_apm_set_command_started_cb)(cb, on_started);
    MG(mongoc_client_set_apm_callbacks)(c->client, cb, c);
    MG(mongoc_apm_callbacks_destroy)(cb);
    c->db = MG(mongoc_client_get_database)(c->client, c->database);
    /* the first command: a connection dropped or cut short is retried like any other
     * (faults_proxy.sh found verify stopping on one dropped ping) */
    bson_t *ping = BCON_NEW("ping", BCON_INT32(1));
    bool ok = false;
    for (int attempt = 0; attempt < RETRIES; attempt++) {
        ok = MG(mongoc_client_command_simple)(c->client, "admin", ping, NULL, NULL, &e);
        if (ok || !is_transient(&e)) break;
        pause_ms(100 << attempt);
    }
    bson_destroy(ping);
    if (!ok) {
        kp_mg_client_close(c);
        return kp_error_set(err, KP_ERR_TARGET, NULL, 0, 0, "cannot reach MongoDB at %s: %s (is the server running? "
                            "scripts/target-ferretdb.sh start runs a local one)", redacted, e.message);
    }
    *out = c;
    return 0;
}

void kp_mg_client_close(kp_mg_client *c)
{
    if (!c) return;
    if (c->db) MG(mongoc_database_destroy)(c->db);
    if (c->client) MG(mongoc_client_destroy)(c->client);
    free(c->uri);
    free(c->database);
    free(c);
}

const char *kp_mg_client_uri(const kp_mg_client *c) { return c->uri; }

void kp_mg_client_default_database(kp_mg_client *c, const char *name)
{
    if (c->is_database_named || !name || strcmp(c->database, name) == 0) return;
    char *copy = strdup(name);
    if (!copy) return;
    free(c->database);
    c->database = copy;
    MG(mongoc_database_destroy)(c->db);
    c->db = MG(mongoc_client_get_database)(c->client, c->database);
}
const char *kp_mg_client_database(const kp_mg_client *c) { return c->database; }
long kp_mg_client_requests(const kp_mg_client *c) { return c->requests; }
void kp_mg_client_reads(const kp_mg_client *c, long *docs, long *bytes)
{
    *docs = c->docs_read;
    *bytes = c->bytes_read;
}

/* ---- errors ----------------------------------------------------------------------------- */

static int is_transient(const bson_error_t *e)
{
    if (e->domain == MONGOC_ERROR_STREAM || e->domain == MONGOC_ERROR_SERVER_SELECTION) return 1;
    switch (e->code) {
    case 6: case 7: case 89: case 91: case 189: case 262: case 9001: case 10107: case 11600: case 11602: case 13435:
    case 13436: case 112: case 117:
        return e->domain == MONGOC_ERROR_SERVER || e->domain == MONGOC_ERROR_WRITE_CONCERN;
    default: return 0;
    }
}

static void pause_ms(int ms)
{
    struct timespec t = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&t, NULL);
}

static int fail(kp_mg_client *c, kp_error *err, const char *what, const bson_error_t *e)
{
    return kp_error_set(err, KP_ERR_TARGET, NULL, 0, 0, "MongoDB at %s: %s failed: %s", c->uri, what, e->message);
}

static int to_bson(const cJSON *j, bson_t *b, kp_error *err)
{
    if (!j) { bson_init(b); return 0; }
    return kp_mg_ejson_to_bson(j, b, err);
}

/* ---- commands and finds -------------------------------------------------------------------- */

int kp_mg_command(kp_mg_client *c, const cJSON *command, cJSON **reply, int *server_code, kp_error *err)
{
    if (reply) *reply = NULL;
    if (server_code) *server_code = 0;
    bson_t cmd, out;
    if (to_bson(command, &cmd, err)) return -1;
    bson_error_t e;
    bool ok = false;
    for (int attempt = 0; attempt < RETRIES; attempt++) {
        ok = MG(mongoc_database_command_simple)(c->db, &cmd, NULL, &out, &e);
        if (ok || !is_transient(&e)) break;
        bson_destroy(&out);
        pause_ms(100 << attempt);
    }
    bson_destroy(&cmd);
    if (reply) *reply = kp_mg_bson_to_ejson(&out);
    bson_destroy(&out);
    if (!ok) {
        if (server_code && e.domain == MONGOC_ERROR_SERVER) *server_code = (int)e.code;
        const char *name = command && command->child ? command->child->string : "command";
        return fail(c, err, name, &e);
    }
    return 0;
}

int kp_mg_find(kp_mg_client *c, const char *collection, const cJSON *filter, const cJSON *options, cJSON **docs,
               kp_error *err)
{
    *docs = NULL;
    bson_t f, o;
    if (to_bson(filter, &f, err)) return -1;
    if (to_bson(options, &o, err)) { bson_destroy(&f); return -1; }
    mongoc_collection_t *coll = MG(mongoc_database_get_collection)(c->db, collection);
    cJSON *all = NULL;
    int rc = -1;
    for (int attempt = 0; attempt < RETRIES; attempt++) {
        cJSON_Delete(all);
        all = cJSON_CreateArray();
        mongoc_cursor_t *cur = MG(mongoc_collection_find_with_opts)(coll, &f, &o, NULL);
        const bson_t *doc;
        while (MG(mongoc_cursor_next)(cur, &doc)) {
            cJSON *j = kp_mg_bson_to_ejson(doc);
            if (!j) break;
            cJSON_AddItemToArray(all, j);
            c->docs_read++;
            c->bytes_read += (long)doc->len;
        }
        bson_error_t e;
        if (MG(mongoc_cursor_error)(cur, &e)) {
            MG(mongoc_cursor_destroy)(cur);
            if (is_transient(&e) && attempt + 1 < RETRIES) { pause_ms(100 << attempt); continue; }
            fail(c, err, "find", &e);
            break;
        }
        MG(mongoc_cursor_destroy)(cur);
        rc = 0;
        break;
    }
    MG(mongoc_collection_destroy)(coll);
    bson_destroy(&f);
    bson_destroy(&o);
    if (rc) { cJSON_Delete(all); return -1; }
    *docs = all;
    return 0;
}

long kp_mg_reply_long(const cJSON *v)
{
    double x = -1;
    if (cJSON_IsNumber(v)) x = v->valuedouble;
    const cJSON *t = cJSON_IsObject(v) ? v->child : NULL;
    if (t && cJSON_IsString(t)) x = strtod(t->valuestring, NULL);
    /* a broken or hostile server may answer anything: NaN, negative, beyond a long */
    if (!(x >= 0) || x > 9.0e15) return -1;
    return (long)x;
}

int kp_mg_count(kp_mg_client *c, const char *collection, const cJSON *filter, long *count, kp_error *err)
{
    cJSON *cmd = cJSON_CreateObject();
    cJSON_AddStringToObject(cmd, "count", collection);
    cJSON_AddItemToObject(cmd, "query", filter ? cJSON_Duplicate(filter, 1) : cJSON_CreateObject());
    cJSON *reply = NULL;
    int rc = kp_mg_command(c, cmd, &reply, NULL, err);
    cJSON_Delete(cmd);
    *count = rc ? 0 : kp_mg_reply_long(cJSON_GetObjectItemCaseSensitive(reply, "n"));
    cJSON_Delete(reply);
    if (rc == 0 && *count < 0) return kp_error_set(err, KP_ERR_TARGET, NULL, 0, 0, "MongoDB at %s answered count without n", c->uri);
    return rc;
}

/* ---- bulk writes ------------------------------------------------------------------------------ */

/* One unordered bulk insert of the documents whose state is 0 (to do). Marks 1 (stored), 2
 * (exists: replace next), -1 (failed for good). Returns -1 when the whole request failed
 * transiently (retry), -2 for good. */
static int bulk_pass(kp_mg_client *c, mongoc_collection_t *coll, cJSON *const *docs, size_t n, int *state, kp_error *err)
{
    bson_t opts;
    bson_init(&opts);
    BSON_APPEND_BOOL(&opts, "ordered", false);
    mongoc_bulk_operation_t *bulk = MG(mongoc_collection_create_bulk_operation_with_opts)(coll, &opts);
    bson_destroy(&opts);
    size_t *index = malloc(sizeof *index * (n ? n : 1));
    if (!index) {
        MG(mongoc_bulk_operation_destroy)(bulk);
        kp_error_set(err, KP_ERR_NOMEM, NULL, 0, 0, "out of memory");
        return -2;
    }
    size_t m = 0;
    int rc = 0;
    for (size_t i = 0; i < n && rc == 0; i++) {
        if (state[i] != 0) continue;
        bson_t doc;
        if (kp_mg_ejson_to_bson(docs[i], &doc, err)) { state[i] = -1; continue; }
        bson_error_t e;
        bool ok = MG(mongoc_bulk_operation_insert_with_opts)(bulk, &doc, NULL, &e);
        bson_destroy(&doc);
        if (!ok) { state[i] = -1; kp_error_set(err, KP_ERR_DATA, NULL, 0, 0, "a document MongoDB refuses: %s", e.message); continue; }
        index[m++] = i;
    }
    if (m == 0) { MG(mongoc_bulk_operation_destroy)(bulk); free(index); return 0; }
    bson_t reply;
    bson_error_t e;
    uint32_t ok = MG(mongoc_bulk_operation_execute)(bulk, &reply, &e);
    cJSON *r = kp_mg_bson_to_ejson(&reply);
    bson_destroy(&reply);
    MG(mongoc_bulk_operation_destroy)(bulk);
    const cJSON *errors = cJSON_GetObjectItemCaseSensitive(r, "writeErrors");
    if (!ok && (!errors || !errors->child)) {
        /* the request itself failed */
        cJSON_Delete(r);
        free(index);
        if (is_transient(&e)) return -1;
        fail(c, err, "a bulk write", &e);
        return -2;
    }
    for (size_t k = 0; k < m; k++) state[index[k]] = 1;
    for (const cJSON *we = errors ? errors->child : NULL; we; we = we->next) {
        long at = kp_mg_reply_long(cJSON_GetObjectItemCaseSensitive(we, "index"));
        long code = kp_mg_reply_long(cJSON_GetObjectItemCaseSensitive(we, "code"));
        if (at < 0 || (size_t)at >= m) continue;
        size_t i = index[at];
        if (code == 11000) state[i] = 2;
        else {
            state[i] = (code == 91 || code == 189 || code == 10107 || code == 11600 || code == 11602) ? 0 : -1;
            const cJSON *msg = cJSON_GetObjectItemCaseSensitive(we, "errmsg");
            if (state[i] < 0)
                kp_error_set(err, KP_ERR_TARGET, NULL, 0, 0, "MongoDB at %s refused a document (code %ld): %s", c->uri, code,
                             cJSON_IsString(msg) ? msg->valuestring : "no message");
        }
    }
    cJSON_Delete(r);
    free(index);
    return 0;
}

int kp_mg_bulk_store(kp_mg_client *c, const char *collection, cJSON *const *docs, size_t n, int replace, int *ok,
                     kp_error *err)
{
    int *state = calloc(n ? n : 1, sizeof *state);
    if (!state) return kp_error_set(err, KP_ERR_NOMEM, NULL, 0, 0, "out of memory");
    mongoc_collection_t *coll = MG(mongoc_database_get_collection)(c->db, collection);
    int rc = 0;
    kp_error pass_err;
    kp_error_clear(&pass_err);
    for (int attempt = 0; attempt < RETRIES; attempt++) {
        int r = bulk_pass(c, coll, docs, n, state, &pass_err);
        if (r == -2) { rc = -1; break; }
        /* the documents that exist are replaced: their _ids deleted in one command, then
         * inserted again (FerretDB's SQLite handler scans the collection for every replaceOne,
         * 40 ms each at 20,000 documents, and once for an $in; a seed resumed after most of a
         * collection went in spent minutes there). Not atomic per document: a reader between
         * the two sees it missing, which a seed does not promise against. */
        int exists = 0;
        for (size_t i = 0; replace && i < n; i++) exists |= state[i] == 2;
        if (r == 0 && exists) {
            cJSON *ids = cJSON_CreateArray();
            for (size_t i = 0; ids && i < n; i++) {
                const cJSON *id = state[i] == 2 ? cJSON_GetObjectItemCaseSensitive(docs[i], "_id") : NULL;
                if (id) cJSON_AddItemToArray(ids, cJSON_Duplicate(id, 1));
            }
            if (!ids) { rc = kp_error_set(&pass_err, KP_ERR_NOMEM, NULL, 0, 0, "out of memory"); break; }
            kp_error del_err;
            kp_error_clear(&del_err);
            if (kp_mg_delete_ids(c, collection, ids, &del_err) == 0) {
                for (size_t i = 0; i < n; i++)
                    if (state[i] == 2) state[i] = 0;
                r = bulk_pass(c, coll, docs, n, state, &pass_err);
            } else {
                pass_err = del_err; /* tried again below */
            }
            cJSON_Delete(ids);
            if (r == -2) { rc = -1; break; }
        }
        int pending = 0;
        for (size_t i = 0; i < n; i++) pending |= state[i] == 0 || (replace && state[i] == 2);
        if (!pending) break;
        pause_ms(100 << attempt);
        if (attempt + 1 == RETRIES)
            kp_error_set(&pass_err, KP_ERR_TARGET, NULL, 0, 0, "MongoDB at %s still failed a bulk write after %d attempts",
                         c->uri, RETRIES);
    }
    MG(mongoc_collection_destroy)(coll);
    for (size_t i = 0; i < n; i++) ok[i] = rc == 0 && state[i] == 1;
    int failed = 0;
    for (size_t i = 0; i < n; i++) failed |= !ok[i];
    if (failed || rc) *err = pass_err;
    if (failed && err->code == KP_OK)
        kp_error_set(err, KP_ERR_TARGET, NULL, 0, 0, "MongoDB at %s did not store %s documents", c->uri,
                     replace ? "some" : "already existing");
    free(state);
    return rc;
}

/* One delete command whose statements each remove up to DELETE_IDS_PER_STATEMENT documents
 * by {_id: {$in: [...]}}: MongoDB answers each from the _id index; FerretDB's SQLite handler
 * scans the collection once per statement (a statement per id took 40 ms each at 20,000
 * documents). */
#define DELETE_IDS_PER_STATEMENT 1000
int kp_mg_delete_ids(kp_mg_client *c, const char *collection, const cJSON *ids, kp_error *err)
{
    if (!ids || !ids->child) return 0;
    cJSON *cmd = cJSON_CreateObject();
    cJSON_AddStringToObject(cmd, "delete", collection);
    cJSON *deletes = cJSON_AddArrayToObject(cmd, "deletes");
    cJSON *in = NULL;
    size_t in_count = 0;
    for (const cJSON *id = ids->child; id; id = id->next) {
        if (!in || in_count == DELETE_IDS_PER_STATEMENT) {
            cJSON *d = cJSON_CreateObject();
            cJSON *q = cJSON_AddObjectToObject(d, "q");
            cJSON *match = cJSON_AddObjectToObject(q, "_id");
            in = cJSON_AddArrayToObject(match, "$in");
            in_count = 0;
            cJSON_AddNumberToObject(d, "limit", 0);
            cJSON_AddItemToArray(deletes, d);
        }
        cJSON_AddItemToArray(in, cJSON_Duplicate(id, 1));
        in_count++;
    }
    cJSON_AddBoolToObject(cmd, "ordered", 1);
    cJSON *reply = NULL;
    int rc = kp_mg_command(c, cmd, &reply, NULL, err);
    const cJSON *errors = cJSON_GetObjectItemCaseSensitive(reply, "writeErrors");
    if (rc == 0 && errors && errors->child) {
        const cJSON *msg = cJSON_GetObjectItemCaseSensitive(errors->child, "errmsg");
        rc = kp_error_set(err, KP_ERR_TARGET, NULL, 0, 0, "MongoDB at %s refused a delete in %s: %s", c->uri, collection,
                          cJSON_IsString(msg) ? msg->valuestring : "no message");
    }
    cJSON_Delete(cmd);
    cJSON_Delete(reply);
    return rc;
}

int kp_mg_drop_collection(kp_mg_client *c, const char *collection, kp_error *err)
{
    cJSON *cmd = cJSON_CreateObject();
    cJSON_AddStringToObject(cmd, "drop", collection);
    int code = 0;
    kp_error e;
    kp_error_clear(&e);
    int rc = kp_mg_command(c, cmd, NULL, &code, &e);
    cJSON_Delete(cmd);
    if (rc && (code == 26 || strstr(e.message, "ns not found"))) return 0; /* NamespaceNotFound */
    if (rc) *err = e;
    return rc;
}

int kp_mg_collection_names(kp_mg_client *c, cJSON **names, kp_error *err)
{
    *names = NULL;
    cJSON *cmd = cJSON_CreateObject();
    cJSON_AddNumberToObject(cmd, "listCollections", 1);
    cJSON_AddBoolToObject(cmd, "nameOnly", 1);
    cJSON *reply = NULL;
    int rc = kp_mg_command(c, cmd, &reply, NULL, err);
    cJSON_Delete(cmd);
    if (rc) { cJSON_Delete(reply); return -1; }
    cJSON *out = cJSON_CreateArray();
    const cJSON *cursor = cJSON_GetObjectItemCaseSensitive(reply, "cursor");
    const cJSON *batch = cJSON_GetObjectItemCaseSensitive(cursor, "firstBatch");
    for (const cJSON *x = batch ? batch->child : NULL; x; x = x->next) {
        const cJSON *name = cJSON_GetObjectItemCaseSensitive(x, "name");
        if (cJSON_IsString(name)) cJSON_AddItemToArray(out, cJSON_CreateString(name->valuestring));
    }
    cJSON_Delete(reply);
    *names = out;
    return 0;
}
