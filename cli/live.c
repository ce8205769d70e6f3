/*
 * live.c — what the commands that talk to servers share (seed, verify, teardown):
 * --db and --target parsing, --prefix checking, loading the model and data, choosing
 * a design, and Ctrl-C that stops a pipeline cleanly.
 *
 * Invariant: a --target names a database that --db selected, once; a database
 * without a --target uses its conventional environment (endpoint NULL).
 */
#include "cli/live.h"

#include <ctype.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int kp_live_add_target(kp_live_args *args, const char *text, kp_error *err)
{
    const char *eq = strchr(text, '=');
    if (!eq || eq == text || !eq[1])
        return kp_error_set(err, KP_ERR_USAGE, NULL, 0, 0, "--target takes DATABASE=ENDPOINT (e.g. "
                            "dynamodb=http://127.0.0.1:18000), not '%s'", text);
    if (args->target_count == sizeof args->targets / sizeof args->targets[0])
        return kp_error_set(err, KP_ERR_USAGE, NULL, 0, 0, "too many --target options");
    args->targets[args->target_count++] = text;
    return 0;
}

static int check_prefix(const char *prefix, kp_error *err)
{
    size_t n = strlen(prefix);
    int ok = n > 0 && n <= 32 && isalpha((unsigned char)prefix[0]);
    for (size_t i = 0; ok && i < n; i++) ok = isalnum((unsigned char)prefix[i]) || prefix[i] == '_' || prefix[i] == '-';
    if (!ok)
        return kp_error_set(err, KP_ERR_USAGE, NULL, 0, 0, "--prefix '%s': use 1 to 32 letters, digits, '_' or '-', "
                            "starting with a letter (it must be valid in every database's names)", prefix);
    return 0;
}

int kp_live_open(const kp_live_args *args, kp_live *live, kp_error *err)
{
    memset(live, 0, sizeof *live);
    if (!args->model_path)
        return kp_error_set(err, KP_ERR_USAGE, NULL, 0, 0, "give exactly one model file; see `keyplan %s --help`",
                            args->verb);
    if (!args->db)
        return kp_error_set(err, KP_ERR_USAGE, NULL, 0, 0, "say which database with --db (%s, a comma list, or all); "
                            "see `keyplan %s --help`", kp_backend_names(), args->verb);
    if (args->needs_data && !args->data_dir)
        return kp_error_set(err, KP_ERR_USAGE, NULL, 0, 0, "say where the sample data is with --data DIR (`keyplan "
                            "generate` writes it); see `keyplan %s --help`", args->verb);
    if (args->prefix && check_prefix(args->prefix, err)) return -1;
    if (kp_backend_parse_list(args->db, live->backends, sizeof live->backends / sizeof live->backends[0], err)) return -1;
    for (size_t i = 0; live->backends[i]; i++) {
        live->targets[i] = (kp_target){.database = live->backends[i]->name, .prefix = args->prefix ? args->prefix : "",
                                       .is_insecure = args->is_insecure};
        live->backend_count++;
    }
    for (size_t t = 0; t < args->target_count; t++) {
        const char *text = args->targets[t];
        const char *eq = strchr(text, '=');
        char name[64];
        snprintf(name, sizeof name, "%.*s", (int)(eq - text), text);
        size_t found = live->backend_count;
        for (size_t i = 0; i < live->backend_count; i++)
            if (strcmp(live->backends[i]->name, name) == 0) found = i;
        if (found == live->backend_count) {
            if (!kp_backend_find(name)) {
                /* the registry's own message: a suggestion, or "no such backend yet" */
                const kp_backend *unused[2];
                kp_error why;
                kp_error_clear(&why);
                kp_backend_parse_list(name, unused, 2, &why);
                return kp_error_set(err, KP_ERR_USAGE, NULL, 0, 0, "--target %s: %s", text,
                                    why.message[0] ? why.message : "unknown database");
            }
            return kp_error_set(err, KP_ERR_USAGE, NULL, 0, 0, "--target %s names %s, which --db %s does not select",
                                text, name, args->db);
        }
        if (live->targets[found].endpoint)
            return kp_error_set(err, KP_ERR_USAGE, NULL, 0, 0, "--target names %s twice", name);
        live->targets[found].endpoint = eq + 1;
    }
    if (args->is_insecure)
        fprintf(stderr, "keyplan %s: warning: --insecure: TLS certificates are not verified\n", args->verb);
    kp_model_options model_options = {.scale = args->scale > 0 ? args->scale : 1};
    if (kp_model_load(args->model_path, &model_options, &live->model, err)) return -1;
    if (args->data_dir && args->needs_data && kp_dataset_load(live->model, args->data_dir, &live->data, err)) {
        kp_live_close(live);
        return -1;
    }
    return 0;
}

void kp_live_close(kp_live *live)
{
    kp_dataset_free(live->data);
    kp_model_free(live->model);
    memset(live, 0, sizeof *live);
}

int kp_live_propose(const kp_backend *backend, const kp_model *model, kp_design_list *out, kp_error *err)
{
    memset(out, 0, sizeof *out);
    kp_propose_options options = {.mix = NULL, .all_candidates = 1};
    if (backend->propose(model, &options, out, err)) return -1;
    if (out->count == 0)
        return kp_error_set(err, KP_ERR_INTERNAL, NULL, 0, 0, "the %s backend proposed no design for model '%s'",
                            backend->name, model->name);
    return 0;
}

const kp_design *kp_live_pick(const kp_design_list *designs, const char *candidate, kp_error *err)
{
    if (!candidate) return designs->items[0];
    const char *names[33];
    size_t n = 0;
    for (size_t i = 0; i < designs->count; i++) {
        if (strcmp(designs->items[i]->candidate, candidate) == 0) return designs->items[i];
        if (n < 32) names[n++] = designs->items[i]->candidate;
    }
    names[n] = NULL;
    char list[400] = "";
    for (size_t i = 0; i < n; i++) {
        size_t o = strlen(list);
        snprintf(list + o, sizeof list - o, "%s'%s'", i ? ", " : "", names[i]);
    }
    const char *guess = kp_suggest(candidate, names);
    kp_error_set(err, KP_ERR_USAGE, NULL, 0, 0, "--candidate '%s' is not a design %s proposes%s%s%s; it proposes %s",
                 candidate, designs->items[0]->backend ? designs->items[0]->backend->name : "the backend",
                 guess ? " (did you mean '" : "", guess ? guess : "", guess ? "'?)" : "", list);
    return NULL;
}

/* ---- Ctrl-C ------------------------------------------------------------------------------ */

volatile sig_atomic_t kp_live_interrupted = 0;

static void on_interrupt(int signal_number)
{
    (void)signal_number;
    kp_live_interrupted = 1;
}

void kp_live_catch_interrupt(void)
{
    struct sigaction action;
    memset(&action, 0, sizeof action);
    action.sa_handler = on_interrupt;
    action.sa_flags = SA_RESETHAND; /* a second Ctrl-C stops at once */
    sigemptyset(&action.sa_mask);
    sigaction(SIGINT, &action, NULL);
    sigaction(SIGTERM, &action, NULL);
}

/* The exit status so far: the first failure decides. */
void kp_live_fail(int *status, const kp_error *err)
{
    if (*status == KP_EXIT_OK) *status = kp_error_exit_code(err);
}
