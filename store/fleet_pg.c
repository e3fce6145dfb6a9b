/* fleet_pg.c — the fleet queue on PostgreSQL (fleet_pg.h), libpq. */
#include "store/fleet_pg.h"

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

/* libpq's functions (pq_dl.h), set by the first fleet_open: every other function here
 * runs on a struct fleet that fleet_open returned, so after it. */
static const struct pq_api *pq;

struct fleet {
    PGconn *conn;
    int stores;                    /* fleet_set_stores */
    char *circuits, *fingerprints; /* fleet_set_circuits: text[] literals, "{}" none */
};

/* The schema; IF NOT EXISTS so that it is a no-op on an existing database. The
 * caller holds the advisory lock: concurrent CREATE TABLE IF NOT EXISTS can still
 * collide in the catalogs. */
static const char schema_sql[] =
    "CREATE TABLE IF NOT EXISTS cuzk_meta(key text PRIMARY KEY, value text NOT NULL);"
    "CREATE TABLE IF NOT EXISTS cuzk_jobs(id bigserial PRIMARY KEY, zkey text NOT NULL,"
    " out_dir text NOT NULL, n_parts int NOT NULL, state text NOT NULL DEFAULT 'running',"
    " submitted timestamptz NOT NULL DEFAULT now(), finished timestamptz,"
    " store_proofs boolean NOT NULL DEFAULT false, circuit text, fingerprint text,"
    " tenant text, idem_key text, body_sha256 text,"
    " cancelled boolean NOT NULL DEFAULT false);"
    "CREATE TABLE IF NOT EXISTS cuzk_parts(job bigint NOT NULL REFERENCES cuzk_jobs(id)"
    " ON DELETE CASCADE, idx int NOT NULL, wtns text NOT NULL, name text NOT NULL,"
    " state text NOT NULL DEFAULT 'queued', owner text, lease_gen bigint NOT NULL DEFAULT 0,"
    " lease_expiry timestamptz, attempts int NOT NULL DEFAULT 0, done_by text, reason text,"
    " finished timestamptz, published boolean NOT NULL DEFAULT false,"
    " proof_json text, public_json text, input bytea, input_kind text,"
    " PRIMARY KEY(job, idx));"
    "CREATE INDEX IF NOT EXISTS cuzk_parts_open ON cuzk_parts(job, idx)"
    " WHERE state IN ('queued', 'leased');"
    "CREATE TABLE IF NOT EXISTS cuzk_daemons(id text PRIMARY KEY, host text,"
    " heartbeat timestamptz NOT NULL DEFAULT now(), started timestamptz NOT NULL DEFAULT now(),"
    " done bigint NOT NULL DEFAULT 0, lease_s int, store_proofs boolean);";

/* Version 1 to 2 (same lock): the columns of fleet_pg.h's "Publishing". A version-1
 * done row had its one chance to be published (a crash window lost it): marked
 * published, as are failed rows (nothing to publish). */
static const char migrate_v1_sql[] =
    "ALTER TABLE cuzk_parts ADD COLUMN IF NOT EXISTS published boolean NOT NULL"
    " DEFAULT false;"
    "ALTER TABLE cuzk_daemons ADD COLUMN IF NOT EXISTS lease_s int;"
    "UPDATE cuzk_parts SET published = true WHERE state IN ('done', 'failed');"
    "UPDATE cuzk_meta SET value = '2' WHERE key = 'schema_version';";

/* Version 2 to 3 (same lock, after v1 -> 2 where that ran): the stored-proof columns
 * (fleet_pg.h "Stored proofs"). No row had a stored proof: NULL, and no job asked. */
static const char migrate_v2_sql[] =
    "ALTER TABLE cuzk_jobs ADD COLUMN IF NOT EXISTS store_proofs boolean NOT NULL"
    " DEFAULT false;"
    "ALTER TABLE cuzk_parts ADD COLUMN IF NOT EXISTS proof_json text,"
    " ADD COLUMN IF NOT EXISTS public_json text;"
    "ALTER TABLE cuzk_daemons ADD COLUMN IF NOT EXISTS store_proofs boolean;"
    "UPDATE cuzk_meta SET value = '3' WHERE key = 'schema_version';";

/* Version 3 to 4 (same lock, after the earlier steps): the circuit-job columns
 * (fleet_pg.h "Circuit jobs"). Every existing job is a path job: NULL there. */
static const char migrate_v3_sql[] =
    "ALTER TABLE cuzk_jobs ADD COLUMN IF NOT EXISTS circuit text,"
    " ADD COLUMN IF NOT EXISTS fingerprint text, ADD COLUMN IF NOT EXISTS tenant text,"
    " ADD COLUMN IF NOT EXISTS idem_key text, ADD COLUMN IF NOT EXISTS body_sha256 text,"
    " ADD COLUMN IF NOT EXISTS cancelled boolean NOT NULL DEFAULT false;"
    "ALTER TABLE cuzk_parts ADD COLUMN IF NOT EXISTS input bytea,"
    " ADD COLUMN IF NOT EXISTS input_kind text;"
    "UPDATE cuzk_meta SET value = '4' WHERE key = 'schema_version';";

/* After the columns exist (created or migrated): what fleet_adopt looks for; one job
 * per (tenant, idempotency key), which decides between concurrent inserts of one key;
 * a tenant's running jobs (its quota). */
static const char index_sql[] = "CREATE INDEX IF NOT EXISTS cuzk_parts_unpublished ON cuzk_parts(done_by)"
                                " WHERE state = 'done' AND NOT published;"
                                "CREATE UNIQUE INDEX IF NOT EXISTS cuzk_jobs_idem ON cuzk_jobs"
                                " ((coalesce(tenant, '')), idem_key) WHERE idem_key IS NOT NULL;"
                                "CREATE INDEX IF NOT EXISTS cuzk_jobs_running ON cuzk_jobs"
                                " ((coalesce(tenant, ''))) WHERE state = 'running';";

int fleet_is_url(const char *s)
{
    return s && (!strncmp(s, "postgresql://", 13) || !strncmp(s, "postgres://", 11));
}

/* -errno for the connection's state: a lost or refused connection is ECONNREFUSED
 * (the caller retries with backoff), anything else EIO. */
static int pg_fail(struct fleet *f, PGresult *r, const char *what, char *err, size_t errlen)
{
    const char *m = pq->error_message(f->conn);
    int lost = pq->status(f->conn) != CONNECTION_OK;

    if (r && pq->result_error_message(r)[0]) m = pq->result_error_message(r);
    snprintf(err, errlen, "fleet queue: %s: %.*s", what, (int)strcspn(m, "\n"), m);
    if (r) pq->clear(r);
    return lost ? -ECONNREFUSED : -EIO;
}

/* ROLLBACK after a transaction's error rc; returns rc. */
static int rollback(struct fleet *f, int rc)
{
    pq->clear(pq->exec(f->conn, "ROLLBACK"));
    return rc;
}

/* A failed statement inside a transaction: the error, then ROLLBACK (pg_fail clears r). */
static int tx_fail(struct fleet *f, PGresult *r, const char *what, char *err, size_t errlen)
{
    return rollback(f, pg_fail(f, r, what, err, errlen));
}

static PGresult *exec(struct fleet *f, const char *sql, int n, const char *const *p)
{
    return pq->exec_params(f->conn, sql, n, NULL, p, NULL, NULL, 0);
}

static int ok(PGresult *r)
{
    ExecStatusType s = pq->result_status(r);
    return s == PGRES_COMMAND_OK || s == PGRES_TUPLES_OK;
}

/* A partition's key as the text parameters of a statement. */
struct part_key {
    char job[24], idx[16], gen[24];
};

static void part_key(struct part_key *k, uint64_t job, uint32_t idx, uint64_t gen)
{
    snprintf(k->job, sizeof(k->job), "%llu", (unsigned long long)job);
    snprintf(k->idx, sizeof(k->idx), "%u", idx);
    snprintf(k->gen, sizeof(k->gen), "%llu", (unsigned long long)gen);
}

/* A statement's outcome when it returns no rows: 0, or the error (r is cleared). */
static int done(struct fleet *f, PGresult *r, const char *what, char *err, size_t errlen)
{
    if (!ok(r)) return pg_fail(f, r, what, err, errlen);
    pq->clear(r);
    return 0;
}

