/* spooled.h — proof files (NAME.proof.json, NAME.public.json) that a finalizer wrote
 * into a spool directory of cuzkd's own, read back for a table and removed: the
 * fleet's --store-proofs (spool.h) and the jobs that keep their results in the
 * job store (supervisor/results.c). Every name is opened beneath the directory's
 * descriptor, never through a link. */
#ifndef CUZK_SPOOLED_H
#define CUZK_SPOOLED_H

#include <stddef.h>

/* A spooled proof file, read for a table: at most cap bytes, a regular file not
 * reached through a link, no NUL byte (a text column). malloc'd text, or NULL with the
 * reason in why. */
char *spooled_read(int sfd, const char *name, size_t cap, char *why, size_t whylen);

/* Remove the spooled proof files (*.proof.json, *.public.json) in the dir sfd. */
void spooled_clean(int sfd);

#endif
