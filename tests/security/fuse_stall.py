"""A FUSE file system that does not answer, or that answers what its owner likes (tests/security).

usage: fuse_stall.py MOUNTPOINT SIZE MARKER [--hold-dir] [--serve FILE] [--as-user UID]
Mounts MOUNTPOINT (allow_other) and speaks the kernel's protocol on /dev/fuse itself (no
libfuse), so it is started as root; closing /dev/fuse (this process exiting) fails every
pending request with ENOTCONN.
  default      the mount holds c.zkey, a regular file of SIZE bytes, owned by whoever
               asks, that opens and stats fine; every READ of it is left unanswered, as
               a hostile or hung FUSE server would. MARKER is touched at the first READ
               (a caller is now blocked in it).
  --hold-dir   the mount's root is an empty directory, owned by whoever asks, mode 0777,
               whose stat answers; every request about its contents (a lookup, an open,
               a create) is read and never answered: an out dir on a hung file system.
               MARKER is touched at the first such request. A request read and not
               answered waits uninterruptibly: even SIGKILL does not end its caller.
  --serve FILE the root holds FILE's bytes under FILE's name, reads answered, and both
               claim uid 0, gid 0, mode 0755 (what a user's server may say); MARKER is
               touched at the first READ (someone read the file).
  --as-user UID  after the mount, serve as UID (the mount belongs to UID: user_id=UID),
               as a user's own FUSE server would.
"""
import ctypes, errno, os, struct, sys

mnt, size, marker = sys.argv[1], int(sys.argv[2]), sys.argv[3]
args = sys.argv[4:]
hold_dir = "--hold-dir" in args
serve = args[args.index("--serve") + 1] if "--serve" in args else None
as_user = int(args[args.index("--as-user") + 1]) if "--as-user" in args else 0
fname = os.path.basename(serve).encode() if serve else b"c.zkey"
if serve:
    with open(serve, "rb") as fh:
        content = fh.read()
    size = len(content)
HELD = set()  # opcodes whose requests are read and never answered
LOOKUP, FORGET, GETATTR, OPEN, READ, STATFS, RELEASE, FLUSH, INIT = 1, 2, 3, 14, 15, 17, 18, 25, 26
OPENDIR, RELEASEDIR, INTERRUPT, BATCH_FORGET, DESTROY = 27, 29, 36, 42, 38
IN_HDR = struct.Struct("<IIQQIIIHH")  # len opcode unique nodeid uid gid pid extlen pad
OUT_HDR = struct.Struct("<IiQ")

fd = os.open("/dev/fuse", os.O_RDWR)
libc = ctypes.CDLL(None, use_errno=True)
opts = f"fd={fd},rootmode=40000,user_id={as_user},group_id=0,allow_other".encode()
if libc.mount(b"cuzkstall", mnt.encode(), b"fuse", 0, opts):
    sys.exit("mount: " + os.strerror(ctypes.get_errno()))
if as_user:
    import pwd
    os.setgroups([])
    os.setgid(pwd.getpwuid(as_user).pw_gid)
    os.setuid(as_user)
MKNOD, MKDIR, UNLINK, RMDIR, RENAME, LINK, FSYNC, READDIR, FSYNCDIR, ACCESS, CREATE = 8, 9, 10, 11, 12, 13, 20, 28, 30, 34, 35
GETXATTR, LISTXATTR, RENAME2, READDIRPLUS = 22, 23, 45, 44
if hold_dir:
    HELD = {LOOKUP, OPEN, OPENDIR, READ, READDIR, READDIRPLUS, CREATE, MKNOD, MKDIR, UNLINK, RMDIR, RENAME,
            RENAME2, LINK, FSYNC, FSYNCDIR}

def reply(unique, err=0, body=b""):
    os.write(fd, OUT_HDR.pack(OUT_HDR.size + len(body), -err, unique) + body)

def attr(node, uid, gid):
    mode, sz, nlink = (0o040755, 0, 2) if node == 1 else (0o100644, size, 1)
    if hold_dir:
        mode = 0o040777
    if serve:
        mode, uid, gid = (0o040755 if node == 1 else 0o100755), 0, 0
    # ino size blocks atime mtime ctime, atimens mtimens ctimens mode nlink uid gid rdev blksize flags
    return struct.pack("<QQQQQQIIIIIIIIII", node, sz, (sz + 511) // 512, 1, 1, 1, 0, 0, 0,
                       mode, nlink, uid, gid, 0, 4096, 0)

seen_read = False
seen_held = False
while True:
    try:
        buf = os.read(fd, (1 << 20) + 4096)
    except OSError as e:
        if e.errno in (errno.EINTR, errno.ENOENT):
            continue
        break  # ENODEV: unmounted
    ln, op, unique, node, uid, gid, _pid, _x, _p = IN_HDR.unpack_from(buf)
    arg = buf[IN_HDR.size:ln]
    if op in HELD:
        if not seen_held:
            seen_held = True
            open(marker, "w").close()
        continue  # read, never answered
    if op == INIT:
        major, minor, ra, _flags = struct.unpack_from("<IIII", arg)
        # major minor max_readahead flags max_background congestion max_write time_gran
        # max_pages map_alignment flags2 max_stack_depth unused[6]
        reply(unique, 0, struct.pack("<IIIIHHIIHHII24x", 7, 31, ra, 0, 16, 12, 4096, 1, 1, 0, 0, 0))
    elif op == LOOKUP:
        name = arg.split(b"\0")[0]
        if node == 1 and name == fname:
            reply(unique, 0, struct.pack("<QQQQII", 2, 0, 3600, 3600, 0, 0) + attr(2, uid, gid))
        else:
            reply(unique, errno.ENOENT)
    elif op == GETATTR:
        reply(unique, 0, struct.pack("<QII", 3600, 0, 0) + attr(node, uid, gid))
    elif op in (OPEN, OPENDIR):
        reply(unique, 0, struct.pack("<QIi", 0, 1, 0))  # FOPEN_DIRECT_IO: every read is ours
    elif op == READDIR and serve:
        off = struct.unpack_from("<QQI", arg)[1]
        ents = b""
        for i, (ino, nm, typ) in enumerate([(1, b".", 4), (1, b"..", 4), (2, fname, 8)]):
            if i >= off:
                e = struct.pack("<QQII", ino, i + 1, len(nm), typ) + nm
                ents += e + b"\0" * (-len(e) % 8)
        reply(unique, 0, ents)
    elif op == READ and serve:
        off, rsize = struct.unpack_from("<QI", arg, 8)
        if not seen_read:
            seen_read = True
            open(marker, "w").close()
        reply(unique, 0, content[off:off + rsize])
    elif op == READ:
        if not seen_read:
            seen_read = True
            open(marker, "w").close()
        # never answered
    elif op in (FORGET, BATCH_FORGET, INTERRUPT):
        pass  # no reply expected (an interrupt of a read: still never answered)
    elif op == STATFS:
        # blocks bfree bavail files ffree, bsize namelen frsize padding, spare[6]
        reply(unique, 0, struct.pack("<QQQQQIIII24x", 1 << 20, 1 << 19, 1 << 19, 1000, 900, 4096, 255, 4096, 0))
    elif op in (RELEASE, RELEASEDIR, FLUSH):
        reply(unique)
    elif op == DESTROY:
        reply(unique)
        break
    else:
        reply(unique, errno.ENOSYS)
