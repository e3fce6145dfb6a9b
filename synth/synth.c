/* synth.c — the synthesis stage loop (synth/synth.h). */
#include "synth/synth.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "zk/r1cs.h"
#include "shm/route.h"
#include "synth/wgen.h"
#include "zk/wtns.h"

#define POLL_NS  100000000ll /* ring and pool waits: the 100 ms heartbeat promise */
#define HEAP_MAX 256

enum {
    S_ZKEY = STATS_STAGE0,
    S_READ,
    S_R1CS,
    S_MATVEC,
    S_WAIT_BUF,
    S_WITNESS,
};
/* C_BUF0 + k: buffers taken from pool share k ("bufs_n<node>"; routing, route.h) */
enum { C_DONE, C_FAILED, C_LOST, C_STALE, C_REQUEUED, C_CROSS, C_BUF0 };
enum { G_NODE }; /* gauge: this synth's NUMA node (the plan's; 255: unknown) */
enum { H_PART, H_QUEUED, H_BUF_WAIT };

static const char *const state_names[] = { "zkey",        "read_wtns",   "r1cs", "matvec",
                                           "wait_buffer", "witness_gen", NULL };
static const char *const counter_names[] = { "parts_done", "parts_failed", "claims_lost", "stale_hints",
                                             "requeued",   "cross_node",   NULL };
static const char *const hist_names[] = { "part", "queued", "buf_wait", NULL };

/* ---- the local priority heap of hints ------------------------------------------- */

struct hint {
    int32_t prio;
    uint32_t index;
    uint64_t job_id;
    uint32_t part;
};

struct heap {
    uint32_t n;
    struct hint h[HEAP_MAX];
};

/* a before b? priority desc, then job id asc (older first), then partition asc */
static int hint_before(const struct hint *a, const struct hint *b)
{
    if (a->prio != b->prio) return a->prio > b->prio;
    if (a->job_id != b->job_id) return a->job_id < b->job_id;
    return a->index < b->index;
}

