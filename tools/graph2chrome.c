/*
 * graph2chrome: graph streams as Chrome trace-event JSON (the JSON object
 * format Perfetto, chrome://tracing and speedscope load): a process per
 * rank and view (measured, simulated), a track per thread and stream, a
 * complete event per task named by its operator or kernel alone, what
 * the call is in its args (--args: none, or the task's ids and tags too;
 * speedscope names a frame by the event's name and args, so these choose
 * what its views add up), an instant event for a task of no length,
 * flow arrows for launches and for the waits of collectives across
 * ranks, and metadata naming each section's source, the tools that made
 * it, the edits among them and the configuration it tells.
 *
 * A task's times come at the end of its section (the `sim` record), so
 * each task's event is written in two halves: what the task record says
 * (name, category, args) is spooled to a temporary file as the record
 * is read, and at the section's end each line is read back, in task id
 * order, behind the times of the view asked for.
 *
 * --ranks and --iterations select the tasks written; without
 * --iterations a section of more than EVENTS_MAX events keeps one
 * iteration, with a warning and a note in the metadata.
 *
 * State: one section at a time: 25 bytes a task, 8 bytes a launch or
 * rank edge, a copy of each collective's record (common/config), the
 * section's strings escaped, and the reader's string table and simulated
 * times; the spool file on disk holds the section's args text.
 */
#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "config.h"
#include "kg.h"
#include "util.h"

static const char usage[] =
    "graph2chrome [-q] [--measured | --simulated | --both] [--ranks LIST] "
    "[--iterations LIST | all] [--args none | call | task] [-o FILE] [FILE ...]";

static const char help[] =
    "Write graph streams as Chrome trace-event JSON, for Perfetto,\n"
    "chrome://tracing and speedscope.\n"
    "\n"
    "      --measured    the traced times (ts, od)\n"
    "      --simulated   the simulated times (graphsim's sim record)\n"
    "      --both        both, as two processes per rank side by side\n"
    "      --ranks LIST  only these ranks (0,2,4-7)\n"
    "      --iterations LIST | all\n"
    "                    only these iterations; all: every one (default: all,\n"
    "                    but one of a section of over 500000 events)\n"
    "      --args none | call | task\n"
    "                    an event's args: none, what the call is (operator,\n"
    "                    shapes, collective: the default), or that and the\n"
    "                    task's ids and tags\n"
    "  -o FILE           write to FILE (made whole or not at all)\n"
    "  -q                no warnings\n"
    "  -h, --help        this help\n"
    "      --version     the version\n"
    "\n"
    "Without a view option, a section with simulated times shows them and\n"
    "one without shows the measured times. With no FILE, or FILE -, read\n"
    "standard input. See graph2chrome(1).\n";

enum { V_AUTO, V_MEAS, V_SIM, V_BOTH };
enum { A_CALL, A_NONE, A_TASK };

/*
 * Above this many events (tasks times views) a section keeps one
 * iteration unless --iterations says which, and, if that is still too
 * many and --ranks does not say which, its first ranks that fit: at
 * about 350 bytes an event with its arrows (kernel names are long) the
 * file stays under 200 MB, which speedscope and Perfetto load (the
 * browser's largest string, 512 MiB, bounds speedscope's import).
 */
#define EVENTS_MAX 500000

/* A list of numbers (--ranks, --iterations), sorted; n == 0: all. */
struct list {
	int64_t *v;
	size_t n;
};

struct opts {
	int view;
	int quiet;
	int args;       /* --args: A_NONE, A_CALL, A_TASK */
	int iters_all;  /* --iterations all */
	struct list ranks, iters;
	size_t events_max; /* EVENTS_MAX, or KG_CHROME_EVENTS (for tests) */
	const char *out;
};

/* A task as kept until its section's end. */
struct ctask {
	int64_t ts, te; /* measured */
	uint32_t proc;
	int32_t iter;
};

struct pair {
	uint32_t src, dst;
};

/* A line being built: appends without stdio's per-call cost. */
struct sb {
	char *p;
	size_t n, cap;
};

/* The whole run's state: what is written once, what spans sections. */
struct run {
	const struct opts *o;
	FILE *out, *spool;
	char *line;
	size_t linecap;
	int64_t tbase0;   /* the first section's time origin */
	int have_tbase0;
	int nsec;         /* the section's index in the run, from 0 (a process's name) */
	int isec;         /* and in its file, from 0 as every tool counts them */
	int64_t next_pid;
	uint64_t next_flow;
	int first;        /* no event written yet */
	/* otherData: one object per section, text */
	char *meta;
	size_t nmeta, capmeta;
	/* the section */
	struct ctask *t;
	size_t n, cap;
	struct kg_proc *p;
	char **pname;
	size_t np, capp, capn;
	int64_t rank;
	int64_t off;      /* measured times: this section's origin after the first's */
	int sim;          /* the section has simulated times */
	struct pair *launch, *rnk;
	size_t nl, capl, nr, capr;
	uint32_t *up; /* union-find over tasks in rank edges */
	size_t capup;
	struct config cfg; /* what the section tells of its configuration */
	int64_t *iters;    /* the header's iterations */
	size_t niters, capiters;
	uint8_t *keep;     /* by task: written */
	size_t capkeep;
	int64_t only;      /* the one iteration kept by default, or -1 */
	int64_t last_rank; /* the last rank kept by default, or INT64_MAX */
	char **esc;   /* the section's strings as JSON, escaped when first used */
	size_t nesc, capesc;
	struct sb sb;
};

