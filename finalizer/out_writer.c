/* out_writer.c — per-directory writer processes of the finalizer (finalizer/out_writer.h). */
#include "finalizer/out_writer.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "base/error.h"
#include "shm/pipeline.h"
#include "base/os.h"

extern char **environ;

#define OW_MAGIC   0x5752574fu    /* "OWRW" */
#define OW_FD      3              /* the writer's socket */
#define OW_IDLE_NS 10000000000ull /* a writer idle this long is let go */
#define OW_STUCK_PER_UID \
    4 /* stuck writers of one uid's out dirs: beyond, its
                                  * writes to other dirs fail at once (a process each) */

/* finalizer -> writer, with the texts' memfd (SCM_RIGHTS): proof text, then public. */
struct ow_req {
    uint32_t magic, p;
    uint32_t owner_known, owner_uid;
    int64_t tag_pid;
    uint64_t proof_len, public_len;
    char odir[64];
    char name[PIPE_NAME_LEN];
};

/* writer -> finalizer */
struct ow_rep {
    uint32_t magic, p;
    int32_t rc;
    uint32_t pad;
    groth16_write_times wt;
    char err[1024];
};

/* ---- the writer process ------------------------------------------------------------ */

/* Again at publish what the submit checked (control.c, check_out_dir): in a sticky
 * out dir not the submitter's own, no output may replace another user's file; the
 * directory may have become sticky, or another user's file appeared, since submit.
 * 0, or -CUZK_E_OUTPUT with err. */
static int sticky_check(const struct ow_req *q, char *err, size_t errlen)
{
    struct stat st, o;
    char nm[PIPE_NAME_LEN + 16];
    int dfd, rc = 0;

    if (!q->owner_known || q->owner_uid == 0) return 0;
    dfd = open(q->odir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd < 0) return 0; /* the write reports it */
    if (!fstat(dfd, &st) && (st.st_mode & S_ISVTX) && st.st_uid != q->owner_uid)
        for (int k = 0; k < 2 && !rc; k++) {
            snprintf(nm, sizeof(nm), "%s.%s.json", q->name, k ? "public" : "proof");
            if (!fstatat(dfd, nm, &o, AT_SYMLINK_NOFOLLOW) && o.st_uid != q->owner_uid) {
                snprintf(err, errlen,
                         "refused: %s is another user's file (uid %u) in a "
                         "sticky out dir: uid %u may not replace it",
                         nm, (unsigned)o.st_uid, (unsigned)q->owner_uid);
                rc = -CUZK_E_OUTPUT;
            }
        }
    close(dfd);
    return rc;
}

static int read_all(int fd, char *buf, size_t len, off_t off)
{
    while (len) {
        ssize_t k = pread(fd, buf, len, off);

        if (k < 0 && errno == EINTR) continue;
        if (k <= 0) return -1;
        buf += k;
        len -= (size_t)k;
        off += k;
    }
    return 0;
}

static void serve_one(int sock, const struct ow_req *q, int mfd)
{
    struct ow_rep r = { .magic = OW_MAGIC, .p = q->p };
    char proof_path[PATH_MAX], public_path[PATH_MAX];
    char *pt = malloc(q->proof_len + 1), *ut = malloc(q->public_len + 1);

    if (!pt || !ut || read_all(mfd, pt, q->proof_len, 0) ||
        read_all(mfd, ut, q->public_len, (off_t)q->proof_len)) {
        snprintf(r.err, sizeof(r.err), "the writer could not read the proof text (bug)");
        r.rc = -CUZK_E_INTERNAL;
    } else {
        pt[q->proof_len] = ut[q->public_len] = '\0';
        snprintf(proof_path, sizeof(proof_path), "%s/%s.proof.json", q->odir, q->name);
        snprintf(public_path, sizeof(public_path), "%s/%s.public.json", q->odir, q->name);
        r.rc = sticky_check(q, r.err, sizeof(r.err));
        if (!r.rc)
            r.rc = groth16_publish_pair(proof_path, public_path, pt, ut, (long)q->tag_pid, &r.wt, r.err,
                                        sizeof(r.err));
    }
    free(pt);
    free(ut);
    (void)!send(sock, &r, sizeof(r), MSG_NOSIGNAL);
}