/* How many rows a statement changed, or the error (r is cleared). */
static int changed(struct fleet *f, PGresult *r, const char *what, char *err, size_t errlen)
{
    int n;

    if (!ok(r)) return pg_fail(f, r, what, err, errlen);
    n = atoi(pq->cmd_tuples(r));
    pq->clear(r);
    return n;
}

/* Statements without parameters (BEGIN, COMMIT, the schema's): 0, or the error (a
 * transaction's is the caller's to roll back). */
static int run(struct fleet *f, const char *sql, const char *what, char *err, size_t errlen)
{
    return done(f, pq->exec(f->conn, sql), what, err, errlen);
}

/* A statement that changes one partition's row: $1 job, $2 idx, $3 lease_gen, $4 who
 * (its owner or done_by). How many rows it changed, or the error. */
static int part_update(struct fleet *f, const char *sql, uint64_t job, uint32_t idx, uint64_t gen,
                       const char *who, const char *what, char *err, size_t errlen)
{
    struct part_key k;

    part_key(&k, job, idx, gen);
    return changed(f, exec(f, sql, 4, (const char *[]){ k.job, k.idx, k.gen, who }), what, err, errlen);
}

/* The version the database has (under the caller's advisory lock): 0 when it has no
 * cuzk_meta yet (a fresh database), or the error. */
static int schema_version(struct fleet *f, const char *what, char *err, size_t errlen)
{
    PGresult *r = pq->exec(f->conn, "SELECT to_regclass('cuzk_meta') IS NOT NULL");
    int v;

    if (!ok(r) || pq->ntuples(r) != 1) return pg_fail(f, r, what, err, errlen);
    v = pq->getvalue(r, 0, 0)[0] == 't';
    pq->clear(r);
    if (!v) return 0;
    r = pq->exec(f->conn, "SELECT value FROM cuzk_meta WHERE key = 'schema_version'");
    if (!ok(r)) return pg_fail(f, r, what, err, errlen);
    v = pq->ntuples(r) == 1 ? atoi(pq->getvalue(r, 0, 0)) : 0;
    pq->clear(r);
    return v;
}

static int schema(struct fleet *f, char *err, size_t errlen)
{
    static const char what[] = "creating the schema";
    PGresult *r;
    int v, rc;

    if ((rc = run(f, "BEGIN; SELECT pg_advisory_xact_lock(7172017);", what, err, errlen))) return rc;
    /* Up to date: no DDL at all. CREATE INDEX IF NOT EXISTS takes its table's
     * ShareLock before it finds the index there, which would block (and with a
     * submit in flight on the other table, deadlock with) every open's neighbours. */
    if ((v = schema_version(f, what, err, errlen)) < 0) return rollback(f, v);
    if (v == FLEET_SCHEMA_VERSION) return (rc = run(f, "COMMIT", what, err, errlen)) ? rollback(f, rc) : 0;
    if (v > FLEET_SCHEMA_VERSION) {
        snprintf(err, errlen,
                 "fleet queue: schema version %d is newer than this cuzk's "
                 "(%d): upgrade cuzk",
                 v, FLEET_SCHEMA_VERSION);
        return rollback(f, -EPROTO);
    }
    if ((rc = run(f, schema_sql, what, err, errlen))) return rollback(f, rc);
    r = pq->exec(f->conn,
                 "INSERT INTO cuzk_meta VALUES ('schema_version', '4')"
                 " ON CONFLICT DO NOTHING;"
                 " SELECT value FROM cuzk_meta WHERE key = 'schema_version'");
    if (!ok(r) || pq->ntuples(r) != 1) return tx_fail(f, r, what, err, errlen);
    v = atoi(pq->getvalue(r, 0, 0));
    pq->clear(r);
    if ((v < 2 && (rc = run(f, migrate_v1_sql, what, err, errlen))) ||
        (v < 3 && (rc = run(f, migrate_v2_sql, what, err, errlen))) ||
        (v < 4 && (rc = run(f, migrate_v3_sql, what, err, errlen))) ||
        (rc = run(f, index_sql, what, err, errlen)) || (rc = run(f, "COMMIT", what, err, errlen)))
        return rollback(f, rc);
    return 0;
}

int fleet_url_password(const char *url, const char **start, const char **end)
{
    const char *s = strstr(url, "://");

    for (const char *p = url; *p; p++)
        if (!strncasecmp(p, "password=", 9) && (p == url || strchr(" ?&", p[-1]))) {
            *start = p + 9;
            *end = *start + strcspn(*start, " &#");
            return 1;
        }
    if (s) {
        const char *auth = s + 3, *stop = auth + strcspn(auth, "/?#"), *at = NULL, *colon;

        for (const char *p = auth; p < stop; p++)
            if (*p == '@') at = p;
        if (at && (colon = memchr(auth, ':', (size_t)(at - auth)))) {
            *start = colon + 1;
            *end = at;
            return 1;
        }
    }
    return 0;
}

void fleet_url_scrub(char *url)
{
    const char *a, *b;

    if (fleet_url_password(url, &a, &b)) memset(url + (a - url), '*', (size_t)(b - a));
}

int fleet_open(struct fleet **fp, const char *url, char *err, size_t errlen)
{
    struct fleet *f = calloc(1, sizeof(*f));
    int rc;

    *fp = NULL;
    /* No libpq is a missing part of the installation, as a missing compiler is for
     * build-witness: exit 10, not a refusal or an unreachable database. */
    if (!(pq = pq_dl_load(err, errlen))) {
        free(f);
        return -CUZK_E_INTERNAL;
    }
    if (!f) {
        snprintf(err, errlen, "fleet queue: out of memory");
        return -ENOMEM;
    }
    f->conn = pq->connectdb(url);
    if (!f->conn || pq->status(f->conn) != CONNECTION_OK) {
        const char *m = f->conn ? pq->error_message(f->conn) : "out of memory";
        snprintf(err, errlen, "fleet queue: cannot connect: %.*s", (int)strcspn(m, "\n"), m);
        fleet_close(f);
        return -ECONNREFUSED;
    }
    /* Notices (IF NOT EXISTS ... skipping) are not news for an operator. */
    pq->clear(pq->exec(f->conn, "SET client_min_messages = warning"));
    if ((rc = schema(f, err, errlen))) {
        fleet_close(f);
        return rc;
    }
    *fp = f;
    return 0;
}

void fleet_close(struct fleet *f)
{
    if (!f) return;
    if (f->conn) pq->finish(f->conn);
    free(f->circuits);
    free(f->fingerprints);
    free(f);
}

int fleet_reconnect(struct fleet *f, char *err, size_t errlen)
{
    if (pq->status(f->conn) == CONNECTION_OK) return 0;
    pq->reset(f->conn);
    if (pq->status(f->conn) != CONNECTION_OK) return pg_fail(f, NULL, "reconnecting", err, errlen);
    pq->clear(pq->exec(f->conn, "SET client_min_messages = warning"));
    return 0;
}

int fleet_ping(struct fleet *f, char *err, size_t errlen)
{
    return done(f, pq->exec(f->conn, "SELECT 1"), "ping", err, errlen);
}

int fleet_job_add(struct fleet *f, const char *zkey, const char *out_dir, int store_proofs, uint32_t n,
                  const char *const *wtns, const char *const *name, uint64_t *job, char *err, size_t errlen)
{
    char nb[16], ib[16], jb[24];
    PGresult *r;
    int rc;

    if (!out_dir) out_dir = "";
    if (!out_dir[0] && !store_proofs) {
        snprintf(err, errlen, "fleet queue: a job needs an out dir or stored proofs");
        return -EINVAL;
    }
    snprintf(nb, sizeof(nb), "%u", n);
    if ((rc = run(f, "BEGIN", "submitting", err, errlen))) return rc;
    r = exec(f,
             "INSERT INTO cuzk_jobs(zkey, out_dir, n_parts, store_proofs)"
             " VALUES ($1, $2, $3, $4) RETURNING id",
             4, (const char *[]){ zkey, out_dir, nb, store_proofs ? "true" : "false" });
    if (!ok(r) || pq->ntuples(r) != 1) return tx_fail(f, r, "submitting", err, errlen);
    snprintf(jb, sizeof(jb), "%s", pq->getvalue(r, 0, 0));
    pq->clear(r);
    for (uint32_t i = 0; i < n; i++) {
        snprintf(ib, sizeof(ib), "%u", i);
        r = exec(f, "INSERT INTO cuzk_parts(job, idx, wtns, name) VALUES ($1, $2, $3, $4)", 4,
                 (const char *[]){ jb, ib, wtns[i], name[i] });
        if ((rc = done(f, r, "submitting", err, errlen))) return rollback(f, rc);
    }
    if ((rc = run(f, "COMMIT", "submitting", err, errlen))) return rollback(f, rc);
    *job = strtoull(jb, NULL, 10);
    return 0;
}

