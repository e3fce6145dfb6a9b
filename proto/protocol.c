/* protocol.c — the names cuzkd and its clients share (protocol.h). */
#include "proto/protocol.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

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

/* Characters of UTF-8 text (jansson's strings are valid UTF-8): the bytes that do
 * not continue a character. */
static size_t utf8_chars(const char *s, size_t n)
{
    size_t c = 0;

    for (size_t i = 0; i < n; i++) c += ((unsigned char)s[i] & 0xc0) != 0x80;
    return c;
}

bool proto_metadata_valid(const json_t *m, char *err, size_t errlen)
{
    const char *k;
    json_t *v;
    char *text;
    size_t n;

    if (!json_is_object(m)) {
        snprintf(err, errlen, "metadata must be a JSON object");
        return false;
    }
    if (json_object_size(m) > PROTO_META_KEYS) {
        snprintf(err, errlen, "metadata has %zu keys: at most %d", json_object_size(m), PROTO_META_KEYS);
        return false;
    }
    json_object_foreach ((json_t *)m, k, v) {
        n = utf8_chars(k, strlen(k));
        if (!n || n > PROTO_META_KEY_MAX) {
            snprintf(err, errlen, "metadata key \"%.48s\": a key is 1 to %d characters", k,
                     PROTO_META_KEY_MAX);
            return false;
        }
        if (json_is_object(v) || json_is_array(v)) {
            snprintf(err, errlen, "metadata key \"%s\": a value is a string, a number, true, false or null",
                     k);
            return false;
        }
        if (json_is_string(v) &&
            utf8_chars(json_string_value(v), json_string_length(v)) > PROTO_META_VALUE_MAX) {
            snprintf(err, errlen, "metadata key \"%s\": a string value is at most %d characters", k,
                     PROTO_META_VALUE_MAX);
            return false;
        }
    }
    text = json_dumps(m, JSON_COMPACT);
    n = text ? strlen(text) : SIZE_MAX;
    free(text);
    if (n > PROTO_META_BYTES) {
        snprintf(err, errlen, "metadata is over %d bytes", PROTO_META_BYTES);
        return false;
    }
    return true;
}