/* The writer's loop, its socket on OW_FD; returns the exit code. */
static int writer_loop(long parent)
{
    /* Die with the finalizer (checked after: it may be gone already). */
    if (prctl(PR_SET_PDEATHSIG, SIGKILL) || parent <= 0 || getppid() != (pid_t)parent) return 1;
    close_range(OW_FD + 1, ~0u, 0); /* nothing of cuzkd's (the doorbell) stays open here */
    for (;;) {
        struct ow_req q;
        int mfd;
        ssize_t k = os_recv_fd(OW_FD, &q, sizeof(q), 0, &mfd);

        if (k < 0 && errno == EINTR) continue;
        if (k <= 0) return 0; /* the finalizer closed: done */
        if (k != (ssize_t)sizeof(q) || q.magic != OW_MAGIC || mfd < 0) return 1;
        q.odir[sizeof(q.odir) - 1] = q.name[sizeof(q.name) - 1] = '\0';
        serve_one(OW_FD, &q, mfd);
        close(mfd);
    }
}

int out_writer_main(int argc, char **argv)
{
    return writer_loop(argc == 3 ? strtol(argv[2], NULL, 10) : 0);
}

/* ---- the finalizer's side ----------------------------------------------------------- */

/* One partition handed over: its texts in a sealed memfd, kept until it is decided. */
struct ow_job {
    struct ow_job *next;
    struct ow_req q;
    uint64_t dev, ino; /* its directory's identity (out_write) */
    int mfd;
    uint32_t tries;
    char shown_dir[JOBTAB_PATH_LEN];
};

enum { W_NONE, W_IDLE, W_BUSY, W_DYING };

/* One out directory: its queue and its writer process (when state is not W_NONE). */
struct ow_dir {
    int state;
    uint64_t dev, ino;
    char key[64]; /* the odir, for a directory of no known identity */
    pid_t pid;
    int sock;
    uint64_t since; /* W_BUSY: the request sent; W_DYING: the kill; W_IDLE: the last answer */
    uint32_t uid;   /* the submitter of its first partition (the stuck bound) */
    struct ow_job *cur, *head, *tail;
};

/* A writer killed past its deadline that still has not ended (its call waits on the
 * file system uninterruptibly): its directory gets nothing more until it ends. Kept
 * apart from the directory slots, so that stuck directories never take the slots
 * every other directory needs. */
struct ow_stuck {
    uint64_t dev, ino;
    char key[64];
    pid_t pid;
    uint32_t uid;
};

struct out_writers {
    uint32_t timeout_s, max_tries;
    long tag_pid;
    const char *exe;
    uint32_t pending;
    struct ow_dir d[OUT_WRITERS_MAX];
    struct ow_stuck *stuck;
    size_t n_stuck, cap_stuck;
    struct ow_job *wait_head, *wait_tail; /* no directory slot free yet */
    pid_t *reap;                          /* let go (idle, evicted): reaped when they end */
    size_t n_reap, cap_reap;
};

/* ns from since to t; 0 when since is later (set after t was read, in this pass) */
static uint64_t elapsed(uint64_t t, uint64_t since)
{
    return t > since ? t - since : 0;
}

struct out_writers *out_writers_new(uint32_t timeout_s, uint32_t max_tries, long tag_pid, const char *exe)
{
    struct out_writers *ws = calloc(1, sizeof(*ws));

    if (!ws) return NULL;
    ws->timeout_s = timeout_s;
    ws->max_tries = max_tries ? max_tries : 1;
    ws->tag_pid = tag_pid;
    ws->exe = exe;
    for (int i = 0; i < OUT_WRITERS_MAX; i++) ws->d[i].sock = -1;
    return ws;
}

