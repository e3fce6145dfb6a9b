/* client.c — `cuzk prove|status|wait|cancel|restart|drain|shutdown|preload|evict`
 * (client.h). */
#include "tools/client.h"

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

struct client {
    char instance[SEG_INSTANCE_MAX + 1];
    char run_dir[CONFIG_PATH_MAX];
    int json;
    struct ctl_conn cc; /* the connection to cuzkd (ctl_client.h) */
};

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
          "                      finalize as Chrome trace-event JSON (open in Perfetto)\n"
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
    char parent[CONFIG_PATH_MAX];
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

static int connect_daemon(struct client *c)
{
    struct sockaddr_un a = { .sun_family = AF_UNIX };
    int n = snprintf(a.sun_path, sizeof(a.sun_path), "%s/%s.sock", c->run_dir, c->instance);

    if (n < 0 || (size_t)n >= sizeof(a.sun_path)) {
        fprintf(stderr, "cuzk: socket path %s/%s.sock is too long\n", c->run_dir, c->instance);
        return CUZK_EXIT_USAGE;
    }
    if ((n = trusted_socket_dir(c->run_dir))) return n;
    if (ctl_connect(&c->cc, a.sun_path)) {
        fprintf(stderr,
                "cuzk: no cuzkd answers on %s (%s): is instance \"%s\" running? "
                "(start it with `cuzkd --instance %s`, or pass --run-dir)\n",
                a.sun_path, c->cc.err, c->instance, c->instance);
        return CUZK_EXIT_NO_DAEMON;
    }
    return 0;
}

/* Send one request (reference taken) with descriptors fds[0..nfds) (ctl_client.h),
 * read one reply line. NULL on a broken connection, said on stderr. */
static json_t *request_fds(struct client *c, json_t *req, const int *fds, size_t nfds)
{
    json_t *r = ctl_request(&c->cc, req, fds, nfds);

    if (!r) fprintf(stderr, "cuzk: %s\n", c->cc.err);
    return r;
}

static json_t *request(struct client *c, json_t *req)
{
    return request_fds(c, req, NULL, 0);
}

/* The descriptors a request passes and the file references naming them. */
struct fdset {
    int *fd;
    size_t n, cap;
};

static void fdset_close(struct fdset *f)
{
    for (size_t i = 0; i < f->n; i++) close(f->fd[i]);
    free(f->fd);
    memset(f, 0, sizeof(*f));
}

/* Open arg for the daemon (dir: an out directory; else a regular input file) and add
 * its descriptor: F = {"fd":I,"path":ABS} (control.h) in *ref. The daemon never opens
 * the path: it reads what we opened, with our rights. -1 with a message on failure. */
static int add_file(struct fdset *f, const char *what, const char *arg, int dir, json_t **ref)
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

static int is_ok(json_t *r)
{
    return json_is_true(json_object_get(r, "ok"));
}

/* Print an error reply; returns its exit code. */
static const char *jshow(json_t *o, const char *k);

static int print_error(const struct client *c, json_t *r)
{
    const char *code = json_string_value(json_object_get(r, "error"));

    if (c->json) {
        char *s = json_dumps(r, JSON_COMPACT | JSON_ENSURE_ASCII);

        puts(s ? s : "{}");
        free(s);
    } else {
        fprintf(stderr, "cuzk: %s (%s)\n",
                json_string_value(json_object_get(r, "message")) ? jshow(r, "message") : "error",
                code ? code : "?");
    }
    if (code && !strcmp(code, CONTROL_E_QUOTA))
        return CUZK_EXIT_QUOTA; /* distinct: a script backs off and retries */
    return code && !strcmp(code, CONTROL_E_TIMEOUT) ? CUZK_EXIT_TIMEOUT : CUZK_EXIT_REFUSED;
}

/* 0 when r is an ok reply; otherwise the exit code: no reply (no daemon), or an error
 * reply, printed and freed. */
