/* test_api_tenant_count.c — the per-tenant counts of cuzk-api (api/tenant_count.h):
 * each tenant under its own cap, the others untouched, a count never below zero, and
 * many threads counting at once ending where they began. */
#include <check.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include "api/tenant_count.h"

#include "helper_test.h"

TEST(test_tenant_count_caps_each_tenant_apart, 1)
{
    struct tenant_count tc = TENANT_COUNT_INIT;

    ck_assert_int_eq(tenant_count_add(&tc, "alice", 2, 3), 0);
    ck_assert_int_eq(tenant_count_add(&tc, "alice", 1, 3), 0);
    ck_assert_int_eq(tenant_count_add(&tc, "alice", 1, 3), -EDQUOT); /* at her cap */
    ck_assert_int_eq(tenant_count_add(&tc, "bob", 3, 3), 0);         /* bob has his own */
    ck_assert_int_eq(tenant_count_add(&tc, "alice", 1, 2), -EDQUOT); /* a cap lowered under her */
    ck_assert_uint_eq(tenant_count_total(&tc), 6);
    tenant_count_sub(&tc, "alice", 2);
    ck_assert_int_eq(tenant_count_add(&tc, "alice", 2, 3), 0);
    tenant_count_sub(&tc, "bob", 10);  /* never below zero */
    tenant_count_sub(&tc, "carol", 1); /* never counted: nothing */
    ck_assert_uint_eq(tenant_count_total(&tc), 3);
    ck_assert_int_eq(tenant_count_add(&tc, "bob", UINT64_MAX, UINT64_MAX - 1), -EDQUOT);
    free(tc.t); /* cuzk-api's tables live as long as the process; this one ends here */
}

static struct tenant_count shared = TENANT_COUNT_INIT;

static void *churn(void *arg)
{
    char name[16];

    snprintf(name, sizeof(name), "t%d", (int)(intptr_t)arg % 40); /* more names than the first table holds */
    for (int i = 0; i < 20000; i++)
        if (!tenant_count_add(&shared, name, 1, 1000000)) tenant_count_sub(&shared, name, 1);
    return NULL;
}

TEST(test_tenant_count_threads_end_where_they_began, 1)
{
    pthread_t th[8];

    for (intptr_t i = 0; i < 8; i++)
        ck_assert_int_eq(pthread_create(&th[i], NULL, churn, (void *)(i * 7)), 0);
    for (int i = 0; i < 8; i++) pthread_join(th[i], NULL);
    ck_assert_uint_eq(tenant_count_total(&shared), 0);
}

int main(void)
{
    return test_main("api_tenant_count", NULL);
}
