/* fingerprint_cmd.c — `cuzk fingerprint` (fingerprint_cmd.h). */
#include "tools/fingerprint_cmd.h"

#include <stdio.h>
#include <string.h>
#include <time.h>

#include "base/error.h"
#include "zk/fingerprint.h"
#include "shm/futex.h"
#include "zk/r1cs.h"
#include "synth/wgen.h"
#include "zk/zkey.h"
#include "base/os.h"

static const char usage_text[] =
    "usage: cuzk fingerprint [--time] FILE...\n"
    "  Prints the circuit fingerprint of each FILE, a .zkey, an .r1cs or a witness\n"
    "  generator built with cuzk build-witness --r1cs, as \"HEX  FILE\": the zkey of a\n"
    "  circuit and the generator built from its r1cs print the same. A generator built\n"
    "  without --r1cs prints \"-\". --time adds the milliseconds it took.\n"
    "  (Loading a generator runs its code in this process.)\n";

static const struct cuzk_cmd cmd = { "cuzk fingerprint", usage_text,
                                     (const int[]){ 0, 2, 3, 4, 5, 6, 10, -1 } };

/* One file: its kind from its first 4 bytes. */
static int one(const char *path, int timed)
{
    char err[2048], hex[FP_HEX] = "-", magic[4] = { 0 };
    uint8_t fp[FP_BYTES];
    FILE *f = fopen(path, "rb");
    int rc = 0;

    if (!f) return cuzk_cmd_fail(&cmd, CUZK_E_IO, "cannot open %s", path);
    size_t got = fread(magic, 1, 4, f);
    fclose(f);
    double t0 = os_now_s();
    if (got == 4 && !memcmp(magic, "zkey", 4)) {
        zkey z;
        if (!(rc = zkey_open(&z, path, err, sizeof err))) {
            t0 = os_now_s(); /* the hash only, not zkey_open's validation pass */
            if (!(rc = fp_of_zkey(&z, fp, err, sizeof err))) fp_hex(fp, hex);
            zkey_close(&z);
        }
    } else if (got == 4 && !memcmp(magic, "r1cs", 4)) {
        r1cs r;
        if (!(rc = r1cs_open(&r, path, err, sizeof err))) {
            t0 = os_now_s();
            if (!(rc = fp_of_r1cs(&r, fp, err, sizeof err))) fp_hex(fp, hex);
            r1cs_close(&r);
        }
    } else {
        wgen g;
        if (!(rc = wgen_open(&g, path, err, sizeof err))) {
            if (g.fp) fp_hex(g.fp, hex);
            wgen_close(&g);
        }
    }
    if (rc) return cuzk_cmd_fail(&cmd, rc, "%s", err);
    if (timed)
        printf("%s  %s  %.1f ms\n", hex, path, (os_now_s() - t0) * 1e3);
    else
        printf("%s  %s\n", hex, path);
    return 0;
}

int fingerprint_cmd_main(int argc, char **argv)
{
    int timed = 0, i = 1, code = 0;
    if (argc > 1 && !strcmp(argv[1], "--help")) {
        cuzk_cmd_usage(&cmd, stdout);
        return 0;
    }
    if (argc > 1 && !strcmp(argv[1], "--time")) timed = 1, i++;
    if (i >= argc) {
        cuzk_cmd_usage(&cmd, stderr);
        return CUZK_EXIT_USAGE;
    }
    for (; i < argc; i++) {
        int rc = one(argv[i], timed);
        if (rc && !code) code = rc;
    }
    return code;
}
