/*
 * kgrecords: the decoders of a section's records other than its tasks
 * and edges (kgdecode.c): the header, which starts a section and says
 * its ranks, its run of sections and the tools that wrote it; str and
 * proc, which tasks refer to; cov; the sim record's arrays; and the end
 * record, whose counts must be those the reader found. Each decodes the
 * pairs after the record's type (kg_dec_record) into the kg_rec, keeps
 * what the section needs in the reader (strings, the header's arrays,
 * the sim record's times), and refuses what the format does not allow
 * with a message naming the record and field. A decoder may run twice
 * on one record (kgread.c: the buffer ended inside it), so it only
 * changes the reader in ways a second run redoes.
 */
#include "kg.h"

#include <stdlib.h>
#include <string.h>

#include "kg_int.h"
#include "util.h"


/*
 * A job section's ranks: at least 0, ascending without repeats, below
 * the world size when the header says one; their clock offsets and
 * starts in the range of times.
 */
static int
check_ranks(struct dec *d, const struct kg_header *h)
{
	struct kg_reader *r = d->r;
	unsigned long long rec = (unsigned long long)r->nrec + 1;
	size_t i;

	for (i = 0; i < r->nranks; i++) {
		int64_t v = r->ranks[i];

		if (v < 0 || (h->world >= 0 && v >= h->world)) {
			kg_seterr(r->err, "record %llu: field ranks: %lld is not a rank of a world of %lld",
			    rec, (long long)v, (long long)h->world);
			return -1;
		}
		if (i > 0 && v <= r->ranks[i - 1]) {
			kg_seterr(r->err, "record %llu: field ranks: %s (%lld after %lld)", rec,
			    v == r->ranks[i - 1] ? "a rank given twice" : "not ascending",
			    (long long)v, (long long)r->ranks[i - 1]);
			return -1;
		}
		if ((r->nclk > 0 && check_time(d, "clk", r->clk[i]) < 0) ||
		    (r->nt0 > 0 && check_time(d, "t0", r->t0[i]) < 0))
			return -1;
	}
	grow(&r->rseen, &r->caprseen, r->nranks, 1);
	memset(r->rseen, 0, r->nranks);
	return 0;
}

/* A string the reader keeps for the section, into *to. */
static int
get_copy(struct dec *d, const char *key, char **to)
{
	const char *s;
	size_t len;

	if (get_str(d, key, &s, &len) < 0)
		return -1;
	free(*to);
	*to = xstrndup(s, len);
	return 0;
}

