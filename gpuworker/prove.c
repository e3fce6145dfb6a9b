/* prove.c — `cuzk-gpuworker prove`: one witness through a backend, outside the daemon
 * (gpuworker/worker.h). For bench/gpu-check.sh and the tests: the CUDA backend's
 * proof of a fixed --insecure-seed is compared byte for byte with the CPU backend's,
 * which needs no snarkjs on a GPU machine; each proof is also checked here with the
 * pairing (zk/verify.c) before it is written. The backend is driven exactly as the
 * worker drives it (backend.h: the buffer in the pipeline's layout, registered as the
 * slab, released by the backend, submit/collect for asynchronous backends). */
#include "gpuworker/worker.h"

#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "gpuworker/backend.h"
#include "base/error.h"
#include "shm/futex.h"
#include "zk/groth16.h"
#include "zk/verify.h"
#include "zk/wtns.h"
#include "zk/zkey.h"
#include "base/os.h"

static const char usage_text[] =
    "usage: cuzk-gpuworker prove [options] ZKEY WTNS PROOF.json PUBLIC.json\n"
    "  One witness through a proving backend, without the daemon (tests, benchmarks).\n"
    "  --backend NAME     cpu (default), cpu-async, cpu-inflight, cuda[:DEVICE] (CUDA builds)\n"
    "  --threads N        CPU threads (default: all online CPUs)\n"
    "  --repeat N         prove N times (synthesis redone each time), report the best\n"
    "  --insecure-seed N  TESTS ONLY: blinding r, s from N (the proof reveals the witness)\n"
    "Prints one line of times on stdout; the proof is verified (pairing) before it is\n"
    "written (it fails: exit 8). The exit codes are cuzk prove-local's.\n";

/* Exits as prove-local (an errno such as ENODEV, no device: an internal error). */
static const struct cuzk_cmd cmd = { "cuzk-gpuworker prove", usage_text, cuzk_exit_codes_prove };

static void count_release(void *arg)
{
    (*(int *)arg)++;
}

/* The five MSMs of one synthesized buffer through be (sync or async). */
static int run_backend(struct backend *be, struct backend_input *in, groth16_raw *raw, groth16_timings *t,
                       double *device_s, char *err, size_t errlen)
{
    struct backend_done d;
    int rc;

    if (!be->ops->depth) {
        rc = be->ops->prove(be, in, raw, t, err, errlen);
        *device_s = t->ntt + t->msm_a + t->msm_b1 + t->msm_b2 + t->msm_c + t->msm_h;
        return rc;
    }
    rc = be->ops->submit(be, in, in, err, errlen);
    if (rc) return rc;
    memset(&d, 0, sizeof(d));
    while (be->ops->collect(be, 1000000000ull, &d) == 0)
        ;
    if (d.tag != in) {
        snprintf(err, errlen, "backend returned another partition: internal error");
        return -CUZK_E_INTERNAL;
    }
    if (d.rc) {
        snprintf(err, errlen, "%s%s", d.fatal ? "device fault: " : "", d.err);
        return d.rc;
    }
    *raw = d.raw;
    *t = d.t;
    *device_s = d.device_s;
    return 0;
}

