/* plan.c — placement of an instance's processes on cores and NUMA nodes (plan.h). */
#include "supervisor/plan.h"

#include <errno.h>
#include <stdarg.h>
#include <numaif.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

const char *plan_role_name(enum plan_role r)
{
    switch (r) {
    case PLAN_WORKER: return "worker";
    case PLAN_SYNTH: return "synth";
    case PLAN_FINALIZER: return "finalizer";
    }
    return "?";
}

int plan_topology_load(hwloc_topology_t *topo, const char *xml, const char *synthetic, char *err,
                       size_t errlen)
{
    hwloc_topology_t t;
    int rc;

    if (hwloc_topology_init(&t)) {
        snprintf(err, errlen, "hwloc: cannot initialise a topology: %s", strerror(errno));
        return -errno;
    }
    /* Keep GPUs (PCI and OS devices) so a worker can be placed near its device. */
    hwloc_topology_set_io_types_filter(t, HWLOC_TYPE_FILTER_KEEP_IMPORTANT);
    if (xml && *xml) {
        if (hwloc_topology_set_xml(t, xml)) {
            snprintf(err, errlen, "--topology %s: hwloc cannot read it: %s", xml, strerror(errno));
            goto fail;
        }
    } else if (synthetic && *synthetic) {
        if (hwloc_topology_set_synthetic(t, synthetic)) {
            snprintf(err, errlen,
                     "--synthetic \"%s\": not a valid hwloc synthetic "
                     "topology (e.g. \"pack:2 numa:1 core:8 pu:2\")",
                     synthetic);
            goto fail;
        }
    }
    if (hwloc_topology_load(t)) {
        snprintf(err, errlen, "hwloc: cannot load the topology%s%s: %s", xml && *xml ? " of " : "",
                 xml && *xml ? xml : "", strerror(errno));
        goto fail;
    }
    *topo = t;
    return 0;
fail:
    rc = errno ? -errno : -EINVAL;
    hwloc_topology_destroy(t);
    return rc;
}

/* A core: the PUs of one hwloc core (or one PU where the topology shows no cores). */
struct core {
    cpu_set_t pus;
    int node; /* position in the plan's node list */
    int taken;
};

struct work {
    struct core *cores;
    uint32_t n;
    int node_first[PLAN_MAX_NODES]; /* cores of node k: [first, first+count) */
    uint32_t node_count[PLAN_MAX_NODES];
};

static void set_from_bitmap(cpu_set_t *s, hwloc_const_bitmap_t b)
{
    unsigned i;

    hwloc_bitmap_foreach_begin(i, b)
    {
        if (i < CPU_SETSIZE) CPU_SET(i, s);
    }
    hwloc_bitmap_foreach_end();
}

/* Nodes with at least one core, and their cores in topology order. */
static int collect(hwloc_topology_t topo, struct plan *p, struct work *w, char *err, size_t errlen)
{
    int nnodes = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_NUMANODE);
    hwloc_obj_type_t ct = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_CORE) > 0 ? HWLOC_OBJ_CORE : HWLOC_OBJ_PU;
    int ncores = hwloc_get_nbobjs_by_type(topo, ct);

    w->cores = calloc((size_t)(ncores > 0 ? ncores : 1), sizeof(*w->cores));
    if (!w->cores) {
        snprintf(err, errlen, "out of memory");
        return -ENOMEM;
    }
    p->n_pus = (uint32_t)hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_PU);
    for (int k = 0; k < nnodes || (nnodes <= 0 && k == 0); k++) {
        hwloc_obj_t node = nnodes > 0 ? hwloc_get_obj_by_type(topo, HWLOC_OBJ_NUMANODE, (unsigned)k) : NULL;
        hwloc_const_cpuset_t ns = node ? node->cpuset : hwloc_topology_get_topology_cpuset(topo);
        uint32_t pos = p->n_nodes, cnt = 0;

        if (pos == PLAN_MAX_NODES) break;
        w->node_first[pos] = (int)w->n;
        for (int i = 0; i < ncores; i++) {
            hwloc_obj_t c = hwloc_get_obj_by_type(topo, ct, (unsigned)i);
            int dup = 0;

            if (!c->cpuset || !hwloc_bitmap_isincluded(c->cpuset, ns) || hwloc_bitmap_iszero(c->cpuset))
                continue;
            /* a core already counted under an earlier node (overlapping nodesets) */
            for (uint32_t j = 0; j < w->n && !dup; j++) {
                cpu_set_t s;
                CPU_ZERO(&s);
                set_from_bitmap(&s, c->cpuset);
                dup = CPU_EQUAL(&s, &w->cores[j].pus);
            }
            if (dup) continue;
            CPU_ZERO(&w->cores[w->n].pus);
            set_from_bitmap(&w->cores[w->n].pus, c->cpuset);
            w->cores[w->n].node = (int)pos;
            w->n++;
            cnt++;
        }
        if (!cnt) continue; /* memory-only node (HBM, CXL): nothing to run there */
        w->node_count[pos] = cnt;
        p->node_os[pos] = node ? (int)node->os_index : -1;
        p->n_nodes++;
    }
    p->n_cores = w->n;
    if (!p->n_nodes || !w->n) {
        snprintf(err, errlen, "the topology shows no usable cores");
        return -EINVAL;
    }
    return 0;
}

