/* test_child_fsm.c — the stage lifecycle state machine (child_fsm.h) driven through
 * recovery sequences without forking: each step checks the state it moves to and the
 * actions it asks cuzkd for. */
#include <check.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>

#include "supervisor/child_fsm.h"
#include "helper_test.h"

#define S  1000000000ull
#define MS 1000000ull

/* Wait statuses as waitpid reports them. */
#define KILLED_BY(sig) ((uint64_t)(sig))
#define EXIT_CODE(c)   ((uint64_t)((c) << 8))

static const struct child_fsm_cfg cfg = { .stall_ns = 60 * S };

/* One step, checked: expected state after and exact action set. */
static struct child_step step(struct child_fsm *f, enum child_event ev, uint64_t t, uint64_t arg,
                              enum child_state to, unsigned actions)
{
    struct child_step r = child_fsm_step(f, &cfg, ev, t, arg);

    ck_assert_msg(r.to == to && f->state == to, "event %d at %llu: state %s, expected %s", ev,
                  (unsigned long long)t, child_state_name(f->state), child_state_name(to));
    ck_assert_msg(r.actions == actions, "event %d at %llu: actions 0x%x, expected 0x%x", ev,
                  (unsigned long long)t, r.actions, actions);
    return r;
}

/* A fresh child started at t and seen beating at t + 1 ms: RUNNING. */
static void start_running(struct child_fsm *f, uint64_t t)
{
    step(f, CHILD_EV_SPAWNED, t, 0, CHILD_STARTING, 0);
    step(f, CHILD_EV_TIMER, t + MS, t + MS, CHILD_RUNNING, 0);
}

TEST(test_first_start_and_heartbeat, 1)
{
    struct child_fsm f;

    child_fsm_init(&f);
    ck_assert_int_eq(f.state, CHILD_BACKOFF);
    ck_assert_uint_ne(f.deadline_ns, 0);
    step(&f, CHILD_EV_TIMER, 5 * S, 0, CHILD_BACKOFF, CHILD_ACT_START);
    step(&f, CHILD_EV_SPAWNED, 5 * S, 0, CHILD_STARTING, 0);
    /* No heartbeat yet: still starting, looked at again soon. */
    step(&f, CHILD_EV_TIMER, 5 * S + 100 * MS, 0, CHILD_STARTING, 0);
    ck_assert_uint_eq(f.deadline_ns, 5 * S + 200 * MS);
    /* A heartbeat older than this run's start is not this run's. */
    step(&f, CHILD_EV_TIMER, 5 * S + 200 * MS, 4 * S, CHILD_STARTING, 0);
    step(&f, CHILD_EV_TIMER, 5 * S + 300 * MS, 5 * S + 250 * MS, CHILD_RUNNING, 0);
    /* Running: next look at the stall deadline only. */
    ck_assert_uint_eq(f.deadline_ns, 5 * S + 250 * MS + cfg.stall_ns);
    /* Start failed: retried in 1 s. */
    child_fsm_init(&f);
    step(&f, CHILD_EV_TIMER, 1 * S, 0, CHILD_BACKOFF, CHILD_ACT_START);
    step(&f, CHILD_EV_SPAWN_FAILED, 1 * S, 0, CHILD_BACKOFF, 0);
    ck_assert_uint_eq(f.restart_at_ns, 2 * S);
    step(&f, CHILD_EV_TIMER, 1 * S + 500 * MS, 0, CHILD_BACKOFF, 0);
    step(&f, CHILD_EV_TIMER, 2 * S, 0, CHILD_BACKOFF, CHILD_ACT_START);
}
END_TEST

/* A crash (SIGSEGV) while holding partitions, long after start: reclaim, count a try
 * against what it held, restart at once. An error exit counts, SIGINT does not. */
