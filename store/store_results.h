/* store_results.h — the job store's part for clients that keep no files (the HTTP
 * API process): the proofs of "results":"store" jobs, their idempotency keys, and a
 * decided job read back after a restart (store.h has the schema, version 2). Same
 * errors and durability as store.h: a result is written in the tick's batch
 * (store_commit), with the partition's done state. */
#ifndef CUZK_STORE_RESULTS_H
#define CUZK_STORE_RESULTS_H

#include <stddef.h>
#include <stdint.h>

#include "store/store.h"

/* The job an idempotency key of tenant names (a key is recorded under the request's
 * "tenant", or without one "uid:" and its peer.uid): 1 with *job and its body's
 * hash in sha (65 bytes), 0 when none, -errno with err. */
int store_idem_find(struct store *st, const char *tenant, const char *key, uint64_t *job, char sha[65],
                    char *err, size_t errlen);

/* Partition idx of job: its proof and public JSON (snarkjs's text) and its timings
 * (JSON text, may be NULL), into the batch. 0 or -errno. */
int store_result_put(struct store *st, uint64_t job, uint32_t idx, const char *proof, const char *pub,
                     const char *timings);
/* Read it back: 1 with malloc'd *proof, *pub, *timings (NULL if none recorded), 0
 * when there is no such row, -errno with err. */
int store_result_get(struct store *st, uint64_t job, uint32_t idx, char **proof, char **pub, char **timings,
                     char *err, size_t errlen);

/* One partition of a job, for a request about it alone (a proof): the job's request
 * (malloc'd; the caller frees it), its number of partitions, and partition idx's state,
 * name and reason (has_part 0 when idx is out of range). */
struct store_part_one {
    char *request;
    uint32_t n_parts;
    int has_part;
    enum store_part_state state;
    char name[256], reason[1024];
};
/* 1 with *p filled, 0 when there is no job id, -errno with err. */
int store_part_one(struct store *st, uint64_t id, uint32_t idx, struct store_part_one *p, char *err,
                   size_t errlen);

/* Call cb with job id (any state): 1 when the job is in the store (cb's return is
 * then in *cbret), 0 when not, -errno with err. */
int store_job_one(struct store *st, uint64_t id, int (*cb)(void *arg, const struct store_job *j), void *arg,
                  int *cbret, char *err, size_t errlen);

/* Partitions [from, from + n) of job in index order, each to cb with its state and,
 * when done, its stored proof and public JSON (NULL when none is stored): one query
 * for a page of a job's proofs. 0 (cb's non-zero return stops it and is returned), or
 * -errno with err. */
int store_results_range(struct store *st, uint64_t job, uint32_t from, uint32_t n,
                        int (*cb)(void *arg, uint32_t idx, enum store_part_state state, const char *proof,
                                  const char *pub),
                        void *arg, char *err, size_t errlen);

/* A page of the jobs (any state), newest first: those of tenant (request's "tenant";
 * NULL any) or of uid (request's peer.uid; < 0 any), with state ("running", "done",
 * "failed", "cancelled": a failed job one of whose partitions a cancel failed; NULL
 * any), circuit (NULL any), submitted at or after since (unix seconds), id below
 * before (0: from the newest). At most limit rows, each to cb (valid during the call).
 * The number of rows, or -errno with err; *more: another row follows the page. */
struct store_list_query {
    const char *tenant, *state, *circuit;
    int64_t uid, since;
    uint64_t before;
    uint32_t limit;
};
struct store_list_row {
    uint64_t id;
    const char *request; /* the submit's JSON (store.h): circuit, tenant, metadata */
    const char *state;   /* running, done, failed or cancelled */
    int64_t submitted;
    uint32_t parts, done, failed;
};
int store_jobs_list(struct store *st, const struct store_list_query *q,
                    int (*cb)(void *arg, const struct store_list_row *row), void *arg, int *more, char *err,
                    size_t errlen);

#endif
