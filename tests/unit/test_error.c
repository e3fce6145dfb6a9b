/* test_error — the one error space and the one exit-code table (base/error.c):
 * CUZK_E_* never meets an errno, every code has a name, a message and an exit code of
 * the table for each kind of program, the documented numbers stay what scripts read,
 * and docs/usage.md's table is the table in the code. Run from the source root (tests/run.sh
 * does), where docs/ is. */
#include <check.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/error.h"
#include "helper_test.h"

static const unsigned kinds[] = { CUZK_PROG_TOOL, CUZK_PROG_CLIENT, CUZK_PROG_CUZKD, CUZK_PROG_STAGE };
#define NKINDS    (sizeof kinds / sizeof kinds[0])
#define MAX_ERRNO 4095 /* the kernel's: no errno is larger */

/* Does the table document `code` for this kind of program? */
static int documented(int code, unsigned kind)
{
    for (size_t i = 0; i < cuzk_exit_table_len; i++)
        if (cuzk_exit_table[i].code == code && (cuzk_exit_table[i].progs & kind)) return 1;
    return 0;
}

TEST(test_error_codes_are_disjoint_from_errno, 1)
{
    ck_assert_int_gt(CUZK_E_BASE, MAX_ERRNO);
    for (int e = 1; e <= MAX_ERRNO; e++) {
        ck_assert_msg(!cuzk_err_is_cuzk(-e) && !cuzk_err_is_cuzk(e), "errno %d taken for a CUZK_E code", e);
        for (int c = CUZK_E_BASE; c < CUZK_E_END; c++) ck_assert_int_ne(-c, -e);
    }
    for (int c = CUZK_E_BASE; c < CUZK_E_END; c++) ck_assert(cuzk_err_is_cuzk(-c) && cuzk_err_is_cuzk(c));
    ck_assert(!cuzk_err_is_cuzk(0));
    ck_assert(!cuzk_err_is_cuzk(-CUZK_E_END));
    /* the collision that was: CUZK_E_DEVICE was 11, EAGAIN */
    ck_assert_int_ne(-CUZK_E_DEVICE, -EAGAIN);
    ck_assert_str_ne(cuzk_strerror(-CUZK_E_DEVICE), cuzk_strerror(-EAGAIN));
}
END_TEST

TEST(test_error_every_code_has_name_message_and_exit_code, 1)
{
    for (int c = CUZK_E_BASE; c < CUZK_E_END; c++) {
        const char *name = cuzk_err_name(-c), *msg = cuzk_strerror(-c);
        ck_assert_msg(name && strcmp(name, "unknown") && *name, "code %d has no name", c);
        ck_assert_msg(msg && strcmp(msg, "unknown error") && *msg, "code %d has no message", c);
        ck_assert_str_eq(cuzk_err_name(c), name); /* either sign */
        for (int d = CUZK_E_BASE; d < c; d++) {
            ck_assert_str_ne(cuzk_err_name(-d), name);
            ck_assert_str_ne(cuzk_strerror(-d), msg);
        }
        for (size_t k = 0; k < NKINDS; k++) {
            int x = cuzk_exit_code(-c, kinds[k]);
            ck_assert_msg(documented(x, kinds[k]), "%s -> exit %d, not in the table for kind %#x", name, x,
                          kinds[k]);
            ck_assert_int_ne(x, 0);
        }
    }
    /* every errno too: each kind exits with a code of its own rows */
    for (int e = 1; e <= 133; e++)
        for (size_t k = 0; k < NKINDS; k++) {
            int x = cuzk_exit_code(-e, kinds[k]);
            ck_assert_msg(documented(x, kinds[k]) && x != 0, "errno %d -> exit %d for kind %#x", e, x,
                          kinds[k]);
        }
    for (size_t k = 0; k < NKINDS; k++) ck_assert_int_eq(cuzk_exit_code(0, kinds[k]), 0);
    ck_assert_str_eq(cuzk_err_name(0), "ok");
    ck_assert_str_eq(cuzk_strerror(-CUZK_E_END), "unknown error");
    ck_assert_str_eq(cuzk_err_name(-CUZK_E_END), "unknown");
}
END_TEST

