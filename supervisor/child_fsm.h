/* child_fsm.h — the life of one stage process as cuzkd sees it: a state, the events
 * that move it, and the actions each move asks for, as a state-by-event table
 * (supervisor/child_fsm.c). Pure: no I/O, no clock (the caller passes the time), so
 * tests/unit/test_child_fsm.c drives recovery sequences without forking a stage.
 *
 *   state \ event  SPAWNED   SPAWN_FAILED  TIMER            RESTART         SHUTDOWN    EXITED
 *   STARTING       -         -             hb: RUNNING;     STOPPING, TERM  STOPPING,   death
 *                                          stale: STALLED,                  TERM
 *                                          KILL
 *   RUNNING        -         -             stale: STALLED,  STOPPING, TERM  STOPPING,   death
 *                                          KILL                             TERM
 *   STALLED        -         -             -                STOPPING, TERM  STOPPING,   death
 *                                                                           TERM
 *   STOPPING       -         -             stale (once, not STOPPING, TERM  TERM        death
 *                                          shutting down):
 *                                          KILL
 *   BACKOFF        STARTING  BACKOFF 1 s   due: START       START now       DEAD        -
 *   DEAD           -         -             -                -               -           -
 *
 * "death" (EXITED): RECLAIM always; CRASH when the death counts a try (not asked for by
 * cuzkd: STALLED, a crash signal but SIGINT, an error exit); then DEAD when shutting
 * down, else BACKOFF: at once when cuzkd asked for it (STOPPING) or the stage lived
 * CHILD_FAST_DEATH_NS or more, else 250 ms doubling per fast death in a row, capped at
 * CHILD_BACKOFF_MAX_NS (START when due at once, else BACKOFF with the delay).
 * "ready" and "busy" are one state, RUNNING: a stage claims partitions in the shared
 * job table without telling cuzkd, and which it held is found at its death (RECLAIM). */
#ifndef CUZK_CHILD_FSM_H
#define CUZK_CHILD_FSM_H

#include <stdint.h>

#define CHILD_FAST_DEATH_NS   10000000000ull /* a death within 10 s of start counts as fast */
#define CHILD_BACKOFF_BASE_NS 250000000ull   /* first delay after a fast death */
#define CHILD_BACKOFF_MAX_NS  30000000000ull /* the delay doubles up to this (30 s) */
#define CHILD_RETRY_NS        1000000000ull  /* fork or pidfd_open failed: try again */
#define CHILD_HB_POLL_NS      100000000ull   /* STARTING: look for the first heartbeat */

enum child_state {
    CHILD_STARTING, /* forked; no heartbeat of its pid seen yet */
    CHILD_RUNNING,  /* its heartbeat seen (idle or holding partitions) */
    CHILD_STALLED,  /* SIGKILLed for a stale heartbeat: its death counts a try */
    CHILD_STOPPING, /* cuzkd sent SIGTERM (restart or shutdown): its death does not */
    CHILD_BACKOFF,  /* not running; started again at restart_at_ns */
    CHILD_DEAD,     /* not running and never started again (cuzkd is stopping) */
    CHILD_N_STATES
};

enum child_event {
    CHILD_EV_SPAWNED,      /* fork + exec done at t */
    CHILD_EV_SPAWN_FAILED, /* fork or pidfd_open failed at t */
    CHILD_EV_TIMER,        /* its deadline_ns came; hb: its last heartbeat (0: none) */
    CHILD_EV_RESTART,      /* `cuzk restart`: no backoff, no try counted */
    CHILD_EV_SHUTDOWN,     /* cuzkd stops: SIGTERM, never started again */
    CHILD_EV_EXITED,       /* reaped: status is its wait status */
    CHILD_N_EVENTS
};

enum child_action {
    CHILD_ACT_START = 1 << 0,   /* fork + exec it now; then SPAWNED or SPAWN_FAILED */
    CHILD_ACT_TERM = 1 << 1,    /* send SIGTERM */
    CHILD_ACT_KILL = 1 << 2,    /* send SIGKILL: no heartbeat for stale_ns */
    CHILD_ACT_RECLAIM = 1 << 3, /* roll back its partitions, free its buffers, re-push */
    CHILD_ACT_CRASH = 1 << 4,   /* count a try against each partition it held
                                 * (child_fsm_part_crash; poison at --max-attempts) */
    CHILD_ACT_BACKOFF = 1 << 5, /* a fast death: restart in delay_ns (log it) */
};

struct child_fsm_cfg {
    uint64_t stall_ns; /* --stall-timeout; 0: no stall check */
};

/* One child's lifecycle. Written only by child_fsm_step (init aside). */
struct child_fsm {
    enum child_state state;
    int shutdown;         /* CHILD_EV_SHUTDOWN seen: no stall checks, no restarts */
    int stall_killed;     /* SIGKILL sent for a stale heartbeat */
    uint32_t fast_deaths; /* deaths in a row within CHILD_FAST_DEATH_NS of start */
    uint32_t restarts;
    uint64_t started_ns;
    uint64_t hb_ns;         /* last heartbeat of this run seen (0: none) */
    uint64_t restart_at_ns; /* BACKOFF: start it at this time */
    uint64_t deadline_ns;   /* send CHILD_EV_TIMER at this time; 0: no need */
};

/* What one event did. */
struct child_step {
    enum child_state from, to;
    unsigned actions;  /* enum child_action bits */
    uint64_t delay_ns; /* CHILD_ACT_BACKOFF: the delay */
    uint64_t stale_ns; /* CHILD_ACT_KILL: the heartbeat's age */
    int hung;          /* EXITED: it had been killed for a stall */
};

/* BACKOFF, due at once: the first CHILD_EV_TIMER starts it. */
void child_fsm_init(struct child_fsm *f);

/* Apply event ev at time t (CLOCK_MONOTONIC ns). arg: CHILD_EV_TIMER the heartbeat
 * (0: none of this pid yet), CHILD_EV_EXITED the wait status, otherwise unused.
 * Updates f (state, counters, deadline_ns) and returns the actions to take; an event
 * the table has no move for changes nothing and asks for nothing. */
struct child_step child_fsm_step(struct child_fsm *f, const struct child_fsm_cfg *cfg, enum child_event ev,
                                 uint64_t t, uint64_t arg);

/* Would a death with this wait status, in f's present state, count a try? */
int child_fsm_death_is_crash(const struct child_fsm *f, int status);

/* One crash counted against a partition (*crashes: its count so far): 1 when it has
 * now reached max_attempts, so the partition is to be failed (poisoned). */
int child_fsm_part_crash(uint16_t *crashes, uint32_t max_attempts);

const char *child_state_name(enum child_state s);

#endif