static void
meta_add(struct run *R, const char *s, size_t len)
{
	grow(&R->meta, &R->capmeta, R->nmeta + len + 1, 1);
	memcpy(R->meta + R->nmeta, s, len);
	R->nmeta += len;
	R->meta[R->nmeta] = '\0';
}

static void
meta_lit(struct run *R, const char *s)
{
	meta_add(R, s, strlen(s));
}

/* A JSON string into the metadata text (through a memory stream). */
static void
meta_str(struct run *R, const char *s)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	if (f == NULL) {
		errmsg("out of memory");
		exit(1);
	}
	json_str(f, s, strlen(s));
	fclose(f);
	meta_add(R, buf, len);
	free(buf);
}

static void
meta_fmt(struct run *R, const char *fmt, long long v)
{
	char b[64];
	int k = snprintf(b, sizeof(b), fmt, v);

	meta_add(R, b, (size_t)k);
}

/* Before each event: the document's opening before the first, else a comma. */
static void
sep(struct run *R)
{
	if (R->first)
		fputs("{\"displayTimeUnit\":\"ns\",\"traceEvents\":[\n", R->out);
	else
		fputs(",\n", R->out);
	R->first = 0;
}

static void
sb_put(struct sb *b, const char *s, size_t n)
{
	if (b->n + n + 1 > b->cap)
		grow(&b->p, &b->cap, b->n + n + 1, 1);
	memcpy(b->p + b->n, s, n);
	b->n += n;
}

#define SB_LIT(b, lit) sb_put(b, lit, sizeof(lit) - 1)

static void
sb_int(struct sb *b, int64_t v)
{
	char t[24], *e = t + sizeof(t), *q = e;
	uint64_t u = v < 0 ? -(uint64_t)v : (uint64_t)v;

	do
		*--q = (char)('0' + u % 10);
	while ((u /= 10) != 0);
	if (v < 0)
		*--q = '-';
	sb_put(b, q, (size_t)(e - q));
}

/* ns as microseconds with three decimals: exact, no float rounding. */
static void
sb_us(struct sb *b, int64_t ns)
{
	uint64_t u = ns < 0 ? -(uint64_t)ns : (uint64_t)ns;
	char f[4] = { '.', (char)('0' + u % 1000 / 100), (char)('0' + u % 100 / 10),
		(char)('0' + u % 10) };

	if (ns < 0)
		SB_LIT(b, "-");
	sb_int(b, (int64_t)(u / 1000));
	sb_put(b, f, 4);
}

/* ns as microseconds on f (flows: few). */
static void
put_us(FILE *f, int64_t ns)
{
	struct sb b = { NULL, 0, 0 };

	sb_us(&b, ns);
	fwrite(b.p, 1, b.n, f);
	free(b.p);
}

/* String id's text as a JSON string, escaped once a section (R->esc). */
static void
sb_sid(struct run *R, struct sb *b, const struct kg_reader *r, uint32_t id)
{
	if (id >= R->nesc) {
		size_t old = R->nesc;

		grow(&R->esc, &R->capesc, (size_t)id + 1, sizeof(*R->esc));
		memset(R->esc + old, 0, ((size_t)id + 1 - old) * sizeof(*R->esc));
		R->nesc = (size_t)id + 1;
	}
	if (R->esc[id] == NULL) {
		const char *s = kg_str(r, id);
		char *buf = NULL;
		size_t len = 0;
		FILE *f = open_memstream(&buf, &len);

		if (f == NULL) {
			errmsg("out of memory");
			exit(1);
		}
		json_str(f, s != NULL ? s : "", s != NULL ? strlen(s) : 0);
		fclose(f);
		R->esc[id] = buf;
	}
	sb_put(b, R->esc[id], strlen(R->esc[id]));
}

