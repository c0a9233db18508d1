/*
 * opmodel's input bytes: a file or stdin read through zlib (plain or
 * gzip, told apart by content) as a FILE (struct src, om.h), its leading
 * whitespace counted rather than kept and its first bytes held so that
 * input.c can tell a sweep from a graph stream from a trace.
 *
 * Promises: the FILE gives the input's bytes as they are, leading
 * whitespace included, so that line numbers and byte offsets stay the
 * file's; a read that fails, or gzip data cut inside a member, is told
 * by src_error. Leaves to input.c and stream.c what the bytes mean.
 */
#define _GNU_SOURCE /* fopencookie */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <zlib.h>

#include "cli.h"
#include "om.h"
#include "util.h"

static ssize_t
src_get(struct src *s, char *buf, size_t size)
{
	int r, e;

	r = gzread(s->z, buf, (unsigned)(size > (1u << 30) ? (1u << 30) : size));
	if (r < 0) {
		gzerror(s->z, &e);
		s->err = e == Z_ERRNO && errno ? errno : EIO;
		return -1;
	}
	if (r == 0) {
		/* gzread stops quietly at a cut gzip member; gzerror tells */
		gzerror(s->z, &e);
		if (e == Z_BUF_ERROR) {
			s->cut = 1;
			return -1;
		}
	}
	return r;
}

static ssize_t
src_read(void *cookie, char *buf, size_t size)
{
	struct src *s = cookie;
	size_t n = 0;

	if (s->nl > 0 || s->sp > 0) {
		uint64_t k = s->nl > 0 ? s->nl : s->sp;

		n = k < size ? (size_t)k : size;
		memset(buf, s->nl > 0 ? '\n' : ' ', n);
		*(s->nl > 0 ? &s->nl : &s->sp) -= n;
		return (ssize_t)n;
	}
	while (n < size && s->ohead < s->nhead)
		buf[n++] = s->head[s->ohead++];
	if (n > 0)
		return (ssize_t)n;
	return src_get(s, buf, size);
}

static int
src_close(void *cookie)
{
	struct src *s = cookie;

	gzclose(s->z);
	free(s->head);
	s->head = NULL;
	return 0;
}

int
src_error(const struct src *s, const char *path)
{
	errmsg("%s: %s", path, s->cut ? "truncated gzip data" : strerror(s->err ? s->err : EIO));
	return 1;
}

/* Open path as a src (om.h). */
int
src_open(struct src *s, const char *path, FILE **fp)
{
	static const cookie_io_functions_t io = { src_read, NULL, NULL, src_close };
	char buf[65536];
	ssize_t r, i;

	memset(s, 0, sizeof(*s));
	s->z = strcmp(path, "-") == 0 ? gzdopen(dup(0), "rb") : gzopen(path, "rb");
	if (s->z == NULL) {
		errmsg("%s: %s", path, strerror(errno ? errno : ENOMEM));
		return 1;
	}
	gzbuffer(s->z, 1 << 17);
	while (s->nhead < 8 && (r = src_get(s, buf, sizeof(buf))) > 0) {
		for (i = 0; s->nhead == 0 && i < r; i++) {
			if (buf[i] == '\n')
				s->nl++;
			else if (buf[i] == ' ' || buf[i] == '\t' || buf[i] == '\r')
				s->sp++;
			else
				break;
		}
		s->head = xrealloc(s->head, s->nhead + (size_t)(r - i));
		memcpy(s->head + s->nhead, buf + i, (size_t)(r - i));
		s->nhead += (size_t)(r - i);
	}
	if (s->cut || s->err) {
		src_error(s, path);
		src_close(s);
		return 1;
	}
	if (s->nhead == 0) {
		errmsg("%s: empty input", path);
		src_close(s);
		return 2;
	}
	*fp = fopencookie(s, "rb", io);
	if (*fp == NULL) {
		errmsg("%s: %s", path, strerror(errno));
		src_close(s);
		return 1;
	}
	return 0;
}
