/* test_ring.c — behaviours of the shared MPMC ring (shm/ring.c). */
#include <check.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "shm/futex.h"
#include "shm/ring.h"

#include "helper_test.h"
#include "base/os.h"

/* A ring in an anonymous shared mapping, so forked children share it. */
static struct ring *ring_new(uint32_t cap, uint64_t start)
{
    size_t sz = ring_size_bytes(cap);
    void *m;

    ck_assert_uint_gt(sz, 0);
    m = mmap(NULL, sz, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    ck_assert_ptr_ne(m, MAP_FAILED);
    ck_assert_int_eq(ring_init_at(m, cap, start), 0);
    ck_assert_int_eq(ring_attach(m, sz), 0);
    return m;
}

static void ring_free(struct ring *r)
{
    munmap(r, ring_size_bytes(r->capacity));
}

static int under_tsan(void)
{
    const char *s = getenv("CUZK_SANITIZER");

    return s && !strcmp(s, "tsan");
}

/* Fill to capacity, check full, drain in FIFO order, check empty; repeat laps times. */
static void fill_drain(struct ring *r, unsigned laps)
{
    uint32_t v, next = 1000;

    for (unsigned lap = 0; lap < laps; lap++) {
        for (uint32_t i = 0; i < r->capacity; i++) ck_assert_int_eq(ring_try_push(r, next + i), 0);
        ck_assert_uint_eq(ring_count(r), r->capacity);
        ck_assert_int_eq(ring_try_push(r, 7), -EAGAIN);
        for (uint32_t i = 0; i < r->capacity; i++) {
            ck_assert_int_eq(ring_try_pop(r, &v), 0);
            ck_assert_uint_eq(v, next + i);
        }
        ck_assert_int_eq(ring_try_pop(r, &v), -EAGAIN);
        ck_assert_uint_eq(ring_count(r), 0);
        next += r->capacity;
    }
}

TEST(test_ring_rejects_bad_capacity, 1)
{
    static _Alignas(64) unsigned char buf[4096];

    /* Only powers of two up to RING_CAPACITY_MAX. */
    ck_assert_uint_eq(ring_size_bytes(0), 0);
    ck_assert_uint_eq(ring_size_bytes(3), 0);
    ck_assert_uint_eq(ring_size_bytes(RING_CAPACITY_MAX * 2u), 0);
    ck_assert_int_eq(ring_init((struct ring *)buf, 6), -EINVAL);
    /* Misaligned memory is refused, not silently false-shared. */
    ck_assert_int_eq(ring_init((struct ring *)(buf + 8), 4), -EINVAL);
    /* attach refuses garbage and a size too small for the capacity. */
    memset(buf, 0xab, sizeof(buf));
    ck_assert_int_eq(ring_attach((struct ring *)buf, sizeof(buf)), -EINVAL);
    ck_assert_int_eq(ring_init((struct ring *)buf, 64), 0);
    ck_assert_int_eq(ring_attach((struct ring *)buf, ring_size_bytes(64) - 1), -EINVAL);
}
END_TEST

TEST(test_ring_full_and_empty_report_eagain, 1)
{
    struct ring *r = ring_new(8, 0);
    uint32_t v = 99;

    ck_assert_int_eq(ring_try_pop(r, &v), -EAGAIN);
    ck_assert_uint_eq(v, 99); /* untouched on failure */
    fill_drain(r, 3);
    ring_free(r);
}
END_TEST

TEST(test_ring_capacity_one_alternates, 1)
{
    struct ring *r = ring_new(1, 0);

    /* With Vyukov's p/p+1 encoding capacity 1 would accept a second push. */
    fill_drain(r, 5);
    ring_free(r);
}
END_TEST

TEST(test_ring_capacity_two_interleaves, 1)
{
    struct ring *r = ring_new(2, 0);
    uint32_t v;

    fill_drain(r, 4);
    /* Interleaved: keep one element in flight while moving around the cells. */
    ck_assert_int_eq(ring_try_push(r, 1), 0);
    for (uint32_t i = 2; i < 20; i++) {
        ck_assert_int_eq(ring_try_push(r, i), 0);
        ck_assert_int_eq(ring_try_push(r, 0), -EAGAIN);
        ck_assert_int_eq(ring_try_pop(r, &v), 0);
        ck_assert_uint_eq(v, i - 1);
    }
    ck_assert_int_eq(ring_try_pop(r, &v), 0);
    ck_assert_uint_eq(v, 19);
    ring_free(r);
}
END_TEST

TEST(test_ring_wraps_past_u32_max, 1)
{
    /* Counters start 5 below 2^32: a 32-bit truncation anywhere breaks FIFO order or
     * the full/empty checks within the first lap. */
    struct ring *r = ring_new(4, UINT32_MAX - 5u);

    fill_drain(r, 8);
    ck_assert_uint_gt(r->head, (uint64_t)UINT32_MAX);
    ring_free(r);
}
END_TEST

TEST(test_ring_wraps_past_u64_max, 1)
{
    struct ring *r = ring_new(4, UINT64_MAX - 5u);
    uint32_t v;

    fill_drain(r, 8);
    /* head wrapped to a small number; the ring still works with items in flight
     * across the wrap. */
    ck_assert_uint_lt(r->head, 100);
    ck_assert_int_eq(ring_try_push(r, 5), 0);
    ck_assert_uint_eq(ring_count(r), 1);
    ck_assert_int_eq(ring_try_pop(r, &v), 0);
    ck_assert_uint_eq(v, 5);
    ring_free(r);
}
END_TEST

TEST(test_ring_pop_timeout_expires, 1)
{
    struct ring *r = ring_new(4, 0);
    uint32_t v;
    uint64_t t0 = os_now_ns(), dt;

    ck_assert_int_eq(ring_pop_timeout(r, &v, 50 * 1000000LL), -ETIMEDOUT);
    dt = os_now_ns() - t0;
    /* Not a timing assertion: never early, and not stuck (generous upper bound). */
    ck_assert_uint_ge(dt, 50 * 1000000ULL);
    ck_assert_uint_lt(dt, 5000 * 1000000ULL);
    ck_assert_int_eq(ring_pop_timeout(r, &v, 0), -EAGAIN);
    ck_assert_uint_eq(r->not_empty.waiters, 0);
    ring_free(r);
}
END_TEST

TEST(test_ring_push_timeout_expires_when_full, 1)
{
    struct ring *r = ring_new(2, 0);
    uint64_t t0, dt;

    ck_assert_int_eq(ring_push_timeout(r, 1, 0), 0);
    ck_assert_int_eq(ring_push_timeout(r, 2, 0), 0);
    t0 = os_now_ns();
    ck_assert_int_eq(ring_push_timeout(r, 3, 30 * 1000000LL), -ETIMEDOUT);
    dt = os_now_ns() - t0;
    ck_assert_uint_ge(dt, 30 * 1000000ULL);
    ck_assert_uint_lt(dt, 5000 * 1000000ULL);
    ck_assert_uint_eq(ring_count(r), 2);
    ring_free(r);
}
END_TEST

struct sleeper_arg {
    struct ring *r;
    uint32_t v;
    int rc;
};

static void *pusher_after_delay(void *p)
{
    struct sleeper_arg *a = p;
    struct timespec ts = { 0, 30 * 1000000L };

    nanosleep(&ts, NULL);
    a->rc = ring_push_timeout(a->r, a->v, -1);
    return NULL;
}

TEST(test_ring_sleeping_pop_is_woken_by_push_thread, 1)
{
    struct ring *r = ring_new(4, 0);
    struct sleeper_arg a = { r, 4242, -1 };
    pthread_t t;
    uint32_t v = 0;

    ck_assert_int_eq(pthread_create(&t, NULL, pusher_after_delay, &a), 0);
    /* Spin 0: goes straight to the futex; the 10 s timeout only guards a hang. */
    ck_assert_int_eq(ring_pop_wait(r, &v, 10000 * 1000000LL, 0), 0);
    ck_assert_uint_eq(v, 4242);
    pthread_join(t, NULL);
    ck_assert_int_eq(a.rc, 0);
    ring_free(r);
}
END_TEST

TEST(test_ring_sleeping_push_is_woken_by_pop_in_other_process, 1)
{
    struct ring *r = ring_new(1, 0);
    uint32_t v;
    pid_t pid;
    int st;

    if (under_tsan()) return; /* the thread variant above covers TSan */
    ck_assert_int_eq(ring_try_push(r, 1), 0);
    pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        /* Blocks: the ring is full until the parent pops. */
        _exit(ring_push_wait(r, 2, 10000 * 1000000LL, 0) == 0 ? 0 : 1);
    }
    usleep(30000);
    ck_assert_int_eq(ring_pop_timeout(r, &v, -1), 0);
    ck_assert_uint_eq(v, 1);
    ck_assert_int_eq(waitpid(pid, &st, 0), pid);
    ck_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    ck_assert_int_eq(ring_pop_timeout(r, &v, 0), 0);
    ck_assert_uint_eq(v, 2);
    ring_free(r);
}
END_TEST

