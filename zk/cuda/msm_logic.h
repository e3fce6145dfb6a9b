/* msm_logic.h — one thread's work in each step of the GPU MSM (zk/cuda/msm.cu), as
 * plain CUZK_HD functions that gcc also compiles: tests/unit/test_gpu_emul.c runs
 * them over a small grid on the CPU and compares with msm_naive / msm_run.
 *
 * The plan (Pippenger with signed digits, buckets accumulated after a sort):
 *  1. digits: thread i reads scalar i and, for every window w of width c, the signed
 *     digit d (msm.c's Booth form: t = bits [wc-1, wc+c-1], d = (t>>1) + (t&1) -
 *     2^c (t>>c), |d| <= 2^(c-1)); it writes the pair key = w·nb + |d| - 1 (nb = 2^(c-1)
 *     buckets per window), value = i | sign<<31 at position w·count + i. A zero digit
 *     gets key = the sentinel nwin·nb, which sorts last and is dropped. Windows cover
 *     257 bits (nwin = 256/c + 1), so any scalar < 2^256 is exact.
 *  2. a radix sort of the pairs by key (CUB) groups each bucket's points.
 *  3. segmented sums, level by level: the sorted run of each key is cut into segments of
 *     at most GMSM_SEG items (a head flag where (i - run start) % SEG == 0, an exclusive
 *     scan numbers them); one thread sums one segment (level 1: mixed additions of the
 *     gathered affine bases, negated for a negative digit; later levels: jacobian
 *     additions of the previous level's sums). Levels repeat until each key has one
 *     segment, so a bucket holding half of all points (witnesses full of 0s and 1s put
 *     them in bucket 1 of window 0) is summed by a tree, not by one thread.
 *  4. the one sum per key is scattered into a dense, zeroed (= infinity) bucket array.
 *  5. reduction: window w's buckets are cut into nr ranges; a thread computes its range's
 *     sum_k k·B_k by running sums (sum (k-lo+1)·B_k, plus lo·(sum B_k)); a tree of
 *     log2(nr) passes adds each window's ranges.
 *  6. the host combines windows: acc = W[nwin-1], then c doublings and + W[w] down to 0.
 *
 * Indices: count <= 2^31 per call (the caller chunks), so values fit 31 bits. */
#ifndef CUZK_CUDA_MSM_LOGIC_H
#define CUZK_CUDA_MSM_LOGIC_H

#include <stddef.h>
#include <stdint.h>

#include "zk/curve.h"

#define GMSM_SEG          32u        /* items summed by one thread per level */
#define GMSM_NEG          (1u << 31) /* value bit: subtract the base */
#define GMSM_SCALAR_LIMBS 4          /* scalars are 32 bytes */
#define GMSM_MAX_C        16u
/* GMSM_SEG: a thread adds GMSM_SEG points of one bucket's run in sequence, then the
 * partial sums are added again level by level: larger segments mean fewer levels and
 * launches but longer serial chains in a popular bucket (witness-like scalars put
 * most digits in a few buckets); 32 keeps a level's serial chain at a warp's width.
 * At least 2 (a level must shrink the run) and at most 1024 (one block's threads). */
#if GMSM_SEG < 2 || GMSM_SEG > 1024
#error "GMSM_SEG: 2 .. 1024 items per thread and level"
#endif
/* GMSM_MAX_C: the widest window. A key is window · 2^(c-1) + bucket and must stay
 * below GMSM_NEG (2^31) with 256/c + 1 windows, and a window's 2^(c-1) buckets of
 * jacobian points (G2 BLS12-381: 288 bytes each) are scratch per chunk: at 16 (2^15
 * buckets a window) one bit more would double that scratch to save one window in
 * seventeen. */
#if GMSM_MAX_C < 4 || GMSM_MAX_C > 20
#error "GMSM_MAX_C: 4 .. 20 bits (keys below 2^31, bucket scratch per window)"
#endif

/* Window width for a chunk of `count` points: ~2^c buckets against count points;
 * capped at 16 so a window's keys and buckets stay small (2^15 buckets). */
CUZK_HD unsigned gmsm_window_bits(size_t count)
{
    unsigned lg = 0;
    while (lg < 40 && ((size_t)1 << (lg + 1)) <= count) lg++;
    unsigned c = lg > 4 ? lg - 4 : 1;
    if (c < 4) c = 4;
    if (c > GMSM_MAX_C) c = GMSM_MAX_C;
    return c;
}

