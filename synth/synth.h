/* synth.h — the synthesis stage (cuzk-synth): QUEUED -> SYNTH -> READY.
 *
 * For each partition: claim it (CAS QUEUED->SYNTH; a lost CAS is a duplicate hint),
 * check the partinfo seal (pipeline.h, "Stale hints"), open the job's zkey (cached),
 * the witness (and check it against the zkey, and every constraint when the job has
 * an r1cs), take a pool buffer, write a, b, c and the witness into it (pipeline.h,
 * buffer layout), hand the buffer to the partition, CAS SYNTH->READY and push the hint
 * to the worker whose ring holds the fewest. A bad input fails only its partition,
 * with a reason naming the witness file.
 *
 * Priority: the loop pops every hint available (up to 256) into a local heap ordered by
 * (job priority desc, job id asc, partition index asc) and synthesizes the best first;
 * it tops the heap up from the ring before each partition, so a higher-priority job
 * overtakes at the next partition boundary. Hints in the heap are not claimed: another
 * synth may take those partitions (its CAS wins; ours then fails harmlessly), and on a
 * clean stop the heap is pushed back. After a crash the supervisor re-pushes QUEUED
 * partitions (pipeline.h).
 *
 * Stats slot (role STATS_ROLE_SYNTH):
 *   states   wait_input/idle: ring empty (idle when no job is running); busy: claim,
 *            seal check, hand-off; zkey: zkey open on a cache miss; read_wtns: witness
 *            open + zkey check; r1cs: constraint check; matvec: A·w, B·w, a∘b and the
 *            witness copy; wait_buffer: no free pool buffer; wait_output: worker ring
 *            full.
 *   counters 0 parts_done, 1 parts_failed, 2 claims_lost (duplicate hints),
 *            3 stale_hints (seal mismatch), 4 requeued (stop while waiting for a buffer)
 *   hists    0 part (claim to READY push), 1 queued (submit to claim),
 *            2 buf_wait (time without a buffer)
 */
#ifndef CUZK_SYNTH_H
#define CUZK_SYNTH_H

#include <stddef.h>

#include "stage/stage.h"

/* Runs until *o->stop is set (then finishes the partition in hand and returns 0).
 * -errno / -CUZK_E_* with err when the stage cannot run (attach, slot). */
int synth_run(const struct stage_opts *o, char *err, size_t errlen);

#endif
