/*
 * cmd_init.c — `keyplan init DIR`: a model to start from, written into a new folder.
 *
 * From a bundled example (--from NAME: its model.json with "$schema" pointing at the
 * schema that was found) or, by default, a small skeleton with two entities, one
 * relation, one access pattern and one write, each explained in the README written
 * beside it. Invariant: what init writes passes `keyplan check` as written (a test runs
 * check, advise and compare on it), and init never overwrites a file without --force.
 */
#include <dirent.h>
#include <errno.h>
#include <getopt.h>
#include <ctype.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "backends/backend.h"
#include "cli/commands.h"
#include "core/error.h"
#include "core/json.h"
#include "core/model.h"

#ifndef KP_DATADIR
#define KP_DATADIR "/usr/local/share/keyplan"
#endif
#ifndef KP_SOURCE_DIR
#define KP_SOURCE_DIR "."
#endif

const char cmd_init_help[] =
    "usage: keyplan init DIR [--from EXAMPLE] [--db LIST] [--force]\n\n"
    "Writes a model to start from into DIR (created when missing): model.json, with\n"
    "\"$schema\" so an editor completes and checks it, and a README.md that explains\n"
    "each part and the next commands. Without --from it is a small skeleton (two\n"
    "entities, one relation, one access pattern, one write); with --from it is a copy\n"
    "of a bundled example (`keyplan init --list` names them). init refuses to overwrite\n"
    "a model.json or README.md already in DIR unless --force is given.\n\n"
    "options:\n"
    "  --from EXAMPLE      start from a bundled example instead of the skeleton\n"
    "  --db LIST           the databases the README's next steps name (default: all)\n"
    "  --force             overwrite model.json and README.md in DIR\n"
    "  --list              list the bundled examples and exit\n\n"
    "example:\n"
    "  keyplan init my-model\n"
    "  keyplan init shop --from ecommerce-single-table --db dynamodb\n"
    "  keyplan check my-model/model.json && keyplan advise my-model/model.json\n";

static const char skeleton[] =
    "{\n"
    "  \"$schema\": \"%s\",\n"
    "  \"model\": \"%s\",\n"
    "  \"entities\": {\n"
    "    \"Customer\": { \"key\": [\"id\"], \"count\": 10000,\n"
    "      \"attributes\": { \"id\": \"string\", \"name\": \"string\", \"email\": { \"type\": \"string\", \"unique\": true } } },\n"
    "    \"Order\": { \"key\": [\"id\"],\n"
    "      \"attributes\": { \"id\": \"string\", \"customerId\": \"string\", \"placedAt\": \"timestamp\",\n"
    "                      \"status\": { \"type\": \"enum\", \"values\": [\"OPEN\", \"SHIPPED\"] },\n"
    "                      \"total\": \"decimal\" } }\n"
    "  },\n"
    "  \"relations\": [\n"
    "    { \"name\": \"orders\", \"from\": \"Customer\", \"to\": \"Order\", \"cardinality\": \"1:N\",\n"
    "      \"on\": { \"Order.customerId\": \"Customer.id\" }, \"inverse\": \"customer\",\n"
    "      \"fanout\": { \"avg\": 12, \"max\": 2000 }, \"on_delete\": \"cascade\" }\n"
    "  ],\n"
    "  \"access_patterns\": [\n"
    "    { \"name\": \"recent-orders\", \"rps\": 100, \"root\": \"Customer\", \"where\": { \"id\": \"=\" },\n"
    "      \"returns\": {\n"
    "        \"customer\": { \"id\": \"Customer.id\", \"name\": \"Customer.name\" },\n"
    "        \"orders\": { \"$each\": \"orders\", \"$order\": [ { \"placedAt\": \"desc\" } ], \"$limit\": 10, \"$page\": \"token\",\n"
    "                    \"id\": \"Order.id\", \"placedAt\": \"Order.placedAt\", \"status\": \"Order.status\", \"total\": \"Order.total\" }\n"
    "      } }\n"
    "  ],\n"
    "  \"writes\": [\n"
    "    { \"name\": \"place-order\", \"rps\": 10, \"entity\": \"Order\", \"op\": \"insert\" }\n"
    "  ]\n"
    "}\n";

