/* intake.c — a submit's checks and copies, in a thread of their own (intake.h). */
#include "supervisor/intake.h"
#include "base/barrier.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

struct intake *intake_new(struct control_req *r, const int *fds, size_t n_fds, uid_t uid, gid_t gid,
                          const gid_t *groups, size_t n_groups)
{
    struct intake *t = calloc(1, sizeof(*t));

    if (!t) return NULL;
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
    if (n_groups) memcpy(t->groups, groups, n_groups * sizeof(*groups));
    t->n_groups = n_groups;
    t->uid = uid;
    t->gid = gid;
    t->r = *r;
    memset(r, 0, sizeof(*r));
    t->notify_fd = -1;
    t->durable_dfd = -1;
    t->copy_fd = -1;
    t->sub.zkey_fd = t->sub.r1cs_fd = t->sub.out_fd = t->sub.wgen_fd = -1;
    return t;
}

static void *run(void *arg)
{
    struct intake *t = arg;
    const struct control_peer peer = {
        t->uid, t->gid, t->groups, t->n_groups, t->bytes_quota, t->bytes_used
    };
    uint64_t one = 1;

    copies_progress_bind(&t->bytes);
    if (t->r.kind == CONTROL_PRELOAD)
        t->rc =
            control_circuit_check(&t->r, t->fds, t->n_fds, t->cp, t->buf_size, t->path, &t->copy_fd, &t->e);
    else
        t->rc = control_submit_check(&t->r, t->fds, t->n_fds, &peer, t->cp, t->buf_size, t->max_parts,
                                     &t->sub, &t->e);
    if (!t->rc && t->r.kind != CONTROL_PRELOAD && t->durable_dfd >= 0)
        t->dur_rc =
            intake_persist(t->durable_dfd, &t->sub, &t->copies, &t->held, t->dur_err, sizeof(t->dur_err));
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

    if ((rc = pthread_attr_init(&a))) return -rc;
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
    if (!t) return;
    if (!t->rc && barrier_load_relaxed(&t->done)) {
        control_submit_free(&t->sub, t->cp);
        copies_put(t->cp, t->copy_fd);
    }
    json_decref(t->copies);
    json_decref(t->held);
    if (t->durable_dfd >= 0) close(t->durable_dfd);
    for (size_t i = 0; i < t->n_fds; i++) close(t->fds[i]);
    free(t->fds);
    free(t->groups);
    control_req_free(&t->r);
    free(t);
}

int intake_persist(int dfd, const struct control_submit *sub, json_t **copies, json_t **held, char *err,
                   size_t errlen)
{
    json_t *c = json_object(), *h = json_array(), *parts = json_array();
    const struct {
        const char *key, *id;
        int fd;
    } sh[] = {
        { "zkey", sub->zkey_id, sub->zkey_fd },
        { "r1cs", sub->r1cs_id, sub->r1cs_fd },
        { "wgen", sub->wgen_id, sub->wgen_fd },
    };
    char name[CONTROL_ID_LEN + 16], token[25], e[400];
    unsigned char rnd[12];
    size_t i;
    json_t *v;
    int rc = 0;

    *copies = *held = NULL;
    if (!c || !h || !parts) {
        rc = -ENOMEM;
        snprintf(e, sizeof(e), "out of memory");
        goto fail;
    }
    json_object_set_new(c, "parts", parts);
    for (i = 0; i < sizeof(sh) / sizeof(sh[0]); i++) {
        if (sh[i].fd <= 0) continue;
        /* Shared by identity: named after the client's file as it was copied
         * (control_file_id, as copies_take keys its memfd), written once, then
         * only referenced. */
        if (!sh[i].id[0]) {
            rc = -EIO;
            snprintf(e, sizeof(e), "%s: its identity is unknown", sh[i].key);
            goto fail;
        }
        snprintf(name, sizeof(name), "%s-%s", sh[i].key, sh[i].id);
        if ((rc = copies_persist(dfd, sh[i].fd, name, e, sizeof(e))) < 0) goto fail;
        rc = 0;
        json_array_append_new(h, json_string(name));
        json_object_set_new(c, sh[i].key, json_string(name));
    }
    /* The job's own copies: 96 random bits make the name unique among every job
     * this store will ever hold, before the job has an id. */
    if (getrandom(rnd, sizeof(rnd), 0) != (ssize_t)sizeof(rnd)) {
        rc = -errno;
        snprintf(e, sizeof(e), "getrandom: %s", strerror(errno));
        goto fail;
    }
    for (i = 0; i < sizeof(rnd); i++) snprintf(token + 2 * i, 3, "%02x", rnd[i]);
    for (i = 0; i < sub->n; i++) {
        size_t j;

        /* A witness named again shares its copy (control_submit_check): written
         * once, and each partition records that one name. */
        for (j = 0; j < i && sub->wtns_fd[j] != sub->wtns_fd[i]; j++)
            ;
        if (j < i) {
            json_array_append(parts, json_array_get(parts, j));
            continue;
        }
        snprintf(name, sizeof(name), "part-%s-%zu", token, i);
        if ((rc = copies_persist(dfd, sub->wtns_fd[i], name, e, sizeof(e))) < 0) goto fail;
        rc = 0;
        json_array_append_new(h, json_string(name));
        json_array_append_new(parts, json_string(name));
    }
    *copies = c;
    *held = h;
    return 0;
fail:
    snprintf(err, errlen, "the job could not be recorded, so it was not accepted: %s", e);
    json_array_foreach (h, i, v)
        if (!strncmp(json_string_value(v), "part-", 5)) unlinkat(dfd, json_string_value(v), 0);
    json_decref(c);
    json_decref(h);
    return rc ? rc : -EIO;
}
