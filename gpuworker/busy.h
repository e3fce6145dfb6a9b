/* busy.h — a device's busy time and idle gaps from its partitions' device spans.
 *
 * Each partition reports the span the device had its work ([begin, end) on the host's
 * CLOCK_MONOTONIC: CUDA from events, gpu.h's gpu_prove_times; the CPU backend its
 * compute section). Spans of two in-flight threads overlap, and arrive in the order the threads
 * finish, which is nearly but not always the order of their ends. busy_add keeps the
 * union's length (gpu_busy_ns: never above wall) exactly over the last BUSY_KEEP
 * merged intervals; a span reaching below them (more than BUSY_KEEP intervals late)
 * counts only its part above them. The idle gap before a span is the time from the
 * frontier (the latest end so far) to its begin: 0 when it overlaps, the device never
 * idle between the two, and 0 for a span that arrives after one that ended later (it
 * ran while the device was busy with that one): every span but the first has one,
 * so a backlog of n partitions gives n - 1 gaps. Pure; one writer (the worker). */
#ifndef CUZK_BUSY_H
#define CUZK_BUSY_H

#include <stdint.h>

#define BUSY_KEEP 8

struct busy_union {
    uint64_t lo[BUSY_KEEP], hi[BUSY_KEEP]; /* disjoint, sorted: the latest merged intervals */
    unsigned n;
    uint64_t floor;    /* everything below counts as covered (intervals dropped) */
    uint64_t frontier; /* the latest end seen */
    uint64_t spans;    /* spans added */
    uint64_t total_ns; /* the union's length */
};

/* Add span [b, e). Returns the nanoseconds it newly covers (added to total_ns). *gap
 * gets the idle time before it; *has_gap is 0 for the first span and for an empty one
 * (e <= b: nothing counted), else 1. */
uint64_t busy_add(struct busy_union *u, uint64_t b, uint64_t e, uint64_t *gap, int *has_gap);

#endif
