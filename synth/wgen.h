/* wgen.h — load a witness generator (.wgen, built by `cuzk build-witness`) and compute
 * a circuit's witness from an input.json with it, into the caller's buffer.
 *
 * Used by `cuzk witness`, `cuzk prove-local --witness-gen` and the synth stage. The
 * .wgen is circom's generated C++ with cuzk's ABI (wgen_abi.h) in a shared object:
 * loading one runs its code in this process, so only load generators you trust as
 * you trust the circuit. A crash in generated code kills the process that loaded it
 * (in the daemon: one synth process, which the supervisor restarts).
 *
 * Input JSON as circom/snarkjs read it: an object of signal name -> value, value a
 * number, a decimal string ("-1" is p - 1) or a "0x" hex string, or (nested) arrays of
 * them for array signals; objects nest for buses ("a.b", "x[1].y"). Unlike snarkjs, a
 * value must be an integer whose absolute value is below the prime (it is not reduced),
 * and a name may appear only once. */
#ifndef CUZK_WGEN_H
#define CUZK_WGEN_H

#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>

#include "zk/field.h"
#include "proto/wgen_abi.h"

struct zkey;

typedef struct wgen {
    void *dl; /* dlopen handle; NULL when closed */
    const struct cuzk_wgen_desc *d;
    const field_desc *Fr; /* BN254 Fr or BLS12-381 Fr */
    void *(*ctx_new)(void);
    void (*ctx_set)(void *, uint64_t, const uint64_t *);
    int (*ctx_run)(void *, char *, size_t);
    void (*ctx_get)(void *, uint32_t, uint32_t, uint8_t *);
    void (*ctx_free)(void *);
    const uint8_t *fp; /* circuit fingerprint (fingerprint.h), NULL if built without --r1cs */
    char path[4096];
    struct stat st; /* of the file when loaded (wgen_is_current) */
} wgen;

/* dlopens PATH and checks its ABI version and prime. 0; -CUZK_E_IO (cannot be read or
 * loaded: dlerror's text), -CUZK_E_FORMAT (not a .wgen, or another ABI version),
 * -CUZK_E_UNSUPPORTED (a prime other than BN254/BLS12-381 Fr). g is left closed on
 * failure. Loading the same path twice in a process maps it once (dlopen counts). */
int wgen_open(wgen *g, const char *path, char *err, size_t errlen);

/* Accepts a zeroed or already-closed struct. */
void wgen_close(wgen *g);

/* Is the file at g->path still the one loaded (device, inode, size, mtime)? A
 * generator rebuilt in place must be loaded again: 1 or 0. */
int wgen_is_current(const wgen *g);

/* Does this generator make witnesses for this zkey? Same scalar field and witness size
 * (nvars) and, for a generator built with --r1cs, the same circuit fingerprint
 * (fingerprint.h; the zkey's is computed on first use and kept in z), else
 * -CUZK_E_MISMATCH with both files in the message; -CUZK_E_INTERNAL if the zkey's
 * fingerprint cannot be computed. A generator without a fingerprint passes on curve
 * and size alone: callers warn (wgen_has_fingerprint). */
int wgen_check_zkey(const wgen *g, const struct zkey *z, char *err, size_t errlen);

/* 1 when the generator carries a circuit fingerprint (built with --r1cs), else 0. */
int wgen_has_fingerprint(const wgen *g);

/* Bytes of one witness (nwitness * n8). */
size_t wgen_witness_bytes(const wgen *g);

/* Reads INPUT (a JSON file), runs the circuit and writes the witness, canonical
 * little-endian, n8 bytes per value (the .wtns values section) to out, which holds
 * wgen_witness_bytes(g). One call at a time per process (circom's std::cout is
 * redirected while the circuit runs, to catch its assert messages). 0 or, with a
 * message naming the input file and, where there is one, the signal:
 *   -CUZK_E_IO          INPUT unreadable
 *   -CUZK_E_FORMAT      not JSON, not an object, a value that is not a field element
 *   -CUZK_E_MISMATCH    a signal the circuit does not have, one it needs and INPUT
 *                       lacks, a wrong number of values
 *   -CUZK_E_UNSATISFIED a circom assert failed (circom's template, line and trace)
 *   -CUZK_E_INTERNAL    out of memory
 * out is unspecified after a failure. */
int wgen_compute_file(const wgen *g, const char *input, uint8_t *out, char *err, size_t errlen);

/* The same from JSON text in memory (len bytes); name is used in messages. */
int wgen_compute_text(const wgen *g, const char *text, size_t len, const char *name, uint8_t *out, char *err,
                      size_t errlen);

#endif
