/* test_api_signals.c — two checks of cuzk-api (api/) with no server: an input
 * object's keys against a circuit's input signals (api_check_signals: the 422
 * missing_signal / unknown_signal and its members) and the cut of the server's paths
 * from what a tenant reads (api_unpath). */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "../../api/api.h"

#include "helper_test.h"

/* api_check_signals of body against inputs (JSON texts): "" when accepted, else
 * "CODE SIGNAL [INDEX]" from the problem document. */
static const char *check(const char *inputs, const char *body)
{
    static char out[256];
    json_t *in = json_loads(inputs, 0, NULL), *b = json_loads(body, 0, NULL), *p;
    struct api_resp r = { 0 };
    int rc;

    ck_assert_ptr_nonnull(b);
    rc = api_check_signals(&r, in, b);
    out[0] = '\0';
    if (rc) {
        ck_assert_int_eq(r.status, 422);
        p = json_loads(r.body, 0, NULL);
        ck_assert_str_eq(json_string_value(json_object_get(p, "type")), "mismatch");
        ck_assert_ptr_nonnull(strstr(json_string_value(json_object_get(p, "detail")),
                                     json_string_value(json_object_get(p, "signal"))));
        snprintf(out, sizeof(out), "%s %s", json_string_value(json_object_get(p, "code")),
                 json_string_value(json_object_get(p, "signal")));
        if (json_object_get(p, "index"))
            snprintf(out + strlen(out), sizeof(out) - strlen(out), " %lld",
                     (long long)json_integer_value(json_object_get(p, "index")));
        json_decref(p);
    } else
        ck_assert_int_eq(r.status, 0);
    free(r.body);
    json_decref(in);
    json_decref(b);
    return out;
}

static const char mul[] = "[{\"name\":\"x\",\"size\":1},{\"name\":\"k\",\"size\":1}]";
static const char bus[] =
    "[{\"name\":\"a.b\",\"size\":1},{\"name\":\"a.c\",\"size\":2},{\"name\":\"in\",\"size\":3},"
    "{\"name\":\"v[0].y\",\"size\":1},{\"name\":\"v[1].y\",\"size\":1}]";

/* A body and what check() answers it. */
struct signal_case {
    const char *body, *want;
};

/* Each case's body against inputs; a failure names the body. */
static void check_cases(const char *inputs, const struct signal_case *cases, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        const char *got = check(inputs, cases[i].body);

        ck_assert_msg(!strcmp(got, cases[i].want), "body %s: \"%s\", expected \"%s\"", cases[i].body, got,
                      cases[i].want);
    }
}

TEST(test_api_signals_plain, 1)
{
    static const struct signal_case cases[] = {
        { "{\"x\":1,\"k\":\"2\"}", "" },
        { "{\"x\":1}", "missing_signal k" },
        { "{\"k\":1}", "missing_signal x" },
        { "{\"x\":1,\"k\":1,\"y\":1}", "unknown_signal y" },
        { "{\"x\":1,\"k\":1,\"\":1}", "unknown_signal " },
        { "{\"x\":1,\"kk\":1}", "unknown_signal kk" },
        { "{\"x.y\":1,\"k\":1}", "unknown_signal x.y" },
        { "[{\"x\":1,\"k\":1},{\"x\":1,\"k\":1}]", "" },
        { "[{\"x\":1,\"k\":1},{\"k\":1}]", "missing_signal x 1" },
        { "[{\"x\":1,\"k\":1,\"z\":0},{\"k\":1}]", "unknown_signal z 0" },
    };
    /* names not known (a generator without them): nothing is checked here */
    static const struct signal_case unnamed[] = { { "{\"anything\":1}", "" } };

    check_cases(mul, cases, sizeof(cases) / sizeof(cases[0]));
    check_cases("[]", unnamed, 1);
    check_cases("null", unnamed, 1);
}
END_TEST

