/* test_fleet_pg.c — the fleet queue (fleet_pg.h) against a real PostgreSQL cluster, which
 * tests/scripts/fleet_pg.sh starts and names in CUZK_TEST_PG_URL (without it: SKIP,
 * exit 77; there is never a mock database).
 *   test_fleet_pg                       lease semantics: disjoint claims, an expired
 *                                       lease taken over, a stale finish refused, a
 *                                       partition finished once; stored proofs;
 *                                       circuit jobs (inputs in the table, claims
 *                                       by circuit and fingerprint, idempotency,
 *                                       tenant scoping, cancel, the job-end bell);
 *                                       migrations from versions 1, 2 and 3
 *   test_fleet_pg worker OWNER CUZK     a claimer as cuzkd's fleet loop is: heartbeat,
 *                                       claim one partition, prove it with `CUZK
 *                                       prove-local` into OUT/.cuzk-OWNER/, finish,
 *                                       publish and mark (fleet_part_publish); when
 *                                       idle, adopts dead workers' unpublished proofs
 *                                       (fleet_adopt); retries with backoff while the
 *                                       database is away; exits once nothing is
 *                                       queued, leased or unpublished. Appends "JOB
 *                                       IDX OWNER" per publish to $FLEET_PUBLISH_LOG
 *                                       ("... adopted" for a dead worker's, "...
 *                                       marked" where the dead one had linked it).
 *                                       FLEET_TEST_CRASH_AFTER_FINISH=N: die with -9
 *                                       after the N-th finish, before its publish.
 * Not a Check program: it needs the cluster the script starts. */
#include "store/fleet_pg.h"

#include <errno.h>
#include <signal.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <libpq-fe.h>

#define LEASE_S 3

static int fails;
#define CHECK(c, ...)                                            \
    do {                                                         \
        if (!(c)) {                                              \
            fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__); \
            fprintf(stderr, __VA_ARGS__);                        \
            fputc('\n', stderr);                                 \
            fails++;                                             \
        }                                                        \
    } while (0)

/* Plain SQL beside the library: to read what it wrote and to build a version-1
 * database by hand. Returns the first value of the first row (static, "" when
 * none), NULL on an error (printed). */
static const char *sql(PGconn *c, const char *q)
{
    static char v[256];
    PGresult *r = PQexec(c, q);
    ExecStatusType st = PQresultStatus(r);

    if (st != PGRES_COMMAND_OK && st != PGRES_TUPLES_OK) {
        fprintf(stderr, "sql: %s: %s", q, PQresultErrorMessage(r));
        PQclear(r);
        return NULL;
    }
    snprintf(v, sizeof(v), "%s", PQntuples(r) && PQnfields(r) ? PQgetvalue(r, 0, 0) : "");
    PQclear(r);
    return v;
}

static int job_row_state(const char *url, uint64_t job, const char *want)
{
    PGconn *c = PQconnectdb(url);
    char q[128];
    const char *v;
    int same;

    snprintf(q, sizeof(q), "SELECT state FROM cuzk_jobs WHERE id = %llu", (unsigned long long)job);
    v = PQstatus(c) == CONNECTION_OK ? sql(c, q) : NULL;
    same = v && !strcmp(v, want);
    if (!same)
        fprintf(stderr, "job %llu row state %s (want %s)\n", (unsigned long long)job, v ? v : "?", want);
    PQfinish(c);
    return same;
}

static int put(const char *dir, const char *name, const char *text)
{
    char p[1200];
    FILE *o;

    snprintf(p, sizeof(p), "%s/%s", dir, name);
    if (!(o = fopen(p, "w"))) return -1;
    fputs(text, o);
    return fclose(o);
}

static int exists(const char *dir, const char *name)
{
    char p[1200];

    snprintf(p, sizeof(p), "%s/%s", dir, name);
    return !access(p, F_OK);
}

struct seen {
    int n, outcome[8], linked[8];
    uint32_t idx[8];
};

static void saw(void *arg, const struct fleet_adopted *a)
{
    struct seen *s = arg;

    if (s->n < 8) {
        s->idx[s->n] = a->idx;
        s->outcome[s->n] = a->outcome;
        s->linked[s->n++] = a->linked;
    }
    if (a->outcome < 0) fprintf(stderr, "adopt: %s\n", a->why);
}

/* Adoption (fleet_pg.h "Publishing"): a daemon that died between its finishes and
 * its publishes, never back. p0: both files spooled (published by the adopter), p1:
 * nothing spooled, no final (queued again, proved again), p2: the finals there already
 * (the dead one linked them, its mark was cut off: only marked). */
static void adoption(const char *url, struct fleet *f)
{
    char dir[] = "/tmp/cuzk-fleet-adopt-XXXXXX", spool[600], err[512];
    const char *w[3] = { "/w0", "/w1", "/w2" }, *nm[3] = { "p0", "p1", "p2" };
    struct fleet_claim d[3], l[1];
    struct seen sn = { 0 };
    uint32_t done, failed, total;
    uint64_t job;
    int rc, linked;

    if (!mkdtemp(dir)) {
        CHECK(0, "mkdtemp: %s", strerror(errno));
        return;
    }
    snprintf(spool, sizeof(spool), "%s/.cuzk-sem-dead", dir);
    CHECK(!mkdir(spool, 0700), "mkdir %s", spool);
    CHECK(!fleet_job_add(f, "/z.zkey", dir, 0, 3, w, nm, &job, err, sizeof(err)), "add: %s", err);
    CHECK(!fleet_daemon_hello(f, "sem-dead", "here", 1, err, sizeof(err)), "hello: %s", err);
    CHECK(!fleet_daemon_hello(f, "sem-live", "here", 30, err, sizeof(err)), "hello: %s", err);
    CHECK(fleet_claim(f, "sem-dead", 1, d, 3, err, sizeof(err)) == 3, "claim: %s", err);
    for (int i = 0; i < 3; i++)
        CHECK(fleet_finish(f, "sem-dead", d[i].job, d[i].idx, d[i].gen, NULL, err, sizeof(err)) == 1,
              "finish: %s", err);
    CHECK(!put(spool, "p0.public.json", "public p0\n") && !put(spool, "p0.proof.json", "proof p0\n") &&
              !put(dir, "p2.public.json", "public p2\n") && !put(dir, "p2.proof.json", "proof p2\n"),
          "writing the spooled files");
    /* Alive (heartbeat under 3 leases old): not adopted; nor one's own without mine. */
    CHECK((rc = fleet_adopt(f, "sem-live", 0, saw, &sn, err, sizeof(err))) == 0,
          "adopted %d of a live daemon's partitions: %s", rc, err);
    CHECK((rc = fleet_adopt(f, "sem-dead", 0, saw, &sn, err, sizeof(err))) == 0,
          "adopted %d of its own partitions without mine: %s", rc, err);
    CHECK(fleet_job_state(f, job, &done, &failed, &total, err, sizeof(err)) == 0 && done == 0,
          "state %u done before adoption", done);
    sleep(4); /* > 3 x sem-dead's 1 s lease, and no heartbeat */
    CHECK((rc = fleet_adopt(f, "sem-live", 0, saw, &sn, err, sizeof(err))) == 3, "adopted %d (want 3): %s",
          rc, err);
    for (int i = 0; i < sn.n; i++) {
        int want = sn.idx[i] == 1 ? FLEET_PUB_REQUEUED : FLEET_PUB_MARKED;
        int wl = sn.idx[i] == 0 ? 2 : 0;

        CHECK(sn.outcome[i] == want && sn.linked[i] == wl,
              "p%u: outcome %d linked %d "
              "(want %d %d)",
              sn.idx[i], sn.outcome[i], sn.linked[i], want, wl);
    }
    CHECK(exists(dir, "p0.public.json") && exists(dir, "p0.proof.json") && !exists(spool, "p0.proof.json") &&
              !exists(spool, "p0.public.json"),
          "p0 not published from the spool dir");
    CHECK(fleet_job_state(f, job, &done, &failed, &total, err, sizeof(err)) == 0 && done == 2 && total == 3,
          "state %u/%u after adoption (want 2/3)", done, total);
    /* Nothing left to adopt; the dead one's late mark of the requeued p1 matches nothing. */
    CHECK((rc = fleet_adopt(f, "sem-live", 0, saw, &sn, err, sizeof(err))) == 0, "adopted %d again", rc);
    CHECK((rc = fleet_published(f, d[1].job, d[1].idx, d[1].gen, err, sizeof(err))) == 0,
          "a requeued partition's late mark answered %d", rc);
    /* p1 proved again by sem-live, published with the same call cuzkd uses. */
    CHECK(fleet_claim(f, "sem-live", 30, l, 1, err, sizeof(err)) == 1 && l[0].idx == 1 &&
              l[0].gen == d[1].gen + 1,
          "requeued p1 not claimable: %s", err);
    CHECK(fleet_finish(f, "sem-live", l[0].job, l[0].idx, l[0].gen, NULL, err, sizeof(err)) == 1,
          "finish: %s", err);
    snprintf(spool, sizeof(spool), "%s/.cuzk-sem-live", dir);
    CHECK(!mkdir(spool, 0700) && !put(spool, "p1.public.json", "public p1\n") &&
              !put(spool, "p1.proof.json", "proof p1\n"),
          "spooling p1");
    CHECK((rc = fleet_part_publish(f, dir, "p1", "sem-live", l[0].job, l[0].idx, l[0].gen, &linked, err,
                                   sizeof(err))) == FLEET_PUB_MARKED &&
              linked == 2,
          "publish answered %d linked %d: %s", rc, linked, err);
    /* A retry (its answer lost) finds the finals: it marks again, links nothing. */
    CHECK((rc = fleet_part_publish(f, dir, "p1", "sem-live", l[0].job, l[0].idx, l[0].gen, &linked, err,
                                   sizeof(err))) == FLEET_PUB_GONE &&
              linked == 0,
          "retried publish answered %d linked %d", rc, linked);
    CHECK(fleet_job_state(f, job, &done, &failed, &total, err, sizeof(err)) == 1 && done == 3,
          "state %u/%u at the end (want done 3/3)", done, total);
    CHECK(job_row_state(url, job, "done"), "job row not done");
    /* A dead daemon's proof in an out dir not mounted here: skipped, nothing changed. */
    {
        const char *w1[1] = { "/w" }, *n1[1] = { "q" };
        uint64_t j2;

        CHECK(!fleet_job_add(f, "/z.zkey", "/nonexistent/out", 0, 1, w1, n1, &j2, err, sizeof(err)),
              "add: %s", err);
        CHECK(!fleet_daemon_hello(f, "sem-dead2", "here", 1, err, sizeof(err)), "hello");
        CHECK(fleet_claim(f, "sem-dead2", 1, d, 1, err, sizeof(err)) == 1 &&
                  fleet_finish(f, "sem-dead2", d[0].job, d[0].idx, d[0].gen, NULL, err, sizeof(err)) == 1,
              "finish: %s", err);
        sleep(4);
        sn.n = 0;
        CHECK((rc = fleet_adopt(f, "sem-live", 0, saw, &sn, err, sizeof(err))) == 1 &&
                  sn.outcome[0] == -ENOTDIR,
              "adopt of an unmounted out dir: %d %d", rc, sn.outcome[0]);
        CHECK(fleet_job_state(f, j2, &done, &failed, &total, err, sizeof(err)) == 0,
              "unmounted out dir: job ended");
        /* Its own start (mine) does not reach it either; leave it published for
         * the status checks below: as an operator would, once the dir is back. */
        CHECK(fleet_published(f, d[0].job, d[0].idx, d[0].gen, err, sizeof(err)) == 1, "mark: %s", err);
    }
    printf("ok: adoption: a dead daemon's spooled proof published, a lost one requeued, "
           "a linked one marked, a live daemon's left alone\n");
}

