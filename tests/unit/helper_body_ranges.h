/* helper_body_ranges.h — the input objects' byte ranges as cuzk-api's body scanner
 * reports them (api/body_scan.h), and their check against jansson's reading of the
 * whole body: what test_api_body_scan.c and the fuzzer (tests/fuzz/fuzz_api.c) both
 * check, each failing in its own way. Static inline: the fuzzer links no test helper. */
#ifndef CUZK_TEST_HELPER_BODY_RANGES_H
#define CUZK_TEST_HELPER_BODY_RANGES_H

#include <stdint.h>

#include <jansson.h>

#include "api/body_scan.h"

struct body_ranges {
    uint64_t begin[BODY_SCAN_INPUTS], end[BODY_SCAN_INPUTS];
    long n;
};

/* The scanner's input_begin: 0, or -1 when the index is out of order (not 0, 1, 2 ...
 * in an array; -1 for a lone object). */
static inline int body_ranges_begin(struct body_ranges *g, long index, uint64_t pos)
{
    if (index != (index < 0 ? -1 : g->n)) return -1;
    g->begin[index < 0 ? 0 : index] = pos;
    return 0;
}

/* The scanner's input_end. */
static inline void body_ranges_end(struct body_ranges *g, long index, uint64_t end)
{
    g->end[index < 0 ? 0 : index] = end;
    g->n = (index < 0 ? 0 : index) + 1;
}

/* 1 when the ranges of body are whole's input objects, as many and each one, read
 * alone, equal to its object (whole: an object, or an array of them); else 0. */
static inline int body_ranges_match(const char *body, const struct body_ranges *g, json_t *whole)
{
    if (g->n != (json_is_object(whole) ? 1 : (long)json_array_size(whole))) return 0;
    for (long k = 0; k < g->n; k++) {
        json_t *o = json_loadb(body + g->begin[k], g->end[k] - g->begin[k], 0, NULL);
        int same = json_equal(o, json_is_object(whole) ? whole : json_array_get(whole, (size_t)k));

        json_decref(o);
        if (!same) return 0;
    }
    return 1;
}

#endif
