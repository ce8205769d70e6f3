/*
 * test_ddb_design.c — the DynamoDB design without a server: key strings (padding,
 * prefixes, escaping, order preservation), the proposal on the seed examples with
 * their exact key formats and request counts, transform, and response reassembly.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "backends/assemble.h"
#include "core/json.h"
#include "backends/dynamodb/conn.h"
#include "backends/dynamodb/ddb.h"
#include "backends/dynamodb/request.h"
#include "core/data.h"
#include "support.h"

extern const kp_backend kp_dynamodb_backend;

static kp_model *load(const char *path)
{
    kp_model *m = NULL;
    kp_error err;
    if (kp_model_load(path, NULL, &m, &err)) {
        kp_error_print(stderr, &err);
        fail_msg("%s did not load", path);
    }
    return m;
}

/* A model file with every `from` replaced by `to` (as long: the text keeps its positions),
 * which must occur at least once. */
static kp_model *load_edited(const char *path, const char *from, const char *to)
{
    char *text = NULL;
    size_t len = 0, edits = 0;
    kp_error err;
    assert_int_equal(strlen(from), strlen(to));
    assert_int_equal(kp_file_read(path, 1 << 20, &text, &len, &err), 0);
    for (char *at = text; (at = strstr(at, from)) != NULL; at++, edits++) memcpy(at, to, strlen(to));
    assert_true(edits > 0);
    kp_model *m = NULL;
    if (kp_model_parse(path, text, len, NULL, &m, &err)) fail_msg("%s", err.message);
    free(text);
    return m;
}

static kp_design *propose(const kp_model *m)
{
    kp_design_list list;
    kp_error err;
    if (kp_dynamodb_backend.propose(m, NULL, &list, &err)) fail_msg("propose failed: %s", err.message);
    kp_design *d = list.items[0];
    free(list.items);
    return d;
}

static const kp_plan *plan_of(const kp_design *d, const char *name)
{
    for (size_t i = 0; i < d->plan_count; i++)
        if (strcmp(d->plans[i].pattern->name, name) == 0) return &d->plans[i];
    fail_msg("no plan for %s", name);
    return NULL;
}

static const char *key_text(const kp_attr *a, int width, const char *json)
{
    static char buf[256];
    cJSON *v = cJSON_Parse(json);
    kp_data_rawify(v, NULL);
    int rc = kp_ddb_key_text(a, width, v, buf, sizeof buf);
    cJSON_Delete(v);
    assert_int_equal(rc, 0);
    return buf;
}

static void test_key_values_are_padded_escaped_and_keep_their_order(void **state)
{
    (void)state;
    kp_attr text = {.name = "name", .type = {.kind = KP_T_STRING}};
    kp_attr number = {.name = "rating", .type = {.kind = KP_T_INT}};
    assert_string_equal(key_text(&number, 5, "1842"), "01842");
    assert_string_equal(key_text(&number, 4, "7"), "0007");
    /* signed ranges: offset binary keeps -1 < 0 < 1 bytewise */
    char a[64], b[64], c[64];
    strcpy(a, key_text(&number, 0, "-1"));
    strcpy(b, key_text(&number, 0, "0"));
    strcpy(c, key_text(&number, 0, "1"));
    assert_true(strcmp(a, b) < 0 && strcmp(b, c) < 0);
    /* the separator and everything at or below '%' is escaped */
    assert_string_equal(key_text(&text, 0, "\"a#b\""), "a%23b");
    assert_string_equal(key_text(&text, 0, "\"50% off\""), "50%25%20off");
    /* a shorter value sorts before a longer one that extends it, even with a space */
    char ann[300], annlee[300];
    snprintf(ann, sizeof ann, "P#%s#1", key_text(&text, 0, "\"Ann\""));
    snprintf(annlee, sizeof annlee, "P#%s#1", key_text(&text, 0, "\"Ann Lee\""));
    assert_true(strcmp(ann, annlee) < 0);
    /* escaped bytes keep their relative order and stay below unescaped ones */
    char space[64], dollar[64], amp[64];
    strcpy(space, key_text(&text, 0, "\" \""));
    strcpy(dollar, key_text(&text, 0, "\"$\""));
    strcpy(amp, key_text(&text, 0, "\"&\""));
    assert_true(strcmp(space, dollar) < 0 && strcmp(dollar, amp) < 0);
}

static void test_saas_workspace_settings_is_one_get_item(void **state)
{
    (void)state;
    kp_model *m = load("examples/saas-control-plane/model.json");
    kp_design *d = propose(m);
    const kp_plan *p = plan_of(d, "workspace-settings");
    assert_int_equal(p->op_count, 1);
    assert_string_equal(p->ops[0].op, "GetItem");
    assert_int_equal(p->sequential_steps, 1);
    assert_true(p->requests == 1);
    assert_non_null(strstr(p->ops[0].condition, "PK = WORKSPACE#<id>"));
    const kp_plan *g = plan_of(d, "get-project");
    assert_string_equal(g->ops[0].op, "GetItem");
    assert_non_null(strstr(g->ops[0].condition, "PK = WORKSPACE#<workspaceId> AND SK = PROJECT#<id>"));
    kp_design_free(d);
    kp_model_free(m);
}

/* What advise prints is what runs: for every bundled example, the first Query of every
 * pattern as the executor builds it (request.c, parameters as placeholders) has each of
 * its literal key values in the plan's condition text, and the same operators. */
static void test_the_printed_key_condition_is_the_one_sent(void **state)
{
    (void)state;
    const char *examples[] = {"saas-control-plane", "auction-mixes", "leaderboard", "ecommerce-single-table", "order-response"};
    int checked = 0;
    for (size_t x = 0; x < sizeof examples / sizeof examples[0]; x++) {
        char path[256];
        snprintf(path, sizeof path, "examples/%s/model.json", examples[x]);
        kp_model *m = load(path);
        kp_design *d = propose(m);
        const ddb_layout *L = d->layout;
        for (size_t i = 0; i < d->plan_count; i++) {
            const kp_plan *plan = &d->plans[i];
            const ddb_fetch *f = L->roots[plan->pattern->index];
            if (!f || f->kind != DDB_QUERY || f->is_scan || plan->op_count == 0) continue;
            kp_error err;
            ddb_request_ctx ctx = {.pattern = plan->pattern, .params = NULL, .table = L->table, .err = &err};
            cJSON *req = kp_ddb_query_request(&ctx, f, "PK", f->header != NULL, 0);
            assert_non_null(req);
            const char *cond = plan->ops[0].condition;
            const char *key = cJSON_GetObjectItem(req, "KeyConditionExpression")->valuestring;
            for (const cJSON *v = cJSON_GetObjectItem(req, "ExpressionAttributeValues")->child; v; v = v->next) {
                const char *text = v->child->valuestring;
                if (strcmp(text, "PK") == 0 || strchr(text, '<') || !strstr(key, v->string)) continue;
                char quoted[512];
                snprintf(quoted, sizeof quoted, "\"%s\"", text);
                if (!strstr(cond, quoted)) fail_msg("%s %s: the plan says \"%s\", the request sends %s", examples[x],
                                                    plan->pattern->name, cond, quoted);
                checked++;
            }
            int sends_between = strstr(key, "BETWEEN") != NULL, says_between = strstr(cond, "BETWEEN") != NULL;
            int sends_prefix = strstr(key, "begins_with") != NULL, says_prefix = strstr(cond, "begins_with") != NULL;
            assert_int_equal(sends_between, says_between);
            assert_int_equal(sends_prefix, says_prefix);
            cJSON_Delete(req);
        }
        kp_design_free(d);
        kp_model_free(m);
    }
    assert_true(checked >= 10);
}

static void test_list_projects_newest_is_one_query_descending_with_the_header(void **state)
{
    (void)state;
    kp_model *m = load("examples/saas-control-plane/model.json");
    kp_design *d = propose(m);
    const kp_plan *p = plan_of(d, "list-projects-newest");
    assert_int_equal(p->op_count, 1);
    assert_string_equal(p->ops[0].op, "Query");
    assert_true(p->requests == 1);
    assert_int_equal(p->sequential_steps, 1);
    assert_non_null(strstr(p->ops[0].condition, "BETWEEN \"PROJECT!\" AND \"PROJECT$\""));
    const ddb_layout *L = d->layout;
    const ddb_fetch *root = L->roots[kp_model_pattern(m, "list-projects-newest")->index];
    assert_false(root->is_forward);               /* ScanIndexForward = false */
    assert_non_null(root->header);
    assert_string_equal(root->header_sk, "PROJECT$");
    assert_int_equal(root->limit, 20);
    assert_true(root->is_server_ordered);
    kp_design_free(d);
    kp_model_free(m);
}

static void test_active_projects_use_a_sparse_sharded_gsi(void **state)
{
    (void)state;
    kp_model *m = load("examples/saas-control-plane/model.json");
    kp_design *d = propose(m);
    const kp_plan *p = plan_of(d, "list-active-projects");
    assert_string_equal(p->ops[0].op, "Query");
    assert_string_equal(p->ops[0].index, "GSI1");
    assert_int_equal(p->sequential_steps, 1);
    assert_true(p->requests == 10); /* the model's shards hint: scatter-gather */
    int sparse = 0;
    for (size_t i = 0; i < d->containers[0].index_count; i++) sparse |= d->containers[0].indexes[i].is_sparse;
    assert_true(sparse);
    assert_int_equal(d->defect_count, 0);
    kp_design_free(d);
    kp_model_free(m);
}

static void test_one_order_with_its_items_is_one_query_on_the_inverted_index(void **state)
{
    (void)state;
    kp_model *m = load("examples/ecommerce-single-table/model.json");
    kp_design *d = propose(m);
    const kp_plan *p = plan_of(d, "order-with-items");
    assert_int_equal(p->op_count, 1);
    assert_string_equal(p->ops[0].op, "Query");
    assert_string_equal(p->ops[0].index, "GSI1");
    assert_non_null(strstr(p->ops[0].condition, "GSI1PK = ORDER#<orderId>"));
    const kp_plan *u = plan_of(d, "user-orders");
    assert_int_equal(u->sequential_steps, 1);
    assert_true(u->requests == 1);
    const kp_plan *l = plan_of(d, "login-by-email");
    assert_non_null(strstr(l->ops[0].condition, "USER#EMAIL#<email>"));
    kp_design_free(d);
    kp_model_free(m);
}

/* Issue #14, header reads: a 1:1 the header's children read by the header's own key (an
 * order's shipment) rides in the header's collection on the GSI, just after the header, so
 * the order screen is one Query; where its writes outweigh the reads saved it is read by key. */
