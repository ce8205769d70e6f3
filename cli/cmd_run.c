/*
 * cmd_run.c — `keyplan run MODEL --db LIST --data DIR --out DIR`: the design-review gate.
 * Checks the model (loading validates it), compares the designs (advisors/compare.c),
 * then per database seeds the recommended design (migrations/seed.c) and verifies every
 * access pattern and write (migrations/verify.c, with --writes), and writes report.md,
 * report.json and junit.xml into --out.
 * Invariant: exit 0 only when every pattern and write of every database passed and no
 * recommended design has a defect; otherwise the first failure's code (1 a check, 2 bad
 * input, 3 server trouble). Parsing and printing only: the work is in the libraries.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "advisors/compare.h"
#include "advisors/risk.h"
#include "cli/commands.h"
#include "cli/live.h"
#include "migrations/seed.h"
#include "migrations/verify.h"

const char cmd_run_help[] =
    "usage: keyplan run MODEL --db LIST --data DIR --out DIR [--target DB=ENDPOINT]... [--prefix P]\n"
    "                   [--mix NAME] [--samples N] [--pages N] [--seed N] [--write-ops N] [--force]\n"
    "                   [--scale F] [--dry-run] [--insecure] [--quiet]\n\n"
    "The design-review gate, for CI: checks the model, compares the designs (cost, risks,\n"
    "recommendation), then for each database seeds the recommended design with the data\n"
    "and verifies every access pattern and every write (verify --writes, undone at the\n"
    "end). Writes report.md (fit for a pull request), report.json (docs/output.md) and\n"
    "junit.xml into the --out folder. Exit 0 only when every pattern and write of every\n"
    "database passed and no recommended design has a defect (a scan, a limit passed).\n\n"
    "options:\n"
    "  --db LIST          dynamodb, mongodb, cassandra, a comma list, or all\n"
    "  --data DIR         the sample data (`keyplan generate` writes it)\n"
    "  --out DIR          where the reports go (created if missing)\n"
    "  --target DB=URL    where a database listens (repeatable); default: the environment\n"
    "  --prefix P         prefix every table, collection and keyspace created\n"
    "  --mix NAME         the workload mix the comparison leads with\n"
    "  --samples N        anchors per pattern at most (default 2000; verify --samples)\n"
    "  --pages N          pages walked per anchor at most (default: to the last page)\n"
    "  --seed N           the draw's seed (default: from the clock, printed)\n"
    "  --write-ops N      operations replayed per write pattern (default 3)\n"
    "  --force            replace a target seeded with another model, data or design\n"
    "  --scale F          multiply every entity count by F (as when the data was generated)\n"
    "  --dry-run          compare and show what seeding would write; touch nothing\n"
    "  --insecure         skip TLS verification (warned)\n"
    "  --quiet            no progress lines\n\n"
    "example:\n"
    "  keyplan generate examples/saas-control-plane/model.json --scale 0.001 --out /tmp/saas-data\n"
    "  keyplan run examples/saas-control-plane/model.json --scale 0.001 --db dynamodb --data /tmp/saas-data \\\n"
    "      --target dynamodb=http://127.0.0.1:18000 --prefix ci --out /tmp/saas-review\n";

typedef struct run_db {
    const kp_backend *backend;
    kp_design_list designs;
    const kp_design *design;
    cJSON *seed;                /* seed report JSON, or NULL */
    kp_verify_report verify;
    int has_verify;
    kp_risks risks;             /* the design's risks as compare finds them: its defects are those
                                   of severity KP_RISK_DEFECT (advise --strict and compare count the same) */
    size_t defect_count;
    char error[600];            /* what stopped this database, or "" */
    int is_pass;
} run_db;

static FILE *open_report(const char *dir, const char *name, char *path, size_t size)
{
    snprintf(path, size, "%s/%s", dir, name);
    FILE *f = fopen(path, "w");
    if (!f) fprintf(stderr, "%s: error: cannot write the report: %s; check the folder is writable\n", path, strerror(errno));
    return f;
}

