/* test_wgen_names.c — a generator's input-name table read from its ELF file
 * (wgen_names.h), on ELF files built here byte by byte: the section .cuzk_wgen_names,
 * the symbol cuzk_wgen_names of .symtab (a generator built before the section), neither
 * (a stripped old one), and files that lie: offsets past the end, a table without its
 * NUL, a 32-bit class, not ELF, every shorter cut of a good file. A table found but
 * unreadable is an error (-1); a symbol that points outside its section counts as no
 * table (1): either way cuzkd lists no inputs and the synth stage checks the names. */
#include <check.h>
#include <elf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "zk/wgen_names.h"

#include "helper_test.h"

static const char names[] = "x 1\nin 20\na.b 2\n";

enum how { AS_SECTION, AS_SYMBOL, NEITHER };

/* An ELF64 file: header, data (names + NUL, or without the NUL when cut), .shstrtab,
 * .strtab, .symtab, then the section headers [null, data, shstrtab, strtab, symtab]. */
static size_t build(unsigned char *f, size_t cap, enum how how, int no_nul)
{
    static const char shstr[] = "\0.cuzk_wgen_names\0.rodata\0.shstrtab\0.strtab\0.symtab";
    static const char str[] = "\0other\0cuzk_wgen_names";
    Elf64_Ehdr *eh = (Elf64_Ehdr *)f;
    Elf64_Shdr sh[5];
    Elf64_Sym sym[3];
    size_t off = sizeof(*eh), data_off, data_len = strlen(names) + !no_nul, shstr_off, str_off, sym_off;

    memset(f, 0, cap);
    memset(sh, 0, sizeof(sh));
    memset(sym, 0, sizeof(sym));
    memcpy(eh->e_ident, ELFMAG, SELFMAG);
    eh->e_ident[EI_CLASS] = ELFCLASS64;
    eh->e_ident[EI_DATA] = ELFDATA2LSB;
    eh->e_ident[EI_VERSION] = EV_CURRENT;
    eh->e_type = ET_DYN;
    eh->e_machine = EM_X86_64;
    eh->e_ehsize = sizeof(*eh);
    eh->e_shentsize = sizeof(Elf64_Shdr);
    eh->e_shnum = 5;
    eh->e_shstrndx = 2;
    /* the data: 16 bytes of something else, then the table (its symbol's place) */
    data_off = off;
    memset(f + off, 'Z', 16);
    memcpy(f + off + 16, names, data_len);
    off += 16 + data_len;
    shstr_off = off;
    memcpy(f + off, shstr, sizeof(shstr));
    off += sizeof(shstr);
    str_off = off;
    memcpy(f + off, str, sizeof(str));
    off += sizeof(str);
    off = (off + 7) & ~(size_t)7;
    sym_off = off;
    sym[1].st_name = 1; /* "other", at the data's start */
    sym[1].st_shndx = 1;
    sym[1].st_value = 0x1000;
    sym[2].st_name = 7; /* "cuzk_wgen_names", 16 bytes in */
    sym[2].st_shndx = 1;
    sym[2].st_value = 0x1000 + 16;
    memcpy(f + off, sym, sizeof(sym));
    off += sizeof(sym);
    off = (off + 7) & ~(size_t)7;
    sh[1] = (Elf64_Shdr){ .sh_name = how == AS_SECTION ? 1 : 18,
                          .sh_type = SHT_PROGBITS,
                          .sh_flags = SHF_ALLOC,
                          .sh_addr = 0x1000,
                          .sh_offset = data_off,
                          .sh_size = 16 + data_len };
    if (how == AS_SECTION) { /* the section holds the table alone */
        sh[1].sh_addr += 16;
        sh[1].sh_offset += 16;
        sh[1].sh_size -= 16;
    }
    sh[2] = (Elf64_Shdr){
        .sh_name = 26, .sh_type = SHT_STRTAB, .sh_offset = shstr_off, .sh_size = sizeof(shstr)
    };
    sh[3] =
        (Elf64_Shdr){ .sh_name = 36, .sh_type = SHT_STRTAB, .sh_offset = str_off, .sh_size = sizeof(str) };
    sh[4] = (Elf64_Shdr){ .sh_name = 44,
                          .sh_type = SHT_SYMTAB,
                          .sh_offset = sym_off,
                          .sh_size = sizeof(sym),
                          .sh_link = 3,
                          .sh_entsize = sizeof(Elf64_Sym) };
    if (how == NEITHER) sh[4].sh_type = SHT_NULL; /* stripped: no .symtab */
    eh->e_shoff = off;
    memcpy(f + off, sh, sizeof(sh));
    off += sizeof(sh);
    ck_assert_uint_le(off, cap);
    return off;
}

