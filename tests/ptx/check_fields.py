"""check_fields.py PTX CACHE — the shipped field products (tests/ptx/fields.cu, over
zk/field.h) run from their PTX against Python's integers: the four fields' products
(fe_mul_id) and both Fq2 products (fe2_mul_id), on edge and random operands; then the
planted carry mutants of each product, each of which must be caught."""

import os
import random
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ptxrt  # noqa: E402
from mutants import carry_lines, mutant  # noqa: E402
from ref import Field, f2_mul, limbs, unlimbs  # noqa: E402


def run_products(mod, kernel, field, pairs, deg=1):
    dev = ptxrt.Device(mod, size=1 << 22)
    n, w = len(pairs), field.n * deg
    flat = lambda xs: [l for x in xs for c in (x if deg == 2 else (x,)) for l in limbs(c, field.n)]
    a = dev.put(flat([x for x, _ in pairs]))
    b = dev.put(flat([y for _, y in pairs]))
    r = dev.zeros(n * w)
    block = 64
    dev.launch(kernel, (n + block - 1) // block, block, [n, a, b, r])
    out = dev.get(r, n * w)
    res = []
    for i in range(n):
        v = out[i * w:(i + 1) * w]
        res.append(unlimbs(v) if deg == 1 else (unlimbs(v[:field.n]), unlimbs(v[field.n:])))
    return res


def expected(field, pairs, deg):
    p, Ri = field.p, field.Rinv
    if deg == 1:
        return [a * b * Ri % p for a, b in pairs]
    return [tuple(c * Ri % p for c in f2_mul(a, b, p)) for a, b in pairs]


def check(mod, kernel, field, pairs, deg):
    """-> (wrong, dropped carries)"""
    del ptxrt.DROPS[:]
    got = run_products(mod, kernel, field, pairs, deg)
    want = expected(field, pairs, deg)
    wrong = [i for i in range(len(pairs)) if got[i] != want[i]]
    return wrong, len(ptxrt.DROPS)


# ---- planted carry mutants -------------------------------------------------------------

def mutants(base, text, kernel, field, deg, count, seed):
    """-> (caught, observable, excluded, [survivors that carried])"""
    import ptx
    funcs, _, _ = ptx.parse(text)
    lines = carry_lines(funcs, [kernel])
    pick = [lines[(i * len(lines)) // count + (seed % max(1, len(lines) // count))] for i in range(count)]
    rnd = random.Random(seed)
    pairs = [(a, b) for a in field.edge_values() for b in field.edge_values()]
    pairs = rnd.sample(pairs, min(len(pairs), 400)) + field.operands(64, seed)[-64:]
    if deg == 2:
        pairs = [((a, b), (b, a)) for a, b in pairs[: len(pairs) // 2]]
    # which carries ever were 1 on these operands (the unmutated code, counted)
    ptxrt._CIN.clear()
    ptxrt._COUT.clear()
    cov = ptxrt.load(text, [kernel], mutate=None, cov=True)
    wrong, drops = check(cov, kernel, field, pairs, deg)
    assert not wrong and not drops
    caught, excluded, bad = 0, [], []
    for i, (ln, op, unread) in enumerate(pick):
        mop, kind = mutant(op, i)
        if kind == "out" and unread:  # the same program: nothing reads that carry
            excluded.append("line %d %s -> %s: nothing reads its carry-out (the next carry "
                            "instruction sets CC.CF without reading it), and the unmutated code "
                            "drops no carry of 1 there" % (ln, op, mop))
            continue
        mod, _ = ptxrt.mutant(base, text, {ln: mop})
        hit = False
        for part in (pairs[-64:], pairs[:-64]):  # the random pairs catch most: the rest when not
            try:
                wrong, drops = check(mod, kernel, field, part, deg)
                hit = bool(wrong or drops)
            except ptxrt.CarryPoison:
                hit = True
            if hit:
                break
        if hit:
            caught += 1
            continue
        fired = ln in (ptxrt._CIN if kind == "in" else ptxrt._COUT)
        bad.append("line %d %s -> %s (its carry was %s on these operands)" % (
            ln, op, mop, "1 in some product" if fired else "always 0"))
    return caught, len(pick) - len(excluded), excluded, bad


def main():
    text = open(sys.argv[1]).read()
    cache = sys.argv[2] if len(sys.argv) > 2 else None
    nrand = int(os.environ.get("PTX_RANDOM", "256"))
    nmut = int(os.environ.get("PTX_MUTANTS", "10"))
    kernels = [("ptx_mul_" + f, f, 1) for f in ("bn254_fq", "bn254_fr", "bls12_381_fq", "bls12_381_fr")]
    kernels += [("ptx_mul2_" + f, f, 2) for f in ("bn254_fq", "bls12_381_fq")]
    mod = ptxrt.load(text, [k for k, _, _ in kernels], cache)
    fails, tot = 0, [0, 0, 0]
    for kernel, fname, deg in kernels:
        F = Field(fname)
        t0 = time.time()
        pairs = F.operands(nrand, 7 + deg)
        if deg == 2:
            rnd = random.Random(11)
            pairs = [(pairs[i], pairs[rnd.randrange(len(pairs))]) for i in range(0, len(pairs), 2)]
        wrong, drops = check(mod, kernel, F, pairs, deg)
        ok = not wrong and not drops
        fails += not ok
        print("%s %-22s %5d products: %d wrong, %d dropped carries (%.1f s)" % (
            "ok  " if ok else "FAIL", kernel, len(pairs), len(wrong), drops, time.time() - t0))
        if wrong:
            print("     first wrong: a=%s b=%s" % pairs[wrong[0]])
        if not ok:
            continue  # mutants of a product that is already wrong would tell nothing
        t0 = time.time()
        caught, total, excluded, bad = mutants(mod, text, kernel, F, deg, nmut if deg == 1 else nmut // 2,
                                               len(fname) + deg)
        tot[0] += caught
        tot[1] += total
        tot[2] += len(excluded)
        fails += bool(bad)
        print("%s %-22s mutants: %d/%d caught, %d equivalent (%.1f s)" % (
            "ok  " if not bad else "FAIL", kernel, caught, total, len(excluded), time.time() - t0))
        for e in excluded:
            print("     equivalent, excluded: %s" % e)
        for e in bad:
            print("     NOT CAUGHT: %s" % e)
    print("mutants: %d/%d caught, %d equivalent ones excluded" % tuple(tot))
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
