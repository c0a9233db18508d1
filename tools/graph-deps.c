/*
 * graph-deps: inspect, check and ablate a graph's dependencies.
 *
 *   --check    cycles, edges to unknown tasks, backwards edges
 *   --summary  edge counts by kind and provenance
 *   --drop K   the stream without edges of the given kinds
 *
 * State: --check holds one section at a time (24 bytes a task, 12 an
 * edge); --summary and --drop hold nothing beyond the current record.
 */
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "kg.h"
#include "merge.h"
#include "util.h"

static const char usage[] =
    "graph-deps --check | --summary | --drop KIND[,KIND...] | --merge [-qv] [-o FILE] [FILE ...]";

static const char help[] =
    "Inspect, check and ablate the dependencies of graph streams.\n"
    "\n"
    "      --check            report cycles, edges to unknown tasks and edges that\n"
    "                         run backwards in the trace's time; exit 1 if unusable\n"
    "      --summary          print edge counts by kind and provenance\n"
    "      --drop KIND,...    write the stream without edges of these kinds\n"
    "                         (thread, handoff, launch, stream, event, sync, rank)\n"
    "      --merge            write one job graph of every rank's section, with\n"
    "                         collectives matched across ranks\n"
    "  -o, --output FILE      with --drop or --merge, write to FILE, not stdout\n"
    "  -q, --quiet            no warnings\n"
    "  -v, --verbose          with --merge, a line per rank on stderr\n"
    "  -h, --help             this help\n"
    "      --version          the version\n"
    "\n"
    "With no FILE, or FILE -, read standard input. See graph-deps(1).\n";

enum mode { M_NONE, M_CHECK, M_SUMMARY, M_DROP, M_MERGE };

struct opts {
	int mode;
	unsigned drop; /* bit per edge kind */
	const char *output;
};

struct ctask {
	int64_t ts, end;
	uint32_t name;
};

struct cedge {
	uint32_t src, dst;
	uint8_t kind;
};

struct section {
	struct ctask *task;
	size_t ntask, captask;
	struct cedge *edge;
	size_t nedge, capedge;
	uint64_t unknown;
	size_t nrendez; /* --check: rank edges, counted only */
	uint64_t back[KG_NEDGE_KIND];
	uint64_t count[KG_NEDGE_KIND][KG_NHOW];
	int64_t rank;
	int index;
};

static const char *
section_label(const struct section *s, char *buf, size_t len)
{
	if (s->rank >= 0)
		snprintf(buf, len, "section %d (rank %lld)", s->index, (long long)s->rank);
	else
		snprintf(buf, len, "section %d", s->index);
	return buf;
}

/*
 * Kahn's algorithm; if tasks remain, walk back along remaining in-edges
 * from one of them until a task repeats: that loop is a cycle. Prints it
 * and returns 1, or returns 0.
 */
static int
find_cycle(const char *name, const struct section *s, const struct kg_reader *r)
{
	size_t n = s->ntask, i, head = 0, tail = 0, done = 0;
	uint32_t *indeg = xcalloc(n, sizeof(*indeg));
	uint32_t *start = xcalloc(n + 1, sizeof(*start));
	uint32_t *adj = xmalloc((s->nedge + 1) * sizeof(*adj));
	uint32_t *queue = xmalloc((n + 1) * sizeof(*queue));
	uint32_t *pred, *seen, x;
	int found = 0;
	char buf[64];

	for (i = 0; i < s->nedge; i++) {
		indeg[s->edge[i].dst]++;
		start[s->edge[i].src + 1]++;
	}
	for (i = 0; i < n; i++)
		start[i + 1] += start[i];
	{
		uint32_t *pos = xmalloc((n + 1) * sizeof(*pos));

		memcpy(pos, start, (n + 1) * sizeof(*pos));
		for (i = 0; i < s->nedge; i++)
			adj[pos[s->edge[i].src]++] = s->edge[i].dst;
		free(pos);
	}
	for (i = 0; i < n; i++)
		if (indeg[i] == 0)
			queue[tail++] = (uint32_t)i;
	while (head < tail) {
		uint32_t u = queue[head++], k;

		done++;
		for (k = start[u]; k < start[u + 1]; k++)
			if (--indeg[adj[k]] == 0)
				queue[tail++] = adj[k];
	}
	if (done < n) {
		/* A remaining task has a remaining predecessor: follow them. */
		pred = xmalloc(n * sizeof(*pred));
		seen = xcalloc(n, sizeof(*seen));
		for (i = 0; i < n; i++)
			pred[i] = KG_NONE;
		for (i = 0; i < s->nedge; i++)
			if (indeg[s->edge[i].dst] > 0 && indeg[s->edge[i].src] > 0)
				pred[s->edge[i].dst] = s->edge[i].src;
		for (x = 0; x < n && indeg[x] == 0; x++)
			;
		while (!seen[x]) {
			seen[x] = 1;
			x = pred[x];
		}
		/* x is on the cycle; print it forwards (pred reversed), from
		 * its smallest task id, so the message does not depend on
		 * where the walk came in. */
		{
			uint32_t *cyc = NULL, y = x;
			size_t nc = 0, cap = 0, k, lo = 0;

			do {
				VEC_PUSH(cyc, nc, cap, y);
				y = pred[y];
			} while (y != x);
			for (k = 0; k < nc / 2; k++) {
				uint32_t tmp = cyc[k];

				cyc[k] = cyc[nc - 1 - k];
				cyc[nc - 1 - k] = tmp;
			}
			for (k = 1; k < nc; k++)
				if (cyc[k] < cyc[lo])
					lo = k;
			fprintf(stderr, "%s: %s: %s: cycle through %zu tasks:", progname, name,
			    section_label(s, buf, sizeof(buf)), nc);
			for (k = 0; k <= nc; k++) {
				uint32_t id = cyc[(lo + k) % nc];
				const char *tn = kg_str(r, s->task[id].name);

				if (k == 8 && nc > 8) {
					fputs(" ... ->", stderr);
					k = nc;
					id = cyc[lo];
					tn = kg_str(r, s->task[id].name);
				}
				fprintf(stderr, " %s#%u%s", tn ? tn : "?", id, k < nc ? " ->" : "\n");
			}
			free(cyc);
		}
		free(pred);
		free(seen);
		found = 1;
	}
	free(indeg);
	free(start);
	free(adj);
	free(queue);
	return found;
}

