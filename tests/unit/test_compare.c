/*
 * test_compare.c — the cost, risk and compare advisors on the seed examples, without a
 * server: each pattern's cost recomputed by hand for one example per database, the
 * DynamoDB monthly price from its unit prices (and overridden ones), the hot-partition
 * risk of the SaaS ACTIVE listing without sharding and its absence with the proposed
 * shards, the 16 MB risk of a forced embedding, the recommendation each example's
 * README states (and that auction-mixes' two mixes disagree), and the Markdown limit.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <math.h>
#include <cmocka.h>

#include "advisors/compare.h"
#include "advisors/cost.h"
#include "advisors/risk.h"
#include "backends/backend.h"
#include "tests/unit/support.h"

static kp_model *load(const char *path)
{
    kp_model *m = NULL;
    kp_error err;
    if (kp_model_load(path, NULL, &m, &err)) fail_msg("%s did not load: %s", path, err.message);
    return m;
}

/* The candidate named `candidate` (NULL: the recommended one) of a database; the list
 * is returned for freeing. */
static kp_design *design_of(const kp_model *m, const char *db, const char *candidate, kp_design_list *list)
{
    const kp_backend *b = kp_backend_find(db);
    if (!b) fail_msg("no backend %s", db);
    kp_propose_options o = {NULL, candidate != NULL};
    kp_error err;
    if (b->propose(m, &o, list, &err)) fail_msg("%s propose: %s", db, err.message);
    for (size_t i = 0; i < list->count; i++)
        if (!candidate || strcmp(list->items[i]->candidate, candidate) == 0) return list->items[i];
    fail_msg("%s has no candidate %s", db, candidate);
    return NULL;
}

static const kp_pattern_cost *pattern_cost(const kp_cost *c, const char *name)
{
    for (size_t i = 0; i < c->pattern_count; i++)
        if (strcmp(c->patterns[i].pattern->name, name) == 0) return &c->patterns[i];
    fail_msg("no cost for %s", name);
    return NULL;
}

#define NEAR(a, b) assert_true(fabs((double)(a) - (double)(b)) < 1e-6 * (1 + fabs((double)(b))))

/* Saas on DynamoDB, by hand: a read unit is 0.5 RCU per started 4 KB (eventually
 * consistent). An item is its attribute names and values, its entity tag and the key
 * attributes of every index that holds it. Workspace: tag "_et"+"Workspace" 12 B;
 * attributes 535 B (id 2+10, name 4+24, plan 4+8, settings 8+420, activeProjects 14+8,
 * createdAt 9+24); keys PK "WORKSPACE#"+id 2+20, SK "META" 2+4, LSI1SK "PROJECT$" 6+8:
 * 589 B. Project: 400.2 B. */
