/*
 * cjson_count: read the whole file into memory, build the cJSON tree with
 * cJSON_ParseWithLength, then walk traceEvents.
 */
#include "common.h"

#include <stdlib.h>
#include <cjson/cJSON.h>

int main(int argc, char **argv)
{
    const cJSON *events, *ev;
    cJSON *root;
    unsigned long long count = 0;
    long long dursum = 0;
    size_t len, end;
    const char *parse_end = NULL;
    char *text;
    int rc = 1;

    if (argc != 2) {
        fprintf(stderr, "usage: %s TRACE.json\n", argv[0]);
        return 2;
    }
    text = jb_read_file(argv[1], &len);
    if (text == NULL)
        return 1;
    root = cJSON_ParseWithLengthOpts(text, len, &parse_end, 0);
    if (root == NULL) {
        const char *at = cJSON_GetErrorPtr();
        fprintf(stderr, "%s: parse error near byte %ld\n", argv[1],
                at != NULL ? (long)(at - text) : -1L);
        goto out;
    }
    end = (size_t)(parse_end - text);
    if (!jb_only_ws(text + end, len - end)) {
        fprintf(stderr, "%s: trailing garbage after JSON value\n", argv[1]);
        goto out;
    }
    events = cJSON_GetObjectItemCaseSensitive(root, "traceEvents");
    if (!cJSON_IsArray(events)) {
        fprintf(stderr, "%s: no top-level \"traceEvents\" array\n", argv[1]);
        goto out;
    }
    cJSON_ArrayForEach(ev, events) {
        const cJSON *d = cJSON_GetObjectItemCaseSensitive(ev, "dur");
        count++;
        /* cJSON stores every number as a double (exact up to 2^53). */
        if (cJSON_IsObject(ev) && cJSON_IsNumber(d))
            dursum += jb_dur_from_double(d->valuedouble);
    }
    rc = jb_print_result(count, dursum);
out:
    cJSON_Delete(root);
    free(text);
    return rc;
}
