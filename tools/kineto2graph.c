/*
 * kineto2graph: PyTorch profiler (Kineto) JSON traces to a graph stream.
 *
 * Each input file becomes one section of the output stream. A file is
 * read whole (streaming, events kept compactly), its graph built and
 * written, and its memory released before the next file.
 */
#ifdef __linux__
#define _GNU_SOURCE /* sched_getaffinity, CPU_COUNT */
#include <sched.h>
#endif
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli.h"
#include "k2g.h"
#include "kg.h"
#include "util.h"

static const char usage[] =
    "kineto2graph [-qv] [-o FILE] [--iteration N|all] [--rank R] [--layer-ops REGEX] "
    "[--step-time MS|R=MS,...] [--profiler-cost US] [--level N] [-j N] [FILE ...]";

static const char help[] =
    "Convert PyTorch profiler (Kineto) traces, plain or gzip, into a graph stream.\n"
    "\n"
    "  -o, --output FILE      write the stream to FILE instead of stdout\n"
    "      --iteration N|all  keep ProfilerStep#N only, or every iteration (default)\n"
    "      --rank R           the rank, for traces that do not record one\n"
    "      --layer-ops REGEX  find layers among the forward ops REGEX matches\n"
    "      --step-time MS     the step time the job reports without the profiler\n"
    "                         (R=MS,...: by rank): the profiler's cost is found from it\n"
    "      --profiler-cost US the profiler's cost of one host event, microseconds\n"
    "                         (default: estimated; 0: none)\n"
    "      --level N          zstd level, -5 to 19 but 0 (default -1)\n"
    "  -j, --jobs N           convert up to N files at once (default: the CPUs\n"
    "                         it may run on)\n"
    "  -v, --verbose          print dependency coverage counts on stderr\n"
    "  -q, --quiet            no warnings\n"
    "  -h, --help             this help\n"
    "      --version          the version\n"
    "\n"
    "With no FILE, or FILE -, read standard input. See kineto2graph(1).\n";

/*
 * The cost of a profiled host event where no step time is given, and
 * the one --step-time starts from: about the median of those it finds
 * on the host-bound recordings of ../shared/gpu (PyTorch 2.11, an H100
 * host; bench/unprofiled-accuracy prints them; kineto2graph(1),
 * UNPROFILED STEP).
 */
#define PCOST_ESTIMATE 3200

/* --step-time: one for every input (rank -1), or by rank. */
struct steptime {
	int64_t rank, ns;
};

struct opts {
	const char *output;
	struct steptime *st;
	size_t nst;
	int64_t pcost;  /* --profiler-cost, ns; -1: not given */
	int verbose;
	struct build_opts b;
	int level;
	int jobs;       /* inputs converted at once */
};

static void
print_cov(const char *name, const struct kg_cov *c)
{
	size_t i;

	fprintf(stderr, "%s: %s: coverage:", progname, name);
	for (i = 0; i < c->n; i++)
		fprintf(stderr, " %s=%lld", c->name[i], (long long)c->val[i]);
	fputc('\n', stderr);
}

static void
warn_cov(const char *name, const struct kg_cov *c)
{
	size_t i;

	for (i = 0; i < c->n; i++)
		if (strncmp(c->name[i], "missing:", 8) == 0)
			warnmsg("%s: %lld events lack field %s", name,
			    (long long)c->val[i], c->name[i] + 8);
	if (kg_cov_get(c, "launch_dupcorr") > 0)
		warnmsg("%s: %lld runtime calls reuse an earlier call's correlation id "
		    "(GPU tasks paired with them by time)", name,
		    (long long)kg_cov_get(c, "launch_dupcorr"));
	if (kg_cov_get(c, "launch_unjoined") > 0)
		warnmsg("%s: %lld GPU tasks have no launch in the trace", name,
		    (long long)kg_cov_get(c, "launch_unjoined"));
}

