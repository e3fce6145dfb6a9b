/* children.c — the stage processes (sup.h): fork + exec each one pinned to its
 * place, reap it, and run its state machine (child_fsm.h) on every event. */
#include "sup.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/timerfd.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "supervisor/check.h"
#include "base/error.h"
#include "base/barrier.h"

const char *children_bin(enum plan_role r)
{
    return r == PLAN_WORKER ? "cuzk-gpuworker" : r == PLAN_SYNTH ? "cuzk-synth" : "cuzk-finalizer";
}

static int pidfd_open_(pid_t pid)
{
    return (int)syscall(SYS_pidfd_open, pid, 0);
}

static uint32_t threads_of(const struct sup *s, const struct child *c)
{
    int n = CPU_COUNT(&c->place->cpus);

    if (c->role == PLAN_SYNTH && s->c->synth_threads) return s->c->synth_threads;
    return n > 0 ? (uint32_t)n : 1;
}

/* A stage's command line: its binary in bin_dir and the options its place asks for. */
struct child_args {
    char path[PROTO_PATH_MAX + 32], idx[16], gen[16], thr[16], delay[16], be[32], pre[16], fixed[16];
    char *argv[20];
};

static void child_args(const struct sup *s, const struct child *c, struct child_args *a)
{
    int n = 0;

    snprintf(a->path, sizeof(a->path), "%s/%s", s->bin_dir, children_bin(c->role));
    snprintf(a->idx, sizeof(a->idx), "%u", c->index);
    snprintf(a->gen, sizeof(a->gen), "%u", c->generation);
    snprintf(a->thr, sizeof(a->thr), "%u", threads_of(s, c));
    a->argv[n++] = a->path;
    a->argv[n++] = "--instance";
    a->argv[n++] = (char *)s->c->instance;
    a->argv[n++] = "--index";
    a->argv[n++] = a->idx;
    a->argv[n++] = "--generation";
    a->argv[n++] = a->gen;
    if (c->role != PLAN_FINALIZER) {
        a->argv[n++] = "--threads";
        a->argv[n++] = a->thr;
    }
    if (c->role == PLAN_WORKER) {
        /* CUDA: the plan's device number for this worker (cuda:0,2 -> worker 1 on
         * device 2), not the worker index. */
        if (s->c->dev_kind == CONFIG_DEV_CUDA && c->place->device >= 0)
            snprintf(a->be, sizeof(a->be), "cuda:%d", c->place->device);
        else
            snprintf(a->be, sizeof(a->be), "%s", s->c->dev_kind == CONFIG_DEV_CUDA ? "cuda" : "cpu");
        a->argv[n++] = "--backend";
        a->argv[n++] = a->be;
        snprintf(a->pre, sizeof(a->pre), "%u", s->c->precompute_mb);
        a->argv[n++] = "--precompute-mb";
        a->argv[n++] = a->pre;
        snprintf(a->fixed, sizeof(a->fixed), "%u", s->c->fixed_base_mb);
        a->argv[n++] = "--fixed-base-mb";
        a->argv[n++] = a->fixed;
    }
    if (c->role == PLAN_FINALIZER && s->c->test_finalizer_delay_ms) {
        snprintf(a->delay, sizeof(a->delay), "%u", s->c->test_finalizer_delay_ms);
        a->argv[n++] = "--test-trim-delay-ms";
        a->argv[n++] = a->delay;
    }
    a->argv[n++] = "--doorbell-fd";
    a->argv[n++] = DOORBELL_CHILD_FD_STR;
    a->argv[n] = NULL;
}

/* In the forked child: only async-signal-safe calls until exec. */
__attribute__((noreturn)) static void child_exec(const struct sup *s, const struct child *c,
                                                 struct child_args *a, pid_t parent)
{
    sigset_t none;

    sigemptyset(&none);
    prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (getppid() != parent) _exit(CUZK_EXIT_SYSTEM);
    /* The doorbell at DOORBELL_CHILD_FD without CLOEXEC (dup2 clears it; the
     * same number already: clear it by hand), every other descriptor closed. */
    if (s->doorbell_fd != DOORBELL_CHILD_FD)
        dup2(s->doorbell_fd, DOORBELL_CHILD_FD);
    else
        fcntl(DOORBELL_CHILD_FD, F_SETFD, 0);
    syscall(SYS_close_range, DOORBELL_CHILD_FD + 1, ~0u, 0);
    sigprocmask(SIG_SETMASK, &none, NULL);
    signal(SIGPIPE, SIG_DFL);
    plan_apply(s->plan, c->place); /* unpinned if it fails: still correct */
    execv(a->path, a->argv);
    _exit(127);
}

/* fork + exec one stage, pinned per its place. 0 or -errno (nothing changed; the
 * caller tells its state machine, CHILD_EV_SPAWNED or CHILD_EV_SPAWN_FAILED). */
