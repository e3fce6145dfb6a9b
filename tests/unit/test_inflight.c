/* test_inflight.c — gpuworker/inflight.c (the asynchronous half of a backend) against what
 * the worker relies on, with a prove function that sleeps a known time per job (a
 * stand-in for a device, so the timings have known answers):
 *   - every submitted job comes back once, with its tag, release called exactly once,
 *     and the thread's result fields; submit refuses more than n outstanding;
 *   - two threads run two jobs at the same time: each job of that case waits in its thread
 *     until the other one is in flight too (a rendezvous, so serial threads would hang
 *     there and fail by the deadline; no assertion on elapsed time);
 *   - busy_total_ns is the union of the busy intervals: less than the sum of two
 *     overlapping jobs' intervals, never above the wall time, monotonic across
 *     results; with one thread it is the sum;
 *   - collect with a timeout returns 0 when nothing is done, and inflight_stop finishes
 *     what is queued. */
#include <check.h>
#include <errno.h>
#include <stdint.h>
#include <string.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <time.h>

#include "base/error.h"
#include "gpuworker/inflight.h"
#include "helper_test.h"
#include "base/os.h"

#define JOB_MS 60

static _Atomic int released[16];
static _Atomic int ran;
static _Atomic int in_flight;  /* jobs inside sleep_fn now */
static _Atomic int rendezvous; /* two_threads_overlap: each job waits for the other */
static _Atomic int met;        /* jobs that saw the other in flight */

static void rel(void *arg)
{
    atomic_fetch_add(&released[(intptr_t)arg], 1);
}

/* Sleeps JOB_MS, releases at the midpoint (as the CUDA backend's thread does after its copies). */
static void sleep_fn(void *ctx, unsigned thread_idx, const struct backend_input *in, struct backend_done *d)
{
    struct timespec half = { 0, JOB_MS / 2 * 1000000L };

    (void)ctx;
    atomic_fetch_add(&in_flight, 1);
    if (atomic_load(&rendezvous)) {
        /* Liveness bound only: 10 s for the other thread to start its job. */
        for (int i = 0; i < 10000 && atomic_load(&in_flight) < 2; i++) {
            struct timespec ms = { 0, 1000000L };

            nanosleep(&ms, NULL);
        }
        if (atomic_load(&in_flight) >= 2) atomic_fetch_add(&met, 1);
    }
    nanosleep(&half, NULL);
    in->release(in->release_arg);
    nanosleep(&half, NULL);
    atomic_fetch_add(&ran, 1);
    atomic_fetch_sub(&in_flight, 1);
    d->rc = 0;
    d->device_s = JOB_MS * 1e-3;
    d->raw.a[0] = (uint64_t)(intptr_t)in->release_arg + 100 * (thread_idx + 1);
}

static void input(struct backend_input *in, int id)
{
    memset(in, 0, sizeof(*in));
    in->release = rel;
    in->release_arg = (void *)(intptr_t)id;
}

/* In-flight threads of sleep_fn, none released yet. */
static struct inflight *start(unsigned n)
{
    struct inflight *l;
    char err[256];

    memset(released, 0, sizeof(released));
    ck_assert_msg(inflight_start(&l, n, sleep_fn, NULL, err, sizeof(err)) == 0, "%s", err);
    return l;
}

/* Submit job id (its release marks released[id]) with tag; inflight_submit's return. */
static int submit(struct inflight *l, int id, void *tag)
{
    struct backend_input in;
    char err[256];

    input(&in, id);
    return inflight_submit(l, &in, tag, err, sizeof(err));
}

static int collect_all(struct inflight *l, int n, struct backend_done *out)
{
    int got = 0;
    uint64_t t0 = os_now_ns();

    while (got < n && os_now_ns() - t0 < 30000000000ull) /* liveness bound only */
        got += inflight_collect(l, 200000000ull, &out[got]);
    return got;
}

