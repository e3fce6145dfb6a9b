"""ref.py — the independent references of the PTX checks: the four fields as Python
integers (Montgomery form by plain modular arithmetic), Fq2, and the curves' affine
group law. Nothing here comes from the C or CUDA sources but the limb layout."""

import random

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
