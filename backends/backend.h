/*
 * backend.h — the one interface every database implements, and the neutral
 * description of a design that advisors and reports read.
 *
 * A backend is a table of function pointers (kp_backend). Design time needs no
 * server: propose turns the model into one or more candidate designs, each with a
 * neutral description (containers, indexes, a plan per access pattern, a write plan
 * per write, the decisions and why) plus the backend's private layout; emit writes
 * what a team applies; transform turns a neutral record into the items it becomes.
 * Live: connect, inspect, apply_schema, submit/poll (seeding, asynchronous), execute
 * (one access pattern, reassembled into the declared response), apply_write,
 * read_back, drop.
 *
 * Invariants:
 *  - code outside backends/<db>/ knows a database only through this header; facts
 *    such as size limits are data (kp_limits), never an `if (db == ...)`;
 *  - every number a plan claims (requests, sequential steps, items, bytes) is what execute
 *    measures when the data matches the model's expectations, and no page exceeds the
 *    plan's bounds (requests_max, items_max, bytes_max): verify fails it otherwise.
 *    docs/adding-a-database.md says what a new backend writes;
 *  - execute may run at the same time on different connections (verify reads with
 *    requests in flight, one thread per connection; connect is called on one thread):
 *    it touches nothing shared but the design, read-only.
 */
#ifndef KP_BACKEND_H
#define KP_BACKEND_H

#include <stddef.h>
#include <stdint.h>
#include <cjson/cJSON.h>

#include "core/arena.h"
#include "core/data.h"
#include "core/error.h"
#include "core/model.h"
#include "core/mutate.h"
#include "core/params.h"

typedef struct kp_backend kp_backend;
typedef struct kp_design kp_design;
typedef struct kp_conn kp_conn;
typedef struct kp_exporter kp_exporter;   /* a backend's bulk-load file writer (seed --export) */

/* ---- facts about a database, as data --------------------------------------------- */

typedef struct kp_limits {
    double max_item_bytes;           /* DynamoDB 400 KB item, MongoDB 16 MB document, Cassandra mutation */
    double max_collection_bytes;     /* DynamoDB 10 GB item collection (with an LSI); Cassandra ~100 MB partition */
    double max_partition_rows;       /* Cassandra ~100,000 rows; 0 = no such limit */
    double partition_read_per_s;     /* DynamoDB 3,000 RCU per partition; 0 = not modelled */
    double partition_write_per_s;    /* DynamoDB 1,000 WCU per partition */
    double page_bytes;               /* a Query/find page: DynamoDB 1 MB */
    int max_batch_write;             /* items per batch write (DynamoDB 25) */
    int max_batch_get;               /* keys per batch get (DynamoDB 100) */
    int seed_in_flight;              /* requests in flight when seeding opens its own connection (Cassandra 128);
                                        0: KP_SEED_DEFAULT_IN_FLIGHT (migrations/seed.h) */
    int max_secondary_indexes;       /* GSIs per table (20), indexes per collection (64) */
    int max_local_indexes;           /* LSIs per table (5) */
    const char *read_unit;           /* "RCU" or NULL when reads are not priced in units */
    const char *write_unit;          /* "WCU" or NULL */
    const struct kp_pricing *pricing;/* the managed service a design of this database is priced as (NULL: none) */
    int routes_by_partition_key;     /* one key's reads and writes go to one partition whatever the cluster's
                                        size (DynamoDB, Cassandra); 0 for MongoDB's unsharded collections,
                                        where a one-key load is an index read, not a hot spot */
} kp_limits;

/* ---- list prices, as data with their date ------------------------------------------
 * A design is priced as the managed service that runs it: DynamoDB itself, Amazon
 * Keyspaces for Cassandra, MongoDB Atlas for MongoDB. The tables are small, dated and
 * overridable (compare --region, --capacity, --price-*); the first region is the default. */

typedef struct kp_region_prices {
    const char *region;              /* "us-east-1" */
    double per_million_reads;        /* on-demand: a million read (request) units, USD */
    double per_million_writes;       /* on-demand: a million write (request) units */
    double per_read_unit_hour;       /* provisioned: one read capacity unit for an hour */
    double per_write_unit_hour;      /* provisioned: one write capacity unit for an hour */
    double per_gb_month;             /* storage, a GiB for a month */
} kp_region_prices;

