/* fleet_pg.h — the fleet queue: several cuzkd share one PostgreSQL database (libpq),
 * selected by `--queue postgresql://...` (issue 17). Jobs are inserted by clients
 * (`cuzk prove --queue`), partitions are claimed by daemons into leases.
 *
 * Schema version 5 (created if absent, under an advisory lock so that daemons starting
 * together do not race; a database with a newer version is refused, -EPROTO; an older
 * one is migrated under the same lock, one version at a time: 1 -> 2 adds the two
 * columns of "Publishing" and marks its done and failed rows published; 2 -> 3 adds
 * the stored-proof columns, its rows keep NULL there; 3 -> 4 adds the circuit-job
 * columns of "Circuit jobs", its rows keep NULL there (path jobs) and false; 4 -> 5
 * adds cuzk_jobs.metadata (NULL) and an index of a tenant's jobs by id; a
 * database at this version gets no DDL at all: CREATE INDEX IF NOT EXISTS locks its
 * table before it looks, which deadlocked a daemon's open with a submit in flight):
 *   cuzk_meta(key, value): 'schema_version'
 *   cuzk_jobs(id bigserial, zkey, out_dir ('' : none, proofs stored only), n_parts,
 *             state 'running'|'done'|'failed'|'cancelled' (v4), submitted, finished,
 *             store_proofs: the submitter asked for the proofs in the table (v3),
 *             circuit, fingerprint: a circuit job's (v4, NULL for a path job),
 *             tenant (v4, NULL: none), idem_key, body_sha256 (v4: the idempotency
 *             key, unique per tenant, and the hash of the body it came with),
 *             cancelled (v4), metadata: the client's JSON object as text (v5))
 *   cuzk_parts(job, idx, wtns, name, state 'queued'|'leased'|'done'|'failed', owner,
 *              lease_gen, lease_expiry, attempts, done_by, reason, finished,
 *              published: its proof files are at their final names (v2),
 *              proof_json, public_json: the stored proof (v3, NULL when not stored),
 *              input, input_kind 'json'|'wtns': a circuit job's input bytes (v4))
 *   cuzk_daemons(id, host, heartbeat, started, done, lease_s: its own lease (v2), so
 *                that others can tell when its heartbeat is stale,
 *                store_proofs: it stores the proofs it finishes (v3))
 * Inputs are paths on a file system every daemon mounts at the same place (docs/operations.md,
 * "Fleet"); the daemon opens them with O_NOFOLLOW and checks regular files. Outputs
 * are paths there too (the job's out dir), or stored in the table ("Stored proofs").
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
 * Publishing (why this order): the proof is written into the spool dir
 * OUT_DIR/.cuzk-OWNER/ (fleet_spool_name), then fleet_finish, then link(spooled, final)
 * + unlink(spooled) for NAME.public.json and then NAME.proof.json, then
 * fleet_published. The finish-update is the one decision point, so a stale owner
 * never reaches the final name; link() (not rename) fails with EEXIST instead of
 * replacing, so even a paused owner whose lease expired after its finish can not
 * publish over another's file. The other order (publish, then finish) would let a
 * stale owner's file reach the final name before its update fails: a duplicate
 * publish, which this one excludes.
 * A crash between the finish and the mark leaves a 'done' row with published false,
 * and the job stays 'running' (fleet_job_state counts only published parts, so
 * `cuzk wait` does not return): adoption (fleet_adopt) closes it. A row is adopted by
 * its own daemon at its next start, or by any daemon once the finisher's heartbeat is
 * older than 3 x its lease_s (or it has no daemon row). The adopter (fleet_part_publish)
 * links the spooled files to their final names as above, then looks at the spooled
 * files and then at the final ones: both finals there -> mark published (whoever
 * linked them); finals incomplete and nothing spooled (or the spool dir unreadable
 * to it) -> the partition back to the queue, to be proved again (a stored proof of
 * it is dropped then: the row is as before its claim); finals incomplete
 * but a spooled file still there (a link that fails for another reason) -> left alone,
 * with the error.
 * Races, with the finisher alive but slow (its heartbeat stale, it is paused between
 * the finish and the link) or with a second adopter:
 *  - both link the same spooled file: link() never replaces, so the final name is
 *    written once; the loser gets EEXIST (or ENOENT: the winner unlinked the spooled
 *    file already) and sees the finals there: it only marks. Marking is idempotent.
 *  - the requeue needs the spooled file absent and then (looked at after) the final
 *    absent. A spooled file is unlinked only after its link was tried, so a spooled file
 *    seen absent was either published before (then its final is seen) or lost: a
 *    requeue never follows a publish it did not see, except where the spool dir is
 *    unreadable to the adopter; then the finisher may still publish and the re-proof
 *    meets EEXIST: still one publish per final name, one wasted proof.
 *  - the mark is conditional on (job, idx, lease_gen, state 'done'), the requeue
 *    also on done_by and not published: whichever of the two comes second changes
 *    nothing; a requeued partition is claimed with the next lease_gen, so the old
 *    finisher's late mark (same gen) matches no row.
 * The cost: a partition whose finisher died is published 3 leases after its last
 * heartbeat (90 s at the default 30 s lease), not at once.
 *
 * Stored proofs (`--store-proofs`, v3): a daemon that stores proofs (fleet_set_stores)
 * passes each proof it finishes to fleet_finish_stored, which writes proof_json and
 * public_json in the same lease-checked UPDATE as the finish: a stale owner's JSON
 * matches no row and is never stored, a retry after a lost answer stores nothing
 * again. Both texts are checked first (FLEET_PROOF_MAX, FLEET_PUBLIC_MAX, valid JSON:
 * an object and an array; -EINVAL with the reason, nothing written). A job submitted
 * with store_proofs is claimed only by daemons that store; one with no out dir ('')
 * has nothing to publish: the finish that stores its proof marks it published in
 * the same statement (a finish of such a partition without a proof fails it, never
 * leaves it done and unpublished). fleet_fetch reads them back (`cuzk fetch`).
 *
 * Circuit jobs (v4: the fleet without a shared file system). A job names a circuit
 * and its zkey's fingerprint (hex, as cuzkd's `circuits` control reply gives it)
 * instead of paths, and carries each partition's input bytes (an input.json object
 * for the circuit's witness generator, or a .wtns) in cuzk_parts.input, sent as a
 * binary parameter. Its rows: zkey '', wtns '', name the decimal index ("0", "1",
 * ...), out_dir '', store_proofs true: its proofs live only in the table. A daemon
 * claims one only when it stores proofs (fleet_set_stores) and has that circuit with
 * that fingerprint (fleet_set_circuits): a daemon whose zkey differs never proves
 * against it. It writes the input into a file of its own private spool dir
 * (fleet_input_read), proves, and stores the proof with fleet_finish_stored.
 * A job's end (done, failed or cancelled) sends pg_notify('cuzk_job_end', id) in the
 * transaction that ends it: a waiter LISTENs (fleet_listen) instead of polling.
 *
 * Database calls are blocking libpq calls: cuzkd makes them from one fleet thread,
 * never from its event loop. Errors: 0 (or a count) or -errno with a sentence in err:
 * -ECONNREFUSED the database unreachable, -EPROTO a newer schema, -EIO the rest. */
