/* rng.h — the benches' random numbers: splitmix64 over a state the bench seeds, fast,
 * and a fixed seed gives a fixed stream, so that runs are comparable. */
#ifndef CUZK_BENCH_RNG_H
#define CUZK_BENCH_RNG_H

#include <stdint.h>

static inline uint64_t bench_rng64(uint64_t *state)
{
    uint64_t z = (*state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

#endif
