/* The forward engine's trace recorder in C: CLIPS's before-rule-fires, assert and retract
 * callbacks, recording into buffers without calling Python (see native_trace.py).
 *
 * CLIPS functions are reached through pointers the caller stores in `wb_trace` (they live in
 * clipspy's extension module, which Python loads privately), so this file includes no CLIPS
 * header and links against nothing but libc. The one CLIPS layout it relies on is the head of
 * a StringBuilder (CLIPS 6.4 utility.h): { Environment *sbEnv; char *contents;
 * size_t bufferReset; size_t length; size_t bufferMaximum; }.
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
    long long *firings;                            /* per firing: rule name pointer, n, n fact ids */
    size_t firings_len, firings_cap;               /* in long longs */
    int bad_format;                                /* an activation's text was not "<salience> <rule>: <basis>" */
    long long *events;                             /* (kind 0 assert / 1 retract, fact index, firing index or -1) */
    size_t n_events, events_cap;                   /* n_events counts triples */
    int out_of_memory;                             /* a record was lost: the trace is incomplete */
} wb_trace;

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

/* One firing: CLIPS writes the activation ("<salience> <rule>: f-1,*,f-3", `ActivationPPForm`)
 * into the string builder; the rule name (a pointer to CLIPS's own copy, stable while the rule
 * exists) and the basis's fact ids are appended to `firings`. Items of the basis that are not
 * facts (`*` for not/exists/test, `[instance]` for object patterns) are skipped. */
void wb_on_fire(void *env, void *activation, void *context) {
    wb_trace *t = (wb_trace *)context;
    wb_sb_head *sb = (wb_sb_head *)t->sb;
    const char *name = t->rule_name(activation);
    const char *p, *end;
    size_t start, name_len = strlen(name);
    long long n = 0;
    (void)env;
    t->fired++;
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
    start = t->firings_len;
    if (start + 2 + (size_t)(end - p) / 2 + 1 > t->firings_cap &&
        !grow((void **)&t->firings, &t->firings_cap, start + 2 + (size_t)(end - p) / 2 + 1, sizeof(long long))) {
        t->out_of_memory = 1;
        return;
    }
    t->firings[start] = (long long)(size_t)name;
    while (p < end) {  /* items separated by ',' */
        const char *item = p;
        while (p < end && *p != ',') p++;
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
    free(t->firings);
    free(t->events);
    t->firings = NULL;
    t->events = NULL;
    t->firings_cap = t->events_cap = 0;
    t->firings_len = t->n_events = 0;
}
