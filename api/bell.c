/* bell.c — the job-end doorbell of cuzk-api (api.h), on which every long poll
 * (GET /v1/jobs/ID?wait=S) sleeps: one thread rings each job that ends (watch.c's
 * subscription to cuzkd, or queue mode's LISTEN in queue_db.c) into a ring of recent
 * ids and wakes the waiters with a broadcast. A waiter holds no connection to cuzkd
 * or to the database while it sleeps; it looks at its client's socket every
 * BELL_SLICE_NS and gives up at once when the client hung up. And each tenant has at
 * most API_TENANT_WAITS long polls at once. */
#include "api.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "api/tenant_count.h"
#include "base/locked.h"
#include "base/os.h"

#define BELL_RING     1024         /* ended job ids kept for the waiters */
#define BELL_SLICE_NS 200000000ull /* a waiter looks at its client this often */

static struct {
    pthread_mutex_t mu;
    pthread_cond_t cv; /* CLOCK_MONOTONIC (api_bell_init) */
    uint64_t seq;      /* ids rung so far; ring[s % BELL_RING] is the s-th */
    uint64_t ring[BELL_RING];
} bell = { .mu = PTHREAD_MUTEX_INITIALIZER };

void api_bell_init(void)
{
    pthread_condattr_t ca;

    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&bell.cv, &ca);
    pthread_condattr_destroy(&ca);
}

void api_bell_ring(uint64_t job)
{
    pthread_mutex_lock(&bell.mu);
    bell.ring[bell.seq % BELL_RING] = job;
    bell.seq++;
    pthread_cond_broadcast(&bell.cv);
    pthread_mutex_unlock(&bell.mu);
}

uint64_t api_bell_mark(void)
{
    return locked_read_u64(&bell.mu, &bell.seq);
}

/* The client closed its end (or the socket broke): nothing will read the answer. */
static int client_gone(int fd)
{
    struct pollfd p = { .fd = fd, .events = POLLRDHUP };

    return fd >= 0 && poll(&p, 1, 0) > 0 && (p.revents & (POLLRDHUP | POLLHUP | POLLERR | POLLNVAL));
}

int api_bell_wait(uint64_t mark, uint64_t job, uint64_t deadline_ns, int client_fd)
{
    int hit = 0;

    pthread_mutex_lock(&bell.mu);
    for (;;) {
        uint64_t now = os_now_ns(),
                 until = deadline_ns < now + BELL_SLICE_NS ? deadline_ns : now + BELL_SLICE_NS;
        struct timespec ts = { .tv_sec = (time_t)(until / 1000000000u),
                               .tv_nsec = (long)(until % 1000000000u) };

        /* More rung than the ring keeps: some are gone, the job may be among them. */
        if (bell.seq - mark > BELL_RING) hit = 1;
        for (uint64_t s = mark; !hit && s < bell.seq; s++)
            hit = !job || bell.ring[s % BELL_RING] == job || !bell.ring[s % BELL_RING];
        mark = bell.seq;
        if (hit || now >= deadline_ns) break;
        if (client_gone(client_fd)) {
            hit = -1;
            break;
        }
        pthread_cond_timedwait(&bell.cv, &bell.mu, &ts);
    }
    pthread_mutex_unlock(&bell.mu);
    return hit;
}

/* Each tenant's long polls at once (tenant_count.h). */
static struct tenant_count waits = TENANT_COUNT_INIT;

int api_wait_enter(const char *tenant)
{
    return tenant_count_add(&waits, tenant, 1, API_TENANT_WAITS) ? -1 : 0;
}

void api_wait_leave(const char *tenant)
{
    tenant_count_sub(&waits, tenant, 1);
}

void api_waits_prometheus(FILE *f)
{
    fprintf(f,
            "# HELP cuzk_api_long_polls Long polls (GET ?wait) waiting now, all tenants.\n"
            "# TYPE cuzk_api_long_polls gauge\ncuzk_api_long_polls %llu\n",
            (unsigned long long)tenant_count_total(&waits));
}
