/* wgen_trust.c — the place and kind checks of a witness generator (wgen_trust.h). */
#include "supervisor/wgen_trust.h"
#include "proto/wgen_abi.h"

#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#ifndef XFS_SUPER_MAGIC
#define XFS_SUPER_MAGIC 0x58465342
#endif
#ifndef ZFS_SUPER_MAGIC
#define ZFS_SUPER_MAGIC 0x2fc12fc1
#endif
#ifndef F2FS_SUPER_MAGIC
#define F2FS_SUPER_MAGIC 0xF2F52010
#endif

/* File systems whose owner and mode are the kernel's own record: a list of those
 * allowed, not of those refused, so an unknown network or user-space file system
 * (where a server or a user's process answers stat) is refused by default. */
static int local_fs(int fd)
{
    static const unsigned long ok[] = { EXT4_SUPER_MAGIC, XFS_SUPER_MAGIC,       BTRFS_SUPER_MAGIC,
                                        TMPFS_MAGIC,      OVERLAYFS_SUPER_MAGIC, ZFS_SUPER_MAGIC,
                                        F2FS_SUPER_MAGIC, SQUASHFS_MAGIC };
    struct statfs f;

    if (fstatfs(fd, &f)) return 0;
    for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++)
        if ((unsigned long)f.f_type == ok[i]) return 1;
    return 0;
}

/* Owned by root or cuzkd's user. */
static int ours(const struct stat *st)
{
    return st->st_uid == 0 || st->st_uid == geteuid();
}

/* path beneath one of dirs (':'-separated, absolute)? */
static int beneath(const char *path, const char *dirs)
{
    for (const char *d = dirs; *d;) {
        size_t n = strcspn(d, ":");

        while (n > 1 && d[n - 1] == '/') n--;
        if (n && d[0] == '/' && (n == 1 || (!strncmp(path, d, n) && path[n] == '/'))) return 1;
        d += strcspn(d, ":");
        if (*d == ':') d++;
    }
    return 0;
}

static int place_err(char *err, size_t errlen, const char *display, const char *why, const char *at)
{
    snprintf(err, errlen,
             "witness generator %s: refused: %s%s%s. A generator is native code that "
             "cuzkd's synth stage loads, so it is accepted only from the operator's "
             "--wgen-dir (owned by root, writable by no one else, on a local file system)",
             display, why, at ? ": " : "", at ? at : "");
    return -EPERM;
}

/* Walk the real path p from / without following a symlink, checking each component;
 * the last one must be the file of want. */
static int walk(const char *p, const struct stat *want, const char *display, char *err, size_t errlen)
{
    char buf[4096], *save = NULL, *c, *next;
    struct stat st;
    int dfd, rc = 0;

    if (snprintf(buf, sizeof(buf), "%s", p) >= (int)sizeof(buf))
        return place_err(err, errlen, display, "its path is too long", NULL);
    if ((dfd = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC)) < 0)
        return place_err(err, errlen, display, "cannot open /", NULL);
    c = strtok_r(buf, "/", &save);
    while (c) {
        int writable, nfd;

        /* The directory dfd: ours, on a local fs, writable by no one else (a sticky
         * one may be: nobody can replace the entry of ours we step into next). */
        if (fstat(dfd, &st) || !S_ISDIR(st.st_mode) || !ours(&st) || !local_fs(dfd)) {
            rc = place_err(err, errlen, display,
                           "a directory on its path is not root's on a local file "
                           "system",
                           p);
            goto out;
        }
        writable = (st.st_mode & (S_IWGRP | S_IWOTH)) != 0;
        if (writable && !(st.st_mode & S_ISVTX)) {
            rc = place_err(err, errlen, display, "a directory on its path is writable by others", p);
            goto out;
        }
        next = strtok_r(NULL, "/", &save);
        nfd = openat(dfd, c, O_PATH | O_NOFOLLOW | O_CLOEXEC | (next ? O_DIRECTORY : 0));
        if (nfd < 0) {
            rc = place_err(err, errlen, display, "its path has a symbolic link or changed", p);
            goto out;
        }
        close(dfd);
        dfd = nfd;
        c = next;
    }
    if (fstat(dfd, &st) || st.st_dev != want->st_dev || st.st_ino != want->st_ino)
        rc = place_err(err, errlen, display, "its path no longer names the file passed", p);
out:
    close(dfd);
    return rc;
}

int wgen_trust_check(int fd, const char *dirs, const char *display, char *err, size_t errlen)
{
    char link[64], p[4096];
    struct stat st;
    ssize_t n;

    if (fstat(fd, &st) || !S_ISREG(st.st_mode))
        return place_err(err, errlen, display, "not a regular file", NULL);
    if (!ours(&st) || (st.st_mode & (S_IWGRP | S_IWOTH)))
        return place_err(err, errlen, display,
                         "it must belong to root or cuzkd's user and be writable by no "
                         "one else",
                         NULL);
    if (!local_fs(fd))
        return place_err(err, errlen, display,
                         "it lies on a file system whose ownership cuzkd cannot trust "
                         "(FUSE, NFS, CIFS, 9p or unknown)",
                         NULL);
    if (!dirs || !dirs[0])
        return place_err(err, errlen, display,
                         "cuzkd was started without --wgen-dir, so it takes no generator", NULL);
    snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
    n = readlink(link, p, sizeof(p) - 1);
    if (n <= 0 || p[0] != '/') return place_err(err, errlen, display, "its real path cannot be read", NULL);
    p[n] = '\0';
    if (!beneath(p, dirs)) return place_err(err, errlen, display, "it is not beneath --wgen-dir", dirs);
    if (walk(p, &st, display, err, errlen)) return -EPERM;
    if (wgen_trust_elf(fd, err, errlen)) {
        char sub[512];

        snprintf(sub, sizeof(sub), "%s", err);
        snprintf(err, errlen, "witness generator %s: %s", display, sub);
        return -ENOEXEC;
    }
    return 0;
}

