/*
 * cost.c — a design's cost under a workload mix (cost.h).
 *
 * Reads the plans and write plans the backend filled in (the same numbers `advise`
 * prints and `verify` measures), multiplies them by the mix's rates, sums storage from
 * the containers, and prices the units where the backend's limits carry prices.
 * Invariant: no figure is invented here — per-request numbers are the plan's, rates are
 * kp_pattern_rps / kp_write_rps; the only model of our own is the neutral I/O unit
 * (cost.h), applied identically to every database.
 */
#include "advisors/cost.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static double type_bytes(const kp_type *t)
{
    switch (t->kind) {
    case KP_T_STRING: return 16;
    case KP_T_INT: case KP_T_DOUBLE: case KP_T_COUNTER: return 8;
    case KP_T_DECIMAL: return 10;
    case KP_T_BOOL: return 1;
    case KP_T_TIMESTAMP: return 24;
    case KP_T_DATE: return 10;
    case KP_T_UUID: case KP_T_TIMEUUID: return 36;
    case KP_T_ENUM: return 8;
    case KP_T_BLOB: return 64;
    case KP_T_OBJECT: {
        double n = 0;
        for (size_t i = 0; i < t->field_count; i++) n += (double)strlen(t->fields[i]->name) + type_bytes(&t->fields[i]->type);
        return n ? n : 64;
    }
    case KP_T_ARRAY: case KP_T_MAP: {
        double items = t->avg_items > 0 ? t->avg_items : 4;
        return items * (t->item ? type_bytes(t->item) : 16);
    }
    default: return 8;
    }
}

double kp_record_bytes(const kp_entity *e)
{
    double n = 0;
    for (size_t i = 0; i < e->attr_count; i++) {
        const kp_attr *a = e->attrs[i];
        double v = a->avg_size > 0 ? a->avg_size : type_bytes(&a->type);
        n += ((double)strlen(a->name) + v) * (a->presence > 0 ? a->presence : 1);
    }
    return n;
}

static double read_io(const kp_plan *p)
{
    double units = 0;
    for (size_t i = 0; i < p->op_count; i++) {
        const kp_operation *op = &p->ops[i];
        double by_bytes = ceil(op->bytes / KP_READ_UNIT_BYTES);
        units += by_bytes > op->requests ? by_bytes : op->requests;
    }
    if (p->op_count == 0) units = p->requests;
    return units;
}

static double write_io(const kp_write_plan *w)
{
    double units = 0;
    for (size_t i = 0; i < w->touch_count; i++) {
        const kp_write_touch *t = &w->touches[i];
        if (t->count <= 0) continue;
        double per = ceil((t->bytes / t->count) / KP_WRITE_UNIT_BYTES);
        units += t->count * (per < 1 ? 1 : per);
    }
    if (w->touch_count == 0) units = w->items;
    return units;
}

static double write_rows(const kp_write *w)
{
    double rows = 0;
    for (size_t i = 0; i < w->step_count; i++) rows += w->steps[i].rows > 0 ? w->steps[i].rows : 1;
    return rows > 0 ? rows : 1;
}

