/* test_topologies.c — placement on hwloc XML topologies of real multi-GPU servers
 * (tests/topologies/, see gen.py there): GPU locality, one synth per node, a small
 * finalizer, no core given twice, buffers split by node in proportion to the GPUs, and
 * a topology and CUDA driver that disagree. Properties, not frozen text. */
#include <check.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "supervisor/config.h"
#include "supervisor/plan.h"
#include "shm/pool.h"

#include "helper_plan.h"
#include "helper_test.h"

#define DUAL "tests/topologies/dual-xeon-8gpu.xml"
#define EPYC "tests/topologies/epyc-4gpu.xml"

static hwloc_topology_t load(const char *xml)
{
    hwloc_topology_t t;
    char err[512];

    ck_assert_msg(plan_topology_load(&t, xml, NULL, err, sizeof(err)) == 0, "%s", err);
    return t;
}

static void config(struct cuzkd_config *c, const char *devices, uint32_t buffers)
{
    char err[512];

    config_defaults(c);
    ck_assert_int_eq(config_set(c, "devices", devices, err, sizeof(err)), 0);
    c->buffers = buffers;
}

static void make_plan(const char *xml, const char *devices, uint32_t buffers,
                      const struct plan_driver_gpus *drv, struct plan *p)
{
    struct cuzkd_config c;
    hwloc_topology_t t = load(xml);
    char err[512];

    config(&c, devices, buffers);
    ck_assert_msg(plan_compute_with(t, &c, drv, p, err, sizeof(err)) == 0, "%s", err);
    hwloc_topology_destroy(t);
}

/* cpu_set_t of NUMA node os_index as the XML says (independent of plan.c). */
static cpu_set_t node_cpus(const char *xml, int os_index)
{
    hwloc_topology_t t = load(xml);
    hwloc_obj_t n = hwloc_get_numanode_obj_by_os_index(t, (unsigned)os_index);
    cpu_set_t s;
    unsigned i;

    ck_assert_ptr_nonnull(n);
    CPU_ZERO(&s);
    hwloc_bitmap_foreach_begin(i, n->cpuset) CPU_SET(i, &s);
    hwloc_bitmap_foreach_end();
    hwloc_topology_destroy(t);
    return s;
}

/* NUMA node (OS index) of the GPU that OS device cudaN / the N-th NVIDIA PCI GPU is. */
static int gpu_os_node(const char *xml, int dev)
{
    hwloc_topology_t t = load(xml);
    hwloc_obj_t o = NULL, g = NULL;
    char want[16];
    int n = 0, node = -1;

    snprintf(want, sizeof(want), "cuda%d", dev);
    while ((o = hwloc_get_next_osdev(t, o)))
        if (o->name && !strcmp(o->name, want)) g = o;
    while (!g && (o = hwloc_get_next_pcidev(t, o)))
        if (o->attr->pcidev.vendor_id == 0x10de && n++ == dev) g = o;
    ck_assert_ptr_nonnull(g);
    g = hwloc_get_non_io_ancestor_obj(t, g);
    node = hwloc_bitmap_first(g->nodeset);
    ck_assert_int_eq(hwloc_bitmap_weight(g->nodeset), 1);
    hwloc_topology_destroy(t);
    return node;
}

static int subset(const cpu_set_t *a, const cpu_set_t *b)
{
    cpu_set_t x;

    CPU_AND(&x, a, b);
    return CPU_EQUAL(&x, a);
}

