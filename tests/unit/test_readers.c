/* test_readers.c — the iden3 container, .zkey, .wtns and .r1cs readers against the
 * reference snarkjs fixtures in tests/fixtures/snarkjs-groth16/ (spec §8 worked
 * example, refprover --info) and against corrupted copies made in a mkdtemp directory
 * (test_ref_fixture finds the fixtures from any working directory). */
#include <check.h>
#include <errno.h>
#include <ftw.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "zk/binfile.h"
#include "base/error.h"
#include "zk/r1cs.h"
#include "zk/wtns.h"
#include "zk/zkey.h"

#include "helper_test.h"

static char tmpdir[PATH_MAX];
static char err[1024];

static const char *fx(const char *set, const char *file)
{
    static char buf[4][PATH_MAX + 64];
    static int k;
    char *p = buf[k++ & 3];
    test_ref_fixture(p, PATH_MAX + 64, set, file);
    return p;
}

static const char *tmp(const char *name)
{
    static char buf[4][PATH_MAX + 64];
    static int k;
    char *p = buf[k++ & 3];
    snprintf(p, PATH_MAX + 64, "%s/%s", tmpdir, name);
    return p;
}

static uint8_t *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    ck_assert_msg(f != NULL, "cannot open fixture %s: %s (set CUZK_REF_FIXTURES)", path, strerror(errno));
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    uint8_t *b = malloc((size_t)n + 1);
    ck_assert(b != NULL);
    ck_assert_int_eq(fread(b, 1, (size_t)n, f), (size_t)n);
    fclose(f);
    *len = (size_t)n;
    return b;
}

static const char *spit(const char *name, const uint8_t *b, size_t len)
{
    const char *p = tmp(name);
    FILE *f = fopen(p, "wb");
    ck_assert(f != NULL);
    ck_assert_int_eq(fwrite(b, 1, len, f), len);
    fclose(f);
    return p;
}

static uint32_t get32(const uint8_t *p)
{
    uint32_t v;
    memcpy(&v, p, 4);
    return v;
}
static void put32(uint8_t *p, uint32_t v)
{
    memcpy(p, &v, 4);
}
static void put64(uint8_t *p, uint64_t v)
{
    memcpy(p, &v, 8);
}

/* Offset of the 12-byte record of the first section with this id in a container image. */
static size_t record_of(const uint8_t *b, size_t len, uint32_t id)
{
    size_t off = 12;
    for (uint32_t i = 0; i < get32(b + 8) && off + 12 <= len; i++) {
        uint64_t sz;
        memcpy(&sz, b + off + 4, 8);
        if (get32(b + off) == id) return off;
        off += 12 + sz;
    }
    ck_abort_msg("no section %u", id);
    return 0;
}

/* The bn128 fixture `file` read whole (*len bytes; free it), and in *data where the
 * payload of its first section with this id starts (past the 12-byte record). */
static uint8_t *slurp_section(const char *file, uint32_t id, size_t *len, size_t *data)
{
    uint8_t *b = slurp(fx("bn128", file), len);

    *data = record_of(b, *len, id) + 12;
    return b;
}

static int rm_cb(const char *p, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)sb, (void)flag, (void)ftw;
    return remove(p);
}

static void setup(void)
{
    snprintf(tmpdir, sizeof tmpdir, "/tmp/cuzk-readers-XXXXXX");
    ck_assert(mkdtemp(tmpdir) != NULL);
    err[0] = 0;
}

static void teardown(void)
{
    nftw(tmpdir, rm_cb, 8, FTW_DEPTH | FTW_PHYS);
}

#define ck_rc(expr, code)                                                                                 \
    do {                                                                                                  \
        int rc_ = (expr);                                                                                 \
        ck_assert_msg(rc_ == (code), "%s = %d (%s), want %d: %s", #expr, rc_, cuzk_err_name(rc_), (code), \
                      err);                                                                               \
    } while (0)
#define ck_err_has(s) ck_assert_msg(strstr(err, (s)) != NULL, "message \"%s\" lacks \"%s\"", err, (s))

