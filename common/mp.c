#include "mp.h"

/* Take n bytes of payload (a string's, an extension's) or fail. */
static int
payload(struct mp *c, struct mp_val *v, size_t head, uint64_t n)
{
	if ((size_t)(c->end - c->p) < head || (uint64_t)(c->end - c->p - head) < n) {
		c->err = MP_ETRUNC;
		return -1;
	}
	v->s = (const char *)c->p + head;
	v->n = (uint32_t)n;
	c->p += head + n;
	return 0;
}

int
mp_next_slow(struct mp *c, struct mp_val *v)
{
	/* Bytes after the type byte for the fixed-size heads 0xc0..0xdf. */
	static const signed char more[32] = {
		0, -1, 0, 0, 1, 2, 4, 1, 2, 4, 4, 8, 1, 2, 4, 8,
		1, 2, 4, 8, 2, 3, 5, 9, 17, 1, 2, 4, 2, 4, 2, 4
	};
	unsigned char b = *c->p;
	size_t left = (size_t)(c->end - c->p);
	const unsigned char *q = c->p + 1;
	uint64_t u;

	if (b >= 0xe0) {
		c->p++;
		v->type = MP_INT;
		v->i = (int8_t)b;
		return 0;
	}
	if (b < 0xc0) {
		/* fixmap 0x80-0x8f, fixarray 0x90-0x9f (fixstr is inline) */
		c->p++;
		v->type = b < 0x90 ? MP_MAP : MP_ARRAY;
		v->n = b & 0x0f;
		return 0;
	}
	if (more[b - 0xc0] < 0) {
		c->err = MP_EBAD;
		return -1;
	}
	if (left < 1 + (size_t)more[b - 0xc0]) {
		c->err = MP_ETRUNC;
		return -1;
	}
	switch (b) {
	case 0xc0:
		v->type = MP_NIL;
		break;
	case 0xc2:
	case 0xc3:
		v->type = MP_BOOL;
		v->b = b == 0xc3;
		break;
	case 0xc4: case 0xc5: case 0xc6:
		v->type = MP_BIN;
		u = mp_be(q, 1 << (b - 0xc4));
		return payload(c, v, 1 + (1 << (b - 0xc4)), u);
	case 0xc7: case 0xc8: case 0xc9:
		/* ext 8/16/32: length, type byte, data */
		v->type = MP_EXT;
		u = mp_be(q, 1 << (b - 0xc7));
		return payload(c, v, 2 + (1 << (b - 0xc7)), u);
	case 0xca: {
		uint32_t x = (uint32_t)mp_be(q, 4);
		float f;

		memcpy(&f, &x, 4);
		v->type = MP_FLOAT;
		v->f = f;
		break;
	}
	case 0xcb:
		u = mp_be(q, 8);
		memcpy(&v->f, &u, 8);
		v->type = MP_FLOAT;
		break;
	case 0xcc: case 0xcd: case 0xce: case 0xcf:
		v->type = MP_UINT;
		v->u = mp_be(q, 1 << (b - 0xcc));
		break;
	case 0xd0: case 0xd1: case 0xd2: case 0xd3: {
		int n = 1 << (b - 0xd0);
		uint64_t x = mp_be(q, n);
		int64_t i;

		/* sign-extend the n-byte two's complement value */
		if (n < 8 && (x >> (8 * n - 1)) & 1)
			x |= ~(uint64_t)0 << (8 * n);
		memcpy(&i, &x, 8);
		if (i >= 0) {
			v->type = MP_UINT;
			v->u = (uint64_t)i;
		} else {
			v->type = MP_INT;
			v->i = i;
		}
		break;
	}
	case 0xd4: case 0xd5: case 0xd6: case 0xd7: case 0xd8:
		/* fixext 1..16: type byte, data */
		v->type = MP_EXT;
		return payload(c, v, 2, (uint64_t)1 << (b - 0xd4));
	case 0xd9: case 0xda: case 0xdb:
		v->type = MP_STR;
		u = mp_be(q, 1 << (b - 0xd9));
		return payload(c, v, 1 + (1 << (b - 0xd9)), u);
	case 0xdc: case 0xdd:
		v->type = MP_ARRAY;
		v->n = (uint32_t)mp_be(q, b == 0xdc ? 2 : 4);
		break;
	case 0xde: case 0xdf:
		v->type = MP_MAP;
		v->n = (uint32_t)mp_be(q, b == 0xde ? 2 : 4);
		break;
	}
	c->p += 1 + more[b - 0xc0];
	return 0;
}

int
mp_skip(struct mp *c)
{
	uint64_t left[MP_MAXDEPTH];
	int depth = 0;
	struct mp_val v;

	left[0] = 1;
	for (;;) {
		while (left[depth] == 0) {
			if (depth == 0)
				return 0;
			depth--;
		}
		if (mp_next(c, &v) < 0)
			return -1;
		left[depth]--;
		if ((v.type == MP_ARRAY || v.type == MP_MAP) && v.n > 0) {
			if (++depth == MP_MAXDEPTH) {
				c->err = MP_EDEPTH;
				return -1;
			}
			left[depth] = v.type == MP_MAP ? 2 * (uint64_t)v.n : v.n;
		}
	}
}
