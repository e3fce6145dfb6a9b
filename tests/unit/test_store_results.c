/* test_store_results.c — the job store's results, idempotency keys and read-back
 * (store_results.h) on a real SQLite file in a temp dir: round trips across a reopen,
 * one key per tenant, pruning (--store-keep-days) taking a job's proofs and key with
 * it, a version 1 store migrated with its jobs kept, a tenant's job list in pages and
 * by filter (store_jobs_list), and partitions' attempts and proof ranges read back. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <sqlite3.h>

#include "store/store.h"
#include "store/store_results.h"

#include "helper_test.h"

static char err[1024];

static struct store *open_store(void)
{
    struct store *st;

    ck_assert_msg(store_open(&st, test_tmp, "t", err, sizeof(err)) == 0, "%s", err);
    return st;
}

/* Job id of two partitions; key: its idempotency key for tenant acme (NULL none).
 * store_job_add's return. */
static int add_job(struct store *st, uint64_t id, const char *tenant, const char *key, const char *sha)
{
    static const char *const names[2] = { "a", "b" };
    char req[512];

    if (key)
        snprintf(
            req, sizeof(req),
            "{\"results\":\"store\",\"tenant\":\"%s\",\"idempotency_key\":\"%s\",\"body_sha256\":\"%s\"}",
            tenant, key, sha);
    else
        snprintf(req, sizeof(req), "{\"results\":\"store\"}");
    return store_job_add(st, id, req, 2, names, err, sizeof(err));
}

struct got {
    int calls;
    enum store_job_state state;
    uint32_t n;
    enum store_part_state ps[2];
    int64_t submitted;
};

static int got_job(void *arg, const struct store_job *j)
{
    struct got *g = arg;

    g->calls++;
    g->state = j->state_job;
    g->n = j->n_parts;
    g->submitted = j->submitted;
    for (uint32_t i = 0; i < j->n_parts && i < 2; i++) g->ps[i] = j->state[i];
    return 7;
}

/* Job id done with its two proofs, committed. */
static void finish_job(struct store *st, uint64_t id)
{
    for (uint32_t i = 0; i < 2; i++) {
        ck_assert_int_eq(store_result_put(st, id, i, "{\"pi_a\":[]}", "[\"1\",\"2\"]", "{\"prove\":5}"), 0);
        ck_assert_int_eq(store_part_set(st, id, i, STORE_DONE, NULL), 0);
    }
    ck_assert_int_eq(store_job_set(st, id, STORE_JOB_DONE), 0);
    ck_assert_msg(store_commit(st, err, sizeof(err)) == 0, "%s", err);
}

TEST(test_results_round_trip_across_reopen, 1)
{
    struct store *st = open_store();
    struct got g = { 0 };
    char *p, *q, *t;
    int cbret;

    ck_assert_msg(add_job(st, 1, "acme", "k1", "ab") == 0, "%s", err);
    finish_job(st, 1);
    store_close(st);
    st = open_store();
    ck_assert_int_eq(store_job_one(st, 1, got_job, &g, &cbret, err, sizeof(err)), 1);
    ck_assert_int_eq(cbret, 7);
    ck_assert_int_eq(g.calls, 1);
    ck_assert_int_eq(g.state, STORE_JOB_DONE);
    ck_assert_int_eq(g.n, 2);
    ck_assert_int_eq(g.ps[1], STORE_DONE);
    ck_assert(g.submitted > 1600000000 && g.submitted <= (int64_t)time(NULL));
    ck_assert_int_eq(store_result_get(st, 1, 1, &p, &q, &t, err, sizeof(err)), 1);
    ck_assert_str_eq(p, "{\"pi_a\":[]}");
    ck_assert_str_eq(q, "[\"1\",\"2\"]");
    ck_assert_str_eq(t, "{\"prove\":5}");
    free(p);
    free(q);
    free(t);
    /* no row: 0, nothing allocated */
    ck_assert_int_eq(store_result_get(st, 1, 2, &p, &q, &t, err, sizeof(err)), 0);
    ck_assert_ptr_null(p);
    ck_assert_int_eq(store_job_one(st, 2, got_job, &g, &cbret, err, sizeof(err)), 0);
    ck_assert_int_eq(g.calls, 1);
    {
        struct store_part_one one;

        ck_assert_int_eq(store_part_one(st, 1, 1, &one, err, sizeof(err)), 1);
        ck_assert(one.has_part && one.n_parts == 2 && one.state == STORE_DONE);
        ck_assert_str_eq(one.name, "b");
        ck_assert_ptr_nonnull(strstr(one.request, "\"tenant\":\"acme\""));
        free(one.request);
        ck_assert_int_eq(store_part_one(st, 1, 2, &one, err, sizeof(err)), 1);
        ck_assert(!one.has_part && one.n_parts == 2);
        free(one.request);
        ck_assert_int_eq(store_part_one(st, 9, 0, &one, err, sizeof(err)), 0);
    }
    store_close(st);
}
END_TEST

