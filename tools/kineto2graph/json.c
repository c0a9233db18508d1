/*
 * Reading a Kineto trace: bytes in (plain or gzip), events out.
 *
 * YAJL parses the JSON in fixed-size chunks and calls back for each token;
 * a small context stack says where each token sits (the top-level object,
 * the traceEvents array, an event, its args, or a value we skip). An
 * event's fields are gathered as they come, in any key order, and the
 * event is classified and kept (or counted as skipped) at its closing
 * brace. Nothing of the JSON text is held beyond the current chunk and the
 * current event, so memory grows with the events kept, never with the
 * file.
 *
 * Known fields with the wrong type are errors; unknown fields and
 * categories are ignored and counted. A large plain file is parsed in
 * two halves at once (split.c); the parser's state is in jp.h.
 *
 * This file is the reading: the input's bytes (gzip told apart by its
 * magic number, hashed as read, read ahead on a thread of their own),
 * scanned for strings too long to parse, fed to YAJL chunk by chunk,
 * and its errors worded with their byte offset; the trace's own
 * init, release and processors. The callbacks are parse.c's (where a
 * token sits) and fields.c's (a value); an event's end is events.c's.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <xxhash.h>
#include <yajl_parse.h>
#include <zlib.h>

#include "ahead.h"
#include "jp.h"
#include "k2g.h"
#include "util.h"

/* Input: plain or gzip bytes, hashed as read. */
struct input {
	FILE *fp;
	int fd;              /* read by pread where fp is NULL (split.c's reading of a gzip file; tail_hash) */
	int gz, zinit, zend, eof;
	z_stream zs;
	unsigned char *raw;
	XXH3_state_t *h;
	uint64_t pos, limit; /* bytes read; where to stop for now (split.c) */
};

static int
raw_read(struct input *in, unsigned char *buf, size_t cap, size_t *n, char *err, size_t errlen)
{
	if (in->limit - in->pos < cap)
		cap = (size_t)(in->limit - in->pos);
	if (cap == 0) {
		*n = 0; /* at the limit: not the end */
		return 0;
	}
	if (in->fp == NULL) {
		ssize_t got = pread(in->fd, buf, cap, (off_t)in->pos);

		if (got < 0) {
			snprintf(err, errlen, "read error: %s", strerror(errno));
			return -1;
		}
		*n = (size_t)got;
	} else {
		*n = fread(buf, 1, cap, in->fp);
	}
	if (*n == 0 && in->fp != NULL && ferror(in->fp)) {
		snprintf(err, errlen, "read error: %s", strerror(errno ? errno : EIO));
		return -1;
	}
	if (*n > 0)
		XXH3_64bits_update(in->h, buf, *n);
	else
		in->eof = 1;
	in->pos += *n;
	return 0;
}

/* Fill buf with up to cap JSON bytes; *n = 0 at the end. */
static int
input_read(struct input *in, unsigned char *buf, size_t cap, size_t *n,
    uint64_t off, char *err, size_t errlen)
{
	size_t got;
	int rc;

	if (!in->gz)
		return in->eof ? (*n = 0, 0) : raw_read(in, buf, cap, n, err, errlen);
	in->zs.next_out = buf;
	in->zs.avail_out = (uInt)cap;
	while (in->zs.avail_out > 0) {
		if (in->zs.avail_in == 0 && !in->eof) {
			if (raw_read(in, in->raw, CHUNK, &got, err, errlen) < 0)
				return -1;
			in->zs.next_in = in->raw;
			in->zs.avail_in = (uInt)got;
		}
		if (in->zs.avail_in == 0 && in->eof) {
			if (!in->zend) {
				snprintf(err, errlen, "byte %llu: truncated gzip data",
				    (unsigned long long)(off + cap - in->zs.avail_out));
				return -1;
			}
			break;
		}
		if (in->zend) { /* another gzip member follows */
			inflateReset(&in->zs);
			in->zend = 0;
		}
		rc = inflate(&in->zs, Z_NO_FLUSH);
		if (rc == Z_STREAM_END) {
			in->zend = 1;
		} else if (rc != Z_OK && rc != Z_BUF_ERROR) {
			snprintf(err, errlen, "corrupt gzip data (%s)",
			    in->zs.msg ? in->zs.msg : "inflate failed");
			return -1;
		}
	}
	*n = cap - in->zs.avail_out;
	return 0;
}

