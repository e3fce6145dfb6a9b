// msm_impl.cuh — Pippenger MSM on the GPU: the plan and each thread's work are in
// msm_logic.h (tested on the CPU by tests/unit/test_gpu_emul.c); here are the launches,
// the CUB sort/scan/reduce, the scratch sizes and the chunking. Included by one .cu
// per group (msm_g1_bn254.cu, ...) so the four instances compile in parallel; the CUB
// primitives are instantiated once, in msm.cu (gpu_sort_pairs_u32, ...).
#ifndef CUZK_CUDA_MSM_IMPL_CUH
#define CUZK_CUDA_MSM_IMPL_CUH
#include "cuda_util.h"
#include "msm_logic.h"

/* Threads per block of the per-item kernels (digits, run starts, heads, scatter): each
 * thread works alone (no shared memory, no block-wide step), so any multiple of the
 * warp size up to the hardware's 1024 is correct; 256 keeps 8 blocks resident per SM on
 * sm_80/sm_90 (2048 threads) with room for the register use of the G2 scatter. */
#define GMSM_BLOCK 256u
#if GMSM_BLOCK < 32 || GMSM_BLOCK > 1024 || GMSM_BLOCK % 32
#error "GMSM_BLOCK: a multiple of the warp size (32), at most 1024 threads per block"
#endif

// ---- kernels: one thread each, bounds-checked, calling the logic ----------------

static __global__ void k_digits(size_t count, unsigned c, const uint64_t *scalars, uint32_t *keys,
                                uint32_t *vals)
{
    size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    if (i < count) gmsm_digits_thread(i, count, c, scalars, keys, vals);
}

static __global__ void k_nvalid(size_t n, const uint32_t *keys, uint32_t sentinel, uint32_t *nvalid)
{
    size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    if (i < n) gmsm_nvalid_thread(i, n, keys, sentinel, nvalid);
}

static __global__ void k_run_start(size_t n, const uint32_t *keys, uint32_t *key_start, uint32_t *distinct)
{
    size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    if (i < n) gmsm_run_start_thread(i, keys, key_start, distinct);
}

static __global__ void k_head(size_t n, const uint32_t *keys, const uint32_t *key_start, uint32_t *flags)
{
    size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    if (i < n) gmsm_head_thread(i, keys, key_start, flags);
}

static __global__ void k_seg_write(size_t n, const uint32_t *flags, const uint32_t *segid,
                                   const uint32_t *keys, uint32_t *seg_first, uint32_t *seg_key)
{
    size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    if (i < n) gmsm_seg_write_thread(i, n, flags, segid, keys, seg_first, seg_key);
}

template <int G>
static __global__ void k_sum_bases(size_t nseg, const uint32_t *seg_first, const uint32_t *vals,
                                   const uint64_t *bases, uint64_t *out)
{
    size_t s = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    if (s < nseg) gmsm_sum_bases_thread((enum curve_id)G, s, seg_first, vals, bases, out);
}

template <int G>
static __global__ void k_sum_jac(size_t nseg, const uint32_t *seg_first, const uint64_t *in, uint64_t *out)
{
    size_t s = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    if (s < nseg) gmsm_sum_jac_thread((enum curve_id)G, s, seg_first, in, out);
}

template <int G>
static __global__ void k_scatter(size_t nseg, const uint32_t *seg_key, const uint64_t *pts, uint64_t *buckets)
{
    size_t s = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    if (s < nseg) gmsm_scatter_thread((enum curve_id)G, s, seg_key, pts, buckets);
}

template <int G>
static __global__ void k_reduce_range(size_t nt, uint32_t nb, uint32_t nr, const uint64_t *buckets,
                                      uint64_t *out, uint64_t *scratch)
{
    size_t t = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    if (t < nt) gmsm_reduce_range_thread((enum curve_id)G, t, nb, nr, buckets, out, scratch);
}

template <int G>
static __global__ void k_window_tree(size_t nt, uint32_t nr, uint32_t half, uint64_t *ranges, uint64_t *win)
{
    size_t t = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    if (t < nt) gmsm_window_tree_thread((enum curve_id)G, t, nr, half, ranges, win);
}

// ---- one chunk ----------------------------------------------------------------------

