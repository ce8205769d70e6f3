/*
 * cql.h — the Cassandra backend's private layout, shared by its files.
 *
 * A query-first design (the Chebotko mapping): every entity has a table keyed by its
 * key (the record by key: roots found by key, to-one hops, writes), and every access
 * path a pattern walks that is not "by key" gets a query table whose partition key is
 * what the path knows with equality (a foreign key, an equality parameter, a literal,
 * or a hash bucket), whose clustering columns are the range attribute, then the order
 * the pattern declares (ASC/DESC), then the rest of the row entity's key, so rows never
 * overwrite each other. Two paths that need the same table share it. A table may carry
 * the parent's attributes a pattern returns as static columns, so parent + children is
 * one SELECT. Every access pattern has a fetch tree that mirrors its response shape.
 *
 * A row may also hold copies of a few attributes of a record its record references
 * (an extended reference: `bidder_nickname` in the bids' table), chosen by cost where a
 * pattern would otherwise read the referenced row once per row it returns.
 *
 * Invariant: a row is a pure function of its record and the records its copies come
 * from (transform), so a resumed or repeated seed writes identical rows under
 * identical primary keys; a table holds
 * exactly the rows transform makes for the records of its entity (plus, for a table
 * with static columns, one static row per parent record in bucket 0).
 */
#ifndef KP_CQL_H
#define KP_CQL_H

#include "backends/backend.h"
#include "backends/fetch.h"
#include "backends/cassandra/cql_client.h"
#include "backends/cassandra/cql_codec.h"

#define KP_CQ_PARTITION_ROWS 100000.0               /* rows per partition before bucketing */
#define KP_CQ_PARTITION_BYTES (100.0 * 1024 * 1024)  /* bytes per partition before bucketing */
#define KP_CQ_MAX_BUCKETS 64
#define KP_CQ_MAX_BATCH 20                           /* statements per logged batch */
#define KP_CQ_BATCH_BYTES 32768                      /* and bytes of rows, under Cassandra's 50 KiB batch_size_fail_threshold */
#define KP_CQ_PAGE_ROWS 5000                         /* rows a SELECT without LIMIT answers per request */
#define KP_CQ_MARKER_TABLE "keyplan_marker"

typedef enum cq_role { CQ_REGULAR, CQ_PARTITION, CQ_CLUSTERING, CQ_STATIC } cq_role;

typedef struct cq_column {
    const char *name;           /* snake_case, unquoted */
    const char *quoted;         /* as CQL text must write it */
    const kp_attr *attr;        /* the attribute it holds; NULL: the bucket */
    const kp_entity *entity;    /* whose attribute (the row entity, the static parent, or a copy's source) */
    const kp_rel *via;          /* a copy (an extended reference): `attr` of the record the row's record
                                   reaches over this to-one relation, kept in step by the writes */
    int is_element;             /* one row per element of attr (an array of references) */
    const char *cql_type;       /* "text", "bigint", "frozen<list<text>>" */
    const kp_cql_type *type;
    int is_json;                /* an object or a nested array, stored as JSON text */
    cq_role role;
    int is_desc;
    const kp_attr *as_target;   /* a join table's column holding a target's key attribute (this one), where
                                   the rows answer a listing of the targets' keys (cq_fetch.is_join_keys) */
} cq_column;

typedef struct cq_table {
    const char *name;           /* without the prefix */
    const kp_entity *entity;    /* the row entity */
    int is_base;                /* the entity's table by key */
    int is_dropped;             /* a table by key nothing reads, left out of the layout (propose.c) */
    const kp_entity *parent;    /* static columns hold this entity's attributes, or NULL */
    const kp_attr **parent_keys;/* for each partition column (bucket excluded), the parent attribute it equals */
    cq_column *cols;            /* partition, clustering, static, regular */
    size_t col_count, col_cap;
    size_t pk_count, ck_count;
    int buckets;                /* > 1: a bucket completes the partition key: a hash of the clustering
                                   key, or a range of the first clustering column (bounds) */
    const cJSON **bounds;       /* range buckets: buckets - 1 ascending values of the first clustering
                                   column; a row's bucket is how many of them are <= its value, so the
                                   buckets hold consecutive runs of the clustering order (NULL: hash) */
    const char *hash_why;       /* hash buckets where a page reads in the first clustering column's order:
                                   why no range could be cut and what model change would let one (NULL: none) */
    int has_bucket;             /* a bucket column (buckets > 1, or a constant 0 for a table without equality) */
    const char *signature;      /* what makes two tables the same */
    const kp_pattern **causes;
    size_t cause_count, cause_cap;
    double rows, bytes, row_bytes, max_partition_rows;
    double row_bytes_max;           /* a row at its largest: every column present at its size model's maximum */
    double rows_per_record;     /* rows one record has here: its array's elements on average for a
                                   table keyed by them (0: one) */
    const char *why;
} cq_table;

