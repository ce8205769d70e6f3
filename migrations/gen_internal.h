/*
 * gen_internal.h — what the sample-data generator's files share (migrations/gen_*.c
 * and generate.c); nothing outside migrations/ includes it.
 *
 * The pieces: hashing and draws (a record's values are drawn from a generator seeded
 * by hash(seed, entity, attribute, record number), never from shared state); text
 * buffers; bijective permutations of [0, n); fan-outs (how many children each
 * parent has, children of a parent being a contiguous range of positions); distinct
 * picks (the k-th of a parent's N:M partners); links (how a holder's foreign key
 * finds its referenced record); value plans (how one attribute's values look).
 * Invariant: every function here is deterministic in its arguments and the seed;
 * caches only remember results, they never change them.
 */
#ifndef KP_GEN_INTERNAL_H
#define KP_GEN_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "core/arena.h"
#include "core/error.h"
#include "core/model.h"
#include "migrations/generate.h"

/* ---- hashing and draws -------------------------------------------------------- */

/* splitmix64's finaliser: a bijection of 64-bit words with good avalanche. */
static inline uint64_t kp_gen_mix(uint64_t z)
{
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

/* A hash of two words; for a fixed `a` it is a bijection of `b`. */
static inline uint64_t kp_gen_hash(uint64_t a, uint64_t b)
{
    return kp_gen_mix(kp_gen_mix(a) ^ (b * 0x9e3779b97f4a7c15ULL + 0x632be59bd9b4e019ULL));
}

typedef struct kp_gen_rng { uint64_t state; } kp_gen_rng;

static inline kp_gen_rng kp_gen_rng_at(uint64_t salt, uint64_t n)
{
    kp_gen_rng r = {kp_gen_hash(salt, n)};
    return r;
}
static inline uint64_t kp_gen_next(kp_gen_rng *r)
{
    r->state += 0x9e3779b97f4a7c15ULL;
    return kp_gen_mix(r->state);
}
/* Uniform in [0, 1). */
static inline double kp_gen_unit(kp_gen_rng *r) { return (double)(kp_gen_next(r) >> 11) * 0x1.0p-53; }
/* Uniform in [0, n) (0 when n is 0). */
static inline uint64_t kp_gen_below(kp_gen_rng *r, uint64_t n)
{
    return (uint64_t)(((unsigned __int128)kp_gen_next(r) * n) >> 64);
}
/* Uniform in [0, 1) from one hash value. */
static inline double kp_gen_unit_of(uint64_t h) { return (double)(h >> 11) * 0x1.0p-53; }

/* A rank in [0, n) drawn from a (continuous) Zipf law of exponent s at u in [0, 1):
 * rank 0 is the most likely; s = 0 is uniform. */
int64_t kp_gen_zipf_rank(double u, int64_t n, double s);

/* ---- text buffers -------------------------------------------------------------- */

/* A growable byte buffer. Allocation failure sets `failed` and later appends do
 * nothing; the caller checks `failed` once per record. */
typedef struct kp_gen_buf {
    char *data;
    size_t len, cap;
    int failed;
} kp_gen_buf;

void kp_gen_buf_grow(kp_gen_buf *b, size_t extra);
static inline void kp_gen_putc(kp_gen_buf *b, char c)
{
    if (b->len + 2 > b->cap) kp_gen_buf_grow(b, 2);
    if (!b->failed) b->data[b->len++] = c;
}
void kp_gen_putn(kp_gen_buf *b, const char *s, size_t n);
void kp_gen_puts(kp_gen_buf *b, const char *s);
void kp_gen_put_int(kp_gen_buf *b, int64_t v);
/* v in decimal, left-padded with zeros to at least width digits. */
void kp_gen_put_padded(kp_gen_buf *b, uint64_t v, int width);
/* s as a JSON string, quoted and escaped. */
void kp_gen_put_quoted(kp_gen_buf *b, const char *s);
/* A NUL terminator after the text (not counted in len). */
void kp_gen_terminate(kp_gen_buf *b);
/* Canonical numbers and times: cents as a decimal with two places, a double, a
 * quoted ISO timestamp from milliseconds since 1970, a quoted date from days. */
void kp_gen_put_cents(kp_gen_buf *b, int64_t cents);
void kp_gen_put_double(kp_gen_buf *b, double v);
void kp_gen_put_timestamp(kp_gen_buf *b, int64_t ms);
void kp_gen_put_date(kp_gen_buf *b, int64_t days);

/* ---- permutations -------------------------------------------------------------- */

/* A pseudo-random bijection of [0, n): a 4-round Feistel network on the smallest even
 * number of bits that holds n, with cycle walking. */
typedef struct kp_gen_perm {
    uint64_t n;
    int half_bits;
    uint64_t half_mask;
    uint64_t keys[4];
} kp_gen_perm;

void kp_gen_perm_init(kp_gen_perm *perm, uint64_t n, uint64_t salt);
uint64_t kp_gen_perm_apply(const kp_gen_perm *perm, uint64_t x);
uint64_t kp_gen_perm_invert(const kp_gen_perm *perm, uint64_t y);

/* ---- fan-out ----------------------------------------------------------------------- */

/* `total` children spread over `parents` parents without a per-parent vector: a
 * binary tree over the parents (in popularity-rank order) splits each node's children
 * between its halves — by the Zipf–Mandelbrot mass of each half when skewed, or
 * binomially around the average (every parent keeping about half the average at
 * least) when not — clamped so no leaf exceeds the cap. A parent's children are the
 * positions [start, start + count); start, count and the parent of a position take
 * O(log parents) steps. Memory: a 128 KiB memo of the top splits, 32 KiB of exact
 * head sums, whatever the number of parents.
 * With skew s the heaviest parent (rank 0) holds exactly `max` children (capped by
 * half the children, and raised to ceil(total / parents) when that is more); without
 * skew no parent exceeds max (same raise). Counts always sum to total exactly. */
typedef struct kp_gen_fanout {
    int64_t parents, total;
    int64_t max;                /* no parent has more; with skew the heaviest has exactly this */
    double skew;
    int is_skewed;
    int64_t top;                /* skewed: the children of rank 0 */
    int64_t base;               /* unskewed: children every parent has at least */
    int64_t cap;                /* per-leaf cap inside the tree (max - base, or top) */
    double t;                   /* skewed: log(1 + q) of the Zipf–Mandelbrot law */
    double *head;               /* skewed: exact prefix masses of ranks 1..head_count */
    int64_t head_count;
    int64_t *memo;              /* left-half counts of the first tree nodes (heap order), -1 unknown */
    size_t memo_size;
    uint64_t salt;
    kp_gen_perm rank;           /* parent -> popularity rank (skewed) */
    int64_t cached_rank, cached_start, cached_count; /* the leaf found last */
} kp_gen_fanout;

int kp_gen_fanout_build(kp_gen_fanout *f, int64_t parents, int64_t total, double max, double skew, uint64_t salt,
                        kp_error *err);
void kp_gen_fanout_free(kp_gen_fanout *f);
int64_t kp_gen_fanout_count(kp_gen_fanout *f, int64_t p);
int64_t kp_gen_fanout_start(kp_gen_fanout *f, int64_t p);
/* The parent owning a position in [0, total). */
int64_t kp_gen_fanout_parent(kp_gen_fanout *f, int64_t position);
/* A parent drawn by popularity (the same skew) from hash value h; -1 without parents. */
int64_t kp_gen_fanout_draw(const kp_gen_fanout *f, uint64_t h);

/* ---- distinct picks ---------------------------------------------------------------- */

/* For N:M: the k-th partner of parent p among `universe` records. For one p, picks
 * k = 0, 1, ... are distinct (and never p itself when is_self). Without skew they are
 * an arithmetic progression through a permutation; with skew, popular records are
 * picked more often (sequential draws with rejection, cached for the last parent). */
typedef struct kp_gen_picks {
    int64_t universe;
    double skew;
    int is_self;
    uint64_t salt;
    kp_gen_perm order;          /* popularity rank / progression slot -> record */
    uint64_t stride, stride_inverse;
    int64_t cached_parent;      /* skewed: the parent whose picks are in `list` */
    int64_t *list;
    size_t list_len, list_cap;
    uint64_t *set;              /* open addressing of record + 1 */
    size_t set_mask, set_used;
    kp_gen_rng rng;
} kp_gen_picks;

void kp_gen_picks_init(kp_gen_picks *picks, int64_t universe, double skew, int is_self, uint64_t salt);
void kp_gen_picks_free(kp_gen_picks *picks);
/* How many distinct partners a parent can have. */
static inline int64_t kp_gen_picks_capacity(const kp_gen_picks *picks)
{
    return picks->universe - (picks->is_self ? 1 : 0);
}
/* The k-th pick of parent p, or -1 when k >= capacity (or on allocation failure). */
int64_t kp_gen_picks_get(kp_gen_picks *picks, int64_t p, int64_t k);

/* ---- value plans ---------------------------------------------------------------- */

typedef enum kp_gen_format {
    KP_GEN_FMT_NONE, KP_GEN_FMT_NAME, KP_GEN_FMT_FIRST_NAME, KP_GEN_FMT_LAST_NAME, KP_GEN_FMT_EMAIL,
    KP_GEN_FMT_HANDLE, KP_GEN_FMT_TITLE, KP_GEN_FMT_TEXT, KP_GEN_FMT_WORD, KP_GEN_FMT_URL, KP_GEN_FMT_PHONE,
    KP_GEN_FMT_SKU, KP_GEN_FMT_COUNTRY, KP_GEN_FMT_CITY, KP_GEN_FMT_TIME_ID,
    /* inferred from attribute names only: */
    KP_GEN_FMT_LABEL,    /* the "name" of a thing, not a person ("Amber Falcon") */
    KP_GEN_FMT_STREET,   /* "12 Cedar Road" */
    KP_GEN_FMT_POSTCODE, /* digits */
    KP_GEN_FMT_CODE,     /* a few upper-case letters ("NY", "UPS") */
    KP_GEN_FMT_TOKEN,    /* lower-case hex (hashes, tokens) */
    KP_GEN_FMT_TIMEZONE, KP_GEN_FMT_LOCALE, KP_GEN_FMT_CURRENCY
} kp_gen_format;

/* How the values of one type look: ranges resolved from the model (or defaults),
 * the string format (declared, or inferred from the attribute's name). */
typedef struct kp_gen_plan kp_gen_plan;
struct kp_gen_plan {
    const kp_type *type;
    const kp_attr *attr;        /* NULL for array items and map values */
    kp_gen_format format;
    int64_t lo, hi;             /* int, counter; decimal in cents; timestamp in ms; date in days */
    double dlo, dhi;            /* double */
    double size, max_size;      /* bytes for strings and blobs; 0 = the format's default */
    double presence;            /* share of values present (optional attributes and fields) */
    int is_unique;
    int64_t count;              /* records of the entity (time ids, time-ordered uuids) */
    kp_gen_perm time_order;     /* record -> slot in time, for timestamp keys */
    uint64_t salt;
    kp_gen_plan **fields;       /* object */
    size_t field_count;
    kp_gen_plan *item;          /* array items, map values */
    double avg_items, max_items;
};

/* Builds the plan of an attribute (or of a nested type, array items or map values,
 * when attr is NULL); `name` is the attribute's name, from which formats and ranges
 * are inferred when the model declares none. */
int kp_gen_plan_build(kp_arena *arena, const kp_model *model, const kp_entity *entity, const kp_attr *attr,
                      const char *name, const kp_type *type, int64_t count, uint64_t salt, kp_gen_plan **out,
                      kp_error *err);
/* Parses a canonical decimal into cents (rounding a third place toward +inf when
 * round_up, else toward -inf). Returns -1 when the text is not a decimal. */
int kp_gen_parse_cents(const char *text, size_t len, int round_up, int64_t *cents);
/* Uniform in [lo, hi]. */
int64_t kp_gen_uniform(kp_gen_rng *rng, int64_t lo, int64_t hi);
/* Appends a value drawn from rng. n is the record number: unique values, time ids
 * and timeuuids are functions of n, distinct for distinct n. */
void kp_gen_value(const kp_gen_plan *plan, kp_gen_rng *rng, int64_t n, kp_gen_buf *out);
/* Appends the key value of record n: distinct for distinct n (or, for a local key,
 * for distinct `local` numbers within one parent). prefix/width shape string ids. */
void kp_gen_key_value(const kp_gen_plan *plan, const char *prefix, int width, int64_t n, int64_t local,
                      int is_local, kp_gen_rng *rng, kp_gen_buf *out);

/* ---- the generator's model of the data --------------------------------------------- */

typedef struct kp_gen_entity kp_gen_entity;
typedef struct kp_gen_link kp_gen_link;

typedef enum kp_gen_link_kind {
    KP_GEN_LINK_FANOUT,   /* 1:N: children spread over parents by a fan-out */
    KP_GEN_LINK_PICKS,    /* the second side of a pair key (N:M join): distinct per primary parent */
    KP_GEN_LINK_PAIR,     /* 1:1: a partial bijection between the two sides */
    KP_GEN_LINK_COMPOSED  /* a reference implied by two others (item -> order -> user) */
} kp_gen_link_kind;

/* How the holder's attributes `holder_attrs` find the referenced record whose key
 * attributes `ref_attrs` they equal. */
struct kp_gen_link {
    kp_gen_link_kind kind;
    const char *name;           /* the relation, for messages */
    kp_gen_entity *holder, *ref;
    kp_attr **holder_attrs, **ref_attrs;
    size_t attr_count;
    uint64_t salt;
    /* FANOUT */
    kp_gen_fanout fanout;
    int is_permuted;            /* not the holder's primary order: positions are permuted */
    kp_gen_perm position;       /* holder record -> position */
    /* PICKS */
    kp_gen_link *base;          /* the holder's primary link */
    kp_gen_picks picks;
    /* PAIR */
    int64_t pairs;              /* pair j joins holder holder_order(j) and ref ref_order(j) */
    kp_gen_perm ref_order, holder_order;
    /* COMPOSED: ref = second(first(holder)) */
    kp_gen_link *first, *second;
};

/* Parent (referenced record) of holder record i, -1 when it has none. Records past
 * the holder's count are fresh ones: their parent is drawn, never missing unless
 * the relation has no free partner. */
int64_t kp_gen_link_parent(kp_gen_link *link, int64_t i);
/* For PAIR: the holder record of referenced record p, -1 when none. */
int64_t kp_gen_link_partner(kp_gen_link *link, int64_t p);
/* For the holder's primary FANOUT link: record i's number among its parent's
 * children (fresh records: after all of them). */
int64_t kp_gen_link_local(kp_gen_link *link, int64_t i);

typedef enum kp_gen_role {
    KP_GEN_PLAIN,       /* drawn from its plan */
    KP_GEN_KEY,         /* a key attribute not set by a link: distinct per record */
    KP_GEN_LINKED,      /* a foreign key: the referenced record's key attribute */
    KP_GEN_ARRAY_LINK,  /* an N:M held as an array of the target's keys */
    KP_GEN_COPY,        /* copy_of: the source attribute of the record reached */
    KP_GEN_DERIVED      /* an aggregate over related records */
} kp_gen_role;

typedef enum kp_gen_store { KP_GEN_STORE_INT, KP_GEN_STORE_DOUBLE } kp_gen_store;

/* One hop of a derived path, walked backwards from a target record to its source. */
typedef struct kp_gen_hop {
    kp_gen_link *link;
    int to_parent;              /* 1: source = link parent of target; 0: source = partner */
} kp_gen_hop;

/* One step of a derived path walked forwards, from a source record to the records it
 * reaches, when that can be enumerated without a pass over the targets. */
typedef enum kp_gen_step_kind {
    KP_GEN_STEP_CHILDREN,  /* 1:N by a fan-out: the positions of the parent */
    KP_GEN_STEP_PARTNER,   /* 1:1 to the holder side: the paired holder record */
    KP_GEN_STEP_PARENT,    /* 1:1 to the referenced side: the referenced record */
    KP_GEN_STEP_THROUGH,   /* N:M through a join, from its `from` side: the picks */
    KP_GEN_STEP_ARRAY      /* N:M as an array, from its `from` side: the picks */
} kp_gen_step_kind;

typedef struct kp_gen_step {
    kp_gen_step_kind kind;
    kp_gen_link *link;          /* CHILDREN, PARTNER, PARENT; THROUGH: the join's `from` link */
    kp_gen_link *picks_link;    /* THROUGH: the join's `to` link */
    struct kp_gen_attr *array;  /* ARRAY */
} kp_gen_step;

typedef struct kp_gen_derived {
    const kp_derived *derived;
    kp_gen_step *steps;         /* forwards from the source; NULL when not enumerable */
    size_t step_count;
    kp_gen_buf value, tmp;      /* scratch text of the aggregated records' values */
    int state;                  /* 0 not computed, 1 being computed, 2 ready */
    kp_gen_store store;         /* how `values` hold the aggregate */
    kp_type_kind of_kind;       /* kind of the aggregated attribute (count: int) */
    int64_t *values;            /* without steps: one per source record (doubles stored bitwise),
                                   filled by one pass over the targets */
    /* how the path is walked */
    kp_gen_entity *target;      /* the entity whose records are aggregated */
    kp_gen_hop *hops;           /* target -> source, in that order (1:N and 1:1 paths) */
    size_t hop_count;
    kp_gen_link *through_from, *through_to; /* N:M through a join entity */
    struct kp_gen_attr *array;  /* N:M as an array */
    int is_inverse;             /* the N:M is walked from its `to` side */
} kp_gen_derived;

typedef struct kp_gen_attr {
    kp_attr *attr;
    const char *json_name;      /* "\"name\":", ready to append */
    size_t json_name_len;
    kp_gen_role role;
    uint64_t salt;
    kp_gen_plan *plan;
    kp_gen_link *link;          /* LINKED */
    size_t link_pos;
    int is_local_key;           /* KEY: unique within the primary parent only */
    kp_gen_entity *array_target;/* ARRAY_LINK */
    kp_gen_fanout array_fanout;
    kp_gen_picks array_picks;
    int has_array_layout;
    kp_gen_hop *copy_hops;      /* COPY: to-one hops from this entity */
    size_t copy_hop_count;
    struct kp_gen_attr *copy_source;
    kp_gen_derived derived;     /* DERIVED */
    /* PLAIN timestamps and dates of one record follow each other: this one is
     * chain_prev's value + shift + a gap drawn in [0, gap] (clamped to its range when
     * clamp), so a record's deliveredAt is after its shippedAt. */
    struct kp_gen_attr *chain_prev;
    int64_t chain_shift, chain_gap;
    int chain_clamp;
} kp_gen_attr;

struct kp_gen_entity {
    kp_entity *entity;
    int64_t count;
    uint64_t salt;
    kp_gen_attr *attrs;         /* entity->attr_count, in attribute order */
    kp_gen_link *primary;       /* the FANOUT link that orders this entity's records, or NULL */
    char prefix[64];            /* string ids: "<prefix>-<zero-padded number>" */
    int id_width;
};

#endif
