#!/usr/bin/env python3
"""send_memfd.py SOCK LINE FILE...: one control request LINE on the socket SOCK with
each FILE passed as a sealed memfd (F_SEAL_WRITE|GROW|SHRINK|SEAL), as the HTTP API
process hands cuzkd a request body: the bytes live in no file of any file system.
Prints the reply line."""
import fcntl
import os
import socket
import sys

SEALS = fcntl.F_SEAL_WRITE | fcntl.F_SEAL_GROW | fcntl.F_SEAL_SHRINK | fcntl.F_SEAL_SEAL


def sealed(path):
    fd = os.memfd_create("body", os.MFD_CLOEXEC | os.MFD_ALLOW_SEALING)
    with open(path, "rb") as f:
        data = f.read()
    os.write(fd, data)
    fcntl.fcntl(fd, fcntl.F_ADD_SEALS, SEALS)
    os.lseek(fd, 0, os.SEEK_SET)
    return fd


def main():
    fds = [sealed(p) for p in sys.argv[3:]]
    s = socket.socket(socket.AF_UNIX)
    s.connect(sys.argv[1])
    line = sys.argv[2].encode() + b"\n"
    if fds:
        socket.send_fds(s, [line[:1]], fds)
        line = line[1:]
    s.sendall(line)
    for fd in fds:
        os.close(fd)
    buf = b""
    while b"\n" not in buf:
        d = s.recv(65536)
        if not d:
            break
        buf += d
    print(buf.decode().split("\n")[0])


main()
