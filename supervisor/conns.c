/* conns.c — control connections (sup.h): accept with per-uid limits, read request
 * lines and the descriptors passed with them, queue and send replies. */
#include "sup.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "supervisor/owners.h"

/* Close the first n queued descriptors of k and drop them from its queue. */
static void conn_fds_drop(struct conn *k, uint32_t n)
{
    if (n > k->n_fds) n = k->n_fds;
    for (uint32_t i = 0; i < n; i++) close(k->fds[i]);
    memmove(k->fds, k->fds + n, (k->n_fds - n) * sizeof(*k->fds));
    k->n_fds -= n;
}

void conn_close(struct sup *s, struct conn *k)
{
    if (k->fd < 0) return;
    conn_fds_drop(k, k->n_fds);
    free(k->fds);
    free(k->groups);
    k->fds = NULL;
    k->groups = NULL;
    k->n_groups = 0;
    k->fd_trouble = 0;
    if (k->in_armed) cancel_poll(s, ev_data(EV_CONN, k->gen, (uint32_t)(k - s->conns)));
    if (k->out_armed) cancel_poll(s, ev_data(EV_CONN_OUT, k->gen, (uint32_t)(k - s->conns)));
    close(k->fd);
    control_framer_free(&k->fr);
    free(k->out);
    k->out = NULL;
    k->out_len = k->out_off = 0;
    free(k->defer);
    k->defer = NULL;
    k->defer_len = 0;
    k->pending = NULL; /* its intake ends on its own and finds the connection gone */
    k->fd = -1;
    k->gen++;
    k->waiting = k->drain_wait = k->watching = k->in_armed = k->out_armed = k->close_after = 0;
}

void conn_flush(struct sup *s, struct conn *k)
{
    while (k->out_off < k->out_len) {
        ssize_t w = send(k->fd, k->out + k->out_off, k->out_len - k->out_off, MSG_NOSIGNAL | MSG_DONTWAIT);

        if (w < 0) {
            if (errno == EAGAIN || errno == EWOULDBLOCK) {
                if (!k->out_armed) {
                    arm_poll(s, k->fd, POLLOUT, ev_data(EV_CONN_OUT, k->gen, (uint32_t)(k - s->conns)));
                    k->out_armed = 1;
                }
                return;
            }
            if (errno == EINTR) continue;
            conn_close(s, k);
            return;
        }
        k->out_off += (size_t)w;
    }
    k->out_len = k->out_off = 0;
    k->active_ns = os_now_ns();
    if (k->close_after) conn_close(s, k);
}

/* Queue a reply line (taken: freed here). */
void conn_reply(struct sup *s, struct conn *k, char *line)
{
    size_t n;
    char *b;

    if (!line) line = strdup("{\"ok\":false,\"error\":\"internal\",\"message\":\"out of memory\"}\n");
    if (!line || k->fd < 0) {
        free(line);
        return;
    }
    n = strlen(line);
    if (k->out_len + n > REPLY_MAX) {
        free(line);
        conn_close(s, k); /* a client that never reads */
        return;
    }
    b = realloc(k->out, k->out_len + n);
    if (!b) {
        free(line);
        return;
    }
    memcpy(b + k->out_len, line, n);
    k->out = b;
    k->out_len += n;
    free(line);
    conn_flush(s, k);
}

void reply_err(struct sup *s, struct conn *k, const char *code, const char *msg)
{
    conn_reply(s, k, control_reply_error(code, msg));
}

/* A line read behind a submit still being checked: run in order once it ends. At most
 * one read's worth waits here (handle_conn_in stops reading meanwhile). 1: k was
 * closed (out of memory). */
static int conn_defer(struct sup *s, struct conn *k, const char *line, size_t len)
{
    char *d = realloc(k->defer, k->defer_len + len + 1);

    if (!d) {
        conn_close(s, k);
        return 1;
    }
    memcpy(d + k->defer_len, line, len);
    d[k->defer_len + len] = '\n';
    k->defer = d;
    k->defer_len += len + 1;
    return 0;
}

/* The request's descriptors are the first r->n_fds of k's queue (control.h): 0 when
 * they are there, else 1 with the queue dropped and the request refused. */
