/* test_team.c — the persistent compute threads (zk/team.c): every part runs once
 * and all parts at once, several callers and nested callers at the same time, a
 * forked child (also one forked while another thread is handing out parts), and no
 * thread made by a second round of MSM, NTT, synthesis and proof.
 *
 * Threads are counted twice: by the set's own counter, and (outside sanitizer builds,
 * whose runtimes intercept pthread_create themselves) by this program's own
 * pthread_create in front of libc's, which counts every thread the process makes, so
 * that the no-churn check holds against any code that makes threads, not only the set. */
#include <check.h>
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "zk/curve.h"
#include "zk/groth16.h"
#include "zk/msm.h"
#include "zk/ntt.h"
#include "zk/team.h"
#include "zk/wtns.h"
#include "zk/zkey.h"

#include "helper_test.h"
#include "base/os.h"

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define COUNT_CREATES 0
#else
#define COUNT_CREATES 1
static atomic_uint_fast64_t creates; /* every pthread_create of the process */

int pthread_create(pthread_t *th, const pthread_attr_t *attr, void *(*fn)(void *), void *arg)
{
    static int (*real)(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *);
    if (!real) { /* racing first calls store the same pointer */
        void *sym = dlsym(RTLD_NEXT, "pthread_create");
        if (!sym) return EAGAIN;
        memcpy(&real, &sym, sizeof real);
    }
    atomic_fetch_add(&creates, 1);
    return real(th, attr, fn, arg);
}
#endif

#if defined(__SANITIZE_THREAD__)
/* The fork test makes threads in a child of a threaded process; TSan would kill it. */
const char *__tsan_default_options(void);
const char *__tsan_default_options(void)
{
    return "die_after_fork=0";
}
#endif

/* ---- a part that records itself --------------------------------------------- */

#define MAXP 64

struct tally {
    atomic_uint runs[MAXP];
    atomic_uint arrived; /* parts that have started */
    atomic_uint bad_n;   /* parts that saw another nparts than the first */
    atomic_uint nseen;
    atomic_uint late; /* parts that waited past the deadline for the others */
    int together;     /* wait until all nparts have started (a barrier of nparts) */
};

static void tally_part(void *arg, unsigned part, unsigned nparts)
{
    struct tally *t = arg;
    unsigned expect = 0;

    if (!atomic_compare_exchange_strong(&t->nseen, &expect, nparts) && expect != nparts)
        atomic_fetch_add(&t->bad_n, 1);
    if (part < MAXP) atomic_fetch_add(&t->runs[part], 1);
    atomic_fetch_add(&t->arrived, 1);
    if (!t->together) return;
    double end = os_now_s() + 60; /* a liveness bound, not a timing */
    while (atomic_load(&t->arrived) < nparts) {
        if (os_now_s() > end) {
            atomic_fetch_add(&t->late, 1);
            return;
        }
        sched_yield();
    }
}

/* team_run(want) over a fresh tally; fails the test unless want parts ran once each. */
static void run_and_check(unsigned want, int together)
{
    struct tally t;

    memset(&t, 0, sizeof t);
    t.together = together;
    unsigned n = team_run(want, tally_part, &t);
    unsigned w = want ? want : 1;
    ck_assert_uint_eq(n, w);
    ck_assert_uint_eq(atomic_load(&t.nseen), n);
    ck_assert_uint_eq(atomic_load(&t.bad_n), 0);
    ck_assert_uint_eq(atomic_load(&t.late), 0);
    for (unsigned p = 0; p < MAXP; p++)
        ck_assert_msg(atomic_load(&t.runs[p]) == (p < n ? 1u : 0u), "want %u: part %u ran %u times", want, p,
                      atomic_load(&t.runs[p]));
}

TEST(test_team_run_every_part_once, 1)
{
    static const unsigned wants[] = { 0, 1, 2, 3, 5, 8, 17, 64, 2, 64, 1 };
    team_stats s0, st;

    team_stats_get(&s0); /* Check forks each test: zero, unless CK_FORK=no */
    for (size_t i = 0; i < sizeof wants / sizeof wants[0]; i++) run_and_check(wants[i], 0);
    team_stats_get(&st);
    unsigned most = s0.threads > 63 ? s0.threads : 63; /* the most wanted at once, less the caller */
    ck_assert_uint_eq(st.threads, most);
    ck_assert_uint_eq(st.created - s0.created, most - s0.threads);
    ck_assert_uint_eq(st.idle, most);
}
END_TEST

TEST(test_team_parts_run_at_once, 1)
{
    /* each part waits for all the others to start: parts run one after another would
     * never get past the first */
    for (unsigned want = 2; want <= 16; want++) run_and_check(want, 1);
}
END_TEST

/* ---- several callers at once, and a caller inside a part ---------------------- */

#define CALLERS 4
#define CALLS   300

static void *caller_main(void *arg)
{
    unsigned id = (unsigned)(uintptr_t)arg;
    for (unsigned i = 0; i < CALLS; i++) run_and_check(2 + (i + id) % 4, (i & 1) != 0);
    return NULL;
}

