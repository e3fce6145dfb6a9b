/* fleet_pg.c — the fleet queue on PostgreSQL (fleet_pg.h), libpq: the connection and
 * its schema, jobs, claims, leases, finishes and the queue's views; publishing is in
 * fleet_publish.c, circuit jobs in fleet_circuit.c (fleet_priv.h: what they share). */
#include "store/fleet_priv.h"

#include <ctype.h>
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

const struct pq_api *fleet_pq; /* fleet_priv.h */

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
    " cancelled boolean NOT NULL DEFAULT false, metadata text);"
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

/* Version 4 to 5 (same lock, after the earlier steps): a job's metadata, the client's
 * JSON object as text (NULL: none; every existing job has none). */
static const char migrate_v4_sql[] = "ALTER TABLE cuzk_jobs ADD COLUMN IF NOT EXISTS metadata text;"
                                     "UPDATE cuzk_meta SET value = '5' WHERE key = 'schema_version';";

/* After the columns exist (created or migrated): what fleet_adopt looks for; one job
 * per (tenant, idempotency key), which decides between concurrent inserts of one key;
 * a tenant's running jobs (its quota). */
static const char index_sql[] = "CREATE INDEX IF NOT EXISTS cuzk_parts_unpublished ON cuzk_parts(done_by)"
                                " WHERE state = 'done' AND NOT published;"
                                "CREATE UNIQUE INDEX IF NOT EXISTS cuzk_jobs_idem ON cuzk_jobs"
                                " ((coalesce(tenant, '')), idem_key) WHERE idem_key IS NOT NULL;"
                                "CREATE INDEX IF NOT EXISTS cuzk_jobs_running ON cuzk_jobs"
                                " ((coalesce(tenant, ''))) WHERE state = 'running';"
                                "CREATE INDEX IF NOT EXISTS cuzk_jobs_tenant ON cuzk_jobs"
                                " ((coalesce(tenant, '')), id);";

int fleet_is_url(const char *s)
{
    return s && (!strncmp(s, "postgresql://", 13) || !strncmp(s, "postgres://", 11));
}

/* -errno for the connection's state: a lost or refused connection is ECONNREFUSED
 * (the caller retries with backoff), anything else EIO. */
int fleet_sql_fail(struct fleet *f, PGresult *r, const char *what, char *err, size_t errlen)
{
    const char *m = fleet_pq->error_message(f->conn);
    int lost = fleet_pq->status(f->conn) != CONNECTION_OK;

    if (r && fleet_pq->result_error_message(r)[0]) m = fleet_pq->result_error_message(r);
    snprintf(err, errlen, "fleet queue: %s: %.*s", what, (int)strcspn(m, "\n"), m);
    if (r) fleet_pq->clear(r);
    return lost ? -ECONNREFUSED : -EIO;
}

/* ROLLBACK after a transaction's error rc; returns rc. */
int fleet_sql_rollback(struct fleet *f, int rc)
{
    fleet_pq->clear(fleet_pq->exec(f->conn, "ROLLBACK"));
    return rc;
}

/* A failed statement inside a transaction: the error, then ROLLBACK (pg_fail clears r). */
int fleet_sql_tx_fail(struct fleet *f, PGresult *r, const char *what, char *err, size_t errlen)
{
    return fleet_sql_rollback(f, fleet_sql_fail(f, r, what, err, errlen));
}

PGresult *fleet_sql_exec(struct fleet *f, const char *sql, int n, const char *const *p)
{
    return fleet_pq->exec_params(f->conn, sql, n, NULL, p, NULL, NULL, 0);
}

int fleet_sql_ok(PGresult *r)
{
    ExecStatusType s = fleet_pq->result_status(r);
    return s == PGRES_COMMAND_OK || s == PGRES_TUPLES_OK;
}

void fleet_part_key(struct fleet_part_key *k, uint64_t job, uint32_t idx, uint64_t gen)
{
    snprintf(k->job, sizeof(k->job), "%llu", (unsigned long long)job);
    snprintf(k->idx, sizeof(k->idx), "%u", idx);
    snprintf(k->gen, sizeof(k->gen), "%llu", (unsigned long long)gen);
}