int plan_pci_parse(const char *s, struct plan_pci *out)
{
    unsigned d = 0, b, v, f;
    char tail;

    if (!s || !*s || s[strspn(s, "0123456789abcdefABCDEF:.")]) return -EINVAL;
    if (sscanf(s, "%x:%x:%x.%x%c", &d, &b, &v, &f, &tail) != 4) {
        d = 0;
        if (sscanf(s, "%x:%x.%x%c", &b, &v, &f, &tail) != 3) return -EINVAL;
    }
    if (b > 0xff || v > 0x1f || f > 7 || d > 0xffff) return -EINVAL;
    out->domain = d;
    out->bus = b;
    out->dev = v;
    out->func = f;
    return 0;
}

static void pci_str(const struct plan_pci *a, char *buf, size_t len)
{
    snprintf(buf, len, "%04x:%02x:%02x.%x", a->domain, a->bus, a->dev, a->func);
}

static int is_nvidia_gpu(hwloc_obj_t o)
{
    unsigned cls = o->attr->pcidev.class_id;

    return o->attr->pcidev.vendor_id == 0x10de && (cls == 0x0300 || cls == 0x0302);
}

static int pci_eq(hwloc_obj_t o, const struct plan_pci *a)
{
    return o->attr->pcidev.domain == a->domain && o->attr->pcidev.bus == a->bus &&
        o->attr->pcidev.dev == a->dev && o->attr->pcidev.func == a->func;
}

/* Node position nearest an I/O object (0 when the topology does not say). */
static int io_node(hwloc_topology_t topo, const struct plan *p, hwloc_obj_t o)
{
    o = hwloc_get_non_io_ancestor_obj(topo, o);
    if (!o || !o->nodeset) return 0;
    for (uint32_t k = 0; k < p->n_nodes; k++)
        if (p->node_os[k] >= 0 && hwloc_bitmap_isset(o->nodeset, (unsigned)p->node_os[k])) return (int)k;
    return 0;
}

/* The topology's CUDA device `dev` (no driver list): an OS device named cudaN/nvmlN,
 * else the N-th NVIDIA display/3D PCI function in topology order. Its node position,
 * or -1 if absent; *count: the topology's GPUs. */
static int gpu_node(hwloc_topology_t topo, const struct plan *p, int dev, int *count)
{
    hwloc_obj_t o = NULL, found = NULL;
    int n_os = 0, n_pci = 0;
    char want1[32], want2[32];

    snprintf(want1, sizeof(want1), "cuda%d", dev);
    snprintf(want2, sizeof(want2), "nvml%d", dev);
    while ((o = hwloc_get_next_osdev(topo, o))) {
        if (o->name && !strncmp(o->name, "cuda", 4)) n_os++;
        if (o->name && (!strcmp(o->name, want1) || !strcmp(o->name, want2)) && !found) found = o;
    }
    o = NULL;
    while ((o = hwloc_get_next_pcidev(topo, o))) {
        if (!is_nvidia_gpu(o)) continue;
        if (!n_os && n_pci == dev) found = o;
        n_pci++;
    }
    if (count) *count = n_os ? n_os : n_pci;
    if (!found) return -1;
    return io_node(topo, p, found);
}

