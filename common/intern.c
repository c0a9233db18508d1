#include "intern.h"

#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "util.h"

void
intern_init(struct intern *t)
{
	memset(t, 0, sizeof(*t));
	t->nslot = 1024;
	t->slot = xcalloc(t->nslot, sizeof(*t->slot));
}

void
intern_release(struct intern *t)
{
	size_t i;

	for (i = 0; i < t->n; i++)
		free(t->str[i]);
	free(t->str);
	free(t->len);
	free(t->hash);
	free(t->slot);
	memset(t, 0, sizeof(*t));
}

static size_t
probe(const struct intern *t, const char *s, size_t len, uint64_t h)
{
	size_t mask = t->nslot - 1, i = (size_t)h & mask;
	uint32_t id;

	while ((id = t->slot[i]) != 0) {
		id--;
		if (t->hash[id] == h && t->len[id] == len &&
		    memcmp(t->str[id], s, len) == 0)
			return i;
		i = (i + 1) & mask;
	}
	return i;
}

static void
rehash(struct intern *t)
{
	size_t i, j, mask;

	free(t->slot);
	t->nslot *= 2;
	t->slot = xcalloc(t->nslot, sizeof(*t->slot));
	mask = t->nslot - 1;
	for (i = 0; i < t->n; i++) {
		j = (size_t)t->hash[i] & mask;
		while (t->slot[j] != 0)
			j = (j + 1) & mask;
		t->slot[j] = (uint32_t)i + 1;
	}
}

uint32_t
intern_find(const struct intern *t, const char *s, size_t len)
{
	uint64_t h = XXH3_64bits(s, len);
	size_t i = probe(t, s, len, h);

	return t->slot[i] ? t->slot[i] - 1 : UINT32_MAX;
}

uint32_t
intern_get(struct intern *t, const char *s, size_t len)
{
	uint64_t h = XXH3_64bits(s, len);
	size_t i = probe(t, s, len, h), cap;
	uint32_t id;

	if (t->slot[i] != 0)
		return t->slot[i] - 1;
	id = (uint32_t)t->n;
	cap = t->cap;
	grow(&t->str, &cap, t->n + 1, sizeof(*t->str));
	cap = t->cap;
	grow(&t->len, &cap, t->n + 1, sizeof(*t->len));
	cap = t->cap;
	grow(&t->hash, &cap, t->n + 1, sizeof(*t->hash));
	t->cap = cap;
	t->str[id] = xstrndup(s, len);
	t->len[id] = (uint32_t)len;
	t->hash[id] = h;
	t->n++;
	t->slot[i] = id + 1;
	if (t->n * 2 > t->nslot)
		rehash(t);
	return id;
}
