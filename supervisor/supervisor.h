/* supervisor.h — cuzkd's single-threaded event loop: creates the instance's segments,
 * starts and watches the stages, serves the control socket, recovers and restarts
 * stages that die, and shuts everything down on SIGTERM or `shutdown`.
 *
 * One io_uring carries every event: the listening socket and each client (poll),
 * each child's pidfd (readable once it exited), a signalfd (SIGTERM, SIGINT, SIGCHLD,
 * SIGHUP), the stages' doorbell and intakes' eventfds, a 100 ms timerfd (the named
 * timers of supervisor/timers.c: waiters, cancels, the job store, retiring decided
 * jobs, the drain and shutdown deadlines of daemon_fsm.h, the supervisor's heartbeat)
 * and a one-shot timerfd armed for the earliest deadline of any stage (restart
 * back-off and stall checks, child_fsm.h). The parts are in supervisor/sup.h.
 */
#ifndef CUZK_SUPERVISOR_H
#define CUZK_SUPERVISOR_H

#include "supervisor/config.h"
#include "supervisor/plan.h"

/* Runs the daemon until shutdown. Returns the process exit code (0 after a clean
 * shutdown, CUZK_EXIT_IO (3) when the run dir, socket or segments cannot be set up,
 * CUZK_EXIT_INTERNAL (10) otherwise).
 * Unless c->foreground, it daemonizes first (the caller's process exits 0 once the
 * socket is listening, 3 if startup failed). */
int supervisor_run(const struct cuzkd_config *c, const struct plan *p);

#endif