__attribute__((format(printf, 2, 3))) static void warn(struct plan *p, const char *fmt, ...)
{
    va_list ap;

    if (p->n_warn == PLAN_MAX_WARN) return;
    va_start(ap, fmt);
    vsnprintf(p->warn[p->n_warn++], sizeof(p->warn[0]), fmt, ap);
    va_end(ap);
}

/* CUDA workers from the driver's list: device i is the GPU at drv->pci[i]. */
static int cuda_from_driver(hwloc_topology_t topo, const struct cuzkd_config *c,
                            const struct plan_driver_gpus *drv, struct plan *p, int *wnode, int *wdev,
                            char *err, size_t errlen)
{
    uint32_t per_node[PLAN_MAX_NODES] = { 0 };
    hwloc_obj_t o = NULL;
    int n_topo = 0;
    char a[32];

    /* GPUs the topology shows and the driver does not list. */
    while ((o = hwloc_get_next_pcidev(topo, o))) {
        int listed = 0;

        if (!is_nvidia_gpu(o)) continue;
        n_topo++;
        for (uint32_t i = 0; i < drv->n && !listed; i++) listed = pci_eq(o, &drv->pci[i]);
        if (!listed) {
            struct plan_pci x = { o->attr->pcidev.domain, o->attr->pcidev.bus, o->attr->pcidev.dev,
                                  o->attr->pcidev.func };

            pci_str(&x, a, sizeof(a));
            warn(p,
                 "the topology shows an NVIDIA GPU at PCI %s that the CUDA driver "
                 "does not list (driver not bound to it, GPU fallen off the bus, or "
                 "hidden by CUDA_VISIBLE_DEVICES): not used",
                 a);
        }
    }
    if (!drv->n) {
        snprintf(err, errlen,
                 "--devices %s: the CUDA driver lists no GPU (the topology "
                 "shows %d NVIDIA GPU(s)); check nvidia-smi, or use --devices cpu:N",
                 c->devices, n_topo);
        return -ENODEV;
    }
    p->n_workers = c->cuda_all ? drv->n : c->n_devices;
    if (p->n_workers > PIPE_MAX_WORKERS) p->n_workers = PIPE_MAX_WORKERS;
    for (uint32_t i = 0; i < p->n_workers; i++) {
        int found = 0;

        wdev[i] = c->cuda_all ? (int)i : c->cuda_ids[i];
        if (wdev[i] < 0 || (uint32_t)wdev[i] >= drv->n) {
            snprintf(err, errlen,
                     "--devices %s: the CUDA driver lists %u GPU(s), no "
                     "device %d",
                     c->devices, drv->n, wdev[i]);
            return -ENODEV;
        }
        o = NULL;
        while ((o = hwloc_get_next_pcidev(topo, o)) && !found)
            if (pci_eq(o, &drv->pci[wdev[i]])) {
                found = 1;
                wnode[i] = io_node(topo, p, o);
            }
        if (!found) {
            /* Unknown locality: the node with the fewest workers so far. */
            uint32_t best = 0;

            for (uint32_t k = 1; k < p->n_nodes; k++)
                if (per_node[k] < per_node[best]) best = k;
            wnode[i] = (int)best;
            pci_str(&drv->pci[wdev[i]], a, sizeof(a));
            warn(p,
                 "CUDA device %d (PCI %s) is not in the topology: its NUMA node is "
                 "unknown, placed on node %d",
                 wdev[i], a, p->node_os[best]);
        }
        per_node[wnode[i]]++;
    }
    return 0;
}

static struct plan_place *place_add(struct plan *p, enum plan_role r, uint32_t idx, int node_pos, int device)
{
    struct plan_place *pl = &p->places[p->n_places++];

    memset(pl, 0, sizeof(*pl));
    pl->role = r;
    pl->index = idx;
    pl->numa_node = node_pos >= 0 ? p->node_os[node_pos] : -1;
    pl->device = device;
    CPU_ZERO(&pl->cpus);
    return pl;
}

static void give(struct plan_place *pl, struct core *c)
{
    CPU_OR(&pl->cpus, &pl->cpus, &c->pus);
    pl->n_cores++;
    c->taken++;
}

/* Take up to n untaken cores of node k. */
static void take(struct work *w, int k, struct plan_place *pl, uint32_t n)
{
    for (uint32_t i = 0; i < w->node_count[k] && n; i++) {
        struct core *c = &w->cores[w->node_first[k] + (int)i];

        if (!c->taken) {
            give(pl, c);
            n--;
        }
    }
}

