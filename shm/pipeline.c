/* pipeline.c — the instance's segments as the pipeline sees them (regions, rings,
 * stats slots), job submission, the circuits table's writer side and the input paths
 * by descriptor. Contract in shm/pipeline.h; what the stage processes add on
 * top (heartbeat, zkey cache, options) is stage/stage.c. */
#include "shm/pipeline.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define DEFAULT_CLIENTS 4u

static uint32_t pow2_at_least(uint64_t n)
{
    uint32_t c = 8;

    while (c < n && c < RING_CAPACITY_MAX) c <<= 1;
    return c;
}

/* ---- segments ------------------------------------------------------------------- */

/* The region NAME of the data segment, of at least min bytes; NULL with err if it is
 * missing or short. */
static void *region(struct pipeline *pl, const char *name, uint64_t min, char *err, size_t errlen)
{
    uint64_t sz;
    void *r = segment_region_ptr(&pl->data.seg, name, &sz);

    if (!r || sz < min) {
        snprintf(err, errlen, "segment %s: %s region missing or short", pl->data.seg.name, name);
        return NULL;
    }
    return r;
}

static int views(struct pipeline *pl, char *err, size_t errlen)
{
    uint64_t sz;
    const struct pipe_config *c;

    pl->config = segment_region_ptr(&pl->data.seg, "config", &sz);
    c = pl->config;
    if (!c || sz < sizeof(*c) || c->magic != PIPE_CONFIG_MAGIC || !c->n_workers ||
        c->n_workers > PIPE_MAX_WORKERS || c->max_parts != pl->data.jobtab.hdr->max_parts ||
        pl->data.n_rings < PIPE_RING_FINAL(c->n_workers) + 1) {
        snprintf(err, errlen,
                 "segment %s: pipeline config region missing or inconsistent "
                 "(created by another version of cuzkd?)",
                 pl->data.seg.name);
        return -EBADMSG;
    }
    if (!(pl->partinfo =
              region(pl, "partinfo", (uint64_t)c->max_parts * sizeof(struct pipe_partinfo), err, errlen)) ||
        !(pl->results = region(pl, "results", (uint64_t)c->max_parts * PIPE_RESULT_SIZE, err, errlen)) ||
        !(pl->publics =
              region(pl, "publics", (uint64_t)c->max_parts * sizeof(struct pipe_publics), err, errlen)) ||
        !(pl->circuits =
              region(pl, "circuits",
                     sizeof(struct pipe_circuits) + (uint64_t)c->n_slots * sizeof(struct pipe_circuit_ack),
                     err, errlen)))
        return -EBADMSG;
    if (pl->stats.page && pl->stats.page->slot_count < c->n_slots) {
        snprintf(err, errlen, "stats segment of \"%s\" has %u slots, config says %u", pl->instance,
                 pl->stats.page->slot_count, c->n_slots);
        return -EBADMSG;
    }
    return 0;
}

