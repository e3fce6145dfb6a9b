/* wgen_names.c — a generator's input-name table read from its ELF file (wgen_names.h):
 * the section headers, then the section .cuzk_wgen_names, else the symbol
 * cuzk_wgen_names in .symtab. Every offset and size read from the file is checked
 * against the file's size before it is used. */
#include "zk/wgen_names.h"

#include <elf.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define NAMES_SECTION ".cuzk_wgen_names"
#define NAMES_SYMBOL  "cuzk_wgen_names"

struct elf_file {
    int fd;
    uint64_t size;
    Elf64_Shdr *sh; /* the section headers */
    uint16_t nsh;
};

static int rd(const struct elf_file *f, uint64_t off, void *buf, uint64_t n)
{
    uint64_t got = 0;

    if (off > f->size || n > f->size - off) return -1;
    while (got < n) {
        ssize_t r = pread(f->fd, (char *)buf + got, n - got, (off_t)(off + got));

        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) return -1;
        got += (uint64_t)r;
    }
    return 0;
}

/* The NUL-terminated text at off, at most outlen - 1 bytes before its NUL. 0, 1 when
 * empty, -1 when it runs off the file or past outlen. */
static int rd_text(const struct elf_file *f, uint64_t off, uint64_t max, char *out, size_t outlen)
{
    uint64_t n = max < outlen ? max : outlen;

    if (off > f->size) return -1;
    if (n > f->size - off) n = f->size - off;
    if (!n || rd(f, off, out, n)) return -1;
    if (!memchr(out, '\0', n)) return -1;
    return out[0] ? 0 : 1;
}

/* The name of section i (its sh_name in the section-name table), into nm. */
static int section_name(const struct elf_file *f, const Elf64_Shdr *strtab, uint32_t name, char *nm,
                        size_t len)
{
    if (name >= strtab->sh_size) return -1;
    return rd_text(f, strtab->sh_offset + name, strtab->sh_size - name, nm, len) < 0 ? -1 : 0;
}

/* The symbol NAMES_SYMBOL in .symtab: its bytes' file offset. -1 when none. */
static int64_t symbol_offset(const struct elf_file *f)
{
    for (uint16_t i = 0; i < f->nsh; i++) {
        const Elf64_Shdr *st = &f->sh[i], *str;

        if (st->sh_type != SHT_SYMTAB || st->sh_entsize != sizeof(Elf64_Sym) || st->sh_link >= f->nsh)
            continue;
        str = &f->sh[st->sh_link];
        for (uint64_t k = 0; k < st->sh_size / sizeof(Elf64_Sym); k++) {
            Elf64_Sym s;
            char nm[sizeof(NAMES_SYMBOL) + 1];
            const Elf64_Shdr *in;

            if (rd(f, st->sh_offset + k * sizeof(s), &s, sizeof(s))) return -1;
            if (s.st_name >= str->sh_size || s.st_shndx == SHN_UNDEF || s.st_shndx >= f->nsh) continue;
            if (rd_text(f, str->sh_offset + s.st_name, str->sh_size - s.st_name, nm, sizeof(nm)) ||
                strcmp(nm, NAMES_SYMBOL))
                continue;
            in = &f->sh[s.st_shndx];
            if (in->sh_type == SHT_NOBITS || s.st_value < in->sh_addr ||
                s.st_value - in->sh_addr >= in->sh_size)
                return -1;
            return (int64_t)(in->sh_offset + (s.st_value - in->sh_addr));
        }
    }
    return -1;
}

int wgen_names_read(int fd, char *out, size_t outlen, char *err, size_t errlen)
{
    struct elf_file f = { .fd = fd };
    struct stat st;
    Elf64_Ehdr eh;
    int rc = 1;
    int64_t off;

    if (outlen) out[0] = '\0';
    if (fstat(fd, &st) || st.st_size < (off_t)sizeof(eh)) goto bad;
    f.size = (uint64_t)st.st_size;
    if (rd(&f, 0, &eh, sizeof(eh)) || memcmp(eh.e_ident, ELFMAG, SELFMAG) ||
        eh.e_ident[EI_CLASS] != ELFCLASS64 || eh.e_ident[EI_DATA] != ELFDATA2LSB ||
        eh.e_shentsize != sizeof(Elf64_Shdr) || !eh.e_shnum || eh.e_shstrndx >= eh.e_shnum)
        goto bad;
    f.nsh = eh.e_shnum;
    if (!(f.sh = calloc(f.nsh, sizeof(Elf64_Shdr))) ||
        rd(&f, eh.e_shoff, f.sh, (uint64_t)f.nsh * sizeof(Elf64_Shdr)))
        goto bad;
    for (uint16_t i = 0; i < f.nsh; i++) {
        char nm[sizeof(NAMES_SECTION) + 1];

        if (f.sh[i].sh_type != SHT_PROGBITS ||
            section_name(&f, &f.sh[eh.e_shstrndx], f.sh[i].sh_name, nm, sizeof(nm)) ||
            strcmp(nm, NAMES_SECTION))
            continue;
        rc = rd_text(&f, f.sh[i].sh_offset, f.sh[i].sh_size, out, outlen);
        goto done;
    }
    if ((off = symbol_offset(&f)) >= 0) rc = rd_text(&f, (uint64_t)off, f.size - (uint64_t)off, out, outlen);
done:
    free(f.sh);
    if (rc < 0)
        snprintf(err, errlen, "its table of input names is cut short or longer than %zu bytes", outlen);
    if (rc) out[0] = '\0';
    return rc;
bad:
    free(f.sh);
    snprintf(err, errlen, "not a 64-bit little-endian ELF shared object");
    return -1;
}
