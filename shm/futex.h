/* futex.h — sleeping on a 32-bit word in shared memory, across processes.
 *
 * The futex calls are the shared (not FUTEX_PRIVATE) forms, so a waiter in one process
 * is woken by a waker in another as long as both map the same page.
 *
 * struct futex_waitq is the wake-up-never-lost pattern the rings and the buffer pool
 * use: a waiter count (so a waker does not pay a syscall when nobody sleeps) and a
 * sequence word (the futex word; bumped on every wake so a waiter that read it before
 * the condition became true does not sleep). Protocol:
 *
 *     waiter                                   waker
 *     ------                                   -----
 *     seq = futex_waitq_prepare(q)             make the condition true
 *       (snapshot seq, waiters++, full fence)  futex_waitq_wake(q, n)
 *     if (condition) { finish; done }            (full fence, if waiters: seq++, FUTEX_WAKE)
 *     futex_waitq_sleep(q, seq, deadline)
 *     futex_waitq_finish(q)   (waiters--)
 *
 * Why no wake-up is lost: the waiter's "waiters++; fence; read condition" and the
 * waker's "write condition; fence; read waiters" are the two halves of Dekker's
 * pattern; with a full fence on both sides at least one sees the other's write. If the
 * waker sees waiters == 0, the waiter's re-check sees the condition and does not sleep.
 * If the waker sees waiters > 0, it bumps seq after the waiter's snapshot, so either
 * FUTEX_WAIT finds seq changed (returns at once) or the waiter is already queued in
 * the kernel and FUTEX_WAKE reaches it.
 */
#ifndef CUZK_FUTEX_H
#define CUZK_FUTEX_H

#include <stdint.h>
#include "base/barrier.h"
#include "base/os.h"

/* Shared; writers: every waiter (waiters) and every waker (seq). 8 bytes; callers
 * place it on its own cache line. */
struct futex_waitq {
    _Atomic uint32_t seq;     /* futex word; bumped by wakers */
    _Atomic uint32_t waiters; /* number of processes between prepare and finish */
};
_Static_assert(sizeof(struct futex_waitq) == 8, "futex_waitq is part of the shared ABI");

/* Sleep while *word == expected, until woken or until deadline_ns (CLOCK_MONOTONIC,
 * absolute; 0 = no deadline). Returns 0 when woken, -EAGAIN if *word != expected on
 * entry, -ETIMEDOUT, or -EINTR. Spurious returns are possible: callers re-check. */
int futex_wait(_Atomic uint32_t *word, uint32_t expected, uint64_t deadline_ns);

/* Wake up to n waiters sleeping on word. Returns the number woken or -errno. */
int futex_wake(_Atomic uint32_t *word, int n);

void futex_waitq_init(struct futex_waitq *q);
uint32_t futex_waitq_prepare(struct futex_waitq *q);
int futex_waitq_sleep(struct futex_waitq *q, uint32_t seq, uint64_t deadline_ns);
void futex_waitq_finish(struct futex_waitq *q);
/* Call after making the condition true. Costs one fence and one load when nobody
 * waits. */
void futex_waitq_wake(struct futex_waitq *q, int n);

#endif /* CUZK_FUTEX_H */
