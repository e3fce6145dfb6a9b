/* cuzk-api — the HTTP API of a cuzkd (api.h; docs/api.md). Started by cuzkd like a
 * stage when it has --listen, or on its own (its systemd unit). It reads its tokens,
 * certificate and key, binds, and only then drops root (to --user, default cuzk),
 * so the parser that faces the network never runs with more than cuzkd's rights. */
#include "api.h"

#include <errno.h>
#include <grp.h>
#include <netdb.h>
#include <pwd.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "api/budget.h"
#include "base/error.h"
#include "base/os.h"

struct api g_api;

static const char usage[] = "usage: cuzk-api --socket PATH --listen ADDR:PORT --api-tokens FILE [options]\n"
                            "  the HTTP API of a cuzkd (docs/api.md); cuzkd starts it itself with --listen\n"
                            "  --socket PATH       cuzkd's control socket (RUN_DIR/INSTANCE.sock)\n"
                            "  --listen ADDR:PORT  numeric IPv4 or [IPv6] address and port to serve on\n"
                            "  --api-tokens FILE   a line per tenant: NAME SHA256HEX [PRIORITY-CAP]\n"
                            "                      [MAX-RUNNING-JOBS] [MAX-BODY-BYTES] (`cuzk token NAME`)\n"
                            "  --tls-cert FILE --tls-key FILE   serve HTTPS (PEM)\n"
                            "  --instance NAME     cuzkd's instance, for /metrics (default: default)\n"
                            "  --cors-origin ORIGIN  answer CORS (preflight included) for this web origin,\n"
                            "                      https://app.example (or * for any); default: none\n"
                            "  --user NAME|UID     started as root: become this user after binding (default\n"
                            "                      cuzk; cuzkd passes its own uid, and 0 then keeps root)\n"
                            "  --timeout S         close a connection idle S seconds (default 30)\n"
                            "  --header-timeout S  close a connection that has not sent a whole request\n"
                            "                      head S seconds after it opened or its last request\n"
                            "                      ended, however it trickles (default 10)\n"
                            "  --per-ip N          connections from one address at once (default 32;\n"
                            "                      a quarter of them before their first token)\n"
                            "  --max-conns N       connections at once (default 1024; a quarter of\n"
                            "                      them before their first token)\n"
                            "  --max-body N[KMG]   a request body's bytes at most (default 16M; a circuit's\n"
                            "                      max-input-bytes and a tenant's limit may say less)\n"
                            "  --max-inflight-body N[KMG]  the bytes of all bodies held at once (default\n"
                            "                      256M, at least twice --max-body): beyond it 503, a\n"
                            "                      tenant past half of it 429, with Retry-After\n"
                            "  --queue URL         queue mode: jobs go into the fleet's PostgreSQL\n"
                            "                      (postgresql://..., no password: a PGPASSFILE or\n"
                            "                      --queue-fd) and are answered from it on every server\n"
                            "  --queue-fd N        the same, the URL read from descriptor N (cuzkd's way)\n"
                            "  --callback-db FILE  ?callback_url= on: deliveries kept in this SQLite file\n"
                            "                      (cuzkd passes STATE_DIR/INSTANCE.callbacks.db)\n"
                            "  --callback-retry-base-ms MS  a failed callback's first retry after MS,\n"
                            "                      twice as long each time, 13 tries (default 1000)\n";

__attribute__((format(printf, 1, 2))) static int die(const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    os_vlog(0, "cuzk-api", fmt, ap);
    va_end(ap);
    return CUZK_EXIT_USAGE;
}

static int opt_num(const char *v, uint64_t max, uint64_t *out)
{
    char *e;
    unsigned long long n;

    if (!v || *v < '0' || *v > '9') return -1;
    n = strtoull(v, &e, 10);
    if (*e == 'K')
        n <<= 10, e++;
    else if (*e == 'M')
        n <<= 20, e++;
    else if (*e == 'G')
        n <<= 30, e++;
    if (*e || n > max) return -1;
    *out = n;
    return 0;
}

