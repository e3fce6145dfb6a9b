/* intake.c — a submit's checks and copies, in a thread of their own (intake.h). */
#include "cuzk/intake.h"
#include "cuzk/barrier.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct intake *intake_new(struct control_req *r, const int *fds, size_t n_fds, uid_t uid,
			  gid_t gid, const gid_t *groups, size_t n_groups)
{
	struct intake *t = calloc(1, sizeof(*t));

	if (!t)
		return NULL;
	t->fds = malloc((n_fds ? n_fds : 1) * sizeof(*t->fds));
	t->groups = malloc((n_groups ? n_groups : 1) * sizeof(*t->groups));
	if (!t->fds || !t->groups) {
		free(t->fds);
		free(t->groups);
		free(t);
		return NULL;
	}
	memcpy(t->fds, fds, n_fds * sizeof(*fds));
	t->n_fds = n_fds;
	if (n_groups)
		memcpy(t->groups, groups, n_groups * sizeof(*groups));
	t->n_groups = n_groups;
	t->uid = uid;
	t->gid = gid;
	t->r = *r;
	memset(r, 0, sizeof(*r));
	t->notify_fd = -1;
	t->copy_fd = -1;
	t->sub.zkey_fd = t->sub.r1cs_fd = t->sub.out_fd = t->sub.wgen_fd = -1;
	return t;
}

static void *run(void *arg)
{
	struct intake *t = arg;
	const struct control_peer peer = { t->uid, t->gid, t->groups, t->n_groups };
	uint64_t one = 1;

	copies_progress_bind(&t->bytes);
	if (t->r.kind == CONTROL_PRELOAD)
		t->rc = control_circuit_check(&t->r, t->fds, t->n_fds, t->cp, t->buf_size, t->path,
					      &t->copy_fd, &t->e);
	else
		t->rc = control_submit_check(&t->r, t->fds, t->n_fds, &peer, t->cp, t->buf_size,
					     t->max_parts, &t->sub, &t->e);
	copies_progress_bind(NULL);
	/* Release pairs with the acquire in intake_done: rc, sub and e are written. */
	barrier_store_release(&t->done, 1);
	(void)!write(t->notify_fd, &one, sizeof(one));
	return NULL;
}

int intake_start(struct intake *t)
{
	pthread_attr_t a;
	pthread_t th;
	int rc;

	if ((rc = pthread_attr_init(&a)))
		return -rc;
	pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
	rc = pthread_create(&th, &a, run, t);
	pthread_attr_destroy(&a);
	return -rc;
}

int intake_done(struct intake *t)
{
	return barrier_load_acquire(&t->done); /* pairs with the release in run */
}

uint64_t intake_bytes(struct intake *t)
{
	return barrier_load_relaxed(&t->bytes); /* a progress count: no ordering needed */
}

void intake_free(struct intake *t)
{
	if (!t)
		return;
	if (!t->rc && barrier_load_relaxed(&t->done)) {
		control_submit_free(&t->sub, t->cp);
		copies_put(t->cp, t->copy_fd);
	}
	for (size_t i = 0; i < t->n_fds; i++)
		close(t->fds[i]);
	free(t->fds);
	free(t->groups);
	control_req_free(&t->r);
	free(t);
}
