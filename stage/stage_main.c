/* stage_main.c — a stage's whole main() (stage.h, stage_main): the options every
 * stage takes, dying with cuzkd, SIGTERM as the stop flag, the exit code. */
#include "stage/stage.h"
#include "base/error.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "base/error.h"
#include "base/barrier.h"

static _Atomic int main_stop;

static void on_term(int sig)
{
    (void)sig;
    /* Lock-free atomic store: async-signal-safe. */
    barrier_store_relaxed(&main_stop, 1);
}

static int parse_u32(const char *s, uint32_t *out)
{
    char *end;
    unsigned long v;

    errno = 0;
    v = strtoul(s, &end, 10);
    if (!*s || *end || errno || v > UINT32_MAX) return -1;
    *out = (uint32_t)v;
    return 0;
}

int stage_main(int argc, char **argv, const char *prog, const char *what, unsigned extra, stage_fn run)
{
    static const struct option opts[] = {
        { "instance", required_argument, NULL, 'i' },
        { "index", required_argument, NULL, 'x' },
        { "generation", required_argument, NULL, 'g' },
        CUZK_OPT_THREADS,
        { "backend", required_argument, NULL, 'b' },
        { "precompute-mb", required_argument, NULL, 'P' },
        { "fixed-base-mb", required_argument, NULL, 'F' },
        { "trim-every", required_argument, NULL, 'T' },
        { "test-trim-delay-ms", required_argument, NULL, 'D' },
        { "doorbell-fd", required_argument, NULL, 'd' },
        { "verbose", no_argument, NULL, 'v' },
        CUZK_OPT_HELP,
        { NULL, 0, NULL, 0 },
    };
    struct stage_opts o = { .backend = "cpu",
                            .trim_every = 16,
                            .precompute_mb = STAGE_PRECOMPUTE_MB_DEFAULT,
                            .fixed_base_mb = STAGE_FIXED_BASE_MB_DEFAULT,
                            .stop = &main_stop,
                            .doorbell_fd = -1,
                            .self_exe = "/proc/self/exe" };
    struct sigaction sa;
    char usage[4096], err[1024] = "";
    uint32_t v;
    int c, rc;

    snprintf(usage, sizeof(usage),
             "usage: %s --instance NAME [--index I] [options]\n"
             "  %s\n"
             "  Started by cuzkd; attaches the instance's shared segments.\n"
             "  --instance NAME   the cuzkd instance (segments cuzk-NAME.data/.stats)\n"
             "  --index I         which %s this is (default 0)\n"
             "  --generation G    restart count, from cuzkd (informative: the stats slot\n"
             "                    counts its own restarts)\n"
             "  --threads N       worker threads (default: all online CPUs)\n"
             "  --doorbell-fd N   an eventfd inherited from cuzkd, written when this stage\n"
             "                    decides a job, so waiters hear of it at once\n"
             "%s%s"
             "  --verbose         one line per partition on stderr\n",
             prog, what, prog,
             extra & STAGE_OPT_BACKEND
                 ? "  --backend NAME    proving backend: cpu (default), or cuda[:DEVICE]\n"
                   "                    (CUDA builds; DEVICE defaults to the index)\n"
                   "  --precompute-mb N per-circuit tables kept between partitions\n"
                   "                    (NTT domains; default 512, 0 keeps none)\n"
                   "  --fixed-base-mb N CPU backend: MSM tables of the circuits proved\n"
                   "                    most (default 1024, 0 builds none)\n"
                 : "",
             extra & STAGE_OPT_TRIM ? "  --trim-every N    malloc_trim after every N partitions "
                                      "(default 16; also after 1 s idle)\n"
                                      "  --test-trim-delay-ms N   tests only: trim after every "
                                      "partition, N ms more\n"
                                    : "");
    /* the exit codes from error.c's table, after the options */
    size_t un = strlen(usage);
    FILE *uf = fmemopen(usage + un, sizeof(usage) - un, "w");
    if (uf) {
        cuzk_exit_help(uf, CUZK_PROG_STAGE, NULL);
        fclose(uf);
    }
    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, "+h", opts, NULL)) != -1) {
        switch (c) {
        case 'i': o.instance = optarg; break;
        case 'x':
            if (parse_u32(optarg, &o.index)) goto bad_num;
            break;
        case 'g':
            if (parse_u32(optarg, &o.generation)) goto bad_num;
            break;
        case 't':
            if (parse_u32(optarg, &v)) goto bad_num;
            o.threads = v;
            break;
        case 'b':
            if (!(extra & STAGE_OPT_BACKEND)) goto bad;
            o.backend = optarg;
            break;
        case 'P':
            if (!(extra & STAGE_OPT_BACKEND) || parse_u32(optarg, &o.precompute_mb)) goto bad;
            break;
        case 'F':
            if (!(extra & STAGE_OPT_BACKEND) || parse_u32(optarg, &o.fixed_base_mb)) goto bad;
            break;
        case 'T':
            if (!(extra & STAGE_OPT_TRIM) || parse_u32(optarg, &o.trim_every)) goto bad;
            break;
        case 'D':
            if (!(extra & STAGE_OPT_TRIM) || parse_u32(optarg, &o.test_trim_delay_ms)) goto bad;
            break;
        case 'd':
            /* Only an open descriptor is taken: a wrong number must not make the
             * stage write 8 bytes into whatever file has it. */
            if (parse_u32(optarg, &v) || !v || v > INT_MAX || fcntl((int)v, F_GETFD) < 0) goto bad;
            o.doorbell_fd = (int)v;
            break;
        case 'v': o.verbose = 1; break;
        case 'h': fputs(usage, stdout); return CUZK_EXIT_OK;
        default: goto bad;
        }
    }
    if (optind != argc || !o.instance) {
        fprintf(stderr, "%s: %s\n%s", prog, optind != argc ? "unexpected argument" : "--instance is required",
                usage);
        return CUZK_EXIT_USAGE;
    }
    if (!o.threads) {
        long n = sysconf(_SC_NPROCESSORS_ONLN);

        o.threads = n > 0 ? (unsigned)n : 1;
    }
    /* Die with cuzkd even if it is SIGKILLed (it sets this too; harmless twice). */
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = on_term;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);
    rc = run(&o, err, sizeof(err));
    if (rc)
        fprintf(stderr, "%s[%d] %s %u: %s\n", prog, (int)getpid(), o.instance, o.index,
                err[0] ? err : cuzk_strerror(rc));
    /* 0 -> 0, -CUZK_E_INTERNAL -> 100 (bug), anything else -> 111 (system) */
    return cuzk_exit_code(rc, CUZK_PROG_STAGE);

bad_num:
    fprintf(stderr, "%s: --%s needs a non-negative number\n%s", prog,
            c == 'x'       ? "index"
                : c == 'g' ? "generation"
                           : "threads",
            usage);
    return CUZK_EXIT_USAGE;
bad:
    fprintf(stderr, "%s: unknown, incomplete or invalid option\n%s", prog, usage);
    return CUZK_EXIT_USAGE;
}
