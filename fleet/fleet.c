/* fleet.c — cuzkd's fleet thread (fleet.h): claim partitions from the queue, run
 * `cuzk prove --wait` on each, finish and publish them; their spool dirs are
 * spool.c's. */
#include "fleet/fleet.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include <jansson.h>

#include "proto/ctl_client.h"
#include "base/error.h"
#include "store/fleet_pg.h"
#include "base/os.h"
#include "proto/protocol.h"
#include "fleet/spooled.h"
#include "fleet/spool.h"
#include "base/barrier.h"

/* Stale daemons' unpublished proofs are looked for this often: a dead finisher is
 * adopted 3 leases after its last heartbeat, this adds at most 3 s to that. */
#define ADOPT_EVERY_MS    3000
/* This cuzkd's circuits are read again this often (a reload, a zkey that finished
 * loading or failed): a circuit job waits at most this long for a daemon that just
 * got its circuit. */
#define CIRCUITS_EVERY_MS 3000

/* cuzkd's log is its stderr (redirected in the background); one line each. Row
 * names are whoever wrote the table's: escaped (os_vlog). */
__attribute__((format(printf, 1, 2))) static void flog(const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    os_vlog(0, "cuzkd: fleet", fmt, ap);
    va_end(ap);
}

/* A database call failed with rc: log the first of a run of failures only, and
 * reconnect (the next tick retries). */
static void db_error(struct fleet_daemon *d, int rc, const char *err)
{
    char e2[512];

    if (!d->db_down) flog("%s%s", err, rc == -ECONNREFUSED ? " (retrying)" : "");
    d->db_down = 1;
    barrier_store_relaxed(&d->h_down, 1);
    barrier_fetch_add_relaxed(&d->h_errors, 1);
    if (rc == -ECONNREFUSED) fleet_reconnect(d->f, e2, sizeof(e2));
}

/* A database call succeeded: the end of a run of failures, if there was one. */
static void db_ok(struct fleet_daemon *d)
{
    if (d->db_down) flog("database reachable again");
    if (barrier_exchange_relaxed(&d->h_down, 0)) barrier_fetch_add_relaxed(&d->h_reconnects, 1);
    d->db_down = 0;
}

void fleet_daemon_health(const struct fleet_daemon *d, struct fleet_health *h)
{
    struct fleet_daemon *m = (struct fleet_daemon *)d; /* atomics: loads only */

    h->db_reachable = !barrier_load_relaxed(&m->h_down);
    h->db_errors = barrier_load_relaxed(&m->h_errors);
    h->reconnects = barrier_load_relaxed(&m->h_reconnects);
}

/* Fleet paths come from whoever writes the queue (fleet_pg.h's trust boundary): a
 * regular file, not reached through a symbolic link at its last component. */
static int regular(const char *p)
{
    struct stat st;
    int fd = open(p, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK), ok;

    if (fd < 0) return 0;
    ok = !fstat(fd, &st) && S_ISREG(st.st_mode);
    close(fd);
    return ok;
}

/* The slot's partition ends before a client ran: the next tick records its finish,
 * with sl->why where the caller set one. Returns -1, the start's answer. */
static int not_started(struct slot *sl)
{
    sl->pid = 0;
    sl->finishing = 1;
    sl->rc = -1;
    return -1;
}

/* The slot's `cuzk` client started: argv (argv[0] the program, NULL last) run with
 * the signals cuzkd's thread blocks unblocked and its stdout on out (-1: /dev/null).
 * 0 started (sl->pid set), -1 fork failed (errno). */
static int start_client(struct slot *sl, int out, const char *const argv[])
{
    pid_t pid = fork();

    if (pid == 0) {
        sigset_t all;

        if (out < 0) out = open("/dev/null", O_WRONLY);
        sigemptyset(&all);
        sigprocmask(SIG_SETMASK, &all, NULL); /* cuzkd's thread blocks them */
        if (out >= 0) dup2(out, 1);
        execv(argv[0], (char *const *)argv); /* execv's array is const in all but its type */
        _exit(127);
    }
    if (pid < 0) return -1;
    sl->pid = pid;
    return 0;
}

/* Why a circuit claim's row cannot start as it is written (its own fault, not
 * retried), or NULL. */
