/*
 * verify.h — proving a seeded target answers every access pattern exactly as the
 * model declares, and costs what the plan claims (`keyplan verify`).
 *
 * Reads: coverage. Each access pattern is checked from anchors — records of its root
 * entity, each giving one parameter set (core/sample.h: root conditions from the anchor,
 * the rest from records reached from it, drawn with a generator seeded with a mix of
 * --seed and the pattern's name, so one pattern's draws do not depend on the others).
 * Every record of the root is an anchor once when there are at most `samples` of them
 * (KP_VERIFY_ANCHORS by default) or with `is_exhaustive`; above that the anchors are
 * stratified: a quarter are the hottest keys the pattern's skew predicts (the first
 * ranks in key order), the rest spread evenly over the key order from a seeded offset.
 * Anchors that give a parameter set already checked are not sent again (a listing
 * without parameters runs once). For each set, the oracle's answer and the backend's are
 * walked page by page to the last page — the oracle with its own token, the backend
 * with its own continuation; tokens are never compared, and members of the response
 * that hold a token are set to null on both sides before comparing — or to
 * `max_pages` pages:
 *   - the two pages' contents must be equal (kp_json_diff below);
 *   - when the oracle has a next page, the backend must have one too;
 *   - when the backend has a continuation but the oracle has no next page, the
 *     backend's next page must be empty (DynamoDB returns a continuation after an
 *     exactly full last page); an empty page with a continuation ends the traversal.
 * Measured per page: requests, sequential steps, items returned and scanned, and the
 * wall time of the execute call (clock_gettime MONOTONIC; "latency" is per page, all
 * its round trips included). The first page of every sample is compared with the
 * plan's claim: sequential_steps exactly, and requests exactly when the plan claims a
 * whole number (a fractional claim is an estimate: reported, not failed). Every page's
 * requests, items read and bytes read (kp_result, as each database counts them) must
 * stay within the plan's bounds for a page (kp_plan requests_max, items_max,
 * bytes_max). A claim that does not hold fails the pattern ("Prove it").
 *
 * In flight (`in_flight`, `--in-flight`, default KP_VERIFY_IN_FLIGHT for the CLI). The
 * samples of a pattern are read in segments of pages (verify_sample.c) by `in_flight`
 * workers, each on a connection of its own, with up to twice as many samples under way;
 * the oracle, the comparison and every measure stay on the calling thread, and the report
 * is the one a run with one request at a time gives (the lowest-numbered sample's
 * difference, the lowest page past a bound), latencies aside: they are measured under that
 * load. The oracle keeps what a sample's pages share (kp_oracle_cache), so walking a
 * listing to its end costs n log n, not n^2 / page. --writes and the containers use the
 * run's connection alone.
 *
 * Containers. After the patterns, every container is read back (backend read_back: its
 * items and an order-independent checksum of their content) and compared with what
 * transform makes of the data: an item changed, deleted or added behind keyplan's back
 * fails the container even where no pattern reads it (a partition no pattern asks for,
 * a column no pattern returns). Skipped with `no_read_back` (each container is scanned).
 * A container that differs is then read item by item (backend read_items) and compared
 * by identity with the items the data makes: missing, strays (items no pattern or design
 * predicts) and changed items are counted and the first few named by their keys.
 *
 * Writes (`writes`). For each write pattern, `write_ops` operations are generated
 * (existing keys for `where`, fresh records for inserts with foreign keys pointing at
 * existing records, fresh values for `set`, 1 for increments), applied to the oracle's
 * data with kp_write_apply and to the target with backend->apply_write, and after each
 * operation every pattern rooted at a changed record (or at the parent it points to)
 * is checked for that record (every page), then every pattern for a few fresh samples
 * (their first KP_VERIFY_WRITES_PAGES pages: a listing without parameters walked to its
 * last page after every write made --writes take minutes per write). Before the
 * first write the marker's status becomes "writes-in-progress"; a verify that finds
 * that status refuses and asks for a re-seed.
 *
 * Undo. After a write pattern's operations, the data is restored with
 * kp_change_log_undo and the backend writes the difference back: apply_write from the
 * changed data (the shadow copy, which took the same operations, a failed one included)
 * to the restored data, over the records the change log names — each of their items
 * that differs put back as it was, those the restored data does not make deleted, in time
 * proportional to what the writes changed. An operation that failed half way is covered:
 * whatever it wrote is among those items. After the last write
 * pattern, read_back must equal the read_back taken before the first write (items and
 * checksum per container); only then does the marker return to "complete".
 * Invariant: --writes leaves the oracle's data exactly as it found it, on success and
 * on failure.
 */
#ifndef KP_VERIFY_H
#define KP_VERIFY_H

#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <cjson/cJSON.h>

