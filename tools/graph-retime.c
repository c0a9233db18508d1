/*
 * graph-retime: a graph's GPU work re-timed by an op model (another GPU)
 * or by factors (a kernel made faster), and where speed-ups pay.
 *
 * The unit re-timed is an operator call (common/opmodel.h: the kernels
 * one call of an operator launches, grouped by om_calls). With --model
 * alone a call takes the model's prediction, its kernels sharing it as
 * they shared the traced time; with --from as well, each kernel is
 * scaled by the ratio of the two models' predictions for its call, so
 * what the models do not explain of a kernel stays (by their trees when
 * both have trees that know the call, by their scaled rooflines when
 * neither does, else by their plain rooflines). A call the models
 * cannot size (an optimizer's tensor lists, unrecorded) keeps its time
 * with --model alone and is scaled by the two GPUs' achieved bandwidth
 * with --from. Host tasks and communication kernels keep their times.
 * --speedup divides the time of the kernels whose class, operator or
 * name matches a pattern.
 *
 * --sensitivity simulates: the re-timed graph, then the same with each
 * of the K (class, operator) groups with most GPU time twice as fast,
 * through graphsim and graphstat (found beside this program, else on
 * PATH), and prints the iteration times and gains instead of a stream.
 *
 * State: one section at a time: its input frames compressed, the records
 * of those frames that hold a GPU task as read (the others go out as
 * they came: common/held.h's sparse units), and its GPU tasks decoded
 * (about 200 bytes each).
 */
#include <errno.h>
#include <fnmatch.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <xxhash.h>

#include "cli.h"
#include "held.h"
#include "kg.h"
#include "opmodel.h"
#include "util.h"
#include "whatif.h"

#define PRODUCER "graph-retime " KG_VERSION

static const char usage[] =
    "graph-retime [-q] [-o FILE] [--model MODEL [--from MODEL | --absolute]] [--speedup PATTERN=FACTOR] ... "
    "[--sensitivity [K]] [FILE ...]";

static const char help[] =
    "Re-time a graph's GPU tasks by an op model or by factors.\n"
    "\n"
    "  -o, --output FILE          write the stream to FILE instead of stdout\n"
    "      --model MODEL          predict GPU calls with MODEL (opmodel fit): the\n"
    "                             graph as it would run on MODEL's GPU\n"
    "      --from MODEL           the model of the graph's own GPU: scale each kernel\n"
    "                             by the ratio of the two models' predictions\n"
    "      --absolute             each call takes MODEL's prediction even on the GPU\n"
    "                             the graph was traced on (which otherwise keeps its\n"
    "                             traced times)\n"
    "      --speedup PAT=FACTOR   kernels whose class (gemm, attn_fwd, ...), operator\n"
    "                             or name matches the shell pattern PAT run FACTOR\n"
    "                             times faster (repeatable)\n"
    "      --sensitivity [K]      simulate the K groups (class and operator) with most\n"
    "                             GPU time each twice as fast; print iteration times\n"
    "                             and gains (default K 5)\n"
    "  -q, --quiet                no warnings\n"
    "  -h, --help                 this help\n"
    "      --version              the version\n"
    "\n"
    "With no FILE, or FILE -, read standard input. See graph-retime(1).\n";

/* The tool's own options; whatif.h reads the others. */
static const struct option own[] = {
	{ "model", required_argument, NULL, 'M' },
	{ "from", required_argument, NULL, 'F' },
	{ "absolute", no_argument, NULL, 'A' },
	{ "speedup", required_argument, NULL, 'S' },
	{ "sensitivity", optional_argument, NULL, 'Z' },
	{ NULL, 0, NULL, 0 }
};

struct speedup {
	const char *pat; /* NULL: an exact group (sensitivity) */
	int cls;
	const char *op;
	double f;
};

struct opts {
	const char *model, *from;
	struct om_model to, src;
	int have_to, have_src;
	int absolute;   /* --absolute: the model's times on its own GPU too */
	struct speedup *sp;
	size_t nsp, capsp;
	int64_t sens; /* 0: no sensitivity */
};

/* A (class, operator) group's GPU time, for --sensitivity. */
struct group {
	int cls;
	char *op;
	double ns;
};

struct groups {
	struct group *g;
	size_t n, cap;
};

/* The cache of described calls: open addressing on XXH3 of the key. */
struct ckey {
	uint32_t op, sh, name, kind;
	uint64_t bytes;
};

