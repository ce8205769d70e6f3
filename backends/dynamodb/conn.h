/*
 * conn.h — a live DynamoDB connection as the backend sees it: the HTTP client and the
 * table-name prefix.
 */
#ifndef KP_DDB_CONN_H
#define KP_DDB_CONN_H

#include "backends/backend.h"
#include "backends/dynamodb/client.h"

typedef struct kp_ddb_conn kp_ddb_conn;

kp_ddb_client *kp_ddb_conn_client(kp_ddb_conn *conn);
/* "<prefix><name>" (valid until the next call). */
const char *kp_ddb_conn_table(kp_ddb_conn *conn, const char *name);

/* execute.c */
int kp_ddb_execute(kp_conn *conn, const kp_design *d, const kp_pattern *p, const kp_params *params, const char *page,
                   kp_result *out, kp_error *err);

/* live.c: the CreateTable request of a design (table name with the prefix), and the
 * live functions of the backend table. */
cJSON *kp_ddb_create_table_request(const kp_design *d, const char *prefix);

/* keyplan's marker item in the design's table */
#define KP_DDB_MARKER_PK "#KEYPLAN"
#define KP_DDB_MARKER_SK "#MARKER"

/* export.c: seed --export dynamodb-import (backend.h) */
int kp_ddb_export_open(const kp_design *d, const char *dir, const char *prefix, kp_exporter **out, kp_error *err);
int kp_ddb_export_item(kp_exporter *x, const kp_item *item, kp_error *err);
int kp_ddb_export_close(kp_exporter *x, const cJSON *marker, int is_ok, char *note, size_t note_size, kp_error *err);
int kp_ddb_connect(const kp_target *t, kp_conn **out, kp_error *err);
void kp_ddb_disconnect(kp_conn *conn);
int kp_ddb_inspect(kp_conn *conn, const kp_design *d, kp_target_state *out, kp_error *err);
int kp_ddb_apply_schema(kp_conn *conn, const kp_design *d, kp_error *err);
int kp_ddb_drop(kp_conn *conn, const kp_design *d, kp_error *err);
int kp_ddb_write_marker(kp_conn *conn, const kp_design *d, const cJSON *marker, kp_error *err);
int kp_ddb_read_marker(kp_conn *conn, const kp_design *d, const char *shard, cJSON **out, kp_error *err);
int kp_ddb_submit_items(kp_conn *conn, kp_item_list *batch, kp_ack_fn on_ack, void *ctx, kp_error *err);
int kp_ddb_poll_conn(kp_conn *conn, int timeout_ms, kp_error *err);
int kp_ddb_read_back(kp_conn *conn, const kp_design *d, kp_readback *out, kp_error *err);
int kp_ddb_read_items(kp_conn *conn, const kp_design *d, kp_read_item_fn fn, void *ctx, kp_error *err);
/* writes.c */
int kp_ddb_apply_write(kp_conn *conn, const kp_design *d, const kp_dataset *before, const kp_dataset *after,
                       const void *request, const kp_change *changes, size_t change_count,
                       kp_write_sent *out, kp_error *err);
int kp_ddb_delete_items(kp_conn *conn, const kp_design *d, const kp_item_list *items, kp_error *err);
/* The checksum of an item body that read-back and seeding agree on (numbers canonical). */
uint64_t kp_ddb_item_checksum(const cJSON *body);
int kp_ddb_read_records(kp_conn *conn, const kp_design *d, kp_read_record_fn on_record, void *ctx, kp_error *err);
int kp_ddb_migrate_schema(kp_conn *conn, const kp_design *from, const kp_design *to, int is_final, int *emptied,
                          char *note, size_t note_size, kp_error *err);

#endif
