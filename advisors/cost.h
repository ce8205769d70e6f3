/*
 * cost.h — what a design costs under a workload mix: per access pattern the round
 * trips, requests, items and bytes read; per write the items written (index entries and
 * denormalised copies included); storage with its duplication; and, for a database
 * priced as a managed service (DynamoDB, Amazon Keyspaces, MongoDB Atlas), a month's
 * price from the backend's dated table (kp_pricing).
 *
 * Invariant: every figure comes from the design's plans and write plans (what the
 * backend claims and verify measures) times the mix's rates; nothing here knows a
 * database by name — units and prices are the backend's kp_limits, overridable.
 */
#ifndef KP_COST_H
#define KP_COST_H

#include <cjson/cJSON.h>

#include "backends/backend.h"

/* Seconds in the month the prices are quoted for (30 days). */
#define KP_SECONDS_PER_MONTH 2592000.0
/* A neutral I/O unit, the same for every database so designs compare in one table:
 * a read unit is 4 KB read (at least one per request), a write unit 1 KB written (at
 * least one per item, index entry or copy); a write unit weighs KP_WRITE_WEIGHT read
 * units (writes are journaled and replicated; it is also the ratio of DynamoDB's
 * on-demand prices). */
#define KP_READ_UNIT_BYTES 4096.0
#define KP_WRITE_UNIT_BYTES 1024.0
#define KP_WRITE_WEIGHT 5.0

/* How a design is priced: the region and capacity mode of the service's price table
 * (kp_pricing), and overrides in USD — a negative value keeps the table's figure. The
 * unit overrides are on-demand prices per million units (per unit-hour when provisioned)
 * and apply to unit-priced services; per_hour replaces the chosen cluster tier's price. */
typedef struct kp_prices {
    double per_million_reads;
    double per_million_writes;
    double per_gb_month;
    double per_hour;
    const char *region;              /* NULL: the table's first region */
    int is_provisioned;              /* provisioned capacity instead of on-demand */
} kp_prices;

#define KP_PRICES_DEFAULT ((kp_prices){.per_million_reads = -1, .per_million_writes = -1, .per_gb_month = -1, .per_hour = -1})
/* Provisioned capacity is sized at the mix's rates over this target utilisation (the
 * auto-scaling default), for the 720 hours of a 30-day month. */
#define KP_PROVISIONED_UTILISATION 0.7
/* A cluster tier is chosen by data: the smallest whose disk holds the stored bytes with
 * this headroom and whose memory holds this share of them (indexes and hot documents);
 * past the largest tier, shards of it. Load is not used to size it. */
#define KP_TIER_DISK_HEADROOM 1.3
#define KP_TIER_MEMORY_SHARE 0.25

typedef struct kp_pattern_cost {
    const kp_pattern *pattern;
    double rps;
    int round_trips;
    double requests, items, bytes;   /* per request of the pattern */
    double read_units;               /* the database's own units (0 when it has none) */
    double io_units;                 /* neutral read units per request */
    int is_scan;
} kp_pattern_cost;

typedef struct kp_write_cost {
    const kp_write *write;
    double rps;
    double requests, items, bytes;   /* per operation: items, index entries and copies written */
    double rows;                     /* records the operation changes (model) */
    double amplification;            /* items / rows */
    double write_units;              /* the database's own units (0 when it has none) */
    double io_units;                 /* neutral write units per operation */
} kp_write_cost;

typedef struct kp_cost {
    const kp_design *design;
    const kp_mix *mix;
    kp_pattern_cost *patterns;       /* model order */
    size_t pattern_count;
    kp_write_cost *writes;
    size_t write_count;
    /* per second under the mix */
    double read_requests, items_read, bytes_read, read_units, read_io;
    double write_requests, items_written, bytes_written, write_units, write_io;
    double io_units;                 /* read_io + KP_WRITE_WEIGHT * write_io */
    double weighted_round_trips;     /* round trips averaged over the read rates */
    /* storage */
    double storage_bytes, stored_items;
    double base_bytes;               /* every record once, without indexes or copies */
    double duplication;              /* storage_bytes / base_bytes */
    /* price (is_priced only) */
    int is_priced;
    const kp_pricing *pricing;       /* the service's table */
    const char *price_region;        /* the region priced */
    int is_provisioned;
    double price_reads, price_writes, price_storage;     /* unit-priced: the unit prices used */
    const kp_tier_price *tier;       /* cluster-priced: the tier chosen, its shards and hourly price */
    int shards;
    double price_hour;
    double month_reads, month_writes, month_storage, month_total;
    char price_note[512];            /* why a priced service is not priced here (a region its table lacks) */
} kp_cost;

/* The month's price in one sentence: "DynamoDB on-demand (us-east-1, prices of 2024-11):
 * about $12.00 a month (reads $…, writes $…, storage $…)", or the cluster tier chosen. */
void kp_cost_price_sentence(const kp_cost *cost, char *buf, size_t size);

/* Costs `design` under `mix` (NULL: the declared rates). prices may be NULL. */
int kp_cost_compute(const kp_design *design, const kp_mix *mix, const kp_prices *prices, kp_cost *out, kp_error *err);
void kp_cost_free(kp_cost *cost);
/* The cost as JSON (docs/output.md "compare"); a new tree, cJSON_Delete. */
cJSON *kp_cost_to_json(const kp_cost *cost);
/* Bytes of one record of the entity as the model describes it (attribute sizes, types'
 * defaults, presence), without any database's overhead. */
double kp_record_bytes(const kp_entity *entity);

#endif
