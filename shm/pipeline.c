/* pipeline.c — the instance's segments as the pipeline sees them (regions, rings,
 * stats slots), job submission, and the bits every stage loop shares: slot claim,
 * heartbeat, state accounting, the zkey cache. Contract in include/cuzk/pipeline.h. */
#include "cuzk/pipeline.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
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

#define DEFAULT_CLIENTS 4u
#define HB_PERIOD_NS 50000000ull /* heartbeat thread: 50 ms, half the 100 ms promise */

static uint32_t pow2_at_least(uint64_t n)
{
    uint32_t c = 8;

    while (c < n && c < RING_CAPACITY_MAX)
        c <<= 1;
    return c;
}

/* ---- segments ------------------------------------------------------------------- */

static int views(struct pipeline *pl, char *err, size_t errlen)
{
    uint64_t sz;
    const struct pipe_config *c;

    pl->config = segment_region_ptr(&pl->data.seg, "config", &sz);
    c = pl->config;
    if (!c || sz < sizeof(*c) || c->magic != PIPE_CONFIG_MAGIC || !c->n_workers ||
        c->n_workers > PIPE_MAX_WORKERS || c->max_parts != pl->data.jobtab.hdr->max_parts ||
        pl->data.n_rings < PIPE_RING_FINAL(c->n_workers) + 1) {
        snprintf(err, errlen, "segment %s: pipeline config region missing or inconsistent "
                 "(created by another version of cuzkd?)", pl->data.seg.name);
        return -EBADMSG;
    }
    pl->partinfo = segment_region_ptr(&pl->data.seg, "partinfo", &sz);
    if (!pl->partinfo || sz < (uint64_t)c->max_parts * sizeof(struct pipe_partinfo)) {
        snprintf(err, errlen, "segment %s: partinfo region missing or short", pl->data.seg.name);
        return -EBADMSG;
    }
    pl->results = segment_region_ptr(&pl->data.seg, "results", &sz);
    if (!pl->results || sz < (uint64_t)c->max_parts * sizeof(struct pipe_result)) {
        snprintf(err, errlen, "segment %s: results region missing or short", pl->data.seg.name);
        return -EBADMSG;
    }
    pl->publics = segment_region_ptr(&pl->data.seg, "publics", &sz);
    if (!pl->publics || sz < (uint64_t)c->max_parts * sizeof(struct pipe_publics)) {
        snprintf(err, errlen, "segment %s: publics region missing or short", pl->data.seg.name);
        return -EBADMSG;
    }
    pl->circuits = segment_region_ptr(&pl->data.seg, "circuits", &sz);
    if (!pl->circuits || sz < sizeof(struct pipe_circuits) +
                              (uint64_t)c->n_slots * sizeof(struct pipe_circuit_ack)) {
        snprintf(err, errlen, "segment %s: circuits region missing or short", pl->data.seg.name);
        return -EBADMSG;
    }
    if (pl->stats.page && pl->stats.page->slot_count < c->n_slots) {
        snprintf(err, errlen, "stats segment of \"%s\" has %u slots, config says %u",
                 pl->instance, pl->stats.page->slot_count, c->n_slots);
        return -EBADMSG;
    }
    return 0;
}

