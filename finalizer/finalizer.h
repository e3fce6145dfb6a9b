/* finalizer.h — the finalizing stage (cuzk-finalizer): PROVED -> FINAL -> DONE.
 *
 * Pops PIPE_RING_FINAL; claims (CAS PROVED->FINAL); draws r, s (getrandom); blinds and
 * converts results[p].raw to an affine proof; reads the public values from the
 * witness; verifies the proof (pairing check, verify.h) against the zkey's key, so a
 * proof that fails is never published (the partition fails with the reason: a
 * witness that does not satisfy the circuit, or a faulty computation); writes
 * OUT/<name>.public.json then
 * OUT/<name>.proof.json (each temp + fsync + rename); CAS FINAL->DONE;
 * jobtab_job_try_complete. An output error fails the partition with the reason.
 * Heap trimming (malloc_trim(0), this process only) after every --trim-every
 * partitions and once after each second of idleness.
 *
 * Stats slot (role STATS_ROLE_FINALIZER):
 *   states   wait_input/idle: ring empty (idle when no job is running); busy: claim,
 *            hand-off, completion; zkey: zkey open on a cache miss; blind: r, s and
 *            the blinding/affine conversion; read_wtns: public values; verify: the
 *            pairing check; write: both files incl. fsync + rename; trim: malloc_trim.
 *   counters 0 parts_done, 1 parts_failed, 2 claims_lost, 3 jobs_done, 4 jobs_failed,
 *            5 trims, 6 verify_failed (proofs that failed the pairing check)
 *   hists    0 part (claim to DONE), 1 trim, 2 job (submit to the job's decision),
 *            3 write
 */
#ifndef CUZK_FINALIZER_H
#define CUZK_FINALIZER_H

#include <stddef.h>

#include "stage/stage.h"

/* Runs until *o->stop is set (then finishes the partition in hand and returns 0).
 * -errno / -CUZK_E_* with err when the stage cannot run (attach, slot). */
int finalizer_run(const struct stage_opts *o, char *err, size_t errlen);

#endif
