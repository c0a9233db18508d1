#include "whatif.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "util.h"

/* getopt_long's values for the shared options that have no letter */
enum { WI_GPN = 0x100, WI_NET, WI_TOPOLOGY, WI_MAXMEM, WI_VERSION, WI_MODEL, WI_FROM };

/* --max-memory; 0: not given (the machine's, whatif_limit) */
static uint64_t max_memory;

static void
add(struct whatif_tool *w, size_t *k, const char *name, int has_arg, int val)
{
	if (*k + 1 >= WHATIF_MAXOPTS)
		abort(); /* a tool with more options than the table holds */
	w->lo[*k].name = name;
	w->lo[*k].has_arg = has_arg;
	w->lo[*k].flag = NULL;
	w->lo[*k].val = val;
	++*k;
}

/* The table of long options and the short ones, in whatif.h's order. */
static void
build(struct whatif_tool *w)
{
	const struct option *p;
	size_t k = 0;
	int i = 0;

	cli_init(w->name);
	add(w, &k, "output", required_argument, 'o');
	for (p = w->own; p != NULL; p++, i++) {
		if (w->om != NULL && i == w->om_at) {
			add(w, &k, "model", required_argument, WI_MODEL);
			add(w, &k, "from", required_argument, WI_FROM);
		}
		if (p->name == NULL)
			break;
		add(w, &k, p->name, p->has_arg, p->val);
	}
	if (w->gpn != NULL) {
		add(w, &k, "gpus-per-node", required_argument, WI_GPN);
		*w->gpn = 8;
	}
	if (w->given != NULL) {
		add(w, &k, "net", required_argument, WI_NET);
		add(w, &k, "topology", required_argument, WI_TOPOLOGY);
	}
	if (w->sizes)
		add(w, &k, "max-memory", required_argument, WI_MAXMEM);
	add(w, &k, "quiet", no_argument, 'q');
	if (w->verbose != NULL)
		add(w, &k, "verbose", no_argument, 'v');
	add(w, &k, "help", no_argument, 'h');
	add(w, &k, "version", no_argument, WI_VERSION);
	memset(&w->lo[k], 0, sizeof(w->lo[k]));
	strcpy(w->shortopts, w->verbose != NULL ? "o:qvh" : "o:qh");
}

int
whatif_getopt(struct whatif_tool *w, int argc, char **argv)
{
	int c;

	if (w->lo[0].name == NULL)
		build(w);
	for (;;) {
		switch ((c = getopt_long(argc, argv, w->shortopts, w->lo, NULL))) {
		case 'o':
			w->output = optarg;
			break;
		case WI_GPN:
			if (parse_i64(optarg, 1, 1 << 20, w->gpn) < 0) {
				errmsg("invalid --gpus-per-node '%s'", optarg);
				usage_exit(w->usage);
			}
			w->gpn_set = 1;
			break;
		case WI_NET:
		case WI_TOPOLOGY:
			if (cli_links(c == WI_NET ? COMM_INTER : -1, optarg, w->given,
			    w->usage) != 0)
				exit(1);
			break;
		case WI_MAXMEM:
			if (cli_size(optarg, &max_memory) < 0) {
				errmsg("invalid --max-memory '%s' (bytes, or with K, M, G, T)",
				    optarg);
				usage_exit(w->usage);
			}
			break;
		case 'q':
			quiet = 1;
			break;
		case 'v':
			*w->verbose = 1;
			break;
		case WI_MODEL:
			w->om->model = optarg;
			break;
		case WI_FROM:
			w->om->from = optarg;
			break;
		case 'h':
			printf("usage: %s\n\n%s", w->usage, w->help);
			exit(close_stdout());
		case WI_VERSION:
			version_exit();
		case '?':
			usage_exit(w->usage);
		case -1:
			w->argc = argc - optind;
			w->argv = argv + optind;
			if (w->gpn != NULL && w->given != NULL && !w->gpn_set && w->given->gpn > 0)
				*w->gpn = w->given->gpn;
			return -1;
		default:
			return c;
		}
	}
}

void
whatif_number(struct whatif_tool *w, int64_t *n, int64_t max, const char *what, const char *name,
    const char *hint)
{
	if (w->argc < 1) {
		errmsg("missing %s", what);
		usage_exit(w->usage);
	}
	if (parse_i64(w->argv[0], 1, max, n) < 0) {
		errmsg("invalid %s '%s'%s", name, w->argv[0], hint);
		usage_exit(w->usage);
	}
	w->argc--;
	w->argv++;
}

int64_t
whatif_size(const struct whatif_tool *w, const char *what, const char *arg)
{
	int64_t v;

	if (parse_i64(arg, 1, (int64_t)1 << 30, &v) < 0) {
		errmsg("invalid %s '%s' (a positive integer)", what, arg);
		usage_exit(w->usage);
	}
	return v;
}

