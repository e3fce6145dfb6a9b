/* build_witness.c — `cuzk build-witness` (build_witness.h). */
#include "tools/build_witness.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/error.h"
#include "zk/fingerprint.h"
#include "zk/r1cs.h"
#include "synth/wgen.h"

/* The sources that go into every .wgen, embedded at build time (the Makefile makes
 * this object depend on them), so an installed cuzk needs no source tree. */
__asm__(".section .rodata\n"
        ".balign 16\n"
        "bw_src_abi_cpp: .incbin \"synth/wgen_abi.cpp\"\n .byte 0\n"
        "bw_src_abi_h: .incbin \"proto/wgen_abi.h\"\n .byte 0\n"
        "bw_src_assert_h: .incbin \"synth/wgen_assert.h\"\n .byte 0\n"
        ".previous\n");
extern const char bw_src_abi_cpp[] __asm__("bw_src_abi_cpp");
extern const char bw_src_abi_h[] __asm__("bw_src_abi_h");
extern const char bw_src_assert_h[] __asm__("bw_src_assert_h");

static const char usage_text[] =
    "usage: cuzk build-witness [--prime bn128|bls12381] [--r1cs CIRCUIT.r1cs] [--keep] CIRCUIT_cpp/ OUT.wgen\n"
    "  Builds a witness generator from what `circom --c` wrote (CIRCUIT_cpp/: the\n"
    "  circuit's .cpp and .dat, calcwit.cpp, fr.cpp, fr.asm) for cuzk witness,\n"
    "  prove-local --witness-gen and cuzk prove --witness-gen. Needs g++, nasm and\n"
    "  libgmp-dev (CXX and NASM override the tools). With circom's --sym file next to\n"
    "  CIRCUIT_cpp/ a missing input is named in messages.\n"
    "  --prime P   check that circom compiled for this prime (bn128 or bls12381)\n"
    "  --r1cs F    the circuit's .r1cs (circom --r1cs): its fingerprint goes into the\n"
    "              generator, and prove-local and the daemon refuse it with a zkey of\n"
    "              another circuit even of the same witness size (without it they check\n"
    "              curve and size only, and warn)\n"
    "  --keep      keep the build directory (its path is printed)\n";

static const struct cuzk_cmd cmd = { "cuzk build-witness", usage_text,
                                     (const int[]){ 0, 2, 3, 4, 7, 9, 10, -1 } };

static int write_text(const char *dir, const char *name, const char *text)
{
    char p[PATH_MAX];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    FILE *f = fopen(p, "w");
    if (!f) return -1;
    int bad = fputs(text, f) < 0;
    bad |= fclose(f) != 0;
    return bad ? -1 : 0;
}

/* "uint get_main_input_signal_start() {return 2;}" -> 2, from the circuit's .cpp. */
static long cpp_number(const char *cpp, const char *fn)
{
    FILE *f = fopen(cpp, "r");
    char line[512];
    long v = -1;
    if (!f) return -1;
    while (fgets(line, sizeof line, f)) {
        const char *p = strstr(line, fn);
        if (p && (p = strstr(p, "return ")) && sscanf(p + 7, "%ld", &v) == 1) break;
        v = -1;
    }
    fclose(f);
    return v;
}

/* The main inputs' names from circom's .sym ("id,witness,component,main.x[1]"), one
 * "name size" line per input signal in id order: signals [start, start + n). */
static int sym_names(const char *sym, long start, long n, FILE *out)
{
    FILE *f = fopen(sym, "r");
    char line[1024], prev[512] = "";
    long count = 0;
    if (!f) return -1;
    while (fgets(line, sizeof line, f)) {
        long id, w, c;
        char name[512];
        if (sscanf(line, "%ld,%ld,%ld,%511s", &id, &w, &c, name) != 4) continue;
        if (id < start || id >= start + n) continue;
        char *b = strncmp(name, "main.", 5) == 0 ? name + 5 : name;
        /* "x[1][2]" -> "x": the elements of one array are one input */
        size_t len = strlen(b);
        while (len > 0 && b[len - 1] == ']') {
            char *open = strrchr(b, '[');
            if (!open) break;
            *open = '\0';
            len = strlen(b);
        }
        if (count && strcmp(prev, b) == 0) {
            count++;
            continue;
        }
        if (count) fprintf(out, "%s %ld\n", prev, count);
        snprintf(prev, sizeof prev, "%s", b);
        count = 1;
    }
    if (count) fprintf(out, "%s %ld\n", prev, count);
    fclose(f);
    return 0;
}

