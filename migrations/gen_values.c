/*
 * gen_values.c — what one generated value looks like: ranges, string formats, sizes,
 * nested objects, arrays and maps, all in canonical JSON (docs/model.md).
 *
 * A plan is resolved once per attribute (declared min/max, format and size, or
 * defaults inferred from the attribute's name: `email` looks like an e-mail address,
 * `createdAt` like a recent timestamp); values are then drawn from a per-record
 * random stream, so the same record number always gives the same value.
 * Invariant: the text appended is always the canonical JSON of the plan's type —
 * timestamps with milliseconds in UTC, lower-case uuids (version 4, or version 1 for
 * timeuuid), decimals with exactly two places, ints as plain digits — and a value
 * marked unique (or a key) is a function of the record number that is injective.
 */
#include "migrations/gen_internal.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/value.h"
#include "migrations/gen_words.h"

#define MS_PER_DAY 86400000LL

/* ---- formats --------------------------------------------------------------------- */

static const struct { const char *name; kp_gen_format format; } declared_formats[] = {
    {"name", KP_GEN_FMT_NAME},     {"first_name", KP_GEN_FMT_FIRST_NAME}, {"last_name", KP_GEN_FMT_LAST_NAME},
    {"email", KP_GEN_FMT_EMAIL},   {"handle", KP_GEN_FMT_HANDLE},         {"title", KP_GEN_FMT_TITLE},
    {"text", KP_GEN_FMT_TEXT},     {"word", KP_GEN_FMT_WORD},             {"url", KP_GEN_FMT_URL},
    {"phone", KP_GEN_FMT_PHONE},   {"sku", KP_GEN_FMT_SKU},               {"country", KP_GEN_FMT_COUNTRY},
    {"city", KP_GEN_FMT_CITY},     {"time_id", KP_GEN_FMT_TIME_ID},
};

/* The attribute name, lower-cased, without '_' and '-'. */
static void simplify_name(const char *name, char *out, size_t size)
{
    size_t n = 0;
    for (; name && *name && n + 1 < size; name++)
        if (*name != '_' && *name != '-') out[n++] = (char)tolower((unsigned char)*name);
    out[n] = '\0';
}

static int ends_with(const char *s, const char *suffix)
{
    size_t a = strlen(s), b = strlen(suffix);
    return a >= b && strcmp(s + a - b, suffix) == 0;
}

static int is_any(const char *s, const char *const *list)
{
    for (; *list; list++)
        if (strcmp(s, *list) == 0) return 1;
    return 0;
}

static int contains_any(const char *s, const char *const *list)
{
    for (; *list; list++)
        if (strstr(s, *list)) return 1;
    return 0;
}

static const char *const person_words[] = {"user", "person", "player", "customer", "author", "guest", "member",
                                           "employee", "operator", "bidder", "seller", "buyer", "contact",
                                           "student", "teacher", "patient", "driver", "artist", "owner",
                                           "agent", "manager", "admin", "follower", "profile", "people",
                                           "full", "display", "real", NULL};

/* A format for a string attribute that declares none, from its name (and its size:
 * a very short plain string is a code). in_address: a field of an object that looks
 * like a postal address, where "state" is a region code. */
static kp_gen_format infer_format(const char *attr_name, const kp_entity *entity, double size, int in_address)
{
    char name[128], ent[128];
    simplify_name(attr_name, name, sizeof name);
    simplify_name(entity ? entity->name : "", ent, sizeof ent);
    static const char *const first[] = {"firstname", "givenname", "forename", NULL};
    static const char *const last[] = {"lastname", "surname", "familyname", NULL};
    static const char *const handle[] = {"username", "handle", "login", "nickname", "screenname", NULL};
    static const char *const title[] = {"title", "subject", "headline", "caption", NULL};
    static const char *const text[] = {"description", "body", "text", "content", "comment", "bio", "summary",
                                       "message", "note", "review", "about", "details", NULL};
    static const char *const url[] = {"url", "website", "homepage", "link", "href", NULL};
    static const char *const phone[] = {"phone", "mobile", "tel", "telephone", "fax", NULL};
    static const char *const token[] = {"hash", "token", "secret", "digest", "checksum", "signature", "etag", NULL};
    static const char *const street[] = {"street", "address", "addressline", "line1", "line2", "streetaddress", NULL};
    static const char *const postcode[] = {"zip", "zipcode", "postcode", "postalcode", NULL};
    static const char *const word[] = {"tag", "tags", "word", "keyword", "keywords", "category", "label",
                                       "genre", "topic", "status", "state", "type", "kind", "color", "colour",
                                       "language", "region", "plan", "tier", "role", NULL};
    if (strstr(name, "email") || strcmp(name, "mail") == 0) return KP_GEN_FMT_EMAIL;
    if (contains_any(name, token)) return KP_GEN_FMT_TOKEN;
    if (is_any(name, first)) return KP_GEN_FMT_FIRST_NAME;
    if (is_any(name, last)) return KP_GEN_FMT_LAST_NAME;
    if (is_any(name, handle) || ends_with(name, "handle") || ends_with(name, "username")) return KP_GEN_FMT_HANDLE;
    if (strcmp(name, "timezone") == 0 || strcmp(name, "tz") == 0) return KP_GEN_FMT_TIMEZONE;
    if (strcmp(name, "locale") == 0) return KP_GEN_FMT_LOCALE;
    if (strcmp(name, "currency") == 0) return KP_GEN_FMT_CURRENCY;
    if (ends_with(name, "name")) {
        char prefix[128];
        size_t n = strlen(name) - 4;
        memcpy(prefix, name, n);
        prefix[n] = '\0';
        if (n == 0) return contains_any(ent, person_words) ? KP_GEN_FMT_NAME : KP_GEN_FMT_LABEL;
        return contains_any(prefix, person_words) ? KP_GEN_FMT_NAME : KP_GEN_FMT_LABEL;
    }
    if (is_any(name, title) || ends_with(name, "title")) return KP_GEN_FMT_TITLE;
    if (contains_any(name, text)) return KP_GEN_FMT_TEXT;
    if (is_any(name, url) || ends_with(name, "url")) return KP_GEN_FMT_URL;
    if (is_any(name, phone) || strstr(name, "phone")) return KP_GEN_FMT_PHONE;
    if (strstr(name, "sku")) return KP_GEN_FMT_SKU;
    if (strstr(name, "country")) return KP_GEN_FMT_COUNTRY;
    if (strstr(name, "city") || strcmp(name, "town") == 0) return KP_GEN_FMT_CITY;
    if (is_any(name, street)) return KP_GEN_FMT_STREET;
    if (is_any(name, postcode)) return KP_GEN_FMT_POSTCODE;
    if ((strcmp(name, "state") == 0 || strcmp(name, "province") == 0) && (in_address || (size > 0 && size <= 3)))
        return KP_GEN_FMT_CODE;
    if (size > 0 && size <= 4) return KP_GEN_FMT_CODE;
    if (is_any(name, word)) return KP_GEN_FMT_WORD;
    return KP_GEN_FMT_NONE;
}

