/* token_cmd.c — `cuzk token NAME` (token_cmd.h). The token is 32 bytes of getrandom
 * in hex; the file keeps only its SHA-256, so a leaked tokens file proves nothing. */
#include "tools/token_cmd.h"

#include <ctype.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>

#include <openssl/evp.h>

#include "base/error.h"

static const char usage[] =
    "usage: cuzk token NAME [PRIORITY-CAP [MAX-RUNNING-JOBS [MAX-BODY-BYTES [MAX-REQUESTS]]]]\n"
    "  prints a new bearer token for the HTTP API (cuzk-api), then its line\n"
    "  for the --api-tokens file (NAME SHA256HEX [limits]; - leaves one unset).\n"
    "  NAME: 1 to 64 of A-Z a-z 0-9 . _ -\n";

static bool name_valid(const char *s)
{
    size_t n = strlen(s);

    if (!n || n > 64) return 0;
    for (; *s; s++)
        if (!isalnum((unsigned char)*s) && *s != '.' && *s != '_' && *s != '-') return 0;
    return 1;
}

static bool limit_valid(const char *s)
{
    size_t n = strspn(s, "0123456789");

    return !strcmp(s, "-") || (n && (!s[n] || (strchr("KMG", s[n]) && !s[n + 1])));
}

int token_cmd_main(int argc, char **argv)
{
    unsigned char raw[32], h[32];
    char tok[65], hex[65];
    unsigned hl = 0;

    if (argc >= 2 && !strcmp(argv[1], "--help")) {
        fputs(usage, stdout);
        return CUZK_EXIT_OK;
    }
    if (argc < 2 || argc > 6 || !name_valid(argv[1])) {
        fputs(usage, stderr);
        return CUZK_EXIT_USAGE;
    }
    for (int i = 2; i < argc; i++)
        if (!limit_valid(argv[i])) {
            fprintf(stderr, "cuzk token: %s: a limit is a whole number (K, M, G for bytes) or -\n", argv[i]);
            return CUZK_EXIT_USAGE;
        }
    if (getrandom(raw, sizeof(raw), 0) != (ssize_t)sizeof(raw)) {
        perror("cuzk token: getrandom");
        return CUZK_EXIT_INTERNAL;
    }
    for (int i = 0; i < 32; i++) snprintf(tok + 2 * i, 3, "%02x", raw[i]);
    if (!EVP_Digest(tok, 64, h, &hl, EVP_sha256(), NULL)) return CUZK_EXIT_INTERNAL;
    for (int i = 0; i < 32; i++) snprintf(hex + 2 * i, 3, "%02x", h[i]);
    printf("%s\n%s %s", tok, argv[1], hex);
    for (int i = 2; i < argc; i++) printf(" %s", argv[i]);
    putchar('\n');
    return CUZK_EXIT_OK;
}
