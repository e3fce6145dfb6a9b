/* fuzz_control.c — libFuzzer target: the control protocol (control.h): the input fed
 * to the line framer in two chunks, each complete line parsed as a request. */
#include <stdint.h>
#include <string.h>

#include "cuzk/control.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int on_line(void *arg, const char *line, size_t len)
{
    struct control_req r;
    struct control_err e;

    (void)arg;
    if (!line)
        return 0; /* over-long line: dropped */
    if (control_parse(line, len, &r, &e) == 0)
        control_req_free(&r);
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct control_framer f;
    size_t cut = size ? data[0] % (size + 1) : 0;

    memset(&f, 0, sizeof(f));
    control_framer_feed(&f, (const char *)data, cut, on_line, NULL);
    control_framer_feed(&f, (const char *)data + cut, size - cut, on_line, NULL);
    control_framer_free(&f);
    return 0;
}