typedef struct kp_tier_price {
    const char *name;                /* "M30" */
    double ram_gb, disk_gb;          /* per node: memory, and the storage the tier includes */
    double usd_per_hour;             /* a three-node replica set (a shard) for an hour */
} kp_tier_price;

typedef struct kp_pricing {
    const char *service;             /* "DynamoDB", "Amazon Keyspaces", "MongoDB Atlas" */
    const char *as_of;               /* when the figures were published: "2024-11" */
    const char *source;              /* where to check them */
    int units_are_neutral;           /* the service bills the neutral I/O units (4 KB read, 1 KB write), not the plan's own */
    const kp_region_prices *regions; /* unit-priced services */
    size_t region_count;
    const kp_tier_price *tiers;      /* cluster-priced services, smallest first (region: tier_region) */
    size_t tier_count;
    const char *tier_region;
} kp_pricing;

/* ---- the neutral description of a design -------------------------------------------- */

typedef enum kp_key_role {
    KP_KEY_PARTITION,   /* DynamoDB partition key, Cassandra partition key, MongoDB shard key */
    KP_KEY_SORT,        /* DynamoDB sort key, Cassandra clustering column */
    KP_KEY_STATIC,      /* Cassandra static column */
    KP_KEY_FIELD        /* a field of a MongoDB index */
} kp_key_role;

typedef struct kp_key_part {
    const char *name;           /* PK, SK, GSI1PK, workspace_id, workspaceId */
    kp_key_role role;
    int is_desc;                /* descending clustering / index order */
    const char *format;         /* how values are built: "WS#<Workspace.id>" ("" when the attribute itself) */
} kp_key_part;

typedef struct kp_index_desc {
    const char *name;           /* GSI1, userId_1_placedAt_-1 */
    const char *kind;           /* "gsi", "lsi", "index", "unique index", "secondary index" */
    kp_key_part *keys;
    size_t key_count;
    const char *projection;     /* "ALL", "KEYS_ONLY", ... or NULL */
    int is_sparse;              /* only some items carry its keys */
    const char **caused_by;     /* pattern / write names that need it */
    size_t caused_by_count;
} kp_index_desc;

typedef struct kp_container {
    const char *name;           /* table / collection (without the --prefix) */
    const char *kind;           /* "table", "collection" */
    kp_key_part *keys;
    size_t key_count;
    kp_index_desc *indexes;
    size_t index_count;
    const kp_entity **entities; /* the entities whose records live here (copies included) */
    size_t entity_count;
    double items;               /* estimated stored items / documents / rows */
    double bytes;               /* estimated stored bytes, duplication included */
    const char *why;
    /* added for advisors/risk.c (0: not estimated; the size checks then skip it) */
    double max_item_bytes;      /* the largest item / document at the model's maximum fan-outs */
    double max_partition_bytes; /* the largest partition / item collection at the maximum fan-outs */
    double max_partition_items; /* items / rows in that partition */
    int is_partition_bounded;   /* limits->max_collection_bytes applies here (DynamoDB: the table has an LSI) */
} kp_container;

typedef struct kp_operation {
    const char *op;             /* "GetItem", "Query", "BatchGetItem", "find", "SELECT", ... */
    const char *container;
    const char *index;          /* NULL: the base table / collection */
    const char *condition;      /* the key condition in the database's own terms */
    cJSON *request;             /* a ready-to-run request (owned by the design), or NULL */
    int is_scan;                /* Scan, collection scan, ALLOW FILTERING */
    int waits_for_previous;     /* needs the previous operation's answer (a new round trip) */
    int step;                   /* its round trip, 1-based: operations of one step run in parallel */
    double requests;            /* requests it sends (shards of a fan-out, expected pages) */
    double items;               /* estimated items / documents / rows read */
    double bytes;               /* estimated bytes read */
    double read_units;          /* DynamoDB RCU (eventually consistent); 0 elsewhere */
    /* upper bounds for one page (the model's maxima: $expect max, fan-out max, every shard
     * read); 0 means "the same as the expected figure above" (the figure is exact) */
    double requests_max;
    double items_max;
    double bytes_max;
    int more_steps_max;         /* a walk that reads on only while a page is not full (Cassandra's range
                                   buckets): up to this many more round trips, each a request of its own */
    const char *bound_cause;    /* why it reads more than a page where the model leaves the design no better
                                   layout, and the model change that would (risk.c's page-bound warning
                                   names it); NULL: none */
    int is_tie_read;            /* reads what ties with a page's last on the order's first part: at the
                                   model's maxima every item may tie (risk.c says so) */
    const char *why;
} kp_operation;

