/* test_pool.c — buffer pool: allocation, ownership, reclaim, per-node counts, slab. */
#include <check.h>
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "shm/futex.h"
#include "shm/shmlayout.h"

#include "helper_shm.h"
#include "helper_test.h"
#include "base/os.h"

static char inst[64];
static struct shmlayout_data d;

static void setup_n(uint32_t bufs, uint32_t nodes)
{
    struct shmlayout_config cfg = test_shm_config(8, 2, 8, bufs, 8192);

    cfg.n_nodes = nodes;
    for (int i = 0; i < 4; i++) cfg.numa_node[i] = i;
    test_shm_create(&d, inst, sizeof(inst), "p", &cfg);
}

static void teardown(void)
{
    test_shm_destroy(&d, inst);
}

TEST(test_pool_alloc_until_empty_then_free, 1)
{
    uint32_t idx[4], x, used, fr;
    uint32_t me = (uint32_t)getpid();

    setup_n(4, 1);
    for (int i = 0; i < 4; i++) {
        ck_assert_int_eq(pool_buf_alloc(&d.pool, -1, me, 0, &idx[i]), 0);
        ck_assert_uint_eq(pool_buf_owner(&d.pool, idx[i]), me);
        memset(pool_buf_ptr(&d.pool, idx[i]), i, 8192); /* whole buffer is ours */
    }
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < i; j++) ck_assert_uint_ne(idx[i], idx[j]);
    ck_assert_int_eq(pool_buf_alloc(&d.pool, -1, me, 0, &x), -EAGAIN);
    ck_assert_int_eq(pool_node_counts(&d.pool, -1, &used, &fr), 0);
    ck_assert_uint_eq(used, 4);
    ck_assert_uint_eq(fr, 0);
    /* Only the owner frees. */
    ck_assert_int_eq(pool_buf_free(&d.pool, idx[0], me + 1), -EPERM);
    ck_assert_int_eq(pool_buf_free(&d.pool, idx[0], me), 0);
    ck_assert_int_eq(pool_buf_free(&d.pool, idx[0], me), -EPERM);
    ck_assert_int_eq(pool_buf_alloc(&d.pool, -1, me, 0, &x), 0);
    ck_assert_uint_eq(x, idx[0]);
    ck_assert_ptr_null(pool_buf_ptr(&d.pool, 4));
    ck_assert_uint_eq(pool_buf_owner(&d.pool, 99), POOL_NONE);
}
END_TEST

TEST(test_pool_alloc_times_out_then_wakes_on_free, 1)
{
    uint32_t a, b, x;
    uint64_t t0;
    pid_t pid;
    int st;

    setup_n(2, 1);
    ck_assert_int_eq(pool_buf_alloc(&d.pool, -1, 100, 0, &a), 0);
    ck_assert_int_eq(pool_buf_alloc(&d.pool, -1, 100, 0, &b), 0);
    t0 = os_now_ns();
    ck_assert_int_eq(pool_buf_alloc(&d.pool, -1, 101, 20000000, &x), -ETIMEDOUT);
    ck_assert_uint_ge(os_now_ns() - t0, 20000000);
    pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        usleep(20000);
        _exit(pool_buf_free(&d.pool, b, 100) ? 1 : 0);
    }
    ck_assert_int_eq(pool_buf_alloc(&d.pool, -1, 101, 10000000000LL, &x), 0);
    ck_assert_uint_eq(x, b);
    waitpid(pid, &st, 0);
    ck_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0);
}
END_TEST

