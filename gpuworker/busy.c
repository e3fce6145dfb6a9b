/* busy.c — the union of device spans and the gaps between them (busy.h). */
#include "gpuworker/busy.h"

#include <string.h>

static uint64_t max_u64(uint64_t a, uint64_t b)
{
    return a > b ? a : b;
}

static uint64_t min_u64(uint64_t a, uint64_t b)
{
    return a < b ? a : b;
}

uint64_t busy_add(struct busy_union *u, uint64_t b, uint64_t e, uint64_t *gap, int *has_gap)
{
    uint64_t cov, lo, hi;
    unsigned i, k;

    *gap = 0;
    *has_gap = 0;
    if (e <= b) return 0;
    /* the gap, against the frontier before this span moves it */
    if (u->spans) {
        *has_gap = 1;
        *gap = e > u->frontier && b > u->frontier ? b - u->frontier : 0;
    }
    u->spans++;
    u->frontier = max_u64(u->frontier, e);
    /* below the kept intervals: counted when they were */
    b = max_u64(b, u->floor);
    if (e <= b) return 0;
    /* newly covered: the span less its overlaps with the (disjoint) kept intervals */
    cov = e - b;
    for (i = 0; i < u->n; i++) {
        lo = max_u64(b, u->lo[i]);
        hi = min_u64(e, u->hi[i]);
        if (hi > lo) cov -= hi - lo;
    }
    u->total_ns += cov;
    /* merge: every kept interval that overlaps or touches [b, e) joins it */
    lo = b;
    hi = e;
    for (i = k = 0; i < u->n; i++) {
        if (u->hi[i] >= b && u->lo[i] <= e) {
            lo = min_u64(lo, u->lo[i]);
            hi = max_u64(hi, u->hi[i]);
        } else {
            u->lo[k] = u->lo[i];
            u->hi[k++] = u->hi[i];
        }
    }
    u->n = k;
    /* insert sorted by lo */
    for (i = u->n; i > 0 && u->lo[i - 1] > lo; i--) {
        u->lo[i] = u->lo[i - 1];
        u->hi[i] = u->hi[i - 1];
    }
    u->lo[i] = lo;
    u->hi[i] = hi;
    u->n++;
    if (u->n == BUSY_KEEP) { /* keep one free: drop the oldest, below the floor now */
        u->floor = max_u64(u->floor, u->hi[0]);
        memmove(u->lo, u->lo + 1, (u->n - 1) * sizeof(u->lo[0]));
        memmove(u->hi, u->hi + 1, (u->n - 1) * sizeof(u->hi[0]));
        u->n--;
    }
    return cov;
}
