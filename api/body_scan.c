/* body_scan.c — a body's JSON checked byte by byte, no tree built (body_scan.h). */
#include "api/body_scan.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum {
    S_VALUE,     /* a value is due (after ':' or ',' in an array, or at the start) */
    S_ARR_FIRST, /* after '[': a value or ']' */
    S_OBJ_FIRST, /* after '{': a key or '}' */
    S_KEY,       /* after ',' in an object: a key */
    S_COLON,     /* after a key */
    S_AFTER,     /* after a value: ',' or the container's end (or the body's) */
    S_STR,       /* in a string */
    S_ESC,       /* after '\' */
    S_HEX,       /* in \uXXXX */
    S_LOW_BS,    /* after a high surrogate's \uXXXX: its low half's '\' */
    S_LOW_U,     /* and its 'u' */
    S_NUM,       /* in a number (num: which part) */
    S_LIT,       /* in true, false or null */
    S_DONE,      /* the value is whole: white space only */
};

enum { N_MINUS, N_ZERO, N_INT, N_DOT, N_FRAC, N_E, N_ESIGN, N_EXP };

static int fail(struct body_scan *s, enum body_scan_error e, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int fail(struct body_scan *s, enum body_scan_error e, const char *fmt, ...)
{
    va_list ap;

    s->err = e;
    s->err_pos = s->pos + 1; /* just past the byte at fault, as jansson counted */
    s->err_line = s->line;
    s->err_col = s->col + 1; /* from 1, as editors count */
    va_start(ap, fmt);
    vsnprintf(s->msg, sizeof(s->msg), fmt, ap);
    va_end(ap);
    return -1;
}

void body_scan_init(struct body_scan *s, const struct body_scan_ops *ops, void *arg)
{
    memset(s, 0, sizeof(*s));
    s->ops = ops;
    s->arg = arg;
    s->line = 1;
    s->err_index = -1;
    s->state = S_VALUE;
}

static int is_obj(const struct body_scan *s)
{
    return s->depth && (s->stack[(s->depth - 1) / 8] >> ((s->depth - 1) % 8)) & 1;
}

/* Is the container now open an input object (its top level holds the keys)? */
static int in_input(const struct body_scan *s)
{
    return is_obj(s) && s->depth == (s->root_array ? 2u : 1u);
}

static long cur_index(const struct body_scan *s)
{
    return s->root_array ? s->inputs - 1 : -1;
}

static int push(struct body_scan *s, int obj)
{
    if (s->depth >= BODY_SCAN_DEPTH)
        return fail(s, BODY_SCAN_SYNTAX, "maximum parsing depth reached (%d)", BODY_SCAN_DEPTH);
    if (obj)
        s->stack[s->depth / 8] |= (uint8_t)(1u << (s->depth % 8));
    else
        s->stack[s->depth / 8] &= (uint8_t) ~(1u << (s->depth % 8));
    s->depth++;
    return 0;
}

/* A value has ended: what may follow it. */
static void value_done(struct body_scan *s)
{
    s->state = s->depth ? S_AFTER : S_DONE;
}

/* A value begins with c at the scan's position. */
static int value_begin(struct body_scan *s, char c)
{
    if (s->depth == 0 && c != '{' && c != '[')
        return fail(s, BODY_SCAN_SHAPE, "the body is neither an input object nor an array of them");
    if (s->depth == 1 && s->root_array) {
        if (c != '{') {
            s->err_index = s->inputs;
            return fail(s, BODY_SCAN_SHAPE, "element %ld of the array is not an input object", s->inputs);
        }
        if (s->inputs >= BODY_SCAN_INPUTS)
            return fail(s, BODY_SCAN_COUNT, "an array body holds 1 to %d input objects", BODY_SCAN_INPUTS);
    }
    switch (c) {
    case '{':
        if (push(s, 1)) return -1;
        if (s->depth == (s->root_array ? 2u : 1u)) {
            s->inputs++;
            if (s->ops && s->ops->input_begin && s->ops->input_begin(s->arg, cur_index(s), s->pos))
                return fail(s, BODY_SCAN_STOPPED, "stopped");
        }
        s->state = S_OBJ_FIRST;
        return 0;
    case '[':
        if (push(s, 0)) return -1;
        if (s->depth == 1) s->root_array = 1;
        s->state = S_ARR_FIRST;
        return 0;
    case '"':
        s->key_wanted = 0;
        s->after_str = 0;
        s->state = S_STR;
        return 0;
    case 't':
    case 'f':
    case 'n':
        s->lit = c == 't' ? "true" : c == 'f' ? "false" : "null";
        s->lit_i = 1;
        s->state = S_LIT;
        return 0;
    default:
        if (c == '-' || (c >= '0' && c <= '9')) {
            s->state = S_NUM;
            s->num = c == '-' ? N_MINUS : c == '0' ? N_ZERO : N_INT;
            s->mag = c == '-' ? 0 : (uint64_t)(c - '0');
            s->neg = c == '-';
            s->ovf = s->real = 0;
            s->ntext[0] = c;
            s->num_len = 1;
            return 0;
        }
        return fail(s, BODY_SCAN_SYNTAX, "'%c' begins no value", c >= 0x20 && c < 0x7f ? c : '?');
    }
}

/* A container closes with c (']' or '}'). */
static int close_container(struct body_scan *s, char c)
{
    if ((c == '}') != is_obj(s))
        return fail(s, BODY_SCAN_SYNTAX, "'%c' closes no %s", c, is_obj(s) ? "array" : "object");
    if (c == '}' && in_input(s) && s->ops && s->ops->input_end &&
        s->ops->input_end(s->arg, cur_index(s), s->pos + 1))
        return fail(s, BODY_SCAN_STOPPED, "stopped");
    if (c == ']' && s->depth == 1 && !s->inputs)
        return fail(s, BODY_SCAN_COUNT, "an array body holds 1 to %d input objects", BODY_SCAN_INPUTS);
    s->depth--;
    value_done(s);
    return 0;
}

/* A number ends before the byte at the scan's position. */
static int number_end(struct body_scan *s)
{
    if (s->num == N_MINUS || s->num == N_DOT || s->num == N_E || s->num == N_ESIGN)
        return fail(s, BODY_SCAN_SYNTAX, "invalid number");
    if (!s->real && (s->ovf || s->mag > (uint64_t)INT64_MAX + (uint64_t)s->neg))
        return fail(s, BODY_SCAN_SYNTAX, "too big integer");
    if (s->real && s->num_len < (int)sizeof(s->ntext)) {
        s->ntext[s->num_len] = '\0';
        if (isinf(strtod(s->ntext, NULL))) return fail(s, BODY_SCAN_SYNTAX, "real number overflow");
    }
    value_done(s);
    return 0;
}

static int number_byte(struct body_scan *s, char c)
{
    int digit = c >= '0' && c <= '9';

    switch (s->num) {
    case N_MINUS:
        if (!digit) return number_end(s);
        s->num = c == '0' ? N_ZERO : N_INT;
        s->mag = (uint64_t)(c - '0');
        break;
    case N_ZERO:
        if (digit) return fail(s, BODY_SCAN_SYNTAX, "invalid number (a leading zero)");
        /* fall through */
    case N_INT:
        if (digit) {
            if (s->mag > (UINT64_MAX - 9) / 10) s->ovf = 1;
            s->mag = s->mag * 10 + (uint64_t)(c - '0');
        } else if (c == '.') {
            s->num = N_DOT;
        } else if (c == 'e' || c == 'E') {
            s->num = N_E;
        } else {
            return number_end(s);
        }
        break;
    case N_FRAC:
        if (c == 'e' || c == 'E')
            s->num = N_E;
        else if (!digit)
            return number_end(s);
        break;
    case N_E:
        if (c == '+' || c == '-') {
            s->num = N_ESIGN;
            break;
        }
        /* fall through */
    case N_ESIGN:
    case N_DOT:
        /* A digit must come here: the fraction's first, or the exponent's. */
        if (!digit) return fail(s, BODY_SCAN_SYNTAX, "invalid number");
        s->num = s->num == N_DOT ? N_FRAC : N_EXP;
        break;
    case N_EXP:
        if (!digit) return number_end(s);
        break;
    }
    if (s->num >= N_DOT) s->real = 1;
    if (s->num_len < (int)sizeof(s->ntext) - 1) s->ntext[s->num_len] = c;
    s->num_len++;
    return 1; /* taken */
}

/* Code point cp (from a \u escape) into the key being decoded. */
static void key_put_cp(struct body_scan *s, uint32_t cp)
{
    char b[4];
    size_t n;

    if (cp < 0x80)
        b[0] = (char)cp, n = 1;
    else if (cp < 0x800)
        b[0] = (char)(0xc0 | cp >> 6), b[1] = (char)(0x80 | (cp & 0x3f)), n = 2;
    else if (cp < 0x10000)
        b[0] = (char)(0xe0 | cp >> 12), b[1] = (char)(0x80 | ((cp >> 6) & 0x3f)),
        b[2] = (char)(0x80 | (cp & 0x3f)), n = 3;
    else
        b[0] = (char)(0xf0 | cp >> 18), b[1] = (char)(0x80 | ((cp >> 12) & 0x3f)),
        b[2] = (char)(0x80 | ((cp >> 6) & 0x3f)), b[3] = (char)(0x80 | (cp & 0x3f)), n = 4;
    for (size_t i = 0; i < n; i++, s->key_len++)
        if (s->key_len < BODY_SCAN_KEY) s->key[s->key_len] = b[i];
}

static int string_end(struct body_scan *s)
{
    if (!s->key_wanted) {
        if (s->after_str) { /* a key */
            s->state = S_COLON;
            return 0;
        }
        value_done(s);
        return 0;
    }
    s->key_wanted = 0;
    s->state = S_COLON;
    if (s->ops && s->ops->input_key &&
        s->ops->input_key(s->arg, cur_index(s), s->key,
                          s->key_len < BODY_SCAN_KEY ? s->key_len : BODY_SCAN_KEY,
                          s->key_len > BODY_SCAN_KEY))
        return fail(s, BODY_SCAN_STOPPED, "stopped");
    return 0;
}

/* One byte of a string (not of an escape). */
static int string_byte(struct body_scan *s, unsigned char c)
{
    if (s->utf_need) {
        if (c < s->utf_lo || c > s->utf_hi) return fail(s, BODY_SCAN_SYNTAX, "invalid UTF-8 in a string");
        s->utf_lo = 0x80;
        s->utf_hi = 0xbf;
        s->utf_need--;
    } else if (c == '"') {
        return string_end(s);
    } else if (c == '\\') {
        s->state = S_ESC;
        return 0;
    } else if (c < 0x20) {
        return fail(s, BODY_SCAN_SYNTAX, "control character 0x%x in a string", c);
    } else if (c >= 0x80) {
        /* RFC 3629's table: the range of the second byte rules out overlong forms,
         * surrogates and code points past U+10FFFF. */
        s->utf_lo = 0x80;
        s->utf_hi = 0xbf;
        if (c >= 0xc2 && c <= 0xdf)
            s->utf_need = 1;
        else if (c >= 0xe0 && c <= 0xef) {
            s->utf_need = 2;
            if (c == 0xe0) s->utf_lo = 0xa0;
            if (c == 0xed) s->utf_hi = 0x9f;
        } else if (c >= 0xf0 && c <= 0xf4) {
            s->utf_need = 3;
            if (c == 0xf0) s->utf_lo = 0x90;
            if (c == 0xf4) s->utf_hi = 0x8f;
        } else {
            return fail(s, BODY_SCAN_SYNTAX, "invalid UTF-8 in a string");
        }
    }
    if (s->key_wanted) {
        if (s->key_len < BODY_SCAN_KEY) s->key[s->key_len] = (char)c;
        s->key_len++;
    }
    return 0;
}

static int escape_byte(struct body_scan *s, char c)
{
    static const char from[] = "\"\\/bfnrt", to[] = "\"\\/\b\f\n\r\t";
    const char *e = c ? strchr(from, c) : NULL;

    if (c == 'u') {
        s->state = S_HEX;
        s->hex = 0;
        s->hex_n = 0;
        return 0;
    }
    if (!e) return fail(s, BODY_SCAN_SYNTAX, "invalid escape in a string");
    if (s->key_wanted) key_put_cp(s, (unsigned char)to[e - from]);
    s->state = S_STR;
    return 0;
}

static int hex_byte(struct body_scan *s, char c)
{
    int v = c >= '0' && c <= '9' ? c - '0'
        : c >= 'a' && c <= 'f'   ? c - 'a' + 10
        : c >= 'A' && c <= 'F'   ? c - 'A' + 10
                                 : -1;

    if (v < 0) return fail(s, BODY_SCAN_SYNTAX, "invalid escape in a string (\\u and four hex digits)");
    s->hex = s->hex << 4 | (uint32_t)v;
    if (++s->hex_n < 4) return 0;
    s->state = S_STR;
    if (s->high) { /* the low half of a pair */
        if (s->hex < 0xdc00 || s->hex > 0xdfff)
            return fail(s, BODY_SCAN_SYNTAX, "invalid Unicode: a high surrogate without its low half");
        if (s->key_wanted) key_put_cp(s, 0x10000 + ((s->high - 0xd800) << 10) + (s->hex - 0xdc00));
        s->high = 0;
        return 0;
    }
    if (s->hex >= 0xdc00 && s->hex <= 0xdfff)
        return fail(s, BODY_SCAN_SYNTAX, "invalid Unicode: a low surrogate alone");
    if (s->hex >= 0xd800 && s->hex <= 0xdbff) {
        s->high = s->hex;
        s->state = S_LOW_BS;
        return 0;
    }
    if (!s->hex) return fail(s, BODY_SCAN_SYNTAX, "\\u0000 is not allowed");
    if (s->key_wanted) key_put_cp(s, s->hex);
    return 0;
}

static int is_ws(char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

/* One byte in a state that skips white space and takes punctuation. */
static int structural(struct body_scan *s, char c)
{
    if (is_ws(c)) return 0;
    switch (s->state) {
    case S_VALUE: return value_begin(s, c);
    case S_ARR_FIRST:
        if (c == ']') return close_container(s, c);
        return value_begin(s, c);
    case S_OBJ_FIRST:
        if (c == '}') return close_container(s, c);
        /* fall through */
    case S_KEY:
        if (c != '"') return fail(s, BODY_SCAN_SYNTAX, "a string (an object's key) was expected");
        s->key_wanted = in_input(s);
        s->key_len = 0;
        s->after_str = 1;
        s->state = S_STR;
        return 0;
    case S_COLON:
        if (c != ':') return fail(s, BODY_SCAN_SYNTAX, "':' was expected");
        s->state = S_VALUE;
        return 0;
    case S_AFTER:
        if (c == ',') {
            s->state = is_obj(s) ? S_KEY : S_VALUE;
            return 0;
        }
        if (c == ']' || c == '}') return close_container(s, c);
        return fail(s, BODY_SCAN_SYNTAX, "',' or '%c' was expected", is_obj(s) ? '}' : ']');
    default: /* S_DONE */ return fail(s, BODY_SCAN_SYNTAX, "end of file expected (bytes after the value)");
    }
}

static int step(struct body_scan *s, char c)
{
    int rc;

    switch (s->state) {
    case S_STR: return string_byte(s, (unsigned char)c);
    case S_ESC: return escape_byte(s, c);
    case S_HEX: return hex_byte(s, c);
    case S_LOW_BS:
        if (c != '\\')
            return fail(s, BODY_SCAN_SYNTAX, "invalid Unicode: a high surrogate without its low half");
        s->state = S_LOW_U;
        return 0;
    case S_LOW_U:
        if (c != 'u')
            return fail(s, BODY_SCAN_SYNTAX, "invalid Unicode: a high surrogate without its low half");
        s->state = S_HEX;
        s->hex = 0;
        s->hex_n = 0;
        return 0;
    case S_LIT:
        if (c != s->lit[s->lit_i]) return fail(s, BODY_SCAN_SYNTAX, "invalid token");
        if (!s->lit[++s->lit_i]) value_done(s);
        return 0;
    case S_NUM:
        if ((rc = number_byte(s, c)) != 0) return rc < 0 ? -1 : 0;
        /* the number ended before c: c is the next token's */
        return s->state == S_NUM ? 0 : structural(s, c);
    default: return structural(s, c);
    }
}

int body_scan_feed(struct body_scan *s, const char *p, size_t n)
{
    if (s->err) return -1;
    for (size_t i = 0; i < n; i++) {
        char c = p[i];

        /* The common run: plain bytes inside a string that is no key. */
        if (s->state == S_STR && !s->key_wanted && !s->utf_need && c != '"' && c != '\\' &&
            (unsigned char)c >= 0x20 && (unsigned char)c < 0x80) {
            s->pos++;
            s->col++;
            continue;
        }
        if (step(s, c)) return -1;
        s->pos++;
        if (c == '\n') {
            s->line++;
            s->col = 0;
        } else {
            s->col++;
        }
    }
    return 0;
}

int body_scan_end(struct body_scan *s)
{
    if (s->err) return -1;
    if (s->state == S_NUM && number_end(s)) return -1;
    if (s->state == S_DONE) return 0;
    if (!s->pos || (s->state == S_VALUE && !s->depth))
        return fail(s, BODY_SCAN_SYNTAX, "the body is empty: an input object or an array of them");
    return fail(s, BODY_SCAN_SYNTAX, "the body ends inside its value (truncated?)");
}
