/* fleet_circuit.c — circuit jobs of the fleet queue (fleet_pg.h "Circuit jobs"): jobs
 * with their inputs and proofs in the table, added under the tenant's cap, read,
 * cancelled and counted per tenant, and the job-end notification. */
#include "store/fleet_priv.h"

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
    r = fleet_sql_exec(f, "SELECT pg_advisory_xact_lock(7172018, hashtext($1))", 1,
                       (const char *[]){ tenant });
    if (!fleet_sql_ok(r)) return fleet_sql_tx_fail(f, r, "locking a tenant's jobs", err, errlen);
    fleet_pq->clear(r);
    r = fleet_sql_exec(
        f,
        "SELECT (SELECT count(*) FROM cuzk_jobs WHERE state = 'running' AND coalesce(tenant, '') = $1)"
        " >= $2::int AND NOT EXISTS (SELECT 1 FROM cuzk_jobs WHERE coalesce(tenant, '') = $1 AND"
        " idem_key = $3)",
        3, (const char *[]){ tenant, mb, j->idem_key });
    if (!fleet_sql_ok(r) || fleet_pq->ntuples(r) != 1)
        return fleet_sql_tx_fail(f, r, "counting a tenant's jobs", err, errlen);
    over = fleet_pq->getvalue(r, 0, 0)[0] == 't';
    fleet_pq->clear(r);
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
    if ((rc = fleet_sql_run(f, "BEGIN", what, err, errlen))) return rc;
    if (tenant && j->max_running && (rc = tenant_room(f, j, tenant, err, errlen)))
        return rc == -EDQUOT ? fleet_sql_rollback(f, rc) : rc; /* an error rolled back already */
    /* ON CONFLICT DO NOTHING: a concurrent insert of the same key waits for the other
     * transaction, then inserts nothing; the job it made is read below. */
    r = fleet_sql_exec(
        f,
        "INSERT INTO cuzk_jobs(zkey, out_dir, n_parts, store_proofs, circuit, fingerprint,"
        " tenant, idem_key, body_sha256, metadata) VALUES ('', '', $1, true, $2, $3, $4, $5, $6, $7)"
        " ON CONFLICT ((coalesce(tenant, '')), idem_key) WHERE idem_key IS NOT NULL"
        " DO NOTHING RETURNING id",
        7,
        (const char *[]){ nb, j->circuit, j->fingerprint, tenant, j->idem_key, j->body_sha256, j->metadata });
    if (!fleet_sql_ok(r)) return fleet_sql_tx_fail(f, r, what, err, errlen);
    if (fleet_pq->ntuples(r) == 0) { /* the key is taken: that job, if it has the same body */
        fleet_pq->clear(r);
        /* ... and the same circuit: a body sent to another circuit is another request
         * (the API hashes the body alone), never answered with this circuit's job. */
        r = fleet_sql_exec(f,
                           "SELECT id, body_sha256 = $3 AND circuit = $4 FROM cuzk_jobs WHERE"
                           " coalesce(tenant, '') = coalesce($1, '') AND idem_key = $2",
                           4, (const char *[]){ tenant, j->idem_key, j->body_sha256, j->circuit });
        if (!fleet_sql_ok(r) || fleet_pq->ntuples(r) != 1) return fleet_sql_tx_fail(f, r, what, err, errlen);
        *job = strtoull(fleet_pq->getvalue(r, 0, 0), NULL, 10);
        rc = fleet_pq->getvalue(r, 0, 1)[0] == 't' ? 0 : -EEXIST;
        fleet_pq->clear(r);
        if (rc)
            snprintf(err, errlen,
                     "fleet queue: idempotency key already used by job %llu with another body or circuit",
                     (unsigned long long)*job);
        return fleet_sql_rollback(f, rc);
    }
    snprintf(jb, sizeof(jb), "%s", fleet_pq->getvalue(r, 0, 0));
    fleet_pq->clear(r);
    for (uint32_t i = 0; i < n; i++) {
        /* The input in binary (format 1): its bytes as they are, NUL bytes included,
         * no escaping and no doubling on the wire. */
        const char *v[5] = { jb, ib, ib, in[i].bytes, in[i].wtns ? "wtns" : "json" };
        int len[5] = { 0, 0, 0, (int)in[i].len, 0 }, fmt[5] = { 0, 0, 0, 1, 0 };

        snprintf(ib, sizeof(ib), "%u", i);
        r = fleet_pq->exec_params(f->conn,
                                  "INSERT INTO cuzk_parts(job, idx, wtns, name, input, input_kind)"
                                  " VALUES ($1, $2::int, '', $3::text, $4::bytea, $5)",
                                  5, NULL, v, len, fmt, 0);
        if ((rc = fleet_sql_done(f, r, what, err, errlen))) return fleet_sql_rollback(f, rc);
    }
    if ((rc = fleet_sql_run(f, "COMMIT", what, err, errlen))) return fleet_sql_rollback(f, rc);
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
    struct fleet_part_key k;
    const char *b;
    PGresult *r;
    int64_t len;

    fleet_part_key(&k, job, idx, gen);
    /* Binary result (format 1): the bytea's bytes, not its hex text at twice the size. */
    r = fleet_pq->exec_params(f->conn,
                              "SELECT input FROM cuzk_parts WHERE job = $1 AND idx = $2 AND lease_gen = $3"
                              " AND owner = $4 AND state = 'leased' AND input IS NOT NULL",
                              4, NULL, (const char *[]){ k.job, k.idx, k.gen, owner }, NULL, NULL, 1);
    if (!fleet_sql_ok(r)) return fleet_sql_fail(f, r, "reading a partition's input", err, errlen);
    if (fleet_pq->ntuples(r) != 1) {
        fleet_pq->clear(r);
        return 0;
    }
    b = fleet_pq->getvalue(r, 0, 0);
    len = fleet_pq->getlength(r, 0, 0);
    for (int64_t o = 0; o < len;) {
        ssize_t w = pwrite(fd, b + o, (size_t)(len - o), o);

        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) {
            snprintf(err, errlen, "fleet queue: writing a partition's input: %s", strerror(w ? errno : EIO));
            fleet_pq->clear(r);
            return -EIO;
        }
        o += w;
    }
    fleet_pq->clear(r);
    if (ftruncate(fd, len)) {
        snprintf(err, errlen, "fleet queue: writing a partition's input: %s", strerror(errno));
        return -EIO;
    }
    return len;
}

