/* wtns_shape.c — the shape of a witness, for the prove table's real-shaped rows: what
 * share of its values are 0, 1, and below 2^64 (0 and 1 included), and the mean bit
 * length. A mulchain's witness is dense full-size field elements; a real circuit's is
 * mostly bits and small values, which is what decides how much an MSM over it costs.
 *
 *   wtns_shape FILE.wtns   ->  "zeros=41.2% ones=37.9% small=85.0% bits=52.3 n=16385"
 *
 * Exits 1 when the file does not open as a witness, 2 on usage. Not a benchmark:
 * bench/run.sh skips it. */
#include <stdio.h>

#include "zk/wtns.h"

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: wtns_shape FILE.wtns\n");
        return 2;
    }
    wtns w = { 0 };
    char err[256];
    if (wtns_open(&w, argv[1], err, sizeof err) != 0) {
        fprintf(stderr, "wtns_shape: %s\n", err);
        return 1;
    }
    unsigned long long zeros = 0, ones = 0, small = 0, bits = 0;
    for (uint32_t i = 0; i < w.nwitness; i++) {
        const uint8_t *v = w.values + (size_t)i * w.n8;
        unsigned top = 0; /* bit length: index of the highest set bit, plus one */
        for (uint32_t b = w.n8; b-- > 0;)
            if (v[b]) {
                top = 8 * b + 32 - (unsigned)__builtin_clz(v[b]);
                break;
            }
        zeros += top == 0;
        ones += top == 1;
        small += top <= 64;
        bits += top;
    }
    double n = w.nwitness ? (double)w.nwitness : 1.0;
    printf("zeros=%.1f%% ones=%.1f%% small=%.1f%% bits=%.1f n=%u\n", 100.0 * (double)zeros / n,
           100.0 * (double)ones / n, 100.0 * (double)small / n, (double)bits / n, w.nwitness);
    wtns_close(&w);
    return 0;
}
