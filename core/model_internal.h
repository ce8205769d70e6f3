/*
 * model_internal.h — what the model parser's files share (not for other modules).
 *
 * The parser reads the JSON tree once, resolving names into pointers as it goes, in
 * an order that makes every reference resolvable when it is met: entities and their
 * attribute types, then relations, then copies/aggregates, counts, access patterns,
 * writes, workload, hints. Invariant: every helper that fails has filled P->err with
 * a positioned message and returns -1; callers only propagate.
 */
#ifndef KP_MODEL_INTERNAL_H
#define KP_MODEL_INTERNAL_H

#include "core/model.h"

typedef struct kp_parser {
    kp_model *m;
    kp_json_doc *doc;
    kp_error *err;
    /* the names of patterns and writes so far (one namespace): a model of thousands of
     * patterns parses in linear time */
    kp_strmap names;
} kp_parser;

/* A parameter table being filled for one pattern or write. */
typedef struct kp_param_scope {
    kp_param **items;
    size_t count, cap;
    const cJSON *declared;   /* the "params" object, or NULL */
} kp_param_scope;

#define ALLOC(P, T) ((T *)kp_arena_alloc(&(P)->m->arena, sizeof(T)))
#define ALLOC_N(P, T, n) ((T *)kp_arena_alloc(&(P)->m->arena, sizeof(T) * ((n) ? (n) : 1)))

/* "an int", "a string": a type name with its article, for messages. */
const char *kp_type_with_article(kp_type_kind kind);

int kp_perr(kp_parser *P, const cJSON *node, int at_key, const char *fmt, ...) __attribute__((format(printf, 4, 5)));
int kp_check_keys(kp_parser *P, const cJSON *object, const char *const *allowed, const char *what);
int kp_expect_object(kp_parser *P, const cJSON *node, const char *what);
int kp_expect_array(kp_parser *P, const cJSON *node, const char *what);
int kp_expect_string(kp_parser *P, const cJSON *node, const char *what);
int kp_get_number(kp_parser *P, const cJSON *object, const char *key, double *out, int *present, double min);
int kp_get_bool(kp_parser *P, const cJSON *object, const char *key, int *out);
int kp_check_name(kp_parser *P, const cJSON *node, const char *name, int allow_dash, const char *what);
char *kp_pstrdup(kp_parser *P, const char *s);
kp_entity *kp_resolve_entity(kp_parser *P, const cJSON *node, const char *name, const char *what);
/* "entities: Workspace, Project" -> a NULL-terminated list of names for suggestions. */
const char **kp_entity_names(kp_parser *P);
const char **kp_attr_and_rel_names(kp_parser *P, const kp_entity *e);

/* Resolves a dotted path from entity `from`: relation hops, then (when want_attr) an
 * attribute. to_one_only refuses to-many hops. */
int kp_resolve_path(kp_parser *P, const cJSON *node, kp_entity *from, const char *path, int want_attr,
                    int to_one_only, kp_rel ***hops, size_t *hop_count, kp_attr **attr, kp_entity **end);
/* The same, naming the path in messages as `shown` (the text the user wrote, when the
 * path is a part of it: "User.nmae" for the path "nmae"). */
int kp_resolve_path_as(kp_parser *P, const cJSON *node, kp_entity *from, const char *path, const char *shown,
                       int want_attr, int to_one_only, kp_rel ***hops, size_t *hop_count, kp_attr **attr,
                       kp_entity **end);

/* Conditions: an object attribute -> condition. scope NULL means literals only. */
int kp_parse_conditions(kp_parser *P, const cJSON *node, kp_entity *ctx, kp_param_scope *scope, const char *what,
                        kp_cond **out, size_t *count);
kp_param *kp_scope_param(kp_parser *P, kp_param_scope *scope, const cJSON *node, const char *name,
                         kp_param_role role, const kp_type *type, kp_attr *attr);
int kp_scope_finish(kp_parser *P, kp_param_scope *scope, kp_param ***out, size_t *count, const char *owner);
int kp_parse_operand(kp_parser *P, const cJSON *node, const kp_attr *attr, const kp_type *type,
                     kp_param_scope *scope, kp_operand *out);

int kp_parse_entities(kp_parser *P, const cJSON *entities);
int kp_parse_relations(kp_parser *P, const cJSON *relations);
int kp_resolve_attribute_links(kp_parser *P, const cJSON *entities);
int kp_derive_counts(kp_parser *P, double scale);
int kp_parse_patterns(kp_parser *P, const cJSON *patterns);
int kp_parse_writes(kp_parser *P, const cJSON *writes);
int kp_parse_workload(kp_parser *P, const cJSON *workload);
int kp_parse_hints(kp_parser *P, const cJSON *hints);
/* After the writes are indexed: the derived counts keyplan keeps on parent records (kept_counts.c). */
int kp_keep_counts(kp_parser *P);
/* kept_copies.c: the copies of related values that listings select by, which the reads
 * they save are worth keeping on the root record (after kp_keep_counts). */
int kp_keep_copies(kp_parser *P);
/* Is `name` an attribute or relation of e already (a kept attribute needs a free one)? */
int kp_entity_name_taken(const kp_entity *e, const char *name);
/* Appends a to an entity's list the parser sized exactly (attrs, aggregated_by, copied_by). */
int kp_entity_append_attr(kp_parser *P, kp_attr ***list, size_t *count, kp_attr *a);

#endif