/*
 * The profiler's cost for t's graph: calibrated by the step time given
 * for its rank, else --profiler-cost, else the estimate. 0, or -1 with
 * err set.
 */
static int
profiler_cost(const struct opts *o, struct trace *t, struct build_opts *b, char *err,
    size_t errlen)
{
	int64_t rank = t->rank >= 0 ? t->rank : o->b.rank, ustep = -1;
	size_t i;

	for (i = 0; i < o->nst; i++)
		if (o->st[i].rank < 0 || o->st[i].rank == rank)
			ustep = o->st[i].ns;
	if (o->nst > 0 && ustep < 0) {
		if (rank < 0)
			snprintf(err, errlen, "--step-time gives step times by rank, and the trace "
			    "records none (--rank R names it)");
		else
			snprintf(err, errlen, "--step-time gives no step time for rank %lld",
			    (long long)rank);
		return -1;
	}
	for (i = 0; i < t->nev && ustep > 0; i++)
		if (t->ev[i].cls == EV_OP || t->ev[i].cls == EV_RT)
			break;
	if (ustep > 0 && i == t->nev) {
		warnmsg("%s: no host task: --step-time does not apply (the profiler's cost is "
		    "on host tasks); the trace's figures are kept", t->file);
		b->pcost = -1;
		b->pcal = NULL;
		b->ustep = -1;
		return 0;
	}
	if (ustep > 0) {
		struct build_opts e = o->b;

		e.pcost = PCOST_ESTIMATE; /* where the step allows a range: nearest it */
		if (calibrate(t, &e, ustep, &b->pcost, err, errlen) < 0)
			return -1;
		b->pcal = "calibrated";
		b->ustep = ustep;
	} else if (o->pcost >= 0) {
		b->pcost = o->pcost;
		b->pcal = o->pcost > 0 ? "given" : NULL;
		b->ustep = -1;
	} else {
		b->pcost = PCOST_ESTIMATE;
		b->pcal = "estimated";
		b->ustep = -1;
	}
	return 0;
}

/* One input file: read, build, write one section. 0, or 1 on failure. */
static int
convert(const struct opts *o, const char *path, struct gout *g)
{
	const char *name = input_name(path);
	struct build_opts b;
	struct trace t;
	struct kg_cov cov;
	char err[256];
	FILE *fp;
	int rc;

	fp = open_input(path);
	if (fp == NULL)
		return 1;
	trace_init(&t, name);
	kg_cov_init(&cov);
	rc = trace_read(&t, fp, err, sizeof(err));
	if (fp != stdin)
		fclose(fp);
	if (rc < 0) {
		errmsg("%s: %s", name, err);
		rc = 1;
		goto out;
	}
	b = o->b;
	if (profiler_cost(o, &t, &b, err, sizeof(err)) < 0) {
		errmsg("%s: %s", name, err);
		rc = 1;
		goto out;
	}
	rc = graph_build(&t, &b, &g->w, &cov, err, sizeof(err));
	if (rc == -1) {
		errmsg("%s: %s", name, err);
		rc = 1;
		goto out;
	}
	if (rc == -2) {
		errmsg("%s: %s", g->name, g->w.err);
		rc = 1;
		goto out;
	}
	if (o->verbose)
		print_cov(name, &cov);
	warn_cov(name, &cov);
	rc = 0;
out:
	kg_cov_release(&cov);
	trace_release(&t);
	return rc;
}

/*
 * Several inputs at once (--jobs): worker w of nj converts inputs w,
 * w + nj, ... in turn, each into a section of its own in memory (the
 * header saying its place in the run) with what it says on standard
 * error beside it, and sends both down its pipe: a struct msg, then the
 * messages' bytes, then the section's. The parent reads them in input
 * order, worker by worker, tells the messages and writes the section's
 * compressed frames as they are: the output is the same file a single
 * process writes (sections begin frames of their own), and so is what
 * it says. An input that fails stops the run where a single process
 * would have stopped.
 */
struct msg {
	int32_t rc;
	uint64_t nerr, nsec;
};

