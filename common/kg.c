#include "kg.h"

#include <errno.h>
#include <stdarg.h>
#include <string.h>

#include "mp.h"
#include "util.h"
#include "zin.h"
#include "zq.h"

const char *const kg_task_kind_name[KG_NTASK_KIND] = {
	"cpu", "rt", "kern", "coll", "cpy", "set"
};
const char *const kg_edge_kind_name[KG_NEDGE_KIND] = {
	"thread", "handoff", "launch", "stream", "event", "sync", "rank"
};
const char *const kg_how_name[KG_NHOW] = { "trace", "explicit", "inferred" };
const char *const kg_coll_name[KG_NCOLL] = {
	"", "allreduce", "allgather", "reducescatter", "alltoall",
	"broadcast", "reduce", "sendrecv", "send", "recv"
};
const char *const kg_phase_name[KG_NPHASE] = { "", "fwd", "bwd", "opt", "other" };

#define FRAME_MAX (2 * 1024 * 1024)
#define IN_CHUNK (128 * 1024)

static inline int lookup(const char *const *table, int n, const char *s, size_t len);

int
kg_lookup(const char *const *table, int n, const char *name, size_t len)
{
	return lookup(table, n, name, len);
}

static void
seterr(char *err, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(err, 256, fmt, ap);
	va_end(ap);
}

/*
 * Field by field: the reader starts every task from here, and a memset
 * of the struct first (a string instruction) costs more than the stores.
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

void
kg_cov_init(struct kg_cov *c)
{
	memset(c, 0, sizeof(*c));
}

void
kg_cov_release(struct kg_cov *c)
{
	size_t i;

	for (i = 0; i < c->n; i++)
		free(c->name[i]);
	free(c->name);
	free(c->val);
	memset(c, 0, sizeof(*c));
}

static void
cov_set(struct kg_cov *c, const char *name, size_t len, int64_t v, int add)
{
	size_t i, cap;

	for (i = 0; i < c->n; i++)
		if (strlen(c->name[i]) == len && memcmp(c->name[i], name, len) == 0) {
			c->val[i] = add ? c->val[i] + v : v;
			return;
		}
	cap = c->cap;
	grow(&c->name, &cap, c->n + 1, sizeof(*c->name));
	cap = c->cap;
	grow(&c->val, &cap, c->n + 1, sizeof(*c->val));
	c->cap = cap;
	c->name[c->n] = xstrndup(name, len);
	c->val[c->n] = v;
	c->n++;
}

void
kg_cov_add(struct kg_cov *c, const char *name, int64_t v)
{
	cov_set(c, name, strlen(name), v, 1);
}

int64_t
kg_cov_get(const struct kg_cov *c, const char *name)
{
	size_t i;

	for (i = 0; i < c->n; i++)
		if (strcmp(c->name[i], name) == 0)
			return c->val[i];
	return 0;
}

/* Writer ------------------------------------------------------------- */

static int
sbuf_write(void *data, const char *buf, size_t len)
{
	return msgpack_sbuffer_write(data, buf, len);
}

int
kg_writer_init(struct kg_writer *w, FILE *fp, int level)
{
	memset(w, 0, sizeof(*w));
	w->zq = zq_new(fp, level, w->err, sizeof(w->err));
	if (w->zq == NULL)
		return -1;
	msgpack_sbuffer_init(&w->sbuf);
	msgpack_packer_init(&w->pk, &w->sbuf, sbuf_write);
	return 0;
}

void
kg_writer_threads(struct kg_writer *w, int n)
{
	zq_threads(w->zq, n);
}

void
kg_writer_release(struct kg_writer *w)
{
	zq_free(w->zq);
	msgpack_sbuffer_destroy(&w->sbuf);
	memset(w, 0, sizeof(*w));
}

/* The compressor's error, once it has one: the writer's from then on. */
static int
zq_failed(struct kg_writer *w)
{
	seterr(w->err, "%s", zq_err(w->zq));
	w->failed = 1;
	return -1;
}

/*
 * Hand what is buffered to the compressor (common/zq.h: on a thread of
 * its own, it compresses while the next records are encoded); `end`
 * closes the frame. The buffer goes with it; the writer fills another.
 */
static int
flush(struct kg_writer *w, ZSTD_EndDirective mode)
{
	size_t n = w->sbuf.size;

	if (w->failed)
		return -1;
	if (zq_put(w->zq, &w->sbuf.data, n, &w->sbuf.alloc, mode) < 0)
		return zq_failed(w);
	w->framed = mode == ZSTD_e_end ? 0 : w->framed + n;
	w->sbuf.size = 0;
	return 0;
}

/*
 * Close the current frame, if one is open or records wait. Frames end
 * after a section's header, around its end record and every FRAME_MAX
 * bytes, at record boundaries: a filter that changes a few records can
 * then pass the other frames on as they are (formats/graph-stream.md).
 */
static int
end_frame(struct kg_writer *w)
{
	if (w->failed)
		return -1;
	if (w->framed == 0 && w->sbuf.size == 0)
		return 0;
	return flush(w, ZSTD_e_end);
}

static int
record_done(struct kg_writer *w)
{
	if (w->failed)
		return -1;
	/* a frame is handed whole: zstd compresses it in one pass, without
	 * copying it into a window of its own (handed in pieces of 256 KiB,
	 * writing took 7% more CPU) */
	if (w->framed + w->sbuf.size >= FRAME_MAX)
		return flush(w, ZSTD_e_end);
	return 0;
}

static void
pk_str(msgpack_packer *pk, const char *s, size_t len)
{
	msgpack_pack_str(pk, len);
	msgpack_pack_str_body(pk, s, len);
}

static void
pk_cstr(msgpack_packer *pk, const char *s)
{
	pk_str(pk, s, strlen(s));
}

/* Keys are literals: their length is known at compile time. */
#define pk_key(pk, lit) pk_str((pk), (lit), sizeof(lit) - 1)

#define pk_kv_i64(pk, k, v) (pk_key((pk), k), msgpack_pack_int64((pk), (v)))
#define pk_kv_str(pk, k, v) (pk_key((pk), k), pk_cstr((pk), (v)))

void
kg_writer_run(struct kg_writer *w, uint64_t n)
{
	kg_writer_run_at(w, n, 0);
}

void
kg_writer_run_at(struct kg_writer *w, uint64_t n, uint64_t k)
{
	w->run_n = n;
	w->run_k = k < n ? k : 0;
}

void
kg_writer_follow(struct kg_writer *w, const struct kg_header *h)
{
	if (h->sections == 0)
		kg_writer_run(w, 0);
	else if (h->section == 0)
		kg_writer_run(w, h->sections);
}

/*
 * A writer writes nothing the reader refuses: a time out of the
 * format's range (KG_TIME_MAX) fails it, naming the record and field.
 */
static int
wtime(struct kg_writer *w, const char *rec, uint64_t id, const char *key, int64_t v, int64_t lo)
{
	if (KG_TIME_OK(v) && v >= lo)
		return 0;
	seterr(w->err, "%s %llu: field %s: %lld ns is out of range", rec, (unsigned long long)id,
	    key, (long long)v);
	w->failed = 1;
	return -1;
}

int
kg_write_header(struct kg_writer *w, const struct kg_header *h)
{
	msgpack_packer *pk = &w->pk;
	size_t i;
	int run, gpu, prof;

	if (end_frame(w) < 0)
		return -1;
	if (h->tbase <= -KG_TBASE_MAX || h->tbase >= KG_TBASE_MAX) {
		seterr(w->err, "header: field tbase: %lld ns is out of range", (long long)h->tbase);
		w->failed = 1;
		return -1;
	}
	for (i = 0; i < h->nranks; i++)
		if ((h->clk != NULL && wtime(w, "header, rank", (uint64_t)h->ranks[i], "clk",
		    h->clk[i], -KG_TIME_MAX) < 0) ||
		    (h->t0 != NULL && wtime(w, "header, rank", (uint64_t)h->ranks[i], "t0",
		    h->t0[i], -KG_TIME_MAX) < 0))
			return -1;
	w->ntasks = w->nedges = w->nprocs = w->nstrs = 0;
	run = w->run_k < w->run_n;
	gpu = h->gpu != NULL && h->gpu[0] != '\0';
	prof = h->pcal != NULL && h->pcal[0] != '\0';
	msgpack_pack_map(pk, 13 + (h->nranks > 0 ? 3 : 0) + (run ? 2 : 0) + gpu +
	    (h->gpu_mem > 0) + (h->gpu_sms > 0) + (prof ? 1 + (h->pcost >= 0) + (h->ustep > 0) : 0) +
	    (h->failed != NULL));
	pk_kv_str(pk, "r", "header");
	pk_kv_str(pk, "format", KG_FORMAT);
	pk_kv_i64(pk, "major", KG_MAJOR);
	pk_kv_i64(pk, "minor", KG_MINOR);
	pk_kv_str(pk, "producer", h->producer);
	pk_kv_str(pk, "unit", "ns");
	pk_kv_i64(pk, "rank", h->rank);
	pk_kv_i64(pk, "world", h->world);
	pk_kv_str(pk, "source", h->source ? h->source : "");
	pk_cstr(pk, "xxh3");
	msgpack_pack_uint64(pk, h->xxh3);
	pk_cstr(pk, "iters");
	msgpack_pack_array(pk, h->niters);
	for (i = 0; i < h->niters; i++)
		msgpack_pack_int64(pk, h->iters[i]);
	pk_kv_i64(pk, "tbase", h->tbase);
	pk_cstr(pk, "tools");
	msgpack_pack_array(pk, h->ntools);
	for (i = 0; i < h->ntools; i++)
		pk_cstr(pk, h->tools[i]);
	if (h->nranks > 0) {
		pk_cstr(pk, "ranks");
		msgpack_pack_array(pk, h->nranks);
		for (i = 0; i < h->nranks; i++)
			msgpack_pack_int64(pk, h->ranks[i]);
		pk_cstr(pk, "clk");
		msgpack_pack_array(pk, h->nranks);
		for (i = 0; i < h->nranks; i++)
			msgpack_pack_int64(pk, h->clk != NULL ? h->clk[i] : 0);
		pk_cstr(pk, "t0");
		msgpack_pack_array(pk, h->nranks);
		for (i = 0; i < h->nranks; i++)
			msgpack_pack_int64(pk, h->t0 != NULL ? h->t0[i] : 0);
	}
	if (gpu)
		pk_kv_str(pk, "gpu", h->gpu);
	if (h->gpu_mem > 0)
		pk_kv_i64(pk, "gpu_mem", h->gpu_mem);
	if (h->gpu_sms > 0)
		pk_kv_i64(pk, "gpu_sms", h->gpu_sms);
	if (prof) {
		pk_kv_str(pk, "pcal", h->pcal);
		if (h->pcost >= 0)
			pk_kv_i64(pk, "pcost", h->pcost);
		if (h->ustep > 0)
			pk_kv_i64(pk, "ustep", h->ustep);
	}
	if (h->failed != NULL)
		pk_kv_str(pk, "failed", h->failed);
	if (run) {
		pk_cstr(pk, "section");
		msgpack_pack_uint64(pk, w->run_k);
		pk_cstr(pk, "sections");
		msgpack_pack_uint64(pk, w->run_n);
		if (++w->run_k == w->run_n)
			w->run_k = w->run_n = 0;
	}
	if (end_frame(w) < 0)
		return -1;
	return record_done(w);
}