int
whatif_write(struct gout *out, struct graph *g, const char *tool, const char *const *xstr,
    size_t nxstr)
{
	struct graph_out go;

	memset(&go, 0, sizeof(go));
	go.xstr = xstr;
	go.nxstr = nxstr;
	go.task = g->task, go.ntask = g->ntask, go.edge = g->edge, go.nedge = g->nedge;
	kg_writer_follow(&out->w, &g->h);
	if (graph_write(&out->w, g, tool, &go) < 0) {
		errmsg("%s: %s", out->name, out->w.err);
		return 1;
	}
	return 0;
}

int
whatif_run(const struct whatif_tool *w, whatif_input_fn *input, void *arg)
{
	struct gout g;
	int i, rc = 0;

	if (gout_open(&g, w->output, KG_LEVEL) < 0)
		return 1;
	if (w->argc == 0)
		rc = input(arg, NULL, &g);
	for (i = 0; i < w->argc && rc == 0; i++)
		rc = input(arg, w->argv[i], &g);
	return gout_close(&g, rc, w->producer);
}

/* whatif_run_graphs' input: the section function and its argument. */
struct graphs {
	whatif_section_fn *section;
	void *arg;
};

static int
graphs_input(void *arg, const char *path, struct gout *out)
{
	struct graphs *s = arg;
	struct gin in;
	struct graph g;
	int t, rc = 0, index = 0;

	if (gin_open(&in, path) < 0)
		return 1;
	graph_init(&g);
	while (rc == 0 && (t = gin_read(&in)) > 0)
		if (graph_take(&g, t, &in.rec))
			rc = s->section(s->arg, &g, &in.r, in.name, index++, out);
	if (t < 0 && rc == 0)
		rc = 1;
	graph_release(&g);
	gin_close(&in);
	return rc;
}

int
whatif_run_graphs(const struct whatif_tool *w, whatif_section_fn *section, void *arg)
{
	struct graphs s = { section, arg };

	return whatif_run(w, graphs_input, &s);
}

uint64_t
whatif_limit(void)
{
	static const int res[] = { RLIMIT_AS, RLIMIT_DATA };
	long pages = sysconf(_SC_PHYS_PAGES), psize = sysconf(_SC_PAGESIZE);
	uint64_t m = UINT64_MAX;
	struct rlimit rl;
	size_t k;

	if (max_memory > 0)
		return max_memory;
	if (pages > 0 && psize > 0)
		m = (uint64_t)pages * (uint64_t)psize;
	for (k = 0; k < sizeof(res) / sizeof(res[0]); k++)
		if (getrlimit(res[k], &rl) == 0 && rl.rlim_cur != RLIM_INFINITY &&
		    (uint64_t)rl.rlim_cur < m)
			m = rl.rlim_cur;
	return m - m / 8;
}

uint64_t
whatif_vec(uint64_t n, size_t size)
{
	uint64_t cap = 16;

	if (n == 0)
		return 0;
	while (cap < n && cap < (UINT64_C(1) << 62))
		cap *= 2;
	return cap > UINT64_MAX / size ? UINT64_MAX : cap * size;
}

uint64_t
whatif_graph_bytes(const struct graph *g)
{
	return g->capraw + g->capr * sizeof(*g->roff) + g->caprtype * sizeof(*g->rtype) +
	    g->capproc * sizeof(*g->proc) + g->captask * sizeof(*g->task) +
	    g->capedge * sizeof(*g->edge);
}

/* A count for a message: "17234", "3.4 million", "2.1 billion". */
static void
count_text(char *buf, size_t len, uint64_t n)
{
	if (n >= 1000000000)
		snprintf(buf, len, "%.1f billion", (double)n / 1e9);
	else if (n >= 1000000)
		snprintf(buf, len, "%.1f million", (double)n / 1e6);
	else
		snprintf(buf, len, "%llu", (unsigned long long)n);
}

int
whatif_fits(const char *name, int index, const char *what, uint64_t ntask, uint64_t nedge,
    uint64_t bytes)
{
	char t[32], e[32], b[32], l[32];
	uint64_t lim = whatif_limit();

	count_text(t, sizeof(t), ntask);
	count_text(e, sizeof(e), nedge);
	if (ntask >= UINT32_MAX) {
		errmsg("%s: section %d: %s would hold %s tasks; a section's task ids "
		    "end at 2^32 - 1", name, index, what, t);
		return 1;
	}
	if (bytes <= lim)
		return 0;
	cli_bytes_text(b, sizeof(b), bytes);
	cli_bytes_text(l, sizeof(l), lim);
	errmsg("%s: section %d: %s would hold %s tasks and %s edges (about %s); the limit is %s "
	    "(--max-memory%s)", name, index, what, t, e, b, l,
	    max_memory > 0 ? "" :
	    ", default: the machine's memory or the process's limit, less an eighth");
	return 1;
}
