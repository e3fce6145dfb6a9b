/* input_bounds.c — the size a witness or zkey must have, from its headers
 * (input_bounds.h says why). Only pread of the client's descriptor: never mapped. */
#include "supervisor/input_bounds.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define MAX_SECTIONS 16

struct sec {
    uint32_t id;
    uint64_t off, size; /* payload */
};

static int bad(char *err, size_t errlen, const char *what, const char *display, const char *why)
{
    snprintf(err, errlen, "%s %s: %s (refused before any copy)", what, display, why);
    return -EINVAL;
}

static int rd(int fd, void *b, size_t n, uint64_t off)
{
    return pread(fd, b, n, (off_t)off) == (ssize_t)n ? 0 : -1;
}

static uint32_t u32(const unsigned char *p)
{
    uint32_t v;

    memcpy(&v, p, 4);
    return v;
}

/* The section table of a binfile with magic; *n sections, *size the file's size.
 * 1 (and *size 0) for what is not a regular file: left to copies_take. */
static int table(int fd, const char *magic, const char *what, const char *display, struct sec *s, unsigned *n,
                 uint64_t *size, char *err, size_t errlen)
{
    unsigned char h[12];
    struct stat st;
    uint64_t off = 12;
    uint32_t ns;

    if (fstat(fd, &st)) return bad(err, errlen, what, display, strerror(errno));
    /* Not a regular file: nothing is read here (a FIFO or a device could block);
     * copies_take refuses it, unread, saying what it is. */
    if (!S_ISREG(st.st_mode)) {
        *size = 0;
        return 1;
    }
    *size = (uint64_t)st.st_size;
    if (rd(fd, h, 12, 0) || memcmp(h, magic, 4))
        return bad(err, errlen, what, display, "not a file of its kind (magic)");
    ns = u32(h + 8);
    if (ns > MAX_SECTIONS) return bad(err, errlen, what, display, "too many sections");
    for (uint32_t i = 0; i < ns; i++) {
        unsigned char sh[12];
        uint64_t len;

        if (rd(fd, sh, 12, off)) return bad(err, errlen, what, display, "its section table is cut short");
        memcpy(&len, sh + 4, 8);
        s[i].id = u32(sh);
        s[i].off = off + 12;
        s[i].size = len;
        if (len > *size || s[i].off > *size - len)
            return bad(err, errlen, what, display, "a section runs past the end of the file");
        for (uint32_t k = 0; k < i; k++)
            if (s[k].id == s[i].id) return bad(err, errlen, what, display, "a section appears twice");
        off = s[i].off + len;
    }
    if (off != *size) {
        char why[160];

        snprintf(why, sizeof(why), "%llu bytes, but its sections end at %llu: trailing bytes",
                 (unsigned long long)*size, (unsigned long long)off);
        return bad(err, errlen, what, display, why);
    }
    *n = ns;
    return 0;
}

static const struct sec *find(const struct sec *s, unsigned n, uint32_t id)
{
    for (unsigned i = 0; i < n; i++)
        if (s[i].id == id) return &s[i];
    return NULL;
}

static int size_is(const struct sec *x, uint64_t want, const char *what, const char *display, char *err,
                   size_t errlen)
{
    char why[200];

    if (x && x->size == want) return 0;
    snprintf(why, sizeof(why), "section %u is %llu bytes, its header implies %llu", x ? x->id : 0,
             x ? (unsigned long long)x->size : 0ull, (unsigned long long)want);
    return bad(err, errlen, what, display, why);
}