TEST(test_results_idempotency_key_per_tenant, 1)
{
    struct store *st = open_store();
    struct got g = { 0 };
    char sha[65];
    uint64_t job = 0;
    int cbret;

    ck_assert_msg(add_job(st, 1, "acme", "k", "aa") == 0, "%s", err);
    ck_assert_int_eq(store_idem_find(st, "acme", "k", &job, sha, err, sizeof(err)), 1);
    ck_assert_int_eq(job, 1);
    ck_assert_str_eq(sha, "aa");
    ck_assert_int_eq(store_idem_find(st, "other", "k", &job, sha, err, sizeof(err)), 0);
    /* the same key of the same tenant again: the whole job is refused, not recorded */
    ck_assert_int_lt(add_job(st, 2, "acme", "k", "bb"), 0);
    ck_assert_int_eq(store_job_one(st, 2, got_job, &g, &cbret, err, sizeof(err)), 0);
    /* another tenant's key of the same text is its own */
    ck_assert_msg(add_job(st, 3, "other", "k", "cc") == 0, "%s", err);
    ck_assert_int_eq(store_idem_find(st, "other", "k", &job, sha, err, sizeof(err)), 1);
    ck_assert_int_eq(job, 3);
    /* a key without a tenant is its submitter's: "uid:N" */
    {
        static const char *const names[1] = { "a" };

        ck_assert_msg(
            store_job_add(st, 5, "{\"peer\":{\"uid\":1001},\"idempotency_key\":\"k\",\"body_sha256\":\"dd\"}",
                          1, names, err, sizeof(err)) == 0,
            "%s", err);
        ck_assert_int_eq(store_idem_find(st, "uid:1001", "k", &job, sha, err, sizeof(err)), 1);
        ck_assert_int_eq(job, 5);
        ck_assert_int_eq(store_idem_find(st, "", "k", &job, sha, err, sizeof(err)), 0);
    }
    /* a job without a key records none */
    ck_assert_msg(add_job(st, 4, NULL, NULL, NULL) == 0, "%s", err);
    store_close(st);
    st = open_store(); /* durable: the key holds across a reopen (a cuzkd restart) */
    ck_assert_int_eq(store_idem_find(st, "acme", "k", &job, sha, err, sizeof(err)), 1);
    ck_assert_int_eq(job, 1);
    store_close(st);
}
END_TEST

TEST(test_results_pruned_with_their_job, 1)
{
    struct store *st = open_store();
    char *p, *q, *t, sha[65];
    uint64_t job, n = 0;

    ck_assert_msg(add_job(st, 1, "acme", "k1", "aa") == 0, "%s", err);
    ck_assert_msg(add_job(st, 2, "acme", "k2", "bb") == 0, "%s", err);
    finish_job(st, 1);
    finish_job(st, 2);
    /* --store-keep-days: finished before now+10 s, so both are old enough; the newest stays */
    ck_assert_msg(store_prune(st, (int64_t)time(NULL) + 10, &n, err, sizeof(err)) == 0, "%s", err);
    ck_assert_int_eq(n, 1);
    ck_assert_int_eq(store_result_get(st, 1, 0, &p, &q, &t, err, sizeof(err)), 0);
    ck_assert_int_eq(store_idem_find(st, "acme", "k1", &job, sha, err, sizeof(err)), 0);
    ck_assert_int_eq(store_result_get(st, 2, 0, &p, &q, &t, err, sizeof(err)), 1);
    free(p);
    free(q);
    free(t);
    ck_assert_int_eq(store_idem_find(st, "acme", "k2", &job, sha, err, sizeof(err)), 1);
    /* not old enough: kept */
    ck_assert_msg(add_job(st, 3, "acme", "k3", "cc") == 0, "%s", err);
    finish_job(st, 3);
    ck_assert_msg(store_prune(st, (int64_t)time(NULL) - 3600, &n, err, sizeof(err)) == 0, "%s", err);
    ck_assert_int_eq(n, 0);
    store_close(st);
}
END_TEST

