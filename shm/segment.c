/* segment.c — create, attach, check and destroy named shared-memory segments. */
#include "shm/segment.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static void seg_err(char *err, size_t errlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static void seg_err(char *err, size_t errlen, const char *fmt, ...)
{
    va_list ap;

    if (!err || !errlen) return;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
}

static const char *kind_suffix(enum seg_kind kind)
{
    switch (kind) {
    case SEG_KIND_STATS: return "stats";
    case SEG_KIND_DATA: return "data";
    }
    return NULL;
}

int segment_name(char *buf, size_t len, const char *instance, enum seg_kind kind)
{
    size_t n = instance ? strlen(instance) : 0;
    const char *sfx = kind_suffix(kind);

    if (!n || n > SEG_INSTANCE_MAX || !sfx) return -EINVAL;
    for (size_t i = 0; i < n; i++) {
        char c = instance[i];

        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
              c == '-'))
            return -EINVAL;
    }
    if ((size_t)snprintf(buf, len, "cuzk-%s.%s", instance, sfx) >= len) return -ENAMETOOLONG;
    return 0;
}

static uint64_t clock_ns(clockid_t id)
{
    struct timespec ts;

    clock_gettime(id, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Zeroes *seg and fills seg->name and shmname ("/" + name, for shm_open) from the
 * instance and kind: 0, or -EINVAL with a message naming the allowed characters. */
static int seg_init_name(struct segment *seg, char *shmname, size_t len, const char *instance,
                         enum seg_kind kind, char *err, size_t errlen)
{
    memset(seg, 0, sizeof(*seg));
    if (segment_name(seg->name, sizeof(seg->name), instance, kind)) {
        seg_err(err, errlen, "instance name \"%s\": use 1-%d characters of A-Z a-z 0-9 _ -",
                instance ? instance : "", SEG_INSTANCE_MAX);
        return -EINVAL;
    }
    snprintf(shmname, len, "/%s", seg->name);
    return 0;
}

/* shm_open of the segment: the fd, or -errno with the message. The two an operator
 * meets (creating one that exists, attaching one that does not) say what to check. */
static int seg_shm_open(const struct segment *seg, const char *shmname, const char *instance, int oflag,
                        mode_t mode, char *err, size_t errlen)
{
    int fd = shm_open(shmname, oflag, mode), rc;

    if (fd >= 0) return fd;
    rc = -errno;
    if (rc == -EEXIST && (oflag & O_EXCL))
        seg_err(err, errlen,
                "segment %s already exists: is another cuzkd running "
                "with instance \"%s\"? If not, remove /dev/shm/%s",
                seg->name, instance, seg->name);
    else if (rc == -ENOENT && !(oflag & O_CREAT))
        seg_err(err, errlen, "segment %s does not exist: is cuzkd running with instance \"%s\"?", seg->name,
                instance);
    else
        seg_err(err, errlen, "segment %s: shm_open%s: %s", seg->name,
                (oflag & O_CREAT)                     ? ""
                    : (oflag & O_ACCMODE) == O_RDONLY ? " read-only"
                                                      : " read-write",
                strerror(-rc));
    return rc;
}

int segment_create(struct segment *seg, const char *instance, enum seg_kind kind, size_t size, mode_t mode,
                   unsigned flags, char *err, size_t errlen)
{
    char shmname[sizeof(seg->name) + 1];
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    struct seg_header *h;
    void *base;
    int fd, rc;

    if ((rc = seg_init_name(seg, shmname, sizeof(shmname), instance, kind, err, errlen))) return rc;
    size = (size + page - 1) / page * page;
    if (size <= SEG_HEADER_SIZE) {
        seg_err(err, errlen, "segment %s: size %zu leaves no room after the %u-byte header", seg->name, size,
                SEG_HEADER_SIZE);
        return -EINVAL;
    }
    if (flags & SEGMENT_REPLACE) shm_unlink(shmname);
    if ((fd = seg_shm_open(seg, shmname, instance, O_RDWR | O_CREAT | O_EXCL, mode, err, errlen)) < 0)
        return fd;
    /* shm_open applies the umask; the mode is part of the access design. */
    if (fchmod(fd, mode) < 0 || ftruncate(fd, (off_t)size) < 0) {
        rc = -errno;
        seg_err(err, errlen, "segment %s: sizing to %zu bytes: %s", seg->name, size, strerror(-rc));
        goto err_unlink;
    }
    base = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (base == MAP_FAILED) {
        rc = -errno;
        seg_err(err, errlen, "segment %s: mmap %zu bytes: %s", seg->name, size, strerror(-rc));
        goto err_unlink;
    }
    close(fd);
    h = base;
    /* The file is fresh (zero-filled); fill the header, ready stays 0. */
    h->magic = SEG_MAGIC;
    h->abi_version = SEG_ABI_VERSION;
    h->kind = (uint32_t)kind;
    h->size = size;
    h->header_size = SEG_HEADER_SIZE;
    h->creator_pid = (int32_t)getpid();
    h->created_realtime_ns = clock_ns(CLOCK_REALTIME);
    h->created_mono_ns = clock_ns(CLOCK_MONOTONIC);
    snprintf(h->instance, sizeof(h->instance), "%s", instance);
    h->n_regions = 0;
    barrier_store_relaxed(&h->ready, 0);
    seg->hdr = h;
    seg->size = size;
    seg->kind = kind;
    seg->readonly = 0;
    return 0;

err_unlink:
    close(fd);
    shm_unlink(shmname);
    return rc;
}

int segment_region_add(struct segment *seg, const char *name, uint64_t offset, uint64_t size)
{
    struct seg_header *h = seg->hdr;
    struct seg_region *r;

    if (strlen(name) >= SEG_REGION_NAME || offset < SEG_HEADER_SIZE || offset > seg->size ||
        size > seg->size - offset)
        return -EINVAL;
    if (h->n_regions >= SEG_MAX_REGIONS) return -ENOSPC;
    r = &h->regions[h->n_regions++];
    snprintf(r->name, sizeof(r->name), "%s", name);
    r->offset = offset;
    r->size = size;
    return 0;
}

const struct seg_region *segment_region_find(const struct segment *seg, const char *name)
{
    const struct seg_header *h = seg->hdr;

    for (uint32_t i = 0; i < h->n_regions && i < SEG_MAX_REGIONS; i++)
        if (!strncmp(h->regions[i].name, name, SEG_REGION_NAME)) return &h->regions[i];
    return NULL;
}

void *segment_region_ptr(const struct segment *seg, const char *name, uint64_t *size)
{
    const struct seg_region *r = segment_region_find(seg, name);

    if (!r || r->offset > seg->size || r->size > seg->size - r->offset) return NULL;
    if (size) *size = r->size;
    return (char *)seg->hdr + r->offset;
}

void segment_publish(struct segment *seg)
{
    /* R1: release: every region formatted before this store is visible to an
     * attacher that reads ready == 1 (A1 in segment_attach). */
    barrier_store_release(&seg->hdr->ready, 1);
}

int segment_attach(struct segment *seg, const char *instance, enum seg_kind kind, unsigned flags, char *err,
                   size_t errlen)
{
    char shmname[sizeof(seg->name) + 1];
    int ro = !!(flags & SEGMENT_RDONLY);
    const struct seg_header *h;
    struct stat st;
    void *base;
    int fd, rc;

    if ((rc = seg_init_name(seg, shmname, sizeof(shmname), instance, kind, err, errlen))) return rc;
    if ((fd = seg_shm_open(seg, shmname, instance, ro ? O_RDONLY : O_RDWR, 0, err, errlen)) < 0) return fd;
    if (fstat(fd, &st) < 0) {
        rc = -errno;
        seg_err(err, errlen, "segment %s: fstat: %s", seg->name, strerror(-rc));
        close(fd);
        return rc;
    }
    if ((uint64_t)st.st_size < SEG_HEADER_SIZE) {
        seg_err(err, errlen, "segment %s: truncated: %lld bytes, the header alone needs %u", seg->name,
                (long long)st.st_size, SEG_HEADER_SIZE);
        close(fd);
        return -EBADMSG;
    }
    base = mmap(NULL, (size_t)st.st_size, ro ? PROT_READ : PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    if (base == MAP_FAILED) {
        rc = -errno;
        seg_err(err, errlen, "segment %s: mmap: %s", seg->name, strerror(-rc));
        return rc;
    }
    h = base;
    if (h->magic != SEG_MAGIC) {
        seg_err(err, errlen,
                "segment %s: not a cuzk segment (magic %016llx, expected "
                "%016llx)",
                seg->name, (unsigned long long)h->magic, (unsigned long long)SEG_MAGIC);
        rc = -EINVAL;
        goto err_unmap;
    }
    if (h->abi_version != SEG_ABI_VERSION) {
        seg_err(err, errlen,
                "segment %s: ABI version %u, this build expects %u: "
                "restart cuzkd and its stages from one build",
                seg->name, h->abi_version, SEG_ABI_VERSION);
        rc = -EPROTO;
        goto err_unmap;
    }
    if (h->kind != (uint32_t)kind) {
        seg_err(err, errlen, "segment %s: holds kind %u, expected %u (%s)", seg->name, h->kind,
                (unsigned)kind, kind_suffix(kind));
        rc = -EINVAL;
        goto err_unmap;
    }
    if (h->size != (uint64_t)st.st_size || h->header_size != SEG_HEADER_SIZE) {
        seg_err(err, errlen,
                "segment %s: truncated: file has %lld bytes, header says "
                "%llu",
                seg->name, (long long)st.st_size, (unsigned long long)h->size);
        rc = -EBADMSG;
        goto err_unmap;
    }
    if (h->n_regions > SEG_MAX_REGIONS) {
        seg_err(err, errlen, "segment %s: corrupt header: %u regions (max %u)", seg->name, h->n_regions,
                SEG_MAX_REGIONS);
        rc = -EBADMSG;
        goto err_unmap;
    }
    /* A1: acquire pairs with R1 in segment_publish. */
    if (barrier_load_acquire(&((struct seg_header *)base)->ready) != 1) {
        seg_err(err, errlen,
                "segment %s: not ready yet (creator pid %d still formatting "
                "it, or died doing so)",
                seg->name, h->creator_pid);
        rc = -EAGAIN;
        goto err_unmap;
    }
    seg->hdr = base;
    seg->size = (size_t)st.st_size;
    seg->readonly = ro;
    seg->kind = kind;
    return 0;

err_unmap:
    munmap(base, (size_t)st.st_size);
    return rc;
}

void segment_detach(struct segment *seg)
{
    if (!seg || !seg->hdr) return;
    munmap(seg->hdr, seg->size);
    seg->hdr = NULL;
    seg->size = 0;
}

int segment_destroy(const char *instance, enum seg_kind kind)
{
    char name[SEG_INSTANCE_MAX + 32], shmname[SEG_INSTANCE_MAX + 34];

    if (segment_name(name, sizeof(name), instance, kind)) return -EINVAL;
    snprintf(shmname, sizeof(shmname), "/%s", name);
    return shm_unlink(shmname) < 0 ? -errno : 0;
}
