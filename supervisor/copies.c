/* copies.c — sealed memfd copies of the files clients pass (copies.h says why). */
#include "supervisor/copies.h"
#include "base/barrier.h"
#include "base/os.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#define COPY_CHUNK (1u << 20)

struct copy_entry {
    int fd; /* cuzkd's descriptor of the sealed memfd */
    int shared;
    unsigned refs;
    uint64_t last_use;
    dev_t dev; /* the client file's identity when copied (shared only) */
    ino_t ino;
    off_t size;
    struct timespec mtim, ctim;
};

static _Thread_local _Atomic uint64_t *progress; /* copies_progress_bind */

void copies_init(struct copies *c, unsigned keep)
{
    memset(c, 0, sizeof(*c));
    c->keep = keep;
    pthread_mutex_init(&c->lock, NULL);
}

void copies_free(struct copies *c)
{
    for (size_t i = 0; i < c->n; i++) close(c->e[i].fd);
    free(c->e);
    pthread_mutex_destroy(&c->lock); /* a zeroed one is the static initializer's */
    memset(c, 0, sizeof(*c));
}

void copies_progress_bind(_Atomic uint64_t *bytes)
{
    progress = bytes;
}

static int same_file(const struct copy_entry *e, const struct stat *sb)
{
    return e->dev == sb->st_dev && e->ino == sb->st_ino && e->size == sb->st_size &&
        e->mtim.tv_sec == sb->st_mtim.tv_sec && e->mtim.tv_nsec == sb->st_mtim.tv_nsec &&
        e->ctim.tv_sec == sb->st_ctim.tv_sec && e->ctim.tv_nsec == sb->st_ctim.tv_nsec;
}

static const char *kind_of(mode_t m)
{
    return S_ISFIFO(m) ? "a FIFO"
        : S_ISCHR(m)   ? "a character device"
        : S_ISBLK(m)   ? "a block device"
        : S_ISSOCK(m)  ? "a socket"
        : S_ISDIR(m)   ? "a directory"
                       : "not a regular file";
}

/* Copy size bytes of src from offset start (by pread: the client's file offset is
 * not ours to move) into dst. 0, -ESTALE when the file ended early, or -errno. */
static int copy_bytes(int dst, int src, off_t start, off_t size)
{
    char *buf = malloc(COPY_CHUNK);
    off_t off = 0;
    int rc = 0;

    if (!buf) return -ENOMEM;
    while (off < size) {
        size_t want = (size_t)(size - off) < COPY_CHUNK ? (size_t)(size - off) : COPY_CHUNK;
        ssize_t r = pread(src, buf, want, start + off), w;

        if (r < 0 && errno == EINTR) continue;
        if (r < 0) {
            rc = -errno;
            break;
        }
        if (r == 0) {
            rc = -ESTALE; /* truncated under us */
            break;
        }
        for (ssize_t done = 0; done < r; done += w) {
            w = write(dst, buf + done, (size_t)(r - done));
            if (w < 0 && errno == EINTR) {
                w = 0;
                continue;
            }
            if (w < 0) {
                rc = -errno;
                goto out;
            }
        }
        off += r;
        if (progress) barrier_fetch_add_relaxed(progress, (uint64_t)r); /* a count only */
    }
out:
    free(buf);
    return rc;
}

/* Close unreferenced shared copies beyond keep, least recently used first. */
static void trim(struct copies *c)
{
    for (;;) {
        size_t idle = 0, victim = c->n;

        for (size_t i = 0; i < c->n; i++)
            if (!c->e[i].refs) {
                idle++;
                if (victim == c->n || c->e[i].last_use < c->e[victim].last_use) victim = i;
            }
        if (idle <= c->keep) return;
        close(c->e[victim].fd);
        c->bytes -= (uint64_t)c->e[victim].size;
        c->e[victim] = c->e[--c->n];
    }
}

/* A new reference to a shared copy of the file of sb, or -1 (c->lock held). */
static int shared_ref_locked(struct copies *c, const struct stat *sb)
{
    for (size_t i = 0; i < c->n; i++)
        if (c->e[i].shared && same_file(&c->e[i], sb)) {
            c->e[i].refs++;
            c->e[i].last_use = ++c->clock;
            return c->e[i].fd;
        }
    return -1;
}

static int shared_ref(struct copies *c, const struct stat *sb)
{
    int fd;

    pthread_mutex_lock(&c->lock);
    fd = shared_ref_locked(c, sb);
    pthread_mutex_unlock(&c->lock);
    return fd;
}

int copies_take(struct copies *c, int client_fd, int shared, const char *what, const char *display, char *err,
                size_t errlen)
{
    return copies_take_sized(c, client_fd, shared, 0, what, display, err, errlen);
}