int pipeline_create(struct pipeline *pl, const char *instance, const struct pipe_params *p,
                    unsigned flags, char *err, size_t errlen)
{
    struct shmlayout_config cfg;
    struct pipe_config pc;
    uint32_t cap;
    int rc;

    memset(pl, 0, sizeof(*pl));
    if (!p->n_workers || p->n_workers > PIPE_MAX_WORKERS || !p->n_synth || !p->max_jobs ||
        !p->max_parts || !p->buf_count || !p->buf_size ||
        PIPE_RING_FINAL(p->n_workers) + 1 > SHMLAYOUT_MAX_RINGS) {
        snprintf(err, errlen, "instance \"%s\": workers must be 1-%d; synth, jobs, partitions, "
                 "buffers and buffer size non-zero", instance, PIPE_MAX_WORKERS);
        return -EINVAL;
    }
    memset(&pc, 0, sizeof(pc));
    pc.magic = PIPE_CONFIG_MAGIC;
    pc.n_workers = p->n_workers;
    pc.n_synth = p->n_synth;
    pc.max_parts = p->max_parts;
    pc.max_jobs = p->max_jobs;
    pc.n_final = 1;
    pc.buf_count = p->buf_count;
    pc.n_clients = p->n_clients ? p->n_clients : DEFAULT_CLIENTS;
    pc.n_slots = 1 + pc.n_synth + pc.n_workers + pc.n_final + pc.n_clients;
    for (uint32_t i = 0; i < PIPE_MAX_WORKERS; i++) {
        /* zeroed params (tests, one node): node 0 for all, which routes everything */
        pc.worker_node[i] = p->worker_node[i] < 0 || p->worker_node[i] >= (int)PIPE_NODE_NONE ?
            PIPE_NODE_NONE : (uint8_t)p->worker_node[i];
        pc.synth_node[i] = p->synth_node[i] < 0 || p->synth_node[i] >= (int)PIPE_NODE_NONE ?
            PIPE_NODE_NONE : (uint8_t)p->synth_node[i];
    }
    pc.supervisor_pid = (uint32_t)getpid(); /* the creator holds the input copies */
    pc.long_call_s = p->long_call_s;
    {
        uint64_t page = (uint64_t)sysconf(_SC_PAGESIZE);

        pc.buf_size = (p->buf_size + page - 1) / page * page;
    }

    memset(&cfg, 0, sizeof(cfg));
    cfg.n_rings = PIPE_RING_FINAL(p->n_workers) + 1;
    /* Every partition's hint fits each ring twice over: duplicates re-pushed after a
     * death never make a push wait on a full ring in practice. */
    cap = p->ring_capacity ? p->ring_capacity : pow2_at_least(2ull * p->max_parts);
    for (uint32_t i = 0; i < cfg.n_rings; i++)
        cfg.ring_capacity[i] = cap;
    cfg.max_jobs = p->max_jobs;
    cfg.max_parts = p->max_parts;
    cfg.buf_count = p->buf_count;
    cfg.buf_size = pc.buf_size;
    cfg.n_nodes = p->n_nodes;
    memcpy(cfg.numa_node, p->numa_node, sizeof(cfg.numa_node));
    memcpy(cfg.node_buf_count, p->node_buf_count, sizeof(cfg.node_buf_count));
    cfg.n_extra = 5;
    snprintf(cfg.extra[0].name, SEG_REGION_NAME, "config");
    cfg.extra[0].size = sizeof(pc);
    cfg.extra[0].init = &pc;
    cfg.extra[0].init_len = sizeof(pc);
    snprintf(cfg.extra[1].name, SEG_REGION_NAME, "partinfo");
    cfg.extra[1].size = (uint64_t)p->max_parts * sizeof(struct pipe_partinfo);
    snprintf(cfg.extra[2].name, SEG_REGION_NAME, "results");
    cfg.extra[2].size = (uint64_t)p->max_parts * sizeof(struct pipe_result);
    snprintf(cfg.extra[3].name, SEG_REGION_NAME, "circuits");
    cfg.extra[3].size = sizeof(struct pipe_circuits) +
                        (uint64_t)pc.n_slots * sizeof(struct pipe_circuit_ack);
    snprintf(cfg.extra[4].name, SEG_REGION_NAME, "publics");
    cfg.extra[4].size = (uint64_t)p->max_parts * sizeof(struct pipe_publics);

    snprintf(pl->instance, sizeof(pl->instance), "%s", instance);
    rc = shmlayout_data_create(&pl->data, instance, &cfg, flags, err, errlen);
    if (rc)
        return rc;
    rc = shmlayout_stats_create(&pl->stats, instance, pc.n_slots, flags, err, errlen);
    if (rc)
        goto err_data;
    rc = views(pl, err, errlen);
    if (rc)
        goto err_stats;
    return 0;

err_stats:
    shmlayout_stats_detach(&pl->stats);
    segment_destroy(instance, SEG_KIND_STATS);
err_data:
    shmlayout_data_detach(&pl->data);
    segment_destroy(instance, SEG_KIND_DATA);
    memset(pl, 0, sizeof(*pl));
    return rc;
}

int pipeline_attach(struct pipeline *pl, const char *instance, char *err, size_t errlen)
{
    int rc;

    memset(pl, 0, sizeof(*pl));
    snprintf(pl->instance, sizeof(pl->instance), "%s", instance);
    rc = shmlayout_data_attach(&pl->data, instance, err, errlen);
    if (rc)
        return rc;
    rc = shmlayout_stats_attach(&pl->stats, instance, 0, err, errlen);
    if (!rc)
        rc = views(pl, err, errlen);
    if (rc)
        pipeline_detach(pl);
    return rc;
}

void pipeline_detach(struct pipeline *pl)
{
    if (!pl)
        return;
    shmlayout_stats_detach(&pl->stats);
    shmlayout_data_detach(&pl->data);
    memset(pl, 0, sizeof(*pl));
}

int pipeline_destroy(const char *instance)
{
    int a = segment_destroy(instance, SEG_KIND_DATA);
    int b = segment_destroy(instance, SEG_KIND_STATS);

    return a ? a : b;
}

struct ring *pipeline_ring(const struct pipeline *pl, uint32_t ring)
{
    return ring < pl->data.n_rings ? pl->data.rings[ring] : NULL;
}

