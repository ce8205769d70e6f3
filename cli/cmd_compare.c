/*
 * cmd_compare.c — `keyplan compare MODEL`: every candidate design of every database,
 * costed and risk-checked per workload mix, side by side, with a recommendation.
 * Parsing options and printing only; the work is in advisors/compare.c.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "advisors/compare.h"
#include "cli/commands.h"
#include "core/json.h"
#include "core/data.h"
#include "core/model.h"

const char cmd_compare_help[] =
    "usage: keyplan compare MODEL [--db LIST] [--mix NAME] [--format text|md|json|html] [--out FILE]\n"
    "                       [--data DIR] [--samples N] [--seed N] [--scale F] [--single]\n"
    "                       [--region NAME] [--capacity on-demand|provisioned] [--price-read USD]\n"
    "                       [--price-write USD] [--price-storage USD] [--price-hour USD] [--strict]\n\n"
    "Compares the designs of each database — the recommended one and the alternatives the\n"
    "backend proposes (DynamoDB single-table vs normalised, MongoDB documents vs embed vs\n"
    "reference) — per access pattern (round trips, requests, items and bytes read, read\n"
    "units), per write (items written with index entries and copies), in totals per\n"
    "second and storage, with risks (hot partitions, size limits, scans, indexes, write\n"
    "amplification) and a recommendation with its reasons, for every workload mix the\n"
    "model declares (or the one --mix names). No server is needed.\n\n"
    "Load is compared in neutral I/O units: a read unit per 4 KB read (at least one per\n"
    "request), a write unit per 1 KB written (at least one per item, index entry or copy),\n"
    "a write unit weighing 5 read units.\n\n"
    "Each design is priced as the managed service that runs it, from a dated table of list\n"
    "prices (2024-11; a month is 30 days): DynamoDB on-demand or provisioned per region\n"
    "(us-east-1 by default: $0.125 per million read units, $0.625 per million write units,\n"
    "$0.25 per GB-month), Cassandra as Amazon Keyspaces (its request units are the neutral\n"
    "units above), MongoDB as an Atlas cluster on AWS (the smallest tier whose disk holds the\n"
    "data with 30 % headroom and whose memory a quarter of it; shards of the largest beyond).\n"
    "Provisioned capacity is sized at the mix's rates at 70 % utilisation. Check the figures\n"
    "against the providers' pages before quoting them; the options below override them.\n\n"    "options:\n"
    "  --db LIST            dynamodb, mongodb, cassandra, a comma list, or all (default: all)\n"
    "  --mix NAME           only this workload mix (default: every declared mix, the default first)\n"
    "  --format FORMAT      text (default), md (GitHub Markdown, at most 65,536 characters),\n"
    "                       json (docs/output.md) or html (one self-contained page with diagrams)\n"
    "  --out FILE           write the report to FILE instead of standard output\n"
    "  --data DIR           simulate the key skew over this sample data (hot partitions of reads\n"
    "                       and writes); without it, hot reads are estimated from counts and skew\n"
    "  --samples N          requests drawn per pattern in the simulation (default 2000)\n"
    "  --seed N             the simulation's seed (default 1)\n"
    "  --scale F            multiply every entity count by F\n"
    "  --single             only each database's recommended design (no alternatives)\n"
    "  --region NAME        price DynamoDB and Keyspaces in this region (DynamoDB's table: us-east-1,\n"
    "                       us-west-2, eu-west-1, eu-central-1, ap-northeast-1; others need --price-*)\n"
    "  --capacity MODE      on-demand (default) or provisioned read and write capacity\n"
    "  --price-read USD     price of a million read units (of a read unit-hour when provisioned)\n"
    "  --price-write USD    price of a million write units (of a write unit-hour when provisioned)\n"
    "  --price-storage USD  price of a GB-month of storage\n"
    "  --price-hour USD     price of an hour of the MongoDB Atlas tier chosen (per shard)\n"
    "  --strict             exit 1 when the recommended design has a defect\n\n"
    "examples:\n"
    "  keyplan compare examples/auction-mixes/model.json\n"
    "  keyplan compare examples/saas-control-plane/model.json --format md --out review.md\n"
    "  keyplan compare examples/saas-control-plane/model.json --format html --out review.html\n";

static int parse_price(const char *arg, double *out)
{
    return kp_cli_parse_double(arg, out) || *out < 0;
}

int cmd_compare(int argc, char **argv)
{
    static const struct option options[] = {
        {"db", required_argument, NULL, 'd'},          {"mix", required_argument, NULL, 'm'},
        {"format", required_argument, NULL, 'f'},      {"out", required_argument, NULL, 'o'},
        {"data", required_argument, NULL, 'D'},        {"samples", required_argument, NULL, 'n'},
        {"seed", required_argument, NULL, 'e'},        {"scale", required_argument, NULL, 's'},
        {"single", no_argument, NULL, '1'},            {"price-read", required_argument, NULL, 'R'},
        {"price-write", required_argument, NULL, 'W'}, {"price-storage", required_argument, NULL, 'G'},
        {"price-hour", required_argument, NULL, 'H'},  {"region", required_argument, NULL, 'r'},
        {"capacity", required_argument, NULL, 'c'},    {"strict", no_argument, NULL, 'S'},
        {NULL, 0, NULL, 0}};
    static const char *const formats[] = {"text", "md", "json", "html", NULL};
    const char *db = "all", *mix_name = NULL, *out_path = NULL, *data_dir = NULL;
    int format = 0, strict = 0;
    double samples = 0, seed = 1;
    kp_model_options model_options = {.scale = 1};
    kp_compare_options co = {.prices = KP_PRICES_DEFAULT};
    int c;
    optind = 1;
    while ((c = getopt_long(argc, argv, "", options, NULL)) != -1) {
        switch (c) {
        case 'd': db = optarg; break;
        case 'm': mix_name = optarg; break;
        case 'o': out_path = optarg; break;
        case 'D': data_dir = optarg; break;
        case '1': co.is_single_candidate = 1; break;
        case 'S': strict = 1; break;
        case 'f':
            if (kp_cli_parse_format(optarg, formats, &format)) {
                fprintf(stderr, "keyplan compare: error: --format is text, md, json or html, not '%s'\n", optarg);
                return KP_EXIT_INPUT;
            }
            break;
        case 'n':
            if (kp_cli_parse_double(optarg, &samples) || samples < 1 || samples > 1e7) {
                fprintf(stderr, "keyplan compare: error: --samples takes a whole number from 1 to 10000000, not '%s'\n", optarg);
                return KP_EXIT_INPUT;
            }
            break;
        case 'e':
            if (kp_cli_parse_double(optarg, &seed) || seed < 0) {
                fprintf(stderr, "keyplan compare: error: --seed takes a whole number, not '%s'\n", optarg);
                return KP_EXIT_INPUT;
            }
            break;
        case 's':
            if (kp_cli_parse_double(optarg, &model_options.scale) || model_options.scale <= 0) {
                fprintf(stderr, "keyplan compare: error: --scale takes a number above 0, not '%s'\n", optarg);
                return KP_EXIT_INPUT;
            }
            break;
        case 'R': case 'W': case 'G': case 'H': {
            double *slot = c == 'R' ? &co.prices.per_million_reads : c == 'W' ? &co.prices.per_million_writes
                         : c == 'G' ? &co.prices.per_gb_month : &co.prices.per_hour;
            if (parse_price(optarg, slot)) {
                fprintf(stderr, "keyplan compare: error: %s takes a price in USD of 0 or more, not '%s'\n",
                        c == 'R' ? "--price-read" : c == 'W' ? "--price-write" : c == 'G' ? "--price-storage" : "--price-hour",
                        optarg);
                return KP_EXIT_INPUT;
            }
            break;
        }
        case 'r': co.prices.region = optarg; break;
        case 'c':
            if (strcmp(optarg, "on-demand") != 0 && strcmp(optarg, "provisioned") != 0) {
                fprintf(stderr, "keyplan compare: error: --capacity is on-demand or provisioned, not '%s'\n", optarg);
                return KP_EXIT_INPUT;
            }
            co.prices.is_provisioned = strcmp(optarg, "provisioned") == 0;
            break;
        default: fprintf(stderr, "keyplan compare: see `keyplan compare --help`\n"); return KP_EXIT_INPUT;
        }
    }
    if (optind != argc - 1) {
        fprintf(stderr, "keyplan compare: error: give exactly one model file; see `keyplan compare --help`\n");
        return KP_EXIT_INPUT;
    }
    kp_error err;
    const kp_backend *backends[9] = {0};
    if (kp_backend_parse_list(db, backends, 8, &err)) { kp_error_print(stderr, &err); return kp_error_exit_code(&err); }
    kp_model *model;
    if (kp_model_load(argv[optind], &model_options, &model, &err)) { kp_error_print(stderr, &err); return kp_error_exit_code(&err); }
    if (mix_name) {
        co.mix = kp_model_mix(model, mix_name);
        if (!co.mix) {
            fprintf(stderr, "keyplan compare: error: the model declares no workload mix '%s'%s\n", mix_name,
                    model->mix_count ? "; `keyplan check` lists its mixes" : " (it declares none)");
            kp_model_free(model);
            return KP_EXIT_INPUT;
        }
    }
    kp_dataset *data = NULL;
    if (data_dir && kp_dataset_load(model, data_dir, &data, &err)) {
        kp_error_print(stderr, &err);
        kp_model_free(model);
        return kp_error_exit_code(&err);
    }
    co.backends = backends;
    co.designs_as = format == 2 ? KP_COMPARE_DESIGNS_TEXT : format == 3 ? KP_COMPARE_DESIGNS_TREE : KP_COMPARE_DESIGNS_NONE;
    co.data = data;
    co.samples = (int)samples;
    co.seed = (uint64_t)seed;
    int status = KP_EXIT_OK;
    kp_arena tree = {0}; /* the document, dropped at once */
    co.tree_arena = &tree;
    cJSON *doc = kp_compare(model, &co, &err);
    if (!doc) {
        kp_error_print(stderr, &err);
        status = kp_error_exit_code(&err);
    } else {
        FILE *out = out_path ? fopen(out_path, "w") : stdout;
        if (!out) {
            fprintf(stderr, "%s: error: cannot write the report: %s; check the folder exists and is writable\n", out_path, strerror(errno));
            status = KP_EXIT_INPUT;
        } else {
            if (format == 2) {
                if (kp_json_write(out, doc)) {
                    fprintf(stderr, "keyplan compare: error: the JSON report could not be written (out of memory or a "
                                    "failed write: %s); what was written is incomplete\n", strerror(errno));
                    status = KP_EXIT_INPUT;
                }
            } else if (format == 1) {
                char *md = kp_compare_markdown(doc);
                fputs(md ? md : "", out);
                free(md);
            } else if (format == 3) {
                kp_compare_print_html(out, doc);
            } else {
                kp_compare_print_text(out, doc, !out_path && isatty(STDOUT_FILENO) && !getenv("NO_COLOR"));
            }
            if (out_path && fclose(out)) {
                fprintf(stderr, "%s: error: cannot write the report: %s\n", out_path, strerror(errno));
                status = KP_EXIT_INPUT;
            }
        }
        const cJSON *rec = kp_compare_recommendation(doc, NULL);
        const cJSON *mixes = cJSON_GetObjectItem(doc, "mixes");
        const cJSON *ds = mixes && mixes->child ? cJSON_GetObjectItem(mixes->child, "designs") : NULL;
        for (const cJSON *d = ds ? ds->child : NULL; d && strict && status == KP_EXIT_OK; d = d->next) {
            const cJSON *name = cJSON_GetObjectItem(d, "design"), *want = cJSON_GetObjectItem(rec, "design");
            if (cJSON_IsString(name) && cJSON_IsString(want) && strcmp(name->valuestring, want->valuestring) == 0 &&
                cJSON_GetObjectItem(d, "defects")->valuedouble > 0)
                status = KP_EXIT_CHECK;
        }
    }
    kp_arena_free(&tree);
    kp_dataset_free(data);
    kp_model_free(model);
    return status;
}
