/* tenant_count.h — a count per tenant, under a cap (api/tenant_count.c).
 *
 * cuzk-api bounds what each tenant holds at once: its requests in flight (http.c),
 * its long polls (bell.c), the bytes of its bodies being received (budget.c). Each is
 * a table of counts by tenant name: a tokens reload replaces the lines while the
 * requests under way keep their counts, so the key is the name, not the line.
 * Entries stay once made (a tenant has a line or had one; the file is the
 * operator's), so a table is as long as the names ever seen. */
#ifndef CUZK_API_TENANT_COUNT_H
#define CUZK_API_TENANT_COUNT_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "api/api.h"

struct tenant_count {
    pthread_mutex_t mu;
    struct tenant_count_entry {
        char name[API_TENANT_MAX + 1];
        uint64_t n;
    } * t;
    size_t len, cap;
};
#define TENANT_COUNT_INIT               \
    {                                   \
        .mu = PTHREAD_MUTEX_INITIALIZER \
    }

/* n more for tenant, unless its count would pass cap: 0; -EDQUOT past the cap,
 * -ENOMEM when the table cannot grow (nothing is counted on failure). */
int tenant_count_add(struct tenant_count *tc, const char *tenant, uint64_t n, uint64_t cap);
/* n fewer for tenant (never below 0). */
void tenant_count_sub(struct tenant_count *tc, const char *tenant, uint64_t n);
/* Every tenant's count together. */
uint64_t tenant_count_total(struct tenant_count *tc);

#endif