template <int G>
static int msm_chunk(uint64_t *result, const uint64_t *bases, const uint64_t *scalars, size_t count,
                     cudaStream_t s, cudaEvent_t done, char *err, size_t errlen)
{
    const enum curve_id g = (enum curve_id)G;
    const unsigned cl = ec_cl_id(g), c = gmsm_window_bits(count), nwin = gmsm_nwin(c);
    const uint32_t nb = gmsm_nbuckets(c), nkeys = nwin * nb, nr = gmsm_nranges(c);
    const size_t N = (size_t)nwin * count, cap = gmsm_seg_cap(N, nkeys), jac = 3 * cl * 8;
    unsigned end_bit = 1;
    while (end_bit < 32 && ((uint64_t)1 << end_bit) <= nkeys) end_bit++; // keys 0 .. nkeys (sentinel)

    DevBuf keys_in, vals_in, keys, vals, flags, segid, distinct, seg_first, seg_key, key_start, pa, pb,
        buckets, ranges, rscratch, win, cnt, temp;
    CK(keys_in.alloc(4 * N, s));
    CK(vals_in.alloc(4 * N, s));
    CK(keys.alloc(4 * N, s));
    CK(vals.alloc(4 * N, s));
    CK(flags.alloc(4 * N, s));
    CK(segid.alloc(4 * N, s));
    CK(distinct.alloc(4 * N, s));
    CK(seg_first.alloc(4 * (cap + 1), s));
    CK(seg_key.alloc(4 * cap, s));
    CK(key_start.alloc(4 * (size_t)nkeys, s));
    CK(pa.alloc(cap * jac, s));
    CK(pb.alloc(cap * jac, s));
    CK(buckets.alloc((size_t)nkeys * jac, s));
    CK(ranges.alloc((size_t)nwin * nr * jac, s));
    CK(rscratch.alloc((size_t)2 * nwin * nr * jac, s));
    CK(win.alloc((size_t)nwin * jac, s));
    CK(cnt.alloc(16, s));

    // CUB temp storage: the largest of the sort, the scan and the reduction
    size_t tb_sort = 0, tb_scan = 0, tb_red = 0;
    CK(gpu_sort_pairs_u32(nullptr, tb_sort, keys_in.as<uint32_t>(), keys.as<uint32_t>(),
                          vals_in.as<uint32_t>(), vals.as<uint32_t>(), (int)N, 0, (int)end_bit, s));
    CK(gpu_exclusive_sum_u32(nullptr, tb_scan, flags.as<uint32_t>(), segid.as<uint32_t>(), (int)N, s));
    CK(gpu_sum_u32(nullptr, tb_red, distinct.as<uint32_t>(), cnt.as<uint32_t>(), (int)N, s));
    size_t tb = tb_sort > tb_scan ? tb_sort : tb_scan;
    if (tb_red > tb) tb = tb_red;
    CK(temp.alloc(tb, s));

    // 1-2: digits, sort
    k_digits<<<gpu_grid(count, GMSM_BLOCK), GMSM_BLOCK, 0, s>>>(count, c, scalars, keys_in.as<uint32_t>(),
                                                                vals_in.as<uint32_t>());
    CK_LAUNCH("digits");
    size_t tbx = tb;
    CK(gpu_sort_pairs_u32(temp.p, tbx, keys_in.as<uint32_t>(), keys.as<uint32_t>(), vals_in.as<uint32_t>(),
                          vals.as<uint32_t>(), (int)N, 0, (int)end_bit, s));
    CK(cudaMemsetAsync(cnt.p, 0, 16, s));
    k_nvalid<<<gpu_grid(N, GMSM_BLOCK), GMSM_BLOCK, 0, s>>>(N, keys.as<uint32_t>(), nkeys,
                                                            cnt.as<uint32_t>());
    CK_LAUNCH("nvalid");
    uint32_t nvalid = 0;
    CK(cudaMemcpyAsync(&nvalid, cnt.p, 4, cudaMemcpyDeviceToHost, s));
    CK(cudaStreamSynchronize(s));
    if (nvalid > N) {
        snprintf(err, errlen, "GPU MSM: %u valid pairs out of %zu (a kernel bug)", nvalid, N);
        return -CUZK_E_INTERNAL;
    }
    CK(cudaMemsetAsync(buckets.p, 0, (size_t)nkeys * jac, s)); // all-zero limbs = infinity

    // 3: segmented sums, level by level
    size_t n = nvalid, ndistinct = 0;
    uint32_t *lkeys = keys.as<uint32_t>();
    uint64_t *cur = pa.as<uint64_t>(), *nxt = pb.as<uint64_t>();
    size_t nseg = 0;
    for (int level = 0; n > 0; level++) {
        if (level > 40) {
            snprintf(err, errlen, "GPU MSM: bucket sums did not converge (a kernel bug)");
            return -CUZK_E_INTERNAL;
        }
        unsigned gr = gpu_grid(n, GMSM_BLOCK);
        k_run_start<<<gr, GMSM_BLOCK, 0, s>>>(n, lkeys, key_start.as<uint32_t>(), distinct.as<uint32_t>());
        CK_LAUNCH("run_start");
        if (level == 0) {
            tbx = tb;
            CK(gpu_sum_u32(temp.p, tbx, distinct.as<uint32_t>(), cnt.as<uint32_t>(), (int)n, s));
            uint32_t nd = 0;
            CK(cudaMemcpyAsync(&nd, cnt.p, 4, cudaMemcpyDeviceToHost, s));
            CK(cudaStreamSynchronize(s));
            ndistinct = nd;
        }
        k_head<<<gr, GMSM_BLOCK, 0, s>>>(n, lkeys, key_start.as<uint32_t>(), flags.as<uint32_t>());
        CK_LAUNCH("head");
        tbx = tb;
        CK(gpu_exclusive_sum_u32(temp.p, tbx, flags.as<uint32_t>(), segid.as<uint32_t>(), (int)n, s));
        k_seg_write<<<gr, GMSM_BLOCK, 0, s>>>(n, flags.as<uint32_t>(), segid.as<uint32_t>(), lkeys,
                                              seg_first.as<uint32_t>(), seg_key.as<uint32_t>());
        CK_LAUNCH("seg_write");
        uint32_t last[2] = { 0, 0 };
        CK(cudaMemcpyAsync(&last[0], segid.as<uint32_t>() + n - 1, 4, cudaMemcpyDeviceToHost, s));
        CK(cudaMemcpyAsync(&last[1], flags.as<uint32_t>() + n - 1, 4, cudaMemcpyDeviceToHost, s));
        CK(cudaStreamSynchronize(s));
        nseg = (size_t)last[0] + last[1];
        if (nseg > cap || nseg < ndistinct) {
            snprintf(err, errlen, "GPU MSM: %zu segments (cap %zu, %zu keys): a kernel bug", nseg, cap,
                     ndistinct);
            return -CUZK_E_INTERNAL;
        }
        if (level == 0) {
            k_sum_bases<G><<<gpu_grid(nseg, 128), 128, 0, s>>>(nseg, seg_first.as<uint32_t>(),
                                                               vals.as<uint32_t>(), bases, cur);
            CK_LAUNCH("sum_bases");
        } else {
            k_sum_jac<G><<<gpu_grid(nseg, 128), 128, 0, s>>>(nseg, seg_first.as<uint32_t>(), cur, nxt);
            CK_LAUNCH("sum_jac");
            uint64_t *t = cur;
            cur = nxt;
            nxt = t;
        }
        if (nseg == ndistinct) break; // one segment per key: the bucket sums
        // the next level's keys: this level's segment keys (keys_in is free now)
        CK(cudaMemcpyAsync(keys_in.p, seg_key.p, 4 * nseg, cudaMemcpyDeviceToDevice, s));
        lkeys = keys_in.as<uint32_t>();
        n = nseg;
    }
    // 4: scatter into the dense buckets
    if (nvalid > 0) {
        k_scatter<G><<<gpu_grid(nseg, GMSM_BLOCK), GMSM_BLOCK, 0, s>>>(nseg, seg_key.as<uint32_t>(), cur,
                                                                       buckets.as<uint64_t>());
        CK_LAUNCH("scatter");
    }
    // 5: reduction
    size_t nt = (size_t)nwin * nr;
    k_reduce_range<G><<<gpu_grid(nt, 64), 64, 0, s>>>(nt, nb, nr, buckets.as<uint64_t>(),
                                                      ranges.as<uint64_t>(), rscratch.as<uint64_t>());
    CK_LAUNCH("reduce_range");
    // the windows' sums: a tree over each window's ranges (msm_logic.h)
    for (uint32_t half = nr / 2; half >= 1; half /= 2) {
        size_t nth = (size_t)nwin * half;
        k_window_tree<G>
            <<<gpu_grid(nth, 64), 64, 0, s>>>(nth, nr, half, ranges.as<uint64_t>(), win.as<uint64_t>());
        CK_LAUNCH("window_tree");
    }
    if (nr == 1) {
        k_window_tree<G>
            <<<gpu_grid(nwin, 64), 64, 0, s>>>(nwin, nr, 0, ranges.as<uint64_t>(), win.as<uint64_t>());
        CK_LAUNCH("window_copy");
    }
    uint64_t hwin[(256 / 4 + 1) * EC_MAX_JAC];
    CK(cudaMemcpyAsync(hwin, win.p, (size_t)nwin * jac, cudaMemcpyDeviceToHost, s));
    if (done) CK(cudaEventRecord(done, s)); // the device's last step (the host combines below)
    CK(cudaStreamSynchronize(s));
    // 6: windows on the host
    gmsm_combine(g, c, hwin, result);
    return 0;
}

