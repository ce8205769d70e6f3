/*
 * credentials.c — where a DynamoDB client's endpoint, region and credentials come
 * from: the --target URL, the AWS environment variables, and the shared AWS files
 * (~/.aws/credentials and ~/.aws/config, INI).
 *
 * It follows the AWS CLI's precedence for the parts keyplan supports (static keys,
 * session tokens, named profiles) and says plainly what it does not run (SSO,
 * assume-role, credential_process), with the command that exports credentials
 * instead. Loopback endpoints get placeholder credentials, because dynalite wants a
 * signature header but never checks it.
 * Invariant: no secret is ever copied into a message or a *_source string, and
 * every secret this file allocates is wiped before it is freed.
 */
#include "backends/dynamodb/client_internal.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <curl/curl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "core/json.h"

enum { KP_DDB_MAX_AWS_FILE = 1 << 20 };

static const char *env_value(const char *name)
{
    const char *value = getenv(name);
    return value && value[0] ? value : NULL;
}

static char *dup_or_null(const char *text)
{
    return text ? strdup(text) : NULL;
}

static char *format_string(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static char *format_string(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0) return NULL;
    char *out = malloc((size_t)n + 1);
    if (!out) return NULL;
    va_start(ap, fmt);
    vsnprintf(out, (size_t)n + 1, fmt, ap);
    va_end(ap);
    return out;
}

static void wipe_free(char *secret)
{
    if (!secret) return;
    volatile char *p = secret;
    while (*p) *p++ = 0;
    free(secret);
}

kp_curl_api kp_curl;
static const char *const curl_names[] = {KP_CURL_FUNCTIONS(KP_DYNLIB_NAME)};
static const char *const curl_sonames[] = {"libcurl.so.4", "libcurl-gnutls.so.4", "libcurl.so", NULL};
static kp_dynlib curl_lib = {curl_sonames, "DynamoDB commands", "libcurl4", NULL, 0, ""};

int kp_curl_load(kp_error *err) { return KP_DYNLIB_LOAD(curl_lib, kp_curl, curl_names, err); }

void kp_ddb_settings_clear(kp_ddb_settings *s)
{
    if (!s) return;
    free(s->endpoint);
    free(s->endpoint_source);
    free(s->region);
    free(s->region_source);
    free(s->access_key_id);
    wipe_free(s->secret_access_key);
    wipe_free(s->session_token);
    free(s->credential_source);
    memset(s, 0, sizeof *s);
}

/* ---- endpoints ------------------------------------------------------------------------ */

static int host_is_loopback(const char *host)
{
    char bare[256];
    size_t len = strlen(host);
    if (len >= sizeof bare) return 0;
    if (host[0] == '[' && len >= 2 && host[len - 1] == ']') {
        memcpy(bare, host + 1, len - 2);
        bare[len - 2] = '\0';
    } else {
        memcpy(bare, host, len + 1);
    }
    char *zone = strchr(bare, '%');
    if (zone) *zone = '\0';
    len = strlen(bare);
    if (len && bare[len - 1] == '.') bare[--len] = '\0';   /* "localhost." */
    if (strcasecmp(bare, "localhost") == 0) return 1;
    if (len > 10 && strcasecmp(bare + len - 10, ".localhost") == 0) return 1;
    unsigned char addr[16];
    if (inet_pton(AF_INET, bare, addr) == 1) return addr[0] == 127;
    if (inet_pton(AF_INET6, bare, addr) == 1) {
        static const unsigned char loopback6[16] = { [15] = 1 };
        static const unsigned char mapped4[12] = { [10] = 0xff, [11] = 0xff };
        if (memcmp(addr, loopback6, 16) == 0) return 1;
        return memcmp(addr, mapped4, 12) == 0 && addr[12] == 127;
    }
    return 0;
}

