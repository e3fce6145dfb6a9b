/* workers.c — the process's persistent compute threads (workers.h).
 *
 * One mutex, W.mu, guards the whole set: the idle list, every thread's assignment and
 * every call's count of parts still running. A thread is handed a part by its caller
 * under W.mu and signalled on its own condition variable (only the threads that were
 * taken wake); it hands the part back under W.mu and the last one signals the caller.
 * So the caller's writes before workers_run happen before every part (W.mu's unlock
 * by the caller pairs with the lock by which the thread reads its assignment), and
 * every part's writes happen before workers_run returns (the thread's unlock after
 * counting itself done pairs with the caller's lock that sees the count reach 0).
 * The mutex is taken twice per thread and call: a call hands out at most
 * ntasks/threads parts, a few dozen calls a proof, against milliseconds of work each.
 *
 * Threads are made with every signal blocked: they are kept for the life of the
 * process, and a process-directed signal (SIGTERM that a stage reads by signalfd or
 * sigwait) must not land in one of them just because it was made before the caller
 * blocked its signals. */
#include "zk/team.h"

#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdlib.h>

struct workers_call {
    workers_fn *fn;
    void *arg;
    unsigned nparts;
    unsigned left;       /* parts on the set's threads not yet returned; W.mu */
    pthread_cond_t done; /* signalled under W.mu when left reaches 0 */
};

struct workers_thread {
    pthread_cond_t wake;         /* signalled under W.mu when call is set */
    struct workers_call *call;   /* the call whose part this thread runs, NULL when idle; W.mu */
    unsigned part;               /* W.mu */
    struct workers_thread *next; /* the idle list, or a caller's list of taken threads; W.mu */
    struct workers_thread *all;  /* every thread of the set, for the forked child to free */
};

static struct {
    pthread_mutex_t mu;
    struct workers_thread *idle;    /* idle threads, the last one back first (warm caches) */
    struct workers_thread *all;     /* every thread of the set */
    struct workers_thread *orphans; /* a forked child's copy of its parent's set: freed at the next call */
    unsigned threads, nidle;
    uint64_t created, runs;
    bool forksafe; /* the pthread_atfork handlers are registered; without them no threads */
} W = { .mu = PTHREAD_MUTEX_INITIALIZER };

static pthread_once_t workers_once = PTHREAD_ONCE_INIT;

/* Fork: the prepare handler takes W.mu so that the child's copy of the set is not
 * caught halfway through a change; the child forgets every thread (none exists in
 * it) and frees their records at its next call. No condition variable of the old set
 * is destroyed: their waiters do not exist in the child, and glibc's destroy would
 * wait for them. */
static void workers_atfork_prepare(void)
{
    pthread_mutex_lock(&W.mu);
}

static void workers_atfork_parent(void)
{
    pthread_mutex_unlock(&W.mu);
}

static void workers_atfork_child(void)
{
    if (W.all) {
        struct workers_thread *last = W.all;
        while (last->all) last = last->all;
        last->all = W.orphans;
        W.orphans = W.all;
    }
    W.all = W.idle = NULL;
    W.threads = W.nidle = 0;
    W.created = W.runs = 0;
    pthread_mutex_unlock(&W.mu);
}

static void workers_init(void)
{
    W.forksafe = pthread_atfork(workers_atfork_prepare, workers_atfork_parent, workers_atfork_child) == 0;
}

static void *workers_main(void *arg)
{
    struct workers_thread *t = arg;

    pthread_mutex_lock(&W.mu);
    for (;;) {
        while (!t->call) pthread_cond_wait(&t->wake, &W.mu);
        struct workers_call *c = t->call;
        unsigned part = t->part, nparts = c->nparts;
        pthread_mutex_unlock(&W.mu);

        c->fn(c->arg, part, nparts);

        pthread_mutex_lock(&W.mu);
        t->call = NULL;
        t->next = W.idle;
        W.idle = t;
        W.nidle++;
        /* under W.mu: the caller cannot see left == 0, return and drop c before this */
        if (--c->left == 0) pthread_cond_signal(&c->done);
    }
    return NULL;
}

/* A new thread of the set, busy (not on the idle list); NULL if it cannot be made.
 * Called with W.mu held: the thread blocks on it until its caller has set its part. */
static struct workers_thread *workers_spawn(void)
{
    struct workers_thread *t = calloc(1, sizeof *t);
    pthread_attr_t attr;
    sigset_t all, old;
    pthread_t th;
    int rc;

    if (!t) return NULL;
    if (pthread_cond_init(&t->wake, NULL)) {
        free(t);
        return NULL;
    }
    if (pthread_attr_init(&attr)) goto fail;
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    rc = pthread_create(&th, &attr, workers_main, t);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    pthread_attr_destroy(&attr);
    if (rc) goto fail;
    t->all = W.all;
    W.all = t;
    W.threads++;
    W.created++;
    return t;
fail:
    pthread_cond_destroy(&t->wake);
    free(t);
    return NULL;
}

unsigned workers_run(unsigned want, workers_fn *fn, void *arg)
{
    struct workers_call c = { .fn = fn, .arg = arg };
    struct workers_thread *taken = NULL, *t;
    unsigned n = 1;

    if (want > WORKERS_MAX + 1) want = WORKERS_MAX + 1;
    if (want > 1) pthread_once(&workers_once, workers_init);
    if (want <= 1 || !W.forksafe) { /* forksafe is written once, before pthread_once returns */
        fn(arg, 0, 1);
        return 1;
    }

    pthread_mutex_lock(&W.mu);
    while (W.orphans) {
        t = W.orphans;
        W.orphans = t->all;
        free(t);
    }
    for (; n < want && W.idle; n++) {
        t = W.idle;
        W.idle = t->next;
        W.nidle--;
        t->next = taken;
        taken = t;
    }
    for (; n < want && W.threads < WORKERS_MAX; n++) {
        if (!(t = workers_spawn())) break; /* fewer parts: the others still run */
        t->next = taken;
        taken = t;
    }
    c.nparts = n;
    c.left = n - 1;
    if (n > 1) {
        pthread_cond_init(&c.done, NULL); /* glibc: cannot fail without attributes */
        W.runs++;
    }
    for (unsigned part = 1; taken; part++) {
        t = taken;
        taken = t->next;
        t->call = &c;
        t->part = part;
        pthread_cond_signal(&t->wake);
    }
    pthread_mutex_unlock(&W.mu);

    fn(arg, 0, n);

    if (n > 1) {
        pthread_mutex_lock(&W.mu);
        while (c.left) pthread_cond_wait(&c.done, &W.mu);
        pthread_mutex_unlock(&W.mu);
        pthread_cond_destroy(&c.done);
    }
    return n;
}

void workers_stats_get(workers_stats *out)
{
    pthread_mutex_lock(&W.mu);
    *out = (workers_stats){ .created = W.created, .runs = W.runs, .threads = W.threads, .idle = W.nidle };
    pthread_mutex_unlock(&W.mu);
}
