/* test_stats.c — stats page: time accounting, histograms, seqlock snapshots. */
#include <check.h>
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "shm/stats.h"

#include "helper_test.h"

static struct stats_page *page_new(uint32_t slots)
{
    struct stats_page *pg = aligned_alloc(64, (stats_page_size(slots) + 63) / 64 * 64);

    ck_assert_int_eq(stats_page_init(pg, slots, 1, 1000), 0);
    ck_assert_int_eq(stats_page_check(pg, stats_page_size(slots)), 0);
    return pg;
}

TEST(test_stats_state_times_sum_to_wall_time, 1)
{
    struct stats_page *pg = page_new(2);
    struct stats_slot *s = stats_page_slot(pg, 1);
    struct stats_snapshot sn;
    uint64_t sum = 0;

    ck_assert_ptr_null(stats_page_slot(pg, 2));
    stats_slot_start(s, STATS_ROLE_GPUWORKER, 3, 77, 1000);
    ck_assert_int_eq(stats_slot_name_state(s, STATS_STAGE0, "msm"), 0);
    ck_assert_int_eq(stats_slot_name_state(s, STATS_IDLE, "x"), -EINVAL);
    ck_assert_int_eq(stats_slot_enter(s, STATS_BUSY, 1100), 0);
    ck_assert_int_eq(stats_slot_enter(s, STATS_STAGE0, 1350), 0);
    ck_assert_int_eq(stats_slot_enter(s, STATS_WAIT_INPUT, 1400), 0);
    ck_assert_int_eq(stats_slot_enter(s, STATS_BUSY, 1399), -EINVAL); /* time backwards */
    ck_assert_int_eq(stats_slot_read(s, &sn, 2000, 10), 0);
    ck_assert_uint_eq(sn.role, STATS_ROLE_GPUWORKER);
    ck_assert_uint_eq(sn.generation, 1);
    ck_assert_uint_eq(sn.state_ns[STATS_IDLE], 100);
    ck_assert_uint_eq(sn.state_ns[STATS_BUSY], 250);
    ck_assert_uint_eq(sn.state_ns[STATS_STAGE0], 50);
    ck_assert_uint_eq(sn.state_ns[STATS_WAIT_INPUT], 600); /* includes the open interval */
    for (int i = 0; i < STATS_MAX_STATES; i++) sum += sn.state_ns[i];
    ck_assert_uint_eq(sum, sn.wall_ns);
    ck_assert_str_eq(sn.state_names[STATS_STAGE0], "msm");
    ck_assert_str_eq(sn.state_names[STATS_WAIT_OUTPUT], "wait_output");
    /* A reader whose clock was read before the writer's last change (preempted in
     * between): the states still sum to the wall time, both as of the change. */
    ck_assert_int_eq(stats_slot_read(s, &sn, 1390, 10), 0);
    sum = 0;
    for (int i = 0; i < STATS_MAX_STATES; i++) sum += sn.state_ns[i];
    ck_assert_uint_eq(sn.wall_ns, 400);
    ck_assert_uint_eq(sum, sn.wall_ns);
    stats_slot_start(s, STATS_ROLE_GPUWORKER, 3, 78, 5000); /* restart */
    stats_slot_read(s, &sn, 5000, 10);
    ck_assert_uint_eq(sn.generation, 2);
    ck_assert_uint_eq(sn.state_ns[STATS_BUSY], 0);
    free(pg);
}
END_TEST

TEST(test_stats_histogram_percentiles, 1)
{
    struct stats_page *pg = page_new(1);
    struct stats_slot *s = stats_page_slot(pg, 0);
    struct stats_snapshot sn;

    stats_slot_start(s, STATS_ROLE_SYNTH, 0, 1, 0);
    ck_assert_uint_eq(stats_hist_bucket(0), 0);
    ck_assert_uint_eq(stats_hist_bucket(1), 1);
    ck_assert_uint_eq(stats_hist_bucket(1023), 10);
    ck_assert_uint_eq(stats_hist_bucket(1024), 11);
    ck_assert_uint_eq(stats_hist_bucket(UINT64_MAX), 63);
    for (int i = 0; i < 98; i++) stats_hist_record(s, 1, 1000); /* bucket 10: <= 1023 */
    stats_hist_record(s, 1, 1000000);                           /* bucket 20 */
    stats_hist_record(s, 1, 1000000000);                        /* bucket 30 */
    stats_counter_add(s, 2, 5);
    stats_counter_add(s, 2, 6);
    stats_slot_read(s, &sn, 10, 10);
    ck_assert_uint_eq(sn.hists[1].count, 100);
    ck_assert_uint_eq(stats_hist_percentile(&sn, 1, 0.5), 1023);
    ck_assert_uint_eq(stats_hist_percentile(&sn, 1, 0.99), (1u << 20) - 1);
    ck_assert_uint_eq(stats_hist_percentile(&sn, 1, 1.0), (1u << 30) - 1);
    ck_assert_uint_eq(stats_hist_percentile(&sn, 0, 0.5), 0); /* empty */
    ck_assert_uint_eq(sn.counters[2], 11);
    free(pg);
}
END_TEST

