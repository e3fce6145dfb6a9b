/* fleet_client.h — `cuzk prove|wait|status|fetch --queue URL`: the client commands that
 * talk to the fleet's PostgreSQL queue (fleet_pg.h) directly, with no local cuzkd. */
#ifndef CUZK_FLEET_CLIENT_H
#define CUZK_FLEET_CLIENT_H

/* argv[0] is the command; --queue URL somewhere in argv selects the fleet (removed
 * from argv). Returns -1 when there is no --queue (the daemon commands apply), else
 * the exit code (error.h's client rows: 20 the queue unreachable, 21 refused, 22 failed). */
int fleet_client_main(int argc, char **argv, int json);

#endif
