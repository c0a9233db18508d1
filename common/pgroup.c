/*
 * pgroup: process groups and what they are for (see pgroup.h).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pgroup.h"
#include "util.h"

#define FWD_BYTES 1024.0 /* mean forward message of a tensor-parallel group, more than */

void
pgroups_init(struct pgroups *s, int64_t gpn)
{
	memset(s, 0, sizeof(*s));
	s->gpn = gpn;
	s->dp = -1;
	s->tp = 1;
}

void
pgroups_release(struct pgroups *s)
{
	free(s->g);
	s->g = NULL;
	s->ng = s->cap = 0;
}

uint32_t
pgroups_of(struct pgroups *s, uint32_t pgr, const char *text)
{
	struct pgroup g;
	int64_t node = -1;
	long long v;
	size_t k;

	for (k = 0; k < s->ng; k++)
		if (s->g[k].pgr == pgr)
			return (uint32_t)k;
	memset(&g, 0, sizeof(g));
	g.pgr = pgr;
	g.text = text;
	g.link = COMM_INTRA;
	while (next_number(&text, &v)) {
		if (node >= 0 && v / s->gpn != node)
			g.link = COMM_INTER;
		node = v / s->gpn;
		g.size++;
	}
	VEC_PUSH(s->g, s->ng, s->cap, g);
	return (uint32_t)(s->ng - 1);
}

int
pgroups_p2p(int c)
{
	return c == KG_COLL_SEND || c == KG_COLL_RECV || c == KG_COLL_SENDRECV;
}

/* Reduces: all-reduce, reduce-scatter or reduce (a gradient, an activation). */
static int
reduction(int c)
{
	return c == KG_COLL_ALLREDUCE || c == KG_COLL_REDUCESCATTER || c == KG_COLL_REDUCE;
}

void
pgroups_classify(struct pgroups *s, const struct kg_task *const *c, const uint32_t *grp,
    size_t n)
{
	int64_t *sz = xcalloc(s->ng + 1, sizeof(*sz));
	double *by = xcalloc(s->ng + 1, sizeof(*by)), best = -1;
	size_t i, k, nsz = 0, q;

	s->dp = -1;
	s->tp = 1;
	for (i = 0; i < n; i++) {
		struct pgroup *g;

		if (c[i]->phase != KG_PH_NONE)
			s->phases = 1;
		if (grp[i] == UINT32_MAX)
			continue;
		g = &s->g[grp[i]];
		if (c[i]->coll >= 0 && c[i]->coll < KG_NCOLL && c[i]->phase >= 0 &&
		    c[i]->phase < KG_NPHASE)
			g->cnt[c[i]->coll][c[i]->phase]++;
		if (pgroups_p2p(c[i]->coll) || !reduction(c[i]->coll))
			continue;
		if (c[i]->phase == KG_PH_FWD && c[i]->coll != KG_COLL_REDUCE)
			g->nfwd++, g->fwdbytes += (double)c[i]->bytes;
		else if (c[i]->phase == KG_PH_BWD || c[i]->phase == KG_PH_OPT)
			g->late = 1;
	}
	for (k = 0; k < s->ng; k++)
		s->g[k].fwd = s->g[k].nfwd > 0 && s->g[k].fwdbytes / (double)s->g[k].nfwd > FWD_BYTES;
	/* Of the groups that reduce only late (one of one rank, too: DDP at
	 * world size 1, its all-reduces made), those of the size that moves
	 * the most bytes: gradients outweigh a norm's scalars. */
	for (i = 0; i < n; i++) {
		const struct pgroup *g = grp[i] == UINT32_MAX ? NULL : &s->g[grp[i]];

		if (g == NULL || g->fwd || !g->late || g->size < 1 || !reduction(c[i]->coll) ||
		    !(c[i]->phase == KG_PH_BWD || c[i]->phase == KG_PH_OPT))
			continue;
		for (q = 0; q < nsz && sz[q] != g->size; q++)
			;
		if (q == nsz)
			sz[nsz++] = g->size;
		by[q] += (double)c[i]->bytes;
	}
	for (q = 0; q < nsz; q++)
		if (by[q] > best)
			best = by[q], s->dp = sz[q];
	for (k = 0; k < s->ng; k++) {
		if (s->g[k].fwd && s->g[k].size > s->tp)
			s->tp = s->g[k].size;
		s->g[k].dp = !s->g[k].fwd && s->g[k].late && s->g[k].size == s->dp;
	}
	free(sz);
	free(by);
}

