/*
 * test_expect.c — acceptance on the SaaS example: `list-projects-newest` returns a
 * workspace's 20 newest projects newest first, its token returns the next 20, and
 * after a generated `create-project` the same request shows the new project first.
 * Data is generated at a small scale into a temporary directory.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "core/data.h"
#include "core/model.h"
#include "core/mutate.h"
#include "core/oracle.h"
#include "migrations/generate.h"
#include "migrations/write_gen.h"
#include "support.h"

#define MODEL KP_SOURCE_DIR "/examples/saas-control-plane/model.json"
#define SCALE "0.002"

typedef struct fixture {
    char dir[64];
    kp_model *model;
    kp_dataset *data;
} fixture;

static int setup(void **state)
{
    fixture *f = calloc(1, sizeof *f);
    kp_error err;
    kp_model_options options = {.scale = 0.002};
    snprintf(f->dir, sizeof f->dir, "/tmp/kp-test-expect-XXXXXX");
    if (!mkdtemp(f->dir)) return -1;
    if (kp_model_load(MODEL, &options, &f->model, &err)) { kp_error_print(stderr, &err); return -1; }
    kp_generate_options generate = {.seed = 1};
    if (kp_generate_dataset(f->model, f->dir, &generate, NULL, &err)) { kp_error_print(stderr, &err); return -1; }
    if (kp_dataset_load(f->model, f->dir, &f->data, &err)) { kp_error_print(stderr, &err); return -1; }
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fixture *f = *state;
    kp_dataset_free(f->data);
    for (size_t i = 0; i < f->model->entity_count; i++) {
        char path[256];
        snprintf(path, sizeof path, "%s/%s.ndjson", f->dir, f->model->entities[i]->name);
        unlink(path);
    }
    char tmp[128];
    snprintf(tmp, sizeof tmp, "%s/.tmp", f->dir);
    rmdir(tmp);
    rmdir(f->dir);
    kp_model_free(f->model);
    free(f);
    return 0;
}

/* The workspace's project (createdAt, id) pairs sorted newest first, by hand. */
static int compare_desc(const void *a, const void *b)
{
    const kp_record *x = *(kp_record *const *)a, *y = *(kp_record *const *)b;
    const char *cx = cJSON_GetObjectItemCaseSensitive(x->object, "createdAt")->valuestring;
    const char *cy = cJSON_GetObjectItemCaseSensitive(y->object, "createdAt")->valuestring;
    int c = strcmp(cy, cx);
    if (c) return c;
    return strcmp(cJSON_GetObjectItemCaseSensitive(x->object, "id")->valuestring,
                  cJSON_GetObjectItemCaseSensitive(y->object, "id")->valuestring);
}

static size_t projects_of(fixture *f, const char *workspace, kp_record ***out)
{
    const kp_entity *project = kp_model_entity(f->model, "Project");
    size_t n = 0, k = 0;
    kp_record *const *all = kp_dataset_records(f->data, project, &n);
    kp_record **mine = calloc(n ? n : 1, sizeof *mine);
    for (size_t i = 0; i < n; i++)
        if (strcmp(cJSON_GetObjectItemCaseSensitive(all[i]->object, "workspaceId")->valuestring, workspace) == 0)
            mine[k++] = all[i];
    qsort(mine, k, sizeof *mine, compare_desc);
    *out = mine;
    return k;
}

static kp_oracle_result list_projects(fixture *f, const char *workspace, const char *token)
{
    const kp_pattern *p = kp_model_pattern(f->model, "list-projects-newest");
    kp_params *params = kp_params_new();
    kp_params_set(params, "id", cJSON_CreateString(workspace));
    kp_oracle_result result;
    kp_error err;
    if (kp_oracle_run(f->data, p, params, token, &result, &err)) fail_msg("%s", err.message);
    kp_params_free(params);
    return result;
}

static void expect_page(const kp_oracle_result *result, kp_record **sorted, size_t from, size_t count)
{
    const cJSON *projects = cJSON_GetObjectItemCaseSensitive(result->response, "projects");
    assert_int_equal(cJSON_GetArraySize(projects), (int)count);
    size_t i = from;
    for (const cJSON *p = projects->child; p; p = p->next, i++) {
        assert_string_equal(cJSON_GetObjectItemCaseSensitive(p, "id")->valuestring,
                            cJSON_GetObjectItemCaseSensitive(sorted[i]->object, "id")->valuestring);
        assert_string_equal(cJSON_GetObjectItemCaseSensitive(p, "createdAt")->valuestring,
                            cJSON_GetObjectItemCaseSensitive(sorted[i]->object, "createdAt")->valuestring);
    }
}

