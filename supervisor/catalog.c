/* catalog.c — the operator's circuits by name (sup.h): the [circuit NAME] sections of
 * cuzkd.conf (circuit_decl.h) opened, described and preloaded; `cuzk circuits`;
 * `cuzk prove --circuit NAME`; `cuzk reload` and SIGHUP.
 *
 * The files are the operator's (named in root's config), so cuzkd opens them itself,
 * but still as it would a client's: a zkey must be a regular file that opens as a
 * Groth16 zkey, a generator must pass wgen_trust_check under --wgen-dir like any
 * other. Each circuit keeps its files open: a job by name takes a fresh open of the
 * same inode (so a file renamed over meanwhile changes nothing until a reload), and
 * copies it through the ordinary submit path (intake.h), whose copy is the preload's
 * shared copy when the file is the same. A reload opens every section again; a zkey
 * whose file changed is preloaded anew under the same name, and running jobs keep the
 * copies they hold. Opening reads the whole zkey once (its fingerprint), in the loop:
 * meant for a config's few circuits at start and on reload. */
#include "sup.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "zk/fingerprint.h"
#include "supervisor/owners.h"
#include "zk/r1cs.h"
#include "zk/wgen_names.h"
#include "supervisor/wgen_trust.h"
#include "zk/zkey.h"

void catalog_entry_close(struct cat_entry *e)
{
    if (e->zkey_fd >= 0) close(e->zkey_fd);
    if (e->r1cs_fd >= 0) close(e->r1cs_fd);
    if (e->wgen_fd >= 0) close(e->wgen_fd);
    e->zkey_fd = e->r1cs_fd = e->wgen_fd = -1;
}

/* Open one of the circuit's files: a regular file, or -1 with e->error. */
static int cat_open_file(struct cat_entry *e, const char *what, const char *path)
{
    struct stat st;
    int fd = open(path, O_RDONLY | O_NOCTTY | O_NONBLOCK | O_CLOEXEC);

    if (fd < 0) {
        snprintf(e->error, sizeof(e->error), "%s %s: %s", what, path, strerror(errno));
        return -1;
    }
    if (fstat(fd, &st) || !S_ISREG(st.st_mode)) {
        snprintf(e->error, sizeof(e->error), "%s %s: not a regular file", what, path);
        close(fd);
        return -1;
    }
    return fd;
}

/* The zkey's facts: curve, fingerprint, constraints. The last public input's row of
 * section 4 is row nConstraints + nPublic (spec §3.3: snarkjs adds the rows
 * nConstraints + i, i = 0..nPublic, each (A, signal i, 1)), so the largest row is
 * nConstraints + nPublic. 0, or -1 with e->error. */
static int cat_describe(struct cat_entry *e)
{
    char p[64], err[512];
    uint8_t fp[FP_BYTES];
    uint32_t top = 0;
    struct stat st;
    zkey z;

    snprintf(p, sizeof(p), "/proc/self/fd/%d", e->zkey_fd);
    if (zkey_open(&z, p, err, sizeof(err))) {
        snprintf(e->error, sizeof(e->error), "zkey %s: %.200s", e->d.zkey, err);
        return -1;
    }
    if (fp_of_zkey(&z, fp, err, sizeof(err))) {
        snprintf(e->error, sizeof(e->error), "zkey %s: %.200s", e->d.zkey, err);
        zkey_close(&z);
        return -1;
    }
    for (uint64_t i = 0; i < z.ncoefs; i++) {
        uint64_t v[8];
        uint32_t m, c, sig;

        zkey_coef(&z, i, &m, &c, &sig, v);
        if (c > top) top = c;
    }
    fp_hex(fp, e->fp);
    e->curve = z.n8q == 32 ? "bn128" : "bls12381";
    e->npublic = z.npublic;
    e->nvars = z.nvars;
    e->domain_size = z.domain_size;
    e->constraints = top >= z.npublic ? top - z.npublic : 0;
    zkey_close(&z);
    if (!fstat(e->zkey_fd, &st)) control_file_id(&st, e->id);
    return 0;
}

/* The r1cs must describe the zkey's circuit (the same fingerprint): a mix-up in the
 * config would fail every partition in the synth; here it fails the circuit, once,
 * with the reason. 0, or -1 with e->error. */
