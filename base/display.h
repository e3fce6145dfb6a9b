/* display.h — names and paths made safe to show on a terminal or in a log
 * (base/display.c).
 *
 * Job, file and zkey names come from clients (and fleet rows from whoever writes the
 * tables). Shown raw, a C0 or C1 control character (ESC sequences, U+0085 NEL) or a
 * bidirectional override (U+202E RLO shows "exe.txt" for "txt.exe") makes a log line or
 * `cuzk status` say something else than what is there. display_escape writes such
 * characters as \xNN (a byte that is no valid UTF-8, and C0/DEL) or \uXXXX (C1, the
 * bidi and zero-width format characters), and a backslash as \\; everything else,
 * including other UTF-8 text, is kept.
 */
#ifndef CUZK_DISPLAY_H
#define CUZK_DISPLAY_H

#include <stddef.h>

/* in escaped into out (always NUL-terminated when outlen > 0, cut short if need be);
 * returns out. */
char *display_escape(char *out, size_t outlen, const char *in);

#endif
