/*
 * report: graphstat's rows and the what-if report (report.h).
 */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "report.h"
#include "util.h"

void
whatif_init(struct whatif *w)
{
	memset(w, 0, sizeof(*w));
	config_init(&w->cfg);
}

void
whatif_release(struct whatif *w)
{
	free(w->made);
	config_release(&w->cfg);
	free(w->b);
	memset(w, 0, sizeof(*w));
}

void
whatif_header(struct whatif *w, const struct kg_header *h)
{
	size_t i, len = 1;

	config_header(&w->cfg, h);
	snprintf(w->pcal, sizeof(w->pcal), "%s", h->pcal != NULL ? h->pcal : "");
	w->pcost = h->pcost;
	w->ustep = h->ustep;
	w->edited = w->cfg.edited;
	w->cfg.groups = w->edited; /* the degrees only for a prediction */
	w->shown = 0;
	w->nranks = w->cfg.nranks;
	w->nrows = w->nbased = 0;
	for (i = 0; i < h->ntools; i++)
		len += strlen(h->tools[i]) + 3;
	free(w->made);
	w->made = xmalloc(len);
	w->made[0] = '\0';
	for (i = 0; i < h->ntools; i++) {
		if (i > 0)
			strcat(w->made, " | ");
		strcat(w->made, h->tools[i]);
	}
}

void
whatif_task(struct whatif *w, const struct kg_task *t)
{
	config_task(&w->cfg, t);
}

/* The configuration an edited graph carries, as one text line. */
static void
config_text(struct whatif *w, const struct kg_reader *r)
{
	struct config *c = &w->cfg;

	config_finish(c, r);
	printf("  configuration: %lld rank%s", (long long)c->nranks, c->nranks == 1 ? "" : "s");
	if (c->world > c->nranks)
		printf(" (of %lld)", (long long)c->world);
	else if (c->world > 0 && c->world < c->nranks) /* a degree set lower */
		printf(" (for a job of %lld)", (long long)c->world);
	if (c->dp > 0)
		printf(", dp %lld", (long long)c->dp);
	printf(", tp %lld", (long long)c->tp);
	if (c->pp > 0)
		printf(", pp %lld", (long long)c->pp);
	if (c->layers > 0)
		printf(", %lld layers", (long long)c->layers);
	if (c->hidden > 0)
		printf(", hidden %lld", (long long)c->hidden);
	if (c->mbs > 0)
		printf(", %lld micro-batches", (long long)c->mbs);
	if (c->gpu[0] != '\0') {
		printf("; GPU: %s", c->gpu);
		if (c->gpu_sms > 0 && c->gpu_mem > 0)
			printf(" (%lld SMs, %.1f GiB)", (long long)c->gpu_sms,
			    (double)c->gpu_mem / 1073741824.0);
		else if (c->gpu_sms > 0)
			printf(" (%lld SMs)", (long long)c->gpu_sms);
		printf("; network: not recorded in the graph\n");
	} else {
		printf("; GPU and network: not recorded in the graph\n");
	}
}

void
whatif_text(struct whatif *w, const struct kg_reader *r, int fmt)
{
	if (fmt != F_TEXT || w->collect)
		return;
	if (w->edited) {
		printf("prediction: a graph made by %s\n", w->made);
		config_text(w, r);
	}
	if (w->base != NULL) {
		int sim = 1;

		for (size_t i = 0; i < w->nb; i++)
			sim &= w->b[i].sim;
		printf("  base: %s, %s\n", w->base, w->nb == 0 ? "no iteration" :
		    sim ? "simulated" : "measured");
	}
}

int
whatif_unrelated(const struct whatif *w)
{
	return w->base != NULL && !w->collect && w->nrows > 0 && w->nbased == 0;
}

static double
pct(int64_t sim, int64_t meas, int64_t base)
{
	double v = base ? 100.0 * (double)(sim - meas) / (double)base : 0;

	return v > -5e-5 && v < 5e-5 ? 0 : v; /* no "-0.0000" */
}

