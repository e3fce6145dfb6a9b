/* pipeline.h — the contract between cuzkd and its stages (cuzk-synth,
 * cuzk-gpuworker, cuzk-finalizer): what lives in the instance's shared segments and
 * how a partition moves through them. docs/design.md explains why.
 *
 * Segments (shm/shmlayout.h): `cuzk-<instance>.data` (0600) and `.stats`.
 * Rings of the data segment (partition indices; hints only — the job table is the truth):
 *     ring PIPE_RING_SYNTH            QUEUED partitions, popped by the synth process(es)
 *     ring PIPE_RING_WORKER(i)        READY partitions for worker i (synth pushes to the
 *                                     least-loaded worker on its NUMA node: route.h)
 *     ring PIPE_RING_FINAL(nworkers)  PROVED partitions, popped by the finalizer
 * Extra regions, next to the job table (offsets in the segment's region table):
 *     "partinfo"  struct pipe_partinfo[max_parts]  writer: supervisor at submit
 *     "results"   struct pipe_result[max_parts]    writer: the worker that owns the
 *                                                  partition in PROVING, before its
 *                                                  CAS to PROVED; read by the finalizer
 *                                                  after its CAS PROVED -> FINAL
 *     "publics"   struct pipe_publics[max_parts]   writer: the synth that owns an
 *                                                  input.json partition in SYNTH, before
 *                                                  its CAS to READY; read by the
 *                                                  finalizer after PROVED -> FINAL (the
 *                                                  CAS chain orders them); the witness
 *                                                  itself is in no file to read again
 *     "config"    struct pipe_config               writer: supervisor at create
 *     "circuits"  struct pipe_circuits + one       table: supervisor (preload/evict
 *                 struct pipe_circuit_ack per      requests, seqlock); ack[slot]: the
 *                 stats slot                       stage in that stats slot
 *
 * Circuits (preload / evict). The table is the *wanted state* ("hold these zkeys"),
 * not a log: PRELOAD entries stay until evicted, so a restarted stage loads them
 * again on its first loop. An EVICT entry is a tombstone ("drop this path"), reused
 * only once every running stage has acknowledged it. Each stage compares the table's
 * seq (acquire) with the last one it applied once per loop iteration (idle: every
 * 100 ms), applies what changed (stage_circuits), and stores its ack seq last
 * (release). cuzkd answers a request at once with its seq; `status` shows, per entry,
 * how many running stages have applied it; `cuzk preload|evict` waits for all.
 *
 * Partition lifecycle (every move one CAS in jobtab.h):
 *   supervisor  submit: job + partitions QUEUED, partinfo filled, push to SYNTH ring.
 *   synth       CAS QUEUED->SYNTH(pid); open zkey (cached by dev/inode/size/mtime) and
 *               wtns; check the witness against the zkey (and every constraint when
 *               the job has an r1cs); pool_buf_alloc; write the buffer (layout below);
 *               (an input.json job: load the job's generator once per process, check
 *               it against the zkey, pool_buf_alloc, compute the witness straight
 *               into the buffer's witness area, then the constraint check and a, b, c);
 *               transfer the buffer to POOL_OWNER_PART|p; set part.buf;
 *               CAS SYNTH->READY; push PIPE_RING_WORKER(i). A bad witness: FAILED with
 *               the reason (the job goes on; other jobs are untouched).
 *   worker i    pop its ring; CAS READY->PROVING(pid); take the buffer (PART|p ->
 *               pid: a, b, c are consumed in place, so a worker that dies mid-prove
 *               sends p back to QUEUED, never READY with a changed buffer); NTTs +
 *               five MSMs reading the buffer in place (CPU backend); free the buffer
 *               as soon as it is no longer read; write results[p]; CAS
 *               PROVING->PROVED; push FINAL ring.
 *   finalizer   CAS PROVED->FINAL(pid); blind (getrandom), affine, (verify), write
 *               OUT/<name>.proof.json and OUT/<name>.public.json (temp, fsync,
 *               rename); CAS FINAL->DONE; jobtab_job_try_complete(job).
 *   supervisor  on a child's death: jobtab_reclaim_pid + pool_reclaim_pid, re-push the
 *               returned partitions and every READY/PROVED one to their rings, restart.
 *               A finalizer's temp files (OUT/<name>.*.json.tmp.<pid>) of the
 *               partitions it held are removed. A death by a crash (not SIGKILL or
 *               SIGTERM from outside) or a stall (--stall-timeout: heartbeat older
 *               than that, SIGKILLed) counts against each partition it held; at
 *               --max-attempts the partition is FAILED with the reason.
 *               After a synth's death also re-push every QUEUED partition: a synth
 *               holds popped hints in a small local priority heap before it claims
 *               them (see synth.h), and those die with it.
 *
 * Stale hints. A hint can outlive its partition (a duplicate re-pushed after a death,
 * then the job retired and its partition slots given to a new job). So a partinfo
 * entry is sealed: the supervisor writes the paths, then stores job_id (release) last;
 * a synth that won QUEUED->SYNTH reads job_id (acquire) and, if it is not the id of
 * jobs[part.job], puts the partition back (SYNTH->QUEUED) and drops the hint: the
 * submit that is filling it in pushes its own hints afterwards.
 *
 * Stats slots (pipeline_stats_slot_index): 0 supervisor, then n_synth synth slots,
 * n_workers worker slots, n_final finalizer slots, then n_clients client slots. A
 * restarted stage takes the same slot, and stats_slot_start bumps its generation.
 *
 * Buffer layout for partition p (domain n, nvars signals, 32-byte Fr elements):
 *     [0, n)          a  (Montgomery; the worker overwrites it with h, canonical)
 *     [n, 2n)         b
 *     [2n, 3n)        c
 *     [3n, 3n+nvars)  the witness values, canonical, as in the .wtns (MSM scalars)
 *   so a buffer must hold (3n + nvars) * 32 bytes; the supervisor refuses a submit whose
 *   circuit does not fit the configured --buffer-mb, with that sentence.
 */
