/* stage.c — the stage handle (stage.h): attach the instance, claim the stats slot,
 * the heartbeat thread, state and counter accounting, long-call deadlines. The rest of
 * the stage runtime: stage_main.c (options and main()), zkey_cache.c (the zkey cache
 * and the circuits table), loop_steps.c (the orphan check and the steps every stage
 * loop shares). */
#include "stage/stage.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "shm/futex.h"
#include "base/os.h"
#include "base/barrier.h"

#define HB_PERIOD_NS 50000000ull /* heartbeat thread: 50 ms, half the 100 ms promise */

uint64_t stage_now(void)
{
    return os_now_ns();
}

int stage_stopping(const struct stage *st)
{
    /* Relaxed: a flag polled once per loop; nothing is published through it. */
    return st->stop && barrier_load_relaxed(st->stop);
}

static void *hb_main(void *arg)
{
    struct stage *st = arg;
    struct timespec ts = { 0, (long)HB_PERIOD_NS };

    /* Relaxed: flags between two threads of this process; the mutex orders the slot
     * writes themselves. */
    while (!barrier_load_relaxed(&st->hb_quit)) {
        nanosleep(&ts, NULL);
        if (barrier_load_relaxed(&st->in_long_call)) {
            uint64_t lim = (uint64_t)st->pl.config->long_call_s * 1000000000ull;
            uint64_t t0 = barrier_load_relaxed(&st->long_since);
            uint64_t now = stage_now();

            if (!lim || now < t0 || now - t0 < lim) {
                st->long_told = 0;
                stage_heartbeat(st);
            } else if (!st->long_told) {
                st->long_told = 1;
                fprintf(stderr,
                        "cuzk stage pid %d: one call has run %.0f s (long-call-timeout "
                        "%u s): no more heartbeats, cuzkd will restart this stage\n",
                        (int)st->pid, (double)(now - t0) / 1e9, st->pl.config->long_call_s);
            }
        }
    }
    return NULL;
}

int stage_open(struct stage *st, const struct stage_opts *o, enum stats_role role, char *err, size_t errlen)
{
    int rc;

    memset(st, 0, sizeof(*st));
    st->role = role;
    st->index = o->index;
    st->pid = getpid();
    st->stop = o->stop;
    st->doorbell_fd = o->doorbell_fd;
    pthread_mutex_init(&st->mu, NULL);
    rc = pipeline_attach(&st->pl, o->instance, err, errlen);
    if (rc) goto err;
    st->slot = pipeline_stats_slot(&st->pl, role, o->index);
    if (!st->slot) {
        snprintf(err, errlen,
                 "instance %s has no stats slot for this stage with index %u "
                 "(n_synth %u, n_workers %u)",
                 o->instance, o->index, st->pl.config->n_synth, st->pl.config->n_workers);
        rc = -EINVAL;
        goto err_detach;
    }
    /* The slot's generation is bumped here by every start in this slot, so it counts
     * restarts without trusting --generation (which stats.h gives no field to set). */
    stats_slot_start(st->slot, role, o->index, st->pid, stage_now());
    /* Our circuits ack: seq 0 before our pid (release), so cuzkd never counts an ack of
     * the slot's previous process as ours. */
    st->circ_ack = &st->pl.circuits->ack[pipeline_stats_slot_index(st->pl.config, role, o->index)];
    barrier_store_relaxed(&st->circ_ack->seq, 0);
    barrier_store_relaxed(&st->circ_ack->failed, 0);
    barrier_store_release(&st->circ_ack->pid, (uint32_t)st->pid);
    rc = -pthread_create(&st->hb, NULL, hb_main, st);
    if (rc) {
        snprintf(err, errlen, "starting the heartbeat thread: %s", strerror(-rc));
        goto err_detach;
    }
    st->hb_started = 1;
    return 0;

err_detach:
    pipeline_detach(&st->pl);
err:
    pthread_mutex_destroy(&st->mu);
    memset(st, 0, sizeof(*st));
    return rc;
}

