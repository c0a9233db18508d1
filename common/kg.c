#include "kg.h"

#include <errno.h>
#include <stdarg.h>
#include <string.h>

#include "util.h"

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

#define OUT_CHUNK (256 * 1024)
#define KEYIS(k, lit) ((k)->size == sizeof(lit) - 1 && memcmp((k)->ptr, lit, sizeof(lit) - 1) == 0)
#define IN_CHUNK (128 * 1024)

int
kg_lookup(const char *const *table, int n, const char *name, size_t len)
{
	int i;

	for (i = 0; i < n; i++)
		if (strlen(table[i]) == len && memcmp(table[i], name, len) == 0)
			return i;
	return -1;
}

static void
seterr(char *err, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(err, 256, fmt, ap);
	va_end(ap);
}

void
kg_task_init(struct kg_task *t)
{
	memset(t, 0, sizeof(*t));
	t->proc = t->name = t->op = t->shapes = KG_NONE;
	t->pg = t->pgr = t->dtype = KG_NONE;
	t->iter = t->corr = t->gsize = t->seq = -1;
	t->mb = t->layer = t->stage = -1;
	t->odur = -1;
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
	w->fp = fp;
	w->cctx = ZSTD_createCCtx();
	if (w->cctx == NULL) {
		seterr(w->err, "cannot create zstd context");
		return -1;
	}
	ZSTD_CCtx_setParameter(w->cctx, ZSTD_c_compressionLevel, level);
	ZSTD_CCtx_setParameter(w->cctx, ZSTD_c_checksumFlag, 1);
	msgpack_sbuffer_init(&w->sbuf);
	msgpack_packer_init(&w->pk, &w->sbuf, sbuf_write);
	w->outcap = ZSTD_CStreamOutSize();
	w->out = xmalloc(w->outcap);
	return 0;
}

void
kg_writer_release(struct kg_writer *w)
{
	ZSTD_freeCCtx(w->cctx);
	msgpack_sbuffer_destroy(&w->sbuf);
	free(w->out);
	memset(w, 0, sizeof(*w));
}

/* Compress what is buffered; `end` closes the frame. */
static int
flush(struct kg_writer *w, ZSTD_EndDirective mode)
{
	ZSTD_inBuffer in = { w->sbuf.data, w->sbuf.size, 0 };
	size_t left;

	if (w->failed)
		return -1;
	do {
		ZSTD_outBuffer out = { w->out, w->outcap, 0 };

		left = ZSTD_compressStream2(w->cctx, &out, &in, mode);
		if (ZSTD_isError(left)) {
			seterr(w->err, "zstd: %s", ZSTD_getErrorName(left));
			w->failed = 1;
			return -1;
		}
		if (out.pos > 0 && fwrite(w->out, 1, out.pos, w->fp) != out.pos) {
			seterr(w->err, "%s", strerror(errno ? errno : EIO));
			w->failed = 1;
			return -1;
		}
	} while (mode == ZSTD_e_end ? left != 0 : in.pos < in.size);
	msgpack_sbuffer_clear(&w->sbuf);
	return 0;
}