static const char skeleton_readme[] =
    "# %s\n\n"
    "A keyplan model, started with `keyplan init`. Edit `model.json` (your editor completes\n"
    "and checks it against the schema named in `$schema`), then run the commands below.\n\n"
    "## What the skeleton holds\n\n"
    "- **entities**: `Customer` (10,000 records, a unique `email`) and `Order`, whose count\n"
    "  is derived from the relation's fan-out (10,000 x 12). Every entity has a `key`.\n"
    "- **relations**: `orders`, a 1:N from `Customer` to `Order` joined on\n"
    "  `Order.customerId = Customer.id`, 12 orders per customer on average and 2,000 at most;\n"
    "  deleting a customer deletes its orders (`on_delete: cascade`). Its inverse is `customer`.\n"
    "- **access_patterns**: `recent-orders`, 100 requests a second: one customer by `id`\n"
    "  and its 10 newest orders, paged with a continuation token. `returns` is the exact\n"
    "  JSON the screen gets back; keyplan designs keys and indexes so this is one request.\n"
    "- **writes**: `place-order`, 10 inserts a second.\n\n"
    "The model format, every option included, is in keyplan's `docs/model.md`.\n\n"
    "## Next steps\n\n"
    "```sh\n"
    "keyplan check model.json                              # validate; errors say file:line:col and the fix\n"
    "keyplan advise model.json --db %s      # the proposed design, explained and costed\n"
    "keyplan compare model.json                            # every database side by side\n"
    "keyplan generate model.json --scale 0.01 --out data   # sample data\n"
    "keyplan expect model.json recent-orders --data data   # what the pattern must return\n"
    "```\n";

static const char example_readme[] =
    "# %s\n\n"
    "Started with `keyplan init --from %s`: a copy of keyplan's bundled example of that name\n"
    "(its own README, next to the original in keyplan's examples, explains the domain and the\n"
    "expected design per database). Edit `model.json` — your editor completes and checks it\n"
    "against the schema in `$schema` — then:\n\n"
    "```sh\n"
    "keyplan check model.json\n"
    "keyplan advise model.json --db %s\n"
    "keyplan compare model.json\n"
    "```\n";

/* The first existing directory of: $KEYPLAN_DATADIR, the data installed next to this
 * binary (BIN/../share/keyplan, wherever the prefix was), the configured data directory,
 * the source tree of a build that was not installed. */
static const char *data_dir(char *buf, size_t size, const char *what)
{
    char beside[PATH_MAX] = "";
    ssize_t n = readlink("/proc/self/exe", beside, sizeof beside - 1);
    if (n > 0) {
        beside[n] = '\0';
        char *slash = strrchr(beside, '/');
        if (slash) {
            *slash = '\0';
            size_t used = strlen(beside);
            snprintf(beside + used, sizeof beside - used, "/../share/keyplan");
        }
    } else {
        beside[0] = '\0';
    }
    const char *bases[] = {getenv("KEYPLAN_DATADIR"), beside, KP_DATADIR, KP_SOURCE_DIR};
    struct stat st;
    for (size_t i = 0; i < sizeof bases / sizeof *bases; i++) {
        if (!bases[i] || !bases[i][0]) continue;
        snprintf(buf, size, "%s/%s", bases[i], what);
        if (stat(buf, &st) == 0) return buf;
    }
    return NULL;
}

static const char *schema_path(char *buf, size_t size)
{
    if (data_dir(buf, size, "model.schema.json")) return buf;
    if (data_dir(buf, size, "docs/model.schema.json")) return buf;
    return NULL;
}

