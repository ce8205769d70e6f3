/*
 * emit.c — the DynamoDB files a team applies (`keyplan emit`): the CreateTable
 * request, a NoSQL Workbench data model with sample items, a CloudFormation
 * template, and per access pattern the requests keyplan sends, with "<name>"
 * placeholders where the values go.
 *
 * Invariants: the same design and prefix give byte-identical files — no clock, no
 * randomness: sample items are records 0..2 of the generator at a fixed seed and the
 * Workbench dates are derived from the model file's hash; and a request file is built
 * by request.c, the code the executor sends with, from the same key formats, so what
 * a team runs is what `keyplan verify` checked.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/dynamodb/conn.h"
#include "backends/dynamodb/ddb.h"
#include "backends/dynamodb/request.h"
#include "backends/emit.h"
#include "migrations/generate.h"

#define SAMPLE_RECORDS 3        /* sample items per entity in the Workbench model */
#define SAMPLE_SEED 1           /* `keyplan generate`'s default seed */

typedef struct emitter {
    const kp_design *d;
    const ddb_layout *L;
    const kp_emit_options *options;
    const char *dir;
    char table[512];            /* with the prefix */
    kp_arena arena;             /* key descriptions */
    kp_error *err;
} emitter;

static int nomem(emitter *E) { return kp_error_set(E->err, KP_ERR_NOMEM, NULL, 0, 0, "out of memory"); }

/* ---- create-table.json -------------------------------------------------------------------- */

static int emit_create_table(emitter *E)
{
    cJSON *req = kp_ddb_create_table_request(E->d, E->options->prefix);
    if (!req) return nomem(E);
    int rc = kp_emit_write_json(E->options, E->dir, "create-table.json", req, E->err);
    cJSON_Delete(req);
    return rc;
}

/* ---- nosql-workbench.json ------------------------------------------------------------------- */

/* "Mon DD, YYYY, HH:MM AM" (the Workbench's own format), a day of 2020-2029 and a
 * minute chosen by the model's hash: stable for one model file, different for another. */
static void workbench_date(const char *hash, char *buf, size_t size)
{
    static const char *const months[] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};
    unsigned long long h = strtoull(hash, NULL, 16);
    long days = (long)(h % 3653);           /* since 2020-01-01 */
    int minute = (int)((h / 3653) % 1440);
    int year = 2020, month = 0;
    for (;;) {
        int leap = (year % 4 == 0 && year % 100 != 0) || year % 400 == 0;
        if (days < 365 + leap) break;
        days -= 365 + leap;
        year++;
    }
    static const int lengths[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    for (;;) {
        int leap = month == 1 && ((year % 4 == 0 && year % 100 != 0) || year % 400 == 0);
        if (days < lengths[month] + leap) break;
        days -= lengths[month] + leap;
        month++;
    }
    int hour = minute / 60 % 12;
    snprintf(buf, size, "%s %02ld, %d, %02d:%02d %s", months[month], days + 1, year, hour ? hour : 12, minute % 60,
             minute < 720 ? "AM" : "PM");
}

static cJSON *key_attribute(const char *name, const char *type)
{
    cJSON *k = cJSON_CreateObject();
    cJSON_AddStringToObject(k, "AttributeName", name);
    cJSON_AddStringToObject(k, "AttributeType", type);
    return k;
}

static cJSON *key_attributes(const char *pk, const char *sk)
{
    cJSON *k = cJSON_CreateObject();
    cJSON_AddItemToObject(k, "PartitionKey", key_attribute(pk, "S"));
    cJSON_AddItemToObject(k, "SortKey", key_attribute(sk, "S"));
    return k;
}

static int has_name(const cJSON *names, const char *name)
{
    for (const cJSON *n = names->child; n; n = n->next)
        if (strcmp(n->valuestring, name) == 0) return 1;
    return 0;
}

/* The type the table's attributes declare for a name, or NULL. */
static const char *defined_type(const cJSON *defined, const char *name)
{
    for (const cJSON *d = defined->child; d; d = d->next)
        if (strcmp(cJSON_GetObjectItem(d, "AttributeName")->valuestring, name) == 0)
            return cJSON_GetObjectItem(d, "AttributeType")->valuestring;
    return NULL;
}

/* Adds {AttributeName, AttributeType} to the table's attributes, once per name (the
 * Workbench declares one type per name; the first declaration stays). */
static void define_attribute(cJSON *defined, const char *name, const char *type)
{
    if (strcmp(name, "PK") == 0 || strcmp(name, "SK") == 0 || defined_type(defined, name)) return;
    cJSON_AddItemToArray(defined, key_attribute(name, type));
}

/* The type most entities give an attribute of this name (the first such on a tie). */
static const char *usual_type(const kp_model *m, const char *name)
{
    const char *best = NULL;
    int best_count = 0;
    for (size_t i = 0; i < m->entity_count; i++) {
        const kp_attr *a = kp_entity_attr(m->entities[i], name);
        if (!a) continue;
        const char *type = kp_ddb_attribute_type(&a->type);
        int count = 0;
        for (size_t k = 0; k < m->entity_count; k++) {
            const kp_attr *b = kp_entity_attr(m->entities[k], name);
            count += b && strcmp(kp_ddb_attribute_type(&b->type), type) == 0;
        }
        if (count > best_count) {
            best = type;
            best_count = count;
        }
    }
    return best;
}

