/* ring.h — bounded multi-producer multi-consumer ring of 32-bit indices in shared
 * memory (Vyukov's bounded MPMC queue: one sequence number per cell, no locks).
 *
 * The ring lives at an offset inside a shared segment: ring_init() formats it in place,
 * ring_attach() checks it after another process mapped the segment. It holds no
 * pointers, so each process may map it at a different address.
 *
 * Rings carry hints (partition or buffer indices); the job table is the truth. A value
 * taken by a process that then dies is lost with it, which recovery tolerates; a
 * process killed at any point inside a ring call never blocks the ring for the others
 * (tests/unit/test_ring_kill.c kills one at every instruction of push and pop).
 *
 * Blocking calls spin for a while (cheap when the peer is running on another core),
 * then sleep on a shared futex (see futex.h) so a waiter in one process is woken by a
 * push in another. Timeouts are relative nanoseconds: < 0 waits forever, 0 = try once.
 */
#ifndef CUZK_RING_H
#define CUZK_RING_H

#include <stddef.h>
#include <stdint.h>
#include "base/barrier.h"
#include "shm/futex.h"

#define RING_MAGIC        0x474e4952u /* "RING" */
#define RING_CAPACITY_MAX (1u << 30)
/* Default spin before sleeping: ~2-10 us on current x86 (pause is 10-140 cycles),
 * enough to catch a peer that is mid-operation, short enough not to burn a core. */
#define RING_SPIN_DEFAULT 256u

/* One cell: 16 bytes, changed only as a whole by a 16-byte compare-and-swap (word):
 * a producer turns {empty for p, 0} into {full for p, value} and a consumer turns
 * {full for p, value} into {empty for p + capacity, 0}, each in one atomic step. So a
 * process killed at any instruction leaves every cell either before or after its
 * step, never half-way: no cell is left claimed by the dead (see ring.c). seq and
 * value are read on their own (atomic loads) only to build the expected word. */
struct ring_cell {
    union {
        struct {
            _Atomic uint64_t seq;
            uint32_t value;
            uint32_t pad; /* always 0 */
        };
        unsigned __int128 word;
    };
} __attribute__((aligned(16)));
_Static_assert(sizeof(struct ring_cell) == 16, "ring_cell ABI");

/* Shared ring header; cells follow it. Each group of fields is on its own cache line
 * so producers and consumers do not false-share. */
struct ring {
    /* line 0 — writer: ring_init (creator), immutable afterwards */
    uint32_t magic;
    uint32_t capacity; /* power of two, 1 .. RING_CAPACITY_MAX */
    uint32_t mask;     /* capacity - 1 */
    uint32_t reserved0[13];
    /* line 1 — writers: all producers (CAS; any of them advances a lagging head) */
    _Atomic uint64_t head; /* next position to produce (or one behind it); free-running */
    uint8_t pad1[BARRIER_CACHE_LINE - 8];
    /* line 2 — writers: all consumers (CAS; any of them advances a lagging tail) */
    _Atomic uint64_t tail; /* next position to consume (or one behind it); free-running */
    uint8_t pad2[BARRIER_CACHE_LINE - 8];
    /* line 3 — consumers sleep here when empty; producers wake */
    struct futex_waitq not_empty;
    uint8_t pad3[BARRIER_CACHE_LINE - 8];
    /* line 4 — producers sleep here when full; consumers wake */
    struct futex_waitq not_full;
    uint8_t pad4[BARRIER_CACHE_LINE - 8];
    struct ring_cell cells[];
};
_Static_assert(offsetof(struct ring, head) == 64, "ring ABI");
_Static_assert(offsetof(struct ring, tail) == 128, "ring ABI");
_Static_assert(offsetof(struct ring, not_empty) == 192, "ring ABI");
_Static_assert(offsetof(struct ring, not_full) == 256, "ring ABI");
_Static_assert(offsetof(struct ring, cells) == 320, "ring ABI");
_Static_assert(sizeof(struct ring) == 320, "ring ABI");

/* Bytes needed for a ring of this capacity (a multiple of 64), or 0 if the capacity
 * is not a power of two in 1 .. RING_CAPACITY_MAX. */
size_t ring_size_bytes(uint32_t capacity);

/* Format a ring in place at mem (64-byte aligned, ring_size_bytes(capacity) long).
 * Returns 0, or -EINVAL for a bad capacity or alignment (mem untouched). */
int ring_init(struct ring *r, uint32_t capacity);

/* Test hook: as ring_init, but the free-running positions start at start instead of 0,
 * so tests can cross 2^32 and 2^64 without 4 billion operations. */
int ring_init_at(struct ring *r, uint32_t capacity, uint64_t start);

/* Check a ring formatted by another process: 0, or -EINVAL if magic or capacity do
 * not match or size (the bytes available at r) is too small. */
int ring_attach(const struct ring *r, size_t size);

/* Non-blocking: 0, or -EAGAIN when full (push) / empty (pop). */
int ring_try_push(struct ring *r, uint32_t value);
int ring_try_pop(struct ring *r, uint32_t *value);

/* Blocking with timeout (ns; < 0 forever, 0 = try once) after spinning spin_iters
 * rounds. 0, -ETIMEDOUT (-EAGAIN when timeout_ns == 0). State unchanged on failure. */
int ring_push_wait(struct ring *r, uint32_t value, int64_t timeout_ns, uint32_t spin_iters);
int ring_pop_wait(struct ring *r, uint32_t *value, int64_t timeout_ns, uint32_t spin_iters);

/* As the _wait forms with RING_SPIN_DEFAULT. */
int ring_push_timeout(struct ring *r, uint32_t value, int64_t timeout_ns);
int ring_pop_timeout(struct ring *r, uint32_t *value, int64_t timeout_ns);

/* Approximate number of queued items (exact when quiescent), for queue-depth display. */
uint32_t ring_count(const struct ring *r);

#endif /* CUZK_RING_H */
