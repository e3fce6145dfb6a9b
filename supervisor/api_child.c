/* api_child.c — cuzkd --listen ADDR:PORT: the HTTP API process (cuzk-api, api/) as
 * one more child (sup.h). It is started and restarted like a stage, by the same state
 * machine (child_fsm.h: backoff after fast deaths, SIGTERM at shutdown), but it holds
 * no partitions and has no stats slot: nothing to reclaim at its death, and its
 * liveness is its pid (every look at it counts as a heartbeat). It gets the control
 * socket's path and talks to cuzkd as any client does; it runs with cuzkd's uid, or
 * with --api-user's when cuzkd is root (cuzk-api drops root itself, after binding),
 * so its submits may name a tenant (protocol.h). With --queue it gets the queue too, in
 * queue mode (docs/api.md): the URL, which may hold the password of cuzkd's 0600
 * config file, goes as descriptor 3 (a sealed memfd, --queue-fd 3), never in argv,
 * which every local user reads. */
#include "sup.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/error.h"

static const struct child_fsm_cfg api_fsm_cfg = { .stall_ns = 0 };

struct api_args {
    char path[PROTO_PATH_MAX + 32], uid[16], cbdb[PROTO_PATH_MAX + 96];
    char *argv[24];
};

static void api_args(struct sup *s, struct api_args *a)
{
    const struct cuzkd_config *c = s->c;
    int n = 0;

    snprintf(a->path, sizeof(a->path), "%s/cuzk-api", s->bin_dir);
    a->argv[n++] = a->path;
    a->argv[n++] = "--socket";
    a->argv[n++] = s->sock_path;
    a->argv[n++] = "--listen";
    a->argv[n++] = (char *)c->api_listen;
    a->argv[n++] = "--api-tokens";
    a->argv[n++] = (char *)c->api_tokens;
    /* cuzk-api drops root to --user once it has read its tokens and bound: cuzkd's
     * own uid (no change unless root), or under a root cuzkd the --api-user, so that
     * the process facing the network is not root. */
    if (geteuid() == 0 && c->have_api_uid)
        snprintf(a->uid, sizeof(a->uid), "%u", (unsigned)c->api_uid);
    else
        snprintf(a->uid, sizeof(a->uid), "%u", (unsigned)geteuid());
    a->argv[n++] = "--user";
    a->argv[n++] = a->uid;
    a->argv[n++] = "--instance";
    a->argv[n++] = (char *)c->instance;
    if (c->queue[0]) {
        a->argv[n++] = "--queue-fd";
        a->argv[n++] = "3";
    }
    if (!c->no_store) { /* callbacks' deliveries beside the job store, kept across restarts */
        if (geteuid() == 0 && c->have_api_uid) {
            /* An --api-user may not write the state dir (nor read the job store): its
             * file goes in a directory of its own there. A failure here leaves the API
             * without callbacks, which it says; it does not stop it. */
            snprintf(a->cbdb, sizeof(a->cbdb), "%s/%s.api", c->state_dir, c->instance);
            if ((!mkdir(a->cbdb, 0700) || errno == EEXIST) && chown(a->cbdb, c->api_uid, (gid_t)-1))
                fprintf(stderr, "cuzkd: %s: %s\n", a->cbdb, strerror(errno));
            snprintf(a->cbdb + strlen(a->cbdb), sizeof(a->cbdb) - strlen(a->cbdb), "/callbacks.db");
        } else {
            snprintf(a->cbdb, sizeof(a->cbdb), "%s/%s.callbacks.db", c->state_dir, c->instance);
        }
        a->argv[n++] = "--callback-db";
        a->argv[n++] = a->cbdb;
    }
    if (c->api_cors[0]) {
        a->argv[n++] = "--cors-origin";
        a->argv[n++] = (char *)c->api_cors;
    }
    if (c->tls_cert[0]) {
        a->argv[n++] = "--tls-cert";
        a->argv[n++] = (char *)c->tls_cert;
        a->argv[n++] = "--tls-key";
        a->argv[n++] = (char *)c->tls_key;
    }
    a->argv[n] = NULL;
}

/* The queue's URL in a sealed memfd for the child's descriptor 3; -1 on failure. */
static int queue_memfd(const char *url)
{
    int fd = memfd_create("cuzk-api-queue", MFD_CLOEXEC | MFD_ALLOW_SEALING);
    size_t n = strlen(url);

    if (fd < 0) return -1;
    if (write(fd, url, n) != (ssize_t)n ||
        fcntl(fd, F_ADD_SEALS, F_SEAL_WRITE | F_SEAL_GROW | F_SEAL_SHRINK | F_SEAL_SEAL)) {
        close(fd);
        return -1;
    }
    return fd;
}

