/*
 * model.h — the neutral model: entities, relations, access patterns, writes, workload.
 *
 * This is the contract every other part of keyplan reads. kp_model_load parses a
 * model file (see docs/model.md for the format), resolves every name into a pointer
 * and validates it; after that no consumer ever looks a name up again or meets an
 * unresolved reference. Everything hangs off one arena and is freed by kp_model_free.
 *
 * Invariants a reader must not break:
 *  - every pointer in a loaded model points into the same model (no dangling names);
 *  - counts are final: a child's omitted count has been derived, --scale applied;
 *  - each access pattern's `returns` shape only reaches attributes through declared
 *    relations, and every parameter it uses is in pattern->params;
 *  - order keys of every $each end with the element entity's key (ties are broken by
 *    key), so any evaluation of a pattern is deterministic.
 */
#ifndef KP_MODEL_H
#define KP_MODEL_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <cjson/cJSON.h>

#include "core/arena.h"
#include "core/error.h"
#include "core/json.h"

typedef struct kp_model kp_model;
typedef struct kp_entity kp_entity;
typedef struct kp_attr kp_attr;
typedef struct kp_type kp_type;
typedef struct kp_relation kp_relation;
typedef struct kp_rel kp_rel;
typedef struct kp_param kp_param;
typedef struct kp_shape kp_shape;
typedef struct kp_pattern kp_pattern;
typedef struct kp_write kp_write;
typedef struct kp_mix kp_mix;

/* ---- types ------------------------------------------------------------------- */

typedef enum kp_type_kind {
    KP_T_STRING, KP_T_INT, KP_T_DECIMAL, KP_T_DOUBLE, KP_T_BOOL, KP_T_TIMESTAMP, KP_T_DATE,
    KP_T_UUID, KP_T_TIMEUUID, KP_T_ENUM, KP_T_OBJECT, KP_T_ARRAY, KP_T_MAP, KP_T_COUNTER,
    KP_T_BLOB,
    KP_T_COUNT_ /* number of kinds */
} kp_type_kind;

/* How a timestamp is written in responses (data files are always canonical ISO). */
typedef enum kp_encoding { KP_ENC_ISO = 0, KP_ENC_EPOCH_S, KP_ENC_EPOCH_MS } kp_encoding;

struct kp_type {
    kp_type_kind kind;
    const char **enum_values;   /* KP_T_ENUM */
    size_t enum_count;
    kp_attr **fields;           /* KP_T_OBJECT: sub-fields (attributes without an entity) */
    size_t field_count;
    kp_type *item;              /* KP_T_ARRAY: item type; KP_T_MAP: value type */
    kp_type_kind map_key;       /* KP_T_MAP: key type (string, int, uuid, date) */
    double avg_items, max_items;/* KP_T_ARRAY / KP_T_MAP; 0 when not given */
};

/* The type name as written in models ("string", "timeuuid", ...). */
const char *kp_type_name(kp_type_kind kind);
/* Parses a type name; returns -1 when unknown. */
int kp_type_from_name(const char *name);
/* True for the types whose values are JSON strings in canonical JSON. */
int kp_type_is_textual(kp_type_kind kind);
/* How much larger than its average an attribute's value may be (the size model's
 * maximum, which the bytes a plan may read at most are priced at): a declared
 * max_size over the average size, max_items over avg_items for arrays and maps, else
 * twice the average for values whose size varies (strings, enums, blobs, arrays, maps,
 * objects) and 1 for fixed-size values (numbers, timestamps, dates, uuids). */
double kp_attr_max_ratio(const kp_attr *attr);
/* True for int, decimal, double, counter. */
int kp_type_is_numeric(kp_type_kind kind);
/* True when values of this kind have a total order usable in $order and ranges. */
int kp_type_is_orderable(kp_type_kind kind);

/* ---- attributes and entities ------------------------------------------------ */

typedef enum kp_aggregate { KP_AGG_COUNT, KP_AGG_SUM, KP_AGG_MIN, KP_AGG_MAX } kp_aggregate;

typedef struct kp_cond kp_cond;

