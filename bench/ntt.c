/* bench/ntt.c — NTT ns/element: forward, inverse, to_odd_coset at 2^16 and 2^20 (or the
 * sizes given as log2 arguments), BN254 and BLS12-381 Fr, one thread and all CPUs.
 * Prints the best of a few runs per cell (the minimum is the least noisy on a shared box).
 *   usage: ntt [lg ...]     env NTT_BENCH_REPS (default 5) */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "shm/futex.h"
#include "zk/ntt.h"
#include "base/os.h"

int main(int argc, char **argv)
{
    static const field_desc *const fields[] = { &FIELD_BN254_FR, &FIELD_BLS12_381_FR };
    static const char *const names[] = { "forward", "inverse", "to_odd_coset" };
    void (*const ops[])(const ntt_domain *, uint64_t *, unsigned) = { ntt_forward, ntt_inverse,
                                                                      ntt_to_odd_coset };
    unsigned lgs[16] = { 16, 20 }, nlg = 2;
    const char *r = getenv("NTT_BENCH_REPS");
    int reps = r ? atoi(r) : 5;
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);

    if (argc > 1) {
        nlg = 0;
        for (int i = 1; i < argc && nlg < 16; i++) lgs[nlg++] = (unsigned)atoi(argv[i]);
    }
    if (reps < 1) reps = 1;
    printf("ntt: ns/element, best of %d, %ld CPUs\n", reps, cpus);
    printf("%-14s %-4s %-13s %12s %12s\n", "field", "lg", "op", "1 thread", "all threads");
    for (unsigned f = 0; f < 2; f++) {
        for (unsigned k = 0; k < nlg; k++) {
            ntt_domain d;
            int rc = ntt_domain_init(&d, fields[f], lgs[k]);
            if (rc) {
                fprintf(stderr, "ntt: domain 2^%u for %s: error %d\n", lgs[k], fields[f]->name, rc);
                return 1;
            }
            uint64_t *v = aligned_alloc(64, d.n * 32);
            if (!v) return 1;
            for (size_t i = 0; i < d.n * 4; i++)
                v[i] = (i * 0x9e3779b97f4a7c15ULL) >> 4; /* < p: top nibble 0 */
            for (unsigned o = 0; o < 3; o++) {
                double best[2] = { 1e30, 1e30 };
                for (int t = 0; t < 2; t++) {
                    for (int rep = 0; rep < reps; rep++) {
                        double t0 = os_now_s();
                        ops[o](&d, v, t == 0 ? 1 : 0);
                        double dt = os_now_s() - t0;
                        if (dt < best[t]) best[t] = dt;
                    }
                }
                printf("%-14s %-4u %-13s %12.1f %12.1f\n", fields[f]->name, lgs[k], names[o],
                       best[0] * 1e9 / d.n, best[1] * 1e9 / d.n);
            }
            free(v);
            ntt_domain_free(&d);
        }
    }
    return 0;
}
