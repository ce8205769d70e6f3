/*
 * seed.h — writing the sample data into a live target in a design's layout,
 * resumably, and proving nothing was lost (`keyplan seed`).
 *
 * Steps of kp_seed_run:
 *   1. pre-scan: every record of every entity is transformed once, before anything
 *      is written. Items are counted per container (items, bytes, write units) and
 *      kept for step 4 while their bytes fit KP_SEED_KEPT_BYTES (the records after
 *      that are transformed again in step 4); a record the design cannot hold
 *      (transform's KP_ERR_DATA, e.g. an item above the size limit) stops the run
 *      here with DIR/<Entity>.ndjson:LINE, so a target is never left half-seeded by
 *      bad data. A dry run keeps nothing, stops after this step and prints what it
 *      would create and write; with export_items it also writes every item there,
 *      one JSON line each, in the order seeding sends them.
 *   2. connect and inspect. The target's marker decides (see "The marker"):
 *        no containers                      -> create them, seed from the start;
 *        marker with the same model hash, data hash, scale and design
 *              status "seeding"              -> resume after the checkpoint;
 *              status "complete"             -> nothing to write (read back only);
 *        anything else (another model or data, "writes-in-progress", containers
 *        without a marker that are not empty or that keyplan did not create)
 *                                            -> refused (KP_ERR_USAGE, exit 2) without
 *                                               force; with force: drop, say so, start over.
 *   3. apply_schema (fresh targets only), then write the marker (status "seeding")
 *      before the first item.
 *   4. records in a fixed order — entities in model order, each entity's records in
 *      file order — take their items from step 1 (or are transformed again: the
 *      same items, transform being a function of design, data and record), packed
 *      into batches of `batch_size` and submitted; poll drives them; acks feed the
 *      checkpoint.
 *   5. when everything is acknowledged: marker status "complete" with totals, then
 *      read_back; per container, the items read back must equal the items transform
 *      made, and the checksum must equal the XOR of backend->item_checksum over
 *      them (when the backend has item_checksum), else KP_ERR_CHECK naming the
 *      container and both numbers.
 *
 * The marker (a JSON object the backend stores in the target, write_marker/inspect):
 *   {"tool": "keyplan", "schema_version": 1, "model": NAME, "model_hash": HEX16,
 *    "data_hash": HEX16, "scale": F, "backend": "dynamodb", "design": CANDIDATE,
 *    "status": "seeding" | "complete" | "writes-in-progress",
 *    "acknowledged": {ENTITY: N, ...}, "records": {ENTITY: TOTAL, ...},
 *    "items": {CONTAINER: N, ...}, "updated_at": ISO-8601}
 *   "items" is present once complete; verify --writes sets "writes-in-progress" while
 *   its changes are applied and back to "complete" after it undid them.
 *
 * The data hash: 64-bit FNV-1a over, for each entity in model order, the entity's
 * name and a newline, then each live record as compact canonical JSON (the dataset's
 * normal form: declared attribute order, exact number text) and a newline; written
 * as 16 lower-case hex digits. It ignores blank lines and whitespace in the files but
 * not record order, because the checkpoint counts records in file order.
 *
 * The checkpoint. acknowledged[E] = N means: records 0..N-1 of entity E (file order)
 * have had every item acknowledged by the server. Items carry their record's sequence
 * number in kp_item.tag; acks may arrive in any order, so the pipeline keeps the
 * records that are in flight in a FIFO window (at most `window` batches of items)
 * with a count of outstanding items each, and advances the watermark over the
 * longest fully acknowledged prefix. The marker is rewritten when the watermark
 * moved and `checkpoint_seconds` have passed since the last rewrite, when the run
 * stops on an error or an interruption (after draining what is in flight), and at
 * the end. A rerun skips records below the watermark and replays the rest: items
 * are puts keyed by their primary key, so replaying a record whose items were
 * already written rewrites the same items and never duplicates them. A rerun first
 * re-checks the checkpoint against the server (read_back counts per container against
 * the items of the records below the watermark) and replays from the start when the
 * target holds fewer; and when the final read-back of a resumed or complete target
 * finds fewer items than transform made, it replays every record once and reads back
 * again (a server that lost acknowledged writes). docs/reliability.md has the rest.
 * Invariant: a record is counted in the watermark only after all of its items and
 * all of the items of every record before it are acknowledged.
 *
 * Contracts with the backend (backend.h, "added for migrations/"): submit keeps what
 * it needs of the batch (the pipeline clears the list after it returns) and acks
 * each item exactly once (ok or given up), with its tag; poll returns how many items
 * are still in flight; inspect/read_back leave the marker out.
 *
 * Shards (`seed --shard I/N`): N processes, on one machine or many, each given the same
 * model and data, split one seed deterministically — shard I writes the records k (file
 * order, per entity) with k mod N = I-1, and every shard pre-scans the whole data set, so
 * each knows the totals. One marker protocol:
 *   - shard 1 sets the target up: it decides on the seed marker as above (a seed marker
 *     "seeding" with another shard count is refused without --force, which only shard 1
 *     takes), applies the schema and writes the seed marker (status "seeding", "shards": N);
 *   - shards 2..N wait (shard_wait_seconds) until the seed marker is theirs and names N
 *     shards; they never create, drop or force anything;
 *   - each shard keeps its checkpoint in a marker of its own beside the seed marker
 *     ("shard": "I/N", backend read_marker/write_marker): acknowledged[E] = W means every
 *     record of E before W (file order) that is the shard's own had its items
 *     acknowledged; a rerun of the same shard resumes from it (and re-checks it against
 *     the server as above), and the marker says "complete" when the shard's part is;
 *   - a shard that completes reads every shard marker: when all N say complete, it reads
 *     the whole target back against the whole data set (replaying every record once if the
 *     target holds fewer items) and writes the seed marker "complete"; otherwise it stops
 *     with its part done (exit 0, shards_complete says how many are), and the last shard to
 *     finish does it. Two shards finishing together may both read back: each writes its
 *     marker before reading the others', so at least one sees all complete.
 *   A seed marker "complete" means the same whoever wrote it; verify and teardown know
 *   nothing of shards.
 */
