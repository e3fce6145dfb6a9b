/* test_jobtab.c — job table: CAS transitions, completion decided once, rollback. */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "shm/shmlayout.h"

#include "helper_shm.h"
#include "helper_test.h"

static char inst[64];
static struct shmlayout_data d;

static void setup(void)
{
    const struct shmlayout_config cfg = test_shm_config(8, 3, 10, 4, 4096);

    test_shm_create(&d, inst, sizeof(inst), "j", &cfg);
}

static void teardown(void)
{
    test_shm_destroy(&d, inst);
}

static uint32_t state_of(uint32_t p)
{
    return jobtab_word_state(jobtab_part_load(&d.jobtab, p));
}

TEST(test_jobtab_moves_are_cas_on_state_and_owner, 1)
{
    struct jobtab *jt = &d.jobtab;
    uint32_t j, p;
    uint64_t seen, w0;

    ck_assert_int_eq(jobtab_job_add(jt, 3, "/k.zkey", "/out", 1, &j), 0);
    ck_assert_str_eq(jt->jobs[j].zkey_path, "/k.zkey");
    p = jt->jobs[j].first_part;
    ck_assert_uint_eq(state_of(p), JOBTAB_QUEUED);
    w0 = jobtab_part_load(jt, p);
    ck_assert_int_eq(jobtab_part_move(jt, p, JOBTAB_QUEUED, 0, JOBTAB_SYNTH, 10, NULL), 0);
    /* A second claimant loses and learns who holds it. */
    ck_assert_int_eq(jobtab_part_move(jt, p, JOBTAB_QUEUED, 0, JOBTAB_SYNTH, 11, &seen), -EAGAIN);
    ck_assert_uint_eq(jobtab_word_pid(seen), 10);
    ck_assert_uint_eq(jobtab_word_state(seen), JOBTAB_SYNTH);
    /* Only the owner pid moves it on. */
    ck_assert_int_eq(jobtab_part_move(jt, p, JOBTAB_SYNTH, 11, JOBTAB_READY, 0, NULL), -EAGAIN);
    ck_assert_int_eq(jobtab_part_move(jt, p, JOBTAB_SYNTH, 10, JOBTAB_READY, 0, NULL), 0);
    ck_assert_uint_eq(jobtab_word_gen(jobtab_part_load(jt, p)), jobtab_word_gen(w0) + 2);
    ck_assert_uint_eq(jt->parts[p].attempts, 1);
    ck_assert_int_eq(jobtab_part_fail(jt, p, JOBTAB_READY, 0, "witness has 3 values, want 4"), 0);
    ck_assert_uint_eq(state_of(p), JOBTAB_FAILED);
    ck_assert_str_eq(jt->parts[p].reason, "witness has 3 values, want 4");
    ck_assert_str_eq(jobtab_state_name(JOBTAB_PROVING), "proving");
}
END_TEST

TEST(test_jobtab_generation_defeats_aba, 1)
{
    struct jobtab *jt = &d.jobtab;
    uint32_t j, p;
    uint64_t stale, w;

    jobtab_job_add(jt, 1, NULL, NULL, 1, &j);
    p = jt->jobs[j].first_part;
    stale = jobtab_part_load(jt, p);
    jobtab_part_move(jt, p, JOBTAB_QUEUED, 0, JOBTAB_SYNTH, 5, NULL);
    jobtab_part_move(jt, p, JOBTAB_SYNTH, 5, JOBTAB_QUEUED, 0, NULL);
    /* Same state and pid as the stale word, but a raw CAS with it must fail. */
    w = stale;
    ck_assert(!atomic_compare_exchange_strong(&jt->parts[p].word, &w, jobtab_word(JOBTAB_SYNTH, 0, 6)));
    ck_assert_uint_eq(jobtab_word_state(w), JOBTAB_QUEUED);
    ck_assert_uint_ne(jobtab_word_gen(w), jobtab_word_gen(stale));
}
END_TEST