int fleet_daemon_hello(struct fleet *f, const char *id, const char *host, int lease_s, char *err,
                       size_t errlen)
{
    char lb[16];

    snprintf(lb, sizeof(lb), "%d", lease_s);
    return done(f,
                exec(f,
                     "INSERT INTO cuzk_daemons(id, host, lease_s, store_proofs)"
                     " VALUES ($1, $2, $3, $4) ON CONFLICT (id) DO UPDATE SET host = $2,"
                     " heartbeat = now(), started = now(), lease_s = $3, store_proofs = $4",
                     4, (const char *[]){ id, host, lb, f->stores ? "true" : "false" }),
                "registering the daemon", err, errlen);
}

void fleet_set_stores(struct fleet *f, int on)
{
    f->stores = !!on;
}

int fleet_claim(struct fleet *f, const char *owner, int lease_s, struct fleet_claim *out, int max, char *err,
                size_t errlen)
{
    char lb[16], mb[16];
    PGresult *r;
    int n;

    snprintf(lb, sizeof(lb), "%d", lease_s);
    snprintf(mb, sizeof(mb), "%d", max);
    /* One statement, so its own transaction: the locked rows are updated before any
     * other daemon can see them, and SKIP LOCKED makes concurrent claimers take
     * disjoint rows instead of waiting on each other. */
    r = exec(f,
             "WITH c AS (SELECT p.job, p.idx FROM cuzk_parts p JOIN cuzk_jobs j ON j.id = p.job"
             "  WHERE (p.state = 'queued' OR (p.state = 'leased' AND p.lease_expiry < now()))"
             "  AND (NOT j.store_proofs OR $4::boolean)"
             "  AND (j.circuit IS NULL OR ($4::boolean AND (j.circuit, j.fingerprint) IN"
             "   (SELECT * FROM unnest($5::text[], $6::text[]))))"
             "  ORDER BY p.job, p.idx LIMIT $3 FOR UPDATE OF p SKIP LOCKED)"
             " UPDATE cuzk_parts p SET state = 'leased', owner = $1,"
             "  lease_gen = p.lease_gen + 1, attempts = p.attempts + 1,"
             "  lease_expiry = now() + make_interval(secs => $2::int)"
             " FROM c, cuzk_jobs j WHERE p.job = c.job AND p.idx = c.idx AND j.id = p.job"
             " RETURNING p.job, p.idx, p.lease_gen, p.wtns, p.name, j.zkey, j.out_dir,"
             " p.attempts, j.store_proofs, coalesce(j.circuit, ''), coalesce(p.input_kind, '')",
             6,
             (const char *[]){ owner, lb, mb, f->stores ? "true" : "false", f->circuits ? f->circuits : "{}",
                               f->fingerprints ? f->fingerprints : "{}" });
    if (!ok(r)) return pg_fail(f, r, "claiming", err, errlen);
    n = pq->ntuples(r);
    for (int i = 0; i < n && i < max; i++) {
        struct fleet_claim *c = &out[i];
        c->job = strtoull(pq->getvalue(r, i, 0), NULL, 10);
        c->idx = (uint32_t)strtoul(pq->getvalue(r, i, 1), NULL, 10);
        c->gen = strtoull(pq->getvalue(r, i, 2), NULL, 10);
        snprintf(c->wtns, sizeof(c->wtns), "%s", pq->getvalue(r, i, 3));
        snprintf(c->name, sizeof(c->name), "%s", pq->getvalue(r, i, 4));
        snprintf(c->zkey, sizeof(c->zkey), "%s", pq->getvalue(r, i, 5));
        snprintf(c->out_dir, sizeof(c->out_dir), "%s", pq->getvalue(r, i, 6));
        c->attempts = (uint32_t)strtoul(pq->getvalue(r, i, 7), NULL, 10);
        c->store_proofs = pq->getvalue(r, i, 8)[0] == 't';
        snprintf(c->circuit, sizeof(c->circuit), "%s", pq->getvalue(r, i, 9));
        c->input_kind = !c->circuit[0]                ? FLEET_INPUT_PATH
            : !strcmp(pq->getvalue(r, i, 10), "wtns") ? FLEET_INPUT_WTNS
                                                      : FLEET_INPUT_JSON;
    }
    pq->clear(r);
    return n < max ? n : max;
}

int fleet_renew(struct fleet *f, const char *owner, int lease_s, const struct fleet_claim *held, int n,
                char *err, size_t errlen)
{
    char lb[16], *jobs, *idxs, *gens;
    size_t cap = 3 + (size_t)n * 22; /* "{", n numbers with commas, "}", NUL */
    PGresult *r;

    snprintf(lb, sizeof(lb), "%d", lease_s);
    jobs = malloc(cap);
    idxs = malloc(cap);
    gens = malloc(cap);
    if (!jobs || !idxs || !gens) {
        free(jobs);
        free(idxs);
        free(gens);
        snprintf(err, errlen, "fleet queue: out of memory");
        return -ENOMEM;
    }
    /* Array literals {a,b,...}: one statement whatever n is. */
    size_t oj = 0, oi = 0, og = 0;
    jobs[oj++] = idxs[oi++] = gens[og++] = '{';
    for (int i = 0; i < n; i++) {
        oj += (size_t)snprintf(jobs + oj, cap - oj, "%s%llu", i ? "," : "", (unsigned long long)held[i].job);
        oi += (size_t)snprintf(idxs + oi, cap - oi, "%s%u", i ? "," : "", held[i].idx);
        og += (size_t)snprintf(gens + og, cap - og, "%s%llu", i ? "," : "", (unsigned long long)held[i].gen);
    }
    snprintf(jobs + oj, cap - oj, "}");
    snprintf(idxs + oi, cap - oi, "}");
    snprintf(gens + og, cap - og, "}");
    /* Only unexpired leases: one that expired may have been claimed by another
     * daemon already (then owner no longer matches anyway) or is about to be. And
     * only the ones the caller names: a lease owner got without knowing it (a claim
     * whose COMMIT landed but whose reply was lost, a previous run's) must expire,
     * not be kept alive by this daemon's heartbeat for as long as it lives. */
    r = exec(f,
             "WITH d AS (UPDATE cuzk_daemons SET heartbeat = now() WHERE id = $1)"
             " UPDATE cuzk_parts SET lease_expiry = now() + make_interval(secs => $2::int)"
             " WHERE owner = $1 AND state = 'leased' AND lease_expiry >= now()"
             " AND (job, idx, lease_gen) IN (SELECT * FROM unnest($3::bigint[],"
             " $4::int[], $5::bigint[]))",
             5, (const char *[]){ owner, lb, jobs, idxs, gens });
    free(jobs);
    free(idxs);
    free(gens);
    return changed(f, r, "renewing leases", err, errlen);
}

/* The job's end, inside the caller's transaction (rolled back on failure): 'done' or
 * 'failed' once no partition is queued, leased, or done with its proof not yet at
 * its final name. A separate statement from the caller's update so that it sees it
 * (a CTE reads the statement's starting snapshot); the same transaction, so a
 * partition never ends while its job's last update is lost (the job would stay
 * 'running' with nothing left to end it). */
