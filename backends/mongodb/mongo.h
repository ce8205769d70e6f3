/*
 * mongo.h — the MongoDB backend's private layout, shared by its files.
 *
 * A document design: every entity either owns a collection (one document per record,
 * `_id` derived from the entity key) or is *embedded* in the documents of its parent
 * (an array named after the relation, or a subdocument for a to-one relation). A
 * document may also hold *subsets* (the first N children of a referenced relation, in
 * the order a pattern reads them) and *extended references* (copies of a few fields
 * of a to-one target, under the relation's name). Every access pattern has a fetch
 * tree that mirrors its response shape: each node is a find (or a count) on one
 * collection whose filter values come from the parameters or from the records its
 * parent read, or records taken out of documents already read (no request).
 *
 * Invariant: a document is a pure function of the design and the neutral data (its
 * record, the children it embeds, the fields it copies), so a resumed or repeated
 * seed writes identical documents under identical `_id`s, and a write is applied by
 * rewriting exactly the documents whose content changed.
 */
#ifndef KP_MONGO_H
#define KP_MONGO_H

#include <bson/bson.h>

#include "backends/backend.h"
#include "backends/fetch.h"

#define KP_MG_BATCH 5000                /* documents per unordered bulk insert when seeding (client.c) */
#define KP_MG_IN_BATCH 1000             /* values per $in of a follow-up find */
#define KP_MG_WRITE_BATCH 500           /* documents per delete or bulk store command (writes.c) */
#define KP_MG_MAX_DOC_BYTES (16.0 * 1024 * 1024)
#define KP_MG_MARKER_COLLECTION "_keyplan"

typedef struct mg_entity mg_entity;
typedef struct mg_collection mg_collection;

/* ---- what a document holds besides its record's attributes -------------------------- */

/* Children of a forward 1:N / 1:1 relation inside the parent's documents. */
typedef struct mg_nested {
    const kp_rel *rel;              /* parent -> child (the child holds the reference) */
    mg_entity *child;
    const char *field;              /* the relation's name */
    int is_array;                   /* to-many: an array; to-one: a subdocument */
    int64_t subset;                 /* 0: every child (embedding); N: the first N in `order` (subset) */
    const kp_shape *order_shape;    /* subset: the $each whose $order / $limit define it */
} mg_nested;

/* Copies of a to-one target's attributes under the relation's name (extended reference). */
typedef struct mg_extref {
    const kp_rel *rel;              /* to-one from this entity, or an array of references it holds (then
                                       the field is an array of the copies, one per element, in order) */
    const char *field;              /* the relation's name */
    const kp_attr **attrs;          /* non-key attributes of the target that are copied */
    size_t attr_count;
} mg_extref;

/* A kept copy read at its embedded source: Order.shippingCarrier at "shipping.carrier". */
typedef struct mg_alias {
    const kp_attr *attr;
    const char *path;
} mg_alias;

/* ---- collections and indexes ------------------------------------------------------------ */

typedef struct mg_index_field {
    const char *path;               /* "userId", "shipping.carrier", "items.sku" */
    int is_desc;
    int is_free;                    /* its direction changes no find the index serves: every one binds
                                       it by an equality before its order or a range after it */
} mg_index_field;

typedef struct mg_index {
    const char *name;               /* "userId_1_placedAt_-1" */
    mg_index_field *fields;
    size_t field_count;
    int is_unique;
    const kp_pattern **causes;
    size_t cause_count;
    int is_redundant;               /* a prefix of another index: not created, served by that one */
    const char *served_by;          /* the index that serves it when redundant */
    const char *backwards;          /* the patterns that walk it in reverse ("a, b"), or NULL */
} mg_index;

struct mg_collection {
    const char *name;               /* without the prefix: the owning entity's name */
    mg_entity *owner;
    mg_index **indexes;
    size_t index_count, index_cap;
    double id_rate;                 /* req/s of the finds that select by _id */
    const char *shard_key;          /* "{ workspaceId: 1, _id: 1 }" */
    const char *shard_why;
};