/* An object whose fields look like a postal address. */
static int is_address(const kp_type *type)
{
    if (!type || type->kind != KP_T_OBJECT) return 0;
    for (size_t i = 0; i < type->field_count; i++) {
        char name[64];
        simplify_name(type->fields[i]->name, name, sizeof name);
        if (strcmp(name, "city") == 0 || strcmp(name, "zip") == 0 || strcmp(name, "postcode") == 0 ||
            strcmp(name, "street") == 0)
            return 1;
    }
    return 0;
}

/* ---- bounds ------------------------------------------------------------------------ */

/* Parses a decimal text into cents, rounding toward +inf (round_up) or -inf. */
static int parse_cents(const char *t, size_t n, int round_up, int64_t *out)
{
    if (kp_decimal_check(t, n)) return -1;
    size_t i = 0;
    int negative = t[0] == '-';
    if (negative) i = 1;
    int64_t whole = 0;
    for (; i < n && t[i] != '.'; i++) {
        if (whole > INT64_MAX / 1000) return -1;
        whole = whole * 10 + (t[i] - '0');
    }
    int64_t frac = 0;
    int digits = 0, rest = 0;
    if (i < n) i++;
    for (; i < n; i++, digits++) {
        if (digits < 2) frac = frac * 10 + (t[i] - '0');
        else if (t[i] != '0') rest = 1;
    }
    while (digits < 2) { frac *= 10; digits++; }
    int64_t cents = whole * 100 + frac;
    if (negative) cents = -cents;
    if (rest && round_up && !negative) cents++;
    if (rest && !round_up && negative) cents--;
    *out = cents;
    return 0;
}

int kp_gen_parse_cents(const char *text, size_t len, int round_up, int64_t *cents)
{
    return parse_cents(text, len, round_up, cents);
}

static int number_text(const kp_model *model, const cJSON *node, char *buf, size_t size, const char **text, size_t *len)
{
    if (!node || !(cJSON_IsNumber(node) || cJSON_IsRaw(node))) return -1;
    *text = kp_number_text(node, model ? model->doc : NULL, buf, size, len);
    return 0;
}

static int bound_int(const kp_model *model, const cJSON *node, int64_t *out)
{
    char buf[64];
    const char *t;
    size_t n;
    if (number_text(model, node, buf, sizeof buf, &t, &n)) return -1;
    if (kp_int_parse(t, n, out) == 0) return 0;
    if (cJSON_IsNumber(node) && fabs(node->valuedouble) < 9e18) { *out = (int64_t)llround(node->valuedouble); return 0; }
    return -1;
}

static int bound_cents(const kp_model *model, const cJSON *node, int round_up, int64_t *out)
{
    char buf[64];
    const char *t;
    size_t n;
    if (number_text(model, node, buf, sizeof buf, &t, &n)) return -1;
    return parse_cents(t, n, round_up, out);
}

static int bound_timestamp(const cJSON *node, int64_t *out)
{
    if (!cJSON_IsString(node)) return -1;
    if (kp_timestamp_parse(node->valuestring, out) == 0) return 0;
    int32_t days;
    if (kp_date_parse(node->valuestring, &days) == 0) { *out = (int64_t)days * MS_PER_DAY; return 0; }
    return -1;
}

static int bound_date(const cJSON *node, int64_t *out)
{
    int32_t days;
    if (!cJSON_IsString(node) || kp_date_parse(node->valuestring, &days)) return -1;
    *out = days;
    return 0;
}

static int64_t days_of(const char *date)
{
    int32_t d = 0;
    kp_date_parse(date, &d);
    return d;
}

/* Resolves lo/hi for numbers, timestamps and dates: declared bounds, else defaults
 * chosen from the attribute's name, else the type's default. */
