/* metrics_http.c — cuzkd --metrics-listen ADDR:PORT (metrics_http.h).
 *
 * Why a thread of cuzkd and not a source in its io_uring loop: a scrape maps the stats
 * segment, reads /proc/PID/statm of every stage and formats some kilobytes, and a slow
 * or stuck HTTP client holds its connection; none of that may ever delay the loop that
 * reaps and restarts children and answers the control socket. The thread shares
 * nothing with that loop: it reads the stats page exactly as an outside `cuzk metrics`
 * does (stats_reading_take: read-only mapping, seqlock copies;
 * stats_reading_prometheus, shm/stats_reader.h), so
 * there is no lock, no queue and no supervisor state to hand over, and the HTTP code
 * stays out of supervisor.c. It is started after daemonizing and after the signals are
 * blocked (it inherits the mask, so they stay with the signalfd); the main thread forks
 * the children and they call only async-signal-safe functions before exec, so the
 * extra thread cannot wedge them. The listening socket is CLOEXEC, so stages never
 * inherit it.
 *
 * The protocol, minimal on purpose (nothing here is keep-alive, chunked or pipelined):
 *   up to --metrics-conns connections at once, polled together (serve_loop), a
 *   newcomer taking the oldest one's slot when full; read each request head until a
 *   blank line, at most METRICS_HTTP_HEAD_MAX bytes and METRICS_HTTP_READ_MS from
 *   accept (too big or malformed: 400; too slow or closed early: dropped without an
 *   answer), so slow clients never delay another's scrape;
 *   "GET /metrics" (a query string is ignored; HEAD too) -> 200, Content-Type
 *   text/plain; version=0.0.4, the text of `cuzk metrics`; another path -> 404;
 *   another method -> 405; always Content-Length and Connection: close; then close.
 * A request body is never read (GET has none); the socket is shut down for writing
 * before close so the answer is delivered. Sends time out after METRICS_HTTP_READ_MS.
 */
#include "supervisor/metrics_http.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

#include "fleet/fleet.h"
#include "base/os.h"
#include "shm/stats_reader.h"

struct metrics_http {
    int lfd;
    int efd; /* eventfd: written once by metrics_http_stop */
    pthread_t th;
    unsigned max_conns;
    char instance[64];
    const struct fleet_daemon *fleet; /* --queue: its health (fleet.h), or NULL */
    char state_dir[4096];             /* the job store's directory; "": --no-store */
};

int metrics_http_parse(const char *spec, struct sockaddr_storage *ss, socklen_t *len, char *err,
                       size_t errlen)
{
    char host[64];
    const char *colon, *port;
    struct addrinfo hints, *ai = NULL;
    size_t hl;
    int rc;

    colon = spec ? strrchr(spec, ':') : NULL;
    if (!colon || colon == spec || !colon[1] || strspn(colon + 1, "0123456789") != strlen(colon + 1) ||
        strlen(colon + 1) > 5 || atoi(colon + 1) > 65535)
        goto bad;
    port = colon + 1;
    hl = (size_t)(colon - spec);
    if (spec[0] == '[') { /* [IPv6]:PORT */
        if (hl < 3 || spec[hl - 1] != ']') goto bad;
        spec++;
        hl -= 2;
    } else if (memchr(spec, ':', hl)) {
        goto bad; /* IPv6 without brackets: which colon is the port's? */
    }
    if (hl >= sizeof(host)) goto bad;
    memcpy(host, spec, hl);
    host[hl] = '\0';
    memset(&hints, 0, sizeof(hints));
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_NUMERICHOST | AI_NUMERICSERV | AI_PASSIVE;
    if ((rc = getaddrinfo(host, port, &hints, &ai)) || !ai) goto bad;
    if (ss) {
        memset(ss, 0, sizeof(*ss));
        memcpy(ss, ai->ai_addr, ai->ai_addrlen);
    }
    if (len) *len = ai->ai_addrlen;
    freeaddrinfo(ai);
    return 0;
bad:
    snprintf(err, errlen,
             "--metrics-listen %s: expected IPV4:PORT or [IPV6]:PORT, numeric "
             "(e.g. 127.0.0.1:9464)",
             spec ? spec : "(missing)");
    return -EINVAL;
}

static void send_all(int fd, const char *p, size_t n)
{
    while (n) {
        ssize_t w = send(fd, p, n, MSG_NOSIGNAL);

        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) return; /* gone, or SO_SNDTIMEO passed: drop the rest */
        p += w;
        n -= (size_t)w;
    }
}

