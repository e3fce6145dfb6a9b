/* client_trace.c — `cuzk trace` (one job's timeline, trace_export.h) and `cuzk proof`
 * (a stored job's proof files, proof_cmd.h) (client_conn.h). */
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
#include "tools/cupti_trace.h"
#include "tools/proof_cmd.h"
#include "tools/trace_export.h"
#include "synth/wgen.h"
#include "zk/zkey.h"

/* ---- cuzk trace: one job's timeline (trace_export.h) -------------------------------- */

/* The CUPTI recorder's file into tr (cupti_trace.h); 0, or an exit code. */
static int trace_add_cupti(json_t *tr, const char *path)
{
    struct cupti_file cf;
    char err[512];
    size_t kept, outside;
    FILE *f = fopen(path, "r");
    int rc;

    if (!f) {
        fprintf(stderr, "cuzk trace: %s: %s\n", path, strerror(errno));
        return CUZK_EXIT_IO;
    }
    rc = cupti_file_read(f, path, &cf, err, sizeof(err));
    fclose(f);
    if (rc) {
        fprintf(stderr, "cuzk trace: %s\n", err);
        return CUZK_EXIT_FORMAT;
    }
    if (cf.truncated) fprintf(stderr, "cuzk trace: %s: its last line is cut short, left out\n", path);
    rc = cupti_trace_merge(tr, &cf, &kept, &outside);
    cupti_file_free(&cf);
    if (rc) {
        fprintf(stderr, "cuzk trace: %s: could not add the device records (no submit_ns in the trace?)\n",
                path);
        return CUZK_EXIT_FORMAT;
    }
    if (!kept)
        fprintf(stderr, "cuzk trace: %s: none of its %zu records falls in the job's span\n", path, outside);
    return 0;
}

int client_trace(struct client *c, int argc, char **argv)
{
    const char *out = NULL, *cupti = NULL, *in = NULL;
    json_int_t job = -1;
    json_t *r, *tr;
    json_error_t jerr;
    unsigned running = 0;
    int rc;

    for (int k = 1; k < argc; k++) {
        if (!strcmp(argv[k], "--job") && k + 1 < argc) {
            if (client_parse_job(argv[++k], &job)) return CUZK_EXIT_USAGE;
        } else if ((!strcmp(argv[k], "-o") || !strcmp(argv[k], "--output")) && k + 1 < argc)
            out = argv[++k];
        else if (!strcmp(argv[k], "--cupti") && k + 1 < argc)
            cupti = argv[++k];
        else if (!strcmp(argv[k], "--in") && k + 1 < argc)
            in = argv[++k];
        else if (argv[k][0] != '-' && job < 0 && !client_parse_job(argv[k], &job))
            ;
        else {
            fprintf(stderr, "cuzk trace: unexpected %s\n", argv[k]);
            return CUZK_EXIT_USAGE;
        }
    }
    if ((job < 0) == !in || !out || (in && !cupti)) {
        fprintf(stderr,
                "usage: cuzk trace --job JOB -o FILE.json (- for stdout) [--cupti RECORD]\n"
                "       cuzk trace --in TRACE.json --cupti RECORD -o FILE.json\n");
        return CUZK_EXIT_USAGE;
    }
    if (in) { /* a trace written before, the device's records added: no daemon needed */
        if (!(tr = json_load_file(in, 0, &jerr))) {
            fprintf(stderr, "cuzk trace: %s:%d: %s\n", in, jerr.line, jerr.text);
            return CUZK_EXIT_FORMAT;
        }
    } else {
        if ((rc = client_connect(c))) return rc;
        r = client_request(c, json_pack("{s:s,s:I}", "req", PROTO_REQ_STATUS, "job", job));
        if ((rc = client_reply_failed(c, r))) return rc;
        tr = trace_export(json_object_get(r, "job"), &running);
        json_decref(r);
        if (!tr) return CUZK_EXIT_REFUSED;
    }
    if (cupti && (rc = trace_add_cupti(tr, cupti))) {
        json_decref(tr);
        return rc;
    }
    if (!strcmp(out, "-"))
        rc = json_dumpf(tr, stdout, JSON_COMPACT | JSON_REAL_PRECISION(15)) || fputc('\n', stdout) == EOF;
    else
        rc = json_dump_file(tr, out, JSON_COMPACT | JSON_REAL_PRECISION(15));
    json_decref(tr);
    if (rc) {
        fprintf(stderr, "cuzk trace: writing %s: %s\n", out, strerror(errno));
        return 1;
    }
    if (running)
        fprintf(stderr,
                "cuzk trace: job %lld is still running: %u stage(s) in progress are "
                "not in the trace\n",
                (long long)job, running);
    return 0;
}

/* cuzk proof JOB K [--out DIR]: a stored proof (proof_cmd.h). */
int client_proof(struct client *c, int argc, char **argv)
{
    json_int_t job, k;
    json_t *r;
    int rc;

    if (argc < 3 || client_parse_job(argv[1], &job) || client_parse_job(argv[2], &k) ||
        (argc != 3 && (argc != 5 || strcmp(argv[3], "--out")))) {
        client_usage(stderr);
        return CUZK_EXIT_USAGE;
    }
    if ((rc = client_connect(c))) return rc;
    r = client_request(c, json_pack("{s:s,s:I,s:I}", "req", PROTO_REQ_PROOF, "job", job, "index", k));
    rc = !r                ? CUZK_EXIT_NO_DAEMON
        : !client_is_ok(r) ? client_print_error(c, r)
                           : proof_cmd_write(r, argc == 5 ? argv[4] : NULL);
    json_decref(r);
    return rc;
}
