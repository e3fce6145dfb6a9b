/* fleet_client.c — the client's --queue commands (fleet_client.h). */
#include "tools/fleet_client.h"
#include "tools/client_conn.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <openssl/evp.h>

#include "tools/client.h"
#include "proto/protocol.h"
#include "base/error.h"
#include "zk/fingerprint.h"
#include "store/fleet_pg.h"
#include "base/os.h"
#include "shm/pipeline.h"

/* Daemons on other machines open these paths: absolute, on the shared file system
 * (docs/operations.md, "Fleet"); a relative one would name another file there. */
static int absolute(const char *what, const char *p, char *out)
{
    if (!realpath(p, out)) {
        fprintf(stderr, "cuzk prove: %s %s: %s\n", what, p, strerror(errno));
        return -1;
    }
    return 0;
}

/* The options of `prove --queue --circuit` (fleet_pg.h "Circuit jobs"). */
struct circuit_opts {
    const char *circuit, *fingerprint, *tenant, *idem_key;
    fleet_local_circuits local;
    void *arg;
};

/* A file's bytes (a regular file, 1 to FLEET_INPUT_MAX bytes), malloc'd into in. */
static int read_input(const char *path, struct fleet_input *in)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    struct stat st;
    size_t got = 0;
    char *b = NULL;

    if (fd < 0 || fstat(fd, &st) || !S_ISREG(st.st_mode) || !st.st_size ||
        (unsigned long long)st.st_size > FLEET_INPUT_MAX || !(b = malloc((size_t)st.st_size))) {
        fprintf(stderr, "cuzk prove: input %s: %s\n", path,
                fd < 0 || !b               ? strerror(errno)
                    : !S_ISREG(st.st_mode) ? "not a regular file"
                                           : "empty or over the 256 MiB a queued input may have");
        if (fd >= 0) close(fd);
        free(b);
        return -1;
    }
    while (got < (size_t)st.st_size) {
        ssize_t n = read(fd, b + got, (size_t)st.st_size - got);

        if (n <= 0) {
            fprintf(stderr, "cuzk prove: input %s: %s\n", path,
                    n ? strerror(errno) : "shorter than its size");
            close(fd);
            free(b);
            return -1;
        }
        got += (size_t)n;
    }
    close(fd);
    in->bytes = b;
    in->len = got;
    return 0;
}

/* The local cuzkd's fingerprint of circuit name (hex, into fp), as its `circuits`
 * reply gives it: the job is claimed only by daemons whose circuit has the same. */
static int local_fingerprint(const struct circuit_opts *o, char *fp, size_t len)
{
    int rc = CUZK_EXIT_NO_DAEMON;
    json_t *r = o->local ? o->local(o->arg, &rc) : NULL, *e;
    size_t i;

    if (!r) {
        fprintf(stderr,
                "cuzk prove --queue --circuit: the circuit's fingerprint comes from the local cuzkd "
                "(`cuzk circuits`): start one, or give --fingerprint HEX\n");
        return rc;
    }
    json_array_foreach (json_object_get(r, "circuits"), i, e) {
        const char *nm = json_string_value(json_object_get(e, "name")),
                   *f = json_string_value(json_object_get(e, "fingerprint"));

        if (nm && !strcmp(nm, o->circuit)) {
            if (f && f[0]) snprintf(fp, len, "%s", f);
            json_decref(r);
            if (fp[0]) return 0;
            fprintf(stderr,
                    "cuzk prove --queue: circuit %s has no fingerprint in the local cuzkd "
                    "(its zkey failed to open? `cuzk circuits` says why)\n",
                    o->circuit);
            return CUZK_EXIT_REFUSED;
        }
    }
    json_decref(r);
    fprintf(stderr, "cuzk prove --queue: the local cuzkd declares no circuit %s (`cuzk circuits`)\n",
            o->circuit);
    return CUZK_EXIT_REFUSED;
}

/* The idempotency key's body hash: the circuit, its fingerprint and every input
 * (kind, length, bytes) in order, SHA-256 in hex: the same request twice has the same. */
