/* child_fsm.c — the lifecycle of one stage process, state by event (child_fsm.h). */
#include "supervisor/child_fsm.h"

#include <signal.h>
#include <string.h>
#include <sys/wait.h>

/* How a table entry decides: most moves are fixed; a few depend on the time, the
 * heartbeat or the wait status. */
enum rule {
    R_NONE,    /* no move: nothing changes */
    R_FIXED,   /* to = entry's, actions = entry's */
    R_SPAWNED, /* a new run: counters of the run reset */
    R_RETRY,   /* start failed: BACKOFF CHILD_RETRY_NS */
    R_WATCH,   /* TIMER while it runs: first heartbeat, stale heartbeat */
    R_DUE,     /* TIMER in BACKOFF: START when due */
    R_NOW,     /* RESTART in BACKOFF: no delay, fast deaths forgotten */
    R_ASK,     /* RESTART or SHUTDOWN of a live stage: STOPPING + TERM */
    R_DEATH,   /* EXITED: reclaim, count, back off */
};

#define SAME CHILD_N_STATES

struct entry {
    unsigned char rule, to, actions;
};

/* A live stage (STARTING, RUNNING, STOPPING) answers every event alike: a timer
 * watches its heartbeat, a restart or shutdown asks it to stop, an exit is a death.
 * STALLED is the same but for the timer (it was already killed). */
/* clang-format off */
#define LIVE_ROW(timer)                                                  \
    {                                                                    \
        [CHILD_EV_TIMER] = timer,                                        \
        [CHILD_EV_RESTART] = { R_ASK, CHILD_STOPPING, CHILD_ACT_TERM },  \
        [CHILD_EV_SHUTDOWN] = { R_ASK, CHILD_STOPPING, CHILD_ACT_TERM }, \
        [CHILD_EV_EXITED] = { R_DEATH, SAME, CHILD_ACT_RECLAIM },        \
    }
#define WATCH { R_WATCH, SAME, 0 }
#define NO_MOVE { R_NONE, 0, 0 }
/* clang-format on */

static const struct entry table[CHILD_N_STATES][CHILD_N_EVENTS] = {
    [CHILD_STARTING] = LIVE_ROW(WATCH),
    [CHILD_RUNNING] = LIVE_ROW(WATCH),
    [CHILD_STALLED] = LIVE_ROW(NO_MOVE),
    [CHILD_STOPPING] = LIVE_ROW(WATCH),
    [CHILD_BACKOFF] = {
        [CHILD_EV_SPAWNED] = { R_SPAWNED, CHILD_STARTING, 0 },
        [CHILD_EV_SPAWN_FAILED] = { R_RETRY, CHILD_BACKOFF, 0 },
        [CHILD_EV_TIMER] = { R_DUE, SAME, 0 },
        [CHILD_EV_RESTART] = { R_NOW, SAME, CHILD_ACT_START },
        [CHILD_EV_SHUTDOWN] = { R_FIXED, CHILD_DEAD, 0 },
    },
    /* CHILD_DEAD: no moves (every entry R_NONE). */
};

void child_fsm_init(struct child_fsm *f)
{
    memset(f, 0, sizeof(*f));
    f->state = CHILD_BACKOFF;
    f->restart_at_ns = 0;
    f->deadline_ns = 1; /* due: any time is later */
}

int child_fsm_death_is_crash(const struct child_fsm *f, int status)
{
    /* Any death cuzkd did not ask for counts (a crash signal, an error exit, a SIGKILL
     * or SIGTERM from outside: kill -9, the OOM killer), and a stall it was killed for;
     * otherwise a partition that gets its stage killed each time would be retried
     * forever. Not counted: what cuzkd asked for (STOPPING: a restart request or
     * shutdown, even if a stall kill came after) and SIGINT (a ^C at the terminal
     * reaches the whole group; cuzkd itself is stopping then). */
    if (f->state == CHILD_STOPPING) return 0;
    if (f->state == CHILD_STALLED) return 1;
    if (WIFSIGNALED(status)) return WTERMSIG(status) != SIGINT;
    return WIFEXITED(status) && WEXITSTATUS(status) != 0;
}

int child_fsm_part_crash(uint16_t *crashes, uint32_t max_attempts)
{
    if (*crashes < UINT16_MAX) ++*crashes;
    return *crashes >= max_attempts;
}

/* The heartbeat's base: the newest of start and heartbeat. */
static uint64_t hb_base(const struct child_fsm *f)
{
    return f->hb_ns > f->started_ns ? f->hb_ns : f->started_ns;
}

