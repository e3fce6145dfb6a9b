/* helper_plan.c — shared placement checks (see helper_plan.h). */
#include "helper_plan.h"

#include <check.h>
#include <stdint.h>
#include <string.h>

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

/* A CPU-backend plan (supervisor/plan.c never reserves cores for synth and finalizer
 * there): the workers of a node split all of its cores without sharing one between
 * them, evenly to a core; each synth has its whole node, the finalizer one core of
 * node 0's; the plan says the cores are shared, and why. */
void test_plan_check_cpu_split(const struct plan *p)
{
    const struct plan_place *synth[PLAN_MAX_NODES] = { 0 };
    cpu_set_t covered[PLAN_MAX_NODES];
    uint32_t least[PLAN_MAX_NODES], most[PLAN_MAX_NODES];

    ck_assert_int_eq(p->shared, 1);
    ck_assert_msg(strstr(p->note, "CPU backend") != NULL, "note: %s", p->note);
    for (uint32_t k = 0; k < PLAN_MAX_NODES; k++) {
        CPU_ZERO(&covered[k]);
        least[k] = UINT32_MAX;
        most[k] = 0;
    }
    for (uint32_t i = 0; i < p->n_places; i++)
        if (p->places[i].role == PLAN_SYNTH) synth[p->places[i].index] = &p->places[i];
    for (uint32_t i = 0; i < p->n_places; i++) {
        const struct plan_place *a = &p->places[i];
        uint32_t k = 0;
        cpu_set_t x;

        while (k < p->n_nodes && p->node_os[k] != a->numa_node) k++;
        ck_assert_uint_lt(k, p->n_nodes);
        ck_assert_ptr_nonnull(synth[k]);
        CPU_AND(&x, &a->cpus, &synth[k]->cpus);
        ck_assert_msg(CPU_EQUAL(&x, &a->cpus), "%s %u: cpus outside its node's", plan_role_name(a->role),
                      a->index);
        if (a->role == PLAN_FINALIZER) {
            ck_assert_uint_eq(k, 0);
            ck_assert_uint_eq(a->n_cores, 1);
        }
        if (a->role != PLAN_WORKER) continue;
        ck_assert_int_lt(a->device, 0);
        CPU_OR(&covered[k], &covered[k], &a->cpus);
        least[k] = a->n_cores < least[k] ? a->n_cores : least[k];
        most[k] = a->n_cores > most[k] ? a->n_cores : most[k];
        for (uint32_t j = i + 1; j < p->n_places; j++) {
            if (p->places[j].role != PLAN_WORKER) continue;
            CPU_AND(&x, &a->cpus, &p->places[j].cpus);
            ck_assert_msg(CPU_COUNT(&x) == 0, "workers %u and %u share a core", a->index, p->places[j].index);
        }
    }
    for (uint32_t k = 0; k < p->n_nodes; k++) {
        if (!most[k]) continue; /* a node without workers */
        ck_assert_msg(CPU_EQUAL(&covered[k], &synth[k]->cpus), "node %d: the workers leave cores idle",
                      p->node_os[k]);
        ck_assert_uint_le(most[k] - least[k], 1);
    }
}
