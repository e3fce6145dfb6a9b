/* test_store.c — the job store (SQLite backend) on a real file in a temp dir:
 * durability of commits only, resume data round trip, refusals that touch nothing. */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <sqlite3.h>

#include "store/store.h"

#include "helper_test.h"

static char err[1024];

struct seen {
    int jobs;
    uint64_t id;
    uint32_t n;
    enum store_part_state st[8];
    char reason[8][64];
    char name[8][16];
    char request[128];
};

static int collect(void *arg, const struct store_job *j)
{
    struct seen *s = arg;

    s->jobs++;
    s->id = j->id;
    s->n = j->n_parts;
    snprintf(s->request, sizeof(s->request), "%s", j->request);
    for (uint32_t i = 0; i < j->n_parts && i < 8; i++) {
        s->st[i] = j->state[i];
        snprintf(s->name[i], sizeof(s->name[i]), "%s", j->name[i]);
        snprintf(s->reason[i], sizeof(s->reason[i]), "%s", j->reason[i] ? j->reason[i] : "");
    }
    return 0;
}

static void add_job(struct store *st, uint64_t id)
{
    static const char *const names[3] = { "w1", "w2", "w3" };

    ck_assert_msg(store_job_add(st, id, "{\"zkey\":\"/k.zkey\"}", 3, names, err, sizeof(err)) == 0, "%s",
                  err);
}

/* The store of the test's dir, opened (created when missing). */
static struct store *open_store(void)
{
    struct store *st;

    ck_assert_msg(store_open(&st, test_tmp, "t", err, sizeof(err)) == 0, "%s", err);
    return st;
}

/* s = the jobs the store would resume, read afresh. */
static void running(struct store *st, struct seen *s)
{
    memset(s, 0, sizeof(*s));
    ck_assert_int_eq(store_each_running(st, collect, s, err, sizeof(err)), 0);
}

/* The store opened, job id of 3 parts added, its part 0 done (not committed). */
static struct store *open_with_job(uint64_t id)
{
    struct store *st = open_store();

    add_job(st, id);
    ck_assert_int_eq(store_part_set(st, id, 0, STORE_DONE, NULL), 0);
    return st;
}

/* Close st, open the store again and read what it would resume into s. */
static struct store *reopen(struct store *st, struct seen *s)
{
    store_close(st);
    st = open_store();
    running(st, s);
    return st;
}

/* Opening the store is refused (-EPROTO), saying `said`. */
static void check_refused(const char *said)
{
    struct store *st;

    ck_assert_int_eq(store_open(&st, test_tmp, "t", err, sizeof(err)), -EPROTO);
    ck_assert_msg(strstr(err, said), "%s", err);
}

static char *slurp(const char *p, size_t *n)
{
    FILE *f = fopen(p, "rb");
    char *b = malloc(1 << 20);

    ck_assert_ptr_nonnull(f);
    *n = fread(b, 1, 1 << 20, f);
    fclose(f);
    return b;
}

