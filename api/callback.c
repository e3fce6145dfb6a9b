/* callback.c — a job's end pushed to its tenant (api.h; docs/api.md, "Completion
 * pushed"). A POST with ?callback_url=URL records the URL with the job in an SQLite
 * file of cuzk-api's own (--callback-db; cuzkd's store is written by cuzkd alone),
 * and one thread delivers: it looks at the jobs whose end it waits for when the
 * job-end doorbell rings (bell.c: the one watch on cuzkd), at its start, and at least
 * every CB_LOOK_NS, builds the body once when it sees the end, and POSTs it signed
 * (Cuzk-Signature: t=UNIX,v1=HMAC-SHA256(secret, "UNIX.BODY") in hex, Stripe's scheme)
 * until a 2xx, retrying after base, 2 x base, 4 x base ... for CB_ATTEMPTS tries in
 * all (about an hour at the default base of 1 s), then "failed".
 *
 * What it keeps per job: the URL, the state (pending, delivered, failed), the
 * attempts, the last HTTP status, the next try and the body. Each change is
 * committed (synchronous=FULL) before the next step, so a restart of cuzk-api or
 * cuzkd neither loses a callback nor sends again one whose receiver answered 2xx
 * (a kill between the receiver's 2xx and the commit sends it once more: at least
 * once). A job that ended while nobody watched is found by the look at start.
 *
 * Where it may call (SSRF): only hosts on the tenant's callback-hosts list, https
 * unless the list's entry says http://, no redirect followed, CB_TIMEOUT_MS a try.
 * A host named by address may be any address; a host named by name must resolve to
 * public addresses only (no loopback, private, link-local, CGNAT, multicast), and
 * the connection goes to the address that was checked (CURLOPT_RESOLVE), so a DNS
 * answer that changes between the check and the connect changes nothing. */
#include "api.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <inttypes.h>
#include <netdb.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include <curl/curl.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <sqlite3.h>

#include "base/os.h"

#define CB_ATTEMPTS   13             /* 1 + 2 + ... + 2048 s of waits at a 1 s base: 68 min */
#define CB_TIMEOUT_MS 10000          /* one try, connect to answer */
#define CB_LOOK_NS    10000000000ull /* the running jobs looked at without a ring */
#define CB_URL_MAX    2048

static struct {
    pthread_mutex_t mu; /* the connection: the request threads add, the deliverer updates */
    sqlite3 *db;
} cb = { .mu = PTHREAD_MUTEX_INITIALIZER };

static uint64_t now_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

/* ---- where a callback may go --------------------------------------------------- */

struct cb_target {
    char scheme[8], host[256];
    unsigned port;
    int host_is_addr; /* the host is an IPv4 or IPv6 address, not a name */
};

/* url's scheme, host and port (curl's parser, the one that will send it): 0, or -1
 * with why. */
static int parse_target(const char *url, struct cb_target *tg, const char **why)
{
    CURLU *u = curl_url();
    char *scheme = NULL, *host = NULL, *port = NULL, *user = NULL;
    int rc = -1;

    *why = "not an absolute http(s) URL";
    if (!u || strlen(url) > CB_URL_MAX) goto out;
    if (curl_url_set(u, CURLUPART_URL, url, 0) || curl_url_get(u, CURLUPART_SCHEME, &scheme, 0) ||
        curl_url_get(u, CURLUPART_HOST, &host, 0) ||
        curl_url_get(u, CURLUPART_PORT, &port, CURLU_DEFAULT_PORT))
        goto out;
    if (!curl_url_get(u, CURLUPART_USER, &user, 0)) {
        *why = "a user name or password in the URL is not taken";
        goto out;
    }
    if (strcasecmp(scheme, "https") && strcasecmp(scheme, "http")) goto out;
    if (strlen(host) >= sizeof(tg->host)) goto out;
    snprintf(tg->scheme, sizeof(tg->scheme), "%s", scheme);
    for (char *c = tg->scheme; *c; c++) *c = (char)tolower((unsigned char)*c);
    /* curl keeps an IPv6 host in its brackets */
    if (host[0] == '[') {
        size_t n = strlen(host);

        snprintf(tg->host, sizeof(tg->host), "%.*s", (int)(n - 2), host + 1);
    } else {
        snprintf(tg->host, sizeof(tg->host), "%s", host);
    }
    tg->port = (unsigned)strtoul(port, NULL, 10);
    {
        unsigned char a[16];

        tg->host_is_addr = inet_pton(AF_INET, tg->host, a) == 1 || inet_pton(AF_INET6, tg->host, a) == 1;
    }
    rc = 0;
out:
    curl_free(scheme);
    curl_free(host);
    curl_free(port);
    curl_free(user);
    curl_url_cleanup(u);
    return rc;
}