static void test_a_one_to_one_read_by_the_headers_key_rides_with_the_header(void **state)
{
    (void)state;
    kp_model *m = load("examples/order-response/model.json");
    kp_design *d = propose(m);
    const kp_plan *p = plan_of(d, "order-detail");
    assert_int_equal(p->op_count, 1);
    assert_string_equal(p->ops[0].op, "Query");
    assert_string_equal(p->ops[0].index, "GSI1");
    assert_true(p->requests_max == 1);
    assert_non_null(strstr(p->ops[0].why, "the Order header, its Shipment and the first OrderItem items"));
    int rides = 0;
    for (size_t k = 0; k < d->decision_count; k++)
        rides |= !strcmp(d->decisions[k].subject, "GSI1 Shipment rider") &&
                 strstr(d->decisions[k].choice, "GSI1PK=ORDER#<orderId>, GSI1SK=\"ORDERITEM!SHIPMENT\"") != NULL;
    assert_true(rides);
    /* the Shipment item carries the rider's keys */
    kp_dataset *data;
    kp_error err;
    assert_int_equal(kp_dataset_new(m, &data, &err), 0);
    const char *us = "{\"userId\":\"u-1\",\"name\":\"Ada\",\"country\":\"FR\",\"createdAt\":\"2025-01-02T00:00:00.000Z\"}\n";
    const char *od = "{\"orderId\":\"o-1\",\"userId\":\"u-1\",\"status\":\"SHIPPED\",\"placedAt\":\"2026-01-01T00:00:00.000Z\","
                     "\"day\":\"2026-01-01\",\"total\":1200}\n";
    const char *sh = "{\"orderId\":\"o-1\",\"carrier\":\"UPS\",\"invoice\":\"INV-1\",\"shippedAt\":\"2026-01-02T00:00:00.000Z\"}\n";
    if (kp_dataset_add_ndjson(data, kp_model_entity(m, "User"), "us", us, strlen(us), &err) ||
        kp_dataset_add_ndjson(data, kp_model_entity(m, "Order"), "od", od, strlen(od), &err) ||
        kp_dataset_add_ndjson(data, kp_model_entity(m, "Shipment"), "sh", sh, strlen(sh), &err) || kp_dataset_finish(data, &err))
        fail_msg("data: %s", err.message);
    size_t n;
    kp_record *const *shipments = kp_dataset_records(data, kp_model_entity(m, "Shipment"), &n);
    kp_item_list items = {0};
    assert_int_equal(kp_dynamodb_backend.transform(d, data, shipments[0], &items, &err), 0);
    const cJSON *body = items.items[0].body;
    assert_string_equal(cJSON_GetObjectItem(cJSON_GetObjectItem(body, "GSI1PK"), "S")->valuestring, "ORDER#o-1");
    assert_string_equal(cJSON_GetObjectItem(cJSON_GetObjectItem(body, "GSI1SK"), "S")->valuestring, "ORDERITEM!SHIPMENT");
    kp_item_list_free(&items);
    kp_dataset_free(data);
    kp_design_free(d);
    kp_model_free(m);
    /* at 40 order screens a second against 100 shipment writes, the shipment is read by key */
    m = load_edited("examples/order-response/model.json", "\"rps\": 400,", "\"rps\": 40, ");
    d = propose(m);
    p = plan_of(d, "order-detail");
    assert_int_equal(p->op_count, 2);
    int declined = 0;
    for (size_t k = 0; k < d->decision_count; k++)
        declined |= !strcmp(d->decisions[k].subject, "GSI1 Shipment rider") &&
                    strstr(d->decisions[k].choice, "read by key after the Order header") != NULL;
    assert_true(declined);
    kp_design_free(d);
    kp_model_free(m);
}

/* A reference's key text is its target's: hotel-reservations' Room.roomNumber declares 100..9999
 * (four digits in a key), Amenity.roomNumber, which references it, declares no range; the
 * Amenity items must still live in their Room's partition, or the header Query of
 * room-amenities finds no Room item there. */
static void test_a_reference_keys_its_childs_partition_as_its_parent_does(void **state)
{
    (void)state;
    kp_model *m = load("examples/hotel-reservations/model.json");
    kp_design *d = propose(m);
    kp_dataset *data;
    kp_error err;
    assert_int_equal(kp_dataset_new(m, &data, &err), 0);
    const char *ho = "{\"id\":\"h-1\",\"name\":\"Azur\",\"phone\":\"+33 1 00 00 00\",\"address\":{\"street\":\"1 rue\","
                     "\"city\":\"Nice\",\"stateOrProvince\":\"PACA\",\"postalCode\":\"06000\",\"country\":\"FR\"}}\n";
    const char *ro = "{\"hotelId\":\"h-1\",\"roomNumber\":22,\"rate\":120,\"roomType\":\"DOUBLE\"}\n";
    const char *am = "{\"hotelId\":\"h-1\",\"roomNumber\":22,\"name\":\"minibar\",\"description\":\"cold\"}\n";
    if (kp_dataset_add_ndjson(data, kp_model_entity(m, "Hotel"), "ho", ho, strlen(ho), &err) ||
        kp_dataset_add_ndjson(data, kp_model_entity(m, "Room"), "ro", ro, strlen(ro), &err) ||
        kp_dataset_add_ndjson(data, kp_model_entity(m, "Amenity"), "am", am, strlen(am), &err) || kp_dataset_finish(data, &err))
        fail_msg("data: %s", err.message);
    const char *pks[2];
    const char *names[2] = {"Room", "Amenity"};
    kp_item_list items[2] = {{0}, {0}};
    for (int i = 0; i < 2; i++) {
        size_t n;
        kp_record *const *recs = kp_dataset_records(data, kp_model_entity(m, names[i]), &n);
        assert_int_equal(n, 1);
        assert_int_equal(kp_dynamodb_backend.transform(d, data, recs[0], &items[i], &err), 0);
        pks[i] = cJSON_GetObjectItem(cJSON_GetObjectItem(items[i].items[0].body, "PK"), "S")->valuestring;
    }
    assert_string_equal(pks[0], "ROOM#h-1#0022");
    assert_string_equal(pks[1], pks[0]);
    assert_string_equal(cJSON_GetObjectItem(cJSON_GetObjectItem(items[0].items[0].body, "SK"), "S")->valuestring, "AMENITY!");
    kp_item_list_free(&items[0]);
    kp_item_list_free(&items[1]);
    assert_true(plan_of(d, "room-amenities")->requests_max == 1);
    kp_dataset_free(data);
    kp_design_free(d);
    kp_model_free(m);
}

/* Issue #14, N+1 and round trips: line-invoice reaches the shipment of a line's order; the
 * line already holds the order's key, which is all the shipment's read needs, so the order
 * is not read and the shipment's read, keyed by the parameters, goes beside the line's. A
 * pattern that returns something of the order still reads it. */
static void test_a_hop_read_only_for_its_key_is_not_read(void **state)
{
    (void)state;
    kp_model *m = load("examples/order-response/model.json");
    kp_design *d = propose(m);
    const kp_plan *p = plan_of(d, "line-invoice");
    assert_int_equal(p->op_count, 2);
    assert_string_equal(p->ops[0].op, "GetItem");
    assert_string_equal(p->ops[1].op, "Query");
    assert_non_null(strstr(p->ops[1].condition, "SK = \"SHIPMENT\""));
    assert_int_equal(p->ops[1].step, 1);
    assert_int_equal(p->sequential_steps, 1);
    int skipped = 0;
    for (size_t k = 0; k < d->decision_count; k++)
        skipped |= !strcmp(d->decisions[k].subject, "OrderItem.order on the way") &&
                   strstr(d->decisions[k].choice, "no read of the Order item") != NULL;
    assert_true(skipped);
    /* shipped-lines: the order is found on GSI1 by its key, its shipped lines by the same key
     * on LSI1: the parameters key both, one round trip */
    p = plan_of(d, "shipped-lines");
    assert_int_equal(p->op_count, 2);
    assert_int_equal(p->ops[1].step, 1);
    assert_int_equal(p->sequential_steps, 1);
    kp_design_free(d);
    kp_model_free(m);
    m = load_edited("examples/order-response/model.json", "\"OrderItem.productName\"", "\"order.placedAt\"       ");
    d = propose(m);
    p = plan_of(d, "line-invoice");
    assert_int_equal(p->op_count, 3);
    assert_int_equal(p->sequential_steps, 3);
    for (size_t k = 0; k < d->decision_count; k++) assert_string_not_equal(d->decisions[k].subject, "OrderItem.order on the way");
    kp_design_free(d);
    kp_model_free(m);
}

/* Issue #14, copies over arrays of references: auction's view-item returns its tags' names;
 * each Item item holds them as a list beside tagIds, in the array's order, so the page is one
 * Query. Taken only where no write renames or deletes a tag: an array's copies are rewritten
 * with the items that hold them alone. */
static void test_an_array_of_references_copies_the_names_its_page_returns(void **state)
{
    (void)state;
    kp_model *m = load("examples/auction-mixes/model.json");
    kp_design *d = propose(m);
    kp_dataset *data;
    kp_error err;
    assert_int_equal(kp_dataset_new(m, &data, &err), 0);
    const char *tags = "{\"id\":\"t-red\",\"name\":\"Red\"}\n{\"id\":\"t-old\",\"name\":\"Vintage\"}\n";
    if (kp_dataset_add_ndjson(data, kp_model_entity(m, "Tag"), "tags", tags, strlen(tags), &err)) fail_msg("%s", err.message);
    size_t n;
    kp_dataset_records(data, kp_model_entity(m, "Tag"), &n);
    assert_int_equal(n, 2);
    /* an item naming both tags, the second first: its list follows the array's order */
    kp_record item = {.entity = kp_model_entity(m, "Item")};
    item.object = cJSON_Parse("{\"id\":\"i-1\",\"title\":\"Lamp\",\"tagIds\":[\"t-old\",\"t-red\"]}");
    kp_item_list items = {0};
    assert_int_equal(kp_dynamodb_backend.transform(d, data, &item, &items, &err), 0);
    const cJSON *list = cJSON_GetObjectItem(cJSON_GetObjectItem(items.items[0].body, "tags.name"), "L");
    assert_int_equal(cJSON_GetArraySize(list), 2);
    assert_string_equal(cJSON_GetObjectItem(cJSON_GetArrayItem(list, 0), "S")->valuestring, "Vintage");
    assert_string_equal(cJSON_GetObjectItem(cJSON_GetArrayItem(list, 1), "S")->valuestring, "Red");
    kp_item_list_free(&items);
    cJSON_Delete(item.object);
    kp_dataset_free(data);
    kp_design_free(d);
    kp_model_free(m);
    /* a write that deletes tags (the copies would outlive them): not taken, and said why */
    m = load_edited("examples/auction-mixes/model.json", "\"entity\": \"Category\",", "\"entity\": \"Tag\",     ");
    d = propose(m);
    assert_true(plan_of(d, "view-item")->requests == 2);
    int declined = 0;
    for (size_t k = 0; k < d->decision_count; k++)
        declined |= !strcmp(d->decisions[k].subject, "Item.tags") && strstr(d->decisions[k].why, "does not keep in step") != NULL;
    assert_true(declined);
    kp_design_free(d);
    kp_model_free(m);
}

