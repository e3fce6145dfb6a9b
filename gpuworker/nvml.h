/* nvml.h — the NVIDIA driver's management library (NVML), where the driver has it:
 * libnvidia-ml.so.1 loaded with dlopen, so that a machine without a driver runs the
 * same binary unchanged (nvml_open says why there is none, the worker exports zeros
 * and nvml_ok 0). The gpuworker samples its device every 100 ms into its stats slot
 * (utilization, memory used, power, SM clock). Not thread-safe: one caller. */
#ifndef CUZK_NVML_H
#define CUZK_NVML_H

#include <stddef.h>
#include <stdint.h>

#define NVML_LIB "libnvidia-ml.so.1"

struct nvml;

struct nvml_sample {
    uint64_t util_pct; /* percent of the last sample period a kernel ran */
    uint64_t mem_used; /* bytes of device memory in use (every process) */
    uint64_t power_mw; /* board power, milliwatts */
    uint64_t sm_clock_mhz;
};

/* Load lib (NULL: NVML_LIB), initialize NVML and take the device's handle: the one at
 * PCI address pci_bus_id ("DDDD:BB:DD.F", as CUDA gives it) when that is given and not
 * "" — NVML numbers every device of the machine while CUDA numbers those that
 * CUDA_VISIBLE_DEVICES leaves, so only the address names the same device for both —
 * else the one at index. 0, or -ENOENT (no such library: no driver here) / -ENOSYS (a
 * symbol is missing) / -EIO (an NVML call failed, or no device there) with a sentence
 * in why; nothing is left loaded on failure. */
int nvml_open(struct nvml **out, const char *lib, unsigned index, const char *pci_bus_id, char *why,
              size_t len);
/* One sample. 0, or -EIO (s holds what could be read; the rest 0). */
int nvml_sample(struct nvml *n, struct nvml_sample *s);
/* nvmlShutdown and dlclose. Accepts NULL. */
void nvml_close(struct nvml *n);

#endif
