/*
 * cmd_diff.c — `keyplan diff OLD NEW`: what a model change does to its readers and to
 * each database's design. Parsing options and printing only; the work is in
 * migrations/model_diff.c.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/commands.h"
#include "core/json.h"
#include "core/model.h"
#include "migrations/model_diff.h"

const char cmd_diff_help[] =
    "usage: keyplan diff OLD NEW [--db LIST] [--format text|md|json] [--rate N] [--scale F]\n"
    "                    [--allow-breaking]\n\n"
    "Compares two versions of a model and plans the change per database. The model side:\n"
    "entities, attributes, keys, relations, access patterns (parameters and the JSON they\n"
    "return) and writes added, removed or changed. Breaking for readers of the old version:\n"
    "a pattern removed or whose parameters or response changed, an entity's key changed.\n"
    "The database side: the recommended design of each version compared, as steps —\n"
    "containers and indexes to create (with their backfill), items to rewrite (a key\n"
    "format, a copy, an embedding), entities moved, indexes and containers to drop (last,\n"
    "once nothing reads them) — each with the items it writes, their write units, the time\n"
    "at --rate and, where the database has unit prices, the on-demand cost; then what\n"
    "stays untouched. No server is needed.\n\n"
    "options:\n"
    "  --db LIST         dynamodb, mongodb, cassandra, a comma list, or all (default: all)\n"
    "  --format FORMAT   text (default), md (GitHub Markdown) or json (docs/output.md)\n"
    "  --rate N          items a backfill writes per second, for the times (default 1000)\n"
    "  --scale F         multiply both models' entity counts by F\n"
    "  --allow-breaking  exit 0 even when a change is breaking\n\n"
    "exit status: 0 no change, or no breaking change; 1 a breaking change (unless\n"
    "--allow-breaking); 2 bad input.\n\n"
    "example:\n"
    "  keyplan diff examples/saas-control-plane/versions/1-add-pattern-new-index/old.json \\\n"
    "      examples/saas-control-plane/versions/1-add-pattern-new-index/new.json --db dynamodb\n";

int cmd_diff(int argc, char **argv)
{
    static const struct option options[] = {
        {"db", required_argument, NULL, 'd'},    {"format", required_argument, NULL, 'f'},
        {"rate", required_argument, NULL, 'r'},  {"scale", required_argument, NULL, 's'},
        {"allow-breaking", no_argument, NULL, 'a'}, {NULL, 0, NULL, 0}};
    static const char *const formats[] = {"text", "md", "json", NULL};
    const char *db = "all";
    int format = 0, allow = 0, c;
    kp_model_options mo = {.scale = 1};
    kp_diff_options o = {0};
    optind = 1;
    while ((c = getopt_long(argc, argv, "", options, NULL)) != -1) {
        switch (c) {
        case 'd': db = optarg; break;
        case 'a': allow = 1; break;
        case 'f':
            if (kp_cli_parse_format(optarg, formats, &format)) {
                fprintf(stderr, "keyplan diff: error: --format is text, md or json, not '%s'\n", optarg);
                return KP_EXIT_INPUT;
            }
            break;
        case 'r':
            if (kp_cli_parse_double(optarg, &o.rate) || o.rate <= 0) {
                fprintf(stderr, "keyplan diff: error: --rate takes items per second above 0, not '%s'\n", optarg);
                return KP_EXIT_INPUT;
            }
            break;
        case 's':
            if (kp_cli_parse_double(optarg, &mo.scale) || mo.scale <= 0) {
                fprintf(stderr, "keyplan diff: error: --scale takes a number above 0, not '%s'\n", optarg);
                return KP_EXIT_INPUT;
            }
            break;
        default: fprintf(stderr, "keyplan diff: see `keyplan diff --help`\n"); return KP_EXIT_INPUT;
        }
    }
    if (optind != argc - 2) {
        fprintf(stderr, "keyplan diff: error: give two model files, the old version then the new; see `keyplan diff --help`\n");
        return KP_EXIT_INPUT;
    }
    kp_error err;
    const kp_backend *backends[9] = {0};
    if (kp_backend_parse_list(db, backends, 8, &err)) { kp_error_print(stderr, &err); return kp_error_exit_code(&err); }
    o.backends = backends;
    kp_model *old_model = NULL, *new_model = NULL;
    if (kp_model_load(argv[optind], &mo, &old_model, &err) || kp_model_load(argv[optind + 1], &mo, &new_model, &err)) {
        kp_error_print(stderr, &err);
        kp_model_free(old_model);
        return kp_error_exit_code(&err);
    }
    int breaking = 0, changes = 0;
    cJSON *doc = kp_model_diff(old_model, new_model, &o, &breaking, &changes, &err);
    int status = KP_EXIT_OK;
    if (!doc) {
        kp_error_print(stderr, &err);
        status = kp_error_exit_code(&err);
    } else {
        if (format == 2) {
            char *text = kp_json_print(doc);
            fputs(text ? text : "{}", stdout);
            fputc('\n', stdout);
            cJSON_free(text);
        } else {
            kp_model_diff_print(stdout, doc, format == 1);
        }
        if (breaking && !allow) {
            fprintf(stderr, "keyplan diff: %d breaking change%s for readers of the old version (--allow-breaking accepts them)\n",
                    breaking, breaking == 1 ? "" : "s");
            status = KP_EXIT_CHECK;
        }
        cJSON_Delete(doc);
    }
    kp_model_free(old_model);
    kp_model_free(new_model);
    return status;
}