static void test_leaderboard_is_one_query_each_with_a_zero_padded_rating(void **state)
{
    (void)state;
    kp_model *m = load("examples/leaderboard/model.json");
    kp_design *d = propose(m);
    const kp_plan *top = plan_of(d, "season-top");
    assert_int_equal(top->op_count, 1);
    assert_true(top->requests == 1);
    const ddb_layout *L = d->layout;
    const ddb_fetch *root = L->roots[kp_model_pattern(m, "season-top")->index];
    assert_false(root->is_forward);
    /* the rating is zero-padded to its declared range (max 3000: 4 digits) */
    int width = 0;
    for (size_t i = 0; i < root->placement->sk.count; i++)
        if (root->placement->sk.segs[i].attr && strcmp(root->placement->sk.segs[i].attr->name, "rating") == 0)
            width = root->placement->sk.segs[i].width;
    assert_int_equal(width, 4);
    const kp_plan *handle = plan_of(d, "player-by-handle");
    assert_string_equal(handle->ops[0].op, "Query");
    assert_non_null(handle->ops[0].index);
    const kp_plan *recent = plan_of(d, "recent-matches");
    assert_int_equal(recent->op_count, 1);
    assert_false(L->roots[kp_model_pattern(m, "recent-matches")->index]->is_forward);
    kp_design_free(d);
    kp_model_free(m);
}

static void test_orders_of_a_day_use_a_gsi_and_recent_orders_one_query(void **state)
{
    (void)state;
    kp_model *m = load("examples/order-response/model.json");
    kp_design *d = propose(m);
    const kp_plan *day = plan_of(d, "orders-of-day");
    assert_string_equal(day->ops[0].op, "Query");
    assert_non_null(day->ops[0].index);
    assert_int_equal(day->sequential_steps, 1);
    const kp_plan *recent = plan_of(d, "user-recent-orders");
    assert_int_equal(recent->op_count, 1);
    assert_string_equal(recent->ops[0].op, "Query");
    kp_design_free(d);
    kp_model_free(m);
}

/* Issue #14, "N:M held as an array of references -> Scan": items-by-tag walks Item.tagIds
 * backwards. The layout holds an adjacency list: each Item writes one item per distinct tag
 * into the tag's partition, sorted by endsAt as the listing declares and holding what it
 * reads — one Query per page, no Scan, no defect; the writes of an Item claim them. */
static void test_a_walk_back_through_an_array_reads_an_adjacency_list(void **state)
{
    (void)state;
    kp_model *m = load("examples/auction-mixes/model.json");
    kp_design *d = propose(m);
    const kp_plan *p = plan_of(d, "items-by-tag");
    assert_false(p->is_scan);
    assert_int_equal(p->sequential_steps, 1);
    for (size_t i = 0; i < p->op_count; i++) assert_false(p->ops[i].is_scan);
    assert_true(p->items < 100);
    for (size_t i = 0; i < d->defect_count; i++) assert_null(strstr(d->defects[i], "items-by-tag"));
    const ddb_layout *L = d->layout;
    const ddb_entity *item = &L->entities[kp_model_entity(m, "Item")->index];
    assert_int_equal(item->element_count, 1);
    const ddb_placement *el = &item->element_items[0];
    assert_string_equal(el->elements->relation->array_attr->name, "tagIds");
    assert_true(el->hold_count >= 4 && el->hold_count < kp_model_entity(m, "Item")->attr_count);
    for (size_t w = 0; w < m->write_count; w++) {
        if (strcmp(m->writes[w]->name, "list-item")) continue;
        int claimed = 0;
        for (size_t i = 0; i < d->write_plans[w].touch_count; i++)
            claimed |= strstr(d->write_plans[w].touches[i].what, "element items") != NULL && d->write_plans[w].touches[i].count == 3.0;
        assert_true(claimed);
    }
    /* an Item with tags [t1, t2, t1] becomes its item and two element items */
    kp_dataset *data = NULL;
    kp_error err;
    assert_int_equal(kp_dataset_new(m, &data, &err), 0);
    const char *user = "{\"id\":\"00000000-0000-4000-8000-000000000001\",\"nickname\":\"ada\",\"name\":\"Ada\",\"region\":\"x\",\"rating\":1,"
                       "\"createdAt\":\"2024-01-01T00:00:00.000Z\"}\n";
    assert_int_equal(kp_dataset_add_ndjson(data, kp_model_entity(m, "User"), "u.ndjson", user, strlen(user), &err), 0);
    const char *tags = "{\"id\":\"t1\",\"name\":\"one\"}\n{\"id\":\"t2\",\"name\":\"two\"}\n";
    assert_int_equal(kp_dataset_add_ndjson(data, kp_model_entity(m, "Tag"), "t.ndjson", tags, strlen(tags), &err), 0);
    const char *it = "{\"id\":\"00000000-0000-4000-8000-000000000002\",\"sellerId\":\"00000000-0000-4000-8000-000000000001\","
                     "\"sellerName\":\"Ada\",\"title\":\"a lamp\",\"description\":\"d\",\"imageUrls\":[],\"tagIds\":[\"t1\",\"t2\",\"t1\"],"
                     "\"initialPrice\":1,\"currentPrice\":1,\"quantity\":1,\"startsAt\":\"2025-02-01T00:00:00.000Z\","
                     "\"endsAt\":\"2025-03-01T00:00:00.000Z\",\"bidCount\":0}\n";
    if (kp_dataset_add_ndjson(data, kp_model_entity(m, "Item"), "i.ndjson", it, strlen(it), &err) || kp_dataset_finish(data, &err))
        fail_msg("%s", err.message);
    size_t n;
    kp_record *const *recs = kp_dataset_records(data, kp_model_entity(m, "Item"), &n);
    assert_int_equal(n, 1);
    cJSON *items = cJSON_CreateArray();
    assert_int_equal(kp_ddb_items_for(d, data, recs[0], items, &err), 0);
    assert_int_equal(cJSON_GetArraySize(items), 3);
    const cJSON *e1 = cJSON_GetArrayItem(items, 1);
    assert_non_null(strstr(cJSON_GetObjectItem(cJSON_GetObjectItem(e1, "PK"), "S")->valuestring, "t1"));
    assert_non_null(strstr(cJSON_GetObjectItem(cJSON_GetObjectItem(e1, "SK"), "S")->valuestring, "2025-03-01"));
    assert_non_null(cJSON_GetObjectItem(e1, "title"));
    assert_null(cJSON_GetObjectItem(e1, "description")); /* only what the listing reads */
    assert_non_null(strstr(cJSON_GetObjectItem(cJSON_GetArrayItem(items, 2), "PK")->child->valuestring, "t2"));
    cJSON_Delete(items);
    kp_dataset_free(data);
    kp_design_free(d);
    kp_model_free(m);
}

/* A listing the client must sort is read without Limit, so the plan claims the whole key
 * range, not the page, and its per-page bound is what the range can hold; the count is an
 * estimate, not exact (every-feature's messages-by-surname: its index is keyed by the
 * author's surname, which each message copies, and a prefix of that copy filters it). A listing read in its order with a FilterExpression keeps
 * its Limit and reads pages until the page matches (issue #14, admin-report: its order's
 * first part is optional — reservePrice, nulls first — and now in the index's sort key):
 * the claim is the page over the share that matches, the bound the whole key range. */
static void test_a_client_sorted_listing_claims_the_whole_partition_it_reads(void **state)
{
    (void)state;
    kp_model *m = load("tests/fixtures/models/every-feature.json");
    kp_design *d = propose(m);
    const kp_plan *p = plan_of(d, "messages-by-surname");
    const kp_operation *query = NULL;
    for (size_t i = 0; i < p->op_count; i++)
        if (strcmp(p->ops[i].op, "Query") == 0) query = &p->ops[i];
    assert_non_null(query);
    assert_true(query->items > 1000);
    assert_non_null(strstr(query->why, "reads every item of the key range"));
    assert_false(p->is_requests_exact);
    assert_true(p->items_max >= p->items && p->bytes_max >= p->bytes && p->requests_max >= p->requests);
    /* the condition through the author (author.surname) is the message's copy of it: the
     * index partition, not a FILTER over every message; a rename moves the copy, so each of
     * the author's messages has its entry in that index deleted and put */
    assert_non_null(strstr(query->condition, "GSI2PK = MESSAGE#<authorName>"));
    assert_null(strstr(query->condition, "authorName = "));
    /* User.authored's average fan-out, each deleted and put */
    assert_true(kp_test_touched(d, "rename", "GSI2 entry of the copying Message items (its key moves: deleted and put)") == 2 * 20.0);
    kp_design_free(d);
    kp_model_free(m);

    m = load("examples/auction-mixes/model.json");
    d = propose(m);
    p = plan_of(d, "admin-report");
    query = NULL;
    for (size_t i = 0; i < p->op_count; i++)
        if (strcmp(p->ops[i].op, "Query") == 0) query = &p->ops[i];
    assert_non_null(query);
    assert_non_null(strstr(query->why, "pages of 100 evaluated items"));
    assert_true(query->items >= 100 && query->items < 1000); /* the page over the half assumed to match */
    assert_true(query->items_max >= 1000000);                 /* at most the whole bidCount = 0 range */
    assert_true(query->requests >= 2 && query->requests_max > 1000);
    assert_false(p->is_requests_exact);
    const ddb_layout *L = d->layout;
    const ddb_entity *item = &L->entities[kp_model_entity(m, "Item")->index];
    int keyed = 0;
    for (size_t i = 0; i < item->placement_count; i++)
        for (size_t k = 0; k < item->placements[i].sk.count; k++) {
            const ddb_segment *seg = &item->placements[i].sk.segs[k];
            keyed |= seg->attr && !strcmp(seg->attr->name, "reservePrice") && seg->null_text != NULL;
        }
    assert_true(keyed);                                        /* nulls sort at the end the order wants */
    kp_design_free(d);
    kp_model_free(m);
}

/* A child listed in its base sort key's order with a range on that key's first attribute (a
 * hotel's room nights between two dates, SK=ROOMNIGHT#<date>#<roomNumber>) is one Query of
 * the collection with the range as a key condition: no local index copying the same sort
 * key (and bounding the collection to 10 GB). */
static void test_a_range_the_base_sort_key_holds_needs_no_local_index(void **state)
{
    (void)state;
    kp_model *m = load("examples/hotel-reservations/model.json");
    kp_design *d = propose(m);
    const ddb_layout *L = d->layout;
    assert_int_equal((int)L->lsi_count, 0);
    const kp_plan *p = plan_of(d, "available-rooms");
    const kp_operation *q = NULL;
    for (size_t i = 0; i < p->op_count; i++)
        if (!strcmp(p->ops[i].op, "Query")) q = &p->ops[i];
    assert_non_null(q);
    assert_null(q->index);
    assert_non_null(strstr(q->condition, "SK BETWEEN ROOMNIGHT#<from> AND ROOMNIGHT#<to>$"));
    kp_design_free(d);
    kp_model_free(m);
}

/* An N:M listing of the targets' attributes ordered by their key, which the join items hold
 * in their sort key (hotels near a point of interest, by hotel id): the join items' Query
 * reads the page in that order (Limit, paged with its own key), then one BatchGetItem of
 * those hotels, kept in the page's order. It read every join item and every hotel before,
 * and sorted in the client (601 items at most for a page of 50). Where the join items copy
 * what the listing returns, the Query alone answers it. */
