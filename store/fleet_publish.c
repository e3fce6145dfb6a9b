/* fleet_publish.c — the fleet queue's file-system side (fleet_pg.h "Publishing"):
 * spool dir names, a finished partition's proof linked into its out dir and marked
 * published, a dead daemon's unpublished proofs adopted, and the rename that publishes
 * a file (fleet_publish, fleet_publish2). */
#include "store/fleet_priv.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <time.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>
#ifdef SYS_openat2
#include <linux/openat2.h>
#endif

#include <jansson.h>
#include "base/error.h"
#include "store/pq_dl.h"
#include "base/os.h"

void fleet_spool_name(const char *owner, char *buf, size_t len)
{
    snprintf(buf, len, ".cuzk-%s", owner);
}

void fleet_spool_remove(const char *out_dir, const char *owner)
{
    char sn[300];
    int dfd;

    if (!fleet_name_valid(owner) ||
        (dfd = open(out_dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) < 0)
        return;
    fleet_spool_name(owner, sn, sizeof(sn));
    unlinkat(dfd, sn, AT_REMOVEDIR); /* ENOTEMPTY: still in use, kept */
    close(dfd);
}

bool fleet_name_valid(const char *s)
{
    size_t n = s ? strlen(s) : 0;

    if (!n || n > 200 || s[0] == '.') return false;
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)s[i] < 0x20 || s[i] == 0x7f || s[i] == '/') return false;
    return true;
}

/* The spool dir sn inside the out dir dfd, never through a link and never outside
 * dfd (RESOLVE_BENEATH where the kernel has openat2, 5.6+; O_NOFOLLOW of a single
 * component otherwise, which is the same for a name fleet_name_valid passed). */
