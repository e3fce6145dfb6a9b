/* protocol.h — what cuzkd and its clients agree on (proto/protocol.c), on a floor
 * below both: where the socket lives, how a witness names its proof, the line limit,
 * the request names and the error codes of the control protocol. cuzkd's side of it is
 * supervisor/control.h; the client (tools/) includes this header alone.
 *
 * One JSON object per line each way, on RUN_DIR/INSTANCE.sock.
 *
 * Files travel as descriptors, never as paths to open (issue 16: a daemon that opens
 * a client's path does so with its own rights). A request that carries files says how
 * many descriptors it passed, "fds":N, and sends them with its line's bytes over
 * SCM_RIGHTS (any number of sendmsg calls before the newline, at most 253 each); cuzkd
 * queues the descriptors a connection sends and each request takes the first N of the
 * queue, in order. A file is then F = {"fd":I,"path":P}: I indexes those N descriptors,
 * P is the client's name for it, shown in status and messages and never opened. The
 * out directory is a directory descriptor (O_DIRECTORY; O_PATH is enough); inputs are
 * regular files open for reading. A request with a path where F is expected, or
 * without its descriptors, is refused (bad_request): there is no path mode.
 * Requests (field types checked; unknown fields ignored):
 *   {"req":"submit","fds":N,"zkey":F,"witnesses":[W,...],"out_dir":F,"priority":N?,
 *    "r1cs":F?}       W = {"fd":I,"path":P,"name":NAME?}; NAME (default: P's basename
 *                     without .wtns) names OUT/NAME.proof.json: no '/', not . or ..
 *        -> {"ok":true,"job":ID,"partitions":N}
 *   or, instead of "witnesses", "inputs":[W,...] (input.json files, W as above, NAME
 *   defaulting to P's basename without .json) with "witness_gen":F (a generator from
 *   cuzk build-witness, copied and shared by identity like a zkey; the synth dlopens
 *   the copy): the synth computes each witness; a job has one or the other, never both
 *   or, instead of "inputs", "inputs_batch":{"fd":I,"path":P,"count":N}: N input.json
 *   in one file, framed: each a 4-byte little-endian length (1 or more) and that many
 *   bytes, the frames filling the file exactly. One descriptor for any number of
 *   inputs (the HTTP API's array body, up to --max-parts); input K is named "K"
 *   (OUT/K.proof.json) and shown as "input-K.json". cuzkd copies each frame into a
 *   sealed copy of its own, as it does a file of "inputs".
 *   {"req":"status","job":ID?}  -> {"ok":true,"job":{...}} or {"ok":true,"jobs":[...],
 *                                   "draining":B,"children":[...]}
 *   {"req":"wait","job":ID,"timeout_ms":N?} -> (when decided) {"ok":true,"job":{...}}
 *                                   or {"ok":false,"error":"timeout",...}
 *   {"req":"cancel","job":ID}   -> {"ok":true,"job":ID}
 *   {"req":"restart","stage":"synth"|"worker"|"finalizer","index":N?} -> {"ok":true}
 *   {"req":"drain"}             -> (when idle) {"ok":true,"drained":true}
 *   {"req":"shutdown"}          -> {"ok":true,"shutting_down":true}
 *   {"req":"preload","fds":1,"zkey":F} -> {"ok":true,"zkey":P,"seq":N,"stages":M} at
 *   {"req":"evict","zkey":P}       once; the stages apply it between partitions
 *                                  (pipeline.h, "Circuits"); status's "circuits" shows
 *                                  their acks. evict names the zkey as its preload did
 *                                  (no file is opened)
 *   {"req":"submit","circuit":NAME,"fds":N,"witnesses"|"inputs":[W,...],"out_dir":F,...}
 *                                  a circuit the operator declared ([circuit NAME] in
 *                                  cuzkd.conf): cuzkd adds its zkey, r1cs and generator
 *                                  (no "zkey", "r1cs", "witness_gen" then)
 *   {"req":"circuits"}          -> {"ok":true,"circuits":[{"name","state","zkey",
 *                                  "fingerprint","curve","constraints","public",...}]}
 *   {"req":"reload"}            -> (root or cuzkd's user) the config's circuits read
 *                                  again: {"ok":true,"circuits":[...],"changed":[...]}
 *   submit's optional fields for a client that keeps no files (the HTTP API):
 *     "results":"store" in place of "out_dir": cuzkd proves into a private directory
 *                       of its own and keeps each proof and public JSON in the job
 *                       store (--store-keep-days); refused under --no-store
 *     "tenant":T        1-64 of [A-Za-z0-9._-]; from root or cuzkd's uid only
 *     "idempotency_key":K (1-128 printable ASCII) with "body_sha256":HEX64: the same
 *                       (tenant, K) and hash again answers the first job (no
 *                       tenant: the key is the submitting uid's)
 *                       {"ok":true,"job":ID,"partitions":N,"existing":true}; another
 *                       hash is idempotency_conflict (kept in the store with the job)
 *   status (of one job), wait, cancel and proof take "tenant":T too (root or
 *                       cuzkd's uid only): a job that is not tenant T's (another's,
 *                       or one without a tenant) is answered no_such_job, as one
 *                       that never was
 *   {"req":"proof","job":ID,"index":K} -> {"ok":true,"name":NAME,"proof":{...},
 *                                  "public":[...]} (snarkjs's proof.json and
 *                                  public.json) of a "results":"store" job, from the
 *                                  store (also after a restart): not_ready, part_failed
 *   {"req":"proofs","job":ID,"index":K,"count":N} -> {"ok":true,"proofs":[{"index",
 *                                  "proof"?,"public"?}]}: partitions K to K+N-1 (N
 *                                  at most PROTO_PROOFS_PAGE_MAX) of a "results":"store"
 *                                  job in one reply, a done one with its proof and
 *                                  public JSON; the others' states are the job's
 *                                  (status). Refused as proof is; takes "tenant"
 *   {"req":"watch"}             -> (root or cuzkd's user) {"ok":true,"watching":true},
 *                                  then a line {"event":"job_end","job":ID,"state":S}
 *                                  for every job decided from then on, until the
 *                                  connection closes (the HTTP API's one subscription,
 *                                  on which all its long polls sleep); a watcher that
 *                                  does not read is closed at REPLY_MAX unsent bytes
 *   submit's "max_running":N (with "tenant", the tokens file's max-running-jobs):
 *                       refused quota when the tenant already has N jobs not yet
 *                       decided, counted and admitted in one step of cuzkd's loop
 *   submit's "metadata":{...} the client's own object (proto_metadata_valid's
 *                       bounds), kept with the job in the store and shown in its JSON
 *   {"req":"jobs","tenant":T?,"state":S?,"circuit":C?,"since":UNIX?,"before":ID?,
 *    "limit":N?}        -> {"ok":true,"jobs":[{"id","state","reason"?,"circuit"?,
 *                       "submitted_unix","partitions","done","failed","metadata"?}],
 *                       "more":B}: a page of the jobs in the job store, newest
 *                       first (id below "before"), at most "limit" (1 to
 *                       PROTO_JOBS_PAGE_MAX, default 50); S running, done, failed or
 *                       cancelled. "tenant" (root or cuzkd's uid only): that tenant's
 *                       jobs; without it an ordinary user's own (by uid), the
 *                       operator's every job. One request a page, whatever its size
 * Errors: {"ok":false,"error":CODE,"message":SENTENCE}; CODE is one of the
 * PROTO_E_* strings below.
 * Job JSON: {"id","state","reason"?,"priority","zkey","out_dir","partitions":N,
 *            "done":N,"failed":N,"circuit"?,"tenant"?,"results"?:"store",
 *            "submitted_unix","parts":[{"index","name","state","attempts",
 *            "reason"?,"proof"?,"public"?,"timings_ms":{"queue_wait","witness",
 *            "prove","finalize"} (each N or null)}]}
 */
