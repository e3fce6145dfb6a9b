/* test_pipeline.c — the three stages (synth, worker, finalizer) on threads of this
 * process, over an instance made with pipeline_create, proving the shared snarkjs
 * fixtures. The proofs are randomized: their validity is checked by snarkjs in
 * tests/scripts/pipeline_stages.sh; here, the table, the pool, the files and the
 * stats. */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/eventfd.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "base/error.h"
#include "finalizer/finalizer.h"
#include "stage/stage.h"
#include "synth/synth.h"
#include "gpuworker/worker.h"

#include "helper_test.h"

static char inst[32], outdir[256], err[1024], fx[512];
static struct pipeline pl;

static uint64_t buf_need(const char *set)
{
    zkey z;
    uint64_t n;

    memset(&z, 0, sizeof(z));
    test_ref_fixture(fx, sizeof(fx), set, "circuit_final.zkey");
    ck_assert_msg(zkey_open(&z, fx, err, sizeof(err)) == 0, "%s", err);
    n = pipeline_buf_bytes(z.domain_size, z.nvars, z.n8r);
    zkey_close(&z);
    return n;
}

static void setup(void)
{
    struct pipe_params p = { .n_workers = 2, .n_synth = 1, .max_jobs = 4, .max_parts = 16, .buf_count = 3 };
    uint64_t a = buf_need("bn128"), b = buf_need("bn128-chain");

    p.buf_size = a > b ? a : b;
    snprintf(inst, sizeof(inst), "t%d", (int)getpid());
    snprintf(outdir, sizeof(outdir), "/tmp/cuzk-test-pipeline-XXXXXX");
    ck_assert(mkdtemp(outdir) != NULL);
    ck_assert_msg(pipeline_create(&pl, inst, &p, SEGMENT_REPLACE, err, sizeof(err)) == 0, "%s", err);
}

static void teardown(void)
{
    char cmd[512];

    pipeline_detach(&pl);
    pipeline_destroy(inst);
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", outdir);
    if (system(cmd)) {
    }
}

/* ---- stage threads ----------------------------------------------------------------- */

struct stage_thread {
    pthread_t t;
    struct stage_opts o;
    int (*run)(const struct stage_opts *, char *, size_t);
    int rc;
    char err[512];
};

static _Atomic int stop;
static struct stage_thread stages[4];
static int doorbell; /* the stages' --doorbell-fd (0: none), as cuzkd gives them */

static void *stage_thread_main(void *arg)
{
    struct stage_thread *s = arg;

    s->rc = s->run(&s->o, s->err, sizeof(s->err));
    return NULL;
}

static void stages_start(void)
{
    int (*runs[4])(const struct stage_opts *, char *, size_t) = { synth_run, worker_run, worker_run,
                                                                  finalizer_run };
    uint32_t idx[4] = { 0, 0, 1, 0 };

    atomic_store(&stop, 0);
    for (int i = 0; i < 4; i++) {
        struct stage_thread *s = &stages[i];

        memset(s, 0, sizeof(*s));
        s->o.instance = inst;
        s->o.index = idx[i];
        s->o.threads = 1;
        s->o.backend = "cpu";
        s->o.trim_every = 2;
        s->o.stop = &stop;
        s->o.doorbell_fd = doorbell;
        s->run = runs[i];
        ck_assert_int_eq(pthread_create(&s->t, NULL, stage_thread_main, s), 0);
    }
}

static void stages_stop(void)
{
    atomic_store(&stop, 1);
    for (int i = 0; i < 4; i++) {
        pthread_join(stages[i].t, NULL);
        ck_assert_msg(stages[i].rc == 0, "stage %d: %d %s", i, stages[i].rc, stages[i].err);
    }
}

static uint32_t job_state(uint32_t j)
{
    return jobtab_word_state(barrier_load_acquire(&pl.data.jobtab.jobs[j].word));
}

/* Wait until the job is decided (DONE or FAILED); fail after 120 s. */
static uint32_t wait_job(uint32_t j)
{
    for (int i = 0; i < 12000; i++) {
        uint32_t s = job_state(j);

        if (s == JOBTAB_DONE || s == JOBTAB_FAILED) return s;
        usleep(10000);
    }
    ck_abort_msg("job %u not decided after 120 s", j);
    return 0;
}

static uint32_t part_state(uint32_t p)
{
    return jobtab_word_state(jobtab_part_load(&pl.data.jobtab, p));
}

/* OUT/<name>.public.json equals the fixture's public.json; proof.json has the shape. */
static void check_outputs(const char *set, const char *name)
{
    char path[1024];
    json_t *got, *want, *proof;
    json_error_t je;

    snprintf(path, sizeof(path), "%s/%s.public.json", outdir, name);
    got = json_load_file(path, 0, &je);
    ck_assert_msg(got != NULL, "%s: %s", path, je.text);
    test_ref_fixture(fx, sizeof(fx), set, "public.json");
    want = json_load_file(fx, 0, &je);
    ck_assert_msg(want != NULL, "%s: %s", fx, je.text);
    ck_assert_msg(json_equal(got, want), "%s: public signals differ from %s", path, fx);
    snprintf(path, sizeof(path), "%s/%s.proof.json", outdir, name);
    proof = json_load_file(path, 0, &je);
    ck_assert_msg(proof != NULL, "%s: %s", path, je.text);
    ck_assert_str_eq(json_string_value(json_object_get(proof, "protocol")), "groth16");
    ck_assert_str_eq(json_string_value(json_object_get(proof, "curve")), "bn128");
    ck_assert_uint_eq(json_array_size(json_object_get(proof, "pi_a")), 3);
    ck_assert_uint_eq(json_array_size(json_object_get(proof, "pi_b")), 3);
    ck_assert_uint_eq(json_array_size(json_object_get(proof, "pi_c")), 3);
    json_decref(got);
    json_decref(want);
    json_decref(proof);
}

