/* supervisor.c — cuzkd's event loop (supervisor.h). Single-threaded: every event is
 * a completion on one io_uring; behaviour per event is in the handle_* functions. */
#include "cuzk/supervisor.h"
#include "cuzk/check.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <libgen.h>
#include <dirent.h>
#include <limits.h>
#include <poll.h>
#include <pwd.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/eventfd.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/timerfd.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <liburing.h>

#include "cuzk/child_fsm.h"
#include "cuzk/circuits.h"
#include "cuzk/control.h"
#include "cuzk/display.h"
#include "cuzk/copies.h"
#include "cuzk/error.h"
#include "cuzk/fleet.h"
#include "cuzk/intake.h"
#include "cuzk/metrics_http.h"
#include "cuzk/open_deadline.h"
#include "cuzk/owners.h"
#include "cuzk/pipeline.h"
#include "cuzk/store.h"
#include "cuzk/verify.h"
#include "cuzk/wtns.h"
#include "cuzk/zkey.h"

#define MAX_CHILDREN (PIPE_MAX_WORKERS + PLAN_MAX_NODES + 1)
#define MAX_CONNS 64     /* control connections of ordinary users */
#define RESERVED_CONNS 8 /* more, only for root and cuzkd's own uid */
#define N_CONNS (MAX_CONNS + RESERVED_CONNS)
#define TICK_NS 100000000ull         /* timer period: 100 ms */
#define STOP_GRACE_NS 10000000000ull /* children get 10 s after SIGTERM, then SIGKILL */
#define REPLY_MAX (64u << 20)        /* a connection's unsent replies */
#define RESUME_OPEN_MS 5000u         /* a stored job's out dir may take this long to open */
/* An unfinished request line (its descriptors already queued) may take this long: a
 * client sends one in a single write (a 4096-witness submit is about 1 MB), so 30 s
 * is only reached by one that trickles a byte now and then to hoard descriptors. */
#define LINE_TIMEOUT_NS 30000000000ull

enum ev_type {
	EV_LISTEN = 1,
	EV_CONN,
	EV_CONN_OUT,
	EV_PIDFD,
	EV_SIGNAL,
	EV_TIMER,
	EV_INTAKE,
	EV_CHILD_TIMER,
	EV_DOORBELL
};

/* The doorbell's number in every stage (dup2'd there before exec; --doorbell-fd). */
#define DOORBELL_CHILD_FD 3
#define DOORBELL_CHILD_FD_STR "3"

/* Intakes of one uid that were given up on (--copy-timeout) and still block: past
 * this many its next submit is refused, so a client cannot pile up stuck threads. */
#define STUCK_PER_UID 2

static uint64_t ev_data(enum ev_type t, uint32_t gen, uint32_t idx)
{
	return (uint64_t)t << 56 | (uint64_t)(gen & 0xffffff) << 32 | idx;
}

struct child {
	enum plan_role role;
	uint32_t index;
	const struct plan_place *place;
	pid_t pid; /* 0: not running */
	int pidfd;
	uint32_t gen;        /* poll generation of pidfd */
	uint32_t generation; /* restarts so far; passed as --generation */
	int last_status;
	struct child_fsm fsm; /* its lifecycle: state, backoff, stall (child_fsm.h) */
};

struct conn {
	int fd; /* -1: slot free */
	uint32_t gen;
	struct control_framer fr;
	char *out;
	size_t out_len, out_off;
	int out_armed;
	int in_armed;
	int close_after; /* close once the output is sent */
	/* pending wait */
	int waiting;
	uint32_t wait_slot;
	uint64_t wait_job;
	uint64_t wait_deadline; /* 0: none */
	int drain_wait;
	uid_t uid; /* SO_PEERCRED */
	gid_t gid;
	gid_t *groups; /* SO_PEERGROUPS (control_peer: the out dir check) */
	size_t n_groups;
	int *fds; /* descriptors received, not yet taken by a request */
	uint32_t n_fds;
	int fd_trouble;         /* descriptors were lost (MSG_CTRUNC) or too many queued */
	int privileged;         /* root or cuzkd's own uid: may use the reserved slots */
	uint64_t active_ns;     /* last request byte or reply: --idle-timeout */
	uint64_t line_ns;       /* since when an unfinished line (or descriptors without
				 * their request) waits: closed after LINE_TIMEOUT however
				 * slowly it trickles; 0 none */
	struct intake *pending; /* a submit being checked (intake.h): no other request of
				 * this connection runs, and none is read, until it ends */
	char *defer;            /* lines read behind it, '\n'-separated, run after it */
	size_t defer_len;
};

/* What a job holds while its slot lives: references to cuzkd's copies of its inputs
 * and its out directory's descriptor (pipeline.h, "Inputs by descriptor"): held for
 * the job's whole life, so a stage restarted mid-job still finds them, and dropped
 * when the slot is retired. -1: none. */
struct job_files {
	int zkey_fd, r1cs_fd, out_fd, wgen_fd;
	int *wtns_fd;
	size_t n;
	uint64_t bytes; /* its copies' bytes, counted against its uid's --quota-bytes
			 * until they are dropped (when the job is decided) */
	json_t *dur;    /* the job store on: names of the durable copies it holds
				 * (copies.h), released when the slot retires */
};

/* A connection's queue of received descriptors: a request takes at most this many
 * (a submit: one per witness plus zkey, r1cs, out dir and a few for later inputs). */
#define CONN_FDS_EXTRA 16

struct sup {
	const struct cuzkd_config *c;
	const struct plan *plan;
	struct pipeline pl;
	struct stats_slot *slot;
	const struct fleet_daemon *fleet; /* --queue: its health for status (fleet.h) */
	struct io_uring ring;
	int lfd, sfd, tfd;
	int cfd;         /* timerfd, one-shot: the children's earliest deadline */
	uint64_t cfd_at; /* what cfd is armed for (0: disarmed) */
	struct child_fsm_cfg fsm_cfg;
	char sock_path[sizeof(((struct sockaddr_un *)0)->sun_path)];
	char pid_path[CONFIG_PATH_MAX + 64];
	char bin_dir[CONFIG_PATH_MAX];
	struct child ch[MAX_CHILDREN];
	uint32_t n_ch;
	struct conn conns[N_CONNS];
	int listen_armed;
	uint64_t listen_retry_ns; /* accept hit the descriptor limit: listen again then */
	int spare_fd;             /* /dev/null, closed to accept one connection at the
				   * descriptor limit (to tell it so, or to let root in) */
	uint32_t fd_budget;       /* descriptors all ordinary users may have queued or in
				   * intakes at once: half the limit, the rest is cuzkd's
				   * and the operator's */
	int draining;             /* refuse submits */
	int stopping;             /* shutting down: waiting for in-flight work */
	uint64_t stop_deadline;   /* end of the drain wait */
	int killing;              /* children were sent SIGTERM */
	uint64_t kill_deadline;
	int repush_needed;
	/* private per job slot */
	uint64_t *decided_ns;
	uint8_t *cancelled;
	uid_t *owner;            /* per job slot: who submitted it (SO_PEERCRED; owners.h) */
	json_t *preload_owner;   /* zkey path of each preload -> its owner's uid (owners.h) */
	int ready_fd;            /* daemon mode: tell the launcher we are up */
	uint16_t *crashes;       /* per partition: stage crashes while it held it */
	struct job_files *files; /* per job slot: what it holds (copies, out dir) */
	struct copies copies;    /* cuzkd's copies of client files (copies.h) */
	int copies_dfd;          /* the job store on: STATE_DIR/INSTANCE.copies (copies.h) */
	json_t *dur;             /* durable copy name -> jobs in the table holding it */
	json_t *lost;            /* jobs of a previous cuzkd that died with them */
	int notified;            /* systemd told READY=1 */
	/* The job store (store.h; NULL with --no-store). What was last recorded, so a
	 * tick writes only changes: per partition its store state (REC_UNKNOWN: write
	 * it), per job slot REC_* below. */
	struct store *store;
	uint8_t *rec_part;
	uint8_t *rec_job;
	uint8_t *resumed;        /* per job slot: taken over from a previous cuzkd */
	uint64_t store_err_ns;   /* last logged store failure (one line per 10 s) */
	uint64_t prune_ns;       /* last store_prune (--store-keep-days; hourly) */
	uint64_t prune_uid_ns;   /* last store_prune_per_uid (--store-keep-jobs/-mb; a minute) */
	int intake_fd;           /* eventfd: an intake finished (never closed: a thread given
				 * up on may still write it) */
	struct intake *intakes;  /* every intake not yet freed (intake.h) */
	int doorbell_fd;         /* eventfd the stages write when they decide a job
				 * (pipe_stage_job_try_complete): waiters are answered then,
				 * not at the next tick */
	uint64_t doorbell_rings; /* times it woke us (status --json "doorbell_rings") */
};

#define REC_UNKNOWN 0xff
enum { REC_NONE = 0, REC_RUNNING, REC_FINAL }; /* rec_job: not in the store / running / decided */

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

__attribute__((format(printf, 1, 2))) static void logmsg(const char *fmt, ...)
{
	char buf[1024];
	struct timespec ts;
	struct tm tm;
	va_list ap;

	clock_gettime(CLOCK_REALTIME, &ts);
	localtime_r(&ts.tv_sec, &tm);
	char safe[2048];

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	/* Names and paths in a line are clients' words: no control or bidi character
	 * of theirs reaches the log (display.h). */
	fprintf(stderr, "%02d:%02d:%02d.%03ld cuzkd: %s\n", tm.tm_hour, tm.tm_min, tm.tm_sec,
		ts.tv_nsec / 1000000, display_escape(safe, sizeof(safe), buf));
}

/* ---- io_uring helpers ---------------------------------------------------------- */

static void arm_poll(struct sup *s, int fd, unsigned events, uint64_t data)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(&s->ring);

	if (!sqe) {
		io_uring_submit(&s->ring);
		sqe = io_uring_get_sqe(&s->ring);
	}
	io_uring_prep_poll_add(sqe, fd, events);
	io_uring_sqe_set_data64(sqe, data);
}

static void cancel_poll(struct sup *s, uint64_t data)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(&s->ring);

	if (!sqe) {
		io_uring_submit(&s->ring);
		sqe = io_uring_get_sqe(&s->ring);
	}
	io_uring_prep_poll_remove(sqe, data);
	io_uring_sqe_set_data64(sqe, 0);
}

/* ---- children ------------------------------------------------------------------ */

static const char *child_bin(enum plan_role r)
{
	return r == PLAN_WORKER ? "cuzk-gpuworker" :
		r == PLAN_SYNTH ? "cuzk-synth" :
				  "cuzk-finalizer";
}

static int pidfd_open_(pid_t pid)
{
	return (int)syscall(SYS_pidfd_open, pid, 0);
}

static uint32_t threads_of(const struct sup *s, const struct child *c)
{
	int n = CPU_COUNT(&c->place->cpus);

	if (c->role == PLAN_SYNTH && s->c->synth_threads)
		return s->c->synth_threads;
	return n > 0 ? (uint32_t)n : 1;
}

/* fork + exec one stage, pinned per its place. 0 or -errno (nothing changed; the
 * caller tells its state machine, CHILD_EV_SPAWNED or CHILD_EV_SPAWN_FAILED). */
static int child_start(struct sup *s, struct child *c)
{
	char path[CONFIG_PATH_MAX + 32], idx[16], gen[16], thr[16], delay[16], be[32], pre[16];
	char *argv[20];
	int n = 0, pfd;
	sigset_t none;
	pid_t parent = getpid(), pid;

	snprintf(path, sizeof(path), "%s/%s", s->bin_dir, child_bin(c->role));
	snprintf(idx, sizeof(idx), "%u", c->index);
	snprintf(gen, sizeof(gen), "%u", c->generation);
	snprintf(thr, sizeof(thr), "%u", threads_of(s, c));
	argv[n++] = path;
	argv[n++] = "--instance";
	argv[n++] = (char *)s->c->instance;
	argv[n++] = "--index";
	argv[n++] = idx;
	argv[n++] = "--generation";
	argv[n++] = gen;
	if (c->role != PLAN_FINALIZER) {
		argv[n++] = "--threads";
		argv[n++] = thr;
	}
	if (c->role == PLAN_WORKER) {
		/* CUDA: the plan's device number for this worker (cuda:0,2 -> worker 1 on
		 * device 2), not the worker index. */
		if (s->c->dev_kind == CONFIG_DEV_CUDA && c->place->device >= 0)
			snprintf(be, sizeof(be), "cuda:%d", c->place->device);
		else
			snprintf(be, sizeof(be), "%s",
				 s->c->dev_kind == CONFIG_DEV_CUDA ? "cuda" : "cpu");
		argv[n++] = "--backend";
		argv[n++] = be;
		snprintf(pre, sizeof(pre), "%u", s->c->precompute_mb);
		argv[n++] = "--precompute-mb";
		argv[n++] = pre;
	}
	if (c->role == PLAN_FINALIZER && s->c->test_finalizer_delay_ms) {
		snprintf(delay, sizeof(delay), "%u", s->c->test_finalizer_delay_ms);
		argv[n++] = "--test-trim-delay-ms";
		argv[n++] = delay;
	}
	argv[n++] = "--doorbell-fd";
	argv[n++] = DOORBELL_CHILD_FD_STR;
	argv[n] = NULL;
	sigemptyset(&none);

	pid = fork();
	if (pid < 0) {
		logmsg("fork for %s %u: %s", child_bin(c->role), c->index, strerror(errno));
		return -errno;
	}
	if (pid == 0) {
		/* Child: only async-signal-safe calls until exec. */
		prctl(PR_SET_PDEATHSIG, SIGTERM);
		if (getppid() != parent)
			_exit(CUZK_EXIT_SYSTEM);
		/* The doorbell at DOORBELL_CHILD_FD without CLOEXEC (dup2 clears it; the
		 * same number already: clear it by hand), every other descriptor closed. */
		if (s->doorbell_fd != DOORBELL_CHILD_FD)
			dup2(s->doorbell_fd, DOORBELL_CHILD_FD);
		else
			fcntl(DOORBELL_CHILD_FD, F_SETFD, 0);
		syscall(SYS_close_range, DOORBELL_CHILD_FD + 1, ~0u, 0);
		sigprocmask(SIG_SETMASK, &none, NULL);
		signal(SIGPIPE, SIG_DFL);
		plan_apply(s->plan, c->place); /* unpinned if it fails: still correct */
		execv(path, argv);
		_exit(127);
	}
	pfd = pidfd_open_(pid);
	if (pfd < 0) {
		logmsg("pidfd_open(%d): %s; killing it", (int)pid, strerror(errno));
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
		return -errno;
	}
	c->pid = pid;
	c->pidfd = pfd;
	c->gen++;
	arm_poll(s, pfd, POLLIN, ev_data(EV_PIDFD, c->gen, (uint32_t)(c - s->ch)));
	{
		char cpus[256];

		plan_cpus_str(&c->place->cpus, cpus, sizeof(cpus));
		logmsg("started %s %u (pid %d, generation %u, cpus %s)", child_bin(c->role),
		       c->index, (int)pid, c->generation, cpus);
	}
	return 0;
}

static uint32_t ring_of_state(const struct sup *s, uint32_t st, uint32_t part, uint32_t *rot)
{
	const struct pipe_config *pc = s->pl.config;
	uint32_t nw = pc->n_workers, best = 0, bestn = UINT32_MAX;
	int node = -1, any;

	if (st == JOBTAB_QUEUED)
		return PIPE_RING_SYNTH;
	if (st == JOBTAB_PROVED)
		return PIPE_RING_FINAL(nw);
	/* READY: the least-loaded worker ring (ties rotate) on the node of the partition's
	 * buffer (NUMA routing, route.h: the synth of that node made it for a worker
	 * there); any worker when none is there (a one-share pool: every node's). */
	if (s->pl.data.pool.hdr->n_nodes > 1)
		/* Relaxed: part.buf was published by the CAS to READY, read back in the
		 * scan (jobtab_parts_in_state) that found the state. */
		node = pool_buf_node(&s->pl.data.pool,
				     barrier_load_relaxed(&s->pl.data.jobtab.parts[part].buf));
	any = 1;
	for (uint32_t i = 0; node >= 0 && i < nw; i++)
		if ((int)pc->worker_node[i] == node)
			any = 0;
	for (uint32_t k = 0; k < nw; k++) {
		uint32_t i = (k + (*rot)++) % nw;
		uint32_t n = ring_count(s->pl.data.rings[PIPE_RING_WORKER(i)]);

		if (!any && (int)pc->worker_node[i] != node)
			continue;
		if (n < bestn) {
			bestn = n;
			best = i;
		}
	}
	return PIPE_RING_WORKER(best);
}

static void repush_state(struct sup *s, uint32_t st)
{
	uint32_t max = s->pl.config->max_parts, rot = 0;
	uint32_t *idx = malloc(max * sizeof(*idx));
	int n;

	if (!idx)
		return;
	n = jobtab_parts_in_state(&s->pl.data.jobtab, st, idx, max);
	for (int i = 0; i < n; i++)
		if (ring_try_push(s->pl.data.rings[ring_of_state(s, st, idx[i], &rot)], idx[i]))
			s->repush_needed = 1;
	free(idx);
}

/* ---- fault handling (docs/operations.md, "Failure handling") -------------------------------- */

static enum stats_role stats_role_of(enum plan_role r)
{
	return r == PLAN_WORKER ? STATS_ROLE_GPUWORKER :
		r == PLAN_SYNTH ? STATS_ROLE_SYNTH :
				  STATS_ROLE_FINALIZER;
}

/* The temp files a dead finalizer may have left for partition p: groth16.c writes
 * OUT/<name>.{proof,public}.json.tmp.<pid>.<random>, then renames. Each name with
 * the prefix prefix (".tmp.<pid>." included) in dfd, in turn, to fn; stops when fn
 * returns non-zero. dfd may be an O_PATH descriptor (the client's out dir). */