static void add_name(cJSON *names, const char *name)
{
    if (!has_name(names, name)) cJSON_AddItemToArray(names, cJSON_CreateString(name));
}

/* The index key attributes an entity's items carry besides PK and SK, in placement order. */
static void index_attributes(const ddb_entity *e, cJSON *names)
{
    for (size_t i = 1; i < e->placement_count; i++) {
        const ddb_index *x = e->placements[i].index;
        if (x->kind == DDB_GSI) add_name(names, x->pk_attr);
        add_name(names, x->sk_attr);
    }
}

static cJSON *facet(emitter *E, const ddb_entity *e)
{
    cJSON *f = cJSON_CreateObject();
    cJSON_AddStringToObject(f, "FacetName", e->entity->name);
    cJSON *alias = cJSON_AddObjectToObject(f, "KeyAttributeAlias");
    cJSON_AddStringToObject(alias, "PartitionKeyAlias", kp_ddb_format_describe(&E->arena, &e->placements[0].pk));
    cJSON_AddStringToObject(alias, "SortKeyAlias", kp_ddb_format_describe(&E->arena, &e->placements[0].sk));
    cJSON_AddArrayToObject(f, "TableData");
    cJSON *names = cJSON_AddArrayToObject(f, "NonKeyAttributes");
    index_attributes(e, names);
    add_name(names, KP_DDB_TYPE_ATTR);
    for (size_t i = 0; i < e->entity->attr_count; i++) add_name(names, e->entity->attrs[i]->name);
    cJSON_AddObjectToObject(cJSON_AddObjectToObject(f, "DataAccess"), "MySql");
    return f;
}

/* Records 0..SAMPLE_RECORDS-1 of every entity, as the items transform writes. */
static int sample_items(emitter *E, cJSON *items)
{
    const kp_model *m = E->d->model;
    kp_generator *gen = NULL;
    if (kp_generator_new(m, SAMPLE_SEED, &gen, E->err)) return -1;
    int rc = 0;
    for (size_t i = 0; i < m->entity_count && rc == 0; i++) {
        const kp_entity *e = m->entities[i];
        int64_t n = kp_generator_count(gen, e);
        for (int64_t k = 0; k < n && k < SAMPLE_RECORDS && rc == 0; k++) {
            cJSON *object = kp_generator_record(gen, e, k, E->err);
            if (!object) { rc = -1; break; }
            kp_record r = {.entity = e, .object = object};
            cJSON *item = NULL;
            rc = kp_ddb_item_for(E->d, NULL, &r, &item, E->err);
            if (rc == 0) cJSON_AddItemToArray(items, item);
            cJSON_Delete(object);
        }
    }
    kp_generator_free(gen);
    return rc;
}

static int emit_workbench(emitter *E)
{
    const kp_design *d = E->d;
    const ddb_layout *L = E->L;
    const kp_model *m = d->model;
    cJSON *doc = cJSON_CreateObject();
    cJSON_AddStringToObject(doc, "ModelName", m->name);
    cJSON *meta = cJSON_AddObjectToObject(doc, "ModelMetadata");
    char date[64];
    workbench_date(m->hash, date, sizeof date);
    cJSON_AddStringToObject(meta, "Author", "keyplan");
    cJSON_AddStringToObject(meta, "DateCreated", date);
    cJSON_AddStringToObject(meta, "DateLastModified", date);
    kp_text description = {0};
    kp_text_printf(&description,
                   "The %s design keyplan %s proposes for the model '%s' (file hash %s): %s. One facet per entity; the key "
                   "aliases show how its keys are built. Sample items are records 0-%d of `keyplan generate --seed %d`.",
                   d->candidate, KP_VERSION, m->name, m->hash, d->summary ? d->summary : "", SAMPLE_RECORDS - 1, SAMPLE_SEED);
    for (size_t i = 0; i < L->lsi_count; i++)
        kp_text_printf(&description, " Local index %s (PK, %s; projection ALL) is not shown: Workbench models hold global "
                                     "indexes only; create-table.json and cloudformation.yaml have it.",
                       L->lsi[i].name, L->lsi[i].sk_attr);
    /* the table's attributes: index keys, the type tag, then every entity's attributes */
    cJSON *defined = cJSON_CreateArray();
    for (size_t i = 0; i < L->lsi_count; i++) define_attribute(defined, L->lsi[i].sk_attr, "S");
    for (size_t i = 0; i < L->gsi_count; i++) {
        define_attribute(defined, L->gsi[i].pk_attr, "S");
        define_attribute(defined, L->gsi[i].sk_attr, "S");
    }
    define_attribute(defined, KP_DDB_TYPE_ATTR, "S");
    for (size_t i = 0; i < m->entity_count; i++)
        for (size_t a = 0; a < m->entities[i]->attr_count; a++) {
            const kp_attr *attr = m->entities[i]->attrs[a];
            const char *type = kp_ddb_attribute_type(&attr->type);
            define_attribute(defined, attr->name, usual_type(m, attr->name));
            const char *declared = defined_type(defined, attr->name);
            if (declared && strcmp(declared, type) != 0)
                kp_text_printf(&description, " Attribute %s is declared %s, but %s items hold it as %s (one type per name "
                                             "in a Workbench model).", attr->name, declared, m->entities[i]->name, type);
        }
    kp_text_append(&description, " The dates are derived from the model file's hash so that emitting twice gives the same file.");
    cJSON_AddStringToObject(meta, "Description", description.data ? description.data : "");
    kp_text_free(&description);
    cJSON_AddStringToObject(meta, "AWSService", "Amazon DynamoDB");
    cJSON_AddStringToObject(meta, "Version", "3.0");

    cJSON *table = cJSON_CreateObject();
    cJSON_AddItemToArray(cJSON_AddArrayToObject(doc, "DataModel"), table);
    cJSON_AddStringToObject(table, "TableName", E->table);
    cJSON_AddItemToObject(table, "KeyAttributes", key_attributes("PK", "SK"));
    cJSON_AddItemToObject(table, "NonKeyAttributes", defined);
    cJSON *facets = cJSON_AddArrayToObject(table, "TableFacets");
    for (size_t i = 0; i < L->entity_count; i++) cJSON_AddItemToArray(facets, facet(E, &L->entities[i]));
    if (L->gsi_count) {
        cJSON *gsis = cJSON_AddArrayToObject(table, "GlobalSecondaryIndexes");
        for (size_t i = 0; i < L->gsi_count; i++) {
            cJSON *x = cJSON_CreateObject();
            cJSON_AddStringToObject(x, "IndexName", L->gsi[i].name);
            cJSON_AddItemToObject(x, "KeyAttributes", key_attributes(L->gsi[i].pk_attr, L->gsi[i].sk_attr));
            cJSON_AddStringToObject(cJSON_AddObjectToObject(x, "Projection"), "ProjectionType", "ALL");
            cJSON_AddItemToArray(gsis, x);
        }
    }
    cJSON *items = cJSON_AddArrayToObject(table, "TableData");
    int rc = sample_items(E, items);
    cJSON_AddObjectToObject(cJSON_AddObjectToObject(table, "DataAccess"), "MySql");
    cJSON_AddStringToObject(table, "BillingMode", "PAY_PER_REQUEST");
    if (rc == 0) rc = kp_emit_write_json(E->options, E->dir, "nosql-workbench.json", doc, E->err);
    cJSON_Delete(doc);
    return rc;
}