static void test_saas_dynamodb_costs_by_hand(void **state)
{
    (void)state;
    kp_model *m = load("examples/saas-control-plane/model.json");
    kp_design_list list;
    kp_design *d = design_of(m, "dynamodb", NULL, &list);
    kp_cost c;
    kp_error err;
    assert_int_equal(kp_cost_compute(d, NULL, NULL, &c, &err), 0);
    const kp_pattern_cost *p = pattern_cost(&c, "workspace-settings");      /* GetItem of one 589 B item */
    assert_int_equal(p->round_trips, 1); NEAR(p->requests, 1); NEAR(p->items, 1); NEAR(p->bytes, 589);
    NEAR(p->read_units, 0.5); NEAR(p->io_units, 1);
    p = pattern_cost(&c, "list-projects-newest");   /* one Query: header + 20 projects, 8,593 B: 3 x 4 KB */
    assert_int_equal(p->round_trips, 1); NEAR(p->requests, 1); NEAR(p->items, 21); NEAR(p->bytes, 589 + 20 * 400.2);
    NEAR(p->read_units, 1.5); NEAR(p->io_units, 3);
    p = pattern_cost(&c, "get-project");
    NEAR(p->requests, 1); NEAR(p->read_units, 0.5); NEAR(p->io_units, 1);
    /* 10 shards queried in parallel, each reading a page of 50 items (20,010 B: 5 x 4 KB) for
     * the client to merge: 500 items read for the 50 it returns */
    p = pattern_cost(&c, "list-active-projects");
    assert_int_equal(p->round_trips, 1); NEAR(p->requests, 10); NEAR(p->items, 500); NEAR(p->read_units, 10 * 2.5);
    NEAR(p->io_units, 49);   /* neutral I/O: 200,100 B read, 49 started 4 KB */
    /* per second: 500 x 0.5 + 200 x 1.5 + 300 x 0.5 + 5 x 25 RCU */
    NEAR(c.read_units, 825);
    /* create-project 20/s x 4.5 WCU, archive 2/s x 4.5 (the project, its LSI1 and half a GSI1
     * entry, the workspace's count and its LSI1 entry), rename 0.5/s x 502 (the workspace and its
     * LSI1 entry, each of 200 projects' copy with its LSI1 and half a GSI1 entry), delete 0.01/s
     * x 502 (the same items deleted with it): DynamoDB charges an LSI's writes to the table */
    NEAR(c.write_units, 20 * 4.5 + 2 * 4.5 + 0.5 * 502 + 0.01 * 502);
    assert_true(c.is_priced);
    /* AWS's on-demand prices since November 2024: $0.125 / $0.625 per million units */
    NEAR(c.month_reads, 825 * 2592000.0 / 1e6 * 0.125);
    NEAR(c.month_writes, c.write_units * 2592000.0 / 1e6 * 0.625);
    NEAR(c.month_storage, c.storage_bytes / 1073741824.0 * 0.25);
    kp_cost_free(&c);
    kp_prices prices = KP_PRICES_DEFAULT;
    prices.per_million_reads = 0.5;
    prices.per_gb_month = 0;
    assert_int_equal(kp_cost_compute(d, NULL, &prices, &c, &err), 0);
    NEAR(c.month_reads, 825 * 2.592 * 0.5);
    NEAR(c.month_storage, 0);
    kp_cost_free(&c);
    /* another region of the table: eu-west-1's own unit prices */
    prices = KP_PRICES_DEFAULT;
    prices.region = "eu-west-1";
    assert_int_equal(kp_cost_compute(d, NULL, &prices, &c, &err), 0);
    assert_string_equal(c.price_region, "eu-west-1");
    NEAR(c.month_reads, 825 * 2.592 * 0.1415);
    NEAR(c.month_storage, c.storage_bytes / 1073741824.0 * 0.283);
    kp_cost_free(&c);
    /* provisioned: 825 RCU/s at 70 % utilisation is 1,179 RCU kept for 720 hours */
    prices = KP_PRICES_DEFAULT;
    prices.is_provisioned = 1;
    assert_int_equal(kp_cost_compute(d, NULL, &prices, &c, &err), 0);
    NEAR(c.month_reads, 1179 * 720 * 0.00013);
    NEAR(c.month_writes, ceil(c.write_units / 0.7) * 720 * 0.00065);
    kp_cost_free(&c);
    /* a region the table does not know needs every unit price, and says which it knows */
    prices = KP_PRICES_DEFAULT;
    prices.region = "sa-east-1";
    assert_int_equal(kp_cost_compute(d, NULL, &prices, &c, &err), 0);
    assert_false(c.is_priced);
    assert_non_null(strstr(c.price_note, "eu-central-1"));
    kp_cost_free(&c);
    prices.per_million_reads = 0.2; prices.per_million_writes = 1; prices.per_gb_month = 0.3;
    assert_int_equal(kp_cost_compute(d, NULL, &prices, &c, &err), 0);
    assert_string_equal(c.price_region, "sa-east-1");
    NEAR(c.month_reads, 825 * 2.592 * 0.2);
    kp_cost_free(&c);
    kp_design_list_free(&list);
    kp_model_free(m);
}

/* Saas on MongoDB: no units, neutral I/O units (one per request, or per started 4 KB). */
static void test_saas_mongodb_costs_by_hand(void **state)
{
    (void)state;
    kp_model *m = load("examples/saas-control-plane/model.json");
    kp_design_list list;
    kp_design *d = design_of(m, "mongodb", NULL, &list);
    kp_cost c;
    kp_error err;
    assert_int_equal(kp_cost_compute(d, NULL, NULL, &c, &err), 0);
    /* priced as an Atlas cluster: 2,010,000 documents of a few hundred bytes (~0.7 GB) fit
     * the smallest tier whose disk holds them with headroom and whose memory a quarter */
    assert_true(c.is_priced);
    assert_non_null(c.tier);
    double gb = c.storage_bytes / 1e9;
    assert_true(c.tier->disk_gb >= gb * 1.3 && c.tier->ram_gb >= gb * 0.25);
    assert_int_equal(c.shards, 1);
    NEAR(c.month_total, c.tier->usd_per_hour * 720);
    char sentence[512];
    kp_cost_price_sentence(&c, sentence, sizeof sentence);
    assert_non_null(strstr(sentence, "MongoDB Atlas"));
    assert_non_null(strstr(sentence, c.tier->name));
    const kp_pattern_cost *p = pattern_cost(&c, "workspace-settings");   /* find by _id */
    NEAR(p->requests, 1); NEAR(p->items, 1); NEAR(p->read_units, 0); NEAR(p->io_units, 1);
    p = pattern_cost(&c, "list-projects-newest");  /* the workspace and its 20 projects: two finds side by side */
    assert_int_equal(p->round_trips, 1); NEAR(p->requests, 2); NEAR(p->items, 21); NEAR(p->io_units, 1 + 2);
    p = pattern_cost(&c, "list-active-projects");  /* one find on the {status, createdAt} index: 50 x 342.8 B */
    NEAR(p->requests, 1); NEAR(p->items, 50); NEAR(p->bytes, 50 * 342.8); NEAR(p->io_units, 5);
    NEAR(c.read_io, 500 * 1 + 200 * 3 + 300 * 1 + 5 * 5);
    NEAR(c.io_units, c.read_io + 5 * c.write_io);
    kp_cost_free(&c);
    kp_design_list_free(&list);
    kp_model_free(m);
}

