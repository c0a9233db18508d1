/*
 * kineto2graph's build: what the rules know of a runtime call, read by
 * every rule that walks the calls. Its duration as simulated, once rule
 * 4 (runtime.c, set_dur) has cut it (get_dur), and the host time a
 * prefix-cut call leaves to the gap after it (tail_of); what the call
 * does (rt_role), asked once a name.
 *
 * Promises: reads only, but for rt_role's cache (g->rtc); nothing is
 * written to the stream here. Below runtime.c and deps.c, which both ask.
 */
#include <stdint.h>

#include "gb.h"
#include "k2g.h"
#include "rtapi.h"

/* Host time a prefix-cut call leaves to the gap after it. */
int64_t
tail_of(const struct gb *g, uint32_t x)
{
	uint32_t i = umap_get(&g->newdur, x);

	return i != KG_NONE && g->durpre[i] ? g->t->ev[x].dur - g->durv[i] : 0;
}

int64_t
get_dur(const struct gb *g, uint32_t x)
{
	uint32_t i = umap_get(&g->newdur, x);

	return i == KG_NONE ? g->t->ev[x].dur : g->durv[i];
}

/*
 * What a runtime call does (an rtapi role, rtapi.h: CUDA and HIP alike);
 * asked once a name (g->rtc, 0 before; the role plus one): a trace makes
 * millions of calls of a few dozen names.
 */
int
rt_role(struct gb *g, uint32_t name)
{
	int c;

	if (name < g->nrtc && g->rtc[name] != 0)
		return g->rtc[name] - 1;
	c = rtapi_role(g->t->str.str[name]);
	if (name < g->nrtc)
		g->rtc[name] = (uint8_t)(c + 1);
	return c;
}
