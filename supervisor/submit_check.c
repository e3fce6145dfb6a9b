/* submit_check.c — the checks of a submit's and a preload's files (submit_check.h), run by
 * an intake (intake.c) off cuzkd's loop: who may write the out directory, the size and
 * identity of each input, the witness generator's place, the copies. */
#include "supervisor/submit_check.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "supervisor/input_bounds.h"
#include "supervisor/peer_acl.h"
#include "supervisor/wgen_trust.h"
#include "zk/wtns.h"
#include "zk/zkey.h"

int control_peer_in_group(const struct control_peer *p, gid_t g)
{
    if (p->gid == g) return 1;
    for (size_t i = 0; i < p->n_groups; i++)
        if (p->groups[i] == g) return 1;
    return 0;
}

int control_peer_may_write_dirfd(const struct control_peer *peer, int fd, const struct stat *st)
{
    int acl;

    if (!S_ISDIR(st->st_mode)) return 0;
    if (peer->uid == 0) return 1;
    /* With an access ACL the mode's group bits are its mask, not the rights. */
    acl = peer_acl_may(peer, fd, st, 2 | 1);
    return acl >= 0 ? acl : control_peer_may_write_dir(peer, st);
}

int control_peer_may_write_dir(const struct control_peer *peer, const struct stat *st)
{
    mode_t need;

    if (!S_ISDIR(st->st_mode)) return 0;
    if (peer->uid == 0) return 1;
    /* The kernel's order: the owner's bits for the owner, else the group's for a
     * member, else the others' (a denying owner bit is not overridden by others'). */
    if (st->st_uid == peer->uid)
        need = S_IWUSR | S_IXUSR;
    else if (control_peer_in_group(peer, st->st_gid))
        need = S_IWGRP | S_IXGRP;
    else
        need = S_IWOTH | S_IXOTH;
    return (st->st_mode & need) == need;
}

/* Take a copy of input fds[idx] (copies.h); *out the copy's descriptor. */
static int input_copy(const char *what, const char *path, int idx, const int *fds, size_t n_fds, int shared,
                      uint64_t want, struct copies *cp, int *out, struct control_err *e)
{
    char err[512];
    int fd;

    if (idx < 0 || (size_t)idx >= n_fds)
        return control_fail(e, PROTO_E_BAD_REQUEST, -EINVAL, "%s %s: no descriptor passed for it", what,
                            path);
    fd = copies_take_sized(cp, fds[idx], shared, want, what, path, err, sizeof(err));
    if (fd < 0)
        return control_fail(
            e, fd == -EINVAL || fd == -EBADF || fd == -ESTALE ? PROTO_E_BAD_INPUT : PROTO_E_INTERNAL, fd,
            "%s", err);
    *out = fd;
    return 0;
}

void control_file_id(const struct stat *st, char id[CONTROL_ID_LEN])
{
    if (S_ISDIR(st->st_mode))
        snprintf(id, CONTROL_ID_LEN, "%llu:%llu", (unsigned long long)st->st_dev,
                 (unsigned long long)st->st_ino);
    else
        snprintf(id, CONTROL_ID_LEN, "%llu:%llu:%lld:%lld.%09ld:%lld.%09ld", (unsigned long long)st->st_dev,
                 (unsigned long long)st->st_ino, (long long)st->st_size, (long long)st->st_mtim.tv_sec,
                 st->st_mtim.tv_nsec, (long long)st->st_ctim.tv_sec, st->st_ctim.tv_nsec);
}

/* id of the client's descriptor (after its copy: the identity the copy was taken of;
 * copies_take refuses a file that changed while it was read). */
static void fd_id(int fd, char id[CONTROL_ID_LEN])
{
    struct stat st;

    id[0] = '\0';
    if (!fstat(fd, &st)) control_file_id(&st, id);
}

static void self_path(char *buf, size_t len, int fd)
{
    snprintf(buf, len, "/proc/self/fd/%d", fd);
}