TEST(test_crash_while_holding_a_partition, 1)
{
    struct child_fsm f;
    struct child_step r;

    child_fsm_init(&f);
    start_running(&f, 100 * S);
    r = step(&f, CHILD_EV_EXITED, 200 * S, KILLED_BY(SIGSEGV), CHILD_BACKOFF,
             CHILD_ACT_RECLAIM | CHILD_ACT_CRASH | CHILD_ACT_START);
    ck_assert_int_eq(r.hung, 0);
    ck_assert_uint_eq(f.restarts, 1);
    ck_assert_uint_eq(f.fast_deaths, 0);
    step(&f, CHILD_EV_SPAWNED, 200 * S, 0, CHILD_STARTING, 0);
    step(&f, CHILD_EV_EXITED, 300 * S, EXIT_CODE(3), CHILD_BACKOFF,
         CHILD_ACT_RECLAIM | CHILD_ACT_CRASH | CHILD_ACT_START);
    step(&f, CHILD_EV_SPAWNED, 300 * S, 0, CHILD_STARTING, 0);
    step(&f, CHILD_EV_EXITED, 400 * S, KILLED_BY(SIGINT), CHILD_BACKOFF, CHILD_ACT_RECLAIM | CHILD_ACT_START);
    step(&f, CHILD_EV_SPAWNED, 400 * S, 0, CHILD_STARTING, 0);
    step(&f, CHILD_EV_EXITED, 500 * S, EXIT_CODE(0), CHILD_BACKOFF, CHILD_ACT_RECLAIM | CHILD_ACT_START);
    ck_assert_uint_eq(f.restarts, 4);
}
END_TEST

/* Deaths within 10 s of start, in a row: 0.25 s doubling, capped at 30 s; a stage that
 * then lives 10 s resets the count. */
TEST(test_fast_deaths_back_off_then_cap, 1)
{
    static const uint64_t want[] = { 250 * MS, 500 * MS, 1 * S,  2 * S,  4 * S,
                                     8 * S,    16 * S,   30 * S, 30 * S, 30 * S };
    struct child_fsm f;
    uint64_t t = 1000 * S;

    child_fsm_init(&f);
    step(&f, CHILD_EV_SPAWNED, t, 0, CHILD_STARTING, 0);
    for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
        struct child_step r;

        t += 2 * S;
        r = step(&f, CHILD_EV_EXITED, t, KILLED_BY(SIGABRT), CHILD_BACKOFF,
                 CHILD_ACT_RECLAIM | CHILD_ACT_CRASH | CHILD_ACT_BACKOFF);
        ck_assert_uint_eq(r.delay_ns, want[i]);
        ck_assert_uint_eq(f.fast_deaths, i + 1);
        ck_assert_uint_eq(f.restart_at_ns, t + want[i]);
        ck_assert_uint_eq(f.deadline_ns, t + want[i]);
        /* Not before it is due. */
        step(&f, CHILD_EV_TIMER, t + want[i] - 1, 0, CHILD_BACKOFF, 0);
        t += want[i];
        step(&f, CHILD_EV_TIMER, t, 0, CHILD_BACKOFF, CHILD_ACT_START);
        step(&f, CHILD_EV_SPAWNED, t, 0, CHILD_STARTING, 0);
    }
    /* Lived 10 s: restarted at once, count reset. */
    t += CHILD_FAST_DEATH_NS;
    step(&f, CHILD_EV_EXITED, t, KILLED_BY(SIGABRT), CHILD_BACKOFF,
         CHILD_ACT_RECLAIM | CHILD_ACT_CRASH | CHILD_ACT_START);
    ck_assert_uint_eq(f.fast_deaths, 0);
}
END_TEST

/* No heartbeat for --stall-timeout: SIGKILL once; the death counts as a hung crash and
 * the stage is restarted. */
