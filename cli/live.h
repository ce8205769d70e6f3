/*
 * live.h — helpers of the commands that talk to servers (seed, verify, teardown):
 * --db / --target / --prefix, loading the model and data, choosing a design, Ctrl-C.
 */
#ifndef KP_CLI_LIVE_H
#define KP_CLI_LIVE_H

#include <signal.h>

#include "backends/backend.h"
#include "core/data.h"
#include "core/error.h"
#include "core/model.h"

typedef struct kp_live_args {
    const char *verb;               /* "seed", for messages */
    const char *model_path;
    const char *db;                 /* --db */
    const char *data_dir;           /* --data */
    int needs_data;                 /* load --data (required) */
    const char *targets[8];         /* --target DATABASE=ENDPOINT, as given */
    size_t target_count;
    const char *prefix;             /* --prefix, or NULL */
    double scale;                   /* --scale (0: 1) */
    int is_insecure;                /* --insecure */
} kp_live_args;

typedef struct kp_live {
    kp_model *model;
    kp_dataset *data;               /* NULL unless needs_data */
    const kp_backend *backends[9];  /* NULL-terminated, --db order */
    kp_target targets[8];           /* one per backend */
    size_t backend_count;
} kp_live;

/* Records one --target value (checked for DATABASE=ENDPOINT). */
int kp_live_add_target(kp_live_args *args, const char *text, kp_error *err);
/* Checks the arguments, parses --db and the targets, loads the model (and data). */
int kp_live_open(const kp_live_args *args, kp_live *live, kp_error *err);
void kp_live_close(kp_live *live);

/* Every candidate design of a backend (the first is the recommended one). */
int kp_live_propose(const kp_backend *backend, const kp_model *model, kp_design_list *out, kp_error *err);
/* The candidate named `candidate` (NULL: the recommended one); NULL with err when none. */
const kp_design *kp_live_pick(const kp_design_list *designs, const char *candidate, kp_error *err);

/* Ctrl-C / SIGTERM set kp_live_interrupted (once; a second one stops at once). */
extern volatile sig_atomic_t kp_live_interrupted;
void kp_live_catch_interrupt(void);

/* Keeps the first failure's exit status. */
void kp_live_fail(int *status, const kp_error *err);

#endif