int
kg_dec_header(struct dec *d, uint32_t npairs, struct kg_header *h)
{
	/* the plain integers, and the strings the reader keeps */
	static const char *const ikeys[] = { "rank", "world", "gpu_mem", "gpu_sms" };
	static const char *const skeys[] = { "producer", "source", "gpu", "failed" };
	struct kg_reader *r = d->r;
	int64_t *ints[] = { &h->rank, &h->world, &h->gpu_mem, &h->gpu_sms };
	char **strs[] = { &r->producer, &r->source, &r->gpu, &r->failed };
	struct mp_val k, x;
	uint32_t i, j;
	int have_format = 0, have_major = 0, have_unit = 0;
	int64_t v;
	const char *s;
	size_t len;

	kg_free_section(r);
	r->hrec = r->nrec + 1;
	memset(h, 0, sizeof(*h));
	h->rank = h->world = -1;
	h->source = "";
	h->gpu = "";
	h->gpu_mem = h->gpu_sms = -1;
	h->pcal = "";
	h->pcost = h->ustep = -1;
	for (i = 0; i < npairs; i++) {
		int at;

		if (get_key(d, &k) < 0)
			return -1;
		if ((at = lookup(ikeys, 4, k.s, k.n)) >= 0) {
			if (get_i64(d, ikeys[at], ints[at]) < 0)
				return -1;
		} else if ((at = lookup(skeys, 4, k.s, k.n)) >= 0) {
			if (get_copy(d, skeys[at], strs[at]) < 0)
				return -1;
		} else if (MP_IS(&k, "format")) {
			if (get_str(d, "format", &s, &len) < 0)
				return -1;
			if (len != strlen(KG_FORMAT) || memcmp(s, KG_FORMAT, len) != 0) {
				kg_seterr(r->err, "not a graph stream (format '%.*s')",
				    (int)(len > 40 ? 40 : len), s);
				return -1;
			}
			have_format = 1;
		} else if (MP_IS(&k, "major")) {
			if (get_i64(d, "major", &v) < 0)
				return -1;
			if (v != KG_MAJOR) {
				kg_seterr(r->err, "unsupported graph stream version %lld (this reader knows %d)",
				    (long long)v, KG_MAJOR);
				return -1;
			}
			h->major = (uint32_t)v;
			have_major = 1;
		} else if (MP_IS(&k, "minor")) {
			if (get_i64(d, "minor", &v) < 0)
				return -1;
			h->minor = (uint32_t)v;
		} else if (MP_IS(&k, "pcal")) {
			if (get_str(d, "pcal", &s, &len) < 0)
				return -1;
			if (len > 0 && !(len == 10 && memcmp(s, "calibrated", 10) == 0) &&
			    !(len == 9 && memcmp(s, "estimated", 9) == 0) &&
			    !(len == 5 && memcmp(s, "given", 5) == 0))
				return fielderr(d, "pcal", "\"calibrated\", \"estimated\" or \"given\"");
			free(r->pcal);
			r->pcal = xstrndup(s, len);
		} else if (MP_IS(&k, "pcost") || MP_IS(&k, "ustep")) {
			int64_t *f = k.s[0] == 'p' ? &h->pcost : &h->ustep;

			if (get_i64(d, k.s[0] == 'p' ? "pcost" : "ustep", f) < 0)
				return -1;
			if (*f < 0 || *f > KG_TIME_MAX)
				return fielderr(d, k.s[0] == 'p' ? "pcost" : "ustep",
				    "a time of 0 to 2^53 ns");
		} else if (MP_IS(&k, "tbase")) {
			if (get_i64(d, "tbase", &h->tbase) < 0)
				return -1;
			if (h->tbase <= -KG_TBASE_MAX || h->tbase >= KG_TBASE_MAX) {
				kg_seterr(r->err, "record %llu: field tbase: %lld ns is out of range",
				    (unsigned long long)r->nrec + 1, (long long)h->tbase);
				return -1;
			}
		} else if (MP_IS(&k, "unit")) {
			if (get_str(d, "unit", &s, &len) < 0)
				return -1;
			if (len != 2 || memcmp(s, "ns", 2) != 0) {
				kg_seterr(r->err, "record %llu: field unit: '%.*s', not 'ns'",
				    (unsigned long long)r->nrec + 1, (int)(len > 40 ? 40 : len), s);
				return -1;
			}
			have_unit = 1;
		} else if (MP_IS(&k, "section") || MP_IS(&k, "sections")) {
			if (get_of(d, k.n == 7 ? "section" : "sections", MP_UINT, "an integer >= 0", &x) < 0)
				return -1;
			if (k.n == 7)
				h->section = x.u;
			else
				h->sections = x.u;
		} else if (MP_IS(&k, "xxh3")) {
			if (get_of(d, "xxh3", MP_UINT, "an integer", &x) < 0)
				return -1;
			h->xxh3 = x.u;
		} else if (MP_IS(&k, "ranks") || MP_IS(&k, "clk") || MP_IS(&k, "t0")) {
			int which = k.s[0] == 'r' ? 0 : k.s[0] == 'c' ? 1 : 2;
			const char *key = which == 0 ? "ranks" : which == 1 ? "clk" : "t0";
			int64_t **a = which == 0 ? &r->ranks : which == 1 ? &r->clk : &r->t0;
			size_t *na = which == 0 ? &r->nranks : which == 1 ? &r->nclk : &r->nt0;
			size_t *ca = which == 0 ? &r->capranks : which == 1 ? &r->capclk : &r->capt0;
			uint32_t n;

			if (get_of(d, key, MP_ARRAY, "an array", &x) < 0)
				return -1;
			if (*na + x.n > KG_RANKS_MAX)
				return limiterr(d, key, *na + x.n, KG_RANKS_MAX);
			for (j = 0, n = x.n; j < n; j++) {
				if (get_i64(d, key, &v) < 0)
					return -1;
				grow(a, ca, *na + 1, sizeof(**a));
				(*a)[(*na)++] = v;
			}
		} else if (MP_IS(&k, "iters") || MP_IS(&k, "tools")) {
			int iters = k.s[0] == 'i';
			const char *key = iters ? "iters" : "tools";
			uint32_t n;

			if (get_of(d, key, MP_ARRAY, "an array", &x) < 0)
				return -1;
			if (iters && r->niters + x.n > KG_ITERS_MAX)
				return limiterr(d, key, r->niters + x.n, KG_ITERS_MAX);
			if (!iters && r->ntools + x.n > KG_TOOLS_MAX)
				return limiterr(d, key, r->ntools + x.n, KG_TOOLS_MAX);
			for (j = 0, n = x.n; j < n; j++) {
				if (iters) {
					if (get_i64(d, key, &v) < 0)
						return -1;
					grow(&r->iters, &r->capiters, r->niters + 1, sizeof(*r->iters));
					r->iters[r->niters++] = v;
				} else {
					if (get_str(d, key, &s, &len) < 0)
						return -1;
					grow(&r->tools, &r->captools, r->ntools + 1, sizeof(*r->tools));
					r->tools[r->ntools++] = xstrndup(s, len);
				}
			}
		} else if (mp_skip(&d->c) < 0) {
			return -1;
		}
	}
	if (h->sections > 0 && h->section >= h->sections) {
		kg_seterr(r->err, "record %llu: section %llu of %llu", (unsigned long long)r->nrec + 1,
		    (unsigned long long)h->section + 1, (unsigned long long)h->sections);
		return -1;
	}
	if (!have_format)
		return missing(d, "format");
	if (!have_major)
		return missing(d, "major");
	if (r->producer == NULL)
		return missing(d, "producer");
	if (!have_unit)
		return missing(d, "unit");
	h->producer = r->producer;
	if (r->source != NULL)
		h->source = r->source;
	if (r->gpu != NULL)
		h->gpu = r->gpu;
	if (r->pcal != NULL)
		h->pcal = r->pcal;
	h->iters = r->iters;
	h->niters = r->niters;
	h->tools = (const char *const *)r->tools;
	h->ntools = r->ntools;
	if (r->nranks > 0) {
		if ((r->nclk != 0 && r->nclk != r->nranks) || (r->nt0 != 0 && r->nt0 != r->nranks)) {
			kg_seterr(r->err, "record %llu: %zu ranks, but %zu clock offsets and %zu starts",
			    (unsigned long long)r->nrec + 1, r->nranks, r->nclk, r->nt0);
			return -1;
		}
		if (check_ranks(d, h) < 0)
			return -1;
		h->ranks = r->ranks;
		h->clk = r->nclk > 0 ? r->clk : NULL;
		h->t0 = r->nt0 > 0 ? r->t0 : NULL;
		h->nranks = r->nranks;
	}
	return 0;
}

