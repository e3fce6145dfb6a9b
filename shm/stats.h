/* stats.h — the stats page: one slot per process, each written by that process only.
 *
 * Layout: struct stats_page (version, size, slot geometry, reserved padding), then
 * slot_count slots of slot_size bytes at slots_offset, each on its own cache lines.
 *
 * Time accounting. A slot is always in exactly one state (idle, wait_input, busy,
 * wait_output, or one of STATS_STAGE_STATES stage-named sub-states). On every state
 * change the writer adds the closed interval to state_ns[old]. So, for a snapshot
 * taken at time now, sum(state_ns) + (now - since_ns) == now - start_ns: every
 * nanosecond of the slot's wall time is in some state. stats_slot_read adds the open
 * interval for the reader.
 *
 * Reader protocol (seqlock; writers never wait for readers):
 *   1. s0 = seq (acquire); if odd, a write is in progress: retry.
 *   2. copy the fields (relaxed atomic loads).
 *   3. acquire fence; s1 = seq; if s1 != s0 the copy may be torn: retry.
 * stats_slot_read does this. Counters are monotonic: readers difference two snapshots
 * to get rates; a counter lower than before means the process restarted (generation
 * also changes). Gauges are not monotonic: a current value (ring depth, buffers in
 * use), set by the writer; the supervisor's slot publishes the instance's shared
 * figures there, so viewers need only this (operator-readable) segment.
 */
#ifndef CUZK_STATS_H
#define CUZK_STATS_H

#include <stddef.h>
#include <stdint.h>
#include "base/barrier.h"

#define STATS_PAGE_VERSION  2u /* 2: 12 stage states, gauges */
#define STATS_COMMON_STATES 4
#define STATS_STAGE_STATES  12
#define STATS_MAX_STATES    (STATS_COMMON_STATES + STATS_STAGE_STATES)
#define STATS_MAX_COUNTERS  16
#define STATS_MAX_HISTS     4
#define STATS_MAX_GAUGES    32
#define STATS_HIST_BUCKETS  64
#define STATS_NAME_LEN      16

enum stats_role {
    STATS_ROLE_NONE = 0,
    STATS_ROLE_SUPERVISOR,
    STATS_ROLE_SYNTH,
    STATS_ROLE_GPUWORKER,
    STATS_ROLE_FINALIZER,
    STATS_ROLE_CLIENT,
};

enum stats_state {
    STATS_IDLE = 0,
    STATS_WAIT_INPUT,
    STATS_BUSY,
    STATS_WAIT_OUTPUT,
    STATS_STAGE0, /* first of STATS_STAGE_STATES stage-named states */
};

/* log2-nanosecond histogram: bucket b counts values v with b == bit length of v
 * (v = 0 in bucket 0; [2^(b-1), 2^b) in bucket b; >= 2^62 in bucket 63). */
struct stats_hist {
    _Atomic uint64_t count;
    _Atomic uint64_t sum_ns;
    _Atomic uint64_t bucket[STATS_HIST_BUCKETS];
};

/* One process's slot. Writer of every field: the process the slot belongs to, always
 * inside a seqlock write (seq odd). Readers: anyone, by the protocol above. */
struct stats_slot {
    /* line 0 */
    _Atomic uint32_t seq;   /* seqlock: odd while the writer is writing */
    _Atomic uint32_t role;  /* enum stats_role; NONE = slot unused */
    _Atomic uint32_t index; /* e.g. GPU worker number */
    _Atomic int32_t pid;
    _Atomic uint32_t generation; /* bumped by each restart in this slot */
    _Atomic uint32_t state;      /* enum stats_state or a stage state */
    _Atomic uint64_t start_ns;   /* CLOCK_MONOTONIC when the slot was started */
    _Atomic uint64_t since_ns;   /* when the current state was entered */
    _Atomic uint64_t heartbeat_ns;
    uint8_t pad0[16];
    /* lines 1-2 */
    _Atomic uint64_t state_ns[STATS_MAX_STATES]; /* closed intervals per state */
    /* lines 3-4 */
    _Atomic uint64_t counters[STATS_MAX_COUNTERS]; /* monotonic */
    /* lines 5-37 */
    struct stats_hist hists[STATS_MAX_HISTS];
    /* lines 38-41 */
    _Atomic uint64_t gauges[STATS_MAX_GAUGES]; /* current values (not monotonic) */
    /* names, written at start (and by stats_slot_name) */
    char state_names[STATS_MAX_STATES][STATS_NAME_LEN];
    char counter_names[STATS_MAX_COUNTERS][STATS_NAME_LEN];
    char hist_names[STATS_MAX_HISTS][STATS_NAME_LEN];
    char gauge_names[STATS_MAX_GAUGES][STATS_NAME_LEN];
};
_Static_assert(offsetof(struct stats_slot, state_ns) == 64, "stats_slot ABI");
_Static_assert(offsetof(struct stats_slot, counters) == 192, "stats_slot ABI");
_Static_assert(offsetof(struct stats_slot, hists) == 320, "stats_slot ABI");
_Static_assert(offsetof(struct stats_slot, gauges) == 2432, "stats_slot ABI");
_Static_assert(sizeof(struct stats_hist) == 528, "stats_hist ABI");
_Static_assert(sizeof(struct stats_slot) == 3776, "stats_slot ABI");
_Static_assert(sizeof(struct stats_slot) % BARRIER_CACHE_LINE == 0, "slots own their lines");

