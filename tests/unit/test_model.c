/*
 * test_model.c — the model as parsed: every feature of the format lands in the
 * in-memory model as written (tests/fixtures/models/every-feature.json and the
 * examples), counts are derived and scaled, rates follow mixes.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "core/model.h"
#include "support.h"

static kp_model *load(const char *path, double scale)
{
    kp_model *m = NULL;
    kp_error err;
    kp_model_options options = {.scale = scale};
    if (kp_model_load(path, &options, &m, &err)) {
        kp_error_print(stderr, &err);
        fail_msg("%s did not load", path);
    }
    return m;
}

static const kp_shape *member(const kp_shape *s, const char *name)
{
    for (size_t i = 0; i < s->member_count; i++)
        if (strcmp(s->members[i]->name, name) == 0) return s->members[i];
    fail_msg("no member %s", name);
    return NULL;
}

static void test_list_projects_newest_is_parsed_as_the_design_sketch_says(void **state)
{
    (void)state;
    kp_model *m = load("examples/saas-control-plane/model.json", 1);
    kp_pattern *p = kp_model_pattern(m, "list-projects-newest");
    assert_non_null(p);
    assert_string_equal(p->root->name, "Workspace");
    assert_false(p->is_root_set);
    assert_int_equal(p->where_count, 1);
    assert_int_equal(p->where[0].op, KP_OP_EQ);
    assert_string_equal(p->where[0].value.param->name, "id");
    assert_int_equal(p->returns->kind, KP_SHAPE_OBJECT);
    const kp_shape *projects = member(p->returns, "projects");
    assert_int_equal(projects->kind, KP_SHAPE_EACH);
    assert_int_equal(projects->hop_count, 1);
    assert_string_equal(projects->hops[0]->name, "projects");
    assert_string_equal(projects->entity->name, "Project");
    assert_string_equal(projects->order[0].attr->name, "createdAt");
    assert_true(projects->order[0].is_desc);
    assert_int_equal(projects->declared_order_count, 1);
    /* ties broken by the key, appended */
    assert_int_equal(projects->order_count, 1 + projects->entity->key_count);
    assert_true(projects->order[projects->order_count - 1].is_implicit);
    assert_int_equal(projects->limit, 20);
    assert_int_equal(projects->page, KP_PAGE_TOKEN);
    assert_ptr_equal(projects->token, member(p->returns, "next"));
    assert_ptr_equal(member(p->returns, "next")->paged, projects);
    assert_ptr_equal(p->paged, projects);
    kp_model_free(m);
}