#ifndef CUZK_FLEET_PG_H
#define CUZK_FLEET_PG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define FLEET_SCHEMA_VERSION 5

/* The largest stored proof.json and public.json (a Groth16 proof is under 2 KiB; the
 * public signals of a circuit can be many: 16 MiB is about 200k signals). */
#define FLEET_PROOF_MAX  (64 * 1024)
#define FLEET_PUBLIC_MAX (16 * 1024 * 1024)

struct fleet;

/* Is s a queue URL (postgresql:// or postgres://)? */
int fleet_is_url(const char *s);

/* The password in a connection string, if it has one: [*start, *end) of "pw" in
 * postgresql://user:pw@host/db, or the value of a password= keyword (a URI's query or
 * a key=value string). 0 when there is none. Both cuzkd and the client refuse one on
 * their command line: every local user reads /proc/PID/cmdline. */
int fleet_url_password(const char *url, const char **start, const char **end);
/* Whether the connection string carries a password in any spelling libpq takes
 * ("password = x", a tab before it, %70assword= in a URI's query, user:pw@): libpq's
 * own parser (PQconninfoParse) decides; where libpq cannot be loaded, the string
 * percent-decoded with its blanks removed is searched for "password=" instead. The
 * check cuzkd, cuzk-api and the client make before a queue URL may stand on a command
 * line or in a file others can read. */
bool fleet_url_has_password(const char *url);
/* Overwrite url's password (if any) with '*' in place: argv scrubbed that way no longer
 * shows it in /proc/PID/cmdline once options are parsed. */
