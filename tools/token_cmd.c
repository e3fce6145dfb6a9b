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
    "usage: cuzk token [--callback-hosts HOST[:PORT],...] NAME [PRIORITY-CAP [MAX-RUNNING-JOBS\n"
    "                  [MAX-BODY-BYTES [MAX-REQUESTS]]]]\n"
    "  prints a new bearer token for the HTTP API (cuzk-api), then its line\n"
    "  for the --api-tokens file (NAME SHA256HEX [limits]; - leaves one unset).\n"
    "  With --callback-hosts (http://HOST for plain HTTP): a second line, the secret\n"
    "  the tenant's callbacks are signed with, and the file's line allows those hosts\n"
    "  and holds the secret (keep the file readable by root and cuzk only).\n"
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

    const char *cb_hosts = NULL;
    char secret[65] = "";

    if (argc >= 2 && !strcmp(argv[1], "--help")) {
        fputs(usage, stdout);
        return CUZK_EXIT_OK;
    }
    if (argc >= 3 && !strcmp(argv[1], "--callback-hosts")) {
        cb_hosts = argv[2];
        if (!*cb_hosts || strlen(cb_hosts) > 512 || strpbrk(cb_hosts, " \t#=")) {
            fprintf(stderr, "cuzk token: --callback-hosts %s: HOST[:PORT],... (no blanks, #, =)\n", cb_hosts);
            return CUZK_EXIT_USAGE;
        }
        argv += 2, argc -= 2;
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
    if (cb_hosts) { /* the callbacks' signing secret: 32 more bytes of getrandom */
        if (getrandom(raw, sizeof(raw), 0) != (ssize_t)sizeof(raw)) {
            perror("cuzk token: getrandom");
            return CUZK_EXIT_INTERNAL;
        }
        for (int i = 0; i < 32; i++) snprintf(secret + 2 * i, 3, "%02x", raw[i]);
    }
    if (!EVP_Digest(tok, 64, h, &hl, EVP_sha256(), NULL)) return CUZK_EXIT_INTERNAL;
    for (int i = 0; i < 32; i++) snprintf(hex + 2 * i, 3, "%02x", h[i]);
    printf("%s\n", tok);
    if (cb_hosts) printf("%s\n", secret);
    printf("%s %s", argv[1], hex);
    for (int i = 2; i < argc; i++) printf(" %s", argv[i]);
    if (cb_hosts) printf(" callback-hosts=%s callback-secret=%s", cb_hosts, secret);
    putchar('\n');
    return CUZK_EXIT_OK;
}