static int reply_failed(const struct client *c, json_t *r)
{
    int rc;

    if (!r) return CUZK_EXIT_NO_DAEMON;
    if (is_ok(r)) return 0;
    rc = print_error(c, r);
    json_decref(r);
    return rc;
}

static void print_json(json_t *r)
{
    char *s = json_dumps(r, JSON_COMPACT | JSON_ENSURE_ASCII);

    puts(s ? s : "{}");
    free(s);
}

static const char *jstr(json_t *o, const char *k)
{
    const char *s = json_string_value(json_object_get(o, k));

    return s ? s : "";
}

/* jstr for printing: names, paths and reasons are other users' words (display.h).
 * Four buffers in turn, so one printf may show up to four. */
static const char *jshow(json_t *o, const char *k)
{
    static char buf[4][2048];
    static unsigned next;

    return display_escape(buf[next++ % 4], sizeof buf[0], jstr(o, k));
}

static long long jint(json_t *o, const char *k)
{
    return (long long)json_integer_value(json_object_get(o, k));
}

static void print_job(json_t *j)
{
    json_t *parts = json_object_get(j, "parts"), *p;
    size_t i;

    printf("job %lld: %s, %lld/%lld done, %lld failed%s%s%s%s%s%s%s\n", jint(j, "id"), jstr(j, "state"),
           jint(j, "done"), jint(j, "partitions"), jint(j, "failed"),
           json_object_get(j, "circuit") ? "  circuit " : "", jshow(j, "circuit"),
           json_object_get(j, "tenant") ? "  tenant " : "", jshow(j, "tenant"),
           json_object_get(j, "results") ? "  (proofs in the job store)" : "",
           json_object_get(j, "reason") ? ": " : "", jshow(j, "reason"));
    json_array_foreach (parts, i, p) {
        printf("  %-24s %-8s", jshow(p, "name"), jstr(p, "state"));
        if (json_object_get(p, "proof")) printf(" %s", jshow(p, "proof"));
        if (json_object_get(p, "reason")) printf(" %s", jshow(p, "reason"));
        putchar('\n');
    }
}

/* Reply to a job request: print, and the exit code the job's state gives. */
static int finish_job_reply(const struct client *c, json_t *r)
{
    json_t *j = json_object_get(r, "job");
    const char *st = jstr(j, "state");

    if (c->json)
        print_json(r);
    else
        print_job(j);
    return !strcmp(st, "failed") ? CUZK_EXIT_JOB_FAILED : CUZK_EXIT_OK;
}

static int parse_job(const char *s, json_int_t *out)
{
    char *end;
    long long v;

    errno = 0;
    v = strtoll(s, &end, 10);
    if (errno || *end || v < 0 || !*s) return -1;
    *out = v;
    return 0;
}

