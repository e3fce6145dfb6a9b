/* jobtab.c — job table: CAS state words, job completion, dead-owner rollback. */
#include "shm/jobtab.h"
#include "shm/pool.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

static size_t align64(size_t n)
{
    return (n + BARRIER_CACHE_LINE - 1) & ~(size_t)(BARRIER_CACHE_LINE - 1);
}

size_t jobtab_size_bytes(uint32_t max_jobs, uint32_t max_parts)
{
    return sizeof(struct jobtab_hdr) + align64((size_t)max_jobs * sizeof(struct jobtab_job)) +
        (size_t)max_parts * sizeof(struct jobtab_part);
}

int jobtab_init(struct jobtab_hdr *h, uint32_t max_jobs, uint32_t max_parts)
{
    struct jobtab jt;

    if (!max_jobs || !max_parts || max_parts >= POOL_OWNER_PART || ((uintptr_t)h & (BARRIER_CACHE_LINE - 1)))
        return -EINVAL;
    memset(h, 0, jobtab_size_bytes(max_jobs, max_parts));
    h->magic = JOBTAB_MAGIC;
    h->max_jobs = max_jobs;
    h->max_parts = max_parts;
    h->jobs_offset = sizeof(*h);
    h->parts_offset = sizeof(*h) + align64((size_t)max_jobs * sizeof(struct jobtab_job));
    /* Relaxed: published with the segment (segment_publish, release). */
    barrier_store_relaxed(&h->next_job_id, 1);
    jobtab_view(&jt, h, jobtab_size_bytes(max_jobs, max_parts));
    for (uint32_t i = 0; i < max_parts; i++) barrier_store_relaxed(&jt.parts[i].buf, JOBTAB_NONE);
    return 0;
}

int jobtab_view(struct jobtab *jt, struct jobtab_hdr *h, size_t size)
{
    memset(jt, 0, sizeof(*jt));
    if (size < sizeof(*h) || h->magic != JOBTAB_MAGIC || !h->max_jobs || !h->max_parts ||
        size < jobtab_size_bytes(h->max_jobs, h->max_parts) || h->jobs_offset != sizeof(*h) ||
        h->parts_offset != sizeof(*h) + align64((size_t)h->max_jobs * sizeof(struct jobtab_job)))
        return -EINVAL;
    jt->hdr = h;
    jt->jobs = (struct jobtab_job *)((char *)h + h->jobs_offset);
    jt->parts = (struct jobtab_part *)((char *)h + h->parts_offset);
    return 0;
}

const char *jobtab_state_name(uint32_t state)
{
    static const char *const names[JOBTAB_NSTATES] = {
        "free", "queued", "synth", "ready", "proving", "proved", "final", "done", "failed",
    };
    return state < JOBTAB_NSTATES ? names[state] : "invalid";
}

uint64_t jobtab_part_load(const struct jobtab *jt, uint32_t p)
{
    /* A1: acquire pairs with R1 (the CAS in jobtab_part_move) of the last mover. */
    return barrier_load_acquire(&jt->parts[p].word);
}

int jobtab_part_move(struct jobtab *jt, uint32_t p, uint32_t from_state, uint32_t from_pid, uint32_t to_state,
                     uint32_t to_pid, uint64_t *seen)
{
    struct jobtab_part *pt;
    uint64_t w;

    if (p >= jt->hdr->max_parts || from_state >= JOBTAB_NSTATES || to_state >= JOBTAB_NSTATES) return -EINVAL;
    pt = &jt->parts[p];
    /* Relaxed: the CAS below validates it (and acquires on success or failure). */
    w = barrier_load_relaxed(&pt->word);
    for (;;) {
        if (jobtab_word_state(w) != from_state || jobtab_word_pid(w) != from_pid) {
            if (seen) *seen = w;
            return -EAGAIN;
        }
        /* R1: acq_rel CAS. Release publishes the fields we wrote while owning the
         * partition (buf, result, reason); acquire makes the previous owner's
         * visible to us. Pairs with itself in the next mover and with A1. */
        if (barrier_cas_acq_rel(&pt->word, &w, jobtab_word(to_state, jobtab_word_gen(w) + 1, to_pid))) break;
    }
    if (from_state == JOBTAB_QUEUED || from_state == JOBTAB_READY)
        /* Relaxed: a statistic, read for display. */
        barrier_fetch_add_relaxed(&pt->attempts, 1);
    return 0;
}

