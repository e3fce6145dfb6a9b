/* test_nvml.c — gpuworker/nvml.c (NVML through dlopen) and the exporter's names for the
 * device figures (shm/stats_reader.c):
 *   - a machine without the library: nvml_open fails with -ENOENT and a sentence,
 *     leaves nothing behind, and nvml_close(NULL) is harmless;
 *   - a fake libnvidia-ml built here (cc -shared; the case SKIPs without a compiler)
 *     that exports NVML's symbols with known answers: nvml_open succeeds and
 *     nvml_sample reads each figure; one that lacks a symbol is -ENOSYS; a device
 *     named by its PCI address is found by it whatever the index says, a wrong address
 *     is -EIO naming it, and a library without the lookup by address is -ENOSYS (never
 *     a fall back to the index, which could be another device);
 *   - the Prometheus text of a gpuworker slot names cuzk_gpu_busy_seconds_total,
 *     cuzk_gpu_lane_occupied_seconds_total, the cuzk_gpu_idle_gap_seconds histogram,
 *     cuzk_gpuworker_cpu_seconds and, only when nvml_ok is 1, the NVML gauges, scaled
 *     to base units. */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gpuworker/nvml.h"
#include "helper_test.h"
#include "shm/stats.h"
#include "shm/stats_reader.h"

TEST(absent_library, 1)
{
    struct nvml *n = (struct nvml *)1;
    char why[256] = "";

    ck_assert_int_eq(nvml_open(&n, "libnvidia-ml-not-here.so.1", 0, NULL, why, sizeof(why)), -ENOENT);
    ck_assert_ptr_null(n);
    ck_assert_ptr_nonnull(strstr(why, "libnvidia-ml-not-here.so.1"));
    nvml_close(NULL);
}
END_TEST

static const char fake_src[] =
    "typedef struct { unsigned gpu, memory; } U; typedef struct { unsigned long long t, f, u; } M;\n"
    "static int dev;\n"
    "int nvmlInit_v2(void) { return 0; }\n"
    "int nvmlShutdown(void) { return 0; }\n"
    "int nvmlDeviceGetHandleByIndex_v2(unsigned i, void **d) { if (i) return 2; *d = &dev; return 0; }\n"
    "int nvmlDeviceGetUtilizationRates(void *d, U *u) { u->gpu = 42; u->memory = 7; return d == &dev ? 0 : 1; }\n"
    "int nvmlDeviceGetMemoryInfo(void *d, M *m) { m->t = 80ull << 30; m->u = 123456789; m->f = m->t - m->u; "
    "return d == &dev ? 0 : 1; }\n"
    "int nvmlDeviceGetPowerUsage(void *d, unsigned *p) { *p = 250000; return d == &dev ? 0 : 1; }\n"
    "#ifndef NO_BUS\n"
    "int nvmlDeviceGetHandleByPciBusId_v2(const char *b, void **d) {\n"
    "  const char *want = \"0000:3B:00.0\"; int i;\n"
    "  for (i = 0; want[i] && b[i] == want[i]; i++) ;\n"
    "  if (want[i] || b[i]) return 2; *d = &dev; return 0; }\n"
    "#endif\n"
    "#ifndef NO_CLOCK\n"
    "int nvmlDeviceGetClockInfo(void *d, int t, unsigned *c) { *c = t == 1 ? 1980 : 0; return d == &dev ? 0 : 1; }\n"
    "#endif\n";

/* Build the fake library into dir (extra: more cc flags). 0, or -1 without a compiler. */
static int build_fake(const char *dir, const char *name, const char *extra)
{
    char src[512], cmd[2048];
    FILE *f;

    snprintf(src, sizeof(src), "%s/fake_nvml.c", dir);
    f = fopen(src, "w");
    if (!f) return -1;
    fputs(fake_src, f);
    fclose(f);
    snprintf(cmd, sizeof(cmd), "${CC:-cc} -shared -fPIC %s -o %s/%s %s 2>/dev/null", extra, dir, name, src);
    return system(cmd) == 0 ? 0 : -1;
}

