/* budget.c — the bytes of bodies held at once, in all and per tenant (budget.h). */
#include "api/budget.h"

#include <errno.h>
#include <pthread.h>

#include "api/tenant_count.h"
#include "base/locked.h"

/* The bytes held by all, and by each tenant (tenant_count.h): b.mu is taken first,
 * so that a tenant's share and the whole are checked and taken in one step. */
static struct {
    pthread_mutex_t mu;
    uint64_t total, used;
    struct tenant_count held;
} b = { .mu = PTHREAD_MUTEX_INITIALIZER, .total = API_INFLIGHT_DEFAULT, .held = TENANT_COUNT_INIT };

void api_budget_init(uint64_t total)
{
    pthread_mutex_lock(&b.mu);
    b.total = total;
    pthread_mutex_unlock(&b.mu);
}

int api_budget_take(const char *tenant, uint64_t n)
{
    int rc;

    pthread_mutex_lock(&b.mu);
    /* The tenant's share first: a tenant past it is told so (429), even when the
     * whole budget is short too. */
    rc = tenant_count_add(&b.held, tenant, n, b.total / 2);
    if (rc == -ENOMEM)
        rc = -EAGAIN;
    else if (!rc && n > b.total - b.used) {
        tenant_count_sub(&b.held, tenant, n);
        rc = -EAGAIN;
    } else if (!rc)
        b.used += n;
    pthread_mutex_unlock(&b.mu);
    return rc;
}

void api_budget_give(const char *tenant, uint64_t n)
{
    if (!n) return;
    pthread_mutex_lock(&b.mu);
    tenant_count_sub(&b.held, tenant, n);
    b.used -= n < b.used ? n : b.used;
    pthread_mutex_unlock(&b.mu);
}

uint64_t api_budget_used(void)
{
    return locked_read_u64(&b.mu, &b.used);
}