/* A consistent snapshot of a live stage's slot. stats_slot_read gives up (-EAGAIN)
 * while the writer sits preempted inside an update, which on a loaded machine can
 * outlast any fixed number of tries; the writer is alive, so retry until it
 * finishes (Check's timeout is the hang guard). */
static void read_slot(enum stats_role role, uint32_t index, struct stats_snapshot *snap, uint64_t now)
{
    while (stats_slot_read(pipeline_stats_slot(&pl, role, index), snap, now, 1000) != 0) usleep(1000);
}

static uint64_t slot_counter(enum stats_role role, uint32_t index, uint32_t c)
{
    struct stats_snapshot snap;

    read_slot(role, index, &snap, stage_now());
    return snap.counters[c];
}

/* ---- tests ------------------------------------------------------------------------- */

TEST(test_pipeline_slot_map_and_regions, 1)
{
    const struct pipe_config *c = pipeline_config(&pl);
    struct pipeline other;

    ck_assert_uint_eq(c->magic, PIPE_CONFIG_MAGIC);
    ck_assert_uint_eq(c->n_slots, 1 + 1 + 2 + 1 + 4);
    ck_assert_int_eq(pipeline_stats_slot_index(c, STATS_ROLE_SUPERVISOR, 0), 0);
    ck_assert_int_eq(pipeline_stats_slot_index(c, STATS_ROLE_SYNTH, 0), 1);
    ck_assert_int_eq(pipeline_stats_slot_index(c, STATS_ROLE_GPUWORKER, 1), 3);
    ck_assert_int_eq(pipeline_stats_slot_index(c, STATS_ROLE_FINALIZER, 0), 4);
    ck_assert_int_eq(pipeline_stats_slot_index(c, STATS_ROLE_CLIENT, 3), 8);
    ck_assert_int_eq(pipeline_stats_slot_index(c, STATS_ROLE_GPUWORKER, 2), -EINVAL);
    ck_assert_int_eq(pipeline_stats_slot_index(c, STATS_ROLE_SYNTH, 1), -EINVAL);
    ck_assert_ptr_nonnull(pipeline_ring(&pl, PIPE_RING_FINAL(2)));
    ck_assert_ptr_null(pipeline_ring(&pl, PIPE_RING_FINAL(2) + 1));
    ck_assert_ptr_null(pipeline_partinfo(&pl, 16));
    /* An attacher sees the same regions. */
    ck_assert_msg(pipeline_attach(&other, inst, err, sizeof(err)) == 0, "%s", err);
    ck_assert_uint_eq(pipeline_config(&other)->max_parts, 16);
    ck_assert_uint_eq(pipeline_config(&other)->buf_size, c->buf_size);
    pipeline_detach(&other);
}
END_TEST

TEST(test_pipeline_submit_fills_and_seals_partinfo, 1)
{
    struct pipe_submit_part parts[2] = { { "/w/one.wtns", NULL, NULL },
                                         { "/w/two.wtns", "/c.r1cs", "second" } };
    char longp[400];
    uint32_t j, p, v;
    struct jobtab_job *jb;

    ck_assert_msg(pipeline_submit_job(&pl, "/k.zkey", "/out", 5, 2, parts, 7, &j, err, sizeof(err)) == 0,
                  "%s", err);
    jb = &pl.data.jobtab.jobs[j];
    ck_assert_int_eq(jb->priority, 5);
    p = jb->first_part;
    ck_assert_str_eq(pipeline_partinfo(&pl, p)->name, "one");
    ck_assert_str_eq(pipeline_partinfo(&pl, p)->r1cs_path, "");
    ck_assert_str_eq(pipeline_partinfo(&pl, p + 1)->name, "second");
    ck_assert_str_eq(pipeline_partinfo(&pl, p + 1)->r1cs_path, "/c.r1cs");
    ck_assert_uint_eq(pipeline_partinfo(&pl, p)->job_id, jb->id);
    ck_assert_int_eq(ring_try_pop(pipeline_ring(&pl, PIPE_RING_SYNTH), &v), 0);
    ck_assert_uint_eq(v, p);
    ck_assert_int_eq(ring_try_pop(pipeline_ring(&pl, PIPE_RING_SYNTH), &v), 0);
    ck_assert_uint_eq(v, p + 1);
    /* Too long: refused, nothing added. */
    memset(longp, 'x', sizeof(longp) - 1);
    longp[sizeof(longp) - 1] = 0;
    parts[1].wtns_path = longp;
    ck_assert_int_eq(pipeline_submit_job(&pl, "/k.zkey", "/out", 0, 2, parts, 7, &j, err, sizeof(err)),
                     -ENAMETOOLONG);
    ck_assert_int_eq(ring_try_pop(pipeline_ring(&pl, PIPE_RING_SYNTH), &v), -EAGAIN);
}
END_TEST

