/* signals.c — a request's input objects against the circuit's main input signals
 * (api.h), before any job is made: cuzkd lists a circuit's inputs ("inputs": name
 * and size, from its witness generator, wgen_names.h), and an input object must give
 * each top-level name once and no other. A signal left out or one the circuit does
 * not have is a 422 naming it at once, not a job that fails in the synth stage. The
 * values themselves (their count, their range) are still the generator's to check:
 * circom's own names for nested buses ("a.b", "x[1].y") are checked by their first
 * part, the key of the input object. */
#include "api.h"

#include <stdio.h>
#include <string.h>

/* The top-level key of a qualified name: up to its first '.' or '['. */
static size_t top_len(const char *n)
{
    return strcspn(n, ".[");
}

/* Is key the top-level part of one of the circuit's inputs? */
static int declared(const json_t *inputs, const char *key)
{
    size_t i, kl = strlen(key);
    json_t *e;

    json_array_foreach (inputs, i, e) {
        const char *n = json_string_value(json_object_get(e, "name"));

        if (n && top_len(n) == kl && !strncmp(n, key, kl)) return 1;
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
        char k[128];
        size_t kl = n ? top_len(n) : 0;

        if (!kl || kl >= sizeof(k)) continue;
        memcpy(k, n, kl);
        k[kl] = '\0';
        if (!json_object_get(o, k)) {
            signal_problem(r, 1, k, kl, index);
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
