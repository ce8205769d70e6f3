/*
 * test_write_effects.c — the enumerator of what a write changes (backends/write_effects.c),
 * on a small chat model whose every count can be worked out by hand: an update that reaches
 * a copy of its attribute and the records that reference it, a step fanned out by for_each,
 * an insert into a join entity, a delete that cascades (two levels) or detaches, an insert
 * that claims a unique value, an aggregate that goes in with its holder's update, an insert
 * of a record that holds the link to the copies of its values (a room's topic).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "backends/write_effects.h"

static const char model_text[] =
    "{ \"model\": \"effects\",\n"
    "  \"entities\": {\n"
    "    \"User\": { \"key\": [\"id\"], \"count\": 200, \"attributes\": { \"id\": \"string\", \"name\": \"string\",\n"
    "                \"email\": { \"type\": \"string\", \"unique\": true } } },\n"
    "    \"Follow\": { \"key\": [\"followerId\", \"followeeId\"], \"attributes\": { \"followerId\": \"string\", \"followeeId\": \"string\" } },\n"
    "    \"Room\": { \"key\": [\"id\"], \"count\": 10, \"attributes\": { \"id\": \"string\", \"name\": \"string\",\n"
    "                \"labelIds\": { \"type\": \"array\", \"items\": \"string\" },\n"
    "                \"messageCount\": { \"type\": \"int\", \"derived\": { \"count\": \"messages\" } },\n"
    "                \"topicText\": { \"type\": \"string\", \"optional\": true, \"copy_of\": \"topic.text\" } } },\n"
    "    \"Topic\": { \"key\": [\"roomId\"], \"count\": 10, \"attributes\": { \"roomId\": \"string\", \"text\": \"string\" } },\n"
    "    \"Message\": { \"key\": [\"roomId\", \"position\"], \"attributes\": { \"roomId\": \"string\", \"position\": \"int\",\n"
    "                \"authorId\": { \"type\": \"string\", \"optional\": true }, \"authorName\": { \"type\": \"string\", \"copy_of\": \"author.name\" }, \"text\": \"string\" } },\n"
    "    \"Reaction\": { \"key\": [\"roomId\", \"position\", \"userId\"], \"attributes\": { \"roomId\": \"string\", \"position\": \"int\",\n"
    "                \"userId\": \"string\" } },\n"
    "    \"Label\": { \"key\": [\"id\"], \"count\": 20, \"attributes\": { \"id\": \"string\" } }\n"
    "  },\n"
    "  \"relations\": [\n"
    "    { \"name\": \"following\", \"from\": \"User\", \"to\": \"User\", \"cardinality\": \"N:M\",\n"
    "      \"through\": { \"entity\": \"Follow\", \"from\": \"followerId\", \"to\": \"followeeId\" }, \"inverse\": \"followers\",\n"
    "      \"fanout\": { \"avg\": 10, \"max\": 100 }, \"inverse_fanout\": { \"avg\": 10, \"max\": 100 } },\n"
    "    { \"name\": \"messages\", \"from\": \"Room\", \"to\": \"Message\", \"cardinality\": \"1:N\", \"on\": { \"Message.roomId\": \"Room.id\" },\n"
    "      \"inverse\": \"room\", \"fanout\": { \"avg\": 400, \"max\": 1000 }, \"on_delete\": \"cascade\" },\n"
    "    { \"name\": \"authored\", \"from\": \"User\", \"to\": \"Message\", \"cardinality\": \"1:N\", \"on\": { \"Message.authorId\": \"User.id\" },\n"
    "      \"inverse\": \"author\", \"fanout\": { \"avg\": 20, \"max\": 100 }, \"on_delete\": \"detach\" },\n"
    "    { \"name\": \"reactions\", \"from\": \"Message\", \"to\": \"Reaction\", \"cardinality\": \"1:N\",\n"
    "      \"on\": { \"Reaction.roomId\": \"Message.roomId\", \"Reaction.position\": \"Message.position\" }, \"inverse\": \"message\",\n"
    "      \"fanout\": { \"avg\": 2, \"max\": 50 }, \"on_delete\": \"cascade\" },\n"
    "    { \"name\": \"topic\", \"from\": \"Room\", \"to\": \"Topic\", \"cardinality\": \"1:1\", \"on\": { \"Topic.roomId\": \"Room.id\" },\n"
    "      \"inverse\": \"room\" },\n"
    "    { \"name\": \"labels\", \"from\": \"Room\", \"to\": \"Label\", \"cardinality\": \"N:M\", \"on\": { \"Room.labelIds\": \"Label.id\" },\n"
    "      \"inverse\": \"rooms\", \"fanout\": { \"avg\": 2, \"max\": 5 }, \"inverse_fanout\": { \"avg\": 3, \"max\": 8 }, \"on_delete\": \"cascade\" }\n"
    "  ],\n"
    "  \"access_patterns\": [ { \"name\": \"room\", \"rps\": 1, \"root\": \"Room\", \"where\": { \"id\": \"=\" }, \"returns\": { \"name\": \"Room.name\" } } ],\n"
    "  \"writes\": [\n"
    "    { \"name\": \"rename\", \"rps\": 1, \"entity\": \"User\", \"op\": \"update\", \"where\": { \"id\": \"=\" }, \"set\": [\"name\"] },\n"
    "    { \"name\": \"clear-room\", \"rps\": 1, \"steps\": [\n"
    "      { \"entity\": \"Room\", \"op\": \"update\", \"where\": { \"id\": \"=\" }, \"set\": [\"name\"] },\n"
    "      { \"entity\": \"Message\", \"op\": \"update\", \"for_each\": \"messages\", \"set\": { \"text\": \"\" }, \"rows\": 2 } ] },\n"
    "    { \"name\": \"follow\", \"rps\": 1, \"entity\": \"Follow\", \"op\": \"insert\" },\n"
    "    { \"name\": \"delete-room\", \"rps\": 1, \"entity\": \"Room\", \"op\": \"delete\", \"where\": { \"id\": \"=\" } },\n"
    "    { \"name\": \"signup\", \"rps\": 1, \"entity\": \"User\", \"op\": \"insert\" },\n"
    "    { \"name\": \"post\", \"rps\": 1, \"entity\": \"Message\", \"op\": \"insert\", \"rows\": 3 },\n"
    "    { \"name\": \"open-room\", \"rps\": 1, \"steps\": [ { \"entity\": \"Room\", \"op\": \"insert\" },\n"
    "      { \"entity\": \"Message\", \"op\": \"insert\" } ] },\n"
    "    { \"name\": \"delete-user\", \"rps\": 1, \"entity\": \"User\", \"op\": \"delete\", \"where\": { \"id\": \"=\" } },\n"    "    { \"name\": \"delete-label\", \"rps\": 1, \"entity\": \"Label\", \"op\": \"delete\", \"where\": { \"id\": \"=\" } },\n"
    "    { \"name\": \"post-and-rename\", \"rps\": 1, \"steps\": [ { \"entity\": \"Message\", \"op\": \"insert\" },\n"
    "      { \"entity\": \"Room\", \"op\": \"update\", \"where\": { \"id\": \":roomId\" }, \"set\": [\"name\"] } ] },\n"
    "    { \"name\": \"set-topic\", \"rps\": 1, \"entity\": \"Topic\", \"op\": \"insert\" },\n"
    "    { \"name\": \"open-with-topic\", \"rps\": 1, \"steps\": [ { \"entity\": \"Room\", \"op\": \"insert\" },\n"
    "      { \"entity\": \"Topic\", \"op\": \"insert\" } ] }\n"
    "  ]\n"
    "}\n";

/* One expected effect: its kind, step, the entity it reaches, the relation (its name) or the
 * attribute it names (NULL: none), and how many records. */
