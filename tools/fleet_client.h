/* fleet_client.h — `cuzk prove|wait|status|fetch --queue URL`: the client commands that
 * talk to the fleet's PostgreSQL queue (fleet_pg.h) directly, with no local cuzkd. */
#ifndef CUZK_FLEET_CLIENT_H
#define CUZK_FLEET_CLIENT_H

#include <jansson.h>

/* The local cuzkd's `circuits` control reply (its reference the caller's), for
 * `prove --queue --circuit`'s fingerprint: client.c's, which knows the instance and
 * run dir and checks the socket as every daemon command does. NULL, said on stderr,
 * with *rc the exit code (20: no cuzkd answers). */
typedef json_t *(*fleet_local_circuits)(void *arg, int *rc);

/* argv[0] is the command; --queue URL somewhere in argv selects the fleet (removed
 * from argv). Returns -1 when there is no --queue (the daemon commands apply), else
 * the exit code (error.h's client rows: 20 the queue unreachable, 21 refused, 22 failed).
 * circuits(arg): asked only by `prove --circuit` without --fingerprint. */
int fleet_client_main(int argc, char **argv, int json, fleet_local_circuits circuits, void *arg);

#endif
