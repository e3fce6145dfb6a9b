/* error.c — the error codes' names and messages, and the exit-code table (error.h). */
#include "base/error.h"

#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Indexed by code - CUZK_E_BASE; the exit code a tool reports it with. */
static const struct {
    const char *name, *msg;
    int tool_exit;
} own[CUZK_E_END - CUZK_E_BASE] = {
    [CUZK_E_USAGE - CUZK_E_BASE] = { "usage", "bad command line", CUZK_EXIT_USAGE },
    [CUZK_E_IO - CUZK_E_BASE] = { "io", "input file missing or unreadable", CUZK_EXIT_IO },
    [CUZK_E_FORMAT - CUZK_E_BASE] = { "format", "not a file of the expected format", CUZK_EXIT_FORMAT },
    [CUZK_E_TRUNCATED -
        CUZK_E_BASE] = { "truncated", "file shorter than its own headers say", CUZK_EXIT_TRUNCATED },
    [CUZK_E_UNSUPPORTED -
        CUZK_E_BASE] = { "unsupported", "unsupported protocol, curve or prime", CUZK_EXIT_UNSUPPORTED },
    [CUZK_E_MISMATCH - CUZK_E_BASE] = { "mismatch",
                                        "inputs that do not belong together (witness, generator, "
                                        "zkey, r1cs)",
                                        CUZK_EXIT_MISMATCH },
    [CUZK_E_UNSATISFIED -
        CUZK_E_BASE] = { "unsatisfied", "witness does not satisfy the circuit", CUZK_EXIT_UNSATISFIED },
    [CUZK_E_OUTPUT - CUZK_E_BASE] = { "output", "output not writable", CUZK_EXIT_OUTPUT },
    [CUZK_E_INTERNAL -
        CUZK_E_BASE] = { "internal", "internal error (out of memory, or a bug)", CUZK_EXIT_INTERNAL },
    [CUZK_E_DEVICE -
        CUZK_E_BASE] = { "device", "GPU fault: the CUDA context is unusable", CUZK_EXIT_INTERNAL },
    [CUZK_E_DEVICE_NOMEM - CUZK_E_BASE] = { "device_nomem", "out of device memory", CUZK_EXIT_INTERNAL },
};

/* rc's name (msg false) or message (msg true), for either kind of code. */
static const char *describe(int rc, bool msg)
{
    int c = rc < 0 ? -rc : rc;
    if (c == 0) return msg ? "success" : "ok";
    if (cuzk_err_is_cuzk(c)) return msg ? own[c - CUZK_E_BASE].msg : own[c - CUZK_E_BASE].name;
    /* strerrordesc_np: the static text, never the "Unknown error N" buffer strerror
     * may write per thread */
    const char *s = c >= CUZK_E_BASE ? NULL : msg ? strerrordesc_np(c) : strerrorname_np(c);
    return s ? s : msg ? "unknown error" : "unknown";
}

const char *cuzk_err_name(int rc)
{
    return describe(rc, false);
}

const char *cuzk_strerror(int rc)
{
    return describe(rc, true);
}

/* The exit codes. `cuzk help exit-codes --markdown` prints this as docs/usage.md's table;
 * each --help prints its own rows of it. */