TEST(test_jobtab_job_done_decided_by_exactly_one_call, 1)
{
    struct jobtab *jt = &d.jobtab;
    uint32_t j, f, done, failed;

    jobtab_job_add(jt, 2, NULL, NULL, 1, &j);
    f = jt->jobs[j].first_part;
    ck_assert_int_eq(jobtab_job_try_complete(jt, j), 0);
    for (uint32_t p = f; p < f + 2; p++) {
        jobtab_part_move(jt, p, JOBTAB_QUEUED, 0, JOBTAB_FINAL, 7, NULL);
        ck_assert_int_eq(jobtab_part_move(jt, p, JOBTAB_FINAL, 7, JOBTAB_DONE, 0, NULL), 0);
        /* DONE is final: a restarted finalizer cannot decide it again. */
        ck_assert_int_eq(jobtab_part_move(jt, p, JOBTAB_FINAL, 7, JOBTAB_DONE, 0, NULL), -EAGAIN);
    }
    ck_assert_int_eq(jobtab_job_counts(jt, j, &done, &failed), 0);
    ck_assert_uint_eq(done, 2);
    ck_assert_uint_eq(failed, 0);
    ck_assert_int_eq(jobtab_job_try_complete(jt, j), 1);
    ck_assert_int_eq(jobtab_job_try_complete(jt, j), 0);
    ck_assert_uint_eq(jobtab_word_state(jt->jobs[j].word), JOBTAB_DONE);
    ck_assert_int_eq(jobtab_job_retire(jt, j), 0);
    ck_assert_uint_eq(state_of(f), JOBTAB_FREE);
}
END_TEST

TEST(test_jobtab_add_reports_full_and_reuses_retired, 1)
{
    struct jobtab *jt = &d.jobtab;
    uint32_t a, b, c;

    ck_assert_int_eq(jobtab_job_add(jt, 6, NULL, NULL, 1, &a), 0);
    ck_assert_int_eq(jobtab_job_add(jt, 5, NULL, NULL, 1, &b), -ENOSPC);
    ck_assert_int_eq(jobtab_job_add(jt, 4, NULL, NULL, 1, &b), 0);
    ck_assert_int_eq(jobtab_job_retire(jt, a), -EBUSY);
    for (uint32_t p = 0; p < 6; p++)
        jobtab_part_fail(jt, jt->jobs[a].first_part + p, JOBTAB_QUEUED, 0, "cancelled");
    ck_assert_int_eq(jobtab_job_try_complete(jt, a), 1);
    ck_assert_uint_eq(jobtab_word_state(jt->jobs[a].word), JOBTAB_FAILED);
    ck_assert_ptr_nonnull(strstr(jt->jobs[a].reason, "6 of 6"));
    ck_assert_int_eq(jobtab_job_retire(jt, a), 0);
    ck_assert_int_eq(jobtab_job_add(jt, 5, NULL, NULL, 1, &c), 0);
    ck_assert_uint_ne(jt->jobs[c].id, jt->jobs[b].id);
}
END_TEST

/* A long failure reason (the fingerprint mismatch names two client paths of up to
 * JOBTAB_PATH_LEN) arrives whole; only past JOBTAB_REASON_LEN is it cut, at a UTF-8
 * character boundary, and it says so. The table kept 95 bytes before. */
TEST(test_jobtab_long_reason_whole_or_cut_with_marker, 1)
{
    struct jobtab *jt = &d.jobtab;
    char path[JOBTAB_PATH_LEN], msg[2 * JOBTAB_REASON_LEN];
    const char *r;
    uint32_t j, p;
    size_t n;

    memset(path, 'z', sizeof(path) - 1);
    memcpy(path, "/", 1);
    path[sizeof(path) - 1] = 0;
    snprintf(msg, sizeof(msg),
             "witness generator %.*s.wgen was built for another circuit than "
             "zkey %s (same curve and witness size, other constraints: circuit fingerprints "
             "0123456789abcdef and fedcba9876543210)",
             JOBTAB_PATH_LEN - 6, path + 1, path);
    ck_assert_int_eq(jobtab_job_add(jt, 2, NULL, NULL, 1, &j), 0);
    p = jt->jobs[j].first_part;
    ck_assert_int_eq(jobtab_part_fail(jt, p, JOBTAB_QUEUED, 0, msg), 0);
    ck_assert_str_eq(jt->parts[p].reason, msg);

    /* Twice the room, in 2-byte characters with a space every 31 bytes: cut at a
     * character boundary near a space, with the marker. */
    n = 0;
    for (unsigned c = 0; n + 2 < sizeof(msg); c++) {
        if (c % 16 == 15)
            msg[n++] = ' ';
        else
            msg[n++] = (char)0xc3, msg[n++] = (char)0xa9; /* é */
    }
    msg[n] = 0;
    ck_assert_int_eq(jobtab_part_fail(jt, p + 1, JOBTAB_QUEUED, 0, msg), 0);
    r = jt->parts[p + 1].reason;
    n = strlen(r);
    ck_assert_uint_lt(n, JOBTAB_REASON_LEN);
    ck_assert_uint_gt(n, JOBTAB_REASON_LEN - 40);
    ck_assert_str_eq(r + n - strlen(JOBTAB_REASON_CUT), JOBTAB_REASON_CUT);
    n -= strlen(JOBTAB_REASON_CUT);
    ck_assert_int_eq(memcmp(r, msg, n), 0);
    ck_assert_msg(msg[n] == ' ', "cut at byte %zu, not at a space", n);
    ck_assert_msg(((unsigned char)msg[n - 1] & 0xc0) != 0xc0, "cut inside a character");
}
END_TEST

