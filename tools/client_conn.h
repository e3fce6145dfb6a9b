/* client_conn.h — what the files of the `cuzk` client's daemon commands share
 * (client.c; client_prove.c, client_circuit.c, client_status.c, client_trace.c, one
 * command or family each): the connection to cuzkd, one request and its reply, the
 * descriptors a request passes, and the printers of replies. Private to tools/. */
#ifndef CUZK_CLIENT_CONN_H
#define CUZK_CLIENT_CONN_H

#include <stddef.h>

#include <jansson.h>

#include "proto/ctl_client.h"
#include "proto/protocol.h"
#include "shm/segment.h"
#include "tools/client.h"

struct client {
    char instance[SEG_INSTANCE_MAX + 1];
    char run_dir[PROTO_PATH_MAX];
    int json;
    struct proto_conn cc; /* the connection to cuzkd (ctl_client.h) */
};

/* The descriptors a request passes and the file references naming them. */
struct fdset {
    int *fd;
    size_t n, cap;
};

/* Connect to the instance's socket, after checking that its directory may be trusted.
 * 0, or an exit code (CUZK_EXIT_*) with a message printed. */
int client_connect(struct client *c);
/* One request (consumed) and its reply, passing nfds descriptors; NULL when no reply
 * came (no daemon, a dropped connection), with a message printed. */
json_t *client_request_fds(struct client *c, json_t *req, const int *fds, size_t nfds);
json_t *client_request(struct client *c, json_t *req);
void client_fdset_close(struct fdset *f);
/* Open arg for the daemon (dir: an out directory; else a regular input file) and add
 * its descriptor: F = {"fd":I,"path":ABS} (control.h) in *ref. -1 with a message. */
int client_add_file(struct fdset *f, const char *what, const char *arg, int dir, json_t **ref);

/* Replies: whether r is ok; an error reply printed, its exit code returned; 0 when r is
 * an ok reply, else the exit code (no reply, or an error reply printed and freed). */
int client_is_ok(json_t *r);
int client_print_error(const struct client *c, json_t *r);
int client_reply_failed(const struct client *c, json_t *r);
void client_print_json(json_t *r);
/* Members of a reply: a string ("" when absent); the same made safe to print (four
 * buffers in turn, so one printf may show up to four); an integer. */
const char *client_jstr(json_t *o, const char *k);
const char *client_jshow(json_t *o, const char *k);
long long client_jint(json_t *o, const char *k);
/* A job reply: printed (or its JSON), and the exit code its state gives. */
void client_print_job(json_t *j);
int client_finish_job_reply(const struct client *c, json_t *r);
/* A job id argument: 0, or -1 when s is not a non-negative integer. */
int client_parse_job(const char *s, json_int_t *out);
/* Every number the client reads from its command line, one way: the whole of s a
 * decimal integer in [min, max] into *out, 0; else -1. client_option_number says so
 * ("cuzk CMD: OPT needs a whole number from MIN to MAX") and returns CUZK_EXIT_USAGE. */
int client_parse_number(const char *s, long long min, long long max, long long *out);
int client_option_number(const char *cmd, const char *opt, const char *s, long long min, long long max,
                         long long *out);
/* A request whose reply is printed as kind says ('s' status, 'w' wait, 'c' cancel,
 * 'r' restart, 'd' drain, 'x' shutdown, 'C' circuits). */
int client_simple(struct client *c, json_t *req, int kind);

/* The commands (argv[0] is the command's name). */
int client_prove(struct client *c, int argc, char **argv);
int client_circuit(struct client *c, int argc, char **argv, const char *what);
int client_trace(struct client *c, int argc, char **argv);
int client_proof(struct client *c, int argc, char **argv);

#endif
