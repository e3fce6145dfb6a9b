/* groth16.h — the snarkjs-compatible Groth16 prover, split along the pipeline stages.
 *
 *   groth16_synth      a, b, c = A·w, B·w, a∘b on the domain (synth stage; spec §4.1)
 *   groth16_compute    odd-coset NTTs, h, the five MSMs (worker stage; §4.2-4.4)
 *   groth16_finalize   blinding with r, s and affine conversion (finalizer; §4.5-4.6)
 *   groth16_write_*    proof.json / public.json, published by temp + sync + rename (§6;
 *                      groth16_write_pair: the sync optional)
 *
 * groth16_prove runs all of them in one process (what `cuzk prove-local` does). */
#ifndef CUZK_GROTH16_H
#define CUZK_GROTH16_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "zk/curve.h"
#include "zk/msm.h"
#include "zk/wtns.h"
#include "zk/zkey.h"

/* Wall-clock seconds spent in each step (filled by groth16_prove; parts by the
 * individual steps). */
typedef struct groth16_timings {
    double matvec, ntt, msm_a, msm_b1, msm_b2, msm_c, msm_h, finalize;
    /* The same steps' process CPU seconds (all threads, user + sys; os_cpu_ns): the
     * figure that a loaded machine's waits for a core do not stretch. Filled by the
     * CPU prover (groth16_synth, groth16_compute, groth16_prove), not by a device. */
    struct groth16_cpu_times {
        double matvec, ntt, msm_a, msm_b1, msm_b2, msm_c, msm_h, finalize;
    } cpu;
} groth16_timings;

/* The five MSM results before blinding, jacobian Montgomery. */
typedef struct groth16_raw {
    uint64_t a[EC_MAX_JAC], b1[EC_MAX_JAC], b2[EC_MAX_JAC], c[EC_MAX_JAC], h[EC_MAX_JAC];
} groth16_raw;

/* A proof: affine Montgomery points; (0, 0) is infinity. */
typedef struct groth16_proof {
    uint64_t a[EC_MAX_AFF], b[EC_MAX_AFF], c[EC_MAX_AFF];
} groth16_proof;

/* Blinding factors r, s: canonical scalars < r (4 limbs). */
typedef struct groth16_blind {
    uint64_t r[4], s[4];
} groth16_blind;

/* Fresh r, s from getrandom (rejection sampling below the group order).
 * Returns 0 or -errno (state of *out undefined on failure). */
int groth16_blind_random(const zkey *z, groth16_blind *out);

/* Deterministic r, s from a seed. FOR TESTS ONLY: a proof whose r, s are known leaks
 * the witness; `cuzk prove-local --insecure-seed` documents this. */
void groth16_blind_from_seed(const zkey *z, uint64_t seed, groth16_blind *out);

/* Evaluations of A·w and B·w on the domain, and c = a∘b (all Montgomery, domain_size
 * elements of 4 limbs each, caller-allocated, 32-byte aligned). values: the witness
 * (canonical LE, nvars × n8r bytes, any alignment). Returns 0. */
int groth16_synth(const zkey *z, const uint8_t *values, uint64_t *a, uint64_t *b, uint64_t *c,
                  unsigned threads, groth16_timings *t);

/* NTTs to the odd coset, h = a·b − c, the five MSMs. a, b, c are consumed (overwritten).
 * Returns 0, -ENOMEM or -EINVAL. */
int groth16_compute(const zkey *z, const uint8_t *values, uint64_t *a, uint64_t *b, uint64_t *c,
                    groth16_raw *raw, unsigned threads, groth16_timings *t);

/* Fixed-base tables (msm.h msm_table) of a zkey's MSM bases, for a caller that keeps
 * them across proofs of one circuit (the worker's CPU backend, gpuworker/fixed_base.h):
 * t[k] for MSM k in the order A, B1, B2, C, H, each over that MSM's bases of this zkey
 * (A, B1, B2: nvars; C: nvars - npublic - 1; H: domain_size); NULL: msm_run's path. */
#define GROTH16_MSMS 5
typedef struct groth16_tables {
    const msm_table *t[GROTH16_MSMS];
} groth16_tables;

/* MSM k (0..4: A, B1, B2, C, H) of z: its group, its bases and how many. */
void groth16_msm_bases(const zkey *z, unsigned k, const curve_group **G, const uint8_t **bases,
                       size_t *count);

/* groth16_compute with the MSMs that have a table run through it (tabs NULL: none);
 * the same results. *table_runs (may be NULL) gets 1 added for each MSM that did. */