int kp_ddb_check_endpoint(const char *url, const char *source, int *is_loopback, int *is_https, kp_error *err)
{
    /* The URL is quoted only when it carries no user information (a password). */
    if (kp_curl_load(err)) return -1;
    CURLU *u = CU(curl_url)();
    if (!u) return kp_error_set(err, KP_ERR_NOMEM, NULL, 0, 0, "out of memory parsing the DynamoDB endpoint");
    char *scheme = NULL, *host = NULL, *user = NULL, *password = NULL, *query = NULL, *fragment = NULL;
    int rc = -1;
    if (CU(curl_url_set)(u, CURLUPART_URL, url, 0) != CURLUE_OK) {
        kp_error_set(err, KP_ERR_USAGE, NULL, 0, 0,
                     "the DynamoDB endpoint from %s is not a URL; give one like http://127.0.0.1:18000 or "
                     "https://dynamodb.eu-west-1.amazonaws.com", source);
        goto done;
    }
    CU(curl_url_get)(u, CURLUPART_USER, &user, 0);
    CU(curl_url_get)(u, CURLUPART_PASSWORD, &password, 0);
    if (user || password) {
        kp_error_set(err, KP_ERR_USAGE, NULL, 0, 0,
                     "the DynamoDB endpoint from %s carries user information (user:password@); remove it "
                     "and give the credentials in AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY or a profile",
                     source);
        goto done;
    }
    CU(curl_url_get)(u, CURLUPART_SCHEME, &scheme, 0);
    CU(curl_url_get)(u, CURLUPART_HOST, &host, 0);
    CU(curl_url_get)(u, CURLUPART_QUERY, &query, 0);
    CU(curl_url_get)(u, CURLUPART_FRAGMENT, &fragment, 0);
    if (!scheme || (strcasecmp(scheme, "http") != 0 && strcasecmp(scheme, "https") != 0)) {
        kp_error_set(err, KP_ERR_USAGE, NULL, 0, 0,
                     "the DynamoDB endpoint '%s' from %s must start with http:// or https://", url, source);
        goto done;
    }
    if (!host || !host[0]) {
        kp_error_set(err, KP_ERR_USAGE, NULL, 0, 0, "the DynamoDB endpoint '%s' from %s names no host", url, source);
        goto done;
    }
    if (query || fragment) {
        kp_error_set(err, KP_ERR_USAGE, NULL, 0, 0,
                     "the DynamoDB endpoint '%s' from %s has a query or fragment; give only scheme, host and port",
                     url, source);
        goto done;
    }
    *is_https = strcasecmp(scheme, "https") == 0;
    *is_loopback = host_is_loopback(host);
    rc = 0;
done:
    CU(curl_free)(scheme);
    CU(curl_free)(host);
    CU(curl_free)(user);
    CU(curl_free)(password);
    CU(curl_free)(query);
    CU(curl_free)(fragment);
    CU(curl_url_cleanup)(u);
    return rc;
}

int kp_ddb_is_loopback_url(const char *url)
{
    int is_loopback = 0, is_https = 0;
    kp_error err;
    if (!url || kp_ddb_check_endpoint(url, "a test", &is_loopback, &is_https, &err) != 0) return -1;
    return is_loopback;
}

/* ---- the shared AWS files (INI) --------------------------------------------------- */

static char *trim(char *s)
{
    while (*s == ' ' || *s == '\t') s++;
    size_t n = strlen(s);
    while (n && (s[n - 1] == ' ' || s[n - 1] == '\t' || s[n - 1] == '\r' || s[n - 1] == '\n')) s[--n] = '\0';
    return s;
}

/* A profile's key = value pairs, read from one file. */
typedef struct aws_profile {
    int found;                  /* the section exists */
    char *access_key_id, *secret_access_key, *session_token, *region;
    int has_other_source;       /* sso_*, role_arn, credential_process, web_identity_token_file */
} aws_profile;

static void aws_profile_clear(aws_profile *p)
{
    free(p->access_key_id);
    wipe_free(p->secret_access_key);
    wipe_free(p->session_token);
    free(p->region);
    memset(p, 0, sizeof *p);
}