static int open_beneath(int dfd, const char *sn)
{
#ifdef SYS_openat2
    struct open_how how = { .flags = O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC,
                            .resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS };
    long fd = syscall(SYS_openat2, dfd, sn, &how, sizeof(how));

    if (fd >= 0 || errno != ENOSYS) return (int)fd;
#endif
    return openat(dfd, sn, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
}

int fleet_published(struct fleet *f, uint64_t job, uint32_t idx, uint64_t gen, char *err, size_t errlen)
{
    static const char what[] = "marking a proof published";
    struct fleet_part_key k;
    int n, rc;

    fleet_part_key(&k, job, idx, gen);
    if ((rc = fleet_sql_run(f, "BEGIN", what, err, errlen))) return rc;
    n = fleet_sql_changed(f,
                          fleet_sql_exec(f,
                                         "UPDATE cuzk_parts SET published = true WHERE job = $1 AND idx = $2"
                                         " AND lease_gen = $3 AND state = 'done' AND NOT published",
                                         3, (const char *[]){ k.job, k.idx, k.gen }),
                          what, err, errlen);
    if (n < 0) return fleet_sql_rollback(f, n);
    /* Even when n is 0: the retry of a mark whose reply was lost ended the job then. */
    return fleet_sql_commit_part(f, k.job, 1, n, what, err, errlen);
}

/* A done, unpublished partition whose proof is nowhere: queued again (for any
 * daemon), only while it is still that row. 1 requeued, 0 not that row any more. */
static int requeue(struct fleet *f, uint64_t job, uint32_t idx, uint64_t gen, const char *done_by, char *err,
                   size_t errlen)
{
    return fleet_sql_part_update(
        f,
        "UPDATE cuzk_parts SET state = 'queued', owner = NULL, done_by = NULL,"
        " lease_expiry = NULL, finished = NULL, proof_json = NULL, public_json = NULL"
        " WHERE job = $1 AND idx = $2"
        " AND lease_gen = $3 AND done_by = $4 AND state = 'done' AND NOT published",
        job, idx, gen, done_by, "putting a lost proof back to the queue", err, errlen);
}

/* Is dfd/path there (not followed)? 1 yes, 0 absent or unreadable to us. */
static int there(int dfd, const char *path)
{
    struct stat st;

    return !fstatat(dfd, path, &st, AT_SYMLINK_NOFOLLOW) && S_ISREG(st.st_mode);
}

int fleet_part_publish(struct fleet *f, const char *out_dir, const char *name, const char *done_by,
                       uint64_t job, uint32_t idx, uint64_t gen, int *linked, char *err, size_t errlen)
{
    char sn[300], tq[300], tp[300], fq[300], fp[300];
    int dfd, sfd, spooled, finals, rc;

    *linked = 0;
    /* Names from the database, so from whoever can write it: a "../x" would link a
     * file of another directory into this one, or this one's out of it. */
    if (!fleet_name_valid(name) || !fleet_name_valid(done_by)) {
        snprintf(err, errlen,
                 "fleet queue: job %llu part %u: refused: its name or done_by is not a "
                 "single file name (no '/', no leading '.', no control character)",
                 (unsigned long long)job, idx);
        return -EINVAL;
    }
    fleet_spool_name(done_by, sn, sizeof(sn));
    snprintf(tq, sizeof(tq), "%s.public.json", name);
    snprintf(tp, sizeof(tp), "%s.proof.json", name);
    snprintf(fq, sizeof(fq), "%s.public.json", name);
    snprintf(fp, sizeof(fp), "%s.proof.json", name);
    if ((dfd = open(out_dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) < 0) {
        snprintf(err, errlen, "fleet queue: %s: cannot open the out dir %s: %s", name, out_dir,
                 strerror(errno));
        return -ENOTDIR;
    }
    sfd = open_beneath(dfd, sn);
    /* public first: the proof's final name is what readers wait for. Spooled in sfd,
     * final in dfd: every name one component below a descriptor. */
    if (sfd >= 0 && there(sfd, tq) && !fleet_publish2(sfd, tq, dfd, fq)) (*linked)++;
    if (sfd >= 0 && there(sfd, tp) && !fleet_publish2(sfd, tp, dfd, fp)) (*linked)++;
    /* Spooled, then final, in this order (fleet_pg.h "Publishing": a spooled file seen
     * absent was published before, or lost). */
    spooled = sfd >= 0 && (there(sfd, tq) || there(sfd, tp));
    finals = there(dfd, fq) && there(dfd, fp);
    if (sfd >= 0) close(sfd);
    close(dfd);
    if (finals) {
        rc = fleet_published(f, job, idx, gen, err, errlen);
        return rc < 0 ? rc : rc ? FLEET_PUB_MARKED : FLEET_PUB_GONE;
    }
    if (spooled) {
        snprintf(err, errlen,
                 "fleet queue: %s: spooled in %s/%s but cannot be linked to "
                 "its final name (does the file system allow hard links?)",
                 name, out_dir, sn);
        return -EPERM;
    }
    rc = requeue(f, job, idx, gen, done_by, err, errlen);
    return rc < 0 ? rc : rc ? FLEET_PUB_REQUEUED : FLEET_PUB_GONE;
}

/* Fail an adopted row whose name or done_by is not a single file name, and end its
 * job in the same transaction when no other row is open (job_end): otherwise the job
 * would stay 'running' with nothing left to end it. Rows changed (0 or 1), or -errno. */
static int fail_bad_row(struct fleet *f, const struct fleet_adopted *a, uint64_t gen, char *err,
                        size_t errlen)
{
    static const char what[] = "failing a row with a bad name";
    struct fleet_part_key k;
    int rc, n;

    if ((rc = fleet_sql_run(f, "BEGIN", what, err, errlen))) return rc;
    n = fleet_sql_part_update(f,
                              "UPDATE cuzk_parts SET state = 'failed', reason = 'refused: its"
                              " name or done_by is not a single file name', published = true"
                              " WHERE job = $1 AND idx = $2 AND lease_gen = $3 AND done_by = $4"
                              " AND state = 'done' AND NOT published",
                              a->job, a->idx, gen, a->done_by, what, err, errlen);
    if (n < 0) return fleet_sql_rollback(f, n);
    fleet_part_key(&k, a->job, a->idx, gen);
    return fleet_sql_commit_part(f, k.job, n == 1, n, what, err, errlen);
}

int fleet_adopt(struct fleet *f, const char *self, int mine,
                void (*cb)(void *arg, const struct fleet_adopted *a), void *arg, char *err, size_t errlen)
{
    char eb[512] = "";
    PGresult *r;
    int n, rc = 0;

    /* A daemon row written by a version-1 cuzkd has no lease_s: its default, 30. */
    r = fleet_sql_exec(f,
                       "SELECT p.job, p.idx, p.lease_gen, p.name, j.out_dir, p.done_by"
                       " FROM cuzk_parts p JOIN cuzk_jobs j ON j.id = p.job"
                       " LEFT JOIN cuzk_daemons d ON d.id = p.done_by"
                       " WHERE p.state = 'done' AND NOT p.published AND"
                       " (CASE WHEN p.done_by = $1 THEN $2::boolean ELSE d.id IS NULL OR"
                       "  d.heartbeat < now() - 3 * make_interval(secs => coalesce(d.lease_s, 30))"
                       "  END) ORDER BY p.job, p.idx LIMIT 256",
                       2, (const char *[]){ self, mine ? "true" : "false" });
    if (!fleet_sql_ok(r)) return fleet_sql_fail(f, r, "looking for unpublished proofs", err, errlen);
    n = fleet_pq->ntuples(r);
    for (int i = 0; i < n; i++) {
        struct fleet_adopted a = {
            .job = strtoull(fleet_pq->getvalue(r, i, 0), NULL, 10),
            .idx = (uint32_t)strtoul(fleet_pq->getvalue(r, i, 1), NULL, 10),
            .name = fleet_pq->getvalue(r, i, 3),
            .out_dir = fleet_pq->getvalue(r, i, 4),
            .done_by = fleet_pq->getvalue(r, i, 5),
        };
        uint64_t gen = strtoull(fleet_pq->getvalue(r, i, 2), NULL, 10);

        a.outcome =
            fleet_part_publish(f, a.out_dir, a.name, a.done_by, a.job, a.idx, gen, &a.linked, eb, sizeof(eb));
        /* A row whose names reach outside its out dir (written by whoever can
         * write the table): failed with the reason, so it is reported once and never
         * looked at again, and its job ended if that was its last open row. */
        if (a.outcome == -EINVAL && fail_bad_row(f, &a, gen, err, errlen) < 0 &&
            fleet_pq->status(f->conn) != CONNECTION_OK) {
            rc = -ECONNREFUSED;
            break;
        }
        /* Another daemon's (dead: its heartbeat is stale) spool dir, empty once its
         * last proof is published: removed. Never this daemon's own here: one of its
         * running partitions may be about to write there (fleet.c removes its own). */
        if (a.outcome >= 0 && strcmp(a.done_by, self)) fleet_spool_remove(a.out_dir, a.done_by);
        if (a.outcome == -ECONNREFUSED || (a.outcome < 0 && fleet_pq->status(f->conn) != CONNECTION_OK)) {
            snprintf(err, errlen, "%s", eb);
            rc = a.outcome;
            break;
        }
        a.why = eb;
        if (cb) cb(arg, &a);
    }
    fleet_pq->clear(r);
    return rc ? rc : n;
}

/* OUT/.cuzk-OWNER/ of a daemon that is gone, in a job that has ended: its files (a
 * proof it spooled and never published, a temp file of a write it died in) and then
 * the dir itself. Only a dir of cuzkd's own user (the user whose out dir it is may
 * have made one of that name: never theirs to lose), never through a link. */
static void spool_sweep(const char *out_dir, const char *owner)
{
    char sn[300];
    struct stat st;
    struct dirent *e;
    DIR *dir;
    int dfd, sfd;

    if (!fleet_name_valid(owner) ||
        (dfd = open(out_dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) < 0)
        return;
    fleet_spool_name(owner, sn, sizeof(sn));
    sfd = open_beneath(dfd, sn);
    if (sfd >= 0 && !fstat(sfd, &st) && st.st_uid == geteuid() && (dir = os_dir_stream(sfd))) {
        while ((e = readdir(dir)))
            if (e->d_name[0] != '.' || (e->d_name[1] && (e->d_name[1] != '.' || e->d_name[2])))
                unlinkat(sfd, e->d_name, 0); /* a subdirectory is not ours: kept (rmdir fails) */
        closedir(dir);
        unlinkat(dfd, sn, AT_REMOVEDIR);
    }
    if (sfd >= 0) close(sfd);
    close(dfd);
}

int fleet_sweep_gone(struct fleet *f, const char *self, char *err, size_t errlen)
{
    PGresult *r, *q;
    int n, rc, swept = 0;

    /* Daemons gone (heartbeat older than 3 x lease_s) and not yet swept since their
     * last heartbeat (cuzk_meta 'swept:ID' holds the heartbeat it was swept at; a
     * daemon that comes back and dies again is swept again), with nothing left for
     * adoption (no unpublished proof, no lease): their spool dirs hold nothing
     * anyone will read. */
    r = fleet_sql_exec(f,
                       "SELECT d.id, d.started::text, d.heartbeat::text FROM cuzk_daemons d"
                       " WHERE d.id <> $1 AND d.heartbeat < now() - 3 * make_interval(secs =>"
                       " coalesce(d.lease_s, 30)) AND NOT EXISTS (SELECT 1 FROM cuzk_meta m"
                       " WHERE m.key = 'swept:' || d.id AND m.value = d.heartbeat::text)"
                       " AND NOT EXISTS (SELECT 1 FROM cuzk_parts p WHERE (p.done_by = d.id AND"
                       " p.state = 'done' AND NOT p.published) OR (p.owner = d.id AND"
                       " p.state = 'leased')) LIMIT 4",
                       1, (const char *[]){ self });
    if (!fleet_sql_ok(r)) return fleet_sql_fail(f, r, "looking for gone daemons", err, errlen);
    n = fleet_pq->ntuples(r);
    for (int i = 0; i < n; i++) {
        const char *id = fleet_pq->getvalue(r, i, 0), *started = fleet_pq->getvalue(r, i, 1),
                   *hb = fleet_pq->getvalue(r, i, 2);
        int m, running = 0;

        /* The out dirs of the jobs that ran while it lived: it may have spooled in
         * any of them (a partition it held and lost went back to the queue, and the
         * row no longer names it). A job still running keeps them until it ends. */
        q = fleet_sql_exec(f,
                           "SELECT DISTINCT out_dir, state = 'running' FROM cuzk_jobs WHERE out_dir <> ''"
                           " AND submitted <= $2::timestamptz AND (finished IS NULL OR"
                           " finished >= $1::timestamptz)",
                           2, (const char *[]){ started, hb });
        if (!fleet_sql_ok(q)) {
            fleet_pq->clear(r);
            return fleet_sql_fail(f, q, "listing a gone daemon's out dirs", err, errlen);
        }
        m = fleet_pq->ntuples(q);
        for (int k = 0; k < m; k++)
            if (!strcmp(fleet_pq->getvalue(q, k, 1), "t"))
                running = 1;
            else
                spool_sweep(fleet_pq->getvalue(q, k, 0), id);
        fleet_pq->clear(q);
        if (running) continue; /* again at a later call, once those jobs ended */
        q = fleet_sql_exec(f,
                           "INSERT INTO cuzk_meta(key, value) VALUES ('swept:' || $1, $2)"
                           " ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value",
                           2, (const char *[]){ id, hb });
        if ((rc = fleet_sql_done(f, q, "recording a sweep", err, errlen))) {
            fleet_pq->clear(r);
            return rc;
        }
        swept++;
    }
    fleet_pq->clear(r);
    return swept;
}

int fleet_publish2(int tmpfd, const char *tmp, int dirfd, const char *final)
{
    int rc = 0;

    /* As fleet_publish, from another directory (the spool dir). */
    if (linkat(tmpfd, tmp, dirfd, final, 0)) rc = -errno;
    unlinkat(tmpfd, tmp, 0);
    return rc;
}

int fleet_publish(int dirfd, const char *tmp, const char *final)
{
    int rc = 0;

    /* linkat fails with EEXIST rather than replacing: the final name is written once
     * even if two owners reach this point (see fleet_pg.h). */
    if (linkat(dirfd, tmp, dirfd, final, 0)) rc = -errno;
    unlinkat(dirfd, tmp, 0);
    return rc;
}
