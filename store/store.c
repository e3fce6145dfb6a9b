/* store.c — the durable job store, SQLite backend (store.h). */
#include "store/store.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <sqlite3.h>

#include "base/os.h"
#include "store_priv.h"

static const char *const part_names[STORE_NSTATES] = { "queued",     "synthesizing", "proving",
                                                       "finalizing", "done",         "failed" };
static const char *const job_names[] = { "running", "done", "failed" };

const char *store_part_state_name(enum store_part_state s)
{
    return (unsigned)s < STORE_NSTATES ? part_names[s] : "?";
}

void store_default_dir(char *buf, size_t len)
{
    const char *xdg = getenv("XDG_STATE_HOME"), *home = getenv("HOME");
    const char *sd = getenv("STATE_DIRECTORY"); /* systemd's StateDirectory= */

    if (sd && sd[0] == '/')
        snprintf(buf, len, "%.*s", (int)strcspn(sd, ":"), sd);
    else if (geteuid() == 0)
        snprintf(buf, len, "/var/lib/cuzk");
    else if (xdg && xdg[0] == '/')
        snprintf(buf, len, "%s/cuzk", xdg);
    else if (home && home[0] == '/')
        snprintf(buf, len, "%s/.local/state/cuzk", home);
    else
        snprintf(buf, len, "/tmp/cuzk-state-%u", (unsigned)geteuid());
}

/* -errno for an SQLite result code: SQLITE_FULL is a full disk, the rest I/O. */
int store_sq_errno(int rc)
{
    switch (rc & 0xff) {
    case SQLITE_FULL: return -ENOSPC;
    case SQLITE_NOMEM: return -ENOMEM;
    case SQLITE_READONLY:
    case SQLITE_PERM:
    case SQLITE_CANTOPEN: return -EACCES;
    case SQLITE_CORRUPT:
    case SQLITE_NOTADB: return -EPROTO;
    case SQLITE_BUSY:
    case SQLITE_LOCKED: return -EBUSY;
    default: return -EIO;
    }
}

int store_sq_fail(struct store *st, int rc, const char *what, char *err, size_t errlen)
{
    if (err)
        snprintf(err, errlen, "job store %s: %s: %s%s", st->path, what, sqlite3_errmsg(st->db),
                 (rc & 0xff) == SQLITE_FULL ? " (disk full)" : "");
    return store_sq_errno(rc);
}

int store_exec(struct store *st, const char *sql, const char *what, char *err, size_t errlen)
{
    int rc = sqlite3_exec(st->db, sql, NULL, NULL, NULL);

    return rc == SQLITE_OK ? 0 : store_sq_fail(st, rc, what, err, errlen);
}

/* The store decides which files cuzkd proves into and overwrites: its directory must
 * be a real directory (not a symlink) of this uid that no one else can write to, as
 * the run directory (another user could otherwise swap the file or its -wal). */
static int trusted_dir(const char *dir, char *err, size_t errlen)
{
    struct stat sb;
    int bad = os_dir_check(dir, 0022, 0, &sb);

    if (bad < 0) {
        snprintf(err, errlen, "job store: state directory %s: %s", dir, strerror(-bad));
        return bad;
    }
    if (bad & OS_DIR_NOT_DIR) {
        snprintf(err, errlen,
                 "job store: state directory %s is %s, not a directory; "
                 "refusing it",
                 dir, S_ISLNK(sb.st_mode) ? "a symlink" : "not a directory");
        return -ENOTDIR;
    }
    if (bad) {
        snprintf(err, errlen,
                 "job store: state directory %s is owned by uid %u with mode "
                 "%04o: it must be this daemon's (uid %u) and writable by no one else; "
                 "refusing it (chown/chmod it, or pass another --state-dir)",
                 dir, (unsigned)sb.st_uid, (unsigned)(sb.st_mode & 07777), (unsigned)geteuid());
        return -EPERM;
    }
    return 0;
}

/* The store holds every job's paths and uids: the daemon's alone, whatever the umask
 * (the shipped unit's 0027 made it 0640, readable by every operator). Created 0600,
 * or made so; SQLite gives its -wal and -shm files the mode of the database. */
