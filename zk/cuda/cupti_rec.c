/* cupti_rec.c — libcuzk_cupti.so, a CUPTI activity recorder loaded by the CUDA driver
 * as an injection library (CUDA_INJECTION64_PATH), so it works with the statically
 * linked runtime of cuzk-gpuworker (no LD_PRELOAD of a libcudart to hook).
 *
 *   CUDA_INJECTION64_PATH=.../libcuzk_cupti.so CUZK_CUPTI_OUT=FILE cuzkd ...
 *
 * The driver calls InitializeInjection() at cuInit in every process that starts CUDA;
 * with CUZK_CUPTI_OUT unset it does nothing. "%p" in the name becomes the process id
 * (one file per process: each keeps its own buffered stream). The file, one record a
 * line, read by `cuzk trace --cupti` (tools/cupti_trace.h):
 *
 *   cuzk-cupti 1
 *   clock CUPTI_NS MONO_NS                       cuptiGetTimestamp and CLOCK_MONOTONIC,
 *                                                read back to back, at start and at exit
 *   kernel DEVICE STREAM START END NAME          START, END: ns on CUPTI's clock
 *   memcpy DEVICE STREAM START END BYTES KIND    KIND: HtoD, DtoH, DtoD, ...
 *   memset DEVICE STREAM START END BYTES
 *
 * CLOCK_MONOTONIC is read by base/'s os_now_ns (base/clock.c, compiled into this
 * library), the clock cuzkd's trace is stamped on.
 *
 * libcupti is dlopen'ed, not linked: a machine whose toolkit lacks it, or has another
 * major version (whose records have another layout), gets one line on stderr and an
 * unrecorded run, where a link-time dependency would make the driver fail to load the
 * injection and, with it, CUDA. CUZK_CUPTI_LIB names the library; the default is
 * libcupti.so on the loader's path, then the toolkit this was built against.
 * Any CUPTI or write error is one line on stderr and recording stops; the run goes on. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cupti.h>

#include "base/os.h"

#define REC_BUF_BYTES (8u << 20) /* one activity buffer: CUPTI asks as it needs */

/* The one symbol the driver looks up; everything else, base/clock.c's os_now_ns
 * included, is built hidden (-fvisibility=hidden), so nothing of this library
 * interposes on a name of the process it is loaded into. */
__attribute__((visibility("default"))) int InitializeInjection(void);

static struct {
    __typeof__(cuptiGetVersion) *get_version;
    __typeof__(cuptiGetResultString) *result_string;
    __typeof__(cuptiGetTimestamp) *timestamp;
    __typeof__(cuptiActivityEnable) *enable;
    __typeof__(cuptiActivityDisable) *disable;
    __typeof__(cuptiActivityRegisterCallbacks) *register_callbacks;
    __typeof__(cuptiActivityGetNextRecord) *next_record;
    __typeof__(cuptiActivityGetNumDroppedRecords) *dropped;
    __typeof__(cuptiActivityFlushAll) *flush_all;
} cu;

static pthread_mutex_t rec_lock = PTHREAD_MUTEX_INITIALIZER;
static FILE *rec_out;   /* NULL: not recording (off, or stopped by an error) */
static int rec_started; /* InitializeInjection ran once */

/* One line on stderr; recording stops (the file keeps what was written). Called with
 * rec_lock held. */
static void rec_stop(const char *what, CUptiResult r)
{
    const char *s = NULL;

    if (r != CUPTI_SUCCESS && cu.result_string) cu.result_string(r, &s);
    fprintf(stderr, "cuzk-cupti[%d]: %s%s%s; recording stops\n", (int)getpid(), what, s ? ": " : "",
            s ? s : "");
    if (rec_out) fclose(rec_out);
    rec_out = NULL;
}

/* The pair that maps CUPTI's clock onto CLOCK_MONOTONIC (rec_lock held). */
static void rec_clock(void)
{
    uint64_t c = 0, m0, m1;
    CUptiResult r;

    m0 = os_now_ns();
    r = cu.timestamp(&c);
    m1 = os_now_ns();
    if (r != CUPTI_SUCCESS) return rec_stop("cuptiGetTimestamp", r);
    fprintf(rec_out, "clock %llu %llu\n", (unsigned long long)c, (unsigned long long)(m0 + (m1 - m0) / 2));
}

