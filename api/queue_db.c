/* queue_db.c — cuzk-api's connections to the fleet's PostgreSQL in queue mode (api.h):
 *
 *   a pool of handles for the request threads. libmicrohttpd gives each connection a
 *   thread of its own (http.c), and a libpq connection serves one thread at a time:
 *   a request takes a handle for its few blocking calls and gives it back, so at most
 *   QPOOL_MAX connections are open however many HTTP clients there are; a request
 *   that finds them all busy waits for one on a condition variable.
 *
 *   the job-end doorbell: one more connection, LISTENing on cuzk_job_end in a thread
 *   of its own (fleet_listen, fleet_wait_notify: it sleeps in poll on the socket),
 *   rings each ended job on the bell (bell.c), which wakes the waiting requests
 *   (?wait=S): no request polls the table. A lost connection is
 *   opened and LISTENed again, then rung as "anything may have ended" (id 0): a job
 *   that ended while nobody listened is looked at again by its waiters. */
#include "api.h"

#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "store/fleet_pg.h"
#include "base/os.h"

#define QPOOL_MAX 8 /* open connections of the request threads */

static struct {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    struct fleet *idle[QPOOL_MAX];
    int n_idle, n_open;
} pool = { .mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER };

void api_qlog(const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    os_vlog(1, "cuzk-api", fmt, ap);
    va_end(ap);
}

struct fleet *api_queue_take(char *err, size_t errlen)
{
    struct fleet *f = NULL;

    pthread_mutex_lock(&pool.mu);
    while (!pool.n_idle && pool.n_open >= QPOOL_MAX) pthread_cond_wait(&pool.cv, &pool.mu);
    if (pool.n_idle) {
        f = pool.idle[--pool.n_idle];
        pthread_mutex_unlock(&pool.mu);
        return f;
    }
    pool.n_open++; /* this thread opens it, outside the lock */
    pthread_mutex_unlock(&pool.mu);
    if (fleet_open(&f, g_api.cfg.queue, err, errlen)) {
        pthread_mutex_lock(&pool.mu);
        pool.n_open--;
        pthread_cond_signal(&pool.cv);
        pthread_mutex_unlock(&pool.mu);
        return NULL;
    }
    return f;
}

void api_queue_put(struct fleet *f, int rc)
{
    struct fleet *stale[QPOOL_MAX];
    int n_stale = 0;

    /* A lost connection is closed, and with it every idle one: they were opened
     * before the loss too (a database restart drops them all), and a request that
     * retries once must find a fresh one, not the next stale handle. */
    if (rc == -ECONNREFUSED) {
        stale[n_stale++] = f;
        f = NULL;
    }
    pthread_mutex_lock(&pool.mu);
    if (f)
        pool.idle[pool.n_idle++] = f;
    else {
        pool.n_open--;
        while (pool.n_idle && n_stale < QPOOL_MAX) {
            stale[n_stale++] = pool.idle[--pool.n_idle];
            pool.n_open--;
        }
    }
    pthread_cond_broadcast(&pool.cv);
    pthread_mutex_unlock(&pool.mu);
    for (int i = 0; i < n_stale; i++) fleet_close(stale[i]); /* outside the lock: may block */
}

int api_queue_ping(void)
{
    char err[512];
    int rc = -1;

    /* Twice when the first handle was lost: its put closed every idle one (opened
     * before a database restart), so the second try opens a fresh connection. */
    for (int tries = 0; tries < 2; tries++) {
        struct fleet *f = api_queue_take(err, sizeof(err));

        if (!f) break;
        rc = fleet_ping(f, err, sizeof(err));
        api_queue_put(f, rc);
        if (rc != -ECONNREFUSED) break;
    }
    if (rc) api_qlog("readyz: the fleet's database: %s", err);
    return rc ? -1 : 0;
}

static void *bell_main(void *arg)
{
    struct fleet *f = NULL;
    char err[512];
    uint64_t job;
    int rc, said = 0;

    (void)arg;
    for (;;) {
        if (!f) {
            if (fleet_open(&f, g_api.cfg.queue, err, sizeof(err)) || fleet_listen(f, err, sizeof(err))) {
                if (!said++) api_qlog("job-end doorbell: %s; trying again every second", err);
                if (f) fleet_close(f);
                f = NULL;
                sleep(1); /* the database is away: a retry, not a look at any job */
                continue;
            }
            if (said) api_qlog("job-end doorbell: listening again");
            said = 0;
            api_bell_ring(0); /* whatever ended while nobody listened */
        }
        rc = fleet_wait_notify(f, 60000, &job, err, sizeof(err));
        if (rc == 1 && job)
            api_bell_ring(job);
        else if (rc < 0) {
            api_qlog("job-end doorbell: %s", err);
            fleet_close(f);
            f = NULL;
        }
    }
    return NULL;
}

int api_queue_start(char *err, size_t errlen)
{
    struct fleet *f;

    /* One connection now: a wrong URL or an unreachable database is said at start
     * (the schema made or checked), not at the first request. */
    if (!(f = api_queue_take(err, errlen))) return -1;
    api_queue_put(f, 0);
    return api_thread_start(bell_main, "the job-end doorbell's thread", err, errlen);
}