static int cmd_prove(struct client *c, int argc, char **argv)
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
        else if (!strcmp(a, "--priority") && i + 1 < argc)
            prio = atoll(argv[++i]);
        else if (!strcmp(a, "--wait"))
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
        if (control_wtns_name(argv[1 + i], names[i], PIPE_NAME_LEN)) {
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
        else if (add_file(&fs, "zkey", zkey_arg, 0, &ref))
            goto bad;
        else
            json_object_set_new(req, "zkey", ref);
        if (keep)
            json_object_set_new(req, "results", json_string("store"));
        else if (add_file(&fs, "out", out, 1, &ref))
            goto bad;
        else
            json_object_set_new(req, "out_dir", ref);
        if (r1cs) {
            if (add_file(&fs, "r1cs", r1cs, 0, &ref)) goto bad;
            json_object_set_new(req, "r1cs", ref);
        }
        if (gen) {
            if (add_file(&fs, "witness generator", gen, 0, &ref)) goto bad;
            json_object_set_new(req, "witness_gen", ref);
        }
        w = json_array();
        for (int i = 0; i < nw; i++) {
            char nm[PIPE_NAME_LEN];

            if (add_file(&fs, inputs ? "input" : "witness", argv[1 + i], 0, &ref)) {
                json_decref(w);
                goto bad;
            }
            /* The output name from the name we were given (not the resolved one). */
            if (!control_wtns_name(argv[1 + i], nm, sizeof(nm)))
                json_object_set_new(ref, "name", json_string(nm));
            json_array_append_new(w, ref);
        }
    }
    json_object_set_new(req, inputs ? "inputs" : "witnesses", w);
    json_object_set_new(req, "priority", json_integer(prio));
    json_object_set_new(req, "fds", json_integer((json_int_t)fs.n));
    json_object_set_new(req, "req", json_string(CONTROL_REQ_SUBMIT));
    if ((rc = connect_daemon(c))) {
        json_decref(req);
        fdset_close(&fs);
        return rc;
    }
    r = request_fds(c, req, fs.fd, fs.n);
    fdset_close(&fs); /* cuzkd has its own now (or refused) */
    if ((rc = reply_failed(c, r))) return rc;
    {
        json_int_t id = json_integer_value(json_object_get(r, "job"));

        if (!wait || c->json)
            c->json ? print_json(r)
                    : (void)printf("job %lld submitted: %lld partition(s)\n", (long long)id,
                                   jint(r, "partitions"));
        json_decref(r);
        if (!wait) return CUZK_EXIT_OK;
        r = request(c, json_pack("{s:s,s:I}", "req", CONTROL_REQ_WAIT, "job", id));
    }
    if (!r) return CUZK_EXIT_NO_DAEMON;
    rc = is_ok(r) ? finish_job_reply(c, r) : print_error(c, r);
    json_decref(r);
    return rc;
bad:
    json_decref(req);
    fdset_close(&fs);
    return CUZK_EXIT_USAGE;
}

/* The entry of status's circuits table for path when it is request seq's or a later
 * one's, else NULL. *superseded: the entry is gone or a later request's. */
static json_t *circuit_entry(json_t *st, const char *path, json_int_t seq, int *superseded)
{
    json_t *e, *ents = json_object_get(json_object_get(st, "circuits"), "entries");
    size_t i;

    *superseded = 1;
    json_array_foreach (ents, i, e)
        if (!strcmp(jstr(e, "zkey"), path)) {
            *superseded = jint(e, "seq") != seq;
            return jint(e, "seq") >= seq ? e : NULL;
        }
    return NULL;
}