static int cat_r1cs_fits(struct cat_entry *e)
{
    char p[64], err[512], hex[FP_HEX];
    uint8_t fp[FP_BYTES];
    r1cs r;

    snprintf(p, sizeof(p), "/proc/self/fd/%d", e->r1cs_fd);
    if (r1cs_open(&r, p, err, sizeof(err)) || fp_of_r1cs(&r, fp, err, sizeof(err))) {
        r1cs_close(&r);
        snprintf(e->error, sizeof(e->error), "r1cs %s: %.200s", e->d.r1cs, err);
        return -1;
    }
    r1cs_close(&r);
    fp_hex(fp, hex);
    if (strcmp(hex, e->fp)) {
        snprintf(e->error, sizeof(e->error),
                 "r1cs %.500s is another circuit's than zkey %.500s (fingerprints %.16s..., "
                 "%.16s...)",
                 e->d.r1cs, e->d.zkey, hex, e->fp);
        return -1;
    }
    return 0;
}

/* A declaration opened: files, facts, the generator's trust. e->error says what failed
 * (the circuit is listed "failed" and refuses jobs). */
void catalog_entry_open(const struct cuzkd_config *c, struct cat_entry *e, const struct circuit_decl *d)
{
    char err[512];

    memset(e, 0, sizeof(*e));
    e->d = *d;
    e->zkey_fd = e->r1cs_fd = e->wgen_fd = -1;
    if ((e->zkey_fd = cat_open_file(e, "zkey", d->zkey)) < 0 || cat_describe(e)) return;
    if (d->r1cs[0] && ((e->r1cs_fd = cat_open_file(e, "r1cs", d->r1cs)) < 0 || cat_r1cs_fits(e))) return;
    if (d->wgen[0]) {
        if ((e->wgen_fd = cat_open_file(e, "witness-gen", d->wgen)) < 0) return;
        /* The same rules as a client's generator: the operator's --wgen-dir. */
        if (wgen_trust_check(e->wgen_fd, c->wgen_dir, d->wgen, err, sizeof(err))) {
            snprintf(e->error, sizeof(e->error), "%s", err);
            return;
        }
        /* Its input signals, for the API's check of a request (none: no check). */
        if (wgen_names_read(e->wgen_fd, e->inputs, sizeof(e->inputs), err, sizeof(err)) < 0)
            logmsg("circuit %s: witness-gen %s: %s: its input signals are not listed", d->name, d->wgen, err);
    }
}

/* preload (or evict) path in every stage, as cuzk preload does but as cuzkd's own
 * (owners.h: only root or cuzkd's user may replace or evict it). */
static void cat_circuit_request(struct sup *s, struct cat_entry *e, int evict, const char *path)
{
    struct circ_live lv[MAX_CHILDREN];
    size_t n = children_live(s, lv);
    struct control_req r = { 0 };
    char log[JOBTAB_PATH_LEN + 64] = "";
    int fds[1] = { e ? e->zkey_fd : -1 };
    json_t *reply;
    char *line;

    r.kind = evict ? CONTROL_EVICT : CONTROL_PRELOAD;
    r.zkey = path;
    r.zkey_fd = 0;
    line = circuits_request(&s->pl, &r, fds, evict ? 0 : 1, &s->copies, -1, lv, n, log, sizeof(log));
    if (log[0]) {
        logmsg("circuit %s: %s", e ? e->d.name : "(removed)", log);
        owners_preload_note(s->preload_owner, evict, path, geteuid());
    } else if (line && (reply = json_loads(line, 0, NULL))) {
        const char *m = json_string_value(json_object_get(reply, "message"));

        /* Not resident (say, more circuits than preload slots): jobs still run,
         * each stage loading the zkey when one comes. */
        if (e) snprintf(e->note, sizeof(e->note), "not preloaded: %.400s", m ? m : "refused");
        logmsg("circuit %s: %s refused: %s", e ? e->d.name : path, evict ? "evict" : "preload", m ? m : "?");
        json_decref(reply);
    }
    free(line);
}

/* Has path a preload in the table? */
static int cat_preloaded(const struct sup *s, const char *path)
{
    int applied, failed;

    return !circuits_preload_state(&s->pl, path, NULL, 0, &applied, &failed);
}

static struct cat_entry *cat_find(struct sup *s, const char *name)
{
    for (uint32_t i = 0; i < s->n_cat; i++)
        if (!strcmp(s->cat[i].d.name, name)) return &s->cat[i];
    return NULL;
}

void catalog_load(struct sup *s)
{
    for (uint32_t i = 0; i < s->c->n_circuits; i++) {
        struct cat_entry *e = &s->cat[s->n_cat++];

        catalog_entry_open(s->c, e, &s->c->circuits[i]);
        if (e->error[0])
            logmsg("circuit %s: %s", e->d.name, e->error);
        else
            cat_circuit_request(s, e, 0, e->d.zkey);
    }
}