static int fds_missing(struct sup *s, struct conn *k, const struct control_req *r)
{
    char m[256];

    if (!r->n_fds || (!k->fd_trouble && r->n_fds <= k->n_fds)) return 0;
    if (k->fd_trouble)
        snprintf(m, sizeof(m),
                 "descriptors were lost on this connection (more "
                 "than a request may pass, or a truncated SCM_RIGHTS): reconnect");
    else
        snprintf(m, sizeof(m),
                 "the request says \"fds\":%u but %u descriptor(s) "
                 "came with it: send them over SCM_RIGHTS with the request's bytes",
                 r->n_fds, k->n_fds);
    conn_fds_drop(k, k->n_fds);
    k->fd_trouble = 0;
    reply_err(s, k, PROTO_E_BAD_REQUEST, m);
    return 1;
}

struct line_ctx {
    struct sup *s;
    struct conn *k;
};

/* One request line of a connection (control_framer_feed; NULL: a line too long).
 * Returns 1 when the connection was closed. */
static int on_line(void *arg, const char *line, size_t len)
{
    struct line_ctx *x = arg;
    struct sup *s = x->s;
    struct conn *k = x->k;
    struct control_req r;
    struct control_err e;

    if (line && k->pending) return conn_defer(s, k, line, len);
    if (!line) {
        char m[96];

        snprintf(m, sizeof(m), "request line longer than %d bytes: dropped", PROTO_LINE_MAX);
        conn_fds_drop(k, k->n_fds);
        reply_err(s, k, PROTO_E_TOO_LONG, m);
        return k->fd < 0;
    }
    if (control_parse(line, len, &r, &e)) {
        /* Whatever it passed came with its bytes: do not let a later request
         * take them as its own. */
        conn_fds_drop(k, k->n_fds);
        reply_err(s, k, e.code, e.message);
        return k->fd < 0;
    }
    if (fds_missing(s, k, &r)) {
        control_req_free(&r);
        return k->fd < 0;
    }
    run_request(s, k, &r);
    /* What the request needed of them is copied or duplicated: close the client's. */
    if (k->fd >= 0) conn_fds_drop(k, r.n_fds);
    control_req_free(&r);
    return k->fd < 0;
}

static int peer_allowed(const struct sup *s, int fd, char *why, size_t len)
{
    struct ucred cr;
    socklen_t sl = sizeof(cr);

    if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &sl)) {
        snprintf(why, len, "cannot read peer credentials: %s", strerror(errno));
        return 0;
    }
    if (cr.uid == 0 || cr.uid == geteuid()) return 1;
    if (s->c->have_api_uid && cr.uid == s->c->api_uid) return 1;
    if (s->c->have_gid) {
        struct passwd *pw = getpwuid(cr.uid);
        gid_t groups[256];
        int ng = 256;

        if (cr.gid == s->c->gid) return 1;
        if (pw && getgrouplist(pw->pw_name, pw->pw_gid, groups, &ng) >= 0)
            for (int i = 0; i < ng; i++)
                if (groups[i] == s->c->gid) return 1;
    }
    snprintf(why, len, "uid %u may not use this cuzkd (same user, root%s%s only)", (unsigned)cr.uid,
             s->c->have_gid ? " or group " : "", s->c->group);
    return 0;
}

/* A slot for a new connection of uid, or NULL with why set: ordinary users share
 * MAX_CONNS slots, at most --conns-per-uid each; root and cuzkd's own uid may also
 * take the RESERVED_CONNS others, so a crowd of idle connections never locks them out.
 * The HTTP API child runs as cuzkd's uid but takes ordinary slots (priv 0 here, no
 * per-uid cap: it holds at most its own API_CTL_CONNS and one watch): whatever its
 * tenants do, the reserve stays the operator's. */
static struct conn *conn_slot(struct sup *s, uid_t uid, int priv, int api, char *why, size_t len)
{
    struct conn *k = NULL;
    uint32_t mine = 0, ordinary = 0;

    for (int i = 0; i < N_CONNS; i++) {
        struct conn *c = &s->conns[i];

        if (c->fd < 0) {
            if (!k) k = c;
            continue;
        }
        if (c->uid == uid) mine++;
        if (!c->reserve_ok) ordinary++;
    }
    if (!priv && !api && mine >= s->c->conns_per_uid) {
        snprintf(why, len, "busy: too many connections for uid %u (--conns-per-uid %u)", (unsigned)uid,
                 s->c->conns_per_uid);
        return NULL;
    }
    if (!k || (!priv && ordinary >= MAX_CONNS)) {
        snprintf(why, len, "busy: too many control connections (%d); retry", priv ? N_CONNS : MAX_CONNS);
        return NULL;
    }
    return k;
}

/* The peer's supplementary groups (SO_PEERGROUPS, Linux 4.13): the out directory
 * check counts them as the kernel would for the client. None when unreadable: then
 * only its owner and other bits can admit it (refusing, never the reverse). */