/* The client's file may be copied: a regular file (a FIFO or device could block us
 * forever, item 5) open for reading. *sb: its stat. */
static int source_check(int client_fd, struct stat *sb, const char *what, const char *display, char *err,
                        size_t errlen)
{
    int fl, rc;

    if (fstat(client_fd, sb)) {
        rc = -errno;
        snprintf(err, errlen, "%s %s: %s", what, display, strerror(errno));
        return rc;
    }
    /* Before any read. */
    if (!S_ISREG(sb->st_mode)) {
        snprintf(err, errlen, "%s %s: %s: only regular files are accepted", what, display,
                 kind_of(sb->st_mode));
        return -EINVAL;
    }
    fl = fcntl(client_fd, F_GETFL);
    if (fl < 0 || (fl & O_PATH) || (fl & O_ACCMODE) == O_WRONLY) {
        snprintf(err, errlen, "%s %s: the descriptor passed is not open for reading", what, display);
        return -EBADF;
    }
    return 0;
}

static int changed(const char *what, const char *display, char *err, size_t errlen)
{
    snprintf(err, errlen,
             "%s %s changed while it was read (truncated or rewritten): "
             "submit again once it is complete",
             what, display);
    return -ESTALE;
}

/* The bytes [off, off + len) of the client's file (stat sb) into memfd fd, the file
 * checked unchanged after, then sealed. */
static int fill_and_seal(int fd, int client_fd, const struct stat *sb, off_t off, off_t len, const char *what,
                         const char *display, char *err, size_t errlen)
{
    struct stat sa;
    int rc;

    if ((rc = copy_bytes(fd, client_fd, off, len)) || (fstat(client_fd, &sa) ? (rc = -errno) : 0)) {
        if (rc == -ESTALE) return changed(what, display, err, errlen);
        snprintf(err, errlen, "%s %s: cannot read it: %s", what, display, strerror(-rc));
        return rc;
    }
    if (sa.st_size != sb->st_size || sa.st_mtim.tv_sec != sb->st_mtim.tv_sec ||
        sa.st_mtim.tv_nsec != sb->st_mtim.tv_nsec || sa.st_ctim.tv_sec != sb->st_ctim.tv_sec ||
        sa.st_ctim.tv_nsec != sb->st_ctim.tv_nsec)
        return changed(what, display, err, errlen);
    /* Sealed: no one, cuzkd included, can shrink, grow or write it any more, so a
     * stage's mapping of it can never fault past its end. */
    if (fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_SEAL)) {
        rc = -errno;
        snprintf(err, errlen, "%s %s: cannot seal its copy: %s", what, display, strerror(errno));
        return rc;
    }
    return 0;
}

/* Record the sealed copy fd of the file of sb: the descriptor to use (fd, or another
 * thread's copy of the same shared file, fd then closed), or -ENOMEM (fd left open). */
static int add_entry(struct copies *c, int fd, int shared, const struct stat *sb, const char *what,
                     const char *display, char *err, size_t errlen)
{
    pthread_mutex_lock(&c->lock);
    if (shared) {
        /* Another thread copied the same file meanwhile: one copy is kept. */
        int other = shared_ref_locked(c, sb);

        if (other >= 0) {
            pthread_mutex_unlock(&c->lock);
            close(fd);
            return other;
        }
    }
    if (c->n == c->cap) {
        size_t cap = c->cap ? 2 * c->cap : 16;
        struct copy_entry *e = realloc(c->e, cap * sizeof(*e));

        if (!e) {
            pthread_mutex_unlock(&c->lock);
            snprintf(err, errlen, "%s %s: out of memory", what, display);
            return -ENOMEM;
        }
        c->e = e;
        c->cap = cap;
    }
    c->e[c->n] = (struct copy_entry){ .fd = fd,
                                      .shared = shared,
                                      .refs = 1,
                                      .last_use = ++c->clock,
                                      .dev = sb->st_dev,
                                      .ino = sb->st_ino,
                                      .size = sb->st_size,
                                      .mtim = sb->st_mtim,
                                      .ctim = sb->st_ctim };
    c->n++;
    c->bytes += (uint64_t)sb->st_size;
    pthread_mutex_unlock(&c->lock);
    return fd;
}

