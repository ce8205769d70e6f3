/*
 * test_ddb_emit.c — `keyplan emit` for DynamoDB, on every example: create-table.json is
 * the CreateTable request keyplan itself sends and names every index; the NoSQL
 * Workbench model validates against tests/fixtures/nosql-workbench.schema.json (with
 * the small JSON Schema validator below) and has one facet per entity whose items
 * agree with the declared attributes; every request file parses, names the table,
 * uses exactly the names and values its expressions mention, and there is one per
 * plan operation; the CloudFormation template declares the table and its indexes;
 * emitting twice gives byte-identical files and leaves no temporary file; the CLI
 * lists what it wrote and refuses a database without an emitter.
 */
#include <dirent.h>
#include <regex.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include "backends/dynamodb/conn.h"
#include "backends/dynamodb/ddb.h"
#include "backends/emit.h"
#include "support.h"

extern const kp_backend kp_dynamodb_backend;

#define PREFIX "t-"
#define SCHEMA "tests/fixtures/nosql-workbench.schema.json"

static char temp_root[64];

/* ---- helpers ------------------------------------------------------------------------------ */

typedef struct names {
    char **items;
    size_t count;
} names;

static void names_add(names *n, const char *s)
{
    n->items = realloc(n->items, sizeof *n->items * (n->count + 1));
    n->items[n->count++] = strdup(s);
}

static int names_compare(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

static void names_free(names *n)
{
    for (size_t i = 0; i < n->count; i++) free(n->items[i]);
    free(n->items);
    memset(n, 0, sizeof *n);
}

static int names_has(const names *n, const char *s)
{
    for (size_t i = 0; i < n->count; i++)
        if (strcmp(n->items[i], s) == 0) return 1;
    return 0;
}

/* Every regular file under dir, as paths relative to it, sorted. */
static void list_files(const char *dir, const char *relative, names *out)
{
    char path[4096];
    snprintf(path, sizeof path, "%s%s%s", dir, relative[0] ? "/" : "", relative);
    DIR *d = opendir(path);
    assert_non_null(d);
    struct dirent *e;
    while ((e = readdir(d))) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
        char rel[2048], full[4096];
        snprintf(rel, sizeof rel, "%s%s%s", relative, relative[0] ? "/" : "", e->d_name);
        snprintf(full, sizeof full, "%s/%s", dir, rel);
        struct stat st;
        assert_int_equal(stat(full, &st), 0);
        if (S_ISDIR(st.st_mode)) list_files(dir, rel, out);
        else names_add(out, rel);
    }
    closedir(d);
    if (!relative[0]) qsort(out->items, out->count, sizeof *out->items, names_compare);
}

static void examples(names *out)
{
    DIR *d = opendir(KP_SOURCE_DIR "/examples");
    assert_non_null(d);
    struct dirent *e;
    while ((e = readdir(d))) {
        char path[1024];
        snprintf(path, sizeof path, "%s/examples/%s/model.json", KP_SOURCE_DIR, e->d_name);
        if (e->d_name[0] != '.' && access(path, R_OK) == 0) names_add(out, e->d_name);
    }
    closedir(d);
    qsort(out->items, out->count, sizeof *out->items, names_compare);
    assert_true(out->count >= 5);
}

static cJSON *read_json(const char *path)
{
    char *text = kp_test_read_file(path, NULL);
    if (!text) fail_msg("cannot read %s", path);
    cJSON *j = cJSON_Parse(text);
    if (!j) fail_msg("%s is not JSON", path);
    free(text);
    return j;
}

/* One emitted example: its model, design, and where its files are. */
typedef struct emitted {
    kp_model *model;
    kp_design *design;
    char dir[512];              /* DIR/dynamodb */
    names reported;             /* paths on_file was told of */
} emitted;

static void on_file(void *ctx, const char *path) { names_add(ctx, path); }

static void emit_example(const char *name, const char *out, emitted *e)
{
    memset(e, 0, sizeof *e);
    char model_path[1024];
    snprintf(model_path, sizeof model_path, "examples/%s/model.json", name);
    kp_error err;
    if (kp_model_load(model_path, NULL, &e->model, &err)) fail_msg("%s: %s", model_path, err.message);
    kp_design_list list;
    if (kp_dynamodb_backend.propose(e->model, NULL, &list, &err)) fail_msg("propose %s: %s", name, err.message);
    e->design = list.items[0];
    for (size_t i = 1; i < list.count; i++) kp_design_free(list.items[i]);
    free(list.items);
    kp_emit_options options = {.prefix = PREFIX, .on_file = on_file, .ctx = &e->reported};
    if (kp_emit_design(e->design, out, &options, &err)) fail_msg("emit %s: %s", name, err.message);
    snprintf(e->dir, sizeof e->dir, "%s/dynamodb", out);
}

static void emitted_free(emitted *e)
{
    kp_design_free(e->design);
    kp_model_free(e->model);
    names_free(&e->reported);
}

static const char *table_of(const emitted *e)
{
    static char table[512];
    snprintf(table, sizeof table, PREFIX "%s", ((const ddb_layout *)e->design->layout)->table);
    return table;
}

static int group_setup(void **state)
{
    (void)state;
    snprintf(temp_root, sizeof temp_root, "/tmp/kp-test-emit-XXXXXX");
    return mkdtemp(temp_root) ? 0 : -1;
}

static int group_teardown(void **state)
{
    (void)state;
    char command[256];
    snprintf(command, sizeof command, "rm -rf '%s'", temp_root);
    return system(command) == 0 ? 0 : -1;
}

/* ---- a small JSON Schema (draft-07) validator ------------------------------------------------
 * The keywords nosql-workbench.schema.json uses, no more: a schema with any other keyword
 * fails the test, so the fixture cannot silently rely on something unchecked. */

