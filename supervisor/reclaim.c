/* reclaim.c — after a death (sup.h): a dead stage's partitions rolled back and its
 * temp files removed, poisoned partitions failed, and a dead cuzkd's jobs listed. */
#include "sup.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "zk/groth16.h"
#include "supervisor/open_deadline.h"
#include "base/os.h"

static uint32_t ring_of_state(const struct sup *s, uint32_t st, uint32_t part, uint32_t *rot)
{
    const struct pipe_config *pc = s->pl.config;
    uint32_t nw = pc->n_workers, best = 0, bestn = UINT32_MAX;
    int node = -1, any;

    if (st == JOBTAB_QUEUED) return PIPE_RING_SYNTH;
    if (st == JOBTAB_PROVED) return PIPE_RING_FINAL(nw);
    /* READY: the least-loaded worker ring (ties rotate) on the node of the partition's
     * buffer (NUMA routing, route.h: the synth of that node made it for a worker
     * there); any worker when none is there (a one-share pool: every node's). */
    if (s->pl.data.pool.hdr->n_nodes > 1)
        /* Relaxed: part.buf was published by the CAS to READY, read back in the
         * scan (jobtab_parts_in_state) that found the state. */
        node = pool_buf_node(&s->pl.data.pool, barrier_load_relaxed(&s->pl.data.jobtab.parts[part].buf));
    any = 1;
    for (uint32_t i = 0; node >= 0 && i < nw; i++)
        if ((int)pc->worker_node[i] == node) any = 0;
    for (uint32_t k = 0; k < nw; k++) {
        uint32_t i = (k + (*rot)++) % nw;
        uint32_t n = ring_count(s->pl.data.rings[PIPE_RING_WORKER(i)]);

        if (!any && (int)pc->worker_node[i] != node) continue;
        if (n < bestn) {
            bestn = n;
            best = i;
        }
    }
    return PIPE_RING_WORKER(best);
}

void repush_state(struct sup *s, uint32_t st)
{
    uint32_t max = s->pl.config->max_parts, rot = 0;
    uint32_t *idx = malloc(max * sizeof(*idx));
    int n;

    if (!idx) return;
    n = jobtab_parts_in_state(&s->pl.data.jobtab, st, idx, max);
    for (int i = 0; i < n; i++)
        if (ring_try_push(s->pl.data.rings[ring_of_state(s, st, idx[i], &rot)], idx[i])) s->repush_needed = 1;
    free(idx);
}

/* The temp files a dead finalizer may have left for partition p: groth16.c writes
 * OUT/<name>.{proof,public}.json.tmp.<pid>.<random>, then renames. Each name with
 * the prefix prefix (".tmp.<pid>." included) in dfd, in turn, to fn; stops when fn
 * returns non-zero. dfd may be an O_PATH descriptor (the client's out dir). */
static void each_temp(int dfd, const char *prefix, int (*fn)(int dfd, const char *name, void *arg), void *arg)
{
    DIR *d = os_dir_stream(dfd);
    size_t n = strlen(prefix);
    struct dirent *e;

    if (!d) return;
    while ((e = readdir(d)))
        if (!strncmp(e->d_name, prefix, n) && fn(dfd, e->d_name, arg)) break;
    closedir(d);
}

static int unlink_one(int dfd, const char *name, void *arg)
{
    const char *display = arg;

    if (unlinkat(dfd, name, 0) == 0) logmsg("removed %s/%s, left by the dead finalizer", display, name);
    return 0;
}

/* dfd: the out directory (our descriptor of the client's, or one opened by
 * collect_lost); display: its name for the log. */
static void unlink_temps_at(const struct pipeline *pl, int dfd, const char *display, uint32_t p, pid_t pid)
{
    static const char *const kinds[] = { "proof", "public" };
    const struct pipe_partinfo *pi = pipeline_partinfo(pl, p);
    char final[PIPE_NAME_LEN + 32], prefix[sizeof(final) + 32];

    for (int k = 0; pi && dfd >= 0 && k < 2; k++) {
        snprintf(final, sizeof(final), "%s.%s.json", pi->name, kinds[k]);
        groth16_tmp_prefix(prefix, sizeof(prefix), final, pid);
        each_temp(dfd, prefix, unlink_one, (void *)display);
    }
}