int
input_next(struct input *in, unsigned char *buf, size_t cap, size_t *n)
{
	char err[256];

	return input_read(in, buf, cap, n, 0, err, sizeof(err));
}

struct input *
input_open_fd(int fd)
{
	struct input *in = xcalloc(1, sizeof(*in));

	in->fd = fd;
	in->gz = 1;
	in->limit = UINT64_MAX;
	in->raw = xmalloc(CHUNK);
	in->h = XXH3_createState();
	if (in->h == NULL || inflateInit2(&in->zs, 16 + MAX_WBITS) != Z_OK) {
		input_close(in);
		return NULL;
	}
	in->zinit = 1;
	XXH3_64bits_reset(in->h);
	return in;
}

uint64_t
input_hash(struct input *in)
{
	return XXH3_64bits_digest(in->h);
}

void
input_close(struct input *in)
{
	if (in->zinit)
		inflateEnd(&in->zs);
	if (in->h != NULL)
		XXH3_freeState(in->h);
	free(in->raw);
	free(in);
}

/* Read in from where it is to its end, hashing what it reads, into buf (CHUNK bytes). */
static int
hash_rest(struct input *in, unsigned char *buf, char *err, size_t errlen)
{
	size_t n;

	do {
		if (raw_read(in, buf, CHUNK, &n, err, errlen) < 0)
			return -1;
	} while (n > 0);
	return 0;
}

/*
 * The file's end hashed on a thread of its own, from where the first
 * half stopped (the second half's thread parsed it, not hashing: a hash
 * goes in order), while the caller builds the graph: it is the header's,
 * written after the build's analysis.
 */
struct tail_hash {
	pthread_t th;
	struct input in;         /* by pread of a dup of the input's fd, its hash so far */
	unsigned char *buf;      /* CHUNK bytes, the parser's: no new pages for it */
	int failed;
	char err[128];
};

static void *
tail_run(void *arg)
{
	struct tail_hash *th = arg;

	th->failed = hash_rest(&th->in, th->buf, th->err, sizeof(th->err)) < 0;
	return NULL;
}

/*
 * Hash in's file from in->pos to its end on a thread, for t, reading
 * into buf (CHUNK bytes, the thread's then); 0, or -1 (not started).
 */
static int
tail_start(struct trace *t, const struct input *in, int fd, unsigned char *buf)
{
	struct tail_hash *th = xcalloc(1, sizeof(*th));

	th->in.fd = dup(fd);
	th->in.pos = in->pos;
	th->in.limit = UINT64_MAX;
	th->in.h = XXH3_createState();
	th->buf = buf;
	if (th->in.h != NULL)
		XXH3_copyState(th->in.h, in->h);
	if (th->in.h == NULL || th->in.fd < 0 ||
	    pthread_create(&th->th, NULL, tail_run, th) != 0) {
		if (th->in.fd >= 0)
			close(th->in.fd);
		XXH3_freeState(th->in.h);
		free(th);
		return -1;
	}
	t->tail = th;
	return 0;
}

int
trace_hash(struct trace *t, char *err, size_t errlen)
{
	struct tail_hash *th = t->tail;
	int rc = 0;

	if (th == NULL)
		return 0;
	pthread_join(th->th, NULL);
	if (th->failed) {
		snprintf(err, errlen, "%s", th->err);
		rc = -1;
	}
	t->xxh3 = XXH3_64bits_digest(th->in.h);
	free(th->buf);
	close(th->in.fd);
	XXH3_freeState(th->in.h);
	free(th);
	t->tail = NULL;
	return rc;
}

/* scan_strings byte by byte, over b[i..n). */
static size_t
scan_bytes(struct strscan *s, const unsigned char *b, size_t i, size_t n)
{
	while (i < n) {
		if (!s->in) {
			const unsigned char *q = memchr(b + i, '"', n - i);

			if (q == NULL)
				return n;
			i = (size_t)(q - b) + 1;
			s->in = 1;
			s->len = 0;
			s->skip = 0;
			continue;
		}
		for (; i < n; i++) {
			unsigned char c = b[i];

			if (s->skip != 0) {
				/* \uXXXX: the u and 4 digits; other escapes: 1 */
				s->skip = s->skip == -1 ? (c == 'u' ? 4 : 0) : s->skip - 1;
				continue;
			}
			if (c == '"') {
				s->in = 0;
				i++;
				break;
			}
			if (c == '\\')
				s->skip = -1;
			if (++s->len > LONG_STRING)
				return i;
		}
	}
	return n;
}