TEST(test_pool_reclaims_dead_process_buffers, 1)
{
    uint32_t used, fr, x;
    pid_t pid;
    int st;

    setup_n(5, 1);
    ck_assert_int_eq(pool_buf_alloc(&d.pool, -1, (uint32_t)getpid(), 0, &x), 0);
    pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        uint32_t i;

        for (int k = 0; k < 3; k++)
            if (pool_buf_alloc(&d.pool, -1, (uint32_t)getpid(), 0, &i)) _exit(1);
        /* hand one to a partition: it must survive our death */
        if (pool_buf_transfer(&d.pool, i, (uint32_t)getpid(), pool_owner_part(3))) _exit(1);
        raise(SIGKILL);
    }
    waitpid(pid, &st, 0);
    ck_assert(WIFSIGNALED(st));
    pool_node_counts(&d.pool, -1, &used, &fr);
    ck_assert_uint_eq(used, 4);
    ck_assert_int_eq(pool_reclaim_pid(&d.pool, pid), 2);
    ck_assert_int_eq(pool_reclaim_pid(&d.pool, pid), 0);
    pool_node_counts(&d.pool, -1, &used, &fr);
    ck_assert_uint_eq(used, 2); /* ours + the partition's */
    ck_assert_uint_eq(fr, 3);
}
END_TEST

TEST(test_pool_counts_per_node_and_prefers_node, 1)
{
    uint32_t used, fr, x;

    setup_n(7, 2);
    ck_assert_uint_eq(d.pool.hdr->nodes[0].count, 4);
    ck_assert_uint_eq(d.pool.hdr->nodes[1].count, 3);
    ck_assert_int_eq(pool_buf_alloc(&d.pool, 1, 50, 0, &x), 0);
    ck_assert_uint_ge(x, 4); /* from node 1's share */
    ck_assert_int_eq(pool_node_counts(&d.pool, 1, &used, &fr), 0);
    ck_assert_uint_eq(used, 1);
    ck_assert_uint_eq(fr, 2);
    ck_assert_int_eq(pool_node_counts(&d.pool, 0, &used, &fr), 0);
    ck_assert_uint_eq(used, 0);
    ck_assert_uint_eq(fr, 4);
    ck_assert_int_eq(pool_node_counts(&d.pool, 5, &used, &fr), -EINVAL);
    /* Node 1 exhausted: falls back to node 0. */
    for (int i = 0; i < 2; i++) ck_assert_int_eq(pool_buf_alloc(&d.pool, 1, 50, 0, &x), 0);
    ck_assert_int_eq(pool_buf_alloc(&d.pool, 1, 50, 0, &x), 0);
    ck_assert_uint_lt(x, 4);
}
END_TEST

TEST(test_pool_node_only_alloc_waits_for_its_node, 1)
{
    uint32_t x, mine[3];

    setup_n(7, 2); /* node 0: buffers 0-3, node 1: 4-6 */
    ck_assert_int_eq(pool_buf_node(&d.pool, 0), 0);
    ck_assert_int_eq(pool_buf_node(&d.pool, 3), 0);
    ck_assert_int_eq(pool_buf_node(&d.pool, 4), 1);
    ck_assert_int_eq(pool_buf_node(&d.pool, 6), 1);
    ck_assert_int_eq(pool_buf_node(&d.pool, 7), -1);
    for (int i = 0; i < 3; i++) {
        ck_assert_int_eq(pool_buf_alloc_node(&d.pool, 1, 50, 0, &mine[i]), 0);
        ck_assert_int_eq(pool_buf_node(&d.pool, mine[i]), 1);
    }
    /* Node 1 exhausted: never another node's, though node 0 has four free. */
    ck_assert_int_eq(pool_buf_alloc_node(&d.pool, 1, 50, 0, &x), -EAGAIN);
    ck_assert_int_eq(pool_buf_alloc_node(&d.pool, 1, 50, 20000000, &x), -ETIMEDOUT);
    ck_assert_int_eq(pool_buf_alloc_node(&d.pool, 0, 50, 0, &x), 0);
    ck_assert_int_eq(pool_buf_node(&d.pool, x), 0);
    /* A node without a share is refused, not served from another's. */
    ck_assert_int_eq(pool_buf_alloc_node(&d.pool, 2, 50, 0, &x), -ENOENT);
    ck_assert_int_eq(pool_buf_free(&d.pool, mine[1], 50), 0);
    ck_assert_int_eq(pool_buf_alloc_node(&d.pool, 1, 50, 0, &x), 0);
    ck_assert_uint_eq(x, mine[1]);
}
END_TEST