/* Pool buffers per node, in proportion to the workers there (largest remainder). */
static void split_buffers(struct plan *p, const uint32_t *per_node, uint32_t buffers)
{
    uint64_t rem[PLAN_MAX_NODES];
    uint32_t given = 0;

    for (uint32_t k = 0; k < p->n_nodes; k++) {
        uint64_t x = (uint64_t)buffers * per_node[k];

        p->node_buffers[k] = (uint32_t)(x / p->n_workers);
        rem[k] = x % p->n_workers;
        given += p->node_buffers[k];
    }
    while (given < buffers) {
        uint32_t best = 0;

        for (uint32_t k = 1; k < p->n_nodes; k++)
            if (rem[k] > rem[best] || (rem[k] == rem[best] && per_node[k] > per_node[best])) best = k;
        p->node_buffers[best]++;
        rem[best] = 0;
        given++;
    }
}

int plan_compute(hwloc_topology_t topo, const struct cuzkd_config *c, struct plan *p, char *err,
                 size_t errlen)
{
    return plan_compute_with(topo, c, NULL, p, err, errlen);
}

/* CUDA workers from the topology (no driver list): --devices all, or the listed ids. */
static int cuda_from_topology(hwloc_topology_t topo, const struct cuzkd_config *c, struct plan *p, int *wnode,
                              int *wdev, char *err, size_t errlen)
{
    int ngpu = 0;

    gpu_node(topo, p, 0, &ngpu);
    p->n_workers = c->cuda_all ? (uint32_t)ngpu : c->n_devices;
    if (p->n_workers > PIPE_MAX_WORKERS) p->n_workers = PIPE_MAX_WORKERS;
    if (!p->n_workers) {
        snprintf(err, errlen, "--devices %s: the topology shows no NVIDIA GPU", c->devices);
        return -ENODEV;
    }
    for (uint32_t i = 0; i < p->n_workers; i++) {
        wdev[i] = c->cuda_all ? (int)i : c->cuda_ids[i];
        wnode[i] = gpu_node(topo, p, wdev[i], NULL);
        if (wnode[i] < 0) {
            snprintf(err, errlen,
                     "--devices %s: the topology shows %d NVIDIA "
                     "GPU(s), no device %d",
                     c->devices, ngpu, wdev[i]);
            return -ENODEV;
        }
    }
    return 0;
}

/* Workers and their nodes: CUDA from the driver's list or the topology; the CPU
 * backend's workers round-robin over the nodes. */
static int workers_and_nodes(hwloc_topology_t topo, const struct cuzkd_config *c,
                             const struct plan_driver_gpus *drv, struct plan *p, int *wnode, int *wdev,
                             char *err, size_t errlen)
{
    if (c->dev_kind == CONFIG_DEV_CUDA)
        return drv ? cuda_from_driver(topo, c, drv, p, wnode, wdev, err, errlen)
                   : cuda_from_topology(topo, c, p, wnode, wdev, err, errlen);
    p->n_workers = c->n_devices;
    for (uint32_t i = 0; i < p->n_workers; i++) {
        wdev[i] = -1;
        wnode[i] = (int)(i % p->n_nodes);
    }
    return 0;
}

/* Every process its own cores: each worker up to PLAN_CUDA_WORKER_CORES of its node,
 * each synth the rest of its node, the finalizer PLAN_FINALIZER_CORES of node 0. */