TEST(test_stall_kill_restart, 1)
{
    struct child_fsm f;
    struct child_step r;
    uint64_t t0 = 50 * S, hb = t0 + 20 * S;

    child_fsm_init(&f);
    start_running(&f, t0);
    step(&f, CHILD_EV_TIMER, t0 + 30 * S, hb, CHILD_RUNNING, 0);
    ck_assert_uint_eq(f.deadline_ns, hb + cfg.stall_ns);
    /* One ns early: not yet. */
    step(&f, CHILD_EV_TIMER, hb + cfg.stall_ns - 1, hb, CHILD_RUNNING, 0);
    r = step(&f, CHILD_EV_TIMER, hb + cfg.stall_ns, hb, CHILD_STALLED, CHILD_ACT_KILL);
    ck_assert_uint_eq(r.stale_ns, cfg.stall_ns);
    ck_assert_uint_eq(f.deadline_ns, 0);
    /* Killed once only. */
    step(&f, CHILD_EV_TIMER, hb + 2 * cfg.stall_ns, hb, CHILD_STALLED, 0);
    /* Its SIGKILL death: a crash (even though SIGKILL), hung; it lived > 10 s. */
    r = step(&f, CHILD_EV_EXITED, hb + cfg.stall_ns + MS, KILLED_BY(SIGKILL), CHILD_BACKOFF,
             CHILD_ACT_RECLAIM | CHILD_ACT_CRASH | CHILD_ACT_START);
    ck_assert_int_eq(r.hung, 1);
    /* The new run starts unkilled, watched from its own start. */
    step(&f, CHILD_EV_SPAWNED, 200 * S, 0, CHILD_STARTING, 0);
    ck_assert_int_eq(f.stall_killed, 0);
    step(&f, CHILD_EV_TIMER, 200 * S + cfg.stall_ns, 0, CHILD_STALLED, CHILD_ACT_KILL);
    /* Stall check off: never killed, no deadline while running. */
    {
        static const struct child_fsm_cfg off = { 0 };
        struct child_fsm g;

        child_fsm_init(&g);
        child_fsm_step(&g, &off, CHILD_EV_SPAWNED, S, 0);
        child_fsm_step(&g, &off, CHILD_EV_TIMER, 2 * S, 2 * S);
        ck_assert_int_eq(g.state, CHILD_RUNNING);
        ck_assert_uint_eq(g.deadline_ns, 0);
        ck_assert_uint_eq(child_fsm_step(&g, &off, CHILD_EV_TIMER, 1000 * S, 0).actions, 0);
    }
}
END_TEST

/* The same partition crashes its stage --max-attempts (3) times: poisoned on the 3rd. */
TEST(test_repeated_crash_poisons, 1)
{
    struct child_fsm f;
    uint16_t crashes = 0;
    uint64_t t = 10 * S;

    child_fsm_init(&f);
    for (int i = 1; i <= 3; i++) {
        struct child_step r;

        step(&f, CHILD_EV_SPAWNED, t, 0, CHILD_STARTING, 0);
        t += 20 * S;
        r = child_fsm_step(&f, &cfg, CHILD_EV_EXITED, t, KILLED_BY(SIGKILL));
        ck_assert(r.actions & CHILD_ACT_CRASH);
        ck_assert_int_eq(child_fsm_part_crash(&crashes, 3), i == 3);
    }
    ck_assert_uint_eq(crashes, 3);
    /* --max-attempts 1: the first crash poisons. */
    crashes = 0;
    ck_assert_int_eq(child_fsm_part_crash(&crashes, 1), 1);
}
END_TEST

/* `cuzk restart`: SIGTERM, and its death (any status, even fast, even after a stall
 * kill) counts nothing and restarts at once; in backoff, it starts at once. */
TEST(test_restart_requested, 1)
{
    struct child_fsm f;
    uint64_t t = 10 * S;

    child_fsm_init(&f);
    start_running(&f, t);
    step(&f, CHILD_EV_RESTART, t + S, 0, CHILD_STOPPING, CHILD_ACT_TERM);
    step(&f, CHILD_EV_EXITED, t + 2 * S, KILLED_BY(SIGTERM), CHILD_BACKOFF,
         CHILD_ACT_RECLAIM | CHILD_ACT_START);
    ck_assert_uint_eq(f.fast_deaths, 0);
    /* Restart while backing off from fast deaths: now, and the count forgotten. */
    step(&f, CHILD_EV_SPAWNED, t + 2 * S, 0, CHILD_STARTING, 0);
    step(&f, CHILD_EV_EXITED, t + 3 * S, KILLED_BY(SIGSEGV), CHILD_BACKOFF,
         CHILD_ACT_RECLAIM | CHILD_ACT_CRASH | CHILD_ACT_BACKOFF);
    ck_assert_uint_eq(f.fast_deaths, 1);
    step(&f, CHILD_EV_RESTART, t + 3 * S + MS, 0, CHILD_BACKOFF, CHILD_ACT_START);
    ck_assert_uint_eq(f.fast_deaths, 0);
    ck_assert_uint_eq(f.restart_at_ns, t + 3 * S + MS);
    /* A stalled stage asked to restart: not counted, not hung. */
    step(&f, CHILD_EV_SPAWNED, 100 * S, 0, CHILD_STARTING, 0);
    step(&f, CHILD_EV_TIMER, 100 * S + cfg.stall_ns, 0, CHILD_STALLED, CHILD_ACT_KILL);
    step(&f, CHILD_EV_RESTART, 100 * S + cfg.stall_ns, 0, CHILD_STOPPING, CHILD_ACT_TERM);
    step(&f, CHILD_EV_EXITED, 100 * S + cfg.stall_ns + MS, KILLED_BY(SIGKILL), CHILD_BACKOFF,
         CHILD_ACT_RECLAIM | CHILD_ACT_START);
    /* Asked, then hung while finishing its partition: killed once, still not counted. */
    step(&f, CHILD_EV_SPAWNED, 500 * S, 0, CHILD_STARTING, 0);
    step(&f, CHILD_EV_RESTART, 500 * S, 0, CHILD_STOPPING, CHILD_ACT_TERM);
    step(&f, CHILD_EV_TIMER, 500 * S + cfg.stall_ns, 0, CHILD_STOPPING, CHILD_ACT_KILL);
    step(&f, CHILD_EV_TIMER, 500 * S + 2 * cfg.stall_ns, 0, CHILD_STOPPING, 0);
    step(&f, CHILD_EV_EXITED, 500 * S + 2 * cfg.stall_ns, KILLED_BY(SIGKILL), CHILD_BACKOFF,
         CHILD_ACT_RECLAIM | CHILD_ACT_START);
}
END_TEST

