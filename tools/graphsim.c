/*
 * graphsim: simulate a graph stream. Every task gets a simulated start
 * and end; each section gains a `sim` record. The simulation is
 * common/sim.h's. A section whose host tasks carry the profiler's own
 * cost (`pc`) is simulated twice: as traced, and without that cost (the
 * step as the job runs unprofiled), both in the sim record.
 *
 * State: one section at a time: about 33 bytes a task and 13 an edge for
 * the simulation (common/sim.h), twice that with profiler costs, and the
 * input records since the last frame boundary (at most a frame, 2 MiB
 * from kgraph's writers; see run_frames).
 */
#include <errno.h>
#include <getopt.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "kg.h"
#include "sim.h"
#include "util.h"

static const char usage[] = "graphsim [-q] [--launch-queue N] [-o FILE] [FILE ...]";

static const char help[] =
    "Simulate graph streams: give every task a simulated start and end.\n"
    "\n"
    "      --launch-queue N  launches a device holds not yet ended (default 1024;\n"
    "                      0: unbounded)\n"
    "  -o, --output FILE   write the stream to FILE instead of stdout\n"
    "  -q, --quiet         no warnings\n"
    "  -h, --help          this help\n"
    "      --version       the version\n"
    "\n"
    "With no FILE, or FILE -, read standard input. See graphsim(1).\n";

#define PRODUCER "graphsim " KG_VERSION

/* Name up to three tasks that never started. */
static void
report_stuck(const char *name, int section, const struct sim *s, const struct kg_reader *r)
{
	char buf[512];
	uint32_t first[3], names[3];
	size_t i, len = 0, stuck = sim_stuck(s, first, names, 3);
	size_t shown = stuck < 3 ? stuck : 3;

	buf[0] = '\0';
	for (i = 0; i < shown; i++) {
		const char *tn = kg_str(r, names[i]);

		len += (size_t)snprintf(buf + len, sizeof(buf) - len, "%s%s#%u",
		    i ? ", " : "", tn ? tn : "?", first[i]);
		if (len >= sizeof(buf))
			len = sizeof(buf) - 1;
	}
	errmsg("%s: section %d: %zu task%s can never start (a cycle, or a wait on a task "
	    "that never runs): %s%s", name, section, stuck, stuck == 1 ? "" : "s", buf,
	    stuck > shown ? ", ..." : "");
}

/*
 * Passing records on. The input's zstd frames end at record boundaries
 * (kg writers end them after a header, around an end record and every
 * 2 MiB). While no record of a frame changes, the frame goes out as it
 * came: no decoding to write, no compressing. A record that changes (a
 * header gains this tool, an old sim record goes, an end record gets a
 * sim record before it) makes the run of records since the last frame
 * boundary dirty: the reader's held bytes of it go out through the
 * writer, and so does the rest of it.
 */
#define RUN_MAX (64 << 20) /* held bytes before a run is written out anyway */

/* Write the held bytes up to pos through the writer. */
static int
run_flush(struct kg_writer *w, struct kg_reader *r, uint64_t pos)
{
	const char *p;
	size_t n = kg_reader_take_held(r, pos, &p);

	return n > 0 ? kg_write_bytes(w, p, n, KG_R_OTHER) : 0;
}

/* Input frames that end at pos end the run: pass them on if it is clean. */
static int
run_frames(int *dirty, struct kg_writer *w, struct kg_reader *r, uint64_t pos)
{
	const void *z;
	size_t n = kg_reader_take_frames(r, pos, &z);

	if (n == 0)
		return 0;
	if (!*dirty && kg_write_frames(w, z, n) < 0)
		return -1;
	*dirty = 0;
	return 0;
}

/* The profiler's cost of each task of the section (sim.h's cut). */
struct cuts {
	int64_t *c;
	size_t cap;
	int any;
	int64_t *ss, *se; /* the run as traced, kept while the other runs */
	size_t capt;
};

/* The section's runs and its sim record. */
static int
simulate(const char *name, int section, struct sim *s, struct cuts *c, struct kg_writer *w,
    const struct kg_reader *r)
{
	size_t n = sim_ntasks(s);
	int rc;

	if (c->any)
		sim_keep(s);
	if ((rc = sim_run(s, NULL)) < 0) {
		if (rc == -2)
			errmsg("%s: section %d: simulated times run past %lld ns (2^53 ns, the "
			    "format's range)", name, section, (long long)KG_TIME_MAX);
		else
			report_stuck(name, section, s, r);
		return 1;
	}
	if (!c->any)
		return kg_write_sim(w, n, sim_starts(s), sim_ends(s), NULL, NULL) < 0 ? -1 : 0;
	grow(&c->ss, &c->capt, n + 1, sizeof(*c->ss));
	c->se = xrealloc(c->se, c->capt * sizeof(*c->se));
	memcpy(c->ss, sim_starts(s), n * sizeof(*c->ss));
	memcpy(c->se, sim_ends(s), n * sizeof(*c->se));
	if (sim_run(s, c->c) < 0) {
		/* the same graph with shorter tasks: it cannot be stuck */
		report_stuck(name, section, s, r);
		return 1;
	}
	return kg_write_sim(w, n, c->ss, c->se, sim_starts(s), sim_ends(s)) < 0 ? -1 : 0;
}

