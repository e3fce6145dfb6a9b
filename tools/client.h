/* client.h — the `cuzk` client's daemon commands: prove, status, wait, cancel, restart,
 * drain, shutdown. Each sends one JSON request line to cuzkd's control socket
 * (RUN_DIR/INSTANCE.sock; control.h describes the protocol) and prints the reply. */
#ifndef CUZK_CLIENT_H
#define CUZK_CLIENT_H

#include <stdio.h>

/* argv[0] is "cuzk"; global options (--instance, --run-dir, --json) come before the
 * command. Returns the process exit code: CUZK_EXIT_* (error.h, the CUZK_PROG_CLIENT
 * rows of its table). */
int client_main(int argc, char **argv);

/* The usage text of every command, prove-local included. */
void client_usage(FILE *f);

#endif