static const char *circuit_row_refusal(const struct slot *sl)
{
    if (!fleet_name_valid(sl->c.name)) return "its name is not a single file name";
    if (!proto_circuit_name_valid(sl->c.circuit)) return "its circuit is not a circuit name";
    return NULL;
}

/* A circuit claim (fleet_pg.h "Circuit jobs"): its input written into the slot's
 * private dir, then `cuzk --json prove --wait --circuit NAME --out SPOOL INPUT`
 * against this cuzkd, its reply (stdout) kept in NAME.reply for the reason of a
 * failure. 0 started, -1 not (sl->why, sl->retry; or the lease is gone). */
static int start_circuit(struct fleet_daemon *d, struct slot *sl)
{
    char spool[2048], in[2400];
    const char *const argv[] = { d->cuzk,    "--json", "--instance", d->instance, "--run-dir",
                                 d->run_dir, "prove",  "--wait",     "--circuit", sl->c.circuit,
                                 "--out",    spool,    in,           NULL };
    const char *row = circuit_row_refusal(sl), *why = row;
    int reply = -1, rc, started;

    if (!why) why = spool_prepare(d, sl, spool, sizeof(spool));
    if (why) {
        snprintf(sl->why, sizeof(sl->why), "%s", why);
        sl->retry = !row; /* the spool dir is this daemon's fault */
    } else if ((rc = spool_input(d, sl, in, sizeof(in), &reply)) == 0) {
        /* The lease went meanwhile (a cancel, or it expired): nothing to finish. */
        snprintf(sl->why, sizeof(sl->why), "lease lost before the start");
        sl->retry = 2;
    } else if (rc > 0 && reply < 0) {
        snprintf(sl->why, sizeof(sl->why), "cannot create its reply file: %s", strerror(errno));
        sl->retry = 1;
    }
    if (sl->why[0]) {
        if (reply >= 0) close(reply);
        if (sl->retry != 2)
            flog("circuit partition not started: %s (job %llu part %u)", sl->why,
                 (unsigned long long)sl->c.job, sl->c.idx);
        return not_started(sl);
    }
    started = start_client(sl, reply, argv);
    if (started < 0) snprintf(sl->why, sizeof(sl->why), "cannot fork: %s", strerror(errno));
    close(reply);
    if (started < 0) {
        sl->retry = 1;
        return not_started(sl);
    }
    return 0;
}

/* Refusals of a circuit claim's submit that are its input's fault: fail it now, with
 * cuzkd's words. Any other refusal (draining, full, a quota, the circuit reloaded
 * away) is this daemon's: back to the queue. */
static int input_fault(const char *code)
{
    static const char *const codes[] = { PROTO_E_BAD_INPUT, PROTO_E_INPUT_LIMIT, PROTO_E_TOO_BIG,
                                         PROTO_E_BAD_REQUEST };

    for (size_t i = 0; code && i < sizeof(codes) / sizeof(codes[0]); i++)
        if (!strcmp(code, codes[i])) return 1;
    return 0;
}

/* A circuit claim's client exited with rc (not 0): its reason (sl->why) from the reply
 * it printed, and whether it is the partition's (sl->retry 0) or not. */
static void circuit_failure(struct fleet_daemon *d, struct slot *sl)
{
    char *text = spool_reply(d, sl), *last = text, dir[PROTO_PATH_MAX + 32], *at;
    json_t *r, *j, *p;
    const char *m = NULL, *code;
    size_t i, dl;

    /* --json --wait prints the submit's reply, then the job's: the last line is it. */
    for (char *q = text; q && *q; q++)
        if (*q == '\n' && q[1] && q[1] != '\n') last = q + 1;
    r = last ? json_loads(last, JSON_DISABLE_EOF_CHECK, NULL) : NULL;
    code = json_string_value(json_object_get(r, "error"));
    free(text);
    if (sl->rc == CUZK_EXIT_JOB_FAILED && (j = json_object_get(r, "job"))) {
        /* The job's own failure (an unsatisfied assert, a malformed input.json): the
         * first failed partition's reason, else the job's. */
        json_array_foreach (json_object_get(j, "parts"), i, p)
            if (!m) m = json_string_value(json_object_get(p, "reason"));
        if (!m) m = json_string_value(json_object_get(j, "reason"));
        sl->retry = 0;
    } else if (sl->rc == CUZK_EXIT_REFUSED && code) {
        m = json_string_value(json_object_get(r, "message"));
        sl->retry = !input_fault(code);
        /* The circuit went (a reload) since the last refresh: read the set again
         * before the next claim, so this daemon does not take it back at once. */
        if (!strcmp(code, PROTO_E_NO_CIRCUIT)) d->next_circuits = 0;
    } else
        sl->retry = sl->rc != CUZK_EXIT_JOB_FAILED;
    if (m)
        snprintf(sl->why, sizeof(sl->why), "%s%s%s%s", m, code ? " (" : "", code ? code : "",
                 code ? ")" : "");
    else
        snprintf(sl->why, sizeof(sl->why), "cuzkd job failed (cuzk exit %d)", sl->rc);
    json_decref(r);
    /* The reason goes to the submitter: this daemon's private dir is not theirs to
     * know, the input's name within it ("2.wtns") is. */
    dl = (size_t)snprintf(dir, sizeof(dir), "%s/%u/", d->priv, (unsigned)(sl - d->slots));
    while (dl < sizeof(dir) && (at = strstr(sl->why, dir))) memmove(at, at + dl, strlen(at + dl) + 1);
}

