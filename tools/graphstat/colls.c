#include "colls.h"

#include <stdlib.h>
#include <string.h>

#include "util.h"

void
colls_reset(struct colls *c)
{
	c->ne = c->ng = c->nmem = c->nci = 0;
	c->sim = 0;
}

void
colls_release(struct colls *c)
{
	free(c->src);
	free(c->dst);
	free(c->g);
	free(c->mem);
	free(c->ci);
	memset(c, 0, sizeof(*c));
}

void
colls_task(struct colls *c, uint32_t id, int coll, uint64_t bytes, int64_t d)
{
	struct cinfo x = { id, (uint8_t)coll, bytes, d };

	VEC_PUSH(c->ci, c->nci, c->capci, x);
}

/* The collective task record of task id, or NULL. */
static const struct cinfo *
cinfo(const struct colls *c, uint32_t id)
{
	size_t lo = 0, hi = c->nci;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (c->ci[mid].task < id)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < c->nci && c->ci[lo].task == id ? &c->ci[lo] : NULL;
}

void
colls_edge(struct colls *c, uint32_t src, uint32_t dst)
{
	grow(&c->src, &c->caps, c->ne + 1, sizeof(*c->src));
	grow(&c->dst, &c->capd, c->ne + 1, sizeof(*c->dst));
	c->src[c->ne] = src;
	c->dst[c->ne++] = dst;
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

static void fit(struct colls *c);

void
colls_build(struct colls *c, const struct stask *t, size_t n, int sim)
{
	uint32_t *up, *gid, *ids = NULL;
	size_t i, k, capids = 0;

	c->ng = c->nmem = c->nfit = 0;
	c->sim = sim;
	if (c->ne == 0 || n == 0)
		return;
	up = xmalloc(n * sizeof(*up));
	gid = xmalloc(n * sizeof(*gid));
	for (i = 0; i < n; i++)
		up[i] = (uint32_t)i, gid[i] = UINT32_MAX;
	for (k = 0; k < c->ne; k++)
		if (c->src[k] < n && c->dst[k] < n)
			uf_union(up, c->src[k], c->dst[k]);
	/* groups in order of their lowest task id; members in id order */
	for (i = 0; i < n; i++) {
		uint32_t r = uf_find(up, (uint32_t)i);
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
		struct cgroup *g = &c->g[k];
		const struct cinfo *x = cinfo(c, ids[g->m0]);
		int64_t node = -1;

		g->coll = x != NULL ? x->coll : KG_COLL_NONE;
		g->bytes = x != NULL ? x->bytes : 0;
		g->t = x != NULL ? x->d : 0;
		g->link = COMM_INTRA;
		for (i = 0; i < g->nm; i++) {
			int64_t nd = c->gpus_per_node > 0 ? c->mem[g->m0 + i].rank / c->gpus_per_node : 0;

			if (node >= 0 && nd != node)
				g->link = COMM_INTER;
			node = nd;
		}
	}
	for (k = 0; k < c->ng; k++) {
		waits(c, &c->g[k], t, ids + c->g[k].m0, 0);
		if (sim)
			waits(c, &c->g[k], t, ids + c->g[k].m0, 1);
	}
	free(ids);
	free(up);
	free(gid);
	fit(c);
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
		if (c->sim && !c->predicted)
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

void
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

static const char *const link_name[COMM_NLINK] = { "intra", "inter" };

/* The communication model on the groups with a size (colls_build). */
static void
fit(struct colls *c)
{
	struct comm_sample *sm = xmalloc((c->ng + 1) * sizeof(*sm));
	size_t i, ns = 0;

	for (i = 0; i < c->ng; i++) {
		const struct cgroup *g = &c->g[i];

		if (g->coll == KG_COLL_NONE || g->bytes == 0 || g->t <= 0)
			continue;
		sm[ns].coll = g->coll;
		sm[ns].n = (int64_t)g->nm;
		sm[ns].bytes = g->bytes;
		sm[ns].link = g->link;
		sm[ns++].t = g->t;
	}
	comm_fit(sm, ns, &c->model);
	c->nfit = ns;
	free(sm);
}

void
colls_comm(const struct colls *c, FILE *f, int *header, int text)
{
	const struct comm_model *mp = &c->model;
	size_t i, ns = c->nfit;
	int k, l;

	if (text && ns > 0) {
		printf("  communication model, fitted on the %zu collectives with a size "
		    "(T = alpha * steps + bytes * factor / beta):\n", ns);
		for (k = 1; k < KG_NCOLL; k++)
			for (l = 0; l < COMM_NLINK; l++) {
				const struct comm_class *cc = &mp->c[k][l];

				if (cc->samples == 0)
					continue;
				for (int q = 0; q < cc->nseg; q++) {
					if (q == 0)
						printf("  %-14s %-5s %6zu", kg_coll_name[k], link_name[l],
						    cc->samples);
					else
						printf("  %-14s %-5s %6s", "", "", "");
					if (cc->nseg > 1)
						printf("  %s %9.0f B", q == 0 ? "up to" : "past ",
						    q == 0 ? cc->seg[0].upto : cc->seg[0].upto);
					printf("  alpha %8.3f us  ", cc->seg[q].alpha / 1e3);
					if (cc->seg[q].beta > 0)
						printf("beta %8.2f GB/s", cc->seg[q].beta);
					else
						printf("beta %8s     ", "-");
					if (q == 0)
						printf("  error %6.2f%%", cc->mape);
					putchar('\n');
				}
			}
	}
	if (f != NULL) {
		if (!*header) {
			fprintf(f, "collective,iteration,type,ranks,bytes,link,transfer_ns,"
			    "model_ns,error_pct\n");
			*header = 1;
		}
		for (i = 0; i < c->ng; i++) {
			const struct cgroup *g = &c->g[i];
			int approx;
			int64_t mt;

			if (g->coll == KG_COLL_NONE || g->bytes == 0 || g->t <= 0)
				continue;
			mt = comm_time(mp, g->coll, (int64_t)g->nm, g->bytes, g->link, &approx);
			fprintf(f, "%zu,%lld,%s,%zu,%llu,%s,%lld,%lld,%.3f\n", i, (long long)g->it,
			    kg_coll_name[g->coll], g->nm, (unsigned long long)g->bytes,
			    link_name[g->link], (long long)g->t, (long long)mt,
			    100.0 * (double)(mt - g->t) / (double)g->t);
		}
	}
}
