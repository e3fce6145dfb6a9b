/* test_daemon_fsm.c — cuzkd's own lifecycle (daemon_fsm.h) driven through drains and
 * shutdowns without forking a daemon: each step checks the state it moves to and the
 * actions it asks the loop for. */
#include <check.h>
#include <stdlib.h>

#include "supervisor/daemon_fsm.h"
#include "helper_test.h"

#define S 1000000000ull

static const struct daemon_fsm_cfg cfg = { .drain_ns = 30 * S, .grace_ns = 10 * S };

/* One move of a run: the event, what the caller saw, the state it must move to and
 * the exact actions it must ask for. */
struct move {
    enum daemon_event ev;
    uint64_t t;
    unsigned seen;
    enum daemon_state to;
    unsigned actions;
};

/* The moves of run, in order, each checked. */
static void run(struct daemon_fsm *f, const struct move *m, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        struct daemon_step r = daemon_fsm_step(f, &cfg, m[i].ev, m[i].t, m[i].seen);

        ck_assert_msg(r.to == m[i].to && f->state == m[i].to, "move %zu (event %d): state %s, expected %s", i,
                      m[i].ev, daemon_state_name(f->state), daemon_state_name(m[i].to));
        ck_assert_msg(r.actions == m[i].actions, "move %zu (event %d): actions 0x%x, expected 0x%x", i,
                      m[i].ev, r.actions, m[i].actions);
    }
}

#define RUN(f, ...)                               \
    do {                                          \
        const struct move m_[] = { __VA_ARGS__ }; \
        run(f, m_, sizeof(m_) / sizeof(m_[0]));   \
    } while (0)

#define BUSY  DAEMON_SEEN_BUSY
#define ALIVE DAEMON_SEEN_ALIVE

/* A drain refuses submits and stops nothing; asked again, it says nothing more. */
TEST(test_drain_refuses_submits_only, 1)
{
    struct daemon_fsm f;

    daemon_fsm_init(&f);
    ck_assert(!daemon_fsm_draining(&f));
    RUN(&f, { DAEMON_EV_TIMER, 1 * S, BUSY | ALIVE, DAEMON_RUNNING, 0 },
        { DAEMON_EV_DRAIN, 2 * S, 0, DAEMON_DRAINING, DAEMON_ACT_DRAIN });
    ck_assert(daemon_fsm_draining(&f) && !daemon_fsm_stopping(&f));
    RUN(&f, { DAEMON_EV_DRAIN, 3 * S, 0, DAEMON_DRAINING, 0 });
    /* Idle or not, time passing does not stop a drained daemon. */
    RUN(&f, { DAEMON_EV_TIMER, 1000 * S, 0, DAEMON_DRAINING, 0 },
        { DAEMON_EV_TIMER, 2000 * S, BUSY | ALIVE, DAEMON_DRAINING, 0 });
    ck_assert(!daemon_fsm_finished(&f, 0));
}
END_TEST

/* Shutdown with a job running: it gets the drain wait, then the stages are told to
 * stop (late: jobs still ran), then SIGKILL each grace period while one lives. */
