/* sup.h — cuzkd's event loop, private to supervisor/: the state every part of the
 * loop shares (struct sup) and the functions the parts call in each other. One file
 * per job (supervisor/supervisor.h has the one public entry point):
 *
 *   supervisor.c the io_uring plumbing and the loop itself; supervisor_run's steps
 *   setup.c     process set-up: run dir, pid file, socket, segments, daemonizing
 *   children.c  the stage processes: start, reap, their state machines (child_fsm.h)
 *   reclaim.c   after a death: roll partitions back, temp files, a dead cuzkd's jobs
 *   conns.c     control connections: accept, read lines, descriptors, replies
 *   requests.c  the request handlers (status, wait, cancel, restart, drain, preload)
 *   submit.c    the submit path: intakes (intake.h) and the refusals around them
 *   jobs.c      per-job state (struct job_state), its one reset, retiring decided jobs
 *   journal.c   mirroring the job table into the job store (store.h)
 *   resume.c    taking over a previous cuzkd's unfinished jobs from the store
 *   gauges.c    the supervisor's gauges in the stats segment
 *   timers.c    the 100 ms timer's named jobs, each with its deadline
 *   lifecycle.c the daemon's own lifecycle (daemon_fsm.h) and what each move does
 *   catalog.c   the circuits the operator declared by name: load, list, reload
 *   results.c   jobs whose proofs are kept in the job store ("results":"store"):
 *               their private spool dirs, the proof request, idempotency keys
 *   api_child.c --listen: the HTTP API process (cuzk-api), started and restarted
 *
 * Single-threaded: only the loop's thread touches struct sup (intakes, the fleet and
 * the metrics listener have threads of their own and talk through descriptors). */
#ifndef CUZK_SUPERVISOR_SUP_H
#define CUZK_SUPERVISOR_SUP_H

#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/un.h>

#include <jansson.h>
#include <liburing.h>

#include "supervisor/child_fsm.h"
#include "supervisor/circuit_decl.h"
#include "supervisor/circuits.h"
#include "supervisor/config.h"
#include "supervisor/control.h"
#include "supervisor/submit_check.h"
#include "supervisor/daemon_fsm.h"
#include "supervisor/copies.h"
#include "fleet/fleet.h"
#include "supervisor/intake.h"
#include "base/os.h"
#include "supervisor/metrics_http.h"
#include "shm/pipeline.h"
#include "supervisor/plan.h"
#include "store/store.h"
#include "supervisor/supervisor.h"

#define MAX_CHILDREN    (PIPE_MAX_WORKERS + PLAN_MAX_NODES + 1)
#define MAX_CONNS       64 /* control connections of ordinary users */
#define RESERVED_CONNS  8  /* more, only for root and cuzkd's own uid */
#define N_CONNS         (MAX_CONNS + RESERVED_CONNS)
#define TICK_NS         100000000ull    /* timer period: 100 ms */
#define SUP_MAX_TIMERS  16              /* timers.c's named timers, at most */
#define REPLY_MAX       PROTO_REPLY_MAX /* a connection's unsent replies: one reply line at most */
#define RESUME_OPEN_MS  5000u           /* a stored job's out dir may take this long to open */
/* An unfinished request line (its descriptors already queued) may take this long: a
 * client sends one in a single write (a 4096-witness submit is about 1 MB), so 30 s
 * is only reached by one that trickles a byte now and then to hoard descriptors. */
#define LINE_TIMEOUT_NS 30000000000ull

/* The doorbell's number in every stage (dup2'd there before exec; --doorbell-fd). */
#define DOORBELL_CHILD_FD     3
#define DOORBELL_CHILD_FD_STR "3"

/* Intakes of one uid that were given up on (--copy-timeout) and still block: past
 * this many its next submit is refused, so a client cannot pile up stuck threads. */
#define STUCK_PER_UID 2

/* A connection's queue of received descriptors: a request takes at most this many
 * (a submit: one per witness plus zkey, r1cs, out dir and a few for later inputs). */
#define CONN_FDS_EXTRA 16

/* The supervisor slot's counters (stats.h), by name: set in setup.c, read by cuzk-top
 * and the metrics endpoint under the names there. */