static void resolve_range(kp_gen_plan *plan, const kp_model *model, const char *attr_name)
{
    char name[128];
    simplify_name(attr_name, name, sizeof name);
    const cJSON *min = plan->attr ? plan->attr->min : NULL, *max = plan->attr ? plan->attr->max : NULL;
    int64_t lo, hi;
    int has_lo, has_hi;
    switch (plan->type->kind) {
    case KP_T_INT: case KP_T_COUNTER: {
        static const struct { const char *name; int64_t lo, hi; } hints[] = {
            {"qty", 1, 10}, {"quantity", 1, 10}, {"age", 18, 90}, {"rating", 1, 5}, {"stars", 1, 5},
            {"year", 1990, 2026}, {"stock", 0, 500}, {"inventory", 0, 500}, {"priority", 1, 5},
            {"percent", 0, 100}, {"percentage", 0, 100}, {"seconds", 1, 3600}, {"duration", 1, 3600},
            {"port", 1024, 65535}, {"level", 1, 50}};
        lo = 0;
        hi = 1000;
        for (size_t i = 0; i < sizeof hints / sizeof hints[0]; i++)
            if (strcmp(name, hints[i].name) == 0) { lo = hints[i].lo; hi = hints[i].hi; }
        has_lo = bound_int(model, min, &lo) == 0;
        has_hi = bound_int(model, max, &hi) == 0;
        if (has_lo && !has_hi && hi < lo) hi = lo > INT64_MAX - 1000 ? INT64_MAX : lo + 1000;
        if (has_hi && !has_lo && lo > hi) lo = hi < INT64_MIN + 1000 ? INT64_MIN : hi - 1000;
        break;
    }
    case KP_T_DECIMAL:
        lo = 100;
        hi = 50000;
        has_lo = bound_cents(model, min, 1, &lo) == 0;
        has_hi = bound_cents(model, max, 0, &hi) == 0;
        if (has_lo && !has_hi && hi < lo) hi = lo + 100000;
        if (has_hi && !has_lo && lo > hi) lo = hi - 100000;
        break;
    case KP_T_DOUBLE:
        plan->dlo = 0;
        plan->dhi = 1;
        if (strcmp(name, "lat") == 0 || strcmp(name, "latitude") == 0) { plan->dlo = -90; plan->dhi = 90; }
        if (strcmp(name, "lng") == 0 || strcmp(name, "lon") == 0 || strcmp(name, "longitude") == 0) {
            plan->dlo = -180;
            plan->dhi = 180;
        }
        if (strcmp(name, "score") == 0) plan->dhi = 100;
        if (min && cJSON_IsNumber(min)) plan->dlo = min->valuedouble;
        if (max && cJSON_IsNumber(max)) plan->dhi = max->valuedouble;
        if (plan->dhi < plan->dlo) {
            if (min && !max) plan->dhi = plan->dlo + 1;
            else plan->dlo = plan->dhi - 1;
        }
        return;
    case KP_T_TIMESTAMP: case KP_T_TIMEUUID:
        lo = days_of("2024-01-01") * MS_PER_DAY;
        hi = days_of("2026-04-01") * MS_PER_DAY - 1;
        has_lo = bound_timestamp(min, &lo) == 0;
        has_hi = bound_timestamp(max, &hi) == 0;
        if (has_lo && !has_hi && hi < lo) hi = lo + 730 * MS_PER_DAY;
        if (has_hi && !has_lo && lo > hi) lo = hi - 730 * MS_PER_DAY;
        break;
    case KP_T_DATE:
        lo = days_of("2020-01-01");
        hi = days_of("2026-03-31");
        if (strstr(name, "birth") || strcmp(name, "dob") == 0) { lo = days_of("1950-01-01"); hi = days_of("2006-12-31"); }
        has_lo = bound_date(min, &lo) == 0;
        has_hi = bound_date(max, &hi) == 0;
        if (has_lo && !has_hi && hi < lo) hi = lo + 730;
        if (has_hi && !has_lo && lo > hi) lo = hi - 730;
        break;
    default:
        return;
    }
    if (hi < lo) hi = lo;
    plan->lo = lo;
    plan->hi = hi;
}

static int build_plan(kp_arena *arena, const kp_model *model, const kp_entity *entity, const kp_attr *attr,
                      const char *name, const kp_type *type, int64_t count, uint64_t salt, int in_address,
                      kp_gen_plan **out, kp_error *err);

int kp_gen_plan_build(kp_arena *arena, const kp_model *model, const kp_entity *entity, const kp_attr *attr,
                      const char *name, const kp_type *type, int64_t count, uint64_t salt, kp_gen_plan **out,
                      kp_error *err)
{
    return build_plan(arena, model, entity, attr, name, type, count, salt, 0, out, err);
}

static int build_plan(kp_arena *arena, const kp_model *model, const kp_entity *entity, const kp_attr *attr,
                      const char *name, const kp_type *type, int64_t count, uint64_t salt, int in_address,
                      kp_gen_plan **out, kp_error *err)
{
    kp_gen_plan *plan = kp_arena_alloc(arena, sizeof *plan);
    if (!plan) return kp_error_set(err, KP_ERR_NOMEM, NULL, 0, 0, "out of memory while planning sample data");
    plan->type = type;
    plan->attr = attr;
    plan->count = count;
    plan->salt = salt;
    plan->presence = 1;
    if (attr) {
        if (attr->presence < 1) plan->presence = attr->presence < 0 ? 0 : attr->presence;
        else if (attr->is_optional) plan->presence = 0.9;
        plan->is_unique = attr->is_unique;
        plan->size = attr->avg_size;
        plan->max_size = attr->max_size;
    }
    kp_gen_perm_init(&plan->time_order, (uint64_t)(count > 0 ? count : 0), kp_gen_hash(salt, 77));
    if (type->kind == KP_T_STRING) {
        plan->format = KP_GEN_FMT_NONE;
        if (attr && attr->format) {
            for (size_t i = 0; i < sizeof declared_formats / sizeof declared_formats[0]; i++)
                if (strcmp(attr->format, declared_formats[i].name) == 0) plan->format = declared_formats[i].format;
        } else if (name) {
            plan->format = infer_format(name, entity, plan->size, in_address);
        }
    }
    resolve_range(plan, model, name);
    if (type->kind == KP_T_ARRAY || type->kind == KP_T_MAP) {
        double avg = type->avg_items, max = type->max_items;
        if (avg <= 0 && max <= 0) { avg = 3; max = 6; }
        else if (avg <= 0) avg = max / 2;
        else if (max < avg) max = ceil(avg * 2);
        plan->avg_items = avg;
        plan->max_items = max;
        if (type->item) {
            if (build_plan(arena, model, entity, NULL, name, type->item, count, kp_gen_hash(salt, 91), 0,
                           &plan->item, err))
                return -1;
        }
    }
    if (type->kind == KP_T_OBJECT && type->field_count) {
        plan->fields = kp_arena_alloc(arena, type->field_count * sizeof *plan->fields);
        if (!plan->fields) return kp_error_set(err, KP_ERR_NOMEM, NULL, 0, 0, "out of memory while planning sample data");
        plan->field_count = type->field_count;
        for (size_t i = 0; i < type->field_count; i++) {
            const kp_attr *field = type->fields[i];
            if (build_plan(arena, model, entity, field, field->name, &field->type, count, kp_gen_hash(salt, 100 + i),
                           is_address(type), &plan->fields[i], err))
                return -1;
        }
    }
    *out = plan;
    return 0;
}