TEST(test_error_errno_is_read_as_errno, 1)
{
    ck_assert_str_eq(cuzk_err_name(-EAGAIN), "EAGAIN");
    ck_assert_str_eq(cuzk_err_name(-ENOMEM), "ENOMEM");
    ck_assert_str_eq(cuzk_strerror(-ENOENT), strerror(ENOENT));
    ck_assert_str_eq(cuzk_strerror(-CUZK_E_DEVICE_NOMEM), "out of device memory");
    /* an errno maps to the code of its nearest CUZK_E_*, never to its own number */
    ck_assert_int_eq(cuzk_exit_code(-ENOMEM, CUZK_PROG_TOOL), CUZK_EXIT_INTERNAL);
    ck_assert_int_eq(cuzk_exit_code(-EACCES, CUZK_PROG_TOOL), CUZK_EXIT_IO);
    ck_assert_int_eq(cuzk_exit_code(-ENOENT, CUZK_PROG_TOOL), CUZK_EXIT_IO);
    ck_assert_int_eq(cuzk_exit_code(-ENOSPC, CUZK_PROG_TOOL), CUZK_EXIT_OUTPUT);
    ck_assert_int_eq(cuzk_exit_code(-ENODEV, CUZK_PROG_TOOL), CUZK_EXIT_INTERNAL);
    ck_assert_int_eq(cuzk_exit_code(-EAGAIN, CUZK_PROG_TOOL), CUZK_EXIT_INTERNAL); /* not 11, not device */
    ck_assert_int_eq(cuzk_exit_code(-ECONNREFUSED, CUZK_PROG_CLIENT), CUZK_EXIT_NO_DAEMON);
    ck_assert_int_eq(cuzk_exit_code(-ENOENT, CUZK_PROG_CLIENT), CUZK_EXIT_REFUSED); /* fleet: no such job */
    ck_assert_int_eq(cuzk_exit_code(-EPROTO, CUZK_PROG_CLIENT), CUZK_EXIT_REFUSED);
    ck_assert_int_eq(cuzk_exit_code(-ENOMEM, CUZK_PROG_CUZKD), CUZK_EXIT_INTERNAL);
    ck_assert_int_eq(cuzk_exit_code(-EACCES, CUZK_PROG_CUZKD), CUZK_EXIT_IO);
    ck_assert_int_eq(cuzk_exit_code(-ENOMEM, CUZK_PROG_STAGE), CUZK_EXIT_SYSTEM);
}
END_TEST

/* The numbers scripts and tests read (docs/usage.md, "Exit codes"): never renumbered. */
TEST(test_error_documented_numbers_stay, 1)
{
    static const struct {
        int err, tool_exit;
    } tool[] = {
        { CUZK_E_USAGE, 2 },         { CUZK_E_IO, 3 },
        { CUZK_E_FORMAT, 4 },        { CUZK_E_TRUNCATED, 5 },
        { CUZK_E_UNSUPPORTED, 6 },   { CUZK_E_MISMATCH, 7 },
        { CUZK_E_UNSATISFIED, 8 },   { CUZK_E_OUTPUT, 9 },
        { CUZK_E_INTERNAL, 10 },     { CUZK_E_DEVICE, 10 },
        { CUZK_E_DEVICE_NOMEM, 10 },
    };
    for (size_t i = 0; i < sizeof tool / sizeof tool[0]; i++) {
        ck_assert_int_eq(cuzk_exit_code(-tool[i].err, CUZK_PROG_TOOL), tool[i].tool_exit);
        ck_assert_int_eq(cuzk_exit_code(tool[i].err, CUZK_PROG_TOOL), tool[i].tool_exit);
    }
    ck_assert_int_eq(CUZK_EXIT_FALSE, 1);
    ck_assert_int_eq(CUZK_EXIT_NO_DAEMON, 20);
    ck_assert_int_eq(CUZK_EXIT_REFUSED, 21);
    ck_assert_int_eq(CUZK_EXIT_JOB_FAILED, 22);
    ck_assert_int_eq(CUZK_EXIT_TIMEOUT, 23);
    ck_assert_int_eq(CUZK_EXIT_QUOTA, 24);
    ck_assert_int_eq(cuzk_exit_code(-CUZK_E_USAGE, CUZK_PROG_STAGE), 2);
    ck_assert_int_eq(cuzk_exit_code(-CUZK_E_INTERNAL, CUZK_PROG_STAGE), 100);
    ck_assert_int_eq(cuzk_exit_code(-CUZK_E_DEVICE, CUZK_PROG_STAGE), 111);
    ck_assert_int_eq(cuzk_exit_code(-CUZK_E_MISMATCH, CUZK_PROG_STAGE), 111);
    ck_assert_int_eq(cuzk_exit_code(-CUZK_E_USAGE, CUZK_PROG_CUZKD), 2);
    ck_assert_int_eq(cuzk_exit_code(-CUZK_E_IO, CUZK_PROG_CUZKD), 3);
    ck_assert_int_eq(cuzk_exit_code(-CUZK_E_INTERNAL, CUZK_PROG_CUZKD), 10);
    ck_assert_int_eq(cuzk_exit_code(-CUZK_E_MISMATCH, CUZK_PROG_CLIENT), 21);
}
END_TEST

