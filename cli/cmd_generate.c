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
#include <unistd.h>
#include <time.h>
#include <signal.h>

#include "cli/commands.h"
#include "core/model.h"
#include "migrations/generate.h"

const char cmd_generate_help[] =
    "usage: keyplan generate MODEL --out DIR [--scale F] [--seed N] [--quiet] [--no-space-check]\n\n"
    "Generates sample data for a model: DIR/<Entity>.ndjson for every entity, one\n"
    "record per line in canonical JSON (keys in the entity's attribute order).\n"
    "Counts come from the model (times --scale); children spread over parents with\n"
    "each relation's fan-out average, maximum and skew; every foreign key names an\n"
    "existing record, keys and unique attributes never repeat, copies equal their\n"
    "source and derived aggregates are computed from the generated records.\n"
    "The same model, scale and seed always give byte-identical files. Files are\n"
    "written under DIR/.tmp and moved into DIR when all are complete; a run that fails\n"
    "or is interrupted (Ctrl-C) leaves no file of its own. Before writing, the size of\n"
    "the data is estimated and compared with the free space of DIR's filesystem. On a\n"
    "terminal a live line shows records, rate and the time left.\n\n"
    "options:\n"
    "  --out DIR     directory to write (created when missing)\n"
    "  --scale F     multiply every entity count by F (fan-outs are kept)\n"
    "  --seed N      seed of the random draws (default 1); it is printed\n"
    "  --quiet       print nothing but errors\n"
    "  --no-space-check  write even when the estimated size exceeds the free space\n\n"
    "example:\n"
    "  keyplan generate examples/saas-control-plane/model.json --out data/saas --scale 0.01 --seed 7\n";

typedef struct progress_ctx {
    int is_quiet;
    int is_tty;                 /* a live line with rate and ETA; none in CI logs */
    struct timespec started;    /* of the current entity */
    const kp_entity *entity;
} progress_ctx;

static volatile sig_atomic_t interrupted;
static void on_signal(int sig) { (void)sig; interrupted = 1; }

static double seconds_since(const struct timespec *t)
{
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (double)(now.tv_sec - t->tv_sec) + (double)(now.tv_nsec - t->tv_nsec) / 1e9;
}

/* The live line of a terminal: records so far, the rate and the time left for the entity. */
static void print_tick(const kp_entity *entity, int64_t records, int64_t total, void *ctx)
{
    progress_ctx *p = ctx;
    if (p->is_quiet || !p->is_tty) return;
    if (p->entity != entity) { p->entity = entity; clock_gettime(CLOCK_MONOTONIC, &p->started); }
    double t = seconds_since(&p->started), rate = t > 0 ? (double)records / t : 0;
    double left = rate > 0 ? (double)(total - records) / rate : 0;
    fprintf(stderr, "\r  %-24s %12" PRId64 " / %" PRId64 " records, %.0f/s, %d:%02d left   ", entity->name, records, total,
            rate, (int)(left / 60), (int)left % 60);
    fflush(stderr);
}

static void print_progress(const kp_entity *entity, int64_t records, int64_t bytes, void *ctx)
{
    progress_ctx *p = ctx;
    if (p->is_quiet) return;
    if (p->is_tty) fprintf(stderr, "\r%*s\r", 100, "");
    p->entity = NULL;
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
                                            {"no-space-check", no_argument, NULL, 'N'},
                                            {NULL, 0, NULL, 0}};
    kp_model_options model_options = {.scale = 1};
    const char *out = NULL;
    uint64_t seed = 1;
    progress_ctx progress = {0};
    int skip_space_check = 0;
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
        case 'N':
            skip_space_check = 1;
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
    progress.is_tty = isatty(STDERR_FILENO) && !getenv("CI");
    struct sigaction sa = {0};
    sa.sa_handler = on_signal;
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    kp_generate_options generate_options = {.seed = seed, .progress = print_progress, .progress_ctx = &progress,
                                            .tick = print_tick, .interrupted = &interrupted,
                                            .skip_space_check = skip_space_check};
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
