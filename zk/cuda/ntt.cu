// ntt.cu — NTTs over Fr and the h = a·b - c step on the GPU. Each thread's work is in
// ntt_logic.h (tested on the CPU by tests/unit/test_gpu_emul.c); here are the tables
// (built on the host with the roots of zk/ntt.c) and the launches.
#include <stdlib.h>

#include "cuda_util.h"
#include "ntt_logic.h"

/* Threads per block of the NTT's element-wise kernels (bit reversal, butterflies of
 * one stage, coset scaling, h): each thread works alone, so any warp multiple up to
 * 1024 is correct; 256 gives full occupancy on sm_80/sm_90 for these register-light
 * kernels, which are bound by memory bandwidth, not by the block shape. */
#define GNTT_THREADS 256u
#if GNTT_THREADS < 32 || GNTT_THREADS > 1024 || GNTT_THREADS % 32
#error "GNTT_THREADS: a multiple of the warp size (32), at most 1024 threads per block"
#endif

struct fe4p {
    uint64_t l[4]; // a field element passed by value to a kernel
};

__global__ void k_bitrev(size_t n, unsigned lg, uint64_t *v)
{
    size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    if (i < n) gntt_bitrev_thread(i, lg, v);
}

// Stages lgm = 0 .. blg-1 of each aligned block of 2^blg elements in shared memory;
// blockDim.x = 2^(blg-1) threads (<= 512), one butterfly each per stage. The launch
// bound makes ptxas keep registers within what 512 threads per block can have.
template <int F>
__global__ void __launch_bounds__(1u << (GNTT_BLOCK_LG - 1))
    k_block_stages(uint64_t *v, const uint64_t *tw, unsigned blg)
{
    extern __shared__ uint64_t sh[];
    const size_t bs = (size_t)1 << blg, base = blockIdx.x * bs;
    const unsigned t = threadIdx.x;
    gntt_block_copy_thread(base, t, bs, sh, v, true);
    __syncthreads();
    for (unsigned lgm = 0; lgm < blg; lgm++) {
        gntt_bfly_thread((enum field_id)F, t, lgm, sh, tw);
        __syncthreads();
    }
    gntt_block_copy_thread(base, t, bs, sh, v, false);
}

template <int F> __global__ void k_stage(size_t half, unsigned lgm, uint64_t *v, const uint64_t *tw)
{
    size_t k = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    if (k < half) gntt_bfly_thread((enum field_id)F, k, lgm, v, tw);
}

template <int F> __global__ void k_scale(size_t n, uint64_t *v, fe4p s)
{
    size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    if (i < n) gntt_scale_thread((enum field_id)F, i, v, s.l);
}

template <int F> __global__ void k_mul_table(size_t n, uint64_t *v, const uint64_t *table)
{
    size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    if (i < n) gntt_mul_table_thread((enum field_id)F, i, v, table);
}

template <int F> __global__ void k_h(size_t n, uint64_t *a, const uint64_t *b, const uint64_t *c)
{
    size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    if (i < n) gntt_h_thread((enum field_id)F, i, a, b, c);
}

// ---- tables ---------------------------------------------------------------------

template <int F>
static void tables_host(uint64_t *tw, uint64_t *twi, uint64_t *cs, const uint64_t *omega,
                        const uint64_t *omega_inv, const uint64_t *coset, const uint64_t *ninv, unsigned lg)
{
    gntt_twiddles((enum field_id)F, tw, omega, lg);
    gntt_twiddles((enum field_id)F, twi, omega_inv, lg);
    gntt_coset_table((enum field_id)F, cs, coset, ninv, lg);
}

void gpu_ntt_tables_free(gpu_ntt_tables *t)
{
    if (!t) return;
    if (t->tw) (void)cudaFree(t->tw);
    if (t->twi) (void)cudaFree(t->twi);
    if (t->cs) (void)cudaFree(t->cs);
    t->tw = t->twi = t->cs = nullptr;
}

// The roots are zk/ntt.c's (fr_root_of_unity: snarkjs's w[lg], coset = w[lg+1]).
static int tables_build(gpu_ntt_tables *t, const field_desc *Fr, unsigned lg, uint64_t *h, cudaStream_t s,
                        char *err, size_t errlen)
{
    const size_t n = (size_t)1 << lg;
    uint64_t omega[4], omega_inv[4], coset[4], nn[4] = { (uint64_t)n, 0, 0, 0 }, x[4];
    if (fr_root_of_unity(Fr, lg, omega) || fr_root_of_unity(Fr, lg + 1, coset)) {
        snprintf(err, errlen, "GPU NTT: no 2^%u-th roots of unity in %s", lg + 1, Fr->name);
        return -CUZK_E_UNSUPPORTED;
    }
    fe_inv(Fr, omega_inv, omega);
    fe_to_mont(Fr, x, nn);
    fe_inv(Fr, t->ninv, x);
    uint64_t *tw = h, *twi = h + 4 * n, *cs = h + 8 * n;
    if (Fr->id == FIELD_ID_BN254_FR)
        tables_host<FIELD_ID_BN254_FR>(tw, twi, cs, omega, omega_inv, coset, t->ninv, lg);
    else
        tables_host<FIELD_ID_BLS12_381_FR>(tw, twi, cs, omega, omega_inv, coset, t->ninv, lg);
    // the pool's idle reserve trimmed and one more try on out-of-memory, before the
    // caller evicts a circuit for room
    CK(gpu_malloc_trim((void **)&t->tw, 32 * n));
    CK(gpu_malloc_trim((void **)&t->twi, 32 * n));
    CK(gpu_malloc_trim((void **)&t->cs, 32 * n));
    int rc;
    if ((rc = gpu_upload(t->tw, tw, 32 * n, s, err, errlen)) ||
        (rc = gpu_upload(t->twi, twi, 32 * n, s, err, errlen)) ||
        (rc = gpu_upload(t->cs, cs, 32 * n, s, err, errlen)))
        return rc;
    return 0;
}

