/*
 * yajl_count: streaming (SAX) parse with YAJL 2 from a fixed 64 KiB buffer.
 * Memory use is independent of the input size. A gzip file is inflated
 * in-process by zlib's gzread, on the parser's thread (a plain file is
 * read as it is): the bare cost kineto2graph is measured against.
 */
#include "common.h"

#include <stdlib.h>
#include <string.h>
#include <yajl/yajl_parse.h>
#include <zlib.h>

struct state {
    int depth;               /* number of open containers */
    int events_depth;        /* depth of traceEvents' elements; 0 = not inside */
    int want_events;         /* last root key was "traceEvents" */
    int want_dur;            /* last event key was "dur" */
    int found;               /* saw the traceEvents array */
    const char *error;       /* set when a callback cancels the parse */
    unsigned long long events;
    long long dursum;
};

#define KEYEQ(k, l, lit) ((l) == sizeof(lit) - 1 && memcmp((k), (lit), (l)) == 0)

/* Common bookkeeping at the start of any value (scalar or container). */
static int on_value(struct state *s, int is_array)
{
    if (s->events_depth != 0 && s->depth == s->events_depth)
        s->events++;
    s->want_dur = 0;
    if (s->want_events && !is_array) {
        s->error = "\"traceEvents\" is not an array";
        return 0;
    }
    return 1;
}

static int cb_null(void *ctx)
{
    return on_value(ctx, 0);
}

static int cb_boolean(void *ctx, int b)
{
    (void)b;
    return on_value(ctx, 0);
}

static int cb_number(void *ctx, const char *t, size_t l)
{
    struct state *s = ctx;
    int want = s->want_dur && s->events_depth != 0 && s->depth == s->events_depth + 1;
    long long v;

    if (!on_value(s, 0))
        return 0;
    if (want) {
        if (jb_dur_from_text(t, l, &v) != 0) {
            s->error = "bad number for \"dur\"";
            return 0;
        }
        s->dursum += v;
    }
    return 1;
}

static int cb_string(void *ctx, const unsigned char *t, size_t l)
{
    (void)t;
    (void)l;
    return on_value(ctx, 0);
}

static int cb_start_map(void *ctx)
{
    struct state *s = ctx;
    if (!on_value(s, 0))
        return 0;
    s->depth++;
    return 1;
}

static int cb_map_key(void *ctx, const unsigned char *k, size_t l)
{
    struct state *s = ctx;
    if (s->depth == 1 && s->events_depth == 0 && !s->found)
        s->want_events = KEYEQ(k, l, "traceEvents");
    else if (s->events_depth != 0 && s->depth == s->events_depth + 1)
        s->want_dur = KEYEQ(k, l, "dur");
    return 1;
}

static int cb_end_map(void *ctx)
{
    struct state *s = ctx;
    s->depth--;
    return 1;
}

static int cb_start_array(void *ctx)
{
    struct state *s = ctx;
    if (!on_value(s, 1))
        return 0;
    s->depth++;
    if (s->want_events) {
        s->want_events = 0;
        s->found = 1;
        s->events_depth = s->depth;
    }
    return 1;
}

static int cb_end_array(void *ctx)
{
    struct state *s = ctx;
    if (s->events_depth != 0 && s->depth == s->events_depth)
        s->events_depth = 0;
    s->depth--;
    return 1;
}

static const yajl_callbacks callbacks = {
    cb_null, cb_boolean,
    NULL, NULL,          /* integer/double: unused, yajl_number gets the text */
    cb_number, cb_string,
    cb_start_map, cb_map_key, cb_end_map,
    cb_start_array, cb_end_array,
};

static int report(yajl_handle h, struct state *s, const unsigned char *buf, size_t n,
                  const char *path)
{
    if (s->error != NULL) {
        fprintf(stderr, "%s: %s\n", path, s->error);
    } else {
        unsigned char *msg = yajl_get_error(h, 1, buf, n);
        fprintf(stderr, "%s: %s", path, (const char *)msg);
        yajl_free_error(h, msg);
    }
    return 1;
}

int main(int argc, char **argv)
{
    static unsigned char buf[JB_CHUNK];
    struct state s;
    yajl_handle h;
    gzFile f;
    size_t n = 0;
    int rc = 1, got;

    if (argc != 2) {
        fprintf(stderr, "usage: %s TRACE.json\n", argv[0]);
        return 2;
    }
    memset(&s, 0, sizeof s);
    f = gzopen(argv[1], "rb");
    if (f == NULL) {
        fprintf(stderr, "%s: cannot open\n", argv[1]);
        return 1;
    }
    gzbuffer(f, JB_CHUNK);
    h = yajl_alloc(&callbacks, NULL, &s);
    if (h == NULL) {
        fprintf(stderr, "yajl_alloc failed\n");
        gzclose(f);
        return 1;
    }
    while ((got = gzread(f, buf, sizeof buf)) > 0) {
        n = (size_t)got;
        if (yajl_parse(h, buf, n) != yajl_status_ok) {
            report(h, &s, buf, n, argv[1]);
            goto out;
        }
    }
    if (got < 0) {
        int e;

        fprintf(stderr, "%s: read error: %s\n", argv[1], gzerror(f, &e));
        goto out;
    }
    if (yajl_complete_parse(h) != yajl_status_ok) {
        report(h, &s, buf, 0, argv[1]);
        goto out;
    }
    if (!s.found) {
        fprintf(stderr, "%s: no top-level \"traceEvents\" array\n", argv[1]);
        goto out;
    }
    rc = jb_print_result(s.events, s.dursum);
out:
    yajl_free(h);
    if (gzclose(f) != Z_OK)
        rc = 1;
    return rc;
}