struct cval {
	struct ckey key;
	int set, cls, kind;
	double pred, fac;
};

struct cache {
	struct cval *v;
	size_t cap; /* a power of two */
	size_t n;   /* slots handed out */
};

/* A GPU task of the section: its record index and the decoded record. */
struct gtask {
	struct kg_task t;
	size_t rec;
	int64_t d0; /* its duration as read */
};

struct section {
	struct held rec;     /* its records as read */
	struct gtask *g;
	size_t ng, capg;
	struct kg_header h;
	/* counts for the warnings */
	int64_t kept, bandwidth, nocall, rooflines;
	struct cache cache;
	int keep;            /* traced on the model's GPU: factors of 1 */
	struct held_frames fr; /* its frames as read, compressed */
	uint32_t over;       /* a task re-timed out of the format's range, or KG_NONE */
	double overns;       /* its time */
	size_t *hits;        /* by --speedup rule: the kernels it matched */
	uint32_t seen;       /* the classes of its kernels, a bit each */
};

static void
group_add(struct groups *gs, int cls, const char *op, double ns)
{
	size_t i;

	for (i = 0; i < gs->n; i++)
		if (gs->g[i].cls == cls && strcmp(gs->g[i].op, op) == 0) {
			gs->g[i].ns += ns;
			return;
		}
	{
		struct group g = { cls, xstrndup(op, strlen(op)), ns };

		VEC_PUSH(gs->g, gs->n, gs->cap, g);
	}
}

/* The factor of --speedup rules for a task: the product of those that
 * match, each counted in hits. */
static double
speedup_of(const struct opts *o, int cls, const char *op, const char *name, size_t *hits)
{
	double f = 1;
	size_t i;

	for (i = 0; i < o->nsp; i++) {
		const struct speedup *s = &o->sp[i];

		if (s->pat == NULL) {
			if (cls == s->cls && strcmp(op, s->op) == 0)
				f *= s->f;
		} else if ((cls >= 0 && fnmatch(s->pat, om_class_name[cls], 0) == 0) ||
		    fnmatch(s->pat, op, 0) == 0 || fnmatch(s->pat, name, 0) == 0) {
			f *= s->f;
			hits[i]++;
		}
	}
	return f;
}

/* A --speedup pattern that matched no kernel: said, with the classes
 * the section's kernels have (a pattern names a class, operator or name). */
static void
nomatch(const struct opts *o, const struct section *s, const char *name, int index)
{
	char cls[512];
	size_t at = 0;

	cls[0] = '\0';
	for (int k = 0; k < OM_NCLASS && k < 32; k++)
		if (s->seen & (1u << k) && at + strlen(om_class_name[k]) + 3 < sizeof(cls))
			at += (size_t)snprintf(cls + at, sizeof(cls) - at, "%s%s", at ? ", " : "",
			    om_class_name[k]);
	for (size_t i = 0; i < o->nsp; i++)
		if (o->sp[i].pat != NULL && s->hits[i] == 0)
			warnmsg("%s: section %d: --speedup '%s=%g' matches no kernel's class, "
			    "operator or name (its classes: %s)", name, index, o->sp[i].pat,
			    o->sp[i].f, at ? cls : "none");
}

enum { K_NONE, K_MODEL, K_FROM, K_KEPT, K_BANDWIDTH, K_ROOFLINES };

/*
 * A call described and predicted: its class, and either its predicted
 * time (K_MODEL: the factor is worked out from the call's own time) or
 * its factor (--from), or why it keeps its time.
 */