void control_submit_free(struct control_submit *s, struct copies *cp)
{
    if (cp) {
        copies_put(cp, s->zkey_fd);
        copies_put(cp, s->r1cs_fd);
        copies_put(cp, s->wgen_fd);
        for (size_t i = 0; s->wtns_fd && i < s->n; i++) copies_put(cp, s->wtns_fd[i]);
    }
    if (s->out_fd > 0) close(s->out_fd);
    free(s->wtns);
    free(s->name);
    free(s->wtns_fd);
    free(s->wtns_id);
    s->wtns = NULL;
    s->name = NULL;
    s->wtns_fd = NULL;
    s->wtns_id = NULL;
    s->zkey_fd = s->r1cs_fd = s->out_fd = s->wgen_fd = -1;
}

/* The out directory: a directory the peer could write itself; in a sticky one no
 * output would replace another user's file (the kernel would not let the peer). */
static int check_out_dir(const struct control_req *r, const int *fds, size_t n_fds,
                         const struct control_peer *peer, struct control_submit *s, struct control_err *e)
{
    struct stat st, o;
    int dfd;

    if (r->out_fd < 0 || (size_t)r->out_fd >= n_fds)
        return control_fail(e, PROTO_E_BAD_REQUEST, -EINVAL,
                            "out_dir %s: no descriptor passed "
                            "for it",
                            r->out_dir);
    dfd = fds[r->out_fd];
    if (fstat(dfd, &st))
        return control_fail(e, PROTO_E_OUTPUT, -errno, "out_dir %s: %s", r->out_dir, strerror(errno));
    if (!S_ISDIR(st.st_mode))
        return control_fail(e, PROTO_E_OUTPUT, -ENOTDIR,
                            "out_dir %s: the descriptor passed is "
                            "not a directory",
                            r->out_dir);
    if (!control_peer_may_write_dirfd(peer, dfd, &st))
        return control_fail(e, PROTO_E_PERM, -EACCES,
                            "out_dir %s: uid %u may not create files "
                            "there, so cuzkd will not either",
                            r->out_dir, (unsigned)peer->uid);
    if ((st.st_mode & S_ISVTX) && peer->uid != 0 && st.st_uid != peer->uid)
        for (size_t i = 0; i < s->n; i++)
            for (int k = 0; k < 2; k++) {
                char nm[PIPE_NAME_LEN + 16];

                snprintf(nm, sizeof(nm), "%s.%s.json", s->name[i], k ? "public" : "proof");
                if (!fstatat(dfd, nm, &o, AT_SYMLINK_NOFOLLOW) && o.st_uid != peer->uid)
                    return control_fail(e, PROTO_E_PERM, -EACCES,
                                        "out_dir %s: %s is "
                                        "another user's file in a sticky directory: uid %u "
                                        "may not replace it",
                                        r->out_dir, nm, (unsigned)peer->uid);
            }
    s->out_fd = fcntl(dfd, F_DUPFD_CLOEXEC, 3);
    if (s->out_fd < 0)
        return control_fail(e, PROTO_E_INTERNAL, -errno, "out_dir %s: %s", r->out_dir, strerror(errno));
    snprintf(s->out_dir, sizeof(s->out_dir), "%s", r->out_dir);
    return 0;
}

static struct control_policy policy;

void control_set_policy(const struct control_policy *p)
{
    policy = *p;
}

/* What a submit's files will cost, found before any copy: the size each must have
 * (from its headers where the format fixes it, input_bounds.h), which witnesses name
 * a file named before (dup_of: its first index, else SIZE_MAX), and the sum of the
 * distinct files, checked against the peer's --quota-bytes. */
struct sizes {
    uint64_t zkey, r1cs, wgen, *wtns;
    uint64_t *off; /* a batch (r->batch_path): each input's offset in its file, else NULL */
    size_t *dup_of;
    dev_t *dev; /* each witness's file: (dev, inode), inode 0 if not a regular file */
    ino_t *ino;
};