static int child_start(struct sup *s, struct child *c)
{
    struct child_args a;
    char cpus[256];
    pid_t parent = getpid(), pid;
    int pfd;

    child_args(s, c, &a);
    pid = fork();
    if (pid < 0) {
        logmsg("fork for %s %u: %s", children_bin(c->role), c->index, strerror(errno));
        return -errno;
    }
    if (pid == 0) child_exec(s, c, &a, parent);
    pfd = pidfd_open_(pid);
    if (pfd < 0) {
        logmsg("pidfd_open(%d): %s; killing it", (int)pid, strerror(errno));
        kill(pid, SIGKILL);
        waitpid(pid, NULL, 0);
        return -errno;
    }
    c->pid = pid;
    c->pidfd = pfd;
    c->gen++;
    supervisor_arm_poll(s, pfd, POLLIN, ev_data(EV_PIDFD, c->gen, (uint32_t)(c - s->ch)));
    plan_cpus_str(&c->place->cpus, cpus, sizeof(cpus));
    logmsg("started %s %u (pid %d, generation %u, cpus %s)", children_bin(c->role), c->index, (int)pid,
           c->generation, cpus);
    return 0;
}

static enum stats_role stats_role_of(enum plan_role r)
{
    return r == PLAN_WORKER ? STATS_ROLE_GPUWORKER
        : r == PLAN_SYNTH   ? STATS_ROLE_SYNTH
                            : STATS_ROLE_FINALIZER;
}

/* Arm cfd for the earliest deadline of any child (child_fsm.h: a restart due, a
 * heartbeat to look at), or disarm it when none has one. */
void children_timer_arm(struct sup *s)
{
    struct itimerspec its = { { 0, 0 }, { 0, 0 } };
    uint64_t at = 0;

    for (uint32_t i = 0; i < s->n_ch; i++) {
        uint64_t d = s->ch[i].fsm.deadline_ns;

        if (d && (!at || d < at)) at = d;
    }
    if (s->api.on && s->api.fsm.deadline_ns && (!at || s->api.fsm.deadline_ns < at))
        at = s->api.fsm.deadline_ns;
    if (at == s->cfd_at || s->cfd < 0) return;
    its.it_value.tv_sec = (time_t)(at / 1000000000ull);
    its.it_value.tv_nsec = (long)(at % 1000000000ull);
    if (timerfd_settime(s->cfd, TFD_TIMER_ABSTIME, &its, NULL) == 0)
        s->cfd_at = at;
    else
        logmsg("timerfd_settime: %s", strerror(errno));
}

/* One event of child c (child_fsm.h), and the actions its state machine asks for. */
void children_event(struct sup *s, struct child *c, enum child_event ev, uint64_t t, uint64_t arg)
{
    struct child_step st = child_fsm_step(&c->fsm, &s->fsm_cfg, ev, t, arg);

    if (st.actions & CHILD_ACT_KILL) {
        logmsg("%s %u (pid %d): no heartbeat for %.1f s (--stall-timeout %u): SIGKILL and "
               "restart",
               children_bin(c->role), c->index, (int)c->pid, (double)st.stale_ns / 1e9,
               s->c->stall_timeout_s);
        if (c->pid) kill(c->pid, SIGKILL);
    }
    if ((st.actions & CHILD_ACT_TERM) && c->pid) kill(c->pid, SIGTERM);
    if (st.actions & CHILD_ACT_RECLAIM) reclaim_child(s, c, &st, (int)arg);
    if (st.actions & CHILD_ACT_BACKOFF)
        logmsg("%s %u died %u time(s) in a row within 10 s of starting: restarting in "
               "%.1f s",
               children_bin(c->role), c->index, c->fsm.fast_deaths, (double)st.delay_ns / 1e9);
    if (st.actions & CHILD_ACT_START)
        children_event(s, c, child_start(s, c) ? CHILD_EV_SPAWN_FAILED : CHILD_EV_SPAWNED, os_now_ns(), 0);
    children_timer_arm(s);
}

/* The deadline of cfd came: every child whose deadline_ns is past gets CHILD_EV_TIMER,
 * with its heartbeat (the stats slot's, when the slot is this pid's). */
void children_timers(struct sup *s)
{
    uint64_t exp, t = os_now_ns();

    (void)!read(s->cfd, &exp, sizeof(exp));
    s->cfd_at = 0; /* one-shot: it fired */
    for (uint32_t i = 0; i < s->n_ch; i++) {
        struct child *c = &s->ch[i];
        struct stats_slot *sl = pipeline_stats_slot(&s->pl, stats_role_of(c->role), c->index);
        uint64_t hb = 0;

        if (!c->fsm.deadline_ns || c->fsm.deadline_ns > t) continue;
        /* Relaxed: a single word the stage rewrites every 100 ms; a torn view is
         * impossible (64-bit atomic) and a stale one only delays the verdict. */
        if (c->pid && sl && barrier_load_relaxed(&sl->pid) == c->pid)
            hb = barrier_load_relaxed(&sl->heartbeat_ns);
        children_event(s, c, CHILD_EV_TIMER, t, hb);
    }
    api_child_timer(s, t);
    children_timer_arm(s);
}

