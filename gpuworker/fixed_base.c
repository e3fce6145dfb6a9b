/* fixed_base.c — the CPU worker's fixed-base tables (gpuworker/fixed_base.h).
 *
 * One entry a circuit, counting its proofs. A circuit is its MSM bases' bytes (SHA-256
 * of the curve, the counts and sections 5-9), not its file: cuzkd hands each job its
 * own sealed copy of the zkey (supervisor/copies.h), so one circuit comes as many files,
 * and two zkeys of one circuit from two setups (the same fingerprint) have other bases.
 * The hash is taken once per mapping the worker opens (about 1.5 GB/s: 4 ms at 2^14),
 * which the entry then knows by its file key (FB_ALIASES of them). Its entry is at FIXED_BASE_AFTER it is
 * queued for the builder thread, which maps the zkey again on its own (a dup of the
 * prover's descriptor, so the same bytes: the stage's zkey cache may close its mapping
 * any time after the proof, and a table's bases must stay mapped while it lives) and
 * builds its MSMs' tables one at a time, each published to the provers as soon as it
 * is ready. The entry keeps its own mapping as long as it has tables. */
#include "gpuworker/fixed_base.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <openssl/evp.h>

#include "zk/msm.h"

#define FB_MSMS        GROTH16_MSMS
/* Circuits counted at once; past it the least recent without tables is forgotten. */
#define FB_MAX_ENTRIES 64
/* The builder's nice value: it runs on what the provers leave. */
#define FB_NICE        19
/* File keys an entry remembers (jobs of one circuit in flight at once, each its copy). */
#define FB_ALIASES     4
#define FB_HASH        32

enum fb_state {
    FB_COUNTING, /* fewer than the threshold of proofs since its tables (if any) went */
    FB_QUEUED,   /* due: waiting for the builder */
    FB_BUILDING, /* the builder has it (never evicted meanwhile) */
    FB_DONE,     /* built what fits and pays (possibly nothing) */
};

struct fixed_base_entry {
    uint8_t hash[FB_HASH]; /* the circuit: its bases (the file's head) */
    struct backend_key alias[FB_ALIASES];
    unsigned n_alias, next_alias;
    uint64_t proofs;   /* since its tables were last dropped */
    uint64_t last_use; /* clock at its last proof */
    enum fb_state state;
    int fd; /* FB_QUEUED: a dup of the prover's zkey descriptor */
    zkey z; /* the builder's own mapping (z_open) */
    bool z_open;
    msm_table *t[FB_MSMS];
    size_t bytes;
    unsigned refs; /* proofs holding its tables */
    struct fixed_base_entry *next;
};

static struct {
    pthread_mutex_t lock;
    pthread_cond_t wake;
    pthread_t thread;
    bool started, stop;
    size_t budget, bytes;
    uint64_t after, clock;
    unsigned entries;
    struct fixed_base_entry *head;
    fixed_base_stats st;
} fb = { .lock = PTHREAD_MUTEX_INITIALIZER, .wake = PTHREAD_COND_INITIALIZER, .after = FIXED_BASE_AFTER };

/* What the tables are made of: the groups, each MSM's count and its bases' bytes. */
static int bases_hash(const zkey *z, uint8_t out[FB_HASH])
{
    EVP_MD_CTX *md = EVP_MD_CTX_new();
    unsigned len = 0;
    int ok = md && EVP_DigestInit_ex(md, EVP_sha256(), NULL) == 1;

    for (unsigned k = 0; ok && k < FB_MSMS; k++) {
        const curve_group *G;
        const uint8_t *bases;
        size_t count;
        uint64_t head[2];

        groth16_msm_bases(z, k, &G, &bases, &count);
        head[0] = (uint64_t)G->id;
        head[1] = count;
        ok = EVP_DigestUpdate(md, head, sizeof head) == 1 &&
            EVP_DigestUpdate(md, bases, count * 2 * ec_cl(G) * sizeof(uint64_t)) == 1;
    }
    ok = ok && EVP_DigestFinal_ex(md, out, &len) == 1 && len == FB_HASH;
    EVP_MD_CTX_free(md);
    return ok ? 0 : -1;
}

static struct fixed_base_entry *by_alias_locked(const struct backend_key *key)
{
    for (struct fixed_base_entry *e = fb.head; e; e = e->next)
        for (unsigned i = 0; i < e->n_alias; i++)
            if (backend_key_equal(&e->alias[i], key)) return e;
    return NULL;
}

static void add_alias(struct fixed_base_entry *e, const struct backend_key *key)
{
    e->alias[e->next_alias] = *key;
    e->next_alias = (e->next_alias + 1) % FB_ALIASES;
    if (e->n_alias < FB_ALIASES) e->n_alias++;
}

