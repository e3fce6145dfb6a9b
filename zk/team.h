/* team.h — the team: the process's persistent compute threads (zk/team.c).
 * ("Worker" is the GPU worker process, gpuworker/; the threads that share one
 * call's parts are its team.)
 *
 * The MSM, the NTT and the Groth16 matrix-vector product split their work into parts
 * that run at once on several threads. Those threads are made once per process and
 * kept, blocked on a condition variable between calls, instead of being created and
 * joined by every call (a proof made 9 threads at --threads 2 and 63 at --threads 8).
 *
 * Several callers may run at once (the in-flight threads of a worker, test threads), and a part
 * may itself call team_run: every caller gets threads of its own, taken from the
 * idle ones or made when none is idle, so nobody ever waits for a busy thread (no
 * deadlock) and each caller gets the parallelism it asked for, as when every call made
 * its own. The number of threads is therefore the largest number ever wanted at once
 * (each caller's want - 1, its own thread works too), at most TEAM_MAX.
 *
 * Fork: a child process inherits none of the threads (pthread_atfork resets the set in
 * the child; the next call there makes new ones). Do not fork from inside a part. */
#ifndef CUZK_TEAM_H
#define CUZK_TEAM_H

#include <stdint.h>

/* Threads the set may hold in all (callers' threads not counted). */
#define TEAM_MAX 1024

/* One part of a call: part in [0, nparts). */
typedef void team_fn(void *arg, unsigned part, unsigned nparts);

/* Runs fn(arg, part, nparts) once for every part in [0, nparts), each part on its own
 * thread and all of them at once, so a part may wait for another (a barrier of nparts
 * is allowed); part 0 runs on the calling thread. Returns nparts once every part has
 * returned. 1 <= nparts <= want (want 0 counts as 1): fewer than want only when
 * threads cannot be had (pthread_create failed, or TEAM_MAX busy), down to 1, fn
 * then running alone on the caller's thread, so a part must split its work by nparts,
 * not by want. Everything a part wrote is visible to the caller when it returns, and
 * everything the caller wrote before the call is visible to every part (the set's
 * mutex orders them: a part is handed over and handed back under it). */
unsigned team_run(unsigned want, team_fn *fn, void *arg);

/* Counters of this process (a forked child starts from zero). */
typedef struct {
    uint64_t created; /* threads ever made by the set; grows only when more are wanted at once than exist */
    uint64_t runs;    /* team_run calls that used at least one thread of the set */
    unsigned threads; /* threads held now */
    unsigned idle;    /* of them, waiting for a part */
} team_stats;

void team_stats_get(team_stats *out);

#endif
