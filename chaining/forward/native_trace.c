/* The forward engine's trace recorder in C: CLIPS's before-rule-fires, assert and retract
 * callbacks, recording into buffers without calling Python (see native_trace.py).
 *
 * CLIPS functions are reached through pointers the caller stores in `wb_trace` (they live in
 * clipspy's extension module, which Python loads privately), so this file includes no CLIPS
 * header and links against nothing but libc. The CLIPS layouts it relies on: the head of a
 * StringBuilder (CLIPS 6.4 utility.h): { Environment *sbEnv; char *contents;
 * size_t bufferReset; size_t length; size_t bufferMaximum; }; and, for reading a firing's basis
 * without formatting it (`direct` below), the heads of an Activation (agenda.h: { Defrule
 * *theRule; PartialMatch *basis; ...}), a PartialMatch (match.h, declared here as there), an
 * AlphaMatch ({ PatternEntity *matchingItem; ...}), a PatternEntity (a CLIPS value: { TypeHeader
 * header; ...}, type 6 for a fact) and a ConstructHeader ({ ConstructType constructType; CLIPSLexeme *name; ...}). Those are checked against
 * CLIPS's own text of the activation (`ActivationPPForm`) on the first firing of every rule in
 * every recorder; one disagreement and the recorder keeps to the text for good.
 * The build appends `wb_source_digest()`, the digest of this file, so a stale build is noticed.
 */
#include <stdlib.h>
#include <string.h>

typedef struct {
    void *sbEnv;
    char *contents;
    size_t bufferReset;
    size_t length;
    size_t bufferMaximum;
} wb_sb_head;

typedef struct wb_trace {
    /* set by the caller */
    void (*pp_form)(void *activation, void *sb);  /* ActivationPPForm */
    const char *(*rule_name)(void *activation);    /* ActivationRuleName */
    void (*sb_reset)(void *sb);                    /* SBReset */
    long long (*fact_index)(void *fact);           /* FactIndex */
    void *sb;                                      /* a CLIPS StringBuilder of this environment */
    int recording;                                 /* fact events are recorded only while set */
    /* written by the callbacks */
    long long fired;                               /* rules fired since wb_clear */
    long long *firings;                            /* per firing: rule name id, n, n fact ids */
    size_t firings_len, firings_cap;               /* in long longs */
    int bad_format;                                /* an activation's text was not "<salience> <rule>: <basis>" */
    long long *events;                             /* (kind 0 assert / 1 retract, fact index, firing index or -1) */
    size_t n_events, events_cap;                   /* n_events counts triples */
    int out_of_memory;                             /* a record was lost: the trace is incomplete */
    /* rule names: id -> a copy of the name; kept across runs (wb_clear keeps them) */
    char **names;
    size_t n_names, names_cap;
    const char **name_keys;                        /* hash table: CLIPS's name pointer ... */
    size_t *name_ids;                              /* ... -> id + 1 (0: empty slot) */
    size_t table_cap;                              /* a power of two, or 0 */
    /* reading the basis from CLIPS's structures instead of its text (set by the caller) */
    int direct;                                    /* 1: read a checked rule's bases directly; 0: text only */
    size_t lexeme_contents_offset;                 /* of `contents` in CLIPSLexeme */
    /* written by the callbacks */
    long long checked;                             /* rules whose direct reading agreed with the text */
    unsigned char *rule_checked;                   /* by rule name id: 1 once checked */
    size_t rule_checked_cap;
    /* a rule's module: the focus while it fires (CLIPS fires the agenda of the focus module only) */
    void *(*get_focus)(void *env);                 /* GetFocus (set by the caller) */
    const char *(*module_name)(void *module);      /* DefmoduleName (set by the caller) */
    const char **module_keys;                      /* hash table, beside name_keys: CLIPS's module name pointer */
} wb_trace;

/* CLIPS 6.4's PartialMatch (match.h), declared as there so that the compiler lays it out alike. */
typedef struct wb_partial_match {
    unsigned int betaMemory : 1;
    unsigned int busy : 1;
    unsigned int rhsMemory : 1;
    unsigned int deleting : 1;
    unsigned short bcount;
    unsigned long hashValue;
    void *owner, *marker, *dependents;
    void *nextInMemory, *prevInMemory, *children, *rightParent, *nextRightChild, *prevRightChild;
    void *leftParent, *nextLeftChild, *prevLeftChild, *blockList, *nextBlocked, *prevBlocked;
    void *binds[1]; /* GenericMatch: a union whose member here is `AlphaMatch *theMatch` */
} wb_partial_match;

/* The head of CLIPS 6.4's ConstructHeader (constrct.h), the first member of a Defrule. */
typedef struct {
    int constructType; /* ConstructType, an enum */
    void *name;        /* CLIPSLexeme * */
} wb_construct_header;

