/*
 * kgread: the graph stream's reader (kg.h, "Reader"): its buffer of
 * decompressed bytes, filled from a thread decompressing ahead
 * (common/zin.h) or on the caller's own, the zstd frames kept for
 * kg_reader_take_frames, and kg_read, which decodes a record where it
 * lies (kg_dec_record, kgdecode.c), decompresses more when the buffer
 * ends inside one, and tells a clean end of the stream from a truncated
 * one. A frame's records are used once its checksum was checked (up to
 * KG_FRAME_HOLD bytes of it). The section's counts and run of sections
 * are checked here; a record's own fields, by its decoder.
 */
#include "kg.h"

#include <errno.h>
#include <string.h>

#include "kg_int.h"
#include "util.h"
#include "zin.h"

#define IN_CHUNK (128 * 1024)

void
kg_rec_init(struct kg_rec *rec)
{
	memset(rec, 0, sizeof(*rec));
}

void
kg_rec_release(struct kg_rec *rec)
{
	kg_cov_release(&rec->cov);
}

int
kg_reader_init(struct kg_reader *r, FILE *fp)
{
	memset(r, 0, sizeof(*r));
	r->fp = fp;
	r->dctx = ZSTD_createDCtx();
	if (r->dctx == NULL) {
		kg_seterr(r->err, "cannot create decoder");
		return -1;
	}
	r->in = xmalloc(IN_CHUNK);
	kg_enum_codes(r);
	return 0;
}

void
kg_free_section(struct kg_reader *r)
{
	size_t i;

	for (i = 0; i < r->nstr; i++)
		free(r->str[i]);
	r->nstr = 0;
	for (i = 0; i < r->ntools; i++)
		free(r->tools[i]);
	r->ntools = 0;
	r->niters = 0;
	r->nranks = r->nclk = r->nt0 = 0;
	free(r->producer);
	free(r->source);
	free(r->gpu);
	free(r->pcal);
	free(r->failed);
	r->producer = r->source = r->gpu = r->pcal = r->failed = NULL;
}

void
kg_reader_release(struct kg_reader *r)
{
	kg_free_section(r);
	free(r->str);
	free(r->tools);
	free(r->iters);
	free(r->ranks);
	free(r->rseen);
	free(r->clk);
	free(r->t0);
	free(r->in);
	free(r->buf);
	free(r->ss);
	free(r->se);
	free(r->uss);
	free(r->use);
	free(r->z);
	free(r->fr);
	zin_free(r->zin);
	ZSTD_freeDCtx(r->dctx);
	memset(r, 0, sizeof(*r));
}

const char *
kg_str(const struct kg_reader *r, uint32_t id)
{
	return id < r->nstr ? r->str[id] : NULL;
}

/* Drop the compressed bytes of the frames taken last. */
static void
zdrop(struct kg_reader *r)
{
	if (r->ztaken > 0) {
		memmove(r->z, r->z + r->ztaken, r->zlen - r->ztaken);
		r->zlen -= r->ztaken;
		r->ztaken = 0;
	}
}

size_t
kg_reader_take_frames(struct kg_reader *r, uint64_t pos, const void **z)
{
	size_t i, j, n;

	zdrop(r);
	for (i = 0; i < r->nfr && r->fr[i].dend < pos; i++)
		;
	if (i == r->nfr || r->fr[i].dend != pos)
		return 0;
	/* Frames 0..i go; their bytes are dropped at the next call. */
	n = r->fr[i].zend;
	*z = r->z;
	for (j = i + 1; j < r->nfr; j++) {
		r->fr[j - i - 1] = r->fr[j];
		r->fr[j - i - 1].zend -= n;
	}
	r->nfr -= i + 1;
	r->ztaken = n;
	if (pos > r->mark)
		r->mark = pos;
	return n;
}

size_t
kg_reader_take_held(struct kg_reader *r, uint64_t pos, const char **p)
{
	size_t n;

	if (pos <= r->mark)
		return 0;
	*p = r->buf + (r->mark - r->base);
	n = (size_t)(pos - r->mark);
	r->mark = pos;
	return n;
}

/* The bytes at buf's start that may go: those parsed, less those held (keep_frames). */
static size_t
droppable(const struct kg_reader *r)
{
	if (r->keep_frames && r->mark - r->base < r->off)
		return (size_t)(r->mark - r->base);
	return r->off;
}

/* Room for n bytes more in buf, after dropping what is parsed (and not held). */
static void
room(struct kg_reader *r, size_t n)
{
	size_t drop = droppable(r);

	if (drop > 0) {
		memmove(r->buf, r->buf + drop, r->len - drop);
		r->len -= drop;
		r->off -= drop;
		r->base += drop;
	}
	grow(&r->buf, &r->cap, r->len + n, 1);
}

/* fill, from the pieces the zin thread decompressed ahead: the same bytes,
 * frame ends and errors as fill's own loop gives. */