static const char *const known_keywords[] = {
    "$schema", "$id", "title", "description", "definitions", "$ref", "type", "required", "properties",
    "additionalProperties", "items", "enum", "const", "minItems", "maxItems", "minLength", "maxLength",
    "minProperties", "maxProperties", "pattern", NULL};

static void check_keywords(const cJSON *schema)
{
    if (!cJSON_IsObject(schema)) return;
    for (const cJSON *k = schema->child; k; k = k->next) {
        int known = 0;
        for (size_t i = 0; known_keywords[i]; i++) known |= strcmp(k->string, known_keywords[i]) == 0;
        if (!known) fail_msg("the schema uses '%s', which the test's validator does not implement", k->string);
        if (strcmp(k->string, "properties") == 0 || strcmp(k->string, "definitions") == 0)
            for (const cJSON *p = k->child; p; p = p->next) check_keywords(p);
        else if (strcmp(k->string, "items") == 0 || strcmp(k->string, "additionalProperties") == 0)
            check_keywords(k);
    }
}

static int is_type(const cJSON *v, const char *type)
{
    if (strcmp(type, "object") == 0) return cJSON_IsObject(v);
    if (strcmp(type, "array") == 0) return cJSON_IsArray(v);
    if (strcmp(type, "string") == 0) return cJSON_IsString(v);
    if (strcmp(type, "boolean") == 0) return cJSON_IsBool(v);
    if (strcmp(type, "null") == 0) return cJSON_IsNull(v);
    if (strcmp(type, "number") == 0) return cJSON_IsNumber(v);
    if (strcmp(type, "integer") == 0) return cJSON_IsNumber(v) && v->valuedouble == (double)(int64_t)v->valuedouble;
    fail_msg("unknown type '%s' in the schema", type);
    return 0;
}

static size_t utf8_length(const char *s)
{
    size_t n = 0;
    for (; *s; s++) n += ((unsigned char)*s & 0xC0) != 0x80;
    return n;
}

static double number(const cJSON *schema, const char *keyword, double fallback)
{
    const cJSON *k = cJSON_GetObjectItemCaseSensitive(schema, keyword);
    return cJSON_IsNumber(k) ? k->valuedouble : fallback;
}

/* 0 when v is valid; else -1 with why = "<path>: <reason>". */
static int validate(const cJSON *root, const cJSON *schema, const cJSON *v, const char *path, char *why, size_t size)
{
    const cJSON *ref = cJSON_GetObjectItemCaseSensitive(schema, "$ref");
    if (cJSON_IsString(ref)) {
        const char *prefix = "#/definitions/";
        if (strncmp(ref->valuestring, prefix, strlen(prefix)) != 0) fail_msg("unsupported $ref %s", ref->valuestring);
        const cJSON *target = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(root, "definitions"),
                                                               ref->valuestring + strlen(prefix));
        if (!target) fail_msg("dangling $ref %s", ref->valuestring);
        return validate(root, target, v, path, why, size);
    }
    const cJSON *type = cJSON_GetObjectItemCaseSensitive(schema, "type");
    if (type) {
        int ok = 0;
        if (cJSON_IsString(type)) ok = is_type(v, type->valuestring);
        for (const cJSON *t = cJSON_IsArray(type) ? type->child : NULL; t; t = t->next) ok |= is_type(v, t->valuestring);
        if (!ok) { snprintf(why, size, "%s: not of the type the schema requires", path); return -1; }
    }
    const cJSON *c = cJSON_GetObjectItemCaseSensitive(schema, "const");
    if (c && !cJSON_Compare(c, v, 1)) { snprintf(why, size, "%s: not the constant the schema requires", path); return -1; }
    const cJSON *e = cJSON_GetObjectItemCaseSensitive(schema, "enum");
    if (e) {
        int ok = 0;
        for (const cJSON *x = e->child; x; x = x->next) ok |= cJSON_Compare(x, v, 1);
        if (!ok) { snprintf(why, size, "%s: not one of the schema's enum values", path); return -1; }
    }
    if (cJSON_IsString(v)) {
        size_t n = utf8_length(v->valuestring);
        if (n < number(schema, "minLength", 0) || n > number(schema, "maxLength", 1e18)) {
            snprintf(why, size, "%s: string length %zu out of bounds", path, n);
            return -1;
        }
        const cJSON *pattern = cJSON_GetObjectItemCaseSensitive(schema, "pattern");
        if (cJSON_IsString(pattern)) {
            regex_t re;
            if (regcomp(&re, pattern->valuestring, REG_EXTENDED | REG_NOSUB)) fail_msg("bad pattern %s", pattern->valuestring);
            int rc = regexec(&re, v->valuestring, 0, NULL, 0);
            regfree(&re);
            if (rc) { snprintf(why, size, "%s: \"%s\" does not match %s", path, v->valuestring, pattern->valuestring); return -1; }
        }
    }
    if (cJSON_IsArray(v)) {
        int n = cJSON_GetArraySize(v);
        if (n < number(schema, "minItems", 0) || n > number(schema, "maxItems", 1e18)) {
            snprintf(why, size, "%s: %d items, out of bounds", path, n);
            return -1;
        }
        const cJSON *items = cJSON_GetObjectItemCaseSensitive(schema, "items");
        int i = 0;
        for (const cJSON *x = items ? v->child : NULL; x; x = x->next, i++) {
            char sub[1024];
            snprintf(sub, sizeof sub, "%s[%d]", path, i);
            if (validate(root, items, x, sub, why, size)) return -1;
        }
    }
    if (cJSON_IsObject(v)) {
        int n = cJSON_GetArraySize(v);
        if (n < number(schema, "minProperties", 0) || n > number(schema, "maxProperties", 1e18)) {
            snprintf(why, size, "%s: %d members, out of bounds", path, n);
            return -1;
        }
        const cJSON *required = cJSON_GetObjectItemCaseSensitive(schema, "required");
        for (const cJSON *r = required ? required->child : NULL; r; r = r->next)
            if (!cJSON_GetObjectItemCaseSensitive(v, r->valuestring)) {
                snprintf(why, size, "%s: the required member \"%s\" is missing", path, r->valuestring);
                return -1;
            }
        const cJSON *properties = cJSON_GetObjectItemCaseSensitive(schema, "properties");
        const cJSON *additional = cJSON_GetObjectItemCaseSensitive(schema, "additionalProperties");
        for (const cJSON *m = v->child; m; m = m->next) {
            char sub[1024];
            snprintf(sub, sizeof sub, "%s.%s", path, m->string);
            const cJSON *p = cJSON_GetObjectItemCaseSensitive(properties, m->string);
            if (p) {
                if (validate(root, p, m, sub, why, size)) return -1;
            } else if (cJSON_IsFalse(additional)) {
                snprintf(why, size, "%s: a member the schema does not allow", sub);
                return -1;
            } else if (cJSON_IsObject(additional)) {
                if (validate(root, additional, m, sub, why, size)) return -1;
            }
        }
    }
    return 0;
}