/* Runs argv, waiting; 0 when it exited 0. */
static pid_t spawn(char *const argv[])
{
    pid_t pid = fork();
    if (pid == 0) {
        execvp(argv[0], argv);
        fprintf(stderr, "cuzk build-witness: cannot run %s: %s%s\n", argv[0], strerror(errno),
                errno == ENOENT ? " (install it: deploy/install-deps.sh installs g++, nasm and libgmp-dev)"
                                : "");
        _exit(127);
    }
    return pid;
}

static int reap(pid_t pid)
{
    int st;
    while (waitpid(pid, &st, 0) < 0)
        if (errno != EINTR) return -1;
    return WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : -1;
}

static void rm_tree(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d) return;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
        char p[PATH_MAX];
        snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
        if (e->d_type == DT_DIR)
            rm_tree(p);
        else
            unlink(p);
    }
    closedir(d);
    rmdir(dir);
}

/* The circuit's base name: the one NAME.dat in dir with a NAME.cpp beside it. */
static int find_base(const char *dir, char *base, size_t len)
{
    DIR *d = opendir(dir);
    if (!d) return -errno;
    struct dirent *e;
    int n = 0;
    while ((e = readdir(d))) {
        size_t l = strlen(e->d_name);
        if (l > 4 && strcmp(e->d_name + l - 4, ".dat") == 0 && l - 4 < len) {
            memcpy(base, e->d_name, l - 4);
            base[l - 4] = '\0';
            n++;
        }
    }
    closedir(d);
    return n == 1 ? 0 : n == 0 ? -ENOENT : -EEXIST;
}