static void place_exclusive(struct plan *p, struct work *w, const int *wnode, const int *wdev,
                            const uint32_t *per_node)
{
    uint32_t wcores[PLAN_MAX_NODES];

    for (uint32_t k = 0; k < p->n_nodes; k++) {
        uint32_t avail = w->node_count[k] - 1 - (k == 0 ? PLAN_FINALIZER_CORES : 0);

        wcores[k] = per_node[k] ? avail / per_node[k] : 0;
        if (wcores[k] > PLAN_CUDA_WORKER_CORES) wcores[k] = PLAN_CUDA_WORKER_CORES;
    }
    /* The finalizer's core(s) first, from the end of node 0, so worker 0
     * starts on the node's first core and the finalizer stays clear of it. */
    struct plan_place fin;
    uint32_t got = 0;

    memset(&fin, 0, sizeof(fin));
    CPU_ZERO(&fin.cpus);
    for (int i = (int)w->node_count[0] - 1; i >= 0 && got < PLAN_FINALIZER_CORES; i--)
        if (!w->cores[w->node_first[0] + i].taken) {
            give(&fin, &w->cores[w->node_first[0] + i]);
            got++;
        }
    for (uint32_t i = 0; i < p->n_workers; i++)
        take(w, wnode[i], place_add(p, PLAN_WORKER, i, wnode[i], wdev[i]), wcores[wnode[i]]);
    for (uint32_t k = 0; k < p->n_nodes; k++)
        take(w, (int)k, place_add(p, PLAN_SYNTH, k, (int)k, -1), UINT32_MAX);
    {
        struct plan_place *pl = place_add(p, PLAN_FINALIZER, 0, 0, -1);

        pl->cpus = fin.cpus;
        pl->n_cores = fin.n_cores;
    }
    snprintf(p->note, sizeof(p->note), "every process has its own cores");
}

/* Shared: each synth gets its whole node, the finalizer the last core.
 * CPU backend: the workers split their node's cores, all of them (a node
 * with one worker gives it every core), and synth and finalizer share them
 * (plan_compute_with says why). CUDA with too few cores, or more workers than cores:
 * round-robin, one core each. */
static void place_shared(struct plan *p, struct work *w, const int *wnode, const int *wdev,
                         const uint32_t *per_node, int cuda, int enough)
{
    for (uint32_t i = 0; i < p->n_workers; i++) {
        struct plan_place *pl = place_add(p, PLAN_WORKER, i, wnode[i], wdev[i]);
        uint32_t k = (uint32_t)wnode[i], nth = 0, cnt = w->node_count[k];

        for (uint32_t j = 0; j < i; j++) nth += wnode[j] == wnode[i];
        if (!cuda && per_node[k] <= cnt) {
            for (uint32_t x = nth * cnt / per_node[k]; x < (nth + 1) * cnt / per_node[k]; x++)
                give(pl, &w->cores[w->node_first[k] + (int)x]);
        } else {
            give(pl, &w->cores[w->node_first[k] + (int)(nth % cnt)]);
        }
    }
    for (uint32_t k = 0; k < p->n_nodes; k++) {
        struct plan_place *pl = place_add(p, PLAN_SYNTH, k, (int)k, -1);

        for (uint32_t i = 0; i < w->node_count[k]; i++) give(pl, &w->cores[w->node_first[k] + (int)i]);
    }
    give(place_add(p, PLAN_FINALIZER, 0, 0, -1), &w->cores[w->node_first[0] + (int)w->node_count[0] - 1]);
    p->shared = 1;
    if (enough)
        snprintf(p->note, sizeof(p->note),
                 "CPU backend: the workers split every core of their node; synth "
                 "and finalizer share them, taking only what they use");
    else
        snprintf(p->note, sizeof(p->note),
                 "only %u core(s) for %u worker(s), %u synth and 1 finalizer: "
                 "cores are shared",
                 p->n_cores, p->n_workers, p->n_synth);
}

int plan_compute_with(hwloc_topology_t topo, const struct cuzkd_config *c, const struct plan_driver_gpus *drv,
                      struct plan *p, char *err, size_t errlen)
{
    struct work w = { 0 };
    int wnode[PIPE_MAX_WORKERS], wdev[PIPE_MAX_WORKERS];
    uint32_t per_node[PLAN_MAX_NODES] = { 0 };
    int cuda = c->dev_kind == CONFIG_DEV_CUDA, exclusive = 1, enough = 0, rc;

    memset(p, 0, sizeof(*p));
    if ((rc = collect(topo, p, &w, err, errlen))) goto out;
    if ((rc = workers_and_nodes(topo, c, drv, p, wnode, wdev, err, errlen))) goto out;
    for (uint32_t i = 0; i < p->n_workers; i++) per_node[wnode[i]]++;
    p->n_synth = p->n_nodes;
    split_buffers(p, per_node, c->buffers);

