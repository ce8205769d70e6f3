/*
 * test_mongo_design.c — the MongoDB design without a server: the embed / reference,
 * subset and extended-reference rules on the seed examples, the indexes (Equality-Sort-
 * Range, none a prefix of another), the finds each pattern costs, transform's documents
 * and `_id`s, the Extended JSON <-> bson round trip, and the connection-string rules.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "backends/mongodb/client.h"
#include "backends/mongodb/mongo.h"
#include "support.h"
#include "core/data.h"

extern const kp_backend kp_mongodb_backend;

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

static kp_design *propose_mix(const kp_model *m, const char *mix)
{
    kp_design_list list;
    kp_error err;
    kp_propose_options o = {.mix = mix ? kp_model_mix(m, mix) : NULL};
    if (kp_mongodb_backend.propose(m, &o, &list, &err)) fail_msg("propose failed: %s", err.message);
    kp_design *d = list.items[0];
    free(list.items);
    return d;
}

static kp_design *propose(const kp_model *m) { return propose_mix(m, NULL); }

static const kp_plan *plan_of(const kp_design *d, const char *name)
{
    for (size_t i = 0; i < d->plan_count; i++)
        if (strcmp(d->plans[i].pattern->name, name) == 0) return &d->plans[i];
    fail_msg("no plan for %s", name);
    return NULL;
}

static const kp_decision *decision_of(const kp_design *d, const char *subject)
{
    for (size_t i = 0; i < d->decision_count; i++)
        if (strcmp(d->decisions[i].subject, subject) == 0) return &d->decisions[i];
    return NULL;
}

static const mg_collection *collection_of(const kp_design *d, const char *name)
{
    const mg_layout *L = d->layout;
    for (size_t i = 0; i < L->collection_count; i++)
        if (strcmp(L->collections[i]->name, name) == 0) return L->collections[i];
    fail_msg("no collection %s", name);
    return NULL;
}

/* A live index of the collection whose first fields are `fields` ("userId:1,placedAt:-1"). */
static const mg_index *index_starting(const mg_collection *c, const char *fields)
{
    for (size_t i = 0; i < c->index_count; i++) {
        const mg_index *x = c->indexes[i];
        if (x->is_redundant) continue;
        char text[512] = "";
        for (size_t k = 0; k < x->field_count; k++) {
            size_t n = strlen(text);
            snprintf(text + n, sizeof text - n, "%s%s:%d", k ? "," : "", x->fields[k].path, x->fields[k].is_desc ? -1 : 1);
            if (strcmp(text, fields) == 0) return x;
        }
    }
    return NULL;
}

static const char *const examples[] = {"examples/saas-control-plane/model.json", "examples/order-response/model.json",
                                       "examples/ecommerce-single-table/model.json", "examples/leaderboard/model.json",
                                       "examples/auction-mixes/model.json", "examples/forum/model.json", NULL};

static void test_the_order_embeds_its_items_and_lists_by_user_newest_first(void **state)
{
    (void)state;
    kp_model *m = load("examples/order-response/model.json");
    kp_design *d = propose(m);
    const kp_decision *x = decision_of(d, "Order.items");
    assert_non_null(x);
    assert_non_null(strstr(x->choice, "embed: an array 'items' of OrderItem"));
    const mg_layout *L = d->layout;
    const mg_entity *item = &L->entities[kp_model_entity(m, "OrderItem")->index];
    assert_null(item->collection);
    assert_string_equal(item->parent->entity->name, "Order");
    /* the 1:1 shipment is a subdocument */
    const mg_entity *ship = &L->entities[kp_model_entity(m, "Shipment")->index];
    assert_true(ship->is_single);
    /* my orders: { userId: 1, placedAt: -1 } (the key last breaks ties), one round trip */
    const mg_collection *orders = collection_of(d, "Order");
    assert_non_null(index_starting(orders, "userId:1,placedAt:-1"));
    const kp_plan *recent = plan_of(d, "user-recent-orders");
    assert_int_equal(recent->sequential_steps, 1);
    assert_string_equal(recent->ops[1].index, "userId_1_placedAt_-1_orderId_-1");
    /* the order screen: one find by _id, items and shipment inside the document */
    const kp_plan *detail = plan_of(d, "order-detail");
    assert_int_equal(detail->op_count, 1);
    assert_string_equal(detail->ops[0].op, "find");
    assert_string_equal(detail->ops[0].index, "_id_");
    assert_true(detail->requests == 1);
    assert_true(detail->is_requests_exact);
    /* an order line by (orderId, sku) and a shipment by invoice go through the order document */
    assert_true(plan_of(d, "line-invoice")->requests == 1);
    assert_non_null(strstr(plan_of(d, "track-invoice")->ops[0].condition, "\"shipping.invoice\""));
    /* the carrier sheet selects by the carrier keyplan keeps on the order (core/kept_copies.c),
     * which the order document holds already in its embedded shipment: one find through an
     * index on shipping.carrier, no client filtering, no second copy stored */
    assert_non_null(index_starting(orders, "day:1,shipping.carrier:1,placedAt:1"));
    const mg_entity *order = &L->entities[kp_model_entity(m, "Order")->index];
    assert_string_equal(kp_mg_alias(order, kp_entity_attr(kp_model_entity(m, "Order"), "shippingCarrier")), "shipping.carrier");
    assert_string_equal(kp_mg_alias(order, kp_entity_attr(kp_model_entity(m, "Order"), "shippingInvoice")), "shipping.invoice");
    assert_true(plan_of(d, "day-carrier-orders")->requests == 1);
    /* buy-again lists a user's shipped order lines placed after an instant: a line's
     * placedAt is its order's (copy_of), and the one test on the lines' own fields goes to
     * the orders' find as well, so each order it returns holds a line of the page: the first
     * 50 newest first (51 read, to see a tie) hold it; a tie on placedAt reads the orders of
     * that instant after, which a timestamp makes unexpected */
    const kp_plan *again = plan_of(d, "buy-again");
    assert_int_equal(again->op_count, 3);
    assert_non_null(strstr(again->ops[1].condition, "placedAt: { $gt: <after> }"));
    assert_non_null(strstr(again->ops[1].condition, "\"items.status\": \"SHIPPED\""));
    assert_non_null(strstr(again->ops[1].condition, ".sort({ placedAt: -1, orderId: -1 }).limit(51)"));
    assert_string_equal(again->ops[1].index, "userId_1_items.status_1_placedAt_-1_orderId_-1");
    assert_true(again->ops[1].items_max == 51);
    assert_true(again->ops[2].requests == 0 && again->ops[2].requests_max == 1);
    assert_true(again->ops[2].waits_for_previous);
    assert_int_equal(again->sequential_steps, 1);
    assert_null(index_starting(orders, "userId:1,placedAt:1"));
    assert_int_equal(d->defect_count, 0);
    kp_design_free(d);
    kp_model_free(m);
}