/* The task record's half of its event, one line on the spool. */
static void
spool_task(struct run *R, const struct kg_reader *r, const struct kg_task *k)
{
	struct sb *b = &R->sb;

#define STR(key, id)                              \
	do {                                      \
		if ((id) != KG_NONE && kg_str(r, id) != NULL) { \
			SB_LIT(b, ",\"" key "\":"); \
			sb_sid(R, b, r, id);      \
		}                                 \
	} while (0)
#define INT(key, v)                               \
	do {                                      \
		SB_LIT(b, ",\"" key "\":");        \
		sb_int(b, v);                     \
	} while (0)
	size_t at;

	b->n = 0;
	SB_LIT(b, "\"name\":");
	sb_sid(R, b, r, k->name);
	SB_LIT(b, ",\"cat\":\"");
	sb_put(b, kg_task_kind_name[k->kind], strlen(kg_task_kind_name[k->kind]));
	SB_LIT(b, "\",\"args\":");
	/* each field with a comma before it: the first's becomes the brace */
	at = b->n;
	/* what the call is: the same for every call alike, so that a viewer
	 * keying frames on name and args (speedscope) adds them up */
	STR("op", k->op);
	STR("shapes", k->shapes);
	STR("dtype", k->dtype);
	if (k->coll != KG_COLL_NONE) {
		SB_LIT(b, ",\"collective\":\"");
		sb_put(b, kg_coll_name[k->coll], strlen(kg_coll_name[k->coll]));
		SB_LIT(b, "\"");
	}
	if (k->bytes > 0)
		INT("bytes", (int64_t)k->bytes);
	STR("group", k->pg);
	STR("group_ranks", k->pgr);
	if (k->gsize >= 0)
		INT("group_size", k->gsize);
	if (k->phase != KG_PH_NONE) {
		SB_LIT(b, ",\"phase\":\"");
		sb_put(b, kg_phase_name[k->phase], strlen(kg_phase_name[k->phase]));
		SB_LIT(b, "\"");
	}
	if (R->o->args == A_NONE)
		b->n = at; /* none: taken back */
	if (R->o->args == A_TASK) {
		INT("task", k->id);
		if (k->iter >= 0)
			INT("iteration", k->iter);
		else
			SB_LIT(b, ",\"iteration\":null");
		INT("d_ns", k->dur);
		if (k->odur != k->dur)
			INT("od_ns", k->odur);
		if (k->seq >= 0)
			INT("seq", k->seq);
		if (k->mb >= 0)
			INT("micro_batch", k->mb);
		if (k->layer >= 0)
			INT("layer", k->layer);
		if (k->stage >= 0)
			INT("stage", k->stage);
		if (k->corr >= 0)
			INT("correlation", k->corr);
	}
	if (b->n == at) {
		b->n = at - (sizeof(",\"args\":") - 1);
	} else {
		b->p[at] = '{';
		SB_LIT(b, "}");
	}
	SB_LIT(b, "}\n");
	fwrite(b->p, 1, b->n, R->spool);
#undef STR
#undef INT
}

/* The header's half of the metadata: what made the section. */
static void
meta_section(struct run *R, const struct kg_header *h, const char *input)
{
	size_t i;

	if (R->nmeta > 0)
		meta_lit(R, ",");
	meta_lit(R, "{\"input\":");
	meta_str(R, input);
	meta_lit(R, ",\"source\":");
	meta_str(R, h->source);
	meta_lit(R, ",\"producer\":");
	meta_str(R, h->producer);
	meta_lit(R, ",\"tools\":[");
	for (i = 0; i < h->ntools; i++) {
		if (i > 0)
			meta_lit(R, ",");
		meta_str(R, h->tools[i]);
	}
	meta_lit(R, "]");
	if (h->nranks > 0) {
		meta_lit(R, ",\"ranks\":[");
		for (i = 0; i < h->nranks; i++)
			meta_fmt(R, i ? ",%lld" : "%lld", h->ranks[i]);
		meta_lit(R, "]");
	} else if (h->rank >= 0) {
		meta_fmt(R, ",\"rank\":%lld", h->rank);
	}
	if (h->world >= 0)
		meta_fmt(R, ",\"world\":%lld", h->world);
	meta_lit(R, ",\"iterations\":[");
	for (i = 0; i < h->niters; i++)
		meta_fmt(R, i ? ",%lld" : "%lld", h->iters[i]);
	meta_lit(R, "]");
}

static int64_t
proc_rank(const struct run *R, uint32_t p)
{
	return R->p[p].rank >= 0 ? R->p[p].rank : R->rank;
}

/* The view's start of task i. */
static int64_t
t_start(const struct run *R, const struct kg_reader *r, int sim, int64_t off, uint32_t i)
{
	return sim ? r->ss[i] : R->t[i].ts + off;
}

/*
 * One view of the section: its processes and tracks, its tasks (read
 * back from the spool), its flows. pidv[k] is the pid of the k-th rank
 * of ranks[].
 */