int jobtab_reason_copy(char *dst, size_t len, const char *src)
{
    size_t n = strlen(src), cut, k;

    if (n < len) {
        memcpy(dst, src, n + 1);
        return 0;
    }
    cut = len - sizeof(JOBTAB_REASON_CUT); /* room for the marker and its NUL */
    while (cut && ((unsigned char)src[cut] & 0xc0) == 0x80)
        cut--; /* src[cut] starts a character: keep [0, cut) */
    for (k = cut; k && cut - k < 32; k--)
        if (src[k - 1] == ' ') {
            cut = k - 1;
            break;
        }
    memcpy(dst, src, cut);
    memcpy(dst + cut, JOBTAB_REASON_CUT, sizeof(JOBTAB_REASON_CUT));
    return 1;
}

int jobtab_part_fail(struct jobtab *jt, uint32_t p, uint32_t from_state, uint32_t pid, const char *reason)
{
    uint64_t w;

    if (p >= jt->hdr->max_parts) return -EINVAL;
    /* Only the owner may write reason: check before touching it. */
    w = jobtab_part_load(jt, p);
    if (jobtab_word_state(w) != from_state || jobtab_word_pid(w) != pid) return -EAGAIN;
    jobtab_reason_copy(jt->parts[p].reason, sizeof(jt->parts[p].reason), reason ? reason : "");
    return jobtab_part_move(jt, p, from_state, pid, JOBTAB_FAILED, 0, NULL);
}

int jobtab_job_add(struct jobtab *jt, uint32_t n_parts, const char *zkey_path, const char *out_dir,
                   uint64_t now_ns, uint32_t *job)
{
    struct jobtab_hdr *h = jt->hdr;
    uint32_t j, first = 0, run = 0;

    if (!n_parts || n_parts > h->max_parts) return -EINVAL;
    for (j = 0; j < h->max_jobs; j++)
        if (jobtab_word_state(barrier_load_relaxed(&jt->jobs[j].word)) == JOBTAB_FREE) break;
    if (j == h->max_jobs) return -ENOSPC;
    /* First fit of n_parts consecutive free partitions. Relaxed loads: only the
     * supervisor (this caller) moves partitions into or out of FREE. */
    for (uint32_t p = 0; p < h->max_parts && run < n_parts; p++) {
        if (jobtab_word_state(barrier_load_relaxed(&jt->parts[p].word)) == JOBTAB_FREE) {
            if (!run) first = p;
            run++;
        } else {
            run = 0;
        }
    }
    if (run < n_parts) return -ENOSPC;

    struct jobtab_job *jb = &jt->jobs[j];

    /* Relaxed: a counter only the supervisor writes. */
    jb->id = barrier_fetch_add_relaxed(&h->next_job_id, 1);
    jb->first_part = first;
    jb->n_parts = n_parts;
    jb->submit_ns = now_ns;
    jb->priority = 0;
    jb->reason[0] = 0;
    snprintf(jb->zkey_path, sizeof(jb->zkey_path), "%s", zkey_path ? zkey_path : "");
    snprintf(jb->out_dir, sizeof(jb->out_dir), "%s", out_dir ? out_dir : "");
    for (uint32_t i = 0; i < n_parts; i++) {
        struct jobtab_part *pt = &jt->parts[first + i];
        uint64_t w = barrier_load_relaxed(&pt->word);

        pt->job = j;
        pt->index = i;
        pt->reason[0] = 0;
        barrier_store_relaxed(&pt->buf, JOBTAB_NONE);
        barrier_store_relaxed(&pt->attempts, 0);
        barrier_store_relaxed(&pt->result, 0);
        /* R2: release publishes job/index/buf above to whoever claims it. */
        barrier_store_release(&pt->word, jobtab_word(JOBTAB_QUEUED, jobtab_word_gen(w) + 1, 0));
    }
    /* R3: release publishes the job record; pairs with the acquire in job_counts. */
    barrier_store_release(&jb->word, jobtab_word(JOBTAB_QUEUED, jobtab_word_gen(jb->word) + 1, 0));
    *job = j;
    return 0;
}

int jobtab_job_counts(const struct jobtab *jt, uint32_t job, uint32_t *done, uint32_t *failed)
{
    const struct jobtab_job *jb;
    uint32_t d = 0, f = 0;

    if (job >= jt->hdr->max_jobs) return -EINVAL;
    jb = &jt->jobs[job];
    /* Acquire pairs with R3 in jobtab_job_add: first_part/n_parts are set. */
    if (jobtab_word_state(barrier_load_acquire(&((struct jobtab_job *)jb)->word)) == JOBTAB_FREE)
        return -EINVAL;
    for (uint32_t i = 0; i < jb->n_parts; i++) {
        uint32_t s = jobtab_word_state(jobtab_part_load(jt, jb->first_part + i));

        d += s == JOBTAB_DONE;
        f += s == JOBTAB_FAILED;
    }
    *done = d;
    *failed = f;
    return 0;
}

