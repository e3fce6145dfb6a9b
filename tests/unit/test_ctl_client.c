/* test_ctl_client.c — the client's side of the control socket (proto/ctl_client.h)
 * against a peer on a real Unix socket that answers as told: a reply line is read
 * whole, and a peer whose reply never ends is given up at PROTO_REPLY_MAX bytes, not
 * followed into all of the client's memory. */
#include <check.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "proto/ctl_client.h"
#include "proto/protocol.h"

#include "helper_test.h"

struct peer {
    int lfd;
    size_t endless; /* 0: one reply line; else this many bytes with no newline, then close */
};

/* Accept one connection, read its request line, answer as p says. */
static void *peer_main(void *arg)
{
    struct peer *p = arg;
    int fd = accept(p->lfd, NULL, NULL);
    char b[65536];
    ssize_t r;

    if (fd < 0) return NULL;
    while ((r = read(fd, b, sizeof(b))) > 0 && !memchr(b, '\n', (size_t)r)) {
    }
    if (!p->endless) {
        static const char ok[] = "{\"ok\":true,\"pong\":1}\n";

        (void)!write(fd, ok, sizeof(ok) - 1);
    } else {
        memset(b, 'x', sizeof(b));
        for (size_t sent = 0; sent < p->endless;) {
            ssize_t w = send(fd, b, sizeof(b), MSG_NOSIGNAL);

            if (w <= 0) break; /* the client gave up */
            sent += (size_t)w;
        }
    }
    close(fd);
    return NULL;
}

/* One request to a peer that answers as p says; the reply (NULL: c->err). */
static json_t *ask(struct peer *p, struct proto_conn *c)
{
    struct sockaddr_un a = { .sun_family = AF_UNIX };
    pthread_t th;
    json_t *rep;

    snprintf(a.sun_path, sizeof(a.sun_path), "%s/ctl.sock", test_tmp);
    p->lfd = socket(AF_UNIX, SOCK_STREAM, 0);
    ck_assert_int_ge(p->lfd, 0);
    ck_assert_int_eq(bind(p->lfd, (struct sockaddr *)&a, sizeof(a)), 0);
    ck_assert_int_eq(listen(p->lfd, 1), 0);
    ck_assert_int_eq(pthread_create(&th, NULL, peer_main, p), 0);
    ck_assert_int_eq(proto_connect(c, a.sun_path), 0);
    rep = proto_request(c, json_pack("{s:s}", "req", "status"), NULL, 0);
    proto_close(c);
    pthread_join(th, NULL);
    close(p->lfd);
    return rep;
}

TEST(test_ctl_client_reads_one_reply_line, 1)
{
    struct peer p = { 0 };
    struct proto_conn c = { .fd = -1 };
    json_t *rep = ask(&p, &c);

    ck_assert_msg(rep != NULL, "%s", c.err);
    ck_assert(json_is_true(json_object_get(rep, "ok")));
    json_decref(rep);
}

TEST(test_ctl_client_gives_up_a_reply_past_its_bound, 1)
{
    struct peer p = { .endless = (size_t)PROTO_REPLY_MAX + (4u << 20) };
    struct proto_conn c = { .fd = -1 };
    json_t *rep = ask(&p, &c);

    ck_assert(rep == NULL);
    ck_assert_msg(strstr(c.err, "longer than") != NULL, "%s", c.err);
}

int main(void)
{
    /* 64 MiB through a socket: seconds on a loaded machine, not Check's default 4 */
    const struct test_opts o = { .setup = test_tmpdir_setup,
                                 .teardown = test_tmpdir_teardown,
                                 .timeout = 60 };

    return test_main("ctl_client", &o);
}