/* ---- cloudformation.yaml -------------------------------------------------------------------- */

static void yaml_scalar(kp_text *t, const cJSON *j)
{
    /* JSON scalars are YAML flow scalars (strings double-quoted with JSON's escapes) */
    cJSON *copy = cJSON_Duplicate(j, 0);
    char *s = copy ? cJSON_PrintUnformatted(copy) : NULL;
    if (s) kp_text_append(t, s);
    else t->is_failed = 1;
    cJSON_free(s);
    cJSON_Delete(copy);
}

static void yaml_items(kp_text *t, const cJSON *array, int indent);

/* The members of an object in block style; the first on the current line when `inline_first`. */
static void yaml_members(kp_text *t, const cJSON *object, int indent, int inline_first)
{
    for (const cJSON *c = object->child; c; c = c->next) {
        if (!(inline_first && c == object->child)) kp_text_printf(t, "%*s", indent, "");
        kp_text_printf(t, "%s:", c->string);
        if (cJSON_IsObject(c) && c->child) {
            kp_text_append(t, "\n");
            yaml_members(t, c, indent + 2, 0);
        } else if (cJSON_IsArray(c) && c->child) {
            kp_text_append(t, "\n");
            yaml_items(t, c, indent + 2);
        } else {
            kp_text_append(t, " ");
            yaml_scalar(t, c);
            kp_text_append(t, "\n");
        }
    }
}

static void yaml_items(kp_text *t, const cJSON *array, int indent)
{
    for (const cJSON *c = array->child; c; c = c->next) {
        kp_text_printf(t, "%*s- ", indent, "");
        if (cJSON_IsObject(c) && c->child) {
            yaml_members(t, c, indent + 2, 1);
        } else {
            yaml_scalar(t, c);
            kp_text_append(t, "\n");
        }
    }
}

