/* cuzkd — the supervisor: options, placement, then the event loop (supervisor.c). */
#include <stdio.h>

#include "cuzk/config.h"
#include "cuzk/plan.h"
#include "cuzk/supervisor.h"

int main(int argc, char **argv)
{
	static struct cuzkd_config c;
	static struct plan p;
	hwloc_topology_t topo;
	char err[1024];
	int rc;

	rc = config_parse_args(&c, argc, argv, err, sizeof(err));
	if (rc == 1)
		return 0;
	if (rc || (rc = config_validate(&c, err, sizeof(err)))) {
		fprintf(stderr, "cuzkd: %s\n", err);
		return 2;
	}
	if (plan_topology_load(&topo, c.topology, c.synthetic, err, sizeof(err))) {
		fprintf(stderr, "cuzkd: %s\n", err);
		return 2;
	}
	rc = plan_compute(topo, &c, &p, err, sizeof(err));
	hwloc_topology_destroy(topo);
	if (rc) {
		fprintf(stderr, "cuzkd: %s\n", err);
		return 2;
	}
	plan_print(c.plan_only ? stdout : stderr, &p);
	if (c.plan_only)
		return 0;
	return supervisor_run(&c, &p);
}
