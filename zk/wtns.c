/* wtns.c — open a .wtns witness (spec §5) and match it to a zkey. */
#include "zk/wtns.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/error.h"
#include "zk/zkey.h"

enum { WTNS_MAX_VERSION = 2 }; /* circom/snarkjs write 2; 1 has the same two sections */

static const char *const wtns_names[] = { "header", "values" };
static const struct fr_file wtns_kind = { "wtns", WTNS_MAX_VERSION, wtns_names, 4, "witness" };

static const char *fr_curve(const field_desc *Fr)
{
    return Fr->id == FIELD_ID_BN254_FR ? "BN254 (bn128)" : "BLS12-381";
}

void wtns_close(wtns *w)
{
    if (w) binfile_close_reader(w, sizeof *w, &w->bf);
}

static const uint32_t fr_file_ids[] = { 1, 2 };

int wtns_open_fr_file(void *reader, size_t size, binfile *bf, const char *path, const struct fr_file *kind,
                      uint32_t *n8, const field_desc **Fr, const uint8_t **rest_at, char *err, size_t errlen)
{
    int rc;

    *Fr = NULL;
    if ((rc = binfile_open_reader(reader, size, bf, path, kind->magic, kind->max_version, fr_file_ids,
                                  kind->section_names, 2, err, errlen)))
        return rc;

    const struct binfile_section *s1 = binfile_section(bf, 1);
    const uint8_t *h = binfile_payload(bf, s1);
    if (s1->size < 4 || (*n8 = binfile_rd32(h), s1->size != 4 + (uint64_t)*n8 + kind->header_rest))
        return binfile_err(err, errlen, CUZK_E_FORMAT,
                           "section 1 (header) of %s is %llu bytes, expected 4 + n8 + %u = %llu", path,
                           (unsigned long long)s1->size, kind->header_rest,
                           (s1->size < 4 ? 4ULL + 32 : 4ULL + *n8) + kind->header_rest);
    *Fr = field_by_modulus(h + 4, *n8);
    if (!*Fr || ((*Fr)->id != FIELD_ID_BN254_FR && (*Fr)->id != FIELD_ID_BLS12_381_FR)) {
        char ph[2 * 64 + 8];
        binfile_le_hex(h + 4, *n8 < 64 ? *n8 : 64, ph, sizeof ph);
        *Fr = NULL;
        return binfile_err(err, errlen, CUZK_E_UNSUPPORTED,
                           "%s: %s prime %s is not the scalar field of BN254 or BLS12-381: was the circuit "
                           "compiled with another --prime?",
                           path, kind->prime_of, ph);
    }
    *rest_at = h + 4 + *n8;
    return 0;
}

int wtns_open(wtns *w, const char *path, char *err, size_t errlen)
{
    const uint8_t *h;
    int rc;

    if ((rc = wtns_open_fr_file(w, sizeof *w, &w->bf, path, &wtns_kind, &w->n8, &w->Fr, &h, err, errlen)))
        goto fail;
    const struct binfile_section *s2 = binfile_section(&w->bf, 2);
    w->nwitness = binfile_rd32(h);
    if (s2->size != (uint64_t)w->nwitness * w->n8) {
        rc = binfile_err(err, errlen, CUZK_E_FORMAT,
                         "section 2 (values) of %s is %llu bytes, expected %llu for %u values", path,
                         (unsigned long long)s2->size, (unsigned long long)w->nwitness * w->n8, w->nwitness);
        goto fail;
    }
    w->values = binfile_payload(&w->bf, s2);
    for (uint32_t i = 0; i < w->nwitness; i++) {
        uint64_t v[FE_MAX_LIMBS] = { 0 };
        memcpy(v, w->values + (uint64_t)i * w->n8, w->n8);
        if (!fe_is_reduced(w->Fr, v)) {
            rc = binfile_err(err, errlen, CUZK_E_FORMAT,
                             "%s: witness value %u is not below the field prime (values must be canonical)",
                             path, i);
            goto fail;
        }
    }
    return 0;
fail:
    wtns_close(w);
    return rc;
}

