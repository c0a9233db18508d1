/*
 * held: records kept as read (see held.h).
 */
#include <stdlib.h>
#include <string.h>

#include "held.h"
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
