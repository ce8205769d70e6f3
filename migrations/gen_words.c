/*
 * gen_words.c — word lists for generated names, titles, text, places.
 *
 * Kept deliberately small (a few dozen entries each): variety comes from combining
 * them with record numbers, not from the lists. Invariant: ASCII only, no character
 * that JSON would escape; e-mail and URL domains are the reserved example domains.
 */
#include "migrations/gen_words.h"

#define KP_WORDS(name, ...)                                                  \
    static const char *const name##_list[] = {__VA_ARGS__};                 \
    const kp_gen_words name = {name##_list, sizeof name##_list / sizeof name##_list[0]}

KP_WORDS(kp_gen_first_names, "Ada", "Noor", "Kenji", "Amara", "Lucas", "Mei", "Omar", "Ingrid", "Tomas",
         "Priya", "Diego", "Hana", "Felix", "Zara", "Mateo", "Yara", "Jonas", "Aiko", "Leila", "Viktor",
         "Sofia", "Kwame", "Elena", "Ravi", "Chloe", "Idris", "Mila", "Tariq", "Freya", "Bruno", "Nadia",
         "Emil", "Lucia", "Arjun", "Greta", "Sami", "Ines", "Hugo", "Anika", "Malik", "Clara", "Dario",
         "Esme", "Farid", "Ilse", "Jun", "Katya", "Lars", "Maren", "Nico");

KP_WORDS(kp_gen_last_names, "Okafor", "Lindqvist", "Tanaka", "Haddad", "Moreau", "Chen", "Novak", "Silva",
         "Kowalski", "Mensah", "Ivanova", "Rossi", "Nakamura", "Fischer", "Costa", "Abebe", "Jensen",
         "Petrov", "Sato", "Garcia", "Oyelaran", "Dubois", "Kim", "Larsen", "Mendes", "Horvat", "Wagner",
         "Park", "Nguyen", "Schmidt", "Ahmed", "Varga", "Quinn", "Rahman", "Bauer", "Lopez", "Ito", "Berg",
         "Keller", "Zhou");

KP_WORDS(kp_gen_nouns, "river", "lantern", "harbor", "meadow", "falcon", "orbit", "canyon", "signal",
         "garden", "beacon", "summit", "forest", "pixel", "anchor", "comet", "bridge", "island", "compass",
         "ember", "glacier", "harvest", "journey", "kernel", "ledger", "marble", "nebula", "orchard",
         "pepper", "quartz", "rocket", "sparrow", "timber", "valley", "willow", "voyage", "atlas", "basket",
         "cedar", "delta", "engine", "feather", "galaxy", "hammer", "iris", "jungle", "kite", "lotus",
         "mosaic", "needle", "ocean", "prism", "quill", "ribbon", "saddle", "tundra", "umbrella", "violet",
         "wave", "yarn", "zephyr", "cloud", "stone", "thread", "window", "circle", "market", "studio",
         "planet", "shadow", "spring");

KP_WORDS(kp_gen_adjectives, "quiet", "amber", "bright", "swift", "silver", "gentle", "bold", "hidden",
         "golden", "lucky", "rapid", "calm", "crimson", "distant", "eager", "fresh", "grand", "humble",
         "ivory", "jolly", "keen", "lively", "misty", "noble", "olive", "proud", "rustic", "sunny", "tidy",
         "urban", "vivid", "wild", "young", "zesty", "brave", "clever", "dusty", "early", "frosty", "green");

KP_WORDS(kp_gen_verbs, "builds", "carries", "draws", "finds", "gathers", "holds", "joins", "keeps",
         "lifts", "makes", "opens", "paints", "reads", "shapes", "tracks", "visits", "writes", "follows",
         "turns", "brings");

KP_WORDS(kp_gen_cities, "Lyon", "Osaka", "Nairobi", "Porto", "Seoul", "Austin", "Krakow", "Lagos",
         "Bergen", "Quito", "Hanoi", "Dublin", "Cusco", "Tallinn", "Accra", "Perth", "Turin", "Busan",
         "Leeds", "Valencia", "Malmo", "Ghent", "Izmir", "Pune", "Recife", "Sapporo", "Tunis", "Zagreb",
         "Bilbao", "Halifax");

KP_WORDS(kp_gen_countries, "France", "Japan", "Kenya", "Portugal", "Korea", "United States", "Poland",
         "Nigeria", "Norway", "Ecuador", "Vietnam", "Ireland", "Peru", "Estonia", "Ghana", "Australia",
         "Italy", "Spain", "Sweden", "Belgium", "Turkey", "India", "Brazil", "Tunisia", "Croatia", "Canada",
         "Germany", "Chile", "Egypt", "Finland");

KP_WORDS(kp_gen_domains, "example.com", "example.org", "example.net");

KP_WORDS(kp_gen_country_codes, "FR", "JP", "KE", "PT", "KR", "US", "PL", "NG", "NO", "EC", "VN", "IE", "PE", "EE",
         "GH", "AU", "IT", "ES", "SE", "BE", "TR", "IN", "BR", "TN", "HR", "CA", "DE", "CL", "EG", "FI");

KP_WORDS(kp_gen_timezones, "Europe/Paris", "Asia/Tokyo", "Africa/Nairobi", "Europe/Lisbon", "Asia/Seoul",
         "America/Chicago", "Europe/Warsaw", "Africa/Lagos", "Europe/Oslo", "America/Lima", "Asia/Kolkata",
         "Australia/Perth", "America/Toronto", "Europe/Berlin", "UTC");

KP_WORDS(kp_gen_locales, "en-US", "fr-FR", "ja-JP", "de-DE", "es-ES", "pt-BR", "ko-KR", "it-IT", "sv-SE",
         "pl-PL", "en-GB", "nl-BE");

KP_WORDS(kp_gen_currencies, "USD", "EUR", "JPY", "GBP", "KRW", "BRL", "INR", "CAD", "AUD", "CHF");

KP_WORDS(kp_gen_street_kinds, "Street", "Road", "Avenue", "Lane", "Way", "Place");