static int
write_view(struct run *R, const struct kg_reader *r, int sim, const int64_t *ranks,
    size_t nranks, const int64_t *pidv, const char *label)
{
	FILE *f = R->out;
	int64_t off = sim ? 0 : R->off;
	int64_t *pidp = xmalloc((R->np + 1) * sizeof(*pidp)); /* each processor's pid */
	size_t i, k;

	for (i = 0; i < R->np; i++) {
		int64_t rk = proc_rank(R, (uint32_t)i);
		const int64_t *at = bsearch(&rk, ranks, nranks, sizeof(*ranks), cmp_i64);

		pidp[i] = at != NULL ? pidv[at - ranks] : -1; /* -1: a rank not written */
	}
#define PID(p) pidp[p]
	for (k = 0; k < nranks; k++) {
		sep(R);
		fprintf(f, "{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":%lld,\"args\":{\"name\":\"",
		    (long long)pidv[k]);
		if (ranks[k] >= 0)
			fprintf(f, "rank %lld", (long long)ranks[k]);
		else
			fprintf(f, "section %d", R->nsec);
		fprintf(f, " (%s)\"}},\n{\"ph\":\"M\",\"name\":\"process_sort_index\",\"pid\":%lld,"
		    "\"args\":{\"sort_index\":%lld}}", label, (long long)pidv[k], (long long)pidv[k]);
	}
	for (i = 0; i < R->np; i++) {
		const struct kg_proc *p = &R->p[i];
		int64_t pid = PID((uint32_t)i);

		if (pid < 0)
			continue;
		sep(R);
		fprintf(f, "{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":%lld,\"tid\":%zu,\"args\":{\"name\":",
		    (long long)pid, i);
		if (p->kind == KG_THREAD) {
			char b[96];
			const char *n = R->pname[i];

			if (n == NULL) {
				snprintf(b, sizeof(b), "thread %lld%s", (long long)p->tid,
				    p->main ? " (main)" : "");
				n = b;
			}
			json_str(f, n, strlen(n));
		} else {
			fprintf(f, "\"GPU %lld stream %lld\"", (long long)p->pid, (long long)p->tid);
		}
		fprintf(f, "}},\n{\"ph\":\"M\",\"name\":\"thread_sort_index\",\"pid\":%lld,\"tid\":%zu,"
		    "\"args\":{\"sort_index\":%zu}}", (long long)pid, i, i);
	}
	if (fseek(R->spool, 0, SEEK_SET) != 0) {
		errmsg("spool file: %s", strerror(errno));
		free(pidp);
		return -1;
	}
	for (i = 0; i < R->n; i++) {
		ssize_t len = getline(&R->line, &R->linecap, R->spool);
		int64_t a = t_start(R, r, sim, off, (uint32_t)i);
		int64_t b = sim ? r->se[i] : R->t[i].te + off;

		if (len <= 0) {
			errmsg("spool file: %s", ferror(R->spool) ? strerror(errno) : "short read");
			free(pidp);
			return -1;
		}
		if (!R->keep[i])
			continue;
		sep(R);
		R->sb.n = 0;
		/* A task of no length is an instant: a complete event of 0 us
		 * is drawn by speedscope as if it lasted until the events
		 * that begin at its time end (it opens them all at once and
		 * closes it last), and by Perfetto as a sliver. */
		if (b == a)
			SB_LIT(&R->sb, "{\"ph\":\"i\",\"s\":\"t\",\"pid\":");
		else
			SB_LIT(&R->sb, "{\"ph\":\"X\",\"pid\":");
		sb_int(&R->sb, PID(R->t[i].proc));
		SB_LIT(&R->sb, ",\"tid\":");
		sb_int(&R->sb, R->t[i].proc);
		SB_LIT(&R->sb, ",\"ts\":");
		sb_us(&R->sb, a);
		if (b != a) {
			SB_LIT(&R->sb, ",\"dur\":");
			sb_us(&R->sb, b - a);
		}
		SB_LIT(&R->sb, ",");
		sb_put(&R->sb, R->line, (size_t)len - 1);
		fwrite(R->sb.p, 1, R->sb.n, f);
	}
	/* Launches: the runtime call to the work it launched. */
	for (i = 0; i < R->nl; i++) {
		uint32_t s = R->launch[i].src, d = R->launch[i].dst;
		uint64_t id;

		if (!R->keep[s] || !R->keep[d])
			continue;
		id = ++R->next_flow;
		sep(R);
		fprintf(f, "{\"ph\":\"s\",\"cat\":\"launch\",\"name\":\"launch\",\"id\":%llu,"
		    "\"pid\":%lld,\"tid\":%u,\"ts\":", (unsigned long long)id,
		    (long long)PID(R->t[s].proc), R->t[s].proc);
		put_us(f, t_start(R, r, sim, off, s));
		fprintf(f, "},\n{\"ph\":\"f\",\"bp\":\"e\",\"cat\":\"launch\",\"name\":\"launch\","
		    "\"id\":%llu,\"pid\":%lld,\"tid\":%u,\"ts\":", (unsigned long long)id,
		    (long long)PID(R->t[d].proc), R->t[d].proc);
		put_us(f, t_start(R, r, sim, off, d));
		putc('}', f);
	}
	/*
	 * Waits across ranks: in each rendezvous group, from the member that
	 * started last (the one the others waited for) to each other member.
	 */
	if (R->nr > 0) {
		uint32_t *last;

		grow(&R->up, &R->capup, R->n, sizeof(*R->up));
		for (i = 0; i < R->n; i++)
			R->up[i] = (uint32_t)i;
		for (i = 0; i < R->nr; i++)
			if (R->keep[R->rnk[i].src] && R->keep[R->rnk[i].dst])
				uf_union(R->up, R->rnk[i].src, R->rnk[i].dst);
		last = xmalloc(R->n * sizeof(*last));
		for (i = 0; i < R->n; i++)
			last[i] = KG_NONE;
		for (i = 0; i < R->nr; i++) {
			uint32_t e[2] = { R->rnk[i].src, R->rnk[i].dst };

			if (!R->keep[e[0]] || !R->keep[e[1]])
				continue;

			for (k = 0; k < 2; k++) {
				uint32_t g = uf_find(R->up, e[k]);

				if (last[g] == KG_NONE ||
				    t_start(R, r, sim, off, e[k]) > t_start(R, r, sim, off, last[g]) ||
				    (t_start(R, r, sim, off, e[k]) == t_start(R, r, sim, off, last[g]) &&
					e[k] < last[g]))
					last[g] = e[k];
			}
		}
		for (i = 0; i < R->n; i++) {
			uint32_t g, l;
			uint64_t id;

			if (R->up[i] == i && last[i] == KG_NONE)
				continue; /* in no group */
			g = uf_find(R->up, (uint32_t)i);
			l = last[g];
			if (l == i || l == KG_NONE)
				continue;
			id = ++R->next_flow;
			sep(R);
			fprintf(f, "{\"ph\":\"s\",\"cat\":\"rank wait\",\"name\":\"waited for rank %lld\","
			    "\"id\":%llu,\"pid\":%lld,\"tid\":%u,\"ts\":", (long long)proc_rank(R, R->t[l].proc),
			    (unsigned long long)id, (long long)PID(R->t[l].proc), R->t[l].proc);
			put_us(f, t_start(R, r, sim, off, l));
			fprintf(f, "},\n{\"ph\":\"f\",\"bp\":\"e\",\"cat\":\"rank wait\","
			    "\"name\":\"waited for rank %lld\",\"id\":%llu,\"pid\":%lld,\"tid\":%u,\"ts\":",
			    (long long)proc_rank(R, R->t[l].proc), (unsigned long long)id,
			    (long long)PID((uint32_t)R->t[i].proc), R->t[i].proc);
			put_us(f, t_start(R, r, sim, off, l));
			putc('}', f);
		}
		free(last);
	}
#undef PID
	free(pidp);
	return 0;
}