int
kg_dec_str(struct dec *d, uint32_t npairs, struct kg_rec *rec)
{
	struct kg_reader *r = d->r;
	struct mp_val k;
	uint32_t i, id = KG_NONE;
	const char *s = NULL;
	size_t len = 0;

	for (i = 0; i < npairs; i++) {
		if (get_key(d, &k) < 0)
			return -1;
		if (MP_IS(&k, "id")) {
			if (get_u32(d, "id", &id) < 0)
				return -1;
		} else if (MP_IS(&k, "s")) {
			if (get_str(d, "s", &s, &len) < 0)
				return -1;
		} else if (mp_skip(&d->c) < 0) {
			return -1;
		}
	}
	if (id == KG_NONE)
		return missing(d, "id");
	if (s == NULL)
		return missing(d, "s");
	if (id != r->nstr) {
		kg_seterr(r->err, "record %llu: string id %u out of order (expected %zu)",
		    (unsigned long long)r->nrec + 1, id, r->nstr);
		return -1;
	}
	grow(&r->str, &r->capstr, r->nstr + 1, sizeof(*r->str));
	r->str[r->nstr++] = xstrndup(s, len);
	rec->str_id = id;
	return 0;
}

int
kg_dec_proc(struct dec *d, uint32_t npairs, struct kg_rec *rec)
{
	static const char *const pk[] = { "thread", "stream" };
	static const char *const need[] = { "id", "k", "pid", "tid" };
	struct kg_proc *p = &rec->proc;
	struct kg_reader *r = d->r;
	struct mp_val k, x;
	uint32_t i;
	int have = 0;

	memset(p, 0, sizeof(*p));
	p->id = p->name = KG_NONE;
	p->rank = -1;
	for (i = 0; i < npairs; i++) {
		int rc = 0;

		if (get_key(d, &k) < 0)
			return -1;
		if (MP_IS(&k, "id")) {
			rc = get_u32(d, "id", &p->id), have |= 1;
		} else if (MP_IS(&k, "k")) {
			rc = get_enum(d, "k", pk, 2, &p->kind), have |= 2;
		} else if (MP_IS(&k, "pid")) {
			rc = get_i64(d, "pid", &p->pid), have |= 4;
		} else if (MP_IS(&k, "tid")) {
			rc = get_i64(d, "tid", &p->tid), have |= 8;
		} else if (MP_IS(&k, "n")) {
			rc = get_u32(d, "n", &p->name);
		} else if (MP_IS(&k, "rank")) {
			rc = get_i64(d, "rank", &p->rank);
		} else if (MP_IS(&k, "main")) {
			rc = mp_next(&d->c, &x);
			p->main = rc == 0 && x.type == MP_BOOL && x.b;
			if (rc == 0 && (x.type == MP_ARRAY || x.type == MP_MAP))
				return fielderr(d, "main", "a boolean");
		} else {
			rc = mp_skip(&d->c);
		}
		if (rc < 0)
			return -1;
	}
	if (required(d, have, need, 4) < 0)
		return -1;
	if (p->id != r->nprocs) {
		kg_seterr(r->err, "record %llu: proc id %u out of order (expected %llu)",
		    (unsigned long long)r->nrec + 1, p->id, (unsigned long long)r->nprocs);
		return -1;
	}
	if (r->nranks > 0) {
		/* a job section's proc is on one of its ranks (ascending) */
		size_t lo = 0, hi = r->nranks;

		while (lo < hi) {
			size_t mid = lo + (hi - lo) / 2;

			if (r->ranks[mid] < p->rank)
				lo = mid + 1;
			else
				hi = mid;
		}
		if (lo == r->nranks || r->ranks[lo] != p->rank) {
			kg_seterr(r->err, "record %llu: field rank: %lld is not one of the job's ranks",
			    (unsigned long long)r->nrec + 1, (long long)p->rank);
			return -1;
		}
		r->rseen[lo] = 1;
	}
	return check_str_ref(d, "n", p->name);
}