int
kg_write_header_tool(struct kg_writer *w, const struct kg_header *h, const char *tool)
{
	struct kg_header nh = *h;
	const char **tools = xmalloc((h->ntools + 1) * sizeof(*tools));
	int rc;

	if (h->ntools > 0)
		memcpy(tools, h->tools, h->ntools * sizeof(*tools));
	tools[h->ntools] = tool;
	nh.tools = tools;
	nh.ntools = h->ntools + 1;
	rc = kg_write_header(w, &nh);
	free(tools);
	return rc;
}

int
kg_write_str(struct kg_writer *w, uint32_t id, const char *s, size_t len)
{
	msgpack_pack_map(&w->pk, 3);
	pk_kv_str(&w->pk, "r", "str");
	pk_kv_i64(&w->pk, "id", id);
	pk_cstr(&w->pk, "s");
	pk_str(&w->pk, s, len);
	w->nstrs++;
	return record_done(w);
}

int
kg_write_proc(struct kg_writer *w, const struct kg_proc *p)
{
	msgpack_packer *pk = &w->pk;

	msgpack_pack_map(pk, 5 + (p->name != KG_NONE) + (p->main != 0) + (p->rank >= 0));
	pk_kv_str(pk, "r", "proc");
	pk_kv_i64(pk, "id", p->id);
	pk_kv_str(pk, "k", p->kind == KG_THREAD ? "thread" : "stream");
	pk_kv_i64(pk, "pid", p->pid);
	pk_kv_i64(pk, "tid", p->tid);
	if (p->name != KG_NONE)
		pk_kv_i64(pk, "n", p->name);
	if (p->main) {
		pk_cstr(pk, "main");
		msgpack_pack_true(pk);
	}
	if (p->rank >= 0)
		pk_kv_i64(pk, "rank", p->rank);
	w->nprocs++;
	return record_done(w);
}

/* The bytes msgpack-c's msgpack_pack_int64 writes for d. */
static size_t
i64_len(int64_t d)
{
	if (d < -(1LL << 5))
		return d < -(1LL << 15) ? (d < -(1LL << 31) ? 9 : 5) : (d < -(1 << 7) ? 3 : 2);
	if (d < (1 << 7))
		return 1;
	return d < (1LL << 16) ? (d < (1 << 8) ? 2 : 3) : (d < (1LL << 32) ? 5 : 9);
}

/* A tag byte and u in 8 bytes, big-endian: MessagePack's 64-bit forms. */
static unsigned char *
put_be64(unsigned char *p, unsigned char tag, uint64_t u)
{
	int i;

	p[0] = tag;
	for (i = 0; i < 8; i++)
		p[1 + i] = (unsigned char)(u >> (56 - 8 * i));
	return p + 9;
}

/* Write d at p as msgpack_pack_int64 would; returns the end. */
static unsigned char *
put_i64(unsigned char *p, int64_t d)
{
	uint64_t u = (uint64_t)d;

	switch (i64_len(d)) {
	case 1:
		p[0] = (unsigned char)u;
		return p + 1;
	case 2:
		p[0] = d < 0 ? 0xd0 : 0xcc;
		p[1] = (unsigned char)u;
		return p + 2;
	case 3:
		p[0] = d < 0 ? 0xd1 : 0xcd;
		p[1] = (unsigned char)(u >> 8);
		p[2] = (unsigned char)u;
		return p + 3;
	case 5:
		p[0] = d < 0 ? 0xd2 : 0xce;
		p[1] = (unsigned char)(u >> 24);
		p[2] = (unsigned char)(u >> 16);
		p[3] = (unsigned char)(u >> 8);
		p[4] = (unsigned char)u;
		return p + 5;
	default:
		return put_be64(p, d < 0 ? 0xd3 : 0xcf, u);
	}
}

/* Room for n more bytes in the packer's buffer; where they go. */
static unsigned char *
sbuf_room(struct kg_writer *w, size_t n)
{
	if (w->sbuf.alloc - w->sbuf.size < n) {
		size_t cap = w->sbuf.alloc > 0 ? w->sbuf.alloc : 8192;

		while (cap - w->sbuf.size < n)
			cap *= 2;
		w->sbuf.data = xrealloc(w->sbuf.data, cap);
		w->sbuf.alloc = cap;
	}
	return (unsigned char *)w->sbuf.data + w->sbuf.size;
}

/* Write u as msgpack_pack_uint64 would. */
static unsigned char *
put_u64(unsigned char *p, uint64_t u)
{
	if (u < (UINT64_C(1) << 63))
		return put_i64(p, (int64_t)u);
	return put_be64(p, 0xcf, u);
}

/* A key or a kind's name as msgpack_pack_str and its body write it: a
 * fixstr under 32 bytes, else str8 (the names are all under 256). */
static unsigned char *
put_short(unsigned char *p, const char *s, size_t len)
{
	if (len < 32) {
		*p++ = (unsigned char)(0xa0 | len);
	} else {
		*p++ = 0xd9;
		*p++ = (unsigned char)len;
	}
	memcpy(p, s, len);
	return p + len;
}

/* A map's head as msgpack_pack_map writes it, for n < 65536. */
static unsigned char *
put_map(unsigned char *p, unsigned n)
{
	if (n < 16) {
		*p++ = (unsigned char)(0x80 | n);
		return p;
	}
	p[0] = 0xde;
	p[1] = (unsigned char)(n >> 8);
	p[2] = (unsigned char)n;
	return p + 3;
}

/*
 * Tasks and edges, the bulk of a graph, are encoded straight into the
 * buffer, byte for byte as msgpack-c's packer would (its callback per
 * value took a fifth of a writing tool's time). A record is at most
 * REC_MAX bytes: 30 pairs of a key under 6 bytes and a value of 9, or a
 * kind's name (under 32 bytes; the tables are ours). The map's size is
 * counted before the pairs are written; KEY counts them again, and a
 * record whose two counts differ (a field added to one list and not the
 * other) fails the writer instead of leaving a stream no reader can read.
 */
#define REC_MAX 1024

static int
count_error(struct kg_writer *w, const char *rec, unsigned said, unsigned wrote)
{
	seterr(w->err, "internal error: a %s record of %u pairs under a map of %u", rec, wrote,
	    said);
	w->failed = 1;
	return -1;
}
#define KEY(lit) (pairs++, p = put_short(p, (lit), sizeof(lit) - 1))
#define KV_I64(lit, v) (KEY(lit), p = put_i64(p, (v)))
#define KV_NAME(lit, v) (KEY(lit), p = put_short(p, (v), strlen(v)))

