/* stage.c — the stage runtime (stage.h): options and main(), slot claim, heartbeat,
 * state accounting, long-call deadlines, the zkey cache and circuits table, the
 * orphan check and the steps every stage loop shares. */
#include "cuzk/stage.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cuzk/error.h"
#include "cuzk/futex.h"

#define HB_PERIOD_NS 50000000ull /* heartbeat thread: 50 ms, half the 100 ms promise */

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

void pipe_stage_orphan_check(const struct pipeline *pl)
{
    uint32_t pid = pl->config ? pl->config->supervisor_pid : 0;

    if (!pid || !supervisor_exiting(pid)) return;
    /* PDEATHSIG (SIGKILL) is on its way; if it never comes (we are not cuzkd's child,
     * e.g. a test harness), leave on our own: nothing may be recorded for a daemon
     * that is gone. */
    for (int i = 0; i < 1000 && getppid() == (pid_t)pid; i++) usleep(10000);
    _exit(CUZK_EXIT_SYSTEM);
}

/* ---- stage helper ---------------------------------------------------------------- */

uint64_t pipe_stage_now(void)
{
    return futex_now_ns();
}

int pipe_stage_stopping(const struct pipe_stage *st)
{
    /* Relaxed: a flag polled once per loop; nothing is published through it. */
    return st->stop && atomic_load_explicit(st->stop, memory_order_relaxed);
}

static void *hb_main(void *arg)
{
    struct pipe_stage *st = arg;
    struct timespec ts = { 0, (long)HB_PERIOD_NS };

    /* Relaxed: flags between two threads of this process; the mutex orders the slot
     * writes themselves. */
    while (!atomic_load_explicit(&st->hb_quit, memory_order_relaxed)) {
        nanosleep(&ts, NULL);
        if (atomic_load_explicit(&st->in_long_call, memory_order_relaxed)) {
            uint64_t lim = (uint64_t)st->pl.config->long_call_s * 1000000000ull;
            uint64_t t0 = atomic_load_explicit(&st->long_since, memory_order_relaxed);
            uint64_t now = pipe_stage_now();

            if (!lim || now < t0 || now - t0 < lim) {
                st->long_told = 0;
                pipe_stage_heartbeat(st);
            } else if (!st->long_told) {
                st->long_told = 1;
                fprintf(stderr,
                        "cuzk stage pid %d: one call has run %.0f s (long-call-timeout "
                        "%u s): no more heartbeats, cuzkd will restart this stage\n",
                        (int)st->pid, (double)(now - t0) / 1e9, st->pl.config->long_call_s);
            }
        }
    }
    return NULL;
}

int pipe_stage_open(struct pipe_stage *st, const struct pipe_stage_opts *o, enum stats_role role, char *err,
                    size_t errlen)
{
    int rc;

    memset(st, 0, sizeof(*st));
    st->role = role;
    st->index = o->index;
    st->pid = getpid();
    st->stop = o->stop;
    st->doorbell_fd = o->doorbell_fd;
    pthread_mutex_init(&st->mu, NULL);
    rc = pipeline_attach(&st->pl, o->instance, err, errlen);
    if (rc) goto err;
    st->slot = pipeline_stats_slot(&st->pl, role, o->index);
    if (!st->slot) {
        snprintf(err, errlen,
                 "instance %s has no stats slot for this stage with index %u "
                 "(n_synth %u, n_workers %u)",
                 o->instance, o->index, st->pl.config->n_synth, st->pl.config->n_workers);
        rc = -EINVAL;
        goto err_detach;
    }
    /* The slot's generation is bumped here by every start in this slot, so it counts
     * restarts without trusting --generation (which stats.h gives no field to set). */
    stats_slot_start(st->slot, role, o->index, st->pid, pipe_stage_now());
    /* Our circuits ack: seq 0 before our pid (release), so cuzkd never counts an ack of
     * the slot's previous process as ours. */
    st->circ_ack = &st->pl.circuits->ack[pipeline_stats_slot_index(st->pl.config, role, o->index)];
    barrier_store_relaxed(&st->circ_ack->seq, 0);
    barrier_store_relaxed(&st->circ_ack->failed, 0);
    barrier_store_release(&st->circ_ack->pid, (uint32_t)st->pid);
    rc = -pthread_create(&st->hb, NULL, hb_main, st);
    if (rc) {
        snprintf(err, errlen, "starting the heartbeat thread: %s", strerror(-rc));
        goto err_detach;
    }
    st->hb_started = 1;
    return 0;

err_detach:
    pipeline_detach(&st->pl);
err:
    pthread_mutex_destroy(&st->mu);
    memset(st, 0, sizeof(*st));
    return rc;
}

