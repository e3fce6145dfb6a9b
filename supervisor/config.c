/* config.c — cuzkd options: command line and INI file (see config.h). */
#include "supervisor/config.h"
#include "supervisor/circuit_decl.h"
#include "supervisor/circuits_dir.h"
#include "base/version.h"
#include "base/error.h"
#include "store/fleet_pg.h"
#include "supervisor/metrics_http.h"
#include "store/store.h"

#include <ctype.h>
#include <errno.h>
#include <grp.h>
#include <pwd.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

void config_defaults(struct cuzkd_config *c)
{
    memset(c, 0, sizeof(*c));
    snprintf(c->instance, sizeof(c->instance), "default");
    proto_default_run_dir(c->run_dir, sizeof(c->run_dir));
    store_default_dir(c->state_dir, sizeof(c->state_dir));
    snprintf(c->devices, sizeof(c->devices), "cpu:1");
    c->dev_kind = CONFIG_DEV_CPU;
    c->n_devices = 1;
    c->buffers = 8;
    c->buffer_mb = 64;
    c->precompute_mb = 512;  /* = STAGE_PRECOMPUTE_MB_DEFAULT */
    c->fixed_base_mb = 1024; /* = STAGE_FIXED_BASE_MB_DEFAULT (gpuworker/fixed_base.h says why) */
    c->max_jobs = 256;
    c->max_parts = 4096;
    c->drain_timeout_s = 30;
    c->stall_timeout_s = 60;
    c->long_call_timeout_s = 1800;
    c->max_attempts = 3;
    c->write_timeout_s = 60;
    c->conns_per_uid = 8;
    c->idle_timeout_s = 30;
    c->copy_timeout_s = 120;
    c->store_keep_days = 30;
    c->store_keep_jobs = 10000;
    c->store_keep_mb = 64;
    c->keep_finished_s = 30;
    c->metrics_conns = 16;
    c->queue_lease_s = 30;
    c->queue_parallel = 2;
}

