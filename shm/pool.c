/* pool.c — buffer pool: CAS-owned page-aligned buffers, reclaim of a dead owner's. */
#include "shm/pool.h"

#include <errno.h>
#include <numa.h>
#include <numaif.h>
#include <stdarg.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <unistd.h>
#include "base/os.h"

#define WORD(gen, owner) ((uint64_t)(gen) << 32 | (uint32_t)(owner))
#define WORD_OWNER(w)    ((uint32_t)(w))
#define WORD_GEN(w)      ((uint32_t)((w) >> 32))

size_t pool_hdr_size(uint32_t buf_count)
{
    size_t n = sizeof(struct pool_hdr) + (size_t)buf_count * sizeof(uint64_t);

    return (n + BARRIER_CACHE_LINE - 1) & ~(size_t)(BARRIER_CACHE_LINE - 1);
}

int pool_init(struct pool_hdr *h, uint32_t buf_count, uint64_t buf_size, int64_t slab_offset,
              uint32_t n_nodes, const int *numa_nodes)
{
    return pool_init_split(h, buf_count, buf_size, slab_offset, n_nodes, numa_nodes, NULL);
}

int pool_init_split(struct pool_hdr *h, uint32_t buf_count, uint64_t buf_size, int64_t slab_offset,
                    uint32_t n_nodes, const int *numa_nodes, const uint32_t *counts)
{
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    _Atomic uint64_t *owners;
    uint64_t sum = 0;

    if (!buf_count || buf_count >= POOL_OWNER_PART || !buf_size || buf_size % page ||
        n_nodes > POOL_MAX_NODES || (n_nodes > 1 && !numa_nodes))
        return -EINVAL;
    if (!n_nodes) n_nodes = 1;
    for (uint32_t i = 0; counts && i < n_nodes; i++) sum += counts[i];
    if (counts && !sum) counts = NULL;
    if (counts && sum != buf_count) return -EINVAL;
    memset(h, 0, sizeof(*h));
    h->magic = POOL_MAGIC;
    h->buf_count = buf_count;
    h->buf_size = buf_size;
    h->slab_offset = slab_offset;
    h->owners_offset = sizeof(*h);
    h->n_nodes = n_nodes;
    for (uint32_t i = 0, first = 0; i < n_nodes; i++) {
        /* Even split; the first shares take the remainder. */
        uint32_t cnt = counts ? counts[i] : buf_count / n_nodes + (i < buf_count % n_nodes);

        h->nodes[i].first = first;
        h->nodes[i].count = cnt;
        h->nodes[i].numa_node = numa_nodes ? numa_nodes[i] : -1;
        first += cnt;
    }
    /* Relaxed stores: published to other processes by segment_publish (release). */
    for (uint32_t i = 0; i < POOL_MAX_NODES; i++) barrier_store_relaxed(&h->hint[i], 0);
    futex_waitq_init(&h->freed);
    owners = (_Atomic uint64_t *)((char *)h + h->owners_offset);
    for (uint32_t i = 0; i < buf_count; i++) barrier_store_relaxed(&owners[i], WORD(0, POOL_OWNER_FREE));
    return 0;
}

int pool_view(struct pool *p, struct pool_hdr *h, size_t hdr_size, const void *map_end)
{
    unsigned char *slab = (unsigned char *)h + h->slab_offset;

    memset(p, 0, sizeof(*p));
    if (hdr_size < sizeof(*h) || h->magic != POOL_MAGIC || !h->buf_count || h->buf_count >= POOL_OWNER_PART ||
        hdr_size < pool_hdr_size(h->buf_count) || h->owners_offset != sizeof(*h) || !h->n_nodes ||
        h->n_nodes > POOL_MAX_NODES)
        return -EINVAL;
    if ((const unsigned char *)map_end < slab ||
        (uint64_t)((const unsigned char *)map_end - slab) / h->buf_size < h->buf_count)
        return -EINVAL;
    p->hdr = h;
    p->owners = (_Atomic uint64_t *)((char *)h + h->owners_offset);
    p->slab = slab;
    return 0;
}

