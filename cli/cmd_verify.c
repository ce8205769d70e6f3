/*
 * cmd_verify.c — `keyplan verify MODEL --db LIST --data DIR`: check that every access
 * pattern, run on a seeded target, returns exactly what the model declares and costs
 * what the plan claims. Parsing options and printing only; the work is in
 * migrations/verify*.c.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli/commands.h"
#include "cli/live.h"
#include "migrations/seed.h"
#include "migrations/verify.h"

const char cmd_verify_help[] =
    "usage: keyplan verify MODEL --db LIST --data DIR [--target DB=ENDPOINT]... [--prefix P]\n"
    "                      [--samples N | --exhaustive] [--seed N] [--pages N] [--in-flight N]\n"
    "                      [--writes] [--write-ops N]\n"
    "                      [--format text|json] [--junit FILE] [--candidate NAME]\n"
    "                      [--scale F] [--no-read-back] [--dry-run] [--insecure] [--quiet]\n\n"
    "Runs every access pattern against a target seeded by `keyplan seed` and compares the\n"
    "response, page by page, with the answer keyplan's oracle computes from the same\n"
    "data: same values, same order, every page to the last. Each pattern is checked from\n"
    "anchors — records of its root entity, each giving one set of parameters drawn from\n"
    "the data: every record when the root has at most 2,000 (--samples), else 2,000 of\n"
    "them (the hot keys the skew predicts and an even spread over the key order); with\n"
    "--exhaustive, every record. --seed makes the draws reproducible and is always\n"
    "printed; the summary states the coverage. Every container is then read back and\n"
    "compared with what the data makes (count and content), so an item changed, deleted\n"
    "or added where no pattern looks fails too. A difference is reported as a JSON path with the expected and actual\n"
    "values. What each pattern costs on the server must be what the plan claims: the\n"
    "round trips (and requests, when exact) of a first page equal the claim, and no page\n"
    "may send more requests or read more items or bytes than the plan's bound for a\n"
    "page; latencies are reported as p50/p95/p99.\n\n"
    "With --writes, every write pattern is also replayed a few times (on the target and\n"
    "on the oracle's data), the reads are checked again, and every change is undone at\n"
    "the end; if that is interrupted, the marker says so and the next verify asks for a\n"
    "re-seed. Without --writes, verify only reads.\n\n"
    "options:\n"
    "  --db LIST          dynamodb, mongodb, cassandra, a comma list, or all\n"
    "  --data DIR         the sample data the target was seeded with\n"
    "  --target DB=URL    where a database listens (repeatable); default: the environment\n"
    "  --prefix P         the prefix the target was seeded with\n"
    "  --samples N        anchors per pattern at most (default 2000); above: stratified\n"
    "  --exhaustive       every record of every pattern's root is an anchor, whatever their number\n"
    "  --seed N           seed of the draws (default: from the clock; printed)\n"
    "  --pages N          pages walked per anchor at most (default: to the last page)\n"
    "  --in-flight N      samples read at once, each on a connection of its own (default 4;\n"
    "                     1: one request at a time, so latencies are unloaded)\n"
    "  --writes           also replay write patterns, then undo them\n"
    "  --write-ops N      operations per write pattern (default 3)\n"
    "  --format FORMAT    text (default) or json (docs/output.md \"verify\")\n"
    "  --junit FILE       also write JUnit XML (one test case per pattern and write)\n"
    "  --candidate NAME   the design to verify (default: the one the target's marker names)\n"
    "  --scale F          the --scale the target was seeded with\n"
    "  --no-read-back     do not read every container back (each is scanned)\n"
    "  --dry-run          print what would be checked, with the plans' claims; touch nothing\n"
    "  --insecure         do not verify TLS certificates (warned)\n"
    "  --quiet            no progress line and no summary line\n\n"
    "exit status: 0 every check passed; 1 a check failed; 2 bad input or a target that\n"
    "was not seeded with this model and data; 3 server trouble.\n\n"
    "example:\n"
    "  keyplan verify examples/saas-control-plane/model.json --db dynamodb --data data/saas \\\n"
    "      --target dynamodb=http://127.0.0.1:18000 --prefix ci1 --scale 0.001 --seed 42 --junit verify.xml\n";

static int parse_count(const char *option, const char *arg, long lo, long hi, long *out)
{
    char *end;
    errno = 0;
    long v = strtol(arg, &end, 10);
    if (end == arg || *end || errno || v < lo || v > hi) {
        fprintf(stderr, "keyplan verify: error: %s takes a whole number from %ld to %ld, not '%s'\n", option, lo, hi, arg);
        return -1;
    }
    *out = v;
    return 0;
}

static void print_dry_run(FILE *out, const kp_design *design, int samples, int exhaustive, int pages, int writes,
                          int write_ops)
{
    fprintf(out, "dry run: verify would check design '%s' on %s; nothing is touched\n", design->candidate,
            design->backend ? design->backend->name : "?");
    int w = 7;
    for (size_t i = 0; i < design->plan_count; i++)
        if (design->plans[i].pattern && (int)strlen(design->plans[i].pattern->name) > w)
            w = (int)strlen(design->plans[i].pattern->name);
    char anchors[32], walk[32];
    if (exhaustive) snprintf(anchors, sizeof anchors, "all");
    else snprintf(anchors, sizeof anchors, "<= %d", samples);
    if (pages > 0) snprintf(walk, sizeof walk, "<= %d", pages);
    else snprintf(walk, sizeof walk, "all");
    fprintf(out, "  %-*s %8s %6s %9s %6s %12s\n", w, "pattern", "anchors", "pages", "requests", "steps", "items max");
    for (size_t i = 0; i < design->plan_count; i++) {
        const kp_plan *p = &design->plans[i];
        if (!p->pattern) continue;
        fprintf(out, "  %-*s %8s %6s %9g %6d %12.0f%s\n", w, p->pattern->name, anchors, walk, p->requests,
                p->sequential_steps, p->items_max > p->items ? p->items_max : p->items, p->is_scan ? "  (scan)" : "");
    }
    if (writes)
        for (size_t i = 0; i < design->write_plan_count; i++)
            if (design->write_plans[i].write)
                fprintf(out, "  write %s: %d operations, then undone\n", design->write_plans[i].write->name, write_ops);
}

int cmd_verify(int argc, char **argv)
{
    enum { O_DB = 1, O_DATA, O_TARGET, O_PREFIX, O_SAMPLES, O_SEED, O_PAGES, O_WRITES, O_WRITE_OPS, O_FORMAT, O_JUNIT,
           O_CANDIDATE, O_SCALE, O_DRY, O_INSECURE, O_QUIET, O_EXHAUSTIVE, O_NO_READ_BACK, O_IN_FLIGHT };
    static const struct option options[] = {
        {"db", required_argument, NULL, O_DB},           {"data", required_argument, NULL, O_DATA},
        {"target", required_argument, NULL, O_TARGET},   {"prefix", required_argument, NULL, O_PREFIX},
        {"samples", required_argument, NULL, O_SAMPLES}, {"seed", required_argument, NULL, O_SEED},
        {"pages", required_argument, NULL, O_PAGES},     {"writes", no_argument, NULL, O_WRITES},
        {"write-ops", required_argument, NULL, O_WRITE_OPS}, {"format", required_argument, NULL, O_FORMAT},
        {"junit", required_argument, NULL, O_JUNIT},     {"candidate", required_argument, NULL, O_CANDIDATE},
        {"scale", required_argument, NULL, O_SCALE},     {"dry-run", no_argument, NULL, O_DRY},
        {"insecure", no_argument, NULL, O_INSECURE},     {"quiet", no_argument, NULL, O_QUIET},
        {"exhaustive", no_argument, NULL, O_EXHAUSTIVE}, {"no-read-back", no_argument, NULL, O_NO_READ_BACK},
        {"in-flight", required_argument, NULL, O_IN_FLIGHT}, {NULL, 0, NULL, 0}};
    static const char *const formats[] = {"text", "json", NULL};
    kp_live_args args = {.verb = "verify", .needs_data = 1};
    long samples = KP_VERIFY_ANCHORS, pages = 0, write_ops = 3, in_flight = KP_VERIFY_IN_FLIGHT;
    uint64_t seed = 0;
    int has_seed = 0, writes = 0, format = 0, dry_run = 0, quiet = 0, exhaustive = 0, no_read_back = 0, c;
    const char *junit = NULL, *candidate = NULL;
    kp_error err;
    optind = 1;
    while ((c = getopt_long(argc, argv, "", options, NULL)) != -1) {
        switch (c) {
        case O_DB: args.db = optarg; break;
        case O_DATA: args.data_dir = optarg; break;
        case O_TARGET:
            if (kp_live_add_target(&args, optarg, &err)) { kp_error_print(stderr, &err); return KP_EXIT_INPUT; }
            break;
        case O_PREFIX: args.prefix = optarg; break;
        case O_SAMPLES: if (parse_count("--samples", optarg, 1, 100000, &samples)) return KP_EXIT_INPUT; break;
        case O_PAGES: if (parse_count("--pages", optarg, 1, 1000000, &pages)) return KP_EXIT_INPUT; break;
        case O_EXHAUSTIVE: exhaustive = 1; break;
        case O_IN_FLIGHT: if (parse_count("--in-flight", optarg, 1, 64, &in_flight)) return KP_EXIT_INPUT; break;
        case O_NO_READ_BACK: no_read_back = 1; break;
        case O_WRITE_OPS: if (parse_count("--write-ops", optarg, 1, 1000, &write_ops)) return KP_EXIT_INPUT; break;
        case O_SEED: {
            char *end;
            errno = 0;
            unsigned long long v = strtoull(optarg, &end, 10);
            if (end == optarg || *end || errno || optarg[0] == '-') {
                fprintf(stderr, "keyplan verify: error: --seed takes a whole number ≥ 0, not '%s'\n", optarg);
                return KP_EXIT_INPUT;
            }
            seed = (uint64_t)v;
            has_seed = 1;
            break;
        }
        case O_WRITES: writes = 1; break;
        case O_FORMAT:
            if (kp_cli_parse_format(optarg, formats, &format)) {
                fprintf(stderr, "keyplan verify: error: --format takes text or json, not '%s'\n", optarg);
                return KP_EXIT_INPUT;
            }
            break;
        case O_JUNIT: junit = optarg; break;
        case O_CANDIDATE: candidate = optarg; break;
        case O_SCALE:
            if (kp_cli_parse_double(optarg, &args.scale) || args.scale <= 0) {
                fprintf(stderr, "keyplan verify: error: --scale takes a number above 0, not '%s'\n", optarg);
                return KP_EXIT_INPUT;
            }
            break;
        case O_DRY: dry_run = 1; break;
        case O_INSECURE: args.is_insecure = 1; break;
        case O_QUIET: quiet = 1; break;
        default:
            fprintf(stderr, "keyplan verify: see `keyplan verify --help`\n");
            return KP_EXIT_INPUT;
        }
    }
    if (optind == argc - 1) args.model_path = argv[optind];
    else if (optind < argc - 1) {
        fprintf(stderr, "keyplan verify: error: give exactly one model file; see `keyplan verify --help`\n");
        return KP_EXIT_INPUT;
    }
    if (!has_seed) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        seed = ((uint64_t)ts.tv_sec * 1000003u ^ (uint64_t)ts.tv_nsec ^ ((uint64_t)getpid() << 16)) % 1000000000u;
    }
    kp_live live;
    if (kp_live_open(&args, &live, &err)) { kp_error_print(stderr, &err); return kp_error_exit_code(&err); }
    if (!quiet) fprintf(stderr, "keyplan verify: seed %" PRIu64 " (rerun with --seed %" PRIu64 " to draw the same "
                        "parameters)\n", seed, seed);
    kp_live_catch_interrupt();

    int status = KP_EXIT_OK;
    kp_verify_report reports[8];
    const kp_verify_report *done[8];
    kp_design_list kept[8];
    size_t done_count = 0;
    memset(reports, 0, sizeof reports);
    for (size_t i = 0; i < live.backend_count && !kp_live_interrupted; i++) {
        const kp_backend *backend = live.backends[i];
        kp_design_list designs;
        if (kp_live_propose(backend, live.model, &designs, &err)) {
            kp_error_print(stderr, &err);
            kp_live_fail(&status, &err);
            continue;
        }
        const kp_design *design = kp_live_pick(&designs, candidate, &err);
        if (!design) {
            kp_error_print(stderr, &err);
            kp_live_fail(&status, &err);
            kp_design_list_free(&designs);
            continue;
        }
        if (dry_run) {
            print_dry_run(stdout, design, (int)samples, exhaustive, (int)pages, writes, (int)write_ops);
            kp_design_list_free(&designs);
            continue;
        }
        kp_conn *conn = NULL;
        if (backend->connect(&live.targets[i], &conn, &err)) {
            if (err.code == KP_OK) err.code = KP_ERR_TARGET;
            kp_error_print(stderr, &err);
            kp_live_fail(&status, &err);
            kp_design_list_free(&designs);
            continue;
        }
        if (!candidate) {
            /* the candidate the target holds, as its marker says */
            const kp_design *held = NULL;
            kp_target_state state;
            if (kp_seed_locate(backend, conn, &designs, &held, &state, &err) == 0) {
                if (held) design = held;
                cJSON_Delete(state.marker);
            }
        }
        kp_verify_options verify_options = {.model = live.model, .data = live.data, .design = design, .backend = backend,
                                     .target = &live.targets[i], .conn = conn, .samples = (int)samples, .is_exhaustive = exhaustive, .no_read_back = no_read_back, .seed = seed,
                                     .max_pages = (int)pages, .in_flight = (int)in_flight, .writes = writes, .write_ops = (int)write_ops,
                                     .progress = quiet ? NULL : stderr, .interrupted = &kp_live_interrupted};
        kp_verify_report *report = &reports[done_count];
        int rc = kp_verify_run(&verify_options, report, &err);
        int has_checked = report->patterns_passed + report->patterns_failed + report->patterns_skipped > 0;
        if (format == 0 && has_checked) kp_verify_report_print(stdout, report);
        if (rc) {
            kp_error_print(stderr, &err);
            kp_live_fail(&status, &err);
        }
        backend->disconnect(conn);
        /* a report points into its design: keep the designs until the output is written */
        if (has_checked) {
            done[done_count] = report;
            kept[done_count++] = designs;
        } else {
            kp_verify_report_free(report);
            kp_design_list_free(&designs);
        }
    }
    if (format == 1 && !dry_run) {
        cJSON *json = cJSON_CreateObject();
        cJSON_AddNumberToObject(json, "schema_version", KP_SCHEMA_VERSION);
        cJSON_AddStringToObject(json, "command", "verify");
        cJSON_AddStringToObject(json, "model", live.model->name ? live.model->name : "");
        cJSON_AddStringToObject(json, "model_hash", live.model->hash);
        cJSON_AddNumberToObject(json, "seed", (double)seed);
        cJSON_AddBoolToObject(json, "passed", status == KP_EXIT_OK);
        cJSON *databases = cJSON_AddArrayToObject(json, "databases");
        for (size_t i = 0; i < done_count; i++) cJSON_AddItemToArray(databases, kp_verify_report_to_json(done[i]));
        char *text = kp_json_print(json);
        if (text) { puts(text); free(text); }
        cJSON_Delete(json);
    }
    if (junit && !dry_run) {
        FILE *f = fopen(junit, "w");
        if (!f || kp_verify_write_junit(f, done, done_count) || fclose(f)) {
            kp_error_set(&err, KP_ERR_IO, junit, 0, 0, "cannot write the JUnit report: %s", strerror(errno));
            kp_error_print(stderr, &err);
            kp_live_fail(&status, &err);
        }
    }
    for (size_t i = 0; i < done_count; i++) {
        kp_verify_report_free(&reports[i]);
        kp_design_list_free(&kept[i]);
    }
    kp_live_close(&live);
    return status;
}
