/* test_busy.c — gpuworker/busy.c (a device's busy time and idle gaps from its
 * partitions' spans) against a naive reference:
 *   - the union's length equals the reference (a bitmap of covered nanoseconds over
 *     a small time range) for spans of two and three overlapping in-flight threads arriving in
 *     the order of their ends, and for any order within BUSY_KEEP spans;
 *   - the gap of each span extending the frontier is its begin less the latest end
 *     before it (0 when it overlaps), of a late one 0; the first and empty spans
 *     have none;
 *   - never above the wall time covered by the spans. */
#include <check.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "gpuworker/busy.h"
#include "helper_test.h"

#define RANGE 4096

struct span {
    uint64_t b, e;
};

static uint64_t ref_union(const struct span *s, int n)
{
    static unsigned char cov[RANGE];
    uint64_t t = 0;

    memset(cov, 0, sizeof(cov));
    for (int i = 0; i < n; i++)
        for (uint64_t x = s[i].b; x < s[i].e; x++) cov[x] = 1;
    for (int x = 0; x < RANGE; x++) t += cov[x];
    return t;
}

static int by_end(const void *a, const void *b)
{
    const struct span *x = a, *y = b;

    return x->e < y->e ? -1 : x->e > y->e;
}

/* in-flight threads (2 or 3) each running spans back to back with random idle between them */
static int make_threads(struct span *s, int threads, unsigned *seed)
{
    int n = 0;

    for (int l = 0; l < threads; l++) {
        uint64_t t = 1 + (uint64_t)(rand_r(seed) % 50);

        while (n < 256) {
            uint64_t len = 1 + (uint64_t)(rand_r(seed) % 60);

            if (t + len >= RANGE) break;
            s[n].b = t;
            s[n++].e = t + len;
            t += len + (uint64_t)(rand_r(seed) % 3 ? 0 : rand_r(seed) % 80);
        }
    }
    return n;
}

TEST(union_matches_reference_in_end_order, 40)
{
    struct span s[256];
    unsigned seed = 1234u + (unsigned)_i;
    int n = make_threads(s, 2 + _i % 2, &seed);
    struct busy_union u;
    uint64_t got = 0, gap, front = 0, wall;

    memset(&u, 0, sizeof(u));
    qsort(s, (size_t)n, sizeof(s[0]), by_end);
    for (int i = 0; i < n; i++) {
        int has;

        got += busy_add(&u, s[i].b, s[i].e, &gap, &has);
        /* reference gap: the latest end before this span, in arrival order */
        if (i == 0) {
            ck_assert_int_eq(has, 0);
        } else {
            ck_assert_int_eq(has, 1);
            ck_assert_uint_eq(gap, s[i].e > front && s[i].b > front ? s[i].b - front : 0);
        }
        if (s[i].e > front) front = s[i].e;
    }
    ck_assert_uint_eq(got, u.total_ns);
    ck_assert_uint_eq(got, ref_union(s, n));
    /* never above the wall time from the first begin to the last end */
    {
        uint64_t lo = s[0].b, hi = 0;

        for (int i = 0; i < n; i++) {
            if (s[i].b < lo) lo = s[i].b;
            if (s[i].e > hi) hi = s[i].e;
        }
        wall = hi - lo;
    }
    ck_assert_uint_le(got, wall);
}
END_TEST

TEST(union_any_order_within_keep, 200)
{
    struct span s[BUSY_KEEP];
    unsigned seed = 99u + (unsigned)_i;
    struct busy_union u;
    uint64_t gap;
    int has, n = 1 + rand_r(&seed) % (BUSY_KEEP - 1);

    memset(&u, 0, sizeof(u));
    for (int i = 0; i < n; i++) {
        s[i].b = (uint64_t)(rand_r(&seed) % 400);
        s[i].e = s[i].b + (uint64_t)(rand_r(&seed) % 100);
        busy_add(&u, s[i].b, s[i].e, &gap, &has);
    }
    ck_assert_uint_eq(u.total_ns, ref_union(s, n));
}
END_TEST

TEST(gaps_and_edges, 1)
{
    struct busy_union u;
    uint64_t gap;
    int has;

    memset(&u, 0, sizeof(u));
    ck_assert_uint_eq(busy_add(&u, 100, 200, &gap, &has), 100);
    ck_assert_int_eq(has, 0); /* the first span: no gap */
    ck_assert_uint_eq(busy_add(&u, 250, 300, &gap, &has), 50);
    ck_assert_int_eq(has, 1);
    ck_assert_uint_eq(gap, 50);
    ck_assert_uint_eq(busy_add(&u, 280, 400, &gap, &has), 100); /* overlaps: gap 0 */
    ck_assert_int_eq(has, 1);
    ck_assert_uint_eq(gap, 0);
    ck_assert_uint_eq(busy_add(&u, 210, 240, &gap, &has), 30); /* late, fills the hole */
    ck_assert_int_eq(has, 1);
    ck_assert_uint_eq(gap, 0);
    ck_assert_uint_eq(busy_add(&u, 500, 500, &gap, &has), 0); /* empty */
    ck_assert_int_eq(has, 0);
    ck_assert_uint_eq(u.total_ns, 280);
    /* far more spans than kept: still the exact union in end order */
    for (uint64_t t = 1000; t < 1000 + 100 * 50; t += 50) busy_add(&u, t, t + 40, &gap, &has);
    ck_assert_uint_eq(u.total_ns, 280 + 100 * 40);
    ck_assert_uint_le(u.n, BUSY_KEEP);
}
END_TEST

int main(void)
{
    return test_main("busy", NULL);
}
