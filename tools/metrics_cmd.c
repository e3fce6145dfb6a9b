/* metrics_cmd.c — `cuzk [--instance NAME] metrics` (metrics_cmd.h). Apart from top.c
 * so that `cuzk` does not link ncurses, which only cuzk-top's live view needs: every
 * shared library a binary names is loaded and relocated at each start. */
#include "tools/metrics_cmd.h"

#include <stdio.h>
#include <string.h>

#include "base/error.h"
#include "shm/stats_reader.h"

int metrics_cmd_main(const char *instance, int argc, char **argv)
{
    struct stats_reading t;
    int found, rc;

    if (argc > 1) {
        fputs("usage: cuzk [--instance NAME] metrics\n"
              "  the stats page in the Prometheus text format; for node_exporter's textfile\n"
              "  collector: cuzk metrics > DIR/cuzk.prom.tmp && mv DIR/cuzk.prom.tmp "
              "DIR/cuzk.prom\n",
              strcmp(argv[1], "--help") ? stderr : stdout);
        return strcmp(argv[1], "--help") ? CUZK_EXIT_USAGE : CUZK_EXIT_OK;
    }
    if ((rc = stats_reading_take(&t, instance))) {
        fprintf(stderr, "cuzk metrics: %s\n", cuzk_strerror(rc));
        return cuzk_exit_code(rc, CUZK_PROG_CLIENT);
    }
    stats_reading_prometheus(stdout, &t);
    if (!t.found) fprintf(stderr, "cuzk metrics: %s\n", t.why);
    found = t.found;
    stats_reading_free(&t);
    return found ? CUZK_EXIT_OK : CUZK_EXIT_NO_DAEMON;
}
