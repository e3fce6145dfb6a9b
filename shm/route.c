/* route.c — NUMA routing decision (route.h). Pure: no shared state is read here; the
 * caller fills the view (synth/synth.c from the pipeline config, rings and stats page). */
#include "shm/route.h"

int route_worker_on_node(const struct route_view *v, int node)
{
    int best = -1;

    for (uint32_t i = 0; i < v->n_workers && i < ROUTE_MAX_WORKERS; i++)
        if (v->worker_node[i] == node && (best < 0 || v->worker_depth[i] < v->worker_depth[best]))
            best = (int)i;
    return best;
}

/* Does some live synth run on node? */
static int node_has_synth(const struct route_view *v, int node)
{
    for (uint32_t k = 0; k < v->n_synth && k < ROUTE_MAX_SYNTH; k++)
        if (v->synth_alive[k] && v->synth_node[k] == node) return 1;
    return 0;
}

int route_pick_worker(const struct route_view *v, uint32_t me, int *cross)
{
    int node, best, stray = -1;

    if (cross) *cross = 0;
    if (me >= v->n_synth || me >= ROUTE_MAX_SYNTH) return -1;
    node = v->synth_node[me];
    best = route_worker_on_node(v, node);
    /* Fallback: workers whose node has no live synth would otherwise starve until one
     * is restarted (back-off up to 30 s in a crash loop). */
    for (uint32_t i = 0; i < v->n_workers && i < ROUTE_MAX_WORKERS; i++)
        if (v->worker_node[i] != node && !node_has_synth(v, v->worker_node[i]) &&
            (stray < 0 || v->worker_depth[i] < v->worker_depth[stray]))
            stray = (int)i;
    /* A stranded worker wins ties: nothing else feeds it, our own are fed by us. */
    if (stray >= 0 && (best < 0 || v->worker_depth[stray] <= v->worker_depth[best])) {
        if (cross) *cross = 1;
        return stray;
    }
    return best;
}

int route_synth_serves(const struct route_view *v, uint32_t me)
{
    return route_pick_worker(v, me, 0) >= 0;
}