void pipe_stage_close(struct pipe_stage *st)
{
    if (!st || !st->pl.config) return;
    if (st->hb_started) {
        atomic_store_explicit(&st->hb_quit, 1, memory_order_relaxed);
        pthread_join(st->hb, NULL);
    }
    pipe_stage_enter(st, STATS_IDLE);
    for (int i = 0; i < PIPE_ZKEY_CACHE; i++)
        if (st->zc[i].used) zkey_close(&st->zc[i].z);
    pipeline_detach(&st->pl);
    pthread_mutex_destroy(&st->mu);
    memset(st, 0, sizeof(*st));
}

void pipe_stage_enter_at(struct pipe_stage *st, uint32_t state, uint64_t now_ns)
{
    pthread_mutex_lock(&st->mu);
    stats_slot_enter(st->slot, state, now_ns);
    pthread_mutex_unlock(&st->mu);
}

void pipe_stage_enter(struct pipe_stage *st, uint32_t state)
{
    /* now is read under the lock: a heartbeat thread cannot move since_ns past it. */
    pthread_mutex_lock(&st->mu);
    stats_slot_enter(st->slot, state, pipe_stage_now());
    pthread_mutex_unlock(&st->mu);
}

void pipe_stage_heartbeat(struct pipe_stage *st)
{
    pthread_mutex_lock(&st->mu);
    stats_slot_heartbeat(st->slot, pipe_stage_now());
    pthread_mutex_unlock(&st->mu);
}

void pipe_stage_count(struct pipe_stage *st, uint32_t counter, uint64_t delta)
{
    pthread_mutex_lock(&st->mu);
    stats_counter_add(st->slot, counter, delta);
    pthread_mutex_unlock(&st->mu);
}

void pipe_stage_gauges(struct pipe_stage *st, uint32_t first, const uint64_t *v, uint32_t n)
{
    pthread_mutex_lock(&st->mu);
    stats_gauges_set(st->slot, first, v, n);
    pthread_mutex_unlock(&st->mu);
}

void pipe_stage_name_gauge(struct pipe_stage *st, uint32_t g, const char *name)
{
    pthread_mutex_lock(&st->mu);
    stats_slot_name_gauge(st->slot, g, name);
    pthread_mutex_unlock(&st->mu);
}

void pipe_stage_hist(struct pipe_stage *st, uint32_t hist, uint64_t ns)
{
    pthread_mutex_lock(&st->mu);
    stats_hist_record(st->slot, hist, ns);
    pthread_mutex_unlock(&st->mu);
}

void pipe_stage_names(struct pipe_stage *st, const char *const *states, const char *const *counters,
                      const char *const *hists)
{
    pthread_mutex_lock(&st->mu);
    for (uint32_t i = 0; states && states[i]; i++)
        stats_slot_name_state(st->slot, STATS_STAGE0 + i, states[i]);
    for (uint32_t i = 0; counters && counters[i]; i++) stats_slot_name_counter(st->slot, i, counters[i]);
    for (uint32_t i = 0; hists && hists[i]; i++) stats_slot_name_hist(st->slot, i, hists[i]);
    pthread_mutex_unlock(&st->mu);
}

void pipe_stage_long_begin(struct pipe_stage *st)
{
    /* Relaxed: the hb thread reads a start at most one period old or new. */
    atomic_store_explicit(&st->long_since, pipe_stage_now(), memory_order_relaxed);
    atomic_store_explicit(&st->in_long_call, 1, memory_order_relaxed);
}

void pipe_stage_long_end(struct pipe_stage *st)
{
    atomic_store_explicit(&st->in_long_call, 0, memory_order_relaxed);
    pipe_stage_heartbeat(st);
}

static int same_file(const struct pipe_zkey_entry *e, const struct stat *sb)
{
    return e->dev == sb->st_dev && e->ino == sb->st_ino && e->size == sb->st_size &&
        e->mtim.tv_sec == sb->st_mtim.tv_sec && e->mtim.tv_nsec == sb->st_mtim.tv_nsec;
}

