/* control.h — cuzkd's control protocol: one JSON object per line each way.
 *
 * This module knows the protocol (framing, parsing, validation of a submit, reply
 * shapes, job status as JSON); supervisor.c owns the sockets and the job table calls.
 * Every function here is testable without a process or a socket.
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
 * Errors: {"ok":false,"error":CODE,"message":SENTENCE}; CODE is one of the
 * CONTROL_E_* strings below.
 * Job JSON: {"id","state","reason"?,"priority","zkey","out_dir","partitions":N,
 *            "done":N,"failed":N,"parts":[{"index","name","state","attempts",
 *            "reason"?,"proof"?,"public"?}]}
 */
#ifndef CUZK_CONTROL_H
#define CUZK_CONTROL_H

#include <stddef.h>
#include <stdint.h>

#include <sys/stat.h>
#include <sys/types.h>

#include <jansson.h>

#include "cuzk/copies.h"
#include "cuzk/jobtab.h"
#include "cuzk/pipeline.h"

#define CONTROL_LINE_MAX 65536 /* bytes of one request line, newline excluded */

/* Error codes of the protocol. */
#define CONTROL_E_BAD_JSON "bad_json"       /* not one JSON object */
#define CONTROL_E_TOO_LONG "line_too_long"  /* > CONTROL_LINE_MAX */
#define CONTROL_E_BAD_REQUEST "bad_request" /* a field missing or of the wrong type */
#define CONTROL_E_UNKNOWN "unknown_request"
#define CONTROL_E_NOT_FOUND "not_found" /* input file missing or unreadable */
#define CONTROL_E_BAD_INPUT "bad_input" /* not a zkey/wtns, wrong circuit, dup names */
#define CONTROL_E_TOO_BIG "too_big"     /* circuit needs more than --buffer-mb */
#define CONTROL_E_OUTPUT "bad_output"   /* out_dir missing or not writable */
#define CONTROL_E_FULL "full"           /* job table has no room */
#define CONTROL_E_NO_JOB "no_such_job"
#define CONTROL_E_DRAINING "draining" /* not accepting submits */
#define CONTROL_E_TIMEOUT "timeout"
#define CONTROL_E_PERM "permission"
#define CONTROL_E_NOT_OWNER "not_owner"         /* cancel/evict of another uid's work (owners.h) */
#define CONTROL_E_NOT_PERMITTED "not_permitted" /* restart/drain/shutdown: root or cuzkd's uid */
#define CONTROL_E_QUOTA "quota"                 /* a per-uid quota is reached (--quota-*) */
#define CONTROL_E_INTERNAL "internal"
#define CONTROL_E_STORE \
	"store" /* the job store could not record it
					       * (disk full, I/O): nothing was accepted */

enum control_kind {
	CONTROL_SUBMIT = 0,
	CONTROL_STATUS,
	CONTROL_WAIT,
	CONTROL_CANCEL,
	CONTROL_RESTART,
	CONTROL_DRAIN,
	CONTROL_SHUTDOWN,
	CONTROL_PRELOAD,
	CONTROL_EVICT,
};

struct control_err {
	const char *code;
	char message[512];
};

/* A parsed request. Strings point into root (freed by control_req_free). File paths
 * are the client's names (display); *_fd are indices into the request's descriptors
 * (-1: none). */
struct control_req {
	enum control_kind kind;
	json_t *root;
	const char *zkey, *r1cs, *out_dir, *stage;
	const char *witness_gen; /* submit with "inputs": witnesses[] are input.json files */
	const char **witnesses;
	const char **witness_names; /* NULL entries: from the path */
	int *witness_fd;
	int zkey_fd, r1cs_fd, out_fd, witness_gen_fd;
	uint32_t n_fds; /* "fds": descriptors the request passed */
	size_t n_witnesses;
	int32_t priority;
	int has_job;
	uint64_t job;
	int64_t timeout_ms; /* wait: -1 = none */
	int has_index;
	uint32_t index;
};

/* Parse one line (without its newline). 0, or -EINVAL with e filled. */
int control_parse(const char *line, size_t len, struct control_req *r, struct control_err *e);
void control_req_free(struct control_req *r);

/* Who sent a request (SO_PEERCRED, SO_PEERGROUPS): the out directory must be one
 * this user could write to itself. */
struct control_peer {
	uid_t uid;
	gid_t gid;
	const gid_t *groups;
	size_t n_groups;
	/* --quota-bytes for this uid (0: none) and the bytes its unfinished jobs hold:
	 * a submit whose files would pass it is refused before any copy. */
	uint64_t bytes_quota, bytes_used;
};

/* May peer create and rename files in the directory of st (owner, group and other
 * bits as the kernel reads them; root may)? By the mode bits only: see the next. */
int control_peer_may_write_dir(const struct control_peer *peer, const struct stat *st);
/* The same for the directory open as fd, by its POSIX access ACL when it has one
 * (peer_acl.h: a named-user entry denies or grants as the kernel would). */
