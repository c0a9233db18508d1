/*
 * split: a large plain trace parsed in two halves at once (jp.h).
 *
 * A plain file (a regular one, of SPLIT_MIN bytes or
 * more, on two CPUs or more) is parsed in two halves at once: the second
 * on a thread, from an event's `{` near the middle, as if it began with
 * `{"traceEvents":[` (which is where that `{` sits: in the top-level
 * object's traceEvents array), into a trace of its own; the first on the
 * caller's thread up to the `}` before it, where its own parser must
 * have just closed an event of traceEvents (else the place was not
 * between two events: in a string, in another array). Then the second
 * half's events, strings, processors and counts are taken into the
 * first's, renumbered, in the order a parse of the whole would have
 * made them. Where the place is wrong, or the second half fails or
 * meets what needs the first half's events (an op's Module Hierarchy
 * extends spans before it), its work is dropped and the first parse
 * goes on through the rest of the file: errors are told by the parse
 * of the whole, at the same byte with the same words.
 * KG_SPLIT_PARSE=0 never splits; =always splits a file of any size
 * (for the tests, which compare the graphs both ways).
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "jp.h"
#include "k2g.h"
#include "util.h"

#define SPLIT_MIN ((uint64_t)16 << 20)
/* Bytes past the middle searched for a place between two events. */
#define SPLIT_WINDOW ((size_t)1 << 20)

static int split_on = 1;

void
trace_split(int on)
{
	split_on = on;
}