void fleet_url_scrub(char *url);

/* Connect (libpq connection string or URL) and create the schema if absent. libpq is
 * loaded by the first call (pq_dl.h): -CUZK_E_INTERNAL, err naming the package, when
 * it cannot be. */
int fleet_open(struct fleet **f, const char *url, char *err, size_t errlen);
void fleet_close(struct fleet *f);
/* Reconnect after a lost connection (PQreset); 0 once it answers again. */
int fleet_reconnect(struct fleet *f, char *err, size_t errlen);
/* One round trip (SELECT 1): 0 when the database answers, else -errno with err
 * (-ECONNREFUSED: lost). What a readiness probe asks. */
int fleet_ping(struct fleet *f, char *err, size_t errlen);

/* A client's submit: one job of n partitions (wtns[i] paths, name[i] output base
 * names), in one transaction. *job: its id. store_proofs: the proofs are also stored
 * in the table (only daemons that store claim it); out_dir NULL or "" (then
 * store_proofs is required, else -EINVAL): they are stored only. */
int fleet_job_add(struct fleet *f, const char *zkey, const char *out_dir, int store_proofs, uint32_t n,
                  const char *const *wtns, const char *const *name, uint64_t *job, char *err, size_t errlen);

/* One claimed partition: valid until the next fleet call that fills claims. */
struct fleet_claim {
    uint64_t job;
    uint32_t idx;
    uint64_t gen;
    uint32_t attempts;                                     /* claims of it so far, this one included */
    int store_proofs;                                      /* the job asked for its proofs in the table */
    char wtns[1024], name[256], zkey[1024], out_dir[1024]; /* out_dir "": none */
    char circuit[65]; /* a circuit job's circuit (v4); "" for a path job */
    int input_kind;   /* FLEET_INPUT_PATH, _JSON or _WTNS */
};
enum { FLEET_INPUT_PATH = 0, FLEET_INPUT_JSON = 1, FLEET_INPUT_WTNS = 2 };

/* This handle's daemon stores the proofs it finishes (`cuzkd --store-proofs`): its
 * fleet_daemon_hello records it (shown by status), and its fleet_claim takes jobs
 * submitted with store_proofs too (without it, never). Call before both. */
void fleet_set_stores(struct fleet *f, int on);

/* Register (or refresh) daemon id; host: shown by `cuzk status --queue`; lease_s:
 * its lease, which tells others when its heartbeat (fleet_renew, every lease/3) is
 * stale. */
int fleet_daemon_hello(struct fleet *f, const char *id, const char *host, int lease_s, char *err,
                       size_t errlen);
/* Claim up to max partitions for owner, lease_s seconds. Returns how many (0..max). */
int fleet_claim(struct fleet *f, const char *owner, int lease_s, struct fleet_claim *out, int max, char *err,
                size_t errlen);
/* Heartbeat: extend the n leases in held (job, idx, gen; owner's, unexpired) to
 * now() + lease_s and refresh owner's daemon row. Returns how many it renewed. A
 * lease owner holds but does not name here (a claim whose reply was lost) expires. */
int fleet_renew(struct fleet *f, const char *owner, int lease_s, const struct fleet_claim *held, int n,
                char *err, size_t errlen);
/* Finish (done, or failed with reason) a partition owner holds at gen, in one
 * transaction with its job's end: 1 when this call finished it, 2 when owner had
 * finished it at gen already (a retry after a lost answer: the commit happened, its
 * reply did not arrive; publish as for 1), 0 when the lease is no longer owner's
 * (discard the proof). -ECONNREFUSED: retry after fleet_reconnect; the answer to
 * the retry is the truth either way. */
int fleet_finish(struct fleet *f, const char *owner, uint64_t job, uint32_t idx, uint64_t gen,
                 const char *reason, char *err, size_t errlen);
/* fleet_finish of a done partition with its proof stored in the same UPDATE ("Stored
 * proofs"): proof and pub the texts of NAME.proof.json and NAME.public.json.
 * -EINVAL (nothing written, no database call) when either is over its cap or not
 * valid JSON: the reason is in err. */
int fleet_finish_stored(struct fleet *f, const char *owner, uint64_t job, uint32_t idx, uint64_t gen,
                        const char *proof, const char *pub, char *err, size_t errlen);