TEST(test_results_version1_store_migrated, 1)
{
    struct store *st;
    struct got g = { 0 };
    sqlite3 *db;
    sqlite3_stmt *v;
    char *p, *q, *t;
    int cbret;

    /* A store as a cuzkd of schema version 1 left it, with a running job. */
    ck_assert_int_eq(sqlite3_open(test_db, &db), SQLITE_OK);
    ck_assert_int_eq(
        sqlite3_exec(db,
                     "PRAGMA journal_mode=WAL;"
                     "CREATE TABLE jobs(id INTEGER PRIMARY KEY, request TEXT NOT NULL, "
                     "  state TEXT NOT NULL DEFAULT 'running', submitted INTEGER, finished INTEGER);"
                     "CREATE TABLE parts(job INTEGER NOT NULL REFERENCES jobs(id) ON DELETE CASCADE, "
                     "  idx INTEGER NOT NULL, name TEXT NOT NULL, state TEXT NOT NULL DEFAULT 'queued', "
                     "  reason TEXT, PRIMARY KEY(job, idx)) WITHOUT ROWID;"
                     "CREATE INDEX jobs_state ON jobs(state);"
                     "INSERT INTO jobs(id, request, submitted) VALUES(5, '{}', 1700000000);"
                     "INSERT INTO parts(job, idx, name) VALUES(5, 0, 'a'), (5, 1, 'b');"
                     "PRAGMA user_version = 1;",
                     NULL, NULL, NULL),
        SQLITE_OK);
    sqlite3_close(db);
    st = open_store();
    ck_assert_int_eq(store_job_one(st, 5, got_job, &g, &cbret, err, sizeof(err)), 1);
    ck_assert_int_eq(g.state, STORE_JOB_RUNNING);
    ck_assert_int_eq(g.n, 2);
    ck_assert_int_eq(g.submitted, 1700000000);
    finish_job(st, 5);
    ck_assert_int_eq(store_result_get(st, 5, 0, &p, &q, &t, err, sizeof(err)), 1);
    free(p);
    free(q);
    free(t);
    store_close(st);
    ck_assert_int_eq(sqlite3_open(test_db, &db), SQLITE_OK);
    ck_assert_int_eq(sqlite3_prepare_v2(db, "PRAGMA user_version", -1, &v, NULL), SQLITE_OK);
    ck_assert_int_eq(sqlite3_step(v), SQLITE_ROW);
    ck_assert_int_eq(sqlite3_column_int(v, 0), STORE_SCHEMA_VERSION);
    sqlite3_finalize(v);
    sqlite3_close(db);
}
END_TEST

/* store_jobs_list's callback: each row's id, state and request's metadata in turn. */
struct listed {
    int n;
    uint64_t id[16];
    char state[16][16];
    int has_meta[16];
};

static int list_row(void *arg, const struct store_list_row *row)
{
    struct listed *l = arg;

    ck_assert_int_lt(l->n, 16);
    l->id[l->n] = row->id;
    snprintf(l->state[l->n], sizeof(l->state[0]), "%s", row->state);
    l->has_meta[l->n] = strstr(row->request, "\"metadata\"") != NULL;
    ck_assert_int_eq(row->parts, 2);
    l->n++;
    return 0;
}

static struct listed list(struct store *st, const struct store_list_query *q, int *more)
{
    struct listed l = { 0 };

    ck_assert_msg(store_jobs_list(st, q, list_row, &l, more, err, sizeof(err)) == l.n, "%s", err);
    return l;
}

/* Jobs 1-5 of tenant acme (3 with metadata; 2 done, 4 cancelled), 6 of tenant other,
 * 7 of no tenant: acme's list is 5 4 3 2 1 in pages of 2 (5 4, 3 2, 1) below each
 * page's last id, and by state, circuit and since. */