/* One pass over share n starting at its hint; 0 and *idx on success. */
static int pool_try_share(struct pool *p, uint32_t n, uint32_t owner, uint32_t *idx)
{
    const struct pool_node *nd = &p->hdr->nodes[n];
    /* Relaxed: the hint only decides where the scan starts. */
    uint32_t start = barrier_load_relaxed(&p->hdr->hint[n]);

    for (uint32_t k = 0; k < nd->count; k++) {
        uint32_t i = nd->first + (start + k) % nd->count;
        /* Relaxed pre-check avoids a CAS (and a cache-line steal) on busy buffers;
         * the CAS below re-validates. */
        uint64_t w = barrier_load_relaxed(&p->owners[i]);

        if (WORD_OWNER(w) != POOL_OWNER_FREE) continue;
        /* A1: acq_rel CAS; acquire pairs with R1 (the freeing transfer), so the
         * previous owner's accesses to the buffer happen before ours. */
        if (barrier_cas_acq_rel(&p->owners[i], &w, WORD(WORD_GEN(w) + 1, owner))) {
            barrier_store_relaxed(&p->hdr->hint[n], (start + k + 1) % nd->count);
            *idx = i;
            return 0;
        }
    }
    return -EAGAIN;
}

/* Share of node, or -1 (several shares, none is node's). One share serves all. */
static int pool_share_of(const struct pool *p, int node)
{
    if (p->hdr->n_nodes == 1) return 0;
    for (uint32_t n = 0; n < p->hdr->n_nodes; n++)
        if (p->hdr->nodes[n].numa_node == node) return (int)n;
    return -1;
}

/* strict: share `node` only (pool_buf_alloc_node); else node's share first, then any. */
static int pool_try_alloc(struct pool *p, int node, int strict, uint32_t owner, uint32_t *idx)
{
    uint32_t n_nodes = p->hdr->n_nodes, first = 0;

    if (strict) return pool_try_share(p, (uint32_t)pool_share_of(p, node), owner, idx);

    if (node >= 0) {
        for (uint32_t n = 0; n < n_nodes; n++)
            if (p->hdr->nodes[n].numa_node == node) first = n;
    }
    for (uint32_t k = 0; k < n_nodes; k++)
        if (!pool_try_share(p, (first + k) % n_nodes, owner, idx)) return 0;
    return -EAGAIN;
}

static int pool_alloc(struct pool *p, int node, int strict, uint32_t owner, int64_t timeout_ns, uint32_t *idx)
{
    uint64_t deadline = 0;
    int rc;

    if (owner == POOL_OWNER_FREE) return -EINVAL;
    if (strict && pool_share_of(p, node) < 0) return -ENOENT;
    if ((rc = pool_try_alloc(p, node, strict, owner, idx)) == 0 || timeout_ns == 0) return rc;
    if (timeout_ns > 0) deadline = os_now_ns() + (uint64_t)timeout_ns;
    for (;;) {
        uint32_t seq = futex_waitq_prepare(&p->hdr->freed);

        if (!pool_try_alloc(p, node, strict, owner, idx)) {
            futex_waitq_finish(&p->hdr->freed);
            return 0;
        }
        futex_waitq_sleep(&p->hdr->freed, seq, deadline);
        futex_waitq_finish(&p->hdr->freed);
        if (!pool_try_alloc(p, node, strict, owner, idx)) return 0;
        if (deadline && os_now_ns() >= deadline) return -ETIMEDOUT;
    }
}

int pool_buf_alloc(struct pool *p, int node, uint32_t owner, int64_t timeout_ns, uint32_t *idx)
{
    return pool_alloc(p, node, 0, owner, timeout_ns, idx);
}

int pool_buf_alloc_node(struct pool *p, int node, uint32_t owner, int64_t timeout_ns, uint32_t *idx)
{
    return pool_alloc(p, node, 1, owner, timeout_ns, idx);
}

