/*
 * risk.h — what could go wrong with a design under a workload: hot partitions (the
 * workload's key skew simulated over sample data, or estimated from the model's counts
 * and Zipf skew without data), size limits (item, document, partition / item
 * collection), scans, unused or redundant indexes, and write amplification weighed
 * against the write rates.
 *
 * Invariant: limits come from the backend's kp_limits and the design's containers;
 * a limit a backend leaves at 0 is "not modelled" and its check is skipped, never
 * guessed.
 */
#ifndef KP_RISK_H
#define KP_RISK_H

#include <stdint.h>
#include <cjson/cJSON.h>

#include "backends/backend.h"
#include "core/data.h"

typedef enum kp_risk_severity {
    KP_RISK_INFO,
    KP_RISK_WARNING,    /* a reviewer should look; the design works at the declared rates */
    KP_RISK_DEFECT      /* the design fails at the declared rates or sizes (a scan, a limit passed) */
} kp_risk_severity;

typedef struct kp_risk {
    const char *kind;           /* "hot-partition", "item-size", "partition-size", "scan", "unused-index",
                                   "redundant-index", "write-amplification", "defect" */
    kp_risk_severity severity;
    char *subject;              /* the pattern, write, container or index it is about */
    char *message;              /* a sentence with the numbers and the fix */
    double share;               /* hot-partition: the hottest partition's share of the load (after shards) */
    double load, limit;         /* hot-partition: units per second on it, and the per-partition limit (0: none) */
    int shards;                 /* hot-partition: the shard count that fixes it */
    int is_simulated;           /* hot-partition: drawn from the data (else estimated from counts and skew) */
} kp_risk;

typedef struct kp_risks {
    kp_risk *items;
    size_t count, cap;
} kp_risks;

typedef struct kp_risk_options {
    const kp_dataset *data;     /* sample data to simulate the skew over; NULL: estimate from the model */
    int samples;                /* draws per pattern / write (0: 2,000) */
    uint64_t seed;              /* the draws' seed */
} kp_risk_options;

/* Checks `design` under `mix` (NULL: declared rates); appends to out (zero it first). */
int kp_risk_check(const kp_design *design, const kp_mix *mix, const kp_risk_options *options, kp_risks *out, kp_error *err);
void kp_risks_free(kp_risks *risks);
size_t kp_risks_count(const kp_risks *risks, kp_risk_severity severity);
/* The first risk of a kind about a subject (NULL: none). */
const kp_risk *kp_risks_find(const kp_risks *risks, const char *kind, const char *subject);
const char *kp_risk_severity_name(kp_risk_severity severity);
/* An array of {kind, severity, subject, message, ...}; a new tree, cJSON_Delete. */
cJSON *kp_risks_to_json(const kp_risks *risks);

#endif
