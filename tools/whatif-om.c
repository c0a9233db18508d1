/*
 * whatif-om: the op model's part of the what-if skeleton (whatif.h's
 * whatif_models and whatif_run_models), apart from whatif.c because it links libxgboost: only
 * the tools that re-time by a model (graph-scale-hidden, graph-scale-tp,
 * graph-scale-batch, graph-retime) link this file.
 */
#include "whatif.h"

#include "opmodel.h"

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