/* ---- MPMC with threads (the variant ThreadSanitizer checks) ---- */

#define NPROD 3
#define NCONS 3

struct mpmc {
    struct ring *r;
    uint32_t per_producer;
    _Atomic uint32_t *seen; /* per item: times delivered */
    _Atomic uint64_t sum;
    _Atomic uint32_t consumed;
    uint32_t total;
    int order_errors[NCONS];
};

struct mpmc_thr {
    struct mpmc *m;
    uint32_t id;
};

static void *mpmc_producer(void *p)
{
    struct mpmc_thr *t = p;

    for (uint32_t s = 0; s < t->m->per_producer; s++)
        if (ring_push_timeout(t->m->r, t->id << 24 | s, 10000 * 1000000LL)) abort();
    return NULL;
}

static void *mpmc_consumer(void *p)
{
    struct mpmc_thr *t = p;
    struct mpmc *m = t->m;
    int64_t last[NPROD];
    uint32_t v;

    for (int i = 0; i < NPROD; i++) last[i] = -1;
    while (atomic_load(&m->consumed) < m->total) {
        if (ring_pop_timeout(m->r, &v, 2 * 1000000LL)) continue;
        uint32_t prod = v >> 24, seq = v & 0xffffff;

        /* Per (producer, consumer) pair FIFO holds in this ring: a producer's pushes
         * take increasing positions and a consumer's pops take increasing ones. */
        if ((int64_t)seq <= last[prod]) m->order_errors[t->id]++;
        last[prod] = seq;
        atomic_fetch_add(&m->seen[prod * m->per_producer + seq], 1);
        atomic_fetch_add(&m->sum, v);
        atomic_fetch_add(&m->consumed, 1);
    }
    return NULL;
}