typedef enum cq_fetch_kind {
    CQ_SELECT,      /* SELECT rows of a table */
    CQ_COUNT,       /* SELECT COUNT(*) per parent */
    CQ_KEYS,        /* records made of key values the parent holds (no request) */
    CQ_DERIVED,     /* a $count the record already holds (a derived attribute): no request */
    CQ_COPY         /* the record a to-one hop reaches, made of the copies its parent's row holds
                       (cq_column.via): no request */
} cq_fetch_kind;

/* Where a bound value comes from. */
typedef enum cq_src { CQ_SRC_PARAM, CQ_SRC_LITERAL, CQ_SRC_PARENT, CQ_SRC_BUCKET } cq_src;

typedef struct cq_bind {
    const cq_column *col;
    cq_src src;
    const kp_param *param;
    const cJSON *literal;
    const kp_attr *from;        /* CQ_SRC_PARENT: the parent record's attribute */
    int is_element;             /* the parent attribute is an array: one request per element */
} cq_bind;

typedef struct cq_fetch cq_fetch;
struct cq_fetch {
    /* the tree (backends/fetch.h): a next hop (multi-hop, join) runs on each record this one
     * yields, and so do its children; an independent fetch is bound from the parameters:
     * same round trip as its parent */
    kp_fetch base;
    cq_fetch_kind kind;
    const cq_table *table;
    const kp_entity *entity;    /* the records it yields */
    const kp_shape *shape;      /* the $each / $one / $count node it feeds; NULL at the root */
    const kp_rel *rel;          /* the hop from the parent records; NULL at the root */
    const kp_rel *edge_rel;     /* a to-one leaf hop: linked under this rel */
    int is_root;
    int is_join;                /* rows of a join entity; the targets are the next hop */
    int is_join_keys;           /* rows of a join entity that answer a listing of the targets
                                   themselves: each row yields its target's key (kp_copy_target_key)
                                   and the copies it holds of the target (copy_cols) */
    int is_by_key;              /* one row per input, by the target's whole key (by_key) */
    cq_bind *binds;             /* equality on every partition column (and leading clustering) */
    size_t bind_count;
    const kp_cond *range;       /* on the first free clustering column, or NULL */
    const kp_cond *range_hi;    /* its other bound, a condition of its own (`>= :from`, `<= :until`), or NULL */
    const cq_column *range_col;
    const kp_cond **client_conds;  /* tested on the records read */
    size_t client_cond_count;
    int is_server_ordered;      /* the rows come in the order the shape declares */
    int is_client_ordered;      /* the assembler sorts and cuts */
    int is_merged;              /* a bucketed read whose every bucket comes in the declared order:
                                   LIMIT per bucket, the client merges and cuts before going on */
    int reads_ties;             /* merged, but a bucket is clustered by the order's first part only
                                   (a later part is optional): a bucket that fills the page is read
                                   again for every row tying with its last on that part */
    int is_reversed;            /* read with ORDER BY against the clustering order: the table was
                                   drawn for the opposite order, and one table serves both */
    int64_t limit;              /* LIMIT sent (0: none) */
    const kp_param *limit_param;
    int is_paged;               /* the pattern's paged $each, continued with Cassandra's paging state */
    int has_statics;            /* the parent record comes from the static columns */
    int step;                   /* its round trip */
    const char *cql;            /* the statement ('?' where values go) */
    /* CQ_COPY: the columns of the parent's table (indexes) that hold the target's
     * attributes: a copy (cq_column.via), or the row entity's own copy_of attribute;
     * is_join_keys: the columns of its own table that copy the targets' attributes */
    const size_t *copy_cols;
    const kp_attr **copy_attrs;
    size_t copy_count;
};