static void assert_valid(const cJSON *schema, const cJSON *doc, const char *what)
{
    char why[2048] = "";
    if (validate(schema, schema, doc, "$", why, sizeof why)) fail_msg("%s does not validate: %s", what, why);
}

static void test_the_validator_rejects_what_the_schema_forbids(void **state)
{
    (void)state;
    cJSON *schema = read_json(SCHEMA);
    check_keywords(schema);
    static const char *const bad[] = {
        "{}",
        "{\"ModelName\":\"m\",\"ModelMetadata\":{\"Author\":\"\",\"DateCreated\":\"Jan 01, 2024, 10:00 AM\","
        "\"DateLastModified\":\"Jan 01, 2024, 10:00 AM\",\"Description\":\"\",\"AWSService\":\"Amazon DynamoDB\","
        "\"Version\":\"2.0\"},\"DataModel\":[]}",
        "{\"ModelName\":\"m\",\"ModelMetadata\":{\"Author\":\"\",\"DateCreated\":\"2024-01-01\","
        "\"DateLastModified\":\"Jan 01, 2024, 10:00 AM\",\"Description\":\"\",\"AWSService\":\"Amazon DynamoDB\","
        "\"Version\":\"3.0\"},\"DataModel\":[{\"TableName\":\"tbl\",\"KeyAttributes\":{\"PartitionKey\":"
        "{\"AttributeName\":\"PK\",\"AttributeType\":\"S\"}},\"NonKeyAttributes\":[]}]}",
        "{\"ModelName\":\"m\",\"ModelMetadata\":{\"Author\":\"\",\"DateCreated\":\"Jan 01, 2024, 10:00 AM\","
        "\"DateLastModified\":\"Jan 01, 2024, 10:00 AM\",\"Description\":\"\",\"AWSService\":\"Amazon DynamoDB\","
        "\"Version\":\"3.0\"},\"DataModel\":[{\"TableName\":\"tbl\",\"KeyAttributes\":{\"PartitionKey\":"
        "{\"AttributeName\":\"PK\",\"AttributeType\":\"S\"}},\"NonKeyAttributes\":[],\"TableData\":[{\"PK\":"
        "{\"S\":\"a\",\"N\":\"1\"}}]}]}",
        "{\"ModelName\":\"m\",\"ModelMetadata\":{\"Author\":\"\",\"DateCreated\":\"Jan 01, 2024, 10:00 AM\","
        "\"DateLastModified\":\"Jan 01, 2024, 10:00 AM\",\"Description\":\"\",\"AWSService\":\"Amazon DynamoDB\","
        "\"Version\":\"3.0\"},\"DataModel\":[{\"TableName\":\"tbl\",\"KeyAttributes\":{\"PartitionKey\":"
        "{\"AttributeName\":\"PK\",\"AttributeType\":\"S\"}},\"NonKeyAttributes\":[],\"TableFacets\":[{\"FacetName\":"
        "\"F\",\"NonKeyAttributes\":[]}]}]}",
        NULL};
    for (size_t i = 0; bad[i]; i++) {
        cJSON *doc = cJSON_Parse(bad[i]);
        char why[1024];
        assert_non_null(doc);
        if (validate(schema, schema, doc, "$", why, sizeof why) == 0) fail_msg("bad document %zu validated", i);
        cJSON_Delete(doc);
    }
    /* the Workbench's own export (its basic template) validates */
    const char *good =
        "{\"ModelName\":\"BasicTemplate\",\"ModelMetadata\":{\"Author\":\"\",\"DateCreated\":\"Jan 12, 2023, 10:14 AM\","
        "\"DateLastModified\":\"Jan 12, 2023, 10:17 AM\",\"Description\":\"\",\"AWSService\":\"Amazon DynamoDB\","
        "\"Version\":\"3.0\"},\"DataModel\":[{\"TableName\":\"BasicTable\",\"KeyAttributes\":{\"PartitionKey\":"
        "{\"AttributeName\":\"pk\",\"AttributeType\":\"S\"},\"SortKey\":{\"AttributeName\":\"sk\",\"AttributeType\":\"S\"}},"
        "\"NonKeyAttributes\":[{\"AttributeName\":\"field1\",\"AttributeType\":\"S\"},{\"AttributeName\":\"field2\","
        "\"AttributeType\":\"BOOL\"}],\"TableFacets\":[{\"FacetName\":\"Facet1\",\"KeyAttributeAlias\":"
        "{\"PartitionKeyAlias\":\"pk\",\"SortKeyAlias\":\"sk\"},\"TableData\":[],\"NonKeyAttributes\":[\"field1\"]}],"
        "\"GlobalSecondaryIndexes\":[{\"IndexName\":\"sk-index\",\"KeyAttributes\":{\"PartitionKey\":{\"AttributeName\":"
        "\"sk\",\"AttributeType\":\"S\"}},\"Projection\":{\"ProjectionType\":\"ALL\"}}],\"DataAccess\":{\"MySql\":{}},"
        "\"BillingMode\":\"PROVISIONED\",\"ProvisionedCapacitySettings\":{\"ProvisionedThroughput\":"
        "{\"ReadCapacityUnits\":5,\"WriteCapacityUnits\":5}}}]}";
    cJSON *doc = cJSON_Parse(good);
    assert_valid(schema, doc, "the Workbench's basic template");
    cJSON_Delete(doc);
    cJSON_Delete(schema);
}