template <int G>
static int msm_all(uint64_t *result, const uint64_t *bases, const uint64_t *scalars, size_t count,
                   unsigned sharers, cudaStream_t s, cudaEvent_t done, char *err, size_t errlen)
{
    const enum curve_id g = (enum curve_id)G;
    const unsigned cl = ec_cl_id(g);
    ec_jac_set_inf_id(g, result);
    if (count == 0) {
        if (done) CK(cudaEventRecord(done, s));
        return 0;
    }
    // chunk: at most 2^24 points, and this caller's share of the free device memory
    // (gmsm_chunk_points: the sharers of one device read the same figure and must not
    // each take 70% of it)
    size_t fr = 0, tot = 0;
    CK(gpu_free_bytes(&fr, &tot));
    size_t chunk = gmsm_chunk_points(cl, count, fr, sharers);
    for (size_t lo = 0; lo < count; lo += chunk) {
        size_t m = count - lo < chunk ? count - lo : chunk;
        uint64_t part[EC_MAX_JAC];
        int rc = msm_chunk<G>(part, bases + lo * 2 * cl, scalars + lo * GMSM_SCALAR_LIMBS, m, s, done, err,
                              errlen);
        if (rc) return rc;
        ec_add_id(g, result, result, part);
    }
    return 0;
}

#endif