int pool_buf_node(const struct pool *p, uint32_t idx)
{
    if (idx >= p->hdr->buf_count) return -1;
    for (uint32_t n = 0; n < p->hdr->n_nodes; n++)
        if (idx - p->hdr->nodes[n].first < p->hdr->nodes[n].count) return p->hdr->nodes[n].numa_node;
    return -1;
}

int pool_buf_transfer(struct pool *p, uint32_t idx, uint32_t from, uint32_t to)
{
    uint64_t w;

    if (idx >= p->hdr->buf_count) return -EINVAL;
    w = barrier_load_relaxed(&p->owners[idx]);
    do {
        if (WORD_OWNER(w) != from) return -EPERM;
        /* R1: acq_rel CAS; release publishes our writes to the buffer to the next
         * owner (A1 in pool_try_share, or pool_buf_owner's acquire). */
    } while (!barrier_cas_acq_rel(&p->owners[idx], &w, WORD(WORD_GEN(w) + 1, to)));
    if (to == POOL_OWNER_FREE) futex_waitq_wake(&p->hdr->freed, 1);
    return 0;
}

int pool_buf_free(struct pool *p, uint32_t idx, uint32_t owner)
{
    if (owner == POOL_OWNER_FREE) return -EINVAL;
    return pool_buf_transfer(p, idx, owner, POOL_OWNER_FREE);
}

uint32_t pool_buf_owner(const struct pool *p, uint32_t idx)
{
    if (idx >= p->hdr->buf_count) return POOL_NONE;
    /* Acquire pairs with R1 in pool_buf_transfer. */
    return WORD_OWNER(barrier_load_acquire(&p->owners[idx]));
}

void *pool_buf_ptr(const struct pool *p, uint32_t idx)
{
    if (idx >= p->hdr->buf_count) return NULL;
    return p->slab + (uint64_t)idx * p->hdr->buf_size;
}

int pool_reclaim_pid(struct pool *p, pid_t pid)
{
    int n = 0;

    if (pid <= 0) return -EINVAL;
    for (uint32_t i = 0; i < p->hdr->buf_count; i++)
        if (pool_buf_transfer(p, i, (uint32_t)pid, POOL_OWNER_FREE) == 0) n++;
    return n;
}

int pool_node_counts(const struct pool *p, int node, uint32_t *in_use, uint32_t *free_count)
{
    uint32_t used = 0, total = 0;

    for (uint32_t n = 0; n < p->hdr->n_nodes; n++) {
        const struct pool_node *nd = &p->hdr->nodes[n];

        if (node >= 0 && nd->numa_node != node && !(nd->numa_node < 0 && node == 0)) continue;
        for (uint32_t i = nd->first; i < nd->first + nd->count; i++)
            /* Relaxed: a count for display and leak checks; no data is read. */
            used += WORD_OWNER(barrier_load_relaxed(&p->owners[i])) != POOL_OWNER_FREE;
        total += nd->count;
    }
    if (node >= 0 && !total) return -EINVAL;
    *in_use = used;
    *free_count = total - used;
    return 0;
}