int pipe_stage_zkey(struct pipe_stage *st, const char *path, const zkey **out, char *err, size_t errlen)
{
    struct pipe_zkey_entry *victim = NULL;
    struct stat sb, sa;
    int rc, pinned = 0;

    if (stat(path, &sb) < 0)
        return binfile_err(err, errlen, CUZK_E_IO, "cannot open zkey %s: %s", path, strerror(errno));
    for (int i = 0; i < PIPE_ZKEY_CACHE; i++) {
        struct pipe_zkey_entry *e = &st->zc[i];

        if (e->used && same_file(e, &sb)) {
            e->last_use = ++st->zc_clock;
            *out = &e->z;
            return 0;
        }
    }
    /* Miss. An entry under the same path is an older version of the file: drop it
     * (it would never be hit again); else take a free slot, else the least recent. */
    for (int i = 0; i < PIPE_ZKEY_CACHE && !victim; i++)
        if (st->zc[i].used && !strcmp(st->zc[i].path, path)) {
            victim = &st->zc[i];
            pinned = victim->pinned; /* a preloaded path stays preloaded */
        }
    for (int i = 0; i < PIPE_ZKEY_CACHE && !victim; i++)
        if (!st->zc[i].used) victim = &st->zc[i];
    /* The least recent, unpinned first (at most PIPE_PRELOAD_MAX are pinned). */
    if (!victim)
        for (int i = 0; i < PIPE_ZKEY_CACHE; i++)
            if (!st->zc[i].pinned && (!victim || st->zc[i].last_use < victim->last_use)) victim = &st->zc[i];
    if (!victim) {
        victim = &st->zc[0];
        for (int i = 1; i < PIPE_ZKEY_CACHE; i++)
            if (st->zc[i].last_use < victim->last_use) victim = &st->zc[i];
    }
    if (victim->used) {
        zkey_close(&victim->z);
        victim->used = 0;
    }
    victim->pinned = 0;
    /* The identity must be the one of the bytes mapped: stat again after the open and
     * retry if the file changed under us (replaced or rewritten during the open). */
    for (int tries = 0;; tries++) {
        rc = zkey_open(&victim->z, path, err, errlen);
        if (rc) return rc;
        if (stat(path, &sa) == 0 && sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino &&
            sa.st_size == sb.st_size && sa.st_mtim.tv_sec == sb.st_mtim.tv_sec &&
            sa.st_mtim.tv_nsec == sb.st_mtim.tv_nsec)
            break;
        zkey_close(&victim->z);
        if (tries == 3)
            return binfile_err(err, errlen, CUZK_E_IO,
                               "zkey %s keeps changing while it is "
                               "being opened: is it still being written?",
                               path);
        if (stat(path, &sb) < 0)
            return binfile_err(err, errlen, CUZK_E_IO, "cannot open zkey %s: %s", path, strerror(errno));
    }
    victim->used = 1;
    victim->dev = sb.st_dev;
    victim->ino = sb.st_ino;
    victim->size = sb.st_size;
    victim->mtim = sb.st_mtim;
    victim->last_use = ++st->zc_clock;
    victim->pinned = pinned;
    snprintf(victim->path, sizeof(victim->path), "%s", path);
    *out = &victim->z;
    return 0;
}

int pipe_stage_job_zkey(struct pipe_stage *st, const char *open_path, const char *shown_path,
                        const zkey **out, char *err, size_t errlen)
{
    pipe_stage_long_begin(st);
    int rc = pipe_stage_zkey(st, open_path, out, err, errlen);
    pipe_stage_long_end(st);
    if (rc) pipe_err_rename(err, errlen, open_path, shown_path);
    return rc;
}

static void touch_range(const uint8_t *p, size_t len)
{
    const uintptr_t pg = (uintptr_t)sysconf(_SC_PAGESIZE);
    const uintptr_t a = (uintptr_t)p & ~(pg - 1), end = (uintptr_t)p + len;
    volatile uint8_t sink = 0;

    if (!len) return;
    (void)madvise((void *)a, end - a, MADV_WILLNEED); /* a hint: failure changes nothing */
    /* One read per page faults it in (the mapping is page-aligned, so a is inside). */
    for (uintptr_t q = a; q < end; q += pg) sink ^= *(const volatile uint8_t *)q;
    (void)sink;
}