static void answer(int fd, int code, const char *ctype, const char *body, size_t blen, int head_only)
{
    const char *reason = code == 200 ? "OK"
        : code == 400                ? "Bad Request"
        : code == 404                ? "Not Found"
        : code == 405                ? "Method Not Allowed"
                                     : "Internal Server Error";
    char h[256];
    int n = snprintf(h, sizeof(h),
                     "HTTP/1.0 %d %s\r\nContent-Type: %s\r\n"
                     "Content-Length: %zu\r\n%sConnection: close\r\n\r\n",
                     code, reason, ctype, blen, code == 405 ? "Allow: GET, HEAD\r\n" : "");

    send_all(fd, h, (size_t)n);
    if (!head_only) send_all(fd, body, blen);
}

static void answer_text(int fd, int code, const char *msg)
{
    answer(fd, code, "text/plain; charset=utf-8", msg, strlen(msg), 0);
}

/* --queue: the fleet thread's view of its database (fleet_daemon_health), the same
 * numbers as `cuzk status`'s "fleet". Only cuzkd knows them (the stats page is the
 * stages'), so `cuzk metrics` does not have them. */
static void fleet_prometheus(FILE *f, const struct metrics_http *m)
{
    struct fleet_health h;

    fleet_daemon_health(m->fleet, &h);
    fprintf(f,
            "# HELP cuzk_fleet_db_reachable 1 when the fleet queue's last database call "
            "succeeded.\n# TYPE cuzk_fleet_db_reachable gauge\n"
            "cuzk_fleet_db_reachable{instance_name=\"%s\"} %d\n",
            m->instance, h.db_reachable);
    fprintf(f,
            "# HELP cuzk_fleet_db_errors_total Fleet queue database calls that failed.\n"
            "# TYPE cuzk_fleet_db_errors_total counter\n"
            "cuzk_fleet_db_errors_total{instance_name=\"%s\"} %llu\n",
            m->instance, (unsigned long long)h.db_errors);
    fprintf(f,
            "# HELP cuzk_fleet_reconnects_total Times the fleet queue's database came "
            "back after failing.\n# TYPE cuzk_fleet_reconnects_total counter\n"
            "cuzk_fleet_reconnects_total{instance_name=\"%s\"} %llu\n",
            m->instance, (unsigned long long)h.reconnects);
}

/* The job store's file system (statvfs of its directory at each scrape: a few
 * microseconds), for the "disk nearly full" alert: the store fsyncs every submit, and
 * a full disk fails submits and partition updates. Space an unprivileged user may
 * use (f_bavail), as cuzkd runs unprivileged. Nothing when statvfs fails (the
 * directory is gone): the alert rules treat absence as a separate signal. */
static void store_prometheus(FILE *f, const struct metrics_http *m)
{
    struct statvfs v;

    if (!m->state_dir[0] || statvfs(m->state_dir, &v)) return;
    fprintf(f,
            "# HELP cuzk_store_avail_bytes Free space for cuzkd on the job store's file "
            "system.\n# TYPE cuzk_store_avail_bytes gauge\n"
            "cuzk_store_avail_bytes{instance_name=\"%s\"} %llu\n",
            m->instance, (unsigned long long)v.f_bavail * v.f_frsize);
    fprintf(f,
            "# HELP cuzk_store_size_bytes Size of the job store's file system.\n"
            "# TYPE cuzk_store_size_bytes gauge\n"
            "cuzk_store_size_bytes{instance_name=\"%s\"} %llu\n",
            m->instance, (unsigned long long)v.f_blocks * v.f_frsize);
}

