/*
 * opmodel: fit, check and apply a GPU's model of kernel times from
 * operators and shapes (common/opmodel.h, formats/opmodel.md).
 *
 *   fit     graph streams, Kineto traces and kernel-timing sweeps in, a
 *           model file out
 *   check   a model against traces: per call, predicted against traced
 *   predict a model applied to (operator, shapes) lines
 *
 * State: fit and check hold the operator calls of all their inputs (a
 * few hundred bytes a call) and one section's GPU tasks at a time (~64
 * bytes a task); a trace is read whole by the kineto2graph program that
 * turns it into a graph stream (~40 bytes an event).
 */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <xgboost/c_api.h>

#include "cli.h"
#include "om.h"
#include "util.h"

static const char usage[] =
    "opmodel fit [-q] -o MODEL [--gpu NAME] [--sms N] [--min-us US] [--features LIST]\n"
    "       [--target ratio|time] [FILE ...]\n"
    "       opmodel check [-q] [--csv] [--min-us US] MODEL [FILE ...]\n"
    "       opmodel predict [-q] MODEL [FILE ...]";

static const char help[] =
    "Fit, check and apply a GPU's model of kernel times from operators and shapes.\n"
    "\n"
    "  fit       fit a model on graph streams or Kineto traces (recorded with\n"
    "            record_shapes) and kernel-timing sweeps (JSON lines); print what\n"
    "            was fitted\n"
    "  check     predict each operator call of the traces and compare, by class\n"
    "  predict   read lines 'OP DIMS [KERNEL]', print 'CLASS US' for each\n"
    "\n"
    "  -o, --output MODEL   fit: the model file to write\n"
    "      --gpu NAME       fit: the GPU, when the inputs do not name it\n"
    "      --sms N          fit: its multiprocessors (default: the inputs', else 132)\n"
    "      --min-us US      fit: sweep timings below US are dropped (default 40;\n"
    "                       SDPA's under 5 times its fastest call; 0 keeps all);\n"
    "                       check: only calls of US or more are summarised\n"
    "      --features LIST  fit: feature groups, comma-separated, of sizes, flops,\n"
    "                       bytes, intensity, waves, align, tile, kernel (default:\n"
    "                       all but tile)\n"
    "      --target T       fit: trees on log(time / roofline time) (ratio, the\n"
    "                       default) or on log(time) (time)\n"
    "      --csv            check: one row per call: class,kernel,traced_us,\n"
    "                       predicted_us,how,op,dims\n"
    "  -q, --quiet          no warnings\n"
    "  -h, --help           this help\n"
    "      --version        the version\n"
    "\n"
    "With no FILE, or FILE -, read standard input. See opmodel(1).\n";

enum { CMD_FIT, CMD_CHECK, CMD_PREDICT };

struct opts {
	int cmd;
	const char *output;
	struct read_opts r;
	double min_us;
	int min_us_set;
	int csv;
	unsigned feat_mask;
	int target_time;
};

static const struct { const char *name; unsigned mask; } feat_groups[] = {
	{ "sizes", 0x1f }, { "flops", 0x20 }, { "bytes", 0x40 }, { "intensity", 0x80 },
	{ "waves", 0xf00 }, { "align", 0x7000 }, { "tile", 0x8000 },
	{ "kernel", 0x30000 }
};

static int
parse_features(const char *s, unsigned *mask)
{
	char *d = xstrndup(s, strlen(s)), *tok, *save = NULL;
	size_t i;
	int ok = 1;

	*mask = 0;
	for (tok = strtok_r(d, ",", &save); tok != NULL; tok = strtok_r(NULL, ",", &save)) {
		for (i = 0; i < sizeof(feat_groups) / sizeof(feat_groups[0]); i++)
			if (strcmp(tok, feat_groups[i].name) == 0)
				break;
		if (i == sizeof(feat_groups) / sizeof(feat_groups[0]))
			ok = 0;
		else
			*mask |= feat_groups[i].mask;
	}
	free(d);
	return ok && *mask != 0 ? 0 : -1;
}