static int
record_done(struct kg_writer *w)
{
	if (w->failed)
		return -1;
	if (w->sbuf.size >= OUT_CHUNK)
		return flush(w, ZSTD_e_continue);
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

int
kg_write_header(struct kg_writer *w, const struct kg_header *h)
{
	msgpack_packer *pk = &w->pk;
	size_t i;

	w->ntasks = w->nedges = w->nprocs = w->nstrs = 0;
	msgpack_pack_map(pk, 13);
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

	msgpack_pack_map(pk, 5 + (p->name != KG_NONE) + (p->main != 0));
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
	w->nprocs++;
	return record_done(w);
}

int
kg_write_task(struct kg_writer *w, const struct kg_task *t)
{
	msgpack_packer *pk = &w->pk;
	int n = 8;

	n += t->odur >= 0 && t->odur != t->dur;
	n += t->corr >= 0;
	n += t->op != KG_NONE;
	n += t->shapes != KG_NONE;
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
	n += t->has_sim ? 2 : 0;
	msgpack_pack_map(pk, n);
	pk_kv_str(pk, "r", "task");
	pk_kv_i64(pk, "id", t->id);
	pk_kv_i64(pk, "p", t->proc);
	pk_kv_str(pk, "k", kg_task_kind_name[t->kind]);
	pk_kv_i64(pk, "n", t->name);
	pk_kv_i64(pk, "d", t->dur);
	pk_kv_i64(pk, "ts", t->ts);
	pk_kv_i64(pk, "it", t->iter);
	if (t->odur >= 0 && t->odur != t->dur)
		pk_kv_i64(pk, "od", t->odur);
	if (t->corr >= 0)
		pk_kv_i64(pk, "corr", t->corr);
	if (t->op != KG_NONE)
		pk_kv_i64(pk, "op", t->op);
	if (t->shapes != KG_NONE)
		pk_kv_i64(pk, "sh", t->shapes);
	if (t->bytes != 0) {
		pk_cstr(pk, "by");
		msgpack_pack_uint64(pk, t->bytes);
	}
	if (t->coll != KG_COLL_NONE)
		pk_kv_str(pk, "coll", kg_coll_name[t->coll]);
	if (t->gsize >= 0)
		pk_kv_i64(pk, "gs", t->gsize);
	if (t->pg != KG_NONE)
		pk_kv_i64(pk, "pg", t->pg);
	if (t->pgr != KG_NONE)
		pk_kv_i64(pk, "pgr", t->pgr);
	if (t->seq >= 0)
		pk_kv_i64(pk, "seq", t->seq);
	if (t->dtype != KG_NONE)
		pk_kv_i64(pk, "dt", t->dtype);
	if (t->phase != KG_PH_NONE)
		pk_kv_str(pk, "ph", kg_phase_name[t->phase]);
	if (t->mb >= 0)
		pk_kv_i64(pk, "mb", t->mb);
	if (t->layer >= 0)
		pk_kv_i64(pk, "ly", t->layer);
	if (t->stage >= 0)
		pk_kv_i64(pk, "st", t->stage);
	if (t->has_sim) {
		pk_kv_i64(pk, "ss", t->sim_start);
		pk_kv_i64(pk, "se", t->sim_end);
	}
	w->ntasks++;
	return record_done(w);
}

int
kg_write_edge(struct kg_writer *w, const struct kg_edge *e)
{
	msgpack_packer *pk = &w->pk;
	int n = 4;

	n += e->delay != 0;
	n += e->how != KG_HOW_TRACE;
	n += e->on != KG_NONE;
	n += e->via != KG_NONE;
	n += e->at != KG_NONE;
	msgpack_pack_map(pk, n);
	pk_kv_str(pk, "r", "edge");
	pk_kv_i64(pk, "src", e->src);
	pk_kv_i64(pk, "dst", e->dst);
	pk_kv_str(pk, "k", kg_edge_kind_name[e->kind]);
	if (e->delay != 0)
		pk_kv_i64(pk, "dl", e->delay);
	if (e->how != KG_HOW_TRACE)
		pk_kv_str(pk, "how", kg_how_name[e->how]);
	if (e->on != KG_NONE)
		pk_kv_i64(pk, "on", e->on);
	if (e->via != KG_NONE)
		pk_kv_i64(pk, "via", e->via);
	if (e->at != KG_NONE)
		pk_kv_i64(pk, "at", e->at);
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

int
kg_write_sim(struct kg_writer *w, uint64_t tasks, int64_t makespan)
{
	msgpack_packer *pk = &w->pk;

	msgpack_pack_map(pk, 3);
	pk_kv_str(pk, "r", "sim");
	pk_kv_i64(pk, "tasks", (int64_t)tasks);
	pk_kv_i64(pk, "makespan", makespan);
	return record_done(w);
}

int
kg_write_end(struct kg_writer *w)
{
	msgpack_packer *pk = &w->pk;

	msgpack_pack_map(pk, 5);
	pk_kv_str(pk, "r", "end");
	pk_kv_i64(pk, "tasks", (int64_t)w->ntasks);
	pk_kv_i64(pk, "edges", (int64_t)w->nedges);
	pk_kv_i64(pk, "procs", (int64_t)w->nprocs);
	pk_kv_i64(pk, "strs", (int64_t)w->nstrs);
	return record_done(w);
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

int
kg_write_raw(struct kg_writer *w, const msgpack_object *o, int type)
{
	if (count_passed(w, type))
		return kg_write_end(w);
	msgpack_pack_object(&w->pk, *o);
	return record_done(w);
}

int
kg_write_task_sim(struct kg_writer *w, const msgpack_object *o, int64_t ss, int64_t se)
{
	const msgpack_object_map *m = &o->via.map;
	uint32_t i, n = 0;

	for (i = 0; i < m->size; i++)
		if (!(KEYIS(&m->ptr[i].key.via.str, "ss") || KEYIS(&m->ptr[i].key.via.str, "se")))
			n++;
	msgpack_pack_map(&w->pk, n + 2);
	for (i = 0; i < m->size; i++) {
		if (KEYIS(&m->ptr[i].key.via.str, "ss") || KEYIS(&m->ptr[i].key.via.str, "se"))
			continue;
		msgpack_pack_object(&w->pk, m->ptr[i].key);
		msgpack_pack_object(&w->pk, m->ptr[i].val);
	}
	pk_kv_i64(&w->pk, "ss", ss);
	pk_kv_i64(&w->pk, "se", se);
	w->ntasks++;
	return record_done(w);
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
	return record_done(w);
}

int
kg_write_task_sim_bytes(struct kg_writer *w, const char *b, size_t n,
    const msgpack_object *o, int64_t ss, int64_t se)
{
	unsigned char c = (unsigned char)b[0];
	size_t hdr;
	uint32_t size;
	uint32_t i;

	if (o != NULL)
		for (i = 0; i < o->via.map.size; i++)
			if (KEYIS(&o->via.map.ptr[i].key.via.str, "ss") ||
			    KEYIS(&o->via.map.ptr[i].key.via.str, "se"))
				return kg_write_task_sim(w, o, ss, se);
	/* The map's size from its header: fixmap, map 16 or map 32. */
	if (c >= 0x80 && c <= 0x8f) {
		hdr = 1, size = c & 0x0f;
	} else if (c == 0xde && n >= 3) {
		hdr = 3, size = (uint32_t)((unsigned char)b[1] << 8 | (unsigned char)b[2]);
	} else if (c == 0xdf && n >= 5) {
		hdr = 5, size = (uint32_t)(unsigned char)b[1] << 24 | (uint32_t)(unsigned char)b[2] << 16 |
		    (uint32_t)(unsigned char)b[3] << 8 | (unsigned char)b[4];
	} else {
		seterr(w->err, "not a task record");
		w->failed = 1;
		return -1;
	}
	msgpack_pack_map(&w->pk, size + 2);
	msgpack_sbuffer_write(&w->sbuf, b + hdr, n - hdr);
	pk_kv_i64(&w->pk, "ss", ss);
	pk_kv_i64(&w->pk, "se", se);
	w->ntasks++;
	return record_done(w);
}

int
kg_writer_finish(struct kg_writer *w)
{
	if (flush(w, ZSTD_e_end) < 0)
		return -1;
	if (fflush(w->fp) != 0) {
		seterr(w->err, "%s", strerror(errno));
		w->failed = 1;
		return -1;
	}
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

int
kg_reader_init(struct kg_reader *r, FILE *fp)
{
	memset(r, 0, sizeof(*r));
	r->fp = fp;
	r->dctx = ZSTD_createDCtx();
	if (r->dctx == NULL) {
		ZSTD_freeDCtx(r->dctx);
		seterr(r->err, "cannot create decoder");
		return -1;
	}
	msgpack_unpacked_init(&r->res);
	r->in = xmalloc(IN_CHUNK);
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
	free(r->producer);
	free(r->source);
	r->producer = r->source = NULL;
}

void
kg_reader_release(struct kg_reader *r)
{
	free_section(r);
	free(r->str);
	free(r->tools);
	free(r->iters);
	free(r->in);
	msgpack_unpacked_destroy(&r->res);
	free(r->buf);
	ZSTD_freeDCtx(r->dctx);
	memset(r, 0, sizeof(*r));
}

const char *
kg_str(const struct kg_reader *r, uint32_t id)
{
	return id < r->nstr ? r->str[id] : NULL;
}

/*
 * Decompress more bytes into the unpacker. Returns the number of bytes
 * made available, 0 at the end of the input (after checking the last
 * frame was complete), -1 on error.
 */
static int
fill(struct kg_reader *r)
{
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
			return 0;
		}
		/* Room for 64 KiB more, after dropping what is parsed. */
		if (r->off > 0) {
			memmove(r->buf, r->buf + r->off, r->len - r->off);
			r->len -= r->off;
			r->off = 0;
		}
		grow(&r->buf, &r->cap, r->len + (1 << 16), 1);
		in.src = r->in;
		in.size = r->inlen;
		in.pos = r->inpos;
		out.dst = r->buf + r->len;
		out.size = r->cap - r->len;
		out.pos = 0;
		ret = ZSTD_decompressStream(r->dctx, &out, &in);
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
		r->frame_left = ret;
		if (out.pos > 0) {
			r->len += out.pos;
			return (int)out.pos;
		}
	}
}

/* Decoding helpers: each returns 0 or -1 with r->err naming the field. */

static int
get_i64(struct kg_reader *r, const msgpack_object *o, const char *key, int64_t *v)
{
	if (o->type == MSGPACK_OBJECT_POSITIVE_INTEGER && o->via.u64 <= INT64_MAX) {
		*v = (int64_t)o->via.u64;
		return 0;
	}
	if (o->type == MSGPACK_OBJECT_NEGATIVE_INTEGER) {
		*v = o->via.i64;
		return 0;
	}
	seterr(r->err, "record %llu: field %s: expected an integer",
	    (unsigned long long)r->nrec, key);
	return -1;
}

static int
get_u32(struct kg_reader *r, const msgpack_object *o, const char *key, uint32_t *v)
{
	if (o->type == MSGPACK_OBJECT_POSITIVE_INTEGER && o->via.u64 < UINT32_MAX) {
		*v = (uint32_t)o->via.u64;
		return 0;
	}
	seterr(r->err, "record %llu: field %s: expected an id",
	    (unsigned long long)r->nrec, key);
	return -1;
}

static int
get_str(struct kg_reader *r, const msgpack_object *o, const char *key,
    const char **s, size_t *len)
{
	if (o->type != MSGPACK_OBJECT_STR) {
		seterr(r->err, "record %llu: field %s: expected a string",
		    (unsigned long long)r->nrec, key);
		return -1;
	}
	*s = o->via.str.ptr;
	*len = o->via.str.size;
	return 0;
}

static int
get_enum(struct kg_reader *r, const msgpack_object *o, const char *key,
    const char *const *table, int n, int *v)
{
	const char *s;
	size_t len;
	int i;

	if (get_str(r, o, key, &s, &len) < 0)
		return -1;
	i = kg_lookup(table, n, s, len);
	if (i < 0) {
		seterr(r->err, "record %llu: field %s: unknown value '%.*s'",
		    (unsigned long long)r->nrec, key, (int)(len > 40 ? 40 : len), s);
		return -1;
	}
	*v = i;
	return 0;
}

static int
check_str_ref(struct kg_reader *r, const char *key, uint32_t id)
{
	if (id != KG_NONE && id >= r->nstr) {
		seterr(r->err, "record %llu: field %s: string %u not defined",
		    (unsigned long long)r->nrec, key, id);
		return -1;
	}
	return 0;
}

static int
missing(struct kg_reader *r, const char *key)
{
	seterr(r->err, "record %llu: missing field %s",
	    (unsigned long long)r->nrec, key);
	return -1;
}


static int
dec_header(struct kg_reader *r, const msgpack_object_map *m, struct kg_header *h)
{
	uint32_t i, j;
	int have_format = 0, have_major = 0;
	int64_t v;
	const char *s;
	size_t len;

	free_section(r);
	memset(h, 0, sizeof(*h));
	h->rank = h->world = -1;
	h->source = "";
	for (i = 0; i < m->size; i++) {
		const msgpack_object_str *k = &m->ptr[i].key.via.str;
		const msgpack_object *o = &m->ptr[i].val;

		if (KEYIS(k, "format")) {
			if (get_str(r, o, "format", &s, &len) < 0)
				return -1;
			if (len != strlen(KG_FORMAT) || memcmp(s, KG_FORMAT, len) != 0) {
				seterr(r->err, "not a graph stream (format '%.*s')",
				    (int)(len > 40 ? 40 : len), s);
				return -1;
			}
			have_format = 1;
		} else if (KEYIS(k, "major")) {
			if (get_i64(r, o, "major", &v) < 0)
				return -1;
			if (v != KG_MAJOR) {
				seterr(r->err, "unsupported graph stream version %lld (this reader knows %d)",
				    (long long)v, KG_MAJOR);
				return -1;
			}
			h->major = (uint32_t)v;
			have_major = 1;
		} else if (KEYIS(k, "minor")) {
			if (get_i64(r, o, "minor", &v) < 0)
				return -1;
			h->minor = (uint32_t)v;
		} else if (KEYIS(k, "producer")) {
			if (get_str(r, o, "producer", &s, &len) < 0)
				return -1;
			r->producer = xstrndup(s, len);
		} else if (KEYIS(k, "source")) {
			if (get_str(r, o, "source", &s, &len) < 0)
				return -1;
			r->source = xstrndup(s, len);
		} else if (KEYIS(k, "rank")) {
			if (get_i64(r, o, "rank", &h->rank) < 0)
				return -1;
		} else if (KEYIS(k, "world")) {
			if (get_i64(r, o, "world", &h->world) < 0)
				return -1;
		} else if (KEYIS(k, "tbase")) {
			if (get_i64(r, o, "tbase", &h->tbase) < 0)
				return -1;
		} else if (KEYIS(k, "xxh3")) {
			if (o->type != MSGPACK_OBJECT_POSITIVE_INTEGER)
				return get_i64(r, o, "xxh3", &v);
			h->xxh3 = o->via.u64;
		} else if (KEYIS(k, "iters") || KEYIS(k, "tools")) {
			int iters = k->ptr[0] == 'i';

			if (o->type != MSGPACK_OBJECT_ARRAY) {
				seterr(r->err, "record %llu: field %s: expected an array",
				    (unsigned long long)r->nrec, iters ? "iters" : "tools");
				return -1;
			}
			for (j = 0; j < o->via.array.size; j++) {
				const msgpack_object *e = &o->via.array.ptr[j];

				if (iters) {
					if (get_i64(r, e, "iters", &v) < 0)
						return -1;
					grow(&r->iters, &r->capiters, r->niters + 1, sizeof(*r->iters));
					r->iters[r->niters++] = v;
				} else {
					if (get_str(r, e, "tools", &s, &len) < 0)
						return -1;
					grow(&r->tools, &r->captools, r->ntools + 1, sizeof(*r->tools));
					r->tools[r->ntools++] = xstrndup(s, len);
				}
			}
		}
	}
	if (!have_format)
		return missing(r, "format");
	if (!have_major)
		return missing(r, "major");
	if (r->producer == NULL)
		return missing(r, "producer");
	h->producer = r->producer;
	if (r->source != NULL)
		h->source = r->source;
	h->iters = r->iters;
	h->niters = r->niters;
	h->tools = (const char *const *)r->tools;
	h->ntools = r->ntools;
	return 0;
}

static int
dec_str(struct kg_reader *r, const msgpack_object_map *m, uint32_t *idp)
{
	uint32_t i, id = KG_NONE;
	const char *s = NULL;
	size_t len = 0;

	for (i = 0; i < m->size; i++) {
		const msgpack_object_str *k = &m->ptr[i].key.via.str;
		const msgpack_object *o = &m->ptr[i].val;

		if (KEYIS(k, "id")) {
			if (get_u32(r, o, "id", &id) < 0)
				return -1;
		} else if (KEYIS(k, "s")) {
			if (get_str(r, o, "s", &s, &len) < 0)
				return -1;
		}
	}
	if (id == KG_NONE)
		return missing(r, "id");
	if (s == NULL)
		return missing(r, "s");
	if (id != r->nstr) {
		seterr(r->err, "record %llu: string id %u out of order (expected %zu)",
		    (unsigned long long)r->nrec, id, r->nstr);
		return -1;
	}
	grow(&r->str, &r->capstr, r->nstr + 1, sizeof(*r->str));
	r->str[r->nstr++] = xstrndup(s, len);
	*idp = id;
	return 0;
}

static int
dec_proc(struct kg_reader *r, const msgpack_object_map *m, struct kg_proc *p)
{
	uint32_t i;
	int have = 0;

	memset(p, 0, sizeof(*p));
	p->id = p->name = KG_NONE;
	for (i = 0; i < m->size; i++) {
		const msgpack_object_str *k = &m->ptr[i].key.via.str;
		const msgpack_object *o = &m->ptr[i].val;
		static const char *const pk[] = { "thread", "stream" };

		if (KEYIS(k, "id")) {
			if (get_u32(r, o, "id", &p->id) < 0)
				return -1;
		} else if (KEYIS(k, "k")) {
			if (get_enum(r, o, "k", pk, 2, &p->kind) < 0)
				return -1;
			have |= 1;
		} else if (KEYIS(k, "pid")) {
			if (get_i64(r, o, "pid", &p->pid) < 0)
				return -1;
			have |= 2;
		} else if (KEYIS(k, "tid")) {
			if (get_i64(r, o, "tid", &p->tid) < 0)
				return -1;
			have |= 4;
		} else if (KEYIS(k, "n")) {
			if (get_u32(r, o, "n", &p->name) < 0)
				return -1;
		} else if (KEYIS(k, "main")) {
			p->main = o->type == MSGPACK_OBJECT_BOOLEAN && o->via.boolean;
		}
	}
	if (p->id == KG_NONE)
		return missing(r, "id");
	if (!(have & 1))
		return missing(r, "k");
	if (!(have & 2))
		return missing(r, "pid");
	if (!(have & 4))
		return missing(r, "tid");
	if (p->id != r->nprocs) {
		seterr(r->err, "record %llu: proc id %u out of order (expected %llu)",
		    (unsigned long long)r->nrec, p->id, (unsigned long long)r->nprocs);
		return -1;
	}
	return check_str_ref(r, "n", p->name);
}

static int
dec_task(struct kg_reader *r, const msgpack_object_map *m, struct kg_task *t)
{
	uint32_t i;
	int have = 0;

	kg_task_init(t);
	t->id = KG_NONE;
	for (i = 0; i < m->size; i++) {
		const msgpack_object_str *k = &m->ptr[i].key.via.str;
		const msgpack_object *o = &m->ptr[i].val;
		int rc = 0;

		switch (k->size) {
		case 1:
			switch (k->ptr[0]) {
			case 'p':
				rc = get_u32(r, o, "p", &t->proc), have |= 1;
				break;
			case 'k':
				rc = get_enum(r, o, "k", kg_task_kind_name, KG_NTASK_KIND, &t->kind), have |= 2;
				break;
			case 'n':
				rc = get_u32(r, o, "n", &t->name), have |= 4;
				break;
			case 'd':
				rc = get_i64(r, o, "d", &t->dur), have |= 8;
				break;
			}
			break;
		case 2:
			if (KEYIS(k, "id"))
				rc = get_u32(r, o, "id", &t->id);
			else if (KEYIS(k, "ts"))
				rc = get_i64(r, o, "ts", &t->ts), have |= 16;
			else if (KEYIS(k, "it"))
				rc = get_i64(r, o, "it", &t->iter), have |= 32;
			else if (KEYIS(k, "od"))
				rc = get_i64(r, o, "od", &t->odur);
			else if (KEYIS(k, "op"))
				rc = get_u32(r, o, "op", &t->op);
			else if (KEYIS(k, "sh"))
				rc = get_u32(r, o, "sh", &t->shapes);
			else if (KEYIS(k, "by")) {
				if (o->type == MSGPACK_OBJECT_POSITIVE_INTEGER)
					t->bytes = o->via.u64;
				else
					rc = get_u32(r, o, "by", &(uint32_t){ 0 });
			} else if (KEYIS(k, "gs"))
				rc = get_i64(r, o, "gs", &t->gsize);
			else if (KEYIS(k, "pg"))
				rc = get_u32(r, o, "pg", &t->pg);
			else if (KEYIS(k, "dt"))
				rc = get_u32(r, o, "dt", &t->dtype);
			else if (KEYIS(k, "ph"))
				rc = get_enum(r, o, "ph", kg_phase_name, KG_NPHASE, &t->phase);
			else if (KEYIS(k, "mb"))
				rc = get_i64(r, o, "mb", &t->mb);
			else if (KEYIS(k, "ly"))
				rc = get_i64(r, o, "ly", &t->layer);
			else if (KEYIS(k, "st"))
				rc = get_i64(r, o, "st", &t->stage);
			else if (KEYIS(k, "ss"))
				rc = get_i64(r, o, "ss", &t->sim_start), t->has_sim |= 1;
			else if (KEYIS(k, "se"))
				rc = get_i64(r, o, "se", &t->sim_end), t->has_sim |= 2;
			break;
		default:
			if (KEYIS(k, "corr"))
				rc = get_i64(r, o, "corr", &t->corr);
			else if (KEYIS(k, "coll"))
				rc = get_enum(r, o, "coll", kg_coll_name, KG_NCOLL, &t->coll);
			else if (KEYIS(k, "pgr"))
				rc = get_u32(r, o, "pgr", &t->pgr);
			else if (KEYIS(k, "seq"))
				rc = get_i64(r, o, "seq", &t->seq);
			break;
		}
		if (rc < 0)
			return -1;
	}
	if (t->id == KG_NONE)
		return missing(r, "id");
	if (!(have & 1))
		return missing(r, "p");
	if (!(have & 2))
		return missing(r, "k");
	if (!(have & 4))
		return missing(r, "n");
	if (!(have & 8))
		return missing(r, "d");
	if (!(have & 16))
		return missing(r, "ts");
	if (!(have & 32))
		return missing(r, "it");
	if (t->has_sim != 0 && t->has_sim != 3)
		return missing(r, t->has_sim == 1 ? "se" : "ss");
	t->has_sim = t->has_sim == 3;
	if (t->odur < 0)
		t->odur = t->dur;
	if (t->dur < 0) {
		seterr(r->err, "record %llu: negative duration",
		    (unsigned long long)r->nrec);
		return -1;
	}
	if (t->id != r->ntasks) {
		seterr(r->err, "record %llu: task id %u out of order (expected %llu)",
		    (unsigned long long)r->nrec, t->id, (unsigned long long)r->ntasks);
		return -1;
	}
	if (t->proc >= r->nprocs) {
		seterr(r->err, "record %llu: task %u: proc %u not defined",
		    (unsigned long long)r->nrec, t->id, t->proc);
		return -1;
	}
	if (check_str_ref(r, "n", t->name) < 0 || check_str_ref(r, "op", t->op) < 0 ||
	    check_str_ref(r, "sh", t->shapes) < 0 || check_str_ref(r, "pg", t->pg) < 0 ||
	    check_str_ref(r, "pgr", t->pgr) < 0 || check_str_ref(r, "dt", t->dtype) < 0)
		return -1;
	return 0;
}

static int
dec_edge(struct kg_reader *r, const msgpack_object_map *m, struct kg_edge *e)
{
	uint32_t i;
	int have = 0;

	kg_edge_init(e);
	for (i = 0; i < m->size; i++) {
		const msgpack_object_str *k = &m->ptr[i].key.via.str;
		const msgpack_object *o = &m->ptr[i].val;
		int rc = 0;

		if (KEYIS(k, "src"))
			rc = get_u32(r, o, "src", &e->src), have |= 1;
		else if (KEYIS(k, "dst"))
			rc = get_u32(r, o, "dst", &e->dst), have |= 2;
		else if (KEYIS(k, "k"))
			rc = get_enum(r, o, "k", kg_edge_kind_name, KG_NEDGE_KIND, &e->kind), have |= 4;
		else if (KEYIS(k, "dl"))
			rc = get_i64(r, o, "dl", &e->delay);
		else if (KEYIS(k, "how"))
			rc = get_enum(r, o, "how", kg_how_name, KG_NHOW, &e->how);
		else if (KEYIS(k, "on"))
			rc = get_u32(r, o, "on", &e->on);
		else if (KEYIS(k, "via"))
			rc = get_u32(r, o, "via", &e->via);
		else if (KEYIS(k, "at"))
			rc = get_u32(r, o, "at", &e->at);
		if (rc < 0)
			return -1;
	}
	if (!(have & 1))
		return missing(r, "src");
	if (!(have & 2))
		return missing(r, "dst");
	if (!(have & 4))
		return missing(r, "k");
	if (e->delay < 0) {
		seterr(r->err, "record %llu: negative delay", (unsigned long long)r->nrec);
		return -1;
	}
	/* Unknown-task references are reported by graph-deps --check, not here. */
	return 0;
}

static int
dec_cov(struct kg_reader *r, const msgpack_object_map *m, struct kg_cov *c)
{
	uint32_t i, j;

	kg_cov_release(c);
	for (i = 0; i < m->size; i++) {
		const msgpack_object_str *k = &m->ptr[i].key.via.str;
		const msgpack_object *o = &m->ptr[i].val;

		if (!KEYIS(k, "c"))
			continue;
		if (o->type != MSGPACK_OBJECT_MAP) {
			seterr(r->err, "record %llu: field c: expected a map",
			    (unsigned long long)r->nrec);
			return -1;
		}
		for (j = 0; j < o->via.map.size; j++) {
			const msgpack_object *kk = &o->via.map.ptr[j].key;
			int64_t v;

			if (kk->type != MSGPACK_OBJECT_STR) {
				seterr(r->err, "record %llu: field c: key is not a string",
				    (unsigned long long)r->nrec);
				return -1;
			}
			if (get_i64(r, &o->via.map.ptr[j].val, "c", &v) < 0)
				return -1;
			cov_set(c, kk->via.str.ptr, kk->via.str.size, v, 0);
		}
	}
	return 0;
}

static int
dec_end(struct kg_reader *r, const msgpack_object_map *m)
{
	static const char *const keys[] = { "tasks", "edges", "procs", "strs" };
	uint64_t want[4] = { r->ntasks, r->nedges, r->nprocs, r->nstrs };
	uint32_t i;
	int j, have = 0;

	for (i = 0; i < m->size; i++) {
		const msgpack_object_str *k = &m->ptr[i].key.via.str;

		for (j = 0; j < 4; j++) {
			int64_t v;

			if (k->size != strlen(keys[j]) || memcmp(k->ptr, keys[j], k->size) != 0)
				continue;
			if (get_i64(r, &m->ptr[i].val, keys[j], &v) < 0)
				return -1;
			if ((uint64_t)v != want[j]) {
				seterr(r->err, "corrupt graph stream (section says %lld %s, found %llu)",
				    (long long)v, keys[j], (unsigned long long)want[j]);
				return -1;
			}
			have |= 1 << j;
		}
	}
	for (j = 0; j < 4; j++)
		if (!(have & (1 << j)))
			return missing(r, keys[j]);
	return 0;
}

int
kg_read(struct kg_reader *r, struct kg_rec *rec)
{
	const msgpack_object *o;
	const msgpack_object_map *m;
	const char *type = NULL;
	size_t tlen = 0;
	uint32_t i;
	int ret, t;

	size_t off;

	for (;;) {
		/* msgpack_unpack_next parses whole records from our buffer; a
		 * record cut by the buffer's end is parsed again after fill. */
		off = r->off;
		ret = r->len > r->off ?
		    msgpack_unpack_next(&r->res, r->buf, r->len, &off) : MSGPACK_UNPACK_CONTINUE;
		if (ret == MSGPACK_UNPACK_SUCCESS)
			break;
		if (ret == MSGPACK_UNPACK_PARSE_ERROR) {
			seterr(r->err, "corrupt graph stream (bad MessagePack after record %llu)",
			    (unsigned long long)r->nrec);
			return -1;
		}
		if (ret == MSGPACK_UNPACK_NOMEM_ERROR) {
			seterr(r->err, "out of memory decoding record %llu",
			    (unsigned long long)r->nrec + 1);
			return -1;
		}
		ret = fill(r);
		if (ret < 0)
			return -1;
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
			rec->type = KG_R_EOF;
			return KG_R_EOF;
		}
	}
	rec->bytes = r->buf + r->off;
	rec->nbytes = off - r->off;
	r->off = off;
	r->nrec++;
	o = &r->res.data;
	rec->raw = o;
	if (o->type != MSGPACK_OBJECT_MAP) {
		seterr(r->err, "record %llu: not a map", (unsigned long long)r->nrec);
		return -1;
	}
	m = &o->via.map;
	for (i = 0; i < m->size; i++) {
		if (m->ptr[i].key.type != MSGPACK_OBJECT_STR) {
			seterr(r->err, "record %llu: key is not a string",
			    (unsigned long long)r->nrec);
			return -1;
		}
		if (KEYIS(&m->ptr[i].key.via.str, "r")) {
			if (get_str(r, &m->ptr[i].val, "r", &type, &tlen) < 0)
				return -1;
		}
	}
	if (type == NULL)
		return missing(r, "r");
#define TYPEIS(lit) (tlen == sizeof(lit) - 1 && memcmp(type, lit, tlen) == 0)
	if (TYPEIS("header")) {
		if (r->in_section) {
			seterr(r->err, "truncated graph stream (section ends without its end record)");
			return -1;
		}
		if (dec_header(r, m, &rec->header) < 0)
			return -1;
		r->in_section = 1;
		r->ntasks = r->nedges = r->nprocs = r->nstrs = 0;
		return rec->type = KG_R_HEADER;
	}
	if (!r->in_section) {
		seterr(r->err, "record %llu: expected a header", (unsigned long long)r->nrec);
		return -1;
	}
	if (TYPEIS("task")) {
		if (dec_task(r, m, &rec->task) < 0)
			return -1;
		r->ntasks++;
		t = KG_R_TASK;
	} else if (TYPEIS("edge")) {
		if (dec_edge(r, m, &rec->edge) < 0)
			return -1;
		r->nedges++;
		t = KG_R_EDGE;
	} else if (TYPEIS("str")) {
		if (dec_str(r, m, &rec->str_id) < 0)
			return -1;
		r->nstrs++;
		t = KG_R_STR;
	} else if (TYPEIS("proc")) {
		if (dec_proc(r, m, &rec->proc) < 0)
			return -1;
		r->nprocs++;
		t = KG_R_PROC;
	} else if (TYPEIS("cov")) {
		if (dec_cov(r, m, &rec->cov) < 0)
			return -1;
		t = KG_R_COV;
	} else if (TYPEIS("end")) {
		if (dec_end(r, m) < 0)
			return -1;
		r->in_section = 0;
		t = KG_R_END;
	} else {
		t = KG_R_OTHER;
	}
#undef TYPEIS
	return rec->type = t;
}