/* ---- the files ------------------------------------------------------------------------------ */

static void test_every_example_emits_the_create_table_request_with_every_index(void **state)
{
    (void)state;
    names list = {0};
    examples(&list);
    for (size_t i = 0; i < list.count; i++) {
        char out[512], path[1024];
        snprintf(out, sizeof out, "%s/create-%s", temp_root, list.items[i]);
        emitted e;
        emit_example(list.items[i], out, &e);
        snprintf(path, sizeof path, "%s/create-table.json", e.dir);
        cJSON *file = read_json(path);
        cJSON *expected = kp_ddb_create_table_request(e.design, PREFIX);
        if (!cJSON_Compare(file, expected, 1)) fail_msg("%s is not kp_ddb_create_table_request's JSON", path);
        assert_string_equal(cJSON_GetObjectItem(file, "TableName")->valuestring, table_of(&e));
        assert_string_equal(cJSON_GetObjectItem(file, "BillingMode")->valuestring, "PAY_PER_REQUEST");
        /* every index the neutral design describes is created */
        const kp_container *c = &e.design->containers[0];
        for (size_t x = 0; x < c->index_count; x++) {
            const char *kind = strcmp(c->indexes[x].kind, "lsi") == 0 ? "LocalSecondaryIndexes" : "GlobalSecondaryIndexes";
            int found = 0;
            for (const cJSON *ix = cJSON_GetObjectItem(file, kind) ? cJSON_GetObjectItem(file, kind)->child : NULL; ix; ix = ix->next)
                found |= strcmp(cJSON_GetObjectItem(ix, "IndexName")->valuestring, c->indexes[x].name) == 0;
            if (!found) fail_msg("%s: index %s (%s) is not in %s", list.items[i], c->indexes[x].name, c->indexes[x].kind, path);
        }
        cJSON_Delete(expected);
        cJSON_Delete(file);
        emitted_free(&e);
    }
    names_free(&list);
}

/* The attribute type a table or index key attribute is declared with, or NULL. */
static const char *declared_type(const cJSON *table, const char *name)
{
    const cJSON *keys = cJSON_GetObjectItem(table, "KeyAttributes");
    for (const char *const *k = (const char *const[]){"PartitionKey", "SortKey", NULL}; *k; k++) {
        const cJSON *a = cJSON_GetObjectItem(keys, *k);
        if (a && strcmp(cJSON_GetObjectItem(a, "AttributeName")->valuestring, name) == 0)
            return cJSON_GetObjectItem(a, "AttributeType")->valuestring;
    }
    for (const cJSON *a = cJSON_GetObjectItem(table, "NonKeyAttributes")->child; a; a = a->next)
        if (strcmp(cJSON_GetObjectItem(a, "AttributeName")->valuestring, name) == 0)
            return cJSON_GetObjectItem(a, "AttributeType")->valuestring;
    return NULL;
}