CUZK_HD unsigned gmsm_nwin(unsigned c)
{
    return 256u / c + 1u;
}
CUZK_HD uint32_t gmsm_nbuckets(unsigned c)
{
    return (uint32_t)1 << (c - 1);
}

/* w (<= 17) bits of s from bit off; bits past 256 are 0 (msm.c's msm_bits). */
CUZK_HD uint32_t gmsm_bits(const uint64_t *s, unsigned off, unsigned w)
{
    unsigned i = off / 64, sh = off % 64;
    if (i >= GMSM_SCALAR_LIMBS) return 0;
    uint64_t v = s[i] >> sh;
    if (sh + w > 64 && i + 1 < GMSM_SCALAR_LIMBS) v |= s[i + 1] << (64 - sh);
    return (uint32_t)(v & (((uint64_t)1 << w) - 1));
}

/* Signed digit of window w (msm.c's msm_digit). */
CUZK_HD int gmsm_digit(const uint64_t *s, unsigned w, unsigned c)
{
    uint32_t t = w ? gmsm_bits(s, w * c - 1, c + 1) : gmsm_bits(s, 0, c) << 1;
    return (int)((t >> 1) + (t & 1)) - (int)((t >> c) << c);
}

/* Step 1, thread i < count. */
CUZK_HD void gmsm_digits_thread(size_t i, size_t count, unsigned c, const uint64_t *scalars, uint32_t *keys,
                                uint32_t *vals)
{
    const unsigned nwin = gmsm_nwin(c);
    const uint32_t nb = gmsm_nbuckets(c), sentinel = nwin * nb;
    uint64_t s[GMSM_SCALAR_LIMBS];
    for (unsigned k = 0; k < GMSM_SCALAR_LIMBS; k++) s[k] = scalars[i * GMSM_SCALAR_LIMBS + k];
    for (unsigned w = 0; w < nwin; w++) {
        int d = gmsm_digit(s, w, c);
        size_t at = (size_t)w * count + i;
        if (d == 0) {
            keys[at] = sentinel;
            vals[at] = (uint32_t)i;
        } else {
            uint32_t mag = (uint32_t)(d < 0 ? -d : d);
            keys[at] = w * nb + mag - 1;
            vals[at] = (uint32_t)i | (d < 0 ? GMSM_NEG : 0u);
        }
    }
}

/* After the sort, thread i < n: *nvalid = index of the first sentinel (the caller
 * zeroes *nvalid first; exactly one thread writes when some key is valid). */
CUZK_HD void gmsm_nvalid_thread(size_t i, size_t n, const uint32_t *keys, uint32_t sentinel, uint32_t *nvalid)
{
    if (keys[i] != sentinel && (i + 1 == n || keys[i + 1] == sentinel)) *nvalid = (uint32_t)(i + 1);
}

/* Thread i < n (sorted keys): the first index of each key's run, and a flag for run
 * starts (summed to count distinct keys). */
CUZK_HD void gmsm_run_start_thread(size_t i, const uint32_t *keys, uint32_t *key_start, uint32_t *distinct)
{
    bool head = i == 0 || keys[i] != keys[i - 1];
    if (head) key_start[keys[i]] = (uint32_t)i;
    distinct[i] = head;
}

/* Thread i < n: segment head flag (every SEG-th item of a run). */
CUZK_HD void gmsm_head_thread(size_t i, const uint32_t *keys, const uint32_t *key_start, uint32_t *flags)
{
    flags[i] = ((uint32_t)i - key_start[keys[i]]) % GMSM_SEG == 0;
}

/* Thread i < n, after segid = exclusive scan of flags: record each segment's first
 * item and key; thread n-1 also closes the last segment (seg_first[nseg] = n). */
CUZK_HD void gmsm_seg_write_thread(size_t i, size_t n, const uint32_t *flags, const uint32_t *segid,
                                   const uint32_t *keys, uint32_t *seg_first, uint32_t *seg_key)
{
    if (flags[i]) {
        seg_first[segid[i]] = (uint32_t)i;
        seg_key[segid[i]] = keys[i];
    }
    if (i + 1 == n) seg_first[segid[i] + flags[i]] = (uint32_t)n;
}

/* Level 1, thread s < nseg: out[s] = sum of ±bases[vals[k]] over the segment. Bases are
 * affine (2·cl limbs), out jacobian (3·cl limbs).
 *
 * No per-thread arrays: the sum accumulates in out[s] itself and each base is read where
 * it lies. An array whose address goes to an out-of-line formula lives in local memory
 * (the stack frame: 768 bytes per thread for G1, 2208 for G2 when acc and a negated copy
 * of the base were arrays sized for the largest group), so ptxas -v now reports no stack
 * for this kernel. A negative digit subtracts the base as -((-acc) + b): two negations
 * of Y (a field subtraction each) instead of a negated copy. */