#include "backends/backend.h"
#include "core/data.h"
#include "core/error.h"
#include "core/model.h"

/* Identities of missing, stray and changed items a failed container names. */
#define KP_VERIFY_KEYS_SHOWN 5

/* Anchors a pattern is checked from by default: all of them up to this many. */
#define KP_VERIFY_ANCHORS 2000

/* Samples whose pages `keyplan verify` and `keyplan run` read at once by default. */
#define KP_VERIFY_IN_FLIGHT 4

typedef struct kp_verify_options {
    const kp_model *model;
    kp_dataset *data;               /* the oracle's data: --writes changes it and restores it */
    const kp_design *design;        /* the design the target was seeded with (its marker names it) */
    const kp_backend *backend;      /* NULL: design->backend */
    const kp_target *target;        /* connect to it (ignored when conn is given) */
    kp_conn *conn;                  /* an open connection to use (not closed); NULL: connect */
    int samples;                    /* anchors per pattern at most; 0: KP_VERIFY_ANCHORS */
    int is_exhaustive;              /* every anchor of every pattern, whatever their number */
    int no_read_back;               /* skip reading every container back (a scan of each) */
    uint64_t seed;                  /* drives every draw; printed by the CLI */
    int max_pages;                  /* pages walked per anchor; 0: to the last page */
    int in_flight;                  /* samples' pages read at once, each on a connection of its own
                                       to `target` (the run's conn and in_flight - 1 more); 0 or 1:
                                       one at a time (also without a target) */
    int writes;                     /* also replay write patterns, then undo them */
    int write_ops;                  /* operations per write pattern; 0: 3 */
    FILE *progress;                 /* a live line when a TTY, and the final summary line; NULL: silent */
    volatile sig_atomic_t *interrupted; /* set (e.g. by SIGINT) to stop: writes are still undone */
} kp_verify_options;

/* The first difference found for a pattern or a write. */
typedef struct kp_verify_difference {
    int sample;                     /* 1-based sample number; 0 for a targeted check after a write */
    int page;                       /* 1-based page */
    char *params;                   /* the parameters, compact JSON */
    char *path;                     /* "$.projects[3].name" */
    char *expected;                 /* compact JSON, or "(absent)" / a few words */
    char *actual;
    char *message;                  /* one sentence with all of the above */
} kp_verify_difference;

typedef struct kp_verify_pattern {
    const kp_pattern *pattern;
    int is_pass;
    int is_skipped;                 /* nothing to draw parameters from (reason in note) */
    int samples, samples_failed;    /* distinct parameter sets run, and those that differed */
    long anchors;                   /* root records the parameter sets were drawn from */
    long anchors_total;             /* root records there are */
    int is_stratified;              /* more than the cap: the hot keys and an even spread */
    int is_cut;                     /* a walk stopped at max_pages with pages left */
    long pages, requests, items_returned;
    long items_read;                /* items / documents / rows the server read (-1: not measured) */
    long bytes_read;                /* their bytes as the database sizes them (-1: not measured) */
    /* the plan's claim for one page: expected figures and the bounds no page may exceed */
    double claimed_items, claimed_bytes;
    double bound_requests, bound_items, bound_bytes;
    /* the worst page measured (requests, items read, bytes read) */
    long page_requests_max, page_items_max, page_bytes_max;
    int is_bound_exceeded;          /* a page read more than the plan's bound (note says which) */
    double claimed_requests;        /* the plan's, for a first page (-1: no plan) */
    int claimed_steps;
    int claimed_steps_max;      /* the most a page may take (a walk reads on while a page is not full) */
    int is_requests_exact;      /* the claimed requests do not depend on the data */
    int first_requests_min, first_requests_max;
    int first_steps_min, first_steps_max;
    int first_short_uncut;          /* first pages with fewer steps than claimed whose reads did not
                                       run out of records (kp_result.is_cut_short) */
    int is_claim_mismatch;
    double p50_ms, p95_ms, p99_ms;  /* per page */
    double seconds;                 /* time spent executing on the target */
    int has_difference;
    kp_verify_difference difference;
    char note[512];                 /* claims that did not hold, an execute error, why skipped */
} kp_verify_pattern;

typedef struct kp_verify_write {
    const kp_write *write;
    int is_pass;
    int ops;                        /* operations sent to the target */
    int not_generated;              /* operations the generator could not make valid */
    int applied, partial, skipped, refused;   /* the oracle's outcomes */
    int atomic_exercised;           /* operations the backend applied atomically */
    const kp_write_plan *plan;      /* the design's plan of the write (NULL: none); its `items`
                                       is the claim per operation, expected */
    int sent_ops;                   /* applied operations whose items were counted */
    long sent_items_min, sent_items_max, sent_items_sum;   /* items each of them wrote */
    double claimed_sum;             /* the claim evaluated on each of them (kp_write_plan_items_for) */
    long sent_requests_min, sent_requests_max, sent_requests_sum;   /* write requests each of them sent */
    double claimed_requests_sum;    /* kp_write_plan_requests_for on each of them */
    int is_items_mismatch, is_requests_mismatch;
    int reads_checked, reads_failed;
    int has_difference;
    kp_verify_difference difference;
    char note[512];
} kp_verify_write;

