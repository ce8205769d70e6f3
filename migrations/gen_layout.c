/*
 * gen_layout.c — who references whom in generated data: fan-out vectors, distinct
 * N:M picks, 1:1 pairings and the links built from them (plus the small buffer and
 * permutation helpers they need).
 *
 * A 1:N relation is a fan-out vector: parent p owns the child positions
 * [start[p], start[p+1]); a child's position is its record number (for the entity's
 * primary relation, so a parent's children are consecutive records) or a fixed
 * permutation of it (other relations). The parent of a child is found by binary
 * search, and a parent's children can be enumerated by position, so nothing but the
 * vector (8 bytes per parent) is ever held.
 * Invariant: the counts sum to the child count exactly, none exceeds the cap, and a
 * skewed vector's heaviest parent holds exactly the cap it was built for — these are
 * what the tests of referential integrity and fan-out check.
 */
#include "migrations/gen_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- draws ------------------------------------------------------------------------ */

int64_t kp_gen_zipf_rank(double u, int64_t n, double s)
{
    if (n <= 1) return 0;
    double x;
    if (s <= 0) {
        x = 1.0 + u * (double)n;
    } else if (fabs(s - 1.0) < 1e-9) {
        x = exp(u * log((double)n + 1.0));
    } else {
        double a = 1.0 - s;
        x = pow(1.0 + u * (pow((double)n + 1.0, a) - 1.0), 1.0 / a);
    }
    int64_t r = (int64_t)x - 1;
    if (r < 0) r = 0;
    if (r >= n) r = n - 1;
    return r;
}

/* ---- buffers ------------------------------------------------------------------------ */

void kp_gen_buf_grow(kp_gen_buf *b, size_t extra)
{
    if (b->failed) return;
    size_t need = b->len + extra + 1;
    if (need <= b->cap) return;
    size_t cap = b->cap ? b->cap : 256;
    while (cap < need) cap *= 2;
    char *data = realloc(b->data, cap);
    if (!data) { b->failed = 1; return; }
    b->data = data;
    b->cap = cap;
}

void kp_gen_putn(kp_gen_buf *b, const char *s, size_t n)
{
    if (b->len + n + 1 > b->cap) kp_gen_buf_grow(b, n + 1);
    if (b->failed) return;
    memcpy(b->data + b->len, s, n);
    b->len += n;
}

void kp_gen_puts(kp_gen_buf *b, const char *s) { kp_gen_putn(b, s, strlen(s)); }

void kp_gen_put_padded(kp_gen_buf *b, uint64_t v, int width)
{
    char tmp[24];
    int n = 0;
    do { tmp[n++] = (char)('0' + v % 10); v /= 10; } while (v);
    while (n < width && n < (int)sizeof tmp) tmp[n++] = '0';
    if (b->len + (size_t)n + 1 > b->cap) kp_gen_buf_grow(b, (size_t)n + 1);
    if (b->failed) return;
    while (n) b->data[b->len++] = tmp[--n];
}

void kp_gen_put_int(kp_gen_buf *b, int64_t v)
{
    if (v < 0) {
        kp_gen_putc(b, '-');
        kp_gen_put_padded(b, v == INT64_MIN ? (uint64_t)INT64_MAX + 1 : (uint64_t)-v, 1);
    } else {
        kp_gen_put_padded(b, (uint64_t)v, 1);
    }
}

void kp_gen_put_quoted(kp_gen_buf *b, const char *s)
{
    static const char hex[] = "0123456789abcdef";
    kp_gen_putc(b, '"');
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p == '"' || *p == '\\') {
            kp_gen_putc(b, '\\');
            kp_gen_putc(b, (char)*p);
        } else if (*p < 0x20) {
            char esc[6] = {'\\', 'u', '0', '0', hex[*p >> 4], hex[*p & 15]};
            kp_gen_putn(b, esc, 6);
        } else {
            kp_gen_putc(b, (char)*p);
        }
    }
    kp_gen_putc(b, '"');
}

void kp_gen_terminate(kp_gen_buf *b)
{
    if (b->len + 1 > b->cap) kp_gen_buf_grow(b, 1);
    if (!b->failed) b->data[b->len] = '\0';
}

/* ---- permutations ------------------------------------------------------------------- */