TEST(test_stats_page_check_refuses_other_version, 1)
{
    struct stats_page *pg = page_new(1);

    pg->version = 9;
    ck_assert_int_eq(stats_page_check(pg, stats_page_size(1)), -EPROTO);
    pg->version = STATS_PAGE_VERSION;
    ck_assert_int_eq(stats_page_check(pg, stats_page_size(1) - 1), -EINVAL);
    free(pg);
}
END_TEST

struct rw {
    struct stats_slot *s;
    _Atomic int stop;
    uint64_t reads, retries_exhausted;
    int bad;
};

static void *stats_writer(void *p)
{
    struct rw *a = p;
    uint64_t t = 0;

    /* Every update keeps the invariants the reader checks: counter 0 == counter 1
     * (two writes, one consistent pair) and state times summing to wall time. */
    while (!atomic_load(&a->stop)) {
        t += 7;
        stats_slot_enter(a->s, (uint32_t)(t % 5), t);
        stats_counter_add(a->s, 0, 1);
        stats_counter_add(a->s, 1, 1);
        stats_hist_record(a->s, 0, t);
    }
    return NULL;
}

TEST(test_stats_gauges_set_named_and_cleared_by_restart, 1)
{
    struct stats_page *pg = page_new(1);
    struct stats_slot *s = stats_page_slot(pg, 0);
    struct stats_snapshot sn;
    uint64_t v[3] = { 7, 0, 42 };

    stats_slot_start(s, STATS_ROLE_SUPERVISOR, 0, 1, 0);
    ck_assert_int_eq(stats_slot_name_gauge(s, 4, "ring_synth"), 0);
    ck_assert_int_eq(stats_slot_name_gauge(s, STATS_MAX_GAUGES, "x"), -EINVAL);
    stats_gauges_set(s, 4, v, 3);
    stats_gauges_set(s, STATS_MAX_GAUGES - 1, v, 3); /* clipped, not overflowing */
    ck_assert_int_eq(stats_slot_read(s, &sn, 10, 10), 0);
    ck_assert_str_eq(sn.gauge_names[4], "ring_synth");
    ck_assert_uint_eq(sn.gauges[4], 7);
    ck_assert_uint_eq(sn.gauges[6], 42);
    ck_assert_uint_eq(sn.gauges[STATS_MAX_GAUGES - 1], 7);
    stats_slot_start(s, STATS_ROLE_SUPERVISOR, 0, 2, 20);
    stats_slot_read(s, &sn, 20, 10);
    ck_assert_uint_eq(sn.gauges[4], 0);
    ck_assert_str_eq(sn.gauge_names[4], "");
    free(pg);
}
END_TEST

TEST(test_stats_reader_never_sees_torn_slot, 1)
{
    struct stats_page *pg = page_new(1);
    struct rw a = { .s = stats_page_slot(pg, 0) };
    struct stats_snapshot sn;
    pthread_t th;

    stats_slot_start(a.s, STATS_ROLE_FINALIZER, 0, 1, 0);
    ck_assert_int_eq(pthread_create(&th, NULL, stats_writer, &a), 0);
    for (int i = 0; i < 20000; i++) {
        uint64_t sum = 0;

        /* now = 0: no open interval is added, so the closed totals must sum to
         * since_ns - start_ns exactly. */
        if (stats_slot_read(a.s, &sn, 0, 1000)) {
            a.retries_exhausted++;
            continue;
        }
        for (int k = 0; k < STATS_MAX_STATES; k++) sum += sn.state_ns[k];
        if (sum != sn.since_ns - sn.start_ns) a.bad++;
        if (sn.counters[0] != sn.counters[1] && sn.counters[0] != sn.counters[1] + 1) a.bad++;
        a.reads++;
    }
    atomic_store(&a.stop, 1);
    pthread_join(th, NULL);
    ck_assert_int_eq(a.bad, 0);
    ck_assert_uint_gt(a.reads, 0);
    free(pg);
}
END_TEST

int main(void)
{
    return test_main("stats", NULL);
}