/* The ids of the jobs in the store, ascending, as "1,2,3". */
static void ids(char *out, size_t len)
{
    char p[256];
    sqlite3 *db;
    sqlite3_stmt *q;
    size_t o = 0;

    snprintf(p, sizeof(p), "%s/t.db", test_tmp);
    ck_assert_int_eq(sqlite3_open_v2(p, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
    ck_assert_int_eq(sqlite3_prepare_v2(db, "SELECT id FROM jobs ORDER BY id", -1, &q, NULL), SQLITE_OK);
    out[0] = '\0';
    while (sqlite3_step(q) == SQLITE_ROW && o + 24 < len)
        o +=
            (size_t)snprintf(out + o, len - o, "%s%lld", o ? "," : "", (long long)sqlite3_column_int64(q, 0));
    sqlite3_finalize(q);
    sqlite3_close(db);
}

/* Job id of one partition with request req, committed; decided (done) unless running. */
static void add_owned_job(struct store *st, uint64_t id, const char *req, int running)
{
    static const char *const names[1] = { "w" };

    ck_assert_msg(store_job_add(st, id, req, 1, names, err, sizeof(err)) == 0, "%s", err);
    if (!running) ck_assert_int_eq(store_job_set(st, id, STORE_JOB_DONE), 0);
    ck_assert_int_eq(store_commit(st, err, sizeof(err)), 0);
}

/* store_prune_per_owner with these bounds removes `removed` jobs and leaves the ids left. */
static void prune_leaves(struct store *st, uint64_t keep_jobs, uint64_t keep_bytes, uint64_t removed,
                         const char *left)
{
    char got[256];
    uint64_t n;

    ck_assert_msg(store_prune_per_owner(st, keep_jobs, keep_bytes, &n, err, sizeof(err)) == 0, "%s", err);
    ck_assert_uint_eq(n, removed);
    ids(got, sizeof(got));
    ck_assert_str_eq(got, left);
}

TEST(test_store_prune_per_owner_bounds_count_and_bytes, 1)
{
    struct store *st = open_store();
    char req[128];

    /* uid 1000: decided jobs 1-10, running 16; uid 1001: decided 11-15. */
    for (uint64_t id = 1; id <= 16; id++) {
        snprintf(req, sizeof(req), "{\"peer\":{\"uid\":%d},\"pad\":\"0123456789\"}",
                 id <= 10 || id == 16 ? 1000 : 1001);
        add_owned_job(st, id, req, id == 16);
    }
    /* by count: each uid keeps its 3 newest decided jobs; the running one stays */
    prune_leaves(st, 3, 1u << 20, 9, "8,9,10,13,14,15,16");
    /* by bytes: room for one request each */
    prune_leaves(st, 100, strlen(req), 4, "10,15,16");
    store_close(st);
}

/* The API's tenants share its uid: each is bounded on its own, and the uid's jobs
 * without a tenant (its CLI's) on their own too, so a tenant's flood of decided jobs
 * removes only its own. */
TEST(test_store_prune_per_owner_counts_tenants_apart, 1)
{
    struct store *st = open_store();
    char req[128];

    /* uid 0: tenant bob's 1, no tenant's 2, tenant alice's 3-10; 11 alice's, running */
    for (uint64_t id = 1; id <= 11; id++) {
        snprintf(req, sizeof(req), "{\"peer\":{\"uid\":0}%s}",
                 id == 1       ? ",\"tenant\":\"bob\""
                     : id == 2 ? ""
                               : ",\"tenant\":\"alice\"");
        add_owned_job(st, id, req, id == 11);
    }
    prune_leaves(st, 3, 1u << 20, 5, "1,2,8,9,10,11");
    store_close(st);
}

TEST(test_store_resume_data_round_trips, 1)
{
    struct store *st = open_store();
    struct seen s;

    ck_assert_uint_eq(store_max_job_id(st), 0);
    add_job(st, 7);
    ck_assert_int_eq(store_part_set(st, 7, 0, STORE_DONE, NULL), 0);
    ck_assert_int_eq(store_part_set(st, 7, 1, STORE_FAILED, "bad witness"), 0);
    ck_assert_int_eq(store_part_set(st, 7, 2, STORE_PROVING, NULL), 0);
    ck_assert_msg(store_commit(st, err, sizeof(err)) == 0, "%s", err);
    st = reopen(st, &s);
    ck_assert_uint_eq(store_max_job_id(st), 7);
    ck_assert_int_eq(s.jobs, 1);
    ck_assert_uint_eq(s.id, 7);
    ck_assert_uint_eq(s.n, 3);
    ck_assert_str_eq(s.request, "{\"zkey\":\"/k.zkey\"}");
    ck_assert_int_eq(s.st[0], STORE_DONE);
    ck_assert_int_eq(s.st[1], STORE_FAILED);
    ck_assert_str_eq(s.reason[1], "bad witness");
    ck_assert_int_eq(s.st[2], STORE_PROVING);
    ck_assert_str_eq(s.name[2], "w3");
    /* A decided job is no longer resumed; its id still counts. */
    ck_assert_int_eq(store_job_set(st, 7, STORE_JOB_FAILED), 0);
    ck_assert_msg(store_commit(st, err, sizeof(err)) == 0, "%s", err);
    running(st, &s);
    ck_assert_int_eq(s.jobs, 0);
    ck_assert_uint_eq(store_max_job_id(st), 7);
    store_close(st);
}
END_TEST

TEST(test_store_uncommitted_batch_is_not_kept, 1)
{
    struct store *st = open_with_job(1);
    struct seen s;

    st = reopen(st, &s); /* no commit: the batch is rolled back */
    ck_assert_int_eq(s.jobs, 1);
    ck_assert_int_eq(s.st[0], STORE_QUEUED);
    /* A job taken out again is gone, parts and all. */
    ck_assert_msg(store_job_delete(st, 1, err, sizeof(err)) == 0, "%s", err);
    running(st, &s);
    ck_assert_int_eq(s.jobs, 0);
    store_close(st);
}
END_TEST

TEST(test_store_cancel_fails_unfinished_durably, 1)
{
    struct store *st = open_with_job(3);
    struct seen s;

    ck_assert_int_eq(store_part_set(st, 3, 1, STORE_PROVING, NULL), 0);
    /* The pending batch goes in first, then the cancel. */
    ck_assert_msg(store_job_cancel(st, 3, err, sizeof(err)) == 0, "%s", err);
    st = reopen(st, &s);
    ck_assert_int_eq(s.jobs, 1);
    ck_assert_int_eq(s.st[0], STORE_DONE);
    ck_assert_int_eq(s.st[1], STORE_FAILED);
    ck_assert_str_eq(s.reason[1], "cancelled");
    ck_assert_int_eq(s.st[2], STORE_FAILED);
    store_close(st);
}
END_TEST

TEST(test_store_newer_version_refused_untouched, 1)
{
    struct store *st = (struct store *)1;
    sqlite3 *db;
    char *before, *after, side[160];
    size_t nb, na;

    ck_assert_int_eq(sqlite3_open(test_db, &db), SQLITE_OK);
    ck_assert_int_eq(sqlite3_exec(db, "CREATE TABLE x(a); PRAGMA user_version = 9;", NULL, NULL, NULL),
                     SQLITE_OK);
    sqlite3_close(db);
    before = slurp(test_db, &nb);
    ck_assert_int_eq(store_open(&st, test_tmp, "t", err, sizeof(err)), -EPROTO);
    ck_assert_ptr_null(st);
    ck_assert_msg(strstr(err, "schema version 9") && strstr(err, test_db), "%s", err);
    after = slurp(test_db, &na);
    ck_assert_uint_eq(na, nb);
    ck_assert_int_eq(memcmp(before, after, nb), 0);
    snprintf(side, sizeof(side), "%s-wal", test_db);
    ck_assert_int_ne(access(side, F_OK), 0);
    free(before);
    free(after);
}
END_TEST

TEST(test_store_other_files_refused_untouched, 1)
{
    sqlite3 *db;
    int fd;

    /* Not SQLite at all. */
    fd = open(test_db, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    ck_assert_int_eq(write(fd, "{\"not\": \"a database\"}\n", 23), 23);
    close(fd);
    check_refused("not an SQLite database");
    /* SQLite, but someone else's (no schema version, tables present). */
    unlink(test_db);
    ck_assert_int_eq(sqlite3_open(test_db, &db), SQLITE_OK);
    ck_assert_int_eq(sqlite3_exec(db, "CREATE TABLE mine(a)", NULL, NULL, NULL), SQLITE_OK);
    sqlite3_close(db);
    check_refused("without cuzk's schema version");
}
END_TEST

int main(void)
{
    const struct test_opts o = { .setup = test_tmpdir_setup, .teardown = test_tmpdir_teardown };

    return test_main("store", &o);
}
