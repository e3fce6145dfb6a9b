/* owners.h — who may act on whose work in cuzkd (supervisor/owners.c): every job and
 * every preload records the uid that submitted it (SO_PEERCRED); cancel and evict
 * act only on one's own unless privileged (root or cuzkd's own uid); restart, drain
 * and shutdown are for the privileged alone; and per-uid quotas keep one client from
 * filling the job table, the queue or the preload slots (--quota-jobs,
 * --quota-partitions, --quota-preloads; the privileged are exempt). */
#ifndef CUZK_OWNERS_H
#define CUZK_OWNERS_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <jansson.h>

#include "supervisor/config.h"
#include "supervisor/control.h"
#include "shm/jobtab.h"
#include "shm/pipeline.h"

/* Root or cuzkd's own effective uid. */
int owners_privileged(uid_t uid);

/* May a client of uid viewer see a job of owner's (tenant: it came through the API for
 * a tenant), in status, wait and the job store's answers? A job shows its out dir, its
 * inputs' names and reasons that quote input values, and the members of cuzkd's group
 * are many users: each sees its own jobs only. Root and cuzkd's own uid (privileged)
 * see every job; --api-user (api_user, privileged for its tenants, not an operator)
 * the jobs it submitted and the tenants' only, never a local user's. */
int owners_may_see(uid_t viewer, int privileged, int api_user, uid_t owner, int tenant);

/* The quotas in force: the options, or their defaults when 0 (half the job table,
 * half the partitions, PIPE_PRELOAD_MAX / 2 preloads, at least 1 each). */
struct owners_quota {
    uint32_t jobs, parts, preloads;
};
void owners_quota(const struct cuzkd_config *c, struct owners_quota *q);

/* Of a table of n job slots (or partitions), how many ordinary users never take: an
 * eighth, at least 1, kept for root and cuzkd's user. */
uint32_t owners_reserve(uint32_t n);

/* Who submits: a uid, and for the HTTP API (which runs as cuzkd's uid) the tenant it
 * acts for with the tenant's max-running-jobs (0 none). A job with a tenant is an
 * ordinary user's, whoever's process sent it: it counts against the operator's
 * reserve and the quotas, by tenant. */
struct owners_who {
    uid_t uid;
    const char *tenant; /* NULL or "": none */
    uint32_t max_running;
};

/* A submit of n partitions by who: 0, or -EDQUOT with the quota and its value in m,
 * or -ENOSPC (code PROTO_E_FULL) when ordinary users' unfinished jobs would reach
 * into the table's reserve (owners_reserve).
 * owner_of(arg, j, &tenant): job slot j's submitter and its tenant ("" none; asked
 * only of slots in use). Counted: the submitter's running jobs and their partitions
 * not yet DONE or FAILED (a tenant's: by tenant; else by uid). */
int owners_submit_check(const struct jobtab *jt,
                        uid_t (*owner_of)(const void *arg, uint32_t j, const char **tenant), const void *arg,
                        const struct owners_who *who, uint32_t n, const struct owners_quota *q, char *m,
                        size_t len);

/* Preloads: map (a JSON object, zkey path as named -> uid) is the owner of each
 * PRELOAD entry of cs. Before a preload (evict 0) or an evict (evict 1) of path by
 * uid: 0, or -EPERM (code PROTO_E_NOT_OWNER: the entry is another uid's) or -EDQUOT
 * (PROTO_E_QUOTA) with a sentence in m. A path with no entry passes (the request
 * itself answers, as before). */
int owners_preload_check(const struct pipe_circuits *cs, json_t *map, uid_t uid, int evict, const char *path,
                         uint32_t quota, const char **code, char *m, size_t len);

/* After an accepted preload or evict: record or forget path's owner. */
void owners_preload_note(json_t *map, int evict, const char *path, uid_t uid);

#endif
