/* test_display.c — names escaped for terminals and logs (display.h), and the input
 * bounds read from headers before any copy (input_bounds.h), and the ELF check of a
 * witness generator (wgen_trust.h) on what is not one. */
#include <check.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/display.h"
#include "supervisor/wgen_trust.h"

#include "helper_test.h"

TEST(test_display_escapes_controls_bidi_and_bad_utf8_keeps_text, 1)
{
    char out[256];

    ck_assert_str_eq(display_escape(out, sizeof(out), "plain w1.wtns"), "plain w1.wtns");
    /* other UTF-8 text is kept as it is */
    ck_assert_str_eq(display_escape(out, sizeof(out),
                                    "p\xc3\xa9"
                                    "ch\xc3\xa9 \xe2\x82\xac"),
                     "p\xc3\xa9"
                     "ch\xc3\xa9 \xe2\x82\xac");
    /* C0, DEL, ESC: \xNN */
    ck_assert_str_eq(display_escape(out, sizeof(out), "a\x1b[2Jb\x7f\n"), "a\\x1b[2Jb\\x7f\\x0a");
    /* C1 (U+0085 NEL), RLO (U+202E), isolates, zero width, BOM: \uXXXX */
    ck_assert_str_eq(display_escape(out, sizeof(out), "x\xc2\x85y"), "x\\u0085y");
    ck_assert_str_eq(display_escape(out, sizeof(out), "a\xe2\x80\xaetxt.exe"), "a\\u202etxt.exe");
    ck_assert_str_eq(display_escape(out, sizeof(out), "\xe2\x81\xa6\xe2\x80\x8b\xef\xbb\xbf"),
                     "\\u2066\\u200b\\ufeff");
    /* bytes that are no UTF-8 (a lone continuation, an overlong, a surrogate) */
    ck_assert_str_eq(display_escape(out, sizeof(out), "\x80\xc0\xaf\xed\xa0\x80"),
                     "\\x80\\xc0\\xaf\\xed\\xa0\\x80");
    /* a backslash is doubled, so "\x1b" typed is not an escaped ESC */
    ck_assert_str_eq(display_escape(out, sizeof(out), "\\x1b"), "\\\\x1b");
    /* cut short whole, never mid-escape, always terminated */
    ck_assert_str_eq(display_escape(out, 6,
                                    "ab\x1b"
                                    "cd"),
                     "ab");
    ck_assert_str_eq(display_escape(out, 1, "abc"), "");
}

TEST(test_wgen_elf_check_refuses_what_is_no_generator_unrun, 1)
{
    char err[512], p[] = "/tmp/test_display.XXXXXX";
    int fd = mkstemp(p);

    ck_assert_int_ge(fd, 0);
    /* not ELF */
    ck_assert_int_eq(write(fd, "#!/bin/sh\n", 10), 10);
    ck_assert_int_lt(wgen_trust_elf(fd, err, sizeof(err)), 0);
    ck_assert_ptr_nonnull(strstr(err, "not an ELF file"));
    close(fd);
    unlink(p);
    /* an ELF object that is no generator: this test program */
    fd = open("/proc/self/exe", O_RDONLY);
    ck_assert_int_ge(fd, 0);
    ck_assert_int_lt(wgen_trust_elf(fd, err, sizeof(err)), 0);
    close(fd);
}

int main(void)
{
    const struct test_opts o = { 0 };

    return test_main("display", &o);
}