/* The properties every plan on a real topology must have. */
static void check_properties(const char *xml, const struct plan *p, uint32_t buffers)
{
    uint32_t synth_seen[PLAN_MAX_NODES] = { 0 }, fin = 0, sum = 0, per_node[PLAN_MAX_NODES] = { 0 };

    int cpu_backend = p->places[0].device < 0;

    ck_assert_uint_eq(p->shared, cpu_backend);
    ck_assert_uint_eq(p->n_synth, p->n_nodes);
    for (uint32_t i = 0; i < p->n_places; i++) {
        const struct plan_place *pl = &p->places[i];
        cpu_set_t ns = node_cpus(xml, pl->numa_node);

        ck_assert_int_gt(CPU_COUNT(&pl->cpus), 0);
        /* every process runs on cores of the node it is placed on */
        ck_assert_msg(subset(&pl->cpus, &ns), "%s %u: cpus outside node %d", plan_role_name(pl->role),
                      pl->index, pl->numa_node);
        /* whole cores: the two hyperthreads of each (Linux numbering: n, n + cores) */
        ck_assert_int_eq(CPU_COUNT(&pl->cpus), 2 * (int)pl->n_cores);
        switch (pl->role) {
        case PLAN_WORKER:
            if (pl->device >= 0) {
                ck_assert_int_eq(pl->numa_node, gpu_os_node(xml, pl->device));
                ck_assert_uint_eq(pl->n_cores, PLAN_CUDA_WORKER_CORES);
            }
            for (uint32_t k = 0; k < p->n_nodes; k++) per_node[k] += p->node_os[k] == pl->numa_node;
            break;
        case PLAN_SYNTH:
            ck_assert_uint_lt(pl->index, p->n_nodes);
            ck_assert_int_eq(pl->numa_node, p->node_os[pl->index]);
            synth_seen[pl->index]++;
            /* CUDA: the synth has the rest of its node, far more than a worker */
            if (p->places[0].device >= 0) ck_assert_uint_ge(pl->n_cores, 8);
            break;
        case PLAN_FINALIZER:
            fin++;
            ck_assert_uint_ge(pl->n_cores, 1);
            ck_assert_uint_le(pl->n_cores, 2);
            break;
        }
    }
    if (cpu_backend)
        test_plan_check_cpu_split(p);
    else
        test_plan_check_disjoint(p);
    ck_assert_uint_eq(fin, 1);
    for (uint32_t k = 0; k < p->n_nodes; k++) {
        double want = (double)buffers * per_node[k] / p->n_workers;

        ck_assert_uint_eq(synth_seen[k], 1);
        /* buffers in proportion to the workers (GPUs) of the node, rounded */
        ck_assert_msg(p->node_buffers[k] + 1.0 > want && p->node_buffers[k] < want + 1.0,
                      "node %d: %u buffers for %u of %u workers", p->node_os[k], p->node_buffers[k],
                      per_node[k], p->n_workers);
        if (!per_node[k]) ck_assert_uint_eq(p->node_buffers[k], 0);
        sum += p->node_buffers[k];
    }
    ck_assert_uint_eq(sum, buffers);
}

TEST(test_xml_loads_with_gpus, 1)
{
    static const struct {
        const char *xml;
        int nodes, cores, gpus;
    } want[] = { { DUAL, 2, 56, 8 }, { EPYC, 1, 32, 4 } };

    for (size_t k = 0; k < TEST_N(want); k++) {
        hwloc_topology_t t = load(want[k].xml);
        hwloc_obj_t o = NULL;
        int gpus = 0;

        while ((o = hwloc_get_next_pcidev(t, o))) gpus += o->attr->pcidev.vendor_id == 0x10de;
        ck_assert_msg(
            hwloc_get_nbobjs_by_type(t, HWLOC_OBJ_NUMANODE) == want[k].nodes &&
                hwloc_get_nbobjs_by_type(t, HWLOC_OBJ_CORE) == want[k].cores && gpus == want[k].gpus,
            "%s: %d nodes, %d cores, %d GPUs; want %d, %d, %d", want[k].xml,
            hwloc_get_nbobjs_by_type(t, HWLOC_OBJ_NUMANODE), hwloc_get_nbobjs_by_type(t, HWLOC_OBJ_CORE),
            gpus, want[k].nodes, want[k].cores, want[k].gpus);
        hwloc_topology_destroy(t);
    }
}
END_TEST

/* "cuda:all" on xml with the given buffers: workers and nodes as said, the properties,
 * and worker i is CUDA device i (PCI order). */
static void plan_all_gpus(const char *xml, uint32_t buffers, uint32_t workers, uint32_t nodes, struct plan *p)
{
    make_plan(xml, "cuda:all", buffers, NULL, p);
    ck_assert_uint_eq(p->n_workers, workers);
    ck_assert_uint_eq(p->n_nodes, nodes);
    check_properties(xml, p, buffers);
    for (uint32_t i = 0; i < workers; i++) ck_assert_int_eq(p->places[i].device, (int)i);
}