void config_usage(FILE *f)
{
    fputs("usage: cuzkd [options]\n"
          "  --config FILE        read options from an INI file (name = value, same names)\n"
          "  --version            print the version and exit\n"
          "  --instance NAME      instance name, [A-Za-z0-9_-] (default: default)\n"
          "  --run-dir DIR        socket and pid file (default: /run/cuzk as root, else\n"
          "                       $XDG_RUNTIME_DIR/cuzk, else /tmp/cuzk-UID)\n"
          "  --state-dir DIR      the job store, DIR/INSTANCE.db (SQLite): accepted jobs survive\n"
          "                       a restart and are resumed (default: /var/lib/cuzk as root,\n"
          "                       else $XDG_STATE_HOME/cuzk, else ~/.local/state/cuzk)\n"
          "  --no-store           keep jobs in memory only: a cuzkd that dies loses them\n"
          "  --store-keep-days D  remove decided jobs from the store D days after they\n"
          "                       finished (at start, then hourly; default 30; 0: never)\n"
          "  --store-keep-jobs N  and keep at most N decided jobs of each user and of each\n"
          "                       API tenant (default 10000), --store-keep-mb M of their\n"
          "                       requests (default 64): the oldest go first (checked\n"
          "                       every minute)\n"
          "  --devices SPEC       cpu:N (N CPU-backend workers), cuda:all or cuda:0,2\n"
          "                       (default cpu:1)\n"
          "  --buffers N          partition buffers in the pool (default 8)\n"
          "  --buffer-mb M        size of each buffer in MiB (default 64); a circuit needs\n"
          "                       (3*domain + nVars) * 32 bytes\n"
          "  --precompute-mb M    per worker: per-circuit tables (NTT domains) kept between\n"
          "                       partitions, MiB (default 512; 0 rebuilds them each time)\n"
          "  --fixed-base-mb M    per CPU worker: fixed-base MSM tables of the circuits it\n"
          "                       has proved 64 times, MiB (default 1024; 0 builds none)\n"
          "  --synth-threads N    threads per synth process (default: its cores)\n"
          "  --max-jobs N         job table size (default 256)\n"
          "  --max-parts N        partition table size (default 4096)\n"
          "  --drain-timeout S    on SIGTERM/shutdown wait S seconds for in-flight work (30)\n"
          "  --stall-timeout S    kill and restart a stage whose heartbeat is older than S\n"
          "                       seconds (default 60; 0: never)\n"
          "  --long-call-timeout S  a stage inside one long call (an MSM, a zkey load) for\n"
          "                       more than S seconds stops beating, so --stall-timeout\n"
          "                       restarts it and the partition counts a try (default\n"
          "                       1800; 0: no limit)\n"
          "  --write-timeout S    a partition's proof files not written within S seconds (an\n"
          "                       out dir on a hung file system): that try fails and, up to\n"
          "                       --max-attempts, is retried; other jobs are written meanwhile\n"
          "                       (default 60; 0: no limit)\n"
          "  --max-attempts K     a partition that crashed its stage K times fails (default 3;\n"
          "                       a kill -9 or SIGTERM from outside counts too; a restart\n"
          "                       or shutdown cuzkd asked for does not)\n"
          "  --max-queued N       submit answers \"busy\" when it would leave more than N\n"
          "                       partitions unfinished (default 0: no limit but --max-parts)\n"
          "  --quota-jobs N       running jobs one uid may have (default 0: half of --max-jobs);\n"
          "                       root and cuzkd's own user are exempt; beyond: \"quota\"\n"
          "  --quota-partitions N unfinished partitions one uid may have queued (default 0:\n"
          "                       half of --max-parts)\n"
          "  --quota-preloads N   preloads one uid may hold (default 0: 1, half the slots)\n"
          "  --quota-bytes N[KMG] bytes of input copies (zkey, witnesses...) one uid's\n"
          "                       unfinished jobs may hold in cuzkd's memory and store\n"
          "                       (default 0: a quarter of RAM); beyond: \"quota\"\n"
          "  --group NAME         also admit this group on the control socket\n"
          "  --api-user NAME      the HTTP API's own user (cuzk-api.service's): admitted on\n"
          "                       the control socket and may name tenants, not operate\n"
          "                       cuzkd; cuzkd started as root runs --listen's cuzk-api\n"
          "                       as this user (it needs --group, a group it is in)\n"
          "  --conns-per-uid N    control connections one uid may hold (default 8); root\n"
          "                       and cuzkd's own user also have 8 reserved slots\n"
          "  --idle-timeout S     close a control connection with no request outstanding\n"
          "                       after S seconds (default 30; 0: never; a wait is not idle)\n"
          "  --copy-timeout S     a submit whose files give no byte for S seconds (a read\n"
          "                       that blocks: FUSE, hung NFS) fails (default 120; 0 never)\n"
          "  --keep-finished S    a finished or failed job stays in `cuzk status` for S\n"
          "                       seconds (default 30; sooner when the job table is full)\n"
          "  --metrics-conns N    concurrent metrics HTTP connections (default 16); each\n"
          "                       has 1 s to send its request head\n"
          "  --metrics-listen ADDR:PORT   serve `cuzk metrics` on http://ADDR:PORT/metrics\n"
          "                       (numeric IPv4 or [IPv6]; bound to that address only;\n"
          "                       default: off)\n"
          "  --listen ADDR:PORT   run the HTTP API (cuzk-api; docs/api.md) on ADDR:PORT,\n"
          "                       restarted like a stage; with --api-tokens FILE (absolute)\n"
          "                       and, for HTTPS, --tls-cert FILE --tls-key FILE;\n"
          "                       --cors-origin ORIGIN lets that web origin call it\n"
          "  --test-finalizer-delay-ms N   tests only: the finalizer trims its heap after\n"
          "                       every partition and sleeps N ms in that step\n"
          "  --circuits-dir DIR   more circuits by name: DIR/NAME.conf (a [circuit NAME]\n"
          "                       section's lines) or DIR/NAME/circuit.zkey (with\n"
          "                       circuit.wgen, circuit.r1cs when present)\n"
          "  --wgen-dir DIR[:DIR] the only places witness generators are taken from\n"
          "                       (root's directories, on a local file system; default\n"
          "                       none: jobs from input.json are refused)\n"
          "  --queue URL          claim partitions from a fleet's PostgreSQL queue\n"
          "                       (postgresql://...; docs/operations.md \"Fleet\"); --queue-lease S\n"
          "                       (default 30), --queue-parallel N (default 2)\n"
          "  --store-proofs       with --queue: also store each proof and public JSON in\n"
          "                       the queue's table (`cuzk fetch`); claim the jobs\n"
          "                       submitted with --store-proofs, the ones with no out dir\n"
          "                       too (proved in RUN-DIR/fleet-INSTANCE.proofs/)\n"
          "  --bin-dir DIR        where the stage executables are (default: next to cuzkd)\n"
          "  --foreground         stay in the foreground, log to stderr\n"
          "  --plan               print the placement and exit\n"
          "  --check              preflight: limits, /dev/shm, huge pages, io_uring, GPUs,\n"
          "                       NUMA, placement, each with a fix; exit 1 on a failure\n"
          "  --driver-gpus LIST   tests: plan as if the CUDA driver listed these PCI\n"
          "                       addresses (0000:1a:00.0,...; none for no GPU)\n"
          "  --topology FILE.xml  place on this hwloc XML topology instead of this machine\n"
          "  --synthetic STRING   place on an hwloc synthetic topology (\"pack:2 core:8 pu:1\")\n"
          "  --test-fake-topology tests only: run (not only plan) on the --topology or\n"
          "                       --synthetic machine here: its NUMA nodes are routed as\n"
          "                       real ones, each planned cpu is this machine's cpu (N mod\n"
          "                       online cpus), no memory policy and no mbind\n",
          f);
    cuzk_exit_help(f, CUZK_PROG_CUZKD, NULL);
}

