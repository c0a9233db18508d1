/*
 * graph-scale-dp: a job graph as it would run with another data-parallel
 * degree. Each GPU's work stays as it is; the data-parallel group's
 * collectives are re-timed for the new number of participants, by the
 * communication model fitted on the job's own collectives
 * (common/comm.h).
 *
 * Finding the data-parallel group: common/pgroup.h (the process group
 * that reduces gradients in the backward and optimizer phases, by
 * kineto2graph's phase tags); its size is the current degree D. All of
 * its collectives are re-timed, the forward scalars too. Without phases,
 * or without a group that is plainly data-parallel, the tool stops and
 * says what is missing.
 *
 * Re-timing: a collective of the group moving B bytes took d (its
 * transfer time in the job graph); it now takes d * T(N) / T(D), T the
 * fitted model's time for B bytes among N or D ranks, so what the model
 * does not explain of d stays. Its link: ranks are laid out
 * tensor-parallel first, then data-parallel, then by stage (Megatron's
 * order), so rank r's new group runs from t + tp N s to t + tp (N - 1 +
 * N s), t = r mod tp and s = r / (tp D), tp the tensor-parallel group's
 * size (1 without one); it spans nodes when those ranks are on two
 * (--gpus-per-node). Every other group keeps its collectives, but its
 * ranks move too (rank t + tp (r + D s) goes to t + tp (r + N s)), and a
 * group that ends up across nodes, or back inside one (a pipeline's
 * send and receive between stages, say), is re-timed for the new link.
 * A link the job never used for that collective can be given (--net);
 * otherwise the tool stops.
 *
 * State: one section at a time: its records as read, and the decoded
 * records of its collectives.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "comm.h"
#include "config.h"
#include "graph-scale-dp/make.h"
#include "graph.h"
#include "held.h"
#include "kg.h"
#include "pgroup.h"
#include "util.h"
#include "whatif.h"

#define PRODUCER "graph-scale-dp " KG_VERSION

static const char usage[] =
    "graph-scale-dp [-qv] [-o FILE] [--dp-group RANKS] [--gpus-per-node N] [--net GBPS,US] "
    "[--topology NAME|FILE] N [FILE ...]";

static const char help[] =
    "Re-time a job graph's data-parallel collectives for N data-parallel ranks.\n"
    "\n"
    "  -o, --output FILE        write the stream to FILE instead of stdout\n"
    "      --dp-group RANKS     the data-parallel group's ranks (0-7, or 0,2,4,6), where\n"
    "                           the trace does not tell which group it is\n"
    "      --gpus-per-node N    ranks per node, for the links (default 8)\n"
    "      --net GBPS,US        the network's bandwidth per GPU and latency per step,\n"
    "                           for collectives the job never ran across nodes\n"
    "      --topology NAME|FILE the links (nvlink, network) and gpus-per-node, for\n"
    "                           what the job does not show: a file, or built in:\n"
    "                           h100, a100, v100, mi300x (default: the GPU's,\n"
    "                           else h100)\n"
    "  -q, --quiet              no warnings\n"
    "  -v, --verbose            print the groups and the link model used on stderr\n"
    "  -h, --help               this help\n"
    "      --version            the version\n"
    "\n"
    "The input is a job graph (graph-deps --merge) with structure tags.\n"
    "With no FILE, or FILE -, read standard input. See graph-scale-dp(1).\n";

/* The tool's own options; whatif.h reads the others. */
static const struct option own[] = {
	{ "dp-group", required_argument, NULL, 'D' },
	{ NULL, 0, NULL, 0 }
};

struct opts {
	int64_t n, gpn;
	int verbose;
	struct comm_given given; /* --net, --topology: links the job does not show */
	int64_t *dpg;            /* --dp-group: its ranks, sorted; NULL: not given */
	size_t ndpg;
};

/* A collective task: its record, decoded, and where its bytes are. */
struct ctask {
	struct kg_task t;
	struct kg_task t0; /* as read: a frame none of whose records changed goes as it came */
	size_t rec;     /* index among the section's records */
	uint32_t group; /* index into the section's groups */
	int64_t rank;
};

struct redge {
	uint32_t src, dst;
	uint8_t kind;
};

struct section {
	struct held rec;     /* its records as read */
	struct held_frames fr; /* and its frames, compressed */
	struct ctask *c;
	size_t nc, capc;
	struct pgroups pg;
	int64_t *prank;
	size_t np, capp;
	struct redge *edge;  /* by record index: the edge records' ends and kind */
	size_t capedge;
	struct kg_header h;
	int job;
	char **gtext;        /* ranks texts made up for groups found by matching */
	size_t ngtext, capgtext;
	size_t nreq;         /* all-reduces asked for (graph-scale-dp/make.h) */
	int64_t dp0;         /* the data-parallel degree the collectives tell */
};

/* The ids of made-up ranks texts (past any str id a stream can have). */
#define PGR_MADE 0x80000000u