static int regular_size(int fd, const char *what, const char *path, uint64_t *size, struct control_err *e)
{
    struct stat st;

    /* Only the size: copies_take refuses what is not a regular file, unread. */
    if (fstat(fd, &st))
        return control_fail(e, PROTO_E_BAD_INPUT, -errno, "%s %s: %s", what, path, strerror(errno));
    *size = S_ISREG(st.st_mode) ? (uint64_t)st.st_size : 0;
    return 0;
}

/* The frames of a batch (protocol.h, "inputs_batch"): each a 4-byte little-endian
 * length and that many bytes, count of them filling the file exactly. Read from the
 * client's file (a few bytes per input); *total gets the inputs' bytes. */
static int batch_frames(const struct control_req *r, const int *fds, size_t n_fds, struct sizes *z,
                        uint64_t *total, struct control_err *e)
{
    struct stat st;
    uint64_t at = 0;
    int fd;

    if (r->batch_fd < 0 || (size_t)r->batch_fd >= n_fds)
        return control_fail(e, PROTO_E_BAD_REQUEST, -EINVAL, "inputs_batch %s: no descriptor passed for it",
                            r->batch_path);
    fd = fds[r->batch_fd];
    if (fstat(fd, &st))
        return control_fail(e, PROTO_E_BAD_INPUT, -errno, "inputs_batch %s: %s", r->batch_path,
                            strerror(errno));
    if (!S_ISREG(st.st_mode))
        return control_fail(e, PROTO_E_BAD_INPUT, -EINVAL, "inputs_batch %s: not a regular file",
                            r->batch_path);
    if (!(z->off = calloc(r->n_witnesses, sizeof(*z->off))))
        return control_fail(e, PROTO_E_INTERNAL, -ENOMEM, "out of memory");
    for (size_t i = 0; i < r->n_witnesses; i++) {
        unsigned char le[4];
        uint64_t len;
        ssize_t got;

        while ((got = pread(fd, le, 4, (off_t)at)) < 0 && errno == EINTR) {
        }
        if (got != 4)
            return control_fail(e, PROTO_E_BAD_INPUT, -EINVAL,
                                "inputs_batch %s: it ends before input %zu's frame (%zu of %zu inputs)",
                                r->batch_path, i, i, r->n_witnesses);
        len = (uint64_t)le[0] | (uint64_t)le[1] << 8 | (uint64_t)le[2] << 16 | (uint64_t)le[3] << 24;
        if (!len || len > (uint64_t)st.st_size - at - 4 || at + 4 > (uint64_t)st.st_size)
            return control_fail(e, PROTO_E_BAD_INPUT, -EINVAL,
                                "inputs_batch %s: input %zu's frame (%llu bytes) is empty or past the "
                                "file's end",
                                r->batch_path, i, (unsigned long long)len);
        if (r->max_input_bytes && len > r->max_input_bytes)
            return control_fail(e, PROTO_E_INPUT_LIMIT, -EFBIG,
                                "input %s: %llu bytes, more than circuit %s takes (max-input-bytes %llu)",
                                r->witnesses[i], (unsigned long long)len, r->circuit ? r->circuit : "?",
                                (unsigned long long)r->max_input_bytes);
        z->off[i] = at + 4;
        z->wtns[i] = len;
        z->dup_of[i] = SIZE_MAX;
        *total += len;
        at += 4 + len;
    }
    if (at != (uint64_t)st.st_size)
        return control_fail(e, PROTO_E_BAD_INPUT, -EINVAL,
                            "inputs_batch %s: %llu bytes after its %zu inputs' frames", r->batch_path,
                            (unsigned long long)((uint64_t)st.st_size - at), r->n_witnesses);
    return 0;
}

static int submit_sizes(const struct control_req *r, const int *fds, size_t n_fds,
                        const struct control_peer *peer, struct control_submit *s, struct sizes *z,
                        struct control_err *e)
{
    char err[512];
    uint64_t total = 0;
    int rc;

