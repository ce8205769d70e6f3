/*
 * schema.c — what a MongoDB collection is created with: its $jsonSchema validator and
 * its createIndexes entries. apply_schema (live.c) and emit (emit.c) both use these,
 * so the script a team runs creates exactly what `keyplan seed` created.
 *
 * Invariant: the schema accepts every document transform makes (docs.c's type map):
 * required are only the key and the plain attributes a record must have.
 */
#include "backends/mongodb/mongo.h"

#include <string.h>

static cJSON *type_schema(const kp_type *t);

static cJSON *bson_type(const char *name)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "bsonType", name);
    return o;
}

static cJSON *object_schema(kp_attr *const *fields, size_t n)
{
    cJSON *o = bson_type("object");
    cJSON *props = cJSON_AddObjectToObject(o, "properties");
    for (size_t i = 0; i < n; i++) cJSON_AddItemToObject(props, fields[i]->name, type_schema(&fields[i]->type));
    return o;
}

static cJSON *type_schema(const kp_type *t)
{
    switch (t->kind) {
    case KP_T_STRING: return bson_type("string");
    case KP_T_ENUM: {
        cJSON *o = bson_type("string");
        cJSON *values = cJSON_AddArrayToObject(o, "enum");
        for (size_t i = 0; i < t->enum_count; i++) cJSON_AddItemToArray(values, cJSON_CreateString(t->enum_values[i]));
        return o;
    }
    case KP_T_UUID: case KP_T_TIMEUUID: {
        cJSON *o = bson_type("string");
        cJSON_AddStringToObject(o, "pattern", "^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$");
        return o;
    }
    case KP_T_DATE: {
        cJSON *o = bson_type("string");
        cJSON_AddStringToObject(o, "pattern", "^[0-9]{4}-[0-9]{2}-[0-9]{2}$");
        return o;
    }
    case KP_T_INT: case KP_T_COUNTER: return bson_type("long");
    case KP_T_DOUBLE: case KP_T_DECIMAL: return bson_type("double");
    case KP_T_BOOL: return bson_type("bool");
    case KP_T_TIMESTAMP: return bson_type("date");
    case KP_T_BLOB: return bson_type("binData");
    case KP_T_OBJECT: return object_schema(t->fields, t->field_count);
    case KP_T_ARRAY: {
        cJSON *o = bson_type("array");
        if (t->item) cJSON_AddItemToObject(o, "items", type_schema(t->item));
        if (t->max_items > 0) cJSON_AddNumberToObject(o, "maxItems", t->max_items);
        return o;
    }
    case KP_T_MAP: {
        cJSON *o = bson_type("object");
        if (t->item) cJSON_AddItemToObject(o, "additionalProperties", type_schema(t->item));
        return o;
    }
    default: return cJSON_CreateObject();
    }
}

static int is_required(const kp_attr *a)
{
    return a->key_index >= 0 || (!a->is_optional && !a->derived && !a->copy_of);
}

/* The schema of an entity's element: its attributes, nested children, extended references. */
static cJSON *entity_schema(const mg_layout *L, const mg_entity *me, int with_id, const kp_rel *inside)
{
    const kp_entity *e = me->entity;
    cJSON *o = bson_type("object");
    cJSON_AddStringToObject(o, "title", e->name);
    cJSON *required = cJSON_AddArrayToObject(o, "required");
    if (with_id) cJSON_AddItemToArray(required, cJSON_CreateString("_id"));
    for (size_t i = 0; i < e->attr_count; i++)
        if (is_required(e->attrs[i])) cJSON_AddItemToArray(required, cJSON_CreateString(e->attrs[i]->name));
    cJSON *props = cJSON_AddObjectToObject(o, "properties");
    if (with_id) {
        if (e->key_count == 1) cJSON_AddItemToObject(props, "_id", type_schema(&e->key[0]->type));
        else cJSON_AddItemToObject(props, "_id", bson_type("string")); /* the key parts joined by '|' */
    }
    for (size_t i = 0; i < e->attr_count; i++) cJSON_AddItemToObject(props, e->attrs[i]->name, type_schema(&e->attrs[i]->type));
    for (size_t i = 0; i < me->nested_count; i++) {
        const mg_nested *n = &me->nested[i];
        cJSON *child = entity_schema(L, n->child, 0, n->rel);
        if (n->is_array) {
            cJSON *arr = bson_type("array");
            cJSON_AddItemToObject(arr, "items", child);
            if (n->subset) cJSON_AddNumberToObject(arr, "maxItems", (double)n->subset);
            cJSON_AddItemToObject(props, n->field, arr);
        } else {
            cJSON_AddItemToObject(props, n->field, child);
        }
    }
    for (size_t i = 0; i < me->extref_count; i++) {
        const mg_extref *x = &me->extrefs[i];
        if (inside && x->rel->relation == inside->relation) continue; /* not copied inside the parent it points to */
        cJSON *sub = bson_type("object");
        cJSON *sp = cJSON_AddObjectToObject(sub, "properties");
        for (size_t k = 0; k < x->attr_count; k++) cJSON_AddItemToObject(sp, x->attrs[k]->name, type_schema(&x->attrs[k]->type));
        cJSON_AddItemToObject(props, x->field, sub);
    }
    return o;
}

cJSON *kp_mg_json_schema(const kp_design *d, const mg_collection *c)
{
    const mg_layout *L = d->layout;
    cJSON *o = cJSON_CreateObject();
    cJSON_AddItemToObject(o, "$jsonSchema", entity_schema(L, c->owner, 1, NULL));
    return o;
}

cJSON *kp_mg_index_specs(const mg_collection *c)
{
    cJSON *arr = cJSON_CreateArray();
    for (size_t i = 0; i < c->index_count; i++) {
        const mg_index *x = c->indexes[i];
        if (x->is_redundant) continue;
        cJSON *spec = cJSON_CreateObject();
        cJSON *key = cJSON_AddObjectToObject(spec, "key");
        for (size_t k = 0; k < x->field_count; k++) cJSON_AddNumberToObject(key, x->fields[k].path, x->fields[k].is_desc ? -1 : 1);
        cJSON_AddStringToObject(spec, "name", x->name);
        if (x->is_unique) cJSON_AddBoolToObject(spec, "unique", 1);
        cJSON_AddItemToArray(arr, spec);
    }
    return arr;
}
