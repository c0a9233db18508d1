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
	c->hidden = -1;
	c->set_dp = c->set_tp = c->set_pp = c->set_layers = c->set_mbs = -1;
}

void
config_release(struct config *c)
{
	free(c->coll);
	c->coll = NULL;
	c->nc = c->capc = 0;
}

/* The set clause of a tools entry: after its name and version, or NULL. */
static const char *
set_clause(const char *tool)
{
	const char *p = strchr(tool, ' ');

	if (p != NULL)
		p = strchr(p + 1, ' ');
	return p != NULL && strncmp(p, " set: ", 6) == 0 ? p + 6 : NULL;
}

int64_t
config_set(const struct kg_header *h, const char *key)
{
	size_t kl = strlen(key);
	int64_t v = -1;

	for (size_t i = 0; i < h->ntools; i++) {
		const char *p = set_clause(h->tools[i]);

		/* "k=N, k=N" up to the first word of another form */
		while (p != NULL) {
			size_t n = strspn(p, "abcdefghijklmnopqrstuvwxyz_");
			size_t d = n > 0 && p[n] == '=' ? strspn(p + n + 1, "0123456789") : 0;

			if (d == 0 || d > 18)
				break;
			if (n == kl && memcmp(p, key, kl) == 0)
				v = strtoll(p + n + 1, NULL, 10);
			p += n + 1 + d;
			p = strncmp(p, ", ", 2) == 0 ? p + 2 : NULL;
		}
	}
	return v;
}

int64_t
config_world(const struct kg_header *h)
{
	int64_t w = config_set(h, "world");

	if (w > 0)
		return w;
	return h->world > 0 ? h->world : h->nranks > 0 ? (int64_t)h->nranks : 1;
}

int64_t
config_world_to(const struct kg_header *h, const char *key, int64_t traced, int64_t to)
{
	int64_t from = config_set(h, key);

	if (from <= 0)
		from = traced;
	if (from <= 0 || to <= 0)
		return -1;
	return config_world(h) / from * to;
}

void
config_set_text(char *buf, size_t len, const char *const *keys, const int64_t *vals, size_t n)
{
	size_t at = 0;

	buf[0] = '\0';
	for (size_t i = 0; i < n; i++) {
		int k;

		if (vals[i] < 0)
			continue;
		k = snprintf(buf + at, len - at, "%s%s=%lld", at == 0 ? " set: " : ", ", keys[i],
		    (long long)vals[i]);
		if (k < 0 || (size_t)k >= len - at) {
			buf[at] = '\0';
			return;
		}
		at += (size_t)k;
	}
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
	c->hidden = config_set(h, "hidden");
	c->set_dp = config_set(h, "dp");
	c->set_tp = config_set(h, "tp");
	c->set_pp = config_set(h, "pp");
	c->set_layers = config_set(h, "layers");
	c->set_mbs = config_set(h, "micro_batches");
	if (config_set(h, "world") > 0)
		c->world = config_set(h, "world");
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
	c->dp = c->set_dp > 0 ? c->set_dp : pg.dp;
	c->tp = c->set_tp > 0 ? c->set_tp : pg.tp;
	if (c->set_pp > 0)
		c->pp = c->set_pp;
	if (c->set_layers > 0)
		c->layers = c->set_layers;
	if (c->set_mbs > 0)
		c->mbs = c->set_mbs;
	pgroups_release(&pg);
	free(t);
	free(grp);
	c->nc = 0;
}
