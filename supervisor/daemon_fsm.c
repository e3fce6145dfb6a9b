/* daemon_fsm.c — cuzkd's own lifecycle, state by event (daemon_fsm.h). */
#include "supervisor/daemon_fsm.h"

#include <string.h>

/* How a table entry decides: most moves are fixed; the timer's depend on the time and
 * on what the caller saw. */
enum rule {
    R_NONE,  /* no move: nothing changes */
    R_FIXED, /* to = entry's, actions = entry's */
    R_STOP,  /* shutdown asked: the drain wait starts */
    R_DRAIN, /* STOPPING, TIMER: idle or past the drain wait: stop the stages */
    R_GRACE, /* KILLING, TIMER: a stage alive past the grace: SIGKILL, wait again */
};

struct entry {
    unsigned char rule, to, actions;
};

static const struct entry table[DAEMON_N_STATES][DAEMON_N_EVENTS] = {
    [DAEMON_RUNNING] = {
        [DAEMON_EV_DRAIN] = { R_FIXED, DAEMON_DRAINING, DAEMON_ACT_DRAIN },
        [DAEMON_EV_STOP] = { R_STOP, DAEMON_STOPPING, DAEMON_ACT_STOP },
    },
    [DAEMON_DRAINING] = {
        [DAEMON_EV_STOP] = { R_STOP, DAEMON_STOPPING, DAEMON_ACT_STOP },
    },
    [DAEMON_STOPPING] = {
        [DAEMON_EV_TIMER] = { R_DRAIN, DAEMON_KILLING, DAEMON_ACT_TERM },
    },
    [DAEMON_KILLING] = {
        [DAEMON_EV_TIMER] = { R_GRACE, DAEMON_KILLING, DAEMON_ACT_KILL },
    },
};

void daemon_fsm_init(struct daemon_fsm *f)
{
    memset(f, 0, sizeof(*f));
    f->state = DAEMON_RUNNING;
}

struct daemon_step daemon_fsm_step(struct daemon_fsm *f, const struct daemon_fsm_cfg *cfg,
                                   enum daemon_event ev, uint64_t t, unsigned arg)
{
    const struct entry *e = &table[f->state][ev];
    struct daemon_step st = { f->state, f->state, 0 };

    switch (e->rule) {
    case R_NONE: return st;
    case R_FIXED: break;
    case R_STOP: f->deadline_ns = t + cfg->drain_ns; break;
    case R_DRAIN:
        if ((arg & DAEMON_SEEN_BUSY) && t < f->deadline_ns) return st;
        f->deadline_ns = t + cfg->grace_ns;
        st.actions |= (arg & DAEMON_SEEN_BUSY) ? DAEMON_ACT_LATE : 0;
        break;
    case R_GRACE:
        if (!(arg & DAEMON_SEEN_ALIVE) || t < f->deadline_ns) return st;
        f->deadline_ns = t + cfg->grace_ns;
        break;
    }
    f->state = (enum daemon_state)e->to;
    st.to = f->state;
    st.actions |= e->actions;
    return st;
}

int daemon_fsm_draining(const struct daemon_fsm *f)
{
    return f->state >= DAEMON_DRAINING;
}

int daemon_fsm_stopping(const struct daemon_fsm *f)
{
    return f->state >= DAEMON_STOPPING;
}

int daemon_fsm_killing(const struct daemon_fsm *f)
{
    return f->state == DAEMON_KILLING;
}

int daemon_fsm_finished(const struct daemon_fsm *f, int alive)
{
    return f->state == DAEMON_KILLING && !alive;
}

const char *daemon_state_name(enum daemon_state s)
{
    static const char *const n[DAEMON_N_STATES] = { "running", "draining", "stopping", "killing" };

    return (unsigned)s < DAEMON_N_STATES ? n[s] : "?";
}
