/* error.h — the project's one error space and its one table of exit codes.
 *
 * Errors. A function returns 0 or a negative code: -errno where errno has the word
 * (-ENOMEM, -ENOENT), or -CUZK_E_* where it has none (a truncated zkey, a witness of
 * another circuit). The CUZK_E_* values start at CUZK_E_BASE (4096), above every errno
 * Linux defines (4095 is the kernel's MAX_ERRNO), so the two never meet:
 * cuzk_err_is_cuzk() tells them apart, and -CUZK_E_DEVICE is not -EAGAIN. Such a
 * function also writes a sentence a person can act on into the caller's buffer;
 * cuzk_strerror() names the code alone, for either kind.
 *
 * Exit codes. Every binary exits with a code of cuzk_exit_table (base/error.c), the one
 * place they are written down: `--help` prints them from there (cuzk_exit_help), and
 * docs/usage.md's "Exit codes" table is generated from it (`cuzk help exit-codes
 * --markdown`; test_error checks that the two agree). cuzk_exit_code() turns an error
 * into the exit code of the kind of program that met it. */
#ifndef CUZK_ERROR_H
#define CUZK_ERROR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#define CUZK_E_BASE 4096

enum cuzk_err {
    CUZK_OK = 0,
    CUZK_E_USAGE = CUZK_E_BASE, /* bad command line */
    CUZK_E_IO,                  /* input file missing or unreadable */
    CUZK_E_FORMAT,              /* not a zkey/wtns/r1cs (bad magic, bad section table) */
    CUZK_E_TRUNCATED,           /* file shorter than its own headers say */
    CUZK_E_UNSUPPORTED,         /* protocol (PLONK, FFLONK) or curve we do not prove */
    CUZK_E_MISMATCH,            /* witness and zkey (or r1cs) do not belong together */
    CUZK_E_UNSATISFIED,         /* witness does not satisfy a constraint */
    CUZK_E_OUTPUT,              /* output not writable */
    CUZK_E_INTERNAL,            /* a bug or resource failure (out of host memory) */
    CUZK_E_DEVICE,              /* a sticky GPU error: the CUDA context is unusable, the
                                 * worker exits and is restarted */
    CUZK_E_DEVICE_NOMEM,        /* out of device memory (cudaErrorMemoryAllocation): the
                                 * context is still good; free something and retry */
    CUZK_E_END                  /* one past the last */
};

/* Is rc (either sign) one of ours rather than an errno? */
static inline bool cuzk_err_is_cuzk(int rc)
{
    int c = rc < 0 ? -rc : rc;
    return c >= CUZK_E_BASE && c < CUZK_E_END;
}

/* A short name for the code, either sign: "truncated", "device_nomem"; for an errno
 * its symbol ("ENOENT"); "ok" for 0; "unknown" for anything else. */
const char *cuzk_err_name(int rc);

/* What the code means, either sign: ours from the table in error.c, an errno's from
 * strerror. Never NULL; a static string (an unknown code: "unknown error"). */
const char *cuzk_strerror(int rc);

/* The exit codes, all of them. The numbers are an interface (scripts and tests read
 * them): never renumber one. */
enum cuzk_exit {
    CUZK_EXIT_OK = 0,
    CUZK_EXIT_FALSE = 1, /* a clean "no": cuzk verify's invalid proof, cuzkd --check's failure */
    CUZK_EXIT_USAGE = 2,
    CUZK_EXIT_IO = 3, /* tools: unreadable input; cuzkd: cannot set up its run dir, store... */
    CUZK_EXIT_FORMAT = 4,
    CUZK_EXIT_TRUNCATED = 5,
    CUZK_EXIT_UNSUPPORTED = 6,
    CUZK_EXIT_MISMATCH = 7,
    CUZK_EXIT_UNSATISFIED = 8,
    CUZK_EXIT_OUTPUT = 9,
    CUZK_EXIT_INTERNAL = 10,
    CUZK_EXIT_NO_DAEMON = 20,  /* no cuzkd answers on the socket */
    CUZK_EXIT_REFUSED = 21,    /* cuzkd replied with an error */
    CUZK_EXIT_JOB_FAILED = 22, /* the job finished with failed partitions */
    CUZK_EXIT_TIMEOUT = 23,    /* wait --timeout passed before the job finished */
    CUZK_EXIT_QUOTA = 24,      /* refused: this uid is at a quota (--quota-*); retry later */
    CUZK_EXIT_BUG = 100,       /* a stage: a bug (s6 style) */
    CUZK_EXIT_SYSTEM = 111,    /* a stage: a system error, cuzkd restarts it (s6 style) */
};

