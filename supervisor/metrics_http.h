/* metrics_http.h — cuzkd --metrics-listen ADDR:PORT: the text of `cuzk metrics`
 * (Prometheus text exposition format 0.0.4) on GET /metrics. Design and protocol in
 * supervisor/metrics_http.c. */
#ifndef CUZK_METRICS_HTTP_H
#define CUZK_METRICS_HTTP_H

#include <stddef.h>
#include <sys/socket.h>

#define METRICS_HTTP_HEAD_MAX 8192 /* request line + headers, bytes */
#define METRICS_HTTP_READ_MS  1000 /* the thread: each connection's time to send its head */

struct metrics_http;

/* Parse "IPv4:PORT" or "[IPv6]:PORT" (numeric only: the address is bound as given,
 * never resolved). 0, or -EINVAL with a sentence in err. ss/len may be NULL. */
int metrics_http_parse(const char *spec, struct sockaddr_storage *ss, socklen_t *len, char *err,
                       size_t errlen);

struct fleet_daemon;

/* Bind and listen on spec, start the serving thread (max_conns connections at once) for
 * instance's stats page, fleet's health (fleet.h; NULL without --queue: it must
 * outlive this thread: stop this first) and the free space of the job store's file
 * system (state_dir; NULL or "" with --no-store). Call
 * with the signals the process handles already blocked (the thread inherits the mask).
 * 0 and *out, or -errno with err. bound (may be NULL) gets "ADDR:PORT" as bound (the
 * port the kernel chose for :0). */
int metrics_http_start(struct metrics_http **out, const char *spec, const char *instance,
                       const struct fleet_daemon *fleet, const char *state_dir, unsigned max_conns,
                       char *bound, size_t boundlen, char *err, size_t errlen);

/* Stop the thread (at once: it polls the stop eventfd with its connections), close the socket,
 * free. Accepts NULL. */
void metrics_http_stop(struct metrics_http *m);

#endif
