/*
 * kineto2graph's build, its one map: u32 to u32, open addressing (keys
 * are correlation ids or event indices; UINT32_MAX is no key). The first
 * value put for a key stays. Its memory is its owner's: umap_release.
 */
#include <stdlib.h>
#include <string.h>

#include "gb.h"
#include "k2g.h"
#include "util.h"

void
umap_init(struct umap *m, size_t hint)
{
	m->cap = 64;
	while (m->cap < hint * 2)
		m->cap *= 2;
	m->key = xmalloc(m->cap * sizeof(*m->key));
	m->val = xmalloc(m->cap * sizeof(*m->val));
	memset(m->key, 0xff, m->cap * sizeof(*m->key));
	m->n = 0;
}

void
umap_release(struct umap *m)
{
	free(m->key);
	free(m->val);
}

static size_t
umap_slot(const struct umap *m, uint32_t k)
{
	size_t i = (k * 2654435761u) & (m->cap - 1);

	while (m->key[i] != UINT32_MAX && m->key[i] != k)
		i = (i + 1) & (m->cap - 1);
	return i;
}

static void
umap_grow(struct umap *m)
{
	struct umap n;
	size_t i;

	n.cap = m->cap * 2;
	n.key = xmalloc(n.cap * sizeof(*n.key));
	n.val = xmalloc(n.cap * sizeof(*n.val));
	memset(n.key, 0xff, n.cap * sizeof(*n.key));
	n.n = 0;
	for (i = 0; i < m->cap; i++)
		if (m->key[i] != UINT32_MAX)
			umap_put(&n, m->key[i], m->val[i]);
	umap_release(m);
	*m = n;
}

/* First writer wins: a correlation names one call. */
void
umap_put(struct umap *m, uint32_t k, uint32_t v)
{
	size_t i;

	if ((m->n + 1) * 2 > m->cap)
		umap_grow(m);
	i = umap_slot(m, k);
	if (m->key[i] == UINT32_MAX) {
		m->key[i] = k;
		m->val[i] = v;
		m->n++;
	}
}

uint32_t
umap_get(const struct umap *m, uint32_t k)
{
	size_t i = umap_slot(m, k);

	return m->key[i] == k ? m->val[i] : KG_NONE;
}