    z->wtns = calloc(s->n ? s->n : 1, sizeof(*z->wtns));
    z->dup_of = calloc(s->n ? s->n : 1, sizeof(*z->dup_of));
    z->dev = calloc(s->n ? s->n : 1, sizeof(*z->dev));
    z->ino = calloc(s->n ? s->n : 1, sizeof(*z->ino));
    if (!z->wtns || !z->dup_of || !z->dev || !z->ino)
        return control_fail(e, PROTO_E_INTERNAL, -ENOMEM, "out of memory");
    if (r->zkey_fd < 0 || (size_t)r->zkey_fd >= n_fds)
        return control_fail(e, PROTO_E_BAD_REQUEST, -EINVAL, "zkey %s: no descriptor passed for it", r->zkey);
    if ((rc = input_bounds_zkey(fds[r->zkey_fd], r->zkey, &z->zkey, err, sizeof(err))))
        return control_fail(e, PROTO_E_BAD_INPUT, rc, "%s", err);
    total += z->zkey;
    if (r->r1cs && r->r1cs_fd >= 0 && (size_t)r->r1cs_fd < n_fds) {
        if ((rc = regular_size(fds[r->r1cs_fd], "r1cs", r->r1cs, &z->r1cs, e))) return rc;
        total += z->r1cs;
    }
    if (r->witness_gen && r->witness_gen_fd >= 0 && (size_t)r->witness_gen_fd < n_fds) {
        if ((rc = regular_size(fds[r->witness_gen_fd], "witness generator", r->witness_gen, &z->wgen, e)))
            return rc;
        total += z->wgen;
    }
    if (r->batch_path && (rc = batch_frames(r, fds, n_fds, z, &total, e))) return rc;
    for (size_t i = 0; i < s->n && !r->batch_path; i++) {
        int idx = r->witness_fd[i];
        struct stat a;

        z->dup_of[i] = SIZE_MAX;
        if (idx < 0 || (size_t)idx >= n_fds)
            return control_fail(e, PROTO_E_BAD_REQUEST, -EINVAL, "witness %s: no descriptor passed for it",
                                r->witnesses[i]);
        if (fstat(fds[idx], &a))
            return control_fail(e, PROTO_E_BAD_INPUT, -errno, "witness %s: %s", r->witnesses[i],
                                strerror(errno));
        /* Quadratic in the witnesses (at most --max-parts, 4096: 8 M compares of
         * two numbers, milliseconds), no syscall per pair. */
        z->dev[i] = a.st_dev;
        z->ino[i] = S_ISREG(a.st_mode) ? a.st_ino : 0;
        for (size_t j = 0; j < i && z->dup_of[i] == SIZE_MAX && z->ino[i]; j++)
            if (z->dup_of[j] == SIZE_MAX && z->ino[j] == z->ino[i] && z->dev[j] == z->dev[i])
                z->dup_of[i] = j;
        if (z->dup_of[i] != SIZE_MAX) continue;
        if (!S_ISREG(a.st_mode)) continue; /* refused by its copy, unread, with the reason */
        if (r->max_input_bytes && (uint64_t)a.st_size > r->max_input_bytes)
            return control_fail(e, PROTO_E_INPUT_LIMIT, -EFBIG,
                                "%s %s: %lld bytes, more than circuit %s takes "
                                "(max-input-bytes %llu)",
                                r->witness_gen ? "input" : "witness", r->witnesses[i], (long long)a.st_size,
                                r->circuit ? r->circuit : "?", (unsigned long long)r->max_input_bytes);
        if (r->witness_gen)
            z->wtns[i] = (uint64_t)a.st_size; /* input.json: its bytes */
        else if ((rc = input_bounds_wtns(fds[idx], r->witnesses[i], &z->wtns[i], err, sizeof(err))))
            return control_fail(e, PROTO_E_BAD_INPUT, rc, "%s", err);
        total += z->wtns[i];
    }
    s->bytes = total;
    if (peer->bytes_quota && total + peer->bytes_used > peer->bytes_quota)
        return control_fail(e, PROTO_E_QUOTA, -EDQUOT,
                            "quota: this job's files are %.1f MiB and uid %u's unfinished jobs "
                            "hold %.1f MiB of copies; --quota-bytes is %.1f MiB: retry when "
                            "some finish",
                            (double)total / 1048576.0, (unsigned)peer->uid,
                            (double)peer->bytes_used / 1048576.0, (double)peer->bytes_quota / 1048576.0);
    return 0;
}

