/* The structure passes of rules.scan in C, for text of any kind: where whitespace and comments
 * end (`_SKIP`), where a construct's parentheses close with its nesting checked (the `_STRUCTURE`
 * loop of `prescan`), and every comment outside strings with its position (`comments`). Strings
 * are `_STRUCTURE`'s: "(?:[^"\\]|\\.)*" with `.` matching newlines; an unclosed `"` is passed
 * over as one character, as `re.finditer` passes over it. */
#include "native_read.h"

typedef struct {
    int kind;
    const void *data;
    Py_ssize_t n;
} text_t;

#define CH(t, k) PyUnicode_READ((t)->kind, (t)->data, (k))

static int text_of(PyObject *s, text_t *t) {
    if (!PyUnicode_Check(s) || PyUnicode_READY(s) < 0) {
        if (!PyErr_Occurred()) PyErr_SetString(PyExc_TypeError, "text must be a str");
        return -1;
    }
    t->kind = PyUnicode_KIND(s);
    t->data = PyUnicode_DATA(s);
    t->n = PyUnicode_GET_LENGTH(s);
    return 0;
}

/* The end of the string starting at i (a `"`), or -1 when it is not closed. */
static Py_ssize_t string_end(const text_t *t, Py_ssize_t i) {
    for (i++; i < t->n; i++) {
        Py_UCS4 c = CH(t, i);
        if (c == '"') return i + 1;
        if (c == '\\' && ++i >= t->n) return -1;
    }
    return -1;
}

static Py_ssize_t comment_end(const text_t *t, Py_ssize_t i) {
    Py_UCS4 c;
    while (i < t->n && (c = CH(t, i)) != '\n' && c != '\r') i++;
    return i;
}

/* pos must lie in the text (0 <= pos <= its length); else ValueError, as rules._native_scan's functions */
static int in_text(const text_t *t, Py_ssize_t pos) {
    if (pos >= 0 && pos <= t->n) return 1;
    PyErr_SetString(PyExc_ValueError, "span out of the text");
    return 0;
}

static Py_ssize_t skip(const text_t *t, Py_ssize_t i) {
    while (i < t->n) {
        Py_UCS4 c = CH(t, i);
        if (c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f') i++;
        else if (c == ';') i = comment_end(t, i);
        else break;
    }
    return i;
}

/* skip(text, pos) -> where `_SKIP` (whitespace [ \t\n\r\f] and comments) ends */
PyObject *rd_py_skip(PyObject *self, PyObject *args) {
    PyObject *s;
    Py_ssize_t i;
    text_t t;
    (void)self;
    if (!PyArg_ParseTuple(args, "Un", &s, &i) || text_of(s, &t) < 0 || !in_text(&t, i)) return NULL;
    return PyLong_FromSsize_t(skip(&t, i));
}

/* The offset after the ")" closing the "(" at i; -1: never closed; -2 - offset: nested too deep */
static Py_ssize_t construct_end(const text_t *t, Py_ssize_t i, Py_ssize_t max_depth) {
    Py_ssize_t depth = 0, e;
    for (; i < t->n; i++) {
        Py_UCS4 c = CH(t, i);
        if (c == '"') {
            if ((e = string_end(t, i)) >= 0) i = e - 1;
        } else if (c == ';') {
            i = comment_end(t, i) - 1;
        } else if (c == '(') {
            if (++depth > max_depth) return -2 - i;
        } else if (c == ')') {
            if (--depth == 0) return i + 1;
        }
    }
    return -1;
}

/* scan_constructs(text, pos, max_depth) -> (status, offset): the top-level loop of `prescan` from
 * pos over constructs other than deffacts: 0 at a "(" followed by `deffacts` (as a prefix, as
 * prescan's `startswith`), 1 at the end of the constructs (the end of the text or another
 * character than "("), 2 at a "(" never closed, 3 at the "(" nested deeper than max_depth. */
PyObject *rd_py_scan_constructs(PyObject *self, PyObject *args) {
    static const char deffacts[] = "deffacts";
    PyObject *s;
    Py_ssize_t i, e, k, max_depth;
    text_t t;
    (void)self;
    if (!PyArg_ParseTuple(args, "Unn", &s, &i, &max_depth) || text_of(s, &t) < 0 || !in_text(&t, i)) return NULL;
    for (;;) {
        i = skip(&t, i);
        if (i >= t.n || CH(&t, i) != '(') return Py_BuildValue("(in)", 1, i);
        e = skip(&t, i + 1);
        for (k = 0; k < 8 && e + k < t.n && CH(&t, e + k) == (Py_UCS4)deffacts[k]; k++) {}
        if (k == 8) return Py_BuildValue("(in)", 0, i);
        e = construct_end(&t, i, max_depth);
        if (e == -1) return Py_BuildValue("(in)", 2, i);
        if (e < -1) return Py_BuildValue("(in)", 3, -2 - e);
        i = e;
    }
}

/* construct_end(text, pos, max_depth) -> the offset after the ")" that closes the "(" at pos;
 * -1 when it is never closed; -2 - offset of the "(" nested deeper than max_depth. */
PyObject *rd_py_construct_end(PyObject *self, PyObject *args) {
    PyObject *s;
    Py_ssize_t i, max_depth;
    text_t t;
    (void)self;
    if (!PyArg_ParseTuple(args, "Unn", &s, &i, &max_depth) || text_of(s, &t) < 0 || !in_text(&t, i)) return NULL;
    return PyLong_FromSsize_t(construct_end(&t, i, max_depth));
}

/* comments(text) -> [ast.Comment(text, Pos)] of every `;` comment outside strings, in order */
PyObject *rd_py_comments(PyObject *self, PyObject *arg) {
    PyObject *out, *c;
    Py_ssize_t i, e, line = 1, line_start = 0;
    text_t t;
    rd_tok a, b;
    (void)self;
    if (text_of(arg, &t) < 0 || (out = PyList_New(0)) == NULL) return NULL;
    for (i = 0; i < t.n; i++) {
        Py_UCS4 ch = CH(&t, i);
        if (ch == '\n') {
            line++, line_start = i + 1;
        } else if (ch == '"') {
            if ((e = string_end(&t, i)) < 0) continue;
            for (; i < e - 1; i++)
                if (CH(&t, i) == '\n') line++, line_start = i + 1;
        } else if (ch == ';') {
            e = comment_end(&t, i);
            a.start = i, a.line = line, a.col = i - line_start + 1;
            b.end = e, b.eline = line, b.ecol = e - line_start + 1;
            c = rd_node(N_COMMENT, 2, PyUnicode_Substring(arg, i, e), rd_pos(&a, &b));
            if (c == NULL || PyList_Append(out, c) < 0) {
                Py_XDECREF(c);
                Py_DECREF(out);
                return NULL;
            }
            Py_DECREF(c);
            i = e - 1;
        }
    }
    return out;
}
