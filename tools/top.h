/* top.h — the viewer: `cuzk-top` (live ncurses view, --once text or --json). The
 * readings it shows are taken through stats_reader.h (shm/), the same API cuzkd's
 * metrics endpoint and `cuzk metrics` (metrics_cmd.h) use. */
#ifndef CUZK_TOP_H
#define CUZK_TOP_H

#include "shm/stats_reader.h"

/* `cuzk-top`; returns the exit code. */
int top_main(int argc, char **argv);

#endif
