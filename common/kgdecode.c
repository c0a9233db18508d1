/*
 * kgdecode: a record decoded where it lies in the reader's buffer, with
 * an mp cursor (struct dec, kg_int.h): its type (kg_dec_record), then
 * its pairs by the decoder of that type. Tasks and edges, nearly all of
 * a stream, are decoded here, each pair on a fast path where the bytes
 * are in hand and the value has a head the writers use, else on the
 * general path, which reads any well-formed MessagePack and says what
 * is wrong; both go through one list of each record's fields
 * (task_field, edge_field). The other records' decoders are in
 * kgrecords.c; the record's place in the stream (a header first, a
 * section closed before the next) is checked here, the section's run
 * and the stream's end in kgread.c.
 */
#include "kg.h"

#include <string.h>

#include "kg_int.h"

/* The enums the decoder reads, in the order of kg_reader.ecode. */
enum { EN_TASK, EN_EDGE, EN_HOW, EN_COLL, EN_PHASE, EN_N };

static const struct {
	const char *const *name;
	int n;
} enums[EN_N] = {
	{ kg_task_kind_name, KG_NTASK_KIND }, { kg_edge_kind_name, KG_NEDGE_KIND },
	{ kg_how_name, KG_NHOW }, { kg_coll_name, KG_NCOLL }, { kg_phase_name, KG_NPHASE }
};

_Static_assert(KG_NTASK_KIND <= 16 && KG_NEDGE_KIND <= 16 && KG_NHOW <= 16 &&
    KG_NCOLL <= 16 && KG_NPHASE <= 16, "kg_reader.ecode holds 16 names an enum");

/* Up to 8 bytes of s as a number, the way fast_enum loads them. */
static uint64_t
code8(const char *s, size_t len)
{
	unsigned char b[8] = { 0 };
	uint64_t c;

	memcpy(b, s, len < 8 ? len : 8);
	memcpy(&c, b, 8);
	return c;
}

void
kg_enum_codes(struct kg_reader *r)
{
	int i, j;

	for (i = 0; i < EN_N; i++)
		for (j = 0; j < enums[i].n; j++) {
			size_t len = strlen(enums[i].name[j]);

			/* a longer name is never matched here: the general
			 * decoder reads it */
			r->elen[i][j] = (unsigned char)(len <= 8 ? len : 0xff);
			r->ecode[i][j] = code8(enums[i].name[j], len);
		}
}

/*
 * A fixstr naming a value of enum `which` (EN_*), matched on its first 8
 * bytes as one number; NULL for anything else. The 9 bytes from p must
 * be in hand.
 */
static inline const unsigned char *
fast_enum(const unsigned char *p, const struct kg_reader *r, int which, int *v)
{
	size_t len = p[0] & 0x1f;
	uint64_t c;
	int i;

	if ((p[0] & 0xe0) != 0xa0 || len > 8)
		return NULL;
	memcpy(&c, p + 1, 8);
	if (len < 8) {
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
		c &= ~(~(uint64_t)0 >> (8 * len));
#else
		c &= ((uint64_t)1 << (8 * len)) - 1;
#endif
	}
	for (i = 0; i < enums[which].n; i++)
		if (r->ecode[which][i] == c && r->elen[which][i] == len) {
			*v = i;
			return p + 1 + len;
		}
	return NULL;
}

/* The key at p (fixstr, 1 to 4 bytes) as a KC code, or 0. */
static inline uint64_t
fast_key(const unsigned char *p)
{
	switch (p[0]) {
	case 0xa1:
		return KC1(p[1]);
	case 0xa2:
		return KC2(p[1], p[2]);
	case 0xa3:
		return KC3(p[1], p[2], p[3]);
	case 0xa4:
		return KC4(p[1], p[2], p[3], p[4]);
	default:
		return 0;
	}
}

/*
 * Field by field: the reader starts every task from here, and a memset
 * of the struct first (a string instruction) costs more than the stores.
 * Here, beside the decoder, which inlines them.
 */
void
kg_task_init(struct kg_task *t)
{
	t->id = 0;
	t->proc = t->name = KG_NONE;
	t->kind = 0;
	t->dur = t->ts = 0;
	t->odur = t->iter = t->corr = -1;
	t->op = t->shapes = t->itypes = t->ocall = KG_NONE;
	t->bytes = 0;
	t->coll = 0;
	t->gsize = t->seq = -1;
	t->pg = t->pgr = t->dtype = KG_NONE;
	t->phase = 0;
	t->mb = t->layer = t->stage = -1;
	t->mpeak = t->mrpeak = -1;
	t->mnet = 0;
	t->mexc = -1;
	t->prof = 0;
	t->recomp = 0;
}