void
pgroups_fit(const struct pgroups *s, const struct kg_task *const *c, const uint32_t *grp,
    size_t n, const struct comm_given *given, struct comm_model *m)
{
	struct comm_sample *sm = xmalloc((n + 1) * sizeof(*sm));
	size_t i, ns = 0;
	int k, l;

	for (i = 0; i < n; i++) {
		const struct pgroup *g = grp[i] == UINT32_MAX ? NULL : &s->g[grp[i]];

		if (g == NULL || c[i]->bytes == 0 || c[i]->dur <= 0)
			continue;
		sm[ns].coll = c[i]->coll;
		sm[ns].n = g->size;
		sm[ns].bytes = c[i]->bytes;
		sm[ns].link = g->link;
		sm[ns++].t = c[i]->dur;
	}
	comm_fit(sm, ns, m);
	free(sm);
	for (l = 0; given != NULL && l < COMM_NLINK; l++)
		for (k = 1; k < KG_NCOLL && given->set[l]; k++)
			if (m->c[k][l].samples == 0)
				comm_class_given(&m->c[k][l], given, k, l);
	/* a type the job never ran on a link: the link's best-sampled fit */
	for (l = 0; l < COMM_NLINK; l++) {
		int best = 0;

		for (k = 1; k < KG_NCOLL; k++)
			if (m->c[k][l].from == 0 && m->c[k][l].samples >
			    (best ? m->c[best][l].samples : 0))
				best = k;
		for (k = 1; k < KG_NCOLL && best; k++)
			if (m->c[k][l].samples == 0) {
				m->c[k][l] = m->c[best][l];
				m->c[k][l].from = best;
			}
	}
}

int
pgroups_borrowed(const struct comm_model *m, int coll, int link, uint8_t *seen, char *msg,
    size_t len)
{
	if (coll <= KG_COLL_NONE || coll >= KG_NCOLL || link < 0 || link >= COMM_NLINK ||
	    m->c[coll][link].from == 0 || seen[coll * COMM_NLINK + link])
		return 0;
	seen[coll * COMM_NLINK + link] = 1;
	snprintf(msg, len, "no %s over %s in the job: timed with the %s fit there",
	    kg_coll_name[coll], link == COMM_INTER ? "the network" : "NVLink",
	    kg_coll_name[m->c[coll][link].from]);
	return 1;
}

void
pgroups_describe(const struct pgroups *s, const struct pgroup *g, char *buf, size_t len)
{
	size_t n;
	int c, p, any = 0;

	(void)s;
	snprintf(buf, len, "%s; kernels:", g->fwd ? "tensor-parallel" : g->dp ?
	    "data-parallel" : "kept as it is");
	for (c = 0; c < KG_NCOLL; c++)
		for (p = 0; p < KG_NPHASE; p++) {
			if (g->cnt[c][p] == 0)
				continue;
			n = strlen(buf);
			if (n + 1 >= len)
				return;
			snprintf(buf + n, len - n, "%s %s %s %lld", any ? "," : "",
			    c == KG_COLL_NONE ? "(type unknown)" : kg_coll_name[c],
			    p == KG_PH_NONE ? "(no phase)" : kg_phase_name[p],
			    (long long)g->cnt[c][p]);
			any = 1;
		}
	if (!any) {
		n = strlen(buf);
		snprintf(buf + n, len - n, " none");
	}
}

int
pgroups_ranks_text(const int64_t *r, size_t n, char *buf, size_t len)
{
	size_t i, k = 0;
	int w;

	w = snprintf(buf, len, "[");
	if (w < 0 || (size_t)w >= len)
		return -1;
	k = (size_t)w;
	for (i = 0; i < n; i++) {
		w = snprintf(buf + k, len - k, "%s%lld", i ? ", " : "", (long long)r[i]);
		if (w < 0 || (size_t)w >= len - k)
			return -1;
		k += (size_t)w;
	}
	w = snprintf(buf + k, len - k, "]");
	return w < 0 || (size_t)w >= len - k ? -1 : 0;
}