/* Open the file at path with the reader its extension names (.zkey, .wtns, .r1cs),
 * close it again when it opened, and return the open's status (err: its message). */
static int open_by_ext(const char *path)
{
    const char *ext = strrchr(path, '.');
    zkey z;
    wtns w;
    r1cs r;
    int rc;

    err[0] = 0;
    ck_assert_msg(ext != NULL, "%s: no extension", path);
    if (strcmp(ext, ".zkey") == 0) {
        if ((rc = zkey_open(&z, path, err, sizeof err)) == 0) zkey_close(&z);
    } else if (strcmp(ext, ".wtns") == 0) {
        if ((rc = wtns_open(&w, path, err, sizeof err)) == 0) wtns_close(&w);
    } else {
        ck_assert_msg(strcmp(ext, ".r1cs") == 0, "%s: not a .zkey, .wtns or .r1cs", path);
        if ((rc = r1cs_open(&r, path, err, sizeof err)) == 0) r1cs_close(&r);
    }
    return rc;
}

/* The image b (len bytes), written as the temp file NAME, must open with status rc
 * and, unless WORD is NULL, a message that holds WORD. */
static void ck_open_copy(const uint8_t *b, size_t len, const char *name, int rc, const char *word)
{
    int got = open_by_ext(spit(name, b, len));

    ck_assert_msg(got == rc, "%s: open = %d (%s), want %d: %s", name, got, cuzk_err_name(got), rc, err);
    if (word) ck_err_has(word);
}

/* ---- fixtures decode to the documented values ------------------------------ */

struct fixture {
    const char *set;
    uint32_t n8q, nvars, npublic, domain, ncoefs, nconstraints;
    enum field_id fr;
    const char *alpha1_x, *delta1_x; /* canonical, from refprover --info */
    uint32_t first[4][3];            /* first four coefficient (matrix, constraint, signal) */
    const char *w1;                  /* witness value 1 */
};

static const struct fixture fixtures[] = {
    { "bn128",
      32,
      9,
      2,
      16,
      15,
      6,
      FIELD_ID_BN254_FR,
      "1792387575567822892908979014139822501354456642316156660128060447195514052460",
      "6194565485409049946787765228109665837024135379007552034171109886991402334617",
      { { 0, 0, 3 }, { 1, 0, 3 }, { 0, 1, 4 }, { 1, 1, 3 } },
      "112568" },
    { "bn128-chain",
      32,
      45,
      5,
      64,
      195,
      0,
      FIELD_ID_BN254_FR,
      "1464066802366653075340878551138934534879481926123154416142552749018421324088",
      "21530867689176436582388368511961840637985703142967179986554665573788885807904",
      { { 0, 0, 6 }, { 1, 0, 7 }, { 0, 1, 3 }, { 0, 1, 8 } },
      "295025988379188686262199062659524312166911826122673544" },
    { "bls12381",
      48,
      9,
      2,
      16,
      15,
      6,
      FIELD_ID_BLS12_381_FR,
      "2652871491496946540897678577326639615329876372482978132276568843340440262165133128643181489011348490676313885155290",
      "1237337425779748233207178602514603195065260231782085461143890766361554607711137045969907880987282558807551663089347",
      { { 0, 0, 3 }, { 1, 0, 3 }, { 0, 1, 4 }, { 1, 1, 3 } },
      "112568" },
    { "bls12381-chain",
      48,
      45,
      5,
      64,
      195,
      0,
      FIELD_ID_BLS12_381_FR,
      "2586300784051838209447572680787216760401690010040238308340567397138645682872691981277152826055758846170594281433449",
      "3423045840603539154874792661595551400756371035263345165422887628188662478665938830594310667533054769443237505339351",
      { { 0, 0, 6 }, { 1, 0, 7 }, { 0, 1, 3 }, { 0, 1, 8 } },
      "21476105149610437832382708868323526510173140034044871858977382422862422555671" },
};
#define NFIX (sizeof fixtures / sizeof fixtures[0])