void
kg_edge_init(struct kg_edge *e)
{
	memset(e, 0, sizeof(*e));
	e->on = e->via = e->at = KG_NONE;
}

/*
 * A task's or an edge's fields, one list for both paths. The fast path
 * (fast) reads a value at q, where bytes enough for any value the
 * writers put there are in hand (FAST_ROOM), and gives NULL for any it
 * does not take; the general one reads it at the cursor (q is where it
 * stands), skips an unknown key, and gives NULL only with the error
 * set. Each field function is called with fast a constant and inlined:
 * the compiler makes of it the two switches, one a path.
 */
#define FIELD static inline __attribute__((always_inline)) const unsigned char *

FIELD
val_id(struct dec *d, const unsigned char *q, int fast, const char *key, uint32_t *v)
{
	if (fast)
		return fast_id(q, v);
	return get_u32(d, key, v) < 0 ? NULL : d->c.p;
}

FIELD
val_i64(struct dec *d, const unsigned char *q, int fast, const char *key, int64_t *v)
{
	if (fast)
		return fast_i64(q, v);
	return get_i64(d, key, v) < 0 ? NULL : d->c.p;
}

FIELD
val_enum(struct dec *d, const unsigned char *q, int fast, const char *key, int which, int *v)
{
	if (fast)
		return fast_enum(q, d->r, which, v);
	return get_enum(d, key, enums[which].name, enums[which].n, v) < 0 ? NULL : d->c.p;
}

/* A key the fast path does not know, or a value it leaves to the general one. */
FIELD
val_other(struct dec *d, int fast)
{
	if (fast)
		return NULL;
	return mp_skip(&d->c) < 0 ? NULL : d->c.p;
}

/* The fields a task must have, as bits of task_field's `have`. */
static const char *const task_needs[] = { "id", "p", "k", "n", "d", "ts", "it" };

/* The task's field under key kc (a KC code); see val_id. */
FIELD
task_field(struct dec *d, uint64_t kc, const unsigned char *q, int fast, struct kg_task *t,
    int *have)
{
	struct mp_val x;

	switch (kc) {
	case KC2('i', 'd'):
		return *have |= 1, val_id(d, q, fast, "id", &t->id);
	case KC1('p'):
		return *have |= 2, val_id(d, q, fast, "p", &t->proc);
	case KC1('k'):
		return *have |= 4, val_enum(d, q, fast, "k", EN_TASK, &t->kind);
	case KC1('n'):
		return *have |= 8, val_id(d, q, fast, "n", &t->name);
	case KC1('d'):
		return *have |= 16, val_i64(d, q, fast, "d", &t->dur);
	case KC2('t', 's'):
		return *have |= 32, val_i64(d, q, fast, "ts", &t->ts);
	case KC2('i', 't'):
		return *have |= 64, val_i64(d, q, fast, "it", &t->iter);
	case KC2('o', 'd'):
		return val_i64(d, q, fast, "od", &t->odur);
	case KC2('o', 'p'):
		return val_id(d, q, fast, "op", &t->op);
	case KC2('s', 'h'):
		return val_id(d, q, fast, "sh", &t->shapes);
	case KC2('t', 'y'):
		return val_id(d, q, fast, "ty", &t->itypes);
	case KC2('o', 'c'):
		return val_id(d, q, fast, "oc", &t->ocall);
	case KC2('g', 's'):
		return val_i64(d, q, fast, "gs", &t->gsize);
	case KC2('p', 'g'):
		return val_id(d, q, fast, "pg", &t->pg);
	case KC2('d', 't'):
		return val_id(d, q, fast, "dt", &t->dtype);
	case KC2('p', 'h'):
		return val_enum(d, q, fast, "ph", EN_PHASE, &t->phase);
	case KC2('m', 'b'):
		return val_i64(d, q, fast, "mb", &t->mb);
	case KC2('l', 'y'):
		return val_i64(d, q, fast, "ly", &t->layer);
	case KC2('s', 't'):
		return val_i64(d, q, fast, "st", &t->stage);
	case KC4('c', 'o', 'r', 'r'):
		return val_i64(d, q, fast, "corr", &t->corr);
	case KC4('c', 'o', 'l', 'l'):
		return val_enum(d, q, fast, "coll", EN_COLL, &t->coll);
	case KC3('p', 'g', 'r'):
		return val_id(d, q, fast, "pgr", &t->pgr);
	case KC3('s', 'e', 'q'):
		return val_i64(d, q, fast, "seq", &t->seq);
	case KC2('p', 'c'):
		return val_i64(d, q, fast, "pc", &t->prof);
	case KC2('m', 'a'):
		return val_i64(d, q, fast, "ma", &t->mpeak);
	case KC2('m', 'r'):
		return val_i64(d, q, fast, "mr", &t->mrpeak);
	case KC2('m', 'n'):
		return val_i64(d, q, fast, "mn", &t->mnet);
	case KC2('m', 'x'):
		return val_i64(d, q, fast, "mx", &t->mexc);
	case KC2('r', 'c'):
		if (fast) {
			if (*q != 0xc2 && *q != 0xc3)
				return NULL;
			t->recomp = *q == 0xc3;
			return q + 1;
		}
		if (get_of(d, "rc", MP_BOOL, "a boolean", &x) < 0)
			return NULL;
		t->recomp = x.b;
		return d->c.p;
	case KC2('b', 'y'): /* on the general path only */
		if (fast || get_of(d, "by", MP_UINT, "an integer", &x) < 0)
			return NULL;
		t->bytes = x.u;
		return d->c.p;
	default:
		return val_other(d, fast);
	}
}