int
pgroups_assume(const struct comm_model *m, const uint8_t *used, const char *gpu,
    struct comm_given *given, char assumed[COMM_NLINK], char msg[COMM_NLINK][PGROUPS_MSGLEN],
    char *note, size_t notelen)
{
	static const char *const what[COMM_NLINK] = { "NVLink", "network" };
	static const char *const over[COMM_NLINK] = { "NVLink", "the network" };
	struct comm_given b;
	const char *topo;
	char why[192];
	int l, c, n = 0, need, any;
	size_t k;

	note[0] = '\0';
	memset(&b, 0, sizeof(b));
	topo = comm_topology_default(gpu, why, sizeof(why));
	comm_topology_builtin(topo, &b, 0);
	for (l = 0; l < COMM_NLINK; l++) {
		assumed[l] = 0;
		msg[l][0] = '\0';
		need = any = 0;
		for (c = 1; c < KG_NCOLL; c++) {
			need |= used[c * COMM_NLINK + l] && m->c[c][l].samples == 0;
			any |= m->c[c][l].samples > 0;
		}
		if (!need || any || given->set[l])
			continue;
		given->set[l] = 1;
		given->nccl[l] = b.nccl[l];
		given->gbps[l] = b.gbps[l];
		given->us[l] = b.us[l];
		assumed[l] = 1;
		snprintf(msg[l], PGROUPS_MSGLEN, "no collective over %s in the job: it is taken to be "
		    "the built-in %s topology's (%g GB/s a GPU, NCCL's ring model; %s%sgive it with "
		    "--net or --topology)", over[l], topo, b.gbps[l], why, why[0] ? "; " : "");
		k = strlen(note);
		snprintf(note + k, notelen - k, "%s%s: built-in %s (%g GB/s, NCCL's ring model)",
		    k ? "; " : "assumed ", what[l], topo, b.gbps[l]);
		n++;
	}
	return n;
}

int
pgroups_plausible(struct comm_model *m, const uint8_t *used, const char *gpu,
    const struct comm_given *given, char (*msg)[PGROUPS_MSGLEN], int nmsg)
{
	static const char *const over[COMM_NLINK] = { "NVLink", "the network" };
	struct comm_given b;
	const char *topo;
	char why[96], fit[256], inst[256], by[96];
	int c, l, n = 0;

	memset(&b, 0, sizeof(b));
	topo = comm_topology_default(gpu, NULL, 0);
	comm_topology_builtin(topo, &b, 0);
	for (l = 0; l < COMM_NLINK; l++)
		if (given != NULL && given->set[l]) {
			b.nccl[l] = given->nccl[l];
			b.gbps[l] = given->gbps[l];
			b.us[l] = given->us[l];
		}
	for (c = 1; c < KG_NCOLL; c++)
		for (l = 0; l < COMM_NLINK; l++) {
			struct comm_class *cc = &m->c[c][l];

			if (cc->samples == 0 || cc->given ||
			    !comm_implausible(cc, b.gbps[l], why, sizeof(why)))
				continue;
			comm_class_text(cc, fit, sizeof(fit));
			comm_class_given(cc, &b, c, l);
			comm_class_text(cc, inst, sizeof(inst));
			if (!used[c * COMM_NLINK + l] || n >= nmsg)
				continue;
			if (given != NULL && given->set[l])
				snprintf(by, sizeof(by), "the link given");
			else
				snprintf(by, sizeof(by), "the built-in %s topology's", topo);
			snprintf(msg[n++], PGROUPS_MSGLEN, "the %s fit over %s (%s) is implausible "
			    "for the link (%s: it holds the ranks' waits, not the transfer): %s "
			    "is used instead (%s)", kg_coll_name[c], over[l], fit, why, by, inst);
		}
	return n;
}
