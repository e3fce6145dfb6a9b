/* conns.c — cuzk-api's connections from accept to close (conns.h): each one's
 * address, whether it awaits a request head and since when, whether a token was
 * ever seen on it; the admission of a new one, the header deadline's watchdog, and
 * the log of refusals at most once a minute per address. One mutex over it all: the
 * accept policy and the notifications run in libmicrohttpd's listening thread, the
 * heads and ends in the connections' own, the deadlines in the watchdog. */
#include "api/conns.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/os.h"

#define NS_PER_S    1000000000ull
#define SAY_EVERY   (60 * NS_PER_S) /* an address's lines: one a minute at most */
#define SAID_MAX    256             /* (address, kind) pairs whose last line is remembered */
#define SWEEP_EVERY NS_PER_S        /* the watchdog looks this often */
/* A connection without a token counts against the pre-auth shares only once it has
 * waited this long for its head: a client's burst of new connections (an SDK's
 * threads, a page's fetches) sends its heads within milliseconds and must not close
 * its own first ones, while a trickling crowd is older than this at the next accept.
 * The hard limits (--per-ip, --max-conns) may still close a younger one. */
#define PRE_GRACE   (2 * NS_PER_S)

/* An address as a key: the family and its bytes (the port left out). Family 0:
 * libmicrohttpd's own messages, which name no address. */
struct addr_key {
    int family;
    unsigned char b[16];
};

struct conn {
    struct MHD_Connection *c;
    int fd;
    struct addr_key a;
    uint64_t since_ns; /* waiting: when its wait for a request head began */
    int waiting;       /* no whole request head since since_ns */
    int authed;        /* a request on it carried a valid token */
    int closing;       /* shut down here: no longer counted, its thread ending */
    size_t slot;       /* its index in g.all and g.brief */
};

/* What a scan looks at of each connection, kept beside g.all in one array: an
 * accept looks through every connection, and following 1000 pointers to as many
 * heap blocks cost more than the rest of the accept. */
struct brief {
    struct addr_key a;
    uint64_t since_ns;
    unsigned char live; /* not closing */
    unsigned char pre;  /* preauth() */
};

/* A kind of line about an address: when the last was written, how many were left out
 * since. */
struct said {
    struct addr_key a;
    char why[160];
    int used;
    uint64_t last_ns, left_out;
};

static struct {
    pthread_mutex_t mu;
    pthread_cond_t cv; /* the watchdog's sleep (CLOCK_MONOTONIC); stop wakes it */
    struct conn **all;
    struct brief *brief; /* brief[i] is all[i]'s (brief_sync) */
    size_t n, cap;
    unsigned max_conns, per_ip, pre_all, pre_ip;
    uint64_t header_ns;
    pthread_t th;
    int running, stop;
    struct said said[SAID_MAX];
} g = { .mu = PTHREAD_MUTEX_INITIALIZER };

static void key_of(const struct sockaddr *sa, struct addr_key *k)
{
    memset(k, 0, sizeof(*k));
    if (!sa) return;
    k->family = sa->sa_family;
    if (sa->sa_family == AF_INET)
        memcpy(k->b, &((const struct sockaddr_in *)sa)->sin_addr, 4);
    else if (sa->sa_family == AF_INET6)
        memcpy(k->b, &((const struct sockaddr_in6 *)sa)->sin6_addr, 16);
}

static int same(const struct addr_key *x, const struct addr_key *y)
{
    return x->family == y->family && !memcmp(x->b, y->b, sizeof(x->b));
}

static void addr_text(const struct addr_key *k, char *out, size_t len)
{
    if (!k->family || !inet_ntop(k->family, k->b, out, (socklen_t)len)) snprintf(out, len, "libmicrohttpd");
}