/* Why a witness claim's row cannot start as it is written, or NULL. */
static const char *witness_row_refusal(const struct slot *sl)
{
    char wname[sizeof(sl->c.name)];

    /* The row's name names files in the out dir: one component, whoever wrote it. */
    if (!fleet_name_valid(sl->c.name))
        return "its name is not a single file name (no '/', no leading '.', no control "
               "character)";
    /* `cuzk prove` names the proof after the witness's file: a row named otherwise
     * left root's proof spooled under that other name in the user's out dir, never
     * published nor removed (the finish and the cleanup look for NAME.*). */
    if (proto_wtns_name(sl->c.wtns, wname, sizeof(wname)) || strcmp(wname, sl->c.name))
        return "its name is not its witness's file name (NAME.wtns, or NAME without .wtns): "
               "the proof would be spooled under another name";
    if (!regular(sl->c.wtns)) return "witness is not a regular file";
    if (!regular(sl->c.zkey)) return "zkey is not a regular file";
    return NULL;
}

static int start_one(struct fleet_daemon *d, struct slot *sl)
{
    char spool[2048];
    const char *const argv[] = { d->cuzk, "--instance", d->instance, "--run-dir", d->run_dir,
                                 "prove", "--wait",     "--zkey",    sl->c.zkey,  "--out",
                                 spool,   sl->c.wtns,   NULL };
    const char *why = witness_row_refusal(sl);

    if (!why) why = spool_prepare(d, sl, spool, sizeof(spool));
    if (why) {
        snprintf(sl->why, sizeof(sl->why), "%s", why); /* the reason the queue records */
        flog("partition rejected: %s (%s)", why, sl->c.wtns);
        return not_started(sl);
    }
    return start_client(sl, -1, argv) < 0 ? not_started(sl) : 0;
}

/* Finish a proved partition with its proof in the table (--store-proofs): read the
 * spooled files, fleet_finish_stored; a proof that cannot be stored (over a cap, not
 * JSON, unreadable) fails the partition with that reason. fleet_finish's answers. */
static int finish_stored(struct fleet_daemon *d, struct slot *sl, char *err, size_t errlen)
{
    char tp[300], tq[300], why[512];
    char *proof = NULL, *pub = NULL;
    int sfd, won;

    snprintf(tp, sizeof(tp), "%s.proof.json", sl->c.name);
    snprintf(tq, sizeof(tq), "%s.public.json", sl->c.name);
    if (!fleet_name_valid(sl->c.name)) /* never read outside the spool dir */
        snprintf(why, sizeof(why), "its name is not a single file name");
    else if ((sfd = spool_open(d, sl)) < 0)
        snprintf(why, sizeof(why), "stored proof: cannot open the spool dir: %s", strerror(errno));
    else {
        if ((proof = spooled_read(sfd, tp, FLEET_PROOF_MAX, why, sizeof(why))))
            pub = spooled_read(sfd, tq, FLEET_PUBLIC_MAX, why, sizeof(why));
        close(sfd);
    }
    won = proof && pub
        ? fleet_finish_stored(d->f, d->owner, sl->c.job, sl->c.idx, sl->c.gen, proof, pub, err, errlen)
        : -EINVAL;
    free(proof);
    free(pub);
    if (won == -EINVAL) {
        if (proof && pub) /* fleet_proof_check's reason */
            snprintf(why, sizeof(why), "%s", err);
        flog("%s: %s: the partition fails", sl->c.name, why);
        sl->rc = -1; /* dropped below, not published */
        won = fleet_finish(d->f, d->owner, sl->c.job, sl->c.idx, sl->c.gen, why, err, errlen);
    }
    return won;
}