/* The tenant's list names this host and port (an entry without a port: the scheme's
 * default), and for http the entry says http://. */
static int host_allowed(const char *list, const struct cb_target *tg)
{
    const char *p = list;

    while (*p) {
        const char *e = strchr(p, ','), *h = p, *hend, *colon;
        size_t n = e ? (size_t)(e - p) : strlen(p);
        int http = 0;
        unsigned port;

        if (n > 7 && !strncasecmp(h, "http://", 7))
            h += 7, n -= 7, http = 1;
        else if (n > 8 && !strncasecmp(h, "https://", 8))
            h += 8, n -= 8;
        hend = h + n;
        /* [v6]:port, v4:port, name:port, or without the port */
        if (*h == '[') {
            const char *rb = memchr(h, ']', n);

            colon = rb && rb + 1 < hend && rb[1] == ':' ? rb + 1 : NULL;
            port = colon ? (unsigned)strtoul(colon + 1, NULL, 10) : 0;
            if (rb && (size_t)(rb - h - 1) == strlen(tg->host) &&
                !strncasecmp(h + 1, tg->host, (size_t)(rb - h - 1)))
                goto host_ok;
        } else {
            colon = memchr(h, ':', n);
            port = colon ? (unsigned)strtoul(colon + 1, NULL, 10) : 0;
            if ((size_t)((colon ? colon : hend) - h) == strlen(tg->host) &&
                !strncasecmp(h, tg->host, strlen(tg->host)))
                goto host_ok;
        }
        goto next;
host_ok:
        if (!port) port = !strcmp(tg->scheme, "https") ? 443 : 80;
        if (port == tg->port && (!strcmp(tg->scheme, "https") || http)) return 1;
next:
        if (!e) break;
        p = e + 1;
    }
    return 0;
}

/* An address a name may not lead to: this machine, a private network, link-local,
 * shared (CGNAT), multicast, unspecified or reserved. */
static int addr_private(const struct sockaddr *sa)
{
    if (sa->sa_family == AF_INET) {
        uint32_t a = ntohl(((const struct sockaddr_in *)sa)->sin_addr.s_addr);

        return (a >> 24) == 0 || (a >> 24) == 10 || (a >> 24) == 127 || (a >> 16) == 0xa9fe ||
            (a >> 20) == 0xac1 || (a >> 16) == 0xc0a8 || (a >> 22) == (100u << 2 | 1) || (a >> 28) >= 0xe;
    }
    if (sa->sa_family == AF_INET6) {
        const struct in6_addr *a = &((const struct sockaddr_in6 *)sa)->sin6_addr;

        if (IN6_IS_ADDR_V4MAPPED(a)) {
            struct sockaddr_in v4 = { .sin_family = AF_INET };

            memcpy(&v4.sin_addr, a->s6_addr + 12, 4);
            return addr_private((const struct sockaddr *)&v4);
        }
        return IN6_IS_ADDR_LOOPBACK(a) || IN6_IS_ADDR_UNSPECIFIED(a) || IN6_IS_ADDR_LINKLOCAL(a) ||
            IN6_IS_ADDR_MULTICAST(a) || (a->s6_addr[0] & 0xfe) == 0xfc;
    }
    return 1;
}

/* The address to connect to, "HOST:PORT:ADDR" for CURLOPT_RESOLVE: the host's
 * first address, every one of which must be public when it is a name. 0; -1 when it
 * does not resolve (now), -2 when it leads to a private address; why says which. */