/* An Atlas cluster grows with the data: a larger tier, then shards of the largest. */
static void test_atlas_tier_grows_with_the_data(void **state)
{
    (void)state;
    double last_total = 0;
    const double scales[] = {1, 100, 2000};
    for (size_t i = 0; i < 3; i++) {
        kp_model_options mo = {.scale = scales[i]};
        kp_model *m = NULL;
        kp_error err;
        if (kp_model_load("examples/saas-control-plane/model.json", &mo, &m, &err)) fail_msg("%s", err.message);
        kp_design_list list;
        kp_design *d = design_of(m, "mongodb", NULL, &list);
        kp_cost c;
        assert_int_equal(kp_cost_compute(d, NULL, NULL, &c, &err), 0);
        double gb = c.storage_bytes / 1e9;
        /* the tier chosen holds its share of the data, and no smaller tier would */
        assert_true(c.shards * c.tier->disk_gb >= gb * 1.3 && c.shards * c.tier->ram_gb >= gb * 0.25);
        if (c.shards == 1 && c.tier != d->backend->limits->pricing->tiers)
            assert_false(c.tier[-1].disk_gb >= gb * 1.3 && c.tier[-1].ram_gb >= gb * 0.25);
        if (i == 2) assert_true(c.shards > 1);
        assert_true(c.month_total > last_total);
        last_total = c.month_total;
        /* --price-hour replaces the tier's hourly price */
        kp_prices prices = KP_PRICES_DEFAULT;
        prices.per_hour = 1;
        kp_cost_free(&c);
        assert_int_equal(kp_cost_compute(d, NULL, &prices, &c, &err), 0);
        NEAR(c.month_total, c.shards * 720.0);
        kp_cost_free(&c);
        kp_design_list_free(&list);
        kp_model_free(m);
    }
}

/* Saas on Cassandra: one query table per listing; projects of a workspace in 10 buckets. */
static void test_saas_cassandra_costs_by_hand(void **state)
{
    (void)state;
    kp_model *m = load("examples/saas-control-plane/model.json");
    kp_design_list list;
    kp_design *d = design_of(m, "cassandra", NULL, &list);
    kp_cost c;
    kp_error err;
    assert_int_equal(kp_cost_compute(d, NULL, NULL, &c, &err), 0);
    const kp_pattern_cost *p = pattern_cost(&c, "workspace-settings");
    NEAR(p->requests, 1); NEAR(p->items, 1); NEAR(p->io_units, 1);
    p = pattern_cost(&c, "list-projects-newest");
    /* 10 range buckets of createdAt: the newest holds 20 of the 200 on average, and the page
     * asks for 21 (LIMIT 20 and one more, which tells that another page follows): about one
     * bucket more, read after it; before, 10 hash buckets each answered 20 rows: 200 read
     * for the page */
    assert_int_equal(p->round_trips, 1); NEAR(p->requests, 2); NEAR(p->items, 21);
    NEAR(p->io_units, ceil(p->bytes / 4096.0));   /* 21 rows x 247.2 B: 2 units of 4 KB */
    double listing_io = p->io_units;
    p = pattern_cost(&c, "get-project");
    NEAR(p->requests, 1); NEAR(p->io_units, 1);
    /* the active projects: the newest of 10 range buckets answers its LIMIT of 50 and one more
     * (a token page: the row past the page tells that another follows) */
    p = pattern_cost(&c, "list-active-projects");
    NEAR(p->requests, 1); NEAR(p->items, 51); NEAR(p->io_units, ceil(p->bytes / 4096.0));
    double active_io = p->io_units;
    NEAR(c.read_io, 500 * 1 + 200 * listing_io + 300 * 1 + 5 * active_io);
    /* priced as Amazon Keyspaces: its request units are the neutral units (4 KB read at
     * LOCAL_QUORUM, 1 KB written per row) */
    assert_true(c.is_priced);
    assert_null(c.tier);
    NEAR(c.month_reads, c.read_io * 2.592 * 0.125);
    NEAR(c.month_writes, c.write_io * 2.592 * 0.625);
    NEAR(c.month_storage, c.storage_bytes / 1073741824.0 * 0.25);
    kp_cost_free(&c);
    kp_design_list_free(&list);
    kp_model_free(m);
}

