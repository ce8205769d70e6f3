/*
 * gen_layout.c — who references whom in generated data: fan-outs, distinct N:M
 * picks, 1:1 pairings and the links built from them (plus the small buffer and
 * permutation helpers they need).
 *
 * A 1:N relation is a fan-out: parent p owns the child positions
 * [start(p), start(p) + count(p)); a child's position is its record number (for the
 * entity's primary relation, so a parent's children are consecutive records) or a
 * fixed permutation of it (other relations). Counts come from a split tree over the
 * parents, evaluated on demand, so a relation costs the same few hundred KiB whether
 * it has a hundred parents or a hundred million.
 * Invariant: the counts sum to the child count exactly, none exceeds the cap, and a
 * skewed fan-out's heaviest parent holds exactly its cap — what the tests of
 * referential integrity and fan-out check.
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

/* ---- fan-out ------------------------------------------------------------------------ */

#define MEMO_NODES (1u << 14)
#define HEAD_RANKS 4096

/* Σ over 1-based ranks 1..n of ((1+q)/(r+q))^s with 1+q = e^t: the first terms
 * exactly, the tail by its integral (midpoint rule); used to solve for t. */
static double zipf_mass(double t, int64_t n, double s)
{
    const int64_t exact = n < HEAD_RANKS ? n : HEAD_RANKS;
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

/* The weight of 0-based rank x >= 1 (rank 0 weighs 1). */
static double rank_weight(const kp_gen_fanout *f, int64_t x)
{
    return exp(f->skew * (f->t - log((double)x + exp(f->t))));
}

/* Σ of the weights of 0-based ranks 1 .. x-1. */
static double prefix_mass(const kp_gen_fanout *f, int64_t x)
{
    if (x <= 1) return 0;
    if (x - 1 <= f->head_count) return f->head[x - 1];
    /* ranks head_count+1 .. x-1 by the integral from head_count + 0.5 to x - 0.5 */
    double c = (double)f->head_count + 0.5 + exp(f->t);
    double l = log1p(((double)x - 1.0 - (double)f->head_count) / c);
    double scale = exp(f->skew * (f->t - log(c))) * c;
    double integral = fabs(1.0 - f->skew) < 1e-9 ? l : expm1((1.0 - f->skew) * l) / (1.0 - f->skew);
    return f->head[f->head_count] + scale * integral;
}

static int64_t mul_cap(int64_t cap, int64_t count)
{
    if (cap > 0 && count > INT64_MAX / cap) return INT64_MAX;
    return cap * count;
}

/* How many of the n children of tree node [a, b) go to its left half [a, mid). */
static int64_t split_left(kp_gen_fanout *f, int64_t a, int64_t b, int64_t n, uint64_t node)
{
    if (node < f->memo_size && f->memo[node] >= 0) return f->memo[node];
    int64_t mid = a + (b - a) / 2;
    int64_t lo = n - mul_cap(f->cap, b - mid), hi = mul_cap(f->cap, mid - a);
    if (lo < 0) lo = 0;
    if (hi > n) hi = n;
    double ideal;
    if (f->is_skewed) {
        double whole = prefix_mass(f, b) - prefix_mass(f, a);
        ideal = whole > 0 ? (double)n * ((prefix_mass(f, mid) - prefix_mass(f, a)) / whole) : (double)n / 2;
    } else {
        /* binomial-like: mean n·p, standard deviation sqrt(n·p·(1-p)) */
        double p = (double)(mid - a) / (double)(b - a);
        uint64_t h = kp_gen_hash(kp_gen_hash(f->salt, (uint64_t)a), (uint64_t)b);
        double z = 0;
        for (int k = 0; k < 4; k++) z += (double)((h >> (16 * k)) & 0xffff) / 65536.0;
        z = (z - 2.0) * 1.7320508075688772; /* variance 1 */
        ideal = (double)n * p + sqrt((double)n * p * (1 - p)) * z;
    }
    int64_t left = llround(ideal);
    if (left < lo) left = lo;
    if (left > hi) left = hi;
    if (node < f->memo_size) f->memo[node] = left;
    return left;
}

/* The tree's root: its rank range, children and first position. */
static void tree_root(const kp_gen_fanout *f, int64_t *a, int64_t *b, int64_t *n, int64_t *pos)
{
    if (f->is_skewed) {
        *a = 1;
        *b = f->parents;
        *n = f->total - f->top;
        *pos = f->top;
    } else {
        *a = 0;
        *b = f->parents;
        *n = f->total - f->base * f->parents;
        *pos = 0;
    }
}

static void leaf_by_rank(kp_gen_fanout *f, int64_t r, int64_t *start, int64_t *count)
{
    if (f->cached_rank == r) { *start = f->cached_start; *count = f->cached_count; return; }
    if (f->is_skewed && r == 0) {
        *start = 0;
        *count = f->top;
    } else {
        int64_t a, b, n, pos;
        uint64_t node = 1;
        tree_root(f, &a, &b, &n, &pos);
        while (b - a > 1) {
            int64_t mid = a + (b - a) / 2, left = split_left(f, a, b, n, node);
            if (r < mid) {
                b = mid;
                n = left;
                node = 2 * node;
            } else {
                pos += left + f->base * (mid - a);
                a = mid;
                n -= left;
                node = 2 * node + 1;
            }
        }
        *start = pos;
        *count = n + f->base;
    }
    f->cached_rank = r;
    f->cached_start = *start;
    f->cached_count = *count;
}

static int64_t rank_by_position(kp_gen_fanout *f, int64_t position)
{
    if (f->cached_rank >= 0 && position >= f->cached_start && position < f->cached_start + f->cached_count)
        return f->cached_rank;
    int64_t r, start, count;
    if (f->is_skewed && position < f->top) {
        r = 0;
        start = 0;
        count = f->top;
    } else {
        int64_t a, b, n, pos;
        uint64_t node = 1;
        tree_root(f, &a, &b, &n, &pos);
        while (b - a > 1) {
            int64_t mid = a + (b - a) / 2, left = split_left(f, a, b, n, node);
            int64_t left_total = left + f->base * (mid - a);
            if (position < pos + left_total) {
                b = mid;
                n = left;
                node = 2 * node;
            } else {
                pos += left_total;
                a = mid;
                n -= left;
                node = 2 * node + 1;
            }
        }
        r = a;
        start = pos;
        count = n + f->base;
    }
    f->cached_rank = r;
    f->cached_start = start;
    f->cached_count = count;
    return r;
}

static int64_t rank_of_parent(const kp_gen_fanout *f, int64_t p)
{
    return f->is_skewed ? (int64_t)kp_gen_perm_apply(&f->rank, (uint64_t)p) : p;
}

int64_t kp_gen_fanout_count(kp_gen_fanout *f, int64_t p)
{
    if (p < 0 || p >= f->parents) return 0;
    int64_t start, count;
    leaf_by_rank(f, rank_of_parent(f, p), &start, &count);
    return count;
}

int64_t kp_gen_fanout_start(kp_gen_fanout *f, int64_t p)
{
    if (p < 0 || p >= f->parents) return f->total;
    int64_t start, count;
    leaf_by_rank(f, rank_of_parent(f, p), &start, &count);
    return start;
}

int64_t kp_gen_fanout_parent(kp_gen_fanout *f, int64_t position)
{
    if (f->parents <= 0) return -1;
    int64_t r = rank_by_position(f, position);
    return f->is_skewed ? (int64_t)kp_gen_perm_invert(&f->rank, (uint64_t)r) : r;
}

int kp_gen_fanout_build(kp_gen_fanout *f, int64_t parents, int64_t total, double max, double skew, uint64_t salt,
                        kp_error *err)
{
    memset(f, 0, sizeof *f);
    f->parents = parents < 0 ? 0 : parents;
    f->total = total < 0 ? 0 : total;
    f->skew = skew > 0 ? skew : 0;
    f->salt = salt;
    f->cached_rank = -1;
    kp_gen_perm_init(&f->rank, (uint64_t)f->parents, salt);
    if (f->parents == 0 || f->total == 0) return 0;
    int64_t cap = max >= 1 && max < (double)f->total ? (int64_t)floor(max) : f->total;
    int64_t least = f->total / f->parents + (f->total % f->parents != 0);
    if (cap < least) cap = least;
    f->max = cap;
    f->memo_size = (size_t)(f->parents < (int64_t)MEMO_NODES / 4 ? f->parents * 4 : MEMO_NODES);
    f->memo = malloc(f->memo_size * sizeof *f->memo);
    if (!f->memo) return kp_error_set(err, KP_ERR_NOMEM, NULL, 0, 0, "out of memory for a fan-out layout");
    for (size_t i = 0; i < f->memo_size; i++) f->memo[i] = -1;
    if (f->skew > 0 && f->parents > 1) {
        /* The heaviest parent reaches the cap, but never holds more than half of all
         * children (at small scales the declared maximum can exceed the child count;
         * the other parents must keep children for the data to be useful). */
        int64_t top = cap, half = (f->total + 1) / 2;
        if (top > half) top = half > least ? half : least;
        double ratio = (double)f->total / (double)top;
        if (ratio < (double)f->parents * (1 - 1e-12)) {
            double lo = -40, hi = 60;
            for (int i = 0; i < 100; i++) {
                double mid = 0.5 * (lo + hi);
                if (zipf_mass(mid, f->parents, f->skew) < ratio) lo = mid;
                else hi = mid;
            }
            f->is_skewed = 1;
            f->t = 0.5 * (lo + hi);
            f->top = top;
            f->cap = top;
            f->max = top;
            f->head_count = f->parents - 1 < HEAD_RANKS ? f->parents - 1 : HEAD_RANKS;
            f->head = malloc(((size_t)f->head_count + 1) * sizeof *f->head);
            if (!f->head) {
                kp_gen_fanout_free(f);
                return kp_error_set(err, KP_ERR_NOMEM, NULL, 0, 0, "out of memory for a fan-out layout");
            }
            f->head[0] = 0;
            for (int64_t x = 1; x <= f->head_count; x++) f->head[x] = f->head[x - 1] + rank_weight(f, x);
            return 0;
        }
        cap = top; /* every parent is at the top: an even spread */
        f->max = top;
    }
    /* even spread around the average, at least about half of it each */
    double avg = (double)f->total / (double)f->parents;
    int64_t base = avg >= 1 ? (int64_t)floor(avg * 0.5 + 0.5) : 0;
    if (base > cap) base = cap;
    f->base = base;
    f->cap = cap - base;
    return 0;
}

void kp_gen_fanout_free(kp_gen_fanout *f)
{
    free(f->memo);
    free(f->head);
    f->memo = NULL;
    f->head = NULL;
}

int64_t kp_gen_fanout_draw(const kp_gen_fanout *f, uint64_t h)
{
    if (f->parents <= 0) return -1;
    double u = kp_gen_unit_of(kp_gen_mix(h));
    if (f->is_skewed) return (int64_t)kp_gen_perm_invert(&f->rank, (uint64_t)kp_gen_zipf_rank(u, f->parents, f->skew));
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
    return position - kp_gen_fanout_start(&link->fanout, p);
}

int64_t kp_gen_link_parent(kp_gen_link *link, int64_t i)
{
    int64_t count = link->holder->count;
    switch (link->kind) {
    case KP_GEN_LINK_FANOUT: {
        if (i >= count) return kp_gen_fanout_draw(&link->fanout, kp_gen_hash(link->salt, (uint64_t)i));
        if (link->fanout.parents <= 0) return -1;
        int64_t position = link->is_permuted ? (int64_t)kp_gen_perm_apply(&link->position, (uint64_t)i) : i;
        return kp_gen_fanout_parent(&link->fanout, position);
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
