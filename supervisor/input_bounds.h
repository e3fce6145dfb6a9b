/* input_bounds.h — how many bytes a client's witness or zkey may be, read from its
 * headers before anything is copied (supervisor/input_bounds.c).
 *
 * cuzkd copies each input into memory (copies.h) and, with the job store, onto disk.
 * A file's st_size is what the client says, not what the format needs: a 4 KiB file
 * with a sparse 3 GiB unknown section would cost 3 GiB of shared memory and 3 GB of
 * the store's disk. So the section table is walked with pread (a few dozen bytes)
 * and the file must be exactly what its header implies:
 *   - a witness (.wtns): sections 1 (n8, prime, count) and 2 (count x n8 bytes), once
 *     each, nothing else, no trailing byte;
 *   - a zkey (Groth16): sections 1 to 10 at most once each, sizes 1-9 as the header's
 *     field sizes, signal, public and domain counts (and section 4's coefficient count)
 *     give them, section 10 (the setup's contributions) at most ZKEY_CONTRIB_MAX, no
 *     unknown section, no trailing byte.
 * What the values mean is checked later, on the copy (wtns_open, zkey_open).
 */
#ifndef CUZK_INPUT_BOUNDS_H
#define CUZK_INPUT_BOUNDS_H

#include <stddef.h>
#include <stdint.h>

/* Section 10 of a zkey: a hash and the contributions' records (a few hundred bytes
 * each); 16 MiB is tens of thousands of contributions. */
#define ZKEY_CONTRIB_MAX (16u << 20)

/* 0 and *size (the exact size the file has and must keep), or -EINVAL with a
 * sentence in err naming the file as display (what: "witness", "zkey"). A descriptor
 * that is not a regular file is not read: 0 and *size 0 (copies_take refuses it). */
int input_bounds_wtns(int fd, const char *display, uint64_t *size, char *err, size_t errlen);
int input_bounds_zkey(int fd, const char *display, uint64_t *size, char *err, size_t errlen);

#endif