#define ONES UINT64_C(0x0101010101010101)
#define LOW7 UINT64_C(0x7f7f7f7f7f7f7f7f)

/* 0x80 in each byte of x that is zero, 0 in the others (no carries between bytes). */
static inline uint64_t
zero_bytes(uint64_t x)
{
	return ~(((x & LOW7) + LOW7) | x | LOW7);
}

/*
 * The index in b[0..n) of the byte that makes a string too long, or n.
 * Eight bytes at a time: a word without a backslash is settled by its
 * quotes alone (each one opens or closes a string, so their count says
 * whether one is open after the word, and the last one where it began),
 * which is most of a trace; a word with one, an escape pending, or a
 * string that could pass the limit in it goes byte by byte, so the
 * index is exact. A string closed in the word was checked before it.
 */
size_t
scan_strings(struct strscan *s, const unsigned char *b, size_t n)
{
	size_t i = 0;

	/* a string opened inside a word cannot pass the limit there */
	_Static_assert(LONG_STRING >= 8, "LONG_STRING below a word");

	while (n - i >= 8) {
		uint64_t w, q, bs;

		memcpy(&w, b + i, 8);
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
		w = __builtin_bswap64(w); /* the first byte lowest, as ctz reads */
#endif
		q = zero_bytes(w ^ ('"' * ONES));
		bs = zero_bytes(w ^ ('\\' * ONES));
		if (bs != 0 || s->skip != 0 || (s->in && s->len + 8 > LONG_STRING)) {
			size_t e = scan_bytes(s, b, i, i + 8);

			if (e < i + 8)
				return e;
			i += 8;
			continue;
		}
		if (q == 0) {
			if (s->in)
				s->len += 8;
		} else {
			/* the quotes counted (a byte's sum in the top one), the
			 * last one found: a string open after it began there */
			unsigned nq = (unsigned)(((q >> 7) * ONES) >> 56);
			unsigned last = (unsigned)(63 - __builtin_clzll(q)) >> 3;

			s->in ^= nq & 1;
			if (s->in)
				s->len = 7 - last;
		}
		i += 8;
	}
	return scan_bytes(s, b, i, n);
}

/* Reading ahead (common/ahead.h): input_read's step, and where it is. */
struct ahead_in {
	struct input *in;
	uint64_t off;
	struct strscan scan; /* on the thread too: a piece's hint is scan_strings' */
};

static void
input_ahead(void *arg, struct ahead_piece *p, size_t cap)
{
	struct ahead_in *a = arg;

	if (input_read(a->in, p->buf, cap, &p->n, a->off, p->err, sizeof(p->err)) < 0) {
		p->rc = -1;
		return;
	}
	a->off += p->n;
	p->hint = scan_strings(&a->scan, p->buf, p->n);
	p->rc = p->n > 0;
}

static void
yajl_msg(yajl_handle h, const unsigned char *buf, size_t len, char *out, size_t outlen)
{
	unsigned char *m = yajl_get_error(h, 0, buf, len);
	char *nl;

	snprintf(out, outlen, "%s", (char *)m);
	yajl_free_error(h, m);
	if ((nl = strchr(out, '\n')) != NULL)
		*nl = '\0';
}

