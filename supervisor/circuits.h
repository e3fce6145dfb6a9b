/* circuits.h — cuzkd's side of the preload / evict requests (supervisor/circuits.c):
 * validate, write the "circuits" table (pipeline_circuit_request), and show the
 * stages' acks. The stages' side is stage_circuits (pipeline.h, "Circuits"). */
#ifndef CUZK_CIRCUITS_H
#define CUZK_CIRCUITS_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "supervisor/control.h"
#include "supervisor/copies.h"
#include "shm/pipeline.h"

/* A running stage as cuzkd knows it: its stats slot and the pid it forked. */
struct circ_live {
    int slot;
    uint32_t pid;
    const char *stage;
    uint32_t index;
};

/* Handle a CONTROL_PRELOAD (the zkey passed as fds[r->zkey_fd], copied into cp and
 * pinned there until evicted) or CONTROL_EVICT (by the preload's path) request: the
 * reply line (malloc'd; an error reply when refused) and, when accepted, a sentence
 * for the log in log. copy >= 0: a preload whose zkey an intake already checked and
 * copied (control_circuit_check, intake.h): that reference is taken over, fds unused. */
char *circuits_request(struct pipeline *pl, const struct control_req *r, const int *fds, size_t n_fds,
                       struct copies *cp, int copy, const struct circ_live *lv, size_t n, char *log,
                       size_t loglen);

/* status's "circuits": {"seq","stages","entries":[{"zkey","action","seq","applied",
 * "failed"}],"acks":[{"stage","index","pid","seq","preloads","evicts"}]}. */
json_t *circuits_json(const struct pipeline *pl, const struct circ_live *lv, size_t n);

/* The preload of path in the table: -1 when there is none, else 0 with how many of the
 * n live stages applied it (*applied) and how many of those could not load it
 * (*failed). A declared circuit is resident when every live stage applied it. */
int circuits_preload_state(const struct pipeline *pl, const char *path, const struct circ_live *lv, size_t n,
                           int *applied, int *failed);

#endif
