/* stage.h — the stage runtime: what every stage process (cuzk-synth,
 * cuzk-gpuworker, cuzk-finalizer) stands on. The common options and main(), the stats
 * slot claim and the heartbeat thread, long-call deadlines, the zkey cache and the
 * circuits table (preload/evict), the orphan check, and the shared steps of a stage
 * loop: failing a partition, waiting for room on an output ring.
 *
 * One header, four files: stage_main.c (options and main()), stage.c (the stage
 * handle: slot, heartbeat, states, long calls), zkey_cache.c (zkeys and the circuits
 * table), loop_steps.c (orphan check, failing a partition, deciding a job, waiting
 * for room).
 *
 * The shared-memory contract itself (regions, rings, the partition lifecycle) is
 * pipeline.h (shm/); this layer adds what needs zk/ (zkeys, the MSM results), so the
 * shared-memory floor imports nothing above it (docs/hacking.md, "Layout"). */
#ifndef CUZK_STAGE_H
#define CUZK_STAGE_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

#include "zk/groth16.h"
#include "shm/pipeline.h"
#include "zk/zkey.h"

/* Per partition; writer: the PROVING owner (see above). */
struct pipe_result {
    groth16_raw raw; /* the five MSM results before blinding */
    uint32_t worker; /* which worker computed it (device-fault accounting) */
    uint32_t reserved;
    uint64_t prove_ns;
};
_Static_assert(sizeof(struct pipe_result) == PIPE_RESULT_SIZE, "pipe_result ABI (pipeline.h)");

/* Call before recording a partition's failure. When cuzkd is being killed, the kernel
 * closes its descriptors (exit_files) before it signals the children (PDEATHSIG, in
 * exit_notify): in that window every /proc/<cuzkd>/fd/N open fails with ENOENT, and a
 * stage that recorded those as failures turned a dying daemon's running job into a
 * failed one (faults/supervisor_death under load: no LOST line). So: if cuzkd is
 * exiting (PF_EXITING in /proc/PID/stat) or gone, wait to be killed and exit without
 * recording anything; returns at once while cuzkd lives. */
void stage_orphan_check(const struct pipeline *pl);

/* A partition's failure reason (len bytes, JOBTAB_REASON_LEN in the table): msg with
 * file's full path replaced by its basename, prefixed with the basename when msg does
 * not name it; cut with a marker only past len (jobtab_reason_copy). */
void stage_reason(char *dst, size_t len, const char *file, const char *msg);

/* ---- stage helper: what every stage loop shares ---------------------------------- */

/* Options every stage takes (cuzk-synth, cuzk-gpuworker, cuzk-finalizer). */
struct stage_opts {
    const char *instance;        /* --instance NAME */
    uint32_t index;              /* --index I */
    uint32_t generation;         /* --generation G (restart count; informative, see stage.c) */
    unsigned threads;            /* --threads N; 0: all online CPUs */
    const char *backend;         /* gpuworker --backend (default "cpu") */
    uint32_t trim_every;         /* finalizer --trim-every N (default 16 partitions) */
    uint32_t precompute_mb;      /* gpuworker --precompute-mb N: budget of per-circuit tables
                              * kept between partitions (NTT domains: ntt.h's cache) */
    uint32_t fixed_base_mb;      /* gpuworker --fixed-base-mb N: budget of the CPU backend's
                              * fixed-base MSM tables (gpuworker/fixed_base.h); 0: none */
    uint32_t test_trim_delay_ms; /* finalizer --test-trim-delay-ms N (tests only): trim
                              * after every partition, sleeping N ms in that step */
    const _Atomic int *stop;     /* set (e.g. by SIGTERM): finish the partition in hand, return */
    int verbose;                 /* log each partition to stderr */
    int doorbell_fd;             /* --doorbell-fd N: cuzkd's eventfd, rung when this stage
                                  * decides a job (stage_job_try_complete); 0 or less:
                                  * none (a zeroed opts has none; fd 0 is never it) */
    const char *self_exe;        /* this stage's own program ("/proc/self/exe", set by
                                  * stage_main), which the finalizer runs again for
                                  * its out-dir writers; NULL: the stage runs on a thread
                                  * of another program (a test), which forks them */
};