typedef struct expected {
    kp_write_effect_kind kind;
    size_t step;
    const char *entity, *rel, *attr;
    double per_record, count;
} expected;

static kp_model *model;
static kp_write_effects effects;

static int setup(void **state)
{
    (void)state;
    kp_error err;
    if (kp_model_parse("effects.json", model_text, strlen(model_text), NULL, &model, &err)) {
        kp_error_print(stderr, &err);
        return -1;
    }
    return kp_write_effects_build(model, &effects, &err);
}

static int teardown(void **state)
{
    (void)state;
    kp_write_effects_free(&effects);
    kp_model_free(model);
    return 0;
}

static void assert_effects(const char *write, const expected *want, size_t count)
{
    const kp_write *w = kp_model_write(model, write);
    assert_non_null(w);
    const kp_write_effect_list *list = &effects.of_write[w->index];
    assert_int_equal(list->count, count);
    for (size_t i = 0; i < count; i++) {
        const kp_write_effect *fx = &list->items[i];
        assert_int_equal(fx->kind, want[i].kind);
        assert_int_equal(fx->step_index, want[i].step);
        assert_ptr_equal(fx->step, &w->steps[want[i].step]);
        assert_string_equal(fx->entity->name, want[i].entity);
        if (want[i].rel) {
            assert_non_null(fx->rel);
            assert_string_equal(fx->rel->name, want[i].rel);
        } else {
            assert_null(fx->rel);
        }
        if (want[i].attr) {
            assert_non_null(fx->attr);
            assert_string_equal(fx->attr->name, want[i].attr);
        } else {
            assert_null(fx->attr);
        }
        assert_true(fx->per_record == want[i].per_record);
        assert_true(fx->count == want[i].count);
    }
}