static int first_name(int dfd, const char *name, void *arg)
{
    (void)dfd;
    snprintf(arg, NAME_MAX + 1, "%s", name);
    return 1;
}

/* cuzkd died between the finalizer's two renames: NAME.proof.json is under its final
 * name, NAME.public.json still under its temp name (both were fsync'd before either
 * rename, groth16_write_pair). With a job store, finish that publish, so that the
 * resume finds a proof that verifies instead of writing the partition a second time.
 * dfd: the out directory, opened by collect_lost only if it is still the one the
 * client passed (device and inode); every name is resolved inside it. */
static void finish_publish(const struct pipeline *pl, int dfd, const char *display, uint32_t p, pid_t pid)
{
    const struct pipe_partinfo *pi = pipeline_partinfo(pl, p);
    char proof[PIPE_NAME_LEN + 32], pre[sizeof(proof) + 32], pub[sizeof(proof)],
        ptmp[NAME_MAX + 1] = "", utmp[NAME_MAX + 1] = "";

    if (!pi || dfd < 0) return;
    snprintf(proof, sizeof(proof), "%s.proof.json", pi->name);
    groth16_tmp_prefix(pre, sizeof(pre), proof, pid);
    each_temp(dfd, pre, first_name, ptmp);
    snprintf(pub, sizeof(pub), "%s.public.json", pi->name);
    groth16_tmp_prefix(pre, sizeof(pre), pub, pid);
    each_temp(dfd, pre, first_name, utmp);
    if (faccessat(dfd, proof, F_OK, AT_SYMLINK_NOFOLLOW) == 0 && !ptmp[0] && utmp[0] &&
        renameat(dfd, utmp, dfd, pub) == 0)
        logmsg("completed the publish of %s/%s that the dead finalizer had begun", display, pub);
}

/* The temp files of a finalizer that died while it was writing: their out dirs are the
 * users', and one may lie on a file system that no longer answers (the dead
 * finalizer's writer may be stuck in it right now). A readdir there on cuzkd's loop
 * stopped cuzkd itself: no answer to anyone, no new finalizer. So each out dir is swept
 * by a process of its own, detached (a double fork: cuzkd waits only for the first,
 * which exits at once): if the directory hangs, only that process waits, until the
 * file system answers or goes away. A process, not a thread: a thread stuck in the
 * kernel keeps cuzkd from ever finishing its exit. It keeps no descriptor of cuzkd's
 * but the directory's, allocates nothing and writes no log (cuzkd's other threads may
 * have held the allocator's or stdio's locks when it forked). Its name: cuzkd-sweep. */
struct temp_sweep {
    int dfd;       /* the out dir (cuzkd's descriptor of it) */
    char **prefix; /* "NAME.proof.json.tmp.PID." and "NAME.public.json.tmp.PID." */
    size_t n, cap;
};

