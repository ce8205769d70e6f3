/*
 * cmd_teardown.c — `keyplan teardown MODEL --db LIST`: remove exactly what keyplan
 * created for a model under a prefix, found by its seed marker, and nothing else.
 * Parsing options and printing only; inspect and drop are the backends'.
 */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "cli/commands.h"
#include "cli/live.h"
#include "migrations/seed.h"

const char cmd_teardown_help[] =
    "usage: keyplan teardown MODEL --db LIST [--target DB=ENDPOINT]... [--prefix P] [--force]\n"
    "                        [--scale F] [--insecure]\n\n"
    "Removes the tables, collections or keyspaces keyplan created for the model's designs\n"
    "under the prefix, and their seed marker. Only containers that carry keyplan's marker\n"
    "are removed; containers of a design that exist without it are refused (keyplan did\n"
    "not create them, or cannot tell). A target seeded from another version of the model\n"
    "file is refused unless --force is given (the data and --scale it was seeded with do\n"
    "not matter); --force also removes empty containers a backend says keyplan created\n"
    "but never marked.\n\n"
    "options:\n"
    "  --db LIST          dynamodb, mongodb, cassandra, a comma list, or all\n"
    "  --target DB=URL    where a database listens (repeatable); default: the environment\n"
    "  --prefix P         the prefix the target was seeded with\n"
    "  --force            also remove what another version of the model seeded\n"
    "  --scale F          the --scale to propose designs at (a design's containers can\n"
    "                     depend on it; use the one the target was seeded with)\n"
    "  --insecure         do not verify TLS certificates (warned)\n\n"
    "exit status: 0 removed (or nothing to remove); 2 refused; 3 server trouble.\n\n"
    "example:\n"
    "  keyplan teardown examples/saas-control-plane/model.json --db dynamodb \\\n"
    "      --target dynamodb=http://127.0.0.1:18000 --prefix ci1\n";

static void container_names(const kp_design *d, char *buf, size_t size)
{
    buf[0] = '\0';
    for (size_t i = 0; i < d->container_count; i++) {
        size_t o = strlen(buf);
        snprintf(buf + o, size - o, "%s%s", i ? ", " : "", d->containers[i].name);
    }
}

/* 1 removed, 0 nothing of this candidate there, -1 refused or failed (err). */
static int tear_down_candidate(const kp_backend *b, kp_conn *conn, const kp_model *model, const kp_design *d,
                               const char *prefix, int force, kp_error *err)
{
    kp_target_state state;
    if (b->inspect(conn, d, &state, err)) { if (err->code == KP_OK) err->code = KP_ERR_TARGET; return -1; }
    char names[600];
    container_names(d, names, sizeof names);
    const char *where = prefix[0] ? " under prefix " : "";
    int rc = 0;
    if (state.marker) {
        const cJSON *candidate = cJSON_GetObjectItemCaseSensitive(state.marker, "design");
        const cJSON *tool = cJSON_GetObjectItemCaseSensitive(state.marker, "tool");
        int is_ours = cJSON_IsString(tool) && strcmp(tool->valuestring, "keyplan") == 0;
        if (!is_ours) {
            rc = kp_error_set(err, KP_ERR_USAGE, NULL, 0, 0, "%s: the containers of design '%s' (%s)%s%s carry a "
                              "marker keyplan did not write; keyplan removes only what it created", b->name,
                              d->candidate, names, where, prefix);
        } else if (!cJSON_IsString(candidate) || strcmp(candidate->valuestring, d->candidate) != 0) {
            rc = 0; /* another candidate's marker: that candidate's turn removes it */
        } else {
            /* the same model file is enough: scale and data do not change what keyplan created */
            const cJSON *hash = cJSON_GetObjectItemCaseSensitive(state.marker, "model_hash");
            const cJSON *seeded_from = cJSON_GetObjectItemCaseSensitive(state.marker, "model");
            int is_same_model = cJSON_IsString(hash) && strcmp(hash->valuestring, model->hash) == 0;
            if (!is_same_model && !force) {
                rc = kp_error_set(err, KP_ERR_USAGE, NULL, 0, 0, "%s: not removing design '%s' (%s)%s%s: it was seeded "
                                  "from model '%s' (hash %s), not from this model file (hash %s); pass --force to remove "
                                  "it anyway", b->name, d->candidate, names, where, prefix,
                                  cJSON_IsString(seeded_from) ? seeded_from->valuestring : "?",
                                  cJSON_IsString(hash) ? hash->valuestring : "none", model->hash);
            } else if (b->drop(conn, d, err)) {
                if (err->code == KP_OK) err->code = KP_ERR_TARGET;
                rc = -1;
            } else {
                printf("%s: removed design '%s': %s%s%s\n", b->name, d->candidate, names, where, prefix);
                rc = 1;
            }
        }
    } else if (state.exists) {
        if (force && !state.is_foreign && state.is_empty) {
            if (b->drop(conn, d, err)) { if (err->code == KP_OK) err->code = KP_ERR_TARGET; rc = -1; }
            else {
                printf("%s: removed design '%s' (empty, never marked): %s%s%s\n", b->name, d->candidate, names, where,
                       prefix);
                rc = 1;
            }
        } else {
            rc = kp_error_set(err, KP_ERR_USAGE, NULL, 0, 0, "%s: containers of design '%s' (%s)%s%s exist without "
                              "keyplan's seed marker; keyplan removes only what it created%s", b->name, d->candidate,
                              names, where, prefix,
                              !state.is_foreign && state.is_empty ? " (they are empty: --force removes them)" : "");
        }
    }
    cJSON_Delete(state.marker);
    return rc;
}

