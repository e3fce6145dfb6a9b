/* prove_local.c — `cuzk prove-local ZKEY WTNS PROOF.json PUBLIC.json`. */
#include "tools/prove_local.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "base/error.h"
#include "shm/futex.h"
#include "zk/groth16.h"
#include "zk/ntt.h"
#include "zk/r1cs.h"
#include "zk/verify.h"
#include "synth/wgen.h"
#include "zk/wtns.h"
#include "zk/zkey.h"
#include "base/os.h"

static const char usage_text[] =
    "usage: cuzk prove-local [options] ZKEY WTNS PROOF.json PUBLIC.json\n"
    "       cuzk prove-local [options] --witness-gen G.wgen ZKEY INPUT.json PROOF.json PUBLIC.json\n"
    "  Proves one witness with all stages in this process (no daemon).\n"
    "  --witness-gen G    compute the witness from INPUT.json with G (a generator from\n"
    "                     cuzk build-witness) instead of reading a .wtns\n"
    "  --threads N        worker threads (default: all online CPUs)\n"
    "  --timings          print each step's wall and CPU (all threads) time on stderr\n"
    "                     (up to 2^15 on 2+ threads the NTTs and the A, B, C MSMs run at\n"
    "                     once, one thread each: their walls overlap, CPU is their own)\n"
    "  --r1cs FILE        check every constraint of FILE against the witness first\n"
    "                     (the zkey alone cannot tell an unsatisfying witness)\n"
    "  --no-verify        do not verify the proof before writing it (by default a proof\n"
    "                     that fails the pairing check is not written: exit 8)\n"
    "  --sync             make the outputs durable before exiting (fdatasync of both\n"
    "                     files, one fsync of their directory). By default, as\n"
    "                     rapidsnark, they are published by temp file + rename (never\n"
    "                     seen half written) with no sync: a machine crash soon after\n"
    "                     may lose them\n"
    "  --insecure-seed N  TESTS ONLY: derive the blinding r, s from N. A proof with\n"
    "                     known r, s reveals the witness; never use it for real proofs.\n"
    "  --insecure-rs R,S  TESTS ONLY: use these decimal r, s (same warning)\n";

static const struct cuzk_cmd cmd = { "cuzk prove-local", usage_text, cuzk_exit_codes_prove };

/* Before any work: is the output path a place we can publish a file to? Creates and
 * removes a probe file next to it, so a bad path fails in milliseconds with code 9
 * rather than after the proof, and no partial file is ever left. */
static int output_probe(const char *path, char *err, size_t errlen)
{
    struct stat st;
    if (stat(path, &st) == 0 && S_ISDIR(st.st_mode)) {
        snprintf(err, errlen, "cannot write %s: it is a directory", path);
        return -CUZK_E_OUTPUT;
    }
    char probe[4096];
    snprintf(probe, sizeof probe, "%s.probe.%ld", path, (long)getpid());
    int fd = open(probe, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd < 0) {
        snprintf(err, errlen, "cannot write %s: %s", path, strerror(errno));
        return -CUZK_E_OUTPUT;
    }
    close(fd);
    unlink(probe);
    return 0;
}

/* Verifies the proof against the zkey's own key and the witness's public signals, so
 * no proof that fails the pairing check is ever written. Without --r1cs this is the
 * only check that the witness satisfies the circuit (the zkey holds no C matrix).
 * Returns 0, -CUZK_E_UNSATISFIED with the reason, or the key's error. */
static int self_verify(const zkey *z, const uint8_t *values, const groth16_proof *proof, char *err,
                       size_t errlen)
{
    int rc = groth16_self_check(z, values, proof, err, errlen);
    if (rc == -CUZK_E_UNSATISFIED) {
        size_t n = strlen(err);
        snprintf(err + n, errlen - n, "; nothing written (--r1cs FILE names the first failing constraint)");
    }
    return rc;
}

static int parse_rs(const zkey *z, const char *arg, groth16_blind *bl)
{
    char buf[256];
    snprintf(buf, sizeof buf, "%s", arg);
    char *comma = strchr(buf, ',');
    if (!comma) return -1;
    *comma = '\0';
    if (fe_canon_from_dec(z->Fr, bl->r, buf) != 0) return -1;
    if (fe_canon_from_dec(z->Fr, bl->s, comma + 1) != 0) return -1;
    return 0;
}

