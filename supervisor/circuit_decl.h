/* circuit_decl.h — the operator's circuits by name: the `[circuit NAME]` sections of
 * cuzkd.conf (supervisor/circuit_decl.c), parsed without touching a file.
 *
 *   [circuit mulchain]
 *   zkey = /srv/cuzk/mulchain.zkey         the proving key (required)
 *   witness-gen = /srv/cuzk/mulchain.wgen  for input.json jobs (optional; must lie in
 *                                          --wgen-dir like any generator, wgen_trust.h)
 *   r1cs = /srv/cuzk/mulchain.r1cs         optional, as `cuzk prove --r1cs`
 *   max-input-bytes = 1M                   largest witness or input.json a job of it
 *                                          may pass (optional; 0 or absent: no limit)
 *
 * A name is what clients send (`cuzk prove --circuit NAME`) and what status shows
 * (proto_circuit_name_valid, proto/protocol.h). Paths are the operator's (the file is root's):
 * absolute, opened by cuzkd when it loads them (catalog.c). */
#ifndef CUZK_CIRCUIT_DECL_H
#define CUZK_CIRCUIT_DECL_H

#include <stddef.h>
#include <stdint.h>

#include "proto/protocol.h"

struct circuit_decl {
    char name[PROTO_CIRCUIT_NAME_MAX];
    char zkey[PROTO_PATH_MAX];
    char wgen[PROTO_PATH_MAX]; /* "" none */
    char r1cs[PROTO_PATH_MAX]; /* "" none */
    uint64_t max_input_bytes;  /* 0: no limit */
};

/* A trimmed INI line that opens a section ("[...]"): 1 when it is a `[circuit NAME]`
 * header (NAME, valid, copied into name), 0 when it is another section, -EINVAL with a
 * sentence in err when it says "circuit" but its name is missing or refused. */
int circuit_decl_header(const char *line, char name[PROTO_CIRCUIT_NAME_MAX], char *err, size_t errlen);

/* One `key = value` line of a circuit's section into d. 0, or -EINVAL with err. */
int circuit_decl_set(struct circuit_decl *d, const char *key, const char *value, char *err, size_t errlen);

/* A finished section: its zkey named? 0, or -EINVAL with err. */
int circuit_decl_done(const struct circuit_decl *d, char *err, size_t errlen);

/* A byte count, decimal with an optional K, M or G suffix (powers of 1024): 0 and
 * *out, or -EINVAL (not a number, a sign, trailing text, over 2^64). Also cuzkd's
 * --quota-bytes. */
int circuit_decl_size(const char *v, uint64_t *out);

#endif