/* Shutdown: a live stage gets SIGTERM and is not restarted after its death (counted
 * nothing); one in backoff is never started again; no stall checks meanwhile. */
TEST(test_shutdown, 1)
{
    struct child_fsm f;
    uint32_t restarts;

    child_fsm_init(&f);
    start_running(&f, 10 * S);
    step(&f, CHILD_EV_SHUTDOWN, 20 * S, 0, CHILD_STOPPING, CHILD_ACT_TERM);
    ck_assert_uint_eq(f.deadline_ns, 0);
    step(&f, CHILD_EV_TIMER, 20 * S + 2 * cfg.stall_ns, 0, CHILD_STOPPING, 0);
    restarts = f.restarts;
    step(&f, CHILD_EV_EXITED, 25 * S, KILLED_BY(SIGSEGV), CHILD_DEAD, CHILD_ACT_RECLAIM);
    ck_assert_uint_eq(f.restarts, restarts);
    step(&f, CHILD_EV_RESTART, 26 * S, 0, CHILD_DEAD, 0);
    step(&f, CHILD_EV_TIMER, 1000 * S, 0, CHILD_DEAD, 0);

    /* Shutdown while backing off. */
    child_fsm_init(&f);
    step(&f, CHILD_EV_SPAWNED, 10 * S, 0, CHILD_STARTING, 0);
    step(&f, CHILD_EV_EXITED, 11 * S, KILLED_BY(SIGABRT), CHILD_BACKOFF,
         CHILD_ACT_RECLAIM | CHILD_ACT_CRASH | CHILD_ACT_BACKOFF);
    step(&f, CHILD_EV_SHUTDOWN, 11 * S + MS, 0, CHILD_DEAD, 0);
    ck_assert_uint_eq(f.deadline_ns, 0);
    step(&f, CHILD_EV_TIMER, 100 * S, 0, CHILD_DEAD, 0);
    step(&f, CHILD_EV_RESTART, 100 * S, 0, CHILD_DEAD, 0);
    step(&f, CHILD_EV_SPAWNED, 100 * S, 0, CHILD_DEAD, 0);
}
END_TEST

/* Events without a move change nothing. */
TEST(test_no_move_changes_nothing, 1)
{
    struct child_fsm f, before;

    child_fsm_init(&f);
    start_running(&f, S);
    before = f;
    step(&f, CHILD_EV_SPAWNED, 2 * S, 0, CHILD_RUNNING, 0);
    step(&f, CHILD_EV_SPAWN_FAILED, 2 * S, 0, CHILD_RUNNING, 0);
    ck_assert_mem_eq(&f, &before, sizeof(f));
    child_fsm_init(&f);
    before = f;
    step(&f, CHILD_EV_EXITED, 2 * S, 0, CHILD_BACKOFF, 0);
    ck_assert_mem_eq(&f, &before, sizeof(f));
    ck_assert_str_eq(child_state_name(CHILD_STALLED), "stalled");
}
END_TEST

int main(void)
{
    const struct test_opts o = { .timeout = 10 };

    return test_main("child_fsm", &o);
}
