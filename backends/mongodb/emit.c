/*
 * emit.c — the MongoDB files a team applies (`keyplan emit`):
 *
 *   setup.mongosh.js          createCollection with its $jsonSchema validator (falling back
 *                             to no validator where the server answers NotImplemented, as
 *                             FerretDB does) and createIndexes, per collection
 *   schemas/<Collection>.json the JSON Schema of each collection's documents
 *   queries.md                per access pattern the finds keyplan sends, in order, in
 *                             mongosh syntax, with <placeholders> where values go
 *
 * Invariant: the same design and prefix give byte-identical files (no clock), and the
 * validators, indexes and finds are built by the code seed and verify use (schema.c,
 * plan.c), so what a team runs is what `keyplan verify` checked.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/emit.h"
#include "backends/mongodb/mongo.h"

static int nomem(kp_error *err) { return kp_error_set(err, KP_ERR_NOMEM, NULL, 0, 0, "out of memory"); }

static void js_string(kp_text *t, const char *s)
{
    cJSON *j = cJSON_CreateString(s);
    char *text = j ? cJSON_PrintUnformatted(j) : NULL;
    kp_text_append(t, text ? text : "\"\"");
    cJSON_free(text);
    cJSON_Delete(j);
}

static int emit_setup(const kp_design *d, const char *dir, const kp_emit_options *o, kp_error *err)
{
    const mg_layout *L = d->layout;
    kp_text t = {0};
    kp_text_printf(&t, "// keyplan: MongoDB collections, validators and indexes for model '%s' (design '%s').\n",
                   d->model->name, d->candidate);
    kp_text_append(&t, "// Run with: mongosh \"$MONGODB_URI\" setup.mongosh.js\n");
    kp_text_append(&t, "const prefix = ");
    js_string(&t, o->prefix ? o->prefix : "");
    kp_text_append(&t, ";\n\n");
    kp_text_append(&t, "function create(name, validator, indexes) {\n"
                       "  try {\n"
                       "    db.createCollection(name, { validator: validator });\n"
                       "  } catch (e) {\n"
                       "    if (e.code === 48) { /* exists */ }\n"
                       "    else if (e.code === 238) {\n"
                       "      print(\"warning: this server has no collection validators (NotImplemented); \" + name + \" is created without one\");\n"
                       "      try { db.createCollection(name); }\n"
                       "      catch (e2) { if (e2.code !== 48) throw e2; /* exists: a rerun */ }\n"
                       "    } else throw e;\n"
                       "  }\n"
                       "  indexes.forEach(i => db.getCollection(name).createIndex(i.key, Object.assign({ name: i.name }, i.unique ? { unique: true } : {})));\n"
                       "}\n\n");
    for (size_t i = 0; i < L->collection_count; i++) {
        const mg_collection *c = L->collections[i];
        cJSON *schema = kp_mg_json_schema(d, c);
        cJSON *indexes = kp_mg_index_specs(c);
        kp_text_printf(&t, "// %s — shard key suggestion: %s (%s)\n", c->name, c->shard_key ? c->shard_key : "-",
                       c->shard_why ? c->shard_why : "");
        kp_text_append(&t, "create(prefix + ");
        js_string(&t, c->name);
        kp_text_append(&t, ",\n");
        kp_text_json(&t, schema);
        t.len--; /* kp_text_json ends with a newline */
        kp_text_append(&t, ",\n");
        kp_text_json(&t, indexes);
        t.len--;
        kp_text_append(&t, ");\n\n");
        cJSON_Delete(schema);
        cJSON_Delete(indexes);
    }
    if (t.is_failed) { kp_text_free(&t); return nomem(err); }
    int rc = kp_emit_write_file(o, dir, "setup.mongosh.js", t.data, t.len, err);
    kp_text_free(&t);
    return rc;
}

static int emit_schemas(const kp_design *d, const char *dir, const kp_emit_options *o, kp_error *err)
{
    const mg_layout *L = d->layout;
    for (size_t i = 0; i < L->collection_count; i++) {
        const mg_collection *c = L->collections[i];
        cJSON *v = kp_mg_json_schema(d, c);
        cJSON *schema = cJSON_DetachItemFromObject(v, "$jsonSchema");
        cJSON_Delete(v);
        char name[600];
        snprintf(name, sizeof name, "schemas/%s%s.json", o->prefix ? o->prefix : "", c->name);
        int rc = kp_emit_write_json(o, dir, name, schema, err);
        cJSON_Delete(schema);
        if (rc) return -1;
    }
    return 0;
}

typedef struct find_list { kp_text *t; kp_arena *arena; const kp_pattern *p; const char *prefix; int n; } find_list;

/* One find of a pattern, in the order of its plan's operations (kp_fetch_visit). */
static void list_find(void *ctx, const kp_fetch *node, const kp_fetch *parent)
{
    find_list *F = ctx;
    const mg_fetch *f = (const mg_fetch *)node;
    (void)parent;
    const char *text = kp_mg_fetch_text(F->arena, f, F->p, F->prefix);
    if (!text) return;
    kp_text_printf(F->t, "%s%s\n", text, f->base.is_independent ? "   // sent with the first find" : "");
    F->n++;
}

static int emit_queries(const kp_design *d, const char *dir, const kp_emit_options *o, kp_error *err)
{
    const mg_layout *L = d->layout;
    kp_arena arena = {0};
    kp_text t = {0};
    kp_text_printf(&t, "# MongoDB queries for model `%s`\n\n", d->model->name);
    kp_text_append(&t, "Per access pattern, the commands keyplan sends, in order (mongosh syntax). `<name>` is a parameter; "
                       "`<Entity.attr>` a value from the documents an earlier command returned. References are resolved "
                       "with a follow-up find by `_id` with `$in` (no `$lookup`). `$or: <after the page token>` is the "
                       "keyset continuation: the sort fields strictly after the last document of the previous page.\n\n");
    for (size_t i = 0; i < d->plan_count; i++) {
        const kp_plan *plan = &d->plans[i];
        const kp_pattern *p = plan->pattern;
        kp_text_printf(&t, "## %s\n\n%g request%s, %d round trip%s%s%s\n\n```js\n", p->name, plan->requests,
                       plan->requests == 1 ? "" : "s", plan->sequential_steps, plan->sequential_steps == 1 ? "" : "s",
                       plan->why ? "; " : "", plan->why ? plan->why : "");
        find_list F = {&t, &arena, p, o->prefix ? o->prefix : "", 0};
        kp_fetch_visit(&L->roots[p->index]->base, list_find, &F);
        if (!F.n) kp_text_append(&t, "// no request\n");
        kp_text_append(&t, "```\n\n");
    }
    kp_arena_free(&arena);
    if (t.is_failed) { kp_text_free(&t); return nomem(err); }
    int rc = kp_emit_write_file(o, dir, "queries.md", t.data, t.len, err);
    kp_text_free(&t);
    return rc;
}

int kp_mg_emit(const kp_design *d, const char *out_dir, const kp_emit_options *options, kp_error *err)
{
    kp_emit_options none = {.prefix = ""};
    const kp_emit_options *o = options ? options : &none;
    if (emit_setup(d, out_dir, o, err)) return -1;
    if (emit_schemas(d, out_dir, o, err)) return -1;
    return emit_queries(d, out_dir, o, err);
}
