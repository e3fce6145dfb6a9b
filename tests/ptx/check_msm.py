"""check_msm.py PTX CACHE GROUP [MUTANTS] — one zk/cuda/msm_GROUP.cu's kernels run from their
PTX through the whole MSM pipeline of msm_impl.cuh's msm_chunk: k_digits, CUB's pair
sort (here Python's stable sort), k_nvalid, the levels of k_run_start / CUB's sum /
k_head / CUB's exclusive scan / k_seg_write / k_sum_bases then k_sum_jac, k_scatter,
k_reduce_range and k_window_tree, the windows combined on the host (here in Python);
the result against an affine MSM in Python (ref.py). The points include infinity, a
repeated point (a doubling inside a bucket) and a negated one (a sum that cancels), and
enough scalars of 1 to make a bucket of more than one segment (k_sum_jac's level). The
reduction runs twice: with gmsm_nranges' plan (one range per window at this size) and
with 4 ranges per window (the small multiples and the window tree's passes). MUTANTS:
that many planted carry mutants in the point formulas, each through the pipeline."""

import os
import random
import re
import struct
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ptxrt  # noqa: E402
from mutants import carry_lines, mutant  # noqa: E402
from ref import Field, curve, limbs, unlimbs  # noqa: E402

SEG = 32
NEG = 1 << 31


def window_bits(count):  # msm_logic.h's plan, host side
    lg = 0
    while lg < 40 and (1 << (lg + 1)) <= count:
        lg += 1
    return min(max(lg - 4 if lg > 4 else 1, 4), 16)