static int set_opt(struct api_cfg *c, const char *name, const char *v)
{
    static const struct {
        const char *name;
        size_t off, len;
    } str[] = {
#define S(n, f) { n, offsetof(struct api_cfg, f), sizeof(((struct api_cfg *)0)->f) }
        S("socket", socket), S("listen", listen),    S("api-tokens", tokens),
        S("tls-cert", cert), S("tls-key", key),      S("instance", instance),
        S("user", user),     S("cors-origin", cors), S("callback-db", callback_db),
#undef S
    };
    uint64_t n;

    if (!v) return die("--%s needs a value", name);
    if (!strcmp(name, "queue") || !strcmp(name, "queue-fd"))
        return api_queue_opt(c, name, (char *)v) ? CUZK_EXIT_USAGE : 0; /* (char *): argv, scrubbed */
    for (size_t i = 0; i < sizeof(str) / sizeof(str[0]); i++)
        if (!strcmp(name, str[i].name)) {
            if (strlen(v) >= str[i].len) return die("--%s: too long", name);
            memcpy((char *)c + str[i].off, v, strlen(v) + 1);
            return 0;
        }
    if (!strcmp(name, "max-body") || !strcmp(name, "max-inflight-body")) {
        if (opt_num(v, 1ull << 40, &n) || !n) return die("--%s %s: a number of bytes (K, M, G)", name, v);
        *(name[4] == 'b' ? &c->max_body : &c->max_inflight) = n;
        return 0;
    }
    if (!strcmp(name, "callback-retry-base-ms")) {
        if (opt_num(v, 3600000, &n) || !n) return die("--%s %s: milliseconds from 1 to 3600000", name, v);
        c->callback_retry_base_ms = n;
        return 0;
    }
    {
        static const struct {
            const char *name;
            size_t off;
        } counts[] = {
            { "timeout", offsetof(struct api_cfg, timeout_s) },
            { "header-timeout", offsetof(struct api_cfg, header_timeout_s) },
            { "per-ip", offsetof(struct api_cfg, per_ip) },
            { "max-conns", offsetof(struct api_cfg, max_conns) },
        };

        for (size_t i = 0; i < sizeof(counts) / sizeof(counts[0]); i++)
            if (!strcmp(name, counts[i].name)) {
                if (opt_num(v, 100000, &n) || !n)
                    return die("--%s %s: a whole number from 1 to 100000", name, v);
                *(unsigned *)((char *)c + counts[i].off) = (unsigned)n;
                return 0;
            }
    }
    return die("unknown option --%s (see cuzk-api --help)", name);
}

static int parse_args(struct api_cfg *c, int argc, char **argv)
{
    snprintf(c->instance, sizeof(c->instance), "default");
    c->timeout_s = 30;
    c->header_timeout_s = 10;
    c->per_ip = 32;
    c->max_conns = 1024;
    c->max_body = API_BODY_DEFAULT;
    c->max_inflight = API_INFLIGHT_DEFAULT;
    c->callback_retry_base_ms = API_CB_RETRY_BASE_MS;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *eq;
        char name[32];
        int rc;

        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            fputs(usage, stdout);
            exit(CUZK_EXIT_OK);
        }
        if (strncmp(a, "--", 2) || strlen(a) > 30) return die("unexpected argument '%s'", a);
        eq = strchr(a + 2, '=');
        snprintf(name, sizeof(name), "%.*s", eq ? (int)(eq - a - 2) : 30, a + 2);
        if ((rc = set_opt(c, name, eq ? eq + 1 : i + 1 < argc ? argv[++i] : NULL))) return rc;
    }
    if (!c->socket[0] || !c->listen[0] || !c->tokens[0])
        return die("--socket, --listen and --api-tokens are needed");
    if (!c->cert[0] != !c->key[0]) return die("--tls-cert and --tls-key go together");
    /* A tenant's share is half the budget: it must hold one largest body. */
    if (c->max_inflight < 2 * c->max_body)
        return die("--max-inflight-body %llu is less than twice --max-body %llu: a tenant (half of it) could "
                   "never send its largest body",
                   (unsigned long long)c->max_inflight, (unsigned long long)c->max_body);
    api_budget_init(c->max_inflight);
    return 0;
}

