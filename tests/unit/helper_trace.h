/* helper_trace.h — what the trace tests (test_trace_export.c, test_cupti_trace.c) both
 * read of a Chrome trace-event array. */
#ifndef CUZK_TEST_HELPER_TRACE_H
#define CUZK_TEST_HELPER_TRACE_H

#include <jansson.h>

/* The first event of the array ev named name, or NULL when none is. */
json_t *test_trace_find(json_t *ev, const char *name);

#endif
