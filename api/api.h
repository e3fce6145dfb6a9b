/* api.h — cuzk-api, the HTTP API process, private to api/ (one file per job):
 *
 *   main.c     options, bind, privileges dropped, the server started and stopped
 *   tokens.c   the tokens file (--api-tokens): tenants, their token hashes, limits
 *   problem.c  answers: JSON bodies and RFC 9457 problem documents; control error
 *              codes to HTTP statuses and the CLI's exit-table names
 *   ctl.c      one control request to cuzkd per call (ctl_client.h), a fresh connection,
 *              at most API_CTL_CONNS at once
 *   bell.c     the job-end doorbell the long polls sleep on; each tenant's long polls
 *   watch.c    the one subscription to cuzkd's job ends that rings the bell
 *   http.c     libmicrohttpd's side: routing, bearer auth, a body's limits
 *   body.c     a body as it arrives: scanned (body_scan.h), its signals checked, kept
 *              in one memfd (an array's inputs framed), reserved (budget.h)
 *   submit.c   POST /v1/circuits/NAME/proofs: the body's memfd, the submit
 *   signals.c  an input object's signal names against the circuit's, as they arrive
 *   jobs.c     GET/DELETE /v1/jobs/ID, proofs, circuits, health, metrics
 *   list.c     GET /v1/jobs: a tenant's jobs, newest first, a page per control
 *              request (or query of the queue); the Cuzk-Metadata header
 *   proofs.c   a job's proofs in few requests: POST ?wait=, GET /v1/jobs/ID/proofs
 *              (paged), a proof as Solidity calldata
 *   vkey.c     GET /v1/circuits/NAME/vkey: snarkjs's verification_key.json
 *   callback.c a job's end pushed to the tenant's URL (?callback_url=), signed, retried,
 *              its delivery kept in an SQLite file (--callback-db)
 *   events.c   GET /v1/jobs/ID/events: the job's partitions as Server-Sent Events
 *   queue.c    queue mode (--queue): jobs written into the fleet's PostgreSQL and
 *              answered from it, on every server (fleet_pg.h)
 *   queue_db.c queue mode's connections: a pool for the request threads, and the
 *              job-end doorbell's listening thread
 *
 * The process stands on proto/ (the control protocol) and zk/ (os.h), never on cuzkd's
 * insides: nothing it parses off the network runs in cuzkd's address space, and
 * nothing a request says is used as a path. */
#ifndef CUZK_API_API_H
#define CUZK_API_API_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <jansson.h>

#include "api/body_scan.h"
#include "proto/protocol.h"

#define API_TENANT_MAX   64
/* A body's bytes when nothing says less: an input.json of a circuit with a million
 * input values in decimal (about 80 bytes each) fits, and a witness (.wtns) of
 * 500,000 BN254 values. */
#define API_BODY_DEFAULT (16ull << 20)

/* One line of the tokens file: NAME SHA256HEX [PRIORITY-CAP] [MAX-RUNNING] [MAX-BODY]
 * [MAX-REQUESTS] [callback-hosts=LIST] [callback-secret=HEX]. */
#define API_CB_HOSTS_MAX  512
#define API_CB_SECRET_MAX 128
struct api_tenant {
    char name[API_TENANT_MAX + 1];
    unsigned char hash[32]; /* SHA-256 of the token's text */
    int prio_cap;           /* -1: none */
    uint32_t max_running;   /* jobs not yet decided; 0: no limit of its own */
    uint64_t max_body;      /* bytes of one request body; 0: the default */
    uint32_t max_requests;  /* its requests in flight at once (long polls and bodies
                             * being sent included); 0: API_TENANT_REQUESTS */
    /* Where its jobs' end may be pushed (callback.c): comma-separated [http://]HOST[:PORT];
     * "" none, callbacks off. The secret their bodies are signed with ("" none). */
    char callback_hosts[API_CB_HOSTS_MAX + 1];
    char callback_secret[API_CB_SECRET_MAX + 1];
};
/* A tenant's requests in flight when its line sets none: each holds a thread (and a
 * long poll holds it for up to its wait), so one tenant cannot take every one of
 * --max-conns from the others. */
