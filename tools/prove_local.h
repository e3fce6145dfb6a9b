/* prove_local.h — `cuzk prove-local`: every stage in one process, no daemon; the
 * drop-in for rapidsnark's `prover ZKEY WTNS PROOF PUBLIC`. */
#ifndef CUZK_PROVE_LOCAL_H
#define CUZK_PROVE_LOCAL_H

/* Runs the subcommand with argv[0] = "prove-local". Returns the process exit code
 * (0, or cuzk_exit_code of the error, error.h) after printing one line on stderr. */
int prove_local_main(int argc, char **argv);

#endif
