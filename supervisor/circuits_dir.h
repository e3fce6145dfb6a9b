/* circuits_dir.h — a directory of circuits by name (`circuits-dir = DIR` in
 * cuzkd.conf, or --circuits-dir), beside the config's [circuit NAME] sections, for an
 * operator who adds a circuit by dropping it in place (supervisor/circuits_dir.c):
 *
 *   DIR/NAME.conf     the lines of a [circuit NAME] section (zkey = /abs/path, ...,
 *                     circuit_decl.h), without the header: the file names the circuit
 *   DIR/NAME/         a folder holding circuit.zkey, and circuit.wgen (its witness
 *                     generator; DIR must then be in --wgen-dir) and circuit.r1cs when
 *                     present
 *
 * NAME is a circuit name (circuit_decl.h); other entries (hidden ones, other files) are
 * ignored. Read at start and by `cuzk reload` / SIGHUP, in name order; a name declared
 * twice (a section and an entry, or NAME.conf and NAME/) is refused as in the config. */
#ifndef CUZK_CIRCUITS_DIR_H
#define CUZK_CIRCUITS_DIR_H

#include <stddef.h>

#include "supervisor/config.h"

/* Add c->circuits_dir's circuits to c->circuits. 0, or -errno / -EINVAL with err
 * naming the entry. */
int circuits_dir_read(struct cuzkd_config *c, char *err, size_t errlen);

#endif