/* A derived aggregate: count/sum/min/max over a relation, optionally filtered. */
typedef struct kp_derived {
    kp_aggregate fn;
    kp_rel **path;              /* relation path from the attribute's entity (to-many at the end) */
    size_t path_len;
    kp_attr *of;                /* aggregated attribute of the path's target; NULL for count */
    kp_cond *where;             /* filter on the target records */
    size_t where_count;
} kp_derived;

/* A denormalised copy: this attribute always equals `source` reached through `path`
 * (to-one relations from the attribute's entity). */
typedef struct kp_copy {
    kp_rel **path;
    size_t path_len;
    kp_attr *source;
} kp_copy;

/* Does an insert or delete of a record at the end of a copy's path move the copy (the last
 * hop's record holds the link itself: a Shipment naming its order sets the order's copy)? */
int kp_copy_path_moves_on_insert(kp_rel *const *path, size_t n);
/* The copy_of attribute of e that holds `source` over exactly these hops (declared, or kept
 * by keyplan), or NULL. */
kp_attr *kp_copy_on(const kp_entity *e, kp_rel *const *path, size_t n, const kp_attr *source);

struct kp_attr {
    const char *name;
    kp_type type;
    kp_entity *entity;          /* owning entity; NULL for an object's sub-field */
    size_t index;               /* position in entity->attrs (or type.fields) */
    int key_index;              /* position in entity->key, or -1 */
    int is_optional;            /* may be absent/null in a record */
    double presence;            /* share of records that carry it (1 unless sparse) */
    int is_unique;              /* unique across the entity (lookups return one record) */
    double avg_size;            /* bytes; 0 = the type's default */
    double max_size;            /* bytes; 0 = not given */
    kp_encoding encoding;       /* timestamps only */
    const char *format;         /* generator hint: "email", "name", "handle", ... or NULL */
    const cJSON *min, *max;     /* generator range for numbers/timestamps/dates; NULL if absent */
    kp_copy *copy_of;           /* NULL unless a denormalised copy */
    kp_derived *derived;        /* NULL unless a derived aggregate */
    int is_kept;                /* a derived count keyplan keeps on the record (kept_counts.c), not the model's */
    const char *kept_why;       /* is_kept: the reads it saves against the writes that keep it */
    const char *description;
    const char *renamed_from;   /* model versions: the name it had in the previous version, or NULL */
    const cJSON *backfill;      /* model versions: the value records of the previous version get, or NULL */
    kp_pos pos;                 /* where it is declared */
};

struct kp_entity {
    const char *name;
    size_t index;               /* position in model->entities */
    kp_attr **attrs;
    size_t attr_count;
    kp_attr **key;              /* the key attributes, in declared order */
    size_t key_count;
    double count;               /* records, after derivation and --scale */
    int is_count_given;         /* count was written in the model (not derived) */
    kp_rel **rels;              /* every navigable relation direction leaving this entity */
    size_t rel_count;
    const char *description;
    kp_pos pos;
    /* reverse links, filled by the parser so planners need not scan the whole model per
     * write step (both in model order: entities, then attributes): */
    kp_attr **copied_by;        /* attributes that are copies of one of this entity's attributes */
    size_t copied_by_count;
    kp_attr **aggregated_by;    /* derived attributes whose relation path ends at this entity */
    size_t aggregated_by_count;
    /* the write steps on this entity, in model order (writes, then their steps), each with
     * its write: write_steps[i] is a step of step_writes[i] */
    const struct kp_write_step **write_steps;
    const struct kp_write **step_writes;
    size_t write_step_count;
};

/* ---- relations ------------------------------------------------------------------ */

typedef enum kp_cardinality { KP_CARD_ONE_ONE, KP_CARD_ONE_MANY, KP_CARD_MANY_MANY } kp_cardinality;
/* How the two sides are linked in the neutral data. */
typedef enum kp_link {
    KP_LINK_FOREIGN_KEY, /* holder's attributes equal the referenced entity's key (1:1, 1:N) */
    KP_LINK_THROUGH,     /* a join entity holds both keys (N:M, self-relations too) */
    KP_LINK_ARRAY        /* an array attribute of `from` holds `to` keys, in order (N:M) */
} kp_link;
typedef enum kp_on_delete { KP_DELETE_RESTRICT, KP_DELETE_CASCADE, KP_DELETE_DETACH } kp_on_delete;

