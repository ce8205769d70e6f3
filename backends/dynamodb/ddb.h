/*
 * ddb.h — the DynamoDB backend's private layout, shared by its files.
 *
 * A single-table design: one table with generic key attributes PK/SK, local indexes
 * LSI<n> (same PK, sort LSI<n>SK) and overloaded global indexes GSI<n> (GSI<n>PK /
 * GSI<n>SK). Every entity is *placed* in one or more of these indexes: its items carry
 * the index's key attributes, built from its own attribute values by a key format
 * ("WS#<id>", "PROJ#<createdAt>#<id>"). Every access pattern has a fetch tree that
 * mirrors its response shape: each node is one request kind (GetItem, Query,
 * BatchGetItem, a COUNT Query) whose key values come from the parameters or from the
 * records its parent fetched.
 *
 * Invariant: key formats only concatenate literals and escaped attribute values, so a
 * key value never depends on anything but the record itself (transform is pure), and
 * sort keys compare in the order the pattern declares (zero-padded numbers, ISO
 * times, escaped separators).
 */
#ifndef KP_DDB_H
#define KP_DDB_H

#include "backends/backend.h"
#include "backends/fetch.h"

#define KP_DDB_MAX_GSI 20
#define KP_DDB_MAX_LSI 5
#define KP_DDB_MAX_TRANSACT_ITEMS 100  /* puts, updates and deletes in one TransactWriteItems */
#define KP_DDB_TYPE_ATTR "_et"   /* every item names its entity: how execute tells items apart */
#define KP_DDB_ELEMENT_ATTR "_el" /* an element item (an adjacency list) names the array (or N:M relation) it indexes */

/* What an adjacency list indexes: the array attribute's name, or the N:M relation's. */
static inline const char *kp_ddb_elements_name(const kp_relation *rel)
{
    return rel->array_attr ? rel->array_attr->name : rel->name;
}

/* ---- key formats ---------------------------------------------------------------- */

typedef struct ddb_segment {
    const char *literal;        /* exactly one of literal / attr */
    const kp_attr *attr;
    int width;                  /* zero-padding width for ints (0: none) */
    /* order segments of a sort key (ordered_sk): the value's key text inverted (digits
     * complemented, then "~"), so a part ordered against the read direction sorts right;
     * and the text an absent value takes ("~" after every value, "!" before), so items
     * without it stay in the index where the declared `nulls` puts them. NULL: a value is
     * required (an item without one is not in the index: sparse). */
    int is_inverted;
    const char *null_text;
    /* a copy's value (an N:M's join items keyed by what they copy of their target, so an
     * index reads a listing in an order on the targets' own attributes): attr is the
     * record's over `via` (kp_copy_source), held in the item as a ddb_copy */
    const kp_rel *via;
} ddb_segment;

typedef struct ddb_format {
    ddb_segment *segs;
    size_t count;
} ddb_format;

/* ---- indexes and placements ------------------------------------------------------ */

typedef enum ddb_index_kind { DDB_BASE, DDB_LSI, DDB_GSI } ddb_index_kind;

typedef struct ddb_index {
    ddb_index_kind kind;
    const char *name;           /* NULL for the base table */
    const char *pk_attr;        /* "PK", "GSI1PK" */
    const char *sk_attr;        /* "SK", "LSI1SK", "GSI1SK" */
    int number;                 /* 1.. for LSI/GSI */
} ddb_index;

typedef struct ddb_placement {
    const ddb_index *index;
    ddb_format pk, sk;
    int shards;                 /* > 1: PK gets "#<n>" (n from a hash of the item key) */
    const kp_cond *only_when;   /* sparse: literal conditions an item must meet to carry the keys */
    size_t only_when_count;
    const char *sentinel_sk;    /* header placement: a fixed SK instead of sk (parent item in a child collection) */
    const kp_pattern *cause;
    int is_read;                /* propose: a fetch reads it (prune_placements) */
    /* an adjacency list (ddb_entity.element_items): not keys on the record's item but items
     * of their own on the base table, one per distinct element of this relation — the
     * inverse of an array relation (the array's elements), or of an N:M through a join
     * entity (the records the join records pair it with): pk keyed by the element (the
     * referenced record's key), sk over the record, holding the record's attributes
     * `holds` (what the listings read) */
    const kp_rel *elements;
    const kp_attr **holds;
    size_t hold_count;
} ddb_placement;