TEST(test_api_signals_buses, 1)
{
    static const struct signal_case cases[] = {
        { "{\"a\":{\"b\":1,\"c\":[1,2]},\"in\":[1,2,3],\"v\":[{\"y\":1},{\"y\":2}]}", "" },
        { "{\"a.b\":1,\"a.c\":[1,2],\"in\":[1,2,3],\"v[0].y\":1,\"v[1].y\":1}", "" },
        { "{\"a.b\":1,\"in\":[1,2,3],\"v\":[]}", "missing_signal a.c" },
        { "{\"a\":{},\"in\":[1,2,3]}", "missing_signal v[0].y" },
        { "{\"a\":{},\"in\":1,\"v[0].y\":1}", "missing_signal v[1].y" },
        { "{\"a.bb\":1,\"a\":{},\"in\":1,\"v\":1}", "unknown_signal a.bb" },
        { "{\"a\":{},\"in\":1,\"v\":1,\"in.x\":1}", "unknown_signal in.x" },
    };

    check_cases(bus, cases, sizeof(cases) / sizeof(cases[0]));
}
END_TEST

/* The streaming form (keys as the body scanner meets them): an unknown key refused as
 * it arrives, a key given twice refused (400 bad_json), a missing one at the close. */
TEST(test_api_signals_streaming, 1)
{
    json_t *in = json_loads(mul, 0, NULL), *p;
    struct api_resp r = { 0 };
    struct api_sigcheck c;

    ck_assert_int_eq(api_sig_init(&c, in, &r), 0);
    ck_assert_int_eq(api_sig_begin(&c), 0);
    ck_assert_int_eq(api_sig_key(&c, "x", 1, 0, 3), 0);
    ck_assert_int_eq(api_sig_key(&c, "k", 1, 0, 3), 0);
    ck_assert_int_eq(api_sig_end(&c, 3), 0);
    ck_assert_int_eq(api_sig_begin(&c), 0); /* the next object starts afresh */
    ck_assert_int_eq(api_sig_key(&c, "x", 1, 0, 4), 0);
    ck_assert_int_eq(api_sig_key(&c, "x", 1, 0, 4), -1);
    ck_assert_int_eq(r.status, 400);
    p = json_loads(r.body, 0, NULL);
    ck_assert_str_eq(json_string_value(json_object_get(p, "code")), "bad_json");
    ck_assert_str_eq(json_string_value(json_object_get(p, "signal")), "x");
    ck_assert_int_eq(json_integer_value(json_object_get(p, "index")), 4);
    json_decref(p);
    free(r.body);
    memset(&r, 0, sizeof(r));
    ck_assert_int_eq(api_sig_begin(&c), 0);
    ck_assert_int_eq(api_sig_key(&c, "k", 1, 0, 5), 0);
    ck_assert_int_eq(api_sig_end(&c, 5), -1); /* x missing */
    ck_assert_int_eq(r.status, 422);
    free(r.body);
    memset(&r, 0, sizeof(r));
    ck_assert_int_eq(api_sig_begin(&c), 0);
    ck_assert_int_eq(api_sig_key(&c, "xxxxxxxx", 8, 1, 6), -1); /* a key cut short is no name */
    ck_assert_int_eq(r.status, 422);
    free(r.body);
    api_sig_free(&c);
    json_decref(in);
}
END_TEST

TEST(test_api_unpath, 1)
{
    static const char *const cases[][2] = {
        { "zkey /srv/zk/circuit.zkey: truncated", "zkey circuit.zkey: truncated" },
        { "cannot open /tmp/x/run/i.sock (No such file)", "cannot open i.sock (No such file)" },
        { "\"/a/b/c.json\", '/d/e'", "\"c.json\", 'e'" },
        { "dir /var/lib/cuzk/ is full", "dir cuzk is full" },
        { "/ alone", "/ alone" },
        { "//x", "x" },
        { "input-0.json: signal k", "input-0.json: signal k" },
        { "a/b and 1/2 are no paths", "a/b and 1/2 are no paths" },
        { "paths=/p/q,[/r/s]", "paths=q,[s]" },
        { "", "" },
    };

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char *u = api_unpath(cases[i][0]);

        ck_assert_str_eq(u, cases[i][1]);
        free(u);
    }
}
END_TEST

int main(void)
{
    return test_main("api_signals", NULL);
}