TEST(test_pipeline_reason_names_the_file, 1)
{
    /* the path in the message becomes the file's name; a message without it is prefixed */
    static const struct {
        const char *msg, *want;
    } cases[] = {
        { "cannot open /a/b/w1.wtns: No such file", "cannot open w1.wtns: No such file" },
        { "witness has 3 values, zkey expects 4", "w1.wtns: witness has 3 values, zkey expects 4" },
    };
    char r[JOBTAB_REASON_LEN];

    for (size_t i = 0; i < TEST_N(cases); i++) {
        stage_reason(r, sizeof(r), "/a/b/w1.wtns", cases[i].msg);
        ck_assert_str_eq(r, cases[i].want);
    }
}
END_TEST

/* A stage opens cuzkd's copies as /proc/PID/fd/N; its messages name them as the
 * client did, and fd 7 is not mistaken for a prefix of fd 71. */
TEST(test_pipeline_err_rename_names_copies_by_client_path, 1)
{
    /* renames applied one after another to the same message */
    static const struct {
        const char *copy, *client, *want;
    } steps[] = {
        { "/proc/9/fd/7", "/home/a/w1.wtns",
          "witness /home/a/w1.wtns has 3 values, zkey /proc/9/fd/71 expects 4" },
        { "/proc/9/fd/71", "/home/a/c.zkey",
          "witness /home/a/w1.wtns has 3 values, zkey /home/a/c.zkey expects 4" },
    };
    char m[256] = "witness /proc/9/fd/7 has 3 values, zkey /proc/9/fd/71 expects 4";

    for (size_t i = 0; i < TEST_N(steps); i++) {
        pipe_err_rename(m, sizeof(m), steps[i].copy, steps[i].client);
        ck_assert_str_eq(m, steps[i].want);
    }
}
END_TEST

