/* helper_shm.c — the tests' own data segment (see helper_shm.h). */
#include "helper_shm.h"

#include <check.h>
#include <stdio.h>
#include <unistd.h>

struct shmlayout_config test_shm_config(uint32_t ring_capacity, uint32_t max_jobs, uint32_t max_parts,
                                        uint32_t buf_count, uint32_t buf_size)
{
    struct shmlayout_config c = { .n_rings = 1, .max_jobs = max_jobs, .max_parts = max_parts };

    c.ring_capacity[0] = ring_capacity;
    c.buf_count = buf_count;
    c.buf_size = buf_size;
    return c;
}

void test_shm_create(struct shmlayout_data *d, char *inst, size_t len, const char *prefix,
                     const struct shmlayout_config *cfg)
{
    char err[512];

    snprintf(inst, len, "%s%d", prefix, (int)getpid());
    ck_assert_msg(shmlayout_data_create(d, inst, cfg, SEGMENT_REPLACE, err, sizeof(err)) == 0, "%s", err);
}

void test_shm_destroy(struct shmlayout_data *d, const char *inst)
{
    shmlayout_data_detach(d);
    segment_destroy(inst, SEG_KIND_DATA);
}
