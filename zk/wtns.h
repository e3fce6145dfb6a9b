/* wtns.h — circom/snarkjs witness files (.wtns, spec §5), mapped read-only. */
#ifndef CUZK_WTNS_H
#define CUZK_WTNS_H

#include <stddef.h>
#include <stdint.h>

#include "zk/binfile.h"
#include "zk/field.h"

struct zkey;

typedef struct wtns {
    binfile bf;
    uint32_t n8;          /* bytes per value (32 for BN254 and BLS12-381 Fr) */
    const field_desc *Fr; /* the field of the header prime */
    uint32_t nwitness;
    const uint8_t *values; /* nwitness * n8 bytes, canonical LE, < prime; possibly misaligned */
} wtns;

/* Opens a .wtns: magic "wtns", version 1 or 2, sections 1 and 2 unique, header size
 * 4+n8+4, the prime one of the supported scalar fields (BN254 Fr, BLS12-381 Fr: else
 * -CUZK_E_UNSUPPORTED), section 2 exactly nwitness*n8 bytes, every value < prime
 * (-CUZK_E_FORMAT naming the index). Other failures as binfile_open. w is left closed
 * on failure. */
int wtns_open(wtns *w, const char *path, char *err, size_t errlen);

/* A circom file over Fr (.wtns, .r1cs): sections 1 (header) and 2 once each, and a
 * header that starts with n8 (u32) and the prime in n8 bytes. */
struct fr_file {
    const char *magic; /* "wtns", "r1cs" */
    uint32_t max_version;
    const char *const *section_names; /* of sections 1 and 2, for messages */
    uint32_t header_rest;             /* section 1's bytes after n8 and the prime */
    const char *prime_of;             /* "witness", "circuit": whose prime a message names */
};

/* binfile_open_reader of path as kind, then its header: checks that section 1 holds
 * just n8, the prime and kind->header_rest bytes and that the prime is BN254's or
 * BLS12-381's scalar field; sets *n8, *Fr and *rest_at (the header's rest). 0, or the
 * binfile_open codes, -CUZK_E_FORMAT, -CUZK_E_UNSUPPORTED with err; the caller's close
 * undoes a failure. */
int wtns_open_fr_file(void *reader, size_t size, binfile *bf, const char *path, const struct fr_file *kind,
                      uint32_t *n8, const field_desc **Fr, const uint8_t **rest_at, char *err, size_t errlen);

/* Does this witness belong to this zkey? prime == zkey r and nwitness == nvars, else
 * -CUZK_E_MISMATCH with both numbers in the message. */
int wtns_check_zkey(const wtns *w, const struct zkey *z, char *err, size_t errlen);

/* A witness in memory, as if opened from a file called name: w->values points at
 * values (nwitness canonical values of Fr), which the caller keeps while w is used;
 * wtns_close frees only the name. 0 or -CUZK_E_INTERNAL (out of memory). */
int wtns_of_values(wtns *w, const char *name, const field_desc *Fr, uint32_t nwitness, const uint8_t *values);

/* Writes a .wtns (version 2, as circom and snarkjs write it) of nwitness values of Fr,
 * canonical little-endian, Fr's byte size each, to path by temp file + fsync + rename
 * (no partial file under the final name). 0 or -CUZK_E_OUTPUT with a message. */
int wtns_write(const char *path, const field_desc *Fr, uint32_t nwitness, const uint8_t *values, char *err,
               size_t errlen);

/* Accepts a zeroed or already-closed struct. */
void wtns_close(wtns *w);

#endif