uint32_t out_writers_pending(const struct out_writers *ws)
{
    return ws->pending;
}

static void push_tail(struct ow_job **h, struct ow_job **t, struct ow_job *j)
{
    j->next = NULL;
    if (*t)
        (*t)->next = j;
    else
        *h = j;
    *t = j;
}

static struct ow_job *pop_head(struct ow_job **h, struct ow_job **t)
{
    struct ow_job *j = *h;

    if (j) {
        *h = j->next;
        if (!*h) *t = NULL;
    }
    return j;
}

static void job_done(struct out_writers *ws, struct ow_job *j, int rc, const char *err,
                     const groth16_write_times *wt, out_done_fn fn, void *arg)
{
    static const groth16_write_times none;

    ws->pending--;
    fn(arg, j->q.p, rc, err ? err : "", wt ? wt : &none);
    close(j->mfd);
    free(j);
}

/* A process to wait for later (it may be stuck past its SIGKILL). */
static void reap_later(struct out_writers *ws, pid_t pid)
{
    if (ws->n_reap == ws->cap_reap) {
        size_t cap = ws->cap_reap ? 2 * ws->cap_reap : 16;
        pid_t *n = realloc(ws->reap, cap * sizeof(*n));

        if (!n) {
            waitpid(pid, NULL, WNOHANG); /* out of memory: a zombie at worst */
            return;
        }
        ws->reap = n;
        ws->cap_reap = cap;
    }
    ws->reap[ws->n_reap++] = pid;
}

static void reap_some(struct out_writers *ws)
{
    for (size_t i = 0; i < ws->n_stuck;)
        if (waitpid(ws->stuck[i].pid, NULL, WNOHANG) != 0) /* it ended: the dir is usable again */
            ws->stuck[i] = ws->stuck[--ws->n_stuck];
        else
            i++;
    for (size_t i = 0; i < ws->n_reap;)
        if (waitpid(ws->reap[i], NULL, WNOHANG) != 0) /* ended, or not ours (ECHILD) */
            ws->reap[i] = ws->reap[--ws->n_reap];
        else
            i++;
}

static int same_id(uint64_t dev, uint64_t ino, const char *key, const struct ow_job *j, uint64_t jdev,
                   uint64_t jino)
{
    if (jino) return ino == jino && dev == jdev;
    return !ino && !strcmp(key, j->q.odir);
}

static int same_dir(const struct ow_dir *d, const struct ow_job *j, uint64_t dev, uint64_t ino)
{
    return same_id(d->dev, d->ino, d->key, j, dev, ino);
}

static void stuck_msg(char *err, size_t errlen, const char *shown_dir, uint32_t timeout_s)
{
    snprintf(err, errlen,
             "out dir %s did not answer: a write there has been stuck for over %u s "
             "(--write-timeout; a hung file system?); not retried",
             shown_dir, (unsigned)timeout_s);
}

/* 0, or -CUZK_E_OUTPUT with err when j must fail at once: its directory's writer is
 * stuck, or its submitter's out dirs already hold OW_STUCK_PER_UID stuck writers. */
static int stuck_check(const struct out_writers *ws, const struct ow_job *j, uint64_t dev, uint64_t ino,
                       char *err, size_t errlen)
{
    uint32_t of_uid = 0;

    for (size_t i = 0; i < ws->n_stuck; i++) {
        const struct ow_stuck *k = &ws->stuck[i];

        if (same_id(k->dev, k->ino, k->key, j, dev, ino)) {
            stuck_msg(err, errlen, j->shown_dir, ws->timeout_s);
            return -CUZK_E_OUTPUT;
        }
        of_uid += j->q.owner_known && k->uid == j->q.owner_uid;
    }
    if (of_uid >= OW_STUCK_PER_UID) {
        snprintf(err, errlen,
                 "out dir %s not tried: %u other out dirs of uid %u do not answer (writes stuck "
                 "past --write-timeout); retry when they do",
                 j->shown_dir, (unsigned)of_uid, (unsigned)j->q.owner_uid);
        return -CUZK_E_OUTPUT;
    }
    return 0;
}