/* The tables as cuzk 1 created them (schema version 1), with one job: a done, a
 * failed and a queued partition. */
static const char v1_sql[] =
    "CREATE TABLE cuzk_meta(key text PRIMARY KEY, value text NOT NULL);"
    "CREATE TABLE cuzk_jobs(id bigserial PRIMARY KEY, zkey text NOT NULL,"
    " out_dir text NOT NULL, n_parts int NOT NULL, state text NOT NULL DEFAULT"
    " 'running', submitted timestamptz NOT NULL DEFAULT now(), finished timestamptz);"
    "CREATE TABLE cuzk_parts(job bigint NOT NULL REFERENCES cuzk_jobs(id)"
    " ON DELETE CASCADE, idx int NOT NULL, wtns text NOT NULL, name text NOT NULL,"
    " state text NOT NULL DEFAULT 'queued', owner text, lease_gen bigint NOT NULL"
    " DEFAULT 0, lease_expiry timestamptz, attempts int NOT NULL DEFAULT 0,"
    " done_by text, reason text, finished timestamptz, PRIMARY KEY(job, idx));"
    "CREATE INDEX cuzk_parts_open ON cuzk_parts(job, idx)"
    " WHERE state IN ('queued', 'leased');"
    "CREATE TABLE cuzk_daemons(id text PRIMARY KEY, host text, heartbeat timestamptz"
    " NOT NULL DEFAULT now(), started timestamptz NOT NULL DEFAULT now(),"
    " done bigint NOT NULL DEFAULT 0);"
    "INSERT INTO cuzk_meta VALUES ('schema_version', '1');"
    "INSERT INTO cuzk_jobs(zkey, out_dir, n_parts) VALUES ('/z', '/out', 3);"
    "INSERT INTO cuzk_parts(job, idx, wtns, name, state, done_by, lease_gen, reason)"
    " VALUES (1, 0, '/a', 'a', 'done', 'old', 1, NULL),"
    " (1, 1, '/b', 'b', 'failed', 'old', 1, 'bad'), (1, 2, '/c', 'c', 'queued',"
    " NULL, 0, NULL);"
    "INSERT INTO cuzk_daemons(id, host, done) VALUES ('old', 'h', 2)";

/* What cuzk 2 added to it (schema version 2), its rows as a version-2 cuzk leaves
 * them: the done partition finished but not yet published (its mark pending). */
static const char v2_sql[] = "ALTER TABLE cuzk_parts ADD COLUMN published boolean NOT NULL DEFAULT false;"
                             "ALTER TABLE cuzk_daemons ADD COLUMN lease_s int;"
                             "UPDATE cuzk_parts SET published = true WHERE state = 'failed';"
                             "UPDATE cuzk_daemons SET lease_s = 30;"
                             "CREATE INDEX cuzk_parts_unpublished ON cuzk_parts(done_by)"
                             " WHERE state = 'done' AND NOT published;"
                             "UPDATE cuzk_meta SET value = '2' WHERE key = 'schema_version'";

/* A fresh database name, made from c's connection, filled by hand with the given
 * statements; conn: its connection string. The connection to it, or NULL. */
static PGconn *old_db(PGconn *c, const char *name, const char *const *stmts, int n, char *conn, size_t len)
{
    char q[128];
    PGconn *o;

    snprintf(q, sizeof(q), "DROP DATABASE IF EXISTS %s", name);
    sql(c, q);
    snprintf(q, sizeof(q), "CREATE DATABASE %s", name);
    CHECK(sql(c, q), "create database");
    snprintf(conn, len, "host=%s port=%s user=%s dbname=%s", PQhost(c), PQport(c), PQuser(c), name);
    o = PQconnectdb(conn);
    CHECK(PQstatus(o) == CONNECTION_OK, "connect %s: %s", name, PQerrorMessage(o));
    for (int i = 0; i < n; i++) CHECK(sql(o, stmts[i]), "building the old tables of %s", name);
    return o;
}

/* Each check of one old database after this cuzk opened it: a query and its answer. */
static void expect(PGconn *o, const char *what, const char *q, const char *want)
{
    const char *v = sql(o, q);

    CHECK(v && !strcmp(v, want), "%s: %s (want %s)", what, v ? v : "?", want);
}

/* An old database opened by this cuzk: migrated to this version, its partitions
 * (IDX:STATE:PUBLISHED:PROOF_NULL PUBLIC_NULL, ...) as parts says. The handle (NULL
 * after a failure, reported). */
static struct fleet *open_old(PGconn *o, const char *conn, const char *parts)
{
    struct fleet *f = NULL;
    char err[512];

    CHECK(!fleet_open(&f, conn, err, sizeof(err)), "open of %s: %s", conn, err);
    char want[16];

    snprintf(want, sizeof(want), "%d", FLEET_SCHEMA_VERSION);
    expect(o, "schema version after the migration",
           "SELECT value FROM cuzk_meta WHERE key = 'schema_version'", want);
    expect(o, "parts after the migration",
           "SELECT string_agg(idx || ':' || state || ':' || published || ':' ||"
           " (proof_json IS NULL) || (public_json IS NULL), ',' ORDER BY idx) FROM cuzk_parts",
           parts);
    return f;
}

/* Opened again: no second migration; a version newer than this cuzk's refused, with
 * nothing changed. */
