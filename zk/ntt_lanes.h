/* ntt_lanes.h — zk/ntt.c's butterfly kernels (ntt_kernels.h) on the AVX-512 IFMA lanes
 * of zk/ifma_lanes.h, 8 elements at a time. Included once, after ifma_lanes.h, by
 * zk/ntt_ifma_fr.h (for zk/ntt_ifma_bn254.c and zk/ntt_ifma_bls12_381.c), which instantiates the lanes for
 * their scalar field Fr (5 limbs of 52 bits, R' = 2^260, g = 4) and name the table
 * NTT_LANES_TABLE and the h function NTT_LANES_H.
 *
 * Layout: the vector stays field.h's 4-limb AoS between kernels; a kernel relimbs 8
 * consecutive elements into one lane value (element 8c + l in lane l) and back. A
 * block kernel relimbs its whole block once into a stack buffer (B/8 lane values,
 * 160 KiB at B = 2^12, L2-sized like the scalar block) and runs all its stages there;
 * a global radix-4 pass relimbs its four operands and three twiddles per 8
 * quadruples. Stages m >= 8 pair whole lane values (vertical); the three stages m = 4,
 * 2, 1 pair lanes of one value (l, l ^ m), with a permute, a blend and one lane
 * product for the four pairs (m = 1 needs none: its twiddle is 1).
 *
 * Forms (ifma_lanes.h's notation v@s = v·2^s mod p, a lane product adds the shifts
 * less 260): data stay x@256, field.h's form, and a twiddle read from ntt.c's tables
 * (w@256, canonical) is shifted left 4 bits into w@260 (an integer below 16p, not
 * reduced), so x·w comes out x·w@256 with no conversion product. The tables and the
 * domain stay as they are (zk/cuda reads them; the lane path costs no memory).
 *
 * Bounds, e = p/R' (0.0118 BN254 Fr, 0.0283 BLS12-381 Fr, the looser): data lie in
 * [0, 2p) between butterflies, canonical in memory. A product of d < δp by a twiddle
 * below 16p is below (16δe + 1)p: 1.91p for δ = 2, 2.81p for δ = 4.
 *   DIT: t = b·w < 1.91p; a + t < 3.91p and a + 2p - t in (0.09p, 4p), each less 2p
 *   where possible: [0, 2p).
 *   DIF: a + b < 4p, less 2p where possible; (a + 2p - b)·w < 2.81p, less 2p where
 *   possible: [0, 2p).
 *   Every lane product input is below 16p < R' (84p BN254, 35p BLS12-381 Fr).
 * Stores make the value canonical (less p where possible). */
#include "ntt_kernels.h"

#define NTT_LANE_B_MAX 4096 /* zk/ntt.c's NTT_LOCAL_LG block */

/* 8 consecutive field.h elements at a (canonical) into lane form @256 */
LANE_INLINE vl nl_load(const uint64_t *a)
{
    const uint64_t *pa[8];
    lanes_seq(pa, a);
    return vl_gather(pa, 0);
}

/* a in [0, 2p) made canonical and stored to 8 consecutive elements at r */
LANE_INLINE void nl_store(uint64_t *r, vl a)
{
    const uint64_t *pr[8];
    lanes_seq(pr, r);
    vl_scatter((uint64_t *const *)pr, 0, vl_csub(a, vl_pmul(1)), 0xff);
}

/* 8 consecutive twiddles (canonical @256) as @260, below 16p */
LANE_INLINE vl nl_tw(const uint64_t *t)
{
    return vl_shl(nl_load(t), LANE_G);
}

/* the element at x (canonical @256) in every lane, @260 */
LANE_INLINE vl nl_bcast(const uint64_t *x)
{
    const uint64_t *px[8] = { x, x, x, x, x, x, x, x };
    return vl_shl(vl_gather(px, 0), LANE_G);
}

/* twiddle tab[idx[l]] in lane l, @260 */
LANE_INLINE vl nl_tw_idx(const uint64_t *tab, const unsigned idx[8])
{
    const uint64_t *pt[8];
    for (int l = 0; l < 8; l++) pt[l] = tab + (size_t)LANE_W * idx[l];
    return vl_shl(vl_gather(pt, 0), LANE_G);
}

/* (a, b) <- (a + w b, a - w b) */
LANE_INLINE void nl_bfly(vl *a, vl *b, vl w)
{
    const vl P2 = vl_pmul(2);
    vl t = vl_mont(*b, w);
    *b = vl_csub(vl_sub_plus(*a, t, P2), P2);
    *a = vl_csub(vl_add(*a, t), P2);
}

