/* zkey_cache.c — the stage's zkeys held open between partitions (stage.h,
 * stage_zkey), and the circuits table's preload and evict applied to them
 * (stage_circuits). */
#include "stage/stage.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/error.h"

static int same_file(const struct stage_zkey_entry *e, const struct stat *sb)
{
    return e->dev == sb->st_dev && e->ino == sb->st_ino && e->size == sb->st_size &&
        e->mtim.tv_sec == sb->st_mtim.tv_sec && e->mtim.tv_nsec == sb->st_mtim.tv_nsec;
}

int stage_zkey(struct stage *st, const char *path, const zkey **out, char *err, size_t errlen)
{
    struct stage_zkey_entry *victim = NULL;
    struct stat sb, sa;
    int rc, pinned = 0;

    if (stat(path, &sb) < 0)
        return binfile_err(err, errlen, CUZK_E_IO, "cannot open zkey %s: %s", path, strerror(errno));
    for (int i = 0; i < PIPE_ZKEY_CACHE; i++) {
        struct stage_zkey_entry *e = &st->zc[i];

        if (e->used && same_file(e, &sb)) {
            e->last_use = ++st->zc_clock;
            *out = &e->z;
            return 0;
        }
    }
    /* Miss. An entry under the same path is an older version of the file: drop it
     * (it would never be hit again); else take a free slot, else the least recent. */
    for (int i = 0; i < PIPE_ZKEY_CACHE && !victim; i++)
        if (st->zc[i].used && !strcmp(st->zc[i].path, path)) {
            victim = &st->zc[i];
            pinned = victim->pinned; /* a preloaded path stays preloaded */
        }
    for (int i = 0; i < PIPE_ZKEY_CACHE && !victim; i++)
        if (!st->zc[i].used) victim = &st->zc[i];
    /* The least recent, unpinned first (at most PIPE_PRELOAD_MAX are pinned). */
    if (!victim)
        for (int i = 0; i < PIPE_ZKEY_CACHE; i++)
            if (!st->zc[i].pinned && (!victim || st->zc[i].last_use < victim->last_use)) victim = &st->zc[i];
    if (!victim) {
        victim = &st->zc[0];
        for (int i = 1; i < PIPE_ZKEY_CACHE; i++)
            if (st->zc[i].last_use < victim->last_use) victim = &st->zc[i];
    }
    if (victim->used) {
        zkey_close(&victim->z);
        victim->used = 0;
    }
    victim->pinned = 0;
    /* The identity must be the one of the bytes mapped: stat again after the open and
     * retry if the file changed under us (replaced or rewritten during the open). */
    for (int tries = 0;; tries++) {
        rc = zkey_open(&victim->z, path, err, errlen);
        if (rc) return rc;
        if (stat(path, &sa) == 0 && sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino &&
            sa.st_size == sb.st_size && sa.st_mtim.tv_sec == sb.st_mtim.tv_sec &&
            sa.st_mtim.tv_nsec == sb.st_mtim.tv_nsec)
            break;
        zkey_close(&victim->z);
        if (tries == 3)
            return binfile_err(err, errlen, CUZK_E_IO,
                               "zkey %s keeps changing while it is "
                               "being opened: is it still being written?",
                               path);
        if (stat(path, &sb) < 0)
            return binfile_err(err, errlen, CUZK_E_IO, "cannot open zkey %s: %s", path, strerror(errno));
    }
    victim->used = 1;
    victim->dev = sb.st_dev;
    victim->ino = sb.st_ino;
    victim->size = sb.st_size;
    victim->mtim = sb.st_mtim;
    victim->last_use = ++st->zc_clock;
    victim->pinned = pinned;
    snprintf(victim->path, sizeof(victim->path), "%s", path);
    *out = &victim->z;
    return 0;
}

int stage_job_zkey(struct stage *st, const char *open_path, const char *shown_path, const zkey **out,
                   char *err, size_t errlen)
{
    stage_long_begin(st);
    int rc = stage_zkey(st, open_path, out, err, errlen);
    stage_long_end(st);
    if (rc) pipe_err_rename(err, errlen, open_path, shown_path);
    return rc;
}

static void touch_range(const uint8_t *p, size_t len)
{
    const uintptr_t pg = (uintptr_t)sysconf(_SC_PAGESIZE);
    const uintptr_t a = (uintptr_t)p & ~(pg - 1), end = (uintptr_t)p + len;
    volatile uint8_t sink = 0;

    if (!len) return;
    (void)madvise((void *)a, end - a, MADV_WILLNEED); /* a hint: failure changes nothing */
    /* One read per page faults it in (the mapping is page-aligned, so a is inside). */
    for (uintptr_t q = a; q < end; q += pg) sink ^= *(const volatile uint8_t *)q;
    (void)sink;
}

