/*
 * cmd_expect.c — `keyplan expect`: the oracle's answer for one request of a pattern.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli/commands.h"
#include "core/json.h"
#include "core/data.h"
#include "core/model.h"
#include "core/mutate.h"
#include "core/oracle.h"
#include "core/params.h"
#include "core/sample.h"
#include "migrations/generate.h"
#include "migrations/write_gen.h"

const char cmd_expect_help[] =
    "usage: keyplan expect MODEL --data DIR --pattern NAME [--param NAME=VALUE ...]\n"
    "                      [--page TOKEN] [--sample SEED] [--after-write WRITE [--write-seed N]]\n"
    "                      [--scale F]\n\n"
    "Prints the response the model promises for one request of an access pattern,\n"
    "computed by the oracle from the sample data in DIR (DIR/<Entity>.ndjson, as\n"
    "`keyplan generate` writes it). This is exactly what `keyplan verify` compares a\n"
    "live server's answer with. Numbers keep their exact text.\n\n"
    "Paging: when the pattern pages with a token, the continuation token is in the\n"
    "response where the shape puts it ({\"token\": \"next\"}); when the token is out of\n"
    "band (\"$page\": \"token\"), it is printed on stderr as `next page: --page TOKEN`.\n"
    "On the last page there is no token (null). Pass it back with --page to get the\n"
    "next page: it resumes strictly after the last element of the previous one.\n\n"
    "options:\n"
    "  --data DIR            the sample data (required)\n"
    "  --pattern NAME        the access pattern (required)\n"
    "  --param NAME=VALUE    a parameter value, converted to the type of the attribute\n"
    "                        it is compared with (42 for an int, text for strings,\n"
    "                        JSON for objects and arrays); repeatable\n"
    "  --page TOKEN          resume a token-paged pattern after a previous page\n"
    "  --sample SEED         draw the parameters from the data (as verify does) instead\n"
    "                        of --param; they are printed on stderr\n"
    "  --after-write WRITE   first apply one generated operation of a write pattern to\n"
    "                        the data (in memory; files are not changed), printed on stderr\n"
    "  --write-seed N        the seed of that operation (default 1)\n"
    "  --scale F             the --scale the data was generated with (default 1)\n"
    "  --repeat N            with --sample: evaluate N drawn requests, print the last\n"
    "                        response and, on stderr, evaluations per second (benchmarks)\n\n"
    "exit status: 0 ok, 2 bad model, data or arguments\n\n"
    "example:\n"
    "  keyplan generate examples/saas-control-plane/model.json --scale 0.001 --out /tmp/saas\n"
    "  keyplan expect examples/saas-control-plane/model.json --data /tmp/saas \\\n"
    "      --pattern list-projects-newest --param id=acme\n"
    "  keyplan expect examples/saas-control-plane/model.json --data /tmp/saas \\\n"
    "      --pattern list-projects-newest --param id=acme --after-write create-project --write-seed 7\n";

static int fail(const kp_error *err)
{
    kp_error_print(stderr, err);
    return kp_error_exit_code(err);
}

static int usage(const char *message, const char *arg)
{
    fprintf(stderr, "keyplan expect: error: %s%s%s; see `keyplan expect --help`\n", message, arg ? " " : "",
            arg ? arg : "");
    return KP_EXIT_INPUT;
}

static void print_json_stderr(const char *label, const cJSON *json)
{
    char *text = cJSON_PrintUnformatted(json);
    fprintf(stderr, "%s%s\n", label, text ? text : "null");
    free(text);
}

static int apply_generated_write(const kp_model *model, kp_dataset *data, const char *name, uint64_t seed)
{
    kp_error err;
    const kp_write *write = kp_model_write(model, name);
    if (!write) {
        const char *names[257];
        size_t n = 0;
        for (size_t i = 0; i < model->write_count && n < 256; i++) names[n++] = model->writes[i]->name;
        names[n] = NULL;
        const char *guess = kp_suggest(name, names);
        fprintf(stderr, "keyplan expect: error: the model has no write '%s'%s%s%s\n", name,
                guess ? " (did you mean '" : "", guess ? guess : "", guess ? "'?)" : "");
        return KP_EXIT_INPUT;
    }
    kp_generator *gen = NULL;
    if (kp_generator_new(model, seed, &gen, &err)) return fail(&err);
    kp_write_request request;
    int rc = kp_write_generate(data, gen, write, seed, &request, &err);
    kp_generator_free(gen);
    if (rc) return fail(&err);
    cJSON *json = kp_write_request_to_json(&request);
    print_json_stderr("write: ", json);
    cJSON_Delete(json);
    kp_change_log log = {0};
    kp_write_result result;
    rc = kp_write_apply(data, &request, &log, &result, &err);
    kp_write_request_free(&request);
    if (rc) { kp_change_log_free(&log); return fail(&err); }
    fprintf(stderr, "write %s: %s, %zu change%s%s%s\n", name, kp_write_outcome_name(result.outcome), log.count,
            log.count == 1 ? "" : "s", result.reason[0] ? "; " : "", result.reason);
    kp_change_log_free(&log);
    return KP_EXIT_OK;
}

int cmd_expect(int argc, char **argv)
{
    static const struct option options[] = {
        {"data", required_argument, NULL, 'd'},        {"pattern", required_argument, NULL, 'p'},
        {"param", required_argument, NULL, 'a'},       {"page", required_argument, NULL, 'g'},
        {"sample", required_argument, NULL, 'S'},      {"after-write", required_argument, NULL, 'w'},
        {"write-seed", required_argument, NULL, 'W'},  {"scale", required_argument, NULL, 's'},
        {"repeat", required_argument, NULL, 'r'},
        {NULL, 0, NULL, 0}};
    const char *data_dir = NULL, *pattern_name = NULL, *page = NULL, *write_name = NULL;
    const char **param_args = calloc((size_t)argc + 1, sizeof *param_args);
    size_t param_count = 0;
    double sample_seed = -1, write_seed = 1, repeat = 1;
    kp_model_options model_options = {.scale = 1};
    int c;
    if (!param_args) return KP_EXIT_TARGET;
    optind = 1;
    while ((c = getopt_long(argc, argv, "", options, NULL)) != -1) {
        switch (c) {
        case 'd': data_dir = optarg; break;
        case 'p': pattern_name = optarg; break;
        case 'a': param_args[param_count++] = optarg; break;
        case 'g': page = optarg; break;
        case 'w': write_name = optarg; break;
        case 'S':
            if (kp_cli_parse_double(optarg, &sample_seed) || sample_seed < 0) { free(param_args); return usage("--sample takes a number >= 0, not", optarg); }
            break;
        case 'W':
            if (kp_cli_parse_double(optarg, &write_seed) || write_seed < 0) { free(param_args); return usage("--write-seed takes a number >= 0, not", optarg); }
            break;
        case 'r':
            if (kp_cli_parse_double(optarg, &repeat) || repeat < 1) { free(param_args); return usage("--repeat takes a number >= 1, not", optarg); }
            break;
        case 's':
            if (kp_cli_parse_double(optarg, &model_options.scale) || model_options.scale <= 0) { free(param_args); return usage("--scale takes a number above 0, not", optarg); }
            break;
        default:
            free(param_args);
            fprintf(stderr, "keyplan expect: see `keyplan expect --help`\n");
            return KP_EXIT_INPUT;
        }
    }
    if (optind != argc - 1) { free(param_args); return usage("give exactly one model file", NULL); }
    if (!data_dir) { free(param_args); return usage("--data DIR is required", NULL); }
    if (!pattern_name) { free(param_args); return usage("--pattern NAME is required", NULL); }
    if (repeat > 1 && sample_seed < 0) { free(param_args); return usage("--repeat needs --sample SEED", NULL); }

    kp_model *model = NULL;
    kp_dataset *data = NULL;
    kp_params *params = NULL;
    kp_oracle_result result = {0};
    kp_error err;
    int status = KP_EXIT_OK;
    if (kp_model_load(argv[optind], &model_options, &model, &err)) { status = fail(&err); goto done; }
    const kp_pattern *pattern = kp_model_pattern(model, pattern_name);
    if (!pattern) {
        const char *names[257];
        size_t n = 0;
        for (size_t i = 0; i < model->pattern_count && n < 256; i++) names[n++] = model->patterns[i]->name;
        names[n] = NULL;
        const char *guess = kp_suggest(pattern_name, names);
        fprintf(stderr, "keyplan expect: error: the model has no access pattern '%s'%s%s%s\n", pattern_name,
                guess ? " (did you mean '" : "", guess ? guess : "", guess ? "'?)" : "");
        status = KP_EXIT_INPUT;
        goto done;
    }
    if (kp_dataset_load(model, data_dir, &data, &err)) { status = fail(&err); goto done; }
    if (write_name && (status = apply_generated_write(model, data, write_name, (uint64_t)write_seed)) != KP_EXIT_OK)
        goto done;
    if (sample_seed >= 0) {
        kp_sampler *sampler = NULL;
        if (kp_sampler_new(data, (uint64_t)sample_seed, &sampler, &err)) { status = fail(&err); goto done; }
        /* warm the sampler's ranking of the root entity: the timing is the steady state */
        if (repeat > 1) kp_sample_record(sampler, pattern->root, kp_pattern_skew(model, pattern));
        struct timespec t0, t1;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        for (double i = 0; i < repeat; i++) {
            kp_params_free(params);
            params = NULL;
            if (kp_sample_params(sampler, pattern, &params, &err)) { kp_sampler_free(sampler); status = fail(&err); goto done; }
            if (i + 1 >= repeat) break;
            kp_oracle_result_free(&result);
            if (kp_oracle_run(data, pattern, params, page, &result, &err)) { kp_sampler_free(sampler); status = fail(&err); goto done; }
        }
        kp_sampler_free(sampler);
        if (repeat > 1) {
            kp_oracle_result_free(&result);
            if (kp_oracle_run(data, pattern, params, page, &result, &err)) { status = fail(&err); goto done; }
            clock_gettime(CLOCK_MONOTONIC, &t1);
            double seconds = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
            fprintf(stderr, "%s: %.0f evaluations in %.3f s (%.0f per second, parameter drawing included)\n",
                    pattern->name, repeat, seconds, seconds > 0 ? repeat / seconds : 0);
        }
    } else if (!(params = kp_params_new())) {
        status = KP_EXIT_TARGET;
        goto done;
    }
    for (size_t i = 0; i < param_count; i++) {
        const char *eq = strchr(param_args[i], '=');
        if (!eq || eq == param_args[i]) { status = usage("--param takes NAME=VALUE, not", param_args[i]); goto done; }
        char name[256];
        snprintf(name, sizeof name, "%.*s", (int)(eq - param_args[i]), param_args[i]);
        if (name[0] == ':') memmove(name, name + 1, strlen(name));
        const kp_param *p = kp_pattern_param(pattern, name);
        if (!p) {
            const char *names[257];
            size_t n = 0;
            for (size_t k = 0; k < pattern->param_count && n < 256; k++) names[n++] = pattern->params[k]->name;
            names[n] = NULL;
            const char *guess = kp_suggest(name, names);
            fprintf(stderr, "keyplan expect: error: pattern '%s' has no parameter :%s%s%s%s\n", pattern->name, name,
                    guess ? " (did you mean :" : "", guess ? guess : "", guess ? "?)" : "");
            status = KP_EXIT_INPUT;
            goto done;
        }
        cJSON *value = NULL;
        if (kp_params_parse_text(p, eq + 1, &value, &err)) { status = fail(&err); goto done; }
        if (kp_params_set(params, name, value)) { status = KP_EXIT_TARGET; goto done; }
    }
    if (sample_seed >= 0) {
        cJSON *json = kp_params_to_json(params);
        print_json_stderr("params: ", json);
        cJSON_Delete(json);
    }
    kp_oracle_result_free(&result);
    if (kp_oracle_run(data, pattern, params, page, &result, &err)) { status = fail(&err); goto done; }
    char *text = kp_json_print(result.response);
    puts(text ? text : "null");
    free(text);
    if (result.is_paged && !result.is_token_in_response && result.next_token)
        fprintf(stderr, "next page: --page %s\n", result.next_token);
done:
    kp_oracle_result_free(&result);
    kp_params_free(params);
    kp_dataset_free(data);
    kp_model_free(model);
    free(param_args);
    return status;
}
