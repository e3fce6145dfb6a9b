/* verify_cmd.c — `cuzk verify VKEY.json PUBLIC.json PROOF.json` (verify.h does the work). */
#include "tools/verify_cmd.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "zk/verify.h"

static const char usage_text[] =
    "usage: cuzk verify VKEY.json PUBLIC.json PROOF.json\n"
    "  Verifies a Groth16 proof against snarkjs's verification_key.json and public.json\n"
    "  (the argument order of `snarkjs groth16 verify`); bn128 and bls12381.\n"
    "  Checks every number (< q, public signals < r), every length, that the key's and\n"
    "  the proof's points lie on their curves and that G2 points lie in the subgroup.\n";

static const struct cuzk_cmd cmd = { "cuzk verify", usage_text, (const int[]){ 0, 1, 2, 3, 4, 6, 10, -1 } };

static int fail(int rc, const char *msg)
{
    int code = cuzk_cmd_fail(&cmd, rc, "%s", msg);
    /* every other refusal is of the input's form */
    return code == CUZK_EXIT_IO || code == CUZK_EXIT_UNSUPPORTED || code == CUZK_EXIT_INTERNAL
        ? code
        : CUZK_EXIT_FORMAT;
}

int verify_cmd_main(int argc, char **argv)
{
    if (argc == 2 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
        cuzk_cmd_usage(&cmd, stdout);
        return 0;
    }
    if (argc != 4 || argv[1][0] == '-') {
        cuzk_cmd_usage(&cmd, stderr);
        return CUZK_EXIT_USAGE;
    }
    char err[1024] = "";
    groth16_vk vk;
    groth16_proof proof;
    uint64_t *pub = NULL;
    bool valid = false;
    int rc, code;
    if ((rc = groth16_vk_from_json(&vk, argv[1], err, sizeof err)) != 0) return fail(rc, err);
    if ((rc = groth16_public_from_json(&vk, &pub, argv[2], err, sizeof err)) != 0 ||
        (rc = groth16_proof_from_json(&vk, &proof, argv[3], err, sizeof err)) != 0 ||
        (rc = groth16_verify_proof(&vk, &proof, pub, vk.npublic, &valid, err, sizeof err)) != 0) {
        code = fail(rc, err);
    } else if (valid) {
        puts("OK");
        code = 0;
    } else {
        puts("invalid proof");
        fprintf(stderr, "cuzk verify: %s\n", err);
        code = CUZK_EXIT_FALSE;
    }
    free(pub);
    groth16_vk_free(&vk);
    return code;
}
