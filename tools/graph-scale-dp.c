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
#include <getopt.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "comm.h"
#include "kg.h"
#include "pgroup.h"
#include "util.h"

#define PRODUCER "graph-scale-dp " KG_VERSION

static const char usage[] =
    "graph-scale-dp [-q] [-o FILE] [--gpus-per-node N] [--net GBPS,US] [--topology FILE] N "
    "[FILE ...]";

static const char help[] =
    "Re-time a job graph's data-parallel collectives for N data-parallel ranks.\n"
    "\n"
    "  -o, --output FILE        write the stream to FILE instead of stdout\n"
    "      --gpus-per-node N    ranks per node, for the links (default 8)\n"
    "      --net GBPS,US        the network's bandwidth per GPU and latency per step,\n"
    "                           for collectives the job never ran across nodes\n"
    "      --topology FILE      the links (nvlink, network) and gpus-per-node, for\n"
    "                           what the job does not show\n"
    "  -q, --quiet              no warnings\n"
    "  -h, --help               this help\n"
    "      --version            the version\n"
    "\n"
    "The input is a job graph (graph-deps --merge) with structure tags.\n"
    "With no FILE, or FILE -, read standard input. See graph-scale-dp(1).\n";

struct opts {
	int64_t n, gpn;
	struct comm_given given; /* --net, --topology: links the job does not show */
};

/* A collective task: its record, decoded, and where its bytes are. */
struct ctask {
	struct kg_task t;
	size_t rec;     /* index among the section's records */
	uint32_t group; /* index into the section's groups */
	int64_t rank;
};


struct redge {
	uint32_t src, dst;
	uint8_t kind;
};

struct section {
	char *buf;
	size_t len, cap;
	size_t *off;
	uint8_t *type;
	size_t nrec, capoff, captype;
	struct ctask *c;
	size_t nc, capc;
	struct pgroups pg;
	int64_t *prank;
	size_t np, capp;
	struct redge *edge;  /* by record index: the edge records' ends and kind */
	size_t capedge;
	struct kg_header h;
	int job;
};

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