/* ---- strings ----------------------------------------------------------------------- */

static const char *pick(const kp_gen_words *words, kp_gen_rng *rng)
{
    return words->words[kp_gen_below(rng, words->count)];
}

static void put_lower(kp_gen_buf *out, const char *s)
{
    for (; *s; s++)
        if (*s != ' ') kp_gen_putc(out, (char)tolower((unsigned char)*s));
}

static void put_capitalized(kp_gen_buf *out, const char *s)
{
    kp_gen_putc(out, (char)toupper((unsigned char)s[0]));
    kp_gen_puts(out, s + 1);
}

/* A target length in bytes: size ± 20 %, within max_size. */
static size_t target_length(const kp_gen_plan *plan, kp_gen_rng *rng, double fallback)
{
    double size = plan->size > 0 ? plan->size : fallback;
    double length = size * (0.8 + 0.4 * kp_gen_unit(rng));
    if (plan->max_size > 0 && length > plan->max_size) length = plan->max_size;
    if (length < 1) length = 1;
    return (size_t)llround(length);
}

typedef enum word_style { WORDS_PLAIN, WORDS_TITLE, WORDS_TEXT } word_style;

/* Whole words until about `length` bytes: a word is added while that brings the
 * length closer to the target, so lengths average the target. Never more than
 * max_size bytes (0: no limit), where a too-long single word is cut. TEXT makes
 * sentences (capitalised, ending with '.'), TITLE capitalises every word. */
static void put_words_to_length(kp_gen_buf *out, kp_gen_rng *rng, size_t length, size_t max_size, word_style style)
{
    size_t written = 0;
    int in_sentence = 0, sentence_length = 5 + (int)kp_gen_below(rng, 8);
    for (;;) {
        uint64_t kind = kp_gen_below(rng, 10);
        if (style == WORDS_TITLE && kind >= 8) kind -= 4; /* titles: nouns and adjectives only */
        const char *w = kind < 5 ? pick(&kp_gen_nouns, rng) : kind < 8 ? pick(&kp_gen_adjectives, rng)
                                                                         : pick(&kp_gen_verbs, rng);
        size_t wl = strlen(w), sep = written ? 1 : 0;
        int ends_sentence = style == WORDS_TEXT && in_sentence + 1 >= sentence_length;
        size_t add = sep + wl + (style == WORDS_TEXT ? 1 : 0); /* room for a final '.' */
        if (written && 2 * written + add > 2 * length) break; /* the word would not bring us closer */
        if (max_size && written + add > max_size) {
            if (written) break;
            wl = max_size > 1 && style == WORDS_TEXT ? max_size - 1 : max_size;
        }
        if (sep) kp_gen_putc(out, ' ');
        size_t at = out->len;
        kp_gen_putn(out, w, wl);
        if (!out->failed && (style == WORDS_TITLE || (style == WORDS_TEXT && in_sentence == 0)))
            out->data[at] = (char)toupper((unsigned char)out->data[at]);
        written += sep + wl;
        in_sentence++;
        if (ends_sentence) {
            kp_gen_putc(out, '.');
            written++;
            in_sentence = 0;
            sentence_length = 5 + (int)kp_gen_below(rng, 8);
        }
        if (max_size && written >= max_size) break;
    }
    if (style == WORDS_TEXT && in_sentence) kp_gen_putc(out, '.');
}

/* A few upper-case letters ("NY", "UPS"): `size` of them when declared (1-4), else 2. */
static void put_code(kp_gen_buf *out, kp_gen_rng *rng, double size)
{
    int n = size >= 1 && size <= 4 ? (int)llround(size) : 2;
    for (int i = 0; i < n; i++) kp_gen_putc(out, (char)('A' + kp_gen_below(rng, 26)));
}

static int digits_of(uint64_t v)
{
    int d = 1;
    while (v >= 10) { v /= 10; d++; }
    return d;
}

/* "2026-0042": a year and a number within it, both increasing with n. */
static void put_time_id(kp_gen_buf *out, int64_t n, int64_t count)
{
    int64_t per_year = count > 0 ? (count + 2) / 3 : 1;
    int width = digits_of((uint64_t)per_year);
    if (width < 4) width = 4;
    kp_gen_put_padded(out, (uint64_t)(2024 + n / per_year), 4);
    kp_gen_putc(out, '-');
    kp_gen_put_padded(out, (uint64_t)(n % per_year + 1), width);
}

