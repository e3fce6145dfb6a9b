/* config.h — cuzkd's options, from the command line and from an INI file with the
 * same names (`--config FILE`; command-line values override the file's).
 *
 * INI syntax: `name = value` per line (`name` alone for a flag, or `name = true`),
 * `#` or `;` starts a comment, a `[cuzkd]` section header is accepted and ignored.
 * `[circuit NAME]` opens a circuit's section (circuit_decl.h): its lines, up to the
 * next section, declare that circuit and go to c->circuits.
 * The names are the long options without the leading dashes.
 */
#ifndef CUZK_CONFIG_H
#define CUZK_CONFIG_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include "supervisor/circuit_decl.h"
#include "shm/pipeline.h"
#include "proto/protocol.h"
#include "shm/segment.h"

enum config_dev_kind {
    CONFIG_DEV_CPU = 0,
    CONFIG_DEV_CUDA,
};

struct cuzkd_config {
    char instance[SEG_INSTANCE_MAX + 1];
    char run_dir[PROTO_PATH_MAX];
    char state_dir[PROTO_PATH_MAX];    /* the job store (store.h): STATE_DIR/INSTANCE.db */
    int no_store;                      /* --no-store: jobs live in memory only (lost with cuzkd) */
    char wgen_dir[PROTO_PATH_MAX];     /* --wgen-dir DIR[:DIR]: where generators may lie */
    char circuits_dir[PROTO_PATH_MAX]; /* circuits-dir: more circuits, a file or folder each
                                         * (circuits_dir.h) */
    char queue[PROTO_PATH_MAX];        /* --queue postgresql://...: a fleet's queue (fleet_pg.h) */
    uint32_t queue_lease_s;            /* --queue-lease: seconds a claim is held unrenewed */
    uint32_t queue_parallel;           /* --queue-parallel: fleet partitions in this cuzkd at once */
    int store_proofs;                  /* --store-proofs: proofs also stored in the queue's table */
    char devices[128];                 /* the spec as given, for messages */
    enum config_dev_kind dev_kind;
    uint32_t n_devices; /* cpu:N -> N; cuda:LIST -> its length; cuda:all -> 0 */
    int cuda_all;
    int cuda_ids[PIPE_MAX_WORKERS];
    uint32_t buffers;       /* pool buffers */
    uint32_t buffer_mb;     /* size of each, MiB */
    uint32_t precompute_mb; /* per worker: per-circuit tables kept between partitions */
    uint32_t fixed_base_mb; /* per CPU worker: fixed-base MSM tables (gpuworker/fixed_base.h) */
    uint32_t synth_threads; /* 0: one per core of the synth's placement */
    uint32_t max_jobs;
    uint32_t max_parts;
    uint32_t drain_timeout_s;         /* SIGTERM/shutdown: wait this long for in-flight work */
    uint32_t stall_timeout_s;         /* a stage without a heartbeat this long is killed; 0 off */
    uint32_t long_call_timeout_s;     /* one long call (an MSM) beats at most this long; 0 off */
    uint32_t write_timeout_s;         /* one write of a partition's outputs to its out dir
                                       * (finalizer/out_writer.h) may take this long; 0 off */
    uint32_t max_attempts;            /* a partition whose processing crashes a stage this many
                                       * times fails (a kill from outside counts; a restart or
                                       * shutdown cuzkd asked for does not) */
    uint32_t max_queued;              /* submit answers "busy" beyond this many unfinished
                                       * partitions; 0: only the table's size limits */
    uint32_t quota_jobs;              /* per uid (root and cuzkd's uid exempt, owners.h): running */
    uint32_t quota_partitions;        /* jobs, unfinished partitions, preloads; 0: the default, */
    uint32_t quota_preloads;          /* half of --max-jobs, --max-parts, the preload slots */
    uint64_t quota_bytes;             /* bytes of copies one uid's unfinished jobs may hold
                                       * (memory, and the store's disk); 0: a quarter of RAM */
    uint32_t conns_per_uid;           /* control connections one uid may hold (root and the
                                       * daemon's own uid: the reserved slots as well) */
    uint32_t idle_timeout_s;          /* close a control connection idle this long; 0 never */
    uint32_t copy_timeout_s;          /* a submit whose files read nothing this long fails; 0 never */
    uint32_t store_keep_days;         /* decided jobs leave the store this long after; 0 never */
    uint32_t store_keep_jobs;         /* and beyond this many decided jobs of one uid */
    uint32_t store_keep_mb;           /* or this many MiB of one uid's decided requests */
    uint32_t keep_finished_s;         /* a decided job stays visible this long (a full table
                                       * retires it sooner) */
    uint32_t metrics_conns;           /* concurrent metrics HTTP connections */
    uint32_t test_finalizer_delay_ms; /* tests only: planted delay in the finalizer's trim */
    int foreground;
    int plan_only;
    int test_fake_topology;          /* tests only: run on --topology/--synthetic here */
    int check;                       /* --check: preflight report, then exit */
    char driver_gpus[192];           /* tests: the CUDA driver's GPUs, PCI addresses */
    char topology[PROTO_PATH_MAX];   /* hwloc XML instead of this machine (tests) */
    char synthetic[256];             /* hwloc synthetic topology string (tests) */
    char group[64];                  /* control socket group ("" = none) */
    char metrics_listen[80];         /* --metrics-listen ADDR:PORT ("" = off) */
    char api_listen[80];             /* --listen ADDR:PORT: run cuzk-api ("" = off) */
    char api_tokens[PROTO_PATH_MAX]; /* --api-tokens FILE (cuzk-api's tenants) */
    char api_cors[256];              /* --cors-origin ORIGIN, passed to cuzk-api ("" none) */
    char tls_cert[PROTO_PATH_MAX];   /* --tls-cert, --tls-key: cuzk-api serves HTTPS */
    char tls_key[PROTO_PATH_MAX];
    gid_t gid;
    int have_gid;
    char api_user[64]; /* --api-user NAME: the HTTP API's own user ("" = none) */
    uid_t api_uid;     /* its uid and primary group, read at parse time */
    gid_t api_gid;
    int have_api_uid;
    char bin_dir[PROTO_PATH_MAX];                         /* stage executables; "" = next to cuzkd */
    char config_path[PROTO_PATH_MAX];                     /* --config, made absolute ("" none): reload */
    struct circuit_decl circuits[PROTO_CIRCUIT_DECL_MAX]; /* its [circuit NAME] sections */
    uint32_t n_circuits;
};