int control_peer_may_write_dirfd(const struct control_peer *peer, int fd, const struct stat *st);
/* Whether the peer's primary or a supplementary group is G. */
int control_peer_in_group(const struct control_peer *p, gid_t g);

#define CONTROL_ID_LEN 96

/* A file's identity as text: "dev:ino:size:mtime:ctime" (ns) for a regular file, any
 * write changes it; "dev:ino" for a directory (its entries change). */
void control_file_id(const struct stat *st, char id[CONTROL_ID_LEN]);

/* A submit after validation: display paths, one output name per witness, and what
 * it holds: copies (copies.h) of the zkey, r1cs, generator and each witness (or
 * input.json), and a duplicate of the out directory's descriptor. -1: none. */
struct control_submit {
	char zkey[JOBTAB_PATH_LEN];
	char r1cs[JOBTAB_PATH_LEN];
	char out_dir[JOBTAB_PATH_LEN];
	char wgen[JOBTAB_PATH_LEN]; /* "" for a .wtns job; wtns[] then hold input.json paths */
	size_t n;
	char (*wtns)[JOBTAB_PATH_LEN];
	char (*name)[PIPE_NAME_LEN];
	int *wtns_fd;
	int zkey_fd, r1cs_fd, out_fd, wgen_fd;
	/* What each file the client passed was (control_file_id): the durable copies of
	 * a job store are named after it (shared by identity). */
	char zkey_id[CONTROL_ID_LEN], r1cs_id[CONTROL_ID_LEN], out_id[CONTROL_ID_LEN];
	char wgen_id[CONTROL_ID_LEN];
	char (*wtns_id)[CONTROL_ID_LEN];
	int32_t priority;
	uint32_t domain_size, nvars;
	uint64_t buf_need;
	uint64_t bytes; /* of the distinct files copied: what the job counts against
			 * its uid's --quota-bytes while it holds them */
};

/* Validate a submit against the descriptors it passed (fds[0..n_fds), the client's,
 * left open): the inputs are regular files and are copied (copies_take), the zkey
 * copy opens and fits buf_size, every witness copy belongs to it, the out directory
 * is a directory peer may write (and in a sticky one, no output name is another
 * user's file), output names are valid and distinct, at most max_parts witnesses.
 * Messages speak only of the files passed, never of a path (no existence oracle).
 * 0 and s filled (control_submit_free), or a -errno with e filled and nothing held. */
int control_submit_check(const struct control_req *r, const int *fds, size_t n_fds,
			 const struct control_peer *peer, struct copies *cp, uint64_t buf_size,
			 uint32_t max_parts, struct control_submit *s, struct control_err *e);
/* cuzkd's policy for control_submit_check, set once before the first submit (the
 * intake threads read it, never write it). wgen_dirs: --wgen-dir, the only places a
 * witness generator is taken from (wgen_trust.h); NULL or "": none. */
struct control_policy {
	const char *wgen_dirs;
};
void control_set_policy(const struct control_policy *p);

/* Free s, releasing what it still holds (fields set to -1 were handed on). */
void control_submit_free(struct control_submit *s, struct copies *cp);

/* Validate a preload (its descriptor is a regular file, copied as a shared copy, that
 * opens and whose partitions fit buf_size: *copy_fd gets the copy with a reference) or
 * an evict (only the path; *copy_fd -1). out: the display path. 0, or a -errno with e
 * filled and nothing held. */
int control_circuit_check(const struct control_req *r, const int *fds, size_t n_fds,
			  struct copies *cp, uint64_t buf_size, char out[JOBTAB_PATH_LEN],
			  int *copy_fd, struct control_err *e);

/* An output name: 1 to PIPE_NAME_LEN - 1 bytes, no '/', no control character, not
 * "." or "..". 0 or -EINVAL. */
int control_name_ok(const char *name);

/* Output name of a witness (or input.json) path: its basename without ".wtns" (or
 * ".json"). 0 or -EINVAL. */
int control_wtns_name(const char *path, char *name, size_t len);

/* One reply line (with its '\n'), malloc'd; NULL only when out of memory. The _json
 * form takes the reference to obj and adds "ok":true. */
char *control_reply_error(const char *code, const char *message);
char *control_reply_ok(json_t *obj);

/* Job slot `slot` as JSON (NULL if the slot is free). partinfo may be NULL. */
json_t *control_job_json(const struct jobtab *jt, const struct pipe_partinfo *partinfo,
			 uint32_t slot, int with_parts);

/* Line framing of one connection's input. */
struct control_framer {
	char *buf;
	size_t len, cap;
	int discarding; /* inside an oversized line: drop bytes up to its newline */
};

/* Callback per complete line (line NULL and len 0: an oversized line was dropped).
 * Return non-zero to stop (the rest of the input is dropped: the caller closes). */
typedef int (*control_line_fn)(void *arg, const char *line, size_t len);

/* Append data and call fn for each complete line. 0, -ENOMEM. */
int control_framer_feed(struct control_framer *f, const char *data, size_t n, control_line_fn fn,
			void *arg);
void control_framer_free(struct control_framer *f);

#endif