TEST(test_pipeline_proves_fixtures_end_to_end, 1)
{
    char w1[512], w2[512], r2[512], bad[512], wrong[512], cmd[1200];
    struct pipe_submit_part p1[3], p2[2], p3[3], p4[2];
    uint32_t j1, j2, j3, j4, in_use = 9, nfree = 0, failed_part = JOBTAB_NONE;
    struct jobtab *jt = &pl.data.jobtab;
    char zk1[512], zk2[512];
    char names[8][16];

    test_ref_fixture(zk1, sizeof(zk1), "bn128", "circuit_final.zkey");
    test_ref_fixture(zk2, sizeof(zk2), "bn128-chain", "circuit_final.zkey");
    test_ref_fixture(w1, sizeof(w1), "bn128", "witness.wtns");
    test_ref_fixture(w2, sizeof(w2), "bn128-chain", "witness.wtns");
    test_ref_fixture(r2, sizeof(r2), "bn128-chain", "circuit.r1cs");
    /* The bad witness: another circuit's (wrong length for the bn128 zkey). */
    snprintf(bad, sizeof(bad), "%s/bad.wtns", outdir);
    snprintf(cmd, sizeof(cmd), "cp '%s' '%s'", w2, bad);
    ck_assert_int_eq(system(cmd), 0);
    /* The wrong witness: right length, last (private) value changed by one bit. The
     * zkey cannot tell; only the finalizer's pairing check catches it. */
    snprintf(wrong, sizeof(wrong), "%s/wrong.wtns", outdir);
    {
        FILE *in = fopen(w1, "rb"), *o = fopen(wrong, "wb");
        unsigned char data[65536];
        size_t n;

        ck_assert(in && o);
        n = fread(data, 1, sizeof(data), in);
        ck_assert_uint_gt(n, 64);
        data[n - 32] ^= 1;
        ck_assert_uint_eq(fwrite(data, 1, n, o), n);
        fclose(in);
        fclose(o);
    }
    for (int i = 0; i < 8; i++) snprintf(names[i], sizeof(names[i]), "p%d", i);
    for (int i = 0; i < 3; i++) p1[i] = (struct pipe_submit_part){ w1, NULL, names[i] };
    for (int i = 0; i < 2; i++) p2[i] = (struct pipe_submit_part){ w2, r2, names[3 + i] };
    p3[0] = (struct pipe_submit_part){ w1, NULL, names[5] };
    p3[1] = (struct pipe_submit_part){ bad, NULL, NULL };
    p3[2] = (struct pipe_submit_part){ w1, NULL, names[6] };

    ck_assert_msg(pipeline_submit_job(&pl, zk1, outdir, 0, 3, p1, stage_now(), &j1, err, sizeof(err)) == 0,
                  "%s", err);
    ck_assert_msg(pipeline_submit_job(&pl, zk2, outdir, 1, 2, p2, stage_now(), &j2, err, sizeof(err)) == 0,
                  "%s", err);
    ck_assert_msg(pipeline_submit_job(&pl, zk1, outdir, 0, 3, p3, stage_now(), &j3, err, sizeof(err)) == 0,
                  "%s", err);
    p4[0] = (struct pipe_submit_part){ wrong, NULL, NULL };
    p4[1] = (struct pipe_submit_part){ w1, NULL, names[7] };
    ck_assert_msg(pipeline_submit_job(&pl, zk1, outdir, 0, 2, p4, stage_now(), &j4, err, sizeof(err)) == 0,
                  "%s", err);
    doorbell = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    ck_assert_int_gt(doorbell, 0);
    stages_start();
    ck_assert_uint_eq(wait_job(j1), JOBTAB_DONE);
    ck_assert_uint_eq(wait_job(j2), JOBTAB_DONE);
    ck_assert_uint_eq(wait_job(j3), JOBTAB_FAILED);
    ck_assert_uint_eq(wait_job(j4), JOBTAB_FAILED);
    /* Let the finalizer trim when idle, then stop every stage cleanly. */
    usleep(300000);
    stages_stop();
    /* The doorbell: one ring per decided job, from whichever stage won its CAS (the
     * finalizer for j1, j2 and j4's pairing failure; the finalizer or synth for j3),
     * never two: with no cuzkd here, no tick decides any. */
    {
        uint64_t rung = 0;

        ck_assert_int_eq(read(doorbell, &rung, sizeof(rung)), (int)sizeof(rung));
        ck_assert_uint_eq(rung, 4);
        close(doorbell);
        doorbell = 0;
    }

    for (int i = 0; i < 3; i++) ck_assert_uint_eq(part_state(jt->jobs[j1].first_part + i), JOBTAB_DONE);
    for (int i = 0; i < 2; i++) ck_assert_uint_eq(part_state(jt->jobs[j2].first_part + i), JOBTAB_DONE);
    for (int i = 0; i < 3; i++) {
        uint32_t p = jt->jobs[j3].first_part + i;

        if (i == 1) {
            ck_assert_uint_eq(part_state(p), JOBTAB_FAILED);
            failed_part = p;
        } else {
            ck_assert_uint_eq(part_state(p), JOBTAB_DONE);
        }
    }
    ck_assert_msg(strstr(jt->parts[failed_part].reason, "bad.wtns") != NULL,
                  "reason does not name the witness: %s", jt->parts[failed_part].reason);
    ck_assert_str_eq(jt->jobs[j3].reason, "1 of 3 partitions failed");
    for (int i = 0; i < 3; i++) check_outputs("bn128", names[i]);
    for (int i = 3; i < 5; i++) check_outputs("bn128-chain", names[i]);
    check_outputs("bn128", names[5]);
    check_outputs("bn128", names[6]);
    snprintf(cmd, sizeof(cmd), "%s/bad.proof.json", outdir);
    ck_assert_int_eq(access(cmd, F_OK), -1);
    /* The wrong witness: synthesized and proved, refused by the pairing check, never
     * published; its sibling is. */
    ck_assert_uint_eq(part_state(jt->jobs[j4].first_part), JOBTAB_FAILED);
    ck_assert_msg(strstr(jt->parts[jt->jobs[j4].first_part].reason, "wrong.wtns") != NULL &&
                      strstr(jt->parts[jt->jobs[j4].first_part].reason, "verification"),
                  "reason: %s", jt->parts[jt->jobs[j4].first_part].reason);
    ck_assert_uint_eq(part_state(jt->jobs[j4].first_part + 1), JOBTAB_DONE);
    check_outputs("bn128", names[7]);
    snprintf(cmd, sizeof(cmd), "%s/wrong.proof.json", outdir);
    ck_assert_int_eq(access(cmd, F_OK), -1);
    snprintf(cmd, sizeof(cmd), "%s/wrong.public.json", outdir);
    ck_assert_int_eq(access(cmd, F_OK), -1);

    /* Every buffer is back; every partition's buffer field cleared. */
    ck_assert_int_eq(pool_node_counts(&pl.data.pool, -1, &in_use, &nfree), 0);
    ck_assert_uint_eq(in_use, 0);
    ck_assert_uint_eq(nfree, 3);
    for (uint32_t p = 0; p < 10; p++) ck_assert_uint_eq(jt->parts[p].buf, JOBTAB_NONE);

    /* Stats: each stage counted its partitions; the two workers share 9. */
    ck_assert_uint_eq(slot_counter(STATS_ROLE_SYNTH, 0, 0), 9);
    ck_assert_uint_eq(slot_counter(STATS_ROLE_SYNTH, 0, 1), 1);
    ck_assert_uint_eq(slot_counter(STATS_ROLE_GPUWORKER, 0, 0) + slot_counter(STATS_ROLE_GPUWORKER, 1, 0), 9);
    ck_assert_uint_eq(slot_counter(STATS_ROLE_FINALIZER, 0, 0), 8);
    ck_assert_uint_eq(slot_counter(STATS_ROLE_FINALIZER, 0, 1), 1);
    ck_assert_uint_eq(slot_counter(STATS_ROLE_FINALIZER, 0, 6), 1); /* verify_failed */
    ck_assert_uint_eq(slot_counter(STATS_ROLE_FINALIZER, 0, 3), 2); /* jobs done */
    /* j3 is decided by whichever stage ends its last partition (synth or finalizer);
     * j4 by the finalizer. */
    ck_assert_uint_ge(slot_counter(STATS_ROLE_FINALIZER, 0, 4), 1);
    ck_assert_uint_le(slot_counter(STATS_ROLE_FINALIZER, 0, 4), 2);
    ck_assert_uint_ge(slot_counter(STATS_ROLE_FINALIZER, 0, 5), 3); /* trims */
    {
        struct stats_snapshot s;
        uint64_t sum = 0;

        read_slot(STATS_ROLE_GPUWORKER, 0, &s, stage_now());
        for (int i = 0; i < STATS_MAX_STATES; i++) sum += s.state_ns[i];
        ck_assert_uint_eq(sum, s.wall_ns);
        ck_assert_str_eq(s.state_names[STATS_STAGE0 + 1], "ntt");
        ck_assert_str_eq(s.hist_names[0], "gap");
    }
}
END_TEST