/* rc of wgen_names_read on f[0..n) in a memfd; the table in out. */
static int read_names(const unsigned char *f, size_t n, char *out, size_t outlen)
{
    char err[256];
    int fd = memfd_create("wgen", 0), rc;

    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq((int)write(fd, f, n), (int)n);
    rc = wgen_names_read(fd, out, outlen, err, sizeof(err));
    if (rc < 0) ck_assert_msg(err[0], "no message for rc %d", rc);
    close(fd);
    return rc;
}

TEST(test_wgen_names_section_and_symbol, 1)
{
    unsigned char f[2048];
    char out[256];
    size_t n;

    n = build(f, sizeof(f), AS_SECTION, 0);
    ck_assert_int_eq(read_names(f, n, out, sizeof(out)), 0);
    ck_assert_str_eq(out, names);
    n = build(f, sizeof(f), AS_SYMBOL, 0);
    ck_assert_int_eq(read_names(f, n, out, sizeof(out)), 0);
    ck_assert_str_eq(out, names);
    n = build(f, sizeof(f), NEITHER, 0);
    ck_assert_int_eq(read_names(f, n, out, sizeof(out)), 1);
    ck_assert_str_eq(out, "");
}
END_TEST

TEST(test_wgen_names_lies, 1)
{
    unsigned char f[2048], g[2048];
    char out[256];
    size_t n;
    Elf64_Ehdr *eh = (Elf64_Ehdr *)f;

    /* a table without its NUL, at the section's end and at the file's */
    n = build(f, sizeof(f), AS_SECTION, 1);
    ck_assert_int_eq(read_names(f, n, out, sizeof(out)), -1);
    /* a table longer than the caller's room */
    n = build(f, sizeof(f), AS_SECTION, 0);
    ck_assert_int_eq(read_names(f, n, out, 8), -1);
    ck_assert_int_eq(read_names(f, n, out, sizeof(names)), 0);
    /* the section's offset past the end of the file, then its size */
    memcpy(g, f, n);
    ((Elf64_Shdr *)(g + eh->e_shoff))[1].sh_offset = 1u << 30;
    ck_assert_int_eq(read_names(g, n, out, sizeof(out)), -1);
    memcpy(g, f, n);
    ((Elf64_Shdr *)(g + eh->e_shoff))[1].sh_size = ~0ull;
    ck_assert_int_eq(read_names(g, n, out, sizeof(out)), 0); /* the NUL comes first */
    /* the section-name table's index and a name's offset out of range */
    memcpy(g, f, n);
    ((Elf64_Ehdr *)g)->e_shstrndx = 9;
    ck_assert_int_eq(read_names(g, n, out, sizeof(out)), -1);
    memcpy(g, f, n);
    ((Elf64_Shdr *)(g + eh->e_shoff))[1].sh_name = 5000; /* no name: found by its symbol */
    ck_assert_int_eq(read_names(g, n, out, sizeof(out)), 0);
    ck_assert_str_eq(out, names);
    /* the symbol's section out of range, its value outside its section */
    n = build(f, sizeof(f), AS_SYMBOL, 0);
    memcpy(g, f, n);
    ((Elf64_Sym *)(g + ((Elf64_Shdr *)(g + eh->e_shoff))[4].sh_offset))[2].st_shndx = 77;
    ck_assert_int_eq(read_names(g, n, out, sizeof(out)), 1);
    memcpy(g, f, n);
    ((Elf64_Sym *)(g + ((Elf64_Shdr *)(g + eh->e_shoff))[4].sh_offset))[2].st_value = 0x9000;
    ck_assert_int_eq(read_names(g, n, out, sizeof(out)), 1); /* a symbol that points nowhere: no table */
    /* a 32-bit class, big-endian data, not ELF at all */
    memcpy(g, f, n);
    g[EI_CLASS] = ELFCLASS32;
    ck_assert_int_eq(read_names(g, n, out, sizeof(out)), -1);
    memcpy(g, f, n);
    g[EI_DATA] = ELFDATA2MSB;
    ck_assert_int_eq(read_names(g, n, out, sizeof(out)), -1);
    ck_assert_int_eq(read_names((const unsigned char *)"not an ELF file", 15, out, sizeof(out)), -1);
}
END_TEST

TEST(test_wgen_names_every_cut, 1)
{
    unsigned char f[2048];
    char out[256];
    size_t n = build(f, sizeof(f), AS_SECTION, 0);

    /* the section headers come last: any shorter file has lost some of them */
    for (size_t cut = 0; cut < n; cut++) ck_assert_int_eq(read_names(f, cut, out, sizeof(out)), -1);
}
END_TEST

int main(void)
{
    return test_main("wgen_names", NULL);
}