/* What a finish records: NULL when the client succeeded, else the circuit claim's own
 * reason (circuit_failure, start_circuit) or the exit code's. */
static const char *failure(const struct slot *sl, const char *reason)
{
    if (!sl->rc) return NULL;
    return sl->why[0] ? sl->why : reason;
}

/* The partition's end: finish it in the queue (with --store-proofs, its proof stored
 * by the same update), then publish (or drop) the spooled files and mark them
 * published (fleet_part_publish); a job with no out dir has nothing to publish (its
 * finish marked it). 0 when done with the slot, -1 to retry later (database away); a
 * retry after the publish only marks (sl->marking: the spooled files are linked and
 * gone, the call finds the finals and never links twice). */
static int end_one(struct fleet_daemon *d, struct slot *sl)
{
    char err[512], reason[64];
    int won, linked;

    if (sl->marking) goto publish;
    if (sl->rc) snprintf(reason, sizeof(reason), "cuzkd job failed (cuzk exit %d)", sl->rc);
    if (sl->c.input_kind != FLEET_INPUT_PATH && sl->retry == 2) { /* its lease went before the start */
        won = 0;
        goto drop;
    }
    if (sl->c.input_kind != FLEET_INPUT_PATH && sl->rc > 0) circuit_failure(d, sl);
    /* Not the partition's verdict (cuzkd draining or busy: exit 20/21, or the
     * client not run): back to the queue for any daemon, up to 3 claims; exit 22
     * is the job's own failure. A circuit claim's failure says which it is itself
     * (sl->retry); after 3 claims it fails with its reason, never retried forever. */
    if (sl->c.input_kind != FLEET_INPUT_PATH ? sl->rc && sl->retry && sl->c.attempts < 3
                                             : sl->rc && sl->rc != 22 && sl->rc != -1 && sl->c.attempts < 3) {
        won = fleet_release(d->f, d->owner, sl->c.job, sl->c.idx, sl->c.gen, err, sizeof(err));
        if (won < 0) {
            db_error(d, won, err);
            return -1;
        }
        won = 0;
        goto drop;
    }
    if (!sl->rc && d->store)
        won = finish_stored(d, sl, err, sizeof(err));
    else
        won = fleet_finish(d->f, d->owner, sl->c.job, sl->c.idx, sl->c.gen, failure(sl, reason), err,
                           sizeof(err));
    if (won >= 0 && sl->rc && sl->c.input_kind != FLEET_INPUT_PATH)
        flog("job %llu part %u (circuit %s) failed: %s", (unsigned long long)sl->c.job, sl->c.idx,
             sl->c.circuit, sl->why[0] ? sl->why : reason);
    if (won < 0) {
        db_error(d, won, err);
        return -1;
    }
    if (!sl->c.out_dir[0]) /* stored only: its finish published it */
        goto drop;
    /* Test hook (fleet_pg.sh): die as a power loss would, in the window between the
     * finish and the publish that adoption closes (this daemon's next start, or
     * another daemon once this one's heartbeat is stale). */
    if (won >= 1 && !sl->rc && getenv("CUZK_TEST_FLEET_CRASH_AFTER_FINISH")) kill(getpid(), SIGKILL);
    if (won >= 1 && !sl->rc) {
        sl->marking = 1;
publish:
        won = fleet_part_publish(d->f, sl->c.out_dir, sl->c.name, d->owner, sl->c.job, sl->c.idx, sl->c.gen,
                                 &linked, err, sizeof(err));
        if (won < 0 && won != -ENOTDIR && won != -EPERM) { /* the database */
            sl->marking = 2;
            db_error(d, won, err);
            return -1;
        }
        db_ok(d);
        if (won < 0)
            flog("%s", err);
        else if (won == FLEET_PUB_REQUEUED)
            flog("%s: spooled proof missing: back to the queue", sl->c.name);
        else if (won == FLEET_PUB_MARKED && linked < 2 && sl->marking == 1)
            flog("%s: %s", sl->c.name, "a final file existed already: kept it");
        else if (won == FLEET_PUB_GONE && sl->marking == 1)
            flog("%s: published or requeued by another daemon meanwhile (was this "
                 "one's heartbeat stale?)",
                 sl->c.name);
        spool_done(d, sl);
        memset(sl, 0, sizeof(*sl));
        return 0;
    }
drop:
    db_ok(d);
    if (!won && !sl->rc) flog("%s: %s", sl->c.name, "lease lost before the finish: proof discarded");
    spool_remove_input(d, sl);
    spool_remove_files(d, sl);
    spool_done(d, sl);
    memset(sl, 0, sizeof(*sl));
    return 0;
}
/* What fleet_adopt did, logged: one line per partition of another daemon, a count for
 * this daemon's own (a previous run's). */
