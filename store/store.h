/* store.h — cuzkd's durable job store: every accepted job and the state of each of
 * its partitions, so a new cuzkd on the same store resumes what a dead one accepted
 * (docs/operations.md, "Failure handling"). One backend today: an SQLite file
 * (STATE_DIR/INSTANCE.db, WAL, synchronous=FULL), written by the supervisor only.
 *
 * Schema version 1 (PRAGMA user_version):
 *   jobs(id PRIMARY KEY, request TEXT: the submit as JSON, state 'running'|'done'|
 *        'failed', submitted, finished: unix seconds). The request (version 2, files
 *        as descriptors): zkey, r1cs?, witness_gen?, out_dir (the client's names;
 *        only out_dir is ever reopened, see supervisor.c resume_job), priority,
 *        out {dev, ino} (the out dir's identity at submit), peer {uid, gid, groups}
 *        (who must still be allowed to write it), copies {zkey, r1cs?, wgen?} and
 *        parts[{wtns, name, copy}]: names of cuzkd's durable copies in
 *        STATE_DIR/INSTANCE.copies (copies.h). A version 1 row (paths only) is not
 *        resumed: its unfinished partitions fail.
 *   parts(job, idx, name, state 'queued'|'synthesizing'|'proving'|'finalizing'|
 *        'done'|'failed', reason, PRIMARY KEY(job, idx))
 * Version 2 adds, for jobs submitted with "results":"store" (store_results.h):
 *   results(job, idx, proof TEXT, public TEXT, timings TEXT: JSON), a row per done
 *        partition, written in the tick's batch that records it done;
 *   idem(tenant, key, body_sha256, job): a submit's idempotency key, written with the
 *        job, under its tenant or, without one, "uid:N" (its submitter's); both go with their job (ON DELETE CASCADE: pruning, --store-keep-days).
 * The request of such a job adds "results":"store", "stage": the name of its private
 * spool directory (STATE_DIR/INSTANCE.results/NAME), "tenant", "circuit",
 * "idempotency_key", "body_sha256".
 * Version 3 adds parts.attempts (the partition's tries: 1 for one that never failed,
 * one more per try a dead or killed stage cut short; 0 before its first) and an index
 * of the jobs by tenant (json_extract(request, '$.tenant'), id) for a tenant's list
 * (store_jobs_list); the request may hold "metadata", the client's object.
 * The request is JSON so that it can grow (input.json, descriptors' origins) without
 * a migration; what resume needs of a partition beyond its state is in it.
 *
 * Durability: store_job_add and store_job_delete commit with synchronous=FULL (an
 * fsync of the WAL) before they return, so a job is acknowledged only once it
 * survives a power loss. State changes are batched (store_part_set ... store_commit):
 * one commit per supervisor tick, never one per partition, none in the stages' path,
 * and with synchronous=NORMAL: written to the WAL, not fsync'd (WAL mode cuts an
 * interrupted log at its last whole commit: never corrupt). A batch lost to a power
 * cut only makes the next cuzkd look again: a proof on disk that verifies is marked
 * done, anything else unfinished is queued; the next durable commit makes every
 * earlier batch durable too.
 *
 * Errors: 0 or -errno, with a sentence in err; a failed call leaves the file as it
 * was (SQLite rolls the transaction back). */
#ifndef CUZK_STORE_H
#define CUZK_STORE_H

#include <stddef.h>
#include <stdint.h>

#define STORE_SCHEMA_VERSION 3

enum store_part_state {
    STORE_QUEUED = 0,
    STORE_SYNTHESIZING,
    STORE_PROVING,
    STORE_FINALIZING,
    STORE_DONE,
    STORE_FAILED,
    STORE_NSTATES
};

enum store_job_state { STORE_JOB_RUNNING = 0, STORE_JOB_DONE, STORE_JOB_FAILED };

struct store;

const char *store_part_state_name(enum store_part_state s);

/* The default state directory: $STATE_DIRECTORY (systemd's StateDirectory=, the
 * unit's /var/lib/cuzk), else /var/lib/cuzk as root, else $XDG_STATE_HOME/cuzk, else
 * ~/.local/state/cuzk. */
void store_default_dir(char *buf, size_t len);

/* Open (creating dir 0700 and the file if needed) DIR/INSTANCE.db. A file that is
 * not an SQLite database, fails its integrity check or has a newer schema version
 * than this cuzkd's is refused (-EPROTO, or -EIO/-ENOSPC...) without writing to it. */
int store_open(struct store **st, const char *dir, const char *instance, char *err, size_t errlen);
/* Flushes nothing (call store_commit first); accepts NULL. */
void store_close(struct store *st);
const char *store_path(const struct store *st);

/* The highest job id ever recorded (0: none): ids are never reused across restarts. */
uint64_t store_max_job_id(struct store *st);

/* Record job id (request: JSON text) and its n partitions (queued), durably, in one
 * transaction. A pending batch is committed with it. */
int store_job_add(struct store *st, uint64_t id, const char *request, uint32_t n, const char *const *names,
                  char *err, size_t errlen);
/* Remove a job recorded by store_job_add that could not be started after all. */
int store_job_delete(struct store *st, uint64_t id, char *err, size_t errlen);

/* Remove the decided jobs (done or failed, with their partitions) finished before
 * unix time before, except the newest job (ids must not be reused): what keeps the
 * store from growing with every job ever run (--store-keep-days). *n: how many. Not
 * fsync'd (a prune lost to a power cut is only done again). */
int store_prune(struct store *st, int64_t before, uint64_t *n, char *err, size_t errlen);
/* Bound each owner's decided jobs, an owner being a submitter's uid
 * (request.peer.uid) with the API tenant it submitted for (request.tenant, if any):
 * remove the oldest beyond keep_jobs of that owner, or whose request text with the
 * newer ones' passes keep_bytes; *n removed. Running jobs and the newest job stay. */
int store_prune_per_owner(struct store *st, uint64_t keep_jobs, uint64_t keep_bytes, uint64_t *n, char *err,
                          size_t errlen);
/* Durably fail every partition of job id not yet done or failed ("cancelled"), so a
 * cancel is never undone by a restart. */
int store_job_cancel(struct store *st, uint64_t id, char *err, size_t errlen);

/* Batched changes: open a transaction on the first one; store_commit makes them
 * durable. reason: for STORE_FAILED (NULL otherwise). */
int store_part_set(struct store *st, uint64_t job, uint32_t idx, enum store_part_state s, const char *reason);
int store_job_set(struct store *st, uint64_t job, enum store_job_state s);
/* A partition's tries so far (schema version 3), into the batch. */
int store_part_attempts(struct store *st, uint64_t job, uint32_t idx, uint32_t attempts);
/* 0 also when nothing was pending. On failure the batch is rolled back. */
int store_commit(struct store *st, char *err, size_t errlen);

/* One unfinished job for store_each_running: its partitions' states and reasons
 * (reason[i] NULL unless failed); valid during the callback only. */
struct store_job {
    uint64_t id;
    const char *request;
    enum store_job_state state_job;
    int64_t submitted, finished; /* unix seconds (finished 0: not yet) */
    uint32_t n_parts;
    const enum store_part_state *state;
    const char *const *name;
    const char *const *reason;
    const uint32_t *attempts;
};

/* Calls cb for every job in state running, in id order; stops at a non-zero return
 * and returns it. */
int store_each_running(struct store *st, int (*cb)(void *arg, const struct store_job *j), void *arg,
                       char *err, size_t errlen);

#endif /* CUZK_STORE_H */