static void rep_add(struct pool_slab_report *rep, FILE *log, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void rep_add(struct pool_slab_report *rep, FILE *log, const char *fmt, ...)
{
    size_t len = strlen(rep->reason);
    va_list ap;

    va_start(ap, fmt);
    if (len < sizeof(rep->reason) - 2) {
        if (len) rep->reason[len++] = ';', rep->reason[len++] = ' ';
        vsnprintf(rep->reason + len, sizeof(rep->reason) - len, fmt, ap);
    }
    va_end(ap);
    if (log) {
        va_start(ap, fmt);
        fputs("cuzk: pool: ", log);
        vfprintf(log, fmt, ap);
        fputc('\n', log);
        va_end(ap);
    }
}

/* Is shmem THP on for madvised ranges? ("[never]" or "[deny]" makes madvise moot) */
static int shmem_thp_enabled(char *mode, size_t len)
{
    FILE *f = fopen("/sys/kernel/mm/transparent_hugepage/shmem_enabled", "r");
    char buf[128] = "", *a, *b;

    snprintf(mode, len, "unknown");
    if (!f) return 0;
    if (!fgets(buf, sizeof(buf), f)) buf[0] = 0;
    fclose(f);
    a = strchr(buf, '[');
    b = a ? strchr(a, ']') : NULL;
    if (!a || !b) return 0;
    *b = 0;
    snprintf(mode, len, "%s", a + 1);
    return strcmp(mode, "never") && strcmp(mode, "deny");
}

int pool_slab_setup(struct pool *p, unsigned flags, struct pool_slab_report *rep, FILE *log)
{
    uint64_t bytes = (uint64_t)p->hdr->buf_count * p->hdr->buf_size;
    struct rlimit rl;
    char mode[32];

    memset(rep, 0, sizeof(*rep));
    /* Huge pages. The slab is part of a /dev/shm (tmpfs) file mapping, where
     * MAP_HUGETLB does not apply (it needs an anonymous or hugetlbfs mapping); tmpfs
     * backs an madvised range with 2 MiB pages when shmem THP allows it. */
    if (madvise(p->slab, bytes, MADV_HUGEPAGE) < 0)
        rep_add(rep, log, "no huge pages: madvise(MADV_HUGEPAGE): %s", strerror(errno));
    else if (!shmem_thp_enabled(mode, sizeof(mode)))
        rep_add(rep, log,
                "no huge pages: shmem THP is \"%s\" in "
                "/sys/kernel/mm/transparent_hugepage/shmem_enabled (set \"advise\")",
                mode);
    else
        rep->huge = 1;

    /* NUMA: bind each share to its node (a shared policy on the shm object, so it
     * holds for every process mapping it). One node: nothing to do. */
    if ((flags & POOL_SLAB_NO_MBIND) || numa_available() < 0 || numa_max_node() == 0 || p->hdr->n_nodes < 2) {
        rep_add(rep, log, "no NUMA binding: %s",
                (flags & POOL_SLAB_NO_MBIND) ? "the plan's nodes are a test's, not this "
                                               "machine's"
                    : numa_available() < 0   ? "NUMA not available"
                    : numa_max_node() == 0   ? "one NUMA node"
                                             : "pool has one share");
    } else {
        int ok = 1;

        for (uint32_t n = 0; n < p->hdr->n_nodes && ok; n++) {
            const struct pool_node *nd = &p->hdr->nodes[n];
            unsigned long mask = 1ul << nd->numa_node;

            if (nd->numa_node < 0 || nd->numa_node >= (int)(8 * sizeof(mask)) || !nd->count) continue;
            if (mbind(p->slab + (uint64_t)nd->first * p->hdr->buf_size,
                      (uint64_t)nd->count * p->hdr->buf_size, MPOL_BIND, &mask, 8 * sizeof(mask), 0) < 0) {
                rep_add(rep, log, "no NUMA binding: mbind node %d: %s", nd->numa_node, strerror(errno));
                ok = 0;
            }
        }
        rep->numa_bound = ok;
    }

    /* Page-lock: pinned pages never fault mid-DMA and are never swapped. */
    if (flags & POOL_SLAB_NO_MLOCK) {
        rep_add(rep, log, "not locked: caller asked not to");
    } else if (getrlimit(RLIMIT_MEMLOCK, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur < bytes) {
        rep_add(rep, log,
                "not locked: slab is %llu bytes, RLIMIT_MEMLOCK %llu (raise "
                "LimitMEMLOCK= / ulimit -l)",
                (unsigned long long)bytes, (unsigned long long)rl.rlim_cur);
    } else if (mlock(p->slab, bytes) < 0) {
        rep_add(rep, log, "not locked: mlock %llu bytes: %s", (unsigned long long)bytes, strerror(errno));
    } else {
        rep->locked = 1;
    }
    return 0;
}