static int parse_u32(const char *v, uint32_t lo, uint32_t hi, uint32_t *out)
{
    char *end;
    unsigned long long x;

    if (!v || !*v || !isdigit((unsigned char)*v)) return -EINVAL;
    errno = 0;
    x = strtoull(v, &end, 10);
    if (errno || *end || x < lo || x > hi) return -EINVAL;
    *out = (uint32_t)x;
    return 0;
}

static int parse_bool(const char *v, int *out)
{
    if (!v || !strcmp(v, "1") || !strcasecmp(v, "true") || !strcasecmp(v, "yes") || !strcasecmp(v, "on")) {
        *out = 1;
        return 0;
    }
    if (!strcmp(v, "0") || !strcasecmp(v, "false") || !strcasecmp(v, "no") || !strcasecmp(v, "off")) {
        *out = 0;
        return 0;
    }
    return -EINVAL;
}

static int parse_devices(struct cuzkd_config *c, const char *v, char *err, size_t errlen)
{
    uint32_t n;

    if (!strncmp(v, "cpu:", 4)) {
        if (parse_u32(v + 4, 1, PIPE_MAX_WORKERS, &n)) {
            snprintf(err, errlen, "--devices %s: cpu:N needs N from 1 to %d", v, PIPE_MAX_WORKERS);
            return -EINVAL;
        }
        c->dev_kind = CONFIG_DEV_CPU;
        c->n_devices = n;
        c->cuda_all = 0;
    } else if (!strcmp(v, "cuda:all")) {
        c->dev_kind = CONFIG_DEV_CUDA;
        c->cuda_all = 1;
        c->n_devices = 0;
    } else if (!strncmp(v, "cuda:", 5)) {
        char buf[128], *save = NULL, *tok;
        uint32_t k = 0;

        snprintf(buf, sizeof(buf), "%s", v + 5);
        for (tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
            if (k == PIPE_MAX_WORKERS || parse_u32(tok, 0, 255, &n)) {
                snprintf(err, errlen,
                         "--devices %s: cuda:LIST needs up to %d "
                         "comma-separated device numbers",
                         v, PIPE_MAX_WORKERS);
                return -EINVAL;
            }
            for (uint32_t j = 0; j < k; j++)
                if (c->cuda_ids[j] == (int)n) {
                    snprintf(err, errlen, "--devices %s: device %u is listed twice", v, n);
                    return -EINVAL;
                }
            c->cuda_ids[k++] = (int)n;
        }
        if (!k) {
            snprintf(err, errlen, "--devices %s: no device numbers after cuda:", v);
            return -EINVAL;
        }
        c->dev_kind = CONFIG_DEV_CUDA;
        c->cuda_all = 0;
        c->n_devices = k;
    } else {
        snprintf(err, errlen, "--devices %s: expected cpu:N, cuda:all or cuda:0,2", v);
        return -EINVAL;
    }
    snprintf(c->devices, sizeof(c->devices), "%s", v);
    return 0;
}

static int set_path(char *dst, size_t len, const char *name, const char *v, char *err, size_t errlen)
{
    if (!v || !*v || strlen(v) >= len) {
        snprintf(err, errlen, "--%s needs a path shorter than %zu bytes", name, len);
        return -EINVAL;
    }
    snprintf(dst, len, "%s", v);
    return 0;
}

