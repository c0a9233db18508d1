/*
 * mp: a MessagePack cursor over bytes in memory, for reading.
 *
 * msgpack-c's unpacker builds an object tree for every value; the graph
 * reader only needs to walk each record once, in order, so it reads the
 * bytes in place: mp_next reads one value's head (and a string's bytes),
 * mp_skip passes over a whole value. Nothing is allocated.
 *
 * Every call returns 0, or -1 with c->err saying why: MP_ETRUNC (the
 * bytes end inside the value: give the cursor more and start the value
 * again), MP_EBAD (a byte that starts no MessagePack value), MP_EDEPTH
 * (nested deeper than MP_MAXDEPTH). On -1 the cursor's position is
 * unspecified.
 */
#ifndef KG_MP_H
#define KG_MP_H

#include <stdint.h>
#include <string.h>

enum mp_type {
	MP_NIL, MP_BOOL, MP_UINT, MP_INT, MP_FLOAT, MP_STR, MP_BIN,
	MP_ARRAY, MP_MAP, MP_EXT
};

enum mp_err { MP_OK, MP_ETRUNC, MP_EBAD, MP_EDEPTH };

#define MP_MAXDEPTH 64

struct mp {
	const unsigned char *p, *end;
	int err;
};

/*
 * One value's head. MP_UINT: any integer >= 0 (u); MP_INT: a negative
 * one (i). MP_STR, MP_BIN, MP_EXT: s and n (the bytes are passed over).
 * MP_ARRAY: n elements follow; MP_MAP: n key-value pairs follow.
 */
struct mp_val {
	int type;
	int b;      /* MP_BOOL */
	uint64_t u; /* MP_UINT */
	int64_t i;  /* MP_INT */
	double f;   /* MP_FLOAT */
	const char *s;
	uint32_t n;
};

static inline void
mp_init(struct mp *c, const void *p, size_t n)
{
	c->p = p;
	c->end = c->p + n;
	c->err = MP_OK;
}

static inline uint64_t
mp_be(const unsigned char *p, int n)
{
	uint64_t v = 0;
	int k;

	for (k = 0; k < n; k++)
		v = v << 8 | p[k];
	return v;
}

/* The rare heads: everything but fixints, fixstr, fixmap and fixarray. */
int mp_next_slow(struct mp *c, struct mp_val *v);

static inline int
mp_next(struct mp *c, struct mp_val *v)
{
	unsigned char b;

	if (c->p >= c->end) {
		c->err = MP_ETRUNC;
		return -1;
	}
	b = *c->p;
	if (b < 0x80) {
		c->p++;
		v->type = MP_UINT;
		v->u = b;
		return 0;
	}
	if ((b & 0xe0) == 0xa0) {
		uint32_t n = b & 0x1f;

		if ((size_t)(c->end - c->p) < 1 + (size_t)n) {
			c->err = MP_ETRUNC;
			return -1;
		}
		v->type = MP_STR;
		v->s = (const char *)c->p + 1;
		v->n = n;
		c->p += 1 + n;
		return 0;
	}
	if (b >= 0xcc && b <= 0xcf) {
		/* uint 8, 16, 32, 64: ids, times and durations past 127 */
		int n = 1 << (b - 0xcc);

		if (c->end - c->p < 1 + n) {
			c->err = MP_ETRUNC;
			return -1;
		}
		v->type = MP_UINT;
		v->u = mp_be(c->p + 1, n);
		c->p += 1 + n;
		return 0;
	}
	return mp_next_slow(c, v);
}

/* Pass over one whole value (a container with everything in it). */
int mp_skip(struct mp *c);

/* A string value equal to the literal (for keys). */
#define MP_IS(v, lit) ((v)->n == sizeof(lit) - 1 && memcmp((v)->s, lit, sizeof(lit) - 1) == 0)

#endif
