/*
 * conn.h — a live MongoDB connection as the backend sees it (the client and the
 * collection-name prefix), and the live functions of the kp_backend table.
 */
#ifndef KP_MONGO_CONN_H
#define KP_MONGO_CONN_H

#include "backends/backend.h"
#include "backends/mongodb/client.h"

typedef struct kp_mg_conn kp_mg_conn;

kp_mg_client *kp_mg_conn_client(kp_mg_conn *conn);
/* Chooses the database for a design (the URI's, else the model's name). */
void kp_mg_conn_use(kp_mg_conn *conn, const kp_design *d);
/* "<prefix><name>" (valid until the next call on this connection). */
const char *kp_mg_conn_collection(kp_mg_conn *conn, const char *name);

/* live.c */
int kp_mg_connect(const kp_target *t, kp_conn **out, kp_error *err);
void kp_mg_disconnect(kp_conn *conn);
int kp_mg_inspect(kp_conn *conn, const kp_design *d, kp_target_state *out, kp_error *err);
int kp_mg_apply_schema(kp_conn *conn, const kp_design *d, kp_error *err);
int kp_mg_drop(kp_conn *conn, const kp_design *d, kp_error *err);
int kp_mg_write_marker(kp_conn *conn, const kp_design *d, const cJSON *marker, kp_error *err);
int kp_mg_read_marker(kp_conn *conn, const kp_design *d, const char *shard, cJSON **out, kp_error *err);
/* export.c: seed --export mongoimport (backend.h) */
int kp_mg_export_open(const kp_design *d, const char *dir, const char *prefix, kp_exporter **out, kp_error *err);
int kp_mg_export_item(kp_exporter *x, const kp_item *item, kp_error *err);
int kp_mg_export_close(kp_exporter *x, const cJSON *marker, int is_ok, char *note, size_t note_size, kp_error *err);
int kp_mg_submit(kp_conn *conn, kp_item_list *batch, kp_ack_fn on_ack, void *ctx, kp_error *err);
int kp_mg_poll(kp_conn *conn, int timeout_ms, kp_error *err);
int kp_mg_read_back(kp_conn *conn, const kp_design *d, kp_readback *out, kp_error *err);
int kp_mg_read_items(kp_conn *conn, const kp_design *d, kp_read_item_fn fn, void *ctx, kp_error *err);
/* execute.c */
int kp_mg_execute(kp_conn *conn, const kp_design *d, const kp_pattern *p, const kp_params *params, const char *page,
                  kp_result *out, kp_error *err);
/* writes.c */
int kp_mg_apply_write(kp_conn *conn, const kp_design *d, const kp_dataset *before, const kp_dataset *after,
                      const void *request, const kp_change *changes, size_t change_count,
                      kp_write_sent *out, kp_error *err);
int kp_mg_delete_items(kp_conn *conn, const kp_design *d, const kp_item_list *items, kp_error *err);
int kp_mg_read_records(kp_conn *conn, const kp_design *d, kp_read_record_fn on_record, void *ctx, kp_error *err);
int kp_mg_migrate_schema(kp_conn *conn, const kp_design *from, const kp_design *to, int is_final, int *emptied,
                         char *note, size_t note_size, kp_error *err);

#endif
