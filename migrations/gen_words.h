/*
 * gen_words.h — the small word lists the sample-data generator draws from.
 *
 * Invariant: every word is printable ASCII without quotes or backslashes, so a value
 * built from them never needs JSON escaping; and every list is non-empty.
 */
#ifndef KP_GEN_WORDS_H
#define KP_GEN_WORDS_H

#include <stddef.h>

typedef struct kp_gen_words {
    const char *const *words;
    size_t count;
} kp_gen_words;

extern const kp_gen_words kp_gen_first_names;  /* "Ada", "Noor", ... */
extern const kp_gen_words kp_gen_last_names;   /* "Okafor", "Lindqvist", ... */
extern const kp_gen_words kp_gen_nouns;        /* lower-case common nouns */
extern const kp_gen_words kp_gen_adjectives;   /* lower-case adjectives */
extern const kp_gen_words kp_gen_verbs;        /* lower-case verbs, third person */
extern const kp_gen_words kp_gen_cities;       /* city names */
extern const kp_gen_words kp_gen_countries;    /* country names */
extern const kp_gen_words kp_gen_country_codes;/* ISO 3166 alpha-2, same order as kp_gen_countries */
extern const kp_gen_words kp_gen_domains;      /* reserved example domains only */
extern const kp_gen_words kp_gen_timezones;    /* IANA zone names */
extern const kp_gen_words kp_gen_locales;      /* BCP 47 tags */
extern const kp_gen_words kp_gen_currencies;   /* ISO 4217 codes */
extern const kp_gen_words kp_gen_street_kinds; /* "Street", "Road", ... */

#endif
