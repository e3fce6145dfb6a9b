/* client.c — the `cuzk` client's daemon commands (client.h): the connection to cuzkd,
 * requests and replies (client_conn.h), and the dispatch of every command; each
 * command's own code is in client_prove.c, client_circuit.c, client_status.c and
 * client_trace.c. */
#include "tools/client.h"
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

void client_usage(FILE *f)
{
    fputs("usage: cuzk [--instance NAME] [--run-dir DIR] [--json] COMMAND [ARGS]\n"
          "commands (daemon):\n"
          "  prove --zkey Z --out DIR [--r1cs F] [--priority P] [--wait] W1.wtns [W2.wtns ...]\n"
          "                      submit one job, one partition per witness; proofs go to\n"
          "                      DIR/<name>.proof.json and DIR/<name>.public.json\n"
          "  prove --zkey Z --witness-gen G.wgen --out DIR [...] IN1.json [IN2.json ...]\n"
          "                      the same from input.json files: the synth stage computes\n"
          "                      each witness with G (cuzk build-witness); in1.json ->\n"
          "                      DIR/in1.proof.json\n"
          "  prove --circuit NAME --out DIR [--priority P] [--wait] W1.wtns|IN1.json ...\n"
          "  prove --circuit NAME --keep-in-store [...] W1.wtns|IN1.json ...\n"
          "                      no out dir: cuzkd keeps the proofs in its job store\n"
          "                      (--store-keep-days), fetched with `cuzk proof`\n"
          "  proof JOB K [--out DIR]  partition K's stored proof (from 0, in input order):\n"
          "                      DIR/JOB-K.proof.json and .public.json, or without --out\n"
          "                      {\"proof\",\"publicSignals\"} on stdout\n"
          "                      the same against a circuit the operator declared in\n"
          "                      cuzkd.conf ([circuit NAME]): cuzkd opens its zkey, r1cs\n"
          "                      and generator; .json inputs need its witness-gen\n"
          "  circuits            the declared circuits: state (declared, loading,\n"
          "                      resident, failed), curve, constraints, fingerprint\n"
          "  reload              read cuzkd.conf's circuits again (as SIGHUP): a changed\n"
          "                      zkey serves new jobs, running ones keep theirs\n"
          "  status [JOB]        all jobs and stages, or one job with its partitions\n"
          "  wait JOB [--timeout-ms N]   until the job is done or failed\n"
          "  cancel JOB          fail the job's partitions that have not started\n"
          "  restart STAGE [N]   restart a stage (synth, worker, finalizer), index N or all\n"
          "  drain               stop accepting jobs; returns when the running ones are done\n"
          "  shutdown            finish running jobs (bounded), stop the stages and cuzkd\n"
          "  metrics             the stats page in the Prometheus text format\n"
          "  trace --job JOB -o FILE.json   the job's partitions through synth, prove and\n"
          "                      finalize as Chrome trace-event JSON (open in Perfetto);\n"
          "                      --cupti RECORD adds the GPU's kernels and copies\n"
          "                      (libcuzk_cupti.so's file), --in TRACE.json to a trace\n"
          "                      written before (no daemon needed)\n"
          "  preload ZKEY [--no-wait] [--timeout-ms N]   load a circuit in every stage\n"
          "                      ahead of its first job (held until evicted); waits until\n"
          "                      every running stage has it (default 120000 ms)\n"
          "  evict ZKEY [--no-wait] [--timeout-ms N]     drop a circuit from every stage\n"
          "  prove|wait|status --queue postgresql://...   the same on a fleet's queue\n"
          "                      (no local cuzkd; paths must be on the shared file system;\n"
          "                      prove --store-proofs [--out DIR]: the proofs also, or with\n"
          "                      no --out only, in the queue's table, proved by a cuzkd\n"
          "                      --store-proofs)\n"
          "  prove --queue URL --circuit NAME [--tenant T] [--idempotency-key K]\n"
          "        [--fingerprint HEX] IN.json|W.wtns ...   a fleet job with no shared file\n"
          "                      system: the inputs' bytes go into the queue, any cuzkd\n"
          "                      --store-proofs with circuit NAME of the same fingerprint\n"
          "                      (the local cuzkd's, or HEX) proves it; fetch its proofs\n"
          "  fetch JOB --queue URL --out DIR   a fleet job's stored proofs into DIR (never\n"
          "                      replaces a file, follows no link; same bytes: no-op;\n"
          "                      a circuit job's as 0.proof.json, 1.proof.json, ...)\n"
          "commands (no daemon):\n"
          "  prove-local ZKEY WTNS PROOF.json PUBLIC.json   prove in this process\n"
          "  verify VKEY.json PUBLIC.json PROOF.json        verify a proof (as snarkjs)\n"
          "  build-witness [--prime P] [--r1cs R] CIRCUIT_cpp/ OUT.wgen   a witness generator\n"
          "                      from circom --c output (g++, nasm, libgmp-dev)\n"
          "  witness --witness-gen G.wgen INPUT.json OUT.wtns  compute a witness (as\n"
          "                      snarkjs wtns calculate)\n"
          "  fingerprint FILE...  the circuit fingerprint of zkeys, r1cs files, generators\n"
          "  test-setup CIRCUIT.r1cs OUT.zkey   INSECURE, tests only: a Groth16 key from random\n"
          "                      toxic waste, no ceremony (see `cuzk test-setup --help`)\n"
          "  token NAME [LIMITS]  a new bearer token for the HTTP API and its tokens file line\n"
          "  help                this text\n"
          "  --version           the version (debian/changelog's)\n"
          "  help exit-codes [--markdown]   every exit code of every program (docs/usage.md's table)\n"
          "options: --instance NAME (default: default), --run-dir DIR (default as cuzkd:\n"
          "  /run/cuzk as root, else $XDG_RUNTIME_DIR/cuzk, else /tmp/cuzk-UID), --json (print\n"
          "  the daemon's JSON reply instead of text)\n",
          f);
    cuzk_exit_help_titled(f, "exit codes (daemon commands):", CUZK_PROG_CLIENT, NULL);
    cuzk_exit_help_titled(
        f, "exit codes (commands without a daemon; each command's --help says which):", CUZK_PROG_TOOL, NULL);
}

