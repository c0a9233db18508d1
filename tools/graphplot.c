/*
 * graphplot: graphstat's CSV as an SVG picture, with no runtime
 * dependency: the breakdown as stacked bars per rank and iteration (or
 * per point of a pipelines sweep), utilization over time as lines, the
 * critical path's time by kind as stacked bars. The input's header says
 * which picture it is.
 *
 * State: the input's rows, as the numbers the picture needs (a few
 * dozen bytes a row), since the scale depends on all of them.
 */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "util.h"

static const char usage[] = "graphplot [--all] [--against COLUMN] [--title TEXT] [-o FILE] [FILE]";

static const char help[] =
    "Draw graphstat's CSV as an SVG picture: the breakdown (graphstat --csv,\n"
    "or a pipelines sweep), utilization over time (graphstat --util), or the\n"
    "critical path by kind (graphstat --critical --csv).\n"
    "\n"
    "      --all         every rank's bars, not only the job's\n"
    "      --against COLUMN  a sweep's median step (and MFU) against one of its\n"
    "                    columns, a point per configuration\n"
    "      --title TEXT  the picture's title\n"
    "  -o FILE           write to FILE (made whole or not at all)\n"
    "  -h, --help        this help\n"
    "      --version     the version\n"
    "\n"
    "With no FILE, or FILE -, read standard input. See graphplot(1).\n";

enum kind { K_BREAKDOWN, K_SWEEP, K_UTIL, K_CRITICAL };

#define MAXSEG 6
#define WIDTH0 640
#define LEFT0 150  /* the labels' column, at least */
#define CHARW 7.6  /* px a character at font-size 12, at most about (DejaVu Sans' digits) */
#define RIGHT 24
#define BAR 18
#define GAP 6

struct bar {
	char *label;
	double seg[MAXSEG]; /* ms */
	int job;
	/* a sweep's point: each iteration's parts, step (ms), MFU (-1 none)
	 * and measured step (ms, -1 none); the value of the column the
	 * chart is against, and the other columns' (the series) */
	double (*its)[MAXSEG];
	double *step, *mfu, *meas;
	size_t nit, capit, capstep, capmfu, capmeas;
	double lo, hi;      /* the iterations' range of the step, ms */
	char *x, *series;
};

struct pt {
	double x, y;
};

struct series {
	char *label;
	struct pt *p;
	size_t n, cap;
};

struct plot {
	int kind;
	const char *title;
	const char *against; /* --against: a sweep's column */
	int all;
	struct bar *b;
	size_t nb, capb;
	struct series *s;
	size_t ns, caps;
	const char *const *segname;
	const char *const *segcolour;
	int nseg;
	const char *what;
};

/* The picture's width and its labels' column: grown so that no label is
 * cut off (fit_labels), the plot's own width kept. */
static int WIDTH = WIDTH0, LEFT = LEFT0;

static const char *const bd_name[] = { "exposed compute", "overlapped", "exposed communication", "other" };
static const char *const bd_colour[] = { "#4e79a7", "#59a14f", "#e15759", "#bab0ac" };
static const char *const cp_key[] = { "compute", "communication", "host", "launch", "wait", "idle" };
static const char *const cp_name[] = { "compute", "communication", "host", "launch latency",
	"waiting on another rank", "idle" };
static const char *const cp_colour[] = { "#4e79a7", "#e15759", "#f28e2b", "#edc948", "#b07aa1",
	"#bab0ac" };
static const char *const line_colour[] = { "#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f",
	"#edc948", "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac" };

/* Split a CSV line in place: quoted fields, "" for a quote. */
static size_t
split(char *line, char **f, size_t max)
{
	size_t n = 0;
	char *p = line, *w;

	while (n < max) {
		f[n++] = w = p;
		if (*p == '"') {
			for (p++;; p++) {
				if (*p == '"' && p[1] == '"')
					*w++ = '"', p++;
				else if (*p == '"') {
					p++;
					break;
				} else if (*p == '\0')
					break;
				else
					*w++ = *p;
			}
		} else {
			while (*p != ',' && *p != '\0')
				*w++ = *p++;
		}
		if (*p != ',') {
			*w = '\0';
			break;
		}
		*w = '\0';
		p++;
	}
	return n;
}

static int
col(char **h, size_t n, const char *name)
{
	for (size_t i = 0; i < n; i++)
		if (strcmp(h[i], name) == 0)
			return (int)i;
	return -1;
}

/* A number field: ns to ms, or a plain number; -1 on junk. */
static int
num(const char *s, double *v)
{
	char *end;

	errno = 0;
	if (*s == '\0')
		return -1;
	*v = strtod(s, &end);
	return *end != '\0' || errno != 0 || !isfinite(*v) ? -1 : 0;
}

