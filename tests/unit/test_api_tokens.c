/* test_api_tokens.c — the tokens file of cuzk-api (api/tokens.c) with no server: a
 * line of the positional fields alone reads as it always has, the named fields that
 * turn callbacks on (callback-hosts=, callback-secret=) come after them in any order,
 * and a named field that is unknown, too short, or followed by a positional one is
 * refused with the line's number. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../../api/api.h"

#include "helper_test.h"

struct api g_api; /* tokens.c's table (main.c's, which the test does not link) */

#define HASH "4d6b82fe37fdb6a13c3d4f356e36290ecbeda0e05c46b48d759818daa37a483a"

/* text as a tokens file, loaded: 0 and tk filled, or -1 and err. */
static int load(const char *text, struct api_tokens *tk, char *err, size_t errlen)
{
    char path[] = "/tmp/test_api_tokens.XXXXXX";
    int fd = mkstemp(path), rc;

    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(write(fd, text, strlen(text)), (ssize_t)strlen(text));
    close(fd);
    rc = api_tokens_load(tk, path, err, errlen);
    unlink(path);
    return rc;
}

TEST(test_api_tokens_named, 1)
{
    struct api_tokens tk;
    char err[512];

    ck_assert_int_eq(load("alice " HASH " 5 2 1M 16\n"
                          "bob " HASH " - - - - callback-secret=0123456789abcdef0123 "
                          "callback-hosts=hooks.example.com,http://10.0.0.5:9000\n"
                          "carol " HASH " 3 callback-hosts=a.example\n",
                          &tk, err, sizeof(err)),
                     0);
    ck_assert_uint_eq(tk.n, 3);
    ck_assert_int_eq(tk.t[0].prio_cap, 5);
    ck_assert_uint_eq(tk.t[0].max_requests, 16);
    ck_assert_str_eq(tk.t[0].callback_hosts, "");
    ck_assert_str_eq(tk.t[0].callback_secret, "");
    ck_assert_str_eq(tk.t[1].callback_hosts, "hooks.example.com,http://10.0.0.5:9000");
    ck_assert_str_eq(tk.t[1].callback_secret, "0123456789abcdef0123");
    ck_assert_int_eq(tk.t[1].prio_cap, -1);
    /* named fields may follow fewer positional ones: the rest stay unset */
    ck_assert_int_eq(tk.t[2].prio_cap, 3);
    ck_assert_uint_eq(tk.t[2].max_running, 0);
    ck_assert_str_eq(tk.t[2].callback_hosts, "a.example");
    api_tokens_free(&tk);
}
END_TEST

TEST(test_api_tokens_named_refused, 1)
{
    static const char *const bad[][2] = {
        { "alice " HASH " callback-colour=blue\n", "callback-colour" },
        { "alice " HASH " callback-secret=short\n", "callback-secret" },
        { "alice " HASH " callback-hosts=\n", "callback-hosts" },
        { "alice " HASH " callback-hosts=a.example 5\n", "KEY=VALUE" },
    };
    struct api_tokens tk;
    char err[512];

    for (size_t i = 0; i < TEST_N(bad); i++) {
        ck_assert_int_eq(load(bad[i][0], &tk, err, sizeof(err)), -1);
        ck_assert_msg(strstr(err, "line 1") && strstr(err, bad[i][1]), "%s: %s", bad[i][0], err);
    }
}
END_TEST

int main(void)
{
    return test_main("api_tokens", NULL);
}