TEST(two_threads_overlap, 1)
{
    struct inflight *l;
    struct backend_done d[4];
    uint64_t t0, wall;

    l = start(2);
    ck_assert_int_eq(inflight_collect(l, 1000000, &d[0]), 0); /* nothing yet: 1 ms timeout */
    atomic_store(&met, 0);
    atomic_store(&rendezvous, 1);
    t0 = os_now_ns();
    ck_assert_int_eq(submit(l, 1, (void *)0x11), 0);
    ck_assert_int_eq(submit(l, 2, (void *)0x22), 0);
    ck_assert_int_eq(submit(l, 3, (void *)0x33), -CUZK_E_INTERNAL);
    ck_assert_int_eq(collect_all(l, 2, d), 2);
    wall = os_now_ns() - t0;
    atomic_store(&rendezvous, 0);
    /* in parallel: both jobs were in their threads at the same moment */
    ck_assert_int_eq(atomic_load(&met), 2);
    ck_assert_int_eq(released[1], 1);
    ck_assert_int_eq(released[2], 1);
    ck_assert_int_eq(released[3], 0);
    ck_assert(d[0].tag != d[1].tag);
    ck_assert(d[0].tag == (void *)0x11 || d[0].tag == (void *)0x22);
    ck_assert(d[1].tag == (void *)0x11 || d[1].tag == (void *)0x22);
    /* the union: at least one job, less than the two intervals added (they
     * overlapped), at most the wall, monotonic */
    ck_assert_uint_ge(d[1].busy_total_ns, JOB_MS * 1000000ull);
    ck_assert_uint_lt(d[1].busy_total_ns, (d[0].end_ns - d[0].begin_ns) + (d[1].end_ns - d[1].begin_ns));
    ck_assert_uint_le(d[1].busy_total_ns, wall);
    ck_assert_uint_le(d[0].busy_total_ns, d[1].busy_total_ns);
    ck_assert_uint_le(d[0].begin_ns, d[0].end_ns);
    ck_assert(d[0].raw.a[0] % 100 == 1 || d[0].raw.a[0] % 100 == 2);
    /* room again after the collects */
    ck_assert_int_eq(submit(l, 4, (void *)0x44), 0);
    inflight_stop(l); /* finishes the queued job before joining */
    ck_assert_int_eq(released[4], 1);
}
END_TEST

TEST(one_thread_serial, 1)
{
    struct inflight *l;
    struct backend_done d[2];
    uint64_t t0, wall;

    l = start(1);
    t0 = os_now_ns();
    ck_assert_int_eq(submit(l, 5, (void *)5), 0);
    ck_assert_int_eq(collect_all(l, 1, d), 1);
    ck_assert_int_eq(submit(l, 6, (void *)6), 0);
    ck_assert_int_eq(collect_all(l, 1, d + 1), 1);
    wall = os_now_ns() - t0;
    ck_assert(d[0].tag == (void *)5 && d[1].tag == (void *)6);
    /* one thread: the union is the sum of two jobs, and still within the wall */
    ck_assert_uint_ge(d[1].busy_total_ns, 2 * JOB_MS * 1000000ull);
    ck_assert_uint_le(d[1].busy_total_ns, wall);
    ck_assert_uint_ge(d[1].busy_total_ns - d[0].busy_total_ns, JOB_MS * 1000000ull);
    inflight_stop(l);
    ck_assert_int_eq(released[5] + released[6], 2);
}
END_TEST

TEST(bad_counts, 1)
{
    struct inflight *l = (struct inflight *)1;
    char err[256];

    ck_assert_int_eq(inflight_start(&l, 0, sleep_fn, NULL, err, sizeof(err)), -EINVAL);
    ck_assert_ptr_null(l);
    ck_assert_int_eq(inflight_start(&l, INFLIGHT_MAX + 1, sleep_fn, NULL, err, sizeof(err)), -EINVAL);
    inflight_stop(NULL);
}
END_TEST

int main(void)
{
    const struct test_opts o = { .timeout = 30 };

    return test_main("inflight", &o);
}
