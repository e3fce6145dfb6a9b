/* test_api_body_scan.c — cuzk-api's streaming scanner of request bodies
 * (api/body_scan.h) against jansson, the parser it replaces on that path: the same
 * verdict on valid and broken JSON, the input objects' byte ranges each one object to
 * jansson, the same result whatever the chunks, and the shape (an object, or 1 to
 * 4096 of them in an array). */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "api/body_scan.h"

#include "helper_body_ranges.h"
#include "helper_test.h"

struct seen {
    struct body_ranges r;
    long keys;
    char first_key[BODY_SCAN_KEY + 1];
};

static int on_begin(void *arg, long index, uint64_t pos)
{
    struct seen *g = arg;

    ck_assert_msg(!body_ranges_begin(&g->r, index, pos), "input %ld after %ld", index, g->r.n);
    return 0;
}

static int on_key(void *arg, long index, const char *key, size_t len, int cut)
{
    struct seen *g = arg;

    (void)index;
    (void)cut;
    if (!g->keys++) {
        memcpy(g->first_key, key, len);
        g->first_key[len] = '\0';
    }
    return 0;
}

static int on_end(void *arg, long index, uint64_t end)
{
    struct seen *g = arg;

    body_ranges_end(&g->r, index, end);
    return 0;
}

static const struct body_scan_ops ops = { on_begin, on_key, on_end };

/* Scan text (len bytes) in chunks of step bytes (0: whole): 0 or the error kind. */
static int scan(const char *text, size_t len, size_t step, struct seen *g, struct body_scan *s)
{
    memset(g, 0, sizeof(*g));
    body_scan_init(s, &ops, g);
    for (size_t off = 0; off < len;) {
        size_t n = step && len - off > step ? step : len - off;

        if (body_scan_feed(s, text + off, n)) return (int)s->err;
        off += n;
    }
    return body_scan_end(s) ? (int)s->err : 0;
}

static int scan_s(const char *text)
{
    static struct seen g;
    struct body_scan s;
    int a = scan(text, strlen(text), 0, &g, &s), b = scan(text, strlen(text), 1, &g, &s);

    ck_assert_int_eq(a, b); /* byte by byte as whole */
    return a;
}

