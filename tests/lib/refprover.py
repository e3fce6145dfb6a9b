#!/usr/bin/env python3
"""Pure-Python reference Groth16 prover for snarkjs .zkey/.wtns files.

Written from the spec docs/snarkjs-groth16.md, to validate it.
Slow on purpose (naive O(n^2) DFT, double-and-add MSM, affine arithmetic):
use only on tiny circuits.  No third-party packages.

Usage:
  refprover.py ZKEY WTNS PROOF_JSON PUBLIC_JSON [--r R] [--s S] [--dump FILE] [--info]

  --r/--s   fix the blinding scalars (decimal) instead of drawing them at random,
            so that another implementation can be compared output-for-output.
  --dump    write intermediate values (decoded header, a/b/c evaluations,
            coset evaluations, h scalars, MSM results before blinding) as JSON.
  --info    print the decoded zkey/wtns headers.
"""
import json
import secrets
import struct
import sys

# ----------------------------------------------------------------------------
# Curve constants (see spec section 6)
# ----------------------------------------------------------------------------
BN254_Q = 21888242871839275222246405745257275088696311157297823662689037894645226208583
BN254_R = 21888242871839275222246405745257275088548364400416034343698204186575808495617
BLS_Q = int("1a0111ea397fe69a4b1ba7b6434bacd764774b84f38512bf6730d2a0f6b0f6241eabfffeb153ffffb9feffffffffaaab", 16)
BLS_R = int("73eda753299d7d483339d80809a1d80553bda402fffe5bfeffffffff00000001", 16)


def fq2_inv_generic(q, a):
    a0, a1 = a
    t = pow((a0 * a0 + a1 * a1) % q, -1, q)   # u^2 = -1 for both curves
    return (a0 * t % q, (-a1) * t % q)


CURVES = {
    BN254_Q: {
        "name": "bn128", "q": BN254_Q, "r": BN254_R, "b1": 3,
        # twist b' = 3 / (9 + u)
        "b2": None,
        "xi": (9, 1),
    },
    BLS_Q: {
        "name": "bls12381", "q": BLS_Q, "r": BLS_R, "b1": 4,
        # twist b' = 4 * (1 + u)
        "b2": (4, 4),
    },
}
# derive BN254 twist b
_c = CURVES[BN254_Q]
_inv = fq2_inv_generic(BN254_Q, _c["xi"])
_c["b2"] = (3 * _inv[0] % BN254_Q, 3 * _inv[1] % BN254_Q)


# ----------------------------------------------------------------------------
# Field / group arithmetic (affine, None == point at infinity)
# ----------------------------------------------------------------------------
class Fq:
    def __init__(self, q):
        self.q = q
        self.zero, self.one = 0, 1

    def add(self, a, b): return (a + b) % self.q
    def sub(self, a, b): return (a - b) % self.q
    def mul(self, a, b): return a * b % self.q
    def neg(self, a): return (-a) % self.q
    def inv(self, a): return pow(a, -1, self.q)
    def small(self, k): return k % self.q


class Fq2:
    """c0 + c1*u with u^2 = -1 (both BN254 and BLS12-381)."""

    def __init__(self, q):
        self.q = q
        self.zero, self.one = (0, 0), (1, 0)

    def add(self, a, b): return ((a[0] + b[0]) % self.q, (a[1] + b[1]) % self.q)
    def sub(self, a, b): return ((a[0] - b[0]) % self.q, (a[1] - b[1]) % self.q)
    def neg(self, a): return ((-a[0]) % self.q, (-a[1]) % self.q)

    def mul(self, a, b):
        q = self.q
        return ((a[0] * b[0] - a[1] * b[1]) % q, (a[0] * b[1] + a[1] * b[0]) % q)

    def inv(self, a): return fq2_inv_generic(self.q, a)
    def small(self, k): return (k % self.q, 0)