void kp_gen_perm_init(kp_gen_perm *perm, uint64_t n, uint64_t salt)
{
    int bits = 2;
    while (bits < 62 && (1ULL << bits) < n) bits += 2;
    perm->n = n;
    perm->half_bits = bits / 2;
    perm->half_mask = (1ULL << perm->half_bits) - 1;
    for (int i = 0; i < 4; i++) perm->keys[i] = kp_gen_hash(salt, (uint64_t)i + 1);
}

static uint64_t feistel(const kp_gen_perm *perm, uint64_t x)
{
    uint64_t l = x >> perm->half_bits, r = x & perm->half_mask;
    for (int i = 0; i < 4; i++) {
        uint64_t t = l ^ (kp_gen_mix(r ^ perm->keys[i]) & perm->half_mask);
        l = r;
        r = t;
    }
    return (l << perm->half_bits) | r;
}

static uint64_t feistel_inverse(const kp_gen_perm *perm, uint64_t y)
{
    uint64_t l = y >> perm->half_bits, r = y & perm->half_mask;
    for (int i = 3; i >= 0; i--) {
        uint64_t t = r ^ (kp_gen_mix(l ^ perm->keys[i]) & perm->half_mask);
        r = l;
        l = t;
    }
    return (l << perm->half_bits) | r;
}

uint64_t kp_gen_perm_apply(const kp_gen_perm *perm, uint64_t x)
{
    if (perm->n <= 1) return x;
    do x = feistel(perm, x); while (x >= perm->n);
    return x;
}

uint64_t kp_gen_perm_invert(const kp_gen_perm *perm, uint64_t y)
{
    if (perm->n <= 1) return y;
    do y = feistel_inverse(perm, y); while (y >= perm->n);
    return y;
}

/* ---- fan-out vectors ----------------------------------------------------------------- */

/* Turns weights (held as doubles in c[0..n)) into integer counts in place: counts
 * proportional to the weights, summing to exactly `total`, none above cap (the excess
 * of clamped counts goes to parents with room, first come first served). */
static void apportion(int64_t *c, int64_t n, int64_t total, int64_t cap, double weight_sum)
{
    double acc = 0;
    int64_t previous = 0, excess = 0;
    for (int64_t i = 0; i < n; i++) {
        double w;
        memcpy(&w, &c[i], sizeof w);
        acc += w;
        int64_t cumulative = i == n - 1 ? total : llround((double)total * (acc / weight_sum));
        if (cumulative > total) cumulative = total;
        if (cumulative < previous) cumulative = previous;
        int64_t count = cumulative - previous;
        previous = cumulative;
        if (count > cap) { excess += count - cap; count = cap; }
        c[i] = count;
    }
    for (int64_t i = 0; i < n && excess > 0; i++) {
        int64_t room = cap - c[i];
        if (room <= 0) continue;
        int64_t add = room < excess ? room : excess;
        c[i] += add;
        excess -= add;
    }
}

static void store_weight(int64_t *slot, double w) { memcpy(slot, &w, sizeof w); }

/* Σ_{r=1..n} ((1+q)/(r+q))^s with 1+q = e^t: the first terms exactly, the tail by
 * its integral (Euler–Maclaurin midpoint rule), accurate to far better than one child. */
static double zipf_mass(double t, int64_t n, double s)
{
    const int64_t exact = n < 4096 ? n : 4096;
    double one_plus_q = exp(t), sum = 0;
    for (int64_t r = 1; r <= exact; r++) sum += exp(s * (t - log((double)(r - 1) + one_plus_q)));
    if (n > exact) {
        double a = (double)exact - 0.5 + one_plus_q; /* K + 0.5 + q */
        double l = log1p((double)(n - exact) / a);
        double head = exp(s * (t - log(a))) * a;
        double integral = fabs(1.0 - s) < 1e-9 ? l : expm1((1.0 - s) * l) / (1.0 - s);
        sum += head * integral;
    }
    return sum;
}

/* Counts by popularity rank (c[0] heaviest), as doubles-then-integers in c. */
static void zipf_counts(int64_t *c, int64_t n, int64_t total, int64_t top, double s)
{
    double ratio = (double)total / (double)top; /* the mass the law must have, in units of the top */
    if (ratio >= (double)n * (1 - 1e-12)) {
        for (int64_t r = 0; r < n; r++) store_weight(&c[r], 1.0);
        apportion(c, n, total, top, (double)n);
        return;
    }
    double lo = -40, hi = 60;
    for (int i = 0; i < 100; i++) {
        double mid = 0.5 * (lo + hi);
        if (zipf_mass(mid, n, s) < ratio) lo = mid;
        else hi = mid;
    }
    double t = 0.5 * (lo + hi), one_plus_q = exp(t), rest = 0;
    for (int64_t r = 1; r < n; r++) {
        double w = exp(s * (t - log((double)r + one_plus_q)));
        store_weight(&c[r], w);
        rest += w;
    }
    if (rest > 0) apportion(c + 1, n - 1, total - top, top, rest);
    else for (int64_t r = 1; r < n; r++) c[r] = 0;
    c[0] = top;
}

