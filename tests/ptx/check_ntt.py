"""check_ntt.py PTX CACHE — zk/cuda/ntt.cu's kernels run from their PTX: the forward,
inverse and odd-coset transforms as gpu_ntt_device sequences them (k_bitrev,
k_block_stages with its barriers, k_stage, k_scale, k_mul_table) on a small domain, with
a block of 2^2 and of 2^3 elements so that both the shared-memory stages and the global
ones run, against a naive O(n^2) DFT in Python; and k_h (a·b - c, out of Montgomery
form) on edge and random values. Both scalar fields."""

import os
import random
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ptxrt  # noqa: E402
from ref import Field, limbs, unlimbs  # noqa: E402

# (template argument = enum field_id, multiplicative generator of Fr^*)
FR = {"bn254_fr": (1, 5), "bls12_381_fr": (3, 7)}


def kname(base, fid):
    return {"stage": "_Z7k_stageILi%dEEvmjPmPKm", "block": "_Z14k_block_stagesILi%dEEvPmPKmj",
            "scale": "_Z7k_scaleILi%dEEvmPm4fe4p", "table": "_Z11k_mul_tableILi%dEEvmPmPKm",
            "h": "_Z3k_hILi%dEEvmPmPKmS2_"}[base] % fid


BITREV = "_Z8k_bitrevmjPm"


class Ntt:
    def __init__(self, dev, F, fid, lg, blg):
        self.dev, self.F, self.fid, self.lg, self.blg = dev, F, fid, lg, blg
        self.n = 1 << lg

    def put(self, vals):
        return self.dev.put([l for v in vals for l in limbs(self.F.to_mont(v), 4)])

    def get(self, ptr, mont=True):
        out = self.dev.get(ptr, 4 * self.n)
        vals = [unlimbs(out[4 * i:4 * i + 4]) for i in range(self.n)]
        return [self.F.from_mont(v) for v in vals] if mont else vals

    def twiddles(self, w):
        n, p = self.n, self.F.p
        tw = [1] * n
        m = 1
        while m < n:
            for j in range(m):
                tw[m + j] = pow(w, j * n // (2 * m), p)
            m *= 2
        return self.put(tw)

    def dit(self, v, tw):
        """zk/cuda/ntt.cu's dit(), with the block size blg (a kernel parameter)"""
        n, lg, blg, d = self.n, self.lg, self.blg, self.dev
        d.launch(BITREV, (n + 7) // 8, 8, [n, lg, v])
        bs = 1 << blg
        d.launch(kname("block", self.fid), n // bs, bs // 2, [v, tw, blg], shared=bs * 32)
        for lgm in range(blg, lg):
            d.launch(kname("stage", self.fid), (n // 2 + 7) // 8, 8, [n // 2, lgm, v, tw])


def dft(x, w, p):
    n = len(x)
    return [sum(x[i] * pow(w, i * k, p) for i in range(n)) % p for k in range(n)]


def check_field(mod, name, lg, blg, seed):
    fid, gen = FR[name]
    F = Field(name)
    p, n = F.p, 1 << lg
    w = pow(gen, (p - 1) >> lg, p)
    assert pow(w, n // 2, p) == p - 1
    coset = pow(gen, (p - 1) >> (lg + 1), p)  # w[lg+1], as zk/ntt.c's odd coset
    dev = ptxrt.Device(mod, size=1 << 20)
    T = Ntt(dev, F, fid, lg, blg)
    rnd = random.Random(seed)
    x = [rnd.randrange(p) for _ in range(n)]
    x[0], x[1], x[-1] = p - 1, 0, 1
    tw, twi = T.twiddles(w), T.twiddles(pow(w, -1, p))
    errs = []
    v = T.put(x)  # forward
    T.dit(v, tw)
    if T.get(v) != dft(x, w, p):
        errs.append("forward")
    v = T.put(x)  # inverse: dit with 1/w, then * 1/n (k_scale, a struct by value)
    T.dit(v, twi)
    ninv = F.to_mont(pow(n, -1, p))
    dev.launch(kname("scale", fid), (n + 7) // 8, 8, [n, v, b"".join(x.to_bytes(8, "little") for x in limbs(ninv, 4))])
    coef = dft(x, pow(w, -1, p), p)
    coef = [c * pow(n, -1, p) % p for c in coef]
    if T.get(v) != coef:
        errs.append("inverse")
    v = T.put(x)  # odd coset: inverse without 1/n, * coset^i / n, forward
    T.dit(v, twi)
    cs = T.put([pow(coset, i, p) * pow(n, -1, p) % p for i in range(n)])
    dev.launch(kname("table", fid), (n + 7) // 8, 8, [n, v, cs])
    T.dit(v, tw)
    want = [sum(coef[i] * pow(coset * pow(w, k, p), i, p) for i in range(n)) % p for k in range(n)]
    if T.get(v) != want:
        errs.append("odd coset")
    return errs


def check_h(mod, name, seed):
    """k_h: a = from_mont(a·b - c) on edge and random values"""
    fid, _ = FR[name]
    F = Field(name)
    p = F.p
    e = F.edge_values()
    rnd = random.Random(seed)
    trip = [(a, b, c) for a in e for b in e[::3] for c in e[::7]]
    trip += [(rnd.randrange(p), rnd.randrange(p), rnd.randrange(p)) for _ in range(256)]
    dev = ptxrt.Device(mod, size=1 << 22)
    put = lambda vs: dev.put([l for v in vs for l in limbs(F.to_mont(v), 4)])
    a, b, c = put([t[0] for t in trip]), put([t[1] for t in trip]), put([t[2] for t in trip])
    n = len(trip)
    dev.launch(kname("h", fid), (n + 63) // 64, 64, [n, a, b, c])
    out = dev.get(a, 4 * n)
    bad = [i for i, (x, y, z) in enumerate(trip) if unlimbs(out[4 * i:4 * i + 4]) != (x * y - z) % p]
    return n, bad


def main():
    text = open(sys.argv[1]).read()
    cache = sys.argv[2] if len(sys.argv) > 2 else None
    roots = [BITREV] + [kname(k, fid) for k in ("stage", "block", "scale", "table", "h") for fid in (1, 3)]
    mod = ptxrt.load(text, roots, cache)
    fails = 0
    for name in FR:
        for lg, blg in ((5, 2), (4, 3)):
            t0 = time.time()
            del ptxrt.DROPS[:]
            errs = check_field(mod, name, lg, blg, lg + blg)
            drops = len(ptxrt.DROPS)
            ok = not errs and not drops
            fails += not ok
            print("%s %s 2^%d (blocks of 2^%d): forward, inverse, odd coset %s, %d dropped carries (%.1f s)" % (
                "ok  " if ok else "FAIL", name, lg, blg, "against the DFT" if not errs else "WRONG: " + ", ".join(errs),
                drops, time.time() - t0))
        t0 = time.time()
        del ptxrt.DROPS[:]
        n, bad = check_h(mod, name, 3)
        ok = not bad and not ptxrt.DROPS
        fails += not ok
        print("%s %s k_h: %d values, %d wrong, %d dropped carries (%.1f s)" % (
            "ok  " if ok else "FAIL", name, n, len(bad), len(ptxrt.DROPS), time.time() - t0))
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
