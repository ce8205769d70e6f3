/*
 * emit.c — what a team applies to Cassandra: schema.cql (the keyspace, with its
 * replication as an option, and every table with its CLUSTERING ORDER BY; cqlsh -f
 * runs it on Cassandra 5), queries/<pattern>.cql (the SELECTs of each access pattern
 * in the order the plan sends them) and queries.md (the same with the plan's claims).
 *
 * The keyspace is "<prefix><model name in snake_case>", as seeding creates it. The
 * replication comes from KP_CASSANDRA_REPLICATION (CQL map text), else SimpleStrategy
 * with one replica; the file says how to change it.
 * Invariant: the same design and options give the same bytes; every identifier is
 * quoted when CQL needs it, and every value is a bind marker ('?').
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/cassandra/cql.h"
#include "backends/emit.h"

static int nomem(kp_error *err) { return kp_error_set(err, KP_ERR_NOMEM, NULL, 0, 0, "out of memory"); }

static const char *keyspace(kp_arena *A, const kp_design *d, const kp_emit_options *o)
{
    const cq_layout *L = d->layout;
    char raw[300], ks[300];
    snprintf(raw, sizeof raw, "%s%s", o && o->prefix ? o->prefix : "", L->keyspace);
    kp_cql_snake_case(raw, ks, sizeof ks);
    return kp_arena_strdup(A, ks);
}

static int emit_schema(const kp_design *d, const char *dir, const kp_emit_options *o, kp_arena *A, kp_error *err)
{
    const cq_layout *L = d->layout;
    const char *ks = keyspace(A, d, o);
    const char *repl = getenv("KP_CASSANDRA_REPLICATION");
    if (!repl || !*repl) repl = "{'class': 'SimpleStrategy', 'replication_factor': 1}";
    char q[300];
    kp_cql_quote_identifier(ks, q, sizeof q);
    kp_text t = {0};
    kp_text_printf(&t, "-- keyplan: Cassandra schema for model '%s' (design '%s').\n", d->model->name, d->candidate);
    kp_text_append(&t, "-- Apply with: cqlsh HOST PORT -f schema.cql\n");
    kp_text_append(&t, "-- Replication: set KP_CASSANDRA_REPLICATION before `keyplan emit`, e.g.\n"
                       "--   \"{'class': 'NetworkTopologyStrategy', 'dc1': 3}\" for a production cluster.\n\n");
    kp_text_printf(&t, "CREATE KEYSPACE IF NOT EXISTS %s\n    WITH replication = %s;\n\n", q, repl);
    for (size_t i = 0; i < L->table_count; i++) {
        const cq_table *tb = L->tables[i];
        const char *causes = "";
        for (size_t k = 0; k < tb->cause_count; k++) causes = kp_arena_printf(A, "%s%s%s", causes, k ? ", " : "", tb->causes[k]->name);
        kp_text_printf(&t, "-- %s: %s%s%s\n", tb->name, tb->is_base ? "by key" : "query table", *causes ? "; serves " : "", causes);
        if (tb->buckets > 1 && tb->bounds) {
            kp_text_printf(&t, "-- bucket = how many of these %s values are <= the row's (keyplan computes it; a read walks the buckets in order):",
                           tb->cols[tb->pk_count].name);
            for (int k = 0; k < tb->buckets - 1; k++) kp_text_printf(&t, " %s", tb->bounds[k]->valuestring);
            kp_text_printf(&t, "\n");
        } else if (tb->buckets > 1)
            kp_text_printf(&t, "-- bucket = hash of the clustering key %% %d (keyplan computes it; reads span every bucket)\n", tb->buckets);
        kp_text_printf(&t, "%s\n\n", kp_cq_create_table(A, tb, ks, ""));
    }
    kp_text_printf(&t, "CREATE TABLE IF NOT EXISTS %s.%s (model text PRIMARY KEY, marker text);\n", q, KP_CQ_MARKER_TABLE);
    if (t.is_failed) { kp_text_free(&t); return nomem(err); }
    int rc = kp_emit_write_file(o, dir, "schema.cql", t.data, t.len, err);
    kp_text_free(&t);
    return rc;
}

typedef struct select_list { kp_text *t; kp_arena *A; const char *ks; int n; } select_list;

/* One SELECT of a pattern, in the order of its plan's operations (kp_fetch_visit). */
static void list_select(void *ctx, const kp_fetch *node, const kp_fetch *parent)
{
    select_list *S = ctx;
    const cq_fetch *f = (const cq_fetch *)node;
    (void)parent;
    const char *text = kp_cq_select_text(S->A, f, S->ks, "");
    if (!text) return;
    kp_text_printf(S->t, "-- step %d%s%s\n%s;\n", f->step, f->is_paged ? ", paged with the paging state" : "",
                   f->is_client_ordered ? ", sorted and cut by the client" : "", text);
    S->n++;
}

static int emit_queries(const kp_design *d, const char *dir, const kp_emit_options *o, kp_arena *A, kp_error *err)
{
    const cq_layout *L = d->layout;
    const char *ks = keyspace(A, d, o);
    kp_text md = {0};
    kp_text_printf(&md, "# Cassandra queries for model `%s`\n\n", d->model->name);
    kp_text_append(&md, "Per access pattern, the SELECTs keyplan sends, in order. Every value is a bind marker (`?`): "
                        "parameters, or values from the rows an earlier step returned. A bucketed table is read once per "
                        "bucket (`bucket = 0 .. N-1`) and merged by the client.\n\n");
    for (size_t i = 0; i < d->plan_count; i++) {
        const kp_plan *plan = &d->plans[i];
        const kp_pattern *p = plan->pattern;
        kp_text t = {0};
        kp_text_printf(&t, "-- %s: %g request%s, %d round trip%s\n", p->name, plan->requests, plan->requests == 1 ? "" : "s",
                       plan->sequential_steps, plan->sequential_steps == 1 ? "" : "s");
        select_list S = {&t, A, ks, 0};
        kp_fetch_visit(&L->roots[p->index]->base, list_select, &S);
        if (!S.n) kp_text_append(&t, "-- no request\n");
        kp_text_printf(&md, "## %s\n\n%g request%s, %d round trip%s%s%s\n\n```sql\n%.*s```\n\n", p->name, plan->requests,
                       plan->requests == 1 ? "" : "s", plan->sequential_steps, plan->sequential_steps == 1 ? "" : "s",
                       plan->why ? "; " : "", plan->why ? plan->why : "", (int)t.len, t.data ? t.data : "");
        if (t.is_failed) { kp_text_free(&t); kp_text_free(&md); return nomem(err); }
        char name[600];
        snprintf(name, sizeof name, "queries/%s.cql", p->name);
        int rc = kp_emit_write_file(o, dir, name, t.data, t.len, err);
        kp_text_free(&t);
        if (rc) { kp_text_free(&md); return -1; }
    }
    if (md.is_failed) { kp_text_free(&md); return nomem(err); }
    int rc = kp_emit_write_file(o, dir, "queries.md", md.data, md.len, err);
    kp_text_free(&md);
    return rc;
}

int kp_cq_emit(const kp_design *d, const char *out_dir, const kp_emit_options *options, kp_error *err)
{
    kp_arena A = {0};
    int rc = emit_schema(d, out_dir, options, &A, err);
    if (rc == 0) rc = emit_queries(d, out_dir, options, &A, err);
    kp_arena_free(&A);
    return rc;
}