static void each_temp(int dfd, const char *prefix, int (*fn)(int dfd, const char *name, void *arg),
		      void *arg)
{
	int fd = openat(dfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
	size_t n = strlen(prefix);
	struct dirent *e;

	if (!d) {
		if (fd >= 0)
			close(fd);
		return;
	}
	while ((e = readdir(d)))
		if (!strncmp(e->d_name, prefix, n) && fn(dfd, e->d_name, arg))
			break;
	closedir(d);
}

static int unlink_one(int dfd, const char *name, void *arg)
{
	const char *display = arg;

	if (unlinkat(dfd, name, 0) == 0)
		logmsg("removed %s/%s, left by the dead finalizer", display, name);
	return 0;
}

/* dfd: the out directory (our descriptor of the client's, or one opened by
 * collect_lost); display: its name for the log. */
static void unlink_temps_at(const struct pipeline *pl, int dfd, const char *display, uint32_t p,
			    pid_t pid)
{
	static const char *const kinds[] = { "proof", "public" };
	const struct pipe_partinfo *pi = pipeline_partinfo(pl, p);
	char prefix[PIPE_NAME_LEN + 64];

	for (int k = 0; pi && dfd >= 0 && k < 2; k++) {
		snprintf(prefix, sizeof(prefix), "%s.%s.json.tmp.%d.", pi->name, kinds[k],
			 (int)pid);
		each_temp(dfd, prefix, unlink_one, (void *)display);
	}
}

static int first_name(int dfd, const char *name, void *arg)
{
	(void)dfd;
	snprintf(arg, NAME_MAX + 1, "%s", name);
	return 1;
}

/* cuzkd died between the finalizer's two renames: NAME.proof.json is under its final
 * name, NAME.public.json still under its temp name (both were fsync'd before either
 * rename, groth16_write_pair). With a job store, finish that publish, so that the
 * resume finds a proof that verifies instead of writing the partition a second time.
 * dfd: the out directory, opened by collect_lost only if it is still the one the
 * client passed (device and inode); every name is resolved inside it. */
static void finish_publish(const struct pipeline *pl, int dfd, const char *display, uint32_t p,
			   pid_t pid)
{
	const struct pipe_partinfo *pi = pipeline_partinfo(pl, p);
	char proof[PIPE_NAME_LEN + 32], pre[sizeof(proof) + 32], pub[sizeof(proof)],
		ptmp[NAME_MAX + 1] = "", utmp[NAME_MAX + 1] = "";

	if (!pi || dfd < 0)
		return;
	snprintf(proof, sizeof(proof), "%s.proof.json", pi->name);
	snprintf(pre, sizeof(pre), "%s.tmp.%d.", proof, (int)pid);
	each_temp(dfd, pre, first_name, ptmp);
	snprintf(pub, sizeof(pub), "%s.public.json", pi->name);
	snprintf(pre, sizeof(pre), "%s.tmp.%d.", pub, (int)pid);
	each_temp(dfd, pre, first_name, utmp);
	if (faccessat(dfd, proof, F_OK, AT_SYMLINK_NOFOLLOW) == 0 && !ptmp[0] && utmp[0] &&
	    renameat(dfd, utmp, dfd, pub) == 0)
		logmsg("completed the publish of %s/%s that the dead finalizer had begun", display,
		       pub);
}

static void unlink_temps(const struct sup *s, uint32_t p, pid_t pid)
{
	const struct jobtab *jt = &s->pl.data.jobtab;
	uint32_t j = jt->parts[p].job;

	if (j < jt->hdr->max_jobs)
		unlink_temps_at(&s->pl, s->files[j].out_fd, jt->jobs[j].out_dir, p, pid);
}

/* Partition p (just rolled back, unowned) crashed its stage --max-attempts times: fail
 * it instead of handing it out again. 1 if it is now FAILED. */
static int fail_poison(struct sup *s, const struct child *c, uint32_t p, int status, int hung)
{
	struct jobtab *jt = &s->pl.data.jobtab;
	uint64_t w = jobtab_part_load(jt, p);
	uint32_t st = jobtab_word_state(w), buf = barrier_load_acquire(&jt->parts[p].buf);
	char reason[JOBTAB_REASON_LEN], how[48];

	if (hung)
		snprintf(how, sizeof(how), "hung (no heartbeat)");
	else if (WIFSIGNALED(status))
		snprintf(how, sizeof(how), "signal %d, %s", WTERMSIG(status),
			 strsignal(WTERMSIG(status)));
	else
		snprintf(how, sizeof(how), "exit code %d", WEXITSTATUS(status));
	snprintf(reason, sizeof(reason), "crashed %s %u times (last: %s); not retried",
		 child_bin(c->role), (unsigned)s->crashes[p], how);
	if (jobtab_part_fail(jt, p, st, 0, reason))
		return 0;
	if (st == JOBTAB_READY && buf != JOBTAB_NONE)
		pool_buf_transfer(&s->pl.data.pool, buf, pool_owner_part(p), POOL_OWNER_FREE);
	logmsg("job %llu partition %u FAILED: %s",
	       (unsigned long long)jt->jobs[jt->parts[p].job].id, jt->parts[p].index, reason);
	jobtab_job_try_complete(jt, jt->parts[p].job);
	return 1;
}

/* A previous cuzkd of this instance died (its socket did not answer) and left its
 * segments. Its stages died with it (PR_SET_PDEATHSIG), so nothing works on its table
 * any more and this cuzkd starts a new one (the geometry may differ). Each job that was
 * still running is listed in s->lost; with --no-store it is reported lost, by id (log,
 * `cuzk status`, `wait`/`status ID`), with a store store_start resumes it and drops it
 * from the list. The temp files its finalizer may have left are removed (a publish
 * half done is finished first, with a store); job ids continue after its last.
 * Returns the next job id to use, 0 when there was no table. */
static uint64_t collect_lost(struct sup *s)
{
	struct pipeline old;
	struct jobtab *jt;
	char e[256];
	uint64_t next;
	int rc;

	memset(&old, 0, sizeof(old));
	rc = pipeline_attach(&old, s->c->instance, e, sizeof(e));
	if (rc) {
		/* No segment is the normal case (a clean stop removes them); anything else
		 * means a dead cuzkd's jobs cannot be listed, which the operator must see. */
		if (rc != -ENOENT)
			logmsg("segments of a previous cuzkd unreadable, its jobs cannot be "
			       "reported: %s",
			       e);
		return 0;
	}
	jt = &old.data.jobtab;
	next = barrier_load_relaxed(&jt->hdr->next_job_id);
	for (uint32_t j = 0; j < jt->hdr->max_jobs; j++) {
		const struct jobtab_job *jb = &jt->jobs[j];
		uint32_t d = 0, f = 0;
		int dfd = -1;

		if (jobtab_word_state(barrier_load_acquire(&jt->jobs[j].word)) != JOBTAB_QUEUED)
			continue;
		jobtab_job_counts(jt, j, &d, &f);
		for (uint32_t i = 0; i < jb->n_parts && jb->first_part + i < jt->hdr->max_parts;
		     i++) {
			uint64_t w = jobtab_part_load(jt, jb->first_part + i);

			if (jobtab_word_state(w) == JOBTAB_FINAL && dfd < 0 && jb->out_ino) {
				/* The previous cuzkd's descriptor died with it: open out_dir by
				 * its name only to remove our own temp files, and only if it is
				 * still the directory the client passed (same device and inode);
				 * anything else there is not ours to touch. */
				struct stat od;

				/* A deadline: a hung mount must not keep cuzkd from starting
				 * (its temps then stay; the resume fails that job). */
				dfd = open_deadline(jb->out_dir,
						    O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
							    O_NONBLOCK,
						    RESUME_OPEN_MS, &od);
				if (dfd < 0)
					dfd = -1;
				if (dfd >= 0 &&
				    ((uint64_t)od.st_dev != jb->out_dev ||
				     (uint64_t)od.st_ino != jb->out_ino)) {
					close(dfd);
					dfd = -1;
				}
			}
			if (jobtab_word_state(w) != JOBTAB_FINAL)
				continue;
			if (!s->c->no_store)
				finish_publish(&old, dfd, jb->out_dir, jb->first_part + i,
					       (pid_t)jobtab_word_pid(w));
			unlink_temps_at(&old, dfd, jb->out_dir, jb->first_part + i,
					(pid_t)jobtab_word_pid(w));
		}
		if (dfd >= 0)
			close(dfd);
		if (!s->lost)
			s->lost = json_array();
		json_array_append_new(
			s->lost,
			json_pack("{s:I,s:s,s:s,s:i,s:i,s:i}", "id", (json_int_t)jb->id, "zkey",
				  jb->zkey_path, "out_dir", jb->out_dir, "partitions",
				  (int)jb->n_parts, "done", (int)d, "failed", (int)f));
		if (s->c->no_store)
			logmsg("job %llu LOST: the previous cuzkd (pid %d) died while it ran (%u of "
			       "%u partition(s) done, their proofs are in %s); submit it again",
			       (unsigned long long)jb->id, (int)old.stats.page->supervisor_pid, d,
			       jb->n_parts, jb->out_dir);
		else
			logmsg("job %llu: the previous cuzkd (pid %d) died while it ran (%u of %u "
			       "partition(s) done); the job store resumes it",
			       (unsigned long long)jb->id, (int)old.stats.page->supervisor_pid, d,
			       jb->n_parts);
	}
	pipeline_detach(&old);
	return next;
}

/* "job N was lost ..." when id is one of collect_lost's jobs. */
static int lost_msg(const struct sup *s, uint64_t id, char *m, size_t len)
{
	size_t i;
	json_t *o;

	json_array_foreach (s->lost, i, o)
		if ((uint64_t)json_integer_value(json_object_get(o, "id")) == id) {
			snprintf(m, len,
				 "job %llu was lost: the previous cuzkd died while it was "
				 "running (%lld of %lld partition(s) done); submit it again",
				 (unsigned long long)id,
				 (long long)json_integer_value(json_object_get(o, "done")),
				 (long long)json_integer_value(json_object_get(o, "partitions")));
			return 1;
		}
	return 0;
}

static void child_event(struct sup *s, struct child *c, enum child_event ev, uint64_t t,
			uint64_t arg);

/* The stage of c died (CHILD_ACT_RECLAIM): roll its partitions back (each counts a try
 * when st says CHILD_ACT_CRASH; poison at --max-attempts), free its buffers, re-push
 * hints, and forget its pid. */
static void child_reclaim(struct sup *s, struct child *c, const struct child_step *st, int status)
{
	struct jobtab *jt = &s->pl.data.jobtab;
	uint32_t out[256], rot = 0, total = 0;
	pid_t pid = c->pid;
	int n, freed, crash = !!(st->actions & CHILD_ACT_CRASH);

	do {
		n = jobtab_reclaim_pid(jt, &s->pl.data.pool, pid, out, 256);
		for (int i = 0; i < n; i++) {
			uint32_t pst;

			if (c->role == PLAN_FINALIZER)
				unlink_temps(s, out[i], pid);
			if (crash && s->crashes &&
			    child_fsm_part_crash(&s->crashes[out[i]], s->c->max_attempts) &&
			    fail_poison(s, c, out[i], status, st->hung))
				continue;
			pst = jobtab_word_state(jobtab_part_load(jt, out[i]));

			if (pst == JOBTAB_QUEUED || pst == JOBTAB_READY || pst == JOBTAB_PROVED)
				if (ring_try_push(
					    s->pl.data.rings[ring_of_state(s, pst, out[i], &rot)],
					    out[i]))
					s->repush_needed = 1;
		}
		total += n > 0 ? (uint32_t)n : 0;
	} while (n == 256);
	freed = pool_reclaim_pid(&s->pl.data.pool, pid);
	/* Hints popped but not yet claimed died with it; duplicates are harmless. */
	repush_state(s, JOBTAB_READY);
	repush_state(s, JOBTAB_PROVED);
	if (c->role == PLAN_SYNTH)
		repush_state(s, JOBTAB_QUEUED);
	if (total || freed)
		logmsg("recovered %u partition(s) and %d buffer(s) of pid %d", total, freed,
		       (int)pid);
	if (s->slot)
		stats_counter_add(s->slot, 0, 1);

	close(c->pidfd);
	c->pidfd = -1;
	c->pid = 0;
	c->generation++;
}

/* Arm cfd for the earliest deadline of any child (child_fsm.h: a restart due, a
 * heartbeat to look at), or disarm it when none has one. */
static void child_timer_arm(struct sup *s)
{
	struct itimerspec its = { { 0, 0 }, { 0, 0 } };
	uint64_t at = 0;

	for (uint32_t i = 0; i < s->n_ch; i++) {
		uint64_t d = s->ch[i].fsm.deadline_ns;

		if (d && (!at || d < at))
			at = d;
	}
	if (at == s->cfd_at || s->cfd < 0)
		return;
	its.it_value.tv_sec = (time_t)(at / 1000000000ull);
	its.it_value.tv_nsec = (long)(at % 1000000000ull);
	if (timerfd_settime(s->cfd, TFD_TIMER_ABSTIME, &its, NULL) == 0)
		s->cfd_at = at;
	else
		logmsg("timerfd_settime: %s", strerror(errno));
}

/* One event of child c (child_fsm.h), and the actions its state machine asks for. */
static void child_event(struct sup *s, struct child *c, enum child_event ev, uint64_t t,
			uint64_t arg)
{
	struct child_step st = child_fsm_step(&c->fsm, &s->fsm_cfg, ev, t, arg);

	if (st.actions & CHILD_ACT_KILL) {
		logmsg("%s %u (pid %d): no heartbeat for %.1f s (--stall-timeout %u): SIGKILL and "
		       "restart",
		       child_bin(c->role), c->index, (int)c->pid, (double)st.stale_ns / 1e9,
		       s->c->stall_timeout_s);
		if (c->pid)
			kill(c->pid, SIGKILL);
	}
	if ((st.actions & CHILD_ACT_TERM) && c->pid)
		kill(c->pid, SIGTERM);
	if (st.actions & CHILD_ACT_RECLAIM)
		child_reclaim(s, c, &st, (int)arg);
	if (st.actions & CHILD_ACT_BACKOFF)
		logmsg("%s %u died %u time(s) in a row within 10 s of starting: restarting in "
		       "%.1f s",
		       child_bin(c->role), c->index, c->fsm.fast_deaths, (double)st.delay_ns / 1e9);
	if (st.actions & CHILD_ACT_START)
		child_event(s, c, child_start(s, c) ? CHILD_EV_SPAWN_FAILED : CHILD_EV_SPAWNED,
			    now_ns(), 0);
	child_timer_arm(s);
}

/* The deadline of cfd came: every child whose deadline_ns is past gets CHILD_EV_TIMER,
 * with its heartbeat (the stats slot's, when the slot is this pid's). */
static void child_timers(struct sup *s)
{
	uint64_t exp, t = now_ns();

	(void)!read(s->cfd, &exp, sizeof(exp));
	s->cfd_at = 0; /* one-shot: it fired */
	for (uint32_t i = 0; i < s->n_ch; i++) {
		struct child *c = &s->ch[i];
		struct stats_slot *sl =
			pipeline_stats_slot(&s->pl, stats_role_of(c->role), c->index);
		uint64_t hb = 0;

		if (!c->fsm.deadline_ns || c->fsm.deadline_ns > t)
			continue;
		/* Relaxed: a single word the stage rewrites every 100 ms; a torn view is
		 * impossible (64-bit atomic) and a stale one only delays the verdict. */
		if (c->pid && sl && barrier_load_relaxed(&sl->pid) == c->pid)
			hb = barrier_load_relaxed(&sl->heartbeat_ns);
		child_event(s, c, CHILD_EV_TIMER, t, hb);
	}
	child_timer_arm(s);
}

/* A child is gone: its state machine rolls its partitions back and restarts it. */
static void child_died(struct sup *s, struct child *c, int status)
{
	if (WIFEXITED(status))
		logmsg("%s %u (pid %d) exited with code %d", child_bin(c->role), c->index,
		       (int)c->pid, WEXITSTATUS(status));
	else if (WIFSIGNALED(status))
		logmsg("%s %u (pid %d) killed by signal %d (%s)", child_bin(c->role), c->index,
		       (int)c->pid, WTERMSIG(status), strsignal(WTERMSIG(status)));
	c->last_status = status;
	child_event(s, c, CHILD_EV_EXITED, now_ns(), (uint64_t)(unsigned)status);
}

static void reap(struct sup *s, struct child *c)
{
	int status;
	pid_t r;

	if (!c->pid)
		return;
	r = waitpid(c->pid, &status, WNOHANG);
	if (r == c->pid)
		child_died(s, c, status);
}

/* ---- connections --------------------------------------------------------------- */

/* Close the first n queued descriptors of k and drop them from its queue. */
static void conn_fds_drop(struct conn *k, uint32_t n)
{
	if (n > k->n_fds)
		n = k->n_fds;
	for (uint32_t i = 0; i < n; i++)
		close(k->fds[i]);
	memmove(k->fds, k->fds + n, (k->n_fds - n) * sizeof(*k->fds));
	k->n_fds -= n;
}

static void conn_close(struct sup *s, struct conn *k)
{
	if (k->fd < 0)
		return;
	conn_fds_drop(k, k->n_fds);
	free(k->fds);
	free(k->groups);
	k->fds = NULL;
	k->groups = NULL;
	k->n_groups = 0;
	k->fd_trouble = 0;
	if (k->in_armed)
		cancel_poll(s, ev_data(EV_CONN, k->gen, (uint32_t)(k - s->conns)));
	if (k->out_armed)
		cancel_poll(s, ev_data(EV_CONN_OUT, k->gen, (uint32_t)(k - s->conns)));
	close(k->fd);
	control_framer_free(&k->fr);
	free(k->out);
	k->out = NULL;
	k->out_len = k->out_off = 0;
	free(k->defer);
	k->defer = NULL;
	k->defer_len = 0;
	k->pending = NULL; /* its intake ends on its own and finds the connection gone */
	k->fd = -1;
	k->gen++;
	k->waiting = k->drain_wait = k->in_armed = k->out_armed = k->close_after = 0;
}

static void conn_flush(struct sup *s, struct conn *k)
{
	while (k->out_off < k->out_len) {
		ssize_t w = send(k->fd, k->out + k->out_off, k->out_len - k->out_off,
				 MSG_NOSIGNAL | MSG_DONTWAIT);

		if (w < 0) {
			if (errno == EAGAIN || errno == EWOULDBLOCK) {
				if (!k->out_armed) {
					arm_poll(s, k->fd, POLLOUT,
						 ev_data(EV_CONN_OUT, k->gen,
							 (uint32_t)(k - s->conns)));
					k->out_armed = 1;
				}
				return;
			}
			if (errno == EINTR)
				continue;
			conn_close(s, k);
			return;
		}
		k->out_off += (size_t)w;
	}
	k->out_len = k->out_off = 0;
	k->active_ns = now_ns();
	if (k->close_after)
		conn_close(s, k);
}

/* Queue a reply line (taken: freed here). */
static void conn_reply(struct sup *s, struct conn *k, char *line)
{
	size_t n;
	char *b;

	if (!line)
		line = strdup(
			"{\"ok\":false,\"error\":\"internal\",\"message\":\"out of memory\"}\n");
	if (!line || k->fd < 0) {
		free(line);
		return;
	}
	n = strlen(line);
	if (k->out_len + n > REPLY_MAX) {
		free(line);
		conn_close(s, k); /* a client that never reads */
		return;
	}
	b = realloc(k->out, k->out_len + n);
	if (!b) {
		free(line);
		return;
	}
	memcpy(b + k->out_len, line, n);
	k->out = b;
	k->out_len += n;
	free(line);
	conn_flush(s, k);
}

static void reply_err(struct sup *s, struct conn *k, const char *code, const char *msg)
{
	conn_reply(s, k, control_reply_error(code, msg));
}

/* ---- jobs ---------------------------------------------------------------------- */

static int job_slot(const struct sup *s, uint64_t id, uint32_t *slot)
{
	const struct jobtab *jt = &s->pl.data.jobtab;

	for (uint32_t j = 0; j < jt->hdr->max_jobs; j++) {
		uint64_t w = barrier_load_acquire(&jt->jobs[j].word);

		if (jobtab_word_state(w) != JOBTAB_FREE && jt->jobs[j].id == id) {
			*slot = j;
			return 0;
		}
	}
	return -ENOENT;
}

static uint32_t job_state(const struct sup *s, uint32_t slot)
{
	return jobtab_word_state(barrier_load_acquire(&s->pl.data.jobtab.jobs[slot].word));
}

static int busy(const struct sup *s)
{
	const struct jobtab *jt = &s->pl.data.jobtab;

	for (uint32_t j = 0; j < jt->hdr->max_jobs; j++)
		if (job_state(s, j) == JOBTAB_QUEUED)
			return 1;
	return 0;
}

static int job_has_waiter(const struct sup *s, uint32_t slot)
{
	for (int i = 0; i < N_CONNS; i++)
		if (s->conns[i].fd >= 0 && s->conns[i].waiting && s->conns[i].wait_slot == slot)
			return 1;
	return 0;
}

/* Drop job slot j's copies (a decided job reads no input any more): an idle copy is
 * freed when its last job ends, and the bytes leave its uid's quota. The slot keeps
 * its out dir and durable names until it retires. */
static void job_copies_release(struct sup *s, uint32_t j)
{
	struct job_files *f = &s->files[j];

	copies_put(&s->copies, f->zkey_fd);
	copies_put(&s->copies, f->r1cs_fd);
	copies_put(&s->copies, f->wgen_fd);
	for (size_t i = 0; f->wtns_fd && i < f->n; i++) {
		copies_put(&s->copies, f->wtns_fd[i]);
		f->wtns_fd[i] = -1;
	}
	f->zkey_fd = f->r1cs_fd = f->wgen_fd = -1;
	f->bytes = 0;
}

/* The bytes of f's distinct copies (a resumed job's, for its quota). */
static uint64_t files_bytes(const struct job_files *f)
{
	int one[3] = { f->zkey_fd, f->r1cs_fd, f->wgen_fd };
	uint64_t n = 0;
	struct stat st;

	for (int i = 0; i < 3; i++)
		if (one[i] > 0 && !fstat(one[i], &st))
			n += (uint64_t)st.st_size;
	for (size_t i = 0; f->wtns_fd && i < f->n; i++) {
		size_t k = 0;

		while (k < i && f->wtns_fd[k] != f->wtns_fd[i])
			k++;
		if (k == i && f->wtns_fd[i] > 0 && !fstat(f->wtns_fd[i], &st))
			n += (uint64_t)st.st_size;
	}
	return n;
}

/* The bytes of copies uid's jobs hold now (job_files.bytes). */
static uint64_t uid_bytes(const struct sup *s, uid_t uid)
{
	uint64_t n = 0;

	for (uint32_t j = 0; j < s->pl.data.jobtab.hdr->max_jobs; j++)
		if (s->files[j].bytes && s->owner[j] == uid)
			n += s->files[j].bytes;
	return n;
}

/* The --quota-bytes of uid: 0 (none) for the privileged. */
static uint64_t uid_bytes_quota(const struct sup *s, uid_t uid)
{
	long pages = sysconf(_SC_PHYS_PAGES), psz = sysconf(_SC_PAGESIZE);

	if (owners_privileged(uid))
		return 0;
	if (s->c->quota_bytes)
		return s->c->quota_bytes;
	return pages > 0 && psz > 0 ? (uint64_t)pages * (uint64_t)psz / 4 : 0;
}

/* Drop what job slot j holds (job_files). */
static void job_files_release(struct sup *s, uint32_t j)
{
	struct job_files *f = &s->files[j];

	copies_put(&s->copies, f->zkey_fd);
	copies_put(&s->copies, f->r1cs_fd);
	copies_put(&s->copies, f->wgen_fd);
	for (size_t i = 0; f->wtns_fd && i < f->n; i++)
		copies_put(&s->copies, f->wtns_fd[i]);
	if (f->out_fd > 0)
		close(f->out_fd);
	free(f->wtns_fd);
	json_decref(f->dur); /* the files stay: a later cuzkd resumes from them */
	memset(f, 0, sizeof(*f));
	f->zkey_fd = f->r1cs_fd = f->out_fd = f->wgen_fd = -1;
}

/* Durable copies (copies.h): s->dur counts the jobs in the table that hold each name;
 * the file goes when the last one retires (or is refused). */
static void dur_ref(struct sup *s, const char *name)
{
	json_t *v = json_object_get(s->dur, name);

	json_object_set_new(s->dur, name, json_integer(v ? json_integer_value(v) + 1 : 1));
}

static void dur_unref(struct sup *s, const char *name)
{
	json_t *v = json_object_get(s->dur, name);

	if (v && json_integer_value(v) > 1) {
		json_object_set_new(s->dur, name, json_integer(json_integer_value(v) - 1));
		return;
	}
	json_object_del(s->dur, name);
	if (s->copies_dfd >= 0 && unlinkat(s->copies_dfd, name, 0) && errno != ENOENT)
		logmsg("durable copy %s: cannot remove it: %s", name, strerror(errno));
}

static void dur_release(struct sup *s, json_t *names)
{
	size_t i;
	json_t *v;

	json_array_foreach (names, i, v)
		dur_unref(s, json_string_value(v));
	json_decref(names);
}

/* Retire decided jobs after their waiters were told and the grace period; with
 * force, any decided job without a waiter (the table is full). Returns how many. */
static int retire(struct sup *s, int force)
{
	struct jobtab *jt = &s->pl.data.jobtab;
	uint64_t t = now_ns();
	int n = 0;

	for (uint32_t j = 0; j < jt->hdr->max_jobs; j++) {
		uint32_t st = job_state(s, j);

		if (st != JOBTAB_DONE && st != JOBTAB_FAILED) {
			s->decided_ns[j] = 0;
			continue;
		}
		if (!s->decided_ns[j]) {
			s->decided_ns[j] = t;
			job_copies_release(s, j);
		}
		if (job_has_waiter(s, j))
			continue;
		if (s->store && s->rec_job[j] == REC_RUNNING)
			continue; /* its end is not in the store yet (store_sync) */
		if (!force &&
		    t - s->decided_ns[j] < (uint64_t)s->c->keep_finished_s * 1000000000ull)
			continue;
		if (!jobtab_job_retire(jt, j)) {
			dur_release(s, s->files[j].dur); /* decided and recorded: not resumed */
			s->files[j].dur = NULL;
			job_files_release(s, j);
			s->decided_ns[j] = 0;
			s->cancelled[j] = 0;
			if (s->store) {
				s->rec_job[j] = REC_NONE;
				s->resumed[j] = 0;
			}
			n++;
		}
	}
	return n;
}

/* Move a cancelled job's unowned partitions to FAILED ("cancelled"); owned ones are
 * left to their owner and caught on a later tick. */
static void cancel_sweep(struct sup *s, uint32_t slot)
{
	struct jobtab *jt = &s->pl.data.jobtab;
	struct jobtab_job *jb = &jt->jobs[slot];

	for (uint32_t i = 0; i < jb->n_parts; i++) {
		uint32_t p = jb->first_part + i;
		uint64_t w = jobtab_part_load(jt, p);
		uint32_t st = jobtab_word_state(w), buf;

		if (st != JOBTAB_QUEUED && st != JOBTAB_READY && st != JOBTAB_PROVED)
			continue;
		buf = barrier_load_acquire(&jt->parts[p].buf);
		if (jobtab_part_fail(jt, p, st, jobtab_word_pid(w), "cancelled"))
			continue; /* someone claimed it meanwhile */
		if (st == JOBTAB_READY && buf != JOBTAB_NONE)
			pool_buf_transfer(&s->pl.data.pool, buf, pool_owner_part(p),
					  POOL_OWNER_FREE);
	}
	jobtab_job_try_complete(jt, slot);
}

static void reply_job(struct sup *s, struct conn *k, uint32_t slot)
{
	json_t *o = json_object(),
	       *j = control_job_json(&s->pl.data.jobtab, s->pl.partinfo, slot, 1);

	if (j && s->resumed && s->resumed[slot])
		json_object_set_new(j, "resumed", json_true());
	if (j)
		json_object_set_new(j, "owner", json_integer((json_int_t)s->owner[slot]));

	json_object_set_new(o, "job", j ? j : json_null());
	conn_reply(s, k, control_reply_ok(o));
}

/* ---- the job store (store.h) --------------------------------------------------- */

static enum store_part_state store_state_of(uint32_t st)
{
	switch (st) {
	case JOBTAB_SYNTH:
		return STORE_SYNTHESIZING;
	case JOBTAB_READY:
	case JOBTAB_PROVING:
		return STORE_PROVING;
	case JOBTAB_PROVED:
	case JOBTAB_FINAL:
		return STORE_FINALIZING;
	case JOBTAB_DONE:
		return STORE_DONE;
	case JOBTAB_FAILED:
		return STORE_FAILED;
	default:
		return STORE_QUEUED;
	}
}

/* A job store write that failed: counted (the supervisor's counter "store_errors",
 * which the alert rules watch), logged once per 10 s. */
static void store_log_err(struct sup *s, const char *what, const char *err)
{
	uint64_t t = now_ns();

	if (s->slot)
		stats_counter_add(s->slot, 4, 1);
	if (s->store_err_ns && t - s->store_err_ns < 10000000000ull)
		return;
	s->store_err_ns = t;
	logmsg("%s: %s (retried every tick; proving goes on)", what, err);
}

/* Record every partition state change since the last call, and the jobs decided
 * since, in one transaction per tick (100 ms) whatever the number of partitions,
 * not fsync'd (store.h says why that is enough) and nothing in the stages' path. A job's word is read before its
 * partitions' so that a job recorded decided has its partitions recorded final.
 * When the commit fails, everything is written again next time. */
static void store_sync(struct sup *s)
{
	struct jobtab *jt = &s->pl.data.jobtab;
	char err[512];
	int changed = 0, rc;

	if (!s->store)
		return;
	for (uint32_t j = 0; j < jt->hdr->max_jobs; j++) {
		const struct jobtab_job *jb = &jt->jobs[j];
		uint32_t st;

		if (s->rec_job[j] != REC_RUNNING)
			continue;
		st = job_state(s, j);
		for (uint32_t i = 0; i < jb->n_parts; i++) {
			uint32_t p = jb->first_part + i;
			enum store_part_state ps =
				store_state_of(jobtab_word_state(jobtab_part_load(jt, p)));

			if (s->rec_part[p] == ps)
				continue;
			if (store_part_set(s->store, jb->id, i, ps, jt->parts[p].reason))
				goto fail;
			s->rec_part[p] = (uint8_t)ps;
			changed = 1;
		}
		if (st == JOBTAB_DONE || st == JOBTAB_FAILED) {
			if (store_job_set(s->store, jb->id,
					  st == JOBTAB_DONE ? STORE_JOB_DONE : STORE_JOB_FAILED))
				goto fail;
			s->rec_job[j] = REC_FINAL;
			changed = 1;
		}
	}
	if (!changed)
		return;
	{
		uint64_t t0 = now_ns();

		rc = store_commit(s->store, err, sizeof(err));
		/* The batch's cost (the updates before t0 are in memory; the commit
		 * writes the WAL), shown by cuzk-top / cuzk metrics as store_commits and
		 * store_ns in the supervisor's counters. */
		if (s->slot) {
			stats_counter_add(s->slot, 2, 1);
			stats_counter_add(s->slot, 3, now_ns() - t0);
		}
	}
	if (!rc)
		return;
	store_log_err(s, "job store: recording partition states failed", err);
	goto redo;
fail:
	snprintf(err, sizeof(err), "an update failed");
	store_commit(s->store, err, sizeof(err)); /* ends (or rolls back) the batch */
	store_log_err(s, "job store: recording partition states failed", err);
redo:
	for (uint32_t j = 0; j < jt->hdr->max_jobs; j++) {
		const struct jobtab_job *jb = &jt->jobs[j];

		if (s->rec_job[j] == REC_NONE)
			continue;
		if (s->rec_job[j] == REC_FINAL && job_state(s, j) != JOBTAB_FREE)
			s->rec_job[j] = REC_RUNNING;
		if (s->rec_job[j] == REC_RUNNING)
			memset(&s->rec_part[jb->first_part], REC_UNKNOWN, jb->n_parts);
	}
}

/* The submit as the store keeps it: what a later cuzkd needs to start it again.
 * Version 2 (descriptors): the paths are the client's names (display only, except
 * out_dir, reopened at resume and accepted only as the same directory: "out"); the
 * files are cuzkd's durable copies, by name in STATE_DIR/INSTANCE.copies ("copies");
 * "peer" is who submitted (the out dir must still be theirs to write). */
static char *store_request(const struct control_submit *sub, json_t *copies,
			   const struct control_peer *peer, const struct stat *od)
{
	json_t *parts = json_array(), *groups = json_array(),
	       *cp = json_object_get(copies, "parts"), *o;
	char *t;

	for (size_t i = 0; parts && i < sub->n; i++)
		json_array_append_new(parts,
				      json_pack("{s:s,s:s,s:O,s:s}", "wtns", sub->wtns[i], "name",
						sub->name[i], "copy", json_array_get(cp, i),
						"wtns_id", sub->wtns_id[i]));
	for (size_t i = 0; groups && i < peer->n_groups; i++)
		json_array_append_new(groups, json_integer((json_int_t)peer->groups[i]));
	o = json_pack(
		"{s:i,s:s,s:s,s:s?,s:s?,s:i,s:o,s:{s:I,s:I},s:{s:I,s:I,s:o},s:{s:O,s:O?,s:O?}}",
		"version", 2, "zkey", sub->zkey, "out_dir", sub->out_dir, "r1cs",
		sub->r1cs[0] ? sub->r1cs : NULL, "witness_gen", sub->wgen[0] ? sub->wgen : NULL,
		"priority", (int)sub->priority, "parts", parts, "out", "dev",
		(json_int_t)od->st_dev, "ino", (json_int_t)od->st_ino, "peer", "uid",
		(json_int_t)peer->uid, "gid", (json_int_t)peer->gid, "groups", groups, "copies",
		"zkey", json_object_get(copies, "zkey"), "r1cs", json_object_get(copies, "r1cs"),
		"wgen", json_object_get(copies, "wgen"));
	t = o ? json_dumps(o, JSON_COMPACT) : NULL;
	json_decref(o);
	return t;
}

/* The job store on: keep each of the submit's copies durable (copies.h) before the
 * job is recorded, under the id it will get. *copies: {"zkey","r1cs"?,"wgen"?,
 * "parts":[...]} names; *held: the names, each counted in s->dur. 0, or -errno with
 * err (nothing held, nothing left: a full disk refuses the submit). */
/* The loop's part of a submit's durable copies, which its intake wrote and fsync'd
 * in its own thread (intake_persist): the job holds each name from now on (dur_ref).
 * A shared copy (zkey, r1cs, generator) can have gone between that write and now:
 * the last job holding it retired (dur_unref removes it). Held now, it cannot go
 * any more, so each shared name is checked once (copies_persist finds it in one
 * fstatat) and, in that rare case, written again here. 0, or -errno with err; the
 * caller releases held (dur_release) either way when the submit fails. */
static int take_copies(struct sup *s, const struct control_submit *sub, json_t *held, char *err,
		       size_t errlen)
{
	const struct {
		const char *prefix;
		int fd;
	} sh[] = {
		{ "zkey-", sub->zkey_fd },
		{ "r1cs-", sub->r1cs_fd },
		{ "wgen-", sub->wgen_fd },
	};
	char e[400];
	size_t i;
	json_t *v;
	int rc;

	json_array_foreach (held, i, v)
		dur_ref(s, json_string_value(v));
	json_array_foreach (held, i, v)
		for (size_t j = 0; j < sizeof(sh) / sizeof(sh[0]); j++)
			if (!strncmp(json_string_value(v), sh[j].prefix, 5) &&
			    (rc = copies_persist(s->copies_dfd, sh[j].fd, json_string_value(v), e,
						 sizeof(e))) < 0) {
				snprintf(err, errlen,
					 "the job could not be recorded, so it was not "
					 "accepted: %s",
					 e);
				return rc;
			}
	return 0;
}

/* The public signals of the witness at wtns_path are sig (npub canonical 4-limb
 * values; little-endian limbs are the witness file's byte order). */
static int signals_match(const char *wtns_path, const uint64_t *sig, uint32_t npub)
{
	char err[256];
	wtns w;
	int ok;

	if (wtns_open(&w, wtns_path, err, sizeof(err)))
		return 0;
	ok = w.n8 == 32 && w.nwitness > npub;
	for (uint32_t i = 0; ok && i < npub; i++)
		ok = !memcmp(sig + 4 * (size_t)i, w.values + (size_t)(1 + i) * w.n8, 32);
	wtns_close(&w);
	return ok;
}

/* A partition's proof is already published (a finalizer wrote it before the store
 * heard of it): OUT/NAME.proof.json and .public.json exist, verify against the
 * zkey's key, and the public signals are this partition's witness's (a proof left
 * in the out dir by an earlier job with other witnesses of the same names verifies
 * too). vk: loaded once per job by the caller (NULL: cannot check, redo). */
static int proof_on_disk(const groth16_vk *vk, const char *out_dir, const char *name,
			 const char *wtns_path)
{
	char pp[2 * JOBTAB_PATH_LEN], pub[2 * JOBTAB_PATH_LEN], err[256];
	groth16_proof pr;
	uint64_t *sig = NULL;
	bool valid = false;
	int ok;

	if (!vk)
		return 0;
	snprintf(pp, sizeof(pp), "%s/%s.proof.json", out_dir, name);
	snprintf(pub, sizeof(pub), "%s/%s.public.json", out_dir, name);
	if (access(pp, F_OK) || access(pub, F_OK))
		return 0;
	ok = !groth16_public_from_json(vk, &sig, pub, err, sizeof(err)) &&
		!groth16_proof_from_json(vk, &pr, pp, err, sizeof(err)) &&
		!groth16_verify_proof(vk, &pr, sig, vk->npublic, &valid, err, sizeof(err)) &&
		valid && signals_match(wtns_path, sig, vk->npublic);
	free(sig);
	return ok;
}

struct resume_ctx {
	struct sup *s;
	uint64_t next_id;
	json_t *ids; /* the ids resumed, or left for a later start */
};

/* A resumed job's out directory: reopened by the path the client named, O_DIRECTORY,
 * and accepted only if it is still the directory the client passed (device and inode
 * recorded at submit) and the recorded peer may still write it; a path that now
 * names something else is never followed there. A descriptor, or -1 with why. */
static int reopen_out_dir(json_t *req, const char *out_dir, char *why, size_t len)
{
	json_t *out = json_object_get(req, "out"), *peer = json_object_get(req, "peer"), *g;
	gid_t groups[64];
	struct control_peer pr;
	struct stat st;
	size_t i;
	int fd;

	if (!json_is_object(out) || !json_is_object(peer)) {
		snprintf(why, len, "the job store has no identity for its out dir");
		return -1;
	}
	/* The path is the client's word and is opened with cuzkd's rights: whether it is
	 * absent, unreadable or another directory is not the user's to learn (a path under
	 * /root would tell), so every case reads the same and names only that path. */
	/* With a deadline: a path on a hung mount must not keep cuzkd from starting. */
	fd = open_deadline(out_dir, O_PATH | O_DIRECTORY | O_NOFOLLOW, RESUME_OPEN_MS, &st);
	if (fd == -ETIMEDOUT) {
		snprintf(why, len,
			 "out dir %s did not answer within %u s (a hung file system?): "
			 "submit again once it is back",
			 out_dir, RESUME_OPEN_MS / 1000);
		return -1;
	}
	if (fd < 0 ||
	    (uint64_t)st.st_dev != (uint64_t)json_integer_value(json_object_get(out, "dev")) ||
	    (uint64_t)st.st_ino != (uint64_t)json_integer_value(json_object_get(out, "ino"))) {
		snprintf(why, len,
			 "out dir changed since submit (%s is not the directory passed: "
			 "moved, replaced or gone): submit again",
			 out_dir);
		if (fd >= 0)
			close(fd);
		return -1;
	}
	pr.uid = (uid_t)json_integer_value(json_object_get(peer, "uid"));
	pr.gid = (gid_t)json_integer_value(json_object_get(peer, "gid"));
	pr.n_groups = 0;
	json_array_foreach (json_object_get(peer, "groups"), i, g)
		if (pr.n_groups < sizeof(groups) / sizeof(groups[0]))
			groups[pr.n_groups++] = (gid_t)json_integer_value(g);
	pr.groups = groups;
	if (!control_peer_may_write_dirfd(&pr, fd, &st)) {
		snprintf(why, len, "out dir %s: uid %u may no longer create files there", out_dir,
			 (unsigned)pr.uid);
		close(fd);
		return -1;
	}
	return fd;
}

/* A durable copy (copies.h) of a resumed job into a fresh memfd copy (copies_take):
 * its descriptor (> 2), or -1 with why; name NULL or JSON null: none wanted (0). */
static int reopen_copy(struct sup *s, json_t *name, int shared, const char *what,
		       const char *display, json_t *held, char *why, size_t len)
{
	const char *n = json_string_value(name);
	char e[400];
	int fd, c;

	if (!n)
		return 0;
	fd = copies_open_durable(s->copies_dfd, n);
	if (fd < 0) {
		snprintf(why, len, "%s %s: its durable copy is gone (%s)", what, display,
			 strerror(-fd));
		return -1;
	}
	c = copies_take(&s->copies, fd, shared, what, display, e, sizeof(e));
	close(fd);
	if (c < 0) {
		snprintf(why, len, "%s", e);
		return -1;
	}
	dur_ref(s, n);
	json_array_append_new(held, json_string(n));
	return c;
}

/* One unfinished job of the store: into the table under its own id, before any stage
 * runs (so no stage can claim a partition before it is set): partitions the store has
 * done or failed are set so, those whose proof is on disk and verifies are marked
 * done, the rest are queued. Its files are cuzkd's durable copies and its out dir is
 * reopened only as the very directory the client passed (reopen_out_dir); when either
 * cannot be had, its unfinished partitions fail with the reason, before any stage
 * could open anything for them. */
static int resume_job(void *arg, const struct store_job *sj)
{
	struct resume_ctx *x = arg;
	struct sup *s = x->s;
	struct jobtab *jt = &s->pl.data.jobtab;
	json_t *req = json_loads(sj->request, 0, NULL), *parts, *cps, *held = json_array();
	struct pipe_submit_part *sp = NULL;
	const char *zpath, *out_dir, *r1cs, *wgen;
	groth16_vk vk, *vkp = NULL;
	uint32_t slot, n, found = 0, done = 0, failed = 0;
	int zfd = -1, rfd = -1, gfd = -1, ofd = -1, *wfd = NULL;
	char err[512], why[600] = "";
	int rc;

	if (sj->id >= x->next_id)
		x->next_id = sj->id + 1;
	json_array_append_new(x->ids, json_integer((json_int_t)sj->id));
	parts = json_object_get(req, "parts");
	cps = json_object_get(req, "copies");
	zpath = json_string_value(json_object_get(req, "zkey"));
	out_dir = json_string_value(json_object_get(req, "out_dir"));
	r1cs = json_string_value(json_object_get(req, "r1cs"));
	wgen = json_string_value(json_object_get(req, "witness_gen"));
	n = (uint32_t)json_array_size(parts);
	if (!zpath || !out_dir || !n || n != sj->n_parts || !(sp = calloc(n, sizeof(*sp))) ||
	    !(wfd = calloc(n, sizeof(*wfd)))) {
		logmsg("job %llu in the job store is unreadable (request %.200s): not resumed",
		       (unsigned long long)sj->id, sj->request);
		goto out;
	}
	if (json_integer_value(json_object_get(req, "version")) < 2 || !json_is_object(cps))
		snprintf(why, sizeof(why),
			 "recorded by a cuzkd that kept no copies of its files: "
			 "submit it again");
	/* Its files (none is opened by a client's path); a first failure is the reason. */
	if (!why[0] && (ofd = reopen_out_dir(req, out_dir, why, sizeof(why))) < 0)
		ofd = -1;
	if (!why[0] &&
	    (zfd = reopen_copy(s, json_object_get(cps, "zkey"), 1, "zkey", zpath, held, why,
			       sizeof(why))) <= 0 &&
	    !why[0])
		snprintf(why, sizeof(why), "zkey %s: no durable copy recorded", zpath);
	if (!why[0] && r1cs)
		rfd = reopen_copy(s, json_object_get(cps, "r1cs"), 1, "r1cs", r1cs, held, why,
				  sizeof(why));
	if (!why[0] && wgen &&
	    (gfd = reopen_copy(s, json_object_get(cps, "wgen"), 1, "witness generator", wgen, held,
			       why, sizeof(why))) <= 0 &&
	    !why[0])
		snprintf(why, sizeof(why), "witness generator %s: no durable copy recorded", wgen);
	for (uint32_t i = 0; i < n; i++) {
		json_t *p = json_array_get(parts, i);

		sp[i].wtns_path = json_string_value(json_object_get(p, "wtns"));
		sp[i].name = json_string_value(json_object_get(p, "name"));
		sp[i].r1cs_path = r1cs;
		sp[i].wgen_path = wgen;
		wfd[i] = -1;
		/* a witness the submit named again has one durable copy: one memfd too */
		for (uint32_t k = 0;
		     k < i && !why[0] && sj->state[i] != STORE_DONE && sj->state[i] != STORE_FAILED;
		     k++)
			if (wfd[k] > 0 &&
			    json_equal(json_object_get(p, "copy"),
				       json_object_get(json_array_get(parts, k), "copy")) &&
			    !copies_ref(&s->copies, wfd[k])) {
				wfd[i] = wfd[k];
				break;
			}
		/* a partition already decided needs no copy (and has none after a retire) */
		if (wfd[i] < 0 && !why[0] && sj->state[i] != STORE_DONE &&
		    sj->state[i] != STORE_FAILED &&
		    (wfd[i] = reopen_copy(s, json_object_get(p, "copy"), 0,
					  wgen ? "input" : "witness",
					  sp[i].wtns_path ? sp[i].wtns_path : "?", held, why,
					  sizeof(why))) <= 0 &&
		    !why[0])
			snprintf(why, sizeof(why), "no durable copy of %s recorded",
				 sp[i].wtns_path);
		sp[i].wtns_fd = wfd[i] > 0 ? wfd[i] : -1;
		sp[i].r1cs_fd = rfd > 0 ? rfd : -1;
		sp[i].wgen_fd = gfd > 0 ? gfd : -1;
		if (!sp[i].wtns_path || !sp[i].name) {
			logmsg("job %llu in the job store is unreadable (request %.200s): not "
			       "resumed",
			       (unsigned long long)sj->id, sj->request);
			goto out;
		}
	}
	/* Its own id: ids are the supervisor's alone (relaxed, as in create_segments);
	 * the counter is set back past every id after the resume. */
	barrier_store_relaxed(&jt->hdr->next_job_id, sj->id);
	rc = pipeline_submit_job_fds(
		&s->pl, zpath, zfd > 0 ? zfd : -1, out_dir, ofd,
		json_is_integer(json_object_get(json_object_get(req, "peer"), "uid")) ?
			json_integer_value(json_object_get(json_object_get(req, "peer"), "uid")) :
			-1,
		(int32_t)json_integer_value(json_object_get(req, "priority")), n, sp, now_ns(),
		&slot, err, sizeof(err));
	if (rc == -ENOBUFS) {
		s->repush_needed = 1;
		rc = 0;
	}
	if (rc) {
		logmsg("job %llu not resumed: %s; it stays in the job store for a later start "
		       "(raise --max-jobs/--max-parts)",
		       (unsigned long long)sj->id, err);
		goto out;
	}
	{
		/* The job holds its files from now on (released when its slot retires). */
		struct job_files *f = &s->files[slot];

		job_files_release(s, slot);
		f->zkey_fd = zfd;
		f->r1cs_fd = rfd;
		f->wgen_fd = gfd;
		f->out_fd = ofd;
		f->wtns_fd = wfd;
		f->n = n;
		f->dur = held;
		f->bytes = files_bytes(f);
		zfd = rfd = gfd = ofd = -1;
		wfd = NULL;
		held = NULL;
	}
	if (!why[0] && !wgen) {
		/* The key, to check a proof found on disk (input.json jobs: redone). */
		zkey zk;
		char zerr[256], zp[64];

		snprintf(zp, sizeof(zp), "/proc/self/fd/%d", s->files[slot].zkey_fd);
		if (!zkey_open(&zk, zp, zerr, sizeof(zerr))) {
			if (!groth16_vk_from_zkey(&vk, &zk, zerr, sizeof(zerr)))
				vkp = &vk;
			zkey_close(&zk);
		}
	}
	s->rec_job[slot] = REC_RUNNING;
	s->resumed[slot] = 1;
	s->cancelled[slot] = 0;
	/* The submitter recorded with the request (store_request "peer"): a resumed job
	 * keeps its owner. */
	s->owner[slot] =
		(uid_t)json_integer_value(json_object_get(json_object_get(req, "peer"), "uid"));
	s->decided_ns[slot] = 0;
	for (uint32_t i = 0; i < n; i++) {
		uint32_t p = jt->jobs[slot].first_part + i;
		enum store_part_state ps = sj->state[i];
		char od[64], wp[64];

		snprintf(od, sizeof(od), "/proc/self/fd/%d", s->files[slot].out_fd);
		snprintf(wp, sizeof(wp), "/proc/self/fd/%d", sp[i].wtns_fd);
		s->crashes[p] = 0;
		if (ps == STORE_FAILED) {
			jobtab_part_fail(jt, p, JOBTAB_QUEUED, 0,
					 sj->reason[i] ? sj->reason[i] :
							 "failed (reason not recorded)");
			failed++;
		} else if (ps == STORE_DONE ||
			   (vkp &&
			    proof_on_disk(vkp, od, pipeline_partinfo(&s->pl, p)->name, wp))) {
			jobtab_part_move(jt, p, JOBTAB_QUEUED, 0, JOBTAB_DONE, 0, NULL);
			found += ps != STORE_DONE;
			done++;
			ps = STORE_DONE;
		} else if (why[0]) {
			jobtab_part_fail(jt, p, JOBTAB_QUEUED, 0, why);
			failed++;
			ps = STORE_FAILED;
		} else {
			ps = STORE_QUEUED;
		}
		/* What the store holds now differs from ps where a proof was found or an
		 * unfinished state goes back to queued: let the next sync write it. */
		s->rec_part[p] = ps == sj->state[i] ? (uint8_t)ps : REC_UNKNOWN;
	}
	jobtab_job_try_complete(jt, slot);
	logmsg("job %llu resumed from the job store: %u of %u partition(s) done (%u found "
	       "on disk and verified), %u failed, %u to prove -> %s%s%s",
	       (unsigned long long)sj->id, done, n, found, failed, n - done - failed, out_dir,
	       why[0] ? "; " : "", why);
out:
	if (vkp)
		groth16_vk_free(vkp);
	copies_put(&s->copies, zfd);
	copies_put(&s->copies, rfd);
	copies_put(&s->copies, gfd);
	for (uint32_t i = 0; wfd && i < n; i++)
		copies_put(&s->copies, wfd[i]);
	free(wfd);
	if (ofd >= 0)
		close(ofd);
	dur_release(s, held);
	free(sp);
	json_decref(req);
	return 0;
}

static int dur_keep(void *arg, const char *name)
{
	return json_object_get(((struct sup *)arg)->dur, name) != NULL;
}

/* Open the store and take over its unfinished jobs (before the stages start). The
 * previous cuzkd's table (collect_lost) lists what it was running: those the store
 * resumes are not lost. 0, or 3 with the reason logged (a store that cannot be
 * opened stops cuzkd: silently running without it would lose jobs again). */
/* --store-keep-days: decided jobs leave the store that long after they finished, so
 * the file does not grow with every job ever run. At start, then hourly (from
 * tick): a DELETE of old rows, cheap next to a tick's batch commit. */
static void prune_store(struct sup *s, uint64_t t)
{
	uint64_t n;
	char err[512];

	if (!s->store || !s->c->store_keep_days)
		return;
	s->prune_ns = t;
	if (store_prune(s->store, (int64_t)time(NULL) - (int64_t)s->c->store_keep_days * 86400, &n,
			err, sizeof(err)))
		store_log_err(s, "pruning", err);
	else if (n)
		logmsg("job store: removed %llu decided job(s) finished more than %u day(s) ago "
		       "(--store-keep-days)",
		       (unsigned long long)n, s->c->store_keep_days);
}

/* Each user's decided jobs, bounded by count and bytes (a user submitting many
 * small jobs grew the store for --store-keep-days). A minute apart: fast enough
 * against a burst, rare enough to cost nothing. */
static void prune_store_uid(struct sup *s, uint64_t t)
{
	uint64_t n;
	char err[512];

	s->prune_uid_ns = t;
	if (store_prune_per_uid(s->store, s->c->store_keep_jobs,
				(uint64_t)s->c->store_keep_mb << 20, &n, err, sizeof(err)))
		store_log_err(s, "pruning", err);
	else if (n)
		logmsg("job store: removed %llu decided job(s) beyond a user's "
		       "--store-keep-jobs %u / --store-keep-mb %u",
		       (unsigned long long)n, s->c->store_keep_jobs, s->c->store_keep_mb);
}

static int store_start(struct sup *s, uint64_t next_id)
{
	struct jobtab *jt = &s->pl.data.jobtab;
	struct resume_ctx x = { s, next_id, json_array() };
	char err[1024];
	size_t i;
	json_t *o;
	int rc;

	if ((rc = store_open(&s->store, s->c->state_dir, s->c->instance, err, sizeof(err)))) {
		logmsg("%s", err);
		json_decref(x.ids);
		return CUZK_EXIT_IO;
	}
	/* The durable copies live beside the store, in a directory only cuzkd writes. */
	if ((s->copies_dfd = copies_dir_open(s->c->state_dir, s->c->instance, err, sizeof(err))) <
	    0) {
		logmsg("job store: %s", err);
		json_decref(x.ids);
		return CUZK_EXIT_IO;
	}
	if (store_max_job_id(s->store) >= x.next_id)
		x.next_id = store_max_job_id(s->store) + 1;
	rc = store_each_running(s->store, resume_job, &x, err, sizeof(err));
	if (rc)
		logmsg("%s", err);
	/* Copies no unfinished job refers to (their jobs were decided, or a submit died
	 * half way): removed. Not after a failed scan: a job it missed may need them. */
	if (!rc) {
		int nrm = copies_sweep(s->copies_dfd, dur_keep, s);

		if (nrm > 0)
			logmsg("job store: removed %d durable copies no unfinished job needs", nrm);
	}
	if (x.next_id < 1)
		x.next_id = 1;
	barrier_store_relaxed(&jt->hdr->next_job_id, x.next_id);
	/* The previous cuzkd's jobs that the store knows were resumed, not lost. */
	for (i = 0; s->lost && i < json_array_size(s->lost);) {
		uint64_t id = (uint64_t)json_integer_value(
			json_object_get(json_array_get(s->lost, i), "id"));
		size_t k;
		int known = 0;

		json_array_foreach (x.ids, k, o)
			known |= (uint64_t)json_integer_value(o) == id;
		if (known) {
			json_array_remove(s->lost, i);
			continue;
		}
		logmsg("job %llu LOST: the previous cuzkd died while it ran and the job store "
		       "has no record of it (it ran with --no-store?); submit it again",
		       (unsigned long long)id);
		i++;
	}
	if (s->lost && !json_array_size(s->lost)) {
		json_decref(s->lost);
		s->lost = NULL;
	}
	json_decref(x.ids);
	logmsg("job store %s: next job id %llu", store_path(s->store),
	       (unsigned long long)x.next_id);
	store_sync(s);
	prune_store(s, now_ns());
	return rc ? 3 : 0;
}

/* ---- requests ------------------------------------------------------------------ */

#ifndef CONTROL_E_BUSY
#define CONTROL_E_BUSY "busy" /* --max-queued reached: retry later */
#endif

/* Partitions of running jobs not yet DONE or FAILED (--max-queued counts these). */
static uint32_t unfinished_parts(const struct sup *s)
{
	const struct jobtab *jt = &s->pl.data.jobtab;
	uint32_t n = 0;

	for (uint32_t p = 0; p < jt->hdr->max_parts; p++) {
		uint32_t st = jobtab_word_state(jobtab_part_load(jt, p));

		n += st >= JOBTAB_QUEUED && st < JOBTAB_DONE;
	}
	return n;
}

/* Record a submit in the store under the next job id. 0 or -errno with err. */
static int store_record(struct sup *s, const struct control_submit *sub, json_t *copies,
			const struct control_peer *peer, char *err, size_t errlen)
{
	uint64_t id = barrier_load_relaxed(&s->pl.data.jobtab.hdr->next_job_id);
	const char **names = calloc(sub->n, sizeof(*names));
	struct stat od;
	char *req, e[400];
	uint64_t t0;
	int rc;

	if (fstat(sub->out_fd, &od)) {
		rc = -errno;
		free(names);
		snprintf(err, errlen, "out_dir %s: %s", sub->out_dir, strerror(-rc));
		return rc;
	}
	req = store_request(sub, copies, peer, &od);
	if (!names || !req) {
		free(names);
		free(req);
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	for (size_t i = 0; i < sub->n; i++)
		names[i] = sub->name[i];
	t0 = now_ns();
	rc = store_job_add(s->store, id, req, (uint32_t)sub->n, names, e, sizeof(e));
	if (s->slot) {
		stats_counter_add(s->slot, 2, 1);
		stats_counter_add(s->slot, 3, now_ns() - t0);
	}
	if (rc)
		snprintf(err, errlen, "the job could not be recorded, so it was not accepted: %s",
			 e);
	free(names);
	free(req);
	return rc;
}

/* Refusals a submit gets before and after its intake: draining, the uid's quota.
 * 1 (refused, answered) or 0. */
static int submit_refused(struct sup *s, struct conn *k, uint32_t n_parts)
{
	struct owners_quota q;
	char m[256];
	int rc;

	if (s->draining) {
		reply_err(s, k, CONTROL_E_DRAINING,
			  s->stopping ? "cuzkd is shutting down; "
					"submit to another instance" :
					"cuzkd is draining (not accepting jobs)");
		return 1;
	}
	owners_quota(s->c, &q);
	if ((rc = owners_submit_check(&s->pl.data.jobtab, s->owner, k->uid, n_parts, &q, m,
				      sizeof(m)))) {
		reply_err(s, k, rc == -ENOSPC ? CONTROL_E_FULL : CONTROL_E_QUOTA, m);
		return 1;
	}
	return 0;
}

static void submit_finish(struct sup *s, struct conn *k, struct intake *t);

/* Durable copies an intake wrote that no job took (its submit given up on, its
 * client gone): each goes unless a job holds it (a shared zkey copy, say). */
static void drop_unheld(struct sup *s, json_t *held)
{
	size_t i;
	json_t *v;

	json_array_foreach (held, i, v)
		if (!json_object_get(s->dur, json_string_value(v)) &&
		    unlinkat(s->copies_dfd, json_string_value(v), 0) && errno != ENOENT)
			logmsg("durable copy %s: cannot remove it: %s", json_string_value(v),
			       strerror(errno));
}

/* A submit that will not run: its files, and its durable copies (take_copies). */
static void submit_drop(struct sup *s, struct control_submit *sub, json_t *copies, json_t *held)
{
	json_decref(copies);
	dur_release(s, held);
	control_submit_free(sub, &s->copies);
}

/* Hand request *r (a submit or a preload) and its n_fds descriptors (the first of
 * k's queue) to an intake (intake.h): both are moved into it when it starts; k then
 * waits for its answer (handle_intakes). Refused (answered, nothing moved) when k's
 * uid already has STUCK_PER_UID intakes given up on. */
static void intake_begin(struct sup *s, struct conn *k, struct control_req *r, size_t n_fds)
{
	struct intake *t;
	unsigned stuck = 0;
	int rc;

	for (t = s->intakes; t; t = t->next)
		stuck += t->abandoned && t->uid == k->uid;
	if (stuck >= STUCK_PER_UID) {
		char m[256];

		snprintf(
			m, sizeof(m),
			"busy: %u earlier submit(s) or preload(s) of uid %u are "
			"still stuck reading their files (--copy-timeout %u s passed); submit again once "
			"those reads return",
			stuck, (unsigned)k->uid, s->c->copy_timeout_s);
		reply_err(s, k, CONTROL_E_BUSY, m);
		return;
	}

	t = intake_new(r, k->fds, n_fds, k->uid, k->gid, k->groups, k->n_groups);
	if (!t) {
		reply_err(s, k, CONTROL_E_INTERNAL, "out of memory");
		return;
	}
	/* The descriptors are the intake's now: out of the queue without closing them. */
	memmove(k->fds, k->fds + n_fds, (k->n_fds - n_fds) * sizeof(*k->fds));
	k->n_fds -= (uint32_t)n_fds;
	t->cp = &s->copies;
	t->buf_size = s->pl.config->buf_size;
	t->max_parts = s->pl.config->max_parts;
	t->bytes_quota = uid_bytes_quota(s, k->uid);
	t->bytes_used = t->bytes_quota ? uid_bytes(s, k->uid) : 0;
	t->notify_fd = s->intake_fd;
	/* A dup: the thread may outlive this loop's descriptor (cuzkd stopping). */
	if (s->store && t->r.kind != CONTROL_PRELOAD &&
	    (t->durable_dfd = fcntl(s->copies_dfd, F_DUPFD_CLOEXEC, 0)) < 0) {
		intake_free(t);
		reply_err(s, k, CONTROL_E_INTERNAL,
			  "cannot start the submit's checks: out of "
			  "descriptors");
		return;
	}
	t->conn = (uint32_t)(k - s->conns);
	t->conn_gen = k->gen;
	t->seen_ns = now_ns();
	if ((rc = intake_start(t))) {
		char m[128];

		intake_free(t);
		snprintf(m, sizeof(m), "cannot start the submit's checks: %s", strerror(-rc));
		reply_err(s, k, CONTROL_E_INTERNAL, m);
		return;
	}
	t->next = s->intakes;
	s->intakes = t;
	k->pending = t;
}

/* A submit: its files are checked and copied by an intake (intake.h), off this loop;
 * submit_finish takes it from there. */
static void do_submit(struct sup *s, struct conn *k, struct control_req *r, size_t n_fds)
{
	/* Before anything is copied: a user at its quota costs cuzkd nothing. */
	if (submit_refused(s, k, (uint32_t)r->n_witnesses))
		return;
	intake_begin(s, k, r, n_fds);
}

/* The rest of a submit, in the loop, once its intake checked it (and, with a job
 * store, wrote its durable copies): its submit and copies are consumed. */
static void submit_finish(struct sup *s, struct conn *k, struct intake *t)
{
	const struct control_peer peer = { k->uid, k->gid, k->groups, k->n_groups };
	struct control_submit sub = t->sub, *sub_ = &t->sub;
	struct pipe_submit_part *parts;
	char err[512];
	json_t *copies = t->copies, *held = t->held;
	uint32_t slot;
	int rc;

	memset(sub_, 0, sizeof(*sub_));
	sub_->zkey_fd = sub_->r1cs_fd = sub_->out_fd = sub_->wgen_fd = -1;
	t->copies = t->held = NULL; /* ours now */
	if (!s->store) {
		json_decref(copies);
		json_decref(held);
		copies = held = NULL;
	} else if ((rc = t->dur_rc) || (rc = take_copies(s, &sub, held, err, sizeof(err)))) {
		/* held (NULL when the intake failed: it removed its own) is released: the
		 * job's own copies go, a shared one only if no other job holds it. */
		json_decref(copies);
		dur_release(s, held);
		control_submit_free(&sub, &s->copies);
		reply_err(s, k, CONTROL_E_STORE, t->dur_rc ? t->dur_err : err);
		return;
	}
	/* Again: the table moved while the files were read (other intakes landed). */
	if (submit_refused(s, k, (uint32_t)sub.n)) {
		submit_drop(s, &sub, copies, held);
		return;
	}
	{
		uint64_t q = uid_bytes_quota(s, k->uid), used = q ? uid_bytes(s, k->uid) : 0;
		char m[256];

		if (q && sub.bytes + used > q) {
			snprintf(m, sizeof(m),
				 "quota: this job's files are %.1f MiB and uid %u's unfinished "
				 "jobs hold %.1f MiB of copies; --quota-bytes is %.1f MiB: retry "
				 "when some finish",
				 (double)sub.bytes / 1048576.0, (unsigned)k->uid,
				 (double)used / 1048576.0, (double)q / 1048576.0);
			submit_drop(s, &sub, copies, held);
			reply_err(s, k, CONTROL_E_QUOTA, m);
			return;
		}
	}
	if (s->c->max_queued) {
		uint32_t q = unfinished_parts(s);
		char m[256];

		if (sub.n > s->c->max_queued || q + sub.n > s->c->max_queued) {
			if (sub.n > s->c->max_queued)
				snprintf(m, sizeof(m),
					 "busy: a job of %zu partitions is more than "
					 "this cuzkd queues (--max-queued %u): split it",
					 sub.n, s->c->max_queued);
			else
				snprintf(m, sizeof(m),
					 "busy: %u partition(s) queued or in progress, "
					 "this job's %zu would pass --max-queued %u; retry when "
					 "some finish",
					 q, sub.n, s->c->max_queued);
			submit_drop(s, &sub, copies, held);
			reply_err(s, k, CONTROL_E_BUSY, m);
			return;
		}
	}
	parts = calloc(sub.n, sizeof(*parts));
	if (!parts) {
		submit_drop(s, &sub, copies, held);
		reply_err(s, k, CONTROL_E_INTERNAL, "out of memory");
		return;
	}
	for (size_t i = 0; i < sub.n; i++) {
		parts[i].wtns_path = sub.wtns[i];
		parts[i].r1cs_path = sub.r1cs;
		parts[i].name = sub.name[i];
		parts[i].wgen_path = sub.wgen;
		parts[i].wtns_fd = sub.wtns_fd[i];
		parts[i].r1cs_fd = sub.r1cs_fd;
		parts[i].wgen_fd = sub.wgen_fd;
	}
	/* Durable first: the job and its partitions are committed to the store under
	 * the id the table will give it (ids are the supervisor's alone) before any stage
	 * can see it, so a store that cannot record it (disk full) refuses the submit
	 * with nothing started; and a job the client is told about survives cuzkd. */
	if (s->store && (rc = store_record(s, &sub, copies, &peer, err, sizeof(err)))) {
		free(parts);
		submit_drop(s, &sub, copies, held);
		reply_err(s, k, CONTROL_E_STORE, err);
		return;
	}
	json_decref(copies);
	rc = pipeline_submit_job_fds(&s->pl, sub.zkey, sub.zkey_fd, sub.out_dir, sub.out_fd,
				     (int64_t)k->uid, sub.priority, (uint32_t)sub.n, parts,
				     now_ns(), &slot, err, sizeof(err));
	if (rc == -ENOSPC)
		store_sync(s); /* a decided job is retired only once its end is recorded */
	if (rc == -ENOSPC && retire(s, 1) > 0)
		rc = pipeline_submit_job_fds(&s->pl, sub.zkey, sub.zkey_fd, sub.out_dir, sub.out_fd,
					     (int64_t)k->uid, sub.priority, (uint32_t)sub.n, parts,
					     now_ns(), &slot, err, sizeof(err));
	free(parts);
	if (rc == -ENOBUFS) {
		s->repush_needed = 1;
		rc = 0;
	}
	if (rc && s->store) {
		char e2[512];
		uint64_t id = barrier_load_relaxed(&s->pl.data.jobtab.hdr->next_job_id);

		/* Not started after all: take it out again, so no later cuzkd starts it. */
		if (store_job_delete(s->store, id, e2, sizeof(e2)))
			logmsg("job %llu was refused (%s) but stays in the job store: %s; a later "
			       "cuzkd will run it",
			       (unsigned long long)id, err, e2);
	}
	if (rc) {
		dur_release(s, held);
		reply_err(s, k, rc == -ENOSPC ? CONTROL_E_FULL : CONTROL_E_BAD_REQUEST, err);
	} else {
		uint64_t id = s->pl.data.jobtab.jobs[slot].id;
		struct job_files *f = &s->files[slot];

		if (s->store) {
			s->rec_job[slot] = REC_RUNNING;
			s->resumed[slot] = 0;
			memset(&s->rec_part[s->pl.data.jobtab.jobs[slot].first_part], STORE_QUEUED,
			       sub.n);
		}
		/* The job holds its files from now on (released when its slot retires). */
		job_files_release(s, slot);
		f->zkey_fd = sub.zkey_fd;
		f->r1cs_fd = sub.r1cs_fd;
		f->out_fd = sub.out_fd;
		f->wgen_fd = sub.wgen_fd;
		f->wtns_fd = sub.wtns_fd;
		f->n = sub.n;
		f->bytes = sub.bytes;
		f->dur = held;
		sub.zkey_fd = sub.r1cs_fd = sub.out_fd = sub.wgen_fd = -1;
		sub.wtns_fd = NULL;
		s->cancelled[slot] = 0;
		s->owner[slot] = k->uid;
		s->decided_ns[slot] = 0;
		memset(&s->crashes[s->pl.data.jobtab.jobs[slot].first_part], 0,
		       sub.n * sizeof(*s->crashes));
		logmsg("job %llu: %zu partition(s) of %s -> %s", (unsigned long long)id, sub.n,
		       sub.zkey, sub.out_dir);
		if (s->slot)
			stats_counter_add(s->slot, 1, 1);
		conn_reply(s, k,
			   control_reply_ok(json_pack("{s:I,s:i}", "job", (json_int_t)id,
						      "partitions", (int)sub.n)));
	}
	control_submit_free(&sub, &s->copies);
}

static json_t *children_json(const struct sup *s)
{
	json_t *a = json_array();
	uint64_t t = now_ns();

	for (uint32_t i = 0; i < s->n_ch; i++) {
		const struct child *c = &s->ch[i];
		char cpus[256];
		json_t *o;

		plan_cpus_str(&c->place->cpus, cpus, sizeof(cpus));
		o = json_pack("{s:s,s:i,s:i,s:i,s:i,s:s,s:i}", "stage", plan_role_name(c->role),
			      "index", (int)c->index, "pid", (int)c->pid, "generation",
			      (int)c->generation, "restarts", (int)c->fsm.restarts, "cpus", cpus,
			      "node", c->place->numa_node);
		if (o && c->fsm.state == CHILD_BACKOFF && c->fsm.restart_at_ns)
			json_object_set_new(
				o, "restart_in_ms",
				json_integer(
					c->fsm.restart_at_ns > t ?
						(json_int_t)((c->fsm.restart_at_ns - t) / 1000000) :
						0));
		json_array_append_new(a, o);
	}
	return a;
}

/* The running stages, for the circuits acks (a stage being restarted is left out: it
 * applies the whole table when it starts). */
static size_t live_stages(const struct sup *s, struct circ_live *lv)
{
	size_t n = 0;

	for (uint32_t i = 0; i < s->n_ch; i++) {
		const struct child *c = &s->ch[i];
		enum stats_role r = c->role == PLAN_WORKER ? STATS_ROLE_GPUWORKER :
			c->role == PLAN_SYNTH              ? STATS_ROLE_SYNTH :
							     STATS_ROLE_FINALIZER;

		if (!c->pid)
			continue;
		lv[n].slot = pipeline_stats_slot_index(s->pl.config, r, c->index);
		lv[n].pid = (uint32_t)c->pid;
		lv[n].stage = plan_role_name(c->role);
		lv[n].index = c->index;
		n++;
	}
	return n;
}

static void do_status(struct sup *s, struct conn *k, const struct control_req *r)
{
	const struct jobtab *jt = &s->pl.data.jobtab;
	uint32_t slot;
	json_t *o, *jobs;

	if (r->has_job) {
		if (job_slot(s, r->job, &slot)) {
			char m[256];

			if (!lost_msg(s, r->job, m, sizeof(m)))
				snprintf(m, sizeof(m),
					 "no job %llu (never submitted, or retired %llu s "
					 "after it finished)",
					 (unsigned long long)r->job,
					 (unsigned long long)s->c->keep_finished_s);
			reply_err(s, k, CONTROL_E_NO_JOB, m);
			return;
		}
		reply_job(s, k, slot);
		return;
	}
	jobs = json_array();
	for (uint32_t j = 0; j < jt->hdr->max_jobs; j++) {
		json_t *jj = control_job_json(jt, s->pl.partinfo, j, 0);

		if (jj && s->resumed && s->resumed[j])
			json_object_set_new(jj, "resumed", json_true());
		if (jj)
			json_object_set_new(jj, "owner", json_integer((json_int_t)s->owner[j]));
		if (jj)
			json_array_append_new(jobs, jj);
	}
	o = json_pack("{s:s,s:o,s:o,s:b,s:b,s:i,s:I}", "instance", s->c->instance, "jobs", jobs,
		      "children", children_json(s), "draining", s->draining, "stopping",
		      s->stopping, "pid", (int)getpid(), "doorbell_rings",
		      (json_int_t)s->doorbell_rings);
	{
		uint32_t used = 0, fr = 0;

		pool_node_counts(&s->pl.data.pool, -1, &used, &fr);
		json_object_set_new(o, "pool",
				    json_pack("{s:i,s:i}", "in_use", (int)used, "free", (int)fr));
	}
	{
		/* cuzkd's copies of inputs (copies.h): what they cost in memory now. */
		uint64_t b;
		size_t n = copies_usage(&s->copies, &b);

		json_object_set_new(
			o, "copies",
			json_pack("{s:I,s:I}", "count", (json_int_t)n, "bytes", (json_int_t)b));
	}
	if (s->lost)
		json_object_set(o, "lost_jobs", s->lost);
	if (s->fleet) {
		struct fleet_health h;

		fleet_daemon_health(s->fleet, &h);
		json_object_set_new(o, "fleet",
				    json_pack("{s:b,s:I,s:I}", "db_reachable", h.db_reachable,
					      "db_errors", (json_int_t)h.db_errors, "reconnects",
					      (json_int_t)h.reconnects));
	}
	{
		struct circ_live lv[MAX_CHILDREN];
		size_t n = live_stages(s, lv);

		json_object_set_new(o, "circuits", circuits_json(&s->pl, lv, n));
	}
	conn_reply(s, k, control_reply_ok(o));
}

static void do_wait(struct sup *s, struct conn *k, const struct control_req *r)
{
	uint32_t slot, st;

	if (job_slot(s, r->job, &slot)) {
		char m[256];

		if (!lost_msg(s, r->job, m, sizeof(m)))
			snprintf(m, sizeof(m), "no job %llu (never submitted, or already retired)",
				 (unsigned long long)r->job);
		reply_err(s, k, CONTROL_E_NO_JOB, m);
		return;
	}
	st = job_state(s, slot);
	if (st == JOBTAB_DONE || st == JOBTAB_FAILED ||
	    jobtab_job_try_complete(&s->pl.data.jobtab, slot) == 1) {
		reply_job(s, k, slot);
		return;
	}
	if (k->waiting) {
		reply_err(s, k, CONTROL_E_BAD_REQUEST, "this connection already waits for a job");
		return;
	}
	k->waiting = 1;
	k->wait_slot = slot;
	k->wait_job = r->job;
	k->wait_deadline = r->timeout_ms >= 0 ? now_ns() + (uint64_t)r->timeout_ms * 1000000ull : 0;
}

static void do_cancel(struct sup *s, struct conn *k, const struct control_req *r)
{
	uint32_t slot;

	if (job_slot(s, r->job, &slot)) {
		reply_err(s, k, CONTROL_E_NO_JOB, "no such job");
		return;
	}
	if (!k->privileged && s->owner[slot] != k->uid) {
		char m[160];

		/* status lists every job with its owner: this tells no more than that. */
		snprintf(m, sizeof(m),
			 "job %llu is uid %u's, not uid %u's: only its owner (or "
			 "root, or cuzkd's user) may cancel it",
			 (unsigned long long)r->job, (unsigned)s->owner[slot], (unsigned)k->uid);
		reply_err(s, k, CONTROL_E_NOT_OWNER, m);
		return;
	}
	if (job_state(s, slot) == JOBTAB_QUEUED) {
		char err[512];

		/* Durable before it is answered, as a submit: a restart never revives it. */
		if (s->store && store_job_cancel(s->store, r->job, err, sizeof(err))) {
			reply_err(s, k, CONTROL_E_STORE, err);
			return;
		}
		s->cancelled[slot] = 1;
		cancel_sweep(s, slot);
		logmsg("job %llu: cancelled", (unsigned long long)r->job);
	}
	conn_reply(s, k,
		   control_reply_ok(json_pack("{s:I,s:s}", "job", (json_int_t)r->job, "state",
					      job_state(s, slot) == JOBTAB_QUEUED ? "cancelling" :
										    "decided")));
}

static void do_restart(struct sup *s, struct conn *k, const struct control_req *r)
{
	enum plan_role role = r->stage[0] == 's' ? PLAN_SYNTH :
		r->stage[0] == 'f'               ? PLAN_FINALIZER :
						   PLAN_WORKER;
	json_t *pids = json_array();
	int found = 0;

	for (uint32_t i = 0; i < s->n_ch; i++) {
		struct child *c = &s->ch[i];

		if (c->role != role || (r->has_index && c->index != r->index))
			continue;
		found++;
		if (c->pid) {
			json_array_append_new(pids, json_integer(c->pid));
			logmsg("restart of %s %u (pid %d) requested", child_bin(role), c->index,
			       (int)c->pid);
		}
		child_event(s, c, CHILD_EV_RESTART, now_ns(), 0);
	}
	if (!found) {
		char m[128];

		json_decref(pids);
		snprintf(m, sizeof(m), "no %s %u in this instance", plan_role_name(role), r->index);
		reply_err(s, k, CONTROL_E_BAD_REQUEST, m);
		return;
	}
	conn_reply(s, k, control_reply_ok(json_pack("{s:o}", "stopped", pids)));
}

static void start_stop(struct sup *s, const char *why)
{
	if (s->stopping)
		return;
	logmsg("%s: not accepting jobs; waiting up to %u s for running jobs", why,
	       s->c->drain_timeout_s);
	s->draining = 1;
	s->stopping = 1;
	check_sd_notify("STOPPING=1");
	s->stop_deadline = now_ns() + (uint64_t)s->c->drain_timeout_s * 1000000000ull;
	if (s->listen_armed) {
		cancel_poll(s, ev_data(EV_LISTEN, 0, 0));
		s->listen_armed = 0;
	}
}

/* preload / evict: answered at once; the stages apply it between partitions. */
/* preload / evict, once its zkey is checked (copy >= 0: by an intake; else evict). */
static void circuit_finish(struct sup *s, struct conn *k, const struct control_req *r,
			   const int *fds, size_t n_fds, int copy)
{
	struct circ_live lv[MAX_CHILDREN];
	size_t n = live_stages(s, lv);
	char log[JOBTAB_PATH_LEN + 64] = "", m[JOBTAB_PATH_LEN + 160];
	const char *code = NULL;
	struct owners_quota q;
	char *line;

	owners_quota(s->c, &q);
	if (owners_preload_check(s->pl.circuits, s->preload_owner, k->uid, r->kind == CONTROL_EVICT,
				 r->zkey, q.preloads, &code, m, sizeof(m))) {
		copies_put(&s->copies, copy); /* -1: none */
		reply_err(s, k, code, m);
		return;
	}
	line = circuits_request(&s->pl, r, fds, n_fds, &s->copies, copy, lv, n, log, sizeof(log));
	if (log[0]) { /* accepted */
		logmsg("%s", log);
		owners_preload_note(s->preload_owner, r->kind == CONTROL_EVICT, r->zkey, k->uid);
	}
	conn_reply(s, k, line);
}

/* preload: the zkey is copied by an intake, like a submit's (a preload's read can
 * block as long); evict opens nothing. The owner checks run before and again after. */
static void do_circuit(struct sup *s, struct conn *k, struct control_req *r, size_t n_fds)
{
	struct owners_quota q;
	const char *code = NULL;
	char m[JOBTAB_PATH_LEN + 160];

	if (r->kind != CONTROL_PRELOAD) {
		circuit_finish(s, k, r, k->fds, n_fds, -1);
		return;
	}
	owners_quota(s->c, &q);
	if (owners_preload_check(s->pl.circuits, s->preload_owner, k->uid, 0, r->zkey, q.preloads,
				 &code, m, sizeof(m))) {
		reply_err(s, k, code, m);
		return;
	}
	intake_begin(s, k, r, n_fds);
}

static void do_drain(struct sup *s, struct conn *k)
{
	if (!s->draining)
		logmsg("drain requested: not accepting jobs");
	s->draining = 1;
	if (!busy(s))
		conn_reply(s, k, control_reply_ok(json_pack("{s:b}", "drained", 1)));
	else
		k->drain_wait = 1;
}

struct line_ctx {
	struct sup *s;
	struct conn *k;
};

static int on_line(void *arg, const char *line, size_t len)
{
	struct line_ctx *x = arg;
	struct sup *s = x->s;
	struct conn *k = x->k;
	struct control_req r;
	struct control_err e;

	if (line && k->pending) {
		/* Behind a submit still being checked: run in order once it ends. At most
		 * one read's worth waits here (handle_conn_in stops reading meanwhile). */
		char *d = realloc(k->defer, k->defer_len + len + 1);

		if (!d) {
			conn_close(s, k);
			return 1;
		}
		memcpy(d + k->defer_len, line, len);
		d[k->defer_len + len] = '\n';
		k->defer = d;
		k->defer_len += len + 1;
		return 0;
	}
	if (!line) {
		char m[96];

		snprintf(m, sizeof(m), "request line longer than %d bytes: dropped",
			 CONTROL_LINE_MAX);
		conn_fds_drop(k, k->n_fds);
		reply_err(s, k, CONTROL_E_TOO_LONG, m);
		return k->fd < 0;
	}
	if (control_parse(line, len, &r, &e)) {
		/* Whatever it passed came with its bytes: do not let a later request
		 * take them as its own. */
		conn_fds_drop(k, k->n_fds);
		reply_err(s, k, e.code, e.message);
		return k->fd < 0;
	}
	/* The request's descriptors: the first r.n_fds of the queue (control.h). */
	if (r.n_fds && (k->fd_trouble || r.n_fds > k->n_fds)) {
		char m[256];

		if (k->fd_trouble)
			snprintf(m, sizeof(m),
				 "descriptors were lost on this connection (more "
				 "than a request may pass, or a truncated SCM_RIGHTS): reconnect");
		else
			snprintf(m, sizeof(m),
				 "the request says \"fds\":%u but %u descriptor(s) "
				 "came with it: send them over SCM_RIGHTS with the request's bytes",
				 r.n_fds, k->n_fds);
		conn_fds_drop(k, k->n_fds);
		k->fd_trouble = 0;
		reply_err(s, k, CONTROL_E_BAD_REQUEST, m);
		control_req_free(&r);
		return k->fd < 0;
	}
	switch (r.kind) {
	case CONTROL_SUBMIT:
		do_submit(s, k, &r, r.n_fds);
		break; /* moves r */
	case CONTROL_STATUS:
		do_status(s, k, &r);
		break;
	case CONTROL_WAIT:
		do_wait(s, k, &r);
		break;
	case CONTROL_CANCEL:
		do_cancel(s, k, &r);
		break;
	case CONTROL_RESTART:
	case CONTROL_DRAIN:
	case CONTROL_SHUTDOWN:
		/* They act on every user's work: the operator's (root, cuzkd's user) alone. */
		if (!k->privileged) {
			char m[160];

			snprintf(m, sizeof(m),
				 "uid %u may not %s cuzkd: only root or cuzkd's own "
				 "user may",
				 (unsigned)k->uid,
				 r.kind == CONTROL_RESTART       ? "restart a stage of" :
					 r.kind == CONTROL_DRAIN ? "drain" :
								   "shut down");
			reply_err(s, k, CONTROL_E_NOT_PERMITTED, m);
			break;
		}
		if (r.kind == CONTROL_RESTART)
			do_restart(s, k, &r);
		else if (r.kind == CONTROL_DRAIN)
			do_drain(s, k);
		else {
			conn_reply(s, k, control_reply_ok(json_pack("{s:b}", "shutting_down", 1)));
			start_stop(s, "shutdown requested");
		}
		break;
	case CONTROL_PRELOAD:
	case CONTROL_EVICT:
		do_circuit(s, k, &r, r.n_fds);
		break; /* a preload moves r */
	}
	/* What the request needed of them is copied or duplicated: close the client's. */

	if (k->fd >= 0)
		conn_fds_drop(k, r.n_fds);
	control_req_free(&r);
	return k->fd < 0;
}

static int peer_allowed(const struct sup *s, int fd, char *why, size_t len)
{
	struct ucred cr;
	socklen_t sl = sizeof(cr);

	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &sl)) {
		snprintf(why, len, "cannot read peer credentials: %s", strerror(errno));
		return 0;
	}
	if (cr.uid == 0 || cr.uid == geteuid())
		return 1;
	if (s->c->have_gid) {
		struct passwd *pw = getpwuid(cr.uid);
		gid_t groups[256];
		int ng = 256;

		if (cr.gid == s->c->gid)
			return 1;
		if (pw && getgrouplist(pw->pw_name, pw->pw_gid, groups, &ng) >= 0)
			for (int i = 0; i < ng; i++)
				if (groups[i] == s->c->gid)
					return 1;
	}
	snprintf(why, len, "uid %u may not use this cuzkd (same user, root%s%s only)",
		 (unsigned)cr.uid, s->c->have_gid ? " or group " : "", s->c->group);
	return 0;
}

