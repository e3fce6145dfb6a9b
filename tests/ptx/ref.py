"""ref.py — the independent references of the PTX checks: the four fields as Python
integers (Montgomery form by plain modular arithmetic), Fq2, and the curves' affine
group law. Nothing here comes from the C or CUDA sources but the limb layout."""

import os
import random
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from refprover import Group  # noqa: E402  the affine group law, the prover reference's (Python too)

BN254_P = 21888242871839275222246405745257275088696311157297823662689037894645226208583
BN254_R = 21888242871839275222246405745257275088548364400416034343698204186575808495617
BLS_P = int("1a0111ea397fe69a4b1ba7b6434bacd764774b84f38512bf6730d2a0f6b0f6241eabfffeb153ffffb9feffffffffaaab", 16)
BLS_R = int("73eda753299d7d483339d80809a1d80553bda402fffe5bfeffffffff00000001", 16)

# name: (modulus, 64-bit limbs)
FIELDS = {"bn254_fq": (BN254_P, 4), "bn254_fr": (BN254_R, 4), "bls12_381_fq": (BLS_P, 6), "bls12_381_fr": (BLS_R, 4)}


def limbs(x, n):
    return [(x >> (64 * i)) & (2**64 - 1) for i in range(n)]


def unlimbs(v):
    return sum(x << (64 * i) for i, x in enumerate(v))


class Field:
    def __init__(self, name):
        self.name = name
        self.p, self.n = FIELDS[name]
        self.R = pow(2, 64 * self.n, self.p)
        self.Rinv = pow(self.R, -1, self.p)

    def to_mont(self, x):
        return x * self.R % self.p

    def from_mont(self, x):
        return x * self.Rinv % self.p

    def mont_mul(self, a, b):
        return a * b * self.Rinv % self.p

    def edge_values(self):
        """reduced values where a dropped carry would show: the ends of the range, words
        of all ones, R mod p and its neighbours, powers of two"""
        p, n = self.p, self.n
        v = {0, 1, 2, p - 1, p - 2, (p - 1) // 2, (p + 1) // 2, self.R, self.R - 1, p - self.R,
             pow(2, 64 * n, p) * self.R % p}
        for k in (31, 32, 63, 64, 127, 128, 191, 192, 255, 256, 320, 352, 380):
            if 2**k < p:
                v |= {2**k, 2**k - 1}
        ones = 0
        for k in range(2 * n):  # all-ones 32-bit words from the bottom
            ones = ones << 32 | 0xFFFFFFFF
            if ones < p:
                v.add(ones)
        top = p >> (p.bit_length() - 32) << (p.bit_length() - 32)
        v |= {top - 1, top, p - 2**32}
        return sorted(x % p for x in v)

    def operands(self, count, seed):
        """edge values (all pairs of a small set) then random values, as (a, b) pairs"""
        e = self.edge_values()
        pairs = [(a, b) for a in e for b in e]
        rnd = random.Random(seed)
        pairs += [(rnd.randrange(self.p), rnd.randrange(self.p)) for _ in range(count)]
        return pairs


# ---- Fq2 = Fq[u]/(u^2 + 1) ----------------------------------------------------------

def f2_mul(a, b, p):
    return ((a[0] * b[0] - a[1] * b[1]) % p, (a[0] * b[1] + a[1] * b[0]) % p)


# ---- the curves y^2 = x^3 + b, affine, over Fq (G1) or Fq2 (G2) -----------------------

class Fq:
    """Fq as plain ints"""
    deg = 1

    def __init__(self, p):
        self.p = p
        self.zero, self.one = 0, 1

    def add(self, a, b):
        return (a + b) % self.p

    def sub(self, a, b):
        return (a - b) % self.p

    def mul(self, a, b):
        return a * b % self.p

    def inv(self, a):
        return pow(a, -1, self.p)

    def neg(self, a):
        return -a % self.p

    def small(self, k):
        return k % self.p

    def sqrt(self, a):  # p = 3 mod 4 for both curves
        y = pow(a, (self.p + 1) // 4, self.p)
        return y if y * y % self.p == a % self.p else None

    def rand(self, rnd):
        return rnd.randrange(self.p)

    def coords(self, a):
        return [a]


class Fq2:
    """Fq[u]/(u^2 + 1), elements (c0, c1)"""
    deg = 2

    def __init__(self, p):
        self.p, self.f = p, Fq(p)
        self.zero, self.one = (0, 0), (1, 0)

    def add(self, a, b):
        return ((a[0] + b[0]) % self.p, (a[1] + b[1]) % self.p)

    def sub(self, a, b):
        return ((a[0] - b[0]) % self.p, (a[1] - b[1]) % self.p)

    def mul(self, a, b):
        return f2_mul(a, b, self.p)

    def inv(self, a):
        n = pow((a[0] * a[0] + a[1] * a[1]) % self.p, -1, self.p)
        return (a[0] * n % self.p, -a[1] * n % self.p)

    def neg(self, a):
        return (-a[0] % self.p, -a[1] % self.p)

    def small(self, k):
        return (k % self.p, 0)

    def sqrt(self, a):
        """by the norm: x0^2 = (a0 ± sqrt(a0^2 + a1^2)) / 2, x1 = a1 / (2 x0)"""
        f, p = self.f, self.p
        if a[1] == 0:
            r = f.sqrt(a[0])
            if r is not None:
                return (r, 0)
            r = f.sqrt(-a[0] % p)
            return None if r is None else (0, r)
        s = f.sqrt((a[0] * a[0] + a[1] * a[1]) % p)
        if s is None:
            return None
        half = pow(2, -1, p)
        for t in ((a[0] + s) * half % p, (a[0] - s) * half % p):
            x0 = f.sqrt(t)
            if x0:
                x = (x0, a[1] * pow(2 * x0, -1, p) % p)
                if self.mul(x, x) == (a[0] % p, a[1] % p):
                    return x
        return None

    def rand(self, rnd):
        return (rnd.randrange(self.p), rnd.randrange(self.p))

    def coords(self, a):
        return list(a)


class Curve:
    """points as (x, y) or None (infinity); the group law is refprover's Group"""

    def __init__(self, F, b):
        self.F, self.b = F, b
        self.group = Group(F, b)

    def on(self, P):
        return self.group.on_curve(P)

    def neg(self, P):
        return self.group.neg(P)

    def add(self, P, Q):
        return self.group.add(P, Q)

    def mul(self, k, P):
        return self.group.mul(P, k)

    def rand_point(self, rnd):
        F = self.F
        while True:
            x = F.rand(rnd)
            y = F.sqrt(F.add(F.mul(F.mul(x, x), x), self.b))
            if y is not None:
                P = (x, y)
                assert self.on(P)
                return P


def curve(group):
    """group: g1_bn254, g2_bn254, g1_bls12_381, g2_bls12_381 -> (Curve, field name, Fr modulus)"""
    if group.endswith("bn254"):
        p, r = BN254_P, BN254_R
        if group.startswith("g1"):
            return Curve(Fq(p), 3), "bn254_fq", r
        F = Fq2(p)
        return Curve(F, F.mul((3, 0), F.inv((9, 1)))), "bn254_fq", r  # b' = 3 / (9 + u)
    p, r = BLS_P, BLS_R
    if group.startswith("g1"):
        return Curve(Fq(p), 4), "bls12_381_fq", r
    return Curve(Fq2(p), (4, 4)), "bls12_381_fq", r  # b' = 4 (1 + u)