static void mpmc_threads(uint32_t cap, uint32_t per_producer)
{
    struct mpmc m = { 0 };
    struct mpmc_thr pt[NPROD], ct[NCONS];
    pthread_t pth[NPROD], cth[NCONS];
    uint64_t want = 0;

    m.r = ring_new(cap, UINT32_MAX - 100u);
    m.per_producer = per_producer;
    m.total = NPROD * per_producer;
    m.seen = calloc(m.total, sizeof(*m.seen));
    for (uint32_t i = 0; i < NCONS; i++) {
        ct[i] = (struct mpmc_thr){ &m, i };
        ck_assert_int_eq(pthread_create(&cth[i], NULL, mpmc_consumer, &ct[i]), 0);
    }
    for (uint32_t i = 0; i < NPROD; i++) {
        pt[i] = (struct mpmc_thr){ &m, i };
        ck_assert_int_eq(pthread_create(&pth[i], NULL, mpmc_producer, &pt[i]), 0);
    }
    for (int i = 0; i < NPROD; i++) pthread_join(pth[i], NULL);
    for (int i = 0; i < NCONS; i++) pthread_join(cth[i], NULL);
    for (uint32_t p = 0; p < NPROD; p++)
        for (uint32_t s = 0; s < per_producer; s++) {
            ck_assert_msg(m.seen[p * per_producer + s] == 1, "item %u/%u seen %u times", p, s,
                          m.seen[p * per_producer + s]);
            want += p << 24 | s;
        }
    ck_assert_uint_eq(m.sum, want);
    for (int i = 0; i < NCONS; i++) ck_assert_int_eq(m.order_errors[i], 0);
    ck_assert_uint_eq(ring_count(m.r), 0);
    free(m.seen);
    ring_free(m.r);
}

TEST(test_ring_mpmc_threads_deliver_each_item_once, 1)
{
    mpmc_threads(64, under_tsan() ? 20000 : 200000);
}
END_TEST

TEST(test_ring_mpmc_threads_capacity_two_under_contention, 1)
{
    /* Small capacity: producers and consumers sleep and wake constantly. */
    mpmc_threads(2, under_tsan() ? 5000 : 50000);
}
END_TEST

int main(void)
{
    const struct test_opts o = { .timeout = 60 };

    return test_main("ring", &o);
}
