/* test_out_writer.c — the finalizer's per-out-dir writers (out_writer.h), on real
 * directories: every partition is told once, its two files hold its texts and no temp
 * is left; more directories than writer slots wait their turn; the sticky rule is
 * checked in the writer; a stop hands back what was not written. A hung file system
 * (the deadline, a writer stuck past SIGKILL) is tests/security/hung_outdir.sh: it
 * needs a FUSE mount. */
#include <check.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/error.h"
#include "finalizer/out_writer.h"

#include "helper_test.h"

#define NDIRS (OUT_WRITERS_MAX + 8)

struct told {
    int n[NDIRS * 4];
    int rc[NDIRS * 4];
    char err[NDIRS * 4][256];
};

static void done(void *arg, uint32_t p, int rc, const char *err, const groth16_write_times *wt)
{
    struct told *t = arg;

    (void)wt;
    ck_assert_uint_lt(p, NDIRS * 4);
    t->n[p]++;
    t->rc[p] = rc;
    snprintf(t->err[p], sizeof(t->err[p]), "%s", err);
}

static void submit(struct out_writers *ws, uint32_t p, const char *dir, const char *name, uint32_t owner)
{
    struct out_write w = { .p = p, .odir = dir, .shown_dir = dir, .name = name };
    struct stat st;
    char e[256];

    ck_assert_int_eq(stat(dir, &st), 0);
    w.dev = st.st_dev;
    w.ino = st.st_ino;
    w.owner_known = owner != 0;
    w.owner_uid = owner;
    ck_assert_int_ge(asprintf(&w.proof_text, "{\"p\": %u}", p), 0);
    ck_assert_int_ge(asprintf(&w.public_text, "[\"%u\"]", p), 0);
    ck_assert_int_eq(out_writers_submit(ws, &w, e, sizeof(e)), 0);
}

/* Poll until nothing is pending (a liveness bound of 120 s, not a speed check). */
static void drain(struct out_writers *ws, struct told *t)
{
    for (int k = 0; k < 120000 && out_writers_pending(ws); k++) out_writers_poll(ws, 1, done, t);
    ck_assert_uint_eq(out_writers_pending(ws), 0);
}

static void expect_file(const char *dir, const char *name, const char *kind, const char *want)
{
    char path[512], got[256] = "";
    FILE *f;

    snprintf(path, sizeof(path), "%s/%s.%s.json", dir, name, kind);
    f = fopen(path, "r");
    ck_assert_msg(f != NULL, "%s missing", path);
    ck_assert(fgets(got, sizeof(got), f) != NULL);
    fclose(f);
    ck_assert_str_eq(got, want);
}

static int entries(const char *dir)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    int n = 0;

    ck_assert(d != NULL);
    while ((e = readdir(d)))
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) n++;
    closedir(d);
    return n;
}

/* A test's writers, the answers they gave and its own temp directory. */
struct fixture {
    char dir[32];
    struct told *t;
    struct out_writers *ws;
};

static void fixture_start(struct fixture *x)
{
    snprintf(x->dir, sizeof(x->dir), "/tmp/cuzk-ow-XXXXXX");
    x->t = calloc(1, sizeof(*x->t));
    x->ws = out_writers_new(0, 1, (long)getpid(), NULL);
    ck_assert(x->ws && x->t && mkdtemp(x->dir));
}

/* After out_writers_stop: the temp directory and all in it go. */
static void fixture_end(struct fixture *x)
{
    char cmd[64];

    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", x->dir);
    ck_assert_int_eq(system(cmd), 0);
    free(x->t);
}

TEST(test_out_writer_more_dirs_than_slots, 1)
{
    struct fixture x;
    char dir[NDIRS][64], want[64];

    fixture_start(&x);
    for (int i = 0; i < NDIRS; i++) {
        snprintf(dir[i], sizeof(dir[i]), "%s/d%d", x.dir, i);
        ck_assert_int_eq(mkdir(dir[i], 0755), 0);
    }
    /* Two partitions per directory, all handed over before any answer is read. */
    for (int i = 0; i < NDIRS; i++) {
        submit(x.ws, (uint32_t)i, dir[i], "a", 0);
        submit(x.ws, (uint32_t)(NDIRS + i), dir[i], "b", 0);
    }
    ck_assert_uint_eq(out_writers_pending(x.ws), 2 * NDIRS);
    drain(x.ws, x.t);
    for (int i = 0; i < 2 * NDIRS; i++) {
        ck_assert_int_eq(x.t->n[i], 1);
        ck_assert_msg(x.t->rc[i] == 0, "partition %d: %s", i, x.t->err[i]);
    }
    for (int i = 0; i < NDIRS; i++) {
        snprintf(want, sizeof(want), "{\"p\": %d}", i);
        expect_file(dir[i], "a", "proof", want);
        snprintf(want, sizeof(want), "[\"%d\"]", NDIRS + i);
        expect_file(dir[i], "b", "public", want);
        ck_assert_int_eq(entries(dir[i]), 4); /* no temp file left */
    }
    out_writers_stop(x.ws, 1000, done, x.t);
    fixture_end(&x);
}
END_TEST

TEST(test_out_writer_sticky_rule_in_the_writer, 1)
{
    struct fixture x;
    char path[128];
    FILE *f;

    fixture_start(&x);
    ck_assert_int_eq(chmod(x.dir, 01777), 0);
    snprintf(path, sizeof(path), "%s/x.proof.json", x.dir);
    f = fopen(path, "w"); /* ours: another user's for uid 4242 */
    ck_assert(f != NULL);
    fclose(f);
    ck_assert(geteuid() != 4242);
    submit(x.ws, 0, x.dir, "x", 4242);
    submit(x.ws, 1, x.dir, "y", 4242);
    drain(x.ws, x.t);
    ck_assert_int_eq(x.t->rc[0], -CUZK_E_OUTPUT);
    ck_assert_msg(strstr(x.t->err[0], "another user's file"), "%s", x.t->err[0]);
    ck_assert_msg(x.t->rc[1] == 0, "%s", x.t->err[1]);
    out_writers_stop(x.ws, 1000, done, x.t);
    fixture_end(&x);
}
END_TEST

TEST(test_out_writer_stop_tells_each_once, 1)
{
    struct fixture x;
    char name[8];

    fixture_start(&x);
    for (uint32_t p = 0; p < 16; p++) {
        snprintf(name, sizeof(name), "w%u", p);
        submit(x.ws, p, x.dir, name, 0);
    }
    out_writers_poll(x.ws, 0, done, x.t); /* the first one sent */
    /* No grace: what was written is told 0, the rest handed back; each exactly once. */
    out_writers_stop(x.ws, 0, done, x.t);
    for (uint32_t p = 0; p < 16; p++) {
        ck_assert_int_eq(x.t->n[p], 1);
        ck_assert(x.t->rc[p] == 0 || x.t->rc[p] == OUT_WRITE_HANDBACK);
    }
    fixture_end(&x);
}
END_TEST

int main(void)
{
    return test_main("out_writer", NULL);
}
