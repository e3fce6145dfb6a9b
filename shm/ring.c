/* ring.c — Vyukov-style bounded MPMC ring of 32-bit values in shared memory.
 *
 * Positions. head and tail are free-running 64-bit unsigned counters; position p uses
 * cell p & mask. They are never reset, and all arithmetic on them is mod 2^64: head -
 * tail is the fill level even after head wraps past UINT64_MAX, and comparisons go
 * through the signed difference (int64_t)(a - b), which is right while the two values
 * are less than 2^62 positions apart (the ring holds at most 2^30). At 10^9 operations
 * per second a 64-bit counter wraps after 584 years, but the wrap is still tested
 * (ring_init_at), and 64 bits mean a producer stalled between reading head and its CAS
 * cannot be fooled by a counter that went all the way round (ABA), which a 32-bit
 * counter at 10^8 ops/s would allow after a 43-second SIGSTOP.
 *
 * Cell sequence encoding. For position p:
 *     seq == 2p      cell empty, waiting for the producer of p
 *     seq == 2p + 1  cell full, holding the value of p, waiting for its consumer
 * The consumer of p then stores 2(p + capacity): empty, waiting for the producer one
 * lap later. Vyukov's original uses p and p + 1; doubling keeps "full for p" (2p+1)
 * distinct from "empty for p+1" (2p+2) when capacity is 1.
 *
 * Surviving kill -9. Vyukov's queue claims a position by a CAS on head (or tail) and
 * then stores the cell's seq: a process killed between the two leaves the cell claimed
 * forever, and one lap later every producer sees the ring full (or every consumer sees
 * it empty) although it is not. The stages here are killed at arbitrary instructions
 * (operators, the OOM killer, the fault tests), and a TSan build, which widens that
 * window, hit it in test_shm_stress: fill 5 of 4096 and the ring refused every push.
 * So the order is turned round. The cell itself is the claim: one 16-byte CAS moves
 * it from {empty for p} to {full for p, value} (push) or from {full for p, value} to
 * {empty for p + capacity} (pop), value included, so the hand-off is a single atomic
 * step. head and tail become hints that may lag one position behind: whoever finds
 * the cell at head already full (at tail already emptied) advances the counter with
 * a CAS from exactly that position, on behalf of a peer that is slow or dead. A
 * process killed anywhere leaves each cell before or after its step, and at worst a
 * counter one behind, which the next caller repairs.
 *
 * Memory order. The cell step is a full barrier (a locked instruction, and a compiler
 * barrier by its "memory" clobber): a push releases what the producer wrote before it (the job
 * table entry the value names) and a pop acquires it. Loads of seq are acquire, so a
 * value read after a matching seq belongs to it; the CAS re-checks both.
 */
#include "shm/ring.h"

#include <errno.h>
#include "base/os.h"
#include "base/barrier.h"

static int is_pow2(uint32_t x)
{
    return x && !(x & (x - 1));
}

size_t ring_size_bytes(uint32_t capacity)
{
    if (!is_pow2(capacity) || capacity > RING_CAPACITY_MAX) return 0;
    return sizeof(struct ring) + (size_t)capacity * sizeof(struct ring_cell);
}

int ring_init_at(struct ring *r, uint32_t capacity, uint64_t start)
{
    if (!ring_size_bytes(capacity) || ((uintptr_t)r & (BARRIER_CACHE_LINE - 1))) return -EINVAL;
    r->magic = RING_MAGIC;
    r->capacity = capacity;
    r->mask = capacity - 1;
    for (unsigned i = 0; i < sizeof(r->reserved0) / sizeof(r->reserved0[0]); i++) r->reserved0[i] = 0;
    /* Relaxed stores: nobody else sees the ring until the segment's ready flag is
     * published with release (segment_publish), which orders all of these. */
    barrier_store_relaxed(&r->head, start);
    barrier_store_relaxed(&r->tail, start);
    futex_waitq_init(&r->not_empty);
    futex_waitq_init(&r->not_full);
    for (uint32_t i = 0; i < capacity; i++) {
        uint64_t p = start + i;

        barrier_store_relaxed(&r->cells[p & r->mask].seq, 2 * p);
        r->cells[p & r->mask].value = 0;
        r->cells[p & r->mask].pad = 0;
    }
    return 0;
}