static int
is_ws(unsigned char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

/*
 * The first place in w[0..n) that looks between two events: the `}` at
 * *close, the next `{` at *open, only blanks and one comma between. 0
 * if none.
 */
int
split_between(const unsigned char *w, size_t n, size_t *close, size_t *open)
{
	size_t i, j;

	for (i = 0; i < n; i++) {
		if (w[i] != '}')
			continue;
		for (j = i + 1; j < n && is_ws(w[j]); j++)
			;
		if (j == n || w[j] != ',')
			continue;
		for (j++; j < n && is_ws(w[j]); j++)
			;
		if (j < n && w[j] == '{') {
			*close = i;
			*open = j;
			return 1;
		}
	}
	return 0;
}

/* Such a place near the middle of the file (fd, size bytes), as offsets
 * in it; 0 if none in the window looked at. */
static int
split_point(int fd, uint64_t size, uint64_t *close, uint64_t *open)
{
	uint64_t from = size / 2;
	size_t want = size - from < SPLIT_WINDOW ? (size_t)(size - from) : SPLIT_WINDOW, c, o;
	unsigned char *w = xmalloc(want + 1);
	ssize_t got = pread(fd, w, want, (off_t)from);
	int found = got > 0 && split_between(w, (size_t)got, &c, &o);

	if (found)
		*close = from + c, *open = from + o;
	free(w);
	return found;
}

/* The second half's parse, on its thread. */
struct half {
	struct trace t;
	struct jp p;
	int fd;
	uint64_t from;       /* its first byte: an event's `{` (a plain file) */
	struct input *in;    /* a gzip input: its own reading of the file */
	unsigned char *rem;  /* (the inflated bytes from the `{` on, first) */
	size_t nrem;
	uint64_t at;         /* gzip: where the search begins, inflated */
	uint64_t limit;      /* gzip: where the first half ends; UINT64_MAX: none */
	int decided;         /* gzip: limit is known */
	uint64_t xxh3;       /* gzip: the whole file's hash, read to its end */
	pthread_mutex_t mu;
	pthread_cond_t cv;
	int stop;            /* asked to stop (its work is not wanted) */
	int ok;              /* parsed to the end, nothing amiss */
	pthread_t th;
};

static void *
half_run(void *arg)
{
	static const char pre[] = "{\"traceEvents\":[";
	struct half *b = arg;
	unsigned char *buf = xmalloc(CHUNK);
	struct strscan scan = { 0, 0, 0 };
	uint64_t at = b->from;
	yajl_handle h = yajl_alloc(&jp_callbacks, NULL, &b->p);
	ssize_t n;

	if (yajl_parse(h, (const unsigned char *)pre, sizeof(pre) - 1) != yajl_status_ok)
		goto out;
	while (!__atomic_load_n(&b->stop, __ATOMIC_RELAXED)) {
		if (b->in == NULL) {
			n = pread(b->fd, buf, CHUNK, (off_t)at);
		} else if (b->nrem > 0) {
			n = (ssize_t)b->nrem;
			memcpy(buf, b->rem, b->nrem); /* a piece: at most CHUNK */
			b->nrem = 0;
		} else {
			size_t got;

			n = input_next(b->in, buf, CHUNK, &got) < 0 ? -1 : (ssize_t)got;
		}
		if (n < 0)
			goto out;
		if (n == 0)
			break;
		if (scan_strings(&scan, buf, (size_t)n) < (size_t)n ||
		    yajl_parse(h, buf, (size_t)n) != yajl_status_ok || b->p.tainted)
			goto out;
		at += (uint64_t)n;
	}
	if (!__atomic_load_n(&b->stop, __ATOMIC_RELAXED) &&
	    yajl_complete_parse(h) == yajl_status_ok && !b->p.tainted && b->p.err[0] == '\0') {
		b->ok = 1;
		if (b->in != NULL)
			b->xxh3 = input_hash(b->in);
	}
out:
	yajl_free(h);
	free(buf);
	return NULL;
}

static void
half_release(struct half *b)
{
	free(b->rem);
	if (b->in != NULL) {
		input_close(b->in);
		pthread_mutex_destroy(&b->mu);
		pthread_cond_destroy(&b->cv);
	}
	trace_release(&b->t);
	free(b->p.c.name);
	free(b->p.c.cap);
	free(b->p.c.aname);
	free(b);
}

static uint32_t
remap(const uint32_t *m, size_t n, uint32_t id)
{
	return id < n ? m[id] : KG_NONE;
}

/*
 * The second half b taken into t (its first half, read by p): what a
 * parse of the whole would have made, in the same order.
 */
static void
half_merge(struct trace *t, struct jp *p, struct half *b)
{
	struct trace *u = &b->t;
	uint32_t *sm = xmalloc((u->str.n + 1) * sizeof(*sm));
	uint32_t *pm = xmalloc((u->nproc + 1) * sizeof(*pm));
	uint32_t *hm = xmalloc((u->nshp + 1) * sizeof(*hm));
	size_t i, nsync = t->nsync, nbytes = t->nbytes, ncoll = t->ncoll;
	const struct skips *k = &b->p.skips;
	int j;

	for (i = 0; i < u->str.n; i++)
		sm[i] = intern_get(&t->str, u->str.str[i], u->str.len[i]);
	for (i = 0; i < u->nproc; i++) {
		pm[i] = trace_proc(t, u->proc[i].pid, u->proc[i].tid, u->proc[i].gpu);
		if (u->proc[i].name != KG_NONE)
			t->proc[pm[i]].name = remap(sm, u->str.n, u->proc[i].name);
	}
	for (i = 0; i < u->nshp; i++)
		hm[i] = shapes_pair(t, remap(sm, u->str.n, u->shp[i].dims),
		    remap(sm, u->str.n, u->shp[i].types));
	for (i = 0; i < u->ncoll; i++) {
		struct collmeta m = u->coll[i];

		m.name = remap(sm, u->str.n, m.name);
		m.dtype = remap(sm, u->str.n, m.dtype);
		m.pg = remap(sm, u->str.n, m.pg);
		m.pgr = remap(sm, u->str.n, m.pgr);
		VEC_PUSH(t->coll, t->ncoll, t->capcoll, m);
	}
	for (i = 0; i < u->nsync; i++)
		VEC_PUSH(t->sync, t->nsync, t->capsync, u->sync[i]);
	for (i = 0; i < u->nbytes; i++)
		VEC_PUSH(t->bytes, t->nbytes, t->capbytes, u->bytes[i]);
	if (u->nev > 0) {
		grow(&t->ev, &t->capev, t->nev + u->nev, sizeof(*t->ev));
		for (i = 0; i < u->nev; i++) {
			struct ev e = u->ev[i];

			e.name = remap(sm, u->str.n, e.name);
			e.shapes = remap(hm, u->nshp, e.shapes);
			e.proc = remap(pm, u->nproc, e.proc);
			if (e.extra != KG_NONE)
				e.extra += (uint32_t)(e.cls == EV_SYNC ? nsync : e.cls == EV_CPY ||
				    e.cls == EV_SET ? nbytes : ncoll);
			t->ev[t->nev++] = e;
		}
		free(u->ev);
		u->ev = NULL;
		u->nev = u->capev = 0;
	}
	for (i = 0; i < u->nmod; i++) {
		struct modspan m = u->mod[i];

		m.proc = remap(pm, u->nproc, m.proc);
		m.cls = remap(sm, u->str.n, m.cls);
		VEC_PUSH(t->mod, t->nmod, t->capmod, m);
	}
	for (i = 0; i < u->nmem; i++) {
		struct memev m = u->mem[i];

		m.proc = remap(pm, u->nproc, m.proc);
		VEC_PUSH(t->mem, t->nmem, t->capmem, m);
	}
	for (i = 0; i < u->npgcfg; i++) {
		struct pgcfg g = { remap(sm, u->str.n, u->pgcfg[i].name),
		    remap(sm, u->str.n, u->pgcfg[i].ranks) };

		VEC_PUSH(t->pgcfg, t->npgcfg, t->cappgcfg, g);
	}
	for (i = 0; i < u->ndev && t->ndev < 64; i++) {
		struct tdev d = u->dev[i];

		d.name = remap(sm, u->str.n, d.name);
		VEC_PUSH(t->dev, t->ndev, t->capdev, d);
	}
	if (b->p.set_base)
		t->base_ns = u->base_ns;
	if (b->p.set_rank)
		t->rank = u->rank;
	if (b->p.set_world)
		t->world = u->world;
	t->nevents += u->nevents;
	for (i = 0; i < u->cov.n; i++)
		kg_cov_add(&t->cov, u->cov.name[i], u->cov.val[i]);
	/* the skipped categories, each where it was first seen */
	for (j = 0; j < k->used; j++)
		skip_add(&p->skips, k->name[j], k->len[j], k->n[j]);
	p->skips.other += k->other;
	free(sm);
	free(pm);
	free(hm);
}

/*
 * Whether fp may be split at all: a regular file read from its start,
 * on two CPUs or more, splitting not turned off. Its descriptor and
 * size, and the least size worth it (SPLIT_MIN, or 2 with
 * KG_SPLIT_PARSE=always); -1 if not.
 */
static int
split_file(FILE *fp, uint64_t *size, uint64_t *least)
{
	const char *e = getenv("KG_SPLIT_PARSE");
	int fd = fileno(fp);
	struct stat st;

	if (!split_on || (e != NULL && strcmp(e, "0") == 0) || fd < 0 ||
	    sysconf(_SC_NPROCESSORS_ONLN) < 2 || fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) ||
	    ftello(fp) != 0)
		return -1;
	*size = (uint64_t)st.st_size;
	*least = e != NULL && strcmp(e, "always") == 0 ? 2 : SPLIT_MIN;
	return fd;
}

