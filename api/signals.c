/* signals.c — a request's input objects against the circuit's main input signals
 * (api.h), before any job is made: cuzkd lists a circuit's inputs ("inputs": name
 * and size, from its witness generator, wgen_names.h), and an input object must give
 * each of them and no other. A signal left out or one the circuit does not have is a
 * 422 naming it at once, not a job that fails in the synth stage. The values
 * themselves (their count, their range) are still the generator's to check.
 *
 * circom's names of bus members ("a.b", "x[1].y") come from nested objects
 * ({"a":{"b":1}}) or from keys that already are such names ({"a.b":1}): a key names
 * a signal when it is a name, or a name's head up to a '.' or '[' of it; a signal is
 * given when a key is its head, or its name whole, or a head of it. */
#include "api.h"

#include <stdio.h>
#include <string.h>

/* Is k (kl bytes) the head of name n: n itself, or n up to one of its '.' or '['? */
static int head_of(const char *k, size_t kl, const char *n)
{
    return !strncmp(n, k, kl) && (n[kl] == '\0' || n[kl] == '.' || n[kl] == '[');
}

/* Does key name (the head of) one of the circuit's inputs? */
static int declared(const json_t *inputs, const char *key)
{
    size_t i, kl = strlen(key);
    json_t *e;

    json_array_foreach (inputs, i, e) {
        const char *n = json_string_value(json_object_get(e, "name"));

        if (n && kl && head_of(key, kl, n)) return 1;
    }
    return 0;
}

/* Does some key of o give signal n (n's head, or a longer head of it)? */
static int given(json_t *o, const char *n)
{
    const char *key;
    json_t *v;

    json_object_foreach (o, key, v) {
        size_t kl = strlen(key);

        if (kl && head_of(key, kl, n)) return 1;
    }
    return 0;
}

static void signal_problem(struct api_resp *r, int missing, const char *sig, size_t sl, long index)
{
    char name[128], at[48] = "", d[320];
    json_t *x;

    snprintf(name, sizeof(name), "%.*s", (int)(sl < 120 ? sl : 120), sig);
    if (index >= 0) snprintf(at, sizeof(at), "input %ld of the array: ", index);
    if (missing)
        snprintf(d, sizeof(d), "%ssignal %s of the circuit is not given", at, name);
    else
        snprintf(d, sizeof(d), "%ssignal %s is not an input of the circuit", at, name);
    x = json_pack("{s:s}", "signal", name);
    if (index >= 0) json_object_set_new(x, "index", json_integer(index));
    api_problem(r, 422, "mismatch", missing ? "missing_signal" : "unknown_signal", d, x);
}

/* One input object; index -1 for a body that is the object itself. */
static int check_one(struct api_resp *r, const json_t *inputs, json_t *o, long index)
{
    const char *key;
    json_t *v, *e;
    size_t i;

    json_object_foreach (o, key, v)
        if (!declared(inputs, key)) {
            signal_problem(r, 0, key, strlen(key), index);
            return -1;
        }
    json_array_foreach (inputs, i, e) {
        const char *n = json_string_value(json_object_get(e, "name"));

        if (n && *n && !given(o, n)) {
            signal_problem(r, 1, n, strlen(n), index);
            return -1;
        }
    }
    return 0;
}

int api_check_signals(struct api_resp *r, const json_t *inputs, json_t *body)
{
    json_t *e;
    size_t i;

    if (!json_is_array(inputs) || !json_array_size(inputs)) return 0; /* not known: the generator checks */
    if (json_is_object(body)) return check_one(r, inputs, body, -1);
    json_array_foreach (body, i, e)
        if (check_one(r, inputs, e, (long)i)) return -1;
    return 0;
}
