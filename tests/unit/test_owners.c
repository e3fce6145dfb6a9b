/* test_owners.c — owners of preloads and the quotas' defaults (owners.h). The job
 * checks run against a live table in tests/security/owners.sh. */
#include <check.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "supervisor/owners.h"

#include "helper_test.h"

/* Two ordinary uids: neither root nor ours. */
#define UA 4242
#define UB 4343

static void preload(struct pipe_circuits *cs, int i, const char *path)
{
    cs->c[i].action = PIPE_CIRCUIT_PRELOAD;
    snprintf(cs->c[i].path, sizeof(cs->c[i].path), "%s", path);
}

TEST(test_owners_quota_defaults_leave_room, 1)
{
    struct cuzkd_config c;
    struct owners_quota q;

    memset(&c, 0, sizeof(c));
    c.max_jobs = 256;
    c.max_parts = 4096;
    owners_quota(&c, &q);
    ck_assert_uint_eq(q.jobs, 128);
    ck_assert_uint_eq(q.parts, 2048);
    ck_assert_uint_eq(q.preloads, 1);
    c.max_jobs = 1; /* never 0: a quota of 0 would lock everyone out */
    c.quota_partitions = 7;
    owners_quota(&c, &q);
    ck_assert_uint_eq(q.jobs, 1);
    ck_assert_uint_eq(q.parts, 7);
}
END_TEST

TEST(test_owners_preloads_are_their_owners, 1)
{
    struct pipe_circuits *cs = calloc(1, sizeof(*cs));
    json_t *map = json_object();
    const char *code = NULL;
    char m[512];

    ck_assert(geteuid() != UA && geteuid() != UB);
    preload(cs, 0, "/a.zkey");
    owners_preload_note(map, 0, "/a.zkey", UA);
    /* B may neither evict nor replace A's; A may do both; root may. */
    ck_assert_int_eq(owners_preload_check(cs, map, UB, 1, "/a.zkey", 1, &code, m, sizeof(m)), -EPERM);
    ck_assert_str_eq(code, PROTO_E_NOT_OWNER);
    ck_assert(strstr(m, "uid 4242"));
    ck_assert_int_eq(owners_preload_check(cs, map, UB, 0, "/a.zkey", 1, &code, m, sizeof(m)), -EPERM);
    ck_assert_int_eq(owners_preload_check(cs, map, UA, 1, "/a.zkey", 1, &code, m, sizeof(m)), 0);
    ck_assert_int_eq(owners_preload_check(cs, map, UA, 0, "/a.zkey", 1, &code, m, sizeof(m)), 0);
    ck_assert_int_eq(owners_preload_check(cs, map, 0, 1, "/a.zkey", 1, &code, m, sizeof(m)), 0);
    /* A's quota of 1 is used: a second zkey is refused, B's first is not. */
    ck_assert_int_eq(owners_preload_check(cs, map, UA, 0, "/b.zkey", 1, &code, m, sizeof(m)), -EDQUOT);
    ck_assert_str_eq(code, PROTO_E_QUOTA);
    ck_assert(strstr(m, "--quota-preloads 1"));
    ck_assert_int_eq(owners_preload_check(cs, map, UB, 0, "/b.zkey", 1, &code, m, sizeof(m)), 0);
    /* An evicted entry no longer counts, nor does a stale owner of a freed entry. */
    cs->c[0].action = PIPE_CIRCUIT_EVICT;
    ck_assert_int_eq(owners_preload_check(cs, map, UA, 0, "/b.zkey", 1, &code, m, sizeof(m)), 0);
    owners_preload_note(map, 1, "/a.zkey", UA);
    ck_assert_ptr_null(json_object_get(map, "/a.zkey"));
    json_decref(map);
    free(cs);
}
END_TEST

int main(void)
{
    return test_main("owners", NULL);
}
