/* error.h — the project's error codes where errno has no word for it.
 *
 * Library functions return 0 or a negative code (-CUZK_E_* or -errno) and write a
 * sentence a person can act on into a caller's buffer. The positive values double as
 * the documented exit codes of `cuzk prove-local` (README, "Exit codes"). */
#ifndef CUZK_ERROR_H
#define CUZK_ERROR_H

enum cuzk_err {
    CUZK_OK = 0,
    CUZK_E_USAGE = 2,       /* bad command line */
    CUZK_E_IO = 3,          /* input file missing or unreadable */
    CUZK_E_FORMAT = 4,      /* not a zkey/wtns/r1cs (bad magic, bad section table) */
    CUZK_E_TRUNCATED = 5,   /* file shorter than its own headers say */
    CUZK_E_UNSUPPORTED = 6, /* protocol (PLONK, FFLONK) or curve we do not prove */
    CUZK_E_MISMATCH = 7,    /* witness and zkey (or r1cs) do not belong together */
    CUZK_E_UNSATISFIED = 8, /* witness does not satisfy a constraint */
    CUZK_E_OUTPUT = 9,      /* output not writable */
    CUZK_E_INTERNAL = 10,   /* a bug or resource failure (out of memory) */
    CUZK_E_DEVICE = 11,     /* a sticky GPU error: the CUDA context is unusable, the worker
                             * exits and is restarted (never a prove-local exit code) */
};

/* A short name for the code ("truncated", "unsupported", ...). */
const char *cuzk_err_name(int code);

#endif