/* The index among s->c of the collective with task id, or -1. */
static long
coll_index(const struct section *s, uint32_t id)
{
	size_t lo = 0, hi = s->nc;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (s->c[mid].t.id < id)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < s->nc && s->c[lo].t.id == id ? (long)lo : -1;
}

/*
 * Groups for the collectives that carry no ranks (PyTorch before 2.2
 * wrote no NCCL metadata): graph-deps --merge matched the same sequence
 * of collectives across ranks and joined each collective's kernels by
 * rank edges; the ranks a collective joins are its group. A collective
 * matched on no other rank stays without a group. Returns how many
 * collectives got one.
 */
static size_t
groups_from_matching(struct section *s)
{
	uint32_t *p = xmalloc((s->nc + 1) * sizeof(*p));
	size_t i, k, got = 0;
	int64_t *r = xmalloc((s->nc + 1) * sizeof(*r));
	size_t *members = xmalloc((s->nc + 1) * sizeof(*members));
	char *text = NULL;

	for (i = 0; i < s->nc; i++)
		p[i] = (uint32_t)i;
	for (i = 0; i < s->rec.n; i++) {
		long a, b;

		if (s->rec.type[i] != KG_R_EDGE || s->edge[i].kind != KG_E_RANK)
			continue;
		a = coll_index(s, s->edge[i].src);
		b = coll_index(s, s->edge[i].dst);
		if (a >= 0 && b >= 0)
			uf_union(p, (uint32_t)a, (uint32_t)b);
	}
	for (i = 0; i < s->nc; i++) {
		size_t nm = 0, nr = 0, m;
		uint32_t root;
		char buf[4096];

		if (s->c[i].group != UINT32_MAX || s->c[i].t.pgr != KG_NONE ||
		    uf_find(p, (uint32_t)i) != i)
			continue;
		root = (uint32_t)i;
		for (k = 0; k < s->nc; k++)
			if (s->c[k].t.pgr == KG_NONE && uf_find(p, (uint32_t)k) == root) {
				members[nm++] = k;
				if (s->c[k].rank >= 0)
					r[nr++] = s->c[k].rank;
			}
		qsort(r, nr, sizeof(*r), cmp_i64);
		for (k = 0; k + 1 < nr; k++)
			if (r[k] == r[k + 1])
				break;
		if (nr < 2 || k + 1 < nr || pgroups_ranks_text(r, nr, buf, sizeof(buf)) < 0)
			continue; /* unmatched, or one rank twice: not a group */
		for (k = 0; k < s->ngtext && strcmp(s->gtext[k], buf) != 0; k++)
			;
		if (k == s->ngtext) {
			text = xstrndup(buf, strlen(buf));
			VEC_PUSH(s->gtext, s->ngtext, s->capgtext, text);
		}
		for (m = 0; m < nm; m++) {
			uint32_t g = pgroups_of(&s->pg, PGR_MADE + (uint32_t)k, s->gtext[k]);

			s->c[members[m]].group = g;
			s->pg.g[g].from = "matched across the ranks";
			got++;
		}
	}
	free(p);
	free(r);
	free(members);
	return got;
}

/*
 * The link of a group of the job (its ranks text) once the job has n
 * data-parallel ranks instead of d: each rank t + tp (r + d s) (tensor-
 * parallel index t, replica r, stage s: Megatron's order) moves to
 * t + tp (r + n s), a replica past the new count standing for one within
 * it.
 */
static int
new_link(const char *s, int64_t tp, int64_t d, int64_t n, int64_t gpn)
{
	int64_t node = -1;
	long long x, t, r, st, y;

	while (next_number(&s, &x)) {
		t = x % tp;
		r = (x / tp) % d;
		st = x / (tp * d);
		y = t + tp * (r % n + n * st);
		if (node >= 0 && y / gpn != node)
			return COMM_INTER;
		node = y / gpn;
	}
	return COMM_INTRA;
}

/* Are the numbers of ranks text t exactly r[0..n) (sorted)? */
static int
same_ranks(const char *t, const int64_t *r, size_t n)
{
	int64_t *v = NULL;
	size_t nv = 0, cap = 0, i;
	long long x;
	int same;

	while (next_number(&t, &x))
		VEC_PUSH(v, nv, cap, (int64_t)x);
	if (nv > 0)
		qsort(v, nv, sizeof(*v), cmp_i64);
	same = nv == n;
	for (i = 0; same && i < n; i++)
		same = v[i] == r[i];
	free(v);
	return same;
}

static int
in_ranks(int64_t rank, const int64_t *r, size_t n)
{
	return bsearch(&rank, r, n, sizeof(*r), cmp_i64) != NULL;
}

static const char *
link_name(int l)
{
	return l == COMM_INTER ? "the network" : "NVLink";
}