struct adoption {
    struct fleet_daemon *d;
    int own, progress, failed;
};

static void adopted(void *arg, const struct fleet_adopted *a)
{
    struct adoption *c = arg;
    int own = !strcmp(a->done_by, c->d->owner);

    if (a->outcome >= 0) c->progress++;
    if (a->outcome == -ENOTDIR) return; /* that out dir is not mounted here: another daemon's to adopt */
    if (a->outcome < 0) {
        c->failed++;
        flog("%s", a->why);
    } else if (a->linked && own) /* counted whether its mark or another's came first */
        c->own++;
    else if (a->linked) /* GONE too: another's mark came first */
        flog("published %s (job %llu part %u) that %s finished: its heartbeat is stale", a->name,
             (unsigned long long)a->job, a->idx, a->done_by);
    else if (a->outcome == FLEET_PUB_REQUEUED)
        flog("%s (job %llu part %u), finished by %s: no spooled proof, back to the queue", a->name,
             (unsigned long long)a->job, a->idx, a->done_by);
}

/* The start of this daemon's fleet life: the previous run's leases back to the
 * queue (it held them under the same owner id and nobody works on them now), the
 * proofs it finished but had not published (fleet_pg.h's "Publishing") published,
 * then its stale spooled files removed. */
static int recover(struct fleet_daemon *d)
{
    char err[512], **dirs = NULL;
    struct adoption c = { .d = d };
    int n, rc;

    if ((rc = fleet_release_mine(d->f, d->owner, err, sizeof(err))) < 0) {
        db_error(d, rc, err);
        return -1;
    }
    if (rc) flog("gave %d leases of a previous run back to the queue", rc);
    do { /* 256 rows a call; again while a full call made progress */
        c.progress = 0;
        if ((n = fleet_adopt(d->f, d->owner, 1, adopted, &c, err, sizeof(err))) < 0) {
            db_error(d, n, err);
            return -1;
        }
    } while (n == 256 && c.progress);
    if (c.own) flog("published %d proofs finished before a restart", c.own);
    if (c.failed) return 0; /* keep the spooled files of what could not be published */
    if ((n = fleet_done_dirs(d->f, d->owner, &dirs, err, sizeof(err))) < 0) {
        db_error(d, n, err);
        return -1;
    }
    for (int i = 0; i < n; i++) {
        spool_clean_dir(d, dirs[i]);
        free(dirs[i]);
    }
    free(dirs);
    return 0;
}

/* A database call failed at t: the next try 200 ms later, doubling to 5 s, so a
 * database that is down is not hammered. */
static uint64_t retry_at(uint64_t *backoff, uint64_t t)
{
    *backoff = *backoff ? (*backoff * 2 > 5000 ? 5000 : *backoff * 2) : 200;
    return t + *backoff;
}

/* This cuzkd's circuits that can prove (a fingerprint, not failed), from its own
 * control socket's `circuits` reply (the request `cuzk circuits` makes), handed to
 * fleet_set_circuits: circuit jobs are claimed only for these. Kept as they were when
 * the socket does not answer (cuzkd still starting). */
