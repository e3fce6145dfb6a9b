/* check.h — `cuzkd --check`: a preflight of this machine for the configured instance,
 * each finding with a fix; and the two small OS interfaces it shares with the daemon
 * (the CUDA driver's GPU list, systemd's readiness notification). */
#ifndef CUZK_CHECK_H
#define CUZK_CHECK_H

#include <stdio.h>

#include "supervisor/config.h"
#include "supervisor/plan.h"

/* Print the report to f. Returns the exit code: CUZK_EXIT_OK when nothing FAILs (warnings
 * allowed; a machine without GPUs passes unless --devices names CUDA devices),
 * CUZK_EXIT_FALSE (1) otherwise. */
int check_run(const struct cuzkd_config *c, FILE *f);

/* The GPUs the CUDA driver lists, in device order, with their PCI addresses: loads
 * libcuda.so.1 at run time (cuInit, cuDeviceGetCount, cuDeviceGetPCIBusId), so no CUDA
 * toolkit is needed to build. The driver is initialised in a short-lived child process
 * (the caller never holds a CUDA context, so it may fork without exec afterwards).
 * 0 with d filled (d->n may be 0), or -ENOENT (no driver library) / -ENODEV (cuInit
 * failed: the sentence names the CUDA error) / -errno (no child) with a sentence in why. */
int check_driver_gpus(struct plan_driver_gpus *d, char *why, size_t len);

/* Parse "0000:1a:00.0,0000:34:00.0" (cuzkd --driver-gpus, tests) into d. 0 or -EINVAL. */
int check_parse_gpu_list(const char *list, struct plan_driver_gpus *d);

/* systemd's notification protocol (sd_notify(3)): one datagram with `state` to the
 * AF_UNIX socket named by $NOTIFY_SOCKET (a path, or "@name" for the abstract
 * namespace). 1 sent, 0 not under systemd (no NOTIFY_SOCKET), -errno on error. */
int check_sd_notify(const char *state);

#endif