TEST(test_team_concurrent_callers, 1)
{
    pthread_t th[CALLERS];
    team_stats s0, st;

    team_stats_get(&s0);
    for (unsigned c = 0; c < CALLERS; c++)
        ck_assert_int_eq(pthread_create(&th[c], NULL, caller_main, (void *)(uintptr_t)c), 0);
    for (unsigned c = 0; c < CALLERS; c++) pthread_join(th[c], NULL);
    team_stats_get(&st);
    /* at most 4 callers x (5 - 1) threads were ever wanted at once */
    ck_assert_msg(st.created - s0.created <= CALLERS * 4, "made %llu threads for %u callers of up to 5 parts",
                  (unsigned long long)(st.created - s0.created), CALLERS);
    ck_assert_uint_eq(st.threads, st.created);
    ck_assert_uint_eq(st.idle, st.threads);
}
END_TEST

static void nested_part(void *arg, unsigned part, unsigned nparts)
{
    (void)nparts;
    atomic_uint *ok = arg;
    struct tally t;

    memset(&t, 0, sizeof t);
    t.together = 1;
    if (team_run(3, tally_part, &t) == 3 && atomic_load(&t.late) == 0 && atomic_load(&t.runs[0]) == 1 &&
        atomic_load(&t.runs[1]) == 1 && atomic_load(&t.runs[2]) == 1)
        atomic_fetch_add(&ok[part], 1);
}

TEST(test_team_nested_caller, 1)
{
    atomic_uint ok[4];

    for (int round = 0; round < 20; round++) {
        memset(ok, 0, sizeof ok);
        ck_assert_uint_eq(team_run(4, nested_part, ok), 4);
        for (unsigned p = 0; p < 4; p++)
            ck_assert_msg(atomic_load(&ok[p]) == 1, "round %d part %u", round, p);
    }
}
END_TEST

/* ---- fork ------------------------------------------------------------------- */

static atomic_int stop_bg, bg_bad;

/* Check's assertions take a lock of Check's own, which a fork could copy held into
 * the child: this thread counts its failures instead. */
static void *bg_main(void *arg)
{
    (void)arg;
    while (!atomic_load(&stop_bg)) {
        struct tally t;
        memset(&t, 0, sizeof t);
        unsigned n = team_run(3, tally_part, &t);
        if (n != 3 || atomic_load(&t.runs[0]) != 1 || atomic_load(&t.runs[1]) != 1 ||
            atomic_load(&t.runs[2]) != 1)
            atomic_fetch_add(&bg_bad, 1);
    }
    return NULL;
}

/* Child: the parent's threads are not there; the set makes its own and runs. */
static int child_body(void)
{
    team_stats st;
    struct tally t;

    team_stats_get(&st);
    if (st.threads != 0 || st.created != 0) return 2;
    memset(&t, 0, sizeof t);
    t.together = 1;
    if (team_run(4, tally_part, &t) != 4 || atomic_load(&t.late)) return 3;
    for (unsigned p = 0; p < 4; p++)
        if (atomic_load(&t.runs[p]) != 1) return 4;
    team_stats_get(&st);
    return st.created == 3 ? 0 : 5;
}

TEST(test_team_fork_child_runs, 1)
{
    pthread_t bg;

    run_and_check(4, 1); /* the parent has threads now */
    ck_assert_int_eq(pthread_create(&bg, NULL, bg_main, NULL), 0);
    for (int i = 0; i < 20; i++) {
        pid_t pid = fork();
        if (pid == 0) _exit(child_body()); /* no Check call in the child (see bg_main) */
        ck_assert_int_ge(pid, 0);
        int status = 0;
        double end = os_now_s() + 60;
        while (waitpid(pid, &status, WNOHANG) == 0) {
            if (os_now_s() > end) {
                kill(pid, SIGKILL);
                waitpid(pid, &status, 0);
                ck_abort_msg("fork %d: the child hung in team_run (a lock inherited held?)", i);
            }
            usleep(1000);
        }
        ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0, "fork %d: child status %d", i, status);
    }
    atomic_store(&stop_bg, 1);
    pthread_join(bg, NULL);
    ck_assert_int_eq(atomic_load(&bg_bad), 0);
    run_and_check(4, 1); /* the parent's set still works */
}
END_TEST

/* ---- no thread churn: a second round makes no thread --------------------------- */

#define NT 4 /* threads asked for by each call of the round */

struct round {
    uint64_t *bases, *v, *a, *b, *c;
    uint8_t *scalars;
    ntt_domain d;
    zkey fake; /* ncoefs 0: synthesis is c = a∘b over the domain, threaded by rows */
    zkey z;
    wtns w;
    int have_proof;
};