static int emit_cloudformation(emitter *E)
{
    const kp_design *d = E->d;
    cJSON *props = kp_ddb_create_table_request(d, "");
    if (!props) return nomem(E);
    cJSON_DeleteItemFromObjectCaseSensitive(props, "TableName");
    cJSON *prefix = cJSON_CreateString(E->options->prefix);
    kp_text t = {0};
    kp_text_printf(&t,
                   "# The DynamoDB table of the %s design keyplan %s proposes for the model '%s'\n"
                   "# (model file hash %s). Deploy it with\n"
                   "#   aws cloudformation deploy --template-file cloudformation.yaml --stack-name %s\n"
                   "# (TablePrefix defaults to the --prefix given to `keyplan emit`; override it with\n"
                   "# --parameter-overrides TablePrefix=...). The table is kept when the stack is deleted\n"
                   "# or the table replaced (Retain): it holds data.\n"
                   "AWSTemplateFormatVersion: \"2010-09-09\"\n"
                   "Description: \"keyplan: the %s table of the %s design for the model %s\"\n"
                   "Parameters:\n"
                   "  TablePrefix:\n"
                   "    Type: String\n"
                   "    Default: ",
                   d->candidate, KP_VERSION, d->model->name, d->model->hash, E->L->table, E->L->table, d->candidate,
                   d->model->name);
    yaml_scalar(&t, prefix);
    kp_text_printf(&t,
                   "\n"
                   "    AllowedPattern: \"[a-zA-Z0-9_.-]*\"\n"
                   "    Description: \"Prepended to the table name, as keyplan's --prefix\"\n"
                   "Resources:\n"
                   "  Table:\n"
                   "    Type: AWS::DynamoDB::Table\n"
                   "    DeletionPolicy: Retain\n"
                   "    UpdateReplacePolicy: Retain\n"
                   "    Properties:\n"
                   "      TableName: !Sub \"${TablePrefix}%s\"\n",
                   E->L->table);
    yaml_members(&t, props, 6, 0);
    kp_text_append(&t,
                   "Outputs:\n"
                   "  TableName:\n"
                   "    Description: \"The table's name, prefix included\"\n"
                   "    Value: !Ref Table\n"
                   "  TableArn:\n"
                   "    Value: !GetAtt Table.Arn\n");
    int rc = t.is_failed ? nomem(E) : kp_emit_write_file(E->options, E->dir, "cloudformation.yaml", t.data, t.len, E->err);
    kp_text_free(&t);
    cJSON_Delete(prefix);
    cJSON_Delete(props);
    return rc;
}

/* ---- requests/ ------------------------------------------------------------------------------ */

/* Placeholders for what only the previous page's answer gives. */
#define PAGE_KEY "<LastEvaluatedKey>"

/* Where a fetch's key values come from: "<name>" placeholders and literal values, by
 * the name of the attribute of the items read (what execute.c's virtual records hold). */
typedef struct binding {
    cJSON *holders;             /* attribute -> "<placeholder>" */
    cJSON *values;              /* attribute -> literal value */
} binding;

static void hold(binding *b, const kp_attr *attr, const char *fmt, const char *x, const char *y)
{
    char text[512];
    snprintf(text, sizeof text, fmt, x, y);
    cJSON_DeleteItemFromObjectCaseSensitive(b->holders, attr->name);
    cJSON_AddStringToObject(b->holders, attr->name, text);
}

static void binding_free(binding *b)
{
    cJSON_Delete(b->holders);
    cJSON_Delete(b->values);
}

/* The pattern's equalities (execute.c root_object); with `for_children`, re-keyed to
 * the children's reference attributes, as a merged header Query reads their partition
 * (virtual_targets). */
static binding bind_root(const kp_pattern *p, const ddb_fetch *f, int for_children, int omit_optional)
{
    binding own = {cJSON_CreateObject(), cJSON_CreateObject()};
    for (size_t i = 0; i < p->where_count; i++) {
        const kp_cond *c = &p->where[i];
        if (c->op != KP_OP_EQ || c->path_len) continue;
        if (c->value.param && omit_optional && c->value.param->is_optional) continue;
        if (c->value.param) hold(&own, c->attr, "<%s>%s", c->value.param->name, "");
        else if (c->value.literal) cJSON_AddItemToObject(own.values, c->attr->name, cJSON_Duplicate(c->value.literal, 1));
    }
    if (!for_children || !f->header || !f->rel || f->rel->relation->link != KP_LINK_FOREIGN_KEY) return own;
    binding b = {cJSON_CreateObject(), cJSON_CreateObject()};
    const kp_relation *rel = f->rel->relation;
    for (size_t i = 0; i < rel->fk_count; i++) {
        const cJSON *h = cJSON_GetObjectItemCaseSensitive(own.holders, rel->ref_attrs[i]->name);
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(own.values, rel->ref_attrs[i]->name);
        if (h) hold(&b, rel->fk_attrs[i], "%s%s", h->valuestring, "");
        if (v) cJSON_AddItemToObject(b.values, rel->fk_attrs[i]->name, cJSON_Duplicate(v, 1));
    }
    binding_free(&own);
    return b;
}

/* The attributes of a record the parent fetch returned (execute.c virtual_targets). */
static binding bind_child(const ddb_fetch *f)
{
    binding b = {cJSON_CreateObject(), cJSON_CreateObject()};
    const kp_rel *r = f->rel;
    const kp_relation *rel = r->relation;
    if (f->placement && f->placement->elements) {
        /* the element items in the referenced record's partition (an adjacency list) */
        hold(&b, r->source->key[0], "<%s.%s>", r->source->name, r->source->key[0]->name);
    } else if (rel->link == KP_LINK_FOREIGN_KEY) {
        int holder_is_source = rel->holder == r->source;
        for (size_t i = 0; i < rel->fk_count; i++) {
            const kp_attr *from = holder_is_source ? rel->fk_attrs[i] : rel->ref_attrs[i];
            const kp_attr *to = holder_is_source ? rel->ref_attrs[i] : rel->fk_attrs[i];
            hold(&b, to, "<%s.%s>", r->source->name, from->name);
        }
    } else if (rel->link == KP_LINK_THROUGH) {
        int forward = !r->is_inverse;
        if (f->entity->entity == rel->through) {
            const kp_entity *side = forward ? rel->from : rel->to;
            kp_attr **attrs = forward ? rel->through_from : rel->through_to;
            for (size_t i = 0; i < side->key_count; i++) hold(&b, attrs[i], "<%s.%s>", side->name, side->key[i]->name);
        } else {
            const kp_entity *side = forward ? rel->to : rel->from;
            kp_attr **attrs = forward ? rel->through_to : rel->through_from;
            for (size_t i = 0; i < side->key_count; i++) hold(&b, side->key[i], "<%s.%s>", rel->through->name, attrs[i]->name);
        }
    } else if (r->is_inverse) {
        /* the element items in the referenced record's partition (an adjacency list) */
        hold(&b, r->source->key[0], "<%s.%s>", r->source->name, r->source->key[0]->name);
    } else {
        hold(&b, rel->to->key[0], "<%s.%s[i]>", r->source->name, rel->array_attr->name);
    }
    return b;
}