/* -v: the groups, what each does, and the degrees. */
static void
print_groups(const struct section *s, const char *name, int index, int64_t d, int64_t n,
    int64_t gpn)
{
	char buf[512];
	size_t k;

	for (k = 0; k < s->pg.ng; k++) {
		const struct pgroup *g = &s->pg.g[k];

		pgroups_describe(&s->pg, g, buf, sizeof(buf));
		fprintf(stderr, "%s: %s: section %d: group %s (%lld ranks, %s; %s): %s\n", progname,
		    name, index, g->text, (long long)g->size, link_name(g->link),
		    g->from != NULL ? g->from : "the trace's process-group ranks", buf);
	}
	fprintf(stderr, "%s: %s: section %d: data-parallel degree %lld -> %lld, tensor-parallel "
	    "%lld, %lld GPUs a node\n", progname, name, index, (long long)d, (long long)n,
	    (long long)s->pg.tp, (long long)gpn);
}

/* -v: the link model, each class used: fitted, given or borrowed. */
static void
print_model(const struct comm_model *m, const uint8_t *used, const char *name, int index,
    const char *assumed, const char *topo)
{
	char text[512];
	int c, l;

	for (c = 1; c < KG_NCOLL; c++)
		for (l = 0; l < COMM_NLINK; l++) {
			const struct comm_class *cc = &m->c[c][l];

			if (!used[c * COMM_NLINK + l] || cc->samples == 0)
				continue;
			comm_class_text(cc, text, sizeof(text));
			fprintf(stderr, "%s: %s: section %d: model: %s over %s: %s", progname, name,
			    index, kg_coll_name[c], link_name(l), text);
			if (cc->from != 0)
				fprintf(stderr, " (the %s fit, borrowed)\n", kg_coll_name[cc->from]);
			else if (cc->given && !(assumed && assumed[l]))
				fprintf(stderr, " (given, in place of the job's fit, set aside)\n");
			else if (cc->mape == 0 && cc->samples == 1 && (cc->nseg == 1 || cc->least) &&
			    assumed && assumed[l])
				fprintf(stderr, " (given: %s%s%s)\n", assumed[l] == 2 ? "built-in " :
				    "--net/--topology", assumed[l] == 2 ? topo : "",
				    assumed[l] == 2 ? " topology, assumed" : "");
			else
				fprintf(stderr, " (fitted on %zu transfers, error %.1f%%)\n",
				    cc->samples, cc->mape);
		}
}

/*
 * The link of rank's data-parallel group among m replicas (Megatron's
 * order, as in retime); at the traced degree d, the group's own (lold).
 */
static int
dp_link(int64_t rank, int64_t tp, int64_t d, int64_t m, int64_t gpn, int lold)
{
	int64_t ti = rank % tp, st = rank / (tp * d);
	int64_t lo = ti + tp * m * st, hi = ti + tp * (m - 1 + m * st);

	if (m == d)
		return lold;
	return lo / gpn != hi / gpn ? COMM_INTER : COMM_INTRA;
}

/*
 * A data-parallel collective's model time among m ranks, made not to fall
 * as ranks are added at fixed bytes: the most, over the links, of the
 * model's time (comm_time_mono) at the largest degree up to m that puts
 * the group on that link. A ring's time grows with its ranks on one
 * link; this carries that across a change of link (a network model
 * faster than the job's NVLink fit does not make the group of 16 faster
 * than the group of 8 it contains). A link with no model of its own
 * (its class borrowed from the other link) counts only where it is m's.
 * *approx as comm_time's, for m's own link; -1 as comm_time.
 */
static int64_t
dp_time(const struct comm_model *cm, int coll, uint64_t bytes, int64_t rank, int64_t tp,
    int64_t d, int64_t m, int64_t gpn, int lold, int *approx)
{
	static int64_t crank = -1, cm_ = -1, cd = -1, ctp = -1, cgpn = -1, cmax[COMM_NLINK];
	static int clold = -1;
	int64_t best = -1, t, k;
	int l, lm = dp_link(rank, tp, d, m, gpn, lold), a;

	*approx = 0;
	if (crank != rank || cm_ != m || cd != d || ctp != tp || cgpn != gpn || clold != lold) {
		for (l = 0; l < COMM_NLINK; l++)
			cmax[l] = -1;
		for (k = m; k >= 2; k--) {
			l = dp_link(rank, tp, d, k, gpn, lold);
			if (cmax[l] < 0)
				cmax[l] = k;
			if (cmax[COMM_INTRA] >= 0 && cmax[COMM_INTER] >= 0)
				break;
		}
		crank = rank, cm_ = m, cd = d, ctp = tp, cgpn = gpn, clold = lold;
	}
	for (l = 0; l < COMM_NLINK; l++) {
		if (cmax[l] < 0)
			continue;
		t = comm_time_mono(cm, coll, cmax[l], bytes, l, &a);
		if (l == lm) {
			*approx = a;
			if (t < 0)
				return -1;
		} else if (t < 0 || a) {
			continue;
		}
		if (t > best)
			best = t;
	}
	return best;
}

