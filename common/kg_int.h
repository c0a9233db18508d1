/*
 * kg_int: what the graph-stream codec's files share, private to them
 * (kg.h is the interface): kg.c the names and the coverage map both
 * sides use, kgwrite.c the writer, kgread.c the reader's buffer and
 * kg_read, kgdecode.c a record decoded where it lies (tasks and edges,
 * on a fast path and a general one), kgrecords.c the decoders of the
 * records around them (header, str, proc, cov, sim, end).
 *
 * The decoder's helpers (the cursor, struct dec, and what reads a value
 * at it or checks one) are static inline here, as they were static in
 * the one file the codec was: a task or an edge passes through most of
 * them, and the decoder is the hot path of every tool that reads a
 * graph. No function here prints or exits.
 */
#ifndef KG_KG_INT_H
#define KG_KG_INT_H

#include <string.h>

#include "kg.h"
#include "mp.h"

/* A one-line reason into err (a kg_writer's or kg_reader's, 256 bytes). */
void kg_seterr(char *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Set the count called name[0..len) to v, or add v to it (add). */
void kg_cov_set(struct kg_cov *c, const char *name, size_t len, int64_t v, int add);
/* Drop the current section's strings and header (kgread.c). */
void kg_free_section(struct kg_reader *r);
/* Fill r->ecode and r->elen, for the decoder (kgdecode.c). */
void kg_enum_codes(struct kg_reader *r);

/*
 * Count a record of a section in the counts its end record says: a
 * header starts them again (the writer's, for records passed through,
 * and the reader's).
 */
static inline void
count_record(int type, uint64_t *ntasks, uint64_t *nedges, uint64_t *nprocs, uint64_t *nstrs)
{
	if (type == KG_R_HEADER)
		*ntasks = *nedges = *nprocs = *nstrs = 0;
	*ntasks += type == KG_R_TASK;
	*nedges += type == KG_R_EDGE;
	*nprocs += type == KG_R_PROC;
	*nstrs += type == KG_R_STR;
}

/*
 * Decoding. A record is decoded straight from the buffer with an mp
 * cursor; when the buffer ends inside it the cursor says MP_ETRUNC and
 * kg_read decompresses more and decodes the record again. Decoders may
 * therefore run twice on one record: they only change the reader's
 * state in ways that a second run redoes.
 *
 * Each helper returns 0 or -1 with r->err set, or -1 with c->err set
 * (the bytes ran out, or are not MessagePack); see fail().
 */

struct dec {
	struct kg_reader *r;
	struct mp c;
};

/* Decode the record at the cursor; its type, or -1 (kgdecode.c). */
int kg_dec_record(struct dec *d, struct kg_rec *rec);
/*
 * The records other than tasks and edges (kgrecords.c), their npairs
 * pairs after the type into rec: 0 or -1.
 */
int kg_dec_header(struct dec *d, uint32_t npairs, struct kg_header *h);
int kg_dec_str(struct dec *d, uint32_t npairs, struct kg_rec *rec);
int kg_dec_proc(struct dec *d, uint32_t npairs, struct kg_rec *rec);
int kg_dec_cov(struct dec *d, uint32_t npairs, struct kg_rec *rec);
int kg_dec_sim(struct dec *d, uint32_t npairs, struct kg_rec *rec);
int kg_dec_end(struct dec *d, uint32_t npairs, struct kg_rec *rec);

static inline int
fielderr(struct dec *d, const char *key, const char *what)
{
	kg_seterr(d->r->err, "record %llu: field %s: expected %s",
	    (unsigned long long)d->r->nrec + 1, key, what);
	return -1;
}

/* A declared count beyond a reader's limit (kg.h). */
static inline int
limiterr(struct dec *d, const char *key, size_t n, size_t max)
{
	kg_seterr(d->r->err, "record %llu: field %s: %zu entries (the limit is %zu)",
	    (unsigned long long)d->r->nrec + 1, key, n, max);
	return -1;
}

static inline int
get_i64_slow(struct dec *d, const char *key, int64_t *v)
{
	struct mp_val x;

	if (mp_next(&d->c, &x) < 0)
		return -1;
	if (x.type == MP_UINT && x.u <= INT64_MAX) {
		*v = (int64_t)x.u;
		return 0;
	}
	if (x.type == MP_INT) {
		*v = x.i;
		return 0;
	}
	return fielderr(d, key, "an integer");
}

static inline int
get_u32_slow(struct dec *d, const char *key, uint32_t *v)
{
	struct mp_val x;

	if (mp_next(&d->c, &x) < 0)
		return -1;
	if (x.type == MP_UINT && x.u < UINT32_MAX) {
		*v = (uint32_t)x.u;
		return 0;
	}
	return fielderr(d, key, "an id");
}

/*
 * The fast path for tasks and edges, which are nearly all of a stream:
 * a local cursor over bytes known to hold any key and value the writers
 * put there (FAST_ROOM), reading only the heads they use. A pair it does
 * not take (any other head, an unknown key, the buffer's last bytes)
 * goes to the general loop, which starts again at that pair and says
 * what is wrong, if anything is.
 */
#define FAST_ROOM 16 /* a key of up to 4 bytes (5 with its head), then an integer (9) or 9 bytes of a name */
#define INT_ROOM 9     /* the longest integer */

/* A positive fixint, uint8, uint16 or uint32; NULL for any other head. */
static inline const unsigned char *
fast_u32(const unsigned char *p, uint32_t *v)
{
	switch (p[0]) {
	case 0xcc:
		*v = p[1];
		return p + 2;
	case 0xcd:
		*v = (uint32_t)p[1] << 8 | p[2];
		return p + 3;
	case 0xce:
		*v = (uint32_t)p[1] << 24 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 8 | p[4];
		return p + 5;
	default:
		if (p[0] < 0x80) {
			*v = p[0];
			return p + 1;
		}
		return NULL;
	}
}

/* An integer of up to 63 bits; NULL for any other head. */
static inline const unsigned char *
fast_i64(const unsigned char *p, int64_t *v)
{
	const unsigned char *q;
	uint32_t u;

	if ((q = fast_u32(p, &u)) != NULL) {
		*v = u;
		return q;
	}
	if (p[0] >= 0xe0) {
		*v = (int8_t)p[0];
		return p + 1;
	}
	if (p[0] != 0xcf || p[1] >= 0x80)
		return NULL;
	*v = (int64_t)((uint64_t)p[1] << 56 | (uint64_t)p[2] << 48 | (uint64_t)p[3] << 40 |
	    (uint64_t)p[4] << 32 | (uint64_t)p[5] << 24 | (uint64_t)p[6] << 16 |
	    (uint64_t)p[7] << 8 | p[8]);
	return p + 9;
}

/* An id (below KG_NONE); NULL for any other head. */
static inline const unsigned char *
fast_id(const unsigned char *p, uint32_t *v)
{
	const unsigned char *q;
	uint32_t x;

	if ((q = fast_u32(p, &x)) == NULL || x == KG_NONE)
		return NULL;
	*v = x;
	return q;
}

/* An integer (an id) at the cursor: the fast path's read where its bytes are in hand. */
static inline int
get_i64(struct dec *d, const char *key, int64_t *v)
{
	const unsigned char *q = d->c.end - d->c.p >= INT_ROOM ? fast_i64(d->c.p, v) : NULL;

	return q != NULL ? (d->c.p = q, 0) : get_i64_slow(d, key, v);
}

static inline int
get_u32(struct dec *d, const char *key, uint32_t *v)
{
	const unsigned char *q = d->c.end - d->c.p >= INT_ROOM ? fast_id(d->c.p, v) : NULL;

	return q != NULL ? (d->c.p = q, 0) : get_u32_slow(d, key, v);
}

/* The next value, which must be of MessagePack type `type` (what: its name, for the error). */
static inline int
get_of(struct dec *d, const char *key, int type, const char *what, struct mp_val *x)
{
	if (mp_next(&d->c, x) < 0)
		return -1;
	if (x->type != type)
		return fielderr(d, key, what);
	return 0;
}

static inline int
get_str(struct dec *d, const char *key, const char **s, size_t *len)
{
	struct mp_val x;

	if (get_of(d, key, MP_STR, "a string", &x) < 0)
		return -1;
	*s = x.s;
	*len = x.n;
	return 0;
}

/* Index of the string s[0..len) in table[0..n), or -1. */
static inline int
lookup(const char *const *table, int n, const char *s, size_t len)
{
	int i;

	for (i = 0; i < n; i++) {
		const char *t = table[i];
		size_t j;

		for (j = 0; j < len && t[j] != '\0' && t[j] == s[j]; j++)
			;
		if (j == len && t[j] == '\0')
			return i;
	}
	return -1;
}

static inline int
get_enum(struct dec *d, const char *key, const char *const *table, int n, int *v)
{
	const char *s;
	size_t len;
	int i;

	if (get_str(d, key, &s, &len) < 0)
		return -1;
	i = lookup(table, n, s, len);
	if (i < 0) {
		kg_seterr(d->r->err, "record %llu: field %s: unknown value '%.*s'",
		    (unsigned long long)d->r->nrec + 1, key, (int)(len > 40 ? 40 : len), s);
		return -1;
	}
	*v = i;
	return 0;
}

/* The next key of a map, which must be a string. */
static inline int
get_key_slow(struct dec *d, struct mp_val *k)
{
	if (mp_next(&d->c, k) < 0)
		return -1;
	if (k->type != MP_STR) {
		kg_seterr(d->r->err, "record %llu: key is not a string",
		    (unsigned long long)d->r->nrec + 1);
		return -1;
	}
	return 0;
}

static inline int
get_key(struct dec *d, struct mp_val *k)
{
	const unsigned char *p = d->c.p;

	if (p < d->c.end && (*p & 0xe0) == 0xa0 &&
	    (size_t)(d->c.end - p) > (size_t)(*p & 0x1f)) {
		k->type = MP_STR;
		k->s = (const char *)p + 1;
		k->n = *p & 0x1f;
		d->c.p = p + 1 + k->n;
		return 0;
	}
	return get_key_slow(d, k);
}

/*
 * A short key as one number, for a switch: its length, then its bytes;
 * KC_LONG for keys of more than 7 bytes, which no decoder below knows.
 */
#define KC_LONG UINT64_MAX
#define KC1(a) ((uint64_t)1 << 8 | (uint64_t)(a))
#define KC2(a, b) ((uint64_t)2 << 16 | (uint64_t)(a) << 8 | (uint64_t)(b))
#define KC3(a, b, c) ((uint64_t)3 << 24 | (uint64_t)(a) << 16 | (uint64_t)(b) << 8 | (uint64_t)(c))
#define KC4(a, b, c, e) ((uint64_t)4 << 32 | (uint64_t)(a) << 24 | (uint64_t)(b) << 16 | \
	(uint64_t)(c) << 8 | (uint64_t)(e))

