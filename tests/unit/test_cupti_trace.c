/* test_cupti_trace.c — the CUPTI recorder's file (cupti_trace.h) from hand-written
 * text: every kind of record, the clock mapping (the mean of the pairs), a last line
 * cut short left out, a malformed line named by its number, no clock pair refused; and
 * the records added to a job's trace on a device track, those outside its span left
 * out. */
#include <check.h>
#include <stdio.h>
#include <string.h>

#include <jansson.h>

#include "tools/cupti_trace.h"

#include "helper_test.h"
#include "helper_trace.h"

/* text as a stream; parsed into *cf. 0 or -1 (err set). */
static int read_text(const char *text, struct cupti_file *cf, char *err, size_t errlen)
{
    FILE *f = fmemopen((void *)text, strlen(text), "r");
    int rc;

    ck_assert_ptr_nonnull(f);
    rc = cupti_file_read(f, "rec", cf, err, errlen);
    fclose(f);
    return rc;
}

TEST(test_cupti_read_records_and_clock, 1)
{
    struct cupti_file cf;
    char err[256] = "";

    ck_assert_int_eq(read_text("cuzk-cupti 1\n"
                               "clock 1000 5000\n"
                               "kernel 0 7 1100 1300 msm_bucket_sum<3, 12>(unsigned int*)\n"
                               "memcpy 0 13 1400 1500 1048576 HtoD\n"
                               "memset 1 7 1600 1650 4096\n"
                               "clock 3000 7010\n"
                               "kernel 0 7 2000 2100 cut_sho",
                               &cf, err, sizeof(err)),
                     0);
    ck_assert_uint_eq(cf.n, 3);
    ck_assert_uint_eq(cf.clocks, 2);
    ck_assert_uint_eq(cf.truncated, 1);
    ck_assert_int_eq(cf.offset_ns, 4005); /* host - CUPTI: 4000 and 4010 */
    ck_assert_uint_eq(cupti_to_host(&cf, 1100), 5105);
    ck_assert_int_eq(cf.recs[0].kind, CUPTI_REC_KERNEL);
    ck_assert_str_eq(cf.recs[0].name, "msm_bucket_sum<3, 12>(unsigned int*)"); /* spaces kept */
    ck_assert_uint_eq(cf.recs[0].stream, 7);
    ck_assert_uint_eq(cf.recs[0].start, 1100);
    ck_assert_uint_eq(cf.recs[0].end, 1300);
    ck_assert_int_eq(cf.recs[1].kind, CUPTI_REC_MEMCPY);
    ck_assert_str_eq(cf.recs[1].name, "HtoD");
    ck_assert_uint_eq(cf.recs[1].bytes, 1048576);
    ck_assert_int_eq(cf.recs[2].kind, CUPTI_REC_MEMSET);
    ck_assert_uint_eq(cf.recs[2].device, 1);
    ck_assert_ptr_null(cf.recs[2].name);
    cupti_file_free(&cf);
    /* a negative offset (CUPTI's clock ahead of CLOCK_MONOTONIC, its usual state) */
    ck_assert_int_eq(read_text("clock 1796662049920752147 5130360978803\n", &cf, err, sizeof(err)), 0);
    ck_assert_uint_eq(cupti_to_host(&cf, 1796662049920752147 + 17), 5130360978803 + 17);
    cupti_file_free(&cf);
}

TEST(test_cupti_read_bad_lines, 1)
{
    static const char *const bad[] = {
        "kernel 0 7 1100 1300\n",          /* no name */
        "kernel 0 7 1300 1100 k\n",        /* ends before it starts */
        "memcpy 0 7 1100 1300 12\n",       /* no direction */
        "memset 0 x 1100 1300 12\n",       /* not a number */
        "memset 0 7 1100 1300 -12\n",      /* not a number either */
        "memset 0 7 1100 1300 12 extra\n", /* one field too many */
        "gpu 0 7 1100 1300\n",             /* unknown record */
        "clock 12\n",                      /* half a pair */
        "\n",                              /* empty */
        "cuzk-cupti 2\n",                  /* another version */
    };
    struct cupti_file cf;
    char text[256], err[256];

    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        snprintf(text, sizeof(text), "cuzk-cupti 1\nclock 1 2\n%sclock 3 4\n", bad[i]);
        err[0] = 0;
        ck_assert_msg(read_text(text, &cf, err, sizeof(err)) == -1, "accepted %s", bad[i]);
        ck_assert_msg(!strncmp(err, "rec:3: ", 7), "%s: %s", bad[i], err);
        ck_assert_ptr_null(cf.recs);
    }
    ck_assert_int_eq(read_text("cuzk-cupti 1\nkernel 0 7 1 2 k\n", &cf, err, sizeof(err)), -1);
    ck_assert_ptr_nonnull(strstr(err, "no clock line"));
    ck_assert_int_eq(read_text("", &cf, err, sizeof(err)), -1);
}