struct pipe_partinfo *pipeline_partinfo(const struct pipeline *pl, uint32_t part)
{
    return part < pl->config->max_parts ? &pl->partinfo[part] : NULL;
}

struct pipe_result *pipeline_result(const struct pipeline *pl, uint32_t part)
{
    return part < pl->config->max_parts ? &pl->results[part] : NULL;
}

struct pipe_publics *pipeline_publics(const struct pipeline *pl, uint32_t part)
{
    return part < pl->config->max_parts ? &pl->publics[part] : NULL;
}

const struct pipe_config *pipeline_config(const struct pipeline *pl)
{
    return pl->config;
}

/* Relaxed: the owner's later CAS publishes them to the next stage; `status` reads
 * them racily on purpose (pipeline.h, struct pipe_part_times). */
void pipe_part_begin(struct pipeline *pl, uint32_t part, unsigned k, uint32_t who,
                     uint64_t t_ns)
{
    struct pipe_partinfo *pi = pipeline_partinfo(pl, part);

    if (!pi || k >= PIPE_T_STAGES)
        return;
    barrier_store_relaxed(&pi->times.end_ns[k], 0);
    if (k == PIPE_T_SYNTH) /* a retry takes its buffer anew */
        barrier_store_relaxed(&pi->times.buf_node, 0);
    barrier_store_relaxed(&pi->times.who[k], who);
    barrier_store_relaxed(&pi->times.begin_ns[k], t_ns);
}

void pipe_part_end(struct pipeline *pl, uint32_t part, unsigned k, uint64_t t_ns)
{
    struct pipe_partinfo *pi = pipeline_partinfo(pl, part);

    if (pi && k < PIPE_T_STAGES)
        barrier_store_relaxed(&pi->times.end_ns[k], t_ns);
}

int pipeline_stats_slot_index(const struct pipe_config *c, enum stats_role role, uint32_t index)
{
    uint32_t base, n;

    switch (role) {
    case STATS_ROLE_SUPERVISOR: base = 0; n = 1; break;
    case STATS_ROLE_SYNTH: base = 1; n = c->n_synth; break;
    case STATS_ROLE_GPUWORKER: base = 1 + c->n_synth; n = c->n_workers; break;
    case STATS_ROLE_FINALIZER: base = 1 + c->n_synth + c->n_workers; n = c->n_final; break;
    case STATS_ROLE_CLIENT:
        base = 1 + c->n_synth + c->n_workers + c->n_final;
        n = c->n_clients;
        break;
    default: return -EINVAL;
    }
    return index < n ? (int)(base + index) : -EINVAL;
}

struct stats_slot *pipeline_stats_slot(const struct pipeline *pl, enum stats_role role,
                                       uint32_t index)
{
    int i = pipeline_stats_slot_index(pl->config, role, index);

    return i < 0 || !pl->stats.page ? NULL : stats_page_slot(pl->stats.page, (uint32_t)i);
}

/* "dir/w1.wtns" -> "w1" */
static void default_name(char *dst, size_t len, const char *wtns_path)
{
    const char *b = strrchr(wtns_path, '/');
    size_t n;

    b = b ? b + 1 : wtns_path;
    n = strlen(b);
    if (n > 5 && (!strcmp(b + n - 5, ".wtns") || !strcmp(b + n - 5, ".json")))
        n -= 5;
    snprintf(dst, len, "%.*s", (int)n, b);
}

static int too_long(const char *s, size_t max)
{
    return s && strlen(s) >= max;
}

int pipeline_submit_job(struct pipeline *pl, const char *zkey_path, const char *out_dir,
                        int32_t priority, uint32_t n_parts, const struct pipe_submit_part *parts,
                        uint64_t now_ns, uint32_t *job, char *err, size_t errlen)
{
    return pipeline_submit_job_fds(pl, zkey_path, -1, out_dir, -1, priority, n_parts, parts,
                                   now_ns, job, err, errlen);
}