static int job_end(struct fleet *f, const char *jb, char *err, size_t errlen)
{
    /* The job's row locked first: two finishes of its last two partitions would
     * otherwise each see the other's partition still open (READ COMMITTED: the other
     * update is not committed yet) and neither would end the job. Locked, the second
     * one's check below runs after the first committed, on a fresh snapshot. The
     * order (the partition's row, then the job's) is every writer's, as in cancel, so
     * this adds no deadlock. */
    PGresult *r = exec(f, "SELECT 1 FROM cuzk_jobs WHERE id = $1 FOR UPDATE", 1, (const char *[]){ jb });
    int rc;

    if (!ok(r)) return tx_fail(f, r, "finishing the job", err, errlen);
    pq->clear(r);
    /* The doorbell rings in the same transaction: a LISTENer hears the end exactly
     * when it is committed, never before and never not at all. */
    r = exec(f,
             "WITH u AS (UPDATE cuzk_jobs SET state = CASE WHEN EXISTS (SELECT 1 FROM"
             " cuzk_parts WHERE job = $1 AND state = 'failed') THEN 'failed'"
             " ELSE 'done' END, finished = now() WHERE id = $1 AND"
             " state = 'running' AND NOT EXISTS (SELECT 1 FROM cuzk_parts"
             " WHERE job = $1 AND (state IN ('queued', 'leased') OR"
             " (state = 'done' AND NOT published))) RETURNING id)"
             " SELECT pg_notify('cuzk_job_end', id::text) FROM u",
             1, (const char *[]){ jb });
    rc = done(f, r, "finishing the job", err, errlen);
    return rc ? rollback(f, rc) : 0;
}

/* The end of a transaction that moved a partition of job jb: the job's end (job_end)
 * when end, then COMMIT. n (the caller's answer), or the error (a failed job_end is
 * rolled back; a failed COMMIT ended the transaction). */
static int commit_part(struct fleet *f, const char *jb, int end, int n, const char *what, char *err,
                       size_t errlen)
{
    int rc;

    if ((end && (rc = job_end(f, jb, err, errlen))) || (rc = run(f, "COMMIT", what, err, errlen))) return rc;
    return n;
}

int fleet_proof_check(const char *proof, const char *pub, char *err, size_t errlen)
{
    const char *what[2] = { "proof.json", "public.json" }, *txt[2] = { proof, pub };
    size_t cap[2] = { FLEET_PROOF_MAX, FLEET_PUBLIC_MAX };

    for (int i = 0; i < 2; i++) {
        size_t len = txt[i] ? strlen(txt[i]) : 0;
        json_error_t je;
        json_t *j;
        int shape;

        if (!len) {
            snprintf(err, errlen, "fleet queue: the %s to store is empty", what[i]);
            return -EINVAL;
        }
        if (len > cap[i]) {
            snprintf(err, errlen,
                     "fleet queue: the %s to store has %zu bytes, over the %zu "
                     "bytes a stored one may have",
                     what[i], len, cap[i]);
            return -EINVAL;
        }
        if (!(j = json_loadb(txt[i], len, 0, &je))) {
            snprintf(err, errlen, "fleet queue: the %s to store is not JSON: %s", what[i], je.text);
            return -EINVAL;
        }
        shape = i ? json_is_array(j) : json_is_object(j);
        json_decref(j);
        if (!shape) {
            snprintf(err, errlen, "fleet queue: the %s to store is not a JSON %s", what[i],
                     i ? "array" : "object");
            return -EINVAL;
        }
    }
    return 0;
}

/* The finish of fleet_finish and fleet_finish_stored: proof and pub NULL when not
 * stored. */
static int finish(struct fleet *f, const char *owner, uint64_t job, uint32_t idx, uint64_t gen,
                  const char *reason, const char *proof, const char *pub, char *err, size_t errlen)
{
    struct part_key k;
    PGresult *r;
    int won, rc;

    part_key(&k, job, idx, gen);
    if ((rc = run(f, "BEGIN", "finishing", err, errlen))) return rc;
    /* The one decision point: only the holder of (owner, gen) moves the row out of
     * 'leased', and only its proof is stored. The daemon's count changes in the same
     * statement. A job with no out dir has nothing to publish: its stored proof is
     * published; without one (a daemon's bug) the partition fails rather than stay
     * done with nothing anyone could publish. A circuit job's input goes with the
     * finish (input = NULL): its partition is published or failed by this statement
     * and never proved again, and the bytes would otherwise stay for good. */
    r = exec(f,
             "WITH x AS (SELECT out_dir = '' AS nodir FROM cuzk_jobs WHERE id = $1),"
             " p AS (UPDATE cuzk_parts SET state = CASE WHEN $5::text IS NULL AND"
             "   NOT (x.nodir AND $6::text IS NULL) THEN 'done' ELSE 'failed' END,"
             "   reason = CASE WHEN $5::text IS NULL AND x.nodir AND $6::text IS NULL"
             "   THEN 'no out dir and no stored proof' ELSE $5 END, done_by = owner,"
             "   published = $5::text IS NOT NULL OR x.nodir,"
             "   proof_json = $6, public_json = $7::text, input = NULL,"
             "   finished = now(), lease_expiry = NULL FROM x"
             "  WHERE job = $1 AND idx = $2 AND owner = $3 AND lease_gen = $4"
             "   AND state = 'leased' RETURNING job),"
             " d AS (UPDATE cuzk_daemons SET done = done + (SELECT count(*) FROM p)"
             "  WHERE id = $3)"
             " SELECT count(*) FROM p",
             7, (const char *[]){ k.job, k.idx, owner, k.gen, reason, proof, pub });
    if (!ok(r) || pq->ntuples(r) != 1) return tx_fail(f, r, "finishing", err, errlen);
    won = atoi(pq->getvalue(r, 0, 0)) == 1;
    pq->clear(r);
    if (!won) {
        /* A retry whose first try committed but whose answer was lost (the database
         * went away between COMMIT and its reply): the row says owner finished it at
         * gen, which only that first try can have done (claims raise lease_gen).
         * Answering 0 here would leave a done partition that nobody publishes. */
        r = exec(f,
                 "SELECT 1 FROM cuzk_parts WHERE job = $1 AND idx = $2"
                 " AND done_by = $3 AND lease_gen = $4 AND state IN ('done', 'failed')",
                 4, (const char *[]){ k.job, k.idx, owner, k.gen });
        if (!ok(r)) return tx_fail(f, r, "finishing", err, errlen);
        won = pq->ntuples(r) == 1 ? 2 : 0;
        pq->clear(r);
    }
    return commit_part(f, k.job, won == 1, won, "finishing", err, errlen);
}

int fleet_finish(struct fleet *f, const char *owner, uint64_t job, uint32_t idx, uint64_t gen,
                 const char *reason, char *err, size_t errlen)
{
    return finish(f, owner, job, idx, gen, reason, NULL, NULL, err, errlen);
}

int fleet_finish_stored(struct fleet *f, const char *owner, uint64_t job, uint32_t idx, uint64_t gen,
                        const char *proof, const char *pub, char *err, size_t errlen)
{
    int rc = fleet_proof_check(proof, pub, err, errlen);

    return rc ? rc : finish(f, owner, job, idx, gen, NULL, proof, pub, err, errlen);
}

int fleet_release(struct fleet *f, const char *owner, uint64_t job, uint32_t idx, uint64_t gen, char *err,
                  size_t errlen)
{
    return part_update(f,
                       "UPDATE cuzk_parts SET state = 'queued', owner = NULL, lease_expiry = NULL"
                       " WHERE job = $1 AND idx = $2 AND lease_gen = $3 AND owner = $4"
                       " AND state = 'leased'",
                       job, idx, gen, owner, "releasing", err, errlen);
}

int fleet_release_mine(struct fleet *f, const char *owner, char *err, size_t errlen)
{
    PGresult *r;

    /* Unexpired or not: a lease held by owner at its start is a previous life's,
     * worked on by nobody. Renewing it (fleet_renew extends every lease of owner)
     * would keep it from every daemon for as long as this one lives. */
    r = exec(f,
             "UPDATE cuzk_parts SET state = 'queued', owner = NULL, lease_expiry = NULL"
             " WHERE owner = $1 AND state = 'leased'",
             1, (const char *[]){ owner });
    return changed(f, r, "releasing a previous run's leases", err, errlen);
}

