/*
 * cmd_generate.c — `keyplan generate MODEL --out DIR`: write sample data, one NDJSON
 * file per entity. Parsing options and printing only; the work is in
 * migrations/generate.c.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "cli/commands.h"
#include "core/model.h"
#include "migrations/generate.h"

const char cmd_generate_help[] =
    "usage: keyplan generate MODEL --out DIR [--scale F] [--seed N] [--quiet]\n\n"
    "Generates sample data for a model: DIR/<Entity>.ndjson for every entity, one\n"
    "record per line in canonical JSON (keys in the entity's attribute order).\n"
    "Counts come from the model (times --scale); children spread over parents with\n"
    "each relation's fan-out average, maximum and skew; every foreign key names an\n"
    "existing record, keys and unique attributes never repeat, copies equal their\n"
    "source and derived aggregates are computed from the generated records.\n"
    "The same model, scale and seed always give byte-identical files. Files are\n"
    "written under DIR/.tmp and moved into DIR when all are complete.\n\n"
    "options:\n"
    "  --out DIR     directory to write (created when missing)\n"
    "  --scale F     multiply every entity count by F (fan-outs are kept)\n"
    "  --seed N      seed of the random draws (default 1); it is printed\n"
    "  --quiet       print nothing but errors\n\n"
    "example:\n"
    "  keyplan generate examples/saas-control-plane/model.json --out data/saas --scale 0.01 --seed 7\n";

typedef struct progress_ctx {
    int is_quiet;
} progress_ctx;

static void print_progress(const kp_entity *entity, int64_t records, int64_t bytes, void *ctx)
{
    const progress_ctx *p = ctx;
    if (p->is_quiet) return;
    printf("  %-24s %12" PRId64 " records %12.1f KiB\n", entity->name, records, (double)bytes / 1024.0);
    long long asked = llround(entity->count);
    if (records < asked)
        printf("  %-24s (the model asks for %lld; only %" PRId64 " have distinct keys at this scale)\n", "", asked,
               records);
}

int cmd_generate(int argc, char **argv)
{
    static const struct option options[] = {{"out", required_argument, NULL, 'o'},
                                            {"scale", required_argument, NULL, 's'},
                                            {"seed", required_argument, NULL, 'n'},
                                            {"quiet", no_argument, NULL, 'q'},
                                            {NULL, 0, NULL, 0}};
    kp_model_options model_options = {.scale = 1};
    const char *out = NULL;
    uint64_t seed = 1;
    progress_ctx progress = {0};
    int c;
    optind = 1;
    while ((c = getopt_long(argc, argv, "", options, NULL)) != -1) {
        switch (c) {
        case 'o':
            out = optarg;
            break;
        case 's':
            if (kp_cli_parse_double(optarg, &model_options.scale) || model_options.scale <= 0) {
                fprintf(stderr, "keyplan generate: error: --scale takes a number above 0, not '%s'\n", optarg);
                return KP_EXIT_INPUT;
            }
            break;
        case 'n': {
            char *end;
            errno = 0;
            unsigned long long v = strtoull(optarg, &end, 10);
            if (end == optarg || *end || errno || optarg[0] == '-') {
                fprintf(stderr, "keyplan generate: error: --seed takes a whole number ≥ 0, not '%s'\n", optarg);
                return KP_EXIT_INPUT;
            }
            seed = (uint64_t)v;
            break;
        }
        case 'q':
            progress.is_quiet = 1;
            break;
        default:
            fprintf(stderr, "keyplan generate: see `keyplan generate --help`\n");
            return KP_EXIT_INPUT;
        }
    }
    if (optind != argc - 1) {
        fprintf(stderr, "keyplan generate: error: give exactly one model file; see `keyplan generate --help`\n");
        return KP_EXIT_INPUT;
    }
    if (!out) {
        fprintf(stderr, "keyplan generate: error: say where to write with --out DIR; see `keyplan generate --help`\n");
        return KP_EXIT_INPUT;
    }
    kp_model *model;
    kp_error err;
    if (kp_model_load(argv[optind], &model_options, &model, &err)) {
        kp_error_print(stderr, &err);
        return kp_error_exit_code(&err);
    }
    if (!progress.is_quiet)
        printf("generating %s into %s (seed %" PRIu64 ", scale %g)\n", model->name, out, seed, model_options.scale);
    kp_generate_options generate_options = {.seed = seed, .progress = print_progress, .progress_ctx = &progress};
    kp_generate_stats stats;
    int rc = kp_generate_dataset(model, out, &generate_options, &stats, &err);
    kp_model_free(model);
    if (rc) {
        kp_error_print(stderr, &err);
        return kp_error_exit_code(&err);
    }
    if (!progress.is_quiet)
        printf("wrote %" PRId64 " records (%.1f MiB) in %.2f s, seed %" PRIu64 "\n", stats.records,
               (double)stats.bytes / (1024.0 * 1024.0), stats.seconds, seed);
    return KP_EXIT_OK;
}