int copies_take_sized(struct copies *c, int client_fd, int shared, uint64_t want, const char *what,
                      const char *display, char *err, size_t errlen)
{
    struct stat sb;
    int fd, rc;

    if ((rc = source_check(client_fd, &sb, what, display, err, errlen))) return rc;
    /* The size its headers gave (input_bounds.h): a file grown since (a sparse
     * section appended) is not copied. */
    if (want && (uint64_t)sb.st_size != want) return changed(what, display, err, errlen);
    if (shared && (fd = shared_ref(c, &sb)) >= 0) return fd;
    {
        /* Named after the client's file, so /proc/PID/maps of a stage says which
         * file it maps ("/memfd:cuzk:c.zkey (deleted)"). */
        const char *b = strrchr(display, '/');
        char name[200];

        snprintf(name, sizeof(name), "cuzk:%s", b ? b + 1 : display);
        fd = memfd_create(name, MFD_CLOEXEC | MFD_ALLOW_SEALING);
    }
    if (fd < 0) {
        rc = -errno;
        snprintf(err, errlen, "%s %s: cannot make a copy: %s", what, display, strerror(errno));
        return rc;
    }
    if (!(rc = fill_and_seal(fd, client_fd, &sb, 0, sb.st_size, what, display, err, errlen)))
        rc = add_entry(c, fd, shared, &sb, what, display, err, errlen);
    if (rc < 0) close(fd);
    return rc;
}

int copies_take_range(struct copies *c, int client_fd, uint64_t off, uint64_t len, const char *what,
                      const char *display, char *err, size_t errlen)
{
    struct stat sb;
    char name[200];
    int fd, rc;

    if ((rc = source_check(client_fd, &sb, what, display, err, errlen))) return rc;
    if (off > (uint64_t)sb.st_size || len > (uint64_t)sb.st_size - off)
        return changed(what, display, err, errlen);
    snprintf(name, sizeof(name), "cuzk:%s", display);
    if ((fd = memfd_create(name, MFD_CLOEXEC | MFD_ALLOW_SEALING)) < 0) {
        rc = -errno;
        snprintf(err, errlen, "%s %s: cannot make a copy: %s", what, display, strerror(errno));
        return rc;
    }
    if (!(rc = fill_and_seal(fd, client_fd, &sb, (off_t)off, (off_t)len, what, display, err, errlen))) {
        sb.st_size = (off_t)len; /* the copy's size: what the entry counts */
        rc = add_entry(c, fd, 0, &sb, what, display, err, errlen);
    }
    if (rc < 0) close(fd);
    return rc;
}

int copies_ref(struct copies *c, int fd)
{
    int rc = -ENOENT;

    pthread_mutex_lock(&c->lock);
    for (size_t i = 0; i < c->n; i++)
        if (c->e[i].fd == fd) {
            c->e[i].refs++;
            c->e[i].last_use = ++c->clock;
            rc = 0;
            break;
        }
    pthread_mutex_unlock(&c->lock);
    return rc;
}

void copies_put(struct copies *c, int fd)
{
    if (fd <= 0) return;
    pthread_mutex_lock(&c->lock);
    for (size_t i = 0; i < c->n; i++) {
        struct copy_entry *e = &c->e[i];

        if (e->fd != fd) continue;
        if (e->refs) e->refs--;
        if (!e->refs && !e->shared) {
            close(e->fd);
            c->bytes -= (uint64_t)e->size;
            *e = c->e[--c->n];
        }
        trim(c);
        break;
    }
    pthread_mutex_unlock(&c->lock);
}

size_t copies_count(struct copies *c)
{
    size_t n;

    pthread_mutex_lock(&c->lock);
    n = c->n;
    pthread_mutex_unlock(&c->lock);
    return n;
}

size_t copies_usage(struct copies *c, uint64_t *bytes)
{
    size_t n;

    pthread_mutex_lock(&c->lock);
    n = c->n;
    *bytes = c->bytes;
    pthread_mutex_unlock(&c->lock);
    return n;
}

/* ---- durable copies (the job store on) -------------------------------------------- */

int copies_private_dir(const char *state_dir, const char *instance, const char *suffix, char *err,
                       size_t errlen)
{
    char path[1200];
    struct stat st;
    int fd;

    if ((size_t)snprintf(path, sizeof(path), "%s/%s%s", state_dir, instance, suffix) >= sizeof(path)) {
        snprintf(err, errlen, "%s/%s%s: path too long", state_dir, instance, suffix);
        return -ENAMETOOLONG;
    }
    if (mkdir(path, 0700) && errno != EEXIST) {
        int e = errno;

        snprintf(err, errlen, "%s: %s", path, strerror(e));
        return -e;
    }
    fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) {
        int e = errno;

        snprintf(err, errlen, "%s: %s", path, strerror(e));
        return -e;
    }
    /* Only cuzkd may write inside it (or read it: witnesses are secrets). */
    if (fstat(fd, &st) || st.st_uid != geteuid() || (st.st_mode & 077)) {
        snprintf(err, errlen,
                 "%s: must be cuzkd's own, mode 0700 (writable by no "
                 "one else); fix or remove it",
                 path);
        close(fd);
        return -EPERM;
    }
    return fd;
}