enum sup_counter {
    SUP_C_DEATHS,        /* stages that died (reclaim.c) */
    SUP_C_SUBMITS,       /* jobs accepted (submit.c) */
    SUP_C_STORE_COMMITS, /* job store transactions (journal.c) */
    SUP_C_STORE_NS,      /* ... and their time */
    SUP_C_STORE_ERRORS,  /* job store writes that failed */
    SUP_C_COUNT
};

/* What a completion is for: the top byte of its user data (ev_data). */
enum ev_type {
    EV_LISTEN = 1,
    EV_CONN,
    EV_CONN_OUT,
    EV_PIDFD,
    EV_SIGNAL,
    EV_TIMER,
    EV_INTAKE,
    EV_CHILD_TIMER,
    EV_DOORBELL,
    EV_API_PIDFD
};

/* A completion's user data: its type, the generation of the slot it was armed for
 * (a completion for a slot reused since is dropped) and the slot's index. */
static inline uint64_t ev_data(enum ev_type t, uint32_t gen, uint32_t idx)
{
    return (uint64_t)t << 56 | (uint64_t)(gen & 0xffffff) << 32 | idx;
}

struct child {
    enum plan_role role;
    uint32_t index;
    const struct plan_place *place;
    pid_t pid; /* 0: not running */
    int pidfd;
    uint32_t gen;        /* poll generation of pidfd */
    uint32_t generation; /* restarts so far; passed as --generation */
    int last_status;
    struct child_fsm fsm; /* its lifecycle: state, backoff, stall (child_fsm.h) */
};

/* --listen: the HTTP API process (api_child.c). */
struct api_proc {
    int on;    /* --listen given */
    pid_t pid; /* 0: not running */
    int pidfd;
    uint32_t gen;        /* poll generation of pidfd */
    uint32_t generation; /* restarts so far */
    struct child_fsm fsm;
};

struct conn {
    int fd; /* -1: slot free */
    uint32_t gen;
    struct control_framer fr;
    char *out;
    size_t out_len, out_off;
    int out_armed;
    int in_armed;
    int close_after; /* close once the output is sent */
    /* pending wait */
    int waiting;
    uint32_t wait_slot;
    uint64_t wait_job;
    uint64_t wait_deadline; /* 0: none */
    int drain_wait;
    int watching; /* "watch": every job's end is pushed here (requests_answer_waiters) */
    uid_t uid;    /* SO_PEERCRED */
    gid_t gid;
    gid_t *groups; /* SO_PEERGROUPS (control_peer: the out dir check) */
    size_t n_groups;
    int *fds; /* descriptors received, not yet taken by a request */
    uint32_t n_fds;
    int fd_trouble;         /* descriptors were lost (MSG_CTRUNC) or too many queued */
    int privileged;         /* root, cuzkd's own uid or --api-user: may act for others */
    int api_user;           /* --api-user: privileged for its tenants, not an operator */
    int reserve_ok;         /* may use the reserved slots: privileged, but not the
                             * HTTP API child (its requests are its tenants') */
    uint64_t active_ns;     /* last request byte or reply: --idle-timeout */
    uint64_t line_ns;       /* since when an unfinished line (or descriptors without
                             * their request) waits: closed after LINE_TIMEOUT however
                             * slowly it trickles; 0 none */
    struct intake *pending; /* a submit being checked (intake.h): no other request of
                             * this connection runs, and none is read, until it ends */
    char *defer;            /* lines read behind it, '\n'-separated, run after it */
    size_t defer_len;
};

/* What a job holds while its slot lives: references to cuzkd's copies of its inputs
 * and its out directory's descriptor (pipeline.h, "Inputs by descriptor"): held for
 * the job's whole life, so a stage restarted mid-job still finds them, and dropped
 * when the slot is retired. -1: none. */
struct job_files {
    int zkey_fd, r1cs_fd, out_fd, wgen_fd;
    int *wtns_fd;
    size_t n;
    uint64_t bytes; /* its copies' bytes, counted against its uid's --quota-bytes
                     * until they are dropped (when the job is decided) */
    json_t *dur;    /* the job store on: names of the durable copies it holds
                     * (copies.h), released when the slot retires */
};

/* The job store's record of a job slot (journal.c): not in the store, running in it,
 * or its end recorded. A partition's record is its store state, or REC_UNKNOWN. */
#define REC_UNKNOWN 0xff
enum { REC_NONE = 0, REC_RUNNING, REC_FINAL };