TEST(test_pipeline_zkey_cache_misses_on_a_changed_file, 1)
{
    struct stage_opts o = { .instance = inst, .index = 0, .threads = 1 };
    struct stage st;
    const zkey *z1, *z2;
    char path[512], cmd[2200];
    struct timespec ts[2] = { { 0, UTIME_OMIT }, { 1000000, 0 } };
    struct stat sb;

    ck_assert_msg(stage_open(&st, &o, STATS_ROLE_FINALIZER, err, sizeof(err)) == 0, "%s", err);
    test_ref_fixture(fx, sizeof(fx), "bn128", "circuit_final.zkey");
    snprintf(path, sizeof(path), "%s/k.zkey", outdir);
    snprintf(cmd, sizeof(cmd), "cp '%s' '%s'", fx, path);
    ck_assert_int_eq(system(cmd), 0);
    ck_assert_msg(stage_zkey(&st, path, &z1, err, sizeof(err)) == 0, "%s", err);
    ck_assert_msg(stage_zkey(&st, path, &z2, err, sizeof(err)) == 0, "%s", err);
    ck_assert_ptr_eq(z1, z2);
    ck_assert_uint_eq(st.zc_clock, 2);
    /* Same bytes, new mtime: a miss, and the old entry for that path is dropped. */
    ck_assert_int_eq(utimensat(AT_FDCWD, path, ts, 0), 0);
    ck_assert_int_eq(stat(path, &sb), 0);
    ck_assert_msg(stage_zkey(&st, path, &z2, err, sizeof(err)) == 0, "%s", err);
    {
        int used = 0;

        for (int i = 0; i < PIPE_ZKEY_CACHE; i++)
            if (st.zc[i].used) {
                used++;
                ck_assert_int_eq(st.zc[i].mtim.tv_sec, sb.st_mtim.tv_sec);
            }
        ck_assert_int_eq(used, 1);
    }
    /* Replaced by another file under the same name: the new one is served. */
    test_ref_fixture(fx, sizeof(fx), "bn128-chain", "circuit_final.zkey");
    snprintf(cmd, sizeof(cmd), "cp '%s' '%s.new' && mv '%s.new' '%s'", fx, path, path, path);
    ck_assert_int_eq(system(cmd), 0);
    ck_assert_msg(stage_zkey(&st, path, &z2, err, sizeof(err)) == 0, "%s", err);
    ck_assert_uint_ne(z2->nvars, 0);
    {
        zkey ref;

        memset(&ref, 0, sizeof(ref));
        ck_assert_int_eq(zkey_open(&ref, fx, err, sizeof(err)), 0);
        ck_assert_uint_eq(z2->nvars, ref.nvars);
        zkey_close(&ref);
    }
    /* Missing file: an error naming it. */
    ck_assert_int_lt(stage_zkey(&st, "/nonexistent/k.zkey", &z2, err, sizeof(err)), 0);
    ck_assert_ptr_nonnull(strstr(err, "/nonexistent/k.zkey"));
    stage_close(&st);
}
END_TEST

/* preload / evict: the table (pipeline_circuit_request) and a stage applying it
 * (stage_circuits): pinned entries survive LRU, at most PIPE_PRELOAD_MAX, evict
 * unmaps, tombstones are reused only once acknowledged. */
