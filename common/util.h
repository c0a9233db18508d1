/*
 * util: allocation that cannot fail quietly, growable arrays, and strict
 * number parsing. The only place in libcommon that may end the process is
 * an allocation failure: there is nothing sensible a caller could do, and
 * checking every allocation in every tool buys nothing but noise.
 */
#ifndef KG_UTIL_H
#define KG_UTIL_H

#include <stddef.h>
#include <stdint.h>

/* "out of memory (n bytes)" on standard error, and abort. */
void oom(size_t n);
void *xmalloc(size_t n);
void *xcalloc(size_t n, size_t size);
void *xrealloc(void *p, size_t n);
char *xstrndup(const char *s, size_t n);

/*
 * Grow *pp, an array of *capp elements of size `size`, so that it holds at
 * least `need` elements. Capacity doubles, so n appends cost O(n).
 */
void grow(void *pp, size_t *capp, size_t need, size_t size);

#define VEC_PUSH(arr, n, cap, val)                                    \
	do {                                                          \
		if ((n) >= (cap))                                     \
			grow(&(arr), &(cap), (n) + 1, sizeof(*(arr))); \
		(arr)[(n)++] = (val);                                 \
	} while (0)

/*
 * a + b, held at INT64_MAX (or INT64_MIN) where it would overflow: for a
 * total of many times, each in the format's range but their number
 * unbounded (a kernel's time summed over its calls), that a tool reports
 * and never adds to a time again.
 */
static inline int64_t
sat_add(int64_t a, int64_t b)
{
	int64_t c;

	if (__builtin_add_overflow(a, b, &c))
		return a > 0 ? INT64_MAX : INT64_MIN;
	return c;
}

/*
 * Strict parsing for command-line values: the whole string must be a
 * number in [min, max]; no sign for unsigned, no leading spaces, no
 * trailing junk. Return 0 on success, -1 otherwise (value untouched).
 */
int parse_i64(const char *s, int64_t min, int64_t max, int64_t *out);

/*
 * Union-find over ids 0..n-1 in up[] (up[i] == i for a root): the root
 * of x, halving the path on the way; and the union of the sets of a and
 * b, the lower root becoming the root of both.
 */
uint32_t uf_find(uint32_t *up, uint32_t x);
void uf_union(uint32_t *up, uint32_t a, uint32_t b);

/*
 * The next decimal number in *s, skipping what is not a digit (a ranks
 * text such as "[0, 1, 2]"); 0 at the end of the string, else 1 with
 * *s moved past it.
 */
int next_number(const char **s, long long *v);

/* qsort's and bsearch's order of uint32_t, uint64_t and int64_t values. */
int cmp_u32(const void *a, const void *b);
int cmp_u64(const void *a, const void *b);
int cmp_i64(const void *a, const void *b);

#endif