#ifndef CUZK_PIPELINE_H
#define CUZK_PIPELINE_H

#include <stddef.h>
#include <stdint.h>
#include <pthread.h>
#include <sys/types.h>
#include <time.h>

#include "shm/shmlayout.h"

#define PIPE_MAX_WORKERS          8
#define PIPE_RING_SYNTH           0u
#define PIPE_RING_WORKER(i)       (1u + (uint32_t)(i))
#define PIPE_RING_FINAL(nworkers) (1u + (uint32_t)(nworkers))
#define PIPE_NAME_LEN             128
#define PIPE_CONFIG_MAGIC         0x45504950u /* "PIPE" */
#define PIPE_NODE_NONE            0xffu       /* pipe_config worker_node/synth_node: not known */

/* Fixed facts of an instance, written once by the supervisor (pipeline_create, before
 * the segment is published); immutable afterwards. */
struct pipe_config {
    uint32_t magic;     /* PIPE_CONFIG_MAGIC */
    uint32_t n_workers; /* 1 .. PIPE_MAX_WORKERS */
    uint32_t n_synth;
    uint32_t max_parts;
    uint64_t buf_size; /* bytes per pool buffer (page multiple) */
    uint32_t max_jobs;
    uint32_t n_final; /* finalizer processes (1) */
    uint32_t buf_count;
    uint32_t n_clients; /* stats slots for clients/tools after the stages */
    uint32_t n_slots;   /* stats slots in all */
    /* The plan's NUMA node (OS number) of worker i and of synth k; PIPE_NODE_NONE:
     * unknown (a topology without NUMA nodes). Routing (route.h) reads them. */
    uint8_t worker_node[PIPE_MAX_WORKERS];
    uint8_t synth_node[PIPE_MAX_WORKERS];
    uint32_t supervisor_pid;  /* cuzkd: stages open its copies as /proc/PID/fd/N (below) */
    uint32_t long_call_s;     /* --long-call-timeout: stage_long_begin; 0 no limit */
    uint32_t write_timeout_s; /* --write-timeout: one write of a partition's outputs
                               * (finalizer/out_writer.h); 0 no limit */
    uint32_t max_attempts;    /* --max-attempts: what the finalizer allows such writes */
    uint8_t reserved[52];
};
_Static_assert(sizeof(struct pipe_config) == 128, "pipe_config ABI");

/* Per partition timeline, for `cuzk trace` (CLOCK_MONOTONIC ns, 0: not yet). Entry k
 * (PIPE_T_*) has one writer at a time: the process owning the partition in stage k.
 * pipe_part_begin right after its claiming CAS, pipe_part_end just before the CAS that
 * hands the partition on, so whoever takes it next sees them (that CAS's release).
 * cuzkd's `status {job}` reads them at any time: relaxed atomics, never torn, at worst
 * one stage behind. A stage run again (retry after a death) overwrites its entry. The
 * supervisor zeroes all at submit, before the seal. Not for accounting: the stats page
 * is the truth for time spent; these only place each partition on a timeline. */