static void test_the_workbench_model_validates_and_has_one_facet_per_entity(void **state)
{
    (void)state;
    cJSON *schema = read_json(SCHEMA);
    check_keywords(schema);
    names list = {0};
    examples(&list);
    for (size_t i = 0; i < list.count; i++) {
        char out[512], path[1024];
        snprintf(out, sizeof out, "%s/workbench-%s", temp_root, list.items[i]);
        emitted e;
        emit_example(list.items[i], out, &e);
        const ddb_layout *L = e.design->layout;
        snprintf(path, sizeof path, "%s/nosql-workbench.json", e.dir);
        cJSON *doc = read_json(path);
        assert_valid(schema, doc, path);
        assert_string_equal(cJSON_GetObjectItem(doc, "ModelName")->valuestring, e.model->name);
        const cJSON *tables = cJSON_GetObjectItem(doc, "DataModel");
        assert_int_equal(cJSON_GetArraySize(tables), 1);
        const cJSON *table = tables->child;
        assert_string_equal(cJSON_GetObjectItem(table, "TableName")->valuestring, table_of(&e));
        /* one facet per entity, named after it, its aliases the key formats */
        const cJSON *facets = cJSON_GetObjectItem(table, "TableFacets");
        assert_int_equal(cJSON_GetArraySize(facets), (int)e.model->entity_count);
        kp_arena arena = {0};
        size_t k = 0;
        for (const cJSON *f = facets->child; f; f = f->next, k++) {
            const ddb_entity *de = &L->entities[k];
            assert_string_equal(cJSON_GetObjectItem(f, "FacetName")->valuestring, de->entity->name);
            const cJSON *alias = cJSON_GetObjectItem(f, "KeyAttributeAlias");
            assert_string_equal(cJSON_GetObjectItem(alias, "PartitionKeyAlias")->valuestring,
                                kp_ddb_format_describe(&arena, &de->placements[0].pk));
            assert_string_equal(cJSON_GetObjectItem(alias, "SortKeyAlias")->valuestring,
                                kp_ddb_format_describe(&arena, &de->placements[0].sk));
            for (const cJSON *n = cJSON_GetObjectItem(f, "NonKeyAttributes")->child; n; n = n->next)
                if (!declared_type(table, n->valuestring))
                    fail_msg("%s: facet %s names attribute %s, which the table does not declare", path, de->entity->name, n->valuestring);
            for (size_t a = 0; a < de->entity->attr_count; a++) {
                int found = 0;
                for (const cJSON *n = cJSON_GetObjectItem(f, "NonKeyAttributes")->child; n; n = n->next)
                    found |= strcmp(n->valuestring, de->entity->attrs[a]->name) == 0;
                if (!found) fail_msg("%s: facet %s lacks attribute %s", path, de->entity->name, de->entity->attrs[a]->name);
            }
        }
        kp_arena_free(&arena);
        /* global indexes: the design's, on declared attributes (local ones cannot be modelled) */
        const cJSON *gsis = cJSON_GetObjectItem(table, "GlobalSecondaryIndexes");
        assert_int_equal(gsis ? cJSON_GetArraySize(gsis) : 0, (int)L->gsi_count);
        k = 0;
        for (const cJSON *g = gsis ? gsis->child : NULL; g; g = g->next, k++) {
            assert_string_equal(cJSON_GetObjectItem(g, "IndexName")->valuestring, L->gsi[k].name);
            const cJSON *keys = cJSON_GetObjectItem(g, "KeyAttributes");
            assert_non_null(declared_type(table, cJSON_GetObjectItem(cJSON_GetObjectItem(keys, "PartitionKey"), "AttributeName")->valuestring));
            assert_non_null(declared_type(table, cJSON_GetObjectItem(cJSON_GetObjectItem(keys, "SortKey"), "AttributeName")->valuestring));
        }
        /* sample items: some for every entity with records, every attribute declared with its type */
        const cJSON *items = cJSON_GetObjectItem(table, "TableData");
        for (size_t x = 0; x < e.model->entity_count; x++) {
            int seen = 0;
            for (const cJSON *it = items->child; it; it = it->next)
                seen += strcmp(cJSON_GetObjectItem(cJSON_GetObjectItem(it, KP_DDB_TYPE_ATTR), "S")->valuestring,
                               e.model->entities[x]->name) == 0;
            if (seen == 0 && e.model->entities[x]->count >= 1)
                fail_msg("%s: no sample item of %s", path, e.model->entities[x]->name);
        }
        /* an attribute of a type other than its declared one is said in the description */
        const char *description = cJSON_GetObjectItem(cJSON_GetObjectItem(doc, "ModelMetadata"), "Description")->valuestring;
        for (const cJSON *it = items->child; it; it = it->next) {
            assert_non_null(cJSON_GetObjectItem(it, "PK"));
            assert_non_null(cJSON_GetObjectItem(it, "SK"));
            const char *entity = cJSON_GetObjectItem(cJSON_GetObjectItem(it, KP_DDB_TYPE_ATTR), "S")->valuestring;
            for (const cJSON *a = it->child; a; a = a->next) {
                const char *type = declared_type(table, a->string);
                if (!type) fail_msg("%s: a sample item has the undeclared attribute %s", path, a->string);
                char note[512];
                snprintf(note, sizeof note, "Attribute %s is declared %s, but %s items hold it as %s", a->string, type, entity,
                         a->child->string);
                if (strcmp(type, a->child->string) != 0 && !strstr(description, note))
                    fail_msg("%s: attribute %s is declared %s but a %s item holds %s, and the description does not say so",
                             path, a->string, type, entity, a->child->string);
            }
        }
        /* the dates are the Workbench's format, fixed by the model's hash */
        const cJSON *meta = cJSON_GetObjectItem(doc, "ModelMetadata");
        assert_string_equal(cJSON_GetObjectItem(meta, "DateCreated")->valuestring,
                            cJSON_GetObjectItem(meta, "DateLastModified")->valuestring);
        cJSON_Delete(doc);
        emitted_free(&e);
    }
    names_free(&list);
    cJSON_Delete(schema);
}

/* Every #name and :value an expression of the request mentions is defined, and every
 * one defined is mentioned (DynamoDB rejects unused ones). */
static void check_expression_names(const cJSON *req, const char *file)
{
    char all[8192] = "";
    for (const char *const *k = (const char *const[]){"KeyConditionExpression", "FilterExpression", NULL}; *k; k++) {
        const cJSON *x = cJSON_GetObjectItem(req, *k);
        if (x) { strncat(all, x->valuestring, sizeof all - strlen(all) - 2); strcat(all, " "); }
    }
    for (const char *const *k = (const char *const[]){"ExpressionAttributeNames", "ExpressionAttributeValues", NULL}; *k; k++)
        for (const cJSON *d = cJSON_GetObjectItem(req, *k) ? cJSON_GetObjectItem(req, *k)->child : NULL; d; d = d->next) {
            char token[64];
            snprintf(token, sizeof token, "%s", d->string);
            const char *at = strstr(all, token);
            int used = 0;
            for (; at && !used; at = strstr(at + 1, token)) {
                char next = at[strlen(token)];
                used = !(next >= '0' && next <= '9');
            }
            if (!used) fail_msg("%s: %s %s is not used by an expression", file, *k, d->string);
        }
    for (const char *s = all; *s; s++) {
        if (*s != '#' && *s != ':') continue;
        char token[64];
        size_t n = 1;
        token[0] = *s;
        while (s[n] && (s[n] == 'n' || s[n] == 'v' || (s[n] >= '0' && s[n] <= '9')) && n < 60) { token[n] = s[n]; n++; }
        token[n] = '\0';
        const char *where = *s == '#' ? "ExpressionAttributeNames" : "ExpressionAttributeValues";
        if (!cJSON_GetObjectItem(cJSON_GetObjectItem(req, where), token)) fail_msg("%s: %s is not in %s", file, token, where);
        s += n - 1;
    }
}