/* The reference alternative (compare's): the order lines have a collection of their own,
 * and buy-again lists a user's lines across their orders. The lines copy their order's
 * userId (an extended reference) so one find by it, sorted as the listing asks and cut at
 * the page, reads them, beside the user's find: not every order of the user, then every
 * line of each, sorted in the client. */
static void test_the_reference_design_reads_a_users_lines_by_a_copy_of_the_user(void **state)
{
    (void)state;
    kp_model *m = load("examples/order-response/model.json");
    kp_design_list list;
    const kp_design *d = kp_test_candidate(&kp_mongodb_backend, m, "reference", &list);
    const kp_decision *x = decision_of(d, "OrderItem.order.{userId}");
    assert_non_null(x);
    assert_non_null(strstr(x->choice, "extended reference: copy Order.{userId} into 'order' of each OrderItem document"));
    const kp_plan *again = plan_of(d, "buy-again");
    assert_int_equal(again->op_count, 2);
    assert_int_equal(again->sequential_steps, 1);
    assert_string_equal(again->ops[1].container, "OrderItem");
    assert_string_equal(again->ops[1].index, "order.userId_1_status_1_placedAt_-1_sku_1_orderId_1");
    assert_non_null(strstr(again->ops[1].condition, "\"order.userId\": <User.userId>"));
    assert_non_null(strstr(again->ops[1].condition, ".sort({ placedAt: -1, sku: 1, orderId: 1 }).limit(50)"));
    assert_true(again->items_max <= 51);
    /* the design that embeds the lines does not copy it */
    assert_null(decision_of(list.items[0], "OrderItem.order.{userId}"));
    kp_design_list_free(&list);
    kp_model_free(m);
}

/* leaderboard's embed design holds a player's feed items in the Player document: share-match
 * pushes one into every follower's document, one write per follower, where a write whose
 * steps all land in one document is one (the match's own update alone would be). */
static void test_a_write_into_every_followers_document_is_not_one_write(void **state)
{
    (void)state;
    kp_model *m = load("examples/leaderboard/model.json");
    kp_design_list list;
    const kp_design *d = kp_test_candidate(&kp_mongodb_backend, m, "embed", &list);
    const kp_write_plan *wp = NULL;
    for (size_t i = 0; i < d->write_plan_count; i++)
        if (strcmp(d->write_plans[i].write->name, "share-match") == 0) wp = &d->write_plans[i];
    assert_non_null(wp);
    assert_null(strstr(wp->mechanism, "one write to one"));
    assert_true(wp->items > 50);  /* the match's player and the followers' documents (50 expected) */
    assert_true(wp->requests >= 2);
    kp_design_list_free(&list);
    kp_model_free(m);
}

/* The same listing whose test on the lines is an optional parameter: left out, an order
 * the find returns may hold no line of the page, so 50 orders do not bound it: every order
 * placed after the instant is read, as before. */
