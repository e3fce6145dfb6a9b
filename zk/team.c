/* team.c — the process's persistent compute threads (team.h).
 *
 * One mutex, T.mu, guards the whole set: the idle list, every thread's assignment and
 * every call's count of parts still running. A thread is handed a part by its caller
 * under T.mu and signalled on its own condition variable (only the threads that were
 * taken wake); it hands the part back under T.mu and the last one signals the caller.
 * So the caller's writes before team_run happen before every part (T.mu's unlock
 * by the caller pairs with the lock by which the thread reads its assignment), and
 * every part's writes happen before team_run returns (the thread's unlock after
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

struct team_call {
    team_fn *fn;
    void *arg;
    unsigned nparts;
    unsigned left;       /* parts on the set's threads not yet returned; T.mu */
    pthread_cond_t done; /* signalled under T.mu when left reaches 0 */
};

struct team_thread {
    pthread_cond_t wake;      /* signalled under T.mu when call is set */
    struct team_call *call;   /* the call whose part this thread runs, NULL when idle; T.mu */
    unsigned part;            /* T.mu */
    struct team_thread *next; /* the idle list, or a caller's list of taken threads; T.mu */
    struct team_thread *all;  /* every thread of the set, for the forked child to free */
};

static struct {
    pthread_mutex_t mu;
    struct team_thread *idle;    /* idle threads, the last one back first (warm caches) */
    struct team_thread *all;     /* every thread of the set */
    struct team_thread *orphans; /* a forked child's copy of its parent's set: freed at the next call */
    unsigned threads, nidle;
    uint64_t created, runs;
    bool forksafe; /* the pthread_atfork handlers are registered; without them no threads */
} T = { .mu = PTHREAD_MUTEX_INITIALIZER };

static pthread_once_t team_once = PTHREAD_ONCE_INIT;

/* Fork: the prepare handler takes T.mu so that the child's copy of the set is not
 * caught halfway through a change; the child forgets every thread (none exists in
 * it) and frees their records at its next call. No condition variable of the old set
 * is destroyed: their waiters do not exist in the child, and glibc's destroy would
 * wait for them. */
static void team_atfork_prepare(void)
{
    pthread_mutex_lock(&T.mu);
}

static void team_atfork_parent(void)
{
    pthread_mutex_unlock(&T.mu);
}

static void team_atfork_child(void)
{
    if (T.all) {
        struct team_thread *last = T.all;
        while (last->all) last = last->all;
        last->all = T.orphans;
        T.orphans = T.all;
    }
    T.all = T.idle = NULL;
    T.threads = T.nidle = 0;
    T.created = T.runs = 0;
    pthread_mutex_unlock(&T.mu);
}

static void team_init(void)
{
    T.forksafe = pthread_atfork(team_atfork_prepare, team_atfork_parent, team_atfork_child) == 0;
}

static void *team_main(void *arg)
{
    struct team_thread *t = arg;

    pthread_mutex_lock(&T.mu);
    for (;;) {
        while (!t->call) pthread_cond_wait(&t->wake, &T.mu);
        struct team_call *c = t->call;
        unsigned part = t->part, nparts = c->nparts;
        pthread_mutex_unlock(&T.mu);

        c->fn(c->arg, part, nparts);

        pthread_mutex_lock(&T.mu);
        t->call = NULL;
        t->next = T.idle;
        T.idle = t;
        T.nidle++;
        /* under T.mu: the caller cannot see left == 0, return and drop c before this */
        if (--c->left == 0) pthread_cond_signal(&c->done);
    }
    return NULL;
}

/* A new thread of the set, busy (not on the idle list); NULL if it cannot be made.
 * Called with T.mu held: the thread blocks on it until its caller has set its part. */
static struct team_thread *team_spawn(void)
{
    struct team_thread *t = calloc(1, sizeof *t);
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
    rc = pthread_create(&th, &attr, team_main, t);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    pthread_attr_destroy(&attr);
    if (rc) goto fail;
    t->all = T.all;
    T.all = t;
    T.threads++;
    T.created++;
    return t;
fail:
    pthread_cond_destroy(&t->wake);
    free(t);
    return NULL;
}

unsigned team_run(unsigned want, team_fn *fn, void *arg)
{
    struct team_call c = { .fn = fn, .arg = arg };
    struct team_thread *taken = NULL, *t;
    unsigned n = 1;

    if (want > TEAM_MAX + 1) want = TEAM_MAX + 1;
    if (want > 1) pthread_once(&team_once, team_init);
    if (want <= 1 || !T.forksafe) { /* forksafe is written once, before pthread_once returns */
        fn(arg, 0, 1);
        return 1;
    }

    pthread_mutex_lock(&T.mu);
    while (T.orphans) {
        t = T.orphans;
        T.orphans = t->all;
        free(t);
    }
    for (; n < want && T.idle; n++) {
        t = T.idle;
        T.idle = t->next;
        T.nidle--;
        t->next = taken;
        taken = t;
    }
    for (; n < want && T.threads < TEAM_MAX; n++) {
        if (!(t = team_spawn())) break; /* fewer parts: the others still run */
        t->next = taken;
        taken = t;
    }
    c.nparts = n;
    c.left = n - 1;
    if (n > 1) {
        pthread_cond_init(&c.done, NULL); /* glibc: cannot fail without attributes */
        T.runs++;
    }
    for (unsigned part = 1; taken; part++) {
        t = taken;
        taken = t->next;
        t->call = &c;
        t->part = part;
        pthread_cond_signal(&t->wake);
    }
    pthread_mutex_unlock(&T.mu);

    fn(arg, 0, n);

    if (n > 1) {
        pthread_mutex_lock(&T.mu);
        while (c.left) pthread_cond_wait(&c.done, &T.mu);
        pthread_mutex_unlock(&T.mu);
        pthread_cond_destroy(&c.done);
    }
    return n;
}

void team_stats_get(team_stats *out)
{
    pthread_mutex_lock(&T.mu);
    *out = (team_stats){ .created = T.created, .runs = T.runs, .threads = T.threads, .idle = T.nidle };
    pthread_mutex_unlock(&T.mu);
}
