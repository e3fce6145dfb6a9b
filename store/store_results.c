/* store_results.c — the job store read back (store_each_running, store_job_one) and
 * the results of jobs that keep them in the store (store_results.h). */
#include "store/store_results.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store_priv.h"

static enum store_part_state part_state_of(const char *s)
{
    for (int i = 0; i < STORE_NSTATES; i++)
        if (s && !strcmp(s, store_part_state_name((enum store_part_state)i))) return (enum store_part_state)i;
    return STORE_QUEUED; /* unknown (a later version's state): redo it */
}

static enum store_job_state job_state_of(const char *s)
{
    return s && !strcmp(s, "done")  ? STORE_JOB_DONE
        : s && !strcmp(s, "failed") ? STORE_JOB_FAILED
                                    : STORE_JOB_RUNNING;
}

/* The job of jq's row (id, request, state, submitted, finished) with its partitions
 * (pq, bound to its id here) handed to cb: *ret its return. An SQLite result code. */
static int job_with_parts(sqlite3_stmt *jq, sqlite3_stmt *pq, int (*cb)(void *arg, const struct store_job *j),
                          void *arg, int *ret)
{
    struct store_job j = { .id = (uint64_t)sqlite3_column_int64(jq, 0),
                           .request = (const char *)sqlite3_column_text(jq, 1),
                           .state_job = job_state_of((const char *)sqlite3_column_text(jq, 2)),
                           .submitted = sqlite3_column_int64(jq, 3),
                           .finished = sqlite3_column_int64(jq, 4) };
    enum store_part_state *sv = NULL;
    uint32_t *at = NULL;
    char **nm = NULL, **rs = NULL;
    uint32_t cap = 0, n = 0;
    int rc;

    sqlite3_bind_int64(pq, 1, (sqlite3_int64)j.id);
    while ((rc = sqlite3_step(pq)) == SQLITE_ROW) {
        const char *r = (const char *)sqlite3_column_text(pq, 3);

        if (n == cap) {
            cap = cap ? 2 * cap : 64;
            sv = realloc(sv, cap * sizeof(*sv));
            nm = realloc(nm, cap * sizeof(*nm));
            rs = realloc(rs, cap * sizeof(*rs));
            at = realloc(at, cap * sizeof(*at));
            if (!sv || !nm || !rs || !at) {
                rc = SQLITE_NOMEM;
                break;
            }
        }
        sv[n] = part_state_of((const char *)sqlite3_column_text(pq, 2));
        nm[n] = strdup((const char *)sqlite3_column_text(pq, 1));
        rs[n] = r ? strdup(r) : NULL;
        at[n] = (uint32_t)sqlite3_column_int64(pq, 4);
        n++;
    }
    sqlite3_reset(pq);
    if (rc == SQLITE_DONE) {
        rc = SQLITE_OK;
        j.n_parts = n;
        j.state = sv;
        j.name = (const char *const *)nm;
        j.reason = (const char *const *)rs;
        j.attempts = at;
        *ret = cb(arg, &j);
    }
    for (uint32_t i = 0; i < n; i++) {
        free(nm[i]);
        free(rs[i]);
    }
    free(sv);
    free(nm);
    free(rs);
    free(at);
    return rc;
}

#define JOB_COLS  "SELECT id, request, state, submitted, coalesce(finished, 0) FROM jobs "
#define PARTS_SQL "SELECT idx, name, state, reason, attempts FROM parts WHERE job = ?1 ORDER BY idx"

int store_each_running(struct store *st, int (*cb)(void *arg, const struct store_job *j), void *arg,
                       char *err, size_t errlen)
{
    sqlite3_stmt *jq = NULL, *pq = NULL;
    int rc, ret = 0;

    rc = sqlite3_prepare_v2(st->db, JOB_COLS "WHERE state = 'running' ORDER BY id", -1, &jq, NULL);
    if (rc == SQLITE_OK) rc = sqlite3_prepare_v2(st->db, PARTS_SQL, -1, &pq, NULL);
    while (rc == SQLITE_OK && !ret && (rc = sqlite3_step(jq)) == SQLITE_ROW)
        rc = job_with_parts(jq, pq, cb, arg, &ret);
    if (rc == SQLITE_DONE) rc = SQLITE_OK;
    if (rc != SQLITE_OK) ret = store_sq_fail(st, rc, "reading its jobs", err, errlen);
    sqlite3_finalize(jq);
    sqlite3_finalize(pq);
    return ret;
}