CUZK_HD void gmsm_sum_bases_thread(enum curve_id g, size_t s, const uint32_t *seg_first, const uint32_t *vals,
                                   const uint64_t *bases, uint64_t *out)
{
    const unsigned cl = ec_cl_id(g);
    uint64_t *acc = out + s * 3 * cl;
    ec_jac_set_inf_id(g, acc);
    for (uint32_t k = seg_first[s]; k < seg_first[s + 1]; k++) {
        uint32_t v = vals[k];
        const uint64_t *b = bases + (size_t)(v & ~GMSM_NEG) * 2 * cl;
        if (v & GMSM_NEG) {
            ec_jac_neg_id(g, acc, acc);
            ec_add_aff_id(g, acc, acc, b);
            ec_jac_neg_id(g, acc, acc);
        } else {
            ec_add_aff_id(g, acc, acc, b);
        }
    }
}

/* Later levels, thread s < nseg: out[s] = sum of the jacobian in[k] over the segment,
 * accumulated in out[s] (no per-thread arrays, as above). */
CUZK_HD void gmsm_sum_jac_thread(enum curve_id g, size_t s, const uint32_t *seg_first, const uint64_t *in,
                                 uint64_t *out)
{
    const unsigned cl = ec_cl_id(g);
    uint64_t *acc = out + s * 3 * cl;
    ec_jac_set_inf_id(g, acc);
    for (uint32_t k = seg_first[s]; k < seg_first[s + 1]; k++)
        ec_add_id(g, acc, acc, in + (size_t)k * 3 * cl);
}

/* Thread s < nseg of the last level (one segment per key): buckets[key] = pts[s]. */
CUZK_HD void gmsm_scatter_thread(enum curve_id g, size_t s, const uint32_t *seg_key, const uint64_t *pts,
                                 uint64_t *buckets)
{
    const unsigned cl = ec_cl_id(g);
    for (unsigned l = 0; l < 3 * cl; l++) buckets[(size_t)seg_key[s] * 3 * cl + l] = pts[s * 3 * cl + l];
}

/* r += k·p for a small k (< 2^32), double-and-add from the top bit into t (scratch, one
 * point); r, p and t are three distinct points. */
CUZK_HD void gmsm_add_mul_small(enum curve_id g, uint64_t *r, const uint64_t *p, uint32_t k, uint64_t *t)
{
    ec_jac_set_inf_id(g, t);
    for (int b = 31; b >= 0; b--) {
        ec_dbl_id(g, t, t);
        if ((k >> b) & 1) ec_add_id(g, t, t, p);
    }
    ec_add_id(g, r, r, t);
}

/* Step 5a, thread t < nwin·nr: range t % nr of window t / nr; bucket b (0-based in its
 * window) has weight b + 1. out[t] = sum over the range of (b+1)·B_b. nr divides nb.
 * scratch: 2 points per thread (the running sum and the small multiple), in device
 * memory rather than per-thread arrays (no stack: see gmsm_sum_bases_thread). */
CUZK_HD void gmsm_reduce_range_thread(enum curve_id g, size_t t, uint32_t nb, uint32_t nr,
                                      const uint64_t *buckets, uint64_t *out, uint64_t *scratch)
{
    const unsigned cl = ec_cl_id(g);
    const size_t w = t / nr, r = t % nr;
    const uint32_t len = nb / nr, lo = (uint32_t)r * len;
    uint64_t *sum = out + t * 3 * cl, *run = scratch + t * 6 * cl, *tmp = run + 3 * cl;
    ec_jac_set_inf_id(g, run);
    ec_jac_set_inf_id(g, sum);
    /* from the top: run = B_hi-1 + ... + B_b, sum += run gives sum (b - lo + 1) B_b */
    for (uint32_t b = lo + len; b-- > lo;) {
        ec_add_id(g, run, run, buckets + (w * nb + b) * 3 * cl);
        ec_add_id(g, sum, sum, run);
    }
    gmsm_add_mul_small(g, sum, run, lo, tmp); /* + lo · sum B_b */
}

/* Step 5b, a tree over each window's nr ranges (nr a power of two): the pass for
 * `half` (nr/2, nr/4, ..., 1; one launch each) has thread t < nwin·half add range
 * (w, i + half) into range (w, i), w = t / half, i = t % half; the last pass (half = 1)
 * also copies range (w, 0), the window's sum, into win[w]. log2(nr) <= 8 passes of
 * nwin·half threads replace one thread per window doing nr - 1 dependent additions
 * (17 threads, 255 additions each at 2^20 and above). nr = 1: call with half = 0 (the
 * copy alone, thread t = w). */