struct mg_entity {
    const kp_entity *entity;
    mg_collection *collection;      /* its own collection; NULL when embedded */
    /* embedded: where its records live */
    mg_entity *parent;
    const kp_rel *parent_rel;       /* parent -> this */
    const char *path;               /* the parent's field holding it */
    int is_single;                  /* a subdocument (to-one) rather than an array */
    mg_nested *nested;
    size_t nested_count, nested_cap;
    mg_extref *extrefs;
    size_t extref_count, extref_cap;
    /* copies keyplan keeps (core/kept_copies.c) whose source is embedded in this document
     * already: not stored twice, read and indexed at the embedded field */
    mg_alias *aliases;
    size_t alias_count, alias_cap;
    /* its sizes once the layout is final (mg_fix_sizes); until then they are computed */
    int has_sizes;
    double element_avg, document_avg, document_bound, document_max;
};

/* The field a kept copy is read at when the document embeds its source, or NULL. */
const char *kp_mg_alias(const mg_entity *me, const kp_attr *a);
/* kp_mg_record_of, and the kept copies the document holds at their embedded source. */
cJSON *kp_mg_record_of_entity(const mg_entity *me, const cJSON *doc, kp_error *err);

/* ---- fetch trees ---------------------------------------------------------------------------- */

typedef enum mg_fetch_kind {
    MG_FIND,        /* a find on a collection */
    MG_COUNT,       /* a count command per parent record */
    MG_NESTED,      /* records inside documents already read: embedded, subset, extended reference,
                       or the document that contains an embedded record */
    MG_KEYS         /* target records made of the key values the parent records hold (no request) */
} mg_fetch_kind;

/* How a find selects its documents. */
typedef enum mg_match {
    MG_MATCH_PARAMS,    /* the pattern's conditions on the root */
    MG_MATCH_FK,        /* children: their reference fields equal the parent's key */
    MG_MATCH_KEY,       /* targets by key: _id $in (a to-one hop, an array of references) */
    MG_MATCH_ARRAY,     /* documents whose array of references holds the parent's key */
    MG_MATCH_PARENT     /* the documents holding embedded roots, by the parent key in the parameters */
} mg_match;

typedef struct mg_fetch mg_fetch;
struct mg_fetch {
    /* the tree (backends/fetch.h): a next hop (multi-hop) runs on each record of this fetch,
     * the children on the records of the last hop; an independent fetch's filter comes from
     * the parameters: same round trip as its parent */
    kp_fetch base;
    mg_fetch_kind kind;
    mg_match match;
    const mg_entity *entity;        /* the records it yields */
    const mg_collection *coll;      /* MG_FIND / MG_COUNT: where it runs */
    const kp_rel *rel;              /* the hop from the parent's records (NULL at the root) */
    const kp_shape *shape;          /* the EACH / ONE / COUNT node it feeds; NULL: a hop on the way */
    /* MG_NESTED: which part of the parent's documents */
    const mg_nested *nested;
    const mg_extref *extref;
    int is_container;               /* the document an embedded record was read from */
    /* conditions: MG_FIND sends `conds` in the filter; `client_conds` are tested on the
     * records read (embedded elements, roots found through their parent) */
    const kp_cond **conds;
    const char **cond_fields;       /* the document field each condition tests */
    size_t cond_count;
    const kp_cond **client_conds;
    size_t client_cond_count;
    int is_server_ordered;          /* the find sorts as the shape declares (else the client sorts) */
    int is_null_split;              /* the first sort key's nulls belong where MongoDB does not put
                                       them (it sorts null lowest): two finds, its nulls (sorted by
                                       the other keys), then the others (execute.c) */
    const kp_shape *order_shape;    /* the $each whose $order the find sorts by (and pages) */
    mg_index_field *sort;           /* the sort sent: order keys as fields (cut after a unique one) */
    size_t sort_count;
    const char **match_fields;      /* MG_MATCH_FK / ARRAY: the fields that hold the parent's key */
    const kp_attr **match_from;     /* ... and the parent's attribute each one equals */
    size_t match_count;
    const kp_attr **key_from;       /* MG_MATCH_KEY / MG_KEYS: the parent attribute giving each key attribute */
    int64_t limit;                  /* sent (0: none); the paged find reads one more to know */
    int is_held_page;               /* the documents holding a listing's lines, read for one page of
                                       them (plan.c held_page): sorted, cut at the page ... */
    size_t reads_ties;              /* ... reading one more, and after it the documents that tie
                                       with the page's last on the first reads_ties sort fields, */
    const kp_attr *const *tie_attrs;  /* ... which hold these attributes */
    int is_per_parent;              /* one find per parent record (a limit per parent) */
    int is_paged;                   /* the pattern's paged $each: continued after the token */
    int is_client_filtered;         /* root set filtered in the client by conditions through relations */
    int is_scan;                    /* no index serves it: a defect the report shows */
    const mg_index *index;          /* the index it uses (NULL: _id or none) */
    double expected;                /* documents a root-set find is expected to return */
};

