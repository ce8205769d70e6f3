/*
 * migrate.h — `keyplan migrate OLD NEW`: carries a target seeded from one version of a
 * model over to the layout of the next, online where the database allows it, resumable,
 * throttled, and proven by `keyplan verify NEW`.
 *
 * The steps, per database, each recorded in a progress file before the next begins
 * (STATE/progress.json, replaced atomically), so a run killed at any moment is resumed
 * by running the same command again:
 *   1. snapshot: every record the target holds is read back through OLD's design
 *      (backend read_records: the live data, not the files it was seeded from), merged by
 *      key, written to STATE/old/<Entity>.ndjson and loaded against OLD (references,
 *      copies). Nothing on the target has changed yet; the marker then says "migrating".
 *   2. the model change: each record becomes a record of NEW — attributes by name, or
 *      by NEW's `renamed_from`; an attribute NEW adds takes its `backfill` value; copies
 *      and derived attributes are computed; entities NEW lacks are left behind. The
 *      result is written to STATE/new (the data to verify NEW with).
 *   3. schema (backend migrate_schema, is_final 0): what NEW needs is created next to
 *      what OLD has, so readers of OLD keep working; a container that cannot be changed
 *      in place is rebuilt, and the note says it was not online.
 *   4. write: NEW's items (backend transform) are put, in record order, at most `rate`
 *      items a second; an item whose identity and content OLD already has is not sent
 *      (unless a container was rebuilt). The progress file records the records done.
 *   5. delete: OLD's items that NEW does not have, in containers NEW keeps.
 *   6. final: what only OLD had is removed (indexes, tables, columns), and the marker
 *      becomes the one a complete seed of NEW's data leaves.
 * Every write is an idempotent put or delete keyed by the item's identity, so repeating
 * a step after an interruption neither loses nor duplicates anything. Writes of an
 * application during the migration are not carried over (stop them, or replay them).
 */
#ifndef KP_MIGRATE_H
#define KP_MIGRATE_H

#include <signal.h>
#include <stdio.h>

#include "backends/backend.h"
#include "core/error.h"
#include "core/model.h"

typedef struct kp_migrate_options {
    const kp_model *old_model, *new_model;
    const kp_backend *backend;
    const kp_target *target;
    const kp_design_list *old_designs;  /* OLD's candidates: the marker names the one seeded */
    const kp_design *new_design;
    const char *state_dir;              /* this database's state: progress.json, old/, new/ */
    double rate;                        /* items written (and deleted) per second at most; 0: no limit */
    int is_dry_run;                     /* read and plan; change nothing (no state written) */
    int is_force;                       /* accept a target whose marker is not OLD's complete seed */
    FILE *progress;                     /* progress lines (a TTY gets rate and ETA); NULL: quiet */
    volatile sig_atomic_t *interrupted; /* set by SIGINT: stop after the current batch */
} kp_migrate_options;

typedef struct kp_migrate_report {
    const char *backend;
    const char *old_design, *new_design;    /* candidate names */
    int is_resumed;                         /* continued an interrupted run */
    int is_already_done;                    /* the target already holds NEW's seed; nothing done */
    int is_rebuilt;                         /* a container had to be rebuilt (not online) */
    long records_old, records_new;          /* records read back; records of NEW */
    long items_new;                         /* items NEW's design makes of them */
    long items_written, items_unchanged;    /* put by this run; already equal on the target */
    long items_deleted;                     /* OLD's items removed */
    double seconds;
    char note[2048];                        /* what was not online, what the server could not do */
    char data_dir[1200];                    /* NEW's data: `keyplan verify NEW --data` */
} kp_migrate_report;

/* Runs (or resumes) the migration on one database. 0 on success; -1 with err:
 * KP_ERR_USAGE (a target not seeded from OLD, a state directory of another migration),
 * KP_ERR_MODEL (NEW cannot take OLD's records: an added required attribute without
 * `backfill`, with its position), KP_ERR_DATA (the live data does not fit OLD),
 * KP_ERR_TARGET (server trouble or an interruption: run again to resume). */
int kp_migrate_run(const kp_migrate_options *options, kp_migrate_report *out, kp_error *err);

/* The static check of step 2: every attribute NEW requires has a value for OLD's
 * records (the same name, `renamed_from`, `backfill`, or computed). */
int kp_migrate_check_models(const kp_model *old_model, const kp_model *new_model, kp_error *err);

#endif