/* cuzk preload|evict ZKEY [--no-wait] [--timeout-ms N] */
static int cmd_circuit(struct client *c, int argc, char **argv, const char *what)
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
        else if (!strcmp(argv[i], "--timeout-ms") && i + 1 < argc)
            timeout_ms = atoll(argv[++i]);
        else if (argv[i][0] != '-' && !arg)
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

        if (add_file(&fs, "zkey", path, 0, &ref)) {
            fdset_close(&fs);
            return CUZK_EXIT_USAGE;
        }
        if ((rc = connect_daemon(c))) {
            json_decref(ref);
            fdset_close(&fs);
            return rc;
        }
        r = request_fds(c, json_pack("{s:s,s:i,s:o}", "req", what, "fds", 1, "zkey", ref), fs.fd, fs.n);
        fdset_close(&fs);
    } else {
        if ((rc = connect_daemon(c))) return rc;
        r = request(c, json_pack("{s:s,s:s}", "req", what, "zkey", path));
    }
    if ((rc = reply_failed(c, r))) return rc;
    seq = json_integer_value(json_object_get(r, "seq"));
    snprintf(path, sizeof(path), "%s", jstr(r, "zkey"));
    /* Wait until every running stage has applied it (status, every 100 ms). */
    for (long long t = 0; wait; t += 100) {
        json_decref(st);
        st = request(c, json_pack("{s:s}", "req", CONTROL_REQ_STATUS));
        if (!st || !is_ok(st)) {
            rc = st ? print_error(c, st) : CUZK_EXIT_NO_DAEMON;
            json_decref(st);
            json_decref(r);
            return rc;
        }
        e = circuit_entry(st, path, seq, &sup);
        if (sup || (e && jint(e, "applied") >= jint(json_object_get(st, "circuits"), "stages"))) break;
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
    rc = e && !sup && jint(e, "failed") ? CUZK_EXIT_REFUSED : CUZK_EXIT_OK;
    if (c->json)
        print_json(r);
    else if (rc)
        fprintf(stderr, "cuzk %s: %s failed to load in %lld of %lld stage(s): see cuzkd's log\n", what, path,
                jint(e, "failed"), jint(e, "applied"));
    else if (!wait)
        printf("%s of %s requested\n", what, path);
    else
        printf("%s: %s in %lld stage(s)\n", !strcmp(what, "preload") ? "preloaded" : "evicted", path,
               sup ? 0 : jint(e, "applied"));
    json_decref(st);
    json_decref(r);
    return rc;
}

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

    printf("cuzkd instance %s, pid %lld%s%s\n", jstr(r, "instance"), jint(r, "pid"),
           json_is_true(json_object_get(r, "draining")) ? ", draining" : "",
           json_is_true(json_object_get(r, "stopping")) ? ", shutting down" : "");
    if ((o = json_object_get(r, "fleet")))
        printf("fleet queue: database %s, %lld errors, %lld reconnects\n",
               json_is_true(json_object_get(o, "db_reachable")) ? "reachable" : "UNREACHABLE",
               jint(o, "db_errors"), jint(o, "reconnects"));
    printf("stages:\n");
    json_array_foreach (ch, i, o) {
        printf("  %-9s %lld  pid %-7lld generation %lld  restarts %lld  cpus %s", jstr(o, "stage"),
               jint(o, "index"), jint(o, "pid"), jint(o, "generation"), jint(o, "restarts"), jstr(o, "cpus"));
        if (json_object_get(o, "restart_in_ms"))
            printf("  (down; restart in %lld ms)", jint(o, "restart_in_ms"));
        putchar('\n');
    }
    printf("jobs: %zu\n", json_array_size(jobs));
    json_array_foreach (jobs, i, o) {
        char who[64];

        owner_name(o, who, sizeof(who));
        printf("  job %-6lld %-8s %lld/%lld done, %lld failed  owner %s%s%s%s%s  %s%s\n", jint(o, "id"),
               jstr(o, "state"), jint(o, "done"), jint(o, "partitions"), jint(o, "failed"), who,
               json_object_get(o, "tenant") ? "  tenant " : "", jshow(o, "tenant"),
               json_object_get(o, "circuit") ? "  circuit " : "", jshow(o, "circuit"), jshow(o, "out_dir"),
               json_is_true(json_object_get(o, "resumed")) ? "  (resumed after a restart)" : "");
    }
    ch = json_object_get(json_object_get(r, "circuits"), "entries");
    json_array_foreach (ch, i, o)
        printf("%s  %-7s %s  applied in %lld/%lld stage(s)%s\n", i ? "" : "circuits:\n", jstr(o, "action"),
               jshow(o, "zkey"), jint(o, "applied"), jint(json_object_get(r, "circuits"), "stages"),
               jint(o, "failed") ? ", FAILED in some (see cuzkd's log)" : "");
}

/* A circuit's main input signals (from its generator): "  inputs: in[20], secret". */
static void print_inputs(json_t *in)
{
    json_t *e;
    size_t i;

    json_array_foreach (in, i, e) {
        json_int_t n = json_integer_value(json_object_get(e, "size"));

        printf(n > 1 ? "%s%s[%lld]" : "%s%s", i ? ", " : "  inputs: ", jshow(e, "name"), (long long)n);
    }
    if (json_array_size(in)) printf("\n");
}