int kp_cost_compute(const kp_design *d, const kp_mix *mix, const kp_prices *prices, kp_cost *out, kp_error *err)
{
    memset(out, 0, sizeof *out);
    out->design = d;
    out->mix = mix;
    out->patterns = calloc(d->plan_count ? d->plan_count : 1, sizeof *out->patterns);
    out->writes = calloc(d->write_plan_count ? d->write_plan_count : 1, sizeof *out->writes);
    if (!out->patterns || !out->writes) {
        kp_cost_free(out);
        return kp_error_set(err, KP_ERR_NOMEM, NULL, 0, 0, "out of memory");
    }
    double rate_sum = 0;
    for (size_t i = 0; i < d->plan_count; i++) {
        const kp_plan *p = &d->plans[i];
        kp_pattern_cost *c = &out->patterns[out->pattern_count++];
        c->pattern = p->pattern;
        c->rps = kp_pattern_rps(p->pattern, mix);
        c->round_trips = p->sequential_steps;
        c->requests = p->requests;
        c->items = p->items;
        c->bytes = p->bytes;
        c->read_units = p->read_units;
        c->io_units = read_io(p);
        c->is_scan = p->is_scan;
        out->read_requests += c->rps * c->requests;
        out->items_read += c->rps * c->items;
        out->bytes_read += c->rps * c->bytes;
        out->read_units += c->rps * c->read_units;
        out->read_io += c->rps * c->io_units;
        out->weighted_round_trips += c->rps * c->round_trips;
        rate_sum += c->rps;
    }
    if (rate_sum > 0) out->weighted_round_trips /= rate_sum;
    for (size_t i = 0; i < d->write_plan_count; i++) {
        const kp_write_plan *w = &d->write_plans[i];
        kp_write_cost *c = &out->writes[out->write_count++];
        c->write = w->write;
        c->rps = kp_write_rps(w->write, mix);
        c->requests = w->requests;
        c->items = w->items;
        for (size_t k = 0; k < w->touch_count; k++) c->bytes += w->touches[k].bytes;
        c->rows = write_rows(w->write);
        c->amplification = c->items / c->rows;
        c->write_units = w->write_units;
        c->io_units = write_io(w);
        out->write_requests += c->rps * c->requests;
        out->items_written += c->rps * c->items;
        out->bytes_written += c->rps * c->bytes;
        out->write_units += c->rps * c->write_units;
        out->write_io += c->rps * c->io_units;
    }
    out->io_units = out->read_io + KP_WRITE_WEIGHT * out->write_io;
    for (size_t i = 0; i < d->container_count; i++) {
        out->storage_bytes += d->containers[i].bytes;
        out->stored_items += d->containers[i].items;
    }
    for (size_t i = 0; i < d->model->entity_count; i++)
        out->base_bytes += d->model->entities[i]->count * kp_record_bytes(d->model->entities[i]);
    out->duplication = out->base_bytes > 0 ? out->storage_bytes / out->base_bytes : 1;
    const kp_limits *L = d->backend->limits;
    if (L && (L->price_per_million_reads > 0 || L->price_per_million_writes > 0 || L->price_per_gb_month > 0)) {
        out->is_priced = 1;
        out->price_reads = prices && prices->per_million_reads >= 0 ? prices->per_million_reads : L->price_per_million_reads;
        out->price_writes = prices && prices->per_million_writes >= 0 ? prices->per_million_writes : L->price_per_million_writes;
        out->price_storage = prices && prices->per_gb_month >= 0 ? prices->per_gb_month : L->price_per_gb_month;
        out->month_reads = out->read_units * KP_SECONDS_PER_MONTH / 1e6 * out->price_reads;
        out->month_writes = out->write_units * KP_SECONDS_PER_MONTH / 1e6 * out->price_writes;
        out->month_storage = out->storage_bytes / (1024.0 * 1024 * 1024) * out->price_storage;
        out->month_total = out->month_reads + out->month_writes + out->month_storage;
    }
    return 0;
}

void kp_cost_free(kp_cost *cost)
{
    free(cost->patterns);
    free(cost->writes);
    cost->patterns = NULL;
    cost->writes = NULL;
    cost->pattern_count = cost->write_count = 0;
}

static double round2(double v) { return round(v * 100) / 100; }

