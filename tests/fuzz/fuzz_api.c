/* fuzz_api.c — libFuzzer target: cuzk-api's parsers (api/). The first byte picks:
 *   0  the input is what a client sends: it reaches the HTTP server (libmicrohttpd
 *      with api/http.c's handlers, on one end of a socketpair added as a connection)
 *      and the answer is read to its end. The control socket names no cuzkd, so a
 *      request that gets past routing, tokens and body limits is answered 503; a
 *      token of the tokens file below opens the routes behind auth.
 *   1  the input is a request body: the streaming scanner (api/body_scan.h), fed in
 *      two chunks, against jansson as the oracle: what jansson reads as an object
 *      or an array of 1-4096 objects the scanner accepts, what the scanner accepts
 *      jansson reads (but for a duplicate key, which the scanner leaves to its
 *      caller), and each input object's byte range is one object to jansson; then
 *      api_check_signals against a circuit's inputs (nested names among them); the
 *      same bytes as text through api_unpath (the cut of paths in answers).
 *   2  the input is a tokens file: api_tokens_load. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../../api/api.h"
#include "tests/unit/helper_body_ranges.h"

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
    /* 0600: cuzk-api refuses a tokens file others may read (a memfd is made 0777) */
    if (fd < 0 || fchmod(fd, 0600) || write(fd, tokens, sizeof(tokens) - 1) < 0) abort();
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

static int r_begin(void *arg, long index, uint64_t pos)
{
    if (body_ranges_begin(arg, index, pos)) abort(); /* in order, from 0 */
    return 0;
}

static int r_key(void *arg, long index, const char *key, size_t len, int cut)
{
    (void)arg, (void)index, (void)key;
    if (len > BODY_SCAN_KEY || (cut && len != BODY_SCAN_KEY)) abort();
    return 0;
}

static int r_end(void *arg, long index, uint64_t end)
{
    body_ranges_end(arg, index, end);
    return 0;
}

static const struct body_scan_ops r_ops = { r_begin, r_key, r_end };

/* The body of data (n bytes) through the scanner and jansson. */
static void scan_body(const uint8_t *data, size_t n)
{
    static struct body_ranges g;
    struct body_scan s;
    json_error_t je;
    json_t *j = json_loadb((const char *)data, n, JSON_REJECT_DUPLICATES, &je), *e;
    size_t cut = n ? data[0] % (n + 1) : 0, i;
    int ok, shape;

    memset(&g, 0, sizeof(g));
    body_scan_init(&s, &r_ops, &g);
    ok = !body_scan_feed(&s, (const char *)data, cut) &&
        !body_scan_feed(&s, (const char *)data + cut, n - cut) && !body_scan_end(&s);
    shape = json_is_object(j) ||
        (json_is_array(j) && json_array_size(j) >= 1 && json_array_size(j) <= BODY_SCAN_INPUTS);
    json_array_foreach (json_is_array(j) ? j : NULL, i, e) shape &= json_is_object(e);
    /* jansson's buffer reader takes a NUL byte for the end: not comparable */
    if (memchr(data, 0, n)) {
        json_decref(j);
        return;
    }
    if (j && shape && !ok) abort(); /* jansson reads it, the scanner refused it */
    if (ok && !j && !strstr(je.text, "duplicate") && !strstr(je.text, "overflow")) abort();
    if (ok && j && !body_ranges_match((const char *)data, &g, j)) abort();
    json_decref(j);
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

        scan_body(data + 1, size - 1);
        if ((j = json_loadb((const char *)data + 1, size - 1, JSON_REJECT_DUPLICATES, NULL))) {
            if (json_is_object(j) || json_is_array(j)) (void)api_check_signals(&r, inputs, j);
            json_decref(j);
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