static int
process(const char *path, struct gout *g, struct sim *s, struct cuts *c)
{
	struct gin in;
	int t, rc = 0, section = 0, dirty = 0;
	size_t ntask = 0;

	if (gin_open(&in, path) < 0)
		return 1;
	in.r.keep_frames = 1;
	while (rc == 0 && (t = gin_read(&in)) > 0) {
		uint64_t end = in.rec.pos + in.rec.nbytes;
		int changes = t == KG_R_HEADER || t == KG_R_SIM || t == KG_R_END;

		if (changes) {
			if (run_frames(&dirty, &g->w, &in.r, in.rec.pos) < 0 ||
			    run_flush(&g->w, &in.r, in.rec.pos) < 0) {
				rc = -1;
				break;
			}
			dirty = 1;
		} else {
			kg_writer_count(&g->w, t);
		}
		if (t == KG_R_HEADER) {
			kg_writer_follow(&g->w, &in.rec.header);
			rc = kg_write_header_tool(&g->w, &in.rec.header, PRODUCER);
			sim_begin(s, &in.rec.header);
			ntask = 0;
			c->any = 0;
		} else if (t == KG_R_PROC) {
			sim_proc(s, &in.rec.proc);
		} else if (t == KG_R_TASK) {
			sim_task(s, &in.rec.task);
			if (in.rec.task.prof > 0 || c->any) {
				if (!c->any) {
					/* the first with a cost: those before had none */
					grow(&c->c, &c->cap, ntask + 1, sizeof(*c->c));
					memset(c->c, 0, ntask * sizeof(*c->c));
					c->any = 1;
				}
				grow(&c->c, &c->cap, ntask + 1, sizeof(*c->c));
				c->c[ntask] = in.rec.task.prof;
			}
			ntask++;
		} else if (t == KG_R_EDGE) {
			sim_edge(s, &in.rec.edge);
		} else if (t == KG_R_END) {
			rc = simulate(in.name, section, s, c, &g->w, &in.r);
			if (rc == 1)
				break;
			if (rc == 0)
				rc = kg_write_end(&g->w);
			section++;
		}
		if (rc != 0)
			break;
		if (changes) {
			/* written anew above (an old sim record is dropped:
			 * this run writes its own) */
			const char *p;

			kg_reader_take_held(&in.r, end, &p);
		} else if (dirty || end - in.r.mark > RUN_MAX) {
			rc = run_flush(&g->w, &in.r, end);
			dirty = 1;
		}
		if (rc == 0 && in.r.nfr > 0) /* whole frames decompressed, some may end here */
			rc = run_frames(&dirty, &g->w, &in.r, end);
	}
	if (rc < 0) {
		errmsg("%s: %s", g->name, g->w.err);
		rc = 1;
	}
	if (t < 0 && rc == 0)
		rc = 1;
	gin_close(&in);
	return rc;
}

int
main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "output", required_argument, NULL, 'o' },
		{ "launch-queue", required_argument, NULL, 'L' },
		{ "quiet", no_argument, NULL, 'q' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 }
	};
	const char *output = NULL;
	struct gout g;
	struct sim *s;
	struct cuts cuts;
	int c, i, rc = 0;
	unsigned long lq = SIM_LAUNCH_QUEUE;
	char *end;

	cli_init("graphsim");
	while ((c = getopt_long(argc, argv, "o:qh", longopts, NULL)) != -1) {
		switch (c) {
		case 'o':
			output = optarg;
			break;
		case 'q':
			quiet = 1;
			break;
		case 'L':
			errno = 0;
			lq = strtoul(optarg, &end, 10);
			if (end == optarg || *end != '\0' || *optarg == '-' || errno != 0 ||
			    lq > 1000000) {
				errmsg("invalid --launch-queue '%s' (launches: 0 to 1000000)", optarg);
				usage_exit(usage);
			}
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
	if (gout_open(&g, output, KG_LEVEL) < 0)
		return 1;
	s = sim_new(1);
	sim_launch_queue(s, (uint32_t)lq);
	memset(&cuts, 0, sizeof(cuts));
	if (argc == 0)
		rc = process(NULL, &g, s, &cuts);
	for (i = 0; i < argc && rc == 0; i++)
		rc = process(argv[i], &g, s, &cuts);
	sim_free(s);
	free(cuts.c);
	free(cuts.ss);
	free(cuts.se);
	return gout_close(&g, rc, PRODUCER);
}
