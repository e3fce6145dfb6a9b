/* proof_cmd.h — what `cuzk proof JOB K [--out DIR]` does with cuzkd's answer to the
 * proof request (protocol.h): a stored proof of a job submitted with
 * "results":"store" (`cuzk prove --keep-in-store`). */
#ifndef CUZK_PROOF_CMD_H
#define CUZK_PROOF_CMD_H

#include <jansson.h>

/* reply: {"ok":true,"job","index","proof","public"}. With out_dir: written to
 * OUT/JOB-K.proof.json and OUT/JOB-K.public.json (snarkjs's files) and named on
 * stdout; without: {"proof":...,"publicSignals":...} on stdout. An exit code
 * (CUZK_EXIT_*). */
int proof_cmd_write(json_t *reply, const char *out_dir);

#endif