static void reopen_and_refuse(PGconn *o, const char *conn)
{
    struct fleet *f = NULL;
    char err[512], q[128];
    int rc;

    CHECK(!fleet_open(&f, conn, err, sizeof(err)), "second open: %s", err);
    fleet_close(f);
    f = NULL;
    snprintf(q, sizeof(q), "UPDATE cuzk_meta SET value = '%d' WHERE key = 'schema_version'",
             FLEET_SCHEMA_VERSION + 1);
    sql(o, q);
    CHECK((rc = fleet_open(&f, conn, err, sizeof(err))) == -EPROTO && !f, "a newer schema answered %d: %s",
          rc, err);
}

/* A version-1 database (tables created by hand, as cuzk 1 created them) opened by
 * this cuzk: rows kept, old done and failed rows published, migrated through 2 to 3;
 * a newer version refused. */
static void migration_v1(PGconn *c)
{
    const char *stmts[1] = { v1_sql };
    char conn[1024], err[512];
    struct fleet *f = NULL;
    uint32_t done, failed, total;
    PGconn *v1 = old_db(c, "cuzk_v1", stmts, 1, conn, sizeof(conn));

    f = open_old(v1, conn, "0:done:true:truetrue,1:failed:true:truetrue,2:queued:false:truetrue");
    expect(v1, "daemons after",
           "SELECT count(*) || ':' || count(lease_s) || ':' || sum(done) FROM cuzk_daemons", "1:0:2");
    expect(v1, "the partial index",
           "SELECT count(*) FROM pg_indexes WHERE indexname = 'cuzk_parts_unpublished'", "1");
    if (f) {
        CHECK(fleet_job_state(f, 1, &done, &failed, &total, err, sizeof(err)) == 0 && done == 1 &&
                  failed == 1 && total == 3,
              "migrated job %u/%u/%u", done, failed, total);
        CHECK(!fleet_daemon_hello(f, "new", "h", 7, err, sizeof(err)), "hello: %s", err);
        fleet_close(f);
    }
    reopen_and_refuse(v1, conn);
    expect(v1, "daemons",
           "SELECT string_agg(id || ':' || coalesce(lease_s, 0), ',' ORDER BY id)"
           " FROM cuzk_daemons",
           "new:7,old:0");
    PQfinish(v1);
    sql(c, "DROP DATABASE IF EXISTS cuzk_v1");
    printf("ok: migration 1 -> %d: a version-1 database kept its rows, old done rows "
           "published; version %d refused\n",
           FLEET_SCHEMA_VERSION, FLEET_SCHEMA_VERSION + 1);
}

/* A version-2 database (cuzk 2's tables, by hand) opened by this cuzk: its rows as
 * they were (the unpublished done row stays unpublished: its proof is still to be
 * published from its spool dir), the stored-proof columns added empty, version 3;
 * a job stored only is then submitted, claimed by a storing daemon and finished with
 * its proof; a newer version refused. */
static void migration_v2(PGconn *c)
{
    const char *stmts[2] = { v1_sql, v2_sql }, *w[1] = { "/w" }, *nm[1] = { "w" };
    char conn[1024], err[512];
    struct fleet *f = NULL;
    struct fleet_claim cl[2];
    uint64_t job = 0;
    PGconn *v2 = old_db(c, "cuzk_v2", stmts, 2, conn, sizeof(conn));

    f = open_old(v2, conn, "0:done:false:truetrue,1:failed:true:truetrue,2:queued:false:truetrue");
    expect(v2, "jobs after", "SELECT string_agg(id || ':' || store_proofs, ',') FROM cuzk_jobs", "1:false");
    expect(v2, "daemons after",
           "SELECT string_agg(id || ':' || lease_s || ':' || coalesce(store_proofs::text, '-'),"
           " ',') FROM cuzk_daemons",
           "old:30:-");
    if (f) {
        fleet_set_stores(f, 1);
        CHECK(!fleet_job_add(f, "/z", NULL, 1, 1, w, nm, &job, err, sizeof(err)), "add: %s", err);
        CHECK(fleet_claim(f, "new", 30, cl, 2, err, sizeof(err)) == 2 && cl[1].job == job &&
                  cl[1].store_proofs && !cl[1].out_dir[0],
              "claims on the migrated database: %s", err);
        CHECK(fleet_finish_stored(f, "new", job, 0, cl[1].gen, "{\"pi_a\": []}", "[\"1\"]", err,
                                  sizeof(err)) == 1,
              "stored finish on the migrated database: %s", err);
        fleet_close(f);
    }
    expect(v2, "the stored partition",
           "SELECT state || ':' || published || ':' || proof_json || ':' || public_json"
           " FROM cuzk_parts WHERE job = 2",
           "done:true:{\"pi_a\": []}:[\"1\"]");
    reopen_and_refuse(v2, conn);
    PQfinish(v2);
    sql(c, "DROP DATABASE IF EXISTS cuzk_v2");
    printf("ok: migration 2 -> %d: a version-2 database kept its rows (its unpublished "
           "one too), stored-proof columns added, a stored job proved on it; version %d "
           "refused\n",
           FLEET_SCHEMA_VERSION, FLEET_SCHEMA_VERSION + 1);
}

/* What cuzk 3 added (schema version 3): the stored-proof columns, with one job stored
 * only and its partition done with its proof. */
static const char v3_sql[] = "ALTER TABLE cuzk_jobs ADD COLUMN store_proofs boolean NOT NULL DEFAULT false;"
                             "ALTER TABLE cuzk_parts ADD COLUMN proof_json text, ADD COLUMN public_json text;"
                             "ALTER TABLE cuzk_daemons ADD COLUMN store_proofs boolean;"
                             "INSERT INTO cuzk_jobs(zkey, out_dir, n_parts, store_proofs, state)"
                             " VALUES ('/z', '', 1, true, 'done');"
                             "INSERT INTO cuzk_parts(job, idx, wtns, name, state, done_by, lease_gen,"
                             " published, proof_json, public_json) VALUES (2, 5, '/s', 's', 'done',"
                             " 'old', 1, true, '{}', '[]');"
                             "UPDATE cuzk_meta SET value = '3' WHERE key = 'schema_version'";

/* A version-3 database opened by this cuzk: its rows as they were (path jobs: no
 * circuit, no input), the circuit-job columns and the idempotency index added; a
 * circuit job submitted, claimed and stored on it. */
static void migration_v3(PGconn *c)
{
    const char *stmts[3] = { v1_sql, v2_sql, v3_sql }, *names[1] = { "m" }, *fps[1] = { "f0" };
    struct fleet_input in = { "{}", 2, 0 };
    struct fleet_circuit_job cj = {
        .circuit = "m", .fingerprint = "f0", .idem_key = "k", .body_sha256 = "h"
    };
    char conn[1024], err[512];
    struct fleet *f = NULL;
    struct fleet_claim cl[4];
    uint64_t job = 0;
    int rc;
    PGconn *v3 = old_db(c, "cuzk_v3", stmts, 3, conn, sizeof(conn));

    f = open_old(
        v3, conn,
        "0:done:false:truetrue,1:failed:true:truetrue,2:queued:false:truetrue,5:done:true:falsefalse");
    expect(v3, "jobs after",
           "SELECT string_agg(id || ':' || state || ':' || store_proofs || ':' || (circuit IS NULL) || ':'"
           " || (tenant IS NULL) || ':' || cancelled, ',' ORDER BY id) FROM cuzk_jobs",
           "1:running:false:true:true:false,2:done:true:true:true:false");
    expect(v3, "the stored row",
           "SELECT proof_json || public_json || (input IS NULL) FROM cuzk_parts WHERE job = 2", "{}[]true");
    expect(v3, "the idempotency index", "SELECT count(*) FROM pg_indexes WHERE indexname = 'cuzk_jobs_idem'",
           "1");
    if (f) {
        fleet_set_stores(f, 1);
        CHECK(!fleet_set_circuits(f, 1, names, fps), "set circuits");
        CHECK((rc = fleet_job_add_inputs(f, &cj, 1, &in, &job, err, sizeof(err))) == 1, "add %d: %s", rc,
              err);
        CHECK((rc = fleet_claim(f, "new", 30, cl, 4, err, sizeof(err))) == 2 && cl[1].job == job &&
                  !strcmp(cl[1].circuit, "m") && cl[1].input_kind == FLEET_INPUT_JSON &&
                  cl[0].input_kind == FLEET_INPUT_PATH && !cl[0].circuit[0],
              "claims on the migrated database: %d %s", rc, err);
        CHECK(fleet_finish_stored(f, "new", job, 0, cl[1].gen, "{}", "[]", err, sizeof(err)) == 1,
              "stored finish on the migrated database: %s", err);
        fleet_close(f);
    }
    expect(v3, "the circuit job",
           "SELECT state || ':' || circuit || ':' || fingerprint FROM cuzk_jobs WHERE id = 3", "done:m:f0");
    reopen_and_refuse(v3, conn);
    PQfinish(v3);
    sql(c, "DROP DATABASE IF EXISTS cuzk_v3");
    printf("ok: migration 3 -> %d: a version-3 database kept its rows, circuit-job columns and "
           "the idempotency index added, a circuit job proved on it; version %d refused\n",
           FLEET_SCHEMA_VERSION, FLEET_SCHEMA_VERSION + 1);
}

