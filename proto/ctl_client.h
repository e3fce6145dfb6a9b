/* ctl_client.h — one request on cuzkd's control socket, as every client sends it
 * (proto/ctl_client.c): the `cuzk` client and the HTTP API process (cuzk-api) alike.
 * protocol.h says what travels: a JSON line, its descriptors riding on its first bytes
 * (SCM_RIGHTS), one JSON line back. */
#ifndef CUZK_CTL_CLIENT_H
#define CUZK_CTL_CLIENT_H

#include <stddef.h>

#include <jansson.h>

/* One connection's bytes read but not yet taken as a reply line. */
struct proto_conn {
    int fd; /* -1: not connected */
    char *buf;
    size_t len, cap;
    char err[256]; /* why the last call failed */
};

/* Connect to the socket at path (fd CLOEXEC). 0 or -errno (c->err says why). */
int proto_connect(struct proto_conn *c, const char *path);

/* Send req (its reference taken) with descriptors fds[0..nfds), read one reply line.
 * NULL on a broken connection or a reply that is not JSON (c->err says which). */
json_t *proto_request(struct proto_conn *c, json_t *req, const int *fds, size_t nfds);

/* The next line on the connection (a subscription's event): NULL as proto_request. */
json_t *proto_read(struct proto_conn *c);

/* Close and free; c is ready for proto_connect again. */
void proto_close(struct proto_conn *c);

#endif
