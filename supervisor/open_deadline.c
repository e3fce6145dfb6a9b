/* open_deadline.c — opens with a deadline, in processes cuzkd can abandon
 * (open_deadline.h). */
#include "supervisor/open_deadline.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
#include "base/os.h"

/* What an opener sends back: the path's index and errno (0: the descriptor rides
 * along as SCM_RIGHTS). */
struct open_reply {
    uint32_t idx;
    int32_t err;
    struct stat st;
};

/* The opener of paths[idx]: keeps only the reply socket (as fd 3) of cuzkd's
 * descriptors (not its pid file, socket or log: a process stuck here must hold
 * nothing cuzkd's next start needs), allocates nothing (cuzkd may have forked it
 * with a lock of the allocator held), opens, answers and exits. */
static void opener(int sock, uint32_t idx, const char *path, int flags)
{
    struct open_reply r = { .idx = idx };
    char cbuf[CMSG_SPACE(sizeof(int))];
    struct iovec iov = { &r, sizeof(r) };
    struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1 };
    int fd;

    prctl(PR_SET_NAME, "cuzkd-open");
    if (dup2(sock, 3) < 0) _exit(1);
    syscall(SYS_close_range, 4U, ~0U, 0U);
    syscall(SYS_close_range, 0U, 2U, 0U);
    fd = open(path, flags);
    if (fd < 0)
        r.err = errno;
    else if (fstat(fd, &r.st))
        r.err = errno;
    if (!r.err) {
        struct cmsghdr *c;

        memset(cbuf, 0, sizeof(cbuf));
        m.msg_control = cbuf;
        m.msg_controllen = sizeof(cbuf);
        c = CMSG_FIRSTHDR(&m);
        c->cmsg_level = SOL_SOCKET;
        c->cmsg_type = SCM_RIGHTS;
        c->cmsg_len = CMSG_LEN(sizeof(int));
        memcpy(CMSG_DATA(c), &fd, sizeof(int));
    }
    (void)!sendmsg(3, &m, MSG_NOSIGNAL); /* cuzkd gone or past its deadline: nobody asks */
    _exit(0);
}

/* One reply into res (its descriptor, if any, becomes cuzkd's). 1: a reply for an
 * index not yet answered; 0: nothing more will come (EOF, or the socket failed). */
static int take_reply(int sock, size_t n, struct open_result *res, unsigned char *got)
{
    struct open_reply r;
    int fd;
    ssize_t k = os_recv_fd(sock, &r, sizeof(r), MSG_DONTWAIT, &fd);

    if (k < 0) return errno == EAGAIN || errno == EINTR ? 1 : 0;
    if (k == 0) return 0;
    if (k != (ssize_t)sizeof(r) || r.idx >= n || got[r.idx] || (!r.err) != (fd >= 0)) {
        if (fd >= 0) close(fd);
        return 1;
    }
    got[r.idx] = 1;
    res[r.idx].fd = r.err ? -r.err : fd;
    if (!r.err) res[r.idx].st = r.st;
    return 1;
}

void open_all_deadline(const char *const *paths, size_t n, int flags, unsigned ms, struct open_result *res)
{
    const uint64_t end = os_now_ns() + (uint64_t)ms * 1000000u;
    unsigned char *got;
    size_t answered = 0;
    int sv[2];
    pid_t pid;

    for (size_t i = 0; i < n; i++) res[i].fd = -EAGAIN;
    if (!n || !(got = calloc(n, 1))) return;
    if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv)) {
        free(got);
        return;
    }
    /* A double fork: cuzkd waits only for the first process, which starts the openers
     * and exits at once; the openers are nobody's children of cuzkd's to reap. */
    pid = fork();
    if (pid == 0) {
        for (size_t i = 0; i < n; i++)
            if (fork() == 0) opener(sv[1], (uint32_t)i, paths[i], flags);
        _exit(0);
    }
    close(sv[1]);
    if (pid < 0) {
        close(sv[0]);
        free(got);
        return;
    }
    while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
        ;
    for (size_t i = 0; i < n; i++) res[i].fd = -ETIMEDOUT;
    while (answered < n) {
        struct pollfd p = { .fd = sv[0], .events = POLLIN };
        const uint64_t now = os_now_ns();

        if (now >= end || poll(&p, 1, (int)((end - now + 999999u) / 1000000u)) == 0) break;
        if (!take_reply(sv[0], n, res, got)) break;
        answered = 0;
        for (size_t i = 0; i < n; i++) answered += got[i];
    }
    /* Every opener has exited or was given up on: those that never answered but did
     * exit (EOF) failed to send, those still waiting stay -ETIMEDOUT. */
    close(sv[0]);
    free(got);
}

int open_deadline(const char *path, int flags, unsigned ms, struct stat *st)
{
    struct open_result r;

    open_all_deadline(&path, 1, flags, ms, &r);
    if (r.fd >= 0) *st = r.st;
    return r.fd;
}