/* A fetch's i-th child and its next hop, as Cassandra fetches. */
static inline cq_fetch *kp_cq_child(const cq_fetch *f, size_t i) { return (cq_fetch *)f->base.children[i]; }
static inline cq_fetch *kp_cq_next_hop(const cq_fetch *f) { return (cq_fetch *)f->base.next_hop; }
/* A read that walks a range-bucketed table's buckets in order (execute.c walks_buckets, which
 * also needs one parent and a LIMIT): a root's or independent merged SELECT, not per element. */
static inline int kp_cq_walks_buckets(const cq_fetch *f)
{
    return f->table && f->table->bounds && f->is_merged && f->kind == CQ_SELECT && (f->is_root || f->base.is_independent) &&
           !(f->bind_count && f->binds[0].is_element);
}
/* A token-paged merged read asks each bucket (or its one partition, read to the order's
 * first part) for one row past the page: when one bucket holds all the rest, the merge still
 * sees that another page follows. */
static inline int kp_cq_reads_one_more(const cq_fetch *f, const kp_pattern *p)
{
    return f->is_merged && f->table && (f->table->buckets > 1 || f->reads_ties) && f->shape && f->shape == p->paged &&
           f->shape->page == KP_PAGE_TOKEN;
}

typedef struct cq_layout {
    cq_table **tables;
    size_t table_count, table_cap;
    /* the tables again, by signature and by name: finding a table to share or a free
     * name stays constant-time */
    kp_strmap by_signature, by_name;
    cq_table **base;            /* per entity index: its table by key */
    cq_fetch **roots;           /* per pattern */
    const char *keyspace;       /* the model's name in snake_case (without prefix) */
} cq_layout;

/* propose.c */
int kp_cq_propose(const kp_model *model, const kp_propose_options *options, kp_design_list *out, kp_error *err);
/* Does t's partition key bind attr (one value in each partition)? */
int kp_cq_partition_binds(const cq_table *t, const kp_attr *attr);
/* The CQL type of a model type, and whether it is stored as JSON text. */
const char *kp_cq_type_text(const kp_type *type, int *is_json);
/* The Chebotko diagram of one table ("K workspace_id text", "C↓ created_at", "S name"). */
const char *kp_cq_table_text(kp_arena *arena, const cq_table *t);
/* CREATE TABLE text of a table under `prefix` in keyspace `ks` (quoted as needed). */
const char *kp_cq_create_table(kp_arena *arena, const cq_table *t, const char *ks, const char *prefix);
/* A fetch as CQL text (table under prefix, '?' for values). */
const char *kp_cq_select_text(kp_arena *arena, const cq_fetch *f, const char *ks, const char *prefix);
/* " ORDER BY c1 ASC, c2 DESC" for a reversed read (every clustering column the other way),
 * "" for any other. */
const char *kp_cq_order_by(kp_arena *arena, const cq_fetch *f);

/* rows.c */
cJSON *kp_cq_to_cell(const cq_column *c, const cJSON *value, kp_error *err);
cJSON *kp_cq_from_cell(const cq_column *c, const cJSON *cell, kp_error *err);
int kp_cq_bucket(const cq_table *t, const cJSON *row);
/* A range-bucketed table's bucket for a value of its first clustering column. */
int kp_cq_range_bucket(const cq_table *t, const cJSON *value);
int kp_cq_transform(const kp_design *d, const kp_dataset *data, const kp_record *r, kp_item_list *out, kp_error *err);
/* The neutral record of a row (the row entity's attributes in canonical JSON). */
cJSON *kp_cq_record_of(const cq_table *t, const cJSON *row, int statics, kp_error *err);
uint64_t kp_cq_item_checksum(const cJSON *body);
const cq_table *kp_cq_table(const kp_design *d, const char *name);
/* The kp_cq_item_checksum of a row read back, as transform's body of it: the cells of the
 * row (statics == 0: every column but the statics) or of its partition's static row (1: the
 * partition key and the statics), nulls left out; without copying them. */
