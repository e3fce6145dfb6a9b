/* test_fleet_pg.c — the fleet queue (fleet_pg.h) against a real PostgreSQL cluster, which
 * tests/scripts/fleet_pg.sh starts and names in CUZK_TEST_PG_URL (without it: SKIP,
 * exit 77; there is never a mock database).
 *   test_fleet_pg                       lease semantics: disjoint claims, an expired
 *                                       lease taken over, a stale finish refused, a
 *                                       partition finished once
 *   test_fleet_pg worker OWNER CUZK     a claimer as cuzkd's fleet loop will be: claim
 *                                       one partition, prove it with `CUZK prove-local`
 *                                       under temp names, finish, publish (fleet_pg.h's
 *                                       order); retries with backoff while the database
 *                                       is away; exits once nothing is queued or leased.
 *                                       Appends "JOB IDX OWNER" per publish to
 *                                       $FLEET_PUBLISH_LOG (the script checks each once).
 * Not a Check program: it needs the cluster the script starts. */
#include "cuzk/fleet_pg.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define LEASE_S 3

static int fails;
#define CHECK(c, ...)                                                                   \
	do {                                                                            \
		if (!(c)) {                                                             \
			fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__);            \
			fprintf(stderr, __VA_ARGS__);                                   \
			fputc('\n', stderr);                                            \
			fails++;                                                        \
		}                                                                       \
	} while (0)

