/* route.h — NUMA routing of a partition (DESIGN.md, "Synthesis from input.json",
 * "Routing"): which worker a synth process hands its next partition to, so that the
 * partition is synthesized on the node of the worker that proves it, into a buffer of
 * that node's pool share.
 *
 * The decision is the synth's, made per partition just before it takes a buffer
 * (synth/synth.c): every synth pops the one shared ring of QUEUED hints, and serves
 *   1. the least-loaded worker on its own node (no crossing), or
 *   2. the fallback: the least-loaded worker on a node that has no synth alive (its
 *      synth dead or being restarted, or a plan that left a node with workers and no
 *      synth), when its ring is no deeper than the local choice's (nothing else feeds
 *      it). The buffer then still comes from the worker's node, so only the synth's
 *      writes cross the interconnect, not the device's reads; counted as "cross_node".
 *   3. neither (a synth on a node without workers while every node with workers has a
 *      live synth): it takes no partition at all and leaves the hints to the others.
 * (A node whose pool share is empty, fewer buffers than nodes with workers, is the
 * caller's case: the synth takes any share's buffer, counts cross_node, and the worker
 * is chosen on that buffer's node.)
 * Work is shared between nodes by the synths' pace (each takes the next hint when it
 * can make progress), bounded by each node's buffers; DESIGN.md's "the supervisor picks
 * the worker first" is the same rule seen from the partition: its worker's node is the
 * node of the synth that won it. Nodes are OS NUMA node numbers; -1 (unknown: a
 * topology without NUMA nodes) is a node like any other, so one-node machines route
 * everything locally.
 */
#ifndef CUZK_ROUTE_H
#define CUZK_ROUTE_H

#include <stdint.h>

#define ROUTE_MAX_WORKERS 8
#define ROUTE_MAX_SYNTH   8

/* What the decision looks at: the plan's nodes and a reading of the live state. */
struct route_view {
    uint32_t n_workers;
    int worker_node[ROUTE_MAX_WORKERS];
    uint32_t worker_depth[ROUTE_MAX_WORKERS]; /* hints queued in the worker's ring */
    uint32_t n_synth;
    int synth_node[ROUTE_MAX_SYNTH];
    int synth_alive[ROUTE_MAX_SYNTH]; /* the synth in slot i runs now */
};

/* The worker synth `me` hands its next partition to: rule 1 (*cross = 0), rule 2
 * (*cross = 1), or -1 (rule 3: take no partition now). Ties go to the lower worker
 * number. cross may be NULL. */
int route_pick_worker(const struct route_view *v, uint32_t me, int *cross);

/* The least-loaded worker on `node` (ties: lower number), or -1 if none is there. */
int route_worker_on_node(const struct route_view *v, int node);

/* Does synth `me` have someone to serve (route_pick_worker(v, me) >= 0)? */
int route_synth_serves(const struct route_view *v, uint32_t me);

#endif
