"""A FUSE file system of one file whose reads are never answered (tests/security).

usage: fuse_stall.py MOUNTPOINT SIZE MARKER
Mounts MOUNTPOINT (allow_other) holding c.zkey, a regular file of SIZE bytes, owned
by whoever asks, that opens and stats fine; every READ of it is left unanswered, as a
hostile or hung FUSE server would. Touches MARKER at the first READ (a caller is now
blocked in it). Speaks the kernel's protocol on /dev/fuse itself (no libfuse), so
it runs as root; closing /dev/fuse (this process exiting) fails the pending reads
with ENOTCONN.
"""
import ctypes, errno, os, struct, sys

mnt, size, marker = sys.argv[1], int(sys.argv[2]), sys.argv[3]
LOOKUP, FORGET, GETATTR, OPEN, READ, STATFS, RELEASE, FLUSH, INIT = 1, 2, 3, 14, 15, 17, 18, 25, 26
OPENDIR, RELEASEDIR, INTERRUPT, BATCH_FORGET, DESTROY = 27, 29, 36, 42, 38
IN_HDR = struct.Struct("<IIQQIIIHH")  # len opcode unique nodeid uid gid pid extlen pad
OUT_HDR = struct.Struct("<IiQ")

fd = os.open("/dev/fuse", os.O_RDWR)
libc = ctypes.CDLL(None, use_errno=True)
opts = f"fd={fd},rootmode=40000,user_id=0,group_id=0,allow_other".encode()
if libc.mount(b"cuzkstall", mnt.encode(), b"fuse", 0, opts):
    sys.exit("mount: " + os.strerror(ctypes.get_errno()))

def reply(unique, err=0, body=b""):
    os.write(fd, OUT_HDR.pack(OUT_HDR.size + len(body), -err, unique) + body)

def attr(node, uid, gid):
    mode, sz, nlink = (0o040755, 0, 2) if node == 1 else (0o100644, size, 1)
    # ino size blocks atime mtime ctime, atimens mtimens ctimens mode nlink uid gid rdev blksize flags
    return struct.pack("<QQQQQQIIIIIIIIII", node, sz, (sz + 511) // 512, 1, 1, 1, 0, 0, 0,
                       mode, nlink, uid, gid, 0, 4096, 0)

seen_read = False
while True:
    try:
        buf = os.read(fd, (1 << 20) + 4096)
    except OSError as e:
        if e.errno in (errno.EINTR, errno.ENOENT):
            continue
        break  # ENODEV: unmounted
    ln, op, unique, node, uid, gid, _pid, _x, _p = IN_HDR.unpack_from(buf)
    arg = buf[IN_HDR.size:ln]
    if op == INIT:
        major, minor, ra, _flags = struct.unpack_from("<IIII", arg)
        # major minor max_readahead flags max_background congestion max_write time_gran
        # max_pages map_alignment flags2 max_stack_depth unused[6]
        reply(unique, 0, struct.pack("<IIIIHHIIHHII24x", 7, 31, ra, 0, 16, 12, 4096, 1, 1, 0, 0, 0))
    elif op == LOOKUP:
        name = arg.split(b"\0")[0]
        if node == 1 and name == b"c.zkey":
            reply(unique, 0, struct.pack("<QQQQII", 2, 0, 3600, 3600, 0, 0) + attr(2, uid, gid))
        else:
            reply(unique, errno.ENOENT)
    elif op == GETATTR:
        reply(unique, 0, struct.pack("<QII", 3600, 0, 0) + attr(node, uid, gid))
    elif op in (OPEN, OPENDIR):
        reply(unique, 0, struct.pack("<QIi", 0, 1, 0))  # FOPEN_DIRECT_IO: every read is ours
    elif op == READ:
        if not seen_read:
            seen_read = True
            open(marker, "w").close()
        # never answered
    elif op in (FORGET, BATCH_FORGET, INTERRUPT):
        pass  # no reply expected (an interrupt of a read: still never answered)
    elif op in (RELEASE, RELEASEDIR, FLUSH):
        reply(unique)
    elif op == DESTROY:
        reply(unique)
        break
    else:
        reply(unique, errno.ENOSYS)