static void test_every_request_file_parses_names_the_table_and_matches_the_plan(void **state)
{
    (void)state;
    names list = {0};
    examples(&list);
    for (size_t i = 0; i < list.count; i++) {
        char out[512];
        snprintf(out, sizeof out, "%s/requests-%s", temp_root, list.items[i]);
        emitted e;
        emit_example(list.items[i], out, &e);
        names files = {0};
        list_files(e.dir, "", &files);
        assert_true(names_has(&files, "requests/README.md"));
        size_t requests = 0;
        for (size_t f = 0; f < files.count; f++) {
            const char *name = files.items[f];
            if (strncmp(name, "requests/", 9) != 0 || !strstr(name, ".json")) continue;
            requests++;
            char path[1024];
            snprintf(path, sizeof path, "%s/%s", e.dir, name);
            cJSON *req = read_json(path);
            assert_true(cJSON_IsObject(req));
            const cJSON *table = cJSON_GetObjectItem(req, "TableName");
            if (table) {
                assert_string_equal(table->valuestring, table_of(&e));
            } else {
                const cJSON *items = cJSON_GetObjectItem(req, "RequestItems");
                if (!items) fail_msg("%s has neither TableName nor RequestItems", path);
                assert_int_equal(cJSON_GetArraySize(items), 1);
                assert_string_equal(items->child->string, table_of(&e));
                assert_true(cJSON_GetArraySize(cJSON_GetObjectItem(items->child, "Keys")) >= 1);
            }
            check_expression_names(req, path);
            cJSON_Delete(req);
        }
        /* one file per plan operation, named in order */
        size_t first_pages = 0;
        for (size_t p = 0; p < e.design->plan_count; p++) {
            const kp_plan *plan = &e.design->plans[p];
            char name[512];
            if (plan->op_count == 1) {
                snprintf(name, sizeof name, "requests/%s.json", plan->pattern->name);
                if (!names_has(&files, name)) fail_msg("%s: %s is missing", list.items[i], name);
            }
            for (size_t k = 0; plan->op_count > 1 && k <= plan->op_count; k++) {
                snprintf(name, sizeof name, "requests/%s.%zu.json", plan->pattern->name, k + 1);
                if (names_has(&files, name) != (k < plan->op_count))
                    fail_msg("%s: %s %s", list.items[i], name, k < plan->op_count ? "is missing" : "should not exist");
            }
            first_pages += plan->op_count;
        }
        size_t later_pages = 0;
        for (size_t f = 0; f < files.count; f++)
            later_pages += strstr(files.items[f], ".next") != NULL || strstr(files.items[f], ".optional-omitted") != NULL;
        assert_int_equal(requests, first_pages + later_pages);
        names_free(&files);
        emitted_free(&e);
    }
    names_free(&list);
}

static cJSON *request_file(const emitted *e, const char *name)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/requests/%s", e->dir, name);
    return read_json(path);
}

static const char *value_of(const cJSON *req, const char *placeholder)
{
    return cJSON_GetObjectItem(cJSON_GetObjectItem(cJSON_GetObjectItem(req, "ExpressionAttributeValues"), placeholder), "S")->valuestring;
}

/* The example emitted under temp_root/sub, and its requests/README.md (free it). */
static char *emit_with_readme(const char *name, const char *sub, emitted *e)
{
    char out[512], path[1024];
    snprintf(out, sizeof out, "%s/%s", temp_root, sub);
    emit_example(name, out, e);
    snprintf(path, sizeof path, "%s/requests/README.md", e->dir);
    return kp_test_read_file(path, NULL);
}

static void test_saas_requests_are_the_ones_keyplan_sends_with_placeholders(void **state)
{
    (void)state;
    emitted e;
    char *readme = emit_with_readme("saas-control-plane", "saas-requests", &e);
    cJSON *get = request_file(&e, "get-project.json");
    const cJSON *key = cJSON_GetObjectItem(get, "Key");
    assert_string_equal(cJSON_GetObjectItem(cJSON_GetObjectItem(key, "PK"), "S")->valuestring, "WORKSPACE#<workspaceId>");
    assert_string_equal(cJSON_GetObjectItem(cJSON_GetObjectItem(key, "SK"), "S")->valuestring, "PROJECT#<id>");
    cJSON_Delete(get);
    /* newest first with the workspace header: one Query on LSI1, 20 projects + the header */
    cJSON *list = request_file(&e, "list-projects-newest.json");
    assert_string_equal(cJSON_GetObjectItem(list, "IndexName")->valuestring, "LSI1");
    assert_string_equal(cJSON_GetObjectItem(list, "KeyConditionExpression")->valuestring, "#n1 = :v0 AND #n2 BETWEEN :v4 AND :v3");
    assert_string_equal(value_of(list, ":v0"), "WORKSPACE#<id>");
    assert_string_equal(value_of(list, ":v4"), "PROJECT!");
    assert_string_equal(value_of(list, ":v3"), "PROJECT$");
    assert_true(cJSON_IsFalse(cJSON_GetObjectItem(list, "ScanIndexForward")));
    assert_int_equal(cJSON_GetObjectItem(list, "Limit")->valueint, 21);
    assert_null(cJSON_GetObjectItem(list, "ExclusiveStartKey"));
    cJSON_Delete(list);
    /* a later page: the projects alone, continued from the previous answer; the header by key */
    cJSON *next = request_file(&e, "list-projects-newest.next.json");
    assert_string_equal(cJSON_GetObjectItem(next, "KeyConditionExpression")->valuestring, "#n1 = :v0 AND begins_with(#n2, :v3)");
    assert_string_equal(value_of(next, ":v3"), "PROJECT#");
    assert_int_equal(cJSON_GetObjectItem(next, "Limit")->valueint, 20);
    assert_string_equal(cJSON_GetObjectItem(next, "ExclusiveStartKey")->valuestring, "<LastEvaluatedKey>");
    cJSON_Delete(next);
    cJSON *header = request_file(&e, "list-projects-newest.next-header.json");
    assert_string_equal(cJSON_GetObjectItem(cJSON_GetObjectItem(cJSON_GetObjectItem(header, "Key"), "SK"), "S")->valuestring, "META");
    cJSON_Delete(header);
    /* the sharded feed: one Query per shard, later pages after the last sort key */
    cJSON *feed = request_file(&e, "list-active-projects.json");
    assert_string_equal(value_of(feed, ":v0"), "PROJECT#ACTIVE#<shard>");
    cJSON_Delete(feed);
    cJSON *feed_next = request_file(&e, "list-active-projects.next.json");
    assert_string_equal(cJSON_GetObjectItem(feed_next, "KeyConditionExpression")->valuestring, "#n1 = :v0 AND #n2 < :v3");
    assert_null(cJSON_GetObjectItem(feed_next, "ExclusiveStartKey"));
    cJSON_Delete(feed_next);
    /* the README lists them in order */
    assert_non_null(strstr(readme, "1. `get-project.json`: `aws dynamodb get-item`"));
    assert_non_null(strstr(readme, "`<shard>`: send it once per shard, 0 to 9"));
    free(readme);
    emitted_free(&e);
}

