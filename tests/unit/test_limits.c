/*
 * test_limits.c — records too large for the target are refused per record, with the
 * file:line of their NDJSON line, before anything is written (issue #8).
 *
 * Two levels. Through the keyplan binary with the real DynamoDB and MongoDB backends:
 * records of 410 KB (above DynamoDB's 400 KB item) and 25 MB of BSON (above MongoDB's
 * 16 MB document) make `seed` exit 2 naming each line, and since the check runs before any
 * connection, the target given (a closed loopback port) is never contacted — a
 * connection attempt would have ended in exit 3. Through migrations/seed.c with a
 * small unit-test double backend: the generic guard (item bytes against
 * limits->max_item_bytes, whatever transform checks) and a limit only the connected
 * server knows (backend->server_item_limit, Cassandra's mutation size) refuse the
 * records before anything is dropped, created or written, even with --force.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "backends/backend.h"
#include "core/data.h"
#include "core/model.h"
#include "migrations/seed.h"
#include "support.h"

#define MODEL KP_SOURCE_DIR "/tests/fixtures/models/oversized-notes.json"

/* Writes DIR/Note.ndjson: one record per entry of body_sizes (0: a short body); with
 * `scores`, record `scores_at` (0-based) also gets that many small ints. */
static void write_notes_with_scores(const char *dir, const size_t *body_sizes, size_t count, size_t scores_at,
                                    size_t scores)
{
    char path[512];
    snprintf(path, sizeof path, "%s/Note.ndjson", dir);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    for (size_t i = 0; i < count; i++) {
        fprintf(f, "{\"id\": \"n%zu\", \"title\": \"note %zu\", \"body\": \"", i + 1, i + 1);
        size_t n = body_sizes[i] ? body_sizes[i] : 10;
        for (size_t k = 0; k < n; k++) fputc('a' + (int)(k % 26), f);
        fputc('"', f);
        if (scores && i == scores_at) {
            fputs(", \"scores\": [", f);
            for (size_t k = 0; k < scores; k++) fputs(k ? ",1" : "1", f);
            fputc(']', f);
        }
        fputs("}\n", f);
    }
    assert_int_equal(fclose(f), 0);
}

static void write_notes(const char *dir, const size_t *body_sizes, size_t count)
{
    write_notes_with_scores(dir, body_sizes, count, 0, 0);
}

static char *make_dir(void)
{
    char *dir = strdup("/tmp/keyplan-limits.XXXXXX");
    assert_non_null(mkdtemp(dir));
    return dir;
}

static void remove_dir(char *dir)
{
    char path[512];
    snprintf(path, sizeof path, "%s/Note.ndjson", dir);
    unlink(path);
    rmdir(dir);
    free(dir);
}

static void test_dynamodb_items_over_400_kb_are_each_named_and_nothing_is_contacted(void **state)
{
    (void)state;
    char *dir = make_dir();
    const size_t sizes[] = {0, 410 * 1024, 0, 500 * 1024};
    write_notes(dir, sizes, 4);
    char args[1024], *out = NULL;
    snprintf(args, sizeof args, "seed '%s' --db dynamodb --data '%s' --target dynamodb=http://127.0.0.1:9 --prefix kpsec --quiet",
             MODEL, dir);
    int rc = kp_test_run(args, &out);
    char where[600];
    snprintf(where, sizeof where, "%s/Note.ndjson:2:1: error: ", dir);
    assert_non_null(strstr(out, where));
    snprintf(where, sizeof where, "%s/Note.ndjson:4:1: error: ", dir);
    assert_non_null(strstr(out, where));
    assert_non_null(strstr(out, "400 KB"));
    assert_non_null(strstr(out, "2 records cannot be written to dynamodb"));
    assert_null(strstr(out, "Note.ndjson:1:"));
    assert_null(strstr(out, "Note.ndjson:3:"));
    assert_int_equal(rc, 2);   /* 3 would mean it tried the (closed) target */
    free(out);
    remove_dir(dir);
}