/* A slot for a new connection of uid, or NULL with why set: ordinary users share
 * MAX_CONNS slots, at most --conns-per-uid each; root and cuzkd's own uid may also
 * take the RESERVED_CONNS others, so a crowd of idle connections never locks them out. */
static struct conn *conn_slot(struct sup *s, uid_t uid, int priv, char *why, size_t len)
{
	struct conn *k = NULL;
	uint32_t mine = 0, ordinary = 0;

	for (int i = 0; i < N_CONNS; i++) {
		struct conn *c = &s->conns[i];

		if (c->fd < 0) {
			if (!k)
				k = c;
			continue;
		}
		if (c->uid == uid)
			mine++;
		if (!c->privileged)
			ordinary++;
	}
	if (!priv && mine >= s->c->conns_per_uid) {
		snprintf(why, len, "busy: too many connections for uid %u (--conns-per-uid %u)",
			 (unsigned)uid, s->c->conns_per_uid);
		return NULL;
	}
	if (!k || (!priv && ordinary >= MAX_CONNS)) {
		snprintf(why, len, "busy: too many control connections (%d); retry",
			 priv ? N_CONNS : MAX_CONNS);
		return NULL;
	}
	return k;
}

/* The peer's supplementary groups (SO_PEERGROUPS, Linux 4.13): the out directory
 * check counts them as the kernel would for the client. None when unreadable: then
 * only its owner and other bits can admit it (refusing, never the reverse). */