/* s's per-witness arrays and each witness's output name: its "name", else the file's
 * name without .wtns; names that would write the same proof file are refused. */
static int submit_names(const struct control_req *r, struct control_submit *s, struct control_err *e)
{
    s->n = r->n_witnesses;
    s->wtns = calloc(s->n, sizeof(*s->wtns));
    s->name = calloc(s->n, sizeof(*s->name));
    s->wtns_fd = malloc(s->n * sizeof(*s->wtns_fd));
    s->wtns_id = calloc(s->n, sizeof(*s->wtns_id));
    if (!s->wtns || !s->name || !s->wtns_fd || !s->wtns_id)
        return control_fail(e, PROTO_E_INTERNAL, -ENOMEM, "out of memory");
    for (size_t i = 0; i < s->n; i++) s->wtns_fd[i] = -1;
    for (size_t i = 0; i < s->n; i++) {
        if (r->witness_names[i]
                ? snprintf(s->name[i], PIPE_NAME_LEN, "%s", r->witness_names[i]) >= PIPE_NAME_LEN
                : proto_wtns_name(r->witnesses[i], s->name[i], PIPE_NAME_LEN))
            return control_fail(e, PROTO_E_BAD_INPUT, -EINVAL,
                                "witness %s: its output name "
                                "must be 1 to %d bytes (without .wtns)",
                                r->witnesses[i], PIPE_NAME_LEN - 1);
        if (!control_name_valid(s->name[i]))
            return control_fail(e, PROTO_E_BAD_INPUT, -EINVAL,
                                "witness %s: output name \"%s\" "
                                "refused: no '/', no control character, not . or ..",
                                r->witnesses[i], s->name[i]);
        for (size_t j = 0; j < i; j++)
            if (!strcmp(s->name[i], s->name[j]))
                return control_fail(e, PROTO_E_BAD_INPUT, -EINVAL,
                                    "witnesses %s and %s "
                                    "would both write %s.proof.json: rename one",
                                    r->witnesses[j], r->witnesses[i], s->name[i]);
        snprintf(s->wtns[i], JOBTAB_PATH_LEN, "%s", r->witnesses[i]);
    }
    return 0;
}

/* The generator: a shared copy like a zkey (one per distinct file, kept for later
 * jobs); the synth dlopens the copy, never the client's path. */
static int copy_wgen(const struct control_req *r, const int *fds, size_t n_fds, struct copies *cp,
                     uint64_t want, struct control_submit *s, struct control_err *e)
{
    char err[512];
    int rc;

    snprintf(s->wgen, sizeof(s->wgen), "%s", r->witness_gen);
    /* Native code the synth loads (and a load runs its constructors): only from
     * the operator's --wgen-dir, only a cuzk generator (wgen_trust.h). Checked on
     * the client's descriptor, the file the copy is taken of. */
    if (r->witness_gen_fd < 0 || (size_t)r->witness_gen_fd >= n_fds)
        return control_fail(e, PROTO_E_BAD_REQUEST, -EINVAL,
                            "witness generator %s: no descriptor passed for it", r->witness_gen);
    if ((rc = wgen_trust_check(fds[r->witness_gen_fd], policy.wgen_dirs, r->witness_gen, err, sizeof(err))))
        return control_fail(e, PROTO_E_BAD_INPUT, rc, "%s", err);
    if ((rc = input_copy("witness generator", r->witness_gen, r->witness_gen_fd, fds, n_fds, 1, want, cp,
                         &s->wgen_fd, e)))
        return rc;
    fd_id(fds[r->witness_gen_fd], s->wgen_id);
    return 0;
}