int wtns_check_zkey(const wtns *w, const zkey *z, char *err, size_t errlen)
{
    if (w->Fr->id != z->Fr->id)
        return binfile_err(
            err, errlen, CUZK_E_MISMATCH,
            "witness %s is over the %s scalar field but zkey %s is for %s: was it computed for "
            "another curve?",
            w->bf.path, fr_curve(w->Fr), z->bf.path, fr_curve(z->Fr));
    if (w->nwitness != z->nvars)
        return binfile_err(
            err, errlen, CUZK_E_MISMATCH,
            "witness %s has %u values, zkey %s expects %u: was it computed for another circuit?", w->bf.path,
            w->nwitness, z->bf.path, z->nvars);
    return 0;
}

int wtns_of_values(wtns *w, const char *name, const field_desc *Fr, uint32_t nwitness, const uint8_t *values)
{
    memset(w, 0, sizeof *w);
    w->bf.fd = -1;
    if (!(w->bf.path = strdup(name))) return -CUZK_E_INTERNAL;
    w->n8 = Fr->n * 8;
    w->Fr = Fr;
    w->nwitness = nwitness;
    w->values = values;
    return 0;
}

static int write_all(int fd, const void *p, size_t n)
{
    const uint8_t *b = p;
    while (n > 0) {
        ssize_t k = write(fd, b, n);
        if (k < 0) {
            if (errno == EINTR) continue;
            return -1;
        }
        b += k;
        n -= (size_t)k;
    }
    return 0;
}

int wtns_write(const char *path, const field_desc *Fr, uint32_t nwitness, const uint8_t *values, char *err,
               size_t errlen)
{
    uint32_t n8 = Fr->n * 8, u32;
    uint64_t u64;
    uint8_t hdr[12 + 12 + 4 + 64 + 4 + 12], *h = hdr;
    char tmp[4096 + 32];

    /* "wtns" v2, 2 sections; section 1: n8, prime, nwitness; section 2: the values */
    memcpy(h, "wtns", 4), h += 4;
    u32 = 2, memcpy(h, &u32, 4), h += 4;
    u32 = 2, memcpy(h, &u32, 4), h += 4;
    u32 = 1, memcpy(h, &u32, 4), h += 4;
    u64 = 4 + (uint64_t)n8 + 4, memcpy(h, &u64, 8), h += 8;
    memcpy(h, &n8, 4), h += 4;
    memcpy(h, Fr->p, n8), h += n8;
    memcpy(h, &nwitness, 4), h += 4;
    u32 = 2, memcpy(h, &u32, 4), h += 4;
    u64 = (uint64_t)nwitness * n8, memcpy(h, &u64, 8), h += 8;

    if (snprintf(tmp, sizeof tmp, "%s.tmp.%ld", path, (long)getpid()) >= (int)sizeof tmp)
        return binfile_err(err, errlen, CUZK_E_OUTPUT, "cannot write %s: path too long", path);
    int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
    if (fd < 0) return binfile_err(err, errlen, CUZK_E_OUTPUT, "cannot write %s: %s", tmp, strerror(errno));
    if (write_all(fd, hdr, (size_t)(h - hdr)) || write_all(fd, values, (size_t)nwitness * n8) || fsync(fd)) {
        int e = errno;
        close(fd);
        unlink(tmp);
        return binfile_err(err, errlen, CUZK_E_OUTPUT, "cannot write %s: %s", path, strerror(e));
    }
    if (close(fd) != 0 || rename(tmp, path) != 0) {
        int e = errno;
        unlink(tmp);
        return binfile_err(err, errlen, CUZK_E_OUTPUT, "cannot write %s: %s", path, strerror(e));
    }
    return 0;
}