static int semantics(const char *url)
{
	struct fleet *f;
	struct fleet_claim a[8], b[8], c[8];
	const char *w[6] = { "/nonexistent/a", "/b", "/c", "/d", "/e", "/f" };
	const char *nm[6] = { "a", "b", "c", "d", "e", "f" };
	char err[512];
	uint32_t done, failed, total;
	uint64_t job;
	int na, nb, nc, rc;

	rc = fleet_open(&f, url, err, sizeof(err));
	CHECK(!rc, "open: %s", err);
	if (rc)
		return 1;
	CHECK(!fleet_job_add(f, "/z.zkey", "/out", 6, w, nm, &job, err, sizeof(err)), "add: %s",
	      err);
	CHECK(!fleet_daemon_hello(f, "sem-a", "here", err, sizeof(err)), "hello: %s", err);
	CHECK(!fleet_daemon_hello(f, "sem-b", "here", err, sizeof(err)), "hello: %s", err);
	/* a takes 3 on a 1 s lease, b the other 3 on a 4 s one, none twice. */
	na = fleet_claim(f, "sem-a", 1, a, 3, err, sizeof(err));
	nb = fleet_claim(f, "sem-b", 4, b, 8, err, sizeof(err));
	CHECK(na == 3 && nb == 3, "claims %d %d (want 3 3)", na, nb);
	for (int i = 0; i < na; i++)
		for (int k = 0; k < nb; k++)
			CHECK(a[i].job != b[k].job || a[i].idx != b[k].idx, "claimed twice");
	CHECK(fleet_claim(f, "sem-b", 1, c, 8, err, sizeof(err)) == 0, "claimed a leased part");
	/* b keeps its leases alive; a's expire and b takes them over with a new gen. */
	sleep(2);
	CHECK(fleet_renew(f, "sem-b", 30, b, nb, err, sizeof(err)) == 3, "renew: %s", err);
	nc = fleet_claim(f, "sem-b", 30, c, 8, err, sizeof(err));
	CHECK(nc == 3, "took over %d expired leases (want 3)", nc);
	for (int i = 0; i < nc; i++)
		for (int k = 0; k < na; k++)
			if (c[i].job == a[k].job && c[i].idx == a[k].idx)
				CHECK(c[i].gen == a[k].gen + 1, "gen %llu after %llu",
				      (unsigned long long)c[i].gen, (unsigned long long)a[k].gen);
	/* a's late proofs are refused; b's count, once. */
	for (int i = 0; i < na; i++)
		CHECK(fleet_finish(f, "sem-a", a[i].job, a[i].idx, a[i].gen, NULL, err,
				   sizeof(err)) == 0, "stale finish accepted");
	for (int i = 0; i < nc; i++) {
		CHECK(fleet_finish(f, "sem-b", c[i].job, c[i].idx, c[i].gen, NULL, err,
				   sizeof(err)) == 1, "finish refused: %s", err);
		/* The retry of a finish whose reply was lost (the database went away after
		 * its COMMIT): answered "yours, already" so that the caller publishes, and
		 * not counted again. Answered 0 before: a done partition nobody published,
		 * seen in fleet_pg's dbstop round. */
		CHECK((rc = fleet_finish(f, "sem-b", c[i].job, c[i].idx, c[i].gen, NULL, err,
					 sizeof(err))) == 2, "retried finish answered %d (want 2)", rc);
		CHECK(fleet_finish(f, "sem-a", c[i].job, c[i].idx, c[i].gen - 1, NULL, err,
				   sizeof(err)) == 0, "stale owner's finish of a done part accepted");
	}
	CHECK(fleet_job_state(f, job, &done, &failed, &total, err, sizeof(err)) == 0 &&
	      done == 3 && total == 6, "state %u/%u", done, total);
	for (int i = 0; i < nb; i++)
		fleet_finish(f, "sem-b", b[i].job, b[i].idx, b[i].gen, i ? NULL : "bad witness",
			     err, sizeof(err));
	CHECK(fleet_job_state(f, job, &done, &failed, &total, err, sizeof(err)) == 2 &&
	      done == 5 && failed == 1, "end state %u done %u failed", done, failed);
	/* Leases a daemon does not name in its heartbeat are not its work: one it got
	 * without knowing (a claim whose COMMIT landed, its reply lost) expires though the
	 * heartbeat goes on, and a restarted daemon's previous run's go back to the queue
	 * at once. Before, the heartbeat renewed every lease of the owner id: such a
	 * partition stayed leased, worked on by nobody, for as long as the daemon lived. */
	{
		const char *w2[2] = { "/g", "/h" }, *nm2[2] = { "g", "h" };
		uint64_t job2;

		CHECK(!fleet_job_add(f, "/z.zkey", "/out", 2, w2, nm2, &job2, err, sizeof(err)),
		      "add: %s", err);
		CHECK(fleet_claim(f, "sem-c", 1, a, 1, err, sizeof(err)) == 1, "claim: %s", err);
		CHECK((rc = fleet_renew(f, "sem-c", 30, a, 0, err, sizeof(err))) == 0,
		      "renewed %d leases it did not name: %s", rc, err);
		sleep(2);
		CHECK((rc = fleet_claim(f, "sem-d", 30, b, 1, err, sizeof(err))) == 1 &&
		      b[0].job == a[0].job && b[0].idx == a[0].idx,
		      "an unnamed lease was kept alive (claimed %d)", rc);
		CHECK(fleet_claim(f, "sem-c", 30, a, 1, err, sizeof(err)) == 1, "claim: %s", err);
		CHECK((rc = fleet_release_mine(f, "sem-c", err, sizeof(err))) == 1,
		      "released %d of a previous run's leases (want 1)", rc);
		CHECK((rc = fleet_claim(f, "sem-d", 30, c, 1, err, sizeof(err))) == 1 &&
		      c[0].job == a[0].job && c[0].idx == a[0].idx,
		      "a released lease was not claimable (claimed %d)", rc);
		for (int i = 0; i < 2; i++)
			CHECK(fleet_finish(f, "sem-d", i ? c[0].job : b[0].job, i ? c[0].idx : b[0].idx,
					   i ? c[0].gen : b[0].gen, NULL, err, sizeof(err)) == 1,
			      "finish: %s", err);
	}
	{
		char *s = fleet_status_json(f, err, sizeof(err));
		const char *b_row = s ? strstr(s, "\"sem-b\"") : NULL;
		/* 6 finishes by sem-b, each counted once (the 3 retries are not). */
		CHECK(b_row && strstr(b_row, "\"done\" : 6,"), "status: %s", s ? s : err);
		if (s)
			printf("status: %s\n", s);
		free(s);
	}
	fleet_close(f);
	printf("%s: lease semantics\n", fails ? "FAIL" : "ok");
	return fails ? 1 : 0;
}

/* A fleet path must be a regular file, not a link: whoever writes the queue chooses
 * it (fleet_pg.h's trust boundary). */
static int regular(const char *p)
{
	struct stat st;
	int fd = open(p, O_RDONLY | O_NOFOLLOW | O_CLOEXEC), ok;

	if (fd < 0)
		return 0;
	ok = !fstat(fd, &st) && S_ISREG(st.st_mode);
	close(fd);
	return ok;
}

