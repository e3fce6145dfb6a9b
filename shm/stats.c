/* stats.c — stats page: single-writer slots under a seqlock, time accounting,
 * counters and log2 histograms. Protocol in shm/stats.h. */
#include "shm/stats.h"

#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>

size_t stats_page_size(uint32_t slot_count)
{
    return sizeof(struct stats_page) + (size_t)slot_count * sizeof(struct stats_slot);
}

int stats_page_init(struct stats_page *pg, uint32_t slot_count, int32_t supervisor_pid, uint64_t now_ns)
{
    if (!slot_count || ((uintptr_t)pg & (BARRIER_CACHE_LINE - 1)) || stats_page_size(slot_count) > UINT32_MAX)
        return -EINVAL;
    memset(pg, 0, stats_page_size(slot_count));
    pg->version = STATS_PAGE_VERSION;
    pg->size = (uint32_t)stats_page_size(slot_count);
    pg->slot_count = slot_count;
    pg->slot_size = sizeof(struct stats_slot);
    pg->slots_offset = sizeof(struct stats_page);
    pg->supervisor_pid = supervisor_pid;
    pg->start_ns = now_ns;
    return 0;
}

int stats_page_check(const struct stats_page *pg, size_t size)
{
    if (size < sizeof(*pg)) return -EINVAL;
    if (pg->version != STATS_PAGE_VERSION || pg->slot_size != sizeof(struct stats_slot)) return -EPROTO;
    if (pg->slots_offset != sizeof(*pg) || pg->size != stats_page_size(pg->slot_count) || pg->size > size)
        return -EINVAL;
    return 0;
}

struct stats_slot *stats_page_slot(const struct stats_page *pg, uint32_t i)
{
    if (i >= pg->slot_count) return NULL;
    return (struct stats_slot *)((char *)pg + pg->slots_offset) + i;
}

/* Writer: open a write (seq becomes odd). Relaxed load: we are the only writer. The
 * release fence orders the odd store before the data stores that follow (W1), so a
 * reader that sees any of the new data also sees seq odd or changed. */
static void write_begin(struct stats_slot *s)
{
    barrier_store_relaxed(&s->seq, barrier_load_relaxed(&s->seq) + 1);
    barrier_fence_release();
}

/* R1: release store of the even seq publishes the data; pairs with A1 in
 * stats_slot_read. */
static void write_end(struct stats_slot *s)
{
    barrier_store_release(&s->seq, barrier_load_relaxed(&s->seq) + 1);
}

/* Relaxed read-modify-write by the single writer (no RMW instruction needed). */
static void add_relaxed(_Atomic uint64_t *p, uint64_t d)
{
    barrier_store_relaxed(p, barrier_load_relaxed(p) + d);
}

static const char *const common_names[STATS_COMMON_STATES] = {
    "idle",
    "wait_input",
    "busy",
    "wait_output",
};

void stats_slot_start(struct stats_slot *s, enum stats_role role, uint32_t index, int32_t pid,
                      uint64_t now_ns)
{
    write_begin(s);
    barrier_store_relaxed(&s->role, (uint32_t)role);
    barrier_store_relaxed(&s->index, index);
    barrier_store_relaxed(&s->pid, pid);
    barrier_store_relaxed(&s->generation, barrier_load_relaxed(&s->generation) + 1);
    barrier_store_relaxed(&s->state, STATS_IDLE);
    barrier_store_relaxed(&s->start_ns, now_ns);
    barrier_store_relaxed(&s->since_ns, now_ns);
    barrier_store_relaxed(&s->heartbeat_ns, now_ns);
    for (int i = 0; i < STATS_MAX_STATES; i++) barrier_store_relaxed(&s->state_ns[i], 0);
    for (int i = 0; i < STATS_MAX_COUNTERS; i++) barrier_store_relaxed(&s->counters[i], 0);
    for (int h = 0; h < STATS_MAX_HISTS; h++) {
        barrier_store_relaxed(&s->hists[h].count, 0);
        barrier_store_relaxed(&s->hists[h].sum_ns, 0);
        for (int b = 0; b < STATS_HIST_BUCKETS; b++) barrier_store_relaxed(&s->hists[h].bucket[b], 0);
    }
    memset(s->state_names, 0, sizeof(s->state_names));
    memset(s->counter_names, 0, sizeof(s->counter_names));
    memset(s->hist_names, 0, sizeof(s->hist_names));
    for (int g = 0; g < STATS_MAX_GAUGES; g++) barrier_store_relaxed(&s->gauges[g], 0);
    memset(s->gauge_names, 0, sizeof(s->gauge_names));
    for (int i = 0; i < STATS_COMMON_STATES; i++)
        snprintf(s->state_names[i], STATS_NAME_LEN, "%s", common_names[i]);
    write_end(s);
}

