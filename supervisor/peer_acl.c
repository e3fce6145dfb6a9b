/* peer_acl.c — POSIX.1e access check of a directory for a client (peer_acl.h). */
#include "supervisor/peer_acl.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/xattr.h>

/* The kernel's xattr form of an ACL (include/uapi/linux/posix_acl_xattr.h). */
#define ACL_XATTR_VERSION 2
enum { TAG_USER_OBJ = 1, TAG_USER = 2, TAG_GROUP_OBJ = 4, TAG_GROUP = 8, TAG_MASK = 16, TAG_OTHER = 32 };
struct acl_entry {
    uint16_t tag, perm;
    uint32_t id;
};

int peer_acl_may(const struct control_peer *peer, int fd, const struct stat *st, unsigned need)
{
    /* 4 + 8 x entries; 1024 entries is more than any file system stores */
    unsigned char buf[4 + 8 * 1024];
    const struct acl_entry *e;
    char path[64];
    ssize_t n;
    size_t ne;
    unsigned mask = 7, other = 0, user_obj = 0;
    int named = -1, group_match = 0, group_ok = 0;

    /* Through /proc: fgetxattr refuses an O_PATH descriptor (the client's out dir). */
    snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
    n = getxattr(path, "system.posix_acl_access", buf, sizeof(buf));
    if (n < 4 || (size_t)(n - 4) % sizeof(*e))
        return -1; /* none (ENODATA, ENOTSUP): the mode bits are the rights */
    {
        uint32_t v;

        memcpy(&v, buf, 4);
        if (v != ACL_XATTR_VERSION) return 0; /* unknown: refused, never guessed */
    }
    e = (const struct acl_entry *)(buf + 4);
    ne = (size_t)(n - 4) / sizeof(*e);
    for (size_t i = 0; i < ne; i++)
        if (e[i].tag == TAG_MASK)
            mask = e[i].perm & 7;
        else if (e[i].tag == TAG_OTHER)
            other = e[i].perm & 7;
        else if (e[i].tag == TAG_USER_OBJ)
            user_obj = e[i].perm & 7;
        else if (e[i].tag == TAG_USER && e[i].id == peer->uid)
            named = e[i].perm & 7;
    if (st->st_uid == peer->uid) return (user_obj & need) == need;
    if (named >= 0) return ((unsigned)named & mask & need) == need;
    for (size_t i = 0; i < ne; i++) {
        int match = (e[i].tag == TAG_GROUP_OBJ && control_peer_in_group(peer, st->st_gid)) ||
            (e[i].tag == TAG_GROUP && control_peer_in_group(peer, (gid_t)e[i].id));

        if (!match) continue;
        group_match = 1;
        /* The owning group's entry is under the mask too when a mask exists. */
        if ((e[i].perm & mask & need) == need) group_ok = 1;
    }
    if (group_match) return group_ok;
    return (other & need) == need;
}