/* Answer one whole request head (NUL-terminated, modified here). */
static void respond(int fd, char *head, const struct metrics_http *m)
{
    char *sp1, *sp2, *q, *eol;
    int head_only;

    /* Request line: METHOD SP TARGET SP HTTP/x.y */
    eol = head + strcspn(head, "\r\n");
    *eol = '\0';
    sp1 = strchr(head, ' ');
    sp2 = sp1 ? strchr(sp1 + 1, ' ') : NULL;
    if (!sp1 || !sp2 || sp2 == sp1 + 1 || strncmp(sp2 + 1, "HTTP/", 5) || strchr(sp2 + 1, ' ')) {
        answer_text(fd, 400, "malformed request line\n");
        return;
    }
    *sp1 = *sp2 = '\0';
    if ((q = strchr(sp1 + 1, '?'))) *q = '\0';
    head_only = !strcmp(head, "HEAD");
    if (strcmp(head, "GET") && !head_only) {
        answer_text(fd, 405, "only GET and HEAD\n");
        return;
    }
    if (strcmp(sp1 + 1, "/metrics")) {
        static const char nf[] = "not found: the metrics are at /metrics\n";

        answer(fd, 404, "text/plain; charset=utf-8", nf, sizeof(nf) - 1, head_only);
        return;
    }
    {
        struct stats_reading t;
        char *body = NULL;
        size_t blen = 0;
        FILE *f = open_memstream(&body, &blen);

        if (!f || stats_reading_take(&t, m->instance)) {
            if (f) fclose(f);
            free(body);
            answer_text(fd, 500, "out of memory\n");
            return;
        }
        stats_reading_prometheus(f, &t); /* the same text as `cuzk metrics` */
        stats_reading_free(&t);
        if (m->fleet) fleet_prometheus(f, m);
        store_prometheus(f, m);
        if (fclose(f)) {
            free(body);
            answer_text(fd, 500, "out of memory\n");
            return;
        }
        answer(fd, 200, "text/plain; version=0.0.4; charset=utf-8", body, blen, head_only);
        free(body);
    }
}

/* One connection of the thread's table: its head so far and its deadline. */
struct mconn {
    int fd; /* -1: free */
    size_t got;
    uint64_t deadline; /* os_now_ns, in ms */
    uint64_t since;    /* accepted at (the oldest is dropped for a newcomer) */
    char head[METRICS_HTTP_HEAD_MAX + 1];
};

static void mconn_drop(struct mconn *c)
{
    shutdown(c->fd, SHUT_WR);
    close(c->fd);
    c->fd = -1;
}