static int
finish_section(const struct opts *o, const char *name, struct section *s,
    const struct kg_reader *r)
{
	char buf[64];
	int bad = 0, k, h;
	uint64_t nback = 0;

	if (o->mode == M_CHECK) {
		int cyc = find_cycle(name, s, r);

		for (k = 0; k < KG_NEDGE_KIND; k++)
			nback += s->back[k];
		printf("%s: %s: %zu tasks, %zu edges, %d cycle%s, %llu unknown, %llu backwards",
		    name, section_label(s, buf, sizeof(buf)), s->ntask, s->nedge + s->nrendez,
		    cyc, cyc == 1 ? "" : "s", (unsigned long long)s->unknown,
		    (unsigned long long)nback);
		if (nback > 0) {
			const char *sep = " (";

			for (k = 0; k < KG_NEDGE_KIND; k++)
				if (s->back[k] > 0) {
					printf("%s%s %llu", sep, kg_edge_kind_name[k],
					    (unsigned long long)s->back[k]);
					sep = ", ";
				}
			putchar(')');
		}
		putchar('\n');
		if (s->unknown > 0)
			errmsg("%s: %s: %llu edge%s name%s unknown tasks", name,
			    section_label(s, buf, sizeof(buf)), (unsigned long long)s->unknown,
			    s->unknown == 1 ? "" : "s", s->unknown == 1 ? "s" : "");
		bad = cyc || s->unknown > 0;
	} else if (o->mode == M_SUMMARY) {
		printf("%s: %s: %zu tasks\n", name, section_label(s, buf, sizeof(buf)), s->ntask);
		printf("%-8s %-9s %10s\n", "kind", "how", "edges");
		for (k = 0; k < KG_NEDGE_KIND; k++)
			for (h = 0; h < KG_NHOW; h++)
				if (s->count[k][h] > 0)
					printf("%-8s %-9s %10llu\n", kg_edge_kind_name[k],
					    kg_how_name[h], (unsigned long long)s->count[k][h]);
		printf("%-8s %-9s %10zu\n", "total", "", s->nedge);
	}
	s->ntask = s->nedge = s->nrendez = 0;
	s->unknown = 0;
	memset(s->back, 0, sizeof(s->back));
	memset(s->count, 0, sizeof(s->count));
	return bad;
}