TEST(test_zkey_fixture_headers_match_refprover, (int)NFIX)
{
    const struct fixture *f = &fixtures[_i];
    zkey z;
    char dec[128];

    ck_rc(zkey_open(&z, fx(f->set, "circuit_final.zkey"), err, sizeof err), 0);
    ck_assert_uint_eq(z.n8q, f->n8q);
    ck_assert_uint_eq(z.n8r, 32);
    ck_assert_int_eq(z.Fr->id, f->fr);
    ck_assert_int_eq(z.g1->deg, 1);
    ck_assert_int_eq(z.g2->deg, 2);
    ck_assert_uint_eq(z.nvars, f->nvars);
    ck_assert_uint_eq(z.npublic, f->npublic);
    ck_assert_uint_eq(z.domain_size, f->domain);
    ck_assert_uint_eq(1u << z.lg_domain, f->domain);
    ck_assert_uint_eq(z.ncoefs, f->ncoefs);
    ck_assert_str_eq(fe_mont_to_dec(z.Fq, z.alpha1, dec, sizeof dec), f->alpha1_x);
    ck_assert_str_eq(fe_mont_to_dec(z.Fq, z.delta1, dec, sizeof dec), f->delta1_x);
    for (int i = 0; i < 4; i++) {
        uint32_t m, c, s;
        uint64_t v[FE_MAX_LIMBS] = { 0 };
        zkey_coef(&z, (uint64_t)i, &m, &c, &s, v);
        ck_assert_uint_eq(m, f->first[i][0]);
        ck_assert_uint_eq(c, f->first[i][1]);
        ck_assert_uint_eq(s, f->first[i][2]);
    }
    /* section payload pointers lie inside the mapping, one after the header */
    ck_assert(z.h + (uint64_t)z.domain_size * 2 * z.n8q <= z.bf.map + z.bf.size);
    zkey_close(&z);
    zkey_close(&z); /* twice is fine */
}
END_TEST

/* Spec §8: every coefficient of the bn128 fixture, decoded as raw * Rr^-2. */
TEST(test_zkey_bn128_worked_example, 1)
{
    static const struct {
        uint32_t m, c, s;
        int v;
    } want[15] = {
        { 0, 0, 3, -1 }, { 1, 0, 3, 1 },  { 0, 1, 4, -1 }, { 1, 1, 3, 1 },  { 0, 2, 5, -1 },
        { 1, 2, 2, 1 },  { 0, 3, 6, -1 }, { 1, 3, 4, 1 },  { 0, 4, 0, -7 }, { 0, 4, 7, -1 },
        { 1, 4, 2, 1 },  { 1, 4, 3, 1 },  { 0, 6, 0, 1 },  { 0, 7, 1, 1 },  { 0, 8, 2, 1 },
    };
    zkey z;
    char dec[128], exp[128];

    ck_rc(zkey_open(&z, fx("bn128", "circuit_final.zkey"), err, sizeof err), 0);
    ck_assert_str_eq(z.bf.magic, "zkey");
    ck_assert_uint_eq(z.bf.version, 1);
    ck_assert_uint_eq(z.bf.nsections, 10);
    ck_assert_uint_eq(binfile_section(&z.bf, 1)->offset, 24);
    ck_assert_uint_eq(binfile_section(&z.bf, 2)->offset, 40);
    ck_assert_uint_eq(binfile_section(&z.bf, 7)->size, 1152);
    ck_assert_ptr_null(binfile_section(&z.bf, 11));
    /* alpha1.x raw (Montgomery) integer, and decoded */
    ck_assert_str_eq(fe_canon_to_dec(z.Fq, z.alpha1, dec, sizeof dec),
                     "11433591847334821759727423731066742631984958734377391128014939150075060517938");
    for (int i = 0; i < 15; i++) {
        uint32_t m, c, s;
        uint64_t v[FE_MAX_LIMBS] = { 0 }, k[FE_MAX_LIMBS] = { 0 };
        zkey_coef(&z, (uint64_t)i, &m, &c, &s, v);
        ck_assert_uint_eq(m, want[i].m);
        ck_assert_uint_eq(c, want[i].c);
        ck_assert_uint_eq(s, want[i].s);
        if (i == 0)
            ck_assert_str_eq(fe_canon_to_dec(z.Fr, v, dec, sizeof dec),
                             "20943306190690066775594741490987529540057597548686591419080411327502682591834");
        if (i == 1)
            ck_assert_str_eq(fe_canon_to_dec(z.Fr, v, dec, sizeof dec),
                             "944936681149208446651664254269745548490766851729442924617792859073125903783");
        fe_from_mont(z.Fr, v, v); /* coef * Rr */
        fe_mont_to_dec(z.Fr, v, dec, sizeof dec);
        k[0] = (uint64_t)(want[i].v < 0 ? -want[i].v : want[i].v);
        if (want[i].v < 0)
            fe_sub(z.Fr, k, z.Fr->p, k); /* r - |v|: p is not reduced, but sub works limbwise */
        fe_canon_to_dec(z.Fr, k, exp, sizeof exp);
        ck_assert_msg(strcmp(dec, exp) == 0, "coef %d = %s, want %s", i, dec, exp);
    }
    zkey_close(&z);
}
END_TEST

