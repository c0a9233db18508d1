/*
 * The JSON writer: text formatted by hand into a buffer, compressed with
 * zlib (gzip framing, level 1, no time stamp in the header, so the bytes
 * depend on the text alone) and written to a file descriptor. Events are
 * laid out as Kineto lays them out.
 *
 * An event whose duration is not known yet is written with a hole where
 * the duration goes; jw_insert fills it when the event closes. The
 * caller flushes only while no event is open, so offsets into the buffer
 * stay valid until then.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include "tg.h"
#include "util.h"

#define ZOUT (1 << 18)

int
jw_open(struct jw *w, int fd)
{
	z_stream *z = xcalloc(1, sizeof(*z));

	memset(w, 0, sizeof(*w));
	w->fd = fd;
	w->cap = 1 << 20;
	w->b = xmalloc(w->cap);
	w->zout = xmalloc(ZOUT);
	w->z = z;
	if (deflateInit2(z, 1, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK) {
		free(z);
		w->z = NULL;
		w->err = ENOMEM;
		return -1;
	}
	return 0;
}

static void
reserve(struct jw *w, size_t more)
{
	if (w->n + more > w->cap) {
		while (w->n + more > w->cap)
			w->cap *= 2;
		w->b = xrealloc(w->b, w->cap);
	}
}

void
jw_put(struct jw *w, const char *s, size_t n)
{
	reserve(w, n);
	memcpy(w->b + w->n, s, n);
	w->n += n;
}

void
jw_puts(struct jw *w, const char *s)
{
	jw_put(w, s, strlen(s));
}

void
jw_str(struct jw *w, const char *s)
{
	static const char hex[] = "0123456789abcdef";
	size_t n = strlen(s), i;

	reserve(w, 6 * n + 2);
	w->b[w->n++] = '"';
	for (i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];

		if (c == '"' || c == '\\') {
			w->b[w->n++] = '\\';
			w->b[w->n++] = (char)c;
		} else if (c < 0x20) {
			memcpy(w->b + w->n, "\\u00", 4);
			w->b[w->n + 4] = hex[c >> 4];
			w->b[w->n + 5] = hex[c & 15];
			w->n += 6;
		} else {
			w->b[w->n++] = (char)c;
		}
	}
	w->b[w->n++] = '"';
}

void
jw_int(struct jw *w, int64_t v)
{
	char t[24];
	int i = 24;
	uint64_t u = v < 0 ? -(uint64_t)v : (uint64_t)v;

	do {
		t[--i] = (char)('0' + u % 10);
		u /= 10;
	} while (u != 0);
	if (v < 0)
		t[--i] = '-';
	jw_put(w, t + i, (size_t)(24 - i));
}

/* Microseconds with up to three decimals, trailing zeros dropped but one. */
size_t
tg_fmt_us(char *buf, int64_t ns)
{
	int64_t q = ns / 1000, r = ns % 1000;
	uint64_t u;
	char t[24];
	int i = 24, n = 0;

	if (ns < 0 && r != 0) {
		q -= 1;
		r += 1000;
	}
	u = q < 0 ? -(uint64_t)q : (uint64_t)q;
	do {
		t[--i] = (char)('0' + u % 10);
		u /= 10;
	} while (u != 0);
	if (q < 0)
		t[--i] = '-';
	memcpy(buf, t + i, (size_t)(24 - i));
	n = 24 - i;
	buf[n++] = '.';
	buf[n++] = (char)('0' + r / 100);
	if (r % 100 != 0) {
		buf[n++] = (char)('0' + r / 10 % 10);
		if (r % 10 != 0)
			buf[n++] = (char)('0' + r % 10);
	}
	return (size_t)n;
}

void
jw_us(struct jw *w, int64_t ns)
{
	char buf[32];

	jw_put(w, buf, tg_fmt_us(buf, ns));
}

void
jw_insert(struct jw *w, size_t at, const char *s, size_t n)
{
	reserve(w, n);
	memmove(w->b + at + n, w->b + at, w->n - at);
	memcpy(w->b + at, s, n);
	w->n += n;
}