/* All n bytes at p written to fd (out) or read from it; -1 on an error
 * or an end before them. */
static int
fd_all(int fd, void *p, size_t n, int out)
{
	char *c = p;

	while (n > 0) {
		ssize_t k = out ? write(fd, c, n) : read(fd, c, n);

		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			return -1;
		c += k, n -= (size_t)k;
	}
	return 0;
}

static void
worker(const struct opts *o, int argc, char **argv, int w, int nj, int fd, const char *oname)
{
	int i;

	for (i = w; i < argc; i += nj) {
		char *err = NULL, *sec = NULL;
		size_t nerr = 0, nsec = 0;
		FILE *fe = open_memstream(&err, &nerr), *fs = open_memstream(&sec, &nsec);
		FILE *save = stderr;
		struct gout g;
		struct msg m;

		if (fe == NULL || fs == NULL)
			_exit(3);
		memset(&g, 0, sizeof(g));
		g.name = oname;
		if (kg_writer_init(&g.w, fs, o->level) < 0)
			_exit(3);
		kg_writer_threads(&g.w, 1); /* see run */
		kg_writer_run_at(&g.w, (uint64_t)argc, (uint64_t)i);
		stderr = fe;
		m.rc = convert(o, argv[i], &g);
		if (m.rc == 0 && kg_writer_finish(&g.w) < 0) {
			errmsg("%s: %s", oname, g.w.err);
			m.rc = 1;
		}
		stderr = save;
		kg_writer_release(&g.w);
		if (fclose(fe) != 0 || fclose(fs) != 0)
			_exit(3);
		m.nerr = nerr, m.nsec = m.rc == 0 ? nsec : 0;
		if (fd_all(fd, &m, sizeof(m), 1) < 0 || fd_all(fd, err, nerr, 1) < 0 ||
		    fd_all(fd, sec, m.nsec, 1) < 0)
			_exit(3);
		free(err), free(sec);
		if (m.rc != 0)
			break;
	}
	_exit(0);
}

static int
run_jobs(const struct opts *o, int argc, char **argv, int nj, struct gout *g)
{
	pid_t *pid = xcalloc((size_t)nj, sizeof(*pid));
	int *fd = xcalloc((size_t)nj, sizeof(*fd));
	int i, w, rc = 0, started = 0;

	fflush(NULL);
	for (w = 0; w < nj; w++) {
		int p[2];

		if (pipe(p) != 0 || (pid[w] = cli_fork()) < 0) {
			errmsg("cannot start a worker: %s", strerror(errno));
			rc = 1;
			break;
		}
		if (pid[w] == 0) {
			int k;

			/* the workers fill the CPUs: an input's halves at once
			 * would only share them */
			trace_split(0);
			close(p[0]);
			for (k = 0; k < w; k++)
				close(fd[k]);
			worker(o, argc, argv, w, nj, p[1], g->name);
		}
		close(p[1]);
		fd[w] = p[0];
		started++;
	}
	for (i = 0; i < argc && rc == 0; i++) {
		struct msg m;
		char *buf;

		w = i % nj;
		if (w >= started || fd_all(fd[w], &m, sizeof(m), 0) < 0) {
			errmsg("%s: the worker converting it ended without a word",
			    input_name(argv[i]));
			rc = 1;
			break;
		}
		buf = xmalloc(m.nerr + m.nsec + 1);
		if (fd_all(fd[w], buf, m.nerr + m.nsec, 0) < 0) {
			errmsg("%s: the worker converting it ended before its graph",
			    input_name(argv[i]));
			free(buf);
			rc = 1;
			break;
		}
		fwrite(buf, 1, m.nerr, stderr);
		fflush(stderr);
		if (m.rc != 0)
			rc = 1;
		else if (kg_write_frames(&g->w, buf + m.nerr, m.nsec) < 0) {
			errmsg("%s: %s", g->name, g->w.err);
			rc = 1;
		}
		free(buf);
	}
	for (w = 0; w < started; w++) {
		int st;

		close(fd[w]);
		if (rc != 0)
			kill(pid[w], SIGKILL);
		while (waitpid(pid[w], &st, 0) < 0 && errno == EINTR)
			;
		cli_reaped(pid[w]);
		if (rc == 0 && (!WIFEXITED(st) || WEXITSTATUS(st) != 0)) {
			errmsg("a worker %s %d", WIFSIGNALED(st) ? "ended by signal" : "exited with",
			    WIFSIGNALED(st) ? WTERMSIG(st) : WEXITSTATUS(st));
			rc = 1;
		}
	}
	free(pid), free(fd);
	return rc;
}