void pipe_zkey_touch(const zkey *z, const uint32_t *ids, unsigned n)
{
    if (!n) {
        touch_range(z->bf.map, z->bf.size);
        return;
    }
    for (unsigned i = 0; i < n; i++) {
        const struct binfile_section *sec = binfile_section(&z->bf, ids[i]);

        if (sec) touch_range(binfile_payload(&z->bf, sec), sec->size);
    }
}

/* The path a stage opens for entry c (its copy in cuzkd, else its own path). */
static const char *circuit_path(const struct pipe_stage *st, const struct pipe_circuit *c, char *buf,
                                size_t len)
{
    return pipe_input_path(&st->pl, c->fd, c->path, buf, len);
}

static int preloaded(const struct pipe_stage *st, const struct pipe_circuit *tab, const char *path)
{
    char b[64];

    for (int i = 0; i < PIPE_CIRCUITS; i++)
        if (tab[i].action == PIPE_CIRCUIT_PRELOAD && !strcmp(circuit_path(st, &tab[i], b, sizeof(b)), path))
            return 1;
    return 0;
}

int pipe_stage_circuits(struct pipe_stage *st, pipe_circuit_fn fn, void *arg)
{
    struct pipe_circuits *cs = st->pl.circuits;
    struct pipe_circuit_ack *ack = st->circ_ack;
    struct pipe_circuit tab[PIPE_CIRCUITS];
    uint64_t s0, pre = 0, ev = 0;
    uint32_t failed = 0;
    char err[1024];
    int n = 0;

    if (!cs || !ack) return 0;
    /* A1: acquire pairs with R1 in pipeline_circuit_request (the entries written). */
    s0 = barrier_load_acquire(&cs->seq);
    if (s0 == st->circ_seq || (s0 & 1)) return 0;
    /* Plain copy; a torn one is discarded by the seq check (A2 pairs with W1). */
    memcpy(tab, cs->c, sizeof(tab));
    barrier_fence_acquire();
    if (barrier_load_relaxed(&cs->seq) != s0) return 0; /* being written: the next iteration */
    pipe_stage_long_begin(st);
    for (int i = 0; i < PIPE_CIRCUITS; i++) {
        struct pipe_circuit *c = &tab[i];

        char ob[64];
        const char *op;

        c->path[sizeof(c->path) - 1] = '\0';
        if (c->action != PIPE_CIRCUIT_EVICT || c->seq <= st->circ_seq) continue;
        n++;
        op = circuit_path(st, c, ob, sizeof(ob));
        for (int j = 0; j < PIPE_ZKEY_CACHE; j++) {
            struct pipe_zkey_entry *e = &st->zc[j];

            if (!e->used || strcmp(e->path, op)) continue;
            if (fn) fn(st, PIPE_CIRCUIT_EVICT, e, arg);
            zkey_close(&e->z);
            e->used = 0;
            e->pinned = 0;
            ev++;
        }
    }
    for (int j = 0; j < PIPE_ZKEY_CACHE; j++)
        if (st->zc[j].pinned && !preloaded(st, tab, st->zc[j].path)) st->zc[j].pinned = 0;
    for (int i = 0; i < PIPE_CIRCUITS; i++) {
        const struct pipe_circuit *c = &tab[i];
        const zkey *z;
        char ob[64];

        if (c->action != PIPE_CIRCUIT_PRELOAD) continue;
        if (c->seq <= st->circ_seq) {
            failed |= st->circ_failed & (1u << i);
            continue;
        }
        n++;
        if (pipe_stage_zkey(st, circuit_path(st, c, ob, sizeof(ob)), &z, err, sizeof(err))) {
            pipe_err_rename(err, sizeof(err), ob, c->path);
            failed |= 1u << i;
            fprintf(stderr, "cuzk stage pid %d: preload of %s failed: %s\n", (int)st->pid, c->path, err);
            continue;
        }
        for (int j = 0; j < PIPE_ZKEY_CACHE; j++) {
            struct pipe_zkey_entry *e = &st->zc[j];

            if (&e->z != z) continue;
            e->pinned = 1;
            if (fn)
                fn(st, PIPE_CIRCUIT_PRELOAD, e, arg);
            else
                pipe_zkey_touch(z, NULL, 0);
        }
        pre++;
    }
    pipe_stage_long_end(st);
    /* Single writer of our ack: relaxed counters, then the seq (release) last. */
    barrier_store_relaxed(&ack->preloads, barrier_load_relaxed(&ack->preloads) + pre);
    barrier_store_relaxed(&ack->evicts, barrier_load_relaxed(&ack->evicts) + ev);
    barrier_store_relaxed(&ack->failed, failed);
    barrier_store_release(&ack->seq, s0);
    st->circ_seq = s0;
    st->circ_failed = failed;
    return n;
}

