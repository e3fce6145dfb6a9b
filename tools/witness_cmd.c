/* witness_cmd.c — `cuzk witness` (witness_cmd.h). */
#include "tools/witness_cmd.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "synth/wgen.h"
#include "zk/wtns.h"

static const char usage_text[] = "usage: cuzk witness --witness-gen G.wgen INPUT.json OUT.wtns\n"
                                 "  Computes the circuit's witness for INPUT.json with a generator built by\n"
                                 "  cuzk build-witness and writes it as snarkjs `wtns calculate` does.\n";

static const struct cuzk_cmd cmd = { "cuzk witness", usage_text,
                                     (const int[]){ 0, 2, 3, 4, 6, 7, 8, 9, 10, -1 } };

int witness_cmd_main(int argc, char **argv)
{
    static const struct option opts[] = {
        { "witness-gen", required_argument, NULL, 'g' },
        CUZK_OPT_HELP,
        { NULL, 0, NULL, 0 },
    };
    const char *gen = NULL;
    int c;

    optind = 1;
    while ((c = getopt_long(argc, argv, "+h", opts, NULL)) != -1) {
        switch (c) {
        case 'g': gen = optarg; break;
        case 'h': cuzk_cmd_usage(&cmd, stdout); return 0;
        default: cuzk_cmd_usage(&cmd, stderr); return CUZK_EXIT_USAGE;
        }
    }
    if (!gen || argc - optind != 2) {
        cuzk_cmd_usage(&cmd, stderr);
        return CUZK_EXIT_USAGE;
    }
    wgen g;
    char err[2048];
    int rc = wgen_open(&g, gen, err, sizeof err);
    if (rc) return cuzk_cmd_fail(&cmd, rc, "%s", err);
    uint8_t *w = malloc(wgen_witness_bytes(&g) ? wgen_witness_bytes(&g) : 1);
    if (!w) {
        rc = -CUZK_E_INTERNAL;
        snprintf(err, sizeof err, "out of memory");
    } else if (!(rc = wgen_compute_file(&g, argv[optind], w, err, sizeof err))) {
        rc = wtns_write(argv[optind + 1], g.Fr, g.d->nwitness, w, err, sizeof err);
    }
    if (rc) rc = cuzk_cmd_fail(&cmd, rc, "%s", err);
    free(w);
    wgen_close(&g);
    return rc;
}
