/* control.h — cuzkd's control protocol: one JSON object per line each way.
 *
 * The wire itself (requests, replies, error codes) is protocol.h's, which the client
 * shares. This module is cuzkd's side of it (framing, parsing, reply shapes, job
 * status as JSON); the checks of a submit's files are submit_check.h's,
 * supervisor/conns.c owns the sockets and requests.c the job table calls. Every
 * function here is testable without a process or a socket.
 */
#ifndef CUZK_CONTROL_H
#define CUZK_CONTROL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <sys/stat.h>
#include <sys/types.h>

#include <jansson.h>

#include "shm/jobtab.h"
#include "shm/pipeline.h"
#include "proto/protocol.h"

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
    CONTROL_PROOF,    /* a stored proof of a "results":"store" job */
    CONTROL_WATCH,    /* the operator's: every job's end pushed on this connection */
    CONTROL_JOBS,     /* a page of the jobs in the job store (the HTTP API's list) */
    CONTROL_PROOFS,   /* a range of a stored job's proofs in one reply */
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
    /* "inputs_batch" (protocol.h): the inputs framed in one file, batch_fd its index
     * (-1: none; every witness_fd is it); witnesses[] and witness_names[] then point
     * into batch_text ("input-I.json" and "I"), and the intake reads the frames. */
    int batch_fd;
    const char *batch_path;
    char *batch_text;
    int zkey_fd, r1cs_fd, out_fd, witness_gen_fd;
    uint32_t n_fds; /* "fds": descriptors the request passed */
    size_t n_witnesses;
    int32_t priority;
    int has_job;
    uint64_t job;
    int64_t timeout_ms; /* wait: -1 = none */
    int has_index;
    uint32_t index;
    /* submit, for a client that keeps no files (protocol.h): results into the job
     * store (no out_dir), the tenant it acts for, an idempotency key with the body's
     * SHA-256 (hex). NULL / 0: none. */
    int results_store;
    const char *tenant, *idem_key, *body_sha256;
    uint32_t max_running;   /* with tenant: its jobs not yet decided, at most; 0 none */
    const json_t *metadata; /* submit: the client's object (proto_metadata_valid); NULL none */
    /* jobs: the page asked for (protocol.h): filters (NULL / 0 none), below job id
     * before (0: from the newest), at most limit */
    const char *state_filter, *circuit_filter;
    int64_t since;
    uint64_t before;
    uint32_t limit;
    uint32_t count; /* proofs: partitions from index */
};

#define CONTROL_TENANT_MAX 65 /* 1-64 bytes and the NUL */
#define CONTROL_IDEM_MAX   129
#define CONTROL_SHA256_HEX 65

/* Parse one line (without its newline). 0, or -EINVAL with e filled. */
int control_parse(const char *line, size_t len, struct control_req *r, struct control_err *e);

/* e filled with code and the formatted sentence; returns rc (a check's failure). */
int control_fail(struct control_err *e, const char *code, int rc, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
void control_req_free(struct control_req *r);

/* Is name a valid output name: 1 to PIPE_NAME_LEN - 1 bytes, no '/', no control
 * character, not "." or ".."? */
bool control_name_valid(const char *name);

/* One reply line (with its '\n'), malloc'd; NULL only when out of memory. The _json
 * form takes the reference to obj and adds "ok":true. */
char *control_reply_error(const char *code, const char *message);
char *control_reply_ok(json_t *obj);

/* Job slot `slot` as JSON (NULL if the slot is free). partinfo may be NULL. */
json_t *control_job_json(const struct jobtab *jt, const struct pipe_partinfo *partinfo, uint32_t slot,
                         int with_parts);

/* A partition's "timings_ms" (protocol.h, job JSON) from its timeline and its job's
 * submit time (CLOCK_MONOTONIC ns): a new object. */
json_t *control_part_timings(const struct pipe_part_times *t, uint64_t submit_ns);

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
int control_framer_feed(struct control_framer *f, const char *data, size_t n, control_line_fn fn, void *arg);
void control_framer_free(struct control_framer *f);

#endif