static int
cmd_fit(const struct opts *o, int argc, char **argv)
{
	struct calls cs;
	struct om_model m;
	struct fit_opts fo;
	struct out out;
	char *tree[OM_NCLASS];
	size_t ntree[OM_NCLASS];
	int i, rc = 1, nfall = 0, c;

	calls_init(&cs);
	om_model_init(&m);
	memset(tree, 0, sizeof(tree));
	if (argc == 0)
		rc = calls_read(&cs, NULL, &o->r, 0);
	for (i = 0, rc = argc == 0 ? rc : 0; i < argc && rc == 0; i++)
		rc = calls_read(&cs, argv[i], &o->r, 0);
	if (rc != 0)
		goto out;
	rc = 1;
	if (cs.gpu[0] == '\0') {
		errmsg("the inputs do not name their GPU: give --gpu NAME");
		goto out;
	}
	snprintf(m.gpu, sizeof(m.gpu), "%s", cs.gpu);
	m.sms = cs.sms > 0 ? cs.sms : 132;
	memset(&fo, 0, sizeof(fo));
	fo.nthread = 1; /* two threads spin-wait for each other on a busy machine */
	fo.rounds = 300;
	fo.depth = 6;
	fo.eta = 0.1;
	fo.min_trees = OM_MIN_TREES;
	fo.feat_mask = o->feat_mask;
	fo.cv = 1;
	fo.ratio = !o->target_time;
	if (fit_model(&cs, &fo, &m, tree, ntree) != 0)
		goto out;
	if (out_open(&out, o->output, 0) < 0)
		goto out;
	if (om_save(&m, out.fp, (const char *const *)tree, ntree) < 0) {
		errmsg("%s: write error: %s", out.path != NULL ? out.path : "stdout",
		    strerror(errno ? errno : EIO));
		out_abort(&out);
		goto out;
	}
	if (out_commit(&out) != 0)
		goto out;
	printf("model of %s, %d SMs: roofline %.0f TFLOP/s, %.0f GB/s\n", m.gpu, m.sms,
	    m.flops_s / 1e12, m.bytes_s / 1e9);
	printf("%-9s %-8s %7s %8s %8s %8s\n", "class", "how", "samples", "fit_err%", "cv_err%",
	    "p90_err%");
	for (c = 0; c < OM_NCLASS; c++) {
		const struct om_cls *k = &m.cls[c];

		if (k->kind == OM_ROOFLINE)
			nfall++;
		printf("%-9s %-8s %7lld %8.2f ", om_class_name[c],
		    k->kind == OM_TREES ? "trees" : "roofline", (long long)k->n, k->mape);
		if (k->cv_mape >= 0)
			printf("%8.2f %8.2f\n", k->cv_mape, k->p90);
		else
			printf("%8s %8.2f\n", "-", k->p90);
	}
	printf("roofline fallbacks: %d of %d classes (fewer than %d samples)\n", nfall, OM_NCLASS,
	    fo.min_trees);
	if (cs.sweep_small + cs.sweep_multi + cs.sweep_bad + cs.sweep_stall > 0) {
		char sdpa[64] = "";

		if (o->r.min_us > 0)
			snprintf(sdpa, sizeof(sdpa), ", or SDPA under %d times its fastest call",
			    SDPA_HOST);
		printf("sweep timings not used: %lld host-bound (under %g us%s), %lld of several "
		    "operators, %lld without a positive time, %lld forwards as long as their "
		    "backward\n", (long long)cs.sweep_small, o->r.min_us, sdpa,
		    (long long)cs.sweep_multi, (long long)cs.sweep_bad, (long long)cs.sweep_stall);
	}
	if (cs.unsized > 0)
		printf("calls without sizes (tensor lists unrecorded): %lld\n", (long long)cs.unsized);
	rc = close_stdout();
out:
	for (c = 0; c < OM_NCLASS; c++)
		free(tree[c]);
	om_model_release(&m);
	calls_release(&cs);
	return rc;
}

static int
load_model(const char *path, struct om_model *m)
{
	char err[256];
	FILE *fp = open_input(path);
	int rc;

	if (fp == NULL)
		return -1;
	rc = om_load(m, fp, err, sizeof(err));
	if (fp != stdin)
		fclose(fp);
	if (rc < 0)
		errmsg("%s: %s", input_name(path), err);
	return rc;
}

/* CSV field: quoted, quotes doubled. */
static void
csv_str(const char *s)
{
	putchar('"');
	for (; *s != '\0'; s++) {
		if (*s == '"')
			putchar('"');
		putchar(*s);
	}
	putchar('"');
}

struct cstat {
	int64_t n, npred;
	double traced, err, *e;
	size_t ne, cape;
};

/* A call predicted OUTLIER_PCT or more off, for check's list of them. */
#define OUTLIER_PCT 50
#define OUTLIERS 5
/* Below this a kernel's time can be its fixed cost: launch, the first
 * wave, the tail (a few us on current GPUs). */
#define LAUNCH_US 20

struct outlier {
	size_t i;
	double e, p;
};