    /* Can every process of a node have its own cores? Each node needs a core per
     * worker and one for its synth; node 0 also one for the finalizer. The CPU
     * backend never reserves: its workers do the MSMs and NTTs, nearly all the work,
     * while synth and finalizer are busy 1.7% and 1.9% of the wall time under a
     * backlog (mulchain-14, issue 21). A core kept for them would idle; sharing, they
     * take what they use from the workers (the kernel's fair share; the MSM's tasks
     * are claimed one by one, so a worker thread that loses its core for a while
     * delays no other). */
    for (uint32_t k = 0; k < p->n_nodes; k++)
        if (w.node_count[k] < per_node[k] + 1 + (k == 0 ? PLAN_FINALIZER_CORES : 0)) exclusive = 0;
    if (!cuda) {
        enough = exclusive;
        exclusive = 0;
    }
    if (exclusive)
        place_exclusive(p, &w, wnode, wdev, per_node);
    else
        place_shared(p, &w, wnode, wdev, per_node, cuda, enough);
out:
    free(w.cores);
    return rc;
}

void plan_cpus_str(const cpu_set_t *s, char *buf, size_t len)
{
    size_t o = 0;
    int first = 1;

    buf[0] = '\0';
    for (int i = 0; i < CPU_SETSIZE && o < len; i++) {
        int j;

        if (!CPU_ISSET(i, s)) continue;
        for (j = i; j + 1 < CPU_SETSIZE && CPU_ISSET(j + 1, s); j++)
            ;
        if (j == i)
            o += (size_t)snprintf(buf + o, len - o, "%s%d", first ? "" : ",", i);
        else
            o += (size_t)snprintf(buf + o, len - o, "%s%d-%d", first ? "" : ",", i, j);
        first = 0;
        i = j;
    }
    if (first) snprintf(buf, len, "none");
}

void plan_print(FILE *f, const struct plan *p)
{
    fprintf(f, "topology: %u NUMA node(s) with cores, %u core(s), %u PU(s)\n", p->n_nodes, p->n_cores,
            p->n_pus);
    for (uint32_t i = 0; i < p->n_places; i++) {
        const struct plan_place *pl = &p->places[i];
        char cpus[512], dev[32] = "";

        plan_cpus_str(&pl->cpus, cpus, sizeof(cpus));
        if (pl->device >= 0) snprintf(dev, sizeof(dev), " cuda:%d", pl->device);
        fprintf(f, "%-9s %u%s  node %d  cores %u  cpus %s\n", plan_role_name(pl->role), pl->index, dev,
                pl->numa_node, pl->n_cores, cpus);
    }
    fprintf(f, "buffers:");
    for (uint32_t k = 0; k < p->n_nodes; k++)
        fprintf(f, "%s node %d: %u", k ? "," : "", p->node_os[k], p->node_buffers[k]);
    fprintf(f, "\n");
    fprintf(f, "note: %s\n", p->note);
    for (uint32_t i = 0; i < p->n_warn; i++) fprintf(f, "warning: %s\n", p->warn[i]);
}

int plan_fake_here(struct plan *p)
{
    cpu_set_t online, m;
    int here[CPU_SETSIZE], n = 0;

    if (sched_getaffinity(0, sizeof(online), &online)) return -errno;
    for (int i = 0; i < CPU_SETSIZE; i++)
        if (CPU_ISSET(i, &online)) here[n++] = i;
    if (!n) return -ENODEV;
    for (uint32_t i = 0; i < p->n_places; i++) {
        struct plan_place *pl = &p->places[i];

        CPU_ZERO(&m);
        for (int c = 0; c < CPU_SETSIZE; c++)
            if (CPU_ISSET(c, &pl->cpus)) CPU_SET(here[c % n], &m);
        pl->cpus = m;
    }
    p->fake = 1;
    snprintf(p->note + strlen(p->note), sizeof(p->note) - strlen(p->note),
             "; test topology run on this machine's %d cpu(s), no memory binding", n);
    return 0;
}

int plan_apply(const struct plan *p, const struct plan_place *pl)
{
    if (CPU_COUNT(&pl->cpus) && sched_setaffinity(0, sizeof(pl->cpus), &pl->cpus)) return -errno;
    if (p->n_nodes > 1 && !p->fake && pl->numa_node >= 0 && pl->numa_node < 64) {
        unsigned long mask = 1ul << pl->numa_node;

        /* Preferred, not bound: a full node spills over instead of OOM-killing. */
        if (set_mempolicy(MPOL_PREFERRED, &mask, 64)) return -errno;
    }
    return 0;
}