/* Does f read its listing as two finds, the first sort key's nulls apart (is_null_split on a
 * find the server orders)? */
static inline int kp_mg_is_split(const mg_fetch *f) { return f->kind == MG_FIND && f->is_server_ordered && f->is_null_split; }

/* A fetch's i-th child and its next hop, as MongoDB fetches. */
static inline mg_fetch *kp_mg_child(const mg_fetch *f, size_t i) { return (mg_fetch *)f->base.children[i]; }
static inline mg_fetch *kp_mg_next_hop(const mg_fetch *f) { return (mg_fetch *)f->base.next_hop; }

typedef struct mg_layout {
    mg_entity *entities;            /* one per model entity, same index */
    size_t entity_count;
    mg_collection **collections;    /* model order of their owners */
    size_t collection_count;
    mg_fetch **roots;               /* one fetch tree per pattern, model order */
    kp_arena arena;
} mg_layout;

/* ---- documents (docs.c) ------------------------------------------------------------------------
 *
 * Documents travel as cJSON in MongoDB canonical Extended JSON: strings and booleans
 * as JSON, int/counter as {"$numberLong": "42"}, decimal/double as {"$numberDouble":
 * "19.9"}, timestamps as {"$date": {"$numberLong": "<ms>"}}, blobs as {"$binary":
 * {"base64": ..., "subType": "00"}}; everything else (uuid, date, enum, ...) as
 * strings. kp_item.body is such a document; the bson conversion is exact both ways. */

/* A neutral value of a type -> Extended JSON (NULL on a value the type cannot hold). */
cJSON *kp_mg_to_ejson(const kp_type *type, const cJSON *value, kp_error *err);
/* Extended JSON -> the neutral canonical value of a type (numbers as cJSON_Raw). */
cJSON *kp_mg_from_ejson(const kp_type *type, const cJSON *ejson, kp_error *err);
/* The `_id` of a record (or any object holding the entity's key attributes). */
cJSON *kp_mg_id(const kp_entity *entity, const cJSON *object, kp_error *err);
/* The neutral record of a document (or an embedded element): the entity's attributes. */
cJSON *kp_mg_record_of(const kp_entity *entity, const cJSON *doc, kp_error *err);
/* The document a record becomes (with `_id` when the entity owns a collection). */
int kp_mg_document(const kp_design *d, const kp_dataset *data, const kp_record *record, cJSON **out, kp_error *err);
/* cJSON Extended JSON <-> bson. */
int kp_mg_ejson_to_bson(const cJSON *ejson, bson_t *out, kp_error *err);
cJSON *kp_mg_bson_to_ejson(const bson_t *doc);
/* The size bson gives the document. */
size_t kp_mg_document_size(const cJSON *doc);
/* The checksum of a document body, after the bson round trip read-back sees. */
uint64_t kp_mg_item_checksum(const cJSON *body);
/* "<Entity>:<_id as canonical JSON>", a document's stable identity. */
char *kp_mg_item_id(const char *collection, const cJSON *doc);

/* propose.c */
int kp_mg_propose(const kp_model *model, const kp_propose_options *options, kp_design_list *out, kp_error *err);
/* The collection whose documents hold an entity's records (its own, or its top ancestor's). */
const mg_collection *kp_mg_home(const mg_layout *L, const kp_entity *e);
/* The dotted path of an entity's records inside their collection's documents ("" for the top). */
const char *kp_mg_path(kp_arena *arena, const mg_entity *e);

/* plan.c: a find as mongosh text, "<name>" where values go; `prefix` goes before the
 * collection name. */
const char *kp_mg_fetch_text(kp_arena *arena, const mg_fetch *f, const kp_pattern *p, const char *prefix);

/* schema.c: the $jsonSchema validator of a collection (a new tree). */
cJSON *kp_mg_json_schema(const kp_design *d, const mg_collection *c);
/* The createIndexes entries of a collection (non-redundant indexes; a new array). */
cJSON *kp_mg_index_specs(const mg_collection *c);

/* emit.c */
int kp_mg_emit(const kp_design *d, const char *out_dir, const kp_emit_options *options, kp_error *err);

#endif