int pipeline_submit_job_fds(struct pipeline *pl, const char *zkey_path, int zkey_fd,
                            const char *out_dir, int out_fd, int32_t priority, uint32_t n_parts,
                            const struct pipe_submit_part *parts, uint64_t now_ns,
                            uint32_t *job, char *err, size_t errlen)
{
    struct jobtab *jt = &pl->data.jobtab;
    struct jobtab_job *jb;
    uint32_t j, lost = 0;
    int rc;

    if (!n_parts || !parts || !zkey_path || !out_dir) {
        snprintf(err, errlen, "submit: a job needs a zkey, an output directory and at least "
                 "one witness");
        return -EINVAL;
    }
    if (too_long(zkey_path, JOBTAB_PATH_LEN) || too_long(out_dir, JOBTAB_PATH_LEN)) {
        snprintf(err, errlen, "submit: %s is longer than %d bytes",
                 too_long(zkey_path, JOBTAB_PATH_LEN) ? zkey_path : out_dir,
                 JOBTAB_PATH_LEN - 1);
        return -ENAMETOOLONG;
    }
    for (uint32_t i = 0; i < n_parts; i++) {
        const struct pipe_submit_part *sp = &parts[i];
        char nm[PIPE_NAME_LEN];

        if (!sp->wtns_path || !sp->wtns_path[0]) {
            snprintf(err, errlen, "submit: witness %u has no path", i);
            return -EINVAL;
        }
        if (too_long(sp->wtns_path, JOBTAB_PATH_LEN) || too_long(sp->r1cs_path, JOBTAB_PATH_LEN) ||
            too_long(sp->wgen_path, JOBTAB_PATH_LEN) || too_long(sp->name, PIPE_NAME_LEN)) {
            snprintf(err, errlen, "submit: a path of witness %s is longer than %d bytes (name: "
                     "%d)", sp->wtns_path, JOBTAB_PATH_LEN - 1, PIPE_NAME_LEN - 1);
            return -ENAMETOOLONG;
        }
        if (!sp->name || !sp->name[0]) {
            const char *b = strrchr(sp->wtns_path, '/');

            b = b ? b + 1 : sp->wtns_path;
            if (strlen(b) >= PIPE_NAME_LEN + 5) {
                snprintf(err, errlen, "submit: the name of witness %s is longer than %d "
                         "bytes: give a shorter name", sp->wtns_path, PIPE_NAME_LEN - 1);
                return -ENAMETOOLONG;
            }
            default_name(nm, sizeof(nm), sp->wtns_path);
            if (!nm[0]) {
                snprintf(err, errlen, "submit: witness %s gives an empty output name",
                         sp->wtns_path);
                return -EINVAL;
            }
        }
    }
    rc = jobtab_job_add(jt, n_parts, zkey_path, out_dir, now_ns, &j);
    if (rc) {
        snprintf(err, errlen, rc == -ENOSPC ? "submit: the job table is full (%u partitions "
                 "asked): wait for running jobs or raise the limits" : "submit: %u partitions "
                 "is more than the table holds", n_parts);
        return rc;
    }
    jb = &jt->jobs[j];
    /* Plain store: published to the synth by the release of the ring pushes below
     * (and of the seals); a stale hint that claims earlier only mis-orders. */
    jb->priority = priority;
    jb->zkey_fd = zkey_fd > 0 ? zkey_fd : -1; /* published by the seals below, as the paths */
    jb->out_fd = out_fd > 0 ? out_fd : -1;
    jb->out_dev = jb->out_ino = 0;
    {
        struct stat od;

        if (out_fd > 0 && !fstat(out_fd, &od)) {
            jb->out_dev = (uint64_t)od.st_dev;
            jb->out_ino = (uint64_t)od.st_ino;
        }
    }
    for (uint32_t i = 0; i < n_parts; i++) {
        struct pipe_partinfo *pi = &pl->partinfo[jb->first_part + i];
        const struct pipe_submit_part *sp = &parts[i];

        snprintf(pi->wtns_path, sizeof(pi->wtns_path), "%s", sp->wtns_path);
        snprintf(pi->r1cs_path, sizeof(pi->r1cs_path), "%s", sp->r1cs_path ? sp->r1cs_path : "");
        snprintf(pi->wgen_path, sizeof(pi->wgen_path), "%s", sp->wgen_path ? sp->wgen_path : "");
        pi->wtns_fd = sp->wtns_fd > 0 ? sp->wtns_fd : -1;
        pi->r1cs_fd = sp->r1cs_fd > 0 ? sp->r1cs_fd : -1;
        pi->wgen_fd = sp->wgen_fd > 0 ? sp->wgen_fd : -1;
        if (sp->name && sp->name[0])
            snprintf(pi->name, sizeof(pi->name), "%s", sp->name);
        else
            default_name(pi->name, sizeof(pi->name), sp->wtns_path);
        for (unsigned k = 0; k < PIPE_T_STAGES; k++) { /* a new timeline (pipeline.h) */
            barrier_store_relaxed(&pi->times.begin_ns[k], 0);
            barrier_store_relaxed(&pi->times.end_ns[k], 0);
        }
        /* S1: release seals the entry; pairs with the acquire in the synth's check
         * (synth.c, "pairs with S1"). */
        barrier_store_release(&pi->job_id, jb->id);
    }
    for (uint32_t i = 0; i < n_parts; i++)
        if (ring_try_push(pl->data.rings[PIPE_RING_SYNTH], jb->first_part + i))
            lost++;
    *job = j;
    if (lost) {
        snprintf(err, errlen, "submit: job %llu: %u of %u hints did not fit the synth ring; "
                 "re-push its queued partitions", (unsigned long long)jb->id, lost, n_parts);
        return -ENOBUFS;
    }
    return 0;
}

