/*
 * kgwrite: the graph stream's writer (kg.h, "Writer"). Records are
 * packed into the writer's buffer, the small ones with msgpack-c's
 * packer, tasks, edges and the sim record's arrays byte by byte as that
 * packer would write them; the buffer goes to the compressor
 * (common/zq.h) a frame at a time, frames ending at record boundaries
 * (after a header, around an end record, every FRAME_MAX bytes). It
 * writes nothing the reader would refuse: a time out of the format's
 * range, or a record whose map says another number of pairs than it
 * holds, fails the writer, and every call after fails too.
 */
#include "kg.h"

#include <string.h>

#include "kg_int.h"
#include "util.h"
#include "zq.h"

#define FRAME_MAX (2 * 1024 * 1024)

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
	kg_seterr(w->err, "%s", zq_err(w->zq));
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
	kg_seterr(w->err, "%s %llu: field %s: %lld ns is out of range", rec, (unsigned long long)id,
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
		kg_seterr(w->err, "header: field tbase: %lld ns is out of range", (long long)h->tbase);
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
 * kind's name (under 32 bytes; the tables are ours). The pairs are
 * written after room for the longest map head (map16, 3 bytes) and
 * counted as they go (KEY); map_end then writes the head their count
 * takes, moving them up two bytes where it is a fixmap's one, so that
 * each record's fields are listed once.
 */
#define REC_MAX 1024
#define MAP_HEAD 3

/*
 * The end of a record whose head is at h and pairs at [h + MAP_HEAD, p):
 * the head written for its pairs, the buffer grown over it, the record
 * counted (*count, for the end record).
 */
static int
put_end(struct kg_writer *w, unsigned char *h, unsigned char *p, unsigned pairs, uint64_t *count)
{
	if (pairs < 16) {
		memmove(h + 1, h + MAP_HEAD, (size_t)(p - (h + MAP_HEAD)));
		p -= MAP_HEAD - 1;
	}
	put_map(h, pairs);
	w->sbuf.size = (size_t)((char *)p - w->sbuf.data);
	(*count)++;
	return record_done(w);
}

#define KEY(lit) (pairs++, p = put_short(p, (lit), sizeof(lit) - 1))
#define KV_I64(lit, v) (KEY(lit), p = put_i64(p, (v)))
#define KV_NAME(lit, v) (KEY(lit), p = put_short(p, (v), strlen(v)))
/* A pair written only when cond holds (the field is not its default). */
#define OPT_I64(cond, lit, v) do { if (cond) KV_I64(lit, v); } while (0)
#define OPT_NAME(cond, lit, v) do { if (cond) KV_NAME(lit, v); } while (0)

int
kg_write_task(struct kg_writer *w, const struct kg_task *t)
{
	unsigned char *h, *p;
	unsigned pairs = 0;

	if (w->failed || wtime(w, "task", t->id, "d", t->dur, 0) < 0 ||
	    wtime(w, "task", t->id, "ts", t->ts, -KG_TIME_MAX) < 0 ||
	    (t->odur >= 0 && wtime(w, "task", t->id, "od", t->odur, 0) < 0))
		return -1;
	h = sbuf_room(w, REC_MAX);
	p = h + MAP_HEAD;
	KV_NAME("r", "task");
	KV_I64("id", t->id);
	KV_I64("p", t->proc);
	KV_NAME("k", kg_task_kind_name[t->kind]);
	KV_I64("n", t->name);
	KV_I64("d", t->dur);
	KV_I64("ts", t->ts);
	KV_I64("it", t->iter);
	OPT_I64(t->odur >= 0 && t->odur != t->dur, "od", t->odur);
	OPT_I64(t->corr >= 0, "corr", t->corr);
	OPT_I64(t->op != KG_NONE, "op", t->op);
	OPT_I64(t->shapes != KG_NONE, "sh", t->shapes);
	OPT_I64(t->itypes != KG_NONE, "ty", t->itypes);
	OPT_I64(t->ocall != KG_NONE, "oc", t->ocall);
	if (t->bytes != 0) {
		KEY("by");
		p = put_u64(p, t->bytes);
	}
	OPT_NAME(t->coll != KG_COLL_NONE, "coll", kg_coll_name[t->coll]);
	OPT_I64(t->gsize >= 0, "gs", t->gsize);
	OPT_I64(t->pg != KG_NONE, "pg", t->pg);
	OPT_I64(t->pgr != KG_NONE, "pgr", t->pgr);
	OPT_I64(t->seq >= 0, "seq", t->seq);
	OPT_I64(t->dtype != KG_NONE, "dt", t->dtype);
	OPT_NAME(t->phase != KG_PH_NONE, "ph", kg_phase_name[t->phase]);
	OPT_I64(t->mb >= 0, "mb", t->mb);
	OPT_I64(t->layer >= 0, "ly", t->layer);
	OPT_I64(t->stage >= 0, "st", t->stage);
	if (t->mpeak >= 0) {
		KV_I64("ma", t->mpeak);
		KV_I64("mn", t->mnet);
		if (t->mexc >= 0)
			KV_I64("mx", t->mexc);
	}
	OPT_I64(t->mrpeak >= 0, "mr", t->mrpeak);
	OPT_I64(t->prof > 0, "pc", t->prof);
	if (t->recomp)
		KEY("rc"), *p++ = 0xc3; /* true */
	return put_end(w, h, p, pairs, &w->ntasks);
}

int
kg_write_edge(struct kg_writer *w, const struct kg_edge *e)
{
	unsigned char *h, *p;
	unsigned pairs = 0;

	if (w->failed || wtime(w, "edge", w->nedges, "dl", e->delay, 0) < 0)
		return -1;
	h = sbuf_room(w, REC_MAX);
	p = h + MAP_HEAD;
	KV_NAME("r", "edge");
	KV_I64("src", e->src);
	KV_I64("dst", e->dst);
	KV_NAME("k", kg_edge_kind_name[e->kind]);
	OPT_I64(e->delay != 0, "dl", e->delay);
	OPT_NAME(e->how != KG_HOW_TRACE, "how", kg_how_name[e->how]);
	OPT_I64(e->on != KG_NONE, "on", e->on);
	OPT_I64(e->via != KG_NONE, "via", e->via);
	OPT_I64(e->at != KG_NONE, "at", e->at);
	if (e->graph)
		KEY("gl"), *p++ = 0xc3; /* true */
	return put_end(w, h, p, pairs, &w->nedges);
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
	count_record(type, &w->ntasks, &w->nedges, &w->nprocs, &w->nstrs);
	return type == KG_R_END;
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
		kg_seterr(w->err, "out of memory");
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