/* The check fleet_finish_stored makes: 0, or -EINVAL with the reason in err. */
int fleet_proof_check(const char *proof, const char *pub, char *err, size_t errlen);

/* Give a partition owner holds at gen back to the queue (queued again, for any
 * daemon): for a local refusal that is not the partition's fault (cuzkd draining).
 * 1 released, 0 not owner's any more. */
int fleet_release(struct fleet *f, const char *owner, uint64_t job, uint32_t idx, uint64_t gen, char *err,
                  size_t errlen);

/* A daemon's start (after fleet_daemon_hello): leases still held by owner belong to
 * its previous run (killed, restarted under the same id): back to the queue, for
 * any daemon. Returns how many. */
int fleet_release_mine(struct fleet *f, const char *owner, char *err, size_t errlen);

/* The spool dir of owner, relative to a partition's out dir: ".cuzk-OWNER". */
void fleet_spool_name(const char *owner, char *buf, size_t len);

/* Whoever can write the tables writes a row's name and done_by: true when s may name
 * a file or spool dir in an out dir (a single path component: 1 to 200 bytes, no
 * '/', no control character, not starting with '.', so never . or ..). Checked on
 * every name read from the database before it is used (cuzkd, `cuzk fetch`). */
bool fleet_name_valid(const char *s);

/* Remove out_dir/.cuzk-OWNER if it is empty (a spool dir whose proofs are all
 * published), so an out dir holds only what its user asked for; kept otherwise. */
void fleet_spool_remove(const char *out_dir, const char *owner);

/* Mark partition (job, idx) finished as done at gen published (its final files are
 * there), and end its job when nothing else is open, in one transaction. 1 marked,
 * 0 when it was marked already or is no longer that done row (requeued). */
int fleet_published(struct fleet *f, uint64_t job, uint32_t idx, uint64_t gen, char *err, size_t errlen);

/* Publish the spooled proof of partition (job, idx) that done_by finished as done at
 * gen, from out_dir/.cuzk-DONEBY/NAME.{public,proof}.json, and record it ("Publishing"
 * above): FLEET_PUB_MARKED (finals there, marked; *linked: how many of the two this
 * call linked), FLEET_PUB_REQUEUED (nothing to publish: back to the queue),
 * FLEET_PUB_GONE (the row was marked or requeued by someone else meanwhile),
 * -ENOTDIR (the out dir can not be opened here: nothing done), -EINVAL with err (name
 * or done_by is not a single path component, fleet_name_valid: nothing done, nothing
 * opened), -EPERM with err (a
 * spooled file that can not be linked: nothing marked), or a database -errno (the
 * links done stay done; the call may be repeated: it never publishes twice). */
enum { FLEET_PUB_GONE = 0, FLEET_PUB_MARKED = 1, FLEET_PUB_REQUEUED = 2 };
int fleet_part_publish(struct fleet *f, const char *out_dir, const char *name, const char *done_by,
                       uint64_t job, uint32_t idx, uint64_t gen, int *linked, char *err, size_t errlen);

/* One adopted partition, as fleet_adopt reports it. */
struct fleet_adopted {
    uint64_t job;
    uint32_t idx;
    const char *name, *out_dir, *done_by;
    int outcome;     /* FLEET_PUB_*, or -errno (skipped: out dir not here, link error) */
    int linked;      /* proof files this call linked (0..2) */
    const char *why; /* outcome < 0: the sentence */
};
/* Adoption (see "Publishing"): each done, unpublished partition whose finisher is
 * stale (heartbeat older than 3 x its lease_s, or no daemon row), and with mine set
 * also each one self finished (call it so only at self's start, before claiming:
 * then they are a previous run's), goes through fleet_part_publish; cb (may be NULL)
 * hears each. Returns how many were looked at, or a database -errno (stop, retry
 * later: what was done stays done). */
int fleet_adopt(struct fleet *f, const char *self, int mine,
                void (*cb)(void *arg, const struct fleet_adopted *a), void *arg, char *err, size_t errlen);

/* The spool dirs (OUT/.cuzk-ID/) of daemons that are gone (heartbeat stale, nothing
 * left of theirs to adopt), removed with what they hold from the out dirs of the jobs
 * that ran while they lived, once those jobs have ended: a daemon killed for good
 * left its dir there, proofs it spooled and never published included. Each gone
 * daemon once per death (cuzk_meta 'swept:ID'); self never. Returns how many daemons
 * were swept, or a database -errno. */