static kp_model *saas_with_shards(int shards)
{
    const char *const from[] = {"\"list-active-projects\": 10"};
    char shard_count[64];
    snprintf(shard_count, sizeof shard_count, "\"list-active-projects\": %d", shards);
    const char *const to[] = {shard_count};
    return kp_test_edited_model("examples/saas-control-plane/model.json", from, to, 1);
}

static void test_saas_active_listing_is_hot_without_shards(void **state)
{
    (void)state;
    kp_model *m = saas_with_shards(1);
    kp_design_list list;
    kp_design *d = design_of(m, "dynamodb", NULL, &list);
    kp_risks risks = {0};
    kp_error err;
    assert_int_equal(kp_risk_check(d, NULL, NULL, &risks, &err), 0);
    const kp_risk *r = kp_risks_find(&risks, "hot-partition", "list-active-projects");
    assert_non_null(r);
    NEAR(r->share, 1);
    NEAR(r->limit, 3000);
    assert_int_equal(r->shards, 10);
    kp_risks_free(&risks);
    kp_design_list_free(&list);
    kp_model_free(m);
    /* with the shard count it proposes, the risk is gone */
    m = saas_with_shards(10);
    d = design_of(m, "dynamodb", NULL, &list);
    assert_int_equal(d->plans[3].shards, 10);
    assert_int_equal(kp_risk_check(d, NULL, NULL, &risks, &err), 0);
    assert_null(kp_risks_find(&risks, "hot-partition", "list-active-projects"));
    kp_risks_free(&risks);
    kp_design_list_free(&list);
    kp_model_free(m);
}

/* Without a per-partition throughput limit (MongoDB, Cassandra) the one-key listing is
 * still a warning: one partition serves it however large the cluster; Cassandra's hash
 * buckets spread it (the plan's shards), so there it is gone. */
static void test_active_listing_share_on_databases_without_a_partition_limit(void **state)
{
    (void)state;
    kp_model *m = load("examples/saas-control-plane/model.json");
    kp_design_list list;
    kp_design *d = design_of(m, "mongodb", NULL, &list);
    kp_risks risks = {0};
    kp_error err;
    assert_int_equal(kp_risk_check(d, NULL, NULL, &risks, &err), 0);
    /* MongoDB: every request names the same status, but an unsharded collection serves it
     * from its {status, createdAt} index, 5 req/s that no partition routes: no warning
     * (a warning that proposed 10 shards here was false) */
    assert_null(kp_risks_find(&risks, "hot-partition", "list-active-projects"));
    kp_risks_free(&risks);
    kp_design_list_free(&list);
    d = design_of(m, "cassandra", NULL, &list);
    size_t i = 0;
    while (i < d->plan_count && strcmp(d->plans[i].pattern->name, "list-active-projects") != 0) i++;
    assert_true(i < d->plan_count);
    /* Cassandra: range buckets, one partition answers the page (no shards), all requests
     * name the same status; 5 req/s on one partition, which no per-partition limit bounds and
     * its replicas serve with room to spare: no warning (below 100 req/s, risk.c) */
    assert_true(d->plans[i].shards <= 1);
    assert_int_equal(kp_risk_check(d, NULL, NULL, &risks, &err), 0);
    assert_null(kp_risks_find(&risks, "hot-partition", "list-active-projects"));
    for (size_t c = 0; c < d->container_count; c++) {
        assert_true(d->containers[c].is_partition_bounded);
        assert_true(d->containers[c].max_item_bytes > 0);
        assert_true(d->containers[c].max_partition_items <= 100000);
    }
    kp_risks_free(&risks);
    kp_design_list_free(&list);
    kp_model_free(m);
}

/* Leaderboard: a player's matches are unbounded; the 'embed' alternative forces them
 * into the player document. */
