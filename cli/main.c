/*
 * main.c — dispatches `keyplan VERB ...` to cmd_VERB; `--version`, `help`.
 *
 * Invariant: this is the only file that knows the list of commands.
 */
#include "cli/commands.h"

#include <stdlib.h>
#include <string.h>

#include "core/error.h"

const kp_command kp_commands[] = {
    {"init", cmd_init, "write a model to start from (a skeleton or a bundled example)", cmd_init_help},
    {"check", cmd_check, "validate a model and summarise it", cmd_check_help},
    {"advise", cmd_advise, "propose a design per database, explained and costed", cmd_advise_help},
    {"compare", cmd_compare, "compare the designs of each database: cost, risks, recommendation", cmd_compare_help},
    {"emit", cmd_emit, "write the files that apply a design (schema, requests, models)", cmd_emit_help},
    {"expect", cmd_expect, "the oracle's response for one request of a pattern", cmd_expect_help},
    {"generate", cmd_generate, "write sample data for a model (NDJSON per entity)", cmd_generate_help},
    {"seed", cmd_seed, "write the sample data into live targets, resumably", cmd_seed_help},
    {"verify", cmd_verify, "check every access pattern on a seeded target against the oracle", cmd_verify_help},
    {"teardown", cmd_teardown, "remove what keyplan created under a prefix", cmd_teardown_help},
    {"migrate", cmd_migrate, "carry a seeded target to a new model version: online, resumable, throttled", cmd_migrate_help},
    {"diff", cmd_diff, "what a change between two model versions does to readers and to each design", cmd_diff_help},
    {"run", cmd_run, "the design-review gate: check, advise, seed, verify --writes, reports", cmd_run_help},
    {"help", cmd_help, "show help for keyplan or one command", cmd_help_help},
    {NULL, NULL, NULL, NULL},
};

const kp_command *kp_command_find(const char *name)
{
    for (const kp_command *c = kp_commands; c->name; c++)
        if (strcmp(c->name, name) == 0) return c;
    return NULL;
}

void kp_command_print_help(FILE *stream, const kp_command *command)
{
    fputs(command->help, stream);
}

static void print_overview(FILE *stream)
{
    fprintf(stream,
            "keyplan %s — query-first NoSQL designs, proven on live servers\n\n"
            "usage: keyplan <command> [options]\n\n"
            "commands:\n",
            KP_VERSION);
    for (const kp_command *c = kp_commands; c->name; c++) fprintf(stream, "  %-10s %s\n", c->name, c->summary);
    fprintf(stream,
            "\n`keyplan help <command>` or `keyplan <command> --help` shows a command's options and an example.\n"
            "Exit codes: 0 ok, 1 a check failed, 2 bad input, 3 server trouble.\n");
}

const char cmd_help_help[] =
    "usage: keyplan help [COMMAND | --man | --completion bash|zsh]\n\n"
    "Shows the list of commands, or the help of one command (the same text as\n"
    "`keyplan COMMAND --help`). --man prints the manual page keyplan(1) and\n"
    "--completion the bash or zsh completion script, both made from these same texts\n"
    "(cmake --install puts them where man, bash and zsh look).\n\n"
    "example:\n  keyplan help check\n  keyplan help --man | man -l -\n"
    "  source <(keyplan help --completion bash)\n";

int cmd_help(int argc, char **argv)
{
    if (argc < 2) { print_overview(stdout); return KP_EXIT_OK; }
    if (strcmp(argv[1], "--man") == 0) { kp_print_man(stdout); return KP_EXIT_OK; }
    if (strcmp(argv[1], "--completion") == 0) {
        if (argc < 3 || kp_print_completion(stdout, argv[2])) {
            fprintf(stderr, "keyplan: error: --completion takes bash or zsh\n");
            return KP_EXIT_INPUT;
        }
        return KP_EXIT_OK;
    }
    const kp_command *c = kp_command_find(argv[1]);
    if (!c) {
        fprintf(stderr, "keyplan: error: there is no command '%s'; `keyplan help` lists them\n", argv[1]);
        return KP_EXIT_INPUT;
    }
    kp_command_print_help(stdout, c);
    return KP_EXIT_OK;
}

int kp_cli_parse_format(const char *arg, const char *const *allowed, int *out)
{
    for (int i = 0; allowed[i]; i++)
        if (strcmp(arg, allowed[i]) == 0) { *out = i; return 0; }
    return -1;
}

int kp_cli_parse_double(const char *arg, double *out)
{
    char *end;
    double v = strtod(arg, &end);
    if (end == arg || *end) return -1;
    *out = v;
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 2) { print_overview(stderr); return KP_EXIT_INPUT; }
    const char *verb = argv[1];
    if (strcmp(verb, "--version") == 0 || strcmp(verb, "version") == 0) {
        printf("keyplan %s\n", KP_VERSION);
        return KP_EXIT_OK;
    }
    if (strcmp(verb, "--help") == 0 || strcmp(verb, "-h") == 0) { print_overview(stdout); return KP_EXIT_OK; }
    const kp_command *c = kp_command_find(verb);
    if (!c) {
        const char *names[32];
        size_t n = 0;
        for (const kp_command *k = kp_commands; k->name && n < 31; k++) names[n++] = k->name;
        names[n] = NULL;
        const char *guess = kp_suggest(verb, names);
        fprintf(stderr, "keyplan: error: '%s' is not a command%s%s%s; `keyplan help` lists them\n", verb,
                guess ? " (did you mean '" : "", guess ? guess : "", guess ? "'?)" : "");
        return KP_EXIT_INPUT;
    }
    for (int i = 2; i < argc; i++) {
        if (strcmp(argv[i], "--") == 0) break;
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            kp_command_print_help(stdout, c);
            return KP_EXIT_OK;
        }
    }
    return c->run(argc - 1, argv + 1);
}
