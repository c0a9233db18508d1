/*
 * whatif-om: the op model's part of the what-if skeleton (whatif.h's
 * whatif_models, whatif_run_models, whatif_run_resized), apart from
 * whatif.c because it links libxgboost: only the tools that re-time by
 * a model (graph-scale-hidden, graph-scale-tp, graph-scale-batch,
 * graph-retime) link this file.
 */
#include "whatif.h"

#include <stdio.h>

#include "opmodel.h"
#include "resize.h"

static int
load(const char *path, struct om_model *m)
{
	char err[256];
	int rc = om_load_path(m, path, err, sizeof(err));

	if (rc < 0)
		errmsg("%s: %s", path, err);
	return rc;
}

int
whatif_models(const char *model, const char *from, struct om_model *to, struct om_model *src,
    int *have_to, int *have_src)
{
	*have_to = *have_src = 0;
	if (model != NULL) {
		if (load(model, to) < 0)
			return 1;
		*have_to = 1;
	}
	if (from != NULL) {
		if (load(from, src) < 0) {
			if (*have_to)
				om_model_release(to);
			*have_to = 0;
			return 1;
		}
		*have_src = 1;
	}
	return 0;
}

int
whatif_run_models(const struct whatif_tool *w, whatif_section_fn *section, void *arg)
{
	struct whatif_om *m = w->om;
	int rc;

	if (m->from != NULL && m->model == NULL) {
		errmsg("--from needs --model (the GPU to predict)");
		usage_exit(w->usage);
	}
	if (whatif_models(m->model, m->from, &m->to, &m->src, &m->have_to, &m->have_src) != 0)
		return 1;
	rc = whatif_run_graphs(w, section, arg);
	if (m->have_to)
		om_model_release(&m->to);
	if (m->have_src)
		om_model_release(&m->src);
	return rc;
}

/* whatif_run_resized's section function: the tool's and its own. */
struct resized {
	whatif_resize_fn *resize;
	void *arg;
	const struct whatif_om *om;
};

static int
resized_section(void *arg, struct graph *g, const struct kg_reader *r, const char *name,
    int index, struct gout *out)
{
	const struct resized *c = arg;
	struct rz_section z;
	char set[256], tool[256 + 64], why[192];
	int64_t tp = 1;
	int rc;

	rz_section_init(&z, g, r);
	rc = c->resize(c->arg, g, r, name, index, &z, set, sizeof(set), &tp);
	if (rc == 0) {
		if (z.cn.collassumed > 0) {
			/* the GPU's topology, as rz_retime_colls took it */
			const char *topo = comm_topology_default(g->h.gpu, why, sizeof(why));

			warnmsg("%s: section %d: %lld collectives re-timed by the built-in %s "
			    "topology (the job has none of their kind on that link%s%s)", name, index,
			    (long long)z.cn.collassumed, topo, why[0] ? "; " : "", why);
		}
		snprintf(tool, sizeof(tool), "%s%s%s)", set, tp > 1 ? ", tensor-parallel shares" : "",
		    c->om->have_to ? ", op model" : ", by FLOPs and bytes");
		tool[255] = '\0'; /* at most 255 bytes, as the entry always was */
		rc = whatif_write(out, g, tool, (const char *const *)z.rs.in.str, z.rs.in.n);
	}
	rz_section_release(&z);
	return rc;
}

int
whatif_run_resized(const struct whatif_tool *w, whatif_resize_fn *resize, void *arg)
{
	struct resized c = { resize, arg, w->om };

	return whatif_run_models(w, resized_section, &c);
}
