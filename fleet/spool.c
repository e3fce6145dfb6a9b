/* spool.c — the fleet thread's spool dirs (spool.h): made, opened,
 * read and emptied; every path beneath them opened without following a link. */
#include "fleet/spool.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/os.h"
#include "fleet/spooled.h"

static int open_out(const char *dir)
{
    return open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
}

/* Every file in a private slot dir (cuzkd's own, 0700: nothing else writes there):
 * a previous partition's proof, input and reply, never to be mixed up with the next. */
static void priv_clean(int sfd)
{
    int fd = dup(sfd);
    DIR *dir = fd >= 0 ? fdopendir(fd) : NULL;
    struct dirent *e;

    if (!dir) {
        if (fd >= 0) close(fd);
        return;
    }
    while ((e = readdir(dir)))
        if (e->d_type != DT_DIR) unlinkat(sfd, e->d_name, 0);
    closedir(dir);
}

/* The spool dir of a job with no out dir: PRIV/SLOT, cuzkd's own (0700), opened
 * (created if need be); -1 with errno. */
static int open_priv(struct fleet_daemon *d, const struct slot *sl)
{
    char sub[16];
    int pfd, sfd;

    snprintf(sub, sizeof(sub), "%u", (unsigned)(sl - d->slots));
    if ((pfd = open(d->priv, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) < 0) return -1;
    if (mkdirat(pfd, sub, 0700) && errno != EEXIST) {
        close(pfd);
        return -1;
    }
    sfd = openat(pfd, sub, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    close(pfd);
    return sfd;
}

/* The slot's spool dir, opened: OUT/.cuzk-OWNER/ or, with no out dir, PRIV/SLOT. */
int spool_open(struct fleet_daemon *d, const struct slot *sl)
{
    char sn[300];
    int dfd, sfd;

    if (!sl->c.out_dir[0]) return open_priv(d, sl);
    fleet_spool_name(d->owner, sn, sizeof(sn));
    if ((dfd = open_out(sl->c.out_dir)) < 0) return -1;
    sfd = openat(dfd, sn, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    close(dfd);
    return sfd;
}

/* sl's proof is published (or given up): its spool dir goes once empty, unless
 * another slot of this daemon runs a partition of the same out dir (start_one runs
 * in this thread too, so no partition starts spooling there meanwhile). */
void spool_done(struct fleet_daemon *d, const struct slot *sl)
{
    if (!sl->c.out_dir[0]) return;
    for (uint32_t i = 0; i < d->n; i++)
        if (&d->slots[i] != sl && (d->slots[i].pid || d->slots[i].finishing) &&
            !strcmp(d->slots[i].c.out_dir, sl->c.out_dir))
            return;
    fleet_spool_remove(sl->c.out_dir, d->owner);
}

/* The slot's spool dir made ready for `cuzk prove --out`, its path in spool: NULL,
 * or why the partition is rejected. */
const char *spool_prepare(struct fleet_daemon *d, struct slot *sl, char *spool, size_t spoollen)
{
    char sn[300];
    const char *why = NULL;
    int dfd, sfd;

    fleet_spool_name(d->owner, sn, sizeof(sn));
    if (!sl->c.out_dir[0]) {
        /* No out dir: proved into this slot's private dir, stored only. A daemon
         * that does not store never claims such a job (fleet_claim). */
        if (!d->store)
            why = "no out dir and this cuzkd does not --store-proofs";
        else if ((sfd = open_priv(d, sl)) < 0)
            why = "cannot create its private spool dir in the run dir";
        else {
            priv_clean(sfd); /* a previous partition's, never to be mixed up */
            close(sfd);
            snprintf(spool, spoollen, "%s/%u", d->priv, (unsigned)(sl - d->slots));
        }
    } else if ((dfd = open_out(sl->c.out_dir)) < 0)
        why = "out dir is not a directory";
    else {
        /* The spool dir: ours alone (0700), never a link. */
        if (mkdirat(dfd, sn, 0700) && errno != EEXIST)
            why = "cannot create the spool dir in the out dir";
        else if ((sfd = openat(dfd, sn, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) < 0)
            why = "spool dir in the out dir is not a directory";
        else
            close(sfd);
        close(dfd);
        snprintf(spool, spoollen, "%s/%s", sl->c.out_dir, sn);
    }
    return why;
}

/* The slot's spooled files, removed (a discarded or failed proof, a stored one). */
void spool_remove_files(struct fleet_daemon *d, struct slot *sl)
{
    char tp[300], tq[300];
    int sfd;

    if (!fleet_name_valid(sl->c.name) || (sfd = spool_open(d, sl)) < 0)
        return; /* a name with a '/' names nothing of the spool dir */
    snprintf(tp, sizeof(tp), "%s.proof.json", sl->c.name);
    snprintf(tq, sizeof(tq), "%s.public.json", sl->c.name);
    unlinkat(sfd, tp, 0);
    unlinkat(sfd, tq, 0);
    close(sfd);
}

/* The stale spooled files of one out dir's spool dir after a restart, once
 * fleet_adopt(mine) published what this owner had finished: a discarded or failed
 * proof, a local job of the previous run that the queue has since given to another
 * daemon. */
void spool_clean_dir(struct fleet_daemon *d, const char *out_dir)
{
    char sn[300];
    int dfd, sfd;

    fleet_spool_name(d->owner, sn, sizeof(sn));
    if ((dfd = open_out(out_dir)) < 0) return; /* gone or not mounted here */
    if ((sfd = openat(dfd, sn, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) >= 0) {
        spooled_clean(sfd);
        close(sfd);
        unlinkat(dfd, sn, AT_REMOVEDIR); /* at start: no partition of ours runs yet */
    }
    close(dfd);
}

/* --store-proofs: the private spool dirs, RUN_DIR/fleet-INSTANCE.proofs/SLOT,
 * created 0700 and cuzkd's own (the run dir is cuzkd's, checked at its start); what a
 * previous run left in them is removed (its leases went back to the queue). */
int spool_make_priv(struct fleet_daemon *d, char *err, size_t errlen)
{
    struct stat st;

    if ((size_t)snprintf(d->priv, sizeof(d->priv), "%s/fleet-%s.proofs", d->run_dir, d->instance) >=
        sizeof(d->priv)) {
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
            priv_clean(sfd);
            close(sfd);
        }
    }
    return 0;
}

/* The names of a circuit claim's files in its private dir. */
static void input_names(const struct slot *sl, char in[300], char reply[300])
{
    snprintf(in, 300, "%s.%s", sl->c.name, sl->c.input_kind == FLEET_INPUT_WTNS ? "wtns" : "json");
    snprintf(reply, 300, "%s.reply", sl->c.name);
}

int spool_input(struct fleet_daemon *d, struct slot *sl, char *path, size_t pathlen, int *reply_fd)
{
    char in[300], reply[300], err[512];
    int sfd, fd;
    int64_t n;

    *reply_fd = -1;
    input_names(sl, in, reply);
    if ((sfd = open_priv(d, sl)) < 0) {
        snprintf(sl->why, sizeof(sl->why), "cannot open its private spool dir: %s", strerror(errno));
        sl->retry = 1;
        return -1;
    }
    /* 0600, never through a link, in cuzkd's own 0700 dir: the input is the
     * submitter's, read by this cuzkd's client only. */
    fd = openat(sfd, in, O_RDWR | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0) {
        snprintf(sl->why, sizeof(sl->why), "cannot write its input into the private spool dir: %s",
                 strerror(errno));
        sl->retry = 1;
        close(sfd);
        return -1;
    }
    n = fleet_input_read(d->f, d->owner, sl->c.job, sl->c.idx, sl->c.gen, fd, err, sizeof(err));
    close(fd);
    if (n > 0) *reply_fd = openat(sfd, reply, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
    close(sfd);
    if (n < 0) { /* the database (or a full disk): not the partition's fault */
        snprintf(sl->why, sizeof(sl->why), "%s", err);
        sl->retry = 1;
        return -1;
    }
    snprintf(path, pathlen, "%s/%u/%s", d->priv, (unsigned)(sl - d->slots), in);
    return n > 0;
}

void spool_remove_input(struct fleet_daemon *d, struct slot *sl)
{
    char in[300], reply[300];
    int sfd;

    if (sl->c.input_kind == FLEET_INPUT_PATH || !fleet_name_valid(sl->c.name) || (sfd = open_priv(d, sl)) < 0)
        return;
    input_names(sl, in, reply);
    unlinkat(sfd, in, 0);
    unlinkat(sfd, reply, 0);
    close(sfd);
}

char *spool_reply(struct fleet_daemon *d, struct slot *sl)
{
    char in[300], reply[300], why[256];
    char *r;
    int sfd;

    if ((sfd = open_priv(d, sl)) < 0) return NULL;
    input_names(sl, in, reply);
    r = spooled_read(sfd, reply, 1 << 20, why, sizeof(why));
    close(sfd);
    return r;
}
