/* wgen_names.h — the main input signals of a witness generator (.wgen), read from
 * the file without loading it: "name size\n" a line per input in signal order, the
 * table `cuzk build-witness` took from circom's .sym (wgen_abi.h, cuzk_wgen_names).
 *
 * cuzkd describes a declared circuit with it (its input signals at load), and the
 * HTTP API checks a request's signal names against it before a job is made. Reading
 * the ELF file runs none of the generator's code: cuzkd never dlopens a generator
 * (only the synth stage does). The table is found in its own section,
 * .cuzk_wgen_names (build-witness puts it there; strip keeps it), else, for a
 * generator built before that section, through the symbol cuzk_wgen_names of the
 * static symbol table (gone when the file was stripped). */
#ifndef CUZK_WGEN_NAMES_H
#define CUZK_WGEN_NAMES_H

#include <stddef.h>

/* The table of the generator open at fd (read with pread; the offset is unchanged)
 * into out (NUL-terminated). 0; 1 when the file carries no table, or an empty one
 * (built without the .sym: the names are not known); -1 with err set when the file
 * is not a 64-bit little-endian ELF, is cut short, or its table does not fit in
 * outlen. */
int wgen_names_read(int fd, char *out, size_t outlen, char *err, size_t errlen);

#endif
