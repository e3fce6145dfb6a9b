/* client_prove.c — `cuzk prove`: a job of one or more partitions, by files or by a
 * declared circuit's name, optionally waited for (client_conn.h). */
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

int client_prove(struct client *c, int argc, char **argv)
{
    const char *zkey_arg = NULL, *out = NULL, *r1cs = NULL, *gen = NULL, *circuit = NULL;
    long long prio = 0;
    int wait = 0, keep = 0, rc, nw = 0, inputs;
    char(*names)[PIPE_NAME_LEN];
    struct fdset fs = { 0 };
    json_t *req, *w, *r;

    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];

        if (!strcmp(a, "--zkey") && i + 1 < argc)
            zkey_arg = argv[++i];
        else if (!strcmp(a, "--out") && i + 1 < argc)
            out = argv[++i];
        else if (!strcmp(a, "--r1cs") && i + 1 < argc)
            r1cs = argv[++i];
        else if (!strcmp(a, "--witness-gen") && i + 1 < argc)
            gen = argv[++i];
        else if (!strcmp(a, "--circuit") && i + 1 < argc)
            circuit = argv[++i];
        else if (!strcmp(a, "--priority") && i + 1 < argc) {
            if ((rc = client_option_number("prove", "--priority", argv[++i], -PROTO_PRIORITY_MAX,
                                           PROTO_PRIORITY_MAX, &prio)))
                return rc;
        } else if (!strcmp(a, "--wait"))
            wait = 1;
        else if (!strcmp(a, "--keep-in-store"))
            keep = 1;
        else if (!strcmp(a, "--help")) {
            client_usage(stdout);
            return 0;
        } else if (a[0] == '-' && a[1] == '-') {
            fprintf(stderr, "cuzk prove: unknown option %s\n", a);
            return CUZK_EXIT_USAGE;
        } else
            argv[1 + nw++] = argv[i]; /* witnesses, compacted in place */
    }
    if (circuit && (zkey_arg || r1cs || gen)) {
        fprintf(stderr,
                "cuzk prove: --circuit NAME names the zkey, r1cs and generator the "
                "operator declared: no --zkey, --r1cs or --witness-gen with it\n");
        return CUZK_EXIT_USAGE;
    }
    /* By name, the inputs say what they are: all input.json or all .wtns. */
    inputs = gen != NULL;
    for (int i = 0; circuit && i < nw; i++) {
        size_t l = strlen(argv[1 + i]);
        int js = l > 5 && !strcmp(argv[1 + i] + l - 5, ".json");

        if (i && js != inputs) {
            fprintf(stderr,
                    "cuzk prove: a job takes input.json files or .wtns witnesses, "
                    "not both\n");
            return CUZK_EXIT_USAGE;
        }
        inputs = js;
    }
    if ((!zkey_arg && !circuit) || !out == !keep || !nw) {
        fprintf(stderr,
                "cuzk prove: needs --zkey Z (or --circuit NAME), --out DIR (or --keep-in-store) and at "
                "least one %s\n",
                inputs ? "input.json" : ".wtns");
        return CUZK_EXIT_USAGE;
    }
    /* Duplicate basenames would write the same proof file: refuse before submit. */
    names = calloc((size_t)nw, sizeof(*names));
    if (!names) return CUZK_EXIT_REFUSED;
    for (int i = 0; i < nw; i++) {
        if (proto_wtns_name(argv[1 + i], names[i], PIPE_NAME_LEN)) {
            fprintf(stderr, "cuzk prove: witness %s: bad file name\n", argv[1 + i]);
            free(names);
            return CUZK_EXIT_USAGE;
        }
        for (int j = 0; j < i; j++)
            if (!strcmp(names[i], names[j])) {
                fprintf(stderr,
                        "cuzk prove: witnesses %s and %s would both write "
                        "%s.proof.json: rename one\n",
                        argv[1 + j], argv[1 + i], names[i]);
                free(names);
                return CUZK_EXIT_USAGE;
            }
    }
    free(names);
    /* The synth checks the generator against the zkey (cuzkd never loads one); check
     * here too, in the user's own process, so a mix-up is refused at once. */
    if (gen) {
        char err[1024];
        wgen g;
        zkey z;
        int bad = wgen_open(&g, gen, err, sizeof(err));

        memset(&z, 0, sizeof(z));
        if (!bad) {
            bad = zkey_open(&z, zkey_arg, err, sizeof(err)) || wgen_check_zkey(&g, &z, err, sizeof(err));
            if (!bad && !wgen_has_fingerprint(&g))
                fprintf(stderr,
                        "cuzk prove: warning: witness generator %s was built without --r1cs: "
                        "only its curve and witness size are checked against zkey %s\n",
                        gen, zkey_arg);
            zkey_close(&z);
            wgen_close(&g);
        }
        if (bad) {
            fprintf(stderr, "cuzk prove: %s\n", err);
            return CUZK_EXIT_REFUSED;
        }
    }
    /* Files go as descriptors we opened (control.h); the paths, made absolute, only
     * name them in messages and status. */
    {
        json_t *ref;

        req = json_object();
        if (circuit)
            json_object_set_new(req, "circuit", json_string(circuit));
        else if (client_add_file(&fs, "zkey", zkey_arg, 0, &ref))
            goto bad;
        else
            json_object_set_new(req, "zkey", ref);
        if (keep)
            json_object_set_new(req, "results", json_string("store"));
        else if (client_add_file(&fs, "out", out, 1, &ref))
            goto bad;
        else
            json_object_set_new(req, "out_dir", ref);
        if (r1cs) {
            if (client_add_file(&fs, "r1cs", r1cs, 0, &ref)) goto bad;
            json_object_set_new(req, "r1cs", ref);
        }
        if (gen) {
            if (client_add_file(&fs, "witness generator", gen, 0, &ref)) goto bad;
            json_object_set_new(req, "witness_gen", ref);
        }
        w = json_array();
        for (int i = 0; i < nw; i++) {
            char nm[PIPE_NAME_LEN];

            if (client_add_file(&fs, inputs ? "input" : "witness", argv[1 + i], 0, &ref)) {
                json_decref(w);
                goto bad;
            }
            /* The output name from the name we were given (not the resolved one). */
            if (!proto_wtns_name(argv[1 + i], nm, sizeof(nm)))
                json_object_set_new(ref, "name", json_string(nm));
            json_array_append_new(w, ref);
        }
    }
    json_object_set_new(req, inputs ? "inputs" : "witnesses", w);
    json_object_set_new(req, "priority", json_integer(prio));
    json_object_set_new(req, "fds", json_integer((json_int_t)fs.n));
    json_object_set_new(req, "req", json_string(PROTO_REQ_SUBMIT));
    if ((rc = client_connect(c))) {
        json_decref(req);
        client_fdset_close(&fs);
        return rc;
    }
    r = client_request_fds(c, req, fs.fd, fs.n);
    client_fdset_close(&fs); /* cuzkd has its own now (or refused) */
    if ((rc = client_reply_failed(c, r))) return rc;
    {
        json_int_t id = json_integer_value(json_object_get(r, "job"));

        if (!wait || c->json)
            c->json ? client_print_json(r)
                    : (void)printf("job %lld submitted: %lld partition(s)\n", (long long)id,
                                   client_jint(r, "partitions"));
        json_decref(r);
        if (!wait) return CUZK_EXIT_OK;
        r = client_request(c, json_pack("{s:s,s:I}", "req", PROTO_REQ_WAIT, "job", id));
    }
    if (!r) return CUZK_EXIT_NO_DAEMON;
    rc = client_is_ok(r) ? client_finish_job_reply(c, r) : client_print_error(c, r);
    json_decref(r);
    return rc;
bad:
    json_decref(req);
    client_fdset_close(&fs);
    return CUZK_EXIT_USAGE;
}
