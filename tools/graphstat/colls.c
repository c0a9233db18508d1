#include "colls.h"

#include <stdlib.h>
#include <string.h>

#include "util.h"

void
colls_reset(struct colls *c)
{
	c->ne = c->ng = c->nmem = 0;
	c->sim = 0;
}

void
colls_release(struct colls *c)
{
	free(c->src);
	free(c->dst);
	free(c->g);
	free(c->mem);
	memset(c, 0, sizeof(*c));
}

void
colls_edge(struct colls *c, uint32_t src, uint32_t dst)
{
	grow(&c->src, &c->caps, c->ne + 1, sizeof(*c->src));
	grow(&c->dst, &c->capd, c->ne + 1, sizeof(*c->dst));
	c->src[c->ne] = src;
	c->dst[c->ne++] = dst;
}

static uint32_t
find(uint32_t *up, uint32_t x)
{
	while (up[x] != x) {
		up[x] = up[up[x]];
		x = up[x];
	}
	return x;
}

/* Waits in one view: the latest start less each member's. */
static void
waits(struct colls *c, struct cgroup *g, const struct stask *t, const uint32_t *ids, int sim)
{
	int64_t latest = INT64_MIN, total = 0, last = -1;
	size_t k;

	for (k = 0; k < g->nm; k++) {
		int64_t s = sim ? t[ids[k]].ss : t[ids[k]].ts;

		if (s > latest)
			latest = s, last = t[ids[k]].rank;
	}
	for (k = 0; k < g->nm; k++) {
		struct cmember *m = &c->mem[g->m0 + k];
		int64_t w = latest - (sim ? t[ids[k]].ss : t[ids[k]].ts);

		if (sim)
			m->swait = w;
		else
			m->mwait = w;
		total += w;
	}
	if (sim)
		g->slast = last, g->stotal = total;
	else
		g->mlast = last, g->mtotal = total;
}

void
colls_build(struct colls *c, const struct stask *t, size_t n, int sim)
{
	uint32_t *up, *gid, *ids = NULL;
	size_t i, k, capids = 0;

	c->ng = c->nmem = 0;
	c->sim = sim;
	if (c->ne == 0 || n == 0)
		return;
	up = xmalloc(n * sizeof(*up));
	gid = xmalloc(n * sizeof(*gid));
	for (i = 0; i < n; i++)
		up[i] = (uint32_t)i, gid[i] = UINT32_MAX;
	for (k = 0; k < c->ne; k++) {
		uint32_t a, b;

		if (c->src[k] >= n || c->dst[k] >= n)
			continue;
		a = find(up, c->src[k]);
		b = find(up, c->dst[k]);
		if (a != b)
			up[a < b ? b : a] = a < b ? a : b;
	}
	/* groups in order of their lowest task id; members in id order */
	for (i = 0; i < n; i++) {
		uint32_t r = find(up, (uint32_t)i);
		struct cgroup g;

		if (r == i)
			continue;
		if (gid[r] == UINT32_MAX) {
			memset(&g, 0, sizeof(g));
			g.it = t[r].it;
			g.name = t[r].name;
			gid[r] = (uint32_t)c->ng;
			VEC_PUSH(c->g, c->ng, c->capg, g);
		}
		gid[i] = gid[r];
	}
	for (i = 0; i < n; i++)
		if (gid[i] != UINT32_MAX)
			c->g[gid[i]].nm++;
	for (k = 0; k < c->ng; k++)
		c->g[k].m0 = k == 0 ? 0 : c->g[k - 1].m0 + c->g[k - 1].nm;
	c->nmem = c->ng ? c->g[c->ng - 1].m0 + c->g[c->ng - 1].nm : 0;
	grow(&c->mem, &c->capmem, c->nmem + 1, sizeof(*c->mem));
	grow(&ids, &capids, c->nmem + 1, sizeof(*ids));
	for (k = 0; k < c->ng; k++)
		c->g[k].nm = 0;
	for (i = 0; i < n; i++) {
		struct cgroup *g = gid[i] == UINT32_MAX ? NULL : &c->g[gid[i]];

		if (g == NULL)
			continue;
		ids[g->m0 + g->nm] = (uint32_t)i;
		memset(&c->mem[g->m0 + g->nm], 0, sizeof(c->mem[0]));
		c->mem[g->m0 + g->nm].rank = t[i].rank;
		g->nm++;
	}
	for (k = 0; k < c->ng; k++) {
		waits(c, &c->g[k], t, ids + c->g[k].m0, 0);
		if (sim)
			waits(c, &c->g[k], t, ids + c->g[k].m0, 1);
	}
	free(ids);
	free(up);
	free(gid);
}

