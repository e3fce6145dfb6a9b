/* test_shm_stress.c — cross-process stress: a million indices through one ring in a
 * shared segment, and the same flow with consumers SIGKILLed and recovered through
 * the job table and the buffer pool. */
#include <check.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "shm/futex.h"
#include "shm/shmlayout.h"

#include "helper_shm.h"
#include "helper_test.h"
#include "base/os.h"

static char inst[64];
static struct shmlayout_data d;

static const char *sanitizer(void)
{
    const char *s = getenv("CUZK_SANITIZER");

    return s ? s : "";
}

static void *shared_alloc(size_t n)
{
    void *m = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);

    ck_assert_ptr_ne(m, MAP_FAILED);
    return m;
}

static void teardown(void)
{
    test_shm_destroy(&d, inst);
}

/* ---- a million indices, exactly once ---- */

#define NPROD 3
#define NCONS 3
#define STOP  UINT32_MAX

struct tally {
    _Atomic uint32_t seen[1]; /* bitmap, (NPROD << 20) bits, sized at mmap */
};

struct result {
    uint64_t count, sum;
    uint32_t dups, order_errors;
};

static int consume(struct ring *r, _Atomic uint32_t *seen, struct result *res)
{
    int64_t last[NPROD] = { -1, -1, -1 };
    uint32_t v;

    for (;;) {
        if (ring_pop_timeout(r, &v, 10000 * 1000000LL))
            return 2; /* 10 s without an item: lost items or lost wake-up */
        if (v == STOP) return 0;
        uint32_t prod = v >> 20, seq = v & 0xfffff;
        uint32_t bit = 1u << (v & 31);

        if (prod >= NPROD) return 3;
        /* MPMC: order holds only per (producer, consumer) pair. */
        if ((int64_t)seq <= last[prod]) res->order_errors++;
        last[prod] = seq;
        if (atomic_fetch_or(&seen[v >> 5], bit) & bit) res->dups++;
        res->count++;
        res->sum += v;
    }
}

TEST(test_stress_processes_move_a_million_indices_exactly_once, 1)
{
    const struct shmlayout_config cfg = test_shm_config(256, 1, 1, 1, 4096);
    uint32_t per = !strcmp(sanitizer(), "asan") ? 100000 : 333334; /* 3 x 333334 > 10^6 */
    size_t words = ((size_t)NPROD << 20) / 32;
    _Atomic uint32_t *seen;
    struct result *res;
    pid_t prod[NPROD], cons[NCONS];
    uint64_t want_sum = 0, got = 0, sum = 0;
    int st;

    if (!strcmp(sanitizer(), "tsan")) return; /* TSan and fork: test_ring's thread variant covers this path */
    test_shm_create(&d, inst, sizeof(inst), "s", &cfg);
    seen = shared_alloc(words * 4);
    res = shared_alloc(sizeof(*res) * NCONS);
    for (int c = 0; c < NCONS; c++) {
        cons[c] = fork();
        ck_assert_int_ge(cons[c], 0);
        if (!cons[c]) _exit(consume(d.rings[0], seen, &res[c]));
    }
    for (uint32_t p = 0; p < NPROD; p++) {
        prod[p] = fork();
        ck_assert_int_ge(prod[p], 0);
        if (!prod[p]) {
            for (uint32_t s = 0; s < per; s++)
                if (ring_push_timeout(d.rings[0], p << 20 | s, 10000 * 1000000LL)) _exit(1);
            _exit(0);
        }
    }
    for (int p = 0; p < NPROD; p++) {
        ck_assert_int_eq(waitpid(prod[p], &st, 0), prod[p]);
        ck_assert_msg(WIFEXITED(st) && !WEXITSTATUS(st), "producer %d failed", p);
    }
    for (int c = 0; c < NCONS; c++) ck_assert_int_eq(ring_push_timeout(d.rings[0], STOP, -1), 0);
    for (int c = 0; c < NCONS; c++) {
        ck_assert_int_eq(waitpid(cons[c], &st, 0), cons[c]);
        ck_assert_msg(WIFEXITED(st) && !WEXITSTATUS(st), "consumer %d exit %d", c, WEXITSTATUS(st));
        ck_assert_uint_eq(res[c].dups, 0);
        ck_assert_uint_eq(res[c].order_errors, 0);
        got += res[c].count;
        sum += res[c].sum;
    }
    for (uint32_t p = 0; p < NPROD; p++)
        for (uint32_t s = 0; s < per; s++) {
            uint32_t v = p << 20 | s;

            want_sum += v;
            ck_assert_msg(seen[v >> 5] & (1u << (v & 31)), "item %u/%u lost", p, s);
        }
    ck_assert_uint_eq(got, (uint64_t)NPROD * per);
    ck_assert_uint_eq(sum, want_sum);
    ck_assert_uint_eq(ring_count(d.rings[0]), 0);
    munmap(seen, words * 4);
    munmap(res, sizeof(*res) * NCONS);
}
END_TEST