uint64_t kp_cq_row_checksum(const cq_table *t, const cJSON *row, int statics);

/* live.c */
int kp_cq_connect(const kp_target *t, kp_conn **out, kp_error *err);
void kp_cq_disconnect(kp_conn *conn);
int kp_cq_inspect(kp_conn *conn, const kp_design *d, kp_target_state *out, kp_error *err);
int kp_cq_apply_schema(kp_conn *conn, const kp_design *d, kp_error *err);
int kp_cq_drop(kp_conn *conn, const kp_design *d, kp_error *err);
int kp_cq_write_marker(kp_conn *conn, const kp_design *d, const cJSON *marker, kp_error *err);
int kp_cq_read_marker(kp_conn *conn, const kp_design *d, const char *shard, cJSON **out, kp_error *err);
/* export.c: seed --export dsbulk (backend.h) */
int kp_cq_export_open(const kp_design *d, const char *dir, const char *prefix, kp_exporter **out, kp_error *err);
int kp_cq_export_item(kp_exporter *x, const kp_item *item, kp_error *err);
int kp_cq_export_close(kp_exporter *x, const cJSON *marker, int is_ok, char *note, size_t note_size, kp_error *err);
int kp_cq_submit(kp_conn *conn, kp_item_list *batch, kp_ack_fn on_ack, void *ctx, kp_error *err);
int kp_cq_poll(kp_conn *conn, int timeout_ms, kp_error *err);
int kp_cq_read_back(kp_conn *conn, const kp_design *d, kp_readback *out, kp_error *err);
int kp_cq_read_items(kp_conn *conn, const kp_design *d, kp_read_item_fn fn, void *ctx, kp_error *err);
/* A row's identity as transform names it (table, static mark, key values). */
char *kp_cq_item_id(const cq_table *t, const cJSON *body, int statics);
int kp_cq_delete_items(kp_conn *conn, const kp_design *d, const kp_item_list *items, kp_error *err);
int kp_cq_server_item_limit(kp_conn *conn, double *bytes, kp_error *err);
int kp_cq_read_records(kp_conn *conn, const kp_design *d, kp_read_record_fn on_record, void *ctx, kp_error *err);
int kp_cq_migrate_schema(kp_conn *conn, const kp_design *from, const kp_design *to, int is_final, int *emptied,
                         char *note, size_t note_size, kp_error *err);
kp_cql_client *kp_cq_conn_client(kp_conn *conn);
const char *kp_cq_conn_keyspace(kp_conn *conn, const kp_design *d);
const char *kp_cq_conn_prefix(kp_conn *conn);
/* From now on, rows submitted on this connection replace whole rows (verify's undo). */
void kp_cq_conn_rewriting(kp_conn *conn);
/* The INSERT of a row (statics: only the partition key and static columns). */
const char *kp_cq_insert_text(kp_arena *arena, const cq_table *t, int statics, const char *ks, const char *prefix);
/* Binds a row body to an INSERT (key_only 0: absent columns unset; -1: absent columns
 * null, for a rewrite) or a DELETE (key_only 1: the key columns). */
int kp_cq_bind_row(const cq_table *t, const cJSON *body, int statics, int key_only, kp_cql_values *out, kp_error *err);
const char *kp_cq_delete_text(kp_arena *arena, const cq_table *t, int statics, const char *ks, const char *prefix);

/* execute.c */
int kp_cq_execute(kp_conn *conn, const kp_design *d, const kp_pattern *p, const kp_params *params, const char *page,
                  kp_result *out, kp_error *err);
/* writes.c */
int kp_cq_apply_write(kp_conn *conn, const kp_design *d, const kp_dataset *before, const kp_dataset *after,
                      const void *request, const kp_change *changes, size_t change_count,
                      kp_write_sent *out, kp_error *err);
/* emit.c */
int kp_cq_emit(const kp_design *d, const char *out_dir, const kp_emit_options *options, kp_error *err);

#endif