/* The one text a query returns (malloc'd into *out), -ENOENT when it returns no row. */
static int one_text(struct fleet *f, PGresult *r, char **out, const char *what, char *err, size_t errlen)
{
    if (!fleet_sql_ok(r)) return fleet_sql_fail(f, r, what, err, errlen);
    if (fleet_pq->ntuples(r) != 1) {
        fleet_pq->clear(r);
        return -ENOENT;
    }
    *out = strdup(fleet_pq->getvalue(r, 0, 0));
    fleet_pq->clear(r);
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
    rc = one_text(
        f,
        fleet_sql_exec(f,
                       "SELECT json_strip_nulls(json_build_object('id', j.id, 'circuit', j.circuit,"
                       " 'tenant', nullif(j.tenant, ''), 'state', j.state,"
                       " 'submitted_unix', extract(epoch FROM j.submitted)::bigint,"
                       " 'finished_unix', extract(epoch FROM j.finished)::bigint,"
                       " 'metadata', j.metadata::json,"
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
    r = fleet_sql_exec(f,
                       "SELECT p.state, coalesce(p.reason, ''), p.proof_json, p.public_json"
                       " FROM cuzk_parts p JOIN cuzk_jobs j ON j.id = p.job"
                       " WHERE p.job = $1 AND p.idx = $2 AND" TENANT_OK(3),
                       3, (const char *[]){ jb, ib, tenant });
    if (!fleet_sql_ok(r)) return fleet_sql_fail(f, r, "reading a stored proof", err, errlen);
    if (fleet_pq->ntuples(r) != 1) {
        fleet_pq->clear(r);
        snprintf(err, errlen, "fleet queue: no job %llu part %u", (unsigned long long)job, idx);
        return -ENOENT;
    }
    st = fleet_pq->getvalue(r, 0, 0);
    if (!strcmp(st, "failed")) {
        snprintf(err, errlen, "%s", fleet_pq->getvalue(r, 0, 1));
        rc = -EIO;
    } else if (strcmp(st, "done")) {
        snprintf(err, errlen, "fleet queue: job %llu part %u is %s", (unsigned long long)job, idx, st);
        rc = -EAGAIN;
    } else if (fleet_pq->getisnull(r, 0, 2) || fleet_pq->getisnull(r, 0, 3)) {
        snprintf(err, errlen, "fleet queue: job %llu part %u: its proof is not stored in the queue",
                 (unsigned long long)job, idx);
        rc = -ENOENT;
    } else if (!(*proof = strdup(fleet_pq->getvalue(r, 0, 2))) ||
               !(*pub = strdup(fleet_pq->getvalue(r, 0, 3)))) {
        free(*proof);
        *proof = NULL;
        snprintf(err, errlen, "fleet queue: out of memory");
        rc = -ENOMEM;
    }
    fleet_pq->clear(r);
    return rc;
}

int fleet_job_cancel(struct fleet *f, uint64_t job, const char *tenant, char *err, size_t errlen)
{
    static const char what[] = "cancelling";
    char jb[24];
    PGresult *r;
    int rc, n;

    if (!job_param(jb, job)) return no_job(job, err, errlen);
    if ((rc = fleet_sql_run(f, "BEGIN", what, err, errlen))) return rc;
    r = fleet_sql_exec(f, "SELECT state = 'running' FROM cuzk_jobs j WHERE id = $1 AND" TENANT_OK(2), 2,
                       (const char *[]){ jb, tenant });
    if (!fleet_sql_ok(r)) return fleet_sql_tx_fail(f, r, what, err, errlen);
    n = fleet_pq->ntuples(r) == 1 ? fleet_pq->getvalue(r, 0, 0)[0] == 't' : -1;
    fleet_pq->clear(r);
    if (n <= 0) return fleet_sql_rollback(f, n < 0 ? no_job(job, err, errlen) : 0);
    /* The partitions first, then the job: the order of a finish (its partition, then
     * job_end's job row), so the two never wait on each other in a cycle. done_by
     * stays NULL: a leased owner's finish (and its retry check) matches no row and
     * answers 0, so it discards its proof. */
    r = fleet_sql_exec(f,
                       "UPDATE cuzk_parts SET state = 'failed', reason = 'cancelled', lease_expiry = NULL,"
                       " finished = now(), published = true, input = NULL"
                       " WHERE job = $1 AND state IN ('queued', 'leased')",
                       1, (const char *[]){ jb });
    if ((rc = fleet_sql_done(f, r, what, err, errlen))) return fleet_sql_rollback(f, rc);
    r = fleet_sql_exec(
        f,
        "WITH u AS (UPDATE cuzk_jobs SET state = 'cancelled', cancelled = true, finished = now()"
        " WHERE id = $1 AND state = 'running' RETURNING id)"
        " SELECT pg_notify('cuzk_job_end', id::text) FROM u",
        1, (const char *[]){ jb });
    if (!fleet_sql_ok(r)) return fleet_sql_tx_fail(f, r, what, err, errlen);
    n = fleet_pq->ntuples(r); /* 0: it ended meanwhile (its last finish came first) */
    fleet_pq->clear(r);
    if ((rc = fleet_sql_run(f, "COMMIT", what, err, errlen))) return fleet_sql_rollback(f, rc);
    return n == 1;
}

int fleet_tenant_running(struct fleet *f, const char *tenant, char *err, size_t errlen)
{
    PGresult *r = fleet_sql_exec(f,
                                 "SELECT count(*) FROM cuzk_jobs WHERE state = 'running'"
                                 " AND coalesce(tenant, '') = coalesce($1, '')",
                                 1, (const char *[]){ tenant });
    int n;

    if (!fleet_sql_ok(r) || fleet_pq->ntuples(r) != 1)
        return fleet_sql_fail(f, r, "counting a tenant's jobs", err, errlen);
    n = atoi(fleet_pq->getvalue(r, 0, 0));
    fleet_pq->clear(r);
    return n;
}

int fleet_jobs_list(struct fleet *f, const char *tenant, const char *state, const char *circuit,
                    int64_t since, uint64_t before, uint32_t limit, char **json, int *more, char *err,
                    size_t errlen)
{
    char sb[24], bb[24], lb[16];
    json_t *a;
    int rc;

    *json = NULL;
    *more = 0;
    snprintf(sb, sizeof(sb), "%lld", (long long)since);
    snprintf(bb, sizeof(bb), "%llu",
             (unsigned long long)(before && before <= INT64_MAX ? before : INT64_MAX));
    snprintf(lb, sizeof(lb), "%u", limit + 1); /* one more: is there a next page */
    /* One query for the page, its counts included; the tenant's index walks its jobs
     * from the newest down. json_strip_nulls leaves out what a job has not (its
     * circuit, its metadata). */
    rc =
        one_text(f,
                 fleet_sql_exec(
                     f,
                     "SELECT coalesce(json_agg(o ORDER BY id DESC), '[]')::text FROM (SELECT j.id,"
                     " json_strip_nulls(json_build_object('id', j.id, 'circuit', j.circuit, 'state', j.state,"
                     " 'submitted_unix', extract(epoch FROM j.submitted)::bigint, 'partitions', j.n_parts,"
                     " 'done', (SELECT count(*) FROM cuzk_parts p WHERE p.job = j.id AND p.state = 'done'),"
                     " 'failed', (SELECT count(*) FROM cuzk_parts p WHERE p.job = j.id"
                     "  AND p.state = 'failed'), 'metadata', j.metadata::json)) AS o"
                     " FROM cuzk_jobs j WHERE coalesce(j.tenant, '') = coalesce($1, '')"
                     " AND ($2::text IS NULL OR j.state = $2) AND ($3::text IS NULL OR j.circuit = $3)"
                     " AND j.submitted >= to_timestamp($4::bigint) AND j.id < $5::bigint"
                     " ORDER BY j.id DESC LIMIT $6::int) s",
                     6, (const char *[]){ tenant && tenant[0] ? tenant : NULL, state, circuit, sb, bb, lb }),
                 json, "listing jobs", err, errlen);
    if (rc) return rc;
    /* the look-ahead row tells that a page follows; it is not on this one */
    if ((a = json_loads(*json, 0, NULL)) && json_array_size(a) > limit) {
        json_array_remove(a, limit);
        free(*json);
        *json = json_dumps(a, JSON_COMPACT);
        *more = 1;
    }
    json_decref(a);
    if (!*json) {
        snprintf(err, errlen, "fleet queue: out of memory");
        return -ENOMEM;
    }
    return 0;
}

int fleet_part_proofs(struct fleet *f, uint64_t job, uint32_t from, uint32_t n, const char *tenant,
                      char **json, char *err, size_t errlen)
{
    char jb[24], fb[16], tb[16];

    *json = NULL;
    if (!job_param(jb, job) || from > INT32_MAX) return no_job(job, err, errlen);
    snprintf(fb, sizeof(fb), "%u", from);
    snprintf(tb, sizeof(tb), "%llu",
             (unsigned long long)from + n < INT32_MAX ? (unsigned long long)from + n : INT32_MAX);
    return one_text(
        f,
        fleet_sql_exec(f,
                       "SELECT coalesce(json_agg(json_build_object('index', p.idx, 'proof',"
                       " p.proof_json::json, 'public', p.public_json::json) ORDER BY p.idx), '[]')::text"
                       " FROM cuzk_parts p JOIN cuzk_jobs j ON j.id = p.job WHERE p.job = $1"
                       " AND p.idx >= $2::int AND p.idx < $3::int AND p.state = 'done'"
                       " AND p.proof_json IS NOT NULL AND p.public_json IS NOT NULL AND" TENANT_OK(4),
                       4, (const char *[]){ jb, fb, tb, tenant }),
        json, "reading stored proofs", err, errlen);
}
