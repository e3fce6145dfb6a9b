/* futex.c — shared futex wait/wake and the waiter-count + sequence wait queue.
 * The protocol and why it never loses a wake-up are in shm/futex.h. */
#include "shm/futex.h"

#include <errno.h>
#include <limits.h>
#include <linux/futex.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

int futex_wait(_Atomic uint32_t *word, uint32_t expected, uint64_t deadline_ns)
{
    struct timespec ts, *tsp = NULL;
    long rc;

    if (deadline_ns) {
        ts.tv_sec = (time_t)(deadline_ns / 1000000000u);
        ts.tv_nsec = (long)(deadline_ns % 1000000000u);
        tsp = &ts;
    }
    /* FUTEX_WAIT_BITSET takes an absolute timeout, on CLOCK_MONOTONIC unless
     * FUTEX_CLOCK_REALTIME is set, so a retry after a spurious wake does not stretch
     * the caller's deadline. Not FUTEX_PRIVATE_FLAG: waker may be another process. */
    rc = syscall(SYS_futex, (uint32_t *)word, FUTEX_WAIT_BITSET, expected, tsp, NULL, FUTEX_BITSET_MATCH_ANY);
    if (rc == 0) return 0;
    if (errno == EWOULDBLOCK) return -EAGAIN;
    return -errno;
}

int futex_wake(_Atomic uint32_t *word, int n)
{
    long rc = syscall(SYS_futex, (uint32_t *)word, FUTEX_WAKE, n, NULL, NULL, 0);

    return rc < 0 ? -errno : (int)rc;
}

void futex_waitq_init(struct futex_waitq *q)
{
    /* Relaxed: the segment is published to other processes by its header's ready
     * flag (release in segment_create), which orders these stores. */
    barrier_store_relaxed(&q->seq, 0);
    barrier_store_relaxed(&q->waiters, 0);
}

uint32_t futex_waitq_prepare(struct futex_waitq *q)
{
    /* Snapshot first: a wake that happens after this read bumps seq, which makes the
     * later FUTEX_WAIT return at once. Acquire pairs with the seq_cst bump (W1) in
     * futex_waitq_wake. */
    uint32_t seq = barrier_load_acquire(&q->seq);

    /* Dekker half 1: announce, then (after the fence) the caller re-reads its
     * condition. seq_cst RMW + seq_cst fence pairs with the fence in
     * futex_waitq_wake. */
    barrier_fetch_add_seq_cst(&q->waiters, 1);
    barrier_fence_seq_cst();
    return seq;
}

int futex_waitq_sleep(struct futex_waitq *q, uint32_t seq, uint64_t deadline_ns)
{
    return futex_wait(&q->seq, seq, deadline_ns);
}

void futex_waitq_finish(struct futex_waitq *q)
{
    /* Relaxed: an over-count only costs a waker one unneeded syscall; an under-count
     * cannot happen because prepare's increment precedes this in program order. */
    barrier_fetch_sub_relaxed(&q->waiters, 1);
}

void futex_waitq_wake(struct futex_waitq *q, int n)
{
    /* Dekker half 2: the caller's condition write is ordered before the waiters read
     * by this fence (pairs with the fence in futex_waitq_prepare). */
    barrier_fence_seq_cst();
    if (barrier_load_relaxed(&q->waiters) == 0) return;
    /* W1: seq_cst bump, then wake; a waiter that snapshot the old seq either sees
     * the new value in FUTEX_WAIT or is already queued. */
    barrier_fetch_add_seq_cst(&q->seq, 1);
    futex_wake(&q->seq, n);
}