#define API_TENANT_REQUESTS 128
/* A tenant's long polls (?wait=S) at once; past it 429 with Retry-After. */
#define API_TENANT_WAITS    32
/* cuzkd's control connections the request threads hold at once (the watch is one
 * more): the API never takes cuzkd's connections from its local users and root. */
#define API_CTL_CONNS       16

struct api_tokens {
    struct api_tenant *t;
    size_t n;
};

int api_tokens_load(struct api_tokens *tk, const char *path, char *err, size_t errlen);
/* The tenant whose hash is SHA-256(token), compared in constant time against every
 * line; NULL when none. */
const struct api_tenant *api_tokens_find(const struct api_tokens *tk, const char *token, size_t len);
void api_tokens_free(struct api_tokens *tk);
/* The tenant of token in g_api.tokens, copied into out (a reload may replace the
 * table while the request runs): 0, or -1 when no line matches. */
int api_tokens_auth(const char *token, size_t len, struct api_tenant *out);
/* The line of tenant name in g_api.tokens, copied into out: 0, or -1 when none. */
int api_tokens_by_name(const char *name, struct api_tenant *out);
/* A file of secrets (the tokens file, the TLS key) open on fd: 0 when it is its
 * owner's alone (0600), or also readable by a group that is root's or the one the API
 * serves as (0640, as the packaged unit's root:cuzk-api); else -1 with err naming
 * option and path. Checked on the descriptor read, so no rename slips between. */
int api_secret_mode_refused(int fd, const char *option, const char *path, char *err, size_t errlen);
/* path read again into g_api.tokens; on failure (err) the old table stays. */
int api_tokens_reload(const char *path, char *err, size_t errlen);

struct api_cfg {
    char socket[PROTO_PATH_MAX]; /* cuzkd's control socket */
    char instance[64];           /* for /metrics (the stats page) */
    char listen[80];
    char tokens[PROTO_PATH_MAX];
    char cert[PROTO_PATH_MAX], key[PROTO_PATH_MAX];
    char user[64];  /* started as root: become this user ("" cuzk) */
    char cors[256]; /* --cors-origin: the one web origin answered with CORS headers ("" none, "*" any) */
    unsigned timeout_s, per_ip, max_conns;
    unsigned header_timeout_s; /* --header-timeout: a request head's deadline (conns.h) */
    uint64_t max_body;
    uint64_t max_inflight;            /* --max-inflight-body: bodies held at once (budget.h) */
    char queue[PROTO_PATH_MAX];       /* queue mode: the fleet's database ("" off) */
    char callback_db[PROTO_PATH_MAX]; /* callbacks' delivery state ("" callbacks off) */
    uint64_t callback_retry_base_ms;  /* the first retry's delay, doubled after each */
};

/* The process's shared state (read-only once serving, but for the tokens, which a
 * SIGHUP replaces under tokens.c's lock). */
struct api {
    struct api_cfg cfg;
    struct api_tokens tokens;
    gid_t gid; /* the group the process serves as (after dropping root): a tokens file
                * may be readable by it (tokens.c) */
};
extern struct api g_api;

/* One answer being built. */
struct api_resp {
    int status;
    char *body; /* malloc'd */
    size_t len;
    const char *ctype;
    char location[64];
    int retry_after; /* seconds; 0 none */
};

void api_json(struct api_resp *r, int status, json_t *j); /* j's reference taken */
/* A copy of text (malloc'd; NULL out of memory) whose absolute paths are cut to their
 * last part: "zkey /srv/zk/a.zkey: truncated" -> "zkey a.zkey: truncated". */
char *api_unpath(const char *text);
/* A problem document: type (an exit-table name), title, detail; code, the control
 * error code or the API's own; extra members (reference taken) may be NULL. */
void api_problem(struct api_resp *r, int status, const char *type, const char *code, const char *detail,
                 json_t *extra);
/* cuzkd's error reply as a problem document. */
void api_ctl_problem(struct api_resp *r, json_t *reply);

/* One request to cuzkd on a fresh connection (reference to req taken): its reply
 * when "ok" is true; else NULL with r set (503 when cuzkd does not answer, the
 * mapped error otherwise; *reply_out gets cuzkd's error reply when not NULL). */