TEST(test_pipeline_circuits_preload_pin_evict, 1)
{
    struct stage_opts o = { .instance = inst, .index = 0, .threads = 1 };
    struct stage st;
    const zkey *z;
    char k[6][300], cmd[sizeof(fx) + 320];
    uint64_t seq;
    int pinned = 0;

    ck_assert_msg(stage_open(&st, &o, STATS_ROLE_SYNTH, err, sizeof(err)) == 0, "%s", err);
    test_ref_fixture(fx, sizeof(fx), "bn128", "circuit_final.zkey");
    for (int i = 0; i < 6; i++) {
        snprintf(k[i], sizeof(k[i]), "%s/k%d.zkey", outdir, i);
        snprintf(cmd, sizeof(cmd), "cp '%s' '%.299s'", fx, k[i]);
        ck_assert_int_eq(system(cmd), 0);
    }
    ck_assert_int_eq(stage_circuits(&st, NULL, NULL), 0); /* empty table: nothing */
    for (int i = 0; i < 3; i++)
        ck_assert_int_eq(pipeline_circuit_request(&pl, PIPE_CIRCUIT_PRELOAD, k[i], 0, &seq, err, sizeof(err)),
                         0);
    ck_assert_int_eq(pipeline_circuit_request(&pl, PIPE_CIRCUIT_PRELOAD, k[3], 0, &seq, err, sizeof(err)),
                     -ENOSPC);
    ck_assert_int_eq(stage_circuits(&st, NULL, NULL), 3);
    ck_assert_int_eq(stage_circuits(&st, NULL, NULL), 0); /* unchanged: nothing */
    ck_assert_uint_eq(st.circ_ack->seq, seq);
    ck_assert_uint_eq(st.circ_ack->preloads, 3);
    ck_assert_uint_eq(st.circ_ack->failed, 0);
    /* Two other circuits through jobs: they share the one unpinned entry. */
    ck_assert_int_eq(stage_zkey(&st, k[3], &z, err, sizeof(err)), 0);
    ck_assert_int_eq(stage_zkey(&st, k[4], &z, err, sizeof(err)), 0);
    for (int i = 0; i < PIPE_ZKEY_CACHE; i++) {
        pinned += st.zc[i].pinned;
        ck_assert(st.zc[i].used && strcmp(st.zc[i].path, k[3]));
    }
    ck_assert_int_eq(pinned, 3);
    /* Evict k0: unmapped; its entry becomes a tombstone. */
    ck_assert_int_eq(pipeline_circuit_request(&pl, PIPE_CIRCUIT_EVICT, k[0], 0, &seq, err, sizeof(err)), 0);
    ck_assert_int_eq(stage_circuits(&st, NULL, NULL), 1);
    ck_assert_uint_eq(st.circ_ack->evicts, 1);
    for (int i = 0; i < PIPE_ZKEY_CACHE; i++) ck_assert(!st.zc[i].used || strcmp(st.zc[i].path, k[0]));
    /* 2 preloads + 1 tombstone: 5 more tombstones fill the table; the next needs an
     * acknowledged one (min_ack), and takes the oldest. */
    for (int i = 0; i < 5; i++) {
        char p[64];

        snprintf(p, sizeof(p), "/gone/%d.zkey", i);
        ck_assert_int_eq(pipeline_circuit_request(&pl, PIPE_CIRCUIT_EVICT, p, 0, &seq, err, sizeof(err)), 0);
    }
    ck_assert_int_eq(
        pipeline_circuit_request(&pl, PIPE_CIRCUIT_EVICT, "/gone/x.zkey", 0, &seq, err, sizeof(err)), -EBUSY);
    ck_assert_int_eq(pipeline_circuit_request(&pl, PIPE_CIRCUIT_EVICT, "/gone/x.zkey", st.circ_ack->seq, &seq,
                                              err, sizeof(err)),
                     0);
    for (int i = 0; i < PIPE_CIRCUITS; i++)
        ck_assert(pl.circuits->c[i].action != PIPE_CIRCUIT_EVICT || strcmp(pl.circuits->c[i].path, k[0]));
    /* A preload that cannot be loaded: failed bit, the rest applied. */
    ck_assert_int_eq(pipeline_circuit_request(&pl, PIPE_CIRCUIT_EVICT, k[1], 0, &seq, err, sizeof(err)), 0);
    ck_assert_int_eq(stage_circuits(&st, NULL, NULL), 7); /* 7 new tombstones */
    ck_assert_int_eq(pipeline_circuit_request(&pl, PIPE_CIRCUIT_PRELOAD, "/nonexistent/z.zkey",
                                              st.circ_ack->seq, &seq, err, sizeof(err)),
                     0);
    ck_assert_int_gt(stage_circuits(&st, NULL, NULL), 0);
    ck_assert_uint_ne(st.circ_ack->failed, 0);
    ck_assert_uint_eq(st.circ_ack->seq, seq);
    stage_close(&st);
}
END_TEST

TEST(test_pipeline_stale_hint_is_put_back, 1)
{
    struct pipe_submit_part parts[1] = { { "/w/one.wtns", NULL, NULL } };
    uint32_t j, p, v;

    ck_assert_int_eq(pipeline_submit_job(&pl, "/k.zkey", outdir, 0, 1, parts, 1, &j, err, sizeof(err)), 0);
    p = pl.data.jobtab.jobs[j].first_part;
    ck_assert_int_eq(ring_try_pop(pipeline_ring(&pl, PIPE_RING_SYNTH), &v), 0);
    /* As if a new submit were still filling this partition's entry. */
    barrier_store_release(&pipeline_partinfo(&pl, p)->job_id, 0);
    ck_assert_int_eq(ring_try_push(pipeline_ring(&pl, PIPE_RING_SYNTH), p), 0);
    stages_start();
    for (int i = 0; i < 100 && !slot_counter(STATS_ROLE_SYNTH, 0, 3); i++) usleep(10000);
    stages_stop();
    ck_assert_uint_eq(slot_counter(STATS_ROLE_SYNTH, 0, 3), 1);
    ck_assert_uint_eq(part_state(p), JOBTAB_QUEUED);
}
END_TEST