/* A copy of each witness (or input.json). A file named again (the same descriptor, or
 * another of the same file) is copied once: each partition holds a reference to that
 * copy. */
static int copy_witnesses(const struct control_req *r, const int *fds, size_t n_fds, struct copies *cp,
                          const struct sizes *sz, struct control_submit *s, struct control_err *e)
{
    int rc;

    for (size_t i = 0; i < s->n; i++) {
        if (sz->dup_of[i] != SIZE_MAX) {
            size_t j = sz->dup_of[i];

            if (copies_ref(cp, s->wtns_fd[j]))
                return control_fail(e, PROTO_E_INTERNAL, -ENOENT, "witness copy lost");
            s->wtns_fd[i] = s->wtns_fd[j];
            memcpy(s->wtns_id[i], s->wtns_id[j], CONTROL_ID_LEN);
            continue;
        }
        if (sz->off) { /* one input of a batch: its frame's bytes */
            char err[512];
            int fd = copies_take_range(cp, fds[r->witness_fd[i]], sz->off[i], sz->wtns[i], "input",
                                       r->witnesses[i], err, sizeof(err));
            size_t l;

            if (fd < 0)
                return control_fail(
                    e, fd == -EINVAL || fd == -EBADF || fd == -ESTALE ? PROTO_E_BAD_INPUT : PROTO_E_INTERNAL,
                    fd, "%s", err);
            s->wtns_fd[i] = fd;
            fd_id(fds[r->witness_fd[i]], s->wtns_id[i]);
            l = strlen(s->wtns_id[i]);
            snprintf(s->wtns_id[i] + l, CONTROL_ID_LEN - l, "#%zu", i);
            continue;
        }
        if ((rc = input_copy(s->wgen[0] ? "input" : "witness", r->witnesses[i], r->witness_fd[i], fds, n_fds,
                             0, sz->wtns[i], cp, &s->wtns_fd[i], e)))
            return rc;
        fd_id(fds[r->witness_fd[i]], s->wtns_id[i]);
    }
    return 0;
}

/* The copies of every input, and their identities: zkey, r1cs, generator, witnesses. */
static int submit_copies(const struct control_req *r, const int *fds, size_t n_fds, struct copies *cp,
                         const struct sizes *sz, struct control_submit *s, struct control_err *e)
{
    int rc;

    if ((rc = input_copy("zkey", r->zkey, r->zkey_fd, fds, n_fds, 1, sz->zkey, cp, &s->zkey_fd, e)))
        return rc;
    fd_id(fds[r->zkey_fd], s->zkey_id);
    if (!r->results_store) fd_id(fds[r->out_fd], s->out_id);
    if (r->r1cs) {
        snprintf(s->r1cs, sizeof(s->r1cs), "%s", r->r1cs);
        if ((rc = input_copy("r1cs", r->r1cs, r->r1cs_fd, fds, n_fds, 1, sz->r1cs, cp, &s->r1cs_fd, e)))
            return rc;
        fd_id(fds[r->r1cs_fd], s->r1cs_id);
    }
    if (r->witness_gen && (rc = copy_wgen(r, fds, n_fds, cp, sz->wgen, s, e))) return rc;
    return copy_witnesses(r, fds, n_fds, cp, sz, s, e);
}

/* The zkey opens and its partitions fit a buffer (pipeline.h: (3n + nvars) * 32).
 * Mapped from our sealed copy: the client cannot shrink it under us (item 6). */
static int zkey_fits(const struct control_req *r, uint64_t buf_size, zkey *z, struct control_submit *s,
                     struct control_err *e)
{
    char err[512], zp[64];
    int rc;