static int
in_list(const struct list *l, int64_t v)
{
	return bsearch(&v, l->v, l->n, sizeof(*l->v), cmp_i64) != NULL;
}

static void
meta_list(struct run *R, const char *key, const struct list *l)
{
	meta_lit(R, ",\"");
	meta_lit(R, key);
	meta_lit(R, "\":[");
	for (size_t i = 0; i < l->n; i++)
		meta_fmt(R, i ? ",%lld" : "%lld", l->v[i]);
	meta_lit(R, "]");
}

/*
 * Which tasks are written: those of the ranks and iterations asked for;
 * without --iterations, of one iteration when the section would make
 * more than EVENTS_MAX events (the middle one of the header's).
 */
static void
select_tasks(struct run *R, const char *name, size_t nv)
{
	const struct opts *o = R->o;
	size_t i, k, n = 0;

	grow(&R->keep, &R->capkeep, R->n + 1, 1);
	R->only = -1;
	R->last_rank = INT64_MAX;
	for (i = 0; i < R->n; i++) {
		R->keep[i] = o->ranks.n == 0 || in_list(&o->ranks, proc_rank(R, R->t[i].proc));
		if (o->iters.n > 0 && R->keep[i])
			R->keep[i] = R->t[i].iter >= 0 && in_list(&o->iters, R->t[i].iter);
		n += R->keep[i];
	}
	if (o->iters.n > 0 || o->iters_all || R->niters < 2 || n * nv <= o->events_max)
		return;
	R->only = R->iters[R->niters / 2];
	for (i = k = 0; i < R->n; i++) {
		R->keep[i] = R->keep[i] && R->t[i].iter == R->only;
		k += R->keep[i];
	}
	/* still too many: the first ranks whose events fit (one at least) */
	if (k * nv > o->events_max && o->ranks.n == 0) {
		int64_t *rk = xmalloc((k + 1) * sizeof(*rk));
		size_t m = 0, j;

		for (i = 0; i < R->n; i++)
			if (R->keep[i])
				rk[m++] = proc_rank(R, R->t[i].proc);
		qsort(rk, m, sizeof(*rk), cmp_i64);
		/* j: the events that fit; the ranks all of whose events fit */
		for (j = 0; j < m && (j + 1) * nv <= o->events_max; j++)
			;
		R->last_rank = rk[0];
		for (size_t t = 0; t < j; t++)
			if (j == m || rk[t] < rk[j])
				R->last_rank = rk[t];
		if (R->last_rank == rk[m - 1]) /* one rank: all of it */
			R->last_rank = INT64_MAX;
		free(rk);
		for (i = 0; i < R->n; i++)
			R->keep[i] = R->keep[i] && proc_rank(R, R->t[i].proc) <= R->last_rank;
	}
	if (!o->quiet && R->last_rank == INT64_MAX)
		warnmsg("%s: section %d: %zu events: iteration %lld alone written (of %zu; "
		    "--iterations LIST or all to choose)", name, R->isec, n * nv,
		    (long long)R->only, R->niters);
	else if (!o->quiet)
		warnmsg("%s: section %d: %zu events: iteration %lld and ranks up to %lld alone "
		    "written (of %zu iterations; --iterations and --ranks to choose)", name,
		    R->isec, n * nv, (long long)R->only, (long long)R->last_rank, R->niters);
	meta_fmt(R, ",\"note\":\"iteration %lld alone written", R->only);
	meta_fmt(R, " of the section's %lld", (long long)R->niters);
	if (R->last_rank != INT64_MAX)
		meta_fmt(R, ", and ranks up to %lld", R->last_rank);
	meta_lit(R, ": its events are more than a viewer loads well; --iterations all "
	    "writes every one\"");
}