/* d's killed writer did not end within the deadline after its kill: it goes to the
 * stuck list and d's slot is free again. */
static void to_stuck(struct out_writers *ws, struct ow_dir *d)
{
    if (ws->n_stuck == ws->cap_stuck) {
        size_t cap = ws->cap_stuck ? 2 * ws->cap_stuck : 8;
        struct ow_stuck *n = realloc(ws->stuck, cap * sizeof(*n));

        if (!n) return; /* out of memory: d stays dying, its slot taken */
        ws->stuck = n;
        ws->cap_stuck = cap;
    }
    ws->stuck[ws->n_stuck++] =
        (struct ow_stuck){ .dev = d->dev, .ino = d->ino, .pid = d->pid, .uid = d->uid };
    snprintf(ws->stuck[ws->n_stuck - 1].key, sizeof(d->key), "%s", d->key);
    d->state = W_NONE;
    d->pid = 0;
}

static int dir_empty(const struct ow_dir *d)
{
    return d->state == W_NONE && !d->cur && !d->head;
}

/* A slot for a new directory: one whose writer is idle with nothing queued (the
 * least recently used; its process serves the new directory: a writer is bound to
 * none, each request names its own, and a job of a new out dir then costs no start),
 * else a free one. NULL: every slot busy. */
static struct ow_dir *take_slot(struct out_writers *ws)
{
    struct ow_dir *idle_d = NULL, *free_d = NULL;

    for (int i = 0; i < OUT_WRITERS_MAX; i++) {
        struct ow_dir *d = &ws->d[i];

        if (dir_empty(d) && !free_d) free_d = d;
        if (d->state == W_IDLE && !d->head && (!idle_d || d->since < idle_d->since)) idle_d = d;
    }
    return idle_d ? idle_d : free_d;
}

/* A slot for j's directory: its own, else take_slot's. NULL: every slot busy with
 * another directory. */
static struct ow_dir *dir_for(struct out_writers *ws, const struct ow_job *j, uint64_t dev, uint64_t ino)
{
    struct ow_dir *d;

    for (int i = 0; i < OUT_WRITERS_MAX; i++)
        if (!dir_empty(&ws->d[i]) && same_dir(&ws->d[i], j, dev, ino)) return &ws->d[i];
    if (!(d = take_slot(ws))) return NULL;
    d->dev = dev;
    d->ino = ino;
    d->uid = j->q.owner_known ? j->q.owner_uid : 0;
    snprintf(d->key, sizeof(d->key), "%s", j->q.odir);
    return d;
}

