/* rusage.c — one process's wall time, CPU time and peak RSS (for bench/run.sh), so the
 * bench needs no GNU time.
 *
 *   rusage OUT CMD [ARG...]
 *
 * Runs CMD, waits for it with wait4 and writes one line to OUT:
 *   "WALL_S USER_S SYS_S MAXRSS_KIB"
 * (peak RSS of CMD or of the largest of the children it waited for, as the kernel
 * counts it). Exits with CMD's status (128 + signal if a signal ended it), 127 if
 * CMD cannot be started, 2 on usage. Not a benchmark: bench/run.sh skips it. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "base/os.h"

static double secs(struct timeval tv)
{
    return (double)tv.tv_sec + (double)tv.tv_usec / 1e6;
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: rusage OUT CMD [ARG...]\n");
        return 2;
    }
    const uint64_t t0 = os_now_ns();
    pid_t pid = fork();
    if (pid < 0) {
        perror("rusage: fork");
        return 127;
    }
    if (pid == 0) {
        execvp(argv[2], argv + 2);
        fprintf(stderr, "rusage: %s: %s\n", argv[2], strerror(errno));
        _exit(127);
    }
    int status = 0;
    struct rusage ru;
    while (wait4(pid, &status, 0, &ru) < 0) {
        if (errno != EINTR) {
            perror("rusage: wait4");
            return 127;
        }
    }
    double wall = (double)(os_now_ns() - t0) * 1e-9;
    FILE *f = fopen(argv[1], "w");
    if (!f) {
        fprintf(stderr, "rusage: %s: %s\n", argv[1], strerror(errno));
        return 127;
    }
    fprintf(f, "%.4f %.4f %.4f %ld\n", wall, secs(ru.ru_utime), secs(ru.ru_stime), ru.ru_maxrss);
    fclose(f);
    if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
    return WEXITSTATUS(status);
}
