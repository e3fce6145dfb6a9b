/* signals.c — a request's input objects against the circuit's main input signals
 * (api.h), before any job is made: cuzkd lists a circuit's inputs ("inputs": name
 * and size, from its witness generator, wgen_names.h), and an input object must give
 * each of them and no other. A signal left out or one the circuit does not have is a
 * 422 naming it at once, not a job that fails in the synth stage. The values
 * themselves (their count, their range) are still the generator's to check.
 *
 * The check runs on the keys as the body scanner (body_scan.h) meets them, so no tree
 * of the body is built: a key that names no input is refused as soon as it has
 * arrived, a missing one when its object closes; the state is a mark per input name
 * and the keys of the object being read (each a declared name's head, so a few).
 *
 * circom's names of bus members ("a.b", "x[1].y") come from nested objects
 * ({"a":{"b":1}}) or from keys that already are such names ({"a.b":1}): a key names
 * a signal when it is a name, or a name's head up to a '.' or '[' of it; a signal is
 * given when a key is its head, or its name whole, or a head of it. */
#include "api.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Is k (kl bytes) the head of name n: n itself, or n up to one of its '.' or '['? */
static int head_of(const char *k, size_t kl, const char *n)
{
    return !strncmp(n, k, kl) && (n[kl] == '\0' || n[kl] == '.' || n[kl] == '[');
}

static void signal_problem(struct api_resp *r, const char *code, const char *sig, size_t sl, long index)
{
    char name[128], at[48] = "", d[320];
    json_t *x;

    snprintf(name, sizeof(name), "%.*s", (int)(sl < 120 ? sl : 120), sig);
    if (index >= 0) snprintf(at, sizeof(at), "input %ld of the array: ", index);
    if (!strcmp(code, "missing_signal"))
        snprintf(d, sizeof(d), "%ssignal %s of the circuit is not given", at, name);
    else if (!strcmp(code, "duplicate_key"))
        snprintf(d, sizeof(d), "%skey %s is given twice", at, name);
    else
        snprintf(d, sizeof(d), "%ssignal %s is not an input of the circuit", at, name);
    x = json_pack("{s:s}", "signal", name);
    if (index >= 0) json_object_set_new(x, "index", json_integer(index));
    if (!strcmp(code, "duplicate_key"))
        api_problem(r, 400, "format", "bad_json", d, x);
    else
        api_problem(r, 422, "mismatch", code, d, x);
}

int api_sig_init(struct api_sigcheck *c, const json_t *inputs, struct api_resp *r)
{
    memset(c, 0, sizeof(*c));
    c->r = r;
    if (!json_is_array(inputs) || !json_array_size(inputs)) return 0; /* not known: the generator checks */
    c->inputs = inputs;
    c->n = json_array_size(inputs);
    c->given = calloc(c->n, 1);
    c->seen = json_object();
    if (!c->given || !c->seen) {
        api_sig_free(c);
        api_problem(r, 500, "internal", PROTO_E_INTERNAL, "out of memory", NULL);
        return -1;
    }
    return 0;
}

void api_sig_free(struct api_sigcheck *c)
{
    free(c->given);
    json_decref(c->seen);
    c->given = NULL;
    c->seen = NULL;
    c->inputs = NULL;
}

int api_sig_begin(struct api_sigcheck *c)
{
    if (!c->inputs) return 0;
    memset(c->given, 0, c->n);
    json_object_clear(c->seen);
    return 0;
}

int api_sig_key(struct api_sigcheck *c, const char *key, size_t kl, int cut, long index)
{
    int declared = 0;
    char k[BODY_SCAN_KEY + 1];
    size_t i;
    json_t *e;

    if (!c->inputs) return 0;
    memcpy(k, key, kl);
    k[kl] = '\0';
    if (!cut && kl)
        json_array_foreach (c->inputs, i, e) {
            const char *n = json_string_value(json_object_get(e, "name"));

            if (!n) continue;
            if (head_of(k, kl, n)) declared = 1, c->given[i] = 1;
        }
    if (!declared) {
        signal_problem(c->r, "unknown_signal", k, kl, index);
        return -1;
    }
    /* A declared head: the keys of one object are few. */
    if (json_object_get(c->seen, k)) {
        signal_problem(c->r, "duplicate_key", k, kl, index);
        return -1;
    }
    json_object_set_new(c->seen, k, json_true());
    return 0;
}

int api_sig_end(struct api_sigcheck *c, long index)
{
    size_t i;
    json_t *e;

    if (!c->inputs) return 0;
    json_array_foreach (c->inputs, i, e) {
        const char *n = json_string_value(json_object_get(e, "name"));

        if (n && *n && !c->given[i]) {
            signal_problem(c->r, "missing_signal", n, strlen(n), index);
            return -1;
        }
    }
    return 0;
}

/* One input object of a tree (the unit tests' and the fuzzer's way in). */
static int check_one(struct api_sigcheck *c, json_t *o, long index)
{
    const char *key;
    json_t *v;

    api_sig_begin(c);
    json_object_foreach (o, key, v)
        if (api_sig_key(c, key, strlen(key) < BODY_SCAN_KEY ? strlen(key) : BODY_SCAN_KEY,
                        strlen(key) > BODY_SCAN_KEY, index))
            return -1;
    return api_sig_end(c, index);
}

int api_check_signals(struct api_resp *r, const json_t *inputs, json_t *body)
{
    struct api_sigcheck c;
    json_t *e;
    size_t i;
    int rc = 0;

    if (api_sig_init(&c, inputs, r)) return -1;
    if (json_is_object(body))
        rc = check_one(&c, body, -1);
    else
        json_array_foreach (body, i, e)
            if ((rc = check_one(&c, e, (long)i))) break;
    api_sig_free(&c);
    return rc;
}