typedef struct kp_fanout {
    double avg, max;            /* related records per source record */
    int is_unbounded;           /* grows forever (chat messages): max is a planning horizon */
    int is_given;               /* written in the model (else derived or implied) */
} kp_fanout;

/* One direction of a relation, as navigated from `source`. */
struct kp_rel {
    const char *name;           /* NULL for an inverse that was not named */
    kp_relation *relation;
    kp_entity *source, *target;
    int is_many;                /* to-many (an array) or to-one (an object or null) */
    int is_inverse;             /* the to -> from direction */
    const kp_fanout *fanout;    /* targets per source */
};

struct kp_relation {
    const char *name;
    const char *inverse_name;   /* NULL when not named */
    kp_entity *from, *to;
    kp_cardinality cardinality;
    kp_link link;
    /* KP_LINK_FOREIGN_KEY: holder.fk_attrs[i] == referenced.ref_attrs[i] */
    kp_entity *holder, *referenced;
    kp_attr **fk_attrs, **ref_attrs;
    size_t fk_count;
    /* KP_LINK_THROUGH: through.from_attrs -> from's key, through.to_attrs -> to's key */
    kp_entity *through;
    kp_attr **through_from, **through_to;
    size_t through_from_count, through_to_count;
    /* KP_LINK_ARRAY */
    kp_attr *array_attr;
    kp_fanout fanout;           /* `to` records per `from` record */
    kp_fanout inverse_fanout;   /* `from` records per `to` record */
    kp_fanout unscaled_fanout, unscaled_inverse_fanout; /* the same before --scale capped them: what
                                                           choices that must not change with the
                                                           sample's size read (kept_counts.c) */
    double skew;                /* Zipf exponent of how targets spread over sources */
    int has_skew;
    kp_on_delete on_delete;
    kp_rel forward, inverse;
    const char *description;
    kp_pos pos;
};

/* ---- conditions and parameters ---------------------------------------------- */

typedef enum kp_op { KP_OP_EQ, KP_OP_LT, KP_OP_LE, KP_OP_GT, KP_OP_GE, KP_OP_BETWEEN, KP_OP_BEGINS_WITH } kp_op;
const char *kp_op_name(kp_op op);

typedef enum kp_param_role {
    KP_PARAM_VALUE,   /* compared with an attribute, or assigned to one */
    KP_PARAM_LIMIT,   /* a page size ($limit) */
    KP_PARAM_OFFSET   /* an offset ($page.offset) */
} kp_param_role;

struct kp_param {
    const char *name;           /* without the leading ':' */
    kp_param_role role;
    const kp_type *type;        /* the attribute's type, or int for limit/offset */
    kp_attr *attr;              /* the attribute it is bound to (first use); NULL for limit/offset */
    int is_optional;            /* an absent optional parameter drops its conditions */
    const cJSON *default_value; /* NULL when none */
    const cJSON *min, *max;     /* bounds for limit/offset parameters; NULL if none */
    const char *description;
    kp_pos pos;
};

/* A literal value or a parameter. */
typedef struct kp_operand {
    kp_param *param;            /* non-NULL for a parameter */
    const cJSON *literal;       /* otherwise the literal, canonical for the attribute's type */
} kp_operand;

struct kp_cond {
    kp_rel **path;              /* to-one hops from the context entity; empty for its own attribute */
    size_t path_len;
    kp_attr *attr;              /* attribute of the entity the path reaches */
    kp_op op;
    kp_operand value;           /* the operand (the lower bound for between) */
    kp_operand upper;           /* between only */
    kp_pos pos;
};

/* ---- response shapes ------------------------------------------------------------ */

typedef enum kp_shape_kind {
    KP_SHAPE_OBJECT,  /* { member: shape, ... } */
    KP_SHAPE_ATTR,    /* a leaf: an attribute of the context entity (possibly via to-one hops) */
    KP_SHAPE_PARAM,   /* a leaf echoing a parameter */
    KP_SHAPE_EACH,    /* an array: $each over a relation path (or the root set) */
    KP_SHAPE_ONE,     /* a nested object (or null): $one over a to-one relation path */
    KP_SHAPE_COUNT,   /* an integer: $count of a relation path */
    KP_SHAPE_TOKEN    /* the continuation token of the paged $each next to it (or null) */
} kp_shape_kind;