int jobtab_job_try_complete(struct jobtab *jt, uint32_t job)
{
    uint32_t done, failed, to;
    uint64_t w;

    if (jobtab_job_counts(jt, job, &done, &failed)) return -EINVAL;
    if (done + failed < jt->jobs[job].n_parts) return 0;
    to = failed ? JOBTAB_FAILED : JOBTAB_DONE;
    /* Relaxed: validated by the CAS. */
    w = barrier_load_relaxed(&jt->jobs[job].word);
    if (jobtab_word_state(w) != JOBTAB_QUEUED) return 0;
    if (failed)
        snprintf(jt->jobs[job].reason, sizeof(jt->jobs[job].reason), "%u of %u partitions failed", failed,
                 jt->jobs[job].n_parts);
    /* The one CAS that decides the job. acq_rel as R1 in jobtab_part_move. A racing
     * caller writing the same reason text is harmless: both computed it from the
     * same final partition states. */
    return barrier_cas_acq_rel(&jt->jobs[job].word, &w, jobtab_word(to, jobtab_word_gen(w) + 1, 0)) ? 1 : 0;
}

int jobtab_job_retire(struct jobtab *jt, uint32_t job)
{
    struct jobtab_job *jb;
    uint64_t w;
    uint32_t s;

    if (job >= jt->hdr->max_jobs) return -EINVAL;
    jb = &jt->jobs[job];
    w = barrier_load_acquire(&jb->word);
    s = jobtab_word_state(w);
    if (s == JOBTAB_FREE) return -EINVAL;
    if (s != JOBTAB_DONE && s != JOBTAB_FAILED) return -EBUSY;
    for (uint32_t i = 0; i < jb->n_parts; i++) {
        struct jobtab_part *pt = &jt->parts[jb->first_part + i];
        uint64_t pw = barrier_load_relaxed(&pt->word);

        /* Release: a later job_add (same process) re-reads nothing from others. */
        barrier_store_release(&pt->word, jobtab_word(JOBTAB_FREE, jobtab_word_gen(pw) + 1, 0));
    }
    barrier_store_release(&jb->word, jobtab_word(JOBTAB_FREE, jobtab_word_gen(w) + 1, 0));
    return 0;
}

/* Is buffer b still held for partition p? */
static int buf_held(struct pool *pool, uint32_t b, uint32_t p)
{
    if (b == JOBTAB_NONE) return 0;
    return !pool || pool_buf_owner(pool, b) == pool_owner_part(p);
}

int jobtab_reclaim_pid(struct jobtab *jt, struct pool *pool, pid_t pid, uint32_t *out, size_t max)
{
    size_t n = 0;

    if (pid <= 0) return -EINVAL;
    for (uint32_t p = 0; p < jt->hdr->max_parts && n < max; p++) {
        struct jobtab_part *pt = &jt->parts[p];
        uint64_t w = jobtab_part_load(jt, p);
        uint32_t s = jobtab_word_state(w), to;
        /* Relaxed: the acquire load of the word above ordered the owner's buf store. */
        uint32_t b = barrier_load_relaxed(&pt->buf);

        if (jobtab_word_pid(w) != (uint32_t)pid) continue;
        switch (s) {
        case JOBTAB_SYNTH:
            /* Its output is incomplete: drop any buffer handed to the partition.
             * Done before the CAS while the partition is still the dead pid's, so
             * no live process can be using the buffer field. */
            if (b != JOBTAB_NONE && pool) pool_buf_transfer(pool, b, pool_owner_part(p), POOL_OWNER_FREE);
            barrier_store_relaxed(&pt->buf, JOBTAB_NONE);
            to = JOBTAB_QUEUED;
            break;
        case JOBTAB_PROVING:
            if (buf_held(pool, b, p)) {
                to = JOBTAB_READY;
            } else {
                /* The worker had released the input: synthesize again. */
                barrier_store_relaxed(&pt->buf, JOBTAB_NONE);
                to = JOBTAB_QUEUED;
            }
            break;
        case JOBTAB_FINAL: to = JOBTAB_PROVED; break;
        default: continue;
        }
        /* The buf stores above are published by this CAS (release, R1). */
        if (jobtab_part_move(jt, p, s, (uint32_t)pid, to, 0, NULL) == 0) out[n++] = p;
    }
    return (int)n;
}

int jobtab_parts_in_state(const struct jobtab *jt, uint32_t state, uint32_t *out, size_t max)
{
    size_t n = 0;

    for (uint32_t p = 0; p < jt->hdr->max_parts && n < max; p++)
        if (jobtab_word_state(jobtab_part_load(jt, p)) == state) out[n++] = p;
    return (int)n;
}