/* A key value with placeholders: execute.c's kp_ddb_format_value over a virtual record. */
static void render(const ddb_format *fm, const binding *b, char *buf, size_t size)
{
    size_t len = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < fm->count; i++) {
        const ddb_segment *s = &fm->segs[i];
        char part[1024];
        if (s->literal) {
            snprintf(part, sizeof part, "%s", s->literal);
        } else {
            const cJSON *h = cJSON_GetObjectItemCaseSensitive(b->holders, s->attr->name);
            const cJSON *v = cJSON_GetObjectItemCaseSensitive(b->values, s->attr->name);
            if (h) snprintf(part, sizeof part, "%s", h->valuestring);
            else if (!v || kp_ddb_key_text(s->attr, s->width, v, part, sizeof part)) snprintf(part, sizeof part, "<%s>", s->attr->name);
        }
        len += (size_t)snprintf(buf + len, len < size ? size - len : 0, "%s", part);
        if (len >= size) len = size - 1;
    }
}

typedef struct op_file {
    const ddb_fetch *f;
    const kp_operation *op;     /* the plan's operation (NULL if the plan has fewer) */
    int parent;                 /* the request whose items give its keys (0-based), -1: the parameters */
    const char *command;        /* the AWS CLI command: "query", "get-item", ... */
    char file[300];             /* under requests/ */
    cJSON *request;
} op_file;

typedef struct op_list {
    op_file items[64];
    size_t count;
} op_list;

/* The fetches of a pattern in the order of its plan's operations (kp_fetch_visit: the
 * order the claims walker prices them in), each with the request whose answer it runs on;
 * a copy or a rider sends no request and has no operation. */
static void collect(void *ctx, const kp_fetch *node, const kp_fetch *parent_node)
{
    op_list *ops = ctx;
    const ddb_fetch *f = (const ddb_fetch *)node;
    if (ops->count == sizeof ops->items / sizeof ops->items[0] || f->kind == DDB_COPY || f->kind == DDB_RIDE) return;
    int parent = -1;
    for (size_t i = ops->count; parent_node && i-- > 0;)
        if (&ops->items[i].f->base == parent_node) { parent = (int)i; break; }
    ops->items[ops->count++] = (op_file){.f = f, .parent = parent};
}

static cJSON *av_string(const char *s)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "S", s);
    return o;
}

/* The request of one operation as execute.c sends it for a first page; with `next`, as
 * it sends it for a later page of the pattern's paged listing (no header, the
 * continuation instead); with `omit_optional`, as it sends it when the optional
 * parameters are not given. */
static cJSON *build_request(emitter *E, const kp_pattern *p, const op_file *o, int next, int omit_optional,
                            const char **command)
{
    const ddb_fetch *f = o->f;
    binding b = o->parent < 0 ? bind_root(p, f, 1, omit_optional) : bind_child(f);
    char pk[2100], sk[2048];
    render(&f->placement->pk, &b, pk, sizeof pk);
    render(&f->placement->sk, &b, sk, sizeof sk);
    binding_free(&b);
    if (f->is_scan) {
        const kp_attr *key = f->rel->relation->to->key[0];
        char text[300];
        snprintf(text, sizeof text, "<%s.%s>", f->rel->source->name, key->name);
        cJSON *av = cJSON_CreateObject();
        cJSON_AddStringToObject(av, kp_ddb_attribute_type(&key->type), text);
        *command = "scan";
        return kp_ddb_scan_request(E->table, f, av);
    }
    if (f->kind == DDB_BATCH_GET || (f->kind == DDB_GET && o->op && strcmp(o->op->op, "BatchGetItem") == 0)) {
        cJSON *keys = cJSON_CreateArray(), *key = cJSON_CreateObject();
        cJSON_AddItemToObject(key, "PK", av_string(pk));
        cJSON_AddItemToObject(key, "SK", av_string(sk));
        cJSON_AddItemToArray(keys, key);
        *command = "batch-get-item";
        return kp_ddb_batch_get_request(E->table, keys);
    }
    if (f->kind == DDB_GET) {
        *command = "get-item";
        return kp_ddb_get_item_request(E->table, pk, sk);
    }
    char after[300];
    snprintf(after, sizeof after, "<last %s>", f->placement->index->sk_attr);
    ddb_request_ctx ctx = {.pattern = p, .table = E->table, .after_sk = next && f->shards > 1 ? after : NULL,
                           .is_optional_omitted = omit_optional, .err = E->err};
    if (f->shards > 1) {
        size_t len = strlen(pk);
        snprintf(pk + len, sizeof pk - len, "#<shard>");
    }
    int with_header = f->header && !next;
    int64_t limit = kp_ddb_request_limit(&ctx, f);
    if (limit > 0 && with_header) limit += 1 + f->rider_count;
    *command = "query";
    cJSON *req = kp_ddb_query_request(&ctx, f, pk, with_header, limit);
    if (req && next && f->shards == 1) cJSON_AddStringToObject(req, "ExclusiveStartKey", PAGE_KEY);
    return req;
}

