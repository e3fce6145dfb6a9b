/* body.c — a POST body as its bytes arrive (api.h): reserved against the process's
 * budget (budget.h), scanned (body_scan.h) and its inputs' signals checked
 * (signals.c) with no tree built, and kept in one memfd that cuzkd reads:
 *   an object or a .wtns   its bytes as they came (the memfd is the input.json)
 *   an array of objects    each object's bytes as a frame, a 4-byte little-endian
 *                          length then the bytes, in the array's order; the commas
 *                          and white space between them dropped
 * So a request costs its body's bytes once (in the memfd, counted in the budget) and
 * a few kilobytes of state, whatever its shape; and one descriptor, whatever the
 * number of its inputs. */
#include "api.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <sys/mman.h>
#include <unistd.h>

#include "api/budget.h"

/* Reservations grow by this much at least when a body's size was not announced
 * (chunked): fewer trips to the budget's lock. */
#define RX_STEP (256u << 10)

static void budget_problem(struct api_resp *r, int rc)
{
    char d[200];

    if (rc == -EDQUOT) {
        snprintf(d, sizeof(d),
                 "this tenant's bodies in flight would pass its share (half of %" PRIu64
                 " bytes, --max-inflight-body): retry when one has been taken",
                 g_api.cfg.max_inflight);
        api_problem(r, 429, "quota", "too_many_bytes", d,
                    json_pack("{s:I}", "max_inflight_body", (json_int_t)g_api.cfg.max_inflight));
    } else {
        snprintf(d, sizeof(d),
                 "the bodies in flight would pass --max-inflight-body (%" PRIu64 " bytes): retry shortly",
                 g_api.cfg.max_inflight);
        api_problem(r, 503, "refused", "busy", d,
                    json_pack("{s:I}", "max_inflight_body", (json_int_t)g_api.cfg.max_inflight));
    }
    r->retry_after = 2;
}

/* The reservation covers want bytes: 0, or -1 with r set. */
static int reserve(struct api_rx *x, uint64_t want)
{
    uint64_t more;
    int rc;

    if (want <= x->reserved) return 0;
    more = want - x->reserved;
    if (!x->announced && more < RX_STEP) more = RX_STEP;
    if ((rc = api_budget_take(x->tenant, more)) && more > want - x->reserved)
        rc = api_budget_take(x->tenant, more = want - x->reserved); /* the step itself may not fit */
    if (rc) {
        budget_problem(x->r, rc);
        return -1;
    }
    x->reserved += more;
    return 0;
}

static int put(struct api_rx *x, const void *p, size_t n)
{
    for (size_t off = 0; off < n;) {
        ssize_t w = write(x->b->fd, (const char *)p + off, n - off);

        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) {
            api_problem(x->r, 500, "internal", PROTO_E_INTERNAL, "the body could not be kept", NULL);
            return -1;
        }
        off += (size_t)w;
    }
    x->out += n;
    return 0;
}

/* The chunk's bytes from body offset x->from up to end, into the memfd. */
static int keep(struct api_rx *x, uint64_t end)
{
    uint64_t from = x->from;

    x->from = end;
    if (end <= from) return 0;
    if (reserve(x, x->out + (end - from))) return -1;
    return put(x, x->chunk + (from - x->base), (size_t)(end - from));
}

static int on_begin(void *arg, long index, uint64_t pos)
{
    struct api_rx *x = arg;
    static const unsigned char zero[4];

    if (api_sig_begin(&x->sig)) return -1;
    x->from = pos;
    if (index < 0) { /* the body is the object: kept as it is from here on */
        x->raw = 1;
        return 0;
    }
    /* a frame: its length is written when the object has closed */
    x->frame_at = x->out;
    x->in_frame = 1;
    if (reserve(x, x->out + 4)) return -1;
    return put(x, zero, 4);
}

static int on_key(void *arg, long index, const char *key, size_t len, int cut)
{
    struct api_rx *x = arg;

    return api_sig_key(&x->sig, key, len, cut, index);
}

