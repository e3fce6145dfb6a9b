/* helper_trace.c — see helper_trace.h. */
#include "helper_trace.h"

#include <string.h>

json_t *test_trace_find(json_t *ev, const char *name)
{
    size_t i;
    json_t *x;

    json_array_foreach (ev, i, x)
        if (!strcmp(json_string_value(json_object_get(x, "name")), name)) return x;
    return NULL;
}