/* CLIPS 6.4's TypeHeader type of a fact (FACT_ADDRESS_TYPE, constant.h); a PatternEntity starts with its TypeHeader. */
#define WB_FACT_ADDRESS_TYPE 6
#define WB_IS_FACT(entity) (*(unsigned short *)(entity) == WB_FACT_ADDRESS_TYPE)


static int grow(void **buffer, size_t *cap, size_t need, size_t item) {
    size_t n = *cap ? *cap : 4096 / item;
    void *p;
    while (n < need) {
        if (n > ((size_t)-1) / 2 / item) return 0;
        n *= 2;
    }
    p = realloc(*buffer, n * item);
    if (p == NULL) return 0;
    *buffer = p;
    *cap = n;
    return 1;
}

static size_t slot_of(const char *key, const char *module, size_t cap) {
    size_t h = (size_t)key ^ ((size_t)module * (size_t)0x2545F4914F6CDD1Dull);
    h ^= h >> 17;
    h *= (size_t)0x9E3779B97F4A7C15ull;
    return (h >> 7) & (cap - 1);
}

static int table_put(wb_trace *t, const char *key, const char *module, size_t id) {
    size_t i;
    if (2 * (t->n_names + 1) > t->table_cap) {  /* keep the load under one half: rebuild twice as big */
        size_t cap = t->table_cap ? 2 * t->table_cap : 64, k;
        const char **keys = calloc(cap, sizeof *keys);
        const char **modules = calloc(cap, sizeof *modules);
        size_t *ids = calloc(cap, sizeof *ids);
        if (keys == NULL || modules == NULL || ids == NULL) {
            free(keys);
            free(modules);
            free(ids);
            return 0;
        }
        for (k = 0; k < t->table_cap; k++) {
            if (t->name_ids[k]) {
                i = slot_of(t->name_keys[k], t->module_keys[k], cap);
                while (ids[i]) i = (i + 1) & (cap - 1);
                keys[i] = t->name_keys[k];
                modules[i] = t->module_keys[k];
                ids[i] = t->name_ids[k];
            }
        }
        free(t->name_keys);
        free(t->module_keys);
        free(t->name_ids);
        t->name_keys = keys;
        t->module_keys = modules;
        t->name_ids = ids;
        t->table_cap = cap;
    }
    i = slot_of(key, module, t->table_cap);
    while (t->name_ids[i] && (t->name_keys[i] != key || t->module_keys[i] != module)) i = (i + 1) & (t->table_cap - 1);
    t->name_keys[i] = key;
    t->module_keys[i] = module;
    t->name_ids[i] = id + 1;
    return 1;
}

/* Whether `copy` is "<module>::<name>". */
static int same_name(const char *copy, const char *module, const char *name) {
    size_t m = strlen(module);
    return strncmp(copy, module, m) == 0 && copy[m] == ':' && copy[m + 1] == ':' && strcmp(copy + m + 2, name) == 0;
}

/* The id of a rule, "MODULE::name" (rules of one name in two modules are two rules): looked up by
 * CLIPS's pointers to the two names and checked against the copy (a pointer CLIPS freed and reused
 * for another name gets a new id). -1: out of memory. */
static long long name_id(wb_trace *t, const char *name, const char *module) {
    size_t i, len, m;
    char *copy;
    if (t->table_cap) {
        i = slot_of(name, module, t->table_cap);
        while (t->name_ids[i]) {
            if (t->name_keys[i] == name && t->module_keys[i] == module) {
                size_t id = t->name_ids[i] - 1;
                if (same_name(t->names[id], module, name)) return (long long)id;
                break;  /* same addresses, other names: a new id replaces this entry */
            }
            i = (i + 1) & (t->table_cap - 1);
        }
    }
    if (t->n_names + 1 > t->names_cap && !grow((void **)&t->names, &t->names_cap, t->n_names + 1, sizeof(char *)))
        return -1;
    len = strlen(name);
    m = strlen(module);
    copy = malloc(m + 2 + len + 1);
    if (copy == NULL) return -1;
    memcpy(copy, module, m);
    copy[m] = copy[m + 1] = ':';
    memcpy(copy + m + 2, name, len + 1);
    if (!table_put(t, name, module, t->n_names)) {
        free(copy);
        return -1;
    }
    t->names[t->n_names] = copy;
    return (long long)t->n_names++;
}

const char *wb_name(wb_trace *t, size_t id) { return id < t->n_names ? t->names[id] : NULL; }

/* The pattern entity (fact or instance) of item `i` of a basis, or NULL for a `*` item (not,
 * exists, test), as CLIPS's PrintPartialMatch finds it. */
static void *basis_item(wb_partial_match *pm, unsigned short i) {
    void **alpha = (void **)pm->binds[i];
    return alpha == NULL ? NULL : alpha[0];
}

