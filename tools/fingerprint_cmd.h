/* fingerprint_cmd.h — `cuzk fingerprint [--time] FILE...`: the circuit fingerprint
 * (fingerprint.h) of zkeys, r1cs files and witness generators, one line each. */
#ifndef CUZK_FINGERPRINT_CMD_H
#define CUZK_FINGERPRINT_CMD_H

/* Runs the subcommand with argv[0] = "fingerprint"; returns the exit code (0, or
 * the first failure's, cuzk_exit_code of its error, after a line on stderr). */
int fingerprint_cmd_main(int argc, char **argv);

#endif
