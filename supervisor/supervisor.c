/* supervisor.c — cuzkd's event loop (sup.h): one io_uring carries every event; each
 * completion goes to its handler, and supervisor_run sets up, runs and tears down. */
#include "sup.h"

#include <errno.h>
#include <stdarg.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/timerfd.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "base/error.h"
#include "supervisor/metrics_http.h"

/* cuzkd's log is its stderr (redirected in the background): one line each. */
void logmsg(const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    os_vlog(1, "cuzkd", fmt, ap);
    va_end(ap);
}
/* A submission slot; when the ring's are all taken, what is queued is submitted
 * first. */
static struct io_uring_sqe *sqe_get(struct sup *s)
{
    struct io_uring_sqe *sqe = io_uring_get_sqe(&s->ring);

    if (!sqe) {
        io_uring_submit(&s->ring);
        sqe = io_uring_get_sqe(&s->ring);
    }
    return sqe;
}

/* A one-shot poll of fd for events; its completion carries data (ev_data). */
void supervisor_arm_poll(struct sup *s, int fd, unsigned events, uint64_t data)
{
    struct io_uring_sqe *sqe = sqe_get(s);

    io_uring_prep_poll_add(sqe, fd, events);
    io_uring_sqe_set_data64(sqe, data);
}

/* The poll armed with data, cancelled (its completion says -ECANCELED). */
void supervisor_cancel_poll(struct sup *s, uint64_t data)
{
    struct io_uring_sqe *sqe = sqe_get(s);

    io_uring_prep_poll_remove(sqe, data);
    io_uring_sqe_set_data64(sqe, 0);
}

static void handle_signal(struct sup *s)
{
    struct signalfd_siginfo si;

    while (read(s->sfd, &si, sizeof(si)) == (ssize_t)sizeof(si)) {
        if (si.ssi_signo == SIGTERM || si.ssi_signo == SIGINT)
            lifecycle_event(s, DAEMON_EV_STOP, os_now_ns(), 0,
                            si.ssi_signo == SIGTERM ? "SIGTERM" : "SIGINT");
        else if (si.ssi_signo == SIGHUP) {
            /* As `cuzk reload`: the config's circuits read again. */
            json_t *changed = NULL;
            char err[512];

            api_child_reload(s);
            if (catalog_reload(s, &changed, err, sizeof(err)))
                logmsg("SIGHUP: reload refused: %s", err);
            else
                logmsg("SIGHUP: reload: %u circuit(s) declared", (unsigned)s->n_cat);
            json_decref(changed);
        } else if (si.ssi_signo == SIGCHLD)
            for (uint32_t i = 0; i < s->n_ch; i++) children_reap(s, &s->ch[i]);
    }
}

/* EV_DOORBELL: a stage decided a job; its waiters are answered now, not at the tick. */
static void handle_doorbell(struct sup *s)
{
    uint64_t rung;

    (void)!read(s->doorbell_fd, &rung, sizeof(rung));
    s->doorbell_rings++;
    requests_answer_waiters(s, os_now_ns());
}

/* The fds the loop polls for POLLIN with a one-shot poll: each event runs the handler,
 * then the poll is armed again. */
static const struct {
    enum ev_type t;
    size_t fd; /* offsetof(struct sup, the fd) */
    void (*handle)(struct sup *s);
} polled[] = {
    { EV_SIGNAL, offsetof(struct sup, sfd), handle_signal },
    { EV_TIMER, offsetof(struct sup, tfd), timers_tick },
    { EV_CHILD_TIMER, offsetof(struct sup, cfd), children_timers },
    { EV_INTAKE, offsetof(struct sup, intake_fd), submit_handle_intakes },
    { EV_DOORBELL, offsetof(struct sup, doorbell_fd), handle_doorbell },
};

static void arm_polled(struct sup *s, size_t i)
{
    supervisor_arm_poll(s, *(const int *)((const char *)s + polled[i].fd), POLLIN,
                        ev_data(polled[i].t, 0, 0));
}

/* Everything before the event descriptors: descriptor limits, the run directory,
 * daemonizing. 0, or the exit code (nothing to undo). */