/* A condition through a to-one hop that the document holds a copy of (every-feature's
 * messages-by-surname: author.surname, copied as authorName) is read from the copy: one
 * find through an index that leads with it and holds the order, sorted and limited by the
 * server, no read of the authors; both conditions on the copy are in the filter. */
static void test_a_condition_a_copy_answers_is_an_index_field(void **state)
{
    (void)state;
    kp_model *m = load("tests/fixtures/models/every-feature.json");
    kp_design *d = propose(m);
    const kp_plan *p = plan_of(d, "messages-by-surname");
    assert_int_equal(p->op_count, 1);
    assert_int_equal((int)p->requests_max, 1);
    assert_string_equal(p->ops[0].index, "authorName_1_sentAt_-1_roomId_-1_position_-1");
    assert_non_null(strstr(p->ops[0].condition, "authorName: { $eq: <surname>, $regex: \"^<prefix>\" }"));
    assert_true(p->items_max <= 11);
    kp_design_free(d);
    kp_model_free(m);
}

static void test_an_optional_line_test_does_not_bound_the_orders_read(void **state)
{
    (void)state;
    const char *const from[] = {"\"name\": \"buy-again\",", "\":after\" }, \"status\": { \"=\": \"SHIPPED\" }"};
    const char *const to[] = {"\"name\": \"buy-again\", \"params\": { \"status\": { \"optional\": true } },",
                              "\":after\" }, \"status\": { \"=\": \":status\" }"};
    kp_model *m = kp_test_edited_model("examples/order-response/model.json", from, to, 2);
    kp_design *d = propose(m);
    const kp_plan *again = plan_of(d, "buy-again");
    assert_int_equal(again->op_count, 2);
    assert_null(strstr(again->ops[1].condition, "items.status"));
    assert_null(strstr(again->ops[1].condition, ".limit("));
    assert_true(again->items_max > 1000);
    kp_design_free(d);
    kp_model_free(m);
}

static void test_the_workspace_references_its_projects(void **state)
{
    (void)state;
    kp_model *m = load("examples/saas-control-plane/model.json");
    kp_design *d = propose(m);
    const kp_decision *x = decision_of(d, "Workspace.projects");
    assert_non_null(x);
    assert_non_null(strstr(x->choice, "reference: Project documents hold workspaceId"));
    assert_non_null(strstr(x->why, "16 MB"));
    assert_non_null(index_starting(collection_of(d, "Project"), "workspaceId:1,createdAt:-1"));
    const kp_plan *p = plan_of(d, "list-projects-newest");
    assert_int_equal(p->op_count, 2);
    assert_true(p->requests == 2);
    assert_int_equal(p->sequential_steps, 1); /* the projects' filter is the workspace id from the parameters */
    assert_int_equal(p->ops[1].step, 1);
    /* a compound key is one scalar _id */
    assert_non_null(strstr(plan_of(d, "get-project")->ops[0].condition, "_id: <workspaceId> + \"|\" + <id>"));
    /* a shard key by the equality the reads select on */
    assert_string_equal(collection_of(d, "Project")->shard_key, "{ workspaceId: 1, _id: 1 }");
    kp_design_free(d);
    kp_model_free(m);
}

static int is_prefix(const mg_index *a, const mg_index *b)
{
    if (a->field_count > b->field_count) return 0;
    int same = 1, inverted = 1;
    for (size_t k = 0; k < a->field_count; k++) {
        if (strcmp(a->fields[k].path, b->fields[k].path) != 0) return 0;
        same &= a->fields[k].is_desc == b->fields[k].is_desc;
        inverted &= a->fields[k].is_desc != b->fields[k].is_desc;
    }
    return same || inverted;
}

/* The join documents of an N:M copy what a listing over it returns of its targets, by cost
 * (tests/fixtures/models/join-pages.json): a point's description, rarely changed, goes into
 * each HotelPoi document, and points near a hotel are one find on the join collection with no
 * find of the points by _id; hotels are renamed too often (rename-hotel, 500/s), so hotels
 * near a point still find them by _id $in. Describing a point rewrites the join documents
 * naming it. */
static void test_join_documents_copy_what_their_listing_returns(void **state)
{
    (void)state;
    kp_model *m = load("tests/fixtures/models/join-pages.json");
    kp_design *d = propose(m);
    const kp_plan *p = plan_of(d, "pois-near-hotel");
    assert_int_equal((int)p->op_count, 2);
    assert_string_equal(p->ops[1].container, "HotelPoi");
    assert_true(p->requests_max <= 2);
    p = plan_of(d, "hotels-near-poi");
    assert_int_equal((int)p->op_count, 3);
    assert_string_equal(p->ops[2].container, "Hotel");
    const kp_decision *x = decision_of(d, "HotelPoi.pois");
    assert_non_null(x);
    assert_non_null(strstr(x->choice, "extended reference"));
    x = decision_of(d, "HotelPoi.hotels");
    assert_non_null(x);
    assert_non_null(strstr(x->choice, "reference: find the Hotel"));
    const kp_write_plan *wp = &d->write_plans[kp_model_write(m, "describe-poi")->index];
    assert_true(wp->items > 5.9 && wp->items < 6.1);
    kp_design_free(d);
    kp_model_free(m);
}

