/* timers.c — the jobs of cuzkd's 100 ms timer (EV_TIMER), each named, with the
 * deadline it keeps and why it exists (sup.h). Restarts and stall checks are not here:
 * each child's deadline arms the children's own timer (child_timer_arm). */
#include "sup.h"

#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

/* systemd's READY=1, once every stage is up: a unit that waits on cuzkd starts then. */
static void ready_timer(struct sup *s, uint64_t t)
{
    (void)t;
    notify_systemd(s);
}

/* The supervisor's heartbeat and gauges in its stats slot: cuzk-top and the metrics
 * see it alive, and viewers that map only the stats segment see the figures. */
static void heartbeat_timer(struct sup *s, uint64_t t)
{
    if (!s->slot) return;
    stats_slot_heartbeat(s->slot, t);
    publish_gauges(s);
}

/* Jobs decided (the finalizer does; this covers a finalizer that died between its
 * last DONE and its try_complete) and cancels swept (owned partitions are caught on a
 * later tick, once their owner lets go). */
static void decide_timer(struct sup *s, uint64_t t)
{
    struct jobtab *jt = &s->pl.data.jobtab;

    (void)t;
    for (uint32_t j = 0; j < jt->hdr->max_jobs; j++) {
        if (job_state(s, j) != JOBTAB_QUEUED) continue;
        if (s->jobs[j].cancelled)
            cancel_sweep(s, j);
        else
            jobtab_job_try_complete(jt, j);
    }
}

/* Hints that did not fit a ring (ENOBUFS) pushed again: a partition never waits for
 * a hint that was dropped. */
static void repush_timer(struct sup *s, uint64_t t)
{
    (void)t;
    if (!s->repush_needed) return;
    s->repush_needed = 0;
    repush_state(s, JOBTAB_QUEUED);
    repush_state(s, JOBTAB_READY);
    repush_state(s, JOBTAB_PROVED);
}

/* Connections closed at their deadlines: --idle-timeout after the last byte with no
 * request outstanding (a wait, drain or submit being checked is not idle), and
 * LINE_TIMEOUT_NS for a line that never ends, however it trickles (its descriptors
 * held). */
static void conns_timer(struct sup *s, uint64_t t)
{
    for (int i = 0; i < N_CONNS; i++) {
        struct conn *k = &s->conns[i];

        if (k->fd >= 0 && !k->waiting && !k->drain_wait && !k->watching && !k->pending &&
            s->c->idle_timeout_s && t > k->active_ns &&
            t - k->active_ns >= (uint64_t)s->c->idle_timeout_s * 1000000000ull)
            conn_close(s, k);
        else if (k->fd >= 0 && !k->pending && !k->privileged && k->line_ns && t > k->line_ns &&
                 t - k->line_ns >= LINE_TIMEOUT_NS)
            conn_close(s, k);
    }
}

/* At listen_retry_ns, the listener armed again after accept hit the descriptor limit
 * (re-arming at once spun the loop: handle_listen). */
static void listen_timer(struct sup *s, uint64_t t)
{
    if (!s->listen_retry_ns || t < s->listen_retry_ns || daemon_fsm_stopping(&s->life)) return;
    s->listen_retry_ns = 0;
    if (s->spare_fd < 0) s->spare_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
    arm_poll(s, s->lfd, POLLIN, ev_data(EV_LISTEN, 0, 0));
    s->listen_armed = 1;
}

/* The store on: partition states since the last tick in one transaction. */
static void journal_timer(struct sup *s, uint64_t t)
{
    (void)t;
    journal_sync(s);
}

/* The store on: each user's (and API tenant's) decided jobs bounded by --store-keep-jobs/-mb, a minute
 * apart (fast enough against a burst, rare enough to cost nothing). */
static void prune_owner_timer(struct sup *s, uint64_t t)
{
    (void)t;
    if (s->store) journal_prune_owner(s);
}

/* --store-keep-days: decided jobs leave the store, hourly. */
static void prune_timer(struct sup *s, uint64_t t)
{
    (void)t;
    journal_prune(s);
}

/* Decided jobs retired --keep-finished after their end (their waiters told first). */
static void retire_timer(struct sup *s, uint64_t t)
{
    (void)t;
    jobs_retire(s, 0);
}

/* The daemon's lifecycle (daemon_fsm.h): the drain wait's end, SIGKILL past grace. */
static void life_timer(struct sup *s, uint64_t t)
{
    unsigned seen = 0;

    if (daemon_fsm_stopping(&s->life) && jobs_busy(s)) seen |= DAEMON_SEEN_BUSY;
    if (children_alive(s)) seen |= DAEMON_SEEN_ALIVE;
    life_event(s, DAEMON_EV_TIMER, t, seen, NULL);
}

#define SEC 1000000000ull

/* In the order they run, each at most once per period (0: every tick); s->timer_ran
 * holds when each last ran. */
static const struct {
    const char *name;
    uint64_t period_ns;
    void (*run)(struct sup *s, uint64_t t);
} timers[] = {
    { "ready", 0, ready_timer },
    { "heartbeat", 0, heartbeat_timer },
    { "decide", 0, decide_timer },
    { "repush", 0, repush_timer },
    { "waiters", 0, answer_waiters }, /* a wait's --timeout, drains done */
    { "conns", 0, conns_timer },
    { "listen", 0, listen_timer },
    { "intakes", 0, check_intakes }, /* --copy-timeout */
    { "journal", 0, journal_timer },
    { "prune_owner", 60 * SEC, prune_owner_timer },
    { "prune", 3600 * SEC, prune_timer },
    { "retire", 0, retire_timer },
    { "life", 0, life_timer },
};
_Static_assert(sizeof(timers) / sizeof(timers[0]) <= SUP_MAX_TIMERS, "timer_ran fits");

/* EV_TIMER: every timer that is due. */
void timers_tick(struct sup *s)
{
    uint64_t t = os_now_ns(), exp;

    (void)!read(s->tfd, &exp, sizeof(exp));
    for (size_t i = 0; i < sizeof(timers) / sizeof(timers[0]); i++) {
        if (timers[i].period_ns && t - s->timer_ran[i] < timers[i].period_ns) continue;
        s->timer_ran[i] = t;
        timers[i].run(s, t);
    }
}

/* The hourly prune just ran (at start): the next one an hour from t. */
void timers_pruned(struct sup *s, uint64_t t)
{
    for (size_t i = 0; i < sizeof(timers) / sizeof(timers[0]); i++)
        if (timers[i].run == prune_timer) s->timer_ran[i] = t;
}