/*
 * The base row a row compares with: the same rank and iteration (unless
 * the prediction has another number of ranks: rank R is then not the
 * same rank's work), else the base's job row of the iteration, else its
 * slowest row of it.
 */
static const struct brow *
base_of(const struct whatif *w, const struct row *r)
{
	const struct brow *best = NULL;
	size_t i;

	if (!w->edited || w->base_ranks == w->nranks)
		for (i = 0; i < w->nb; i++)
			if (w->b[i].iter == r->iter && w->b[i].rank == r->rank)
				return &w->b[i];
	if (r->rank != JOB && !w->edited)
		return NULL;
	for (i = 0; i < w->nb; i++)
		if (w->b[i].iter == r->iter && w->b[i].rank == JOB)
			return &w->b[i];
	if (r->rank != JOB)
		return NULL;
	for (i = 0; i < w->nb; i++)
		if (w->b[i].iter == r->iter && (best == NULL || w->b[i].ns > best->ns))
			best = &w->b[i];
	return best;
}

const struct brow *
whatif_base_of(const struct whatif *w, const struct row *r)
{
	return w->base != NULL ? base_of(w, r) : NULL;
}

int64_t
row_span(const struct whatif *w, const struct row *r)
{
	if (w->edited)
		return r->sim ? r->s.span : -1;
	return r->m.span;
}

/* A rate, or JSON's null (CSV's empty) when it is unknown. */
static void
put_rate(double v, const char *fmt, const char *none)
{
	if (v >= 0)
		printf(fmt, v);
	else
		printf("%s", none);
}

/* rank and iteration: "job", a number, or none ("-"; JSON null). */
static void
put_key(int64_t v, const char *none, int width, int job)
{
	char b[32];

	if (job)
		snprintf(b, sizeof(b), "%s", width ? "job" : "\"job\"");
	else if (v < 0)
		snprintf(b, sizeof(b), "%s", none);
	else
		snprintf(b, sizeof(b), "%lld", (long long)v);
	printf("%-*s", width, b);
}