int store_job_one(struct store *st, uint64_t id, int (*cb)(void *arg, const struct store_job *j), void *arg,
                  int *cbret, char *err, size_t errlen)
{
    sqlite3_stmt *jq = NULL, *pq = NULL;
    int rc, found = 0;

    *cbret = 0;
    rc = sqlite3_prepare_v2(st->db, JOB_COLS "WHERE id = ?1", -1, &jq, NULL);
    if (rc == SQLITE_OK) rc = sqlite3_prepare_v2(st->db, PARTS_SQL, -1, &pq, NULL);
    if (rc == SQLITE_OK) {
        sqlite3_bind_int64(jq, 1, (sqlite3_int64)id);
        if ((rc = sqlite3_step(jq)) == SQLITE_ROW) {
            found = 1;
            rc = job_with_parts(jq, pq, cb, arg, cbret);
        }
    }
    if (rc == SQLITE_DONE) rc = SQLITE_OK;
    if (rc != SQLITE_OK) found = store_sq_fail(st, rc, "reading a job", err, errlen);
    sqlite3_finalize(jq);
    sqlite3_finalize(pq);
    return found;
}

static char *col_dup(sqlite3_stmt *q, int i)
{
    const char *t = (const char *)sqlite3_column_text(q, i);

    return t ? strdup(t) : NULL;
}

int store_part_one(struct store *st, uint64_t id, uint32_t idx, struct store_part_one *p, char *err,
                   size_t errlen)
{
    sqlite3_stmt *q = NULL;
    int rc =
        sqlite3_prepare_v2(st->db,
                           "SELECT j.request, (SELECT count(*) FROM parts WHERE job = ?1), p.name, p.state,"
                           " p.reason FROM jobs j LEFT JOIN parts p ON p.job = j.id AND p.idx = ?2"
                           " WHERE j.id = ?1",
                           -1, &q, NULL);
    int found = 0;

    memset(p, 0, sizeof(*p));
    if (rc == SQLITE_OK) {
        sqlite3_bind_int64(q, 1, (sqlite3_int64)id);
        sqlite3_bind_int64(q, 2, idx);
        if ((rc = sqlite3_step(q)) == SQLITE_ROW) {
            const char *nm = (const char *)sqlite3_column_text(q, 2);
            const char *rs = (const char *)sqlite3_column_text(q, 4);

            found = (p->request = col_dup(q, 0)) ? 1 : -ENOMEM;
            p->n_parts = (uint32_t)sqlite3_column_int64(q, 1);
            p->has_part = nm != NULL;
            p->state = part_state_of((const char *)sqlite3_column_text(q, 3));
            snprintf(p->name, sizeof(p->name), "%s", nm ? nm : "");
            snprintf(p->reason, sizeof(p->reason), "%s", rs ? rs : "");
            rc = SQLITE_OK;
        }
    }
    if (rc == SQLITE_DONE) rc = SQLITE_OK;
    if (rc != SQLITE_OK) found = store_sq_fail(st, rc, "reading a partition", err, errlen);
    if (found == -ENOMEM && err) snprintf(err, errlen, "out of memory");
    sqlite3_finalize(q);
    return found;
}

int store_idem_record(struct store *st, uint64_t id, const char *request)
{
    sqlite3_stmt *q = NULL;
    int rc = sqlite3_prepare_v2(
        st->db,
        "INSERT INTO idem(tenant, key, body_sha256, job) SELECT"
        " coalesce(json_extract(?1, '$.tenant'), 'uid:' || json_extract(?1, '$.peer.uid')),"
        " json_extract(?1, '$.idempotency_key'), json_extract(?1, '$.body_sha256'), ?2"
        " WHERE json_extract(?1, '$.idempotency_key') IS NOT NULL",
        -1, &q, NULL);

    if (rc == SQLITE_OK) {
        sqlite3_bind_text(q, 1, request, -1, SQLITE_STATIC);
        sqlite3_bind_int64(q, 2, (sqlite3_int64)id);
        rc = sqlite3_step(q);
        rc = rc == SQLITE_DONE ? SQLITE_OK : rc;
    }
    sqlite3_finalize(q);
    return rc;
}