TEST(test_dual_socket_8gpu_all, 1)
{
    struct plan p;

    plan_all_gpus(DUAL, 16, 8, 2, &p);
    /* four GPUs on each socket's root: cuda0-3 on node 0, cuda4-7 on node 1 */
    for (uint32_t i = 0; i < 8; i++) ck_assert_int_eq(p.places[i].numa_node, i < 4 ? 0 : 1);
    ck_assert_uint_eq(p.node_buffers[0], 8);
    ck_assert_uint_eq(p.node_buffers[1], 8);
    ck_assert_uint_eq(p.n_warn, 0);
}
END_TEST

/* devices on DUAL with the given buffers: the properties, and node 0 and 1 get b0 and b1. */
static void check_buffers(const char *devices, uint32_t buffers, uint32_t b0, uint32_t b1)
{
    struct plan p;

    make_plan(DUAL, devices, buffers, NULL, &p);
    check_properties(DUAL, &p, buffers);
    ck_assert_msg(p.node_buffers[0] == b0 && p.node_buffers[1] == b1,
                  "%s, %u buffers: %u and %u, want %u and %u", devices, buffers, p.node_buffers[0],
                  p.node_buffers[1], b0, b1);
}

TEST(test_dual_socket_uneven_gpus_uneven_buffers, 1)
{
    /* three GPUs of socket 0, one of socket 1: buffers 3:1 */
    check_buffers("cuda:0,1,2,5", 8, 6, 2);
    /* only socket 1's GPUs: socket 0 gets no buffers, still its synth */
    check_buffers("cuda:4,7", 9, 0, 9);
}
END_TEST

TEST(test_dual_socket_cpu_backend, 1)
{
    /* CPU workers alternate nodes: the buffers split evenly */
    check_buffers("cpu:4", 10, 5, 5);
}
END_TEST

TEST(test_one_socket_4gpu_pci_order, 1)
{
    struct plan p;

    plan_all_gpus(EPYC, 8, 4, 1, &p);
    /* worker cores lie in one CCX (4 cores per L3 on this part) */
    for (uint32_t i = 0; i < 4; i++) ck_assert_uint_eq(p.places[i].n_cores, 2);
    ck_assert_uint_eq(p.node_buffers[0], 8);
}
END_TEST

static void driver(struct plan_driver_gpus *d, const char *const *bus, uint32_t n)
{
    memset(d, 0, sizeof(*d));
    d->n = n;
    for (uint32_t i = 0; i < n; i++) ck_assert_int_eq(plan_pci_parse(bus[i], &d->pci[i]), 0);
}

/* "cuda:all" on xml with a driver that lists the n GPUs at bus (n buffers): n workers. */
static void plan_with_driver(const char *xml, const char *const *bus, uint32_t n, struct plan *p)
{
    struct plan_driver_gpus d;

    driver(&d, bus, n);
    make_plan(xml, "cuda:all", n, &d, p);
    ck_assert_uint_eq(p->n_workers, n);
}

static int warned(const struct plan *p, const char *a, const char *b)
{
    for (uint32_t i = 0; i < p->n_warn; i++)
        if (strstr(p->warn[i], a) && strstr(p->warn[i], b)) return 1;
    return 0;
}

TEST(test_driver_agrees, 1)
{
    static const char *const bus[] = { "0000:1a:00.0", "0000:34:00.0", "0000:4d:00.0", "0000:67:00.0",
                                       "0000:9B:00.0", "0000:b4:00.0", "0000:cd:00.0", "e6:00.0" };
    struct plan p;

    plan_with_driver(DUAL, bus, 8, &p);
    ck_assert_uint_eq(p.n_warn, 0);
    check_properties(DUAL, &p, 8);
}
END_TEST