typedef enum kp_page_kind { KP_PAGE_NONE, KP_PAGE_TOKEN, KP_PAGE_OFFSET } kp_page_kind;

typedef struct kp_order_key {
    kp_attr *attr;              /* attribute of the element entity */
    int is_desc;
    int is_nulls_first;         /* default: nulls last */
    int is_implicit;            /* appended to break ties by key */
} kp_order_key;

typedef struct kp_expect { double avg, max; int is_given; } kp_expect;

struct kp_shape {
    kp_shape_kind kind;
    const char *name;           /* member name in the parent object; NULL at the top */
    kp_entity *entity;          /* the context entity of this node's members/elements */
    /* KP_SHAPE_ATTR */
    kp_rel **path;              /* to-one hops from the context entity */
    size_t path_len;
    kp_attr *attr;
    /* KP_SHAPE_PARAM */
    kp_param *param;
    /* KP_SHAPE_EACH / ONE / COUNT */
    kp_rel **hops;              /* relation path from the parent context (multi-hop) */
    size_t hop_count;
    int is_root_set;            /* $each over the pattern's root set */
    kp_cond *where;             /* $where on the elements */
    size_t where_count;
    kp_order_key *order;        /* $order, then the element key (implicit) */
    size_t order_count;
    size_t declared_order_count;/* how many of `order` were written */
    int64_t limit;              /* 0 = no limit */
    kp_param *limit_param;      /* a limit given by a parameter (then `limit` is its default) */
    kp_page_kind page;
    kp_shape *token;            /* KP_PAGE_TOKEN with a token field: that field */
    kp_param *offset_param;     /* KP_PAGE_OFFSET */
    kp_expect expect;
    kp_shape *value;            /* $value: elements are this scalar leaf instead of objects */
    /* KP_SHAPE_COUNT: a sibling $each that lists the same records whole (the same one-to-many
     * path, the same conditions, no limit or page): the count is its length, no read of its own */
    const kp_shape *counted_by;
    /* KP_SHAPE_TOKEN */
    kp_shape *paged;            /* the $each whose token this is */
    /* KP_SHAPE_OBJECT / EACH / ONE: members of the object or of each element */
    kp_shape **members;
    size_t member_count;
    kp_pos pos;
};

/* ---- access patterns ------------------------------------------------------------ */

struct kp_pattern {
    const char *name;
    size_t index;
    const char *description;
    kp_entity *root;
    int is_root_set;            /* where does not pin one root record */
    kp_cond *where;             /* conditions on the root (possibly via to-one hops) */
    size_t where_count;
    kp_param **params;
    size_t param_count;
    kp_shape *returns;
    kp_shape *paged;            /* the one $each that pages, or NULL */
    double rps;
    double skew;                /* key popularity for this pattern's parameters */
    int has_skew;
    kp_pos pos;
};

/* ---- writes ----------------------------------------------------------------------- */

typedef enum kp_write_op { KP_WRITE_INSERT, KP_WRITE_UPDATE, KP_WRITE_UPSERT, KP_WRITE_DELETE } kp_write_op;
typedef enum kp_assign_kind { KP_ASSIGN_SET, KP_ASSIGN_INCREMENT, KP_ASSIGN_DECREMENT } kp_assign_kind;

typedef struct kp_assign {
    kp_attr *attr;
    kp_assign_kind kind;
    kp_operand value;           /* for SET without a value: a parameter named like the attribute */
} kp_assign;

typedef struct kp_write_step {
    kp_entity *entity;
    kp_write_op op;
    kp_cond *where;             /* which record(s): update/upsert/delete */
    size_t where_count;
    kp_assign *assigns;         /* update/upsert */
    size_t assign_count;
    kp_cond *conditions;        /* `if`: the step happens only when these hold */
    size_t condition_count;
    int is_if_absent;           /* insert only when no record has this key */
    kp_rel **for_each;          /* relation path from the first step's entity; NULL: once */
    size_t for_each_len;
    kp_rel *link;               /* insert with for_each: the relation that ties the new record */
    double rows;                /* records touched per operation (default 1) */
    const char *description;
    kp_pos pos;
} kp_write_step;