/* When the caller must look at f next (CHILD_EV_TIMER); 0: never. */
static uint64_t deadline_of(const struct child_fsm *f, const struct child_fsm_cfg *cfg, uint64_t t)
{
    uint64_t d = 0;

    switch (f->state) {
    case CHILD_STARTING:
    case CHILD_RUNNING:
    case CHILD_STOPPING:
        if (cfg->stall_ns && !f->shutdown && !f->stall_killed) d = hb_base(f) + cfg->stall_ns;
        /* The first heartbeat moves STARTING to RUNNING; look for it every
         * CHILD_HB_POLL_NS while starting (a stage beats from its first
         * moments: only one that cannot start is looked at many times). */
        if (f->state == CHILD_STARTING && !f->shutdown && (!d || t + CHILD_HB_POLL_NS < d))
            d = t + CHILD_HB_POLL_NS;
        break;
    case CHILD_BACKOFF: d = f->restart_at_ns ? f->restart_at_ns : 1; break;
    case CHILD_STALLED:
    case CHILD_DEAD:
    case CHILD_N_STATES: break;
    }
    return d;
}

struct child_step child_fsm_step(struct child_fsm *f, const struct child_fsm_cfg *cfg, enum child_event ev,
                                 uint64_t t, uint64_t arg)
{
    struct child_step r = { .from = f->state, .to = f->state };
    struct entry e = { R_NONE, SAME, 0 };

    if ((unsigned)f->state < CHILD_N_STATES && (unsigned)ev < CHILD_N_EVENTS) e = table[f->state][ev];
    if (e.rule == R_NONE) return r;
    r.actions = e.actions;
    if (e.to != SAME) r.to = (enum child_state)e.to;

    switch ((enum rule)e.rule) {
    case R_NONE:
    case R_FIXED: break;
    case R_SPAWNED:
        f->started_ns = t;
        f->hb_ns = 0;
        f->stall_killed = 0;
        f->restart_at_ns = 0;
        break;
    case R_RETRY: f->restart_at_ns = t + CHILD_RETRY_NS; break;
    case R_WATCH:
        if (arg > f->started_ns && arg > f->hb_ns) f->hb_ns = arg;
        if (f->state == CHILD_STARTING && f->hb_ns) r.to = CHILD_RUNNING;
        if (cfg->stall_ns && !f->shutdown && !f->stall_killed && t >= hb_base(f) + cfg->stall_ns) {
            r.actions |= CHILD_ACT_KILL;
            r.stale_ns = t - hb_base(f);
            f->stall_killed = 1;
            if (f->state != CHILD_STOPPING) r.to = CHILD_STALLED;
        }
        break;
    case R_DUE:
        if (!f->shutdown && t >= f->restart_at_ns) r.actions |= CHILD_ACT_START;
        break;
    case R_NOW:
        if (f->shutdown) {
            r.actions = 0;
            break;
        }
        f->restart_at_ns = t;
        f->fast_deaths = 0;
        break;
    case R_ASK:
        if (ev == CHILD_EV_SHUTDOWN) f->shutdown = 1;
        break;
    case R_DEATH:
        r.hung = f->stall_killed && f->state == CHILD_STALLED;
        if (child_fsm_death_is_crash(f, (int)arg)) r.actions |= CHILD_ACT_CRASH;
        if (f->shutdown) {
            r.to = CHILD_DEAD;
            break;
        }
        r.to = CHILD_BACKOFF;
        if (f->state == CHILD_STOPPING) {
            f->fast_deaths = 0;
            f->restart_at_ns = t;
        } else if (t - f->started_ns < CHILD_FAST_DEATH_NS) {
            uint64_t d = CHILD_BACKOFF_BASE_NS << (f->fast_deaths < 7 ? f->fast_deaths : 7);

            f->fast_deaths++;
            if (d > CHILD_BACKOFF_MAX_NS) d = CHILD_BACKOFF_MAX_NS;
            f->restart_at_ns = t + d;
            r.delay_ns = d;
            r.actions |= CHILD_ACT_BACKOFF;
        } else {
            f->fast_deaths = 0;
            f->restart_at_ns = t;
        }
        if (f->restart_at_ns <= t) r.actions |= CHILD_ACT_START;
        f->restarts++;
        break;
    }
    f->state = r.to;
    f->deadline_ns = deadline_of(f, cfg, t);
    return r;
}

const char *child_state_name(enum child_state s)
{
    static const char *const names[CHILD_N_STATES] = {
        [CHILD_STARTING] = "starting", [CHILD_RUNNING] = "running", [CHILD_STALLED] = "stalled",
        [CHILD_STOPPING] = "stopping", [CHILD_BACKOFF] = "backoff", [CHILD_DEAD] = "dead",
    };

    return (unsigned)s < CHILD_N_STATES ? names[s] : "?";
}