int fleet_sweep_gone(struct fleet *f, const char *self, char *err, size_t errlen);

/* The out dirs of partitions owner finished as done (*dirs: malloc'd strings in a
 * malloc'd array, the caller frees; returns how many): where a restarted daemon looks
 * for stale spooled files to remove, after its fleet_adopt(mine). */
int fleet_done_dirs(struct fleet *f, const char *owner, char ***dirs, char *err, size_t errlen);

/* A job's state: counts of done (and published) and failed partitions, and its total.
 * Returns 0 running, 1 done (every partition done and its proof at its final name),
 * 2 failed (some failed, none open), or -errno. */
int fleet_job_state(struct fleet *f, uint64_t job, uint32_t *done, uint32_t *failed, uint32_t *total,
                    char *err, size_t errlen);

/* One partition of a job as fleet_fetch reports it: state as in the table; proof and
 * pub its stored texts (NULL when not stored); reason: a failed one's. */
struct fleet_stored {
    uint32_t idx;
    const char *name, *state, *reason, *proof, *pub;
};
/* `cuzk fetch`: each partition of job in idx order to cb (the texts are valid during
 * the call only; read one partition at a time, so a job of large public files is
 * never in memory at once). Returns how many, -ENOENT (no such job, err says so), or a
 * database -errno; a non-zero return of cb stops it and is returned. */
int fleet_fetch(struct fleet *f, uint64_t job, int (*cb)(void *arg, const struct fleet_stored *s), void *arg,
                char *err, size_t errlen);

/* `cuzk status --queue`: daemons with heartbeats, their leases, done counts (all time,
 * and "done_1m": partitions they finished in the last minute, their throughput), and
 * the queue's counts by state ("unpublished": done, proof not yet at its final
 * name; "stored": done with its proof in the table), as JSON text (malloc'd, the caller frees). */
char *fleet_status_json(struct fleet *f, char *err, size_t errlen);

/* The publish step described above: link tmp to final (no replace), unlink tmp.
 * 0, or -EEXIST when final exists already (tmp is removed: someone published it). */
int fleet_publish(int dirfd, const char *tmp, const char *final);
/* The same from tmpfd/tmp to dirfd/final (a spool dir to its out dir). */
int fleet_publish2(int tmpfd, const char *tmp, int dirfd, const char *final);

/* ---- Circuit jobs (v4; "Circuit jobs" above) ---- */

/* One partition's input bytes at most. */
#define FLEET_INPUT_MAX         (256ull << 20)
/* The most partitions of one circuit job. */
#define FLEET_CIRCUIT_PARTS_MAX 4096

/* One partition's input: len bytes (1..FLEET_INPUT_MAX; binary, NUL bytes allowed). */
struct fleet_input {
    const void *bytes;
    size_t len;
    int wtns; /* 0 an input.json object, 1 a .wtns */
};
struct fleet_circuit_job {
    const char *circuit, *fingerprint;  /* both required */
    const char *tenant;                 /* NULL or "": none */
    const char *idem_key, *body_sha256; /* idem_key NULL: no idempotency key */
    uint32_t max_running;               /* with tenant: its running jobs, at most; 0 none */
    const char *metadata;               /* the client's JSON object (text), or NULL */
};
/* Insert a circuit job of n partitions (one transaction). 1: created, *job its id;
 * 0: the same (tenant, idem_key) with the same body_sha256 exists, *job that job;
 * -EEXIST: that key exists with another body or for another circuit (*job the existing
 * job, err says so);
 * -EINVAL: an input empty or over FLEET_INPUT_MAX, n == 0 or over
 * FLEET_CIRCUIT_PARTS_MAX, a missing field (circuit, fingerprint; body_sha256 when
 * idem_key is given); -EDQUOT: the tenant has max_running jobs running already
 * (counted inside the inserting transaction under a per-tenant advisory lock, so
 * concurrent inserts on every server never pass it; a replayed key is answered as
 * above). Concurrent inserts of one key: one creates, the others get 0 or -EEXIST
 * (the unique index decides, never two jobs). */
int fleet_job_add_inputs(struct fleet *f, const struct fleet_circuit_job *j, uint32_t n,
                         const struct fleet_input *in, uint64_t *job, char *err, size_t errlen);

