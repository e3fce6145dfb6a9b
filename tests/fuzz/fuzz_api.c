/* fuzz_api.c — libFuzzer target: cuzk-api's parsers (api/). The first byte picks:
 *   0  the input is what a client sends: it reaches the HTTP server (libmicrohttpd
 *      with api/http.c's handlers, on one end of a socketpair added as a connection)
 *      and the answer is read to its end. The control socket names no cuzkd, so a
 *      request that gets past routing, tokens and body limits is answered 503; a
 *      token of the tokens file below opens the routes behind auth.
 *   1  the input is a request body: api_parse_body (object, array, byte offsets),
 *      then api_check_signals against a circuit's inputs (nested names among them);
 *      the same bytes as text through api_unpath (the cut of paths in answers).
 *   2  the input is a tokens file: api_tokens_load. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include "../../api/api.h"

struct api g_api;

/* The token "fuzz": sha256("fuzz"); max-body 4K. */
static const char tokens[] =
    "alice 93850b707585e404e4951a3ddc1f05a34b3d4f5fc081d616f46d8a2e8f1c8e68 1 2 4K\n";

static void serve_once(void)
{
    static int up;
    char err[256], path[64];
    int fd;

    if (up) return;
    up = 1;
    snprintf(g_api.cfg.socket, sizeof(g_api.cfg.socket), "/nonexistent/cuzk-fuzz.sock");
    snprintf(g_api.cfg.instance, sizeof(g_api.cfg.instance), "fuzz-none");
    g_api.cfg.timeout_s = 1;
    g_api.cfg.per_ip = 64;
    g_api.cfg.max_conns = 64;
    g_api.cfg.max_body = 1 << 20;
    fd = memfd_create("tokens", 0);
    if (fd < 0 || write(fd, tokens, sizeof(tokens) - 1) < 0) abort();
    snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
    if (api_tokens_load(&g_api.tokens, path, err, sizeof(err)) ||
        api_serve(-1, NULL, NULL, err, sizeof(err))) {
        fprintf(stderr, "fuzz_api: %s\n", err);
        abort();
    }
    close(fd);
}

static void http(const uint8_t *d, size_t n)
{
    int sv[2];
    char buf[4096];

    serve_once();
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv)) return;
    if (api_add_conn(sv[0])) {
        close(sv[1]);
        return;
    }
    for (size_t off = 0; off < n;) {
        ssize_t w = send(sv[1], d + off, n - off, MSG_NOSIGNAL);

        if (w <= 0) break;
        off += (size_t)w;
    }
    shutdown(sv[1], SHUT_WR);
    while (read(sv[1], buf, sizeof(buf)) > 0) {
    }
    close(sv[1]);
}

static int memfd_of(const uint8_t *d, size_t n)
{
    int fd = memfd_create("in", 0);

    if (fd >= 0 && n && write(fd, d, n) != (ssize_t)n) {
        close(fd);
        return -1;
    }
    return fd;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct api_resp r = { 0 };
    char err[512], path[64];
    int fd;

    if (!size) return 0;
    switch (data[0] % 3) {
    case 0: http(data + 1, size - 1); break;
    case 1: {
        json_t *j,
            *inputs = json_loads("[{\"name\":\"x\",\"size\":1},{\"name\":\"a.b\",\"size\":2},"
                                 "{\"name\":\"in[0].y\",\"size\":1},{\"name\":\"\",\"size\":1}]",
                                 0, NULL);
        char *text = strndup((const char *)data + 1, size - 1), *u;

        if ((fd = memfd_of(data + 1, size - 1)) >= 0) {
            if ((j = api_parse_body(&r, &(struct api_body){ .fd = fd, .len = size - 1 }))) {
                (void)api_check_signals(&r, inputs, j);
                json_decref(j);
            }
            close(fd);
        }
        u = text ? api_unpath(text) : NULL;
        if (u && strlen(u) > strlen(text)) abort(); /* the cut never lengthens */
        free(u);
        free(text);
        json_decref(inputs);
        break;
    }
    default: {
        struct api_tokens tk;

        if ((fd = memfd_of(data + 1, size - 1)) < 0) break;
        snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
        if (!api_tokens_load(&tk, path, err, sizeof(err))) {
            (void)api_tokens_find(&tk, "fuzz", 4);
            api_tokens_free(&tk);
        }
        close(fd);
    }
    }
    free(r.body);
    return 0;
}
