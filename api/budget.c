/* budget.c — the bytes of bodies held at once, in all and per tenant (budget.h). */
#include "api/budget.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "api/api.h"

/* Per tenant by name, as http.c counts requests: entries stay (a tenant has a line or
 * had one), so the table is as long as the names ever seen. */
static struct {
    pthread_mutex_t mu;
    uint64_t total, used;
    struct held {
        char name[API_TENANT_MAX + 1];
        uint64_t bytes;
    } * t;
    size_t len, cap;
} b = { .mu = PTHREAD_MUTEX_INITIALIZER, .total = API_INFLIGHT_DEFAULT };

void api_budget_init(uint64_t total)
{
    pthread_mutex_lock(&b.mu);
    b.total = total;
    pthread_mutex_unlock(&b.mu);
}

/* The tenant's entry (b.mu held): NULL when the table cannot grow. */
static struct held *entry(const char *tenant)
{
    size_t i;

    for (i = 0; i < b.len; i++)
        if (!strcmp(b.t[i].name, tenant)) return &b.t[i];
    if (b.len == b.cap) {
        size_t nc = b.cap ? 2 * b.cap : 16;
        struct held *nt = realloc(b.t, nc * sizeof(*nt));

        if (!nt) return NULL;
        b.t = nt;
        b.cap = nc;
    }
    memset(&b.t[b.len], 0, sizeof(b.t[b.len]));
    strncpy(b.t[b.len].name, tenant, API_TENANT_MAX);
    return &b.t[b.len++];
}

int api_budget_take(const char *tenant, uint64_t n)
{
    struct held *h;
    int rc = 0;

    pthread_mutex_lock(&b.mu);
    /* The tenant's share first: a tenant past it is told so (429), even when the
     * whole budget is short too. h->bytes <= total / 2 always holds. */
    if (!(h = entry(tenant)))
        rc = -EAGAIN;
    else if (n > b.total / 2 - h->bytes)
        rc = -EDQUOT;
    else if (n > b.total - b.used)
        rc = -EAGAIN;
    else {
        h->bytes += n;
        b.used += n;
    }
    pthread_mutex_unlock(&b.mu);
    return rc;
}

void api_budget_give(const char *tenant, uint64_t n)
{
    struct held *h;

    if (!n) return;
    pthread_mutex_lock(&b.mu);
    if ((h = entry(tenant))) h->bytes -= n < h->bytes ? n : h->bytes;
    b.used -= n < b.used ? n : b.used;
    pthread_mutex_unlock(&b.mu);
}

uint64_t api_budget_used(void)
{
    uint64_t u;

    pthread_mutex_lock(&b.mu);
    u = b.used;
    pthread_mutex_unlock(&b.mu);
    return u;
}