static inline uint64_t
key_code(const struct mp_val *k)
{
	uint64_t c = k->n;
	uint32_t j;

	if (k->n > 7)
		return KC_LONG;
	for (j = 0; j < k->n; j++)
		c = c << 8 | (unsigned char)k->s[j];
	return c;
}

static inline int
check_ref(struct dec *d, const char *key, const char *what, uint32_t id, uint64_t n)
{
	if (id != KG_NONE && id >= n) {
		kg_seterr(d->r->err, "record %llu: field %s: %s %u not defined",
		    (unsigned long long)d->r->nrec + 1, key, what, id);
		return -1;
	}
	return 0;
}

static inline int
check_str_ref(struct dec *d, const char *key, uint32_t id)
{
	return check_ref(d, key, "string", id, d->r->nstr);
}

static inline int
missing(struct dec *d, const char *key)
{
	kg_seterr(d->r->err, "record %llu: missing field %s",
	    (unsigned long long)d->r->nrec + 1, key);
	return -1;
}

/* A time or duration in the format's range (KG_TIME_MAX), or an error naming the field. */
static inline int
check_time(struct dec *d, const char *key, int64_t v)
{
	if (KG_TIME_OK(v))
		return 0;
	kg_seterr(d->r->err, "record %llu: field %s: %lld ns is out of range",
	    (unsigned long long)d->r->nrec + 1, key, (long long)v);
	return -1;
}

/*
 * The first of the fields a record must have (keys[i], bit 1 << i of
 * have) that it lacks, as an error; 0 when it has them all.
 */
static inline int
required(struct dec *d, int have, const char *const *keys, int n)
{
	int i;

	if ((~have & ((1 << n) - 1)) == 0)
		return 0;
	for (i = 0; i < n; i++)
		if (!(have & 1 << i))
			return missing(d, keys[i]);
	return 0;
}

#endif