int copies_dir_open(const char *state_dir, const char *instance, char *err, size_t errlen)
{
    return copies_private_dir(state_dir, instance, ".copies", err, errlen);
}

/* Test hook (tests/scripts/store_slow_disk.sh): CUZK_TEST_PERSIST_HOLD=DIR in cuzkd's
 * environment makes each durable copy wait before its fsync for as long as DIR/hold
 * exists (a disk as slow as the test likes), after creating DIR/held (and
 * DIR/held.TID, one per writer) to say so. */
static void test_persist_hold(void)
{
    const char *d = getenv("CUZK_TEST_PERSIST_HOLD");
    char hold[PATH_MAX], held[PATH_MAX];
    int fd;

    if (!d || snprintf(hold, sizeof(hold), "%s/hold", d) >= (int)sizeof(hold) ||
        snprintf(held, sizeof(held), "%s/held", d) >= (int)sizeof(held) || access(hold, F_OK))
        return;
    if ((fd = open(held, O_WRONLY | O_CREAT | O_CLOEXEC, 0600)) >= 0) close(fd);
    /* and DIR/held.TID: one per writer held, so that a test can wait for two */
    if (snprintf(held, sizeof(held), "%s/held.%d", d, (int)gettid()) < (int)sizeof(held) &&
        (fd = open(held, O_WRONLY | O_CREAT | O_CLOEXEC, 0600)) >= 0)
        close(fd);
    while (!access(hold, F_OK)) usleep(20000);
}

int copies_persist(int dfd, int copy_fd, const char *name, char *err, size_t errlen)
{
    char tmp[400];
    struct stat st;
    int fd, rc;

    if (!fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) && S_ISREG(st.st_mode))
        return 1; /* complete already: it is only ever renamed in whole */
    if (fstat(copy_fd, &st)) {
        rc = -errno;
        snprintf(err, errlen, "copy %s: %s", name, strerror(-rc));
        return rc;
    }
    /* A temp name of this writer's own: two intakes of one shared copy (two submits
     * of the same zkey at once, as a fleet daemon's parallel claims make) wrote one
     * `.tmp.NAME` before, each unlinking the other's: one failed ENOENT ("cannot keep
     * a durable copy"), and the other's rename could publish a file still being
     * written. Both now write in full and rename; the second rename replaces
     * identical bytes. Leftovers of a crash are dot names: copies_sweep removes
     * them at start. */
    static atomic_uint seq;
    snprintf(tmp, sizeof(tmp), ".tmp.%s.%d.%u", name, (int)gettid(), barrier_fetch_add_relaxed(&seq, 1));
    fd = openat(dfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0) {
        rc = -errno;
        goto fail;
    }
    rc = copy_bytes(fd, copy_fd, 0, st.st_size);
    if (!rc) test_persist_hold();
    if (rc || (fsync(fd) ? (rc = -errno) : 0)) {
        close(fd);
        unlinkat(dfd, tmp, 0);
        goto fail;
    }
    if (close(fd) ? (rc = -errno) : 0) {
        unlinkat(dfd, tmp, 0);
        goto fail;
    }
    if (renameat(dfd, tmp, dfd, name)) {
        rc = -errno;
        unlinkat(dfd, tmp, 0);
        goto fail;
    }
    if (fsync(dfd)) {
        rc = -errno;
        unlinkat(dfd, name, 0);
        goto fail;
    }
    return 0;
fail:
    snprintf(err, errlen, "cannot keep a durable copy for the job store: %s%s", strerror(-rc),
             rc == -ENOSPC || rc == -EDQUOT ? " (disk full)" : "");
    return rc;
}

int copies_open_durable(int dfd, const char *name)
{
    struct stat st;
    int fd;

    if (!name || !name[0] || strchr(name, '/') || name[0] == '.') return -EINVAL;
    fd = openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) return -errno;
    if (fstat(fd, &st) || !S_ISREG(st.st_mode)) {
        close(fd);
        return -EINVAL;
    }
    return fd;
}

int copies_sweep(int dfd, int (*keep)(void *arg, const char *name), void *arg)
{
    DIR *dir = os_dir_stream(dfd);
    struct dirent *de;
    int n = 0;

    if (!dir) return -errno;
    while ((de = readdir(dir))) {
        if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, "..")) continue;
        if (de->d_name[0] != '.' && keep(arg, de->d_name)) continue;
        if (!unlinkat(dfd, de->d_name, 0)) n++;
    }
    closedir(dir);
    return n;
}
