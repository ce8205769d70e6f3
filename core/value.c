/*
 * value.c — checking, formatting and comparing canonical values.
 *
 * Invariant: every check accepts exactly the canonical form documented in
 * docs/model.md, so that two equal values always have equal text (what verify's diff
 * relies on) — except decimals, whose trailing zeros are kept as written and compared
 * numerically.
 */
#include "core/value.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>

const char *kp_value_example(kp_type_kind kind)
{
    switch (kind) {
    case KP_T_STRING: return "\"text\"";
    case KP_T_INT: case KP_T_COUNTER: return "42";
    case KP_T_DECIMAL: return "19.99";
    case KP_T_DOUBLE: return "0.25";
    case KP_T_BOOL: return "true";
    case KP_T_TIMESTAMP: return "\"2026-04-01T09:30:00.000Z\"";
    case KP_T_DATE: return "\"2026-04-01\"";
    case KP_T_UUID: return "\"7f1c0b7e-2a4d-4c1e-9b3f-5d6e7f809a1b\"";
    case KP_T_TIMEUUID: return "\"5c1e7a90-1d2b-11ef-8c3a-0242ac120002\"";
    case KP_T_ENUM: return "one of its values";
    case KP_T_OBJECT: return "{\"field\": ...}";
    case KP_T_ARRAY: return "[...]";
    case KP_T_MAP: return "{\"key\": ...}";
    case KP_T_BLOB: return "\"AAEC\" (base64)";
    default: return "a value";
    }
}

int kp_int_parse(const char *text, size_t len, int64_t *out)
{
    size_t i = 0;
    int negative = 0;
    if (len == 0) return -1;
    if (text[0] == '-') { negative = 1; i = 1; }
    if (i >= len) return -1;
    if (text[i] == '0' && len - i > 1) return -1;
    uint64_t v = 0;
    for (; i < len; i++) {
        if (text[i] < '0' || text[i] > '9') return -1;
        uint64_t d = (uint64_t)(text[i] - '0');
        if (v > (UINT64_MAX - d) / 10) return -1;
        v = v * 10 + d;
    }
    if (negative) {
        if (v > (uint64_t)INT64_MAX + 1) return -1;
        if (negative && v == 0) return -1; /* "-0" is not canonical */
        if (out) *out = v == (uint64_t)INT64_MAX + 1 ? INT64_MIN : -(int64_t)v;
    } else {
        if (v > (uint64_t)INT64_MAX) return -1;
        if (out) *out = (int64_t)v;
    }
    return 0;
}

int kp_decimal_check(const char *text, size_t len)
{
    size_t i = 0;
    if (len && text[0] == '-') i = 1;
    if (i >= len || !isdigit((unsigned char)text[i])) return -1;
    if (text[i] == '0' && i + 1 < len && isdigit((unsigned char)text[i + 1])) return -1;
    while (i < len && isdigit((unsigned char)text[i])) i++;
    if (i < len && text[i] == '.') {
        i++;
        if (i >= len || !isdigit((unsigned char)text[i])) return -1;
        while (i < len && isdigit((unsigned char)text[i])) i++;
    }
    return i == len ? 0 : -1;
}

/* Splits a decimal text into sign, integer digits (leading zeros dropped) and
 * fraction digits (trailing zeros dropped). */
static void split_decimal(const char *t, size_t n, int *negative, const char **ip, size_t *il, const char **fp,
                          size_t *fl)
{
    size_t i = 0;
    *negative = n && t[0] == '-';
    if (*negative) i = 1;
    while (i + 1 < n && t[i] == '0' && t[i + 1] != '.') i++;
    *ip = t + i;
    size_t start = i;
    while (i < n && t[i] != '.') i++;
    *il = i - start;
    if (*il == 1 && (*ip)[0] == '0') *il = 0;
    if (i < n) {
        *fp = t + i + 1;
        *fl = n - i - 1;
        while (*fl && (*fp)[*fl - 1] == '0') (*fl)--;
    } else {
        *fp = t + n;
        *fl = 0;
    }
}

