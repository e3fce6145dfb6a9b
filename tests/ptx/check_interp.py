"""check_interp.py — the interpreter's own checks, on hand-written PTX: carry chains
(add.cc/addc.cc/addc, sub.cc/subc, mad.lo.cc/madc.hi.cc) against Python's integers on
random and all-ones words; a dropped carry of 1 counted (overwritten, at a return, the
overflow of a chain's last instruction) and a carry of 0 not; the flag poisoned after a
call; a .param call with a by-value struct and a return value; signed compares,
shifts, bfi, cvt, predicates and a loop."""

import os
import random
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ptxrt  # noqa: E402

# The hand-written PTX, a file of its own (ptxas and PTX editors read it as it is).
with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "check_interp.ptx")) as f:
    PTX = f.read()


def main():
    mod = ptxrt.load(PTX, ["chain", "drop", "poison", "misc"])
    rnd = random.Random(5)
    fails = 0
    M = 2**32 - 1
    words = [0, 1, M, M - 1, 2**31]
    vals = [(rnd.choice(words) if rnd.random() < 0.5 else rnd.randrange(2**32)) for _ in range(6 * 64)]
    d = ptxrt.Device(mod, size=1 << 20)
    a, b, r = d.put(vals[: 3 * 64], "I"), d.put(vals[3 * 64:], "I"), d.zeros(11 * 64, 4)
    del ptxrt.DROPS[:]
    d.launch("chain", 1, 64, [a, b, r])
    out = d.get(r, 11 * 64, "I")
    bad, borrows = 0, 0
    for t in range(64):
        x = sum(vals[3 * t + i] << 32 * i for i in range(3))
        y = sum(vals[3 * 64 + 3 * t + i] << 32 * i for i in range(3))
        o = out[11 * t:11 * t + 11]
        s = sum(o[i] << 32 * i for i in range(4))
        df = sum(o[4 + i] << 32 * i for i in range(4))
        lo = (vals[3 * t] * vals[3 * 64 + 3 * t] & M) + vals[3 * t + 1]
        hi = (vals[3 * t] * vals[3 * 64 + 3 * t] >> 32) + vals[3 * 64 + 3 * t + 1] + (lo >> 32)
        bad += s != x + y or df != (x - y) % 2**128 or o[8] != lo & M or o[9] != hi & M or o[10] != hi >> 32
        borrows += x < y
    # the add and mad chains end in an instruction that takes their carry: nothing dropped;
    # the sub chain's last subc drops its borrow where x < y (the sign word is all ones)
    bad += len(ptxrt.DROPS) != borrows
    fails += bool(bad)
    print("%s carry chains (add/addc, sub/subc, mad/madc): %d of 64 threads wrong or dropping" % (
        "ok  " if not bad else "FAIL", bad))
    cases = [((M, 1, 0), 1), ((5, 6, 0), 0), ((M, 1, 1), 1), ((1, 1, 1), 0), ((M, 1, 2), 1), ((M, 0, 2), 0)]
    for args, want in cases:
        del ptxrt.DROPS[:]
        d.launch("drop", 1, 1, list(args))
        ok = len(ptxrt.DROPS) == want
        fails += not ok
        print("%s dropped carries counted: drop%s -> %d (want %d)" % ("ok  " if ok else "FAIL", args,
                                                                     len(ptxrt.DROPS), want))
    try:
        d.launch("poison", 1, 1, [3])
        print("FAIL a carry read after a call went unnoticed")
        fails += 1
    except ptxrt.CarryPoison:
        print("ok   a carry read after a call fails (the flag is poisoned across calls)")
    v = d.put([0x1111, 0x2222, 0, 0, 0, 0])
    d.launch("misc", 1, 1, [v, 10])
    o = d.get(v, 5) + d.get(v + 40, 1, "I")
    want = [0x2222, 0x1111, 45, (-3) % 2**64, 0x1111 << 32 | 0x2222, 1]
    ok = o == want
    fails += not ok
    print("%s .param call by value with a return value, a loop, signed ops, bfi: %s" % (
        "ok  " if ok else "FAIL", "as expected" if ok else "%s, want %s" % (o, want)))
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
