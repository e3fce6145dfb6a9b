/* intake.h — a submit's (or preload's) checks and copies, in a thread of their own
 * (supervisor/intake.c).
 *
 * A submit reads the client's files: fstat of each descriptor and of the out dir,
 * then a copy of each file into a sealed memfd (copies.h). Every one of those calls
 * can block for as long as the client likes: a file on a FUSE mount it runs, a hung
 * NFS server, or simply a 50 GB zkey at page-cache speed. Run in cuzkd's event loop,
 * that stopped every other client's status, wait and submit, and every stage's
 * restart, for as long as the read took (forever, for a FUSE read never answered).
 * So the supervisor hands each submit to an intake: one detached thread that runs
 * control_submit_check and writes the eventfd notify_fd when it is done. The loop
 * meanwhile serves everyone else; it reads the result with intake_done, and gives up
 * on an intake whose copies make no progress for --copy-timeout seconds (the
 * client is told; the thread is left to finish or block on its own, holding only
 * its own descriptors and copies, and is freed when it ends).
 *
 * Threads: the fields marked "loop" belong to the supervisor's thread alone; "in"
 * are written before intake_start and only read after; "out" are written by the
 * thread and read by the loop only after intake_done said so (acquire/release). */
#ifndef CUZK_INTAKE_H
#define CUZK_INTAKE_H

#include <jansson.h>
#include <stdatomic.h>
#include <stdint.h>
#include <sys/types.h>

#include "supervisor/submit_check.h"
#include "supervisor/copies.h"

struct intake {
    /* in (owned by the intake from intake_start on) */
    struct control_req r; /* the request, moved in */
    int *fds;             /* its descriptors, moved in (closed by intake_free) */
    size_t n_fds;
    uid_t uid;
    gid_t gid;
    gid_t *groups; /* a copy of the peer's */
    size_t n_groups;
    struct copies *cp; /* shared with the loop (its own lock) */
    uint64_t buf_size;
    uint32_t max_parts;
    uint64_t bytes_quota, bytes_used; /* control_peer's, when the intake began */
    int notify_fd;                    /* eventfd: +1 when done; must outlive the thread */
    int durable_dfd;                  /* a submit with a job store: its copies dir (a dup,
                                       * closed by intake_free), else -1 */
    /* loop */
    uint32_t conn, conn_gen;      /* who waits for the answer */
    uint64_t seen_bytes, seen_ns; /* progress last seen, and when it last moved */
    int abandoned;                /* the client was told it failed: free when done */
    struct intake *next;
    /* out */
    _Atomic uint64_t bytes; /* read so far (copies_progress_bind) */
    _Atomic int done;
    int rc;                     /* control_submit_check's */
    struct control_submit sub;  /* rc 0: the checked submit, holding its copies */
    char path[JOBTAB_PATH_LEN]; /* a preload (r.kind): control_circuit_check's */
    int copy_fd;                /* rc 0 of a preload: its zkey's copy (a reference) */
    struct control_err e;       /* rc != 0 */
    /* out, a submit with durable_dfd: its durable copies, written and fsync'd here
     * (intake_persist), since for a large zkey that is as long as the read. rc 0
     * and dur_rc 0: copies (the store's record of them) and held (every name
     * written or found), both the loop's once it takes them (set them NULL). */
    int dur_rc; /* 0 or -errno (-ENOSPC: disk full) with dur_err */
    char dur_err[400];
    json_t *copies, *held;
};

/* A preload is checked the same way (control_circuit_check): path and copy_fd. */

/* A new intake of request *r and its n_fds descriptors fds (both moved in: *r is
 * zeroed, fds are the intake's to close), for a peer of uid, gid and groups (copied).
 * NULL on out of memory (nothing moved). */
struct intake *intake_new(struct control_req *r, const int *fds, size_t n_fds, uid_t uid, gid_t gid,
                          const gid_t *groups, size_t n_groups);
/* Run the checks in a detached thread. 0 or -errno (then nothing ran: intake_free). */
int intake_start(struct intake *t);
/* Has the thread finished (its out fields readable)? */
int intake_done(struct intake *t);
/* Bytes its copies have read so far. */
uint64_t intake_bytes(struct intake *t);
/* Free a finished (or never started) intake: its descriptors, its request, and its
 * submit's copies unless they were taken (t->sub's fds set to -1 by the caller).
 * Durable copies not taken stay on disk: only the loop knows which other jobs hold
 * them (supervisor.c, drop_unheld). */
void intake_free(struct intake *t);

/* Write the durable copies of submit sub into dfd (copies_persist): each shared
 * file (zkey, r1cs, generator) as KEY-IDENTITY, each witness or input as
 * "part-TOKEN-I" (TOKEN random: unique without knowing the job's id, which only
 * the loop gives). 0 with *copies ({"zkey":..., "parts":[...]}) and *held (every
 * name), or -errno with err (nothing of the job's own left behind). Safe in any
 * thread: it touches only dfd and sub. */
int intake_persist(int dfd, const struct control_submit *sub, json_t **copies, json_t **held, char *err,
                   size_t errlen);

#endif