static void
svg_text(FILE *f, const char *s)
{
	for (; *s; s++) {
		if (*s == '<')
			fputs("&lt;", f);
		else if (*s == '>')
			fputs("&gt;", f);
		else if (*s == '&')
			fputs("&amp;", f);
		else if (*s == '"')
			fputs("&quot;", f);
		else
			putc(*s, f);
	}
}

/* A step of 1, 2 or 5 times a power of ten giving about five ticks up to max. */
static double
tick(double max)
{
	double e, m;

	if (max <= 0)
		return 1;
	e = pow(10, floor(log10(max / 5)));
	m = max / 5 / e;
	return (m < 1.5 ? 1 : m < 3.5 ? 2 : m < 7.5 ? 5 : 10) * e;
}

/* Width of a legend item: the key, the name at ~7.2 px a character, a gap. */
static int
item_w(const char *name)
{
	return 16 + (int)(7.2 * (double)strlen(name)) + 18;
}

/*
 * The legend from y on, wrapped at the plot's width: n names and colours,
 * as boxes or (line) short strokes. Returns the rows it took; with f NULL,
 * draws nothing.
 */
static int
legend(FILE *f, const char *const *name, const char *const *colour, int n, int line, int y)
{
	int x = LEFT, rows = 1;

	for (int i = 0; i < n; i++) {
		int w = item_w(name[i]);

		if (x + w > WIDTH - RIGHT && x > LEFT) {
			x = LEFT;
			y += 18;
			rows++;
		}
		if (f != NULL) {
			if (line)
				fprintf(f, "<rect x=\"%d\" y=\"%d\" width=\"12\" height=\"3\" fill=\"%s\"/>",
				    x, y - 5, colour[i]);
			else
				fprintf(f, "<rect x=\"%d\" y=\"%d\" width=\"12\" height=\"12\" fill=\"%s\"/>",
				    x, y - 10, colour[i]);
			fprintf(f, "<text x=\"%d\" y=\"%d\">", x + 16, y);
			svg_text(f, name[i]);
			fputs("</text>\n", f);
		}
		x += w;
	}
	return rows;
}

/* Pixels text of n characters takes at font-size 12 (bold 15: scale 1.35). */
static int
text_w(const char *s, double scale)
{
	return (int)ceil(CHARW * scale * (double)strlen(s));
}

/*
 * The labels' column wide enough for the longest of the n labels
 * (right-aligned at LEFT - 6, from x 6 on), at least left0; the picture
 * as much wider, and wide enough for its title and subtitle.
 */
static void
fit(const struct plot *p, const char *const *label, size_t n, const char *sub, int left0)
{
	int w = 0, t;

	for (size_t i = 0; i < n; i++)
		if ((t = text_w(label[i], 1)) > w)
			w = t;
	LEFT = left0 > 12 + w ? left0 : 12 + w;
	WIDTH = LEFT + (WIDTH0 - LEFT0);
	t = 24 + text_w(p->title != NULL ? p->title : p->what, 1.35);
	if (t > WIDTH)
		WIDTH = t;
	t = 24 + text_w(sub, 1);
	if (t > WIDTH)
		WIDTH = t;
}

static void
head(FILE *f, const struct plot *p, int height, const char *sub)
{
	fprintf(f, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" "
	    "viewBox=\"0 0 %d %d\" font-family=\"DejaVu Sans, Helvetica, Arial, sans-serif\" "
	    "font-size=\"12\">\n<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n",
	    WIDTH, height, WIDTH, height);
	fputs("<text x=\"12\" y=\"22\" font-size=\"15\" font-weight=\"bold\">", f);
	svg_text(f, p->title != NULL ? p->title : p->what);
	fputs("</text>\n<text x=\"12\" y=\"40\" fill=\"#555\">", f);
	svg_text(f, sub);
	fputs("</text>\n", f);
}

/* x axis at y from 0 to max (ms), plot area [LEFT, WIDTH - RIGHT). */
/* The axis' end: max rounded up to a whole tick. */
static double
axis_max(double max)
{
	double t = tick(max);

	return max <= 0 ? 1 : ceil(max / t * (1 - 1e-9)) * t;
}

static void
xaxis(FILE *f, double max, int y0, int y1, const char *label)
{
	double t = tick(max), v;
	int w = WIDTH - LEFT - RIGHT;

	for (v = 0; v <= max * (1 + 1e-9); v += t) {
		double x = LEFT + v / max * w;

		fprintf(f, "<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\" stroke=\"#ddd\"/>"
		    "<text x=\"%.1f\" y=\"%d\" text-anchor=\"middle\">%g</text>\n", x, y0, x, y1 + 4,
		    x, y1 + 18, v);
	}
	fprintf(f, "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"#333\"/>\n", LEFT, y1,
	    WIDTH - RIGHT, y1);
	fprintf(f, "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\">", LEFT + w / 2, y1 + 36);
	svg_text(f, label);
	fputs("</text>\n", f);
}