static int resolve_checked(const struct cb_target *tg, char *pin, size_t pinlen, const char **why)
{
    struct addrinfo hints = { .ai_socktype = SOCK_STREAM }, *ai = NULL;
    char addr[INET6_ADDRSTRLEN], port[8];

    snprintf(port, sizeof(port), "%u", tg->port);
    if (getaddrinfo(tg->host, port, &hints, &ai) || !ai) {
        *why = "the host does not resolve";
        return -1;
    }
    if (!tg->host_is_addr)
        for (struct addrinfo *p = ai; p; p = p->ai_next)
            if (addr_private(p->ai_addr)) {
                *why =
                    "the host resolves to a private or loopback address (name the address in callback-hosts to "
                    "allow it)";
                freeaddrinfo(ai);
                return -2;
            }
    if (ai->ai_family == AF_INET)
        inet_ntop(AF_INET, &((struct sockaddr_in *)ai->ai_addr)->sin_addr, addr, sizeof(addr));
    else
        inet_ntop(AF_INET6, &((struct sockaddr_in6 *)ai->ai_addr)->sin6_addr, addr, sizeof(addr));
    snprintf(pin, pinlen, "%s:%u:%s%s%s", tg->host, tg->port, ai->ai_family == AF_INET6 ? "[" : "", addr,
             ai->ai_family == AF_INET6 ? "]" : "");
    freeaddrinfo(ai);
    return 0;
}

int api_callback_check(const char *url, const struct api_tenant *t, struct api_resp *r)
{
    struct cb_target tg;
    const char *why;
    char d[256], pin[512];

    if (!cb.db)
        why = g_api.cfg.queue[0]
            ? "callbacks are served in local mode only (not with --queue)"
            : "callbacks are off on this server (no --callback-db, or its file does not open: see its log)";
    else if (!t->callback_hosts[0] || !t->callback_secret[0])
        why = "callbacks are off for this tenant (its tokens line has no callback-hosts and callback-secret)";
    else if (parse_target(url, &tg, &why))
        ;
    else if (!host_allowed(t->callback_hosts, &tg))
        why = "this host and port (and scheme: http needs http:// in the list) are not on the tenant's "
              "callback-hosts";
    else if (!tg.host_is_addr && resolve_checked(&tg, pin, sizeof(pin), &why) == -2)
        ; /* a name that leads here or to a private network: said now, not at the job's end */
    else
        return 0;
    snprintf(d, sizeof(d), "callback_url: %s", why);
    api_problem(r, 400, "usage", "bad_request", d, json_pack("{s:s}", "parameter", "callback_url"));
    return -1;
}

/* ---- the store ------------------------------------------------------------------ */

static int db_exec(const char *sql)
{
    char *e = NULL;
    int rc = sqlite3_exec(cb.db, sql, NULL, NULL, &e);

    if (rc) api_qlog("callbacks: %s: %s", sql, e ? e : sqlite3_errmsg(cb.db));
    sqlite3_free(e);
    return rc;
}

int api_callback_add(uint64_t job, const char *tenant, const char *url, struct api_resp *r)
{
    sqlite3_stmt *st = NULL;
    int rc;

    pthread_mutex_lock(&cb.mu);
    rc = sqlite3_prepare_v2(cb.db,
                            "INSERT OR IGNORE INTO callbacks(job, tenant, url, state, attempts, created) "
                            "VALUES (?, ?, ?, 'pending', 0, ?)",
                            -1, &st, NULL);
    if (!rc) {
        sqlite3_bind_int64(st, 1, (sqlite3_int64)job);
        sqlite3_bind_text(st, 2, tenant, -1, SQLITE_TRANSIENT);
        sqlite3_bind_text(st, 3, url, -1, SQLITE_TRANSIENT);
        sqlite3_bind_int64(st, 4, (sqlite3_int64)time(NULL));
        rc = sqlite3_step(st) == SQLITE_DONE ? 0 : -1;
    }
    if (rc) api_qlog("callbacks: job %" PRIu64 " not recorded: %s", job, sqlite3_errmsg(cb.db));
    sqlite3_finalize(st);
    pthread_mutex_unlock(&cb.mu);
    if (rc)
        api_problem(r, 500, "internal", PROTO_E_INTERNAL,
                    "the job was accepted but its callback could not be recorded", NULL);
    api_bell_ring(job); /* the deliverer looks at it now: it may have ended already */
    return rc ? -1 : 0;
}

json_t *api_callback_view(uint64_t job)
{
    sqlite3_stmt *st = NULL;
    json_t *o = NULL;

    if (!cb.db) return NULL;
    pthread_mutex_lock(&cb.mu);
    if (!sqlite3_prepare_v2(cb.db, "SELECT url, state, attempts, last_status FROM callbacks WHERE job = ?",
                            -1, &st, NULL)) {
        sqlite3_bind_int64(st, 1, (sqlite3_int64)job);
        if (sqlite3_step(st) == SQLITE_ROW) {
            o = json_pack("{s:s,s:s,s:I}", "url", (const char *)sqlite3_column_text(st, 0), "state",
                          (const char *)sqlite3_column_text(st, 1), "attempts",
                          (json_int_t)sqlite3_column_int64(st, 2));
            if (o && sqlite3_column_type(st, 3) != SQLITE_NULL)
                json_object_set_new(o, "last_status", json_integer(sqlite3_column_int64(st, 3)));
        }
    }
    sqlite3_finalize(st);
    pthread_mutex_unlock(&cb.mu);
    return o;
}