static void conn_groups(struct conn *k)
{
	socklen_t len = 64 * sizeof(gid_t);

	for (int tries = 0; tries < 2; tries++) {
		gid_t *g = malloc(len ? len : sizeof(gid_t));

		if (!g)
			return;
		if (!getsockopt(k->fd, SOL_SOCKET, SO_PEERGROUPS, g, &len)) {
			k->groups = g;
			k->n_groups = len / sizeof(gid_t);
			return;
		}
		free(g);
		if (errno != ERANGE)
			return;
	}
}

static void handle_listen(struct sup *s)
{
	for (;;) {
		int fd = accept4(s->lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		struct conn *k = NULL;
		struct ucred cr;
		socklen_t sl = sizeof(cr);
		char why[160];
		int priv;

		if (fd < 0 && (errno == EMFILE || errno == ENFILE)) {
			/* At the descriptor limit the pending connection stays pending, so the
			 * listener is ready again at once: re-arming it spun the loop at 93%
			 * CPU. The spare descriptor lets one connection in: root's is served
			 * (the operator gets through), another is told why and closed. Then
			 * the listener rests until the next tick. */
			if (s->spare_fd >= 0) {
				close(s->spare_fd);
				s->spare_fd = -1;
				fd = accept4(s->lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
			}
			if (fd >= 0 &&
			    (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &sl) ||
			     !(cr.uid == 0 || cr.uid == geteuid()))) {
				char *m = control_reply_error("busy",
							      "cuzkd is out of descriptors: "
							      "retry later");

				if (m)
					(void)!send(fd, m, strlen(m), MSG_NOSIGNAL | MSG_DONTWAIT);
				free(m);
				close(fd);
				fd = -1;
			}
			if (fd < 0) {
				if (s->spare_fd < 0)
					s->spare_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
				s->listen_retry_ns = now_ns() + TICK_NS;
				return; /* not re-armed: the tick does */
			}
			/* root's: served below; the spare is reopened when descriptors free */
			s->listen_retry_ns = now_ns() + TICK_NS;
		}
		if (fd < 0)
			break;
		if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &sl)) {
			close(fd);
			continue;
		}
		priv = cr.uid == 0 || cr.uid == geteuid();
		if (!(k = conn_slot(s, cr.uid, priv, why, sizeof(why)))) {
			char *m = control_reply_error("busy", why);

			if (m)
				(void)!send(fd, m, strlen(m), MSG_NOSIGNAL | MSG_DONTWAIT);
			free(m);
			close(fd);
			continue;
		}
		k->fd = fd;
		k->uid = cr.uid;
		k->gid = cr.gid;
		conn_groups(k);
		k->privileged = priv;
		k->active_ns = now_ns();
		memset(&k->fr, 0, sizeof(k->fr));
		if (!peer_allowed(s, fd, why, sizeof(why))) {
			k->close_after = 1;
			reply_err(s, k, CONTROL_E_PERM, why);
			continue;
		}
		arm_poll(s, fd, POLLIN, ev_data(EV_CONN, k->gen, (uint32_t)(k - s->conns)));
		k->in_armed = 1;
	}
	if (!s->stopping) {
		arm_poll(s, s->lfd, POLLIN, ev_data(EV_LISTEN, 0, 0));
		s->listen_armed = 1;
	}
}