static const char *copy_kind(uint8_t k)
{
    switch (k) {
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOD: return "HtoD";
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOH: return "DtoH";
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOA: return "HtoA";
    case CUPTI_ACTIVITY_MEMCPY_KIND_ATOH: return "AtoH";
    case CUPTI_ACTIVITY_MEMCPY_KIND_ATOA: return "AtoA";
    case CUPTI_ACTIVITY_MEMCPY_KIND_ATOD: return "AtoD";
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOA: return "DtoA";
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOD: return "DtoD";
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOH: return "HtoH";
    case CUPTI_ACTIVITY_MEMCPY_KIND_PTOP: return "PtoP";
    default: return "other";
    }
}

static void rec_record(const CUpti_Activity *a)
{
    switch (a->kind) {
    case CUPTI_ACTIVITY_KIND_KERNEL:
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL: {
        const CUpti_ActivityKernel10 *k = (const void *)a;

        fprintf(rec_out, "kernel %u %u %llu %llu %s\n", k->deviceId, k->streamId,
                (unsigned long long)k->start, (unsigned long long)k->end,
                k->name && *k->name ? k->name : "?");
        break;
    }
    case CUPTI_ACTIVITY_KIND_MEMCPY: {
        const CUpti_ActivityMemcpy6 *m = (const void *)a;

        fprintf(rec_out, "memcpy %u %u %llu %llu %llu %s\n", m->deviceId, m->streamId,
                (unsigned long long)m->start, (unsigned long long)m->end, (unsigned long long)m->bytes,
                copy_kind(m->copyKind));
        break;
    }
    case CUPTI_ACTIVITY_KIND_MEMSET: {
        const CUpti_ActivityMemset4 *m = (const void *)a;

        fprintf(rec_out, "memset %u %u %llu %llu %llu\n", m->deviceId, m->streamId,
                (unsigned long long)m->start, (unsigned long long)m->end, (unsigned long long)m->bytes);
        break;
    }
    default: break;
    }
}

static void CUPTIAPI buffer_requested(uint8_t **buf, size_t *size, size_t *max_records)
{
    *buf = aligned_alloc(8, REC_BUF_BYTES);
    *size = *buf ? REC_BUF_BYTES : 0;
    *max_records = 0;
}

static void CUPTIAPI buffer_completed(CUcontext ctx, uint32_t stream, uint8_t *buf, size_t size, size_t valid)
{
    CUpti_Activity *a = NULL;
    CUptiResult r;
    size_t lost = 0;

    (void)size;
    pthread_mutex_lock(&rec_lock);
    while (rec_out && valid) {
        r = cu.next_record(buf, valid, &a);
        if (r == CUPTI_ERROR_MAX_LIMIT_REACHED) break;
        if (r != CUPTI_SUCCESS) {
            rec_stop("cuptiActivityGetNextRecord", r);
            break;
        }
        rec_record(a);
    }
    if (rec_out && cu.dropped(ctx, stream, &lost) == CUPTI_SUCCESS && lost)
        fprintf(stderr, "cuzk-cupti[%d]: %zu records dropped (buffers full)\n", (int)getpid(), lost);
    if (rec_out && (fflush(rec_out) || ferror(rec_out)))
        rec_stop("writing CUZK_CUPTI_OUT failed", CUPTI_SUCCESS);
    pthread_mutex_unlock(&rec_lock);
    free(buf);
}

/* At exit, before the static runtime's own teardown (registered earlier, so run
 * later): the records still in CUPTI's buffers, then the closing clock pair. */
static void rec_flush(void)
{
    CUptiResult r;

    pthread_mutex_lock(&rec_lock);
    int on = rec_out != NULL;
    pthread_mutex_unlock(&rec_lock);
    if (!on) return;
    r = cu.flush_all(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED); /* calls buffer_completed */
    pthread_mutex_lock(&rec_lock);
    if (r != CUPTI_SUCCESS) rec_stop("cuptiActivityFlushAll", r);
    if (rec_out) rec_clock();
    if (rec_out && fclose(rec_out))
        fprintf(stderr, "cuzk-cupti[%d]: closing the file failed\n", (int)getpid());
    rec_out = NULL;
    pthread_mutex_unlock(&rec_lock);
}

