/* helper_shm.h — a data segment of the test process's own, for the tests of what lives
 * in it (test_jobtab.c, test_pool.c, test_shm_stress.c). */
#ifndef CUZK_TEST_HELPER_SHM_H
#define CUZK_TEST_HELPER_SHM_H

#include <stddef.h>
#include <stdint.h>

#include "shm/shmlayout.h"

/* A layout of one ring of ring_capacity and the given table and pool sizes (one node). */
struct shmlayout_config test_shm_config(uint32_t ring_capacity, uint32_t max_jobs, uint32_t max_parts,
                                        uint32_t buf_count, uint32_t buf_size);

/* Create d as instance PREFIX<pid> (its name into inst, len bytes), replacing a segment
 * a killed run left. */
void test_shm_create(struct shmlayout_data *d, char *inst, size_t len, const char *prefix,
                     const struct shmlayout_config *cfg);

/* Detach d and remove its segment. */
void test_shm_destroy(struct shmlayout_data *d, const char *inst);

#endif
