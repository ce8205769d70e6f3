/*
 * cmd_advise.c — `keyplan advise MODEL --db LIST`: the proposed design per database,
 * with every key, index and embedding explained and every access pattern costed.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "advisors/report.h"
#include "advisors/risk.h"
#include "backends/backend.h"
#include "cli/commands.h"
#include "core/json.h"
#include "core/model.h"

const char cmd_advise_help[] =
    "usage: keyplan advise MODEL [--db LIST] [--mix NAME] [--format text|md|json] [--scale F] [--strict]\n\n"
    "Proposes a physical design for each database: containers (tables, collections),\n"
    "keys and indexes with the access patterns that caused them, and per access\n"
    "pattern the operations in order, their round trips, items and bytes read (and\n"
    "read units for DynamoDB); per write the items, documents or rows written (write\n"
    "amplification). DynamoDB designs are single-table (item collections, GSIs, LSIs);\n"
    "MongoDB designs embed or reference per relation, with indexes; Cassandra designs\n"
    "are one query table per access pattern (Chebotko), with the copies writes keep.\n"
    "A pattern that only a scan could serve is reported as a defect of the design.\n\n"
    "options:\n"
    "  --db LIST           dynamodb, mongodb, cassandra, a comma list, or all (default: all)\n"
    "  --mix NAME          the workload mix to design for (default: the model's default)\n"
    "  --format FORMAT     text (default), md (GitHub Markdown) or json (docs/output.md)\n"
    "  --scale F           multiply every entity count by F\n"
    "  --strict            exit 1 when a design has a defect (a scan, a quota or size-limit breach)\n\n"
    "example:\n"
    "  keyplan advise examples/saas-control-plane/model.json --db dynamodb\n"
    "  keyplan advise examples/leaderboard/model.json --format json > design.json\n"
    "  keyplan advise examples/auction-mixes/model.json --db mongodb,cassandra --mix bidding\n";

int cmd_advise(int argc, char **argv)
{
    static const struct option options[] = {{"db", required_argument, NULL, 'd'},     {"mix", required_argument, NULL, 'm'},
                                            {"format", required_argument, NULL, 'f'}, {"scale", required_argument, NULL, 's'},
                                            {"strict", no_argument, NULL, 'S'},       {NULL, 0, NULL, 0}};
    static const char *const formats[] = {"text", "md", "json", NULL};
    const char *db = "all", *mix_name = NULL;
    int format = 0, strict = 0;
    kp_model_options model_options = {.scale = 1};
    int c;
    optind = 1;
    while ((c = getopt_long(argc, argv, "", options, NULL)) != -1) {
        switch (c) {
        case 'd': db = optarg; break;
        case 'm': mix_name = optarg; break;
        case 'f':
            if (kp_cli_parse_format(optarg, formats, &format)) {
                fprintf(stderr, "keyplan advise: error: --format is text, md or json, not '%s'\n", optarg);
                return KP_EXIT_INPUT;
            }
            break;
        case 's':
            if (kp_cli_parse_double(optarg, &model_options.scale) || model_options.scale <= 0) {
                fprintf(stderr, "keyplan advise: error: --scale takes a number above 0, not '%s'\n", optarg);
                return KP_EXIT_INPUT;
            }
            break;
        case 'S': strict = 1; break;
        default: fprintf(stderr, "keyplan advise: see `keyplan advise --help`\n"); return KP_EXIT_INPUT;
        }
    }
    if (optind != argc - 1) {
        fprintf(stderr, "keyplan advise: error: give exactly one model file; see `keyplan advise --help`\n");
        return KP_EXIT_INPUT;
    }
    kp_error err;
    const kp_backend *backends[8];
    if (kp_backend_parse_list(db, backends, 8, &err)) { kp_error_print(stderr, &err); return kp_error_exit_code(&err); }
    kp_model *model;
    if (kp_model_load(argv[optind], &model_options, &model, &err)) {
        kp_error_print(stderr, &err);
        return kp_error_exit_code(&err);
    }
    const kp_mix *mix = model->default_mix;
    if (mix_name) {
        mix = kp_model_mix(model, mix_name);
        if (!mix) {
            fprintf(stderr, "keyplan advise: error: the model declares no workload mix '%s'%s\n", mix_name,
                    model->mix_count ? "; `keyplan check` lists its mixes" : " (it declares none)");
            kp_model_free(model);
            return KP_EXIT_INPUT;
        }
    }
    kp_design *designs[8];
    kp_design_list lists[8];
    size_t n = 0;
    int status = KP_EXIT_OK;
    for (size_t i = 0; backends[i]; i++) {
        kp_propose_options po = {mix, 0};
        if (backends[i]->propose(model, &po, &lists[n], &err)) {
            kp_error_print(stderr, &err);
            status = kp_error_exit_code(&err);
            break;
        }
        designs[n] = lists[n].items[0];
        n++;
    }
    if (status == KP_EXIT_OK) {
        /* the report's tree is built, printed and dropped at once: from one arena */
        kp_arena tree = {0};
        kp_json_arena_begin(&tree);
        cJSON *doc = kp_advise_json(model, mix, designs, n);
        if (format == 2) {
            if (kp_json_write(stdout, doc)) {
                fprintf(stderr, "keyplan advise: error: the JSON report could not be written (out of memory or a failed "
                                "write: %s); what was written is incomplete\n", strerror(errno));
                status = KP_EXIT_INPUT;
            }
        } else if (format == 1) {
            kp_advise_print_markdown(stdout, doc);
        } else {
            kp_advise_print_text(stdout, doc, isatty(STDOUT_FILENO) && !getenv("NO_COLOR"));
        }
        kp_json_arena_end();
        kp_arena_free(&tree);
        /* --strict counts what compare counts: the design's defects and the limits it passes */
        for (size_t i = 0; i < n && strict; i++) {
            kp_risks risks = {0};
            kp_error risk_err;
            if (kp_risk_check(designs[i], mix, NULL, &risks, &risk_err)) {
                if (designs[i]->defect_count) status = KP_EXIT_CHECK;
                continue;
            }
            for (size_t k = 0; k < risks.count; k++) {
                if (risks.items[k].severity != KP_RISK_DEFECT) continue;
                status = KP_EXIT_CHECK;
                fprintf(stderr, "keyplan advise: --strict: %s/%s has a defect: %s\n", designs[i]->backend->name,
                        designs[i]->candidate, risks.items[k].message);
            }
            kp_risks_free(&risks);
        }
    }
    for (size_t i = 0; i < n; i++) kp_design_list_free(&lists[i]);
    kp_model_free(model);
    return status;
}