static void put_string_body(const kp_gen_plan *plan, kp_gen_rng *rng, int64_t n, int is_unique, kp_gen_buf *out)
{
    size_t max_size = plan->max_size > 0 ? (size_t)plan->max_size : 0;
    switch (plan->format) {
    case KP_GEN_FMT_NAME:
        kp_gen_puts(out, pick(&kp_gen_first_names, rng));
        kp_gen_putc(out, ' ');
        kp_gen_puts(out, pick(&kp_gen_last_names, rng));
        break;
    case KP_GEN_FMT_FIRST_NAME: kp_gen_puts(out, pick(&kp_gen_first_names, rng)); break;
    case KP_GEN_FMT_LAST_NAME: kp_gen_puts(out, pick(&kp_gen_last_names, rng)); break;
    case KP_GEN_FMT_EMAIL:
        put_lower(out, pick(&kp_gen_first_names, rng));
        kp_gen_putc(out, '.');
        put_lower(out, pick(&kp_gen_last_names, rng));
        kp_gen_putc(out, '.');
        kp_gen_put_int(out, n);
        kp_gen_putc(out, '@');
        kp_gen_puts(out, pick(&kp_gen_domains, rng));
        return;
    case KP_GEN_FMT_HANDLE:
        put_lower(out, pick(&kp_gen_first_names, rng));
        kp_gen_putc(out, '_');
        kp_gen_puts(out, pick(&kp_gen_nouns, rng));
        kp_gen_put_int(out, n);
        return;
    case KP_GEN_FMT_TITLE:
        if (plan->size > 0) {
            put_words_to_length(out, rng, target_length(plan, rng, 0), max_size, WORDS_TITLE);
        } else {
            put_capitalized(out, pick(&kp_gen_adjectives, rng));
            for (uint64_t i = 0, extra = 1 + kp_gen_below(rng, 3); i < extra; i++) {
                kp_gen_putc(out, ' ');
                put_capitalized(out, pick(&kp_gen_nouns, rng));
            }
        }
        break;
    case KP_GEN_FMT_LABEL:
        if (plan->size > 0) {
            put_words_to_length(out, rng, target_length(plan, rng, 0), max_size, WORDS_TITLE);
        } else {
            put_capitalized(out, pick(&kp_gen_adjectives, rng));
            kp_gen_putc(out, ' ');
            put_capitalized(out, pick(&kp_gen_nouns, rng));
        }
        break;
    case KP_GEN_FMT_TEXT:
        put_words_to_length(out, rng, target_length(plan, rng, 120), max_size, WORDS_TEXT);
        break;
    case KP_GEN_FMT_WORD:
        kp_gen_puts(out, pick(&kp_gen_nouns, rng));
        if (is_unique) { kp_gen_putc(out, '-'); kp_gen_put_int(out, n); }
        return;
    case KP_GEN_FMT_URL:
        kp_gen_puts(out, "https://www.");
        kp_gen_puts(out, pick(&kp_gen_domains, rng));
        kp_gen_putc(out, '/');
        kp_gen_puts(out, pick(&kp_gen_nouns, rng));
        kp_gen_putc(out, '/');
        kp_gen_put_int(out, n);
        return;
    case KP_GEN_FMT_PHONE:
        kp_gen_puts(out, "+1");
        if (is_unique) kp_gen_put_padded(out, 2000000000ULL + (uint64_t)n, 10);
        else kp_gen_put_padded(out, 2000000000ULL + kp_gen_below(rng, 7999999999ULL), 10);
        return;
    case KP_GEN_FMT_SKU:
        kp_gen_putc(out, (char)('A' + kp_gen_below(rng, 26)));
        kp_gen_putc(out, (char)('A' + kp_gen_below(rng, 26)));
        kp_gen_putc(out, '-');
        kp_gen_put_padded(out, (uint64_t)n, 6);
        return;
    case KP_GEN_FMT_COUNTRY: {
        size_t k = kp_gen_below(rng, kp_gen_countries.count);
        kp_gen_puts(out, plan->size > 0 && plan->size <= 3 ? kp_gen_country_codes.words[k] : kp_gen_countries.words[k]);
        break;
    }
    case KP_GEN_FMT_CITY: kp_gen_puts(out, pick(&kp_gen_cities, rng)); break;
    case KP_GEN_FMT_TIME_ID:
        put_time_id(out, n, plan->count);
        return;
    case KP_GEN_FMT_STREET:
        kp_gen_put_int(out, 1 + (int64_t)kp_gen_below(rng, 240));
        kp_gen_putc(out, ' ');
        put_capitalized(out, pick(&kp_gen_nouns, rng));
        kp_gen_putc(out, ' ');
        kp_gen_puts(out, pick(&kp_gen_street_kinds, rng));
        break;
    case KP_GEN_FMT_POSTCODE: {
        int digits = plan->size >= 3 && plan->size <= 10 ? (int)llround(plan->size) : 5;
        for (int i = 0; i < digits; i++) kp_gen_putc(out, (char)('0' + kp_gen_below(rng, 10)));
        break;
    }
    case KP_GEN_FMT_CODE:
        put_code(out, rng, plan->size);
        if (is_unique) { kp_gen_putc(out, '-'); kp_gen_put_int(out, n); }
        return;
    case KP_GEN_FMT_TOKEN: {
        static const char hex[] = "0123456789abcdef";
        size_t length = plan->size >= 1 ? (size_t)llround(plan->size) : 32;
        if (max_size && length > max_size) length = max_size;
        if (is_unique) { /* the record number in hex first: unique */
            char tmp[17];
            int k = 0;
            for (uint64_t v = (uint64_t)n; k == 0 || v; v >>= 4) tmp[k++] = hex[v & 15];
            while (k) { kp_gen_putc(out, tmp[--k]); if (length) length--; }
            if (length) { kp_gen_putc(out, '-'); length--; }
        }
        for (size_t i = 0; i < length; i++) kp_gen_putc(out, hex[kp_gen_below(rng, 16)]);
        return;
    }
    case KP_GEN_FMT_TIMEZONE: kp_gen_puts(out, pick(&kp_gen_timezones, rng)); break;
    case KP_GEN_FMT_LOCALE: kp_gen_puts(out, pick(&kp_gen_locales, rng)); break;
    case KP_GEN_FMT_CURRENCY: kp_gen_puts(out, pick(&kp_gen_currencies, rng)); break;
    case KP_GEN_FMT_NONE:
        if (plan->size > 0) {
            put_words_to_length(out, rng, target_length(plan, rng, 0), max_size, WORDS_PLAIN);
        } else {
            kp_gen_puts(out, pick(&kp_gen_adjectives, rng));
            kp_gen_putc(out, ' ');
            kp_gen_puts(out, pick(&kp_gen_nouns, rng));
        }
        if (is_unique) { kp_gen_putc(out, '-'); kp_gen_put_int(out, n); }
        return;
    }
    if (is_unique) { kp_gen_putc(out, ' '); kp_gen_put_int(out, n); }
}

/* ---- uuids, blobs, numbers ---------------------------------------------------------- */

#define MASK62 ((1ULL << 62) - 1)