static int is_flag(const char *name)
{
    return !strcmp(name, "foreground") || !strcmp(name, "plan") || !strcmp(name, "check") ||
        !strcmp(name, "no-store") || !strcmp(name, "test-fake-topology") || !strcmp(name, "store-proofs");
}

struct u32_opt {
    const char *name;
    size_t off;
    uint32_t lo, hi;
};

static const struct u32_opt u32_opts[] = {
    { "buffers", offsetof(struct cuzkd_config, buffers), 1, 65536 },
    { "buffer-mb", offsetof(struct cuzkd_config, buffer_mb), 1, 1u << 20 },
    { "precompute-mb", offsetof(struct cuzkd_config, precompute_mb), 0, 1u << 22 },
    { "fixed-base-mb", offsetof(struct cuzkd_config, fixed_base_mb), 0, 1u << 22 },
    { "synth-threads", offsetof(struct cuzkd_config, synth_threads), 0, 1024 },
    { "max-jobs", offsetof(struct cuzkd_config, max_jobs), 1, 1u << 20 },
    { "max-parts", offsetof(struct cuzkd_config, max_parts), 1, 1u << 24 },
    { "drain-timeout", offsetof(struct cuzkd_config, drain_timeout_s), 0, 86400 },
    { "stall-timeout", offsetof(struct cuzkd_config, stall_timeout_s), 0, 86400 },
    { "long-call-timeout", offsetof(struct cuzkd_config, long_call_timeout_s), 0, 604800 },
    { "write-timeout", offsetof(struct cuzkd_config, write_timeout_s), 0, 86400 },
    { "max-attempts", offsetof(struct cuzkd_config, max_attempts), 1, 1000 },
    { "max-queued", offsetof(struct cuzkd_config, max_queued), 0, 1u << 24 },
    { "quota-jobs", offsetof(struct cuzkd_config, quota_jobs), 0, 1u << 20 },
    { "quota-partitions", offsetof(struct cuzkd_config, quota_partitions), 0, 1u << 24 },
    { "quota-preloads", offsetof(struct cuzkd_config, quota_preloads), 0, PIPE_CIRCUITS },
    { "conns-per-uid", offsetof(struct cuzkd_config, conns_per_uid), 1, 64 },
    { "idle-timeout", offsetof(struct cuzkd_config, idle_timeout_s), 0, 86400 },
    { "copy-timeout", offsetof(struct cuzkd_config, copy_timeout_s), 0, 86400 },
    { "store-keep-days", offsetof(struct cuzkd_config, store_keep_days), 0, 36500 },
    { "store-keep-jobs", offsetof(struct cuzkd_config, store_keep_jobs), 1, 1u << 30 },
    { "store-keep-mb", offsetof(struct cuzkd_config, store_keep_mb), 1, 1u << 20 },
    { "keep-finished", offsetof(struct cuzkd_config, keep_finished_s), 0, 86400 * 7 },
    { "metrics-conns", offsetof(struct cuzkd_config, metrics_conns), 1, 1024 },
    { "queue-lease", offsetof(struct cuzkd_config, queue_lease_s), 3, 86400 },
    { "queue-parallel", offsetof(struct cuzkd_config, queue_parallel), 1, 1024 },
    { "test-finalizer-delay-ms", offsetof(struct cuzkd_config, test_finalizer_delay_ms), 0, 60000 },
};

/* Options whose value is kept as it is given (a path, or a spec parsed later), in a
 * char array of the config. */
struct path_opt {
    const char *name;
    size_t off, len;
};

#define PATH_OPT(name, field)                                                                 \
    {                                                                                         \
        name, offsetof(struct cuzkd_config, field), sizeof(((struct cuzkd_config *)0)->field) \
    }

static const struct path_opt path_opts[] = {
    PATH_OPT("run-dir", run_dir),         PATH_OPT("state-dir", state_dir),
    PATH_OPT("topology", topology),       PATH_OPT("queue", queue),
    PATH_OPT("bin-dir", bin_dir),         PATH_OPT("synthetic", synthetic),
    PATH_OPT("driver-gpus", driver_gpus), PATH_OPT("wgen-dir", wgen_dir),
    PATH_OPT("listen", api_listen),       PATH_OPT("api-tokens", api_tokens),
    PATH_OPT("tls-cert", tls_cert),       PATH_OPT("tls-key", tls_key),
    PATH_OPT("cors-origin", api_cors),    PATH_OPT("circuits-dir", circuits_dir),
};