int
trace_read(struct trace *t, FILE *fp, char *err, size_t errlen)
{
	struct jp p;
	struct input in;
	struct strscan scan = { 0, 0, 0 };
	unsigned char *buf = xmalloc(CHUNK);
	size_t n = 0, long_at;
	uint64_t off = 0;
	yajl_handle h;
	yajl_status st;
	struct ahead *ah = NULL;
	struct ahead_in ai;
	struct ahead_piece cur;
	unsigned char *cbuf = buf; /* the chunk parsed: buf, or cur's */
	struct half *half = NULL, *gzhalf = NULL;
	uint64_t gzat = 0, gzlimit = UINT64_MAX; /* a gzip input in two halves (jp.h) */
	int rc = -1, c0, gzknown = 0, hashed = 0; /* hashed: by the second half's thread */

	memset(&p, 0, sizeof(p));
	memset(&in, 0, sizeof(in));
	p.t = t;
	in.fp = fp;
	in.limit = UINT64_MAX;
	in.h = XXH3_createState();
	XXH3_64bits_reset(in.h);
	in.raw = xmalloc(CHUNK);
	h = yajl_alloc(&jp_callbacks, NULL, &p);
	p.h = h;
	/* Sniff gzip by its magic number, not by the file name. */
	c0 = getc(fp);
	if (c0 != EOF) {
		int c1 = getc(fp);

		in.gz = c0 == 0x1f && c1 == 0x8b;
		if (c1 != EOF)
			ungetc(c1, fp);
		if (c1 == EOF || ungetc(c0, fp) == EOF) {
			/* one-byte input, or no pushback room: read it raw */
			in.gz = 0;
			if (c1 == EOF) {
				buf[0] = (unsigned char)c0;
				XXH3_64bits_update(in.h, buf, 1);
				n = 1;
				in.eof = 1;
			}
		}
	}
	if (in.gz) {
		if (inflateInit2(&in.zs, 16 + MAX_WBITS) != Z_OK) {
			snprintf(err, errlen, "cannot initialise zlib");
			goto out;
		}
		in.zinit = 1;
	}
	/* From here, the input is the thread's where there is one. */
	memset(&cur, 0, sizeof(cur));
	ai.in = &in;
	ai.off = 0;
	memset(&ai.scan, 0, sizeof(ai.scan));
	if (n == 0 && !in.gz)
		half = split_start(fp, t->file, &in.limit);
	if (n == 0 && in.gz)
		gzhalf = split_start_gz(fp, t->file, &gzat);
	if (n == 0 && half == NULL && gzhalf == NULL)
		ah = ahead_new(fp, input_ahead, &ai, CHUNK);
again:
	for (;;) {
		if (n == 0 && ah != NULL) {
			ahead_done(ah, &cur);
			if (ahead_next(ah, &cur) < 0) {
				snprintf(err, errlen, "%s", cur.err);
				goto out;
			}
			cbuf = cur.buf;
			n = cur.n;
			long_at = cur.hint;
		} else if (n == 0 && gzhalf != NULL) {
			/* no further than where the second half may begin */
			size_t cap = CHUNK;

			if (!gzknown && off >= gzat) {
				gzlimit = split_gz_limit(gzhalf);
				gzknown = 1;
				if (gzlimit == UINT64_MAX) { /* no second half */
					split_end(gzhalf, 0, t, &p);
					gzhalf = NULL;
				}
			}
			if (!gzknown && gzat - off < cap)
				cap = (size_t)(gzat - off);
			if (gzknown && gzlimit - off < cap)
				cap = (size_t)(gzlimit - off);
			if (cap > 0 && input_read(&in, buf, cap, &n, off, err, errlen) < 0)
				goto out;
			long_at = scan_strings(&scan, cbuf, n);
		} else if (n == 0 && input_read(&in, buf, CHUNK, &n, off, err, errlen) < 0) {
			goto out;
		} else {
			long_at = scan_strings(&scan, cbuf, n);
		}
		if (n == 0)
			break;
		p.base = off;
		st = yajl_parse(h, cbuf, long_at < n ? long_at : n);
		if (st == yajl_status_ok && long_at < n) {
			snprintf(err, errlen, "byte %llu: string longer than %d bytes",
			    (unsigned long long)(off + long_at + 1), MAX_STRING);
			goto out;
		}
		if (st != yajl_status_ok) {
			uint64_t at = off + yajl_get_bytes_consumed(h);

			if (st == yajl_status_client_canceled)
				snprintf(err, errlen, "byte %llu: %s", (unsigned long long)at, p.err);
			else {
				char m[160];

				yajl_msg(h, cbuf, n, m, sizeof(m));
				snprintf(err, errlen, "byte %llu: invalid JSON (%s)",
				    (unsigned long long)at, m);
			}
			goto out;
		}
		off += n;
		n = 0;
	}
	if (gzhalf != NULL && gzknown && off == gzlimit) {
		/* A gzip input's first half read: as for a plain file, below;
		 * the second half's thread read the file to its end. */
		int at_event = p.depth == 2 && p.ctx[2] == C_EVENTS && p.evend == gzlimit;

		hashed = split_end(gzhalf, at_event, t, &p);
		gzhalf = NULL;
		if (hashed)
			goto done;
		/* no: the rest is parsed here */
		gzlimit = UINT64_MAX;
		goto again;
	}
	if (half != NULL) {
		/* the first half read: did it end just after an event of
		 * traceEvents, and did the second parse through? */
		int at_event = p.depth == 2 && p.ctx[2] == C_EVENTS && p.evend == in.limit &&
		    off == in.limit;

		int merged = split_end(half, at_event, t, &p);

		half = NULL;
		if (!merged) {
			/* no: the rest is parsed here */
			in.limit = UINT64_MAX;
			goto again;
		}
		/* the rest hashed, on a thread or here */
		in.limit = UINT64_MAX;
		if (tail_start(t, &in, fileno(fp), buf) == 0) {
			buf = NULL; /* the thread's */
			hashed = 1;
			goto done;
		}
		if (hash_rest(&in, buf, err, errlen) < 0)
			goto out;
		goto done; /* the second half parsed to the end of a whole object */
	}
	if (off == 0) {
		snprintf(err, errlen, "empty input, not a Kineto trace");
		goto out;
	}
	st = yajl_complete_parse(h);
	if (st != yajl_status_ok) {
		snprintf(err, errlen, "byte %llu: truncated JSON (ends inside %s)",
		    (unsigned long long)off,
		    p.depth > 0 && p.ctx[p.depth] == C_EVENT ? "an event" : "a value");
		goto out;
	}
	if (!p.top) {
		snprintf(err, errlen, "not a Kineto trace (not a JSON object)");
		goto out;
	}
	if (p.ctx[1] == C_TOP && !p.seen_events) {
		snprintf(err, errlen, "not a Kineto trace (no traceEvents array)");
		goto out;
	}
done:
	/* Give back the slack of the doubling growth before the build needs memory. */
	if (t->nev > 0 && t->capev > t->nev) {
		t->ev = xrealloc(t->ev, t->nev * sizeof(*t->ev));
		t->capev = t->nev;
	}
	rc = 0;
out:
	if (ah != NULL) {
		ahead_done(ah, &cur);
		ahead_free(ah);
	}
	if (half != NULL)
		split_end(half, 0, t, &p);
	if (gzhalf != NULL)
		split_end(gzhalf, 0, t, &p);
	skip_flush(&p);
	if (!hashed)
		t->xxh3 = XXH3_64bits_digest(in.h);
	XXH3_freeState(in.h);
	if (in.zinit)
		inflateEnd(&in.zs);
	yajl_free(h);
	free(in.raw);
	free(buf);
	free(p.c.name);
	free(p.c.cap);
	free(p.c.aname);
	return rc;
}