/* User.name is copied into each of the user's 20 messages (Message.authorName, back along
 * the inverse of "authored"), and the messages reference the user by their author. */
static void test_an_update_reaches_the_copies_of_its_attribute_and_the_records_that_reference_it(void **state)
{
    (void)state;
    const expected want[] = {
        {KP_EFFECT_RECORDS, 0, "User", NULL, NULL, 1, 1},
        {KP_EFFECT_COPY, 0, "Message", NULL, "authorName", 20, 20},
        {KP_EFFECT_REFERENCE, 0, "Message", "author", NULL, 20, 20},
    };
    assert_effects("rename", want, sizeof want / sizeof *want);
}

/* The second step updates 2 rows for each of the room's 400 messages: 800 records, and as
 * many changes of the room's derived message count. */
static void test_a_for_each_step_is_fanned_out_by_its_path(void **state)
{
    (void)state;
    const expected want[] = {
        {KP_EFFECT_RECORDS, 0, "Room", NULL, NULL, 1, 1},
        {KP_EFFECT_REFERENCE, 0, "Topic", "room", NULL, 1, 1},
        {KP_EFFECT_REFERENCE, 0, "Message", "room", NULL, 400, 400},
        {KP_EFFECT_RECORDS, 1, "Message", NULL, NULL, 1, 800},
        {KP_EFFECT_REFERENCE, 1, "Reaction", "message", NULL, 2, 1600},
        /* no AGGREGATE: emptying the text changes no message count */
    };
    assert_effects("clear-room", want, sizeof want / sizeof *want);
    assert_true(effects.of_write[kp_model_write(model, "clear-room")->index].items[3].records == 800);
}

/* A derived value changes with the records it aggregates coming or going, once per holder:
 * three messages posted together change one room's count; a room opened with its first
 * message gets its count with the insert, nothing to update. */
static void test_an_aggregate_is_updated_once_per_holder_and_not_when_inserted_with_it(void **state)
{
    (void)state;
    const expected post[] = {
        {KP_EFFECT_RECORDS, 0, "Message", NULL, NULL, 1, 3},
        {KP_EFFECT_AGGREGATE, 0, "Room", NULL, "messageCount", 1.0 / 3, 1},
    };
    assert_effects("post", post, sizeof post / sizeof *post);
    const expected open[] = {
        {KP_EFFECT_RECORDS, 0, "Room", NULL, NULL, 1, 1},
        {KP_EFFECT_RECORDS, 1, "Message", NULL, NULL, 1, 1},
        {KP_EFFECT_AGGREGATE, 1, "Room", NULL, "messageCount", 0, 0},
    };
    assert_effects("open-room", open, sizeof open / sizeof *open);
}

static void test_an_insert_into_a_join_entity_pairs_two_records(void **state)
{
    (void)state;
    const expected want[] = {
        {KP_EFFECT_RECORDS, 0, "Follow", NULL, NULL, 1, 1},
        {KP_EFFECT_PAIRING, 0, "Follow", "following", NULL, 1, 1},
    };
    assert_effects("follow", want, sizeof want / sizeof *want);
}

/* A delete takes the records its relations cascade to, and theirs in turn (a room's 400
 * messages, their 800 reactions); a relation that detaches leaves its records without the
 * reference (a deleted user's 20 messages). */