/* Fills the defaults: instance "default", run dir proto_default_run_dir(),
 * state dir store_default_dir(), devices cpu:1, 8 buffers of 64 MiB, 256 jobs, 4096 partitions, drain 30 s,
 * stall timeout 60 s, 3 attempts, no queue limit. */
void config_defaults(struct cuzkd_config *c);

/* Set one option by name (no dashes); value NULL for a bare flag. 0, or -EINVAL with
 * a sentence in err (state of the other options unchanged). */
int config_set(struct cuzkd_config *c, const char *name, const char *value, char *err, size_t errlen);

/* Only the circuits of an INI file (cuzk reload, SIGHUP): its [circuit NAME] sections
 * and those of its circuits-dir, else of dir (the one cuzkd was started with; NULL or
 * "" none); path "": dir's alone. Into out[0..*n), at most PROTO_CIRCUIT_DECL_MAX. 0, -errno
 * or -EINVAL with err. */
int config_load_circuits(const char *path, const char *dir, struct circuit_decl *out, uint32_t *n, char *err,
                         size_t errlen);

/* Apply an INI file. 0, -errno (unreadable) or -EINVAL (bad line: err names file:line). */
int config_load_file(struct cuzkd_config *c, const char *path, char *err, size_t errlen);
/* A new, empty declaration of circuit name in c->circuits: NULL with err when the
 * name is declared already or there is no room (PROTO_CIRCUIT_DECL_MAX). */
struct circuit_decl *config_circuit_new(struct cuzkd_config *c, const char *name, char *err, size_t errlen);
/* A circuits-dir's NAME.conf: the lines of a [circuit NAME] section without its
 * header (no section may open in it), added to c->circuits. 0 or as the above. */
int config_load_circuit_file(struct cuzkd_config *c, const char *path, const char *name, char *err,
                             size_t errlen);

/* Defaults, then --config FILE if given, then every other option of argv[1..].
 * Returns 0, 1 for --help (usage printed to stdout), or -EINVAL with err set. */
int config_parse_args(struct cuzkd_config *c, int argc, char **argv, char *err, size_t errlen);

/* Checks that need the whole config (e.g. cuda without a CUDA build). 0 or -EINVAL. */
int config_validate(const struct cuzkd_config *c, char *err, size_t errlen);

void config_usage(FILE *f);

/* Bytes of one pool buffer. */
static inline uint64_t config_buf_bytes(const struct cuzkd_config *c)
{
    return (uint64_t)c->buffer_mb << 20;
}

#endif
