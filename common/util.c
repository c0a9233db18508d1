#include "util.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void
oom(size_t n)
{
	/* The one place libcommon writes: there is no caller left to tell. */
	fprintf(stderr, "out of memory (%zu bytes)\n", n);
	abort();
}

void *
xmalloc(size_t n)
{
	void *p = malloc(n ? n : 1);

	if (p == NULL)
		oom(n);
	return p;
}

void *
xcalloc(size_t n, size_t size)
{
	void *p = calloc(n ? n : 1, size ? size : 1);

	if (p == NULL)
		oom(n * size);
	return p;
}

void *
xrealloc(void *p, size_t n)
{
	p = realloc(p, n ? n : 1);
	if (p == NULL)
		oom(n);
	return p;
}

char *
xstrndup(const char *s, size_t n)
{
	char *p = xmalloc(n + 1);

	memcpy(p, s, n);
	p[n] = '\0';
	return p;
}

void
grow(void *pp, size_t *capp, size_t need, size_t size)
{
	void **p = pp;
	size_t cap = *capp;

	if (need <= cap)
		return;
	if (cap < 16)
		cap = 16;
	while (cap < need) {
		if (cap > SIZE_MAX / 2 / size)
			oom(SIZE_MAX);
		cap *= 2;
	}
	*p = xrealloc(*p, cap * size);
	*capp = cap;
}

int
parse_i64(const char *s, int64_t min, int64_t max, int64_t *out)
{
	char *end;
	long long v;

	if (s == NULL || *s == '\0' || *s == ' ' || *s == '\t' || *s == '+')
		return -1;
	if (min >= 0 && *s == '-')
		return -1;
	errno = 0;
	v = strtoll(s, &end, 10);
	if (errno != 0 || *end != '\0' || v < min || v > max)
		return -1;
	*out = v;
	return 0;
}

uint32_t
uf_find(uint32_t *up, uint32_t x)
{
	while (up[x] != x) {
		up[x] = up[up[x]];
		x = up[x];
	}
	return x;
}

void
uf_union(uint32_t *up, uint32_t a, uint32_t b)
{
	a = uf_find(up, a);
	b = uf_find(up, b);
	if (a != b)
		up[a < b ? b : a] = a < b ? a : b;
}

int
cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

int
cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

int
cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return x < y ? -1 : x > y;
}

int
next_number(const char **s, long long *v)
{
	const char *p = *s;
	char *end;

	while (*p != '\0' && (*p < '0' || *p > '9'))
		p++;
	if (*p == '\0') {
		*s = p;
		return 0;
	}
	*v = strtoll(p, &end, 10);
	*s = end;
	return 1;
}