static int body_hash(const char *circuit, const char *fp, const struct fleet_input *in, int n, char hex[65])
{
    EVP_MD_CTX *md = EVP_MD_CTX_new();
    unsigned char h[32];
    unsigned hl = 0;
    int ok = md && EVP_DigestInit_ex(md, EVP_sha256(), NULL);

    ok = ok && EVP_DigestUpdate(md, circuit, strlen(circuit) + 1) && EVP_DigestUpdate(md, fp, strlen(fp) + 1);
    for (int i = 0; ok && i < n; i++) {
        unsigned char k[9] = { (unsigned char)in[i].wtns };

        for (int b = 0; b < 8; b++) k[1 + b] = (unsigned char)((uint64_t)in[i].len >> (8 * b));
        ok = EVP_DigestUpdate(md, k, sizeof(k)) && EVP_DigestUpdate(md, in[i].bytes, in[i].len);
    }
    ok = ok && EVP_DigestFinal_ex(md, h, &hl) && hl == 32;
    EVP_MD_CTX_free(md);
    for (unsigned i = 0; ok && i < 32; i++) snprintf(hex + 2 * i, 3, "%02x", h[i]);
    return ok ? 0 : -1;
}

/* `cuzk prove --queue URL --circuit NAME [--tenant T] [--idempotency-key K]
 * [--fingerprint HEX] IN.json|W.wtns ...`: a circuit job, its inputs' bytes in the
 * table (no shared file system: any daemon with the circuit proves it, the proofs
 * are stored, `cuzk fetch` writes them as 0.proof.json, 1.proof.json, ... in the
 * order of the inputs). */