int store_idem_find(struct store *st, const char *tenant, const char *key, uint64_t *job, char sha[65],
                    char *err, size_t errlen)
{
    sqlite3_stmt *q = NULL;
    int rc = sqlite3_prepare_v2(st->db, "SELECT job, body_sha256 FROM idem WHERE tenant = ?1 AND key = ?2",
                                -1, &q, NULL);
    int found = 0;

    if (rc == SQLITE_OK) {
        sqlite3_bind_text(q, 1, tenant ? tenant : "", -1, SQLITE_STATIC);
        sqlite3_bind_text(q, 2, key, -1, SQLITE_STATIC);
        if ((rc = sqlite3_step(q)) == SQLITE_ROW) {
            *job = (uint64_t)sqlite3_column_int64(q, 0);
            snprintf(sha, 65, "%s", (const char *)sqlite3_column_text(q, 1));
            found = 1;
            rc = SQLITE_OK;
        }
    }
    if (rc == SQLITE_DONE) rc = SQLITE_OK;
    if (rc != SQLITE_OK) found = store_sq_fail(st, rc, "reading an idempotency key", err, errlen);
    sqlite3_finalize(q);
    return found;
}

int store_result_put(struct store *st, uint64_t job, uint32_t idx, const char *proof, const char *pub,
                     const char *timings)
{
    sqlite3_stmt *q = NULL;
    int rc;

    if ((rc = store_batch_begin(st, 0))) return rc;
    rc = sqlite3_prepare_v2(st->db,
                            "INSERT OR REPLACE INTO results(job, idx, proof, public, timings)"
                            " VALUES(?1, ?2, ?3, ?4, ?5)",
                            -1, &q, NULL);
    if (rc == SQLITE_OK) {
        sqlite3_bind_int64(q, 1, (sqlite3_int64)job);
        sqlite3_bind_int64(q, 2, idx);
        sqlite3_bind_text(q, 3, proof, -1, SQLITE_STATIC);
        sqlite3_bind_text(q, 4, pub, -1, SQLITE_STATIC);
        if (timings)
            sqlite3_bind_text(q, 5, timings, -1, SQLITE_STATIC);
        else
            sqlite3_bind_null(q, 5);
        rc = sqlite3_step(q);
        rc = rc == SQLITE_DONE ? SQLITE_OK : rc;
    }
    sqlite3_finalize(q);
    return rc == SQLITE_OK ? 0 : store_sq_errno(rc);
}

int store_result_get(struct store *st, uint64_t job, uint32_t idx, char **proof, char **pub, char **timings,
                     char *err, size_t errlen)
{
    sqlite3_stmt *q = NULL;
    int rc = sqlite3_prepare_v2(
        st->db, "SELECT proof, public, timings FROM results WHERE job = ?1 AND idx = ?2", -1, &q, NULL);
    int found = 0;

    *proof = *pub = *timings = NULL;
    if (rc == SQLITE_OK) {
        sqlite3_bind_int64(q, 1, (sqlite3_int64)job);
        sqlite3_bind_int64(q, 2, idx);
        if ((rc = sqlite3_step(q)) == SQLITE_ROW) {
            *proof = col_dup(q, 0);
            *pub = col_dup(q, 1);
            *timings = col_dup(q, 2);
            found = *proof && *pub ? 1 : -ENOMEM;
            rc = SQLITE_OK;
        }
    }
    if (rc == SQLITE_DONE) rc = SQLITE_OK;
    if (rc != SQLITE_OK) found = store_sq_fail(st, rc, "reading a proof", err, errlen);
    if (found < 0) {
        free(*proof);
        free(*pub);
        free(*timings);
        *proof = *pub = *timings = NULL;
        if (found == -ENOMEM && err) snprintf(err, errlen, "out of memory");
    }
    sqlite3_finalize(q);
    return found;
}

/* A job's state as the list shows it: the stored one, or "cancelled" for a failed job
 * a cancel failed a partition of (the API's word for it, in both modes). */
#define LIST_STATE                                                                      \
    "(CASE WHEN j.state = 'failed' AND EXISTS(SELECT 1 FROM parts c WHERE c.job = j.id" \
    " AND c.reason = 'cancelled') THEN 'cancelled' ELSE j.state END)"