/* ---- circuits table (supervisor side) ------------------------------------------- */

int pipeline_circuit_request(struct pipeline *pl, uint32_t action, const char *path,
                             uint64_t min_ack, uint64_t *seq, char *err, size_t errlen)
{
    return pipeline_circuit_request_fd(pl, action, path, -1, min_ack, seq, err, errlen);
}

int pipeline_circuit_request_fd(struct pipeline *pl, uint32_t action, const char *path, int fd,
                                uint64_t min_ack, uint64_t *seq, char *err, size_t errlen)
{
    struct pipe_circuits *cs = pl->circuits;
    struct pipe_circuit *e = NULL;
    uint32_t npre = 0;
    uint64_t v;

    if ((action != PIPE_CIRCUIT_PRELOAD && action != PIPE_CIRCUIT_EVICT) || !path || !path[0]) {
        snprintf(err, errlen, "circuits: bad request");
        return -EINVAL;
    }
    if (too_long(path, JOBTAB_PATH_LEN)) {
        snprintf(err, errlen, "zkey %s: path longer than %d bytes", path, JOBTAB_PATH_LEN - 1);
        return -ENAMETOOLONG;
    }
    /* Single writer: plain reads of our own table. */
    for (int i = 0; i < PIPE_CIRCUITS; i++) {
        if (cs->c[i].action == PIPE_CIRCUIT_PRELOAD)
            npre++;
        if (cs->c[i].action != PIPE_CIRCUIT_FREE && !strcmp(cs->c[i].path, path))
            e = &cs->c[i];
    }
    if (action == PIPE_CIRCUIT_PRELOAD && !(e && e->action == PIPE_CIRCUIT_PRELOAD) &&
        npre >= PIPE_PRELOAD_MAX) {
        snprintf(err, errlen, "%u circuits are preloaded already (at most %d, so jobs of "
                 "other circuits keep a cache entry): evict one first", npre, PIPE_PRELOAD_MAX);
        return -ENOSPC;
    }
    if (!e) {
        /* A free entry, else the oldest tombstone every running stage has applied. */
        for (int i = 0; i < PIPE_CIRCUITS && !e; i++)
            if (cs->c[i].action == PIPE_CIRCUIT_FREE)
                e = &cs->c[i];
        for (int i = 0; i < PIPE_CIRCUITS && !e; i++)
            if (cs->c[i].action == PIPE_CIRCUIT_EVICT && cs->c[i].seq <= min_ack &&
                (!e || cs->c[i].seq < e->seq))
                e = &cs->c[i];
        if (!e) {
            snprintf(err, errlen, "the stages are still applying %d earlier preload/evict "
                     "requests: retry in a moment", PIPE_CIRCUITS);
            return -EBUSY;
        }
    }
    /* Seqlock write (as stats.c): odd, fence (W1), the entry, even (release, R1). */
    v = barrier_load_relaxed(&cs->seq);
    barrier_store_relaxed(&cs->seq, v + 1);
    barrier_fence_release();
    e->seq = v + 2;
    e->action = action;
    e->fd = fd > 0 ? fd : -1; /* EVICT: the copy it dropped, whose path stages cached */
    snprintf(e->path, sizeof(e->path), "%s", path);
    barrier_store_release(&cs->seq, v + 2);
    *seq = v + 2;
    return 0;
}

const char *pipe_input_path(const struct pipeline *pl, int32_t fd, const char *display,
                            char *buf, size_t len)
{
    if (fd <= 0 || !pl->config || !pl->config->supervisor_pid)
        return display;
    snprintf(buf, len, "/proc/%u/fd/%d", pl->config->supervisor_pid, (int)fd);
    return buf;
}

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
    if (fd < 0)
        return errno == ENOENT || errno == ESRCH;
    n = read(fd, buf, sizeof(buf) - 1);
    close(fd);
    if (n <= 0)
        return n == 0 || errno == ESRCH;
    buf[n] = '\0';
    p = strrchr(buf, ')'); /* the command name may hold spaces and parentheses */
    if (!p)
        return 0;
    /* After ") ": state ppid pgrp session tty_nr tpgid flags (fields 3 to 9). */
    if (sscanf(p + 1, " %c %*d %*d %*d %*d %*d %lu", &state, &flags) != 2)
        return 0;
    return (flags & 0x4ul) != 0; /* PF_EXITING */
}