static int prove_circuit(struct fleet *f, const struct circuit_opts *o, int nw, char **files, int json)
{
    struct fleet_input *in = calloc((size_t)nw + 1, sizeof(*in));
    struct fleet_circuit_job cj = { .circuit = o->circuit, .tenant = o->tenant, .idem_key = o->idem_key };
    char fp[256] = "", hex[65], err[512];
    uint64_t job = 0;
    int rc = CUZK_EXIT_USAGE, n = 0;

    if (!in) return CUZK_EXIT_INTERNAL;
    /* The shape of a circuit name (circuit_decl.h's rule, which cuzkd applies; it is
     * supervisor/'s, beyond this floor): 1 to 63 of [A-Za-z0-9._-], not starting
     * with '.', '-' or '_'. */
    if (!o->circuit[0] || strlen(o->circuit) > 63 || strchr("._-", o->circuit[0]) ||
        strspn(o->circuit, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-") !=
            strlen(o->circuit)) {
        fprintf(stderr, "cuzk prove --queue: --circuit %s is not a circuit name\n", o->circuit);
        goto done;
    }
    if (o->fingerprint) {
        size_t l = strlen(o->fingerprint);

        /* The whole fingerprint, lower case as cuzkd writes it: the claim compares the
         * text, so a prefix or upper case would match no daemon and wait for ever. */
        if (l != FP_HEX - 1 || strspn(o->fingerprint, "0123456789abcdefABCDEF") != l) {
            fprintf(stderr,
                    "cuzk prove --queue: --fingerprint takes the whole hex (%d digits) `cuzk circuits` "
                    "shows\n",
                    FP_HEX - 1);
            goto done;
        }
        for (size_t i = 0; i <= l; i++) fp[i] = (char)tolower((unsigned char)o->fingerprint[i]);
    } else if ((rc = local_fingerprint(o, fp, sizeof(fp))))
        goto done;
    for (; n < nw; n++) {
        size_t l = strlen(files[n]);

        /* By name, as `cuzk prove --circuit`: input.json files, or .wtns witnesses. */
        in[n].wtns = l > 5 && !strcmp(files[n] + l - 5, ".wtns");
        if (!in[n].wtns && !(l > 5 && !strcmp(files[n] + l - 5, ".json"))) {
            fprintf(stderr, "cuzk prove --queue: input %s: an input.json (.json) or a witness (.wtns)\n",
                    files[n]);
            rc = CUZK_EXIT_USAGE;
            goto done;
        }
        if (read_input(files[n], &in[n])) {
            rc = CUZK_EXIT_IO;
            goto done;
        }
    }
    cj.fingerprint = fp;
    if (o->idem_key) {
        if (body_hash(o->circuit, fp, in, n, hex)) {
            rc = CUZK_EXIT_INTERNAL;
            goto done;
        }
        cj.body_sha256 = hex;
    }
    rc = fleet_job_add_inputs(f, &cj, (uint32_t)n, in, &job, err, sizeof(err));
    if (rc < 0) {
        fprintf(stderr, "cuzk prove: %s\n", err);
        rc = rc == -EEXIST ? CUZK_EXIT_REFUSED : cuzk_exit_code(rc, CUZK_PROG_CLIENT);
        goto done;
    }
    if (json)
        printf("{\"job\": %llu, \"partitions\": %d, \"circuit\": \"%s\", \"created\": %s}\n",
               (unsigned long long)job, n, o->circuit, rc ? "true" : "false");
    else
        printf("job %llu %s the queue: %d partition(s) of circuit %s\n", (unsigned long long)job,
               rc ? "submitted to" : "already in (same idempotency key and inputs)", n, o->circuit);
    rc = CUZK_EXIT_OK;
done:
    for (int i = 0; i < n; i++) free((void *)in[i].bytes);
    free(in);
    return rc;
}

static int prove(struct fleet *f, int argc, char **argv, int json, fleet_local_circuits local, void *arg)
{
    struct circuit_opts co = { .local = local, .arg = arg };
    const char *zk = NULL, *out = NULL;
    char zabs[PATH_MAX], oabs[PATH_MAX], err[512];
    char **paths = calloc((size_t)argc, sizeof(char *));
    char **names = calloc((size_t)argc, sizeof(char *));
    int nw = 0, rc = CUZK_EXIT_USAGE, store = 0;
    uint64_t job;

    if (!paths || !names) goto done;
    /* --circuit first, wherever it is: its inputs are bytes to send, not paths. */
    for (int i = 1; i + 1 < argc; i++)
        if (!strcmp(argv[i], "--circuit")) co.circuit = argv[i + 1];
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--zkey") && i + 1 < argc)
            zk = argv[++i];
        else if (!strcmp(argv[i], "--out") && i + 1 < argc)
            out = argv[++i];
        else if (!strcmp(argv[i], "--store-proofs"))
            store = 1;
        else if (!strcmp(argv[i], "--circuit") && i + 1 < argc)
            co.circuit = argv[++i];
        else if (!strcmp(argv[i], "--fingerprint") && i + 1 < argc)
            co.fingerprint = argv[++i];
        else if (!strcmp(argv[i], "--tenant") && i + 1 < argc)
            co.tenant = argv[++i];
        else if (!strcmp(argv[i], "--idempotency-key") && i + 1 < argc)
            co.idem_key = argv[++i];
        else if (co.circuit && argv[i][0] != '-')
            argv[1 + nw++] = argv[i]; /* inputs, compacted in place: read as bytes below */
        else if (argv[i][0] == '-') {
            fprintf(stderr, "cuzk prove --queue: unknown option %s\n", argv[i]);
            goto done;
        } else {
            char *a = malloc(PATH_MAX), *n = malloc(PIPE_NAME_LEN);
            paths[nw] = a;
            names[nw++] = n;
            if (!a || !n || absolute("witness", argv[i], a)) goto done;
            if (proto_wtns_name(argv[i], n, PIPE_NAME_LEN)) {
                fprintf(stderr, "cuzk prove: witness %s: bad file name\n", argv[i]);
                goto done;
            }
            for (int j = 0; j < nw - 1; j++)
                if (!strcmp(names[j], n)) {
                    fprintf(stderr, "cuzk prove: %s and %s both write %s.proof.json\n", paths[j], a, n);
                    goto done;
                }
        }
    }
    if (co.circuit) {
        if (zk || out || store || !nw) {
            fprintf(stderr,
                    "cuzk prove --queue URL --circuit NAME [--tenant T] [--idempotency-key K] "
                    "[--fingerprint HEX] IN.json|W.wtns [...] (no --zkey, --out or "
                    "--store-proofs: its proofs are stored; `cuzk fetch` writes them)\n");
            nw = 0;
            goto done;
        }
        rc = prove_circuit(f, &co, nw, argv + 1, json);
        nw = 0; /* argv's, not malloc'd */
        goto done;
    }
    if (co.tenant || co.idem_key || co.fingerprint) {
        fprintf(stderr,
                "cuzk prove --queue: --tenant, --idempotency-key and --fingerprint go with --circuit\n");
        goto done;
    }
    if (!zk || (!out && !store) || !nw) {
        fprintf(stderr,
                "cuzk prove --queue URL --zkey Z {--out DIR | --store-proofs [--out "
                "DIR]} W1.wtns [...]\n");
        goto done;
    }
    oabs[0] = '\0'; /* no out dir: the proofs are stored in the table only */
    if (absolute("zkey", zk, zabs) || (out && absolute("out dir", out, oabs))) goto done;
    if ((rc = fleet_job_add(f, zabs, oabs, store, (uint32_t)nw, (const char *const *)paths,
                            (const char *const *)names, &job, err, sizeof(err)))) {
        fprintf(stderr, "cuzk prove: %s\n", err);
        rc = cuzk_exit_code(rc, CUZK_PROG_CLIENT);
        goto done;
    }
    if (json)
        printf("{\"job\": %llu, \"partitions\": %d}\n", (unsigned long long)job, nw);
    else
        printf("job %llu submitted to the queue: %d partition(s)\n", (unsigned long long)job, nw);
    rc = CUZK_EXIT_OK;
done:
    for (int i = 0; i < nw; i++) {
        free(paths[i]);
        free(names[i]);
    }
    free(paths);
    free(names);
    return rc;
}

