/* cupti_trace.h — the CUPTI recorder's file (zk/cuda/cupti_rec.c, libcuzk_cupti.so)
 * read back and added to a job's trace (trace_export.h), for `cuzk trace --cupti`.
 *
 * The file's "clock CUPTI_NS MONO_NS" lines pair CUPTI's clock with CLOCK_MONOTONIC,
 * the stages' clock; the mapping is their mean difference (files of several processes
 * may be concatenated: each brings its pairs). Every record becomes a complete event
 * ("ph":"X") on a device track: pid CUPTI_TRACE_PID0 + device ("gpu DEVICE"), tid the
 * stream ("stream S"), ts/dur in microseconds from the job's submit like the stages'. */
#ifndef CUZK_CUPTI_TRACE_H
#define CUZK_CUPTI_TRACE_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <jansson.h>

#define CUPTI_TRACE_PID0 100 /* the stages' pids are 1..3 (trace_export.c) */

enum cupti_kind { CUPTI_REC_KERNEL, CUPTI_REC_MEMCPY, CUPTI_REC_MEMSET };

struct cupti_rec {
    enum cupti_kind kind;
    uint32_t device, stream;
    uint64_t start, end; /* ns on CUPTI's clock */
    uint64_t bytes;      /* memcpy, memset */
    char *name;          /* kernel: its name; memcpy: its direction (HtoD...); memset: NULL */
};

struct cupti_file {
    struct cupti_rec *recs;
    size_t n, cap;
    int64_t offset_ns;  /* host CLOCK_MONOTONIC = CUPTI + offset_ns */
    unsigned clocks;    /* clock pairs read */
    unsigned truncated; /* a last line without its newline, left out */
};

/* Read the recorder's file from f (path: for messages). 0, or -1 with err set: a
 * malformed line ("PATH:LINE: why"), no clock pair, out of memory. A last line without
 * its newline (the recorder cut short) is left out and counted. */
int cupti_file_read(FILE *f, const char *path, struct cupti_file *cf, char *err, size_t errlen);
void cupti_file_free(struct cupti_file *cf);

/* t (CUPTI's clock) on the host's CLOCK_MONOTONIC. */
uint64_t cupti_to_host(const struct cupti_file *cf, uint64_t t);

/* Add cf's records to trace (trace_export's object, changed in place) that overlap the
 * job's span: from otherData.submit_ns to the end of its last event. *kept, *outside:
 * the records added and those left out. 0, or -1 (no submit_ns, out of memory). */
int cupti_trace_merge(json_t *trace, const struct cupti_file *cf, size_t *kept, size_t *outside);

#endif
