/* bench/ring.c — cross-process ring throughput and wake-up latency.
 *
 *   build/bench/ring [items]     (default 2,000,000 items per throughput run)
 *
 * Throughput: P producer and C consumer processes move `items` indices through one
 * ring (capacity 1024) in a shared segment; items/s from first push to last pop.
 * Wake-up latency: a producer stamps CLOCK_MONOTONIC into shared memory and pushes
 * after the consumer has had 1 ms to settle; the consumer records pop-return minus
 * stamp. "futex" = the consumer sleeps in the kernel (spin 0); "spin" = it polls.
 * Runs in well under 20 s.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "shm/futex.h"
#include "shm/shmlayout.h"
#include "base/os.h"

#define STOP        UINT32_MAX
#define LAT_SAMPLES 1500

struct shared {
    _Atomic uint32_t go;
    _Atomic uint64_t stamp;
    _Atomic uint32_t lat_n;
    uint64_t lat[LAT_SAMPLES];
};

static struct shmlayout_data d;
static struct shared *sh;

static void die(const char *what, int rc)
{
    fprintf(stderr, "bench/ring: %s: %s\n", what, strerror(-rc));
    exit(1);
}

static double throughput(int np, int nc, uint32_t items)
{
    pid_t pids[8];
    uint64_t t0, t1;
    int n = 0, st;

    atomic_store(&sh->go, 0);
    for (int c = 0; c < nc; c++) {
        if (!(pids[n++] = fork())) {
            uint32_t v;

            while (ring_pop_timeout(d.rings[0], &v, -1) == 0 && v != STOP)
                ;
            _exit(0);
        }
    }
    for (int p = 0; p < np; p++) {
        if (!(pids[n++] = fork())) {
            while (!atomic_load(&sh->go)) barrier_cpu_relax();
            for (uint32_t i = 0; i < items / (uint32_t)np; i++) ring_push_timeout(d.rings[0], i, -1);
            _exit(0);
        }
    }
    t0 = os_now_ns();
    atomic_store(&sh->go, 1);
    for (int i = nc; i < n; i++) waitpid(pids[i], &st, 0);
    for (int c = 0; c < nc; c++) ring_push_timeout(d.rings[0], STOP, -1);
    for (int c = 0; c < nc; c++) waitpid(pids[c], &st, 0);
    t1 = os_now_ns();
    return (double)(items / (uint32_t)np * (uint32_t)np) / ((double)(t1 - t0) / 1e9);
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

    return x < y ? -1 : x > y;
}

static void latency(uint32_t spin, uint64_t *p50, uint64_t *p99)
{
    pid_t pid;
    int st;

    atomic_store(&sh->lat_n, 0);
    if (!(pid = fork())) {
        uint32_t v;

        for (;;) {
            if (ring_pop_wait(d.rings[0], &v, -1, spin)) continue;
            uint64_t now = os_now_ns();

            if (v == STOP) _exit(0);
            uint32_t i = atomic_load(&sh->lat_n);

            sh->lat[i] = now - atomic_load(&sh->stamp);
            atomic_store(&sh->lat_n, i + 1);
        }
    }
    for (uint32_t i = 0; i < LAT_SAMPLES; i++) {
        usleep(1000); /* let the consumer settle into its wait */
        atomic_store(&sh->stamp, os_now_ns());
        ring_push_timeout(d.rings[0], i, -1);
        while (atomic_load(&sh->lat_n) <= i) barrier_cpu_relax();
    }
    ring_push_timeout(d.rings[0], STOP, -1);
    waitpid(pid, &st, 0);
    qsort(sh->lat, LAT_SAMPLES, sizeof(sh->lat[0]), cmp_u64);
    *p50 = sh->lat[LAT_SAMPLES / 2];
    *p99 = sh->lat[LAT_SAMPLES * 99 / 100];
}

int main(int argc, char **argv)
{
    struct shmlayout_config cfg = { .n_rings = 1,
                                    .ring_capacity = { 1024 },
                                    .max_jobs = 1,
                                    .max_parts = 1,
                                    .buf_count = 1,
                                    .buf_size = 4096 };
    uint32_t items = argc > 1 ? (uint32_t)strtoul(argv[1], NULL, 0) : 2000000;
    char inst[32], err[256];
    uint64_t f50, f99, s50, s99;
    int rc;

    snprintf(inst, sizeof(inst), "bench%d", (int)getpid());
    if ((rc = shmlayout_data_create(&d, inst, &cfg, SEGMENT_REPLACE, err, sizeof(err)))) {
        fprintf(stderr, "bench/ring: %s\n", err);
        return 1;
    }
    sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (sh == MAP_FAILED) die("mmap", -errno);
    printf("ring benchmark: capacity 1024, processes, %ld CPUs online\n", sysconf(_SC_NPROCESSORS_ONLN));
    printf("%-34s %14s\n", "throughput", "items/s");
    printf("%-34s %14.0f\n", "1 producer / 1 consumer", throughput(1, 1, items));
    printf("%-34s %14.0f\n", "2 producers / 2 consumers", throughput(2, 2, items));
    latency(0, &f50, &f99);
    latency(UINT32_MAX, &s50, &s99);
    printf("\n%-34s %10s %10s\n", "wake-up latency (push -> pop)", "p50 ns", "p99 ns");
    printf("%-34s %10llu %10llu\n", "consumer asleep on futex", (unsigned long long)f50,
           (unsigned long long)f99);
    printf("%-34s %10llu %10llu\n", "consumer spinning", (unsigned long long)s50, (unsigned long long)s99);
    shmlayout_data_detach(&d);
    segment_destroy(inst, SEG_KIND_DATA);
    return 0;
}