TEST(test_pipeline_synth_takes_higher_priority_first, 1)
{
    char zk[512], w[512];
    struct pipe_submit_part a[2], b[1];
    uint32_t ja, jb, v;

    test_ref_fixture(zk, sizeof(zk), "bn128", "circuit_final.zkey");
    test_ref_fixture(w, sizeof(w), "bn128", "witness.wtns");
    a[0] = (struct pipe_submit_part){ w, NULL, "a0" };
    a[1] = (struct pipe_submit_part){ w, NULL, "a1" };
    b[0] = (struct pipe_submit_part){ w, NULL, "b0" };
    /* The low-priority job is submitted first; its hints are ahead in the ring. */
    ck_assert_int_eq(pipeline_submit_job(&pl, zk, outdir, 0, 2, a, 1, &ja, err, sizeof(err)), 0);
    ck_assert_int_eq(pipeline_submit_job(&pl, zk, outdir, 5, 1, b, 2, &jb, err, sizeof(err)), 0);
    /* Only the synth runs: the READY hints land on the worker rings in its order,
     * alternating between the two (least-loaded first, worker 0 on a tie). */
    memset(&stages[0], 0, sizeof(stages[0]));
    stages[0].o = (struct stage_opts){ .instance = inst, .threads = 1, .stop = &stop };
    stages[0].run = synth_run;
    atomic_store(&stop, 0);
    ck_assert_int_eq(pthread_create(&stages[0].t, NULL, stage_thread_main, &stages[0]), 0);
    for (int i = 0; i < 1000 && slot_counter(STATS_ROLE_SYNTH, 0, 0) < 3; i++) usleep(10000);
    atomic_store(&stop, 1);
    pthread_join(stages[0].t, NULL);
    ck_assert_int_eq(stages[0].rc, 0);
    ck_assert_int_eq(ring_try_pop(pipeline_ring(&pl, PIPE_RING_WORKER(0)), &v), 0);
    ck_assert_uint_eq(v, pl.data.jobtab.jobs[jb].first_part);
    ck_assert_int_eq(ring_try_pop(pipeline_ring(&pl, PIPE_RING_WORKER(1)), &v), 0);
    ck_assert_uint_eq(v, pl.data.jobtab.jobs[ja].first_part);
    ck_assert_int_eq(ring_try_pop(pipeline_ring(&pl, PIPE_RING_WORKER(0)), &v), 0);
    ck_assert_uint_eq(v, pl.data.jobtab.jobs[ja].first_part + 1);
    /* The buffers stay with their READY partitions. */
    for (uint32_t i = 0; i < 2; i++)
        ck_assert_uint_eq(part_state(pl.data.jobtab.jobs[ja].first_part + i), JOBTAB_READY);
    ck_assert_uint_eq(
        pool_buf_owner(&pl.data.pool, pl.data.jobtab.parts[pl.data.jobtab.jobs[jb].first_part].buf),
        pool_owner_part(pl.data.jobtab.jobs[jb].first_part));
}
END_TEST

/* ---- the real executables ----------------------------------------------------------- */

static const char *bin_dir(char *dst, size_t len)
{
    const char *b = getenv("BUILD");

    snprintf(dst, len, "%s/bin", b && *b ? b : "build");
    return dst;
}

static pid_t spawn(const char *bin, const char *idx)
{
    char dir[256], path[512];
    pid_t pid;

    snprintf(path, sizeof(path), "%s/%s", bin_dir(dir, sizeof(dir)), bin);
    pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        execl(path, bin, "--instance", inst, "--index", idx, "--threads", "1", "--generation", "3",
              (char *)NULL);
        _exit(127);
    }
    return pid;
}

static int run_status(const char *bin, const char *a1, const char *a2, const char *a3)
{
    char dir[256], path[512];
    int st;
    pid_t pid;

    snprintf(path, sizeof(path), "%s/%s", bin_dir(dir, sizeof(dir)), bin);
    pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        if (!freopen("/dev/null", "w", stdout) || !freopen("/dev/null", "w", stderr)) _exit(127);
        execl(path, bin, a1, a2, a3, (char *)NULL);
        _exit(127);
    }
    ck_assert_int_eq(waitpid(pid, &st, 0), pid);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

/* Outputs go to $PIPELINE_OUT when set (tests/scripts/pipeline_stages.sh verifies them
 * with snarkjs), else to the scratch dir. Its tcase is "executables": that script runs
 * it alone (CK_RUN_CASE). */