/* ---- the ELF check: read, never run ---------------------------------------------- */

#if defined(__x86_64__)
#define HOST_MACHINE EM_X86_64
#elif defined(__aarch64__)
#define HOST_MACHINE EM_AARCH64
#else
#define HOST_MACHINE EM_NONE
#endif

/* Sections larger than this are not a generator's symbol tables: refused unread. */
#define ELF_TABLE_MAX (64u << 20)

static int rd(int fd, void *b, size_t n, uint64_t off, uint64_t size)
{
    return off <= size && n <= size - off && pread(fd, b, n, (off_t)off) == (ssize_t)n ? 0 : -1;
}

static int elf_no(char *err, size_t errlen, const char *why)
{
    snprintf(err, errlen,
             "not a cuzk witness generator of ABI %u (%s): build it with cuzk "
             "build-witness",
             CUZK_WGEN_ABI, why);
    return -ENOEXEC;
}

int wgen_trust_elf(int fd, char *err, size_t errlen)
{
    static const char *need[] = { "cuzk_wgen_describe", "cuzk_wgen_new", "cuzk_wgen_set",
                                  "cuzk_wgen_run",      "cuzk_wgen_get", "cuzk_wgen_free" };
    unsigned found = 0;
    uint32_t abi = 0;
    int have_abi = 0, rc;
    Elf64_Ehdr eh;
    Elf64_Shdr *sh = NULL, *sym = NULL, *str;
    Elf64_Sym *syms = NULL;
    char *names = NULL;
    struct stat st;
    uint64_t size;

    if (fstat(fd, &st)) return elf_no(err, errlen, "cannot stat it");
    size = (uint64_t)st.st_size;
    if (rd(fd, &eh, sizeof(eh), 0, size) || memcmp(eh.e_ident, ELFMAG, SELFMAG))
        return elf_no(err, errlen, "not an ELF file");
    if (eh.e_ident[EI_CLASS] != ELFCLASS64 || eh.e_ident[EI_DATA] != ELFDATA2LSB || eh.e_type != ET_DYN ||
        eh.e_machine != HOST_MACHINE)
        return elf_no(err, errlen, "not a 64-bit shared object for this machine");
    if (eh.e_shentsize != sizeof(Elf64_Shdr) || !eh.e_shnum || eh.e_shnum > 4096)
        return elf_no(err, errlen, "no usable section table");
    sh = malloc((size_t)eh.e_shnum * sizeof(*sh));
    if (!sh || rd(fd, sh, (size_t)eh.e_shnum * sizeof(*sh), eh.e_shoff, size)) {
        rc = elf_no(err, errlen, "its section table lies outside the file");
        goto out;
    }
    for (unsigned i = 0; i < eh.e_shnum; i++)
        if (sh[i].sh_type == SHT_DYNSYM) sym = &sh[i];
    if (!sym || sym->sh_link >= eh.e_shnum || sym->sh_entsize != sizeof(Elf64_Sym) ||
        sym->sh_size > ELF_TABLE_MAX || sh[sym->sh_link].sh_size > ELF_TABLE_MAX ||
        !sh[sym->sh_link].sh_size) {
        rc = elf_no(err, errlen, "no dynamic symbol table");
        goto out;
    }
    str = &sh[sym->sh_link];
    syms = malloc(sym->sh_size ? sym->sh_size : 1);
    names = malloc(str->sh_size + 1);
    if (!syms || !names || rd(fd, syms, sym->sh_size, sym->sh_offset, size) ||
        rd(fd, names, str->sh_size, str->sh_offset, size)) {
        rc = elf_no(err, errlen, "its symbol table lies outside the file");
        goto out;
    }
    names[str->sh_size] = '\0';
    for (size_t i = 0; i < sym->sh_size / sizeof(Elf64_Sym); i++) {
        const Elf64_Sym *s = &syms[i];
        const char *nm;

        if (s->st_name >= str->sh_size || s->st_shndx == SHN_UNDEF || s->st_shndx >= eh.e_shnum) continue;
        nm = names + s->st_name;
        for (unsigned k = 0; k < sizeof(need) / sizeof(need[0]); k++)
            if (!strcmp(nm, need[k]) && ELF64_ST_TYPE(s->st_info) == STT_FUNC) found |= 1u << k;
        if (!strcmp(nm, "cuzk_wgen_abi") && s->st_size == sizeof(abi)) {
            const Elf64_Shdr *in = &sh[s->st_shndx];

            /* The value where the loader would put it: its section's file offset
             * plus its place in the section (a .rodata, not .bss). */
            if (in->sh_type == SHT_PROGBITS && in->sh_size >= sizeof(abi) && s->st_value >= in->sh_addr &&
                s->st_value - in->sh_addr <= in->sh_size - sizeof(abi) &&
                !rd(fd, &abi, sizeof(abi), in->sh_offset + (s->st_value - in->sh_addr), size))
                have_abi = 1;
        }
    }
    if (found != (1u << (sizeof(need) / sizeof(need[0]))) - 1)
        rc = elf_no(err, errlen, "it does not define the cuzk_wgen_* functions");
    else if (!have_abi)
        rc = elf_no(err, errlen, "no cuzk_wgen_abi: built by an older cuzk");
    else if (abi != CUZK_WGEN_ABI) {
        char why[64];

        snprintf(why, sizeof(why), "it was built for ABI %u", abi);
        rc = elf_no(err, errlen, why);
    } else
        rc = 0;
out:
    free(sh);
    free(syms);
    free(names);
    return rc;
}
