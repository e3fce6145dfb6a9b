/* ctl_client.c — one request on cuzkd's control socket (ctl_client.h). */
#include "proto/ctl_client.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "proto/protocol.h"

#define FDS_PER_MSG 253 /* the kernel's SCM_MAX_FD */

int proto_connect(struct proto_conn *c, const char *path)
{
    struct sockaddr_un a = { .sun_family = AF_UNIX };

    c->fd = -1;
    if (strlen(path) >= sizeof(a.sun_path)) {
        snprintf(c->err, sizeof(c->err), "socket path %s is too long", path);
        return -ENAMETOOLONG;
    }
    memcpy(a.sun_path, path, strlen(path) + 1);
    c->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (c->fd < 0 || connect(c->fd, (struct sockaddr *)&a, sizeof(a))) {
        int e = errno;

        snprintf(c->err, sizeof(c->err), "%s", strerror(e));
        if (c->fd >= 0) close(c->fd);
        c->fd = -1;
        return -e;
    }
    return 0;
}

/* The descriptors ride on the line's first bytes, FDS_PER_MSG per sendmsg, one byte
 * each; the rest of the line follows in plain sends. */
static int send_line(struct proto_conn *c, const char *s, size_t n, const int *fds, size_t nfds)
{
    size_t off = 0;

    for (size_t sent = 0; sent < nfds && off < n;) {
        size_t k = nfds - sent < FDS_PER_MSG ? nfds - sent : FDS_PER_MSG;
        union {
            struct cmsghdr h;
            char b[CMSG_SPACE(FDS_PER_MSG * sizeof(int))];
        } cb;
        struct iovec iov = { (char *)s + off, 1 };
        struct msghdr mh = { .msg_iov = &iov,
                             .msg_iovlen = 1,
                             .msg_control = cb.b,
                             .msg_controllen = CMSG_SPACE(k * sizeof(int)) };
        struct cmsghdr *cm = CMSG_FIRSTHDR(&mh);

        memset(cb.b, 0, sizeof(cb.b));
        cm->cmsg_level = SOL_SOCKET;
        cm->cmsg_type = SCM_RIGHTS;
        cm->cmsg_len = CMSG_LEN(k * sizeof(int));
        memcpy(CMSG_DATA(cm), fds + sent, k * sizeof(int));
        if (sendmsg(c->fd, &mh, MSG_NOSIGNAL) != 1) {
            if (errno == EINTR) continue;
            return -errno;
        }
        sent += k;
        off++;
    }
    while (off < n) {
        ssize_t w = send(c->fd, s + off, n - off, MSG_NOSIGNAL);

        if (w < 0) {
            if (errno == EINTR) continue;
            return -errno;
        }
        off += (size_t)w;
    }
    return 0;
}

static json_t *read_reply(struct proto_conn *c)
{
    json_error_t je;
    size_t seen = 0; /* bytes of c->buf already looked through: no newline among them */

    for (;;) {
        char *nl = c->len > seen ? memchr(c->buf + seen, '\n', c->len - seen) : NULL;

        if (nl) {
            size_t line = (size_t)(nl - c->buf);
            json_t *r = json_loadb(c->buf, line, 0, &je);

            memmove(c->buf, nl + 1, c->len - line - 1);
            c->len -= line + 1;
            if (!r) snprintf(c->err, sizeof(c->err), "cuzkd sent a reply that is not JSON: %s", je.text);
            return r;
        }
        if (c->len >= PROTO_REPLY_MAX) { /* no line of cuzkd's is this long */
            snprintf(c->err, sizeof(c->err), "cuzkd's reply is longer than %u bytes", PROTO_REPLY_MAX);
            return NULL;
        }
        if (c->len + 65536 > c->cap) {
            size_t nc = c->cap ? 2 * c->cap : 65536 * 4;
            char *b;

            if (nc > PROTO_REPLY_MAX + 65536) nc = PROTO_REPLY_MAX + 65536;
            if (!(b = realloc(c->buf, nc))) {
                snprintf(c->err, sizeof(c->err), "out of memory");
                return NULL;
            }
            c->buf = b;
            c->cap = nc;
        }
        seen = c->len;
        ssize_t r = recv(c->fd, c->buf + c->len, c->cap - c->len, 0);

        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) {
            snprintf(c->err, sizeof(c->err), "cuzkd closed the connection without a reply%s%s",
                     r < 0 ? ": " : "", r < 0 ? strerror(errno) : "");
            return NULL;
        }
        c->len += (size_t)r;
    }
}

json_t *proto_request(struct proto_conn *c, json_t *req, const int *fds, size_t nfds)
{
    char *s = json_dumps(req, JSON_COMPACT);
    size_t n;
    int rc;

    json_decref(req);
    if (!s) {
        snprintf(c->err, sizeof(c->err), "out of memory");
        return NULL;
    }
    n = strlen(s);
    s[n] = '\n'; /* replaces the NUL; sent with n + 1 bytes */
    rc = send_line(c, s, n + 1, fds, nfds);
    free(s);
    if (rc) {
        snprintf(c->err, sizeof(c->err), "sending to cuzkd: %s", strerror(-rc));
        return NULL;
    }
    return read_reply(c);
}

json_t *proto_read(struct proto_conn *c)
{
    return read_reply(c);
}

void proto_close(struct proto_conn *c)
{
    if (c->fd >= 0) close(c->fd);
    free(c->buf);
    c->fd = -1;
    c->buf = NULL;
    c->len = c->cap = 0;
}