static void refresh_circuits(struct fleet_daemon *d, uint64_t t)
{
    struct proto_conn cc = { .fd = -1 };
    const char *names[PROTO_CIRCUIT_DECL_MAX], *fps[PROTO_CIRCUIT_DECL_MAX];
    char seen[PROTO_CIRCUIT_DECL_MAX * 80 + 1] = "";
    json_t *r = NULL, *e;
    uint32_t n = 0;
    size_t i, o = 0;

    if (!d->store || t < d->next_circuits) return;
    d->next_circuits = t + CIRCUITS_EVERY_MS;
    /* Bounded: an event loop that no longer serves (cuzkd stopping: it joins this
     * thread after its loop ends, its socket still bound) must not hold this thread
     * in a read forever. */
    if (!proto_connect(&cc, d->sock)) {
        struct timeval tv = { .tv_sec = 2 };

        setsockopt(cc.fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
        setsockopt(cc.fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
    }
    if (cc.fd < 0 || !(r = proto_request(&cc, json_pack("{s:s}", "req", PROTO_REQ_CIRCUITS), NULL, 0)) ||
        !json_is_true(json_object_get(r, "ok"))) {
        json_decref(r);
        proto_close(&cc);
        return;
    }
    json_array_foreach (json_object_get(r, "circuits"), i, e) {
        const char *nm = json_string_value(json_object_get(e, "name")),
                   *fp = json_string_value(json_object_get(e, "fingerprint")),
                   *st = json_string_value(json_object_get(e, "state"));

        if (n < PROTO_CIRCUIT_DECL_MAX && nm && fp && fp[0] && st && strcmp(st, "failed")) {
            names[n] = nm;
            fps[n++] = fp;
            o += (size_t)snprintf(seen + o, sizeof(seen) - o, "%s%s (%.16s)", o ? ", " : "", nm, fp);
            if (o >= sizeof(seen)) o = sizeof(seen) - 1;
        }
    }
    if (!fleet_set_circuits(d->f, n, names, fps) && (!d->circuits_seen || strcmp(d->circuits_seen, seen))) {
        flog("claiming circuit jobs for: %s", n ? seen : "none (no circuit with a fingerprint)");
        free(d->circuits_seen);
        d->circuits_seen = strdup(seen);
    }
    json_decref(r);
    proto_close(&cc);
}

/* Reap the slots' clients that exited and end the finished ones (end_one: finish,
 * publish); the count of free slots. *next_try: put off when the store fails. */
static uint32_t reap_slots(struct fleet_daemon *d, uint64_t t, uint64_t *next_try)
{
    uint32_t nfree = 0;

    for (uint32_t i = 0; i < d->n; i++) {
        struct slot *sl = &d->slots[i];
        int st;

        if (sl->pid && waitpid(sl->pid, &st, WNOHANG) == sl->pid) {
            sl->pid = 0;
            sl->finishing = 1;
            sl->rc = WIFEXITED(st) ? WEXITSTATUS(st) : 128;
        }
        if (sl->finishing && t >= *next_try && end_one(d, sl)) *next_try = t + 500;
        if (!sl->pid && !sl->finishing) nfree++;
    }
    return nfree;
}

/* Renew the leases of the partitions the slots hold (held: room for d->n). 0, or the
 * store's error with the retry put off. */
static int renew_held(struct fleet_daemon *d, struct fleet_claim *held, uint64_t t, uint64_t *backoff,
                      uint64_t *next_try)
{
    char err[512];
    int nh = 0, rc;

    for (uint32_t i = 0; i < d->n; i++)
        if (d->slots[i].pid || d->slots[i].finishing) held[nh++] = d->slots[i].c;
    if ((rc = fleet_renew(d->f, d->owner, d->lease_s, held, nh, err, sizeof(err))) < 0) {
        db_error(d, rc, err);
        *next_try = retry_at(backoff, t);
        return rc;
    }
    db_ok(d);
    *backoff = 0;
    return 0;
}

static void *run(void *arg)
{
    struct fleet_daemon *d = arg;
    uint64_t last_renew = 0, backoff = 0, next_try = 0;
    struct fleet_claim *cl = calloc(d->n, sizeof(*cl)), *held = calloc(d->n, sizeof(*held));
    char err[512];

    while (!barrier_load_relaxed(&d->stop) && cl && held) {
        uint64_t t = os_now_ns() / 1000000;
        uint32_t nfree = 0;
        int rc;

        if (!d->recovered) {
            if (t >= next_try && !recover(d))
                d->recovered = 1;
            else if (t >= next_try) {
                next_try = retry_at(&backoff, t);
            }
            usleep(100000);
            continue;
        }
        nfree = reap_slots(d, t, &next_try);
        if (t >= d->next_adopt && t >= next_try) {
            struct adoption c = { .d = d };

            d->next_adopt = t + ADOPT_EVERY_MS;
            if ((rc = fleet_adopt(d->f, d->owner, 0, adopted, &c, err, sizeof(err))) < 0 ||
                (rc = fleet_sweep_gone(d->f, d->owner, err, sizeof(err))) < 0) {
                db_error(d, rc, err);
                next_try = t + 500;
            } else {
                if (rc)
                    flog("removed the spool dirs of %d daemon(s) gone for good from the ended jobs' out dirs",
                         rc);
                db_ok(d);
            }
        }
        if (t - last_renew >= (uint64_t)d->lease_s * 1000 / 3 && t >= next_try &&
            !renew_held(d, held, t, &backoff, &next_try))
            last_renew = t;
        /* Claim only as local room frees: a claimed partition waits in no queue. */
        if (nfree && t >= next_try) {
            int got;

            refresh_circuits(d, t);
            got = fleet_claim(d->f, d->owner, d->lease_s, cl, (int)nfree, err, sizeof(err));
            if (got < 0) {
                db_error(d, got, err);
                next_try = retry_at(&backoff, t);
            } else
                db_ok(d);
            for (int k = 0, i = 0; k < got && i < (int)d->n; i++)
                if (!d->slots[i].pid && !d->slots[i].finishing) {
                    memset(&d->slots[i], 0, sizeof(d->slots[i]));
                    d->slots[i].c = cl[k++];
                    if (d->slots[i].c.input_kind != FLEET_INPUT_PATH)
                        start_circuit(d, &d->slots[i]);
                    else
                        start_one(d, &d->slots[i]);
                }
        }
        usleep(100000);
    }
    /* Stopping: the clients in flight are ended; their leases expire. */
    for (uint32_t i = 0; i < d->n; i++)
        if (d->slots[i].pid) {
            kill(d->slots[i].pid, SIGKILL);
            waitpid(d->slots[i].pid, NULL, 0);
        }
    free(cl);
    free(held);
    return NULL;
}

/* What fleet_daemon_start allocated, freed (its own way out when a step fails). */
static void daemon_free(struct fleet_daemon *d)
{
    fleet_close(d->f);
    free(d->circuits_seen);
    free(d->slots);
    free(d);
}

int fleet_daemon_start(struct fleet_daemon **out, const struct fleet_options *c, const char *cuzk_bin,
                       char *err, size_t errlen)
{
    struct fleet_daemon *d = calloc(1, sizeof(*d));
    char host[128] = "";
    int rc;

    *out = NULL;
    if (!d || !(d->slots = calloc(c->parallel, sizeof(*d->slots)))) {
        free(d);
        snprintf(err, errlen, "fleet: out of memory");
        return -ENOMEM;
    }
    gethostname(host, sizeof(host) - 1);
    /* The owner id: host and instance, so that two cuzkd on one machine differ and a
     * restarted one takes its own place (its old leases simply expire). */
    snprintf(d->owner, sizeof(d->owner), "%s-%s", host, c->instance);
    snprintf(d->cuzk, sizeof(d->cuzk), "%s", cuzk_bin);
    snprintf(d->instance, sizeof(d->instance), "%s", c->instance);
    snprintf(d->run_dir, sizeof(d->run_dir), "%s", c->run_dir);
    d->lease_s = (int)c->lease_s;
    d->n = c->parallel;
    d->store = c->store_proofs;
    snprintf(d->sock, sizeof(d->sock), "%s/%s.sock", c->run_dir, c->instance);
    if ((d->store && (rc = spool_make_priv(d, err, errlen))) ||
        (rc = fleet_open(&d->f, c->queue, err, errlen)) || (fleet_set_stores(d->f, d->store), 0) ||
        (rc = fleet_daemon_hello(d->f, d->owner, host, d->lease_s, err, errlen)) ||
        (rc = -pthread_create(&d->th, NULL, run, d))) {
        if (rc == -EAGAIN) snprintf(err, errlen, "fleet: cannot start its thread");
        daemon_free(d);
        return rc;
    }
    *out = d;
    return 0;
}

void fleet_daemon_stop(struct fleet_daemon *d)
{
    if (!d) return;
    barrier_store_relaxed(&d->stop, 1);
    pthread_join(d->th, NULL);
    daemon_free(d);
}