static int
cmp_outlier(const void *a, const void *b)
{
	const struct outlier *x = a, *y = b;

	return x->e < y->e ? 1 : x->e > y->e ? -1 : x->i < y->i ? -1 : x->i > y->i;
}

/*
 * The OUTLIERS calls predicted furthest off, each with why, from its
 * roofline R (its FLOPs and bytes at the GPU's best, as its shape says
 * them), traced T and predicted P: T below R/2 cannot be that shape's
 * (a misread shape: the dims read are not the ones the kernel ran on);
 * R a fifth of T or less in a short call is a launch-bound call (its
 * time the kernel's fixed cost, which no shape tells); R a fifth of P
 * or less when P is over twice T, a model whose samples of such small
 * calls were launch-bound; else the model errs on a shape whose work
 * fits its time.
 */
static void
outliers(const struct om_model *m, const struct calls *cs, struct outlier *o, size_t n)
{
	size_t j;

	if (n == 0)
		return;
	qsort(o, n, sizeof(*o), cmp_outlier);
	printf("outliers (%d%% off or more: %zu), the worst:\n", OUTLIER_PCT, n);
	for (j = 0; j < n && j < OUTLIERS; j++) {
		const struct mcall *x = &cs->c[o[j].i];
		double r = om_roofline_us(m, &x->d), t = x->us, p = o[j].p;

		printf("  %-9s %+8.0f%%  traced %.3f us, predicted %.3f us, its work %.3f us: ",
		    om_class_name[x->d.cls], (p - t) / t * 100, t, p, r);
		if (r > 0 && t < r / 2)
			printf("a misread shape (its dims need more than the traced time)");
		else if (t < LAUNCH_US && r <= t / 5)
			printf("launch-bound (the kernel's fixed cost, which no shape tells)");
		else if (p > 2 * t && r <= p / 5)
			printf("the model's samples of such small calls were launch-bound");
		else
			printf("the model errs on this shape (its work fits its time)");
		printf("; %s %s\n", x->op != NULL && x->op[0] ? x->op : "-",
		    x->dims != NULL ? x->dims : "-");
	}
}

static int
cmd_check(const struct opts *o, int argc, char **argv)
{
	struct om_model m;
	struct calls cs;
	struct cstat st[OM_NCLASS];
	struct read_opts ro = o->r;
	double total = 0, min_us = o->min_us_set ? o->min_us : 0;
	struct outlier *out = NULL;
	size_t i, nout = 0, capout = 0;
	int c, k, rc = 1;

	if (argc < 1) {
		errmsg("check: missing the model");
		usage_exit(usage);
	}
	memset(st, 0, sizeof(st));
	calls_init(&cs);
	if (load_model(argv[0], &m) < 0)
		return 1;
	ro.gpu = NULL;
	ro.min_us = 0;
	argc--, argv++;
	for (k = 0, rc = 0; (k < argc || (argc == 0 && k == 0)) && rc == 0; k++) {
		size_t before = cs.n;

		cs.gpu[0] = '\0';
		rc = calls_read(&cs, argc == 0 ? NULL : argv[k], &ro, m.sms);
		if (rc == 0 && cs.gpu[0] != '\0' && !om_same_gpu(cs.gpu, m.gpu))
			warnmsg("%s: a trace of %s checked with a model of %s",
			    input_name(argc == 0 ? NULL : argv[k]), cs.gpu, m.gpu);
		(void)before;
	}
	if (rc != 0)
		goto out;
	rc = 1;
	if (o->csv)
		printf("class,kernel,traced_us,predicted_us,how,op,dims\n");
	for (i = 0; i < cs.n; i++) {
		const struct mcall *x = &cs.c[i];
		struct cstat *s = &st[x->d.cls];
		int via;
		double p = om_predict(&m, &x->d, &via);

		if (o->csv) {
			printf("%s,", om_class_name[x->d.cls]);
			csv_str(x->kernel);
			printf(",%.3f,", x->us);
			if (p >= 0)
				printf("%.3f", p);
			printf(",%s,", via == OM_TREES ? "trees" : via == OM_ROOFLINE ? "roofline" :
			    "none");
			csv_str(x->op);
			putchar(',');
			if (x->dims != NULL)
				csv_str(x->dims);
			putchar('\n');
		}
		if (x->us < min_us)
			continue;
		s->n++;
		s->traced += x->us;
		total += x->us;
		if (p >= 0) {
			double e = fabs(p - x->us) / x->us * 100;
			struct outlier ol = { i, e, p };

			s->npred++;
			s->err += e;
			VEC_PUSH(s->e, s->ne, s->cape, e);
			if (e >= OUTLIER_PCT)
				VEC_PUSH(out, nout, capout, ol);
		}
	}
	if (!o->csv) {
		int64_t n = 0, np = 0;
		double err = 0, tw = 0, twe = 0;

		printf("model of %s; calls of %g us or more\n", m.gpu, min_us);
		printf("%-9s %7s %7s %7s %9s %8s\n", "class", "calls", "gpu%", "predict",
		    "mean_err%", "p90_err%");
		for (c = 0; c < OM_NCLASS; c++) {
			struct cstat *s = &st[c];

			if (s->n == 0)
				continue;
			printf("%-9s %7lld %7.1f %7lld ", om_class_name[c], (long long)s->n,
			    total > 0 ? s->traced / total * 100 : 0, (long long)s->npred);
			if (s->npred > 0) {
				double *cp = xmalloc(s->ne * sizeof(double));
				size_t j, q;

				memcpy(cp, s->e, s->ne * sizeof(double));
				for (j = 1; j < s->ne; j++) /* insertion sort: small */
					for (q = j; q > 0 && cp[q - 1] > cp[q]; q--) {
						double t = cp[q];

						cp[q] = cp[q - 1], cp[q - 1] = t;
					}
				printf("%9.2f %8.2f\n", s->err / (double)s->npred,
				    cp[(size_t)floor(0.9 * (double)(s->ne - 1) + 0.5)]);
				free(cp);
			} else {
				printf("%9s %8s\n", "-", "-");
			}
			n += s->n, np += s->npred, err += s->err;
			tw += s->traced;
		}
		(void)twe;
		printf("%-9s %7lld %7.1f %7lld ", "all", (long long)n, tw > 0 ? 100.0 : 0.0,
		    (long long)np);
		if (np > 0)
			printf("%9.2f %8s\n", err / (double)np, "-");
		else
			printf("%9s %8s\n", "-", "-");
		outliers(&m, &cs, out, nout);
	}
	rc = close_stdout();
out:
	free(out);
	for (c = 0; c < OM_NCLASS; c++)
		free(st[c].e);
	calls_release(&cs);
	om_model_release(&m);
	return rc;
}