TEST(test_body_scan_verdicts, 1)
{
    static const char *const good[] = {
        "{}",
        " {\"x\":\"7\",\"k\":\"1\"} \n",
        "[{}]",
        "[{\"a\":[1,2,{\"b\":null}]},{\"c\":true,\"d\":false}]",
        "{\"n\":-0.5e+10,\"m\":0,\"o\":-9223372036854775808,\"p\":9223372036854775807,\"q\":1E-400}",
        "{\"s\":\"\\\"\\\\\\/\\b\\f\\n\\r\\t\\u00e9\\ud83d\\ude00 \xc3\xa9 \xf0\x9f\x98\x80\"}",
    };
    static const struct {
        const char *text;
        int err;
    } bad[] = {
        { "", BODY_SCAN_SYNTAX },
        { "  ", BODY_SCAN_SYNTAX },
        { "1", BODY_SCAN_SHAPE },
        { "\"x\"", BODY_SCAN_SHAPE },
        { "[]", BODY_SCAN_COUNT },
        { "[{},1]", BODY_SCAN_SHAPE },
        { "[[]]", BODY_SCAN_SHAPE },
        { "{", BODY_SCAN_SYNTAX },
        { "{}}", BODY_SCAN_SYNTAX },
        { "{} {}", BODY_SCAN_SYNTAX },
        { "{\"a\":1,}", BODY_SCAN_SYNTAX },
        { "{\"a\" 1}", BODY_SCAN_SYNTAX },
        { "{a:1}", BODY_SCAN_SYNTAX },
        { "{\"a\":01}", BODY_SCAN_SYNTAX },
        { "{\"a\":1.}", BODY_SCAN_SYNTAX },
        { "{\"a\":-}", BODY_SCAN_SYNTAX },
        { "{\"a\":1e}", BODY_SCAN_SYNTAX },
        { "{\"a\":9223372036854775808}", BODY_SCAN_SYNTAX },
        { "{\"a\":-9223372036854775809}", BODY_SCAN_SYNTAX },
        { "{\"a\":1e400}", BODY_SCAN_SYNTAX },
        { "{\"a\":tru}", BODY_SCAN_SYNTAX },
        { "{\"a\":nul}", BODY_SCAN_SYNTAX },
        { "{\"a\":\"\\x\"}", BODY_SCAN_SYNTAX },
        { "{\"a\":\"\\u00\"}", BODY_SCAN_SYNTAX },
        { "{\"a\":\"\\u0000\"}", BODY_SCAN_SYNTAX },
        { "{\"a\":\"\\ud800\"}", BODY_SCAN_SYNTAX },
        { "{\"a\":\"\\udc00\"}", BODY_SCAN_SYNTAX },
        { "{\"a\":\"\x01\"}", BODY_SCAN_SYNTAX },
        { "{\"a\":\"\xc0\x80\"}", BODY_SCAN_SYNTAX },         /* overlong */
        { "{\"a\":\"\xed\xa0\x80\"}", BODY_SCAN_SYNTAX },     /* a surrogate in UTF-8 */
        { "{\"a\":\"\xf4\x90\x80\x80\"}", BODY_SCAN_SYNTAX }, /* past U+10FFFF */
        { "{\"a\":\"\xe9\"}", BODY_SCAN_SYNTAX },
        { "{\"a\":[1,2]]", BODY_SCAN_SYNTAX },
    };

    for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
        json_t *j = json_loads(good[i], JSON_REJECT_DUPLICATES, NULL);

        ck_assert_msg(j != NULL, "jansson refuses good case %zu", i);
        json_decref(j);
        ck_assert_msg(scan_s(good[i]) == 0, "good case %zu refused", i);
    }
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        if (bad[i].err == BODY_SCAN_SYNTAX) { /* jansson refuses it too */
            json_t *j = json_loads(bad[i].text, JSON_REJECT_DUPLICATES, NULL);

            ck_assert_msg(j == NULL, "jansson reads bad case %zu", i);
        }
        ck_assert_msg(scan_s(bad[i].text) == bad[i].err, "bad case %zu (%s): %d", i, bad[i].text,
                      scan_s(bad[i].text));
    }
}
END_TEST

TEST(test_body_scan_where, 1)
{
    static struct seen g;
    struct body_scan s;
    const char *t = "{\n \"a\": [1, 2,\n x]}";

    ck_assert_int_eq(scan(t, strlen(t), 0, &g, &s), BODY_SCAN_SYNTAX);
    ck_assert_int_eq(s.err_pos, 17); /* just past the x */
    ck_assert_int_eq(s.err_line, 3);
    ck_assert_int_eq(s.err_col, 2);
    t = "[{},{},7]";
    ck_assert_int_eq(scan(t, strlen(t), 0, &g, &s), BODY_SCAN_SHAPE);
    ck_assert_int_eq(s.err_index, 2);
    /* the key, decoded from its escapes */
    t = "{\"\\u0078\\ud83d\\ude00\":1, \"k\":{\"deeper\":1}}";
    ck_assert_int_eq(scan(t, strlen(t), 3, &g, &s), 0);
    ck_assert_str_eq(g.first_key, "x\xf0\x9f\x98\x80");
    ck_assert_int_eq(g.keys, 2); /* the top level's only */
}
END_TEST

/* A random JSON value of depth at most d into b (a buffer of cap bytes, at *n). */
static void rnd_value(char *b, size_t cap, size_t *n, int d, int obj_only)
{
#define PUT(...) (*n += (size_t)snprintf(b + *n, cap - *n, __VA_ARGS__))
    int k = obj_only ? 0 : rand() % (d > 0 ? 7 : 4);

    if (*n > cap - 256) k = 1;
    switch (k) {
    case 1: PUT("%d", rand() % 2 ? rand() : -rand()); break;
    case 2: PUT("\"s%d\\n\\u00e9\xc3\xa9\"", rand() % 100); break;
    case 3: PUT(rand() % 2 ? "true" : "null"); break;
    case 4: PUT("%d.%de%d", rand() % 100, rand() % 100, rand() % 40 - 20); break;
    case 5:
    case 6: {
        int m = rand() % 4;

        PUT("[");
        for (int i = 0; i < m; i++) {
            if (i) PUT(rand() % 2 ? "," : " ,\n ");
            rnd_value(b, cap, n, d - 1, 0);
        }
        PUT("]");
        break;
    }
    default: {
        int m = rand() % 4;

        PUT("{");
        for (int i = 0; i < m; i++) {
            if (i) PUT(",");
            PUT(" \"k%d_%d\" : ", i, rand() % 1000);
            rnd_value(b, cap, n, d - 1, 0);
        }
        PUT("}");
    }
    }
#undef PUT
}