/* declared, loading, resident (every live stage has it), or failed (with a reason). */
static const char *cat_state(const struct sup *s, const struct cat_entry *e, const char **why)
{
    struct circ_live lv[MAX_CHILDREN];
    size_t n = children_live(s, lv);
    int applied, failed;

    *why = NULL;
    if (e->error[0]) {
        *why = e->error;
        return "failed";
    }
    if (circuits_preload_state(&s->pl, e->d.zkey, lv, n, &applied, &failed)) return "declared";
    if (failed) {
        *why = "a stage could not load its zkey (its log says why)";
        return "failed";
    }
    return n && (size_t)applied == n ? "resident" : "loading";
}

/* The generator's table as [{"name", "size"}] in signal order. */
static json_t *inputs_json(const char *t)
{
    json_t *a = json_array();

    while (*t) {
        char nm[256];
        unsigned long long sz;
        int used = 0;

        if (sscanf(t, "%255s %llu%n", nm, &sz, &used) != 2) break;
        json_array_append_new(a, json_pack("{s:s,s:I}", "name", nm, "size", (json_int_t)sz));
        t += used;
        while (*t == '\n') t++;
    }
    return a;
}

json_t *catalog_json(const struct sup *s)
{
    json_t *a = json_array();

    for (uint32_t i = 0; i < s->n_cat; i++) {
        const struct cat_entry *e = &s->cat[i];
        const char *why, *st = cat_state(s, e, &why);
        json_t *o = json_pack("{s:s,s:s,s:s}", "name", e->d.name, "state", st, "zkey", e->d.zkey);

        if (e->d.r1cs[0]) json_object_set_new(o, "r1cs", json_string(e->d.r1cs));
        if (e->d.wgen[0]) json_object_set_new(o, "witness_gen", json_string(e->d.wgen));
        if (e->d.max_input_bytes)
            json_object_set_new(o, "max_input_bytes", json_integer((json_int_t)e->d.max_input_bytes));
        if (e->fp[0]) {
            json_object_set_new(o, "fingerprint", json_string(e->fp));
            json_object_set_new(o, "curve", json_string(e->curve));
            json_object_set_new(o, "constraints", json_integer(e->constraints));
            json_object_set_new(o, "public", json_integer(e->npublic));
            json_object_set_new(o, "signals", json_integer(e->nvars));
            json_object_set_new(o, "domain_size", json_integer(e->domain_size));
        }
        if (e->inputs[0]) json_object_set_new(o, "inputs", inputs_json(e->inputs));
        if (why) json_object_set_new(o, "error", json_string(why));
        if (e->note[0]) json_object_set_new(o, "note", json_string(e->note));
        json_array_append_new(a, o);
    }
    return a;
}

int catalog_reload(struct sup *s, json_t **changed, char *err, size_t errlen)
{
    struct circuit_decl nd[PROTO_CIRCUIT_DECL_MAX];
    const char *what[PROTO_CIRCUIT_DECL_MAX];
    struct cat_entry *ne;
    uint32_t nn = 0;
    int rc;

    *changed = NULL;
    if (!s->c->config_path[0] && !s->c->circuits_dir[0]) {
        snprintf(err, errlen, "cuzkd was started without --config or --circuits-dir: no circuits to reload");
        return -EINVAL;
    }
    /* The whole file (and directory) must read, or nothing changes: a typo keeps the
         * running set. */
    if ((rc = config_load_circuits(s->c->config_path, s->c->circuits_dir, nd, &nn, err, errlen))) return rc;
    if (!(ne = calloc(PROTO_CIRCUIT_DECL_MAX, sizeof(*ne)))) {
        snprintf(err, errlen, "out of memory");
        return -ENOMEM;
    }
    *changed = json_array();
    for (uint32_t i = 0; i < nn; i++) {
        struct cat_entry *o = cat_find(s, nd[i].name), *e = &ne[i];

        catalog_entry_open(s->c, e, &nd[i]);
        if (e->error[0]) {
            what[i] = "failed";
            logmsg("circuit %s: %s", e->d.name, e->error);
        } else if (o && !o->error[0] && !strcmp(o->d.zkey, e->d.zkey) && !strcmp(o->id, e->id)) {
            what[i] = "unchanged";
        } else {
            what[i] = o ? "changed" : "added";
        }
        json_array_append_new(
            *changed, json_pack("{s:s,s:s,s:s}", "name", e->d.name, "change", what[i], "fingerprint", e->fp));
    }
    /* Circuits gone, or whose zkey path moved: their preload goes (first, so its
     * slot serves the preloads below) unless a circuit that loaded still names that
     * path. */
    for (uint32_t i = 0; i < s->n_cat; i++) {
        struct cat_entry *o = &s->cat[i];
        int kept = 0, same_name = 0;

        for (uint32_t j = 0; j < nn; j++) {
            kept |= !ne[j].error[0] && !strcmp(ne[j].d.zkey, o->d.zkey);
            same_name |= !strcmp(ne[j].d.name, o->d.name);
        }
        if (!same_name)
            json_array_append_new(*changed, json_pack("{s:s,s:s}", "name", o->d.name, "change", "removed"));
        if (!kept && cat_preloaded(s, o->d.zkey)) cat_circuit_request(s, NULL, 1, o->d.zkey);
        catalog_entry_close(o);
    }
    /* New or changed zkeys are preloaded (the preload of the same path is replaced:
     * new jobs take the new file, running jobs hold their own copies), and so is an
     * unchanged one that has no preload yet (the slots were full before). */
    for (uint32_t i = 0; i < nn; i++)
        if (!ne[i].error[0] && (strcmp(what[i], "unchanged") || !cat_preloaded(s, ne[i].d.zkey)))
            cat_circuit_request(s, &ne[i], 0, ne[i].d.zkey);
    memcpy(s->cat, ne, nn * sizeof(*ne));
    s->n_cat = nn;
    free(ne);
    return 0;
}