int input_bounds_wtns(int fd, const char *display, uint64_t *size, char *err, size_t errlen)
{
    struct sec s[MAX_SECTIONS];
    const struct sec *h, *v;
    unsigned char b[8];
    unsigned n;
    uint32_t n8;
    int rc;

    if ((rc = table(fd, "wtns", "witness", display, s, &n, size, err, errlen))) return rc > 0 ? 0 : rc;
    h = find(s, n, 1);
    v = find(s, n, 2);
    if (n != 2 || !h || !v)
        return bad(err, errlen, "witness", display,
                   "a witness has exactly sections 1 and 2; this one has others");
    if (h->size < 8 || rd(fd, b, 4, h->off) || !(n8 = u32(b)) || n8 > 64 || n8 % 8)
        return bad(err, errlen, "witness", display, "its header is malformed");
    if ((rc = size_is(h, 8 + (uint64_t)n8, "witness", display, err, errlen))) return rc;
    if (rd(fd, b, 4, h->off + 4 + n8)) return bad(err, errlen, "witness", display, "its header is cut short");
    return size_is(v, (uint64_t)u32(b) * n8, "witness", display, err, errlen);
}

int input_bounds_zkey(int fd, const char *display, uint64_t *size, char *err, size_t errlen)
{
    struct sec s[MAX_SECTIONS];
    const struct sec *x;
    unsigned char b[12];
    uint32_t n8q, n8r, nvars, npub, dom;
    uint64_t sg1, sg2;
    unsigned n;
    int rc;

    if ((rc = table(fd, "zkey", "zkey", display, s, &n, size, err, errlen))) return rc > 0 ? 0 : rc;
    for (unsigned i = 0; i < n; i++)
        if (s[i].id < 1 || s[i].id > 10)
            return bad(err, errlen, "zkey", display, "it has a section no zkey has");
    for (uint32_t id = 1; id <= 9; id++)
        if (!find(s, n, id)) return bad(err, errlen, "zkey", display, "a Groth16 section is missing");
    if ((rc = size_is(find(s, n, 1), 4, "zkey", display, err, errlen))) return rc;
    x = find(s, n, 2);
    if (x->size < 8 || rd(fd, b, 4, x->off) || !(n8q = u32(b)) || n8q > 64 || n8q % 8 ||
        x->size < 8 + (uint64_t)n8q || rd(fd, b, 4, x->off + 4 + n8q) || !(n8r = u32(b)) || n8r > 64 ||
        n8r % 8 || x->size < 8 + (uint64_t)n8q + n8r + 12 || rd(fd, b, 12, x->off + 8 + n8q + n8r))
        return bad(err, errlen, "zkey", display, "its Groth16 header is malformed");
    nvars = u32(b);
    npub = u32(b + 4);
    dom = u32(b + 8);
    if ((uint64_t)npub + 1 > nvars)
        return bad(err, errlen, "zkey", display, "more public signals than signals");
    sg1 = 2ull * n8q;
    sg2 = 4ull * n8q;
    if ((rc = size_is(x, 8 + (uint64_t)n8q + n8r + 12 + 3 * sg1 + 3 * sg2, "zkey", display, err, errlen)) ||
        (rc = size_is(find(s, n, 3), ((uint64_t)npub + 1) * sg1, "zkey", display, err, errlen)))
        return rc;
    x = find(s, n, 4);
    if (x->size < 4 || rd(fd, b, 4, x->off))
        return bad(err, errlen, "zkey", display, "its coefficients section is cut short");
    if ((rc = size_is(x, 4 + (uint64_t)u32(b) * (12 + n8r), "zkey", display, err, errlen)) ||
        (rc = size_is(find(s, n, 5), (uint64_t)nvars * sg1, "zkey", display, err, errlen)) ||
        (rc = size_is(find(s, n, 6), (uint64_t)nvars * sg1, "zkey", display, err, errlen)) ||
        (rc = size_is(find(s, n, 7), (uint64_t)nvars * sg2, "zkey", display, err, errlen)) ||
        (rc = size_is(find(s, n, 8), ((uint64_t)nvars - npub - 1) * sg1, "zkey", display, err, errlen)) ||
        (rc = size_is(find(s, n, 9), (uint64_t)dom * sg1, "zkey", display, err, errlen)))
        return rc;
    if ((x = find(s, n, 10)) && x->size > ZKEY_CONTRIB_MAX)
        return bad(err, errlen, "zkey", display, "its contributions section is larger than any setup writes");
    return 0;
}