static void test_forced_embedding_passes_16_mb(void **state)
{
    (void)state;
    kp_model *m = load("examples/leaderboard/model.json");
    kp_design_list list;
    kp_design *d = design_of(m, "mongodb", "embed", &list);
    kp_risks risks = {0};
    kp_error err;
    assert_int_equal(kp_risk_check(d, NULL, NULL, &risks, &err), 0);
    const kp_risk *r = kp_risks_find(&risks, "item-size", "Player");
    assert_non_null(r);
    assert_int_equal(r->severity, KP_RISK_DEFECT);
    assert_non_null(strstr(r->message, "16.0 MB"));
    assert_non_null(strstr(r->message, "unbounded"));
    kp_risks_free(&risks);
    /* the recommended design references them: no size risk */
    d = list.items[0];
    assert_int_equal(kp_risk_check(d, NULL, NULL, &risks, &err), 0);
    assert_null(kp_risks_find(&risks, "item-size", NULL));
    kp_risks_free(&risks);
    kp_design_list_free(&list);
    kp_model_free(m);
}

/* A container no pattern reads and no write reads before writing is a warning with what it
 * costs. The blog fixture with tags through a join entity on Cassandra: post_tag's table by
 * key is only ever written (tag-post inserts a pairing). hotel-reservations: room_night's
 * table by key is where make-reservation's condition on a night is tested (a lightweight
 * transaction), so it is read and not flagged; ecommerce's order_item table by
 * key, only ever inserted into and held whole by the query table its listing reads, is not
 * made at all; the order table is read by key before update-order-status rewrites the
 * order's rows in the tables keyed by its status, so it stays unflagged. A share-match
 * fanning out to 50 feeds is the model's fan-out, not an amplification by copies. */
static void test_a_container_nobody_reads_is_a_warning_with_its_write_cost(void **state)
{
    (void)state;
    kp_model *m = load("tests/fixtures/models/blog-through.json");
    kp_design_list list;
    kp_design *d = design_of(m, "cassandra", NULL, &list);
    kp_risks risks = {0};
    kp_error err;
    assert_int_equal(kp_risk_check(d, NULL, NULL, &risks, &err), 0);
    const kp_risk *r = kp_risks_find(&risks, "unread-container", "post_tag");
    assert_non_null(r);
    assert_int_equal(r->severity, KP_RISK_WARNING);
    assert_non_null(strstr(r->message, "'tag-post'"));
    kp_risks_free(&risks);
    kp_design_list_free(&list);
    kp_model_free(m);
    m = load("examples/hotel-reservations/model.json");
    d = design_of(m, "cassandra", NULL, &list);
    assert_int_equal(kp_risk_check(d, NULL, NULL, &risks, &err), 0);
    assert_null(kp_risks_find(&risks, "unread-container", "room_night"));
    assert_non_null(kp_risks_find(&risks, "unread-container", "room"));
    const kp_write_plan *wp = &d->write_plans[kp_model_write(m, "make-reservation")->index];
    assert_non_null(strstr(wp->why, "3 RoomNight rows on room_night (UPDATE IF is_available = ?)"));
    assert_true(wp->requests == 1 + 3 && wp->read_requests == 3);
    kp_risks_free(&risks);
    kp_design_list_free(&list);
    kp_model_free(m);
    m = load("examples/ecommerce-single-table/model.json");
    d = design_of(m, "cassandra", NULL, &list);
    assert_null(kp_design_container(d, "order_item"));
    assert_non_null(kp_design_container(d, "order"));
    assert_int_equal(kp_risk_check(d, NULL, NULL, &risks, &err), 0);
    assert_null(kp_risks_find(&risks, "unread-container", NULL));
    kp_risks_free(&risks);
    kp_design_list_free(&list);
    d = design_of(m, "dynamodb", NULL, &list);
    assert_int_equal(kp_risk_check(d, NULL, NULL, &risks, &err), 0);
    assert_null(kp_risks_find(&risks, "unread-container", NULL));
    kp_risks_free(&risks);
    kp_design_list_free(&list);
    kp_model_free(m);
    /* MongoDB: a collection a write's condition is tested against (order-response's Product:
     * place-order's stock test) or a subset's re-read reads (leaderboard's SeasonRating, which
     * the Season document's first 100 are rebuilt from) is read, though no pattern reads it */
    static const char *const read_by_writes[][2] = {{"examples/order-response/model.json", "Product"},
                                                    {"examples/leaderboard/model.json", "SeasonRating"}};
    for (size_t i = 0; i < 2; i++) {
        m = load(read_by_writes[i][0]);
        d = design_of(m, "mongodb", NULL, &list);
        assert_non_null(kp_design_container(d, read_by_writes[i][1]));
        assert_int_equal(kp_risk_check(d, NULL, NULL, &risks, &err), 0);
        assert_null(kp_risks_find(&risks, "unread-container", read_by_writes[i][1]));
        kp_risks_free(&risks);
        kp_design_list_free(&list);
        kp_model_free(m);
    }
    m = load("examples/leaderboard/model.json");
    for (int k = 0; k < 3; k++) {
        d = design_of(m, (const char *[]){"dynamodb", "mongodb", "cassandra"}[k], NULL, &list);
        assert_int_equal(kp_risk_check(d, NULL, NULL, &risks, &err), 0);
        assert_null(kp_risks_find(&risks, "write-amplification", "share-match"));
        kp_risks_free(&risks);
        kp_design_list_free(&list);
    }
    kp_model_free(m);
}