void stage_zkey_touch(const zkey *z, const uint32_t *ids, unsigned n)
{
    if (!n) {
        touch_range(z->bf.map, z->bf.size);
        return;
    }
    for (unsigned i = 0; i < n; i++) {
        const struct binfile_section *sec = binfile_section(&z->bf, ids[i]);

        if (sec) touch_range(binfile_payload(&z->bf, sec), sec->size);
    }
}

/* The path a stage opens for entry c (its copy in cuzkd, else its own path). */
static const char *circuit_path(const struct stage *st, const struct pipe_circuit *c, char *buf, size_t len)
{
    return pipe_input_path(&st->pl, c->fd, c->path, buf, len);
}

static int preloaded(const struct stage *st, const struct pipe_circuit *tab, const char *path)
{
    char b[64];

    for (int i = 0; i < PIPE_CIRCUITS; i++)
        if (tab[i].action == PIPE_CIRCUIT_PRELOAD && !strcmp(circuit_path(st, &tab[i], b, sizeof(b)), path))
            return 1;
    return 0;
}

int stage_circuits(struct stage *st, stage_circuit_fn fn, void *arg)
{
    struct pipe_circuits *cs = st->pl.circuits;
    struct pipe_circuit_ack *ack = st->circ_ack;
    struct pipe_circuit tab[PIPE_CIRCUITS];
    uint64_t s0, pre = 0, ev = 0;
    uint32_t failed = 0;
    char err[1024];
    int n = 0;

    if (!cs || !ack) return 0;
    /* A1: acquire pairs with R1 in pipeline_circuit_request (the entries written). */
    s0 = barrier_load_acquire(&cs->seq);
    if (s0 == st->circ_seq || (s0 & 1)) return 0;
    /* Plain copy; a torn one is discarded by the seq check (A2 pairs with W1). */
    memcpy(tab, cs->c, sizeof(tab));
    barrier_fence_acquire();
    if (barrier_load_relaxed(&cs->seq) != s0) return 0; /* being written: the next iteration */
    stage_long_begin(st);
    for (int i = 0; i < PIPE_CIRCUITS; i++) {
        struct pipe_circuit *c = &tab[i];

        char ob[64];
        const char *op;

        c->path[sizeof(c->path) - 1] = '\0';
        if (c->action != PIPE_CIRCUIT_EVICT || c->seq <= st->circ_seq) continue;
        n++;
        op = circuit_path(st, c, ob, sizeof(ob));
        for (int j = 0; j < PIPE_ZKEY_CACHE; j++) {
            struct stage_zkey_entry *e = &st->zc[j];

            if (!e->used || strcmp(e->path, op)) continue;
            if (fn) fn(st, PIPE_CIRCUIT_EVICT, e, arg);
            zkey_close(&e->z);
            e->used = 0;
            e->pinned = 0;
            ev++;
        }
    }
    for (int j = 0; j < PIPE_ZKEY_CACHE; j++)
        if (st->zc[j].pinned && !preloaded(st, tab, st->zc[j].path)) st->zc[j].pinned = 0;
    for (int i = 0; i < PIPE_CIRCUITS; i++) {
        const struct pipe_circuit *c = &tab[i];
        const zkey *z;
        char ob[64];

        if (c->action != PIPE_CIRCUIT_PRELOAD) continue;
        if (c->seq <= st->circ_seq) {
            failed |= st->circ_failed & (1u << i);
            continue;
        }
        n++;
        if (stage_zkey(st, circuit_path(st, c, ob, sizeof(ob)), &z, err, sizeof(err))) {
            pipe_err_rename(err, sizeof(err), ob, c->path);
            failed |= 1u << i;
            fprintf(stderr, "cuzk stage pid %d: preload of %s failed: %s\n", (int)st->pid, c->path, err);
            continue;
        }
        for (int j = 0; j < PIPE_ZKEY_CACHE; j++) {
            struct stage_zkey_entry *e = &st->zc[j];

            if (&e->z != z) continue;
            e->pinned = 1;
            if (fn)
                fn(st, PIPE_CIRCUIT_PRELOAD, e, arg);
            else
                stage_zkey_touch(z, NULL, 0);
        }
        pre++;
    }
    stage_long_end(st);
    /* Single writer of our ack: relaxed counters, then the seq (release) last. */
    barrier_store_relaxed(&ack->preloads, barrier_load_relaxed(&ack->preloads) + pre);
    barrier_store_relaxed(&ack->evicts, barrier_load_relaxed(&ack->evicts) + ev);
    barrier_store_relaxed(&ack->failed, failed);
    barrier_store_release(&ack->seq, s0);
    st->circ_seq = s0;
    st->circ_failed = failed;
    return n;
}