TEST(test_gpu_in_topology_absent_from_driver, 1)
{
    /* the GPU at b4:00.0 fell off the bus: the driver lists 7, numbered past it */
    static const char *const bus[] = { "0000:1a:00.0", "0000:34:00.0", "0000:4d:00.0", "0000:67:00.0",
                                       "0000:9b:00.0", "0000:cd:00.0", "0000:e6:00.0" };
    struct plan p;

    plan_with_driver(DUAL, bus, 7, &p);
    ck_assert_msg(warned(&p, "0000:b4:00.0", "does not list"), "no warning: %s",
                  p.n_warn ? p.warn[0] : "(none)");
    /* driver device 5 is the GPU at cd:00.0, on socket 1 */
    ck_assert_int_eq(p.places[5].device, 5);
    ck_assert_int_eq(p.places[5].numa_node, 1);
    ck_assert_int_eq(p.places[3].numa_node, 0);
    ck_assert_uint_eq(p.node_buffers[0], 4);
    ck_assert_uint_eq(p.node_buffers[1], 3);
}
END_TEST

TEST(test_gpu_in_driver_absent_from_topology, 1)
{
    /* a GPU the (stale) topology does not show: planned on the emptier node, said */
    static const char *const bus[] = { "0000:01:00.0", "0000:21:00.0", "0000:41:00.0", "0000:61:00.0",
                                       "0000:81:00.0" };
    struct plan p;

    plan_with_driver(EPYC, bus, 5, &p);
    ck_assert(warned(&p, "CUDA device 4", "not in the topology"));
    ck_assert_uint_eq(p.node_buffers[0], 5);
    test_plan_check_disjoint(&p);
}
END_TEST

TEST(test_driver_without_gpus_and_missing_device, 1)
{
    struct cuzkd_config c;
    struct plan_driver_gpus d;
    struct plan p;
    hwloc_topology_t t = load(DUAL);
    char err[512];
    static const char *const bus[] = { "0000:1a:00.0", "0000:34:00.0" };

    memset(&d, 0, sizeof(d));
    config(&c, "cuda:all", 8);
    ck_assert_int_eq(plan_compute_with(t, &c, &d, &p, err, sizeof(err)), -ENODEV);
    ck_assert_ptr_nonnull(strstr(err, "lists no GPU"));
    ck_assert_ptr_nonnull(strstr(err, "shows 8"));
    driver(&d, bus, 2);
    config(&c, "cuda:0,3", 8);
    ck_assert_int_eq(plan_compute_with(t, &c, &d, &p, err, sizeof(err)), -ENODEV);
    ck_assert_ptr_nonnull(strstr(err, "no device 3"));
    hwloc_topology_destroy(t);
}
END_TEST

TEST(test_pci_parse, 1)
{
    struct plan_pci a;

    ck_assert_int_eq(plan_pci_parse("0000:1A:00.0", &a), 0);
    ck_assert_uint_eq(a.bus, 0x1a);
    ck_assert_int_eq(plan_pci_parse("0001:e6:1f.7", &a), 0);
    ck_assert_uint_eq(a.domain, 1);
    ck_assert_uint_eq(a.func, 7);
    ck_assert_int_eq(plan_pci_parse("e6:00.0", &a), 0);
    ck_assert_int_eq(plan_pci_parse("e6:00", &a), -EINVAL);
    ck_assert_int_eq(plan_pci_parse("0000:1a:00.0x", &a), -EINVAL);
    ck_assert_int_eq(plan_pci_parse("0000:1a:20.0", &a), -EINVAL);
}
END_TEST

TEST(test_pool_split_by_counts, 1)
{
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    struct pool_hdr *h = calloc(1, pool_hdr_size(8));
    int nodes[2] = { 0, 1 };
    uint32_t counts[2] = { 6, 2 }, bad[2] = { 6, 1 };

    ck_assert_ptr_nonnull(h);
    ck_assert_int_eq(pool_init_split(h, 8, page, 4096, 2, nodes, counts), 0);
    ck_assert_uint_eq(h->nodes[0].first, 0);
    ck_assert_uint_eq(h->nodes[0].count, 6);
    ck_assert_uint_eq(h->nodes[1].first, 6);
    ck_assert_uint_eq(h->nodes[1].count, 2);
    ck_assert_int_eq(pool_init_split(h, 8, page, 4096, 2, nodes, bad), -EINVAL);
    ck_assert_int_eq(pool_init(h, 8, page, 4096, 2, nodes), 0);
    ck_assert_uint_eq(h->nodes[1].count, 4);
    free(h);
}
END_TEST

int main(void)
{
    return test_main("topologies", NULL);
}