static const struct colls *sortc;

static int
cmp_total(const void *a, const void *b)
{
	const struct cgroup *x = &sortc->g[*(const size_t *)a], *y = &sortc->g[*(const size_t *)b];
	int64_t p = sortc->sim ? x->stotal : x->mtotal, q = sortc->sim ? y->stotal : y->mtotal;

	if (p != q)
		return p > q ? -1 : 1;
	return x < y ? -1 : x > y;
}

static int
cmp_wait(const void *a, const void *b)
{
	const struct cmember *x = a, *y = b;
	int64_t p = sortc->sim ? x->swait : x->mwait, q = sortc->sim ? y->swait : y->mwait;

	if (p != q)
		return p > q ? -1 : 1;
	return x->rank < y->rank ? -1 : x->rank > y->rank;
}

void
colls_text(const struct colls *c, const struct kg_reader *r, int top)
{
	size_t *ord, i, k;
	struct cmember *m;

	if (c->ng == 0 || top <= 0)
		return;
	ord = xmalloc(c->ng * sizeof(*ord));
	for (i = 0; i < c->ng; i++)
		ord[i] = i;
	sortc = c;
	qsort(ord, c->ng, sizeof(*ord), cmp_total);
	printf("  collectives across ranks: %zu; the most waited for (%s), the rank that "
	    "came last and who waited longest:\n", c->ng, c->sim ? "simulated" : "measured");
	for (i = 0; i < c->ng && i < (size_t)top; i++) {
		const struct cgroup *g = &c->g[ord[i]];
		const char *name = kg_str(r, g->name);

		printf("  %10.3f ms  iter %lld  last: rank %lld", (double)(c->sim ? g->stotal : g->mtotal) / 1e6,
		    (long long)g->it, (long long)(c->sim ? g->slast : g->mlast));
		if (c->sim)
			printf(" (measured: rank %lld)", (long long)g->mlast);
		m = xmalloc(g->nm * sizeof(*m));
		memcpy(m, c->mem + g->m0, g->nm * sizeof(*m));
		qsort(m, g->nm, sizeof(*m), cmp_wait);
		printf("  waited:");
		for (k = 0; k < g->nm && k < 3; k++)
			printf(" rank %lld %.3f ms%s", (long long)m[k].rank,
			    (double)(c->sim ? m[k].swait : m[k].mwait) / 1e6,
			    k + 1 < g->nm && k + 1 < 3 ? "," : "");
		printf("  %.60s\n", name ? name : "?");
		free(m);
	}
	free(ord);
}

static void
csv_str(FILE *f, const char *s)
{
	fputc('"', f);
	for (; s != NULL && *s != '\0'; s++) {
		if (*s == '"')
			fputc('"', f);
		fputc(*s, f);
	}
	fputc('"', f);
}

void
colls_csv(const struct colls *c, const struct kg_reader *r, FILE *f, int *header)
{
	size_t i, k;

	if (!*header) {
		fprintf(f, "collective,iteration,name,rank,measured_wait_ns,simulated_wait_ns,"
		    "measured_last_rank,simulated_last_rank\n");
		*header = 1;
	}
	for (i = 0; i < c->ng; i++) {
		const struct cgroup *g = &c->g[i];

		for (k = 0; k < g->nm; k++) {
			const struct cmember *m = &c->mem[g->m0 + k];

			fprintf(f, "%zu,%lld,", i, (long long)g->it);
			csv_str(f, kg_str(r, g->name));
			fprintf(f, ",%lld,%lld,", (long long)m->rank, (long long)m->mwait);
			if (c->sim)
				fprintf(f, "%lld,%lld,%lld\n", (long long)m->swait, (long long)g->mlast,
				    (long long)g->slast);
			else
				fprintf(f, ",%lld,\n", (long long)g->mlast);
		}
	}
}