static void test_mongodb_documents_over_16_mb_are_named_and_nothing_is_contacted(void **state)
{
    (void)state;
    char *dir = make_dir();
    /* 1.5 million ints: 3 MB of NDJSON (under the loader's 16 MiB line), 25 MB of BSON */
    const size_t sizes[] = {0, 0, 0};
    write_notes_with_scores(dir, sizes, 3, 2, 1500000);
    char args[1024], *out = NULL;
    snprintf(args, sizeof args, "seed '%s' --db mongodb --data '%s' --target mongodb=mongodb://127.0.0.1:9/ --prefix kpsec --quiet",
             MODEL, dir);
    int rc = kp_test_run(args, &out);
    char where[600];
    snprintf(where, sizeof where, "%s/Note.ndjson:3:1: error: ", dir);
    assert_non_null(strstr(out, where));
    assert_non_null(strstr(out, "16 MB"));
    assert_int_equal(rc, 2);
    free(out);
    remove_dir(dir);
}

/* ==== the generic guard, with a unit-test double backend ================================= */

struct kp_conn { int unused; };

static struct {
    double server_limit;        /* what server_item_limit answers (0: cannot tell) */
    int is_foreign;             /* inspect reports containers keyplan did not create */
    int connects, drops, schemas, markers, submits;
    struct kp_conn conn;
} T;

static const kp_limits double_limits = {.max_item_bytes = 1000, .max_batch_write = 5};

/* One item per record, as large as the record's JSON; no size check of its own. */
static int double_transform(const kp_design *d, const kp_dataset *data, const kp_record *rec, kp_item_list *out,
                            kp_error *err)
{
    char *text = cJSON_PrintUnformatted(rec->object);
    kp_item *it = kp_item_list_push(out);
    it->container = rec->entity->name;
    it->entity = rec->entity;
    it->body = kp_data_copy(rec->object, NULL);
    it->id = strdup(text);
    it->bytes = strlen(text);
    free(text);
    return 0;
}

static int double_connect(const kp_target *t, kp_conn **out, kp_error *err) { T.connects++; *out = &T.conn; return 0; }
static int double_inspect(kp_conn *c, const kp_design *d, kp_target_state *out, kp_error *err)
{
    memset(out, 0, sizeof *out);
    out->exists = out->is_foreign = T.is_foreign;
    out->is_empty = !T.is_foreign;
    return 0;
}
static int double_apply_schema(kp_conn *c, const kp_design *d, kp_error *err) { T.schemas++; return 0; }
static int double_drop(kp_conn *c, const kp_design *d, kp_error *err) { T.drops++; return 0; }
static int double_write_marker(kp_conn *c, const kp_design *d, const cJSON *m, kp_error *err) { T.markers++; return 0; }
static int double_submit(kp_conn *c, kp_item_list *batch, kp_ack_fn on_ack, void *ctx, kp_error *err)
{
    T.submits++;
    return kp_error_set(err, KP_ERR_INTERNAL, NULL, 0, 0, "the test double was asked to write");
}
static int double_poll(kp_conn *c, int timeout_ms, kp_error *err) { return 0; }
static int double_server_limit(kp_conn *c, double *bytes, kp_error *err) { *bytes = T.server_limit; return 0; }
static void double_disconnect(kp_conn *c) {}

static const kp_backend double_backend = {
    .name = "double",
    .title = "Test double (unit tests)",
    .limits = &double_limits,
    .transform = double_transform,
    .connect = double_connect,
    .inspect = double_inspect,
    .apply_schema = double_apply_schema,
    .drop = double_drop,
    .write_marker = double_write_marker,
    .submit = double_submit,
    .poll = double_poll,
    .disconnect = double_disconnect,
    .server_item_limit = double_server_limit,
};

typedef struct fixture {
    char *dir;
    kp_model *model;
    kp_dataset *data;
    kp_design *design;
    kp_target target;
} fixture;

/* Notes of about 60, 700 and 1,500 bytes (their JSON), in that order, twice. */
static int setup(void **state)
{
    fixture *f = calloc(1, sizeof *f);
    f->dir = make_dir();
    const size_t sizes[] = {0, 650, 1450, 0, 650, 1450};
    write_notes(f->dir, sizes, 6);
    kp_error err;
    kp_model_options options = {.scale = 1};
    if (kp_model_load(MODEL, &options, &f->model, &err) || kp_dataset_load(f->model, f->dir, &f->data, &err)) {
        kp_error_print(stderr, &err);
        return -1;
    }
    f->design = kp_design_new(&double_backend, f->model, NULL, "double-layout");
    kp_design_add_container(f->design, "Note", "table");
    f->target = (kp_target){.database = "double", .prefix = "kpsec"};
    memset(&T, 0, sizeof T);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fixture *f = *state;
    kp_design_free(f->design);
    kp_dataset_free(f->data);
    kp_model_free(f->model);
    remove_dir(f->dir);
    free(f);
    return 0;
}

