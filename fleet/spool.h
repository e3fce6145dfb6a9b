/* spool.h — the fleet thread's state and its spool dirs, private to
 * fleet/fleet.c (the thread: claim, run `cuzk prove --wait`, finish, publish)
 * and fleet/spool.c (where a partition's proof waits between the two: the
 * out dir's OUT/.cuzk-OWNER/, or with no out dir cuzkd's own RUN_DIR/fleet-INSTANCE.proofs/SLOT;
 * fleet_pg.h's "Publishing" and "Stored proofs"). */
#ifndef CUZK_FLEET_SPOOL_H
#define CUZK_FLEET_SPOOL_H

#include <pthread.h>
#include "base/barrier.h"
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "fleet/fleet.h"
#include "store/fleet_pg.h"
#include "shm/segment.h"

struct slot {
    pid_t pid;     /* the `cuzk prove --wait` running it; 0: free */
    int finishing; /* exited, its finish not yet recorded (database away) */
    int marking;   /* finished: 1 publishing, 2 its fleet_part_publish to retry */
    int rc;        /* its exit code */
    /* A circuit claim's failure (fleet_pg.h "Circuit jobs"): the reason its finish
     * records (cuzkd's, e.g. the unsatisfied assert), or with retry set, a refusal
     * that is not the partition's fault (back to the queue, up to 3 claims). */
    char why[512];
    int retry;
    struct fleet_claim c;
};

struct fleet_daemon {
    pthread_t th;
    atomic_int stop;
    struct fleet *f;
    char owner[256], cuzk[PROTO_PATH_MAX], instance[SEG_INSTANCE_MAX + 1];
    char run_dir[PROTO_PATH_MAX];
    int store;                 /* --store-proofs */
    char priv[PROTO_PATH_MAX]; /* its private spool dirs, one per slot: for jobs with
                                 * no out dir (fleet_pg.h "Stored proofs") */
    int lease_s;
    uint32_t n;
    struct slot *slots;
    int db_down; /* the last call failed: logged once, retried with backoff */
    /* fleet_health, read by the event loop and the metrics thread: figures for display,
     * each word read on its own, so relaxed (no other memory hangs on them); stop is
     * read by the fleet thread, which pthread_join then waits for. */
    atomic_int h_down;
    atomic_ullong h_errors, h_reconnects;
    int recovered;       /* the previous run's leases and spooled proofs are handled */
    uint64_t next_adopt; /* ms (os_now_ns) of the next fleet_adopt of stale daemons' proofs */
    /* Circuit jobs (--store-proofs only): this cuzkd's circuits, read from its own
     * control socket's `circuits` reply at most every few seconds (fleet_set_circuits). */
    char sock[PROTO_PATH_MAX + SEG_INSTANCE_MAX + 8];
    uint64_t next_circuits; /* ms of the next refresh */
    char *circuits_seen;    /* the set last logged ("name:fp,..."), malloc'd */
};

int spool_open(struct fleet_daemon *d, const struct slot *sl);
const char *spool_prepare(struct fleet_daemon *d, struct slot *sl, char *spool, size_t spoollen);
void spool_remove_files(struct fleet_daemon *d, struct slot *sl);
void spool_done(struct fleet_daemon *d, const struct slot *sl);
void spool_clean_dir(struct fleet_daemon *d, const char *out_dir);
int spool_make_priv(struct fleet_daemon *d, char *err, size_t errlen);
/* A circuit claim's input written into its slot's private dir as NAME.json or
 * NAME.wtns (fleet_input_read), its path in path; the reply file NAME.reply opened
 * there for the client's stdout (*reply_fd). 1 written, 0 the lease is gone, -1 with
 * the reason in sl->why (sl->retry set where it is not the partition's fault). */
int spool_input(struct fleet_daemon *d, struct slot *sl, char *path, size_t pathlen, int *reply_fd);
/* The slot's input and reply files removed. */
void spool_remove_input(struct fleet_daemon *d, struct slot *sl);
/* The reply the client printed (NAME.reply, JSON), or NULL. */
char *spool_reply(struct fleet_daemon *d, struct slot *sl);

#endif
