/* store_priv.h — what the job store's files (store.c, store_results.c) share of one
 * open store: its SQLite handle, the batch in progress, the error mapping. Private to
 * store/. */
#ifndef CUZK_STORE_PRIV_H
#define CUZK_STORE_PRIV_H

#include <stddef.h>
#include <stdint.h>

#include <sqlite3.h>

#include "store/store.h"

struct store {
    sqlite3 *db;
    sqlite3_stmt *upd_part, *upd_job, *upd_attempts;
    int in_batch;
    int sync_full; /* PRAGMA synchronous now FULL (1) or NORMAL (0) */
    char path[1100];
};

/* -errno for an SQLite result code: SQLITE_FULL is a full disk, the rest I/O. */
int store_sq_errno(int rc);
/* The same, with "job store PATH: WHAT: SQLite's message" in err. */
int store_sq_fail(struct store *st, int rc, const char *what, char *err, size_t errlen);
int store_exec(struct store *st, const char *sql, const char *what, char *err, size_t errlen);
/* Open a batch (a no-op inside one); durable: its commit fsyncs. 0 or -errno. */
int store_batch_begin(struct store *st, int durable);

/* With the job (store_job_add's transaction): its idempotency key, when the request
 * has one ("idempotency_key", "body_sha256", "tenant"). An SQLite result code. */
int store_idem_record(struct store *st, uint64_t id, const char *request);

#endif