static void test_no_index_is_a_prefix_of_another(void **state)
{
    (void)state;
    for (size_t e = 0; examples[e]; e++) {
        kp_model *m = load(examples[e]);
        kp_design *d = propose(m);
        const mg_layout *L = d->layout;
        for (size_t c = 0; c < L->collection_count; c++) {
            const mg_collection *col = L->collections[c];
            for (size_t i = 0; i < col->index_count; i++)
                for (size_t j = 0; j < col->index_count; j++) {
                    const mg_index *a = col->indexes[i], *b = col->indexes[j];
                    if (i == j || a->is_redundant || b->is_redundant || a->is_unique) continue;
                    if (is_prefix(a, b)) fail_msg("%s: %s.%s is a prefix of %s", examples[e], col->name, a->name, b->name);
                }
            /* what the redundant ones served is served by a live index */
            for (size_t i = 0; i < col->index_count; i++)
                if (col->indexes[i]->is_redundant) assert_non_null(col->indexes[i]->served_by);
        }
        kp_design_free(d);
        kp_model_free(m);
    }
}

static void test_the_subset_rule_follows_the_workload_mix(void **state)
{
    (void)state;
    kp_model *m = load("examples/auction-mixes/model.json");
    /* browsing: 900 item views/s against 10 bids/s: the 5 latest bids live in the item */
    kp_design *d = propose(m);
    const kp_decision *x = decision_of(d, "Item.bids subset");
    assert_non_null(x);
    assert_non_null(strstr(x->choice, "subset: the first 5 Bid by placedAt desc"));
    assert_non_null(strstr(x->why, "read rate x one saved round trip > child write rate"));
    const kp_plan *view = plan_of(d, "view-item");
    int bids_find = 0;
    for (size_t i = 0; i < view->op_count; i++) bids_find |= strcmp(view->ops[i].container, "Bid") == 0;
    assert_false(bids_find);
    kp_design_free(d);
    /* bidding: 200 views/s against 400 bids/s: no subset, the bids are read from their collection */
    d = propose_mix(m, "bidding");
    x = decision_of(d, "Item.bids subset");
    assert_non_null(x);
    assert_string_equal(x->choice, "no subset");
    view = plan_of(d, "view-item");
    bids_find = 0;
    for (size_t i = 0; i < view->op_count; i++) bids_find |= strcmp(view->ops[i].container, "Bid") == 0;
    assert_true(bids_find);
    kp_design_free(d);
    kp_model_free(m);
    /* the leaderboard keeps a player's 10 latest matches in the player document */
    m = load("examples/leaderboard/model.json");
    d = propose(m);
    x = decision_of(d, "Player.matches subset");
    assert_non_null(x);
    assert_non_null(strstr(x->choice, "the first 10 Match"));
    assert_true(plan_of(d, "recent-matches")->requests == 1);
    /* a paged listing is never a subset */
    assert_null(decision_of(d, "Player.feed subset"));
    /* sharing a match inserts a feed document per follower (50 on average) in bulk commands of
     * 500: one request, and verify's claim follows the followers an operation reaches */
    const kp_write_plan *wp = &d->write_plans[kp_model_write(m, "share-match")->index];
    assert_true(wp->items > 50);
    assert_true(wp->requests < 5);
    double changed[16] = {0};
    assert_true(m->entity_count <= 16);
    changed[kp_model_entity(m, "Match")->index] = 1;
    changed[kp_model_entity(m, "FeedItem")->index] = 1500;
    kp_write_measure on = {.changed = changed};
    double at_1500 = kp_write_plan_requests_for(wp, &on);
    changed[kp_model_entity(m, "FeedItem")->index] = 0;
    assert_true(fabs(at_1500 - kp_write_plan_requests_for(wp, &on) - 3) < 1e-9);
    kp_design_free(d);
    kp_model_free(m);
}

/* auction's admin-report: items without bids that ended before a date, highest reserve first
 * with no reserve on top. MongoDB sorts a missing reserve lowest, so a descending sort puts
 * them last: the nulls are a find of their own and the others another, both in the order of
 * one index {bidCount, reservePrice desc, endsAt, ...}, one round trip and a page each — not
 * every match read and sorted in the client (5 million documents at the model's sizes). */
