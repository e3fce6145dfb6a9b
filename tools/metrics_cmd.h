/* metrics_cmd.h — `cuzk [--instance NAME] metrics`: the stats page (stats_reader.h) in
 * the Prometheus text format, for node_exporter's textfile collector. */
#ifndef CUZK_METRICS_CMD_H
#define CUZK_METRICS_CMD_H

/* argv[0] is "metrics"; returns the exit code: 0, CUZK_EXIT_NO_DAEMON when no stats
 * page was found (the text is still printed, the reason on stderr), usage 2. */
int metrics_cmd_main(const char *instance, int argc, char **argv);

#endif