/* Re-time the section's data-parallel collectives; 0, or 1 after a message. */
static int
retime(const struct opts *o, struct section *s, const char *name, int index)
{
	const struct kg_task **ct = xmalloc((s->nc + 1) * sizeof(*ct));
	uint32_t *grp = xmalloc((s->nc + 1) * sizeof(*grp));
	struct comm_model m;
	uint8_t seen[KG_NCOLL * COMM_NLINK] = { 0 };
	char msg[160];
	int64_t d, tp;
	size_t i;

	if (!s->job) {
		errmsg("%s: section %d: not a job graph: the transfer times come from "
		    "matching collectives across ranks (graph-deps --merge)", name, index);
		goto fail;
	}
	if (s->pg.ng == 0) {
		errmsg("%s: section %d: its collectives carry no process-group ranks (NCCL "
		    "metadata, `pgr`): the groups cannot be told apart", name, index);
		goto fail;
	}
	for (i = 0; i < s->nc; i++)
		ct[i] = &s->c[i].t, grp[i] = s->c[i].group;
	pgroups_classify(&s->pg, ct, grp, s->nc);
	if (!s->pg.phases) {
		errmsg("%s: section %d: its collectives have no phase: the data-parallel "
		    "group is the one that reduces only in the backward and optimizer "
		    "phases (kineto2graph tags them)", name, index);
		goto fail;
	}
	if (s->pg.dp < 0) {
		errmsg("%s: section %d: no process group reduces only in the backward and "
		    "optimizer phases: no data-parallel group to scale", name, index);
		goto fail;
	}
	d = s->pg.dp, tp = s->pg.tp;
	pgroups_fit(&s->pg, ct, grp, s->nc, &o->given, &m);
	free(ct);
	free(grp);
	for (i = 0; i < s->nc; i++) {
		struct ctask *c = &s->c[i];
		const struct pgroup *g = c->group == UINT32_MAX ? NULL : &s->pg.g[c->group];
		int64_t n = g != NULL ? g->size : 0, told, tnew;
		int lnew, a1, a2;

		if (g == NULL || c->rank < 0)
			continue;
		if (!g->dp || pgroups_p2p(c->t.coll)) {
			/* another group: the same collective, but its ranks may
			 * now be on two nodes (a stage moved to another node) */
			lnew = new_link(g->text, tp, d, o->n, o->gpn);
			if (lnew == g->link)
				continue;
		} else {
			/* the new group of this rank: Megatron's order,
			 * tensor-parallel fastest, then data-parallel, then the
			 * stage */
			int64_t ti = c->rank % tp, st = c->rank / (tp * d);
			int64_t lo = ti + tp * o->n * st, hi = ti + tp * (o->n - 1 + o->n * st);

			lnew = lo / o->gpn != hi / o->gpn ? COMM_INTER : COMM_INTRA;
			n = o->n;
		}
		told = comm_time(&m, c->t.coll, g->size, c->t.bytes, g->link, &a1);
		tnew = comm_time(&m, c->t.coll, n, c->t.bytes, lnew, &a2);
		if (told <= 0 || tnew < 0 || a1 || a2) {
			int l = a2 || tnew < 0 ? lnew : g->link;

			errmsg("%s: section %d: no %s over %s in the job to fit the "
			    "communication model on%s", name, index, kg_coll_name[c->t.coll],
			    l == COMM_INTER ? "the network (across nodes)" : "NVLink (inside a node)",
			    l == COMM_INTER ? " (give it with --net GBPS,US)" : "");
			return 1;
		}
		if (pgroups_borrowed(&m, c->t.coll, lnew, seen, msg, sizeof(msg)) ||
		    pgroups_borrowed(&m, c->t.coll, g->link, seen, msg, sizeof(msg)))
			warnmsg("%s: section %d: %s", name, index, msg);
		if (n < 2)
			tnew = 0; /* one rank: nothing to reduce */
		c->t.dur = llround((double)c->t.dur * (double)tnew / (double)told);
	}
	return 0;
fail:
	free(ct);
	free(grp);
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

/*
 * The section with the re-timed collectives written anew (from the
 * fields this version knows); with one rank left there is no one to
 * meet, so the rank edges of the data-parallel collectives go.
 */
static int
write_section(const struct opts *o, struct section *s, struct gout *g)
{
	size_t i, k = 0;

	if (kg_write_header_tool(&g->w, &s->h, PRODUCER) < 0)
		return -1;
	for (i = 0; i < s->nrec; i++) {
		size_t end = i + 1 < s->nrec ? s->off[i + 1] : s->len;
		int rc;

		if (k < s->nc && s->c[k].rec == i) {
			rc = kg_write_task(&g->w, &s->c[k++].t);
		} else if (s->type[i] == KG_R_EDGE && o->n == 1 && s->edge[i].kind == KG_E_RANK &&
		    is_dp(s, s->edge[i].src) && is_dp(s, s->edge[i].dst)) {
			continue;
		} else {
			rc = kg_write_bytes(&g->w, s->buf + s->off[i], end - s->off[i], s->type[i]);
		}
		if (rc < 0)
			return -1;
	}
	return 0;
}

static int
process(const struct opts *o, const char *path, struct gout *g)
{
	struct gin in;
	struct section s;
	int t, rc = 0, index = 0;

	if (gin_open(&in, path) < 0)
		return 1;
	memset(&s, 0, sizeof(s));
	while (rc == 0 && (t = gin_read(&in)) > 0) {
		if (t == KG_R_HEADER) {
			s.h = in.rec.header;
			s.job = s.h.nranks > 0;
			s.nrec = s.len = s.nc = s.np = 0;
			pgroups_release(&s.pg);
			pgroups_init(&s.pg, o->gpn);
			continue; /* written anew with the section */
		}
		if (t == KG_R_SIM)
			continue; /* the times change: simulate again */
		if (t == KG_R_PROC) {
			int64_t rk = in.rec.proc.rank >= 0 ? in.rec.proc.rank : s.h.rank;

			VEC_PUSH(s.prank, s.np, s.capp, rk);
		}
		if (t == KG_R_TASK && in.rec.task.kind == KG_COLL) {
			struct ctask c;

			c.t = in.rec.task;
			c.rec = s.nrec;
			c.rank = c.t.proc < s.np ? s.prank[c.t.proc] : -1;
			c.group = UINT32_MAX;
			if (c.t.pgr != KG_NONE)
				c.group = pgroups_of(&s.pg, c.t.pgr, kg_str(&in.r, c.t.pgr));
			VEC_PUSH(s.c, s.nc, s.capc, c);
		}
		if (t == KG_R_END) {
			/* the header was copied when read; its strings are the
			 * reader's until the next header */
			rc = retime(o, &s, in.name, index);
			if (rc == 0 && (write_section(o, &s, g) < 0 || kg_write_end(&g->w) < 0)) {
				errmsg("%s: %s", g->name, g->w.err);
				rc = 1;
			}
			index++;
			continue;
		}
		if (t == KG_R_EDGE) {
			grow(&s.edge, &s.capedge, s.nrec + 1, sizeof(*s.edge));
			s.edge[s.nrec].src = in.rec.edge.src;
			s.edge[s.nrec].dst = in.rec.edge.dst;
			s.edge[s.nrec].kind = (uint8_t)in.rec.edge.kind;
		}
		grow(&s.buf, &s.cap, s.len + in.rec.nbytes, 1);
		memcpy(s.buf + s.len, in.rec.bytes, in.rec.nbytes);
		grow(&s.off, &s.capoff, s.nrec + 1, sizeof(*s.off));
		grow(&s.type, &s.captype, s.nrec + 1, 1);
		s.off[s.nrec] = s.len;
		s.type[s.nrec++] = (uint8_t)t;
		s.len += in.rec.nbytes;
	}
	if (t < 0 && rc == 0)
		rc = 1;
	free(s.buf);
	free(s.off);
	free(s.type);
	free(s.c);
	pgroups_release(&s.pg);
	free(s.prank);
	free(s.edge);
	gin_close(&in);
	return rc;
}

int
main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "output", required_argument, NULL, 'o' },
		{ "gpus-per-node", required_argument, NULL, 'G' },
		{ "net", required_argument, NULL, 'N' },
		{ "topology", required_argument, NULL, 'T' },
		{ "quiet", no_argument, NULL, 'q' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 }
	};
	const char *output = NULL;
	struct opts o;
	struct gout g;
	int c, i, rc = 0, gpn_set = 0;

	cli_init("graph-scale-dp");
	memset(&o, 0, sizeof(o));
	o.gpn = 8;
	while ((c = getopt_long(argc, argv, "o:qh", longopts, NULL)) != -1) {
		switch (c) {
		case 'o':
			output = optarg;
			break;
		case 'G':
			if (parse_i64(optarg, 1, 1 << 20, &o.gpn) < 0) {
				errmsg("invalid --gpus-per-node '%s'", optarg);
				usage_exit(usage);
			}
			gpn_set = 1;
			break;
		case 'N':
		case 'T':
			if (cli_links(c == 'N' ? COMM_INTER : -1, optarg, &o.given, usage) != 0)
				return 1;
			break;
		case 'q':
			quiet = 1;
			break;
		case 'h':
			printf("usage: %s\n\n%s", usage, help);
			return close_stdout();
		case 'V':
			version_exit();
		default:
			usage_exit(usage);
		}
	}
	argc -= optind;
	argv += optind;
	if (!gpn_set && o.given.gpn > 0)
		o.gpn = o.given.gpn;
	if (argc < 1) {
		errmsg("missing the new data-parallel degree");
		usage_exit(usage);
	}
	if (parse_i64(argv[0], 1, 1 << 20, &o.n) < 0) {
		errmsg("invalid data-parallel degree '%s'", argv[0]);
		usage_exit(usage);
	}
	argc--;
	argv++;
	if (gout_open(&g, output, 3) < 0)
		return 1;
	if (argc == 0)
		rc = process(&o, NULL, &g);
	for (i = 0; i < argc && rc == 0; i++)
		rc = process(&o, argv[i], &g);
	return gout_close(&g, rc, PRODUCER);
}