uint32_t pipe_stage_wait_state(const struct pipe_stage *st)
{
    const struct jobtab *jt = &st->pl.data.jobtab;

    for (uint32_t j = 0; j < jt->hdr->max_jobs; j++)
        /* Relaxed: a display hint; a job seen one poll late costs nothing. */
        if (jobtab_word_state(barrier_load_relaxed(&jt->jobs[j].word)) == JOBTAB_QUEUED)
            return STATS_WAIT_INPUT;
    return STATS_IDLE;
}

int pipe_stage_fail_part(struct pipe_stage *st, uint32_t p, uint32_t state, uint32_t counter,
                         const char *file, const char *msg, char *reason, size_t len)
{
    pipe_stage_orphan_check(&st->pl);
    pipe_reason(reason, len, file, msg);
    if (jobtab_part_fail(&st->pl.data.jobtab, p, state, (uint32_t)st->pid, reason) != 0) return 0;
    pipe_stage_count(st, counter, 1);
    return 1;
}

int pipe_stage_push_wait(struct pipe_stage *st, struct pipe_push_wait *w)
{
    if (!w->waited++) pipe_stage_enter(st, STATS_WAIT_OUTPUT);
    pipe_stage_heartbeat(st);
    if (!pipe_stage_stopping(st)) return 0;
    if (!w->t_stop)
        w->t_stop = pipe_stage_now();
    else if (pipe_stage_now() - w->t_stop > 1000000000ull)
        return 1;
    return 0;
}

static _Atomic int main_stop;

static void on_term(int sig)
{
    (void)sig;
    /* Lock-free atomic store: async-signal-safe. */
    atomic_store_explicit(&main_stop, 1, memory_order_relaxed);
}

static int parse_u32(const char *s, uint32_t *out)
{
    char *end;
    unsigned long v;

    errno = 0;
    v = strtoul(s, &end, 10);
    if (!*s || *end || errno || v > UINT32_MAX) return -1;
    *out = (uint32_t)v;
    return 0;
}

int pipe_stage_job_try_complete(struct pipe_stage *st, uint32_t job)
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