/*
 * Re-time the section's data-parallel collectives; 0, or 1 after a
 * message. *net is set to the words the section's tools entry records
 * when a link was assumed from the built-in topology (else NULL).
 */
static int
retime(const struct opts *o, struct section *s, const char *name, int index, char *net,
    size_t netlen)
{
	const struct kg_task **ct = xmalloc((s->nc + 1) * sizeof(*ct));
	uint32_t *grp = xmalloc((s->nc + 1) * sizeof(*grp));
	struct comm_model m;
	struct comm_given given = o->given;
	uint8_t seen[KG_NCOLL * COMM_NLINK] = { 0 }, used[KG_NCOLL * COMM_NLINK] = { 0 };
	char assumed[COMM_NLINK] = { 0 };
	char amsg[COMM_NLINK][PGROUPS_MSGLEN];
	char pmsg[KG_NCOLL * COMM_NLINK][PGROUPS_MSGLEN];
	char msg[160];
	int64_t d, tp;
	size_t i, k, nogroup = 0, nosize = 0, faster = 0;
	int np;
	int *lold = NULL, *lnew = NULL, l;
	int64_t *nnew = NULL;

	net[0] = '\0';
	if (!s->job) {
		errmsg("%s: section %d: not a job graph: the transfer times come from "
		    "matching collectives across ranks (graph-deps --merge)", name, index);
		goto fail;
	}
	if (s->nc == 0) {
		errmsg("%s: section %d: no collective kernel in the job%s: nothing to re-time "
		    "(adding a data-parallel group's collectives to a job that ran without "
		    "them is not done)", name, index, s->h.world == 1 ?
		    " (NCCL launches none at world size 1)" : "");
		goto fail;
	}
	for (i = 0; i < s->nc; i++)
		nogroup += s->c[i].group == UINT32_MAX;
	if (nogroup > 0 && s->h.nranks > 1)
		groups_from_matching(s);
	if (o->dpg != NULL) {
		char buf[4096];
		uint32_t gid = UINT32_MAX;
		char *text;

		if (pgroups_ranks_text(o->dpg, o->ndpg, buf, sizeof(buf)) < 0) {
			errmsg("%s: section %d: --dp-group: too many ranks", name, index);
			goto fail;
		}
		for (i = 0; i < s->nc; i++) {
			if (s->c[i].group != UINT32_MAX || !in_ranks(s->c[i].rank, o->dpg, o->ndpg))
				continue;
			if (gid == UINT32_MAX) {
				text = xstrndup(buf, strlen(buf));
				VEC_PUSH(s->gtext, s->ngtext, s->capgtext, text);
				gid = pgroups_of(&s->pg, PGR_MADE + (uint32_t)(s->ngtext - 1), text);
				s->pg.g[gid].from = "--dp-group";
			}
			s->c[i].group = gid;
		}
	}
	if (s->pg.ng == 0) {
		errmsg("%s: section %d: its collectives carry no process-group ranks (NCCL "
		    "metadata, `pgr`) and were not matched across ranks: give the data-parallel "
		    "group with --dp-group RANKS", name, index);
		goto fail;
	}
	for (i = 0; i < s->nc; i++)
		ct[i] = &s->c[i].t, grp[i] = s->c[i].group;
	pgroups_classify(&s->pg, ct, grp, s->nc);
	if (o->dpg != NULL) {
		/* the user's word over the phases: that group (and the
		 * others of its size that reduce, one per replica set) */
		int64_t size = -1;

		for (k = 0; k < s->pg.ng; k++)
			if (same_ranks(s->pg.g[k].text, o->dpg, o->ndpg))
				size = s->pg.g[k].size;
		if (size < 0) {
			errmsg("%s: section %d: --dp-group: no collective of the job runs among "
			    "exactly those ranks", name, index);
			goto fail;
		}
		for (k = 0; k < s->pg.ng; k++) {
			struct pgroup *g = &s->pg.g[k];

			g->dp = same_ranks(g->text, o->dpg, o->ndpg) ||
			    (g->size == size && g->late && !g->fwd);
			if (g->dp)
				g->fwd = 0;
		}
		s->pg.dp = size;
	} else if (!s->pg.phases) {
		errmsg("%s: section %d: its collectives have no phase: the data-parallel "
		    "group is the one that reduces only in the backward and optimizer "
		    "phases (kineto2graph tags them), or give it with --dp-group RANKS", name,
		    index);
		goto fail;
	} else if (s->pg.dp < 0) {
		errmsg("%s: section %d: no process group reduces only in the backward and "
		    "optimizer phases: no data-parallel group to scale (give it with "
		    "--dp-group RANKS)", name, index);
		goto fail;
	}
	d = s->pg.dp, tp = s->pg.tp;
	s->dp0 = d;
	if (o->verbose)
		print_groups(s, name, index, d, o->n, o->gpn);
	/* each collective's links and size, before and after */
	lold = xmalloc((s->nc + 1) * sizeof(*lold));
	lnew = xmalloc((s->nc + 1) * sizeof(*lnew));
	nnew = xmalloc((s->nc + 1) * sizeof(*nnew));
	for (i = 0; i < s->nc; i++) {
		struct ctask *c = &s->c[i];
		const struct pgroup *g = c->group == UINT32_MAX ? NULL : &s->pg.g[c->group];

		lold[i] = lnew[i] = -1;
		if (g == NULL || c->rank < 0)
			continue;
		lold[i] = g->link;
		nnew[i] = g->size;
		if (!g->dp || pgroups_p2p(c->t.coll)) {
			/* another group: the same collective, but its ranks may
			 * now be on two nodes (a stage moved to another node) */
			lnew[i] = new_link(g->text, tp, d, o->n, o->gpn);
			if (lnew[i] == g->link) {
				lold[i] = lnew[i] = -1;
				continue;
			}
		} else {
			/* the new group of this rank: Megatron's order,
			 * tensor-parallel fastest, then data-parallel, then the
			 * stage */
			int64_t ti = c->rank % tp, st = c->rank / (tp * d);
			int64_t lo = ti + tp * o->n * st, hi = ti + tp * (o->n - 1 + o->n * st);

			lnew[i] = lo / o->gpn != hi / o->gpn ? COMM_INTER : COMM_INTRA;
			nnew[i] = o->n;
		}
		if (c->t.coll > KG_COLL_NONE && c->t.coll < KG_NCOLL) {
			used[c->t.coll * COMM_NLINK + lold[i]] = 1;
			used[c->t.coll * COMM_NLINK + lnew[i]] = 1;
		}
	}
	/* a collective with no message size: the model cannot say what
	 * another degree does to it, and no factor is made up */
	for (i = 0; i < s->nc; i++)
		nosize += lold[i] >= 0 && s->c[i].t.bytes == 0 && s->pg.g[s->c[i].group].dp &&
		    s->pg.g[s->c[i].group].size >= 2 && o->n != d;
	if (nosize > 0) {
		errmsg("%s: section %d: %zu of the data-parallel group's collectives carry no "
		    "message size (bytes): their time among %lld ranks is not known", name, index,
		    nosize, (long long)o->n);
		goto fail;
	}
	/* A link the job never used, nor given: the built-in topology's (the
	 * GPU's), said on stderr and recorded in the section's tools entry. */
	pgroups_fit(&s->pg, ct, grp, s->nc, &given, &m);
	if (pgroups_assume(&m, used, s->h.gpu, &given, assumed, amsg, net, netlen) > 0) {
		for (l = 0; l < COMM_NLINK; l++)
			if (assumed[l])
				warnmsg("%s: section %d: %s", name, index, amsg[l]);
		for (l = 0; l < COMM_NLINK; l++)
			if (assumed[l])
				assumed[l] = 2;
	}
	for (l = 0; l < COMM_NLINK; l++)
		if (o->given.set[l] && !assumed[l])
			assumed[l] = 1;
	if (net[0] != '\0')
		pgroups_fit(&s->pg, ct, grp, s->nc, &given, &m);
	/* a fit that took in the ranks' waits is not a link's model */
	np = pgroups_plausible(&m, used, s->h.gpu, &given, pmsg, KG_NCOLL * COMM_NLINK);
	for (k = 0; k < (size_t)np; k++)
		warnmsg("%s: section %d: %s", name, index, pmsg[k]);
	free(ct);
	free(grp);
	ct = NULL, grp = NULL;
	if (o->verbose)
		print_model(&m, used, name, index, assumed, comm_topology_default(s->h.gpu, NULL, 0));
	for (i = 0; i < s->nc; i++) {
		struct ctask *c = &s->c[i];
		int64_t n = nnew[i], told, tnew;
		int a1, a2, one;

		if (lold[i] < 0)
			continue;
		one = s->pg.g[c->group].size < 2;
		if (s->pg.g[c->group].dp && !pgroups_p2p(c->t.coll) && !one) {
			told = dp_time(&m, c->t.coll, c->t.bytes, c->rank, tp, d, d, o->gpn, lold[i],
			    &a1);
			tnew = n < 2 ? 0 : dp_time(&m, c->t.coll, c->t.bytes, c->rank, tp, d, n,
			    o->gpn, lold[i], &a2);
		} else {
			told = comm_time(&m, c->t.coll, s->pg.g[c->group].size, c->t.bytes, lold[i],
			    &a1);
			tnew = comm_time(&m, c->t.coll, n, c->t.bytes, lnew[i], &a2);
		}
		if ((!one && (told <= 0 || a1)) || tnew < 0 || a2) {
			int ll = a2 || tnew < 0 ? lnew[i] : lold[i];

			errmsg("%s: section %d: no %s over %s in the job to fit the "
			    "communication model on%s", name, index,
			    c->t.coll > KG_COLL_NONE && c->t.coll < KG_NCOLL ?
			    kg_coll_name[c->t.coll] : "collective of a known type",
			    ll == COMM_INTER ? "the network (across nodes)" : "NVLink (inside a node)",
			    ll == COMM_INTER ? " (give it with --net GBPS,US)" : "");
			goto fail;
		}
		if (pgroups_borrowed(&m, c->t.coll, lnew[i], seen, msg, sizeof(msg)) ||
		    pgroups_borrowed(&m, c->t.coll, lold[i], seen, msg, sizeof(msg)))
			warnmsg("%s: section %d: %s", name, index, msg);
		if (n < 2)
			tnew = 0; /* one rank: nothing to reduce */
		if (one)
			c->t.dur = tnew; /* from one rank, which reduced nothing */
		else if (m.c[c->t.coll][lold[i]].given && c->t.dur > told)
			/* a model not fitted on these times (a fit set aside):
			 * what it does not explain is the wait, kept as it is */
			c->t.dur += tnew - told;
		else
			c->t.dur = llround((double)c->t.dur * (double)tnew / (double)told);
		if (!one && tnew < told && n >= d)
			faster++;
		/* the group it now runs over: a sharded job's state divides
		 * by it (graphstat's memory estimate) */
		if (c->t.gsize >= 0 && s->pg.g[c->group].dp)
			c->t.gsize = n;
	}
	if (faster > 0)
		warnmsg("%s: section %d: %zu collectives of groups other than the data-parallel "
		    "one take less time with %lld replicas: the model of the link their ranks now "
		    "use is faster than the job's on the old one", name, index, faster,
		    (long long)o->n);
	free(lold);
	free(lnew);
	free(nnew);
	return 0;
fail:
	free(ct);
	free(grp);
	free(lold);
	free(lnew);
	free(nnew);
	return 1;
}