struct kp_write {
    const char *name;
    size_t index;
    const char *description;
    kp_write_step *steps;
    size_t step_count;
    int is_atomic;              /* all steps or none */
    kp_param **params;
    size_t param_count;
    double rps;                 /* average operations per second (scheduled jobs: rows / period) */
    double schedule_every_s;    /* scheduled job period in seconds; 0 when not scheduled */
    double schedule_rows;       /* rows per scheduled run */
    double skew;
    int has_skew;
    kp_pos pos;
};

/* ---- workload -------------------------------------------------------------------- */

typedef struct kp_rate {
    kp_pattern *pattern;        /* exactly one of pattern / write */
    kp_write *write;
    double rps;
} kp_rate;

struct kp_mix {
    const char *name;
    const char *description;
    kp_rate *rates;             /* overrides; patterns and writes not listed keep their rps */
    size_t rate_count;
    kp_pos pos;
};

typedef struct kp_group {
    const char *name;
    kp_pattern **patterns;      /* issued together by one screen */
    size_t pattern_count;
    kp_pos pos;
} kp_group;

/* ---- hints ------------------------------------------------------------------------ */

typedef enum kp_hint_target { KP_HINT_PATTERN, KP_HINT_WRITE, KP_HINT_RELATION, KP_HINT_ENTITY } kp_hint_target;

typedef struct kp_hint {
    const char *database;       /* "dynamodb", "mongodb", "cassandra" */
    const char *kind;           /* "embed", "allow_filtering", "shards", ... (docs/model.md) */
    kp_hint_target target_kind;
    const char *target;         /* the name as written ("Order.items", "rare-report") */
    kp_pattern *pattern;        /* resolved, by target_kind */
    kp_write *write;
    kp_rel *rel;
    kp_entity *entity;
    double number;              /* "shards": the count; 0 otherwise */
    kp_pos pos;
} kp_hint;

/* ---- the model -------------------------------------------------------------------- */

struct kp_model {
    kp_arena arena;
    kp_json_doc *doc;           /* the parsed file; literals point into it */
    const char *file;
    const char *name;
    const char *description;
    char hash[17];              /* 64-bit FNV-1a of the file bytes, hex: identifies the model */
    kp_entity **entities;
    size_t entity_count;
    kp_relation **relations;
    size_t relation_count;
    kp_pattern **patterns;
    size_t pattern_count;
    kp_write **writes;
    size_t write_count;
    double key_skew;            /* workload default Zipf exponent */
    kp_mix **mixes;
    size_t mix_count;
    kp_mix *default_mix;        /* NULL: the declared rps */
    kp_group **groups;
    size_t group_count;
    kp_hint *hints;
    size_t hint_count;
    double scale;               /* the --scale applied (1 by default) */
    kp_strmap entity_by_name;   /* name -> kp_entity *, filled by the parser (look-ups fall back to a
                                   scan when it does not hold every entity, e.g. a model built by hand) */
};

typedef struct kp_model_options {
    double scale;               /* multiplies counts; 0 means 1 */
} kp_model_options;

/* Loads, resolves and validates a model file. On success *out is a model the caller
 * frees with kp_model_free(); on failure *out is NULL and err points at the first
 * problem (file:line:col and a sentence with the fix). */
int kp_model_load(const char *path, const kp_model_options *options, kp_model **out, kp_error *err);
/* The same from text in memory; `file` names it in messages. */
int kp_model_parse(const char *file, const char *text, size_t len, const kp_model_options *options,
                   kp_model **out, kp_error *err);
void kp_model_free(kp_model *model);

/* Look-ups by name (NULL when absent). */
kp_entity *kp_model_entity(const kp_model *model, const char *name);
kp_attr *kp_entity_attr(const kp_entity *entity, const char *name);
kp_rel *kp_entity_rel(const kp_entity *entity, const char *name);
kp_pattern *kp_model_pattern(const kp_model *model, const char *name);
kp_write *kp_model_write(const kp_model *model, const char *name);
kp_mix *kp_model_mix(const kp_model *model, const char *name);