int prove_local_main(int argc, char **argv)
{
    static const struct option opts[] = {
        CUZK_OPT_THREADS,
        { "timings", no_argument, NULL, 'T' },
        { "r1cs", required_argument, NULL, 'r' },
        { "insecure-seed", required_argument, NULL, 'S' },
        { "insecure-rs", required_argument, NULL, 'R' },
        CUZK_OPT_HELP,
        { "no-verify", no_argument, NULL, 'V' },
        { "witness-gen", required_argument, NULL, 'g' },
        { "sync", no_argument, NULL, 'Y' },
        { NULL, 0, NULL, 0 },
    };
    unsigned threads = 0;
    bool timings = false, have_seed = false, verify = true, sync = false;
    const char *r1cs_path = NULL, *rs_arg = NULL, *gen_path = NULL;
    unsigned long long seed = 0;
    int c;

    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, "+h", opts, NULL)) != -1) {
        int code;

        switch (c) {
        case 't':
            if ((code = cuzk_cmd_threads(&cmd, optarg, &threads))) return code;
            break;
        case 'T': timings = true; break;
        case 'V': verify = false; break;
        case 'Y': sync = true; break;
        case 'r': r1cs_path = optarg; break;
        case 'g': gen_path = optarg; break;
        case 'S':
            if ((code = cuzk_cmd_number(&cmd, "--insecure-seed", optarg, ULLONG_MAX, &seed))) return code;
            have_seed = true;
            break;
        case 'R': rs_arg = optarg; break;
        default: return cuzk_cmd_other_option(&cmd, c);
        }
    }
    if (argc - optind != 4) {
        cuzk_cmd_usage(&cmd, stderr);
        return cuzk_cmd_fail(&cmd, CUZK_E_USAGE, "%s",
                             gen_path ? "expected 4 arguments: ZKEY INPUT.json PROOF.json PUBLIC.json"
                                      : "expected 4 arguments: ZKEY WTNS PROOF.json PUBLIC.json");
    }
    const char *zkey_path = argv[optind], *wtns_path = argv[optind + 1];
    const char *proof_path = argv[optind + 2], *public_path = argv[optind + 3];

    char err[1024] = "";
    zkey z;
    wtns w;
    r1cs r;
    wgen g;
    uint8_t *values = NULL;
    memset(&z, 0, sizeof z);
    memset(&w, 0, sizeof w);
    memset(&g, 0, sizeof g);
    memset(&r, 0, sizeof r);
    int rc, code = 0;
    groth16_timings t = { 0 };
    double t0 = os_now_s(), c0 = os_cpu_s(); /* c0: the CPU of process start */

    if ((rc = zkey_open(&z, zkey_path, err, sizeof err)) != 0) {
        code = cuzk_cmd_fail(&cmd, rc, "%s", err);
        goto out;
    }
    if (gen_path) {
        /* the generator is checked against the zkey before any input is read */
        if ((rc = wgen_open(&g, gen_path, err, sizeof err)) != 0) {
            code = cuzk_cmd_fail(&cmd, rc, "%s", err);
            goto out;
        }
        if ((rc = wgen_check_zkey(&g, &z, err, sizeof err)) != 0) {
            code = cuzk_cmd_fail(&cmd, rc, "%s", err);
            goto out;
        }
        if (!wgen_has_fingerprint(&g))
            fprintf(stderr,
                    "cuzk prove-local: warning: witness generator %s was built without --r1cs: only its "
                    "curve and witness size are checked against zkey %s\n",
                    gen_path, zkey_path);
        if (!(values = malloc(wgen_witness_bytes(&g)))) {
            code = cuzk_cmd_fail(&cmd, CUZK_E_INTERNAL, "out of memory");
            goto out;
        }
        if ((rc = wgen_compute_file(&g, wtns_path, values, err, sizeof err)) != 0) {
            code = cuzk_cmd_fail(&cmd, rc, "%s", err);
            goto out;
        }
        if ((rc = wtns_of_values(&w, wtns_path, g.Fr, g.d->nwitness, values)) != 0) {
            code = cuzk_cmd_fail(&cmd, rc, "out of memory");
            goto out;
        }
    } else if ((rc = wtns_open(&w, wtns_path, err, sizeof err)) != 0) {
        code = cuzk_cmd_fail(&cmd, rc, "%s", err);
        goto out;
    }
    if ((rc = wtns_check_zkey(&w, &z, err, sizeof err)) != 0) {
        code = cuzk_cmd_fail(&cmd, rc, "%s", err);
        goto out;
    }
    if (r1cs_path) {
        uint32_t bad = 0;
        if ((rc = r1cs_open(&r, r1cs_path, err, sizeof err)) != 0) {
            code = cuzk_cmd_fail(&cmd, rc, "%s", err);
            goto out;
        }
        if ((rc = r1cs_check_wtns(&r, &w, &bad, err, sizeof err)) != 0) {
            if (rc == -CUZK_E_UNSATISFIED) /* name both files: the witness is what is wrong */
                snprintf(err, sizeof err,
                         "%s does not satisfy constraint %u of %s (0-based, as snarkjs wtns check counts)",
                         wtns_path, bad, r1cs_path);
            code = cuzk_cmd_fail(&cmd, rc, "%s", err);
            goto out;
        }
    }
    double t_read = os_now_s() - t0, c_read = os_cpu_s() - c0; /* with --witness-gen: and the witness */

    groth16_blind bl;
    if (rs_arg) {
        if (parse_rs(&z, rs_arg, &bl) != 0) {
            code = cuzk_cmd_fail(&cmd, CUZK_E_USAGE, "--insecure-rs needs R,S: two decimals < r");
            goto out;
        }
    } else if (have_seed) {
        groth16_blind_from_seed(&z, seed, &bl);
    } else if ((rc = groth16_blind_random(&z, &bl)) != 0) {
        snprintf(err, sizeof err, "getrandom failed: %s", strerror(-rc));
        code = cuzk_cmd_fail(&cmd, CUZK_E_INTERNAL, "%s", err);
        goto out;
    }
    if ((rc = output_probe(proof_path, err, sizeof err)) != 0 ||
        (rc = output_probe(public_path, err, sizeof err)) != 0) {
        code = cuzk_cmd_fail(&cmd, rc, "%s", err);
        goto out;
    }

    /* One proof per process: a cached NTT domain (3 vectors of the domain's size, 24 MiB
     * at 2^18) would only be held through the MSMs, where the memory peak is, until exit.
     * The daemon's worker keeps its cache (--precompute-mb). */
    ntt_cache_set_budget(0);
    /* The CPU count once: left at 0, each NTT and MSM call would read it again
     * (sysconf opens /sys/devices/system/cpu/online: 10 opens a proof). */
    if (threads == 0) {
        long cpus = sysconf(_SC_NPROCESSORS_ONLN);
        threads = cpus > 0 ? (unsigned)cpus : 1;
    }
    groth16_proof proof;
    if ((rc = groth16_prove(&z, &w, &bl, &proof, threads, &t, err, sizeof err)) != 0) {
        code = cuzk_cmd_fail(&cmd, rc, "%s", err);
        goto out;
    }
    double t1 = os_now_s(), c1 = os_cpu_s();
    if (verify && (rc = self_verify(&z, w.values, &proof, err, sizeof err)) != 0) {
        code = cuzk_cmd_fail(&cmd, rc, "%s", err);
        goto out;
    }
    double t_verify = os_now_s() - t1, c_verify = os_cpu_s() - c1;
    t1 = os_now_s();
    c1 = os_cpu_s();
    if ((rc = groth16_write_pair(&z, &proof, w.values, proof_path, public_path, sync, err, sizeof err)) !=
        0) {
        code = cuzk_cmd_fail(&cmd, rc, "%s", err);
        goto out;
    }
    double t_write = os_now_s() - t1, c_write = os_cpu_s() - c1;
    if (timings) {
        /* wall and process CPU (all threads) per step: on a loaded machine the wall
         * stretches with the waits for a core, the CPU does not */
        const struct {
            const char *name;
            double wall, cpu;
        } rows[] = {
            { gen_path ? "read+witness" : "read+check", t_read, c_read },
            { "matvec", t.matvec, t.cpu.matvec },
            { "ntt", t.ntt, t.cpu.ntt },
            { "msm A", t.msm_a, t.cpu.msm_a },
            { "msm B1", t.msm_b1, t.cpu.msm_b1 },
            { "msm B2 (G2)", t.msm_b2, t.cpu.msm_b2 },
            { "msm C", t.msm_c, t.cpu.msm_c },
            { "msm H", t.msm_h, t.cpu.msm_h },
            { "blind", t.finalize, t.cpu.finalize },
            { "verify", t_verify, c_verify },
            { "write", t_write, c_write },
            { "total", os_now_s() - t0, os_cpu_s() - c0 },
        };
        fprintf(stderr, "timings (%s, %u signals, domain 2^%u; wall s, CPU s):\n  start (CPU) %8s %8.4f\n",
                groth16_curve_name(&z), z.nvars, z.lg_domain, "", c0);
        for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++)
            fprintf(stderr, "  %-12s%8.4f %8.4f\n", rows[i].name, rows[i].wall, rows[i].cpu);
    }
out:
    r1cs_close(&r);
    wtns_close(&w);
    free(values);
    wgen_close(&g);
    zkey_close(&z);
    return code;
}