static void test_a_join_in_its_listings_order_reads_one_page_of_targets(void **state)
{
    (void)state;
    /* hotels renamed too often to copy (tests/fixtures/models/join-pages.json): the page of
     * join items, then a BatchGetItem of its hotels */
    kp_model *m = load("tests/fixtures/models/join-pages.json");
    kp_design *d = propose(m);
    const kp_plan *p = plan_of(d, "hotels-near-poi");
    assert_int_equal((int)p->op_count, 3);
    assert_string_equal(p->ops[1].op, "Query");
    assert_string_equal(p->ops[2].op, "BatchGetItem");
    assert_true(p->items_max <= 1 + 2 + 2);
    for (size_t i = 0; i < p->op_count; i++) assert_null(strstr(p->ops[i].condition, "sorted in the client"));
    /* a point's description, rarely changed, is copied into the join items: their page answers
     * the listing, and describing a point puts again each join item that names it (5 on
     * average) with its index entry */
    p = plan_of(d, "pois-near-hotel");
    assert_int_equal((int)p->op_count, 2);
    assert_string_equal(p->ops[1].op, "Query");
    const kp_write_plan *wp = &d->write_plans[kp_model_write(m, "describe-poi")->index];
    assert_true(wp->requests > 5.9 && wp->requests < 6.1);
    assert_true(wp->items > 10.9 && wp->items < 11.1);
    kp_design_free(d);
    kp_model_free(m);
    /* the hotel example: no write changes a hotel, so its join items copy it */
    m = load("examples/hotel-reservations/model.json");
    d = propose(m);
    p = plan_of(d, "hotels-near-poi");
    assert_int_equal((int)p->op_count, 2);
    assert_string_equal(p->ops[1].op, "Query");
    assert_true(p->items_max <= 1 + 50 + 1);
    kp_design_free(d);
    kp_model_free(m);
}

/* A page whose header item comes back with its children in one Query copies what the page
 * returns of the header's own references into the header: auction's view-item reads no
 * Category item (no write renames a category), the blog's post-page no Author item (the
 * 2,000 reads a second saved outweigh the 40 posts a rename rewrites): one round trip where
 * a GetItem followed the Query. */
static void test_a_header_copies_what_its_page_reads_through_its_references(void **state)
{
    (void)state;
    kp_model *m = load("examples/auction-mixes/model.json");
    kp_design *d = propose(m);
    const kp_plan *p = plan_of(d, "view-item");
    for (size_t i = 0; i < p->op_count; i++) assert_null(strstr(p->ops[i].condition, "CATEGORY#"));
    /* and no Tag item: the tag names are copied as a list beside the array of tag ids */
    assert_true(p->requests == 1);
    int decided = 0, tags = 0;
    for (size_t k = 0; k < d->decision_count; k++) {
        decided |= !strcmp(d->decisions[k].subject, "Item.category") && strstr(d->decisions[k].choice, "copy Category.{name}");
        tags |= !strcmp(d->decisions[k].subject, "Item.tags") && strstr(d->decisions[k].choice, "copy Tag.{name}");
    }
    assert_true(decided);
    assert_true(tags);
    kp_design_free(d);
    kp_model_free(m);
    m = load("tests/fixtures/models/blog.json");
    d = propose(m);
    p = plan_of(d, "post-page");
    assert_int_equal((int)p->op_count, 1);
    assert_int_equal(p->sequential_steps, 1);
    assert_string_equal(p->ops[0].op, "Query");
    for (size_t k = 0; k < d->decision_count; k++)
        if (!strcmp(d->decisions[k].subject, "Post.author")) assert_non_null(strstr(d->decisions[k].why, "returned, 2000.0/s)"));
    kp_design_free(d);
    kp_model_free(m);
}

/* An atomic write of more items than a TransactWriteItems holds (100): checkout of orders of
 * 60 lines, each line and its product's stock. It cannot be all or nothing: a defect that
 * says so, and the plan claims what writes.c sends then, one request per item. */
static void test_an_atomic_write_above_a_transactions_items_is_a_defect(void **state)
{
    (void)state;
    kp_model *m = load_edited("examples/order-response/model.json", "\"rows\": 2.2", "\"rows\":  60");
    kp_design *d = propose(m);
    int said = 0;
    for (size_t i = 0; i < d->defect_count; i++) said |= strstr(d->defects[i], "'place-order' is atomic") != NULL;
    assert_true(said);
    const kp_write_plan *wp = &d->write_plans[kp_model_write(m, "place-order")->index];
    assert_null(strstr(wp->mechanism, "TransactWriteItems"));
    assert_true(wp->requests > 100);
    /* the model as it stands (2.2 lines an order) fits one transaction */
    kp_design_free(d);
    kp_model_free(m);
    m = load("examples/order-response/model.json");
    d = propose(m);
    wp = &d->write_plans[kp_model_write(m, "place-order")->index];
    assert_non_null(strstr(wp->mechanism, "TransactWriteItems"));
    assert_true(wp->requests == 1);
    /* verify evaluates the write requests on an operation's records: one transaction whatever
     * they are; where the server has none (dynalite), one put per item: an order, its 3 lines
     * and their 3 products (the index entries are not requests) */
    double changed[16] = {0};
    assert_true(m->entity_count <= 16);
    changed[kp_model_entity(m, "Order")->index] = 1;
    changed[kp_model_entity(m, "OrderItem")->index] = 3;
    changed[kp_model_entity(m, "Product")->index] = 3;
    kp_write_measure on = {.changed = changed};
    assert_true(kp_write_plan_requests_for(wp, &on) == 1);
    on.without_transaction = 1;
    assert_true(fabs(kp_write_plan_requests_for(wp, &on) - 7) < 1e-9);
    assert_true(wp->read_requests == 0);
    kp_design_free(d);
    kp_model_free(m);
}

/* A Query (COUNT) reads every item it counts, in pages of 1 MB like any Query (it follows
 * LastEvaluatedKey to the end: execute.c): counting a streamer's 1.5 million followers is
 * hundreds of requests at the bound, not one. */
static void test_a_count_claims_the_pages_it_reads_to_the_end(void **state)
{
    (void)state;
    /* the leaderboard with follows written so often that keeping the count on the player
     * costs more than counting (core/kept_counts.c): the profile counts */
    kp_model *m = load_edited("examples/leaderboard/model.json", "\"rps\": 30,", "\"rps\":9e9,");
    for (size_t i = 0; i < m->entity_count; i++)
        for (size_t a = 0; a < m->entities[i]->attr_count; a++) assert_false(m->entities[i]->attrs[a]->is_kept);
    kp_design *d = propose(m);
    const kp_plan *p = plan_of(d, "player-profile");
    const kp_operation *count = NULL;
    for (size_t i = 0; i < p->op_count; i++)
        if (strcmp(p->ops[i].op, "Query (COUNT)") == 0 && strstr(p->ops[i].condition, "followeeId")) count = &p->ops[i];
    assert_non_null(count);
    assert_true(count->items_max >= 1500000);
    double pages = 0;
    for (size_t i = 0; i < p->op_count; i++) pages += p->ops[i].requests_max;
    /* 1.5 million Follow items of about 140 bytes: 200 MB, 1 MB a page */
    assert_true(count->requests_max > 100);
    assert_true(p->requests_max >= pages - 0.5 && p->requests_max > 100);
    assert_true(count->requests >= 1 && count->requests < 5); /* the average follower count fits one page */
    kp_design_free(d);
    kp_model_free(m);

    /* as the model stands, the counts are kept on the player: the profile is one GetItem */
    m = load("examples/leaderboard/model.json");
    d = propose(m);
    p = plan_of(d, "player-profile");
    assert_int_equal((int)p->op_count, 1);
    assert_string_equal(p->ops[0].op, "GetItem");
    assert_true(p->requests_max == 1 && p->items_max == 1);
    /* the followers' join items are keyed by the player the parameters give: their Query
     * goes with the player's GetItem, in the first round trip; and they hold the follower
     * ids the page returns, in id order: no BatchGetItem of the players, a page of 100 */
    p = plan_of(d, "followers");
    assert_true(p->op_count == 2 && !strcmp(p->ops[1].op, "Query") && !p->ops[1].waits_for_previous);
    assert_int_equal(p->ops[1].step, 1);
    assert_true(p->requests_max == 2 && p->items_max <= 101);
    assert_null(strstr(p->ops[1].condition, "client"));
    kp_design_free(d);
    kp_model_free(m);
}

/* A child keyed (parent, commenter, time) and listed by time (issue #14, "key order and
 * local indexes"): the base sort key puts the time first — SK=COMMENT#<createdAt>#<authorId>
 * — so no LSI (and no 10 GB bound) is needed. Two leaves through one relation (post.id,
 * post.title) need no read of the post: the join item holds its key and a copy of the title. */
static void test_the_base_sort_key_follows_the_listing_and_a_relation_is_read_once(void **state)
{
    (void)state;
    kp_model *m = load("tests/fixtures/models/blog.json");
    kp_design *d = propose(m);
    const ddb_layout *L = d->layout;
    const ddb_entity *comment = NULL;
    for (size_t i = 0; i < L->entity_count; i++)
        if (!strcmp(L->entities[i].entity->name, "Comment")) comment = &L->entities[i];
    assert_non_null(comment);
    const ddb_format *sk = &comment->placements[0].sk;
    const kp_attr *first = NULL;
    for (size_t i = 0; i < sk->count && !first; i++) first = sk->segs[i].attr;
    assert_non_null(first);
    assert_string_equal(first->name, "createdAt");
    for (size_t i = 0; i < comment->placement_count; i++)
        assert_int_not_equal(comment->placements[i].index->kind, DDB_LSI);
    /* the tag's page holds a copy of each post's title (decision "PostTag.post": 400 reads of
     * 20 posts a second saved, 6 rewrites a second when a title changes): the posts, read
     * once each through their index entry before, are not read at all */
    const kp_plan *p = plan_of(d, "posts-by-tag");
    assert_true(p->requests == 1.0);
    assert_int_equal((int)p->op_count, 1);
    assert_int_equal(p->sequential_steps, 1);
    kp_design_free(d);
    kp_model_free(m);
}

/* Issue #14, N+1 reads of referenced attributes, on DynamoDB: a Bid item holds a copy of
 * its bidder's nickname (no write changes it), so item-bids is one Query in one round trip
 * (it was a Query, then a BatchGetItem of the bidders); a write that changes a copied
 * attribute claims the items it rewrites (the blog's rename-author). */