/* The fields an edge must have. */
static const char *const edge_needs[] = { "src", "dst", "k" };

/* The edge's field under key kc; see val_id. */
FIELD
edge_field(struct dec *d, uint64_t kc, const unsigned char *q, int fast, struct kg_edge *e,
    int *have)
{
	struct mp_val x;

	switch (kc) {
	case KC3('s', 'r', 'c'):
		return *have |= 1, val_id(d, q, fast, "src", &e->src);
	case KC3('d', 's', 't'):
		return *have |= 2, val_id(d, q, fast, "dst", &e->dst);
	case KC1('k'):
		return *have |= 4, val_enum(d, q, fast, "k", EN_EDGE, &e->kind);
	case KC2('d', 'l'):
		return val_i64(d, q, fast, "dl", &e->delay);
	case KC3('h', 'o', 'w'):
		return val_enum(d, q, fast, "how", EN_HOW, &e->how);
	case KC2('o', 'n'):
		return val_id(d, q, fast, "on", &e->on);
	case KC3('v', 'i', 'a'):
		return val_id(d, q, fast, "via", &e->via);
	case KC2('a', 't'):
		return val_id(d, q, fast, "at", &e->at);
	case KC2('g', 'l'):
		if (fast) {
			if (*q != 0xc3 && *q != 0xc2)
				return NULL;
			e->graph = *q == 0xc3;
			return q + 1;
		}
		if (get_of(d, "gl", MP_BOOL, "a boolean", &x) < 0)
			return NULL;
		e->graph = x.b;
		return d->c.p;
	default:
		return val_other(d, fast);
	}
}

/* The field of a task (t) or an edge (e, t NULL) under key kc. */
FIELD
field(struct dec *d, uint64_t kc, const unsigned char *q, int fast, struct kg_task *t,
    struct kg_edge *e, int *have)
{
	if (t != NULL)
		return task_field(d, kc, q, fast, t, have);
	return edge_field(d, kc, q, fast, e, have);
}

/*
 * The pairs of a task record (t) or an edge record (e, t NULL), each
 * on the fast path where it can be, else on the general one, which
 * starts again at that pair and says what is wrong, if anything is.
 * The fields found, as bits of *have (task_field, edge_field).
 */
static inline __attribute__((always_inline)) int
dec_pairs(struct dec *d, uint32_t npairs, struct kg_task *t, struct kg_edge *e, int *have)
{
	const unsigned char *p = d->c.p, *end = d->c.end, *q;
	struct mp_val k;
	uint32_t i;

	for (i = 0; i < npairs; i++, p = q) {
		if (end - p >= FAST_ROOM &&
		    (q = field(d, fast_key(p), p + 1 + (p[0] & 0x1f), 1, t, e, have)) != NULL)
			continue;
		d->c.p = p;
		if (get_key(d, &k) < 0 || (q = field(d, key_code(&k), d->c.p, 0, t, e, have)) == NULL)
			return -1;
	}
	d->c.p = p;
	return 0;
}