/* (a, b) <- (a + b, (a - b) w) */
LANE_INLINE void nl_bfly_dif(vl *a, vl *b, vl w)
{
    const vl P2 = vl_pmul(2);
    vl d = vl_sub_plus(*a, *b, P2);
    *a = vl_csub(vl_add(*a, *b), P2);
    *b = vl_csub(vl_mont(d, w), P2);
}

/* The lanes l ^ m of a (m = 1, 2, 4) and the mask of the lanes with bit m set. */
LANE_INLINE vl nl_swap(vl a, unsigned m)
{
    const __m512i idx = _mm512_xor_si512(_mm512_set_epi64(7, 6, 5, 4, 3, 2, 1, 0), _mm512_set1_epi64(m));
    CUZK_UNROLL for (int k = 0; k < LANE_N; k++) a.l[k] = _mm512_permutexvar_epi64(idx, a.l[k]);
    return a;
}

LANE_INLINE __mmask8 nl_hi(unsigned m)
{
    return (__mmask8)(m == 1 ? 0xaa : m == 2 ? 0xcc : 0xf0);
}

/* lo + (hi lanes ? 2p - t : t), normalised (below 4p for lo, t < 2p) */
LANE_INLINE vl nl_pm(vl lo, vl t, __mmask8 hi)
{
    const vl P2 = vl_pmul(2);
    CUZK_UNROLL for (int k = 0; k < LANE_N; k++)
    {
        __m512i u = _mm512_mask_blend_epi64(hi, t.l[k], _mm512_sub_epi64(P2.l[k], t.l[k]));
        lo.l[k] = _mm512_add_epi64(lo.l[k], u);
    }
    return vl_norm(lo);
}

/* DIT stage m in {1, 2, 4} inside a: pair (l, l + m), l & m = 0; w: the pair's twiddle
 * in both its lanes (ignored for m = 1, whose twiddle is 1). */
LANE_INLINE vl nl_dit_in(vl a, unsigned m, vl w)
{
    const __mmask8 hi = nl_hi(m);
    vl y = nl_swap(a, m), as, bs;
    CUZK_UNROLL for (int k = 0; k < LANE_N; k++)
    {
        as.l[k] = _mm512_mask_blend_epi64(hi, a.l[k], y.l[k]); /* the pair's a in both lanes */
        bs.l[k] = _mm512_mask_blend_epi64(hi, y.l[k], a.l[k]); /* its b */
    }
    vl t = m == 1 ? bs : vl_mont(bs, w);
    return vl_csub(nl_pm(as, t, hi), vl_pmul(2));
}

/* DIF stage m in {4, 2, 1} inside a: lanes l & m = 0 get a + b, the others (a - b) w;
 * w: 1@260 in the low lanes, the pair's twiddle in the high ones (ignored for m = 1). */
LANE_INLINE vl nl_dif_in(vl a, unsigned m, vl w)
{
    const __mmask8 hi = nl_hi(m);
    vl y = nl_swap(a, m); /* low lanes: y is b, a + b; high: y is a, y + 2p - b */
    vl v = nl_pm(y, a, hi);
    return vl_csub(m == 1 ? v : vl_mont(v, w), vl_pmul(2));
}

/* The twiddles of the stages inside a lane value: for DIT wt[0] (m = 2) and wt[1]
 * (m = 4) hold tw[m + (l mod m)] in lane l; for DIF the low lanes (l & m = 0) hold
 * tw[1] = 1 instead. */
LANE_INLINE void nl_in_twiddles(vl wt[2], const uint64_t *tw, bool dif)
{
    for (unsigned s = 0; s < 2; s++) {
        const unsigned m = 2u << s;
        unsigned idx[8];
        for (unsigned l = 0; l < 8; l++) idx[l] = dif && !(l & m) ? 1 : m + (l & (m - 1));
        wt[s] = nl_tw_idx(tw, idx);
    }
}

/* In-buffer stages of a block of nb lane values: DIT m = 8 .. 4 nb (elements). Twiddle
 * j-outer: a twiddle value is relimbed once a stage, not once a group. */
LANE_INLINE void nl_block_dit_body(vl *buf, size_t nb, const uint64_t *tw)
{
    vl wt[2];
    nl_in_twiddles(wt, tw, false);
    for (size_t c = 0; c < nb; c++) {
        vl x = nl_dit_in(buf[c], 1, wt[0]);
        x = nl_dit_in(x, 2, wt[0]);
        buf[c] = nl_dit_in(x, 4, wt[1]);
    }
    for (size_t mv = 1; mv < nb; mv *= 2) /* m = 8 mv elements */
        for (size_t jv = 0; jv < mv; jv++) {
            vl w = nl_tw(tw + LANE_W * 8 * (mv + jv));
            for (size_t g = 0; g < nb; g += 2 * mv) nl_bfly(&buf[g + jv], &buf[g + jv + mv], w);
        }
}

