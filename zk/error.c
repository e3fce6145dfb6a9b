/* error.c — names for the project's error codes. */
#include "cuzk/error.h"

const char *cuzk_err_name(int code)
{
    if (code < 0) code = -code;
    switch (code) {
    case CUZK_OK: return "ok";
    case CUZK_E_USAGE: return "usage";
    case CUZK_E_IO: return "io";
    case CUZK_E_FORMAT: return "format";
    case CUZK_E_TRUNCATED: return "truncated";
    case CUZK_E_UNSUPPORTED: return "unsupported";
    case CUZK_E_MISMATCH: return "mismatch";
    case CUZK_E_UNSATISFIED: return "unsatisfied";
    case CUZK_E_OUTPUT: return "output";
    case CUZK_E_INTERNAL: return "internal";
    case CUZK_E_DEVICE: return "device";
    default: return "unknown";
    }
}