class Group:
    def __init__(self, F, b):
        self.F, self.b = F, b

    def on_curve(self, P):
        if P is None:
            return True
        F = self.F
        x, y = P
        return F.mul(y, y) == F.add(F.mul(F.mul(x, x), x), self.b)

    def add(self, P, Q):
        F = self.F
        if P is None:
            return Q
        if Q is None:
            return P
        if P[0] == Q[0]:
            if P[1] == Q[1] and P[1] != F.zero:
                return self.double(P)
            return None
        lam = F.mul(F.sub(Q[1], P[1]), F.inv(F.sub(Q[0], P[0])))
        x3 = F.sub(F.sub(F.mul(lam, lam), P[0]), Q[0])
        y3 = F.sub(F.mul(lam, F.sub(P[0], x3)), P[1])
        return (x3, y3)

    def double(self, P):
        F = self.F
        if P is None or P[1] == F.zero:
            return None
        x, y = P
        lam = F.mul(F.mul(F.small(3), F.mul(x, x)), F.inv(F.mul(F.small(2), y)))
        x3 = F.sub(F.mul(lam, lam), F.mul(F.small(2), x))
        y3 = F.sub(F.mul(lam, F.sub(x, x3)), y)
        return (x3, y3)

    def neg(self, P):
        return None if P is None else (P[0], self.F.neg(P[1]))

    def mul(self, P, k):
        R = None
        A = P
        while k > 0:
            if k & 1:
                R = self.add(R, A)
            A = self.double(A)
            k >>= 1
        return R

    def msm(self, points, scalars):
        assert len(points) == len(scalars), (len(points), len(scalars))
        acc = None
        for P, k in zip(points, scalars):
            if k and P is not None:
                acc = self.add(acc, self.mul(P, k))
        return acc


# ----------------------------------------------------------------------------
# Binary container (spec section 1)
# ----------------------------------------------------------------------------
def read_binfile(path, magic, max_version):
    data = open(path, "rb").read()
    if data[:4] != magic:
        raise ValueError(f"{path}: bad magic {data[:4]!r}, want {magic!r}")
    version, nsec = struct.unpack_from("<II", data, 4)
    if version > max_version:
        raise ValueError(f"{path}: unsupported version {version}")
    pos = 12
    sections = {}
    for _ in range(nsec):
        sid, size = struct.unpack_from("<IQ", data, pos)
        pos += 12
        if pos + size > len(data):
            raise ValueError(f"{path}: section {sid} runs past end of file")
        sections.setdefault(sid, []).append((pos, size))
        pos += size
    return data, version, sections


def section(data, sections, sid):
    lst = sections.get(sid)
    if not lst:
        raise ValueError(f"missing section {sid}")
    if len(lst) > 1:
        raise ValueError(f"duplicated section {sid}")
    p, size = lst[0]
    return data[p:p + size]


def le(b):
    return int.from_bytes(b, "little")


class Reader:
    def __init__(self, buf):
        self.buf, self.pos = buf, 0

    def u32(self):
        v = struct.unpack_from("<I", self.buf, self.pos)[0]
        self.pos += 4
        return v

    def raw(self, n):
        b = self.buf[self.pos:self.pos + n]
        self.pos += n
        return b


# ----------------------------------------------------------------------------
# zkey / wtns parsing (spec sections 1-3)
# ----------------------------------------------------------------------------
class Ctx:
    pass


def fq_from_mont(ctx, b):
    v = le(b)
    if v >= ctx.q:
        raise ValueError("Fq element not reduced")
    return v * ctx.Rq_inv % ctx.q


def g1_from_bytes(ctx, b):
    n = ctx.n8q
    assert len(b) == 2 * n
    if not any(b):
        return None                       # all-zero bytes == infinity
    P = (fq_from_mont(ctx, b[:n]), fq_from_mont(ctx, b[n:]))
    if not ctx.G1.on_curve(P):
        raise ValueError("G1 point not on curve")
    return P


def g2_from_bytes(ctx, b):
    n = ctx.n8q
    assert len(b) == 4 * n
    if not any(b):
        return None
    x = (fq_from_mont(ctx, b[0:n]), fq_from_mont(ctx, b[n:2 * n]))        # x.c0, x.c1
    y = (fq_from_mont(ctx, b[2 * n:3 * n]), fq_from_mont(ctx, b[3 * n:4 * n]))  # y.c0, y.c1
    P = (x, y)
    if not ctx.G2.on_curve(P):
        raise ValueError("G2 point not on curve")
    return P