/* The GetItem a later page of a merged header Query reads the header with (execute.c read_header). */
static cJSON *build_header_request(emitter *E, const kp_pattern *p, const ddb_fetch *f)
{
    binding b = bind_root(p, f, 0, 0);
    char pk[2100], sk[2048];
    render(&f->header->placements[0].pk, &b, pk, sizeof pk);
    render(&f->header->placements[0].sk, &b, sk, sizeof sk);
    binding_free(&b);
    return kp_ddb_get_item_request(E->table, pk, sk);
}

/* "list-projects" -> a file name: letters, digits, '.', '-', '_' kept, others '_'. */
static void file_stem(const char *name, char *buf, size_t size)
{
    size_t i = 0;
    for (; name[i] && i + 1 < size; i++) {
        char c = name[i];
        int ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '-' || c == '_';
        buf[i] = ok ? c : '_';
    }
    buf[i] = '\0';
}

/* The "<...>" placeholders of a request, each once, in order of appearance. */
static void placeholders(const cJSON *request, cJSON *out)
{
    char *text = cJSON_PrintUnformatted(request);
    for (const char *s = text ? strchr(text, '<') : NULL; s; s = strchr(s + 1, '<')) {
        const char *end = strchr(s, '>');
        if (!end) break;
        char name[512];
        snprintf(name, sizeof name, "%.*s", (int)(end - s + 1), s);
        if (!strpbrk(name + 1, "<\"") && !has_name(out, name)) cJSON_AddItemToArray(out, cJSON_CreateString(name));
    }
    cJSON_free(text);
}

typedef enum holder_kind { HOLDER_PARAM, HOLDER_ANSWER, HOLDER_SHARD, HOLDER_PAGE } holder_kind;

static holder_kind kind_of(const char *name)
{
    if (strcmp(name, "<shard>") == 0) return HOLDER_SHARD;
    if (strcmp(name, PAGE_KEY) == 0 || strncmp(name, "<last ", 6) == 0) return HOLDER_PAGE;
    return strchr(name, '.') ? HOLDER_ANSWER : HOLDER_PARAM;
}

static void list_holders(kp_text *t, const cJSON *names, holder_kind kind)
{
    int first = 1;
    for (const cJSON *n = names->child; n; n = n->next)
        if (kind_of(n->valuestring) == kind) {
            kp_text_printf(t, "%s`%s`", first ? "" : ", ", n->valuestring);
            first = 0;
        }
}

static int count_holders(const cJSON *names, holder_kind kind)
{
    int n = 0;
    for (const cJSON *c = names->child; c; c = c->next) n += kind_of(c->valuestring) == kind;
    return n;
}

/* The parameter an answer's placeholder ("<Category.id>") equals when the pattern selects
 * its root by it (`id = :id`), or NULL. */
static const kp_param *param_of_holder(const kp_pattern *p, const char *holder)
{
    for (size_t i = 0; i < p->where_count; i++) {
        const kp_cond *c = &p->where[i];
        if (c->path_len || c->op != KP_OP_EQ || !c->value.param || !c->attr->entity) continue;
        char name[300];
        snprintf(name, sizeof name, "<%s.%s>", c->attr->entity->name, c->attr->name);
        if (strcmp(name, holder) == 0) return c->value.param;
    }
    return NULL;
}