static void
describe_call(const struct opts *o, const struct section *s, const struct kg_reader *r,
    const struct kg_task *t, double *pred, int *cls, double *fac, int *kind)
{
	struct om_call oc;
	struct om_desc d;
	double pt, pf;
	int via;

	(void)s;
	oc.op = t->op != KG_NONE ? kg_str(r, t->op) : "";
	oc.dims = t->shapes != KG_NONE ? kg_str(r, t->shapes) : NULL;
	oc.types = t->itypes != KG_NONE ? kg_str(r, t->itypes) : NULL;
	oc.kernel = kg_str(r, t->name);
	oc.kind = t->kind, oc.bytes = t->bytes, oc.layout = -1;
	*fac = 1;
	*pred = -1;
	*kind = K_NONE;
	*cls = om_describe(&oc, o->have_to ? o->to.sms : 132, &d);
	if (!o->have_to)
		return;
	pt = om_predict(&o->to, &d, &via);
	if (o->have_src) {
		struct om_desc ds;

		om_describe(&oc, o->src.sms, &ds);
		pf = om_predict(&o->src, &ds, &via);
		*kind = K_FROM;
		if (pt > 0 && pf > 0 && om_knows(&o->to, &d) == om_knows(&o->src, &ds) &&
		    o->to.cls[d.cls].n > 0 && o->src.cls[d.cls].n > 0) {
			/* both by trees, or both by rooflines scaled to
			 * samples of the class */
			*fac = pt / pf;
		} else if (d.sized && ds.sized) {
			/* one model by trees, the other not, or a class
			 * without samples: compare like with like, the two
			 * GPUs' rooflines */
			*fac = om_roofline_us(&o->to, &d) / om_roofline_us(&o->src, &ds);
			*kind = K_ROOFLINES;
		} else {
			/* unsized: as memory-bound work moves */
			*fac = o->src.bytes_s / o->to.bytes_s;
			*kind = K_BANDWIDTH;
		}
	} else if (pt > 0) {
		*pred = pt;
		*kind = K_MODEL;
	} else {
		*kind = K_KEPT;
	}
}

static void
cache_reset(struct cache *c)
{
	if (c->cap == 0) {
		c->cap = 64;
		c->v = xmalloc(c->cap * sizeof(*c->v));
	}
	memset(c->v, 0, c->cap * sizeof(*c->v));
	c->n = 0;
}

static struct cval *
cache_slot(const struct cache *c, const struct ckey *k)
{
	size_t i = (size_t)XXH3_64bits(k, sizeof(*k)) & (c->cap - 1);

	while (c->v[i].set && memcmp(&c->v[i].key, k, sizeof(*k)) != 0)
		i = (i + 1) & (c->cap - 1);
	return &c->v[i];
}

/*
 * The entry of a key, set or to be set by the caller. The table grows
 * with the distinct calls (a few hundred shapes), not with the calls:
 * sized by the calls it was 117 MB of pages to zero on a 2.2M-task graph.
 */
static struct cval *
cache_get(struct cache *c, const struct ckey *k)
{
	struct cval *v;

	if (2 * (c->n + 1) > c->cap) {
		struct cache b = { xcalloc(2 * c->cap, sizeof(*c->v)), 2 * c->cap, c->n };
		size_t i;

		for (i = 0; i < c->cap; i++)
			if (c->v[i].set)
				*cache_slot(&b, &c->v[i].key) = c->v[i];
		free(c->v);
		*c = b;
	}
	v = cache_slot(c, k);
	if (!v->set) {
		v->key = *k;
		c->n++;
	}
	return v;
}