int gpu_ntt_tables_build(gpu_ntt_tables *t, const field_desc *Fr, unsigned lg, cudaStream_t s, char *err,
                         size_t errlen)
{
    memset(t, 0, sizeof *t);
    if (Fr->id != FIELD_ID_BN254_FR && Fr->id != FIELD_ID_BLS12_381_FR) {
        snprintf(err, errlen, "GPU NTT: %s is not a scalar field", Fr->name);
        return -CUZK_E_UNSUPPORTED;
    }
    if (lg > 27) { // BN254's 2-adicity is 28 and the coset needs w[lg+1]
        snprintf(err, errlen, "GPU NTT: domain 2^%u is too large", lg);
        return -CUZK_E_UNSUPPORTED;
    }
    t->f = Fr->id;
    t->lg = lg;
    uint64_t *h = (uint64_t *)malloc(3 * 32 * ((size_t)1 << lg));
    if (!h) {
        snprintf(err, errlen, "GPU NTT: out of host memory for the 2^%u tables", lg);
        return -CUZK_E_INTERNAL;
    }
    int rc = tables_build(t, Fr, lg, h, s, err, errlen);
    free(h);
    if (rc) gpu_ntt_tables_free(t);
    return rc;
}

// ---- transforms -------------------------------------------------------------------

template <int F>
static int dit(const gpu_ntt_tables *t, uint64_t *v, const uint64_t *tw, cudaStream_t s, char *err,
               size_t errlen)
{
    const unsigned lg = t->lg;
    const size_t n = (size_t)1 << lg;
    if (lg == 0) return 0;
    k_bitrev<<<gpu_grid(n, GNTT_THREADS), GNTT_THREADS, 0, s>>>(n, lg, v);
    CK_LAUNCH("bitrev");
    const unsigned blg = lg < GNTT_BLOCK_LG ? lg : GNTT_BLOCK_LG;
    const size_t bs = (size_t)1 << blg;
    k_block_stages<F><<<(unsigned)(n / bs), (unsigned)(bs / 2), bs * GNTT_LIMBS * 8, s>>>(v, tw, blg);
    CK_LAUNCH("block_stages");
    for (unsigned lgm = blg; lgm < lg; lgm++) {
        k_stage<F><<<gpu_grid(n / 2, GNTT_THREADS), GNTT_THREADS, 0, s>>>(n / 2, lgm, v, tw);
        CK_LAUNCH("stage");
    }
    return 0;
}

template <int F>
static int ntt_op(const gpu_ntt_tables *t, uint64_t *v, int op, cudaStream_t s, char *err, size_t errlen)
{
    const size_t n = (size_t)1 << t->lg;
    int rc;
    if (op == GPU_NTT_FORWARD) return dit<F>(t, v, t->tw, s, err, errlen);
    if ((rc = dit<F>(t, v, t->twi, s, err, errlen))) return rc;
    if (op == GPU_NTT_INVERSE) {
        fe4p ni;
        memcpy(ni.l, t->ninv, sizeof ni.l);
        k_scale<F><<<gpu_grid(n, GNTT_THREADS), GNTT_THREADS, 0, s>>>(n, v, ni);
        CK_LAUNCH("scale");
        return 0;
    }
    k_mul_table<F><<<gpu_grid(n, GNTT_THREADS), GNTT_THREADS, 0, s>>>(n, v, t->cs);
    CK_LAUNCH("coset");
    return dit<F>(t, v, t->tw, s, err, errlen);
}

int gpu_ntt_device(const gpu_ntt_tables *t, uint64_t *v, int op, cudaStream_t s, char *err, size_t errlen)
{
    if (op != GPU_NTT_FORWARD && op != GPU_NTT_INVERSE && op != GPU_NTT_ODD_COSET) {
        snprintf(err, errlen, "GPU NTT: unknown operation %d", op);
        return -CUZK_E_INTERNAL;
    }
    if (t->f == FIELD_ID_BN254_FR) return ntt_op<FIELD_ID_BN254_FR>(t, v, op, s, err, errlen);
    return ntt_op<FIELD_ID_BLS12_381_FR>(t, v, op, s, err, errlen);
}

int gpu_h_device(enum field_id f, size_t n, uint64_t *a, const uint64_t *b, const uint64_t *c, cudaStream_t s,
                 char *err, size_t errlen)
{
    if (n == 0) return 0;
    if (f == FIELD_ID_BN254_FR)
        k_h<FIELD_ID_BN254_FR><<<gpu_grid(n, GNTT_THREADS), GNTT_THREADS, 0, s>>>(n, a, b, c);
    else
        k_h<FIELD_ID_BLS12_381_FR><<<gpu_grid(n, GNTT_THREADS), GNTT_THREADS, 0, s>>>(n, a, b, c);
    CK_LAUNCH("h");
    return 0;
}