json_t *api_ctl(json_t *req, const int *fds, size_t nfds, struct api_resp *r, json_t **err_out);
/* The job if it is the tenant's (NULL, r = 404, otherwise). */
json_t *api_job_of(uint64_t id, const struct api_tenant *t, struct api_resp *r);
/* The declared circuit NAME from cuzkd's list (NULL, r = 404, when none). */
json_t *api_circuit(const char *name, struct api_resp *r);

/* A request's body, as it arrived (http.c and body.c collect it). */
struct api_body {
    int fd;          /* memfd, sealed once complete; -1 none. An object or a .wtns: the body's
             * bytes; an array: its input objects framed (framed set) */
    uint64_t len;    /* the body's bytes */
    uint64_t stored; /* the memfd's (framed: the frames' lengths added, separators dropped) */
    int framed;      /* fd holds count frames: a 4-byte little-endian length, then that
                   * many bytes, an input object as the body had it */
    uint32_t count;  /* inputs: 1 for an object or a .wtns */
    char sha256[65];
    const char *ctype;
    const char *idem_key; /* Idempotency-Key header, or NULL */
    int priority;         /* ?priority=N, -1 none */
    json_t *signals;      /* the circuit's "inputs" as cuzkd lists them; NULL: unknown */
    json_t *metadata;     /* the Cuzk-Metadata header's object (list.c), or NULL */
};

/* The signal check of input objects whose keys arrive one at a time (signals.c):
 * every top-level signal of the circuit given, no other key, none twice. Each call
 * that refuses sets r (422 mismatch naming the signal and the element; a key given
 * twice 400 bad_json) and returns -1. inputs NULL or empty: nothing is checked. */
struct api_sigcheck {
    const json_t *inputs;
    size_t n;
    unsigned char *given; /* per input name: a key of this object gave it */
    json_t *seen;         /* this object's keys */
    struct api_resp *r;
};
int api_sig_init(struct api_sigcheck *c, const json_t *inputs, struct api_resp *r);
int api_sig_begin(struct api_sigcheck *c);
int api_sig_key(struct api_sigcheck *c, const char *key, size_t len, int cut, long index);
int api_sig_end(struct api_sigcheck *c, long index);
void api_sig_free(struct api_sigcheck *c);
/* The same for a tree: each input object of body (an object or an array of them). */
int api_check_signals(struct api_resp *r, const json_t *inputs, json_t *body);

/* A body being received (body.c): bytes in, checked and kept as they come. */
struct api_rx {
    struct api_body *b;
    struct api_resp *r;
    const char *tenant; /* whose budget it counts against */
    uint64_t reserved;  /* bytes of the budget it holds */
    int announced;      /* its Content-Length was reserved at once */
    uint64_t out;       /* bytes written to b->fd */
    int json, raw, in_frame;
    uint64_t frame_at;   /* b->fd offset of the open frame's length */
    const char *chunk;   /* the chunk being fed, at body offset base */
    uint64_t base, from; /* body offset from which the chunk's bytes are to be kept */
    struct body_scan scan;
    struct api_sigcheck sig;
};
/* Begin: the memfd made, content_length (or 0: unknown) reserved; 0, or -1 with r
 * set (503 or 429 with Retry-After when the budget is short, 500). */
int api_rx_begin(struct api_rx *x, struct api_body *b, struct api_resp *r, const char *tenant,
                 uint64_t content_length);
/* The next n bytes: 0, or -1 with r set (the body refused: the rest is to be dropped). */
int api_rx_feed(struct api_rx *x, const char *data, size_t n);
/* The body ended: checked whole, the memfd sealed; 0, or -1 with r set. */
int api_rx_end(struct api_rx *x);
/* The memfd closed, the budget given back (safe after a failure, and twice). */
void api_rx_free(struct api_rx *x);

void api_submit(struct api_resp *r, const char *circuit, const struct api_tenant *t, struct api_body *b);
/* A job's state; with wait_s > 0 once it is decided or wait_s have passed, or at once
 * when client_fd (the HTTP client's socket, -1 none) hangs up meanwhile. */
void api_get_job(struct api_resp *r, uint64_t id, const struct api_tenant *t, long wait_s, int client_fd);
void api_get_proof(struct api_resp *r, uint64_t id, uint64_t k, const struct api_tenant *t);
void api_cancel(struct api_resp *r, uint64_t id, const struct api_tenant *t);
/* DELETE's answer (both modes): {"job","cancelled","state"}; cancelled when this
 * request cancelled it (now) or state is "cancelled". */
