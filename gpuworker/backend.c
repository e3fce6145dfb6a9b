/* backend.c — the table of proving backends cuzk-gpuworker can run. */
#include "gpuworker/backend.h"

#include <string.h>

static const struct backend_ops *const backends[] = {
    &backend_cpu_ops, &backend_cpu_async_ops, /* tests: the asynchronous path without a GPU */
    &backend_cpu_inflight_ops, /* cuzkd's CPU workers with 2+ threads: small partitions side by side */
#ifdef CUZK_HAVE_CUDA
    &backend_cuda_ops, /* built when nvcc is present (Makefile: CUDA=1) */
#endif
};

/* Earlier names still accepted, so that config files and scripts written with them
 * keep working; the ops' name (logs, stats) is the current one. */
static const struct {
    const char *earlier, *current;
} renamed[] = {
    { "cpu-lanes", "cpu-inflight" },
};

const struct backend_ops *backend_find(const char *name)
{
    size_t len;

    if (!name) return NULL;
    len = strcspn(name, ":");
    for (size_t i = 0; i < sizeof renamed / sizeof renamed[0]; i++)
        if (strlen(renamed[i].earlier) == len && !strncmp(renamed[i].earlier, name, len)) {
            name = renamed[i].current;
            len = strlen(name);
            break;
        }
    for (size_t i = 0; i < sizeof backends / sizeof backends[0]; i++)
        if (strlen(backends[i]->name) == len && !strncmp(backends[i]->name, name, len)) return backends[i];
    return NULL;
}

const char *backend_list(void)
{
#ifdef CUZK_HAVE_CUDA
    return "cpu, cpu-async (tests), cpu-inflight, cuda";
#else
    return "cpu, cpu-async (tests), cpu-inflight";
#endif
}

void backend_key_of(struct backend_key *k, dev_t dev, ino_t ino, off_t size, const struct timespec *mtim)
{
    k->dev = (uint64_t)dev;
    k->ino = (uint64_t)ino;
    k->size = (uint64_t)size;
    k->mtime_sec = (int64_t)mtim->tv_sec;
    k->mtime_nsec = (int64_t)mtim->tv_nsec;
}

bool backend_key_equal(const struct backend_key *a, const struct backend_key *b)
{
    return a->dev == b->dev && a->ino == b->ino && a->size == b->size && a->mtime_sec == b->mtime_sec &&
        a->mtime_nsec == b->mtime_nsec;
}
