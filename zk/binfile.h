/* binfile.h — the iden3 binary container shared by .zkey, .wtns, .r1cs and .ptau
 * (docs/snarkjs-groth16.md §1).
 *
 *   offset 0  4 bytes magic ("zkey", "wtns", "r1cs", ...)
 *   offset 4  u32 LE version
 *   offset 8  u32 LE nSections
 *   offset 12 nSections records: u32 LE id, u64 LE payload size, payload
 *
 * The file is mapped read-only (MAP_PRIVATE) and the section table is scanned once;
 * sections come in any order (snarkjs setup writes a zkey as 1,2,4,3,9,8,5,6,7,10).
 * Payload pointers (b->map + offset) have no alignment guarantee: read them with
 * memcpy. Little-endian host assumed (x86-64, aarch64), like the rest of zk/. */
#ifndef CUZK_BINFILE_H
#define CUZK_BINFILE_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* Declared at file scope (not nested in binfile) so the header also compiles as C++
 * (zk/cuda/ includes it through zkey.h). */
struct binfile_section {
    uint32_t id;
    uint64_t offset, size; /* payload: b->map + offset, size bytes */
};

typedef struct binfile {
    int fd;             /* open while mapped; -1 (or 0 in a zeroed struct) otherwise */
    const uint8_t *map; /* whole file, read-only */
    size_t size;        /* file size in bytes */
    char magic[5];      /* NUL-terminated */
    uint32_t version;
    unsigned nsections;
    struct binfile_section *sections; /* in file order */
    const char *path;                 /* owned copy, for messages */
} binfile;

/* Opens and maps `path`, checks the 4-byte `magic` and 1 <= version <= max_version,
 * and scans the section table. Returns 0, or on failure (b left closed, nothing held):
 *   -CUZK_E_IO          missing or unreadable (strerror in the message), not a file
 *   -CUZK_E_TRUNCATED   shorter than 12 bytes, or the table / a payload runs past the end
 *   -CUZK_E_FORMAT      wrong magic (named), version 0
 *   -CUZK_E_UNSUPPORTED version above max_version
 *   -CUZK_E_INTERNAL    out of memory
 * Duplicated ids are kept here (the container allows them); binfile_require rejects
 * duplicates of the ids a reader uses. */
int binfile_open(binfile *b, const char *path, const char *magic, uint32_t max_version, char *err,
                 size_t errlen);

/* The first section with this id, NULL if absent. */
const struct binfile_section *binfile_section(const binfile *b, uint32_t id);

/* Payload of a section (b->map + s->offset). */
static inline const uint8_t *binfile_payload(const binfile *b, const struct binfile_section *s)
{
    return b->map + s->offset;
}

/* Each of ids[0..nids) must be present exactly once. names[i] (may be NULL, or an
 * entry NULL) names section ids[i] in messages. 0 or -CUZK_E_FORMAT with a message
 * "zkey file X has no section 4 (coefficients)" / "... has 2 sections with id 4". */
int binfile_require(const binfile *b, const uint32_t *ids, const char *const *names, unsigned nids, char *err,
                    size_t errlen);

/* Little-endian loads from a mapped file at any alignment (the formats are LE; so are
 * the hosts cuzk builds for). */
static inline uint32_t binfile_rd32(const uint8_t *p)
{
    uint32_t v;
    memcpy(&v, p, sizeof v);
    return v;
}

static inline uint64_t binfile_rd64(const uint8_t *p)
{
    uint64_t v;
    memcpy(&v, p, sizeof v);
    return v;
}

/* out = "0x" and the big-endian hex of the LE integer b[0..n), leading zeros dropped
 * (for messages: "0x1f..."); cut to fit outlen. */
void binfile_le_hex(const uint8_t *b, size_t n, char *out, size_t outlen);

/* Unmaps and closes; accepts a zeroed or already-closed struct (map == NULL). */
void binfile_close(binfile *b);

/* A reader's open: the reader's whole struct (size bytes at reader, b inside it)
 * zeroed, then binfile_open and binfile_require of the sections it reads (the reader's
 * close undoes either on failure). */
int binfile_open_reader(void *reader, size_t size, binfile *b, const char *path, const char *magic,
                        uint32_t max_version, const uint32_t *ids, const char *const *names, unsigned nids,
                        char *err, size_t errlen);

/* A reader's close: b closed, then the reader's whole struct (size bytes at reader, b
 * inside it) zeroed, b's fd -1, so closing twice is harmless. */
void binfile_close_reader(void *reader, size_t size, binfile *b);

/* Formats a message into err (if errlen > 0) and returns -code: the readers' one-line
 * error path, `return binfile_err(err, errlen, CUZK_E_FORMAT, "...", ...)`. */
int binfile_err(char *err, size_t errlen, int code, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

#endif