TEST(test_error_table_is_well_formed, 1)
{
    for (size_t i = 0; i < cuzk_exit_table_len; i++) {
        const struct cuzk_exit_row *r = &cuzk_exit_table[i];
        ck_assert_msg(r->code >= 0 && r->code <= 125, "row %zu: code %d is not a plain exit status", i,
                      r->code);
        ck_assert_msg(r->progs && !(r->progs & ~(unsigned)CUZK_PROG_ALL), "row %zu: kinds %#x", i, r->progs);
        ck_assert_msg(r->name && *r->name && r->meaning && *r->meaning, "row %zu has no name or meaning", i);
        ck_assert_msg(!strpbrk(r->meaning, "|\n") && !strpbrk(r->name, "|\n `"), "row %zu breaks a table", i);
        for (size_t j = 0; j < i; j++) {
            const struct cuzk_exit_row *q = &cuzk_exit_table[j];
            if (q->code != r->code) {
                ck_assert_msg(q->code < r->code, "rows %zu, %zu out of order", j, i);
                ck_assert_str_ne(q->name, r->name);
                continue;
            }
            ck_assert_msg(!(q->progs & r->progs), "code %d twice for one kind", r->code);
            ck_assert_str_eq(q->name, r->name);
        }
    }
    /* each kind has 0 and 2 */
    for (size_t k = 0; k < NKINDS; k++) ck_assert(documented(0, kinds[k]) && documented(2, kinds[k]));
}
END_TEST

static char *slurp(FILE *f)
{
    size_t n = 0, cap = 1 << 16;
    char *b = malloc(cap);
    size_t got;
    while (b && (got = fread(b + n, 1, cap - n - 1, f)) > 0)
        if ((n += got) + 1 == cap) b = realloc(b, cap *= 2);
    if (b) b[n] = 0;
    return b;
}

TEST(test_error_readme_table_is_the_code_table, 1)
{
    FILE *f = fopen("docs/usage.md", "r");
    ck_assert_msg(f, "docs/usage.md not found: run from the source root");
    char *readme = slurp(f);
    fclose(f);
    ck_assert_ptr_nonnull(readme);
    const char *b = strstr(readme, "<!-- exit-codes: begin");
    ck_assert_msg(b, "docs/usage.md has no exit-codes: begin marker");
    b = strchr(b, '\n');
    ck_assert_ptr_nonnull(b);
    b++;
    const char *e = strstr(b, "<!-- exit-codes: end");
    ck_assert_msg(e, "docs/usage.md has no exit-codes: end marker");

    char *want = NULL;
    size_t wlen = 0;
    FILE *m = open_memstream(&want, &wlen);
    ck_assert_ptr_nonnull(m);
    cuzk_exit_markdown(m);
    fclose(m);
    ck_assert_msg((size_t)(e - b) == wlen && !memcmp(b, want, wlen),
                  "docs/usage.md's exit-code table differs from base/error.c's: run `make doc-exit-codes`\n"
                  "docs/usage.md:\n%.*s\ncode:\n%s",
                  (int)(e - b), b, want);
    free(want);
    free(readme);
}
END_TEST