TEST(test_wtns_fixture_values, (int)NFIX)
{
    static const char *const tiny[] = { "1", "112568", "11", "3", "9", "27", "297", "2673", "37520" };
    const struct fixture *f = &fixtures[_i];
    wtns w;
    zkey z;
    char dec[128];

    ck_rc(wtns_open(&w, fx(f->set, "witness.wtns"), err, sizeof err), 0);
    ck_assert_uint_eq(w.n8, 32);
    ck_assert_int_eq(w.Fr->id, f->fr);
    ck_assert_uint_eq(w.nwitness, f->nvars);
    for (uint32_t i = 0; i < w.nwitness; i++) {
        uint64_t v[FE_MAX_LIMBS] = { 0 };
        memcpy(v, w.values + 32 * i, 32);
        fe_canon_to_dec(w.Fr, v, dec, sizeof dec);
        if (i == 0) ck_assert_str_eq(dec, "1");
        if (i == 1) ck_assert_str_eq(dec, f->w1);
        if (f->nvars == 9) ck_assert_str_eq(dec, tiny[i]);
    }
    ck_rc(zkey_open(&z, fx(f->set, "circuit_final.zkey"), err, sizeof err), 0);
    ck_rc(wtns_check_zkey(&w, &z, err, sizeof err), 0);
    zkey_close(&z);
    wtns_close(&w);
}
END_TEST

TEST(test_r1cs_fixture_witness_satisfies, (int)NFIX)
{
    const struct fixture *f = &fixtures[_i];
    r1cs r;
    wtns w;
    uint32_t bad = 12345;

    ck_rc(r1cs_open(&r, fx(f->set, "circuit.r1cs"), err, sizeof err), 0);
    ck_assert_int_eq(r.Fr->id, f->fr);
    ck_assert_uint_eq(r.n8, 32);
    ck_assert_uint_eq(r.nwires, f->nvars);
    ck_assert_uint_eq(r.npubout + r.npubin, f->npublic);
    if (f->nconstraints) ck_assert_uint_eq(r.nconstraints, f->nconstraints);
    /* setup sizes the domain as the smallest power of two > nConstraints + nPublic (§3.2) */
    ck_assert_uint_le(r.nconstraints + f->npublic + 1, f->domain);
    ck_assert_uint_gt(2 * (r.nconstraints + f->npublic), f->domain - 1);
    ck_rc(wtns_open(&w, fx(f->set, "witness.wtns"), err, sizeof err), 0);
    ck_rc(r1cs_check_wtns(&r, &w, &bad, err, sizeof err), 0);
    ck_assert_uint_eq(bad, 12345);
    /* a shorter witness is a mismatch, not an out-of-bounds read */
    ck_rc(r1cs_check_witness(&r, w.values, w.nwitness - 1, &bad, err, sizeof err), -CUZK_E_MISMATCH);
    wtns_close(&w);
    r1cs_close(&r);
}
END_TEST

