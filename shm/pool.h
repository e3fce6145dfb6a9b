/* pool.h — fixed-size, page-aligned buffers in the data segment, owned by a process
 * or by a partition, returned when their owner dies.
 *
 * Owner word per buffer (one 64-bit CAS word): bits 63..32 a generation counter
 * bumped on every change (so a stale compare never succeeds), bits 31..0 the owner:
 *     0                         free
 *     1 .. 2^22                 a process id (Linux pid_max is at most 2^22)
 *     POOL_OWNER_PART | p       held for partition p of the job table, by no process
 * A stage allocates a buffer to its pid, fills it, then transfers it to the partition
 * before publishing the partition; the consumer frees it once the data is copied out.
 *
 * The free list is the owner words themselves: allocation is one CAS from free to the
 * caller's pid, scanning from a rotating hint. A separate ring of free indices would
 * leave a window (popped, owner not yet written) in which a SIGKILL leaks the buffer;
 * a single CAS leaves none. Buffers are MiBs each and number in the hundreds, so the
 * scan costs far less than filling one buffer.
 */
#ifndef CUZK_POOL_H
#define CUZK_POOL_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>
#include "base/barrier.h"
#include "shm/futex.h"

#define POOL_MAGIC      0x4c4f4f50u /* "POOL" */
#define POOL_MAX_NODES  8
#define POOL_OWNER_FREE 0u
#define POOL_OWNER_PART 0x80000000u
#define POOL_NONE       UINT32_MAX /* "no buffer" in index fields */

static inline uint32_t pool_owner_part(uint32_t part)
{
    return POOL_OWNER_PART | part;
}

/* One NUMA node's share of the buffers: [first, first + count). */
struct pool_node {
    uint32_t first;
    uint32_t count;
    int32_t numa_node; /* -1: no binding */
    uint32_t reserved;
};

/* Shared pool header; owner words follow at owners_offset. */
struct pool_hdr {
    /* lines 0-2 — writer: creator (pool_init); immutable afterwards */
    uint32_t magic;
    uint32_t buf_count;
    uint64_t buf_size;      /* bytes, multiple of the page size */
    int64_t slab_offset;    /* slab start, bytes relative to this header */
    uint32_t owners_offset; /* owner words, bytes relative to this header */
    uint32_t n_nodes;
    uint8_t reserved0[32];
    struct pool_node nodes[POOL_MAX_NODES];
    /* line 3 — writers: every allocator (relaxed; a scan-start hint only) */
    _Atomic uint32_t hint[POOL_MAX_NODES];
    uint8_t pad3[BARRIER_CACHE_LINE - 4 * POOL_MAX_NODES];
    /* line 4 — allocators sleep here when no buffer is free; freers wake */
    struct futex_waitq freed;
    uint8_t pad4[BARRIER_CACHE_LINE - 8];
};
_Static_assert(offsetof(struct pool_hdr, nodes) == 64, "pool_hdr ABI");
_Static_assert(offsetof(struct pool_hdr, hint) == 192, "pool_hdr ABI");
_Static_assert(offsetof(struct pool_hdr, freed) == 256, "pool_hdr ABI");
_Static_assert(sizeof(struct pool_hdr) == 320, "pool_hdr ABI");

/* Process-local view, rebuilt from offsets after mapping. */
struct pool {
    struct pool_hdr *hdr;
    _Atomic uint64_t *owners; /* buf_count words; writers: CAS by the owner/allocator */
    unsigned char *slab;
};

/* What pool_slab_setup achieved, and why not where it fell back. */
struct pool_slab_report {
    int locked;     /* mlock succeeded */
    int huge;       /* MADV_HUGEPAGE accepted and shmem THP enabled */
    int numa_bound; /* each node's share mbind-ed to its node */
    char reason[512];
};

/* Bytes of the pool header + owner words (the slab is sized separately). */
size_t pool_hdr_size(uint32_t buf_count);