/* Queue the descriptors that came with one recvmsg. A connection holds at most
 * max_parts + CONN_FDS_EXTRA unclaimed: beyond that (or when the kernel truncated
 * them) they are closed and the connection's next request with descriptors is
 * refused, since the queue no longer lines up with the requests. */
/* Descriptors queued on connections, and held by intakes being checked, of uid
 * (any ordinary uid when all is set). */
static uint32_t fds_held(const struct sup *s, uid_t uid, int all)
{
	uint32_t n = 0;

	for (int i = 0; i < N_CONNS; i++)
		if (s->conns[i].fd >= 0 && !s->conns[i].privileged &&
		    (all || s->conns[i].uid == uid))
			n += s->conns[i].n_fds;
	for (const struct intake *t = s->intakes; t; t = t->next)
		if (!owners_privileged(t->uid) && (all || t->uid == uid))
			n += (uint32_t)t->n_fds;
	return n;
}

static void conn_fds_take(struct sup *s, struct conn *k, struct msghdr *mh)
{
	const uint32_t cap = s->pl.config->max_parts + CONN_FDS_EXTRA;
	/* An ordinary uid holds at most two requests' worth over all its connections
	 * (one being checked, the next queued), and all of them together half the
	 * descriptor limit: 8 connections x 4112 descriptors reached the limit, and
	 * then root got no answer either. Root and cuzkd's uid are not counted. */
	uint32_t uid_n = k->privileged ? 0 : fds_held(s, k->uid, 0),
		 all_n = k->privileged ? 0 : fds_held(s, 0, 1);

	if (mh->msg_flags & MSG_CTRUNC)
		k->fd_trouble = 1;
	for (struct cmsghdr *c = CMSG_FIRSTHDR(mh); c; c = CMSG_NXTHDR(mh, c)) {
		size_t nf;
		int *in;

		if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
			continue;
		nf = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		in = (int *)CMSG_DATA(c);
		for (size_t i = 0; i < nf; i++) {
			int fd;

			memcpy(&fd, &in[i], sizeof(fd));
			if (!k->privileged && (uid_n >= 2 * cap || all_n >= s->fd_budget))
				k->fd_trouble = 1;
			uid_n++;
			all_n++;
			if (k->fd_trouble || k->n_fds >= cap) {
				k->fd_trouble = 1;
				close(fd);
				continue;
			}
			if (!k->fds && !(k->fds = malloc(cap * sizeof(*k->fds)))) {
				k->fd_trouble = 1;
				close(fd);
				continue;
			}
			k->fds[k->n_fds++] = fd;
		}
	}
}