/* Is task id one of the data-parallel collectives? */
static int
is_dp(const struct section *s, uint32_t id)
{
	size_t lo = 0, hi = s->nc;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (s->c[mid].t.id < id)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < s->nc && s->c[lo].t.id == id && s->c[lo].group != UINT32_MAX &&
	    s->pg.g[s->c[lo].group].dp;
}

/* Is record i a rank edge between data-parallel collectives, which one
 * rank left drops (there is no one to meet)? */
static int
dropped_edge(const struct opts *o, const struct section *s, size_t i)
{
	return o->n == 1 && s->rec.type[i] == KG_R_EDGE && s->edge[i].kind == KG_E_RANK &&
	    is_dp(s, s->edge[i].src) && is_dp(s, s->edge[i].dst);
}

/*
 * The section with the re-timed collectives written anew (from the
 * fields this version knows); with one rank left there is no one to
 * meet, so the rank edges of the data-parallel collectives go.
 */
static int
write_section(const struct opts *o, struct section *s, struct gout *g, const char *net)
{
	static const char *const keys[] = { "dp", "world" };
	int64_t vals[2] = { o->n, config_world_to(&s->h, "dp", s->dp0, o->n) };
	char tool[512], set[96];
	size_t i, k = 0;

	/* the degree set, and a link taken from the built-in topology, are
	 * recorded with the tool (graphstat reports them) */
	config_set_text(set, sizeof(set), keys, vals, 2);
	snprintf(tool, sizeof(tool), "%s%s%s%s", PRODUCER, set, net[0] ? " " : "", net);
	for (i = 0; i < s->nc; i++)
		if (memcmp(&s->c[i].t, &s->c[i].t0, sizeof(s->c[i].t)) != 0)
			hf_changed(&s->fr, s->c[i].rec);
	for (i = 0; i < s->rec.n && o->n == 1; i++)
		if (dropped_edge(o, s, i))
			hf_changed(&s->fr, i);
	kg_writer_follow(&g->w, &s->h);
	if (kg_write_header_tool(&g->w, &s->h, tool) < 0)
		return -1;
	for (i = 0; i < s->rec.n; i++) {
		size_t len;
		const char *b;
		int rc;

		/* frames none of whose records changed, as they came */
		while ((rc = hf_pass(&s->fr, &g->w, &s->rec, &i)) > 0)
			while (k < s->nc && s->c[k].rec < i)
				k++;
		if (rc < 0)
			return -1;
		if (i == s->rec.n)
			break;
		b = held_rec(&s->rec, i, &len);
		if (k < s->nc && s->c[k].rec == i) {
			rc = kg_write_task(&g->w, &s->c[k++].t);
		} else if (dropped_edge(o, s, i)) {
			continue;
		} else {
			rc = kg_write_bytes(&g->w, b, len, s->rec.type[i]);
		}
		if (rc < 0)
			return -1;
	}
	return 0;
}

