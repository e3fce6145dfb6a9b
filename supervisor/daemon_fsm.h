/* daemon_fsm.h — the life of cuzkd itself, as a state-by-event table
 * (supervisor/daemon_fsm.c), the way child_fsm.h is a stage's. Pure: no I/O, no clock
 * (the caller passes the time and what it sees), so tests/unit/test_daemon_fsm.c
 * drives a drain and a shutdown without forking a daemon.
 *
 *   state \ event  DRAIN             STOP                        TIMER
 *   RUNNING        DRAINING, DRAIN   STOPPING, STOP              -
 *   DRAINING       -                 STOPPING, STOP              -
 *   STOPPING       -                 -                           no job running, or the
 *                                                                drain wait over: KILLING,
 *                                                                TERM (+ LATE if jobs run)
 *   KILLING        -                 -                           a stage still alive past
 *                                                                the grace: KILL (again
 *                                                                each grace period)
 *
 * DRAINING and after: submits are refused. STOPPING: no new connection is accepted and
 * running jobs get --drain-timeout to finish. KILLING: the stages were sent SIGTERM
 * (cuzkd's own: no try counted, no restart) and get DAEMON_GRACE_NS before SIGKILL;
 * the loop ends once none is alive (daemon_fsm_finished). */
#ifndef CUZK_DAEMON_FSM_H
#define CUZK_DAEMON_FSM_H

#include <stdint.h>

#define DAEMON_GRACE_NS 10000000000ull /* stages get 10 s after SIGTERM, then SIGKILL */

enum daemon_state {
    DAEMON_RUNNING,  /* accepting jobs */
    DAEMON_DRAINING, /* `cuzk drain`: refusing submits, running jobs go on */
    DAEMON_STOPPING, /* shutdown asked: waiting for running jobs (--drain-timeout) */
    DAEMON_KILLING,  /* the stages were told to stop; the loop ends when all are gone */
    DAEMON_N_STATES
};

enum daemon_event {
    DAEMON_EV_DRAIN, /* `cuzk drain` */
    DAEMON_EV_STOP,  /* `cuzk shutdown`, SIGTERM or SIGINT */
    DAEMON_EV_TIMER, /* the periodic look: arg DAEMON_SEEN_* bits */
    DAEMON_N_EVENTS
};

/* What the caller saw at a DAEMON_EV_TIMER. */
enum daemon_seen {
    DAEMON_SEEN_BUSY = 1 << 0,  /* a job is still running */
    DAEMON_SEEN_ALIVE = 1 << 1, /* a stage is still alive */
};

enum daemon_action {
    DAEMON_ACT_DRAIN = 1 << 0, /* submits refused from now on (log it) */
    DAEMON_ACT_STOP = 1 << 1,  /* log why, tell systemd STOPPING=1, stop listening */
    DAEMON_ACT_TERM = 1 << 2,  /* tell every stage to stop (CHILD_EV_SHUTDOWN: SIGTERM) */
    DAEMON_ACT_LATE = 1 << 3,  /* with TERM: the drain wait ran out with jobs running */
    DAEMON_ACT_KILL = 1 << 4,  /* SIGKILL the stages still alive */
};

struct daemon_fsm_cfg {
    uint64_t drain_ns; /* --drain-timeout */
    uint64_t grace_ns; /* SIGTERM to SIGKILL (DAEMON_GRACE_NS) */
};

/* cuzkd's lifecycle. Written only by daemon_fsm_step (init aside). */
struct daemon_fsm {
    enum daemon_state state;
    uint64_t deadline_ns; /* STOPPING: end of the drain wait; KILLING: next SIGKILL */
};

struct daemon_step {
    enum daemon_state from, to;
    unsigned actions; /* enum daemon_action bits */
};

void daemon_fsm_init(struct daemon_fsm *f);

/* Apply event ev at time t (CLOCK_MONOTONIC ns); arg: DAEMON_EV_TIMER's DAEMON_SEEN_*
 * bits, otherwise unused. An event the table has no move for changes nothing and asks
 * for nothing. */
struct daemon_step daemon_fsm_step(struct daemon_fsm *f, const struct daemon_fsm_cfg *cfg,
                                   enum daemon_event ev, uint64_t t, unsigned arg);

/* Submits are refused (DRAINING and after). */
int daemon_fsm_draining(const struct daemon_fsm *f);
/* Shutdown was asked (STOPPING and after): no new connection is accepted. */
int daemon_fsm_stopping(const struct daemon_fsm *f);
/* The stages were told to stop (KILLING). */
int daemon_fsm_killing(const struct daemon_fsm *f);
/* The loop is done: KILLING and no stage alive. */
int daemon_fsm_finished(const struct daemon_fsm *f, int alive);

const char *daemon_state_name(enum daemon_state s);

#endif