/* The rate of a pattern or write under a mix (NULL: the declared rates). */
/* The records one operation's step touches: its rows times the average fan-out of its
 * for_each path (what the write-effects enumerator's KP_EFFECT_RECORDS counts). */
double kp_write_step_records(const kp_write_step *st);
/* Does a step of w other than a delete write a record of e (so what e's records hold goes
 * in with that write)? */
int kp_write_writes_entity(const kp_write *w, const kp_entity *e);
/* The reads that reach a for_each step's records from the first step's: one per record at
 * the start of each hop of its path (0 without for_each, or when an earlier step of `w` has
 * the same path: its records are known). */
double kp_write_for_each_reads(const kp_write *w, const kp_write_step *st);
/* The entity whose records' writes change a derived value (entity->aggregated_by lists it
 * there): the path's last target, or the join entity of a count through one. */
kp_entity *kp_derived_changed_by(const kp_derived *d);
/* Whether a write step on the records a derived value aggregates can change it: an insert
 * or delete, or an update that assigns the aggregated attribute, one its where tests or a
 * link of its last relation. */
int kp_derived_moved_by(const kp_derived *d, const kp_write_step *st);
double kp_pattern_rps(const kp_pattern *pattern, const kp_mix *mix);
double kp_write_rps(const kp_write *write, const kp_mix *mix);
/* The skew that applies to a pattern's / write's keys (its own, else the workload's). */
double kp_pattern_skew(const kp_model *model, const kp_pattern *pattern);
/* The largest page a shape can ask for: a page-size parameter's declared max (else its
 * default), else the fixed $limit; 0 when the shape has no limit. */
double kp_shape_limit_max(const kp_shape *shape);
/* Does a $each over records of t read nothing of them but their key: no condition, an order
 * by key attributes only, and key attributes (or parameters) as its members or $value? */
int kp_shape_reads_only_key(const kp_shape *shape, const kp_entity *t);
/* The most elements a $each/$count node yields for one parent: its $expect max, else the
 * last hop's fan-out max (1 without either), capped by kp_shape_limit_max. */
double kp_shape_items_max(const kp_shape *shape, const kp_rel *last);
/* The most items an offset-paged shape skips: its offset parameter's declared max; -1
 * when the offset is unbounded; 0 when the shape is not offset-paged. */
double kp_shape_offset_max(const kp_shape *shape);
/* The listing an expert's page bound is about: the response's one $each, when it has a
 * $limit (NULL when the response has none, or more than one $each). */
const kp_shape *kp_pattern_page_listing(const kp_pattern *pattern);
/* What an expert's page reads at most: `page` items (limit + offset) from each of the
 * `requests` that read it (shards, buckets), a header per request and one item that tells
 * another page follows. verify measures against it; risk warns where a plan's claim passes it. */
double kp_page_bound(double page, double requests);
double kp_write_skew(const kp_model *model, const kp_write *write);

/* The parsed model as JSON (for `check --format json`), with "schema_version".
 * Returns a new tree that the caller frees with cJSON_Delete(). */
cJSON *kp_model_to_json(const kp_model *model);

/* The readable summary `keyplan check` prints: entities with counts, relations with
 * cardinality and fan-out, patterns with parameters and response shape, writes. */
void kp_model_print_summary(FILE *out, const kp_model *model);
/* "1:1", "1:N" or "N:M". */
const char *kp_cardinality_name(kp_cardinality cardinality);
/* A one-line rendering of a response shape ("{ id, projects[<=20 by createdAt desc] }"). */
void kp_shape_describe(const kp_shape *shape, char *buf, size_t size);
/* The response as the JSON a pattern returns, types in place of values, pretty-printed:
 * {"projects": [  // up to 20, by createdAt desc\n    {"id": string, ...}, ...]} */
void kp_shape_outline(const kp_shape *shape, char *buf, size_t size);

/* The version of the JSON documents keyplan writes (docs/output.md). */
#define KP_SCHEMA_VERSION 1

#endif