typedef struct kp_plan {
    const kp_pattern *pattern;
    kp_operation *ops;          /* in order */
    size_t op_count;
    double requests;            /* every request sent, each shard and page counted */
    int is_requests_exact;      /* requests does not depend on the data (else an estimate from averages) */
    int sequential_steps;       /* round trips: the deepest step of its operations */
    int sequential_steps_max;   /* the most round trips a page takes: sequential_steps, and the round trips
                                   a walk may add (kp_operation.more_steps_max) */
    double items;               /* items / documents / rows read */
    double bytes;
    double read_units;
    /* what one page may cost at most (sums of the operations' bounds, never below the
     * expected figures above): verify fails a pattern whose measured requests, items read
     * or bytes read exceed these */
    double requests_max;
    double items_max;
    double bytes_max;
    int is_scan;
    const char *why;
    int shards;                 /* added for advisors/risk.c: the partition key its first step reads is
                                   spread over this many suffixes (write sharding); 0 or 1: none */
} kp_plan;

typedef struct kp_write_touch {
    const char *container;
    const char *what;           /* "Project item", "GSI1 entry", "copy of Workspace.name in Project" */
    double count;               /* per operation */
    double bytes;
    double write_units;         /* DynamoDB WCU; 0 elsewhere */
} kp_write_touch;

/* The part of a write plan's items that goes with the records of one entity the write
 * changes: `count` items for the `records` records of `per` it expects to change (a record's
 * item and its index entries, a row in each table holding it, ...). verify evaluates the
 * claim on an operation's own records with it; `per` NULL: a fixed `count` per operation
 * (records the neutral data does not change, such as the documents that keep extended
 * references). */
typedef struct kp_write_share {
    const kp_entity *per;
    const kp_rel *via;          /* per NULL: the records that hold copies of the changed records of
                                   via->target over via (a backend's extended references), `records`
                                   of them expected; NULL: a fixed count */
    const kp_attr *elements;    /* with per: an array of per whose elements each have their items
                                   (Cassandra's rows keyed by an element) */
    double count;
    double requests;            /* the write requests that go with them (reads not counted) */
    double once;                /* write requests sent once when any of them changed (a command
                                   per step and collection, whatever it matches): the least the
                                   share claims, `requests` where they come to more */
    double records;             /* each effect's records once */
    double element_count;       /* with elements: the elements expected in those records */
    const void *last;           /* the effect counted last (building only) */
} kp_write_share;

/* One operation's own records, to evaluate a write plan's claim on: changed[e] records of
 * the model's entity e changed (what the neutral data's change log shows); holders(ctx, via):
 * the records that hold copies of the changed records of via->target over via; elements(ctx,
 * array): the elements the changed records' array has, before or after (a callback NULL: as
 * the plan expects). */
typedef struct kp_write_measure {
    const double *changed;
    double (*holders)(void *ctx, const kp_rel *via);
    double (*elements)(void *ctx, const kp_attr *array);
    void *ctx;
    int without_transaction;    /* an atomic write the server took without its transaction
                                   (dynalite has none): its items went one by one */
} kp_write_measure;