static void log_line(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void log_line(const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    os_vlog(1, "cuzk-api", fmt, ap);
    va_end(ap);
}

/* One line about address a (g.mu held), unless one of the same kind (why) was
 * written less than a minute ago: then only counted, and the count said by the
 * watchdog once the minute is over. A flood of one kind from one address is one line
 * a minute. */
static void say(const struct addr_key *a, const char *why)
{
    uint64_t now = os_now_ns();
    struct said *s = NULL, *oldest = &g.said[0];
    char t[INET6_ADDRSTRLEN];

    for (size_t i = 0; i < SAID_MAX && !s; i++) {
        if (g.said[i].used && same(&g.said[i].a, a) &&
            !strncmp(g.said[i].why, why, sizeof(g.said[i].why) - 1))
            s = &g.said[i];
        if (!g.said[i].used || (oldest->used && g.said[i].last_ns < oldest->last_ns)) oldest = &g.said[i];
    }
    if (!s) { /* the kind longest unheard of makes room; its count is said first */
        s = oldest;
        if (s->used && s->left_out) {
            addr_text(&s->a, t, sizeof(t));
            log_line("%s: %llu more like this since the last line: %s", t, (unsigned long long)s->left_out,
                     s->why);
        }
        s->a = *a;
        snprintf(s->why, sizeof(s->why), "%s", why);
        s->used = 0;
    }
    if (s->used && now - s->last_ns < SAY_EVERY) {
        s->left_out++;
        return;
    }
    addr_text(a, t, sizeof(t));
    log_line("%s: %s", t, why);
    s->used = 1;
    s->last_ns = now;
    s->left_out = 0;
}

static int preauth(const struct conn *k)
{
    return k->waiting && !k->authed && !k->closing;
}

/* k's brief brought up to date (g.mu held), after each change of its state. */
static void brief_sync(const struct conn *k)
{
    struct brief *b = &g.brief[k->slot];

    b->a = k->a;
    b->since_ns = k->since_ns;
    b->live = !k->closing;
    b->pre = (unsigned char)preauth(k);
}

/* The counts the admission of a new connection from a looks at (g.mu held). */
struct tally {
    unsigned all_live, all_stale, addr_live, addr_pre, addr_stale;
    struct conn *addr_oldest_pre; /* a's oldest pre-auth connection */
};

/* stale: pre-auth connections that have waited PRE_GRACE or more (before stale_ns). */
static void count_for(const struct addr_key *a, uint64_t stale_ns, struct tally *t)
{
    size_t oldest = 0;

    memset(t, 0, sizeof(*t));
    for (size_t i = 0; i < g.n; i++) {
        const struct brief *b = &g.brief[i];
        int mine, stale;

        if (!b->live) continue;
        mine = same(&b->a, a);
        t->all_live++;
        t->addr_live += mine;
        if (!b->pre) continue;
        stale = b->since_ns <= stale_ns;
        t->all_stale += stale;
        if (!mine) continue;
        t->addr_stale += stale;
        if (!t->addr_pre++ || b->since_ns < g.brief[oldest].since_ns) oldest = i;
    }
    if (t->addr_pre) t->addr_oldest_pre = g.all[oldest];
}

static int by_addr_then_age(const void *x, const void *y)
{
    const struct conn *a = *(struct conn *const *)x, *b = *(struct conn *const *)y;
    int c = a->a.family - b->a.family;

    if (!c) c = memcmp(a->a.b, b->a.b, sizeof(a->a.b));
    return c ? c : (a->since_ns > b->since_ns) - (a->since_ns < b->since_ns);
}

/* The pre-auth connection to close for the server's share (g.mu held): of those
 * waiting since before_ns, the oldest of the address that holds the most of them (a
 * crowd's, never a lone client's while a crowd holds two from one address); NULL when
 * there is none. */
static struct conn *busiest_oldest(uint64_t before_ns)
{
    struct conn **p = malloc((g.n ? g.n : 1) * sizeof(*p)), *best = NULL;
    size_t m = 0, best_n = 0;

#define CANDIDATE(i) (g.brief[i].pre && g.brief[i].since_ns <= before_ns)
    if (!p) { /* no memory for the sort: the oldest of all */
        for (size_t i = 0; i < g.n; i++)
            if (CANDIDATE(i) && (!best || g.brief[i].since_ns < best->since_ns)) best = g.all[i];
        return best;
    }
    for (size_t i = 0; i < g.n; i++)
        if (CANDIDATE(i)) p[m++] = g.all[i];
#undef CANDIDATE
    qsort(p, m, sizeof(*p), by_addr_then_age);
    for (size_t i = 0, j; i < m; i = j) { /* p[i..j): one address, oldest first */
        for (j = i + 1; j < m && same(&p[j]->a, &p[i]->a); j++) {
        }
        if (j - i > best_n || (j - i == best_n && p[i]->since_ns < best->since_ns))
            best = p[i], best_n = j - i;
    }
    free(p);
    return best;
}

/* Close k (g.mu held): its socket shut down, so its thread sees the end and goes. The
 * descriptor stays libmicrohttpd's, open until the close notification (which takes
 * g.mu), so it is never another connection's by then. */
static void close_conn(struct conn *k, const char *why)
{
    if (k->fd >= 0) shutdown(k->fd, SHUT_RDWR);
    k->closing = 1;
    brief_sync(k);
    say(&k->a, why);
}

enum MHD_Result api_conns_accept(void *cls, const struct sockaddr *addr, socklen_t addrlen)
{
    struct addr_key a;
    const char *refused = NULL;

    (void)cls;
    (void)addrlen;
    key_of(addr, &a);
    pthread_mutex_lock(&g.mu);
    /* Each round closes one connection or decides: a full address or server makes
     * room first, then the shares of the pre-auth ones past their grace. */
    for (;;) {
        uint64_t now = os_now_ns(), stale_ns = now > PRE_GRACE ? now - PRE_GRACE : 0;
        struct tally t;
        struct conn *victim;

        count_for(&a, stale_ns, &t);
        if (g.per_ip && t.addr_live >= g.per_ip) {
            if (!(victim = t.addr_oldest_pre)) {
                refused = "connection refused: --per-ip connections from this address are open, each "
                          "authenticated or busy with a request";
                break;
            }
            close_conn(victim, "closed its oldest connection without a token: the address is at --per-ip");
        } else if (g.max_conns && t.all_live >= g.max_conns) {
            if (!(victim = busiest_oldest(UINT64_MAX))) {
                refused = "connection refused: --max-conns connections are open, each authenticated or busy "
                          "with a request";
                break;
            }
            close_conn(victim, "closed its oldest connection without a token: the server is at --max-conns");
        } else if (t.addr_stale >= g.pre_ip) {
            close_conn(t.addr_oldest_pre,
                       "closed its oldest connection without a token: the address holds its "
                       "share of them (a quarter of --per-ip)");
        } else if (t.all_stale >= g.pre_all && (victim = busiest_oldest(stale_ns))) {
            close_conn(victim,
                       "closed its oldest connection without a token: connections without one hold "
                       "their share (a quarter of --max-conns)");
        } else
            break;
    }
    if (refused) say(&a, refused);
    pthread_mutex_unlock(&g.mu);
    return refused ? MHD_NO : MHD_YES;
}

void api_conns_notify(void *cls, struct MHD_Connection *c, void **socket_context,
                      enum MHD_ConnectionNotificationCode code)
{
    struct conn *k = *socket_context;

    (void)cls;
    if (code == MHD_CONNECTION_NOTIFY_STARTED) {
        const union MHD_ConnectionInfo *fi = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
        const union MHD_ConnectionInfo *ai = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CLIENT_ADDRESS);

        if (!(k = calloc(1, sizeof(*k)))) return; /* untracked: the limits' counts miss it */
        k->c = c;
        k->fd = fi ? fi->connect_fd : -1;
        key_of(ai ? ai->client_addr : NULL, &k->a);
        k->waiting = 1;
        k->since_ns = os_now_ns();
        pthread_mutex_lock(&g.mu);
        if (g.n == g.cap) {
            size_t nc = g.cap ? 2 * g.cap : 64;
            struct conn **na = realloc(g.all, nc * sizeof(*na));
            struct brief *nb = na ? realloc(g.brief, nc * sizeof(*nb)) : NULL;

            if (na) g.all = na;
            if (nb) g.brief = nb, g.cap = nc;
        }
        if (g.n < g.cap) {
            k->slot = g.n;
            g.all[g.n++] = k;
            brief_sync(k);
            *socket_context = k;
        } else {
            free(k);
        }
        pthread_mutex_unlock(&g.mu);
        return;
    }
    if (code != MHD_CONNECTION_NOTIFY_CLOSED || !k) return;
    pthread_mutex_lock(&g.mu);
    g.all[k->slot] = g.all[--g.n];
    g.brief[k->slot] = g.brief[g.n];
    g.all[k->slot]->slot = k->slot;
    pthread_mutex_unlock(&g.mu);
    free(k);
    *socket_context = NULL;
}

