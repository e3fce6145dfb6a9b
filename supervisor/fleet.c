/* fleet.c — cuzkd's fleet thread (fleet.h). */
#include "cuzk/fleet.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <dirent.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cuzk/fleet_pg.h"
#include "cuzk/os.h"

struct slot {
	pid_t pid;     /* the `cuzk prove --wait` running it; 0: free */
	int finishing; /* exited, its finish not yet recorded (database away) */
	int marking;   /* finished: 1 publishing, 2 its fleet_part_publish to retry */
	int rc;        /* its exit code */
	struct fleet_claim c;
};

struct fleet_daemon {
	pthread_t th;
	atomic_int stop;
	struct fleet *f;
	char owner[256], cuzk[CONFIG_PATH_MAX], instance[SEG_INSTANCE_MAX + 1];
	char run_dir[CONFIG_PATH_MAX];
	int store;                  /* --store-proofs */
	char priv[CONFIG_PATH_MAX]; /* its private staging dirs, one per slot: for jobs with
				       * no out dir (fleet_pg.h "Stored proofs") */
	int lease_s;
	uint32_t n;
	struct slot *slots;
	int db_down;       /* the last call failed: logged once, retried with backoff */
	atomic_int h_down; /* fleet_health, read by the event loop and the metrics thread */
	atomic_ullong h_errors, h_reconnects;
	int recovered;       /* the previous run's leases and staged proofs are handled */
	uint64_t next_adopt; /* ms (os_now_ns) of the next fleet_adopt of stale daemons' proofs */
};

/* Stale daemons' unpublished proofs are looked for this often: a dead finisher is
 * adopted 3 leases after its last heartbeat, this adds at most 3 s to that. */
#define ADOPT_EVERY_MS 3000

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

	if (!d->db_down)
		flog("%s%s", err, rc == -ECONNREFUSED ? " (retrying)" : "");
	d->db_down = 1;
	atomic_store(&d->h_down, 1);
	atomic_fetch_add(&d->h_errors, 1);
	if (rc == -ECONNREFUSED)
		fleet_reconnect(d->f, e2, sizeof(e2));
}

/* A database call succeeded: the end of a run of failures, if there was one. */
static void db_ok(struct fleet_daemon *d)
{
	if (d->db_down)
		flog("database reachable again");
	if (atomic_exchange(&d->h_down, 0))
		atomic_fetch_add(&d->h_reconnects, 1);
	d->db_down = 0;
}

void fleet_daemon_health(const struct fleet_daemon *d, struct fleet_health *h)
{
	struct fleet_daemon *m = (struct fleet_daemon *)d; /* atomics: loads only */

	h->db_reachable = !atomic_load(&m->h_down);
	h->db_errors = atomic_load(&m->h_errors);
	h->reconnects = atomic_load(&m->h_reconnects);
}

/* Fleet paths come from whoever writes the queue (fleet_pg.h's trust boundary): a
 * regular file, not reached through a symbolic link at its last component. */
static int regular(const char *p)
{
	struct stat st;
	int fd = open(p, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK), ok;

	if (fd < 0)
		return 0;
	ok = !fstat(fd, &st) && S_ISREG(st.st_mode);
	close(fd);
	return ok;
}

static int open_out(const char *dir)
{
	return open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
}

/* The staging dir of a job with no out dir: PRIV/SLOT, cuzkd's own (0700), opened
 * (created if need be); -1 with errno. */
