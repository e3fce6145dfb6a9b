/* test_plan.c — placement properties on synthetic hwloc topologies (cpu:N devices;
 * GPU-locality placement needs PCI/OS devices in an XML topology: not covered here). */
#include <check.h>
#include <errno.h>
#include <unistd.h>
#include <stdlib.h>
#include <string.h>

#include "supervisor/config.h"
#include "supervisor/plan.h"

#include "helper_plan.h"
#include "helper_test.h"

static void make_plan(const char *synthetic, const char *devices, struct plan *p)
{
    struct cuzkd_config c;
    hwloc_topology_t t;
    char err[512];

    config_defaults(&c);
    ck_assert_int_eq(config_set(&c, "devices", devices, err, sizeof(err)), 0);
    ck_assert_msg(plan_topology_load(&t, NULL, synthetic, err, sizeof(err)) == 0, "%s", err);
    ck_assert_msg(plan_compute(t, &c, p, err, sizeof(err)) == 0, "%s", err);
    hwloc_topology_destroy(t);
}

/* Every worker, one synth per node and the finalizer are placed, each with cores. */
static void check_complete(const struct plan *p, uint32_t workers, uint32_t nodes)
{
    uint32_t w = 0, s = 0, f = 0;

    ck_assert_uint_eq(p->n_workers, workers);
    ck_assert_uint_eq(p->n_nodes, nodes);
    ck_assert_uint_eq(p->n_synth, nodes);
    for (uint32_t i = 0; i < p->n_places; i++) {
        const struct plan_place *pl = &p->places[i];

        ck_assert_int_gt(CPU_COUNT(&pl->cpus), 0);
        w += pl->role == PLAN_WORKER;
        s += pl->role == PLAN_SYNTH;
        f += pl->role == PLAN_FINALIZER;
        if (pl->role == PLAN_SYNTH) ck_assert_int_eq(pl->numa_node, p->node_os[pl->index]);
    }
    ck_assert_uint_eq(w, workers);
    ck_assert_uint_eq(s, nodes);
    ck_assert_uint_eq(f, 1);
}

/* A CPU-backend plan of synthetic topology with devices: workers and nodes as said,
 * all placed, the workers splitting every core of their node (helper_plan.h). */
static void plan_fits(const char *synthetic, const char *devices, uint32_t workers, uint32_t nodes,
                      struct plan *p)
{
    make_plan(synthetic, devices, p);
    check_complete(p, workers, nodes);
    test_plan_check_cpu_split(p);
}

TEST(test_plan_two_socket_workers_split_every_core, 1)
{
    struct plan p;

    plan_fits("pack:2 numa:1 core:16 pu:2", "cpu:8", 8, 2, &p);
    /* workers alternate nodes, and their cores lie on their node */
    for (uint32_t i = 0; i < p.n_places; i++)
        if (p.places[i].role == PLAN_WORKER)
            ck_assert_int_eq(p.places[i].numa_node, p.node_os[p.places[i].index % 2]);
}
END_TEST

TEST(test_plan_one_socket_four_workers, 1)
{
    struct plan p;

    plan_fits("pack:1 numa:1 core:8 pu:2", "cpu:4", 4, 1, &p);
    /* 8 cores, 4 workers: 2 each, none kept back for synth or finalizer */
    for (uint32_t i = 0; i < p.n_places; i++)
        if (p.places[i].role == PLAN_WORKER) ck_assert_uint_eq(p.places[i].n_cores, 2);
}
END_TEST

TEST(test_plan_four_nodes, 1)
{
    struct plan p;

    plan_fits("pack:2 numa:2 core:4 pu:1", "cpu:8", 8, 4, &p);
}
END_TEST

/* One CPU worker on a 16-core node computes on all 16 (it had 11 while synth and
 * finalizer kept cores they use 2% of the time, issue 21). */
TEST(test_plan_one_cpu_worker_gets_the_node, 1)
{
    struct plan p;

    plan_fits("pack:1 numa:1 core:16 pu:2", "cpu:1", 1, 1, &p);
    ck_assert_uint_eq(p.places[0].role, PLAN_WORKER);
    ck_assert_uint_eq(p.places[0].n_cores, 16);
    ck_assert_int_eq(CPU_COUNT(&p.places[0].cpus), 32);
}
END_TEST