int kp_decimal_compare(const char *a, size_t alen, const char *b, size_t blen)
{
    int an, bn;
    const char *ai, *af, *bi, *bf;
    size_t ail, afl, bil, bfl;
    split_decimal(a, alen, &an, &ai, &ail, &af, &afl);
    split_decimal(b, blen, &bn, &bi, &bil, &bf, &bfl);
    int a_zero = ail == 0 && afl == 0, b_zero = bil == 0 && bfl == 0;
    if (a_zero) an = 0;
    if (b_zero) bn = 0;
    if (an != bn) return an ? -1 : 1;
    int sign = an ? -1 : 1;
    if (ail != bil) return ail < bil ? -sign : sign;
    int c = memcmp(ai, bi, ail);
    if (c) return c < 0 ? -sign : sign;
    size_t common = afl < bfl ? afl : bfl;
    c = memcmp(af, bf, common);
    if (c) return c < 0 ? -sign : sign;
    if (afl != bfl) return afl < bfl ? -sign : sign;
    return 0;
}

static int digits(const char *s, int n, int *out)
{
    int v = 0;
    for (int i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9') return -1;
        v = v * 10 + (s[i] - '0');
    }
    *out = v;
    return 0;
}

static int64_t days_from_civil(int64_t y, unsigned m, unsigned d)
{
    y -= m <= 2;
    const int64_t era = (y >= 0 ? y : y - 399) / 400;
    const unsigned yoe = (unsigned)(y - era * 400);
    const unsigned doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
    const unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + (int64_t)doe - 719468;
}

static void civil_from_days(int64_t z, int *y, unsigned *m, unsigned *d)
{
    z += 719468;
    const int64_t era = (z >= 0 ? z : z - 146096) / 146097;
    const unsigned doe = (unsigned)(z - era * 146097);
    const unsigned yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    const int64_t yy = (int64_t)yoe + era * 400;
    const unsigned doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    const unsigned mp = (5 * doy + 2) / 153;
    *d = doy - (153 * mp + 2) / 5 + 1;
    *m = mp < 10 ? mp + 3 : mp - 9;
    *y = (int)(yy + (*m <= 2));
}