int pipeline_create(struct pipeline *pl, const char *instance, const struct pipe_params *p, unsigned flags,
                    char *err, size_t errlen)
{
    struct shmlayout_config cfg;
    struct pipe_config pc;
    uint32_t cap;
    int rc;

    memset(pl, 0, sizeof(*pl));
    if (!p->n_workers || p->n_workers > PIPE_MAX_WORKERS || !p->n_synth || !p->max_jobs || !p->max_parts ||
        !p->buf_count || !p->buf_size || PIPE_RING_FINAL(p->n_workers) + 1 > SHMLAYOUT_MAX_RINGS) {
        snprintf(err, errlen,
                 "instance \"%s\": workers must be 1-%d; synth, jobs, partitions, "
                 "buffers and buffer size non-zero",
                 instance, PIPE_MAX_WORKERS);
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
        pc.worker_node[i] = p->worker_node[i] < 0 || p->worker_node[i] >= (int)PIPE_NODE_NONE
            ? PIPE_NODE_NONE
            : (uint8_t)p->worker_node[i];
        pc.synth_node[i] = p->synth_node[i] < 0 || p->synth_node[i] >= (int)PIPE_NODE_NONE
            ? PIPE_NODE_NONE
            : (uint8_t)p->synth_node[i];
    }
    pc.supervisor_pid = (uint32_t)getpid(); /* the creator holds the input copies */
    pc.long_call_s = p->long_call_s;
    pc.write_timeout_s = p->write_timeout_s;
    pc.max_attempts = p->max_attempts ? p->max_attempts : 1;
    {
        uint64_t page = (uint64_t)sysconf(_SC_PAGESIZE);

        pc.buf_size = (p->buf_size + page - 1) / page * page;
    }

    memset(&cfg, 0, sizeof(cfg));
    cfg.n_rings = PIPE_RING_FINAL(p->n_workers) + 1;
    /* Every partition's hint fits each ring twice over: duplicates re-pushed after a
     * death never make a push wait on a full ring in practice. */
    cap = p->ring_capacity ? p->ring_capacity : pow2_at_least(2ull * p->max_parts);
    for (uint32_t i = 0; i < cfg.n_rings; i++) cfg.ring_capacity[i] = cap;
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
    cfg.extra[2].size = (uint64_t)p->max_parts * PIPE_RESULT_SIZE;
    snprintf(cfg.extra[3].name, SEG_REGION_NAME, "circuits");
    cfg.extra[3].size = sizeof(struct pipe_circuits) + (uint64_t)pc.n_slots * sizeof(struct pipe_circuit_ack);
    snprintf(cfg.extra[4].name, SEG_REGION_NAME, "publics");
    cfg.extra[4].size = (uint64_t)p->max_parts * sizeof(struct pipe_publics);

    snprintf(pl->instance, sizeof(pl->instance), "%s", instance);
    rc = shmlayout_data_create(&pl->data, instance, &cfg, flags, err, errlen);
    if (rc) return rc;
    rc = shmlayout_stats_create(&pl->stats, instance, pc.n_slots, flags, err, errlen);
    if (rc) goto err_data;
    rc = views(pl, err, errlen);
    if (rc) goto err_stats;
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
    if (rc) return rc;
    rc = shmlayout_stats_attach(&pl->stats, instance, 0, err, errlen);
    if (!rc) rc = views(pl, err, errlen);
    if (rc) pipeline_detach(pl);
    return rc;
}