static int api_start(struct sup *s)
{
    struct api_args a;
    pid_t parent = getpid(), pid;
    sigset_t none;
    int qfd = -1;

    api_args(s, &a);
    if (s->c->queue[0] && (qfd = queue_memfd(s->c->queue)) < 0) {
        logmsg("memfd for cuzk-api's queue: %s", strerror(errno));
        return -errno;
    }
    if ((pid = fork()) < 0) {
        logmsg("fork for cuzk-api: %s", strerror(errno));
        if (qfd >= 0) close(qfd);
        return -errno;
    }
    if (pid == 0) { /* async-signal-safe calls only until exec */
        prctl(PR_SET_PDEATHSIG, SIGTERM);
        if (getppid() != parent) _exit(CUZK_EXIT_SYSTEM);
        /* The queue's memfd at 3, inherited (dup2 clears close-on-exec; at 3
         * already, the flag is cleared by hand); every other descriptor closed. */
        if (qfd >= 0 && (qfd == 3 ? fcntl(3, F_SETFD, 0) : dup2(qfd, 3)) < 0) _exit(CUZK_EXIT_SYSTEM);
        syscall(SYS_close_range, qfd >= 0 ? 4 : 3, ~0u, 0);
        sigemptyset(&none);
        sigprocmask(SIG_SETMASK, &none, NULL);
        signal(SIGPIPE, SIG_DFL);
        execv(a.path, a.argv);
        _exit(127);
    }
    if (qfd >= 0) close(qfd);
    s->api.pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
    if (s->api.pidfd < 0) {
        logmsg("pidfd_open(%d): %s; killing it", (int)pid, strerror(errno));
        kill(pid, SIGKILL);
        waitpid(pid, NULL, 0);
        return -errno;
    }
    s->api.pid = pid;
    s->api.gen++;
    arm_poll(s, s->api.pidfd, POLLIN, ev_data(EV_API_PIDFD, s->api.gen, 0));
    logmsg("started cuzk-api (pid %d, generation %u) on %s", (int)pid, s->api.generation, s->c->api_listen);
    return 0;
}

void api_child_event(struct sup *s, enum child_event ev, uint64_t t, uint64_t arg)
{
    struct child_step st;

    if (!s->api.on) return;
    st = child_fsm_step(&s->api.fsm, &api_fsm_cfg, ev, t, arg);
    if ((st.actions & (CHILD_ACT_TERM | CHILD_ACT_KILL)) && s->api.pid)
        kill(s->api.pid, st.actions & CHILD_ACT_KILL ? SIGKILL : SIGTERM);
    if (st.actions & CHILD_ACT_BACKOFF)
        logmsg("cuzk-api died %u time(s) in a row within 10 s of starting: restarting in %.1f s",
               s->api.fsm.fast_deaths, (double)st.delay_ns / 1e9);
    if (st.actions & CHILD_ACT_START)
        api_child_event(s, api_start(s) ? CHILD_EV_SPAWN_FAILED : CHILD_EV_SPAWNED, t, 0);
}

void api_child_init(struct sup *s)
{
    s->api.pidfd = -1;
    if (!s->c->api_listen[0]) return;
    s->api.on = 1;
    child_fsm_init(&s->api.fsm);
    api_child_event(s, CHILD_EV_TIMER, os_now_ns(), 0); /* due at once: start */
}

void api_child_timer(struct sup *s, uint64_t t)
{
    if (s->api.on && s->api.fsm.deadline_ns && s->api.fsm.deadline_ns <= t)
        api_child_event(s, CHILD_EV_TIMER, t, s->api.pid ? t : 0);
}

void api_child_reap(struct sup *s, uint32_t gen)
{
    int status;

    if (!s->api.pid || gen != s->api.gen || waitpid(s->api.pid, &status, WNOHANG) != s->api.pid) return;
    if (WIFEXITED(status))
        logmsg("cuzk-api (pid %d) exited with code %d", (int)s->api.pid, WEXITSTATUS(status));
    else if (WIFSIGNALED(status))
        logmsg("cuzk-api (pid %d) killed by signal %d (%s)", (int)s->api.pid, WTERMSIG(status),
               strsignal(WTERMSIG(status)));
    close(s->api.pidfd);
    s->api.pidfd = -1;
    s->api.pid = 0;
    s->api.generation++;
    api_child_event(s, CHILD_EV_EXITED, os_now_ns(), (uint64_t)(unsigned)status);
    child_timer_arm(s);
}

void api_child_kill(struct sup *s)
{
    if (!s->api.pid) return;
    kill(s->api.pid, SIGKILL);
    waitpid(s->api.pid, NULL, 0);
    s->api.pid = 0;
}

void api_child_reload(struct sup *s)
{
    /* cuzk-api reads its --api-tokens again on SIGHUP (it blocks the signal from its
     * first line, so one sent while it starts waits). */
    if (s->api.on && s->api.pid && kill(s->api.pid, SIGHUP))
        logmsg("cuzk-api (pid %d): SIGHUP: %s", (int)s->api.pid, strerror(errno));
}