/* The section's end: both halves of every event, in the views asked for. */
static int
end_section(struct run *R, const struct kg_reader *r, const char *name)
{
	int views[2], nv = 0, v, rc = 0;
	int64_t *ranks, *pidv;
	size_t nranks = 0, i, k;

	switch (R->o->view) {
	case V_AUTO:
		views[nv++] = R->sim;
		break;
	case V_MEAS:
		views[nv++] = 0;
		break;
	case V_SIM:
	case V_BOTH:
		if (!R->sim && R->n > 0) {
			errmsg("%s: section %d has no simulated times (run graphsim first)", name,
			    R->isec);
			return -1;
		}
		if (R->o->view == V_BOTH)
			views[nv++] = 0;
		views[nv++] = 1;
		break;
	}
	if (R->o->ranks.n > 0)
		meta_list(R, "selected_ranks", &R->o->ranks);
	if (R->o->iters.n > 0)
		meta_list(R, "selected_iterations", &R->o->iters);
	select_tasks(R, name, (size_t)nv);
	/* the section's ranks written, ascending, and a pid for each in each view */
	ranks = xmalloc((R->np + 1) * sizeof(*ranks));
	for (i = 0; i < R->np; i++)
		if ((R->o->ranks.n == 0 || in_list(&R->o->ranks, proc_rank(R, (uint32_t)i))) &&
		    proc_rank(R, (uint32_t)i) <= R->last_rank)
			ranks[nranks++] = proc_rank(R, (uint32_t)i);
	if (nranks > 1)
		qsort(ranks, nranks, sizeof(*ranks), cmp_i64);
	for (i = k = 0; i < nranks; i++)
		if (k == 0 || ranks[i] != ranks[k - 1])
			ranks[k++] = ranks[i];
	nranks = k;
	pidv = xmalloc((nranks + 1) * sizeof(*pidv));
	/* what the graph tells of its configuration, and the edits that made it */
	config_finish(&R->cfg, r);
	meta_lit(R, ",\"edits\":[");
	for (i = k = 0; i < r->ntools; i++)
		if (config_is_edit(r->tools[i])) {
			if (k++ > 0)
				meta_lit(R, ",");
			meta_str(R, r->tools[i]);
		}
	meta_fmt(R, "],\"configuration\":{\"ranks\":%lld", R->cfg.nranks);
	if (R->cfg.world > 0 && R->cfg.world != R->cfg.nranks)
		meta_fmt(R, ",\"world\":%lld", R->cfg.world);
	if (R->cfg.dp > 0)
		meta_fmt(R, ",\"dp\":%lld", R->cfg.dp);
	meta_fmt(R, ",\"tp\":%lld", R->cfg.tp);
	if (R->cfg.pp > 0)
		meta_fmt(R, ",\"pp\":%lld", R->cfg.pp);
	if (R->cfg.layers > 0)
		meta_fmt(R, ",\"layers\":%lld", R->cfg.layers);
	if (R->cfg.hidden > 0)
		meta_fmt(R, ",\"hidden\":%lld", R->cfg.hidden);
	if (R->cfg.mbs > 0)
		meta_fmt(R, ",\"micro_batches\":%lld", R->cfg.mbs);
	meta_lit(R, "}");
	meta_lit(R, ",\"view\":\"");
	meta_lit(R, nv == 2 ? "both" : views[0] ? "simulated" : "measured");
	meta_lit(R, "\"}");
	for (v = 0; v < nv && rc == 0; v++) {
		for (k = 0; k < nranks; k++)
			pidv[k] = R->next_pid + (int64_t)(k * (size_t)nv) + v;
		rc = write_view(R, r, views[v], ranks, nranks, pidv,
		    views[v] ? "simulated" : "measured");
	}
	R->next_pid += (int64_t)(nranks * (size_t)nv);
	free(ranks);
	free(pidv);
	if (rc == 0 && ferror(R->spool)) {
		errmsg("spool file: write error");
		rc = -1;
	}
	return rc;
}