/* A bound, listening socket for ADDR:PORT (numeric: no name is resolved). */
static int bind_listen(const char *spec, char *err, size_t errlen)
{
    char host[64];
    const char *colon = strrchr(spec, ':'), *h = spec;
    size_t hl;
    struct addrinfo hints = { .ai_flags = AI_NUMERICHOST | AI_NUMERICSERV | AI_PASSIVE,
                              .ai_socktype = SOCK_STREAM },
                    *ai = NULL;
    int fd, one = 1;

    if (!colon || !colon[1]) goto bad;
    hl = (size_t)(colon - spec);
    if (*h == '[') {
        if (hl < 2 || spec[hl - 1] != ']') goto bad;
        h++;
        hl -= 2;
    }
    if (!hl || hl >= sizeof(host)) goto bad;
    memcpy(host, h, hl);
    host[hl] = '\0';
    if (getaddrinfo(host, colon + 1, &hints, &ai)) goto bad;
    fd = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) ||
        bind(fd, ai->ai_addr, ai->ai_addrlen) || listen(fd, 128)) {
        snprintf(err, errlen, "--listen %s: %s", spec, strerror(errno));
        if (fd >= 0) close(fd);
        freeaddrinfo(ai);
        return -1;
    }
    freeaddrinfo(ai);
    return fd;
bad:
    snprintf(err, errlen, "--listen %s: expected IPV4:PORT or [IPV6]:PORT, numeric", spec);
    return -1;
}

/* The group the process serves as: --user's when started as root (drop_root), else
 * its own. */
static gid_t serving_gid(const char *user)
{
    struct passwd *pw;
    char *e;
    unsigned long uid = strtoul(user, &e, 10);

    if (geteuid() != 0 || (user[0] && !*e && uid == 0)) return getegid();
    pw = user[0] && !*e ? getpwuid((uid_t)uid) : getpwnam(user[0] ? user : "cuzk");
    return pw ? pw->pw_gid : getegid();
}

/* Started as root: become --user (its uid, its group and the groups /etc/group puts
 * it in: an --api-user reaches cuzkd's socket through cuzkd's --group), and check
 * that root cannot be had back. Not root: nothing to drop. cuzkd passes its own uid,
 * or its --api-user when it runs as root: the API must be one of the two to submit
 * for tenants, so under a root cuzkd without --api-user it stays root, and says so. */
static int drop_root(const char *user, char *err, size_t errlen)
{
    struct passwd *pw;
    char *e;
    unsigned long uid = strtoul(user, &e, 10);

    if (geteuid() != 0) return 0;
    pw = user[0] && !*e ? getpwuid((uid_t)uid) : getpwnam(user[0] ? user : "cuzk");
    if (user[0] && !*e && uid == 0) {
        fprintf(stderr, "cuzk-api: warning: running as root, as the cuzkd that started it does\n");
        return 0;
    }
    if (!pw || pw->pw_uid == 0) {
        snprintf(err, errlen, "started as root: no user %s to become (--user NAME|UID)",
                 user[0] ? user : "cuzk");
        return -1;
    }
    if (initgroups(pw->pw_name, pw->pw_gid) || setgid(pw->pw_gid) || setuid(pw->pw_uid)) {
        snprintf(err, errlen, "dropping root for %s: %s", pw->pw_name, strerror(errno));
        return -1;
    }
    if (setuid(0) == 0 || geteuid() != pw->pw_uid || getegid() != pw->pw_gid) {
        snprintf(err, errlen, "dropping root for %s: root could be had back", pw->pw_name);
        return -1;
    }
    return 0;
}