/* names[i] = name, for i in [first, n): one of the slot's name tables. */
static int name_set(struct stats_slot *s, char (*names)[STATS_NAME_LEN], uint32_t first, uint32_t n,
                    uint32_t i, const char *name)
{
    if (i < first || i >= n || !name || strlen(name) >= STATS_NAME_LEN) return -EINVAL;
    write_begin(s);
    memset(names[i], 0, STATS_NAME_LEN);
    memcpy(names[i], name, strlen(name));
    write_end(s);
    return 0;
}

int stats_slot_name_state(struct stats_slot *s, uint32_t state, const char *name)
{
    return name_set(s, s->state_names, STATS_STAGE0, STATS_MAX_STATES, state, name);
}

int stats_slot_name_counter(struct stats_slot *s, uint32_t c, const char *name)
{
    return name_set(s, s->counter_names, 0, STATS_MAX_COUNTERS, c, name);
}

int stats_slot_name_hist(struct stats_slot *s, uint32_t h, const char *name)
{
    return name_set(s, s->hist_names, 0, STATS_MAX_HISTS, h, name);
}

int stats_slot_name_gauge(struct stats_slot *s, uint32_t g, const char *name)
{
    return name_set(s, s->gauge_names, 0, STATS_MAX_GAUGES, g, name);
}

int stats_slot_enter(struct stats_slot *s, uint32_t state, uint64_t now_ns)
{
    uint32_t cur = barrier_load_relaxed(&s->state);
    uint64_t since = barrier_load_relaxed(&s->since_ns);

    if (state >= STATS_MAX_STATES || now_ns < since) return -EINVAL;
    write_begin(s);
    add_relaxed(&s->state_ns[cur], now_ns - since);
    barrier_store_relaxed(&s->state, state);
    barrier_store_relaxed(&s->since_ns, now_ns);
    barrier_store_relaxed(&s->heartbeat_ns, now_ns);
    write_end(s);
    return 0;
}

void stats_slot_heartbeat(struct stats_slot *s, uint64_t now_ns)
{
    write_begin(s);
    barrier_store_relaxed(&s->heartbeat_ns, now_ns);
    write_end(s);
}

void stats_counter_add(struct stats_slot *s, uint32_t c, uint64_t delta)
{
    if (c >= STATS_MAX_COUNTERS) return;
    write_begin(s);
    add_relaxed(&s->counters[c], delta);
    write_end(s);
}

uint32_t stats_hist_bucket(uint64_t ns)
{
    uint32_t b = ns ? 64 - (uint32_t)__builtin_clzll(ns) : 0;

    return b < STATS_HIST_BUCKETS ? b : STATS_HIST_BUCKETS - 1;
}

void stats_hist_record(struct stats_slot *s, uint32_t h, uint64_t ns)
{
    if (h >= STATS_MAX_HISTS) return;
    write_begin(s);
    add_relaxed(&s->hists[h].count, 1);
    add_relaxed(&s->hists[h].sum_ns, ns);
    add_relaxed(&s->hists[h].bucket[stats_hist_bucket(ns)], 1);
    write_end(s);
}

void stats_gauges_set(struct stats_slot *s, uint32_t first, const uint64_t *v, uint32_t n)
{
    if (first >= STATS_MAX_GAUGES) return;
    if (n > STATS_MAX_GAUGES - first) n = STATS_MAX_GAUGES - first;
    write_begin(s);
    for (uint32_t i = 0; i < n; i++) barrier_store_relaxed(&s->gauges[first + i], v[i]);
    write_end(s);
}

