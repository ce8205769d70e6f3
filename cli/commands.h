/*
 * commands.h — the subcommands, git-style: one cmd_<verb>.c each, dispatched by main.c.
 *
 * A command parses its options (getopt_long), calls library functions and prints.
 * It returns the process exit status (KP_EXIT_*). Its help text is a constant so that
 * `keyplan help VERB` and `keyplan VERB --help` print the same thing.
 */
#ifndef KP_COMMANDS_H
#define KP_COMMANDS_H

#include <stdio.h>

typedef struct kp_command {
    const char *name;
    int (*run)(int argc, char **argv);   /* argv[0] is the verb */
    const char *summary;                 /* one line for `keyplan help` */
    const char *help;                    /* usage, options, an example */
} kp_command;

int cmd_check(int argc, char **argv);
extern const char cmd_check_help[];
int cmd_advise(int argc, char **argv);
extern const char cmd_advise_help[];
int cmd_emit(int argc, char **argv);
extern const char cmd_emit_help[];
int cmd_expect(int argc, char **argv);
extern const char cmd_expect_help[];
int cmd_generate(int argc, char **argv);
extern const char cmd_generate_help[];
int cmd_seed(int argc, char **argv);
extern const char cmd_seed_help[];
int cmd_verify(int argc, char **argv);
extern const char cmd_verify_help[];
int cmd_teardown(int argc, char **argv);
extern const char cmd_teardown_help[];
int cmd_compare(int argc, char **argv);
extern const char cmd_compare_help[];
int cmd_diff(int argc, char **argv);
int cmd_migrate(int argc, char **argv);
extern const char cmd_migrate_help[];
extern const char cmd_diff_help[];
int cmd_run(int argc, char **argv);
extern const char cmd_run_help[];
int cmd_init(int argc, char **argv);
extern const char cmd_init_help[];
int cmd_help(int argc, char **argv);
extern const char cmd_help_help[];

/* The table of commands (NULL-name terminated) and a lookup. */
extern const kp_command kp_commands[];
const kp_command *kp_command_find(const char *name);

/* Prints a command's help text. */
void kp_command_print_help(FILE *stream, const kp_command *command);

/* man.c: the manual page (roff) and the shell completions, from the commands' own texts. */
void kp_print_man(FILE *out);
int kp_print_completion(FILE *out, const char *shell);   /* "bash" or "zsh"; -1 for another */

/* Shared option helpers. */
int kp_cli_parse_format(const char *arg, const char *const *allowed, int *out); /* index in allowed, -1 bad */
int kp_cli_parse_double(const char *arg, double *out);

#endif