/* Whoever controls the socket's directory controls what answers on it. Trusted: a real
 * directory (not a symlink) that neither its group nor others can write to, owned by
 * root or by us, or by another user (the daemon's, e.g. cuzk under /run) when its
 * parent is root's and writable by no one else, so only root could have put it there.
 * A /tmp/cuzk-UID made by another user fails: /tmp is writable by everyone. */
static int trusted_socket_dir(const char *dir)
{
    char parent[PROTO_PATH_MAX];
    struct stat st, ps;
    const char *why = NULL;
    int bad;

    snprintf(parent, sizeof(parent), "%s", dir);
    for (size_t n = strlen(parent); n > 1 && parent[n - 1] == '/'; n--) parent[n - 1] = '\0';
    char *slash = strrchr(parent, '/');
    if (slash == parent)
        parent[1] = '\0';
    else if (slash)
        *slash = '\0';
    else
        snprintf(parent, sizeof(parent), ".");
    if ((bad = os_dir_check(dir, 0022, 1, &st)) < 0) return 0; /* connect will say why */
    if (bad & OS_DIR_NOT_DIR)
        why = "it is not a directory (a symlink?)";
    else if (bad & OS_DIR_MODE)
        why = "its group or others can write to it";
    else if ((bad & OS_DIR_OWNER) &&
             (lstat(parent, &ps) || !S_ISDIR(ps.st_mode) || ps.st_uid != 0 || (ps.st_mode & 0022)))
        why = "it is owned by another user, in a directory that others can write to";
    if (!why) return 0;
    fprintf(stderr,
            "cuzk: refusing to talk to a daemon in %s: %s (owner uid %u); whoever "
            "controls it controls what answers on the socket (pass --run-dir)\n",
            dir, why, (unsigned)st.st_uid);
    return CUZK_EXIT_NO_DAEMON;
}

int client_connect(struct client *c)
{
    struct sockaddr_un a = { .sun_family = AF_UNIX };
    int n = snprintf(a.sun_path, sizeof(a.sun_path), "%s/%s.sock", c->run_dir, c->instance);

    if (n < 0 || (size_t)n >= sizeof(a.sun_path)) {
        fprintf(stderr, "cuzk: socket path %s/%s.sock is too long\n", c->run_dir, c->instance);
        return CUZK_EXIT_USAGE;
    }
    if ((n = trusted_socket_dir(c->run_dir))) return n;
    if (proto_connect(&c->cc, a.sun_path)) {
        fprintf(stderr,
                "cuzk: no cuzkd answers on %s (%s): is instance \"%s\" running? "
                "(start it with `cuzkd --instance %s`, or pass --run-dir)\n",
                a.sun_path, c->cc.err, c->instance, c->instance);
        return CUZK_EXIT_NO_DAEMON;
    }
    return 0;
}