cJSON *kp_cost_to_json(const kp_cost *c)
{
    cJSON *o = cJSON_CreateObject();
    const kp_limits *L = c->design->backend->limits;
    cJSON *patterns = cJSON_AddArrayToObject(o, "patterns");
    for (size_t i = 0; i < c->pattern_count; i++) {
        const kp_pattern_cost *p = &c->patterns[i];
        cJSON *po = cJSON_CreateObject();
        cJSON_AddStringToObject(po, "name", p->pattern->name);
        cJSON_AddNumberToObject(po, "rps", p->rps);
        cJSON_AddNumberToObject(po, "round_trips", p->round_trips);
        cJSON_AddNumberToObject(po, "requests", round2(p->requests));
        cJSON_AddNumberToObject(po, "items_read", round2(p->items));
        cJSON_AddNumberToObject(po, "bytes_read", round(p->bytes));
        if (L->read_unit) cJSON_AddNumberToObject(po, "read_units", round2(p->read_units));
        cJSON_AddNumberToObject(po, "io_units", round2(p->io_units));
        cJSON_AddBoolToObject(po, "scan", p->is_scan);
        cJSON_AddItemToArray(patterns, po);
    }
    cJSON *writes = cJSON_AddArrayToObject(o, "writes");
    for (size_t i = 0; i < c->write_count; i++) {
        const kp_write_cost *w = &c->writes[i];
        cJSON *wo = cJSON_CreateObject();
        cJSON_AddStringToObject(wo, "name", w->write->name);
        cJSON_AddNumberToObject(wo, "rps", w->rps);
        cJSON_AddNumberToObject(wo, "requests", round2(w->requests));
        cJSON_AddNumberToObject(wo, "items_written", round2(w->items));
        cJSON_AddNumberToObject(wo, "bytes_written", round(w->bytes));
        cJSON_AddNumberToObject(wo, "amplification", round2(w->amplification));
        if (L->write_unit) cJSON_AddNumberToObject(wo, "write_units", round2(w->write_units));
        cJSON_AddNumberToObject(wo, "io_units", round2(w->io_units));
        cJSON_AddItemToArray(writes, wo);
    }
    cJSON *t = cJSON_AddObjectToObject(o, "totals");
    cJSON_AddNumberToObject(t, "read_requests_per_s", round2(c->read_requests));
    cJSON_AddNumberToObject(t, "items_read_per_s", round2(c->items_read));
    cJSON_AddNumberToObject(t, "bytes_read_per_s", round(c->bytes_read));
    cJSON_AddNumberToObject(t, "write_requests_per_s", round2(c->write_requests));
    cJSON_AddNumberToObject(t, "items_written_per_s", round2(c->items_written));
    cJSON_AddNumberToObject(t, "bytes_written_per_s", round(c->bytes_written));
    if (L->read_unit) {
        cJSON_AddStringToObject(t, "read_unit", L->read_unit);
        cJSON_AddNumberToObject(t, "read_units_per_s", round2(c->read_units));
    }
    if (L->write_unit) {
        cJSON_AddStringToObject(t, "write_unit", L->write_unit);
        cJSON_AddNumberToObject(t, "write_units_per_s", round2(c->write_units));
    }
    cJSON_AddNumberToObject(t, "io_units_per_s", round2(c->io_units));
    cJSON_AddNumberToObject(t, "weighted_round_trips", round2(c->weighted_round_trips));
    cJSON_AddNumberToObject(t, "storage_bytes", round(c->storage_bytes));
    cJSON_AddNumberToObject(t, "stored_items", round(c->stored_items));
    cJSON_AddNumberToObject(t, "base_bytes", round(c->base_bytes));
    cJSON_AddNumberToObject(t, "duplication", round2(c->duplication));
    if (c->is_priced) {
        cJSON *m = cJSON_AddObjectToObject(o, "monthly_usd");
        cJSON_AddNumberToObject(m, "reads", round2(c->month_reads));
        cJSON_AddNumberToObject(m, "writes", round2(c->month_writes));
        cJSON_AddNumberToObject(m, "storage", round2(c->month_storage));
        cJSON_AddNumberToObject(m, "total", round2(c->month_total));
        cJSON *p = cJSON_AddObjectToObject(m, "prices");
        cJSON_AddNumberToObject(p, "per_million_reads", c->price_reads);
        cJSON_AddNumberToObject(p, "per_million_writes", c->price_writes);
        cJSON_AddNumberToObject(p, "per_gb_month", c->price_storage);
    } else {
        cJSON_AddNullToObject(o, "monthly_usd");
    }
    return o;
}
