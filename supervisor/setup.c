/* setup.c — cuzkd's process set-up (sup.h): the run directory, the pid file, the
 * control socket, the shared segments, daemonizing and the log, descriptor limits. */
#include "sup.h"

#include <errno.h>
#include <signal.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "base/error.h"
#include "shm/pool.h"

/* The run directory holds the socket and pid file: create it with mode, or accept an
 * existing one only if it is a real directory (lstat: not a symlink) owned by our euid
 * that no one else can write to or enter (no group write, nothing for others). 0 or a
 * message in err. */
int trusted_run_dir(const char *dir, mode_t mode, char *err, size_t errlen)
{
    struct stat st;
    int rc;

    if ((rc = os_mkdir_p(dir, mode)) || (rc = os_dir_check(dir, 0027, 0, &st)) < 0) {
        snprintf(err, errlen, "%s", strerror(-rc));
        return rc;
    }
    if (rc & OS_DIR_NOT_DIR) {
        snprintf(err, errlen,
                 "is %s, not a directory; refusing it (remove it, or pass "
                 "another --run-dir)",
                 S_ISLNK(st.st_mode) ? "a symlink" : "not a directory");
        return -ENOTDIR;
    }
    if (rc & OS_DIR_OWNER) {
        snprintf(err, errlen,
                 "is owned by uid %u, not by this daemon's uid %u; refusing it "
                 "(another user could replace the socket or pid file)",
                 (unsigned)st.st_uid, (unsigned)geteuid());
        return -EPERM;
    }
    if (rc & OS_DIR_MODE) {
        snprintf(err, errlen,
                 "has mode %04o: group-writable or open to others; refusing it "
                 "(chmod %04o it, or pass another --run-dir)",
                 (unsigned)(st.st_mode & 07777), (unsigned)mode);
        return -EPERM;
    }
    return 0;
}

/* With --group, the group's members must reach the socket: a run dir made earlier
 * 0700 (a first start without group, a hand-made one) is opened to the group (0750:
 * ours, so that is the mode trusted_run_dir would have created), and each directory
 * above it that a member could not pass is named, once, instead of failing silently
 * at every client's connect. */
void group_reach(const struct cuzkd_config *c)
{
    char p[PROTO_PATH_MAX], *slash;
    struct stat st;

    if (!stat(c->run_dir, &st) && !(st.st_mode & S_IXGRP)) {
        if (chmod(c->run_dir, (st.st_mode & 07777) | S_IRGRP | S_IXGRP))
            fprintf(stderr,
                    "cuzkd: run directory %s is mode %04o and cannot be opened to group "
                    "%s (%s): its members cannot reach the socket\n",
                    c->run_dir, (unsigned)(st.st_mode & 07777), c->group, strerror(errno));
        else
            fprintf(stderr,
                    "cuzkd: run directory %s was mode %04o: made %04o so that group %s "
                    "reaches the socket\n",
                    c->run_dir, (unsigned)(st.st_mode & 07777),
                    (unsigned)((st.st_mode & 07777) | S_IRGRP | S_IXGRP), c->group);
    }
    snprintf(p, sizeof(p), "%s", c->run_dir);
    while ((slash = strrchr(p, '/')) && slash != p) {
        *slash = '\0';
        if (stat(p, &st)) continue;
        /* Others' x lets everyone through; the group's x only this group's members
         * (or the owner's, when it is the daemon's uid, which members are not). */
        if (!(st.st_mode & S_IXOTH) && !((st.st_mode & S_IXGRP) && st.st_gid == c->gid)) {
            fprintf(stderr,
                    "cuzkd: warning: members of group %s cannot reach the socket: %s "
                    "(mode %04o, group %u) does not let them through\n",
                    c->group, p, (unsigned)(st.st_mode & 07777), (unsigned)st.st_gid);
            break;
        }
    }
}

/* Is another cuzkd answering on this socket? A connect alone does not tell: the
 * listening socket of a cuzkd that was killed lingers while the kernel tears it down
 * (and for good while a thread of it is stuck in a hung file system), accepting
 * connections no one will ever read. So a line is sent, and only a reply within
 * SOCKET_LIVE_MS says a cuzkd runs there. Asked only once the pid file showed no live
 * owner (write_pid_file), so a cuzkd busy in its start is never mistaken for gone. */