static struct conn *conn_of(struct MHD_Connection *c)
{
    const union MHD_ConnectionInfo *i = MHD_get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);

    return i ? i->socket_context : NULL;
}

void api_conns_headed(struct MHD_Connection *c, int authenticated)
{
    struct conn *k = conn_of(c);

    if (!k) return;
    pthread_mutex_lock(&g.mu);
    k->waiting = 0;
    if (authenticated) k->authed = 1;
    brief_sync(k);
    pthread_mutex_unlock(&g.mu);
}

void api_conns_request_ended(struct MHD_Connection *c)
{
    struct conn *k = conn_of(c);

    if (!k) return;
    pthread_mutex_lock(&g.mu);
    k->waiting = 1;
    k->since_ns = os_now_ns();
    brief_sync(k);
    pthread_mutex_unlock(&g.mu);
}

/* Every second: the connections past their header deadline closed, and each
 * address's count of lines left out said once its minute is over. */
static void *watchdog(void *arg)
{
    char t[INET6_ADDRSTRLEN];

    (void)arg;
    pthread_mutex_lock(&g.mu);
    while (!g.stop) {
        uint64_t now = os_now_ns(), until = now + SWEEP_EVERY;
        struct timespec ts = { .tv_sec = (time_t)(until / NS_PER_S), .tv_nsec = (long)(until % NS_PER_S) };

        for (size_t i = 0; g.header_ns && i < g.n; i++)
            if (g.brief[i].pre && now - g.brief[i].since_ns >= g.header_ns)
                close_conn(g.all[i],
                           "closed a connection that sent no whole request head within "
                           "--header-timeout");
        for (size_t i = 0; i < SAID_MAX; i++) {
            struct said *s = &g.said[i];

            if (!s->used || !s->left_out || now - s->last_ns < SAY_EVERY) continue;
            addr_text(&s->a, t, sizeof(t));
            log_line("%s: %llu more like this in the last minute: %s", t, (unsigned long long)s->left_out,
                     s->why);
            s->last_ns = now;
            s->left_out = 0;
        }
        pthread_cond_timedwait(&g.cv, &g.mu, &ts);
    }
    pthread_mutex_unlock(&g.mu);
    return NULL;
}