static void test_every_feature_is_parsed_as_written(void **state)
{
    (void)state;
    kp_model *m = load("tests/fixtures/models/every-feature.json", 1);
    kp_entity *user = kp_model_entity(m, "User");
    kp_entity *message = kp_model_entity(m, "Message");
    /* attributes */
    kp_attr *email = kp_entity_attr(user, "email");
    assert_true(email->is_unique);
    assert_string_equal(email->format, "email");
    assert_true(email->avg_size == 24 && email->max_size == 120);
    kp_attr *bio = kp_entity_attr(user, "bio");
    assert_true(bio->is_optional);
    assert_true(bio->presence == 0.3);
    kp_attr *address = kp_entity_attr(user, "address");
    assert_int_equal(address->type.kind, KP_T_OBJECT);
    assert_int_equal(address->type.field_count, 2);
    assert_true(address->type.fields[1]->is_optional);
    kp_attr *tags = kp_entity_attr(user, "tags");
    assert_int_equal(tags->type.kind, KP_T_ARRAY);
    assert_int_equal(tags->type.item->kind, KP_T_STRING);
    assert_true(tags->type.avg_items == 3 && tags->type.max_items == 20);
    kp_attr *labels = kp_entity_attr(user, "labels");
    assert_int_equal(labels->type.kind, KP_T_MAP);
    assert_int_equal(labels->type.item->kind, KP_T_INT);
    assert_int_equal(kp_entity_attr(user, "born")->type.kind, KP_T_DATE);
    assert_int_equal(kp_entity_attr(user, "apiKey")->type.kind, KP_T_UUID);
    assert_int_equal(kp_entity_attr(user, "loginCount")->type.kind, KP_T_COUNTER);
    assert_int_equal(kp_entity_attr(message, "eventId")->type.kind, KP_T_TIMEUUID);
    assert_int_equal(kp_entity_attr(message, "sentAt")->encoding, KP_ENC_EPOCH_MS);
    assert_int_equal(kp_entity_attr(message, "payload")->type.kind, KP_T_BLOB);
    kp_attr *state_attr = kp_entity_attr(message, "state");
    assert_int_equal(state_attr->type.enum_count, 2);
    kp_attr *copy = kp_entity_attr(message, "authorName");
    assert_non_null(copy->copy_of);
    assert_string_equal(copy->copy_of->path[0]->name, "author");
    assert_ptr_equal(copy->copy_of->source, kp_entity_attr(user, "surname"));
    kp_attr *derived = kp_entity_attr(user, "followerCount");
    assert_int_equal(derived->derived->fn, KP_AGG_COUNT);
    assert_string_equal(derived->derived->path[0]->name, "followers");
    /* relations */
    kp_rel *followers = kp_entity_rel(user, "followers");
    assert_true(followers->is_inverse && followers->is_many);
    assert_int_equal(followers->relation->link, KP_LINK_THROUGH);
    assert_string_equal(followers->relation->through->name, "Follow");
    assert_true(followers->fanout->max == 200000);
    kp_rel *messages = kp_entity_rel(kp_model_entity(m, "Room"), "messages");
    assert_true(messages->relation->fanout.is_unbounded);
    assert_true(messages->relation->fanout.max == 4000); /* horizon: 10 x avg when no max */
    kp_rel *room_tags = kp_entity_rel(kp_model_entity(m, "Room"), "tags");
    assert_int_equal(room_tags->relation->link, KP_LINK_ARRAY);
    kp_relation *reactions = kp_entity_rel(message, "reactions")->relation;
    assert_int_equal(reactions->fk_count, 2);
    assert_string_equal(reactions->fk_attrs[0]->name, "messageRoomId"); /* reordered to the key order */
    assert_int_equal(reactions->on_delete, KP_DELETE_CASCADE);
    assert_true(followers->relation->has_skew && followers->relation->skew == 1.2);
    /* counts derived from fan-outs */
    assert_true(kp_model_entity(m, "Follow")->count == 10000);
    assert_false(kp_model_entity(m, "Follow")->is_count_given);
    assert_true(message->count == 20000);
    /* a unique attribute pins one record */
    kp_pattern *login = kp_model_pattern(m, "login");
    assert_false(login->is_root_set);
    /* history: optional parameter, $where, $limit parameter, token field, $one, $count, $value, echo, $expect */
    kp_pattern *history = kp_model_pattern(m, "history");
    assert_true(history->has_skew && history->skew == 1.5);
    assert_int_equal(member(history->returns, "room")->kind, KP_SHAPE_PARAM);
    const kp_shape *msgs = member(history->returns, "messages");
    assert_int_equal(msgs->where_count, 1);
    assert_int_equal(msgs->where[0].op, KP_OP_GT);
    assert_true(msgs->where[0].value.param->is_optional);
    assert_string_equal(msgs->limit_param->name, "pageSize");
    assert_int_equal(msgs->limit_param->role, KP_PARAM_LIMIT);
    assert_non_null(msgs->limit_param->default_value);
    assert_true(msgs->expect.is_given && msgs->expect.max == 100);
    assert_int_equal(member(msgs, "by")->kind, KP_SHAPE_ONE);
    assert_int_equal(member(msgs, "reactionCount")->kind, KP_SHAPE_COUNT);
    const kp_shape *author = member(msgs, "author");
    assert_int_equal(author->kind, KP_SHAPE_ATTR);
    assert_int_equal(author->path_len, 1);
    const kp_shape *labels_shape = member(history->returns, "tagLabels");
    assert_non_null(labels_shape->value);
    assert_string_equal(labels_shape->value->attr->name, "label");
    /* bare array with offset paging and a multi-key order with nulls first */
    kp_pattern *fo = kp_model_pattern(m, "followers-of");
    assert_int_equal(fo->returns->kind, KP_SHAPE_EACH);
    assert_int_equal(fo->returns->page, KP_PAGE_OFFSET);
    assert_string_equal(fo->returns->offset_param->name, "skip");
    assert_int_equal(fo->returns->declared_order_count, 2);
    assert_true(fo->returns->order[1].is_desc && fo->returns->order[1].is_nulls_first);
    assert_false(fo->returns->order[0].is_nulls_first);
    /* multi-hop path */
    kp_pattern *multi = kp_model_pattern(m, "rooms-of-followees");
    assert_int_equal(multi->returns->hop_count, 2);
    assert_ptr_equal(multi->returns->entity, message);
    assert_non_null(multi->returns->where[0].value.literal);
    /* a set root with conditions on a related entity, between and begins_with; the one
     * through the author (author.surname) is answered by Message's copy of it (authorName,
     * copy_of author.surname): a condition on the record's own attribute, its parameter
     * named as written */
    kp_pattern *by = kp_model_pattern(m, "messages-by-surname");
    assert_true(by->is_root_set);
    assert_int_equal(by->where_count, 3);
    assert_int_equal(by->where[0].path_len, 0);
    assert_ptr_equal(by->where[0].attr, kp_entity_attr(message, "authorName"));
    assert_string_equal(by->where[0].value.param->name, "surname");
    assert_int_equal(by->where[1].op, KP_OP_BETWEEN);
    assert_string_equal(by->where[1].upper.param->name, "to");
    assert_int_equal(by->where[2].op, KP_OP_BEGINS_WITH);
    assert_true(by->returns->is_root_set);
    assert_int_equal(by->returns->page, KP_PAGE_TOKEN);
    assert_null(by->returns->token);
    /* writes */
    kp_write *post = kp_model_write(m, "post");
    assert_true(post->is_atomic);
    assert_int_equal(post->step_count, 2);
    assert_true(post->steps[0].is_if_absent);
    assert_int_equal(post->steps[1].assigns[0].kind, KP_ASSIGN_INCREMENT);
    kp_write *edit = kp_model_write(m, "edit");
    assert_int_equal(edit->steps[0].condition_count, 1);
    assert_int_equal(edit->steps[0].assigns[0].kind, KP_ASSIGN_SET);
    kp_write *rename = kp_model_write(m, "rename");
    assert_int_equal(rename->steps[0].assign_count, 2);
    assert_int_equal(rename->steps[0].assigns[1].kind, KP_ASSIGN_DECREMENT);
    kp_write *close = kp_model_write(m, "close-room");
    assert_int_equal(close->steps[1].for_each_len, 1);
    assert_true(close->steps[1].rows == 400);
    assert_string_equal(close->steps[2].link->name, "message");
    kp_write *purge = kp_model_write(m, "purge");
    assert_true(purge->schedule_every_s == 86400);
    assert_true(purge->rps > 5.78 && purge->rps < 5.79);
    assert_int_equal(purge->steps[0].op, KP_WRITE_DELETE);
    assert_int_equal(kp_model_write(m, "save-user")->steps[0].op, KP_WRITE_UPSERT);
    /* workload: mixes override rates; groups; hints */
    assert_string_equal(m->default_mix->name, "reading");
    assert_true(kp_pattern_rps(history, m->default_mix) == 900);
    assert_true(kp_pattern_rps(history, kp_model_mix(m, "writing")) == 100);
    assert_true(kp_pattern_rps(history, NULL) == 300);
    assert_true(kp_pattern_rps(login, m->default_mix) == 50);
    assert_true(kp_write_rps(post, kp_model_mix(m, "writing")) == 400);
    assert_true(kp_pattern_skew(m, login) == 1.1);
    assert_true(kp_write_skew(m, post) == 1.5);
    assert_int_equal(m->group_count, 1);
    assert_int_equal(m->groups[0]->pattern_count, 2);
    assert_int_equal(m->hint_count, 4);
    assert_ptr_equal(m->hints[0].rel, kp_entity_rel(message, "reactions"));
    assert_ptr_equal(m->hints[2].write, post);
    assert_true(m->hints[2].number == 4);
    kp_model_free(m);
}