    self_path(zp, sizeof(zp), s->zkey_fd);
    if ((rc = zkey_open(z, zp, err, sizeof(err)))) {
        pipe_err_rename(err, sizeof(err), zp, r->zkey);
        return control_fail(e, PROTO_E_BAD_INPUT, rc, "zkey %s: %s", r->zkey, err);
    }
    s->domain_size = z->domain_size;
    s->nvars = z->nvars;
    s->buf_need = (3ull * z->domain_size + z->nvars) * 32ull;
    if (s->buf_need > buf_size)
        return control_fail(e, PROTO_E_TOO_BIG, -EFBIG,
                            "zkey %s: a partition of this circuit "
                            "needs %.1f MiB ((3 x %u + %u) x 32 bytes), buffers are %.1f MiB: start "
                            "cuzkd with --buffer-mb %llu or more",
                            r->zkey, (double)s->buf_need / 1048576.0, z->domain_size, z->nvars,
                            (double)buf_size / 1048576.0,
                            (unsigned long long)((s->buf_need + (1u << 20) - 1) >> 20));
    if (s->wgen[0] && z->npublic + 1 > PIPE_PUBLIC_MAX)
        return control_fail(e, PROTO_E_BAD_INPUT, -E2BIG,
                            "zkey %s has %u public signals; a job "
                            "from input.json takes at most %d: compute .wtns files with cuzk witness "
                            "and submit those",
                            r->zkey, z->npublic, PIPE_PUBLIC_MAX - 1);
    return 0;
}

/* Each witness belongs to this circuit (the synth checks again; failing here tells
 * the user at once and keeps a wrong job out of the table). A generator is not loaded
 * here: that would run its code in cuzkd. The synth checks it against the zkey before
 * any input (curve, witness size), and `cuzk prove` checks too. */
static int witnesses_fit(const struct control_req *r, const zkey *z, const struct control_submit *s,
                         struct control_err *e)
{
    char err[512], zp[64], wp[64];
    int rc;

    self_path(zp, sizeof(zp), s->zkey_fd);
    for (size_t i = 0; i < s->n && !s->wgen[0]; i++) {
        wtns w;

        memset(&w, 0, sizeof(w));
        self_path(wp, sizeof(wp), s->wtns_fd[i]);
        if ((rc = wtns_open(&w, wp, err, sizeof(err)))) {
            pipe_err_rename(err, sizeof(err), wp, r->witnesses[i]);
            return control_fail(e, PROTO_E_BAD_INPUT, rc, "witness %s: %s", r->witnesses[i], err);
        }
        rc = wtns_check_zkey(&w, z, err, sizeof(err));
        wtns_close(&w);
        if (rc) {
            pipe_err_rename(err, sizeof(err), wp, r->witnesses[i]);
            pipe_err_rename(err, sizeof(err), zp, r->zkey);
            return control_fail(e, PROTO_E_BAD_INPUT, rc, "%s", err);
        }
    }
    return 0;
}

int control_submit_check(const struct control_req *r, const int *fds, size_t n_fds,
                         const struct control_peer *peer, struct copies *cp, uint64_t buf_size,
                         uint32_t max_parts, struct control_submit *s, struct control_err *e)
{
    struct sizes sz = { 0 };
    zkey z;
    int rc;

    memset(s, 0, sizeof(*s));
    memset(&z, 0, sizeof(z));
    s->zkey_fd = s->r1cs_fd = s->out_fd = s->wgen_fd = -1;
    s->priority = r->priority;
    /* A submit by circuit name gets its zkey from cuzkd (catalog.c) before this. */
    if (!r->zkey)
        return control_fail(e, PROTO_E_BAD_REQUEST, -EINVAL,
                            "circuit %s: a submit by name whose zkey cuzkd did not add",
                            r->circuit ? r->circuit : "?");
    if (r->n_witnesses > max_parts)
        return control_fail(e, PROTO_E_FULL, -E2BIG,
                            "%zu witnesses: one job holds at most %u "
                            "partitions (--max-parts); split it",
                            r->n_witnesses, max_parts);
    /* Names first: cheap, and the out dir check needs them. */
    if ((rc = submit_names(r, s, e))) goto out;
    snprintf(s->circuit, sizeof(s->circuit), "%s", r->circuit ? r->circuit : "");
    snprintf(s->tenant, sizeof(s->tenant), "%s", r->tenant ? r->tenant : "");
    s->max_running = r->max_running;
    snprintf(s->idem_key, sizeof(s->idem_key), "%s", r->idem_key ? r->idem_key : "");
    snprintf(s->body_sha256, sizeof(s->body_sha256), "%s", r->body_sha256 ? r->body_sha256 : "");
    if (r->metadata) { /* its compact text fits: control_parse checked it (proto_metadata_valid) */
        char *t = json_dumps(r->metadata, JSON_COMPACT);

        snprintf(s->metadata, sizeof(s->metadata), "%s", t ? t : "");
        free(t);
    }
    /* Results kept in the store: the out dir is cuzkd's own, made when the job starts. */
    s->results_store = r->results_store;
    if (!r->results_store && (rc = check_out_dir(r, fds, n_fds, peer, s, e))) goto out;
    snprintf(s->zkey, sizeof(s->zkey), "%s", r->zkey);
    if ((rc = submit_sizes(r, fds, n_fds, peer, s, &sz, e)) ||
        (rc = submit_copies(r, fds, n_fds, cp, &sz, s, e)) || (rc = zkey_fits(r, buf_size, &z, s, e)))
        goto out;
    rc = witnesses_fit(r, &z, s, e);
out:
    zkey_close(&z);
    free(sz.wtns);
    free(sz.off);
    free(sz.dup_of);
    free(sz.dev);
    free(sz.ino);
    if (rc) control_submit_free(s, cp);
    return rc;
}

