/* cuzkd — the supervisor: options, placement, then the event loop (supervisor.c). */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "supervisor/check.h"
#include "supervisor/config.h"
#include "base/error.h"
#include "supervisor/plan.h"
#include "supervisor/supervisor.h"

int main(int argc, char **argv)
{
    static struct cuzkd_config c;
    static struct plan p;
    struct plan_driver_gpus drv, *use = NULL;
    hwloc_topology_t topo;
    char err[1024], why[256];
    int rc;

    rc = config_parse_args(&c, argc, argv, err, sizeof(err));
    if (rc == 1) return CUZK_EXIT_OK;
    if (rc || (rc = config_validate(&c, err, sizeof(err)))) {
        fprintf(stderr, "cuzkd: %s\n", err);
        return CUZK_EXIT_USAGE;
    }
    if (c.driver_gpus[0] && check_parse_gpu_list(c.driver_gpus, &drv)) {
        fprintf(stderr,
                "cuzkd: --driver-gpus %s: expected PCI addresses like "
                "0000:1a:00.0,0000:34:00.0 (or none)\n",
                c.driver_gpus);
        return CUZK_EXIT_USAGE;
    }
    if (c.check) return check_run(&c, stdout);
    if (plan_topology_load(&topo, c.topology, c.synthetic, err, sizeof(err))) {
        fprintf(stderr, "cuzkd: %s\n", err);
        return CUZK_EXIT_USAGE;
    }
    /* CUDA devices: number them as the driver does. This machine's driver, unless the
     * plan is for another machine (--topology/--synthetic) or tests name the list. */
    if (c.driver_gpus[0])
        use = &drv;
    else if (c.dev_kind == CONFIG_DEV_CUDA && !c.topology[0] && !c.synthetic[0]) {
        if (check_driver_gpus(&drv, why, sizeof(why)) == 0)
            use = &drv;
        else
            fprintf(stderr, "cuzkd: %s: numbering GPUs as the topology shows them\n", why);
    }
    rc = plan_compute_with(topo, &c, use, &p, err, sizeof(err));
    hwloc_topology_destroy(topo);
    if (rc) {
        fprintf(stderr, "cuzkd: %s\n", err);
        return CUZK_EXIT_USAGE;
    }
    if (c.test_fake_topology && !c.plan_only && (rc = plan_fake_here(&p))) {
        fprintf(stderr,
                "cuzkd: --test-fake-topology: cannot read this machine's cpus: "
                "%s\n",
                strerror(-rc));
        return CUZK_EXIT_USAGE;
    }
    plan_print(c.plan_only ? stdout : stderr, &p);
    if (c.plan_only) return CUZK_EXIT_OK;
    return supervisor_run(&c, &p);
}
