/* spooled.c — proof files spooled in a directory of cuzkd's own, read back and removed
 * (spooled.h): the fleet's --store-proofs and the jobs that keep their results in the
 * job store share them. */
#include "base/os.h"
#include "fleet/spooled.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Remove the spooled proof files (*.proof.json, *.public.json) in the dir sfd. */
void spooled_clean(int sfd)
{
    DIR *dir = os_dir_stream(sfd);
    struct dirent *e;

    if (!dir) return;
    while ((e = readdir(dir))) {
        size_t len = strlen(e->d_name);

        if ((len > 11 && !strcmp(e->d_name + len - 11, ".proof.json")) ||
            (len > 12 && !strcmp(e->d_name + len - 12, ".public.json")))
            unlinkat(sfd, e->d_name, 0);
    }
    closedir(dir);
}

/* A spooled proof file, read for the table: at most cap bytes, a regular file not
 * reached through a link, no NUL byte (a text column). malloc'd text, or NULL with the
 * reason in why. */
char *spooled_read(int sfd, const char *name, size_t cap, char *why, size_t whylen)
{
    int fd = openat(sfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
    struct stat st;
    char *buf = NULL;
    size_t got = 0;

    if (fd < 0 || fstat(fd, &st) || !S_ISREG(st.st_mode)) {
        snprintf(why, whylen, "stored proof: cannot read %s: %s", name,
                 fd < 0 ? strerror(errno) : "not a regular file");
        goto out;
    }
    if ((size_t)st.st_size > cap) {
        snprintf(why, whylen, "stored proof: %s has %lld bytes, over the %zu stored", name,
                 (long long)st.st_size, cap);
        goto out;
    }
    if (!(buf = malloc((size_t)st.st_size + 1))) {
        snprintf(why, whylen, "stored proof: out of memory");
        goto out;
    }
    while (got < (size_t)st.st_size) {
        ssize_t n = read(fd, buf + got, (size_t)st.st_size - got);

        if (n <= 0) {
            snprintf(why, whylen, "stored proof: reading %s: %s", name,
                     n ? strerror(errno) : "shorter than its size");
            free(buf);
            buf = NULL;
            goto out;
        }
        got += (size_t)n;
    }
    buf[got] = '\0';
    if (strlen(buf) != got) {
        snprintf(why, whylen, "stored proof: %s has a NUL byte", name);
        free(buf);
        buf = NULL;
    }
out:
    if (fd >= 0) close(fd);
    return buf;
}