int cmd_teardown(int argc, char **argv)
{
    enum { O_DB = 1, O_TARGET, O_PREFIX, O_FORCE, O_SCALE, O_INSECURE };
    static const struct option options[] = {
        {"db", required_argument, NULL, O_DB},         {"target", required_argument, NULL, O_TARGET},
        {"prefix", required_argument, NULL, O_PREFIX}, {"force", no_argument, NULL, O_FORCE},
        {"scale", required_argument, NULL, O_SCALE},   {"insecure", no_argument, NULL, O_INSECURE},
        {NULL, 0, NULL, 0}};
    kp_live_args args = {.verb = "teardown"};
    int force = 0, c;
    kp_error err;
    optind = 1;
    while ((c = getopt_long(argc, argv, "", options, NULL)) != -1) {
        switch (c) {
        case O_DB: args.db = optarg; break;
        case O_TARGET:
            if (kp_live_add_target(&args, optarg, &err)) { kp_error_print(stderr, &err); return KP_EXIT_INPUT; }
            break;
        case O_PREFIX: args.prefix = optarg; break;
        case O_FORCE: force = 1; break;
        case O_SCALE:
            if (kp_cli_parse_double(optarg, &args.scale) || args.scale <= 0) {
                fprintf(stderr, "keyplan teardown: error: --scale takes a number above 0, not '%s'\n", optarg);
                return KP_EXIT_INPUT;
            }
            break;
        case O_INSECURE: args.is_insecure = 1; break;
        default:
            fprintf(stderr, "keyplan teardown: see `keyplan teardown --help`\n");
            return KP_EXIT_INPUT;
        }
    }
    if (optind == argc - 1) args.model_path = argv[optind];
    else if (optind < argc - 1) {
        fprintf(stderr, "keyplan teardown: error: give exactly one model file; see `keyplan teardown --help`\n");
        return KP_EXIT_INPUT;
    }
    kp_live live;
    if (kp_live_open(&args, &live, &err)) { kp_error_print(stderr, &err); return kp_error_exit_code(&err); }
    int status = KP_EXIT_OK;
    for (size_t i = 0; i < live.backend_count; i++) {
        const kp_backend *b = live.backends[i];
        kp_design_list designs;
        if (kp_live_propose(b, live.model, &designs, &err)) {
            kp_error_print(stderr, &err);
            kp_live_fail(&status, &err);
            continue;
        }
        kp_conn *conn = NULL;
        if (b->connect(&live.targets[i], &conn, &err)) {
            if (err.code == KP_OK) err.code = KP_ERR_TARGET;
            kp_error_print(stderr, &err);
            kp_live_fail(&status, &err);
            kp_design_list_free(&designs);
            continue;
        }
        int removed = 0;
        for (size_t k = 0; k < designs.count; k++) {
            int rc = tear_down_candidate(b, conn, live.model, designs.items[k], live.targets[i].prefix, force, &err);
            if (rc < 0) {
                kp_error_print(stderr, &err);
                kp_live_fail(&status, &err);
                if (err.code == KP_ERR_TARGET) break;
            }
            removed += rc > 0;
        }
        if (!removed && status == KP_EXIT_OK)
            printf("%s: nothing of keyplan's for model '%s'%s%s; nothing removed\n", b->name, live.model->name,
                   live.targets[i].prefix[0] ? " under prefix " : "", live.targets[i].prefix);
        b->disconnect(conn);
        kp_design_list_free(&designs);
    }
    kp_live_close(&live);
    return status;
}