TEST_AS("executables", test_pipeline_stage_binaries_prove_and_stop_on_sigterm, 1)
{
    static const char *bins[4] = { "cuzk-synth", "cuzk-gpuworker", "cuzk-gpuworker", "cuzk-finalizer" };
    static const char *idx[4] = { "0", "0", "1", "0" };
    static const enum stats_role roles[4] = { STATS_ROLE_SYNTH, STATS_ROLE_GPUWORKER, STATS_ROLE_GPUWORKER,
                                              STATS_ROLE_FINALIZER };
    const char *keep = getenv("PIPELINE_OUT");
    const char *out = keep && *keep ? keep : outdir;
    char dir[256], path[600], zk[2][512], w[2][512], r[512];
    struct pipe_submit_part parts[2][2];
    uint32_t j[2];
    pid_t pids[4];

    snprintf(path, sizeof(path), "%s/cuzk-finalizer", bin_dir(dir, sizeof(dir)));
    if (access(path, X_OK) != 0) {
        fprintf(stderr, "SKIP: %s not built\n", path);
        return;
    }
    ck_assert_int_eq(run_status("cuzk-synth", "--help", NULL, NULL), 0);
    ck_assert_int_eq(run_status("cuzk-gpuworker", "--bogus", NULL, NULL), CUZK_EXIT_USAGE);
    ck_assert_int_eq(run_status("cuzk-finalizer", "--index", "0", NULL), CUZK_EXIT_USAGE);
    ck_assert_int_eq(run_status("cuzk-synth", "--instance", "no-such-instance-x", NULL), CUZK_EXIT_SYSTEM);
    /* A doorbell number that is not an open descriptor is refused, not written to. */
    ck_assert_int_eq(run_status("cuzk-finalizer", "--doorbell-fd", "1000", NULL), CUZK_EXIT_USAGE);

    test_ref_fixture(zk[0], sizeof(zk[0]), "bn128", "circuit_final.zkey");
    test_ref_fixture(zk[1], sizeof(zk[1]), "bn128-chain", "circuit_final.zkey");
    test_ref_fixture(w[0], sizeof(w[0]), "bn128", "witness.wtns");
    test_ref_fixture(w[1], sizeof(w[1]), "bn128-chain", "witness.wtns");
    test_ref_fixture(r, sizeof(r), "bn128-chain", "circuit.r1cs");
    parts[0][0] = (struct pipe_submit_part){ w[0], NULL, "bn128-a" };
    parts[0][1] = (struct pipe_submit_part){ w[0], NULL, "bn128-b" };
    parts[1][0] = (struct pipe_submit_part){ w[1], r, "bn128-chain-a" };
    parts[1][1] = (struct pipe_submit_part){ w[1], r, "bn128-chain-b" };
    for (int i = 0; i < 4; i++) pids[i] = spawn(bins[i], idx[i]);
    for (int i = 0; i < 2; i++)
        ck_assert_msg(
            pipeline_submit_job(&pl, zk[i], out, 0, 2, parts[i], stage_now(), &j[i], err, sizeof(err)) == 0,
            "%s", err);
    ck_assert_uint_eq(wait_job(j[0]), JOBTAB_DONE);
    ck_assert_uint_eq(wait_job(j[1]), JOBTAB_DONE);
    /* Idle, each process still beats in its own slot: its heartbeat moves on while
     * it has no work. (No bound on how long a beat takes: a loaded machine may
     * delay one arbitrarily; Check's timeout is the hang guard.) */
    for (int i = 0; i < 4; i++) {
        struct stats_snapshot snap;
        uint64_t first;

        read_slot(roles[i], (uint32_t)atoi(idx[i]), &snap, stage_now());
        ck_assert_int_eq(snap.pid, pids[i]);
        first = snap.heartbeat_ns;
        do {
            usleep(20000);
            read_slot(roles[i], (uint32_t)atoi(idx[i]), &snap, stage_now());
        } while (snap.heartbeat_ns == first);
        ck_assert_msg(snap.heartbeat_ns > first, "%s %s: heartbeat went back", bins[i], idx[i]);
        ck_assert_uint_eq(snap.state, STATS_IDLE);
    }
    for (int i = 0; i < 4; i++) ck_assert_int_eq(kill(pids[i], SIGTERM), 0);
    for (int i = 0; i < 4; i++) {
        int st;

        ck_assert_int_eq(waitpid(pids[i], &st, 0), pids[i]);
        ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "%s exited with status %#x", bins[i], st);
    }
    for (int i = 0; i < 2; i++) {
        snprintf(path, sizeof(path), "%s/%s.proof.json", out, parts[0][i].name);
        ck_assert_int_eq(access(path, R_OK), 0);
        snprintf(path, sizeof(path), "%s/%s.public.json", out, parts[1][i].name);
        ck_assert_int_eq(access(path, R_OK), 0);
    }
}
END_TEST

/* stage_orphan_check: returns while cuzkd (here: this process, alive) lives; a
 * stage whose cuzkd is gone exits 111 at once without recording anything. */
TEST(test_pipeline_orphan_check_exits_only_without_supervisor, 1)
{
    struct pipe_config pc;
    struct pipeline opl;
    pid_t dead, child;
    int status;

    memset(&pc, 0, sizeof(pc));
    memset(&opl, 0, sizeof(opl));
    opl.config = &pc;
    pc.supervisor_pid = (uint32_t)getpid();
    stage_orphan_check(&opl); /* alive: returns */
    pc.supervisor_pid = 0;
    stage_orphan_check(&opl); /* unknown: returns */

    dead = fork();
    ck_assert_int_ge(dead, 0);
    if (dead == 0) _exit(0);
    ck_assert_int_eq(waitpid(dead, NULL, 0), dead); /* reaped: its pid names no one */
    pc.supervisor_pid = (uint32_t)dead;
    child = fork();
    ck_assert_int_ge(child, 0);
    if (child == 0) {
        stage_orphan_check(&opl);
        _exit(0); /* returned: wrong */
    }
    ck_assert_int_eq(waitpid(child, &status, 0), child);
    ck_assert(WIFEXITED(status));
    ck_assert_int_eq(WEXITSTATUS(status), CUZK_EXIT_SYSTEM);
}
END_TEST

int main(void)
{
    const struct test_opts o = { .setup = setup, .teardown = teardown, .timeout = 300 };

    return test_main("pipeline", &o);
}