/* Format a pool: buf_count buffers of buf_size bytes (a page multiple) at
 * slab = (char *)h + slab_offset, split over n_nodes shares (numa_nodes[i] the node of
 * share i, or NULL: one unbound share). 0 or -EINVAL. */
int pool_init(struct pool_hdr *h, uint32_t buf_count, uint64_t buf_size, int64_t slab_offset,
              uint32_t n_nodes, const int *numa_nodes);

/* Same with share i holding counts[i] buffers (their sum must be buf_count; counts
 * NULL or all zero: the even split of pool_init). 0 or -EINVAL. */
int pool_init_split(struct pool_hdr *h, uint32_t buf_count, uint64_t buf_size, int64_t slab_offset,
                    uint32_t n_nodes, const int *numa_nodes, const uint32_t *counts);

/* Build a view of a pool formatted by another process; hdr_size/slab_end bound it
 * inside the mapping. 0 or -EINVAL. */
int pool_view(struct pool *p, struct pool_hdr *h, size_t hdr_size, const void *map_end);

/* Allocate a buffer to owner (a pid), preferring share `node` (< 0: any), then any
 * other share; wait up to timeout_ns (< 0 forever, 0 try once) for one to be freed.
 * 0 and *idx, -EAGAIN (timeout 0) or -ETIMEDOUT. */
int pool_buf_alloc(struct pool *p, int node, uint32_t owner, int64_t timeout_ns, uint32_t *idx);

/* Same, from share `node` only (NUMA routing: the buffer must be near the worker that
 * reads it, so it waits for one of that node's rather than take another node's). A
 * pool with one share serves every node. 0 and *idx, -EAGAIN, -ETIMEDOUT, or -ENOENT
 * when the pool has several shares and none is node's. */
int pool_buf_alloc_node(struct pool *p, int node, uint32_t owner, int64_t timeout_ns, uint32_t *idx);

/* The NUMA node of the share holding buffer idx (-1: unbound, or a bad index). */
int pool_buf_node(const struct pool *p, uint32_t idx);

/* Move buffer idx from owner `from` to `to` (to == POOL_OWNER_FREE frees it).
 * 0, -EPERM if `from` does not own it (unchanged), -EINVAL bad index. */
int pool_buf_transfer(struct pool *p, uint32_t idx, uint32_t from, uint32_t to);

/* pool_buf_transfer(p, idx, owner, POOL_OWNER_FREE). */
int pool_buf_free(struct pool *p, uint32_t idx, uint32_t owner);

/* Current owner (POOL_OWNER_FREE, a pid or POOL_OWNER_PART|p), or POOL_NONE for a bad
 * index. Acquire: the owner's writes to the buffer before its transfer are visible. */
uint32_t pool_buf_owner(const struct pool *p, uint32_t idx);

/* Address of buffer idx, or NULL for a bad index. */
void *pool_buf_ptr(const struct pool *p, uint32_t idx);

/* Free every buffer owned by pid (a dead process). Returns how many. */
int pool_reclaim_pid(struct pool *p, pid_t pid);

/* In-use and free buffers of share `node` (< 0: all shares). 0 or -EINVAL. */
int pool_node_counts(const struct pool *p, int node, uint32_t *in_use, uint32_t *free_count);

/* pool_slab_setup's flags. */
#define POOL_SLAB_NO_MLOCK 1u /* skip mlock (e.g. the CUDA backend pins it itself) */
/* Skip mbind: the shares' nodes are not this machine's (cuzkd --test-fake-topology). */
#define POOL_SLAB_NO_MBIND 2u

/* Ask for huge pages on the slab (MADV_HUGEPAGE), bind each share to its NUMA node
 * (mbind, multi-node machines only) and lock it in memory (mlock, when
 * RLIMIT_MEMLOCK allows); flags: POOL_SLAB_*. Each step that cannot be done is skipped and its reason
 * written to rep->reason (and to log when not NULL); the pool works either way.
 * Returns 0. */
int pool_slab_setup(struct pool *p, unsigned flags, struct pool_slab_report *rep, FILE *log);

#endif /* CUZK_POOL_H */