def nranges(c):
    return max(1, min(256, (1 << (c - 1)) // 16))


class Msm:
    def __init__(self, mod, group, text):
        self.mod, self.group = mod, group
        self.C, fname, self.r = curve(group)
        self.F = Field(fname)
        self.deg = self.C.F.deg
        self.cl = self.deg * self.F.n
        self.k = {}
        for base in ("digits", "nvalid", "run_start", "head", "seg_write", "sum_bases", "sum_jac", "scatter",
                     "reduce_range", "window_tree"):
            m = re.search(r"\.entry (_Z\d+k_%s\w*)\(" % base, text)
            self.k[base] = m.group(1)

    def enc(self, P):
        """affine point -> limbs (Montgomery), infinity (0, 0)"""
        if P is None:
            return [0] * (2 * self.cl)
        return [l for c in P for x in self.C.F.coords(c) for l in limbs(self.F.to_mont(x), self.F.n)]

    def dec_jac(self, v):
        """jacobian limbs (Montgomery) -> affine point"""
        n, F = self.F.n, self.C.F
        co = [self.F.from_mont(unlimbs(v[i * n:(i + 1) * n])) for i in range(3 * self.deg)]
        X, Y, Z = (co[0:self.deg], co[self.deg:2 * self.deg], co[2 * self.deg:])
        X, Y, Z = [t[0] if self.deg == 1 else tuple(t) for t in (X, Y, Z)]
        if Z == F.zero:
            return None
        zi = F.inv(Z)
        zi2 = F.mul(zi, zi)
        return (F.mul(X, zi2), F.mul(Y, F.mul(zi2, zi)))

    def run(self, bases, scalars, nr_override=None):
        d = ptxrt.Device(self.mod, size=1 << 24)
        cl, k = self.cl, self.k
        count = len(bases)
        c = window_bits(count)
        nwin, nb = 256 // c + 1, 1 << (c - 1)
        nkeys, N = nwin * nb, nwin * count
        cap = min(N // SEG + nkeys + 1, N + 1)
        jac = 3 * cl
        grid = lambda n, b: max(1, (n + b - 1) // b)
        pb = d.put([l for P in bases for l in self.enc(P)])
        ps = d.put([l for s in scalars for l in limbs(s, 4)])
        keys_in, vals_in = d.zeros(N, 4), d.zeros(N, 4)
        keys, vals = d.zeros(N, 4), d.zeros(N, 4)
        flags, segid, distinct = d.zeros(N, 4), d.zeros(N, 4), d.zeros(N, 4)
        seg_first, seg_key, key_start = d.zeros(cap + 1, 4), d.zeros(cap, 4), d.zeros(nkeys, 4)
        pa, pbuf = d.zeros(cap * jac), d.zeros(cap * jac)
        buckets = d.zeros(nkeys * jac)
        cnt = d.zeros(4, 4)
        # 1-2: digits, sort (CUB's radix sort is stable; so is Python's)
        d.launch(k["digits"], grid(count, 256), 256, [count, c, ps, keys_in, vals_in])
        pairs = sorted(zip(d.get(keys_in, N, "I"), d.get(vals_in, N, "I")), key=lambda kv: kv[0])
        struct.pack_into("<%dI" % N, d.mem, keys, *[kv[0] for kv in pairs])
        struct.pack_into("<%dI" % N, d.mem, vals, *[kv[1] for kv in pairs])
        d.launch(k["nvalid"], grid(N, 256), 256, [N, keys, nkeys, cnt])
        nvalid = d.get(cnt, 1, "I")[0]
        assert nvalid <= N, "nvalid %d of %d" % (nvalid, N)
        # 3: segmented sums, level by level
        n, lkeys, cur, nxt, nseg, ndistinct, levels = nvalid, keys, pa, pbuf, 0, 0, 0
        while n > 0:
            d.launch(k["run_start"], grid(n, 256), 256, [n, lkeys, key_start, distinct])
            if levels == 0:
                ndistinct = sum(d.get(distinct, n, "I"))  # CUB's reduction
            d.launch(k["head"], grid(n, 256), 256, [n, lkeys, key_start, flags])
            fl = d.get(flags, n, "I")  # CUB's exclusive scan
            acc, sc = 0, []
            for f in fl:
                sc.append(acc)
                acc += f
            struct.pack_into("<%dI" % n, d.mem, segid, *sc)
            d.launch(k["seg_write"], grid(n, 256), 256, [n, flags, segid, lkeys, seg_first, seg_key])
            nseg = sc[-1] + fl[-1]
            assert ndistinct <= nseg <= cap
            if levels == 0:
                d.launch(k["sum_bases"], grid(nseg, 128), 128, [nseg, seg_first, vals, pb, cur])
            else:
                d.launch(k["sum_jac"], grid(nseg, 128), 128, [nseg, seg_first, cur, nxt])
                cur, nxt = nxt, cur
            levels += 1
            if nseg == ndistinct:
                break
            d.mem[keys_in:keys_in + 4 * nseg] = d.mem[seg_key:seg_key + 4 * nseg]
            lkeys, n = keys_in, nseg
        # 4: scatter
        if nvalid > 0:
            d.launch(k["scatter"], grid(nseg, 256), 256, [nseg, seg_key, cur, buckets])
        # 5: reduction, ranges then the window tree
        results = []
        for nr in [nranges(c)] + ([nr_override] if nr_override else []):
            nt = nwin * nr
            ranges, rscratch, win = d.zeros(nt * jac), d.zeros(2 * nt * jac), d.zeros(nwin * jac)
            d.launch(k["reduce_range"], grid(nt, 64), 64, [nt, nb, nr, buckets, ranges, rscratch])
            half = nr // 2
            while half >= 1:
                d.launch(k["window_tree"], grid(nwin * half, 64), 64, [nwin * half, nr, half, ranges, win])
                half //= 2
            if nr == 1:
                d.launch(k["window_tree"], grid(nwin, 64), 64, [nwin, nr, 0, ranges, win])
            # 6: the windows on the host: sum_w 2^(wc) W_w
            hw = d.get(win, nwin * jac)
            acc = None
            for w in range(nwin - 1, -1, -1):
                acc = self.C.mul(1 << c, acc) if acc is not None else None
                acc = self.C.add(acc, self.dec_jac(hw[w * jac:(w + 1) * jac]))
            results.append((nr, acc))
        return results, levels, nvalid

    def reference(self, bases, scalars):
        acc = None
        for P, s in zip(bases, scalars):
            acc = self.C.add(acc, self.C.mul(s, P))
        return acc


def inputs(M, nfull, nones, seed):
    rnd = random.Random(seed)
    pts = [M.C.rand_point(rnd) for _ in range(4)]
    bases = [pts[0], pts[1], None, pts[0], M.C.neg(pts[1]), pts[2]]
    scalars = [rnd.randrange(M.r) for _ in range(nfull)]
    scalars += [M.r - 1, 0, 2**255 + 2**254 + 12345, 1][: max(0, len(bases) - len(scalars))]
    scalars += [rnd.randrange(2**64) for _ in range(len(bases) - len(scalars))]
    scalars = scalars[:len(bases)]
    bases += [pts[3]] * nones  # one bucket of more than one segment
    scalars += [1] * nones
    return bases, scalars


def msm_mutants(M, text, bases, scalars, want, count):
    """count carry mutants spread over the point formulas' chains (k_sum_bases' and
    k_reduce_range's callees), each through the whole pipeline: each must change the
    MSM, drop a carry or read a poisoned flag"""
    import ptx
    funcs, _, _ = ptx.parse(text)
    lines = [x for x in carry_lines(funcs, [M.k["sum_bases"], M.k["reduce_range"]]) if not x[2]]
    caught, missed = 0, []
    for i in range(count):
        ln, op, _ = lines[(2 * i + 1) * len(lines) // (2 * count)]
        mop, _ = mutant(op, i)
        mod, hit = ptxrt.mutant(M.mod, text, {ln: mop})
        M2 = Msm(mod, M.group, text)
        del ptxrt.DROPS[:]
        try:
            results, _, _ = M2.run(bases, scalars, nr_override=4)
            ok = any(got != want for _, got in results) or ptxrt.DROPS
        except ptxrt.CarryPoison:
            ok = True
        if ok:
            caught += 1
        else:
            missed.append("line %d %s -> %s in %s" % (ln, op, mop, hit[0]))
    return caught, missed


def main():
    text = open(sys.argv[1]).read()
    cache = sys.argv[2]
    group = sys.argv[3]
    roots = re.findall(r"\.entry (_Z\w+)\(", text)
    mod = ptxrt.load(text, roots, cache)
    M = Msm(mod, group, text)
    nfull = 3 if group.startswith("g1") else 1
    t0 = time.time()
    bases, scalars = inputs(M, nfull, 34, len(group))
    del ptxrt.DROPS[:]
    results, levels, nvalid = M.run(bases, scalars, nr_override=4)
    want = M.reference(bases, scalars)
    fails = 0
    for nr, got in results:
        ok = got == want and not ptxrt.DROPS
        fails += not ok
        print("%s %s: MSM of %d points (%d pairs, %d levels of bucket sums, %d ranges per window) %s the "
              "affine reference, %d dropped carries (%.1f s)" % (
                  "ok  " if ok else "FAIL", group, len(bases), nvalid, levels, nr,
                  "equals" if got == want else "DIFFERS FROM", len(ptxrt.DROPS), time.time() - t0))
    nmut = int(sys.argv[4]) if len(sys.argv) > 4 else 0
    if nmut:
        t0 = time.time()
        caught, missed = msm_mutants(M, text, bases, scalars, want, nmut)
        fails += bool(missed)
        print("%s %s: carry mutants in the point formulas: %d/%d caught (%.1f s)" % (
            "ok  " if not missed else "FAIL", group, caught, nmut, time.time() - t0))
        for m in missed:
            print("     NOT CAUGHT: %s" % m)
    if levels < 2:
        print("FAIL %s: the inputs did not reach k_sum_jac (one level)" % group)
        fails += 1
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
