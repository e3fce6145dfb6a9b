/* shmlayout.c — compute, create and attach the instance's data and stats segments. */
#include "shm/shmlayout.h"
#include "shm/futex.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include "base/os.h"

#define HUGE_2M (2ull << 20)

static uint64_t align_up(uint64_t n, uint64_t a)
{
    return (n + a - 1) / a * a;
}

int shmlayout_compute(const struct shmlayout_config *cfg, struct shmlayout *o)
{
    uint64_t page = (uint64_t)sysconf(_SC_PAGESIZE), off = SEG_HEADER_SIZE, bsz;

    memset(o, 0, sizeof(*o));
    if (cfg->n_rings > SHMLAYOUT_MAX_RINGS || !cfg->max_jobs || !cfg->max_parts || !cfg->buf_count ||
        !cfg->buf_size || cfg->n_nodes > POOL_MAX_NODES || cfg->n_extra > SHMLAYOUT_MAX_EXTRA)
        return -EINVAL;
    o->jobtab_off = off;
    o->jobtab_size = jobtab_size_bytes(cfg->max_jobs, cfg->max_parts);
    off = align_up(off + o->jobtab_size, page);
    for (uint32_t i = 0; i < cfg->n_extra; i++) {
        const struct shmlayout_extra *x = &cfg->extra[i];

        if (!x->size || !x->name[0] || memchr(x->name, 0, SEG_REGION_NAME) == NULL ||
            (x->init && x->init_len > x->size))
            return -EINVAL;
        o->extra_off[i] = off;
        o->extra_size[i] = x->size;
        off = align_up(off + x->size, page);
    }
    for (uint32_t i = 0; i < cfg->n_rings; i++) {
        o->ring_size[i] = ring_size_bytes(cfg->ring_capacity[i]);
        if (!o->ring_size[i]) return -EINVAL;
        o->ring_off[i] = off;
        /* Each ring on its own pages: no false sharing between rings. */
        off = align_up(off + o->ring_size[i], page);
    }
    o->pool_off = off;
    o->pool_size = pool_hdr_size(cfg->buf_count);
    off = align_up(off + o->pool_size, page);
    bsz = align_up(cfg->buf_size, page);
    o->slab_size = bsz * cfg->buf_count;
    o->slab_off = align_up(off, o->slab_size >= HUGE_2M ? HUGE_2M : page);
    o->total = align_up(o->slab_off + o->slab_size, page);
    return 0;
}

int shmlayout_data_create(struct shmlayout_data *d, const char *instance, const struct shmlayout_config *cfg,
                          unsigned flags, char *err, size_t errlen)
{
    uint64_t page = (uint64_t)sysconf(_SC_PAGESIZE);
    struct shmlayout l;
    char *base, name[16];
    int rc;

    memset(d, 0, sizeof(*d));
    if ((rc = shmlayout_compute(cfg, &l))) {
        snprintf(err, errlen,
                 "data segment for \"%s\": invalid layout config (ring "
                 "capacities must be powers of two; counts and sizes non-zero)",
                 instance);
        return rc;
    }
    rc = segment_create(&d->seg, instance, SEG_KIND_DATA, l.total, 0600, flags, err, errlen);
    if (rc) return rc;
    base = (char *)d->seg.hdr;
    rc = segment_region_add(&d->seg, "jobtab", l.jobtab_off, l.jobtab_size);
    if (!rc) rc = jobtab_init((struct jobtab_hdr *)(base + l.jobtab_off), cfg->max_jobs, cfg->max_parts);
    for (uint32_t i = 0; !rc && i < cfg->n_extra; i++) {
        rc = segment_region_add(&d->seg, cfg->extra[i].name, l.extra_off[i], l.extra_size[i]);
        /* The file is fresh (zero-filled): only the initial bytes need writing. */
        if (!rc && cfg->extra[i].init)
            memcpy(base + l.extra_off[i], cfg->extra[i].init, cfg->extra[i].init_len);
    }
    for (uint32_t i = 0; !rc && i < cfg->n_rings; i++) {
        snprintf(name, sizeof(name), "ring%u", i);
        rc = segment_region_add(&d->seg, name, l.ring_off[i], l.ring_size[i]);
        if (!rc) rc = ring_init((struct ring *)(base + l.ring_off[i]), cfg->ring_capacity[i]);
    }
    if (!rc) rc = segment_region_add(&d->seg, "pool", l.pool_off, l.pool_size);
    if (!rc) rc = segment_region_add(&d->seg, "slab", l.slab_off, l.slab_size);
    if (!rc)
        rc = pool_init_split((struct pool_hdr *)(base + l.pool_off), cfg->buf_count,
                             align_up(cfg->buf_size, page), (int64_t)(l.slab_off - l.pool_off), cfg->n_nodes,
                             cfg->n_nodes > 1 ? cfg->numa_node : NULL,
                             cfg->n_nodes > 1 ? cfg->node_buf_count : NULL);
    if (rc) {
        snprintf(err, errlen, "segment %s: formatting regions: %s", d->seg.name, strerror(-rc));
        goto err;
    }
    segment_publish(&d->seg);
    /* Views through the same path an attacher takes: the creator tests it too. */
    {
        struct segment seg = d->seg;

        rc = shmlayout_data_attach(d, instance, err, errlen);
        segment_detach(&seg);
        if (rc) goto err_destroy;
    }
    return 0;

err:
    segment_detach(&d->seg);
err_destroy:
    segment_destroy(instance, SEG_KIND_DATA);
    return rc;
}

