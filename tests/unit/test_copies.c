/* test_copies.c — cuzkd's sealed copies of client files (copies.h). */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "supervisor/copies.h"

#include "helper_test.h"

static char dir[64];

static void setup(void)
{
    snprintf(dir, sizeof(dir), "/tmp/test_copies.XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(dir));
}

static void teardown(void)
{
    char cmd[128];

    snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
    (void)!system(cmd);
}

static int make_file(const char *name, const char *text, int flags)
{
    char p[128];
    int fd;

    snprintf(p, sizeof(p), "%s/%s", dir, name);
    fd = open(p, O_RDWR | O_CREAT | O_TRUNC, 0600);
    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(write(fd, text, strlen(text)), (ssize_t)strlen(text));
    close(fd);
    fd = open(p, flags);
    ck_assert_int_ge(fd, 0);
    return fd;
}

TEST(test_copies_are_sealed_equal_and_survive_the_original, 1)
{
    struct copies c;
    char err[256], buf[64] = "";
    int fd = make_file("a.zkey", "hello zkey", O_RDONLY), cp;

    copies_init(&c, 4);
    cp = copies_take(&c, fd, 1, "zkey", "a.zkey", err, sizeof(err));
    ck_assert_msg(cp > 2, "copies_take: %d %s", cp, err);
    /* The client truncates its file: the copy keeps every byte and cannot shrink. */
    {
        char p[128];

        snprintf(p, sizeof(p), "%s/a.zkey", dir);
        ck_assert_int_eq(truncate(p, 0), 0);
    }
    ck_assert_int_eq(pread(cp, buf, sizeof(buf) - 1, 0), 10);
    ck_assert_str_eq(buf, "hello zkey");
    ck_assert_int_eq(fcntl(cp, F_GET_SEALS) & (F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE),
                     F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE);
    ck_assert_int_ne(ftruncate(cp, 0), 0);
    ck_assert_int_eq(copies_count(&c), 1);
    close(fd);
    copies_free(&c);
}
END_TEST

/* One input of a batch (one file, framed): a private sealed copy of its range alone,
 * counted at the range's size; a range past the file's end is refused unread. */
TEST(test_copies_take_a_range_of_a_batch, 1)
{
    struct copies c;
    char err[256], buf[64] = "";
    uint64_t bytes = 0;
    int fd = make_file("batch", "LLLL{a}LLLL{}", O_RDONLY), cp; /* the lengths' bytes aside */

    copies_init(&c, 0);
    cp = copies_take_range(&c, fd, 4, 3, "input", "input-0.json", err, sizeof(err));
    ck_assert_msg(cp > 2, "copies_take_range: %d %s", cp, err);
    ck_assert_int_eq(pread(cp, buf, sizeof(buf) - 1, 0), 3);
    ck_assert_str_eq(buf, "{a}");
    ck_assert_int_eq(fcntl(cp, F_GET_SEALS) & F_SEAL_WRITE, F_SEAL_WRITE);
    ck_assert_int_eq(copies_usage(&c, &bytes), 1);
    ck_assert_uint_eq(bytes, 3);
    ck_assert_int_eq(copies_take_range(&c, fd, 11, 3, "input", "input-1.json", err, sizeof(err)), -ESTALE);
    copies_put(&c, cp);
    ck_assert_int_eq(copies_count(&c), 0);
    close(fd);
    copies_free(&c);
}
END_TEST

TEST(test_copies_shared_by_identity_and_private_closed_on_put, 1)
{
    struct copies c;
    char err[256], p[128];
    int fd = make_file("z.zkey", "circuit", O_RDONLY), a, b, w;

    copies_init(&c, 1);
    a = copies_take(&c, fd, 1, "zkey", "z.zkey", err, sizeof(err));
    b = copies_take(&c, fd, 1, "zkey", "z.zkey", err, sizeof(err));
    ck_assert_int_gt(a, 2);
    ck_assert_int_eq(a, b); /* the same file: one copy, two references */
    w = copies_take(&c, fd, 0, "witness", "z.zkey", err, sizeof(err));
    ck_assert_int_gt(w, 2);
    ck_assert_int_ne(w, a); /* private: always its own */
    ck_assert_int_eq(copies_count(&c), 2);
    copies_put(&c, w);
    ck_assert_int_eq(copies_count(&c), 1);
    /* A rewrite (new ctime) is another file: a new copy. */
    snprintf(p, sizeof(p), "%s/z.zkey", dir);
    usleep(10000);
    {
        int wfd = open(p, O_WRONLY);

        ck_assert_int_eq(pwrite(wfd, "C", 1, 0), 1);
        close(wfd);
    }
    b = copies_take(&c, fd, 1, "zkey", "z.zkey", err, sizeof(err));
    ck_assert_int_gt(b, 2);
    ck_assert_int_ne(b, a);
    /* Unreferenced shared copies: at most keep (1) stay. */
    copies_put(&c, a);
    copies_put(&c, a);
    copies_put(&c, b);
    ck_assert_int_eq(copies_count(&c), 1);
    close(fd);
    copies_free(&c);
}
END_TEST

TEST(test_copies_refuse_what_is_not_a_readable_regular_file, 1)
{
    struct copies c;
    char err[256], p[128];
    int fd;

    copies_init(&c, 4);
    snprintf(p, sizeof(p), "%s/fifo", dir);
    ck_assert_int_eq(mkfifo(p, 0600), 0);
    fd = open(p, O_RDONLY | O_NONBLOCK);
    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(copies_take(&c, fd, 0, "witness", "fifo", err, sizeof(err)), -EINVAL);
    ck_assert_ptr_nonnull(strstr(err, "FIFO"));
    close(fd);
    fd = open(dir, O_RDONLY | O_DIRECTORY);
    ck_assert_int_eq(copies_take(&c, fd, 0, "witness", "d", err, sizeof(err)), -EINVAL);
    close(fd);
    fd = open("/dev/zero", O_RDONLY);
    ck_assert_int_eq(copies_take(&c, fd, 1, "zkey", "zero", err, sizeof(err)), -EINVAL);
    ck_assert_ptr_nonnull(strstr(err, "character device"));
    close(fd);
    fd = make_file("w.wtns", "x", O_WRONLY);
    ck_assert_int_eq(copies_take(&c, fd, 0, "witness", "w.wtns", err, sizeof(err)), -EBADF);
    close(fd);
    snprintf(p, sizeof(p), "%s/w.wtns", dir);
    fd = open(p, O_PATH);
    ck_assert_int_eq(copies_take(&c, fd, 0, "witness", "w.wtns", err, sizeof(err)), -EBADF);
    close(fd);
    ck_assert_int_eq(copies_count(&c), 0);
    copies_free(&c);
}
END_TEST

static int keep_a(void *arg, const char *name)
{
    (void)arg;
    return !strcmp(name, "a");
}

TEST(test_copies_durable_dir_persist_reopen_sweep, 1)
{
    struct copies c;
    char err[512], buf[16], p[128];
    struct stat st;
    int src = make_file("w.wtns", "witness bytes", O_RDONLY), cp, dfd, fd;

    copies_init(&c, 2);
    cp = copies_take(&c, src, 0, "witness", "w.wtns", err, sizeof(err));
    ck_assert_int_gt(cp, 2);
    /* the directory: created 0700, cuzkd's own */
    dfd = copies_dir_open(dir, "inst", err, sizeof(err));
    ck_assert_msg(dfd >= 0, "%s", err);
    snprintf(p, sizeof(p), "%s/inst.copies", dir);
    ck_assert_int_eq(stat(p, &st), 0);
    ck_assert_int_eq(st.st_mode & 0777, 0700);
    /* written whole, 0600; a second write of the same name is a no-op */
    ck_assert_int_eq(copies_persist(dfd, cp, "a", err, sizeof(err)), 0);
    ck_assert_int_eq(copies_persist(dfd, cp, "a", err, sizeof(err)), 1);
    ck_assert_int_eq(fstatat(dfd, "a", &st, 0), 0);
    ck_assert_int_eq(st.st_mode & 0777, 0600);
    fd = copies_open_durable(dfd, "a");
    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(read(fd, buf, sizeof(buf)), 13);
    ck_assert(!memcmp(buf, "witness bytes", 13));
    close(fd);
    /* reopened only inside the directory: no '/', no dot file, no symlink */
    ck_assert_int_eq(copies_open_durable(dfd, "../inst.copies/a"), -EINVAL);
    ck_assert_int_eq(copies_open_durable(dfd, ".tmp.a"), -EINVAL);
    ck_assert_int_eq(symlinkat("a", dfd, "link"), 0);
    ck_assert_int_lt(copies_open_durable(dfd, "link"), 0);
    ck_assert_int_eq(copies_open_durable(dfd, "missing"), -ENOENT);
    /* the sweep keeps what is wanted, removes the rest and temp files */
    ck_assert_int_eq(copies_persist(dfd, cp, "b", err, sizeof(err)), 0);
    ck_assert_int_eq(copies_persist(dfd, cp, ".tmp.x", err, sizeof(err)), 0);
    ck_assert_int_ge(copies_sweep(dfd, keep_a, NULL), 2);
    ck_assert_int_eq(faccessat(dfd, "a", F_OK, 0), 0);
    ck_assert_int_ne(faccessat(dfd, "b", F_OK, AT_SYMLINK_NOFOLLOW), 0);
    ck_assert_int_ne(faccessat(dfd, "link", F_OK, AT_SYMLINK_NOFOLLOW), 0);
    close(dfd);
    /* a copies dir open to others is refused */
    ck_assert_int_eq(chmod(p, 0777), 0);
    ck_assert_int_eq(copies_dir_open(dir, "inst", err, sizeof(err)), -EPERM);
    ck_assert_ptr_nonnull(strstr(err, "0700"));
    copies_put(&c, cp);
    copies_free(&c);
    close(src);
}
END_TEST

int main(void)
{
    const struct test_opts o = { .setup = setup, .teardown = teardown };

    return test_main("copies", &o);
}