int build_witness_main(int argc, char **argv)
{
    static const struct option opts[] = {
        { "prime", required_argument, NULL, 'p' },
        { "keep", no_argument, NULL, 'k' },
        { "r1cs", required_argument, NULL, 'r' },
        CUZK_OPT_HELP,
        { NULL, 0, NULL, 0 },
    };
    const char *prime = NULL, *r1cs_path = NULL;
    int keep = 0, c;

    optind = 1;
    while ((c = getopt_long(argc, argv, "+h", opts, NULL)) != -1) {
        switch (c) {
        case 'p': prime = optarg; break;
        case 'k': keep = 1; break;
        case 'r': r1cs_path = optarg; break;
        case 'h': cuzk_cmd_usage(&cmd, stdout); return 0;
        default: cuzk_cmd_usage(&cmd, stderr); return CUZK_EXIT_USAGE;
        }
    }
    if (argc - optind != 2) {
        cuzk_cmd_usage(&cmd, stderr);
        return CUZK_EXIT_USAGE;
    }
    if (prime && strcmp(prime, "bn128") && strcmp(prime, "bls12381"))
        return cuzk_cmd_fail(&cmd, CUZK_E_USAGE, "--prime must be bn128 or bls12381, not '%s'", prime);
    const char *out = argv[optind + 1];
    char src[PATH_MAX], base[256], cpp[PATH_MAX + 300], dat[PATH_MAX + 300];
    if (!realpath(argv[optind], src))
        return cuzk_cmd_fail(&cmd, CUZK_E_IO, "%s: %s", argv[optind], strerror(errno));
    if (strpbrk(src, "\"\\\n"))
        return cuzk_cmd_fail(&cmd, CUZK_E_IO, "%s: the path may not contain quotes, backslashes or newlines",
                             src);
    int rc = find_base(src, base, sizeof base);
    if (rc)
        return cuzk_cmd_fail(&cmd, CUZK_E_IO, "%s: %s", argv[optind],
                             rc == -ENOENT
                                 ? "no .dat file: is this the directory circom --c wrote (NAME_cpp/)?"
                                 : rc == -EEXIST ? "more than one .dat file: which circuit?"
                                                 : strerror(-rc));
    snprintf(cpp, sizeof cpp, "%s/%s.cpp", src, base);
    snprintf(dat, sizeof dat, "%s/%s.dat", src, base);
    static const char *const need[] = { "calcwit.cpp", "calcwit.hpp", "circom.hpp",
                                        "fr.cpp",      "fr.hpp",      "fr.asm" };
    if (access(cpp, R_OK)) return cuzk_cmd_fail(&cmd, CUZK_E_IO, "%s: %s", cpp, strerror(errno));
    for (size_t i = 0; i < sizeof need / sizeof *need; i++) {
        char p[PATH_MAX + 32];
        snprintf(p, sizeof p, "%s/%s", src, need[i]);
        if (access(p, R_OK))
            return cuzk_cmd_fail(&cmd, CUZK_E_IO, "%s: %s (not circom --c output?)", p, strerror(errno));
    }
    long start = cpp_number(cpp, "get_main_input_signal_start()"),
         nin = cpp_number(cpp, "get_main_input_signal_no()");
    if (start < 0 || nin < 0)
        return cuzk_cmd_fail(&cmd, CUZK_E_IO,
                             "%s: no get_main_input_signal_start/no: not circom 2 --c output?", cpp);
    /* the circuit fingerprint, from the r1cs (checked against the generator below) */
    uint8_t fp[FP_BYTES] = { 0 };
    int fp_id = -1;
    uint32_t fp_nwires = 0;
    if (r1cs_path) {
        r1cs r;
        char e[1024];
        if ((rc = r1cs_open(&r, r1cs_path, e, sizeof e))) return cuzk_cmd_fail(&cmd, rc, "%s", e);
        rc = fp_of_r1cs(&r, fp, e, sizeof e);
        fp_id = r.Fr->id;
        fp_nwires = r.nwires;
        r1cs_close(&r);
        if (rc) return cuzk_cmd_fail(&cmd, rc, "%s", e);
    }

    /* the build directory */
    const char *tmpdir = getenv("TMPDIR");
    char work[PATH_MAX];
    snprintf(work, sizeof work, "%s/cuzk-wgen-XXXXXX", tmpdir && *tmpdir ? tmpdir : "/tmp");
    if (!mkdtemp(work))
        return cuzk_cmd_fail(&cmd, CUZK_E_INTERNAL, "cannot create a build directory in %s: %s", work,
                             strerror(errno));
    char inc[PATH_MAX + 16];
    snprintf(inc, sizeof inc, "%s/proto", work);
    int bad = mkdir(inc, 0700) != 0;
    bad |= write_text(work, "wgen_abi.cpp", bw_src_abi_cpp) != 0;
    bad |= write_text(inc, "wgen_abi.h", bw_src_abi_h) != 0;
    bad |= write_text(work, "assert.h", bw_src_assert_h) != 0;
    bad |= write_text(work, "wgen.map", "{ global: cuzk_wgen_*; local: *; };\n") != 0;
    /* main input names, if circom wrote the .sym next to CIRCUIT_cpp/ */
    char sym[PATH_MAX + 300], names[PATH_MAX + 16];
    snprintf(sym, sizeof sym, "%s/../%s.sym", src, base);
    snprintf(names, sizeof names, "%s/names.txt", work);
    FILE *nf = fopen(names, "w");
    int have_sym = nf && sym_names(sym, start, nin, nf) == 0;
    bad |= !nf || fclose(nf) != 0;
    char dats[2 * PATH_MAX + 2048];
    snprintf(dats, sizeof dats,
             "    .section .rodata\n"
             "    .balign 64\n"
             "    .globl cuzk_wgen_dat\n    .hidden cuzk_wgen_dat\n"
             "cuzk_wgen_dat:\n    .incbin \"%s\"\n"
             "    .globl cuzk_wgen_dat_end\n    .hidden cuzk_wgen_dat_end\n"
             "cuzk_wgen_dat_end:\n    .byte 0\n"
             /* the names in a section of their own, which cuzkd finds by name in
              * the file without loading it (wgen_names.h) */
             "    .section .cuzk_wgen_names,\"a\",@progbits\n"
             "    .globl cuzk_wgen_names\n    .hidden cuzk_wgen_names\n"
             "cuzk_wgen_names:\n    .incbin \"%s\"\n    .byte 0\n"
             "    .section .rodata\n"
             "    .globl cuzk_wgen_fp\n    .hidden cuzk_wgen_fp\n"
             "cuzk_wgen_fp:\n",
             dat, names);
    /* the fingerprint's 32 bytes, then 1 (built with --r1cs) or 0 */
    for (int i = 0; i <= FP_BYTES; i++) {
        size_t l = strlen(dats);
        snprintf(dats + l, sizeof dats - l, "    .byte %u\n", i < FP_BYTES ? fp[i] : r1cs_path ? 1u : 0u);
    }
    {
        size_t l = strlen(dats);
        snprintf(dats + l, sizeof dats - l, "    .section .note.GNU-stack,\"\",@progbits\n");
    }
    bad |= write_text(work, "dat.S", dats) != 0;
    if (bad) {
        rm_tree(work);
        return cuzk_cmd_fail(&cmd, CUZK_E_INTERNAL, "cannot write into %s: %s", work, strerror(errno));
    }

    /* compile everything at once (six small jobs; circuit.cpp is the long one) */
    const char *cxx = getenv("CXX") && *getenv("CXX") ? getenv("CXX") : "g++";
    const char *nasm = getenv("NASM") && *getenv("NASM") ? getenv("NASM") : "nasm";
    char incw[PATH_MAX + 4], incs[PATH_MAX + 4];
    snprintf(incw, sizeof incw, "-I%s", work);
    snprintf(incs, sizeof incs, "-I%s", src);
    const char *units[] = { cpp, "calcwit.cpp", "fr.cpp", "wgen_abi.cpp", "dat.S" };
    const char *objs[] = { "circuit.o", "calcwit.o", "fr.o", "wgen_abi.o", "dat.o" };
    enum { NU = 5 };
    char inpath[NU][PATH_MAX + 300], opath[NU + 1][PATH_MAX + 32];
    pid_t pids[NU + 1];
    int failed = 0;
    for (int i = 0; i < NU; i++) {
        if (units[i][0] == '/')
            snprintf(inpath[i], sizeof inpath[i], "%s", units[i]);
        else if (i < 3)
            snprintf(inpath[i], sizeof inpath[i], "%s/%s", src, units[i]);
        else
            snprintf(inpath[i], sizeof inpath[i], "%s/%s", work, units[i]);
        snprintf(opath[i], sizeof opath[i], "%s/%s", work, objs[i]);
        /* -w: circom's generated code is not ours to warn about; -O3 as circom's Makefile */
        char *av[] = { (char *)cxx, "-std=c++11", "-O3", "-fPIC", "-fvisibility=hidden",
                       "-w",        incw,         incs,  "-c",    inpath[i],
                       "-o",        opath[i],     NULL };
        if (i == 4) av[1] = "-x", av[2] = "assembler-with-cpp";
        pids[i] = spawn(av);
    }
    char asmin[PATH_MAX + 16];
    snprintf(asmin, sizeof asmin, "%s/fr.asm", src);
    snprintf(opath[NU], sizeof opath[NU], "%s/fr_asm.o", work);
    char *nav[] = { (char *)nasm, "-felf64", asmin, "-o", opath[NU], NULL };
    pids[NU] = spawn(nav);
    for (int i = 0; i <= NU; i++) failed |= pids[i] < 0 || reap(pids[i]) != 0;
    if (failed) {
        if (!keep) rm_tree(work);
        return cuzk_cmd_fail(&cmd, CUZK_E_INTERNAL, "compiling %s failed (the compiler's messages are above)",
                             src);
    }
    char so[PATH_MAX + 16], mapo[PATH_MAX + 64];
    snprintf(so, sizeof so, "%s/out.so", work);
    snprintf(mapo, sizeof mapo, "-Wl,--version-script=%s/wgen.map", work);
    /* -z defs: every symbol resolved now (libgmp, libstdc++), not at dlopen in a stage;
     * -z text: fails if fr.asm ever needed a text relocation */
    char *lav[] = {
        (char *)cxx,  "-shared", "-o",     so,   opath[0],      opath[1],      opath[2],
        opath[3],     opath[4],  opath[5], mapo, "-Wl,-z,defs", "-Wl,-z,text", "-Wl,-z,noexecstack",
        "-Wl,-z,now", "-lgmp",   NULL
    };
    pid_t lp = spawn(lav);
    if (lp < 0 || reap(lp) != 0) {
        if (!keep) rm_tree(work);
        return cuzk_cmd_fail(&cmd, CUZK_E_INTERNAL, "linking %s failed (the linker's messages are above)",
                             so);
    }

    /* load what we built: its ABI, its prime */
    wgen g;
    char err[1024];
    if ((rc = wgen_open(&g, so, err, sizeof err))) {
        if (!keep) rm_tree(work);
        return cuzk_cmd_fail(&cmd, CUZK_E_INTERNAL, "the built generator does not load: %s", err);
    }
    const char *curve = g.Fr->id == FIELD_ID_BN254_FR ? "bn128" : "bls12381";
    unsigned nw = g.d->nwitness, ni = g.d->ninputs;
    int gid = g.Fr->id;
    wgen_close(&g);
    if (r1cs_path && (gid != fp_id || nw != fp_nwires)) {
        if (!keep) rm_tree(work);
        return cuzk_cmd_fail(&cmd, CUZK_E_MISMATCH, "%s is not the r1cs of %s: %s", r1cs_path, argv[optind],
                             gid != fp_id ? "another prime"
                                          : "another number of wires than the generator's witness size");
    }
    if (prime && strcmp(prime, curve)) {
        if (!keep) rm_tree(work);
        return cuzk_cmd_fail(&cmd, CUZK_E_MISMATCH,
                             "%s was compiled by circom for %s, not %s (circom --prime %s)", argv[optind],
                             curve, prime, prime);
    }
    /* publish: copy next to OUT, fsync, rename */
    char tmp[PATH_MAX + 32];
    snprintf(tmp, sizeof tmp, "%s.tmp.%ld", out, (long)getpid());
    int in = open(so, O_RDONLY | O_CLOEXEC),
        fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0755);
    bad = in < 0 || fd < 0;
    char buf[1 << 16];
    ssize_t k;
    while (!bad && (k = read(in, buf, sizeof buf)) != 0) {
        if (k < 0) {
            if (errno == EINTR) continue;
            bad = 1;
            break;
        }
        for (ssize_t o = 0; o < k && !bad;) {
            ssize_t w = write(fd, buf + o, (size_t)(k - o));
            if (w < 0 && errno != EINTR)
                bad = 1;
            else if (w > 0)
                o += w;
        }
    }
    int saved = errno;
    /* 0755 whatever the umask: cuzkd refuses a generator others can rewrite */
    if (!bad && fchmod(fd, 0755) != 0) bad = 1, saved = errno;
    if (!bad && fsync(fd) != 0) bad = 1, saved = errno;
    if (in >= 0) close(in);
    if (fd >= 0 && close(fd) != 0 && !bad) bad = 1, saved = errno;
    if (!bad && rename(tmp, out) != 0) bad = 1, saved = errno;
    if (bad) {
        if (fd >= 0) unlink(tmp);
        if (!keep) rm_tree(work);
        return cuzk_cmd_fail(&cmd, CUZK_E_OUTPUT, "cannot write %s: %s", out, strerror(saved));
    }
    if (keep)
        fprintf(stderr, "cuzk build-witness: build directory kept: %s\n", work);
    else
        rm_tree(work);
    char hex[FP_HEX];
    fp_hex(fp, hex);
    hex[16] = '\0';
    printf("%s: %s circuit %s, %u witness values, %u input values, %s%s%s\n", out, curve, base, nw, ni,
           r1cs_path ? "circuit fingerprint " : "", r1cs_path ? hex : "no circuit fingerprint (no --r1cs)",
           have_sym ? "" : " (no .sym: missing inputs are named by signal number)");
    return 0;
}