static cJSON *compare_all(const kp_model *m, const char *mix)
{
    const kp_backend *backends[9] = {0};
    kp_error err;
    assert_int_equal(kp_backend_parse_list("all", backends, 8, &err), 0);
    kp_compare_options o = {.backends = backends, .prices = KP_PRICES_DEFAULT};
    if (mix) o.mix = kp_model_mix(m, mix);
    cJSON *doc = kp_compare(m, &o, &err);
    if (!doc) fail_msg("compare: %s", err.message);
    return doc;
}

/* The recommendations stated in examples/<name>/README.md, section "Recommendation". */
static void expect_recommendation(const char *example, const char *design)
{
    char path[256];
    snprintf(path, sizeof path, "examples/%s/model.json", example);
    kp_model *m = load(path);
    cJSON *doc = compare_all(m, NULL);
    const cJSON *r = kp_compare_recommendation(doc, NULL);
    assert_non_null(r);
    const cJSON *got = cJSON_GetObjectItem(r, "design");
    assert_string_equal(got->valuestring, design);
    assert_true(cJSON_GetArraySize(cJSON_GetObjectItem(r, "reasons")) >= 2);
    /* the load is compared with the lightest other design (not only the runner-up, which a
     * near-tie may rank above it) */
    const cJSON *mix0 = cJSON_GetArrayItem(cJSON_GetObjectItem(doc, "mixes"), 0);
    const char *lightest = NULL;
    double least = 0;
    const cJSON *des;
    cJSON_ArrayForEach(des, cJSON_GetObjectItem(mix0, "designs"))
    {
        const char *label = cJSON_GetObjectItem(des, "design")->valuestring;
        double io = cJSON_GetObjectItem(cJSON_GetObjectItem(cJSON_GetObjectItem(des, "cost"), "totals"), "io_units_per_s")->valuedouble;
        if (strcmp(label, design) != 0 && (!lightest || io < least)) lightest = label, least = io;
    }
    assert_non_null(lightest);
    int named = 0;
    const cJSON *reason;
    cJSON_ArrayForEach(reason, cJSON_GetObjectItem(r, "reasons")) named |= strstr(reason->valuestring, lightest) != NULL;
    if (!named) fail_msg("%s: no reason names %s, the lightest other design", example, lightest);
    /* the README says so */
    snprintf(path, sizeof path, "examples/%s/README.md", example);
    size_t len;
    char *readme = kp_test_read_file(path, &len);
    assert_non_null(readme);
    char stated[200];
    snprintf(stated, sizeof stated, "`keyplan compare` recommends `%s`", design);
    if (!strstr(readme, stated)) fail_msg("%s does not state: %s", path, stated);
    free(readme);
    cJSON_Delete(doc);
    kp_model_free(m);
}

/* #14's rule, as risk checks it on each database's first design of every bundled example:
 * the patterns whose claimed items for one page pass an expert's bound (kp_page_bound). A
 * change that serves one better removes it here, a change that serves one worse fails. Each
 * says why: where the model makes every design read past the page (a range apart from the
 * order, an offset without a max) or leaves Cassandra only hash buckets (an order whose values
 * do not say how they spread), what model change removes it; else that only ties pass it. */
