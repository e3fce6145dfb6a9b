/* top.h — reading an instance's stats page from outside: one snapshot of every slot
 * (cuzk-top, `cuzk metrics`), as JSON (`cuzk-top --once --json`, schema in README.md)
 * or in the Prometheus text exposition format.
 *
 * A snapshot maps the stats segment read-only, copies each slot by the seqlock
 * protocol (stats.h), adds what only the OS knows (RSS from /proc/PID/statm, whether
 * the pid is alive) and unmaps again: so a viewer that takes one per refresh follows
 * a restarted daemon (new segment) and a restarted stage (new pid, same slot) alike,
 * and never writes shared memory. */
#ifndef CUZK_TOP_H
#define CUZK_TOP_H

#include <stdint.h>
#include <stdio.h>

#include "cuzk/stats.h"

#define TOP_SCHEMA_VERSION 1

struct top_proc {
	uint32_t slot;
	int alive;              /* kill(pid, 0) succeeded */
	int torn;               /* the slot could not be read consistently (writer died mid-write) */
	uint64_t rss_bytes;     /* 0 when unknown */
	uint64_t heartbeat_age_ns;
	struct stats_snapshot s;
};

struct top_snap {
	char instance[64];
	int running;            /* segment found and its supervisor alive */
	int found;              /* segment found (may be stale: supervisor dead) */
	char why[256];          /* when !running: what a person should know */
	uint64_t now_ns;        /* CLOCK_MONOTONIC of the reading */
	int32_t supervisor_pid;
	uint64_t page_start_ns;
	uint32_t n;             /* processes (used slots) */
	struct top_proc *p;
};

/* Take a snapshot of instance's stats page. Always returns 0 or -ENOMEM; a missing,
 * stale or foreign-version segment gives running = 0 and a sentence in why. */
int top_snap_take(struct top_snap *t, const char *instance);
void top_snap_free(struct top_snap *t);

const char *top_role_name(uint32_t role);
/* Index of the histogram/counter/gauge named name in p, or -1. */
int top_hist_find(const struct stats_snapshot *s, const char *name);
int top_counter_find(const struct stats_snapshot *s, const char *name);
int top_gauge_find(const struct stats_snapshot *s, const char *name);
/* The slot's main step histogram: "prove" for a worker, else "part"; -1 if none. */
int top_main_hist(const struct stats_snapshot *s);
/* Nanoseconds in states that are work (everything but idle, wait_input, wait_output). */
uint64_t top_work_ns(const struct stats_snapshot *s);

/* NUMA routing per node (route.h), summed over the synth slots: synth_parts are the
 * partitions synthesized by the synths of the node (their "parts_done"; gauge
 * "numa_node" says a synth's node), bufs_taken the buffers taken from the node's pool
 * share by any synth (counters "bufs_n<node>"), cross_node the partitions the node's
 * synths made for a worker on another node (fallback). Since each process's start:
 * a restarted synth starts again from 0. node -1: unknown. */
#define TOP_MAX_NODES 8
struct top_node {
	int node;
	uint32_t synths;
	uint64_t synth_parts, bufs_taken, cross_node;
};
/* Fill out[0..max) in node order; returns how many nodes. */
int top_nodes(const struct top_snap *t, struct top_node *out, int max);

/* Print the snapshot as one JSON object (schema TOP_SCHEMA_VERSION) and a newline. */
int top_print_json(FILE *f, const struct top_snap *t);
/* Print the snapshot in the Prometheus text exposition format (version 0.0.4). */
void top_print_prometheus(FILE *f, const struct top_snap *t);

/* `cuzk-top`, and `cuzk [--instance NAME] metrics` (argv[0] is "metrics"); return the
 * exit code. */
int top_main(int argc, char **argv);
int top_metrics_cmd(const char *instance, int argc, char **argv);

#endif
