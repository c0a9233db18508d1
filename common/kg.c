/*
 * kg: what the graph stream's writer and reader share (kg.h is the
 * interface; kg_int.h what the codec's files share among themselves):
 * the names of the enums a stream spells out, the coverage map, and the
 * one way an error is put into an `err` buffer. The writer is
 * kgwrite.c; the reader is kgread.c (its buffer and kg_read),
 * kgdecode.c (a record decoded where it lies: tasks and edges) and
 * kgrecords.c (the records around them).
 */
#include "kg.h"

#include <stdarg.h>
#include <string.h>

#include "kg_int.h"
#include "util.h"

const char *const kg_task_kind_name[KG_NTASK_KIND] = {
	"cpu", "rt", "kern", "coll", "cpy", "set"
};
const char *const kg_edge_kind_name[KG_NEDGE_KIND] = {
	"thread", "handoff", "launch", "stream", "event", "sync", "rank"
};
const char *const kg_how_name[KG_NHOW] = { "trace", "explicit", "inferred" };
const char *const kg_coll_name[KG_NCOLL] = {
	"", "allreduce", "allgather", "reducescatter", "alltoall",
	"broadcast", "reduce", "sendrecv", "send", "recv"
};
const char *const kg_phase_name[KG_NPHASE] = { "", "fwd", "bwd", "opt", "other" };

int
kg_lookup(const char *const *table, int n, const char *name, size_t len)
{
	return lookup(table, n, name, len);
}

void
kg_seterr(char *err, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(err, 256, fmt, ap);
	va_end(ap);
}

void
kg_cov_init(struct kg_cov *c)
{
	memset(c, 0, sizeof(*c));
}

void
kg_cov_release(struct kg_cov *c)
{
	size_t i;

	for (i = 0; i < c->n; i++)
		free(c->name[i]);
	free(c->name);
	free(c->val);
	memset(c, 0, sizeof(*c));
}

void
kg_cov_set(struct kg_cov *c, const char *name, size_t len, int64_t v, int add)
{
	size_t i, cap;

	for (i = 0; i < c->n; i++)
		if (strlen(c->name[i]) == len && memcmp(c->name[i], name, len) == 0) {
			c->val[i] = add ? c->val[i] + v : v;
			return;
		}
	cap = c->cap;
	grow(&c->name, &cap, c->n + 1, sizeof(*c->name));
	cap = c->cap;
	grow(&c->val, &cap, c->n + 1, sizeof(*c->val));
	c->cap = cap;
	c->name[c->n] = xstrndup(name, len);
	c->val[c->n] = v;
	c->n++;
}

void
kg_cov_add(struct kg_cov *c, const char *name, int64_t v)
{
	kg_cov_set(c, name, strlen(name), v, 1);
}

int64_t
kg_cov_get(const struct kg_cov *c, const char *name)
{
	size_t i;

	for (i = 0; i < c->n; i++)
		if (strcmp(c->name[i], name) == 0)
			return c->val[i];
	return 0;
}