/* A bijection of 62-bit words (multiplications by odd numbers and xor-shifts). */
static uint64_t mix62(uint64_t x)
{
    x &= MASK62;
    x = (x * 0xd6e8feb86659fd93ULL) & MASK62;
    x ^= x >> 29;
    x = (x * 0x9e3779b97f4a7c15ULL) & MASK62;
    x ^= x >> 32;
    return x;
}

static void put_hex(kp_gen_buf *out, uint64_t v, int digits)
{
    static const char hex[] = "0123456789abcdef";
    char tmp[16];
    for (int i = digits - 1; i >= 0; i--) { tmp[i] = hex[v & 15]; v >>= 4; }
    kp_gen_putn(out, tmp, (size_t)digits);
}

static void put_uuid_words(kp_gen_buf *out, uint64_t high, uint64_t low)
{
    kp_gen_putc(out, '"');
    put_hex(out, high >> 32, 8);
    kp_gen_putc(out, '-');
    put_hex(out, (high >> 16) & 0xffff, 4);
    kp_gen_putc(out, '-');
    put_hex(out, high & 0xffff, 4);
    kp_gen_putc(out, '-');
    put_hex(out, low >> 48, 4);
    kp_gen_putc(out, '-');
    put_hex(out, low & 0xffffffffffffULL, 12);
    kp_gen_putc(out, '"');
}

/* Version 4; the low 62 bits are a bijection of n, so uuids of distinct records differ. */
static void put_uuid(const kp_gen_plan *plan, kp_gen_rng *rng, int64_t n, kp_gen_buf *out)
{
    uint64_t high = (kp_gen_next(rng) & ~0xf000ULL) | 0x4000ULL;
    uint64_t low = (1ULL << 63) | mix62((uint64_t)n + plan->salt);
    put_uuid_words(out, high, low);
}

/* Version 1, time-ordered by n across the plan's time range; clock sequence and node
 * are a bijection of n (unique), the 100-ns timestamp strictly increases with n. */
static void put_timeuuid(const kp_gen_plan *plan, int64_t n, kp_gen_buf *out)
{
    const int64_t gregorian_offset = 0x01B21DD213814000LL; /* 100-ns ticks 1582-10-15 .. 1970-01-01 */
    int64_t lo_ticks = plan->lo * 10000 + gregorian_offset, span = (plan->hi - plan->lo) * 10000;
    int64_t count = plan->count > 0 ? plan->count : 1;
    /* Past the data set (write patterns draw n far beyond count) the ticks go on in
     * unsigned arithmetic: the 60-bit field wraps instead of a signed overflow. */
    uint64_t ticks;
    if (n < count) ticks = (uint64_t)lo_ticks + (uint64_t)(int64_t)((__int128)n * span / count);
    else ticks = (uint64_t)lo_ticks + (uint64_t)span + ((uint64_t)n - (uint64_t)count + 1) * 10000u;
    uint64_t t = ticks & 0x0fffffffffffffffULL;
    uint64_t high = ((t & 0xffffffffULL) << 32) | (((t >> 32) & 0xffff) << 16) | 0x1000 | ((t >> 48) & 0x0fff);
    uint64_t low = (1ULL << 63) | mix62((uint64_t)n + plan->salt);
    put_uuid_words(out, high, low);
}

static void put_base64(kp_gen_buf *out, const unsigned char *bytes, size_t n)
{
    static const char alphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    kp_gen_putc(out, '"');
    for (size_t i = 0; i < n; i += 3) {
        uint32_t v = (uint32_t)bytes[i] << 16;
        if (i + 1 < n) v |= (uint32_t)bytes[i + 1] << 8;
        if (i + 2 < n) v |= bytes[i + 2];
        char q[4] = {alphabet[v >> 18], alphabet[(v >> 12) & 63], i + 1 < n ? alphabet[(v >> 6) & 63] : '=',
                     i + 2 < n ? alphabet[v & 63] : '='};
        kp_gen_putn(out, q, 4);
    }
    kp_gen_putc(out, '"');
}

static void put_blob(const kp_gen_plan *plan, kp_gen_rng *rng, kp_gen_buf *out)
{
    size_t n = target_length(plan, rng, 16);
    if (n > 1u << 20) n = 1u << 20;
    unsigned char chunk[3 * 256];
    /* write in chunks of whole 3-byte groups so the base64 stays continuous */
    kp_gen_putc(out, '"');
    static const char alphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    size_t done = 0;
    while (done < n) {
        size_t take = n - done < sizeof chunk ? n - done : sizeof chunk;
        for (size_t i = 0; i < take; i++) chunk[i] = (unsigned char)kp_gen_next(rng);
        for (size_t i = 0; i < take; i += 3) {
            uint32_t v = (uint32_t)chunk[i] << 16;
            if (i + 1 < take) v |= (uint32_t)chunk[i + 1] << 8;
            if (i + 2 < take) v |= chunk[i + 2];
            char q[4] = {alphabet[v >> 18], alphabet[(v >> 12) & 63], i + 1 < take ? alphabet[(v >> 6) & 63] : '=',
                         i + 2 < take ? alphabet[v & 63] : '='};
            kp_gen_putn(out, q, 4);
        }
        done += take;
    }
    kp_gen_putc(out, '"');
}

static void put_cents(kp_gen_buf *out, int64_t cents)
{
    uint64_t a = cents < 0 ? (uint64_t)(-(cents + 1)) + 1 : (uint64_t)cents;
    if (cents < 0) kp_gen_putc(out, '-');
    kp_gen_put_padded(out, a / 100, 1);
    kp_gen_putc(out, '.');
    kp_gen_put_padded(out, a % 100, 2);
}

void kp_gen_put_cents(kp_gen_buf *out, int64_t cents) { put_cents(out, cents); }