static void test_nulls_first_against_mongodbs_order_are_a_find_of_their_own(void **state)
{
    (void)state;
    kp_model *m = load("examples/auction-mixes/model.json");
    kp_design *d = propose(m);
    const kp_plan *p = plan_of(d, "admin-report");
    assert_int_equal((int)p->op_count, 1);
    assert_int_equal(p->sequential_steps, 1);
    assert_non_null(strstr(p->ops[0].index, "bidCount_1_reservePrice_-1_endsAt_1"));
    assert_non_null(strstr(p->ops[0].condition, "reservePrice: null }).sort({ reservePrice: -1, endsAt: 1"));
    assert_non_null(strstr(p->ops[0].condition, "reservePrice: { $ne: null } }).sort({ reservePrice: -1, endsAt: 1"));
    assert_non_null(strstr(p->ops[0].condition, ".limit(<skip> + 100)"));
    assert_null(strstr(p->ops[0].why, "client sorts"));
    assert_true(p->requests == 2 && p->requests_max == 3);
    /* a page of the first part and the second part up to it: 200 documents with no skip */
    assert_true(p->items <= 200 + 1e-9);
    kp_design_free(d);
    kp_model_free(m);
}

static void test_extended_references_copy_the_few_fields_read(void **state)
{
    (void)state;
    kp_model *m = load("examples/auction-mixes/model.json");
    kp_design *d = propose(m);
    const mg_layout *L = d->layout;
    const mg_entity *bid = &L->entities[kp_model_entity(m, "Bid")->index];
    int has_bidder = 0;
    for (size_t i = 0; i < bid->extref_count; i++)
        if (strcmp(bid->extrefs[i].field, "bidder") == 0) {
            has_bidder = 1;
            assert_int_equal(bid->extrefs[i].attr_count, 1);
            assert_string_equal(bid->extrefs[i].attrs[0]->name, "nickname");
        }
    assert_true(has_bidder);
    /* the bid history needs no find on User */
    const kp_plan *p = plan_of(d, "item-bids");
    for (size_t i = 0; i < p->op_count; i++) assert_string_not_equal(p->ops[i].container, "User");
    /* the hint embeds the category in the item (a copy of its name) */
    const kp_decision *x = decision_of(d, "Item.category");
    assert_non_null(x);
    assert_non_null(x->hint);
    assert_non_null(strstr(x->choice, "extended reference"));
    kp_design_free(d);
    kp_model_free(m);
}

static void test_every_example_is_served_without_a_collection_scan(void **state)
{
    (void)state;
    for (size_t e = 0; examples[e]; e++) {
        kp_model *m = load(examples[e]);
        kp_design *d = propose(m);
        for (size_t i = 0; i < d->defect_count; i++) fprintf(stderr, "%s: %s\n", examples[e], d->defects[i]);
        assert_int_equal(d->defect_count, 0);
        for (size_t i = 0; i < d->plan_count; i++) {
            assert_false(d->plans[i].is_scan);
            assert_true(d->plans[i].op_count >= 1);
            assert_true(d->plans[i].sequential_steps >= 1);
        }
        /* every choice is recorded, with its reason */
        for (size_t i = 0; i < d->decision_count; i++) assert_true(d->decisions[i].why && d->decisions[i].why[0]);
        assert_true(d->fingerprint[0]);
        kp_design_free(d);
        kp_model_free(m);
    }
}

static kp_dataset *order_data(const kp_model *m)
{
    kp_dataset *data;
    kp_error err;
    assert_int_equal(kp_dataset_new(m, &data, &err), 0);
    const char *users = "{\"userId\":\"u1\",\"name\":\"Ann\",\"country\":\"FR\",\"createdAt\":\"2025-01-01T00:00:00.000Z\"}\n";
    const char *orders = "{\"orderId\":\"o1\",\"userId\":\"u1\",\"status\":\"PAID\",\"placedAt\":\"2025-03-04T05:06:07.089Z\","
                         "\"day\":\"2025-03-04\",\"total\":19.90}\n";
    const char *items = "{\"orderId\":\"o1\",\"sku\":\"B\",\"qty\":2,\"price\":9.95,\"status\":\"PENDING\"}\n"
                        "{\"orderId\":\"o1\",\"sku\":\"A\",\"qty\":1,\"price\":0.1,\"status\":\"SHIPPED\"}\n";
    const char *products = "{\"sku\":\"A\",\"name\":\"Apple\",\"price\":0.1,\"stock\":3}\n"
                           "{\"sku\":\"B\",\"name\":\"Bean\",\"price\":9.95,\"stock\":4}\n";
    const char *ships = "{\"orderId\":\"o1\",\"carrier\":\"DHL\",\"invoice\":\"I-1\",\"shippedAt\":\"2025-03-05T00:00:00.000Z\"}\n";
    if (kp_dataset_add_ndjson(data, kp_model_entity(m, "User"), "u", users, strlen(users), &err) ||
        kp_dataset_add_ndjson(data, kp_model_entity(m, "Order"), "o", orders, strlen(orders), &err) ||
        kp_dataset_add_ndjson(data, kp_model_entity(m, "OrderItem"), "i", items, strlen(items), &err) ||
        kp_dataset_add_ndjson(data, kp_model_entity(m, "Product"), "p", products, strlen(products), &err) ||
        kp_dataset_add_ndjson(data, kp_model_entity(m, "Shipment"), "s", ships, strlen(ships), &err) ||
        kp_dataset_finish(data, &err))
        fail_msg("data: %s", err.message);
    return data;
}