#define SOCKET_LIVE_MS 3000
static int socket_live(const char *path)
{
    static const char ping[] = "{\"req\":\"status\",\"job\":0}\n";
    struct sockaddr_un a = { .sun_family = AF_UNIX };
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0), live = 0;
    struct pollfd p;
    char c;

    if (fd < 0) return 0;
    snprintf(a.sun_path, sizeof(a.sun_path), "%s", path);
    if (!connect(fd, (struct sockaddr *)&a, sizeof(a)) &&
        send(fd, ping, sizeof(ping) - 1, MSG_NOSIGNAL) == (ssize_t)(sizeof(ping) - 1)) {
        p = (struct pollfd){ .fd = fd, .events = POLLIN };
        /* a reply, or an orderly close (a cuzkd that accepted and turned us away);
         * a reset is the dying listener's, as is no answer at all */
        live = poll(&p, 1, SOCKET_LIVE_MS) == 1 && recv(fd, &c, 1, MSG_DONTWAIT) >= 0;
    }
    close(fd);
    return live;
}

int listen_socket(struct sup *s, char *err, size_t errlen)
{
    struct sockaddr_un a = { .sun_family = AF_UNIX };
    int fd;

    if (strlen(s->c->run_dir) + strlen(s->c->instance) + 7 > sizeof(a.sun_path)) {
        snprintf(err, errlen,
                 "socket path %.200s/%s.sock is longer than %zu bytes: "
                 "choose a shorter --run-dir",
                 s->c->run_dir, s->c->instance, sizeof(a.sun_path) - 1);
        return -ENAMETOOLONG;
    }
    if (snprintf(s->sock_path, sizeof(s->sock_path), "%s/%s.sock", s->c->run_dir, s->c->instance) >=
        (int)sizeof(s->sock_path))
        return -ENAMETOOLONG; /* checked above */
    if (socket_live(s->sock_path)) {
        snprintf(err, errlen,
                 "instance \"%s\" is already running (%s answers); stop it "
                 "first or choose another --instance",
                 s->c->instance, s->sock_path);
        s->sock_path[0] = '\0';
        return -EADDRINUSE;
    }
    unlink(s->sock_path); /* stale, from a daemon that was killed */
    fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        snprintf(err, errlen, "socket: %s", strerror(errno));
        return -errno;
    }
    memcpy(a.sun_path, s->sock_path, strlen(s->sock_path) + 1);
    if (bind(fd, (struct sockaddr *)&a, sizeof(a)) || listen(fd, 64)) {
        snprintf(err, errlen, "%s: %s", s->sock_path, strerror(errno));
        close(fd);
        s->sock_path[0] = '\0';
        return -errno;
    }
    chmod(s->sock_path, 0660);
    if (s->c->have_gid && chown(s->sock_path, (uid_t)-1, s->c->gid))
        logmsg("chgrp %s %s: %s", s->c->group, s->sock_path, strerror(errno));
    s->lfd = fd;
    return 0;
}

/* Process pid's state letter from /proc/PID/stat (R, S, D, Z, ...), or 0. */
static char proc_state(long pid)
{
    char p[64], buf[512], *paren;
    int fd;
    ssize_t n;

    snprintf(p, sizeof(p), "/proc/%ld/stat", pid);
    if ((fd = open(p, O_RDONLY | O_CLOEXEC)) < 0) return 0;
    n = read(fd, buf, sizeof(buf) - 1);
    close(fd);
    if (n <= 0) return 0;
    buf[n] = '\0';
    /* "PID (COMM) S ...": the name may hold spaces and parentheses, the last ')' ends it */
    paren = strrchr(buf, ')');
    return paren && paren[1] == ' ' ? paren[2] : 0;
}

/* Does the cuzkd named by an existing pid file still run? It holds a lock on the file
 * (flock, for its whole life) that the kernel releases when its descriptors go, which
 * a dead process's do even while it stays a zombie, or while a thread of it is stuck
 * in a hung file system and its exit cannot finish. So the lock decides: held, it
 * runs. Free, it runs only if it is alive and neither a zombie nor stuck (D): a cuzkd
 * of a version that took no lock. */
static int pid_file_live(int fd, long old)
{
    char st;

    if (flock(fd, LOCK_SH | LOCK_NB)) return errno == EWOULDBLOCK;
    if (old <= 0 || old == (long)getpid() || (kill((pid_t)old, 0) && errno != EPERM)) return 0;
    st = proc_state(old);
    return st && st != 'Z' && st != 'D' && st != 'X';
}

/* RUN/INSTANCE.pid, made by link() of a locked temp file (so it never exists unlocked
 * or empty) and never through a link: an existing one is removed only if it is a
 * regular file whose cuzkd is gone (pid_file_live; a symlink or anything else planted
 * there is refused, never followed). The lock stays held on an open descriptor
 * (close-on-exec: no stage inherits it) until cuzkd exits. 0 or a message in err. */
