/* jobs.c — cuzkd's per-job state (sup.h, struct job_state): what each job slot
 * holds, its one reset, durable copy references, and retiring decided jobs. */
#include "sup.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "supervisor/owners.h"

int job_slot(const struct sup *s, uint64_t id, uint32_t *slot)
{
    const struct jobtab *jt = &s->pl.data.jobtab;

    for (uint32_t j = 0; j < jt->hdr->max_jobs; j++) {
        uint64_t w = barrier_load_acquire(&jt->jobs[j].word);

        if (jobtab_word_state(w) != JOBTAB_FREE && jt->jobs[j].id == id) {
            *slot = j;
            return 0;
        }
    }
    return -ENOENT;
}

uint32_t job_state(const struct sup *s, uint32_t slot)
{
    return jobtab_word_state(barrier_load_acquire(&s->pl.data.jobtab.jobs[slot].word));
}

int jobs_busy(const struct sup *s)
{
    const struct jobtab *jt = &s->pl.data.jobtab;

    for (uint32_t j = 0; j < jt->hdr->max_jobs; j++)
        if (job_state(s, j) == JOBTAB_QUEUED) return 1;
    return 0;
}

static int job_has_waiter(const struct sup *s, uint32_t slot)
{
    for (int i = 0; i < N_CONNS; i++)
        if (s->conns[i].fd >= 0 && s->conns[i].waiting && s->conns[i].wait_slot == slot) return 1;
    return 0;
}

/* Drop job slot j's copies (a decided job reads no input any more): an idle copy is
 * freed when its last job ends, and the bytes leave its uid's quota. The slot keeps
 * its out dir and durable names until it retires. */
static void job_copies_release(struct sup *s, uint32_t j)
{
    struct job_files *f = &s->jobs[j].files;

    copies_put(&s->copies, f->zkey_fd);
    copies_put(&s->copies, f->r1cs_fd);
    copies_put(&s->copies, f->wgen_fd);
    for (size_t i = 0; f->wtns_fd && i < f->n; i++) {
        copies_put(&s->copies, f->wtns_fd[i]);
        f->wtns_fd[i] = -1;
    }
    f->zkey_fd = f->r1cs_fd = f->wgen_fd = -1;
    f->bytes = 0;
}

/* The bytes of f's distinct copies (a resumed job's, for its quota). */
uint64_t files_bytes(const struct job_files *f)
{
    int one[3] = { f->zkey_fd, f->r1cs_fd, f->wgen_fd };
    uint64_t n = 0;
    struct stat st;

    for (int i = 0; i < 3; i++)
        if (one[i] > 0 && !fstat(one[i], &st)) n += (uint64_t)st.st_size;
    for (size_t i = 0; f->wtns_fd && i < f->n; i++) {
        size_t k = 0;

        while (k < i && f->wtns_fd[k] != f->wtns_fd[i]) k++;
        if (k == i && f->wtns_fd[i] > 0 && !fstat(f->wtns_fd[i], &st)) n += (uint64_t)st.st_size;
    }
    return n;
}

/* The bytes of copies uid's jobs hold now (job_files.bytes). */
uint64_t uid_bytes(const struct sup *s, uid_t uid)
{
    uint64_t n = 0;

    for (uint32_t j = 0; j < s->pl.data.jobtab.hdr->max_jobs; j++)
        if (s->jobs[j].files.bytes && s->jobs[j].owner == uid) n += s->jobs[j].files.bytes;
    return n;
}

/* The --quota-bytes of uid: 0 (none) for the privileged. */
uint64_t uid_bytes_quota(const struct sup *s, uid_t uid)
{
    long pages = sysconf(_SC_PHYS_PAGES), psz = sysconf(_SC_PAGESIZE);

    if (owners_privileged(uid)) return 0;
    if (s->c->quota_bytes) return s->c->quota_bytes;
    return pages > 0 && psz > 0 ? (uint64_t)pages * (uint64_t)psz / 4 : 0;
}

/* Job slot j back to the state of a free slot, the one place that clears a
 * job_state: what it holds dropped (its copies, its out dir; its durable copies stay
 * on disk, for a later cuzkd: retiring releases them first), nothing recorded. */
void job_reset(struct sup *s, uint32_t j)
{
    struct job_state *js = &s->jobs[j];
    struct job_files *f = &js->files;

    copies_put(&s->copies, f->zkey_fd);
    copies_put(&s->copies, f->r1cs_fd);
    copies_put(&s->copies, f->wgen_fd);
    for (size_t i = 0; f->wtns_fd && i < f->n; i++) copies_put(&s->copies, f->wtns_fd[i]);
    if (f->out_fd > 0) close(f->out_fd);
    free(f->wtns_fd);
    json_decref(f->dur); /* the files stay: a later cuzkd resumes from them */
    json_decref(js->metadata);
    memset(js, 0, sizeof(*js));
    f->zkey_fd = f->r1cs_fd = f->out_fd = f->wgen_fd = -1;
}