/* Issue #14, copies over arrays of references: auction's view-item returns its tags' names;
 * each Item document holds them as 'tags', a subdocument per element of tagIds in its order,
 * so the item page is one find. */
static void test_an_array_of_references_carries_the_names_its_page_returns(void **state)
{
    (void)state;
    kp_model *m = load("examples/auction-mixes/model.json");
    kp_design *d = propose(m);
    const kp_plan *p = plan_of(d, "view-item");
    assert_int_equal(p->op_count, 1);
    const kp_decision *x = decision_of(d, "Item.tags");
    assert_non_null(x);
    assert_non_null(strstr(x->choice, "copy Tag.{name} into 'tags'"));
    kp_dataset *data;
    kp_error err;
    assert_int_equal(kp_dataset_new(m, &data, &err), 0);
    const char *tags = "{\"id\":\"t-red\",\"name\":\"Red\"}\n{\"id\":\"t-old\",\"name\":\"Vintage\"}\n";
    if (kp_dataset_add_ndjson(data, kp_model_entity(m, "Tag"), "tags", tags, strlen(tags), &err)) fail_msg("%s", err.message);
    kp_record item = {.entity = kp_model_entity(m, "Item")};
    item.object = cJSON_Parse("{\"id\":\"i-1\",\"title\":\"Lamp\",\"tagIds\":[\"t-old\",\"t-red\"]}");
    kp_item_list items = {0};
    assert_int_equal(kp_mongodb_backend.transform(d, data, &item, &items, &err), 0);
    const cJSON *list = cJSON_GetObjectItem(items.items[0].body, "tags");
    assert_int_equal(cJSON_GetArraySize(list), 2);
    assert_string_equal(cJSON_GetObjectItem(cJSON_GetArrayItem(list, 0), "name")->valuestring, "Vintage");
    assert_string_equal(cJSON_GetObjectItem(cJSON_GetArrayItem(list, 1), "name")->valuestring, "Red");
    kp_item_list_free(&items);
    cJSON_Delete(item.object);
    kp_dataset_free(data);
    kp_design_free(d);
    kp_model_free(m);
}

static void test_transform_embeds_children_and_derives_the_id(void **state)
{
    (void)state;
    kp_model *m = load("examples/order-response/model.json");
    kp_design *d = propose(m);
    kp_dataset *data = order_data(m);
    kp_error err;
    size_t n;
    kp_item_list items = {0};
    kp_record *const *orders = kp_dataset_records(data, kp_model_entity(m, "Order"), &n);
    assert_int_equal(kp_mongodb_backend.transform(d, data, orders[0], &items, &err), 0);
    assert_int_equal(items.count, 1);
    const cJSON *doc = items.items[0].body;
    assert_string_equal(items.items[0].container, "Order");
    assert_string_equal(cJSON_GetObjectItem(doc, "_id")->valuestring, "o1");
    assert_string_equal(items.items[0].id, "Order:\"o1\"");
    /* exact types: decimal as a double, the timestamp as a date, the derived sum stored */
    char *total = cJSON_PrintUnformatted(cJSON_GetObjectItem(doc, "total"));
    assert_string_equal(total, "{\"$numberDouble\":\"19.9\"}");
    free(total);
    char *placed = cJSON_PrintUnformatted(cJSON_GetObjectItem(doc, "placedAt"));
    assert_string_equal(placed, "{\"$date\":{\"$numberLong\":\"1741064767089\"}}");
    free(placed);
    char *count = cJSON_PrintUnformatted(cJSON_GetObjectItem(doc, "itemCount"));
    assert_string_equal(count, "{\"$numberLong\":\"3\"}");
    free(count);
    /* the items, in key order, without _id, with the copied fields; the shipment as a subdocument */
    const cJSON *arr = cJSON_GetObjectItem(doc, "items");
    assert_int_equal(cJSON_GetArraySize(arr), 2);
    assert_string_equal(cJSON_GetObjectItem(arr->child, "sku")->valuestring, "A");
    assert_null(cJSON_GetObjectItem(arr->child, "_id"));
    assert_string_equal(cJSON_GetObjectItem(arr->child, "productName")->valuestring, "Apple");
    assert_string_equal(cJSON_GetObjectItem(cJSON_GetObjectItem(doc, "shipping"), "invoice")->valuestring, "I-1");
    /* the copies keyplan keeps of the shipment's carrier and invoice are that subdocument's
     * fields, not stored twice; reading the document back gives them to the record */
    assert_null(cJSON_GetObjectItem(doc, "shippingCarrier"));
    assert_null(cJSON_GetObjectItem(doc, "shippingInvoice"));
    const mg_layout *L = d->layout;
    cJSON *back = kp_mg_record_of_entity(&L->entities[kp_model_entity(m, "Order")->index], doc, &err);
    assert_non_null(back);
    assert_string_equal(cJSON_GetObjectItem(back, "shippingCarrier")->valuestring, "DHL");
    assert_string_equal(cJSON_GetObjectItem(back, "shippingInvoice")->valuestring, "I-1");
    cJSON_Delete(back);
    /* back to neutral records: what the oracle holds */
    cJSON *rec = kp_mg_record_of(kp_model_entity(m, "Order"), doc, &err);
    char *text = cJSON_PrintUnformatted(rec);
    assert_non_null(strstr(text, "\"total\":19.9"));
    assert_non_null(strstr(text, "\"placedAt\":\"2025-03-04T05:06:07.089Z\""));
    free(text);
    cJSON_Delete(rec);
    kp_item_list_free(&items);
    /* an embedded record becomes no document of its own */
    kp_record *const *lines = kp_dataset_records(data, kp_model_entity(m, "OrderItem"), &n);
    assert_int_equal(kp_mongodb_backend.transform(d, data, lines[0], &items, &err), 0);
    assert_int_equal(items.count, 0);
    kp_item_list_free(&items);
    kp_dataset_free(data);
    kp_design_free(d);
    kp_model_free(m);
    /* a compound key: one escaped string */
    m = load("examples/saas-control-plane/model.json");
    cJSON *key = cJSON_Parse("{\"workspaceId\":\"a|b\",\"id\":\"2026\\\\1\"}");
    cJSON *id = kp_mg_id(kp_model_entity(m, "Project"), key, &err);
    assert_string_equal(id->valuestring, "a\\|b|2026\\\\1");
    cJSON_Delete(id);
    cJSON_Delete(key);
    kp_model_free(m);
}