/* cuzkd's own state of one job slot, beside the shared job table's (jobtab.h): set
 * when a job takes the slot (jobs_begin) and cleared by jobs_reset alone. */
struct job_state {
    uid_t owner;           /* who submitted it (SO_PEERCRED; owners.h) */
    uint64_t decided_ns;   /* when it was first seen decided (0: not yet) */
    uint8_t cancelled;     /* `cuzk cancel`: its partitions are swept to FAILED */
    uint8_t rec;           /* REC_*: what the job store has of it */
    uint8_t resumed;       /* taken over from a previous cuzkd (resume.c) */
    uint8_t results_store; /* its proofs go into the job store (results.c) */
    uint8_t spool_gone;    /* ... and its spool dir was removed once they were there */
    uint8_t end_told;      /* its end was pushed to the watchers ("watch") */
    int64_t submitted_unix;
    char circuit[PROTO_CIRCUIT_NAME_MAX]; /* submitted by name; "" by files */
    char tenant[CONTROL_TENANT_MAX];
    json_t *metadata; /* the client's object (a reference), or NULL */
    struct job_files files;
};

/* cuzkd's own state of one partition. */
struct part_state {
    uint16_t crashes; /* stage crashes while it held it (poison at --max-attempts) */
    uint8_t rec;      /* its state as last written to the job store, or REC_UNKNOWN */
    /* Its tries (part_attempts): those a dead or killed stage cut short (each
     * reclaim, and a previous cuzkd's), the count a resumed final partition had in
     * the store (0: none, counted live), and the count last written to the store
     * (PART_ATT_UNKNOWN: write it again). */
    uint16_t retries, fixed_attempts, rec_att;
};
#define PART_ATT_UNKNOWN 0xffff

/* A declared circuit as cuzkd holds it (catalog.c). */
struct cat_entry {
    struct circuit_decl d;
    int zkey_fd, r1cs_fd, wgen_fd; /* the operator's files, open since load; -1 none */
    char id[CONTROL_ID_LEN];       /* the zkey's identity then (control_file_id) */
    char fp[2 * 32 + 1];           /* its fingerprint, hex (fingerprint.h) */
    const char *curve;             /* "bn128" or "bls12381" */
    uint32_t constraints, npublic, nvars, domain_size;
    /* The generator's main inputs, "name size\n" each (wgen_names.h); "" unknown. */
    char inputs[4096];
    /* Why it could not be loaded ("" loaded): it refuses jobs. */
    char error[PROTO_PATH_MAX + 512];
    char note[512]; /* why it is not preloaded (it still takes jobs); "" none */
};

struct sup {
    const struct cuzkd_config *c;
    const struct plan *plan;
    struct pipeline pl;
    struct stats_slot *slot;
    const struct fleet_daemon *fleet;  /* --queue: its health for status (fleet.h) */
    struct fleet_daemon *fleet_thread; /* --queue: the thread that claims (fleet.c) */
    struct metrics_http *metrics;      /* --metrics-listen: its own thread */
    struct io_uring ring;
    int lfd, sfd, tfd;
    int cfd;         /* timerfd, one-shot: the children's earliest deadline */
    uint64_t cfd_at; /* what cfd is armed for (0: disarmed) */
    struct child_fsm_cfg fsm_cfg;
    char sock_path[sizeof(((struct sockaddr_un *)0)->sun_path)];
    char pid_path[PROTO_PATH_MAX + 64];
    char bin_dir[PROTO_PATH_MAX];
    struct child ch[MAX_CHILDREN];
    uint32_t n_ch;
    struct api_proc api;
    struct conn conns[N_CONNS];
    int listen_armed;
    uint64_t listen_retry_ns; /* accept hit the descriptor limit: listen again then */
    int spare_fd;             /* /dev/null, closed to accept one connection at the
                               * descriptor limit (to tell it so, or to let root in) */
    uint32_t fd_budget;       /* descriptors all ordinary users may have queued or in
                               * intakes at once: half the limit, the rest is cuzkd's
                               * and the operator's */
    struct daemon_fsm life;   /* running, draining, stopping, killing (daemon_fsm.h) */
    struct daemon_fsm_cfg life_cfg;
    int repush_needed;
    struct job_state *jobs;   /* per job slot (max_jobs) */
    struct part_state *parts; /* per partition (max_parts) */
    json_t *preload_owner;    /* zkey path of each preload -> its owner's uid (owners.h) */
    int ready_fd;             /* daemon mode: tell the launcher we are up */
    struct copies copies;     /* cuzkd's copies of client files (copies.h) */
    int copies_dfd;           /* the job store on: STATE_DIR/INSTANCE.copies (copies.h) */
    int results_dfd;          /* the job store on: STATE_DIR/INSTANCE.results (results.c) */
    json_t *dur;              /* durable copy name -> jobs in the table holding it */
    json_t *lost;             /* jobs of a previous cuzkd that died with them */
    int notified;             /* systemd told READY=1 */
    /* The job store (store.h; NULL with --no-store); what was last recorded is in
     * jobs[].rec and parts[].rec, so a tick writes only changes. */
    struct store *store;
    uint64_t store_err_ns;              /* last logged store failure (one line per 10 s) */
    uint64_t timer_ran[SUP_MAX_TIMERS]; /* when each of timers.c's timers last ran */
    /* eventfd: an intake finished (never closed: a thread given up on may still write it) */
    int intake_fd;
    struct intake *intakes; /* every intake not yet freed (intake.h) */
    /* eventfd the stages write when they decide a job (stage_job_try_complete):
     * waiters are answered then, not at the next tick */
    int doorbell_fd;
    uint64_t doorbell_rings;                      /* times it woke us (status --json "doorbell_rings") */
    struct cat_entry cat[PROTO_CIRCUIT_DECL_MAX]; /* the declared circuits (catalog.c) */
    uint32_t n_cat;
};