int config_set(struct cuzkd_config *c, const char *name, const char *v, char *err, size_t errlen)
{
    for (size_t i = 0; i < sizeof(u32_opts) / sizeof(u32_opts[0]); i++) {
        if (strcmp(name, u32_opts[i].name)) continue;
        if (parse_u32(v, u32_opts[i].lo, u32_opts[i].hi, (uint32_t *)((char *)c + u32_opts[i].off))) {
            snprintf(err, errlen, "--%s %s: expected a whole number from %u to %u", name, v ? v : "(missing)",
                     u32_opts[i].lo, u32_opts[i].hi);
            return -EINVAL;
        }
        return 0;
    }
    if (is_flag(name)) {
        int b;

        if (parse_bool(v, &b)) {
            snprintf(err, errlen, "--%s %s: expected true or false", name, v);
            return -EINVAL;
        }
        *(name[0] == 'f'       ? &c->foreground
              : name[0] == 'p' ? &c->plan_only
              : name[0] == 'n' ? &c->no_store
              : name[0] == 't' ? &c->test_fake_topology
              : name[0] == 's' ? &c->store_proofs
                               : &c->check) = b;
        return 0;
    }
    if (!v) {
        snprintf(err, errlen, "--%s needs a value", name);
        return -EINVAL;
    }
    if (!strcmp(name, "instance")) {
        char seg[SEG_INSTANCE_MAX + 32];

        if (segment_name(seg, sizeof(seg), v, SEG_KIND_DATA)) {
            snprintf(err, errlen,
                     "--instance %s: use 1 to %d characters from "
                     "A-Z a-z 0-9 _ -",
                     v, SEG_INSTANCE_MAX);
            return -EINVAL;
        }
        snprintf(c->instance, sizeof(c->instance), "%s", v);
        return 0;
    }
    if (!strcmp(name, "devices")) return parse_devices(c, v, err, errlen);
    if (!strcmp(name, "quota-bytes")) {
        if (circuit_decl_size(v, &c->quota_bytes)) {
            snprintf(err, errlen,
                     "--quota-bytes %s: expected a number of bytes (K, M or G "
                     "suffix allowed)",
                     v);
            return -EINVAL;
        }
        return 0;
    }
    for (size_t i = 0; i < sizeof(path_opts) / sizeof(path_opts[0]); i++)
        if (!strcmp(name, path_opts[i].name))
            return set_path((char *)c + path_opts[i].off, path_opts[i].len, name, v, err, errlen);
    if (!strcmp(name, "metrics-listen")) {
        if (metrics_http_parse(v, NULL, NULL, err, errlen)) return -EINVAL;
        return set_path(c->metrics_listen, sizeof(c->metrics_listen), name, v, err, errlen);
    }
    if (!strcmp(name, "group")) {
        struct group *g = getgrnam(v);

        if (!g) {
            snprintf(err, errlen, "--group %s: no such group", v);
            return -EINVAL;
        }
        snprintf(c->group, sizeof(c->group), "%s", v);
        c->gid = g->gr_gid;
        c->have_gid = 1;
        return 0;
    }
    if (!strcmp(name, "api-user")) {
        struct passwd *pw = getpwnam(v);

        snprintf(c->api_user, sizeof(c->api_user), "%s", v);
        c->have_api_uid = 0;
        if (pw && pw->pw_uid == 0) {
            snprintf(err, errlen, "--api-user %s: not root: it is the HTTP API's own user", v);
            return -EINVAL;
        }
        if (!pw) {
            /* The packaged config names cuzk-api, which only the package's sysusers
             * entry makes: without it cuzkd still proves, and says what it lacks. */
            fprintf(stderr, "cuzkd: warning: --api-user %s: no such user; no API user is admitted\n", v);
            return 0;
        }
        c->api_uid = pw->pw_uid;
        c->api_gid = pw->pw_gid;
        c->have_api_uid = 1;
        return 0;
    }
    snprintf(err, errlen, "unknown option --%s (see cuzkd --help)", name);
    return -EINVAL;
}