static int open_priv(struct fleet_daemon *d, const struct slot *sl)
{
	char sub[16];
	int pfd, sfd;

	snprintf(sub, sizeof(sub), "%u", (unsigned)(sl - d->slots));
	if ((pfd = open(d->priv, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) < 0)
		return -1;
	if (mkdirat(pfd, sub, 0700) && errno != EEXIST) {
		close(pfd);
		return -1;
	}
	sfd = openat(pfd, sub, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	close(pfd);
	return sfd;
}

/* The slot's staging dir, opened: OUT/.cuzk-OWNER/ or, with no out dir, PRIV/SLOT. */
static int open_stage(struct fleet_daemon *d, const struct slot *sl)
{
	char sn[300];
	int dfd, sfd;

	if (!sl->c.out_dir[0])
		return open_priv(d, sl);
	fleet_stage_name(d->owner, sn, sizeof(sn));
	if ((dfd = open_out(sl->c.out_dir)) < 0)
		return -1;
	sfd = openat(dfd, sn, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	close(dfd);
	return sfd;
}

/* Remove the staged proof files (*.proof.json, *.public.json) in the dir sfd. */
static void clean_fd(int sfd)
{
	int fd = dup(sfd);
	DIR *dir = fd >= 0 ? fdopendir(fd) : NULL;
	struct dirent *e;

	if (!dir) {
		if (fd >= 0)
			close(fd);
		return;
	}
	while ((e = readdir(dir))) {
		size_t len = strlen(e->d_name);

		if ((len > 11 && !strcmp(e->d_name + len - 11, ".proof.json")) ||
		    (len > 12 && !strcmp(e->d_name + len - 12, ".public.json")))
			unlinkat(sfd, e->d_name, 0);
	}
	closedir(dir);
}

/* sl's proof is published (or given up): its staging dir goes once empty, unless
 * another slot of this daemon runs a partition of the same out dir (start_one runs
 * in this thread too, so no partition starts staging there meanwhile). */
static void stage_done(struct fleet_daemon *d, const struct slot *sl)
{
	if (!sl->c.out_dir[0])
		return;
	for (uint32_t i = 0; i < d->n; i++)
		if (&d->slots[i] != sl && (d->slots[i].pid || d->slots[i].finishing) &&
		    !strcmp(d->slots[i].c.out_dir, sl->c.out_dir))
			return;
	fleet_stage_remove(sl->c.out_dir, d->owner);
}

static int start_one(struct fleet_daemon *d, struct slot *sl)
{
	char stage[2048], sn[300];
	const char *why = NULL;
	int dfd, sfd;
	pid_t pid;

	fleet_stage_name(d->owner, sn, sizeof(sn));
	/* The row's name names files in the out dir: one component, whoever wrote it. */
	if (!fleet_name_ok(sl->c.name))
		why = "its name is not a single file name (no '/', no leading '.', no control "
		      "character)";
	else if (!regular(sl->c.wtns))
		why = "witness is not a regular file";
	else if (!regular(sl->c.zkey))
		why = "zkey is not a regular file";
	else if (!sl->c.out_dir[0]) {
		/* No out dir: proved into this slot's private dir, stored only. A daemon
		 * that does not store never claims such a job (fleet_claim). */
		if (!d->store)
			why = "no out dir and this cuzkd does not --store-proofs";
		else if ((sfd = open_priv(d, sl)) < 0)
			why = "cannot create its private staging dir in the run dir";
		else {
			clean_fd(sfd); /* a previous partition's, never to be mixed up */
			close(sfd);
			snprintf(stage, sizeof(stage), "%s/%u", d->priv, (unsigned)(sl - d->slots));
		}
	} else if ((dfd = open_out(sl->c.out_dir)) < 0)
		why = "out dir is not a directory";
	else {
		/* The staging dir: ours alone (0700), never a link. */
		if (mkdirat(dfd, sn, 0700) && errno != EEXIST)
			why = "cannot create the staging dir in the out dir";
		else if ((sfd = openat(dfd, sn, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) <
			 0)
			why = "staging dir in the out dir is not a directory";
		else
			close(sfd);
		close(dfd);
		snprintf(stage, sizeof(stage), "%s/%s", sl->c.out_dir, sn);
	}
	if (why) {
		sl->pid = 0;
		sl->finishing = 1;
		sl->rc = -1;
		flog("partition rejected: %s (%s)", why, sl->c.wtns);
		return -1;
	}
	pid = fork();
	if (pid == 0) {
		sigset_t all;
		int nul = open("/dev/null", O_WRONLY);

		sigemptyset(&all);
		sigprocmask(SIG_SETMASK, &all, NULL); /* cuzkd's thread blocks them */
		if (nul >= 0)
			dup2(nul, 1);
		execl(d->cuzk, d->cuzk, "--instance", d->instance, "--run-dir", d->run_dir, "prove",
		      "--wait", "--zkey", sl->c.zkey, "--out", stage, sl->c.wtns, (char *)NULL);
		_exit(127);
	}
	if (pid < 0) {
		sl->pid = 0;
		sl->finishing = 1;
		sl->rc = -1;
		return -1;
	}
	sl->pid = pid;
	return 0;
}

/* A staged proof file, read for the table: at most cap bytes, a regular file not
 * reached through a link, no NUL byte (a text column). malloc'd text, or NULL with the
 * reason in why. */
static char *read_staged(int sfd, const char *name, size_t cap, char *why, size_t whylen)
{
	int fd = openat(sfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
	struct stat st;
	char *buf = NULL;
	size_t got = 0;

	if (fd < 0 || fstat(fd, &st) || !S_ISREG(st.st_mode)) {
		snprintf(why, whylen, "stored proof: cannot read %s: %s", name,
			 fd < 0 ? strerror(errno) : "not a regular file");
		goto out;
	}
	if ((size_t)st.st_size > cap) {
		snprintf(why, whylen, "stored proof: %s has %lld bytes, over the %zu stored", name,
			 (long long)st.st_size, cap);
		goto out;
	}
	if (!(buf = malloc((size_t)st.st_size + 1))) {
		snprintf(why, whylen, "stored proof: out of memory");
		goto out;
	}
	while (got < (size_t)st.st_size) {
		ssize_t n = read(fd, buf + got, (size_t)st.st_size - got);

		if (n <= 0) {
			snprintf(why, whylen, "stored proof: reading %s: %s", name,
				 n ? strerror(errno) : "shorter than its size");
			free(buf);
			buf = NULL;
			goto out;
		}
		got += (size_t)n;
	}
	buf[got] = '\0';
	if (strlen(buf) != got) {
		snprintf(why, whylen, "stored proof: %s has a NUL byte", name);
		free(buf);
		buf = NULL;
	}
out:
	if (fd >= 0)
		close(fd);
	return buf;
}

/* Finish a proved partition with its proof in the table (--store-proofs): read the
 * staged files, fleet_finish_stored; a proof that cannot be stored (over a cap, not
 * JSON, unreadable) fails the partition with that reason. fleet_finish's answers. */
static int finish_stored(struct fleet_daemon *d, struct slot *sl, char *err, size_t errlen)
{
	char tp[300], tq[300], why[512];
	char *proof = NULL, *pub = NULL;
	int sfd, won;

	snprintf(tp, sizeof(tp), "%s.proof.json", sl->c.name);
	snprintf(tq, sizeof(tq), "%s.public.json", sl->c.name);
	if (!fleet_name_ok(sl->c.name)) /* never read outside the staging dir */
		snprintf(why, sizeof(why), "its name is not a single file name");
	else if ((sfd = open_stage(d, sl)) < 0)
		snprintf(why, sizeof(why), "stored proof: cannot open the staging dir: %s",
			 strerror(errno));
	else {
		if ((proof = read_staged(sfd, tp, FLEET_PROOF_MAX, why, sizeof(why))))
			pub = read_staged(sfd, tq, FLEET_PUBLIC_MAX, why, sizeof(why));
		close(sfd);
	}
	won = proof && pub ? fleet_finish_stored(d->f, d->owner, sl->c.job, sl->c.idx, sl->c.gen,
						 proof, pub, err, errlen) :
			     -EINVAL;
	free(proof);
	free(pub);
	if (won == -EINVAL) {
		if (proof && pub) /* fleet_proof_check's reason */
			snprintf(why, sizeof(why), "%s", err);
		flog("%s: %s: the partition fails", sl->c.name, why);
		sl->rc = -1; /* dropped below, not published */
		won = fleet_finish(d->f, d->owner, sl->c.job, sl->c.idx, sl->c.gen, why, err,
				   errlen);
	}
	return won;
}

/* The slot's staged files, removed (a discarded or failed proof, a stored one). */
static void unstage(struct fleet_daemon *d, struct slot *sl)
{
	char tp[300], tq[300];
	int sfd;

	if (!fleet_name_ok(sl->c.name) || (sfd = open_stage(d, sl)) < 0)
		return; /* a name with a '/' names nothing of the staging dir */
	snprintf(tp, sizeof(tp), "%s.proof.json", sl->c.name);
	snprintf(tq, sizeof(tq), "%s.public.json", sl->c.name);
	unlinkat(sfd, tp, 0);
	unlinkat(sfd, tq, 0);
	close(sfd);
}

/* The partition's end: finish it in the queue (with --store-proofs, its proof stored
 * by the same update), then publish (or drop) the staged files and mark them
 * published (fleet_part_publish); a job with no out dir has nothing to publish (its
 * finish marked it). 0 when done with the slot, -1 to retry later (database away); a
 * retry after the publish only marks (sl->marking: the staged files are linked and
 * gone, the call finds the finals and never links twice). */
static int end_one(struct fleet_daemon *d, struct slot *sl)
{
	char err[512], reason[64];
	int won, linked;

	if (sl->marking)
		goto publish;
	if (sl->rc)
		snprintf(reason, sizeof(reason), "cuzkd job failed (cuzk exit %d)", sl->rc);
	/* Not the partition's verdict (cuzkd draining or busy: exit 20/21, or the
	 * client not run): back to the queue for any daemon, up to 3 claims; exit 22
	 * is the job's own failure. */
	if (sl->rc && sl->rc != 22 && sl->rc != -1 && sl->c.attempts < 3) {
		won = fleet_release(d->f, d->owner, sl->c.job, sl->c.idx, sl->c.gen, err,
				    sizeof(err));
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
		won = fleet_finish(d->f, d->owner, sl->c.job, sl->c.idx, sl->c.gen,
				   sl->rc ? reason : NULL, err, sizeof(err));
	if (won < 0) {
		db_error(d, won, err);
		return -1;
	}
	if (!sl->c.out_dir[0]) /* stored only: its finish published it */
		goto drop;
	/* Test hook (fleet_pg.sh): die as a power loss would, in the window between the
	 * finish and the publish that adoption closes (this daemon's next start, or
	 * another daemon once this one's heartbeat is stale). */
	if (won >= 1 && !sl->rc && getenv("CUZK_TEST_FLEET_CRASH_AFTER_FINISH"))
		kill(getpid(), SIGKILL);
	if (won >= 1 && !sl->rc) {
		sl->marking = 1;
publish:
		won = fleet_part_publish(d->f, sl->c.out_dir, sl->c.name, d->owner, sl->c.job,
					 sl->c.idx, sl->c.gen, &linked, err, sizeof(err));
		if (won < 0 && won != -ENOTDIR && won != -EPERM) { /* the database */
			sl->marking = 2;
			db_error(d, won, err);
			return -1;
		}
		db_ok(d);
		if (won < 0)
			flog("%s", err);
		else if (won == FLEET_PUB_REQUEUED)
			flog("%s: staged proof missing: back to the queue", sl->c.name);
		else if (won == FLEET_PUB_MARKED && linked < 2 && sl->marking == 1)
			flog("%s: %s", sl->c.name, "a final file existed already: kept it");
		else if (won == FLEET_PUB_GONE && sl->marking == 1)
			flog("%s: published or requeued by another daemon meanwhile (was this "
			     "one's heartbeat stale?)",
			     sl->c.name);
		stage_done(d, sl);
		memset(sl, 0, sizeof(*sl));
		return 0;
	}
drop:
	db_ok(d);
	if (!won && !sl->rc)
		flog("%s: %s", sl->c.name, "lease lost before the finish: proof discarded");
	unstage(d, sl);
	stage_done(d, sl);
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

	if (a->outcome >= 0)
		c->progress++;
	if (a->outcome == -ENOTDIR)
		return; /* that out dir is not mounted here: another daemon's to adopt */
	if (a->outcome < 0) {
		c->failed++;
		flog("%s", a->why);
	} else if (a->linked && own) /* counted whether its mark or another's came first */
		c->own++;
	else if (a->linked) /* GONE too: another's mark came first */
		flog("published %s (job %llu part %u) that %s finished: its heartbeat is stale",
		     a->name, (unsigned long long)a->job, a->idx, a->done_by);
	else if (a->outcome == FLEET_PUB_REQUEUED)
		flog("%s (job %llu part %u), finished by %s: no staged proof, back to the queue",
		     a->name, (unsigned long long)a->job, a->idx, a->done_by);
}

/* The stale staged files of one out dir's staging dir after a restart, once
 * fleet_adopt(mine) published what this owner had finished: a discarded or failed
 * proof, a local job of the previous run that the queue has since given to another
 * daemon. */
static void clean_dir(struct fleet_daemon *d, const char *out_dir)
{
	char sn[300];
	int dfd, sfd;

	fleet_stage_name(d->owner, sn, sizeof(sn));
	if ((dfd = open_out(out_dir)) < 0)
		return; /* gone or not mounted here */
	if ((sfd = openat(dfd, sn, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) >= 0) {
		clean_fd(sfd);
		close(sfd);
		unlinkat(dfd, sn, AT_REMOVEDIR); /* at start: no partition of ours runs yet */
	}
	close(dfd);
}

/* The start of this daemon's fleet life: the previous run's leases back to the
 * queue (it held them under the same owner id and nobody works on them now), the
 * proofs it finished but had not published (fleet_pg.h's "Publishing") published,
 * then its stale staged files removed. */
static int recover(struct fleet_daemon *d)
{
	char err[512], **dirs = NULL;
	struct adoption c = { .d = d };
	int n, rc;

	if ((rc = fleet_release_mine(d->f, d->owner, err, sizeof(err))) < 0) {
		db_error(d, rc, err);
		return -1;
	}
	if (rc)
		flog("gave %d leases of a previous run back to the queue", rc);
	do { /* 256 rows a call; again while a full call made progress */
		c.progress = 0;
		if ((n = fleet_adopt(d->f, d->owner, 1, adopted, &c, err, sizeof(err))) < 0) {
			db_error(d, n, err);
			return -1;
		}
	} while (n == 256 && c.progress);
	if (c.own)
		flog("published %d proofs finished before a restart", c.own);
	if (c.failed)
		return 0; /* keep the staged files of what could not be published */
	if ((n = fleet_done_dirs(d->f, d->owner, &dirs, err, sizeof(err))) < 0) {
		db_error(d, n, err);
		return -1;
	}
	for (int i = 0; i < n; i++) {
		clean_dir(d, dirs[i]);
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

static void *run(void *arg)
{
	struct fleet_daemon *d = arg;
	uint64_t last_renew = 0, backoff = 0, next_try = 0;
	struct fleet_claim *cl = calloc(d->n, sizeof(*cl)), *held = calloc(d->n, sizeof(*held));
	char err[512];

	while (!atomic_load(&d->stop) && cl && held) {
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
		for (uint32_t i = 0; i < d->n; i++) {
			struct slot *sl = &d->slots[i];
			int st;

			if (sl->pid && waitpid(sl->pid, &st, WNOHANG) == sl->pid) {
				sl->pid = 0;
				sl->finishing = 1;
				sl->rc = WIFEXITED(st) ? WEXITSTATUS(st) : 128;
			}
			if (sl->finishing && t >= next_try && end_one(d, sl))
				next_try = t + 500;
			if (!sl->pid && !sl->finishing)
				nfree++;
		}
		if (t >= d->next_adopt && t >= next_try) {
			struct adoption c = { .d = d };

			d->next_adopt = t + ADOPT_EVERY_MS;
			if ((rc = fleet_adopt(d->f, d->owner, 0, adopted, &c, err, sizeof(err))) <
			    0) {
				db_error(d, rc, err);
				next_try = t + 500;
			} else
				db_ok(d);
		}
		if (t - last_renew >= (uint64_t)d->lease_s * 1000 / 3 && t >= next_try) {
			int nh = 0;

			for (uint32_t i = 0; i < d->n; i++)
				if (d->slots[i].pid || d->slots[i].finishing)
					held[nh++] = d->slots[i].c;
			if ((rc = fleet_renew(d->f, d->owner, d->lease_s, held, nh, err,
					      sizeof(err))) < 0) {
				db_error(d, rc, err);
				next_try = retry_at(&backoff, t);
			} else {
				db_ok(d);
				backoff = 0;
				last_renew = t;
			}
		}
		/* Claim only as local room frees: a claimed partition waits in no queue. */
		if (nfree && t >= next_try) {
			int got = fleet_claim(d->f, d->owner, d->lease_s, cl, (int)nfree, err,
					      sizeof(err));
			if (got < 0) {
				db_error(d, got, err);
				next_try = retry_at(&backoff, t);
			} else
				db_ok(d);
			for (int k = 0, i = 0; k < got && i < (int)d->n; i++)
				if (!d->slots[i].pid && !d->slots[i].finishing) {
					d->slots[i].c = cl[k++];
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

/* --store-proofs: the private staging dirs, RUN_DIR/fleet-INSTANCE.proofs/SLOT,
 * created 0700 and cuzkd's own (the run dir is cuzkd's, checked at its start); what a
 * previous run left in them is removed (its leases went back to the queue). */
static int make_priv(struct fleet_daemon *d, char *err, size_t errlen)
{
	struct stat st;

	if ((size_t)snprintf(d->priv, sizeof(d->priv), "%s/fleet-%s.proofs", d->run_dir,
			     d->instance) >= sizeof(d->priv)) {
		snprintf(err, errlen, "fleet: the run dir's path is too long");
		return -ENAMETOOLONG;
	}
	if (mkdir(d->priv, 0700) && errno != EEXIST) {
		snprintf(err, errlen, "fleet: cannot create %s: %s", d->priv, strerror(errno));
		return -errno;
	}
	if (os_dir_check(d->priv, 077, 0, &st)) {
		snprintf(err, errlen,
			 "fleet: %s must be a directory of cuzkd's user that no one else can "
			 "read or write (not a link)",
			 d->priv);
		return -EPERM;
	}
	for (uint32_t i = 0; i < d->n; i++) {
		int sfd = open_priv(d, &d->slots[i]);

		if (sfd >= 0) {
			clean_fd(sfd);
			close(sfd);
		}
	}
	return 0;
}

int fleet_daemon_start(struct fleet_daemon **out, const struct cuzkd_config *c,
		       const char *cuzk_bin, char *err, size_t errlen)
{
	struct fleet_daemon *d = calloc(1, sizeof(*d));
	char host[128] = "";
	int rc;

	*out = NULL;
	if (!d || !(d->slots = calloc(c->queue_parallel, sizeof(*d->slots)))) {
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
	d->lease_s = (int)c->queue_lease_s;
	d->n = c->queue_parallel;
	d->store = c->store_proofs;
	if ((d->store && (rc = make_priv(d, err, errlen))) ||
	    (rc = fleet_open(&d->f, c->queue, err, errlen)) ||
	    (fleet_set_stores(d->f, d->store), 0) ||
	    (rc = fleet_daemon_hello(d->f, d->owner, host, d->lease_s, err, errlen)) ||
	    (rc = -pthread_create(&d->th, NULL, run, d))) {
		if (rc == -EAGAIN)
			snprintf(err, errlen, "fleet: cannot start its thread");
		fleet_close(d->f);
		free(d->slots);
		free(d);
		return rc;
	}
	*out = d;
	return 0;
}

void fleet_daemon_stop(struct fleet_daemon *d)
{
	if (!d)
		return;
	atomic_store(&d->stop, 1);
	pthread_join(d->th, NULL);
	fleet_close(d->f);
	free(d->slots);
	free(d);
}