/* A line: OP DIMS [KERNEL]; DIMS a JSON list of lists. */
static int
predict_line(const struct om_model *m, char *l, const char *name, long long lno)
{
	char *op = l, *dims, *kern, *end;
	struct om_call c;
	struct om_desc d;
	int depth = 0, via;
	double p;

	l[strcspn(l, "\r\n")] = '\0';
	while (*op == ' ' || *op == '\t')
		op++;
	if (*op == '\0' || *op == '#')
		return 0;
	dims = op + strcspn(op, " \t");
	if (*dims == '\0') {
		errmsg("%s: line %lld: expected 'OP DIMS [KERNEL]'", name, lno);
		return -1;
	}
	*dims++ = '\0';
	dims += strspn(dims, " \t");
	if (*dims != '[') {
		errmsg("%s: line %lld: expected 'OP DIMS [KERNEL]'", name, lno);
		return -1;
	}
	for (end = dims; *end != '\0'; end++) {
		if (*end == '[')
			depth++;
		else if (*end == ']' && --depth == 0)
			break;
	}
	if (*end == '\0') {
		errmsg("%s: line %lld: unbalanced brackets in the dims", name, lno);
		return -1;
	}
	end++;
	kern = end + strspn(end, " \t");
	*end = '\0';
	c.op = op, c.dims = dims, c.kernel = *kern != '\0' ? kern : NULL, c.types = NULL;
	c.kind = 2 /* KG_KERN */, c.bytes = 0, c.layout = -1;
	if (om_describe(&c, m->sms, &d) < 0 || (p = om_predict(m, &d, &via)) < 0) {
		printf("%s -\n", d.cls >= 0 ? om_class_name[d.cls] : "none");
		return 0;
	}
	printf("%s %.3f\n", om_class_name[d.cls], p);
	return 0;
}

static int
cmd_predict(const struct opts *o, int argc, char **argv)
{
	struct om_model m;
	char *line = NULL;
	size_t cap = 0;
	int k, rc = 0;

	if (argc < 1) {
		errmsg("predict: missing the model");
		usage_exit(usage);
	}
	if (load_model(argv[0], &m) < 0)
		return 1;
	argc--, argv++;
	for (k = 0; (k < argc || (argc == 0 && k == 0)) && rc == 0; k++) {
		const char *path = argc == 0 ? NULL : argv[k];
		FILE *fp = open_input(path);
		long long lno = 0;

		if (fp == NULL) {
			rc = 1;
			break;
		}
		while (getline(&line, &cap, fp) > 0)
			if (predict_line(&m, line, input_name(path), ++lno) < 0) {
				rc = 1;
				break;
			}
		if (ferror(fp)) {
			errmsg("%s: %s", input_name(path), strerror(errno));
			rc = 1;
		}
		if (fp != stdin)
			fclose(fp);
	}
	free(line);
	om_model_release(&m);
	if (close_stdout() != 0)
		rc = 1;
	return rc;
}

