/* jobtab.h — the job table in shared memory: jobs and their partitions, each with
 * one CAS-updated 64-bit state word. The table, not the rings, is the truth.
 *
 * Partition lifecycle (DESIGN.md):
 *     QUEUED → SYNTH(pid) → READY(buffer) → PROVING(pid) → PROVED → FINAL(pid) → DONE
 *                                                                 ↘ FAILED(reason)
 * State word: bits 63..56 state, 55..32 generation (bumped by every transition, so a
 * CAS prepared against an older word fails even if state and pid came back: no ABA),
 * 31..0 owner pid (0 in states no process owns).
 *
 * Writers. Allocation (jobtab_job_add, jobtab_job_retire) is done by the supervisor
 * only. Every other change is a CAS on a state word by whoever moves it; the fields a
 * state's owner fills in (buf, result, reason) are written before the CAS that hands
 * the partition on (release) and read after the CAS that takes it (acquire).
 */
#ifndef CUZK_JOBTAB_H
#define CUZK_JOBTAB_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include "base/barrier.h"

struct pool;

#define JOBTAB_MAGIC          0x4241544au /* "JTAB" */
/* A partition's failure reason holds the whole of the longest message a stage writes:
 * two JOBTAB_PATH_LEN paths (a zkey and a generator, as the client named them) and
 * ~150 bytes of text (the circuit-fingerprint mismatch). A longer one is cut at a
 * UTF-8 and, where one is near, a word boundary, ending in JOBTAB_REASON_CUT
 * (jobtab_reason_copy). A job's own reason is only a count ("N of M partitions
 * failed"). Changing either changes the segment ABI (SEG_ABI_VERSION). */
#define JOBTAB_REASON_LEN     736
#define JOBTAB_JOB_REASON_LEN 96
#define JOBTAB_REASON_CUT     " [... cut]"
#define JOBTAB_PATH_LEN       256
#define JOBTAB_NONE           UINT32_MAX

enum jobtab_state {
    JOBTAB_FREE = 0, /* slot unused */
    JOBTAB_QUEUED,
    JOBTAB_SYNTH,
    JOBTAB_READY,
    JOBTAB_PROVING,
    JOBTAB_PROVED,
    JOBTAB_FINAL,
    JOBTAB_DONE,
    JOBTAB_FAILED,
    JOBTAB_NSTATES
};

static inline uint64_t jobtab_word(uint32_t state, uint32_t gen, uint32_t pid)
{
    return (uint64_t)state << 56 | (uint64_t)(gen & 0xffffff) << 32 | pid;
}
static inline uint32_t jobtab_word_state(uint64_t w)
{
    return (uint32_t)(w >> 56);
}
static inline uint32_t jobtab_word_gen(uint64_t w)
{
    return (uint32_t)(w >> 32) & 0xffffff;
}
static inline uint32_t jobtab_word_pid(uint64_t w)
{
    return (uint32_t)w;
}

/* One partition, twelve cache lines (most of them the failure reason). */
struct jobtab_part {
    _Atomic uint64_t word;          /* writers: CAS by whoever moves the partition */
    uint32_t job;                   /* writer: supervisor at job_add; fixed while in use */
    uint32_t index;                 /* partition number within the job; as job */
    _Atomic uint32_t buf;           /* pool buffer, or JOBTAB_NONE; writer: the owner
                                     * (SYNTH pid, PROVING pid), or reclaim while the owner
                                     * is dead */
    _Atomic uint32_t attempts;      /* writers: each claim out of QUEUED/READY (fetch_add) */
    _Atomic uint64_t result;        /* opaque result handle; writer: the PROVING owner */
    char reason[JOBTAB_REASON_LEN]; /* writer: the process moving it to FAILED, before
                                     * its CAS; read after seeing FAILED (acquire) */
};
_Static_assert(sizeof(struct jobtab_part) == 768, "jobtab_part ABI");
_Static_assert(offsetof(struct jobtab_part, reason) == 32, "jobtab_part ABI");

/* One job. Paths are filled by the supervisor at submit time (later issues). */
struct jobtab_job {
    _Atomic uint64_t word; /* QUEUED while running, DONE or FAILED (one CAS decides) */
    uint64_t id;           /* writer: supervisor; fixed while in use */
    uint32_t first_part;   /* partitions [first_part, first_part + n_parts) */
    uint32_t n_parts;
    uint64_t submit_ns; /* CLOCK_MONOTONIC */
    int32_t priority;
    uint32_t reserved0;
    char reason[JOBTAB_JOB_REASON_LEN]; /* writer: the process deciding FAILED */
    char zkey_path[JOBTAB_PATH_LEN];    /* writer: supervisor; as the client named them, */
    char out_dir[JOBTAB_PATH_LEN];      /* display only (pipeline.h "Inputs by descriptor") */
    int32_t zkey_fd;                    /* writer: supervisor: cuzkd's descriptors of the */
    int32_t out_fd;                     /* zkey's copy and of the out dir; <= 0: none */
    uint64_t out_dev, out_ino;          /* writer: supervisor: the out dir's identity, so a
                                         * later cuzkd removes a dead finalizer's temp files
                                         * only where out_dir still names that directory */
    uint32_t owner_uid;                 /* writer: supervisor: who submitted it, when */
    uint32_t owner_known;               /* owner_known (the finalizer's sticky check) */
    uint8_t reserved[24];
};
_Static_assert(sizeof(struct jobtab_job) == 704, "jobtab_job ABI");
_Static_assert(sizeof(struct jobtab_job) % BARRIER_CACHE_LINE == 0, "jobtab_job ABI");