#ifndef CUZK_PROTOCOL_H
#define CUZK_PROTOCOL_H

#include <stdbool.h>
#include <stddef.h>

#define PROTO_PATH_MAX 1024 /* a path in cuzkd's options, or the client's */

/* A circuit's name, as clients send it (`cuzk prove --circuit NAME`, the API's
 * /v1/circuits/NAME) and as cuzkd's [circuit NAME] sections declare it: 1 to
 * PROTO_CIRCUIT_NAME_MAX - 1 of [A-Za-z0-9._-], beginning with a letter or a digit (so never
 * ".", "..", a hidden name or anything with a '/'). */
#define PROTO_CIRCUIT_NAME_MAX 64
/* Circuits one cuzkd declares (the first PIPE_PRELOAD_MAX preloaded): the most its
 * `circuits` reply lists. */
#define PROTO_CIRCUIT_DECL_MAX 8
bool proto_circuit_name_valid(const char *name);

/* The default run directory: /run/cuzk as root, else $XDG_RUNTIME_DIR/cuzk, else
 * /tmp/cuzk-UID. Shared by cuzkd and the client so both find the same socket. */
void proto_default_run_dir(char *buf, size_t len);

/* Output name of a witness (or input.json) path: its basename without ".wtns" (or
 * ".json"). 0 or -EINVAL. */
int proto_wtns_name(const char *path, char *name, size_t len);

/* Request names ("req"). */
/* A job's priority: higher runs first, 0 by default (submit's "priority"). */
#define PROTO_PRIORITY_MAX 1000000