void
print_row(int fmt, struct whatif *w, const struct row *r, int *header)
{
	const struct view *v = r->sim ? &r->s : &r->m;
	const struct brow *b;
	int pred = w->edited;
	int64_t sp;

	if (w->collect) {
		int64_t bsp = r->sim ? r->s.span : r->m.span;
		struct brow x = { r->rank, r->iter, bsp, r->sim, r->uspan,
			perf_tokens_per_s(&r->perf, bsp), perf_tflops(&r->perf, bsp),
			perf_mfu(&r->perf, bsp) };

		VEC_PUSH(w->b, w->nb, w->capb, x);
		w->base_ranks = w->nranks;
		return;
	}
	b = w->base != NULL ? base_of(w, r) : NULL;
	w->nrows++;
	w->nbased += b != NULL;
	if (fmt == F_CSV) {
		if (!*header) {
			printf("rank,iteration,measured_ns,simulated_ns,error_pct,"
			    "exposed_compute_ns,overlapped_ns,exposed_comm_ns,other_ns,"
			    "measured_exposed_compute_ns,measured_overlapped_ns,"
			    "measured_exposed_comm_ns,measured_other_ns,"
			    "measured_util,simulated_util,predicted,base_ns,change_pct,"
			    "peak_allocated_bytes,peak_reserved_bytes,predicted_peak_bytes,"
			    "device_memory_bytes,fits,unprofiled_ns,profiler_cost,"
			    "tokens_per_s,tflops_per_gpu,mfu\n");
			*header = 1;
		}
		if (r->rank == JOB)
			printf("job,");
		else
			put_key(r->rank, "-", 0, 0), printf(",");
		put_key(r->iter, "-", 0, 0);
		printf(",");
		if (!pred)
			printf("%lld", (long long)r->m.span);
		printf(",");
		if (r->sim)
			printf("%lld", (long long)r->s.span);
		printf(",");
		if (r->sim && !pred)
			printf("%.4f", pct(r->s.span, r->m.span, r->m.span));
		printf(",%lld,%lld,%lld,%lld,", (long long)v->comp, (long long)v->over,
		    (long long)v->comm, (long long)v->other);
		if (!pred)
			printf("%lld,%lld,%lld,%lld,%.4f,", (long long)r->m.comp, (long long)r->m.over,
			    (long long)r->m.comm, (long long)r->m.other, r->m.util);
		else
			printf(",,,,,");
		if (r->sim)
			printf("%.4f", r->s.util);
		printf(",%d,", pred);
		if (b != NULL)
			printf("%lld,%.4f", (long long)b->ns, pct(v->span, b->ns, b->ns));
		else
			printf(",");
		printf(",");
		if (!pred && r->mem.alloc >= 0)
			printf("%lld", (long long)r->mem.alloc);
		printf(",");
		if (!pred && r->mem.reserved >= 0)
			printf("%lld", (long long)r->mem.reserved);
		printf(",");
		if (r->pred.peak >= 0)
			printf("%lld", (long long)r->pred.peak);
		printf(",");
		if (r->devmem > 0)
			printf("%lld", (long long)r->devmem);
		printf(",");
		if (r->devmem > 0 && r->pred.peak >= 0)
			printf("%d", r->pred.peak <= r->devmem);
		printf(",");
		if (r->uspan >= 0)
			printf("%lld,%s", (long long)r->uspan, w->pcal);
		else
			printf(",");
		sp = row_span(w, r);
		put_rate(perf_tokens_per_s(&r->perf, sp), ",%.1f", ",");
		put_rate(perf_tflops(&r->perf, sp), ",%.3f", ",");
		put_rate(perf_mfu(&r->perf, sp), ",%.4f", ",");
		printf("\n");
	} else if (fmt == F_JSON) {
		printf("{\"rank\":");
		put_key(r->rank, "null", 0, r->rank == JOB);
		printf(",\"iteration\":");
		put_key(r->iter, "null", 0, 0);
		if (pred)
			printf(",\"measured_ns\":null,");
		else
			printf(",\"measured_ns\":%lld,", (long long)r->m.span);
		if (r->sim && !pred)
			printf("\"simulated_ns\":%lld,\"error_pct\":%.4f,", (long long)r->s.span,
			    pct(r->s.span, r->m.span, r->m.span));
		else if (r->sim)
			printf("\"simulated_ns\":%lld,\"error_pct\":null,", (long long)r->s.span);
		else
			printf("\"simulated_ns\":null,\"error_pct\":null,");
		printf("\"exposed_compute_ns\":%lld,\"overlapped_ns\":%lld,"
		    "\"exposed_comm_ns\":%lld,\"other_ns\":%lld,", (long long)v->comp,
		    (long long)v->over, (long long)v->comm, (long long)v->other);
		if (pred)
			printf("\"measured\":null");
		else
			printf("\"measured\":{\"exposed_compute_ns\":%lld,\"overlapped_ns\":%lld,"
			    "\"exposed_comm_ns\":%lld,\"other_ns\":%lld,\"util\":%.4f}",
			    (long long)r->m.comp, (long long)r->m.over, (long long)r->m.comm,
			    (long long)r->m.other, r->m.util);
		if (r->sim)
			printf(",\"simulated\":{\"exposed_compute_ns\":%lld,\"overlapped_ns\":%lld,"
			    "\"exposed_comm_ns\":%lld,\"other_ns\":%lld,\"util\":%.4f}",
			    (long long)r->s.comp, (long long)r->s.over, (long long)r->s.comm,
			    (long long)r->s.other, r->s.util);
		printf(",\"predicted\":%s", pred ? "true" : "false");
		if (b != NULL)
			printf(",\"base_ns\":%lld,\"change_pct\":%.4f", (long long)b->ns,
			    pct(v->span, b->ns, b->ns));
		else
			printf(",\"base_ns\":null,\"change_pct\":null");
		if (!pred && r->mem.alloc >= 0)
			printf(",\"peak_allocated_bytes\":%lld", (long long)r->mem.alloc);
		else
			printf(",\"peak_allocated_bytes\":null");
		if (!pred && r->mem.reserved >= 0)
			printf(",\"peak_reserved_bytes\":%lld", (long long)r->mem.reserved);
		else
			printf(",\"peak_reserved_bytes\":null");
		if (r->pred.peak >= 0)
			printf(",\"predicted_peak_bytes\":%lld,\"predicted_memory\":{\"from\":\"%s\","
			    "\"parameters\":%lld,\"gradients\":%lld,\"optimizer\":%lld,"
			    "\"activations\":%lld,\"logits_loss\":%lld,\"temporaries\":%lld,"
			    "\"shard\":%lld,\"unbalanced\":%s,\"early_frees\":%lld}",
			    (long long)r->pred.peak, r->pred.how == MP_ALLOC ? "allocator" : "shapes",
			    (long long)r->pred.params, (long long)r->pred.grads,
			    (long long)r->pred.optim, (long long)r->pred.act, (long long)r->pred.logits,
			    (long long)r->pred.temp, (long long)r->pred.shard,
			    r->pred.unbalanced ? "true" : "false", (long long)r->pred.early_frees);
		else
			printf(",\"predicted_peak_bytes\":null");
		if (r->devmem > 0)
			printf(",\"device_memory_bytes\":%lld", (long long)r->devmem);
		else
			printf(",\"device_memory_bytes\":null");
		if (r->devmem > 0 && r->pred.peak >= 0)
			printf(",\"fits\":%s", r->pred.peak <= r->devmem ? "true" : "false");
		else
			printf(",\"fits\":null");
		if (r->uspan >= 0)
			printf(",\"unprofiled_ns\":%lld,\"profiler_cost\":\"%s\"", (long long)r->uspan,
			    w->pcal);
		else
			printf(",\"unprofiled_ns\":null,\"profiler_cost\":null");
		sp = row_span(w, r);
		put_rate(perf_tokens_per_s(&r->perf, sp), ",\"tokens_per_s\":%.1f",
		    ",\"tokens_per_s\":null");
		put_rate(perf_tflops(&r->perf, sp), ",\"tflops_per_gpu\":%.3f",
		    ",\"tflops_per_gpu\":null");
		put_rate(perf_mfu(&r->perf, sp), ",\"mfu\":%.4f", ",\"mfu\":null");
		perf_json(&r->perf);
		if (b != NULL) {
			put_rate(b->tps, ",\"base_tokens_per_s\":%.1f", ",\"base_tokens_per_s\":null");
			put_rate(b->tfl, ",\"base_tflops_per_gpu\":%.3f",
			    ",\"base_tflops_per_gpu\":null");
			put_rate(b->mfu, ",\"base_mfu\":%.4f", ",\"base_mfu\":null");
		} else {
			printf(",\"base_tokens_per_s\":null,\"base_tflops_per_gpu\":null,"
			    "\"base_mfu\":null");
		}
		printf("}\n");
	} else {
		int layout = pred || w->base != NULL ? 2 : 1;

		int un = r->uspan >= 0;

		if (un)
			layout += 2;
		if (!*header || w->layout != layout) {
			if (layout % 2 == 0)
				printf("%-5s %-9s %10s %10s %8s | %9s %9s %9s %9s | %5s", "rank", "iter",
				    "base ms", pred ? "pred ms" : "sim ms", "change %", "exp.comp",
				    "overlap", "exp.comm", "other", "util");
			else
				printf("%-5s %-9s %10s %10s %7s | %9s %9s %9s %9s | %5s", "rank", "iter",
				    "meas ms", "sim ms", "err %", "exp.comp", "overlap", "exp.comm",
				    "other", "util");
			if (un)
				printf(" | %10s", "unprof ms");
			putchar('\n');
			*header = 1;
			w->layout = layout;
		}
		layout = layout > 2 ? layout - 2 : layout;
		put_key(r->rank, "-", 5, r->rank == JOB);
		putchar(' ');
		put_key(r->iter, "-", 9, 0);
		putchar(' ');
		if (layout == 2) {
			if (b != NULL)
				printf("%10.3f ", (double)b->ns / 1e6);
			else
				printf("%10s ", "-");
			if (r->sim || !pred)
				printf("%10.3f", (double)v->span / 1e6);
			else
				printf("%10s", "-");
			if (b != NULL && (r->sim || !pred))
				printf(" %+8.2f", pct(v->span, b->ns, b->ns));
			else
				printf(" %8s", "-");
		} else {
			printf("%10.3f ", (double)r->m.span / 1e6);
			if (r->sim)
				printf("%10.3f %+7.2f", (double)r->s.span / 1e6,
				    pct(r->s.span, r->m.span, r->m.span));
			else
				printf("%10s %7s", "-", "-");
		}
		printf(" | %9.3f %9.3f %9.3f %9.3f | %4.0f%%", (double)v->comp / 1e6,
		    (double)v->over / 1e6, (double)v->comm / 1e6, (double)v->other / 1e6,
		    100 * (r->sim ? r->s.util : r->m.util));
		if (un)
			printf(" | %10.3f", (double)r->uspan / 1e6);
		putchar('\n');
		if (r->sim && layout == 1)
			printf("%-5s %-9s %10s %10s %7s | %+9.2f %+9.2f %+9.2f %+9.2f | (err, %% of span)\n",
			    "", "", "", "", "", pct(r->s.comp, r->m.comp, r->m.span),
			    pct(r->s.over, r->m.over, r->m.span), pct(r->s.comm, r->m.comm, r->m.span),
			    pct(r->s.other, r->m.other, r->m.span));
	}
}

