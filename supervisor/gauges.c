/* gauges.c — the instance's figures as the supervisor slot's gauges (sup.h), for
 * viewers that map only the stats segment. */
#include "sup.h"

#include <stdio.h>
#include <stdint.h>

#include "shm/stats.h"

/* The instance's shared figures, for viewers that map only the stats segment (the
 * data segment is 0600): ring depths, pool use, jobs and partitions by state, as
 * gauges of the supervisor's slot. Names are set once in gauges_publish_names. */
enum {
    G_RING_SYNTH,
    G_RING_FINAL,
    G_RING_W0,
    G_POOL_USED = G_RING_W0 + PIPE_MAX_WORKERS,
    G_POOL_FREE,
    G_JOBS_RUNNING,
    G_JOBS_DONE,
    G_JOBS_FAILED,
    G_PARTS0,
    G_NODE0 = G_PARTS0 + 8,
    G_MAX_NODES = (STATS_MAX_GAUGES - G_NODE0) / 2,
};
_Static_assert(G_NODE0 + 2 * G_MAX_NODES <= STATS_MAX_GAUGES, "gauge map fits");

void gauges_publish_names(struct sup *s)
{
    static const char *const parts[8] = { "parts_queued", "parts_synth", "parts_ready", "parts_proving",
                                          "parts_proved", "parts_final", "parts_done",  "parts_failed" };
    const struct pool_hdr *ph = s->pl.data.pool.hdr;
    char n[STATS_NAME_LEN];

    stats_slot_name_gauge(s->slot, G_RING_SYNTH, "ring_synth");
    stats_slot_name_gauge(s->slot, G_RING_FINAL, "ring_final");
    for (uint32_t i = 0; i < s->pl.config->n_workers; i++) {
        snprintf(n, sizeof(n), "ring_worker%u", (unsigned)(uint8_t)i);
        stats_slot_name_gauge(s->slot, G_RING_W0 + i, n);
    }
    stats_slot_name_gauge(s->slot, G_POOL_USED, "pool_used");
    stats_slot_name_gauge(s->slot, G_POOL_FREE, "pool_free");
    stats_slot_name_gauge(s->slot, G_JOBS_RUNNING, "jobs_running");
    stats_slot_name_gauge(s->slot, G_JOBS_DONE, "jobs_done");
    stats_slot_name_gauge(s->slot, G_JOBS_FAILED, "jobs_failed");
    for (uint32_t k = 0; k < 8; k++) stats_slot_name_gauge(s->slot, G_PARTS0 + k, parts[k]);
    for (uint32_t k = 0; ph->n_nodes > 1 && k < ph->n_nodes && k < G_MAX_NODES; k++) {
        snprintf(n, sizeof(n), "pool_n%u_used", k);
        stats_slot_name_gauge(s->slot, G_NODE0 + 2 * k, n);
        snprintf(n, sizeof(n), "pool_n%u_free", k);
        stats_slot_name_gauge(s->slot, G_NODE0 + 2 * k + 1, n);
    }
}

void gauges_publish(struct sup *s)
{
    const struct jobtab *jt = &s->pl.data.jobtab;
    const struct pool *pool = &s->pl.data.pool;
    uint64_t g[STATS_MAX_GAUGES] = { 0 };
    uint32_t used, fr, nw = s->pl.config->n_workers;

    g[G_RING_SYNTH] = ring_count(pipeline_ring(&s->pl, PIPE_RING_SYNTH));
    g[G_RING_FINAL] = ring_count(pipeline_ring(&s->pl, PIPE_RING_FINAL(nw)));
    for (uint32_t i = 0; i < nw; i++)
        g[G_RING_W0 + i] = ring_count(pipeline_ring(&s->pl, PIPE_RING_WORKER(i)));
    if (pool_node_counts(pool, -1, &used, &fr) == 0) {
        g[G_POOL_USED] = used;
        g[G_POOL_FREE] = fr;
    }
    for (uint32_t k = 0; pool->hdr->n_nodes > 1 && k < pool->hdr->n_nodes && k < G_MAX_NODES; k++)
        if (pool_node_counts(pool, (int)k, &used, &fr) == 0) {
            g[G_NODE0 + 2 * k] = used;
            g[G_NODE0 + 2 * k + 1] = fr;
        }
    /* Relaxed loads: a display snapshot; each word is read once. */
    for (uint32_t j = 0; j < jt->hdr->max_jobs; j++) {
        uint32_t st = jobtab_word_state(barrier_load_relaxed(&jt->jobs[j].word));

        g[G_JOBS_RUNNING] += st == JOBTAB_QUEUED;
        g[G_JOBS_DONE] += st == JOBTAB_DONE;
        g[G_JOBS_FAILED] += st == JOBTAB_FAILED;
    }
    for (uint32_t p = 0; p < jt->hdr->max_parts; p++) {
        uint32_t st = jobtab_word_state(barrier_load_relaxed(&jt->parts[p].word));

        if (st >= JOBTAB_QUEUED && st <= JOBTAB_FAILED) g[G_PARTS0 + st - JOBTAB_QUEUED]++;
    }
    stats_gauges_set(s->slot, 0, g, STATS_MAX_GAUGES);
}