static void
free_gtext(struct section *s)
{
	size_t i;

	for (i = 0; i < s->ngtext; i++)
		free(s->gtext[i]);
	s->ngtext = 0;
}

static int made_section(const struct opts *o, struct section *s, const struct gin *in,
    int index, struct gout *g);

static int
process_in(const struct opts *o, struct gin *inp, struct gout *g, int made)
{
	struct gin in = *inp;
	struct section s;
	char net[256];
	int t, rc = 0, index = 0;

	memset(&s, 0, sizeof(s));
	hf_drop(&s.fr);
	in.r.keep_frames = 1;
	while (rc == 0 && (t = gin_read(&in)) > 0) {
		hf_take(&s.fr, &in.r, in.rec.pos, &s.rec);
		if (t == KG_R_HEADER) {
			s.h = in.rec.header;
			s.job = s.h.nranks > 0;
			held_reset(&s.rec);
			hf_reset(&s.fr);
			s.nc = s.np = s.nreq = 0;
			free_gtext(&s);
			pgroups_release(&s.pg);
			pgroups_init(&s.pg, o->gpn);
			continue; /* written anew with the section */
		}
		if (t == KG_R_SIM) {
			hf_skip(&s.fr);
			continue; /* the times change: simulate again */
		}
		if (t == KG_R_PROC) {
			int64_t rk = in.rec.proc.rank >= 0 ? in.rec.proc.rank : s.h.rank;

			VEC_PUSH(s.prank, s.np, s.capp, rk);
		}
		if (t == KG_R_TASK && in.rec.task.kind == KG_RT && dp_request(&in.r, &in.rec.task))
			s.nreq++;
		if (t == KG_R_TASK && in.rec.task.kind == KG_COLL) {
			struct ctask c;

			c.t = in.rec.task;
			c.t0 = c.t;
			c.rec = s.rec.n;
			c.rank = c.t.proc < s.np ? s.prank[c.t.proc] : -1;
			c.group = UINT32_MAX;
			if (c.t.pgr != KG_NONE)
				c.group = pgroups_of(&s.pg, c.t.pgr, kg_str(&in.r, c.t.pgr));
			VEC_PUSH(s.c, s.nc, s.capc, c);
		}
		if (t == KG_R_END && s.nc == 0 && s.nreq > 0 && s.h.world <= 1 && !made) {
			/* DDP at world size 1: the all-reduces made first */
			rc = made_section(o, &s, &in, index, g);
			hf_drop(&s.fr);
			index++;
			continue;
		}
		if (t == KG_R_END) {
			/* the header was copied when read; its strings are the
			 * reader's until the next header */
			rc = retime(o, &s, in.name, index, net, sizeof(net));
			if (rc == 0 && (write_section(o, &s, g, net) < 0 ||
			    kg_write_end(&g->w) < 0)) {
				errmsg("%s: %s", g->name, g->w.err);
				rc = 1;
			}
			hf_drop(&s.fr); /* the end record's frame: written anew */
			index++;
			continue;
		}
		if (t == KG_R_EDGE) {
			grow(&s.edge, &s.capedge, s.rec.n + 1, sizeof(*s.edge));
			s.edge[s.rec.n].src = in.rec.edge.src;
			s.edge[s.rec.n].dst = in.rec.edge.dst;
			s.edge[s.rec.n].kind = (uint8_t)in.rec.edge.kind;
		}
		held_add(&s.rec, t, in.rec.bytes, in.rec.nbytes);
	}
	if (t < 0 && rc == 0)
		rc = 1;
	held_release(&s.rec);
	hf_release(&s.fr);
	free(s.c);
	pgroups_release(&s.pg);
	free_gtext(&s);
	free(s.gtext);
	free(s.prank);
	free(s.edge);
	*inp = in;
	return rc;
}

