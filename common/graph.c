/*
 * graph: a section held whole in memory (see graph.h).
 */
#include <stdlib.h>
#include <string.h>

#include "graph.h"
#include "prefault.h"
#include "util.h"

void
graph_init(struct graph *g)
{
	memset(g, 0, sizeof(*g));
	g->pf = pf_new();
}

void
graph_release(struct graph *g)
{
	pf_free(g->pf);
	free(g->raw);
	free(g->roff);
	free(g->rtype);
	free(g->proc);
	free(g->task);
	free(g->edge);
	memset(g, 0, sizeof(*g));
}

void
graph_begin(struct graph *g, const struct kg_header *h)
{
	g->h = *h;
	g->job = h->nranks > 0;
	g->nraw = g->nr = g->nproc = g->ntask = g->nedge = 0;
	g->nstr = 0;
}

static void
keep(struct graph *g, const struct kg_rec *rec)
{
	grow(&g->raw, &g->capraw, g->nraw + rec->nbytes, 1);
	memcpy(g->raw + g->nraw, rec->bytes, rec->nbytes);
	grow(&g->roff, &g->capr, g->nr + 1, sizeof(*g->roff));
	grow(&g->rtype, &g->caprtype, g->nr + 1, 1);
	g->roff[g->nr] = g->nraw;
	g->rtype[g->nr++] = (uint8_t)rec->type;
	g->nraw += rec->nbytes;
}

void
graph_add(struct graph *g, const struct kg_rec *rec)
{
	size_t cap0;

	switch (rec->type) {
	case KG_R_STR:
		keep(g, rec);
		g->nstr++;
		break;
	case KG_R_COV:
		keep(g, rec);
		break;
	case KG_R_PROC:
		keep(g, rec);
		VEC_PUSH(g->proc, g->nproc, g->capproc, rec->proc);
		break;
	case KG_R_TASK:
		cap0 = g->captask;
		VEC_PUSH(g->task, g->ntask, g->captask, rec->task);
		pf_vec(g->pf, 0, g->task, g->ntask, g->captask, cap0, sizeof(*g->task));
		break;
	case KG_R_EDGE:
		cap0 = g->capedge;
		VEC_PUSH(g->edge, g->nedge, g->capedge, rec->edge);
		pf_vec(g->pf, 1, g->edge, g->nedge, g->capedge, cap0, sizeof(*g->edge));
		break;
	default: /* sim: the times go with the change; others: unknown */
		break;
	}
}

int
graph_take(struct graph *g, int type, const struct kg_rec *rec)
{
	if (type == KG_R_HEADER)
		graph_begin(g, &rec->header);
	else if (type == KG_R_END)
		return 1;
	else
		graph_add(g, rec);
	return 0;
}

int64_t
graph_rank(const struct graph *g, uint32_t task)
{
	uint32_t p = g->task[task].proc;

	if (p < g->nproc && g->proc[p].rank >= 0)
		return g->proc[p].rank;
	return g->h.rank;
}

static int
write_kept(struct kg_writer *w, const struct graph *g, int type)
{
	size_t i;

	for (i = 0; i < g->nr; i++) {
		size_t end = i + 1 < g->nr ? g->roff[i + 1] : g->nraw;

		if (g->rtype[i] == type &&
		    kg_write_bytes(w, g->raw + g->roff[i], end - g->roff[i], type) < 0)
			return -1;
	}
	return 0;
}

int
graph_write(struct kg_writer *w, const struct graph *g, const char *tool,
    const struct graph_out *o)
{
	size_t i;

	kg_writer_follow(w, o->h != NULL ? o->h : &g->h);
	if (kg_write_header_tool(w, o->h != NULL ? o->h : &g->h, tool) < 0 ||
	    write_kept(w, g, KG_R_STR) < 0)
		return -1;
	for (i = 0; i < o->nxstr; i++)
		if (kg_write_str(w, g->nstr + (uint32_t)i, o->xstr[i], strlen(o->xstr[i])) < 0)
			return -1;
	if (o->proc == NULL && write_kept(w, g, KG_R_PROC) < 0)
		return -1;
	for (i = 0; o->proc != NULL && i < o->nproc; i++)
		if (kg_write_proc(w, &o->proc[i]) < 0)
			return -1;
	for (i = 0; i < o->ntask; i++) {
		struct kg_task t;

		if (o->task_at != NULL)
			o->task_at(o->arg, i, &t);
		if (kg_write_task(w, o->task_at != NULL ? &t : &o->task[i]) < 0)
			return -1;
	}
	for (i = 0; i < o->nedge; i++)
		if (kg_write_edge(w, &o->edge[i]) < 0)
			return -1;
	if (write_kept(w, g, KG_R_COV) < 0)
		return -1;
	return kg_write_end(w);
}
