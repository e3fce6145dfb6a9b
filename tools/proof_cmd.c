/* proof_cmd.c — `cuzk proof`'s output (proof_cmd.h). */
#include "tools/proof_cmd.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/error.h"

/* v as JSON text into DIR/NAME, replacing a file (never following a link there).
 * 0, or -errno with the reason printed. */
static int write_json(const char *dir, const char *name, json_t *v)
{
    char path[4096], *t = json_dumps(v, JSON_INDENT(1) | JSON_PRESERVE_ORDER);
    size_t len = t ? strlen(t) : 0;
    int fd = -1, rc = 0;

    snprintf(path, sizeof(path), "%s/%s", dir, name);
    if (!t || (fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0644)) < 0 ||
        write(fd, t, len) != (ssize_t)len || write(fd, "\n", 1) != 1)
        rc = t ? -errno : -ENOMEM;
    if (fd >= 0 && close(fd) && !rc) rc = -errno;
    if (rc) fprintf(stderr, "cuzk proof: %s: %s\n", path, strerror(-rc));
    free(t);
    return rc;
}

int proof_cmd_write(json_t *reply, const char *out_dir)
{
    json_t *proof = json_object_get(reply, "proof"), *pub = json_object_get(reply, "public");
    long long job = (long long)json_integer_value(json_object_get(reply, "job"));
    long long k = (long long)json_integer_value(json_object_get(reply, "index"));
    char a[64], b[64];

    if (!json_is_object(proof) || !json_is_array(pub)) {
        fprintf(stderr, "cuzk proof: cuzkd's answer has no proof\n");
        return CUZK_EXIT_REFUSED;
    }
    if (!out_dir) {
        json_t *o = json_pack("{s:O,s:O}", "proof", proof, "publicSignals", pub);
        int rc = json_dumpf(o, stdout, JSON_COMPACT | JSON_PRESERVE_ORDER);

        json_decref(o);
        putchar('\n');
        return rc ? CUZK_EXIT_OUTPUT : CUZK_EXIT_OK;
    }
    snprintf(a, sizeof(a), "%lld-%lld.proof.json", job, k);
    snprintf(b, sizeof(b), "%lld-%lld.public.json", job, k);
    if (write_json(out_dir, a, proof) || write_json(out_dir, b, pub)) return CUZK_EXIT_OUTPUT;
    printf("%s/%s\n%s/%s\n", out_dir, a, out_dir, b);
    return CUZK_EXIT_OK;
}
