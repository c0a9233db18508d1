/*
 * jsonc_count: json-c incremental tokener fed 64 KiB chunks; builds the full
 * json-c object tree, then walks traceEvents.
 */
#include "common.h"

#include <json-c/json.h>

static int only_ws_rest(FILE *f)
{
    static char buf[JB_CHUNK];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, f)) > 0)
        if (!jb_only_ws(buf, n))
            return 0;
    return 1;
}

int main(int argc, char **argv)
{
    static char buf[JB_CHUNK];
    struct json_tokener *tok;
    json_object *root = NULL, *events;
    unsigned long long count = 0;
    long long dursum = 0;
    size_t n, i, len;
    FILE *f;
    int rc = 1;

    if (argc != 2) {
        fprintf(stderr, "usage: %s TRACE.json\n", argv[0]);
        return 2;
    }
    f = jb_open(argv[1]);
    if (f == NULL)
        return 1;
    tok = json_tokener_new();
    if (tok == NULL) {
        fprintf(stderr, "json_tokener_new failed\n");
        fclose(f);
        return 1;
    }
    while (root == NULL && (n = fread(buf, 1, sizeof buf, f)) > 0) {
        enum json_tokener_error e;
        root = json_tokener_parse_ex(tok, buf, (int)n);
        e = json_tokener_get_error(tok);
        if (root == NULL && e != json_tokener_continue) {
            fprintf(stderr, "%s: parse error: %s\n", argv[1], json_tokener_error_desc(e));
            goto out;
        }
        if (root != NULL) {
            size_t end = json_tokener_get_parse_end(tok);
            if (!jb_only_ws(buf + end, n - end) || !only_ws_rest(f)) {
                fprintf(stderr, "%s: trailing garbage after JSON value\n", argv[1]);
                goto out;
            }
        }
    }
    if (ferror(f))
        goto out; /* reported by jb_close() */
    if (root == NULL) {
        fprintf(stderr, "%s: parse error: unexpected end of input\n", argv[1]);
        goto out;
    }
    if (!json_object_object_get_ex(root, "traceEvents", &events) ||
        !json_object_is_type(events, json_type_array)) {
        fprintf(stderr, "%s: no top-level \"traceEvents\" array\n", argv[1]);
        goto out;
    }
    len = json_object_array_length(events);
    for (i = 0; i < len; i++) {
        json_object *ev = json_object_array_get_idx(events, i), *d;
        count++;
        if (!json_object_is_type(ev, json_type_object) ||
            !json_object_object_get_ex(ev, "dur", &d))
            continue;
        if (json_object_is_type(d, json_type_int))
            dursum += (long long)json_object_get_int64(d);
        else if (json_object_is_type(d, json_type_double))
            dursum += jb_dur_from_double(json_object_get_double(d));
    }
    rc = jb_print_result(count, dursum);
out:
    json_object_put(root);
    json_tokener_free(tok);
    if (jb_close(f, argv[1]) != 0)
        rc = 1;
    return rc;
}