enum { PIPE_T_SYNTH = 0, PIPE_T_PROVE, PIPE_T_FINAL, PIPE_T_STAGES };
struct pipe_part_times {
    _Atomic uint64_t begin_ns[PIPE_T_STAGES];
    _Atomic uint64_t end_ns[PIPE_T_STAGES];
    _Atomic uint32_t who[PIPE_T_STAGES]; /* the stage's index (synth i, worker i, ...) */
    /* NUMA node of the pool share the synth's buffer came from, plus one (0: none yet);
     * writer: the synth, with its begin/end entries (routing, shown by `status JOB`) */
    _Atomic uint32_t buf_node;
};
_Static_assert(sizeof(struct pipe_part_times) == 64, "pipe_part_times ABI");

/* Inputs by descriptor (issue 16: the daemon never resolves a path a client names).
 * A client passes open descriptors with its submit; cuzkd copies each input into a
 * sealed memfd of its own (supervisor/copies.h says why a copy) and keeps the out
 * directory's descriptor for the job's life. The table then holds, per file, the
 * number N of that descriptor in cuzkd (jobtab_job.zkey_fd, .out_fd; partinfo
 * .wtns_fd, .r1cs_fd, .wgen_fd; pipe_circuit.fd) and the path *as the client named it*, for
 * messages and `status` only. A stage opens /proc/<supervisor_pid>/fd/N
 * (pipe_input_path): that is the copy's inode whatever happens to the client's path.
 * A number <= 0 means "no descriptor": the stage opens the path itself (test_pipeline
 * drives the stages without a cuzkd; cuzkd keeps fds 0-2 open, so a copy is never 0). */

/* Per partition; writer: supervisor at submit, immutable while the job lives (times:
 * see struct pipe_part_times). */
struct pipe_partinfo {
    _Atomic uint64_t job_id;         /* seal: stored last (release), see "Stale hints" */
    char wtns_path[JOBTAB_PATH_LEN]; /* as the client named it (display; see above) */
    char r1cs_path[JOBTAB_PATH_LEN]; /* "" when the job has none */
    char name[PIPE_NAME_LEN];        /* output basename: w1.wtns -> "w1" */
    struct pipe_part_times times;
    /* "": wtns_path is a .wtns; else the job's witness generator (cuzk build-witness)
     * and wtns_path is an input.json the synth computes the witness from */
    char wgen_path[JOBTAB_PATH_LEN];
    int32_t wtns_fd; /* cuzkd's descriptor of the copy, <= 0: none */
    int32_t r1cs_fd;
    int32_t wgen_fd; /* the generator's copy (shared by identity) */
    uint32_t reserved;
};
_Static_assert(sizeof(struct pipe_partinfo) == 8 + 3 * JOBTAB_PATH_LEN + PIPE_NAME_LEN + 64 + 16,
               "pipe_partinfo ABI");

/* Per input.json partition: signals 0..nPublic of its witness (the finalizer's
 * verification and public.json), canonical, 32 bytes each. An input.json job's circuit
 * may have at most PIPE_PUBLIC_MAX - 1 public signals (checked at submit). */
#define PIPE_PUBLIC_MAX 64
struct pipe_publics {
    uint32_t n; /* values stored: nPublic + 1 */
    uint32_t reserved[15];
    uint8_t values[PIPE_PUBLIC_MAX * 32];
};
_Static_assert(sizeof(struct pipe_publics) == 64 + PIPE_PUBLIC_MAX * 32, "pipe_publics ABI");

/* Per partition; writer: the PROVING owner (see above). The entry's contents (the
 * MSM results, curve points of zk/) are the stages' business: struct pipe_result is
 * in stage.h, and this layer knows only its size, so that shm/ imports nothing of zk/
 * (stage.h asserts the two agree). */
#define PIPE_RESULT_SIZE 1456u
struct pipe_result;

/* ---- circuits region (see "Circuits" above) ---- */
#define PIPE_CIRCUITS   8 /* table entries */
#define PIPE_ZKEY_CACHE 4 /* zkeys a stage holds open (stage.h's cache) */
#define PIPE_PRELOAD_MAX \
    3 /* PRELOAD entries at once: PIPE_ZKEY_CACHE - 1, so a job
                               * with another circuit always finds an unpinned cache entry */
enum { PIPE_CIRCUIT_FREE = 0, PIPE_CIRCUIT_PRELOAD = 1, PIPE_CIRCUIT_EVICT = 2 };