void api_cancelled(struct api_resp *r, uint64_t id, int now, const char *state);
/* The 400 of a partition index k out of range (parts: the job's, or -1 unknown). */
void api_proof_range(struct api_resp *r, uint64_t id, uint64_t k, long parts);
void api_circuits(struct api_resp *r);
/* proofs.c. A page of GET /v1/jobs/ID/proofs holds this many at most (a job of 4096
 * inputs: 2 requests; about 1 KiB each on BN254). */
#define API_PROOFS_PAGE 2048
void api_job_proofs(struct api_resp *r, uint64_t id, const struct api_tenant *t, uint64_t offset,
                    uint64_t limit);
/* After a submit's 202 in r: up to wait_s seconds for the job's end (given up when the
 * client on client_fd hangs up), then r is the 200 with its proofs (the first page);
 * still running: the 202 stays. */
void api_submit_wait(struct api_resp *r, const struct api_tenant *t, long wait_s, int client_fd);
/* A 200 proof answer in r rewritten as snarkjs's soliditycalldata text. */
void api_proof_calldata(struct api_resp *r);
/* list.c. GET /v1/jobs: the filters and the page of a job list (a field NULL or 0:
 * none), read off the query by api_list_query (0, or -1 with r a 400 naming the
 * parameter); api_list answers it in both modes (one control request, or one query
 * of the fleet's database, per page). */
struct api_list_query {
    const char *state;   /* running, done, failed, cancelled */
    const char *circuit; /* a circuit name */
    int64_t since;       /* submitted at or after (unix seconds) */
    uint64_t before;     /* the cursor: jobs below this id */
    uint32_t limit;      /* 1 to PROTO_JOBS_PAGE_MAX */
};
/* The cursor of the page after job id (base64url of its decimal digits, no padding;
 * opaque to clients), and back: 0, or -1 when text is no cursor. */
void api_cursor_encode(uint64_t id, char out[32]);
int api_cursor_decode(const char *text, uint64_t *id);
void api_list(struct api_resp *r, const struct api_tenant *t, const struct api_list_query *q);
/* The Cuzk-Metadata header's text (NULL: none) as b->metadata: 0, or -1 with r a 400
 * naming the header. */
int api_metadata_header(struct api_resp *r, const char *text, struct api_body *b);
/* Queue mode's page (queue.c): the jobs, newest first, as the local mode's "jobs"
 * control reply has them ({"id",...}), *more when another page follows. NULL with r
 * answered. */
/* Queue mode's proofs of partitions [offset, offset + limit) of job id in one query:
 * an array of {"index","proof","public"} (done ones only), or NULL when it could not
 * be had (each proof is then asked for alone). */
json_t *api_queue_proofs(uint64_t id, const struct api_tenant *t, size_t offset, size_t limit);
json_t *api_queue_list(struct api_resp *r, const struct api_tenant *t, const struct api_list_query *q,
                       int *more);

/* vkey.c: the circuit's verification_key.json (404 undeclared, 503 not loaded yet). */
void api_vkey(struct api_resp *r, const char *name);
void api_readyz(struct api_resp *r);
/* The job as a tenant sees it (jobs.c): cuzkd's status of the job, its paths cut. */
json_t *api_job_view(json_t *j);

/* callback.c. api_callback_open opens --callback-db (made if missing), before the
 * process drops root: a cuzk-api under an --api-user of its own keeps the file open
 * though the state dir it lies in is not that user's to enter (the job store is
 * there too; a file that does not open leaves callbacks off, logged, and the API
 * serving); api_callback_start starts the delivery thread. Both nothing when
 * --callback-db is "". api_callback_check: url is one
 * the tenant may be called back at (0), else r is the 400 naming callback_url (-1).
 * api_callback_add records it for job (once: a job answered again by its
 * Idempotency-Key keeps its first); 0, or -1 with r a 500. api_callback_view: the
 * job's {url,state,attempts,last_status} (a new reference) or NULL: none. */