static void
draw_bars(FILE *f, const struct plot *p)
{
	size_t i, n = 0, k;
	int jobs = 0, y, top, height, lr;
	double max = 0;
	char sub[160];

	for (i = 0; i < p->nb; i++)
		jobs |= p->b[i].job;
	for (i = 0; i < p->nb; i++) {
		double t = 0;

		if (jobs && !p->all && !p->b[i].job)
			continue;
		for (k = 0; k < (size_t)p->nseg; k++)
			t += p->b[i].seg[k];
		if (p->b[i].nit > 1 && p->b[i].hi > t)
			t = p->b[i].hi;
		if (t > max)
			max = t;
		n++;
	}
	max = axis_max(max);
	snprintf(sub, sizeof(sub), "%s%s", p->kind == K_CRITICAL ?
	    "time on the critical path, by kind, per iteration" : p->kind == K_SWEEP ?
	    "each point's median iteration (the job's slowest rank), simulated; the line: "
	    "the iterations' range" : "per rank and iteration, simulated where the graph has it",
	    jobs && !p->all && p->kind == K_BREAKDOWN ? "; the job rows" : "");
	{
		const char **lab = xmalloc((p->nb + 1) * sizeof(*lab));
		size_t nl = 0;

		for (i = 0; i < p->nb; i++)
			if (!jobs || p->all || p->b[i].job)
				lab[nl++] = p->b[i].label;
		fit(p, lab, nl, sub, LEFT0);
		free(lab);
	}
	lr = legend(NULL, p->segname, p->segcolour, p->nseg, 0, 0);
	top = 58 + 18 * lr;
	height = top + (int)n * (BAR + GAP) + 56;
	head(f, p, height, sub);
	legend(f, p->segname, p->segcolour, p->nseg, 0, 58 + 12);
	y = top;
	for (i = 0; i < p->nb; i++) {
		double x = LEFT, total = 0;

		if (jobs && !p->all && !p->b[i].job)
			continue;
		fprintf(f, "<text x=\"%d\" y=\"%d\" text-anchor=\"end\">", LEFT - 6, y + BAR - 5);
		svg_text(f, p->b[i].label);
		fputs("</text>\n", f);
		for (k = 0; k < (size_t)p->nseg; k++) {
			double w = p->b[i].seg[k] / max * (WIDTH - LEFT - RIGHT);

			total += p->b[i].seg[k];
			if (w <= 0)
				continue;
			fprintf(f, "<rect x=\"%.2f\" y=\"%d\" width=\"%.2f\" height=\"%d\" fill=\"%s\">"
			    "<title>", x, y, w, BAR, p->segcolour[k]);
			svg_text(f, p->segname[k]);
			fprintf(f, ": %.3f ms</title></rect>\n", p->b[i].seg[k]);
			x += w;
		}
		if (p->b[i].nit > 1) { /* the iterations' range */
			double a = LEFT + p->b[i].lo / max * (WIDTH - LEFT - RIGHT);
			double z = LEFT + p->b[i].hi / max * (WIDTH - LEFT - RIGHT);
			int m = y + BAR / 2;

			fprintf(f, "<path d=\"M%.2f %dV%dM%.2f %dH%.2fM%.2f %dV%d\" stroke=\"#222\" "
			    "fill=\"none\"><title>%zu iterations: %.3f to %.3f ms</title></path>\n",
			    a, m - 4, m + 4, a, m, z, z, m - 4, m + 4, p->b[i].nit, p->b[i].lo,
			    p->b[i].hi);
		}
		(void)total;
		y += BAR + GAP;
	}
	xaxis(f, max, top - 4, y, "ms");
	fputs("</svg>\n", f);
}

static void
draw_lines(FILE *f, const struct plot *p, const char *sub)
{
	size_t i, j, shown = p->ns < 10 ? p->ns : 10;
	const char *names[10];
	double max = 0;
	int lr, top, plot_h = 220, w = WIDTH - LEFT - RIGHT, height;

	for (i = 0; i < shown; i++)
		names[i] = p->s[i].label;
	fit(p, NULL, 0, sub, LEFT0);
	w = WIDTH - LEFT - RIGHT;
	lr = legend(NULL, names, line_colour, (int)shown, 1, 0);
	top = 58 + 18 * lr;
	height = top + plot_h + 56;
	for (i = 0; i < shown; i++)
		for (j = 0; j < p->s[i].n; j++)
			if (p->s[i].p[j].x > max)
				max = p->s[i].p[j].x;
	max = axis_max(max);
	head(f, p, height, sub);
	legend(f, names, line_colour, (int)shown, 1, 58 + 12);
	/* y axis: 0-100 % */
	for (int v = 0; v <= 100; v += 25) {
		int yy = top + plot_h - v * plot_h / 100;

		fprintf(f, "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"#ddd\"/>"
		    "<text x=\"%d\" y=\"%d\" text-anchor=\"end\">%d%%</text>\n", LEFT, yy,
		    WIDTH - RIGHT, yy, LEFT - 6, yy + 4, v);
	}
	fprintf(f, "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\" transform=\"rotate(-90 %d %d)\">"
	    "GPU busy</text>\n", LEFT - 48, top + plot_h / 2, LEFT - 48, top + plot_h / 2);
	for (i = 0; i < shown; i++) {
		/* simulated dashed: it often lies on the measured line */
		fprintf(f, "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"1.5\"%s points=\"",
		    line_colour[i], strstr(p->s[i].label, "simulated") ? " stroke-dasharray=\"5,3\"" : "");
		for (j = 0; j < p->s[i].n; j++)
			fprintf(f, "%s%.1f,%.1f", j ? " " : "", LEFT + p->s[i].p[j].x / max * w,
			    top + plot_h - p->s[i].p[j].y * plot_h);
		fputs("\"/>\n", f);
	}
	xaxis(f, max, top, top + plot_h, "ms from the iteration's start (1 ms windows)");
	fputs("</svg>\n", f);
}