int
kg_write_task(struct kg_writer *w, const struct kg_task *t)
{
	unsigned char *p;
	unsigned n = 8, pairs = 0;

	if (w->failed)
		return -1;
	if (wtime(w, "task", t->id, "d", t->dur, 0) < 0 ||
	    wtime(w, "task", t->id, "ts", t->ts, -KG_TIME_MAX) < 0 ||
	    (t->odur >= 0 && wtime(w, "task", t->id, "od", t->odur, 0) < 0))
		return -1;
	n += t->odur >= 0 && t->odur != t->dur;
	n += t->corr >= 0;
	n += t->op != KG_NONE;
	n += t->shapes != KG_NONE;
	n += t->itypes != KG_NONE;
	n += t->ocall != KG_NONE;
	n += t->bytes != 0;
	n += t->coll != KG_COLL_NONE;
	n += t->gsize >= 0;
	n += t->pg != KG_NONE;
	n += t->pgr != KG_NONE;
	n += t->seq >= 0;
	n += t->dtype != KG_NONE;
	n += t->phase != KG_PH_NONE;
	n += t->mb >= 0;
	n += t->layer >= 0;
	n += t->stage >= 0;
	n += t->mpeak >= 0 ? 2 : 0;
	n += t->mrpeak >= 0;
	n += t->mpeak >= 0 && t->mexc >= 0;
	n += t->prof > 0;
	n += t->recomp != 0;
	p = sbuf_room(w, REC_MAX);
	p = put_map(p, n);
	KV_NAME("r", "task");
	KV_I64("id", t->id);
	KV_I64("p", t->proc);
	KV_NAME("k", kg_task_kind_name[t->kind]);
	KV_I64("n", t->name);
	KV_I64("d", t->dur);
	KV_I64("ts", t->ts);
	KV_I64("it", t->iter);
	if (t->odur >= 0 && t->odur != t->dur)
		KV_I64("od", t->odur);
	if (t->corr >= 0)
		KV_I64("corr", t->corr);
	if (t->op != KG_NONE)
		KV_I64("op", t->op);
	if (t->shapes != KG_NONE)
		KV_I64("sh", t->shapes);
	if (t->itypes != KG_NONE)
		KV_I64("ty", t->itypes);
	if (t->ocall != KG_NONE)
		KV_I64("oc", t->ocall);
	if (t->bytes != 0) {
		KEY("by");
		p = put_u64(p, t->bytes);
	}
	if (t->coll != KG_COLL_NONE)
		KV_NAME("coll", kg_coll_name[t->coll]);
	if (t->gsize >= 0)
		KV_I64("gs", t->gsize);
	if (t->pg != KG_NONE)
		KV_I64("pg", t->pg);
	if (t->pgr != KG_NONE)
		KV_I64("pgr", t->pgr);
	if (t->seq >= 0)
		KV_I64("seq", t->seq);
	if (t->dtype != KG_NONE)
		KV_I64("dt", t->dtype);
	if (t->phase != KG_PH_NONE)
		KV_NAME("ph", kg_phase_name[t->phase]);
	if (t->mb >= 0)
		KV_I64("mb", t->mb);
	if (t->layer >= 0)
		KV_I64("ly", t->layer);
	if (t->stage >= 0)
		KV_I64("st", t->stage);
	if (t->mpeak >= 0) {
		KV_I64("ma", t->mpeak);
		KV_I64("mn", t->mnet);
		if (t->mexc >= 0)
			KV_I64("mx", t->mexc);
	}
	if (t->mrpeak >= 0)
		KV_I64("mr", t->mrpeak);
	if (t->prof > 0)
		KV_I64("pc", t->prof);
	if (t->recomp)
		KEY("rc"), *p++ = 0xc3; /* true */
	if (pairs != n)
		return count_error(w, "task", n, pairs);
	w->sbuf.size = (size_t)((char *)p - w->sbuf.data);
	w->ntasks++;
	return record_done(w);
}

int
kg_write_edge(struct kg_writer *w, const struct kg_edge *e)
{
	unsigned char *p;
	unsigned n = 4, pairs = 0;

	if (w->failed)
		return -1;
	if (wtime(w, "edge", w->nedges, "dl", e->delay, 0) < 0)
		return -1;
	n += e->delay != 0;
	n += e->how != KG_HOW_TRACE;
	n += e->on != KG_NONE;
	n += e->via != KG_NONE;
	n += e->at != KG_NONE;
	n += e->graph != 0;
	p = sbuf_room(w, REC_MAX);
	p = put_map(p, n);
	KV_NAME("r", "edge");
	KV_I64("src", e->src);
	KV_I64("dst", e->dst);
	KV_NAME("k", kg_edge_kind_name[e->kind]);
	if (e->delay != 0)
		KV_I64("dl", e->delay);
	if (e->how != KG_HOW_TRACE)
		KV_NAME("how", kg_how_name[e->how]);
	if (e->on != KG_NONE)
		KV_I64("on", e->on);
	if (e->via != KG_NONE)
		KV_I64("via", e->via);
	if (e->at != KG_NONE)
		KV_I64("at", e->at);
	if (e->graph)
		KEY("gl"), *p++ = 0xc3; /* true */
	if (pairs != n)
		return count_error(w, "edge", n, pairs);
	w->sbuf.size = (size_t)((char *)p - w->sbuf.data);
	w->nedges++;
	return record_done(w);
}

int
kg_write_cov(struct kg_writer *w, const struct kg_cov *c)
{
	msgpack_packer *pk = &w->pk;
	size_t i;

	msgpack_pack_map(pk, 2);
	pk_kv_str(pk, "r", "cov");
	pk_cstr(pk, "c");
	msgpack_pack_map(pk, c->n);
	for (i = 0; i < c->n; i++)
		pk_cstr(pk, c->name[i]), msgpack_pack_int64(pk, c->val[i]);
	return record_done(w);
}

#define SIM_PIECE (1 << 20) /* a large sim record is compressed a piece at a time */
#define SIM_BATCH 4096      /* values encoded between checks of the piece's size */

/*
 * A sim record's arrays, appended to the buffer. A large record (one
 * that closes its frame, as record_done would) goes to zstd a piece at
 * a time instead of whole: the same bytes in the same frame, so the same
 * output (the frame's size is pledged when the record opens it, as a
 * single call with the whole frame would tell zstd; the last piece is
 * kept large, so zstd takes its buffered path to the end as it would
 * have for the whole), without holding tens of MB.
 * `left` is the bytes of the frame still to be appended, from the
 * start of a.
 */
/* A sim record's value j: the start's step from the one before (b NULL), or a's
 * end less its start b[j] (formats/graph-stream.md, `sim`). */
static int64_t
sim_at(const int64_t *a, const int64_t *b, size_t j)
{
	if (b != NULL)
		return a[j] - b[j];
	return j > 0 ? a[j] - a[j - 1] : a[0];
}

static int
sim_values(struct kg_writer *w, const int64_t *a, const int64_t *b, size_t n, int big,
    size_t *left)
{
	size_t i, j;

	for (i = 0; i < n; i = j) {
		size_t m = n - i < SIM_BATCH ? n - i : SIM_BATCH, before = w->sbuf.size;
		unsigned char *p = sbuf_room(w, 9 * m);

		for (j = i; j < i + m; j++)
			p = put_i64(p, sim_at(a, b, j));
		w->sbuf.size = (size_t)((char *)p - w->sbuf.data);
		*left -= w->sbuf.size - before;
		if (big && w->sbuf.size >= SIM_PIECE && *left >= SIM_PIECE / 2 &&
		    flush(w, ZSTD_e_continue) < 0)
			return -1;
	}
	return 0;
}

int
kg_write_sim(struct kg_writer *w, size_t n, const int64_t *ss, const int64_t *se,
    const int64_t *uss, const int64_t *use)
{
	static const char *const key[4] = { "ssd", "sd", "ussd", "usd" };
	const int64_t *a[4] = { ss, se, uss, use };
	msgpack_packer *pk = &w->pk;
	int64_t makespan = 0;
	size_t i, body = 0, left, head = n < 16 ? 1 : n < 65536 ? 3 : 5;
	int big, k, na = uss != NULL && use != NULL ? 4 : 2;

	if (w->failed)
		return -1;
	for (i = 0; i < n; i++) {
		if (wtime(w, "simulated start of task", i, "ssd", ss[i], -KG_TIME_MAX) < 0 ||
		    wtime(w, "simulated end of task", i, "sd", se[i], ss[i]) < 0 ||
		    (na == 4 && (wtime(w, "unprofiled simulated start of task", i, "ussd", uss[i],
		    -KG_TIME_MAX) < 0 || wtime(w, "unprofiled simulated end of task", i, "usd",
		    use[i], uss[i]) < 0)))
			return -1;
		if (se[i] > makespan)
			makespan = se[i];
		body += i64_len(sim_at(ss, NULL, i)) + i64_len(sim_at(se, ss, i));
		if (na == 4)
			body += i64_len(sim_at(uss, NULL, i)) + i64_len(sim_at(use, uss, i));
	}
	msgpack_pack_map(pk, 3 + (unsigned)na);
	pk_kv_str(pk, "r", "sim");
	pk_kv_i64(pk, "tasks", (int64_t)n);
	pk_kv_i64(pk, "makespan", makespan);
	pk_cstr(pk, "ssd");
	msgpack_pack_array(pk, n);
	/* the arrays, with the other keys and array heads between them */
	left = body;
	for (k = 1; k < na; k++)
		left += 1 + strlen(key[k]) + head;
	big = w->framed + w->sbuf.size + left >= FRAME_MAX;
	if (big && w->framed == 0) {
		if (zq_pledge(w->zq, w->sbuf.size + left) < 0)
			return zq_failed(w);
	}
	for (k = 0; k < na; k++) {
		if (k > 0) {
			size_t before = w->sbuf.size;

			pk_cstr(pk, key[k]);
			msgpack_pack_array(pk, n);
			left -= w->sbuf.size - before;
		}
		if (sim_values(w, a[k], k % 2 ? a[k - 1] : NULL, n, big, &left) < 0)
			return -1;
	}
	return record_done(w);
}

int
kg_write_end(struct kg_writer *w)
{
	msgpack_packer *pk = &w->pk;

	if (end_frame(w) < 0)
		return -1;
	msgpack_pack_map(pk, 5);
	pk_kv_str(pk, "r", "end");
	pk_kv_i64(pk, "tasks", (int64_t)w->ntasks);
	pk_kv_i64(pk, "edges", (int64_t)w->nedges);
	pk_kv_i64(pk, "procs", (int64_t)w->nprocs);
	pk_kv_i64(pk, "strs", (int64_t)w->nstrs);
	if (record_done(w) < 0)
		return -1;
	return end_frame(w);
}

/*
 * Count a record passed through for the section's end record; true for
 * the end record itself, which is written anew (the caller may have
 * dropped records).
 */
static int
count_passed(struct kg_writer *w, int type)
{
	switch (type) {
	case KG_R_HEADER:
		w->ntasks = w->nedges = w->nprocs = w->nstrs = 0;
		break;
	case KG_R_STR:
		w->nstrs++;
		break;
	case KG_R_PROC:
		w->nprocs++;
		break;
	case KG_R_TASK:
		w->ntasks++;
		break;
	case KG_R_EDGE:
		w->nedges++;
		break;
	case KG_R_END:
		return 1;
	}
	return 0;
}

