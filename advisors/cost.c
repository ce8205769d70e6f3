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

/* The service's unit prices for the region asked (the first one by default); NULL when
 * the table does not know it — then every unit price must be given. */
static const kp_region_prices *region_prices(const kp_pricing *P, const char *region)
{
    for (size_t i = 0; i < P->region_count; i++)
        if (!region || strcmp(P->regions[i].region, region) == 0) return &P->regions[i];
    return NULL;
}

static double given_or(double given, double table) { return given >= 0 ? given : table; }

static void price_units(const kp_pricing *P, const kp_prices *o, kp_cost *out)
{
    const kp_region_prices *r = region_prices(P, o->region);
    int all_given = o->per_million_reads >= 0 && o->per_million_writes >= 0 && o->per_gb_month >= 0;
    if (!r && !all_given) {
        /* not priced, and said so: a region one service's table lacks must not stop the others */
        char known[256] = "";
        size_t n = 0;
        for (size_t i = 0; i < P->region_count && n < sizeof known; i++)
            n += (size_t)snprintf(known + n, sizeof known - n, "%s%s", i ? ", " : "", P->regions[i].region);
        out->is_priced = 0;
        snprintf(out->price_note, sizeof out->price_note,
                 "%s is not priced: its prices for region '%s' are not in keyplan's table (it has %s); give --price-read, "
                 "--price-write and --price-storage for it (%s)", P->service, o->region, known, P->source);
        return;
    }
    out->price_region = r ? r->region : o->region;
    out->is_provisioned = o->is_provisioned;
    double reads = P->units_are_neutral ? out->read_io : out->read_units;
    double writes = P->units_are_neutral ? out->write_io : out->write_units;
    if (o->is_provisioned) {
        /* capacity units kept for the whole month, sized at the rates over the target utilisation */
        double hours = KP_SECONDS_PER_MONTH / 3600;
        out->price_reads = given_or(o->per_million_reads, r ? r->per_read_unit_hour : 0);
        out->price_writes = given_or(o->per_million_writes, r ? r->per_write_unit_hour : 0);
        out->month_reads = ceil(reads / KP_PROVISIONED_UTILISATION) * hours * out->price_reads;
        out->month_writes = ceil(writes / KP_PROVISIONED_UTILISATION) * hours * out->price_writes;
    } else {
        out->price_reads = given_or(o->per_million_reads, r ? r->per_million_reads : 0);
        out->price_writes = given_or(o->per_million_writes, r ? r->per_million_writes : 0);
        out->month_reads = reads * KP_SECONDS_PER_MONTH / 1e6 * out->price_reads;
        out->month_writes = writes * KP_SECONDS_PER_MONTH / 1e6 * out->price_writes;
    }
    out->price_storage = given_or(o->per_gb_month, r ? r->per_gb_month : 0);
    out->month_storage = out->storage_bytes / (1024.0 * 1024 * 1024) * out->price_storage;
    out->month_total = out->month_reads + out->month_writes + out->month_storage;
}

/* The smallest tier that holds the data (disk with headroom, a share of it in memory);
 * past the largest, as many shards of the largest as the data needs. */
static void price_tier(const kp_pricing *P, const kp_prices *o, kp_cost *out)
{
    double gb = out->storage_bytes / 1e9;
    double disk = gb * KP_TIER_DISK_HEADROOM, ram = gb * KP_TIER_MEMORY_SHARE;
    const kp_tier_price *t = &P->tiers[P->tier_count - 1];
    int shards = 1;
    for (size_t i = 0; i < P->tier_count; i++)
        if (P->tiers[i].disk_gb >= disk && P->tiers[i].ram_gb >= ram) { t = &P->tiers[i]; break; }
    if (t->disk_gb < disk || t->ram_gb < ram) {
        double by_disk = ceil(disk / t->disk_gb), by_ram = ceil(ram / t->ram_gb);
        shards = (int)(by_disk > by_ram ? by_disk : by_ram);
    }
    out->tier = t;
    out->shards = shards;
    out->price_region = P->tier_region;
    out->price_hour = given_or(o->per_hour, t->usd_per_hour);
    out->month_total = out->price_hour * shards * (KP_SECONDS_PER_MONTH / 3600);
}

static void price(const kp_backend *b, const kp_prices *given, kp_cost *out)
{
    const kp_pricing *P = b->limits ? b->limits->pricing : NULL;
    if (!P) return;
    kp_prices o = given ? *given : KP_PRICES_DEFAULT;
    out->is_priced = 1;
    out->pricing = P;
    if (P->tier_count) price_tier(P, &o, out);
    else price_units(P, &o, out);
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
    price(d->backend, prices, out);
    return 0;
    return 0;
}

