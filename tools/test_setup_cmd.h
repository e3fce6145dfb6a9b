/* test_setup_cmd.h — `cuzk test-setup`: an INSECURE Groth16 setup for tests and benchmarks.
 *
 * Writes a snarkjs-compatible .zkey (spec §3) for a circom .r1cs directly from random
 * toxic waste (tau, alpha, beta, gamma, delta) that the process draws, uses and erases.
 * No powers-of-tau ceremony: the prepared ptau files stop at 2^16, and snarkjs's
 * `powersoftau prepare phase2` takes hours at 2^18 on 2 cores.
 *
 * INSECURE: whoever runs it could have kept the waste and then forge proofs, and
 * nobody can check that it was erased. Keys made here are for tests only.
 *
 * What is written (snarkjs `groth16 setup` + one contribution, computed directly),
 * with L_j(tau) the Lagrange basis of the domain {w^j} (n = domainSize) at tau and
 * u_i, v_i, w_i the A, B, C columns of signal i (u_i including the nPublic+1 extra
 * input rows of spec §3.3):
 *   header  [alpha]1 [beta]1 [beta]2 [gamma]2 [delta]1 [delta]2
 *   3 IC    [(beta u_i + alpha v_i + w_i)/gamma]1, i <= nPublic
 *   4       coefficients of A and B, stored as coef * R^2 mod r (spec §3.3)
 *   5, 6, 7 [u_i]1, [v_i]1, [v_i]2
 *   8 C     [(beta u_i + alpha v_i + w_i)/delta]1, i > nPublic
 *   9 H     [L^(2n)_(2i+1)(tau)/delta]1: the Lagrange basis of the 2n domain at its odd
 *           points, as snarkjs copies them from the ptau (spec §3.4)
 *   10      a zero circuit hash and no contributions */
#ifndef CUZK_TEST_SETUP_CMD_H
#define CUZK_TEST_SETUP_CMD_H

#include <stddef.h>
#include <stdint.h>

typedef struct test_setup_cmd_stats {
    uint32_t nconstraints, npublic, nvars, domain_size, lg_domain;
    uint64_t ncoefs, zkey_bytes;
    double secs_read, secs_scalars, secs_points, secs_write, secs_total;
} test_setup_cmd_stats;

/* Reads the r1cs, draws the toxic waste from getrandom, writes the zkey to zkey_path
 * (temp file + fsync + rename: never half-written under its final name) and erases
 * the waste and everything derived from it in memory. threads: 0 = all online CPUs.
 * st (may be NULL) receives sizes and times. Returns 0, or with a message in err:
 * the r1cs_open codes (-CUZK_E_IO, -CUZK_E_TRUNCATED, -CUZK_E_FORMAT,
 * -CUZK_E_UNSUPPORTED), -CUZK_E_UNSUPPORTED for a circuit too big for the curve's
 * 2-adicity or with no constraints, -CUZK_E_OUTPUT when the output cannot be written
 * (nothing left behind), -CUZK_E_INTERNAL for out of memory or getrandom failure. */
int test_setup_cmd_write(const char *r1cs_path, const char *zkey_path, unsigned threads,
                         test_setup_cmd_stats *st, char *err, size_t errlen);

/* Runs the subcommand with argv[0] = "test-setup"; returns the process exit code. */
int test_setup_cmd_main(int argc, char **argv);

#endif
