/* fleet_client.c — the client's --queue commands (fleet_client.h). */
#include "cuzk/fleet_client.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cuzk/client.h"
#include "cuzk/control.h"
#include "cuzk/error.h"
#include "cuzk/fleet_pg.h"
#include "cuzk/pipeline.h"

/* Daemons on other machines open these paths: absolute, on the shared file system
 * (README "Fleet"); a relative one would name another file there. */
static int absolute(const char *what, const char *p, char *out)
{
	if (!realpath(p, out)) {
		fprintf(stderr, "cuzk prove: %s %s: %s\n", what, p, strerror(errno));
		return -1;
	}
	return 0;
}

static int prove(struct fleet *f, int argc, char **argv, int json)
{
	const char *zk = NULL, *out = NULL;
	char zabs[PATH_MAX], oabs[PATH_MAX], err[512];
	char **paths = calloc((size_t)argc, sizeof(char *));
	char **names = calloc((size_t)argc, sizeof(char *));
	int nw = 0, rc = CUZK_EXIT_USAGE;
	uint64_t job;

	if (!paths || !names)
		goto done;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--zkey") && i + 1 < argc)
			zk = argv[++i];
		else if (!strcmp(argv[i], "--out") && i + 1 < argc)
			out = argv[++i];
		else if (argv[i][0] == '-') {
			fprintf(stderr, "cuzk prove --queue: unknown option %s\n", argv[i]);
			goto done;
		} else {
			char *a = malloc(PATH_MAX), *n = malloc(PIPE_NAME_LEN);
			paths[nw] = a;
			names[nw++] = n;
			if (!a || !n || absolute("witness", argv[i], a))
				goto done;
			if (control_wtns_name(argv[i], n, PIPE_NAME_LEN)) {
				fprintf(stderr, "cuzk prove: witness %s: bad file name\n", argv[i]);
				goto done;
			}
			for (int j = 0; j < nw - 1; j++)
				if (!strcmp(names[j], n)) {
					fprintf(stderr,
						"cuzk prove: %s and %s both write %s.proof.json\n",
						paths[j], a, n);
					goto done;
				}
		}
	}
	if (!zk || !out || !nw) {
		fprintf(stderr, "cuzk prove --queue URL --zkey Z --out DIR W1.paths [...]\n");
		goto done;
	}
	if (absolute("zkey", zk, zabs) || absolute("out dir", out, oabs))
		goto done;
	if ((rc = fleet_job_add(f, zabs, oabs, (uint32_t)nw, (const char *const *)paths,
				(const char *const *)names, &job, err, sizeof(err)))) {
		fprintf(stderr, "cuzk prove: %s\n", err);
		rc = cuzk_exit_code(rc, CUZK_PROG_CLIENT);
		goto done;
	}
	if (json)
		printf("{\"job\": %llu, \"partitions\": %d}\n", (unsigned long long)job, nw);
	else
		printf("job %llu submitted to the queue: %d partition(s)\n",
		       (unsigned long long)job, nw);
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

/* Polls: the queue has no notification the client could wait on portably across
 * PostgreSQL-compatible engines (YugabyteDB has no LISTEN). */
static int wait_job(struct fleet *f, int argc, char **argv, int json)
{
	long long timeout_ms = -1;
	uint32_t done, failed, total;
	char err[512], *e;
	uint64_t job;
	struct timespec t0, t;
	int st;

	if (argc < 2 || !(job = strtoull(argv[1], &e, 10)) || *e) {
		fprintf(stderr, "cuzk wait JOB --queue URL [--timeout-ms N]\n");
		return CUZK_EXIT_USAGE;
	}
	if (argc > 3 && !strcmp(argv[2], "--timeout-ms"))
		timeout_ms = atoll(argv[3]);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		st = fleet_job_state(f, job, &done, &failed, &total, err, sizeof(err));
		if (st < 0 && st != -ECONNREFUSED) {
			fprintf(stderr, "cuzk wait: %s\n", err);
			return CUZK_EXIT_REFUSED;
		}
		if (st == -ECONNREFUSED) /* the database restarting: keep waiting */
			fleet_reconnect(f, err, sizeof(err));
		if (st > 0)
			break;
		clock_gettime(CLOCK_MONOTONIC, &t);
		if (timeout_ms >= 0 &&
		    (t.tv_sec - t0.tv_sec) * 1000 + (t.tv_nsec - t0.tv_nsec) / 1000000 >
			    timeout_ms) {
			fprintf(stderr, "cuzk wait: job %llu not finished after %lld ms\n",
				(unsigned long long)job, timeout_ms);
			return CUZK_EXIT_TIMEOUT;
		}
		usleep(200000);
	}
	if (json)
		printf("{\"job\": %llu, \"state\": \"%s\", \"done\": %u, \"failed\": %u}\n",
		       (unsigned long long)job, st == 1 ? "done" : "failed", done, failed);
	else
		printf("job %llu %s: %u done, %u failed\n", (unsigned long long)job,
		       st == 1 ? "done" : "failed", done, failed);
	return st == 1 ? CUZK_EXIT_OK : CUZK_EXIT_JOB_FAILED;
}

int fleet_client_main(int argc, char **argv, int json)
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
	if (!url)
		return -1;
	if (strcmp(argv[0], "prove") && strcmp(argv[0], "wait") && strcmp(argv[0], "status")) {
		fprintf(stderr, "cuzk %s: not a --queue command (prove, wait, status)\n", argv[0]);
		return CUZK_EXIT_USAGE;
	}
	if ((rc = fleet_open(&f, url, err, sizeof(err)))) {
		fprintf(stderr, "cuzk %s: %s\n", argv[0], err);
		return cuzk_exit_code(rc, CUZK_PROG_CLIENT);
	}
	if (!strcmp(argv[0], "prove"))
		rc = prove(f, argc, argv, json);
	else if (!strcmp(argv[0], "wait"))
		rc = wait_job(f, argc, argv, json);
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