int kp_gen_fanout_build(kp_gen_fanout *f, int64_t parents, int64_t total, double max, double skew, uint64_t salt,
                        kp_error *err)
{
    memset(f, 0, sizeof *f);
    f->parents = parents < 0 ? 0 : parents;
    f->total = total < 0 ? 0 : total;
    f->skew = skew > 0 ? skew : 0;
    kp_gen_perm_init(&f->rank, (uint64_t)f->parents, salt);
    f->start = calloc((size_t)f->parents + 1, sizeof *f->start);
    if (!f->start) return kp_error_set(err, KP_ERR_NOMEM, NULL, 0, 0, "out of memory for a fan-out vector of %lld parents", (long long)f->parents);
    if (f->parents == 0 || f->total == 0) {
        f->max = 0;
        return 0;
    }
    int64_t cap = max >= 1 && max < (double)f->total ? (int64_t)floor(max) : f->total;
    int64_t least = f->total / f->parents + (f->total % f->parents != 0);
    if (cap < least) cap = least;
    f->max = cap;

    int64_t *counts = malloc((size_t)f->parents * sizeof *counts);
    if (!counts) {
        kp_gen_fanout_free(f);
        return kp_error_set(err, KP_ERR_NOMEM, NULL, 0, 0, "out of memory for a fan-out vector of %lld parents", (long long)parents);
    }
    if (f->skew > 0 && f->parents > 1) {
        /* The heaviest parent reaches the cap, but never holds more than half of all
         * children (at small scales the declared maximum can exceed the child count;
         * the other parents must keep children for the data to be useful). */
        int64_t top = cap, half = (f->total + 1) / 2;
        if (top > half) top = half > least ? half : least;
        zipf_counts(counts, f->parents, f->total, top, f->skew);
        f->max = top;
        for (int64_t p = 0; p < f->parents; p++)
            f->start[p + 1] = f->start[p] + counts[kp_gen_perm_apply(&f->rank, (uint64_t)p)];
    } else {
        /* Even spread with jitter, as wide as the cap allows (at most ±50 %). */
        double avg = (double)f->total / (double)f->parents;
        double jitter = avg >= (double)cap ? 0 : fmin(1.0, 2.0 * ((double)cap / avg - 1.0));
        double sum = 0;
        for (int64_t p = 0; p < f->parents; p++) {
            double w = 1.0 + jitter * (kp_gen_unit_of(kp_gen_hash(salt, (uint64_t)p)) - 0.5);
            store_weight(&counts[p], w);
            sum += w;
        }
        apportion(counts, f->parents, f->total, cap, sum);
        for (int64_t p = 0; p < f->parents; p++) f->start[p + 1] = f->start[p] + counts[p];
    }
    free(counts);
    return 0;
}

void kp_gen_fanout_free(kp_gen_fanout *f)
{
    free(f->start);
    f->start = NULL;
}

int64_t kp_gen_fanout_parent(const kp_gen_fanout *f, int64_t position)
{
    int64_t lo = 0, hi = f->parents - 1; /* the last p with start[p] <= position */
    while (lo < hi) {
        int64_t mid = lo + (hi - lo + 1) / 2;
        if (f->start[mid] <= position) lo = mid;
        else hi = mid - 1;
    }
    return lo;
}

int64_t kp_gen_fanout_draw(const kp_gen_fanout *f, uint64_t h)
{
    if (f->parents <= 0) return -1;
    double u = kp_gen_unit_of(kp_gen_mix(h));
    if (f->skew > 0) return (int64_t)kp_gen_perm_invert(&f->rank, (uint64_t)kp_gen_zipf_rank(u, f->parents, f->skew));
    int64_t p = (int64_t)(u * (double)f->parents);
    return p < f->parents ? p : f->parents - 1;
}

/* ---- distinct picks ------------------------------------------------------------------ */

static uint64_t gcd64(uint64_t a, uint64_t b)
{
    while (b) { uint64_t t = a % b; a = b; b = t; }
    return a;
}