static kp_seed_options options_of(fixture *f)
{
    return (kp_seed_options){.model = f->model, .data = f->data, .data_dir = f->dir, .design = f->design,
                             .target = &f->target, .checkpoint_seconds = -1};
}

static void test_items_above_the_backend_limit_are_refused_even_when_transform_does_not_check(void **state)
{
    fixture *f = *state;
    kp_seed_options o = options_of(f);
    kp_seed_report r;
    kp_error err;
    assert_int_equal(kp_seed_run(&o, &r, &err), -1);
    assert_int_equal(err.code, KP_ERR_DATA);
    assert_int_equal(kp_error_exit_code(&err), 2);
    char file[600];
    snprintf(file, sizeof file, "%s/Note.ndjson", f->dir);
    assert_string_equal(err.file, file);
    assert_int_equal(err.line, 3);   /* the first of the two 1,500-byte notes (lines 3 and 6) */
    assert_non_null(strstr(err.message, "2 records cannot be written to double"));
    assert_non_null(strstr(err.message, "above the double item size limit (1000 bytes)"));
    assert_int_equal(T.connects, 0);
    assert_int_equal(T.submits + T.schemas + T.markers + T.drops, 0);
    kp_seed_report_free(&r);
}

static void test_a_lower_limit_the_server_announces_refuses_records_before_anything_is_dropped(void **state)
{
    fixture *f = *state;
    T.server_limit = 500;   /* the 700-byte notes now fit the backend's 1,000 but not the server */
    T.is_foreign = 1;       /* and --force would drop what is there: it must not get that far */
    kp_seed_options o = options_of(f);
    o.force = 1;
    /* only notes that fit the static limit, so the pre-scan passes */
    kp_record *const *records;
    size_t n = 0;
    records = kp_dataset_records(f->data, f->model->entities[0], &n);
    assert_int_equal(n, 6);
    kp_dataset *small;
    kp_error err;
    assert_int_equal(kp_dataset_new(f->model, &small, &err), 0);
    char *lines = NULL;
    size_t len = 0;
    FILE *mem = open_memstream(&lines, &len);
    for (size_t i = 0; i < n; i++) {
        char *text = cJSON_PrintUnformatted(records[i]->object);
        fprintf(mem, "%s\n", strlen(text) < 1000 ? text : "");
        free(text);
    }
    fclose(mem);
    assert_int_equal(kp_dataset_add_ndjson(small, f->model->entities[0], "Note.ndjson", lines, len, &err), 0);
    assert_int_equal(kp_dataset_finish(small, &err), 0);
    free(lines);
    o.data = small;
    o.data_dir = "data";

    kp_seed_report r;
    assert_int_equal(kp_seed_run(&o, &r, &err), -1);
    assert_int_equal(err.code, KP_ERR_DATA);
    assert_string_equal(err.file, "data/Note.ndjson");
    assert_int_equal(err.line, 2);
    assert_non_null(strstr(err.message, "2 records cannot be written to double"));
    assert_non_null(strstr(err.message, "the largest item this double server accepts (500 bytes)"));
    assert_int_equal(T.connects, 1);
    assert_int_equal(T.drops, 0);
    assert_int_equal(T.submits + T.schemas + T.markers, 0);
    kp_seed_report_free(&r);
    kp_dataset_free(small);
}

static void test_a_server_limit_above_every_item_changes_nothing(void **state)
{
    fixture *f = *state;
    T.server_limit = 100000;
    kp_seed_options o = options_of(f);
    kp_seed_report r;
    kp_error err;
    /* the static limit still refuses the 1,500-byte notes, and only they are named */
    assert_int_equal(kp_seed_run(&o, &r, &err), -1);
    assert_int_equal(err.line, 3);
    assert_non_null(strstr(err.message, "1000 bytes"));
    kp_seed_report_free(&r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_dynamodb_items_over_400_kb_are_each_named_and_nothing_is_contacted),
        cmocka_unit_test(test_mongodb_documents_over_16_mb_are_named_and_nothing_is_contacted),
        cmocka_unit_test_setup_teardown(test_items_above_the_backend_limit_are_refused_even_when_transform_does_not_check,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(test_a_lower_limit_the_server_announces_refuses_records_before_anything_is_dropped,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(test_a_server_limit_above_every_item_changes_nothing, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
