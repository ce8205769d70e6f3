/*
 * man.c — the manual page and the shell completions, printed from the same texts as
 * `keyplan help` (`keyplan help --man`, `keyplan help --completion bash|zsh`), so the
 * installed man page, the completions and the help can never disagree.
 *
 * Invariant: everything here is derived from kp_commands (names, summaries, help texts
 * and the options those texts list) and from the backend registry (--db values); no
 * command, option or database is written by hand in this file.
 */
#include "cli/commands.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "backends/backend.h"
#include "core/error.h"

/* roff text: a backslash doubled, a line starting with '.' or '\'' protected */
static void roff_line(FILE *out, const char *line, size_t len)
{
    if (len && (line[0] == '.' || line[0] == '\'')) fputs("\\&", out);
    for (size_t i = 0; i < len; i++) {
        if (line[i] == '\\') fputs("\\e", out);
        else if (line[i] == '-' && i + 1 < len && line[i + 1] == '-') { fputs("\\-\\-", out); i++; }
        else fputc(line[i], out);
    }
    fputc('\n', out);
}

static void roff_block(FILE *out, const char *text)
{
    fputs(".nf\n", out);
    for (const char *line = text; *line;) {
        const char *end = strchr(line, '\n');
        size_t len = end ? (size_t)(end - line) : strlen(line);
        roff_line(out, line, len);
        line += len + (end ? 1 : 0);
    }
    fputs(".fi\n", out);
}

void kp_print_man(FILE *out)
{
    fprintf(out, ".TH KEYPLAN 1 \"\" \"keyplan %s\" \"User Commands\"\n", KP_VERSION);
    fputs(".SH NAME\nkeyplan \\- query\\-first NoSQL designs, proven on live servers\n", out);
    fputs(".SH SYNOPSIS\n.B keyplan\n.I command\n[\\fIoptions\\fR]\n", out);
    fputs(".SH DESCRIPTION\n"
          "keyplan reads a neutral domain model (entities, relations and the exact JSON each access pattern must "
          "return), proposes a physical design for each database, explains and costs every choice, compares the "
          "candidates, emits what a team applies, seeds a live server with sample data in that layout and verifies "
          "that every access pattern returns exactly the declared response.\n", out);
    fprintf(out, ".PP\nDatabases: %s.\n", kp_backend_names());
    fputs(".SH COMMANDS\n", out);
    for (const kp_command *c = kp_commands; c->name; c++) {
        fprintf(out, ".SS %s\n", c->name);
        roff_line(out, c->summary, strlen(c->summary));
        fputs(".PP\n", out);
        roff_block(out, c->help);
    }
    fputs(".SH EXIT STATUS\n"
          ".TP\n0\nok\n.TP\n1\na check failed (a verify mismatch; a defect with \\-\\-strict)\n"
          ".TP\n2\nbad input (a malformed model, wrong data, bad options, missing credentials)\n"
          ".TP\n3\nserver trouble (unreachable, failing or throttling beyond the retries)\n", out);
    fputs(".SH ENVIRONMENT\n"
          "AWS_ENDPOINT_URL_DYNAMODB, AWS_ENDPOINT_URL, AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN, "
          "AWS_PROFILE, AWS_REGION; MONGODB_URI; CASSANDRA_HOST, CASSANDRA_PORT, CASSANDRA_USERNAME, "
          "CASSANDRA_PASSWORD; NO_COLOR.\n", out);
    fputs(".SH SEE ALSO\nThe model reference and the output schemas in the documentation installed with keyplan "
          "(docs/model.md, docs/output.md, model.schema.json).\n", out);
}

/* True when the space-separated list holds the token. */
static int has_token(const char *list, const char *token, size_t len)
{
    for (const char *p = list; (p = strstr(p, token)) != NULL; p++)
        if ((p == list || p[-1] == ' ') && (p[len] == ' ' || p[len] == '\0') && strncmp(p, token, len) == 0) return 1;
    return 0;
}

/* The long options a command's help text lists ("  --db LIST ..." lines), space-separated,
 * each once, then --help. */
