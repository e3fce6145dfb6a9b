/* msm.h — multi-scalar multiplication on G1 and G2 (host, pthreads).
 *
 * result = sum_i scalars[i] * bases[i] by Pippenger's bucket method with signed
 * window digits (zk/msm.c explains the plan and the window-size measurements).
 * One generic body, specialised per group through CURVE_DISPATCH, serves G1 and G2
 * of BN254 and BLS12-381. */
#ifndef CUZK_MSM_H
#define CUZK_MSM_H

#include <stddef.h>
#include <stdint.h>

#include "zk/curve.h"

/* result = sum_i scalars[i] * bases[i], as a jacobian point (3*cl limbs, Montgomery).
 * bases: count affine points in zkey layout (2*cl limbs each, 8*2*cl bytes), possibly
 *        misaligned (zkey sections are only 4-byte aligned: load with memcpy); (0,0) = infinity.
 * scalars: count canonical (NOT Montgomery) little-endian integers < r, scalar_bytes each (32).
 *        (Larger integers, up to 8*scalar_bytes bits, are multiplied exactly too.)
 * threads: worker threads to use (0 = number of online CPUs). Returns 0, -ENOMEM, -EINVAL
 * (NULL group/result, NULL arrays with count > 0, scalar_bytes 0 or > 64); result is
 * untouched on failure. Count 0 gives infinity. */
int msm_run(const curve_group *G, uint64_t *result, const uint8_t *bases, const uint8_t *scalars,
            size_t count, size_t scalar_bytes, unsigned threads);

/* msm_run with the window width forced to c bits (1 <= c <= MSM_MAX_WINDOW; 0 picks it
 * from the input as msm_run does). For tuning (bench/msm_ntt.c) and tests. */
#define MSM_MAX_WINDOW 20
int msm_run_window(const curve_group *G, uint64_t *result, const uint8_t *bases, const uint8_t *scalars,
                   size_t count, size_t scalar_bytes, unsigned threads, unsigned c);

/* How buckets accumulate: jacobian points with mixed additions, or affine points with
 * batched additions sharing one inversion (zk/msm.c); AUTO picks by group and size. */
enum msm_buckets { MSM_BUCKETS_AUTO, MSM_BUCKETS_JACOBIAN, MSM_BUCKETS_AFFINE };

/* msm_run_window with the bucket form forced (tests, bench). */
int msm_run_opts(const curve_group *G, uint64_t *result, const uint8_t *bases, const uint8_t *scalars,
                 size_t count, size_t scalar_bytes, unsigned threads, unsigned c, enum msm_buckets mode);

/* GLV (curve.h ec_glv_split): each term k P as k1 P + k2 phi(P) with 128-bit k1, k2.
 * AUTO takes it from a size on (zk/msm.c MSM_GLV_MIN); ON takes it at any size (tests);
 * either way only when every scalar is below r, else the plain path runs. */
enum msm_glv { MSM_GLV_AUTO, MSM_GLV_OFF, MSM_GLV_ON };

/* msm_run_opts with the GLV choice forced (tests, bench). Same results and errors. */
int msm_run_ext(const curve_group *G, uint64_t *result, const uint8_t *bases, const uint8_t *scalars,
                size_t count, size_t scalar_bytes, unsigned threads, unsigned c, enum msm_buckets mode,
                enum msm_glv glv);

/* One GLV split of a scalar vector for several MSMs over it (Groth16's A, B1 and B2 take
 * the witness, C a suffix of it): msm_split_make splits scalars[0 .. count) once
 * (*out = NULL, and 0, when GLV does not apply: too few terms, or a scalar not below
 * r); msm_run_split is msm_run over scalars[0 .. count) and bases, the split's entries
 * from first on standing for those scalars (so scalars must be the split's own from
 * first on). A split made on G serves G1 and G2 of G's curve (same lambda); with
 * sp NULL or not fitting it is msm_run. Bases at infinity and zero scalars are
 * dropped by each MSM as msm_run does. */
typedef struct msm_split msm_split;
int msm_split_make(const curve_group *G, msm_split **out, const uint8_t *scalars, size_t count,
                   size_t scalar_bytes, unsigned threads);
int msm_run_split(const curve_group *G, uint64_t *result, const uint8_t *bases, const uint8_t *scalars,
                  size_t count, size_t scalar_bytes, const msm_split *sp, size_t first, unsigned threads);
void msm_split_free(msm_split *sp);

/* Fixed-base MSM (zk/msm_fixed.c): a table of the window multiples 2^(cw) P_i of count
 * bases, for a long-lived caller that runs many MSMs over the same bases. Its memory is
 * W = (bits of (r-1)/2)/c + 1 times the bases' (msm_table_bytes); building it costs
 * that many points a base, by doublings.
 * msm_table_window: the window c the cost model takes for a table of count bases
 * within max_bytes, or 0 where no table fits or none would run cheaper than msm_run.
 * msm_table_build: the table (c = 0: the model's cheapest window, paying or not); bases
 * as msm_run's, and they must stay mapped and unchanged while the table is used.
 * msm_run_table: msm_run over the table's bases (count must be the table's); the same
 * result, and scalars at or above r take msm_run's path. 0, -EINVAL, -ENOMEM. */
typedef struct msm_table msm_table;
unsigned msm_table_window(const curve_group *G, size_t count, size_t max_bytes);
int msm_table_build(const curve_group *G, msm_table **out, const uint8_t *bases, size_t count, unsigned c,
                    unsigned threads);
int msm_run_table(const msm_table *t, uint64_t *result, const uint8_t *scalars, size_t count,
                  size_t scalar_bytes, unsigned threads);
size_t msm_table_bytes(const msm_table *t);
unsigned msm_table_c(const msm_table *t);
void msm_table_free(msm_table *t);

/* The naive sum (double-and-add per term) — test reference only. */
int msm_naive(const curve_group *G, uint64_t *result, const uint8_t *bases, const uint8_t *scalars,
              size_t count, size_t scalar_bytes);

#endif