void pipeline_detach(struct pipeline *pl)
{
    if (!pl) return;
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
    return part < pl->config->max_parts
        ? (struct pipe_result *)((char *)pl->results + (size_t)part * PIPE_RESULT_SIZE)
        : NULL;
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
void pipe_part_begin(struct pipeline *pl, uint32_t part, unsigned k, uint32_t who, uint64_t t_ns)
{
    struct pipe_partinfo *pi = pipeline_partinfo(pl, part);

    if (!pi || k >= PIPE_T_STAGES) return;
    barrier_store_relaxed(&pi->times.end_ns[k], 0);
    if (k == PIPE_T_SYNTH) /* a retry takes its buffer anew */
        barrier_store_relaxed(&pi->times.buf_node, 0);
    barrier_store_relaxed(&pi->times.who[k], who);
    barrier_store_relaxed(&pi->times.begin_ns[k], t_ns);
}

void pipe_part_end(struct pipeline *pl, uint32_t part, unsigned k, uint64_t t_ns)
{
    struct pipe_partinfo *pi = pipeline_partinfo(pl, part);

    if (pi && k < PIPE_T_STAGES) barrier_store_relaxed(&pi->times.end_ns[k], t_ns);
}

int pipeline_stats_slot_index(const struct pipe_config *c, enum stats_role role, uint32_t index)
{
    uint32_t base, n;

    switch (role) {
    case STATS_ROLE_SUPERVISOR:
        base = 0;
        n = 1;
        break;
    case STATS_ROLE_SYNTH:
        base = 1;
        n = c->n_synth;
        break;
    case STATS_ROLE_GPUWORKER:
        base = 1 + c->n_synth;
        n = c->n_workers;
        break;
    case STATS_ROLE_FINALIZER:
        base = 1 + c->n_synth + c->n_workers;
        n = c->n_final;
        break;
    case STATS_ROLE_CLIENT:
        base = 1 + c->n_synth + c->n_workers + c->n_final;
        n = c->n_clients;
        break;
    default: return -EINVAL;
    }
    return index < n ? (int)(base + index) : -EINVAL;
}

struct stats_slot *pipeline_stats_slot(const struct pipeline *pl, enum stats_role role, uint32_t index)
{
    int i = pipeline_stats_slot_index(pl->config, role, index);

    return i < 0 || !pl->stats.page ? NULL : stats_page_slot(pl->stats.page, (uint32_t)i);
}

size_t pipeline_wtns_stem(const char *path, const char **stem)
{
    const char *b = strrchr(path, '/');
    size_t n;

    b = b ? b + 1 : path;
    n = strlen(b);
    if (n > 5 && (!strcmp(b + n - 5, ".wtns") || !strcmp(b + n - 5, ".json"))) n -= 5;
    *stem = b;
    return n;
}

/* "dir/w1.wtns" -> "w1", cut to fit len */
static void default_name(char *dst, size_t len, const char *wtns_path)
{
    const char *b;
    size_t n = pipeline_wtns_stem(wtns_path, &b);

    snprintf(dst, len, "%.*s", (int)n, b);
}

static int too_long(const char *s, size_t max)
{
    return s && strlen(s) >= max;
}

int pipeline_submit_job(struct pipeline *pl, const char *zkey_path, const char *out_dir, int32_t priority,
                        uint32_t n_parts, const struct pipe_submit_part *parts, uint64_t now_ns,
                        uint32_t *job, char *err, size_t errlen)
{
    return pipeline_submit_job_fds(pl, zkey_path, -1, out_dir, -1, -1, priority, n_parts, parts, now_ns, job,
                                   err, errlen);
}

int pipeline_submit_job_fds(struct pipeline *pl, const char *zkey_path, int zkey_fd, const char *out_dir,
                            int out_fd, int64_t owner, int32_t priority, uint32_t n_parts,
                            const struct pipe_submit_part *parts, uint64_t now_ns, uint32_t *job, char *err,
                            size_t errlen)
{
    struct jobtab *jt = &pl->data.jobtab;
    struct jobtab_job *jb;
    uint32_t j, lost = 0;
    int rc;

    if (!n_parts || !parts || !zkey_path || !out_dir) {
        snprintf(err, errlen,
                 "submit: a job needs a zkey, an output directory and at least "
                 "one witness");
        return -EINVAL;
    }
    if (too_long(zkey_path, JOBTAB_PATH_LEN) || too_long(out_dir, JOBTAB_PATH_LEN)) {
        snprintf(err, errlen, "submit: %s is longer than %d bytes",
                 too_long(zkey_path, JOBTAB_PATH_LEN) ? zkey_path : out_dir, JOBTAB_PATH_LEN - 1);
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
            snprintf(err, errlen,
                     "submit: a path of witness %s is longer than %d bytes (name: "
                     "%d)",
                     sp->wtns_path, JOBTAB_PATH_LEN - 1, PIPE_NAME_LEN - 1);
            return -ENAMETOOLONG;
        }
        if (!sp->name || !sp->name[0]) {
            const char *b = strrchr(sp->wtns_path, '/');

            b = b ? b + 1 : sp->wtns_path;
            if (strlen(b) >= PIPE_NAME_LEN + 5) {
                snprintf(err, errlen,
                         "submit: the name of witness %s is longer than %d "
                         "bytes: give a shorter name",
                         sp->wtns_path, PIPE_NAME_LEN - 1);
                return -ENAMETOOLONG;
            }
            default_name(nm, sizeof(nm), sp->wtns_path);
            if (!nm[0]) {
                snprintf(err, errlen, "submit: witness %s gives an empty output name", sp->wtns_path);
                return -EINVAL;
            }
        }
    }
    rc = jobtab_job_add(jt, n_parts, zkey_path, out_dir, now_ns, &j);
    if (rc) {
        snprintf(err, errlen,
                 rc == -ENOSPC ? "submit: the job table is full (%u partitions "
                                 "asked): wait for running jobs or raise the limits"
                               : "submit: %u partitions "
                                 "is more than the table holds",
                 n_parts);
        return rc;
    }
    jb = &jt->jobs[j];
    /* Plain store: published to the synth by the release of the ring pushes below
     * (and of the seals); a stale hint that claims earlier only mis-orders. */
    jb->priority = priority;
    jb->zkey_fd = zkey_fd > 0 ? zkey_fd : -1; /* published by the seals below, as the paths */
    jb->out_fd = out_fd > 0 ? out_fd : -1;
    jb->owner_uid = owner >= 0 ? (uint32_t)owner : 0;
    jb->owner_known = owner >= 0;
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
        if (ring_try_push(pl->data.rings[PIPE_RING_SYNTH], jb->first_part + i)) lost++;
    *job = j;
    if (lost) {
        snprintf(err, errlen,
                 "submit: job %llu: %u of %u hints did not fit the synth ring; "
                 "re-push its queued partitions",
                 (unsigned long long)jb->id, lost, n_parts);
        return -ENOBUFS;
    }
    return 0;
}

