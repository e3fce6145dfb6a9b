/* client_circuit.c — `cuzk preload` and `cuzk evict`: a circuit into or out of the
 * daemon's cache (client_conn.h). */
#include "tools/client_conn.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <jansson.h>

#include "proto/ctl_client.h"
#include "base/display.h"
#include "shm/pipeline.h"
#include "proto/protocol.h"
#include "shm/segment.h"
#include "base/error.h"
#include "tools/fleet_client.h"
#include "base/os.h"
#include "tools/metrics_cmd.h"
#include "tools/proof_cmd.h"
#include "tools/trace_export.h"
#include "synth/wgen.h"
#include "zk/zkey.h"

/* The entry of status's circuits table for path when it is request seq's or a later
 * one's, else NULL. *superseded: the entry is gone or a later request's. */
static json_t *circuit_entry(json_t *st, const char *path, json_int_t seq, int *superseded)
{
    json_t *e, *ents = json_object_get(json_object_get(st, "circuits"), "entries");
    size_t i;

    *superseded = 1;
    json_array_foreach (ents, i, e)
        if (!strcmp(client_jstr(e, "zkey"), path)) {
            *superseded = client_jint(e, "seq") != seq;
            return client_jint(e, "seq") >= seq ? e : NULL;
        }
    return NULL;
}

/* cuzk preload|evict ZKEY [--no-wait] [--timeout-ms N] */
int client_circuit(struct client *c, int argc, char **argv, const char *what)
{
    const char *arg = NULL;
    long long timeout_ms = 120000;
    int wait = 1, rc, sup;
    char path[PATH_MAX];
    json_t *r, *st = NULL, *e = NULL;
    json_int_t seq;

    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--no-wait"))
            wait = 0;
        else if (!strcmp(argv[i], "--timeout-ms") && i + 1 < argc) {
            if ((rc = client_option_number(what, "--timeout-ms", argv[++i], 0, INT32_MAX, &timeout_ms)))
                return rc;
        } else if (argv[i][0] != '-' && !arg)
            arg = argv[i];
        else {
            fprintf(stderr, "cuzk %s: usage: cuzk %s ZKEY [--no-wait] [--timeout-ms N]\n", what, what);
            return CUZK_EXIT_USAGE;
        }
    }
    if (!arg) {
        fprintf(stderr, "cuzk %s: needs a .zkey path\n", what);
        return CUZK_EXIT_USAGE;
    }
    /* The daemon has another working directory: an absolute path (an evicted file may
     * be gone already: then the path as given, made absolute). */
    if (!realpath(arg, path)) {
        char cwd[PATH_MAX];

        if (strcmp(what, "evict") || (arg[0] != '/' && !getcwd(cwd, sizeof(cwd)))) {
            fprintf(stderr, "cuzk %s: %s: %s\n", what, arg, strerror(errno));
            return CUZK_EXIT_USAGE;
        }
        if ((size_t)snprintf(path, sizeof(path), "%s%s%s", arg[0] == '/' ? "" : cwd, arg[0] == '/' ? "" : "/",
                             arg) >= sizeof(path)) {
            fprintf(stderr, "cuzk %s: %s: path too long\n", what, arg);
            return CUZK_EXIT_USAGE;
        }
    }
    if (!strcmp(what, "preload")) {
        /* The zkey as a descriptor we opened (control.h); evict names it only. */
        struct fdset fs = { 0 };
        json_t *ref;

        if (client_add_file(&fs, "zkey", path, 0, &ref)) {
            client_fdset_close(&fs);
            return CUZK_EXIT_USAGE;
        }
        if ((rc = client_connect(c))) {
            json_decref(ref);
            client_fdset_close(&fs);
            return rc;
        }
        r = client_request_fds(c, json_pack("{s:s,s:i,s:o}", "req", what, "fds", 1, "zkey", ref), fs.fd,
                               fs.n);
        client_fdset_close(&fs);
    } else {
        if ((rc = client_connect(c))) return rc;
        r = client_request(c, json_pack("{s:s,s:s}", "req", what, "zkey", path));
    }
    if ((rc = client_reply_failed(c, r))) return rc;
    seq = json_integer_value(json_object_get(r, "seq"));
    snprintf(path, sizeof(path), "%s", client_jstr(r, "zkey"));
    /* Wait until every running stage has applied it (status, every 100 ms). */
    for (long long t = 0; wait; t += 100) {
        json_decref(st);
        st = client_request(c, json_pack("{s:s}", "req", PROTO_REQ_STATUS));
        if (!st || !client_is_ok(st)) {
            rc = st ? client_print_error(c, st) : CUZK_EXIT_NO_DAEMON;
            json_decref(st);
            json_decref(r);
            return rc;
        }
        e = circuit_entry(st, path, seq, &sup);
        if (sup || (e && client_jint(e, "applied") >= client_jint(json_object_get(st, "circuits"), "stages")))
            break;
        if (t >= timeout_ms) {
            fprintf(stderr,
                    "cuzk %s: %s: not every stage has applied it after %lld ms (a "
                    "stage in a long partition applies it after that partition)\n",
                    what, path, timeout_ms);
            json_decref(st);
            json_decref(r);
            return CUZK_EXIT_TIMEOUT;
        }
        usleep(100000);
    }
    if (e && !sup) {
        json_object_set(r, "applied", json_object_get(e, "applied"));
        json_object_set(r, "failed", json_object_get(e, "failed"));
    }
    rc = e && !sup && client_jint(e, "failed") ? CUZK_EXIT_REFUSED : CUZK_EXIT_OK;
    if (c->json)
        client_print_json(r);
    else if (rc)
        fprintf(stderr, "cuzk %s: %s failed to load in %lld of %lld stage(s): see cuzkd's log\n", what, path,
                client_jint(e, "failed"), client_jint(e, "applied"));
    else if (!wait)
        printf("%s of %s requested\n", what, path);
    else
        printf("%s: %s in %lld stage(s)\n", !strcmp(what, "preload") ? "preloaded" : "evicted", path,
               sup ? 0 : client_jint(e, "applied"));
    json_decref(st);
    json_decref(r);
    return rc;
}