typedef struct kp_write_plan {
    const kp_write *write;
    kp_write_touch *touches;
    size_t touch_count;
    kp_write_share *shares;     /* what `items` is made of; their expected sum is `items` */
    size_t share_count;
    double requests;            /* requests per operation, the reads before writing included */
    double read_requests;       /* of them, the reads (verify applies the changes: it sends none) */
    double items_per_request;   /* > 0: the items go in ceil(items / this) requests (a batch, a
                                   transaction; INFINITY: always one), not the shares' requests */
    double items;               /* items / documents / rows written per operation (amplification) */
    double write_units;
    const char *mechanism;      /* "TransactWriteItems", "BatchWriteItem", "logged batch", ... */
    const char *why;
    const char **reads;         /* containers the write reads before writing (in the design's arena) */
    size_t read_count;
} kp_write_plan;

/* What one apply_write sent: verify holds it against the write plan's claim. */
typedef struct kp_write_sent {
    long items;                 /* items / documents / rows written or deleted (the plan's `items`) */
    long requests;              /* requests sent */
    int is_atomic;              /* the steps went in as one atomic request */
} kp_write_sent;

typedef struct kp_decision {
    const char *subject;        /* "Workspace.projects", "GSI1", "Project key" */
    const char *choice;         /* "item collection under PK=WS#<id>" */
    const char *why;            /* a sentence a reviewer reads */
    const kp_pattern **patterns;/* the patterns that caused it */
    size_t pattern_count;
    const kp_hint *hint;        /* non-NULL when a hint forced it */
} kp_decision;

struct kp_design {
    const kp_backend *backend;
    const kp_model *model;
    const kp_mix *mix;          /* the rates it was designed for (NULL: declared rates) */
    const char *candidate;      /* "single-table", "table-per-entity", "embed", "reference", ... */
    const char *summary;        /* one line */
    const char *diagram;        /* the layout drawn as text (item collections, documents, tables), or NULL */
    int is_diagram_of_containers; /* the text drawing only redraws the containers (their keys and columns),
                                     so a page that draws the containers itself leaves it out */
    char fingerprint[17];       /* hex hash of the physical layout (keys, indexes, key formats): a seeded
                                   target whose marker names another fingerprint holds another layout */
    kp_container *containers;
    size_t container_count;
    kp_plan *plans;             /* one per access pattern, in model order */
    size_t plan_count;
    kp_write_plan *write_plans; /* one per write, in model order */
    size_t write_plan_count;
    kp_decision *decisions;
    size_t decision_count;
    const char **defects;       /* scans, quota overruns, size-limit breaches: each a sentence */
    const kp_pattern **defect_patterns; /* the pattern each is about, or NULL (same count) */
    size_t defect_count;
    const char **notes;         /* things a reviewer should know that are not defects */
    size_t note_count;
    kp_arena arena;             /* everything above lives here */
    void *layout;               /* the backend's private layout */
    void (*free_layout)(void *layout);
};

typedef struct kp_design_list {
    kp_design **items;          /* the first is the recommended candidate */
    size_t count;
} kp_design_list;

void kp_design_free(kp_design *design);
void kp_design_list_free(kp_design_list *list);

/* Fills `read` (names -> a non-NULL marker, in `arena`) with the containers something reads:
 * those the plans' operations name and those the writes read before writing. 0, or -1 when
 * out of memory. */
int kp_design_containers_read(const kp_design *design, kp_arena *arena, kp_strmap *read);

/* Helpers backends use to fill a design (all allocate from design->arena). */
kp_design *kp_design_new(const kp_backend *backend, const kp_model *model, const kp_mix *mix, const char *candidate);
kp_container *kp_design_add_container(kp_design *design, const char *name, const char *kind);
kp_decision *kp_design_decide(kp_design *design, const char *subject, const char *choice, const char *why);
/* Drops the decisions about `subject` (a choice a later step of the proposal undid). */
void kp_design_undecide(kp_design *design, const char *subject);
/* Starts pricing a write plan: everything but its write cleared. */
void kp_write_plan_begin(kp_write_plan *wp);
/* One more touch of a write plan (zeroed; wp->touches grows, as many as the write makes). */
kp_write_touch *kp_write_plan_touch(kp_design *design, kp_write_plan *wp);
/* Adds `items` written for an effect of the write (kp_write_effects) to wp->items and to
 * the share of the entity whose records the effect reaches. */