static void test_patterns_past_an_expert_page_are_warned(void **state)
{
    (void)state;
    static const char *const examples[] = {"auction-mixes", "forum", "leaderboard", "order-response", "saas-control-plane",
                                           "ecommerce-single-table", "hotel-reservations", "product-catalog"};
    static const char *const dbs[] = {"dynamodb", "mongodb", "cassandra"};
    static const char *const expected =
        " auction-mixes/dynamodb/admin-report auction-mixes/mongodb/admin-report auction-mixes/cassandra/list-category-items"
        " auction-mixes/cassandra/admin-report"
        " leaderboard/cassandra/followers order-response/mongodb/buy-again";
    char found[2048] = "";
    for (size_t e = 0; e < sizeof examples / sizeof *examples; e++) {
        char path[128];
        snprintf(path, sizeof path, "examples/%s/model.json", examples[e]);
        kp_model *m = load(path);
        for (size_t b = 0; b < 3; b++) {
            kp_design_list list;
            kp_design *d = design_of(m, dbs[b], NULL, &list);
            kp_risks risks = {0};
            kp_error err;
            assert_int_equal(kp_risk_check(d, NULL, NULL, &risks, &err), 0);
            for (size_t i = 0; i < risks.count; i++) {
                if (strcmp(risks.items[i].kind, "page-bound") != 0) continue;
                assert_int_equal(risks.items[i].severity, KP_RISK_WARNING);
                size_t at = strlen(found);
                snprintf(found + at, sizeof found - at, " %s/%s/%s", examples[e], dbs[b], risks.items[i].subject);
                /* every plan past the bound says why: the model, or ties */
                assert_null(strstr(risks.items[i].message, "no better yet"));
                if (!strcmp(risks.items[i].subject, "followers")) {
                    /* 15 hash buckets: the follower ids do not say how they spread */
                    assert_non_null(strstr(risks.items[i].message, "hash buckets, since Follow.followerId's values do not say how they spread"));
                    assert_non_null(strstr(risks.items[i].message, "declare it a uuid"));
                }
                if (!strcmp(risks.items[i].subject, "admin-report")) {
                    assert_non_null(strstr(risks.items[i].message, "its range (endsAt) and its order (reservePrice first)"));
                    assert_non_null(strstr(risks.items[i].message, "its offset :skip has no max"));
                }
            }
            kp_risks_free(&risks);
            kp_design_list_free(&list);
        }
        kp_model_free(m);
    }
    assert_string_equal(found, expected);
}

static void test_recommendation_per_example(void **state)
{
    (void)state;
    expect_recommendation("saas-control-plane", "mongodb/documents");
    /* once LSI writes are counted, and Cassandra keeps no table of order lines by key that
     * nothing reads: a near-tie with mongodb/documents, broken by the load */
    expect_recommendation("ecommerce-single-table", "cassandra/query tables");
    /* a near-tie of the two DynamoDB designs on load (the LSI's writes counted, a page of
     * followers 101 items read, not 2,551), in as many round trips since the normalised
     * design reads a player's follows through an index on either side: lighter, fewer warnings */
    expect_recommendation("leaderboard", "dynamodb/normalised");
    /* with the carrier kept on the order, day-carrier-orders reads one index page on every
     * design: a near-tie with dynamodb/single-table, broken by round trips */
    expect_recommendation("order-response", "mongodb/reference");
    /* once items-by-tag reads an adjacency list (not a Scan) and admin-report reads its
     * index in order, pages until 100 match (not the whole bidCount = 0 partition) */
    expect_recommendation("auction-mixes", "cassandra/query tables");
    expect_recommendation("hotel-reservations", "cassandra/query tables");
    expect_recommendation("product-catalog", "cassandra/query tables");
}

/* RUBiS: the mixes disagree. Under browsing Cassandra's query tables have the lightest load
 * (view-item, 900/s, reads its item row and its latest bids beside it, the tags' names copied
 * in the row); under bidding (400 bids/s) MongoDB's, whose bidding design drops the copy of an
 * item's latest bids (browsing keeps it), where a bid on DynamoDB writes the bid and the item
 * and their index entries. compare says the mix changes the recommendation, and names it. */