LANE_INLINE void nl_block_dif_body(vl *buf, size_t nb, const uint64_t *tw)
{
    vl wt[2];
    for (size_t mv = nb / 2; mv >= 1; mv /= 2)
        for (size_t jv = 0; jv < mv; jv++) {
            vl w = nl_tw(tw + LANE_W * 8 * (mv + jv));
            for (size_t g = 0; g < nb; g += 2 * mv) nl_bfly_dif(&buf[g + jv], &buf[g + jv + mv], w);
        }
    nl_in_twiddles(wt, tw, true);
    for (size_t c = 0; c < nb; c++) {
        vl x = nl_dif_in(buf[c], 4, wt[1]);
        x = nl_dif_in(x, 2, wt[0]);
        buf[c] = nl_dif_in(x, 1, wt[0]);
    }
}

LANE_INLINE void nl_buf_load(vl *buf, const uint64_t *blk, size_t nb)
{
    for (size_t c = 0; c < nb; c++) buf[c] = nl_load(blk + LANE_W * 8 * c);
}

LANE_INLINE void nl_buf_store(uint64_t *blk, const vl *buf, size_t nb)
{
    for (size_t c = 0; c < nb; c++) nl_store(blk + LANE_W * 8 * c, buf[c]);
}

/* A whole block in the stack buffer: DIT (block) or DIF (block_dif) stages. */
LANE_INLINE void nl_block_any(uint64_t *blk, unsigned lb, const uint64_t *tw, bool dif)
{
    vl buf[NTT_LANE_B_MAX / 8];
    const size_t nb = ((size_t)1 << lb) / 8;
    nl_buf_load(buf, blk, nb);
    if (dif)
        nl_block_dif_body(buf, nb, tw);
    else
        nl_block_dit_body(buf, nb, tw);
    nl_buf_store(blk, buf, nb);
}

LANE_FN static void nl_block(uint64_t *blk, unsigned lb, const uint64_t *tw)
{
    nl_block_any(blk, lb, tw, false);
}

LANE_FN static void nl_block_dif(uint64_t *blk, unsigned lb, const uint64_t *tw)
{
    nl_block_any(blk, lb, tw, true);
}

/* One relimbing each way for the three steps (the scalar form passes over memory
 * three times). The scale: x < 2p times tab @260 < 16p, below 1.91p. */
LANE_FN static void nl_block_coset(uint64_t *blk, unsigned lb, const uint64_t *tw_inv, const uint64_t *tab,
                                   const uint64_t *tw)
{
    vl buf[NTT_LANE_B_MAX / 8];
    const size_t nb = ((size_t)1 << lb) / 8;
    nl_buf_load(buf, blk, nb);
    nl_block_dif_body(buf, nb, tw_inv);
    for (size_t c = 0; c < nb; c++) buf[c] = vl_mont(buf[c], nl_tw(tab + LANE_W * 8 * c));
    nl_block_dit_body(buf, nb, tw);
    nl_buf_store(blk, buf, nb);
}

/* Radix-2 stage m = 2^lgm >= 8, butterflies [lo, hi) (multiples of 8): 8 consecutive
 * butterflies share their group, so their elements and twiddles are consecutive. */
LANE_INLINE void nl_stage2_any(uint64_t *v, unsigned lgm, const uint64_t *tw, size_t lo, size_t hi, bool dif)
{
    const size_t m = (size_t)1 << lgm;
    for (size_t k = lo; k < hi; k += 8) {
        size_t j = k & (m - 1), i = ((k >> lgm) << (lgm + 1)) + j;
        uint64_t *pa = v + LANE_W * i, *pb = v + LANE_W * (i + m);
        vl a = nl_load(pa), b = nl_load(pb), w = nl_tw(tw + LANE_W * (m + j));
        if (dif)
            nl_bfly_dif(&a, &b, w);
        else
            nl_bfly(&a, &b, w);
        nl_store(pa, a);
        nl_store(pb, b);
    }
}