void kp_gen_put_double(kp_gen_buf *out, double v)
{
    char tmp[64];
    if (!isfinite(v)) v = 0;
    if (fabs(v) < 1e15) {
        snprintf(tmp, sizeof tmp, "%.4f", v);
        size_t n = strlen(tmp);
        while (n > 2 && tmp[n - 1] == '0' && tmp[n - 2] != '.') n--;
        tmp[n] = '\0';
        if (strcmp(tmp, "-0.0") == 0) strcpy(tmp, "0.0");
    } else {
        snprintf(tmp, sizeof tmp, "%.17g", v);
    }
    kp_gen_puts(out, tmp);
}

/* Civil date of a day number (days since 1970-01-01), H. Hinnant's algorithm — the
 * same as core/value.c's; the generator formats without printf for speed, and
 * test_generate checks it against kp_date_format / kp_timestamp_format. */
static void civil_from_days(int64_t z, int64_t *y, unsigned *m, unsigned *d)
{
    z += 719468;
    const int64_t era = (z >= 0 ? z : z - 146096) / 146097;
    const unsigned doe = (unsigned)(z - era * 146097);
    const unsigned yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    const unsigned doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    const unsigned mp = (5 * doy + 2) / 153;
    *d = doy - (153 * mp + 2) / 5 + 1;
    *m = mp < 10 ? mp + 3 : mp - 9;
    *y = (int64_t)yoe + era * 400 + (*m <= 2);
}

static char *put2(char *p, unsigned v) { p[0] = (char)('0' + v / 10); p[1] = (char)('0' + v % 10); return p + 2; }

/* "YYYY-MM-DD" into p (years 0..9999), returns the end. */
static char *format_date(char *p, int64_t days)
{
    int64_t y;
    unsigned m, d;
    civil_from_days(days, &y, &m, &d);
    unsigned yy = y < 0 ? 0 : y > 9999 ? 9999 : (unsigned)y;
    p = put2(p, yy / 100);
    p = put2(p, yy % 100);
    *p++ = '-';
    p = put2(p, m);
    *p++ = '-';
    return put2(p, d);
}

void kp_gen_put_timestamp(kp_gen_buf *out, int64_t ms)
{
    int64_t seconds = ms >= 0 ? ms / 1000 : -((-ms + 999) / 1000);
    unsigned frac = (unsigned)(ms - seconds * 1000);
    int64_t days = seconds >= 0 ? seconds / 86400 : -((-seconds + 86399) / 86400);
    unsigned rem = (unsigned)(seconds - days * 86400);
    char tmp[32], *p = tmp;
    *p++ = '"';
    p = format_date(p, days);
    *p++ = 'T';
    p = put2(p, rem / 3600);
    *p++ = ':';
    p = put2(p, rem / 60 % 60);
    *p++ = ':';
    p = put2(p, rem % 60);
    *p++ = '.';
    *p++ = (char)('0' + frac / 100);
    p = put2(p, frac % 100);
    *p++ = 'Z';
    *p++ = '"';
    kp_gen_putn(out, tmp, (size_t)(p - tmp));
}

void kp_gen_put_date(kp_gen_buf *out, int64_t days)
{
    char tmp[16], *p = tmp;
    *p++ = '"';
    p = format_date(p, days);
    *p++ = '"';
    kp_gen_putn(out, tmp, (size_t)(p - tmp));
}

int64_t kp_gen_uniform(kp_gen_rng *rng, int64_t lo, int64_t hi)
{
    uint64_t span = (uint64_t)hi - (uint64_t)lo + 1;
    if (span == 0) return (int64_t)kp_gen_next(rng);
    return (int64_t)((uint64_t)lo + kp_gen_below(rng, span));
}

/* How many items an array or map gets: mean avg_items, never above max_items. */
static int64_t item_count(const kp_gen_plan *plan, kp_gen_rng *rng)
{
    double avg = plan->avg_items, max = plan->max_items;
    double lo = fmax(0, 2 * avg - max), hi = fmin(max, 2 * avg);
    double x = lo + (hi - lo) * kp_gen_unit(rng);
    int64_t k = (int64_t)floor(x + kp_gen_unit(rng));
    if (k > (int64_t)max) k = (int64_t)max;
    return k < 0 ? 0 : k;
}

static void put_map_key(const kp_gen_plan *plan, uint64_t base, int64_t j, int64_t k, kp_gen_buf *out)
{
    switch (plan->type->map_key) {
    case KP_T_INT:
        kp_gen_putc(out, '"');
        kp_gen_put_int(out, j + 1);
        kp_gen_putc(out, '"');
        break;
    case KP_T_UUID: {
        kp_gen_rng r = kp_gen_rng_at(base, (uint64_t)j);
        uint64_t high = (kp_gen_next(&r) & ~0xf000ULL) | 0x4000ULL;
        put_uuid_words(out, high, (1ULL << 63) | mix62(base + (uint64_t)j));
        break;
    }
    case KP_T_DATE:
        kp_gen_put_date(out, plan->lo + (int64_t)(base % 365) + j);
        break;
    default: {
        /* distinct words while the list lasts, then numbered keys */
        size_t words = kp_gen_nouns.count;
        if (k <= (int64_t)words) {
            size_t step = 7; /* coprime with the list length unless it is a multiple of 7 */
            while (words % step == 0) step++;
            kp_gen_put_quoted(out, kp_gen_nouns.words[(base + (uint64_t)j * step) % words]);
        } else {
            kp_gen_puts(out, "\"key");
            kp_gen_put_int(out, j + 1);
            kp_gen_putc(out, '"');
        }
    }
    }
}