/* Re-time the section's GPU tasks in place. */
static void
retime(const struct opts *o, struct section *s, const struct kg_reader *r, struct groups *gs)
{
	struct om_task *ot = xmalloc((s->ng + 1) * sizeof(*ot));
	uint32_t *call = xmalloc((s->ng + 1) * sizeof(*call)), nc, c;
	double *sum, *fac, *pred;
	size_t *top, i;
	int *cls, *kind;

	for (i = 0; i < s->ng; i++) {
		const struct kg_task *t = &s->g[i].t;

		ot[i].id = t->id, ot[i].proc = t->proc, ot[i].op = t->op, ot[i].sh = t->shapes;
		ot[i].name = t->name, ot[i].kind = t->kind, ot[i].it = t->iter;
		ot[i].ts = t->ts, ot[i].dur = t->dur, ot[i].bytes = t->bytes;
		ot[i].ocall = t->ocall;
	}
	nc = om_calls(ot, s->ng, call);
	sum = xcalloc(nc + 1, sizeof(*sum));
	fac = xmalloc((nc + 1) * sizeof(*fac));
	top = xmalloc((nc + 1) * sizeof(*top));
	cls = xmalloc((nc + 1) * sizeof(*cls));
	kind = xmalloc((nc + 1) * sizeof(*kind));
	pred = xmalloc((nc + 1) * sizeof(*pred));
	for (c = 0; c < nc; c++)
		top[c] = SIZE_MAX;
	for (i = 0; i < s->ng; i++) {
		if ((c = call[i]) == UINT32_MAX)
			continue;
		sum[c] += (double)s->g[i].t.dur;
		if (top[c] == SIZE_MAX || s->g[i].t.dur > s->g[top[c]].t.dur)
			top[c] = i;
	}
	/* calls alike (operator, shapes, longest kernel's name, kind and
	 * bytes) are described and predicted once: a graph repeats a few
	 * hundred shapes over millions of kernels */
	cache_reset(&s->cache);
	for (c = 0; c < nc; c++) {
		const struct kg_task *t = &s->g[top[c]].t;
		struct ckey key = { t->op, t->shapes, t->name, (uint32_t)t->kind, t->bytes };
		struct cval *v = cache_get(&s->cache, &key);

		if (v->set) {
			pred[c] = v->pred;
			cls[c] = v->cls;
			fac[c] = v->fac;
			kind[c] = v->kind;
		} else {
			describe_call(o, s, r, t, &pred[c], &cls[c], &fac[c], &kind[c]);
			v->set = 1, v->pred = pred[c], v->cls = cls[c], v->fac = fac[c], v->kind = kind[c];
		}
		if (kind[c] == K_MODEL)
			fac[c] = sum[c] > 0 ? pred[c] * 1e3 / sum[c] : 1;
		if (s->keep) {
			fac[c] = 1;
			continue;
		}
		s->kept += kind[c] == K_KEPT;
		s->bandwidth += kind[c] == K_BANDWIDTH;
		s->rooflines += kind[c] == K_ROOFLINES;
	}
	for (i = 0; i < s->ng; i++) {
		struct kg_task *t = &s->g[i].t;
		double f = 1, sp;
		int k = -1;
		const char *op = t->op != KG_NONE ? kg_str(r, t->op) : "";

		if ((c = call[i]) != UINT32_MAX)
			f = fac[c], k = cls[c];
		else if (t->kind != KG_COLL)
			s->nocall++;
		if (t->kind == KG_COLL)
			continue;
		if (k >= 0)
			s->seen |= 1u << k;
		sp = speedup_of(o, k, op, kg_str(r, t->name), s->hits);
		{
			double d = (double)t->dur * f / sp;

			/* a time the format holds, or the section fails */
			if (!(d < (double)KG_TIME_MAX)) {
				if (s->over == KG_NONE)
					s->over = t->id, s->overns = d;
				d = 0;
			}
			t->dur = llround(d);
		}
		if (gs != NULL && k >= 0)
			group_add(gs, k, op, (double)t->dur);
	}
	free(ot);
	free(call);
	free(sum);
	free(fac);
	free(top);
	free(cls);
	free(kind);
	free(pred);
}

/*
 * The section's tools entry: what the tool changed, the model's GPU
 * and the factors ("graph-retime 0.1 model: H100, from: A100; speedup:
 * gemm=2"), cut short past len.
 */
static void
tool_entry(const struct opts *o, char *buf, size_t len)
{
	size_t at;

	snprintf(buf, len, "%s", PRODUCER);
	at = strlen(buf);
	if (o->have_to)
		snprintf(buf + at, len - at, " model: %s%s%s", o->to.gpu,
		    o->have_src ? ", from: " : "", o->have_src ? o->src.gpu : "");
	for (size_t i = 0, n = 0; i < o->nsp; i++) {
		if (o->sp[i].pat == NULL) /* a --sensitivity group */
			continue;
		at = strlen(buf);
		snprintf(buf + at, len - at, "%s%s=%g", n++ > 0 ? ", " : o->have_to ?
		    "; speedup: " : " speedup: ", o->sp[i].pat, o->sp[i].f);
	}
}

static int
write_section(const struct opts *o, struct section *s, struct gout *g)
{
	char tool[512];
	size_t i, k = 0;

	/* a frame holding a task whose time changed is written anew */
	for (i = 0; i < s->ng; i++)
		if (s->g[i].t.dur != s->g[i].d0)
			hf_changed(&s->fr, s->g[i].rec);
	kg_writer_follow(&g->w, &s->h);
	tool_entry(o, tool, sizeof(tool));
	if (kg_write_header_tool(&g->w, &s->h, tool) < 0)
		return -1;
	for (i = 0; i < s->rec.n; i++) {
		size_t len;
		const char *b;
		int rc;

		/* frames as they came */
		while ((rc = hf_pass(&s->fr, &g->w, &s->rec, &i)) > 0)
			while (k < s->ng && s->g[k].rec < i)
				k++;
		if (rc < 0)
			return -1;
		if (i == s->rec.n)
			break;
		b = held_rec(&s->rec, i, &len);
		if (k < s->ng && s->g[k].rec == i)
			rc = kg_write_task(&g->w, &s->g[k++].t);
		else
			rc = kg_write_bytes(&g->w, b, len, s->rec.type[i]);
		if (rc < 0)
			return -1;
	}
	return kg_write_end(&g->w);
}