static int run_prepare(struct sup *s)
{
    const struct cuzkd_config *c = s->c;
    char err[1024];
    int rc;

    setup_fd_limits();
    s->lfd = s->sfd = s->tfd = s->cfd = s->ready_fd = s->copies_dfd = s->results_dfd = s->intake_fd = -1;
    s->doorbell_fd = -1;
    s->dur = json_object();
    for (int i = 0; i < N_CONNS; i++) s->conns[i].fd = -1;
    signal(SIGPIPE, SIG_IGN);

    if ((rc = setup_trusted_run_dir(c->run_dir, c->have_gid ? 0750 : 0700, err, sizeof(err)))) {
        fprintf(stderr, "cuzkd: run directory %s: %s\n", c->run_dir, err);
        return CUZK_EXIT_IO;
    }
    if (c->have_gid && chown(c->run_dir, (uid_t)-1, c->gid))
        fprintf(stderr, "cuzkd: chgrp %s %s: %s\n", c->group, c->run_dir, strerror(errno));
    if (c->have_gid) setup_group_reach(c);
    if (!c->foreground) {
        if ((rc = setup_daemonize(s))) {
            fprintf(stderr, "cuzkd: fork: %s\n", strerror(-rc));
            return CUZK_EXIT_INTERNAL;
        }
        setup_redirect_log(s);
    }
    setup_bin_dir(s);
    return 0;
}

/* Signals as a descriptor (blocked before any child exists), the timers, the
 * eventfds and the ring. -1 (logged) when one cannot be had. */
static int open_event_fds(struct sup *s)
{
    struct itimerspec its = { .it_interval = { 0, TICK_NS }, .it_value = { 0, TICK_NS } };
    sigset_t mask;
    int rc;

    sigemptyset(&mask);
    sigaddset(&mask, SIGTERM);
    sigaddset(&mask, SIGINT);
    sigaddset(&mask, SIGCHLD);
    sigaddset(&mask, SIGHUP);
    sigprocmask(SIG_BLOCK, &mask, NULL);
    s->sfd = signalfd(-1, &mask, SFD_NONBLOCK | SFD_CLOEXEC);
    s->tfd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
    s->cfd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
    s->intake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    s->doorbell_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    s->fsm_cfg.stall_ns = (uint64_t)s->c->stall_timeout_s * 1000000000ull;
    daemon_fsm_init(&s->life);
    s->life_cfg.drain_ns = (uint64_t)s->c->drain_timeout_s * 1000000000ull;
    s->life_cfg.grace_ns = DAEMON_GRACE_NS;
    if (s->sfd < 0 || s->tfd < 0 || s->cfd < 0 || s->intake_fd < 0 || s->doorbell_fd < 0 ||
        timerfd_settime(s->tfd, 0, &its, NULL)) {
        logmsg("signalfd/timerfd/eventfd: %s", strerror(errno));
        return -1;
    }
    if ((rc = io_uring_queue_init(256, &s->ring, 0))) {
        logmsg("io_uring_queue_init: %s", strerror(-rc));
        return -1;
    }
    return 0;
}

/* cuzkd's own state of each job slot and partition (sup.h), the copies, the
 * descriptor budget. -1: out of memory (logged). */
static int alloc_state(struct sup *s)
{
    const struct cuzkd_config *c = s->c;

    s->jobs = calloc(c->max_jobs, sizeof(*s->jobs));
    s->parts = calloc(c->max_parts, sizeof(*s->parts));
    s->preload_owner = json_object();
    for (uint32_t j = 0; s->jobs && j < c->max_jobs; j++) jobs_reset(s, j);
    for (uint32_t p = 0; s->parts && p < c->max_parts; p++) s->parts[p].rec = REC_UNKNOWN;
    /* No idle copy is kept: a copy lives while a job or a preload holds it (a user's
     * finished job costs nothing; the operator preloads what should stay). */
    copies_init(&s->copies, 0);
    {
        struct rlimit rl;
        rlim_t lim = getrlimit(RLIMIT_NOFILE, &rl) ? 1024 : rl.rlim_cur;

        s->fd_budget = lim / 2 > UINT32_MAX ? UINT32_MAX : (uint32_t)(lim / 2);
        s->spare_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
    }
    control_set_policy(&(struct control_policy){ .wgen_dirs = s->c->wgen_dir });
    if (!s->jobs || !s->parts || !s->preload_owner) {
        logmsg("out of memory");
        return -1;
    }
    return 0;
}

/* --queue: the fleet thread (fleet.h); --metrics-listen: the metrics server
 * (metrics_http.h), each in its own thread. 0, or CUZK_EXIT_IO (logged): an
 * unreachable database stops cuzkd at start, like a port that cannot be bound. */
