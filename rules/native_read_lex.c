/* Tokens of rule text as the grammar's lexer (clips.lark, lark's contextual lexer) reads them:
 * whitespace is [ \t\n\r\f], a comment runs from `;` to \n or \r, a word ends at a delimiter
 * ([\x00-\x20\x7f"()&|~;<]; `<` only starts one), and a word is classified by the terminals of
 * an expression in their priority order (THEN, COLON/EQUALS, GLOBALVAR, SFVAR/MFVAR, FLOAT/INTEGER,
 * SFWILD/MFWILD/INSTANCE_NAME, SYMBOL). A word with a character outside ASCII is W_BAD (Python's
 * \d holds Unicode digits; the grammar reads such text). Lines count \n only, as lark does. */
#include "native_read.h"

static int is_ws(Py_UCS4 c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f'; }

static int is_delim(Py_UCS4 c) {
    return c <= 0x20 || c == 0x7f || c == '"' || c == '(' || c == ')' || c == '&' || c == '|' || c == '~' ||
           c == ';' || c == '<';
}

static int is_digit(Py_UCS4 c) { return c >= '0' && c <= '9'; }
static int is_alpha(Py_UCS4 c) { return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z'); }

/* [+-]?\d+ */
static int is_integer(const rd_reader *r, Py_ssize_t i, Py_ssize_t j) {
    Py_UCS4 c = RD_CH(r, i);
    if (c == '+' || c == '-') i++;
    if (i >= j) return 0;
    for (; i < j; i++)
        if (!is_digit(RD_CH(r, i))) return 0;
    return 1;
}

static Py_ssize_t digits(const rd_reader *r, Py_ssize_t i, Py_ssize_t j) {
    while (i < j && is_digit(RD_CH(r, i))) i++;
    return i;
}

/* [eE][+-]?\d+ at i, ending exactly at j */
static int exponent_to_end(const rd_reader *r, Py_ssize_t i, Py_ssize_t j) {
    Py_UCS4 c;
    if (i >= j) return 0;
    c = RD_CH(r, i);
    if (c != 'e' && c != 'E') return 0;
    i++;
    if (i < j && (RD_CH(r, i) == '+' || RD_CH(r, i) == '-')) i++;
    return i < j && digits(r, i, j) == j;
}

/* [+-]?(?:\d+\.\d*(?:exp)?|\.\d+(?:exp)?|\d+exp), the whole of [i, j) */
static int is_float(const rd_reader *r, Py_ssize_t i, Py_ssize_t j) {
    Py_ssize_t k;
    Py_UCS4 c = RD_CH(r, i);
    if (c == '+' || c == '-') i++;
    k = digits(r, i, j);
    if (k > i) {
        if (k < j && RD_CH(r, k) == '.') {
            k = digits(r, k + 1, j);
            return k == j || exponent_to_end(r, k, j);
        }
        return exponent_to_end(r, k, j);
    }
    if (k < j && RD_CH(r, k) == '.') {
        Py_ssize_t m = digits(r, k + 1, j);
        if (m == k + 1) return 0;
        return m == j || exponent_to_end(r, m, j);
    }
    return 0;
}

/* Whether `(` follows after optional whitespace (COLON / EQUALS's lookahead; comments do not count). */
static int paren_follows(const rd_reader *r, Py_ssize_t j) {
    while (j < r->n && is_ws(RD_CH(r, j))) j++;
    return j < r->n && RD_CH(r, j) == '(';
}

/* SFWILD / MFWILD's lookahead: [ \t\n\r\f()] or the end */
static int wild_follows(const rd_reader *r, Py_ssize_t j) {
    Py_UCS4 c;
    if (j >= r->n) return 1;
    c = RD_CH(r, j);
    return is_ws(c) || c == '(' || c == ')';
}

static int classify(const rd_reader *r, Py_ssize_t i, Py_ssize_t j) {
    Py_ssize_t len = j - i, k;
    Py_UCS4 c0 = RD_CH(r, i), c1 = len > 1 ? RD_CH(r, i + 1) : 0;
    for (k = i; k < j; k++)
        if (RD_CH(r, k) >= 0x80) return W_BAD;
    if (len == 2 && c0 == '=' && c1 == '>') return W_THEN;
    if (len == 1 && (c0 == ':' || c0 == '=') && paren_follows(r, j)) return c0 == ':' ? W_COLON : W_EQUALS;
    if (c0 == '?') {
        if (len >= 4 && c1 == '*' && RD_CH(r, j - 1) == '*') return W_GLOBALVAR;
        if (len == 1) return wild_follows(r, j) ? W_SFWILD : W_BAD;
        return is_alpha(c1) || c1 == '*' ? W_SFVAR : W_BAD;
    }
    if (c0 == '$' && c1 == '?') {
        if (len == 2) return wild_follows(r, j) ? W_MFWILD : W_BAD;
        c1 = RD_CH(r, i + 2);
        return is_alpha(c1) || c1 == '*' ? W_MFVAR : W_BAD;
    }
    if (is_float(r, i, j)) return W_FLOAT;
    if (is_integer(r, i, j)) return W_INTEGER;
    if (c0 == '[' && len >= 3 && RD_CH(r, j - 1) == ']') return W_INSTANCE;
    return W_SYMBOL;
}

void rd_lex(rd_reader *r) {
    rd_tok *t = &r->tok;
    Py_ssize_t i = r->i, j;
    Py_UCS4 c;
    for (;;) { /* whitespace and comments */
        while (i < r->n && is_ws(c = RD_CH(r, i))) {
            i++;
            if (c == '\n') r->line++, r->line_start = i;
        }
        if (i < r->n && RD_CH(r, i) == ';') {
            while (i < r->n && (c = RD_CH(r, i)) != '\n' && c != '\r') i++;
            continue;
        }
        break;
    }
    t->start = i;
    t->line = t->eline = r->line;
    t->col = i - r->line_start + 1;
    t->cls = W_BAD;
    if (i >= r->n) {
        t->type = TK_EOF;
        j = i;
    } else {
        c = RD_CH(r, i);
        j = i + 1;
        if (c == '(') t->type = TK_LP;
        else if (c == ')') t->type = TK_RP;
        else if (c == '&') t->type = TK_AMP;
        else if (c == '|') t->type = TK_BAR;
        else if (c == '~') t->type = TK_TILDE;
        else if (c == '"') { /* "(?:[^"\\]|\\.)*" with `.` matching newlines */
            t->type = TK_BAD;
            while (j < r->n) {
                c = RD_CH(r, j);
                if (c == '"') {
                    t->type = TK_STRING;
                    j++;
                    break;
                }
                if (c == '\\') {
                    j++;
                    if (j >= r->n) break;
                    c = RD_CH(r, j);
                }
                if (c == '\n') t->eline++, r->line_start = j + 1;
                j++;
            }
            r->line = t->eline;
        } else if (c != '<' && is_delim(c)) {
            t->type = TK_BAD;
        } else {
            while (j < r->n && !is_delim(RD_CH(r, j))) j++;
            t->type = TK_WORD;
            t->cls = classify(r, i, j);
        }
    }
    t->end = r->i = j;
    t->ecol = j - r->line_start + 1;
}

void rd_next(rd_reader *r) {
    r->last = r->tok;
    rd_lex(r);
}

int rd_is(const rd_reader *r, const rd_tok *t, const char *word) {
    Py_ssize_t k, len = (Py_ssize_t)strlen(word);
    if (t->type != TK_WORD || t->end - t->start != len) return 0;
    for (k = 0; k < len; k++)
        if (RD_CH(r, t->start + k) != (Py_UCS4)(unsigned char)word[k]) return 0;
    return 1;
}

int rd_word_in(const rd_reader *r, const char *const *words) {
    for (; *words; words++)
        if (rd_is(r, &r->tok, *words)) return 1;
    return 0;
}

PyObject *rd_text(const rd_reader *r, Py_ssize_t start, Py_ssize_t end) {
    return PyUnicode_Substring(r->text, start, end);
}

/* The value of a string token: quotes removed, `\x` -> `x` (rules.scan.unescape_string). */
PyObject *rd_unescape(const rd_reader *r, const rd_tok *t) {
    Py_ssize_t i, n = 0, s = t->start + 1, e = t->end - 1;
    Py_UCS4 *buf;
    PyObject *out;
    for (i = s; i < e; i++)
        if (RD_CH(r, i) == '\\') break;
    if (i == e) return rd_text(r, s, e);
    buf = PyMem_Malloc(sizeof(Py_UCS4) * (size_t)(e - s + 1));
    if (buf == NULL) return PyErr_NoMemory();
    for (i = s; i < e; i++) {
        Py_UCS4 c = RD_CH(r, i);
        if (c == '\\' && i + 1 < e) c = RD_CH(r, ++i);
        buf[n++] = c;
    }
    out = PyUnicode_FromKindAndData(PyUnicode_4BYTE_KIND, buf, n);
    PyMem_Free(buf);
    return out;
}