static void sweep_dir_child(int dfd, char *const *prefix, size_t n)
{
    char buf[8192];
    long got;
    int fd;

    prctl(PR_SET_NAME, "cuzkd-sweep");
    if (dup2(dfd, 3) < 0) _exit(1);
    syscall(SYS_close_range, 4U, ~0U, 0U);
    if ((fd = openat(3, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0) _exit(1);
    while ((got = syscall(SYS_getdents64, fd, buf, sizeof(buf))) > 0)
        for (long off = 0; off < got;) {
            /* struct linux_dirent64: ino (8), off (8), reclen (2), type (1), name */
            const char *name = buf + off + 19;
            unsigned short reclen;

            memcpy(&reclen, buf + off + 16, sizeof(reclen));
            for (size_t i = 0; i < n; i++)
                if (!strncmp(name, prefix[i], strlen(prefix[i]))) unlinkat(3, name, 0);
            off += reclen;
        }
    _exit(0);
}

static void sweep_dir(const struct temp_sweep *t, const char *display)
{
    pid_t pid;

    if (t->dfd < 0 || !t->n) return;
    logmsg("removing the dead finalizer's temp files in %s (%zu name(s)), in a process "
           "of its own",
           display, t->n);
    pid = fork();
    if (pid == 0) {
        if (fork() == 0) sweep_dir_child(t->dfd, t->prefix, t->n);
        _exit(0);
    }
    if (pid < 0)
        logmsg("cannot start the sweep of %s: %s; its temp files stay", display, strerror(errno));
    else
        while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
            ;
}

/* Partition p's temp names (the dead finalizer pid's) added to its job's sweep. */
static void sweep_add(const struct sup *s, struct temp_sweep *sw, uint32_t p, pid_t pid)
{
    static const char *const kinds[] = { "proof", "public" };
    const struct jobtab *jt = &s->pl.data.jobtab;
    const struct pipe_partinfo *pi = pipeline_partinfo(&s->pl, p);
    uint32_t j = jt->parts[p].job;
    struct temp_sweep *t;

    if (!pi || j >= jt->hdr->max_jobs || s->jobs[j].files.out_fd < 0) return;
    t = &sw[j];
    t->dfd = s->jobs[j].files.out_fd;
    for (int k = 0; k < 2; k++) {
        if (t->n == t->cap) {
            size_t cap = t->cap ? 2 * t->cap : 8;
            char **np = realloc(t->prefix, cap * sizeof(*np));

            if (!np) return;
            t->prefix = np;
            t->cap = cap;
        }
        char final[PIPE_NAME_LEN + 32], pre[sizeof(final) + 32];

        snprintf(final, sizeof(final), "%s.%s.json", pi->name, kinds[k]);
        groth16_tmp_prefix(pre, sizeof(pre), final, pid);
        if ((t->prefix[t->n] = strdup(pre))) t->n++;
    }
}

/* Each job's sweep started (sweep_dir), and sw freed. */
static void sweep_all(const struct sup *s, struct temp_sweep *sw)
{
    const struct jobtab *jt = &s->pl.data.jobtab;

    for (uint32_t j = 0; sw && j < jt->hdr->max_jobs; j++) {
        sweep_dir(&sw[j], jt->jobs[j].out_dir);
        for (size_t i = 0; i < sw[j].n; i++) free(sw[j].prefix[i]);
        free(sw[j].prefix);
    }
    free(sw);
}

/* Partition p (just rolled back, unowned) crashed its stage --max-attempts times: fail
 * it instead of handing it out again. 1 if it is now FAILED. */
static int fail_poison(struct sup *s, const struct child *c, uint32_t p, int status, int hung)
{
    struct jobtab *jt = &s->pl.data.jobtab;
    uint64_t w = jobtab_part_load(jt, p);
    uint32_t st = jobtab_word_state(w), buf = barrier_load_acquire(&jt->parts[p].buf);
    char reason[JOBTAB_REASON_LEN], how[48];

    if (hung)
        snprintf(how, sizeof(how), "hung (no heartbeat)");
    else if (WIFSIGNALED(status))
        snprintf(how, sizeof(how), "signal %d, %s", WTERMSIG(status), strsignal(WTERMSIG(status)));
    else
        snprintf(how, sizeof(how), "exit code %d", WEXITSTATUS(status));
    snprintf(reason, sizeof(reason), "crashed %s %u times (last: %s); not retried", child_bin(c->role),
             (unsigned)s->parts[p].crashes, how);
    if (jobtab_part_fail(jt, p, st, 0, reason)) return 0;
    if (st == JOBTAB_READY && buf != JOBTAB_NONE)
        pool_buf_transfer(&s->pl.data.pool, buf, pool_owner_part(p), POOL_OWNER_FREE);
    logmsg("job %llu partition %u FAILED: %s", (unsigned long long)jt->jobs[jt->parts[p].job].id,
           jt->parts[p].index, reason);
    jobtab_job_try_complete(jt, jt->parts[p].job);
    return 1;
}

/* A previous cuzkd of this instance died (its socket did not answer) and left its
 * segments. Its stages died with it (PR_SET_PDEATHSIG), so nothing works on its table
 * any more and this cuzkd starts a new one (the geometry may differ). Each job that was
 * still running is listed in s->lost; with --no-store it is reported lost, by id (log,
 * `cuzk status`, `wait`/`status ID`), with a store resume_start resumes it and drops it
 * from the list. The temp files its finalizer may have left are removed (a publish
 * half done is finished first, with a store); job ids continue after its last.
 * Returns the next job id to use, 0 when there was no table. */
/* The previous cuzkd's descriptor of jb's out dir died with it: open out_dir by its
 * name only to remove our own temp files, and only if it is still the directory the
 * client passed (same device and inode); anything else there is not ours to touch.
 * -1: not that directory, or none. */
static int reopen_lost_out_dir(const struct jobtab_job *jb)
{
    struct stat od;
    int dfd;

    /* A deadline: a hung mount must not keep cuzkd from starting (its temps then
     * stay; the resume fails that job). */
    dfd = open_deadline(jb->out_dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_NONBLOCK, RESUME_OPEN_MS, &od);
    if (dfd < 0) return -1;
    if ((uint64_t)od.st_dev != jb->out_dev || (uint64_t)od.st_ino != jb->out_ino) {
        close(dfd);
        return -1;
    }
    return dfd;
}

/* Job slot j of a dead cuzkd's table old, still running when it died: the temp files
 * of its partitions in FINAL removed (a publish half done finished first, with a
 * store), and the job listed in s->lost. */
static void lost_job(struct sup *s, struct pipeline *old, uint32_t j)
{
    struct jobtab *jt = &old->data.jobtab;
    const struct jobtab_job *jb = &jt->jobs[j];
    uint32_t d = 0, f = 0;
    int dfd = -1;

    jobtab_job_counts(jt, j, &d, &f);
    for (uint32_t i = 0; i < jb->n_parts && jb->first_part + i < jt->hdr->max_parts; i++) {
        uint64_t w = jobtab_part_load(jt, jb->first_part + i);

        if (jobtab_word_state(w) != JOBTAB_FINAL) continue;
        if (dfd < 0 && jb->out_ino) dfd = reopen_lost_out_dir(jb);
        if (!s->c->no_store)
            finish_publish(old, dfd, jb->out_dir, jb->first_part + i, (pid_t)jobtab_word_pid(w));
        unlink_temps_at(old, dfd, jb->out_dir, jb->first_part + i, (pid_t)jobtab_word_pid(w));
    }
    if (dfd >= 0) close(dfd);
    if (!s->lost) s->lost = json_array();
    json_array_append_new(s->lost,
                          json_pack("{s:I,s:s,s:s,s:i,s:i,s:i}", "id", (json_int_t)jb->id, "zkey",
                                    jb->zkey_path, "out_dir", jb->out_dir, "partitions", (int)jb->n_parts,
                                    "done", (int)d, "failed", (int)f));
    if (s->c->no_store)
        logmsg("job %llu LOST: the previous cuzkd (pid %d) died while it ran (%u of "
               "%u partition(s) done, their proofs are in %s); submit it again",
               (unsigned long long)jb->id, (int)old->stats.page->supervisor_pid, d, jb->n_parts, jb->out_dir);
    else
        logmsg("job %llu: the previous cuzkd (pid %d) died while it ran (%u of %u "
               "partition(s) done); the job store resumes it",
               (unsigned long long)jb->id, (int)old->stats.page->supervisor_pid, d, jb->n_parts);
}

uint64_t collect_lost(struct sup *s)
{
    struct pipeline old;
    struct jobtab *jt;
    char e[256];
    uint64_t next;
    int rc;

    memset(&old, 0, sizeof(old));
    rc = pipeline_attach(&old, s->c->instance, e, sizeof(e));
    if (rc) {
        /* No segment is the normal case (a clean stop removes them); anything else
         * means a dead cuzkd's jobs cannot be listed, which the operator must see. */
        if (rc != -ENOENT)
            logmsg("segments of a previous cuzkd unreadable, its jobs cannot be "
                   "reported: %s",
                   e);
        return 0;
    }
    jt = &old.data.jobtab;
    next = barrier_load_relaxed(&jt->hdr->next_job_id);
    for (uint32_t j = 0; j < jt->hdr->max_jobs; j++)
        if (jobtab_word_state(barrier_load_acquire(&jt->jobs[j].word)) == JOBTAB_QUEUED) lost_job(s, &old, j);
    pipeline_detach(&old);
    return next;
}

/* "job N was lost ..." when id is one of collect_lost's jobs. */
int lost_msg(const struct sup *s, uint64_t id, char *m, size_t len)
{
    size_t i;
    json_t *o;

    json_array_foreach (s->lost, i, o)
        if ((uint64_t)json_integer_value(json_object_get(o, "id")) == id) {
            snprintf(m, len,
                     "job %llu was lost: the previous cuzkd died while it was "
                     "running (%lld of %lld partition(s) done); submit it again",
                     (unsigned long long)id, (long long)json_integer_value(json_object_get(o, "done")),
                     (long long)json_integer_value(json_object_get(o, "partitions")));
            return 1;
        }
    return 0;
}

/* The stage of c died (CHILD_ACT_RECLAIM): roll its partitions back (each counts a try
 * when st says CHILD_ACT_CRASH; poison at --max-attempts), free its buffers, re-push
 * hints, and forget its pid. */
void child_reclaim(struct sup *s, struct child *c, const struct child_step *st, int status)
{
    struct jobtab *jt = &s->pl.data.jobtab;
    uint32_t out[256], rot = 0, total = 0;
    pid_t pid = c->pid;
    int n, freed, crash = !!(st->actions & CHILD_ACT_CRASH);
    struct temp_sweep *sw = NULL;

    if (c->role == PLAN_FINALIZER && (sw = calloc(jt->hdr->max_jobs, sizeof(*sw))))
        for (uint32_t j = 0; j < jt->hdr->max_jobs; j++) sw[j].dfd = -1;
    do {
        n = jobtab_reclaim_pid(jt, &s->pl.data.pool, pid, out, 256);
        for (int i = 0; i < n; i++) {
            uint32_t pst;

            if (sw) sweep_add(s, sw, out[i], pid);
            if (crash && s->parts && child_fsm_part_crash(&s->parts[out[i]].crashes, s->c->max_attempts) &&
                fail_poison(s, c, out[i], status, st->hung))
                continue;
            /* its try was cut short and it is tried again: that try counts (part_attempts) */
            if (s->parts && s->parts[out[i]].retries < PART_ATT_UNKNOWN - 1) s->parts[out[i]].retries++;
            pst = jobtab_word_state(jobtab_part_load(jt, out[i]));

            if (pst == JOBTAB_QUEUED || pst == JOBTAB_READY || pst == JOBTAB_PROVED)
                if (ring_try_push(s->pl.data.rings[ring_of_state(s, pst, out[i], &rot)], out[i]))
                    s->repush_needed = 1;
        }
        total += n > 0 ? (uint32_t)n : 0;
    } while (n == 256);
    sweep_all(s, sw);
    freed = pool_reclaim_pid(&s->pl.data.pool, pid);
    /* Hints popped but not yet claimed died with it; duplicates are harmless. */
    repush_state(s, JOBTAB_READY);
    repush_state(s, JOBTAB_PROVED);
    if (c->role == PLAN_SYNTH) repush_state(s, JOBTAB_QUEUED);
    if (total || freed)
        logmsg("recovered %u partition(s) and %d buffer(s) of pid %d", total, freed, (int)pid);
    if (s->slot) stats_counter_add(s->slot, SUP_C_DEATHS, 1);

    close(c->pidfd);
    c->pidfd = -1;
    c->pid = 0;
    c->generation++;
}