int shmlayout_data_attach(struct shmlayout_data *d, const char *instance, char *err, size_t errlen)
{
    uint64_t sz;
    void *p;
    char name[16];
    int rc;

    memset(d, 0, sizeof(*d));
    rc = segment_attach(&d->seg, instance, SEG_KIND_DATA, 0, err, errlen);
    if (rc) return rc;
    p = segment_region_ptr(&d->seg, "jobtab", &sz);
    if (!p || jobtab_view(&d->jobtab, p, sz)) {
        snprintf(err, errlen, "segment %s: job table region missing or corrupt", d->seg.name);
        goto bad;
    }
    for (uint32_t i = 0; i < SHMLAYOUT_MAX_RINGS; i++) {
        snprintf(name, sizeof(name), "ring%u", i);
        if (!(p = segment_region_ptr(&d->seg, name, &sz))) break;
        if (ring_attach(p, sz)) {
            snprintf(err, errlen, "segment %s: region %s is not a valid ring", d->seg.name, name);
            goto bad;
        }
        d->rings[d->n_rings++] = p;
    }
    p = segment_region_ptr(&d->seg, "pool", &sz);
    if (!p || pool_view(&d->pool, p, sz, (char *)d->seg.hdr + d->seg.size)) {
        snprintf(err, errlen, "segment %s: buffer pool region missing or corrupt", d->seg.name);
        goto bad;
    }
    return 0;
bad:
    segment_detach(&d->seg);
    memset(d, 0, sizeof(*d));
    return -EBADMSG;
}

void shmlayout_data_detach(struct shmlayout_data *d)
{
    if (!d) return;
    segment_detach(&d->seg);
    memset(d, 0, sizeof(*d));
}

int shmlayout_stats_create(struct shmlayout_stats *s, const char *instance, uint32_t slots, unsigned flags,
                           char *err, size_t errlen)
{
    size_t psz = stats_page_size(slots);
    int rc;

    memset(s, 0, sizeof(*s));
    if (!slots) {
        snprintf(err, errlen, "stats segment for \"%s\": needs at least one slot", instance);
        return -EINVAL;
    }
    /* 0640: the operator group may read it (cuzk-top), nobody else writes. */
    rc = segment_create(&s->seg, instance, SEG_KIND_STATS, SEG_HEADER_SIZE + psz, 0640, flags, err, errlen);
    if (rc) return rc;
    s->page = (struct stats_page *)((char *)s->seg.hdr + SEG_HEADER_SIZE);
    if ((rc = segment_region_add(&s->seg, "stats", SEG_HEADER_SIZE, psz)) ||
        (rc = stats_page_init(s->page, slots, (int32_t)getpid(), os_now_ns()))) {
        snprintf(err, errlen, "segment %s: formatting stats page: %s", s->seg.name, strerror(-rc));
        segment_detach(&s->seg);
        segment_destroy(instance, SEG_KIND_STATS);
        return rc;
    }
    segment_publish(&s->seg);
    return 0;
}

int shmlayout_stats_attach(struct shmlayout_stats *s, const char *instance, unsigned flags, char *err,
                           size_t errlen)
{
    uint64_t sz;
    int rc;

    memset(s, 0, sizeof(*s));
    rc = segment_attach(&s->seg, instance, SEG_KIND_STATS, flags, err, errlen);
    if (rc) return rc;
    s->page = segment_region_ptr(&s->seg, "stats", &sz);
    if (!s->page || (rc = stats_page_check(s->page, sz))) {
        snprintf(err, errlen, "segment %s: stats page %s", s->seg.name,
                 rc == -EPROTO ? "of another version" : "missing or corrupt");
        segment_detach(&s->seg);
        memset(s, 0, sizeof(*s));
        return rc ? rc : -EBADMSG;
    }
    return 0;
}

void shmlayout_stats_detach(struct shmlayout_stats *s)
{
    if (!s) return;
    segment_detach(&s->seg);
    memset(s, 0, sizeof(*s));
}