/* What a container holds against what the data predicts (the read-back check). */
typedef struct kp_verify_container {
    char *name;                     /* without the prefix */
    long items_expected;            /* the items transform makes of the data */
    uint64_t checksum_expected;     /* the XOR of item_checksum over them */
    long items;                     /* what read_back counted */
    int is_content_checked;         /* the backend gives checksums (item_checksum) */
    int is_match;                   /* same count and, when checked, the same content */
    /* when it does not match, item by item (backend read_items; -1: not available): the
     * items the data makes that the target lacks, the items it holds that neither a
     * pattern nor the design predicts (strays), and items of the same identity whose
     * content differs — with the first KP_VERIFY_KEYS_SHOWN identities of each */
    long missing, strays, changed;
    char *missing_keys[KP_VERIFY_KEYS_SHOWN], *stray_keys[KP_VERIFY_KEYS_SHOWN], *changed_keys[KP_VERIFY_KEYS_SHOWN];
} kp_verify_container;

typedef struct kp_verify_report {
    const char *backend;
    const char *design;
    uint64_t seed;
    int samples, max_pages, write_ops;  /* max_pages 0: to the last page */
    int in_flight;                  /* samples whose pages were read at once (1: one at a time) */
    int is_exhaustive;
    long anchors, anchors_total;    /* over every pattern checked */
    int is_walked_to_end;           /* no walk stopped at max_pages with pages left */
    kp_verify_container *containers;/* the read-back check (empty with no_read_back) */
    size_t container_count;
    int containers_failed;
    int is_read_back;               /* the read-back check ran */
    int writes;                     /* --writes was asked */
    kp_verify_pattern *patterns;    /* model order */
    size_t pattern_count;
    kp_verify_write *write_results; /* model order; empty without --writes */
    size_t write_count;
    int patterns_passed, patterns_failed, patterns_skipped;
    int writes_passed, writes_failed;
    int is_undone;                  /* --writes: read_back equals what it was before */
    char undo_note[512];
    long requests;
    double seconds;
    char stopped[512];              /* why the run stopped before checking everything ("" when it did not) */
} kp_verify_report;

/* Verifies a seeded target. Returns 0 when every pattern (and write) passed; -1 with
 * err otherwise: KP_ERR_CHECK when a check failed (the report says which and why),
 * KP_ERR_USAGE when the target was not seeded with this model, data and design (or a
 * --writes was interrupted there), KP_ERR_TARGET for server trouble. `out` is filled
 * as far as the run got in every case; free it with kp_verify_report_free. */
int kp_verify_run(const kp_verify_options *options, kp_verify_report *out, kp_error *err);
void kp_verify_report_free(kp_verify_report *report);

/* Output: an aligned table; the JSON of docs/output.md "verify" (one database: a new
 * tree); JUnit XML for several reports (one <testsuite> each, one <testcase> per
 * pattern and per write, the failure message being the first difference). */
void kp_verify_report_print(FILE *out, const kp_verify_report *report);
cJSON *kp_verify_report_to_json(const kp_verify_report *report);
int kp_verify_write_junit(FILE *out, const kp_verify_report *const *reports, size_t count);

/* ---- comparing responses -------------------------------------------------------------- */

/* Compares two responses. Objects: the same member names (order ignored); arrays:
 * the same length and elements in the same order; numbers (cJSON numbers or
 * cJSON_Raw number text) by their exact value as decimal text ("20.00" equals "20",
 * 9007199254740993 differs from 9007199254740992); everything else exactly. Returns 0
 * when equal; 1 with the first difference: *path as a JSON path ("$", ".name" or
 * ["odd key"], "[3]"), *expected / *actual as compact JSON or "(absent)" (all three
 * malloc'd; the caller frees them); -1 when out of memory. */
int kp_json_diff(const cJSON *expected, const cJSON *actual, char **path, char **expected_text, char **actual_text);

/* The canonical text of a number node (cJSON number or cJSON_Raw): plain decimal, no
 * exponent, no leading zeros, no trailing fraction zeros, "-0" as "0". Writes into
 * buf; returns 0, or -1 when the node is not a number. */
int kp_json_number_canonical(const cJSON *node, char *buf, size_t size);

#endif