void kp_gen_value(const kp_gen_plan *plan, kp_gen_rng *rng, int64_t n, kp_gen_buf *out)
{
    const kp_type *type = plan->type;
    switch (type->kind) {
    case KP_T_STRING:
        kp_gen_putc(out, '"');
        put_string_body(plan, rng, n, plan->is_unique, out);
        kp_gen_putc(out, '"');
        return;
    case KP_T_INT: case KP_T_COUNTER:
        kp_gen_put_int(out, plan->is_unique ? plan->lo + n : kp_gen_uniform(rng, plan->lo, plan->hi));
        return;
    case KP_T_DECIMAL:
        put_cents(out, plan->is_unique ? plan->lo + n : kp_gen_uniform(rng, plan->lo, plan->hi));
        return;
    case KP_T_DOUBLE:
        if (plan->is_unique) kp_gen_put_double(out, plan->dlo + (double)n);
        else kp_gen_put_double(out, plan->dlo + (plan->dhi - plan->dlo) * kp_gen_unit(rng));
        return;
    case KP_T_BOOL:
        kp_gen_puts(out, kp_gen_below(rng, 2) ? "true" : "false");
        return;
    case KP_T_TIMESTAMP:
        kp_gen_put_timestamp(out, plan->is_unique ? plan->lo + n : kp_gen_uniform(rng, plan->lo, plan->hi));
        return;
    case KP_T_DATE:
        kp_gen_put_date(out, plan->is_unique ? plan->lo + n : kp_gen_uniform(rng, plan->lo, plan->hi));
        return;
    case KP_T_UUID:
        put_uuid(plan, rng, n, out);
        return;
    case KP_T_TIMEUUID:
        put_timeuuid(plan, n, out);
        return;
    case KP_T_ENUM:
        if (type->enum_count) kp_gen_put_quoted(out, type->enum_values[kp_gen_below(rng, type->enum_count)]);
        else kp_gen_puts(out, "\"\"");
        return;
    case KP_T_BLOB:
        put_blob(plan, rng, out);
        return;
    case KP_T_OBJECT: {
        uint64_t base = kp_gen_next(rng);
        int first = 1;
        kp_gen_putc(out, '{');
        for (size_t i = 0; i < plan->field_count; i++) {
            const kp_gen_plan *field = plan->fields[i];
            kp_gen_rng r = kp_gen_rng_at(base, i);
            if (field->presence < 1 && kp_gen_unit_of(kp_gen_hash(base ^ 0x5bd1e995ULL, i)) >= field->presence)
                continue;
            if (!first) kp_gen_putc(out, ',');
            first = 0;
            kp_gen_put_quoted(out, field->attr->name);
            kp_gen_putc(out, ':');
            kp_gen_value(field, &r, n, out);
        }
        kp_gen_putc(out, '}');
        return;
    }
    case KP_T_ARRAY: {
        uint64_t base = kp_gen_next(rng);
        int64_t k = item_count(plan, rng);
        kp_gen_putc(out, '[');
        for (int64_t j = 0; j < k && plan->item; j++) {
            kp_gen_rng r = kp_gen_rng_at(base, (uint64_t)j);
            if (j) kp_gen_putc(out, ',');
            kp_gen_value(plan->item, &r, n, out);
        }
        kp_gen_putc(out, ']');
        return;
    }
    case KP_T_MAP: {
        uint64_t base = kp_gen_next(rng);
        int64_t k = item_count(plan, rng);
        kp_gen_putc(out, '{');
        for (int64_t j = 0; j < k && plan->item; j++) {
            kp_gen_rng r = kp_gen_rng_at(base, (uint64_t)j);
            if (j) kp_gen_putc(out, ',');
            put_map_key(plan, base, j, k, out);
            kp_gen_putc(out, ':');
            kp_gen_value(plan->item, &r, n, out);
        }
        kp_gen_putc(out, '}');
        return;
    }
    default:
        kp_gen_puts(out, "null");
        return;
    }
}

void kp_gen_key_value(const kp_gen_plan *plan, const char *prefix, int width, int64_t n, int64_t local, int is_local,
                      kp_gen_rng *rng, kp_gen_buf *out)
{
    int64_t count = plan->count > 0 ? plan->count : 1;
    switch (plan->type->kind) {
    case KP_T_STRING:
        if (plan->attr && plan->attr->format) {
            kp_gen_putc(out, '"');
            put_string_body(plan, rng, n, 1, out);
            kp_gen_putc(out, '"');
        } else {
            kp_gen_putc(out, '"');
            kp_gen_puts(out, prefix);
            kp_gen_putc(out, '-');
            kp_gen_put_padded(out, (uint64_t)n, width);
            kp_gen_putc(out, '"');
        }
        return;
    case KP_T_INT: case KP_T_COUNTER:
        kp_gen_put_int(out, (is_local ? local : n) + 1);
        return;
    case KP_T_DECIMAL:
        put_cents(out, ((is_local ? local : n) + 1) * 100);
        return;
    case KP_T_DOUBLE:
        kp_gen_put_double(out, (double)((is_local ? local : n) + 1));
        return;
    case KP_T_BOOL:
        kp_gen_puts(out, (is_local ? local : n) % 2 ? "true" : "false");
        return;
    case KP_T_TIMESTAMP: {
        int64_t step = (plan->hi - plan->lo) / count;
        if (step < 1) step = 1;
        int64_t slot = n < count ? (int64_t)kp_gen_perm_apply(&plan->time_order, (uint64_t)n) : n;
        /* a record past the count (one a write inserts) may be far out: the product wraps as
         * two's complement, defined in unsigned arithmetic */
        kp_gen_put_timestamp(out, (int64_t)((uint64_t)plan->lo + (uint64_t)slot * (uint64_t)step));
        return;
    }
    case KP_T_DATE:
        kp_gen_put_date(out, plan->lo + (is_local ? local : n));
        return;
    case KP_T_UUID:
        put_uuid(plan, rng, n, out);
        return;
    case KP_T_TIMEUUID:
        put_timeuuid(plan, n, out);
        return;
    case KP_T_ENUM:
        if (plan->type->enum_count)
            kp_gen_put_quoted(out, plan->type->enum_values[(uint64_t)(is_local ? local : n) % plan->type->enum_count]);
        else
            kp_gen_puts(out, "\"\"");
        return;
    case KP_T_BLOB: {
        unsigned char bytes[8];
        for (int i = 0; i < 8; i++) bytes[i] = (unsigned char)((uint64_t)n >> (56 - 8 * i));
        put_base64(out, bytes, 8);
        return;
    }
    default:
        kp_gen_value(plan, rng, n, out);
        return;
    }
}
