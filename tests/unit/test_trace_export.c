/* test_trace_export.c — `cuzk trace`'s Chrome trace-event JSON (trace_export.h) from a
 * status reply written by hand: one event per stage a partition went through, in
 * microseconds from the submit, a stage still running left out and counted, a failed
 * partition's instant event with its reason. */
#include <check.h>
#include <string.h>

#include <jansson.h>

#include "tools/trace_export.h"

#include "helper_test.h"
#include "helper_trace.h"

/* A job submitted at 1 s: part 0 through all three stages (synth 0, worker 1,
 * finalizer 0), part 1 failed in prove, part 2 still proving. */
static json_t *job_reply(void)
{
    json_error_t e;
    json_t *j =
        json_loads("{\"id\": 7, \"state\": \"running\", \"zkey\": \"c.zkey\", \"submit_ns\": 1000000000,"
                   " \"parts\": ["
                   "  {\"index\": 0, \"name\": \"w0\", \"state\": \"done\", \"times\": {"
                   "    \"synth\": {\"begin_ns\": 1000001000, \"end_ns\": 1000003000, \"by\": 0},"
                   "    \"prove\": {\"begin_ns\": 1000004000, \"end_ns\": 1000009000, \"by\": 1},"
                   "    \"final\": {\"begin_ns\": 1000009000, \"end_ns\": 1000010000, \"by\": 0}}},"
                   "  {\"index\": 1, \"name\": \"w1\", \"state\": \"failed\", \"reason\": \"bad\","
                   "   \"times\": {"
                   "    \"synth\": {\"begin_ns\": 1000001000, \"end_ns\": 1000002000, \"by\": 0},"
                   "    \"prove\": {\"begin_ns\": 1000005000, \"end_ns\": 1000006000, \"by\": 1}}},"
                   "  {\"index\": 2, \"name\": \"w2\", \"state\": \"running\", \"times\": {"
                   "    \"synth\": {\"begin_ns\": 1000001000, \"end_ns\": 1000002500, \"by\": 0},"
                   "    \"prove\": {\"begin_ns\": 1000007000, \"end_ns\": 0, \"by\": 1}}}]}",
                   0, &e);

    ck_assert_msg(j != NULL, "%s", e.text);
    return j;
}

/* The events of phase ph and, when name is not NULL, that name. */
static int count(json_t *ev, const char *ph, const char *name)
{
    size_t i;
    json_t *x;
    int n = 0;

    json_array_foreach (ev, i, x)
        if (!strcmp(json_string_value(json_object_get(x, "ph")), ph) &&
            (!name || !strcmp(json_string_value(json_object_get(x, "name")), name)))
            n++;
    return n;
}

TEST(test_trace_export_one_event_per_finished_stage, 1)
{
    json_t *job = job_reply(), *tr, *ev, *x;
    unsigned running = 99;

    tr = trace_export(job, &running);
    ck_assert_ptr_nonnull(tr);
    ev = json_object_get(tr, "traceEvents");
    ck_assert_uint_eq(running, 1); /* part 2's prove */
    /* three processes named; threads synth 0, gpuworker 1, finalizer 0 */
    ck_assert_int_eq(count(ev, "M", "process_name"), 3);
    ck_assert_int_eq(count(ev, "M", "thread_name"), 3);
    /* part 0: 3 stages, part 1: 2, part 2: synth only */
    ck_assert_int_eq(count(ev, "X", NULL), 6);
    x = test_trace_find(ev, "prove w0");
    ck_assert_ptr_nonnull(x);
    ck_assert_double_eq_tol(json_real_value(json_object_get(x, "ts")), 4.0, 1e-9);
    ck_assert_double_eq_tol(json_real_value(json_object_get(x, "dur")), 5.0, 1e-9);
    ck_assert_int_eq(json_integer_value(json_object_get(x, "pid")), 2);
    ck_assert_int_eq(json_integer_value(json_object_get(x, "tid")), 1);
    ck_assert_ptr_null(test_trace_find(ev, "prove w2")); /* still running: left out */
    /* the failure: an instant at its last stage's end, with the reason */
    ck_assert_int_eq(count(ev, "i", "failed"), 1);
    x = test_trace_find(ev, "failed");
    ck_assert_str_eq(json_string_value(json_object_get(x, "cat")), "prove");
    ck_assert_double_eq_tol(json_real_value(json_object_get(x, "ts")), 6.0, 1e-9);
    ck_assert_str_eq(json_string_value(json_object_get(json_object_get(x, "args"), "reason")), "bad");
    x = json_object_get(tr, "otherData");
    ck_assert_int_eq(json_integer_value(json_object_get(x, "job")), 7);
    ck_assert_int_eq(json_integer_value(json_object_get(x, "stages_running")), 1);
    json_decref(tr);
    json_decref(job);
}

int main(void)
{
    const struct test_opts o = { 0 };

    return test_main("trace_export", &o);
}