int out_writers_submit(struct out_writers *ws, struct out_write *w, char *err, size_t errlen)
{
    struct ow_job *j = calloc(1, sizeof(*j));
    size_t pl = strlen(w->proof_text), ul = strlen(w->public_text);
    struct ow_dir *d;
    int rc = 0;

    if (!j || strlen(w->odir) >= sizeof(j->q.odir) || strlen(w->name) >= sizeof(j->q.name)) {
        snprintf(err, errlen, j ? "output path too long" : "out of memory");
        rc = -CUZK_E_INTERNAL;
        goto out;
    }
    /* The texts in memory of their own (a memfd, passed to each try's writer), so the
     * hand-over is one small message that never waits on the writer. */
    j->mfd = memfd_create("cuzk-proof-text", MFD_CLOEXEC | MFD_ALLOW_SEALING);
    if (j->mfd < 0 || write(j->mfd, w->proof_text, pl) != (ssize_t)pl ||
        write(j->mfd, w->public_text, ul) != (ssize_t)ul ||
        fcntl(j->mfd, F_ADD_SEALS, F_SEAL_WRITE | F_SEAL_GROW | F_SEAL_SHRINK | F_SEAL_SEAL)) {
        snprintf(err, errlen, "memfd for the proof text: %s", strerror(errno));
        if (j->mfd >= 0) close(j->mfd);
        rc = -CUZK_E_INTERNAL;
        goto out;
    }
    j->q.magic = OW_MAGIC;
    j->q.p = w->p;
    j->q.owner_known = w->owner_known;
    j->q.owner_uid = w->owner_uid;
    j->q.tag_pid = ws->tag_pid;
    j->q.proof_len = pl;
    j->q.public_len = ul;
    snprintf(j->q.odir, sizeof(j->q.odir), "%s", w->odir);
    snprintf(j->q.name, sizeof(j->q.name), "%s", w->name);
    snprintf(j->shown_dir, sizeof(j->shown_dir), "%s", w->shown_dir);
    j->dev = w->dev;
    j->ino = w->ino;
    reap_some(ws);
    if ((rc = stuck_check(ws, j, w->dev, w->ino, err, errlen))) {
        close(j->mfd);
        goto out;
    }
    ws->pending++;
    d = dir_for(ws, j, w->dev, w->ino);
    if (d)
        push_tail(&d->head, &d->tail, j);
    else
        push_tail(&ws->wait_head, &ws->wait_tail, j);
    j = NULL;
out:
    free(j);
    free(w->proof_text);
    free(w->public_text);
    w->proof_text = w->public_text = NULL;
    return rc;
}

/* Start d's writer: `EXE --out-writer PID` with a socket as its fd 3 (or, without an
 * EXE, a fork running the same loop). */
static int spawn(const struct out_writers *ws, struct ow_dir *d)
{
    int sv[2], cfd, rc = 0;
    char ppid[24];
    char *argv[] = { "cuzk-finalizer", "--out-writer", ppid, NULL };
    posix_spawn_file_actions_t fa;
    pid_t pid;

    if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv)) return -errno;
    /* dup2 onto itself would keep FD_CLOEXEC: move the child's end off fd 3 first */
    cfd = sv[1] == OW_FD ? fcntl(sv[1], F_DUPFD_CLOEXEC, OW_FD + 1) : sv[1];
    snprintf(ppid, sizeof(ppid), "%ld", (long)getpid());
    if (ws->exe) {
        posix_spawn_file_actions_init(&fa);
        posix_spawn_file_actions_adddup2(&fa, cfd, OW_FD);
        rc = posix_spawn(&pid, ws->exe, &fa, NULL, argv, environ);
        posix_spawn_file_actions_destroy(&fa);
    } else if ((pid = fork()) == 0) {
        _exit(dup2(cfd, OW_FD) == OW_FD ? writer_loop(strtol(ppid, NULL, 10)) : 1);
    } else if (pid < 0)
        rc = errno;
    if (cfd != sv[1]) close(cfd);
    close(sv[1]);
    if (rc) {
        close(sv[0]);
        return -rc;
    }
    fcntl(sv[0], F_SETFL, O_NONBLOCK);
    d->sock = sv[0];
    d->pid = pid;
    d->state = W_IDLE;
    d->since = os_now_ns();
    return 0;
}

/* Kill d's writer (it did not answer, or broke): reaped later, maybe much later. */
static void kill_writer(struct out_writers *ws, struct ow_dir *d)
{
    (void)ws;
    kill(d->pid, SIGKILL);
    close(d->sock);
    d->sock = -1;
    d->state = W_DYING;
    d->since = os_now_ns();
}

/* The try in hand failed without an answer (deadline, or the writer died): counted;
 * retried with the next writer, or decided at max_tries. */
static void try_failed(struct out_writers *ws, struct ow_dir *d, const char *why, out_done_fn fn, void *arg)
{
    struct ow_job *j = d->cur;
    char err[1024];

    d->cur = NULL;
    if (!j) return;
    if (++j->tries < ws->max_tries) {
        j->next = d->head; /* first again, once the writer is gone */
        d->head = j;
        if (!d->tail) d->tail = j;
        return;
    }
    snprintf(err, sizeof(err), "out dir %s did not answer: %s (%u %s); not retried", j->shown_dir, why,
             (unsigned)j->tries, j->tries == 1 ? "try" : "tries");
    job_done(ws, j, -CUZK_E_OUTPUT, err, NULL, fn, arg);
}