static void migration(const char *url)
{
    PGconn *c = PQconnectdb(url);

    CHECK(PQstatus(c) == CONNECTION_OK, "connect: %s", PQerrorMessage(c));
    sql(c, "SET client_min_messages = warning");
    migration_v1(c);
    migration_v2(c);
    migration_v3(c);
    PQfinish(c);
}

/* Stored proofs (fleet_pg.h "Stored proofs"): a job with no out dir is claimed only
 * by a daemon that stores; a stale owner's proof is never stored (the finish's lease
 * check), the winner's is, once, and publishes the partition; bad JSON and texts over
 * the caps are refused before any write; fleet_fetch reads them back. */
static const char *stored_row(const char *url, uint64_t job, uint32_t idx)
{
    PGconn *c = PQconnectdb(url);
    char q[256];
    const char *v;

    snprintf(q, sizeof(q),
             "SELECT state || ':' || published || ':' || coalesce(done_by, '-') || ':' ||"
             " coalesce(proof_json, '-') || ':' || coalesce(public_json, '-') || ':' ||"
             " coalesce(reason, '-') FROM cuzk_parts WHERE job = %llu AND idx = %u",
             (unsigned long long)job, idx);
    v = PQstatus(c) == CONNECTION_OK ? sql(c, q) : NULL;
    PQfinish(c);
    return v ? v : "?";
}

struct fetched {
    int n;
    char got[4][128];
};

static int fetched(void *arg, const struct fleet_stored *s)
{
    struct fetched *x = arg;

    if (x->n < 4)
        snprintf(x->got[x->n++], sizeof(x->got[0]), "%u:%s:%s:%s:%s", s->idx, s->name, s->state,
                 s->proof ? s->proof : "-", s->pub ? s->pub : "-");
    return 0;
}

static void stored(const char *url, struct fleet *f)
{
    const char *w[2] = { "/w0", "/w1" }, *nm[2] = { "s0", "s1" };
    struct fleet_claim a[2], b[2], c[2];
    struct fetched x = { 0 };
    uint32_t done, failed, total;
    char err[512], *big;
    uint64_t job;
    int rc;

    CHECK(fleet_job_add(f, "/z.zkey", "", 0, 2, w, nm, &job, err, sizeof(err)) == -EINVAL,
          "a job with no out dir and no stored proofs accepted");
    CHECK(!fleet_job_add(f, "/z.zkey", NULL, 1, 2, w, nm, &job, err, sizeof(err)), "add: %s", err);
    /* f does not store: it never claims the job. */
    CHECK((rc = fleet_claim(f, "st-no", 30, a, 2, err, sizeof(err))) == 0,
          "a daemon that does not store claimed %d stored-only partitions", rc);
    fleet_set_stores(f, 1);
    CHECK(!fleet_daemon_hello(f, "st-b", "here", 30, err, sizeof(err)), "hello: %s", err);
    CHECK(fleet_claim(f, "st-a", 1, a, 2, err, sizeof(err)) == 2 && a[0].store_proofs && !a[0].out_dir[0],
          "claim: %s", err);
    /* Refused before any write: the row stays st-a's lease. */
    big = malloc(FLEET_PROOF_MAX + 16);
    if (big) {
        memset(big, ' ', FLEET_PROOF_MAX + 8);
        memcpy(big, "{}", 2);
        big[FLEET_PROOF_MAX + 8] = '\0';
        CHECK(fleet_finish_stored(f, "st-a", job, 0, a[0].gen, big, "[]", err, sizeof(err)) == -EINVAL &&
                  strstr(err, "over the"),
              "a proof over the cap: %s", err);
        free(big);
    }
    CHECK(fleet_finish_stored(f, "st-a", job, 0, a[0].gen, "{\"pi_a\": [", "[]", err, sizeof(err)) ==
                  -EINVAL &&
              strstr(err, "not JSON"),
          "a cut proof: %s", err);
    CHECK(fleet_finish_stored(f, "st-a", job, 0, a[0].gen, "{}", "{}", err, sizeof(err)) == -EINVAL &&
              strstr(err, "array"),
          "public signals not an array: %s", err);
    CHECK(!strncmp(stored_row(url, job, 0), "leased:false:-:-:-:", 19),
          "a refused stored finish changed the row: %s", stored_row(url, job, 0));
    /* st-a's leases expire, st-b takes them over; st-a's late proofs are not stored. */
    sleep(2);
    CHECK(fleet_claim(f, "st-b", 30, b, 2, err, sizeof(err)) == 2, "take over: %s", err);
    for (int i = 0; i < 2; i++)
        CHECK(fleet_finish_stored(f, "st-a", job, a[i].idx, a[i].gen, "{\"who\": \"a\"}", "[\"a\"]", err,
                                  sizeof(err)) == 0,
              "a stale owner's stored finish accepted");
    CHECK(!strncmp(stored_row(url, job, 0), "leased:false:-:-:-:", 19), "a stale owner's proof written: %s",
          stored_row(url, job, 0));
    CHECK(fleet_finish_stored(f, "st-b", job, 0, b[0].gen, "{\"who\": \"b\"}", "[\"b\"]", err, sizeof(err)) ==
              1,
          "finish: %s", err);
    /* A retry (its answer lost): "yours already", nothing written again. */
    CHECK(fleet_finish_stored(f, "st-b", job, 0, b[0].gen, "{\"who\": \"b2\"}", "[\"b2\"]", err,
                              sizeof(err)) == 2,
          "retried stored finish");
    /* st-a again, after the finish: still refused, still st-b's proof. */
    CHECK(fleet_finish_stored(f, "st-a", job, 0, a[0].gen, "{\"who\": \"a\"}", "[\"a\"]", err, sizeof(err)) ==
              0,
          "a stale owner's stored finish after the winner's accepted");
    CHECK(!strcmp(stored_row(url, job, 0), "done:true:st-b:{\"who\": \"b\"}:[\"b\"]:-"), "the stored row: %s",
          stored_row(url, job, 0));
    /* Published at its finish: counted by `cuzk wait`, nothing for adoption. */
    CHECK(fleet_job_state(f, job, &done, &failed, &total, err, sizeof(err)) == 0 && done == 1,
          "stored-only state %u done", done);
    /* A finish of such a partition without a proof fails it, never leaves it done with
     * nothing anyone could publish. */
    CHECK(fleet_finish(f, "st-b", job, 1, b[1].gen, NULL, err, sizeof(err)) == 1, "finish: %s", err);
    CHECK(!strcmp(stored_row(url, job, 1), "failed:true:st-b:-:-:no out dir and no stored proof"),
          "the proofless row: %s", stored_row(url, job, 1));
    CHECK(fleet_job_state(f, job, &done, &failed, &total, err, sizeof(err)) == 2, "job state");
    CHECK(fleet_fetch(f, job, fetched, &x, err, sizeof(err)) == 2 && x.n == 2 &&
              !strcmp(x.got[0], "0:s0:done:{\"who\": \"b\"}:[\"b\"]") && !strcmp(x.got[1], "1:s1:failed:-:-"),
          "fetch: %s | %s", x.got[0], x.got[1]);
    CHECK(fleet_fetch(f, job + 1000, fetched, &x, err, sizeof(err)) == -ENOENT, "fetch of no job");
    /* A storing daemon stores the proofs of jobs with an out dir too: the finish stores
     * them, the publish of the files marks it as before. */
    CHECK(!fleet_job_add(f, "/z.zkey", "/out", 0, 1, w, nm, &job, err, sizeof(err)), "add: %s", err);
    CHECK(fleet_claim(f, "st-b", 30, c, 2, err, sizeof(err)) == 1 && !c[0].store_proofs &&
              !strcmp(c[0].out_dir, "/out"),
          "claim: %s", err);
    CHECK(fleet_finish_stored(f, "st-b", job, 0, c[0].gen, "{}", "[]", err, sizeof(err)) == 1, "finish: %s",
          err);
    CHECK(!strcmp(stored_row(url, job, 0), "done:false:st-b:{}:[]:-"), "stored with an out dir: %s",
          stored_row(url, job, 0));
    CHECK(fleet_published(f, job, 0, c[0].gen, err, sizeof(err)) == 1, "mark: %s", err);
    /* Throughput in status: st-b's 2 done partitions, finished just now (a failed one
     * is not throughput); st-a none, and it stores. */
    {
        char *st = fleet_status_json(f, err, sizeof(err));
        const char *rb = st ? strstr(st, "\"st-b\"") : NULL;

        CHECK(rb && strstr(rb, "\"done_1m\" : 2,") && strstr(rb, "\"store_proofs\" : true"), "status: %s",
              st ? st : err);
        free(st);
    }
    fleet_set_stores(f, 0);
    printf("ok: stored proofs: claimed only by a storing daemon, a stale owner's never "
           "stored, the winner's once, bad JSON and oversize refused unwritten, fetched "
           "back\n");
}

