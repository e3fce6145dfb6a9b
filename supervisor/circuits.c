/* circuits.c — preload / evict requests on cuzkd's side (circuits.h). */
#include "supervisor/circuits.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "supervisor/submit_check.h"

/* The ack of a running stage, or NULL when its process has not written one yet. */
static const struct pipe_circuit_ack *ack_of(const struct pipeline *pl, const struct circ_live *l)
{
    const struct pipe_circuit_ack *a;

    if (l->slot < 0 || (uint32_t)l->slot >= pl->config->n_slots) return NULL;
    a = &pl->circuits->ack[l->slot];
    /* Acquire pairs with the pid's release in stage_open: its seq 0 is older. */
    return barrier_load_acquire(&((struct pipe_circuit_ack *)a)->pid) == l->pid ? a : NULL;
}

static uint64_t ack_seq(const struct pipe_circuit_ack *a)
{
    /* Acquire pairs with the stage's release of its ack (failed, counters before). */
    return barrier_load_acquire(&((struct pipe_circuit_ack *)a)->seq);
}

char *circuits_request(struct pipeline *pl, const struct control_req *r, const int *fds, size_t n_fds,
                       struct copies *cp, int copy, const struct circ_live *lv, size_t n, char *log,
                       size_t loglen)
{
    uint32_t action = r->kind == CONTROL_PRELOAD ? PIPE_CIRCUIT_PRELOAD : PIPE_CIRCUIT_EVICT;
    char path[JOBTAB_PATH_LEN], err[512];
    uint64_t min_ack = UINT64_MAX, seq;
    struct control_err e;
    int old = -1, rc;

    if (copy >= 0)
        snprintf(path, sizeof(path), "%s", r->zkey); /* checked by the intake */
    else if (control_circuit_check(r, fds, n_fds, cp, pl->config->buf_size, path, &copy, &e))
        return control_reply_error(e.code, e.message);
    /* The copy the entry of this name holds now (the table's own writer: plain reads):
     * a preload again replaces it, an evict drops it. */
    for (int i = 0; i < PIPE_CIRCUITS; i++)
        if (pl->circuits->c[i].action == PIPE_CIRCUIT_PRELOAD && !strcmp(pl->circuits->c[i].path, path))
            old = pl->circuits->c[i].fd;
    if (action == PIPE_CIRCUIT_EVICT && old < 0) {
        char m[JOBTAB_PATH_LEN + 96];

        snprintf(m, sizeof(m),
                 "zkey %s is not preloaded (evict names a zkey as its "
                 "preload did)",
                 path);
        return control_reply_error(PROTO_E_NOT_FOUND, m);
    }
    for (size_t i = 0; i < n; i++) {
        const struct pipe_circuit_ack *a = ack_of(pl, &lv[i]);

        if (a && ack_seq(a) < min_ack) min_ack = ack_seq(a);
    }
    /* EVICT carries the dropped copy's descriptor: the stages cached it by that. */
    rc = pipeline_circuit_request_fd(pl, action, path, action == PIPE_CIRCUIT_PRELOAD ? copy : old, min_ack,
                                     &seq, err, sizeof(err));
    if (rc) {
        copies_put(cp, copy);
        return control_reply_error(rc == -ENOSPC || rc == -EBUSY ? PROTO_E_FULL : PROTO_E_BAD_REQUEST, err);
    }
    /* The pin: the preload's reference to its copy, until replaced or evicted. The
     * copy stays open (unreferenced, shared) a while after: a stage that has not yet
     * applied the tombstone only finds its cache entry a miss. */
    if (old > 0 && old != copy)
        copies_put(cp, old);
    else if (old > 0 && old == copy)
        copies_put(cp, copy); /* the same copy again: one pin, not two */
    snprintf(log, loglen, "%s of %s requested (seq %llu)",
             action == PIPE_CIRCUIT_PRELOAD ? "preload" : "evict", path, (unsigned long long)seq);
    return control_reply_ok(json_pack("{s:s,s:s,s:I,s:i}", "zkey", path, "action",
                                      action == PIPE_CIRCUIT_PRELOAD ? "preload" : "evict", "seq",
                                      (json_int_t)seq, "stages", (int)n));
}

json_t *circuits_json(const struct pipeline *pl, const struct circ_live *lv, size_t n)
{
    const struct pipe_circuits *cs = pl->circuits;
    json_t *entries = json_array(), *acks = json_array();

    for (int i = 0; i < PIPE_CIRCUITS; i++) {
        const struct pipe_circuit *c = &cs->c[i];
        int applied = 0, failed = 0;

        if (c->action == PIPE_CIRCUIT_FREE) continue;
        for (size_t k = 0; k < n; k++) {
            const struct pipe_circuit_ack *a = ack_of(pl, &lv[k]);

            if (!a || ack_seq(a) < c->seq) continue;
            applied++;
            if (c->action == PIPE_CIRCUIT_PRELOAD &&
                (barrier_load_relaxed(&((struct pipe_circuit_ack *)a)->failed) & (1u << i)))
                failed++;
        }
        json_array_append_new(entries,
                              json_pack("{s:s,s:s,s:I,s:i,s:i}", "zkey", c->path, "action",
                                        c->action == PIPE_CIRCUIT_PRELOAD ? "preload" : "evict", "seq",
                                        (json_int_t)c->seq, "applied", applied, "failed", failed));
    }
    for (size_t k = 0; k < n; k++) {
        const struct pipe_circuit_ack *a = ack_of(pl, &lv[k]);

        json_array_append_new(
            acks,
            json_pack("{s:s,s:i,s:i,s:I,s:I,s:I}", "stage", lv[k].stage, "index", (int)lv[k].index, "pid",
                      (int)lv[k].pid, "seq", a ? (json_int_t)ack_seq(a) : (json_int_t)-1, "preloads",
                      a ? (json_int_t)barrier_load_relaxed(&((struct pipe_circuit_ack *)a)->preloads)
                        : (json_int_t)0,
                      "evicts",
                      a ? (json_int_t)barrier_load_relaxed(&((struct pipe_circuit_ack *)a)->evicts)
                        : (json_int_t)0));
    }
    return json_pack("{s:I,s:i,s:o,s:o}", "seq",
                     (json_int_t)barrier_load_relaxed(&((struct pipe_circuits *)cs)->seq), "stages", (int)n,
                     "entries", entries, "acks", acks);
}

int circuits_preload_state(const struct pipeline *pl, const char *path, const struct circ_live *lv, size_t n,
                           int *applied, int *failed)
{
    for (int i = 0; i < PIPE_CIRCUITS; i++) {
        const struct pipe_circuit *c = &pl->circuits->c[i];

        if (c->action != PIPE_CIRCUIT_PRELOAD || strcmp(c->path, path)) continue;
        *applied = *failed = 0;
        for (size_t k = 0; k < n; k++) {
            const struct pipe_circuit_ack *a = ack_of(pl, &lv[k]);

            if (!a || ack_seq(a) < c->seq) continue;
            (*applied)++;
            *failed += !!(barrier_load_relaxed(&((struct pipe_circuit_ack *)a)->failed) & (1u << i));
        }
        return 0;
    }
    return -1;
}