static char *trim(char *s)
{
    char *e;

    while (isspace((unsigned char)*s)) s++;
    e = s + strlen(s);
    while (e > s && isspace((unsigned char)e[-1])) *--e = '\0';
    return s;
}

/* The section a line of an INI file belongs to: cuzkd's options, or a circuit. */
struct ini_state {
    struct cuzkd_config *c;
    struct circuit_decl *cur; /* in a [circuit NAME] section: its declaration */
};

/* A section header line (s): close the circuit being read, open the next. */
static int ini_section(struct ini_state *st, const char *s, char *err, size_t errlen)
{
    char name[PROTO_CIRCUIT_NAME_MAX];
    int rc;

    if (st->cur && (rc = circuit_decl_done(st->cur, err, errlen))) return rc;
    st->cur = NULL;
    if ((rc = circuit_decl_header(s, name, err, errlen)) <= 0) return rc;
    return (st->cur = config_circuit_new(st->c, name, err, errlen)) ? 0 : -EINVAL;
}

struct circuit_decl *config_circuit_new(struct cuzkd_config *c, const char *name, char *err, size_t errlen)
{
    struct circuit_decl *d;

    for (uint32_t i = 0; i < c->n_circuits; i++)
        if (!strcmp(c->circuits[i].name, name)) {
            snprintf(err, errlen, "circuit %s is declared twice", name);
            return NULL;
        }
    if (c->n_circuits >= PROTO_CIRCUIT_DECL_MAX) {
        snprintf(err, errlen, "more than %d circuits declared", PROTO_CIRCUIT_DECL_MAX);
        return NULL;
    }
    d = &c->circuits[c->n_circuits++];
    memset(d, 0, sizeof(*d));
    snprintf(d->name, sizeof(d->name), "%s", name);
    return d;
}

/* A fleet password in the file (queue = URL with one): only if no one but its owner
 * (root or cuzkd's user) can read or change the file. 0 or -EINVAL with err. */
static int queue_password_file(FILE *f, const char *val, const char *path, unsigned lineno, char *err,
                               size_t errlen)
{
    struct stat fst = { 0 };

    if (!val || !fleet_url_has_password(val)) return 0;
    if (!fstat(fileno(f), &fst) && !(fst.st_mode & (S_IRWXG | S_IRWXO)) &&
        (fst.st_uid == 0 || fst.st_uid == geteuid()))
        return 0;
    snprintf(err, errlen,
             "%s:%u: queue holds a password, so the file must be "
             "mode 0600 and belong to root or cuzkd's user (it is "
             "%04o, uid %u): chmod 600 it, or move the password to a "
             "PGPASSFILE",
             path, lineno, (unsigned)(fst.st_mode & 07777), (unsigned)fst.st_uid);
    return -EINVAL;
}

/* An INI file into c; circuit: a circuits-dir's NAME.conf, whose lines are that
 * circuit's section ("[circuit NAME]" already open, no other may open). */
static int load_ini(struct cuzkd_config *c, const char *path, const char *circuit, char *err, size_t errlen)
{
    char line[2048], sub[512];
    unsigned lineno = 0;
    FILE *f = fopen(path, "re");
    struct ini_state st = { c, NULL };
    int rc = 0;

    if (!f) {
        rc = -errno;
        snprintf(err, errlen, "%s %s: %s", circuit ? "circuits-dir:" : "--config", path, strerror(errno));
        return rc;
    }
    if (circuit) {
        snprintf(line, sizeof(line), "[circuit %s]", circuit);
        if ((rc = ini_section(&st, line, sub, sizeof(sub)))) {
            snprintf(err, errlen, "%s: %s", path, sub);
            fclose(f);
            return rc;
        }
    }
    while (fgets(line, sizeof(line), f)) {
        char *s, *eq, *name, *val;

        lineno++;
        s = line + strcspn(line, "#;");
        *s = '\0';
        s = trim(line);
        if (!*s) continue;
        if (*s == '[' && s[strlen(s) - 1] == ']') {
            if (circuit) {
                rc = -EINVAL;
                snprintf(err, errlen, "%s:%u: a circuit's file holds no section (its name is the file's)",
                         path, lineno);
                break;
            }
            if ((rc = ini_section(&st, s, sub, sizeof(sub)))) {
                snprintf(err, errlen, "%s:%u: %s", path, lineno, sub);
                break;
            }
            continue;
        }
        eq = strchr(s, '=');
        if (eq) {
            *eq = '\0';
            name = trim(s);
            val = trim(eq + 1);
        } else {
            name = s;
            val = NULL;
        }
        if (st.cur) {
            if ((rc = circuit_decl_set(st.cur, name, val, sub, sizeof(sub)))) {
                snprintf(err, errlen, "%s:%u: %s", path, lineno, sub);
                break;
            }
            continue;
        }
        if (!strcmp(name, "config")) {
            rc = -EINVAL;
            snprintf(err, errlen, "%s:%u: config files do not nest", path, lineno);
            break;
        }
        if ((rc = config_set(c, name, val, sub, sizeof(sub)))) {
            snprintf(err, errlen, "%s:%u: %s", path, lineno, sub);
            break;
        }
        if (!strcmp(name, "queue") && (rc = queue_password_file(f, val, path, lineno, err, errlen))) break;
    }
    if (!rc && (rc = ini_section(&st, "[cuzkd]", sub, sizeof(sub))))
        snprintf(err, errlen, "%s: %s", path, sub);
    fclose(f);
    return rc;
}