static int private_file(const char *path, char *err, size_t errlen)
{
    int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
    struct stat sb;
    int rc = 0;

    if (fd < 0 || fstat(fd, &sb) || ((sb.st_mode & 077) && fchmod(fd, 0600))) rc = -errno;
    if (rc) snprintf(err, errlen, "job store %s: cannot make it private (0600): %s", path, strerror(-rc));
    if (fd >= 0) close(fd);
    for (const char *sfx = "-wal\0-shm\0"; !rc && *sfx; sfx += strlen(sfx) + 1) {
        char p[4096];

        snprintf(p, sizeof(p), "%s%s", path, sfx);
        if (!lstat(p, &sb) && S_ISREG(sb.st_mode) && (sb.st_mode & 077))
            (void)chmod(p, 0600); /* left by an older cuzkd: SQLite keeps its mode */
    }
    return rc;
}

/* Before SQLite sees the file: a non-empty file must start with SQLite's magic, so a
 * file that is something else is refused with that said, not opened. */
static int check_magic(const char *path, char *err, size_t errlen)
{
    static const char magic[16] = "SQLite format 3";
    char h[16];
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    ssize_t n;

    if (fd < 0)
        return errno == ENOENT ? 0
                               : (snprintf(err, errlen, "job store %s: %s", path, strerror(errno)), -errno);
    n = read(fd, h, sizeof(h));
    close(fd);
    if (n == 0) return 0;
    if (n != (ssize_t)sizeof(h) || memcmp(h, magic, sizeof(h))) {
        snprintf(err, errlen,
                 "job store %s is not an SQLite database (corrupt, or another "
                 "file): refusing it, nothing was changed; move it away to start an "
                 "empty store (its jobs are then not resumed)",
                 path);
        return -EPROTO;
    }
    return 0;
}

static int int_query(struct store *st, const char *sql, int64_t *out)
{
    sqlite3_stmt *q;
    int rc = sqlite3_prepare_v2(st->db, sql, -1, &q, NULL);

    if (rc != SQLITE_OK) return rc;
    rc = sqlite3_step(q);
    if (rc == SQLITE_ROW) {
        *out = sqlite3_column_int64(q, 0);
        rc = SQLITE_OK;
    }
    sqlite3_finalize(q);
    return rc;
}

static const char schema_v1[] =
    "CREATE TABLE jobs(id INTEGER PRIMARY KEY, request TEXT NOT NULL, "
    "  state TEXT NOT NULL DEFAULT 'running', submitted INTEGER, finished INTEGER);"
    "CREATE TABLE parts(job INTEGER NOT NULL REFERENCES jobs(id) ON DELETE CASCADE, "
    "  idx INTEGER NOT NULL, name TEXT NOT NULL, state TEXT NOT NULL DEFAULT 'queued', "
    "  reason TEXT, PRIMARY KEY(job, idx)) WITHOUT ROWID;"
    "CREATE INDEX jobs_state ON jobs(state);"
    "PRAGMA user_version = 1;";

/* Version 2: what a client that keeps no files needs (store.h, "Results kept"). */
static const char schema_v2[] =
    "CREATE TABLE results(job INTEGER NOT NULL REFERENCES jobs(id) ON DELETE CASCADE, "
    "  idx INTEGER NOT NULL, proof TEXT NOT NULL, public TEXT NOT NULL, timings TEXT, "
    "  PRIMARY KEY(job, idx)) WITHOUT ROWID;"
    "CREATE TABLE idem(tenant TEXT NOT NULL, key TEXT NOT NULL, body_sha256 TEXT NOT NULL, "
    "  job INTEGER NOT NULL REFERENCES jobs(id) ON DELETE CASCADE, PRIMARY KEY(tenant, key)) "
    "  WITHOUT ROWID;"
    "CREATE INDEX idem_job ON idem(job);"
    "PRAGMA user_version = 2;";

