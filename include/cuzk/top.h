/* top.h — the viewer: `cuzk-top` (live ncurses view, --once text or --json) and
 * `cuzk [--instance NAME] metrics` (Prometheus text). The readings they show are
 * taken through stats_reader.h (shm/), the same API cuzkd's metrics endpoint uses. */
#ifndef CUZK_TOP_H
#define CUZK_TOP_H

#include "cuzk/stats_reader.h"

/* `cuzk-top`, and `cuzk [--instance NAME] metrics` (argv[0] is "metrics"); return the
 * exit code. */
int top_main(int argc, char **argv);
int top_metrics_cmd(const char *instance, int argc, char **argv);

#endif
