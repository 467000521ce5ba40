/* Plain-data deffacts read in C (see native_scan.py): the two whole-text passes of `rules.scan`
 * over data (recognising a data deffacts, `_DEFFACTS`; the shapes of its facts,
 * `FactData.shapes`), for ASCII text. Each function follows the regular expressions of scan.py
 * token class by token class; the caller uses the regular expressions for any other text.
 * tests/rules/test_native_scan.py checks both give the same results.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <string.h>

typedef struct {
    const unsigned char *s;
    Py_ssize_t n;
} wb_text;

/* _WS's whitespace: [ \t\n\r\f] */
static int is_ws(unsigned char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f'; }

/* _END: (?=[ \t\n\r\f"();]|\Z) */
static int is_end(const wb_text *t, Py_ssize_t i) {
    unsigned char c;
    if (i >= t->n) return 1;
    c = t->s[i];
    return is_ws(c) || c == '"' || c == '(' || c == ')' || c == ';';
}

/* _TAIL's characters (ASCII): [^\s"()&|~;<\x00-\x1f\x7f] */
static int is_tail(unsigned char c) {
    return !(c <= 0x20 || c == 0x7f || c == '"' || c == '(' || c == ')' || c == '&' || c == '|' || c == '~' ||
             c == ';' || c == '<');
}

/* _WORD's first character: [A-Za-z0-9_+\-.*\/!%^@#:=<>,'`{}\]\\] */
static int is_word_first(unsigned char c) {
    if ((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9')) return 1;
    switch (c) { /* a switch, not strchr: this runs once a value */
    case '_': case '+': case '-': case '.': case '*': case '/': case '!': case '%': case '^': case '@': case '#':
    case ':': case '=': case '<': case '>': case ',': case '\'': case '`': case '{': case '}': case ']': case '\\':
        return 1;
    default:
        return 0;
    }
}

/* _WS = (?:[ \t\n\r\f]++|;[^\n\r]*+)*+ : where it ends */
static Py_ssize_t skip_ws(const wb_text *t, Py_ssize_t i) {
    for (;;) {
        while (i < t->n && is_ws(t->s[i])) i++;
        if (i < t->n && t->s[i] == ';') {
            while (i < t->n && t->s[i] != '\n' && t->s[i] != '\r') i++;
            continue;
        }
        return i;
    }
}

static Py_ssize_t tail(const wb_text *t, Py_ssize_t i) {
    while (i < t->n && is_tail(t->s[i])) i++;
    return i;
}

/* _NAME = [A-Za-z_]{_TAIL}{_END}: its end, or -1 */
static Py_ssize_t name(const wb_text *t, Py_ssize_t i) {
    unsigned char c;
    Py_ssize_t j;
    if (i >= t->n) return -1;
    c = t->s[i];
    if (!((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == '_')) return -1;
    j = tail(t, i + 1);
    return is_end(t, j) ? j : -1;
}

/* _STRING = "(?:[^"\\\x00]++|\\[^\x00])*+" */
static Py_ssize_t string(const wb_text *t, Py_ssize_t i) {
    if (i >= t->n || t->s[i] != '"') return -1;
    for (i++; i < t->n; i++) {
        unsigned char c = t->s[i];
        if (c == '"') return i + 1;
        if (c == 0) return -1;
        if (c == '\\') {
            if (i + 1 >= t->n || t->s[i + 1] == 0) return -1;
            i++;
        }
    }
    return -1;
}

/* _WORD = (?!<-|=(?=_END))[first]{_TAIL}{_END} */
static Py_ssize_t word(const wb_text *t, Py_ssize_t i) {
    Py_ssize_t j;
    if (i >= t->n || !is_word_first(t->s[i])) return -1;
    if (t->s[i] == '<' && i + 1 < t->n && t->s[i + 1] == '-') return -1;
    if (t->s[i] == '=' && is_end(t, i + 1)) return -1;
    j = tail(t, i + 1);
    return is_end(t, j) ? j : -1;
}

static Py_ssize_t atom(const wb_text *t, Py_ssize_t i) {
    Py_ssize_t j = string(t, i);
    return j >= 0 ? j : word(t, i);
}

/* (?:_WS _ATOM)*+ : where it ends; `count` atoms */
static Py_ssize_t atoms(const wb_text *t, Py_ssize_t i, Py_ssize_t *count) {
    for (;;) {
        Py_ssize_t j = atom(t, skip_ws(t, i));
        if (j < 0) return i;
        i = j;
        (*count)++;
    }
}

/* _ORDERED (and a template's slot, the same form) = \( _WS _NAME (?:_WS _ATOM)*+ _WS \) */
static Py_ssize_t ordered(const wb_text *t, Py_ssize_t i) {
    Py_ssize_t j, count = 0;
    if (i >= t->n || t->s[i] != '(') return -1;
    j = name(t, skip_ws(t, i + 1));
    if (j < 0) return -1;
    j = skip_ws(t, atoms(t, j, &count));
    return j < t->n && t->s[j] == ')' ? j + 1 : -1;
}

/* _TEMPLATE = \( _WS _NAME (?:_WS slot)++ _WS \) */
static Py_ssize_t template_fact(const wb_text *t, Py_ssize_t i) {
    Py_ssize_t j, slots = 0;
    if (i >= t->n || t->s[i] != '(') return -1;
    j = name(t, skip_ws(t, i + 1));
    if (j < 0) return -1;
    for (;;) {
        Py_ssize_t k = ordered(t, skip_ws(t, j));
        if (k < 0) break;
        j = k;
        slots++;
    }
    if (slots == 0) return -1;
    j = skip_ws(t, j);
    return j < t->n && t->s[j] == ')' ? j + 1 : -1;
}

static int ascii_text(PyObject *text, wb_text *t) {
    if (!PyUnicode_Check(text) || PyUnicode_READY(text) != 0 || !PyUnicode_IS_ASCII(text)) return 0;
    t->s = (const unsigned char *)PyUnicode_DATA(text);
    t->n = PyUnicode_GET_LENGTH(text);
    return 1;
}

/* match_deffacts(text: str, pos: int) -> (end, name_start, name_end, comment_start, comment_end,
 *                                          body_start, body_end, long_digits) | None
 *
 * `_DEFFACTS.match(text, pos)` for ASCII text: the spans of the whole match and of its groups
 * (comment -1, -1 when absent), and whether the body holds 19 digits in a row (`_LONG_DIGITS`).
 * None: no match. ValueError: the text is not ASCII (the caller's regular expression reads it). */
static PyObject *match_deffacts(PyObject *self, PyObject *args) {
    PyObject *text;
    Py_ssize_t pos, j, k, name_start, name_end, comment_start = -1, comment_end = -1, body_start, body_end, run = 0;
    int long_digits = 0;
    wb_text t;
    (void)self;
    if (!PyArg_ParseTuple(args, "Un", &text, &pos)) return NULL;
    if (!ascii_text(text, &t)) {
        PyErr_SetString(PyExc_ValueError, "match_deffacts: the text is not ASCII");
        return NULL;
    }
    if (pos < 0 || pos >= t.n || t.s[pos] != '(') Py_RETURN_NONE;
    j = skip_ws(&t, pos + 1);
    if (t.n - j < 8 || memcmp(t.s + j, "deffacts", 8) != 0 || !is_end(&t, j + 8)) Py_RETURN_NONE;
    name_start = skip_ws(&t, j + 8);
    name_end = name(&t, name_start);
    if (name_end < 0) Py_RETURN_NONE;
    j = name_end;
    k = string(&t, skip_ws(&t, j));
    if (k >= 0) {
        comment_start = skip_ws(&t, j);
        comment_end = j = k;
    }
    body_start = j;
    for (;;) {
        Py_ssize_t f = skip_ws(&t, j);
        k = ordered(&t, f);
        if (k < 0) k = template_fact(&t, f);
        if (k < 0) break;
        j = k;
    }
    body_end = j;
    j = skip_ws(&t, j);
    if (j >= t.n || t.s[j] != ')') Py_RETURN_NONE;
    for (k = body_start; k < body_end && !long_digits; k++) {
        run = (t.s[k] >= '0' && t.s[k] <= '9') ? run + 1 : 0;
        if (run >= 19) long_digits = 1;
    }
    return Py_BuildValue("(nnnnnnnO)", j + 1, name_start, name_end, comment_start, comment_end, body_start, body_end,
                         long_digits ? Py_True : Py_False);
}

/* A growable byte buffer for one fact's shape: name NUL (slot NUL count NUL)* fields. */
typedef struct {
    char *p;
    size_t len, cap;
} wb_buf;

static inline int buf_add(wb_buf *b, const void *data, size_t n) {
    if (b->len + n > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        char *p;
        while (cap < b->len + n) cap *= 2;
        p = PyMem_Realloc(b->p, cap);
        if (p == NULL) return 0;
        b->p = p;
        b->cap = cap;
    }
    memcpy(b->p + b->len, data, n);
    b->len += n;
    return 1;
}

/* n in decimal and a NUL (by hand: snprintf was most of the time of `shapes`) */
static int buf_count(wb_buf *b, Py_ssize_t n) {
    char digits[32];
    int k = (int)sizeof digits - 1;
    size_t v = (size_t)n;
    digits[k] = 0;
    do {
        digits[--k] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    return buf_add(b, digits + k, sizeof digits - (size_t)k);
}

/* The shape (relation, [(slot, values)], fields) of the fact at `i` (which the data match
 * accepted) into `b` and, when `out` is given, as Python values; returns the fact's end or -1
 * (-2: out of memory / Python error). */
static Py_ssize_t fact_shape(const wb_text *t, Py_ssize_t i, wb_buf *b, PyObject **out) {
    Py_ssize_t j, name_end, fields = 0;
    PyObject *slots = NULL;
    b->len = 0;
    if (i >= t->n || t->s[i] != '(') return -1;
    j = skip_ws(t, i + 1);
    name_end = name(t, j);
    if (name_end < 0 || !buf_add(b, t->s + j, (size_t)(name_end - j)) || !buf_add(b, "", 1)) return name_end < 0 ? -1 : -2;
    if (out != NULL && (slots = PyList_New(0)) == NULL) return -2;
    j = name_end;
    for (;;) {
        Py_ssize_t k = skip_ws(t, j);
        if (k < t->n && t->s[k] == ')') {
            j = k + 1;
            break;
        }
        if (k < t->n && t->s[k] == '(') { /* a slot */
            Py_ssize_t s0 = skip_ws(t, k + 1), s1 = name(t, s0), count = 0, e;
            if (s1 < 0) goto bad;
            e = skip_ws(t, atoms(t, s1, &count));
            if (e >= t->n || t->s[e] != ')') goto bad;
            if (!buf_add(b, t->s + s0, (size_t)(s1 - s0)) || !buf_add(b, "", 1) || !buf_count(b, count)) goto oom;
            if (slots != NULL) {
                PyObject *slot = Py_BuildValue("(s#n)", (const char *)t->s + s0, s1 - s0, count);
                if (slot == NULL || PyList_Append(slots, slot) != 0) {
                    Py_XDECREF(slot);
                    goto oom;
                }
                Py_DECREF(slot);
            }
            j = e + 1;
        } else {
            Py_ssize_t e = atom(t, k);
            if (e < 0) goto bad;
            fields++;
            j = e;
        }
    }
    if (!buf_add(b, "|", 1) || !buf_count(b, fields)) goto oom;
    if (out != NULL) {
        *out = Py_BuildValue("(s#Nn)", (const char *)t->s + (skip_ws(t, i + 1)), name_end - skip_ws(t, i + 1), slots, fields);
        if (*out == NULL) return -2;
    }
    return j;
bad:
    Py_XDECREF(slots);
    return -1;
oom:
    Py_XDECREF(slots);
    if (!PyErr_Occurred()) PyErr_NoMemory();
    return -2;
}

/* shapes(text: str, start: int, end: int) -> list | None
 *
 * `FactData.shapes()` for ASCII text: the distinct (relation, [(slot, number of values)], number
 * of ordered fields) of the facts between `start` and `end`, each once; None when the text holds
 * a `\x01` or is not a list of facts. ValueError: the text is not ASCII. */
static PyObject *shapes(PyObject *self, PyObject *args) {
    PyObject *text, *seen = NULL, *result = NULL;
    Py_ssize_t start, end, i;
    wb_text t;
    wb_buf b = {NULL, 0, 0}, last = {NULL, 0, 0};
    (void)self;
    if (!PyArg_ParseTuple(args, "Unn", &text, &start, &end)) return NULL;
    if (!ascii_text(text, &t)) {
        PyErr_SetString(PyExc_ValueError, "shapes: the text is not ASCII");
        return NULL;
    }
    if (start < 0 || end > t.n || start > end) {
        PyErr_SetString(PyExc_ValueError, "shapes: span out of the text");
        return NULL;
    }
    if (memchr(t.s + start, 1, (size_t)(end - start)) != NULL) Py_RETURN_NONE;
    t.n = end; /* the body only */
    seen = PyDict_New();
    if (seen == NULL) return NULL;
    i = start;
    for (;;) {
        Py_ssize_t j;
        i = skip_ws(&t, i);
        if (i >= t.n) break;
        j = fact_shape(&t, i, &b, NULL);
        if (j == -2) goto done;
        if (j < 0) {
            result = Py_None;
            Py_INCREF(result);
            goto done;
        }
        if (!(b.len == last.len && memcmp(b.p, last.p, b.len) == 0)) { /* a shape unlike the last fact's */
            PyObject *key = PyBytes_FromStringAndSize(b.p, (Py_ssize_t)b.len);
            int known;
            if (key == NULL) goto done;
            known = PyDict_Contains(seen, key);
            if (known < 0) {
                Py_DECREF(key);
                goto done;
            }
            if (!known) {
                PyObject *shape = NULL;
                if (fact_shape(&t, i, &b, &shape) < 0 || PyDict_SetItem(seen, key, shape) != 0) {
                    Py_XDECREF(shape);
                    Py_DECREF(key);
                    if (!PyErr_Occurred()) PyErr_SetString(PyExc_RuntimeError, "shapes: a fact read twice differed");
                    goto done;
                }
                Py_DECREF(shape);
            }
            Py_DECREF(key);
            last.len = 0;
            if (!buf_add(&last, b.p, b.len)) goto done;
        }
        i = j;
    }
    result = PyDict_Values(seen);
done:
    PyMem_Free(b.p);
    PyMem_Free(last.p);
    Py_XDECREF(seen);
    return result;
}

static PyObject *source_digest(PyObject *self, PyObject *args) {
    (void)self;
    (void)args;
#ifdef WB_SOURCE_DIGEST
    return PyUnicode_FromString(WB_SOURCE_DIGEST);
#else
    return PyUnicode_FromString("");
#endif
}

/* has_nested(text: str, start: int, end: int) -> bool
 *
 * `_BODY_HAS_NESTED.search(text, start, end) is not None` for ASCII text: a `(`, a name and a `(`
 * (whitespace and comments between), i.e. a template fact's first slot. ValueError: not ASCII. */
static PyObject *has_nested(PyObject *self, PyObject *args) {
    PyObject *text;
    Py_ssize_t start, end, i;
    wb_text t;
    (void)self;
    if (!PyArg_ParseTuple(args, "Unn", &text, &start, &end)) return NULL;
    if (!ascii_text(text, &t)) {
        PyErr_SetString(PyExc_ValueError, "has_nested: the text is not ASCII");
        return NULL;
    }
    if (start < 0 || end > t.n || start > end) {
        PyErr_SetString(PyExc_ValueError, "has_nested: span out of the text");
        return NULL;
    }
    t.n = end;
    for (i = start; i < end; i++) {
        Py_ssize_t j;
        if (t.s[i] != '(') continue;
        j = name(&t, skip_ws(&t, i + 1));
        if (j >= 0 && (j = skip_ws(&t, j)) < t.n && t.s[j] == '(') Py_RETURN_TRUE;
    }
    Py_RETURN_FALSE;
}

static PyMethodDef methods[] = {
    {"has_nested", has_nested, METH_VARARGS, "has_nested(text, start, end) -> bool"},
    {"match_deffacts", match_deffacts, METH_VARARGS, "match_deffacts(text, pos) -> spans | None"},
    {"shapes", shapes, METH_VARARGS, "shapes(text, start, end) -> list | None"},
    {"source_digest", source_digest, METH_NOARGS, "digest of the native_scan.c this was built from"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_native_scan", NULL, -1, methods};

PyMODINIT_FUNC PyInit__native_scan(void) { return PyModule_Create(&module); }