static void
section_reset(struct run *R)
{
	for (size_t i = 0; i < R->np; i++)
		free(R->pname[i]);
	for (size_t i = 0; i < R->nesc; i++)
		free(R->esc[i]);
	R->nesc = 0;
	R->n = R->np = R->nl = R->nr = 0;
	R->sim = 0;
	rewind(R->spool);
}

/* One input: 0, or 1 after the message. */
static int
process(struct run *R, const char *path)
{
	struct gin in;
	int t, rc = 0;

	if (gin_open(&in, path) < 0)
		return 1;
	R->isec = -1;
	while (rc == 0 && (t = gin_read(&in)) > 0) {
		switch (t) {
		case KG_R_HEADER: {
			const struct kg_header *h = &in.rec.header;

			section_reset(R);
			R->nsec++;
			R->isec++;
			R->rank = h->rank;
			if (!R->have_tbase0) {
				R->tbase0 = h->tbase;
				R->have_tbase0 = 1;
			}
			R->off = h->tbase - R->tbase0;
			meta_section(R, h, in.name);
			R->niters = 0;
			for (size_t k = 0; k < h->niters; k++)
				VEC_PUSH(R->iters, R->niters, R->capiters, h->iters[k]);
			config_header(&R->cfg, h);
			R->cfg.groups = 1;
			break;
		}
		case KG_R_PROC: {
			const char *n = in.rec.proc.name != KG_NONE ? kg_str(&in.r, in.rec.proc.name) : NULL;

			grow(&R->p, &R->capp, R->np + 1, sizeof(*R->p));
			grow(&R->pname, &R->capn, R->np + 1, sizeof(*R->pname));
			R->p[R->np] = in.rec.proc;
			R->pname[R->np] = n != NULL ? xstrndup(n, strlen(n)) : NULL;
			R->np++;
			break;
		}
		case KG_R_TASK: {
			struct ctask x = { in.rec.task.ts, in.rec.task.ts + in.rec.task.odur,
				in.rec.task.proc, in.rec.task.iter >= 0 && in.rec.task.iter <= INT32_MAX ?
				(int32_t)in.rec.task.iter : -1 };

			VEC_PUSH(R->t, R->n, R->cap, x);
			spool_task(R, &in.r, &in.rec.task);
			config_task(&R->cfg, &in.rec.task);
			break;
		}
		case KG_R_EDGE: {
			struct pair e = { in.rec.edge.src, in.rec.edge.dst };

			if (in.rec.edge.kind == KG_E_LAUNCH && in.rec.edge.how != KG_HOW_INFERRED)
				VEC_PUSH(R->launch, R->nl, R->capl, e);
			else if (in.rec.edge.kind == KG_E_RANK)
				VEC_PUSH(R->rnk, R->nr, R->capr, e);
			break;
		}
		case KG_R_SIM:
			R->sim = in.rec.sim.ss != NULL && in.rec.sim.n == R->n && R->n > 0;
			break;
		case KG_R_END:
			if (end_section(R, &in.r, in.name) < 0)
				rc = 1;
			break;
		}
	}
	if (t < 0)
		rc = 1;
	gin_close(&in);
	return rc;
}

/* LIST: "3", "0,2,4-7" (a range takes both ends), into l, sorted; -1 if bad. */
static int
parse_list(const char *arg, struct list *l)
{
	char *copy = xstrndup(arg, strlen(arg)), *tok, *save = NULL, *dash;
	size_t cap = 0, i, k;
	int64_t a, b;

	free(l->v);
	l->v = NULL;
	l->n = 0;
	for (tok = strtok_r(copy, ",", &save); tok != NULL; tok = strtok_r(NULL, ",", &save)) {
		dash = strchr(tok, '-');
		if (dash != NULL)
			*dash = '\0';
		if (parse_i64(tok, 0, INT32_MAX, &a) < 0 ||
		    (dash != NULL && parse_i64(dash + 1, 0, INT32_MAX, &b) < 0))
			goto bad;
		if (dash == NULL)
			b = a;
		if (b < a || b - a >= (1 << 20))
			goto bad;
		for (; a <= b; a++)
			VEC_PUSH(l->v, l->n, cap, a);
	}
	if (l->n == 0 || strchr(",", arg[strlen(arg) - 1]) != NULL || arg[0] == ',')
		goto bad;
	qsort(l->v, l->n, sizeof(*l->v), cmp_i64);
	for (i = k = 0; i < l->n; i++)
		if (k == 0 || l->v[i] != l->v[k - 1])
			l->v[k++] = l->v[i];
	l->n = k;
	free(copy);
	return 0;
bad:
	free(copy);
	free(l->v);
	l->v = NULL;
	l->n = 0;
	return -1;
}