int
kg_dec_cov(struct dec *d, uint32_t npairs, struct kg_rec *rec)
{
	struct kg_cov *c = &rec->cov;
	struct mp_val k, x, kk;
	uint32_t i, j, n;

	kg_cov_release(c);
	for (i = 0; i < npairs; i++) {
		if (get_key(d, &k) < 0)
			return -1;
		if (!MP_IS(&k, "c")) {
			if (mp_skip(&d->c) < 0)
				return -1;
			continue;
		}
		if (get_of(d, "c", MP_MAP, "a map", &x) < 0)
			return -1;
		if (c->n + x.n > KG_COV_MAX)
			return limiterr(d, "c", c->n + x.n, KG_COV_MAX);
		for (j = 0, n = x.n; j < n; j++) {
			int64_t v;

			if (mp_next(&d->c, &kk) < 0)
				return -1;
			if (kk.type != MP_STR) {
				kg_seterr(d->r->err, "record %llu: field c: key is not a string",
				    (unsigned long long)d->r->nrec + 1);
				return -1;
			}
			if (get_i64(d, "c", &v) < 0)
				return -1;
			kg_cov_set(c, kk.s, kk.n, v, 0);
		}
	}
	return 0;
}

/* One array of the sim record (which: 0 ss, 1 se, 2 uss, 3 use) into
 * the reader's buffer for it, n values. */
