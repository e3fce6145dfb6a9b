/* tokens.c — the tokens file of cuzk-api (api.h; docs/api.md, "Tokens"). It holds no
 * token, only the SHA-256 of each: a line per tenant,
 *
 *   NAME SHA256HEX [PRIORITY-CAP] [MAX-RUNNING-JOBS] [MAX-BODY-BYTES] [MAX-REQUESTS]
 *        [callback-hosts=HOST[:PORT],...] [callback-secret=TEXT]
 *
 * NAME 1-64 of [A-Za-z0-9._-] (cuzkd's rule for a tenant); "-" leaves a limit unset;
 * MAX-BODY-BYTES may end in K, M or G. '#' starts a comment; blank lines are skipped.
 *
 * SIGHUP reads the file again (api_tokens_reload): the new table replaces the old
 * under a lock that each request's lookup takes too, and a request keeps a copy of
 * its tenant's line, so connections and requests under way are not disturbed. A file
 * that does not read keeps the old table. */
#include "api.h"

#include <ctype.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>

static bool tenant_name_valid(const char *s)
{
    size_t n = strlen(s);

    if (!n || n > API_TENANT_MAX) return false;
    for (; *s; s++)
        if (!isalnum((unsigned char)*s) && *s != '.' && *s != '_' && *s != '-') return false;
    return true;
}

static int unhex(const char *h, unsigned char *out, size_t n)
{
    if (strlen(h) != 2 * n) return -1;
    for (size_t i = 0; i < n; i++) {
        unsigned v;

        if (!isxdigit((unsigned char)h[2 * i]) || !isxdigit((unsigned char)h[2 * i + 1])) return -1;
        if (sscanf(h + 2 * i, "%2x", &v) != 1) return -1;
        out[i] = (unsigned char)v;
    }
    return 0;
}

/* "-" or a whole number with an optional K/M/G suffix. */
static int limit(const char *s, uint64_t max, uint64_t *out)
{
    char *e;
    unsigned long long v;

    *out = 0;
    if (!s || !strcmp(s, "-")) return 0;
    if (!isdigit((unsigned char)*s)) return -1;
    errno = 0;
    v = strtoull(s, &e, 10);
    if (errno) return -1;
    if (*e == 'K' || *e == 'k')
        v <<= 10, e++;
    else if (*e == 'M' || *e == 'm')
        v <<= 20, e++;
    else if (*e == 'G' || *e == 'g')
        v <<= 30, e++;
    if (*e || v > max) return -1;
    *out = v;
    return 0;
}

/* A trailing KEY=VALUE field: callback-hosts=HOST[:PORT],... (http:// before a host
 * allows plain HTTP to it), callback-secret=TEXT (what the callbacks are signed with). */
static int named_field(const char *w, struct api_tenant *t, char *err, size_t errlen)
{
    const char *v = strchr(w, '=') + 1;
    size_t kl = (size_t)(v - 1 - w), vl = strlen(v);

    if (kl == 14 && !strncmp(w, "callback-hosts", kl) && vl && vl <= API_CB_HOSTS_MAX) {
        memcpy(t->callback_hosts, v, vl + 1);
        return 0;
    }
    if (kl == 15 && !strncmp(w, "callback-secret", kl) && vl >= 16 && vl <= API_CB_SECRET_MAX) {
        memcpy(t->callback_secret, v, vl + 1);
        return 0;
    }
    snprintf(err, errlen,
             "\"%.*s\": the named fields are callback-hosts=HOST[:PORT],... (up to %d characters) and "
             "callback-secret=TEXT (16 to %d characters)",
             (int)kl, w, API_CB_HOSTS_MAX, API_CB_SECRET_MAX);
    return -1;
}

static int parse_line(char *line, struct api_tenant *t, char *err, size_t errlen)
{
    char *f[7] = { 0 }, *save = NULL;
    uint64_t prio, run, body, reqs;
    int n = 0;

    memset(t, 0, sizeof(*t));
    for (char *w = strtok_r(line, " \t", &save); w; w = strtok_r(NULL, " \t", &save)) {
        if (n >= 2 && strchr(w, '=')) { /* the named fields, after the positional ones */
            if (named_field(w, t, err, errlen)) return -1;
            n = 6;
            continue;
        }
        if (n == 6) {
            snprintf(err, errlen, "more than 6 fields, or one after a KEY=VALUE field");
            return -1;
        }
        f[n++] = w;
    }
    if (n < 2) {
        snprintf(err, errlen,
                 "expected NAME SHA256HEX [PRIORITY-CAP] [MAX-RUNNING-JOBS] [MAX-BODY-BYTES] "
                 "[MAX-REQUESTS]");
        return -1;
    }
    if (!tenant_name_valid(f[0])) {
        snprintf(err, errlen, "tenant name \"%.64s\": use 1 to 64 of A-Z a-z 0-9 . _ -", f[0]);
        return -1;
    }
    if (unhex(f[1], t->hash, sizeof(t->hash))) {
        snprintf(err, errlen, "tenant %s: the second field is not 64 hex digits (a SHA-256)", f[0]);
        return -1;
    }
    if (limit(f[2], 1000000, &prio) || limit(f[3], 1000000, &run) || limit(f[4], 1ull << 40, &body) ||
        limit(f[5], 1000000, &reqs)) {
        snprintf(err, errlen, "tenant %s: a limit is neither a number nor -", f[0]);
        return -1;
    }
    snprintf(t->name, sizeof(t->name), "%s", f[0]);
    t->prio_cap = f[2] && strcmp(f[2], "-") ? (int)prio : -1;
    t->max_running = (uint32_t)run;
    t->max_body = body;
    t->max_requests = (uint32_t)reqs;
    return 0;
}