/*
 * The section's GPU (1.5 header) against the models': a graph traced on
 * the GPU of --model, with no --from, keeps its kernels' traced times
 * (they are that GPU's own; the model would only add its error), unless
 * --absolute; a graph of another GPU than --from's is warned about, and
 * so is one re-timed by --model alone from another GPU (each call then
 * takes the model's prediction, with all its error). The section then
 * says it runs on the model's GPU: its memory is not known unless the
 * GPU is the same.
 */
static void
gpu_of(const struct opts *o, struct section *s, const char *name, int index)
{
	const char *g = s->h.gpu != NULL ? s->h.gpu : "";

	if (!o->have_to)
		return;
	if (*g != '\0' && o->have_src && !om_same_gpu(g, o->src.gpu))
		warnmsg("%s: section %d: a graph of %s re-timed from a model of %s (--from)",
		    name, index, g, o->src.gpu);
	else if (*g != '\0' && !o->have_src && om_same_gpu(g, o->to.gpu))
		s->keep = !o->absolute;
	else if (*g != '\0' && !o->have_src)
		warnmsg("%s: section %d: a graph of %s re-timed by the model of %s alone: each "
		    "call takes its prediction (--from with a model of %s keeps what the models "
		    "do not explain)", name, index, g, o->to.gpu, g);
	if (*g == '\0' || !om_same_gpu(g, o->to.gpu))
		s->h.gpu_mem = -1;
	s->h.gpu = o->to.gpu;
	s->h.gpu_sms = o->to.sms > 0 ? o->to.sms : -1;
}

/* Kernels launched by operators, none of which has shapes? */
static int
no_shapes(const struct section *s)
{
	size_t i, withop = 0;

	for (i = 0; i < s->ng; i++) {
		if (s->g[i].t.kind != KG_KERN || s->g[i].t.op == KG_NONE)
			continue;
		if (s->g[i].t.shapes != KG_NONE)
			return 0;
		withop++;
	}
	return withop > 0;
}

/* An input's options, and the groups to count for --sensitivity (NULL: none). */
struct run {
	const struct opts *o;
	struct groups *gs;
};

static int
process(void *arg, const char *path, struct gout *g)
{
	const struct run *ru = arg;
	const struct opts *o = ru->o;
	struct groups *gs = ru->gs;
	struct gin in;
	struct section s;
	int t, gpu, rc = 0, index = 0;

	if (gin_open(&in, path) < 0)
		return 1;
	memset(&s, 0, sizeof(s));
	hf_drop(&s.fr);
	s.fr.sparse = 1; /* only GPU tasks change: other frames need no bytes */
	in.r.keep_frames = 1;
	while (rc == 0 && (t = gin_read(&in)) > 0) {
		hf_take(&s.fr, &in.r, in.rec.pos, &s.rec);
		if (t == KG_R_HEADER) {
			s.h = in.rec.header;
			held_reset(&s.rec);
			hf_reset(&s.fr);
			s.ng = 0;
			s.kept = s.bandwidth = s.nocall = s.rooflines = 0;
			s.keep = 0;
			gpu_of(o, &s, in.name, index);
			continue; /* written anew with the section */
		}
		if (t == KG_R_SIM) {
			hf_skip(&s.fr);
			continue; /* the times change: simulate again */
		}
		gpu = t == KG_R_TASK && (in.rec.task.kind == KG_KERN ||
		    in.rec.task.kind == KG_CPY || in.rec.task.kind == KG_SET);
		if (gpu) {
			struct gtask x;

			x.t = in.rec.task;
			x.rec = s.rec.n;
			x.d0 = x.t.dur;
			VEC_PUSH(s.g, s.ng, s.capg, x);
			hf_mark(&s.fr);
		}
		if (t == KG_R_END) {
			if (o->have_to && !s.keep && no_shapes(&s)) {
				errmsg("%s: section %d: no operator shapes (the trace was recorded "
				    "without record_shapes): the model cannot size a call; record with "
				    "torch.profiler.profile(record_shapes=True)", in.name, index);
				rc = 1;
				break;
			}
			s.over = KG_NONE;
			s.hits = xcalloc(o->nsp + 1, sizeof(*s.hits));
			s.seen = 0;
			retime(o, &s, &in.r, gs);
			nomatch(o, &s, in.name, index);
			free(s.hits);
			s.hits = NULL;
			if (s.over != KG_NONE) {
				errmsg("%s: section %d: task %u re-timed to %.3g ns, beyond the format's "
				    "range (2^53 ns)", in.name, index, s.over, s.overns);
				rc = 1;
				break;
			}
			if (s.kept > 0)
				warnmsg("%s: section %d: %lld GPU calls keep their time: the model "
				    "cannot size them", in.name, index, (long long)s.kept);
			if (s.bandwidth > 0)
				warnmsg("%s: section %d: %lld GPU calls the models cannot size scaled "
				    "by the GPUs' bandwidth", in.name, index, (long long)s.bandwidth);
			if (write_section(o, &s, g) < 0) {
				errmsg("%s: %s", g->name, g->w.err);
				rc = 1;
			}
			hf_drop(&s.fr); /* the end record's frame: written anew */
			index++;
			continue;
		}
		/* a GPU task goes out decoded (write_section) or in its
		 * frame as it came: its bytes are never written, so not kept */
		held_add(&s.rec, t, in.rec.bytes, gpu ? 0 : in.rec.nbytes);
	}
	if (t < 0 && rc == 0)
		rc = 1;
	held_release(&s.rec);
	hf_release(&s.fr);
	free(s.g);
	free(s.cache.v);
	gin_close(&in);
	return rc;
}