static void test_scale_multiplies_counts_and_caps_fanout(void **state)
{
    (void)state;
    kp_model *m = load("examples/saas-control-plane/model.json", 0.001);
    kp_entity *ws = kp_model_entity(m, "Workspace");
    kp_entity *project = kp_model_entity(m, "Project");
    assert_true(ws->count == 10);
    assert_true(project->count == 2000);
    kp_relation *r = kp_entity_rel(ws, "projects")->relation;
    assert_true(r->fanout.max <= project->count);
    assert_true(r->fanout.avg == 200);
    assert_true(m->scale == 0.001);
    kp_model_free(m);
}

static void test_every_example_loads_and_renders_as_json(void **state)
{
    (void)state;
    const char *examples[] = {"saas-control-plane", "ecommerce-single-table", "leaderboard", "order-response",
                              "auction-mixes"};
    for (size_t i = 0; i < sizeof examples / sizeof *examples; i++) {
        char path[256];
        snprintf(path, sizeof path, "examples/%s/model.json", examples[i]);
        kp_model *m = load(path, 1);
        cJSON *json = kp_model_to_json(m);
        assert_int_equal(cJSON_GetObjectItem(json, "schema_version")->valueint, KP_SCHEMA_VERSION);
        assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(json, "access_patterns")), (int)m->pattern_count);
        char *text = cJSON_Print(json);
        assert_non_null(text);
        cJSON_free(text);
        cJSON_Delete(json);
        kp_model_free(m);
    }
}

