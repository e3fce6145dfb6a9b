/* owners.c — owners of jobs and preloads, and the per-uid quotas (owners.h). */
#include "supervisor/owners.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

int owners_privileged(uid_t uid)
{
    return uid == 0 || uid == geteuid();
}

int owners_may_see(uid_t viewer, int privileged, int api_user, uid_t owner, int tenant)
{
    if (api_user) return owner == viewer || tenant;
    return privileged || owner == viewer;
}

static uint32_t half(uint32_t n)
{
    return n / 2 ? n / 2 : 1;
}

uint32_t owners_reserve(uint32_t n)
{
    return n / 8 ? n / 8 : 1;
}

void owners_quota(const struct cuzkd_config *c, struct owners_quota *q)
{
    q->jobs = c->quota_jobs ? c->quota_jobs : half(c->max_jobs);
    q->parts = c->quota_partitions ? c->quota_partitions : half(c->max_parts);
    q->preloads = c->quota_preloads ? c->quota_preloads : half(PIPE_PRELOAD_MAX);
}

int owners_submit_check(const struct jobtab *jt,
                        uid_t (*owner_of)(const void *arg, uint32_t j, const char **tenant), const void *arg,
                        const struct owners_who *who, uint32_t n, const struct owners_quota *q, char *m,
                        size_t len)
{
    uint32_t jobs = 0, parts = 0, all_jobs = 0, all_parts = 0;
    uint32_t rj = owners_reserve(jt->hdr->max_jobs), rp = owners_reserve(jt->hdr->max_parts);
    const char *tenant = who->tenant && who->tenant[0] ? who->tenant : NULL;
    char whom[CONTROL_TENANT_MAX + 16];

    if (owners_privileged(who->uid) && !tenant) return 0;
    for (uint32_t j = 0; j < jt->hdr->max_jobs; j++) {
        const struct jobtab_job *jb = &jt->jobs[j];
        const char *jt_tenant = "";
        uid_t owner;
        uint32_t p = 0;

        /* Acquire: n_parts and first_part were written before the job was published. */
        if (jobtab_word_state(barrier_load_acquire(&((struct jobtab_job *)jb)->word)) != JOBTAB_QUEUED)
            continue;
        owner = owner_of(arg, j, &jt_tenant);
        if (owners_privileged(owner) && !jt_tenant[0]) continue; /* the operator's own */
        for (uint32_t i = 0; i < jb->n_parts; i++) {
            uint32_t st = jobtab_word_state(jobtab_part_load(jt, jb->first_part + i));

            p += st >= JOBTAB_QUEUED && st < JOBTAB_DONE;
        }
        all_jobs++;
        all_parts += p;
        if (tenant ? !strcmp(jt_tenant, tenant) : owner == who->uid && !jt_tenant[0]) {
            jobs++;
            parts += p;
        }
    }
    if (tenant)
        snprintf(whom, sizeof(whom), "tenant %s", tenant);
    else
        snprintf(whom, sizeof(whom), "uid %u", (unsigned)who->uid);
    /* The operator always gets through: ordinary users together (the HTTP API's
     * tenants among them) never take the last eighth of the table (two users at their
     * quotas of half each made root's submit fail "full"). */
    if (all_jobs + 1 > jt->hdr->max_jobs - rj || all_parts + n > jt->hdr->max_parts - rp) {
        snprintf(m, len,
                 "full: users' jobs hold %u of %u job slots and %u of %u partitions; "
                 "the last %u and %u are kept for the operator: retry when some finish",
                 all_jobs, jt->hdr->max_jobs, all_parts, jt->hdr->max_parts, rj, rp);
        return -ENOSPC;
    }
    if (tenant && who->max_running && jobs + 1 > who->max_running) {
        snprintf(m, len,
                 "quota: %s has %u job(s) running, its max-running-jobs is %u; retry when one "
                 "finishes",
                 whom, jobs, who->max_running);
        return -EDQUOT;
    }
    if (jobs + 1 > q->jobs) {
        snprintf(m, len,
                 "quota: %s has %u job(s) running, the most one user may "
                 "(--quota-jobs %u); retry when one finishes",
                 whom, jobs, q->jobs);
        return -EDQUOT;
    }
    if (parts + n > q->parts) {
        snprintf(m, len,
                 "quota: %s has %u partition(s) queued or in progress, this "
                 "job's %u would pass --quota-partitions %u; %s",
                 whom, parts, n, q->parts, n > q->parts ? "split it" : "retry when some finish");
        return -EDQUOT;
    }
    return 0;
}

/* Index of the PRELOAD entry named path, or -1. */
static int entry_of(const struct pipe_circuits *cs, const char *path)
{
    for (int i = 0; i < PIPE_CIRCUITS; i++)
        if (cs->c[i].action == PIPE_CIRCUIT_PRELOAD && !strcmp(cs->c[i].path, path)) return i;
    return -1;
}

int owners_preload_check(const struct pipe_circuits *cs, json_t *map, uid_t uid, int evict, const char *path,
                         uint32_t quota, const char **code, char *m, size_t len)
{
    json_t *o = json_object_get(map, path);
    uint32_t mine = 0;
    const char *k;
    json_t *v;

    if (owners_privileged(uid)) return 0;
    /* status lists every preload by name: saying it is another's reveals no more. */
    if (entry_of(cs, path) >= 0 && o && (uid_t)json_integer_value(o) != uid) {
        *code = PROTO_E_NOT_OWNER;
        snprintf(m, len,
                 "zkey %s is preloaded by uid %lld, not by uid %u: only its owner "
                 "(or root, or cuzkd's user) may %s it",
                 path, (long long)json_integer_value(o), (unsigned)uid, evict ? "evict" : "replace");
        return -EPERM;
    }
    if (evict || entry_of(cs, path) >= 0)
        return 0; /* an evict, or a preload of one's own again: no new slot */
    json_object_foreach (map, k, v) mine += (uid_t)json_integer_value(v) == uid && entry_of(cs, k) >= 0;
    if (mine + 1 > quota) {
        *code = PROTO_E_QUOTA;
        snprintf(m, len,
                 "quota: uid %u holds %u preload(s), the most one user may "
                 "(--quota-preloads %u); evict one first",
                 (unsigned)uid, mine, quota);
        return -EDQUOT;
    }
    return 0;
}

void owners_preload_note(json_t *map, int evict, const char *path, uid_t uid)
{
    if (evict)
        json_object_del(map, path);
    else
        json_object_set_new(map, path, json_integer((json_int_t)uid));
}
