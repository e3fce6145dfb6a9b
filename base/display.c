/* display.c — escaping for display (display.h). */
#include "base/display.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

/* Length of the valid UTF-8 sequence at p (1-4) and its code point, or 0. */
static int utf8(const unsigned char *p, uint32_t *cp)
{
    if (p[0] < 0x80) {
        *cp = p[0];
        return 1;
    }
    if (p[0] >= 0xc2 && p[0] <= 0xdf && (p[1] & 0xc0) == 0x80) {
        *cp = (uint32_t)(p[0] & 0x1f) << 6 | (p[1] & 0x3f);
        return 2;
    }
    if (p[0] >= 0xe0 && p[0] <= 0xef && (p[1] & 0xc0) == 0x80 && (p[2] & 0xc0) == 0x80) {
        *cp = (uint32_t)(p[0] & 0x0f) << 12 | (uint32_t)(p[1] & 0x3f) << 6 | (p[2] & 0x3f);
        return *cp >= 0x800 && (*cp < 0xd800 || *cp > 0xdfff) ? 3 : 0;
    }
    if (p[0] >= 0xf0 && p[0] <= 0xf4 && (p[1] & 0xc0) == 0x80 && (p[2] & 0xc0) == 0x80 &&
        (p[3] & 0xc0) == 0x80) {
        *cp = (uint32_t)(p[0] & 0x07) << 18 | (uint32_t)(p[1] & 0x3f) << 12 | (uint32_t)(p[2] & 0x3f) << 6 |
            (p[3] & 0x3f);
        return *cp >= 0x10000 && *cp <= 0x10ffff ? 4 : 0;
    }
    return 0;
}

/* Code points that change how a line reads without being seen: C1 controls, the
 * bidi marks, embeddings, overrides and isolates, zero-width ones, the BOM. */
static int hidden(uint32_t cp)
{
    return (cp >= 0x80 && cp <= 0x9f) || (cp >= 0x200b && cp <= 0x200f) || (cp >= 0x202a && cp <= 0x202e) ||
        (cp >= 0x2060 && cp <= 0x2069) || cp == 0xfeff;
}

char *display_escape(char *out, size_t outlen, const char *in)
{
    const unsigned char *p = (const unsigned char *)in;
    size_t o = 0;

    if (!outlen) return out;
    while (*p) {
        char tmp[16];
        uint32_t cp = 0;
        int n = utf8(p, &cp);
        size_t len;

        if (n == 0 || (n == 1 && (cp < 0x20 || cp == 0x7f)))
            len = (size_t)snprintf(tmp, sizeof(tmp), "\\x%02x", p[0]), n = 1;
        else if (hidden(cp))
            len = (size_t)snprintf(tmp, sizeof(tmp), "\\u%04x", (unsigned)cp);
        else if (cp == '\\')
            len = 2, memcpy(tmp, "\\\\", 2);
        else
            len = (size_t)n, memcpy(tmp, p, (size_t)n);
        if (o + len >= outlen) break;
        memcpy(out + o, tmp, len);
        o += len;
        p += n;
    }
    out[o] = '\0';
    return out;
}