#define STAGE_PRECOMPUTE_MB_DEFAULT 512
/* --fixed-base-mb's default (gpuworker/fixed_base.h FIXED_BASE_MB_DEFAULT says why). */
#define STAGE_FIXED_BASE_MB_DEFAULT 1024

/* A zkey held open, keyed by the file's identity: a file replaced (new inode) or
 * rewritten in place (size or mtime) is a miss, so a changed key is never served. */
struct stage_zkey_entry {
    int used;
    dev_t dev;
    ino_t ino;
    off_t size;
    struct timespec mtim;
    uint64_t last_use;
    int pinned; /* preloaded: never taken as the least-recent victim */
    char path[JOBTAB_PATH_LEN];
    zkey z;
};

struct stage {
    struct pipeline pl;
    struct stats_slot *slot;
    enum stats_role role;
    uint32_t index;
    pid_t pid;
    const _Atomic int *stop;
    int doorbell_fd; /* 0 or less: none (a stage run by hand, or by a test) */
    /* Slot writes come from the loop thread and the heartbeat thread; this private
     * mutex serialises the two (the slot's seqlock has one writer). It is never
     * shared with another process. */
    pthread_mutex_t mu;
    pthread_t hb;
    int hb_started;
    _Atomic int hb_quit;
    _Atomic int in_long_call;    /* the loop is inside one long call: hb thread beats */
    _Atomic uint64_t long_since; /* when it began (stage_now), for long_call_s */
    int long_told;               /* hb thread: said once that it stopped beating */
    uint64_t zc_clock;
    struct stage_zkey_entry zc[PIPE_ZKEY_CACHE];
    uint64_t circ_seq; /* circuits table seq applied (stage_circuits) */
    uint32_t circ_failed;
    struct pipe_circuit_ack *circ_ack;
};

/* Attach the instance, claim the stats slot of (role, index), start the heartbeat
 * thread. 0 or -errno with err. */
int stage_open(struct stage *st, const struct stage_opts *o, enum stats_role role, char *err, size_t errlen);
/* A stage's own state, size bytes zeroed, with its struct stage at st_offset opened
 * by stage_open: what a stage's run function starts with. NULL with *rc (-ENOMEM, or
 * stage_open's) and err; stage_close and free end it. */
void *stage_new(size_t size, size_t st_offset, const struct stage_opts *o, enum stats_role role, int *rc,
                char *err, size_t errlen);
/* Stops the heartbeat thread, closes cached zkeys, detaches. Accepts a zeroed st. */
void stage_close(struct stage *st);

int stage_stopping(const struct stage *st);
uint64_t stage_now(void);
/* Slot writes (serialised with the heartbeat thread). enter_at: now_ns must be >= the
 * last change; used to account sub-steps measured inside one call, in order. */
void stage_enter(struct stage *st, uint32_t state);
void stage_enter_at(struct stage *st, uint32_t state, uint64_t now_ns);
void stage_heartbeat(struct stage *st);
void stage_count(struct stage *st, uint32_t counter, uint64_t delta);
void stage_gauges(struct stage *st, uint32_t first, const uint64_t *v, uint32_t n);
void stage_name_gauge(struct stage *st, uint32_t g, const char *name);
void stage_hist(struct stage *st, uint32_t hist, uint64_t ns);
/* Name states (from STATS_STAGE0), counters and histograms; NULL-terminated lists. */
void stage_names(struct stage *st, const char *const *states, const char *const *counters,
                 const char *const *hists);
/* Bracket one call that may run for seconds (an MSM, a matvec, a zkey open): the
 * heartbeat thread beats every 50 ms meanwhile, for at most the instance's
 * long_call_s (--long-call-timeout): a call stuck longer stops the beats, so cuzkd's
 * --stall-timeout kills the stage and the partition counts a try, instead of the
 * exemption hiding a hang forever. Outside it the loop beats itself. */
void stage_long_begin(struct stage *st);
void stage_long_end(struct stage *st);

/* The job's zkey from the cache, opening (and validating) it on a miss. The pointer
 * stays valid until the next call. 0 or a negative CUZK_E_* with err. */
int stage_zkey(struct stage *st, const char *path, const zkey **out, char *err, size_t errlen);

/* A partition's zkey as each stage takes it: stage_zkey of cuzkd's copy at
 * open_path inside a long call (a miss reads and validates the whole file), an error
 * naming the file as the client did (shown_path, pipe_err_rename). */