void
kg_writer_count(struct kg_writer *w, int type)
{
	count_passed(w, type);
}

int
kg_write_bytes(struct kg_writer *w, const char *bytes, size_t n, int type)
{
	if (count_passed(w, type))
		return kg_write_end(w);
	if (msgpack_sbuffer_write(&w->sbuf, bytes, n) != 0) {
		seterr(w->err, "out of memory");
		w->failed = 1;
		return -1;
	}
	if (type == KG_R_HEADER && end_frame(w) < 0)
		return -1;
	return record_done(w);
}

int
kg_write_frames(struct kg_writer *w, const void *z, size_t n)
{
	if (end_frame(w) < 0)
		return -1;
	if (n > 0 && zq_raw(w->zq, z, n) < 0)
		return zq_failed(w);
	return 0;
}

int
kg_writer_finish(struct kg_writer *w)
{
	if (end_frame(w) < 0)
		return -1;
	if (zq_finish(w->zq) < 0)
		return zq_failed(w);
	return 0;
}

/* Reader ------------------------------------------------------------- */

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

static void
enum_codes(struct kg_reader *r)
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

int
kg_reader_init(struct kg_reader *r, FILE *fp)
{
	memset(r, 0, sizeof(*r));
	r->fp = fp;
	r->dctx = ZSTD_createDCtx();
	if (r->dctx == NULL) {
		seterr(r->err, "cannot create decoder");
		return -1;
	}
	r->in = xmalloc(IN_CHUNK);
	enum_codes(r);
	return 0;
}