static void test_a_referenced_attribute_is_copied_into_the_referencing_items(void **state)
{
    (void)state;
    kp_model *m = load("examples/auction-mixes/model.json");
    kp_design *d = propose(m);
    const kp_plan *p = plan_of(d, "item-bids");
    assert_int_equal(p->sequential_steps, 1);
    for (size_t i = 0; i < p->op_count; i++) assert_string_not_equal(p->ops[i].op, "BatchGetItem");
    const ddb_layout *L = d->layout;
    const ddb_entity *bid = &L->entities[kp_model_entity(m, "Bid")->index];
    int copies_nickname = 0;
    for (size_t i = 0; i < bid->copy_count; i++) copies_nickname |= !strcmp(bid->copies[i].name, "bidder.nickname");
    assert_true(copies_nickname);
    kp_design_free(d);
    kp_model_free(m);

    m = load("tests/fixtures/models/blog.json");
    d = propose(m);
    /* Author.written's average fan-out */
    assert_true(kp_test_touched(d, "rename-author", "copy of Author.name in the Comment items") == 320.0);
    /* a Comment item holds its commenter's name, from the data it is made with */
    kp_dataset *data = NULL;
    kp_error err;
    assert_int_equal(kp_dataset_new(m, &data, &err), 0);
    const char *author = "{\"id\":\"00000000-0000-4000-8000-000000000002\",\"handle\":\"ada\",\"name\":\"Ada\",\"joinedAt\":\"2024-01-01T00:00:00.000Z\"}\n";
    const char *post = "{\"id\":\"00000000-0000-4000-8000-000000000001\",\"authorId\":\"00000000-0000-4000-8000-000000000002\","
                       "\"title\":\"t\",\"body\":\"b\",\"publishedAt\":\"2024-01-01T00:00:00.000Z\",\"commentCount\":1}\n";
    const char *comment = "{\"postId\":\"00000000-0000-4000-8000-000000000001\",\"authorId\":\"00000000-0000-4000-8000-000000000002\","
                          "\"createdAt\":\"2024-01-02T00:00:00.000Z\",\"text\":\"hi\"}\n";
    assert_int_equal(kp_dataset_add_ndjson(data, kp_model_entity(m, "Author"), "a.ndjson", author, strlen(author), &err), 0);
    assert_int_equal(kp_dataset_add_ndjson(data, kp_model_entity(m, "Post"), "p.ndjson", post, strlen(post), &err), 0);
    assert_int_equal(kp_dataset_add_ndjson(data, kp_model_entity(m, "Comment"), "c.ndjson", comment, strlen(comment), &err), 0);
    if (kp_dataset_finish(data, &err)) fail_msg("%s", err.message);
    size_t n;
    kp_record *const *recs = kp_dataset_records(data, kp_model_entity(m, "Comment"), &n);
    assert_int_equal(n, 1);
    cJSON *item = NULL;
    assert_int_equal(kp_ddb_item_for(d, data, recs[0], &item, &err), 0);
    const cJSON *name = cJSON_GetObjectItem(cJSON_GetObjectItem(item, "commenter.name"), "S");
    assert_non_null(name);
    assert_string_equal(name->valuestring, "Ada");
    cJSON_Delete(item);
    kp_dataset_free(data);
    kp_design_free(d);
    kp_model_free(m);
}

/* The posts of a tag, newest first, 3 a page (tests/fixtures/models/bucketed-tags.json):
 * the join items copy each post's publishedAt and title, and an index on them is sorted by
 * the copied publishedAt, so one Query reads the page in order (the Cassandra
 * documentation's posts_by_tag as an index). It read every join item of the tag and each
 * post, and sorted in the client (up to 600,001 items at the declared 300,000 a tag). An
 * update of a post's publishedAt moves its join items' index entries: a delete and a put. */
static void test_a_join_ordered_by_its_targets_attribute_keys_an_index_by_the_copy(void **state)
{
    (void)state;
    kp_model *m = load("tests/fixtures/models/bucketed-tags.json");
    kp_design *d = propose(m);
    const kp_plan *p = plan_of(d, "posts-by-tag");
    assert_int_equal((int)p->op_count, 2);
    assert_string_equal(p->ops[1].op, "Query");
    assert_int_equal(p->sequential_steps, 1);
    assert_true(p->items_max <= 1 + 3 + 1);
    for (size_t i = 0; i < p->op_count; i++) assert_null(strstr(p->ops[i].condition, "sorted in the client"));
    const kp_write_plan *retime = &d->write_plans[kp_model_write(m, "retime-post")->index];
    const kp_write_plan *retitle = &d->write_plans[kp_model_write(m, "retitle-post")->index];
    assert_true(retime->items > retitle->items + 1.5); /* the same items, and each moved entry twice */

    /* the index key of a join item holds its post's publishedAt */
    kp_dataset *data = NULL;
    kp_error err;
    assert_int_equal(kp_dataset_new(m, &data, &err), 0);
    const char *post = "{\"id\":\"p00001\",\"title\":\"t\",\"publishedAt\":\"2024-03-01T10:00:00.000Z\"}\n";
    const char *tag = "{\"name\":\"go\"}\n";
    const char *join = "{\"tagName\":\"go\",\"postId\":\"p00001\"}\n";
    assert_int_equal(kp_dataset_add_ndjson(data, kp_model_entity(m, "Post"), "p.ndjson", post, strlen(post), &err), 0);
    assert_int_equal(kp_dataset_add_ndjson(data, kp_model_entity(m, "Tag"), "t.ndjson", tag, strlen(tag), &err), 0);
    assert_int_equal(kp_dataset_add_ndjson(data, kp_model_entity(m, "PostTag"), "j.ndjson", join, strlen(join), &err), 0);
    if (kp_dataset_finish(data, &err)) fail_msg("%s", err.message);
    size_t n;
    kp_record *const *recs = kp_dataset_records(data, kp_model_entity(m, "PostTag"), &n);
    assert_int_equal(n, 1);
    cJSON *item = NULL;
    assert_int_equal(kp_ddb_item_for(d, data, recs[0], &item, &err), 0);
    const cJSON *pk = cJSON_GetObjectItem(cJSON_GetObjectItem(item, "GSI1PK"), "S");
    const cJSON *sk = cJSON_GetObjectItem(cJSON_GetObjectItem(item, "GSI1SK"), "S");
    assert_non_null(pk);
    assert_non_null(sk);
    assert_string_equal(pk->valuestring, "TAG#go");
    assert_non_null(strstr(sk->valuestring, "2024-03-01T10:00:00"));
    assert_non_null(strstr(sk->valuestring, "#p00001"));
    cJSON_Delete(item);
    /* without the data the copy comes from, the item is not in the index */
    assert_int_equal(kp_ddb_item_for(d, NULL, recs[0], &item, &err), 0);
    assert_null(cJSON_GetObjectItem(item, "GSI1SK"));
    cJSON_Delete(item);
    kp_dataset_free(data);
    kp_design_free(d);
    kp_model_free(m);
}

/* An inverted text part reverses the oracle's bytewise order (kp_data_compare: strcmp),
 * prefixes and escaped bytes included, whatever follows it in the key. */
static void test_an_inverted_text_part_sorts_in_reverse(void **state)
{
    (void)state;
    kp_attr text = {.name = "sku", .type = {.kind = KP_T_STRING}};
    kp_attr id = {.name = "id", .type = {.kind = KP_T_STRING}};
    assert_true(kp_ddb_invertible(&text));
    ddb_segment segs[] = {{.literal = "L#"}, {.attr = &text, .is_inverted = 1}, {.literal = "#"}, {.attr = &id}};
    ddb_format f = {segs, sizeof segs / sizeof segs[0]};
    static const char alphabet[] = {'a', 'b', 'A', ' ', '#', '$', '%', '~', 'z', '0', (char)0xc3, (char)0xa9};
    uint64_t seed = 0x9e3779b97f4a7c15ULL;
    for (int round = 0; round < 2000; round++) {
        char v[2][8], ids[2][4];
        for (int k = 0; k < 2; k++) {
            seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
            int len = (int)((seed >> 33) % 5);
            for (int i = 0; i < len; i++) v[k][i] = alphabet[(seed >> (8 + 5 * i)) % sizeof alphabet];
            v[k][len] = '\0';
            snprintf(ids[k], sizeof ids[k], "%c", (int)('a' + (seed >> 40) % 3));
        }
        if (round % 7 == 0) snprintf(v[1], sizeof v[1], "%s", v[0]); /* equal: the next part decides */
        char key[2][128];
        for (int k = 0; k < 2; k++) {
            cJSON *o = cJSON_CreateObject();
            cJSON_AddStringToObject(o, "sku", v[k]);
            cJSON_AddStringToObject(o, "id", ids[k]);
            assert_int_equal(kp_ddb_format_value(&f, o, key[k], sizeof key[k]), 0);
            cJSON_Delete(o);
        }
        int by_value = strcmp(v[0], v[1]), by_key = strcmp(key[0], key[1]);
        if (by_value) assert_true((by_value < 0) == (by_key > 0));
        else assert_true((strcmp(ids[0], ids[1]) < 0) == (by_key < 0) && (by_key == 0) == (strcmp(ids[0], ids[1]) == 0));
    }
}

/* A page of a listing two 1:N hops away (order-response buy-again: the shipped lines of a
 * user's orders, newest first, then by SKU) is one Query on a sparse global index of the
 * lines, keyed by their copy of the order's userId: not a Query per order and a client sort. */
static void test_a_listing_two_hops_away_is_one_query_on_an_index_of_the_last(void **state)
{
    (void)state;
    kp_model *m = load("examples/order-response/model.json");
    kp_design *d = propose(m);
    const kp_plan *p = plan_of(d, "buy-again");
    assert_int_equal((int)p->op_count, 2);
    assert_int_equal(p->sequential_steps, 1);
    assert_string_equal(p->ops[1].op, "Query");
    assert_true(p->items_max <= 1 + 50);
    for (size_t i = 0; i < p->op_count; i++) assert_null(strstr(p->ops[i].why ? p->ops[i].why : "", "client"));
    /* the key: the user's partition, the SHIPPED range newest first, SKU ascending */
    kp_dataset *data = kp_test_order_lines(m, "SKU-A:SHIPPED,SKU-B:SHIPPED,SKU-C:PENDING");
    kp_error err;
    size_t n;
    kp_record *const *recs = kp_dataset_records(data, kp_model_entity(m, "OrderItem"), &n);
    assert_int_equal(n, 3);
    char sks[3][512] = {"", "", ""};
    for (size_t i = 0; i < n; i++) {
        cJSON *item = NULL;
        assert_int_equal(kp_ddb_item_for(d, data, recs[i], &item, &err), 0);
        const cJSON *pk = cJSON_GetObjectItem(cJSON_GetObjectItem(item, "GSI2PK"), "S");
        const cJSON *sk = cJSON_GetObjectItem(cJSON_GetObjectItem(item, "GSI2SK"), "S");
        const char *sku = cJSON_GetObjectItem(recs[i]->object, "sku")->valuestring;
        if (!strcmp(sku, "SKU-C")) {
            assert_null(pk); /* PENDING: not in the sparse index */
        } else {
            assert_non_null(pk);
            assert_non_null(sk);
            assert_string_equal(pk->valuestring, "USER#u1");
            assert_non_null(strstr(sk->valuestring, "SHIPPED#2025-08-12T05:21:00"));
            snprintf(sks[sku[4] - 'A'], sizeof sks[0], "%s", sk->valuestring);
        }
        cJSON_Delete(item);
    }
    /* read backwards, SKU-A comes before SKU-B: its key sorts after */
    assert_true(strcmp(sks[0], sks[1]) > 0);
    kp_dataset_free(data);
    kp_design_free(d);
    kp_model_free(m);
}