/* Drops e's tables and its mapping (lock held, no proof holding them); it counts anew. */
static void drop_tables_locked(struct fixed_base_entry *e)
{
    bool had = false;

    for (unsigned k = 0; k < FB_MSMS; k++) {
        if (e->t[k]) had = true;
        msm_table_free(e->t[k]);
        e->t[k] = NULL;
    }
    fb.bytes -= e->bytes;
    e->bytes = 0;
    if (e->z_open) zkey_close(&e->z);
    e->z_open = false;
    e->state = FB_COUNTING;
    e->proofs = 0; /* it earns its tables again, so two circuits over the budget do not
                    * rebuild each other's in turn */
    if (had) fb.st.evictions++;
}

/* The least recently used circuit's tables out, not `keep`'s, not one in use or being
 * built, until need more bytes fit. Lock held. False: they cannot be made to fit now. */
static bool make_room_locked(size_t need, const struct fixed_base_entry *keep)
{
    while (fb.bytes + need > fb.budget) {
        struct fixed_base_entry *victim = NULL;

        for (struct fixed_base_entry *e = fb.head; e; e = e->next)
            if (e != keep && e->bytes && !e->refs && e->state != FB_BUILDING &&
                (!victim || e->last_use < victim->last_use))
                victim = e;
        if (!victim) return false;
        drop_tables_locked(victim);
    }
    return true;
}

/* Builds e's tables (lock held on entry and exit, dropped while building). */
static void build_locked(struct fixed_base_entry *e)
{
    char path[64], err[512];
    int fd = e->fd;

    e->fd = -1;
    e->state = FB_BUILDING;
    pthread_mutex_unlock(&fb.lock);
    snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
    int rc = zkey_open(&e->z, path, err, sizeof err);
    close(fd);
    pthread_mutex_lock(&fb.lock);
    if (rc) {
        fprintf(stderr, "cuzk-gpuworker: fixed-base tables: %s\n", err);
        e->state = FB_DONE; /* not again for this file */
        return;
    }
    e->z_open = true;
    for (unsigned k = 0; k < FB_MSMS && !fb.stop; k++) {
        const curve_group *G;
        const uint8_t *bases;
        size_t count;
        msm_table *t = NULL;

        groth16_msm_bases(&e->z, k, &G, &bases, &count);
        /* msm_table_window's rule: the window that pays within what the budget leaves
         * once other circuits' tables are out; none where no table pays. */
        unsigned c = msm_table_window(G, count, fb.budget > e->bytes ? fb.budget - e->bytes : 0);
        size_t need = msm_table_size(G, count, c);

        if (!c || !make_room_locked(need, e)) continue;
        fb.bytes += need; /* reserved while it is built */
        e->bytes += need;
        pthread_mutex_unlock(&fb.lock);
        rc = msm_table_build(G, &t, bases, count, c, 1); /* this thread alone, at its nice */
        pthread_mutex_lock(&fb.lock);
        if (rc) {
            fprintf(stderr, "cuzk-gpuworker: fixed-base table of %zu bases: %s\n", count, strerror(-rc));
            fb.bytes -= need;
            e->bytes -= need;
            continue;
        }
        e->t[k] = t;
        fb.st.built++;
    }
    e->state = FB_DONE;
    if (!e->bytes) { /* nothing paid or fitted: no mapping to keep (provers read their own) */
        zkey_close(&e->z);
        e->z_open = false;
    }
}

static void *builder(void *arg)
{
    (void)arg;
    /* Linux: a thread's nice is its own (the provers' threads keep theirs). */
    (void)setpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid), FB_NICE);
    pthread_mutex_lock(&fb.lock);
    while (!fb.stop) {
        struct fixed_base_entry *due = NULL;

        for (struct fixed_base_entry *e = fb.head; e; e = e->next)
            if (e->state == FB_QUEUED && (!due || e->last_use > due->last_use)) due = e;
        if (!due) {
            pthread_cond_wait(&fb.wake, &fb.lock);
            continue;
        }
        build_locked(due);
    }
    pthread_mutex_unlock(&fb.lock);
    return NULL;
}

void fixed_base_set_budget(size_t bytes)
{
    const char *after = getenv("CUZK_FIXED_BASE_AFTER"); /* tests only (fixed_base.h) */

    pthread_mutex_lock(&fb.lock);
    if (after && *after) {
        char *end;
        unsigned long v = strtoul(after, &end, 10);
        if (!*end && v >= 1) fb.after = v;
    }
    fb.budget = bytes;
    fb.st.budget = bytes;
    (void)make_room_locked(0, NULL);
    pthread_mutex_unlock(&fb.lock);
}