/* A second half of file, its thread not started. */
static struct half *
half_new(const char *file)
{
	struct half *b = xcalloc(1, sizeof(*b));

	trace_init(&b->t, file);
	b->p.t = &b->t;
	b->p.second = 1;
	b->fd = -1;
	return b;
}

/*
 * Start the second half's parse of fp, when it is worth one: its first
 * half then ends at *limit (the `}` of the last event before it, +1).
 * NULL when the file is not split.
 */
struct half *
split_start(FILE *fp, const char *file, uint64_t *limit)
{
	uint64_t size, least, close, open;
	int fd = split_file(fp, &size, &least);
	struct half *b;

	if (fd < 0 || size < least || !split_point(fd, size, &close, &open))
		return NULL;
	b = half_new(file);
	b->fd = fd;
	b->from = open;
	if (pthread_create(&b->th, NULL, half_run, b) != 0) {
		half_release(b);
		return NULL;
	}
	*limit = close + 1;
	return b;
}

/* Tell the caller where the first half ends (UINT64_MAX: it does not). */
static void
gz_decide(struct half *b, uint64_t limit)
{
	pthread_mutex_lock(&b->mu);
	if (!b->decided) {
		b->limit = limit;
		b->decided = 1;
		pthread_cond_broadcast(&b->cv);
	}
	pthread_mutex_unlock(&b->mu);
}

