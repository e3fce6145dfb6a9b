/* backend.c — the table of proving backends cuzk-gpuworker can run. */
#include "cuzk/backend.h"

#include <string.h>

static const struct backend_ops *const backends[] = {
    &backend_cpu_ops,
    /* &backend_cuda_ops: the CUDA backend (later issue), when built with nvcc */
};

const struct backend_ops *backend_find(const char *name)
{
    for (size_t i = 0; i < sizeof backends / sizeof backends[0]; i++)
        if (name && !strcmp(backends[i]->name, name))
            return backends[i];
    return NULL;
}