static int
fill_ahead(struct kg_reader *r)
{
	size_t got = 0;

	for (;;) {
		struct ahead_piece p;
		int t = zin_next(r->zin, &p);

		if (p.seen)
			r->seen_bytes = 1;
		if (t <= 0) {
			if (t < 0)
				kg_seterr(r->err, "%s", p.err);
			return t < 0 ? -1 : (int)got;
		}
		if (p.n > 0 && droppable(r) == r->len) {
			/* nothing of buf to keep (every record parsed, none
			 * held): the piece becomes buf, and buf a piece for
			 * the thread if it has a piece's room (zin.h) */
			char *old = r->buf;
			size_t oldcap = r->cap;

			r->base += r->len;
			r->len = r->off = 0;
			r->buf = (char *)p.buf;
			r->cap = ZIN_PIECE;
			p.buf = NULL;
			if (oldcap >= ZIN_PIECE)
				p.buf = (unsigned char *)old;
			else
				free(old);
		} else if (p.n > 0) {
			room(r, p.n);
			memcpy(r->buf + r->len, p.buf, p.n);
		}
		if (r->keep_frames && p.nextra > 0) {
			grow(&r->z, &r->zcap, r->zlen + p.nextra, 1);
			memcpy(r->z + r->zlen, p.extra, p.nextra);
			r->zlen += p.nextra;
		}
		r->len += p.n;
		got += p.n;
		r->frame_left = p.hint;
		if (p.hint == 0 && r->keep_frames) {
			struct kg_zframe f = { r->zlen, r->base + r->len };

			VEC_PUSH(r->fr, r->nfr, r->capfr, f);
		}
		zin_done(r->zin, &p);
		if (got > 0 && (r->frame_left == 0 || r->len - r->off >= KG_FRAME_HOLD))
			return (int)got;
	}
}

/*
 * Decompress more bytes into buf. Returns the number of bytes made
 * available, 0 at the end of the input (after checking the last frame
 * was complete), -1 on error.
 */
static int
fill(struct kg_reader *r)
{
	size_t got = 0;

	zdrop(r);
	if (!r->zin_tried) {
		r->zin_tried = 1;
		if (!r->no_ahead)
			r->zin = zin_new(r->fp, r->dctx, r->keep_frames);
	}
	if (r->zin != NULL)
		return fill_ahead(r);
	for (;;) {
		ZSTD_inBuffer in;
		ZSTD_outBuffer out;
		size_t ret;

		if (r->inpos == r->inlen && !r->eof) {
			r->inlen = fread(r->in, 1, IN_CHUNK, r->fp);
			r->inpos = 0;
			if (r->inlen == 0) {
				if (ferror(r->fp)) {
					kg_seterr(r->err, "read error: %s",
					    strerror(errno ? errno : EIO));
					return -1;
				}
				r->eof = 1;
			} else {
				r->seen_bytes = 1;
			}
		}
		if (r->inpos == r->inlen && r->eof) {
			if (r->frame_left != 0) {
				kg_seterr(r->err, "truncated graph stream (ends inside a zstd frame)");
				return -1;
			}
			return (int)got;
		}
		room(r, 1 << 16);
		in.src = r->in;
		in.size = r->inlen;
		in.pos = r->inpos;
		out.dst = r->buf + r->len;
		out.size = r->cap - r->len;
		out.pos = 0;
		ret = ZSTD_decompressStream(r->dctx, &out, &in);
		if (r->keep_frames && in.pos > r->inpos) {
			grow(&r->z, &r->zcap, r->zlen + (in.pos - r->inpos), 1);
			memcpy(r->z + r->zlen, r->in + r->inpos, in.pos - r->inpos);
			r->zlen += in.pos - r->inpos;
		}
		r->inpos = in.pos;
		if (ZSTD_isError(ret)) {
			if (ZSTD_getErrorCode(ret) == ZSTD_error_prefix_unknown)
				kg_seterr(r->err, "not a graph stream (no zstd frame)");
			else if (ZSTD_getErrorCode(ret) == ZSTD_error_checksum_wrong)
				kg_seterr(r->err, "corrupt graph stream (zstd checksum mismatch)");
			else
				kg_seterr(r->err, "corrupt graph stream (zstd: %s)",
				    ZSTD_getErrorName(ret));
			return -1;
		}
		r->len += out.pos;
		got += out.pos;
		r->frame_left = ret;
		if (ret == 0 && r->keep_frames) {
			struct kg_zframe f = { r->zlen, r->base + r->len };

			VEC_PUSH(r->fr, r->nfr, r->capfr, f);
		}
		/* A frame's bytes are given only once it ended and zstd
		 * checked its checksum, up to KG_FRAME_HOLD of them: a bit
		 * flip is then reported before any record of its frame is
		 * used. */
		if (got > 0 && (ret == 0 || r->len - r->off >= KG_FRAME_HOLD))
			return (int)got;
	}
}

/*
 * A header's place in its run of sections (1.4), against the run the
 * headers before it announced: a run cut short is a truncated stream.
 */