/* A statement's outcome when it returns no rows: 0, or the error (r is cleared). */
int fleet_sql_done(struct fleet *f, PGresult *r, const char *what, char *err, size_t errlen)
{
    if (!fleet_sql_ok(r)) return fleet_sql_fail(f, r, what, err, errlen);
    fleet_pq->clear(r);
    return 0;
}

/* How many rows a statement changed, or the error (r is cleared). */
int fleet_sql_changed(struct fleet *f, PGresult *r, const char *what, char *err, size_t errlen)
{
    int n;

    if (!fleet_sql_ok(r)) return fleet_sql_fail(f, r, what, err, errlen);
    n = atoi(fleet_pq->cmd_tuples(r));
    fleet_pq->clear(r);
    return n;
}

/* Statements without parameters (BEGIN, COMMIT, the schema's): 0, or the error (a
 * transaction's is the caller's to roll back). */
int fleet_sql_run(struct fleet *f, const char *sql, const char *what, char *err, size_t errlen)
{
    return fleet_sql_done(f, fleet_pq->exec(f->conn, sql), what, err, errlen);
}

/* A statement that changes one partition's row: $1 job, $2 idx, $3 lease_gen, $4 who
 * (its owner or done_by). How many rows it changed, or the error. */
int fleet_sql_part_update(struct fleet *f, const char *sql, uint64_t job, uint32_t idx, uint64_t gen,
                          const char *who, const char *what, char *err, size_t errlen)
{
    struct fleet_part_key k;

    fleet_part_key(&k, job, idx, gen);
    return fleet_sql_changed(f, fleet_sql_exec(f, sql, 4, (const char *[]){ k.job, k.idx, k.gen, who }), what,
                             err, errlen);
}

/* The version the database has (under the caller's advisory lock): 0 when it has no
 * cuzk_meta yet (a fresh database), or the error. */
static int schema_version(struct fleet *f, const char *what, char *err, size_t errlen)
{
    PGresult *r = fleet_pq->exec(f->conn, "SELECT to_regclass('cuzk_meta') IS NOT NULL");
    int v;

    if (!fleet_sql_ok(r) || fleet_pq->ntuples(r) != 1) return fleet_sql_fail(f, r, what, err, errlen);
    v = fleet_pq->getvalue(r, 0, 0)[0] == 't';
    fleet_pq->clear(r);
    if (!v) return 0;
    r = fleet_pq->exec(f->conn, "SELECT value FROM cuzk_meta WHERE key = 'schema_version'");
    if (!fleet_sql_ok(r)) return fleet_sql_fail(f, r, what, err, errlen);
    v = fleet_pq->ntuples(r) == 1 ? atoi(fleet_pq->getvalue(r, 0, 0)) : 0;
    fleet_pq->clear(r);
    return v;
}

