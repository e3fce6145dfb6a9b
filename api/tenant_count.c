/* tenant_count.c — a count per tenant, under a cap (tenant_count.h). */
#include "api/tenant_count.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* tenant's entry (tc->mu held); with make, added at 0 when missing. NULL: missing
 * and not made, or the table cannot grow. */
static struct tenant_count_entry *entry(struct tenant_count *tc, const char *tenant, int make)
{
    for (size_t i = 0; i < tc->len; i++)
        if (!strcmp(tc->t[i].name, tenant)) return &tc->t[i];
    if (!make) return NULL;
    if (tc->len == tc->cap) {
        size_t nc = tc->cap ? 2 * tc->cap : 16;
        struct tenant_count_entry *nt = realloc(tc->t, nc * sizeof(*nt));

        if (!nt) return NULL;
        tc->t = nt;
        tc->cap = nc;
    }
    snprintf(tc->t[tc->len].name, sizeof(tc->t[tc->len].name), "%s", tenant);
    tc->t[tc->len].n = 0;
    return &tc->t[tc->len++];
}

int tenant_count_add(struct tenant_count *tc, const char *tenant, uint64_t n, uint64_t cap)
{
    struct tenant_count_entry *e;
    int rc = 0;

    pthread_mutex_lock(&tc->mu);
    if (!(e = entry(tc, tenant, 1)))
        rc = -ENOMEM;
    else if (e->n > cap || n > cap - e->n) /* a cap lowered under a count: no more */
        rc = -EDQUOT;
    else
        e->n += n;
    pthread_mutex_unlock(&tc->mu);
    return rc;
}

void tenant_count_sub(struct tenant_count *tc, const char *tenant, uint64_t n)
{
    struct tenant_count_entry *e;

    pthread_mutex_lock(&tc->mu);
    if ((e = entry(tc, tenant, 0))) e->n -= n < e->n ? n : e->n;
    pthread_mutex_unlock(&tc->mu);
}

uint64_t tenant_count_total(struct tenant_count *tc)
{
    uint64_t n = 0;

    pthread_mutex_lock(&tc->mu);
    for (size_t i = 0; i < tc->len; i++) n += tc->t[i].n;
    pthread_mutex_unlock(&tc->mu);
    return n;
}
