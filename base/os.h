/* os.h — what cuzkd, the job store and the tools share of the operating system: the
 * monotonic and CPU clocks (base/clock.c), and (base/os.c) mkdir -p, the check that a
 * directory may be trusted with what lives in it (a socket, a pid file, the job store),
 * reading a directory held by a descriptor, one message with its descriptor, and
 * cuzkd's log line. */
#ifndef CUZK_OS_H
#define CUZK_OS_H

#include <dirent.h>
#include <stdarg.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <time.h>

#ifdef __cplusplus
extern "C" {
#endif

/* A stream over the entries of the directory dfd, from its start: its own open file
 * description (openat "."), so reading it moves no offset of dfd, and dfd may be an
 * O_PATH descriptor. closedir() ends it; dfd stays open. NULL with errno set. */
DIR *os_dir_stream(int dfd);

/* CLOCK_MONOTONIC in nanoseconds: a clock step never moves a deadline. The one
 * reader of the clock in the tree: every deadline, futex wait, stage timing and stats
 * stamp is on it, so any two of them compare. */
uint64_t os_now_ns(void);
/* This process's CPU time, all its threads, user + system (CLOCK_PROCESS_CPUTIME_ID:
 * a system call, ~0.5 us; for step accounting, not for hot loops). */
uint64_t os_cpu_ns(void);

/* The calling thread's CPU time, user + system (CLOCK_THREAD_CPUTIME_ID): a step's own
 * cost where other threads of the process work on other steps at the same time. */
uint64_t os_thread_cpu_ns(void);

/* The same clock in seconds, for the timings a program prints. */
static inline double os_now_s(void)
{
    return (double)os_now_ns() * 1e-9;
}

/* os_thread_cpu_ns in seconds. */
static inline double os_thread_cpu_s(void)
{
    return (double)os_thread_cpu_ns() * 1e-9;
}

/* os_cpu_ns in seconds. */
static inline double os_cpu_s(void)
{
    return (double)os_cpu_ns() * 1e-9;
}

/* The CLOCK_MONOTONIC instant ms from now, as a timespec: the absolute deadline of a
 * pthread_cond_timedwait on a condition variable set to that clock. */
struct timespec os_deadline_after_ms(uint64_t ms);

/* One message of a socket into buf (len bytes at most) and the descriptor that came
 * with it into *fd (-1 when none; close-on-exec): recvmsg's result, -1 with errno
 * set. flags go to recvmsg (MSG_DONTWAIT), with MSG_CMSG_CLOEXEC. */
ssize_t os_recv_fd(int sock, void *buf, size_t len, int flags, int *fd);

/* dir and its missing parents: the parents 0755, dir itself mode (an existing one is
 * left as it is). 0 or -errno (-ENAMETOOLONG past PATH_MAX). */
int os_mkdir_p(const char *dir, mode_t mode);

/* What os_dir_check finds wrong with a directory (bits). */
enum os_dir_fault {
    OS_DIR_NOT_DIR = 1 << 0, /* a symlink, or no directory */
    OS_DIR_OWNER = 1 << 1,   /* owned by another uid than this euid (or root, if allowed) */
    OS_DIR_MODE = 1 << 2,    /* one of the forbidden mode bits is set */
};

/* Whoever controls a directory controls what is found in it: lstat dir into *st (a
 * symlink is never followed) and judge it: a real directory, owned by this euid (or
 * by root, when root_ok), with none of the mode bits forbid. 0, the OS_DIR_* bits of
 * what is wrong (OS_DIR_NOT_DIR alone when it is no directory), or -errno when it
 * cannot be looked at. Each caller says why in its own words. */
int os_dir_check(const char *dir, mode_t forbid, int root_ok, struct stat *st);

/* One log line on stderr, "PREFIX: message", after the local time
 * ("HH:MM:SS.mmm ") when stamp is set. The message is escaped (display.h): the names
 * and paths in it are clients' words, and no control or bidi character of theirs
 * reaches the log. */
void os_vlog(int stamp, const char *prefix, const char *fmt, va_list ap)
    __attribute__((format(printf, 3, 0)));

#ifdef __cplusplus
}
#endif

#endif