/* The kinds of program, each with its own exit codes (a bit mask in the table). */
enum cuzk_prog {
    CUZK_PROG_TOOL = 1u << 0,   /* cuzk's commands without a daemon: prove-local, verify,
                                 * witness, build-witness, fingerprint, test-setup;
                                 * cuzk-gpuworker prove */
    CUZK_PROG_CLIENT = 1u << 1, /* cuzk's daemon commands (prove, status, wait, ...,
                                 * --queue), cuzk-top */
    CUZK_PROG_CUZKD = 1u << 2,  /* the daemon */
    CUZK_PROG_STAGE = 1u << 3,  /* cuzk-synth, cuzk-gpuworker, cuzk-finalizer */
    CUZK_PROG_ALL = 0xfu,
};

/* One documented exit code. A code may have a row per kind of program when it means
 * something else there (3 is an unreadable input to a tool, a run directory that
 * cannot be set up to cuzkd). */
struct cuzk_exit_row {
    int code;
    unsigned progs; /* enum cuzk_prog bits */
    const char *name;
    const char *meaning;
};
extern const struct cuzk_exit_row cuzk_exit_table[];
extern const size_t cuzk_exit_table_len;

/* The exit code with which a program of kind prog (one CUZK_PROG_* bit) reports rc:
 * 0 -> 0; -CUZK_E_* -> its code; -errno -> the code of its nearest CUZK_E_* (ENOMEM
 * is internal, EACCES an unreadable input, ENOSPC an unwritable output for a tool;
 * a refused connection is "no cuzkd answers" for the client). Always a code of the
 * table for that kind. */
int cuzk_exit_code(int rc, unsigned prog);

/* The "exit codes:" part of a --help text: the rows for prog (CUZK_PROG_* bits),
 * limited to the codes in `only` (ends with -1; NULL: every row for prog), one per
 * line, wrapped, under the title "exit codes:". With more than one kind in prog, a
 * row for some kinds only names them ("[cuzkd]"). */
void cuzk_exit_help(FILE *f, unsigned prog, const int *only);
void cuzk_exit_help_titled(FILE *f, const char *title, unsigned prog, const int *only);

/* The exit codes of a command that proves one witness without the daemon (cuzk
 * prove-local, cuzk-gpuworker prove), for `only` above. Ends with -1. */
extern const int cuzk_exit_codes_prove[];

/* A command's whole --help: its usage text, then cuzk_exit_help(f, prog, only). */
void cuzk_usage(FILE *f, const char *text, unsigned prog, const int *only);

/* A tool's command (cuzk verify, cuzk prove-local, cuzk-gpuworker prove, ...) as its
 * --help and its messages name it: what its messages begin with, its usage text, and
 * the exit codes its --help lists (cuzk_usage's `only`: ends with -1). */
struct cuzk_cmd {
    const char *name; /* "cuzk verify" */
    const char *usage;
    const int *codes;
};

/* The command's whole --help (cuzk_usage, CUZK_PROG_TOOL). */
void cuzk_cmd_usage(const struct cuzk_cmd *c, FILE *f);

/* "NAME: MESSAGE" on stderr; returns the exit code of rc (a CUZK_E_* of either sign or
 * -errno) for a tool, cuzk_exit_code(rc, CUZK_PROG_TOOL). */
int cuzk_cmd_fail(const struct cuzk_cmd *c, int rc, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* The decimal number s of option opt ("--threads"), the whole of s and at most max, into
 * *out: 0, or the exit code of the usage error "OPT needs a number" (cuzk_cmd_fail). */
int cuzk_cmd_number(const struct cuzk_cmd *c, const char *opt, const char *s, unsigned long long max,
                    unsigned long long *out);

/* The options spelled alike in every command's getopt_long table (getopt.h): --help,
 * answered by cuzk_cmd_other_option, and --threads N, read by cuzk_cmd_threads. */
/* clang-format off */
#define CUZK_OPT_HELP    { "help", no_argument, NULL, 'h' }
#define CUZK_OPT_THREADS { "threads", required_argument, NULL, 't' }
/* clang-format on */

/* --threads N as every command takes it (cuzk_cmd_number, at most UINT_MAX; 0: all
 * online CPUs, the command's own default): 0 and *threads set, or the usage error's
 * exit code. */
int cuzk_cmd_threads(const struct cuzk_cmd *c, const char *s, unsigned *threads);

/* The end of a command's option switch (getopt_long with opterr 0): --help ('h')
 * prints the usage on stdout and returns 0; any other answer of getopt's (an unknown
 * option, one without its value) prints the usage on stderr and returns the usage
 * error's exit code, "unknown option" or "unknown or incomplete option" (optopt). */
int cuzk_cmd_other_option(const struct cuzk_cmd *c, int opt);

/* The whole table as docs/usage.md's Markdown table (code | for | meaning). */
void cuzk_exit_markdown(FILE *f);

#endif
