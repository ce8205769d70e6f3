/*
 * client.h — keyplan's MongoDB client on libmongoc: one connection string, commands
 * and finds with cursors read to the end, unordered bulk writes, transient errors
 * retried, every command counted (the requests verify measures).
 *
 * Documents cross this interface as cJSON in canonical Extended JSON (docs.c).
 * Invariant: no message this client writes carries the connection string's password.
 */
#ifndef KP_MONGO_CLIENT_H
#define KP_MONGO_CLIENT_H

#include <cjson/cJSON.h>
#include <mongoc/mongoc.h>

#include "core/error.h"

typedef struct kp_mg_client kp_mg_client;

/* Opens a client for `uri` (NULL: $MONGODB_URI; neither: a usage error saying what to
 * set) and checks that the server answers (ping). The database is the URI's path, or
 * — when it names none — the one kp_mg_client_default_database chooses ("keyplan"
 * until then). */
int kp_mg_client_open(const char *uri, int is_insecure, kp_mg_client **out, kp_error *err);
void kp_mg_client_close(kp_mg_client *c);

/* TLS policy (issue #8): 0 when the parsed URI may be used — it asks for TLS (which
 * libmongoc verifies unless tlsInsecure), or every host is loopback, or is_insecure;
 * else KP_ERR_USAGE naming the host (`redacted` is the URI for the message). */
int kp_mg_uri_check(const mongoc_uri_t *uri, int is_insecure, const char *redacted, kp_error *err);
/* The connection string with its password replaced by "****". */
const char *kp_mg_client_uri(const kp_mg_client *c);
const char *kp_mg_client_database(const kp_mg_client *c);
/* The database to use when the URI names none (keyplan uses the model's name, so two
 * models never share collections). */
void kp_mg_client_default_database(kp_mg_client *c, const char *name);
/* Commands sent since the client opened (find, getMore, count, insert, ...). */
long kp_mg_client_requests(const kp_mg_client *c);
/* Documents read so far (those finds returned, every attempt's; a count returns none) and their
 * BSON bytes: execute reports the difference over one page. */
void kp_mg_client_reads(const kp_mg_client *c, long *docs, long *bytes);
/* Copies `uri` with any password replaced by "****" into buf. */
void kp_mg_redact_uri(const char *uri, char *buf, size_t size);

/* A database command; *reply (may be NULL) receives the answer. A server error keeps
 * its code in *server_code (may be NULL; 0 when the command succeeded or failed in the
 * client). */
int kp_mg_command(kp_mg_client *c, const cJSON *command, cJSON **reply, int *server_code, kp_error *err);

/* find on a collection with options (sort, limit, skip, batchSize, ...), every batch
 * read: *docs is a new array of documents. */
int kp_mg_find(kp_mg_client *c, const char *collection, const cJSON *filter, const cJSON *options, cJSON **docs,
               kp_error *err);
/* A non-negative integer in a reply field (a count, an index, an error code), given as
 * a JSON number or an Extended JSON wrapper ({"$numberLong": "7"}); -1 when it is
 * absent, not a number, negative or beyond 9e15 (a broken answer). */
long kp_mg_reply_long(const cJSON *v);
/* Documents matching a filter (the count command). */
int kp_mg_count(kp_mg_client *c, const char *collection, const cJSON *filter, long *count, kp_error *err);

/* One unordered bulk write of documents. ok[i] says whether document i is now stored
 * (inserted, or — when `replace` — replaced by _id, upserting); a document that
 * already exists under its _id is replaced when `replace`, else counted as a failure
 * with E11000. Transient errors are retried. Returns -1 only when the request itself
 * failed (then err says why and ok[] is all 0). */
int kp_mg_bulk_store(kp_mg_client *c, const char *collection, cJSON *const *docs, size_t n, int replace, int *ok,
                     kp_error *err);
/* Deletes documents by _id (an array of _id values), in one ordered request. */
int kp_mg_delete_ids(kp_mg_client *c, const char *collection, const cJSON *ids, kp_error *err);
/* Drops a collection; absent is not an error. */
int kp_mg_drop_collection(kp_mg_client *c, const char *collection, kp_error *err);
/* The names of the database's collections (a new array of strings). */
int kp_mg_collection_names(kp_mg_client *c, cJSON **names, kp_error *err);

#endif