static void test_check_prints_a_summary_and_json(void **state)
{
    (void)state;
    char *out;
    assert_int_equal(kp_test_run("check examples/saas-control-plane/model.json", &out), 0);
    assert_non_null(strstr(out, "Workspace.projects -> Project  1:N  fan-out avg 200, max 1,000,000"));
    assert_non_null(strstr(out, "list-projects-newest"));
    assert_non_null(strstr(out, "ok: the model is valid"));
    free(out);
    /* a condition written through a copy's hops reads as the copy it is answered by */
    assert_int_equal(kp_test_run("check tests/fixtures/models/every-feature.json", &out), 0);
    assert_non_null(strstr(out, "where authorName (a copy of author.surname) = :surname and sentAt between"));
    free(out);
    assert_int_equal(kp_test_run("check examples/saas-control-plane/model.json --format json", &out), 0);
    cJSON *json = cJSON_Parse(out);
    assert_non_null(json);
    assert_int_equal(cJSON_GetObjectItem(json, "schema_version")->valueint, 1);
    cJSON_Delete(json);
    free(out);
    assert_int_equal(kp_test_run("check --format yaml examples/saas-control-plane/model.json", &out), 2);
    free(out);
    assert_int_equal(kp_test_run("chek", &out), 2);
    assert_non_null(strstr(out, "did you mean 'check'?"));
    free(out);
    assert_int_equal(kp_test_run("check missing.json", &out), 2);
    assert_non_null(strstr(out, "missing.json: error: cannot read the file"));
    free(out);
    char *help1, *help2;
    assert_int_equal(kp_test_run("help check", &help1), 0);
    assert_int_equal(kp_test_run("check --help", &help2), 0);
    assert_string_equal(help1, help2);
    assert_non_null(strstr(help1, "example:"));
    free(help1);
    free(help2);
    assert_int_equal(kp_test_run("--version", &out), 0);
    assert_non_null(strstr(out, "keyplan "));
    free(out);
}

/* A $count that every profile read would take over up to 1.5 million follows is kept on
 * the player by the follow and unfollow writes (core/kept_counts.c), the same at any
 * --scale; a small count (an order's 50 lines at most) is counted where it is read. */