static int on_end(void *arg, long index, uint64_t end)
{
    struct api_rx *x = arg;
    unsigned char le[4];
    uint64_t n;

    if (api_sig_end(&x->sig, index)) return -1;
    if (index < 0) return 0;
    if (keep(x, end)) return -1;
    n = x->out - x->frame_at - 4;
    if (n > UINT32_MAX) {
        api_problem(x->r, 413, "refused", PROTO_E_INPUT_LIMIT, "an input object is over 4 GiB", NULL);
        return -1;
    }
    for (int i = 0; i < 4; i++) le[i] = (unsigned char)(n >> (8 * i));
    if (pwrite(x->b->fd, le, 4, (off_t)x->frame_at) != 4) {
        api_problem(x->r, 500, "internal", PROTO_E_INTERNAL, "the body could not be kept", NULL);
        return -1;
    }
    x->in_frame = 0;
    x->b->count = (uint32_t)index + 1;
    x->b->framed = 1;
    return 0;
}

static const struct body_scan_ops rx_ops = { on_begin, on_key, on_end };

int api_rx_begin(struct api_rx *x, struct api_body *b, struct api_resp *r, const char *tenant,
                 uint64_t content_length)
{
    memset(x, 0, sizeof(*x));
    x->b = b;
    x->r = r;
    x->tenant = tenant;
    b->count = 1;
    b->framed = 0;
    x->json = !b->ctype || strncasecmp(b->ctype, "application/octet-stream", 24);
    x->raw = !x->json;
    x->announced = content_length != 0; /* reserved whole: no steps past it */
    if (content_length && reserve(x, content_length)) return -1;
    if (api_sig_init(&x->sig, x->json ? b->signals : NULL, r)) return -1;
    body_scan_init(&x->scan, &rx_ops, x);
    b->fd = memfd_create("cuzk-api-body", MFD_CLOEXEC | MFD_ALLOW_SEALING);
    if (b->fd < 0) {
        api_problem(r, 500, "internal", PROTO_E_INTERNAL, "no memory for the body", NULL);
        return -1;
    }
    return 0;
}

/* The scanner's refusal as a problem (a callback's own is set already). */
static void scan_problem(struct api_rx *x)
{
    const struct body_scan *s = &x->scan;

    switch (s->err) {
    case BODY_SCAN_STOPPED: break;
    case BODY_SCAN_COUNT: api_problem(x->r, 400, "usage", "bad_request", s->msg, NULL); break;
    case BODY_SCAN_SHAPE:
        api_problem(x->r, 400, "format", "bad_json", s->msg,
                    s->err_index >= 0 ? json_pack("{s:I}", "index", (json_int_t)s->err_index) : NULL);
        break;
    default:
        api_problem(x->r, 400, "format", "bad_json", s->msg,
                    json_pack("{s:I,s:I,s:I}", "position", (json_int_t)s->err_pos, "line",
                              (json_int_t)s->err_line, "column", (json_int_t)s->err_col));
    }
    if (!x->r->status) /* a callback stopped the scan without a word: never so, but say something */
        api_problem(x->r, 400, "format", "bad_json", "the body was refused", NULL);
}

int api_rx_feed(struct api_rx *x, const char *data, size_t n)
{
    x->chunk = data;
    x->base = x->b->len;
    x->from = x->base;
    x->b->len += n;
    if (x->json && body_scan_feed(&x->scan, data, n)) {
        scan_problem(x);
        return -1;
    }
    /* What the scan left of the chunk: all of it from its object's start on for a
     * body that is one object (or a .wtns), the part of an open frame. */
    if ((x->raw || x->in_frame) && keep(x, x->base + n)) return -1;
    x->chunk = NULL;
    return 0;
}

int api_rx_end(struct api_rx *x)
{
    if (x->json && body_scan_end(&x->scan)) {
        scan_problem(x);
        return -1;
    }
    x->b->stored = x->out;
    if (fcntl(x->b->fd, F_ADD_SEALS, F_SEAL_WRITE | F_SEAL_GROW | F_SEAL_SHRINK | F_SEAL_SEAL)) {
        api_problem(x->r, 500, "internal", PROTO_E_INTERNAL, "the body could not be sealed", NULL);
        return -1;
    }
    return 0;
}

void api_rx_free(struct api_rx *x)
{
    if (x->b && x->b->fd >= 0) close(x->b->fd);
    if (x->b) x->b->fd = -1;
    if (x->reserved) api_budget_give(x->tenant, x->reserved);
    x->reserved = 0;
    api_sig_free(&x->sig);
}