TEST(test_jobtab_reclaim_rolls_back_to_last_intact_state, 1)
{
    struct jobtab *jt = &d.jobtab;
    struct pool *pl = &d.pool;
    const uint32_t dead = 4242, live = 4343;
    uint32_t j, f, out[10], b1, b2, b3, used, fr;

    jobtab_job_add(jt, 6, NULL, NULL, 1, &j);
    f = jt->jobs[j].first_part;
    /* f+0: SYNTH(dead) with a buffer already handed to the partition */
    jobtab_part_move(jt, f, JOBTAB_QUEUED, 0, JOBTAB_SYNTH, dead, NULL);
    pool_buf_alloc(pl, -1, dead, 0, &b1);
    jt->parts[f].buf = b1;
    pool_buf_transfer(pl, b1, dead, pool_owner_part(f));
    /* f+1: PROVING(dead), input buffer still held for it */
    pool_buf_alloc(pl, -1, 1, 0, &b2);
    pool_buf_transfer(pl, b2, 1, pool_owner_part(f + 1));
    jt->parts[f + 1].buf = b2;
    jobtab_part_move(jt, f + 1, JOBTAB_QUEUED, 0, JOBTAB_READY, 0, NULL);
    jobtab_part_move(jt, f + 1, JOBTAB_READY, 0, JOBTAB_PROVING, dead, NULL);
    /* f+2: PROVING(dead), input buffer already released (reused by another part) */
    pool_buf_alloc(pl, -1, 1, 0, &b3);
    pool_buf_transfer(pl, b3, 1, pool_owner_part(f + 5));
    jt->parts[f + 2].buf = b3;
    jobtab_part_move(jt, f + 2, JOBTAB_QUEUED, 0, JOBTAB_PROVING, dead, NULL);
    /* f+3: FINAL(dead); f+4: PROVING(live) untouched; f+5 QUEUED untouched */
    jobtab_part_move(jt, f + 3, JOBTAB_QUEUED, 0, JOBTAB_FINAL, dead, NULL);
    jobtab_part_move(jt, f + 4, JOBTAB_QUEUED, 0, JOBTAB_PROVING, live, NULL);

    ck_assert_int_eq(jobtab_reclaim_pid(jt, pl, dead, out, 10), 4);
    ck_assert_uint_eq(state_of(f), JOBTAB_QUEUED);
    ck_assert_uint_eq(jt->parts[f].buf, JOBTAB_NONE);
    ck_assert_uint_eq(pool_buf_owner(pl, b1), POOL_OWNER_FREE);
    ck_assert_uint_eq(state_of(f + 1), JOBTAB_READY);
    ck_assert_uint_eq(jt->parts[f + 1].buf, b2);
    ck_assert_uint_eq(state_of(f + 2), JOBTAB_QUEUED);
    ck_assert_uint_eq(pool_buf_owner(pl, b3), pool_owner_part(f + 5));
    ck_assert_uint_eq(state_of(f + 3), JOBTAB_PROVED);
    ck_assert_uint_eq(state_of(f + 4), JOBTAB_PROVING);
    ck_assert_uint_eq(out[0], f);
    ck_assert_uint_eq(out[3], f + 3);
    ck_assert_int_eq(jobtab_reclaim_pid(jt, pl, dead, out, 10), 0);
    pool_node_counts(pl, -1, &used, &fr);
    ck_assert_uint_eq(used, 2);
    /* A short out array: the rest come on the next call. */
    jobtab_part_move(jt, f + 5, JOBTAB_QUEUED, 0, JOBTAB_SYNTH, dead, NULL);
    jobtab_part_move(jt, f, JOBTAB_QUEUED, 0, JOBTAB_SYNTH, dead, NULL);
    ck_assert_int_eq(jobtab_reclaim_pid(jt, pl, dead, out, 1), 1);
    ck_assert_int_eq(jobtab_reclaim_pid(jt, pl, dead, out, 1), 1);
    ck_assert_int_eq(jobtab_reclaim_pid(jt, pl, dead, out, 1), 0);
}
END_TEST

int main(void)
{
    const struct test_opts o = { .setup = setup, .teardown = teardown };

    return test_main("jobtab", &o);
}