static int
process(const struct opts *o, const char *path, struct gout *g, int *sections)
{
	struct gin in;
	struct section s;
	int t, rc = 0;

	if (gin_open(&in, path) < 0)
		return 1;
	in.r.unknown_edges = o->mode == M_CHECK;
	memset(&s, 0, sizeof(s));
	while ((t = gin_read(&in)) > 0) {
		if (t == KG_R_HEADER) {
			s.rank = in.rec.header.rank;
			s.index = (*sections)++; /* counted per input file */
			if (o->mode == M_DROP) {
				kg_writer_follow(&g->w, &in.rec.header);
				rc = kg_write_header_tool(&g->w, &in.rec.header, "graph-deps " KG_VERSION);
				if (rc < 0)
					break;
			}
			continue;
		}
		if (t == KG_R_TASK) {
			if (o->mode == M_CHECK) {
				struct ctask ct = { in.rec.task.ts, in.rec.task.ts + in.rec.task.odur, in.rec.task.name };

				VEC_PUSH(s.task, s.ntask, s.captask, ct);
			} else {
				s.ntask++;
			}
		} else if (t == KG_R_EDGE) {
			const struct kg_edge *e = &in.rec.edge;

			if (o->mode == M_DROP && (o->drop & (1u << e->kind)))
				continue;
			if (o->mode == M_CHECK) {
				if (e->src >= s.ntask || e->dst >= s.ntask) {
					s.unknown++;
				} else if (e->kind == KG_E_RANK) {
					/* a rendezvous, not an order: it makes
					 * neither a cycle nor a backwards edge */
					s.nrendez++;
				} else {
					struct cedge ce = { e->src, e->dst, (uint8_t)e->kind };

					VEC_PUSH(s.edge, s.nedge, s.capedge, ce);
					if (s.task[e->dst].ts < s.task[e->src].end)
						s.back[e->kind]++;
				}
			} else {
				s.nedge++;
				s.count[e->kind][e->how]++;
			}
		} else if (t == KG_R_END) {
			if (o->mode != M_DROP && finish_section(o, in.name, &s, &in.r))
				rc = 1;
		}
		if (o->mode == M_DROP && kg_write_bytes(&g->w, in.rec.bytes, in.rec.nbytes, t) < 0) {
			rc = -1;
			break;
		}
	}
	if (rc < 0) {
		errmsg("%s: %s", g->name, g->w.err);
		rc = 1;
	} else if (t < 0) {
		rc = 1;
	}
	gin_close(&in);
	free(s.task);
	free(s.edge);
	return rc;
}

static int
parse_kinds(const char *arg, unsigned *mask)
{
	const char *p = arg;

	*mask = 0;
	while (*p) {
		size_t len = strcspn(p, ",");
		int k = kg_lookup(kg_edge_kind_name, KG_NEDGE_KIND, p, len);

		if (k < 0) {
			errmsg("unknown dependency kind '%.*s'", (int)len, p);
			return -1;
		}
		*mask |= 1u << k;
		p += len;
		if (*p == ',')
			p++;
	}
	if (*mask == 0) {
		errmsg("--drop needs at least one dependency kind");
		return -1;
	}
	return 0;
}

int
main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "check", no_argument, NULL, 'C' },
		{ "summary", no_argument, NULL, 'S' },
		{ "drop", required_argument, NULL, 'D' },
		{ "merge", no_argument, NULL, 'M' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "output", required_argument, NULL, 'o' },
		{ "quiet", no_argument, NULL, 'q' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 }
	};
	struct opts o;
	struct gout g;
	int c, i, rc = 0, sections = 0, modes = 0, verbose = 0;

	cli_init("graph-deps");
	memset(&o, 0, sizeof(o));
	while ((c = getopt_long(argc, argv, "o:qvh", longopts, NULL)) != -1) {
		switch (c) {
		case 'C':
			o.mode = M_CHECK, modes++;
			break;
		case 'S':
			o.mode = M_SUMMARY, modes++;
			break;
		case 'D':
			if (parse_kinds(optarg, &o.drop) < 0)
				usage_exit(usage);
			o.mode = M_DROP, modes++;
			break;
		case 'M':
			o.mode = M_MERGE, modes++;
			break;
		case 'v':
			verbose = 1;
			break;
		case 'o':
			o.output = optarg;
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
	if (modes != 1) {
		errmsg("give exactly one of --check, --summary, --drop, --merge");
		usage_exit(usage);
	}
	if (o.output != NULL && o.mode != M_DROP && o.mode != M_MERGE) {
		errmsg("-o goes with --drop or --merge only");
		usage_exit(usage);
	}
	if (verbose && o.mode != M_MERGE) {
		errmsg("-v goes with --merge only");
		usage_exit(usage);
	}
	argc -= optind;
	argv += optind;
	if (o.mode == M_MERGE)
		return merge_run(argv, argc, o.output, verbose);
	if (o.mode == M_DROP && gout_open(&g, o.output, KG_LEVEL) < 0)
		return 1;
	/* --check and --summary look at every input; --drop stops at the
	 * first failure, since its output is no longer whole. */
	if (argc == 0)
		rc = process(&o, NULL, &g, &sections);
	for (i = 0; i < argc && (rc == 0 || o.mode != M_DROP); i++) {
		sections = 0;
		rc |= process(&o, argv[i], &g, &sections);
	}
	if (o.mode == M_DROP)
		return gout_close(&g, rc, "graph-deps " KG_VERSION);
	if (close_stdout() != 0)
		rc = 1;
	return rc;
}
