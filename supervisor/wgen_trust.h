/* wgen_trust.h — which witness generators cuzkd accepts (supervisor/wgen_trust.c).
 *
 * A generator is native code: the synth stage dlopens it, and loading a shared object
 * runs its constructors. So a client may name one, but cuzkd accepts it only from
 * where the operator put it, and only if it is a cuzk generator:
 *   - place: the file's real path (of the client's descriptor, as the kernel resolved
 *     it) lies beneath one of the directories of --wgen-dir (DIR[:DIR...]), and each
 *     component from / to the file is a real directory (no symlink), owned by root or
 *     cuzkd's user, writable by no one else (a sticky world-writable directory such as
 *     /tmp only above a directory of root's), on a local file system (statfs magic:
 *     ext2/3/4, xfs, btrfs, tmpfs, overlay, zfs, f2fs, squashfs; never FUSE, NFS, CIFS,
 *     9p..., where ownership and mode are the server's word: a user's FUSE mount
 *     reports uid 0 and 0755 for anything it serves); and the file reached that way
 *     is the client's very file (device, inode);
 *   - kind: an ELF shared object for this machine whose dynamic symbol table defines
 *     the cuzk_wgen_* functions and cuzk_wgen_abi, whose value (read from the file,
 *     nothing run) is CUZK_WGEN_ABI. A root-owned library that is no generator (any
 *     .so of /usr/lib with a constructor) is refused before anything of it runs.
 */
#ifndef CUZK_WGEN_TRUST_H
#define CUZK_WGEN_TRUST_H

#include <stddef.h>

/* 0 when the generator behind fd (the client's open descriptor) may be loaded, or
 * -EPERM (the place) / -ENOEXEC (not a generator of this ABI) with a sentence in err
 * that names the file as display. dirs: --wgen-dir's list ("" accepts none). */
int wgen_trust_check(int fd, const char *dirs, const char *display, char *err, size_t errlen);

/* The ELF check alone (exported for its unit test): 0 or -ENOEXEC with err. */
int wgen_trust_elf(int fd, char *err, size_t errlen);

#endif