static void write_markdown(FILE *f, const kp_model *model, run_db *dbs, size_t n, const cJSON *compare, int passed)
{
    fprintf(f, "# keyplan run: `%s` — %s\n\n", model->name ? model->name : "", passed ? "PASSED" : "FAILED");
    fprintf(f, "| database | design | defects | seeded items | patterns passed | failed | skipped | writes passed | failed | result |\n"
               "|---|---|--:|--:|--:|--:|--:|--:|--:|---|\n");
    for (size_t i = 0; i < n; i++) {
        run_db *d = &dbs[i];
        const cJSON *items = d->seed ? cJSON_GetObjectItem(d->seed, "items") : NULL;
        fprintf(f, "| %s | %s | %zu | %.0f | %d | %d | %d | %d | %d | %s |\n", d->backend->title,
                d->design ? d->design->candidate : "—", d->design ? d->defect_count : 0,
                cJSON_IsNumber(items) ? items->valuedouble : 0, d->has_verify ? d->verify.patterns_passed : 0,
                d->has_verify ? d->verify.patterns_failed : 0, d->has_verify ? d->verify.patterns_skipped : 0,
                d->has_verify ? d->verify.writes_passed : 0, d->has_verify ? d->verify.writes_failed : 0,
                d->is_pass ? "pass" : "**fail**");
    }
    for (size_t i = 0; i < n; i++) {
        run_db *d = &dbs[i];
        int header = 0;
#define HEADER() do { if (!header) { fprintf(f, "\n## %s\n\n", d->backend->title); header = 1; } } while (0)
        if (d->error[0]) { HEADER(); fprintf(f, "- stopped: %s\n", d->error); }
        for (size_t k = 0; d->design && k < d->risks.count; k++)
            if (d->risks.items[k].severity == KP_RISK_DEFECT) { HEADER(); fprintf(f, "- defect: %s\n", d->risks.items[k].message); }
        for (size_t k = 0; d->has_verify && k < d->verify.pattern_count; k++) {
            const kp_verify_pattern *p = &d->verify.patterns[k];
            if (p->is_pass) continue;
            HEADER();
            fprintf(f, "- pattern `%s` %s: %s\n", p->pattern->name, p->is_skipped ? "skipped" : "failed",
                    p->has_difference ? p->difference.message : p->note);
        }
        for (size_t k = 0; d->has_verify && k < d->verify.write_count; k++) {
            const kp_verify_write *w = &d->verify.write_results[k];
            if (w->is_pass) continue;
            HEADER();
            fprintf(f, "- write `%s` failed: %s\n", w->write->name, w->has_difference ? w->difference.message : w->note);
        }
#undef HEADER
    }
    char *md = kp_compare_markdown(compare);
    if (md) { fprintf(f, "\n---\n\n%s", md); free(md); }
}