int ring_init(struct ring *r, uint32_t capacity)
{
    return ring_init_at(r, capacity, 0);
}

int ring_attach(const struct ring *r, size_t size)
{
    if (size < sizeof(struct ring) || r->magic != RING_MAGIC || !is_pow2(r->capacity) ||
        r->capacity > RING_CAPACITY_MAX || r->mask != r->capacity - 1 || size < ring_size_bytes(r->capacity))
        return -EINVAL;
    return 0;
}

/* ThreadSanitizer cannot see the cmpxchg16b below; tell it that a step publishes
 * what came before it and that a successful step sees what the previous one did.
 * (TSan's own 16-byte atomics take a mutex private to each process, which is not
 * atomic across processes: test_shm_stress saw duplicates with them.) */
#if defined(__SANITIZE_THREAD__)
#define RING_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define RING_TSAN 1
#endif
#endif
#ifdef RING_TSAN
void __tsan_acquire(void *addr);
void __tsan_release(void *addr);
#endif

/* The one step that moves a cell: {seq_from, value_from} -> {seq_to, value_to}, or
 * nothing if the cell holds anything else. lock cmpxchg16b (in every x86-64 CPU since
 * 2006), written out rather than through __sync_bool_compare_and_swap so that every
 * build, sanitizers included, uses the instruction itself on the shared cell. */
static int cell_step(struct ring_cell *c, uint64_t seq_from, uint32_t value_from, uint64_t seq_to,
                     uint32_t value_to)
{
    uint64_t lo = seq_from, hi = value_from; /* pad is 0 */
    unsigned char ok;

#ifdef RING_TSAN
    __tsan_release(c);
#endif
    __asm__ __volatile__("lock cmpxchg16b %1\n\tsete %0"
                         : "=q"(ok), "+m"(c->word), "+a"(lo), "+d"(hi)
                         : "b"(seq_to), "c"((uint64_t)value_to)
                         : "memory", "cc");
#ifdef RING_TSAN
    if (ok) __tsan_acquire(c);
#endif
    return ok;
}

/* Move a counter that lags behind a cell already stepped at pos; a failed CAS means a
 * peer moved it first. Relaxed: the counters only say where to look next, the cells
 * carry the hand-off. */
static void counter_pass(_Atomic uint64_t *counter, uint64_t pos)
{
    barrier_cas_strong_relaxed(counter, &pos, pos + 1);
}

/* The walk push and pop share, each on its own cursor (head for a push, tail for a
 * pop). The cell at pos is the caller's when its seq says so (empty for pos: 2 pos;
 * full for pos: 2 pos + 1), and then one cell step hands the value over; a seq behind
 * that means the ring is full (push: the cell still holds the value of pos -
 * capacity) or empty (pop: pos not produced yet); one ahead means pos was stepped
 * already, by a peer that may not have moved the cursor yet or is dead: move the
 * cursor past it and look again. Inlined with pop a constant, push and pop each keep
 * their own straight code. */