/* What a request needs, for the README: parameters, values from an earlier answer, shards. */
static void readme_needs(kp_text *t, const kp_pattern *p, const op_list *ops, const op_file *o, const cJSON *request,
                         const char *command)
{
    cJSON *names = cJSON_CreateArray();
    placeholders(request, names);
    const ddb_fetch *f = o->f;
    if (count_holders(names, HOLDER_PARAM)) {
        kp_text_append(t, "   Parameters: ");
        list_holders(t, names, HOLDER_PARAM);
        kp_text_append(t, ".\n");
    }
    if (count_holders(names, HOLDER_ANSWER) && o->parent >= 0 && f->base.is_independent) {
        /* keyed by what the parameters give request `parent` (execute.c sends both at once) */
        for (const cJSON *n = names->child; n; n = n->next) {
            if (kind_of(n->valuestring) != HOLDER_ANSWER) continue;
            const kp_param *param = param_of_holder(p, n->valuestring);
            if (param) kp_text_printf(t, "   `%s` is the parameter `<%s>`, which keys request %d: send both at once.\n", n->valuestring,
                                      param->name, o->parent + 1);
            else kp_text_printf(t, "   `%s`: the value the parameters give request %d's key: send both at once.\n", n->valuestring,
                                o->parent + 1);
        }
    } else if (count_holders(names, HOLDER_ANSWER) && o->parent >= 0) {
        const op_file *parent = &ops->items[o->parent];
        const char *entity = f->rel ? f->rel->source->name : "";
        if (f->rel && f->rel->relation->link == KP_LINK_THROUGH && f->entity->entity != f->rel->relation->through)
            entity = f->rel->relation->through->name;
        kp_text_printf(t, "   From the answer of request %d: ", o->parent + 1);
        list_holders(t, names, HOLDER_ANSWER);
        if (strcmp(command, "batch-get-item") == 0)
            kp_text_printf(t, " of every %s item it returned, one key each in `Keys` (at most 100 keys per request; "
                              "send `UnprocessedKeys` again).\n", entity);
        else if (parent->f->header && f->rel && f->rel->source == parent->f->header->entity)
            kp_text_printf(t, " of the %s header item it returned.\n", entity);
        else
            kp_text_printf(t, " of each %s item it returned: one request per item.\n", entity);
    }
    if (count_holders(names, HOLDER_SHARD))
        kp_text_printf(t, "   `<shard>`: send it once per shard, 0 to %d, and merge the answers by %s.\n", f->shards - 1,
                       f->placement->index->sk_attr);
    if (count_holders(names, HOLDER_PAGE)) {
        kp_text_append(t, "   From the previous page: ");
        list_holders(t, names, HOLDER_PAGE);
        kp_text_append(t, f->shards > 1 ? " (the sort key of the last item of the merged page).\n"
                                        : " (the `LastEvaluatedKey` map of the previous page's answer).\n");
    }
    const kp_shape *s = f->shape;
    if (s && s->kind == KP_SHAPE_EACH && cJSON_GetObjectItemCaseSensitive(request, "Limit")) {
        if (s->limit_param) kp_text_printf(t, "   `Limit` is the default of the parameter `<%s>`", s->limit_param->name);
        else kp_text_append(t, "   `Limit` is the page size the model declares");
        if (s->page == KP_PAGE_OFFSET && s->offset_param) kp_text_printf(t, ", plus `<%s>`", s->offset_param->name);
        kp_text_append(t, f->header && !cJSON_GetObjectItemCaseSensitive(request, "ExclusiveStartKey") &&
                                  !count_holders(names, HOLDER_PAGE)
                              ? (f->rider_count ? ", plus one for the header item and one for each item riding with it.\n"
                                                : ", plus one for the header item.\n")
                              : ".\n");
    }
    if (strcmp(command, "scan") == 0)
        kp_text_append(t, "   A Scan reads the whole table (the design's defect, see `keyplan advise`); continue with "
                          "`ExclusiveStartKey` until the answer has no `LastEvaluatedKey`.\n");
    if (!names->child) kp_text_append(t, "   Needs no values: run it as it is.\n");
    cJSON_Delete(names);
}

static int write_request(emitter *E, const char *file, const cJSON *request)
{
    char name[400];
    snprintf(name, sizeof name, "requests/%s", file);
    return kp_emit_write_json(E->options, E->dir, name, request, E->err);
}

/* When a request (`file`, built with `next`) mentions optional parameters: the request
 * keyplan sends without them. */
static int emit_without_optional(emitter *E, const kp_pattern *p, const op_file *o, const cJSON *request, const char *file,
                                 int next, kp_text *readme)
{
    cJSON *names = cJSON_CreateArray();
    placeholders(request, names);
    kp_text optional = {0};
    for (size_t i = 0; i < p->param_count; i++) {
        char holder[300];
        snprintf(holder, sizeof holder, "<%s>", p->params[i]->name);
        if (p->params[i]->is_optional && has_name(names, holder))
            kp_text_printf(&optional, "%s`%s`", optional.len ? ", " : "", holder);
    }
    cJSON_Delete(names);
    int rc = 0;
    if (optional.len) {
        char without_file[320];
        snprintf(without_file, sizeof without_file, "%.*s.optional-omitted.json", (int)(strlen(file) - strlen(".json")), file);
        const char *command = NULL;
        cJSON *without = build_request(E, p, o, next, 1, &command);
        rc = without ? write_request(E, without_file, without) : -1;
        if (rc == 0)
            kp_text_printf(readme, "   Optional: %s. Without %s keyplan sends `%s` instead (the conditions on %s dropped).\n",
                           optional.data, strchr(optional.data, ',') ? "them" : "it", without_file,
                           strchr(optional.data, ',') ? "them" : "it");
        cJSON_Delete(without);
    }
    kp_text_free(&optional);
    return rc;
}