static int start_threads(struct sup *s)
{
    const struct cuzkd_config *c = s->c;
    char err[1024], bound[96];

    if (c->queue[0]) {
        char cb[sizeof(s->bin_dir) + 8];
        const struct fleet_options fo = { .queue = c->queue,
                                          .instance = c->instance,
                                          .run_dir = c->run_dir,
                                          .lease_s = c->queue_lease_s,
                                          .parallel = c->queue_parallel,
                                          .store_proofs = c->store_proofs };

        if ((size_t)snprintf(cb, sizeof(cb), "%s/cuzk", s->bin_dir) >= sizeof(cb))
            cb[0] = '\0'; /* cannot happen: bin_dir is a path of its size */
        if (fleet_daemon_start(&s->fleet_thread, &fo, cb, err, sizeof(err))) {
            logmsg("%s", err);
            return CUZK_EXIT_IO;
        }
        s->fleet = s->fleet_thread;
        logmsg("fleet: claiming from the queue (lease %u s, %u at once)", c->queue_lease_s,
               c->queue_parallel);
    }
    if (c->metrics_listen[0]) {
        if (metrics_http_start(&s->metrics, c->metrics_listen, c->instance, s->fleet_thread,
                               c->no_store ? NULL : c->state_dir, c->metrics_conns, bound, sizeof(bound), err,
                               sizeof(err))) {
            logmsg("%s", err);
            return CUZK_EXIT_IO;
        }
        logmsg("metrics on http://%s/metrics", bound);
    }
    return 0;
}

static void stop_threads(struct sup *s)
{
    metrics_http_stop(s->metrics); /* it reads the fleet's health: first */
    s->metrics = NULL;
    s->fleet = NULL;
    fleet_daemon_stop(s->fleet_thread);
    s->fleet_thread = NULL;
}

/* Children: workers, synths, finalizer, in plan order; each is started by its first
 * timer event, due at once. */
static void start_children(struct sup *s)
{
    for (uint32_t i = 0; i < s->plan->n_places && i < MAX_CHILDREN; i++) {
        struct child *ch = &s->ch[s->n_ch++];

        ch->role = s->plan->places[i].role;
        ch->index = s->plan->places[i].index;
        ch->place = &s->plan->places[i];
        ch->pidfd = -1;
        child_fsm_init(&ch->fsm);
        children_event(s, ch, CHILD_EV_TIMER, os_now_ns(), 0); /* due at once: start */
    }
    api_child_init(s);
}

/* One completion, to its handler; a completion for a slot reused since it was armed
 * (another generation) is dropped. */
static void dispatch(struct sup *s, uint64_t d)
{
    enum ev_type t = (enum ev_type)(d >> 56);
    uint32_t gen = (uint32_t)(d >> 32) & 0xffffff, idx = (uint32_t)d;
    struct conn *k = idx < N_CONNS ? &s->conns[idx] : NULL;

    switch (t) {
    case EV_LISTEN:
        s->listen_armed = 0;
        if (!daemon_fsm_stopping(&s->life)) conns_accept(s);
        break;
    case EV_CONN:
        if (k && k->fd >= 0 && k->gen == gen) conns_read(s, k);
        break;
    case EV_CONN_OUT:
        if (k && k->fd >= 0 && k->gen == gen) {
            k->out_armed = 0;
            conns_flush(s, k);
        }
        break;
    case EV_PIDFD:
        if (idx < s->n_ch && s->ch[idx].gen == gen) children_reap(s, &s->ch[idx]);
        break;
    case EV_API_PIDFD: api_child_reap(s, gen); break;
    default: /* the polled fds */
        for (size_t i = 0; i < sizeof(polled) / sizeof(polled[0]); i++)
            if (polled[i].t == t) {
                polled[i].handle(s);
                arm_polled(s, i);
            }
        break;
    }
}

/* Until shutdown is done: the stages were told to stop and none is left. */
static void run_loop(struct sup *s)
{
    while (!daemon_fsm_finished(&s->life, children_alive(s))) {
        struct io_uring_cqe *cqe;
        unsigned head, seen = 0;
        int rc = io_uring_submit_and_wait(&s->ring, 1);

        if (rc < 0 && rc != -EINTR) {
            logmsg("io_uring: %s", strerror(-rc));
            break;
        }
        io_uring_for_each_cqe(&s->ring, head, cqe)
        {
            seen++;
            if (io_uring_cqe_get_data64(cqe) && cqe->res != -ECANCELED)
                dispatch(s, io_uring_cqe_get_data64(cqe));
        }
        io_uring_cq_advance(&s->ring, seen);
    }
}