static void test_newest_projects_page_by_token_and_show_a_new_project_first(void **state)
{
    fixture *f = *state;
    const kp_write *create = kp_model_write(f->model, "create-project");
    assert_non_null(create);
    kp_generator *gen = NULL;
    kp_error err;
    assert_int_equal(kp_generator_new(f->model, 7, &gen, &err), 0);
    /* a generated create-project whose workspace has at least 40 projects */
    kp_write_request request;
    char workspace[128] = "";
    kp_record **sorted = NULL;
    size_t count = 0;
    for (uint64_t seed = 1; seed < 200 && !workspace[0]; seed++) {
        assert_int_equal(kp_write_generate(f->data, gen, create, seed, &request, &err), 0);
        const cJSON *record = cJSON_GetArrayItem(request.records, 0);
        const char *ws = cJSON_GetObjectItemCaseSensitive(record, "workspaceId")->valuestring;
        count = projects_of(f, ws, &sorted);
        if (count >= 40) snprintf(workspace, sizeof workspace, "%s", ws);
        else { free(sorted); kp_write_request_free(&request); }
    }
    assert_true(workspace[0]);

    kp_oracle_result first = list_projects(f, workspace, NULL);
    assert_string_equal(cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(first.response, "workspace"),
                                                         "id")->valuestring, workspace);
    expect_page(&first, sorted, 0, 20);
    assert_non_null(first.next_token);
    assert_string_equal(cJSON_GetObjectItemCaseSensitive(first.response, "next")->valuestring, first.next_token);
    kp_oracle_result second = list_projects(f, workspace, first.next_token);
    expect_page(&second, sorted, 20, 20);
    assert_true(count > 40 ? second.next_token != NULL : second.next_token == NULL);

    kp_change_log log = {0};
    kp_write_result result;
    assert_int_equal(kp_write_apply(f->data, &request, &log, &result, &err), 0);
    assert_int_equal(result.outcome, KP_WRITE_APPLIED);
    const char *new_id = cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(request.records, 0), "id")->valuestring;
    kp_oracle_result after = list_projects(f, workspace, NULL);
    const cJSON *top = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(after.response, "projects"), 0);
    assert_string_equal(cJSON_GetObjectItemCaseSensitive(top, "id")->valuestring, new_id);
    /* the rest shifts by one */
    const cJSON *second_item = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(after.response, "projects"), 1);
    assert_string_equal(cJSON_GetObjectItemCaseSensitive(second_item, "id")->valuestring,
                        cJSON_GetObjectItemCaseSensitive(sorted[0]->object, "id")->valuestring);
    assert_int_equal(kp_change_log_undo(f->data, &log, 0, &err), 0);
    kp_oracle_result again = list_projects(f, workspace, NULL);
    expect_page(&again, sorted, 0, 20);

    kp_oracle_result_free(&first);
    kp_oracle_result_free(&second);
    kp_oracle_result_free(&after);
    kp_oracle_result_free(&again);
    kp_change_log_free(&log);
    kp_write_request_free(&request);
    kp_generator_free(gen);
    free(sorted);
}

static void test_expect_command_prints_pages_and_applies_a_generated_write(void **state)
{
    fixture *f = *state;
    char args[1024], *out = NULL;
    snprintf(args, sizeof args, "expect '%s' --scale " SCALE " --data '%s' --pattern list-projects-newest --sample 3",
             MODEL, f->dir);
    assert_int_equal(kp_test_run(args, &out), 0);
    assert_non_null(strstr(out, "params: {\"id\":"));
    assert_non_null(strstr(out, "\"projects\":"));
    free(out);
    snprintf(args, sizeof args, "expect '%s' --scale " SCALE " --data '%s' --pattern list-projects-newest --param "
             "id=nope --after-write create-project --write-seed 2", MODEL, f->dir);
    assert_int_equal(kp_test_run(args, &out), 0);
    assert_non_null(strstr(out, "write create-project: applied"));
    assert_non_null(strstr(out, "null"));
    free(out);
    snprintf(args, sizeof args, "expect '%s' --scale " SCALE " --data '%s' --pattern list-projects-newst", MODEL,
             f->dir);
    assert_int_equal(kp_test_run(args, &out), 2);
    assert_non_null(strstr(out, "has no access pattern 'list-projects-newst' (did you mean 'list-projects-newest'?)"));
    free(out);
    snprintf(args, sizeof args, "expect '%s' --scale " SCALE " --data '%s' --pattern list-projects-newest "
             "--param id=x --page garbage", MODEL, f->dir);
    assert_int_equal(kp_test_run(args, &out), 2);
    assert_non_null(strstr(out, "is not a page token"));
    free(out);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_newest_projects_page_by_token_and_show_a_new_project_first),
        cmocka_unit_test(test_expect_command_prints_pages_and_applies_a_generated_write),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
