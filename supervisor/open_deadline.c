/* open_deadline.c — an open with a deadline (open_deadline.h). */
#include "supervisor/open_deadline.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "base/os.h"

struct od {
    pthread_mutex_t lock;
    pthread_cond_t cond;
    int refs;      /* the waiter and the thread; the last one frees */
    int done, fd;  /* fd: >= 0, or -errno */
    int abandoned; /* the waiter gave up: the thread closes fd */
    struct stat st;
    int flags;
    char path[];
};

static void od_put(struct od *o)
{
    int last;

    pthread_mutex_lock(&o->lock);
    last = --o->refs == 0;
    pthread_mutex_unlock(&o->lock);
    if (last) {
        pthread_cond_destroy(&o->cond);
        pthread_mutex_destroy(&o->lock);
        free(o);
    }
}

static void *run(void *arg)
{
    struct od *o = arg;
    int fd = open(o->path, o->flags), e = errno;
    struct stat st;

    if (fd >= 0 && fstat(fd, &st)) {
        e = errno;
        close(fd);
        fd = -1;
    }
    pthread_mutex_lock(&o->lock);
    if (o->abandoned) {
        if (fd >= 0) close(fd);
    } else {
        o->fd = fd >= 0 ? fd : -e;
        if (fd >= 0) o->st = st;
    }
    o->done = 1;
    pthread_cond_signal(&o->cond);
    pthread_mutex_unlock(&o->lock);
    od_put(o);
    return NULL;
}

int open_deadline(const char *path, int flags, unsigned ms, struct stat *st)
{
    size_t n = strlen(path) + 1;
    struct od *o = calloc(1, sizeof(*o) + n);
    pthread_attr_t a;
    pthread_t th;
    struct timespec dl;
    int rc;

    if (!o) return -ENOMEM;
    memcpy(o->path, path, n);
    o->flags = flags | O_CLOEXEC;
    o->refs = 2;
    pthread_mutex_init(&o->lock, NULL);
    /* CLOCK_MONOTONIC: a clock step does not move the deadline */
    {
        pthread_condattr_t ca;

        pthread_condattr_init(&ca);
        pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
        pthread_cond_init(&o->cond, &ca);
        pthread_condattr_destroy(&ca);
    }
    pthread_attr_init(&a);
    pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
    rc = pthread_create(&th, &a, run, o);
    pthread_attr_destroy(&a);
    if (rc) {
        o->refs = 1;
        od_put(o);
        return -EAGAIN;
    }
    dl = os_deadline_after_ms((uint64_t)ms);
    pthread_mutex_lock(&o->lock);
    while (!o->done)
        if (pthread_cond_timedwait(&o->cond, &o->lock, &dl) == ETIMEDOUT) break;
    if (o->done) {
        rc = o->fd;
        if (rc >= 0) *st = o->st;
    } else {
        o->abandoned = 1;
        rc = -ETIMEDOUT;
    }
    pthread_mutex_unlock(&o->lock);
    od_put(o);
    return rc;
}