/* supervisor.c */
__attribute__((format(printf, 1, 2))) void logmsg(const char *fmt, ...);
void supervisor_arm_poll(struct sup *s, int fd, unsigned events, uint64_t data);
void supervisor_cancel_poll(struct sup *s, uint64_t data);

/* children.c */
const char *children_bin(enum plan_role r);
void children_timer_arm(struct sup *s);
void children_event(struct sup *s, struct child *c, enum child_event ev, uint64_t t, uint64_t arg);
void children_timers(struct sup *s);
void children_reap(struct sup *s, struct child *c);
json_t *children_json(const struct sup *s);
size_t children_live(const struct sup *s, struct circ_live *lv);
void children_stop(struct sup *s);
int children_alive(const struct sup *s);
void children_notify_systemd(struct sup *s);

/* api_child.c */
void api_child_init(struct sup *s);
void api_child_event(struct sup *s, enum child_event ev, uint64_t t, uint64_t arg);
void api_child_timer(struct sup *s, uint64_t t);
void api_child_reap(struct sup *s, uint32_t gen);
/* `cuzk reload` and SIGHUP: the API process reads its tokens file again. */
void api_child_reload(struct sup *s);
void api_child_kill(struct sup *s);

/* reclaim.c */
void reclaim_repush_state(struct sup *s, uint32_t st);
uint64_t collect_lost(struct sup *s);
int reclaim_lost_msg(const struct sup *s, uint64_t id, char *m, size_t len);
void reclaim_child(struct sup *s, struct child *c, const struct child_step *st, int status);

/* conns.c */
void conns_close(struct sup *s, struct conn *k);
void conns_flush(struct sup *s, struct conn *k);
void conns_reply(struct sup *s, struct conn *k, char *line);
void conns_reply_err(struct sup *s, struct conn *k, const char *code, const char *msg);
void conns_accept(struct sup *s);
void conns_read(struct sup *s, struct conn *k);
void conns_resume(struct sup *s, struct conn *k);

/* jobs.c */
int jobs_slot(const struct sup *s, uint64_t id, uint32_t *slot);
uint32_t job_state(const struct sup *s, uint32_t slot);
int jobs_busy(const struct sup *s);
uint64_t files_bytes(const struct job_files *f);
uint64_t uid_bytes(const struct sup *s, uid_t uid);
uint64_t uid_bytes_quota(const struct sup *s, uid_t uid);
void jobs_reset(struct sup *s, uint32_t j);
void jobs_begin(struct sup *s, uint32_t j, uid_t owner, int resumed, const struct job_files *files);
void jobs_dur_ref(struct sup *s, const char *name);
void jobs_dur_unref(struct sup *s, const char *name);
void jobs_dur_release(struct sup *s, json_t *names);
int jobs_retire(struct sup *s, int force);
void jobs_cancel_sweep(struct sup *s, uint32_t slot);