int catalog_submit(struct sup *s, struct control_req *r, int extra[3], size_t *n_extra, const char **code,
                   char *m, size_t len)
{
    struct cat_entry *e = cat_find(s, r->circuit);
    const struct {
        int fd;
        const char *key, *path;
        const char **field;
        int *index;
    } f[3] = {
        { e ? e->zkey_fd : -1, "circuit_zkey", e ? e->d.zkey : "", &r->zkey, &r->zkey_fd },
        { e ? e->r1cs_fd : -1, "circuit_r1cs", e ? e->d.r1cs : "", &r->r1cs, &r->r1cs_fd },
        { e && r->inputs ? e->wgen_fd : -1, "circuit_witness_gen", e ? e->d.wgen : "", &r->witness_gen,
          &r->witness_gen_fd },
    };

    *n_extra = 0;
    *code = PROTO_E_NO_CIRCUIT;
    if (!e) {
        snprintf(m, len,
                 "no circuit \"%s\" is declared in cuzkd's config (`cuzk circuits` "
                 "lists them)",
                 r->circuit);
        return -ENOENT;
    }
    if (e->error[0]) {
        snprintf(m, len, "circuit %s could not be loaded: %s", e->d.name, e->error);
        return -ENOENT;
    }
    *code = PROTO_E_BAD_REQUEST;
    if (r->inputs && e->wgen_fd < 0) {
        snprintf(m, len,
                 "circuit %s has no witness-gen in cuzkd's config: send .wtns "
                 "witnesses, or ask the operator to declare its generator",
                 e->d.name);
        return -EINVAL;
    }
    for (int i = 0; i < 3; i++) {
        char p[64];
        int fd;

        if (f[i].fd < 0) continue;
        /* A fresh open of the same inode: its own offset for the intake's reads. */
        snprintf(p, sizeof(p), "/proc/self/fd/%d", f[i].fd);
        if ((fd = open(p, O_RDONLY | O_NOCTTY | O_NONBLOCK | O_CLOEXEC)) < 0) {
            *code = PROTO_E_INTERNAL;
            snprintf(m, len, "circuit %s: cannot open its %s again: %s", e->d.name, f[i].key + 8,
                     strerror(errno));
            while (*n_extra) close(extra[--*n_extra]);
            return -errno;
        }
        /* The strings live in the request's JSON, which the intake holds. */
        json_object_set_new(r->root, f[i].key, json_string(f[i].path));
        *f[i].field = json_string_value(json_object_get(r->root, f[i].key));
        *f[i].index = (int)(r->n_fds + *n_extra);
        extra[(*n_extra)++] = fd;
    }
    r->max_input_bytes = e->d.max_input_bytes;
    return 0;
}

void catalog_free(struct sup *s)
{
    for (uint32_t i = 0; i < s->n_cat; i++) catalog_entry_close(&s->cat[i]);
    s->n_cat = 0;
}