/* Version 3: each partition's tries, and a tenant's jobs found by index (the HTTP
 * API's list). Existing rows read 0 tries: unknown, as before. */
static const char schema_v3[] = "ALTER TABLE parts ADD COLUMN attempts INTEGER NOT NULL DEFAULT 0;"
                                "CREATE INDEX jobs_tenant ON jobs(json_extract(request, '$.tenant'), id);"
                                "PRAGMA user_version = 3;";

int store_open(struct store **out, const char *dir, const char *instance, char *err, size_t errlen)
{
    struct store *st = calloc(1, sizeof(*st));
    int64_t ver = 0, nt = 0;
    int rc;

    *out = NULL;
    if (!st) {
        snprintf(err, errlen, "job store: out of memory");
        return -ENOMEM;
    }
    if (snprintf(st->path, sizeof(st->path), "%s/%s.db", dir, instance) >= (int)sizeof(st->path)) {
        snprintf(err, errlen, "job store: --state-dir %s is too long", dir);
        free(st);
        return -ENAMETOOLONG;
    }
    if ((rc = os_mkdir_p(dir, 0700))) {
        snprintf(err, errlen,
                 "job store: state directory %s: %s (--state-dir, or "
                 "--no-store)",
                 dir, strerror(-rc));
        free(st);
        return rc;
    }
    if ((rc = trusted_dir(dir, err, errlen))) {
        free(st);
        return rc;
    }
    if ((rc = check_magic(st->path, err, errlen))) {
        free(st);
        return rc;
    }
    if ((rc = private_file(st->path, err, errlen))) {
        free(st);
        return rc;
    }
    rc = sqlite3_open_v2(st->path, &st->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOFOLLOW,
                         NULL);
    if (rc != SQLITE_OK) {
        rc = store_sq_fail(st, rc, "open", err, errlen);
        goto fail;
    }
    sqlite3_busy_timeout(st->db, 2000);
    /* Read-only checks first: a refused file is left exactly as it was. */
    if ((rc = int_query(st, "PRAGMA user_version", &ver)) != SQLITE_OK) {
        rc = store_sq_fail(st, rc, "reading its schema version", err, errlen);
        goto fail;
    }
    if (ver > STORE_SCHEMA_VERSION) {
        snprintf(err, errlen,
                 "job store %s has schema version %lld, newer than this "
                 "cuzkd's %d (written by a newer cuzk): refusing it, nothing was changed; "
                 "run the newer cuzkd, or another --state-dir",
                 st->path, (long long)ver, STORE_SCHEMA_VERSION);
        rc = -EPROTO;
        goto fail;
    }
    {
        sqlite3_stmt *q;
        const char *res = NULL;

        rc = sqlite3_prepare_v2(st->db, "PRAGMA quick_check", -1, &q, NULL);
        if (rc == SQLITE_OK && (rc = sqlite3_step(q)) == SQLITE_ROW)
            res = (const char *)sqlite3_column_text(q, 0);
        if (!res || strcmp(res, "ok")) {
            snprintf(err, errlen,
                     "job store %s fails its integrity check (%s): refusing "
                     "it, nothing was changed; move it away to start an empty store",
                     st->path, res ? res : sqlite3_errmsg(st->db));
            if (rc == SQLITE_OK || rc == SQLITE_ROW) sqlite3_finalize(q);
            rc = -EPROTO;
            goto fail;
        }
        sqlite3_finalize(q);
    }
    if (ver == 0 && (rc = int_query(st, "SELECT count(*) FROM sqlite_master", &nt)) == SQLITE_OK && nt > 0) {
        snprintf(err, errlen,
                 "job store %s is an SQLite database without cuzk's schema "
                 "version: refusing it, nothing was changed",
                 st->path);
        rc = -EPROTO;
        goto fail;
    }
    /* WAL: a commit appends to the log and fsyncs it once (synchronous=FULL); readers
     * never block the writer. */
    if ((rc = store_exec(st, "PRAGMA journal_mode=WAL", "journal_mode", err, errlen)) ||
        (rc = store_exec(st, "PRAGMA synchronous=FULL; PRAGMA foreign_keys=ON", "pragmas", err, errlen)))
        goto fail;
    st->sync_full = 1;
    /* The schema, or the migrations from its version on, each in one transaction. */
    for (int64_t v = ver; v < STORE_SCHEMA_VERSION; v++) {
        if ((rc = store_exec(st, "BEGIN IMMEDIATE", "begin", err, errlen))) goto fail;
        if ((rc = store_exec(st,
                             v == 0       ? schema_v1
                                 : v == 1 ? schema_v2
                                          : schema_v3,
                             "creating the schema", err, errlen)) ||
            (rc = store_exec(st, "COMMIT", "creating the schema", err, errlen))) {
            sqlite3_exec(st->db, "ROLLBACK", NULL, NULL, NULL);
            goto fail;
        }
    }
    rc = sqlite3_prepare_v2(st->db,
                            "UPDATE parts SET state = ?3, reason = ?4 "
                            "WHERE job = ?1 AND idx = ?2",
                            -1, &st->upd_part, NULL);
    if (rc == SQLITE_OK)
        rc = sqlite3_prepare_v2(st->db,
                                "UPDATE jobs SET state = ?2, finished = ?3 "
                                "WHERE id = ?1",
                                -1, &st->upd_job, NULL);
    if (rc == SQLITE_OK)
        rc = sqlite3_prepare_v2(st->db, "UPDATE parts SET attempts = ?3 WHERE job = ?1 AND idx = ?2", -1,
                                &st->upd_attempts, NULL);
    if (rc != SQLITE_OK) {
        rc = store_sq_fail(st, rc, "prepare", err, errlen);
        goto fail;
    }
    *out = st;
    return 0;
fail:
    store_close(st);
    return rc;
}

