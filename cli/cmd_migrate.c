/*
 * cmd_migrate.c — `keyplan migrate OLD NEW --db LIST`: carry a seeded target from one
 * version of a model to the next. Parsing options and printing only; the work is in
 * migrations/migrate.c.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/commands.h"
#include "cli/live.h"
#include "core/json.h"
#include "migrations/migrate.h"

const char cmd_migrate_help[] =
    "usage: keyplan migrate OLD NEW --db LIST [--target DB=ENDPOINT]... [--prefix P] [--scale F]\n"
    "                       [--rate N] [--state DIR] [--dry-run] [--force] [--format text|json]\n"
    "                       [--insecure] [--quiet]\n\n"
    "Carries a target that `keyplan seed OLD` created over to NEW's design, in the steps\n"
    "`keyplan diff OLD NEW` plans. It reads every record from the target itself (through\n"
    "OLD's design) into a snapshot, applies the model change (attributes kept by name or\n"
    "by NEW's \"renamed_from\"; an added required attribute takes its \"backfill\" value;\n"
    "copies and derived values computed), creates what NEW needs next to what OLD has (so\n"
    "readers of OLD keep working), writes NEW's items (only those that differ), deletes\n"
    "OLD's items NEW does not have, removes what only OLD had, and leaves the marker of\n"
    "NEW's data. Each step is recorded in --state before the next begins: after an\n"
    "interruption (Ctrl-C, kill -9, a server restart) run the same command again and it\n"
    "resumes, losing and duplicating nothing. A change the database cannot make in place\n"
    "(a DynamoDB local index, a Cassandra primary key) rebuilds that container and says it\n"
    "was not online. Writes an application makes during the migration are not carried over.\n\n"
    "Then prove it: keyplan verify NEW --db LIST --data STATE/<db>/new (the data migrate\n"
    "wrote: the target's records, changed by the model change).\n\n"
    "options:\n"
    "  --db LIST         dynamodb, mongodb, cassandra, a comma list, or all\n"
    "  --target DB=URL   where a database listens (repeatable); default: the environment\n"
    "  --prefix P        the prefix the target was seeded with\n"
    "  --scale F         the --scale the target was seeded with (both models take it)\n"
    "  --rate N          items written or deleted per second at most (default: no limit)\n"
    "  --state DIR       progress, snapshot and new data (default: .keyplan-migrate/<model>);\n"
    "                    one folder per database under it\n"
    "  --dry-run         read the target and say what would be written and deleted; change\n"
    "                    nothing on the target\n"
    "  --force           migrate a target whose marker is not a complete seed of OLD\n"
    "  --format FORMAT   text (default) or json\n"
    "  --insecure        do not verify TLS certificates (warned)\n"
    "  --quiet           no progress lines\n\n"
    "exit status: 0 migrated (or already at NEW); 2 bad input, a target not seeded from OLD,\n"
    "or NEW cannot take OLD's records (an added required attribute without \"backfill\");\n"
    "3 server trouble or an interruption (run again to resume).\n\n"
    "example:\n"
    "  keyplan migrate examples/saas-control-plane/versions/3-rename-attribute/old.json \\\n"
    "      examples/saas-control-plane/versions/3-rename-attribute/new.json --db dynamodb \\\n"
    "      --target dynamodb=http://127.0.0.1:18000 --prefix ci1 --scale 0.001 --rate 500\n";

static void print_text(FILE *out, const kp_migrate_report *r, int is_dry_run)
{
    if (r->is_already_done) {
        fprintf(out, "%s: already at the new model; nothing to do\n", r->backend);
        return;
    }
    fprintf(out, "%s: %s design '%s' -> '%s'%s\n", r->backend, is_dry_run ? "would migrate" : "migrated",
            r->old_design ? r->old_design : "?", r->new_design ? r->new_design : "?", r->is_resumed ? " (resumed)" : "");
    fprintf(out, "  records read from the target %ld; records of the new model %ld; items of the new design %ld\n",
            r->records_old, r->records_new, r->items_new);
    fprintf(out, "  items %s %ld, unchanged %ld, %s %ld  (%.1f s)\n", is_dry_run ? "to write" : "written", r->items_written,
            r->items_unchanged, is_dry_run ? "to delete" : "deleted", r->items_deleted, r->seconds);
    if (r->note[0]) fprintf(out, "  note: %s\n", r->note);
    fprintf(out, "  data of the new model: %s\n", r->data_dir);
}

static cJSON *to_json(const kp_migrate_report *r, int is_dry_run)
{
    cJSON *j = cJSON_CreateObject();
    cJSON_AddStringToObject(j, "backend", r->backend);
    cJSON_AddStringToObject(j, "status", r->is_already_done ? "already-done" : is_dry_run ? "dry-run" : "migrated");
    if (r->old_design) cJSON_AddStringToObject(j, "old_design", r->old_design);
    if (r->new_design) cJSON_AddStringToObject(j, "new_design", r->new_design);
    cJSON_AddBoolToObject(j, "resumed", r->is_resumed);
    cJSON_AddBoolToObject(j, "rebuilt", r->is_rebuilt);
    cJSON_AddNumberToObject(j, "records_old", (double)r->records_old);
    cJSON_AddNumberToObject(j, "records_new", (double)r->records_new);
    cJSON_AddNumberToObject(j, "items_new", (double)r->items_new);
    cJSON_AddNumberToObject(j, "items_written", (double)r->items_written);
    cJSON_AddNumberToObject(j, "items_unchanged", (double)r->items_unchanged);
    cJSON_AddNumberToObject(j, "items_deleted", (double)r->items_deleted);
    cJSON_AddNumberToObject(j, "seconds", r->seconds);
    cJSON_AddStringToObject(j, "note", r->note);
    cJSON_AddStringToObject(j, "data", r->data_dir);
    return j;
}

int cmd_migrate(int argc, char **argv)
{
    enum { O_DB = 1, O_TARGET, O_PREFIX, O_SCALE, O_RATE, O_STATE, O_DRY, O_FORCE, O_FORMAT, O_INSECURE, O_QUIET };
    static const struct option options[] = {
        {"db", required_argument, NULL, O_DB},         {"target", required_argument, NULL, O_TARGET},
        {"prefix", required_argument, NULL, O_PREFIX}, {"scale", required_argument, NULL, O_SCALE},
        {"rate", required_argument, NULL, O_RATE},     {"state", required_argument, NULL, O_STATE},
        {"dry-run", no_argument, NULL, O_DRY},         {"force", no_argument, NULL, O_FORCE},
        {"format", required_argument, NULL, O_FORMAT}, {"insecure", no_argument, NULL, O_INSECURE},
        {"quiet", no_argument, NULL, O_QUIET},         {NULL, 0, NULL, 0}};
    static const char *const formats[] = {"text", "json", NULL};
    kp_live_args args = {.verb = "migrate"};
    double rate = 0;
    int dry_run = 0, force = 0, format = 0, quiet = 0, c;
    const char *state = NULL;
    kp_error err;
    optind = 1;
    while ((c = getopt_long(argc, argv, "", options, NULL)) != -1) {
        switch (c) {
        case O_DB: args.db = optarg; break;
        case O_TARGET:
            if (kp_live_add_target(&args, optarg, &err)) { kp_error_print(stderr, &err); return KP_EXIT_INPUT; }
            break;
        case O_PREFIX: args.prefix = optarg; break;
        case O_SCALE:
            if (kp_cli_parse_double(optarg, &args.scale) || args.scale <= 0) {
                fprintf(stderr, "keyplan migrate: error: --scale takes a number above 0, not '%s'\n", optarg);
                return KP_EXIT_INPUT;
            }
            break;
        case O_RATE:
            if (kp_cli_parse_double(optarg, &rate) || rate <= 0) {
                fprintf(stderr, "keyplan migrate: error: --rate takes items per second above 0, not '%s'\n", optarg);
                return KP_EXIT_INPUT;
            }
            break;
        case O_STATE: state = optarg; break;
        case O_DRY: dry_run = 1; break;
        case O_FORCE: force = 1; break;
        case O_FORMAT:
            if (kp_cli_parse_format(optarg, formats, &format)) {
                fprintf(stderr, "keyplan migrate: error: --format takes text or json, not '%s'\n", optarg);
                return KP_EXIT_INPUT;
            }
            break;
        case O_INSECURE: args.is_insecure = 1; break;
        case O_QUIET: quiet = 1; break;
        default: fprintf(stderr, "keyplan migrate: see `keyplan migrate --help`\n"); return KP_EXIT_INPUT;
        }
    }
    if (optind != argc - 2) {
        fprintf(stderr, "keyplan migrate: error: give two model files, the old version then the new; see `keyplan "
                        "migrate --help`\n");
        return KP_EXIT_INPUT;
    }
    args.model_path = argv[optind + 1];
    kp_live live;
    if (kp_live_open(&args, &live, &err)) { kp_error_print(stderr, &err); return kp_error_exit_code(&err); }
    kp_model *old_model = NULL;
    kp_model_options mo = {.scale = args.scale > 0 ? args.scale : 1};
    if (kp_model_load(argv[optind], &mo, &old_model, &err) || kp_migrate_check_models(old_model, live.model, &err)) {
        kp_error_print(stderr, &err);
        kp_model_free(old_model);
        kp_live_close(&live);
        return kp_error_exit_code(&err);
    }
    kp_live_catch_interrupt();
    int status = KP_EXIT_OK;
    cJSON *all = cJSON_CreateArray();
    for (size_t i = 0; i < live.backend_count; i++) {
        const kp_backend *b = live.backends[i];
        kp_design_list olds = {0}, news = {0};
        if (kp_live_propose(b, old_model, &olds, &err) || kp_live_propose(b, live.model, &news, &err)) {
            kp_error_print(stderr, &err);
            kp_live_fail(&status, &err);
            kp_design_list_free(&olds);
            kp_design_list_free(&news);
            continue;
        }
        char dir[1200];
        snprintf(dir, sizeof dir, "%s/%s%s%s", state ? state : ".keyplan-migrate", state ? "" : live.model->name,
                 state ? "" : "/", b->name);
        if (args.prefix && *args.prefix && !state) {
            size_t n = strlen(dir);
            snprintf(dir + n, sizeof dir - n, "-%s", args.prefix);
        }
        kp_migrate_options o = {
            .old_model = old_model, .new_model = live.model, .backend = b, .target = &live.targets[i],
            .old_designs = &olds, .new_design = news.items[0], .state_dir = dir, .rate = rate, .is_dry_run = dry_run,
            .is_force = force, .progress = quiet ? NULL : stderr, .interrupted = &kp_live_interrupted};
        kp_migrate_report r;
        kp_error_clear(&err);
        int rc = kp_migrate_run(&o, &r, &err);
        if (rc) {
            kp_error_print(stderr, &err);
            kp_live_fail(&status, &err);
        } else if (format == 1) {
            cJSON_AddItemToArray(all, to_json(&r, dry_run));
        } else {
            print_text(stdout, &r, dry_run);
            char scale[64] = "";
            if (args.scale > 0) snprintf(scale, sizeof scale, " --scale %g", args.scale);
            if (!dry_run && !r.is_already_done)
                printf("  prove it: keyplan verify %s --db %s --data %s%s%s%s\n", args.model_path, b->name, r.data_dir,
                       args.prefix ? " --prefix " : "", args.prefix ? args.prefix : "", scale);
        }
        kp_design_list_free(&olds);
        kp_design_list_free(&news);
    }
    if (format == 1) {
        cJSON *doc = cJSON_CreateObject();
        cJSON_AddNumberToObject(doc, "schema_version", 1);
        cJSON_AddStringToObject(doc, "command", "migrate");
        cJSON_AddItemToObject(doc, "databases", all);
        all = doc;
        char *text = kp_json_print(all);
        fputs(text ? text : "[]", stdout);
        fputc('\n', stdout);
        cJSON_free(text);
    }
    cJSON_Delete(all);
    kp_model_free(old_model);
    kp_live_close(&live);
    return status;
}