/* The last hop of a longer path is read out of order (the client sorts the path's records),
 * so it gets no index for its order: buy-again with a condition the index cannot hold
 * (status < SHIPPED) falls back to a Query per order, on the collection itself, the
 * condition a FilterExpression; and an equality such a hop cannot fold into its sort key is
 * a FilterExpression, never dropped (every-feature's rooms-of-followees: state = DONE). */
static void test_the_last_hop_of_a_path_gets_no_index_for_its_order(void **state)
{
    (void)state;
    kp_model *m = load_edited("examples/order-response/model.json", "\":after\" }, \"status\": { \"=\": \"SHIPPED\"",
                              "\":after\" }, \"status\": { \"<\": \"SHIPPED\"");
    kp_design *d = propose(m);
    const ddb_layout *L = d->layout;
    for (size_t i = 0; i < L->entity_count; i++) {
        if (strcmp(L->entities[i].entity->name, "OrderItem")) continue;
        for (size_t k = 1; k < L->entities[i].placement_count; k++)
            assert_true(strstr(L->entities[i].placements[k].index->name, "LSI") == NULL ||
                        !strstr(kp_ddb_format_describe((kp_arena *)&L->arena, &L->entities[i].placements[k].sk), "placedAt"));
    }
    const kp_plan *p = plan_of(d, "buy-again");
    int filtered = 0;
    for (size_t i = 0; i < p->op_count; i++) filtered |= strstr(p->ops[i].condition, "FILTER") != NULL;
    assert_true(filtered);
    kp_design_free(d);
    kp_model_free(m);
    m = load("tests/fixtures/models/every-feature.json");
    d = propose(m);
    p = plan_of(d, "rooms-of-followees");
    int has_state = 0;
    for (size_t i = 0; i < p->op_count; i++) has_state |= strstr(p->ops[i].condition, "DONE") != NULL;
    assert_true(has_state);
    kp_design_free(d);
    kp_model_free(m);
}

/* Comments keyed [postId, id], listed by createdAt with their post: the listing first takes
 * a local index, then merges onto GSI1, where the post is found — the LSI entry would be
 * written for every comment and read by nothing, so the design drops it (and its claim). */
static void test_an_index_entry_no_fetch_reads_is_not_written(void **state)
{
    (void)state;
    kp_model *m = load("tests/fixtures/models/blog-comments-by-id.json");
    kp_design *d = propose(m);
    const ddb_layout *L = d->layout;
    for (size_t i = 0; i < L->entity_count; i++) {
        if (strcmp(L->entities[i].entity->name, "Comment")) continue;
        for (size_t k = 0; k < L->entities[i].placement_count; k++)
            assert_int_not_equal(L->entities[i].placements[k].index->kind, DDB_LSI);
    }
    for (size_t i = 0; i < d->decision_count; i++) assert_string_not_equal(d->decisions[i].subject, "LSI1 Comment");
    const kp_write_plan *w = NULL;
    for (size_t i = 0; i < d->write_plan_count; i++)
        if (!strcmp(d->write_plans[i].write->name, "add-comment")) w = &d->write_plans[i];
    assert_non_null(w);
    /* the comment and its GSI1 entry; the post's count, with the post item's GSI1 and LSI1 entries */
    assert_true(w->items < 5.5);
    for (size_t i = 0; i < w->touch_count; i++)
        assert_false(strstr(w->touches[i].what, "LSI") && strstr(w->touches[i].what, "Comment"));
    kp_design_free(d);
    kp_model_free(m);
}

/* The expert's index for "open items ending soonest, highest bid first, items without bids
 * last" (issue #14): GSI1SK = ITEM#<endsAt>#<highestBid inverted, no bid: "~">#<id>, read
 * with a key condition on endsAt and Limit 25 — one page costs one page. */
static void test_an_order_of_mixed_directions_and_nulls_is_held_by_the_sort_key(void **state)
{
    (void)state;
    kp_model *m = load("examples/auction-mixes/model.json");
    kp_design *d = propose(m);
    const kp_plan *p = plan_of(d, "list-category-items");
    const kp_operation *query = NULL;
    for (size_t i = 0; i < p->op_count; i++)
        if (strcmp(p->ops[i].op, "Query") == 0) query = &p->ops[i];
    assert_non_null(query);
    assert_true(query->items <= 26 && query->requests == 1);
    assert_null(strstr(query->why ? query->why : "", "reads every item"));
    /* the key text orders as the oracle does: endsAt asc, highestBid desc, no bid last, and
     * ties broken by the key in the last declared part's direction (desc): id inverted too */
    const kp_entity *item = kp_model_entity(m, "Item");
    const kp_attr *ends = kp_entity_attr(item, "endsAt"), *bid = kp_entity_attr(item, "highestBid"), *id = kp_entity_attr(item, "id");
    int found = 0;
    for (size_t i = 0; i < d->decision_count; i++)
        found |= d->decisions[i].choice && strstr(d->decisions[i].choice, "ITEM#<endsAt>#<highestBid:inverted,null=~>#<id:inverted>") != NULL;
    assert_true(found);
    ddb_segment segs[] = {{.literal = "ITEM#"}, {.attr = ends}, {.literal = "#"}, {.attr = bid, .is_inverted = 1, .null_text = "~"},
                          {.literal = "#"}, {.attr = id, .is_inverted = 1}};
    ddb_format f = {segs, sizeof segs / sizeof segs[0]};
#define U1 "2119c79a-b56c-4136-bcae-b702041bee2e"
#define U2 "fe5051b1-1fba-4643-8bca-0adbb85a3bb5"
    /* in the expected order */
    const char *const rows[] = {
        "{\"endsAt\":\"2026-01-01T00:00:00.000Z\",\"highestBid\":100.5,\"id\":\"" U1 "\"}",
        "{\"endsAt\":\"2026-01-01T00:00:00.000Z\",\"highestBid\":100,\"id\":\"" U1 "\"}",
        "{\"endsAt\":\"2026-01-01T00:00:00.000Z\",\"highestBid\":99.99,\"id\":\"" U2 "\"}",
        "{\"endsAt\":\"2026-01-01T00:00:00.000Z\",\"highestBid\":9,\"id\":\"" U2 "\"}",
        "{\"endsAt\":\"2026-01-01T00:00:00.000Z\",\"highestBid\":9,\"id\":\"" U1 "\"}",
        "{\"endsAt\":\"2026-01-01T00:00:00.000Z\",\"id\":\"" U2 "\"}",
        "{\"endsAt\":\"2026-01-01T00:00:00.000Z\",\"id\":\"" U1 "\"}",
        "{\"endsAt\":\"2026-01-01T00:00:00.001Z\",\"highestBid\":100000,\"id\":\"" U1 "\"}",
        "{\"endsAt\":\"2026-01-01T00:00:00.001Z\",\"id\":\"" U1 "\"}",
    };
    char prev[512] = "";
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        cJSON *o = cJSON_Parse(rows[i]);
        char key[512];
        assert_int_equal(kp_ddb_format_value(&f, o, key, sizeof key), 0);
        if (i) assert_true(strcmp(prev, key) < 0);
        snprintf(prev, sizeof prev, "%s", key);
        cJSON_Delete(o);
    }
    /* a required part still keeps an item without it out of the index (sparse) */
    segs[1].null_text = NULL;
    cJSON *o = cJSON_Parse("{\"highestBid\":1,\"id\":\"a\"}");
    char key[512];
    assert_int_not_equal(kp_ddb_format_value(&f, o, key, sizeof key), 0);
    cJSON_Delete(o);
    kp_design_free(d);
    kp_model_free(m);
}

static void test_transform_builds_the_keys_of_the_collection_and_indexes(void **state)
{
    (void)state;
    kp_model *m = load("examples/saas-control-plane/model.json");
    kp_design *d = propose(m);
    kp_dataset *data;
    kp_error err;
    assert_int_equal(kp_dataset_new(m, &data, &err), 0);
    const char *ws = "{\"id\":\"acme\",\"name\":\"Acme\",\"plan\":\"TEAM\",\"settings\":{\"timezone\":\"UTC\",\"locale\":\"en\",\"ssoEnabled\":false,\"retentionDays\":30,\"features\":[]},\"createdAt\":\"2026-01-01T00:00:00.000Z\"}\n";
    const char *pr = "{\"workspaceId\":\"acme\",\"id\":\"2026-0042\",\"name\":\"Apollo\",\"status\":\"ACTIVE\","
                     "\"createdAt\":\"2026-02-03T04:05:06.007Z\"}\n";
    if (kp_dataset_add_ndjson(data, kp_model_entity(m, "Workspace"), "ws", ws, strlen(ws), &err) ||
        kp_dataset_add_ndjson(data, kp_model_entity(m, "Project"), "pr", pr, strlen(pr), &err) ||
        kp_dataset_finish(data, &err))
        fail_msg("data: %s", err.message);
    size_t n;
    kp_record *const *projects = kp_dataset_records(data, kp_model_entity(m, "Project"), &n);
    assert_int_equal(n, 1);
    kp_item_list items = {0};
    assert_int_equal(kp_dynamodb_backend.transform(d, data, projects[0], &items, &err), 0);
    assert_int_equal(items.count, 1);
    const cJSON *body = items.items[0].body;
    assert_string_equal(cJSON_GetObjectItem(cJSON_GetObjectItem(body, "PK"), "S")->valuestring, "WORKSPACE#acme");
    assert_string_equal(cJSON_GetObjectItem(cJSON_GetObjectItem(body, "SK"), "S")->valuestring, "PROJECT#2026-0042");
    assert_string_equal(cJSON_GetObjectItem(cJSON_GetObjectItem(body, "LSI1SK"), "S")->valuestring,
                        "PROJECT#2026-02-03T04:05:06.007Z#2026-0042");
    /* ACTIVE: in the sparse GSI, on one of the shards */
    const char *gpk = cJSON_GetObjectItem(cJSON_GetObjectItem(body, "GSI1PK"), "S")->valuestring;
    assert_memory_equal(gpk, "PROJECT#ACTIVE#", 15);
    assert_string_equal(cJSON_GetObjectItem(cJSON_GetObjectItem(body, "_et"), "S")->valuestring, "Project");
    kp_item_list_free(&items);
    kp_record *const *workspaces = kp_dataset_records(data, kp_model_entity(m, "Workspace"), &n);
    assert_int_equal(kp_dynamodb_backend.transform(d, data, workspaces[0], &items, &err), 0);
    body = items.items[0].body;
    /* the header sorts first in the descending read on the local index */
    assert_string_equal(cJSON_GetObjectItem(cJSON_GetObjectItem(body, "LSI1SK"), "S")->valuestring, "PROJECT$");
    kp_item_list_free(&items);
    kp_dataset_free(data);
    kp_design_free(d);
    kp_model_free(m);
}