/* ---- the deliverer -------------------------------------------------------------- */

struct cb_row {
    uint64_t job;
    char tenant[API_TENANT_MAX + 1];
    char *url, *body;
    int attempts;
    uint64_t next_ms;
};

static void rows_free(struct cb_row *rows, size_t n)
{
    for (size_t i = 0; i < n; i++) free(rows[i].url), free(rows[i].body);
    free(rows);
}

/* Every pending callback, oldest job first. */
static struct cb_row *rows_pending(size_t *n)
{
    sqlite3_stmt *st = NULL;
    struct cb_row *rows = NULL;
    size_t cap = 0;

    *n = 0;
    pthread_mutex_lock(&cb.mu);
    if (!sqlite3_prepare_v2(cb.db,
                            "SELECT job, tenant, url, body, attempts, next_ms FROM callbacks "
                            "WHERE state = 'pending' ORDER BY job",
                            -1, &st, NULL))
        while (sqlite3_step(st) == SQLITE_ROW) {
            struct cb_row *r;

            if (*n == cap) {
                struct cb_row *nr = realloc(rows, (cap ? 2 * cap : 16) * sizeof(*nr));

                if (!nr) break;
                rows = nr, cap = cap ? 2 * cap : 16;
            }
            r = &rows[(*n)++];
            memset(r, 0, sizeof(*r));
            r->job = (uint64_t)sqlite3_column_int64(st, 0);
            snprintf(r->tenant, sizeof(r->tenant), "%s", (const char *)sqlite3_column_text(st, 1));
            r->url = strdup((const char *)sqlite3_column_text(st, 2));
            if (sqlite3_column_type(st, 3) != SQLITE_NULL)
                r->body = strdup((const char *)sqlite3_column_text(st, 3));
            r->attempts = sqlite3_column_int(st, 4);
            r->next_ms = (uint64_t)sqlite3_column_int64(st, 5);
        }
    sqlite3_finalize(st);
    pthread_mutex_unlock(&cb.mu);
    return rows;
}

/* The row's new state; body NULL leaves it. Committed (synchronous=FULL) on return. */
static void row_update(uint64_t job, const char *state, const char *body, int attempts, long last_status,
                       uint64_t next_ms)
{
    sqlite3_stmt *st = NULL;

    pthread_mutex_lock(&cb.mu);
    if (!sqlite3_prepare_v2(
            cb.db,
            "UPDATE callbacks SET state = ?, body = coalesce(?, body), attempts = ?, "
            "last_status = CASE WHEN ? < 0 THEN last_status ELSE ? END, next_ms = ? WHERE job = ?",
            -1, &st, NULL)) {
        sqlite3_bind_text(st, 1, state, -1, SQLITE_STATIC);
        if (body)
            sqlite3_bind_text(st, 2, body, -1, SQLITE_STATIC);
        else
            sqlite3_bind_null(st, 2);
        sqlite3_bind_int(st, 3, attempts);
        sqlite3_bind_int64(st, 4, last_status);
        sqlite3_bind_int64(st, 5, last_status);
        sqlite3_bind_int64(st, 6, (sqlite3_int64)next_ms);
        sqlite3_bind_int64(st, 7, (sqlite3_int64)job);
        if (sqlite3_step(st) != SQLITE_DONE)
            api_qlog("callbacks: job %" PRIu64 ": %s", job, sqlite3_errmsg(cb.db));
    }
    sqlite3_finalize(st);
    pthread_mutex_unlock(&cb.mu);
}

/* The job's end as the callback's body (malloc'd), or NULL while it runs. A job
 * cuzkd no longer knows (the store forgot it) ends the callback as failed. */