/* The last replies (to `shutdown`, say): one blocking attempt each; then closed. */
static void close_conns(struct sup *s)
{
    for (int i = 0; i < N_CONNS; i++) {
        struct conn *k = &s->conns[i];

        if (k->fd >= 0 && k->out_len) {
            int fl = fcntl(k->fd, F_GETFL);

            fcntl(k->fd, F_SETFL, fl & ~O_NONBLOCK);
            (void)!send(k->fd, k->out + k->out_off, k->out_len - k->out_off, MSG_NOSIGNAL);
        }
        conns_close(s, k);
    }
}

/* What the set-up made after the socket, undone: stages still there killed, the
 * store's last states written, the segments removed, every job's files dropped. */
static void free_state(struct sup *s)
{
    int running = 0;

    for (uint32_t i = 0; i < s->n_ch; i++)
        if (s->ch[i].pid) {
            kill(s->ch[i].pid, SIGKILL);
            waitpid(s->ch[i].pid, NULL, 0);
        }
    api_child_kill(s);
    if (s->store) {
        journal_sync(s); /* the last partitions' ends; unfinished jobs stay running */
        store_close(s->store);
    }
    pipeline_detach(&s->pl);
    pipeline_destroy(s->c->instance);
    json_decref(s->preload_owner);
    catalog_free(s);
    for (uint32_t j = 0; s->jobs && j < s->c->max_jobs; j++) jobs_reset(s, j);
    free(s->jobs);
    free(s->parts);
    /* A thread still blocked in a client's read holds copies: they go with the
     * process. */
    while (s->intakes) {
        struct intake *t = s->intakes;

        s->intakes = t->next;
        if (intake_done(t))
            intake_free(t);
        else
            running = 1;
    }
    if (!running) copies_free(&s->copies);
    json_decref(s->dur);
    s->dur = NULL;
    if (s->copies_dfd >= 0) close(s->copies_dfd);
    if (s->results_dfd >= 0) close(s->results_dfd);
    json_decref(s->lost);
}

int supervisor_run(const struct cuzkd_config *c, const struct plan *p)
{
    static struct sup s_; /* large (connections, children): not on the stack */
    struct sup *s = &s_;
    char err[1024];
    int code;

    memset(s, 0, sizeof(*s));
    s->c = c;
    s->plan = p;
    if ((code = run_prepare(s))) return code;
    code = CUZK_EXIT_INTERNAL;
    if (open_event_fds(s)) goto out;
    /* The pid file first, the socket last: the socket is what clients and tests
     * wait for, so when it appears the pid file already names this daemon (and a
     * second daemon on this instance is stopped by the pid file before it touches
     * the socket). */
    code = CUZK_EXIT_IO;
    if (setup_pid_file(s, err, sizeof(err)) || setup_listen_socket(s, err, sizeof(err))) {
        logmsg("%s", err);
        goto out_ring;
    }
    if (setup_segments(s, err, sizeof(err))) {
        logmsg("%s", err);
        goto out_sock;
    }
    code = CUZK_EXIT_INTERNAL;
    if (alloc_state(s)) goto out_seg;
    /* Before any stage runs: resumed partitions are set before anyone can claim them. */
    if (!c->no_store && (code = resume_start(s, barrier_load_relaxed(&s->pl.data.jobtab.hdr->next_job_id))))
        goto out_seg;
    if ((code = start_threads(s))) goto out_seg;
    /* The declared circuits (catalog.c): preloads in the table before any stage. */
    catalog_load(s);
    start_children(s);
    supervisor_arm_poll(s, s->lfd, POLLIN, ev_data(EV_LISTEN, 0, 0));
    s->listen_armed = 1;
    for (size_t i = 0; i < sizeof(polled) / sizeof(polled[0]); i++) arm_polled(s, i);
    logmsg("instance \"%s\" listening on %s (pid %d, %u worker(s) %s)", c->instance, s->sock_path,
           (int)getpid(), p->n_workers, c->devices);
    setup_tell_launcher(s, 0);
    run_loop(s);
    logmsg("all stages stopped; removing segments, socket and pid file");
    stop_threads(s);
    code = 0;
    close_conns(s);
out_seg:
    stop_threads(s);
    free_state(s);
out_sock:
    if (s->lfd >= 0) close(s->lfd);
    if (s->sock_path[0]) unlink(s->sock_path);
out_ring:
    if (s->pid_path[0]) unlink(s->pid_path);
    io_uring_queue_exit(&s->ring);
out:
    if (s->sfd >= 0) close(s->sfd);
    if (s->tfd >= 0) close(s->tfd);
    if (s->cfd >= 0) close(s->cfd);
    setup_tell_launcher(s, (unsigned char)code);
    return code;
}