/* A child is gone: its state machine rolls its partitions back and restarts it. */
static void child_died(struct sup *s, struct child *c, int status)
{
    if (WIFEXITED(status))
        logmsg("%s %u (pid %d) exited with code %d", children_bin(c->role), c->index, (int)c->pid,
               WEXITSTATUS(status));
    else if (WIFSIGNALED(status))
        logmsg("%s %u (pid %d) killed by signal %d (%s)", children_bin(c->role), c->index, (int)c->pid,
               WTERMSIG(status), strsignal(WTERMSIG(status)));
    c->last_status = status;
    children_event(s, c, CHILD_EV_EXITED, os_now_ns(), (uint64_t)(unsigned)status);
}

void children_reap(struct sup *s, struct child *c)
{
    int status;
    pid_t r;

    if (!c->pid) return;
    r = waitpid(c->pid, &status, WNOHANG);
    if (r == c->pid) child_died(s, c, status);
}

json_t *children_json(const struct sup *s)
{
    json_t *a = json_array();
    uint64_t t = os_now_ns();

    for (uint32_t i = 0; i < s->n_ch; i++) {
        const struct child *c = &s->ch[i];
        char cpus[256];
        json_t *o;

        plan_cpus_str(&c->place->cpus, cpus, sizeof(cpus));
        o = json_pack("{s:s,s:i,s:i,s:i,s:i,s:s,s:i}", "stage", plan_role_name(c->role), "index",
                      (int)c->index, "pid", (int)c->pid, "generation", (int)c->generation, "restarts",
                      (int)c->fsm.restarts, "cpus", cpus, "node", c->place->numa_node);
        if (o && c->fsm.state == CHILD_BACKOFF && c->fsm.restart_at_ns)
            json_object_set_new(o, "restart_in_ms",
                                json_integer(c->fsm.restart_at_ns > t
                                                 ? (json_int_t)((c->fsm.restart_at_ns - t) / 1000000)
                                                 : 0));
        json_array_append_new(a, o);
    }
    return a;
}

/* The running stages, for the circuits acks (a stage being restarted is left out: it
 * applies the whole table when it starts). */
size_t children_live(const struct sup *s, struct circ_live *lv)
{
    size_t n = 0;

    for (uint32_t i = 0; i < s->n_ch; i++) {
        const struct child *c = &s->ch[i];
        enum stats_role r = stats_role_of(c->role);

        if (!c->pid) continue;
        lv[n].slot = pipeline_stats_slot_index(s->pl.config, r, c->index);
        lv[n].pid = (uint32_t)c->pid;
        lv[n].stage = plan_role_name(c->role);
        lv[n].index = c->index;
        n++;
    }
    return n;
}

/* DAEMON_ACT_TERM: every stage told to stop. */
void children_stop(struct sup *s)
{
    /* SIGTERM, cuzkd's own: no try counted; no restart after (child_fsm.h) */
    for (uint32_t i = 0; i < s->n_ch; i++) children_event(s, &s->ch[i], CHILD_EV_SHUTDOWN, os_now_ns(), 0);
    api_child_event(s, CHILD_EV_SHUTDOWN, os_now_ns(), 0);
    logmsg("stopping the stages");
}

int children_alive(const struct sup *s)
{
    if (s->api.pid) return 1;
    for (uint32_t i = 0; i < s->n_ch; i++)
        if (s->ch[i].pid) return 1;
    return 0;
}

/* Every stage has started and written its pid into its stats slot. */
static int stages_up(const struct sup *s)
{
    for (uint32_t i = 0; i < s->n_ch; i++) {
        const struct child *c = &s->ch[i];
        enum stats_role r = stats_role_of(c->role);
        struct stats_slot *sl = pipeline_stats_slot(&s->pl, r, c->index);

        if (!c->pid || !sl || barrier_load_acquire(&sl->pid) != c->pid) return 0;
    }
    return 1;
}

/* systemd (Type=notify): READY=1 once every stage is up, STOPPING=1 on shutdown. */
void children_notify_systemd(struct sup *s)
{
    char msg[320];

    if (s->notified || daemon_fsm_stopping(&s->life) || !stages_up(s)) return;
    s->notified = 1;
    snprintf(msg, sizeof(msg), "READY=1\nSTATUS=%u worker(s) %s, %u synth, 1 finalizer up",
             s->plan->n_workers, s->c->devices, s->plan->n_synth);
    if (check_sd_notify(msg) < 0) logmsg("sd_notify to $NOTIFY_SOCKET failed: %s", strerror(errno));
}