void
trace_init(struct trace *t, const char *file)
{
	memset(t, 0, sizeof(*t));
	t->file = file;
	t->rank = t->world = -1;
	intern_init(&t->str);
	intern_init(&t->shk);
	kg_cov_init(&t->cov);
}

void
trace_release(struct trace *t)
{
	char err[128];

	trace_hash(t, err, sizeof(err));
	intern_release(&t->str);
	free(t->ev);
	free(t->coll);
	free(t->pgcfg);
	free(t->dev);
	intern_release(&t->shk);
	free(t->shp);
	free(t->sync);
	free(t->bytes);
	free(t->proc);
	free(t->mod);
	free(t->mem);
	kg_cov_release(&t->cov);
	memset(t, 0, sizeof(*t));
}

uint32_t
trace_proc(struct trace *t, int64_t pid, int64_t tid, int gpu)
{
	struct tproc np;
	size_t i;

	/* Few processors (threads and streams): a linear scan from the end
	 * finds the usual one at once. */
	for (i = t->nproc; i-- > 0;)
		if (t->proc[i].tid == tid && t->proc[i].pid == pid && t->proc[i].gpu == gpu)
			return (uint32_t)i;
	np.pid = pid;
	np.tid = tid;
	np.gpu = gpu;
	np.name = KG_NONE;
	VEC_PUSH(t->proc, t->nproc, t->capproc, np);
	return (uint32_t)(t->nproc - 1);
}