static inline __attribute__((always_inline)) int ring_walk(struct ring *r, int pop, uint32_t *value)
{
    _Atomic uint64_t *cursor = pop ? &r->tail : &r->head;
    uint64_t pos = barrier_load_relaxed(cursor);
    uint32_t v;

    for (;;) {
        struct ring_cell *c = &r->cells[pos & r->mask];
        uint64_t seq = barrier_load_acquire(&c->seq);
        int64_t dif = (int64_t)(pop ? seq - (2 * pos + 1) : seq - 2 * pos);

        if (dif == 0) {
            if (!pop) {
                /* Empty for pos (an empty cell always holds value 0). */
                if (cell_step(c, 2 * pos, 0, 2 * pos + 1, *value)) break;
            } else {
                /* Full for pos. value may already belong to a later lap if a peer
                 * took pos meanwhile; then the step fails and the loop passes pos. */
                v = barrier_load_relaxed(&c->value);
                if (cell_step(c, 2 * pos + 1, v, 2 * (pos + r->capacity), 0)) break;
            }
            /* A peer stepped it first: loop and pass it. */
        } else if (dif < 0) {
            return -EAGAIN;
        } else {
            counter_pass(cursor, pos);
            pos = barrier_load_relaxed(cursor);
        }
    }
    counter_pass(cursor, pos);
    if (pop) *value = v;
    return 0;
}

int ring_try_push(struct ring *r, uint32_t value)
{
    if (ring_walk(r, 0, &value)) return -EAGAIN;
    futex_waitq_wake(&r->not_empty, 1);
    return 0;
}

int ring_try_pop(struct ring *r, uint32_t *value)
{
    if (ring_walk(r, 1, value)) return -EAGAIN;
    futex_waitq_wake(&r->not_full, 1);
    return 0;
}

/* Shared body of the blocking calls: try, spin, then sleep on q until op succeeds. */
static int ring_wait(struct ring *r, uint32_t *value, int push, int64_t timeout_ns, uint32_t spin_iters)
{
    struct futex_waitq *q = push ? &r->not_full : &r->not_empty;
    uint64_t deadline = 0;
    int rc;

#define RING_OP() (push ? ring_try_push(r, *value) : ring_try_pop(r, value))
    if ((rc = RING_OP()) != -EAGAIN || timeout_ns == 0) return rc;
    for (uint32_t i = 0; i < spin_iters; i++) {
        barrier_cpu_relax();
        if ((rc = RING_OP()) != -EAGAIN) return rc;
    }
    if (timeout_ns > 0) deadline = os_now_ns() + (uint64_t)timeout_ns;
    for (;;) {
        uint32_t seq = futex_waitq_prepare(q);

        if ((rc = RING_OP()) != -EAGAIN) {
            futex_waitq_finish(q);
            return rc;
        }
        rc = futex_waitq_sleep(q, seq, deadline);
        futex_waitq_finish(q);
        if ((rc = RING_OP()) != -EAGAIN) return rc;
        if (deadline && os_now_ns() >= deadline) return -ETIMEDOUT;
    }
#undef RING_OP
}

int ring_push_wait(struct ring *r, uint32_t value, int64_t timeout_ns, uint32_t spin_iters)
{
    return ring_wait(r, &value, 1, timeout_ns, spin_iters);
}

int ring_pop_wait(struct ring *r, uint32_t *value, int64_t timeout_ns, uint32_t spin_iters)
{
    return ring_wait(r, value, 0, timeout_ns, spin_iters);
}

int ring_push_timeout(struct ring *r, uint32_t value, int64_t timeout_ns)
{
    return ring_wait(r, &value, 1, timeout_ns, RING_SPIN_DEFAULT);
}

int ring_pop_timeout(struct ring *r, uint32_t *value, int64_t timeout_ns)
{
    return ring_wait(r, value, 0, timeout_ns, RING_SPIN_DEFAULT);
}

uint32_t ring_count(const struct ring *r)
{
    /* Relaxed: a display value; tail is read first so that, with head read after
     * it, the difference is rarely negative; clamp for the rare case. */
    uint64_t t = barrier_load_relaxed(&((struct ring *)r)->tail);
    uint64_t h = barrier_load_relaxed(&((struct ring *)r)->head);
    int64_t n = (int64_t)(h - t);

    if (n < 0) return 0;
    return n > r->capacity ? r->capacity : (uint32_t)n;
}