int
main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "output", required_argument, NULL, 'o' },
		{ "gpu", required_argument, NULL, 'G' },
		{ "sms", required_argument, NULL, 'S' },
		{ "min-us", required_argument, NULL, 'M' },
		{ "features", required_argument, NULL, 'F' },
		{ "csv", no_argument, NULL, 'C' },
		{ "target", required_argument, NULL, 'T' },
		{ "quiet", no_argument, NULL, 'q' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 }
	};
	struct opts o;
	int c, target_set = 0;
	int64_t v;
	char *end;

	cli_init("opmodel");
	memset(&o, 0, sizeof(o));
	o.r.min_us = 40;
	o.feat_mask = 0x37fff; /* all but tile: measured (doc/ACCURACY.md) */
	/* the subcommand first, options after it (or --help, --version alone) */
	if (argc >= 2 && strcmp(argv[1], "fit") == 0)
		o.cmd = CMD_FIT;
	else if (argc >= 2 && strcmp(argv[1], "check") == 0)
		o.cmd = CMD_CHECK;
	else if (argc >= 2 && strcmp(argv[1], "predict") == 0)
		o.cmd = CMD_PREDICT;
	else if (argc >= 2 && (strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0)) {
		printf("usage: %s\n\n%s", usage, help);
		return close_stdout();
	} else if (argc >= 2 && strcmp(argv[1], "--version") == 0) {
		version_exit();
	} else {
		if (argc < 2)
			errmsg("missing the command: fit, check or predict");
		else
			errmsg("unknown command '%s' (fit, check or predict)", argv[1]);
		usage_exit(usage);
	}
	argc--, argv++;
	while ((c = getopt_long(argc, argv, "o:qh", longopts, NULL)) != -1) {
		switch (c) {
		case 'o':
			o.output = optarg;
			break;
		case 'G':
			if (*optarg == '\0') {
				errmsg("invalid --gpu ''");
				usage_exit(usage);
			}
			o.r.gpu = optarg;
			break;
		case 'S':
			if (parse_i64(optarg, 1, 100000, &v) < 0) {
				errmsg("invalid --sms '%s'", optarg);
				usage_exit(usage);
			}
			o.r.sms = (int)v;
			break;
		case 'M':
			o.min_us = strtod(optarg, &end);
			if (*optarg == '\0' || *end != '\0' || !(o.min_us >= 0) || !isfinite(o.min_us)) {
				errmsg("invalid --min-us '%s'", optarg);
				usage_exit(usage);
			}
			o.min_us_set = 1;
			break;
		case 'F':
			if (parse_features(optarg, &o.feat_mask) < 0) {
				errmsg("invalid --features '%s' (sizes, flops, bytes, intensity, waves, align, tile, kernel)",
				    optarg);
				usage_exit(usage);
			}
			break;
		case 'C':
			o.csv = 1;
			break;
		case 'T':
			if (strcmp(optarg, "ratio") != 0 && strcmp(optarg, "time") != 0) {
				errmsg("invalid --target '%s' (ratio or time)", optarg);
				usage_exit(usage);
			}
			o.target_time = optarg[0] == 't';
			target_set = 1;
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
	if (o.min_us_set && o.cmd == CMD_FIT)
		o.r.min_us = o.min_us;
	if (o.cmd != CMD_FIT && (o.output != NULL || o.r.gpu != NULL || o.r.sms > 0 ||
	    o.feat_mask != 0x37fff || target_set)) {
		errmsg("-o, --gpu, --sms, --features and --target are for fit");
		usage_exit(usage);
	}
	if (o.cmd != CMD_CHECK && o.csv) {
		errmsg("--csv is for check");
		usage_exit(usage);
	}
	if (o.cmd == CMD_FIT) {
		if (o.output == NULL) {
			errmsg("fit: missing -o MODEL");
			usage_exit(usage);
		}
		return cmd_fit(&o, argc, argv);
	}
	if (o.cmd == CMD_CHECK)
		return cmd_check(&o, argc, argv);
	return cmd_predict(&o, argc, argv);
}