/* Changing one internal signal breaks the first constraint that reads it. bn128 tiny:
 * w6 = 297 = w5 * w2 is the output of constraint 2; w8 = 37520 of constraint 4. */
TEST(test_r1cs_changed_signal_names_constraint, 1)
{
    static const struct {
        const char *set;
        uint32_t sig, want;
    } cases[] = {
        { "bn128", 6, 2 },
        { "bn128", 8, 4 },
        { "bls12381", 6, 2 },
        { "bls12381", 4, 0 },
    };
    for (unsigned k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        size_t len;
        uint8_t *b = slurp(fx(cases[k].set, "witness.wtns"), &len);
        wtns w;
        r1cs r;
        uint32_t bad = 999;
        char want[64];

        ck_rc(wtns_open(&w, fx(cases[k].set, "witness.wtns"), err, sizeof err), 0);
        size_t voff = (size_t)(w.values - w.bf.map);
        wtns_close(&w);
        b[voff + 32 * cases[k].sig] ^= 1;
        const char *p = spit("patched.wtns", b, len);
        ck_rc(wtns_open(&w, p, err, sizeof err), 0);
        ck_rc(r1cs_open(&r, fx(cases[k].set, "circuit.r1cs"), err, sizeof err), 0);
        ck_rc(r1cs_check_wtns(&r, &w, &bad, err, sizeof err), -CUZK_E_UNSATISFIED);
        ck_assert_uint_eq(bad, cases[k].want);
        snprintf(want, sizeof want, "constraint %u of ", cases[k].want);
        ck_err_has(want);
        ck_err_has("circuit.r1cs");
        r1cs_close(&r);
        wtns_close(&w);
        free(b);
    }
}
END_TEST

/* ---- refusals ---------------------------------------------------------------- */

TEST(test_missing_file_is_io, 1)
{
    zkey z;
    wtns w;
    r1cs r;
    const char *p = tmp("nope.zkey");
    ck_rc(zkey_open(&z, p, err, sizeof err), -CUZK_E_IO);
    ck_err_has(p);
    ck_err_has(strerror(ENOENT));
    ck_rc(wtns_open(&w, tmp("nope.wtns"), err, sizeof err), -CUZK_E_IO);
    ck_rc(r1cs_open(&r, tmp("nope.r1cs"), err, sizeof err), -CUZK_E_IO);
    ck_rc(zkey_open(&z, tmpdir, err, sizeof err), -CUZK_E_IO); /* a directory */
    /* failed opens leave closed structs: closing is harmless */
    zkey_close(&z);
    wtns_close(&w);
    r1cs_close(&r);
    zkey zz;
    memset(&zz, 0, sizeof zz);
    zkey_close(&zz);
}
END_TEST

TEST(test_wrong_magic_is_format, 1)
{
    zkey z;
    wtns w;
    ck_rc(zkey_open(&z, fx("bn128", "witness.wtns"), err, sizeof err), -CUZK_E_FORMAT);
    ck_err_has("\"wtns\"");
    ck_err_has("witness.wtns");
    ck_rc(wtns_open(&w, fx("bn128", "circuit.r1cs"), err, sizeof err), -CUZK_E_FORMAT);
    ck_err_has("\"r1cs\"");
    uint8_t junk[64];
    memset(junk, 0x01, sizeof junk);
    ck_open_copy(junk, sizeof junk, "junk.zkey", -CUZK_E_FORMAT, "01 01 01 01");
}
END_TEST

TEST(test_truncated_anywhere_is_truncated, 1)
{
    static const char *const files[] = { "circuit_final.zkey", "witness.wtns", "circuit.r1cs" };
    for (unsigned fi = 0; fi < 3; fi++) {
        size_t len;
        uint8_t *b = slurp(fx("bn128", files[fi]), &len);
        /* inside the header, inside the first record, inside the first payload, inside
         * a later record, inside later payloads, one byte short */
        size_t cuts[] = { 0, 3, 8, 11, 12, 17, 23, 25, 27, 30, 39, 100, len / 2, len - 33, len - 1 };
        for (unsigned c = 0; c < sizeof cuts / sizeof cuts[0]; c++) {
            char name[32];
            snprintf(name, sizeof name, "cut%s", strrchr(files[fi], '.'));
            int rc = open_by_ext(spit(name, b, cuts[c]));
            ck_assert_msg(rc == -CUZK_E_TRUNCATED, "%s cut at %zu: %d (%s) %s", files[fi], cuts[c], rc,
                          cuzk_err_name(rc), err);
            ck_err_has(name);
        }
        free(b);
    }
}
END_TEST