static void test_a_count_read_more_than_written_is_kept_on_the_parent(void **state)
{
    (void)state;
    double scales[] = {1, 0.00001};
    for (size_t k = 0; k < 2; k++) {
        kp_model *m = load("examples/leaderboard/model.json", scales[k]);
        const kp_entity *player = kp_model_entity(m, "Player"), *follow = kp_model_entity(m, "Follow");
        const kp_attr *kept = NULL;
        for (size_t a = 0; a < player->attr_count; a++)
            if (!strcmp(player->attrs[a]->name, "followersCount")) kept = player->attrs[a];
        assert_non_null(kept);
        assert_true(kept->is_kept && kept->derived && kept->derived->fn == KP_AGG_COUNT);
        assert_string_equal(kept->derived->path[0]->name, "followers");
        assert_int_equal((int)kept->index, (int)player->attr_count - 2); /* after the model's own, then followingCount */
        assert_non_null(strstr(kept->kept_why, "player-profile 400/s"));
        assert_non_null(strstr(kept->kept_why, "follow 30/s, unfollow 6/s"));
        /* a follow or unfollow changes it: the write-effects enumerator finds it on Follow */
        int on_follow = 0;
        for (size_t i = 0; i < follow->aggregated_by_count; i++) on_follow |= follow->aggregated_by[i] == kept;
        assert_true(on_follow);
        kp_model_free(m);
    }
    kp_model *m = load("examples/order-response/model.json", 1);
    for (size_t e = 0; e < m->entity_count; e++)
        for (size_t a = 0; a < m->entities[e]->attr_count; a++)
            assert_false(m->entities[e]->attrs[a]->is_kept && m->entities[e]->attrs[a]->derived);
    kp_model_free(m);
}

/* A listing that filters by a value of a related record (the orders of a day shipped by one
 * carrier, 30,000 a day to filter at 2 calls a second) gets a copy of it kept on the root
 * record (core/kept_copies.c), and its condition tests the copy; when the writes that would
 * keep it change that value often, it stays a filter. */
static void test_a_listing_filtered_by_a_related_value_keeps_a_copy(void **state)
{
    (void)state;
    kp_model *m = load("examples/order-response/model.json", 0.00001);
    const kp_entity *order = kp_model_entity(m, "Order"), *shipment = kp_model_entity(m, "Shipment");
    const kp_attr *kept = kp_entity_attr(order, "shippingCarrier");
    assert_non_null(kept);
    assert_true(kept->is_kept && kept->is_optional && kept->copy_of && !kept->derived);
    assert_int_equal((int)kept->copy_of->path_len, 1);
    assert_string_equal(kept->copy_of->path[0]->name, "shipping");
    assert_string_equal(kept->copy_of->source->name, "carrier");
    assert_non_null(strstr(kept->kept_why, "day-carrier-orders at 2/s (30000 each)"));
    int copied = 0;
    for (size_t i = 0; i < shipment->copied_by_count; i++) copied |= shipment->copied_by[i] == kept;
    assert_true(copied);
    const kp_pattern *p = kp_model_pattern(m, "day-carrier-orders");
    assert_non_null(p);
    int tests_copy = 0;
    for (size_t i = 0; i < p->where_count; i++) {
        assert_int_equal((int)p->where[i].path_len, 0);
        tests_copy |= p->where[i].attr == kept;
    }
    assert_true(tests_copy);
    /* the invoice it returns of each order's shipment: a copy too, which the field reads */
    const kp_attr *invoice = kp_entity_attr(order, "shippingInvoice");
    assert_non_null(invoice);
    assert_true(invoice->is_kept && invoice->is_optional && invoice->copy_of);
    assert_string_equal(invoice->copy_of->source->name, "invoice");
    assert_non_null(strstr(invoice->kept_why, "day-carrier-orders at 2/s would read each of its 100 Order records' shipping"));
    assert_non_null(strstr(invoice->kept_why, "ship-order 0/s: it writes the Order anyway"));
    const kp_shape *field = NULL;
    for (size_t i = 0; i < p->returns->member_count; i++)
        if (!strcmp(p->returns->members[i]->name, "invoice")) field = p->returns->members[i];
    assert_non_null(field);
    assert_ptr_equal(field->attr, invoice);
    assert_int_equal((int)field->path_len, 0);
    /* order-detail returns the shipment as a nested object of one order: no copy for it */
    for (size_t a = 0; a < order->attr_count; a++)
        assert_false(order->attrs[a]->is_kept && order->attrs[a]->copy_of && strcmp(order->attrs[a]->name, "shippingCarrier") &&
                     strcmp(order->attrs[a]->name, "shippingInvoice"));
    kp_model_free(m);

    /* writes that reassign carriers and invoices 10,000 times a second: keeping the copies
     * would cost more */
    const char *const from[] = {"\"writes\": ["};
    const char *const busy[] = {
        "\"writes\": [ { \"name\": \"reassign\", \"rps\": 10000, \"entity\": \"Shipment\", \"op\": \"update\", "
        "\"where\": { \"orderId\": \"=\" }, \"set\": [\"carrier\"] }, { \"name\": \"reinvoice\", \"rps\": 10000, "
        "\"entity\": \"Shipment\", \"op\": \"update\", \"where\": { \"orderId\": \"=\" }, \"set\": [\"invoice\"] },"};
    m = kp_test_edited_model("examples/order-response/model.json", from, busy, 1);
    order = kp_model_entity(m, "Order");
    for (size_t a = 0; a < order->attr_count; a++) assert_false(order->attrs[a]->is_kept);
    p = kp_model_pattern(m, "day-carrier-orders");
    int filters = 0;
    for (size_t i = 0; i < p->where_count; i++) filters |= p->where[i].path_len == 1;
    assert_true(filters);
    for (size_t i = 0; i < p->returns->member_count; i++)
        if (!strcmp(p->returns->members[i]->name, "invoice")) assert_int_equal((int)p->returns->members[i]->path_len, 1);
    kp_model_free(m);
}