int fleet_done_dirs(struct fleet *f, const char *owner, char ***dirs, char *err, size_t errlen)
{
    PGresult *r;
    int n;

    *dirs = NULL;
    r = exec(f,
             "SELECT DISTINCT j.out_dir FROM cuzk_jobs j JOIN cuzk_parts p ON p.job = j.id"
             " WHERE p.done_by = $1 AND p.state = 'done'",
             1, (const char *[]){ owner });
    if (!ok(r)) return pg_fail(f, r, "listing out dirs", err, errlen);
    n = pq->ntuples(r);
    if (n && !(*dirs = calloc((size_t)n, sizeof(**dirs)))) {
        pq->clear(r);
        snprintf(err, errlen, "fleet queue: out of memory");
        return -ENOMEM;
    }
    for (int i = 0; i < n; i++)
        if (!((*dirs)[i] = strdup(pq->getvalue(r, i, 0)))) {
            while (i--) free((*dirs)[i]);
            free(*dirs);
            *dirs = NULL;
            pq->clear(r);
            snprintf(err, errlen, "fleet queue: out of memory");
            return -ENOMEM;
        }
    pq->clear(r);
    return n;
}

void fleet_stage_name(const char *owner, char *buf, size_t len)
{
    snprintf(buf, len, ".cuzk-%s", owner);
}

void fleet_stage_remove(const char *out_dir, const char *owner)
{
    char sn[300];
    int dfd;

    if (!fleet_name_ok(owner) || (dfd = open(out_dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) < 0)
        return;
    fleet_stage_name(owner, sn, sizeof(sn));
    unlinkat(dfd, sn, AT_REMOVEDIR); /* ENOTEMPTY: still in use, kept */
    close(dfd);
}

int fleet_name_ok(const char *s)
{
    size_t n = s ? strlen(s) : 0;

    if (!n || n > 200 || s[0] == '.') return 0;
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)s[i] < 0x20 || s[i] == 0x7f || s[i] == '/') return 0;
    return 1;
}

/* The staging dir sn inside the out dir dfd, never through a link and never outside
 * dfd (RESOLVE_BENEATH where the kernel has openat2, 5.6+; O_NOFOLLOW of a single
 * component otherwise, which is the same for a name fleet_name_ok passed). */
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
    struct part_key k;
    int n, rc;

    part_key(&k, job, idx, gen);
    if ((rc = run(f, "BEGIN", what, err, errlen))) return rc;
    n = changed(f,
                exec(f,
                     "UPDATE cuzk_parts SET published = true WHERE job = $1 AND idx = $2"
                     " AND lease_gen = $3 AND state = 'done' AND NOT published",
                     3, (const char *[]){ k.job, k.idx, k.gen }),
                what, err, errlen);
    if (n < 0) return rollback(f, n);
    /* Even when n is 0: the retry of a mark whose reply was lost ended the job then. */
    return commit_part(f, k.job, 1, n, what, err, errlen);
}

/* A done, unpublished partition whose proof is nowhere: queued again (for any
 * daemon), only while it is still that row. 1 requeued, 0 not that row any more. */