static int
dec_task(struct dec *d, uint32_t npairs, struct kg_task *restrict t)
{
	struct kg_reader *r = d->r;
	int have = 0;

	kg_task_init(t);
	if (dec_pairs(d, npairs, t, NULL, &have) < 0 || required(d, have, task_needs, 7) < 0)
		return -1;
	if (t->odur < 0)
		t->odur = t->dur;
	if (t->dur < 0) {
		kg_seterr(r->err, "record %llu: negative duration",
		    (unsigned long long)r->nrec + 1);
		return -1;
	}
	if (t->prof < 0 || t->prof > KG_TIME_MAX) {
		kg_seterr(r->err, "record %llu: task %u: field pc: %lld ns is out of range (0 to 2^53)",
		    (unsigned long long)r->nrec + 1, t->id, (long long)t->prof);
		return -1;
	}
	if (check_time(d, "d", t->dur) < 0 || check_time(d, "ts", t->ts) < 0 ||
	    check_time(d, "od", t->odur) < 0)
		return -1;
	if (t->mb < -1 || t->mb > KG_TAG_MAX || t->layer < -1 || t->layer > KG_TAG_MAX ||
	    t->stage < -1 || t->stage > KG_TAG_MAX || t->gsize < -1 || t->gsize > KG_TAG_MAX ||
	    t->iter < -1 || t->iter > KG_ITER_MAX) {
		kg_seterr(r->err, "record %llu: task %u: %s out of range",
		    (unsigned long long)r->nrec + 1, t->id,
		    t->mb < -1 || t->mb > KG_TAG_MAX ? "mb" : t->layer < -1 || t->layer > KG_TAG_MAX ?
		    "ly" : t->stage < -1 || t->stage > KG_TAG_MAX ? "st" :
		    t->gsize < -1 || t->gsize > KG_TAG_MAX ? "gs" : "it");
		return -1;
	}
	if (t->id != r->ntasks) {
		kg_seterr(r->err, "record %llu: task id %u out of order (expected %llu)",
		    (unsigned long long)r->nrec + 1, t->id, (unsigned long long)r->ntasks);
		return -1;
	}
	if (t->proc >= r->nprocs) {
		kg_seterr(r->err, "record %llu: task %u: proc %u not defined",
		    (unsigned long long)r->nrec + 1, t->id, t->proc);
		return -1;
	}
	if (check_str_ref(d, "n", t->name) < 0 || check_str_ref(d, "op", t->op) < 0 ||
	    check_str_ref(d, "sh", t->shapes) < 0 || check_str_ref(d, "pg", t->pg) < 0 ||
	    check_str_ref(d, "pgr", t->pgr) < 0 || check_str_ref(d, "dt", t->dtype) < 0 ||
	    check_str_ref(d, "ty", t->itypes) < 0)
		return -1;
	return 0;
}

static int
dec_edge(struct dec *d, uint32_t npairs, struct kg_edge *restrict e)
{
	int have = 0;

	kg_edge_init(e);
	if (dec_pairs(d, npairs, NULL, e, &have) < 0 || required(d, have, edge_needs, 3) < 0)
		return -1;
	if (e->delay < 0) {
		kg_seterr(d->r->err, "record %llu: negative delay",
		    (unsigned long long)d->r->nrec + 1);
		return -1;
	}
	if (check_time(d, "dl", e->delay) < 0)
		return -1;
	if (e->graph && e->kind != KG_E_LAUNCH) {
		kg_seterr(d->r->err, "record %llu: gl on a %s edge", (unsigned long long)d->r->nrec + 1,
		    kg_edge_kind_name[e->kind]);
		return -1;
	}
	/* both ends defined before the edge (the format's rule), so that no
	 * reader indexes its tasks with another section's id; graph-deps
	 * --check takes them all to count them */
	if (d->r->unknown_edges)
		return 0;
	if (e->src >= d->r->ntasks || e->dst >= d->r->ntasks) {
		kg_seterr(d->r->err, "record %llu: edge to an unknown task",
		    (unsigned long long)d->r->nrec + 1);
		return -1;
	}
	/* and the task and stream a runtime edge binds on (graph-scale-pp
	 * indexes its tasks and processors with them) */
	if (check_ref(d, "via", "task", e->via, d->r->ntasks) < 0 ||
	    check_ref(d, "at", "task", e->at, d->r->ntasks) < 0 ||
	    check_ref(d, "on", "proc", e->on, d->r->nprocs) < 0)
		return -1;
	return 0;
}

