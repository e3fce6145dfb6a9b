/* loop_steps.c — the steps every stage loop shares (stage.h): claiming a partition,
 * the orphan check before a failure is recorded, failing a partition and its reason, deciding a job and
 * ringing cuzkd's doorbell, waiting for room on an output ring, the wait state. */
#include "stage/stage.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "base/error.h"

/* 1: pid is exiting or gone; 0: alive (or unknown: never a reason to exit). */
static int supervisor_exiting(uint32_t pid)
{
    char path[64], buf[1024];
    const char *p;
    unsigned long flags = 0;
    ssize_t n;
    char state;
    int fd;

    snprintf(path, sizeof(path), "/proc/%u/stat", pid);
    fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return errno == ENOENT || errno == ESRCH;
    n = read(fd, buf, sizeof(buf) - 1);
    close(fd);
    if (n <= 0) return n == 0 || errno == ESRCH;
    buf[n] = '\0';
    p = strrchr(buf, ')'); /* the command name may hold spaces and parentheses */
    if (!p) return 0;
    /* After ") ": state ppid pgrp session tty_nr tpgid flags (fields 3 to 9). */
    if (sscanf(p + 1, " %c %*d %*d %*d %*d %*d %lu", &state, &flags) != 2) return 0;
    return (flags & 0x4ul) != 0; /* PF_EXITING */
}

void stage_orphan_check(const struct pipeline *pl)
{
    uint32_t pid = pl->config ? pl->config->supervisor_pid : 0;

    if (!pid || !supervisor_exiting(pid)) return;
    /* PDEATHSIG (SIGKILL) is on its way; if it never comes (we are not cuzkd's child,
     * e.g. a test harness), leave on our own: nothing may be recorded for a daemon
     * that is gone. */
    for (int i = 0; i < 1000 && getppid() == (pid_t)pid; i++) usleep(10000);
    _exit(CUZK_EXIT_SYSTEM);
}

uint32_t stage_wait_state(const struct stage *st)
{
    const struct jobtab *jt = &st->pl.data.jobtab;

    for (uint32_t j = 0; j < jt->hdr->max_jobs; j++)
        /* Relaxed: a display hint; a job seen one poll late costs nothing. */
        if (jobtab_word_state(barrier_load_relaxed(&jt->jobs[j].word)) == JOBTAB_QUEUED)
            return STATS_WAIT_INPUT;
    return STATS_IDLE;
}

struct jobtab_job *stage_claim_part(struct stage *st, uint32_t p, uint32_t from, uint32_t to)
{
    struct jobtab *jt = &st->pl.data.jobtab;

    if (jobtab_part_move(jt, p, from, 0, to, (uint32_t)st->pid, NULL)) return NULL;
    return &jt->jobs[jt->parts[p].job];
}

int stage_fail_part(struct stage *st, uint32_t p, uint32_t state, uint32_t counter, const char *file,
                    const char *msg, char *reason, size_t len)
{
    stage_orphan_check(&st->pl);
    stage_reason(reason, len, file, msg);
    if (jobtab_part_fail(&st->pl.data.jobtab, p, state, (uint32_t)st->pid, reason) != 0) return 0;
    stage_count(st, counter, 1);
    return 1;
}

int stage_fail(struct stage *st, uint32_t p, uint32_t state, uint32_t counter, const char *file,
               const char *msg, const char *who)
{
    char reason[JOBTAB_REASON_LEN];
    int rc = 0;

    /* (reason is filled either way: the line says what happened to it) */
    if (stage_fail_part(st, p, state, counter, file, msg, reason, sizeof(reason)))
        rc = stage_job_try_complete(st, st->pl.data.jobtab.parts[p].job);
    if (who) fprintf(stderr, "%s: partition %u failed: %s\n", who, p, reason);
    return rc;
}

int stage_push_wait(struct stage *st, struct stage_push_state *w)
{
    if (!w->waited++) stage_enter(st, STATS_WAIT_OUTPUT);
    stage_heartbeat(st);
    if (!stage_stopping(st)) return 0;
    if (!w->t_stop)
        w->t_stop = stage_now();
    else if (stage_now() - w->t_stop > 1000000000ull)
        return 1;
    return 0;
}

int stage_job_try_complete(struct stage *st, uint32_t job)
{
    int rc = jobtab_job_try_complete(&st->pl.data.jobtab, job);

    if (rc == 1 && st->doorbell_fd > 0) {
        uint64_t one = 1;

        /* Non-blocking eventfd: EAGAIN only at a counter near 2^64, never here; a
         * failed write costs the waiters at most one tick. */
        (void)!write(st->doorbell_fd, &one, sizeof(one));
    }
    return rc;
}

void stage_reason(char *dst, size_t len, const char *file, const char *msg)
{
    const char *base = strrchr(file, '/'), *hit;
    size_t flen = strlen(file), o = 0;
    char tmp[2048], out[2048 + JOBTAB_PATH_LEN];

    base = base ? base + 1 : file;
    /* Replace each occurrence of the full path with the basename. */
    while (flen && (hit = strstr(msg, file)) && o < sizeof(tmp) - 1) {
        o += (size_t)snprintf(tmp + o, sizeof(tmp) - o, "%.*s%s", (int)(hit - msg), msg, base);
        msg = hit + flen;
    }
    if (o < sizeof(tmp) - 1) snprintf(tmp + o, sizeof(tmp) - o, "%s", msg);
    tmp[sizeof(tmp) - 1] = 0;
    if (strstr(tmp, base))
        snprintf(out, sizeof(out), "%s", tmp);
    else
        snprintf(out, sizeof(out), "%s: %s", base, tmp);
    jobtab_reason_copy(dst, len, out);
}