/* Read what c has; 1 when it is done with (answered or dropped). */
static int mconn_read(struct mconn *c, const struct metrics_http *m)
{
    for (;;) {
        ssize_t r;

        c->head[c->got] = '\0';
        if (strstr(c->head, "\r\n\r\n") || strstr(c->head, "\n\n")) {
            int fl = fcntl(c->fd, F_GETFL);
            struct timeval tv = { METRICS_HTTP_READ_MS / 1000, (METRICS_HTTP_READ_MS % 1000) * 1000 };

            /* The answer is some KB (fits the socket buffer); a client that does
             * not read it gets METRICS_HTTP_READ_MS. */
            fcntl(c->fd, F_SETFL, fl & ~O_NONBLOCK);
            setsockopt(c->fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
            respond(c->fd, c->head, m);
            return 1;
        }
        if (c->got == METRICS_HTTP_HEAD_MAX) {
            answer_text(c->fd, 400, "request head too large\n");
            return 1;
        }
        r = recv(c->fd, c->head + c->got, METRICS_HTTP_HEAD_MAX - c->got, MSG_DONTWAIT);
        if (r < 0 && errno == EINTR) continue;
        if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return 0;
        if (r <= 0) return 1; /* closed before a whole head: nobody to answer */
        c->got += (size_t)r;
    }
}

/* Up to max_conns connections at once, polled together, each with its own
 * METRICS_HTTP_READ_MS to send its head: slow clients hold their slots, never the
 * others' (a slowloris cannot delay a scrape). With the table full, a newcomer takes
 * the slot of the oldest connection. */
static void *serve_loop(void *arg)
{
    struct metrics_http *m = arg;
    unsigned n = m->max_conns;
    struct mconn *c = calloc(n, sizeof(*c));
    struct pollfd *p = calloc(n + 2, sizeof(*p));

    if (!c || !p) {
        free(c);
        free(p);
        return NULL;
    }
    for (unsigned i = 0; i < n; i++) c[i].fd = -1;
    for (;;) {
        uint64_t now = os_now_ns() / 1000000u, next = UINT64_MAX;
        int timeout, rc;

        p[0] = (struct pollfd){ m->efd, POLLIN, 0 };
        p[1] = (struct pollfd){ m->lfd, POLLIN, 0 };
        for (unsigned i = 0; i < n; i++) {
            p[i + 2] = (struct pollfd){ c[i].fd, POLLIN, 0 };
            if (c[i].fd >= 0 && c[i].deadline < next) next = c[i].deadline;
        }
        timeout = next == UINT64_MAX ? -1 : next <= now ? 0 : (int)(next - now);
        rc = poll(p, n + 2, timeout);
        if (rc < 0 && errno != EINTR) break;
        if (rc > 0 && p[0].revents) break;
        now = os_now_ns() / 1000000u;
        for (unsigned i = 0; i < n; i++) {
            if (c[i].fd < 0) continue;
            if (rc > 0 && p[i + 2].revents && mconn_read(&c[i], m))
                mconn_drop(&c[i]);
            else if (now >= c[i].deadline)
                mconn_drop(&c[i]); /* too slow: dropped without an answer */
        }
        if (rc <= 0 || !p[1].revents) continue;
        for (unsigned k = 0; k < n; k++) { /* a batch of newcomers */
            int fd = accept4(m->lfd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
            unsigned slot = 0;

            if (fd < 0) {
                if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
                    struct timespec ts = { 0, 100000000 }; /* out of fds */

                    nanosleep(&ts, NULL);
                }
                break;
            }
            for (unsigned i = 0; i < n; i++) {
                if (c[i].fd < 0) {
                    slot = i;
                    break;
                }
                if (c[i].since < c[slot].since) slot = i;
            }
            if (c[slot].fd >= 0) mconn_drop(&c[slot]);
            c[slot].fd = fd;
            c[slot].got = 0;
            c[slot].since = now;
            c[slot].deadline = now + METRICS_HTTP_READ_MS;
            if (mconn_read(&c[slot], m)) /* often already whole */
                mconn_drop(&c[slot]);
        }
    }
    for (unsigned i = 0; i < n; i++)
        if (c[i].fd >= 0) mconn_drop(&c[i]);
    free(c);
    free(p);
    return NULL;
}

int metrics_http_start(struct metrics_http **out, const char *spec, const char *instance,
                       const struct fleet_daemon *fleet, const char *state_dir, unsigned max_conns,
                       char *bound, size_t boundlen, char *err, size_t errlen)
{
    struct sockaddr_storage ss;
    socklen_t len;
    struct metrics_http *m;
    int one = 1, rc;

    *out = NULL;
    if ((rc = metrics_http_parse(spec, &ss, &len, err, errlen))) return rc;
    m = calloc(1, sizeof(*m));
    if (!m) {
        snprintf(err, errlen, "--metrics-listen: out of memory");
        return -ENOMEM;
    }
    snprintf(m->instance, sizeof(m->instance), "%s", instance);
    m->fleet = fleet;
    snprintf(m->state_dir, sizeof(m->state_dir), "%s", state_dir ? state_dir : "");
    m->max_conns = max_conns ? max_conns : 16;
    m->lfd = -1;
    m->efd = eventfd(0, EFD_CLOEXEC);
    /* Non-blocking: serve_loop accepts a batch of newcomers until EAGAIN. */
    m->lfd = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (m->efd < 0 || m->lfd < 0) goto fail;
    setsockopt(m->lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (ss.ss_family == AF_INET6) setsockopt(m->lfd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one));
    if (bind(m->lfd, (struct sockaddr *)&ss, len) || listen(m->lfd, 128)) goto fail;
    if (bound) {
        char a[INET6_ADDRSTRLEN] = "?";
        uint16_t port = 0;

        len = sizeof(ss);
        getsockname(m->lfd, (struct sockaddr *)&ss, &len);
        if (ss.ss_family == AF_INET) {
            inet_ntop(AF_INET, &((struct sockaddr_in *)&ss)->sin_addr, a, sizeof(a));
            port = ntohs(((struct sockaddr_in *)&ss)->sin_port);
            snprintf(bound, boundlen, "%s:%u", a, port);
        } else {
            inet_ntop(AF_INET6, &((struct sockaddr_in6 *)&ss)->sin6_addr, a, sizeof(a));
            port = ntohs(((struct sockaddr_in6 *)&ss)->sin6_port);
            snprintf(bound, boundlen, "[%s]:%u", a, port);
        }
    }
    if ((rc = pthread_create(&m->th, NULL, serve_loop, m))) {
        errno = rc;
        goto fail;
    }
    *out = m;
    return 0;
fail:
    rc = -errno;
    snprintf(err, errlen, "--metrics-listen %s: %s", spec, strerror(errno));
    if (m->lfd >= 0) close(m->lfd);
    if (m->efd >= 0) close(m->efd);
    free(m);
    return rc;
}

void metrics_http_stop(struct metrics_http *m)
{
    uint64_t one = 1;

    if (!m) return;
    (void)!write(m->efd, &one, sizeof(one));
    pthread_join(m->th, NULL);
    close(m->lfd);
    close(m->efd);
    free(m);
}