/* All of w's inputs into one stream at its output. 0, or 1. */
static int
run_all(const struct opts *o, const struct whatif_tool *w, struct groups *gs)
{
	struct run ru = { o, gs };

	return whatif_run(w, process, &ru);
}

/* Shell-quoted copy of s in single quotes. */
static char *
shq(const char *s)
{
	size_t n = strlen(s), i, k = 0;
	char *q = xmalloc(4 * n + 3);

	q[k++] = '\'';
	for (i = 0; i < n; i++) {
		if (s[i] == '\'') {
			memcpy(q + k, "'\\''", 4);
			k += 4;
		} else {
			q[k++] = s[i];
		}
	}
	q[k++] = '\'';
	q[k] = '\0';
	return q;
}

/*
 * The simulated iteration time of a stream file, ns: each iteration's
 * simulated time (the longest of its ranks), averaged. -1 after a message.
 */
static double
simulate(const char *file)
{
	char *sim = cli_sibling("graphsim"), *stat = cli_sibling("graphstat");
	char *qs = shq(sim), *qt = shq(stat), *qf = shq(file), *cmd, *line = NULL;
	size_t cap = 0, nit = 0, capit = 0, i;
	struct it { long long it; double ns; } *its = NULL;
	double tot = 0;
	FILE *p;
	int st;

	cmd = xmalloc(strlen(qs) + strlen(qt) + strlen(qf) + 32);
	sprintf(cmd, "%s %s | %s --csv", qs, qf, qt);
	p = popen(cmd, "r");
	if (p == NULL) {
		errmsg("cannot run graphsim: %s", strerror(errno));
		tot = -1;
		goto out;
	}
	while (getline(&line, &cap, p) > 0) {
		/* rank,iteration,measured_ns,simulated_ns,...: the rank and
		 * iteration may be "-", the measured time empty (graphstat(1)) */
		char *f[4], *q = line, *end;
		long long it, simns;
		int k;

		for (k = 0; k < 4 && q != NULL; k++) {
			f[k] = q;
			q = strchr(q, ',');
			if (q != NULL)
				*q++ = '\0';
		}
		if (k < 4 || q == NULL)
			continue;
		it = strcmp(f[1], "-") == 0 ? -1 : strtoll(f[1], &end, 10);
		if (f[1][0] == '\0' || (strcmp(f[1], "-") != 0 && *end != '\0'))
			continue;
		simns = strtoll(f[3], &end, 10);
		if (f[3][0] == '\0' || *end != '\0')
			continue;
		for (i = 0; i < nit && its[i].it != it; i++)
			;
		if (i == nit) {
			struct it x = { it, 0 };

			VEC_PUSH(its, nit, capit, x);
		}
		if ((double)simns > its[i].ns)
			its[i].ns = (double)simns;
	}
	st = pclose(p);
	if (st != 0 || nit == 0) {
		errmsg("simulation failed: %s | graphstat --csv%s", sim,
		    nit == 0 && st == 0 ? ": no iterations" : "");
		tot = -1;
		goto out;
	}
	for (i = 0; i < nit; i++)
		tot += its[i].ns;
	tot /= (double)nit;
out:
	free(line);
	free(its);
	free(cmd);
	free(qs), free(qt), free(qf);
	free(sim), free(stat);
	return tot;
}