static void handle_conn_in(struct sup *s, struct conn *k)
{
	char buf[16384];
	struct line_ctx x = { s, k };
	uint32_t gen = k->gen;

	k->in_armed = 0;
	for (;;) {
		union {
			struct cmsghdr h;
			char b[CMSG_SPACE(253 * sizeof(int))]; /* SCM_MAX_FD per message */
		} cb;
		struct iovec iov = { buf, sizeof(buf) };
		struct msghdr mh = { .msg_iov = &iov,
				     .msg_iovlen = 1,
				     .msg_control = cb.b,
				     .msg_controllen = sizeof(cb.b) };
		ssize_t n = recvmsg(k->fd, &mh, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);

		if (n > 0)
			conn_fds_take(s, k, &mh);

		if (n == 0 ||
		    (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) {
			/* Peer closed. Replies still queued are dropped with it. */
			conn_close(s, k);
			return;
		}
		if (n < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		k->active_ns = now_ns();
		if (control_framer_feed(&k->fr, buf, (size_t)n, on_line, &x) || k->fd < 0 ||
		    k->gen != gen)
			return;
		if (!k->fr.len && !k->n_fds)
			k->line_ns = 0;
		else if (!k->line_ns)
			k->line_ns = k->active_ns;
		if (k->pending)
			return; /* read again once its submit ends (conn_resume) */
	}
	arm_poll(s, k->fd, POLLIN, ev_data(EV_CONN, k->gen, (uint32_t)(k - s->conns)));
	k->in_armed = 1;
}

/* A connection's submit ended: run the lines that waited behind it, then read again. */
static void conn_resume(struct sup *s, struct conn *k)
{
	struct line_ctx x = { s, k };
	uint32_t gen = k->gen;

	while (k->fd >= 0 && k->gen == gen && !k->pending && k->defer_len) {
		size_t n = (size_t)((char *)memchr(k->defer, '\n', k->defer_len) - k->defer);
		char *line = malloc(n + 1);

		if (!line) {
			conn_close(s, k);
			return;
		}
		memcpy(line, k->defer, n);
		line[n] = '\0';
		k->defer_len -= n + 1;
		memmove(k->defer, k->defer + n + 1, k->defer_len);
		on_line(&x, line, n);
		free(line);
	}
	if (k->fd >= 0 && k->gen == gen && !k->pending && !k->in_armed) {
		arm_poll(s, k->fd, POLLIN, ev_data(EV_CONN, k->gen, (uint32_t)(k - s->conns)));
		k->in_armed = 1;
	}
}

/* The connection an intake answers, or NULL when it closed meanwhile. */
static struct conn *intake_conn(struct sup *s, const struct intake *t)
{
	struct conn *k = &s->conns[t->conn];

	return k->fd >= 0 && k->gen == t->conn_gen && k->pending == t ? k : NULL;
}

/* EV_INTAKE: answer each finished intake's client, free those given up on. */
static void handle_intakes(struct sup *s)
{
	uint64_t n;

	(void)!read(s->intake_fd, &n, sizeof(n));
	for (struct intake **pp = &s->intakes; *pp;) {
		struct intake *t = *pp;
		struct conn *k;

		if (!intake_done(t)) {
			pp = &t->next;
			continue;
		}
		*pp = t->next;
		if (t->held && (t->abandoned || !intake_conn(s, t)))
			drop_unheld(s, t->held);
		if (t->abandoned) {
			logmsg("a %s of uid %u given up on (--copy-timeout) ended after all",
			       t->r.kind == CONTROL_PRELOAD ? "preload" : "submit",
			       (unsigned)t->uid);
		} else if ((k = intake_conn(s, t))) {
			k->pending = NULL;
			k->active_ns = now_ns();
			if (t->rc)
				reply_err(s, k, t->e.code, t->e.message);
			else if (t->r.kind == CONTROL_PRELOAD) {
				circuit_finish(s, k, &t->r, NULL, 0, t->copy_fd);
				t->copy_fd = -1; /* taken: pinned, or put on refusal */
			} else
				submit_finish(s, k, t);
			intake_free(t);
			conn_resume(s, k);
			continue;
		}
		intake_free(t);
	}
}

/* --copy-timeout: an intake whose copies read nothing for that long fails its
 * submit; its thread is left to end on its own (intake.h). */
static void check_intakes(struct sup *s, uint64_t t_ns)
{
	const uint64_t limit = (uint64_t)s->c->copy_timeout_s * 1000000000ull;

	for (struct intake *t = s->intakes; t; t = t->next) {
		uint64_t b = intake_bytes(t);
		struct conn *k;
		char m[384];

		if (t->abandoned || intake_done(t))
			continue;
		if (b != t->seen_bytes) {
			t->seen_bytes = b;
			t->seen_ns = t_ns;
			continue;
		}
		if (!limit || t_ns - t->seen_ns < limit)
			continue;
		t->abandoned = 1;
		logmsg("a %s of uid %u read nothing of its files for %u s (%llu bytes in "
		       "all): refused; its reads are left to end on their own",
		       t->r.kind == CONTROL_PRELOAD ? "preload" : "submit", (unsigned)t->uid,
		       s->c->copy_timeout_s, (unsigned long long)b);
		if (!(k = intake_conn(s, t)))
			continue;
		k->pending = NULL;
		snprintf(m, sizeof(m),
			 "%s: no byte of its files could be read for %u s "
			 "(--copy-timeout; %llu bytes read in all): is one on a filesystem whose "
			 "reads block (a FUSE mount, a hung NFS server)? Copy the files to a local "
			 "disk and try again",
			 t->r.kind == CONTROL_PRELOAD ? "preload" : "submit", s->c->copy_timeout_s,
			 (unsigned long long)b);
		reply_err(s, k, CONTROL_E_BAD_INPUT, m);
		conn_resume(s, k);
	}
}

/* ---- periodic work ------------------------------------------------------------- */

static void stop_children(struct sup *s)
{
	s->killing = 1;
	s->kill_deadline = now_ns() + STOP_GRACE_NS;
	/* SIGTERM, cuzkd's own: no try counted; no restart after (child_fsm.h) */
	for (uint32_t i = 0; i < s->n_ch; i++)
		child_event(s, &s->ch[i], CHILD_EV_SHUTDOWN, now_ns(), 0);
	logmsg("stopping the stages");
}

static int children_alive(const struct sup *s)
{
	for (uint32_t i = 0; i < s->n_ch; i++)
		if (s->ch[i].pid)
			return 1;
	return 0;
}

/* The instance's shared figures, for viewers that map only the stats segment (the
 * data segment is 0600): ring depths, pool use, jobs and partitions by state, as
 * gauges of the supervisor's slot. Names are set once in publish_gauge_names. */
enum {
	G_RING_SYNTH,
	G_RING_FINAL,
	G_RING_W0,
	G_POOL_USED = G_RING_W0 + PIPE_MAX_WORKERS,
	G_POOL_FREE,
	G_JOBS_RUNNING,
	G_JOBS_DONE,
	G_JOBS_FAILED,
	G_PARTS0,
	G_NODE0 = G_PARTS0 + 8,
	G_MAX_NODES = (STATS_MAX_GAUGES - G_NODE0) / 2,
};
_Static_assert(G_NODE0 + 2 * G_MAX_NODES <= STATS_MAX_GAUGES, "gauge map fits");

static void publish_gauge_names(struct sup *s)
{
	static const char *const parts[8] = { "parts_queued",  "parts_synth",  "parts_ready",
					      "parts_proving", "parts_proved", "parts_final",
					      "parts_done",    "parts_failed" };
	const struct pool_hdr *ph = s->pl.data.pool.hdr;
	char n[STATS_NAME_LEN];

	stats_slot_name_gauge(s->slot, G_RING_SYNTH, "ring_synth");
	stats_slot_name_gauge(s->slot, G_RING_FINAL, "ring_final");
	for (uint32_t i = 0; i < s->pl.config->n_workers; i++) {
		snprintf(n, sizeof(n), "ring_worker%u", (unsigned)(uint8_t)i);
		stats_slot_name_gauge(s->slot, G_RING_W0 + i, n);
	}
	stats_slot_name_gauge(s->slot, G_POOL_USED, "pool_used");
	stats_slot_name_gauge(s->slot, G_POOL_FREE, "pool_free");
	stats_slot_name_gauge(s->slot, G_JOBS_RUNNING, "jobs_running");
	stats_slot_name_gauge(s->slot, G_JOBS_DONE, "jobs_done");
	stats_slot_name_gauge(s->slot, G_JOBS_FAILED, "jobs_failed");
	for (uint32_t k = 0; k < 8; k++)
		stats_slot_name_gauge(s->slot, G_PARTS0 + k, parts[k]);
	for (uint32_t k = 0; ph->n_nodes > 1 && k < ph->n_nodes && k < G_MAX_NODES; k++) {
		snprintf(n, sizeof(n), "pool_n%u_used", k);
		stats_slot_name_gauge(s->slot, G_NODE0 + 2 * k, n);
		snprintf(n, sizeof(n), "pool_n%u_free", k);
		stats_slot_name_gauge(s->slot, G_NODE0 + 2 * k + 1, n);
	}
}

static void publish_gauges(struct sup *s)
{
	const struct jobtab *jt = &s->pl.data.jobtab;
	const struct pool *pool = &s->pl.data.pool;
	uint64_t g[STATS_MAX_GAUGES] = { 0 };
	uint32_t used, fr, nw = s->pl.config->n_workers;

	g[G_RING_SYNTH] = ring_count(pipeline_ring(&s->pl, PIPE_RING_SYNTH));
	g[G_RING_FINAL] = ring_count(pipeline_ring(&s->pl, PIPE_RING_FINAL(nw)));
	for (uint32_t i = 0; i < nw; i++)
		g[G_RING_W0 + i] = ring_count(pipeline_ring(&s->pl, PIPE_RING_WORKER(i)));
	if (pool_node_counts(pool, -1, &used, &fr) == 0) {
		g[G_POOL_USED] = used;
		g[G_POOL_FREE] = fr;
	}
	for (uint32_t k = 0; pool->hdr->n_nodes > 1 && k < pool->hdr->n_nodes && k < G_MAX_NODES;
	     k++)
		if (pool_node_counts(pool, (int)k, &used, &fr) == 0) {
			g[G_NODE0 + 2 * k] = used;
			g[G_NODE0 + 2 * k + 1] = fr;
		}
	/* Relaxed loads: a display snapshot; each word is read once. */
	for (uint32_t j = 0; j < jt->hdr->max_jobs; j++) {
		uint32_t st = jobtab_word_state(barrier_load_relaxed(&jt->jobs[j].word));

		g[G_JOBS_RUNNING] += st == JOBTAB_QUEUED;
		g[G_JOBS_DONE] += st == JOBTAB_DONE;
		g[G_JOBS_FAILED] += st == JOBTAB_FAILED;
	}
	for (uint32_t p = 0; p < jt->hdr->max_parts; p++) {
		uint32_t st = jobtab_word_state(barrier_load_relaxed(&jt->parts[p].word));

		if (st >= JOBTAB_QUEUED && st <= JOBTAB_FAILED)
			g[G_PARTS0 + st - JOBTAB_QUEUED]++;
	}
	stats_gauges_set(s->slot, 0, g, STATS_MAX_GAUGES);
}

/* Every stage has started and written its pid into its stats slot. */
static int stages_up(const struct sup *s)
{
	for (uint32_t i = 0; i < s->n_ch; i++) {
		const struct child *c = &s->ch[i];
		enum stats_role r = c->role == PLAN_WORKER ? STATS_ROLE_GPUWORKER :
			c->role == PLAN_SYNTH              ? STATS_ROLE_SYNTH :
							     STATS_ROLE_FINALIZER;
		struct stats_slot *sl = pipeline_stats_slot(&s->pl, r, c->index);

		if (!c->pid || !sl ||
		    atomic_load_explicit(&sl->pid, memory_order_acquire) != c->pid)
			return 0;
	}
	return 1;
}

/* systemd (Type=notify): READY=1 once every stage is up, STOPPING=1 on shutdown. */
static void notify_systemd(struct sup *s)
{
	char msg[320];

	if (s->notified || s->stopping || !stages_up(s))
		return;
	s->notified = 1;
	snprintf(msg, sizeof(msg), "READY=1\nSTATUS=%u worker(s) %s, %u synth, 1 finalizer up",
		 s->plan->n_workers, s->c->devices, s->plan->n_synth);
	if (check_sd_notify(msg) < 0)
		logmsg("sd_notify to $NOTIFY_SOCKET failed: %s", strerror(errno));
}

/* Clients waiting on a job (`cuzk prove --wait`, `cuzk wait`) whose job is decided,
 * retired or past its --timeout, or cuzkd going down; and drains that are done. From
 * the tick and from the doorbell (EV_DOORBELL: a stage decided a job). */
static void answer_waiters(struct sup *s, uint64_t t)
{
	for (int i = 0; i < N_CONNS; i++) {
		struct conn *k = &s->conns[i];

		if (k->fd < 0)
			continue;
		if (k->waiting) {
			uint32_t st = job_state(s, k->wait_slot);

			if (st == JOBTAB_DONE || st == JOBTAB_FAILED) {
				k->waiting = 0;
				reply_job(s, k, k->wait_slot);
			} else if (st == JOBTAB_FREE) {
				k->waiting = 0;
				reply_err(s, k, CONTROL_E_NO_JOB, "the job was retired");
			} else if (k->wait_deadline && t >= k->wait_deadline) {
				char m[96];

				k->waiting = 0;
				snprintf(m, sizeof(m), "job %llu is still running",
					 (unsigned long long)k->wait_job);
				reply_err(s, k, CONTROL_E_TIMEOUT, m);
			} else if (s->killing) {
				k->waiting = 0;
				reply_err(s, k, CONTROL_E_DRAINING,
					  "cuzkd is shutting down before "
					  "the job finished");
			}
		}
		if (k->fd >= 0 && k->drain_wait && !busy(s)) {
			k->drain_wait = 0;
			conn_reply(s, k, control_reply_ok(json_pack("{s:b}", "drained", 1)));
		}
	}
}

static void tick(struct sup *s)
{
	struct jobtab *jt = &s->pl.data.jobtab;
	uint64_t t = now_ns();
	uint64_t exp;

	(void)!read(s->tfd, &exp, sizeof(exp));
	notify_systemd(s);
	if (s->slot) {
		stats_slot_heartbeat(s->slot, t);
		publish_gauges(s);
	}
	/* Decide jobs (the finalizer does; this covers a finalizer that died between
	 * its last DONE and its try_complete) and sweep cancels. */
	for (uint32_t j = 0; j < jt->hdr->max_jobs; j++) {
		if (job_state(s, j) != JOBTAB_QUEUED)
			continue;
		if (s->cancelled[j])
			cancel_sweep(s, j);
		else
			jobtab_job_try_complete(jt, j);
	}
	if (s->repush_needed) {
		s->repush_needed = 0;
		repush_state(s, JOBTAB_QUEUED);
		repush_state(s, JOBTAB_READY);
		repush_state(s, JOBTAB_PROVED);
	}
	answer_waiters(s, t);
	for (int i = 0; i < N_CONNS; i++) {
		struct conn *k = &s->conns[i];

		/* --idle-timeout: no request outstanding (a wait, drain or submit being
		 * checked is not idle). */
		if (k->fd >= 0 && !k->waiting && !k->drain_wait && !k->pending &&
		    s->c->idle_timeout_s && t > k->active_ns &&
		    t - k->active_ns >= (uint64_t)s->c->idle_timeout_s * 1000000000ull)
			conn_close(s, k);
		/* A line that never ends, however it trickles (its descriptors held). */
		else if (k->fd >= 0 && !k->pending && !k->privileged && k->line_ns &&
			 t > k->line_ns && t - k->line_ns >= LINE_TIMEOUT_NS)
			conn_close(s, k);
	}
	if (s->listen_retry_ns && t >= s->listen_retry_ns && !s->stopping) {
		s->listen_retry_ns = 0;
		if (s->spare_fd < 0)
			s->spare_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
		arm_poll(s, s->lfd, POLLIN, ev_data(EV_LISTEN, 0, 0));
		s->listen_armed = 1;
	}
	check_intakes(s, t);
	store_sync(s);
	if (s->store && t - s->prune_uid_ns >= 60ull * 1000000000ull)
		prune_store_uid(s, t);
	if (t - s->prune_ns >= 3600ull * 1000000000ull)
		prune_store(s, t);
	retire(s, 0);
	/* Restarts and stall checks are not here: each child's deadline arms cfd
	 * (child_timer_arm). Shutdown progress. */
	if (s->stopping && !s->killing && (!busy(s) || t >= s->stop_deadline)) {
		if (busy(s))
			logmsg("drain timeout (%u s): stopping with jobs still running",
			       s->c->drain_timeout_s);
		stop_children(s);
	}
	if (s->killing && children_alive(s) && t >= s->kill_deadline) {
		for (uint32_t i = 0; i < s->n_ch; i++)
			if (s->ch[i].pid) {
				logmsg("%s %u (pid %d) ignored SIGTERM for %llu s: SIGKILL",
				       child_bin(s->ch[i].role), s->ch[i].index, (int)s->ch[i].pid,
				       STOP_GRACE_NS / 1000000000ull);
				kill(s->ch[i].pid, SIGKILL);
			}
		s->kill_deadline = t + STOP_GRACE_NS;
	}
}

static void handle_signal(struct sup *s)
{
	struct signalfd_siginfo si;

	while (read(s->sfd, &si, sizeof(si)) == (ssize_t)sizeof(si)) {
		if (si.ssi_signo == SIGTERM || si.ssi_signo == SIGINT)
			start_stop(s, si.ssi_signo == SIGTERM ? "SIGTERM" : "SIGINT");
		else if (si.ssi_signo == SIGCHLD)
			for (uint32_t i = 0; i < s->n_ch; i++)
				reap(s, &s->ch[i]);
	}
}

/* ---- setup and teardown -------------------------------------------------------- */

static int mkdir_p(const char *dir, mode_t mode)
{
	char buf[CONFIG_PATH_MAX];

	snprintf(buf, sizeof(buf), "%s", dir);
	for (char *p = buf + 1; *p; p++)
		if (*p == '/') {
			*p = '\0';
			if (mkdir(buf, 0755) && errno != EEXIST)
				return -errno;
			*p = '/';
		}
	if (mkdir(buf, mode) && errno != EEXIST)
		return -errno;
	return 0;
}

/* The run directory holds the socket and pid file: create it with mode, or accept an
 * existing one only if it is a real directory (lstat: not a symlink) owned by our euid
 * that no one else can write to or enter (no group write, nothing for others). 0 or a
 * message in err. */
static int trusted_run_dir(const char *dir, mode_t mode, char *err, size_t errlen)
{
	struct stat st;
	int rc;

	if ((rc = mkdir_p(dir, mode))) {
		snprintf(err, errlen, "%s", strerror(-rc));
		return rc;
	}
	if (lstat(dir, &st)) {
		snprintf(err, errlen, "%s", strerror(errno));
		return -errno;
	}
	if (S_ISLNK(st.st_mode) || !S_ISDIR(st.st_mode)) {
		snprintf(err, errlen,
			 "is %s, not a directory; refusing it (remove it, or pass "
			 "another --run-dir)",
			 S_ISLNK(st.st_mode) ? "a symlink" : "not a directory");
		return -ENOTDIR;
	}
	if (st.st_uid != geteuid()) {
		snprintf(err, errlen,
			 "is owned by uid %u, not by this daemon's uid %u; refusing it "
			 "(another user could replace the socket or pid file)",
			 (unsigned)st.st_uid, (unsigned)geteuid());
		return -EPERM;
	}
	if (st.st_mode & 0027) {
		snprintf(err, errlen,
			 "has mode %04o: group-writable or open to others; refusing it "
			 "(chmod %04o it, or pass another --run-dir)",
			 (unsigned)(st.st_mode & 07777), (unsigned)mode);
		return -EPERM;
	}
	return 0;
}

/* With --group, the group's members must reach the socket: a run dir made earlier
 * 0700 (a first start without group, a hand-made one) is opened to the group (0750:
 * ours, so that is the mode trusted_run_dir would have created), and each directory
 * above it that a member could not pass is named, once, instead of failing silently
 * at every client's connect. */
static void group_reach(const struct cuzkd_config *c)
{
	char p[CONFIG_PATH_MAX], *slash;
	struct stat st;

	if (!stat(c->run_dir, &st) && !(st.st_mode & S_IXGRP)) {
		if (chmod(c->run_dir, (st.st_mode & 07777) | S_IRGRP | S_IXGRP))
			fprintf(stderr,
				"cuzkd: run directory %s is mode %04o and cannot be opened to group "
				"%s (%s): its members cannot reach the socket\n",
				c->run_dir, (unsigned)(st.st_mode & 07777), c->group,
				strerror(errno));
		else
			fprintf(stderr,
				"cuzkd: run directory %s was mode %04o: made %04o so that group %s "
				"reaches the socket\n",
				c->run_dir, (unsigned)(st.st_mode & 07777),
				(unsigned)((st.st_mode & 07777) | S_IRGRP | S_IXGRP), c->group);
	}
	snprintf(p, sizeof(p), "%s", c->run_dir);
	while ((slash = strrchr(p, '/')) && slash != p) {
		*slash = '\0';
		if (stat(p, &st))
			continue;
		/* Others' x lets everyone through; the group's x only this group's members
		 * (or the owner's, when it is the daemon's uid, which members are not). */
		if (!(st.st_mode & S_IXOTH) && !((st.st_mode & S_IXGRP) && st.st_gid == c->gid)) {
			fprintf(stderr,
				"cuzkd: warning: members of group %s cannot reach the socket: %s "
				"(mode %04o, group %u) does not let them through\n",
				c->group, p, (unsigned)(st.st_mode & 07777), (unsigned)st.st_gid);
			break;
		}
	}
}

/* Is another cuzkd answering on this socket? */
static int socket_live(const char *path)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0), live;

	if (fd < 0)
		return 0;
	snprintf(a.sun_path, sizeof(a.sun_path), "%s", path);
	live = connect(fd, (struct sockaddr *)&a, sizeof(a)) == 0;
	close(fd);
	return live;
}

