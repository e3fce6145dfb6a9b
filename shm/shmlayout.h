/* shmlayout.h — the data and stats segments of one instance, laid out from a config.
 *
 * Data segment, in order (each region's offset in the segment header's region table):
 *     header (4 KiB) | "jobtab" | extra regions | "ring0" .. "ringN-1" | "pool" | "slab"
 * Extra regions are named by the creator (pipeline.h adds "config", "partinfo",
 * "results"), each page-aligned, zero-filled, or initialised from the given bytes
 * before the segment is published; this layer gives them no meaning.
 * The slab starts on a 2 MiB boundary when it is at least 2 MiB (so it can be backed
 * by huge pages), else on a page. A process that attaches rebuilds its typed views
 * (ring pointers, pool, job table) from those offsets; nothing in the segment is a
 * pointer.
 * Stats segment: header (4 KiB) | "stats" (struct stats_page and its slots).
 */
#ifndef CUZK_SHMLAYOUT_H
#define CUZK_SHMLAYOUT_H

#include <stddef.h>
#include <stdint.h>
#include "shm/jobtab.h"
#include "shm/pool.h"
#include "shm/ring.h"
#include "shm/segment.h"
#include "shm/stats.h"

#define SHMLAYOUT_MAX_RINGS 16
#define SHMLAYOUT_MAX_EXTRA 8

/* An extra region of the data segment. */
struct shmlayout_extra {
    char name[SEG_REGION_NAME];
    uint64_t size;
    const void *init; /* NULL: zero-filled; else init_len (<= size) bytes copied in */
    size_t init_len;
};

struct shmlayout_config {
    uint32_t n_rings;
    uint32_t ring_capacity[SHMLAYOUT_MAX_RINGS]; /* powers of two */
    uint32_t max_jobs;
    uint32_t max_parts;
    uint32_t buf_count;
    uint64_t buf_size; /* rounded up to a page */
    uint32_t n_nodes;  /* pool shares; 0 or 1: one unbound share */
    int numa_node[POOL_MAX_NODES];
    uint32_t node_buf_count[POOL_MAX_NODES]; /* buffers per share; all 0: even split */
    uint32_t n_extra;                        /* 0 for none */
    struct shmlayout_extra extra[SHMLAYOUT_MAX_EXTRA];
};

/* Offsets computed from a config (all from the segment start). */
struct shmlayout {
    uint64_t jobtab_off, jobtab_size;
    uint64_t extra_off[SHMLAYOUT_MAX_EXTRA], extra_size[SHMLAYOUT_MAX_EXTRA];
    uint64_t ring_off[SHMLAYOUT_MAX_RINGS], ring_size[SHMLAYOUT_MAX_RINGS];
    uint64_t pool_off, pool_size;
    uint64_t slab_off, slab_size;
    uint64_t total;
};

/* Process-local typed views of a mapped data segment. */
struct shmlayout_data {
    struct segment seg;
    struct jobtab jobtab;
    struct pool pool;
    uint32_t n_rings;
    struct ring *rings[SHMLAYOUT_MAX_RINGS];
};

struct shmlayout_stats {
    struct segment seg;
    struct stats_page *page;
};

/* 0 or -EINVAL (a capacity not a power of two, too many rings, zero sizes). */
int shmlayout_compute(const struct shmlayout_config *cfg, struct shmlayout *out);

/* Create (flags: SEGMENT_REPLACE), format every region, publish. On failure nothing
 * is left behind and err says why. */
int shmlayout_data_create(struct shmlayout_data *d, const char *instance, const struct shmlayout_config *cfg,
                          unsigned flags, char *err, size_t errlen);
/* Attach read-write and rebuild the views; errors as segment_attach, plus -EBADMSG
 * for a region that is missing or does not check out. */
int shmlayout_data_attach(struct shmlayout_data *d, const char *instance, char *err, size_t errlen);
void shmlayout_data_detach(struct shmlayout_data *d);

int shmlayout_stats_create(struct shmlayout_stats *s, const char *instance, uint32_t slots, unsigned flags,
                           char *err, size_t errlen);
/* flags: SEGMENT_RDONLY for viewers. */
int shmlayout_stats_attach(struct shmlayout_stats *s, const char *instance, unsigned flags, char *err,
                           size_t errlen);
void shmlayout_stats_detach(struct shmlayout_stats *s);

#endif /* CUZK_SHMLAYOUT_H */