int api_conns_start(unsigned max_conns, unsigned per_ip, unsigned header_timeout_s, char *err, size_t errlen)
{
    pthread_condattr_t ca;
    int rc;

    g.max_conns = max_conns;
    g.per_ip = per_ip;
    g.pre_all = max_conns / 4 ? max_conns / 4 : 1;
    g.pre_ip = per_ip / 4 ? per_ip / 4 : 1;
    g.header_ns = (uint64_t)header_timeout_s * NS_PER_S;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&g.cv, &ca);
    pthread_condattr_destroy(&ca);
    g.stop = 0;
    if ((rc = pthread_create(&g.th, NULL, watchdog, NULL))) {
        snprintf(err, errlen, "the connections' watchdog thread: %s", strerror(rc));
        return -1;
    }
    g.running = 1;
    return 0;
}

void api_conns_stop(void)
{
    if (!g.running) return;
    pthread_mutex_lock(&g.mu);
    g.stop = 1;
    pthread_cond_signal(&g.cv);
    pthread_mutex_unlock(&g.mu);
    pthread_join(g.th, NULL);
    g.running = 0;
}

unsigned api_conns_hard_limit(unsigned max_conns)
{
    return 2 * max_conns;
}

void api_conns_mhd_said(const char *what)
{
    struct addr_key none = { 0 };

    pthread_mutex_lock(&g.mu);
    say(&none, what);
    pthread_mutex_unlock(&g.mu);
}