static int
cmp_group(const void *a, const void *b)
{
	const struct group *x = a, *y = b;

	return x->ns > y->ns ? -1 : x->ns < y->ns;
}

static int
sensitivity(struct opts *o, const struct whatif_tool *w)
{
	struct whatif_tool wb = *w;
	struct groups gs = { NULL, 0, 0 };
	const char *tmp = getenv("TMPDIR");
	char *base, *files[2];
	double t0, total = 0;
	size_t i, k;
	int rc = 1;

	if (tmp == NULL || *tmp == '\0')
		tmp = "/tmp";
	base = xmalloc(strlen(tmp) + 32);
	sprintf(base, "%s/graph-retime.XXXXXX", tmp);
	files[0] = xmalloc(strlen(base) + 16);
	files[1] = xmalloc(strlen(base) + 16);
	sprintf(files[0], "%s/base.kg", base);
	sprintf(files[1], "%s/variant.kg", base);
	/* the directory and both files go on every exit: a failure here,
	 * a signal, the out-of-memory guard */
	if (cli_tmpdir(base, files, 2) < 0) {
		errmsg("%s: %s", tmp, strerror(errno));
		free(base), free(files[0]), free(files[1]);
		return 1;
	}
	sprintf(files[0], "%s/base.kg", base);
	sprintf(files[1], "%s/variant.kg", base);
	wb.output = files[0];
	if (run_all(o, &wb, &gs) != 0 || (t0 = simulate(files[0])) < 0)
		goto out;
	for (i = 0; i < gs.n; i++)
		total += gs.g[i].ns;
	if (gs.n > 1)
		qsort(gs.g, gs.n, sizeof(*gs.g), cmp_group);
	if (gs.n == 0)
		warnmsg("no GPU kernel to speed up: the graph's GPU work is communication only, "
		    "or none");
	printf("iteration %.3f ms simulated; GPU time in the graph %.3f ms\n", t0 / 1e6,
	    total / 1e6);
	printf("%-9s %-40s %10s %6s %10s %9s %7s\n", "class", "operator", "gpu_ms", "gpu%",
	    "iter_ms", "gain_ms", "gain%");
	/* each group twice as fast, on the re-timed graph */
	{
		struct opts v = *o;
		struct whatif_tool wv = *w;
		char *args[1] = { files[0] };

		v.have_to = v.have_src = 0;
		v.sp = NULL;
		v.nsp = v.capsp = 0;
		wv.output = files[1], wv.argc = 1, wv.argv = args;
		for (k = 0; k < gs.n && k < (size_t)o->sens; k++) {
			struct speedup sp = { NULL, gs.g[k].cls, gs.g[k].op, 2 };
			double t;

			v.sp = &sp;
			v.nsp = 1;
			if (run_all(&v, &wv, NULL) != 0 || (t = simulate(files[1])) < 0)
				goto out;
			printf("%-9s %-40.40s %10.3f %6.1f %10.3f %9.3f %7.2f\n",
			    om_class_name[gs.g[k].cls], *gs.g[k].op ? gs.g[k].op : "-",
			    gs.g[k].ns / 1e6, total > 0 ? gs.g[k].ns / total * 100 : 0, t / 1e6,
			    (t0 - t) / 1e6, (t0 - t) / t0 * 100);
		}
	}
	rc = close_stdout();
out:
	cli_tmpdir_remove(base, files, 2);
	free(files[0]), free(files[1]);
	free(base);
	for (i = 0; i < gs.n; i++)
		free(gs.g[i].op);
	free(gs.g);
	return rc;
}

/*
 * --from divides one model's prediction by the other's, so the two must
 * be fitted on the same kinds of input: a class fitted on a profiled
 * sweep's true kernel times in one model and on a few event-pair rows in
 * the other makes the ratio the difference of the inputs (measured on
 * the H100 -> H200 what-if: +4.66% against +0.04%; doc/ACCURACY.md). The
 * sign is a class with enough samples for trees in one model and fewer
 * than half of them in the other; models of like inputs differ by 1.35
 * times at most between the shared H100 and H200 sweeps.
 */