static int compare_names(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* The bundled examples: the folders of the examples directory that hold a model.json, sorted. */
static int list_examples(void)
{
    char dir[PATH_MAX];
    if (!data_dir(dir, sizeof dir, "examples")) {
        fprintf(stderr, "keyplan init: error: the bundled examples are not installed (looked in %s and %s); "
                        "set KEYPLAN_DATADIR to the folder that holds them\n", KP_DATADIR, KP_SOURCE_DIR);
        return KP_EXIT_INPUT;
    }
    DIR *d = opendir(dir);
    if (!d) { fprintf(stderr, "keyplan init: error: cannot read %s: %s\n", dir, strerror(errno)); return KP_EXIT_INPUT; }
    char *names[256];
    size_t n = 0;
    for (struct dirent *e; (e = readdir(d)) != NULL && n < 256;) {
        if (e->d_name[0] == '.') continue;
        char model[PATH_MAX + 300];
        snprintf(model, sizeof model, "%s/%s/model.json", dir, e->d_name);
        struct stat st;
        if (stat(model, &st) == 0 && (names[n] = strdup(e->d_name)) != NULL) n++;
    }
    closedir(d);
    qsort(names, n, sizeof *names, compare_names);
    for (size_t i = 0; i < n; i++) { printf("%s\n", names[i]); free(names[i]); }
    return KP_EXIT_OK;
}

/* dir/name written whole (a temporary file renamed over it), its path printed. */
static int write_file(const char *dir, const char *name, const char *text)
{
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    char tmp[PATH_MAX + 16];
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    FILE *f = fopen(tmp, "w");
    int ok = f && fputs(text, f) != EOF;
    if (f && fclose(f) != 0) ok = 0;
    if (!ok || rename(tmp, path) != 0) {
        fprintf(stderr, "keyplan init: error: cannot write %s: %s; check that the folder is writable\n", path, strerror(errno));
        remove(tmp);
        return KP_EXIT_INPUT;
    }
    printf("  %s\n", path);
    return KP_EXIT_OK;
}

int cmd_init(int argc, char **argv)
{
    static const struct option options[] = {{"from", required_argument, NULL, 'f'}, {"db", required_argument, NULL, 'd'},
                                            {"force", no_argument, NULL, 'F'},       {"list", no_argument, NULL, 'l'},
                                            {NULL, 0, NULL, 0}};
    const char *from = NULL, *db = "all";
    int force = 0, list = 0;
    optind = 1;
    opterr = 0;
    for (int o; (o = getopt_long(argc, argv, ":", options, NULL)) != -1;) {
        switch (o) {
        case 'f': from = optarg; break;
        case 'd': db = optarg; break;
        case 'F': force = 1; break;
        case 'l': list = 1; break;
        default:
            fprintf(stderr, "keyplan init: error: %s option '%s'; see `keyplan init --help`\n",
                    o == ':' ? "missing value for" : "unknown", argv[optind - 1]);
            return KP_EXIT_INPUT;
        }
    }
    if (list) return list_examples();
    if (optind != argc - 1) {
        fprintf(stderr, "keyplan init: error: give exactly one folder to write into; see `keyplan init --help`\n");
        return KP_EXIT_INPUT;
    }
    const char *dir = argv[optind];
    const kp_backend *dbs[8];
    kp_error err;
    if (kp_backend_parse_list(db, dbs, 8, &err)) { kp_error_print(stderr, &err); return KP_EXIT_INPUT; }
    char db_words[128] = "";
    for (size_t i = 0, at = 0; dbs[i] && at < sizeof db_words; i++)
        at += (size_t)snprintf(db_words + at, sizeof db_words - at, "%s%s", i ? "," : "", dbs[i]->name);

    char schema[PATH_MAX];
    if (!schema_path(schema, sizeof schema)) snprintf(schema, sizeof schema, "model.schema.json");
    char source[PATH_MAX + 300] = "";
    if (from) {
        char examples[PATH_MAX];
        if (!data_dir(examples, sizeof examples, "examples")) {
            fprintf(stderr, "keyplan init: error: the bundled examples are not installed (looked in %s and %s)\n",
                    KP_DATADIR, KP_SOURCE_DIR);
            return KP_EXIT_INPUT;
        }
        snprintf(source, sizeof source, "%s/%s/model.json", examples, from);
        struct stat st;
        if (strchr(from, '/') || stat(source, &st) != 0) {
            fprintf(stderr, "keyplan init: error: there is no bundled example '%s'; `keyplan init --list` names them\n", from);
            return KP_EXIT_INPUT;
        }
    }
    if (mkdir(dir, 0777) != 0 && errno != EEXIST) {
        fprintf(stderr, "keyplan init: error: cannot create %s: %s\n", dir, strerror(errno));
        return KP_EXIT_INPUT;
    }
    /* the model's name: the folder's last part, kept to the characters a model name allows */
    char name[128];
    const char *base = strrchr(dir, '/');
    base = base && base[1] ? base + 1 : dir;
    size_t k = 0;
    for (const char *c = base; *c && k + 1 < sizeof name; c++)
        name[k++] = (isalnum((unsigned char)*c) || *c == '-' || *c == '_') ? *c : '-';
    name[k] = '\0';
    if (!k || !isalpha((unsigned char)name[0])) snprintf(name, sizeof name, "my-model");

    char *model_text = NULL, *readme_text = NULL;
    if (from) {
        /* the example's own text (numbers stay exactly as written), with its "$schema" value
         * pointing at the schema found here; the copy is checked like any model */
        kp_model *check = NULL;
        if (kp_model_load(source, NULL, &check, &err)) { kp_error_print(stderr, &err); return KP_EXIT_INPUT; }
        kp_model_free(check);
        char *text = NULL;
        size_t len = 0;
        if (kp_file_read(source, 64u << 20, &text, &len, &err)) { kp_error_print(stderr, &err); return KP_EXIT_INPUT; }
        const char *key = strstr(text, "\"$schema\"");
        const char *open = key ? strchr(key + 9, '"') : NULL;
        const char *close = open ? strchr(open + 1, '"') : NULL;
        size_t room = len + strlen(schema) + 64;
        model_text = malloc(room);
        if (model_text && close) {
            snprintf(model_text, room, "%.*s\"%s\"%s", (int)(open - text), text, schema, close + 1);
        } else if (model_text) {
            const char *brace = strchr(text, '{');
            if (brace) snprintf(model_text, room, "%.*s{\n  \"$schema\": \"%s\",%s", (int)(brace - text), text, schema, brace + 1);
            else snprintf(model_text, room, "%s", text);
        }
        free(text);
        size_t need = strlen(example_readme) + strlen(from) * 2 + strlen(db_words) + 8;
        readme_text = malloc(need);
        if (readme_text) snprintf(readme_text, need, example_readme, from, from, db_words);
    } else {
        size_t need = strlen(skeleton) + strlen(schema) + strlen(name) + 1;
        model_text = malloc(need);
        if (model_text) snprintf(model_text, need, skeleton, schema, name);
        need = strlen(skeleton_readme) + strlen(name) + strlen(db_words) + 1;
        readme_text = malloc(need);
        if (readme_text) snprintf(readme_text, need, skeleton_readme, name, db_words);
    }
    int status = KP_EXIT_OK;
    if (!model_text || !readme_text) {
        fprintf(stderr, "keyplan init: error: out of memory\n");
        status = KP_EXIT_INPUT;
    } else {
        /* both refused before either is written: nothing half-done */
        char path[PATH_MAX + 16];
        struct stat st;
        for (int i = 0; i < 2 && !force && status == KP_EXIT_OK; i++) {
            snprintf(path, sizeof path, "%s/%s", dir, i ? "README.md" : "model.json");
            if (stat(path, &st) == 0) {
                fprintf(stderr, "keyplan init: error: %s exists; keyplan never overwrites it without --force\n", path);
                status = KP_EXIT_INPUT;
            }
        }
        if (status == KP_EXIT_OK) {
            size_t len = strlen(model_text);
            if (len && model_text[len - 1] != '\n') {
                char *grown = realloc(model_text, len + 2);
                if (grown) { model_text = grown; model_text[len] = '\n'; model_text[len + 1] = '\0'; }
            }
            printf("keyplan init: %s\n", from ? from : "a skeleton model");
            status = write_file(dir, "model.json", model_text);
            if (status == KP_EXIT_OK) status = write_file(dir, "README.md", readme_text);
            if (status == KP_EXIT_OK) printf("next: keyplan check %s/model.json\n", dir);
        }
    }
    free(model_text);
    free(readme_text);
    return status;
}