void pipe_stage_orphan_check(const struct pipeline *pl)
{
    uint32_t pid = pl->config ? pl->config->supervisor_pid : 0;

    if (!pid || !supervisor_exiting(pid))
        return;
    /* PDEATHSIG (SIGKILL) is on its way; if it never comes (we are not cuzkd's child,
     * e.g. a test harness), leave on our own: nothing may be recorded for a daemon
     * that is gone. */
    for (int i = 0; i < 1000 && getppid() == (pid_t)pid; i++)
        usleep(10000);
    _exit(PIPE_EXIT_SYSTEM);
}

void pipe_err_rename(char *msg, size_t len, const char *from, const char *to)
{
    char tmp[1024];
    const char *m = msg, *hit;
    size_t flen = strlen(from), o = 0;

    if (!flen || !len || !strcmp(from, to) || !strstr(msg, from))
        return;
    while ((hit = strstr(m, from)) && o < sizeof(tmp) - 1) {
        /* "/proc/P/fd/7" is not a hit inside "/proc/P/fd/71". */
        int whole = hit[flen] < '0' || hit[flen] > '9';

        o += (size_t)snprintf(tmp + o, sizeof(tmp) - o, "%.*s%s", (int)(hit - m), m,
                              whole ? to : from);
        m = hit + flen;
    }
    if (o < sizeof(tmp) - 1)
        snprintf(tmp + o, sizeof(tmp) - o, "%s", m);
    tmp[sizeof(tmp) - 1] = 0;
    snprintf(msg, len, "%s", tmp);
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
                fprintf(stderr, "cuzk stage pid %d: one call has run %.0f s (long-call-timeout "
                        "%u s): no more heartbeats, cuzkd will restart this stage\n",
                        (int)st->pid, (double)(now - t0) / 1e9, st->pl.config->long_call_s);
            }
        }
    }
    return NULL;
}

int pipe_stage_open(struct pipe_stage *st, const struct pipe_stage_opts *o,
                    enum stats_role role, char *err, size_t errlen)
{
    int rc;

