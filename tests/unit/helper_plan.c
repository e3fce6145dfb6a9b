/* helper_plan.c — shared placement checks (see helper_plan.h). */
#include "helper_plan.h"

#include <check.h>

void test_plan_check_disjoint(const struct plan *p)
{
	for (uint32_t i = 0; i < p->n_places; i++)
		for (uint32_t j = i + 1; j < p->n_places; j++) {
			cpu_set_t x;

			CPU_AND(&x, &p->places[i].cpus, &p->places[j].cpus);
			ck_assert_msg(CPU_COUNT(&x) == 0, "%s %u and %s %u share a core",
				      plan_role_name(p->places[i].role), p->places[i].index,
				      plan_role_name(p->places[j].role), p->places[j].index);
		}
}
