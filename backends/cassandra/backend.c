/*
 * backend.c — the Cassandra kp_backend: its limits as data, and the table of functions
 * the rest of keyplan calls (propose.c, rows.c, live.c, execute.c, writes.c, emit.c).
 *
 * Invariant: nothing outside backends/cassandra/ needs to know it is Cassandra; what
 * the advisors must know (partition size, mutation size, batch guardrails) is here.
 */
#include "backends/cassandra/cql.h"

/* A Cassandra design is priced as Amazon Keyspaces runs it: on-demand per million request
 * units (a read unit is 4 KB read at LOCAL_QUORUM, a write unit 1 KB written per row —
 * the neutral I/O units), provisioned per capacity unit-hour, storage per GB-month; as
 * published after the on-demand price reduction of 2024-11-14. */
static const kp_region_prices cq_regions[] = {
    {"us-east-1", 0.125, 0.625, 0.00015, 0.00075, 0.25},
};

static const kp_pricing cq_pricing = {
    .service = "Amazon Keyspaces",
    .as_of = "2024-11",
    .source = "https://aws.amazon.com/keyspaces/pricing/",
    .units_are_neutral = 1,
    .regions = cq_regions,
    .region_count = sizeof cq_regions / sizeof cq_regions[0],
};

static const kp_limits cq_limits = {
    .max_item_bytes = 16.0 * 1024 * 1024,           /* half the default 32 MB commit log segment; a node that announces a lower max_mutation_size lowers it (server_item_limit) */
    .max_collection_bytes = KP_CQ_PARTITION_BYTES,  /* a partition should stay under ~100 MB */
    .max_partition_rows = KP_CQ_PARTITION_ROWS,
    .partition_read_per_s = 0,
    .partition_write_per_s = 0,
    .page_bytes = 0,
    .max_batch_write = 512,                         /* rows per submit; grouped there into UNLOGGED batches of one partition (16 rows at most) */
    .max_batch_get = 0,
    .seed_in_flight = 128,                          /* the node is busy on every core only with many requests waiting
                                                       (bench/README.md, "Cassandra seeding": 8 in flight took 1.8x as long) */
    .max_secondary_indexes = 0,                     /* none are proposed */
    .max_local_indexes = 0,
    .read_unit = NULL,
    .write_unit = NULL,
    .pricing = &cq_pricing,
    .routes_by_partition_key = 1,
};

const kp_backend kp_cassandra_backend = {
    .name = "cassandra",
    .title = "Cassandra",
    .limits = &cq_limits,
    .propose = kp_cq_propose,
    .emit = kp_cq_emit,
    .transform = kp_cq_transform,
    .connect = kp_cq_connect,
    .inspect = kp_cq_inspect,
    .apply_schema = kp_cq_apply_schema,
    .drop = kp_cq_drop,
    .write_marker = kp_cq_write_marker,
    .read_marker = kp_cq_read_marker,
    .submit = kp_cq_submit,
    .poll = kp_cq_poll,
    .execute = kp_cq_execute,
    .apply_write = kp_cq_apply_write,
    .read_back = kp_cq_read_back,
    .item_checksum = kp_cq_item_checksum,
    .disconnect = kp_cq_disconnect,
    .delete_items = kp_cq_delete_items,
    .read_records = kp_cq_read_records,
    .read_items = kp_cq_read_items,
    .migrate_schema = kp_cq_migrate_schema,
    .server_item_limit = kp_cq_server_item_limit,
    .export_format = "dsbulk",
    .export_open = kp_cq_export_open,
    .export_item = kp_cq_export_item,
    .export_close = kp_cq_export_close,
};
