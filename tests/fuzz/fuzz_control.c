/* fuzz_control.c — libFuzzer target: the control protocol (control.h): the input fed
 * to the line framer in two chunks, each complete line parsed as a request; a submit
 * or preload that parses then goes through the descriptor path (control_submit_check,
 * control_circuit_check) with a fixed set of passed descriptors of every kind: a real
 * zkey ($FUZZ_ZKEY, else /dev/null), the current directory (O_PATH), a pipe's read
 * end and a small memfd, so out-of-range, wrong-kind and repeated fd indices are all
 * reached. */
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "supervisor/control.h"
#include "supervisor/submit_check.h"
#include "supervisor/copies.h"

#define N_FDS 4
static int fds[N_FDS] = { -1 };
static struct copies cp;

static void fds_init(void)
{
    const char *z = getenv("FUZZ_ZKEY");
    int p[2];

    if (fds[0] >= 0) return;
    copies_init(&cp, 2);
    fds[0] = open(z ? z : "/dev/null", O_RDONLY | O_CLOEXEC);
    fds[1] = open(".", O_PATH | O_DIRECTORY | O_CLOEXEC);
    fds[2] = pipe2(p, O_CLOEXEC) ? -1 : p[0]; /* the write end stays open: never EOF */
    fds[3] = memfd_create("fuzz", MFD_CLOEXEC);
    if (fds[3] >= 0) (void)!write(fds[3], "zkey\1\0\0\0", 8);
}

static void fd_path(const struct control_req *r)
{
    const struct control_peer peer = { getuid(), getgid(), NULL, 0 };
    size_t n = r->n_fds < N_FDS ? r->n_fds : N_FDS;
    struct control_submit s;
    struct control_err e;
    char path[JOBTAB_PATH_LEN];
    int copy;

    if (r->kind == CONTROL_SUBMIT) {
        if (!control_submit_check(r, fds, n, &peer, &cp, 64u << 20, 64, &s, &e)) control_submit_free(&s, &cp);
    } else if (r->kind == CONTROL_PRELOAD || r->kind == CONTROL_EVICT) {
        if (!control_circuit_check(r, fds, n, &cp, 64u << 20, path, &copy, &e)) copies_put(&cp, copy);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int on_line(void *arg, const char *line, size_t len)
{
    struct control_req r;
    struct control_err e;

    (void)arg;
    if (!line) return 0; /* over-long line: dropped */
    if (control_parse(line, len, &r, &e) == 0) control_req_free(&r);
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct control_framer f;
    size_t cut = size ? data[0] % (size + 1) : 0;

    memset(&f, 0, sizeof(f));
    control_framer_feed(&f, (const char *)data, cut, on_line, NULL);
    control_framer_feed(&f, (const char *)data + cut, size - cut, on_line, NULL);
    control_framer_free(&f);
    return 0;
}