/* A job-end notification for job on l within a few seconds (others skipped). */
static int rang(struct fleet *l, uint64_t job)
{
    char err[512];
    uint64_t got = 0;

    for (int i = 0; i < 20; i++) {
        int rc = fleet_wait_notify(l, 5000, &got, err, sizeof(err));

        if (rc < 0) fprintf(stderr, "wait_notify: %s\n", err);
        if (rc <= 0) return 0;
        if (got == job) return 1;
    }
    return 0;
}

/* The bytes of fd from its start (up to cap), their count. */
static ssize_t slurp(int fd, unsigned char *buf, size_t cap)
{
    ssize_t n, o = 0;

    while ((size_t)o < cap && (n = pread(fd, buf + o, cap - (size_t)o, o)) > 0) o += n;
    return o;
}

/* One key inserted by 6 processes at once (each its own connection): one creates the
 * job, the others get that job (0), none an error or a second job (the unique index
 * decides, ON CONFLICT waits for the winner's commit). */
static void idem_race(const char *url)
{
    struct fleet_input in = { "{\"a\": \"1\"}", 10, 0 };
    struct fleet_circuit_job cj = {
        .circuit = "race", .fingerprint = "ff", .tenant = "tr", .idem_key = "same", .body_sha256 = "h"
    };
    int fds[6][2], created = 0, same = 0;
    uint64_t ids[6] = { 0 };
    pid_t pid[6];

    for (int i = 0; i < 6; i++) {
        if (pipe(fds[i])) return;
        if (!(pid[i] = fork())) {
            struct fleet *g;
            char err[512], line[64];
            uint64_t job = 0;
            int rc = fleet_open(&g, url, err, sizeof(err));

            if (!rc) rc = fleet_job_add_inputs(g, &cj, 1, &in, &job, err, sizeof(err));
            if (rc < 0) fprintf(stderr, "race: %s\n", err);
            snprintf(line, sizeof(line), "%d %llu\n", rc, (unsigned long long)job);
            if (write(fds[i][1], line, strlen(line)) < 0) _exit(2);
            _exit(0);
        }
        close(fds[i][1]);
    }
    for (int i = 0; i < 6; i++) {
        char line[64] = "";
        int rc = -999;
        unsigned long long job = 0;

        if (read(fds[i][0], line, sizeof(line) - 1) > 0 && sscanf(line, "%d %llu", &rc, &job) == 2) {
            ids[i] = job;
            created += rc == 1;
            same += rc == 0;
        }
        close(fds[i][0]);
        waitpid(pid[i], NULL, 0);
        CHECK(rc == 0 || rc == 1, "a concurrent insert of one key answered %d", rc);
        CHECK(ids[i] == ids[0] && ids[i], "concurrent inserts of one key: jobs %llu and %llu",
              (unsigned long long)ids[0], (unsigned long long)ids[i]);
    }
    CHECK(created == 1 && same == 5, "concurrent inserts of one key: %d created, %d the same", created, same);
    {
        struct fleet *f;
        char err[512];

        if (!fleet_open(&f, url, err, sizeof(err))) {
            CHECK(fleet_job_cancel(f, ids[0], "tr", err, sizeof(err)) == 1, "cancel the race's job: %s", err);
            fleet_close(f);
        }
    }
    printf("ok: one idempotency key inserted by 6 processes at once: 1 job, the others got it\n");
}

/* Circuit jobs (fleet_pg.h "Circuit jobs"): inputs in the table, binary and byte for
 * byte; idempotency per tenant; claimed only by a storing daemon that has the circuit
 * with the same fingerprint; the API's views scoped by tenant; cancel of queued and
 * leased partitions (the leased owner's finish then answers 0); the doorbell rings
 * at each end. */