static int schema(struct fleet *f, char *err, size_t errlen)
{
    static const char what[] = "creating the schema";
    PGresult *r;
    int v, rc;

    if ((rc = fleet_sql_run(f, "BEGIN; SELECT pg_advisory_xact_lock(7172017);", what, err, errlen)))
        return rc;
    /* Up to date: no DDL at all. CREATE INDEX IF NOT EXISTS takes its table's
     * ShareLock before it finds the index there, which would block (and with a
     * submit in flight on the other table, deadlock with) every open's neighbours. */
    if ((v = schema_version(f, what, err, errlen)) < 0) return fleet_sql_rollback(f, v);
    if (v == FLEET_SCHEMA_VERSION)
        return (rc = fleet_sql_run(f, "COMMIT", what, err, errlen)) ? fleet_sql_rollback(f, rc) : 0;
    if (v > FLEET_SCHEMA_VERSION) {
        snprintf(err, errlen,
                 "fleet queue: schema version %d is newer than this cuzk's "
                 "(%d): upgrade cuzk",
                 v, FLEET_SCHEMA_VERSION);
        return fleet_sql_rollback(f, -EPROTO);
    }
    if ((rc = fleet_sql_run(f, schema_sql, what, err, errlen))) return fleet_sql_rollback(f, rc);
    r = fleet_pq->exec(f->conn,
                       "INSERT INTO cuzk_meta VALUES ('schema_version', '5')"
                       " ON CONFLICT DO NOTHING;"
                       " SELECT value FROM cuzk_meta WHERE key = 'schema_version'");
    if (!fleet_sql_ok(r) || fleet_pq->ntuples(r) != 1) return fleet_sql_tx_fail(f, r, what, err, errlen);
    v = atoi(fleet_pq->getvalue(r, 0, 0));
    fleet_pq->clear(r);
    if ((v < 2 && (rc = fleet_sql_run(f, migrate_v1_sql, what, err, errlen))) ||
        (v < 3 && (rc = fleet_sql_run(f, migrate_v2_sql, what, err, errlen))) ||
        (v < 4 && (rc = fleet_sql_run(f, migrate_v3_sql, what, err, errlen))) ||
        (v < 5 && (rc = fleet_sql_run(f, migrate_v4_sql, what, err, errlen))) ||
        (rc = fleet_sql_run(f, index_sql, what, err, errlen)) ||
        (rc = fleet_sql_run(f, "COMMIT", what, err, errlen)))
        return fleet_sql_rollback(f, rc);
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

/* The fallback of fleet_url_has_password: url percent-decoded, blanks dropped, lower
 * case, searched for "password=". */
static bool url_says_password(const char *url)
{
    char buf[4096]; /* a longer URL is cut: its first 4 KiB are searched */
    size_t n = 0;

    for (const char *p = url; *p && n + 1 < sizeof(buf); p++) {
        int c = (unsigned char)*p;

        if (c == '%' && isxdigit((unsigned char)p[1]) && isxdigit((unsigned char)p[2])) {
            char hex[3] = { p[1], p[2], 0 };

            c = (int)strtol(hex, NULL, 16);
            p += 2;
        }
        if (!isspace(c)) buf[n++] = (char)tolower(c);
    }
    buf[n] = '\0';
    return strstr(buf, "password=") != NULL;
}

bool fleet_url_has_password(const char *url)
{
    const char *a, *b;
    const struct pq_api *pq;
    char err[256], *msg = NULL;
    PQconninfoOption *opts;
    bool has = false;

    if (!url) return false;
    if (fleet_url_password(url, &a, &b) || url_says_password(url)) return true;
    if (!(pq = pq_dl_load(err, sizeof(err)))) return false;
    if (!(opts = pq->conninfo_parse(url, &msg))) {
        /* unparsable: libpq would not connect with it either; the textual checks ran */
        if (msg) pq->freemem(msg);
        return false;
    }
    for (PQconninfoOption *o = opts; o->keyword; o++)
        if (!strcmp(o->keyword, "password") && o->val && o->val[0]) has = true;
    pq->conninfo_free(opts);
    return has;
}

void fleet_url_scrub(char *url)
{
    const char *a, *b;

    if (fleet_url_password(url, &a, &b))
        memset(url + (a - url), '*', (size_t)(b - a));
    else if (fleet_url_has_password(url)) /* a spelling without a known place: all of it */
        memset(url, '*', strlen(url));
}

int fleet_open(struct fleet **fp, const char *url, char *err, size_t errlen)
{
    struct fleet *f = calloc(1, sizeof(*f));
    int rc;

    *fp = NULL;
    /* No libpq is a missing part of the installation, as a missing compiler is for
     * build-witness: exit 10, not a refusal or an unreachable database. */
    if (!(fleet_pq = pq_dl_load(err, errlen))) {
        free(f);
        return -CUZK_E_INTERNAL;
    }
    if (!f) {
        snprintf(err, errlen, "fleet queue: out of memory");
        return -ENOMEM;
    }
    f->conn = fleet_pq->connectdb(url);
    if (!f->conn || fleet_pq->status(f->conn) != CONNECTION_OK) {
        const char *m = f->conn ? fleet_pq->error_message(f->conn) : "out of memory";
        snprintf(err, errlen, "fleet queue: cannot connect: %.*s", (int)strcspn(m, "\n"), m);
        fleet_close(f);
        return -ECONNREFUSED;
    }
    /* Notices (IF NOT EXISTS ... skipping) are not news for an operator. */
    fleet_pq->clear(fleet_pq->exec(f->conn, "SET client_min_messages = warning"));
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
    if (f->conn) fleet_pq->finish(f->conn);
    free(f->circuits);
    free(f->fingerprints);
    free(f);
}

int fleet_reconnect(struct fleet *f, char *err, size_t errlen)
{
    if (fleet_pq->status(f->conn) == CONNECTION_OK) return 0;
    fleet_pq->reset(f->conn);
    if (fleet_pq->status(f->conn) != CONNECTION_OK)
        return fleet_sql_fail(f, NULL, "reconnecting", err, errlen);
    fleet_pq->clear(fleet_pq->exec(f->conn, "SET client_min_messages = warning"));
    return 0;
}

int fleet_ping(struct fleet *f, char *err, size_t errlen)
{
    return fleet_sql_done(f, fleet_pq->exec(f->conn, "SELECT 1"), "ping", err, errlen);
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
    if ((rc = fleet_sql_run(f, "BEGIN", "submitting", err, errlen))) return rc;
    r = fleet_sql_exec(f,
                       "INSERT INTO cuzk_jobs(zkey, out_dir, n_parts, store_proofs)"
                       " VALUES ($1, $2, $3, $4) RETURNING id",
                       4, (const char *[]){ zkey, out_dir, nb, store_proofs ? "true" : "false" });
    if (!fleet_sql_ok(r) || fleet_pq->ntuples(r) != 1)
        return fleet_sql_tx_fail(f, r, "submitting", err, errlen);
    snprintf(jb, sizeof(jb), "%s", fleet_pq->getvalue(r, 0, 0));
    fleet_pq->clear(r);
    for (uint32_t i = 0; i < n; i++) {
        snprintf(ib, sizeof(ib), "%u", i);
        r = fleet_sql_exec(f, "INSERT INTO cuzk_parts(job, idx, wtns, name) VALUES ($1, $2, $3, $4)", 4,
                           (const char *[]){ jb, ib, wtns[i], name[i] });
        if ((rc = fleet_sql_done(f, r, "submitting", err, errlen))) return fleet_sql_rollback(f, rc);
    }
    if ((rc = fleet_sql_run(f, "COMMIT", "submitting", err, errlen))) return fleet_sql_rollback(f, rc);
    *job = strtoull(jb, NULL, 10);
    return 0;
}

int fleet_daemon_hello(struct fleet *f, const char *id, const char *host, int lease_s, char *err,
                       size_t errlen)
{
    char lb[16];

    snprintf(lb, sizeof(lb), "%d", lease_s);
    return fleet_sql_done(
        f,
        fleet_sql_exec(f,
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
    r = fleet_sql_exec(f,
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
                       (const char *[]){ owner, lb, mb, f->stores ? "true" : "false",
                                         f->circuits ? f->circuits : "{}",
                                         f->fingerprints ? f->fingerprints : "{}" });
    if (!fleet_sql_ok(r)) return fleet_sql_fail(f, r, "claiming", err, errlen);
    n = fleet_pq->ntuples(r);
    for (int i = 0; i < n && i < max; i++) {
        struct fleet_claim *c = &out[i];
        c->job = strtoull(fleet_pq->getvalue(r, i, 0), NULL, 10);
        c->idx = (uint32_t)strtoul(fleet_pq->getvalue(r, i, 1), NULL, 10);
        c->gen = strtoull(fleet_pq->getvalue(r, i, 2), NULL, 10);
        snprintf(c->wtns, sizeof(c->wtns), "%s", fleet_pq->getvalue(r, i, 3));
        snprintf(c->name, sizeof(c->name), "%s", fleet_pq->getvalue(r, i, 4));
        snprintf(c->zkey, sizeof(c->zkey), "%s", fleet_pq->getvalue(r, i, 5));
        snprintf(c->out_dir, sizeof(c->out_dir), "%s", fleet_pq->getvalue(r, i, 6));
        c->attempts = (uint32_t)strtoul(fleet_pq->getvalue(r, i, 7), NULL, 10);
        c->store_proofs = fleet_pq->getvalue(r, i, 8)[0] == 't';
        snprintf(c->circuit, sizeof(c->circuit), "%s", fleet_pq->getvalue(r, i, 9));
        c->input_kind = !c->circuit[0]                      ? FLEET_INPUT_PATH
            : !strcmp(fleet_pq->getvalue(r, i, 10), "wtns") ? FLEET_INPUT_WTNS
                                                            : FLEET_INPUT_JSON;
    }
    fleet_pq->clear(r);
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
    r = fleet_sql_exec(f,
                       "WITH d AS (UPDATE cuzk_daemons SET heartbeat = now() WHERE id = $1)"
                       " UPDATE cuzk_parts SET lease_expiry = now() + make_interval(secs => $2::int)"
                       " WHERE owner = $1 AND state = 'leased' AND lease_expiry >= now()"
                       " AND (job, idx, lease_gen) IN (SELECT * FROM unnest($3::bigint[],"
                       " $4::int[], $5::bigint[]))",
                       5, (const char *[]){ owner, lb, jobs, idxs, gens });
    free(jobs);
    free(idxs);
    free(gens);
    return fleet_sql_changed(f, r, "renewing leases", err, errlen);
}

/* The job's end, inside the caller's transaction (rolled back on failure): 'done' or
 * 'failed' once no partition is queued, leased, or done with its proof not yet at
 * its final name. A separate statement from the caller's update so that it sees it
 * (a CTE reads the statement's starting snapshot); the same transaction, so a
 * partition never ends while its job's last update is lost (the job would stay
 * 'running' with nothing left to end it). */
static int fleet_sql_job_end(struct fleet *f, const char *jb, char *err, size_t errlen)
{
    /* The job's row locked first: two finishes of its last two partitions would
     * otherwise each see the other's partition still open (READ COMMITTED: the other
     * update is not committed yet) and neither would end the job. Locked, the second
     * one's check below runs after the first committed, on a fresh snapshot. The
     * order (the partition's row, then the job's) is every writer's, as in cancel, so
     * this adds no deadlock. */
    PGresult *r =
        fleet_sql_exec(f, "SELECT 1 FROM cuzk_jobs WHERE id = $1 FOR UPDATE", 1, (const char *[]){ jb });
    int rc;

    if (!fleet_sql_ok(r)) return fleet_sql_tx_fail(f, r, "finishing the job", err, errlen);
    fleet_pq->clear(r);
    /* The doorbell rings in the same transaction: a LISTENer hears the end exactly
     * when it is committed, never before and never not at all. */
    r = fleet_sql_exec(f,
                       "WITH u AS (UPDATE cuzk_jobs SET state = CASE WHEN EXISTS (SELECT 1 FROM"
                       " cuzk_parts WHERE job = $1 AND state = 'failed') THEN 'failed'"
                       " ELSE 'done' END, finished = now() WHERE id = $1 AND"
                       " state = 'running' AND NOT EXISTS (SELECT 1 FROM cuzk_parts"
                       " WHERE job = $1 AND (state IN ('queued', 'leased') OR"
                       " (state = 'done' AND NOT published))) RETURNING id)"
                       " SELECT pg_notify('cuzk_job_end', id::text) FROM u",
                       1, (const char *[]){ jb });
    rc = fleet_sql_done(f, r, "finishing the job", err, errlen);
    return rc ? fleet_sql_rollback(f, rc) : 0;
}

/* The end of a transaction that moved a partition of job jb: the job's end (job_end)
 * when end, then COMMIT. n (the caller's answer), or the error (a failed job_end is
 * rolled back; a failed COMMIT ended the transaction). */
int fleet_sql_commit_part(struct fleet *f, const char *jb, int end, int n, const char *what, char *err,
                          size_t errlen)
{
    int rc;

    if ((end && (rc = fleet_sql_job_end(f, jb, err, errlen))) ||
        (rc = fleet_sql_run(f, "COMMIT", what, err, errlen)))
        return rc;
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
    struct fleet_part_key k;
    PGresult *r;
    int won, rc;

    fleet_part_key(&k, job, idx, gen);
    if ((rc = fleet_sql_run(f, "BEGIN", "finishing", err, errlen))) return rc;
    /* The one decision point: only the holder of (owner, gen) moves the row out of
     * 'leased', and only its proof is stored. The daemon's count changes in the same
     * statement. A job with no out dir has nothing to publish: its stored proof is
     * published; without one (a daemon's bug) the partition fails rather than stay
     * done with nothing anyone could publish. A circuit job's input goes with the
     * finish (input = NULL): its partition is published or failed by this statement
     * and never proved again, and the bytes would otherwise stay for good. */
    r = fleet_sql_exec(f,
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
    if (!fleet_sql_ok(r) || fleet_pq->ntuples(r) != 1)
        return fleet_sql_tx_fail(f, r, "finishing", err, errlen);
    won = atoi(fleet_pq->getvalue(r, 0, 0)) == 1;
    fleet_pq->clear(r);
    if (!won) {
        /* A retry whose first try committed but whose answer was lost (the database
         * went away between COMMIT and its reply): the row says owner finished it at
         * gen, which only that first try can have done (claims raise lease_gen).
         * Answering 0 here would leave a done partition that nobody publishes. */
        r = fleet_sql_exec(f,
                           "SELECT 1 FROM cuzk_parts WHERE job = $1 AND idx = $2"
                           " AND done_by = $3 AND lease_gen = $4 AND state IN ('done', 'failed')",
                           4, (const char *[]){ k.job, k.idx, owner, k.gen });
        if (!fleet_sql_ok(r)) return fleet_sql_tx_fail(f, r, "finishing", err, errlen);
        won = fleet_pq->ntuples(r) == 1 ? 2 : 0;
        fleet_pq->clear(r);
    }
    return fleet_sql_commit_part(f, k.job, won == 1, won, "finishing", err, errlen);
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
    return fleet_sql_part_update(f,
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
    r = fleet_sql_exec(f,
                       "UPDATE cuzk_parts SET state = 'queued', owner = NULL, lease_expiry = NULL"
                       " WHERE owner = $1 AND state = 'leased'",
                       1, (const char *[]){ owner });
    return fleet_sql_changed(f, r, "releasing a previous run's leases", err, errlen);
}

int fleet_done_dirs(struct fleet *f, const char *owner, char ***dirs, char *err, size_t errlen)
{
    PGresult *r;
    int n;

    *dirs = NULL;
    r = fleet_sql_exec(f,
                       "SELECT DISTINCT j.out_dir FROM cuzk_jobs j JOIN cuzk_parts p ON p.job = j.id"
                       " WHERE p.done_by = $1 AND p.state = 'done'",
                       1, (const char *[]){ owner });
    if (!fleet_sql_ok(r)) return fleet_sql_fail(f, r, "listing out dirs", err, errlen);
    n = fleet_pq->ntuples(r);
    if (n && !(*dirs = calloc((size_t)n, sizeof(**dirs)))) {
        fleet_pq->clear(r);
        snprintf(err, errlen, "fleet queue: out of memory");
        return -ENOMEM;
    }
    for (int i = 0; i < n; i++)
        if (!((*dirs)[i] = strdup(fleet_pq->getvalue(r, i, 0)))) {
            while (i--) free((*dirs)[i]);
            free(*dirs);
            *dirs = NULL;
            fleet_pq->clear(r);
            snprintf(err, errlen, "fleet queue: out of memory");
            return -ENOMEM;
        }
    fleet_pq->clear(r);
    return n;
}

int fleet_job_state(struct fleet *f, uint64_t job, uint32_t *done, uint32_t *failed, uint32_t *total,
                    char *err, size_t errlen)
{
    char jb[24];
    PGresult *r;

    snprintf(jb, sizeof(jb), "%llu", (unsigned long long)job);
    r = fleet_sql_exec(f,
                       "SELECT count(*) FILTER (WHERE state = 'done' AND published),"
                       " count(*) FILTER (WHERE state = 'failed'), count(*)"
                       " FROM cuzk_parts WHERE job = $1",
                       1, (const char *[]){ jb });
    if (!fleet_sql_ok(r) || fleet_pq->ntuples(r) != 1)
        return fleet_sql_fail(f, r, "reading the job", err, errlen);
    *done = (uint32_t)atoi(fleet_pq->getvalue(r, 0, 0));
    *failed = (uint32_t)atoi(fleet_pq->getvalue(r, 0, 1));
    *total = (uint32_t)atoi(fleet_pq->getvalue(r, 0, 2));
    fleet_pq->clear(r);
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
    r = fleet_sql_exec(f,
                       "SELECT idx, name, state, reason, proof_json IS NOT NULL FROM cuzk_parts"
                       " WHERE job = $1 ORDER BY idx",
                       1, (const char *[]){ jb });
    if (!fleet_sql_ok(r)) return fleet_sql_fail(f, r, "reading the job", err, errlen);
    if (!(n = fleet_pq->ntuples(r))) {
        fleet_pq->clear(r);
        snprintf(err, errlen, "fleet queue: no job %llu", (unsigned long long)job);
        return -ENOENT;
    }
    for (int i = 0; i < n && !rc; i++) {
        struct fleet_stored s = {
            .idx = (uint32_t)strtoul(fleet_pq->getvalue(r, i, 0), NULL, 10),
            .name = fleet_pq->getvalue(r, i, 1),
            .state = fleet_pq->getvalue(r, i, 2),
            .reason = fleet_pq->getisnull(r, i, 3) ? NULL : fleet_pq->getvalue(r, i, 3),
        };

        /* One partition's texts at a time (up to FLEET_PUBLIC_MAX each). */
        if (fleet_pq->getvalue(r, i, 4)[0] == 't') {
            snprintf(ib, sizeof(ib), "%u", s.idx);
            t = fleet_sql_exec(f,
                               "SELECT proof_json, public_json FROM cuzk_parts WHERE job = $1"
                               " AND idx = $2 AND proof_json IS NOT NULL",
                               2, (const char *[]){ jb, ib });
            if (!fleet_sql_ok(t)) {
                rc = fleet_sql_fail(f, t, "reading a stored proof", err, errlen);
                break;
            }
            if (fleet_pq->ntuples(t) == 1) {
                s.proof = fleet_pq->getvalue(t, 0, 0);
                s.pub = fleet_pq->getvalue(t, 0, 1);
            }
        }
        rc = cb(arg, &s);
        fleet_pq->clear(t);
        t = NULL;
    }
    fleet_pq->clear(r);
    return rc ? rc : n;
}

char *fleet_status_json(struct fleet *f, char *err, size_t errlen)
{
    PGresult *r;
    char *s;

    /* PostgreSQL builds the JSON: one round trip, and no quoting here. */
    r = fleet_pq->exec(f->conn,
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
    if (!fleet_sql_ok(r) || fleet_pq->ntuples(r) != 1) {
        fleet_sql_fail(f, r, "status", err, errlen);
        return NULL;
    }
    s = strdup(fleet_pq->getvalue(r, 0, 0));
    fleet_pq->clear(r);
    if (!s) snprintf(err, errlen, "fleet queue: out of memory");
    return s;
}

int fleet_listen(struct fleet *f, char *err, size_t errlen)
{
    return fleet_sql_run(f, "LISTEN cuzk_job_end", "listening for job ends", err, errlen);
}

int fleet_wait_notify(struct fleet *f, int timeout_ms, uint64_t *job, char *err, size_t errlen)
{
    const uint64_t t0 = os_now_ns();

    for (;;) {
        struct pollfd p = { .fd = fleet_pq->socket(f->conn), .events = POLLIN };
        PGnotify *nt;
        long left;

        /* What arrived already (during an earlier statement too) is read first. */
        if (p.fd < 0 || !fleet_pq->consume_input(f->conn))
            return fleet_sql_fail(f, NULL, "waiting for job ends", err, errlen);
        while ((nt = fleet_pq->notifies(f->conn))) {
            int mine = !strcmp(nt->relname, "cuzk_job_end");

            if (mine) *job = strtoull(nt->extra, NULL, 10);
            fleet_pq->freemem(nt);
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