static void test_extended_json_and_bson_round_trip_exactly(void **state)
{
    (void)state;
    cJSON *doc = cJSON_Parse("{\"_id\":\"x\",\"n\":{\"$numberLong\":\"9007199254740993\"},\"d\":{\"$numberDouble\":\"0.1\"},"
                             "\"t\":{\"$date\":{\"$numberLong\":\"-1\"}},\"b\":{\"$binary\":{\"base64\":\"AAEC\",\"subType\":\"00\"}},"
                             "\"a\":[true,null,\"s\"],\"o\":{\"k\":{\"$numberLong\":\"1\"}}}");
    bson_t b;
    kp_error err;
    assert_int_equal(kp_mg_ejson_to_bson(doc, &b, &err), 0);
    cJSON *back = kp_mg_bson_to_ejson(&b);
    bson_destroy(&b);
    char *x = cJSON_PrintUnformatted(doc), *y = cJSON_PrintUnformatted(back);
    assert_string_equal(x, y);
    assert_true(kp_mg_item_checksum(doc) == kp_item_hash(back));
    free(x);
    free(y);
    cJSON_Delete(back);
    cJSON_Delete(doc);
    /* a decimal a double cannot carry back is refused with the reason */
    kp_type dec = {.kind = KP_T_DECIMAL};
    cJSON *v = kp_data_number("12345678901234567.89");
    kp_error_clear(&err);
    assert_null(kp_mg_to_ejson(&dec, v, &err));
    assert_int_equal(err.code, KP_ERR_DATA);
    assert_non_null(strstr(err.message, "Decimal128"));
    cJSON_Delete(v);
    /* a map key that cannot be a field name */
    kp_type str = {.kind = KP_T_STRING};
    kp_type map = {.kind = KP_T_MAP, .item = &str};
    v = cJSON_Parse("{\"a.b\":\"x\"}");
    kp_error_clear(&err);
    assert_null(kp_mg_to_ejson(&map, v, &err));
    assert_int_equal(err.code, KP_ERR_DATA);
    cJSON_Delete(v);
}

static void test_the_connection_string_is_required_and_its_password_never_shown(void **state)
{
    (void)state;
    char buf[256];
    kp_mg_redact_uri("mongodb://alice:s3cret@db.example:27017/shop?tls=true", buf, sizeof buf);
    assert_null(strstr(buf, "s3cret"));
    assert_string_equal(buf, "mongodb://alice:****@db.example:27017/shop?tls=true");
    kp_mg_redact_uri("mongodb://127.0.0.1:28017/", buf, sizeof buf);
    assert_string_equal(buf, "mongodb://127.0.0.1:28017/");
    char *saved = getenv("MONGODB_URI") ? strdup(getenv("MONGODB_URI")) : NULL;
    unsetenv("MONGODB_URI");
    kp_mg_client *c = NULL;
    kp_error err;
    assert_int_equal(kp_mg_client_open(NULL, 0, &c, &err), -1);
    assert_int_equal(err.code, KP_ERR_USAGE);
    assert_non_null(strstr(err.message, "MONGODB_URI"));
    assert_non_null(strstr(err.message, "--target mongodb="));
    /* an unreachable server: the message names it without the password */
    assert_int_equal(kp_mg_client_open("mongodb://bob:hunter2@127.0.0.1:1/?serverSelectionTimeoutMS=200", 0, &c, &err), -1);
    assert_int_equal(err.code, KP_ERR_TARGET);
    assert_null(strstr(err.message, "hunter2"));
    if (saved) { setenv("MONGODB_URI", saved, 1); free(saved); }
}