TEST(test_pool_one_share_serves_every_node, 1)
{
    uint32_t x;

    setup_n(2, 1);
    ck_assert_int_eq(pool_buf_alloc_node(&d.pool, 3, 50, 0, &x), 0);
    ck_assert_int_eq(pool_buf_alloc_node(&d.pool, -1, 50, 0, &x), 0);
    ck_assert_int_eq(pool_buf_alloc_node(&d.pool, 0, 50, 0, &x), -EAGAIN);
}
END_TEST

TEST(test_pool_slab_setup_no_mbind_flag, 1)
{
    struct pool_slab_report rep;

    setup_n(4, 2);
    ck_assert_int_eq(pool_slab_setup(&d.pool, POOL_SLAB_NO_MLOCK | POOL_SLAB_NO_MBIND, &rep, NULL), 0);
    ck_assert_int_eq(rep.numa_bound, 0);
    ck_assert_ptr_nonnull(strstr(rep.reason, "not this machine's"));
}
END_TEST

TEST(test_pool_slab_setup_reports_what_it_did, 1)
{
    struct pool_slab_report rep;

    setup_n(4, 1);
    ck_assert_int_eq(pool_slab_setup(&d.pool, 0, &rep, stderr), 0);
    /* Each capability either worked or has a reason; the pool works regardless. */
    if (!rep.huge) ck_assert_ptr_nonnull(strstr(rep.reason, "huge pages"));
    if (!rep.locked) ck_assert_ptr_nonnull(strstr(rep.reason, "not locked"));
    if (!rep.numa_bound) ck_assert_ptr_nonnull(strstr(rep.reason, "NUMA"));
    fprintf(stderr, "slab: locked=%d huge=%d numa=%d (%s)\n", rep.locked, rep.huge, rep.numa_bound,
            rep.reason);
    memset(pool_buf_ptr(&d.pool, 3), 1, 8192);
}
END_TEST

/* Threads of one process share 2 buffers: each takes one, fills it with its own id,
 * checks the bytes are still its own, gives it back; under TSan (make tsan) this is
 * the pool's ordering check (A1/R1 in pool.c: the previous owner's writes happen
 * before the next owner's), which the fork tests above cannot give it. */
#define SHARE_THREADS 4
#define SHARE_ROUNDS  2000
static atomic_int share_bad;

static void *share_main(void *arg)
{
    uint32_t me = (uint32_t)(uintptr_t)arg, idx;

    for (int r = 0; r < SHARE_ROUNDS; r++) {
        /* long timeout: only a lost wake-up would reach it (then share_bad) */
        if (pool_buf_alloc(&d.pool, -1, me, 60000000000LL, &idx)) {
            atomic_fetch_add(&share_bad, 1);
            return NULL;
        }
        unsigned char *b = pool_buf_ptr(&d.pool, idx);
        memset(b, (int)(me & 0xff), 256);
        for (int i = 0; i < 256; i++)
            if (b[i] != (me & 0xff)) atomic_fetch_add(&share_bad, 1);
        if (pool_buf_free(&d.pool, idx, me)) atomic_fetch_add(&share_bad, 1);
    }
    return NULL;
}

TEST(test_pool_threads_share_buffers_exclusively, 1)
{
    pthread_t th[SHARE_THREADS];

    setup_n(2, 1);
    atomic_store(&share_bad, 0);
    for (uintptr_t t = 0; t < SHARE_THREADS; t++)
        ck_assert_int_eq(pthread_create(&th[t], NULL, share_main, (void *)(100 + t)), 0);
    for (int t = 0; t < SHARE_THREADS; t++) pthread_join(th[t], NULL);
    ck_assert_int_eq(atomic_load(&share_bad), 0);
}
END_TEST

int main(void)
{
    const struct test_opts o = { .teardown = teardown };

    return test_main("pool", &o);
}