static void circuits(const char *url, struct fleet *f)
{
    const char *nm1[2] = { "x", "mul" }, *fp1[2] = { "1", "aa" }, *fpb[1] = { "bb" }, *oth[1] = { "other" },
               *fpa[1] = { "aa" };
    unsigned char wt[300], back[400];
    struct fleet_input in[2] = { { "{\"a\": \"3\"}", 10, 0 }, { wt, sizeof(wt), 1 } }, empty = { "", 0, 0 };
    struct fleet_circuit_job cj = {
        .circuit = "mul", .fingerprint = "aa", .tenant = "t1", .idem_key = "k1", .body_sha256 = "s1"
    };
    struct fleet_claim cl[4], c2[4];
    struct fleet *l = NULL;
    char err[512], tmpl[] = "/tmp/cuzk-fleet-in-XXXXXX", *js = NULL, *pr = NULL, *pb = NULL;
    uint64_t job = 0, job2 = 0, other = 0, got;
    uint32_t done, failed, total;
    int rc, fd;

    for (size_t i = 0; i < sizeof(wt); i++) wt[i] = (unsigned char)(i * 7); /* NUL bytes, 0xff, all */
    CHECK(!fleet_open(&l, url, err, sizeof(err)) && !fleet_listen(l, err, sizeof(err)), "listen: %s", err);
    CHECK(fleet_wait_notify(l, 0, &got, err, sizeof(err)) == 0, "a notification before any end");
    /* Refusals: nothing inserted. */
    CHECK(fleet_job_add_inputs(f, &cj, 0, in, &job, err, sizeof(err)) == -EINVAL, "no partitions accepted");
    CHECK(fleet_job_add_inputs(f, &cj, FLEET_CIRCUIT_PARTS_MAX + 1, in, &job, err, sizeof(err)) == -EINVAL,
          "too many partitions accepted");
    CHECK(fleet_job_add_inputs(f, &cj, 1, &empty, &job, err, sizeof(err)) == -EINVAL,
          "an empty input accepted");
    {
        /* Refused by its length alone: the bytes are never read. */
        struct fleet_input huge = { wt, FLEET_INPUT_MAX + 1, 1 };

        CHECK(fleet_job_add_inputs(f, &cj, 1, &huge, &job, err, sizeof(err)) == -EINVAL &&
                  strstr(err, "input 0"),
              "an input over FLEET_INPUT_MAX accepted: %s", err);
    }
    {
        struct fleet_circuit_job no_fp = cj;

        no_fp.fingerprint = NULL;
        CHECK(fleet_job_add_inputs(f, &no_fp, 1, in, &job, err, sizeof(err)) == -EINVAL,
              "a job without fingerprint accepted");
    }
    /* Created once; the same key and body again: that job; another body: -EEXIST. */
    CHECK((rc = fleet_job_add_inputs(f, &cj, 2, in, &job, err, sizeof(err))) == 1, "add %d: %s", rc, err);
    CHECK((rc = fleet_job_add_inputs(f, &cj, 2, in, &other, err, sizeof(err))) == 0 && other == job,
          "the same key and body: %d, job %llu (want 0, %llu)", rc, (unsigned long long)other,
          (unsigned long long)job);
    {
        struct fleet_circuit_job oc = cj;

        oc.circuit = "m2"; /* the same key and body for another circuit: another request */
        other = 0;
        CHECK((rc = fleet_job_add_inputs(f, &oc, 2, in, &other, err, sizeof(err))) == -EEXIST && other == job,
              "the same key and body for another circuit: %d %s", rc, err);
    }
    cj.body_sha256 = "s2";
    other = 0;
    CHECK((rc = fleet_job_add_inputs(f, &cj, 1, in, &other, err, sizeof(err))) == -EEXIST && other == job &&
              strstr(err, "another body"),
          "the same key, another body: %d %s", rc, err);
    /* The key is per tenant: t2's k1 is a job of its own. */
    cj.tenant = "t2";
    CHECK((rc = fleet_job_add_inputs(f, &cj, 2, in, &job2, err, sizeof(err))) == 1 && job2 != job,
          "another tenant's key: %d %s", rc, err);
    CHECK(fleet_tenant_running(f, "t1", err, sizeof(err)) == 1 &&
              fleet_tenant_running(f, "t2", err, sizeof(err)) == 1 &&
              fleet_tenant_running(f, "t3", err, sizeof(err)) == 0,
          "running counts");
    /* Claims: a daemon that does not store never takes one, nor one without the
     * circuit, nor one with another fingerprint of it. */
    fleet_set_stores(f, 0);
    CHECK(!fleet_set_circuits(f, 2, nm1, fp1), "set circuits");
    CHECK((rc = fleet_claim(f, "ci-a", 30, cl, 4, err, sizeof(err))) == 0, "a non-storing daemon claimed %d",
          rc);
    fleet_set_stores(f, 1);
    CHECK(!fleet_set_circuits(f, 1, nm1 + 1, fpb), "set circuits");
    CHECK((rc = fleet_claim(f, "ci-a", 30, cl, 4, err, sizeof(err))) == 0, "another fingerprint claimed %d",
          rc);
    CHECK(!fleet_set_circuits(f, 1, oth, fpa), "set circuits");
    CHECK((rc = fleet_claim(f, "ci-a", 30, cl, 4, err, sizeof(err))) == 0, "another circuit claimed %d", rc);
    CHECK(!fleet_set_circuits(f, 0, NULL, NULL), "set circuits");
    CHECK((rc = fleet_claim(f, "ci-a", 30, cl, 4, err, sizeof(err))) == 0, "no circuits claimed %d", rc);
    CHECK(!fleet_set_circuits(f, 2, nm1, fp1), "set circuits");
    CHECK((rc = fleet_claim(f, "ci-a", 30, cl, 2, err, sizeof(err))) == 2 && cl[0].job == job &&
              cl[1].job == job,
          "claim: %d %s", rc, err);
    CHECK(!strcmp(cl[0].circuit, "mul") && cl[0].input_kind == FLEET_INPUT_JSON &&
              cl[1].input_kind == FLEET_INPUT_WTNS && cl[0].store_proofs && !cl[0].out_dir[0] &&
              !strcmp(cl[1].name, "1") && !cl[0].wtns[0],
          "the claim's fields: %s %d %d", cl[0].circuit, cl[0].input_kind, cl[1].input_kind);
    /* Inputs back byte for byte, the file cut to them; none for a stale lease. */
    fd = mkstemp(tmpl);
    CHECK(fd >= 0, "mkstemp");
    if (fd >= 0) {
        unlink(tmpl);
        memset(back, 'z', sizeof(back));
        CHECK(pwrite(fd, back, sizeof(back), 0) == (ssize_t)sizeof(back), "prefill");
        CHECK(fleet_input_read(f, "ci-a", job, 1, cl[1].gen, fd, err, sizeof(err)) == (int64_t)sizeof(wt),
              "input read: %s", err);
        CHECK(slurp(fd, back, sizeof(back)) == (ssize_t)sizeof(wt) && !memcmp(back, wt, sizeof(wt)),
              "the .wtns bytes differ after the round trip");
        CHECK(fleet_input_read(f, "ci-a", job, 0, cl[0].gen, fd, err, sizeof(err)) == 10 &&
                  slurp(fd, back, sizeof(back)) == 10 && !memcmp(back, "{\"a\": \"3\"}", 10),
              "input.json read: %s", err);
        CHECK(fleet_input_read(f, "ci-a", job, 0, cl[0].gen + 1, fd, err, sizeof(err)) == 0 &&
                  fleet_input_read(f, "ci-b", job, 0, cl[0].gen, fd, err, sizeof(err)) == 0,
              "input of a lease not held read");
        close(fd);
    }
    /* The views: another tenant's job is no job. */
    CHECK(fleet_job_json(f, job, "t2", &js, err, sizeof(err)) == -ENOENT && !js, "t2 saw t1's job");
    CHECK(fleet_job_json(f, job + 100000, NULL, &js, err, sizeof(err)) == -ENOENT, "no job seen");
    CHECK(fleet_part_proof(f, job, 0, "t2", &pr, &pb, err, sizeof(err)) == -ENOENT, "t2 read t1's proof");
    CHECK(fleet_part_proof(f, job, 0, "t1", &pr, &pb, err, sizeof(err)) == -EAGAIN,
          "a proof before it is done");
    CHECK(fleet_job_cancel(f, job, "t2", err, sizeof(err)) == -ENOENT, "t2 cancelled t1's job");
    CHECK(fleet_job_json(f, job, "t1", &js, err, sizeof(err)) == 0 && js &&
              strstr(js, "\"state\":\"running\"") && strstr(js, "\"circuit\":\"mul\"") &&
              strstr(js, "\"tenant\":\"t1\"") && !strstr(js, "finished_unix"),
          "running job: %s", js ? js : err);
    free(js);
    js = NULL;
    /* Ends: a stored proof and an unsatisfied input; the bell rings once the job ends. */
    CHECK(fleet_finish_stored(f, "ci-a", job, 0, cl[0].gen, "{\"pi_a\": [\"1\"]}", "[\"33\"]", err,
                              sizeof(err)) == 1,
          "finish: %s", err);
    CHECK(fleet_wait_notify(l, 0, &got, err, sizeof(err)) == 0, "a bell before the job's end");
    CHECK(fleet_finish(f, "ci-a", job, 1, cl[1].gen, "unsatisfied: Assert failed in template Mul line 7", err,
                       sizeof(err)) == 1,
          "finish: %s", err);
    CHECK(rang(l, job), "no job-end notification for job %llu", (unsigned long long)job);
    CHECK(fleet_part_proof(f, job, 0, NULL, &pr, &pb, err, sizeof(err)) == 0 && pr && pb &&
              !strcmp(pr, "{\"pi_a\": [\"1\"]}") && !strcmp(pb, "[\"33\"]"),
          "proof: %s", err);
    free(pr);
    free(pb);
    pr = pb = NULL;
    CHECK(fleet_part_proof(f, job, 1, "t1", &pr, &pb, err, sizeof(err)) == -EIO &&
              strstr(err, "Assert failed"),
          "failed partition: %s", err);
    CHECK(fleet_part_proof(f, job, 2, "t1", &pr, &pb, err, sizeof(err)) == -ENOENT, "no partition 2");
    CHECK(fleet_job_json(f, job, "t1", &js, err, sizeof(err)) == 0 && js &&
              strstr(js, "\"state\":\"failed\"") && strstr(js, "finished_unix") &&
              strstr(js, "Assert failed") && strstr(js, "\"done_by\":\"ci-a\""),
          "ended job: %s", js ? js : err);
    free(js);
    js = NULL;
    CHECK(fleet_tenant_running(f, "t1", err, sizeof(err)) == 0, "t1 still running");
    CHECK(fleet_job_cancel(f, job, "t1", err, sizeof(err)) == 0, "an ended job cancelled");
    /* Cancel: one partition leased, one queued. */
    CHECK(fleet_claim(f, "ci-b", 30, c2, 1, err, sizeof(err)) == 1 && c2[0].job == job2, "claim: %s", err);
    CHECK(fleet_job_cancel(f, job2, "t2", err, sizeof(err)) == 1, "cancel: %s", err);
    CHECK(rang(l, job2), "no job-end notification for the cancelled job %llu", (unsigned long long)job2);
    CHECK(fleet_job_cancel(f, job2, NULL, err, sizeof(err)) == 0, "cancelled twice");
    CHECK(fleet_finish_stored(f, "ci-b", job2, c2[0].idx, c2[0].gen, "{}", "[]", err, sizeof(err)) == 0,
          "the leased owner's finish of a cancelled partition accepted");
    CHECK(fleet_claim(f, "ci-b", 30, c2, 4, err, sizeof(err)) == 0, "a cancelled partition claimed");
    CHECK(fleet_job_state(f, job2, &done, &failed, &total, err, sizeof(err)) == 2 && failed == 2,
          "cancelled state %u failed", failed);
    CHECK(job_row_state(url, job2, "cancelled"), "job row");
    CHECK(fleet_job_json(f, job2, "t2", &js, err, sizeof(err)) == 0 && js &&
              strstr(js, "\"state\":\"cancelled\"") && strstr(js, "\"reason\":\"cancelled\""),
          "cancelled job: %s", js ? js : err);
    free(js);
    CHECK(fleet_tenant_running(f, "t2", err, sizeof(err)) == 0, "t2 still running");
    /* A job that ends done rings too (no tenant, no key). */
    {
        struct fleet_circuit_job plain = { .circuit = "mul", .fingerprint = "aa" };
        uint64_t job3 = 0;

        CHECK(fleet_job_add_inputs(f, &plain, 1, in, &job3, err, sizeof(err)) == 1, "add: %s", err);
        CHECK(fleet_tenant_running(f, NULL, err, sizeof(err)) == 1 &&
                  fleet_tenant_running(f, "", err, sizeof(err)) == 1,
              "running jobs without a tenant");
        CHECK(fleet_claim(f, "ci-b", 30, c2, 1, err, sizeof(err)) == 1 && c2[0].job == job3, "claim: %s",
              err);
        CHECK(fleet_finish_stored(f, "ci-b", job3, 0, c2[0].gen, "{}", "[]", err, sizeof(err)) == 1,
              "finish: %s", err);
        CHECK(rang(l, job3), "no job-end notification for the done job %llu", (unsigned long long)job3);
        CHECK(job_row_state(url, job3, "done"), "job row");
    }
    CHECK(!fleet_set_circuits(f, 0, NULL, NULL), "set circuits");
    fleet_set_stores(f, 0);
    fleet_close(l);
    printf("ok: circuit jobs: inputs round trip in binary, idempotency per tenant, claimed only "
           "with the circuit, its fingerprint and stores, views scoped by tenant, cancel, the "
           "job-end bell\n");
}