/* Random bodies, whole and cut into random chunks: the verdict and each input's range
 * as jansson reads them; then each one broken at a random byte. */
TEST(test_body_scan_random, 1)
{
    static char b[1 << 16];
    static struct seen g;
    struct body_scan s;

    srand(7);
    for (int it = 0; it < 2000; it++) {
        size_t n = 0;
        int arr = rand() % 2, m = 1 + rand() % 5;
        json_t *j;

        if (arr) b[n++] = '[';
        for (int i = 0; i < (arr ? m : 1); i++) {
            if (i) b[n++] = ',';
            rnd_value(b, sizeof(b), &n, 4, 1);
        }
        if (arr) b[n++] = ']';
        b[n] = '\0';
        j = json_loadb(b, n, JSON_REJECT_DUPLICATES, NULL);
        ck_assert_msg(j != NULL, "jansson refuses %s", b);
        ck_assert_int_eq(scan(b, n, 1 + (size_t)rand() % 64, &g, &s), 0);
        ck_assert_int_eq(g.r.n, arr ? m : 1);
        ck_assert_msg(body_ranges_match(b, &g.r, j), "the input objects' ranges in %s", b);
        json_decref(j);
        /* one byte changed: both refuse, or both accept */
        {
            size_t at = (size_t)rand() % n;
            char was = b[at];
            int sc;

            b[at] = "{}[]\",:x0 \\"[rand() % 11]; /* no NUL: jansson's buffer reader stops at one */
            j = json_loadb(b, n, JSON_REJECT_DUPLICATES, NULL);
            sc = scan(b, n, 1 + (size_t)rand() % 64, &g, &s);
            if (j && (json_is_object(j) || (json_is_array(j) && json_array_size(j)))) {
                size_t i;
                json_t *e;
                int shape = 1;

                json_array_foreach (json_is_array(j) ? j : NULL, i, e) shape &= json_is_object(e);
                ck_assert_msg(!shape || sc == 0, "jansson reads %s, the scanner refuses it (%s)", b, s.msg);
            }
            if (!j) ck_assert_msg(sc != 0, "the scanner accepts %s", b);
            json_decref(j);
            b[at] = was;
        }
    }
}
END_TEST

TEST(test_body_scan_count_and_depth, 1)
{
    static char b[8 * BODY_SCAN_INPUTS + 16], d[2 * BODY_SCAN_DEPTH + 8];
    static struct seen g;
    struct body_scan s;
    size_t n = 0;

    b[n++] = '[';
    for (int i = 0; i < BODY_SCAN_INPUTS; i++)
        n += (size_t)snprintf(b + n, sizeof(b) - n, "%s{}", i ? "," : "");
    b[n++] = ']';
    ck_assert_int_eq(scan(b, n, 100, &g, &s), 0);
    ck_assert_int_eq(g.r.n, BODY_SCAN_INPUTS);
    memcpy(b + n - 1, ",{}]", 4);
    ck_assert_int_eq(scan(b, n + 3, 100, &g, &s), BODY_SCAN_COUNT);
    /* nesting: BODY_SCAN_DEPTH levels are read, one more is not */
    for (int levels = BODY_SCAN_DEPTH; levels <= BODY_SCAN_DEPTH + 1; levels++) {
        n = 0;
        n += (size_t)snprintf(d, sizeof(d), "{\"a\":");
        for (int i = 1; i < levels; i++) d[n++] = '[';
        for (int i = 1; i < levels; i++) d[n++] = ']';
        d[n++] = '}';
        ck_assert_int_eq(scan(d, n, 0, &g, &s), levels <= BODY_SCAN_DEPTH ? 0 : BODY_SCAN_SYNTAX);
    }
}
END_TEST

int main(void)
{
    return test_main("api_body_scan", NULL);
}
