/* client.h — the `cuzk` client's daemon commands: prove, status, wait, cancel, restart,
 * drain, shutdown. Each sends one JSON request line to cuzkd's control socket
 * (RUN_DIR/INSTANCE.sock; control.h describes the protocol) and prints the reply. */
#ifndef CUZK_CLIENT_H
#define CUZK_CLIENT_H

#include <stdio.h>

/* Exit codes of the daemon commands (also in `cuzk --help`). */
#define CLIENT_EXIT_OK 0
#define CLIENT_EXIT_USAGE 2
#define CLIENT_EXIT_NO_DAEMON 20  /* no cuzkd answers on the socket */
#define CLIENT_EXIT_REFUSED 21    /* cuzkd replied with an error */
#define CLIENT_EXIT_JOB_FAILED 22 /* the job finished with failed partitions */
#define CLIENT_EXIT_TIMEOUT 23    /* wait --timeout passed before the job finished */
#define CLIENT_EXIT_QUOTA 24      /* refused: this uid is at a quota (--quota-*); retry later */

/* argv[0] is "cuzk"; global options (--instance, --run-dir, --json) come before the
 * command. Returns the process exit code. */
int client_main(int argc, char **argv);

/* The usage text of every command, prove-local included. */
void client_usage(FILE *f);

#endif
