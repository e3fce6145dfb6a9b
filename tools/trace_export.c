/* trace_export.c — `cuzk trace`'s Chrome trace-event JSON (trace_export.h). */
#include "tools/trace_export.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "shm/pipeline.h"

/* A string member, "" when absent (a reply of an older cuzkd may lack one). */
static const char *member_str(json_t *o, const char *k)
{
    const char *s = json_string_value(json_object_get(o, k));

    return s ? s : "";
}

static const char *const trace_stage[PIPE_T_STAGES] = { "synth", "prove", "finalize" };
static const char *const trace_key[PIPE_T_STAGES] = { "synth", "prove", "final" };
static const char *const trace_proc[PIPE_T_STAGES] = { "synth", "gpuworker", "finalizer" };

json_t *trace_export(json_t *job, unsigned *running)
{
    json_t *ev = json_array(), *parts = json_object_get(job, "parts"), *p;
    uint64_t t_sub = (uint64_t)json_integer_value(json_object_get(job, "submit_ns"));
    uint32_t seen_tid[PIPE_T_STAGES] = { 0 }; /* bit i: thread_name of index i emitted */
    size_t i;

    for (unsigned k = 0; k < PIPE_T_STAGES; k++)
        json_array_append_new(ev,
                              json_pack("{s:s,s:s,s:i,s:i,s:{s:s}}", "name", "process_name", "ph", "M", "pid",
                                        (int)k + 1, "tid", 0, "args", "name", trace_proc[k]));
    *running = 0;
    json_array_foreach (parts, i, p) {
        json_t *t = json_object_get(p, "times");
        uint64_t last = 0;
        int last_k = 0;

        for (unsigned k = 0; k < PIPE_T_STAGES; k++) {
            json_t *s = json_object_get(t, trace_key[k]);
            uint64_t b = (uint64_t)json_integer_value(json_object_get(s, "begin_ns"));
            uint64_t e = (uint64_t)json_integer_value(json_object_get(s, "end_ns"));
            int who = (int)json_integer_value(json_object_get(s, "by"));
            char name[PIPE_NAME_LEN + 16];

            if (!s || !b) continue;
            last = b > last ? b : last;
            last_k = (int)k;
            if (!e || e < b) { /* still in this stage (or read mid-update) */
                (*running)++;
                continue;
            }
            last = e;
            if (who >= 0 && who < 32 && !(seen_tid[k] & (1u << who))) {
                char tn[32];

                seen_tid[k] |= 1u << who;
                snprintf(tn, sizeof(tn), "%s %d", trace_proc[k], who);
                json_array_append_new(ev,
                                      json_pack("{s:s,s:s,s:i,s:i,s:{s:s}}", "name", "thread_name", "ph", "M",
                                                "pid", (int)k + 1, "tid", who, "args", "name", tn));
            }
            snprintf(name, sizeof(name), "%s %s", trace_stage[k], member_str(p, "name"));
            json_array_append_new(
                ev,
                json_pack("{s:s,s:s,s:s,s:f,s:f,s:i,s:i,s:{s:I,s:s}}", "name", name, "cat", trace_stage[k],
                          "ph", "X", "ts", (double)((int64_t)(b - t_sub)) / 1e3, "dur", (double)(e - b) / 1e3,
                          "pid", (int)k + 1, "tid", who, "args", "partition",
                          json_integer_value(json_object_get(p, "index")), "name", member_str(p, "name")));
        }
        if (!strcmp(member_str(p, "state"), "failed") && last)
            json_array_append_new(ev,
                                  json_pack("{s:s,s:s,s:s,s:s,s:f,s:i,s:i,s:{s:I,s:s}}", "name", "failed",
                                            "cat", trace_stage[last_k], "ph", "i", "s", "p", "ts",
                                            (double)((int64_t)(last - t_sub)) / 1e3, "pid", last_k + 1, "tid",
                                            0, "args", "partition",
                                            json_integer_value(json_object_get(p, "index")), "reason",
                                            member_str(p, "reason")));
    }
    return json_pack("{s:o,s:s,s:{s:I,s:s,s:s,s:I,s:i}}", "traceEvents", ev, "displayTimeUnit", "ms",
                     "otherData", "job", json_integer_value(json_object_get(job, "id")), "state",
                     member_str(job, "state"), "zkey", member_str(job, "zkey"), "submit_ns",
                     (json_int_t)t_sub, "stages_running", (int)*running);
}
