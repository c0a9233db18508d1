/*
 * Shared helpers for the JSON parser benchmark (bench/json-parsers).
 *
 * Every benchmark program does the same work: count the elements of the
 * top-level "traceEvents" array of a Kineto trace and sum the "dur" member
 * of each event object as an integer, then print
 *     events=N dursum=S
 * so that results can be cross-checked between parsers.
 */
#ifndef JSONBENCH_COMMON_H
#define JSONBENCH_COMMON_H

#include <stddef.h>
#include <stdio.h>

/* Size of the read buffer used by the chunked/streaming readers. */
#define JB_CHUNK (64u * 1024u)

/*
 * Read the whole of the file at path into a freshly malloc'd buffer that is
 * NUL-terminated (the NUL is not counted in *len).  Returns NULL and prints a
 * message to stderr on failure.
 */
char *jb_read_file(const char *path, size_t *len);

/* fopen() for reading with an error message; NULL on failure. */
FILE *jb_open(const char *path);

/*
 * fclose() a read stream, reporting an earlier read error (ferror) or a close
 * error.  Returns 0 on success, -1 (after printing) otherwise.
 */
int jb_close(FILE *f, const char *path);

/*
 * Convert the text of a JSON number to an integer duration: exact for
 * integers, truncated toward zero for numbers with a fraction or exponent.
 * Returns 0 on success, -1 if the text is not a number.
 */
int jb_dur_from_text(const char *s, size_t n, long long *out);

/* Truncate a double duration to an integer (same rule as above). */
long long jb_dur_from_double(double d);

/* Non-zero if s[0..n) is only JSON whitespace. */
int jb_only_ws(const char *s, size_t n);

/* Print the result line on stdout; returns 0, or 1 if stdout failed. */
int jb_print_result(unsigned long long events, long long dursum);

#endif