/* The median of v[0..n) (sorted in place), n > 0; the mean of the two
 * middle ones when n is even. */
static double
median(int64_t *v, size_t n)
{
	qsort(v, n, sizeof(*v), cmp_i64);
	return n % 2 ? (double)v[n / 2] : ((double)v[n / 2 - 1] + (double)v[n / 2]) / 2;
}

/*
 * The median line's second half: the step without the profiler's cost
 * (uv, n of them), how the cost was found, and the base's (ubv, NULL:
 * none) with the change.
 */
static void
unprofiled_text(const struct whatif *w, int64_t *uv, size_t n, int64_t *ubv)
{
	double med = median(uv, n), bmed;

	printf("  without the profiler: %s %.3f ms (%.3f to %.3f)", w->edited ? "predicted" :
	    "simulated", med / 1e6, (double)uv[0] / 1e6, (double)uv[n - 1] / 1e6);
	if (strcmp(w->pcal, "calibrated") == 0 && w->ustep > 0)
		printf(", its cost calibrated to a step of %.3f ms (%.3f us a host event)",
		    (double)w->ustep / 1e6, (double)w->pcost / 1e3);
	else if (strcmp(w->pcal, "estimated") == 0 && w->pcost >= 0)
		printf(", its cost estimated (%.3f us a host event: kineto2graph --step-time "
		    "calibrates it)", (double)w->pcost / 1e3);
	else if (w->pcost >= 0)
		printf(", its cost %s (%.3f us a host event)", w->pcal[0] ? w->pcal : "given",
		    (double)w->pcost / 1e3);
	if (ubv != NULL) {
		bmed = median(ubv, n);
		printf("; base %.3f ms (change %+.2f%%)", bmed / 1e6,
		    bmed > 0 ? 100 * (med - bmed) / bmed : 0);
	}
	putchar('\n');
}