static int semantics(const char *url)
{
    struct fleet *f;
    struct fleet_claim a[8], b[8], c[8];
    const char *w[6] = { "/nonexistent/a", "/b", "/c", "/d", "/e", "/f" };
    const char *nm[6] = { "a", "b", "c", "d", "e", "f" };
    char err[512];
    uint32_t done, failed, total;
    uint64_t job;
    int na, nb, nc, rc;

    rc = fleet_open(&f, url, err, sizeof(err));
    CHECK(!rc, "open: %s", err);
    if (rc) return 1;
    CHECK(!fleet_job_add(f, "/z.zkey", "/out", 0, 6, w, nm, &job, err, sizeof(err)), "add: %s", err);
    CHECK(!fleet_daemon_hello(f, "sem-a", "here", 1, err, sizeof(err)), "hello: %s", err);
    CHECK(!fleet_daemon_hello(f, "sem-b", "here", 4, err, sizeof(err)), "hello: %s", err);
    /* a takes 3 on a 1 s lease, b the other 3 on a 4 s one, none twice. */
    na = fleet_claim(f, "sem-a", 1, a, 3, err, sizeof(err));
    nb = fleet_claim(f, "sem-b", 4, b, 8, err, sizeof(err));
    CHECK(na == 3 && nb == 3, "claims %d %d (want 3 3)", na, nb);
    for (int i = 0; i < na; i++)
        for (int k = 0; k < nb; k++) CHECK(a[i].job != b[k].job || a[i].idx != b[k].idx, "claimed twice");
    CHECK(fleet_claim(f, "sem-b", 1, c, 8, err, sizeof(err)) == 0, "claimed a leased part");
    /* b keeps its leases alive; a's expire and b takes them over with a new gen. */
    sleep(2);
    CHECK(fleet_renew(f, "sem-b", 30, b, nb, err, sizeof(err)) == 3, "renew: %s", err);
    nc = fleet_claim(f, "sem-b", 30, c, 8, err, sizeof(err));
    CHECK(nc == 3, "took over %d expired leases (want 3)", nc);
    for (int i = 0; i < nc; i++)
        for (int k = 0; k < na; k++)
            if (c[i].job == a[k].job && c[i].idx == a[k].idx)
                CHECK(c[i].gen == a[k].gen + 1, "gen %llu after %llu", (unsigned long long)c[i].gen,
                      (unsigned long long)a[k].gen);
    /* a's late proofs are refused; b's count, once. */
    for (int i = 0; i < na; i++)
        CHECK(fleet_finish(f, "sem-a", a[i].job, a[i].idx, a[i].gen, NULL, err, sizeof(err)) == 0,
              "stale finish accepted");
    for (int i = 0; i < nc; i++) {
        CHECK(fleet_finish(f, "sem-b", c[i].job, c[i].idx, c[i].gen, NULL, err, sizeof(err)) == 1,
              "finish refused: %s", err);
        /* The retry of a finish whose reply was lost (the database went away after
         * its COMMIT): answered "yours, already" so that the caller publishes, and
         * not counted again. Answered 0 before: a done partition nobody published,
         * seen in fleet_pg's dbstop round. */
        CHECK((rc = fleet_finish(f, "sem-b", c[i].job, c[i].idx, c[i].gen, NULL, err, sizeof(err))) == 2,
              "retried finish answered %d (want 2)", rc);
        CHECK(fleet_finish(f, "sem-a", c[i].job, c[i].idx, c[i].gen - 1, NULL, err, sizeof(err)) == 0,
              "stale owner's finish of a done part accepted");
    }
    /* Done but not yet published: not counted, so `cuzk wait` does not return while a
     * proof file is missing (before, it did: a done row whose publish a kill cut off). */
    CHECK(fleet_job_state(f, job, &done, &failed, &total, err, sizeof(err)) == 0 && done == 0 && total == 6,
          "state %u/%u before the marks (want 0/6)", done, total);
    for (int i = 0; i < nc; i++) {
        CHECK((rc = fleet_published(f, c[i].job, c[i].idx, c[i].gen, err, sizeof(err))) == 1,
              "mark answered %d: %s", rc, err);
        CHECK((rc = fleet_published(f, c[i].job, c[i].idx, c[i].gen, err, sizeof(err))) == 0,
              "second mark answered %d", rc);
    }
    CHECK(fleet_job_state(f, job, &done, &failed, &total, err, sizeof(err)) == 0 && done == 3 && total == 6,
          "state %u/%u", done, total);
    for (int i = 0; i < nb; i++)
        fleet_finish(f, "sem-b", b[i].job, b[i].idx, b[i].gen, i ? NULL : "bad witness", err, sizeof(err));
    /* One failed (nothing to publish), two done and unpublished: still running. */
    CHECK(fleet_job_state(f, job, &done, &failed, &total, err, sizeof(err)) == 0 && done == 3 && failed == 1,
          "unpublished state %u done %u failed", done, failed);
    CHECK(job_row_state(url, job, "running"), "job row ended with proofs unpublished");
    for (int i = 1; i < nb; i++)
        CHECK(fleet_published(f, b[i].job, b[i].idx, b[i].gen, err, sizeof(err)) == 1, "mark: %s", err);
    CHECK(fleet_job_state(f, job, &done, &failed, &total, err, sizeof(err)) == 2 && done == 5 && failed == 1,
          "end state %u done %u failed", done, failed);
    CHECK(job_row_state(url, job, "failed"), "job row not ended by the last mark");
    /* Leases a daemon does not name in its heartbeat are not its work: one it got
     * without knowing (a claim whose COMMIT landed, its reply lost) expires though the
     * heartbeat goes on, and a restarted daemon's previous run's go back to the queue
     * at once. Before, the heartbeat renewed every lease of the owner id: such a
     * partition stayed leased, worked on by nobody, for as long as the daemon lived. */
    {
        const char *w2[2] = { "/g", "/h" }, *nm2[2] = { "g", "h" };
        uint64_t job2;

        CHECK(!fleet_job_add(f, "/z.zkey", "/out", 0, 2, w2, nm2, &job2, err, sizeof(err)), "add: %s", err);
        CHECK(fleet_claim(f, "sem-c", 1, a, 1, err, sizeof(err)) == 1, "claim: %s", err);
        CHECK((rc = fleet_renew(f, "sem-c", 30, a, 0, err, sizeof(err))) == 0,
              "renewed %d leases it did not name: %s", rc, err);
        sleep(2);
        CHECK((rc = fleet_claim(f, "sem-d", 30, b, 1, err, sizeof(err))) == 1 && b[0].job == a[0].job &&
                  b[0].idx == a[0].idx,
              "an unnamed lease was kept alive (claimed %d)", rc);
        CHECK(fleet_claim(f, "sem-c", 30, a, 1, err, sizeof(err)) == 1, "claim: %s", err);
        CHECK((rc = fleet_release_mine(f, "sem-c", err, sizeof(err))) == 1,
              "released %d of a previous run's leases (want 1)", rc);
        CHECK((rc = fleet_claim(f, "sem-d", 30, c, 1, err, sizeof(err))) == 1 && c[0].job == a[0].job &&
                  c[0].idx == a[0].idx,
              "a released lease was not claimable (claimed %d)", rc);
        for (int i = 0; i < 2; i++) {
            const struct fleet_claim *x = i ? &c[0] : &b[0];

            CHECK(fleet_finish(f, "sem-d", x->job, x->idx, x->gen, NULL, err, sizeof(err)) == 1, "finish: %s",
                  err);
            CHECK(fleet_published(f, x->job, x->idx, x->gen, err, sizeof(err)) == 1, "mark: %s", err);
        }
    }
    {
        char *s = fleet_status_json(f, err, sizeof(err));
        const char *b_row = s ? strstr(s, "\"sem-b\"") : NULL;
        /* 6 finishes by sem-b, each counted once (the 3 retries are not). */
        CHECK(b_row && strstr(b_row, "\"done\" : 6,"), "status: %s", s ? s : err);
        if (s) printf("status: %s\n", s);
        free(s);
    }
    adoption(url, f);
    stored(url, f);
    circuits(url, f);
    idem_race(url);
    fleet_close(f);
    migration(url);
    printf("%s: lease semantics\n", fails ? "FAIL" : "ok");
    return fails ? 1 : 0;
}

