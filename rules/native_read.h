/* The C reader of rule text (see native_read.py): shared declarations of its three parts,
 * native_read_lex.c (tokens as the grammar's lexer reads them), native_read_nodes.c (AST objects
 * built directly into the slots of rules.ast's classes) and native_read.c (the constructs). */
#ifndef WB_NATIVE_READ_H
#define WB_NATIVE_READ_H
#define PY_SSIZE_T_CLEAN
#include <Python.h>

/* Token types. */
enum { TK_EOF, TK_LP, TK_RP, TK_STRING, TK_AMP, TK_BAR, TK_TILDE, TK_WORD, TK_BAD };

/* What a word is to the grammar in an expression (its terminal there, by lark's priorities). */
enum {
    W_SYMBOL, /* SYMBOL, also ARROW `<-` and plain `=` / `:` (not before a parenthesis) */
    W_THEN,   /* `=>` */
    W_COLON,  /* `:` before optional whitespace and `(` */
    W_EQUALS, /* `=` before optional whitespace and `(` */
    W_GLOBALVAR,
    W_SFVAR,
    W_MFVAR,
    W_FLOAT,
    W_INTEGER,
    W_SFWILD,
    W_MFWILD,
    W_INSTANCE,
    W_BAD /* no terminal (or not ASCII): the grammar decides */
};

typedef struct {
    int type, cls;
    Py_ssize_t start, end;      /* offsets (code points) */
    Py_ssize_t line, col;       /* 1-based, of the first character */
    Py_ssize_t eline, ecol;     /* after the last character */
} rd_tok;

/* The AST classes, in the order `rules.native_read.CLASSES` gives them. */
enum {
    N_POS, N_ATOM, N_CALL, N_TERM, N_FIELDC, N_WILD, N_SLOTC, N_PATTERN, N_TEST, N_NOT, N_AND, N_OR, N_EXISTS,
    N_FORALL, N_LOGICAL, N_SLOTATTR, N_SLOTDEF, N_TEMPLATE, N_FACTS, N_RULE, N_FUNCTION, N_GASSIGN, N_GLOBAL,
    N_MODULE, N_OPAQUE, N_COMMENT, N_COUNT
};
#define RD_MAX_FIELDS 16

typedef struct {
    PyObject *text;
    int kind;
    const void *data;
    Py_ssize_t n;
    Py_ssize_t i, line, line_start; /* the lexer's position and the line it is on */
    rd_tok tok;                     /* the next token (not consumed) */
    rd_tok last;                    /* the last token consumed */
    int bail;                       /* 1: not read here, the grammar reads it */
    PyObject *dup;                  /* the first duplicate slot of the construct: (line, col, slot, template) */
    int depth, ce_depth;
} rd_reader;

#define RD_CH(r, k) PyUnicode_READ((r)->kind, (r)->data, (k))

/* native_read_lex.c */
void rd_lex(rd_reader *r);                     /* reads r->tok at r->i */
void rd_next(rd_reader *r);                    /* consumes r->tok */
int rd_is(const rd_reader *r, const rd_tok *t, const char *word); /* the token's text is `word` */
int rd_word_in(const rd_reader *r, const char *const *words);  /* r->tok is one of (NULL-ended) words */
PyObject *rd_text(const rd_reader *r, Py_ssize_t start, Py_ssize_t end);
PyObject *rd_unescape(const rd_reader *r, const rd_tok *t);

/* native_read_nodes.c */
int rd_configure(PyObject *classes, PyObject *nopos);
PyObject *rd_node(int cls, int n, ...);       /* steals its arguments; NULL if one is NULL */
PyObject *rd_field(PyObject *node, int cls, int k); /* borrowed */
PyObject *rd_pos(const rd_tok *first, const rd_tok *last);
PyObject *rd_atom(rd_reader *r, const rd_tok *t);
extern PyObject *rd_nopos, *rd_s_symbol, *rd_s_integer, *rd_s_variable, *rd_s_mf_variable, *rd_s_constant,
    *rd_s_predicate, *rd_s_return_value, *rd_s_empty;

/* native_read_exprs.c */
#define RD_MAX_DEPTH 1000 /* rules.scan.MAX_NESTING */
PyObject *rd_bail(rd_reader *r);               /* sets r->bail; NULL */
int rd_plain_symbol(rd_reader *r);
PyObject *rd_name(rd_reader *r);               /* a plain symbol, consumed */
PyObject *rd_comment(rd_reader *r);            /* a string's value, consumed, or None */
int rd_expect(rd_reader *r, int type);
PyObject *rd_sexp(rd_reader *r);
PyObject *rd_item(rd_reader *r);
PyObject *rd_items_to_rp(rd_reader *r, int only_sexp);
PyObject *rd_fields_to_rp(rd_reader *r);

/* native_read_scan.c: skip(text, pos), construct_end(text, pos, max_depth), comments(text) */
PyObject *rd_py_skip(PyObject *self, PyObject *args);
PyObject *rd_py_construct_end(PyObject *self, PyObject *args);
PyObject *rd_py_comments(PyObject *self, PyObject *arg);
PyObject *rd_py_scan_constructs(PyObject *self, PyObject *args);

/* native_read.c */
PyObject *rd_defrule(rd_reader *r, const rd_tok *lp); /* after "(" "defrule" */

#endif