/* Waits on the job-end doorbell (fleet_listen: the NOTIFY that the transaction ending
 * a job sends), looking at the job again at each ring; an engine without LISTEN
 * (fleet_listen fails) gets the look every 200 ms instead. */
static int wait_job(struct fleet *f, int argc, char **argv, int json)
{
    long long timeout_ms = -1;
    uint32_t done, failed, total;
    char err[512], *e;
    uint64_t job;
    uint64_t t0;
    int st, listening;

    if (argc < 2 || !(job = strtoull(argv[1], &e, 10)) || *e) {
        fprintf(stderr, "cuzk wait JOB --queue URL [--timeout-ms N]\n");
        return CUZK_EXIT_USAGE;
    }
    if (argc > 3 && !strcmp(argv[2], "--timeout-ms")) {
        int rc = client_option_number("wait", "--timeout-ms", argv[3], 0, INT32_MAX, &timeout_ms);

        if (rc) return rc;
    }
    t0 = os_now_ns();
    /* LISTEN before the first look, so that an end between the look and the wait
     * still rings; after a lost connection, LISTEN again and look again. Without a
     * doorbell (the LISTEN failed) it looks every 200 ms. */
    listening = !fleet_listen(f, err, sizeof(err));
    for (;;) {
        long long left = 5000, waited; /* a look at least every 5 s: a pooler may swallow NOTIFY */

        st = fleet_job_state(f, job, &done, &failed, &total, err, sizeof(err));
        if (st < 0 && st != -ECONNREFUSED) {
            fprintf(stderr, "cuzk wait: %s\n", err);
            return CUZK_EXIT_REFUSED;
        }
        if (st == -ECONNREFUSED) /* the database restarting: keep waiting */
            listening = !fleet_reconnect(f, err, sizeof(err)) && !fleet_listen(f, err, sizeof(err));
        if (st > 0) break;
        waited = (long long)((os_now_ns() - t0) / 1000000);
        if (timeout_ms >= 0 && waited > timeout_ms) {
            fprintf(stderr, "cuzk wait: job %llu not finished after %lld ms\n", (unsigned long long)job,
                    timeout_ms);
            return CUZK_EXIT_TIMEOUT;
        }
        if (timeout_ms >= 0 && timeout_ms - waited + 1 < left) left = timeout_ms - waited + 1;
        if (st < 0 || !listening)
            usleep(200000);
        else if (fleet_wait_notify(f, (int)left, &(uint64_t){ 0 }, err, sizeof(err)) < 0)
            listening = 0; /* lost: the next look reconnects */
    }
    if (json)
        printf("{\"job\": %llu, \"state\": \"%s\", \"done\": %u, \"failed\": %u}\n", (unsigned long long)job,
               st == 1 ? "done" : "failed", done, failed);
    else
        printf("job %llu %s: %u done, %u failed\n", (unsigned long long)job, st == 1 ? "done" : "failed",
               done, failed);
    return st == 1 ? CUZK_EXIT_OK : CUZK_EXIT_JOB_FAILED;
}

/* `cuzk fetch`: what it did so far. */
struct fetch {
    int dfd;
    uint32_t written, present, failed, missing, errors;
};

/* Is dfd/name a regular file (not followed) holding exactly text? */
static int same_file(int dfd, const char *name, const char *text)
{
    int fd = openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
    size_t len = strlen(text), got = 0;
    struct stat st;
    char buf[65536];
    int same = 0;

    if (fd < 0) return 0;
    if (!fstat(fd, &st) && S_ISREG(st.st_mode) && (size_t)st.st_size == len) {
        same = 1;
        while (same && got < len) {
            ssize_t n = read(fd, buf, sizeof(buf));

            if (n <= 0 || memcmp(buf, text + got, (size_t)n))
                same = 0;
            else
                got += (size_t)n;
        }
    }
    close(fd);
    return same;
}

