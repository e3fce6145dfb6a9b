/* fleet.h — cuzkd's side of the fleet queue (fleet_pg.h), `cuzkd --queue URL`.
 * One thread (the database calls are blocking libpq calls, kept off the event loop)
 * claims up to --queue-parallel partitions into leases of --queue-lease seconds,
 * renews them every lease/3, and runs each claimed partition as a local job of this
 * cuzkd by running `cuzk prove --wait` against its own control socket: the job then
 * goes through the same checks, store and limits as any local submit. The proof is
 * written into OUT_DIR/.cuzk-OWNER/ (the spool dir, same file system), and after
 * fleet_finish succeeds it is linked to OUT_DIR/NAME.proof.json and marked published
 * (fleet_part_publish, fleet_pg.h's order). Every 3 s the thread adopts the
 * unpublished proofs of daemons whose heartbeat is stale (fleet_adopt), and at its
 * start its own previous run's. With --store-proofs (fleet_pg.h "Stored proofs") it
 * also reads each spooled proof back and stores it by its finish, and claims jobs
 * with no out dir, proved into RUN_DIR/fleet-INSTANCE.proofs/SLOT/ (0700, emptied at
 * start): their finish is their publish. With --store-proofs it also claims circuit
 * jobs (fleet_pg.h "Circuit jobs": no shared file system) for the circuits its own
 * control socket's `circuits` reply lists with a fingerprint (read again every 3 s):
 * the input bytes are written into that private dir and proved by `cuzk prove --wait
 * --circuit NAME`; a failure that is the input's fails the partition with cuzkd's
 * reason, any other gives it back (at most 3 claims). */
#ifndef CUZK_FLEET_H
#define CUZK_FLEET_H

#include <stddef.h>
#include <stdint.h>

#include "proto/protocol.h"

struct fleet_daemon;

/* What the fleet agent needs of its daemon's options (cuzkd's --queue,
 * --queue-lease, --queue-parallel, --store-proofs, --instance, --run-dir). */
struct fleet_options {
    const char *queue;    /* the queue's connection string (postgresql://...) */
    const char *instance; /* this cuzkd's instance: the owner id, its socket */
    const char *run_dir;  /* its run dir (the control socket, the private proof slots) */
    uint32_t lease_s;     /* seconds a claim is held unrenewed */
    uint32_t parallel;    /* fleet partitions in this cuzkd at once (>= 1) */
    int store_proofs;     /* proofs also stored in the queue's table */
};

/* Connect, create the schema if absent, register this daemon, start the thread.
 * cuzk_bin: the client binary. -ECONNREFUSED (database unreachable) or another
 * -errno with a sentence in err. */
int fleet_daemon_start(struct fleet_daemon **fd, const struct fleet_options *c, const char *cuzk_bin,
                       char *err, size_t errlen);
/* The fleet thread's view of its database, for `cuzk status` and the metrics endpoint
 * (atomics: safe to read from any thread while the fleet thread runs).
 * db_reachable: the last database call succeeded; db_errors: calls that failed since
 * the start; reconnects: times the connection came back after being lost. */
struct fleet_health {
    int db_reachable;
    uint64_t db_errors, reconnects;
};
void fleet_daemon_health(const struct fleet_daemon *fd, struct fleet_health *h);

/* Stop the thread; partitions in flight are abandoned (their leases expire and
 * another daemon claims them). Accepts NULL. */
void fleet_daemon_stop(struct fleet_daemon *fd);

#endif