#define PROTO_REQ_SUBMIT   "submit"
#define PROTO_REQ_STATUS   "status"
#define PROTO_REQ_WAIT     "wait"
#define PROTO_REQ_CANCEL   "cancel"
#define PROTO_REQ_RESTART  "restart"
#define PROTO_REQ_DRAIN    "drain"
#define PROTO_REQ_SHUTDOWN "shutdown"
#define PROTO_REQ_PRELOAD  "preload"
#define PROTO_REQ_EVICT    "evict"
#define PROTO_REQ_CIRCUITS "circuits"
#define PROTO_REQ_RELOAD   "reload"
#define PROTO_REQ_PROOF    "proof"
#define PROTO_REQ_WATCH    "watch"
#define PROTO_REQ_JOBS     "jobs"
#define PROTO_REQ_PROOFS   "proofs"

/* A "proofs" reply holds this many at most (the HTTP API's page; about 1 KiB each). */
#define PROTO_PROOFS_PAGE_MAX 2048

/* A "jobs" page holds this many at most (the HTTP API's ?limit=). */
#define PROTO_JOBS_PAGE_MAX     200
#define PROTO_JOBS_PAGE_DEFAULT 50

/* A job's metadata: the client's own JSON object, bounded so that a job costs little
 * more with it: at most PROTO_META_KEYS keys of 1 to PROTO_META_KEY_MAX characters
 * (Unicode code points), each value a string of at most PROTO_META_VALUE_MAX
 * characters, a number, true, false or null (no object, no array), the whole at most
 * PROTO_META_BYTES bytes as the client sent it (the HTTP header). */
#define PROTO_META_KEYS      16
#define PROTO_META_KEY_MAX   40
#define PROTO_META_VALUE_MAX 500
#define PROTO_META_BYTES     4096
/* Whether m keeps those bounds (its compact text at most PROTO_META_BYTES); when not,
 * why in err. */
struct json_t;
bool proto_metadata_valid(const struct json_t *m, char *err, size_t errlen);

#define PROTO_LINE_MAX  65536 /* bytes of one request line, newline excluded */
/* Bytes of one reply line (or watch event) at most: cuzkd never queues more for a
 * connection (its unsent replies are bounded so), and a client reads no more than
 * this for one line, so a reply that never ends cannot take its memory. */
#define PROTO_REPLY_MAX (64u << 20)

/* Error codes of the protocol. */
#define PROTO_E_BAD_JSON      "bad_json"        /* not one JSON object */
#define PROTO_E_TOO_LONG      "line_too_long"   /* > PROTO_LINE_MAX */
#define PROTO_E_BAD_REQUEST   "bad_request"     /* a field missing or of the wrong type */
#define PROTO_E_UNKNOWN       "unknown_request" /* "req" names no request */
#define PROTO_E_NOT_FOUND     "not_found"       /* input file missing or unreadable */
#define PROTO_E_BAD_INPUT     "bad_input"       /* not a zkey/wtns, wrong circuit, dup names */
#define PROTO_E_TOO_BIG       "too_big"         /* circuit needs more than --buffer-mb */
#define PROTO_E_OUTPUT        "bad_output"      /* out_dir missing or not writable */
#define PROTO_E_FULL          "full"            /* job table has no room */
#define PROTO_E_BUSY          "busy"            /* --max-queued, or no connection slot or descriptor: retry */
#define PROTO_E_NO_JOB        "no_such_job"     /* no job by that id, or it was retired */
#define PROTO_E_DRAINING      "draining"        /* not accepting submits */
#define PROTO_E_TIMEOUT       "timeout"         /* wait: the job still runs at its deadline */
#define PROTO_E_PERM          "permission"      /* peer not allowed, or out_dir not theirs to write */
#define PROTO_E_NOT_OWNER     "not_owner"       /* cancel/evict of another uid's work (owners.h) */
#define PROTO_E_NOT_PERMITTED "not_permitted"   /* restart/drain/shutdown: root or cuzkd's uid */
#define PROTO_E_QUOTA         "quota"           /* a per-uid quota is reached (--quota-*) */
#define PROTO_E_NO_CIRCUIT    "no_such_circuit" /* submit --circuit: not declared */
#define PROTO_E_INPUT_LIMIT   "input_too_large" /* over its circuit's max-input-bytes */
#define PROTO_E_CONFLICT      "idempotency_conflict" /* the key names another body's job */
#define PROTO_E_NOT_READY     "not_ready"            /* proof request: the partition is not done yet */
#define PROTO_E_PART_FAILED   "part_failed"          /* proof request: it failed (reason in "message") */
#define PROTO_E_INTERNAL      "internal"             /* cuzkd's own failure (out of memory, a lost copy) */
/* The job store could not record the request (disk full, I/O): nothing was accepted. */
#define PROTO_E_STORE         "store"

#endif