#ifndef KP_SEED_H
#define KP_SEED_H

#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <cjson/cJSON.h>

#include "backends/backend.h"
#include "core/data.h"
#include "core/error.h"
#include "core/model.h"

#define KP_MARKER_SCHEMA_VERSION 1

/* Requests in flight when seeding opens its own connection and neither the target
 * (kp_target.concurrency 0) nor the database (kp_limits.seed_in_flight 0) says. Measured
 * on dynalite (bench/README.md, "DynamoDB seeding"): 8 beats the client's general default
 * of 4 when the machine is busy, as the server never waits for the client to be
 * scheduled; against AWS more requests in flight are simply more throughput. */
#define KP_SEED_DEFAULT_IN_FLIGHT 8

/* The pre-scan keeps the items it made for the writes while their bytes (kp_item.bytes,
 * as the database counts them) add up to at most this: a record is transformed once
 * instead of twice (bench/README.md, "Cassandra seeding", round 3). The trees take about
 * four times their bytes (78 MB for Cassandra's 18.6 MB of rows), so about 70 MB at most;
 * a larger data set transforms the records after that again. */
#define KP_SEED_KEPT_BYTES (16u << 20)

typedef struct kp_seed_options {
    const kp_model *model;
    const kp_dataset *data;
    const char *data_dir;           /* for file:line in messages (DIR/<Entity>.ndjson); may be NULL */
    const kp_design *design;        /* a candidate from backend->propose */
    const kp_backend *backend;      /* NULL: design->backend */
    const kp_target *target;        /* connect to it (ignored when conn is given) */
    kp_conn *conn;                  /* an open connection to use (not closed); NULL: connect */
    int force;                      /* drop a mismatching or foreign target and start over */
    int dry_run;                    /* pre-scan and report only: no connection, nothing written */
    int batch_size;                 /* items per submit; 0: limits->max_batch_write, else 25 */
    int window;                     /* batches submitted and not yet acknowledged, at most; 0: twice the
                                       requests in flight, so the next requests wait in the client while
                                       those on the wire are answered */
    size_t kept_bytes;              /* the pre-scan's items kept for the writes; 0: KP_SEED_KEPT_BYTES */
    double checkpoint_seconds;      /* marker rewrite interval; 0: 5 s; < 0: at every advance */
    FILE *progress;                 /* progress bar (when a TTY) and the final summary line; NULL: silent */
    FILE *export_items;             /* dry run only: every item transform makes, as NDJSON lines
                                       {"table": PREFIX+CONTAINER, "item": BODY} (BODY: the backend's
                                       item JSON, DynamoDB attribute values), in seeding order; NULL: none */
    const char *export_dir;         /* dry run only: write the database's bulk-load files (backend
                                       export_format) into this folder, marker included; NULL: none */
    volatile sig_atomic_t *interrupted; /* set (e.g. by SIGINT) to stop cleanly; may be NULL */
    int shard_index, shard_count;   /* seed --shard I/N: this process writes records k with k mod N = I-1
                                       (see "Shards"); 0: not sharded */
    double shard_wait_seconds;      /* shards 2..N: how long to wait for shard 1 to set the target up;
                                       0: 600 s */
} kp_seed_options;

typedef enum kp_seed_action {
    KP_SEED_FRESH,          /* created the containers and seeded from the start */
    KP_SEED_RESUMED,        /* continued after an earlier run's checkpoint */
    KP_SEED_ALREADY_DONE,   /* the marker said complete; only read back */
    KP_SEED_REPLACED,       /* --force dropped what was there, then seeded from the start */
    KP_SEED_DRY_RUN,        /* nothing touched */
    KP_SEED_EXPORTED        /* nothing touched; the bulk-load files written (export_dir) */
} kp_seed_action;