struct pipe_circuit {
    uint64_t seq;               /* table seq of the request that wrote it */
    uint32_t action;            /* PIPE_CIRCUIT_* */
    int32_t fd;                 /* cuzkd's descriptor of its copy (<= 0: open path) */
    char path[JOBTAB_PATH_LEN]; /* as the client named it (display) */
};

/* Per stats slot; writer: the stage process in that slot. pid is stored at start
 * (after seq = 0), so an ack left by an earlier process of the slot never counts. */
struct pipe_circuit_ack {
    _Atomic uint32_t pid;
    _Atomic uint32_t failed;   /* bit i: entry i could not be loaded (last apply) */
    _Atomic uint64_t seq;      /* table seq applied; stored last (release) */
    _Atomic uint64_t preloads; /* zkeys loaded and faulted in for a PRELOAD entry */
    _Atomic uint64_t evicts;   /* cached zkeys dropped for an EVICT entry */
};

struct pipe_circuits {
    _Atomic uint64_t seq; /* seqlock: odd while the supervisor writes; even:
                                      * the table's version (0: never written) */
    uint64_t reserved[7];
    struct pipe_circuit c[PIPE_CIRCUITS];
    struct pipe_circuit_ack ack[]; /* config->n_slots entries */
};

/* Process-local handle on an instance's two segments (typed views; no shared state). */
struct pipeline {
    struct shmlayout_data data;
    struct shmlayout_stats stats;
    struct pipe_config *config;
    struct pipe_partinfo *partinfo; /* max_parts entries */
    struct pipe_result *results;    /* max_parts entries */
    struct pipe_publics *publics;   /* max_parts entries */
    struct pipe_circuits *circuits;
    char instance[SEG_INSTANCE_MAX + 1];
};

/* What the supervisor decides at start. Zero fields get the defaults noted. */
struct pipe_params {
    uint32_t n_workers; /* 1 .. PIPE_MAX_WORKERS */
    uint32_t n_synth;   /* >= 1 */
    uint32_t max_jobs;
    uint32_t max_parts;
    uint32_t buf_count;
    uint64_t buf_size;        /* rounded up to a page */
    uint32_t ring_capacity;   /* 0: the power of two >= 2 * max_parts (room for duplicates) */
    uint32_t n_clients;       /* 0: 4 */
    uint32_t long_call_s;     /* pipe_config.long_call_s */
    uint32_t write_timeout_s; /* pipe_config.write_timeout_s */
    uint32_t max_attempts;    /* pipe_config.max_attempts (0: 1) */
    uint32_t n_nodes;         /* pool shares, as shmlayout_config */
    int numa_node[POOL_MAX_NODES];
    uint32_t node_buf_count[POOL_MAX_NODES]; /* buffers of each share; all 0: even split */
    int worker_node[PIPE_MAX_WORKERS];       /* the plan's node of each worker, -1 unknown */
    int synth_node[PIPE_MAX_WORKERS];        /* and of each synth (n_synth <= PIPE_MAX_WORKERS) */
};

/* Buffer geometry of a circuit: (3n + nvars) * 32 bytes (layout above). */
static inline uint64_t pipeline_buf_bytes(uint32_t domain_size, uint32_t nvars, uint32_t n8r)
{
    return (3ull * domain_size + nvars) * n8r;
}

/* Supervisor: create both segments (flags: SEGMENT_REPLACE), the data segment with the
 * "partinfo", "results" and "config" regions. 0, or -errno with err saying why;
 * nothing is left behind on failure. pool_slab_setup is left to the caller. */
int pipeline_create(struct pipeline *pl, const char *instance, const struct pipe_params *p, unsigned flags,
                    char *err, size_t errlen);

/* Stages and tools: attach both segments read-write and check the regions. 0 or
 * -errno (as shmlayout_*_attach; -EBADMSG for a missing or bad pipeline region). */
int pipeline_attach(struct pipeline *pl, const char *instance, char *err, size_t errlen);

/* Unmap (accepts a zeroed or detached handle). The segments stay. */
void pipeline_detach(struct pipeline *pl);

/* Remove both segments' names. 0 or the first -errno. */
int pipeline_destroy(const char *instance);

/* Accessors; NULL for an index out of range. */
struct ring *pipeline_ring(const struct pipeline *pl, uint32_t ring);
struct pipe_partinfo *pipeline_partinfo(const struct pipeline *pl, uint32_t part);
struct pipe_result *pipeline_result(const struct pipeline *pl, uint32_t part);
struct pipe_publics *pipeline_publics(const struct pipeline *pl, uint32_t part);
const struct pipe_config *pipeline_config(const struct pipeline *pl);