int
main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "measured", no_argument, NULL, 'M' },
		{ "simulated", no_argument, NULL, 'S' },
		{ "both", no_argument, NULL, 'B' },
		{ "ranks", required_argument, NULL, 'R' },
		{ "iterations", required_argument, NULL, 'I' },
		{ "args", required_argument, NULL, 'A' },
		{ "quiet", no_argument, NULL, 'q' },
		{ "output", required_argument, NULL, 'o' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 }
	};
	struct opts o;
	struct run R;
	struct out out;
	int c, i, rc = 0;

	cli_init("graph2chrome");
	memset(&o, 0, sizeof(o));
	while ((c = getopt_long(argc, argv, "hqo:", longopts, NULL)) != -1) {
		switch (c) {
		case 'M':
		case 'S':
		case 'B': {
			int v = c == 'M' ? V_MEAS : c == 'S' ? V_SIM : V_BOTH;

			if (o.view != V_AUTO && o.view != v) {
				errmsg("--measured, --simulated and --both exclude each other");
				usage_exit(usage);
			}
			o.view = v;
			break;
		}
		case 'o':
			o.out = optarg;
			break;
		case 'q':
			o.quiet = 1;
			break;
		case 'A':
			if (strcmp(optarg, "none") == 0)
				o.args = A_NONE;
			else if (strcmp(optarg, "call") == 0)
				o.args = A_CALL;
			else if (strcmp(optarg, "task") == 0)
				o.args = A_TASK;
			else {
				errmsg("invalid --args '%s' (none, call or task)", optarg);
				usage_exit(usage);
			}
			break;
		case 'R':
			if (parse_list(optarg, &o.ranks) < 0) {
				errmsg("invalid --ranks '%s' (a list: 0,2,4-7)", optarg);
				usage_exit(usage);
			}
			break;
		case 'I':
			if (strcmp(optarg, "all") == 0) {
				free(o.iters.v);
				o.iters.v = NULL, o.iters.n = 0;
				o.iters_all = 1;
			} else if (parse_list(optarg, &o.iters) < 0) {
				errmsg("invalid --iterations '%s' (a list: 3,5-7; or all)", optarg);
				usage_exit(usage);
			} else {
				o.iters_all = 0;
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
	o.events_max = EVENTS_MAX;
	if (getenv("KG_CHROME_EVENTS") != NULL) {
		int64_t v;

		if (parse_i64(getenv("KG_CHROME_EVENTS"), 0, INT64_MAX, &v) < 0) {
			errmsg("invalid KG_CHROME_EVENTS '%s'", getenv("KG_CHROME_EVENTS"));
			return 2;
		}
		o.events_max = (size_t)v;
	}
	memset(&R, 0, sizeof(R));
	R.nsec = -1; /* the first header makes it 0 */
	config_init(&R.cfg);
	R.o = &o;
	R.first = 1;
	if ((R.spool = tmpfile()) == NULL) {
		errmsg("temporary file: %s", strerror(errno));
		return 1;
	}
	if (out_open(&out, o.out, 0) < 0) {
		fclose(R.spool);
		return 1;
	}
	R.out = out.fp;
	if (argc == 0)
		rc = process(&R, NULL);
	for (i = 0; i < argc && rc == 0; i++)
		rc = process(&R, argv[i]);
	if (rc == 0) {
		if (R.first) /* no event: an empty document */
			fputs("{\"displayTimeUnit\":\"ns\",\"traceEvents\":[", R.out);
		fputs("\n],\"otherData\":{\"producer\":\"graph2chrome " KG_VERSION "\",\"sections\":[",
		    R.out);
		if (R.nmeta > 0)
			fwrite(R.meta, 1, R.nmeta, R.out);
		fputs("]}}\n", R.out);
	}
	section_reset(&R);
	fclose(R.spool);
	free(R.line);
	free(R.meta);
	free(R.t);
	free(R.p);
	free(R.pname);
	free(R.launch);
	free(R.rnk);
	free(R.up);
	free(R.esc);
	free(R.iters);
	free(R.keep);
	free(o.ranks.v);
	free(o.iters.v);
	config_release(&R.cfg);
	free(R.sb.p);
	if (rc != 0) {
		out_abort(&out);
		return 1;
	}
	return out_commit(&out) != 0;
}
