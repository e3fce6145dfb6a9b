/* binfile.c — the iden3 binary container: map, check magic and version, scan the
 * section table (spec §1). */
#include "zk/binfile.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/error.h"

int binfile_err(char *err, size_t errlen, int code, const char *fmt, ...)
{
    if (err && errlen > 0) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err, errlen, fmt, ap);
        va_end(ap);
    }
    return -code;
}

void binfile_le_hex(const uint8_t *b, size_t n, char *out, size_t outlen)
{
    size_t pos = 0, i = n;

    while (i > 1 && b[i - 1] == 0) i--;
    pos += (size_t)snprintf(out, outlen, "0x");
    while (i-- > 0 && pos + 3 < outlen) pos += (size_t)snprintf(out + pos, outlen - pos, "%02x", b[i]);
}

/* The magic as printable text for a message: "zkey", or hex bytes if not printable. */
static void magic_text(const uint8_t *m, char *out, size_t outlen)
{
    int printable = 1;
    for (int i = 0; i < 4; i++)
        if (m[i] < 0x20 || m[i] > 0x7e) printable = 0;
    if (printable)
        snprintf(out, outlen, "\"%c%c%c%c\"", m[0], m[1], m[2], m[3]);
    else
        snprintf(out, outlen, "bytes %02x %02x %02x %02x", m[0], m[1], m[2], m[3]);
}

void binfile_close(binfile *b)
{
    if (!b) return;
    if (b->map) {
        munmap((void *)b->map, b->size ? b->size : 1);
        if (b->fd >= 0) close(b->fd);
    }
    free(b->sections);
    free((char *)b->path);
    memset(b, 0, sizeof *b);
    b->fd = -1;
}

