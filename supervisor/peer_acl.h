/* peer_acl.h — a directory's POSIX access ACL read for a client's credentials
 * (supervisor/peer_acl.c).
 *
 * cuzkd (root, or its own user) writes a client's proofs into the client's out dir,
 * so it must decide with the client's rights, not its own. Mode bits alone are not
 * those rights when the directory has an access ACL: a named-user entry can deny what
 * the "other" bits allow (a root cuzkd then wrote where the user could not), or grant
 * what they deny. The ACL (xattr system.posix_acl_access, the kernel's binary form) is
 * evaluated as the kernel does (POSIX.1e): the owner entry for the owner; else a
 * named-user entry, under the mask; else every group entry the peer matches (owning
 * group and named groups) under the mask, granted if one of them grants; else other.
 */
#ifndef CUZK_PEER_ACL_H
#define CUZK_PEER_ACL_H

#include <sys/stat.h>

#include "supervisor/submit_check.h"

/* Does peer have all of need (R_OK 4, W_OK 2, X_OK 1) on the directory open as fd
 * (any descriptor, O_PATH too) whose stat is st, by its access ACL? 1 yes, 0 no, -1
 * when it has no ACL (or the file system keeps none): decide by the mode bits. */
int peer_acl_may(const struct control_peer *peer, int fd, const struct stat *st, unsigned need);

#endif