/* A count with a literal $where is kept with that where; a declared derived count with the
 * same where is what the reads use, and nothing is added. */
static kp_model *room_model(const char *declared)
{
    char text[4096];
    snprintf(text, sizeof text,
             "{ \"model\": \"rooms\",\n"
             "  \"entities\": {\n"
             "    \"Room\": { \"key\": [\"id\"], \"count\": 100, \"attributes\": { \"id\": \"string\"%s } },\n"
             "    \"Message\": { \"key\": [\"roomId\", \"n\"], \"attributes\": { \"roomId\": \"string\", \"n\": \"int\", \"flagged\": \"bool\", \"text\": \"string\" } }\n"
             "  },\n"
             "  \"relations\": [ { \"name\": \"messages\", \"from\": \"Room\", \"to\": \"Message\", \"cardinality\": \"1:N\",\n"
             "      \"on\": { \"Message.roomId\": \"Room.id\" }, \"inverse\": \"room\", \"fanout\": { \"avg\": 400, \"max\": 5000 } } ],\n"
             "  \"access_patterns\": [ { \"name\": \"room\", \"rps\": 100, \"root\": \"Room\", \"where\": { \"id\": \"=\" },\n"
             "      \"returns\": { \"id\": \"Room.id\", \"flagged\": { \"$count\": \"messages\", \"$where\": { \"flagged\": { \"=\": true } } } } } ],\n"
             "  \"writes\": [ { \"name\": \"post\", \"rps\": 5, \"entity\": \"Message\", \"op\": \"insert\" },\n"
             "    { \"name\": \"reword\", \"rps\": 500, \"entity\": \"Message\", \"op\": \"update\", \"where\": { \"roomId\": \"=\", \"n\": \"=\" }, \"set\": [\"text\"] } ]\n"
             "}\n",
             declared);
    kp_model *m = NULL;
    kp_error err;
    if (kp_model_parse("rooms.json", text, strlen(text), NULL, &m, &err)) {
        kp_error_print(stderr, &err);
        fail_msg("rooms.json did not parse");
    }
    return m;
}

static void test_a_count_with_a_where_is_kept_with_it_unless_declared(void **state)
{
    (void)state;
    kp_model *m = room_model("");
    const kp_entity *room = kp_model_entity(m, "Room");
    assert_int_equal((int)room->attr_count, 2);
    const kp_attr *kept = room->attrs[1];
    assert_true(kept->is_kept);
    assert_string_equal(kept->name, "messagesCount");
    assert_int_equal((int)kept->derived->where_count, 1);
    assert_string_equal(kept->derived->where[0].attr->name, "flagged");
    /* rewording a message does not move it (500 a second): only post's inserts, 5 a second */
    assert_non_null(strstr(kept->kept_why, "(post 5/s)"));
    kp_model_free(m);
    m = room_model(", \"flaggedCount\": { \"type\": \"int\", \"derived\": { \"count\": \"messages\", \"where\": { \"flagged\": { \"=\": true } } } }");
    room = kp_model_entity(m, "Room");
    assert_int_equal((int)room->attr_count, 2);
    assert_false(room->attrs[1]->is_kept);
    kp_model_free(m);
}