void
print_median(const struct whatif *w, const struct row *rows, size_t n)
{
	int64_t *v, *sv = NULL, *bv = NULL, *uv = NULL, *ubv = NULL;
	const struct brow *b;
	size_t i, nb = 0, nu = 0, nub = 0;
	double med, smed, bmed;
	int pred = w->edited, sim = n > 0 && rows[0].sim;

	if (n == 1 && !w->collect && rows[0].uspan >= 0) {
		int64_t u = rows[0].uspan, ub = -1;

		if (w->base != NULL && (b = base_of(w, &rows[0])) != NULL)
			ub = b->uns;
		unprofiled_text(w, &u, 1, ub >= 0 ? &ub : NULL);
	}
	if (n < 2 || w->collect || (pred && !sim))
		return;
	v = xmalloc(n * sizeof(*v));
	if (sim && !pred)
		sv = xmalloc(n * sizeof(*sv));
	if (w->base != NULL)
		bv = xmalloc(n * sizeof(*bv));
	uv = xmalloc(n * sizeof(*uv));
	ubv = xmalloc(n * sizeof(*ubv));
	for (i = 0; i < n; i++) {
		v[i] = pred ? rows[i].s.span : rows[i].m.span;
		if (sv != NULL)
			sv[i] = rows[i].s.span;
		if (rows[i].uspan >= 0)
			uv[nu++] = rows[i].uspan;
		if (bv != NULL && (b = base_of(w, &rows[i])) != NULL) {
			bv[nb++] = b->ns;
			if (b->uns >= 0)
				ubv[nub++] = b->uns;
		}
	}
	med = median(v, n);
	printf("  median of %zu iterations: %s %.3f ms (%.3f to %.3f, %+.1f%% to %+.1f%%)",
	    n, pred ? "predicted" : "measured", med / 1e6, (double)v[0] / 1e6,
	    (double)v[n - 1] / 1e6, med > 0 ? 100 * ((double)v[0] - med) / med : 0,
	    med > 0 ? 100 * ((double)v[n - 1] - med) / med : 0);
	if (sv != NULL) {
		smed = median(sv, n);
		printf(", simulated %.3f ms (%+.2f%%)", smed / 1e6,
		    med > 0 ? 100 * (smed - med) / med : 0);
	}
	if (nb > 0) {
		bmed = median(bv, nb);
		printf(", base %.3f ms (change %+.2f%%)", bmed / 1e6,
		    bmed > 0 ? 100 * (med - bmed) / bmed : 0);
	}
	putchar('\n');
	if (nu == n)
		unprofiled_text(w, uv, n, nub == n ? ubv : NULL);
	free(v);
	free(sv);
	free(bv);
	free(uv);
	free(ubv);
}