static char *end_body(uint64_t job, const char *tenant, int *gone)
{
    struct api_tenant t = { 0 };
    struct api_resp r = { 0 };
    json_t *j, *v, *o;
    const char *st;
    char *s = NULL;

    *gone = 0;
    snprintf(t.name, sizeof(t.name), "%s", tenant);
    j = api_job_of(job, &t, &r);
    if (!j) {
        *gone = r.status == 404;
        free(r.body);
        return NULL;
    }
    free(r.body);
    v = api_job_view(j);
    json_decref(j);
    st = json_string_value(json_object_get(v, "state")) ?: "running";
    if (!strcmp(st, "running")) {
        json_decref(v);
        return NULL;
    }
    o = json_pack("{s:s,s:I,s:O?,s:s}", "type", "job.ended", "job", (json_int_t)job, "circuit",
                  json_object_get(v, "circuit"), "state", st);
    if (o) {
        static const char *const copy[] = { "reason", "partitions", "done", "failed" };

        for (size_t i = 0; i < sizeof(copy) / sizeof(copy[0]); i++)
            if (json_object_get(v, copy[i])) json_object_set(o, copy[i], json_object_get(v, copy[i]));
        json_object_set_new(o, "ended_unix", json_integer((json_int_t)time(NULL)));
        if (json_object_get(v, "metadata")) json_object_set(o, "metadata", json_object_get(v, "metadata"));
        s = json_dumps(o, JSON_COMPACT);
        json_decref(o);
    }
    json_decref(v);
    return s;
}

/* One try: the HTTP status (2xx: delivered), 0 when no answer came, -1 when the URL
 * may no longer be called (the tenant's list changed: no more tries). */
static long post_once(const struct cb_row *row, const struct api_tenant *t)
{
    struct cb_target tg;
    const char *why;
    char pin[512], sig[24 + 2 * EVP_MAX_MD_SIZE + 32], ts[24], hex[2 * EVP_MAX_MD_SIZE + 1];
    unsigned char mac[EVP_MAX_MD_SIZE];
    unsigned maclen = 0;
    struct curl_slist *hdr = NULL, *res = NULL;
    CURL *c;
    long status = 0;
    int rc;
    char *signed_text;
    size_t blen = strlen(row->body);

    if (parse_target(row->url, &tg, &why) || !host_allowed(t->callback_hosts, &tg)) {
        api_qlog("callbacks: job %" PRIu64 ": %s is no longer allowed for tenant %s", row->job, row->url,
                 t->name);
        return -1;
    }
    if ((rc = resolve_checked(&tg, pin, sizeof(pin), &why))) {
        api_qlog("callbacks: job %" PRIu64 ": %s: %s", row->job, tg.host, why);
        return rc == -2 ? -1 : 0; /* a private address is no passing failure: no more tries */
    }
    snprintf(ts, sizeof(ts), "%lld", (long long)time(NULL));
    if (!(signed_text = malloc(strlen(ts) + 1 + blen + 1))) return 0;
    sprintf(signed_text, "%s.%s", ts, row->body);
    HMAC(EVP_sha256(), t->callback_secret, (int)strlen(t->callback_secret), (unsigned char *)signed_text,
         strlen(signed_text), mac, &maclen);
    free(signed_text);
    for (unsigned i = 0; i < maclen; i++) snprintf(hex + 2 * i, 3, "%02x", mac[i]);
    snprintf(sig, sizeof(sig), "Cuzk-Signature: t=%s,v1=%s", ts, hex);
    if (!(c = curl_easy_init())) return 0;
    hdr = curl_slist_append(hdr, "Content-Type: application/json");
    hdr = curl_slist_append(hdr, sig);
    hdr = curl_slist_append(hdr, "User-Agent: cuzk-api");
    res = curl_slist_append(res, pin);
    curl_easy_setopt(c, CURLOPT_URL, row->url);
    curl_easy_setopt(c, CURLOPT_RESOLVE, res);
    curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 0L);
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, (long)CB_TIMEOUT_MS);
    curl_easy_setopt(c, CURLOPT_NOPROXY, "*"); /* the checked address, not a proxy's */
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, hdr);
    curl_easy_setopt(c, CURLOPT_POSTFIELDS, row->body);
    curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE, (long)blen);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, NULL);
    {
        FILE *sink = fopen("/dev/null", "we");

        if (sink) curl_easy_setopt(c, CURLOPT_WRITEDATA, sink);
        if (curl_easy_perform(c) == CURLE_OK) curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
        if (sink) fclose(sink);
    }
    curl_easy_cleanup(c);
    curl_slist_free_all(hdr);
    curl_slist_free_all(res);
    return status;
}

/* One pass: every pending row whose job ended gets its body; every row due is tried.
 * The earliest next try (ms, 0: none) is returned. */