void *stage_new(size_t size, size_t st_offset, const struct stage_opts *o, enum stats_role role, int *rc,
                char *err, size_t errlen)
{
    char *self = calloc(1, size);

    if (!self) {
        snprintf(err, errlen, "out of memory");
        *rc = -ENOMEM;
        return NULL;
    }
    if ((*rc = stage_open((struct stage *)(self + st_offset), o, role, err, errlen))) {
        free(self);
        return NULL;
    }
    return self;
}

void stage_close(struct stage *st)
{
    if (!st || !st->pl.config) return;
    if (st->hb_started) {
        barrier_store_relaxed(&st->hb_quit, 1);
        pthread_join(st->hb, NULL);
    }
    stage_enter(st, STATS_IDLE);
    for (int i = 0; i < PIPE_ZKEY_CACHE; i++)
        if (st->zc[i].used) zkey_close(&st->zc[i].z);
    pipeline_detach(&st->pl);
    pthread_mutex_destroy(&st->mu);
    memset(st, 0, sizeof(*st));
}

void stage_enter_at(struct stage *st, uint32_t state, uint64_t now_ns)
{
    pthread_mutex_lock(&st->mu);
    stats_slot_enter(st->slot, state, now_ns);
    pthread_mutex_unlock(&st->mu);
}

void stage_enter(struct stage *st, uint32_t state)
{
    /* now is read under the lock: a heartbeat thread cannot move since_ns past it. */
    pthread_mutex_lock(&st->mu);
    stats_slot_enter(st->slot, state, stage_now());
    pthread_mutex_unlock(&st->mu);
}

void stage_heartbeat(struct stage *st)
{
    pthread_mutex_lock(&st->mu);
    stats_slot_heartbeat(st->slot, stage_now());
    pthread_mutex_unlock(&st->mu);
}

void stage_count(struct stage *st, uint32_t counter, uint64_t delta)
{
    pthread_mutex_lock(&st->mu);
    stats_counter_add(st->slot, counter, delta);
    pthread_mutex_unlock(&st->mu);
}

void stage_gauges(struct stage *st, uint32_t first, const uint64_t *v, uint32_t n)
{
    pthread_mutex_lock(&st->mu);
    stats_gauges_set(st->slot, first, v, n);
    pthread_mutex_unlock(&st->mu);
}

void stage_name_gauge(struct stage *st, uint32_t g, const char *name)
{
    pthread_mutex_lock(&st->mu);
    stats_slot_name_gauge(st->slot, g, name);
    pthread_mutex_unlock(&st->mu);
}

void stage_hist(struct stage *st, uint32_t hist, uint64_t ns)
{
    pthread_mutex_lock(&st->mu);
    stats_hist_record(st->slot, hist, ns);
    pthread_mutex_unlock(&st->mu);
}

void stage_names(struct stage *st, const char *const *states, const char *const *counters,
                 const char *const *hists)
{
    pthread_mutex_lock(&st->mu);
    for (uint32_t i = 0; states && states[i]; i++)
        stats_slot_name_state(st->slot, STATS_STAGE0 + i, states[i]);
    for (uint32_t i = 0; counters && counters[i]; i++) stats_slot_name_counter(st->slot, i, counters[i]);
    for (uint32_t i = 0; hists && hists[i]; i++) stats_slot_name_hist(st->slot, i, hists[i]);
    pthread_mutex_unlock(&st->mu);
}

void stage_long_begin(struct stage *st)
{
    /* Relaxed: the hb thread reads a start at most one period old or new. */
    barrier_store_relaxed(&st->long_since, stage_now());
    barrier_store_relaxed(&st->in_long_call, 1);
}

void stage_long_end(struct stage *st)
{
    barrier_store_relaxed(&st->in_long_call, 0);
    stage_heartbeat(st);
}