TEST(test_zkey_corrupted_section_size, 1)
{
    size_t len;
    uint8_t *b = slurp(fx("bn128", "circuit_final.zkey"), &len);
    size_t r2 = record_of(b, len, 2);

    /* past the end */
    put64(b + r2 + 4, 1u << 30);
    ck_open_copy(b, len, "big.zkey", -CUZK_E_TRUNCATED, "section 2");
    /* 4 bytes short: the table walk lands inside section 2; whatever it then reads must
     * be refused, either as a bad table or as a bad section */
    put64(b + r2 + 4, 656);
    int rc = open_by_ext(spit("short.zkey", b, len));
    ck_assert_msg(rc == -CUZK_E_FORMAT || rc == -CUZK_E_TRUNCATED, "%d %s", rc, err);
    free(b);

    /* a consistent table, but nVars says 10: section 3 is fine, section 4 coefficients
     * too, section 5 has the wrong size */
    size_t h;
    b = slurp_section("circuit_final.zkey", 2, &len, &h);
    put32(b + h + 4 + 32 + 4 + 32, 10);
    ck_open_copy(b, len, "nvars.zkey", -CUZK_E_FORMAT, "section 5 (A)");
    ck_err_has("576 bytes, expected 640 for 10 signals");
    free(b);
}
END_TEST

TEST(test_zkey_section_table_refusals, 1)
{
    size_t len;
    uint8_t *b = slurp(fx("bn128", "circuit_final.zkey"), &len);

    put32(b + record_of(b, len, 10), 4); /* a second section 4 */
    ck_open_copy(b, len, "dup.zkey", -CUZK_E_FORMAT, "2 sections with id 4");
    put32(b + record_of(b, len, 4), 10);
    put32(b + record_of(b, len, 5), 11); /* no section 5 */
    ck_open_copy(b, len, "nosec.zkey", -CUZK_E_FORMAT, "no section 5 (A)");
    free(b);

    b = slurp(fx("bn128", "circuit_final.zkey"), &len);
    put32(b + 4, 3);
    ck_open_copy(b, len, "v3.zkey", -CUZK_E_UNSUPPORTED, "version 3");
    put32(b + 4, 2); /* snarkjs accepts <= 2 */
    ck_open_copy(b, len, "v2.zkey", 0, NULL);
    put32(b + 4, 0);
    ck_open_copy(b, len, "v0.zkey", -CUZK_E_FORMAT, NULL);
    put32(b + 4, 1);
    put32(b + 8, 1000000); /* more records than the file can hold */
    ck_open_copy(b, len, "nsec.zkey", -CUZK_E_TRUNCATED, NULL);
    free(b);
}
END_TEST

TEST(test_zkey_protocol_refusals, 1)
{
    static const struct {
        uint32_t id;
        const char *word;
    } cases[] = { { 2, "PLONK" }, { 10, "FFLONK" }, { 7, "unknown protocol id 7" } };
    size_t len, p1;
    uint8_t *b = slurp_section("circuit_final.zkey", 1, &len, &p1);
    for (unsigned k = 0; k < 3; k++) {
        put32(b + p1, cases[k].id);
        ck_open_copy(b, len, "proto.zkey", -CUZK_E_UNSUPPORTED, cases[k].word);
    }
    free(b);
}
END_TEST