/* A $count beside a $each over the same records, with the same conditions and no limit or
 * page, is that listing's length (kp_shape.counted_by): no design reads it apart and no count
 * is kept for it. order-response's shipped-lines counts the SHIPPED lines it lists; leaderboard's
 * profile counts followers it does not list. */
static void test_a_count_beside_its_whole_listing_is_its_length(void **state)
{
    (void)state;
    kp_model *m = load("examples/order-response/model.json", 1);
    const kp_pattern *p = kp_model_pattern(m, "shipped-lines");
    const kp_shape *count = NULL, *lines = NULL;
    for (size_t i = 0; i < p->returns->member_count; i++) {
        if (p->returns->members[i]->kind == KP_SHAPE_COUNT) count = p->returns->members[i];
        if (p->returns->members[i]->kind == KP_SHAPE_EACH) lines = p->returns->members[i];
    }
    assert_non_null(count);
    assert_ptr_equal(count->counted_by, lines);
    const kp_entity *order = kp_model_entity(m, "Order");
    for (size_t a = 0; a < order->attr_count; a++) assert_false(order->attrs[a]->is_kept && order->attrs[a]->derived &&
                                                                 order->attrs[a]->derived->where_count);
    kp_model_free(m);
    /* a listing with a page is no whole listing; other conditions are other records */
    const char *json =
        "{\"model\": \"c\", \"entities\": {\"A\": {\"key\": [\"id\"], \"count\": 10, \"attributes\": {\"id\": \"string\"}},"
        " \"B\": {\"key\": [\"id\"], \"count\": 100, \"attributes\": {\"id\": \"string\", \"aId\": \"string\", \"n\": \"int\"}}},"
        " \"relations\": [{\"name\": \"bs\", \"from\": \"A\", \"to\": \"B\", \"cardinality\": \"1:N\", \"on\": {\"B.aId\": \"A.id\"},"
        " \"fanout\": {\"avg\": 10, \"max\": 20}}],"
        " \"access_patterns\": [{\"name\": \"p\", \"rps\": 1, \"root\": \"A\", \"where\": {\"id\": \"=\"}, \"returns\": {"
        "   \"all\": {\"$count\": \"bs\"}, \"big\": {\"$count\": \"bs\", \"$where\": {\"n\": {\">\": 5}}},"
        "   \"small\": {\"$count\": \"bs\", \"$where\": {\"n\": {\"<\": 5}}},"
        "   \"page\": {\"$each\": \"bs\", \"$order\": [{\"n\": \"asc\"}], \"$limit\": 5, \"id\": \"B.id\"},"
        "   \"bigs\": {\"$each\": \"bs\", \"$where\": {\"n\": {\">\": 5}}, \"id\": \"B.id\"}}}]}";
    kp_error err;
    if (kp_model_parse("c.json", json, strlen(json), NULL, &m, &err)) fail_msg("%s", err.message);
    p = m->patterns[0];
    for (size_t i = 0; i < p->returns->member_count; i++) {
        const kp_shape *s = p->returns->members[i];
        if (!strcmp(s->name, "all") || !strcmp(s->name, "small")) assert_null(s->counted_by);
        if (!strcmp(s->name, "big")) assert_non_null(s->counted_by), assert_string_equal(s->counted_by->name, "bigs");
    }
    kp_model_free(m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_list_projects_newest_is_parsed_as_the_design_sketch_says),
        cmocka_unit_test(test_every_feature_is_parsed_as_written),
        cmocka_unit_test(test_scale_multiplies_counts_and_caps_fanout),
        cmocka_unit_test(test_every_example_loads_and_renders_as_json),
        cmocka_unit_test(test_check_prints_a_summary_and_json),
        cmocka_unit_test(test_a_count_read_more_than_written_is_kept_on_the_parent),
        cmocka_unit_test(test_a_count_with_a_where_is_kept_with_it_unless_declared),
        cmocka_unit_test(test_a_count_beside_its_whole_listing_is_its_length),
        cmocka_unit_test(test_a_listing_filtered_by_a_related_value_keeps_a_copy),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