/* Write text to dfd/name without ever replacing or following anything there: into a
 * fresh temp name (O_CREAT|O_EXCL|O_NOFOLLOW), fsync'd, then link()ed to name, which
 * fails if name exists (a file, a link, anything). 1 written, 0 already there with
 * these very bytes, -1 (said on stderr) otherwise. */
static int put_file(int dfd, const char *name, const char *text)
{
    char tmp[PIPE_NAME_LEN + 64];
    size_t len = strlen(text), off = 0;
    int fd, e, rc = -1;

    snprintf(tmp, sizeof(tmp), ".%s.cuzk-fetch.%ld", name, (long)getpid());
    if ((fd = openat(dfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644)) < 0) {
        fprintf(stderr, "cuzk fetch: cannot create %s: %s\n", tmp, strerror(errno));
        return -1;
    }
    while (off < len) {
        ssize_t n = write(fd, text + off, len - off);

        if (n <= 0) break;
        off += (size_t)n;
    }
    if (off < len || fsync(fd)) {
        fprintf(stderr, "cuzk fetch: writing %s: %s\n", name, strerror(errno));
        close(fd);
        unlinkat(dfd, tmp, 0);
        return -1;
    }
    close(fd);
    if (!linkat(dfd, tmp, dfd, name, 0))
        rc = 1;
    else if ((e = errno) == EEXIST && same_file(dfd, name, text))
        rc = 0;
    else if (e == EEXIST)
        fprintf(stderr,
                "cuzk fetch: %s exists (a different file, or a link: not followed): "
                "not replaced\n",
                name);
    else
        fprintf(stderr, "cuzk fetch: cannot create %s: %s\n", name, strerror(e));
    unlinkat(dfd, tmp, 0);
    return rc;
}

static int fetch_one(void *arg, const struct fleet_stored *s)
{
    struct fetch *x = arg;
    char pf[PIPE_NAME_LEN + 16], qf[PIPE_NAME_LEN + 16];
    int a, b;

    if (!strcmp(s->state, "failed")) {
        x->failed++;
        fprintf(stderr, "cuzk fetch: %s: failed: %s\n", s->name, s->reason ? s->reason : "(no reason)");
        return 0;
    }
    if (!s->proof) {
        x->missing++;
        return 0;
    }
    /* The row's name is whoever wrote the table's: a "/../../x" would write outside
     * --out. Only a single file name is written, beneath the --out descriptor. */
    if (!fleet_name_valid(s->name)) {
        x->errors++;
        fprintf(stderr,
                "cuzk fetch: a stored proof's name is not a single file name (no '/', no "
                "leading '.', no control character): not written\n");
        return 0;
    }
    /* The same names as a daemon's publish: public first, the proof's name is what a
     * reader waits for. */
    snprintf(qf, sizeof(qf), "%s.public.json", s->name);
    snprintf(pf, sizeof(pf), "%s.proof.json", s->name);
    if ((a = put_file(x->dfd, qf, s->pub)) < 0 || (b = put_file(x->dfd, pf, s->proof)) < 0)
        x->errors++;
    else if (a + b)
        x->written++;
    else
        x->present++;
    return 0;
}

/* cuzk fetch JOB --queue URL --out DIR: the job's stored proofs (--store-proofs) into
 * DIR, as DIR/NAME.proof.json and DIR/NAME.public.json. Never replaces a file; one
 * already there with the same bytes counts as fetched (a second fetch is a no-op). */