struct kp_write_effect;
void kp_write_plan_items(kp_design *design, kp_write_plan *wp, const struct kp_write_effect *fx, double items);
/* The same for items that go with each element of the effect records' `array`, `elements`
 * of them expected. */
void kp_write_plan_element_items(kp_design *design, kp_write_plan *wp, const struct kp_write_effect *fx,
                                 const kp_attr *array, double items, double elements);
/* Adds `requests` write requests for an effect (fx NULL: per operation, whatever it changes);
 * once: requests sent when any of its records changed, however many. */
void kp_write_plan_requests(kp_design *design, kp_write_plan *wp, const struct kp_write_effect *fx, double requests);
void kp_write_plan_requests_once(kp_design *design, kp_write_plan *wp, const struct kp_write_effect *fx, double requests);
/* The items the plan claims for one operation that changed the records `m` describes. */
double kp_write_plan_items_for(const kp_write_plan *wp, const kp_write_measure *m);
/* The write requests it claims for them, the reads before writing not counted. */
double kp_write_plan_requests_for(const kp_write_plan *wp, const kp_write_measure *m);
/* Notes that the write reads `container` before it writes (kp_write_plan.reads). */
void kp_write_plan_read(kp_design *design, kp_write_plan *wp, const char *container);
void kp_decision_add_pattern(kp_design *design, kp_decision *decision, const kp_pattern *pattern);
/* A defect of the design: a sentence, and the access pattern it is about (NULL: the
 * design as a whole), which the advisors read instead of searching the sentence. */
