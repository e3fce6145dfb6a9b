/* conns.h — cuzk-api's connections from accept to close (api/conns.c).
 *
 * A connection costs a thread from accept on, but who sent it is known only once its
 * request head has arrived (the bearer token). A crowd that trickles header bytes
 * (slowloris) would hold every thread and every slot of --max-conns without ever
 * showing a token. So:
 *   - a connection that has not sent a whole request head within --header-timeout
 *     seconds of its accept (or of its last request's end) is closed, however much
 *     it trickles: the idle --timeout alone is reset by every byte;
 *   - connections waiting for their first authenticated request ("pre-auth") hold at
 *     most a quarter of --max-conns, and from one address a quarter of --per-ip
 *     (at least one each). Past a share, the new connection is taken and the oldest
 *     pre-auth one closed to make room: of the address itself, or for the server's
 *     share of the address holding the most. A tenant's fresh connection, which
 *     sends its head at once, is then never the one closed while a crowd holds
 *     more from any address; once its token is seen it counts against --max-conns
 *     and --per-ip only;
 *   - --per-ip and --max-conns are checked here too, so that a full address or
 *     server first makes room the same way and refuses only when every connection
 *     it holds is authenticated or busy with a request;
 *   - a refusal, an eviction or a deadline's close is logged at most once a minute
 *     per address and kind, with the count of the ones left unsaid then (and so
 *     is each kind of libmicrohttpd's own messages).
 * Authenticated connections keep the idle --timeout only. */
#ifndef CUZK_API_CONNS_H
#define CUZK_API_CONNS_H

#include <stdint.h>
#include <sys/socket.h>

#include <microhttpd.h>

/* The limits (0 header_timeout_s: no deadline) and the watchdog thread that closes
 * connections past their deadline and says what the log left out. 0, or -1 (err). */
int api_conns_start(unsigned max_conns, unsigned per_ip, unsigned header_timeout_s, char *err, size_t errlen);
void api_conns_stop(void);
/* The most connections libmicrohttpd is let hold: --max-conns and room for the ones
 * being closed to make room (they hold their descriptor until their thread ends). */
unsigned api_conns_hard_limit(unsigned max_conns);

/* libmicrohttpd's callbacks: the accept policy (MHD_OPTION_ACCEPT_POLICY's), and
 * the connection notifications (MHD_OPTION_NOTIFY_CONNECTION). */
enum MHD_Result api_conns_accept(void *cls, const struct sockaddr *addr, socklen_t addrlen);
void api_conns_notify(void *cls, struct MHD_Connection *c, void **socket_context,
                      enum MHD_ConnectionNotificationCode code);
/* A message of libmicrohttpd's own, said as conns.c says its own (each kind once a
 * minute, with the count of the rest): one comes per connection closed early or
 * refused at its hard limit, and names no address. */
void api_conns_mhd_said(const char *what);
/* A request's head has arrived on c (authenticated: its token was valid); and its
 * request has ended, the next head awaited. */
void api_conns_headed(struct MHD_Connection *c, int authenticated);
void api_conns_request_ended(struct MHD_Connection *c);

#endif