/* A fleet path must be a regular file, not a link: whoever writes the queue chooses
 * it (fleet_pg.h's trust boundary). */
static int regular(const char *p)
{
    struct stat st;
    int fd = open(p, O_RDONLY | O_NOFOLLOW | O_CLOEXEC), ok;

    if (fd < 0) return 0;
    ok = !fstat(fd, &st) && S_ISREG(st.st_mode);
    close(fd);
    return ok;
}

static int prove(const char *cuzk, const struct fleet_claim *c, const char *tp, const char *tq)
{
    pid_t pid = fork();
    int st;

    if (pid == 0) {
        execl(cuzk, cuzk, "prove-local", c->zkey, c->wtns, tp, tq, (char *)NULL);
        _exit(127);
    }
    if (pid < 0 || waitpid(pid, &st, 0) != pid) return -1;
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static void publog(const char *line)
{
    const char *log = getenv("FLEET_PUBLISH_LOG");
    FILE *lf = log ? fopen(log, "a") : NULL;

    if (lf) {
        fprintf(lf, "%s\n", line);
        fclose(lf);
    }
}

/* fleet_adopt's report: a proof another (dead) worker finished, published here. */
static void adopted(void *arg, const struct fleet_adopted *a)
{
    char line[600];

    /* Whoever linked says "N adopted" (N: how many of the two files it linked), also
     * when another adopter's mark came first (FLEET_PUB_GONE). Seen in the crash
     * round: two workers adopting one proof, one linking both files and the other,
     * finding the finals, marking it; or each linking one of the two (the first
     * links public, the second, a moment later, the proof): two "1 adopted" lines,
     * each final name still written once (fleet_pg.sh sums the files). */
    if (a->linked > 0 || a->outcome == FLEET_PUB_MARKED) {
        if (a->linked)
            snprintf(line, sizeof(line), "%llu %u %s %d adopted", (unsigned long long)a->job, a->idx,
                     (const char *)arg, a->linked);
        else
            snprintf(line, sizeof(line), "%llu %u %s marked", (unsigned long long)a->job, a->idx,
                     (const char *)arg);
        publog(line);
    } else if (a->outcome < 0)
        fprintf(stderr, "%s: adoption: %s\n", (const char *)arg, a->why);
}

static int worker(const char *url, const char *owner, const char *cuzk)
{
    struct fleet *f = NULL;
    struct fleet_claim c;
    char err[512], sn[300];
    const char *ca = getenv("FLEET_TEST_CRASH_AFTER_FINISH");
    int backoff_ms = 100, rc, finished = 0, crash_after = ca ? atoi(ca) : 0;

    fleet_spool_name(owner, sn, sizeof(sn));
    for (;;) { /* connect, with backoff: the database may be restarting */
        if (!(rc = fleet_open(&f, url, err, sizeof(err))) &&
            !(rc = fleet_daemon_hello(f, owner, "test", LEASE_S, err, sizeof(err))))
            break;
        fleet_close(f);
        f = NULL;
        fprintf(stderr, "%s: %s (retrying)\n", owner, err);
        usleep((useconds_t)backoff_ms * 1000);
        if (backoff_ms < 2000) backoff_ms *= 2;
    }
    for (;;) {
        char tp[1700], tq[1700], line[600];
        int n, won, linked = 0;

        /* The heartbeat (no lease named: the one held is given up before the next
         * claim), so that others can tell this worker alive from a dead one. */
        n = fleet_renew(f, owner, LEASE_S, &c, 0, err, sizeof(err));
        if (n >= 0) n = fleet_claim(f, owner, LEASE_S, &c, 1, err, sizeof(err));
        if (n < 0) {
            fprintf(stderr, "%s: %s (retrying)\n", owner, err);
            usleep((useconds_t)backoff_ms * 1000);
            if (backoff_ms < 2000) backoff_ms *= 2;
            fleet_reconnect(f, err, sizeof(err));
            continue;
        }
        backoff_ms = 100;
        if (n == 0) {
            char *s;
            int idle;

            if (fleet_adopt(f, owner, 0, adopted, (void *)owner, err, sizeof(err)) < 0) continue;
            s = fleet_status_json(f, err, sizeof(err));
            idle = s && strstr(s, "\"queued\" : 0") && strstr(s, "\"leased\" : 0") &&
                strstr(s, "\"unpublished\" : 0");
            free(s);
            if (idle) break;
            usleep(200000); /* others hold leases that may expire */
            continue;
        }
        /* The spool dir of cuzkd's fleet thread (fleet_spool_name), so that an
         * adopter finds a dead worker's proofs where it finds a dead cuzkd's. */
        snprintf(tp, sizeof(tp), "%s/%s", c.out_dir, sn);
        if (mkdir(tp, 0700) && errno != EEXIST) {
            fleet_finish(f, owner, c.job, c.idx, c.gen, "cannot create the spool dir", err, sizeof(err));
            continue;
        }
        snprintf(tp, sizeof(tp), "%s/%s/%s.proof.json", c.out_dir, sn, c.name);
        snprintf(tq, sizeof(tq), "%s/%s/%s.public.json", c.out_dir, sn, c.name);
        if (!regular(c.wtns) || !regular(c.zkey)) {
            fleet_finish(f, owner, c.job, c.idx, c.gen, "input not a regular file", err, sizeof(err));
            continue;
        }
        rc = prove(cuzk, &c, tp, tq);
        /* The finish may meet a database that is away: retry it while the lease
         * could still be ours; a lost lease answers 0 and the proof is dropped. */
        for (int t = 0; (won = fleet_finish(f, owner, c.job, c.idx, c.gen, rc ? "prove-local failed" : NULL,
                                            err, sizeof(err))) < 0 &&
             t < 50;
             t++) {
            usleep(200000);
            fleet_reconnect(f, err, sizeof(err));
        }
        /* Test hook (fleet_pg.sh's crash round): die after the N-th finish, before
         * its publish, as cuzkd's CUZK_TEST_FLEET_CRASH_AFTER_FINISH does. */
        if (won >= 1 && !rc && crash_after > 0 && ++finished == crash_after) kill(getpid(), SIGKILL);
        if (won >= 1 && !rc) {
            /* Publish and mark; a retry after a lost database only marks (the
             * spooled files are linked and gone: never published twice). */
            int first = 1, l;

            while ((won = fleet_part_publish(f, c.out_dir, c.name, owner, c.job, c.idx, c.gen, &l, err,
                                             sizeof(err))) < 0 &&
                   won != -ENOTDIR && won != -EPERM) {
                linked += l;
                first = 0;
                usleep(200000);
                fleet_reconnect(f, err, sizeof(err));
            }
            linked += l;
            if (won < 0)
                fprintf(stderr, "%s: %s\n", owner, err);
            else if (won == FLEET_PUB_MARKED || linked) {
                snprintf(line, sizeof(line), "%llu %u %s%s", (unsigned long long)c.job, c.idx, owner,
                         linked < 2 && first ? " EEXIST" : "");
                publog(line);
            }
        } else {
            unlink(tp); /* not ours to publish */
            unlink(tq);
        }
    }
    fleet_close(f);
    return 0;
}

int main(int argc, char **argv)
{
    const char *url = getenv("CUZK_TEST_PG_URL");

    if (!url || !*url) {
        printf("SKIP: no CUZK_TEST_PG_URL (tests/scripts/fleet_pg.sh starts a cluster)\n");
        return 77;
    }
    if (argc == 4 && !strcmp(argv[1], "worker")) return worker(url, argv[2], argv[3]);
    return semantics(url);
}