/*
 * More series than four (ranks): their mean per iteration and view, as
 * new series in q (p's own otherwise, with --all). Returns the subtitle.
 */
static const char *
util_series(const struct plot *p, struct plot *q)
{
	size_t i, j, k;

	if (p->all || p->ns <= 4) {
		*q = *p;
		return p->ns > 10 ? "share of each 1 ms window with a GPU task running; the first 10 series" :
		    "share of each 1 ms window with a GPU task running";
	}
	memset(q, 0, sizeof(*q));
	q->title = p->title;
	q->what = p->what;
	for (i = 0; i < p->ns; i++) {
		/* "rank R, iter I, VIEW" -> "iter I, VIEW" */
		const char *key = strstr(p->s[i].label, ", ") ? strstr(p->s[i].label, ", ") + 2 :
		    p->s[i].label;
		struct series *s = NULL;

		for (k = 0; k < q->ns; k++)
			if (strcmp(q->s[k].label, key) == 0)
				s = &q->s[k];
		if (s == NULL) {
			struct series x = { xstrndup(key, strlen(key)), NULL, 0, 0 };

			VEC_PUSH(q->s, q->ns, q->caps, x);
			s = &q->s[q->ns - 1];
		}
		for (j = 0; j < p->s[i].n; j++) {
			if (j >= s->n) {
				struct pt z = { p->s[i].p[j].x, 0 };

				VEC_PUSH(s->p, s->n, s->cap, z);
			}
			s->p[j].y += p->s[i].p[j].y; /* summed here, divided below */
		}
	}
	for (k = 0; k < q->ns; k++) {
		size_t *cnt = xcalloc(q->s[k].n + 1, sizeof(*cnt));

		for (i = 0; i < p->ns; i++) {
			const char *key = strstr(p->s[i].label, ", ") ? strstr(p->s[i].label, ", ") + 2 :
			    p->s[i].label;

			if (strcmp(key, q->s[k].label) == 0)
				for (j = 0; j < p->s[i].n; j++)
					cnt[j]++;
		}
		for (j = 0; j < q->s[k].n; j++)
			q->s[k].p[j].y /= (double)cnt[j];
		free(cnt);
	}
	return "busy share of each 1 ms window, the mean of the ranks (--all: each)";
}