int groth16_compute_tables(const zkey *z, const uint8_t *values, uint64_t *a, uint64_t *b, uint64_t *c,
                           groth16_raw *raw, unsigned threads, groth16_timings *t, const groth16_tables *tabs,
                           unsigned *table_runs);

/* Blinding and affine conversion (§4.5, §4.6). */
void groth16_finalize(const zkey *z, const groth16_raw *raw, const groth16_blind *bl, groth16_proof *out);

/* All steps in this process. Returns 0 or a negative CUZK_E_* / errno code with a
 * sentence in err. */
int groth16_prove(const zkey *z, const wtns *w, const groth16_blind *bl, groth16_proof *out, unsigned threads,
                  groth16_timings *t, char *err, size_t errlen);

/* proof.json and public.json in snarkjs's format, each written to a temp file in the
 * target's directory, fsynced and renamed over the final name. Returns 0 or
 * -CUZK_E_OUTPUT with the reason in err; a failure leaves no file under the final name. */
int groth16_write_proof(const zkey *z, const groth16_proof *p, const char *path, char *err, size_t errlen);
int groth16_write_public(const zkey *z, const uint8_t *values, const char *path, char *err, size_t errlen);

/* The same, adding each step's CLOCK_MONOTONIC nanoseconds to *wt (the finalizer's
 * accounting): text, write(2) of the temp file, its fdatasync(+close), rename + the
 * directory's fsync. Times are added only on success. */
typedef struct groth16_write_times {
    uint64_t serialize_ns, write_ns, fsync_ns, rename_ns;
} groth16_write_times;
int groth16_write_proof_timed(const zkey *z, const groth16_proof *p, const char *path,
                              groth16_write_times *wt, char *err, size_t errlen);
int groth16_write_public_timed(const zkey *z, const uint8_t *values, const char *path,
                               groth16_write_times *wt, char *err, size_t errlen);
/* Both outputs of one proof: each written in full to a temp file (O_EXCL|O_NOFOLLOW,
 * relative to its directory's fd) and fdatasync'd, then proof renamed, then public; a
 * final name that is not a regular file is refused. On failure no temp is left and no
 * public.json is published without its proof.json. */
int groth16_write_pair_timed(const zkey *z, const groth16_proof *p, const uint8_t *values,
                             const char *proof_path, const char *public_path, groth16_write_times *wt,
                             char *err, size_t errlen);

/* Both outputs as groth16_write_pair_timed, durable or not. With sync: each temp
 * file's writeback started as it is written, both fdatasync'd, then renamed, then one
 * fsync of their directory (of each, when they differ): 3 syncs. Without (prove-local's
 * default, rapidsnark's behaviour): the same temp files and renames, so no reader ever
 * sees a half-written file under a final name, but no sync: a crash of the machine (not
 * of the process) soon after may lose them. Returns 0 or -CUZK_E_OUTPUT /
 * -CUZK_E_INTERNAL with err; a failure leaves no file under a final name. */
int groth16_write_pair(const zkey *z, const groth16_proof *p, const uint8_t *values, const char *proof_path,
                       const char *public_path, bool sync, char *err, size_t errlen);

/* groth16_write_pair_timed in two halves, for a caller that writes in another process
 * (the finalizer's out-dir writers, finalizer/out_writer.h): the two texts, malloc'd
 * (the caller frees both; 0 or -CUZK_E_INTERNAL with err), then their publishing as
 * above, the temp names carrying tag_pid (`NAME.tmp.TAG_PID.RANDOM`: the pid whose
 * temps cuzkd removes when that process dies). */
int groth16_pair_texts(const zkey *z, const groth16_proof *p, const uint8_t *values, char **proof_text,
                       char **public_text, groth16_write_times *wt, char *err, size_t errlen);
int groth16_publish_pair(const char *proof_path, const char *public_path, const char *proof_text,
                         const char *public_text, long tag_pid, groth16_write_times *wt, char *err,
                         size_t errlen);

/* The part of a temp name that groth16_publish_pair fixes for final name `final` and
 * tag_pid: "FINAL.tmp.TAG_PID." (a random part follows). cuzkd finds a dead writer's
 * temps by it. snprintf's result: >= len when it did not fit. */
int groth16_tmp_prefix(char *buf, size_t len, const char *final, long tag_pid);

/* "bn128" or "bls12381" — snarkjs's names. */
const char *groth16_curve_name(const zkey *z);

#endif
