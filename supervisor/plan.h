/* plan.h — where each process of an instance runs: cores and NUMA node, from the
 * hwloc topology (this machine, an XML file or a synthetic description).
 *
 * Policy (DESIGN.md, "Topology"), whole cores only:
 *   - worker i: CUDA — up to PLAN_CUDA_WORKER_CORES cores on its GPU's NUMA node;
 *     CPU backend — the nodes' cores split evenly between the workers (worker i on
 *     node i mod nodes), after setting aside the synth and finalizer shares.
 *   - one synth per NUMA node on that node's remaining cores (at least one);
 *   - the finalizer on PLAN_FINALIZER_CORES core(s) of node 0.
 * Pool buffers are split between the nodes in proportion to the workers (GPUs) placed
 * there (largest remainder); a node without workers gets none.
 * CUDA devices: with the driver's list (plan_compute_with), device N is the GPU at the
 * driver's N-th PCI address and its node is that PCI function's in the topology; a GPU
 * the topology shows but the driver does not list (or the reverse) is reported in
 * `warn` and the plan uses what the driver has. Without it (planning another machine
 * from its XML), device N is cudaN/nvmlN, else the N-th NVIDIA GPU in PCI order.
 * With enough cores no core is given twice. With fewer cores than that (a laptop, this
 * 2-core CI box) the plan shares cores and says so in `note`: workers still get a
 * core each round-robin, synth processes get their node's cores, the finalizer the
 * last core.
 */
#ifndef CUZK_PLAN_H
#define CUZK_PLAN_H

#include <sched.h>
#include <stdint.h>
#include <stdio.h>

#include <hwloc.h>

#include "supervisor/config.h"
#include "shm/pipeline.h"

#define PLAN_MAX_NODES         8
#define PLAN_MAX_PLACES        (PIPE_MAX_WORKERS + PLAN_MAX_NODES + 1)
#define PLAN_FINALIZER_CORES   1
#define PLAN_CUDA_WORKER_CORES 2
#define PLAN_MAX_WARN          8

enum plan_role {
    PLAN_WORKER = 0,
    PLAN_SYNTH,
    PLAN_FINALIZER,
};

struct plan_place {
    enum plan_role role;
    uint32_t index;   /* worker number, synth number (= node position), 0 */
    int numa_node;    /* OS index of the node, -1 when unknown */
    int device;       /* CUDA device number for CUDA workers, else -1 */
    uint32_t n_cores; /* whole cores in cpus */
    cpu_set_t cpus;   /* OS PU indices */
};

struct plan {
    uint32_t n_nodes, n_cores, n_pus;
    int node_os[PLAN_MAX_NODES];
    uint32_t n_workers, n_synth;
    uint32_t n_places; /* workers, then synths, then the finalizer */
    struct plan_place places[PLAN_MAX_PLACES];
    int shared; /* some core is given to more than one process */
    char note[256];
    uint32_t node_buffers[PLAN_MAX_NODES]; /* pool buffers of node k (same order) */
    uint32_t n_warn;
    char warn[PLAN_MAX_WARN][256]; /* topology and driver disagree, and the like */
    int fake;                      /* plan_fake_here: nodes are a test's, not this machine's */
};

/* A PCI address. */
struct plan_pci {
    unsigned domain, bus, dev, func;
};

/* The GPUs the CUDA driver lists, in device order. */
struct plan_driver_gpus {
    uint32_t n;
    struct plan_pci pci[PIPE_MAX_WORKERS];
};

/* "0000:1a:00.0" or "1a:00.0" (hex, any case) -> 0, else -EINVAL. */
int plan_pci_parse(const char *s, struct plan_pci *out);

/* Load a topology: from an XML file (xml != NULL or ""), a synthetic string
 * (synthetic != NULL or ""), or this machine; with I/O devices (GPUs) kept.
 * 0 or -EINVAL/-errno with err set (nothing to destroy then). */
int plan_topology_load(hwloc_topology_t *topo, const char *xml, const char *synthetic, char *err,
                       size_t errlen);

/* Compute the plan for config c (devices, instance) on topo. 0, or -EINVAL/-ENODEV with
 * err set (e.g. a CUDA device the topology does not show). */
int plan_compute(hwloc_topology_t topo, const struct cuzkd_config *c, struct plan *p, char *err,
                 size_t errlen);

/* Same, for CUDA devices with the driver's list (drv NULL: plan_compute). */
int plan_compute_with(hwloc_topology_t topo, const struct cuzkd_config *c, const struct plan_driver_gpus *drv,
                      struct plan *p, char *err, size_t errlen);

/* Tests only (cuzkd --test-fake-topology): run a plan made for another topology on this
 * machine. Each place's cpu N becomes this machine's N-th online cpu modulo their
 * number (so a fake node's processes still share or split cores as planned), its
 * numa_node is kept (routing, pool shares: the nodes stay distinct), and p->fake makes
 * plan_apply skip the memory policy (the caller skips mbind: POOL_SLAB_NO_MBIND).
 * 0, or -errno when this machine's online cpus cannot be read. */
int plan_fake_here(struct plan *p);

/* Human-readable plan, one line per process, then the note. */
void plan_print(FILE *f, const struct plan *p);

/* "0-3,8" for a cpu set. */
void plan_cpus_str(const cpu_set_t *s, char *buf, size_t len);

/* In a child between fork and exec: bind to p->cpus (sched_setaffinity) and, on
 * multi-node machines, prefer p->numa_node for memory (set_mempolicy; not for a
 * plan_fake_here plan). Only system
 * calls: async-signal-safe. 0, or -errno of the first step that failed (the process
 * can run unpinned; the caller decides). */
int plan_apply(const struct plan *p, const struct plan_place *pl);

/* Name of a role: "worker", "synth", "finalizer". */
const char *plan_role_name(enum plan_role r);

#endif