int kp_design_defect(kp_design *design, const kp_pattern *about, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
int kp_design_note(kp_design *design, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
const char *kp_design_printf(kp_design *design, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
kp_operation *kp_plan_add_op(kp_design *design, kp_plan *plan, const char *op, const char *container);
/* Sums a plan's operations into its totals (requests, steps, items, bytes, units, scan). */
void kp_plan_total(kp_plan *plan);


/* ---- live: targets, items, results ---------------------------------------------------- */

typedef struct kp_target {
    const char *database;       /* "dynamodb", ... */
    const char *endpoint;       /* URL / URI / host:port; NULL: the conventional environment */
    const char *prefix;         /* --prefix; "" for none */
    int is_insecure;            /* --insecure: skip TLS verification (warned) */
    int concurrency;            /* requests in flight (0: the backend's default) */
} kp_target;

/* One item / document / row a record becomes. */
typedef struct kp_item {
    const char *container;      /* without the prefix */
    const kp_entity *entity;    /* the record's entity */
    cJSON *body;                /* the database's own JSON (DynamoDB Item map, document, row values) */
    char *id;                   /* stable identity: container + primary key, for checkpoints and dedupe */
    size_t bytes;               /* size as the database counts it */
    /* added for migrations/seed.c: the caller's mark, passed back unchanged with the
     * item's ack (seeding stores the record's sequence number); transform leaves it 0 */
    uint64_t tag;
} kp_item;

typedef struct kp_item_list {
    kp_item *items;
    size_t count, cap;
} kp_item_list;

void kp_item_list_clear(kp_item_list *list);   /* frees the items, keeps the list */
void kp_item_list_free(kp_item_list *list);
kp_item *kp_item_list_push(kp_item_list *list);

/* Called once per submitted item when the server acknowledged it (ok) or gave up on
 * it after retries (ok == 0, err says why). Acks may arrive out of order. */
typedef void (*kp_ack_fn)(void *ctx, const kp_item *item, int ok, const kp_error *err);

/* What a target holds for a design. */
typedef struct kp_target_state {
    int exists;                 /* the containers exist */
    int is_empty;
    cJSON *marker;              /* keyplan's seed marker (owned), NULL when absent */
    int is_foreign;             /* containers exist but keyplan did not create them */
} kp_target_state;

/* One access pattern run against a live target. */
typedef struct kp_result {
    cJSON *response;            /* reassembled into the declared shape (owned) */
    char *next_page;            /* the backend's continuation (malloc'd), NULL on the last page */
    int requests;               /* every request sent */
    int sequential_steps;       /* round trips */
    int is_cut_short;           /* a read found nothing to follow on, or a read the plan expects
                                   only when the data asks for it (Cassandra's tie read) was not
                                   needed: fewer round trips than the plan's deepest chain */
    long items_returned;
    long items_read;            /* items / documents / rows the server read for this page (DynamoDB
                                   ScannedCount and the items a Get returned; the documents a find
                                   returned; the rows a node sent, a COUNT's rows counted); -1 when
                                   the backend does not measure it */
    long bytes_read;            /* bytes of the items / documents / rows the server sent, as the
                                   database sizes them (DynamoDB item size, BSON size, CQL row
                                   values); -1 when the backend does not measure it yet */
} kp_result;

void kp_result_free(kp_result *result);

/* Per-container counts and content checksums read back from a target. */
typedef struct kp_readback_entry {
    char *container;
    long items;
    uint64_t checksum;          /* order-independent: XOR/sum of item hashes over canonical item JSON */
} kp_readback_entry;

typedef struct kp_readback {
    kp_readback_entry *entries;
    size_t count;
} kp_readback;

void kp_readback_free(kp_readback *readback);

/* Called by read_records with each record read back (it takes the object). */
typedef int (*kp_read_record_fn)(void *ctx, const kp_entity *entity, cJSON *object, kp_error *err);

/* Called by read_items with each item a target holds. */
typedef int (*kp_read_item_fn)(void *ctx, const char *container, const char *id, uint64_t checksum, kp_error *err);

/* Order-independent checksum of one item body (canonical JSON, keys sorted). */
uint64_t kp_item_hash(const cJSON *body);
/* kp_item_hash of an object as it would be with its top-level members for which
 * drop(member, ctx) says yes deleted (without copying it). */
uint64_t kp_item_hash_without(const cJSON *body, int (*drop)(const cJSON *member, const void *ctx), const void *ctx);

typedef struct kp_propose_options {
    const kp_mix *mix;          /* NULL: the model's default mix */
    int all_candidates;         /* also the alternatives (compare): the recommended design first, then
                                   each alternative with its own `candidate` name */
} kp_propose_options;

/* What emit is given besides the design. */
typedef struct kp_emit_options {
    const char *prefix;         /* --prefix: prepended to every container name ("" for none) */
    void (*on_file)(void *ctx, const char *path);   /* told of each file written; may be NULL */
    void *ctx;
} kp_emit_options;

struct kp_backend {
    const char *name;                 /* "dynamodb", "mongodb", "cassandra" */
    const char *title;                /* "DynamoDB" */
    const kp_limits *limits;

    /* design time: no server */
    int (*propose)(const kp_model *, const kp_propose_options *, kp_design_list *out, kp_error *);
    /* Writes the files a team applies into out_dir, which exists and belongs to this
     * database alone (kp_emit_design makes DIR/<name>/); each file atomically, and
     * the same bytes for the same design and options (backends/emit.h). */
    int (*emit)(const kp_design *, const char *out_dir, const kp_emit_options *, kp_error *);
    /* A neutral record (its entity, its canonical JSON) -> the items it becomes, each
     * checked against the size limits (KP_ERR_DATA naming the record when too big).
     * `data` lets a design copy attributes of the records a record references (a parent's
     * static columns, an extended reference); a write's items are found by transforming
     * before and after, so a record whose copies moved is transformed again too. */
    int (*transform)(const kp_design *, const kp_dataset *data, const kp_record *, kp_item_list *out, kp_error *);

    /* live */
    int (*connect)(const kp_target *, kp_conn **out, kp_error *);
    int (*inspect)(kp_conn *, const kp_design *, kp_target_state *out, kp_error *);
    int (*apply_schema)(kp_conn *, const kp_design *, kp_error *);
    int (*drop)(kp_conn *, const kp_design *, kp_error *);
    /* keyplan's marker: the seed marker inspect reports or, when the marker has a "shard"
     * member ("I/N", from `seed --shard`), that shard's own marker beside it (kp_marker_key) */
    int (*write_marker)(kp_conn *, const kp_design *, const cJSON *marker, kp_error *);
    /* The marker of shard "I/N" (NULL: the seed marker, as inspect reports it); *out NULL
     * when there is none. */
    int (*read_marker)(kp_conn *, const kp_design *, const char *shard, cJSON **out, kp_error *);
    int (*submit)(kp_conn *, kp_item_list *batch, kp_ack_fn on_ack, void *ctx, kp_error *);
    int (*poll)(kp_conn *, int timeout_ms, kp_error *);   /* drives in-flight work; returns in-flight count */
    int (*execute)(kp_conn *, const kp_design *, const kp_pattern *, const kp_params *, const char *page,
                   kp_result *out, kp_error *);
    /* Applies one write operation through the design's write plan. `before` is the
     * neutral data before the write, `after` after it (the oracle's view), so a plan can
     * find the items it must touch; *out (zeroed by the backend) says what it sent: the
     * items written and whether the steps went in atomically. `request` NULL: no write of
     * the model but a difference to write as it is, not atomically (verify's undo writes
     * the data after its operations back to the data before them). `changes` (the change
     * log's entries, `change_count` of them) names the records that differ: the backend
     * finds them with kp_changed_records. */
    int (*apply_write)(kp_conn *, const kp_design *, const kp_dataset *before, const kp_dataset *after,
                       const void *request, const kp_change *changes, size_t change_count, kp_write_sent *out,
                       kp_error *);
    int (*read_back)(kp_conn *, const kp_design *, kp_readback *out, kp_error *);
    /* The checksum of one transformed item body that read_back's checksums are built
     * from (XOR over a container's items), so seeding and read-back compare. */
    uint64_t (*item_checksum)(const cJSON *body);
    void (*disconnect)(kp_conn *);

    /* ---- added for migrations/ (seed.c, verify.c); optional: NULL when not provided ----
     *
     * Contracts the pipeline relies on (documented in migrations/seed.h):
     *  - submit keeps what it needs of the batch (copies, or the items themselves by
     *    leaving the list's count at 0); whatever is still in the list when submit
     *    returns belongs to the caller, who clears it; on_ack receives each item (its
     *    id, container and tag intact; body may be NULL) exactly once, from inside
     *    submit or poll;
     *  - inspect and read_back leave keyplan's marker out of exists/is_empty/counts;
     *  - read_back's checksum is compared with the XOR of item_checksum over the items
     *    transform made (not compared when item_checksum is NULL);
     *  - drop removes the design's containers and keyplan's marker, nothing else. */

    /* Write units one item costs (DynamoDB: 1 WCU per started KB, plus one per index
     * that holds it), for `seed --dry-run`. NULL: the database has no write units. */
    double (*item_write_units)(const kp_design *, const kp_item *item);
    /* Deletes items by their primary key (the key is read from each item's body);
     * synchronous; an item already absent is not an error. `verify --writes` uses it to
     * undo the items its writes created. NULL: such undo is impossible (verify says so). */
    int (*delete_items)(kp_conn *, const kp_design *, const kp_item_list *items, kp_error *);

    /* ---- added for issue #8 (hostile input); optional: NULL when not provided ----
     *
     * The largest item, in bytes, the connected server accepts when the server decides
     * it (Cassandra: half its commitlog_segment_size, the largest mutation it takes);
     * *bytes = 0 when it cannot tell. seed calls it after inspect and before anything
     * is dropped, created or written, and refuses every record whose items exceed it
     * (each listed with file:line). NULL: limits->max_item_bytes alone is the limit. */
    int (*server_item_limit)(kp_conn *, double *bytes, kp_error *);

    /* ---- added for issue #16 (seed --export); optional: NULL when not provided ----
     *
     * The files the database's own bulk loader reads, holding what seeding would write:
     * every item, in seeding order, and keyplan's marker as seeding leaves it once
     * complete (so `keyplan verify` accepts a target loaded from them). export_format
     * names the loader ("dynamodb-import", "mongoimport", "dsbulk"); export_open makes
     * `dir` and a writer, export_item adds one item, export_close adds the marker and a
     * load script and README (a limitation of the loader goes in note), or (is_ok 0)
     * removes what it wrote. */
    const char *export_format;
    int (*export_open)(const kp_design *, const char *dir, const char *prefix, kp_exporter **out, kp_error *);
    int (*export_item)(kp_exporter *, const kp_item *item, kp_error *);
    int (*export_close)(kp_exporter *, const cJSON *marker, int is_ok, char *note, size_t note_size, kp_error *);

    /* ---- added for issue #15 (migrate); optional: NULL when not provided ----
     *
     * read_records: every record the design's containers hold on the target, decoded back
     * into neutral objects (the attributes of its entity, canonical values), each passed to
     * on_record, which takes ownership of the object; keyplan's marker is skipped. A record
     * held in several places (Cassandra query tables, a MongoDB subset copy) may be passed
     * once per place: the caller merges them by key. Copies a design keeps of another
     * record's attributes (extended references) are not records and are not passed.
     * migrate_schema: with is_final 0, creates on the target what `to` needs and `from`
     * lacks (containers, indexes, columns), keeping everything `from` has so readers of the
     * old version keep working; sets *emptied when it had to rebuild a container (its items
     * are gone and must all be written again) and says in note what was not online. With
     * is_final 1, removes what only `from` has. Both may be run again after an interruption. */
    int (*read_records)(kp_conn *, const kp_design *, kp_read_record_fn on_record, void *ctx, kp_error *);
    int (*migrate_schema)(kp_conn *, const kp_design *from, const kp_design *to, int is_final, int *emptied,
                          char *note, size_t note_size, kp_error *);

    /* ---- added for issue #13 (strays by key); optional: NULL when not provided ----
     *
     * Every item the design's containers hold on the target, keyplan's marker left out: its
     * container, its identity as transform names it (kp_item.id) and the checksum
     * item_checksum gives its body — what read_back sums, item by item, so verify can name
     * the items of a container whose read-back differs (missing, changed, strays). */
    int (*read_items)(kp_conn *, const kp_design *, kp_read_item_fn fn, void *ctx, kp_error *);
};

/* The design's container of that name (without the prefix), or NULL. */
const kp_container *kp_design_container(const kp_design *design, const char *name);

/* Every item a design makes of a dataset: each record transformed (model order, insertion
 * order within an entity), each item passed with its record's index. The callback may take
 * an item over (move it and zero it); what it leaves is freed. */
typedef int (*kp_each_item_fn)(void *ctx, kp_item *item, long record_index, kp_error *err);
int kp_design_each_item(const kp_backend *backend, const kp_design *design, const kp_dataset *data, kp_each_item_fn fn,
                        void *ctx, kp_error *err);

/* read_back made from read_items: per container (the design's first, in its order, empty
 * ones included), the items and the XOR of their checksums. */
int kp_read_back_from_items(int (*read_items)(kp_conn *, const kp_design *, kp_read_item_fn, void *, kp_error *),
                            kp_conn *conn, const kp_design *design, kp_readback *out, kp_error *err);

/* Appends a sentence to a note ("; " between sentences), unless the note holds it already
 * or is full (migrate_schema's note, migrate's report). */
void kp_note_add(char *note, size_t size, const char *text);

/* Where a backend keeps a marker: `base` (its key for the seed marker: the model's name, a
 * sort key) for the seed marker, "<base>#shard I/N" for shard I of N's own (seed --shard);
 * the shard is `shard` or, when NULL, the marker's "shard" member. Returns buf. */
const char *kp_marker_key(const char *base, const cJSON *marker, const char *shard, char *buf, size_t size);
/* Is `key` (a stored marker's key) a shard marker of `base`? */
int kp_marker_key_is_shard(const char *base, const char *key);

/* ---- the registry: the only place that names every database ------------------------- */

/* NULL-terminated list of the backends built in. */
extern const kp_backend *const kp_backends[];
const kp_backend *kp_backend_find(const char *name);
/* The registered names, comma-separated ("dynamodb, mongodb, cassandra"), for messages and
 * help texts (static storage). */
const char *kp_backend_names(void);
/* Parses --db ("dynamodb", "mongodb,cassandra", "all") into a NULL-terminated list
 * (at most 8). */
int kp_backend_parse_list(const char *text, const kp_backend **out, size_t max, kp_error *err);

#endif
