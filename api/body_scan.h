/* body_scan.h — a request body's JSON checked as its bytes arrive, with no tree built
 * (api/body_scan.c).
 *
 * A body used to be parsed whole by jansson, which makes a json_t of every value: a
 * 30 MiB body of small numbers cost about 21 times its size (600 MB), and a few at
 * once could take the machine. The witness generator parses each input.json itself
 * (synth/wgen.c), so cuzk-api needs no tree: only to know that the body is JSON of
 * the right shape, where each input object begins and ends, and the names of each
 * input's top-level keys (the signal check, signals.c). This scanner is a pushdown
 * state machine fed chunk by chunk: its state is a few hundred bytes (a bit per
 * level of nesting, the key being read), whatever the body's size; its work is one
 * step per byte.
 *
 * What it accepts is RFC 8259 JSON as jansson reads it with JSON_REJECT_DUPLICATES:
 * valid UTF-8 only (no overlong form, no surrogate, nothing past U+10FFFF), no
 * \u0000, paired \u surrogates, nesting at most BODY_SCAN_DEPTH, integers within
 * int64 and reals within double's range, nothing after the value but white space.
 * Duplicate keys are left to the caller (signals.c checks an input's top level; the
 * generator refuses one deeper down). The shape: an object (one input), or an array
 * of 1 to BODY_SCAN_INPUTS objects. */
#ifndef CUZK_API_BODY_SCAN_H
#define CUZK_API_BODY_SCAN_H

#include <stddef.h>
#include <stdint.h>

#define BODY_SCAN_INPUTS 4096 /* input objects of an array body */
#define BODY_SCAN_DEPTH  2048 /* levels of nesting, as jansson's parser allows */
#define BODY_SCAN_KEY    256  /* bytes of an input's key passed whole (longer: cut) */

/* What a body's input objects look like as they pass. index is -1 for a body that is
 * one object, else the object's place in the array; positions are byte offsets in the
 * body. A callback that returns non-zero stops the scan (BODY_SCAN_STOPPED): it has
 * its own reason. */
struct body_scan_ops {
    int (*input_begin)(void *arg, long index, uint64_t pos); /* pos: its '{' */
    /* One top-level key, decoded (UTF-8); cut: only its first BODY_SCAN_KEY bytes. */
    int (*input_key)(void *arg, long index, const char *key, size_t len, int cut);
    int (*input_end)(void *arg, long index, uint64_t end); /* end: one past its '}' */
};

enum body_scan_error {
    BODY_SCAN_OK = 0,
    BODY_SCAN_SYNTAX,  /* not JSON: msg; err_pos just past the byte at fault, err_line, err_col */
    BODY_SCAN_SHAPE,   /* JSON, but not an object or an array of objects (index: the element, or -1) */
    BODY_SCAN_COUNT,   /* an array of no object, or of more than BODY_SCAN_INPUTS */
    BODY_SCAN_STOPPED, /* a callback said stop */
};

struct body_scan {
    const struct body_scan_ops *ops;
    void *arg;
    enum body_scan_error err;
    char msg[128];
    uint64_t err_pos, err_line, err_col;
    long err_index;
    /* the rest is the machine's own */
    uint64_t pos, line, col;
    int state, after_str, lit_i, num, num_len;
    const char *lit;
    unsigned depth;
    uint8_t stack[BODY_SCAN_DEPTH / 8]; /* a bit per level: 1 object, 0 array */
    long inputs;                        /* input objects begun */
    int root_array;
    /* a string: UTF-8 bytes still to come and the range of the next; \u digits */
    int utf_need, hex_n;
    uint8_t utf_lo, utf_hi;
    uint32_t hex, high; /* high: a \u high surrogate awaiting its low half */
    int key_wanted;     /* this string is an input's key: decoded into key */
    size_t key_len;
    char key[BODY_SCAN_KEY + 4];
    /* a number: its magnitude while it is an integer, and its text for a real's range */
    uint64_t mag;
    int neg, ovf, real;
    char ntext[64];
};

void body_scan_init(struct body_scan *s, const struct body_scan_ops *ops, void *arg);
/* The next n bytes of the body: 0, or -1 once the body is refused (s->err and the
 * fields it names; later calls do nothing and return -1). */
int body_scan_feed(struct body_scan *s, const char *p, size_t n);
/* The body has ended: 0 when it was a whole value of the right shape, else -1. */
int body_scan_end(struct body_scan *s);

#endif