static int prove(const char *cuzk, const struct fleet_claim *c, const char *tp,
		 const char *tq)
{
	pid_t pid = fork();
	int st;

	if (pid == 0) {
		execl(cuzk, cuzk, "prove-local", c->zkey, c->wtns, tp, tq, (char *)NULL);
		_exit(127);
	}
	if (pid < 0 || waitpid(pid, &st, 0) != pid)
		return -1;
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static int worker(const char *url, const char *owner, const char *cuzk)
{
	const char *log = getenv("FLEET_PUBLISH_LOG");
	struct fleet *f = NULL;
	struct fleet_claim c;
	char err[512];
	int backoff_ms = 100, rc;

	for (;;) { /* connect, with backoff: the database may be restarting */
		if (!(rc = fleet_open(&f, url, err, sizeof(err))) &&
		    !(rc = fleet_daemon_hello(f, owner, "test", err, sizeof(err))))
			break;
		fleet_close(f);
		f = NULL;
		fprintf(stderr, "%s: %s (retrying)\n", owner, err);
		usleep((useconds_t)backoff_ms * 1000);
		if (backoff_ms < 2000)
			backoff_ms *= 2;
	}
	for (;;) {
		char tp[1700], tq[1700], fp[400], fq[400], tpn[600], tqn[600];
		int n = fleet_claim(f, owner, LEASE_S, &c, 1, err, sizeof(err)), won, dfd;

		if (n < 0) {
			fprintf(stderr, "%s: %s (retrying)\n", owner, err);
			usleep((useconds_t)backoff_ms * 1000);
			if (backoff_ms < 2000)
				backoff_ms *= 2;
			fleet_reconnect(f, err, sizeof(err));
			continue;
		}
		backoff_ms = 100;
		if (n == 0) {
			char *s = fleet_status_json(f, err, sizeof(err));
			int idle = s && strstr(s, "\"queued\" : 0") && strstr(s, "\"leased\" : 0");
			free(s);
			if (idle)
				break;
			usleep(200000); /* others hold leases that may expire */
			continue;
		}
		snprintf(tpn, sizeof(tpn), ".%s.proof.json.%s.%llu.tmp", c.name, owner,
			 (unsigned long long)c.gen);
		snprintf(tqn, sizeof(tqn), ".%s.public.json.%s.%llu.tmp", c.name, owner,
			 (unsigned long long)c.gen);
		snprintf(fp, sizeof(fp), "%s.proof.json", c.name);
		snprintf(fq, sizeof(fq), "%s.public.json", c.name);
		snprintf(tp, sizeof(tp), "%s/%s", c.out_dir, tpn);
		snprintf(tq, sizeof(tq), "%s/%s", c.out_dir, tqn);
		if (!regular(c.wtns) || !regular(c.zkey)) {
			fleet_finish(f, owner, c.job, c.idx, c.gen, "input not a regular file", err,
				     sizeof(err));
			continue;
		}
		rc = prove(cuzk, &c, tp, tq);
		/* The finish may meet a database that is away: retry it while the lease
		 * could still be ours; a lost lease answers 0 and the proof is dropped. */
		for (int t = 0; (won = fleet_finish(f, owner, c.job, c.idx, c.gen,
						      rc ? "prove-local failed" : NULL, err,
						      sizeof(err))) < 0 && t < 50; t++) {
			usleep(200000);
			fleet_reconnect(f, err, sizeof(err));
		}
		dfd = open(c.out_dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (won >= 1 && !rc && dfd >= 0) {
			int a = fleet_publish(dfd, tqn, fq), b = fleet_publish(dfd, tpn, fp);
			if (log) {
				FILE *lf = fopen(log, "a");
				if (lf) {
					fprintf(lf, "%llu %u %s%s\n", (unsigned long long)c.job, c.idx,
						owner, a || b ? " EEXIST" : "");
					fclose(lf);
				}
			}
		} else if (dfd >= 0) {
			unlinkat(dfd, tpn, 0); /* not ours to publish */
			unlinkat(dfd, tqn, 0);
		}
		if (dfd >= 0)
			close(dfd);
	}
	fleet_close(f);
	return 0;
}

int main(int argc, char **argv)
{
	const char *url = getenv("CUZK_TEST_PG_URL");

	if (!url || !*url) {
		printf("SKIP: no CUZK_TEST_PG_URL (tests/scripts/fleet_pg.sh starts a cluster)\n");
		return 77;
	}
	if (argc == 4 && !strcmp(argv[1], "worker"))
		return worker(url, argv[2], argv[3]);
	return semantics(url);
}