static void test_auction_mixes_disagree(void **state)
{
    (void)state;
    kp_model *m = load("examples/auction-mixes/model.json");
    cJSON *doc = compare_all(m, NULL);
    const cJSON *browsing = kp_compare_recommendation(doc, "browsing"), *bidding = kp_compare_recommendation(doc, "bidding");
    assert_non_null(browsing);
    assert_non_null(bidding);
    assert_string_equal(cJSON_GetObjectItem(browsing, "design")->valuestring, "cassandra/query tables");
    assert_string_equal(cJSON_GetObjectItem(bidding, "design")->valuestring, "mongodb/documents");
    assert_true(cJSON_IsTrue(cJSON_GetObjectItem(doc, "mix_changes_recommendation")));
    const cJSON *by = cJSON_GetObjectItem(doc, "recommendation_by_mix");
    const cJSON *second = cJSON_GetArrayItem(by, 1);
    assert_string_equal(cJSON_GetObjectItem(second, "mix")->valuestring, "bidding");
    const cJSON *differences = cJSON_GetObjectItem(second, "differences");
    assert_int_equal(cJSON_GetArraySize(differences), 1);
    assert_string_equal(cJSON_GetArrayItem(differences, 0)->valuestring, "mongodb/documents instead of cassandra/query tables");
    cJSON_Delete(doc);
    /* MongoDB under each mix: the copy of the latest bids only while browsing */
    const char *subset[2] = {NULL, NULL};
    for (int k = 0; k < 2; k++) {
        kp_design_list list;
        const kp_backend *b = kp_backend_find("mongodb");
        kp_propose_options o = {kp_model_mix(m, k ? "bidding" : "browsing"), 0};
        kp_error err;
        assert_non_null(o.mix);
        if (b->propose(m, &o, &list, &err)) fail_msg("mongodb propose: %s", err.message);
        const kp_design *d = list.items[0];
        for (size_t i = 0; i < d->decision_count; i++)
            if (!strcmp(d->decisions[i].subject, "Item.bids subset")) subset[k] = strstr(d->decisions[i].choice, "no subset") ? "none" : "copy";
        kp_design_list_free(&list);
    }
    assert_non_null(subset[0]);
    assert_non_null(subset[1]);
    assert_string_equal(subset[0], "copy");
    assert_string_equal(subset[1], "none");
    kp_model_free(m);
}

static void test_markdown_fits_a_pull_request_comment(void **state)
{
    (void)state;
    /* a document with 3,000 patterns renders far past 65,536 characters */
    cJSON *doc = cJSON_CreateObject();
    cJSON_AddStringToObject(doc, "model", "big");
    cJSON *patterns = cJSON_AddArrayToObject(doc, "patterns");
    cJSON *mix = cJSON_CreateObject();
    cJSON_AddItemToArray(cJSON_AddArrayToObject(doc, "mixes"), mix);
    cJSON *design = cJSON_CreateObject();
    cJSON_AddItemToArray(cJSON_AddArrayToObject(mix, "designs"), design);
    cJSON_AddStringToObject(design, "design", "db/one");
    cJSON *costs = cJSON_AddArrayToObject(cJSON_AddObjectToObject(design, "cost"), "patterns");
    for (int i = 0; i < 3000; i++) {
        char name[32];
        snprintf(name, sizeof name, "pattern-%04d", i);
        cJSON_AddItemToArray(patterns, cJSON_CreateString(name));
        cJSON *p = cJSON_CreateObject();
        cJSON_AddStringToObject(p, "name", name);
        cJSON_AddNumberToObject(p, "round_trips", 1);
        cJSON_AddItemToArray(costs, p);
    }
    char *md = kp_compare_markdown(doc);
    assert_non_null(md);
    assert_true(strlen(md) <= KP_MARKDOWN_LIMIT);
    assert_non_null(strstr(md, "Truncated to fit a pull-request comment"));
    assert_non_null(strstr(md, "| `db/one` |"));
    free(md);
    cJSON_Delete(doc);
    /* a small one is whole */
    kp_model *m = load("examples/saas-control-plane/model.json");
    doc = compare_all(m, NULL);
    md = kp_compare_markdown(doc);
    assert_null(strstr(md, "Truncated"));
    assert_non_null(strstr(md, "#### `list-active-projects`"));
    free(md);
    cJSON_Delete(doc);
    kp_model_free(m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_saas_dynamodb_costs_by_hand),
        cmocka_unit_test(test_saas_mongodb_costs_by_hand),
        cmocka_unit_test(test_atlas_tier_grows_with_the_data),
        cmocka_unit_test(test_saas_cassandra_costs_by_hand),
        cmocka_unit_test(test_saas_active_listing_is_hot_without_shards),
        cmocka_unit_test(test_active_listing_share_on_databases_without_a_partition_limit),
        cmocka_unit_test(test_forced_embedding_passes_16_mb),
        cmocka_unit_test(test_a_container_nobody_reads_is_a_warning_with_its_write_cost),
        cmocka_unit_test(test_patterns_past_an_expert_page_are_warned),
        cmocka_unit_test(test_recommendation_per_example),
        cmocka_unit_test(test_auction_mixes_disagree),
        cmocka_unit_test(test_markdown_fits_a_pull_request_comment),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
