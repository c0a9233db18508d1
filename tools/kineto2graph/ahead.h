/*
 * ahead: a trace's bytes read (and gunzipped) on a thread of its own,
 * a few chunks ahead of the JSON parser. Only for a regular file, on a
 * machine of two CPUs or more, unless KG_READER_THREAD=0 (the graph
 * readers' knob, common/zin.h): the parser sees the same chunks and the
 * same errors, at the same place, as when it reads them itself.
 */
#ifndef K2G_AHEAD_H
#define K2G_AHEAD_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* Fill buf with up to cap bytes, the input's next, *n = 0 at its end;
 * off: the bytes given before. 0, or -1 with the reason in err. */
typedef int (*ahead_fn)(void *arg, unsigned char *buf, size_t cap, size_t *n, uint64_t off,
    char *err, size_t errlen);

struct ahead;

/* A thread calling fn(arg, ...) for chunks of `chunk` bytes; NULL when
 * fp is not worth one (see above) or none can be made. */
struct ahead *ahead_new(FILE *fp, ahead_fn fn, void *arg, size_t chunk);
/* The next chunk: *buf (chunk bytes, the caller's) is swapped for the
 * one filled, of *n bytes (0: the end). 0, or -1 with err set. */
int ahead_next(struct ahead *a, unsigned char **buf, size_t *n, char *err, size_t errlen);
/* Stop the thread (at once where it waits; after its chunk where it
 * reads) and free. */
void ahead_free(struct ahead *a);

#endif