/* The basis's fact ids read from CLIPS's structures into `out` (room for `bcount`); returns how
 * many, or -1 when an item is neither a fact nor `*` (an instance: the text knows its form). */
static long long direct_basis(wb_trace *t, wb_partial_match *pm, long long *out) {
    unsigned short i, n = pm->bcount;
    long long k = 0;
    for (i = 0; i < n; i++) {
        void *item = basis_item(pm, i);
        if (item == NULL) continue;
        if (!WB_IS_FACT(item)) return -1;
        out[k++] = t->fact_index(item);
    }
    return k;
}

/* Checking the direct reading: the activation's rule is the one CLIPS names, the basis has as many
 * items as the text, `*` where the text has `*`, and the fact ids of the text. 0 on any disagreement. */
static int direct_agrees(wb_trace *t, void *activation, const char *name, const long long *ids, long long n_ids,
                         long long n_items, const char *basis, const char *end) {
    void *rule = ((void **)activation)[0];
    wb_partial_match *pm = (wb_partial_match *)((void **)activation)[1];
    void *lexeme;
    unsigned short i;
    long long k = 0;
    const char *p = basis;
    if (rule == NULL || pm == NULL) return 0;
    lexeme = ((wb_construct_header *)rule)->name;
    if (lexeme == NULL || *(const char **)((char *)lexeme + t->lexeme_contents_offset) != name) return 0;
    if ((long long)pm->bcount != n_items) return 0;
    for (i = 0; i < pm->bcount; i++) {  /* walk the text's items alongside */
        const char *item = p;
        void *entity;
        if (*p == '[') {
            p++;
            while (p < end && !(*p == ']' && (p + 1 == end || p[1] == ','))) p++;
            if (p < end) p++;
        } else {
            while (p < end && *p != ',') p++;
        }
        entity = basis_item(pm, i);
        if (p - item == 1 && *item == '*') {
            if (entity != NULL) return 0;
        } else if (p - item > 2 && item[0] == 'f' && item[1] == '-') {
            if (entity == NULL || !WB_IS_FACT(entity) || k >= n_ids || t->fact_index(entity) != ids[k]) return 0;
            k++;
        } else if (entity == NULL || WB_IS_FACT(entity)) {
            return 0;  /* an instance in the text: not `*`, not a fact */
        }
        if (p < end) p++;
    }
    return k == n_ids;
}

/* Mark rule `id` checked; 0 when out of memory. */
static int mark_checked(wb_trace *t, long long id) {
    if ((size_t)id >= t->rule_checked_cap) {
        size_t cap = t->rule_checked_cap ? t->rule_checked_cap : 64;
        unsigned char *p;
        while (cap <= (size_t)id) cap *= 2;
        p = realloc(t->rule_checked, cap);
        if (p == NULL) return 0;
        memset(p + t->rule_checked_cap, 0, cap - t->rule_checked_cap);
        t->rule_checked = p;
        t->rule_checked_cap = cap;
    }
    t->rule_checked[id] = 1;
    return 1;
}

/* One firing: the rule's id (`name_id`: its module is the focus, whose agenda CLIPS fires) and the
 * basis's fact ids are appended to `firings`.
 * The basis is read from CLIPS's structures once that reading has agreed with CLIPS's text on
 * this rule's first firing (`direct`); until then, and for a basis holding an instance, CLIPS
 * writes the activation ("<salience> <rule>: f-1,*,f-3", `ActivationPPForm`) into the string
 * builder and the text is read. Items of the basis that are not facts (`*` for
 * not/exists/test, `[instance]` for object patterns) are skipped. */