/*
 * The record type: the string under key "r", which writers put first.
 * Leaves the cursor after the map's head and returns the number of pairs
 * still to decode (all of them when "r" was not first), or -1.
 */
static int
dec_type(struct dec *d, const char **type, size_t *tlen, uint32_t *npairs)
{
	struct mp_val m, k;
	struct mp save;
	uint32_t i;
	const unsigned char *p = d->c.p;

	/* The usual shape: a fixmap whose first key is "r", a fixstr value. */
	if (d->c.end - p >= 4 && (p[0] & 0xf0) == 0x80 && p[0] != 0x80 && p[1] == 0xa1 &&
	    p[2] == 'r' && (p[3] & 0xe0) == 0xa0 && d->c.end - p >= 4 + (p[3] & 0x1f)) {
		*type = (const char *)p + 4;
		*tlen = p[3] & 0x1f;
		*npairs = (uint32_t)(p[0] & 0x0f) - 1;
		d->c.p = p + 4 + *tlen;
		return 0;
	}
	if (mp_next(&d->c, &m) < 0)
		return -1;
	if (m.type != MP_MAP) {
		kg_seterr(d->r->err, "record %llu: not a map", (unsigned long long)d->r->nrec + 1);
		return -1;
	}
	save = d->c;
	*type = NULL;
	for (i = 0; i < m.n; i++) {
		if (get_key(d, &k) < 0)
			return -1;
		if (MP_IS(&k, "r")) {
			if (get_str(d, "r", type, tlen) < 0)
				return -1;
			if (i == 0) {
				*npairs = m.n - 1;
				return 0;
			}
		} else if (mp_skip(&d->c) < 0) {
			return -1;
		}
	}
	if (*type == NULL)
		return missing(d, "r");
	/* Not first: decode every pair, "r" among them (it is skipped as an
	 * unknown key by the decoders). */
	d->c = save;
	*npairs = m.n;
	return 0;
}

/* Decode the record at the cursor; its type, or -1. */
int
kg_dec_record(struct dec *d, struct kg_rec *rec)
{
	/* the records of a section other than tasks and edges */
	static const char *const other[] = { "str", "proc", "cov", "sim", "end" };
	static const int other_type[] = { KG_R_STR, KG_R_PROC, KG_R_COV, KG_R_SIM, KG_R_END };
	static int (*const dec_other[])(struct dec *, uint32_t, struct kg_rec *) = {
		kg_dec_str, kg_dec_proc, kg_dec_cov, kg_dec_sim, kg_dec_end
	};
	struct kg_reader *r = d->r;
	const char *type;
	size_t tlen;
	uint32_t n;
	int i;

	if (dec_type(d, &type, &tlen, &n) < 0)
		return -1;
#define TYPEIS(lit) (tlen == sizeof(lit) - 1 && memcmp(type, lit, tlen) == 0)
	/* the common records first: most of a stream is tasks and edges */
	if (r->in_section && tlen == 4) {
		if (memcmp(type, "task", 4) == 0)
			return dec_task(d, n, &rec->task) < 0 ? -1 : KG_R_TASK;
		if (memcmp(type, "edge", 4) == 0)
			return dec_edge(d, n, &rec->edge) < 0 ? -1 : KG_R_EDGE;
	}
	if (TYPEIS("header")) {
		int in = r->in_section;

		if (kg_dec_header(d, n, &rec->header) < 0) {
			if (in && d->c.err != MP_ETRUNC)
				kg_seterr(r->err, "truncated graph stream (section ends without its end "
				    "record)");
			return -1;
		}
		if (r->failed != NULL) {
			kg_seterr(r->err, "incomplete graph stream: it ends where %.64s failed "
			    "(record %llu)", r->failed, (unsigned long long)r->nrec + 1);
			return -1;
		}
		if (in) {
			kg_seterr(r->err, "truncated graph stream (section ends without its end record)");
			return -1;
		}
		return KG_R_HEADER;
	}
	if (!r->in_section) {
		kg_seterr(r->err, "record %llu: expected a header", (unsigned long long)r->nrec + 1);
		return -1;
	}
#undef TYPEIS
	/* (a task or an edge, in a section, was decoded above) */
	if ((i = lookup(other, 5, type, tlen)) >= 0)
		return dec_other[i](d, n, rec) < 0 ? -1 : other_type[i];
	/* Unknown: it must still be well formed. */
	while (n-- > 0)
		if (mp_skip(&d->c) < 0 || mp_skip(&d->c) < 0)
			return -1;
	return KG_R_OTHER;
}
