/*
 * fuzz_cql_frame.c — libFuzzer target: arbitrary bytes as a CQL native protocol v4
 * frame, the way keyplan's client reads a server's answer.
 *
 * The decoder must answer every input with a response or a KP_ERR_TARGET error —
 * never a crash, a read past the input, a leak or an allocation out of proportion to
 * the input. A response that decodes is encoded again (it must not crash either), and
 * the bytes are also tried as a request (the direction a fake server reads) and as a
 * Rows body without metadata, decoded with a fixed set of column types.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "backends/cassandra/cql_codec.h"

static kp_arena types_arena;
static kp_cql_metadata known;

static void init_known(void)
{
    static const char *texts[] = {"int", "text", "map<text, frozen<list<decimal>>>", "tuple<varint, date, time>",
                                  "set<uuid>", "timestamp"};
    static kp_cql_column columns[6];
    kp_error err;
    for (int i = 0; i < 6; i++) {
        if (kp_cql_type_parse(texts[i], &types_arena, &columns[i].type, &err)) abort();
        columns[i].keyspace = "k";
        columns[i].table = "t";
        columns[i].name = texts[i];
    }
    known.column_count = 6;
    known.columns = columns;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!known.columns) init_known();
    kp_error err;
    kp_cql_response r;
    if (kp_cql_response_decode(data, size, &known, 1 << 20, &r, &err) == 0) {
        kp_cql_buf again = {0};
        kp_cql_response_encode(&r, &known, &again, &err);
        kp_cql_buf_free(&again);
        kp_cql_response_free(&r);
    }
    kp_arena arena = {0};
    kp_cql_request rq;
    if (kp_cql_request_decode(data, size, &arena, &rq, &err) == 0) {
        kp_cql_buf again = {0};
        kp_cql_request_encode(&rq, &again, &err);
        kp_cql_buf_free(&again);
        kp_cql_request_free_values(&rq);
    }
    kp_arena_free(&arena);
    return 0;
}