static void send_next(struct out_writers *ws, struct ow_dir *d, out_done_fn fn, void *arg)
{
    struct ow_job *j;
    char cbuf[CMSG_SPACE(sizeof(int))];
    struct iovec iov;
    struct msghdr m;
    struct cmsghdr *c;

    if (d->state == W_NONE && d->head) {
        int rc = spawn(ws, d);

        if (rc) {
            char err[512];

            j = pop_head(&d->head, &d->tail);
            snprintf(err, sizeof(err), "cannot start a writer for %s: %s", j->shown_dir, strerror(-rc));
            job_done(ws, j, -CUZK_E_OUTPUT, err, NULL, fn, arg);
            return;
        }
    }
    if (d->state != W_IDLE || !d->head) return;
    j = pop_head(&d->head, &d->tail);
    memset(cbuf, 0, sizeof(cbuf));
    iov = (struct iovec){ &j->q, sizeof(j->q) };
    m = (struct msghdr){
        .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf, .msg_controllen = sizeof(cbuf)
    };
    c = CMSG_FIRSTHDR(&m);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int));
    memcpy(CMSG_DATA(c), &j->mfd, sizeof(int));
    d->cur = j;
    d->state = W_BUSY;
    d->since = os_now_ns();
    if (sendmsg(d->sock, &m, MSG_DONTWAIT | MSG_NOSIGNAL) != (ssize_t)sizeof(j->q)) {
        /* An idle writer always has room for one message: it is broken. */
        kill_writer(ws, d);
        try_failed(ws, d, "its writer process broke", fn, arg);
    }
}

static void take_answer(struct out_writers *ws, struct ow_dir *d, out_done_fn fn, void *arg)
{
    struct ow_rep r;
    ssize_t k = recv(d->sock, &r, sizeof(r), MSG_DONTWAIT);
    struct ow_job *j = d->cur;

    if (k < 0 && (errno == EAGAIN || errno == EINTR)) return;
    if (k != (ssize_t)sizeof(r) || r.magic != OW_MAGIC || !j || r.p != j->q.p) {
        kill_writer(ws, d); /* died (EOF) or spoke nonsense: the try counts */
        try_failed(ws, d, "its writer process died", fn, arg);
        return;
    }
    r.err[sizeof(r.err) - 1] = '\0';
    d->cur = NULL;
    d->state = W_IDLE;
    d->since = os_now_ns();
    job_done(ws, j, r.rc, r.err, &r.wt, fn, arg);
}

