/* fleet_priv.h — what the files of the fleet queue share (fleet_pg.c: the connection,
 * the schema, claims, leases and finishes; fleet_publish.c: publishing proofs into out
 * dirs and adopting a dead daemon's; fleet_circuit.c: circuit jobs, their inputs and
 * proofs in the table, the tenant's views): the connection, libpq's functions and the
 * statement helpers. Private to store/: the queue's face is fleet_pg.h. */
#ifndef CUZK_FLEET_PRIV_H
#define CUZK_FLEET_PRIV_H

#include <stddef.h>
#include <stdint.h>

#include "store/fleet_pg.h"
#include "store/pq_dl.h"

/* libpq's functions (pq_dl.h), set by the first fleet_open: every other function
 * runs on a struct fleet that fleet_open returned, so after it. */
extern const struct pq_api *fleet_pq;

struct fleet {
    PGconn *conn;
    int stores;                    /* fleet_set_stores */
    char *circuits, *fingerprints; /* fleet_set_circuits: text[] literals, "{}" none */
};

/* A partition's key as the text parameters of a statement. */
struct fleet_part_key {
    char job[24], idx[16], gen[24];
};

/* The statement helpers (fleet_pg.c). fleet_sql_fail: -errno for the connection's
 * state (a lost or refused connection is ECONNREFUSED, the caller retries with
 * backoff; anything else EIO), the sentence in err, r cleared. fleet_sql_rollback:
 * ROLLBACK after a transaction's error rc, returns rc; fleet_sql_tx_fail: both.
 * fleet_sql_done: a statement that returns no rows, 0 or the error; fleet_sql_changed:
 * how many rows it changed, or the error; fleet_sql_run: a statement without
 * parameters; fleet_sql_part_update: one partition's row ($1 job, $2 idx, $3
 * lease_gen, $4 who); fleet_sql_commit_part: COMMIT of a partition's change, the job's
 * end decided first when end. */
void fleet_part_key(struct fleet_part_key *k, uint64_t job, uint32_t idx, uint64_t gen);
int fleet_sql_changed(struct fleet *f, PGresult *r, const char *what, char *err, size_t errlen);
int fleet_sql_commit_part(struct fleet *f, const char *jb, int end, int n, const char *what, char *err,
                          size_t errlen);
int fleet_sql_done(struct fleet *f, PGresult *r, const char *what, char *err, size_t errlen);
PGresult *fleet_sql_exec(struct fleet *f, const char *sql, int n, const char *const *p);
int fleet_sql_fail(struct fleet *f, PGresult *r, const char *what, char *err, size_t errlen);
int fleet_sql_ok(PGresult *r);
int fleet_sql_part_update(struct fleet *f, const char *sql, uint64_t job, uint32_t idx, uint64_t gen,
                          const char *who, const char *what, char *err, size_t errlen);
int fleet_sql_rollback(struct fleet *f, int rc);
int fleet_sql_run(struct fleet *f, const char *sql, const char *what, char *err, size_t errlen);
int fleet_sql_tx_fail(struct fleet *f, PGresult *r, const char *what, char *err, size_t errlen);

#endif