static uint64_t mul_mod(uint64_t a, uint64_t b, uint64_t m) { return (uint64_t)((unsigned __int128)a * b % m); }

static uint64_t inverse_mod(uint64_t a, uint64_t m)
{
    /* extended Euclid on signed 128-bit to stay exact */
    __int128 t = 0, new_t = 1, r = (__int128)m, new_r = (__int128)a;
    while (new_r != 0) {
        __int128 q = r / new_r, tmp;
        tmp = t - q * new_t; t = new_t; new_t = tmp;
        tmp = r - q * new_r; r = new_r; new_r = tmp;
    }
    if (t < 0) t += (__int128)m;
    return (uint64_t)t;
}

void kp_gen_picks_init(kp_gen_picks *picks, int64_t universe, double skew, int is_self, uint64_t salt)
{
    memset(picks, 0, sizeof *picks);
    picks->universe = universe < 0 ? 0 : universe;
    picks->skew = skew > 0 ? skew : 0;
    picks->is_self = is_self;
    picks->salt = salt;
    picks->cached_parent = -1;
    kp_gen_perm_init(&picks->order, (uint64_t)picks->universe, kp_gen_hash(salt, 1));
    uint64_t u = (uint64_t)picks->universe;
    if (u <= 1) {
        picks->stride = picks->stride_inverse = 1;
        return;
    }
    uint64_t stride = 1 + kp_gen_hash(salt, 2) % (u - 1);
    while (gcd64(stride, u) != 1) stride = stride % (u - 1) + 1;
    picks->stride = stride;
    picks->stride_inverse = inverse_mod(stride, u);
}

void kp_gen_picks_free(kp_gen_picks *picks)
{
    free(picks->list);
    free(picks->set);
    picks->list = NULL;
    picks->set = NULL;
}

static int64_t progression_pick(const kp_gen_picks *picks, int64_t p, int64_t k)
{
    uint64_t u = (uint64_t)picks->universe;
    uint64_t base = kp_gen_hash(picks->salt, (uint64_t)p + 3) % u;
    uint64_t slot_k = (uint64_t)k;
    if (picks->is_self && p < picks->universe) {
        uint64_t self_slot = kp_gen_perm_invert(&picks->order, (uint64_t)p);
        uint64_t self_k = mul_mod((self_slot + u - base) % u, picks->stride_inverse, u);
        if (slot_k >= self_k) slot_k++;
    }
    uint64_t slot = (base + mul_mod(slot_k, picks->stride, u)) % u;
    return (int64_t)kp_gen_perm_apply(&picks->order, slot);
}

static int set_contains(const kp_gen_picks *picks, int64_t v)
{
    uint64_t key = (uint64_t)v + 1;
    if (!picks->set) return 0;
    for (size_t i = kp_gen_mix(key) & picks->set_mask;; i = (i + 1) & picks->set_mask) {
        if (picks->set[i] == 0) return 0;
        if (picks->set[i] == key) return 1;
    }
}

static int set_insert(kp_gen_picks *picks, int64_t v)
{
    if (!picks->set || (picks->set_used + 1) * 2 > picks->set_mask + 1) {
        size_t size = picks->set ? (picks->set_mask + 1) * 2 : 64;
        uint64_t *set = calloc(size, sizeof *set);
        if (!set) return -1;
        uint64_t *old = picks->set;
        size_t old_size = old ? picks->set_mask + 1 : 0;
        picks->set = set;
        picks->set_mask = size - 1;
        for (size_t i = 0; i < old_size; i++) {
            if (!old[i]) continue;
            size_t j = kp_gen_mix(old[i]) & picks->set_mask;
            while (set[j]) j = (j + 1) & picks->set_mask;
            set[j] = old[i];
        }
        free(old);
    }
    uint64_t key = (uint64_t)v + 1;
    size_t i = kp_gen_mix(key) & picks->set_mask;
    while (picks->set[i]) i = (i + 1) & picks->set_mask;
    picks->set[i] = key;
    picks->set_used++;
    return 0;
}

