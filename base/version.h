/* version.h — the release every binary reports with --version. */
#ifndef CUZK_VERSION_H
#define CUZK_VERSION_H

/* The version of debian/changelog's first entry (the Makefile passes it to
 * base/version.c), so `cuzk --version` and `dpkg -s cuzk` always agree. */
const char *cuzk_version(void);

#endif