def load_zkey(path):
    data, version, secs = read_binfile(path, b"zkey", 1)
    ctx = Ctx()
    ctx.zkey_version = version
    ctx.section_order = []
    p = 12
    for _ in range(struct.unpack_from("<I", data, 8)[0]):
        sid, size = struct.unpack_from("<IQ", data, p)
        ctx.section_order.append((sid, size))
        p += 12 + size

    r = Reader(section(data, secs, 1))
    ctx.protocol = r.u32()
    if ctx.protocol != 1:
        raise ValueError(f"zkey protocol {ctx.protocol} is not groth16 (1)")

    hdr = section(data, secs, 2)
    r = Reader(hdr)
    ctx.n8q = r.u32()
    ctx.q = le(r.raw(ctx.n8q))
    ctx.n8r = r.u32()
    ctx.r = le(r.raw(ctx.n8r))
    ctx.nVars = r.u32()
    ctx.nPublic = r.u32()
    ctx.domainSize = r.u32()
    if ctx.q not in CURVES:
        raise ValueError("unsupported curve (q)")
    cv = CURVES[ctx.q]
    if cv["r"] != ctx.r:
        raise ValueError("r does not match q's curve")
    ctx.curve = cv["name"]
    ctx.Rq = pow(2, 8 * ctx.n8q, ctx.q)
    ctx.Rq_inv = pow(ctx.Rq, -1, ctx.q)
    ctx.Rr = pow(2, 8 * ctx.n8r, ctx.r)
    ctx.Rr_inv = pow(ctx.Rr, -1, ctx.r)
    ctx.G1 = Group(Fq(ctx.q), cv["b1"])
    ctx.G2 = Group(Fq2(ctx.q), cv["b2"])
    sG1, sG2 = 2 * ctx.n8q, 4 * ctx.n8q
    ctx.alpha1 = g1_from_bytes(ctx, r.raw(sG1))
    ctx.beta1 = g1_from_bytes(ctx, r.raw(sG1))
    ctx.beta2 = g2_from_bytes(ctx, r.raw(sG2))
    ctx.gamma2 = g2_from_bytes(ctx, r.raw(sG2))
    ctx.delta1 = g1_from_bytes(ctx, r.raw(sG1))
    ctx.delta2 = g2_from_bytes(ctx, r.raw(sG2))
    assert r.pos == len(hdr), "groth16 header size mismatch"
    n = ctx.domainSize
    if n == 0 or n & (n - 1):
        raise ValueError("domainSize is not a power of two")

    def points(sid, size, count, dec):
        buf = section(data, secs, sid)
        if len(buf) != size * count:
            raise ValueError(f"section {sid}: size {len(buf)} != {size}*{count}")
        return [dec(ctx, buf[i * size:(i + 1) * size]) for i in range(count)]

    ctx.IC = points(3, sG1, ctx.nPublic + 1, g1_from_bytes)

    coefbuf = section(data, secs, 4)
    ncoef = struct.unpack_from("<I", coefbuf, 0)[0]
    esz = 12 + ctx.n8r
    if len(coefbuf) != 4 + ncoef * esz:
        raise ValueError("coefficient section size mismatch")
    ctx.coefs = []
    for i in range(ncoef):
        o = 4 + i * esz
        m, c, s = struct.unpack_from("<III", coefbuf, o)
        raw = le(coefbuf[o + 12:o + esz])
        # raw == coef * R^2 mod r  ->  true coefficient = raw * R^-2
        val = raw * ctx.Rr_inv * ctx.Rr_inv % ctx.r
        if m > 1:
            raise ValueError(f"coef {i}: matrix {m} not 0/1")
        if c >= n or s >= ctx.nVars:
            raise ValueError(f"coef {i}: out of range c={c} s={s}")
        ctx.coefs.append((m, c, s, val, raw))

    ctx.A = points(5, sG1, ctx.nVars, g1_from_bytes)
    ctx.B1 = points(6, sG1, ctx.nVars, g1_from_bytes)
    ctx.B2 = points(7, sG2, ctx.nVars, g2_from_bytes)
    ctx.C = points(8, sG1, ctx.nVars - ctx.nPublic - 1, g1_from_bytes)
    ctx.H = points(9, sG1, n, g1_from_bytes)
    return ctx