const struct cuzk_exit_row cuzk_exit_table[] = {
    { CUZK_EXIT_OK, CUZK_PROG_ALL, "ok",
      "success; cuzkd and the stages: stopped by SIGTERM, SIGINT or `cuzk shutdown`" },
    { CUZK_EXIT_FALSE, CUZK_PROG_TOOL, "false",
      "`cuzk verify`: the proof is invalid (it prints \"invalid proof\", the reason on stderr)" },
    { CUZK_EXIT_FALSE, CUZK_PROG_CUZKD, "false", "`--check` found a failure" },
    { CUZK_EXIT_USAGE, CUZK_PROG_ALL, "usage",
      "bad command line or configuration (the message names the option)" },
    { CUZK_EXIT_IO, CUZK_PROG_TOOL, "io",
      "an input file missing or unreadable (zkey, witness, r1cs, generator, circom output)" },
    { CUZK_EXIT_IO, CUZK_PROG_CUZKD, "io",
      "the run directory, socket, segments, metrics port, job store or fleet database cannot be set up "
      "(also a store file refused as corrupt or newer)" },
    { CUZK_EXIT_FORMAT, CUZK_PROG_TOOL, "format",
      "not a zkey / wtns / r1cs / generator (bad magic or section table); input.json not JSON or a value "
      "not a field element; malformed `cuzk verify` input" },
    { CUZK_EXIT_TRUNCATED, CUZK_PROG_TOOL, "truncated", "a file shorter than its own headers say" },
    { CUZK_EXIT_UNSUPPORTED, CUZK_PROG_TOOL, "unsupported",
      "a protocol (PLONK, FFLONK), curve or prime not proved, or a circuit too big for its curve" },
    { CUZK_EXIT_MISMATCH, CUZK_PROG_TOOL, "mismatch",
      "witness and zkey (or r1cs) do not belong together; with a generator: it is for another curve or "
      "circuit, or a signal is missing, unknown or of the wrong length; build-witness: `--prime` (or the "
      "r1cs) is not what circom compiled for" },
    { CUZK_EXIT_UNSATISFIED, CUZK_PROG_TOOL, "unsatisfied",
      "the witness does not satisfy a constraint (`--r1cs`), a circom assert failed, or the proof failed "
      "verification" },
    { CUZK_EXIT_OUTPUT, CUZK_PROG_TOOL | CUZK_PROG_CLIENT, "output",
      "output not writable (no partial file is left under the final name); `cuzk fetch`: a file there "
      "already (another file, a link) is never replaced" },
    { CUZK_EXIT_INTERNAL, CUZK_PROG_TOOL | CUZK_PROG_CLIENT | CUZK_PROG_CUZKD, "internal",
      "internal error (out of memory, a compiler that failed or is missing, a bug)" },
    { CUZK_EXIT_NO_DAEMON, CUZK_PROG_CLIENT, "no_daemon",
      "no cuzkd answers on the socket (the instance is not running); `--queue`: the database is unreachable" },
    { CUZK_EXIT_REFUSED, CUZK_PROG_CLIENT, "refused",
      "cuzkd refused the request, the message says why (also an input checked before submitting, such as a "
      "`--witness-gen` that does not fit the zkey)" },
    { CUZK_EXIT_JOB_FAILED, CUZK_PROG_CLIENT, "job_failed", "the job finished with failed partitions" },
    { CUZK_EXIT_TIMEOUT, CUZK_PROG_CLIENT, "timeout", "`wait --timeout-ms` passed before the job finished" },
    { CUZK_EXIT_QUOTA, CUZK_PROG_CLIENT, "quota",
      "refused for a quota of this user (`--quota-jobs`, `-partitions`, `-preloads`): retry later" },
    { CUZK_EXIT_BUG, CUZK_PROG_STAGE, "bug", "a bug (an internal error); cuzkd restarts the stage" },
    { CUZK_EXIT_SYSTEM, CUZK_PROG_STAGE, "system",
      "a system error (a segment, a file, no CUDA device, a GPU fault); cuzkd restarts the stage" },
};
const size_t cuzk_exit_table_len = sizeof cuzk_exit_table / sizeof cuzk_exit_table[0];

/* errno -> the CUZK_E_* a tool would have said: files it cannot open are inputs, a
 * full or read-only disk is the output, the rest (ENOMEM, EINVAL) internal. */
static int tool_errno(int e)
{
    switch (e) {
    case ENOENT:
    case EACCES:
    case EPERM:
    case ENOTDIR:
    case EISDIR:
    case ELOOP:
    case ENAMETOOLONG:
    case ENXIO: return CUZK_EXIT_IO;
    case ENOSPC:
    case EDQUOT:
    case EROFS:
    case EFBIG: return CUZK_EXIT_OUTPUT;
    default: return CUZK_EXIT_INTERNAL;
    }
}

int cuzk_exit_code(int rc, unsigned prog)
{
    int c = rc < 0 ? -rc : rc;
    if (c == 0) return CUZK_EXIT_OK;
    if (c == CUZK_E_USAGE) return CUZK_EXIT_USAGE;
    bool own_code = cuzk_err_is_cuzk(c);
    switch (prog) {
    case CUZK_PROG_CLIENT:
        /* A connection no one takes (a socket without cuzkd, a database server that
         * is down) is "nobody answers"; everything else, a local check before
         * submitting included, reads as a refusal (a missing job is -ENOENT: refused). */
        if (!own_code && (c == ECONNREFUSED || c == ECONNRESET || c == EPIPE || c == ENOTCONN))
            return CUZK_EXIT_NO_DAEMON;
        if (c == ENOMEM || c == CUZK_E_INTERNAL) return CUZK_EXIT_INTERNAL;
        return CUZK_EXIT_REFUSED;
    case CUZK_PROG_CUZKD: return c == CUZK_E_INTERNAL || c == ENOMEM ? CUZK_EXIT_INTERNAL : CUZK_EXIT_IO;
    case CUZK_PROG_STAGE:
        /* s6 style: 100 a bug, 111 anything the system did (a device fault included). */
        return c == CUZK_E_INTERNAL ? CUZK_EXIT_BUG : CUZK_EXIT_SYSTEM;
    default: return own_code ? own[c - CUZK_E_BASE].tool_exit : tool_errno(c);
    }
}

static bool wanted(int code, const int *only)
{
    if (!only) return true;
    for (; *only >= 0; only++)
        if (*only == code) return true;
    return false;
}