static int requeue(struct fleet *f, uint64_t job, uint32_t idx, uint64_t gen, const char *done_by, char *err,
                   size_t errlen)
{
    return part_update(f,
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
    int dfd, sfd, staged, finals, rc;

    *linked = 0;
    /* Names from the database, so from whoever can write it: a "../x" would link a
     * file of another directory into this one, or this one's out of it. */
    if (!fleet_name_ok(name) || !fleet_name_ok(done_by)) {
        snprintf(err, errlen,
                 "fleet queue: job %llu part %u: refused: its name or done_by is not a "
                 "single file name (no '/', no leading '.', no control character)",
                 (unsigned long long)job, idx);
        return -EINVAL;
    }
    fleet_stage_name(done_by, sn, sizeof(sn));
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
    /* public first: the proof's final name is what readers wait for. Staged in sfd,
     * final in dfd: every name one component below a descriptor. */
    if (sfd >= 0 && there(sfd, tq) && !fleet_publish2(sfd, tq, dfd, fq)) (*linked)++;
    if (sfd >= 0 && there(sfd, tp) && !fleet_publish2(sfd, tp, dfd, fp)) (*linked)++;
    /* Staged, then final, in this order (fleet_pg.h "Publishing": a staged file seen
     * absent was published before, or lost). */
    staged = sfd >= 0 && (there(sfd, tq) || there(sfd, tp));
    finals = there(dfd, fq) && there(dfd, fp);
    if (sfd >= 0) close(sfd);
    close(dfd);
    if (finals) {
        rc = fleet_published(f, job, idx, gen, err, errlen);
        return rc < 0 ? rc : rc ? FLEET_PUB_MARKED : FLEET_PUB_GONE;
    }
    if (staged) {
        snprintf(err, errlen,
                 "fleet queue: %s: staged in %s/%s but cannot be linked to "
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
    struct part_key k;
    int rc, n;

    if ((rc = run(f, "BEGIN", what, err, errlen))) return rc;
    n = part_update(f,
                    "UPDATE cuzk_parts SET state = 'failed', reason = 'refused: its"
                    " name or done_by is not a single file name', published = true"
                    " WHERE job = $1 AND idx = $2 AND lease_gen = $3 AND done_by = $4"
                    " AND state = 'done' AND NOT published",
                    a->job, a->idx, gen, a->done_by, what, err, errlen);
    if (n < 0) return rollback(f, n);
    part_key(&k, a->job, a->idx, gen);
    return commit_part(f, k.job, n == 1, n, what, err, errlen);
}

int fleet_adopt(struct fleet *f, const char *self, int mine,
                void (*cb)(void *arg, const struct fleet_adopted *a), void *arg, char *err, size_t errlen)
{
    char eb[512] = "";
    PGresult *r;
    int n, rc = 0;

    /* A daemon row written by a version-1 cuzkd has no lease_s: its default, 30. */
    r = exec(f,
             "SELECT p.job, p.idx, p.lease_gen, p.name, j.out_dir, p.done_by"
             " FROM cuzk_parts p JOIN cuzk_jobs j ON j.id = p.job"
             " LEFT JOIN cuzk_daemons d ON d.id = p.done_by"
             " WHERE p.state = 'done' AND NOT p.published AND"
             " (CASE WHEN p.done_by = $1 THEN $2::boolean ELSE d.id IS NULL OR"
             "  d.heartbeat < now() - 3 * make_interval(secs => coalesce(d.lease_s, 30))"
             "  END) ORDER BY p.job, p.idx LIMIT 256",
             2, (const char *[]){ self, mine ? "true" : "false" });
    if (!ok(r)) return pg_fail(f, r, "looking for unpublished proofs", err, errlen);
    n = pq->ntuples(r);
    for (int i = 0; i < n; i++) {
        struct fleet_adopted a = {
            .job = strtoull(pq->getvalue(r, i, 0), NULL, 10),
            .idx = (uint32_t)strtoul(pq->getvalue(r, i, 1), NULL, 10),
            .name = pq->getvalue(r, i, 3),
            .out_dir = pq->getvalue(r, i, 4),
            .done_by = pq->getvalue(r, i, 5),
        };
        uint64_t gen = strtoull(pq->getvalue(r, i, 2), NULL, 10);

        a.outcome =
            fleet_part_publish(f, a.out_dir, a.name, a.done_by, a.job, a.idx, gen, &a.linked, eb, sizeof(eb));
        /* A row whose names reach outside its out dir (written by whoever can
         * write the table): failed with the reason, so it is reported once and never
         * looked at again, and its job ended if that was its last open row. */
        if (a.outcome == -EINVAL && fail_bad_row(f, &a, gen, err, errlen) < 0 &&
            pq->status(f->conn) != CONNECTION_OK) {
            rc = -ECONNREFUSED;
            break;
        }
        /* Another daemon's (dead: its heartbeat is stale) staging dir, empty once its
         * last proof is published: removed. Never this daemon's own here: one of its
         * running partitions may be about to write there (fleet.c removes its own). */
        if (a.outcome >= 0 && strcmp(a.done_by, self)) fleet_stage_remove(a.out_dir, a.done_by);
        if (a.outcome == -ECONNREFUSED || (a.outcome < 0 && pq->status(f->conn) != CONNECTION_OK)) {
            snprintf(err, errlen, "%s", eb);
            rc = a.outcome;
            break;
        }
        a.why = eb;
        if (cb) cb(arg, &a);
    }
    pq->clear(r);
    return rc ? rc : n;
}

int fleet_job_state(struct fleet *f, uint64_t job, uint32_t *done, uint32_t *failed, uint32_t *total,
                    char *err, size_t errlen)
{
    char jb[24];
    PGresult *r;

    snprintf(jb, sizeof(jb), "%llu", (unsigned long long)job);
    r = exec(f,
             "SELECT count(*) FILTER (WHERE state = 'done' AND published),"
             " count(*) FILTER (WHERE state = 'failed'), count(*)"
             " FROM cuzk_parts WHERE job = $1",
             1, (const char *[]){ jb });
    if (!ok(r) || pq->ntuples(r) != 1) return pg_fail(f, r, "reading the job", err, errlen);
    *done = (uint32_t)atoi(pq->getvalue(r, 0, 0));
    *failed = (uint32_t)atoi(pq->getvalue(r, 0, 1));
    *total = (uint32_t)atoi(pq->getvalue(r, 0, 2));
    pq->clear(r);
    if (!*total) {
        snprintf(err, errlen, "fleet queue: no job %llu", (unsigned long long)job);
        return -ENOENT;
    }
    if (*done + *failed < *total) return 0;
    return *failed ? 2 : 1;
}

int fleet_fetch(struct fleet *f, uint64_t job, int (*cb)(void *arg, const struct fleet_stored *s), void *arg,
                char *err, size_t errlen)
{
    char jb[24], ib[16];
    PGresult *r, *t = NULL;
    int n, rc = 0;

    snprintf(jb, sizeof(jb), "%llu", (unsigned long long)job);
    r = exec(f,
             "SELECT idx, name, state, reason, proof_json IS NOT NULL FROM cuzk_parts"
             " WHERE job = $1 ORDER BY idx",
             1, (const char *[]){ jb });
    if (!ok(r)) return pg_fail(f, r, "reading the job", err, errlen);
    if (!(n = pq->ntuples(r))) {
        pq->clear(r);
        snprintf(err, errlen, "fleet queue: no job %llu", (unsigned long long)job);
        return -ENOENT;
    }
    for (int i = 0; i < n && !rc; i++) {
        struct fleet_stored s = {
            .idx = (uint32_t)strtoul(pq->getvalue(r, i, 0), NULL, 10),
            .name = pq->getvalue(r, i, 1),
            .state = pq->getvalue(r, i, 2),
            .reason = pq->getisnull(r, i, 3) ? NULL : pq->getvalue(r, i, 3),
        };

        /* One partition's texts at a time (up to FLEET_PUBLIC_MAX each). */
        if (pq->getvalue(r, i, 4)[0] == 't') {
            snprintf(ib, sizeof(ib), "%u", s.idx);
            t = exec(f,
                     "SELECT proof_json, public_json FROM cuzk_parts WHERE job = $1"
                     " AND idx = $2 AND proof_json IS NOT NULL",
                     2, (const char *[]){ jb, ib });
            if (!ok(t)) {
                rc = pg_fail(f, t, "reading a stored proof", err, errlen);
                break;
            }
            if (pq->ntuples(t) == 1) {
                s.proof = pq->getvalue(t, 0, 0);
                s.pub = pq->getvalue(t, 0, 1);
            }
        }
        rc = cb(arg, &s);
        pq->clear(t);
        t = NULL;
    }
    pq->clear(r);
    return rc ? rc : n;
}

char *fleet_status_json(struct fleet *f, char *err, size_t errlen)
{
    PGresult *r;
    char *s;

    /* PostgreSQL builds the JSON: one round trip, and no quoting here. */
    r = pq->exec(f->conn,
                 "SELECT json_build_object("
                 " 'daemons', (SELECT coalesce(json_agg(json_build_object('id', d.id,"
                 "   'host', d.host, 'heartbeat_age_s',"
                 "   round(extract(epoch FROM now() - d.heartbeat)::numeric, 1),"
                 "   'done', d.done, 'store_proofs', coalesce(d.store_proofs, false),"
                 "   'done_1m', (SELECT count(*) FROM cuzk_parts p WHERE p.done_by = d.id"
                 "   AND p.state = 'done' AND p.finished > now() - interval '1 minute'),"
                 "   'leases', (SELECT count(*) FROM cuzk_parts p"
                 "   WHERE p.owner = d.id AND p.state = 'leased'))"
                 "   ORDER BY d.id), '[]') FROM cuzk_daemons d),"
                 " 'parts', (SELECT json_build_object("
                 "   'queued', count(*) FILTER (WHERE state = 'queued'),"
                 "   'leased', count(*) FILTER (WHERE state = 'leased'),"
                 "   'expired', count(*) FILTER (WHERE state = 'leased' AND lease_expiry < now()),"
                 "   'done', count(*) FILTER (WHERE state = 'done'),"
                 "   'unpublished', count(*) FILTER (WHERE state = 'done' AND NOT published),"
                 "   'stored', count(*) FILTER (WHERE state = 'done' AND proof_json IS NOT NULL),"
                 "   'failed', count(*) FILTER (WHERE state = 'failed')) FROM cuzk_parts),"
                 " 'jobs', (SELECT count(*) FROM cuzk_jobs WHERE state = 'running'))::text");
    if (!ok(r) || pq->ntuples(r) != 1) {
        pg_fail(f, r, "status", err, errlen);
        return NULL;
    }
    s = strdup(pq->getvalue(r, 0, 0));
    pq->clear(r);
    if (!s) snprintf(err, errlen, "fleet queue: out of memory");
    return s;
}

int fleet_publish2(int tmpfd, const char *tmp, int dirfd, const char *final)
{
    int rc = 0;

    /* As fleet_publish, from another directory (the staging dir). */
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

/* ---- Circuit jobs (fleet_pg.h "Circuit jobs") ---- */

/* A job id as a statement's text parameter; 0 when it cannot be a bigserial's (over
 * INT64_MAX: no such job, rather than a cast error). */
static int job_param(char jb[24], uint64_t job)
{
    snprintf(jb, 24, "%llu", (unsigned long long)job);
    return job > (uint64_t)INT64_MAX ? 0 : 1;
}

/* The tenant condition of the API's views on cuzk_jobs j: $T NULL any, else equal
 * (NULL and "" the same: no tenant). */
#define TENANT_OK(n) " ($" #n "::text IS NULL OR coalesce(j.tenant, '') = $" #n ")"

static int no_job(uint64_t job, char *err, size_t errlen)
{
    snprintf(err, errlen, "fleet queue: no job %llu", (unsigned long long)job);
    return -ENOENT;
}

/* In the inserting transaction: the tenant's running jobs, counted under an advisory
 * lock of its own (held to the commit), so that a concurrent insert of the same
 * tenant, on this server or another, counts after this one's job is in. 0: room (or
 * the key is a replay, answered by the insert); -EDQUOT; or a database error. */
static int tenant_room(struct fleet *f, const struct fleet_circuit_job *j, const char *tenant, char *err,
                       size_t errlen)
{
    char mb[16];
    PGresult *r;
    int over;

    snprintf(mb, sizeof(mb), "%u", j->max_running);
    /* The lock first, the count in a statement of its own: read committed takes a
     * snapshot per statement, so the count sees whatever the lock's last holder
     * committed. */
    r = exec(f, "SELECT pg_advisory_xact_lock(7172018, hashtext($1))", 1, (const char *[]){ tenant });
    if (!ok(r)) return tx_fail(f, r, "locking a tenant's jobs", err, errlen);
    pq->clear(r);
    r = exec(f,
             "SELECT (SELECT count(*) FROM cuzk_jobs WHERE state = 'running' AND coalesce(tenant, '') = $1)"
             " >= $2::int AND NOT EXISTS (SELECT 1 FROM cuzk_jobs WHERE coalesce(tenant, '') = $1 AND"
             " idem_key = $3)",
             3, (const char *[]){ tenant, mb, j->idem_key });
    if (!ok(r) || pq->ntuples(r) != 1) return tx_fail(f, r, "counting a tenant's jobs", err, errlen);
    over = pq->getvalue(r, 0, 0)[0] == 't';
    pq->clear(r);
    if (!over) return 0;
    snprintf(err, errlen, "fleet queue: tenant %s has %u job(s) running, its max-running-jobs", tenant,
             j->max_running);
    return -EDQUOT;
}

int fleet_job_add_inputs(struct fleet *f, const struct fleet_circuit_job *j, uint32_t n,
                         const struct fleet_input *in, uint64_t *job, char *err, size_t errlen)
{
    static const char what[] = "submitting";
    const char *tenant = j->tenant && j->tenant[0] ? j->tenant : NULL;
    char nb[16], ib[16], jb[24];
    PGresult *r;
    int rc;

    if (!j->circuit || !j->circuit[0] || strlen(j->circuit) >= sizeof(((struct fleet_claim *)0)->circuit) ||
        !j->fingerprint || !j->fingerprint[0] || (j->idem_key && !j->body_sha256)) {
        snprintf(err, errlen, "fleet queue: a circuit job needs its circuit, its fingerprint%s",
                 j->idem_key ? " and the body's hash" : "");
        return -EINVAL;
    }
    if (!n || n > FLEET_CIRCUIT_PARTS_MAX) {
        snprintf(err, errlen, "fleet queue: a circuit job has 1 to %d partitions, not %u",
                 FLEET_CIRCUIT_PARTS_MAX, n);
        return -EINVAL;
    }
    for (uint32_t i = 0; i < n; i++)
        if (!in[i].len || in[i].len > FLEET_INPUT_MAX || !in[i].bytes) {
            snprintf(err, errlen, "fleet queue: input %u has %zu bytes: 1 to %llu are taken", i, in[i].len,
                     (unsigned long long)FLEET_INPUT_MAX);
            return -EINVAL;
        }
    snprintf(nb, sizeof(nb), "%u", n);
    if ((rc = run(f, "BEGIN", what, err, errlen))) return rc;
    if (tenant && j->max_running && (rc = tenant_room(f, j, tenant, err, errlen)))
        return rc == -EDQUOT ? rollback(f, rc) : rc; /* an error rolled back already */
    /* ON CONFLICT DO NOTHING: a concurrent insert of the same key waits for the other
     * transaction, then inserts nothing; the job it made is read below. */
    r = exec(f,
             "INSERT INTO cuzk_jobs(zkey, out_dir, n_parts, store_proofs, circuit, fingerprint,"
             " tenant, idem_key, body_sha256) VALUES ('', '', $1, true, $2, $3, $4, $5, $6)"
             " ON CONFLICT ((coalesce(tenant, '')), idem_key) WHERE idem_key IS NOT NULL"
             " DO NOTHING RETURNING id",
             6, (const char *[]){ nb, j->circuit, j->fingerprint, tenant, j->idem_key, j->body_sha256 });
    if (!ok(r)) return tx_fail(f, r, what, err, errlen);
    if (pq->ntuples(r) == 0) { /* the key is taken: that job, if it has the same body */
        pq->clear(r);
        /* ... and the same circuit: a body sent to another circuit is another request
         * (the API hashes the body alone), never answered with this circuit's job. */
        r = exec(f,
                 "SELECT id, body_sha256 = $3 AND circuit = $4 FROM cuzk_jobs WHERE"
                 " coalesce(tenant, '') = coalesce($1, '') AND idem_key = $2",
                 4, (const char *[]){ tenant, j->idem_key, j->body_sha256, j->circuit });
        if (!ok(r) || pq->ntuples(r) != 1) return tx_fail(f, r, what, err, errlen);
        *job = strtoull(pq->getvalue(r, 0, 0), NULL, 10);
        rc = pq->getvalue(r, 0, 1)[0] == 't' ? 0 : -EEXIST;
        pq->clear(r);
        if (rc)
            snprintf(err, errlen,
                     "fleet queue: idempotency key already used by job %llu with another body or circuit",
                     (unsigned long long)*job);
        return rollback(f, rc);
    }
    snprintf(jb, sizeof(jb), "%s", pq->getvalue(r, 0, 0));
    pq->clear(r);
    for (uint32_t i = 0; i < n; i++) {
        /* The input in binary (format 1): its bytes as they are, NUL bytes included,
         * no escaping and no doubling on the wire. */
        const char *v[5] = { jb, ib, ib, in[i].bytes, in[i].wtns ? "wtns" : "json" };
        int len[5] = { 0, 0, 0, (int)in[i].len, 0 }, fmt[5] = { 0, 0, 0, 1, 0 };

        snprintf(ib, sizeof(ib), "%u", i);
        r = pq->exec_params(f->conn,
                            "INSERT INTO cuzk_parts(job, idx, wtns, name, input, input_kind)"
                            " VALUES ($1, $2::int, '', $3::text, $4::bytea, $5)",
                            5, NULL, v, len, fmt, 0);
        if ((rc = done(f, r, what, err, errlen))) return rollback(f, rc);
    }
    if ((rc = run(f, "COMMIT", what, err, errlen))) return rollback(f, rc);
    *job = strtoull(jb, NULL, 10);
    return 1;
}

/* s as an element of a text[] literal: double-quoted, '"' and '\' escaped. */
static size_t array_elem(char *out, const char *s)
{
    size_t o = 0;

    out[o++] = '"';
    for (; *s; s++) {
        if (*s == '"' || *s == '\\') out[o++] = '\\';
        out[o++] = *s;
    }
    out[o++] = '"';
    return o;
}

/* A text[] literal {"a","b"} of n strings (malloc'd), NULL when out of memory. */
static char *array_literal(uint32_t n, const char *const *v)
{
    size_t cap = 3, o = 0;
    char *a;

    for (uint32_t i = 0; i < n; i++) cap += 2 * strlen(v[i]) + 3;
    if (!(a = malloc(cap))) return NULL;
    a[o++] = '{';
    for (uint32_t i = 0; i < n; i++) {
        if (i) a[o++] = ',';
        o += array_elem(a + o, v[i]);
    }
    a[o++] = '}';
    a[o] = 0;
    return a;
}

int fleet_set_circuits(struct fleet *f, uint32_t n, const char *const *names, const char *const *fingerprints)
{
    char *c = array_literal(n, names), *p = array_literal(n, fingerprints);

    if (!c || !p) {
        free(c);
        free(p);
        return -ENOMEM;
    }
    free(f->circuits);
    free(f->fingerprints);
    f->circuits = c;
    f->fingerprints = p;
    return 0;
}

int64_t fleet_input_read(struct fleet *f, const char *owner, uint64_t job, uint32_t idx, uint64_t gen, int fd,
                         char *err, size_t errlen)
{
    struct part_key k;
    const char *b;
    PGresult *r;
    int64_t len;

    part_key(&k, job, idx, gen);
    /* Binary result (format 1): the bytea's bytes, not its hex text at twice the size. */
    r = pq->exec_params(f->conn,
                        "SELECT input FROM cuzk_parts WHERE job = $1 AND idx = $2 AND lease_gen = $3"
                        " AND owner = $4 AND state = 'leased' AND input IS NOT NULL",
                        4, NULL, (const char *[]){ k.job, k.idx, k.gen, owner }, NULL, NULL, 1);
    if (!ok(r)) return pg_fail(f, r, "reading a partition's input", err, errlen);
    if (pq->ntuples(r) != 1) {
        pq->clear(r);
        return 0;
    }
    b = pq->getvalue(r, 0, 0);
    len = pq->getlength(r, 0, 0);
    for (int64_t o = 0; o < len;) {
        ssize_t w = pwrite(fd, b + o, (size_t)(len - o), o);

        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) {
            snprintf(err, errlen, "fleet queue: writing a partition's input: %s", strerror(w ? errno : EIO));
            pq->clear(r);
            return -EIO;
        }
        o += w;
    }
    pq->clear(r);
    if (ftruncate(fd, len)) {
        snprintf(err, errlen, "fleet queue: writing a partition's input: %s", strerror(errno));
        return -EIO;
    }
    return len;
}

/* The one text a query returns (malloc'd into *out), -ENOENT when it returns no row. */
static int one_text(struct fleet *f, PGresult *r, char **out, const char *what, char *err, size_t errlen)
{
    if (!ok(r)) return pg_fail(f, r, what, err, errlen);
    if (pq->ntuples(r) != 1) {
        pq->clear(r);
        return -ENOENT;
    }
    *out = strdup(pq->getvalue(r, 0, 0));
    pq->clear(r);
    if (!*out) {
        snprintf(err, errlen, "fleet queue: out of memory");
        return -ENOMEM;
    }
    return 0;
}

int fleet_job_json(struct fleet *f, uint64_t job, const char *tenant, char **json, char *err, size_t errlen)
{
    char jb[24];
    int rc;

    *json = NULL;
    if (!job_param(jb, job)) return no_job(job, err, errlen);
    /* PostgreSQL builds the JSON (as fleet_status_json); json_strip_nulls leaves out
     * the members that have no value (a running job's finished_unix, a queued
     * partition's done_by and reason). */
    rc = one_text(f,
                  exec(f,
                       "SELECT json_strip_nulls(json_build_object('id', j.id, 'circuit', j.circuit,"
                       " 'tenant', nullif(j.tenant, ''), 'state', j.state,"
                       " 'submitted_unix', extract(epoch FROM j.submitted)::bigint,"
                       " 'finished_unix', extract(epoch FROM j.finished)::bigint,"
                       " 'parts', (SELECT coalesce(json_agg(json_build_object('index', p.idx,"
                       "  'state', p.state, 'reason', p.reason, 'done_by', p.done_by,"
                       "  'attempts', p.attempts) ORDER BY p.idx), '[]') FROM cuzk_parts p"
                       "  WHERE p.job = j.id)))::text FROM cuzk_jobs j WHERE j.id = $1 AND" TENANT_OK(2),
                       2, (const char *[]){ jb, tenant }),
                  json, "reading the job", err, errlen);
    return rc == -ENOENT ? no_job(job, err, errlen) : rc;
}

int fleet_part_proof(struct fleet *f, uint64_t job, uint32_t idx, const char *tenant, char **proof,
                     char **pub, char *err, size_t errlen)
{
    char jb[24], ib[16];
    const char *st;
    PGresult *r;
    int rc = 0;

    *proof = *pub = NULL;
    if (!job_param(jb, job) || idx > INT32_MAX) return no_job(job, err, errlen);
    snprintf(ib, sizeof(ib), "%u", idx);
    r = exec(f,
             "SELECT p.state, coalesce(p.reason, ''), p.proof_json, p.public_json"
             " FROM cuzk_parts p JOIN cuzk_jobs j ON j.id = p.job"
             " WHERE p.job = $1 AND p.idx = $2 AND" TENANT_OK(3),
             3, (const char *[]){ jb, ib, tenant });
    if (!ok(r)) return pg_fail(f, r, "reading a stored proof", err, errlen);
    if (pq->ntuples(r) != 1) {
        pq->clear(r);
        snprintf(err, errlen, "fleet queue: no job %llu part %u", (unsigned long long)job, idx);
        return -ENOENT;
    }
    st = pq->getvalue(r, 0, 0);
    if (!strcmp(st, "failed")) {
        snprintf(err, errlen, "%s", pq->getvalue(r, 0, 1));
        rc = -EIO;
    } else if (strcmp(st, "done")) {
        snprintf(err, errlen, "fleet queue: job %llu part %u is %s", (unsigned long long)job, idx, st);
        rc = -EAGAIN;
    } else if (pq->getisnull(r, 0, 2) || pq->getisnull(r, 0, 3)) {
        snprintf(err, errlen, "fleet queue: job %llu part %u: its proof is not stored in the queue",
                 (unsigned long long)job, idx);
        rc = -ENOENT;
    } else if (!(*proof = strdup(pq->getvalue(r, 0, 2))) || !(*pub = strdup(pq->getvalue(r, 0, 3)))) {
        free(*proof);
        *proof = NULL;
        snprintf(err, errlen, "fleet queue: out of memory");
        rc = -ENOMEM;
    }
    pq->clear(r);
    return rc;
}

int fleet_job_cancel(struct fleet *f, uint64_t job, const char *tenant, char *err, size_t errlen)
{
    static const char what[] = "cancelling";
    char jb[24];
    PGresult *r;
    int rc, n;

    if (!job_param(jb, job)) return no_job(job, err, errlen);
    if ((rc = run(f, "BEGIN", what, err, errlen))) return rc;
    r = exec(f, "SELECT state = 'running' FROM cuzk_jobs j WHERE id = $1 AND" TENANT_OK(2), 2,
             (const char *[]){ jb, tenant });
    if (!ok(r)) return tx_fail(f, r, what, err, errlen);
    n = pq->ntuples(r) == 1 ? pq->getvalue(r, 0, 0)[0] == 't' : -1;
    pq->clear(r);
    if (n <= 0) return rollback(f, n < 0 ? no_job(job, err, errlen) : 0);
    /* The partitions first, then the job: the order of a finish (its partition, then
     * job_end's job row), so the two never wait on each other in a cycle. done_by
     * stays NULL: a leased owner's finish (and its retry check) matches no row and
     * answers 0, so it discards its proof. */
    r = exec(f,
             "UPDATE cuzk_parts SET state = 'failed', reason = 'cancelled', lease_expiry = NULL,"
             " finished = now(), published = true, input = NULL"
             " WHERE job = $1 AND state IN ('queued', 'leased')",
             1, (const char *[]){ jb });
    if ((rc = done(f, r, what, err, errlen))) return rollback(f, rc);
    r = exec(f,
             "WITH u AS (UPDATE cuzk_jobs SET state = 'cancelled', cancelled = true, finished = now()"
             " WHERE id = $1 AND state = 'running' RETURNING id)"
             " SELECT pg_notify('cuzk_job_end', id::text) FROM u",
             1, (const char *[]){ jb });
    if (!ok(r)) return tx_fail(f, r, what, err, errlen);
    n = pq->ntuples(r); /* 0: it ended meanwhile (its last finish came first) */
    pq->clear(r);
    if ((rc = run(f, "COMMIT", what, err, errlen))) return rollback(f, rc);
    return n == 1;
}

int fleet_tenant_running(struct fleet *f, const char *tenant, char *err, size_t errlen)
{
    PGresult *r = exec(f,
                       "SELECT count(*) FROM cuzk_jobs WHERE state = 'running'"
                       " AND coalesce(tenant, '') = coalesce($1, '')",
                       1, (const char *[]){ tenant });
    int n;

    if (!ok(r) || pq->ntuples(r) != 1) return pg_fail(f, r, "counting a tenant's jobs", err, errlen);
    n = atoi(pq->getvalue(r, 0, 0));
    pq->clear(r);
    return n;
}

int fleet_listen(struct fleet *f, char *err, size_t errlen)
{
    return run(f, "LISTEN cuzk_job_end", "listening for job ends", err, errlen);
}

int fleet_wait_notify(struct fleet *f, int timeout_ms, uint64_t *job, char *err, size_t errlen)
{
    const uint64_t t0 = os_now_ns();

    for (;;) {
        struct pollfd p = { .fd = pq->socket(f->conn), .events = POLLIN };
        PGnotify *nt;
        long left;

        /* What arrived already (during an earlier statement too) is read first. */
        if (p.fd < 0 || !pq->consume_input(f->conn))
            return pg_fail(f, NULL, "waiting for job ends", err, errlen);
        while ((nt = pq->notifies(f->conn))) {
            int mine = !strcmp(nt->relname, "cuzk_job_end");

            if (mine) *job = strtoull(nt->extra, NULL, 10);
            pq->freemem(nt);
            if (mine) return 1;
        }
        left = timeout_ms - (long)((os_now_ns() - t0) / 1000000);
        if (left <= 0) return 0;
        if (poll(&p, 1, (int)left) < 0 && errno != EINTR) {
            snprintf(err, errlen, "fleet queue: waiting for job ends: %s", strerror(errno));
            return -EIO;
        }
    }
}
