/*
 * held: records kept as read (see held.h).
 */
#include <stdlib.h>
#include <string.h>

#include "held.h"
#include "kg.h"
#include "util.h"

void
held_add(struct held *h, int type, const char *bytes, size_t n)
{
	grow(&h->buf, &h->cap, h->len + n, 1);
	memcpy(h->buf + h->len, bytes, n);
	grow(&h->off, &h->capoff, h->n + 1, sizeof(*h->off));
	grow(&h->type, &h->captype, h->n + 1, 1);
	h->off[h->n] = h->len;
	h->type[h->n++] = (uint8_t)type;
	h->len += n;
}

const char *
held_rec(const struct held *h, size_t i, size_t *len)
{
	*len = (i + 1 < h->n ? h->off[i + 1] : h->len) - h->off[i];
	return h->buf + h->off[i];
}

void
held_reset(struct held *h)
{
	h->n = h->len = 0;
}

void
held_release(struct held *h)
{
	free(h->buf);
	free(h->off);
	free(h->type);
	memset(h, 0, sizeof(*h));
}

void
hf_reset(struct held_frames *f)
{
	f->zlen = f->nu = f->cur = 0;
	f->first = 0;
	f->dirty = 1; /* the header is written anew */
	f->marked = 0;
}

void
hf_drop(struct held_frames *f)
{
	f->first = SIZE_MAX;
}

void
hf_take(struct held_frames *f, struct kg_reader *r, uint64_t pos, struct held *h)
{
	const void *z;
	size_t n = kg_reader_take_frames(r, pos, &z);
	struct held_unit u;

	if (n == 0)
		return;
	if (f->first != SIZE_MAX && h->n > f->first) {
		u.off = f->zlen, u.len = n;
		u.first = f->first, u.last = h->n;
		u.dirty = f->dirty;
		u.gone = f->sparse && !f->dirty && !f->marked;
		if (u.gone)
			h->len = h->off[u.first];
		grow(&f->z, &f->zcap, f->zlen + n, 1);
		memcpy(f->z + f->zlen, z, n);
		f->zlen += n;
		VEC_PUSH(f->u, f->nu, f->capu, u);
	}
	if (f->first != SIZE_MAX)
		f->first = h->n;
	f->dirty = 0;
	f->marked = 0;
}

void
hf_mark(struct held_frames *f)
{
	f->marked = 1;
}

void
hf_skip(struct held_frames *f)
{
	f->dirty = 1;
}

void
hf_changed(struct held_frames *f, size_t i)
{
	size_t lo = 0, hi = f->nu;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (f->u[mid].last <= i)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo < f->nu && f->u[lo].first <= i) {
		if (f->u[lo].gone)
			abort(); /* a record hf_mark never saw */
		f->u[lo].dirty = 1;
	}
}

int
hf_pass(struct held_frames *f, struct kg_writer *w, const struct held *h, size_t *i)
{
	const struct held_unit *u;
	size_t j;

	while (f->cur < f->nu && f->u[f->cur].last <= *i)
		f->cur++;
	if (f->cur == f->nu || f->u[f->cur].first != *i || f->u[f->cur].dirty)
		return 0;
	u = &f->u[f->cur];
	if (kg_write_frames(w, f->z + u->off, u->len) < 0)
		return -1;
	for (j = u->first; j < u->last; j++)
		kg_writer_count(w, h->type[j]);
	*i = u->last;
	return 1;
}

void
hf_release(struct held_frames *f)
{
	free(f->z);
	free(f->u);
	memset(f, 0, sizeof(*f));
}
