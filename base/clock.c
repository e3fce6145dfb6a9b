/* clock.c — the monotonic clock and this process's CPU time (os.h), in a file of their
 * own: it needs nothing else of base/, so libcuzk_cupti.so (zk/cuda/cupti_rec.c), a
 * library the CUDA driver loads into any process, compiles it in and stamps its records
 * on the same clock as cuzkd's trace without linking the rest of base/. */
#include "base/os.h"

#include <time.h>

uint64_t os_now_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

uint64_t os_cpu_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

uint64_t os_thread_cpu_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

struct timespec os_deadline_after_ms(uint64_t ms)
{
    uint64_t t = os_now_ns() + ms * 1000000ull;

    return (struct timespec){ .tv_sec = (time_t)(t / 1000000000ull), .tv_nsec = (long)(t % 1000000000ull) };
}