int write_pid_file(struct sup *s, char *err, size_t errlen)
{
    char buf[32], tmp[sizeof(s->pid_path) + 32];
    struct stat st;
    int fd, n;

    snprintf(s->pid_path, sizeof(s->pid_path), "%s/%s.pid", s->c->run_dir, s->c->instance);
    if (lstat(s->pid_path, &st) == 0) {
        long old = 0;
        int live;

        if (!S_ISREG(st.st_mode)) {
            snprintf(err, errlen, "pid file %.900s is %s, not a regular file; refusing it", s->pid_path,
                     S_ISLNK(st.st_mode) ? "a symlink" : "special");
            s->pid_path[0] = '\0';
            return -EEXIST;
        }
        fd = open(s->pid_path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
        n = fd >= 0 ? (int)read(fd, buf, sizeof(buf) - 1) : -1;
        if (n > 0) {
            buf[n] = '\0';
            old = strtol(buf, NULL, 10);
        }
        live = fd >= 0 && pid_file_live(fd, old);
        if (fd >= 0) close(fd);
        if (live) {
            snprintf(err, errlen,
                     "instance \"%.100s\" is already running (pid file %.700s "
                     "names process %ld); stop it first or choose another --instance",
                     s->c->instance, s->pid_path, old);
            s->pid_path[0] = '\0';
            return -EEXIST;
        }
        if (unlink(s->pid_path) && errno != ENOENT) {
            snprintf(err, errlen, "stale pid file %.900s: %s", s->pid_path, strerror(errno));
            s->pid_path[0] = '\0';
            return -errno;
        }
        logmsg("removed a stale pid file %s (process %ld is gone%s)", s->pid_path, old,
               old > 0 && !kill((pid_t)old, 0) ? ", or a zombie, or stuck in its exit" : "");
    }
    snprintf(tmp, sizeof(tmp), "%s.%d", s->pid_path, (int)getpid());
    unlink(tmp); /* a previous process of this pid's, long gone */
    fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
    n = snprintf(buf, sizeof(buf), "%d\n", (int)getpid());
    if (fd < 0 || flock(fd, LOCK_EX | LOCK_NB) || write(fd, buf, (size_t)n) != n || fsync(fd)) {
        snprintf(err, errlen, "pid file %.900s: %s", tmp, strerror(errno));
        if (fd >= 0) close(fd);
        unlink(tmp);
        s->pid_path[0] = '\0';
        return -EIO;
    }
    if (link(tmp, s->pid_path)) { /* EEXIST: another cuzkd of this instance came first */
        snprintf(err, errlen, "pid file %.900s: %s", s->pid_path, strerror(errno));
        close(fd);
        unlink(tmp);
        s->pid_path[0] = '\0';
        return -EEXIST;
    }
    unlink(tmp);
    /* fd stays open, its lock held, until cuzkd exits (pid_file_live) */
    return 0;
}

void find_bin_dir(struct sup *s)
{
    char exe[PATH_MAX];
    ssize_t n;

    if (s->c->bin_dir[0]) {
        snprintf(s->bin_dir, sizeof(s->bin_dir), "%s", s->c->bin_dir);
        return;
    }
    n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
    if (n <= 0) {
        snprintf(s->bin_dir, sizeof(s->bin_dir), ".");
        return;
    }
    exe[n] = '\0';
    snprintf(s->bin_dir, sizeof(s->bin_dir), "%s", dirname(exe));
}

int create_segments(struct sup *s, char *err, size_t errlen)
{
    struct pipe_params pp;
    struct pool_slab_report rep;
    uint64_t next_id;
    int rc;

    memset(&pp, 0, sizeof(pp));
    pp.n_workers = s->plan->n_workers;
    pp.n_synth = s->plan->n_synth;
    pp.max_jobs = s->c->max_jobs;
    pp.max_parts = s->c->max_parts;
    pp.buf_count = s->c->buffers;
    pp.buf_size = config_buf_bytes(s->c);
    pp.long_call_s = s->c->long_call_timeout_s;
    pp.write_timeout_s = s->c->write_timeout_s;
    pp.max_attempts = s->c->max_attempts;
    /* One pool share per node that the plan gives buffers to (in proportion to its
     * workers), bound to that node. */
    pp.n_nodes = 0;
    for (uint32_t k = 0; k < s->plan->n_nodes && pp.n_nodes < POOL_MAX_NODES; k++)
        if (s->plan->node_buffers[k]) {
            pp.numa_node[pp.n_nodes] = s->plan->node_os[k];
            pp.node_buf_count[pp.n_nodes++] = s->plan->node_buffers[k];
        }
    if (pp.n_nodes < 2) {
        pp.n_nodes = 1;
        memset(pp.node_buf_count, 0, sizeof(pp.node_buf_count));
    }
    /* Each stage's node, for the synths' routing (route.h). */
    for (uint32_t i = 0; i < s->plan->n_places; i++) {
        const struct plan_place *pl = &s->plan->places[i];

        if (pl->role == PLAN_WORKER && pl->index < PIPE_MAX_WORKERS)
            pp.worker_node[pl->index] = pl->numa_node;
        else if (pl->role == PLAN_SYNTH && pl->index < PIPE_MAX_WORKERS)
            pp.synth_node[pl->index] = pl->numa_node;
    }
    /* REPLACE: the socket check above showed no live instance of this name, so
     * segments left by a killed daemon are stale: report its jobs lost first. */
    next_id = collect_lost(s);
    rc = pipeline_create(&s->pl, s->c->instance, &pp, SEGMENT_REPLACE, err, errlen);
    if (rc) return rc;
    if (next_id) /* Relaxed: only this process allocates ids. */
        barrier_store_relaxed(&s->pl.data.jobtab.hdr->next_job_id, next_id);
    pool_slab_setup(&s->pl.data.pool, s->plan->fake ? POOL_SLAB_NO_MBIND : 0, &rep, NULL);
    logmsg("segments cuzk-%s.{data,stats}: %u buffer(s) of %u MiB%s%s%s", s->c->instance, s->c->buffers,
           s->c->buffer_mb, rep.locked ? ", locked" : "", rep.huge ? ", huge pages" : "",
           rep.numa_bound ? ", NUMA-bound" : "");
    if (rep.reason[0]) logmsg("buffers: %s", rep.reason);
    s->slot = pipeline_stats_slot(&s->pl, STATS_ROLE_SUPERVISOR, 0);
    if (s->slot) {
        stats_slot_start(s->slot, STATS_ROLE_SUPERVISOR, 0, getpid(), os_now_ns());
        static const char *const names[SUP_C_COUNT] = {
            [SUP_C_DEATHS] = "deaths",
            [SUP_C_SUBMITS] = "submits",
            [SUP_C_STORE_COMMITS] = "store_commits",
            [SUP_C_STORE_NS] = "store_ns",
            [SUP_C_STORE_ERRORS] = "store_errors",
        };

        for (uint32_t i = 0; i < SUP_C_COUNT; i++) stats_slot_name_counter(s->slot, i, names[i]);
        publish_gauge_names(s);
    }
    return 0;
}

/* Daemon mode: fork; the parent waits for a byte on a pipe (0 ok) and exits with it. */
int daemonize(struct sup *s)
{
    int p[2];
    pid_t pid;

    if (pipe2(p, O_CLOEXEC)) return -errno;
    pid = fork();
    if (pid < 0) return -errno;
    if (pid > 0) {
        unsigned char code = CUZK_EXIT_IO;

        close(p[1]);
        if (read(p[0], &code, 1) != 1) code = CUZK_EXIT_IO;
        _exit(code);
    }
    close(p[0]);
    setsid();
    s->ready_fd = p[1];
    return 0;
}

void tell_launcher(struct sup *s, unsigned char code)
{
    if (s->ready_fd >= 0) {
        (void)!write(s->ready_fd, &code, 1);
        close(s->ready_fd);
        s->ready_fd = -1;
    }
}

void redirect_log(struct sup *s)
{
    char path[PROTO_PATH_MAX + 64];
    int fd, nul;

    snprintf(path, sizeof(path), "%s/%s.log", s->c->run_dir, s->c->instance);
    fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0640);
    nul = open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (nul >= 0) {
        dup2(nul, 0);
        close(nul);
    }
    if (fd >= 0) {
        dup2(fd, 1);
        dup2(fd, 2);
        close(fd);
    }
}

/* Descriptors: fds 0-2 open (a copy must never be fd 0: pipeline.h reads <= 0 as
 * "none"), and the soft limit raised to the hard one: each queued partition holds
 * its witness copy (copies.h), so the default 1024 would cap a full table. */
void fd_limits(void)
{
    struct rlimit rl;

    for (int fd = 0; fd < 3; fd++)
        if (fcntl(fd, F_GETFD) < 0 && errno == EBADF) {
            int n = open("/dev/null", O_RDWR);

            if (n >= 0 && n != fd) {
                dup2(n, fd);
                close(n);
            }
        }
    if (!getrlimit(RLIMIT_NOFILE, &rl) && rl.rlim_cur < rl.rlim_max) {
        rl.rlim_cur = rl.rlim_max;
        (void)setrlimit(RLIMIT_NOFILE, &rl); /* best effort: the old limit still works */
    }
}
