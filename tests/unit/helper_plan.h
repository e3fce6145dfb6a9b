/* helper_plan.h — what the placement tests (test_plan.c, test_topologies.c) both check. */
#ifndef CUZK_TEST_HELPER_PLAN_H
#define CUZK_TEST_HELPER_PLAN_H

#include "supervisor/plan.h"

/* No two places of p share a core (the failure names both). */
void test_plan_check_disjoint(const struct plan *p);

/* A CPU-backend plan: the workers of each node split all of its cores (none shared
 * between workers, none left idle, evenly to a core), synth and finalizer share them. */
void test_plan_check_cpu_split(const struct plan *p);

#endif
