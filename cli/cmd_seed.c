/*
 * cmd_seed.c — `keyplan seed MODEL --db LIST --data DIR`: write the sample data into
 * live targets in each database's proposed layout, resumably. Parsing options and
 * printing only; the work is in migrations/seed.c.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/commands.h"
#include "cli/live.h"
#include "migrations/seed.h"

const char cmd_seed_help[] =
    "usage: keyplan seed MODEL --db LIST --data DIR [--target DB=ENDPOINT]... [--prefix P]\n"
    "                    [--candidate NAME] [--force] [--dry-run] [--scale F] [--batch N]\n"
    "                    [--export-items FILE] [--export FORMAT --out DIR] [--format text|json]\n"
    "                    [--shard I/N [--shard-wait S]] [--insecure] [--quiet]\n\n"
    "Seeds each database with the sample data (DIR/<Entity>.ndjson, e.g. from `keyplan\n"
    "generate`) in the layout keyplan proposes for it, then reads back what the target\n"
    "holds: per container, the items transform made, sent, acknowledged and read back\n"
    "must agree.\n\n"
    "Every record is transformed before anything is written, so a record the design\n"
    "cannot hold (too large for an item) stops the run with its file and line, with\n"
    "nothing written. keyplan then creates the containers, writes a small marker into\n"
    "the target (model hash, data hash, design, what the server acknowledged) and writes\n"
    "the items in batches. Rerunning the same command after an interruption resumes\n"
    "from the marker and never duplicates anything. A target seeded from another model\n"
    "or other data, or containers keyplan did not create, are refused unless --force is\n"
    "given: then they are dropped and seeding starts over.\n\n"
    "options:\n"
    "  --db LIST            dynamodb, mongodb, cassandra, a comma list, or all\n"
    "  --data DIR           the sample data: one NDJSON file per entity\n"
    "  --target DB=URL      where a database listens (repeatable), e.g.\n"
    "                       dynamodb=http://127.0.0.1:18000; default: the environment\n"
    "                       (AWS_ENDPOINT_URL_DYNAMODB, MONGODB_URI, CASSANDRA_HOST, ...)\n"
    "  --prefix P           prefix every table, collection and keyspace keyplan creates\n"
    "  --candidate NAME     seed this candidate design instead of the recommended one\n"
    "  --force              drop a target that holds something else, and start over\n"
    "  --dry-run            transform everything and print what would be created and\n"
    "                       written (items, bytes, write units); touch nothing\n"
    "  --export-items FILE  with --dry-run and one database: also write every item\n"
    "                       to FILE as NDJSON, one {\"table\": T, \"item\": ITEM} per\n"
    "                       line in the order seeding sends them (T with --prefix;\n"
    "                       ITEM in DynamoDB JSON, {\"PK\": {\"S\": ...}, ...}), e.g. to\n"
    "                       load the same data with another tool\n"
    "  --export FORMAT      write the files a database's own bulk loader reads instead of\n"
    "  --out DIR            seeding (no server is touched): every item and keyplan's marker,\n"
    "                       so `keyplan verify` accepts a target loaded from them, with a\n"
    "                       load script and README in DIR. FORMAT: dynamodb-import\n"
    "                       (ImportTable from S3: DynamoDB JSON lines, gzip, and the\n"
    "                       import-table input), mongoimport (canonical Extended JSON, a file\n"
    "                       per collection), dsbulk (CSV with a header, a file per table)\n"
    "  --scale F            multiply the model's counts by F (as for generate)\n"
    "  --batch N            items per write request (default: the database's batch limit)\n"
    "  --shard I/N          write shard I of N: the records k (file order, per entity)\n"
    "                       with k mod N = I-1, so N processes or machines given the same\n"
    "                       model and data split one seed. Shard 1 creates the target (and\n"
    "                       alone takes --force); the others wait for it. Each shard keeps\n"
    "                       its own checkpoint (rerun it to resume); the last shard to\n"
    "                       finish reads the whole target back and marks it complete\n"
    "  --shard-wait S       shards 2..N: wait at most S seconds for shard 1 (default 600)\n"
    "  --format FORMAT      text (default) or json (docs/output.md \"seed\")\n"
    "  --insecure           do not verify TLS certificates (warned)\n"
    "  --quiet              no progress bar and no summary line\n\n"
    "exit status: 0 seeded and read back equal; 1 read back differs; 2 bad input or a\n"
    "refused target; 3 server trouble or interrupted (rerun to resume).\n\n"
    "example:\n"
    "  keyplan generate examples/saas-control-plane/model.json --out data/saas --scale 0.001\n"
    "  keyplan seed examples/saas-control-plane/model.json --db dynamodb --data data/saas \\\n"
    "      --target dynamodb=http://127.0.0.1:18000 --prefix ci1 --scale 0.001\n"
    "  keyplan seed examples/saas-control-plane/model.json --data data/saas --scale 0.001 \\\n"
    "      --export mongoimport --out export/mongodb\n"
    "  for i in 1 2 3 4; do keyplan seed examples/saas-control-plane/model.json --db dynamodb \\\n"
    "      --data data/saas --scale 0.001 --shard $i/4 & done; wait\n";

int cmd_seed(int argc, char **argv)
{
    enum { O_DB = 1, O_DATA, O_TARGET, O_PREFIX, O_CANDIDATE, O_FORCE, O_DRY, O_SCALE, O_BATCH, O_FORMAT, O_INSECURE, O_QUIET,
           O_EXPORT, O_EXPORT_FORMAT, O_OUT, O_SHARD, O_SHARD_WAIT };
    static const struct option options[] = {
        {"db", required_argument, NULL, O_DB},           {"data", required_argument, NULL, O_DATA},
        {"target", required_argument, NULL, O_TARGET},   {"prefix", required_argument, NULL, O_PREFIX},
        {"candidate", required_argument, NULL, O_CANDIDATE}, {"force", no_argument, NULL, O_FORCE},
        {"dry-run", no_argument, NULL, O_DRY},           {"scale", required_argument, NULL, O_SCALE},
        {"batch", required_argument, NULL, O_BATCH},     {"format", required_argument, NULL, O_FORMAT},
        {"insecure", no_argument, NULL, O_INSECURE},     {"quiet", no_argument, NULL, O_QUIET},
        {"export-items", required_argument, NULL, O_EXPORT}, {"export", required_argument, NULL, O_EXPORT_FORMAT},
        {"out", required_argument, NULL, O_OUT},         {"shard", required_argument, NULL, O_SHARD},
        {"shard-wait", required_argument, NULL, O_SHARD_WAIT}, {NULL, 0, NULL, 0}};
    static const char *const formats[] = {"text", "json", NULL};
    kp_live_args args = {.verb = "seed", .needs_data = 1};
    const char *candidate = NULL, *export_path = NULL, *export_format = NULL, *out_dir = NULL;
    int force = 0, dry_run = 0, batch = 0, format = 0, quiet = 0, shard = 0, shards = 0, c;
    double shard_wait = 0;
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
        case O_CANDIDATE: candidate = optarg; break;
        case O_FORCE: force = 1; break;
        case O_DRY: dry_run = 1; break;
        case O_SCALE:
            if (kp_cli_parse_double(optarg, &args.scale) || args.scale <= 0) {
                fprintf(stderr, "keyplan seed: error: --scale takes a number above 0, not '%s'\n", optarg);
                return KP_EXIT_INPUT;
            }
            break;
        case O_BATCH: {
            char *end;
            long v = strtol(optarg, &end, 10);
            if (end == optarg || *end || v < 1 || v > 10000) {
                fprintf(stderr, "keyplan seed: error: --batch takes a whole number from 1 to 10000, not '%s'\n", optarg);
                return KP_EXIT_INPUT;
            }
            batch = (int)v;
            break;
        }
        case O_FORMAT:
            if (kp_cli_parse_format(optarg, formats, &format)) {
                fprintf(stderr, "keyplan seed: error: --format takes text or json, not '%s'\n", optarg);
                return KP_EXIT_INPUT;
            }
            break;
        case O_INSECURE: args.is_insecure = 1; break;
        case O_QUIET: quiet = 1; break;
        case O_EXPORT: export_path = optarg; break;
        case O_EXPORT_FORMAT: export_format = optarg; break;
        case O_OUT: out_dir = optarg; break;
        case O_SHARD: {
            int used = 0;
            if (sscanf(optarg, "%d/%d%n", &shard, &shards, &used) != 2 || optarg[used] || shards < 1 || shards > 10000 ||
                shard < 1 || shard > shards) {
                fprintf(stderr, "keyplan seed: error: --shard takes I/N, shard I of N (1 <= I <= N <= 10000), not '%s'\n",
                        optarg);
                return KP_EXIT_INPUT;
            }
            break;
        }
        case O_SHARD_WAIT:
            if (kp_cli_parse_double(optarg, &shard_wait) || shard_wait <= 0) {
                fprintf(stderr, "keyplan seed: error: --shard-wait takes a number of seconds above 0, not '%s'\n", optarg);
                return KP_EXIT_INPUT;
            }
            break;
        default:
            fprintf(stderr, "keyplan seed: see `keyplan seed --help`\n");
            return KP_EXIT_INPUT;
        }
    }
    if (optind == argc - 1) args.model_path = argv[optind];
    else if (optind < argc - 1) {
        fprintf(stderr, "keyplan seed: error: give exactly one model file; see `keyplan seed --help`\n");
        return KP_EXIT_INPUT;
    }
    const kp_backend *exporting = NULL;
    if (export_format) {
        char known[256] = "";
        size_t n = 0;
        for (size_t i = 0; kp_backends[i]; i++) {
            if (!kp_backends[i]->export_format) continue;
            if (strcmp(kp_backends[i]->export_format, export_format) == 0) exporting = kp_backends[i];
            n += (size_t)snprintf(known + n, n < sizeof known ? sizeof known - n : 0, "%s%s (%s)", n ? ", " : "",
                                  kp_backends[i]->export_format, kp_backends[i]->name);
        }
        if (!exporting) {
            fprintf(stderr, "keyplan seed: error: --export takes %s, not '%s'\n", known, export_format);
            return KP_EXIT_INPUT;
        }
        if (!out_dir || !out_dir[0]) {
            fprintf(stderr, "keyplan seed: error: --export %s needs --out DIR, the folder to write the files into\n", export_format);
            return KP_EXIT_INPUT;
        }
        if (args.db && strcmp(args.db, exporting->name) != 0) {
            fprintf(stderr, "keyplan seed: error: --export %s writes %s files; give --db %s or leave --db out\n",
                    export_format, exporting->title, exporting->name);
            return KP_EXIT_INPUT;
        }
        args.db = exporting->name;
        dry_run = 1;   /* an export touches no server */
    } else if (out_dir) {
        fprintf(stderr, "keyplan seed: error: --out is the folder of --export FORMAT; give --export too\n");
        return KP_EXIT_INPUT;
    }
    if (shards && dry_run) {
        fprintf(stderr, "keyplan seed: error: --shard splits the writes to a server; --dry-run and --export write "
                        "nothing there (leave --shard out)\n");
        return KP_EXIT_INPUT;
    }
    if (shard_wait > 0 && !shards) {
        fprintf(stderr, "keyplan seed: error: --shard-wait is how long a shard waits for shard 1: give --shard I/N too\n");
        return KP_EXIT_INPUT;
    }
    if (export_path && !dry_run) {
        fprintf(stderr, "keyplan seed: error: --export-items writes the items a dry run makes: add --dry-run (it "
                        "never seeds)\n");
        return KP_EXIT_INPUT;
    }
    if (export_path && !export_path[0]) {
        fprintf(stderr, "keyplan seed: error: --export-items takes a file name\n");
        return KP_EXIT_INPUT;
    }
    kp_live live;
    if (kp_live_open(&args, &live, &err)) { kp_error_print(stderr, &err); return kp_error_exit_code(&err); }
    FILE *export_file = NULL;
    if (export_path) {
        if (live.backend_count != 1) {
            fprintf(stderr, "keyplan seed: error: --export-items takes one database in --db, not %zu\n",
                    live.backend_count);
            kp_live_close(&live);
            return KP_EXIT_INPUT;
        }
        export_file = fopen(export_path, "w");
        if (!export_file) {
            fprintf(stderr, "keyplan seed: error: cannot write %s: %s\n", export_path, strerror(errno));
            kp_live_close(&live);
            return KP_EXIT_INPUT;
        }
    }
    kp_live_catch_interrupt();

    int status = KP_EXIT_OK;
    cJSON *json = format == 1 ? cJSON_CreateObject() : NULL;
    cJSON *databases = NULL;
    if (json) {
        cJSON_AddNumberToObject(json, "schema_version", KP_SCHEMA_VERSION);
        cJSON_AddStringToObject(json, "command", "seed");
        cJSON_AddStringToObject(json, "model", live.model->name ? live.model->name : "");
        cJSON_AddStringToObject(json, "model_hash", live.model->hash);
        cJSON_AddBoolToObject(json, "dry_run", dry_run);
        databases = cJSON_AddArrayToObject(json, "databases");
    }
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
        kp_seed_options seed_options = {.model = live.model, .data = live.data, .data_dir = args.data_dir,
                                   .design = design, .backend = backend, .target = &live.targets[i],
                                   .force = force, .dry_run = dry_run, .batch_size = batch,
                                   .export_items = export_file, .export_dir = exporting ? out_dir : NULL,
                                   .progress = quiet ? NULL : stderr, .interrupted = &kp_live_interrupted,
                                   .shard_index = shard, .shard_count = shards, .shard_wait_seconds = shard_wait};
        kp_seed_report report;
        int rc = kp_seed_run(&seed_options, &report, &err);
        if (json) {
            cJSON *one = kp_seed_report_to_json(&report);
            if (one) {
                cJSON_DeleteItemFromObjectCaseSensitive(one, "schema_version");
                if (rc) cJSON_AddStringToObject(one, "error", err.message);
                cJSON_AddItemToArray(databases, one);
            }
        } else if (report.container_count && (rc == 0 || report.action == KP_SEED_DRY_RUN || report.action == KP_SEED_EXPORTED || report.items_sent ||
                                              err.code == KP_ERR_CHECK)) {
            kp_seed_report_print(stdout, &report);
        }
        if (rc) {
            kp_error_print(stderr, &err);
            kp_live_fail(&status, &err);
        }
        kp_seed_report_free(&report);
        kp_design_list_free(&designs);
    }
    if (export_file) {
        /* a partial export (bad data, a full disk) is removed rather than left to be loaded */
        int bad = ferror(export_file);
        if (fclose(export_file) != 0 || bad) {
            fprintf(stderr, "keyplan seed: error: could not write %s\n", export_path);
            if (status == KP_EXIT_OK) status = KP_EXIT_INPUT;
        }
        if (status != KP_EXIT_OK) remove(export_path);
    }
    if (json) {
        char *text = kp_json_print(json);
        if (text) { puts(text); free(text); }
        cJSON_Delete(json);
    }
    kp_live_close(&live);
    return status;
}
