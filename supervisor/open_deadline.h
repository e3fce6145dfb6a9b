/* open_deadline.h — open paths that may lie on a hung file system, with a deadline
 * (supervisor/open_deadline.c).
 *
 * cuzkd resumes stored jobs before it serves anyone, and a resumed job's out dir is
 * reopened by its path. An NFS server that never answers, or a FUSE server that
 * stopped, blocks open() in the kernel for good, uninterruptibly: cuzkd then never
 * came up. A thread of cuzkd's left waiting there was no cure either: a process whose
 * thread is stuck in the kernel never finishes its exit, so a cuzkd stopped then stayed
 * a zombie holding its pid file and socket, and the next one refused to start. So the
 * opens run in processes of their own (a double fork: detached, holding no descriptor
 * of cuzkd's but the reply socket), all at once, and hand the descriptors back over a
 * Unix socket (SCM_RIGHTS); cuzkd waits for them at most one deadline in all, and
 * what is not back by then is -ETIMEDOUT. A process left waiting ends on its own once
 * the file system answers or goes away; its name is cuzkd-open.
 */
#ifndef CUZK_OPEN_DEADLINE_H
#define CUZK_OPEN_DEADLINE_H

#include <stddef.h>
#include <sys/stat.h>

/* One path's outcome: fd >= 0 (cuzkd's own, O_CLOEXEC) with st its fstat, or -errno
 * (-ETIMEDOUT: no answer by the deadline; -EAGAIN: no process could start). */
struct open_result {
    int fd;
    struct stat st;
};

/* open(paths[i], flags) and fstat of it for each of n paths, in parallel, within ms
 * milliseconds for all of them together: res[i] each. */
void open_all_deadline(const char *const *paths, size_t n, int flags, unsigned ms, struct open_result *res);

/* One path (open_all_deadline): the descriptor (>= 0) and *st, or -errno. */
int open_deadline(const char *path, int flags, unsigned ms, struct stat *st);

#endif