static void options_of(const kp_command *c, char *buf, size_t size)
{
    size_t at = 0;
    buf[0] = '\0';
    for (const char *line = c->help; *line;) {
        const char *end = strchr(line, '\n');
        size_t len = end ? (size_t)(end - line) : strlen(line);
        const char *p = line;
        while (p < line + len && *p == ' ') p++;
        if (p > line && p + 2 < line + len && p[0] == '-' && p[1] == '-' && isalpha((unsigned char)p[2])) {
            const char *q = p;
            while (q < line + len && (isalnum((unsigned char)*q) || *q == '-')) q++;
            char token[64];
            snprintf(token, sizeof token, "%.*s", (int)(q - p), p);
            if (!has_token(buf, token, strlen(token)) && at + strlen(token) + 2 < size)
                at += (size_t)snprintf(buf + at, size - at, "%s%s", at ? " " : "", token);
        }
        line += len + (end ? 1 : 0);
    }
    if (!has_token(buf, "--help", 6) && at + 8 < size) snprintf(buf + at, size - at, "%s--help", at ? " " : "");
}

/* The registry's database names separated by spaces, for word lists. */
static void database_words(char *buf, size_t size)
{
    size_t at = 0;
    buf[0] = '\0';
    for (size_t i = 0; kp_backends[i] && at < size; i++)
        at += (size_t)snprintf(buf + at, size - at, "%s%s", i ? " " : "", kp_backends[i]->name);
}

static void print_bash(FILE *out)
{
    fputs("# bash completion for keyplan (generated by `keyplan help --completion bash`)\n"
          "_keyplan() {\n"
          "    local cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD-1]} verb=${COMP_WORDS[1]}\n"
          "    if [[ $COMP_CWORD -eq 1 ]]; then\n"
          "        COMPREPLY=($(compgen -W \"", out);
    for (const kp_command *c = kp_commands; c->name; c++) fprintf(out, "%s ", c->name);
    fputs("--version --help\" -- \"$cur\")); return\n"
          "    fi\n"
          "    case $prev in\n", out);
    char words[256];
    database_words(words, sizeof words);
    fprintf(out, "        --db) COMPREPLY=($(compgen -W \"%s all\" -- \"$cur\")); return ;;\n", words);
    fputs("        --format) COMPREPLY=($(compgen -W \"text md json html\" -- \"$cur\")); return ;;\n"
          "        --out|--data|--junit) COMPREPLY=($(compgen -d -- \"$cur\")); return ;;\n"
          "    esac\n"
          "    local options\n"
          "    case $verb in\n", out);
    char opts[2048];
    for (const kp_command *c = kp_commands; c->name; c++) {
        options_of(c, opts, sizeof opts);
        fprintf(out, "        %s) options=\"%s\" ;;\n", c->name, opts);
    }
    fputs("    esac\n"
          "    if [[ $cur == -* ]]; then COMPREPLY=($(compgen -W \"$options\" -- \"$cur\"))\n"
          "    else COMPREPLY=($(compgen -f -- \"$cur\")); fi\n"
          "}\n"
          "complete -o filenames -F _keyplan keyplan\n", out);
}

static void print_zsh(FILE *out)
{
    fputs("#compdef keyplan\n# zsh completion for keyplan (generated by `keyplan help --completion zsh`)\n"
          "_keyplan() {\n"
          "    local -a commands\n"
          "    commands=(\n", out);
    for (const kp_command *c = kp_commands; c->name; c++) {
        fprintf(out, "        '%s:", c->name);
        for (const char *s = c->summary; *s; s++) {
            if (*s == '\'') fputs("'\\''", out);
            else if (*s == ':') fputs("\\:", out);
            else fputc(*s, out);
        }
        fputs("'\n", out);
    }
    fputs("    )\n"
          "    if (( CURRENT == 2 )); then _describe 'command' commands; return; fi\n"
          "    case ${words[CURRENT-1]} in\n", out);
    char names[256];
    database_words(names, sizeof names);
    fprintf(out, "        --db) _values -s , 'database' %s all; return ;;\n", names);
    fputs("        --format) _values 'format' text md json html; return ;;\n"
          "        --out|--data|--junit) _directories; return ;;\n"
          "    esac\n"
          "    local -a options\n"
          "    case ${words[2]} in\n", out);
    char opts[2048];
    for (const kp_command *c = kp_commands; c->name; c++) {
        options_of(c, opts, sizeof opts);
        fprintf(out, "        %s) options=(%s) ;;\n", c->name, opts);
    }
    fputs("    esac\n"
          "    if [[ $PREFIX == -* ]]; then compadd -a options; else _files; fi\n"
          "}\n"
          "_keyplan \"$@\"\n", out);
}

int kp_print_completion(FILE *out, const char *shell)
{
    if (strcmp(shell, "bash") == 0) { print_bash(out); return 0; }
    if (strcmp(shell, "zsh") == 0) { print_zsh(out); return 0; }
    return -1;
}
