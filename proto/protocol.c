/* protocol.c — the names cuzkd and its clients share (protocol.h). */
#include "proto/protocol.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "shm/pipeline.h"

void proto_default_run_dir(char *buf, size_t len)
{
    const char *xdg = getenv("XDG_RUNTIME_DIR");

    if (geteuid() == 0)
        snprintf(buf, len, "/run/cuzk");
    else if (xdg && xdg[0] == '/')
        snprintf(buf, len, "%s/cuzk", xdg);
    else
        snprintf(buf, len, "/tmp/cuzk-%u", (unsigned)geteuid());
}

int proto_wtns_name(const char *path, char *name, size_t len)
{
    const char *b;
    size_t n = pipeline_wtns_stem(path, &b); /* the rule the pipeline names outputs by */

    if (!n || n >= len) return -EINVAL;
    memcpy(name, b, n);
    name[n] = '\0';
    return 0;
}

bool proto_circuit_name_valid(const char *name)
{
    size_t n = strlen(name);

    if (!n || n >= PROTO_CIRCUIT_NAME_MAX || !isalnum((unsigned char)name[0])) return false;
    for (size_t i = 0; i < n; i++)
        if (!isalnum((unsigned char)name[i]) && !strchr("-_.", name[i])) return false;
    return true;
}