#define API_CB_RETRY_BASE_MS 1000
int api_callback_open(char *err, size_t errlen);
int api_callback_start(char *err, size_t errlen);
int api_callback_check(const char *url, const struct api_tenant *t, struct api_resp *r);
int api_callback_add(uint64_t job, const char *tenant, const char *url, struct api_resp *r);
json_t *api_callback_view(uint64_t job);
/* events.c: the Server-Sent Events stream of job id (answered into the connection). */
struct MHD_Connection;
struct MHD_Response;
/* The stream's response (NULL: r says why: 404, 429, 204 past the end). */
struct MHD_Response *api_events(struct api_resp *r, uint64_t id, const struct api_tenant *t,
                                const char *last_event_id, int client_fd);
/* The server stops: every stream ends at its next look (within the doorbell's slice). */
void api_events_stop(void);
void api_metrics(struct api_resp *r);

/* Queue mode (queue.c, queue_db.c). api_queue_opt takes --queue URL (refused, and
 * scrubbed in argv, with a password) and --queue-fd N (the URL read from descriptor
 * N, then closed: cuzkd's way to pass its own); 0 or -1 (said). api_queue_start opens
 * a first connection (a wrong URL said at start) and starts the doorbell thread. */
int api_queue_opt(struct api_cfg *c, const char *name, char *v);
int api_queue_start(char *err, size_t errlen);
void api_queue_submit(struct api_resp *r, const char *circuit, const struct api_tenant *t,
                      struct api_body *b);
void api_queue_get_job(struct api_resp *r, uint64_t id, const struct api_tenant *t, long wait_s,
                       int client_fd);
void api_queue_get_proof(struct api_resp *r, uint64_t id, uint64_t k, const struct api_tenant *t);
void api_queue_cancel(struct api_resp *r, uint64_t id, const struct api_tenant *t);
/* A handle of the pool (blocks while all QPOOL_MAX are in use; NULL, err set, when
 * the database cannot be reached), and back with the result of its last call
 * (-ECONNREFUSED: lost, closed). */
struct fleet *api_queue_take(char *err, size_t errlen);
void api_queue_put(struct fleet *f, int rc);
/* /readyz in queue mode: 0 when the fleet's database answers a round trip now, else
 * -1 (logged with the reason; the probe's answer names no server). */
int api_queue_ping(void);
/* The doorbell (bell.c): a mark taken before looking at a job; api_bell_wait sleeps
 * until job (or possibly it: a lost connection, a full ring) ends after the mark, 1,
 * until deadline_ns (os_now_ns's clock), 0, or until client_fd (-1 none) hangs up,
 * -1; job 0: any job's end. api_bell_ring(0): anything may have ended. */
void api_bell_init(void);
void api_bell_ring(uint64_t job);
uint64_t api_bell_mark(void);
int api_bell_wait(uint64_t mark, uint64_t job, uint64_t deadline_ns, int client_fd);
/* One more long poll of tenant: 0, or -1 at API_TENANT_WAITS; and one fewer. */
int api_wait_enter(const char *tenant);
void api_wait_leave(const char *tenant);
/* The long polls waiting now, all tenants together, as a Prometheus gauge
 * (cuzk_api_long_polls) for /metrics, which answers without a token: no tenant's name
 * is in it. An operator sees them pile up, a test that hung-up ones are gone. */
void api_waits_prometheus(FILE *f);
/* Local mode: the thread that subscribes to cuzkd's job ends (watch.c). */
int api_watch_start(char *err, size_t errlen);
/* A detached thread running fn(NULL), for the threads that live as long as the process
 * (the watch, the queue's doorbell, the callbacks' deliveries): 0, or -1 with err
 * naming what (a sentence's subject) and why. */
int api_thread_start(void *(*fn)(void *), const char *what, char *err, size_t errlen);
void api_qlog(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* An Idempotency-Key's form: 1 to 128 printable ASCII characters (0x20 to 0x7e: a
 * space is one). */
bool api_idem_key_valid(const char *k);

/* http.c: serve on listen_fd (-1: none, connections come from api_add_conn: the
 * fuzzer's); cert and key PEM text for HTTPS, or NULL. */
int api_serve(int listen_fd, const char *cert, const char *key, char *err, size_t errlen);
int api_add_conn(int fd); /* 0 or -1 */
void api_stop(void);

#endif