/* Forgets the least recent entry with nothing held, once there are too many. */
static void forget_one_locked(void)
{
    struct fixed_base_entry **victim = NULL;

    for (struct fixed_base_entry **pp = &fb.head; *pp; pp = &(*pp)->next) {
        struct fixed_base_entry *e = *pp;
        if (!e->bytes && !e->refs && !e->z_open && (e->state == FB_COUNTING || e->state == FB_DONE) &&
            (!victim || e->last_use < (*victim)->last_use))
            victim = pp;
    }
    if (!victim) return;
    struct fixed_base_entry *e = *victim;
    *victim = e->next;
    free(e);
    fb.entries--;
}

struct fixed_base_entry *fixed_base_acquire(const zkey *z, const struct backend_key *key, groth16_tables *out)
{
    struct fixed_base_entry *e;

    uint8_t hash[FB_HASH];

    memset(out, 0, sizeof *out);
    pthread_mutex_lock(&fb.lock);
    if (!fb.budget || fb.stop) {
        pthread_mutex_unlock(&fb.lock);
        return NULL;
    }
    e = by_alias_locked(key);
    if (!e) {
        /* A mapping not seen before: which circuit it is, by its bases (outside the lock:
         * the other in-flight thread's proofs go on). */
        pthread_mutex_unlock(&fb.lock);
        int rc = bases_hash(z, hash);
        pthread_mutex_lock(&fb.lock);
        if (rc) {
            pthread_mutex_unlock(&fb.lock);
            return NULL; /* no tables: the proof runs as without them */
        }
        e = by_alias_locked(key); /* the other in-flight thread may have added it meanwhile */
        for (struct fixed_base_entry *x = fb.head; !e && x; x = x->next)
            if (!memcmp(x->hash, hash, FB_HASH)) e = x;
        if (e && !by_alias_locked(key)) add_alias(e, key);
    }
    if (!e) {
        if (fb.entries >= FB_MAX_ENTRIES) forget_one_locked();
        e = calloc(1, sizeof *e);
        if (!e) {
            pthread_mutex_unlock(&fb.lock);
            return NULL; /* no tables: the proof runs as without them */
        }
        memcpy(e->hash, hash, FB_HASH);
        add_alias(e, key);
        e->fd = -1;
        e->next = fb.head;
        fb.head = e;
        fb.entries++;
    }
    e->last_use = ++fb.clock;
    e->proofs++;
    if (e->state == FB_COUNTING && e->proofs >= fb.after) {
        /* Due. The builder maps the same open file: the stage's mapping may be closed
         * before it gets there. */
        e->fd = fcntl(z->bf.fd, F_DUPFD_CLOEXEC, 0);
        if (e->fd >= 0) {
            e->state = FB_QUEUED;
            if (!fb.started && pthread_create(&fb.thread, NULL, builder, NULL) == 0) fb.started = true;
            pthread_cond_signal(&fb.wake);
        }
    }
    /* Tables built from the builder's own mapping of this file (the same bytes), which
     * they keep: they stay valid whatever the stage's zkey cache closes. */
    for (unsigned k = 0; k < FB_MSMS; k++) out->t[k] = e->t[k];
    e->refs++;
    pthread_mutex_unlock(&fb.lock);
    return e;
}

void fixed_base_release(struct fixed_base_entry *e, unsigned msms)
{
    if (!e) return;
    pthread_mutex_lock(&fb.lock);
    e->refs--;
    fb.st.msms += msms;
    /* A budget lowered while it was held. */
    if (fb.bytes > fb.budget) (void)make_room_locked(0, NULL);
    pthread_mutex_unlock(&fb.lock);
}

void fixed_base_get_stats(fixed_base_stats *out)
{
    pthread_mutex_lock(&fb.lock);
    *out = fb.st;
    out->bytes = fb.bytes;
    out->pending = 0;
    for (struct fixed_base_entry *e = fb.head; e; e = e->next)
        out->pending += e->state == FB_QUEUED || e->state == FB_BUILDING;
    pthread_mutex_unlock(&fb.lock);
}

void fixed_base_shutdown(void)
{
    pthread_mutex_lock(&fb.lock);
    fb.stop = true;
    pthread_cond_broadcast(&fb.wake);
    bool started = fb.started;
    pthread_mutex_unlock(&fb.lock);
    /* Not joined: a build in progress (seconds at large domains) cannot be cut short,
     * and a stopping worker does not wait for it; the process's exit ends it. */
    if (started) (void)pthread_detach(fb.thread);
}