/* Shared header; jobs then partitions follow at the given offsets. */
struct jobtab_hdr {
    /* writer: creator (jobtab_init); immutable */
    uint32_t magic;
    uint32_t max_jobs;
    uint32_t max_parts;
    uint32_t reserved0;
    uint64_t jobs_offset;  /* bytes from this header */
    uint64_t parts_offset; /* bytes from this header */
    /* writer: supervisor (job_add) */
    _Atomic uint64_t next_job_id;
    uint8_t reserved[24];
};
_Static_assert(sizeof(struct jobtab_hdr) == 64, "jobtab_hdr ABI");

/* Process-local view. */
struct jobtab {
    struct jobtab_hdr *hdr;
    struct jobtab_job *jobs;
    struct jobtab_part *parts;
};

size_t jobtab_size_bytes(uint32_t max_jobs, uint32_t max_parts);
/* Format in place (64-byte aligned memory of jobtab_size_bytes()). 0 or -EINVAL. */
int jobtab_init(struct jobtab_hdr *h, uint32_t max_jobs, uint32_t max_parts);
/* View of a table formatted elsewhere; size = bytes available. 0 or -EINVAL. */
int jobtab_view(struct jobtab *jt, struct jobtab_hdr *h, size_t size);

const char *jobtab_state_name(uint32_t state);

/* Current word of partition p (acquire: see the fields its last mover wrote). */
uint64_t jobtab_part_load(const struct jobtab *jt, uint32_t p);

/* Move partition p from (from_state, from_pid) to (to_state, to_pid) with one CAS.
 * 0; -EAGAIN if p is not in (from_state, from_pid) (unchanged; *seen, if not NULL,
 * gets the word found); -EINVAL bad index or state. Claims out of QUEUED or READY
 * count an attempt. */
int jobtab_part_move(struct jobtab *jt, uint32_t p, uint32_t from_state, uint32_t from_pid, uint32_t to_state,
                     uint32_t to_pid, uint64_t *seen);

/* Copy src into dst (len bytes, len > sizeof(JOBTAB_REASON_CUT)) whole if it fits; else
 * cut it at a UTF-8 character boundary, back to the last space if one is within 32
 * bytes, and end it with JOBTAB_REASON_CUT. Returns 1 if cut, else 0. */
int jobtab_reason_copy(char *dst, size_t len, const char *src);

/* Write reason (jobtab_reason_copy), then move p from (from_state, pid) to FAILED. As
 * jobtab_part_move. */
int jobtab_part_fail(struct jobtab *jt, uint32_t p, uint32_t from_state, uint32_t pid, const char *reason);

/* Supervisor only: allocate a job and n_parts contiguous partitions (all QUEUED).
 * zkey_path/out_dir may be NULL. 0 and *job; -ENOSPC when no room (nothing changed). */
int jobtab_job_add(struct jobtab *jt, uint32_t n_parts, const char *zkey_path, const char *out_dir,
                   uint64_t now_ns, uint32_t *job);

/* Count the job's partitions in DONE and in FAILED (a scan; always consistent with the
 * partition words, unlike counters a dying process could leave half-updated). */
int jobtab_job_counts(const struct jobtab *jt, uint32_t job, uint32_t *done, uint32_t *failed);

/* If every partition is DONE or FAILED, decide the job (DONE if none failed, else
 * FAILED) with one CAS from QUEUED. Returns 1 to the one caller that decided it, 0 if
 * not complete or already decided, -EINVAL bad index. Safe to call from anywhere,
 * any number of times (the supervisor calls it after reclaiming a dead finalizer). */
int jobtab_job_try_complete(struct jobtab *jt, uint32_t job);

/* Supervisor only: free a decided job's slot and partitions. 0, -EBUSY if not
 * decided, -EINVAL bad index. */
int jobtab_job_retire(struct jobtab *jt, uint32_t job);

/* Roll back every partition owned by dead process pid to its last intact state:
 *     SYNTH → QUEUED (a buffer it had handed to the partition is freed),
 *     PROVING → READY if its buffer is still held for it, else QUEUED,
 *     FINAL → PROVED.
 * pool (may be NULL: then a recorded buffer counts as held) decides "still held".
 * Writes up to max partition indices to out, for re-queueing (their new states say
 * onto which ring). Returns how many were rolled back; when that equals max, call
 * again: the rest are still owned by pid. -EINVAL for pid <= 0. */
int jobtab_reclaim_pid(struct jobtab *jt, struct pool *pool, pid_t pid, uint32_t *out, size_t max);

/* Indices of partitions now in `state` (up to max; returns how many). After a death
 * the supervisor re-pushes every READY (and PROVED) partition: a hint the dead process
 * had popped but not yet claimed is gone with it, and a duplicate hint is harmless
 * because only one claimant wins the CAS. */
int jobtab_parts_in_state(const struct jobtab *jt, uint32_t state, uint32_t *out, size_t max);

#endif /* CUZK_JOBTAB_H */