int pipe_stage_main(int argc, char **argv, const char *prog, const char *what, unsigned extra,
                    pipe_stage_fn run)
{
    static const struct option opts[] = {
        { "instance", required_argument, NULL, 'i' },
        { "index", required_argument, NULL, 'x' },
        { "generation", required_argument, NULL, 'g' },
        { "threads", required_argument, NULL, 't' },
        { "backend", required_argument, NULL, 'b' },
        { "precompute-mb", required_argument, NULL, 'P' },
        { "trim-every", required_argument, NULL, 'T' },
        { "test-trim-delay-ms", required_argument, NULL, 'D' },
        { "doorbell-fd", required_argument, NULL, 'd' },
        { "verbose", no_argument, NULL, 'v' },
        { "help", no_argument, NULL, 'h' },
        { NULL, 0, NULL, 0 },
    };
    struct pipe_stage_opts o = { .backend = "cpu",
                                 .trim_every = 16,
                                 .precompute_mb = PIPE_PRECOMPUTE_MB_DEFAULT,
                                 .stop = &main_stop,
                                 .doorbell_fd = -1,
                                 .self_exe = "/proc/self/exe" };
    struct sigaction sa;
    char usage[4096], err[1024] = "";
    uint32_t v;
    int c, rc;

    snprintf(usage, sizeof(usage),
             "usage: %s --instance NAME [--index I] [options]\n"
             "  %s\n"
             "  Started by cuzkd; attaches the instance's shared segments.\n"
             "  --instance NAME   the cuzkd instance (segments cuzk-NAME.data/.stats)\n"
             "  --index I         which %s this is (default 0)\n"
             "  --generation G    restart count, from cuzkd (informative: the stats slot\n"
             "                    counts its own restarts)\n"
             "  --threads N       worker threads (default: all online CPUs)\n"
             "  --doorbell-fd N   an eventfd inherited from cuzkd, written when this stage\n"
             "                    decides a job, so waiters hear of it at once\n"
             "%s%s"
             "  --verbose         one line per partition on stderr\n",
             prog, what, prog,
             extra & PIPE_OPT_BACKEND
                 ? "  --backend NAME    proving backend: cpu (default), or cuda[:DEVICE]\n"
                   "                    (CUDA builds; DEVICE defaults to the index)\n"
                   "  --precompute-mb N per-circuit tables kept between partitions\n"
                   "                    (NTT domains; default 512, 0 keeps none)\n"
                 : "",
             extra & PIPE_OPT_TRIM ? "  --trim-every N    malloc_trim after every N partitions "
                                     "(default 16; also after 1 s idle)\n"
                                     "  --test-trim-delay-ms N   tests only: trim after every "
                                     "partition, N ms more\n"
                                   : "");
    /* the exit codes from error.c's table, after the options */
    size_t un = strlen(usage);
    FILE *uf = fmemopen(usage + un, sizeof(usage) - un, "w");
    if (uf) {
        cuzk_exit_help(uf, CUZK_PROG_STAGE, NULL);
        fclose(uf);
    }
    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, "+h", opts, NULL)) != -1) {
        switch (c) {
        case 'i': o.instance = optarg; break;
        case 'x':
            if (parse_u32(optarg, &o.index)) goto bad_num;
            break;
        case 'g':
            if (parse_u32(optarg, &o.generation)) goto bad_num;
            break;
        case 't':
            if (parse_u32(optarg, &v)) goto bad_num;
            o.threads = v;
            break;
        case 'b':
            if (!(extra & PIPE_OPT_BACKEND)) goto bad;
            o.backend = optarg;
            break;
        case 'P':
            if (!(extra & PIPE_OPT_BACKEND) || parse_u32(optarg, &o.precompute_mb)) goto bad;
            break;
        case 'T':
            if (!(extra & PIPE_OPT_TRIM) || parse_u32(optarg, &o.trim_every)) goto bad;
            break;
        case 'D':
            if (!(extra & PIPE_OPT_TRIM) || parse_u32(optarg, &o.test_trim_delay_ms)) goto bad;
            break;
        case 'd':
            /* Only an open descriptor is taken: a wrong number must not make the
             * stage write 8 bytes into whatever file has it. */
            if (parse_u32(optarg, &v) || !v || v > INT_MAX || fcntl((int)v, F_GETFD) < 0) goto bad;
            o.doorbell_fd = (int)v;
            break;
        case 'v': o.verbose = 1; break;
        case 'h': fputs(usage, stdout); return CUZK_EXIT_OK;
        default: goto bad;
        }
    }
    if (optind != argc || !o.instance) {
        fprintf(stderr, "%s: %s\n%s", prog, optind != argc ? "unexpected argument" : "--instance is required",
                usage);
        return CUZK_EXIT_USAGE;
    }
    if (!o.threads) {
        long n = sysconf(_SC_NPROCESSORS_ONLN);

        o.threads = n > 0 ? (unsigned)n : 1;
    }
    /* Die with cuzkd even if it is SIGKILLed (it sets this too; harmless twice). */
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = on_term;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);
    rc = run(&o, err, sizeof(err));
    if (rc)
        fprintf(stderr, "%s[%d] %s %u: %s\n", prog, (int)getpid(), o.instance, o.index,
                err[0] ? err : cuzk_strerror(rc));
    /* 0 -> 0, -CUZK_E_INTERNAL -> 100 (bug), anything else -> 111 (system) */
    return cuzk_exit_code(rc, CUZK_PROG_STAGE);

bad_num:
    fprintf(stderr, "%s: --%s needs a non-negative number\n%s", prog,
            c == 'x'       ? "index"
                : c == 'g' ? "generation"
                           : "threads",
            usage);
    return CUZK_EXIT_USAGE;
bad:
    fprintf(stderr, "%s: unknown, incomplete or invalid option\n%s", prog, usage);
    return CUZK_EXIT_USAGE;
}

void pipe_reason(char *dst, size_t len, const char *file, const char *msg)
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