static int
dec_sim_times(struct dec *d, const char *key, int which, size_t *n)
{
	struct kg_reader *r = d->r;
	int64_t **buf[4] = { &r->ss, &r->se, &r->uss, &r->use };
	struct mp_val x;
	uint32_t j;
	int k;

	if (get_of(d, key, MP_ARRAY, "an array", &x) < 0)
		return -1;
	*n = x.n;
	/* a count that is not the section's is refused before anything is
	 * allocated for it */
	if (*n != r->ntasks) {
		kg_seterr(r->err, "record %llu: field %s: %zu times in a section of %llu tasks",
		    (unsigned long long)r->nrec + 1, key, *n, (unsigned long long)r->ntasks);
		return -1;
	}
	if (*n > r->capsim) {
		/* never more than the bytes in hand: a corrupt count must
		 * not allocate for 4 billion entries */
		if (*n > (size_t)(d->c.end - d->c.p)) {
			d->c.err = MP_ETRUNC;
			return -1;
		}
		for (k = 0; k < 4; k++)
			*buf[k] = xrealloc(*buf[k], *n * sizeof(**buf[k]));
		r->capsim = *n;
	}
	for (j = 0; j < *n; j++)
		if (get_i64(d, key, &(*buf[which])[j]) < 0)
			return -1;
	return 0;
}

/* Steps to starts, lengths to ends (formats/graph-stream.md, `sim`). */
static void
sim_absolute(int64_t *ss, int64_t *se, size_t n)
{
	size_t j;

	for (j = 0; j < n; j++) {
		/* unsigned: a corrupt step wraps, it does not overflow */
		if (j > 0)
			ss[j] = (int64_t)((uint64_t)ss[j] + (uint64_t)ss[j - 1]);
		se[j] = (int64_t)((uint64_t)se[j] + (uint64_t)ss[j]);
	}
}

/* Simulated starts and ends in the format's range, no end before its start. */
static int
sim_check(struct dec *d, const int64_t *ss, const int64_t *se, size_t n, const char *run)
{
	size_t j;

	for (j = 0; j < n; j++)
		if (!KG_TIME_OK(ss[j]) || !KG_TIME_OK(se[j]) || se[j] < ss[j]) {
			kg_seterr(d->r->err, "record %llu: task %zu: %ssimulated %s %lld ns%s",
			    (unsigned long long)d->r->nrec + 1, j, run,
			    !KG_TIME_OK(ss[j]) ? "start" : "end",
			    (long long)(!KG_TIME_OK(ss[j]) ? ss[j] : se[j]),
			    KG_TIME_OK(se[j]) && KG_TIME_OK(ss[j]) ? " before its start" :
			    " is out of range");
			return -1;
		}
	return 0;
}