def load_wtns(path):
    data, version, secs = read_binfile(path, b"wtns", 2)
    r = Reader(section(data, secs, 1))
    n8 = r.u32()
    prime = le(r.raw(n8))
    nw = r.u32()
    buf = section(data, secs, 2)
    if len(buf) != n8 * nw:
        raise ValueError("witness section size mismatch")
    w = [le(buf[i * n8:(i + 1) * n8]) for i in range(nw)]   # canonical, NOT Montgomery
    return {"version": version, "n8": n8, "prime": prime, "nWitness": nw, "w": w}


# ----------------------------------------------------------------------------
# Roots of unity exactly as snarkjs/ffjavascript (and rapidsnark) derive them
# ----------------------------------------------------------------------------
def fr_roots(r):
    nqr = 2
    while pow(nqr, (r - 1) // 2, r) != r - 1:
        nqr += 1
    s, t = 0, r - 1
    while t % 2 == 0:
        s += 1
        t //= 2
    w = [0] * (s + 1)
    w[s] = pow(nqr, t, r)
    for i in range(s - 1, -1, -1):
        w[i] = w[i + 1] * w[i + 1] % r
    assert w[0] == 1
    shift = nqr * nqr % r
    return nqr, s, w, shift


def dft(vals, root, r):
    n = len(vals)
    out = []
    for j in range(n):
        wj = pow(root, j, r)
        acc, x = 0, 1
        for i in range(n):
            acc += vals[i] * x
            x = x * wj % r
        out.append(acc % r)
    return out


def idft(vals, root, r):
    n = len(vals)
    inv_root = pow(root, -1, r)
    ninv = pow(n, -1, r)
    return [v * ninv % r for v in dft(vals, inv_root, r)]


# ----------------------------------------------------------------------------
# Prover (spec section 4)
# ----------------------------------------------------------------------------
def prove(ctx, wt, r_blind=None, s_blind=None, dump=None):
    R = ctx.r
    if wt["prime"] != ctx.r:
        raise ValueError("witness prime != zkey r")
    if wt["nWitness"] != ctx.nVars:
        raise ValueError("witness length != nVars")
    w = wt["w"]
    n = ctx.domainSize
    k = n.bit_length() - 1

    # 1. A/B evaluations on the domain from the coefficient section
    a = [0] * n
    b = [0] * n
    for (m, c, s, val, _raw) in ctx.coefs:
        tgt = a if m == 0 else b
        tgt[c] = (tgt[c] + val * w[s]) % R
    c_ev = [a[i] * b[i] % R for i in range(n)]   # C evaluations := A*B pointwise

    # 2. move to the odd coset: iFFT, multiply coef i by inc^i, FFT
    nqr, two_adicity, wroots, shift = fr_roots(R)
    if k > two_adicity:
        raise ValueError("domain too large")
    inc = shift if k == two_adicity else wroots[k + 1]
    omega = wroots[k]

    def to_coset(ev):
        coeffs = idft(ev, omega, R)
        coeffs = [coeffs[i] * pow(inc, i, R) % R for i in range(n)]
        return dft(coeffs, omega, R)

    a_odd, b_odd, c_odd = to_coset(a), to_coset(b), to_coset(c_ev)
    h = [(a_odd[i] * b_odd[i] - c_odd[i]) % R for i in range(n)]

    # 3. MSMs (scalars are canonical integers)
    G1, G2 = ctx.G1, ctx.G2
    pi_a = G1.msm(ctx.A, w)
    pib1 = G1.msm(ctx.B1, w)
    pi_b = G2.msm(ctx.B2, w)
    pi_c = G1.msm(ctx.C, w[ctx.nPublic + 1:])
    pi_h = G1.msm(ctx.H, h)

    if dump is not None:
        dump.update({
            "curve": ctx.curve, "domainSize": n, "power": k,
            "omega": str(omega), "coset_inc": str(inc), "nqr": nqr,
            "a_eval": [str(x) for x in a], "b_eval": [str(x) for x in b],
            "c_eval": [str(x) for x in c_ev],
            "a_coset": [str(x) for x in a_odd], "b_coset": [str(x) for x in b_odd],
            "c_coset": [str(x) for x in c_odd], "h": [str(x) for x in h],
            "msm_A": g1_obj(pi_a), "msm_B1": g1_obj(pib1), "msm_B2": g2_obj(pi_b),
            "msm_C": g1_obj(pi_c), "msm_H": g1_obj(pi_h),
        })

    # 4. blinding
    rr = secrets.randbelow(R) if r_blind is None else r_blind % R
    ss = secrets.randbelow(R) if s_blind is None else s_blind % R

    pi_a = G1.add(G1.add(pi_a, ctx.alpha1), G1.mul(ctx.delta1, rr))
    pi_b = G2.add(G2.add(pi_b, ctx.beta2), G2.mul(ctx.delta2, ss))
    pib1 = G1.add(G1.add(pib1, ctx.beta1), G1.mul(ctx.delta1, ss))
    pi_c = G1.add(pi_c, pi_h)
    pi_c = G1.add(pi_c, G1.mul(pi_a, ss))
    pi_c = G1.add(pi_c, G1.mul(pib1, rr))
    pi_c = G1.add(pi_c, G1.mul(ctx.delta1, (-(rr * ss)) % R))

    proof = {
        "pi_a": g1_obj(pi_a),
        "pi_b": g2_obj(pi_b),
        "pi_c": g1_obj(pi_c),
        "protocol": "groth16",
        "curve": ctx.curve,
    }
    public = [str(w[i]) for i in range(1, ctx.nPublic + 1)]
    return proof, public


def g1_obj(P):
    if P is None:
        return ["0", "1", "0"]
    return [str(P[0]), str(P[1]), "1"]


def g2_obj(P):
    if P is None:
        return [["0", "0"], ["1", "0"], ["0", "0"]]
    (x0, x1), (y0, y1) = P
    return [[str(x0), str(x1)], [str(y0), str(y1)], ["1", "0"]]


def main(argv):
    args, opts = [], {}
    i = 0
    while i < len(argv):
        if argv[i] in ("--r", "--s", "--dump"):
            opts[argv[i]] = argv[i + 1]
            i += 2
        elif argv[i] == "--info":
            opts["--info"] = True
            i += 1
        else:
            args.append(argv[i])
            i += 1
    if len(args) != 4:
        print(__doc__)
        return 2
    zkey_p, wtns_p, proof_p, public_p = args
    ctx = load_zkey(zkey_p)
    wt = load_wtns(wtns_p)
    if opts.get("--info"):
        print(f"zkey version={ctx.zkey_version} sections(in file order)={ctx.section_order}")
        print(f"curve={ctx.curve} n8q={ctx.n8q} n8r={ctx.n8r}")
        print(f"q={ctx.q}\nr={ctx.r}")
        print(f"nVars={ctx.nVars} nPublic={ctx.nPublic} domainSize={ctx.domainSize} nCoefs={len(ctx.coefs)}")
        print(f"alpha1={ctx.alpha1}\nbeta2={ctx.beta2}\ndelta1={ctx.delta1}")
        print("first coefs (m,c,s,value,raw):")
        for cf in ctx.coefs[:4]:
            print("  ", cf)
        print(f"wtns version={wt['version']} n8={wt['n8']} nWitness={wt['nWitness']} w={wt['w']}")
    dump = {} if "--dump" in opts else None
    rb = int(opts["--r"]) if "--r" in opts else None
    sb = int(opts["--s"]) if "--s" in opts else None
    proof, public = prove(ctx, wt, rb, sb, dump)
    with open(proof_p, "w") as f:
        json.dump(proof, f, indent=1)
    with open(public_p, "w") as f:
        json.dump(public, f, indent=1)
    if dump is not None:
        with open(opts["--dump"], "w") as f:
            json.dump(dump, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
