#include "backends/cassandra/cql.h"
int kp_cq_apply_write(kp_conn *conn, const kp_design *d, const kp_dataset *before, const kp_dataset *after,
                      const void *request, int *atomic_exercised, kp_error *err)
{ (void)conn; (void)d; (void)before; (void)after; (void)request; *atomic_exercised = 0; return kp_error_set(err, KP_ERR_INTERNAL, NULL, 0, 0, "not yet"); }