int stage_job_zkey(struct stage *st, const char *open_path, const char *shown_path, const zkey **out,
                   char *err, size_t errlen);

/* Apply the circuits table if it changed since the last call (one acquire load when
 * not): EVICT entries drop the cached zkey of their path (fn first, then unmap);
 * PRELOAD entries open it through stage_zkey, pin it, and call fn to bring in
 * what this stage reads (fn NULL: every page of the file). Then the ack. Call once
 * per loop iteration, between partitions. Returns how many entries it applied. */
typedef void (*stage_circuit_fn)(struct stage *st, uint32_t action, struct stage_zkey_entry *e, void *arg);
int stage_circuits(struct stage *st, stage_circuit_fn fn, void *arg);

/* Fault in the payload of the zkey's sections ids[0..n) (madvise WILLNEED, then one
 * read per page); n 0: the whole file. Not mlock: the memlock limit is for the pool's
 * pinned buffers, and the page cache under a mapping in use stays resident. */
void stage_zkey_touch(const zkey *z, const uint32_t *ids, unsigned n);

/* Fail partition p, which this stage holds in jobtab state `state` (JOBTAB_SYNTH,
 * _PROVING, _FINAL): the orphan check first (a dying cuzkd's closed copies fail
 * nothing), then the reason (stage_reason: file's path shortened, into reason), the
 * CAS to FAILED, and counter + 1 when it won. Returns 1 when this call failed it (the
 * caller then tries to complete the job), 0 when the partition had left our hands. */
int stage_fail_part(struct stage *st, uint32_t p, uint32_t state, uint32_t counter, const char *file,
                    const char *msg, char *reason, size_t len);

/* A partition into this stage's hands: its job-table state from -> to, with our pid
 * (the CAS by which every stage takes one). p's job, or NULL when p was not in from
 * (a peer or cuzkd's reclaim has it): the caller counts it lost. */
struct jobtab_job *stage_claim_part(struct stage *st, uint32_t p, uint32_t from, uint32_t to);

/* The whole of failing a partition as every stage does it: stage_fail_part,
 * then, when this call failed it, stage_job_try_complete of its job, and a line
 * "WHO: partition P failed: REASON" on stderr (who NULL: no line). Returns what
 * stage_job_try_complete returned (1: this call decided the job), 0 when the
 * partition had left our hands. */
int stage_fail(struct stage *st, uint32_t p, uint32_t state, uint32_t counter, const char *file,
               const char *msg, const char *who);

/* jobtab_job_try_complete, and when this call decided the job (returned 1), one
 * write to cuzkd's doorbell eventfd: cuzkd answers the job's waiters (`cuzk prove
 * --wait`, `cuzk wait`) at once instead of at its next 100 ms tick, which stays as
 * the fallback for a stage killed between its CAS and the write. Returns what
 * jobtab_job_try_complete returned. */
int stage_job_try_complete(struct stage *st, uint32_t job);

/* Waiting for room on a full output ring, one turn per failed push:
 *     struct stage_push_state w = { 0 };
 *     while (ring_push_timeout(r, p, w.waited ? TIMEOUT : 0) != 0)
 *         if (stage_push_wait(st, &w)) break;
 * The first turn enters STATS_WAIT_OUTPUT; each turn beats; once the stage is stopping
 * it gives up after a second (returns 1): cuzkd re-pushes the partitions of the
 * states it finds (READY, PROVED) when it restarts the stage. */
struct stage_push_state {
    int waited;
    uint64_t t_stop;
};
int stage_push_wait(struct stage *st, struct stage_push_state *w);

/* STATS_WAIT_INPUT when some job is still running (the stage is starved), else
 * STATS_IDLE (no work anywhere). Reads only the jobs' state words. */
uint32_t stage_wait_state(const struct stage *st);

/* The whole of a stage's main(): parse the common options, die with the parent
 * (PR_SET_PDEATHSIG), turn SIGTERM/SIGINT into the stop flag, call run, map its result
 * to the exit code (usage errors: 2). extra: STAGE_OPT_* the stage also accepts. */
typedef int (*stage_fn)(const struct stage_opts *o, char *err, size_t errlen);
#define STAGE_OPT_BACKEND 1u
#define STAGE_OPT_TRIM    2u
int stage_main(int argc, char **argv, const char *prog, const char *what, unsigned extra, stage_fn run);

#endif