static uint64_t pass(void)
{
    size_t n;
    struct cb_row *rows = rows_pending(&n);
    uint64_t next = 0;

    for (size_t i = 0; i < n; i++) {
        struct cb_row *row = &rows[i];
        struct api_tenant t;
        long status;
        int gone;

        if (!row->body) {
            if (!(row->body = end_body(row->job, row->tenant, &gone))) {
                if (gone) row_update(row->job, "failed", NULL, row->attempts, -1, 0);
                continue;
            }
            row_update(row->job, "pending", row->body, 0, -1, 0); /* the same body on every try */
            row->next_ms = 0;
        }
        if (row->next_ms > now_ms()) {
            if (!next || row->next_ms < next) next = row->next_ms;
            continue;
        }
        /* the line as it is now: a reload may have changed the secret or the hosts */
        if (api_tokens_by_name(row->tenant, &t) || !t.callback_secret[0]) {
            api_qlog("callbacks: job %" PRIu64 ": tenant %s has no callback-secret now", row->job,
                     row->tenant);
            row_update(row->job, "failed", NULL, row->attempts, -1, 0);
            continue;
        }
        status = post_once(row, &t);
        row->attempts++;
        if (status >= 200 && status < 300) {
            row_update(row->job, "delivered", NULL, row->attempts, status, 0);
        } else if (status < 0 || row->attempts >= CB_ATTEMPTS) {
            api_qlog("callbacks: job %" PRIu64 ": %s failed after %d tries", row->job, row->url,
                     row->attempts);
            row_update(row->job, "failed", NULL, row->attempts, status < 0 ? 0 : status, 0);
        } else {
            uint64_t at = now_ms() + (g_api.cfg.callback_retry_base_ms << (row->attempts - 1));

            row_update(row->job, "pending", NULL, row->attempts, status, at);
            if (!next || at < next) next = at;
        }
    }
    rows_free(rows, n);
    return next;
}

static void *deliver_main(void *arg)
{
    (void)arg;
    for (;;) {
        uint64_t mark = api_bell_mark(), next = pass(), deadline = os_now_ns() + CB_LOOK_NS, t = now_ms();

        if (next && (next <= t ? 0 : next - t) * 1000000u < CB_LOOK_NS)
            deadline = os_now_ns() + (next <= t ? 0 : next - t) * 1000000u;
        /* any job's end (or a new callback, whose add rings) wakes it */
        api_bell_wait(mark, 0, deadline, -1);
    }
    return NULL;
}

/* The delivery file opened (made if missing), its table there: 0, or -1 with err. */
static int callback_open(char *err, size_t errlen)
{
    if (curl_global_init(CURL_GLOBAL_DEFAULT)) {
        snprintf(err, errlen, "callbacks: libcurl does not start");
        return -1;
    }
    if (sqlite3_open_v2(g_api.cfg.callback_db, &cb.db,
                        SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_FULLMUTEX, NULL)) {
        snprintf(err, errlen, "--callback-db %s: %s", g_api.cfg.callback_db,
                 cb.db ? sqlite3_errmsg(cb.db) : "out of memory");
        sqlite3_close(cb.db);
        cb.db = NULL;
        return -1;
    }
    sqlite3_busy_timeout(cb.db, 5000);
    if (db_exec("PRAGMA journal_mode=WAL") || db_exec("PRAGMA synchronous=FULL") ||
        db_exec("CREATE TABLE IF NOT EXISTS callbacks(job INTEGER PRIMARY KEY, tenant TEXT NOT NULL, "
                "url TEXT NOT NULL, state TEXT NOT NULL, attempts INTEGER NOT NULL, last_status INTEGER, "
                "next_ms INTEGER NOT NULL DEFAULT 0, body TEXT, created INTEGER NOT NULL)")) {
        snprintf(err, errlen, "--callback-db %s: %s", g_api.cfg.callback_db, sqlite3_errmsg(cb.db));
        sqlite3_close(cb.db);
        cb.db = NULL;
        return -1;
    }
    return 0;
}

int api_callback_open(char *err, size_t errlen)
{
    if (!g_api.cfg.callback_db[0] || g_api.cfg.queue[0]) return 0;
    if (callback_open(err, errlen)) /* the API serves on, without callbacks (said per POST) */
        api_qlog("callbacks off: %s", err);
    return 0;
}

int api_callback_start(char *err, size_t errlen)
{
    if (!cb.db) return 0;
    return api_thread_start(deliver_main, "the callbacks' thread", err, errlen);
}
