/* trace_export.h — one job's timeline as Chrome trace-event JSON (Perfetto), for
 * `cuzk trace` (client.c).
 *
 * From the `status {job}` reply: each partition's "times" (pipeline.h, struct
 * pipe_part_times) become complete events ("ph":"X"), one per stage it went through:
 * pid = the stage kind (1 synth, 2 prove, 3 finalize), tid = that stage's process
 * index (synth i, worker i, finalizer i), ts/dur in microseconds from the job's submit.
 * A stage still running is left out (the file says how many); a failed partition gets
 * an instant event with its reason. Schema: docs/operations.md, "Watching it". */
#ifndef CUZK_TRACE_EXPORT_H
#define CUZK_TRACE_EXPORT_H

#include <jansson.h>

/* The trace of job (the reply's "job" object; not taken over): a new reference, NULL
 * when out of memory. *running: how many stages in progress were left out. */
json_t *trace_export(json_t *job, unsigned *running);

#endif