static int
process(void *arg, const char *path, struct gout *g)
{
	const struct opts *o = arg;
	struct gin in;
	int rc;

	if (gin_open(&in, path) < 0)
		return 1;
	rc = process_in(o, &in, g, 0);
	gin_close(&in);
	return rc;
}

/*
 * A section of a DDP job traced at world size 1, whose all-reduces NCCL
 * did not run: the section as read (s) is written to a temporary stream,
 * read back whole, written again with the all-reduces made
 * (graph-scale-dp/make.h) and re-timed like any job's. 0, or 1 after a
 * message.
 */
static int
made_section(const struct opts *o, struct section *s, const struct gin *in, int index,
    struct gout *g)
{
	struct kg_writer w;
	struct gin mi;
	struct graph gr;
	FILE *f1 = tmpfile(), *f2 = tmpfile();
	size_t i, nmade = 0;
	int t, rc = 1;

	if (f1 == NULL || f2 == NULL) {
		errmsg("%s: a temporary file: %s", in->name, strerror(errno));
		goto out;
	}
	/* the section as read */
	if (kg_writer_init(&w, f1, KG_LEVEL) < 0 || kg_write_header(&w, &s->h) < 0)
		goto werr;
	for (i = 0; i < s->rec.n; i++) {
		size_t len;
		const char *b = held_rec(&s->rec, i, &len);

		if (kg_write_bytes(&w, b, len, s->rec.type[i]) < 0)
			goto werr;
	}
	if (kg_write_end(&w) < 0 || kg_writer_finish(&w) < 0)
		goto werr;
	kg_writer_release(&w);
	/* read back whole, written with the all-reduces made */
	rewind(f1);
	mi.fp = f1, mi.name = in->name;
	if (kg_reader_init(&mi.r, f1) < 0) {
		errmsg("%s: %s", in->name, mi.r.err);
		goto out;
	}
	kg_rec_init(&mi.rec);
	graph_init(&gr);
	if (kg_writer_init(&w, f2, KG_LEVEL) < 0) {
		graph_release(&gr);
		kg_rec_release(&mi.rec);
		kg_reader_release(&mi.r);
		goto werr;
	}
	while ((t = gin_read(&mi)) > 0)
		if (graph_take(&gr, t, &mi.rec) &&
		    dp_make(&gr, &mi.r, &w, PRODUCER " made the all-reduces NCCL did not run",
		    &nmade) < 0)
			break;
	graph_release(&gr);
	kg_rec_release(&mi.rec);
	kg_reader_release(&mi.r);
	if (t != 0 || kg_writer_finish(&w) < 0)
		goto werr;
	kg_writer_release(&w);
	if (o->verbose)
		fprintf(stderr, "%s: %s: section %d: %zu all-reduces made where NCCL, at world "
		    "size 1, ran none\n", progname, in->name, index, nmade);
	/* and re-timed like any job's */
	rewind(f2);
	mi.fp = f2, mi.name = in->name;
	if (kg_reader_init(&mi.r, f2) < 0) {
		errmsg("%s: %s", in->name, mi.r.err);
		goto out;
	}
	kg_rec_init(&mi.rec);
	rc = process_in(o, &mi, g, 1);
	kg_rec_release(&mi.rec);
	kg_reader_release(&mi.r);
	goto out;
werr:
	errmsg("%s: a temporary file: %s", in->name, w.err[0] ? w.err : strerror(errno));
	kg_writer_release(&w);
out:
	if (f1 != NULL)
		fclose(f1);
	if (f2 != NULL)
		fclose(f2);
	return rc;
}