int worker_prove_main(int argc, char **argv)
{
    static const struct option opts[] = {
        { "backend", required_argument, NULL, 'b' }, { "threads", required_argument, NULL, 't' },
        { "repeat", required_argument, NULL, 'n' },  { "insecure-seed", required_argument, NULL, 'S' },
        { "help", no_argument, NULL, 'h' },          { NULL, 0, NULL, 0 },
    };
    const char *name = "cpu", *colon;
    unsigned threads = 0, repeat = 1;
    unsigned long long seed = 0;
    bool have_seed = false;
    zkey z;
    wtns w;
    struct backend be;
    struct backend_params bp = { 0 };
    struct backend_input in;
    struct stat sb;
    groth16_raw raw;
    groth16_timings t, best_t;
    groth16_blind bl;
    groth16_proof proof;
    groth16_vk vk;
    uint8_t *buf = NULL;
    size_t bytes;
    double best = 1e30, best_dev = 0, t_init, t0;
    char err[1024] = "";
    bool be_up = false;
    int c, rc, code = 0, released = 0;

    memset(&z, 0, sizeof(z));
    memset(&w, 0, sizeof(w));
    memset(&be, 0, sizeof(be));
    memset(&vk, 0, sizeof(vk));
    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, "+h", opts, NULL)) != -1) {
        unsigned long long v;

        switch (c) {
        case 'b': name = optarg; break;
        case 't':
            if ((code = cuzk_cmd_number(&cmd, "--threads", optarg, UINT_MAX, &v))) return code;
            threads = (unsigned)v;
            break;
        case 'n':
            if ((code = cuzk_cmd_number(&cmd, "--repeat", optarg, UINT_MAX, &v))) return code;
            repeat = (unsigned)v;
            break;
        case 'S':
            if ((code = cuzk_cmd_number(&cmd, "--insecure-seed", optarg, ULLONG_MAX, &seed))) return code;
            have_seed = true;
            break;
        case 'h': cuzk_cmd_usage(&cmd, stdout); return 0;
        default: cuzk_cmd_usage(&cmd, stderr); return CUZK_EXIT_USAGE;
        }
    }
    if (argc - optind != 4 || !repeat) {
        cuzk_cmd_usage(&cmd, stderr);
        return CUZK_EXIT_USAGE;
    }
    if (!threads) {
        long n = sysconf(_SC_NPROCESSORS_ONLN);

        threads = n > 0 ? (unsigned)n : 1;
    }
    be.ops = backend_find(name);
    if (!be.ops) {
        snprintf(err, sizeof(err), "--backend %s: not in this build (it has: %s)", name, backend_list());
        return cuzk_cmd_fail(&cmd, CUZK_E_USAGE, "%s", err);
    }
    colon = strchr(name, ':');
    bp.device = colon ? atoi(colon + 1) : 0;
    bp.threads = threads;
    if ((rc = zkey_open(&z, argv[optind], err, sizeof(err))) ||
        (rc = wtns_open(&w, argv[optind + 1], err, sizeof(err))) ||
        (rc = wtns_check_zkey(&w, &z, err, sizeof(err)))) {
        code = cuzk_cmd_fail(&cmd, rc, "%s", err);
        goto out;
    }
    if (stat(argv[optind], &sb)) {
        code = cuzk_cmd_fail(&cmd, CUZK_E_IO, "zkey vanished");
        goto out;
    }
    /* The pipeline's buffer layout (pipeline.h), page-aligned like a pool buffer. */
    bytes = pipeline_buf_bytes(z.domain_size, z.nvars, z.n8r);
    bytes = (bytes + 4095) & ~(size_t)4095;
    buf = aligned_alloc(4096, bytes);
    if (!buf) {
        code = cuzk_cmd_fail(&cmd, CUZK_E_INTERNAL, "out of memory for the buffer");
        goto out;
    }
    memset(buf, 0, bytes);
    bp.slab = buf;
    bp.slab_size = bytes;
    t0 = os_now_s();
    if ((rc = be.ops->init(&be, &bp, err, sizeof(err)))) {
        code = cuzk_cmd_fail(&cmd, rc, "%s", err);
        goto out;
    }
    be_up = true;
    t_init = os_now_s() - t0;
    memset(&in, 0, sizeof(in));
    in.z = &z;
    in.a = (uint64_t *)buf;
    in.b = in.a + (size_t)z.domain_size * (z.n8r / 8);
    in.c = in.a + 2 * (size_t)z.domain_size * (z.n8r / 8);
    in.values = buf + 3 * (size_t)z.domain_size * z.n8r;
    in.release = count_release;
    in.release_arg = &released;
    backend_key_of(&in.key, sb.st_dev, sb.st_ino, sb.st_size, &sb.st_mtim);
    for (unsigned r = 0; r < repeat; r++) {
        double dev = 0, el;

        memset(&t, 0, sizeof(t));
        groth16_synth(&z, w.values, in.a, in.b, in.c, threads, &t);
        memcpy(buf + 3 * (size_t)z.domain_size * z.n8r, w.values, (size_t)z.nvars * z.n8r);
        released = 0;
        t0 = os_now_s();
        rc = run_backend(&be, &in, &raw, &t, &dev, err, sizeof(err));
        el = os_now_s() - t0;
        if (rc) {
            code = cuzk_cmd_fail(&cmd, rc, "%s", err);
            goto out;
        }
        if (released != 1) {
            snprintf(err, sizeof(err), "the backend released the buffer %d times (1 expected)", released);
            code = cuzk_cmd_fail(&cmd, CUZK_E_INTERNAL, "%s", err);
            goto out;
        }
        if (el < best) {
            best = el;
            best_t = t;
            best_dev = dev;
        }
    }
    if (have_seed)
        groth16_blind_from_seed(&z, seed, &bl);
    else if ((rc = groth16_blind_random(&z, &bl))) {
        code = cuzk_cmd_fail(&cmd, CUZK_E_INTERNAL, "getrandom failed");
        goto out;
    }
    groth16_finalize(&z, &raw, &bl, &proof);
    /* The pairing check, independent of either backend. */
    if ((rc = groth16_vk_from_zkey(&vk, &z, err, sizeof(err)))) {
        code = cuzk_cmd_fail(&cmd, rc, "%s", err);
        goto out;
    }
    if ((rc = groth16_verify_witness(&vk, &z, w.values, &proof, err, sizeof(err)))) {
        char e2[1100];

        snprintf(e2, sizeof(e2), "the %s backend's proof: %s", be.ops->name, err);
        code = cuzk_cmd_fail(&cmd, rc, "%s", e2);
        goto out;
    }
    if ((rc = groth16_write_proof(&z, &proof, argv[optind + 2], err, sizeof(err))) ||
        (rc = groth16_write_public(&z, w.values, argv[optind + 3], err, sizeof(err)))) {
        code = cuzk_cmd_fail(&cmd, rc, "%s", err);
        goto out;
    }
    printf("backend %s: %s domain 2^%u, %u signals: prove %.3f ms (best of %u; ntt %.3f, "
           "msm a %.3f b1 %.3f b2 %.3f c %.3f h %.3f ms; device %.3f ms), backend init "
           "%.3f s, proof verified\n",
           name, groth16_curve_name(&z), z.lg_domain, z.nvars, best * 1e3, repeat, best_t.ntt * 1e3,
           best_t.msm_a * 1e3, best_t.msm_b1 * 1e3, best_t.msm_b2 * 1e3, best_t.msm_c * 1e3,
           best_t.msm_h * 1e3, best_dev * 1e3, t_init);
out:
    if (be_up) be.ops->fini(&be);
    groth16_vk_free(&vk);
    free(buf);
    wtns_close(&w);
    zkey_close(&z);
    return code;
}