    memset(st, 0, sizeof(*st));
    st->role = role;
    st->index = o->index;
    st->pid = getpid();
    st->stop = o->stop;
    pthread_mutex_init(&st->mu, NULL);
    rc = pipeline_attach(&st->pl, o->instance, err, errlen);
    if (rc)
        goto err;
    st->slot = pipeline_stats_slot(&st->pl, role, o->index);
    if (!st->slot) {
        snprintf(err, errlen, "instance %s has no stats slot for this stage with index %u "
                 "(n_synth %u, n_workers %u)", o->instance, o->index,
                 st->pl.config->n_synth, st->pl.config->n_workers);
        rc = -EINVAL;
        goto err_detach;
    }
    /* The slot's generation is bumped here by every start in this slot, so it counts
     * restarts without trusting --generation (which stats.h gives no field to set). */
    stats_slot_start(st->slot, role, o->index, st->pid, pipe_stage_now());
    /* Our circuits ack: seq 0 before our pid (release), so cuzkd never counts an ack of
     * the slot's previous process as ours. */
    st->circ_ack = &st->pl.circuits->ack[pipeline_stats_slot_index(st->pl.config, role,
                                                                   o->index)];
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
    if (!st || !st->pl.config)
        return;
    if (st->hb_started) {
        atomic_store_explicit(&st->hb_quit, 1, memory_order_relaxed);
        pthread_join(st->hb, NULL);
    }
    pipe_stage_enter(st, STATS_IDLE);
    for (int i = 0; i < PIPE_ZKEY_CACHE; i++)
        if (st->zc[i].used)
            zkey_close(&st->zc[i].z);
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

void pipe_stage_names(struct pipe_stage *st, const char *const *states,
                      const char *const *counters, const char *const *hists)
{
    pthread_mutex_lock(&st->mu);
    for (uint32_t i = 0; states && states[i]; i++)
        stats_slot_name_state(st->slot, STATS_STAGE0 + i, states[i]);
    for (uint32_t i = 0; counters && counters[i]; i++)
        stats_slot_name_counter(st->slot, i, counters[i]);
    for (uint32_t i = 0; hists && hists[i]; i++)
        stats_slot_name_hist(st->slot, i, hists[i]);
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

int pipe_stage_zkey(struct pipe_stage *st, const char *path, const zkey **out, char *err,
                    size_t errlen)
{
    struct pipe_zkey_entry *victim = NULL;
    struct stat sb, sa;
    int rc, pinned = 0;

    if (stat(path, &sb) < 0)
        return binfile_err(err, errlen, CUZK_E_IO, "cannot open zkey %s: %s", path,
                           strerror(errno));
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
        if (!st->zc[i].used)
            victim = &st->zc[i];
    /* The least recent, unpinned first (at most PIPE_PRELOAD_MAX are pinned). */
    if (!victim)
        for (int i = 0; i < PIPE_ZKEY_CACHE; i++)
            if (!st->zc[i].pinned && (!victim || st->zc[i].last_use < victim->last_use))
                victim = &st->zc[i];
    if (!victim) {
        victim = &st->zc[0];
        for (int i = 1; i < PIPE_ZKEY_CACHE; i++)
            if (st->zc[i].last_use < victim->last_use)
                victim = &st->zc[i];
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
        if (rc)
            return rc;
        if (stat(path, &sa) == 0 && sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino &&
            sa.st_size == sb.st_size && sa.st_mtim.tv_sec == sb.st_mtim.tv_sec &&
            sa.st_mtim.tv_nsec == sb.st_mtim.tv_nsec)
            break;
        zkey_close(&victim->z);
        if (tries == 3)
            return binfile_err(err, errlen, CUZK_E_IO, "zkey %s keeps changing while it is "
                               "being opened: is it still being written?", path);
        if (stat(path, &sb) < 0)
            return binfile_err(err, errlen, CUZK_E_IO, "cannot open zkey %s: %s", path,
                               strerror(errno));
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

static void touch_range(const uint8_t *p, size_t len)
{
    const uintptr_t pg = (uintptr_t)sysconf(_SC_PAGESIZE);
    const uintptr_t a = (uintptr_t)p & ~(pg - 1), end = (uintptr_t)p + len;
    volatile uint8_t sink = 0;

    if (!len)
        return;
    (void)madvise((void *)a, end - a, MADV_WILLNEED); /* a hint: failure changes nothing */
    /* One read per page faults it in (the mapping is page-aligned, so a is inside). */
    for (uintptr_t q = a; q < end; q += pg)
        sink ^= *(const volatile uint8_t *)q;
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

        if (sec)
            touch_range(binfile_payload(&z->bf, sec), sec->size);
    }
}

/* The path a stage opens for entry c (its copy in cuzkd, else its own path). */
static const char *circuit_path(const struct pipe_stage *st, const struct pipe_circuit *c,
                                char *buf, size_t len)
{
    return pipe_input_path(&st->pl, c->fd, c->path, buf, len);
}

static int preloaded(const struct pipe_stage *st, const struct pipe_circuit *tab,
                     const char *path)
{
    char b[64];

    for (int i = 0; i < PIPE_CIRCUITS; i++)
        if (tab[i].action == PIPE_CIRCUIT_PRELOAD &&
            !strcmp(circuit_path(st, &tab[i], b, sizeof(b)), path))
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

    if (!cs || !ack)
        return 0;
    /* A1: acquire pairs with R1 in pipeline_circuit_request (the entries written). */
    s0 = barrier_load_acquire(&cs->seq);
    if (s0 == st->circ_seq || (s0 & 1))
        return 0;
    /* Plain copy; a torn one is discarded by the seq check (A2 pairs with W1). */
    memcpy(tab, cs->c, sizeof(tab));
    barrier_fence_acquire();
    if (barrier_load_relaxed(&cs->seq) != s0)
        return 0; /* being written: the next iteration */
    pipe_stage_long_begin(st);
    for (int i = 0; i < PIPE_CIRCUITS; i++) {
        struct pipe_circuit *c = &tab[i];

        char ob[64];
        const char *op;

        c->path[sizeof(c->path) - 1] = '\0';
        if (c->action != PIPE_CIRCUIT_EVICT || c->seq <= st->circ_seq)
            continue;
        n++;
        op = circuit_path(st, c, ob, sizeof(ob));
        for (int j = 0; j < PIPE_ZKEY_CACHE; j++) {
            struct pipe_zkey_entry *e = &st->zc[j];

            if (!e->used || strcmp(e->path, op))
                continue;
            if (fn)
                fn(st, PIPE_CIRCUIT_EVICT, e, arg);
            zkey_close(&e->z);
            e->used = 0;
            e->pinned = 0;
            ev++;
        }
    }
    for (int j = 0; j < PIPE_ZKEY_CACHE; j++)
        if (st->zc[j].pinned && !preloaded(st, tab, st->zc[j].path))
            st->zc[j].pinned = 0;
    for (int i = 0; i < PIPE_CIRCUITS; i++) {
        const struct pipe_circuit *c = &tab[i];
        const zkey *z;
        char ob[64];

        if (c->action != PIPE_CIRCUIT_PRELOAD)
            continue;
        if (c->seq <= st->circ_seq) {
            failed |= st->circ_failed & (1u << i);
            continue;
        }
        n++;
        if (pipe_stage_zkey(st, circuit_path(st, c, ob, sizeof(ob)), &z, err, sizeof(err))) {
            pipe_err_rename(err, sizeof(err), ob, c->path);
            failed |= 1u << i;
            fprintf(stderr, "cuzk stage pid %d: preload of %s failed: %s\n", (int)st->pid,
                    c->path, err);
            continue;
        }
        for (int j = 0; j < PIPE_ZKEY_CACHE; j++) {
            struct pipe_zkey_entry *e = &st->zc[j];

            if (&e->z != z)
                continue;
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

int pipe_exit_code(int rc)
{
    if (rc == 0)
        return PIPE_EXIT_OK;
    if (rc == -CUZK_E_INTERNAL)
        return PIPE_EXIT_BUG;
    return PIPE_EXIT_SYSTEM;
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
    if (!*s || *end || errno || v > UINT32_MAX)
        return -1;
    *out = (uint32_t)v;
    return 0;
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
        { "verbose", no_argument, NULL, 'v' },
        { "help", no_argument, NULL, 'h' },
        { NULL, 0, NULL, 0 },
    };
    struct pipe_stage_opts o = { .backend = "cpu", .trim_every = 16,
                                 .precompute_mb = PIPE_PRECOMPUTE_MB_DEFAULT, .stop = &main_stop };
    struct sigaction sa;
    char usage[2048], err[1024] = "";
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
             "%s%s"
             "  --verbose         one line per partition on stderr\n"
             "exit codes: 0 stopped by SIGTERM/SIGINT, 2 usage, 111 system error, 100 bug\n",
             prog, what, prog,
             extra & PIPE_OPT_BACKEND ? "  --backend NAME    proving backend: cpu (default), or cuda[:DEVICE]\n"
                                        "                    (CUDA builds; DEVICE defaults to the index)\n"
                                        "  --precompute-mb N per-circuit tables kept between partitions\n"
                                        "                    (NTT domains; default 512, 0 keeps none)\n" : "",
             extra & PIPE_OPT_TRIM ? "  --trim-every N    malloc_trim after every N partitions "
                                     "(default 16; also after 1 s idle)\n"
                                     "  --test-trim-delay-ms N   tests only: trim after every "
                                     "partition, N ms more\n" : "");
    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, "+h", opts, NULL)) != -1) {
        switch (c) {
        case 'i': o.instance = optarg; break;
        case 'x': if (parse_u32(optarg, &o.index)) goto bad_num; break;
        case 'g': if (parse_u32(optarg, &o.generation)) goto bad_num; break;
        case 't': if (parse_u32(optarg, &v)) goto bad_num; o.threads = v; break;
        case 'b':
            if (!(extra & PIPE_OPT_BACKEND))
                goto bad;
            o.backend = optarg;
            break;
        case 'P':
            if (!(extra & PIPE_OPT_BACKEND) || parse_u32(optarg, &o.precompute_mb))
                goto bad;
            break;
        case 'T':
            if (!(extra & PIPE_OPT_TRIM) || parse_u32(optarg, &o.trim_every))
                goto bad;
            break;
        case 'D':
            if (!(extra & PIPE_OPT_TRIM) || parse_u32(optarg, &o.test_trim_delay_ms))
                goto bad;
            break;
        case 'v': o.verbose = 1; break;
        case 'h': fputs(usage, stdout); return PIPE_EXIT_OK;
        default: goto bad;
        }
    }
    if (optind != argc || !o.instance) {
        fprintf(stderr, "%s: %s\n%s", prog, optind != argc ? "unexpected argument" :
                "--instance is required", usage);
        return PIPE_EXIT_USAGE;
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
                err[0] ? err : strerror(rc < 0 ? -rc : rc));
    return pipe_exit_code(rc);

bad_num:
    fprintf(stderr, "%s: --%s needs a non-negative number\n%s", prog,
            c == 'x' ? "index" : c == 'g' ? "generation" : "threads", usage);
    return PIPE_EXIT_USAGE;
bad:
    fprintf(stderr, "%s: unknown, incomplete or invalid option\n%s", prog, usage);
    return PIPE_EXIT_USAGE;
}

void pipe_reason(char *dst, size_t len, const char *file, const char *msg)
{
    const char *base = strrchr(file, '/'), *hit;
    size_t flen = strlen(file), o = 0;
    char tmp[1024];

    base = base ? base + 1 : file;
    /* Replace each occurrence of the full path with the basename. */
    while (flen && (hit = strstr(msg, file)) && o < sizeof(tmp) - 1) {
        o += (size_t)snprintf(tmp + o, sizeof(tmp) - o, "%.*s%s", (int)(hit - msg), msg, base);
        msg = hit + flen;
    }
    if (o < sizeof(tmp) - 1)
        snprintf(tmp + o, sizeof(tmp) - o, "%s", msg);
    tmp[sizeof(tmp) - 1] = 0;
    if (strstr(tmp, base))
        snprintf(dst, len, "%s", tmp);
    else
        snprintf(dst, len, "%s: %s", base, tmp);
}