/*
 * A gzip input's second half, on its thread, from a reading of its own:
 * the bytes up to b->at inflated and passed over (faster than the
 * caller parses them), then a place between two events looked for in
 * the next SPLIT_WINDOW bytes; the caller told where, and the rest
 * parsed as a plain file's second half is (half_run). Where no place is
 * found, or the input fails, the caller is told there is none and parses
 * it all.
 */
static void *
half_run_gz(void *arg)
{
	struct half *b = arg;
	unsigned char *buf = xmalloc(CHUNK);
	uint64_t off = 0;
	size_t n, close, open;

	while (off < b->at) {
		size_t want = b->at - off < CHUNK ? (size_t)(b->at - off) : CHUNK;

		if (__atomic_load_n(&b->stop, __ATOMIC_RELAXED) || input_next(b->in, buf, want, &n) < 0 ||
		    n == 0)
			goto none;
		off += n;
	}
	for (;;) {
		if (__atomic_load_n(&b->stop, __ATOMIC_RELAXED) || off - b->at >= SPLIT_WINDOW ||
		    input_next(b->in, buf, CHUNK, &n) < 0 || n == 0)
			goto none;
		if (split_between(buf, n, &close, &open))
			break;
		off += n;
	}
	b->rem = xmalloc(n - open + 1);
	memcpy(b->rem, buf + open, n - open);
	b->nrem = n - open;
	free(buf);
	gz_decide(b, off + close + 1);
	return half_run(b);
none:
	free(buf);
	gz_decide(b, UINT64_MAX);
	return NULL;
}

/*
 * A gzip input in two halves, when it is worth it (a regular file whose
 * gzip trailer says SPLIT_MIN bytes or more of JSON; with more than one
 * member, the trailer gives the last one's size, and the place looked
 * for is about the middle of that, which is as correct if less even):
 * the second half's thread, which finds the place from about the middle
 * (*at, in inflated bytes: the caller parses no further before
 * split_gz_limit says where). NULL if not split.
 */
struct half *
split_start_gz(FILE *fp, const char *file, uint64_t *at)
{
	uint64_t size, least;
	int fd = split_file(fp, &size, &least);
	unsigned char tail[4];
	uint32_t isize;
	struct half *b;

	if (fd < 0 || size < 20 || pread(fd, tail, 4, (off_t)size - 4) != 4)
		return NULL;
	isize = (uint32_t)tail[0] | (uint32_t)tail[1] << 8 | (uint32_t)tail[2] << 16 |
	    (uint32_t)tail[3] << 24;
	/* less than the file: of another member, or past 4 GiB */
	if (isize < size || isize < least)
		return NULL;
	b = half_new(file);
	b->at = isize / 2;
	b->limit = UINT64_MAX;
	b->in = input_open_fd(fd);
	pthread_mutex_init(&b->mu, NULL);
	pthread_cond_init(&b->cv, NULL);
	if (b->in == NULL || pthread_create(&b->th, NULL, half_run_gz, b) != 0) {
		half_release(b);
		return NULL;
	}
	*at = b->at;
	return b;
}

uint64_t
split_gz_limit(struct half *b)
{
	uint64_t limit;

	pthread_mutex_lock(&b->mu);
	while (!b->decided)
		pthread_cond_wait(&b->cv, &b->mu);
	limit = b->limit;
	pthread_mutex_unlock(&b->mu);
	return limit;
}

int
split_end(struct half *b, int take, struct trace *t, struct jp *p)
{
	int ok;

	if (!take)
		__atomic_store_n(&b->stop, 1, __ATOMIC_RELAXED);
	pthread_join(b->th, NULL);
	ok = take && b->ok;
	if (ok) {
		half_merge(t, p, b);
		if (b->in != NULL)
			t->xxh3 = b->xxh3;
	}
	half_release(b);
	return ok;
}
