/* version.c — the release string (version.h). */
#include "base/version.h"

#ifndef CUZK_VERSION
#error "CUZK_VERSION is set by the Makefile from debian/changelog"
#endif

const char *cuzk_version(void)
{
    return CUZK_VERSION;
}