TEST(fake_library_samples, 1)
{
    char dir[] = "/tmp/test_nvml.XXXXXX", lib[512], why[256] = "";
    struct nvml *n = NULL;
    struct nvml_sample s;

    ck_assert_ptr_nonnull(mkdtemp(dir));
    if (build_fake(dir, "libfake-nvml.so", "")) {
        printf("SKIP fake_library_samples: no C compiler to build the fake NVML\n");
        return;
    }
    snprintf(lib, sizeof(lib), "%s/libfake-nvml.so", dir);
    ck_assert_int_eq(nvml_open(&n, lib, 1, NULL, why, sizeof(why)), -EIO); /* no device 1 */
    ck_assert_ptr_null(n);
    ck_assert_int_eq(nvml_open(&n, lib, 0, "", why, sizeof(why)), 0);
    ck_assert_int_eq(nvml_sample(n, &s), 0);
    ck_assert_uint_eq(s.util_pct, 42);
    ck_assert_uint_eq(s.mem_used, 123456789);
    ck_assert_uint_eq(s.power_mw, 250000);
    ck_assert_uint_eq(s.sm_clock_mhz, 1980);
    nvml_close(n);
    ck_assert_int_eq(build_fake(dir, "libfake-old.so", "-DNO_CLOCK"), 0);
    snprintf(lib, sizeof(lib), "%s/libfake-old.so", dir);
    ck_assert_int_eq(nvml_open(&n, lib, 0, "", why, sizeof(why)), -ENOSYS);
    ck_assert_ptr_null(n);
    snprintf(lib, sizeof(lib), "rm -rf %s", dir);
    ck_assert_int_eq(system(lib), 0);
}
END_TEST

TEST(fake_library_by_address, 1)
{
    char dir[] = "/tmp/test_nvml.XXXXXX", lib[512], why[256] = "";
    struct nvml *n = NULL;
    struct nvml_sample s;

    ck_assert_ptr_nonnull(mkdtemp(dir));
    ck_assert_int_eq(build_fake(dir, "libfake-nvml.so", ""), 0);
    snprintf(lib, sizeof(lib), "%s/libfake-nvml.so", dir);
    /* index 7 is no device of the fake: the address alone decides */
    ck_assert_int_eq(nvml_open(&n, lib, 7, "0000:3B:00.0", why, sizeof(why)), 0);
    ck_assert_int_eq(nvml_sample(n, &s), 0);
    ck_assert_uint_eq(s.util_pct, 42);
    nvml_close(n);
    /* index 0 is a device of the fake, the address is not: refused, not the index's */
    ck_assert_int_eq(nvml_open(&n, lib, 0, "0000:86:00.0", why, sizeof(why)), -EIO);
    ck_assert_ptr_null(n);
    ck_assert_ptr_nonnull(strstr(why, "0000:86:00.0"));
    ck_assert_int_eq(build_fake(dir, "libfake-nobus.so", "-DNO_BUS"), 0);
    snprintf(lib, sizeof(lib), "%s/libfake-nobus.so", dir);
    ck_assert_int_eq(nvml_open(&n, lib, 0, "0000:3B:00.0", why, sizeof(why)), -ENOSYS);
    ck_assert_ptr_null(n);
    ck_assert_int_eq(nvml_open(&n, lib, 0, NULL, why, sizeof(why)), 0); /* by index: fine */
    nvml_close(n);
    snprintf(lib, sizeof(lib), "rm -rf %s", dir);
    ck_assert_int_eq(system(lib), 0);
}
END_TEST