static int
cmp_dbl(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* The median of the known (>= 0) of v[0..n); -1 none. */
static double
dmedian(const double *v, size_t n)
{
	double *w = xmalloc((n + 1) * sizeof(*w));
	size_t i, k = 0;
	double m;

	for (i = 0; i < n; i++)
		if (v[i] >= 0)
			w[k++] = v[i];
	if (k > 1)
		qsort(w, k, sizeof(*w), cmp_dbl);
	m = k == 0 ? -1 : k % 2 ? w[k / 2] : (w[k / 2 - 1] + w[k / 2]) / 2;
	free(w);
	return m;
}

/* Is s a number (for ordering the x values)? */
static int
isnum(const char *s, double *v)
{
	return num(s, v) == 0;
}

/*
 * One panel of the sweep chart from y0, h high: for each series, the
 * points' values (val: step or MFU, per point), the range as an error
 * bar, joined in x order; measured steps, where there are, as hollow
 * diamonds. what picks the value: 0 the step, 1 MFU (%).
 */
static void
sweep_panel(FILE *f, const struct plot *p, char **xs, size_t nx, char **ser, size_t nser,
    int what, int y0, int h, const char *ylabel)
{
	double max = 0, v, lo, hi, t;
	int w = WIDTH - LEFT - RIGHT;
	size_t i, j, k;

#define XPOS(j) (LEFT + ((double)(j) + 0.5) * w / (double)nx)
	for (i = 0; i < p->nb; i++) {
		const struct bar *b = &p->b[i];

		v = what ? 100 * dmedian(b->mfu, b->nit) : b->hi;
		for (j = 0; !what && j < b->nit; j++)
			if (b->meas[j] > v)
				v = b->meas[j];
		for (j = 0; what && j < b->nit; j++)
			if (100 * b->mfu[j] > v)
				v = 100 * b->mfu[j];
		if (v > max)
			max = v;
	}
	max = axis_max(max);
	t = tick(max);
	for (v = 0; v <= max * (1 + 1e-9); v += t) {
		double yy = y0 + h - v / max * h;

		fprintf(f, "<line x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\" stroke=\"#ddd\"/>"
		    "<text x=\"%d\" y=\"%.1f\" text-anchor=\"end\">%g</text>\n", LEFT, yy,
		    WIDTH - RIGHT, yy, LEFT - 6, yy + 4, v);
	}
	fprintf(f, "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\" transform=\"rotate(-90 %d %d)\">",
	    LEFT - 48, y0 + h / 2, LEFT - 48, y0 + h / 2);
	svg_text(f, ylabel);
	fputs("</text>\n", f);
	fprintf(f, "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"#333\"/>\n", LEFT,
	    y0 + h, WIDTH - RIGHT, y0 + h);
	for (k = 0; k < nser; k++) {
		const char *colour = line_colour[k % 10];
		int first = 1;

		fprintf(f, "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"1.5\" points=\"", colour);
		for (j = 0; j < nx; j++)
			for (i = 0; i < p->nb; i++) {
				const struct bar *b = &p->b[i];

				if (strcmp(b->x, xs[j]) != 0 || strcmp(b->series, ser[k]) != 0)
					continue;
				v = what ? 100 * dmedian(b->mfu, b->nit) : dmedian(b->step, b->nit);
				if (v < 0)
					continue;
				fprintf(f, "%s%.1f,%.1f", first ? "" : " ", XPOS(j), y0 + h - v / max * h);
				first = 0;
			}
		fputs("\"/>\n", f);
		for (j = 0; j < nx; j++)
			for (i = 0; i < p->nb; i++) {
				const struct bar *b = &p->b[i];
				double x = XPOS(j), m;

				if (strcmp(b->x, xs[j]) != 0 || strcmp(b->series, ser[k]) != 0)
					continue;
				v = what ? 100 * dmedian(b->mfu, b->nit) : dmedian(b->step, b->nit);
				if (v < 0)
					continue;
				lo = hi = v;
				for (size_t q = 0; q < b->nit; q++) {
					double u = what ? 100 * b->mfu[q] : b->step[q];

					if (u >= 0 && u < lo)
						lo = u;
					if (u > hi)
						hi = u;
				}
				if (hi > lo)
					fprintf(f, "<path d=\"M%.1f %.1fV%.1fM%.1f %.1fH%.1fM%.1f %.1fH%.1f\" "
					    "stroke=\"%s\" fill=\"none\"/>\n", x, y0 + h - lo / max * h,
					    y0 + h - hi / max * h, x - 4, y0 + h - lo / max * h, x + 4, x - 4,
					    y0 + h - hi / max * h, x + 4, colour);
				fprintf(f, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"3.5\" fill=\"%s\"><title>",
				    x, y0 + h - v / max * h, colour);
				svg_text(f, b->label);
				fprintf(f, ": %.3f%s (%zu iterations, %.3f to %.3f)</title></circle>\n", v,
				    what ? " %" : " ms", b->nit, lo, hi);
				if (!what && (m = dmedian(b->meas, b->nit)) >= 0)
					fprintf(f, "<path d=\"M%.1f %.1fl5 5l-5 5l-5 -5z\" fill=\"none\" "
					    "stroke=\"#222\"><title>measured: %.3f ms</title></path>\n", x,
					    y0 + h - m / max * h - 5, m);
			}
	}
#undef XPOS
}

/* Values v[0..n) in a list of distinct ones, made if new. */
static size_t
distinct(char ***list, size_t *n, size_t *cap, const char *v)
{
	for (size_t i = 0; i < *n; i++)
		if (strcmp((*list)[i], v) == 0)
			return i;
	grow(list, cap, *n + 1, sizeof(**list));
	(*list)[*n] = (char *)v;
	return (*n)++;
}

/*
 * A sweep against one of its columns: the median step of each point
 * (its iterations' range as an error bar), a line a series (the other
 * columns' values), and MFU in a panel below where the sweep has it.
 */
static void
draw_sweep(FILE *f, const struct plot *p)
{
	char **xs = NULL, **ser = NULL, sub[256];
	size_t nx = 0, capx = 0, nser = 0, caps = 0, i, j;
	int lr, top, ph = 200, height, hasmfu = 0, hasmeas = 0, w;
	const char *names[11], *colours[11];

	for (i = 0; i < p->nb; i++) {
		distinct(&xs, &nx, &capx, p->b[i].x);
		distinct(&ser, &nser, &caps, p->b[i].series);
		hasmfu |= dmedian(p->b[i].mfu, p->b[i].nit) >= 0;
		hasmeas |= dmedian(p->b[i].meas, p->b[i].nit) >= 0;
	}
	/* numbers in ascending order; else as they came */
	for (i = 1; i < nx; i++) {
		double a, b;

		for (j = i; j > 0 && isnum(xs[j - 1], &a) && isnum(xs[j], &b) && a > b; j--) {
			char *t = xs[j];

			xs[j] = xs[j - 1], xs[j - 1] = t;
		}
	}
	snprintf(sub, sizeof(sub), "each point's median iteration (the job's slowest rank), "
	    "simulated; bars: the iterations' range");
	fit(p, NULL, 0, sub, 80);
	w = WIDTH - LEFT - RIGHT;
	for (i = 0; i < nser && i < 10; i++) {
		names[i] = ser[i][0] != '\0' ? ser[i] : "step";
		colours[i] = line_colour[i];
	}
	if (hasmeas) {
		names[i] = "measured (hollow)";
		colours[i++] = "#222";
	}
	lr = legend(NULL, names, colours, (int)i, 1, 0);
	top = 58 + 18 * lr;
	height = top + ph + (hasmfu ? 36 + ph : 0) + 56;
	head(f, p, height, sub);
	legend(f, names, colours, (int)i, 1, 58 + 12);
	sweep_panel(f, p, xs, nx, ser, nser < 10 ? nser : 10, 0, top, ph, "step, ms");
	if (hasmfu)
		sweep_panel(f, p, xs, nx, ser, nser < 10 ? nser : 10, 1, top + ph + 36, ph, "MFU, %");
	for (j = 0; j < nx; j++) {
		fprintf(f, "<text x=\"%.1f\" y=\"%d\" text-anchor=\"middle\">",
		    LEFT + ((double)j + 0.5) * w / (double)nx, height - 38);
		svg_text(f, xs[j]);
		fputs("</text>\n", f);
	}
	fprintf(f, "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\">", LEFT + w / 2, height - 20);
	svg_text(f, p->against);
	fputs("</text>\n</svg>\n", f);
	free(xs);
	free(ser);
}

static void
plot_release(struct plot *p)
{
	for (size_t i = 0; i < p->nb; i++) {
		free(p->b[i].label);
		free(p->b[i].its);
		free(p->b[i].step);
		free(p->b[i].mfu);
		free(p->b[i].meas);
		free(p->b[i].x);
		free(p->b[i].series);
	}
	for (size_t i = 0; i < p->ns; i++) {
		free(p->s[i].label);
		free(p->s[i].p);
	}
	free(p->b);
	free(p->s);
}

/* The bar labelled label, made if new. */
static struct bar *
bar_of(struct plot *p, const char *label, int job)
{
	struct bar b;

	for (size_t i = p->nb; i-- > 0;)
		if (strcmp(p->b[i].label, label) == 0)
			return &p->b[i];
	memset(&b, 0, sizeof(b));
	b.label = xstrndup(label, strlen(label));
	b.job = job;
	VEC_PUSH(p->b, p->nb, p->capb, b);
	return &p->b[p->nb - 1];
}

#define MAXF 64

/* A sweep point's label: its columns' names and values but column skip. */
static void
point_label(char **h, char **f, int n, int skip, char *label, size_t len)
{
	size_t o = 0;
	int i;

	label[0] = '\0';
	for (i = 0; i < n; i++) {
		if (i == skip || o >= len)
			continue;
		o += (size_t)snprintf(label + o, len - o, "%s%s %s", o ? ", " : "", h[i], f[i]);
	}
}

/*
 * A sweep's points: each bar's parts those of its median iteration (of
 * an even count, the shorter of the middle two: an iteration that ran),
 * its range the iterations' shortest and longest steps.
 */
static void
sweep_points(struct plot *p)
{
	for (size_t i = 0; i < p->nb; i++) {
		struct bar *b = &p->b[i];
		size_t *o, j, k, t;

		if (b->nit == 0)
			continue;
		o = xmalloc(b->nit * sizeof(*o));
		for (j = 0; j < b->nit; j++)
			o[j] = j;
		for (j = 1; j < b->nit; j++) /* by step: few iterations */
			for (k = j; k > 0 && b->step[o[k - 1]] > b->step[o[k]]; k--)
				t = o[k], o[k] = o[k - 1], o[k - 1] = t;
		memcpy(b->seg, b->its[o[(b->nit - 1) / 2]], sizeof(b->seg));
		b->lo = b->step[o[0]];
		b->hi = b->step[o[b->nit - 1]];
		free(o);
	}
}

/* Read the CSV into p: 0, or 1 after the message. */
static int
load(struct plot *p, FILE *in, const char *name)
{
	char *line = NULL, *h[MAXF], *f[MAXF], *hline = NULL;
	size_t cap = 0, nh, nf, lineno = 1;
	ssize_t len;
	int c[8], rc = 0, i, cmfu = -1, cmeas = -1, cx = -1;

	if ((len = getline(&line, &cap, in)) <= 0) {
		errmsg("%s: %s", name, ferror(in) ? strerror(errno) : "empty input");
		free(line);
		return 1;
	}
	if (line[len - 1] == '\n')
		line[--len] = '\0';
	hline = xstrndup(line, (size_t)len);
	nh = split(hline, h, MAXF);
	if (col(h, nh, "kind") >= 0 && col(h, nh, "duration_ns") >= 0 && col(h, nh, "path") >= 0) {
		p->kind = K_CRITICAL;
		p->what = "Critical path";
		c[0] = col(h, nh, "path"), c[1] = col(h, nh, "iteration"), c[2] = col(h, nh, "kind");
		c[3] = col(h, nh, "duration_ns");
		p->segname = cp_name, p->segcolour = cp_colour, p->nseg = 6;
	} else if (col(h, nh, "window_ms") >= 0 && col(h, nh, "busy") >= 0) {
		p->kind = K_UTIL;
		p->what = "GPU utilization";
		c[0] = col(h, nh, "rank"), c[1] = col(h, nh, "iteration"), c[2] = col(h, nh, "view");
		c[3] = col(h, nh, "window_ms"), c[4] = col(h, nh, "busy");
	} else if (col(h, nh, "exposed_compute_ns") >= 0 && col(h, nh, "rank") >= 0) {
		p->kind = col(h, nh, "dp") == 0 ? K_SWEEP : K_BREAKDOWN;
		p->what = p->kind == K_SWEEP ? "Sweep: iteration time and breakdown" : "Iteration breakdown";
		c[0] = col(h, nh, "rank"), c[1] = col(h, nh, "iteration");
		c[2] = col(h, nh, "exposed_compute_ns"), c[3] = col(h, nh, "overlapped_ns");
		c[4] = col(h, nh, "exposed_comm_ns"), c[5] = col(h, nh, "other_ns");
		c[6] = col(h, nh, "rank"); /* the sweep's values precede it */
		p->segname = bd_name, p->segcolour = bd_colour, p->nseg = 4;
		cmfu = col(h, nh, "mfu"), cmeas = col(h, nh, "measured_ns");
		if (p->against != NULL && (p->kind != K_SWEEP ||
		    (cx = col(h, nh, p->against)) < 0 || cx >= c[6])) {
			errmsg("%s: --against %s: not a column of a pipelines sweep", name, p->against);
			rc = 1;
			goto out;
		}
	} else {
		errmsg("%s: not a CSV graphplot draws (graphstat --csv, --util or --critical --csv, "
		    "or a pipelines sweep)", name);
		free(line);
		free(hline);
		return 1;
	}
	for (i = 0; i < 6; i++)
		if ((p->kind != K_UTIL || i < 5) && (p->kind != K_CRITICAL || i < 4) && c[i] < 0) {
			errmsg("%s: line 1: a column is missing", name);
			rc = 1;
			goto out;
		}
	while ((len = getline(&line, &cap, in)) > 0) {
		char label[256];
		double v[4];

		lineno++;
		if (line[len - 1] == '\n')
			line[--len] = '\0';
		nf = split(line, f, MAXF);
		if (nf != nh) {
			errmsg("%s: line %zu: %zu fields, the header has %zu", name, lineno, nf, nh);
			rc = 1;
			goto out;
		}
		if (p->kind == K_CRITICAL) {
			struct bar *b;
			int k;

			if (num(f[c[3]], &v[0]) < 0) {
				errmsg("%s: line %zu: bad duration_ns '%s'", name, lineno, f[c[3]]);
				rc = 1;
				goto out;
			}
			for (k = 0; k < 6 && strcmp(cp_key[k], f[c[2]]) != 0; k++)
				;
			if (k == 6) {
				errmsg("%s: line %zu: unknown kind '%s'", name, lineno, f[c[2]]);
				rc = 1;
				goto out;
			}
			snprintf(label, sizeof(label), "%s%s, iter %s", strcmp(f[c[0]], "job") == 0 ?
			    "" : "rank ", f[c[0]], f[c[1]]);
			b = bar_of(p, label, 0);
			b->seg[k] += v[0] / 1e6;
		} else if (p->kind == K_UTIL) {
			struct series *s = NULL;
			struct pt pt;

			if (num(f[c[3]], &pt.x) < 0 || num(f[c[4]], &pt.y) < 0 || pt.y < 0 || pt.y > 1) {
				errmsg("%s: line %zu: bad window_ms or busy", name, lineno);
				rc = 1;
				goto out;
			}
			snprintf(label, sizeof(label), "rank %s, iter %s, %s", f[c[0]], f[c[1]], f[c[2]]);
			for (size_t q = p->ns; q-- > 0;)
				if (strcmp(p->s[q].label, label) == 0) {
					s = &p->s[q];
					break;
				}
			if (s == NULL) {
				struct series x = { xstrndup(label, strlen(label)), NULL, 0, 0 };

				VEC_PUSH(p->s, p->ns, p->caps, x);
				s = &p->s[p->ns - 1];
			}
			VEC_PUSH(s->p, s->n, s->cap, pt);
		} else {
			struct bar *b;
			int job = strcmp(f[c[0]], "job") == 0;

			for (i = 0; i < 4; i++)
				if (num(f[c[2 + i]], &v[i]) < 0) {
					errmsg("%s: line %zu: bad %s '%s'", name, lineno, h[c[2 + i]], f[c[2 + i]]);
					rc = 1;
					goto out;
				}
			if (p->kind == K_SWEEP) {
				double st = v[0] + v[1] + v[2] + v[3], m;

				if (!job)
					continue; /* a point is its job's rows */
				point_label(h, f, c[6], -1, label, sizeof(label));
				b = bar_of(p, label, 1);
				grow(&b->its, &b->capit, b->nit + 1, sizeof(*b->its));
				grow(&b->step, &b->capstep, b->nit + 1, sizeof(*b->step));
				grow(&b->mfu, &b->capmfu, b->nit + 1, sizeof(*b->mfu));
				grow(&b->meas, &b->capmeas, b->nit + 1, sizeof(*b->meas));
				for (i = 0; i < 4; i++)
					b->its[b->nit][i] = v[i] / 1e6;
				b->step[b->nit] = st / 1e6;
				m = -1;
				if (cmfu >= 0 && f[cmfu][0] != '\0' && num(f[cmfu], &m) < 0) {
					errmsg("%s: line %zu: bad mfu '%s'", name, lineno, f[cmfu]);
					rc = 1;
					goto out;
				}
				b->mfu[b->nit] = m;
				m = -1;
				if (cmeas >= 0 && f[cmeas][0] != '\0' && num(f[cmeas], &m) == 0)
					m /= 1e6;
				b->meas[b->nit++] = m;
				if (b->x == NULL) {
					b->x = xstrndup(cx >= 0 ? f[cx] : "", strlen(cx >= 0 ? f[cx] : ""));
					point_label(h, f, c[6], cx, label, sizeof(label));
					b->series = xstrndup(label, strlen(label));
				}
				continue;
			} else {
				snprintf(label, sizeof(label), "%s%s, iter %s", job ? "" : "rank ", f[c[0]],
				    f[c[1]]);
			}
			b = bar_of(p, label, job);
			for (i = 0; i < 4; i++)
				b->seg[i] = v[i] / 1e6;
		}
	}
	if (ferror(in)) {
		errmsg("%s: %s", name, strerror(errno));
		rc = 1;
	} else if (p->nb == 0 && p->ns == 0) {
		errmsg("%s: no rows to draw", name);
		rc = 1;
	}
	if (p->kind == K_SWEEP)
		sweep_points(p);
out:
	free(line);
	free(hline);
	return rc;
}

int
main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "all", no_argument, NULL, 'A' },
		{ "against", required_argument, NULL, 'X' },
		{ "title", required_argument, NULL, 'T' },
		{ "output", required_argument, NULL, 'o' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 }
	};
	struct plot p;
	struct out out;
	const char *outpath = NULL;
	FILE *in;
	int c, rc;

	cli_init("graphplot");
	memset(&p, 0, sizeof(p));
	while ((c = getopt_long(argc, argv, "ho:", longopts, NULL)) != -1) {
		switch (c) {
		case 'A':
			p.all = 1;
			break;
		case 'X':
			p.against = optarg;
			break;
		case 'T':
			p.title = optarg;
			break;
		case 'o':
			outpath = optarg;
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
	if (argc > 1) {
		errmsg("one input at most");
		usage_exit(usage);
	}
	if ((in = open_input(argc ? argv[0] : NULL)) == NULL)
		return 1;
	rc = load(&p, in, input_name(argc ? argv[0] : NULL));
	if (in != stdin)
		fclose(in);
	if (rc == 0) {
		if (out_open(&out, outpath, 0) < 0) {
			rc = 1;
		} else {
			if (p.kind == K_UTIL) {
				struct plot q;
				const char *sub = util_series(&p, &q);

				draw_lines(out.fp, &q, sub);
				if (q.s != p.s)
					plot_release(&q);
			} else if (p.against != NULL) {
				p.what = "Sweep: step time and MFU";
				draw_sweep(out.fp, &p);
			} else
				draw_bars(out.fp, &p);
			rc = out_commit(&out) != 0;
		}
	}
	plot_release(&p);
	return rc;
}
