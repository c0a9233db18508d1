/*
 * jsmn_count: read the whole file into memory and tokenize it with jsmn into
 * one flat token array (grown by doubling; jsmn resumes after
 * JSMN_ERROR_NOMEM), then scan the tokens linearly.
 *
 * JSMN_PARENT_LINKS is required for acceptable speed: without it jsmn finds
 * the enclosing container after every '}' by scanning the token array
 * backwards, which is quadratic for one big traceEvents array.
 * JSMN_STRICT makes jsmn reject non-JSON primitives.
 */
#define JSMN_PARENT_LINKS
#define JSMN_STRICT
#include "common.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <jsmn.h>

static int tok_eq(const char *js, const jsmntok_t *t, const char *lit)
{
    size_t l = strlen(lit);
    return t->type == JSMN_STRING && (size_t)(t->end - t->start) == l &&
           memcmp(js + t->start, lit, l) == 0;
}

int main(int argc, char **argv)
{
    jsmn_parser p;
    jsmntok_t *toks = NULL;
    unsigned int cap;
    unsigned long long count = 0;
    long long dursum = 0;
    int ntok = 0, i, arr = -1;
    size_t len;
    char *js;
    int rc = 1;

    if (argc != 2) {
        fprintf(stderr, "usage: %s TRACE.json\n", argv[0]);
        return 2;
    }
    js = jb_read_file(argv[1], &len);
    if (js == NULL)
        return 1;
    if (len >= (size_t)INT_MAX) {
        fprintf(stderr, "%s: too large for jsmn (int offsets)\n", argv[1]);
        goto out;
    }
    /* Initial guess; roughly one token per 16 bytes of pretty-printed JSON. */
    cap = (unsigned int)(len / 16) + 1024;
    toks = malloc((size_t)cap * sizeof *toks);
    if (toks == NULL)
        goto oom;
    jsmn_init(&p);
    for (;;) {
        ntok = jsmn_parse(&p, js, len, toks, cap);
        if (ntok != JSMN_ERROR_NOMEM)
            break;
        if (cap > UINT_MAX / 2)
            goto oom;
        cap *= 2;
        {
            jsmntok_t *nt = realloc(toks, (size_t)cap * sizeof *toks);
            if (nt == NULL)
                goto oom;
            toks = nt;
        }
    }
    if (ntok < 0) {
        fprintf(stderr, "%s: parse error (jsmn %d) near byte %u\n", argv[1], ntok, p.pos);
        goto out;
    }
    if (ntok == 0 || toks[0].type != JSMN_OBJECT) {
        fprintf(stderr, "%s: top-level value is not an object\n", argv[1]);
        goto out;
    }
    if (!jb_only_ws(js + toks[0].end, len - (size_t)toks[0].end)) {
        fprintf(stderr, "%s: trailing garbage after JSON value\n", argv[1]);
        goto out;
    }
    /* Root keys are the string tokens whose parent is token 0. */
    for (i = 1; i + 1 < ntok; i++) {
        if (toks[i].parent == 0 && tok_eq(js, &toks[i], "traceEvents")) {
            if (toks[i + 1].type == JSMN_ARRAY)
                arr = i + 1;
            break;
        }
    }
    if (arr < 0) {
        fprintf(stderr, "%s: no top-level \"traceEvents\" array\n", argv[1]);
        goto out;
    }
    /*
     * One linear pass over the array's tokens: direct children are events;
     * a key token has an object parent, and "dur" keys of event objects are
     * followed by their value token.
     */
    for (i = arr + 1; i < ntok && toks[i].start < toks[arr].end; i++) {
        const jsmntok_t *t = &toks[i];
        if (t->parent == arr) {
            count++;
        } else if (t->type == JSMN_STRING && toks[t->parent].type == JSMN_OBJECT &&
                   toks[t->parent].parent == arr && tok_eq(js, t, "dur") && i + 1 < ntok) {
            const jsmntok_t *v = &toks[i + 1];
            long long d;
            if (v->type == JSMN_PRIMITIVE &&
                jb_dur_from_text(js + v->start, (size_t)(v->end - v->start), &d) == 0)
                dursum += d;
        }
    }
    rc = jb_print_result(count, dursum);
    goto out;
oom:
    fprintf(stderr, "%s: out of memory for tokens\n", argv[1]);
out:
    free(toks);
    free(js);
    return rc;
}