int control_circuit_check(const struct control_req *r, const int *fds, size_t n_fds, struct copies *cp,
                          uint64_t buf_size, char out[JOBTAB_PATH_LEN], int *copy_fd, struct control_err *e)
{
    char err[512], zp[64];
    uint64_t need;
    zkey z;
    int rc;

    *copy_fd = -1;
    if (strlen(r->zkey) >= JOBTAB_PATH_LEN)
        return control_fail(e, PROTO_E_BAD_REQUEST, -ENAMETOOLONG,
                            "zkey %s: path longer than "
                            "%d bytes",
                            r->zkey, JOBTAB_PATH_LEN - 1);
    snprintf(out, JOBTAB_PATH_LEN, "%s", r->zkey);
    if (r->kind == CONTROL_EVICT) return 0; /* by name: opens nothing */
    {
        uint64_t want;

        if (r->zkey_fd < 0 || (size_t)r->zkey_fd >= n_fds)
            return control_fail(e, PROTO_E_BAD_REQUEST, -EINVAL, "zkey %s: no descriptor passed for it",
                                r->zkey);
        if ((rc = input_bounds_zkey(fds[r->zkey_fd], r->zkey, &want, err, sizeof(err))))
            return control_fail(e, PROTO_E_BAD_INPUT, rc, "%s", err);
        if ((rc = input_copy("zkey", r->zkey, r->zkey_fd, fds, n_fds, 1, want, cp, copy_fd, e))) return rc;
    }
    memset(&z, 0, sizeof(z));
    self_path(zp, sizeof(zp), *copy_fd);
    if ((rc = zkey_open(&z, zp, err, sizeof(err)))) {
        pipe_err_rename(err, sizeof(err), zp, r->zkey);
        rc = control_fail(e, PROTO_E_BAD_INPUT, rc, "zkey %s: %s", r->zkey, err);
        goto err;
    }
    need = (3ull * z.domain_size + z.nvars) * 32ull;
    zkey_close(&z);
    if (need > buf_size) {
        rc = control_fail(e, PROTO_E_TOO_BIG, -EFBIG,
                          "zkey %s: a partition of this circuit "
                          "needs %.1f MiB, buffers are %.1f MiB: preloading it would not help; "
                          "start cuzkd with --buffer-mb %llu or more",
                          r->zkey, (double)need / 1048576.0, (double)buf_size / 1048576.0,
                          (unsigned long long)((need + (1u << 20) - 1) >> 20));
        goto err;
    }
    return 0;
err:
    copies_put(cp, *copy_fd);
    *copy_fd = -1;
    return rc;
}