/* The stored proofs of partitions [from, from + n) of job, tenant's: *json a malloc'd
 * JSON array of {"index","proof","public"}, one per done partition whose proof is in
 * the table, in index order (the others are not in it). One query for a page of a
 * job's proofs. 0 or -errno with err. */
int fleet_part_proofs(struct fleet *f, uint64_t job, uint32_t from, uint32_t n, const char *tenant,
                      char **json, char *err, size_t errlen);

/* A page of tenant's jobs (NULL or "": those without one), newest first: state
 * (running, done, failed, cancelled; NULL any), circuit (NULL any), submitted at or
 * after since (unix seconds), id below before (0: from the newest), at most limit.
 * *json: a malloc'd JSON array, each {"id","circuit"?,"state","submitted_unix",
 * "partitions","done","failed","metadata"?}; *more when another job follows. One
 * query. 0 or -errno with err. */
int fleet_jobs_list(struct fleet *f, const char *tenant, const char *state, const char *circuit,
                    int64_t since, uint64_t before, uint32_t limit, char **json, int *more, char *err,
                    size_t errlen);

/* The circuits this daemon has (name, fingerprint): fleet_claim takes a circuit job
 * only when its (circuit, fingerprint) is among them and this daemon stores proofs
 * (fleet_set_stores); path jobs as before. Copied; call again whenever the set
 * changes (the fleet thread refreshes it from cuzkd's `circuits` control reply).
 * n == 0: no circuit job is claimed. 0, or -ENOMEM. */
int fleet_set_circuits(struct fleet *f, uint32_t n, const char *const *names,
                       const char *const *fingerprints);

/* Write the input bytes of a partition owner holds at gen to fd (from its start,
 * truncated to them: fd is a regular file); returns the byte count, 0 when the lease
 * is no longer owner's (inputs are never empty), or -errno (-EIO with err when
 * writing fd fails). */
int64_t fleet_input_read(struct fleet *f, const char *owner, uint64_t job, uint32_t idx, uint64_t gen, int fd,
                         char *err, size_t errlen);

/* The API's views. A job as JSON text (malloc'd): {"id","circuit","tenant","state":
 * "running"|"done"|"failed"|"cancelled","submitted_unix","finished_unix"?,
 * "parts":[{"index","state":"queued"|"leased"|"done"|"failed","reason"?,"done_by"?,
 * "attempts"}]} (a member whose value is NULL is left out: "circuit" of a path job,
 * "tenant" of a job without one); -ENOENT when there is no such job OR its tenant is
 * not `tenant` (the caller answers 404 for both; tenant NULL: any; "": only jobs
 * without a tenant). */
int fleet_job_json(struct fleet *f, uint64_t job, const char *tenant, char **json, char *err, size_t errlen);
/* One partition's stored proof and public texts (malloc'd): 0; -ENOENT no such job or
 * partition or another tenant's (or a done path job's proof not stored in the
 * table); -EAGAIN not done yet; -EIO failed (reason in err). */
int fleet_part_proof(struct fleet *f, uint64_t job, uint32_t idx, const char *tenant, char **proof,
                     char **pub, char *err, size_t errlen);
/* Cancel: queued and leased partitions become failed (reason 'cancelled'), the job
 * 'cancelled' (notify sent). 1 cancelled, 0 already ended, -ENOENT as above. A daemon
 * proving a leased one finds its lease gone at the finish (fleet_finish answers 0)
 * and discards the proof. */
int fleet_job_cancel(struct fleet *f, uint64_t job, const char *tenant, char *err, size_t errlen);
/* Running (unfinished) jobs of a tenant (NULL or "": the jobs without one), for its
 * max-running quota; -errno. */
int fleet_tenant_running(struct fleet *f, const char *tenant, char *err, size_t errlen);

/* Job-end doorbell: LISTEN cuzk_job_end on this handle, then fleet_wait_notify
 * blocks up to timeout_ms on the connection's socket for a notification: 1 one came
 * (*job set), 0 timeout, -errno (-ECONNREFUSED: the connection is lost; after
 * fleet_reconnect call fleet_listen again, and look at the jobs waited on, as an end
 * may have passed meanwhile). Use a dedicated handle for listening: no other call on
 * it, so no notification is read and dropped by another statement. */
int fleet_listen(struct fleet *f, char *err, size_t errlen);
int fleet_wait_notify(struct fleet *f, int timeout_ms, uint64_t *job, char *err, size_t errlen);

#endif /* CUZK_FLEET_PG_H */
