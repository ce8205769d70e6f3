/*
 * fault_mongo_dump.c — dumps every document of some collections with libmongoc alone,
 * for the fault tests (tests/integration/faults_*.sh): an independent reader, not
 * keyplan's client, so a seed that lost, duplicated or changed a document cannot also
 * hide it. faults_readback.py compares what it prints with `keyplan seed --dry-run
 * --export-items` (content, not just counts).
 *
 *   fault_mongo_dump URI DATABASE COLLECTION...
 *       prints {"table": COLLECTION, "item": DOCUMENT} per line, DOCUMENT in canonical
 *       extended JSON, the collections in the order given
 *
 * Exit 0, 2 on bad arguments, 3 when the server cannot be reached or answers an error.
 * Invariant: it only reads.
 */
#include <mongoc/mongoc.h>
#include <stdio.h>

static void quiet(mongoc_log_level_t level, const char *domain, const char *message, void *data)
{
    (void)data;
    if (level <= MONGOC_LOG_LEVEL_ERROR) fprintf(stderr, "%s: %s\n", domain, message);
}

int main(int argc, char **argv)
{
    if (argc < 4) {
        fprintf(stderr, "usage: fault_mongo_dump URI DATABASE COLLECTION...\n");
        return 2;
    }
    mongoc_log_set_handler(quiet, NULL);
    mongoc_init();
    bson_error_t e;
    mongoc_uri_t *uri = mongoc_uri_new_with_error(argv[1], &e);
    if (!uri) { fprintf(stderr, "fault_mongo_dump: %s\n", e.message); return 2; }
    mongoc_client_t *client = mongoc_client_new_from_uri(uri);
    int rc = 0;
    for (int i = 3; i < argc && rc == 0; i++) {
        mongoc_collection_t *coll = mongoc_client_get_collection(client, argv[2], argv[i]);
        bson_t filter = BSON_INITIALIZER;
        mongoc_cursor_t *cursor = mongoc_collection_find_with_opts(coll, &filter, NULL, NULL);
        const bson_t *doc;
        while (mongoc_cursor_next(cursor, &doc)) {
            char *json = bson_as_canonical_extended_json(doc, NULL);
            /* collection names are plain identifiers here (a prefix and a container name) */
            printf("{\"table\":\"%s\",\"item\":%s}\n", argv[i], json ? json : "null");
            bson_free(json);
        }
        if (mongoc_cursor_error(cursor, &e)) {
            fprintf(stderr, "fault_mongo_dump: %s.%s: %s\n", argv[2], argv[i], e.message);
            rc = 3;
        }
        mongoc_cursor_destroy(cursor);
        bson_destroy(&filter);
        mongoc_collection_destroy(coll);
    }
    mongoc_client_destroy(client);
    mongoc_uri_destroy(uri);
    mongoc_cleanup();
    return rc;
}