int config_load_file(struct cuzkd_config *c, const char *path, char *err, size_t errlen)
{
    return load_ini(c, path, NULL, err, errlen);
}

int config_load_circuit_file(struct cuzkd_config *c, const char *path, const char *name, char *err,
                             size_t errlen)
{
    return load_ini(c, path, name, err, errlen);
}

int config_load_circuits(const char *path, const char *dir, struct circuit_decl *out, uint32_t *n, char *err,
                         size_t errlen)
{
    struct cuzkd_config *c = malloc(sizeof(*c));
    int rc = 0;

    if (!c) {
        snprintf(err, errlen, "out of memory");
        return -ENOMEM;
    }
    config_defaults(c);
    if (path[0]) rc = config_load_file(c, path, err, errlen);
    if (!rc && !c->circuits_dir[0] && dir) snprintf(c->circuits_dir, sizeof(c->circuits_dir), "%s", dir);
    if (!rc && c->circuits_dir[0]) rc = circuits_dir_read(c, err, errlen);
    if (!rc) {
        memcpy(out, c->circuits, c->n_circuits * sizeof(*out));
        *n = c->n_circuits;
    }
    free(c);
    return rc;
}

int config_parse_args(struct cuzkd_config *c, int argc, char **argv, char *err, size_t errlen)
{
    int rc;

    config_defaults(c);
    /* The file first, wherever --config appears, so the command line wins. */
    for (int i = 1; i < argc; i++) {
        const char *v = NULL;

        if (!strncmp(argv[i], "--config=", 9))
            v = argv[i] + 9;
        else if (!strcmp(argv[i], "--config")) {
            if (i + 1 >= argc) {
                snprintf(err, errlen, "--config needs a file");
                return -EINVAL;
            }
            v = argv[++i];
        }
        if (v && (rc = config_load_file(c, v, err, errlen))) return rc < 0 && rc != -EINVAL ? -EINVAL : rc;
        /* Absolute: cuzk reload reads it again after cuzkd changed directory.
         * realpath's own buffer: into a PROTO_PATH_MAX one (under PATH_MAX) a
         * fortified build aborts ("buffer overflow detected"), as the package is. */
        if (v) {
            char *abs = realpath(v, NULL);

            if (abs && strlen(abs) >= sizeof(c->config_path)) {
                snprintf(err, errlen, "--config %s: the path is too long (%zu bytes)", v, strlen(abs));
                free(abs);
                return -ENAMETOOLONG;
            }
            snprintf(c->config_path, sizeof(c->config_path), "%s", abs ? abs : v);
            free(abs);
        }
    }
    for (int i = 1; i < argc; i++) {
        char name[64];
        const char *a = argv[i], *v = NULL, *eq;

        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            config_usage(stdout);
            return 1;
        }
        if (!strcmp(a, "--version")) {
            printf("cuzkd %s\n", cuzk_version());
            return 1;
        }
        if (strncmp(a, "--", 2) || !a[2]) {
            snprintf(err, errlen, "unexpected argument '%s' (options start with --)", a);
            return -EINVAL;
        }
        a += 2;
        eq = strchr(a, '=');
        if (eq) {
            snprintf(name, sizeof(name), "%.*s", (int)(eq - a), a);
            v = eq + 1;
        } else {
            snprintf(name, sizeof(name), "%s", a);
            if (!is_flag(name) && i + 1 < argc) v = argv[++i];
        }
        if (!strcmp(name, "config")) continue; /* applied above */
        if ((rc = config_set(c, name, v, err, errlen))) return rc;
        /* Every local user reads /proc/PID/cmdline: a fleet password there is
         * everyone's (and with it they write queue rows). Scrubbed at once, and
         * refused: by then it has been visible. */
        if (!strcmp(name, "queue") && v && fleet_url_has_password(v)) {
            fleet_url_scrub((char *)v);
            snprintf(err, errlen,
                     "--queue: a password on the command line is visible to every "
                     "local user (/proc/PID/cmdline): give it in a PGPASSFILE "
                     "(mode 0600), in the config file (mode 0600) or use peer or "
                     "certificate authentication");
            return -EINVAL;
        }
    }
    /* The circuits of a circuits-dir join the config's [circuit NAME] sections. */
    return c->circuits_dir[0] ? circuits_dir_read(c, err, errlen) : 0;
}