void store_close(struct store *st)
{
    if (!st) return;
    if (st->in_batch) sqlite3_exec(st->db, "ROLLBACK", NULL, NULL, NULL);
    sqlite3_finalize(st->upd_part);
    sqlite3_finalize(st->upd_job);
    sqlite3_finalize(st->upd_attempts);
    sqlite3_close(st->db);
    free(st);
}

const char *store_path(const struct store *st)
{
    return st->path;
}

uint64_t store_max_job_id(struct store *st)
{
    int64_t v = 0;

    if (int_query(st, "SELECT coalesce(max(id), 0) FROM jobs", &v) != SQLITE_OK) return 0;
    return (uint64_t)v;
}

/* Open a transaction; durable: its commit fsyncs the WAL (synchronous=FULL), else
 * the commit is only written (NORMAL: in WAL mode an interrupted log is cut at its
 * last whole commit, never corrupt). A submit needs the first, state changes the
 * second: losing the last of them only makes a new cuzkd look at the out dir again,
 * and the next durable commit (a submit) makes all earlier ones durable as well. */
int store_batch_begin(struct store *st, int durable)
{
    int rc;

    if (st->in_batch) return 0;
    if (st->sync_full != durable) {
        rc = sqlite3_exec(st->db, durable ? "PRAGMA synchronous=FULL" : "PRAGMA synchronous=NORMAL", NULL,
                          NULL, NULL);
        if (rc != SQLITE_OK) return store_sq_errno(rc);
        st->sync_full = durable;
    }
    rc = sqlite3_exec(st->db, "BEGIN IMMEDIATE", NULL, NULL, NULL);
    if (rc != SQLITE_OK) return store_sq_errno(rc);
    st->in_batch = 1;
    return 0;
}

static void batch_rollback(struct store *st)
{
    if (!sqlite3_get_autocommit(st->db)) sqlite3_exec(st->db, "ROLLBACK", NULL, NULL, NULL);
    st->in_batch = 0;
}

int store_commit(struct store *st, char *err, size_t errlen)
{
    int rc;

    if (!st->in_batch) return 0;
    rc = sqlite3_exec(st->db, "COMMIT", NULL, NULL, NULL);
    if (rc != SQLITE_OK) {
        rc = store_sq_fail(st, rc, "commit", err, errlen);
        batch_rollback(st);
        return rc;
    }
    st->in_batch = 0;
    return 0;
}