static void
deflate_out(struct jw *w, int flush)
{
	z_stream *z = w->z;
	int rc;

	do {
		size_t have, off = 0;

		z->next_out = w->zout;
		z->avail_out = ZOUT;
		rc = deflate(z, flush);
		if (rc == Z_STREAM_ERROR) {
			w->err = EIO;
			return;
		}
		have = ZOUT - z->avail_out;
		while (off < have && w->err == 0) {
			ssize_t k = write(w->fd, w->zout + off, have - off);

			if (k < 0 && errno == EINTR)
				continue;
			if (k <= 0) {
				w->err = k < 0 ? errno : EIO;
				break;
			}
			off += (size_t)k;
		}
	} while (z->avail_out == 0 && w->err == 0);
}

void
jw_flush(struct jw *w)
{
	z_stream *z = w->z;

	if (w->n == 0 || w->err != 0 || z == NULL) {
		w->n = 0;
		return;
	}
	z->next_in = (unsigned char *)w->b;
	z->avail_in = (uInt)w->n;
	deflate_out(w, Z_NO_FLUSH);
	w->raw += w->n;
	w->n = 0;
}

int
jw_close(struct jw *w)
{
	int err;

	jw_flush(w);
	if (w->z != NULL) {
		z_stream *z = w->z;

		if (w->err == 0) {
			z->next_in = NULL;
			z->avail_in = 0;
			deflate_out(w, Z_FINISH);
		}
		deflateEnd(z);
		free(z);
	}
	err = w->err;
	free(w->b);
	free(w->zout);
	memset(w, 0, sizeof(*w));
	return err;
}

/* The CUDA stream ids a rank's streams have in the trace. */
const int tg_stream_id[NSTREAM] = { 7, 13, 17, 21, 25, 29 };

void
ev_begin(struct jw *w)
{
	if (w->nev++ > 0)
		jw_put(w, ",\n", 2);
}

void
ev_x_head(struct jw *w, const char *cat, const char *name, int64_t pid, int64_t tid,
    int64_t ts)
{
	ev_begin(w);
	jw_puts(w, "  {\n    \"ph\": \"X\", \"cat\": \"");
	jw_puts(w, cat);
	jw_puts(w, "\", \"name\": ");
	jw_str(w, name);
	jw_puts(w, ", \"pid\": ");
	jw_int(w, pid);
	jw_puts(w, ", \"tid\": ");
	jw_int(w, tid);
	jw_puts(w, ",\n    \"ts\": ");
	jw_us(w, ts);
	jw_puts(w, ", \"dur\": ");
}

void
ev_x_dur(struct jw *w, int64_t dur)
{
	jw_us(w, dur);
}

void
ev_flow(struct jw *w, int start, uint64_t id, int64_t pid, int64_t tid, int64_t ts,
    const char *cat)
{
	ev_begin(w);
	jw_puts(w, start ? "  {\n    \"ph\": \"s\", \"id\": " : "  {\n    \"ph\": \"f\", \"id\": ");
	jw_int(w, (int64_t)id);
	jw_puts(w, ", \"pid\": ");
	jw_int(w, pid);
	jw_puts(w, ", \"tid\": ");
	jw_int(w, tid);
	jw_puts(w, ", \"ts\": ");
	jw_us(w, ts);
	jw_puts(w, ",\n    \"cat\": \"");
	jw_puts(w, cat);
	jw_puts(w, "\", \"name\": \"");
	jw_puts(w, cat);
	jw_puts(w, start ? "\"\n  }" : "\", \"bp\": \"e\"\n  }");
}

void
ev_meta(struct jw *w, const char *name, int64_t pid, int64_t tid, int64_t ts,
    const char *key, const char *sval, int64_t ival)
{
	ev_begin(w);
	jw_puts(w, "  {\n    \"name\": \"");
	jw_puts(w, name);
	jw_puts(w, "\", \"ph\": \"M\", \"ts\": ");
	jw_us(w, ts);
	jw_puts(w, ", \"pid\": ");
	jw_int(w, pid);
	jw_puts(w, ", \"tid\": ");
	jw_int(w, tid);
	jw_puts(w, ",\n    \"args\": {\n      \"");
	jw_puts(w, key);
	jw_puts(w, "\": ");
	if (sval != NULL)
		jw_str(w, sval);
	else
		jw_int(w, ival);
	jw_puts(w, "\n    }\n  }");
}