int store_jobs_list(struct store *st, const struct store_list_query *q,
                    int (*cb)(void *arg, const struct store_list_row *row), void *arg, int *more, char *err,
                    size_t errlen)
{
    char sql[1024];
    size_t n;
    sqlite3_stmt *jq = NULL;
    int rc, rows = 0, ret = 0;

    *more = 0;
    /* Only the filters given are in the WHERE clause, each one bound: a tenant's list
     * walks its index (jobs_tenant) from its newest job down. */
    n = (size_t)snprintf(sql, sizeof(sql),
                         "SELECT j.id, j.request, " LIST_STATE ", coalesce(j.submitted, 0),"
                         " (SELECT count(*) FROM parts p WHERE p.job = j.id),"
                         " (SELECT count(*) FROM parts p WHERE p.job = j.id AND p.state = 'done'),"
                         " (SELECT count(*) FROM parts p WHERE p.job = j.id AND p.state = 'failed')"
                         " FROM jobs j WHERE j.id < ?1 AND coalesce(j.submitted, 0) >= ?2");
    if (q->tenant)
        n += (size_t)snprintf(sql + n, sizeof(sql) - n, " AND json_extract(j.request, '$.tenant') = ?3");
    if (q->uid >= 0)
        n += (size_t)snprintf(sql + n, sizeof(sql) - n, " AND json_extract(j.request, '$.peer.uid') = ?4");
    if (q->circuit)
        n += (size_t)snprintf(sql + n, sizeof(sql) - n, " AND json_extract(j.request, '$.circuit') = ?5");
    if (q->state) n += (size_t)snprintf(sql + n, sizeof(sql) - n, " AND " LIST_STATE " = ?6");
    snprintf(sql + n, sizeof(sql) - n, " ORDER BY j.id DESC LIMIT ?7");
    rc = sqlite3_prepare_v2(st->db, sql, -1, &jq, NULL);
    if (rc == SQLITE_OK) {
        sqlite3_bind_int64(jq, 1, q->before && q->before <= INT64_MAX ? (sqlite3_int64)q->before : INT64_MAX);
        sqlite3_bind_int64(jq, 2, q->since);
        if (q->tenant) sqlite3_bind_text(jq, 3, q->tenant, -1, SQLITE_STATIC);
        if (q->uid >= 0) sqlite3_bind_int64(jq, 4, q->uid);
        if (q->circuit) sqlite3_bind_text(jq, 5, q->circuit, -1, SQLITE_STATIC);
        if (q->state) sqlite3_bind_text(jq, 6, q->state, -1, SQLITE_STATIC);
        sqlite3_bind_int64(jq, 7, (sqlite3_int64)q->limit + 1); /* one more: is there a next page */
    }
    while (rc == SQLITE_OK && !ret && (rc = sqlite3_step(jq)) == SQLITE_ROW) {
        struct store_list_row row = { .id = (uint64_t)sqlite3_column_int64(jq, 0),
                                      .request = (const char *)sqlite3_column_text(jq, 1),
                                      .state = (const char *)sqlite3_column_text(jq, 2),
                                      .submitted = sqlite3_column_int64(jq, 3),
                                      .parts = (uint32_t)sqlite3_column_int64(jq, 4),
                                      .done = (uint32_t)sqlite3_column_int64(jq, 5),
                                      .failed = (uint32_t)sqlite3_column_int64(jq, 6) };

        rc = SQLITE_OK;
        if ((uint32_t)rows == q->limit) {
            *more = 1;
            break;
        }
        rows++;
        ret = cb(arg, &row);
    }
    if (rc == SQLITE_DONE) rc = SQLITE_OK;
    sqlite3_finalize(jq);
    if (rc != SQLITE_OK) return store_sq_fail(st, rc, "listing jobs", err, errlen);
    return ret < 0 ? ret : rows;
}

int store_results_range(struct store *st, uint64_t job, uint32_t from, uint32_t n,
                        int (*cb)(void *arg, uint32_t idx, enum store_part_state state, const char *proof,
                                  const char *pub),
                        void *arg, char *err, size_t errlen)
{
    sqlite3_stmt *q = NULL;
    int rc = sqlite3_prepare_v2(st->db,
                                "SELECT p.idx, p.state, r.proof, r.public FROM parts p LEFT JOIN results r"
                                " ON r.job = p.job AND r.idx = p.idx WHERE p.job = ?1 AND p.idx >= ?2"
                                " AND p.idx < ?3 ORDER BY p.idx",
                                -1, &q, NULL);
    int ret = 0;

    if (rc == SQLITE_OK) {
        sqlite3_bind_int64(q, 1, (sqlite3_int64)job);
        sqlite3_bind_int64(q, 2, from);
        sqlite3_bind_int64(q, 3, (sqlite3_int64)from + n);
    }
    while (rc == SQLITE_OK && !ret && (rc = sqlite3_step(q)) == SQLITE_ROW) {
        rc = SQLITE_OK;
        ret = cb(arg, (uint32_t)sqlite3_column_int64(q, 0),
                 part_state_of((const char *)sqlite3_column_text(q, 1)),
                 (const char *)sqlite3_column_text(q, 2), (const char *)sqlite3_column_text(q, 3));
    }
    if (rc == SQLITE_DONE) rc = SQLITE_OK;
    if (rc != SQLITE_OK) ret = store_sq_fail(st, rc, "reading proofs", err, errlen);
    sqlite3_finalize(q);
    return ret;
}
