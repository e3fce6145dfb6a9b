/* circuit_decl.c — the `[circuit NAME]` sections of cuzkd.conf (circuit_decl.h). Pure:
 * no file is opened here; catalog.c opens what a section names. */
#include "supervisor/circuit_decl.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int circuit_decl_header(const char *line, char name[PROTO_CIRCUIT_NAME_MAX], char *err, size_t errlen)
{
    size_t n = strlen(line);
    char in[512];
    char *s, *e;

    if (n < 2 || line[0] != '[' || line[n - 1] != ']' || n - 2 >= sizeof(in)) return 0;
    memcpy(in, line + 1, n - 2);
    in[n - 2] = '\0';
    s = in;
    while (isspace((unsigned char)*s)) s++;
    if (strncmp(s, "circuit", 7) || (s[7] && !isspace((unsigned char)s[7])))
        return 0; /* [cuzkd] or another section */
    s += 7;
    while (isspace((unsigned char)*s)) s++;
    e = s + strlen(s);
    while (e > s && isspace((unsigned char)e[-1])) *--e = '\0';
    if (!*s) {
        snprintf(err, errlen, "[circuit] needs a name: [circuit NAME]");
        return -EINVAL;
    }
    if (!proto_circuit_name_valid(s)) {
        snprintf(err, errlen,
                 "circuit name \"%.80s\" refused: 1 to %d of letters, digits, '-', '_' "
                 "and '.', beginning with a letter or a digit",
                 s, PROTO_CIRCUIT_NAME_MAX - 1);
        return -EINVAL;
    }
    snprintf(name, PROTO_CIRCUIT_NAME_MAX, "%s", s);
    return 1;
}

/* A size with an optional K, M or G suffix (binary), as --quota-bytes. */
int circuit_decl_size(const char *v, uint64_t *out)
{
    char *end;
    unsigned long long n;
    unsigned sh = 0;

    if (!v || !*v || !isdigit((unsigned char)v[0])) return -EINVAL;
    errno = 0;
    n = strtoull(v, &end, 10);
    if (*end == 'K' || *end == 'k')
        sh = 10, end++;
    else if (*end == 'M' || *end == 'm')
        sh = 20, end++;
    else if (*end == 'G' || *end == 'g')
        sh = 30, end++;
    if (errno || *end || n > (UINT64_MAX >> sh)) return -EINVAL;
    *out = (uint64_t)n << sh;
    return 0;
}

int circuit_decl_set(struct circuit_decl *d, const char *key, const char *value, char *err, size_t errlen)
{
    char *dst = !strcmp(key, "zkey")  ? d->zkey
        : !strcmp(key, "witness-gen") ? d->wgen
        : !strcmp(key, "r1cs")        ? d->r1cs
                                      : NULL;

    if (!strcmp(key, "max-input-bytes")) {
        if (circuit_decl_size(value, &d->max_input_bytes)) {
            snprintf(err, errlen,
                     "circuit %s: max-input-bytes \"%.64s\": a number of bytes, "
                     "with K, M or G",
                     d->name, value ? value : "(missing)");
            return -EINVAL;
        }
        return 0;
    }
    if (!dst) {
        snprintf(err, errlen,
                 "circuit %s: unknown key \"%.64s\" (known: zkey, witness-gen, r1cs, "
                 "max-input-bytes)",
                 d->name, key);
        return -EINVAL;
    }
    if (!value || value[0] != '/' || strlen(value) >= PROTO_PATH_MAX) {
        snprintf(err, errlen, "circuit %s: %s must be an absolute path", d->name, key);
        return -EINVAL;
    }
    snprintf(dst, PROTO_PATH_MAX, "%s", value);
    return 0;
}

int circuit_decl_done(const struct circuit_decl *d, char *err, size_t errlen)
{
    if (!d->zkey[0]) {
        snprintf(err, errlen, "circuit %s: no zkey = PATH in its section", d->name);
        return -EINVAL;
    }
    return 0;
}