int cmd_run(int argc, char **argv)
{
    enum { O_DB = 1, O_DATA, O_OUT, O_TARGET, O_PREFIX, O_MIX, O_SAMPLES, O_SEED, O_WRITE_OPS, O_FORCE, O_SCALE, O_DRY, O_INSECURE,
           O_QUIET, O_PAGES };
    static const struct option options[] = {
        {"db", required_argument, NULL, O_DB},           {"data", required_argument, NULL, O_DATA},
        {"out", required_argument, NULL, O_OUT},         {"target", required_argument, NULL, O_TARGET},
        {"prefix", required_argument, NULL, O_PREFIX},   {"mix", required_argument, NULL, O_MIX},
        {"samples", required_argument, NULL, O_SAMPLES}, {"seed", required_argument, NULL, O_SEED},
        {"pages", required_argument, NULL, O_PAGES},
        {"write-ops", required_argument, NULL, O_WRITE_OPS}, {"force", no_argument, NULL, O_FORCE},
        {"scale", required_argument, NULL, O_SCALE},     {"dry-run", no_argument, NULL, O_DRY},
        {"insecure", no_argument, NULL, O_INSECURE},     {"quiet", no_argument, NULL, O_QUIET},
        {NULL, 0, NULL, 0}};
    kp_live_args args = {.verb = "run", .needs_data = 1};
    const char *out_dir = NULL, *mix_name = NULL;
    double samples = 0, write_ops = 0, seed = -1, pages = 0;
    int force = 0, dry_run = 0, quiet = 0, c;
    kp_error err;
    optind = 1;
    while ((c = getopt_long(argc, argv, "", options, NULL)) != -1) {
        switch (c) {
        case O_DB: args.db = optarg; break;
        case O_DATA: args.data_dir = optarg; break;
        case O_OUT: out_dir = optarg; break;
        case O_TARGET:
            if (kp_live_add_target(&args, optarg, &err)) { kp_error_print(stderr, &err); return KP_EXIT_INPUT; }
            break;
        case O_PREFIX: args.prefix = optarg; break;
        case O_MIX: mix_name = optarg; break;
        case O_SAMPLES: case O_WRITE_OPS: case O_PAGES: {
            double *slot = c == O_SAMPLES ? &samples : c == O_PAGES ? &pages : &write_ops;
            if (kp_cli_parse_double(optarg, slot) || *slot < 1 || *slot > 100000) {
                fprintf(stderr, "keyplan run: error: %s takes a whole number from 1 to 100000, not '%s'\n",
                        c == O_SAMPLES ? "--samples" : c == O_PAGES ? "--pages" : "--write-ops", optarg);
                return KP_EXIT_INPUT;
            }
            break;
        }
        case O_SEED:
            if (kp_cli_parse_double(optarg, &seed) || seed < 0) {
                fprintf(stderr, "keyplan run: error: --seed takes a whole number, not '%s'\n", optarg);
                return KP_EXIT_INPUT;
            }
            break;
        case O_FORCE: force = 1; break;
        case O_SCALE:
            if (kp_cli_parse_double(optarg, &args.scale) || args.scale <= 0) {
                fprintf(stderr, "keyplan run: error: --scale takes a number above 0, not '%s'\n", optarg);
                return KP_EXIT_INPUT;
            }
            break;
        case O_DRY: dry_run = 1; break;
        case O_INSECURE: args.is_insecure = 1; break;
        case O_QUIET: quiet = 1; break;
        default: fprintf(stderr, "keyplan run: see `keyplan run --help`\n"); return KP_EXIT_INPUT;
        }
    }
    if (optind == argc - 1) args.model_path = argv[optind];
    else {
        fprintf(stderr, "keyplan run: error: give exactly one model file; see `keyplan run --help`\n");
        return KP_EXIT_INPUT;
    }
    if (!out_dir || !out_dir[0]) {
        fprintf(stderr, "keyplan run: error: --out DIR is required: the folder the reports are written to\n");
        return KP_EXIT_INPUT;
    }
    if (!args.db) {
        fprintf(stderr, "keyplan run: error: --db LIST is required (dynamodb, mongodb, cassandra, a comma list, or all)\n");
        return KP_EXIT_INPUT;
    }
    if (mkdir(out_dir, 0777) && errno != EEXIST) {
        fprintf(stderr, "%s: error: cannot create the report folder: %s\n", out_dir, strerror(errno));
        return KP_EXIT_INPUT;
    }
    kp_live live;
    if (kp_live_open(&args, &live, &err)) { kp_error_print(stderr, &err); return kp_error_exit_code(&err); }
    kp_compare_options co = {.backends = live.backends, .prices = KP_PRICES_DEFAULT, .is_single_candidate = 1};
    if (mix_name && !(co.mix = kp_model_mix(live.model, mix_name))) {
        fprintf(stderr, "keyplan run: error: the model declares no workload mix '%s'\n", mix_name);
        kp_live_close(&live);
        return KP_EXIT_INPUT;
    }
    co.data = live.data;
    co.seed = 1;
    cJSON *compare = kp_compare(live.model, &co, &err);
    if (!compare) {
        kp_error_print(stderr, &err);
        kp_live_close(&live);
        return kp_error_exit_code(&err);
    }
    uint64_t draw_seed = (uint64_t)seed;
    if (seed < 0) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        draw_seed = ((uint64_t)ts.tv_sec * 1000003u ^ (uint64_t)ts.tv_nsec ^ ((uint64_t)getpid() << 16)) % 1000000000u;
    }
    if (!quiet) fprintf(stderr, "keyplan run: seed %llu\n", (unsigned long long)draw_seed);
    kp_live_catch_interrupt();
    int status = KP_EXIT_OK;
    run_db dbs[8];
    memset(dbs, 0, sizeof dbs);
    size_t n = 0;
    for (size_t i = 0; i < live.backend_count && !kp_live_interrupted; i++) {
        run_db *d = &dbs[n++];
        d->backend = live.backends[i];
        if (kp_live_propose(d->backend, live.model, &d->designs, &err)) {
            snprintf(d->error, sizeof d->error, "%s", err.message);
            kp_error_print(stderr, &err);
            kp_live_fail(&status, &err);
            continue;
        }
        d->design = d->designs.items[0];
        if (kp_risk_check(d->design, NULL, NULL, &d->risks, &err) == 0) d->defect_count = kp_risks_count(&d->risks, KP_RISK_DEFECT);
        else d->defect_count = d->design->defect_count;
        kp_seed_options so = {.model = live.model, .data = live.data, .data_dir = args.data_dir, .design = d->design,
                              .backend = d->backend, .target = &live.targets[i], .force = force, .dry_run = dry_run,
                              .progress = quiet ? NULL : stderr, .interrupted = &kp_live_interrupted};
        kp_seed_report seed_report;
        int rc = kp_seed_run(&so, &seed_report, &err);
        d->seed = kp_seed_report_to_json(&seed_report);
        if (d->seed) cJSON_DeleteItemFromObjectCaseSensitive(d->seed, "schema_version");
        kp_seed_report_free(&seed_report);
        if (rc) {
            snprintf(d->error, sizeof d->error, "seeding: %s", err.message);
            kp_error_print(stderr, &err);
            kp_live_fail(&status, &err);
            continue;
        }
        if (dry_run) { d->is_pass = d->defect_count == 0; continue; }
        kp_verify_options vo = {.model = live.model, .data = live.data, .design = d->design, .backend = d->backend,
                                .target = &live.targets[i], .samples = (int)samples, .max_pages = (int)pages, .in_flight = KP_VERIFY_IN_FLIGHT, .seed = draw_seed, .writes = 1,
                                .write_ops = (int)write_ops, .progress = quiet ? NULL : stderr,
                                .interrupted = &kp_live_interrupted};
        rc = kp_verify_run(&vo, &d->verify, &err);
        d->has_verify = 1;
        if (rc) {
            if (err.code != KP_ERR_CHECK) snprintf(d->error, sizeof d->error, "verification: %s", err.message);
            kp_error_print(stderr, &err);
            kp_live_fail(&status, &err);
        }
        d->is_pass = rc == 0 && d->verify.patterns_failed == 0 && d->verify.patterns_skipped == 0 && d->verify.writes_failed == 0 &&
                     d->defect_count == 0;
    }
    int passed = n == live.backend_count && !kp_live_interrupted;
    for (size_t i = 0; i < n; i++) {
        passed &= dbs[i].is_pass;
        if (dbs[i].design && dbs[i].defect_count && status == KP_EXIT_OK) status = KP_EXIT_CHECK;
        if (dbs[i].has_verify && dbs[i].verify.patterns_skipped && status == KP_EXIT_OK) status = KP_EXIT_CHECK;
    }
    if (!passed && status == KP_EXIT_OK) status = KP_EXIT_CHECK;
    /* the reports */
    cJSON *json = cJSON_CreateObject();
    cJSON_AddNumberToObject(json, "schema_version", KP_SCHEMA_VERSION);
    cJSON_AddStringToObject(json, "command", "run");
    cJSON_AddStringToObject(json, "model", live.model->name ? live.model->name : "");
    cJSON_AddStringToObject(json, "model_hash", live.model->hash);
    cJSON_AddBoolToObject(json, "passed", passed);
    cJSON_AddBoolToObject(json, "dry_run", dry_run);
    cJSON_AddNumberToObject(json, "seed", (double)draw_seed);
    cJSON *arr = cJSON_AddArrayToObject(json, "databases");
    const kp_verify_report *done[8];
    size_t done_count = 0;
    for (size_t i = 0; i < n; i++) {
        run_db *d = &dbs[i];
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "database", d->backend->name);
        if (d->design) cJSON_AddStringToObject(o, "design", d->design->candidate);
        cJSON *defects = cJSON_AddArrayToObject(o, "defects");
        for (size_t k = 0; d->design && k < d->risks.count; k++)
            if (d->risks.items[k].severity == KP_RISK_DEFECT) cJSON_AddItemToArray(defects, cJSON_CreateString(d->risks.items[k].message));
        cJSON_AddBoolToObject(o, "passed", d->is_pass);
        if (d->error[0]) cJSON_AddStringToObject(o, "error", d->error);
        if (d->seed) cJSON_AddItemToObject(o, "seed", cJSON_Duplicate(d->seed, 1));
        if (d->has_verify) {
            cJSON *v = kp_verify_report_to_json(&d->verify);
            if (v) cJSON_DeleteItemFromObjectCaseSensitive(v, "schema_version");
            cJSON_AddItemToObject(o, "verify", v ? v : cJSON_CreateNull());
            done[done_count++] = &d->verify;
        }
        cJSON_AddItemToArray(arr, o);
    }
    cJSON_AddItemToObject(json, "compare", cJSON_Duplicate(compare, 1));
    char path[4096];
    FILE *f = open_report(out_dir, "report.json", path, sizeof path);
    int io_failed = !f;
    if (f) {
        char *text = kp_json_print(json);
        fputs(text ? text : "{}", f);
        fputc('\n', f);
        cJSON_free(text);
        io_failed |= fclose(f) != 0;
    }
    f = open_report(out_dir, "report.md", path, sizeof path);
    io_failed |= !f;
    if (f) { write_markdown(f, live.model, dbs, n, compare, passed); io_failed |= fclose(f) != 0; }
    f = open_report(out_dir, "junit.xml", path, sizeof path);
    io_failed |= !f;
    if (f) { io_failed |= kp_verify_write_junit(f, done, done_count) != 0; io_failed |= fclose(f) != 0; }
    if (io_failed && status == KP_EXIT_OK) status = KP_EXIT_INPUT;
    if (!quiet || !passed)
        fprintf(stderr, "keyplan run: %s — reports in %s (report.md, report.json, junit.xml)\n", passed ? "passed" : "FAILED", out_dir);
    cJSON_Delete(json);
    cJSON_Delete(compare);
    for (size_t i = 0; i < n; i++) {
        if (dbs[i].has_verify) kp_verify_report_free(&dbs[i].verify);
        cJSON_Delete(dbs[i].seed);
        kp_design_list_free(&dbs[i].designs);
        kp_risks_free(&dbs[i].risks);
    }
    kp_live_close(&live);
    return status;
}