/* A copy of an attribute of the record an entity's record references (an extended
 * reference), held in each of its items so a pattern need not read the referenced item. */
typedef struct ddb_copy {
    const kp_rel *rel;          /* the to-one relation (or array of references) to the records copied from */
    const kp_attr *attr;        /* its attribute */
    const char *name;           /* the item attribute that holds the copy: "bidder.nickname" */
    int is_array;               /* rel is an array of references: a list, one value per element, in its order */
} ddb_copy;

typedef struct ddb_entity {
    const kp_entity *entity;
    const char *prefix;         /* "WS", "PROJ" */
    ddb_placement *placements;  /* [0] is the base table */
    size_t placement_count, placement_cap;
    int is_in_parent_collection;/* base PK is a parent's key (an item collection) */
    const kp_relation *home;    /* the relation whose parent holds the collection */
    ddb_copy *copies;           /* attributes of referenced records its items copy */
    size_t copy_count, copy_cap;
    ddb_placement *element_items; /* adjacency lists: items per element of an array of references */
    size_t element_count, element_cap;
} ddb_entity;

/* ---- fetch trees ------------------------------------------------------------------- */

/* DDB_COPY: the referenced record made of the copies its parent's item holds (no request);
 * DDB_RIDE: a to-one record the parent's header Query returned beside the header (a rider:
 * its item sits in the header's collection, just after the header: no request) */
typedef enum ddb_fetch_kind { DDB_GET, DDB_QUERY, DDB_BATCH_GET, DDB_COUNT, DDB_COPY, DDB_RIDE } ddb_fetch_kind;

/* Where a key value comes from at run time. */
typedef enum ddb_source { DDB_FROM_PARAMS, DDB_FROM_PARENT, DDB_FROM_CONSTANT } ddb_source;

typedef struct ddb_fetch ddb_fetch;
struct ddb_fetch {
    /* the tree (backends/fetch.h): children run for each record this fetch returns; a next
     * hop (multi-hop) on each record of this fetch, the elements come from the last hop; an
     * independent child is a root's child whose keys the parameters give (through the root's
     * key): it needs nothing of the root's answer, same round trip */
    kp_fetch base;
    ddb_fetch_kind kind;
    const ddb_placement *placement; /* index + key formats of the items read */
    const ddb_entity *entity;       /* the items it returns */
    const ddb_entity *header;       /* a Query that also returns the parent's header item */
    const char *header_sk;          /* that header's sentinel sort key */
    int rider_count;                /* a header Query: the riders it also returns (its DDB_RIDE children) */
    const char *ride_sk;            /* DDB_RIDE: the rider item's sort key in the header's collection */
    /* the hop this fetch follows from its parent's records (NULL for the root) */
    const kp_rel *rel;
    const kp_shape *shape;          /* the EACH / ONE / COUNT node it feeds (NULL: a to-one path hop) */
    /* key values: for a root fetch from parameters (pk_params[i] binds the pk format's
     * i-th attribute segment); for a child fetch from the parent record's attributes */
    ddb_source source;
    const kp_attr **pk_from;        /* parent attribute for each attribute segment of pk (DDB_FROM_PARENT) */
    const kp_param **pk_params;     /* parameter for each attribute segment of pk (DDB_FROM_PARAMS) */
    const char *sk_prefix;          /* begins_with / range prefix */
    const kp_cond *range;           /* a key-range condition on the first sort attribute, or NULL */
    const kp_cond *range_end;       /* the other bound on the same attribute (one BETWEEN), or NULL */
    const kp_cond **sk_eq;          /* equality conditions folded into the sort-key prefix */
    size_t sk_eq_count;
    const kp_cond **filters;        /* conditions the server applies after reading (FilterExpression) */
    size_t filter_count;
    int is_forward;                 /* ScanIndexForward */
    int is_server_ordered;          /* the index returns the declared order (else the client sorts) */
    int64_t limit;                  /* Limit sent (0: none); with a header, one more, and one per rider */
    int is_paged;                   /* the pattern's paged $each: continued with ExclusiveStartKey */
    int shards;                     /* scatter-gather over PK#0..#n-1 */
    int is_scan;                    /* no index serves it: a Scan, a defect the report shows */
    int is_client_filtered;         /* root set filtered in the client by conditions through relations */
    int is_join_target;             /* a Query of an N:M's join items that answers the listing itself: the
                                       listing returns only the targets' key, which each join item holds
                                       (kp_copy_target_key), in the join items' sort-key order */
    int is_join_ordered;            /* a Query of join items in the listing's order (the targets' key):
                                       it reads and pages the listing, the targets' BatchGetItem that
                                       follows keeps that order */
    double expected;                /* items a root-set Query is expected to return (estimates) */
    double whole;                   /* items a root-set Query's key range holds: what a read without
                                       Limit takes (the client sorts, or the server filters) */
    /* DDB_COPY: for each attribute of the referenced record, the parent record's attribute
     * that holds it (a ddb_copy's name, or the model's own copy_of attribute);
     * is_join_target: the join item's copies of its target's attributes */
    const char **copy_names;
    const kp_attr **copy_attrs;
    size_t copy_count;
};