static int listen_socket(struct sup *s, char *err, size_t errlen)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	int fd;

	if (strlen(s->c->run_dir) + strlen(s->c->instance) + 7 > sizeof(a.sun_path)) {
		snprintf(err, errlen,
			 "socket path %.200s/%s.sock is longer than %zu bytes: "
			 "choose a shorter --run-dir",
			 s->c->run_dir, s->c->instance, sizeof(a.sun_path) - 1);
		return -ENAMETOOLONG;
	}
	if (snprintf(s->sock_path, sizeof(s->sock_path), "%s/%s.sock", s->c->run_dir,
		     s->c->instance) >= (int)sizeof(s->sock_path))
		return -ENAMETOOLONG; /* checked above */
	if (socket_live(s->sock_path)) {
		snprintf(err, errlen,
			 "instance \"%s\" is already running (%s answers); stop it "
			 "first or choose another --instance",
			 s->c->instance, s->sock_path);
		s->sock_path[0] = '\0';
		return -EADDRINUSE;
	}
	unlink(s->sock_path); /* stale, from a daemon that was killed */
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		snprintf(err, errlen, "socket: %s", strerror(errno));
		return -errno;
	}
	memcpy(a.sun_path, s->sock_path, strlen(s->sock_path) + 1);
	if (bind(fd, (struct sockaddr *)&a, sizeof(a)) || listen(fd, 64)) {
		snprintf(err, errlen, "%s: %s", s->sock_path, strerror(errno));
		close(fd);
		s->sock_path[0] = '\0';
		return -errno;
	}
	chmod(s->sock_path, 0660);
	if (s->c->have_gid && chown(s->sock_path, (uid_t)-1, s->c->gid))
		logmsg("chgrp %s %s: %s", s->c->group, s->sock_path, strerror(errno));
	s->lfd = fd;
	return 0;
}

/* RUN/INSTANCE.pid, created O_EXCL|O_NOFOLLOW: an existing one is removed only if it
 * is a regular file naming a dead process (a symlink or anything else planted there is
 * refused, never followed). 0 or a message in err. */
