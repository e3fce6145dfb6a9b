/* pipeline.h — the contract between cuzkd and its stages (cuzk-synth,
 * cuzk-gpuworker, cuzk-finalizer): what lives in the instance's shared segments and
 * how a partition moves through them. ../shared/DESIGN.md explains why.
 *
 * Segments (shm/shmlayout.h): `cuzk-<instance>.data` (0600) and `.stats`.
 * Rings of the data segment (partition indices; hints only — the job table is the truth):
 *     ring PIPE_RING_SYNTH            QUEUED partitions, popped by the synth process(es)
 *     ring PIPE_RING_WORKER(i)        READY partitions for worker i (synth pushes to the
 *                                     least-loaded worker near its NUMA node)
 *     ring PIPE_RING_FINAL(nworkers)  PROVED partitions, popped by the finalizer
 * Extra regions, next to the job table (offsets in the segment's region table):
 *     "partinfo"  struct pipe_partinfo[max_parts]  writer: supervisor at submit
 *     "results"   struct pipe_result[max_parts]    writer: the worker that owns the
 *                                                  partition in PROVING, before its
 *                                                  CAS to PROVED; read by the finalizer
 *                                                  after its CAS PROVED -> FINAL
 *     "config"    struct pipe_config               writer: supervisor at create
 *
 * Partition lifecycle (every move one CAS in jobtab.h):
 *   supervisor  submit: job + partitions QUEUED, partinfo filled, push to SYNTH ring.
 *   synth       CAS QUEUED->SYNTH(pid); open zkey (cached by dev/inode/size/mtime) and
 *               wtns; check the witness against the zkey (and every constraint when
 *               the job has an r1cs); pool_buf_alloc; write the buffer (layout below);
 *               transfer the buffer to POOL_OWNER_PART|p; set part.buf;
 *               CAS SYNTH->READY; push PIPE_RING_WORKER(i). A bad witness: FAILED with
 *               the reason (the job goes on; other jobs are untouched).
 *   worker i    pop its ring; CAS READY->PROVING(pid); NTTs + five MSMs reading the
 *               buffer in place (CPU backend); free the buffer as soon as it is no
 *               longer read; write results[p]; CAS PROVING->PROVED; push FINAL ring.
 *   finalizer   CAS PROVED->FINAL(pid); blind (getrandom), affine, (verify), write
 *               OUT/<name>.proof.json and OUT/<name>.public.json (temp, fsync,
 *               rename); CAS FINAL->DONE; jobtab_job_try_complete(job).
 *   supervisor  on a child's death: jobtab_reclaim_pid + pool_reclaim_pid, re-push the
 *               returned partitions and every READY/PROVED one to their rings, restart.
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

#include <stdint.h>

#include "cuzk/groth16.h"
#include "cuzk/shmlayout.h"

#define PIPE_MAX_WORKERS 8
#define PIPE_RING_SYNTH 0u
#define PIPE_RING_WORKER(i) (1u + (uint32_t)(i))
#define PIPE_RING_FINAL(nworkers) (1u + (uint32_t)(nworkers))
#define PIPE_NAME_LEN 128

/* Fixed facts of an instance, written once by the supervisor. */
struct pipe_config {
    uint32_t magic;
    uint32_t n_workers;
    uint32_t n_synth;
    uint32_t max_parts;
    uint64_t buf_size;
    uint8_t reserved[40];
};

/* Per partition; writer: supervisor at submit, immutable while the job lives. */
struct pipe_partinfo {
    char wtns_path[JOBTAB_PATH_LEN];
    char r1cs_path[JOBTAB_PATH_LEN]; /* "" when the job has none */
    char name[PIPE_NAME_LEN];        /* output basename: w1.wtns -> "w1" */
};

/* Per partition; writer: the PROVING owner (see above). */
struct pipe_result {
    groth16_raw raw;                 /* the five MSM results before blinding */
    uint32_t worker;                 /* which worker computed it (device-fault accounting) */
    uint32_t reserved;
    uint64_t prove_ns;
};

#endif
