/* open_deadline.h — open a path that may lie on a hung file system, with a deadline
 * (supervisor/open_deadline.c).
 *
 * cuzkd resumes stored jobs before it serves anyone, and a resumed job's out dir is
 * reopened by its path. An NFS server that never answers, or a FUSE server that
 * stopped, blocks open() in the kernel for good: cuzkd then never came up (no socket,
 * no stages; under systemd a restart loop). So the open runs in a thread of its own
 * and cuzkd waits for it at most a deadline; past it, the thread is left to end on
 * its own (it closes what it opened then) and the caller gets -ETIMEDOUT.
 */
#ifndef CUZK_OPEN_DEADLINE_H
#define CUZK_OPEN_DEADLINE_H

#include <sys/stat.h>

/* open(path, flags) and fstat of it within ms milliseconds: the descriptor (>= 0) and
 * *st, or -errno (-ETIMEDOUT: no answer in time; -EAGAIN: no thread could start). */
int open_deadline(const char *path, int flags, unsigned ms, struct stat *st);

#endif
