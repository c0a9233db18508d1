#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "pgroup.h"
#include "util.h"

void
config_init(struct config *c)
{
	memset(c, 0, sizeof(*c));
	c->world = -1;
	c->dp = -1;
	c->tp = 1;
}

void
config_release(struct config *c)
{
	free(c->coll);
	c->coll = NULL;
	c->nc = c->capc = 0;
}

int
config_is_edit(const char *tool)
{
	return strncmp(tool, "graph-scale-", 12) == 0 || strncmp(tool, "graph-retime", 12) == 0;
}

void
config_header(struct config *c, const struct kg_header *h)
{
	c->edited = 0;
	for (size_t i = 0; i < h->ntools; i++)
		c->edited |= config_is_edit(h->tools[i]);
	c->nranks = h->nranks > 0 ? (int64_t)h->nranks : 1;
	c->world = h->world;
	c->dp = -1;
	c->tp = 1;
	c->pp = c->layers = c->mbs = 0;
	c->nc = 0;
	snprintf(c->gpu, sizeof(c->gpu), "%s", h->gpu != NULL ? h->gpu : "");
	c->gpu_mem = h->gpu_mem;
	c->gpu_sms = h->gpu_sms;
}

void
config_task(struct config *c, const struct kg_task *t)
{
	if (t->stage + 1 > c->pp)
		c->pp = t->stage + 1;
	if (t->layer + 1 > c->layers)
		c->layers = t->layer + 1;
	if (t->mb + 1 > c->mbs)
		c->mbs = t->mb + 1;
	if (c->groups && t->kind == KG_COLL && t->pgr != KG_NONE)
		VEC_PUSH(c->coll, c->nc, c->capc, *t);
}

void
config_finish(struct config *c, const struct kg_reader *r)
{
	struct pgroups pg;
	const struct kg_task **t = xmalloc((c->nc + 1) * sizeof(*t));
	uint32_t *grp = xmalloc((c->nc + 1) * sizeof(*grp));
	size_t i;

	pgroups_init(&pg, 8);
	for (i = 0; i < c->nc; i++) {
		const char *s = kg_str(r, c->coll[i].pgr);

		t[i] = &c->coll[i];
		grp[i] = s != NULL ? pgroups_of(&pg, c->coll[i].pgr, s) : UINT32_MAX;
	}
	pgroups_classify(&pg, t, grp, c->nc);
	c->dp = pg.dp;
	c->tp = pg.tp;
	pgroups_release(&pg);
	free(t);
	free(grp);
	c->nc = 0;
}