/* Page header. Writer: the creator (supervisor), before the segment is published;
 * immutable afterwards. */
struct stats_page {
    uint32_t version; /* STATS_PAGE_VERSION */
    uint32_t size;    /* bytes of page header + slots */
    uint32_t slot_count;
    uint32_t slot_size;    /* sizeof(struct stats_slot) of the writer's build */
    uint32_t slots_offset; /* bytes from this header */
    int32_t supervisor_pid;
    uint64_t start_ns; /* CLOCK_MONOTONIC at creation */
    uint8_t reserved[256 - 32];
};
_Static_assert(sizeof(struct stats_page) == 256, "stats_page ABI");

/* Process-local snapshot, filled by stats_slot_read. */
struct stats_snapshot {
    uint32_t role, index, generation, state;
    int32_t pid;
    uint64_t start_ns, since_ns, heartbeat_ns;
    uint64_t wall_ns;                    /* now - start_ns */
    uint64_t state_ns[STATS_MAX_STATES]; /* including the open interval */
    uint64_t counters[STATS_MAX_COUNTERS];
    struct {
        uint64_t count, sum_ns, bucket[STATS_HIST_BUCKETS];
    } hists[STATS_MAX_HISTS];
    char state_names[STATS_MAX_STATES][STATS_NAME_LEN];
    char counter_names[STATS_MAX_COUNTERS][STATS_NAME_LEN];
    char hist_names[STATS_MAX_HISTS][STATS_NAME_LEN];
    uint64_t gauges[STATS_MAX_GAUGES];
    char gauge_names[STATS_MAX_GAUGES][STATS_NAME_LEN];
};

size_t stats_page_size(uint32_t slot_count);
/* Format (64-byte aligned, stats_page_size bytes). 0 or -EINVAL. */
int stats_page_init(struct stats_page *pg, uint32_t slot_count, int32_t supervisor_pid, uint64_t now_ns);
/* Check a page mapped from elsewhere (size = bytes available). 0, -EPROTO (version or
 * slot size of another build), -EINVAL. */
int stats_page_check(const struct stats_page *pg, size_t size);
/* Slot i, or NULL. */
struct stats_slot *stats_page_slot(const struct stats_page *pg, uint32_t i);

/* ---- writer side: only the slot's own process ---- */
/* Claim the slot for this process: identity, start time, state IDLE, totals zeroed,
 * generation = previous + 1. Names of common states are filled in. */
void stats_slot_start(struct stats_slot *s, enum stats_role role, uint32_t index, int32_t pid,
                      uint64_t now_ns);
/* Name a stage state (STATS_STAGE0 ..), a counter or a histogram. 0 or -EINVAL. */
int stats_slot_name_state(struct stats_slot *s, uint32_t state, const char *name);
int stats_slot_name_counter(struct stats_slot *s, uint32_t c, const char *name);
int stats_slot_name_hist(struct stats_slot *s, uint32_t h, const char *name);
int stats_slot_name_gauge(struct stats_slot *s, uint32_t g, const char *name);
/* Enter a state at now_ns (>= since_ns); the time since the last change goes to the
 * old state. 0 or -EINVAL. */
int stats_slot_enter(struct stats_slot *s, uint32_t state, uint64_t now_ns);
void stats_slot_heartbeat(struct stats_slot *s, uint64_t now_ns);
void stats_counter_add(struct stats_slot *s, uint32_t c, uint64_t delta);
void stats_hist_record(struct stats_slot *s, uint32_t h, uint64_t ns);
/* Set gauges[first .. first+n) in one write (a viewer sees all or none of them). */
void stats_gauges_set(struct stats_slot *s, uint32_t first, const uint64_t *v, uint32_t n);

/* ---- reader side ---- */
/* Consistent copy of s with the open interval added at now_ns. 0, or -EAGAIN after
 * max_tries torn reads (the writer is writing continuously, or died mid-write). */
int stats_slot_read(const struct stats_slot *s, struct stats_snapshot *out, uint64_t now_ns, int max_tries);
uint32_t stats_hist_bucket(uint64_t ns);
/* Upper bound (2^b - 1 ns) of the bucket holding quantile q (0..1) of snapshot
 * histogram h; 0 when empty. e.g. stats_hist_percentile(&snap, 0, 0.99). */
uint64_t stats_hist_percentile(const struct stats_snapshot *snap, uint32_t h, double q);

#endif /* CUZK_STATS_H */