/* requests.c */
void requests_circuit_finish(struct sup *s, struct conn *k, const struct control_req *r, const int *fds,
                             size_t n_fds, int copy);
void requests_answer_waiters(struct sup *s, uint64_t t);
void requests_run(struct sup *s, struct conn *k, struct control_req *r);

/* journal.c */
void journal_sync(struct sup *s);
char *journal_request(const struct control_submit *sub, json_t *copies, const struct control_peer *peer,
                      const struct stat *od);
void journal_prune(struct sup *s);
void journal_prune_owner(struct sup *s);
int journal_record(struct sup *s, const struct control_submit *sub, json_t *copies,
                   const struct control_peer *peer, char *err, size_t errlen);

/* catalog.c */
void catalog_entry_open(const struct cuzkd_config *c, struct cat_entry *e, const struct circuit_decl *d);
void catalog_entry_close(struct cat_entry *e);
void catalog_load(struct sup *s);
json_t *catalog_json(const struct sup *s);
int catalog_reload(struct sup *s, json_t **changed, char *err, size_t errlen);
int catalog_submit(struct sup *s, struct control_req *r, int extra[3], size_t *n_extra, const char **code,
                   char *m, size_t len);
void catalog_free(struct sup *s);

/* journal.c: partition p's tries, as shown and stored ("attempts") */
uint32_t part_attempts(const struct sup *s, uint32_t p);

/* results.c */
int results_open(struct sup *s, char *err, size_t errlen);
void results_note(struct sup *s, uint32_t slot, const char *circuit, const char *tenant, int store,
                  int64_t submitted, json_t *metadata);
int results_spool_make(struct sup *s, struct control_submit *sub, char *err, size_t errlen);
void results_spool_remove(struct sup *s, uint64_t id);
int results_reopen(struct sup *s, uint64_t id, char *why, size_t len);
int results_harvest(struct sup *s, uint32_t slot, uint32_t i, char *why, size_t len);
void results_synced(struct sup *s);
void results_sweep(struct sup *s);
int results_idem(struct sup *s, struct conn *k, const char *tenant, const char *key, const char *sha);
void results_job_fields(const struct sup *s, uint32_t slot, json_t *j);
int results_stored_job(struct sup *s, struct conn *k, uint64_t id);
void results_proof(struct sup *s, struct conn *k, const struct control_req *r);
/* {"req":"jobs"}: a page of the job store's jobs (protocol.h), one query. */
void results_jobs(struct sup *s, struct conn *k, const struct control_req *r);
/* A status, wait, cancel or proof request with "tenant":T for job r->job whose
 * tenant (in the table, else the store) is not T: answered no_such_job (1), as a job
 * that does not exist; from a peer neither root nor cuzkd's user: not_permitted (1);
 * else 0, nothing sent. */
int results_tenant_hides(struct sup *s, struct conn *k, const struct control_req *r);

/* submit.c */
void submit_intake_begin(struct sup *s, struct conn *k, struct control_req *r, size_t n_fds);
void submit_run(struct sup *s, struct conn *k, struct control_req *r, size_t n_fds);
void submit_handle_intakes(struct sup *s);
void submit_check_intakes(struct sup *s, uint64_t t_ns);

/* resume.c */
int resume_start(struct sup *s, uint64_t next_id);

/* gauges.c */
void gauges_publish_names(struct sup *s);
void gauges_publish(struct sup *s);

/* timers.c */
void timers_tick(struct sup *s);
void timers_pruned(struct sup *s, uint64_t t);

/* lifecycle.c */
void lifecycle_event(struct sup *s, enum daemon_event ev, uint64_t t, unsigned seen, const char *why);

/* setup.c */
int setup_trusted_run_dir(const char *dir, mode_t mode, char *err, size_t errlen);
void setup_group_reach(const struct cuzkd_config *c);
int setup_listen_socket(struct sup *s, char *err, size_t errlen);
int setup_pid_file(struct sup *s, char *err, size_t errlen);
void setup_bin_dir(struct sup *s);
int setup_segments(struct sup *s, char *err, size_t errlen);
int setup_daemonize(struct sup *s);
void setup_tell_launcher(struct sup *s, unsigned char code);
void setup_redirect_log(struct sup *s);
void setup_fd_limits(void);

#endif