TEST(test_zkey_unknown_curve, 1)
{
    size_t len, h;
    uint8_t *b = slurp_section("circuit_final.zkey", 2, &len, &h);

    b[h + 4] ^= 0x02; /* q's low byte: 0x47 -> 0x45 */
    ck_open_copy(b, len, "q.zkey", -CUZK_E_UNSUPPORTED,
                 "q=0x30644e72e131a029b85045b68181585d97816a916871ca8d3c208c16d87cfd45");
    ck_err_has("BN254 and BLS12-381");
    b[h + 4] ^= 0x02;
    b[h + 4 + 32 + 4] ^= 0x02; /* r */
    ck_open_copy(b, len, "r.zkey", -CUZK_E_UNSUPPORTED, NULL);
    b[h + 4 + 32 + 4] ^= 0x02;
    put32(b + h, 48); /* n8q 48: n8r is then read from inside q, and no longer fits the section */
    ck_open_copy(b, len, "n8q.zkey", -CUZK_E_FORMAT, "too short");
    free(b);
}
END_TEST

TEST(test_zkey_content_refusals, 1)
{
    size_t len, h;
    uint8_t *b = slurp_section("circuit_final.zkey", 2, &len, &h);
    size_t c4 = record_of(b, len, 4) + 12 + 4;
    size_t dom = h + 4 + 32 + 4 + 32 + 8, alpha = h + 4 + 32 + 4 + 32 + 12;

    b[alpha + 5] ^= 0x10; /* alpha1.x off the curve */
    ck_open_copy(b, len, "alpha.zkey", -CUZK_E_FORMAT, "alpha1");
    b[alpha + 5] ^= 0x10;

    put32(b + dom, 24);
    ck_open_copy(b, len, "dom.zkey", -CUZK_E_FORMAT, "not a power of two");
    put32(b + dom, 1u << 28); /* BN254 2-adicity: refused before section sizes */
    ck_open_copy(b, len, "dom28.zkey", -CUZK_E_UNSUPPORTED, "2^28");
    put32(b + dom, 16);

    put32(b + c4 + 8, 9); /* signal 9 of 9 */
    ck_open_copy(b, len, "sig.zkey", -CUZK_E_FORMAT, "signal 9");
    put32(b + c4 + 8, 3);
    put32(b + c4 + 4, 16); /* constraint outside the domain */
    ck_open_copy(b, len, "row.zkey", -CUZK_E_FORMAT, "constraint 16");
    put32(b + c4 + 4, 0);
    put32(b + c4, 2); /* matrix C is never stored */
    ck_open_copy(b, len, "mat.zkey", -CUZK_E_FORMAT, "matrix 2");
    put32(b + c4, 0);
    memset(b + c4 + 12, 0xff, 32); /* value >= r */
    ck_open_copy(b, len, "val.zkey", -CUZK_E_FORMAT, "coefficient 0");
    free(b);
}
END_TEST

TEST(test_wtns_mismatch_with_zkey, 1)
{
    size_t len;
    uint8_t *b = slurp(fx("bn128", "witness.wtns"), &len);
    zkey z;
    wtns w;

    ck_rc(zkey_open(&z, fx("bn128", "circuit_final.zkey"), err, sizeof err), 0);
    /* drop the last value: header count 8, section 2 one value shorter */
    size_t r1 = record_of(b, len, 1), r2 = record_of(b, len, 2);
    put32(b + r1 + 12 + 4 + 32, 8);
    put64(b + r2 + 4, 8 * 32);
    ck_assert_uint_eq(r2 + 12 + 9 * 32, len); /* section 2 is last */
    ck_rc(wtns_open(&w, spit("short.wtns", b, len - 32), err, sizeof err), 0);
    ck_rc(wtns_check_zkey(&w, &z, err, sizeof err), -CUZK_E_MISMATCH);
    ck_err_has("has 8 values");
    ck_err_has("expects 9");
    ck_err_has("another circuit");
    wtns_close(&w);

    ck_rc(wtns_open(&w, fx("bls12381", "witness.wtns"), err, sizeof err), 0);
    ck_rc(wtns_check_zkey(&w, &z, err, sizeof err), -CUZK_E_MISMATCH);
    ck_err_has("BLS12-381");
    ck_err_has("another curve");
    wtns_close(&w);
    zkey_close(&z);
    free(b);
}
END_TEST