static void test_the_response_is_reassembled_in_the_declared_shape(void **state)
{
    (void)state;
    kp_model *m = load("examples/saas-control-plane/model.json");
    kp_pattern *p = kp_model_pattern(m, "list-projects-newest");
    kp_fetched *f = kp_fetched_new();
    kp_frec *ws = kp_fetched_add(f, kp_model_entity(m, "Workspace"), cJSON_Parse("{\"id\":\"acme\",\"name\":\"Acme\"}"));
    kp_fetched_add_root(f, ws);
    const kp_shape *projects = NULL;
    for (size_t i = 0; i < p->returns->member_count; i++)
        if (strcmp(p->returns->members[i]->name, "projects") == 0) projects = p->returns->members[i];
    const char *rows[] = {"{\"workspaceId\":\"acme\",\"id\":\"b\",\"name\":\"B\",\"createdAt\":\"2026-02-01T00:00:00.000Z\"}",
                          "{\"workspaceId\":\"acme\",\"id\":\"a\",\"name\":\"A\",\"createdAt\":\"2026-01-01T00:00:00.000Z\"}"};
    for (int i = 0; i < 2; i++)
        kp_fetched_link(f, projects, ws, kp_fetched_add(f, kp_model_entity(m, "Project"), cJSON_Parse(rows[i])));
    kp_params *params = kp_params_new();
    kp_params_set(params, "id", cJSON_CreateString("acme"));
    kp_error err;
    cJSON *r = kp_assemble(m, f, p, params, "tok", &err);
    char *text = cJSON_PrintUnformatted(r);
    assert_string_equal(text, "{\"workspace\":{\"id\":\"acme\",\"name\":\"Acme\"},\"projects\":[{\"id\":\"b\",\"name\":\"B\","
                              "\"createdAt\":\"2026-02-01T00:00:00.000Z\"},{\"id\":\"a\",\"name\":\"A\",\"createdAt\":"
                              "\"2026-01-01T00:00:00.000Z\"}],\"next\":\"tok\"}");
    free(text);
    cJSON_Delete(r);
    /* no root: the whole response is null */
    kp_fetched *empty = kp_fetched_new();
    r = kp_assemble(m, empty, p, params, NULL, &err);
    assert_true(cJSON_IsNull(r));
    cJSON_Delete(r);
    kp_fetched_free(empty);
    kp_params_free(params);
    kp_fetched_free(f);
    kp_model_free(m);
}

/* An $each that declares no order, gathered by the client (from several shards or buckets):
 * one relation followed comes out in key order, as the oracle follows a relation; a path of
 * several hops keeps the order its hops were read in (each hop's records in turn). */
static void test_an_unordered_listing_gathered_by_the_client_comes_in_key_order(void **state)
{
    (void)state;
    kp_model *m = load("tests/fixtures/models/every-feature.json");
    const char *patterns[] = {"follower-ids", "rooms-of-followees"};
    const char *expected[] = {"[\"user-1\",\"user-2\",\"user-3\"]", "[{\"position\":3},{\"position\":1},{\"position\":2}]"};
    for (int k = 0; k < 2; k++) {
        kp_pattern *p = kp_model_pattern(m, patterns[k]);
        const kp_shape *s = p->returns;
        kp_fetched *f = kp_fetched_new();
        kp_frec *root = kp_fetched_add(f, kp_model_entity(m, "User"), cJSON_Parse("{\"id\":\"user-0\"}"));
        kp_fetched_add_root(f, root);
        const int order[] = {3, 1, 2};
        for (int i = 0; i < 3; i++) {
            char row[160];
            if (k == 0) snprintf(row, sizeof row, "{\"id\":\"user-%d\"}", order[i]);
            else snprintf(row, sizeof row, "{\"roomId\":\"room-%d\",\"position\":%d,\"state\":\"DONE\"}", order[i], order[i]);
            kp_fetched_link(f, s, root, kp_fetched_add(f, kp_model_entity(m, k == 0 ? "User" : "Message"), cJSON_Parse(row)));
        }
        kp_fetched_client_order(f, s);
        kp_params *params = kp_params_new();
        kp_params_set(params, "id", cJSON_CreateString("user-0"));
        kp_error err;
        cJSON *r = kp_assemble(m, f, p, params, NULL, &err);
        char *text = cJSON_PrintUnformatted(r);
        assert_string_equal(text, expected[k]);
        free(text);
        cJSON_Delete(r);
        kp_params_free(params);
        kp_fetched_free(f);
    }
    kp_model_free(m);
}

static void test_every_example_has_a_design_without_unexpected_defects(void **state)
{
    (void)state;
    const char *examples[] = {"saas-control-plane", "ecommerce-single-table", "leaderboard", "order-response"};
    for (size_t i = 0; i < sizeof examples / sizeof *examples; i++) {
        char path[256];
        snprintf(path, sizeof path, "examples/%s/model.json", examples[i]);
        kp_model *m = load(path);
        kp_design *d = propose(m);
        for (size_t k = 0; k < d->defect_count; k++) printf("%s: %s\n", examples[i], d->defects[k]);
        assert_int_equal(d->defect_count, 0);
        /* order-response filters a day's orders by their shipment's carrier, a value of
         * another entity: keyplan keeps it on the order and keys an index by it, so nothing
         * is filtered in the client and the design says why */
        if (strcmp(examples[i], "order-response") == 0) {
            int noted = 0, decided = 0;
            for (size_t k = 0; k < d->note_count; k++) noted |= strstr(d->notes[k], "day-carrier-orders") != NULL;
            for (size_t k = 0; k < d->decision_count; k++) decided |= !strcmp(d->decisions[k].subject, "Order.shippingCarrier");
            assert_false(noted);
            assert_true(decided);
        }
        for (size_t k = 0; k < d->plan_count; k++) assert_false(d->plans[k].is_scan);
        kp_design_free(d);
        kp_model_free(m);
    }
}

/* An update names its item by the table's key. ecommerce's update-order-status gives the
 * order id alone, and the order item lives under its user (PK = USER#<username>): the
 * write first finds the key with a Query on the index keyed by the order id (GSI1), claimed
 * as a request and a read of the table. every-feature's purge deletes reactions by id, and
 * no index has them by id: a defect that says what to add. */
static void test_an_update_without_the_items_key_reads_it_first_or_is_a_defect(void **state)
{
    (void)state;
    kp_model *m = load("examples/ecommerce-single-table/model.json");
    kp_design *d = propose(m);
    const kp_write_plan *wp = NULL;
    for (size_t i = 0; i < m->write_count; i++)
        if (!strcmp(m->writes[i]->name, "update-order-status")) wp = &d->write_plans[i];
    assert_non_null(wp);
    assert_int_equal((int)wp->requests, 2);
    assert_int_equal(wp->read_count, 1);
    assert_non_null(wp->why);
    assert_non_null(strstr(wp->why, "Query on GSI1 (GSI1PK = ORDER#<orderId>)"));
    kp_design_free(d);
    kp_model_free(m);
    m = load("tests/fixtures/models/every-feature.json");
    d = propose(m);
    int found = 0;
    for (size_t k = 0; k < d->defect_count; k++) found |= strstr(d->defects[k], "'purge' deletes Reaction by its where") != NULL;
    assert_true(found);
    kp_design_free(d);
    kp_model_free(m);
}

/* Both bounds of a range on the sort key's attribute make one BETWEEN (issue #14, my-bids:
 * placedAt >= :from and <= :until, newest first): no FilterExpression, the Limit kept, and a
 * page claims a page (it claimed ~60 items read, up to every bid of the user). */
static void test_two_bounds_on_the_sort_key_are_one_between(void **state)
{
    (void)state;
    kp_model *m = load("examples/auction-mixes/model.json");
    kp_design *d = propose(m);
    const ddb_layout *L = d->layout;
    const kp_pattern *p = kp_model_pattern(m, "my-bids");
    const ddb_fetch *root = L->roots[p->index], *bids = NULL;
    for (size_t i = 0; i < root->base.child_count; i++)
        if (kp_ddb_child(root, i)->kind == DDB_QUERY) bids = kp_ddb_child(root, i);
    assert_non_null(bids);
    assert_non_null(bids->range);
    assert_non_null(bids->range_end);
    assert_int_equal(bids->filter_count, 0);
    kp_params *params = kp_params_new();
    kp_params_set(params, "id", cJSON_CreateString("u1"));
    kp_params_set(params, "from", cJSON_CreateString("2026-01-01T00:00:00.000Z"));
    kp_params_set(params, "until", cJSON_CreateString("2026-02-01T00:00:00.000Z"));
    kp_error err;
    ddb_request_ctx ctx = {.pattern = p, .params = params, .table = L->table, .err = &err};
    assert_int_equal(bids->limit, 50); /* the page is the server's: Limit is sent */
    cJSON *req = kp_ddb_query_request(&ctx, bids, "USER#u1", 0, bids->limit);
    assert_non_null(req);
    const char *key = cJSON_GetObjectItem(req, "KeyConditionExpression")->valuestring;
    assert_non_null(strstr(key, " BETWEEN "));
    assert_null(cJSON_GetObjectItem(req, "FilterExpression"));
    const kp_attr *placed = kp_entity_attr(kp_model_entity(m, "Bid"), "placedAt");
    char lo[300], hi[300];
    snprintf(lo, sizeof lo, "BID#%s", key_text(placed, 0, "\"2026-01-01T00:00:00.000Z\""));
    snprintf(hi, sizeof hi, "BID#%s$", key_text(placed, 0, "\"2026-02-01T00:00:00.000Z\""));
    int found_lo = 0, found_hi = 0;
    for (const cJSON *v = cJSON_GetObjectItem(req, "ExpressionAttributeValues")->child; v; v = v->next) {
        found_lo |= !strcmp(v->child->valuestring, lo);
        found_hi |= !strcmp(v->child->valuestring, hi);
    }
    assert_true(found_lo && found_hi);
    cJSON_Delete(req);
    const kp_plan *plan = plan_of(d, "my-bids");
    for (size_t i = 0; i < plan->op_count; i++)
        if (!strcmp(plan->ops[i].op, "Query")) assert_true(plan->ops[i].items <= 51);
    kp_params_free(params);
    kp_design_free(d);
    kp_model_free(m);
}

/* Issue #13/#14, the blog with tags N:M through a join entity (PostTag) and posts keyed in
 * their author's collection: the join items cannot give a Post item's key (they hold no
 * authorId), which was a defect. Each Post now writes an item per tag it is paired with into
 * the tag's partition, in posts-by-tag's order (publishedAt desc) and holding what it reads:
 * one Query of 20 per page, no defect; tag-post claims the element item it adds, edit-post
 * the ones it rewrites, and a Post with two PostTag records makes two element items. */
