/* segment.h — named POSIX shared-memory segments of one cuzk instance.
 *
 * Each instance has two segments under /dev/shm: "cuzk-<instance>.stats" (small,
 * viewers map it read-only) and "cuzk-<instance>.data" (mode 0600, stages only). Both
 * start with struct seg_header: magic, ABI version, kind, size, creator pid, creation
 * time, instance name and a table of named regions (byte offsets from the segment
 * start; no pointers). Attaching checks all of these and refuses, with a sentence in
 * the caller's error buffer, a foreign file, another ABI version, the wrong kind or a
 * truncated file.
 *
 * Publication: the creator formats every region, then segment_publish() stores
 * ready = 1 with release; segment_attach() refuses (-EAGAIN) a segment whose ready is
 * still 0 and reads it with acquire, so an attacher sees fully initialised regions.
 */
#ifndef CUZK_SEGMENT_H
#define CUZK_SEGMENT_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include "base/barrier.h"

#define SEG_MAGIC        0x004745534b5a5543ull /* "CUZKSEG\0" little-endian */
#define SEG_ABI_VERSION  2u                    /* 2: jobtab_part reason 96 -> 736 bytes */
#define SEG_INSTANCE_MAX 48                    /* bytes of instance name, without NUL */
#define SEG_REGION_NAME  24
#define SEG_MAX_REGIONS  40
#define SEG_HEADER_SIZE  4096u /* one page: regions start page-aligned */

enum seg_kind {
    SEG_KIND_STATS = 1,
    SEG_KIND_DATA = 2,
};

/* A region: [offset, offset + size) bytes from the start of the segment. */
struct seg_region {
    char name[SEG_REGION_NAME]; /* NUL-terminated */
    uint64_t offset;
    uint64_t size;
};
_Static_assert(sizeof(struct seg_region) == 40, "seg_region ABI");

/* Shared header at offset 0 of every segment. Writer of every field: the creating
 * process, before segment_publish(); immutable afterwards. Readers: everyone. */
struct seg_header {
    uint64_t magic;       /* SEG_MAGIC */
    uint32_t abi_version; /* SEG_ABI_VERSION of the creator's build */
    uint32_t kind;        /* enum seg_kind */
    uint64_t size;        /* total bytes, as created */
    uint32_t header_size; /* SEG_HEADER_SIZE */
    int32_t creator_pid;
    uint64_t created_realtime_ns; /* CLOCK_REALTIME, for people */
    uint64_t created_mono_ns;     /* CLOCK_MONOTONIC, for arithmetic with stats times */
    char instance[SEG_INSTANCE_MAX + 8];
    _Atomic uint32_t ready; /* 0 while formatting; 1 once published (release) */
    uint32_t n_regions;
    uint8_t reserved0[56];
    struct seg_region regions[SEG_MAX_REGIONS];
    uint8_t reserved[SEG_HEADER_SIZE - 168 - 40 * SEG_MAX_REGIONS];
};
_Static_assert(offsetof(struct seg_header, instance) == 48, "seg_header ABI");
_Static_assert(offsetof(struct seg_header, ready) == 104, "seg_header ABI");
_Static_assert(offsetof(struct seg_header, regions) == 168, "seg_header ABI");
_Static_assert(sizeof(struct seg_header) == SEG_HEADER_SIZE, "seg_header ABI");

/* Process-local handle (not shared). */
struct segment {
    struct seg_header *hdr; /* == base of the mapping */
    size_t size;
    int readonly;
    enum seg_kind kind;
    char name[SEG_INSTANCE_MAX + 32]; /* "cuzk-<instance>.<kind>" */
};

#define SEGMENT_RDONLY  1u /* segment_attach: map read-only */
#define SEGMENT_REPLACE 2u /* segment_create: unlink an existing segment first */

/* Writes "cuzk-<instance>.stats" or ".data" into buf. 0, or -EINVAL for an instance
 * name that is empty, longer than SEG_INSTANCE_MAX or not [A-Za-z0-9_-]. */
int segment_name(char *buf, size_t len, const char *instance, enum seg_kind kind);

/* Create, size and map a new segment (mode: e.g. 0600 data, 0640 stats) and write
 * its header, with ready = 0 and no regions. size is rounded up to a page and must
 * be > SEG_HEADER_SIZE. Returns 0, -EEXIST (already there; nothing changed) or
 * another -errno; on failure nothing is left behind and err says why. */
int segment_create(struct segment *seg, const char *instance, enum seg_kind kind, size_t size, mode_t mode,
                   unsigned flags, char *err, size_t errlen);

/* Record a region in the header (creator only, before publish). 0, -ENOSPC (table
 * full), -EINVAL (name too long or range outside the segment). */
int segment_region_add(struct segment *seg, const char *name, uint64_t offset, uint64_t size);

/* Find a region by name; NULL if absent. */
const struct seg_region *segment_region_find(const struct segment *seg, const char *name);

/* Address of a region, or NULL if absent or not inside the mapping. */
void *segment_region_ptr(const struct segment *seg, const char *name, uint64_t *size);

/* Mark the segment ready (release): attachers may use it from now on. */
void segment_publish(struct segment *seg);

/* Map an existing segment, read-write or (SEGMENT_RDONLY) read-only, and check its
 * header. Returns 0, or: -ENOENT no such segment; -EINVAL foreign file (bad magic)
 * or wrong kind; -EPROTO other ABI version; -EBADMSG truncated; -EAGAIN not yet
 * published; other -errno from the system. err names the segment and the mismatch. */
int segment_attach(struct segment *seg, const char *instance, enum seg_kind kind, unsigned flags, char *err,
                   size_t errlen);

/* Unmap (accepts a zeroed or already-detached handle). The segment stays. */
void segment_detach(struct segment *seg);

/* Remove the segment's name (existing mappings stay valid). 0 or -errno. */
int segment_destroy(const char *instance, enum seg_kind kind);

#endif /* CUZK_SEGMENT_H */