static int
run_check(struct kg_reader *r, const struct kg_header *h)
{
	unsigned long long rec = (unsigned long long)r->nrec + 1;

	if (r->run_k < r->run_n && (h->sections != r->run_n || h->section != r->run_k)) {
		kg_seterr(r->err, "truncated graph stream (section %llu of %llu missing; record %llu "
		    "begins another stream)", (unsigned long long)r->run_k + 1,
		    (unsigned long long)r->run_n, rec);
		return -1;
	}
	if (r->one_section)
		return 0;
	if (r->run_k == r->run_n && h->sections > 0 && h->section != 0) {
		kg_seterr(r->err, "record %llu: section %llu of %llu without the ones before it",
		    rec, (unsigned long long)h->section + 1, (unsigned long long)h->sections);
		return -1;
	}
	r->run_n = h->sections;
	r->run_k = h->sections > 0 ? h->section + 1 : 0;
	if (r->run_k == r->run_n)
		r->run_n = r->run_k = 0;
	return 0;
}

/*
 * The most bytes the record at r->off may take (kg.h): KG_RECORD_MAX,
 * and for a sim record (its type first, as writers put it) 20 bytes more
 * a task of the section: two arrays of integers of at most 9 bytes.
 */
static size_t
record_max(const struct kg_reader *r)
{
	const unsigned char *p;
	size_t n = r->len - r->off;

	if (n < 7)
		return KG_RECORD_MAX;
	p = (const unsigned char *)r->buf + r->off;
	if (r->in_section && (p[0] & 0xf0) == 0x80 && memcmp(p + 1, "\xa1r\xa3sim", 6) == 0 &&
	    r->ntasks < (SIZE_MAX - KG_RECORD_MAX) / 40)
		return KG_RECORD_MAX + 40 * (size_t)r->ntasks;
	return KG_RECORD_MAX;
}

int
kg_read(struct kg_reader *r, struct kg_rec *rec)
{
	struct dec d;
	int ret, t;

	d.r = r;
	for (;;) {
		if (r->len > r->off) {
			r->err[0] = '\0';
			mp_init(&d.c, r->buf + r->off, r->len - r->off);
			t = kg_dec_record(&d, rec);
			if (t > 0)
				break;
			if (d.c.err == MP_EBAD) {
				kg_seterr(r->err, "corrupt graph stream (bad MessagePack in record %llu)",
				    (unsigned long long)r->nrec + 1);
				return -1;
			}
			if (d.c.err == MP_EDEPTH) {
				kg_seterr(r->err, "record %llu: nested more than %d deep",
				    (unsigned long long)r->nrec + 1, MP_MAXDEPTH);
				return -1;
			}
			if (d.c.err != MP_ETRUNC)
				return -1;
		}
		/* More bytes: at least as many again as the record had, so a
		 * large record (a sim record's arrays) is decoded a few times,
		 * not once per chunk; but never past the record's limit. */
		{
			size_t have = r->len - r->off, got = 0, max = record_max(r);

			if (have > max) {
				kg_seterr(r->err, "record %llu: longer than %zu bytes (the limit%s)",
				    (unsigned long long)r->nrec + 1, max,
				    max > KG_RECORD_MAX ? " for this section's sim record" : "");
				return -1;
			}

			do {
				ret = fill(r);
				if (ret < 0)
					return -1;
				got += (size_t)ret;
			} while (ret > 0 && got < have);
			ret = got > 0;
		}
		if (ret == 0) {
			if (r->len != r->off) {
				kg_seterr(r->err, "truncated graph stream (ends inside record %llu)",
				    (unsigned long long)r->nrec + 1);
				return -1;
			}
			if (!r->seen_bytes) {
				kg_seterr(r->err, "empty input, not a graph stream");
				return -1;
			}
			if (r->in_section) {
				kg_seterr(r->err, "truncated graph stream (section ends without its end record)");
				return -1;
			}
			if (r->nrec == 0) {
				kg_seterr(r->err, "graph stream holds no section");
				return -1;
			}
			if (r->run_k < r->run_n) {
				kg_seterr(r->err, "truncated graph stream (ends after section %llu of %llu)",
				    (unsigned long long)r->run_k, (unsigned long long)r->run_n);
				return -1;
			}
			rec->type = KG_R_EOF;
			return KG_R_EOF;
		}
	}
	if (t == KG_R_HEADER && run_check(r, &rec->header) < 0)
		return -1;
	rec->bytes = r->buf + r->off;
	rec->nbytes = (size_t)((const char *)d.c.p - rec->bytes);
	rec->pos = r->base + r->off;
	r->off += rec->nbytes;
	r->nrec++;
	count_record(t, &r->ntasks, &r->nedges, &r->nprocs, &r->nstrs);
	if (t == KG_R_HEADER)
		r->in_section = 1;
	else if (t == KG_R_END)
		r->in_section = 0;
	return rec->type = t;
}