void out_writers_poll(struct out_writers *ws, int wait_ms, out_done_fn fn, void *arg)
{
    struct pollfd pf[OUT_WRITERS_MAX];
    int idx[OUT_WRITERS_MAX], n = 0;
    const uint64_t tmo = (uint64_t)ws->timeout_s * 1000000000ull;
    uint64_t t = os_now_ns();

    for (int i = 0; i < OUT_WRITERS_MAX; i++)
        if (ws->d[i].state == W_BUSY) {
            if (tmo && elapsed(t, ws->d[i].since) >= tmo) continue;
            pf[n] = (struct pollfd){ .fd = ws->d[i].sock, .events = POLLIN };
            idx[n++] = i;
        }
    if (n && poll(pf, (nfds_t)n, wait_ms) > 0) {
        for (int k = 0; k < n; k++)
            if (pf[k].revents) take_answer(ws, &ws->d[idx[k]], fn, arg);
    } else if (!n && wait_ms > 0) {
        /* nothing to hear from (a writer dying, work waiting): never spin */
        struct timespec ts = { wait_ms / 1000, (long)(wait_ms % 1000) * 1000000L };

        nanosleep(&ts, NULL);
    }
    t = os_now_ns();
    for (int i = 0; i < OUT_WRITERS_MAX; i++) {
        struct ow_dir *d = &ws->d[i];

        if (d->state == W_BUSY && tmo && elapsed(t, d->since) >= tmo) {
            char why[128];

            snprintf(why, sizeof(why),
                     "writing its proof files took over %u s (--write-timeout; a hung file system?)",
                     (unsigned)ws->timeout_s);
            kill_writer(ws, d);
            try_failed(ws, d, why, fn, arg);
        }
        if (d->state == W_DYING && waitpid(d->pid, NULL, WNOHANG) != 0) d->state = W_NONE;
        if (d->state == W_DYING && tmo && elapsed(t, d->since) >= tmo) {
            /* The killed writer cannot even die: its call waits on the file system
             * uninterruptibly. Nothing more is sent there until it ends; what waits
             * for it is decided now. */
            struct ow_job *j;
            char err[1024];

            to_stuck(ws, d);
            while ((j = pop_head(&d->head, &d->tail))) {
                stuck_msg(err, sizeof(err), j->shown_dir, ws->timeout_s);
                job_done(ws, j, -CUZK_E_OUTPUT, err, NULL, fn, arg);
            }
        }
        if (d->state == W_IDLE && !d->head && elapsed(t, d->since) >= OW_IDLE_NS) {
            close(d->sock); /* EOF: it exits */
            d->sock = -1;
            reap_later(ws, d->pid);
            d->state = W_NONE;
        }
        send_next(ws, d, fn, arg);
    }
    /* Work that waited for a directory slot, in order: to its directory's slot if
     * one came up meanwhile, else to a slot freed or let go. */
    while (ws->wait_head) {
        struct ow_job *j = ws->wait_head;
        struct ow_dir *d = dir_for(ws, j, j->dev, j->ino);

        if (!d) break;
        pop_head(&ws->wait_head, &ws->wait_tail);
        push_tail(&d->head, &d->tail, j);
        send_next(ws, d, fn, arg);
    }
    reap_some(ws);
}

void out_writers_stop(struct out_writers *ws, int grace_ms, out_done_fn fn, void *arg)
{
    const uint64_t end = os_now_ns() + (uint64_t)grace_ms * 1000000ull;
    struct ow_job *j;

    for (;;) {
        int busy = 0;

        for (int i = 0; i < OUT_WRITERS_MAX; i++) busy += ws->d[i].state == W_BUSY;
        if (!busy || os_now_ns() >= end) break;
        out_writers_poll(ws, 10, fn, arg);
    }
    for (int i = 0; i < OUT_WRITERS_MAX; i++) {
        struct ow_dir *d = &ws->d[i];

        if (d->state == W_IDLE || d->state == W_BUSY) {
            kill(d->pid, SIGKILL);
            close(d->sock);
            reap_later(ws, d->pid);
        } else if (d->state == W_DYING)
            reap_later(ws, d->pid);
        if (d->cur) job_done(ws, d->cur, OUT_WRITE_HANDBACK, NULL, NULL, fn, arg);
        while ((j = pop_head(&d->head, &d->tail))) job_done(ws, j, OUT_WRITE_HANDBACK, NULL, NULL, fn, arg);
    }
    while ((j = pop_head(&ws->wait_head, &ws->wait_tail)))
        job_done(ws, j, OUT_WRITE_HANDBACK, NULL, NULL, fn, arg);
    /* Those SIGKILL ended are reaped now; one stuck in the file system is not waited
     * for (it dies when the call returns; its parent is then whoever inherits it). */
    for (int k = 0; k < 20 && ws->n_reap; k++) {
        reap_some(ws);
        if (ws->n_reap) {
            struct timespec ts = { 0, 5000000 };

            nanosleep(&ts, NULL);
        }
    }
    free(ws->reap);
    free(ws->stuck);
    free(ws);
}
