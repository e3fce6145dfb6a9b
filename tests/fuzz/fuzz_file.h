/* fuzz_file.h — shared by the file-reader fuzz targets: the input as a file the
 * readers can open and mmap (a memfd, opened through /proc/self/fd). */
#ifndef CUZK_FUZZ_FILE_H
#define CUZK_FUZZ_FILE_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

/* Writes data to a fresh memfd; path gets its /proc/self/fd name. The fd, or -1. */
static inline int fuzz_file(const uint8_t *data, size_t size, char *path, size_t len)
{
    int fd = memfd_create("cuzk-fuzz", MFD_CLOEXEC);
    size_t off = 0;

    if (fd < 0) return -1;
    while (off < size) {
        ssize_t w = write(fd, data + off, size - off);

        if (w <= 0) {
            close(fd);
            return -1;
        }
        off += (size_t)w;
    }
    snprintf(path, len, "/proc/self/fd/%d", fd);
    return fd;
}

#endif