static int64_t skewed_pick(kp_gen_picks *picks, int64_t p, int64_t k)
{
    if (picks->cached_parent != p) {
        picks->cached_parent = p;
        picks->list_len = 0;
        picks->set_used = 0;
        if (picks->set) memset(picks->set, 0, (picks->set_mask + 1) * sizeof *picks->set);
        picks->rng = kp_gen_rng_at(picks->salt, (uint64_t)p + 5);
    }
    while ((int64_t)picks->list_len <= k) {
        int64_t candidate = -1, rank = 0;
        for (int attempt = 0; attempt < 32 && candidate < 0; attempt++) {
            rank = kp_gen_zipf_rank(kp_gen_unit(&picks->rng), picks->universe, picks->skew);
            int64_t c = (int64_t)kp_gen_perm_apply(&picks->order, (uint64_t)rank);
            if (!(picks->is_self && c == p) && !set_contains(picks, c)) candidate = c;
        }
        for (int64_t step = 1; candidate < 0 && step <= picks->universe; step++) {
            int64_t c = (int64_t)kp_gen_perm_apply(&picks->order, (uint64_t)((rank + step) % picks->universe));
            if (!(picks->is_self && c == p) && !set_contains(picks, c)) candidate = c;
        }
        if (candidate < 0) return -1;
        if (picks->list_len == picks->list_cap) {
            size_t cap = picks->list_cap ? picks->list_cap * 2 : 64;
            int64_t *list = realloc(picks->list, cap * sizeof *list);
            if (!list) { picks->cached_parent = -1; return -1; }
            picks->list = list;
            picks->list_cap = cap;
        }
        if (set_insert(picks, candidate)) { picks->cached_parent = -1; return -1; }
        picks->list[picks->list_len++] = candidate;
    }
    return picks->list[k];
}

int64_t kp_gen_picks_get(kp_gen_picks *picks, int64_t p, int64_t k)
{
    if (k < 0 || k >= kp_gen_picks_capacity(picks)) return -1;
    if (picks->skew > 0) return skewed_pick(picks, p, k);
    return progression_pick(picks, p, k);
}

/* ---- links ------------------------------------------------------------------------- */

int64_t kp_gen_link_local(kp_gen_link *link, int64_t i)
{
    int64_t count = link->holder->count;
    int64_t p = kp_gen_link_parent(link, i);
    if (p < 0) return i;
    if (i >= count) return kp_gen_fanout_count(&link->fanout, p) + (i - count);
    int64_t position = link->is_permuted ? (int64_t)kp_gen_perm_apply(&link->position, (uint64_t)i) : i;
    return position - link->fanout.start[p];
}

int64_t kp_gen_link_parent(kp_gen_link *link, int64_t i)
{
    int64_t count = link->holder->count;
    switch (link->kind) {
    case KP_GEN_LINK_FANOUT: {
        if (i >= count) return kp_gen_fanout_draw(&link->fanout, kp_gen_hash(link->salt, (uint64_t)i));
        if (link->fanout.parents <= 0) return -1;
        int64_t position = link->is_permuted ? (int64_t)kp_gen_perm_apply(&link->position, (uint64_t)i) : i;
        const int64_t *start = link->fanout.start;
        int64_t h = link->hint;
        if (h >= 0 && h < link->fanout.parents && start[h] <= position) {
            /* the same parent as last time, or one of the next few */
            for (int step = 0; step < 4 && h < link->fanout.parents; step++, h++)
                if (position < start[h + 1]) return link->hint = h;
        }
        return link->hint = kp_gen_fanout_parent(&link->fanout, position);
    }
    case KP_GEN_LINK_PICKS: {
        int64_t p = kp_gen_link_parent(link->base, i);
        if (p < 0) return -1;
        return kp_gen_picks_get(&link->picks, p, kp_gen_link_local(link->base, i));
    }
    case KP_GEN_LINK_PAIR: {
        uint64_t j = i >= count ? (uint64_t)(link->pairs + (i - count)) : kp_gen_perm_invert(&link->holder_order, (uint64_t)i);
        if (i < count && (int64_t)j >= link->pairs) return -1;
        if ((int64_t)j >= link->ref->count) return -1;
        return (int64_t)kp_gen_perm_apply(&link->ref_order, j);
    }
    case KP_GEN_LINK_COMPOSED: {
        int64_t p = kp_gen_link_parent(link->first, i);
        return p < 0 ? -1 : kp_gen_link_parent(link->second, p);
    }
    }
    return -1;
}

int64_t kp_gen_link_partner(kp_gen_link *link, int64_t p)
{
    if (link->kind != KP_GEN_LINK_PAIR || p >= link->ref->count) return -1;
    uint64_t j = kp_gen_perm_invert(&link->ref_order, (uint64_t)p);
    if ((int64_t)j >= link->pairs) return -1;
    return (int64_t)kp_gen_perm_apply(&link->holder_order, j);
}