static int write_pid_file(struct sup *s, char *err, size_t errlen)
{
	char buf[32];
	struct stat st;
	int fd, n;

	snprintf(s->pid_path, sizeof(s->pid_path), "%s/%s.pid", s->c->run_dir, s->c->instance);
	if (lstat(s->pid_path, &st) == 0) {
		long old = 0;

		if (!S_ISREG(st.st_mode)) {
			snprintf(err, errlen,
				 "pid file %.900s is %s, not a regular file; refusing it",
				 s->pid_path, S_ISLNK(st.st_mode) ? "a symlink" : "special");
			s->pid_path[0] = '\0';
			return -EEXIST;
		}
		fd = open(s->pid_path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
		n = fd >= 0 ? (int)read(fd, buf, sizeof(buf) - 1) : -1;
		if (fd >= 0)
			close(fd);
		if (n > 0) {
			buf[n] = '\0';
			old = strtol(buf, NULL, 10);
		}
		if (old > 0 && old != (long)getpid() &&
		    (kill((pid_t)old, 0) == 0 || errno == EPERM)) {
			snprintf(err, errlen,
				 "instance \"%.100s\" is already running (pid file %.700s "
				 "names process %ld); stop it first or choose another --instance",
				 s->c->instance, s->pid_path, old);
			s->pid_path[0] = '\0';
			return -EEXIST;
		}
		if (unlink(s->pid_path) && errno != ENOENT) {
			snprintf(err, errlen, "stale pid file %.900s: %s", s->pid_path,
				 strerror(errno));
			s->pid_path[0] = '\0';
			return -errno;
		}
		logmsg("removed a stale pid file %s", s->pid_path);
	}
	fd = open(s->pid_path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
	if (fd < 0) {
		snprintf(err, errlen, "pid file %.900s: %s", s->pid_path, strerror(errno));
		s->pid_path[0] = '\0';
		return -EEXIST;
	}
	n = snprintf(buf, sizeof(buf), "%d\n", (int)getpid());
	if (write(fd, buf, (size_t)n) != n || fsync(fd)) {
		snprintf(err, errlen, "pid file %.900s: %s", s->pid_path, strerror(errno));
		close(fd);
		unlink(s->pid_path);
		s->pid_path[0] = '\0';
		return -EIO;
	}
	close(fd);
	return 0;
}

static void find_bin_dir(struct sup *s)
{
	char exe[PATH_MAX];
	ssize_t n;

	if (s->c->bin_dir[0]) {
		snprintf(s->bin_dir, sizeof(s->bin_dir), "%s", s->c->bin_dir);
		return;
	}
	n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (n <= 0) {
		snprintf(s->bin_dir, sizeof(s->bin_dir), ".");
		return;
	}
	exe[n] = '\0';
	snprintf(s->bin_dir, sizeof(s->bin_dir), "%s", dirname(exe));
}

static int create_segments(struct sup *s, char *err, size_t errlen)
{
	struct pipe_params pp;
	struct pool_slab_report rep;
	uint64_t next_id;
	int rc;

	memset(&pp, 0, sizeof(pp));
	pp.n_workers = s->plan->n_workers;
	pp.n_synth = s->plan->n_synth;
	pp.max_jobs = s->c->max_jobs;
	pp.max_parts = s->c->max_parts;
	pp.buf_count = s->c->buffers;
	pp.buf_size = config_buf_bytes(s->c);
	pp.long_call_s = s->c->long_call_timeout_s;
	pp.write_timeout_s = s->c->write_timeout_s;
	pp.max_attempts = s->c->max_attempts;
	/* One pool share per node that the plan gives buffers to (in proportion to its
	 * workers), bound to that node. */
	pp.n_nodes = 0;
	for (uint32_t k = 0; k < s->plan->n_nodes && pp.n_nodes < POOL_MAX_NODES; k++)
		if (s->plan->node_buffers[k]) {
			pp.numa_node[pp.n_nodes] = s->plan->node_os[k];
			pp.node_buf_count[pp.n_nodes++] = s->plan->node_buffers[k];
		}
	if (pp.n_nodes < 2) {
		pp.n_nodes = 1;
		memset(pp.node_buf_count, 0, sizeof(pp.node_buf_count));
	}
	/* Each stage's node, for the synths' routing (route.h). */
	for (uint32_t i = 0; i < s->plan->n_places; i++) {
		const struct plan_place *pl = &s->plan->places[i];

		if (pl->role == PLAN_WORKER && pl->index < PIPE_MAX_WORKERS)
			pp.worker_node[pl->index] = pl->numa_node;
		else if (pl->role == PLAN_SYNTH && pl->index < PIPE_MAX_WORKERS)
			pp.synth_node[pl->index] = pl->numa_node;
	}
	/* REPLACE: the socket check above showed no live instance of this name, so
	 * segments left by a killed daemon are stale: report its jobs lost first. */
	next_id = collect_lost(s);
	rc = pipeline_create(&s->pl, s->c->instance, &pp, SEGMENT_REPLACE, err, errlen);
	if (rc)
		return rc;
	if (next_id)
		/* Relaxed: only this process allocates ids. */
		barrier_store_relaxed(&s->pl.data.jobtab.hdr->next_job_id, next_id);
	pool_slab_setup(&s->pl.data.pool, s->plan->fake ? POOL_SLAB_NO_MBIND : 0, &rep, NULL);
	logmsg("segments cuzk-%s.{data,stats}: %u buffer(s) of %u MiB%s%s%s", s->c->instance,
	       s->c->buffers, s->c->buffer_mb, rep.locked ? ", locked" : "",
	       rep.huge ? ", huge pages" : "", rep.numa_bound ? ", NUMA-bound" : "");
	if (rep.reason[0])
		logmsg("buffers: %s", rep.reason);
	s->slot = pipeline_stats_slot(&s->pl, STATS_ROLE_SUPERVISOR, 0);
	if (s->slot) {
		stats_slot_start(s->slot, STATS_ROLE_SUPERVISOR, 0, getpid(), now_ns());
		stats_slot_name_counter(s->slot, 0, "deaths");
		stats_slot_name_counter(s->slot, 1, "submits");
		stats_slot_name_counter(s->slot, 2, "store_commits");
		stats_slot_name_counter(s->slot, 3, "store_ns");
		stats_slot_name_counter(s->slot, 4, "store_errors");
		publish_gauge_names(s);
	}
	return 0;
}

/* Daemon mode: fork; the parent waits for a byte on a pipe (0 ok) and exits with it. */
static int daemonize(struct sup *s)
{
	int p[2];
	pid_t pid;

	if (pipe2(p, O_CLOEXEC))
		return -errno;
	pid = fork();
	if (pid < 0)
		return -errno;
	if (pid > 0) {
		unsigned char code = CUZK_EXIT_IO;

		close(p[1]);
		if (read(p[0], &code, 1) != 1)
			code = CUZK_EXIT_IO;
		_exit(code);
	}
	close(p[0]);
	setsid();
	s->ready_fd = p[1];
	return 0;
}

static void tell_launcher(struct sup *s, unsigned char code)
{
	if (s->ready_fd >= 0) {
		(void)!write(s->ready_fd, &code, 1);
		close(s->ready_fd);
		s->ready_fd = -1;
	}
}

static void redirect_log(struct sup *s)
{
	char path[CONFIG_PATH_MAX + 64];
	int fd, nul;

	snprintf(path, sizeof(path), "%s/%s.log", s->c->run_dir, s->c->instance);
	fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0640);
	nul = open("/dev/null", O_RDONLY | O_CLOEXEC);
	if (nul >= 0) {
		dup2(nul, 0);
		close(nul);
	}
	if (fd >= 0) {
		dup2(fd, 1);
		dup2(fd, 2);
		close(fd);
	}
}

/* Descriptors: fds 0-2 open (a copy must never be fd 0: pipeline.h reads <= 0 as
 * "none"), and the soft limit raised to the hard one: each queued partition holds
 * its witness copy (copies.h), so the default 1024 would cap a full table. */
static void fd_limits(void)
{
	struct rlimit rl;

	for (int fd = 0; fd < 3; fd++)
		if (fcntl(fd, F_GETFD) < 0 && errno == EBADF) {
			int n = open("/dev/null", O_RDWR);

			if (n >= 0 && n != fd) {
				dup2(n, fd);
				close(n);
			}
		}
	if (!getrlimit(RLIMIT_NOFILE, &rl) && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		(void)setrlimit(RLIMIT_NOFILE, &rl); /* best effort: the old limit still works */
	}
}

/* EV_DOORBELL: a stage decided a job; its waiters are answered now, not at the tick. */
static void handle_doorbell(struct sup *s)
{
	uint64_t rung;

	(void)!read(s->doorbell_fd, &rung, sizeof(rung));
	s->doorbell_rings++;
	answer_waiters(s, now_ns());
}

/* The fds the loop polls for POLLIN with a one-shot poll: each event runs the handler,
 * then the poll is armed again. */
static const struct {
	enum ev_type t;
	size_t fd; /* offsetof(struct sup, the fd) */
	void (*handle)(struct sup *s);
} polled[] = {
	{ EV_SIGNAL, offsetof(struct sup, sfd), handle_signal },
	{ EV_TIMER, offsetof(struct sup, tfd), tick },
	{ EV_CHILD_TIMER, offsetof(struct sup, cfd), child_timers },
	{ EV_INTAKE, offsetof(struct sup, intake_fd), handle_intakes },
	{ EV_DOORBELL, offsetof(struct sup, doorbell_fd), handle_doorbell },
};

static void arm_polled(struct sup *s, size_t i)
{
	arm_poll(s, *(const int *)((const char *)s + polled[i].fd), POLLIN,
		 ev_data(polled[i].t, 0, 0));
}

int supervisor_run(const struct cuzkd_config *c, const struct plan *p)
{
	static struct sup s_; /* large (connections, children): not on the stack */
	struct sup *s = &s_;
	struct itimerspec its = { .it_interval = { 0, TICK_NS }, .it_value = { 0, TICK_NS } };
	char err[1024];
	sigset_t mask;
	int rc, code = CUZK_EXIT_INTERNAL;
	struct metrics_http *mh = NULL;    /* --metrics-listen: its own thread (metrics_http.c) */
	struct fleet_daemon *fleet = NULL; /* --queue: its own thread (fleet.c) */

	memset(s, 0, sizeof(*s));
	s->c = c;
	s->plan = p;
	fd_limits();
	s->lfd = s->sfd = s->tfd = s->cfd = s->ready_fd = s->copies_dfd = s->intake_fd = -1;
	s->doorbell_fd = -1;
	s->dur = json_object();
	for (int i = 0; i < N_CONNS; i++)
		s->conns[i].fd = -1;
	signal(SIGPIPE, SIG_IGN);

	if ((rc = trusted_run_dir(c->run_dir, c->have_gid ? 0750 : 0700, err, sizeof(err)))) {
		fprintf(stderr, "cuzkd: run directory %s: %s\n", c->run_dir, err);
		return CUZK_EXIT_IO;
	}
	if (c->have_gid && chown(c->run_dir, (uid_t)-1, c->gid))
		fprintf(stderr, "cuzkd: chgrp %s %s: %s\n", c->group, c->run_dir, strerror(errno));
	if (c->have_gid)
		group_reach(c);
	if (!c->foreground) {
		if ((rc = daemonize(s))) {
			fprintf(stderr, "cuzkd: fork: %s\n", strerror(-rc));
			return CUZK_EXIT_INTERNAL;
		}
		redirect_log(s);
	}
	find_bin_dir(s);

	/* Signals as a file descriptor; blocked before any child exists. */
	sigemptyset(&mask);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGCHLD);
	sigaddset(&mask, SIGHUP);
	sigprocmask(SIG_BLOCK, &mask, NULL);
	s->sfd = signalfd(-1, &mask, SFD_NONBLOCK | SFD_CLOEXEC);
	s->tfd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
	s->cfd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
	s->intake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	s->doorbell_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	s->fsm_cfg.stall_ns = (uint64_t)c->stall_timeout_s * 1000000000ull;
	if (s->sfd < 0 || s->tfd < 0 || s->cfd < 0 || s->intake_fd < 0 || s->doorbell_fd < 0 ||
	    timerfd_settime(s->tfd, 0, &its, NULL)) {
		logmsg("signalfd/timerfd/eventfd: %s", strerror(errno));
		goto out;
	}
	if ((rc = io_uring_queue_init(256, &s->ring, 0))) {
		logmsg("io_uring_queue_init: %s", strerror(-rc));
		goto out;
	}

	/* The pid file first, the socket last: the socket is what clients and tests
	 * wait for, so when it appears the pid file already names this daemon (and a
	 * second daemon on this instance is stopped by the pid file before it touches
	 * the socket). */
	if (write_pid_file(s, err, sizeof(err))) {
		logmsg("%s", err);
		code = CUZK_EXIT_IO;
		goto out_ring;
	}
	if ((rc = listen_socket(s, err, sizeof(err)))) {
		logmsg("%s", err);
		code = CUZK_EXIT_IO;
		goto out_ring;
	}
	if ((rc = create_segments(s, err, sizeof(err)))) {
		logmsg("%s", err);
		code = CUZK_EXIT_IO;
		goto out_sock;
	}
	s->decided_ns = calloc(c->max_jobs, sizeof(*s->decided_ns));
	s->cancelled = calloc(c->max_jobs, 1);
	s->owner = calloc(c->max_jobs, sizeof(*s->owner));
	s->preload_owner = json_object();
	s->crashes = calloc(c->max_parts, sizeof(*s->crashes));
	s->rec_part = malloc(c->max_parts);
	s->rec_job = calloc(c->max_jobs, 1);
	s->resumed = calloc(c->max_jobs, 1);
	s->files = calloc(c->max_jobs, sizeof(*s->files));
	for (uint32_t j = 0; s->files && j < c->max_jobs; j++)
		s->files[j].zkey_fd = s->files[j].r1cs_fd = s->files[j].out_fd =
			s->files[j].wgen_fd = -1;
	/* No idle copy is kept: a copy lives while a job or a preload holds it (a user's
	 * finished job costs nothing; the operator preloads what should stay). */
	copies_init(&s->copies, 0);
	{
		struct rlimit rl;
		rlim_t lim = getrlimit(RLIMIT_NOFILE, &rl) ? 1024 : rl.rlim_cur;

		s->fd_budget = lim / 2 > UINT32_MAX ? UINT32_MAX : (uint32_t)(lim / 2);
		s->spare_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
	}
	control_set_policy(&(struct control_policy){ .wgen_dirs = c->wgen_dir });
	if (!s->decided_ns || !s->cancelled || !s->owner || !s->preload_owner || !s->crashes ||
	    !s->rec_part || !s->rec_job || !s->resumed || !s->files) {
		logmsg("out of memory");
		goto out_seg;
	}
	memset(s->rec_part, REC_UNKNOWN, c->max_parts);
	/* Before any stage runs: resumed partitions are set before anyone can claim them. */
	if (!c->no_store &&
	    (code = store_start(s, barrier_load_relaxed(&s->pl.data.jobtab.hdr->next_job_id))))
		goto out_seg;
	/* --queue: the fleet thread (fleet.h); an unreachable database stops
	 * cuzkd at start, like a port that cannot be bound. */
	if (c->queue[0]) {
		char cb[sizeof(s->bin_dir) + 8];

		if ((size_t)snprintf(cb, sizeof(cb), "%s/cuzk", s->bin_dir) >= sizeof(cb))
			cb[0] = '\0'; /* cannot happen: bin_dir is a path of its size */
		if ((rc = fleet_daemon_start(&fleet, c, cb, err, sizeof(err)))) {
			logmsg("%s", err);
			code = CUZK_EXIT_IO;
			goto out_seg;
		}
		s->fleet = fleet;
		logmsg("fleet: claiming from the queue (lease %u s, %u at once)", c->queue_lease_s,
		       c->queue_parallel);
	}
	code = CUZK_EXIT_INTERNAL;
	if (c->metrics_listen[0]) {
		char bound[96];

		if ((rc = metrics_http_start(&mh, c->metrics_listen, c->instance, fleet,
					     c->no_store ? NULL : c->state_dir, c->metrics_conns,
					     bound, sizeof(bound), err, sizeof(err)))) {
			logmsg("%s", err);
			code = CUZK_EXIT_IO;
			goto out_seg;
		}
		logmsg("metrics on http://%s/metrics", bound);
	}
	/* Children: workers, synths, finalizer, in plan order. */
	for (uint32_t i = 0; i < p->n_places && i < MAX_CHILDREN; i++) {
		struct child *ch = &s->ch[s->n_ch++];

		ch->role = p->places[i].role;
		ch->index = p->places[i].index;
		ch->place = &p->places[i];
		ch->pidfd = -1;
		child_fsm_init(&ch->fsm);
		child_event(s, ch, CHILD_EV_TIMER, now_ns(), 0); /* due at once: start */
	}
	arm_poll(s, s->lfd, POLLIN, ev_data(EV_LISTEN, 0, 0));
	s->listen_armed = 1;
	for (size_t i = 0; i < sizeof(polled) / sizeof(polled[0]); i++)
		arm_polled(s, i);
	logmsg("instance \"%s\" listening on %s (pid %d, %u worker(s) %s)", c->instance,
	       s->sock_path, (int)getpid(), p->n_workers, c->devices);
	tell_launcher(s, 0);

	while (!(s->killing && !children_alive(s))) {
		struct io_uring_cqe *cqe;
		unsigned head, seen = 0;

		rc = io_uring_submit_and_wait(&s->ring, 1);
		if (rc < 0 && rc != -EINTR) {
			logmsg("io_uring: %s", strerror(-rc));
			break;
		}
		io_uring_for_each_cqe(&s->ring, head, cqe)
		{
			uint64_t d = io_uring_cqe_get_data64(cqe);
			enum ev_type t = (enum ev_type)(d >> 56);
			uint32_t gen = (uint32_t)(d >> 32) & 0xffffff, idx = (uint32_t)d;
			int res = cqe->res;

			seen++;
			if (!d || res == -ECANCELED)
				continue;
			switch (t) {
			case EV_LISTEN:
				s->listen_armed = 0;
				if (!s->stopping)
					handle_listen(s);
				break;
			case EV_CONN:
				if (idx < N_CONNS && s->conns[idx].fd >= 0 &&
				    s->conns[idx].gen == gen)
					handle_conn_in(s, &s->conns[idx]);
				break;
			case EV_CONN_OUT:
				if (idx < N_CONNS && s->conns[idx].fd >= 0 &&
				    s->conns[idx].gen == gen) {
					s->conns[idx].out_armed = 0;
					conn_flush(s, &s->conns[idx]);
				}
				break;
			case EV_PIDFD:
				if (idx < s->n_ch && s->ch[idx].gen == gen)
					reap(s, &s->ch[idx]);
				break;
			default: /* the polled fds */
				for (size_t i = 0; i < sizeof(polled) / sizeof(polled[0]); i++)
					if (polled[i].t == t) {
						polled[i].handle(s);
						arm_polled(s, i);
					}
				break;
			}
		}
		io_uring_cq_advance(&s->ring, seen);
	}
	logmsg("all stages stopped; removing segments, socket and pid file");
	metrics_http_stop(mh); /* it reads the fleet's health: first */
	mh = NULL;
	s->fleet = NULL;
	fleet_daemon_stop(fleet);
	fleet = NULL;
	code = 0;

	for (int i = 0; i < N_CONNS; i++) {
		if (s->conns[i].fd >= 0 && s->conns[i].out_len) {
			/* last replies (e.g. to shutdown): one blocking attempt */
			int fl = fcntl(s->conns[i].fd, F_GETFL);

			fcntl(s->conns[i].fd, F_SETFL, fl & ~O_NONBLOCK);
			(void)!send(s->conns[i].fd, s->conns[i].out + s->conns[i].out_off,
				    s->conns[i].out_len - s->conns[i].out_off, MSG_NOSIGNAL);
		}
		conn_close(s, &s->conns[i]);
	}
out_seg:
	metrics_http_stop(mh);
	s->fleet = NULL;
	fleet_daemon_stop(fleet);
	for (uint32_t i = 0; i < s->n_ch; i++)
		if (s->ch[i].pid) {
			kill(s->ch[i].pid, SIGKILL);
			waitpid(s->ch[i].pid, NULL, 0);
		}
	if (s->store) {
		store_sync(s); /* the last partitions' ends; unfinished jobs stay running */
		store_close(s->store);
	}
	free(s->rec_part);
	free(s->rec_job);
	free(s->resumed);
	pipeline_detach(&s->pl);
	pipeline_destroy(c->instance);
	free(s->decided_ns);
	free(s->cancelled);
	free(s->owner);
	json_decref(s->preload_owner);
	free(s->crashes);
	for (uint32_t j = 0; s->files && j < c->max_jobs; j++)
		job_files_release(s, j);
	free(s->files);
	{
		int running = 0;

		/* A thread still blocked in a client's read holds copies: they go with
		 * the process. */
		while (s->intakes) {
			struct intake *t = s->intakes;

			s->intakes = t->next;
			if (intake_done(t))
				intake_free(t);
			else
				running = 1;
		}
		if (!running)
			copies_free(&s->copies);
	}
	json_decref(s->dur);
	s->dur = NULL;
	if (s->copies_dfd >= 0)
		close(s->copies_dfd);
	json_decref(s->lost);
out_sock:
	if (s->lfd >= 0)
		close(s->lfd);
	if (s->sock_path[0])
		unlink(s->sock_path);
out_ring:
	if (s->pid_path[0])
		unlink(s->pid_path);
	io_uring_queue_exit(&s->ring);
out:
	if (s->sfd >= 0)
		close(s->sfd);
	if (s->tfd >= 0)
		close(s->tfd);
	if (s->cfd >= 0)
		close(s->cfd);
	tell_launcher(s, (unsigned char)code);
	return code;
}