/* ---- consumers killed at random moments, recovered from the table ---- */

#define NPARTS          3000
#define NWORKERS        3
#define CRASH_ROUNDS    3
/* A kill after every 5..34 partitions done (about 140 a round): paced by progress, not
 * by the clock, so a fast or a loaded machine gets the same number of kills. */
#define KILL_EVERY_MIN  5
#define KILL_EVERY_SPAN 30

struct crash_shared {
    _Atomic uint32_t done_hits[NPARTS]; /* bumped after winning the DONE CAS */
    uint64_t result[NPARTS];
};

static uint64_t expect_result(uint32_t p)
{
    return (uint64_t)p * 2654435761u + 17;
}

static void busy_ns(uint64_t ns)
{
    uint64_t t0 = os_now_ns();

    while (os_now_ns() - t0 < ns) barrier_cpu_relax();
}

/* A GPU-worker-like consumer: claim READY→PROVING, take a scratch buffer, release the
 * input buffer, compute, PROVING→DONE. Runs until killed. */
static void crash_worker(struct crash_shared *sh)
{
    uint32_t me = (uint32_t)getpid(), p, scratch;
    struct jobtab *jt = &d.jobtab;

    for (;;) {
        if (ring_pop_timeout(d.rings[0], &p, 20 * 1000000LL)) continue;
        /* A stale hint (already claimed or rolled back) just loses the CAS. */
        if (jobtab_part_move(jt, p, JOBTAB_READY, 0, JOBTAB_PROVING, me, NULL)) continue;
        uint32_t in = jt->parts[p].buf;

        if (*(uint32_t *)pool_buf_ptr(&d.pool, in) != p)
            _exit(10); /* input buffer is not the partition's: recovery bug */
        if (pool_buf_alloc(&d.pool, -1, me, -1, &scratch)) _exit(11);
        busy_ns(20000);
        *(uint64_t *)pool_buf_ptr(&d.pool, scratch) = expect_result(p);
        /* The data is "on the device": release the input early, as the GPU worker
         * will. From here a crash sends the partition back to QUEUED. */
        if (pool_buf_free(&d.pool, in, pool_owner_part(p))) _exit(12);
        busy_ns(20000);
        barrier_store_relaxed(&jt->parts[p].result, *(uint64_t *)pool_buf_ptr(&d.pool, scratch));
        if (pool_buf_free(&d.pool, scratch, me)) _exit(13);
        if (jobtab_part_move(jt, p, JOBTAB_PROVING, me, JOBTAB_DONE, 0, NULL)) _exit(14);
        atomic_fetch_add(&sh->done_hits[p], 1);
    }
}

static pid_t spawn_worker(struct crash_shared *sh)
{
    pid_t pid = fork();

    ck_assert_int_ge(pid, 0);
    if (!pid) {
        crash_worker(sh);
        _exit(0);
    }
    return pid;
}

/* The parent as synth: give each QUEUED partition a buffer holding its index, move it
 * QUEUED → SYNTH → READY and push it. Returns how many it readied. */
static int synth_pass(uint32_t first)
{
    struct jobtab *jt = &d.jobtab;
    uint32_t me = (uint32_t)getpid(), b;
    int n = 0;

    for (uint32_t p = first; p < first + NPARTS; p++) {
        if (jobtab_word_state(jobtab_part_load(jt, p)) != JOBTAB_QUEUED) continue;
        uint32_t used, fr;

        /* Leave one scratch buffer per worker, or every buffer can end up held by
         * READY partitions while each worker waits for scratch. */
        pool_node_counts(&d.pool, -1, &used, &fr);
        if (fr <= NWORKERS || pool_buf_alloc(&d.pool, -1, me, 0, &b)) break; /* pool busy: next pass */
        ck_assert_int_eq(jobtab_part_move(jt, p, JOBTAB_QUEUED, 0, JOBTAB_SYNTH, me, NULL), 0);
        *(uint32_t *)pool_buf_ptr(&d.pool, b) = p;
        jt->parts[p].buf = b;
        ck_assert_int_eq(pool_buf_transfer(&d.pool, b, me, pool_owner_part(p)), 0);
        ck_assert_int_eq(jobtab_part_move(jt, p, JOBTAB_SYNTH, me, JOBTAB_READY, 0, NULL), 0);
        ck_assert_int_eq(ring_try_push(d.rings[0], p), 0);
        n++;
    }
    return n;
}

