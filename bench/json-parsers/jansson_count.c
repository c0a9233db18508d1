/*
 * jansson_count: build a jansson tree from the file (fed through
 * json_load_callback from a stdio stream, so the raw text is never held in
 * memory as a whole), then walk traceEvents.
 */
#include "common.h"

#include <jansson.h>

static size_t read_cb(void *buffer, size_t buflen, void *data)
{
    FILE *f = data;
    size_t n = fread(buffer, 1, buflen, f);
    if (n == 0 && ferror(f))
        return (size_t)-1; /* tells jansson to fail */
    return n;
}

int main(int argc, char **argv)
{
    json_error_t err;
    json_t *root, *events, *ev;
    unsigned long long count = 0;
    long long dursum = 0;
    size_t i;
    FILE *f;
    int rc = 1;

    if (argc != 2) {
        fprintf(stderr, "usage: %s TRACE.json\n", argv[0]);
        return 2;
    }
    f = jb_open(argv[1]);
    if (f == NULL)
        return 1;
    root = json_load_callback(read_cb, f, 0, &err);
    if (jb_close(f, argv[1]) != 0) {
        json_decref(root);
        return 1;
    }
    if (root == NULL) {
        fprintf(stderr, "%s:%d:%d: %s\n", argv[1], err.line, err.column, err.text);
        return 1;
    }
    events = json_object_get(root, "traceEvents"); /* NULL if root not an object */
    if (!json_is_array(events)) {
        fprintf(stderr, "%s: no top-level \"traceEvents\" array\n", argv[1]);
        goto out;
    }
    json_array_foreach(events, i, ev) {
        json_t *d = json_object_get(ev, "dur"); /* NULL if ev not an object */
        count++;
        if (json_is_integer(d))
            dursum += json_integer_value(d);
        else if (json_is_real(d))
            dursum += jb_dur_from_double(json_real_value(d));
    }
    rc = jb_print_result(count, dursum);
out:
    json_decref(root);
    return rc;
}