static int
cmp_dbl(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* The median of the n known (>= 0) of v[0..n), sorted in place; -1 none. */
static double
dmedian(double *v, size_t n)
{
	size_t i, k = 0;

	for (i = 0; i < n; i++)
		if (v[i] >= 0)
			v[k++] = v[i];
	if (k == 0)
		return -1;
	qsort(v, k, sizeof(*v), cmp_dbl);
	return k % 2 ? v[k / 2] : (v[k / 2 - 1] + v[k / 2]) / 2;
}

/* FLOPs with an SI prefix, four figures: "72.99 T". */
static const char *
si(double v, char *b, size_t len)
{
	static const char pre[] = " kMGTPE";
	int k = 0;

	while (v >= 1000 && k < 6)
		v /= 1000, k++;
	if (k == 0)
		snprintf(b, len, "%.4g", v);
	else
		snprintf(b, len, "%.4g %c", v, pre[k]);
	return b;
}

/* tokens/s (per GPU), TFLOP/s per GPU and MFU, each where known. */
static void
rates_text(double tps, int64_t gpus, double tfl, double mfu)
{
	const char *sep = "";

	if (tps >= 0 && gpus > 0)
		printf("%.0f tokens/s (%.0f per GPU)", tps, tps / (double)gpus);
	else if (tps >= 0)
		printf("%.0f tokens/s", tps);
	if (tps >= 0)
		sep = ", ";
	if (tfl >= 0) {
		printf("%s%.1f TFLOP/s per GPU", sep, tfl);
		sep = ", ";
	}
	if (mfu >= 0)
		printf("%sMFU %.1f%%", sep, 100 * mfu);
}

void
perf_text(const struct whatif *w, const struct row *rows, size_t n)
{
	double *v, tps, tfl, mfu, btps = -1, btfl = -1, bmfu = -1;
	char b1[32];
	const struct perf *p;
	const struct brow *b;
	size_t i, nb = 0;
	int base = 0;

	if (n == 0 || w->collect)
		return;
	p = &rows[n / 2].perf;
	if (!p->have)
		return; /* perf_missing says so */
	v = xmalloc(n * sizeof(*v));
#define MED(out, expr) do { \
	for (i = 0; i < n; i++) \
		v[i] = (expr); \
	out = dmedian(v, n); \
} while (0)
	MED(tps, perf_tokens_per_s(&rows[i].perf, row_span(w, &rows[i])));
	MED(tfl, perf_tflops(&rows[i].perf, row_span(w, &rows[i])));
	MED(mfu, perf_mfu(&rows[i].perf, row_span(w, &rows[i])));
	for (i = 0; i < n; i++)
		nb += whatif_base_of(w, &rows[i]) != NULL;
	if (nb > 0) {
		base = 1;
		MED(btps, (b = whatif_base_of(w, &rows[i])) != NULL ? b->tps : -1);
		MED(btfl, (b = whatif_base_of(w, &rows[i])) != NULL ? b->tfl : -1);
		MED(bmfu, (b = whatif_base_of(w, &rows[i])) != NULL ? b->mfu : -1);
	}
#undef MED
	free(v);
	if (tps >= 0 || tfl >= 0 || mfu >= 0) {
		printf("  throughput%s: ", n > 1 ? " (the iterations' median)" : "");
		rates_text(tps, p->gpus, tfl, mfu);
		if (base && (btps >= 0 || btfl >= 0 || bmfu >= 0)) {
			printf("; base ");
			rates_text(btps, -1, btfl, bmfu);
			if (mfu >= 0 && bmfu >= 0)
				printf(" (MFU %+.1f points)", 100 * (mfu - bmfu));
		}
		putchar('\n');
	}
	printf("  FLOPs a step per GPU: hardware %s", si(p->hw, b1, sizeof(b1)));
	printf(" (GEMMs %s", si(p->gemm, b1, sizeof(b1)));
	printf(", attention %s%s", si(p->attn, b1, sizeof(b1)),
	    p->causal ? ", its mask taken as causal" : "");
	if (p->recomp > 0)
		printf(", %lld attention forwards recomputed in the backward", (long long)p->recomp);
	printf(")");
	if (p->model >= 0) {
		printf(", model %s (6 N T: %lld parameters, %lld tokens a data-parallel replica",
		    si(p->model, b1, sizeof(b1)), (long long)p->params,
		    (long long)(p->tokens / (p->dp > 0 ? p->dp : 1)));
		printf("; attention %s)", si(p->attn_model, b1, sizeof(b1)));
	}
	printf("; other ops %s apart (an element each)\n", si(p->other, b1, sizeof(b1)));
	if (p->rc_n > 0)
		printf("  recompute (forward work run again in the backward, rc): %.3f ms of GPU "
		    "work a step per GPU, %lld GPU tasks\n", p->rc_ns / 1e6, (long long)p->rc_n);
	if (p->tokens >= 0)
		printf("  tokens a step: %lld (data-parallel degree %lld, %lld GPU%s)\n",
		    (long long)p->tokens, (long long)p->dp, (long long)p->gpus,
		    p->gpus == 1 ? "" : "s");
	else
		printf("  tokens a step: no loss nor embedding call with shapes in the graph:"
		    " no tokens/s, model FLOPs nor MFU\n");
	if (p->peak > 0)
		printf("  GPU peak: %g TFLOP/s dense bf16/fp16 (%s)\n", p->peak, p->gpu);
	else if (w->cfg.gpu[0] != '\0')
		printf("  GPU peak: not known for %s: no MFU (--peak-tflops TFLOPS)\n", w->cfg.gpu);
	else
		printf("  GPU peak: the graph names no GPU: no MFU (--peak-tflops TFLOPS)\n");
}

void
perf_missing(const struct whatif *w, const struct row *rows, size_t n)
{
	if (n > 0 && !w->collect && !rows[n / 2].perf.have)
		printf("  FLOPs, tokens/s and MFU: no operator shapes in the graph (record_shapes)\n");
}