TEST(test_results_job_list_paged_and_filtered, 1)
{
    static const char *const names[2] = { "a", "b" };
    struct store *st = open_store();
    struct store_list_query q = { .tenant = "acme", .uid = -1, .limit = 2 };
    struct listed l;
    int more;

    for (uint64_t id = 1; id <= 7; id++) {
        char req[256];

        snprintf(req, sizeof(req), "{\"results\":\"store\",\"circuit\":\"%s\"%s%s%s%s}",
                 id == 3 ? "other" : "mul", id <= 5 ? ",\"tenant\":\"acme\"" : "",
                 id == 6 ? ",\"tenant\":\"other\"" : "", id % 2 ? ",\"metadata\":{\"k\":\"v\"}" : "",
                 ",\"peer\":{\"uid\":1000}");
        ck_assert_msg(store_job_add(st, id, req, 2, names, err, sizeof(err)) == 0, "%s", err);
    }
    finish_job(st, 2);
    ck_assert_int_eq(store_job_cancel(st, 4, err, sizeof(err)), 0);
    ck_assert_int_eq(store_job_set(st, 4, STORE_JOB_FAILED), 0);
    ck_assert_int_eq(store_commit(st, err, sizeof(err)), 0);
    l = list(st, &q, &more);
    ck_assert_int_eq(l.n, 2);
    ck_assert(more);
    ck_assert(l.id[0] == 5 && l.id[1] == 4);
    ck_assert_str_eq(l.state[1], "cancelled");
    ck_assert(l.has_meta[0] && !l.has_meta[1]);
    q.before = l.id[1];
    l = list(st, &q, &more);
    ck_assert(l.n == 2 && more && l.id[0] == 3 && l.id[1] == 2);
    ck_assert_str_eq(l.state[1], "done");
    q.before = l.id[1];
    l = list(st, &q, &more);
    ck_assert(l.n == 1 && !more && l.id[0] == 1);
    q = (struct store_list_query){ .tenant = "acme", .uid = -1, .limit = 50, .state = "running" };
    l = list(st, &q, &more);
    ck_assert(l.n == 3 && l.id[0] == 5 && l.id[1] == 3 && l.id[2] == 1);
    q.state = "failed"; /* a cancelled job is not "failed" */
    ck_assert_int_eq(list(st, &q, &more).n, 0);
    q = (struct store_list_query){ .tenant = "acme", .uid = -1, .limit = 50, .circuit = "other" };
    l = list(st, &q, &more);
    ck_assert(l.n == 1 && l.id[0] == 3);
    q = (struct store_list_query){ .tenant = "acme", .uid = -1, .limit = 50, .since = time(NULL) + 3600 };
    ck_assert_int_eq(list(st, &q, &more).n, 0);
    q = (struct store_list_query){ .uid = 1000, .limit = 50 }; /* a user's own: every tenant's here */
    ck_assert_int_eq(list(st, &q, &more).n, 7);
    q = (struct store_list_query){ .tenant = "other", .uid = -1, .limit = 50 };
    l = list(st, &q, &more);
    ck_assert(l.n == 1 && l.id[0] == 6);
    store_close(st);
}
END_TEST

static int attempts_of(void *arg, const struct store_job *j)
{
    memcpy(arg, j->attempts, 2 * sizeof(uint32_t));
    return 0;
}

static int range_row(void *arg, uint32_t idx, enum store_part_state state, const char *proof, const char *pub)
{
    int *n = arg;

    ck_assert_int_eq(idx, 0);
    ck_assert_int_eq(state, STORE_DONE);
    ck_assert_ptr_nonnull(proof);
    ck_assert_ptr_nonnull(pub);
    (*n)++;
    return 0;
}

/* A partition's attempts written in a batch read back across a reopen; a proof range
 * holds each partition's row, a done one with its proof. */
TEST(test_results_attempts_and_range, 1)
{
    struct store *st = open_store();
    uint32_t at[2] = { 9, 9 };
    int cbret, n = 0;

    ck_assert_int_eq(add_job(st, 1, NULL, NULL, NULL), 0);
    ck_assert_int_eq(store_part_attempts(st, 1, 0, 1), 0);
    ck_assert_int_eq(store_part_attempts(st, 1, 1, 2), 0);
    ck_assert_int_eq(store_commit(st, err, sizeof(err)), 0);
    store_close(st);
    st = open_store();
    ck_assert_int_eq(store_job_one(st, 1, attempts_of, at, &cbret, err, sizeof(err)), 1);
    ck_assert(at[0] == 1 && at[1] == 2);
    ck_assert_int_eq(store_part_set(st, 1, 0, STORE_DONE, NULL), 0);
    ck_assert_int_eq(store_result_put(st, 1, 0, "{\"pi_a\":[]}", "[\"1\"]", NULL), 0);
    ck_assert_int_eq(store_commit(st, err, sizeof(err)), 0);
    ck_assert_int_eq(store_results_range(st, 1, 0, 1, range_row, &n, err, sizeof(err)), 0);
    ck_assert_int_eq(n, 1);
    store_close(st);
}
END_TEST

int main(void)
{
    const struct test_opts o = { .setup = test_tmpdir_setup, .teardown = test_tmpdir_teardown };

    return test_main("store_results", &o);
}
