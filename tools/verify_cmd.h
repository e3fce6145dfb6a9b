/* verify_cmd.h — `cuzk verify VKEY.json PUBLIC.json PROOF.json`: the drop-in for
 * `snarkjs groth16 verify` (same argument order). */
#ifndef CUZK_VERIFY_CMD_H
#define CUZK_VERIFY_CMD_H

/* Runs the subcommand with argv[0] = "verify". Returns the process exit code (error.h's
 * table): 0 valid ("OK" on stdout), CUZK_EXIT_FALSE (1) invalid ("invalid proof" on
 * stdout, the reason on stderr), otherwise why the proof could not be checked (3
 * unreadable, 4 malformed, 6 unsupported, 10 internal). */
int verify_cmd_main(int argc, char **argv);

#endif
