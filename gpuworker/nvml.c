/* nvml.c — NVML through dlopen (nvml.h). The declarations are NVML's own (nvml.h of
 * the CUDA toolkit, stable since NVML 3): written out here so that the build needs no
 * NVIDIA header and links nothing of the driver. */
#include "gpuworker/nvml.h"

#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

typedef void *nvml_device;
typedef struct {
    unsigned int gpu, memory;
} nvml_utilization;
typedef struct {
    unsigned long long total, free, used;
} nvml_memory;
#define NVML_SUCCESS  0
#define NVML_CLOCK_SM 1

struct nvml {
    void *lib;
    nvml_device dev;
    int (*shutdown)(void);
    int (*utilization)(nvml_device, nvml_utilization *);
    int (*memory)(nvml_device, nvml_memory *);
    int (*power)(nvml_device, unsigned int *);
    int (*clock)(nvml_device, int, unsigned int *);
};

int nvml_open(struct nvml **out, const char *lib, unsigned index, const char *pci_bus_id, char *why,
              size_t len)
{
    struct nvml *n;
    int (*init)(void);
    int (*handle)(unsigned int, nvml_device *);
    int (*by_bus)(const char *, nvml_device *);
    int rc;

    *out = NULL;
    n = calloc(1, sizeof(*n));
    if (!n) {
        snprintf(why, len, "NVML: out of memory");
        return -ENOMEM;
    }
    n->lib = dlopen(lib ? lib : NVML_LIB, RTLD_NOW | RTLD_LOCAL);
    if (!n->lib) {
        snprintf(why, len, "NVML: %s not loaded (no NVIDIA driver here?): %s", lib ? lib : NVML_LIB,
                 dlerror());
        free(n);
        return -ENOENT;
    }
    init = (int (*)(void))dlsym(n->lib, "nvmlInit_v2");
    handle = (int (*)(unsigned int, nvml_device *))dlsym(n->lib, "nvmlDeviceGetHandleByIndex_v2");
    by_bus = (int (*)(const char *, nvml_device *))dlsym(n->lib, "nvmlDeviceGetHandleByPciBusId_v2");
    n->shutdown = (int (*)(void))dlsym(n->lib, "nvmlShutdown");
    n->utilization = (int (*)(nvml_device, nvml_utilization *))dlsym(n->lib, "nvmlDeviceGetUtilizationRates");
    n->memory = (int (*)(nvml_device, nvml_memory *))dlsym(n->lib, "nvmlDeviceGetMemoryInfo");
    n->power = (int (*)(nvml_device, unsigned int *))dlsym(n->lib, "nvmlDeviceGetPowerUsage");
    n->clock = (int (*)(nvml_device, int, unsigned int *))dlsym(n->lib, "nvmlDeviceGetClockInfo");
    if (!init || !handle || !n->shutdown || !n->utilization || !n->memory || !n->power || !n->clock) {
        snprintf(why, len, "NVML: %s lacks a function this build uses (nvmlInit_v2 ...): driver too old?",
                 lib ? lib : NVML_LIB);
        dlclose(n->lib);
        free(n);
        return -ENOSYS;
    }
    if ((rc = init()) != NVML_SUCCESS) {
        snprintf(why, len, "NVML: nvmlInit_v2 failed (NVML error %d)", rc);
        dlclose(n->lib);
        free(n);
        return -EIO;
    }
    if (pci_bus_id && *pci_bus_id) {
        /* by the address only: a fall back to the index could sample another device */
        rc = by_bus ? by_bus(pci_bus_id, &n->dev) : -1;
        if (rc != NVML_SUCCESS) {
            if (by_bus)
                snprintf(why, len, "NVML: no device at PCI address %s (NVML error %d)", pci_bus_id, rc);
            else
                snprintf(why, len, "NVML: %s lacks nvmlDeviceGetHandleByPciBusId_v2: driver too old?",
                         lib ? lib : NVML_LIB);
            n->shutdown();
            dlclose(n->lib);
            free(n);
            return by_bus ? -EIO : -ENOSYS;
        }
    } else if ((rc = handle(index, &n->dev)) != NVML_SUCCESS) {
        snprintf(why, len, "NVML: no device %u (NVML error %d)", index, rc);
        n->shutdown();
        dlclose(n->lib);
        free(n);
        return -EIO;
    }
    *out = n;
    return 0;
}

int nvml_sample(struct nvml *n, struct nvml_sample *s)
{
    nvml_utilization u;
    nvml_memory m;
    unsigned int v;
    int bad = 0;

    s->util_pct = s->mem_used = s->power_mw = s->sm_clock_mhz = 0;
    if (n->utilization(n->dev, &u) == NVML_SUCCESS)
        s->util_pct = u.gpu;
    else
        bad = 1;
    if (n->memory(n->dev, &m) == NVML_SUCCESS)
        s->mem_used = m.used;
    else
        bad = 1;
    if (n->power(n->dev, &v) == NVML_SUCCESS)
        s->power_mw = v;
    else
        bad = 1;
    if (n->clock(n->dev, NVML_CLOCK_SM, &v) == NVML_SUCCESS)
        s->sm_clock_mhz = v;
    else
        bad = 1;
    return bad ? -EIO : 0;
}

void nvml_close(struct nvml *n)
{
    if (!n) return;
    n->shutdown();
    dlclose(n->lib);
    free(n);
}
