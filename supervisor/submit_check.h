/* submit_check.h — the checks of a submit's and a preload's files, run by an intake
 * (intake.h) off cuzkd's loop once control.h has parsed the request: who may write
 * the out directory, the size and identity of each input, the witness generator's
 * place (wgen_trust.h), the copies (copies.h) the job then holds. */
#ifndef CUZK_SUBMIT_CHECK_H
#define CUZK_SUBMIT_CHECK_H

#include <stddef.h>
#include <stdint.h>

#include <sys/stat.h>
#include <sys/types.h>

#include "supervisor/control.h"
#include "supervisor/copies.h"
#include "shm/jobtab.h"
#include "shm/pipeline.h"

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
    /* What the request said of itself (control.h): the circuit's name ("" by files),
     * results kept in the job store (no out dir yet: cuzkd makes one, out_fd -1),
     * the tenant, the idempotency key and body hash ("" none). */
    char circuit[64];
    int results_store;
    char tenant[CONTROL_TENANT_MAX], idem_key[CONTROL_IDEM_MAX], body_sha256[CONTROL_SHA256_HEX];
    uint32_t max_running;                /* the tenant's jobs not yet decided, at most; 0 none */
    char metadata[PROTO_META_BYTES + 1]; /* the client's object, compact JSON; "" none */
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
int control_circuit_check(const struct control_req *r, const int *fds, size_t n_fds, struct copies *cp,
                          uint64_t buf_size, char out[JOBTAB_PATH_LEN], int *copy_fd, struct control_err *e);

#endif
