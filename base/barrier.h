/* barrier.h — the one place cuzk touches <stdatomic.h> (on the ground floor, so that
 * every folder can reach it).
 *
 * Every module that shares a word between threads or processes goes through these
 * wrappers, so each access names its
 * memory order at the call site and a reader can grep for every acquire/release.
 * Shared words are _Atomic uint32_t / uint64_t; both are lock-free on x86-64 and
 * aarch64 (asserted below), which is what makes them safe between processes: a
 * lock-based fallback would put its lock in private memory.
 *
 * Conventions used in the code that calls these:
 *   - each release store / release RMW carries a label (R1, R2, ...) and each acquire
 *     names the release it pairs with ("pairs with R1 in ring_push");
 *   - each relaxed access says why no ordering is needed.
 */
#ifndef CUZK_BARRIER_H
#define CUZK_BARRIER_H

#include <stdatomic.h>
#include <stdint.h>

_Static_assert(ATOMIC_INT_LOCK_FREE == 2, "32-bit atomics must be lock-free for shared memory");
_Static_assert(ATOMIC_LLONG_LOCK_FREE == 2, "64-bit atomics must be lock-free for shared memory");

#define barrier_load_relaxed(p)     atomic_load_explicit((p), memory_order_relaxed)
#define barrier_load_acquire(p)     atomic_load_explicit((p), memory_order_acquire)
#define barrier_store_relaxed(p, v) atomic_store_explicit((p), (v), memory_order_relaxed)
#define barrier_store_release(p, v) atomic_store_explicit((p), (v), memory_order_release)

#define barrier_fetch_add_relaxed(p, v) atomic_fetch_add_explicit((p), (v), memory_order_relaxed)
#define barrier_fetch_sub_relaxed(p, v) atomic_fetch_sub_explicit((p), (v), memory_order_relaxed)
#define barrier_fetch_add_release(p, v) atomic_fetch_add_explicit((p), (v), memory_order_release)
#define barrier_fetch_add_seq_cst(p, v) atomic_fetch_add_explicit((p), (v), memory_order_seq_cst)
#define barrier_fetch_sub_release(p, v) atomic_fetch_sub_explicit((p), (v), memory_order_release)
#define barrier_fetch_add_acq_rel(p, v) atomic_fetch_add_explicit((p), (v), memory_order_acq_rel)
#define barrier_fetch_sub_acq_rel(p, v) atomic_fetch_sub_explicit((p), (v), memory_order_acq_rel)
#define barrier_exchange_relaxed(p, v)  atomic_exchange_explicit((p), (v), memory_order_relaxed)

/* Compare-and-swap. On failure *expp receives the current value. */
#define barrier_cas_weak_relaxed(p, expp, v) \
    atomic_compare_exchange_weak_explicit((p), (expp), (v), memory_order_relaxed, memory_order_relaxed)
#define barrier_cas_strong_relaxed(p, expp, v) \
    atomic_compare_exchange_strong_explicit((p), (expp), (v), memory_order_relaxed, memory_order_relaxed)
#define barrier_cas_acq_rel(p, expp, v) \
    atomic_compare_exchange_strong_explicit((p), (expp), (v), memory_order_acq_rel, memory_order_acquire)

#define barrier_fence_acquire() atomic_thread_fence(memory_order_acquire)
#define barrier_fence_release() atomic_thread_fence(memory_order_release)
#define barrier_fence_seq_cst() atomic_thread_fence(memory_order_seq_cst)

/* Spin-wait hint: lets the sibling hyperthread run and saves power while spinning. */
static inline void barrier_cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield" ::: "memory");
#else
    atomic_signal_fence(memory_order_seq_cst);
#endif
}

/* Cache line size assumed for shared-struct padding (x86-64, most aarch64). */
#define BARRIER_CACHE_LINE 64

#endif /* CUZK_BARRIER_H */
