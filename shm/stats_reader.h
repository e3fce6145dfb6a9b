/* stats_reader.h — reading an instance's stats page from outside: one snapshot of
 * every slot (cuzk-top, `cuzk metrics`, cuzkd's metrics endpoint), as JSON
 * (`cuzk-top --once --json`, schema in docs/operations.md) or in the Prometheus text
 * exposition format.
 *
 * A snapshot maps the stats segment read-only, copies each slot by the seqlock
 * protocol (stats.h), adds what only the OS knows (RSS from /proc/PID/statm, whether
 * the pid is alive) and unmaps again: so a viewer that takes one per refresh follows
 * a restarted daemon (new segment) and a restarted stage (new pid, same slot) alike,
 * and never writes shared memory. */
#ifndef CUZK_STATS_READER_H
#define CUZK_STATS_READER_H

#include <stdint.h>
#include <stdio.h>

#include "shm/stats.h"

#define STATS_READING_SCHEMA 1

struct stats_proc {
    uint32_t slot;
    int alive;          /* kill(pid, 0) succeeded */
    int torn;           /* the slot could not be read consistently (writer died mid-write) */
    uint64_t rss_bytes; /* 0 when unknown */
    uint64_t heartbeat_age_ns;
    struct stats_snapshot s;
};

struct stats_reading {
    char instance[64];
    int running;     /* segment found and its supervisor alive */
    int found;       /* segment found (may be stale: supervisor dead) */
    char why[256];   /* when !running: what a person should know */
    uint64_t now_ns; /* CLOCK_MONOTONIC of the reading */
    int32_t supervisor_pid;
    uint64_t page_start_ns;
    uint32_t n; /* processes (used slots) */
    struct stats_proc *p;
};

/* Take a snapshot of instance's stats page. Always returns 0 or -ENOMEM; a missing,
 * stale or foreign-version segment gives running = 0 and a sentence in why. */
int stats_reading_take(struct stats_reading *t, const char *instance);
void stats_reading_free(struct stats_reading *t);

const char *stats_role_name(uint32_t role);
/* The name of state i of s (its slot's name, else "stateI"), into buf. */
const char *stats_state_name(const struct stats_snapshot *s, int i, char *buf, size_t len);
/* Index of the histogram/counter/gauge named name in p, or -1. */
int stats_hist_find(const struct stats_snapshot *s, const char *name);
int stats_counter_find(const struct stats_snapshot *s, const char *name);
int stats_gauge_find(const struct stats_snapshot *s, const char *name);
/* The slot's main step histogram: "prove" for a worker, else "part"; -1 if none. */
int stats_main_hist(const struct stats_snapshot *s);
/* Nanoseconds in states that are work (everything but idle, wait_input, wait_output). */
uint64_t stats_work_ns(const struct stats_snapshot *s);

/* NUMA routing per node (route.h), summed over the synth slots: synth_parts are the
 * partitions synthesized by the synths of the node (their "parts_done"; gauge
 * "numa_node" says a synth's node), bufs_taken the buffers taken from the node's pool
 * share by any synth (counters "bufs_n<node>"), cross_node the partitions the node's
 * synths made for a worker on another node (fallback). Since each process's start:
 * a restarted synth starts again from 0. node -1: unknown. */
#define STATS_READING_MAX_NODES 8
struct stats_node {
    int node;
    uint32_t synths;
    uint64_t synth_parts, bufs_taken, cross_node;
};
/* Fill out[0..max) in node order; returns how many nodes. */
int stats_reading_nodes(const struct stats_reading *t, struct stats_node *out, int max);

/* Print the snapshot as one JSON object (schema STATS_READING_SCHEMA) and a newline. */
int stats_reading_json(FILE *f, const struct stats_reading *t);
/* Print the snapshot in the Prometheus text exposition format (version 0.0.4). */
void stats_reading_prometheus(FILE *f, const struct stats_reading *t);

#endif