static void test_a_listing_through_a_join_entity_reads_an_adjacency_list(void **state)
{
    (void)state;
    kp_model *m = load("tests/fixtures/models/blog-through.json");
    kp_design *d = propose(m);
    assert_int_equal(d->defect_count, 0);
    const ddb_layout *L = d->layout;
    const kp_pattern *pt = kp_model_pattern(m, "posts-by-tag");
    const ddb_fetch *root = L->roots[pt->index], *posts = NULL;
    for (size_t i = 0; i < root->base.child_count; i++) posts = kp_ddb_child(root, i);
    assert_non_null(posts);
    assert_int_equal(posts->kind, DDB_QUERY);
    assert_non_null(posts->placement->elements);
    assert_null(kp_ddb_next_hop(posts));          /* no BatchGetItem of the posts */
    assert_true(posts->is_server_ordered);
    assert_false(posts->is_forward);       /* newest first */
    assert_int_equal(posts->limit, 20);
    const kp_plan *p = plan_of(d, "posts-by-tag");
    assert_int_equal(p->sequential_steps, 1);
    assert_true(p->items <= 21);
    const ddb_entity *post = &L->entities[kp_model_entity(m, "Post")->index];
    assert_int_equal(post->element_count, 1);
    assert_int_equal(post->element_items[0].hold_count, 3); /* id, title, publishedAt: not the 4 KB body */
    for (size_t w = 0; w < m->write_count; w++) {
        double elements = 0;
        for (size_t i = 0; i < d->write_plans[w].touch_count; i++)
            if (strstr(d->write_plans[w].touches[i].what, "element item")) elements += d->write_plans[w].touches[i].count;
        if (!strcmp(m->writes[w]->name, "tag-post")) assert_true(elements == 1.0);
        if (!strcmp(m->writes[w]->name, "edit-post")) assert_true(elements == 3.0); /* the title is held: every tag's item */
        if (!strcmp(m->writes[w]->name, "add-comment")) assert_true(elements == 0.0);
    }
    kp_dataset *data = NULL;
    kp_error err;
    assert_int_equal(kp_dataset_new(m, &data, &err), 0);
#define A1 "00000000-0000-4000-8000-000000000001"
#define P1 "00000000-0000-4000-8000-000000000002"
    const char *author = "{\"id\":\"" A1 "\",\"handle\":\"ada\",\"name\":\"Ada\",\"joinedAt\":\"2024-01-01T00:00:00.000Z\"}\n";
    const char *tags = "{\"name\":\"c\"}\n{\"name\":\"db\"}\n{\"name\":\"go\"}\n";
    const char *posts_text = "{\"id\":\"" P1 "\",\"authorId\":\"" A1 "\",\"title\":\"On keys\",\"body\":\"b\","
                             "\"publishedAt\":\"2025-03-01T00:00:00.000Z\",\"commentCount\":0}\n";
    const char *joins = "{\"tagName\":\"db\",\"postId\":\"" P1 "\"}\n{\"tagName\":\"c\",\"postId\":\"" P1 "\"}\n";
    if (kp_dataset_add_ndjson(data, kp_model_entity(m, "Author"), "a", author, strlen(author), &err) ||
        kp_dataset_add_ndjson(data, kp_model_entity(m, "Tag"), "t", tags, strlen(tags), &err) ||
        kp_dataset_add_ndjson(data, kp_model_entity(m, "Post"), "p", posts_text, strlen(posts_text), &err) ||
        kp_dataset_add_ndjson(data, kp_model_entity(m, "PostTag"), "j", joins, strlen(joins), &err) ||
        kp_dataset_finish(data, &err))
        fail_msg("%s", err.message);
    size_t n;
    kp_record *const *recs = kp_dataset_records(data, kp_model_entity(m, "Post"), &n);
    assert_int_equal(n, 1);
    cJSON *items = cJSON_CreateArray();
    assert_int_equal(kp_ddb_items_for(d, data, recs[0], items, &err), 0);
    assert_int_equal(cJSON_GetArraySize(items), 3); /* the Post and one item per tag */
    int in_c = 0, in_db = 0;
    for (const cJSON *it = items->child->next; it; it = it->next) {
        const char *pk = cJSON_GetObjectItem(cJSON_GetObjectItem(it, "PK"), "S")->valuestring;
        in_c |= !strcmp(pk, "TAG#c");
        in_db |= !strcmp(pk, "TAG#db");
        assert_non_null(strstr(cJSON_GetObjectItem(cJSON_GetObjectItem(it, "SK"), "S")->valuestring, "2025-03-01"));
        assert_string_equal(cJSON_GetObjectItem(cJSON_GetObjectItem(it, "title"), "S")->valuestring, "On keys");
        assert_null(cJSON_GetObjectItem(it, "body"));
    }
    assert_true(in_c && in_db);
    cJSON_Delete(items);
    kp_dataset_free(data);
    kp_design_free(d);
    kp_model_free(m);
}

/* compare's normalised alternative gives the join items partitions of their own, so a
 * forward N:M walk (the players a player follows) cannot Query them by the follower alone:
 * it reads an index keyed by the follower, as the inverse walk does by the followee. */
static void test_the_normalised_design_indexes_join_items_by_the_side_it_walks_from(void **state)
{
    (void)state;
    kp_model *m = load("examples/leaderboard/model.json");
    kp_design_list list;
    const kp_design *d = kp_test_candidate(&kp_dynamodb_backend, m, "normalised", &list);
    for (int dir = 0; dir < 2; dir++) {
        const kp_plan *p = plan_of(d, dir ? "followers" : "following");
        assert_int_equal(p->op_count, 2);
        assert_int_equal(p->sequential_steps, 1);
        assert_string_equal(p->ops[1].op, "Query");
        assert_non_null(p->ops[1].index);
        assert_non_null(strstr(p->ops[1].condition, dir ? "= PLAYER#<followeeId>" : "= PLAYER#<followerId>"));
        assert_true(p->items_max <= 101);
    }
    kp_design_list_free(&list);
    kp_model_free(m);
}

/* An item's checksum does not depend on how the service writes numbers back ("1.50" and
 * "1.5", "2." and "2"), at any depth; an item already canonical hashes as it is. */
static void test_an_item_checksum_reads_numbers_canonically(void **state)
{
    (void)state;
    cJSON *plain = cJSON_Parse("{\"PK\": {\"S\": \"a\"}, \"n\": {\"N\": \"1.5\"}, \"m\": {\"M\": {\"x\": {\"N\": \"2\"}}}, "
                               "\"l\": {\"L\": [{\"N\": \"10\"}, {\"N\": \"0.25\"}]}}");
    cJSON *written = cJSON_Parse("{\"PK\": {\"S\": \"a\"}, \"n\": {\"N\": \"1.50\"}, \"m\": {\"M\": {\"x\": {\"N\": \"2.\"}}}, "
                                 "\"l\": {\"L\": [{\"N\": \"10\"}, {\"N\": \"0.2500\"}]}}");
    cJSON *other = cJSON_Parse("{\"PK\": {\"S\": \"a\"}, \"n\": {\"N\": \"1.5\"}, \"m\": {\"M\": {\"x\": {\"N\": \"2\"}}}, "
                               "\"l\": {\"L\": [{\"N\": \"1\"}, {\"N\": \"0.25\"}]}}");
    assert_non_null(plain);
    assert_non_null(written);
    assert_non_null(other);
    assert_true(kp_ddb_item_checksum(plain) == kp_item_hash(plain));
    assert_true(kp_ddb_item_checksum(written) == kp_ddb_item_checksum(plain));
    assert_true(kp_ddb_item_checksum(written) != kp_item_hash(written));
    assert_true(kp_ddb_item_checksum(other) != kp_ddb_item_checksum(plain));
    cJSON_Delete(plain);
    cJSON_Delete(written);
    cJSON_Delete(other);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_key_values_are_padded_escaped_and_keep_their_order),
        cmocka_unit_test(test_saas_workspace_settings_is_one_get_item),
        cmocka_unit_test(test_list_projects_newest_is_one_query_descending_with_the_header),
        cmocka_unit_test(test_the_printed_key_condition_is_the_one_sent),
        cmocka_unit_test(test_active_projects_use_a_sparse_sharded_gsi),
        cmocka_unit_test(test_one_order_with_its_items_is_one_query_on_the_inverted_index),
        cmocka_unit_test(test_a_one_to_one_read_by_the_headers_key_rides_with_the_header),
        cmocka_unit_test(test_a_reference_keys_its_childs_partition_as_its_parent_does),
        cmocka_unit_test(test_a_hop_read_only_for_its_key_is_not_read),
        cmocka_unit_test(test_an_array_of_references_copies_the_names_its_page_returns),
        cmocka_unit_test(test_leaderboard_is_one_query_each_with_a_zero_padded_rating),
        cmocka_unit_test(test_orders_of_a_day_use_a_gsi_and_recent_orders_one_query),
        cmocka_unit_test(test_a_walk_back_through_an_array_reads_an_adjacency_list),
        cmocka_unit_test(test_a_client_sorted_listing_claims_the_whole_partition_it_reads),
        cmocka_unit_test(test_a_range_the_base_sort_key_holds_needs_no_local_index),
        cmocka_unit_test(test_a_join_in_its_listings_order_reads_one_page_of_targets),
        cmocka_unit_test(test_a_join_ordered_by_its_targets_attribute_keys_an_index_by_the_copy),
        cmocka_unit_test(test_an_inverted_text_part_sorts_in_reverse),
        cmocka_unit_test(test_a_listing_two_hops_away_is_one_query_on_an_index_of_the_last),
        cmocka_unit_test(test_the_last_hop_of_a_path_gets_no_index_for_its_order),
        cmocka_unit_test(test_a_header_copies_what_its_page_reads_through_its_references),
        cmocka_unit_test(test_an_atomic_write_above_a_transactions_items_is_a_defect),
        cmocka_unit_test(test_a_count_claims_the_pages_it_reads_to_the_end),
        cmocka_unit_test(test_an_order_of_mixed_directions_and_nulls_is_held_by_the_sort_key),
        cmocka_unit_test(test_the_base_sort_key_follows_the_listing_and_a_relation_is_read_once),
        cmocka_unit_test(test_an_index_entry_no_fetch_reads_is_not_written),
        cmocka_unit_test(test_transform_builds_the_keys_of_the_collection_and_indexes),
        cmocka_unit_test(test_the_response_is_reassembled_in_the_declared_shape),
        cmocka_unit_test(test_an_unordered_listing_gathered_by_the_client_comes_in_key_order),
        cmocka_unit_test(test_every_example_has_a_design_without_unexpected_defects),
        cmocka_unit_test(test_an_update_without_the_items_key_reads_it_first_or_is_a_defect),
        cmocka_unit_test(test_a_referenced_attribute_is_copied_into_the_referencing_items),
        cmocka_unit_test(test_two_bounds_on_the_sort_key_are_one_between),
        cmocka_unit_test(test_a_listing_through_a_join_entity_reads_an_adjacency_list),
        cmocka_unit_test(test_the_normalised_design_indexes_join_items_by_the_side_it_walks_from),
        cmocka_unit_test(test_an_item_checksum_reads_numbers_canonically),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