static int count_pid(json_t *ev, const char *ph, int pid)
{
    size_t i;
    json_t *x;
    int n = 0;

    json_array_foreach (ev, i, x)
        if (!strcmp(json_string_value(json_object_get(x, "ph")), ph) &&
            json_integer_value(json_object_get(x, "pid")) == pid)
            n++;
    return n;
}

/* A job submitted at 1 s (CLOCK_MONOTONIC) whose one stage event spans 10 us; CUPTI's
 * clock 999999500 ns behind. */
TEST(test_cupti_merge_device_track, 1)
{
    json_error_t je;
    json_t *tr = json_loads("{\"traceEvents\": [{\"name\": \"prove w0\", \"ph\": \"X\", \"ts\": 0.0,"
                            " \"dur\": 10.0, \"pid\": 2, \"tid\": 0}],"
                            " \"otherData\": {\"job\": 1, \"submit_ns\": 1000000000}}",
                            0, &je);
    json_t *ev, *x;
    struct cupti_file cf;
    char err[256];
    size_t kept, outside;

    ck_assert_ptr_nonnull(tr);
    ck_assert_int_eq(read_text("clock 500 1000000000\n"
                               "kernel 0 7 100 200 before_the_job\n"
                               "kernel 0 7 1500 3500 msm\n"
                               "memcpy 0 13 3500 4500 64 DtoH\n"
                               "memset 2 7 4500 5000 32\n"
                               "kernel 0 7 20000 21000 after_the_job\n",
                               &cf, err, sizeof(err)),
                     0);
    ck_assert_int_eq(cupti_trace_merge(tr, &cf, &kept, &outside), 0);
    ck_assert_uint_eq(kept, 3);
    ck_assert_uint_eq(outside, 2);
    ev = json_object_get(tr, "traceEvents");
    ck_assert_int_eq(count_pid(ev, "X", CUPTI_TRACE_PID0), 2);
    ck_assert_int_eq(count_pid(ev, "X", CUPTI_TRACE_PID0 + 2), 1);
    ck_assert_int_eq(count_pid(ev, "M", CUPTI_TRACE_PID0), 3); /* gpu 0, streams 7 and 13 */
    x = test_trace_find(ev, "process_name"); /* the stages' three come first in a real trace; none here */
    ck_assert_ptr_nonnull(x);
    ck_assert_str_eq(json_string_value(json_object_get(json_object_get(x, "args"), "name")), "gpu 0");
    x = test_trace_find(ev, "msm");
    ck_assert_ptr_nonnull(x);
    ck_assert_double_eq_tol(json_real_value(json_object_get(x, "ts")), 1.0, 1e-9);
    ck_assert_double_eq_tol(json_real_value(json_object_get(x, "dur")), 2.0, 1e-9);
    ck_assert_int_eq(json_integer_value(json_object_get(x, "tid")), 7);
    x = test_trace_find(ev, "memcpy DtoH");
    ck_assert_ptr_nonnull(x);
    ck_assert_int_eq(json_integer_value(json_object_get(json_object_get(x, "args"), "bytes")), 64);
    ck_assert_ptr_null(test_trace_find(ev, "before_the_job"));
    ck_assert_ptr_null(test_trace_find(ev, "after_the_job"));
    ck_assert_int_eq(json_integer_value(json_object_get(json_object_get(tr, "otherData"), "cupti_events")),
                     3);
    cupti_file_free(&cf);
    json_decref(tr);
}

int main(void)
{
    const struct test_opts o = { 0 };

    return test_main("cupti_trace", &o);
}