static void conn_groups(struct conn *k)
{
    socklen_t len = 64 * sizeof(gid_t);

    for (int tries = 0; tries < 2; tries++) {
        gid_t *g = malloc(len ? len : sizeof(gid_t));

        if (!g) return;
        if (!getsockopt(k->fd, SOL_SOCKET, SO_PEERGROUPS, g, &len)) {
            k->groups = g;
            k->n_groups = len / sizeof(gid_t);
            return;
        }
        free(g);
        if (errno != ERANGE) return;
    }
}

void handle_listen(struct sup *s)
{
    for (;;) {
        int fd = accept4(s->lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
        struct conn *k = NULL;
        struct ucred cr;
        socklen_t sl = sizeof(cr);
        char why[160];
        int priv, api, api_user;

        if (fd < 0 && (errno == EMFILE || errno == ENFILE)) {
            /* At the descriptor limit the pending connection stays pending, so the
             * listener is ready again at once: re-arming it spun the loop at 93%
             * CPU. The spare descriptor lets one connection in: root's is served
             * (the operator gets through), another is told why and closed. Then
             * the listener rests until the next tick. */
            if (s->spare_fd >= 0) {
                close(s->spare_fd);
                s->spare_fd = -1;
                fd = accept4(s->lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
            }
            if (fd >= 0 &&
                (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &sl) ||
                 !(cr.uid == 0 || cr.uid == geteuid()))) {
                char *m = control_reply_error(PROTO_E_BUSY,
                                              "cuzkd is out of descriptors: "
                                              "retry later");

                if (m) (void)!send(fd, m, strlen(m), MSG_NOSIGNAL | MSG_DONTWAIT);
                free(m);
                close(fd);
                fd = -1;
            }
            if (fd < 0) {
                if (s->spare_fd < 0) s->spare_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
                s->listen_retry_ns = os_now_ns() + TICK_NS;
                return; /* not re-armed: the tick does */
            }
            /* root's: served below; the spare is reopened when descriptors free */
            s->listen_retry_ns = os_now_ns() + TICK_NS;
        }
        if (fd < 0) break;
        if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &sl)) {
            close(fd);
            continue;
        }
        priv = cr.uid == 0 || cr.uid == geteuid();
        /* --api-user: the HTTP API under a user of its own acts for its tenants as
         * the privileged do, but may not operate cuzkd (operator_request). Each of
         * its connections is an API connection, as the child's are: not held to
         * --conns-per-uid (it opens one per request in flight), in ordinary slots. */
        api_user = !priv && s->c->have_api_uid && cr.uid == s->c->api_uid;
        api = api_user || (priv && s->api.pid > 0 && cr.pid == s->api.pid);
        if (!(k = conn_slot(s, cr.uid, priv && !api, api, why, sizeof(why)))) {
            char *m = control_reply_error(PROTO_E_BUSY, why);

            if (m) (void)!send(fd, m, strlen(m), MSG_NOSIGNAL | MSG_DONTWAIT);
            free(m);
            close(fd);
            continue;
        }
        k->fd = fd;
        k->uid = cr.uid;
        k->gid = cr.gid;
        conn_groups(k);
        k->privileged = priv || api_user;
        k->api_user = api_user;
        k->reserve_ok = priv && !api;
        k->active_ns = os_now_ns();
        memset(&k->fr, 0, sizeof(k->fr));
        if (!peer_allowed(s, fd, why, sizeof(why))) {
            k->close_after = 1;
            reply_err(s, k, PROTO_E_PERM, why);
            continue;
        }
        arm_poll(s, fd, POLLIN, ev_data(EV_CONN, k->gen, (uint32_t)(k - s->conns)));
        k->in_armed = 1;
    }
    if (!daemon_fsm_stopping(&s->life)) {
        arm_poll(s, s->lfd, POLLIN, ev_data(EV_LISTEN, 0, 0));
        s->listen_armed = 1;
    }
}

/* Descriptors queued on connections, and held by intakes being checked, of uid
 * (any ordinary uid when all is set). */
static uint32_t fds_held(const struct sup *s, uid_t uid, int all)
{
    uint32_t n = 0;

    for (int i = 0; i < N_CONNS; i++)
        if (s->conns[i].fd >= 0 && !s->conns[i].privileged && (all || s->conns[i].uid == uid))
            n += s->conns[i].n_fds;
    for (const struct intake *t = s->intakes; t; t = t->next)
        if (!owners_privileged(t->uid) && (all || t->uid == uid)) n += (uint32_t)t->n_fds;
    return n;
}