/* Stamp the partition's timeline (struct pipe_part_times): stage k began (who: the
 * stage's index; clears its end) or ended, at t_ns (stage_now()). No-op for a
 * bad index. */
void pipe_part_begin(struct pipeline *pl, uint32_t part, unsigned k, uint32_t who, uint64_t t_ns);
void pipe_part_end(struct pipeline *pl, uint32_t part, unsigned k, uint64_t t_ns);

/* The output-name rule, in one place: a witness path's default output name is its
 * basename less a ".wtns" or ".json" ending ("dir/w1.wtns" -> "w1"; ".wtns" alone is
 * kept). Sets *stem to the name's first byte inside path; returns its length. */
size_t pipeline_wtns_stem(const char *path, const char **stem);

/* Stats slot number of (role, index) (map above), or -EINVAL. */
int pipeline_stats_slot_index(const struct pipe_config *c, enum stats_role role, uint32_t index);
struct stats_slot *pipeline_stats_slot(const struct pipeline *pl, enum stats_role role, uint32_t index);

/* One partition of a submit. name NULL or "": the witness file's basename without a
 * trailing ".wtns". r1cs_path NULL or "": no constraint check. wgen_path NULL or "":
 * wtns_path is a .wtns; else wtns_path is an input.json for this generator. */
struct pipe_submit_part {
    const char *wtns_path;
    const char *r1cs_path;
    const char *name;
    const char *wgen_path;
    int wtns_fd, r1cs_fd; /* cuzkd's descriptors of the copies; <= 0: none (above) */
    int wgen_fd;
};

/* Supervisor: add a job (jobtab_job_add), set its priority, fill and seal each
 * partinfo, push the hints onto PIPE_RING_SYNTH. Validates nothing beyond lengths:
 * the stages check the files. Returns 0 and *job; -ENAMETOOLONG (a path or name too
 * long, named in err), -EINVAL, -ENOSPC (no room in the table): nothing changed.
 * -ENOBUFS: the job exists (*job set) but some hints did not fit the ring; re-push
 * the job's QUEUED partitions later (jobtab_parts_in_state). */
int pipeline_submit_job(struct pipeline *pl, const char *zkey_path, const char *out_dir, int32_t priority,
                        uint32_t n_parts, const struct pipe_submit_part *parts, uint64_t now_ns,
                        uint32_t *job, char *err, size_t errlen);
/* The same, with the descriptors of the zkey's copy and of the out directory (<= 0:
 * none) and the submitter's uid (owner, < 0: unknown), stored in the job before its
 * partitions are sealed. */
int pipeline_submit_job_fds(struct pipeline *pl, const char *zkey_path, int zkey_fd, const char *out_dir,
                            int out_fd, int64_t owner, int32_t priority, uint32_t n_parts,
                            const struct pipe_submit_part *parts, uint64_t now_ns, uint32_t *job, char *err,
                            size_t errlen);

/* The path a stage opens for input (fd, display): /proc/<cuzkd>/fd/<fd> into buf when
 * fd > 0, else display itself (see "Inputs by descriptor"). */
const char *pipe_input_path(const struct pipeline *pl, int32_t fd, const char *display, char *buf,
                            size_t len);
/* Replace each occurrence of from in msg (len bytes) by to, but not one followed by
 * a digit (fd 7 is not fd 71): a message about the /proc path a stage opened names
 * the file as the client knows it. */
void pipe_err_rename(char *msg, size_t len, const char *from, const char *to);

/* Supervisor (the table's only writer): record a PRELOAD or EVICT of path (absolute,
 * already checked). min_ack: the lowest ack seq of the running stages (an EVICT
 * tombstone at or below it may be reused). 0 and *seq; -ENOSPC (PIPE_PRELOAD_MAX
 * circuits preloaded), -EBUSY (no entry free: stages still applying), -ENAMETOOLONG,
 * -EINVAL, with err. Preloading a preloaded path again re-applies it (a rewritten
 * file is loaded anew); evicting turns its entry into a tombstone. */
int pipeline_circuit_request(struct pipeline *pl, uint32_t action, const char *path, uint64_t min_ack,
                             uint64_t *seq, char *err, size_t errlen);
/* The same, with cuzkd's descriptor of its copy of the zkey (PRELOAD; <= 0: none). */
int pipeline_circuit_request_fd(struct pipeline *pl, uint32_t action, const char *path, int fd,
                                uint64_t min_ack, uint64_t *seq, char *err, size_t errlen);

#endif