/* A request keyed by what the parameters give the first one goes beside it, and its README
 * says so, naming the parameter (not "from the answer of request 1 ... one request per item"). */
static void test_a_request_keyed_by_the_parameters_is_sent_beside_the_first(void **state)
{
    (void)state;
    emitted e;
    char *readme = emit_with_readme("auction-mixes", "auction-requests", &e);
    const char *at = strstr(readme, "2. `list-category-items.2.json`: `aws dynamodb query`, round trip 1.");
    assert_non_null(at);
    const char *end = strstr(at, "\n\n");
    const char *named = strstr(at, "`<Category.id>` is the parameter `<id>`, which keys request 1: send both at once.");
    assert_non_null(named);
    assert_true(!end || named < end);
    assert_null(strstr(readme, "From the answer of request 1: `<Category.id>`"));
    free(readme);
    emitted_free(&e);
}

static void test_placeholders_name_parameters_of_the_pattern(void **state)
{
    (void)state;
    names list = {0};
    examples(&list);
    for (size_t i = 0; i < list.count; i++) {
        char out[512];
        snprintf(out, sizeof out, "%s/holders-%s", temp_root, list.items[i]);
        emitted e;
        emit_example(list.items[i], out, &e);
        for (size_t p = 0; p < e.design->plan_count; p++) {
            const kp_pattern *pattern = e.design->plans[p].pattern;
            for (size_t k = 0; k <= e.design->plans[p].op_count; k++) {
                char name[512], path[2048];
                if (k == 0) snprintf(name, sizeof name, "%s.json", pattern->name);
                else snprintf(name, sizeof name, "%s.%zu.json", pattern->name, k);
                snprintf(path, sizeof path, "%s/requests/%s", e.dir, name);
                if (access(path, R_OK) != 0) continue;
                char *text = kp_test_read_file(path, NULL);
                for (const char *s = strchr(text, '<'); s; s = strchr(s + 1, '<')) {
                    const char *end = strchr(s, '>');
                    if (!end) break;
                    char holder[256];
                    snprintf(holder, sizeof holder, "%.*s", (int)(end - s - 1), s + 1);
                    if (strchr(holder, '.') || strcmp(holder, "shard") == 0 || strchr(holder, '"')) continue;
                    int known = 0;
                    for (size_t x = 0; x < pattern->param_count; x++) known |= strcmp(pattern->params[x]->name, holder) == 0;
                    if (!known) fail_msg("%s: <%s> is not a parameter of %s", path, holder, pattern->name);
                }
                free(text);
            }
        }
        emitted_free(&e);
    }
    names_free(&list);
}

static void test_the_cloudformation_template_declares_the_table_and_its_indexes(void **state)
{
    (void)state;
    names list = {0};
    examples(&list);
    for (size_t i = 0; i < list.count; i++) {
        char out[512], path[1024], line[600];
        snprintf(out, sizeof out, "%s/cfn-%s", temp_root, list.items[i]);
        emitted e;
        emit_example(list.items[i], out, &e);
        const ddb_layout *L = e.design->layout;
        snprintf(path, sizeof path, "%s/cloudformation.yaml", e.dir);
        char *text = kp_test_read_file(path, NULL);
        assert_non_null(text);
        assert_non_null(strstr(text, "\nAWSTemplateFormatVersion: \"2010-09-09\"\n"));
        assert_non_null(strstr(text, "    Type: AWS::DynamoDB::Table\n"));
        assert_non_null(strstr(text, "    Default: \"" PREFIX "\"\n"));
        snprintf(line, sizeof line, "      TableName: !Sub \"${TablePrefix}%s\"\n", L->table);
        assert_non_null(strstr(text, line));
        assert_non_null(strstr(text, "      BillingMode: \"PAY_PER_REQUEST\"\n"));
        for (size_t x = 0; x < L->lsi_count; x++) {
            snprintf(line, sizeof line, "        - IndexName: \"%s\"\n", L->lsi[x].name);
            assert_non_null(strstr(text, line));
        }
        for (size_t x = 0; x < L->gsi_count; x++) {
            snprintf(line, sizeof line, "        - IndexName: \"%s\"\n", L->gsi[x].name);
            assert_non_null(strstr(text, line));
        }
        assert_null(strchr(text, '\t'));
        free(text);
        emitted_free(&e);
    }
    names_free(&list);
}