TEST(test_stress_killed_consumers_recover_every_partition_once, 1)
{
    const struct shmlayout_config cfg = test_shm_config(4096, 1, NPARTS, 24, 4096);
    struct crash_shared *sh;
    pid_t w[NWORKERS];
    uint32_t job, first, done = 0, failed, out[NPARTS], used, fr;
    uint64_t deadline;
    uint32_t next_kill;
    unsigned kills = 0, rolled_ready = 0, rolled_queued = 0, freed = 0;
    int st;

    if (!strcmp(sanitizer(), "tsan")) return; /* fork + SIGKILL: not a TSan subject (no threads) */
    test_shm_create(&d, inst, sizeof(inst), "s", &cfg);
    srand((unsigned)getpid());
    sh = shared_alloc(sizeof(*sh));
    for (int round = 0; round < CRASH_ROUNDS; round++) {
        memset(sh, 0, sizeof(*sh));
        done = 0;
        ck_assert_int_eq(jobtab_job_add(&d.jobtab, NPARTS, NULL, NULL, 0, &job), 0);
        first = d.jobtab.jobs[job].first_part;
        for (int i = 0; i < NWORKERS; i++) w[i] = spawn_worker(sh);
        deadline = os_now_ns() + 30 * 1000000000ULL;
        next_kill = 0;
        while (done < NPARTS) {
            synth_pass(first);
            if (done >= next_kill) {
                int k = rand() % NWORKERS;

                /* Kill at a random moment, then recover as the supervisor will. */
                kill(w[k], SIGKILL);
                ck_assert_int_eq(waitpid(w[k], &st, 0), w[k]);
                ck_assert_msg(WIFSIGNALED(st),
                              "worker exited by itself with %d: "
                              "it saw a recovery bug",
                              WEXITSTATUS(st));
                freed += (unsigned)pool_reclaim_pid(&d.pool, w[k]);
                int n = jobtab_reclaim_pid(&d.jobtab, &d.pool, w[k], out, NPARTS);

                for (int i = 0; i < n; i++) {
                    uint32_t s = jobtab_word_state(jobtab_part_load(&d.jobtab, out[i]));

                    if (s == JOBTAB_READY) {
                        rolled_ready++;
                    } else {
                        ck_assert_uint_eq(s, JOBTAB_QUEUED); /* synth_pass redoes it */
                        rolled_queued++;
                    }
                }
                /* Re-push every READY partition: the dead worker may have popped a hint
                 * it never claimed. Duplicates lose the claim CAS; a full ring already
                 * holds hints that will be drained. */
                n = jobtab_parts_in_state(&d.jobtab, JOBTAB_READY, out, NPARTS);
                for (int i = 0; i < n; i++) ring_try_push(d.rings[0], out[i]);
                kills++;
                w[k] = spawn_worker(sh);
                next_kill = done + KILL_EVERY_MIN + (uint32_t)(rand() % KILL_EVERY_SPAN);
            }
            usleep(200);
            ck_assert_int_eq(jobtab_job_counts(&d.jobtab, job, &done, &failed), 0);
            ck_assert_uint_eq(failed, 0);
            ck_assert_msg(os_now_ns() < deadline,
                          "stuck: %u of %u partitions done after "
                          "%u kills (a partition was lost by recovery)",
                          done, NPARTS, kills);
        }
        for (int i = 0; i < NWORKERS; i++) {
            kill(w[i], SIGKILL);
            waitpid(w[i], &st, 0);
            ck_assert_msg(WIFSIGNALED(st), "worker exited with %d", WEXITSTATUS(st));
            pool_reclaim_pid(&d.pool, w[i]);
            jobtab_reclaim_pid(&d.jobtab, &d.pool, w[i], out, NPARTS);
        }
        for (uint32_t i = 0; i < NPARTS; i++) {
            ck_assert_uint_eq(jobtab_word_state(jobtab_part_load(&d.jobtab, first + i)), JOBTAB_DONE);
            /* 0 only if killed between the DONE CAS and the bump; never 2. */
            ck_assert_uint_le(sh->done_hits[first + i], 1);
            ck_assert_uint_eq(d.jobtab.parts[first + i].result, expect_result(first + i));
        }
        ck_assert_int_eq(jobtab_job_try_complete(&d.jobtab, job), 1);
        pool_node_counts(&d.pool, -1, &used, &fr);
        ck_assert_msg(used == 0, "%u buffers leaked", used);
        ck_assert_int_eq(jobtab_job_retire(&d.jobtab, job), 0);
    }
    fprintf(stderr,
            "crash stress: %u kills, %u rolled back to READY, %u to QUEUED, "
            "%u scratch buffers reclaimed\n",
            kills, rolled_ready, rolled_queued, freed);
    ck_assert_uint_ge(kills, 100 * CRASH_ROUNDS / 2);
    ck_assert_uint_gt(rolled_ready + rolled_queued, 0);
    munmap(sh, sizeof(*sh));
}
END_TEST

int main(void)
{
    const struct test_opts o = { .teardown = teardown, .timeout = 120 };

    return test_main("shm_stress", &o);
}