/* One pattern: its request files and its section of the README. */
static int emit_pattern(emitter *E, const kp_plan *plan, kp_text *readme)
{
    const kp_pattern *p = plan->pattern;
    op_list ops = {.count = 0};
    kp_fetch_visit(&E->L->roots[p->index]->base, collect, &ops);
    char stem[256];
    file_stem(p->name, stem, sizeof stem);
    kp_text_printf(readme, "\n## %s\n\n", p->name);
    if (p->description) kp_text_printf(readme, "%s\n\n", p->description);
    int rc = 0;
    const op_file *paged = NULL;
    for (size_t k = 0; k < ops.count && rc == 0; k++) {
        op_file *o = &ops.items[k];
        o->op = k < plan->op_count ? &plan->ops[k] : NULL;
        o->request = build_request(E, p, o, 0, 0, &o->command);
        if (!o->request) { rc = -1; break; }
        if (ops.count == 1) snprintf(o->file, sizeof o->file, "%s.json", stem);
        else snprintf(o->file, sizeof o->file, "%s.%zu.json", stem, k + 1);
        rc = write_request(E, o->file, o->request);
        kp_text_printf(readme, "%zu. `%s`: `aws dynamodb %s`, round trip %d", k + 1, o->file, o->command, o->op ? o->op->step : 1);
        if (o->parent >= 0 && o->op && o->op->waits_for_previous) kp_text_printf(readme, ", after request %d", o->parent + 1);
        kp_text_append(readme, ".\n");
        if (o->op)
            kp_text_printf(readme, "   %s%s%s: %s\n", o->op->op, o->op->index ? " index " : "", o->op->index ? o->op->index : "",
                           o->op->condition ? o->op->condition : "");
        if (o->op && o->op->why) kp_text_printf(readme, "   Note: %s.\n", o->op->why);
        readme_needs(readme, p, &ops, o, o->request, o->command);
        if (rc == 0) rc = emit_without_optional(E, p, o, o->request, o->file, 0, readme);
        if (p->paged && o->f->shape == p->paged && (o->f->kind == DDB_QUERY || o->f->kind == DDB_COUNT) && !o->f->is_scan)
            paged = o;
    }
    if (rc == 0 && paged) {
        /* a later page: what execute.c sends instead for the paged listing */
        char base[300], file[320];
        snprintf(base, sizeof base, "%.*s", (int)(strlen(paged->file) - strlen(".json")), paged->file);
        snprintf(file, sizeof file, "%s.next.json", base);
        const char *command = NULL;
        cJSON *next = build_request(E, p, paged, 1, 0, &command);
        if (!next) rc = -1;
        if (rc == 0) rc = write_request(E, file, next);
        if (rc == 0) {
            kp_text_printf(readme, "\nLater pages: `%s` (`aws dynamodb %s`) takes the place of request %d", file, command,
                           (int)(paged - ops.items) + 1);
            if (paged->f->header) kp_text_append(readme, "; it no longer returns the header item");
            kp_text_append(readme, ".\n");
            readme_needs(readme, p, &ops, paged, next, command);
            rc = emit_without_optional(E, p, paged, next, file, 1, readme);
        }
        cJSON_Delete(next);
        if (rc == 0 && paged->f->header && paged->parent < 0) {
            snprintf(file, sizeof file, "%s.next-header.json", base);
            cJSON *header = build_header_request(E, p, paged->f);
            rc = header ? write_request(E, file, header) : nomem(E);
            if (rc == 0) {
                kp_text_printf(readme, "   The %s header item is then read by key: `%s` (`aws dynamodb get-item`).\n",
                               paged->f->header->entity->name, file);
                op_file root = {.f = paged->f, .parent = -1};
                readme_needs(readme, p, &ops, &root, header, "get-item");
            }
            cJSON_Delete(header);
        }
    }
    for (size_t k = 0; k < ops.count; k++) cJSON_Delete(ops.items[k].request);
    return rc;
}

static int emit_requests(emitter *E)
{
    const kp_design *d = E->d;
    kp_text readme = {0};
    kp_text_printf(&readme,
                   "# Requests of the %s design for %s (DynamoDB)\n\n"
                   "One file per request keyplan sends for an access pattern, exactly as `keyplan verify` sends it,\n"
                   "for the AWS CLI once the placeholders are replaced:\n\n"
                   "    aws dynamodb query --cli-input-json file://requests/<pattern>.json\n\n"
                   "- `<name>` is the pattern's parameter `name`;\n"
                   "- `<Entity.attribute>` is that attribute of an item an earlier request returned;\n"
                   "- `<shard>` is a shard number: the request is sent once per shard and the answers merged;\n"
                   "- `" PAGE_KEY "` and `<last ...>` come from the previous page's answer.\n\n"
                   "A pattern that needs several requests has one file per request, numbered in the order keyplan\n"
                   "sends them (`<pattern>.1.json`, `<pattern>.2.json`, ...); requests of the same round trip can be\n"
                   "sent in parallel. A paged listing's later pages use `<file>.next.json` instead of the first\n"
                   "page's request.\n",
                   d->candidate, d->model->name);
    int rc = 0;
    for (size_t i = 0; i < d->plan_count && rc == 0; i++) rc = emit_pattern(E, &d->plans[i], &readme);
    if (rc == 0)
        rc = readme.is_failed ? nomem(E) : kp_emit_write_file(E->options, E->dir, "requests/README.md", readme.data, readme.len, E->err);
    kp_text_free(&readme);
    return rc;
}

int kp_ddb_emit(const kp_design *d, const char *out_dir, const kp_emit_options *options, kp_error *err)
{
    kp_emit_options given = *options;
    if (!given.prefix) given.prefix = "";
    emitter E = {.d = d, .L = d->layout, .options = &given, .dir = out_dir, .err = err};
    kp_error_clear(err);
    snprintf(E.table, sizeof E.table, "%s%s", given.prefix, E.L->table);
    int rc = emit_create_table(&E);
    if (rc == 0) rc = emit_workbench(&E);
    if (rc == 0) rc = emit_cloudformation(&E);
    if (rc == 0) rc = emit_requests(&E);
    kp_arena_free(&E.arena);
    return rc;
}
