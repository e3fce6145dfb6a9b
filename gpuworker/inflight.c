/* inflight.c — the in-flight threads of asynchronous backends (gpuworker/inflight.h). */
#include "gpuworker/inflight.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/error.h"
#include "base/os.h"

struct inflight_job {
    struct backend_input in;
    void *tag;
};

struct inflight_thread {
    struct inflight *l;
    unsigned idx;
    pthread_t th;
    int started;
};

/* Queue and results are bounded by n: the worker never has more than n submitted and
 * not collected, so each ring of n entries never overflows. */
struct inflight {
    unsigned n;
    inflight_fn fn;
    void *ctx;
    pthread_mutex_t mu;
    pthread_cond_t cv_work, cv_done; /* cv_done on CLOCK_MONOTONIC */
    struct inflight_job q[INFLIGHT_MAX];
    unsigned q_head, q_n;
    struct backend_done done[INFLIGHT_MAX];
    unsigned d_head, d_n;
    unsigned outstanding; /* submitted and not collected */
    /* Union of the threads' busy intervals: active threads, since when at least one has
     * been, and the closed total (backend_done.busy_total_ns). */
    unsigned active;
    uint64_t busy_since, busy_total;
    int quit;
    struct inflight_thread thread[INFLIGHT_MAX];
};

static void *inflight_thread_main(void *arg)
{
    struct inflight_thread *self = arg;
    struct inflight *l = self->l;

    for (;;) {
        struct backend_done d;
        struct inflight_job j;

        pthread_mutex_lock(&l->mu);
        while (!l->quit && !l->q_n) pthread_cond_wait(&l->cv_work, &l->mu);
        if (!l->q_n) {
            pthread_mutex_unlock(&l->mu);
            return NULL;
        }
        j = l->q[l->q_head];
        l->q_head = (l->q_head + 1) % l->n;
        l->q_n--;
        memset(&d, 0, sizeof(d));
        d.begin_ns = os_now_ns();
        if (!l->active++) l->busy_since = d.begin_ns;
        pthread_mutex_unlock(&l->mu);

        l->fn(l->ctx, self->idx, &j.in, &d);
        d.tag = j.tag;
        if (d.rc && !d.err[0])
            snprintf(d.err, sizeof(d.err), "prove failed: %s (%s)", cuzk_strerror(d.rc), cuzk_err_name(d.rc));

        pthread_mutex_lock(&l->mu);
        d.end_ns = os_now_ns(); /* under the lock: the totals below are monotonic */
        if (!--l->active) l->busy_total += d.end_ns - l->busy_since;
        d.busy_total_ns = l->busy_total + (l->active ? d.end_ns - l->busy_since : 0);
        l->done[(l->d_head + l->d_n) % l->n] = d;
        l->d_n++;
        pthread_cond_signal(&l->cv_done);
        pthread_mutex_unlock(&l->mu);
    }
}

int inflight_start(struct inflight **out, unsigned n, inflight_fn fn, void *ctx, char *err, size_t errlen)
{
    struct inflight *l;
    pthread_condattr_t ca;
    int rc;

    *out = NULL;
    if (n < 1 || n > INFLIGHT_MAX) {
        snprintf(err, errlen, "inflight: %u threads (1 to %d)", n, INFLIGHT_MAX);
        return -EINVAL;
    }
    l = calloc(1, sizeof(*l));
    if (!l) {
        snprintf(err, errlen, "out of memory");
        return -ENOMEM;
    }
    l->n = n;
    l->fn = fn;
    l->ctx = ctx;
    pthread_mutex_init(&l->mu, NULL);
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&l->cv_done, &ca);
    pthread_condattr_destroy(&ca);
    pthread_cond_init(&l->cv_work, NULL);
    for (unsigned i = 0; i < n; i++) {
        l->thread[i].l = l;
        l->thread[i].idx = i;
        rc = pthread_create(&l->thread[i].th, NULL, inflight_thread_main, &l->thread[i]);
        if (rc) {
            snprintf(err, errlen, "starting in-flight thread %u: %s", i, strerror(rc));
            inflight_stop(l);
            return -rc;
        }
        l->thread[i].started = 1;
    }
    *out = l;
    return 0;
}

int inflight_submit(struct inflight *l, const struct backend_input *in, void *tag, char *err, size_t errlen)
{
    int rc = 0;

    pthread_mutex_lock(&l->mu);
    if (l->outstanding == l->n) {
        snprintf(err, errlen, "more than %u partitions submitted: internal error", l->n);
        rc = -CUZK_E_INTERNAL;
    } else {
        struct inflight_job *j = &l->q[(l->q_head + l->q_n) % l->n];

        j->in = *in;
        j->tag = tag;
        l->q_n++;
        l->outstanding++;
        pthread_cond_signal(&l->cv_work);
    }
    pthread_mutex_unlock(&l->mu);
    return rc;
}

int inflight_collect(struct inflight *l, uint64_t timeout_ns, struct backend_done *out)
{
    int got = 0;

    pthread_mutex_lock(&l->mu);
    if (!l->d_n && timeout_ns) {
        uint64_t t = os_now_ns() + timeout_ns;
        struct timespec dl = { (time_t)(t / 1000000000ull), (long)(t % 1000000000ull) };

        while (!l->d_n)
            if (pthread_cond_timedwait(&l->cv_done, &l->mu, &dl) == ETIMEDOUT) break;
    }
    if (l->d_n) {
        *out = l->done[l->d_head];
        l->d_head = (l->d_head + 1) % l->n;
        l->d_n--;
        l->outstanding--;
        got = 1;
    }
    pthread_mutex_unlock(&l->mu);
    return got;
}

void inflight_stop(struct inflight *l)
{
    if (!l) return;
    pthread_mutex_lock(&l->mu);
    l->quit = 1;
    pthread_cond_broadcast(&l->cv_work);
    pthread_mutex_unlock(&l->mu);
    for (unsigned i = 0; i < l->n; i++)
        if (l->thread[i].started) pthread_join(l->thread[i].th, NULL);
    pthread_cond_destroy(&l->cv_work);
    pthread_cond_destroy(&l->cv_done);
    pthread_mutex_destroy(&l->mu);
    free(l);
}