CUZK_HD void gmsm_window_tree_thread(enum curve_id g, size_t t, uint32_t nr, uint32_t half, uint64_t *ranges,
                                     uint64_t *win)
{
    const unsigned cl = ec_cl_id(g);
    const size_t w = half ? t / half : t, i = half ? t % half : 0;
    uint64_t *a = ranges + (w * nr + i) * 3 * cl;
    if (half) ec_add_id(g, a, a, ranges + (w * nr + i + half) * 3 * cl);
    if (half <= 1 && i == 0)
        for (unsigned l = 0; l < 3 * cl; l++) win[w * 3 * cl + l] = a[l];
}

/* Ranges per window for the reduction: enough threads to fill the device, ranges of
 * at least 16 buckets. */
CUZK_HD uint32_t gmsm_nranges(unsigned c)
{
    uint32_t nb = gmsm_nbuckets(c);
    uint32_t nr = nb / 16;
    if (nr > 256) nr = 256;
    if (nr < 1) nr = 1;
    return nr;
}

/* ---- scratch sizing (host) ---------------------------------------------------- */

#define GMSM_MAX_CHUNK ((size_t)1 << 24) /* points per pass: 17 windows x 2^24 pairs < 2^31 */
#define GMSM_MIN_CHUNK ((size_t)1024)    /* below this the budget is not the limit that matters */

/* Segments of a level are at most n/SEG + (distinct keys) + 1. */
CUZK_HD size_t gmsm_seg_cap(size_t n, size_t nkeys)
{
    size_t cap = n / GMSM_SEG + nkeys + 1;
    return cap < n + 1 ? cap : n + 1;
}

/* Device bytes one chunk of `count` points needs (everything msm_chunk allocates, CUB
 * temp storage estimated generously: the pair sort keeps its own alternate buffers,
 * 8 bytes per pair, plus 16 MiB). cl: limbs of a coordinate. */
CUZK_HD size_t gmsm_chunk_bytes(unsigned cl, size_t count)
{
    const unsigned c = gmsm_window_bits(count), nwin = gmsm_nwin(c);
    const size_t nb = gmsm_nbuckets(c), nkeys = nwin * nb, N = nwin * count, cap = gmsm_seg_cap(N, nkeys);
    const size_t jac = 3 * cl * 8;
    return 7 * 4 * N + 2 * 4 * cap + 4 * nkeys + 2 * cap * jac + nkeys * jac +
        (size_t)3 * nwin * gmsm_nranges(c) * jac + nwin * jac + 10 * N + ((size_t)16 << 20);
}

/* Points per chunk for an MSM of `count` points when `free_bytes` of device memory are
 * free and `sharers` callers (the CUDA backend's in-flight threads: one device, one memory) may size
 * their scratch from that same reading at once: each may take 70% of free / sharers, so
 * that together they never overcommit (two sharers at 70% each would ask for 140%).
 * Halved until it fits, never below GMSM_MIN_CHUNK (then the allocation itself says
 * out of memory). */
CUZK_HD size_t gmsm_chunk_points(unsigned cl, size_t count, size_t free_bytes, unsigned sharers)
{
    const size_t budget = free_bytes / 10 * 7 / (sharers ? sharers : 1);
    size_t chunk = count < GMSM_MAX_CHUNK ? count : GMSM_MAX_CHUNK;
    while (chunk > GMSM_MIN_CHUNK && gmsm_chunk_bytes(cl, chunk) > budget) chunk /= 2;
    return chunk;
}

/* Step 6 (host): result = sum_w 2^(wc) win[w], jacobian (3·cl limbs; any Z). */
CUZK_HD void gmsm_combine(enum curve_id g, unsigned c, const uint64_t *win, uint64_t *result)
{
    const unsigned cl = ec_cl_id(g), nwin = gmsm_nwin(c);
    uint64_t acc[EC_MAX_JAC], q[EC_MAX_JAC];
    ec_jac_set_inf_id(g, acc);
    for (unsigned w = nwin; w-- > 0;) {
        for (unsigned k = 0; k < c; k++) ec_dbl_id(g, acc, acc);
        for (unsigned l = 0; l < 3 * cl; l++) q[l] = win[w * 3 * cl + l];
        ec_add_id(g, acc, acc, q);
    }
    ec_jac_copy_id(g, result, acc);
}

#endif
