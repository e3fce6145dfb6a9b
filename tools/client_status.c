/* client_status.c — the requests whose reply is printed as it comes: `cuzk status`,
 * `wait`, `cancel`, `restart`, `drain`, `shutdown`, `circuits`, `reload`
 * (client_conn.h). */
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

/* "alice (1001)" for the "owner" uid of o (a job), "?" when the reply has none. */
static void owner_name(json_t *o, char *buf, size_t len)
{
    json_t *u = json_object_get(o, "owner");
    struct passwd *pw;

    if (!json_is_integer(u)) {
        snprintf(buf, len, "?");
        return;
    }
    pw = getpwuid((uid_t)json_integer_value(u));
    if (pw)
        snprintf(buf, len, "%s (%lld)", pw->pw_name, (long long)json_integer_value(u));
    else
        snprintf(buf, len, "uid %lld", (long long)json_integer_value(u));
}

static void print_status_all(json_t *r)
{
    json_t *jobs = json_object_get(r, "jobs"), *ch = json_object_get(r, "children"), *o;
    size_t i;

    printf("cuzkd instance %s, pid %lld%s%s\n", client_jstr(r, "instance"), client_jint(r, "pid"),
           json_is_true(json_object_get(r, "draining")) ? ", draining" : "",
           json_is_true(json_object_get(r, "stopping")) ? ", shutting down" : "");
    if ((o = json_object_get(r, "fleet")))
        printf("fleet queue: database %s, %lld errors, %lld reconnects\n",
               json_is_true(json_object_get(o, "db_reachable")) ? "reachable" : "UNREACHABLE",
               client_jint(o, "db_errors"), client_jint(o, "reconnects"));
    printf("stages:\n");
    json_array_foreach (ch, i, o) {
        printf("  %-9s %lld  pid %-7lld generation %lld  restarts %lld  cpus %s", client_jstr(o, "stage"),
               client_jint(o, "index"), client_jint(o, "pid"), client_jint(o, "generation"),
               client_jint(o, "restarts"), client_jstr(o, "cpus"));
        if (json_object_get(o, "restart_in_ms"))
            printf("  (down; restart in %lld ms)", client_jint(o, "restart_in_ms"));
        putchar('\n');
    }
    printf("jobs: %zu\n", json_array_size(jobs));
    json_array_foreach (jobs, i, o) {
        char who[64];

        owner_name(o, who, sizeof(who));
        printf("  job %-6lld %-8s %lld/%lld done, %lld failed  owner %s%s%s%s%s  %s%s\n",
               client_jint(o, "id"), client_jstr(o, "state"), client_jint(o, "done"),
               client_jint(o, "partitions"), client_jint(o, "failed"), who,
               json_object_get(o, "tenant") ? "  tenant " : "", client_jshow(o, "tenant"),
               json_object_get(o, "circuit") ? "  circuit " : "", client_jshow(o, "circuit"),
               client_jshow(o, "out_dir"),
               json_is_true(json_object_get(o, "resumed")) ? "  (resumed after a restart)" : "");
    }
    ch = json_object_get(json_object_get(r, "circuits"), "entries");
    json_array_foreach (ch, i, o)
        printf("%s  %-7s %s  applied in %lld/%lld stage(s)%s\n", i ? "" : "circuits:\n",
               client_jstr(o, "action"), client_jshow(o, "zkey"), client_jint(o, "applied"),
               client_jint(json_object_get(r, "circuits"), "stages"),
               client_jint(o, "failed") ? ", FAILED in some (see cuzkd's log)" : "");
}

/* A circuit's main input signals (from its generator): "  inputs: in[20], secret". */
static void print_inputs(json_t *in)
{
    json_t *e;
    size_t i;

    json_array_foreach (in, i, e) {
        json_int_t n = json_integer_value(json_object_get(e, "size"));

        printf(n > 1 ? "%s%s[%lld]" : "%s%s", i ? ", " : "  inputs: ", client_jshow(e, "name"), (long long)n);
    }
    if (json_array_size(in)) printf("\n");
}

/* `cuzk circuits` and `cuzk reload`: one line per declared circuit (its inputs and
 * its error on lines of their own). */
static void print_circuits(json_t *r)
{
    json_t *cs = json_object_get(r, "circuits"), *o, *ch = json_object_get(r, "changed");
    size_t i;

    json_array_foreach (ch, i, o) printf("%s %s\n", client_jshow(o, "name"), client_jstr(o, "change"));
    if (!json_array_size(cs)) {
        printf("no circuits declared (cuzkd.conf: [circuit NAME] sections)\n");
        return;
    }
    printf("%-20s %-9s %-9s %11s %7s  %-16s  %s\n", "NAME", "STATE", "CURVE", "CONSTRAINTS", "PUBLIC",
           "FINGERPRINT", "ZKEY");
    json_array_foreach (cs, i, o) {
        printf("%-20s %-9s %-9s %11lld %7lld  %-16.16s  %s\n", client_jshow(o, "name"),
               client_jstr(o, "state"), client_jstr(o, "curve"), client_jint(o, "constraints"),
               client_jint(o, "public"), client_jstr(o, "fingerprint"), client_jshow(o, "zkey"));
        if (json_object_get(o, "error")) printf("  %s\n", client_jshow(o, "error"));
        print_inputs(json_object_get(o, "inputs"));
    }
}

int client_simple(struct client *c, json_t *req, int kind)
{
    json_t *r;
    int rc;

    if ((rc = client_connect(c))) {
        json_decref(req);
        return rc;
    }
    r = client_request(c, req);
    if (!r) return CUZK_EXIT_NO_DAEMON;
    if (!client_is_ok(r))
        rc = client_print_error(c, r);
    else if (json_object_get(r, "job") && json_is_object(json_object_get(r, "job")))
        rc = client_finish_job_reply(c, r);
    else if (c->json)
        client_print_json(r);
    else if (kind == 's')
        print_status_all(r);
    else if (kind == 'c')
        printf("job %lld: %s\n", client_jint(r, "job"), client_jstr(r, "state"));
    else if (kind == 'd')
        printf("drained: no jobs running, not accepting new ones\n");
    else if (kind == 'x')
        printf("cuzkd is shutting down\n");
    else if (kind == 'r')
        printf("restarting\n");
    else if (kind == 'C')
        print_circuits(r);
    json_decref(r);
    return rc;
}