static void round_setup(struct round *r)
{
    const curve_group *G = &G1_BN254;
    const size_t n = 1 << 10, nd = 1 << 13;
    char zp[1024], wp[1024], err[256];

    memset(r, 0, sizeof *r);
    r->bases = test_rand_points(G, n);
    r->scalars = malloc(n * 32);
    r->v = aligned_alloc(32, nd * 32);
    r->a = aligned_alloc(32, nd * 32);
    r->b = aligned_alloc(32, nd * 32);
    r->c = aligned_alloc(32, nd * 32);
    ck_assert(r->scalars && r->v && r->a && r->b && r->c);
    test_rand_scalars(G->Fr, (uint64_t *)r->scalars, n, TEST_SCALARS_UNIFORM);
    test_rand_scalars(&FIELD_BN254_FR, r->v, nd, TEST_SCALARS_UNIFORM);
    ck_assert_int_eq(ntt_domain_init(&r->d, &FIELD_BN254_FR, 13), 0);
    r->fake = (zkey){ .Fr = &FIELD_BN254_FR, .n8r = 32, .domain_size = 1 << 12 };

    test_ref_fixture(zp, sizeof zp, "bn128-chain", "circuit_final.zkey");
    test_ref_fixture(wp, sizeof wp, "bn128-chain", "witness.wtns");
    if (zkey_open(&r->z, zp, err, sizeof err) == 0) {
        ck_assert_msg(wtns_open(&r->w, wp, err, sizeof err) == 0, "%s", err);
        r->have_proof = 1;
    } else {
        fprintf(stderr, "test_team: no proof in the no-churn check (%s; set CUZK_REF_FIXTURES)\n", err);
    }
}

static void round_free(struct round *r)
{
    if (r->have_proof) {
        wtns_close(&r->w);
        zkey_close(&r->z);
    }
    ntt_domain_free(&r->d);
    void *owned[] = { r->bases, r->scalars, r->v, r->a, r->b, r->c };
    for (size_t i = 0; i < TEST_N(owned); i++) free(owned[i]);
}

/* One MSM, one odd-coset NTT, one synthesis and one proof, NT threads each. */
static void round_run(struct round *r, uint64_t *msm_out, groth16_proof *proof)
{
    groth16_blind bl;
    char err[256];

    ck_assert_int_eq(msm_run(&G1_BN254, msm_out, (const uint8_t *)r->bases, r->scalars, 1 << 10, 32, NT), 0);
    ntt_to_odd_coset(&r->d, r->v, NT);
    ck_assert_int_eq(groth16_synth(&r->fake, NULL, r->a, r->b, r->c, NT, NULL), 0);
    if (!r->have_proof) return;
    groth16_blind_from_seed(&r->z, 7, &bl);
    ck_assert_msg(groth16_prove(&r->z, &r->w, &bl, proof, NT, NULL, err, sizeof err) == 0, "%s", err);
}

TEST(test_team_second_round_makes_no_thread, 1)
{
    struct round r;
    uint64_t m1[EC_MAX_JAC], m2[EC_MAX_JAC];
    groth16_proof p1, p2;
    team_stats s0, s1, s2;

    round_setup(&r);
    memset(&p1, 0, sizeof p1);
    memset(&p2, 0, sizeof p2);
#if COUNT_CREATES
    uint64_t c0 = atomic_load(&creates);
#endif
    team_stats_get(&s0);
    round_run(&r, m1, &p1);
    team_stats_get(&s1);
#if COUNT_CREATES
    uint64_t c1 = atomic_load(&creates);
#endif
    round_run(&r, m2, &p2);
    team_stats_get(&s2);
#if COUNT_CREATES
    uint64_t c2 = atomic_load(&creates);
    ck_assert_msg(c2 == c1, "the second round made %llu threads (the first %llu)",
                  (unsigned long long)(c2 - c1), (unsigned long long)(c1 - c0));
#endif
    ck_assert_uint_ge(s1.threads, NT - 1); /* the first round made them (unless an earlier test had) */
    ck_assert_uint_le(s1.created - s0.created, NT - 1); /* one caller at a time: NT - 1 at most */
    ck_assert_uint_eq(s2.created, s1.created);
    ck_assert_uint_gt(s2.runs, s1.runs); /* and the second round did use them */
    ck_assert(ec_jac_eq(&G1_BN254, m1, m2));
    ck_assert(memcmp(&p1, &p2, sizeof p1) == 0); /* same seed, same proof */
    round_free(&r);
}
END_TEST

int main(void)
{
    /* Under ASan the fork case is left out: GCC's libsanitizer allocator is not
     * fork-safe while another thread allocates (the child inherits a size-class
     * region mutex held; gdb shows the child's threads waiting in
     * SizeClassAllocator64::GetFromAllocator, 1 run in 6 here). The plain build runs
     * it, and it is the plain build's allocator the daemon forks with. */
    const char *san = getenv("CUZK_SANITIZER");
    int asan = san && !strcmp(san, "asan");
    const struct test_opts o = { .timeout = 300, .leave_out = asan ? "test_team_fork_child_runs" : NULL };

    test_rng_seed(0x776f726b657273ULL);
    if (asan) printf("team: fork_child_runs not run under asan (libsanitizer allocator not fork-safe)\n");
    return test_main("team", &o);
}
