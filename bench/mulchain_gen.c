/* mulchain_gen.c — the mulchain fixture without circom: writes circuit.r1cs and
 * witness.wtns of tests/fixtures/circuits/mulchain.circom instantiated with
 * N = 2^K - 3 constraints (component main {public [x]}, input x = 7, k = 1234567,
 * mulchain.input.json), byte for byte what circom 2 (--O1) and its witness
 * calculator write for that circuit; tests/scripts/mulchain_gen.sh compares them.
 * circom2 (WASM) needs more than half an hour at 2^20; this needs about a second.
 *
 *   mulchain_gen [--curve bn128|bls12381] K OUTDIR      (4 <= K <= 28)
 *
 * Circom's layout, read off its files:
 *   wires: 0 the constant 1, 1 out, 2 x, 3 k, 4 + i t[i] (i = 0 .. N-2); N + 3 = 2^K
 *     wires, label i for wire i (no signal is optimised away);
 *   constraints, each A * B = C with the products' operands negated into A and C:
 *     t[0] = x * k:                     A = -x,               B = k,      C = -t[0]
 *     t[i] = t[i-1] * (t[i-1] + x + i): A = -i - x - t[i-1],  B = t[i-1], C = -t[i]
 *     out = t[N-2] * (x + k):           A = -x - k,           B = t[N-2], C = -out
 *   (terms in circom's order, wire_before; coefficients canonical little-endian, "-i"
 *   is p - i);
 *   sections in the order 2 (constraints), 1 (header), 3 (wire -> label).
 * The witness is a .wtns version 2 (wtns_write), values canonical.
 * Not a benchmark: bench/run.sh skips it; tests/fixtures/make.sh calls it. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "zk/field.h"
#include "zk/wtns.h"

#define MC_X 7
#define MC_K 1234567

typedef struct gen {
    const field_desc *F;
    FILE *f;
    uint32_t n8;
} gen;

static void put_u32(gen *g, uint32_t v)
{
    fwrite(&v, 4, 1, g->f); /* little-endian hosts only (x86-64, aarch64) */
}

static void put_u64(gen *g, uint64_t v)
{
    fwrite(&v, 8, 1, g->f);
}

static void put_fe(gen *g, const uint64_t *v) /* canonical, n8 bytes */
{
    fwrite(v, g->n8, 1, g->f);
}

/* One term: wire id, coefficient -c (c a small integer, canonical p - c). */
static void put_term_neg(gen *g, uint32_t wire, uint64_t c)
{
    uint64_t a[FE_MAX_LIMBS] = { c }, r[FE_MAX_LIMBS];
    fe_neg(g->F, r, a);
    put_u32(g, wire);
    put_fe(g, r);
}

static void put_term_one(gen *g, uint32_t wire)
{
    uint64_t one[FE_MAX_LIMBS] = { 1 };
    put_u32(g, wire);
    put_fe(g, one);
}

static void put_section(gen *g, uint32_t id, uint64_t size)
{
    put_u32(g, id);
    put_u64(g, size);
}

/* Circom's order of the terms of a linear combination: by the wire id's little-endian
 * bytes, compared as a byte string (so 256 and 257 come before 2, 258 after it), which
 * is the numeric order of the byte-swapped id. */
static int wire_before(uint32_t a, uint32_t b)
{
    return __builtin_bswap32(a) < __builtin_bswap32(b);
}

