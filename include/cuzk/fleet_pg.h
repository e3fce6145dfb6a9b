/* fleet_pg.h — the fleet queue: several cuzkd share one PostgreSQL database (libpq),
 * selected by `--queue postgresql://...` (issue 17). Jobs are inserted by clients
 * (`cuzk prove --queue`), partitions are claimed by daemons into leases.
 *
 * Schema version 1 (created if absent, under an advisory lock so that daemons starting
 * together do not race; a database with a newer version is refused, -EPROTO):
 *   cuzk_meta(key, value): 'schema_version'
 *   cuzk_jobs(id bigserial, zkey, out_dir, n_parts, state 'running'|'done'|'failed',
 *             submitted, finished)
 *   cuzk_parts(job, idx, wtns, name, state 'queued'|'leased'|'done'|'failed', owner,
 *              lease_gen, lease_expiry, attempts, done_by, reason, finished)
 *   cuzk_daemons(id, host, heartbeat, started, done)
 * Inputs and outputs are paths on a file system every daemon mounts at the same place
 * (README "Fleet"); the daemon opens them with O_NOFOLLOW and checks regular files.
 * Trust boundary: whoever can write these tables can make a daemon read any file it
 * can read and write proofs into any directory it can write: the database credentials
 * are the boundary, give them to the daemons and the submitters only.
 *
 * Leases: fleet_claim takes queued partitions and leased ones whose lease expired
 * (SELECT ... FOR UPDATE SKIP LOCKED: two daemons never wait on, or take, the same
 * row), sets owner, lease_gen+1 and lease_expiry = now() + lease. fleet_renew (the
 * heartbeat, every lease/3) extends the unexpired leases the caller names and its
 * daemon row.
 * fleet_finish succeeds only while (owner, lease_gen) still match: a stale owner whose
 * lease was taken over gets 0 and must discard its proof.
 *
 * Publishing (why this order): the proof is written under a temp name in the out dir,
 * then fleet_finish, then link(temp, final) + unlink(temp). The finish-update is the
 * one decision point, so a stale owner never reaches the final name; link() (not
 * rename) fails with EEXIST instead of replacing, so even a paused owner whose lease
 * expired after its finish can not publish over another's file. Finishing first and
 * publishing after means a crash between the two leaves a done row and a staged
 * file: the daemon's next start (same owner id) publishes it (fleet_done_dirs,
 * fleet_done_here); a daemon that never comes back leaves that partition done and
 * unpublished (its staged files stay in OUT_DIR/.cuzk-OWNER/ for an operator).
 * The other order (publish, then finish) would let a stale owner's file reach the
 * final name before its update fails: a duplicate publish, which this one excludes.
 *
 * Database calls are blocking libpq calls: cuzkd makes them from one fleet thread,
 * never from its event loop. Errors: 0 (or a count) or -errno with a sentence in err:
 * -ECONNREFUSED the database unreachable, -EPROTO a newer schema, -EIO the rest. */
#ifndef CUZK_FLEET_PG_H
#define CUZK_FLEET_PG_H

#include <stddef.h>
#include <stdint.h>

#define FLEET_SCHEMA_VERSION 1

struct fleet;

/* Is s a queue URL (postgresql:// or postgres://)? */
int fleet_is_url(const char *s);

/* Connect (libpq connection string or URL) and create the schema if absent. */
int fleet_open(struct fleet **f, const char *url, char *err, size_t errlen);
void fleet_close(struct fleet *f);
/* Reconnect after a lost connection (PQreset); 0 once it answers again. */
int fleet_reconnect(struct fleet *f, char *err, size_t errlen);

/* A client's submit: one job of n partitions (wtns[i] paths, name[i] output base
 * names), in one transaction. *job: its id. */
int fleet_job_add(struct fleet *f, const char *zkey, const char *out_dir, uint32_t n,
		  const char *const *wtns, const char *const *name, uint64_t *job, char *err,
		  size_t errlen);

/* One claimed partition: valid until the next fleet call that fills claims. */
struct fleet_claim {
	uint64_t job;
	uint32_t idx;
	uint64_t gen;
	uint32_t attempts;  /* claims of it so far, this one included */
	char wtns[1024], name[256], zkey[1024], out_dir[1024];
};

/* Register (or refresh) daemon id; host: shown by `cuzk status --queue`. */
int fleet_daemon_hello(struct fleet *f, const char *id, const char *host, char *err,
		       size_t errlen);
/* Claim up to max partitions for owner, lease_s seconds. Returns how many (0..max). */
int fleet_claim(struct fleet *f, const char *owner, int lease_s, struct fleet_claim *out,
		int max, char *err, size_t errlen);
/* Heartbeat: extend the n leases in held (job, idx, gen; owner's, unexpired) to
 * now() + lease_s and refresh owner's daemon row. Returns how many it renewed. A
 * lease owner holds but does not name here (a claim whose reply was lost) expires. */
int fleet_renew(struct fleet *f, const char *owner, int lease_s,
		const struct fleet_claim *held, int n, char *err, size_t errlen);
/* Finish (done, or failed with reason) a partition owner holds at gen, in one
 * transaction with its job's end: 1 when this call finished it, 2 when owner had
 * finished it at gen already (a retry after a lost answer: the commit happened, its
 * reply did not arrive; publish as for 1), 0 when the lease is no longer owner's
 * (discard the proof). -ECONNREFUSED: retry after fleet_reconnect; the answer to
 * the retry is the truth either way. */
int fleet_finish(struct fleet *f, const char *owner, uint64_t job, uint32_t idx,
		 uint64_t gen, const char *reason, char *err, size_t errlen);

/* Give a partition owner holds at gen back to the queue (queued again, for any
 * daemon): for a local refusal that is not the partition's fault (cuzkd draining).
 * 1 released, 0 not owner's any more. */
int fleet_release(struct fleet *f, const char *owner, uint64_t job, uint32_t idx,
		  uint64_t gen, char *err, size_t errlen);

/* A daemon's start (after fleet_daemon_hello): leases still held by owner belong to
 * its previous run (killed, restarted under the same id): back to the queue, for
 * any daemon. Returns how many. */
int fleet_release_mine(struct fleet *f, const char *owner, char *err, size_t errlen);

/* Recovering a crash between fleet_finish and the publish (see "Publishing" above):
 * the out dirs of partitions owner finished as done (*dirs: malloc'd strings in a
 * malloc'd array, the caller frees; returns how many), and whether the newest
 * partition named name in out_dir was finished as done by owner (1, else 0): then
 * its staged files are published, else they are stale and removed. */
int fleet_done_dirs(struct fleet *f, const char *owner, char ***dirs, char *err,
		    size_t errlen);
int fleet_done_here(struct fleet *f, const char *owner, const char *out_dir,
		    const char *name, char *err, size_t errlen);

/* A job's state: counts of done and failed partitions, and its total. Returns
 * 0 running, 1 done (every partition done), 2 failed (some failed), or -errno. */
int fleet_job_state(struct fleet *f, uint64_t job, uint32_t *done, uint32_t *failed,
		    uint32_t *total, char *err, size_t errlen);

/* `cuzk status --queue`: daemons with heartbeats, their leases and done counts, and
 * the queue's counts by state, as JSON text (malloc'd, the caller frees). */
char *fleet_status_json(struct fleet *f, char *err, size_t errlen);

/* The publish step described above: link tmp to final (no replace), unlink tmp.
 * 0, or -EEXIST when final exists already (tmp is removed: someone published it). */
int fleet_publish(int dirfd, const char *tmp, const char *final);

#endif /* CUZK_FLEET_PG_H */