TEST(test_wtns_content_refusals, 1)
{
    size_t len;
    uint8_t *b = slurp(fx("bn128", "witness.wtns"), &len);
    size_t r1 = record_of(b, len, 1), r2 = record_of(b, len, 2);

    memset(b + r2 + 12 + 32 * 3, 0xff, 32); /* w[3] >= r */
    ck_open_copy(b, len, "big.wtns", -CUZK_E_FORMAT, "value 3");
    free(b);
    b = slurp(fx("bn128", "witness.wtns"), &len);
    put32(b + r1 + 12 + 4 + 32, 10); /* count says 10, section holds 9 */
    ck_open_copy(b, len, "count.wtns", -CUZK_E_FORMAT, "expected 320 for 10 values");
    put32(b + r1 + 12 + 4 + 32, 9);
    b[r1 + 12 + 4] ^= 0x04; /* prime */
    ck_open_copy(b, len, "prime.wtns", -CUZK_E_UNSUPPORTED, "witness prime");
    b[r1 + 12 + 4] ^= 0x04;
    put32(b + r1 + 12, 48); /* n8 48: the section would be 4 + 48 + 4 bytes */
    ck_open_copy(b, len, "n8.wtns", -CUZK_E_FORMAT, "expected 4 + n8 + 4 = 56");
    put32(b + r1 + 12, 32);
    put32(b + 4, 1); /* version 1 has the same layout */
    ck_open_copy(b, len, "v1.wtns", 0, NULL);
    put32(b + 4, 3);
    ck_open_copy(b, len, "v3.wtns", -CUZK_E_UNSUPPORTED, NULL);
    free(b);
}
END_TEST

TEST(test_r1cs_content_refusals, 1)
{
    size_t len, s2;
    uint8_t *b = slurp_section("circuit.r1cs", 2, &len, &s2);
    r1cs r;
    wtns w;

    /* constraint 0, A, first term: wire id past nWires */
    put32(b + s2 + 4, 9);
    ck_open_copy(b, len, "wire.r1cs", -CUZK_E_FORMAT, "wire 9");
    free(b);
    b = slurp(fx("bn128", "circuit.r1cs"), &len);
    put32(b + s2, 1000); /* term count runs past the section */
    ck_open_copy(b, len, "terms.r1cs", -CUZK_E_FORMAT, NULL);
    free(b);
    b = slurp(fx("bn128", "circuit.r1cs"), &len);
    put32(b + 4, 2);
    ck_open_copy(b, len, "v2.r1cs", -CUZK_E_UNSUPPORTED, NULL);
    free(b);
    /* section 1 starts as a witness's does (wtns_open_fr_file): the prime, n8 */
    b = slurp(fx("bn128", "circuit.r1cs"), &len);
    size_t r1 = record_of(b, len, 1);
    b[r1 + 12 + 4] ^= 0x04; /* prime */
    ck_open_copy(b, len, "prime.r1cs", -CUZK_E_UNSUPPORTED, "circuit prime");
    ck_err_has("another --prime");
    b[r1 + 12 + 4] ^= 0x04;
    put32(b + r1 + 12, 48); /* n8 48: the section would be 4 + 48 + 28 bytes */
    ck_open_copy(b, len, "n8.r1cs", -CUZK_E_FORMAT, "expected 4 + n8 + 28 = 80");
    free(b);

    /* a BLS12-381 witness against a BN254 circuit */
    ck_rc(r1cs_open(&r, fx("bn128", "circuit.r1cs"), err, sizeof err), 0);
    ck_rc(wtns_open(&w, fx("bls12381", "witness.wtns"), err, sizeof err), 0);
    ck_rc(r1cs_check_wtns(&r, &w, NULL, err, sizeof err), -CUZK_E_MISMATCH);
    wtns_close(&w);
    r1cs_close(&r);
}
END_TEST

int main(void)
{
    const struct test_opts o = { .setup = setup, .teardown = teardown };

    return test_main("readers", &o);
}