static int
run(struct opts *o, int argc, char **argv)
{
	struct gout g;
	int i, rc = 0, nj = o->jobs;

	if (gout_open(&g, o->output, o->level) < 0)
		return 1;
	/* One thread compresses: the graph is a small part of the trace's
	 * bytes, and each more would hold its frames beside the peak of the
	 * graph's build, which must stay under a quarter of the JSON
	 * (doc/PERFORMANCE.md). */
	kg_writer_threads(&g.w, 1);
	/* one section an input: the headers say how many */
	kg_writer_run(&g.w, argc > 0 ? (uint64_t)argc : 1);
	if (nj > argc)
		nj = argc;
	for (i = 0; i < argc; i++)
		if (strcmp(argv[i], "-") == 0)
			nj = 1; /* standard input is read once, here */
	if (nj > 1) {
		rc = run_jobs(o, argc, argv, nj, &g);
		return gout_close(&g, rc, o->b.producer);
	}
	if (argc == 0)
		rc = convert(o, NULL, &g);
	for (i = 0; i < argc && rc == 0; i++)
		rc = convert(o, argv[i], &g);
	return gout_close(&g, rc, o->b.producer);
}

/*
 * A time as a decimal number of units of unit ns (1000000: ms), into
 * *ns: at least 0, at most max ns. 0, or -1.
 */
static int
parse_time(const char *s, double unit, int64_t max, int64_t *ns)
{
	char *end;
	double v;

	if (*s == '\0' || strchr("0123456789.", *s) == NULL)
		return -1;
	errno = 0;
	v = strtod(s, &end);
	if (errno != 0 || *end != '\0' || !(v >= 0) || v * unit > (double)max)
		return -1;
	*ns = (int64_t)(v * unit + 0.5);
	return 0;
}

/* --step-time MS, or R=MS,R=MS...: 0, or -1 after the message. */
static int
parse_steps(struct opts *o, const char *arg)
{
	char *copy = xstrndup(arg, strlen(arg)), *p = copy, *tok;
	size_t cap = 0, i;

	free(o->st);
	o->st = NULL;
	o->nst = 0;
	while ((tok = strsep(&p, ",")) != NULL) {
		struct steptime st = { -1, 0 };
		char *eq = strchr(tok, '=');

		if (eq != NULL) {
			*eq = '\0';
			if (parse_i64(tok, 0, INT32_MAX, &st.rank) < 0)
				goto bad;
			tok = eq + 1;
		}
		/* a step of 1 us to a day */
		if (parse_time(tok, 1e6, (int64_t)86400 * 1000000000, &st.ns) < 0 || st.ns < 1000)
			goto bad;
		if (st.rank < 0 && (o->nst > 0 || p != NULL))
			goto bad; /* MS alone, or every one with its rank */
		for (i = 0; i < o->nst; i++)
			if (o->st[i].rank == st.rank)
				goto bad;
		VEC_PUSH(o->st, o->nst, cap, st);
	}
	free(copy);
	return 0;
bad:
	errmsg("invalid --step-time '%s' (milliseconds: MS, or R=MS,... by rank, each rank once)",
	    arg);
	free(copy);
	return -1;
}