/* `text` without the Markdown backquotes (a --help is read in a terminal). */
static size_t plain(char *out, size_t cap, const char *text)
{
    size_t n = 0;
    for (; *text && n + 1 < cap; text++)
        if (*text != '`') out[n++] = *text;
    out[n] = 0;
    return n;
}

/* "tools, cuzkd" for a row's progs; "all" for every kind. */
static const char *prog_names(unsigned progs, char *buf, size_t len)
{
    static const char *const names[] = { "tools", "client", "cuzkd", "stages" };
    size_t n = 0;
    if (progs == CUZK_PROG_ALL) return "all";
    buf[0] = 0;
    for (unsigned b = 0; b < 4; b++)
        if (progs & (1u << b))
            n += (size_t)snprintf(buf + n, n < len ? len - n : 0, "%s%s", n ? ", " : "", names[b]);
    return buf;
}

void cuzk_exit_help_titled(FILE *f, const char *title, unsigned prog, const int *only)
{
    enum { WIDTH = 88, INDENT = 7 };
    bool several = prog & (prog - 1); /* more than one bit */
    fprintf(f, "%s\n", title);
    for (size_t i = 0; i < cuzk_exit_table_len; i++) {
        const struct cuzk_exit_row *r = &cuzk_exit_table[i];
        if (!(r->progs & prog) || !wanted(r->code, only)) continue;
        char text[600];
        size_t n = 0, col = INDENT, at = 0;
        char who[64];
        if (several && (r->progs & prog) != prog)
            n = (size_t)snprintf(text, sizeof text, "[%s] ", prog_names(r->progs, who, sizeof who));
        n += plain(text + n, sizeof text - n, r->meaning);
        fprintf(f, "  %3d  ", r->code);
        /* words, wrapped at WIDTH under the first one */
        while (at < n) {
            size_t w = strcspn(text + at, " ");
            if (col > INDENT && col + 1 + w > WIDTH) {
                fprintf(f, "\n%*s", INDENT, "");
                col = INDENT;
            } else if (col > INDENT) {
                fputc(' ', f);
                col++;
            }
            fwrite(text + at, 1, w, f);
            col += w;
            at += w;
            while (text[at] == ' ') at++;
        }
        fputc('\n', f);
    }
}

void cuzk_exit_help(FILE *f, unsigned prog, const int *only)
{
    cuzk_exit_help_titled(f, "exit codes:", prog, only);
}

const int cuzk_exit_codes_prove[] = { 0, 2, 3, 4, 5, 6, 7, 8, 9, 10, -1 };

void cuzk_usage(FILE *f, const char *text, unsigned prog, const int *only)
{
    fputs(text, f);
    cuzk_exit_help(f, prog, only);
}

void cuzk_cmd_usage(const struct cuzk_cmd *c, FILE *f)
{
    cuzk_usage(f, c->usage, CUZK_PROG_TOOL, c->codes);
}

int cuzk_cmd_fail(const struct cuzk_cmd *c, int rc, const char *fmt, ...)
{
    char msg[8192];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    /* one write: the line is not cut by another thread's */
    fprintf(stderr, "%s: %s\n", c->name, msg);
    return cuzk_exit_code(rc, CUZK_PROG_TOOL);
}

int cuzk_cmd_number(const struct cuzk_cmd *c, const char *opt, const char *s, unsigned long long max,
                    unsigned long long *out)
{
    char *end;

    errno = 0;
    *out = strtoull(s, &end, 10);
    if (!*s || *end || errno || *out > max) return cuzk_cmd_fail(c, CUZK_E_USAGE, "%s needs a number", opt);
    return 0;
}

int cuzk_cmd_threads(const struct cuzk_cmd *c, const char *s, unsigned *threads)
{
    unsigned long long v;
    int code = cuzk_cmd_number(c, "--threads", s, UINT_MAX, &v);

    if (!code) *threads = (unsigned)v;
    return code;
}

int cuzk_cmd_other_option(const struct cuzk_cmd *c, int opt)
{
    if (opt == 'h') {
        cuzk_cmd_usage(c, stdout);
        return 0;
    }
    cuzk_cmd_usage(c, stderr);
    return cuzk_cmd_fail(c, CUZK_E_USAGE, "%s", optopt ? "unknown or incomplete option" : "unknown option");
}

void cuzk_exit_markdown(FILE *f)
{
    fputs("| code | name | for | meaning |\n|---|---|---|---|\n", f);
    for (size_t i = 0; i < cuzk_exit_table_len; i++) {
        const struct cuzk_exit_row *r = &cuzk_exit_table[i];
        char who[64];
        fprintf(f, "| %d | %s | %s | %s |\n", r->code, r->name, prog_names(r->progs, who, sizeof who),
                r->meaning);
    }
}
