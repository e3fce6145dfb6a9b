/* witness_cmd.h — `cuzk witness --witness-gen G.wgen INPUT.json OUT.wtns`: computes a
 * witness with a generator from `cuzk build-witness` and writes it as the .wtns that
 * `snarkjs wtns calculate` writes for the same input (byte for byte). */
#ifndef CUZK_WITNESS_CMD_H
#define CUZK_WITNESS_CMD_H

/* Runs the subcommand with argv[0] = "witness". Returns the exit code (0 or
 * cuzk_exit_code of the error of wgen.h's wgen_compute_file, error.h) after one line
 * on stderr on failure. */
int witness_cmd_main(int argc, char **argv);

#endif