/* Stages m and 2m fused (ntt.c's ntt_stage4_any), 8 quadruples at a time. */
LANE_INLINE void nl_stage4_any(uint64_t *v, unsigned lgm, const uint64_t *tw, size_t lo, size_t hi, bool dif)
{
    const size_t m = (size_t)1 << lgm;
    for (size_t k = lo; k < hi; k += 8) {
        size_t j = k & (m - 1), i = ((k >> lgm) << (lgm + 2)) + j;
        uint64_t *p0 = v + LANE_W * i, *p1 = p0 + LANE_W * m, *p2 = p1 + LANE_W * m, *p3 = p2 + LANE_W * m;
        vl x0 = nl_load(p0), x1 = nl_load(p1), x2 = nl_load(p2), x3 = nl_load(p3);
        vl w1 = nl_tw(tw + LANE_W * (m + j)), w2 = nl_tw(tw + LANE_W * (2 * m + j)),
           w3 = nl_tw(tw + LANE_W * (3 * m + j));
        if (dif) {
            nl_bfly_dif(&x0, &x2, w2);
            nl_bfly_dif(&x1, &x3, w3);
            nl_bfly_dif(&x0, &x1, w1);
            nl_bfly_dif(&x2, &x3, w1);
        } else {
            nl_bfly(&x0, &x1, w1);
            nl_bfly(&x2, &x3, w1);
            nl_bfly(&x0, &x2, w2);
            nl_bfly(&x1, &x3, w3);
        }
        nl_store(p0, x0);
        nl_store(p1, x1);
        nl_store(p2, x2);
        nl_store(p3, x3);
    }
}

LANE_FN static void nl_stage2(uint64_t *v, unsigned lgm, const uint64_t *tw, size_t lo, size_t hi)
{
    nl_stage2_any(v, lgm, tw, lo, hi, false);
}

LANE_FN static void nl_stage2_dif(uint64_t *v, unsigned lgm, const uint64_t *tw, size_t lo, size_t hi)
{
    nl_stage2_any(v, lgm, tw, lo, hi, true);
}

LANE_FN static void nl_stage4(uint64_t *v, unsigned lgm, const uint64_t *tw, size_t lo, size_t hi)
{
    nl_stage4_any(v, lgm, tw, lo, hi, false);
}

LANE_FN static void nl_stage4_dif(uint64_t *v, unsigned lgm, const uint64_t *tw, size_t lo, size_t hi)
{
    nl_stage4_any(v, lgm, tw, lo, hi, true);
}

/* v[i] *= s: x < p times s @260 < 16p, below 1.19p */
LANE_FN static void nl_scale(uint64_t *v, const uint64_t *s, size_t lo, size_t hi)
{
    const vl w = nl_bcast(s);
    for (size_t i = lo; i < hi; i += 8) nl_store(v + LANE_W * i, vl_mont(nl_load(v + LANE_W * i), w));
}

const struct ntt_kernels NTT_LANES_TABLE = { nl_block,     nl_stage2,     nl_stage4,     nl_scale,
                                             nl_block_dif, nl_stage2_dif, nl_stage4_dif, nl_block_coset };

/* a = from_mont(a·b - c): a·(b shifted, < 16p) is a·b@256 below 1.19p; plus p less c in
 * (0, 2.19p); the product by the integer 16 (1@4) divides by 2^256, leaving the plain
 * integer, below p + 1: less p where possible. */
LANE_FN void NTT_LANES_H(uint64_t *a, const uint64_t *b, const uint64_t *c, size_t count)
{
    const uint64_t sixteen[LANE_N] = { 16 };
    const vl k16 = vl_const(sixteen), P1 = vl_pmul(1);
    for (size_t i = 0; i + 8 <= count; i += 8) {
        vl x = vl_mont(nl_load(a + LANE_W * i), nl_tw(b + LANE_W * i));
        x = vl_mont(vl_sub_plus(x, nl_load(c + LANE_W * i), P1), k16);
        nl_store(a + LANE_W * i, x);
    }
}

/* out[i] = x0·w^i for i < count (a multiple of 8; x0, w canonical): the first 8 (or
 * 32) by field.h, then each lane a step of w^8 (w^32) a lane product (x < 2p times the
 * step @260 < 16p, below 1.91p). Four chains side by side hide the product's latency.
 * Each value is the same field element as the serial product's, made canonical: the
 * same bits. */
LANE_FN void NTT_LANES_POW(uint64_t *out, const uint64_t *x0, const uint64_t *w, size_t count)
{
    enum { C = 4 };
    const size_t chains = count % (8 * C) ? 1 : C, first = 8 * chains;
    uint64_t wk[LANE_W];
    fe_copy(LANE_F, out, x0);
    for (size_t i = 1; i < first; i++) fe_mul(LANE_F, out + LANE_W * i, out + LANE_W * (i - 1), w);
    fe_copy(LANE_F, wk, LANE_F->one);
    for (size_t i = 0; i < first; i++) fe_mul(LANE_F, wk, wk, w); /* the step w^first */
    const vl st = nl_bcast(wk);
    vl cur[C];
    for (size_t c = 0; c < chains; c++) cur[c] = nl_load(out + LANE_W * 8 * c);
    for (size_t i = first; i < count; i += first)
        for (size_t c = 0; c < chains; c++) {
            cur[c] = vl_mont(cur[c], st);
            nl_store(out + LANE_W * (i + 8 * c), cur[c]);
        }
}