/* path's text (malloc'd), or NULL with err. A secret (the TLS key) is refused when
 * other users could read it (api_secret_mode_refused). */
static char *slurp(const char *path, int secret, char *err, size_t errlen)
{
    FILE *f = fopen(path, "re");
    char *b = NULL;
    size_t n = 0;

    if (f && secret && api_secret_mode_refused(fileno(f), "--tls-key", path, err, errlen)) {
        fclose(f);
        return NULL;
    }
    if (!f || getdelim(&b, &n, '\0', f) < 0) {
        snprintf(err, errlen, "%s: %s", path, f ? "empty" : strerror(errno));
        if (f) fclose(f);
        free(b);
        return NULL;
    }
    fclose(f);
    return b;
}

int main(int argc, char **argv)
{
    char err[PROTO_PATH_MAX + 256];
    char *cert = NULL, *key = NULL;
    sigset_t ss;
    int fd, rc, sig = 0;

    /* Blocked from the start (the server's threads inherit it): a SIGHUP that cuzkd
     * forwards while this process starts waits for the sigwait below. */
    sigemptyset(&ss);
    sigaddset(&ss, SIGTERM);
    sigaddset(&ss, SIGINT);
    sigaddset(&ss, SIGHUP);
    pthread_sigmask(SIG_BLOCK, &ss, NULL);
    if ((rc = parse_args(&g_api.cfg, argc, argv))) return rc;
    signal(SIGPIPE, SIG_IGN);
    g_api.gid = serving_gid(g_api.cfg.user);
    if (api_tokens_load(&g_api.tokens, g_api.cfg.tokens, err, sizeof(err)) ||
        (g_api.cfg.cert[0] &&
         (!(cert = slurp(g_api.cfg.cert, 0, err, sizeof(err))) ||
          !(key = slurp(g_api.cfg.key, 1, err, sizeof(err))))) ||
        (fd = bind_listen(g_api.cfg.listen, err, sizeof(err))) < 0 || api_callback_open(err, sizeof(err)) ||
        drop_root(g_api.cfg.user, err, sizeof(err))) {
        fprintf(stderr, "cuzk-api: %s\n", err);
        return CUZK_EXIT_USAGE;
    }
    api_bell_init();
    if (g_api.cfg.queue[0] ? api_queue_start(err, sizeof(err)) : api_watch_start(err, sizeof(err))) {
        fprintf(stderr, "cuzk-api: %s\n", err);
        return CUZK_EXIT_IO;
    }
    if (api_callback_start(err, sizeof(err))) {
        fprintf(stderr, "cuzk-api: %s\n", err);
        return CUZK_EXIT_IO;
    }
    if (api_serve(fd, cert, key, err, sizeof(err))) {
        fprintf(stderr, "cuzk-api: %s\n", err);
        return CUZK_EXIT_IO;
    }
    fprintf(stderr, "cuzk-api: serving %s%s for cuzkd at %s, %zu tenant(s)%s\n",
            g_api.cfg.cert[0] ? "https on " : "", g_api.cfg.listen, g_api.cfg.socket, g_api.tokens.n,
            g_api.cfg.queue[0] ? ", jobs in the fleet's queue" : "");
    /* SIGHUP (cuzkd forwards its own and `cuzk reload`): the tokens file read
     * again, the server and its connections untouched. */
    while (!sigwait(&ss, &sig) && sig == SIGHUP) {
        if (api_tokens_reload(g_api.cfg.tokens, err, sizeof(err)))
            fprintf(stderr, "cuzk-api: SIGHUP: %s; the old tokens stay\n", err);
        else
            fprintf(stderr, "cuzk-api: SIGHUP: %s read again, %zu tenant(s)\n", g_api.cfg.tokens,
                    g_api.tokens.n);
    }
    api_events_stop();
    api_stop();
    free(cert);
    free(key);
    api_tokens_free(&g_api.tokens);
    return CUZK_EXIT_OK;
}
