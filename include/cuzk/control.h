/* control.h — cuzkd's control protocol: one JSON object per line each way.
 *
 * This module knows the protocol (framing, parsing, validation of a submit, reply
 * shapes, job status as JSON); supervisor.c owns the sockets and the job table calls.
 * Every function here is testable without a process or a socket.
 *
 * Requests (field types checked; unknown fields ignored):
 *   {"req":"submit","zkey":P,"witnesses":[P,...],"out_dir":D,"priority":N?,"r1cs":P?}
 *        -> {"ok":true,"job":ID,"partitions":N}
 *   or, instead of "witnesses", "inputs":[P,...] (input.json files) with
 *   "witness_gen":P (a generator from cuzk build-witness): the synth computes each
 *   witness; a job has one or the other, never both
 *   {"req":"status","job":ID?}  -> {"ok":true,"job":{...}} or {"ok":true,"jobs":[...],
 *                                   "draining":B,"children":[...]}
 *   {"req":"wait","job":ID,"timeout_ms":N?} -> (when decided) {"ok":true,"job":{...}}
 *                                   or {"ok":false,"error":"timeout",...}
 *   {"req":"cancel","job":ID}   -> {"ok":true,"job":ID}
 *   {"req":"restart","stage":"synth"|"worker"|"finalizer","index":N?} -> {"ok":true}
 *   {"req":"drain"}             -> (when idle) {"ok":true,"drained":true}
 *   {"req":"shutdown"}          -> {"ok":true,"shutting_down":true}
 *   {"req":"preload","zkey":P}  -> {"ok":true,"zkey":ABS,"seq":N,"stages":M} at once; the
 *   {"req":"evict","zkey":P}       stages apply it between partitions (pipeline.h,
 *                                  "Circuits"); status's "circuits" shows their acks
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

#include <jansson.h>

#include "cuzk/jobtab.h"
#include "cuzk/pipeline.h"

#define CONTROL_LINE_MAX 65536 /* bytes of one request line, newline excluded */

/* Error codes of the protocol. */
#define CONTROL_E_BAD_JSON "bad_json"         /* not one JSON object */
#define CONTROL_E_TOO_LONG "line_too_long"    /* > CONTROL_LINE_MAX */
#define CONTROL_E_BAD_REQUEST "bad_request"   /* a field missing or of the wrong type */
#define CONTROL_E_UNKNOWN "unknown_request"
#define CONTROL_E_NOT_FOUND "not_found"       /* input file missing or unreadable */
#define CONTROL_E_BAD_INPUT "bad_input"       /* not a zkey/wtns, wrong circuit, dup names */
#define CONTROL_E_TOO_BIG "too_big"           /* circuit needs more than --buffer-mb */
#define CONTROL_E_OUTPUT "bad_output"         /* out_dir missing or not writable */
#define CONTROL_E_FULL "full"                 /* job table has no room */
#define CONTROL_E_NO_JOB "no_such_job"
#define CONTROL_E_DRAINING "draining"         /* not accepting submits */
#define CONTROL_E_TIMEOUT "timeout"
#define CONTROL_E_PERM "permission"
#define CONTROL_E_INTERNAL "internal"
#define CONTROL_E_STORE "store"               /* the job store could not record it
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

/* A parsed request. Strings point into root (freed by control_req_free). */
struct control_req {
	enum control_kind kind;
	json_t *root;
	const char *zkey, *r1cs, *out_dir, *stage;
	const char *witness_gen;  /* submit with "inputs": witnesses[] are input.json files */
	const char **witnesses;
	size_t n_witnesses;
	int32_t priority;
	int has_job;
	uint64_t job;
	int64_t timeout_ms;  /* wait: -1 = none */
	int has_index;
	uint32_t index;
};

/* Parse one line (without its newline). 0, or -EINVAL with e filled. */
int control_parse(const char *line, size_t len, struct control_req *r, struct control_err *e);
void control_req_free(struct control_req *r);

/* A submit after validation: absolute paths, one output name per witness. */
struct control_submit {
	char zkey[JOBTAB_PATH_LEN];
	char r1cs[JOBTAB_PATH_LEN];
	char out_dir[JOBTAB_PATH_LEN];
	char wgen[JOBTAB_PATH_LEN];  /* "" for a .wtns job; wtns[] then hold input.json paths */
	size_t n;
	char (*wtns)[JOBTAB_PATH_LEN];
	char (*name)[PIPE_NAME_LEN];
	int32_t priority;
	uint32_t domain_size, nvars;
	uint64_t buf_need;
};

/* Validate a submit (files exist and are readable, the zkey opens and fits buf_size,
 * every witness belongs to it, out_dir is a writable directory, no two witnesses share
 * a basename, at most max_parts witnesses). 0 and s filled (free with
 * control_submit_free), or a -errno with e filled and nothing to free. */
int control_submit_check(const struct control_req *r, uint64_t buf_size, uint32_t max_parts,
			 struct control_submit *s, struct control_err *e);
void control_submit_free(struct control_submit *s);

/* Validate a preload (the zkey resolves, opens and its partitions fit buf_size) or
 * an evict (the path resolves; a file gone since it was preloaded may be given as the
 * absolute path it was preloaded under: may_be_gone set). out: the absolute path.
 * 0, or a -errno with e filled. */
int control_circuit_check(const struct control_req *r, uint64_t buf_size,
			  char out[JOBTAB_PATH_LEN], int *may_be_gone, struct control_err *e);

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
int control_framer_feed(struct control_framer *f, const char *data, size_t n,
			control_line_fn fn, void *arg);
void control_framer_free(struct control_framer *f);

#endif