static void *load_cupti(void)
{
    const char *env = getenv("CUZK_CUPTI_LIB");
    void *h;

    if (env && *env) return dlopen(env, RTLD_NOW | RTLD_LOCAL);
    h = dlopen("libcupti.so", RTLD_NOW | RTLD_LOCAL);
#ifdef CUZK_CUPTI_TOOLKIT_LIB /* the Makefile's: $(CUDA_HOME)/lib64/libcupti.so */
    if (!h) h = dlopen(CUZK_CUPTI_TOOLKIT_LIB, RTLD_NOW | RTLD_LOCAL);
#endif
    return h;
}

/* Called by the CUDA driver. Returns 1 whatever happens: recording is never a reason
 * for CUDA to fail. */
int InitializeInjection(void)
{
    static const CUpti_ActivityKind kinds[] = { CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL,
                                                CUPTI_ACTIVITY_KIND_MEMCPY, CUPTI_ACTIVITY_KIND_MEMSET };
    const char *path = getenv("CUZK_CUPTI_OUT"), *p;
    char name[4096];
    size_t n = 0;
    uint32_t ver = 0;
    void *h;
    CUptiResult r;

    if (!path || !*path || __atomic_exchange_n(&rec_started, 1, __ATOMIC_ACQ_REL)) return 1;
    for (p = path; *p && n + 24 < sizeof(name); p++) /* "%p": the process id */
        if (p[0] == '%' && p[1] == 'p') {
            n += (size_t)snprintf(name + n, sizeof(name) - n, "%d", (int)getpid());
            p++;
        } else
            name[n++] = *p;
    name[n] = 0;
    if (!(h = load_cupti())) {
        fprintf(stderr, "cuzk-cupti[%d]: no libcupti (%s); not recording\n", (int)getpid(), dlerror());
        return 1;
    }
#define SYM(f, s)                                                                                \
    if (!(cu.f = (__typeof__(cu.f))dlsym(h, s))) {                                               \
        fprintf(stderr, "cuzk-cupti[%d]: libcupti lacks %s; not recording\n", (int)getpid(), s); \
        return 1;                                                                                \
    }
    SYM(get_version, "cuptiGetVersion")
    SYM(result_string, "cuptiGetResultString")
    SYM(timestamp, "cuptiGetTimestamp")
    SYM(enable, "cuptiActivityEnable")
    SYM(disable, "cuptiActivityDisable")
    SYM(register_callbacks, "cuptiActivityRegisterCallbacks")
    SYM(next_record, "cuptiActivityGetNextRecord")
    SYM(dropped, "cuptiActivityGetNumDroppedRecords")
    SYM(flush_all, "cuptiActivityFlushAll")
#undef SYM
    if (cu.get_version(&ver) != CUPTI_SUCCESS || ver / 10000 != CUPTI_API_VERSION / 10000) {
        fprintf(
            stderr,
            "cuzk-cupti[%d]: libcupti's API version %u, built for %u (another record layout); not recording\n",
            (int)getpid(), ver, (unsigned)CUPTI_API_VERSION);
        return 1;
    }
    pthread_mutex_lock(&rec_lock);
    if (!(rec_out = fopen(name, "w"))) {
        fprintf(stderr, "cuzk-cupti[%d]: %s: %m; not recording\n", (int)getpid(), name);
        pthread_mutex_unlock(&rec_lock);
        return 1;
    }
    fprintf(rec_out, "cuzk-cupti 1\n");
    rec_clock();
    if (rec_out && (r = cu.register_callbacks(buffer_requested, buffer_completed)) != CUPTI_SUCCESS)
        rec_stop("cuptiActivityRegisterCallbacks", r);
    for (size_t i = 0; rec_out && i < sizeof(kinds) / sizeof(kinds[0]); i++)
        if ((r = cu.enable(kinds[i])) != CUPTI_SUCCESS) {
            for (size_t j = 0; j < i; j++) cu.disable(kinds[j]);
            rec_stop("cuptiActivityEnable", r);
        }
    if (rec_out) fflush(rec_out);
    pthread_mutex_unlock(&rec_lock);
    atexit(rec_flush);
    return 1;
}