/* ---- circuits table (supervisor side) ------------------------------------------- */

int pipeline_circuit_request(struct pipeline *pl, uint32_t action, const char *path, uint64_t min_ack,
                             uint64_t *seq, char *err, size_t errlen)
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
        if (cs->c[i].action == PIPE_CIRCUIT_PRELOAD) npre++;
        if (cs->c[i].action != PIPE_CIRCUIT_FREE && !strcmp(cs->c[i].path, path)) e = &cs->c[i];
    }
    if (action == PIPE_CIRCUIT_PRELOAD && !(e && e->action == PIPE_CIRCUIT_PRELOAD) &&
        npre >= PIPE_PRELOAD_MAX) {
        snprintf(err, errlen,
                 "%u circuits are preloaded already (at most %d, so jobs of "
                 "other circuits keep a cache entry): evict one first",
                 npre, PIPE_PRELOAD_MAX);
        return -ENOSPC;
    }
    if (!e) {
        /* A free entry, else the oldest tombstone every running stage has applied. */
        for (int i = 0; i < PIPE_CIRCUITS && !e; i++)
            if (cs->c[i].action == PIPE_CIRCUIT_FREE) e = &cs->c[i];
        for (int i = 0; i < PIPE_CIRCUITS && !e; i++)
            if (cs->c[i].action == PIPE_CIRCUIT_EVICT && cs->c[i].seq <= min_ack &&
                (!e || cs->c[i].seq < e->seq))
                e = &cs->c[i];
        if (!e) {
            snprintf(err, errlen,
                     "the stages are still applying %d earlier preload/evict "
                     "requests: retry in a moment",
                     PIPE_CIRCUITS);
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

const char *pipe_input_path(const struct pipeline *pl, int32_t fd, const char *display, char *buf, size_t len)
{
    if (fd <= 0 || !pl->config || !pl->config->supervisor_pid) return display;
    snprintf(buf, len, "/proc/%u/fd/%d", pl->config->supervisor_pid, (int)fd);
    return buf;
}

void pipe_err_rename(char *msg, size_t len, const char *from, const char *to)
{
    char tmp[1024];
    const char *m = msg, *hit;
    size_t flen = strlen(from), o = 0;

    if (!flen || !len || !strcmp(from, to) || !strstr(msg, from)) return;
    while ((hit = strstr(m, from)) && o < sizeof(tmp) - 1) {
        /* "/proc/P/fd/7" is not a hit inside "/proc/P/fd/71". */
        int whole = hit[flen] < '0' || hit[flen] > '9';

        o += (size_t)snprintf(tmp + o, sizeof(tmp) - o, "%.*s%s", (int)(hit - m), m, whole ? to : from);
        m = hit + flen;
    }
    if (o < sizeof(tmp) - 1) snprintf(tmp + o, sizeof(tmp) - o, "%s", m);
    tmp[sizeof(tmp) - 1] = 0;
    snprintf(msg, len, "%s", tmp);
}
