/* os.c — the operating-system helpers every program shares (os.h); the clock is in
 * clock.c. */
#include "base/os.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <string.h>
#include <sys/socket.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

#include "base/display.h"

int os_mkdir_p(const char *dir, mode_t mode)
{
    char b[PATH_MAX];

    if (snprintf(b, sizeof(b), "%s", dir) >= (int)sizeof(b)) return -ENAMETOOLONG;
    for (char *p = b + 1; *p; p++)
        if (*p == '/') {
            *p = '\0';
            if (mkdir(b, 0755) && errno != EEXIST) return -errno;
            *p = '/';
        }
    if (mkdir(b, mode) && errno != EEXIST) return -errno;
    return 0;
}

int os_dir_check(const char *dir, mode_t forbid, int root_ok, struct stat *st)
{
    int bad = 0;

    if (lstat(dir, st)) return -errno;
    if (S_ISLNK(st->st_mode) || !S_ISDIR(st->st_mode)) return OS_DIR_NOT_DIR;
    if (st->st_uid != geteuid() && !(root_ok && st->st_uid == 0)) bad |= OS_DIR_OWNER;
    if (st->st_mode & forbid) bad |= OS_DIR_MODE;
    return bad;
}

void os_vlog(int stamp, const char *prefix, const char *fmt, va_list ap)
{
    char buf[1024], safe[2048], when[32] = "";

    if (stamp) {
        struct timespec ts;
        struct tm tm;

        clock_gettime(CLOCK_REALTIME, &ts);
        localtime_r(&ts.tv_sec, &tm);
        snprintf(when, sizeof(when), "%02d:%02d:%02d.%03ld ", tm.tm_hour, tm.tm_min, tm.tm_sec,
                 ts.tv_nsec / 1000000);
    }
    vsnprintf(buf, sizeof(buf), fmt, ap);
    fprintf(stderr, "%s%s: %s\n", when, prefix, display_escape(safe, sizeof(safe), buf));
}

DIR *os_dir_stream(int dfd)
{
    int fd = openat(dfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    DIR *d = fd >= 0 ? fdopendir(fd) : NULL;

    if (!d && fd >= 0) {
        int e = errno;
        close(fd);
        errno = e;
    }
    return d;
}

ssize_t os_recv_fd(int sock, void *buf, size_t len, int flags, int *fd)
{
    char cbuf[CMSG_SPACE(sizeof(int))];
    struct iovec iov = { buf, len };
    struct msghdr m = {
        .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf, .msg_controllen = sizeof(cbuf)
    };
    ssize_t k = recvmsg(sock, &m, flags | MSG_CMSG_CLOEXEC);

    *fd = -1;
    if (k < 0) return k;
    for (struct cmsghdr *c = CMSG_FIRSTHDR(&m); c; c = CMSG_NXTHDR(&m, c))
        if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS && c->cmsg_len == CMSG_LEN(sizeof(int)))
            memcpy(fd, CMSG_DATA(c), sizeof(int));
    return k;
}