/* Does an INI section header name this profile? The credentials file names sections
 * after the profile; the config file says "profile NAME" (and plain "default"). */
static int section_matches(const char *section, const char *profile, int is_config)
{
    if (!is_config) return strcmp(section, profile) == 0;
    if (strncmp(section, "profile", 7) == 0 && (section[7] == ' ' || section[7] == '\t')) {
        const char *name = section + 8;
        while (*name == ' ' || *name == '\t') name++;
        return strcmp(name, profile) == 0;
    }
    return strcmp(profile, "default") == 0 && strcmp(section, "default") == 0;
}

static void set_value(char **slot, const char *value)
{
    if (*slot) wipe_free(*slot);
    *slot = strdup(value);
}

/* Reads the profile from the file at path. A missing file is an empty profile. */
static int aws_profile_read(const char *path, const char *profile, int is_config, aws_profile *out)
{
    memset(out, 0, sizeof *out);
    if (!path) return 0;
    char *text = NULL;
    size_t len = 0;
    kp_error ignored;
    if (kp_file_read(path, KP_DDB_MAX_AWS_FILE, &text, &len, &ignored) != 0) return 0;
    int in_section = 0;
    char *save = NULL;
    for (char *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        /* Indented lines continue a nested setting ("dynamodb =\n  endpoint_url = ..."):
         * they never belong to the profile itself. */
        if (line[0] == ' ' || line[0] == '\t') continue;
        char *s = trim(line);
        if (!*s || *s == '#' || *s == ';') continue;
        if (*s == '[') {
            char *end = strchr(s, ']');
            if (!end) { in_section = 0; continue; }
            *end = '\0';
            in_section = section_matches(trim(s + 1), profile, is_config);
            if (in_section) out->found = 1;
            continue;
        }
        if (!in_section) continue;
        char *eq = strchr(s, '=');
        if (!eq) continue;
        *eq = '\0';
        char *key = trim(s), *value = trim(eq + 1);
        for (char *k = key; *k; k++) *k = (char)tolower((unsigned char)*k);
        if (!*value) continue;
        if (strcmp(key, "aws_access_key_id") == 0) set_value(&out->access_key_id, value);
        else if (strcmp(key, "aws_secret_access_key") == 0) set_value(&out->secret_access_key, value);
        else if (strcmp(key, "aws_session_token") == 0) set_value(&out->session_token, value);
        else if (strcmp(key, "region") == 0) set_value(&out->region, value);
        else if (strncmp(key, "sso_", 4) == 0 || strcmp(key, "role_arn") == 0 ||
                 strcmp(key, "credential_process") == 0 || strcmp(key, "web_identity_token_file") == 0)
            out->has_other_source = 1;
    }
    /* the file may hold secrets: wipe our copy */
    memset(text, 0, len);
    free(text);
    return 0;
}

static char *aws_file_path(const char *variable, const char *name)
{
    const char *explicit_path = env_value(variable);
    if (explicit_path) {
        if (explicit_path[0] == '~' && explicit_path[1] == '/' && env_value("HOME"))
            return format_string("%s%s", env_value("HOME"), explicit_path + 1);
        return strdup(explicit_path);
    }
    const char *home = env_value("HOME");
    return home ? format_string("%s/.aws/%s", home, name) : NULL;
}

/* ---- resolution ----------------------------------------------------------------------- */

static int region_is_valid(const char *region)
{
    size_t n = strlen(region);
    if (n == 0 || n > 32) return 0;
    for (size_t i = 0; i < n; i++)
        if (!islower((unsigned char)region[i]) && !isdigit((unsigned char)region[i]) && region[i] != '-') return 0;
    return 1;
}

static int env_is_true(const char *name)
{
    const char *v = env_value(name);
    return v && strcasecmp(v, "true") == 0;
}

static int out_of_memory(kp_ddb_settings *out, kp_error *err)
{
    kp_ddb_settings_clear(out);
    return kp_error_set(err, KP_ERR_NOMEM, NULL, 0, 0, "out of memory resolving the DynamoDB target");
}