static int fetch(struct fleet *f, int argc, char **argv, int json)
{
    struct fetch x = { .dfd = -1 };
    const char *out = NULL;
    char err[512], *e;
    uint64_t job = 0;
    uint32_t done, failed, total;
    int n, st;

    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--out") && i + 1 < argc)
            out = argv[++i];
        else if (job || !(job = strtoull(argv[i], &e, 10)) || *e) {
            job = 0;
            break;
        }
    }
    if (!job || !out) {
        fprintf(stderr, "cuzk fetch JOB --queue URL --out DIR\n");
        return CUZK_EXIT_USAGE;
    }
    /* The job's state first: once it says finished, every row read below is final. */
    if ((st = fleet_job_state(f, job, &done, &failed, &total, err, sizeof(err))) < 0) {
        fprintf(stderr, "cuzk fetch: %s\n", err);
        return st == -ENOENT ? CUZK_EXIT_REFUSED : cuzk_exit_code(st, CUZK_PROG_CLIENT);
    }
    if ((x.dfd = open(out, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0) {
        fprintf(stderr, "cuzk fetch: --out %s: %s\n", out, strerror(errno));
        return CUZK_EXIT_OUTPUT;
    }
    n = fleet_fetch(f, job, fetch_one, &x, err, sizeof(err));
    close(x.dfd);
    if (n < 0) {
        fprintf(stderr, "cuzk fetch: %s\n", err);
        return n == -ENOENT ? CUZK_EXIT_REFUSED : cuzk_exit_code(n, CUZK_PROG_CLIENT);
    }
    if (json)
        printf("{\"job\": %llu, \"partitions\": %d, \"written\": %u, \"present\": %u, "
               "\"failed\": %u, \"not_stored\": %u, \"errors\": %u, \"finished\": %s}\n",
               (unsigned long long)job, n, x.written, x.present, x.failed, x.missing, x.errors,
               st ? "true" : "false");
    else
        printf("job %llu: %u written, %u already there, %u failed, %u not stored, %u "
               "not written (of %d)\n",
               (unsigned long long)job, x.written, x.present, x.failed, x.missing, x.errors, n);
    if (x.errors) return CUZK_EXIT_OUTPUT;
    if (!st) {
        fprintf(stderr, "cuzk fetch: job %llu is not finished: fetch again after `cuzk wait`\n",
                (unsigned long long)job);
        return CUZK_EXIT_REFUSED;
    }
    if (x.missing) {
        fprintf(stderr,
                "cuzk fetch: job %llu: %u proofs not in the table (proved by a cuzkd "
                "without --store-proofs: see the job's out dir)\n",
                (unsigned long long)job, x.missing);
        return CUZK_EXIT_REFUSED;
    }
    return x.failed ? CUZK_EXIT_JOB_FAILED : CUZK_EXIT_OK;
}

int fleet_client_main(int argc, char **argv, int json, fleet_local_circuits circuits, void *arg)
{
    const char *url = NULL;
    struct fleet *f;
    char err[512];
    int rc;

    for (int k = 1; k < argc; k++)
        if (!strcmp(argv[k], "--queue") && k + 1 < argc) {
            url = argv[k + 1];
            memmove(&argv[k], &argv[k + 2], (size_t)(argc - k - 1) * sizeof(*argv));
            argc -= 2;
            break;
        }
    if (!url && !strcmp(argv[0], "fetch")) {
        fprintf(stderr, "cuzk fetch: stored proofs are in a fleet's queue: add --queue URL\n");
        return CUZK_EXIT_USAGE;
    }
    if (!url) return -1;
    /* The client's argv is as public as cuzkd's (/proc/PID/cmdline, for as long as a
     * `cuzk wait` runs): the same refusal, after the same scrub. */
    if (fleet_url_has_password(url)) {
        fleet_url_scrub((char *)url);
        fprintf(stderr,
                "cuzk %s --queue: a password on the command line is visible to every "
                "local user (/proc/PID/cmdline): give it in a PGPASSFILE (mode 0600) or "
                "use peer or certificate authentication\n",
                argv[0]);
        return CUZK_EXIT_USAGE;
    }
    if (strcmp(argv[0], "prove") && strcmp(argv[0], "wait") && strcmp(argv[0], "status") &&
        strcmp(argv[0], "fetch")) {
        fprintf(stderr, "cuzk %s: not a --queue command (prove, wait, status, fetch)\n", argv[0]);
        return CUZK_EXIT_USAGE;
    }
    if ((rc = fleet_open(&f, url, err, sizeof(err)))) {
        fprintf(stderr, "cuzk %s: %s\n", argv[0], err);
        return cuzk_exit_code(rc, CUZK_PROG_CLIENT);
    }
    if (!strcmp(argv[0], "prove"))
        rc = prove(f, argc, argv, json, circuits, arg);
    else if (!strcmp(argv[0], "wait"))
        rc = wait_job(f, argc, argv, json);
    else if (!strcmp(argv[0], "fetch"))
        rc = fetch(f, argc, argv, json);
    else {
        char *s = fleet_status_json(f, err, sizeof(err));
        if (s)
            printf("%s\n", s);
        else
            fprintf(stderr, "cuzk status: %s\n", err);
        rc = s ? CUZK_EXIT_OK : CUZK_EXIT_REFUSED;
        free(s);
    }
    fleet_close(f);
    return rc;
}