static void
unlike_inputs(const struct opts *o)
{
	const struct om_cls *a, *b;
	char others[64];
	int c, first = -1, more = 0;

	for (c = 0; c < OM_NCLASS; c++) {
		int64_t lo, hi;

		a = &o->to.cls[c], b = &o->src.cls[c];
		lo = a->n < b->n ? a->n : b->n;
		hi = a->n < b->n ? b->n : a->n;
		if (hi < OM_MIN_TREES || hi <= 2 * lo)
			continue;
		if (first < 0)
			first = c;
		else
			more++;
	}
	if (first < 0)
		return;
	a = &o->to.cls[first], b = &o->src.cls[first];
	others[0] = '\0';
	if (more > 0)
		snprintf(others, sizeof(others), ", and %d more class%s differ so", more,
		    more == 1 ? "" : "es");
	warnmsg("%s (--model) and %s (--from) were fitted on unlike inputs: class %s has %lld "
	    "samples in the first and %lld in the second%s; --from divides one's prediction by "
	    "the other's, so fit both on the same kinds of input (both with a profiled op sweep, "
	    "or both without)", o->model, o->from, om_class_name[first], (long long)a->n,
	    (long long)b->n, others);
}

int
main(int argc, char **argv)
{
	struct opts o;
	struct whatif_tool w = {
		.own = own,
		.name = "graph-retime", .usage = usage, .help = help, .producer = PRODUCER,
	};
	int c, rc;
	int64_t v;

	memset(&o, 0, sizeof(o));
	while ((c = whatif_getopt(&w, argc, argv)) != -1) {
		switch (c) {
		case 'M':
			o.model = optarg;
			break;
		case 'F':
			o.from = optarg;
			break;
		case 'A':
			o.absolute = 1;
			break;
		case 'S': {
			struct speedup s;
			const char *eq = strrchr(optarg, '=');
			char *end;

			if (eq == NULL || eq == optarg) {
				errmsg("invalid --speedup '%s' (PATTERN=FACTOR)", optarg);
				usage_exit(usage);
			}
			s.f = strtod(eq + 1, &end);
			if (eq[1] == '\0' || *end != '\0' || !(s.f > 0) || !isfinite(s.f)) {
				errmsg("invalid --speedup '%s' (FACTOR a number above 0)", optarg);
				usage_exit(usage);
			}
			s.pat = xstrndup(optarg, (size_t)(eq - optarg));
			s.cls = -1;
			s.op = NULL;
			VEC_PUSH(o.sp, o.nsp, o.capsp, s);
			break;
		}
		case 'Z':
			o.sens = 5;
			if (optarg != NULL || (optind < argc && argv[optind][0] >= '0' &&
			    argv[optind][0] <= '9' && access(argv[optind], F_OK) != 0)) {
				const char *a = optarg != NULL ? optarg : argv[optind++];

				if (parse_i64(a, 1, 1000, &v) < 0) {
					errmsg("invalid --sensitivity '%s' (1 to 1000)", a);
					usage_exit(usage);
				}
				o.sens = v;
			}
			break;
		}
	}
	if (o.from != NULL && o.model == NULL) {
		errmsg("--from needs --model (the GPU to predict)");
		usage_exit(usage);
	}
	if (o.absolute && (o.model == NULL || o.from != NULL)) {
		errmsg("--absolute needs --model and no --from");
		usage_exit(usage);
	}
	if (o.sens > 0 && w.output != NULL) {
		errmsg("--sensitivity prints a report: no -o");
		usage_exit(usage);
	}
	rc = whatif_models(o.model, o.from, &o.to, &o.src, &o.have_to, &o.have_src);
	if (rc == 0 && o.have_src)
		unlike_inputs(&o);
	if (rc == 0)
		rc = o.sens > 0 ? sensitivity(&o, &w) : run_all(&o, &w, NULL);
	if (o.have_to)
		om_model_release(&o.to);
	if (o.have_src)
		om_model_release(&o.src);
	{
		size_t i;

		for (i = 0; i < o.nsp; i++)
			free((char *)o.sp[i].pat);
		free(o.sp);
	}
	return rc;
}