typedef struct kp_seed_container {
    char *name;                     /* without the prefix */
    const char *kind;               /* "table", "collection" (NULL when the design does not list it) */
    long items;                     /* items transform makes for the whole dataset */
    uint64_t bytes;                 /* their size as the database counts it */
    uint64_t checksum;              /* XOR of backend->item_checksum(body) (0 without it) */
    double write_units;             /* item_write_units summed (0 without units) */
    long resumed;                   /* items of records an earlier run had acknowledged (not resent) */
    long sent;                      /* items submitted by this run */
    long acknowledged;              /* items this run's acks confirmed */
    long read_back;                 /* items the target holds after the run (-1: not read) */
    uint64_t read_back_checksum;    /* what read_back reported */
} kp_seed_container;

typedef struct kp_seed_report {
    kp_seed_action action;
    const char *backend;            /* backend name */
    const char *design;             /* candidate name */
    char model_hash[17];
    char data_hash[17];
    long records;                   /* records in the dataset */
    long records_skipped;           /* below an earlier run's checkpoint */
    long records_read;              /* transformed and submitted by this run */
    long items;                     /* transform's items, whole dataset */
    long items_resumed;             /* items of the skipped records (acknowledged by earlier runs) */
    long items_sent, items_acknowledged, items_failed;
    long items_read_back;           /* -1: not read back */
    long batches;                   /* submits by this run (dry run: the batches it would send) */
    double write_units;             /* dry run estimate (0 without units) */
    const char *write_unit;         /* limits->write_unit when the backend has item_write_units, or NULL */
    double seconds;
    /* where the seconds went: data hash and pre-scan; connect, inspect, CreateTable and
     * its wait, the first marker; the writes until the last ack and the final marker;
     * the read-back */
    double prepare_seconds, setup_seconds, write_seconds, read_back_seconds;
    int is_complete;                /* every record acknowledged and read back equal */
    int shard_index, shard_count;   /* as in the options (0: not sharded) */
    int shards_complete;            /* shards whose marker said complete when this one finished (0: not known) */
    char note[512];                 /* "dropped ... (--force)", "resumed after N records", ... */
    kp_seed_container *containers;  /* the design's containers first, in design order */
    size_t container_count;
} kp_seed_report;

/* Seeds a target. Returns 0 when everything is acknowledged and read back equal;
 * -1 with err otherwise: KP_ERR_DATA (a record the design cannot hold, with file and
 * line), KP_ERR_USAGE (refused target), KP_ERR_TARGET (server trouble, an item the
 * server gave up on, an interruption: the marker holds the checkpoint; rerun the same
 * command to resume), KP_ERR_CHECK (read back differs). `out` is filled in every case
 * as far as the run got; free it with kp_seed_report_free. */
int kp_seed_run(const kp_seed_options *options, kp_seed_report *out, kp_error *err);
void kp_seed_report_free(kp_seed_report *report);

/* The report as text (a table per container and the summary) and as the JSON of
 * docs/output.md "seed" (a new tree the caller frees). */
void kp_seed_report_print(FILE *out, const kp_seed_report *report);
cJSON *kp_seed_report_to_json(const kp_seed_report *report);
const char *kp_seed_action_name(kp_seed_action action);

/* ---- the marker, shared with verify and teardown ------------------------------------ */

/* The data hash defined above, as 16 hex digits into out[17]. 0, or -1 when out of memory. */
int kp_seed_data_hash(const kp_dataset *data, char out[17], kp_error *err);

/* The marker seeding writes (status "seeding", "complete", ...): acknowledged and total
 * records per entity (model order), and, when complete, the items per container.
 * `keyplan migrate` leaves the one a complete seed of the new model's data would. */
cJSON *kp_seed_marker_new(const kp_model *model, const kp_design *design, const char *backend, const char *data_hash,
                          const long *acknowledged, const long *totals, const kp_seed_container *containers,
                          size_t container_count, const char *status);

/* Does the marker describe this model, data and design? Returns 1 when it does; 0
 * when it does not, with a sentence saying what differs in why (empty for markers
 * keyplan did not write). data_hash may be NULL (not compared). */
int kp_seed_marker_matches(const cJSON *marker, const kp_model *model, const char *data_hash, const kp_design *design,
                           char *why, size_t why_size);

/* Writes a copy of the marker with "status" (and "updated_at") changed. */
int kp_seed_marker_set_status(const kp_backend *backend, kp_conn *conn, const kp_design *design, const cJSON *marker,
                              const char *status, kp_error *err);

/* Finds which candidate design a target holds: inspects each design of the list and
 * returns the one whose marker names it (*state filled, the caller frees
 * state->marker). Returns 0 with *out NULL when no candidate has a marker (then
 * *state describes the first candidate, e.g. is_foreign). */
int kp_seed_locate(const kp_backend *backend, kp_conn *conn, const kp_design_list *designs, const kp_design **out,
                   kp_target_state *state, kp_error *err);

#endif
