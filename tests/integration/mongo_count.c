/*
 * mongo_count.c — counts the documents of collections with libmongoc alone, for
 * tests/integration/mongodb.sh: an independent read-back (not keyplan's find-based
 * read_back, but the countDocuments aggregation), so a seed that lost or duplicated a
 * document cannot also hide it.
 *
 *   mongo_count URI DATABASE COLLECTION...   prints "COLLECTION COUNT" per line
 *
 * Exit 0, or 3 when the server cannot be reached or answers an error.
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
        fprintf(stderr, "usage: mongo_count URI DATABASE COLLECTION...\n");
        return 2;
    }
    mongoc_log_set_handler(quiet, NULL);
    mongoc_init();
    bson_error_t e;
    mongoc_uri_t *uri = mongoc_uri_new_with_error(argv[1], &e);
    if (!uri) { fprintf(stderr, "mongo_count: %s\n", e.message); return 2; }
    mongoc_client_t *client = mongoc_client_new_from_uri(uri);
    int rc = 0;
    for (int i = 3; i < argc && rc == 0; i++) {
        mongoc_collection_t *coll = mongoc_client_get_collection(client, argv[2], argv[i]);
        bson_t filter = BSON_INITIALIZER;
        int64_t n = mongoc_collection_count_documents(coll, &filter, NULL, NULL, NULL, &e);
        if (n < 0) { fprintf(stderr, "mongo_count: %s.%s: %s\n", argv[2], argv[i], e.message); rc = 3; }
        else printf("%s %lld\n", argv[i], (long long)n);
        bson_destroy(&filter);
        mongoc_collection_destroy(coll);
    }
    mongoc_client_destroy(client);
    mongoc_uri_destroy(uri);
    mongoc_cleanup();
    return rc;
}