static void test_a_delete_reaches_the_records_that_reference_what_it_deletes(void **state)
{
    (void)state;
    const expected want[] = {
        {KP_EFFECT_RECORDS, 0, "Room", NULL, NULL, 1, 1},
        {KP_EFFECT_CASCADE, 0, "Message", "messages", NULL, 400, 400},
        {KP_EFFECT_CASCADE, 0, "Reaction", "reactions", NULL, 2, 800},
    };
    assert_effects("delete-room", want, sizeof want / sizeof *want);
    const kp_write_effect *reactions = &effects.of_write[kp_model_write(model, "delete-room")->index].items[2];
    assert_true(reactions->records == 400); /* the messages the cascade reached before */
    const expected user[] = {
        {KP_EFFECT_RECORDS, 0, "User", NULL, NULL, 1, 1},
        {KP_EFFECT_DETACH, 0, "Message", "authored", NULL, 20, 20},
    };
    assert_effects("delete-user", user, sizeof user / sizeof *user);
    /* an array of references: deleting a label removes it from the arrays of the rooms that
     * hold it (the oracle's delete_record: the element goes, whatever on_delete says but
     * restrict); deleting a room, which holds the array, takes no label with it (the list of
     * delete-room above has none) */
    const expected label[] = {
        {KP_EFFECT_RECORDS, 0, "Label", NULL, NULL, 1, 1},
        {KP_EFFECT_DETACH, 0, "Room", "rooms", NULL, 3, 3},
    };
    assert_effects("delete-label", label, sizeof label / sizeof *label);
}

/* A message posted to :roomId and the room :roomId renamed in the same write: the room's
 * count goes in with the rename's write of that room (no update of its own), and the rename
 * changes the count too (a key built on it moves). */
static void test_an_aggregate_goes_in_with_its_holders_update(void **state)
{
    (void)state;
    const expected want[] = {
        {KP_EFFECT_RECORDS, 0, "Message", NULL, NULL, 1, 1},
        {KP_EFFECT_AGGREGATE, 0, "Room", NULL, "messageCount", 0, 0},
        {KP_EFFECT_RECORDS, 1, "Room", NULL, NULL, 1, 1},
        {KP_EFFECT_REFERENCE, 1, "Topic", "room", NULL, 1, 1},
        {KP_EFFECT_REFERENCE, 1, "Message", "room", NULL, 400, 400},
    };
    assert_effects("post-and-rename", want, sizeof want / sizeof *want);
    const kp_write *w = kp_model_write(model, "post-and-rename");
    const kp_entity *room = w->steps[1].entity;
    const kp_attr *count = NULL, *name = NULL;
    for (size_t a = 0; a < room->attr_count; a++) {
        if (!strcmp(room->attrs[a]->name, "messageCount")) count = room->attrs[a];
        if (!strcmp(room->attrs[a]->name, "name")) name = room->attrs[a];
    }
    assert_non_null(count);
    assert_true(kp_write_step_changes(w, &w->steps[1], count));
    assert_true(kp_write_step_changes(w, &w->steps[1], name));
    assert_false(kp_write_step_changes(w, &w->steps[0], count));   /* an insert changes no key */
    const kp_write *rename = kp_model_write(model, "clear-room");
    assert_false(kp_write_step_changes(rename, &rename->steps[0], count));
}

static void test_an_insert_claims_its_unique_values(void **state)
{
    (void)state;
    const expected want[] = {
        {KP_EFFECT_RECORDS, 0, "User", NULL, NULL, 1, 1},
        {KP_EFFECT_UNIQUE, 0, "User", NULL, "email", 1, 1},
    };
    assert_effects("signup", want, sizeof want / sizeof *want);
}

/* A topic names its room, so inserting one sets the room's copy of its text: an update of
 * the room, unless the same write writes the room anyway (then the copy goes in with it). */
static void test_an_insert_sets_the_copies_of_the_records_it_links_to(void **state)
{
    (void)state;
    const expected set[] = {
        {KP_EFFECT_RECORDS, 0, "Topic", NULL, NULL, 1, 1},
        {KP_EFFECT_COPY, 0, "Room", NULL, "topicText", 1, 1},
    };
    assert_effects("set-topic", set, sizeof set / sizeof *set);
    const expected open[] = {
        {KP_EFFECT_RECORDS, 0, "Room", NULL, NULL, 1, 1},
        {KP_EFFECT_RECORDS, 1, "Topic", NULL, NULL, 1, 1},
    };
    assert_effects("open-with-topic", open, sizeof open / sizeof *open);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_an_update_reaches_the_copies_of_its_attribute_and_the_records_that_reference_it),
        cmocka_unit_test(test_a_for_each_step_is_fanned_out_by_its_path),
        cmocka_unit_test(test_an_aggregate_is_updated_once_per_holder_and_not_when_inserted_with_it),
        cmocka_unit_test(test_an_insert_into_a_join_entity_pairs_two_records),
        cmocka_unit_test(test_a_delete_reaches_the_records_that_reference_what_it_deletes),
        cmocka_unit_test(test_an_aggregate_goes_in_with_its_holders_update),
        cmocka_unit_test(test_an_insert_claims_its_unique_values),
        cmocka_unit_test(test_an_insert_sets_the_copies_of_the_records_it_links_to),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