int stats_slot_read(const struct stats_slot *cs, struct stats_snapshot *o, uint64_t now_ns, int max_tries)
{
    struct stats_slot *s = (struct stats_slot *)cs;

    for (int t = 0; t < max_tries; t++) {
        /* A1: acquire pairs with R1 in write_end. */
        uint32_t s0 = barrier_load_acquire(&s->seq);

        if (s0 & 1) {
            /* A writer is mid-update. It holds the slot for well under a
             * microsecond unless it was preempted there; after a short spin, give
             * the CPU away so a preempted writer can finish (on a loaded 2-core
             * machine 1000 bare spins all landed inside one preemption). */
            if (t < 16)
                barrier_cpu_relax();
            else
                sched_yield();
            continue;
        }
        o->role = barrier_load_relaxed(&s->role);
        o->index = barrier_load_relaxed(&s->index);
        o->pid = barrier_load_relaxed(&s->pid);
        o->generation = barrier_load_relaxed(&s->generation);
        o->state = barrier_load_relaxed(&s->state);
        o->start_ns = barrier_load_relaxed(&s->start_ns);
        o->since_ns = barrier_load_relaxed(&s->since_ns);
        o->heartbeat_ns = barrier_load_relaxed(&s->heartbeat_ns);
        for (int i = 0; i < STATS_MAX_STATES; i++) o->state_ns[i] = barrier_load_relaxed(&s->state_ns[i]);
        for (int i = 0; i < STATS_MAX_COUNTERS; i++) o->counters[i] = barrier_load_relaxed(&s->counters[i]);
        for (int h = 0; h < STATS_MAX_HISTS; h++) {
            o->hists[h].count = barrier_load_relaxed(&s->hists[h].count);
            o->hists[h].sum_ns = barrier_load_relaxed(&s->hists[h].sum_ns);
            for (int b = 0; b < STATS_HIST_BUCKETS; b++)
                o->hists[h].bucket[b] = barrier_load_relaxed(&s->hists[h].bucket[b]);
        }
        for (int g = 0; g < STATS_MAX_GAUGES; g++) o->gauges[g] = barrier_load_relaxed(&s->gauges[g]);
        /* Names are plain bytes; a torn copy is discarded by the seq check below. */
        memcpy(o->state_names, s->state_names, sizeof(o->state_names));
        memcpy(o->counter_names, s->counter_names, sizeof(o->counter_names));
        memcpy(o->hist_names, s->hist_names, sizeof(o->hist_names));
        memcpy(o->gauge_names, s->gauge_names, sizeof(o->gauge_names));
        /* A2: acquire fence orders the data loads before the re-read of seq; pairs
         * with the release fence W1 in write_begin. */
        barrier_fence_acquire();
        if (barrier_load_relaxed(&s->seq) != s0) continue;
        if (o->state >= STATS_MAX_STATES) o->state = STATS_IDLE;
        /* now_ns was read before this copy; a writer that changed state in between
         * (the reader preempted on a loaded machine) has state totals that run to
         * since_ns, past now_ns. Read the slot as of the later of the two, so its
         * states still sum to its wall time (top_accounting saw 4 ms over 2 s). */
        if (now_ns < o->since_ns) now_ns = o->since_ns;
        o->wall_ns = now_ns > o->start_ns ? now_ns - o->start_ns : 0;
        o->state_ns[o->state] += now_ns - o->since_ns;
        return 0;
    }
    return -EAGAIN;
}

uint64_t stats_hist_percentile(const struct stats_snapshot *snap, uint32_t h, double q)
{
    uint64_t n, target, acc = 0;

    if (h >= STATS_MAX_HISTS || !(n = snap->hists[h].count)) return 0;
    target = (uint64_t)(q * (double)n + 0.999999);
    if (target < 1) target = 1;
    for (uint32_t b = 0; b < STATS_HIST_BUCKETS; b++) {
        acc += snap->hists[h].bucket[b];
        if (acc >= target) return b ? (b >= 63 ? UINT64_MAX : (1ull << b) - 1) : 0;
    }
    return UINT64_MAX;
}
