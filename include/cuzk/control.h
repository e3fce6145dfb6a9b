/* control.h — cuzkd's control protocol: one JSON object per line each way.
 *
 * The wire itself (requests, replies, error codes) is protocol.h's, which the client
 * shares. This module is cuzkd's side of it (framing, parsing, validation of a submit,
 * reply shapes, job status as JSON); supervisor/conns.c owns the sockets and
 * requests.c the job table calls. Every function here is testable without a process
 * or a socket.
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
#include "cuzk/protocol.h"

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
	CONTROL_CIRCUITS, /* the declared circuits (catalog.c) */
	CONTROL_RELOAD,   /* read the config's [circuit NAME] sections again */
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
	const char *witness_gen;  /* submit with "inputs": witnesses[] are input.json files */
	const char *circuit;      /* submit by name: cuzkd adds the circuit's files */
	int inputs;               /* submit: "inputs" (input.json), not "witnesses" */
	uint64_t max_input_bytes; /* set by cuzkd (the circuit's limit), never parsed: a
				   * witness or input.json larger is refused; 0 none */
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

/* e filled with code and the formatted sentence; returns rc (a check's failure). */
int control_fail(struct control_err *e, const char *code, int rc, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
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
