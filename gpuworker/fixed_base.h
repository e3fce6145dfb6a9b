/* fixed_base.h — the CPU worker's fixed-base tables (zk/msm.h msm_table): for the
 * circuits it proves most, a table of each MSM's bases, so that each later proof's
 * MSMs run through it (0.82x the CPU of msm_run at 2^14; docs/performance.md,
 * "Fixed-base tables").
 *
 * A table costs about 33 MSMs of CPU to build (mulchain-14's five: 4.95 s, 102 MiB)
 * and saves about 0.18 of an MSM a proof, so it is repaid after about 170 proofs of
 * the same circuit. So a circuit's tables are built only once this process has
 * proved it FIXED_BASE_AFTER times, within a budget of bytes (--fixed-base-mb), on a
 * background thread at the lowest priority (nice 19): the prover never waits for a
 * build, and takes a table from the first proof after it is ready. Over the budget,
 * the least recently proved circuit's tables go first (as ntt.h's domain cache).
 *
 * Process-wide, like the domain cache: the worker sets the budget, the CPU backend
 * (backend_cpu.c) takes and gives back a circuit's tables around each proof; both
 * in-flight threads of cpu-inflight may hold them at once. */
#ifndef CUZK_FIXED_BASE_H
#define CUZK_FIXED_BASE_H

#include <stddef.h>
#include <stdint.h>

#include "gpuworker/backend.h"
#include "zk/groth16.h"
#include "zk/zkey.h"

/* Proofs of one circuit before its tables are built. The build is at worst ~33 MSMs
 * of CPU, which a circuit proved never again after K proofs would have spent for
 * nothing: at K = 64 that is at most about 40% of the CPU those 64 proofs took (five
 * MSMs and the NTTs each), and a circuit a daemon has proved 64 times it mostly
 * proves for hours more, where the tables repay themselves after ~170. Waiting for the
 * full repay point instead would leave the saving out for 170 proofs of every circuit.
 * Tests lower it with CUZK_FIXED_BASE_AFTER=N in the worker's environment (read here,
 * nowhere else). */
#define FIXED_BASE_AFTER 64

/* --fixed-base-mb's default, per worker: the five tables of a 2^14 circuit take
 * 102 MiB (W = 17 windows of the bases, c = 15 on BN254) and grow with the domain, so
 * 1024 MiB holds a 2^17 circuit's or several smaller ones'. 0: no tables. */
#define FIXED_BASE_MB_DEFAULT 1024

typedef struct fixed_base_stats {
    uint64_t built;     /* tables built (one a MSM) */
    uint64_t msms;      /* MSMs run through a table */
    uint64_t evictions; /* circuits whose tables were dropped for the budget */
    uint64_t bytes;     /* the tables' bytes now */
    uint64_t budget;
    uint64_t pending; /* circuits due or being built now (0: the builder is idle) */
} fixed_base_stats;

/* The budget in bytes (0 turns the tables off and drops every idle one). */
void fixed_base_set_budget(size_t bytes);

/* Before a proof of z (its file's identity key, z open until fixed_base_release): counts
 * the proof, queues the build once the circuit is due, and fills *out with the tables
 * it has (all NULL when none). Returns a handle for fixed_base_release (NULL: none to
 * give back). */
struct fixed_base_entry *fixed_base_acquire(const zkey *z, const struct backend_key *key,
                                            groth16_tables *out);

/* After the proof: msms of its MSMs ran through a table. */
void fixed_base_release(struct fixed_base_entry *e, unsigned msms);

void fixed_base_get_stats(fixed_base_stats *out);

/* The builder stops (a build in progress is left to the process's exit). */
void fixed_base_shutdown(void);

#endif