TEST(test_plan_too_few_cores_shares_and_says_so, 1)
{
    struct plan p;

    make_plan("pack:1 core:2 pu:1", "cpu:2", &p);
    check_complete(&p, 2, 1);
    ck_assert_int_eq(p.shared, 1);
    ck_assert_ptr_nonnull(strstr(p.note, "shared"));
    /* workers still get distinct cores */
    {
        cpu_set_t x;

        CPU_AND(&x, &p.places[0].cpus, &p.places[1].cpus);
        ck_assert_int_eq(CPU_COUNT(&x), 0);
    }
}
END_TEST

TEST(test_plan_cuda_without_gpus_is_refused, 1)
{
    struct cuzkd_config c;
    struct plan p;
    hwloc_topology_t t;
    char err[512];

    config_defaults(&c);
    ck_assert_int_eq(config_set(&c, "devices", "cuda:all", err, sizeof(err)), 0);
    ck_assert_int_eq(plan_topology_load(&t, NULL, "pack:1 core:4 pu:1", err, sizeof(err)), 0);
    ck_assert_int_eq(plan_compute(t, &c, &p, err, sizeof(err)), -ENODEV);
    ck_assert_ptr_nonnull(strstr(err, "no NVIDIA GPU"));
    hwloc_topology_destroy(t);
}
END_TEST

TEST(test_config_file_and_command_line, 1)
{
    struct cuzkd_config c;
    char path[] = "/tmp/cuzk-test-config-XXXXXX", err[512];
    int fd = mkstemp(path);
    char *argv[] = { "cuzkd", "--config", path, "--buffers", "3", NULL };
    FILE *f;

    ck_assert_int_ge(fd, 0);
    f = fdopen(fd, "w");
    fputs("[cuzkd]\n# comment\ninstance = fromfile\nbuffers = 9\ndevices = cpu:3\nforeground\n", f);
    fclose(f);
    ck_assert_msg(config_parse_args(&c, 5, argv, err, sizeof(err)) == 0, "%s", err);
    ck_assert_str_eq(c.instance, "fromfile");
    ck_assert_uint_eq(c.buffers, 3); /* the command line wins */
    ck_assert_uint_eq(c.n_devices, 3);
    ck_assert_int_eq(c.foreground, 1);
    ck_assert_int_eq(config_set(&c, "devices", "gpu:1", err, sizeof(err)), -EINVAL);
    ck_assert_int_eq(config_set(&c, "instance", "bad/name", err, sizeof(err)), -EINVAL);
    ck_assert_int_eq(config_set(&c, "devices", "cuda:0,2", err, sizeof(err)), 0);
    ck_assert_uint_eq(c.n_devices, 2);
    ck_assert_int_eq(c.cuda_ids[1], 2);
    unlink(path);
}
END_TEST

/* --test-fake-topology: a two-node plan runs here; cpus are this machine's, nodes kept. */
TEST(test_plan_fake_here_maps_cpus_keeps_nodes, 1)
{
    struct plan p;
    cpu_set_t online;
    int nodes[2] = { 0, 0 };

    ck_assert_int_eq(sched_getaffinity(0, sizeof(online), &online), 0);
    make_plan("pack:2 numa:1 core:8 pu:2", "cpu:2", &p);
    ck_assert_int_eq(plan_fake_here(&p), 0);
    ck_assert_int_eq(p.fake, 1);
    ck_assert_ptr_nonnull(strstr(p.note, "no memory binding"));
    for (uint32_t i = 0; i < p.n_places; i++) {
        const struct plan_place *pl = &p.places[i];
        cpu_set_t x;

        CPU_AND(&x, &pl->cpus, &online);
        ck_assert_int_gt(CPU_COUNT(&pl->cpus), 0);
        ck_assert_msg(CPU_EQUAL(&x, &pl->cpus), "%s %u: a cpu this machine lacks", plan_role_name(pl->role),
                      pl->index);
        if (pl->role == PLAN_WORKER) ck_assert_int_eq(pl->numa_node, p.node_os[pl->index % 2]);
        if (pl->role == PLAN_SYNTH) nodes[pl->index] = pl->numa_node;
    }
    ck_assert_int_ne(nodes[0], nodes[1]);
    /* the plan's processes start here: plan_apply pins to real cpus, no mempolicy */
    ck_assert_int_eq(plan_apply(&p, &p.places[1]), 0);
    ck_assert_int_eq(sched_setaffinity(0, sizeof(online), &online), 0);
}
END_TEST

int main(void)
{
    return test_main("plan", NULL);
}