/* circuit.r1cs for n constraints (n + 3 wires). 0 or -1 with errno. */
static int write_r1cs(gen *g, const char *path, uint32_t n)
{
    uint32_t nwires = n + 3, term = 4 + g->n8;
    if (!(g->f = fopen(path, "wb"))) return -1;
    fwrite("r1cs", 4, 1, g->f);
    put_u32(g, 1); /* version */
    put_u32(g, 3); /* sections */
    /* constraint 0: 1+1+1 terms; 1 .. n-2: 3+1+1; n-1: 2+1+1; plus 3 counts each */
    put_section(g, 2, (uint64_t)12 * n + (uint64_t)term * (3 + 5 * (uint64_t)(n - 2) + 4));
    put_u32(g, 1), put_term_neg(g, 2, 1); /* t[0] = x * k */
    put_u32(g, 1), put_term_one(g, 3);
    put_u32(g, 1), put_term_neg(g, 4, 1);
    for (uint32_t i = 1; i + 1 < n; i++) { /* t[i] = t[i-1] * (t[i-1] + x + i) */
        put_u32(g, 3), put_term_neg(g, 0, i);
        if (wire_before(i + 3, 2))
            put_term_neg(g, i + 3, 1), put_term_neg(g, 2, 1);
        else
            put_term_neg(g, 2, 1), put_term_neg(g, i + 3, 1);
        put_u32(g, 1), put_term_one(g, i + 3);
        put_u32(g, 1), put_term_neg(g, i + 4, 1);
    }
    put_u32(g, 2), put_term_neg(g, 2, 1), put_term_neg(g, 3, 1); /* out = t[n-2] * (x + k) */
    put_u32(g, 1), put_term_one(g, n + 2);
    put_u32(g, 1), put_term_neg(g, 1, 1);

    put_section(g, 1, g->n8 + 32);
    put_u32(g, g->n8);
    put_fe(g, g->F->p);
    put_u32(g, nwires);
    put_u32(g, 1); /* public outputs: out */
    put_u32(g, 1); /* public inputs: x */
    put_u32(g, 1); /* private inputs: k */
    put_u64(g, nwires);
    put_u32(g, n);

    put_section(g, 3, (uint64_t)8 * nwires);
    for (uint32_t w = 0; w < nwires; w++) put_u64(g, w);
    int bad = ferror(g->f);
    if (fclose(g->f) || bad) return -1;
    return 0;
}

/* The n + 3 witness values, canonical, into v (n8 bytes each). */
static void witness(const field_desc *F, uint32_t n, uint8_t *v, uint32_t n8)
{
    uint64_t x[FE_MAX_LIMBS] = { MC_X }, k[FE_MAX_LIMBS] = { MC_K }, t[FE_MAX_LIMBS], s[FE_MAX_LIMBS],
             im[FE_MAX_LIMBS], c[FE_MAX_LIMBS];
    fe_to_mont(F, x, x);
    fe_to_mont(F, k, k);
#define PUT(w, m)                          \
    do {                                   \
        fe_from_mont(F, c, m);             \
        memcpy(v + (size_t)(w)*n8, c, n8); \
    } while (0)
    fe_set_one(F, c);
    PUT(0, c);
    PUT(2, x);
    PUT(3, k);
    fe_mul(F, t, x, k); /* t[0] */
    PUT(4, t);
    fe_set_zero(F, im);
    for (uint32_t i = 1; i + 1 < n; i++) {
        fe_add(F, im, im, F->one); /* i, Montgomery */
        fe_add(F, s, t, x);
        fe_add(F, s, s, im);
        fe_mul(F, t, t, s);
        PUT(i + 4, t);
    }
    fe_add(F, s, x, k);
    fe_mul(F, t, t, s);
    PUT(1, t);
#undef PUT
}

int main(int argc, char **argv)
{
    const field_desc *F = &FIELD_BN254_FR;
    int a = 1;
    if (a + 1 < argc && !strcmp(argv[a], "--curve")) {
        if (!strcmp(argv[a + 1], "bls12381"))
            F = &FIELD_BLS12_381_FR;
        else if (strcmp(argv[a + 1], "bn128"))
            a = argc; /* usage */
        a += 2;
    }
    char *end = NULL;
    long kk = a + 2 == argc ? strtol(argv[a], &end, 10) : 0;
    if (a + 2 != argc || !end || *end || kk < 4 || kk > 28) {
        fprintf(stderr,
                "usage: mulchain_gen [--curve bn128|bls12381] K OUTDIR   (4 <= K <= 28)\n"
                "writes OUTDIR/circuit.r1cs and OUTDIR/witness.wtns of mulchain with 2^K - 3 "
                "constraints (x = %d, k = %d)\n",
                MC_X, MC_K);
        return 2;
    }
    const char *dir = argv[a + 1];
    uint32_t n = (1u << kk) - 3, n8 = 32;
    char path[4096], err[512];
    gen g = { F, NULL, n8 };
    snprintf(path, sizeof path, "%s/circuit.r1cs", dir);
    if (write_r1cs(&g, path, n)) {
        fprintf(stderr, "mulchain_gen: cannot write %s: %s\n", path, strerror(errno));
        return 1;
    }
    uint8_t *v = malloc((size_t)(n + 3) * n8);
    if (!v) {
        fprintf(stderr, "mulchain_gen: out of memory for %u witness values\n", n + 3);
        return 1;
    }
    witness(F, n, v, n8);
    snprintf(path, sizeof path, "%s/witness.wtns", dir);
    int rc = wtns_write(path, F, n + 3, v, err, sizeof err);
    free(v);
    if (rc) {
        fprintf(stderr, "mulchain_gen: %s\n", err);
        return 1;
    }
    return 0;
}