TEST(test_shutdown_waits_for_running_jobs_then_kills, 1)
{
    struct daemon_fsm f;

    daemon_fsm_init(&f);
    RUN(&f, { DAEMON_EV_STOP, 10 * S, 0, DAEMON_STOPPING, DAEMON_ACT_STOP });
    ck_assert(daemon_fsm_draining(&f) && daemon_fsm_stopping(&f) && !daemon_fsm_killing(&f));
    /* A second stop (SIGTERM after `cuzk shutdown`) changes nothing, deadline included. */
    RUN(&f, { DAEMON_EV_STOP, 20 * S, 0, DAEMON_STOPPING, 0 });
    ck_assert_uint_eq(f.deadline_ns, 40 * S);
    RUN(&f, { DAEMON_EV_DRAIN, 21 * S, 0, DAEMON_STOPPING, 0 },
        { DAEMON_EV_TIMER, 39 * S, BUSY | ALIVE, DAEMON_STOPPING, 0 },
        { DAEMON_EV_TIMER, 40 * S, BUSY | ALIVE, DAEMON_KILLING, DAEMON_ACT_TERM | DAEMON_ACT_LATE });
    ck_assert(daemon_fsm_killing(&f));
    ck_assert(!daemon_fsm_finished(&f, 1));
    /* The stages get the grace period after SIGTERM. */
    RUN(&f, { DAEMON_EV_TIMER, 49 * S, ALIVE, DAEMON_KILLING, 0 },
        { DAEMON_EV_TIMER, 50 * S, ALIVE, DAEMON_KILLING, DAEMON_ACT_KILL },
        { DAEMON_EV_TIMER, 55 * S, ALIVE, DAEMON_KILLING, 0 },
        { DAEMON_EV_TIMER, 60 * S, ALIVE, DAEMON_KILLING, DAEMON_ACT_KILL });
    /* None alive: nothing more to kill, and the loop is done. */
    RUN(&f, { DAEMON_EV_TIMER, 70 * S, 0, DAEMON_KILLING, 0 });
    ck_assert(daemon_fsm_finished(&f, 0));
    RUN(&f, { DAEMON_EV_STOP, 71 * S, 0, DAEMON_KILLING, 0 },
        { DAEMON_EV_DRAIN, 72 * S, 0, DAEMON_KILLING, 0 });
}
END_TEST

/* Shutdown with nothing running stops the stages at the next look, not late; a
 * drained daemon stops the same way. Stages that exit on SIGTERM are never killed. */
TEST(test_idle_shutdown_stops_at_once, 1)
{
    struct daemon_fsm f;

    daemon_fsm_init(&f);
    RUN(&f, { DAEMON_EV_DRAIN, 1 * S, 0, DAEMON_DRAINING, DAEMON_ACT_DRAIN },
        { DAEMON_EV_STOP, 2 * S, 0, DAEMON_STOPPING, DAEMON_ACT_STOP },
        { DAEMON_EV_TIMER, 2 * S + 1, ALIVE, DAEMON_KILLING, DAEMON_ACT_TERM },
        { DAEMON_EV_TIMER, 100 * S, 0, DAEMON_KILLING, 0 });
    ck_assert(daemon_fsm_finished(&f, 0));
}
END_TEST

/* The running job ends before the drain wait does: stopped then, not late. */
TEST(test_shutdown_stops_when_the_last_job_ends, 1)
{
    struct daemon_fsm f;

    daemon_fsm_init(&f);
    RUN(&f, { DAEMON_EV_STOP, 0, 0, DAEMON_STOPPING, DAEMON_ACT_STOP },
        { DAEMON_EV_TIMER, 5 * S, BUSY | ALIVE, DAEMON_STOPPING, 0 },
        { DAEMON_EV_TIMER, 6 * S, ALIVE, DAEMON_KILLING, DAEMON_ACT_TERM });
    ck_assert_uint_eq(f.deadline_ns, 16 * S);
}
END_TEST

/* Every state and event: no move outside the table; names for every state. */
TEST(test_table_is_total, 1)
{
    for (int st = 0; st < DAEMON_N_STATES; st++) {
        ck_assert_str_ne(daemon_state_name((enum daemon_state)st), "?");
        for (int ev = 0; ev < DAEMON_N_EVENTS; ev++) {
            struct daemon_fsm f = { (enum daemon_state)st, 5 * S };
            struct daemon_step r = daemon_fsm_step(&f, &cfg, (enum daemon_event)ev, S, 0);

            /* Lifecycles only go forward. */
            ck_assert_int_ge(r.to, st);
            ck_assert_int_eq(r.from, st);
        }
    }
    ck_assert_str_eq(daemon_state_name(DAEMON_N_STATES), "?");
}
END_TEST

int main(void)
{
    const struct test_opts o = { .timeout = 10 };

    return test_main("daemon_fsm", &o);
}