int store_job_add(struct store *st, uint64_t id, const char *request, uint32_t n, const char *const *names,
                  char *err, size_t errlen)
{
    sqlite3_stmt *q = NULL;
    int rc;

    if (st->in_batch && (rc = store_commit(st, err, errlen))) return rc;
    if ((rc = store_batch_begin(st, 1))) {
        snprintf(err, errlen, "job store %s: begin: %s", st->path, sqlite3_errmsg(st->db));
        return rc;
    }
    rc = sqlite3_prepare_v2(st->db, "INSERT INTO jobs(id, request, submitted) VALUES(?1, ?2, ?3)", -1, &q,
                            NULL);
    if (rc == SQLITE_OK) {
        sqlite3_bind_int64(q, 1, (sqlite3_int64)id);
        sqlite3_bind_text(q, 2, request, -1, SQLITE_STATIC);
        sqlite3_bind_int64(q, 3, (sqlite3_int64)time(NULL));
        rc = sqlite3_step(q);
        rc = rc == SQLITE_DONE ? SQLITE_OK : rc;
    }
    sqlite3_finalize(q);
    q = NULL;
    if (rc == SQLITE_OK)
        rc = sqlite3_prepare_v2(st->db, "INSERT INTO parts(job, idx, name) VALUES(?1, ?2, ?3)", -1, &q, NULL);
    for (uint32_t i = 0; rc == SQLITE_OK && i < n; i++) {
        sqlite3_bind_int64(q, 1, (sqlite3_int64)id);
        sqlite3_bind_int64(q, 2, i);
        sqlite3_bind_text(q, 3, names[i], -1, SQLITE_STATIC);
        rc = sqlite3_step(q);
        rc = rc == SQLITE_DONE ? SQLITE_OK : rc;
        sqlite3_reset(q);
    }
    sqlite3_finalize(q);
    if (rc == SQLITE_OK) rc = store_idem_record(st, id, request);
    if (rc != SQLITE_OK) {
        rc = store_sq_fail(st, rc, "recording the job", err, errlen);
        batch_rollback(st);
        return rc;
    }
    return store_commit(st, err, errlen);
}

/* One statement in a transaction of its own (durable: batch_begin's), after committing
 * any batch in progress. *n: the rows it changed, when n is not NULL. */
static int exec_alone(struct store *st, int durable, const char *sql, const char *what, uint64_t *n,
                      char *err, size_t errlen)
{
    int rc;

    if (st->in_batch && (rc = store_commit(st, err, errlen))) return rc;
    if ((rc = store_batch_begin(st, durable))) return rc;
    if ((rc = store_exec(st, sql, what, err, errlen))) {
        batch_rollback(st);
        return rc;
    }
    if (n) *n = (uint64_t)sqlite3_changes(st->db);
    return store_commit(st, err, errlen);
}

int store_job_delete(struct store *st, uint64_t id, char *err, size_t errlen)
{
    char sql[96];

    snprintf(sql, sizeof(sql), "DELETE FROM jobs WHERE id = %llu", (unsigned long long)id);
    return exec_alone(st, 1, sql, "removing a job", NULL, err, errlen);
}

int store_prune(struct store *st, int64_t before, uint64_t *n, char *err, size_t errlen)
{
    char sql[200];

    *n = 0;
    /* The newest job stays whatever its age: ids come from max(id)
     * (store_max_job_id), and must never be handed out twice. */
    snprintf(sql, sizeof(sql),
             "DELETE FROM jobs WHERE state != 'running' AND finished < %lld "
             "AND id < (SELECT max(id) FROM jobs)",
             (long long)before);
    return exec_alone(st, 0, sql, "pruning decided jobs", n, err, errlen);
}

