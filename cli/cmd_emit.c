/*
 * cmd_emit.c — `keyplan emit MODEL --db LIST --out DIR`: the files a team applies for
 * each database's proposed design, in DIR/<database>/.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/backend.h"
#include "backends/emit.h"
#include "cli/commands.h"
#include "core/model.h"

const char cmd_emit_help[] =
    "usage: keyplan emit MODEL --out DIR [--db LIST] [--prefix P] [--mix NAME] [--scale F]\n\n"
    "Writes the files that apply each database's proposed design (the one `keyplan\n"
    "advise` shows) into DIR/<database>/. For DynamoDB:\n"
    "  create-table.json      for `aws dynamodb create-table --cli-input-json file://...`\n"
    "  cloudformation.yaml    an AWS::DynamoDB::Table, its name prefixed by a parameter\n"
    "  nosql-workbench.json   a NoSQL Workbench (3.0) data model: one facet per entity,\n"
    "                         a few generated sample items\n"
    "  requests/              per access pattern the requests keyplan sends, for\n"
    "                         `aws dynamodb query|get-item|batch-get-item --cli-input-json`,\n"
    "                         with <placeholders> where values go; README.md says the\n"
    "                         order and what each request needs from the one before\n"
    "For MongoDB:\n"
    "  setup.mongosh.js       creates each collection (with its $jsonSchema validator\n"
    "                         where the server has validators, else with a warning) and\n"
    "                         its indexes; `mongosh URI setup.mongosh.js`, safe to rerun\n"
    "  schemas/<collection>.json  each collection's $jsonSchema, on its own\n"
    "  queries.md             per access pattern the finds keyplan sends, in order\n"
    "For Cassandra:\n"
    "  schema.cql             CREATE KEYSPACE / TABLE statements; `cqlsh -f schema.cql`\n"
    "  queries/<pattern>.cql  per access pattern the SELECTs keyplan sends, in order\n"
    "  queries.md             the same statements with their costs, for a review\n"
    "The same model and options always give byte-identical files. Each file is\n"
    "replaced atomically; DIR may exist, and files keyplan does not write are left\n"
    "alone. The files written are listed.\n\n"
    "options:\n"
    "  --out DIR           where to write (created when missing)\n"
    "  --db LIST           dynamodb, mongodb, cassandra, a comma list, or all (default: all)\n"
    "  --prefix P          prefix of every table name, as for seed and verify (default none)\n"
    "  --mix NAME          the workload mix to design for (default: the model's default)\n"
    "  --scale F           multiply every entity count by F\n\n"
    "example:\n"
    "  keyplan emit examples/saas-control-plane/model.json --db dynamodb --out design --prefix dev-\n"
    "  aws dynamodb create-table --cli-input-json file://design/dynamodb/create-table.json\n"
    "  keyplan emit examples/order-response/model.json --db mongodb,cassandra --out design\n";

static void print_file(void *ctx, const char *path)
{
    (void)ctx;
    printf("  %s\n", path);
}

int cmd_emit(int argc, char **argv)
{
    static const struct option options[] = {{"db", required_argument, NULL, 'd'},    {"out", required_argument, NULL, 'o'},
                                            {"prefix", required_argument, NULL, 'p'}, {"mix", required_argument, NULL, 'm'},
                                            {"scale", required_argument, NULL, 's'},  {NULL, 0, NULL, 0}};
    const char *db = "all", *out = NULL, *prefix = "", *mix_name = NULL;
    kp_model_options model_options = {.scale = 1};
    int c;
    optind = 1;
    while ((c = getopt_long(argc, argv, "", options, NULL)) != -1) {
        switch (c) {
        case 'd': db = optarg; break;
        case 'o': out = optarg; break;
        case 'p': prefix = optarg; break;
        case 'm': mix_name = optarg; break;
        case 's':
            if (kp_cli_parse_double(optarg, &model_options.scale) || model_options.scale <= 0) {
                fprintf(stderr, "keyplan emit: error: --scale takes a number above 0, not '%s'\n", optarg);
                return KP_EXIT_INPUT;
            }
            break;
        default: fprintf(stderr, "keyplan emit: see `keyplan emit --help`\n"); return KP_EXIT_INPUT;
        }
    }
    if (optind != argc - 1) {
        fprintf(stderr, "keyplan emit: error: give exactly one model file; see `keyplan emit --help`\n");
        return KP_EXIT_INPUT;
    }
    if (!out || !out[0]) {
        fprintf(stderr, "keyplan emit: error: --out DIR is required: the folder the files go to\n");
        return KP_EXIT_INPUT;
    }
    kp_error err;
    const kp_backend *backends[8];
    if (kp_backend_parse_list(db, backends, 8, &err)) { kp_error_print(stderr, &err); return kp_error_exit_code(&err); }
    /* a database named in --db must have an emitter; `all` means every one that has */
    int is_all = strcmp(db, "all") == 0;
    size_t n = 0;
    for (size_t i = 0; backends[i]; i++) {
        if (backends[i]->emit) {
            backends[n++] = backends[i];
        } else if (is_all) {
            fprintf(stderr, "keyplan emit: note: no %s files: this build has no %s emitter yet\n", backends[i]->title,
                    backends[i]->title);
        } else {
            fprintf(stderr, "keyplan emit: error: keyplan cannot emit %s files yet (this build has no %s emitter); nothing "
                            "was written. Leave %s out of --db; `keyplan advise --db %s` shows its design\n",
                    backends[i]->title, backends[i]->title, backends[i]->name, backends[i]->name);
            return KP_EXIT_INPUT;
        }
    }
    backends[n] = NULL;
    if (n == 0) {
        fprintf(stderr, "keyplan emit: error: no database of this build has an emitter yet; nothing was written\n");
        return KP_EXIT_INPUT;
    }
    kp_model *model;
    if (kp_model_load(argv[optind], &model_options, &model, &err)) {
        kp_error_print(stderr, &err);
        return kp_error_exit_code(&err);
    }
    const kp_mix *mix = model->default_mix;
    if (mix_name) {
        mix = kp_model_mix(model, mix_name);
        if (!mix) {
            fprintf(stderr, "keyplan emit: error: the model declares no workload mix '%s'%s\n", mix_name,
                    model->mix_count ? "; `keyplan check` lists its mixes" : " (it declares none)");
            kp_model_free(model);
            return KP_EXIT_INPUT;
        }
    }
    int status = KP_EXIT_OK;
    kp_emit_options emit_options = {.prefix = prefix, .on_file = print_file};
    for (size_t i = 0; backends[i] && status == KP_EXIT_OK; i++) {
        kp_design_list list;
        kp_propose_options po = {mix, 0};
        if (backends[i]->propose(model, &po, &list, &err)) {
            kp_error_print(stderr, &err);
            status = kp_error_exit_code(&err);
            break;
        }
        const kp_design *d = list.items[0];
        printf("%s: the %s design of %s, into %s/%s/\n", backends[i]->title, d->candidate, model->name, out, backends[i]->name);
        if (kp_emit_design(d, out, &emit_options, &err)) {
            kp_error_print(stderr, &err);
            status = kp_error_exit_code(&err);
        }
        kp_design_list_free(&list);
    }
    kp_model_free(model);
    return status;
}