/* The CPUs this process may run on (a Slurm step's, a taskset's), 1 to 64. */
static int
cpus(void)
{
	long n = -1;
#ifdef __linux__
	cpu_set_t set;

	if (sched_getaffinity(0, sizeof(set), &set) == 0)
		n = CPU_COUNT(&set);
#endif
	if (n <= 0)
		n = sysconf(_SC_NPROCESSORS_ONLN);
	return n > 0 ? (n < 64 ? (int)n : 64) : 1;
}

int
main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "output", required_argument, NULL, 'o' },
		{ "iteration", required_argument, NULL, 'I' },
		{ "rank", required_argument, NULL, 'R' },
		{ "layer-ops", required_argument, NULL, 'Y' },
		{ "step-time", required_argument, NULL, 'S' },
		{ "profiler-cost", required_argument, NULL, 'P' },
		{ "level", required_argument, NULL, 'L' },
		{ "jobs", required_argument, NULL, 'j' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "quiet", no_argument, NULL, 'q' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 }
	};
	struct opts o;
	regex_t re;
	int c, rc;
	int64_t v;

	cli_init("kineto2graph");
	memset(&o, 0, sizeof(o));
	o.b.all_iters = 1;
	o.b.rank = -1;
	o.b.producer = "kineto2graph " KG_VERSION;
	o.level = KG_LEVEL;
	o.jobs = cpus();
	o.pcost = -1;
	o.b.pcost = -1;
	while ((c = getopt_long(argc, argv, "o:j:vqh", longopts, NULL)) != -1) {
		switch (c) {
		case 'o':
			o.output = optarg;
			break;
		case 'I':
			if (strcmp(optarg, "all") == 0) {
				o.b.all_iters = 1;
			} else if (parse_i64(optarg, 0, INT32_MAX, &v) == 0) {
				o.b.all_iters = 0;
				o.b.iter = v;
			} else {
				errmsg("invalid iteration '%s' (a step number or 'all')", optarg);
				usage_exit(usage);
			}
			break;
		case 'Y':
			if (o.b.layer_ops != NULL)
				regfree(&re);
			if ((rc = regcomp(&re, optarg, REG_EXTENDED | REG_NOSUB)) != 0) {
				char why[128];

				regerror(rc, &re, why, sizeof(why));
				errmsg("invalid --layer-ops '%s': %s", optarg, why);
				usage_exit(usage);
			}
			o.b.layer_ops = &re;
			break;
		case 'S':
			if (parse_steps(&o, optarg) < 0)
				usage_exit(usage);
			break;
		case 'P':
			if (parse_time(optarg, 1000, 1000000000, &v) < 0) {
				errmsg("invalid --profiler-cost '%s' (microseconds, 0 to 1000000)", optarg);
				usage_exit(usage);
			}
			o.pcost = v;
			break;
		case 'R':
			if (parse_i64(optarg, 0, INT32_MAX, &v) < 0) {
				errmsg("invalid rank '%s'", optarg);
				usage_exit(usage);
			}
			o.b.rank = v;
			break;
		case 'L':
			if (parse_i64(optarg, -5, 19, &v) < 0 || v == 0) {
				errmsg("invalid level '%s' (-5 to 19 but 0)", optarg);
				usage_exit(usage);
			}
			o.level = (int)v;
			break;
		case 'j':
			if (parse_i64(optarg, 1, 64, &v) < 0) {
				errmsg("invalid --jobs '%s' (1 to 64)", optarg);
				usage_exit(usage);
			}
			o.jobs = (int)v;
			break;
		case 'v':
			o.verbose = 1;
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
	if (o.b.rank >= 0 && argc > 1) {
		errmsg("--rank names the rank of one trace, not of %d", argc);
		usage_exit(usage);
	}
	if (o.nst > 0 && o.pcost >= 0) {
		errmsg("--step-time and --profiler-cost exclude each other");
		usage_exit(usage);
	}
	rc = run(&o, argc, argv);
	free(o.st);
	if (o.b.layer_ops != NULL)
		regfree(&re);
	return rc;
}