static void heap_push(struct heap *hp, struct hint x)
{
    uint32_t i = hp->n++;

    while (i && hint_before(&x, &hp->h[(i - 1) / 2])) {
        hp->h[i] = hp->h[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    hp->h[i] = x;
}

static struct hint heap_pop(struct heap *hp)
{
    struct hint top = hp->h[0], x = hp->h[--hp->n];
    uint32_t i = 0;

    for (;;) {
        uint32_t c = 2 * i + 1;

        if (c >= hp->n) break;
        if (c + 1 < hp->n && hint_before(&hp->h[c + 1], &hp->h[c])) c++;
        if (!hint_before(&hp->h[c], &x)) break;
        hp->h[i] = hp->h[c];
        i = c;
    }
    hp->h[i] = x;
    return top;
}

/* Order key of a hint as the table says now. Relaxed reads of fields that may be
 * rewritten by a later submit: they only order the heap; the claim (CAS) and the
 * seal check decide what is actually done. */
static struct hint make_hint(const struct pipeline *pl, uint32_t p)
{
    const struct jobtab *jt = &pl->data.jobtab;
    struct hint h = { 0, 0, UINT64_MAX, p };

    if (p < jt->hdr->max_parts) {
        uint32_t j = jt->parts[p].job;

        h.index = jt->parts[p].index;
        if (j < jt->hdr->max_jobs) {
            h.prio = jt->jobs[j].priority;
            h.job_id = jt->jobs[j].id;
        }
    }
    return h;
}

/* ---- one partition ---------------------------------------------------------------- */

/* Witness generators this process has loaded, by path: dlopen once per circuit (its
 * .dat is parsed on first use), kept while the slot is not needed for another and
 * the file is the same (one rebuilt in place is closed, so dlopen maps the new one). */
#define WGEN_CACHE 4

struct synth {
    struct stage st;
    const struct stage_opts *o;
    struct heap heap;
    wgen gen[WGEN_CACHE];
    unsigned gen_next; /* the slot a miss replaces (round robin) */
};

static const wgen *synth_wgen(struct synth *s, const char *path, char *err, size_t errlen)
{
    wgen *g;

    for (unsigned i = 0; i < WGEN_CACHE; i++)
        if (s->gen[i].dl && !strcmp(s->gen[i].path, path)) {
            if (wgen_is_current(&s->gen[i])) return &s->gen[i];
            wgen_close(&s->gen[i]); /* rebuilt: load the new file */
        }
    g = &s->gen[s->gen_next++ % WGEN_CACHE];
    wgen_close(g);
    if (wgen_open(g, path, err, errlen)) return NULL;
    /* once per load, in the daemon's log: such a generator is checked by curve and
     * witness size only (wgen.h) */
    if (!wgen_has_fingerprint(g))
        fprintf(stderr,
                "cuzk-synth %u: warning: witness generator %s was built without "
                "--r1cs: checked against zkeys by curve and witness size only\n",
                s->o->index, path);
    return g;
}

/* Every constraint of the job's r1cs against the witness: 0, or an error with err set. */
/* wtns_path, r1cs_path: the client's names (messages); wtns_src, r1cs_src: what is
 * opened (cuzkd's copies, pipe_input_path). */
static int check_r1cs(struct synth *s, r1cs *r, const wtns *w, const char *wtns_path, const char *r1cs_path,
                      const char *wtns_src, const char *r1cs_src, char *err, size_t errlen)
{
    uint32_t bad = 0;
    int rc;

    stage_enter(&s->st, S_R1CS);
    stage_long_begin(&s->st);
    rc = r1cs_open(r, r1cs_src, err, errlen);
    if (!rc && (rc = r1cs_check_wtns(r, w, &bad, err, errlen)) == -CUZK_E_UNSATISFIED)
        snprintf(err, errlen, "%s does not satisfy constraint %u of %s", wtns_path, bad, r1cs_path);
    stage_long_end(&s->st);
    if (rc) {
        pipe_err_rename(err, errlen, r1cs_src, r1cs_path);
        pipe_err_rename(err, errlen, wtns_src, wtns_path);
    }
    return rc;
}

static void fail_part(struct synth *s, uint32_t p, const char *file, const char *msg)
{
    char who[32];

    snprintf(who, sizeof(who), "cuzk-synth %u", s->o->index);
    stage_fail(&s->st, p, JOBTAB_SYNTH, C_FAILED, file, msg, s->o->verbose ? who : NULL);
}

/* ---- NUMA routing (route.h) ------------------------------------------------------ */

static int node_of(uint8_t n)
{
    return n == PIPE_NODE_NONE ? -1 : n;
}

/* The routing inputs as they are now: the plan's nodes (config), ring depths, and
 * which synths run (their stats slots' pids; a dead one's pid stays until restart). */
static void route_read(struct synth *s, struct route_view *v)
{
    const struct pipe_config *c = s->st.pl.config;

    memset(v, 0, sizeof(*v));
    v->n_workers = c->n_workers < ROUTE_MAX_WORKERS ? c->n_workers : ROUTE_MAX_WORKERS;
    v->n_synth = c->n_synth < ROUTE_MAX_SYNTH ? c->n_synth : ROUTE_MAX_SYNTH;
    for (uint32_t i = 0; i < v->n_workers; i++) {
        v->worker_node[i] = node_of(c->worker_node[i]);
        v->worker_depth[i] = ring_count(pipeline_ring(&s->st.pl, PIPE_RING_WORKER(i)));
    }
    for (uint32_t k = 0; k < v->n_synth; k++) {
        struct stats_slot *sl = pipeline_stats_slot(&s->st.pl, STATS_ROLE_SYNTH, k);
        /* Relaxed: a liveness hint; a wrong guess only moves one partition's node. */
        int32_t pid = sl ? barrier_load_relaxed(&sl->pid) : 0;

        v->synth_node[k] = node_of(c->synth_node[k]);
        v->synth_alive[k] = k == s->o->index || (pid > 0 && (kill(pid, 0) == 0 || errno == EPERM));
    }
}

/* Several synths: does this one serve some worker now (route.h rule 3: else it leaves
 * the hints to the others)? One synth serves all. */
static int synth_serves(struct synth *s)
{
    struct route_view v;

    if (s->st.pl.config->n_synth < 2) return 1;
    route_read(s, &v);
    return route_synth_serves(&v, s->o->index);
}

/* The NUMA node whose worker gets partition p, and so whose pool share the buffer
 * comes from; counts a crossing (route.h rule 2). -1: a one-share pool (no choice). */
static int route_node(struct synth *s)
{
    struct route_view v;
    int w, cross;

    if (s->st.pl.data.pool.hdr->n_nodes < 2) return -1;
    route_read(s, &v);
    w = route_pick_worker(&v, s->o->index, &cross);
    if (w < 0) /* nobody left to serve since the claim: keep to our own node */
        return v.synth_node[s->o->index];
    if (cross) stage_count(&s->st, C_CROSS, 1);
    return v.worker_node[w];
}

/* Push a READY hint to the worker with the fewest queued on `node` (the node of its
 * buffer; -1 or a node without workers: any worker). Waits (wait_output) while those
 * rings are full; gives up after a second once stopping (the supervisor re-pushes
 * READY partitions when it restarts us). */
static void push_to_worker(struct synth *s, uint32_t p, int node)
{
    const struct pipe_config *c = s->st.pl.config;
    struct stage_push_state pw = { 0 };
    int any = 1;

    for (uint32_t i = 0; node >= 0 && i < c->n_workers; i++)
        if (node_of(c->worker_node[i]) == node) any = 0;
    for (;;) {
        uint32_t best = 0, best_n = UINT32_MAX;

        for (uint32_t i = 0; i < c->n_workers; i++) {
            uint32_t n = ring_count(pipeline_ring(&s->st.pl, PIPE_RING_WORKER(i)));

            if (!any && node_of(c->worker_node[i]) != node) continue;
            if (n < best_n) {
                best_n = n;
                best = i;
            }
        }
        if (ring_push_timeout(pipeline_ring(&s->st.pl, PIPE_RING_WORKER(best)), p,
                              pw.waited ? POLL_NS / 4 : 0) == 0 ||
            stage_push_wait(&s->st, &pw))
            break;
    }
}

static void synth_one(struct synth *s, uint32_t p)
{
    struct stage *st = &s->st;
    struct pipeline *pl = &st->pl;
    struct jobtab *jt = &pl->data.jobtab;
    struct pool *pool = &pl->data.pool;
    const uint32_t pid = (uint32_t)st->pid;
    struct pipe_partinfo *pi = pipeline_partinfo(pl, p);
    struct jobtab_job *jb;
    const zkey *z = NULL;
    const wgen *gen = NULL;
    wtns w;
    r1cs r;
    char err[1024] = "", wtns_path[JOBTAB_PATH_LEN], r1cs_path[JOBTAB_PATH_LEN];
    char wgen_path[JOBTAB_PATH_LEN];
    char zb[64], wb[64], rb[64], gb[64];
    const char *zkey_open_path, *wtns_open_path, *r1cs_open_path, *wgen_open_path;
    uint64_t t0 = stage_now(), need, tb;
    uint32_t b;
    int node;
    unsigned char *buf;
    int rc;

    if (!pi || !(jb = stage_claim_part(st, p, JOBTAB_QUEUED, JOBTAB_SYNTH))) {
        stage_count(st, C_LOST, 1);
        return;
    }
    stage_enter_at(st, STATS_BUSY, t0);
    /* A2: acquire pairs with S1 in pipeline_submit_job: the entry's paths are written. */
    if (barrier_load_acquire(&pi->job_id) != jb->id) {
        jobtab_part_move(jt, p, JOBTAB_SYNTH, pid, JOBTAB_QUEUED, 0, NULL);
        stage_count(st, C_STALE, 1);
        return;
    }
    stage_hist(st, H_QUEUED, t0 > jb->submit_ns ? t0 - jb->submit_ns : 0);
    pipe_part_begin(pl, p, PIPE_T_SYNTH, s->o->index, t0); /* timeline (`cuzk trace`) */
    memcpy(wtns_path, pi->wtns_path, sizeof(wtns_path));
    memcpy(r1cs_path, pi->r1cs_path, sizeof(r1cs_path));
    memcpy(wgen_path, pi->wgen_path, sizeof(wgen_path));
    /* What we open: cuzkd's copies (pipeline.h, "Inputs by descriptor"); messages name
     * the files as the client did (pipe_err_rename). */
    zkey_open_path = pipe_input_path(pl, jb->zkey_fd, jb->zkey_path, zb, sizeof(zb));
    wtns_open_path = pipe_input_path(pl, pi->wtns_fd, wtns_path, wb, sizeof(wb));
    r1cs_open_path = pipe_input_path(pl, pi->r1cs_fd, r1cs_path, rb, sizeof(rb));
    wgen_open_path = pipe_input_path(pl, pi->wgen_fd, wgen_path, gb, sizeof(gb));
    memset(&w, 0, sizeof(w));
    memset(&r, 0, sizeof(r));

    stage_enter(st, S_ZKEY);
    rc = stage_job_zkey(st, zkey_open_path, jb->zkey_path, &z, err, sizeof(err));
    if (rc) {
        fail_part(s, p, jb->zkey_path, err);
        goto out;
    }
    if (wgen_path[0]) {
        /* input.json: the generator must make this zkey's witnesses (curve, size)
         * before a buffer is taken; the witness is computed into the buffer below.
         * The generator loaded is cuzkd's sealed copy (dlopen of /proc/<cuzkd>/fd/N):
         * the client cannot swap the code under a job. */
        stage_enter(st, S_WITNESS);
        if (!(gen = synth_wgen(s, wgen_open_path, err, sizeof(err))) ||
            wgen_check_zkey(gen, z, err, sizeof(err))) {
            pipe_err_rename(err, sizeof(err), wgen_open_path, wgen_path);
            pipe_err_rename(err, sizeof(err), zkey_open_path, jb->zkey_path);
            fail_part(s, p, wgen_path, err);
            goto out;
        }
        if (z->npublic + 1 > PIPE_PUBLIC_MAX || z->n8r != 32) { /* submit refuses these */
            fail_part(s, p, wtns_path, "too many public signals for an input.json job");
            goto out;
        }
    } else {
        stage_enter(st, S_READ);
        if ((rc = wtns_open(&w, wtns_open_path, err, sizeof(err))) ||
            (rc = wtns_check_zkey(&w, z, err, sizeof(err)))) {
            pipe_err_rename(err, sizeof(err), wtns_open_path, wtns_path);
            pipe_err_rename(err, sizeof(err), zkey_open_path, jb->zkey_path);
            fail_part(s, p, wtns_path, err);
            goto out;
        }
        if (r1cs_path[0] &&
            check_r1cs(s, &r, &w, wtns_path, r1cs_path, wtns_open_path, r1cs_open_path, err, sizeof(err))) {
            fail_part(s, p, wtns_path, err);
            goto out;
        }
    }
    need = pipeline_buf_bytes(z->domain_size, z->nvars, z->n8r);
    if (need > pl->config->buf_size) {
        snprintf(err, sizeof(err),
                 "circuit needs %llu-byte buffers, instance has %llu: "
                 "restart cuzkd with a larger --buffer-mb",
                 (unsigned long long)need, (unsigned long long)pl->config->buf_size);
        fail_part(s, p, wtns_path, err);
        goto out;
    }

    /* A buffer of the node whose worker will prove it (route.h): wait for one of that
     * node's, beating, in wait_buffer; another node's only when that node has no share
     * (a plan with fewer buffers than nodes with workers). */
    node = route_node(s);
    tb = stage_now();
    rc = pool_buf_alloc_node(pool, node, pid, 0, &b);
    if (rc == -ENOENT) {
        stage_count(st, C_CROSS, 1);
        node = -1; /* any share from now on */
        rc = pool_buf_alloc(pool, -1, pid, 0, &b);
    }
    if (rc) {
        stage_enter_at(st, S_WAIT_BUF, tb);
        while ((rc = node < 0 ? pool_buf_alloc(pool, -1, pid, POLL_NS, &b)
                              : pool_buf_alloc_node(pool, node, pid, POLL_NS, &b)) == -ETIMEDOUT) {
            stage_heartbeat(st);
            if (stage_stopping(st)) break;
        }
        stage_hist(st, H_BUF_WAIT, stage_now() - tb);
        if (rc) {
            /* Stopping with no buffer: give the partition back for the next synth. */
            jobtab_part_move(jt, p, JOBTAB_SYNTH, pid, JOBTAB_QUEUED, 0, NULL);
            ring_try_push(pipeline_ring(pl, PIPE_RING_SYNTH), p);
            stage_count(st, C_REQUEUED, 1);
            goto out;
        }
    }
    buf = pool_buf_ptr(pool, b);
    for (uint32_t k = 0; k < pool->hdr->n_nodes; k++)
        if (b - pool->hdr->nodes[k].first < pool->hdr->nodes[k].count) stage_count(st, C_BUF0 + k, 1);
    node = pool_buf_node(pool, b);
    /* for `status JOB` (relaxed: published by the CAS to READY, as the times) */
    barrier_store_relaxed(&pi->times.buf_node, (uint32_t)(node + 1));
    if (gen) {
        /* Straight into the buffer's witness area (no file, no copy). A crash in the
         * generated code kills this process: the buffer is ours (pid), so the
         * supervisor's reclaim frees it, and the partition is retried up to
         * --max-attempts. */
        uint8_t *values = buf + 3 * (uint64_t)z->domain_size * z->n8r;

        stage_enter(st, S_WITNESS);
        stage_long_begin(st);
        rc = wgen_compute_file(gen, wtns_open_path, values, err, sizeof(err));
        if (rc) {
            pipe_err_rename(err, sizeof(err), wtns_open_path, wtns_path);
            pipe_err_rename(err, sizeof(err), wgen_open_path, wgen_path);
        }
        stage_long_end(st);
        if (!rc && (rc = wtns_of_values(&w, wtns_path, gen->Fr, z->nvars, values)))
            snprintf(err, sizeof(err), "out of memory");
        if (!rc && r1cs_path[0])
            rc =
                check_r1cs(s, &r, &w, wtns_path, r1cs_path, wtns_open_path, r1cs_open_path, err, sizeof(err));
        if (rc) {
            pool_buf_free(pool, b, pid);
            fail_part(s, p, wtns_path, err);
            goto out;
        }
        /* for the finalizer (pipeline.h, "publics"); published by the CAS to READY */
        struct pipe_publics *pu = pipeline_publics(pl, p);
        pu->n = z->npublic + 1;
        memcpy(pu->values, values, (size_t)pu->n * z->n8r);
    }
    /* Record the buffer before handing it over: if we die between the two, reclaim
     * still finds it (owned by our pid: pool_reclaim_pid frees it). The other order
     * would leave a buffer held for the partition that nothing records. Relaxed:
     * published by the CAS SYNTH->READY (R1 in jobtab_part_move). */
    barrier_store_relaxed(&jt->parts[p].buf, b);

    stage_enter(st, S_MATVEC);
    stage_long_begin(st);
    {
        uint64_t *a = (uint64_t *)buf, n = z->domain_size, l = z->n8r / 8;

        groth16_synth(z, w.values, a, a + n * l, a + 2 * n * l, s->o->threads, NULL);
        if (!gen) /* a generator wrote them there already */
            memcpy(buf + 3 * n * z->n8r, w.values, (size_t)z->nvars * z->n8r);
    }
    stage_long_end(st);
    stage_enter(st, STATS_BUSY);
    pipe_part_end(pl, p, PIPE_T_SYNTH, stage_now()); /* published by the CAS below */
    /* Release inside the transfer: the buffer's bytes before its new owner. */
    if (pool_buf_transfer(pool, b, pid, pool_owner_part(p)) ||
        jobtab_part_move(jt, p, JOBTAB_SYNTH, pid, JOBTAB_READY, 0, NULL)) {
        /* Only a reclaim by someone who thought us dead can take these from us. Give
         * back the buffer if it is still ours or still held for p (each call fails
         * harmlessly when the reclaim already freed it). */
        pool_buf_free(pool, b, pid);
        pool_buf_transfer(pool, b, pool_owner_part(p), POOL_OWNER_FREE);
        fprintf(stderr, "cuzk-synth %u: partition %u or buffer %u taken from us\n", s->o->index, p, b);
        goto out;
    }
    push_to_worker(s, p, node);
    stage_count(st, C_DONE, 1);
    stage_hist(st, H_PART, stage_now() - t0);
    if (s->o->verbose)
        fprintf(stderr, "cuzk-synth %u: partition %u (%s) ready in buffer %u\n", s->o->index, p, pi->name, b);
out:
    r1cs_close(&r);
    wtns_close(&w);
}

/* Preload: the synth reads the header and the coefficients (section 4). */
static void synth_circuit(struct stage *st, uint32_t action, struct stage_zkey_entry *e, void *arg)
{
    static const uint32_t ids[] = { 1, 2, 4 };

    (void)st;
    (void)arg;
    if (action == PIPE_CIRCUIT_PRELOAD) stage_zkey_touch(&e->z, ids, 3);
}

/* Routing counters and gauge (cuzk-top's per-node lines): "bufs_n<node>" for each
 * pool share, "numa_node". */
static void synth_name_nodes(struct synth *s)
{
    const struct pool_hdr *h = s->st.pl.data.pool.hdr;
    uint64_t g = s->o->index < PIPE_MAX_WORKERS ? s->st.pl.config->synth_node[s->o->index] : PIPE_NODE_NONE;
    char name[32];

    pthread_mutex_lock(&s->st.mu); /* slot writes: serialised with the heartbeat */
    for (uint32_t k = 0; k < h->n_nodes && C_BUF0 + k < STATS_MAX_COUNTERS; k++) {
        /* a one-share pool is every node's: its buffers count for this synth's node */
        int n = h->nodes[k].numa_node >= 0           ? h->nodes[k].numa_node
            : g != PIPE_NODE_NONE && h->n_nodes == 1 ? (int)g
                                                     : -1;

        if (n >= 0)
            snprintf(name, sizeof(name), "bufs_n%d", n);
        else
            snprintf(name, sizeof(name), "bufs_nany");
        stats_slot_name_counter(s->st.slot, C_BUF0 + k, name);
    }
    pthread_mutex_unlock(&s->st.mu);
    stage_name_gauge(&s->st, G_NODE, "numa_node");
    stage_gauges(&s->st, G_NODE, &g, 1);
}

int synth_run(const struct stage_opts *o, char *err, size_t errlen)
{
    int rc;
    struct synth *s =
        stage_new(sizeof(*s), offsetof(struct synth, st), o, STATS_ROLE_SYNTH, &rc, err, errlen);
    struct ring *in;
    uint32_t p, heap_max;

    if (!s) return rc;
    s->o = o;
    stage_names(&s->st, state_names, counter_names, hist_names);
    synth_name_nodes(s);
    in = pipeline_ring(&s->st.pl, PIPE_RING_SYNTH);
    /* With several synths (one per NUMA node) each pops one hint at a time: a partition
     * goes to the node of the synth that takes it (route.h), so one holding many
     * would starve the other nodes' workers. One synth keeps the priority heap full. */
    heap_max = s->st.pl.config->n_synth > 1 ? 1 : HEAP_MAX;
    while (!stage_stopping(&s->st)) {
        stage_circuits(&s->st, synth_circuit, s);
        if (!s->heap.n && !synth_serves(s)) {
            /* No worker to serve (route.h rule 3): leave the hints to the others. */
            struct timespec ts = { 0, POLL_NS };

            stage_enter(&s->st, STATS_IDLE);
            nanosleep(&ts, NULL);
            stage_heartbeat(&s->st);
            continue;
        }
        while (s->heap.n < heap_max && ring_try_pop(in, &p) == 0)
            heap_push(&s->heap, make_hint(&s->st.pl, p));
        if (!s->heap.n) {
            stage_enter(&s->st, stage_wait_state(&s->st));
            if (ring_pop_timeout(in, &p, POLL_NS) == 0) heap_push(&s->heap, make_hint(&s->st.pl, p));
            stage_heartbeat(&s->st);
            continue;
        }
        if (heap_max == 1 && !synth_serves(s)) {
            /* The hint came while we waited, after the check above, and the synths
             * have changed since (one started): give it back for them. */
            ring_try_push(in, heap_pop(&s->heap).part);
            continue;
        }
        synth_one(s, heap_pop(&s->heap).part);
        stage_heartbeat(&s->st);
    }
    /* Unclaimed hints go back for the next synth. */
    while (s->heap.n) ring_try_push(in, heap_pop(&s->heap).part);
    stage_close(&s->st);
    for (unsigned i = 0; i < WGEN_CACHE; i++) wgen_close(&s->gen[i]);
    free(s);
    return 0;
}