/*
 * --dp-group RANKS: "0-7", "0,2,4,6", "0-3,8-11" (a range takes both
 * ends); at least two distinct ranks, sorted into *out.
 */
static int
parse_ranks(const char *arg, int64_t **out, size_t *n)
{
	char *copy = xstrndup(arg, strlen(arg)), *tok, *save = NULL, *dash;
	size_t cap = 0, i;
	int64_t a, b, r;

	*out = NULL;
	*n = 0;
	for (tok = strtok_r(copy, ",", &save); tok != NULL; tok = strtok_r(NULL, ",", &save)) {
		dash = strchr(tok, '-');
		if (dash != NULL)
			*dash = '\0';
		if (parse_i64(tok, 0, 1 << 20, &a) < 0 ||
		    (dash != NULL && parse_i64(dash + 1, 0, 1 << 20, &b) < 0))
			goto bad;
		if (dash == NULL)
			b = a;
		if (b < a || b - a > (1 << 20))
			goto bad;
		for (r = a; r <= b; r++)
			VEC_PUSH(*out, *n, cap, r);
	}
	if (*n < 2)
		goto bad;
	qsort(*out, *n, sizeof(**out), cmp_i64);
	for (i = 0; i + 1 < *n; i++)
		if ((*out)[i] == (*out)[i + 1])
			goto bad;
	free(copy);
	return 0;
bad:
	free(copy);
	return -1;
}

int
main(int argc, char **argv)
{
	struct opts o;
	struct whatif_tool w = {
		.own = own, .verbose = &o.verbose, .gpn = &o.gpn, .given = &o.given,
		.name = "graph-scale-dp", .usage = usage, .help = help, .producer = PRODUCER,
	};
	int c, rc;

	memset(&o, 0, sizeof(o));
	while ((c = whatif_getopt(&w, argc, argv)) != -1) {
		switch (c) {
		case 'D':
			free(o.dpg);
			o.dpg = NULL;
			if (parse_ranks(optarg, &o.dpg, &o.ndpg) < 0) {
				errmsg("invalid --dp-group '%s' (ranks: 0-7, or 0,2,4,6)", optarg);
				free(o.dpg);
				usage_exit(usage);
			}
			break;
		}
	}
	whatif_number(&w, &o.n, 1 << 20, "the new data-parallel degree", "data-parallel degree",
	    "");
	rc = whatif_run(&w, process, &o);
	free(o.dpg);
	return rc;
}