static void
free_section(struct kg_reader *r)
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
	free_section(r);
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
				seterr(r->err, "%s", p.err);
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
					seterr(r->err, "read error: %s",
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
				seterr(r->err, "truncated graph stream (ends inside a zstd frame)");
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
				seterr(r->err, "not a graph stream (no zstd frame)");
			else if (ZSTD_getErrorCode(ret) == ZSTD_error_checksum_wrong)
				seterr(r->err, "corrupt graph stream (zstd checksum mismatch)");
			else
				seterr(r->err, "corrupt graph stream (zstd: %s)",
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

static int
fielderr(struct dec *d, const char *key, const char *what)
{
	seterr(d->r->err, "record %llu: field %s: expected %s",
	    (unsigned long long)d->r->nrec + 1, key, what);
	return -1;
}

/* A declared count beyond a reader's limit (kg.h). */
static int
limiterr(struct dec *d, const char *key, size_t n, size_t max)
{
	seterr(d->r->err, "record %llu: field %s: %zu entries (the limit is %zu)",
	    (unsigned long long)d->r->nrec + 1, key, n, max);
	return -1;
}

static int
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

static int
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

/* An integer of up to 63 bits; NULL for any other head. */
static inline const unsigned char *
fast_i64(const unsigned char *p, int64_t *v)
{
	switch (p[0]) {
	case 0xcc:
		*v = p[1];
		return p + 2;
	case 0xcd:
		*v = (int64_t)p[1] << 8 | p[2];
		return p + 3;
	case 0xce:
		*v = (int64_t)p[1] << 24 | (int64_t)p[2] << 16 | (int64_t)p[3] << 8 | p[4];
		return p + 5;
	case 0xcf:
		if (p[1] >= 0x80)
			return NULL;
		*v = (int64_t)((uint64_t)p[1] << 56 | (uint64_t)p[2] << 48 | (uint64_t)p[3] << 40 |
		    (uint64_t)p[4] << 32 | (uint64_t)p[5] << 24 | (uint64_t)p[6] << 16 |
		    (uint64_t)p[7] << 8 | p[8]);
		return p + 9;
	default:
		if (p[0] < 0x80) {
			*v = p[0];
			return p + 1;
		}
		if (p[0] >= 0xe0) {
			*v = (int8_t)p[0];
			return p + 1;
		}
		return NULL;
	}
}

/* An id (below KG_NONE); NULL for any other head. */
static inline const unsigned char *
fast_id(const unsigned char *p, uint32_t *v)
{
	uint32_t x;

	switch (p[0]) {
	case 0xcc:
		*v = p[1];
		return p + 2;
	case 0xcd:
		*v = (uint32_t)p[1] << 8 | p[2];
		return p + 3;
	case 0xce:
		x = (uint32_t)p[1] << 24 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 8 | p[4];
		if (x == KG_NONE)
			return NULL;
		*v = x;
		return p + 5;
	default:
		if (p[0] < 0x80) {
			*v = p[0];
			return p + 1;
		}
		return NULL;
	}
}

static inline int
get_i64(struct dec *d, const char *key, int64_t *v)
{
	const unsigned char *q;

	if (d->c.end - d->c.p >= INT_ROOM && (q = fast_i64(d->c.p, v)) != NULL) {
		d->c.p = q;
		return 0;
	}
	return get_i64_slow(d, key, v);
}

static inline int
get_u32(struct dec *d, const char *key, uint32_t *v)
{
	const unsigned char *q;

	if (d->c.end - d->c.p >= INT_ROOM && (q = fast_id(d->c.p, v)) != NULL) {
		d->c.p = q;
		return 0;
	}
	return get_u32_slow(d, key, v);
}

static int
get_str(struct dec *d, const char *key, const char **s, size_t *len)
{
	struct mp_val x;

	if (mp_next(&d->c, &x) < 0)
		return -1;
	if (x.type != MP_STR)
		return fielderr(d, key, "a string");
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

static int
get_enum(struct dec *d, const char *key, const char *const *table, int n, int *v)
{
	const char *s;
	size_t len;
	int i;

	if (get_str(d, key, &s, &len) < 0)
		return -1;
	i = lookup(table, n, s, len);
	if (i < 0) {
		seterr(d->r->err, "record %llu: field %s: unknown value '%.*s'",
		    (unsigned long long)d->r->nrec + 1, key, (int)(len > 40 ? 40 : len), s);
		return -1;
	}
	*v = i;
	return 0;
}

/* The next key of a map, which must be a string. */
static int
get_key_slow(struct dec *d, struct mp_val *k)
{
	if (mp_next(&d->c, k) < 0)
		return -1;
	if (k->type != MP_STR) {
		seterr(d->r->err, "record %llu: key is not a string",
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

static int
check_ref(struct dec *d, const char *key, const char *what, uint32_t id, uint64_t n)
{
	if (id != KG_NONE && id >= n) {
		seterr(d->r->err, "record %llu: field %s: %s %u not defined",
		    (unsigned long long)d->r->nrec + 1, key, what, id);
		return -1;
	}
	return 0;
}

static int
check_str_ref(struct dec *d, const char *key, uint32_t id)
{
	return check_ref(d, key, "string", id, d->r->nstr);
}

static int
missing(struct dec *d, const char *key)
{
	seterr(d->r->err, "record %llu: missing field %s",
	    (unsigned long long)d->r->nrec + 1, key);
	return -1;
}

/* A time or duration in the format's range (KG_TIME_MAX), or an error naming the field. */
static int
check_time(struct dec *d, const char *key, int64_t v)
{
	if (KG_TIME_OK(v))
		return 0;
	seterr(d->r->err, "record %llu: field %s: %lld ns is out of range",
	    (unsigned long long)d->r->nrec + 1, key, (long long)v);
	return -1;
}

/*
 * A job section's ranks: at least 0, ascending without repeats, below
 * the world size when the header says one; their clock offsets and
 * starts in the range of times.
 */
static int
check_ranks(struct dec *d, const struct kg_header *h)
{
	struct kg_reader *r = d->r;
	unsigned long long rec = (unsigned long long)r->nrec + 1;
	size_t i;

	for (i = 0; i < r->nranks; i++) {
		int64_t v = r->ranks[i];

		if (v < 0 || (h->world >= 0 && v >= h->world)) {
			seterr(r->err, "record %llu: field ranks: %lld is not a rank of a world of %lld",
			    rec, (long long)v, (long long)h->world);
			return -1;
		}
		if (i > 0 && v <= r->ranks[i - 1]) {
			seterr(r->err, "record %llu: field ranks: %s (%lld after %lld)", rec,
			    v == r->ranks[i - 1] ? "a rank given twice" : "not ascending",
			    (long long)v, (long long)r->ranks[i - 1]);
			return -1;
		}
		if ((r->nclk > 0 && check_time(d, "clk", r->clk[i]) < 0) ||
		    (r->nt0 > 0 && check_time(d, "t0", r->t0[i]) < 0))
			return -1;
	}
	grow(&r->rseen, &r->caprseen, r->nranks, 1);
	memset(r->rseen, 0, r->nranks);
	return 0;
}

static int
dec_header(struct dec *d, uint32_t npairs, struct kg_header *h)
{
	struct kg_reader *r = d->r;
	struct mp_val k, x;
	uint32_t i, j;
	int have_format = 0, have_major = 0, have_unit = 0;
	int64_t v;
	const char *s;
	size_t len;

	free_section(r);
	r->hrec = r->nrec + 1;
	memset(h, 0, sizeof(*h));
	h->rank = h->world = -1;
	h->source = "";
	h->gpu = "";
	h->gpu_mem = h->gpu_sms = -1;
	h->pcal = "";
	h->pcost = h->ustep = -1;
	for (i = 0; i < npairs; i++) {
		if (get_key(d, &k) < 0)
			return -1;
		if (MP_IS(&k, "format")) {
			if (get_str(d, "format", &s, &len) < 0)
				return -1;
			if (len != strlen(KG_FORMAT) || memcmp(s, KG_FORMAT, len) != 0) {
				seterr(r->err, "not a graph stream (format '%.*s')",
				    (int)(len > 40 ? 40 : len), s);
				return -1;
			}
			have_format = 1;
		} else if (MP_IS(&k, "major")) {
			if (get_i64(d, "major", &v) < 0)
				return -1;
			if (v != KG_MAJOR) {
				seterr(r->err, "unsupported graph stream version %lld (this reader knows %d)",
				    (long long)v, KG_MAJOR);
				return -1;
			}
			h->major = (uint32_t)v;
			have_major = 1;
		} else if (MP_IS(&k, "minor")) {
			if (get_i64(d, "minor", &v) < 0)
				return -1;
			h->minor = (uint32_t)v;
		} else if (MP_IS(&k, "producer")) {
			if (get_str(d, "producer", &s, &len) < 0)
				return -1;
			free(r->producer);
			r->producer = xstrndup(s, len);
		} else if (MP_IS(&k, "source")) {
			if (get_str(d, "source", &s, &len) < 0)
				return -1;
			free(r->source);
			r->source = xstrndup(s, len);
		} else if (MP_IS(&k, "gpu")) {
			if (get_str(d, "gpu", &s, &len) < 0)
				return -1;
			free(r->gpu);
			r->gpu = xstrndup(s, len);
		} else if (MP_IS(&k, "pcal")) {
			if (get_str(d, "pcal", &s, &len) < 0)
				return -1;
			if (len > 0 && !(len == 10 && memcmp(s, "calibrated", 10) == 0) &&
			    !(len == 9 && memcmp(s, "estimated", 9) == 0) &&
			    !(len == 5 && memcmp(s, "given", 5) == 0))
				return fielderr(d, "pcal", "\"calibrated\", \"estimated\" or \"given\"");
			free(r->pcal);
			r->pcal = xstrndup(s, len);
		} else if (MP_IS(&k, "pcost") || MP_IS(&k, "ustep")) {
			int64_t *f = k.s[0] == 'p' ? &h->pcost : &h->ustep;

			if (get_i64(d, k.s[0] == 'p' ? "pcost" : "ustep", f) < 0)
				return -1;
			if (*f < 0 || *f > KG_TIME_MAX)
				return fielderr(d, k.s[0] == 'p' ? "pcost" : "ustep",
				    "a time of 0 to 2^53 ns");
		} else if (MP_IS(&k, "failed")) {
			if (get_str(d, "failed", &s, &len) < 0)
				return -1;
			free(r->failed);
			r->failed = xstrndup(s, len);
		} else if (MP_IS(&k, "gpu_mem")) {
			if (get_i64(d, "gpu_mem", &h->gpu_mem) < 0)
				return -1;
		} else if (MP_IS(&k, "gpu_sms")) {
			if (get_i64(d, "gpu_sms", &h->gpu_sms) < 0)
				return -1;
		} else if (MP_IS(&k, "rank")) {
			if (get_i64(d, "rank", &h->rank) < 0)
				return -1;
		} else if (MP_IS(&k, "world")) {
			if (get_i64(d, "world", &h->world) < 0)
				return -1;
		} else if (MP_IS(&k, "tbase")) {
			if (get_i64(d, "tbase", &h->tbase) < 0)
				return -1;
			if (h->tbase <= -KG_TBASE_MAX || h->tbase >= KG_TBASE_MAX) {
				seterr(r->err, "record %llu: field tbase: %lld ns is out of range",
				    (unsigned long long)r->nrec + 1, (long long)h->tbase);
				return -1;
			}
		} else if (MP_IS(&k, "unit")) {
			if (get_str(d, "unit", &s, &len) < 0)
				return -1;
			if (len != 2 || memcmp(s, "ns", 2) != 0) {
				seterr(r->err, "record %llu: field unit: '%.*s', not 'ns'",
				    (unsigned long long)r->nrec + 1, (int)(len > 40 ? 40 : len), s);
				return -1;
			}
			have_unit = 1;
		} else if (MP_IS(&k, "section") || MP_IS(&k, "sections")) {
			if (mp_next(&d->c, &x) < 0)
				return -1;
			if (x.type != MP_UINT)
				return fielderr(d, k.n == 7 ? "section" : "sections", "an integer >= 0");
			if (k.n == 7)
				h->section = x.u;
			else
				h->sections = x.u;
		} else if (MP_IS(&k, "xxh3")) {
			if (mp_next(&d->c, &x) < 0)
				return -1;
			if (x.type != MP_UINT)
				return fielderr(d, "xxh3", "an integer");
			h->xxh3 = x.u;
		} else if (MP_IS(&k, "ranks") || MP_IS(&k, "clk") || MP_IS(&k, "t0")) {
			int which = k.s[0] == 'r' ? 0 : k.s[0] == 'c' ? 1 : 2;
			const char *key = which == 0 ? "ranks" : which == 1 ? "clk" : "t0";
			int64_t **a = which == 0 ? &r->ranks : which == 1 ? &r->clk : &r->t0;
			size_t *na = which == 0 ? &r->nranks : which == 1 ? &r->nclk : &r->nt0;
			size_t *ca = which == 0 ? &r->capranks : which == 1 ? &r->capclk : &r->capt0;
			uint32_t n;

			if (mp_next(&d->c, &x) < 0)
				return -1;
			if (x.type != MP_ARRAY)
				return fielderr(d, key, "an array");
			if (*na + x.n > KG_RANKS_MAX)
				return limiterr(d, key, *na + x.n, KG_RANKS_MAX);
			for (j = 0, n = x.n; j < n; j++) {
				if (get_i64(d, key, &v) < 0)
					return -1;
				grow(a, ca, *na + 1, sizeof(**a));
				(*a)[(*na)++] = v;
			}
		} else if (MP_IS(&k, "iters") || MP_IS(&k, "tools")) {
			int iters = k.s[0] == 'i';
			const char *key = iters ? "iters" : "tools";
			uint32_t n;

			if (mp_next(&d->c, &x) < 0)
				return -1;
			if (x.type != MP_ARRAY)
				return fielderr(d, key, "an array");
			if (iters && r->niters + x.n > KG_ITERS_MAX)
				return limiterr(d, key, r->niters + x.n, KG_ITERS_MAX);
			if (!iters && r->ntools + x.n > KG_TOOLS_MAX)
				return limiterr(d, key, r->ntools + x.n, KG_TOOLS_MAX);
			for (j = 0, n = x.n; j < n; j++) {
				if (iters) {
					if (get_i64(d, key, &v) < 0)
						return -1;
					grow(&r->iters, &r->capiters, r->niters + 1, sizeof(*r->iters));
					r->iters[r->niters++] = v;
				} else {
					if (get_str(d, key, &s, &len) < 0)
						return -1;
					grow(&r->tools, &r->captools, r->ntools + 1, sizeof(*r->tools));
					r->tools[r->ntools++] = xstrndup(s, len);
				}
			}
		} else if (mp_skip(&d->c) < 0) {
			return -1;
		}
	}
	if (h->sections > 0 && h->section >= h->sections) {
		seterr(r->err, "record %llu: section %llu of %llu", (unsigned long long)r->nrec + 1,
		    (unsigned long long)h->section + 1, (unsigned long long)h->sections);
		return -1;
	}
	if (!have_format)
		return missing(d, "format");
	if (!have_major)
		return missing(d, "major");
	if (r->producer == NULL)
		return missing(d, "producer");
	if (!have_unit)
		return missing(d, "unit");
	h->producer = r->producer;
	if (r->source != NULL)
		h->source = r->source;
	if (r->gpu != NULL)
		h->gpu = r->gpu;
	if (r->pcal != NULL)
		h->pcal = r->pcal;
	h->iters = r->iters;
	h->niters = r->niters;
	h->tools = (const char *const *)r->tools;
	h->ntools = r->ntools;
	if (r->nranks > 0) {
		if ((r->nclk != 0 && r->nclk != r->nranks) || (r->nt0 != 0 && r->nt0 != r->nranks)) {
			seterr(r->err, "record %llu: %zu ranks, but %zu clock offsets and %zu starts",
			    (unsigned long long)r->nrec + 1, r->nranks, r->nclk, r->nt0);
			return -1;
		}
		if (check_ranks(d, h) < 0)
			return -1;
		h->ranks = r->ranks;
		h->clk = r->nclk > 0 ? r->clk : NULL;
		h->t0 = r->nt0 > 0 ? r->t0 : NULL;
		h->nranks = r->nranks;
	}
	return 0;
}

static int
dec_str(struct dec *d, uint32_t npairs, uint32_t *idp)
{
	struct kg_reader *r = d->r;
	struct mp_val k;
	uint32_t i, id = KG_NONE;
	const char *s = NULL;
	size_t len = 0;

	for (i = 0; i < npairs; i++) {
		if (get_key(d, &k) < 0)
			return -1;
		if (MP_IS(&k, "id")) {
			if (get_u32(d, "id", &id) < 0)
				return -1;
		} else if (MP_IS(&k, "s")) {
			if (get_str(d, "s", &s, &len) < 0)
				return -1;
		} else if (mp_skip(&d->c) < 0) {
			return -1;
		}
	}
	if (id == KG_NONE)
		return missing(d, "id");
	if (s == NULL)
		return missing(d, "s");
	if (id != r->nstr) {
		seterr(r->err, "record %llu: string id %u out of order (expected %zu)",
		    (unsigned long long)r->nrec + 1, id, r->nstr);
		return -1;
	}
	grow(&r->str, &r->capstr, r->nstr + 1, sizeof(*r->str));
	r->str[r->nstr++] = xstrndup(s, len);
	*idp = id;
	return 0;
}

static int
dec_proc(struct dec *d, uint32_t npairs, struct kg_proc *p)
{
	static const char *const pk[] = { "thread", "stream" };
	struct kg_reader *r = d->r;
	struct mp_val k, x;
	uint32_t i;
	int have = 0;

	memset(p, 0, sizeof(*p));
	p->id = p->name = KG_NONE;
	p->rank = -1;
	for (i = 0; i < npairs; i++) {
		int rc = 0;

		if (get_key(d, &k) < 0)
			return -1;
		if (MP_IS(&k, "id")) {
			rc = get_u32(d, "id", &p->id);
		} else if (MP_IS(&k, "k")) {
			rc = get_enum(d, "k", pk, 2, &p->kind), have |= 1;
		} else if (MP_IS(&k, "pid")) {
			rc = get_i64(d, "pid", &p->pid), have |= 2;
		} else if (MP_IS(&k, "tid")) {
			rc = get_i64(d, "tid", &p->tid), have |= 4;
		} else if (MP_IS(&k, "n")) {
			rc = get_u32(d, "n", &p->name);
		} else if (MP_IS(&k, "rank")) {
			rc = get_i64(d, "rank", &p->rank);
		} else if (MP_IS(&k, "main")) {
			rc = mp_next(&d->c, &x);
			p->main = rc == 0 && x.type == MP_BOOL && x.b;
			if (rc == 0 && (x.type == MP_ARRAY || x.type == MP_MAP))
				return fielderr(d, "main", "a boolean");
		} else {
			rc = mp_skip(&d->c);
		}
		if (rc < 0)
			return -1;
	}
	if (p->id == KG_NONE)
		return missing(d, "id");
	if (!(have & 1))
		return missing(d, "k");
	if (!(have & 2))
		return missing(d, "pid");
	if (!(have & 4))
		return missing(d, "tid");
	if (p->id != r->nprocs) {
		seterr(r->err, "record %llu: proc id %u out of order (expected %llu)",
		    (unsigned long long)r->nrec + 1, p->id, (unsigned long long)r->nprocs);
		return -1;
	}
	if (r->nranks > 0) {
		/* a job section's proc is on one of its ranks (ascending) */
		size_t lo = 0, hi = r->nranks;

		while (lo < hi) {
			size_t mid = lo + (hi - lo) / 2;

			if (r->ranks[mid] < p->rank)
				lo = mid + 1;
			else
				hi = mid;
		}
		if (lo == r->nranks || r->ranks[lo] != p->rank) {
			seterr(r->err, "record %llu: field rank: %lld is not one of the job's ranks",
			    (unsigned long long)r->nrec + 1, (long long)p->rank);
			return -1;
		}
		r->rseen[lo] = 1;
	}
	return check_str_ref(d, "n", p->name);
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

/* One pair of a task record, any key and value; see dec_task. */
static int
task_pair(struct dec *d, struct kg_task *t, int *have)
{
	struct mp_val k, x;
	int rc;

	if (get_key(d, &k) < 0)
		return -1;
	switch (key_code(&k)) {
	case KC1('p'):
		rc = get_u32(d, "p", &t->proc), *have |= 1;
		break;
	case KC1('k'):
		rc = get_enum(d, "k", kg_task_kind_name, KG_NTASK_KIND, &t->kind), *have |= 2;
		break;
	case KC1('n'):
		rc = get_u32(d, "n", &t->name), *have |= 4;
		break;
	case KC1('d'):
		rc = get_i64(d, "d", &t->dur), *have |= 8;
		break;
	case KC2('i', 'd'):
		rc = get_u32(d, "id", &t->id);
		break;
	case KC2('t', 's'):
		rc = get_i64(d, "ts", &t->ts), *have |= 16;
		break;
	case KC2('i', 't'):
		rc = get_i64(d, "it", &t->iter), *have |= 32;
		break;
	case KC2('o', 'd'):
		rc = get_i64(d, "od", &t->odur);
		break;
	case KC2('o', 'p'):
		rc = get_u32(d, "op", &t->op);
		break;
	case KC2('s', 'h'):
		rc = get_u32(d, "sh", &t->shapes);
		break;
	case KC2('t', 'y'):
		rc = get_u32(d, "ty", &t->itypes);
		break;
	case KC2('o', 'c'):
		rc = get_u32(d, "oc", &t->ocall);
		break;
	case KC2('b', 'y'):
		rc = mp_next(&d->c, &x);
		if (rc == 0 && x.type != MP_UINT)
			return fielderr(d, "by", "an integer");
		t->bytes = x.u;
		break;
	case KC2('g', 's'):
		rc = get_i64(d, "gs", &t->gsize);
		break;
	case KC2('p', 'g'):
		rc = get_u32(d, "pg", &t->pg);
		break;
	case KC2('d', 't'):
		rc = get_u32(d, "dt", &t->dtype);
		break;
	case KC2('p', 'h'):
		rc = get_enum(d, "ph", kg_phase_name, KG_NPHASE, &t->phase);
		break;
	case KC2('m', 'b'):
		rc = get_i64(d, "mb", &t->mb);
		break;
	case KC2('l', 'y'):
		rc = get_i64(d, "ly", &t->layer);
		break;
	case KC2('s', 't'):
		rc = get_i64(d, "st", &t->stage);
		break;
	case KC4('c', 'o', 'r', 'r'):
		rc = get_i64(d, "corr", &t->corr);
		break;
	case KC4('c', 'o', 'l', 'l'):
		rc = get_enum(d, "coll", kg_coll_name, KG_NCOLL, &t->coll);
		break;
	case KC3('p', 'g', 'r'):
		rc = get_u32(d, "pgr", &t->pgr);
		break;
	case KC3('s', 'e', 'q'):
		rc = get_i64(d, "seq", &t->seq);
		break;
	case KC2('m', 'a'):
		rc = get_i64(d, "ma", &t->mpeak);
		break;
	case KC2('m', 'r'):
		rc = get_i64(d, "mr", &t->mrpeak);
		break;
	case KC2('m', 'n'):
		rc = get_i64(d, "mn", &t->mnet);
		break;
	case KC2('m', 'x'):
		rc = get_i64(d, "mx", &t->mexc);
		break;
	case KC2('p', 'c'):
		rc = get_i64(d, "pc", &t->prof);
		break;
	case KC2('r', 'c'):
		rc = mp_next(&d->c, &x);
		if (rc == 0 && x.type != MP_BOOL)
			return fielderr(d, "rc", "a boolean");
		t->recomp = x.b;
		break;
	default:
		rc = mp_skip(&d->c);
	}
	return rc;
}

static int
dec_task(struct dec *d, uint32_t npairs, struct kg_task *restrict t)
{
	struct kg_reader *r = d->r;
	const unsigned char *p = d->c.p, *end = d->c.end, *q;
	uint32_t i;
	int have = 0;

	kg_task_init(t);
	t->id = KG_NONE;
	for (i = 0; i < npairs; i++, p = q) {
		if (end - p >= FAST_ROOM) {
			q = p + 1 + (p[0] & 0x1f);
			switch (fast_key(p)) {
			case KC1('p'):
				q = fast_id(q, &t->proc), have |= 1;
				break;
			case KC1('k'):
				q = fast_enum(q, r, EN_TASK, &t->kind);
				have |= 2;
				break;
			case KC1('n'):
				q = fast_id(q, &t->name), have |= 4;
				break;
			case KC1('d'):
				q = fast_i64(q, &t->dur), have |= 8;
				break;
			case KC2('i', 'd'):
				q = fast_id(q, &t->id);
				break;
			case KC2('t', 's'):
				q = fast_i64(q, &t->ts), have |= 16;
				break;
			case KC2('i', 't'):
				q = fast_i64(q, &t->iter), have |= 32;
				break;
			case KC2('o', 'd'):
				q = fast_i64(q, &t->odur);
				break;
			case KC2('o', 'p'):
				q = fast_id(q, &t->op);
				break;
			case KC2('s', 'h'):
				q = fast_id(q, &t->shapes);
				break;
			case KC2('t', 'y'):
				q = fast_id(q, &t->itypes);
				break;
			case KC2('o', 'c'):
				q = fast_id(q, &t->ocall);
				break;
			case KC2('g', 's'):
				q = fast_i64(q, &t->gsize);
				break;
			case KC2('p', 'g'):
				q = fast_id(q, &t->pg);
				break;
			case KC2('d', 't'):
				q = fast_id(q, &t->dtype);
				break;
			case KC2('p', 'h'):
				q = fast_enum(q, r, EN_PHASE, &t->phase);
				break;
			case KC2('m', 'b'):
				q = fast_i64(q, &t->mb);
				break;
			case KC2('l', 'y'):
				q = fast_i64(q, &t->layer);
				break;
			case KC2('s', 't'):
				q = fast_i64(q, &t->stage);
				break;
			case KC4('c', 'o', 'r', 'r'):
				q = fast_i64(q, &t->corr);
				break;
			case KC4('c', 'o', 'l', 'l'):
				q = fast_enum(q, r, EN_COLL, &t->coll);
				break;
			case KC3('p', 'g', 'r'):
				q = fast_id(q, &t->pgr);
				break;
			case KC3('s', 'e', 'q'):
				q = fast_i64(q, &t->seq);
				break;
			case KC2('p', 'c'):
				q = fast_i64(q, &t->prof);
				break;
			default:
				q = NULL;
			}
			if (q != NULL)
				continue;
		}
		d->c.p = p;
		if (task_pair(d, t, &have) < 0)
			return -1;
		q = d->c.p;
	}
	d->c.p = p;
	if (t->id == KG_NONE)
		return missing(d, "id");
	if (!(have & 1))
		return missing(d, "p");
	if (!(have & 2))
		return missing(d, "k");
	if (!(have & 4))
		return missing(d, "n");
	if (!(have & 8))
		return missing(d, "d");
	if (!(have & 16))
		return missing(d, "ts");
	if (!(have & 32))
		return missing(d, "it");
	if (t->odur < 0)
		t->odur = t->dur;
	if (t->dur < 0) {
		seterr(r->err, "record %llu: negative duration",
		    (unsigned long long)r->nrec + 1);
		return -1;
	}
	if (t->prof < 0 || t->prof > KG_TIME_MAX) {
		seterr(r->err, "record %llu: task %u: field pc: %lld ns is out of range (0 to 2^53)",
		    (unsigned long long)r->nrec + 1, t->id, (long long)t->prof);
		return -1;
	}
	if (check_time(d, "d", t->dur) < 0 || check_time(d, "ts", t->ts) < 0 ||
	    check_time(d, "od", t->odur) < 0)
		return -1;
	if (t->mb < -1 || t->mb > KG_TAG_MAX || t->layer < -1 || t->layer > KG_TAG_MAX ||
	    t->stage < -1 || t->stage > KG_TAG_MAX || t->gsize < -1 || t->gsize > KG_TAG_MAX ||
	    t->iter < -1 || t->iter > KG_ITER_MAX) {
		seterr(r->err, "record %llu: task %u: %s out of range",
		    (unsigned long long)r->nrec + 1, t->id,
		    t->mb < -1 || t->mb > KG_TAG_MAX ? "mb" : t->layer < -1 || t->layer > KG_TAG_MAX ?
		    "ly" : t->stage < -1 || t->stage > KG_TAG_MAX ? "st" :
		    t->gsize < -1 || t->gsize > KG_TAG_MAX ? "gs" : "it");
		return -1;
	}
	if (t->id != r->ntasks) {
		seterr(r->err, "record %llu: task id %u out of order (expected %llu)",
		    (unsigned long long)r->nrec + 1, t->id, (unsigned long long)r->ntasks);
		return -1;
	}
	if (t->proc >= r->nprocs) {
		seterr(r->err, "record %llu: task %u: proc %u not defined",
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

/* One pair of an edge record, any key and value; see dec_task. */
static int
edge_pair(struct dec *d, struct kg_edge *e, int *have)
{
	struct mp_val k;

	if (get_key(d, &k) < 0)
		return -1;
	switch (key_code(&k)) {
	case KC3('s', 'r', 'c'):
		return *have |= 1, get_u32(d, "src", &e->src);
	case KC3('d', 's', 't'):
		return *have |= 2, get_u32(d, "dst", &e->dst);
	case KC1('k'):
		return *have |= 4, get_enum(d, "k", kg_edge_kind_name, KG_NEDGE_KIND, &e->kind);
	case KC2('d', 'l'):
		return get_i64(d, "dl", &e->delay);
	case KC3('h', 'o', 'w'):
		return get_enum(d, "how", kg_how_name, KG_NHOW, &e->how);
	case KC2('o', 'n'):
		return get_u32(d, "on", &e->on);
	case KC3('v', 'i', 'a'):
		return get_u32(d, "via", &e->via);
	case KC2('a', 't'):
		return get_u32(d, "at", &e->at);
	case KC2('g', 'l'): {
		struct mp_val x;

		if (mp_next(&d->c, &x) < 0)
			return -1;
		if (x.type != MP_BOOL)
			return fielderr(d, "gl", "a boolean");
		e->graph = x.b;
		return 0;
	}
	default:
		return mp_skip(&d->c);
	}
}

static int
dec_edge(struct dec *d, uint32_t npairs, struct kg_edge *restrict e)
{
	const unsigned char *p = d->c.p, *end = d->c.end, *q;
	uint32_t i;
	int have = 0;

	kg_edge_init(e);
	for (i = 0; i < npairs; i++, p = q) {
		if (end - p >= FAST_ROOM) {
			q = p + 1 + (p[0] & 0x1f);
			switch (fast_key(p)) {
			case KC3('s', 'r', 'c'):
				q = fast_id(q, &e->src), have |= 1;
				break;
			case KC3('d', 's', 't'):
				q = fast_id(q, &e->dst), have |= 2;
				break;
			case KC1('k'):
				q = fast_enum(q, d->r, EN_EDGE, &e->kind);
				have |= 4;
				break;
			case KC2('d', 'l'):
				q = fast_i64(q, &e->delay);
				break;
			case KC3('h', 'o', 'w'):
				q = fast_enum(q, d->r, EN_HOW, &e->how);
				break;
			case KC2('o', 'n'):
				q = fast_id(q, &e->on);
				break;
			case KC3('v', 'i', 'a'):
				q = fast_id(q, &e->via);
				break;
			case KC2('a', 't'):
				q = fast_id(q, &e->at);
				break;
			case KC2('g', 'l'):
				if (*q == 0xc3 || *q == 0xc2)
					e->graph = *q++ == 0xc3;
				else
					q = NULL;
				break;
			default:
				q = NULL;
			}
			if (q != NULL)
				continue;
		}
		d->c.p = p;
		if (edge_pair(d, e, &have) < 0)
			return -1;
		q = d->c.p;
	}
	d->c.p = p;
	if (!(have & 1))
		return missing(d, "src");
	if (!(have & 2))
		return missing(d, "dst");
	if (!(have & 4))
		return missing(d, "k");
	if (e->delay < 0) {
		seterr(d->r->err, "record %llu: negative delay",
		    (unsigned long long)d->r->nrec + 1);
		return -1;
	}
	if (check_time(d, "dl", e->delay) < 0)
		return -1;
	if (e->graph && e->kind != KG_E_LAUNCH) {
		seterr(d->r->err, "record %llu: gl on a %s edge", (unsigned long long)d->r->nrec + 1,
		    kg_edge_kind_name[e->kind]);
		return -1;
	}
	/* both ends defined before the edge (the format's rule), so that no
	 * reader indexes its tasks with another section's id; graph-deps
	 * --check takes them all to count them */
	if (d->r->unknown_edges)
		return 0;
	if (e->src >= d->r->ntasks || e->dst >= d->r->ntasks) {
		seterr(d->r->err, "record %llu: edge to an unknown task",
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

static int
dec_cov(struct dec *d, uint32_t npairs, struct kg_cov *c)
{
	struct mp_val k, x, kk;
	uint32_t i, j, n;

	kg_cov_release(c);
	for (i = 0; i < npairs; i++) {
		if (get_key(d, &k) < 0)
			return -1;
		if (!MP_IS(&k, "c")) {
			if (mp_skip(&d->c) < 0)
				return -1;
			continue;
		}
		if (mp_next(&d->c, &x) < 0)
			return -1;
		if (x.type != MP_MAP)
			return fielderr(d, "c", "a map");
		if (c->n + x.n > KG_COV_MAX)
			return limiterr(d, "c", c->n + x.n, KG_COV_MAX);
		for (j = 0, n = x.n; j < n; j++) {
			int64_t v;

			if (mp_next(&d->c, &kk) < 0)
				return -1;
			if (kk.type != MP_STR) {
				seterr(d->r->err, "record %llu: field c: key is not a string",
				    (unsigned long long)d->r->nrec + 1);
				return -1;
			}
			if (get_i64(d, "c", &v) < 0)
				return -1;
			cov_set(c, kk.s, kk.n, v, 0);
		}
	}
	return 0;
}

/* One array of the sim record (which: 0 ss, 1 se, 2 uss, 3 use) into
 * the reader's buffer for it, n values. */
static int
dec_sim_times(struct dec *d, const char *key, int which, size_t *n)
{
	struct kg_reader *r = d->r;
	int64_t **buf[4] = { &r->ss, &r->se, &r->uss, &r->use };
	struct mp_val x;
	uint32_t j;
	int k;

	if (mp_next(&d->c, &x) < 0)
		return -1;
	if (x.type != MP_ARRAY)
		return fielderr(d, key, "an array");
	*n = x.n;
	/* a count that is not the section's is refused before anything is
	 * allocated for it */
	if (*n != r->ntasks) {
		seterr(r->err, "record %llu: field %s: %zu times in a section of %llu tasks",
		    (unsigned long long)r->nrec + 1, key, *n, (unsigned long long)r->ntasks);
		return -1;
	}
	if (*n > r->capsim) {
		/* never more than the bytes in hand: a corrupt count must
		 * not allocate for 4 billion entries */
		if (*n > (size_t)(d->c.end - d->c.p)) {
			d->c.err = MP_ETRUNC;
			return -1;
		}
		for (k = 0; k < 4; k++)
			*buf[k] = xrealloc(*buf[k], *n * sizeof(**buf[k]));
		r->capsim = *n;
	}
	for (j = 0; j < *n; j++)
		if (get_i64(d, key, &(*buf[which])[j]) < 0)
			return -1;
	return 0;
}

/* Steps to starts, lengths to ends (formats/graph-stream.md, `sim`). */
static void
sim_absolute(int64_t *ss, int64_t *se, size_t n)
{
	size_t j;

	for (j = 0; j < n; j++) {
		/* unsigned: a corrupt step wraps, it does not overflow */
		if (j > 0)
			ss[j] = (int64_t)((uint64_t)ss[j] + (uint64_t)ss[j - 1]);
		se[j] = (int64_t)((uint64_t)se[j] + (uint64_t)ss[j]);
	}
}

/* Simulated starts and ends in the format's range, no end before its start. */
static int
sim_check(struct dec *d, const int64_t *ss, const int64_t *se, size_t n, const char *run)
{
	size_t j;

	for (j = 0; j < n; j++)
		if (!KG_TIME_OK(ss[j]) || !KG_TIME_OK(se[j]) || se[j] < ss[j]) {
			seterr(d->r->err, "record %llu: task %zu: %ssimulated %s %lld ns%s",
			    (unsigned long long)d->r->nrec + 1, j, run,
			    !KG_TIME_OK(ss[j]) ? "start" : "end",
			    (long long)(!KG_TIME_OK(ss[j]) ? ss[j] : se[j]),
			    KG_TIME_OK(se[j]) && KG_TIME_OK(ss[j]) ? " before its start" :
			    " is out of range");
			return -1;
		}
	return 0;
}

static int
dec_sim(struct dec *d, uint32_t npairs, struct kg_sim *s)
{
	struct kg_reader *r = d->r;
	struct mp_val k;
	uint32_t i;
	size_t nss = 0, nse = 0, nu[2] = { 0, 0 };
	int64_t v;
	int have = 0, steps = 0, lens = 0;

	memset(s, 0, sizeof(*s));
	for (i = 0; i < npairs; i++) {
		const char *key = NULL;
		int rc, bit = 0;

		if (get_key(d, &k) < 0)
			return -1;
		if (MP_IS(&k, "tasks"))
			key = "tasks", bit = 1;
		else if (MP_IS(&k, "makespan"))
			key = "makespan", bit = 2;
		else if (MP_IS(&k, "ss") || MP_IS(&k, "ssd"))
			key = k.n == 2 ? "ss" : "ssd", bit = 4;
		else if (MP_IS(&k, "se") || MP_IS(&k, "sd"))
			key = k.s[1] == 'e' ? "se" : "sd", bit = 8;
		else if (MP_IS(&k, "ussd"))
			key = "ussd", bit = 16;
		else if (MP_IS(&k, "usd"))
			key = "usd", bit = 32;
		/* A repeated key is refused: a second array of another
		 * length would replace the first's values. */
		if (have & bit) {
			seterr(r->err, "record %llu: field %s given twice",
			    (unsigned long long)r->nrec + 1, key);
			return -1;
		}
		have |= bit;
		if (bit == 1)
			rc = get_i64(d, "tasks", &v), s->tasks = (uint64_t)v;
		else if (bit == 2)
			rc = get_i64(d, "makespan", &s->makespan) < 0 ||
			    check_time(d, "makespan", s->makespan) < 0 ? -1 : 0;
		else if (bit == 4)
			rc = dec_sim_times(d, key, 0, &nss), steps = key[2] == 'd';
		else if (bit == 8)
			rc = dec_sim_times(d, key, 1, &nse), lens = key[1] == 'd';
		else if (bit == 16 || bit == 32)
			rc = dec_sim_times(d, key, bit == 16 ? 2 : 3, &nu[bit == 32]);
		else
			rc = mp_skip(&d->c);
		if (rc < 0)
			return -1;
	}
	if (!(have & 1))
		return missing(d, "tasks");
	if (!(have & 2))
		return missing(d, "makespan");
	if (!(have & 4) != !(have & 8))
		return missing(d, !(have & 4) ? (lens ? "ssd" : "ss") : (steps ? "sd" : "se"));
	if (!(have & 16) != !(have & 32))
		return missing(d, !(have & 16) ? "ussd" : "usd");
	if ((have & 16) && !(have & 4))
		return missing(d, "ssd");
	if ((have & 4) && steps != lens) {
		seterr(r->err, "record %llu: sim record with %s and %s (1.3 writes ssd and sd, "
		    "earlier ss and se)", (unsigned long long)r->nrec + 1,
		    steps ? "ssd" : "ss", lens ? "sd" : "se");
		return -1;
	}
	if ((have & 4) && (nss != nse || nss != r->ntasks || s->tasks != r->ntasks)) {
		seterr(r->err, "record %llu: sim record for %llu tasks (ss %zu, se %zu) in a section of %llu",
		    (unsigned long long)r->nrec + 1, (unsigned long long)s->tasks,
		    nss, nse, (unsigned long long)r->ntasks);
		return -1;
	}
	if (have & 4) {
		if (steps)
			sim_absolute(r->ss, r->se, nss);
		if (sim_check(d, r->ss, r->se, nss, "") < 0)
			return -1;
		s->ss = r->ss;
		s->se = r->se;
		s->n = nss;
	}
	if (have & 16) {
		/* the unprofiled run is written as steps and lengths only */
		sim_absolute(r->uss, r->use, nss);
		if (sim_check(d, r->uss, r->use, nss, "unprofiled ") < 0)
			return -1;
		s->uss = r->uss;
		s->use = r->use;
	}
	return 0;
}

static int
dec_end(struct dec *d, uint32_t npairs)
{
	static const char *const keys[] = { "tasks", "edges", "procs", "strs" };
	struct kg_reader *r = d->r;
	uint64_t want[4] = { r->ntasks, r->nedges, r->nprocs, r->nstrs };
	struct mp_val k;
	uint32_t i;
	int j, have = 0;

	for (i = 0; i < npairs; i++) {
		int64_t v;

		if (get_key(d, &k) < 0)
			return -1;
		for (j = 0; j < 4; j++)
			if (k.n == strlen(keys[j]) && memcmp(k.s, keys[j], k.n) == 0)
				break;
		if (j == 4) {
			if (mp_skip(&d->c) < 0)
				return -1;
			continue;
		}
		if (get_i64(d, keys[j], &v) < 0)
			return -1;
		if ((uint64_t)v != want[j]) {
			seterr(r->err, "corrupt graph stream (section says %lld %s, found %llu)",
			    (long long)v, keys[j], (unsigned long long)want[j]);
			return -1;
		}
		have |= 1 << j;
	}
	for (j = 0; j < 4; j++)
		if (!(have & (1 << j)))
			return missing(d, keys[j]);
	/* every rank a job section claims is there: a thread or stream of it */
	for (i = 0; i < r->nranks; i++)
		if (!r->rseen[i]) {
			seterr(r->err, "record %llu: field ranks: rank %lld has no thread or stream in "
			    "the section", (unsigned long long)r->hrec, (long long)r->ranks[i]);
			return -1;
		}
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
		seterr(d->r->err, "record %llu: not a map", (unsigned long long)d->r->nrec + 1);
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
static int
dec_record(struct dec *d, struct kg_rec *rec)
{
	struct kg_reader *r = d->r;
	const char *type;
	size_t tlen;
	uint32_t n;

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

		if (dec_header(d, n, &rec->header) < 0) {
			if (in && d->c.err != MP_ETRUNC)
				seterr(r->err, "truncated graph stream (section ends without its end "
				    "record)");
			return -1;
		}
		if (r->failed != NULL) {
			seterr(r->err, "incomplete graph stream: it ends where %.64s failed "
			    "(record %llu)", r->failed, (unsigned long long)r->nrec + 1);
			return -1;
		}
		if (in) {
			seterr(r->err, "truncated graph stream (section ends without its end record)");
			return -1;
		}
		return KG_R_HEADER;
	}
	if (!r->in_section) {
		seterr(r->err, "record %llu: expected a header", (unsigned long long)r->nrec + 1);
		return -1;
	}
	if (TYPEIS("task"))
		return dec_task(d, n, &rec->task) < 0 ? -1 : KG_R_TASK;
	if (TYPEIS("edge"))
		return dec_edge(d, n, &rec->edge) < 0 ? -1 : KG_R_EDGE;
	if (TYPEIS("str"))
		return dec_str(d, n, &rec->str_id) < 0 ? -1 : KG_R_STR;
	if (TYPEIS("proc"))
		return dec_proc(d, n, &rec->proc) < 0 ? -1 : KG_R_PROC;
	if (TYPEIS("cov"))
		return dec_cov(d, n, &rec->cov) < 0 ? -1 : KG_R_COV;
	if (TYPEIS("sim"))
		return dec_sim(d, n, &rec->sim) < 0 ? -1 : KG_R_SIM;
	if (TYPEIS("end"))
		return dec_end(d, n) < 0 ? -1 : KG_R_END;
#undef TYPEIS
	/* Unknown: it must still be well formed. */
	while (n-- > 0)
		if (mp_skip(&d->c) < 0 || mp_skip(&d->c) < 0)
			return -1;
	return KG_R_OTHER;
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
		seterr(r->err, "truncated graph stream (section %llu of %llu missing; record %llu "
		    "begins another stream)", (unsigned long long)r->run_k + 1,
		    (unsigned long long)r->run_n, rec);
		return -1;
	}
	if (r->one_section)
		return 0;
	if (r->run_k == r->run_n && h->sections > 0 && h->section != 0) {
		seterr(r->err, "record %llu: section %llu of %llu without the ones before it",
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
			t = dec_record(&d, rec);
			if (t > 0)
				break;
			if (d.c.err == MP_EBAD) {
				seterr(r->err, "corrupt graph stream (bad MessagePack in record %llu)",
				    (unsigned long long)r->nrec + 1);
				return -1;
			}
			if (d.c.err == MP_EDEPTH) {
				seterr(r->err, "record %llu: nested more than %d deep",
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
				seterr(r->err, "record %llu: longer than %zu bytes (the limit%s)",
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
				seterr(r->err, "truncated graph stream (ends inside record %llu)",
				    (unsigned long long)r->nrec + 1);
				return -1;
			}
			if (!r->seen_bytes) {
				seterr(r->err, "empty input, not a graph stream");
				return -1;
			}
			if (r->in_section) {
				seterr(r->err, "truncated graph stream (section ends without its end record)");
				return -1;
			}
			if (r->nrec == 0) {
				seterr(r->err, "graph stream holds no section");
				return -1;
			}
			if (r->run_k < r->run_n) {
				seterr(r->err, "truncated graph stream (ends after section %llu of %llu)",
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
	switch (t) {
	case KG_R_HEADER:
		r->in_section = 1;
		r->ntasks = r->nedges = r->nprocs = r->nstrs = 0;
		break;
	case KG_R_TASK:
		r->ntasks++;
		break;
	case KG_R_EDGE:
		r->nedges++;
		break;
	case KG_R_STR:
		r->nstrs++;
		break;
	case KG_R_PROC:
		r->nprocs++;
		break;
	case KG_R_END:
		r->in_section = 0;
		break;
	}
	return rec->type = t;
}
