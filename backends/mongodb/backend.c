/*
 * backend.c — the MongoDB kp_backend: its limits, and transform (a neutral record ->
 * the document it becomes, or nothing when the record lives embedded in its parent's
 * document).
 *
 * Invariant: transform is a pure function of the design and the data, so a resumed or
 * repeated seed writes identical documents under identical `_id`s.
 */
#include "backends/mongodb/mongo.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/mongodb/conn.h"

/* A MongoDB design is priced as a MongoDB Atlas dedicated cluster on AWS: a three-node
 * replica set per shard, by the hour, storage included up to the tier's disk. Figures
 * of 2024-11 for us-east-1 (tier: memory GB, disk GB, USD per hour). */
static const kp_tier_price mg_tiers[] = {
    {"M10", 2, 10, 0.08},   {"M20", 4, 20, 0.20},    {"M30", 8, 40, 0.54},     {"M40", 16, 80, 1.04},
    {"M50", 32, 160, 2.00}, {"M60", 64, 320, 3.95},  {"M80", 128, 750, 7.30},  {"M200", 256, 1500, 14.59},
};

static const kp_pricing mg_pricing = {
    .service = "MongoDB Atlas",
    .as_of = "2024-11",
    .source = "https://www.mongodb.com/pricing",
    .tiers = mg_tiers,
    .tier_count = sizeof mg_tiers / sizeof mg_tiers[0],
    .tier_region = "us-east-1",
};

static const kp_limits mg_limits = {
    .max_item_bytes = KP_MG_MAX_DOC_BYTES,
    .max_collection_bytes = 0,
    .max_partition_rows = 0,
    .partition_read_per_s = 0,
    .partition_write_per_s = 0,
    .page_bytes = KP_MG_MAX_DOC_BYTES,  /* a cursor batch */
    .max_batch_write = KP_MG_BATCH,
    .max_batch_get = KP_MG_IN_BATCH,
    .max_secondary_indexes = 63,        /* 64 per collection, with _id */
    .max_local_indexes = 0,
    .read_unit = NULL,
    .write_unit = NULL,
    .pricing = &mg_pricing,
    .routes_by_partition_key = 0,
};

static int mg_transform(const kp_design *d, const kp_dataset *data, const kp_record *r, kp_item_list *out, kp_error *err)
{
    const mg_layout *L = d->layout;
    const mg_entity *me = &L->entities[r->entity->index];
    if (!me->collection) return 0; /* embedded: written with its parent's document */
    cJSON *doc;
    if (kp_mg_document(d, data, r, &doc, err)) {
        if (err->code == KP_OK) err->code = KP_ERR_DATA;
        return -1;
    }
    size_t bytes = kp_mg_document_size(doc);
    if (bytes == 0 || bytes > (size_t)KP_MG_MAX_DOC_BYTES) {
        cJSON_Delete(doc);
        return kp_error_set(err, KP_ERR_DATA, NULL, (int)r->line, 0,
                            "this %s record becomes a %zu-byte MongoDB document (with what it embeds), above the 16 MB "
                            "document limit; it is not written", r->entity->name, bytes);
    }
    kp_item *it = kp_item_list_push(out);
    if (!it) { cJSON_Delete(doc); return kp_error_set(err, KP_ERR_NOMEM, NULL, 0, 0, "out of memory"); }
    it->container = me->collection->name;
    it->entity = r->entity;
    it->body = doc;
    it->bytes = bytes;
    it->id = kp_mg_item_id(me->collection->name, doc);
    if (!it->id) return kp_error_set(err, KP_ERR_NOMEM, NULL, 0, 0, "out of memory");
    return 0;
}

const kp_backend kp_mongodb_backend = {
    .name = "mongodb",
    .title = "MongoDB",
    .limits = &mg_limits,
    .propose = kp_mg_propose,
    .emit = kp_mg_emit,
    .transform = mg_transform,
    .connect = kp_mg_connect,
    .inspect = kp_mg_inspect,
    .apply_schema = kp_mg_apply_schema,
    .drop = kp_mg_drop,
    .write_marker = kp_mg_write_marker,
    .read_marker = kp_mg_read_marker,
    .submit = kp_mg_submit,
    .poll = kp_mg_poll,
    .execute = kp_mg_execute,
    .apply_write = kp_mg_apply_write,
    .read_back = kp_mg_read_back,
    .item_checksum = kp_mg_item_checksum,
    .disconnect = kp_mg_disconnect,
    .delete_items = kp_mg_delete_items,
    .read_records = kp_mg_read_records,
    .read_items = kp_mg_read_items,
    .migrate_schema = kp_mg_migrate_schema,
    .export_format = "mongoimport",
    .export_open = kp_mg_export_open,
    .export_item = kp_mg_export_item,
    .export_close = kp_mg_export_close,
};