/* Is --api-user a member of --group (its primary group, or listed in /etc/group)? */
static int api_user_in_group(const struct cuzkd_config *c)
{
    gid_t groups[256];
    int n = 256;

    if (!c->have_gid) return 0;
    if (c->api_gid == c->gid) return 1;
    if (getgrouplist(c->api_user, c->api_gid, groups, &n) < 0) return 0;
    for (int i = 0; i < n; i++)
        if (groups[i] == c->gid) return 1;
    return 0;
}

int config_validate(const struct cuzkd_config *c, char *err, size_t errlen)
{
#ifndef CUZK_HAVE_CUDA
    if (c->dev_kind == CONFIG_DEV_CUDA && !c->plan_only && !c->check) {
        snprintf(err, errlen,
                 "--devices %s: this cuzkd was built without the CUDA "
                 "backend (built with CUDA=0 or without nvcc); use --devices cpu:N",
                 c->devices);
        return -EINVAL;
    }
#endif
    if (c->store_proofs && !c->queue[0]) {
        snprintf(err, errlen, "--store-proofs stores a fleet's proofs: it needs --queue URL");
        return -EINVAL;
    }
    if ((c->topology[0] || c->synthetic[0]) && !c->plan_only && !c->check && !c->test_fake_topology) {
        snprintf(err, errlen,
                 "--%s plans another machine: add --plan to print its "
                 "placement (--test-fake-topology runs on it here, for tests only)",
                 c->topology[0] ? "topology" : "synthetic");
        return -EINVAL;
    }
    if (c->test_fake_topology && !c->topology[0] && !c->synthetic[0]) {
        snprintf(err, errlen,
                 "--test-fake-topology needs --topology FILE.xml or "
                 "--synthetic STRING");
        return -EINVAL;
    }
    for (const char *d = c->wgen_dir; *d; d += strcspn(d, ":"), d += *d == ':') {
        if (*d != '/' && *d != ':') {
            snprintf(err, errlen, "--wgen-dir %s: give absolute directories, separated by ':'", c->wgen_dir);
            return -EINVAL;
        }
    }
    if (c->api_listen[0] &&
        (c->api_tokens[0] != '/' || (c->tls_cert[0] && c->tls_cert[0] != '/') ||
         (c->tls_key[0] && c->tls_key[0] != '/') || !c->tls_cert[0] != !c->tls_key[0])) {
        snprintf(err, errlen,
                 "--listen needs --api-tokens FILE, and --tls-cert with --tls-key, as absolute paths");
        return -EINVAL;
    }
    if (c->api_listen[0] && c->have_api_uid && geteuid() == 0 && !api_user_in_group(c)) {
        /* Started as root, cuzkd runs cuzk-api as --api-user: the socket is root's,
         * 0660, its group --group's; without that group the API could not connect. */
        snprintf(err, errlen,
                 "--api-user %s with --listen under root: give --group, a group %s is in, so that "
                 "it reaches the control socket",
                 c->api_user, c->api_user);
        return -EINVAL;
    }
    if (c->run_dir[0] != '/') {
        snprintf(err, errlen, "--run-dir %s: give an absolute path", c->run_dir);
        return -EINVAL;
    }
    if (!c->no_store && c->state_dir[0] != '/') {
        snprintf(err, errlen, "--state-dir %s: give an absolute path", c->state_dir);
        return -EINVAL;
    }
    return 0;
}