void kp_cost_price_sentence(const kp_cost *c, char *buf, size_t size)
{
    if (!c->is_priced) { snprintf(buf, size, "%s", c->price_note[0] ? c->price_note : "not priced"); return; }
    const kp_pricing *P = c->pricing;
    if (c->tier)
        snprintf(buf, size, "%s (%s, prices of %s): about $%.2f a month for %d x %s (a three-node replica set each, "
                 "$%.2f an hour; %.0f GB memory, %.0f GB disk; sized by the %.1f GB stored, not by load)",
                 P->service, c->price_region, P->as_of, c->month_total, c->shards, c->tier->name, c->price_hour,
                 c->tier->ram_gb, c->tier->disk_gb, c->storage_bytes / 1e9);
    else
        snprintf(buf, size, "%s %s (%s, prices of %s): about $%.2f a month (reads $%.2f, writes $%.2f, storage $%.2f)",
                 P->service, c->is_provisioned ? "provisioned" : "on-demand", c->price_region, P->as_of, c->month_total,
                 c->month_reads, c->month_writes, c->month_storage);
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

/* A number under a constant key (a literal): a row of thousands per report copies no key. */
static void number_cs(cJSON *o, const char *key, double v) { cJSON_AddItemToObjectCS(o, key, cJSON_CreateNumber(v)); }

cJSON *kp_cost_to_json(const kp_cost *c)
{
    cJSON *o = cJSON_CreateObject();
    const kp_limits *L = c->design->backend->limits;
    cJSON *patterns = cJSON_AddArrayToObject(o, "patterns");
    for (size_t i = 0; i < c->pattern_count; i++) {
        const kp_pattern_cost *p = &c->patterns[i];
        cJSON *po = cJSON_CreateObject();
        cJSON_AddItemToObjectCS(po, "name", cJSON_CreateString(p->pattern->name));
        number_cs(po, "rps", p->rps);
        number_cs(po, "round_trips", p->round_trips);
        number_cs(po, "requests", round2(p->requests));
        number_cs(po, "items_read", round2(p->items));
        number_cs(po, "bytes_read", round(p->bytes));
        if (L->read_unit) number_cs(po, "read_units", round2(p->read_units));
        number_cs(po, "io_units", round2(p->io_units));
        cJSON_AddItemToObjectCS(po, "scan", cJSON_CreateBool(p->is_scan));
        cJSON_AddItemToArray(patterns, po);
    }
    cJSON *writes = cJSON_AddArrayToObject(o, "writes");
    for (size_t i = 0; i < c->write_count; i++) {
        const kp_write_cost *w = &c->writes[i];
        cJSON *wo = cJSON_CreateObject();
        cJSON_AddItemToObjectCS(wo, "name", cJSON_CreateString(w->write->name));
        number_cs(wo, "rps", w->rps);
        number_cs(wo, "requests", round2(w->requests));
        number_cs(wo, "items_written", round2(w->items));
        number_cs(wo, "bytes_written", round(w->bytes));
        number_cs(wo, "amplification", round2(w->amplification));
        if (L->write_unit) number_cs(wo, "write_units", round2(w->write_units));
        number_cs(wo, "io_units", round2(w->io_units));
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
        cJSON_AddStringToObject(m, "service", c->pricing->service);
        cJSON_AddStringToObject(m, "region", c->price_region);
        cJSON_AddStringToObject(m, "capacity", c->tier ? "cluster" : c->is_provisioned ? "provisioned" : "on-demand");
        cJSON_AddStringToObject(m, "prices_as_of", c->pricing->as_of);
        cJSON_AddStringToObject(m, "source", c->pricing->source);
        if (c->tier) {
            cJSON_AddStringToObject(m, "tier", c->tier->name);
            cJSON_AddNumberToObject(m, "shards", c->shards);
            cJSON_AddNumberToObject(m, "per_hour", c->price_hour);
        } else {
            cJSON_AddNumberToObject(m, "reads", round2(c->month_reads));
            cJSON_AddNumberToObject(m, "writes", round2(c->month_writes));
            cJSON_AddNumberToObject(m, "storage", round2(c->month_storage));
            cJSON *p = cJSON_AddObjectToObject(m, "prices");
            const char *unit = c->is_provisioned ? "per_unit_hour" : "per_million";
            char key[32];
            snprintf(key, sizeof key, "%s_reads", unit);
            cJSON_AddNumberToObject(p, key, c->price_reads);
            snprintf(key, sizeof key, "%s_writes", unit);
            cJSON_AddNumberToObject(p, key, c->price_writes);
            cJSON_AddNumberToObject(p, "per_gb_month", c->price_storage);
        }
        cJSON_AddNumberToObject(m, "total", round2(c->month_total));
    } else {
        cJSON_AddNullToObject(o, "monthly_usd");
        if (c->price_note[0]) cJSON_AddStringToObject(o, "price_note", c->price_note);
    }
    return o;
}