/* Job slot j was just given to a job (a submit, or a resume): it holds files from now
 * on (moved in; released when the slot retires), it is owner's, the store knows it
 * (with a store), and its partitions have no crash counted. */
void job_begin(struct sup *s, uint32_t j, uid_t owner, int resumed, const struct job_files *files)
{
    const struct jobtab_job *jb = &s->pl.data.jobtab.jobs[j];
    struct job_state *js = &s->jobs[j];

    job_reset(s, j);
    js->files = *files;
    js->owner = owner;
    js->resumed = (uint8_t)resumed;
    js->rec = s->store ? REC_RUNNING : REC_NONE;
    for (uint32_t i = 0; i < jb->n_parts; i++)
        s->parts[jb->first_part + i] = (struct part_state){ .rec = s->parts[jb->first_part + i].rec };
}

/* Durable copies (copies.h): s->dur counts the jobs in the table that hold each name;
 * the file goes when the last one retires (or is refused). */
void dur_ref(struct sup *s, const char *name)
{
    json_t *v = json_object_get(s->dur, name);

    json_object_set_new(s->dur, name, json_integer(v ? json_integer_value(v) + 1 : 1));
}

void dur_unref(struct sup *s, const char *name)
{
    json_t *v = json_object_get(s->dur, name);

    if (v && json_integer_value(v) > 1) {
        json_object_set_new(s->dur, name, json_integer(json_integer_value(v) - 1));
        return;
    }
    json_object_del(s->dur, name);
    if (s->copies_dfd >= 0 && unlinkat(s->copies_dfd, name, 0) && errno != ENOENT)
        logmsg("durable copy %s: cannot remove it: %s", name, strerror(errno));
}

void dur_release(struct sup *s, json_t *names)
{
    size_t i;
    json_t *v;

    json_array_foreach (names, i, v) dur_unref(s, json_string_value(v));
    json_decref(names);
}

/* Retire decided jobs after their waiters were told and the grace period; with
 * force, any decided job without a waiter (the table is full). Returns how many. */
int jobs_retire(struct sup *s, int force)
{
    struct jobtab *jt = &s->pl.data.jobtab;
    uint64_t t = os_now_ns();
    int n = 0;

    for (uint32_t j = 0; j < jt->hdr->max_jobs; j++) {
        uint32_t st = job_state(s, j);

        if (st != JOBTAB_DONE && st != JOBTAB_FAILED) {
            s->jobs[j].decided_ns = 0;
            continue;
        }
        if (!s->jobs[j].decided_ns) {
            s->jobs[j].decided_ns = t;
            job_copies_release(s, j);
        }
        if (job_has_waiter(s, j)) continue;
        if (s->store && s->jobs[j].rec == REC_RUNNING)
            continue; /* its end is not in the store yet (journal_sync) */
        if (!force && t - s->jobs[j].decided_ns < (uint64_t)s->c->keep_finished_s * 1000000000ull) continue;
        if (!jobtab_job_retire(jt, j)) {
            dur_release(s, s->jobs[j].files.dur); /* decided and recorded: not resumed */
            s->jobs[j].files.dur = NULL;
            job_reset(s, j);
            n++;
        }
    }
    return n;
}

/* Move a cancelled job's unowned partitions to FAILED ("cancelled"); owned ones are
 * left to their owner and caught on a later tick. */
void cancel_sweep(struct sup *s, uint32_t slot)
{
    struct jobtab *jt = &s->pl.data.jobtab;
    struct jobtab_job *jb = &jt->jobs[slot];

    for (uint32_t i = 0; i < jb->n_parts; i++) {
        uint32_t p = jb->first_part + i;
        uint64_t w = jobtab_part_load(jt, p);
        uint32_t st = jobtab_word_state(w), buf;

        if (st != JOBTAB_QUEUED && st != JOBTAB_READY && st != JOBTAB_PROVED) continue;
        buf = barrier_load_acquire(&jt->parts[p].buf);
        if (jobtab_part_fail(jt, p, st, jobtab_word_pid(w), "cancelled"))
            continue; /* someone claimed it meanwhile */
        if (st == JOBTAB_READY && buf != JOBTAB_NONE)
            pool_buf_transfer(&s->pl.data.pool, buf, pool_owner_part(p), POOL_OWNER_FREE);
    }
    jobtab_job_try_complete(jt, slot);
}