int store_prune_per_owner(struct store *st, uint64_t keep_jobs, uint64_t keep_bytes, uint64_t *n, char *err,
                          size_t errlen)
{
    char sql[768];

    *n = 0;
    /* Per owner, newest first: the submitter's uid (request.peer.uid) and, for the
     * HTTP API's jobs, its tenant (request.tenant). Every tenant's job is submitted
     * by the API's one uid: counted by uid alone, one tenant's flood of cancelled
     * jobs would push every other tenant's stored proofs out. A decided job goes
     * once its owner has keep_jobs newer ones, or its request text and the newer
     * ones' pass keep_bytes. Running jobs are never counted out, and the newest job
     * stays (ids, as store_prune). */
    snprintf(sql, sizeof(sql),
             "DELETE FROM jobs WHERE id IN (SELECT id FROM (SELECT id,"
             " row_number() OVER w AS rn, sum(length(request)) OVER w AS b FROM jobs"
             " WHERE state != 'running' WINDOW w AS (PARTITION BY"
             " json_extract(request, '$.peer.uid'), json_extract(request, '$.tenant')"
             " ORDER BY id DESC ROWS UNBOUNDED PRECEDING))"
             " WHERE rn > %llu OR b > %llu) AND id < (SELECT max(id) FROM jobs)",
             (unsigned long long)keep_jobs, (unsigned long long)keep_bytes);
    return exec_alone(st, 0, sql, "pruning each owner's decided jobs", n, err, errlen);
}

int store_job_cancel(struct store *st, uint64_t id, char *err, size_t errlen)
{
    char sql[160];

    snprintf(sql, sizeof(sql),
             "UPDATE parts SET state = 'failed', reason = 'cancelled' "
             "WHERE job = %llu AND state NOT IN ('done', 'failed')",
             (unsigned long long)id);
    return exec_alone(st, 1, sql, "recording a cancel", NULL, err, errlen);
}

int store_part_set(struct store *st, uint64_t job, uint32_t idx, enum store_part_state s, const char *reason)
{
    int rc;

    if ((unsigned)s >= STORE_NSTATES) return -EINVAL;
    if ((rc = store_batch_begin(st, 0))) return rc;
    sqlite3_bind_int64(st->upd_part, 1, (sqlite3_int64)job);
    sqlite3_bind_int64(st->upd_part, 2, idx);
    sqlite3_bind_text(st->upd_part, 3, part_names[s], -1, SQLITE_STATIC);
    if (s == STORE_FAILED && reason)
        sqlite3_bind_text(st->upd_part, 4, reason, -1, SQLITE_TRANSIENT);
    else
        sqlite3_bind_null(st->upd_part, 4);
    rc = sqlite3_step(st->upd_part);
    sqlite3_reset(st->upd_part);
    return rc == SQLITE_DONE ? 0 : store_sq_errno(rc);
}

int store_job_set(struct store *st, uint64_t job, enum store_job_state s)
{
    int rc;

    if ((unsigned)s > STORE_JOB_FAILED) return -EINVAL;
    if ((rc = store_batch_begin(st, 0))) return rc;
    sqlite3_bind_int64(st->upd_job, 1, (sqlite3_int64)job);
    sqlite3_bind_text(st->upd_job, 2, job_names[s], -1, SQLITE_STATIC);
    if (s == STORE_JOB_RUNNING)
        sqlite3_bind_null(st->upd_job, 3);
    else
        sqlite3_bind_int64(st->upd_job, 3, (sqlite3_int64)time(NULL));
    rc = sqlite3_step(st->upd_job);
    sqlite3_reset(st->upd_job);
    return rc == SQLITE_DONE ? 0 : store_sq_errno(rc);
}

int store_part_attempts(struct store *st, uint64_t job, uint32_t idx, uint32_t attempts)
{
    int rc;

    if ((rc = store_batch_begin(st, 0))) return rc;
    sqlite3_bind_int64(st->upd_attempts, 1, (sqlite3_int64)job);
    sqlite3_bind_int64(st->upd_attempts, 2, idx);
    sqlite3_bind_int64(st->upd_attempts, 3, attempts);
    rc = sqlite3_step(st->upd_attempts);
    sqlite3_reset(st->upd_attempts);
    return rc == SQLITE_DONE ? 0 : store_sq_errno(rc);
}