/* Queue the descriptors that came with one recvmsg. A connection holds at most
 * max_parts + CONN_FDS_EXTRA unclaimed: beyond that (or when the kernel truncated
 * them) they are closed and the connection's next request with descriptors is
 * refused, since the queue no longer lines up with the requests. */
static void conn_fds_take(struct sup *s, struct conn *k, struct msghdr *mh)
{
    const uint32_t cap = s->pl.config->max_parts + CONN_FDS_EXTRA;
    /* An ordinary uid holds at most two requests' worth over all its connections
     * (one being checked, the next queued), and all of them together half the
     * descriptor limit: 8 connections x 4112 descriptors reached the limit, and
     * then root got no answer either. Root and cuzkd's uid are not counted. */
    uint32_t uid_n = k->privileged ? 0 : fds_held(s, k->uid, 0),
             all_n = k->privileged ? 0 : fds_held(s, 0, 1);

    if (mh->msg_flags & MSG_CTRUNC) k->fd_trouble = 1;
    for (struct cmsghdr *c = CMSG_FIRSTHDR(mh); c; c = CMSG_NXTHDR(mh, c)) {
        size_t nf;
        int *in;

        if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) continue;
        nf = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
        in = (int *)CMSG_DATA(c);
        for (size_t i = 0; i < nf; i++) {
            int fd;

            memcpy(&fd, &in[i], sizeof(fd));
            if (!k->privileged && (uid_n >= 2 * cap || all_n >= s->fd_budget)) k->fd_trouble = 1;
            uid_n++;
            all_n++;
            if (k->fd_trouble || k->n_fds >= cap) {
                k->fd_trouble = 1;
                close(fd);
                continue;
            }
            if (!k->fds && !(k->fds = malloc(cap * sizeof(*k->fds)))) {
                k->fd_trouble = 1;
                close(fd);
                continue;
            }
            k->fds[k->n_fds++] = fd;
        }
    }
}

void handle_conn_in(struct sup *s, struct conn *k)
{
    char buf[16384];
    struct line_ctx x = { s, k };
    uint32_t gen = k->gen;

    k->in_armed = 0;
    for (;;) {
        union {
            struct cmsghdr h;
            char b[CMSG_SPACE(253 * sizeof(int))]; /* SCM_MAX_FD per message */
        } cb;
        struct iovec iov = { buf, sizeof(buf) };
        struct msghdr mh = {
            .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cb.b, .msg_controllen = sizeof(cb.b)
        };
        ssize_t n = recvmsg(k->fd, &mh, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);

        if (n > 0) conn_fds_take(s, k, &mh);

        if (n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) {
            /* Peer closed. Replies still queued are dropped with it. */
            conn_close(s, k);
            return;
        }
        if (n < 0) {
            if (errno == EINTR) continue;
            break;
        }
        k->active_ns = os_now_ns();
        if (control_framer_feed(&k->fr, buf, (size_t)n, on_line, &x) || k->fd < 0 || k->gen != gen) return;
        if (!k->fr.len && !k->n_fds)
            k->line_ns = 0;
        else if (!k->line_ns)
            k->line_ns = k->active_ns;
        if (k->pending) return; /* read again once its submit ends (conn_resume) */
    }
    arm_poll(s, k->fd, POLLIN, ev_data(EV_CONN, k->gen, (uint32_t)(k - s->conns)));
    k->in_armed = 1;
}

/* A connection's submit ended: run the lines that waited behind it, then read again. */
void conn_resume(struct sup *s, struct conn *k)
{
    struct line_ctx x = { s, k };
    uint32_t gen = k->gen;

    while (k->fd >= 0 && k->gen == gen && !k->pending && k->defer_len) {
        size_t n = (size_t)((char *)memchr(k->defer, '\n', k->defer_len) - k->defer);
        char *line = malloc(n + 1);

        if (!line) {
            conn_close(s, k);
            return;
        }
        memcpy(line, k->defer, n);
        line[n] = '\0';
        k->defer_len -= n + 1;
        memmove(k->defer, k->defer + n + 1, k->defer_len);
        on_line(&x, line, n);
        free(line);
    }
    if (k->fd >= 0 && k->gen == gen && !k->pending && !k->in_armed) {
        arm_poll(s, k->fd, POLLIN, ev_data(EV_CONN, k->gen, (uint32_t)(k - s->conns)));
        k->in_armed = 1;
    }
}