int binfile_open(binfile *b, const char *path, const char *magic, uint32_t max_version, char *err,
                 size_t errlen)
{
    struct stat st;
    int rc;

    memset(b, 0, sizeof *b);
    b->fd = -1;
    b->fd = open(path, O_RDONLY | O_CLOEXEC);
    if (b->fd < 0) return binfile_err(err, errlen, CUZK_E_IO, "cannot open %s: %s", path, strerror(errno));
    if (fstat(b->fd, &st) != 0) {
        rc = binfile_err(err, errlen, CUZK_E_IO, "cannot stat %s: %s", path, strerror(errno));
        goto fail_fd;
    }
    if (!S_ISREG(st.st_mode)) {
        rc = binfile_err(err, errlen, CUZK_E_IO, "%s is not a regular file", path);
        goto fail_fd;
    }
    if (st.st_size < 12) {
        rc = binfile_err(err, errlen, CUZK_E_TRUNCATED,
                         "%s is %lld bytes, shorter than the 12-byte %s header: is the file complete?", path,
                         (long long)st.st_size, magic);
        goto fail_fd;
    }
    b->size = (size_t)st.st_size;
    void *m = mmap(NULL, b->size, PROT_READ, MAP_PRIVATE, b->fd, 0);
    if (m == MAP_FAILED) {
        rc = binfile_err(err, errlen, CUZK_E_IO, "cannot map %s: %s", path, strerror(errno));
        goto fail_fd;
    }
    b->map = m;
    b->path = strdup(path);
    if (!b->path) {
        rc = binfile_err(err, errlen, CUZK_E_INTERNAL, "out of memory opening %s", path);
        goto fail;
    }

    if (memcmp(b->map, magic, 4) != 0) {
        char found[32];
        magic_text(b->map, found, sizeof found);
        rc = binfile_err(err, errlen, CUZK_E_FORMAT, "%s starts with %s, not \"%.4s\": is it a .%.4s file?",
                         path, found, magic, magic);
        goto fail;
    }
    memcpy(b->magic, magic, 4);
    b->magic[4] = 0;
    b->version = binfile_rd32(b->map + 4);
    if (b->version == 0) {
        rc = binfile_err(err, errlen, CUZK_E_FORMAT, "%s has %s version 0, which no writer produces", path,
                         b->magic);
        goto fail;
    }
    if (b->version > max_version) {
        rc = binfile_err(err, errlen, CUZK_E_UNSUPPORTED,
                         "%s is %s version %u; this reader supports versions 1 to %u", path, b->magic,
                         b->version, max_version);
        goto fail;
    }

    /* Each record takes at least 12 bytes, so a count above (size-12)/12 cannot be
     * satisfied: refuse it before allocating. */
    uint32_t nsec = binfile_rd32(b->map + 8);
    if ((uint64_t)nsec > (b->size - 12) / 12) {
        rc = binfile_err(err, errlen, CUZK_E_TRUNCATED,
                         "%s declares %u sections but is only %zu bytes long: is the file complete?", path,
                         nsec, b->size);
        goto fail;
    }
    b->sections = calloc(nsec ? nsec : 1, sizeof *b->sections);
    if (!b->sections) {
        rc = binfile_err(err, errlen, CUZK_E_INTERNAL, "out of memory reading the section table of %s", path);
        goto fail;
    }
    uint64_t off = 12;
    for (uint32_t i = 0; i < nsec; i++) {
        if (b->size - off < 12) {
            rc = binfile_err(
                err, errlen, CUZK_E_TRUNCATED,
                "%s ends inside the record of section %u of %u (offset %llu of %zu bytes): is the file "
                "complete?",
                path, i + 1, nsec, (unsigned long long)off, b->size);
            goto fail;
        }
        uint32_t id = binfile_rd32(b->map + off);
        uint64_t sz = binfile_rd64(b->map + off + 4);
        off += 12;
        if (sz > b->size - off) {
            rc = binfile_err(
                err, errlen, CUZK_E_TRUNCATED,
                "section %u of %s runs past the end of the file (%llu bytes at offset %llu, file is %zu "
                "bytes): is the file complete?",
                id, path, (unsigned long long)sz, (unsigned long long)off, b->size);
            goto fail;
        }
        b->sections[i].id = id;
        b->sections[i].offset = off;
        b->sections[i].size = sz;
        off += sz;
    }
    b->nsections = nsec;
    return 0;

fail:
    binfile_close(b);
    return rc;
fail_fd:
    close(b->fd);
    b->fd = -1;
    return rc;
}

const struct binfile_section *binfile_section(const binfile *b, uint32_t id)
{
    for (unsigned i = 0; i < b->nsections; i++)
        if (b->sections[i].id == id) return &b->sections[i];
    return NULL;
}

int binfile_open_reader(void *reader, size_t size, binfile *b, const char *path, const char *magic,
                        uint32_t max_version, const uint32_t *ids, const char *const *names, unsigned nids,
                        char *err, size_t errlen)
{
    int rc;

    memset(reader, 0, size);
    rc = binfile_open(b, path, magic, max_version, err, errlen);
    return rc ? rc : binfile_require(b, ids, names, nids, err, errlen);
}

void binfile_close_reader(void *reader, size_t size, binfile *b)
{
    binfile_close(b);
    memset(reader, 0, size);
    b->fd = -1;
}

int binfile_require(const binfile *b, const uint32_t *ids, const char *const *names, unsigned nids, char *err,
                    size_t errlen)
{
    for (unsigned k = 0; k < nids; k++) {
        unsigned count = 0;
        for (unsigned i = 0; i < b->nsections; i++) count += b->sections[i].id == ids[k];
        if (count == 1) continue;
        char name[64] = "";
        if (names && names[k]) snprintf(name, sizeof name, " (%s)", names[k]);
        if (count == 0)
            return binfile_err(err, errlen, CUZK_E_FORMAT, "%s file %s has no section %u%s: is it complete?",
                               b->magic, b->path, ids[k], name);
        return binfile_err(err, errlen, CUZK_E_FORMAT,
                           "%s file %s has %u sections with id %u%s; readers need one", b->magic, b->path,
                           count, ids[k], name);
    }
    return 0;
}