/* `cuzk circuits` and `cuzk reload`: one line per declared circuit (its inputs and
 * its error on lines of their own). */
static void print_circuits(json_t *r)
{
    json_t *cs = json_object_get(r, "circuits"), *o, *ch = json_object_get(r, "changed");
    size_t i;

    json_array_foreach (ch, i, o) printf("%s %s\n", jshow(o, "name"), jstr(o, "change"));
    if (!json_array_size(cs)) {
        printf("no circuits declared (cuzkd.conf: [circuit NAME] sections)\n");
        return;
    }
    printf("%-20s %-9s %-9s %11s %7s  %-16s  %s\n", "NAME", "STATE", "CURVE", "CONSTRAINTS", "PUBLIC",
           "FINGERPRINT", "ZKEY");
    json_array_foreach (cs, i, o) {
        printf("%-20s %-9s %-9s %11lld %7lld  %-16.16s  %s\n", jshow(o, "name"), jstr(o, "state"),
               jstr(o, "curve"), jint(o, "constraints"), jint(o, "public"), jstr(o, "fingerprint"),
               jshow(o, "zkey"));
        if (json_object_get(o, "error")) printf("  %s\n", jshow(o, "error"));
        print_inputs(json_object_get(o, "inputs"));
    }
}

static int simple(struct client *c, json_t *req, int kind)
{
    json_t *r;
    int rc;

    if ((rc = connect_daemon(c))) {
        json_decref(req);
        return rc;
    }
    r = request(c, req);
    if (!r) return CUZK_EXIT_NO_DAEMON;
    if (!is_ok(r))
        rc = print_error(c, r);
    else if (json_object_get(r, "job") && json_is_object(json_object_get(r, "job")))
        rc = finish_job_reply(c, r);
    else if (c->json)
        print_json(r);
    else if (kind == 's')
        print_status_all(r);
    else if (kind == 'c')
        printf("job %lld: %s\n", jint(r, "job"), jstr(r, "state"));
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

/* ---- cuzk trace: one job's timeline (trace_export.h) -------------------------------- */

static int cmd_trace(struct client *c, int argc, char **argv)
{
    const char *out = NULL;
    json_int_t job = -1;
    json_t *r, *tr;
    unsigned running = 0;
    int rc;

    for (int k = 1; k < argc; k++) {
        if (!strcmp(argv[k], "--job") && k + 1 < argc) {
            if (parse_job(argv[++k], &job)) return CUZK_EXIT_USAGE;
        } else if ((!strcmp(argv[k], "-o") || !strcmp(argv[k], "--output")) && k + 1 < argc)
            out = argv[++k];
        else if (argv[k][0] != '-' && job < 0 && !parse_job(argv[k], &job))
            ;
        else {
            fprintf(stderr, "cuzk trace: unexpected %s\n", argv[k]);
            return CUZK_EXIT_USAGE;
        }
    }
    if (job < 0 || !out) {
        fprintf(stderr, "usage: cuzk trace --job JOB -o FILE.json (- for stdout)\n");
        return CUZK_EXIT_USAGE;
    }
    if ((rc = connect_daemon(c))) return rc;
    r = request(c, json_pack("{s:s,s:I}", "req", CONTROL_REQ_STATUS, "job", job));
    if ((rc = reply_failed(c, r))) return rc;
    tr = trace_export(json_object_get(r, "job"), &running);
    json_decref(r);
    if (!tr) return CUZK_EXIT_REFUSED;
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
static int cmd_proof(struct client *c, int argc, char **argv)
{
    json_int_t job, k;
    json_t *r;
    int rc;

    if (argc < 3 || parse_job(argv[1], &job) || parse_job(argv[2], &k) ||
        (argc != 3 && (argc != 5 || strcmp(argv[3], "--out")))) {
        client_usage(stderr);
        return CUZK_EXIT_USAGE;
    }
    if ((rc = connect_daemon(c))) return rc;
    r = request(c, json_pack("{s:s,s:I,s:I}", "req", CONTROL_REQ_PROOF, "job", job, "index", k));
    rc = !r         ? CUZK_EXIT_NO_DAEMON
        : !is_ok(r) ? print_error(c, r)
                    : proof_cmd_write(r, argc == 5 ? argv[4] : NULL);
    json_decref(r);
    return rc;
}

/* fleet_local_circuits (fleet_client.h): this instance's `circuits` reply. */
static json_t *local_circuits(void *arg, int *rc)
{
    struct client *c = arg;
    json_t *r;

    if ((*rc = connect_daemon(c))) return NULL;
    if (!(r = request(c, json_pack("{s:s}", "req", CONTROL_REQ_CIRCUITS)))) {
        *rc = CUZK_EXIT_NO_DAEMON;
        return NULL;
    }
    if (!is_ok(r)) {
        *rc = print_error(c, r);
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
    config_default_run_dir(c.run_dir, sizeof(c.run_dir));
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
        rc = cmd_prove(&c, argc, argv);
    else if (!strcmp(cmd, "status")) {
        if (argc > 1 && parse_job(argv[1], &job)) goto usage;
        rc = simple(&c,
                    argc > 1 ? json_pack("{s:s,s:I}", "req", CONTROL_REQ_STATUS, "job", job)
                             : json_pack("{s:s}", "req", CONTROL_REQ_STATUS),
                    's');
    } else if (!strcmp(cmd, "wait")) {
        json_t *req;

        if (argc < 2 || parse_job(argv[1], &job)) goto usage;
        req = json_pack("{s:s,s:I}", "req", CONTROL_REQ_WAIT, "job", job);
        if (argc > 3 && !strcmp(argv[2], "--timeout-ms"))
            json_object_set_new(req, "timeout_ms", json_integer(atoll(argv[3])));
        rc = simple(&c, req, 'w');
    } else if (!strcmp(cmd, "cancel")) {
        if (argc < 2 || parse_job(argv[1], &job)) goto usage;
        rc = simple(&c, json_pack("{s:s,s:I}", "req", CONTROL_REQ_CANCEL, "job", job), 'c');
    } else if (!strcmp(cmd, "restart")) {
        json_t *req;

        if (argc < 2) goto usage;
        req = json_pack("{s:s,s:s}", "req", CONTROL_REQ_RESTART, "stage", argv[1]);
        if (argc > 2) {
            if (parse_job(argv[2], &job)) goto usage;
            json_object_set_new(req, "index", json_integer(job));
        }
        rc = simple(&c, req, 'r');
    } else if (!strcmp(cmd, "drain"))
        rc = simple(&c, json_pack("{s:s}", "req", CONTROL_REQ_DRAIN), 'd');
    else if (!strcmp(cmd, "shutdown"))
        rc = simple(&c, json_pack("{s:s}", "req", CONTROL_REQ_SHUTDOWN), 'x');
    else if (!strcmp(cmd, "circuits") || !strcmp(cmd, "reload"))
        rc = simple(&c, json_pack("{s:s}", "req", cmd[0] == 'c' ? CONTROL_REQ_CIRCUITS : CONTROL_REQ_RELOAD),
                    'C');
    else if (!strcmp(cmd, "preload") || !strcmp(cmd, "evict"))
        rc = cmd_circuit(&c, argc, argv, cmd);
    else if (!strcmp(cmd, "trace"))
        rc = cmd_trace(&c, argc, argv);
    else if (!strcmp(cmd, "proof"))
        rc = cmd_proof(&c, argc, argv);
    else {
        fprintf(stderr, "cuzk: unknown command '%s'\n", cmd);
        goto usage;
    }
    ctl_close(&c.cc);
    return rc;
usage:
    client_usage(stderr);
    return CUZK_EXIT_USAGE;
}