int kp_ddb_settings_resolve(const kp_ddb_config *cfg, kp_ddb_settings *out, kp_error *err)
{
    static const kp_ddb_config no_config;
    if (!cfg) cfg = &no_config;
    memset(out, 0, sizeof *out);
    kp_error_clear(err);

    const char *profile_name = cfg->profile && cfg->profile[0] ? cfg->profile : env_value("AWS_PROFILE");
    int profile_is_explicit = profile_name != NULL;
    if (!profile_name) profile_name = "default";
    const int profile_from_caller = cfg->profile && cfg->profile[0];

    char *credentials_path = aws_file_path("AWS_SHARED_CREDENTIALS_FILE", "credentials");
    char *config_path = aws_file_path("AWS_CONFIG_FILE", "config");
    aws_profile from_credentials, from_config;
    aws_profile_read(credentials_path, profile_name, 0, &from_credentials);
    aws_profile_read(config_path, profile_name, 1, &from_config);
    int rc = -1;

    /* region */
    const char *region = NULL;
    if (cfg->region && cfg->region[0]) {
        region = cfg->region;
        out->region_source = strdup("the caller");
    } else if ((region = env_value("AWS_REGION"))) {
        out->region_source = strdup("AWS_REGION");
    } else if ((region = env_value("AWS_DEFAULT_REGION"))) {
        out->region_source = strdup("AWS_DEFAULT_REGION");
    } else if ((region = from_config.region)) {
        out->region_source = format_string("profile '%s' in %s", profile_name, config_path);
    } else {
        region = "us-east-1";
        out->region_source = strdup("the default");
    }
    if (!region_is_valid(region)) {
        kp_error_set(err, KP_ERR_USAGE, NULL, 0, 0,
                     "the AWS region '%.64s' from %s is not a region name (like eu-west-1)", region,
                     out->region_source ? out->region_source : "the environment");
        goto fail;
    }
    out->region = strdup(region);
    if (!out->region || !out->region_source) goto nomem;

    /* endpoint */
    const char *endpoint = NULL;
    const char *endpoint_source = NULL;
    if (cfg->endpoint && cfg->endpoint[0]) {
        endpoint = cfg->endpoint;
        endpoint_source = "--target";
    } else if (!env_is_true("AWS_IGNORE_CONFIGURED_ENDPOINT_URLS")) {
        if ((endpoint = env_value("AWS_ENDPOINT_URL_DYNAMODB"))) endpoint_source = "AWS_ENDPOINT_URL_DYNAMODB";
        else if ((endpoint = env_value("AWS_ENDPOINT_URL"))) endpoint_source = "AWS_ENDPOINT_URL";
    }
    if (endpoint) {
        out->endpoint = strdup(endpoint);
        out->endpoint_source = strdup(endpoint_source);
    } else {
        out->endpoint = format_string("https://dynamodb.%s.amazonaws.com%s", region,
                                      strncmp(region, "cn-", 3) == 0 ? ".cn" : "");
        out->endpoint_source = format_string("the default for region %s", region);
    }
    if (!out->endpoint || !out->endpoint_source) goto nomem;
    if (kp_ddb_check_endpoint(out->endpoint, out->endpoint_source, &out->is_loopback, &out->is_https, err) != 0)
        goto fail;
    if (!out->is_https && !out->is_loopback && !cfg->is_insecure) {
        kp_error_set(err, KP_ERR_USAGE, NULL, 0, 0,
                     "the DynamoDB endpoint '%s' from %s is plain http to a host that is not loopback: requests "
                     "and data would travel unencrypted; use https, or pass --insecure to allow it",
                     out->endpoint, out->endpoint_source);
        goto fail;
    }

    /* credentials */
    const char *env_id = env_value("AWS_ACCESS_KEY_ID");
    const char *env_secret = env_value("AWS_SECRET_ACCESS_KEY");
    if (!profile_from_caller && (env_id || env_secret)) {
        if (!env_id || !env_secret) {
            kp_error_set(err, KP_ERR_USAGE, NULL, 0, 0,
                         "%s is set but %s is not; set both (and AWS_SESSION_TOKEN for temporary credentials), "
                         "or unset %s to use a profile",
                         env_id ? "AWS_ACCESS_KEY_ID" : "AWS_SECRET_ACCESS_KEY",
                         env_id ? "AWS_SECRET_ACCESS_KEY" : "AWS_ACCESS_KEY_ID",
                         env_id ? "AWS_ACCESS_KEY_ID" : "AWS_SECRET_ACCESS_KEY");
            goto fail;
        }
        out->access_key_id = strdup(env_id);
        out->secret_access_key = strdup(env_secret);
        out->session_token = dup_or_null(env_value("AWS_SESSION_TOKEN"));
        out->credential_source = strdup("the environment (AWS_ACCESS_KEY_ID)");
        if (!out->access_key_id || !out->secret_access_key || !out->credential_source ||
            (env_value("AWS_SESSION_TOKEN") && !out->session_token))
            goto nomem;
        rc = 0;
        goto done;
    }
    aws_profile *sources[2] = { &from_credentials, &from_config };
    const char *paths[2] = { credentials_path, config_path };
    for (int i = 0; i < 2; i++) {
        aws_profile *p = sources[i];
        if (!p->access_key_id && !p->secret_access_key) continue;
        if (!p->access_key_id || !p->secret_access_key) {
            kp_error_set(err, KP_ERR_USAGE, paths[i], 0, 0,
                         "profile '%s' sets %s but not %s; add the missing key to the profile",
                         profile_name, p->access_key_id ? "aws_access_key_id" : "aws_secret_access_key",
                         p->access_key_id ? "aws_secret_access_key" : "aws_access_key_id");
            goto fail;
        }
        out->access_key_id = strdup(p->access_key_id);
        out->secret_access_key = strdup(p->secret_access_key);
        out->session_token = dup_or_null(p->session_token);
        out->credential_source = format_string("profile '%s' in %s", profile_name, paths[i]);
        if (!out->access_key_id || !out->secret_access_key || !out->credential_source ||
            (p->session_token && !out->session_token))
            goto nomem;
        rc = 0;
        goto done;
    }
    if (out->is_loopback) {
        out->access_key_id = strdup("keyplan");
        out->secret_access_key = strdup("keyplan");
        out->credential_source = strdup("placeholder credentials (loopback endpoint)");
        if (!out->access_key_id || !out->secret_access_key || !out->credential_source) goto nomem;
        rc = 0;
        goto done;
    }
    if (from_credentials.has_other_source || from_config.has_other_source) {
        kp_error_set(err, KP_ERR_USAGE, NULL, 0, 0,
                     "profile '%s' gets its credentials through SSO, a role or credential_process, which keyplan "
                     "does not run; export temporary credentials first: "
                     "eval \"$(aws configure export-credentials --profile %s --format env)\"",
                     profile_name, profile_name);
        goto fail;
    }
    kp_error_set(err, KP_ERR_USAGE, NULL, 0, 0,
                 "no AWS credentials for %s: AWS_ACCESS_KEY_ID is not set and %sprofile '%s' has no keys in %s "
                 "or %s; set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (plus AWS_SESSION_TOKEN for temporary "
                 "credentials), or AWS_PROFILE to a profile with aws_access_key_id and aws_secret_access_key",
                 out->endpoint, profile_is_explicit ? "" : "the ", profile_name,
                 credentials_path ? credentials_path : "~/.aws/credentials (HOME is not set)",
                 config_path ? config_path : "~/.aws/config");
    goto fail;

nomem:
    rc = out_of_memory(out, err);
    goto done;
fail:
    kp_ddb_settings_clear(out);
    rc = -1;
done:
    aws_profile_clear(&from_credentials);
    aws_profile_clear(&from_config);
    free(credentials_path);
    free(config_path);
    return rc;
}