/* A field stored with another type than the model's (an int as a string) is decoded into a
 * value that cannot equal the oracle's and names what was found: verify then reports a
 * mismatch at that path instead of stopping as if the server failed. */
static void test_a_wrong_typed_field_becomes_a_named_mismatch_not_an_error(void **state)
{
    (void)state;
    kp_model *m = load("examples/saas-control-plane/model.json");
    const kp_entity *ws = kp_model_entity(m, "Workspace");
    cJSON *doc = cJSON_Parse("{\"_id\":\"circle-1\",\"id\":\"circle-1\",\"name\":\"Circle\",\"activeProjects\":\"30\"}");
    kp_error err = {0};
    cJSON *record = kp_mg_record_of(ws, doc, &err);
    assert_non_null(record);
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(record, "activeProjects");
    assert_true(cJSON_IsString(v));
    assert_non_null(strstr(v->valuestring, "<wrong type: Workspace.activeProjects, declared int"));
    assert_non_null(strstr(v->valuestring, "\"30\""));
    assert_non_null(strstr(v->valuestring, "circle-1"));
    assert_string_equal(cJSON_GetObjectItemCaseSensitive(record, "name")->valuestring, "Circle");
    cJSON_Delete(record);
    cJSON_Delete(doc);
    kp_model_free(m);
}

/* A thread's replies oldest first (thread-replies) and newest first (thread-replies-since):
 * one index, walked backwards for the second, as MongoDB can; not a second index whose
 * only difference is the direction of the order (every reply would update both). */
static void test_the_opposite_order_walks_one_index_backwards(void **state)
{
    (void)state;
    kp_model *m = load("examples/forum/model.json");
    kp_design *d = propose(m);
    const mg_collection *reply = collection_of(d, "Reply");
    size_t live = 0;
    for (size_t i = 0; i < reply->index_count; i++) live += !reply->indexes[i]->is_redundant;
    assert_int_equal((int)live, 2);
    const mg_index *x = index_starting(reply, "forumName:1,subject:1,replyDateTime:1");
    assert_non_null(x);
    assert_null(index_starting(reply, "forumName:1,subject:1,replyDateTime:-1"));
    const kp_plan *asc = plan_of(d, "thread-replies"), *desc = plan_of(d, "thread-replies-since");
    assert_string_equal(asc->ops[1].index, x->name);
    assert_string_equal(desc->ops[1].index, x->name);
    char subject[256];
    snprintf(subject, sizeof subject, "Reply index %s", x->name);
    const kp_decision *dec = decision_of(d, subject);
    assert_non_null(dec);
    assert_non_null(strstr(dec->why, "thread-replies-since walks it backwards"));
    /* the write that inserts a reply keeps the two indexes it has, not three */
    const kp_write_plan *wp = &d->write_plans[kp_model_write(m, "post-reply")->index];
    int entries = 0;
    for (size_t i = 0; i < wp->touch_count; i++)
        if (strstr(wp->touches[i].what, "secondary index entries of Reply")) entries = (int)wp->touches[i].count;
    assert_int_equal(entries, 2);
    kp_design_free(d);
    kp_model_free(m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_the_order_embeds_its_items_and_lists_by_user_newest_first),
        cmocka_unit_test(test_the_reference_design_reads_a_users_lines_by_a_copy_of_the_user),
        cmocka_unit_test(test_an_optional_line_test_does_not_bound_the_orders_read),
        cmocka_unit_test(test_a_write_into_every_followers_document_is_not_one_write),
        cmocka_unit_test(test_the_workspace_references_its_projects),
        cmocka_unit_test(test_no_index_is_a_prefix_of_another),
        cmocka_unit_test(test_the_subset_rule_follows_the_workload_mix),
        cmocka_unit_test(test_nulls_first_against_mongodbs_order_are_a_find_of_their_own),
        cmocka_unit_test(test_extended_references_copy_the_few_fields_read),
        cmocka_unit_test(test_every_example_is_served_without_a_collection_scan),
        cmocka_unit_test(test_transform_embeds_children_and_derives_the_id),
        cmocka_unit_test(test_extended_json_and_bson_round_trip_exactly),
        cmocka_unit_test(test_the_connection_string_is_required_and_its_password_never_shown),
        cmocka_unit_test(test_a_wrong_typed_field_becomes_a_named_mismatch_not_an_error),
        cmocka_unit_test(test_join_documents_copy_what_their_listing_returns),
        cmocka_unit_test(test_the_opposite_order_walks_one_index_backwards),
        cmocka_unit_test(test_an_array_of_references_carries_the_names_its_page_returns),
        cmocka_unit_test(test_a_condition_a_copy_answers_is_an_index_field),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