int
kg_dec_sim(struct dec *d, uint32_t npairs, struct kg_rec *rec)
{
	struct kg_sim *s = &rec->sim;
	struct kg_reader *r = d->r;
	struct mp_val k;
	uint32_t i;
	size_t nss = 0, nse = 0, nu[2] = { 0, 0 };
	int64_t v;
	int have = 0, steps = 0, lens = 0;

	memset(s, 0, sizeof(*s));
	for (i = 0; i < npairs; i++) {
		const char *key = NULL;
		int rc, bit = 0;

		if (get_key(d, &k) < 0)
			return -1;
		if (MP_IS(&k, "tasks"))
			key = "tasks", bit = 1;
		else if (MP_IS(&k, "makespan"))
			key = "makespan", bit = 2;
		else if (MP_IS(&k, "ss") || MP_IS(&k, "ssd"))
			key = k.n == 2 ? "ss" : "ssd", bit = 4;
		else if (MP_IS(&k, "se") || MP_IS(&k, "sd"))
			key = k.s[1] == 'e' ? "se" : "sd", bit = 8;
		else if (MP_IS(&k, "ussd"))
			key = "ussd", bit = 16;
		else if (MP_IS(&k, "usd"))
			key = "usd", bit = 32;
		/* A repeated key is refused: a second array of another
		 * length would replace the first's values. */
		if (have & bit) {
			kg_seterr(r->err, "record %llu: field %s given twice",
			    (unsigned long long)r->nrec + 1, key);
			return -1;
		}
		have |= bit;
		if (bit == 1)
			rc = get_i64(d, "tasks", &v), s->tasks = (uint64_t)v;
		else if (bit == 2)
			rc = get_i64(d, "makespan", &s->makespan) < 0 ||
			    check_time(d, "makespan", s->makespan) < 0 ? -1 : 0;
		else if (bit == 4)
			rc = dec_sim_times(d, key, 0, &nss), steps = key[2] == 'd';
		else if (bit == 8)
			rc = dec_sim_times(d, key, 1, &nse), lens = key[1] == 'd';
		else if (bit == 16 || bit == 32)
			rc = dec_sim_times(d, key, bit == 16 ? 2 : 3, &nu[bit == 32]);
		else
			rc = mp_skip(&d->c);
		if (rc < 0)
			return -1;
	}
	if (!(have & 1))
		return missing(d, "tasks");
	if (!(have & 2))
		return missing(d, "makespan");
	if (!(have & 4) != !(have & 8))
		return missing(d, !(have & 4) ? (lens ? "ssd" : "ss") : (steps ? "sd" : "se"));
	if (!(have & 16) != !(have & 32))
		return missing(d, !(have & 16) ? "ussd" : "usd");
	if ((have & 16) && !(have & 4))
		return missing(d, "ssd");
	if ((have & 4) && steps != lens) {
		kg_seterr(r->err, "record %llu: sim record with %s and %s (1.3 writes ssd and sd, "
		    "earlier ss and se)", (unsigned long long)r->nrec + 1,
		    steps ? "ssd" : "ss", lens ? "sd" : "se");
		return -1;
	}
	if ((have & 4) && (nss != nse || nss != r->ntasks || s->tasks != r->ntasks)) {
		kg_seterr(r->err, "record %llu: sim record for %llu tasks (ss %zu, se %zu) in a section of %llu",
		    (unsigned long long)r->nrec + 1, (unsigned long long)s->tasks,
		    nss, nse, (unsigned long long)r->ntasks);
		return -1;
	}
	if (have & 4) {
		if (steps)
			sim_absolute(r->ss, r->se, nss);
		if (sim_check(d, r->ss, r->se, nss, "") < 0)
			return -1;
		s->ss = r->ss;
		s->se = r->se;
		s->n = nss;
	}
	if (have & 16) {
		/* the unprofiled run is written as steps and lengths only */
		sim_absolute(r->uss, r->use, nss);
		if (sim_check(d, r->uss, r->use, nss, "unprofiled ") < 0)
			return -1;
		s->uss = r->uss;
		s->use = r->use;
	}
	return 0;
}

int
kg_dec_end(struct dec *d, uint32_t npairs, struct kg_rec *rec)
{
	static const char *const keys[] = { "tasks", "edges", "procs", "strs" };
	struct kg_reader *r = d->r;
	uint64_t want[4] = { r->ntasks, r->nedges, r->nprocs, r->nstrs };
	struct mp_val k;
	uint32_t i;
	int j, have = 0;

	for (i = 0; i < npairs; i++) {
		int64_t v;

		if (get_key(d, &k) < 0)
			return -1;
		for (j = 0; j < 4; j++)
			if (k.n == strlen(keys[j]) && memcmp(k.s, keys[j], k.n) == 0)
				break;
		if (j == 4) {
			if (mp_skip(&d->c) < 0)
				return -1;
			continue;
		}
		if (get_i64(d, keys[j], &v) < 0)
			return -1;
		if ((uint64_t)v != want[j]) {
			kg_seterr(r->err, "corrupt graph stream (section says %lld %s, found %llu)",
			    (long long)v, keys[j], (unsigned long long)want[j]);
			return -1;
		}
		have |= 1 << j;
	}
	if (required(d, have, keys, 4) < 0)
		return -1;
	/* every rank a job section claims is there: a thread or stream of it */
	for (i = 0; i < r->nranks; i++)
		if (!r->rseen[i]) {
			kg_seterr(r->err, "record %llu: field ranks: rank %lld has no thread or stream in "
			    "the section", (unsigned long long)r->hrec, (long long)r->ranks[i]);
			return -1;
		}
	return 0;
}
