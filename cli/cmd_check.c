/*
 * cmd_check.c — `keyplan check MODEL`: validate a model and summarise it.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>

#include "cli/commands.h"
#include "core/json.h"
#include "core/model.h"

const char cmd_check_help[] =
    "usage: keyplan check MODEL [--format text|json] [--scale F]\n\n"
    "Validates a model file and prints a summary: entities with their counts,\n"
    "relations with cardinality and fan-out, access patterns with their parameters\n"
    "and response shape, writes and the workload. Errors are printed as\n"
    "file:line:col: error: <what to fix> and exit with status 2.\n\n"
    "options:\n"
    "  --format text|json  text (default) or the parsed model as JSON (docs/output.md)\n"
    "  --scale F           multiply every entity count by F (fan-outs are kept)\n\n"
    "example:\n"
    "  keyplan check examples/saas-control-plane/model.json\n"
    "  keyplan check examples/leaderboard/model.json --format json\n";

int cmd_check(int argc, char **argv)
{
    static const struct option options[] = {
        {"format", required_argument, NULL, 'f'}, {"scale", required_argument, NULL, 's'}, {NULL, 0, NULL, 0}};
    static const char *const formats[] = {"text", "json", NULL};
    int format = 0;
    kp_model_options model_options = {.scale = 1};
    int c;
    optind = 1;
    while ((c = getopt_long(argc, argv, "", options, NULL)) != -1) {
        switch (c) {
        case 'f':
            if (kp_cli_parse_format(optarg, formats, &format)) {
                fprintf(stderr, "keyplan check: error: --format is text or json, not '%s'\n", optarg);
                return KP_EXIT_INPUT;
            }
            break;
        case 's':
            if (kp_cli_parse_double(optarg, &model_options.scale) || model_options.scale <= 0) {
                fprintf(stderr, "keyplan check: error: --scale takes a number above 0, not '%s'\n", optarg);
                return KP_EXIT_INPUT;
            }
            break;
        default:
            fprintf(stderr, "keyplan check: see `keyplan check --help`\n");
            return KP_EXIT_INPUT;
        }
    }
    if (optind != argc - 1) {
        fprintf(stderr, "keyplan check: error: give exactly one model file; see `keyplan check --help`\n");
        return KP_EXIT_INPUT;
    }
    kp_model *model;
    kp_error err;
    if (kp_model_load(argv[optind], &model_options, &model, &err)) {
        kp_error_print(stderr, &err);
        return kp_error_exit_code(&err);
    }
    if (format == 1) {
        cJSON *json = kp_model_to_json(model);
        char *text = kp_json_print(json);
        puts(text ? text : "{}");
        cJSON_free(text);
        cJSON_Delete(json);
    } else {
        kp_model_print_summary(stdout, model);
        printf("\nok: the model is valid\n");
    }
    kp_model_free(model);
    return KP_EXIT_OK;
}