TEST(test_error_help_prints_the_rows_asked, 1)
{
    char *out = NULL;
    size_t len = 0;
    FILE *m = open_memstream(&out, &len);
    ck_assert_ptr_nonnull(m);
    cuzk_exit_help(m, CUZK_PROG_TOOL, (const int[]){ 0, 1, 7, -1 });
    fclose(m);
    ck_assert_msg(!strncmp(out, "exit codes:\n", 12), "%s", out);
    ck_assert_msg(strstr(out, "\n    0  ") && strstr(out, "\n    1  ") && strstr(out, "\n    7  "), "%s",
                  out);
    ck_assert_msg(!strstr(out, "\n    2  ") && !strstr(out, "--check"), "%s",
                  out); /* not asked / cuzkd's 1 */
    ck_assert_msg(!strchr(out, '`'), "Markdown quotes in --help: %s", out);
    for (const char *l = out; *l;) {
        size_t n = strcspn(l, "\n");
        ck_assert_msg(n <= 88, "line of %zu columns: %.*s", n, (int)n, l);
        l += n + (l[n] == '\n');
    }
    free(out);

    /* every kind: a row for some kinds only is tagged with them */
    m = open_memstream(&out, &len);
    cuzk_exit_help(m, CUZK_PROG_ALL, NULL);
    fclose(m);
    ck_assert_msg(strstr(out, "  111  [stages] ") && strstr(out, "    3  [cuzkd] ") &&
                      strstr(out, "    0  success"),
                  "%s", out);
    free(out);
}
END_TEST

/* cuzk_cmd_number(c, "--threads", s, max, &v), or with threads not NULL
 * cuzk_cmd_threads(c, s, threads), with stderr caught: its exit code, and what it
 * wrote into err (len bytes). */
static int cmd_number_caught(const char *s, unsigned long long max, unsigned long long *v, unsigned *threads,
                             char *err, size_t len)
{
    static const int codes[] = { 0, 2, -1 };
    static const struct cuzk_cmd cmd = { "cuzk test", "usage: cuzk test\n", codes };
    char path[] = "/tmp/cuzk-test-error-XXXXXX";
    int fd = mkstemp(path), saved, code;
    ssize_t n;

    ck_assert_int_ge(fd, 0);
    unlink(path);
    fflush(stderr);
    saved = dup(2);
    ck_assert_int_ge(saved, 0);
    ck_assert_int_eq(dup2(fd, 2), 2);
    code = threads ? cuzk_cmd_threads(&cmd, s, threads) : cuzk_cmd_number(&cmd, "--threads", s, max, v);
    fflush(stderr);
    ck_assert_int_eq(dup2(saved, 2), 2);
    close(saved);
    n = pread(fd, err, len - 1, 0);
    close(fd);
    err[n > 0 ? n : 0] = '\0';
    return code;
}

/* A tool's numeric option: the whole text a decimal number within the bound, else exit
 * 2 and one line that names the command and the option; a value past the bound is
 * refused, not wrapped (as the tools' own parsers did before struct cuzk_cmd). */
TEST(test_error_cmd_number_takes_only_a_bounded_decimal, 1)
{
    static const char *const bad[] = { "",    "abc",        "12x",
                                       " 3x", "1.5",        "0x10",
                                       "-1",  "4294967296", "99999999999999999999999" };
    unsigned long long v = 7;
    char err[256];

    ck_assert_int_eq(cmd_number_caught("0", UINT_MAX, &v, NULL, err, sizeof err), 0);
    ck_assert_int_eq(v, 0);
    ck_assert_int_eq(cmd_number_caught("4294967295", UINT_MAX, &v, NULL, err, sizeof err), 0);
    ck_assert_uint_eq(v, UINT_MAX);
    ck_assert_str_eq(err, "");
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        ck_assert_int_eq(cmd_number_caught(bad[i], UINT_MAX, &v, NULL, err, sizeof err), CUZK_EXIT_USAGE);
        ck_assert_msg(!strcmp(err, "cuzk test: --threads needs a number\n"), "\"%s\": %s", bad[i], err);
    }
}
END_TEST

/* --threads as every command reads it: cuzk_cmd_number up to UINT_MAX, into an
 * unsigned, left as it was when refused. */
TEST(test_error_cmd_threads_is_a_bounded_unsigned, 1)
{
    unsigned threads = 3;
    char err[256];

    ck_assert_int_eq(cmd_number_caught("4294967295", 0, NULL, &threads, err, sizeof err), 0);
    ck_assert_uint_eq(threads, UINT_MAX);
    ck_assert_int_eq(cmd_number_caught("4294967296", 0, NULL, &threads, err, sizeof err), CUZK_EXIT_USAGE);
    ck_assert_uint_eq(threads, UINT_MAX);
    ck_assert_str_eq(err, "cuzk test: --threads needs a number\n");
}
END_TEST

int main(void)
{
    const struct test_opts o = { .timeout = 60 };

    return test_main("error", &o);
}