void wb_on_fire(void *env, void *activation, void *context) {
    wb_trace *t = (wb_trace *)context;
    wb_sb_head *sb = (wb_sb_head *)t->sb;
    const char *name = t->rule_name(activation);
    void *focus = t->get_focus(env);
    const char *module = focus != NULL ? t->module_name(focus) : "";
    const char *p, *end, *basis;
    size_t start = t->firings_len, name_len;
    long long n = 0, items = 0, id;
    t->fired++;
    if (t->direct) {
        wb_partial_match *pm = (wb_partial_match *)((void **)activation)[1];
        id = name_id(t, name, module);
        if (id < 0) {
            t->out_of_memory = 1;
            return;
        }
        if ((size_t)id >= t->rule_checked_cap || !t->rule_checked[id]) goto text;
        if (start + 2 + (size_t)pm->bcount > t->firings_cap &&
            !grow((void **)&t->firings, &t->firings_cap, start + 2 + (size_t)pm->bcount, sizeof(long long))) {
            t->out_of_memory = 1;
            return;
        }
        n = direct_basis(t, pm, t->firings + start + 2);
        if (n >= 0) {
            t->firings[start] = id;
            t->firings[start + 1] = n;
            t->firings_len = start + 2 + (size_t)n;
            return;
        }
        n = 0; /* an instance in the basis: its text */
    }
text:
    name_len = strlen(name);
    t->sb_reset(t->sb);
    t->pp_form(activation, t->sb);
    p = sb->contents;
    end = p + sb->length;
    /* "<salience>", spaces, the rule name, ':' and an optional space */
    while (p < end && *p != ' ') p++;
    while (p < end && *p == ' ') p++;
    if ((size_t)(end - p) < name_len + 1 || memcmp(p, name, name_len) != 0 || p[name_len] != ':') {
        t->bad_format = 1;
        return;
    }
    p += name_len + 1;
    if (p < end && *p == ' ') p++;
    basis = p;
    if (start + 2 + (size_t)(end - p) / 2 + 1 > t->firings_cap &&
        !grow((void **)&t->firings, &t->firings_cap, start + 2 + (size_t)(end - p) / 2 + 1, sizeof(long long))) {
        t->out_of_memory = 1;
        return;
    }
    id = name_id(t, name, module);
    if (id < 0) {
        t->out_of_memory = 1;
        return;
    }
    t->firings[start] = id;
    while (p < end) {  /* items separated by ',' */
        const char *item = p;
        items++;
        if (*p == '[') {  /* an instance, "[name]": its name may hold ',' or "f-7"; it ends at "]," or "]" at the end */
            p++;
            while (p < end && !(*p == ']' && (p + 1 == end || p[1] == ','))) p++;
            if (p == end) {
                t->bad_format = 1;
                return;
            }
            p++;  /* the ']' */
        } else {
            while (p < end && *p != ',') p++;
        }
        if (p - item > 2 && item[0] == 'f' && item[1] == '-') {
            long long id = 0;
            const char *d;
            for (d = item + 2; d < p; d++) {
                if (*d < '0' || *d > '9') {
                    t->bad_format = 1;
                    return;
                }
                id = id * 10 + (*d - '0');
            }
            t->firings[start + 2 + n++] = id;
        }
        if (p < end) p++;  /* the ',' */
    }
    t->firings[start + 1] = n;
    t->firings_len = start + 2 + (size_t)n;
    if (t->direct && ((size_t)id >= t->rule_checked_cap || !t->rule_checked[id])) {
        if (!direct_agrees(t, activation, name, t->firings + start + 2, n, items, basis, end))
            t->direct = 0;
        else if (!mark_checked(t, id))
            t->direct = 0; /* out of memory for the marks: the text, which needs none */
        else
            t->checked++;
    }
}

void wb_count_fire(void *env, void *activation, void *context) {
    (void)env;
    (void)activation;
    ((wb_trace *)context)->fired++;
}

static void record(wb_trace *t, long long kind, void *fact) {
    long long *e;
    if (!t->recording) return;
    if (t->n_events + 1 > t->events_cap && !grow((void **)&t->events, &t->events_cap, t->n_events + 1, 3 * sizeof(long long))) {
        t->out_of_memory = 1;
        return;
    }
    e = t->events + 3 * t->n_events++;
    e[0] = kind;
    e[1] = t->fact_index(fact);
    e[2] = t->fired ? t->fired - 1 : -1;
}

void wb_on_assert(void *env, void *fact, void *context) {
    (void)env;
    record((wb_trace *)context, 0, fact);
}

void wb_on_retract(void *env, void *fact, void *context) {
    (void)env;
    record((wb_trace *)context, 1, fact);
}

/* Forget what was recorded; buffers over `keep` bytes are freed (a long run's do not linger). */
void wb_clear(wb_trace *t, size_t keep) {
    t->fired = 0;
    t->firings_len = 0;
    t->n_events = 0;
    t->out_of_memory = 0;
    t->bad_format = 0;
    if (t->firings_cap * sizeof(long long) > keep) {
        free(t->firings);
        t->firings = NULL;
        t->firings_cap = 0;
    }
    if (t->events_cap * 3 * sizeof(long long) > keep) {
        free(t->events);
        t->events = NULL;
        t->events_cap = 0;
    }
}

void wb_free(wb_trace *t) {
    size_t i;
    for (i = 0; i < t->n_names; i++) free(t->names[i]);
    free(t->names);
    free(t->name_keys);
    free(t->module_keys);
    free(t->name_ids);
    free(t->rule_checked);
    t->rule_checked = NULL;
    t->rule_checked_cap = 0;
    t->names = NULL;
    t->name_keys = NULL;
    t->module_keys = NULL;
    t->name_ids = NULL;
    t->n_names = t->names_cap = t->table_cap = 0;
    free(t->firings);
    free(t->events);
    t->firings = NULL;
    t->events = NULL;
    t->firings_cap = t->events_cap = 0;
    t->firings_len = t->n_events = 0;
}