/* Send one client_request (reference taken) with descriptors fds[0..nfds) (ctl_client.h),
 * read one reply line. NULL on a broken connection, said on stderr. */
json_t *client_request_fds(struct client *c, json_t *req, const int *fds, size_t nfds)
{
    json_t *r = proto_request(&c->cc, req, fds, nfds);

    if (!r) fprintf(stderr, "cuzk: %s\n", c->cc.err);
    return r;
}

json_t *client_request(struct client *c, json_t *req)
{
    return client_request_fds(c, req, NULL, 0);
}

void client_fdset_close(struct fdset *f)
{
    for (size_t i = 0; i < f->n; i++) close(f->fd[i]);
    free(f->fd);
    memset(f, 0, sizeof(*f));
}

/* Open arg for the daemon (dir: an out directory; else a regular input file) and add
 * its descriptor: F = {"fd":I,"path":ABS} (control.h) in *ref. The daemon never opens
 * the path: it reads what we opened, with our rights. -1 with a message on failure. */
int client_add_file(struct fdset *f, const char *what, const char *arg, int dir, json_t **ref)
{
    char path[PATH_MAX];
    struct stat st;
    int fd;

    *ref = NULL;
    if (!realpath(arg, path)) {
        fprintf(stderr, "cuzk: %s %s: %s\n", what, arg, strerror(errno));
        return -1;
    }
    /* O_NONBLOCK: a FIFO named here must not hang us in open(); checked below. */
    fd = dir ? open(path, O_PATH | O_DIRECTORY | O_CLOEXEC)
             : open(path, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
    if (fd < 0) {
        fprintf(stderr, "cuzk: %s %s: %s\n", what, arg, strerror(errno));
        return -1;
    }
    if (!dir && (fstat(fd, &st) || !S_ISREG(st.st_mode))) {
        fprintf(stderr, "cuzk: %s %s: not a regular file\n", what, arg);
        close(fd);
        return -1;
    }
    if (f->n == f->cap) {
        size_t cap = f->cap ? 2 * f->cap : 8;
        int *b = realloc(f->fd, cap * sizeof(*b));

        if (!b) {
            close(fd);
            return -1;
        }
        f->fd = b;
        f->cap = cap;
    }
    *ref = json_pack("{s:i,s:s}", "fd", (int)f->n, "path", path);
    f->fd[f->n++] = fd;
    return *ref ? 0 : -1;
}

int client_is_ok(json_t *r)
{
    return json_is_true(json_object_get(r, "ok"));
}

/* Print an error reply; returns its exit code. */
int client_print_error(const struct client *c, json_t *r)
{
    const char *code = json_string_value(json_object_get(r, "error"));

    if (c->json) {
        char *s = json_dumps(r, JSON_COMPACT | JSON_ENSURE_ASCII);

        puts(s ? s : "{}");
        free(s);
    } else {
        fprintf(stderr, "cuzk: %s (%s)\n",
                json_string_value(json_object_get(r, "message")) ? client_jshow(r, "message") : "error",
                code ? code : "?");
    }
    if (code && !strcmp(code, PROTO_E_QUOTA))
        return CUZK_EXIT_QUOTA; /* distinct: a script backs off and retries */
    return code && !strcmp(code, PROTO_E_TIMEOUT) ? CUZK_EXIT_TIMEOUT : CUZK_EXIT_REFUSED;
}

/* 0 when r is an ok reply; otherwise the exit code: no reply (no daemon), or an error
 * reply, printed and freed. */
int client_reply_failed(const struct client *c, json_t *r)
{
    int rc;

    if (!r) return CUZK_EXIT_NO_DAEMON;
    if (client_is_ok(r)) return 0;
    rc = client_print_error(c, r);
    json_decref(r);
    return rc;
}

void client_print_json(json_t *r)
{
    char *s = json_dumps(r, JSON_COMPACT | JSON_ENSURE_ASCII);

    puts(s ? s : "{}");
    free(s);
}

const char *client_jstr(json_t *o, const char *k)
{
    const char *s = json_string_value(json_object_get(o, k));

    return s ? s : "";
}

/* jstr for printing: names, paths and reasons are other users' words (display.h).
 * Four buffers in turn, so one printf may show up to four. */
const char *client_jshow(json_t *o, const char *k)
{
    static char buf[4][2048];
    static unsigned next;

    return display_escape(buf[next++ % 4], sizeof buf[0], client_jstr(o, k));
}

long long client_jint(json_t *o, const char *k)
{
    return (long long)json_integer_value(json_object_get(o, k));
}

void client_print_job(json_t *j)
{
    json_t *parts = json_object_get(j, "parts"), *p;
    size_t i;

    printf("job %lld: %s, %lld/%lld done, %lld failed%s%s%s%s%s%s%s\n", client_jint(j, "id"),
           client_jstr(j, "state"), client_jint(j, "done"), client_jint(j, "partitions"),
           client_jint(j, "failed"), json_object_get(j, "circuit") ? "  circuit " : "",
           client_jshow(j, "circuit"), json_object_get(j, "tenant") ? "  tenant " : "",
           client_jshow(j, "tenant"), json_object_get(j, "results") ? "  (proofs in the job store)" : "",
           json_object_get(j, "reason") ? ": " : "", client_jshow(j, "reason"));
    json_array_foreach (parts, i, p) {
        printf("  %-24s %-8s", client_jshow(p, "name"), client_jstr(p, "state"));
        if (json_object_get(p, "proof")) printf(" %s", client_jshow(p, "proof"));
        if (json_object_get(p, "reason")) printf(" %s", client_jshow(p, "reason"));
        putchar('\n');
    }
}

/* Reply to a job request: print, and the exit code the job's state gives. */
int client_finish_job_reply(const struct client *c, json_t *r)
{
    json_t *j = json_object_get(r, "job");
    const char *st = client_jstr(j, "state");

    if (c->json)
        client_print_json(r);
    else
        client_print_job(j);
    return !strcmp(st, "failed") ? CUZK_EXIT_JOB_FAILED : CUZK_EXIT_OK;
}

int client_parse_job(const char *s, json_int_t *out)
{
    long long v;

    if (client_parse_number(s, 0, LLONG_MAX, &v)) return -1;
    *out = v;
    return 0;
}

int client_parse_number(const char *s, long long min, long long max, long long *out)
{
    char *end;
    long long v;

    errno = 0;
    v = strtoll(s, &end, 10);
    if (errno || *end || !*s || v < min || v > max) return -1;
    *out = v;
    return 0;
}

int client_option_number(const char *cmd, const char *opt, const char *s, long long min, long long max,
                         long long *out)
{
    if (!client_parse_number(s, min, max, out)) return 0;
    fprintf(stderr, "cuzk %s: %s needs a whole number from %lld to %lld, not \"%s\"\n", cmd, opt, min, max,
            s);
    return CUZK_EXIT_USAGE;
}

/* fleet_local_circuits (fleet_client.h): this instance's `circuits` reply. */
static json_t *local_circuits(void *arg, int *rc)
{
    struct client *c = arg;
    json_t *r;

    if ((*rc = client_connect(c))) return NULL;
    if (!(r = client_request(c, json_pack("{s:s}", "req", PROTO_REQ_CIRCUITS)))) {
        *rc = CUZK_EXIT_NO_DAEMON;
        return NULL;
    }
    if (!client_is_ok(r)) {
        *rc = client_print_error(c, r);
        json_decref(r);
        return NULL;
    }
    return r;
}

int client_main(int argc, char **argv)
{
    struct client c;
    const char *cmd;
    json_int_t job;
    int i = 1, rc;

    memset(&c, 0, sizeof(c));
    c.cc.fd = -1;
    snprintf(c.instance, sizeof(c.instance), "default");
    proto_default_run_dir(c.run_dir, sizeof(c.run_dir));
    for (; i < argc && !strncmp(argv[i], "--", 2); i++) {
        if (!strcmp(argv[i], "--instance") && i + 1 < argc)
            snprintf(c.instance, sizeof(c.instance), "%s", argv[++i]);
        else if (!strcmp(argv[i], "--run-dir") && i + 1 < argc)
            snprintf(c.run_dir, sizeof(c.run_dir), "%s", argv[++i]);
        else if (!strcmp(argv[i], "--json"))
            c.json = 1;
        else if (!strcmp(argv[i], "--help")) {
            client_usage(stdout);
            return 0;
        } else {
            fprintf(stderr, "cuzk: unknown option %s\n", argv[i]);
            client_usage(stderr);
            return CUZK_EXIT_USAGE;
        }
    }
    if (i >= argc) {
        client_usage(stderr);
        return CUZK_EXIT_USAGE;
    }
    cmd = argv[i];
    argc -= i;
    argv += i;
    /* --json may also follow the command */
    for (int k = 1; k < argc; k++)
        if (!strcmp(argv[k], "--json")) {
            c.json = 1;
            memmove(&argv[k], &argv[k + 1], (size_t)(argc - k) * sizeof(*argv));
            argc--;
            k--;
        }

    /* --queue URL: the fleet's database, not a local cuzkd (fleet_client.h) */
    if ((rc = fleet_client_main(argc, argv, c.json, local_circuits, &c)) >= 0) return rc;
    if (!strcmp(cmd, "metrics")) return metrics_cmd_main(c.instance, argc, argv);
    if (!strcmp(cmd, "prove"))
        rc = client_prove(&c, argc, argv);
    else if (!strcmp(cmd, "status")) {
        if (argc > 1 && client_parse_job(argv[1], &job)) goto usage;
        rc = client_simple(&c,
                           argc > 1 ? json_pack("{s:s,s:I}", "req", PROTO_REQ_STATUS, "job", job)
                                    : json_pack("{s:s}", "req", PROTO_REQ_STATUS),
                           's');
    } else if (!strcmp(cmd, "wait")) {
        json_t *req;

        if (argc < 2 || client_parse_job(argv[1], &job)) goto usage;
        req = json_pack("{s:s,s:I}", "req", PROTO_REQ_WAIT, "job", job);
        if (argc > 3 && !strcmp(argv[2], "--timeout-ms")) {
            long long ms;

            if ((rc = client_option_number("wait", "--timeout-ms", argv[3], 0, INT32_MAX, &ms))) {
                json_decref(req);
                return rc;
            }
            json_object_set_new(req, "timeout_ms", json_integer(ms));
        }
        rc = client_simple(&c, req, 'w');
    } else if (!strcmp(cmd, "cancel")) {
        if (argc < 2 || client_parse_job(argv[1], &job)) goto usage;
        rc = client_simple(&c, json_pack("{s:s,s:I}", "req", PROTO_REQ_CANCEL, "job", job), 'c');
    } else if (!strcmp(cmd, "restart")) {
        json_t *req;

        if (argc < 2) goto usage;
        req = json_pack("{s:s,s:s}", "req", PROTO_REQ_RESTART, "stage", argv[1]);
        if (argc > 2) {
            if (client_parse_job(argv[2], &job)) goto usage;
            json_object_set_new(req, "index", json_integer(job));
        }
        rc = client_simple(&c, req, 'r');
    } else if (!strcmp(cmd, "drain"))
        rc = client_simple(&c, json_pack("{s:s}", "req", PROTO_REQ_DRAIN), 'd');
    else if (!strcmp(cmd, "shutdown"))
        rc = client_simple(&c, json_pack("{s:s}", "req", PROTO_REQ_SHUTDOWN), 'x');
    else if (!strcmp(cmd, "circuits") || !strcmp(cmd, "reload"))
        rc = client_simple(
            &c, json_pack("{s:s}", "req", cmd[0] == 'c' ? PROTO_REQ_CIRCUITS : PROTO_REQ_RELOAD), 'C');
    else if (!strcmp(cmd, "preload") || !strcmp(cmd, "evict"))
        rc = client_circuit(&c, argc, argv, cmd);
    else if (!strcmp(cmd, "trace"))
        rc = client_trace(&c, argc, argv);
    else if (!strcmp(cmd, "proof"))
        rc = client_proof(&c, argc, argv);
    else {
        fprintf(stderr, "cuzk: unknown command '%s'\n", cmd);
        goto usage;
    }
    proto_close(&c.cc);
    return rc;
usage:
    client_usage(stderr);
    return CUZK_EXIT_USAGE;
}