int api_secret_mode_refused(int fd, const char *option, const char *path, char *err, size_t errlen)
{
    struct stat st;
    mode_t m;

    if (fstat(fd, &st)) {
        snprintf(err, errlen, "%s %s: %s", option, path, strerror(errno));
        return -1;
    }
    m = st.st_mode & 07777;
    if (!(m & 077) || (!(m & 037) && (st.st_gid == 0 || st.st_gid == g_api.gid))) return 0;
    snprintf(err, errlen,
             "%s %s: mode %04o (group %u) lets other users at a secret; chmod 600 it, or 640 with group root "
             "or the API's group (%u)",
             option, path, (unsigned)m, (unsigned)st.st_gid, (unsigned)g_api.gid);
    return -1;
}

int api_tokens_load(struct api_tokens *tk, const char *path, char *err, size_t errlen)
{
    FILE *f = fopen(path, "re");
    char line[1024], why[256];
    unsigned no = 0;

    memset(tk, 0, sizeof(*tk));
    if (!f) {
        snprintf(err, errlen, "--api-tokens %s: %s", path, strerror(errno));
        return -1;
    }
    /* every tenant's name and token hash: other users have no business reading it */
    if (api_secret_mode_refused(fileno(f), "--api-tokens", path, err, errlen)) {
        fclose(f);
        return -1;
    }
    while (fgets(line, sizeof(line), f)) {
        char *h = strchr(line, '#');
        struct api_tenant t, *nt;

        no++;
        if (h) *h = '\0';
        line[strcspn(line, "\r\n")] = '\0';
        if (strspn(line, " \t") == strlen(line)) continue;
        if (parse_line(line, &t, why, sizeof(why))) {
            snprintf(err, errlen, "--api-tokens %s line %u: %s", path, no, why);
            fclose(f);
            api_tokens_free(tk);
            return -1;
        }
        for (size_t i = 0; i < tk->n; i++)
            if (!strcmp(tk->t[i].name, t.name)) {
                snprintf(err, errlen, "--api-tokens %s line %u: tenant %s named twice", path, no, t.name);
                fclose(f);
                api_tokens_free(tk);
                return -1;
            }
        if (!(nt = realloc(tk->t, (tk->n + 1) * sizeof(*nt)))) {
            snprintf(err, errlen, "--api-tokens: out of memory");
            fclose(f);
            api_tokens_free(tk);
            return -1;
        }
        tk->t = nt;
        tk->t[tk->n++] = t;
    }
    fclose(f);
    return 0;
}

const struct api_tenant *api_tokens_find(const struct api_tokens *tk, const char *token, size_t len)
{
    unsigned char h[32];
    unsigned int hl = 0;
    const struct api_tenant *found = NULL;

    if (!EVP_Digest(token, len, h, &hl, EVP_sha256(), NULL) || hl != sizeof(h)) return NULL;
    /* Every line is compared, and each in constant time: neither the time nor the
     * place of a match tells a caller how much of a guess was right. */
    for (size_t i = 0; i < tk->n; i++)
        if (!CRYPTO_memcmp(h, tk->t[i].hash, sizeof(h))) found = &tk->t[i];
    return found;
}

void api_tokens_free(struct api_tokens *tk)
{
    free(tk->t);
    tk->t = NULL;
    tk->n = 0;
}

/* Guards g_api.tokens against a reload while a request looks a token up. */
static pthread_mutex_t tokens_mu = PTHREAD_MUTEX_INITIALIZER;

int api_tokens_auth(const char *token, size_t len, struct api_tenant *out)
{
    const struct api_tenant *t;

    pthread_mutex_lock(&tokens_mu);
    t = api_tokens_find(&g_api.tokens, token, len);
    if (t) *out = *t;
    pthread_mutex_unlock(&tokens_mu);
    return t ? 0 : -1;
}

int api_tokens_by_name(const char *name, struct api_tenant *out)
{
    int rc = -1;

    pthread_mutex_lock(&tokens_mu);
    for (size_t i = 0; i < g_api.tokens.n && rc; i++)
        if (!strcmp(g_api.tokens.t[i].name, name)) *out = g_api.tokens.t[i], rc = 0;
    pthread_mutex_unlock(&tokens_mu);
    return rc;
}

int api_tokens_reload(const char *path, char *err, size_t errlen)
{
    struct api_tokens nt, old;

    if (api_tokens_load(&nt, path, err, errlen)) return -1;
    pthread_mutex_lock(&tokens_mu);
    old = g_api.tokens;
    g_api.tokens = nt;
    pthread_mutex_unlock(&tokens_mu);
    api_tokens_free(&old);
    return 0;
}