/* A fetch's i-th child and its next hop, as DynamoDB fetches. */
static inline ddb_fetch *kp_ddb_child(const ddb_fetch *f, size_t i) { return (ddb_fetch *)f->base.children[i]; }
static inline ddb_fetch *kp_ddb_next_hop(const ddb_fetch *f) { return (ddb_fetch *)f->base.next_hop; }

typedef struct ddb_layout {
    const char *table;              /* without the prefix */
    ddb_index base;
    ddb_index lsi[KP_DDB_MAX_LSI];
    size_t lsi_count;
    ddb_index gsi[KP_DDB_MAX_GSI + 8]; /* more than 20 is reported as a defect */
    size_t gsi_count;
    ddb_entity *entities;           /* one per model entity, same index */
    size_t entity_count;
    ddb_fetch **roots;              /* one fetch tree per pattern, model order */
    kp_arena arena;
} ddb_layout;

/* keys.c */
/* Renders a key value of a record (its canonical JSON object) into buf; -1 when an
 * attribute the format needs is absent (the item does not carry this key). */
int kp_ddb_format_value(const ddb_format *f, const cJSON *object, char *buf, size_t size);
/* The same from explicit values: values[i] is the value of the i-th attribute segment. */
int kp_ddb_format_values(const ddb_format *f, const cJSON *const *values, size_t value_count, char *buf, size_t size);
/* The literal prefix of a format up to (not including) its first attribute segment. */
const char *kp_ddb_format_prefix(kp_arena *arena, const ddb_format *f);
/* "WS#<id>" for messages and reports. */
const char *kp_ddb_format_describe(kp_arena *arena, const ddb_format *f);
/* One attribute value as it appears inside a key: escaped, numbers zero-padded. */
int kp_ddb_key_text(const kp_attr *attr, int width, const cJSON *value, char *buf, size_t size);
/* Can an attribute's key text be inverted (order reversed: ints, counters, non-negative
 * decimals, dates, ISO timestamps, uuids, strings and enums)? */
int kp_ddb_invertible(const kp_attr *attr);
/* Neutral value <-> DynamoDB AttributeValue JSON ({"S": ...}, {"N": ...}, {"M": ...}, ...). */
cJSON *kp_ddb_to_attribute_value(const kp_type *type, const cJSON *value);
cJSON *kp_ddb_from_attribute_value(const kp_type *type, const cJSON *av, kp_error *err);
/* The item size DynamoDB bills: attribute names plus values. */
size_t kp_ddb_item_size(const cJSON *item);
/* A short entity prefix: "Workspace" -> "WS"-like upper-case abbreviations, unique per model. */
const char *kp_ddb_entity_prefix(kp_arena *arena, const kp_model *model, const kp_entity *entity);

/* backend.c: the item a record becomes (PK, SK, index keys, type tag, attributes, and the
 * copies of the records it references, found in `data`; none when data is NULL). */
int kp_ddb_item_for(const kp_design *d, const kp_dataset *data, const kp_record *r, cJSON **out, kp_error *err);
/* Every item a record becomes, appended to the array `out`: its item, then its element
 * items (one per distinct element of each array an adjacency list indexes). */
int kp_ddb_items_for(const kp_design *d, const kp_dataset *data, const kp_record *r, cJSON *out, kp_error *err);

/* emit.c: create-table.json, nosql-workbench.json, cloudformation.yaml, requests/ */
int kp_ddb_emit(const kp_design *d, const char *out_dir, const kp_emit_options *options, kp_error *err);

/* propose.c */
int kp_ddb_propose(const kp_model *model, const kp_propose_options *options, kp_design_list *out, kp_error *err);

#endif
