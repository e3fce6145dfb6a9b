/* wgen.c — load a .wgen and compute witnesses from input.json (wgen.h). */
#include "synth/wgen.h"

#include <dlfcn.h>
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <gmp.h>
#include <jansson.h>

#include "base/error.h"
#include "zk/fingerprint.h"
#include "zk/zkey.h"

enum { WGEN_NAME_MAX = 512 }; /* longest qualified signal name we build */

static int wgen_err(char *err, size_t errlen, int code, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static int wgen_err(char *err, size_t errlen, int code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    if (err && errlen) vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
    return -code;
}

static const char *fr_curve(const field_desc *Fr)
{
    return Fr->id == FIELD_ID_BN254_FR ? "BN254 (bn128)" : "BLS12-381";
}

void wgen_close(wgen *g)
{
    if (!g) return;
    if (g->dl) dlclose(g->dl);
    memset(g, 0, sizeof *g);
}

int wgen_open(wgen *g, const char *path, char *err, size_t errlen)
{
    char p[sizeof g->path];

    memset(g, 0, sizeof *g);
    /* dlopen searches the library path for a name without a slash: "g.wgen" is meant
     * as the file in the current directory */
    if (snprintf(p, sizeof p, "%s%s", strchr(path, '/') ? "" : "./", path) >= (int)sizeof p)
        return wgen_err(err, errlen, CUZK_E_IO, "%s: path too long", path);
    FILE *f = fopen(p, "rb");
    if (!f)
        return wgen_err(err, errlen, CUZK_E_IO, "cannot open witness generator %s: %s", path,
                        strerror(errno));
    if (fstat(fileno(f), &g->st) != 0) {
        int e = errno;
        fclose(f);
        return wgen_err(err, errlen, CUZK_E_IO, "cannot stat witness generator %s: %s", path, strerror(e));
    }
    unsigned char magic[4] = { 0 };
    size_t got = fread(magic, 1, 4, f);
    fclose(f);
    if (got != 4 || memcmp(magic, "\177ELF", 4) != 0)
        return wgen_err(
            err, errlen, CUZK_E_FORMAT,
            "%s is not a witness generator (not a shared object): build one with cuzk build-witness", path);
    dlerror();
    g->dl = dlopen(p, RTLD_NOW | RTLD_LOCAL);
    if (!g->dl)
        return wgen_err(err, errlen, CUZK_E_IO, "cannot load witness generator %s: %s", path, dlerror());
    const struct cuzk_wgen_desc *(*describe)(void) =
        (const struct cuzk_wgen_desc *(*)(void))dlsym(g->dl, "cuzk_wgen_describe");
    g->ctx_new = (void *(*)(void))dlsym(g->dl, "cuzk_wgen_new");
    g->ctx_set = (void (*)(void *, uint64_t, const uint64_t *))dlsym(g->dl, "cuzk_wgen_set");
    g->ctx_run = (int (*)(void *, char *, size_t))dlsym(g->dl, "cuzk_wgen_run");
    g->ctx_get = (void (*)(void *, uint32_t, uint32_t, uint8_t *))dlsym(g->dl, "cuzk_wgen_get");
    g->ctx_free = (void (*)(void *))dlsym(g->dl, "cuzk_wgen_free");
    int rc;
    if (!describe || !g->ctx_new || !g->ctx_set || !g->ctx_run || !g->ctx_get || !g->ctx_free) {
        rc = wgen_err(
            err, errlen, CUZK_E_FORMAT,
            "%s is a shared object but not a witness generator (no cuzk_wgen_* functions): build one "
            "with cuzk build-witness",
            path);
        goto fail;
    }
    /* optional: generators built before it, or without --r1cs, have no fingerprint */
    const uint8_t *(*fingerprint)(void) = (const uint8_t *(*)(void))dlsym(g->dl, "cuzk_wgen_fingerprint");
    g->fp = fingerprint ? fingerprint() : NULL;
    /* the version is the first field of every ABI's description */
    g->d = describe();
    if (g->d->abi != CUZK_WGEN_ABI) {
        rc = wgen_err(err, errlen, CUZK_E_FORMAT,
                      "%s was built for witness generator ABI %u, this cuzk speaks %u: rebuild it with cuzk "
                      "build-witness",
                      path, g->d->abi, CUZK_WGEN_ABI);
        goto fail;
    }
    g->Fr = g->d->n8 <= 64 ? field_by_modulus(g->d->prime, g->d->n8) : NULL;
    if (!g->Fr || (g->Fr->id != FIELD_ID_BN254_FR && g->Fr->id != FIELD_ID_BLS12_381_FR)) {
        rc =
            wgen_err(err, errlen, CUZK_E_UNSUPPORTED,
                     "%s: the circuit's prime is not the scalar field of BN254 or BLS12-381: compile it with "
                     "circom --prime bn128 or bls12381",
                     path);
        goto fail;
    }
    snprintf(g->path, sizeof g->path, "%s", path);
    return 0;
fail:
    wgen_close(g);
    return rc;
}

int wgen_is_current(const wgen *g)
{
    struct stat st;
    return g->dl && stat(g->path, &st) == 0 && st.st_dev == g->st.st_dev && st.st_ino == g->st.st_ino &&
        st.st_size == g->st.st_size && st.st_mtim.tv_sec == g->st.st_mtim.tv_sec &&
        st.st_mtim.tv_nsec == g->st.st_mtim.tv_nsec;
}

int wgen_check_zkey(const wgen *g, const zkey *z, char *err, size_t errlen)
{
    if (g->Fr->id != z->Fr->id)
        return wgen_err(err, errlen, CUZK_E_MISMATCH,
                        "witness generator built for another curve? %s is for a %s circuit, zkey %s for %s",
                        g->path, fr_curve(g->Fr), z->bf.path, fr_curve(z->Fr));
    if (g->d->nwitness != z->nvars)
        return wgen_err(
            err, errlen, CUZK_E_MISMATCH,
            "witness generator built for another circuit? %s makes witnesses of %u values, zkey %s "
            "expects %u",
            g->path, g->d->nwitness, z->bf.path, z->nvars);
    if (g->fp) {
        uint8_t zfp[FP_BYTES];
        char a[FP_HEX], b[FP_HEX];
        int rc = fp_of_zkey(z, zfp, err, errlen);
        if (rc) return rc;
        if (memcmp(zfp, g->fp, FP_BYTES) != 0) {
            fp_hex(g->fp, a);
            fp_hex(zfp, b);
            return wgen_err(err, errlen, CUZK_E_MISMATCH,
                            "witness generator %s was built for another circuit than zkey %s (same curve and "
                            "witness size, other constraints: circuit fingerprints %.16s and %.16s)",
                            g->path, z->bf.path, a, b);
        }
    }
    return 0;
}

int wgen_has_fingerprint(const wgen *g)
{
    return g->fp != NULL;
}

size_t wgen_witness_bytes(const wgen *g)
{
    return (size_t)g->d->nwitness * g->d->n8;
}

/* ---- input.json -> signals ------------------------------------------------------ */

struct fill {
    const wgen *g;
    void *ctx;
    const char *file;
    uint8_t *assigned; /* per main input signal */
    uint32_t nassigned;
    char *err;
    size_t errlen;
};

static uint64_t fnv1a(const char *s)
{
    uint64_t h = 0xCBF29CE484222325ULL;
    for (; *s; s++) h = (h ^ (uint64_t)(unsigned char)*s) * 0x100000001B3ULL;
    return h;
}

/* circom's open-addressing table (calcwit.cpp getInputSignalHashPosition): start at
 * h mod n, step by one; an empty slot (signalid 0) ends the search. */
static const struct cuzk_wgen_input *find_input(const struct cuzk_wgen_desc *d, const char *name)
{
    uint64_t h = fnv1a(name);
    if (d->nhash == 0) return NULL;
    for (uint32_t k = 0, pos = (uint32_t)(h % d->nhash); k < d->nhash; k++, pos = (pos + 1) % d->nhash) {
        const struct cuzk_wgen_input *in = &d->inputs[pos];
        if (in->hash == h && in->signalid != 0) return in;
        if (in->signalid == 0) return NULL;
    }
    return NULL;
}

/* One JSON scalar -> canonical limbs. Accepts an integer, or a string: optional '-',
 * then decimal digits or 0x + hex digits. Negative values count from p (circom's
 * -1 = p - 1); magnitudes >= p are refused, not reduced. */
static int to_field(struct fill *f, const char *sig, const json_t *v, uint64_t *limbs)
{
    const field_desc *Fr = f->g->Fr;
    char buf[64];
    const char *s;
    mpz_t x, p;
    int neg = 0, base = 10, rc = 0;

    if (json_is_integer(v)) {
        snprintf(buf, sizeof buf, "%lld", (long long)json_integer_value(v));
        s = buf;
    } else if (json_is_string(v)) {
        s = json_string_value(v);
    } else {
        return wgen_err(f->err, f->errlen, CUZK_E_FORMAT,
                        "%s: signal %s: %s is not a field element (an integer or a string of one)", f->file,
                        sig,
                        json_is_real(v)          ? "a fractional number"
                            : json_is_boolean(v) ? "a boolean"
                            : json_is_null(v)    ? "null"
                                                 : "an object");
    }
    const char *d = s;
    if (*d == '-') neg = 1, d++;
    if (d[0] == '0' && (d[1] == 'x' || d[1] == 'X')) base = 16, d += 2;
    size_t nd = strlen(d);
    bool ok = nd > 0 && nd == strspn(d, base == 16 ? "0123456789abcdefABCDEF" : "0123456789");
    if (!ok)
        return wgen_err(f->err, f->errlen, CUZK_E_FORMAT,
                        "%s: signal %s: \"%.80s\" is not a field element (decimal, or 0x and hex digits)",
                        f->file, sig, s);
    mpz_init(x);
    mpz_init(p);
    mpz_set_str(x, d, base);
    mpz_import(p, Fr->n, -1, 8, 0, 0, Fr->p);
    if (mpz_cmp(x, p) >= 0) {
        rc = wgen_err(
            f->err, f->errlen, CUZK_E_FORMAT,
            "%s: signal %s: %.80s is not a field element: it is not below the %s prime (values are not "
            "reduced)",
            f->file, sig, s, fr_curve(Fr));
        goto out;
    }
    if (neg && mpz_sgn(x) != 0) mpz_sub(x, p, x);
    memset(limbs, 0, FE_MAX_LIMBS * sizeof *limbs);
    mpz_export(limbs, NULL, -1, 8, 0, 0, x);
out:
    mpz_clear(x);
    mpz_clear(p);
    return rc;
}

/* Counts the scalars of a (nested) array leaf, checking that each is a scalar. */
static int count_leaf(struct fill *f, const char *sig, const json_t *v, uint64_t *n)
{
    if (!json_is_array(v)) {
        if (json_is_object(v))
            return wgen_err(f->err, f->errlen, CUZK_E_FORMAT,
                            "%s: signal %s: an array mixes numbers and objects", f->file, sig);
        (*n)++;
        return 0;
    }
    for (size_t i = 0; i < json_array_size(v); i++) {
        int rc = count_leaf(f, sig, json_array_get(v, i), n);
        if (rc) return rc;
    }
    return 0;
}

static int set_leaf(struct fill *f, const char *sig, const json_t *v, uint64_t id, uint64_t *k)
{
    if (json_is_array(v)) {
        for (size_t i = 0; i < json_array_size(v); i++) {
            int rc = set_leaf(f, sig, json_array_get(v, i), id, k);
            if (rc) return rc;
        }
        return 0;
    }
    uint64_t limbs[FE_MAX_LIMBS];
    int rc = to_field(f, sig, v, limbs);
    if (rc) return rc;
    uint64_t s = id + (*k)++;
    uint64_t slot = s - f->g->d->input_start;
    if (f->assigned[slot])
        return wgen_err(f->err, f->errlen, CUZK_E_MISMATCH, "%s: signal %s is given twice", f->file, sig);
    f->assigned[slot] = 1;
    f->nassigned++;
    f->g->ctx_set(f->ctx, s, limbs);
    return 0;
}

/* A signal name and its value: look it up, check the count, set the values. */
static int set_signal(struct fill *f, const char *sig, const json_t *v)
{
    const struct cuzk_wgen_desc *d = f->g->d;
    const struct cuzk_wgen_input *in = find_input(d, sig);
    if (!in)
        return wgen_err(f->err, f->errlen, CUZK_E_MISMATCH,
                        "%s: signal %s is not an input of the circuit (is this input for another circuit?)",
                        f->file, sig);
    if (in->signalid < d->input_start ||
        in->signalid + in->signalsize > (uint64_t)d->input_start + d->ninputs)
        return wgen_err(f->err, f->errlen, CUZK_E_INTERNAL,
                        "%s: signal %s: the generator's input table is corrupt", f->file, sig);
    uint64_t n = 0, k = 0;
    int rc = count_leaf(f, sig, v, &n);
    if (rc) return rc;
    if (n != in->signalsize)
        return wgen_err(f->err, f->errlen, CUZK_E_MISMATCH,
                        "%s: signal %s has %llu value%s, the circuit expects %llu", f->file, sig,
                        (unsigned long long)n, n == 1 ? "" : "s", (unsigned long long)in->signalsize);
    return set_leaf(f, sig, v, in->signalid, &k);
}

/* circom's qualify_input: objects nest with ".", arrays of objects with "[i]"; any
 * other array, or a scalar, is the value of one signal. */
static int walk(struct fill *f, const char *prefix, const json_t *v)
{
    char name[WGEN_NAME_MAX];

    if (json_is_object(v)) {
        const char *key;
        json_t *val;
        json_object_foreach ((json_t *)v, key, val) {
            if (snprintf(name, sizeof name, "%s%s%s", prefix, *prefix ? "." : "", key) >= (int)sizeof name)
                return wgen_err(f->err, f->errlen, CUZK_E_FORMAT, "%s: signal name %.60s... is too long",
                                f->file, name);
            int rc = walk(f, name, val);
            if (rc) return rc;
        }
        return 0;
    }
    if (json_is_array(v) && json_array_size(v) > 0) {
        const json_t *first = json_array_get(v, 0);
        while (json_is_array(first) && json_array_size(first) > 0) first = json_array_get(first, 0);
        if (json_is_object(first)) {
            for (size_t i = 0; i < json_array_size(v); i++) {
                if (snprintf(name, sizeof name, "%s[%zu]", prefix, i) >= (int)sizeof name)
                    return wgen_err(f->err, f->errlen, CUZK_E_FORMAT, "%s: signal name %.60s... is too long",
                                    f->file, name);
                int rc = walk(f, name, json_array_get(v, i));
                if (rc) return rc;
            }
            return 0;
        }
    }
    return set_signal(f, prefix, v);
}

/* The names of unset inputs, from the table build-witness took from circom's .sym
 * ("name size\n" in signal order), else their signal numbers. */
static int missing(struct fill *f)
{
    const struct cuzk_wgen_desc *d = f->g->d;
    char list[512];
    size_t pos = 0;
    unsigned nmiss = 0;
    const char *t = d->names;
    uint64_t slot = 0;

    list[0] = '\0';
    while (t && *t && slot < d->ninputs) {
        char nm[256];
        unsigned long long sz;
        int used = 0;
        if (sscanf(t, "%255s %llu%n", nm, &sz, &used) != 2) break;
        bool any = false;
        for (uint64_t i = 0; i < sz && slot + i < d->ninputs; i++) any |= !f->assigned[slot + i];
        if (any && pos + 1 < sizeof list) {
            nmiss++;
            pos += (size_t)snprintf(list + pos, sizeof list - pos, "%s%s", pos ? ", " : "", nm);
        }
        slot += sz;
        t += used;
        while (*t == '\n') t++;
    }
    if (nmiss == 0) {
        for (uint64_t i = 0; i < d->ninputs && pos + 1 < sizeof list; i++)
            if (!f->assigned[i])
                pos += (size_t)snprintf(list + pos, sizeof list - pos, "%s#%llu", pos ? ", " : "signal ",
                                        (unsigned long long)(d->input_start + i));
    }
    if (pos >= sizeof list) snprintf(list + sizeof list - 5, 5, "...");
    return wgen_err(f->err, f->errlen, CUZK_E_MISMATCH,
                    "%s: %u of the circuit's %u input values are not given: %s", f->file,
                    d->ninputs - f->nassigned, d->ninputs, list);
}

static int compute(const wgen *g, json_t *root, const char *file, uint8_t *out, char *err, size_t errlen)
{
    const struct cuzk_wgen_desc *d = g->d;
    struct fill f = { .g = g, .file = file, .err = err, .errlen = errlen };
    char why[1024];
    int rc;

    if (!json_is_object(root))
        return wgen_err(err, errlen, CUZK_E_FORMAT, "%s: the input must be a JSON object of signal names",
                        file);
    f.assigned = calloc(d->ninputs ? d->ninputs : 1, 1);
    f.ctx = g->ctx_new();
    if (!f.assigned || !f.ctx) {
        rc = wgen_err(err, errlen, CUZK_E_INTERNAL, "%s: out of memory", file);
        goto out;
    }
    if ((rc = walk(&f, "", root))) goto out;
    if (f.nassigned != d->ninputs) {
        rc = missing(&f);
        goto out;
    }
    if (g->ctx_run(f.ctx, why, sizeof why)) {
        rc = wgen_err(err, errlen, CUZK_E_UNSATISFIED, "%s: the circuit refuses this input: %s", file, why);
        goto out;
    }
    g->ctx_get(f.ctx, 0, d->nwitness, out);
    rc = 0;
out:
    if (f.ctx) g->ctx_free(f.ctx);
    free(f.assigned);
    return rc;
}

/* compute() on the JSON document root parsed from name (NULL: je says why), which it
 * releases. */
static int compute_parsed(const wgen *g, json_t *root, const json_error_t *je, const char *name, uint8_t *out,
                          char *err, size_t errlen)
{
    if (!root)
        return wgen_err(err, errlen, CUZK_E_FORMAT, "%s: not valid JSON: %s (line %d, column %d)", name,
                        je->text, je->line, je->column);
    int rc = compute(g, root, name, out, err, errlen);
    json_decref(root);
    return rc;
}

int wgen_compute_text(const wgen *g, const char *text, size_t len, const char *name, uint8_t *out, char *err,
                      size_t errlen)
{
    json_error_t je;
    json_t *root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &je);
    return compute_parsed(g, root, &je, name, out, err, errlen);
}

int wgen_compute_file(const wgen *g, const char *input, uint8_t *out, char *err, size_t errlen)
{
    FILE *fp = fopen(input, "rb");
    if (!fp) return wgen_err(err, errlen, CUZK_E_IO, "cannot open %s: %s", input, strerror(errno));
    json_error_t je;
    json_t *root = json_loadf(fp, JSON_REJECT_DUPLICATES, &je);
    fclose(fp);
    return compute_parsed(g, root, &je, input, out, err, errlen);
}