static void test_emitting_twice_gives_byte_identical_files_and_no_temporary_file(void **state)
{
    (void)state;
    names list = {0};
    examples(&list);
    for (size_t i = 0; i < list.count; i++) {
        char a[512], b[512];
        snprintf(a, sizeof a, "%s/twice-a-%s", temp_root, list.items[i]);
        snprintf(b, sizeof b, "%s/twice-b-%s", temp_root, list.items[i]);
        emitted first, second, again;
        emit_example(list.items[i], a, &first);
        emit_example(list.items[i], b, &second);
        emit_example(list.items[i], a, &again);   /* over an existing folder */
        names fa = {0}, fb = {0};
        list_files(first.dir, "", &fa);
        list_files(second.dir, "", &fb);
        assert_int_equal(fa.count, fb.count);
        assert_int_equal(fa.count, first.reported.count);
        assert_int_equal(again.reported.count, first.reported.count);
        for (size_t f = 0; f < fa.count; f++) {
            assert_string_equal(fa.items[f], fb.items[f]);
            if (strrchr(fa.items[f], '/') ? strrchr(fa.items[f], '/')[1] == '.' : fa.items[f][0] == '.')
                fail_msg("a temporary file was left behind: %s", fa.items[f]);
            char pa[1024], pb[1024];
            snprintf(pa, sizeof pa, "%s/%s", first.dir, fa.items[f]);
            snprintf(pb, sizeof pb, "%s/%s", second.dir, fb.items[f]);
            size_t la, lb;
            char *ta = kp_test_read_file(pa, &la), *tb = kp_test_read_file(pb, &lb);
            if (la != lb || memcmp(ta, tb, la) != 0) fail_msg("%s differs between two emits of %s", fa.items[f], list.items[i]);
            free(ta);
            free(tb);
        }
        names_free(&fa);
        names_free(&fb);
        emitted_free(&first);
        emitted_free(&second);
        emitted_free(&again);
    }
    names_free(&list);
}

static void test_a_database_without_an_emitter_is_refused(void **state)
{
    (void)state;
    kp_backend fake = {.name = "fakedb", .title = "FakeDB"};
    kp_design d = {.backend = &fake};
    char out[512], path[600];
    snprintf(out, sizeof out, "%s/no-emitter", temp_root);
    kp_error err;
    assert_int_equal(kp_emit_design(&d, out, NULL, &err), -1);
    assert_int_equal(err.code, KP_ERR_USAGE);
    assert_int_equal(kp_error_exit_code(&err), KP_EXIT_INPUT);
    assert_non_null(strstr(err.message, "FakeDB"));
    snprintf(path, sizeof path, "%s/fakedb", out);
    assert_int_not_equal(access(path, F_OK), 0);
}

static void test_the_command_lists_the_files_it_wrote(void **state)
{
    (void)state;
    char args[1024], *output = NULL;
    snprintf(args, sizeof args, "emit examples/saas-control-plane/model.json --db dynamodb --out '%s/cli' --prefix dev-", temp_root);
    assert_int_equal(kp_test_run(args, &output), 0);
    char line[1024];
    snprintf(line, sizeof line, "  %s/cli/dynamodb/create-table.json\n", temp_root);
    assert_non_null(strstr(output, line));
    snprintf(line, sizeof line, "  %s/cli/dynamodb/requests/README.md\n", temp_root);
    assert_non_null(strstr(output, line));
    free(output);
    snprintf(args, sizeof args, "%s/cli/dynamodb/create-table.json", temp_root);
    cJSON *create = read_json(args);
    assert_string_equal(cJSON_GetObjectItem(create, "TableName")->valuestring, "dev-saas-control-plane");
    cJSON_Delete(create);

    char *help = NULL, *help2 = NULL;
    assert_int_equal(kp_test_run("emit --help", &help), 0);
    assert_int_equal(kp_test_run("help emit", &help2), 0);
    assert_string_equal(help, help2);
    assert_non_null(strstr(help, "usage: keyplan emit MODEL --out DIR"));
    assert_non_null(strstr(help, "example:"));
    free(help);
    free(help2);
    assert_int_equal(kp_test_run("emit examples/saas-control-plane/model.json --db dynamodb", &output), 2);
    assert_non_null(strstr(output, "--out DIR is required"));
    free(output);
    /* the Cassandra backend emits too (backends/cassandra/emit.c) */
    snprintf(args, sizeof args, "emit examples/saas-control-plane/model.json --db cassandra --out '%s/cli2'", temp_root);
    assert_int_equal(kp_test_run(args, &output), 0);
    free(output);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_the_validator_rejects_what_the_schema_forbids),
        cmocka_unit_test(test_every_example_emits_the_create_table_request_with_every_index),
        cmocka_unit_test(test_the_workbench_model_validates_and_has_one_facet_per_entity),
        cmocka_unit_test(test_every_request_file_parses_names_the_table_and_matches_the_plan),
        cmocka_unit_test(test_saas_requests_are_the_ones_keyplan_sends_with_placeholders),
        cmocka_unit_test(test_a_request_keyed_by_the_parameters_is_sent_beside_the_first),
        cmocka_unit_test(test_placeholders_name_parameters_of_the_pattern),
        cmocka_unit_test(test_the_cloudformation_template_declares_the_table_and_its_indexes),
        cmocka_unit_test(test_emitting_twice_gives_byte_identical_files_and_no_temporary_file),
        cmocka_unit_test(test_a_database_without_an_emitter_is_refused),
        cmocka_unit_test(test_the_command_lists_the_files_it_wrote),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