static int days_in_month(int y, int m)
{
    static const int days[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    if (m == 2 && ((y % 4 == 0 && y % 100 != 0) || y % 400 == 0)) return 29;
    return days[m - 1];
}

int kp_date_parse(const char *t, int32_t *out)
{
    int y, m, d;
    if (strlen(t) != 10 || t[4] != '-' || t[7] != '-') return -1;
    if (digits(t, 4, &y) || digits(t + 5, 2, &m) || digits(t + 8, 2, &d)) return -1;
    if (m < 1 || m > 12 || d < 1 || d > days_in_month(y, m)) return -1;
    if (out) *out = (int32_t)days_from_civil(y, (unsigned)m, (unsigned)d);
    return 0;
}

void kp_date_format(int32_t days, char out[16])
{
    int y;
    unsigned m, d;
    civil_from_days(days, &y, &m, &d);
    snprintf(out, 16, "%04d-%02u-%02u", y % 100000, m % 100, d % 100);
}

int kp_timestamp_parse(const char *t, int64_t *ms)
{
    /* YYYY-MM-DDTHH:MM:SS.sssZ */
    int h, mi, s, frac;
    int32_t days;
    if (strlen(t) != 24 || t[10] != 'T' || t[13] != ':' || t[16] != ':' || t[19] != '.' || t[23] != 'Z')
        return -1;
    char date[11];
    memcpy(date, t, 10);
    date[10] = '\0';
    if (kp_date_parse(date, &days)) return -1;
    if (digits(t + 11, 2, &h) || digits(t + 14, 2, &mi) || digits(t + 17, 2, &s) || digits(t + 20, 3, &frac))
        return -1;
    if (h > 23 || mi > 59 || s > 59) return -1;
    if (ms) *ms = ((int64_t)days * 86400 + h * 3600 + mi * 60 + s) * 1000 + frac;
    return 0;
}

void kp_timestamp_format(int64_t ms, char out[32])
{
    /* floor division written so that no step overflows, whatever ms a server sends */
    int64_t seconds = ms / 1000;
    int frac = (int)(ms % 1000);
    if (frac < 0) { seconds--; frac += 1000; }
    int64_t days = seconds / 86400;
    int rem = (int)(seconds % 86400);
    if (rem < 0) { days--; rem += 86400; }
    char date[16];
    kp_date_format((int32_t)days, date);
    snprintf(out, 32, "%.11sT%02d:%02d:%02d.%03dZ", date, (rem / 3600) % 24, rem / 60 % 60, rem % 60, frac % 1000);
}

int kp_uuid_check(const char *t)
{
    if (strlen(t) != 36) return -1;
    for (int i = 0; i < 36; i++) {
        if (i == 8 || i == 13 || i == 18 || i == 23) { if (t[i] != '-') return -1; }
        else if (!((t[i] >= '0' && t[i] <= '9') || (t[i] >= 'a' && t[i] <= 'f'))) return -1;
    }
    return 0;
}

int kp_timeuuid_check(const char *t)
{
    return kp_uuid_check(t) == 0 && t[14] == '1' ? 0 : -1;
}

int kp_base64_check(const char *t)
{
    size_t n = strlen(t);
    if (n % 4) return -1;
    for (size_t i = 0; i < n; i++) {
        char c = t[i];
        int ok = isalnum((unsigned char)c) || c == '+' || c == '/';
        if (c == '=') ok = i >= n - 2 && (i == n - 1 || t[n - 1] == '=');
        if (!ok) return -1;
    }
    return 0;
}

const char *kp_number_text(const cJSON *node, const kp_json_doc *doc, char *buf, size_t size, size_t *len)
{
    const char *text = NULL;
    size_t n = 0;
    if (doc) text = kp_json_number_text(doc, node, &n);
    if (!text && cJSON_IsRaw(node) && node->valuestring) { text = node->valuestring; n = strlen(text); }
    if (!text) {
        double v = node->valuedouble;
        if (v == (double)(int64_t)v && v > -9007199254740992.0 && v < 9007199254740992.0)
            snprintf(buf, size, "%lld", (long long)v);
        else
            snprintf(buf, size, "%.17g", v);
        text = buf;
        n = strlen(buf);
    }
    if (len) *len = n;
    return text;
}

static int fail(const cJSON *node, const cJSON **bad, char *why, size_t size, const char *fmt, const char *arg)
{
    if (bad) *bad = node;
    snprintf(why, size, fmt, arg);
    return -1;
}

static int is_number_node(const cJSON *v) { return cJSON_IsNumber(v) || cJSON_IsRaw(v); }

int kp_value_check(const kp_type *type, const cJSON *value, const kp_json_doc *doc, const cJSON **bad,
                   char *why, size_t size)
{
    char buf[64];
    size_t n;
    const char *text;
    const char *example = kp_value_example(type->kind);
    switch (type->kind) {
    case KP_T_STRING:
        if (!cJSON_IsString(value)) return fail(value, bad, why, size, "expected a string like %s", example);
        return 0;
    case KP_T_INT: case KP_T_COUNTER:
        if (!is_number_node(value)) return fail(value, bad, why, size, "expected an integer like %s", example);
        text = kp_number_text(value, doc, buf, sizeof buf, &n);
        if (kp_int_parse(text, n, NULL))
            return fail(value, bad, why, size, "expected a 64-bit integer written with digits only, like %s", example);
        return 0;
    case KP_T_DECIMAL:
        if (!is_number_node(value)) return fail(value, bad, why, size, "expected a decimal number like %s", example);
        text = kp_number_text(value, doc, buf, sizeof buf, &n);
        if (kp_decimal_check(text, n))
            return fail(value, bad, why, size, "expected a decimal written without an exponent, like %s", example);
        return 0;
    case KP_T_DOUBLE:
        if (!is_number_node(value)) return fail(value, bad, why, size, "expected a number like %s", example);
        return 0;
    case KP_T_BOOL:
        if (!cJSON_IsBool(value)) return fail(value, bad, why, size, "expected true or false%s", "");
        return 0;
    case KP_T_TIMESTAMP:
        if (!cJSON_IsString(value) || kp_timestamp_parse(value->valuestring, NULL))
            return fail(value, bad, why, size, "expected a UTC timestamp with milliseconds like %s", example);
        return 0;
    case KP_T_DATE:
        if (!cJSON_IsString(value) || kp_date_parse(value->valuestring, NULL))
            return fail(value, bad, why, size, "expected a date like %s", example);
        return 0;
    case KP_T_UUID:
        if (!cJSON_IsString(value) || kp_uuid_check(value->valuestring))
            return fail(value, bad, why, size, "expected a lower-case uuid like %s", example);
        return 0;
    case KP_T_TIMEUUID:
        if (!cJSON_IsString(value) || kp_timeuuid_check(value->valuestring))
            return fail(value, bad, why, size, "expected a lower-case version-1 uuid like %s", example);
        return 0;
    case KP_T_BLOB:
        if (!cJSON_IsString(value) || kp_base64_check(value->valuestring))
            return fail(value, bad, why, size, "expected base64 text like %s", example);
        return 0;
    case KP_T_ENUM:
        if (cJSON_IsString(value))
            for (size_t i = 0; i < type->enum_count; i++)
                if (strcmp(type->enum_values[i], value->valuestring) == 0) return 0;
        {
            char list[256] = "";
            for (size_t i = 0; i < type->enum_count && strlen(list) < 200; i++) {
                strcat(list, i ? ", " : "");
                strncat(list, type->enum_values[i], 40);
            }
            return fail(value, bad, why, size, "expected one of the enum's values: %s", list);
        }
    case KP_T_OBJECT:
        if (!cJSON_IsObject(value)) return fail(value, bad, why, size, "expected an object%s", "");
        for (const cJSON *member = value->child; member; member = member->next) {
            const kp_attr *field = NULL;
            for (size_t i = 0; i < type->field_count; i++)
                if (strcmp(type->fields[i]->name, member->string) == 0) field = type->fields[i];
            if (!field) return fail(member, bad, why, size, "unknown field \"%s\" for this object", member->string);
            if (cJSON_IsNull(member) && field->is_optional) continue;
            if (kp_value_check(&field->type, member, doc, bad, why, size)) return -1;
        }
        for (size_t i = 0; i < type->field_count; i++)
            if (!type->fields[i]->is_optional && !cJSON_GetObjectItemCaseSensitive(value, type->fields[i]->name))
                return fail(value, bad, why, size, "missing the required field \"%s\"", type->fields[i]->name);
        return 0;
    case KP_T_ARRAY:
        if (!cJSON_IsArray(value)) return fail(value, bad, why, size, "expected an array%s", "");
        for (const cJSON *item = value->child; item; item = item->next)
            if (kp_value_check(type->item, item, doc, bad, why, size)) return -1;
        return 0;
    case KP_T_MAP:
        if (!cJSON_IsObject(value)) return fail(value, bad, why, size, "expected an object (a map)%s", "");
        for (const cJSON *member = value->child; member; member = member->next) {
            int key_ok = 1;
            if (type->map_key == KP_T_INT) key_ok = kp_int_parse(member->string, strlen(member->string), NULL) == 0;
            else if (type->map_key == KP_T_UUID) key_ok = kp_uuid_check(member->string) == 0;
            else if (type->map_key == KP_T_DATE) key_ok = kp_date_parse(member->string, NULL) == 0;
            if (!key_ok) return fail(member, bad, why, size, "map key \"%s\" is not of the map's key type", member->string);
            if (kp_value_check(type->item, member, doc, bad, why, size)) return -1;
        }
        return 0;
    default:
        return fail(value, bad, why, size, "unsupported type%s", "");
    }
}
