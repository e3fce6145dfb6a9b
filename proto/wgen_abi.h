/* wgen_abi.h — the C ABI of a witness generator (.wgen), the one thing a .wgen exports.
 *
 * A .wgen is a shared object that `cuzk build-witness` builds from circom's C++
 * output (`circom --c`) plus synth/wgen_abi.cpp, which implements this header. Its
 * text is embedded in the cuzk binary and written next to the circuit's sources at
 * build time, so the one declaration here serves both sides (C loader, C++ .so).
 * Plain C, no includes beyond <stdint.h>/<stddef.h>: it is compiled by g++ as well.
 *
 * Bump CUZK_WGEN_ABI on any change of a layout or a function below: the loader
 * refuses a .wgen of another version ("rebuild it with cuzk build-witness"). A new
 * function the loader treats as optional (cuzk_wgen_fingerprint: absent in older
 * generators, which then count as built without --r1cs) needs no bump. */
#ifndef CUZK_WGEN_ABI_H
#define CUZK_WGEN_ABI_H

#include <stddef.h>
#include <stdint.h>

#define CUZK_WGEN_ABI 1

#ifdef __cplusplus
extern "C" {
#endif

/* One main input of the circuit in circom's hash map: fnv1a-64 of its qualified name
 * ("in", "a.b", "x[2].y"), first signal id, number of field elements. Packed as in
 * circuit.dat (HashSignalInfo). Unused slots have hash 0 and signalid 0. */
struct __attribute__((__packed__)) cuzk_wgen_input {
    uint64_t hash;
    uint64_t signalid;
    uint64_t signalsize;
};

struct cuzk_wgen_desc {
    uint32_t abi;      /* CUZK_WGEN_ABI */
    uint32_t n8;       /* bytes per field element (32 for BN254 and BLS12-381 Fr) */
    uint8_t prime[64]; /* the field prime, little-endian, n8 bytes used */
    uint32_t nwitness; /* values in the witness (the zkey's nVars) */
    uint32_t ninputs;  /* main input signals (field elements), ids [input_start, +ninputs) */
    uint32_t input_start;
    uint32_t nhash; /* slots in inputs[] */
    const struct cuzk_wgen_input *inputs;
    /* "name size\n" for every main input (from circom's .sym, in signal order), so a
     * message can name a signal that input.json leaves out; "" when built without .sym */
    const char *names;
    uint64_t dat_hash; /* fnv1a-64 of circuit.dat: tells circuits apart (a check
                                 * against mix-ups, not a security measure) */
    uint64_t dat_size;
};

/* The circuit description; loads circuit.dat (embedded) on the first call, once per
 * process. Never NULL. */
const struct cuzk_wgen_desc *cuzk_wgen_describe(void);
/* A calculation context (all signals unset). NULL when out of memory. */
void *cuzk_wgen_new(void);
/* Sets signal id (input_start <= id < input_start + ninputs) to the canonical value
 * v (n8 / 8 little-endian limbs, < prime). The caller checks both. */
void cuzk_wgen_set(void *ctx, uint64_t id, const uint64_t *v);
/* Runs the circuit once every input is set. 0, or -1 with a message in err (a failed
 * circom assert: "Failed assert in template T line L. Followed trace of components:
 * main.c"). What the circuit prints (circom log()) while it runs goes to stderr. */
int cuzk_wgen_run(void *ctx, char *err, size_t errlen);
/* Copies witness values [first, first + n) out, canonical little-endian, n8 bytes each
 * (the .wtns and pinned-buffer form). After a successful run only. */
void cuzk_wgen_get(void *ctx, uint32_t first, uint32_t n, uint8_t *out);
/* The circuit fingerprint (fingerprint.h, FP_BYTES = 32 bytes) that `cuzk build-witness
 * --r1cs` computed from the circuit's r1cs, or NULL for a generator built without one.
 * Optional: the loader looks it up with dlsym. */
const uint8_t *cuzk_wgen_fingerprint(void);
/* Frees a context; NULL is accepted. */
void cuzk_wgen_free(void *ctx);

#ifdef __cplusplus
}
#endif

#endif