/* A reading of one gpuworker slot, named as gpuworker/worker.c names them. */
static void fake_reading(struct stats_reading *t, struct stats_proc *p, int nvml_ok)
{
    struct stats_snapshot *s = &p->s;

    memset(t, 0, sizeof(*t));
    memset(p, 0, sizeof(*p));
    snprintf(t->instance, sizeof(t->instance), "t");
    t->running = t->found = 1;
    t->n = 1;
    t->p = p;
    s->role = STATS_ROLE_GPUWORKER;
    s->index = 3;
    s->generation = 1;
    strcpy(s->counter_names[9], "lane_occupy_ns");
    strcpy(s->counter_names[12], "gpu_busy_ns");
    s->counters[9] = 2000000000ull;
    s->counters[12] = 1500000000ull;
    strcpy(s->hist_names[0], "gap");
    s->hists[0].count = 3;
    s->hists[0].sum_ns = 3000000;
    s->hists[0].bucket[stats_hist_bucket(1000000)] = 3;
    strcpy(s->gauge_names[3], "cpu_ns");
    strcpy(s->gauge_names[4], "nvml_ok");
    strcpy(s->gauge_names[5], "nvml_util_pct");
    strcpy(s->gauge_names[6], "nvml_mem_bytes");
    strcpy(s->gauge_names[7], "nvml_power_mw");
    strcpy(s->gauge_names[8], "nvml_sm_mhz");
    s->gauges[3] = 2500000000ull;
    s->gauges[4] = (uint64_t)nvml_ok;
    s->gauges[5] = 42;
    s->gauges[6] = 1ull << 30;
    s->gauges[7] = 250000;
    s->gauges[8] = 1980;
}

static char *prom(const struct stats_reading *t)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);

    ck_assert_ptr_nonnull(f);
    stats_reading_prometheus(f, t);
    fclose(f);
    return buf;
}

TEST(exporter_names, 1)
{
    struct stats_reading t;
    struct stats_proc p;
    char *txt;

    fake_reading(&t, &p, 1);
    txt = prom(&t);
    static const char *const want[] = {
        "# TYPE cuzk_gpu_busy_seconds_total counter\n",
        "cuzk_gpu_busy_seconds_total{device=\"3\"} 1.500000000\n",
        "cuzk_gpu_lane_occupied_seconds_total{device=\"3\"} 2.000000000\n",
        "# TYPE cuzk_gpu_idle_gap_seconds histogram\n",
        "cuzk_gpu_idle_gap_seconds_bucket{device=\"3\",le=\"+Inf\"} 3\n",
        "cuzk_gpu_idle_gap_seconds_count{device=\"3\"} 3\n",
        "cuzk_gpu_idle_gap_seconds_sum{device=\"3\"} 0.003000000\n",
        "cuzk_gpu_nvml_up{device=\"3\"} 1\n",
        "cuzk_gpu_utilization_ratio{device=\"3\"} 0.42\n",
        "cuzk_gpu_memory_used_bytes{device=\"3\"} 1073741824\n",
        "cuzk_gpu_power_watts{device=\"3\"} 250\n",
        "cuzk_gpu_sm_clock_hertz{device=\"3\"} 1980000000\n",
        "cuzk_gpuworker_cpu_seconds{device=\"3\"} 2.5\n",
    };
    for (size_t i = 0; i < sizeof want / sizeof *want; i++)
        ck_assert_msg(strstr(txt, want[i]) != NULL, "missing: %s", want[i]);
    /* the generic families are still there */
    ck_assert_ptr_nonnull(
        strstr(txt, "cuzk_stage_counter_total{stage=\"gpuworker\",index=\"3\",counter=\"gpu_busy_ns\"}"));
    ck_assert_ptr_nonnull(
        strstr(txt, "cuzk_stage_step_seconds_count{stage=\"gpuworker\",index=\"3\",step=\"gap\"} 3\n"));
    free(txt);
    /* without NVML: up 0, no utilization sample (a 0 would read as an idle device) */
    fake_reading(&t, &p, 0);
    txt = prom(&t);
    ck_assert_ptr_nonnull(strstr(txt, "cuzk_gpu_nvml_up{device=\"3\"} 0\n"));
    ck_assert_ptr_null(strstr(txt, "cuzk_gpu_utilization_ratio{"));
    ck_assert_ptr_null(strstr(txt, "cuzk_gpu_power_watts{"));
    ck_assert_ptr_nonnull(strstr(txt, "cuzk_gpuworker_cpu_seconds{device=\"3\"} 2.5\n"));
    free(txt);
}
END_TEST

int main(void)
{
    return test_main("nvml", NULL);
}
