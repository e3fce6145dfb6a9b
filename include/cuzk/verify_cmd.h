/* verify_cmd.h — `cuzk verify VKEY.json PUBLIC.json PROOF.json`: the drop-in for
 * `snarkjs groth16 verify` (same argument order). */
#ifndef CUZK_VERIFY_CMD_H
#define CUZK_VERIFY_CMD_H

/* Runs the subcommand with argv[0] = "verify". Returns the process exit code: 0 valid
 * ("OK" on stdout), 1 invalid ("invalid proof" on stdout, the reason on stderr),
 * 2 usage, 3 unreadable file, 4 malformed input, 6 unsupported protocol or curve,
 * 10 internal error. */
int verify_cmd_main(int argc, char **argv);

#endif
