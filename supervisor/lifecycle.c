/* lifecycle.c — cuzkd's own lifecycle (daemon_fsm.h) driven from the loop (sup.h):
 * each event through the table, then the actions it asks for. */
#include "sup.h"

#include <signal.h>

#include "supervisor/check.h"

/* The stages still alive after DAEMON_GRACE_NS since SIGTERM: SIGKILL. cuzk-api too:
 * a request of its that came after the stop waits on a control connection this loop
 * no longer answers, and its server's stop waits for that request, so without this
 * the shutdown would wait for it for ever. */
static void kill_children(struct sup *s)
{
    for (uint32_t i = 0; i < s->n_ch; i++)
        if (s->ch[i].pid) {
            logmsg("%s %u (pid %d) ignored SIGTERM for %llu s: SIGKILL", children_bin(s->ch[i].role),
                   s->ch[i].index, (int)s->ch[i].pid, DAEMON_GRACE_NS / 1000000000ull);
            kill(s->ch[i].pid, SIGKILL);
        }
    if (s->api.pid) {
        logmsg("cuzk-api (pid %d) ignored SIGTERM for %llu s: SIGKILL", (int)s->api.pid,
               DAEMON_GRACE_NS / 1000000000ull);
        kill(s->api.pid, SIGKILL);
    }
}

/* Event ev of the daemon's lifecycle at t (seen: DAEMON_EV_TIMER's DAEMON_SEEN_*
 * bits; why: DAEMON_EV_STOP's cause, for the log). */
void lifecycle_event(struct sup *s, enum daemon_event ev, uint64_t t, unsigned seen, const char *why)
{
    struct daemon_step st = daemon_fsm_step(&s->life, &s->life_cfg, ev, t, seen);

    if (st.actions & DAEMON_ACT_DRAIN) logmsg("drain requested: not accepting jobs");
    if (st.actions & DAEMON_ACT_STOP) {
        logmsg("%s: not accepting jobs; waiting up to %u s for running jobs", why, s->c->drain_timeout_s);
        check_sd_notify("STOPPING=1");
        if (s->listen_armed) {
            supervisor_cancel_poll(s, ev_data(EV_LISTEN, 0, 0));
            s->listen_armed = 0;
        }
    }
    if (st.actions & DAEMON_ACT_LATE)
        logmsg("drain timeout (%u s): stopping with jobs still running", s->c->drain_timeout_s);
    if (st.actions & DAEMON_ACT_TERM) children_stop(s);
    if (st.actions & DAEMON_ACT_KILL) kill_children(s);
}
