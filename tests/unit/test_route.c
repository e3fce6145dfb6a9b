/* test_route.c — the NUMA routing decision (route.h): local worker first, the
 * cross-node fallback only for a node without a live synth, nothing for a synth whose
 * node has no worker while every worker's node has a synth. */
#include <check.h>
#include <stdlib.h>

#include "shm/route.h"

#include "helper_test.h"

/* workers on nodes wn[0..nw), synths on sn[0..ns), all alive, rings empty */
static struct route_view view(uint32_t nw, const int *wn, uint32_t ns, const int *sn)
{
    struct route_view v = { 0 };

    v.n_workers = nw;
    for (uint32_t i = 0; i < nw; i++) v.worker_node[i] = wn[i];
    v.n_synth = ns;
    for (uint32_t k = 0; k < ns; k++) {
        v.synth_node[k] = sn[k];
        v.synth_alive[k] = 1;
    }
    return v;
}

TEST(test_route_local_worker_of_each_node, 1)
{
    static const int wn[] = { 0, 1 }, sn[] = { 0, 1 };
    struct route_view v = view(2, wn, 2, sn);
    int cross = -1;

    ck_assert_int_eq(route_pick_worker(&v, 0, &cross), 0);
    ck_assert_int_eq(cross, 0);
    ck_assert_int_eq(route_pick_worker(&v, 1, &cross), 1);
    ck_assert_int_eq(cross, 0);
    /* however deep the local ring, never the idle worker of the other node */
    v.worker_depth[0] = 50;
    ck_assert_int_eq(route_pick_worker(&v, 0, &cross), 0);
    ck_assert_int_eq(cross, 0);
}
END_TEST

TEST(test_route_least_loaded_on_the_node, 1)
{
    /* dual socket, 8 GPUs: 0-3 on node 0, 4-7 on node 1 */
    static const int wn[] = { 0, 0, 0, 0, 1, 1, 1, 1 }, sn[] = { 0, 1 };
    struct route_view v = view(8, wn, 2, sn);
    static const uint32_t depth[] = { 3, 1, 2, 1, 0, 4, 4, 4 };

    for (int i = 0; i < 8; i++) v.worker_depth[i] = depth[i];
    ck_assert_int_eq(route_pick_worker(&v, 0, NULL), 1); /* tie 1/3: lower number */
    ck_assert_int_eq(route_pick_worker(&v, 1, NULL), 4);
    ck_assert_int_eq(route_worker_on_node(&v, 1), 4);
    ck_assert_int_eq(route_worker_on_node(&v, 2), -1);
}
END_TEST

TEST(test_route_fallback_only_when_the_node_has_no_live_synth, 1)
{
    static const int wn[] = { 0, 1 }, sn[] = { 0, 1 };
    struct route_view v = view(2, wn, 2, sn);
    int cross = 0;

    v.synth_alive[1] = 0; /* synth of node 1 dead (being restarted) */
    /* synth 0 feeds the stranded worker when it is no busier than its own ... */
    ck_assert_int_eq(route_pick_worker(&v, 0, &cross), 1);
    ck_assert_int_eq(cross, 1);
    v.worker_depth[1] = 2;
    v.worker_depth[0] = 1;
    ck_assert_int_eq(route_pick_worker(&v, 0, &cross), 0);
    ck_assert_int_eq(cross, 0);
    /* ... and never while node 1's synth lives */
    v.synth_alive[1] = 1;
    v.worker_depth[1] = 0;
    ck_assert_int_eq(route_pick_worker(&v, 0, &cross), 0);
    ck_assert_int_eq(cross, 0);
    /* a synth on a node without workers (3 synths, workers on nodes 0 and 1) serves
     * only as the fallback */
    {
        static const int sn3[] = { 0, 1, 2 };
        struct route_view w = view(2, wn, 3, sn3);

        ck_assert_int_eq(route_pick_worker(&w, 2, &cross), -1);
        ck_assert_int_eq(route_synth_serves(&w, 2), 0);
        w.synth_alive[1] = 0;
        ck_assert_int_eq(route_pick_worker(&w, 2, &cross), 1);
        ck_assert_int_eq(cross, 1);
        ck_assert_int_eq(route_synth_serves(&w, 2), 1);
        w.synth_alive[1] = 1;
        ck_assert_int_eq(route_synth_serves(&w, 2), 0);
    }
}
END_TEST

TEST(test_route_node_without_synth_in_the_plan, 1)
{
    /* 1 worker on node 1, one synth on node 0 only: everything crosses, counted */
    static const int wn[] = { 1 }, sn[] = { 0 };
    struct route_view v = view(1, wn, 1, sn);
    int cross = 0;

    ck_assert_int_eq(route_pick_worker(&v, 0, &cross), 0);
    ck_assert_int_eq(cross, 1);
}
END_TEST

TEST(test_route_one_node_and_unknown_nodes_are_local, 1)
{
    static const int wn[] = { 0, 0 }, sn[] = { 0 }, un[] = { -1, -1 }, us[] = { -1 };
    struct route_view v = view(2, wn, 1, sn);
    int cross = 1;

    v.worker_depth[0] = 2;
    ck_assert_int_eq(route_pick_worker(&v, 0, &cross), 1);
    ck_assert_int_eq(cross, 0);
    v = view(2, un, 1, us);
    ck_assert_int_eq(route_pick_worker(&v, 0, &cross), 0);
    ck_assert_int_eq(cross, 0);
    /* a synth index out of range serves nobody */
    ck_assert_int_eq(route_pick_worker(&v, 1, &cross), -1);
}
END_TEST

int main(void)
{
    return test_main("route", NULL);
}
