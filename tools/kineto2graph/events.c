/*
 * kineto2graph's JSON reader, a complete event (keep_event, called at its
 * closing brace): classified by its ph and cat and kept into the trace
 * as a struct ev, with its collective metadata, cuda_sync record or byte
 * count beside it; or kept aside as an nn.Module call, a module path's
 * span or a GPU allocator event; a metadata event names a thread. The
 * rest is counted: skipped by category (struct skips, added to the
 * coverage once, at the end: skip_flush) or missing a field. The only
 * error is a correlation id out of range (in p->err).
 */
#include <stdlib.h>
#include <string.h>

#include "jp.h"
#include "k2g.h"
#include "util.h"

/* The pair of an event's Input Dims and Input type (trace.shp). */
uint32_t
shapes_pair(struct trace *t, uint32_t dims, uint32_t types)
{
	uint32_t key[2] = { dims, types }, id;

	if (dims == KG_NONE && types == KG_NONE)
		return KG_NONE;
	id = intern_get(&t->shk, (const char *)key, sizeof(key));
	if (id == t->nshp) {
		struct shpair sp = { dims, types };

		VEC_PUSH(t->shp, t->nshp, t->capshp, sp);
	}
	return id;
}

void
skip_add(struct skips *k, const char *name, size_t len, int64_t n)
{
	int i;

	for (i = 0; i < k->used; i++)
		if (k->len[i] == len && memcmp(k->name[i], name, len) == 0) {
			k->n[i] += n;
			return;
		}
	if (k->used == NSKIP) {
		k->other += n;
		return;
	}
	memcpy(k->name[i], name, len);
	k->name[i][len] = '\0';
	k->len[i] = len;
	k->n[i] = n;
	k->used++;
}

static void
skip_count(struct jp *p, const char *what, const char *s, size_t len)
{
	char buf[48];
	int n;

	n = snprintf(buf, sizeof(buf), "%s%.*s", what, (int)(len > 40 ? 40 : len), s);
	if (n >= (int)sizeof(buf))
		n = sizeof(buf) - 1;
	skip_add(&p->skips, buf, (size_t)n, 1);
}

void
skip_flush(struct jp *p)
{
	int i;

	for (i = 0; i < p->skips.used; i++)
		kg_cov_add(&p->t->cov, p->skips.name[i], p->skips.n[i]);
	if (p->skips.other)
		kg_cov_add(&p->t->cov, "skip:(other)", p->skips.other);
}

/*
 * Communication ops without NCCL metadata (PyTorch before 2.2): the
 * message is the first input, so its element count is the product of the
 * first list of Input Dims and its type the first of Input type, e.g.
 * c10d::alltoall_base_ with [[6144], [6144], ...] and ["float", ...]. An
 * all-reduce of a bucket's TensorList has none there ([[], ...]), but the
 * nccl:all_reduce annotation inside it has ([[394241]], ["float"]:
 * param_dlrm_8rank_v100), so those annotations are read too.
 */
static void
comm_op_size(struct trace *t, struct cur *c)
{
	const char *d, *ty, *q;
	int64_t n = 1, v;
	int any = 0;

	if (c->dims == KG_NONE || c->itypes == KG_NONE)
		return;
	if (!(c->namelen > 6 && memcmp(c->name, "c10d::", 6) == 0) &&
	    !(c->namelen > 5 && memcmp(c->name, "nccl:", 5) == 0) &&
	    !(c->namelen == 18 && memcmp(c->name, "record_param_comms", 18) == 0))
		return;
	d = t->str.str[c->dims];
	if (strncmp(d, "[[", 2) != 0)
		return;
	for (q = d + 2; *q != ']' && *q != '\0';) {
		char *end;

		v = strtoll(q, &end, 10);
		if (end == q || v < 0 || (v > 0 && n > INT64_MAX / v))
			return;
		n *= v;
		any = 1;
		q = *end == ',' ? end + 1 : end;
	}
	ty = t->str.str[c->itypes];
	if (!any || strncmp(ty, "[\"", 2) != 0)
		return;
	q = strchr(ty + 2, '"');
	if (q == NULL || q == ty + 2)
		return;
	c->cm.in_nelems = n;
	c->cm.dtype = intern_get(&t->str, ty + 2, (size_t)(q - (ty + 2)));
	c->cm_any = 1;
}

/*
 * An "nn.Module: CLASS_N" call on a CPU thread, kept aside; 0 when it is
 * not one (no instance number, no time, no thread).
 */
static int
module_call(struct trace *t, const struct cur *c)
{
	struct modspan m;
	const char *n = c->name + 11;
	size_t len = c->namelen - 11, k = len;
	int32_t v = 0, mul = 1;

	while (k > 0 && n[k - 1] >= '0' && n[k - 1] <= '9' && mul < 100000000)
		v += (n[k - 1] - '0') * mul, mul *= 10, k--;
	if (k == len || k < 2 || n[k - 1] != '_' || !(c->have & BIT(E_TS)) ||
	    !(c->have & BIT(E_DUR)) || c->pid_str || c->tid_str ||
	    !(c->have & BIT(E_PID)) || !(c->have & BIT(E_TID)))
		return 0;
	m.ts = c->ts;
	m.end = c->ts + c->dur;
	m.proc = trace_proc(t, c->pid, c->tid, 0);
	m.cls = intern_get(&t->str, n, k - 1);
	m.inst = v;
	m.path = 0;
	VEC_PUSH(t->mod, t->nmod, t->capmod, m);
	return 1;
}

/*
 * An allocator event of a GPU ("[memory]", Device Type 1: CUDA) on a CPU
 * thread, kept aside: PyTorch's profile_memory records each allocation
 * and free with its size and the allocator's totals after it. 0 when it
 * is not one (another device type, no time or thread): skipped then.
 */
static int
memory_event(struct trace *t, const struct cur *c)
{
	struct memev m;

	if (c->devtype != 1 || !(c->have & BIT(E_TS)) || c->pid_str || c->tid_str ||
	    !(c->have & BIT(E_PID)) || !(c->have & BIT(E_TID)))
		return 0;
	m.ts = c->ts;
	m.proc = trace_proc(t, c->pid, c->tid, 0);
	m.bytes = c->mbytes;
	m.alloc = c->talloc;
	m.reserved = c->tres;
	VEC_PUSH(t->mem, t->nmem, t->capmem, m);
	return 1;
}

/*
 * An op's "Module Hierarchy" (PyTorch's with_modules, TorchScript
 * models: "top(GPT)::forward.layers.0(Block)::forward.attn(Attention)"):
 * each module in it that has an instance number ("0(Block)", "h_3(Block)")
 * is called around the op. Its span (kept with the nn.Module calls) grows
 * to hold the op, or a new one starts where the last of its class on the
 * thread was another instance.
 */
static void
module_path(struct trace *t, const struct ev *e, const char *h)
{
	const char *p = h;

	while ((p = strchr(p, '(')) != NULL) {
		const char *q = p, *cls = p + 1, *end = strchr(cls, ')');
		int32_t v = 0, mul = 1;
		uint32_t id;
		size_t i;

		p++;
		if (end == NULL || end == cls)
			break;
		while (q > h && q[-1] >= '0' && q[-1] <= '9' && mul < 100000000)
			v += (q[-1] - '0') * mul, mul *= 10, q--;
		if (mul == 1)
			continue; /* no instance number */
		id = intern_get(&t->str, cls, (size_t)(end - cls));
		for (i = t->nmod; i-- > 0;)
			if (t->mod[i].proc == e->proc && t->mod[i].cls == id)
				break;
		if (i != SIZE_MAX && t->mod[i].inst == v && t->mod[i].path) {
			if (e->ts + e->dur > t->mod[i].end)
				t->mod[i].end = e->ts + e->dur;
		} else {
			struct modspan m;

			m.ts = e->ts, m.end = e->ts + e->dur;
			m.proc = e->proc, m.cls = id, m.inst = v, m.path = 1;
			VEC_PUSH(t->mod, t->nmod, t->capmod, m);
		}
	}
}

#define CATIS(lit) (c->catlen == sizeof(lit) - 1 && memcmp(c->cat, lit, c->catlen) == 0)

/* The event is complete: classify it, keep it or count it as skipped. */
void
keep_event(struct jp *p)
{
	struct trace *t = p->t;
	struct cur *c = &p->c;
	struct ev e;
	int cls;

	t->nevents++;
	if (!(c->have & BIT(E_PH))) {
		kg_cov_add(&t->cov, "missing:ph", 1);
		return;
	}
	if (c->ph == 'M') {
		if (c->namelen == 11 && memcmp(c->name, "thread_name", 11) == 0 &&
		    (c->have & BIT(E_PID)) && (c->have & BIT(E_TID)) &&
		    !c->pid_str && !c->tid_str && c->anamelen > 0) {
			uint32_t i = trace_proc(t, c->pid, c->tid, 0);

			t->proc[i].name = intern_get(&t->str, c->aname, c->anamelen);
		}
		return; /* metadata: not an event of the trace's timeline */
	}
	if (c->ph == 'i' && c->namelen == 8 && memcmp(c->name, "[memory]", 8) == 0 &&
	    memory_event(t, c))
		return;
	if (c->ph != 'X') {
		if (c->catlen == 4 && memcmp(c->cat, "ac2g", 4) == 0 && p->skips.used > 0 &&
		    p->skips.len[0] == 9 && memcmp(p->skips.name[0], "skip:ac2g", 9) == 0) {
			p->skips.n[0]++; /* the common case, without formatting */
			return;
		}
		if (c->catlen)
			skip_count(p, "skip:", c->cat, c->catlen);
		else
			skip_count(p, "skip:ph=", &c->ph, 1);
		return;
	}
	if (CATIS("cpu_op") || CATIS("Operator"))
		cls = EV_OP;
	else if (CATIS("user_annotation"))
		cls = EV_ANNOT;
	else if (CATIS("cuda_runtime") || CATIS("Runtime") || CATIS("cuda_driver"))
		cls = EV_RT;
	else if (CATIS("kernel") || CATIS("Kernel"))
		cls = EV_KERN;
	else if (CATIS("gpu_memcpy") || CATIS("Memcpy"))
		cls = EV_CPY;
	else if (CATIS("gpu_memset") || CATIS("Memset"))
		cls = EV_SET;
	else if (CATIS("cuda_sync"))
		cls = EV_SYNC;
	else if (CATIS("python_function") && c->namelen > 11 &&
	    memcmp(c->name, "nn.Module: ", 11) == 0 && module_call(t, c))
		return;
	else {
		skip_count(p, "skip:", c->catlen ? c->cat : "(none)", c->catlen ? c->catlen : 6);
		return;
	}
	if (cls == EV_OP && c->namelen > 13 && memcmp(c->name, "ProfilerStep#", 13) == 0)
		cls = EV_ANNOT; /* PyTorch 1.8 files step ranges as Operator */
	if (!(c->have & BIT(E_TS))) {
		kg_cov_add(&t->cov, "missing:ts", 1);
		return;
	}
	if (!(c->have & BIT(E_DUR))) {
		kg_cov_add(&t->cov, "missing:dur", 1);
		return;
	}
	memset(&e, 0, sizeof(e));
	e.ts = c->ts;
	e.dur = c->dur;
	if (c->corr >= (int64_t)NO_CORR) {
		snprintf(p->err, sizeof(p->err), "field args.correlation: out of range");
		return;
	}
	e.corr = c->corr < 0 ? NO_CORR : (uint32_t)c->corr;
	if (cls == EV_OP) /* an op has no correlation: corr keeps its sequence number */
		e.corr = c->seqnr < 0 ? NO_CORR : (uint32_t)c->seqnr;
	e.name = intern_get(&t->str, c->name ? c->name : "", c->namelen);
	e.shapes = shapes_pair(t, c->dims, c->itypes);
	e.extra = KG_NONE;
	e.cls = (uint8_t)cls;
	if (cls == EV_KERN || cls == EV_CPY || cls == EV_SET || cls == EV_SYNC) {
		/* GPU side: (device, stream) from args, else (pid, tid). */
		int64_t dev = c->device >= 0 ? c->device : c->pid;
		int64_t str = c->stream;

		if (str < 0 && cls != EV_SYNC)
			str = c->tid;
		if (c->device < 0 && c->pid_str) {
			kg_cov_add(&t->cov, "missing:device", 1);
			return;
		}
		if (c->stream < 0 && c->tid_str && cls != EV_SYNC) {
			kg_cov_add(&t->cov, "missing:stream", 1);
			return;
		}
		if (cls == EV_SYNC) {
			struct syncrec sr;

			sr.kind = c->synckind < 0 ? SYNC_OTHER : c->synckind;
			sr.stream = c->stream;
			sr.wait_stream = c->wstream;
			sr.wait_corr = c->wcorr;
			sr.device = dev;
			e.proc = KG_NONE;
			e.extra = (uint32_t)t->nsync;
			VEC_PUSH(t->sync, t->nsync, t->capsync, sr);
		} else {
			e.proc = trace_proc(t, dev, str, 1);
		}
		if (cls == EV_CPY || cls == EV_SET) {
			e.extra = (uint32_t)t->nbytes;
			VEC_PUSH(t->bytes, t->nbytes, t->capbytes, c->bytes);
		}
		if (c->corr < 0)
			kg_cov_add(&t->cov, "missing:correlation", 1);
	} else {
		if (c->pid_str || c->tid_str || !(c->have & BIT(E_PID)) ||
		    !(c->have & BIT(E_TID))) {
			kg_cov_add(&t->cov, c->pid_str || !(c->have & BIT(E_PID)) ?
			    "missing:pid" : "missing:tid", 1);
			return;
		}
		e.proc = trace_proc(t, c->pid, c->tid, 0);
		if (cls == EV_RT && c->corr < 0)
			kg_cov_add(&t->cov, "missing:correlation", 1);
	}
	if (cls == EV_OP && c->modh != KG_NONE) {
		/* extends the spans of ops before it, which a second half
		 * does not have */
		p->tainted |= p->second;
		module_path(t, &e, t->str.str[c->modh]);
	}
	if ((cls == EV_OP || cls == EV_ANNOT) && !c->cm_any)
		comm_op_size(t, c);
	if (c->cm_any && (cls == EV_OP || cls == EV_KERN || cls == EV_ANNOT)) {
		e.extra = (uint32_t)t->ncoll;
		VEC_PUSH(t->coll, t->ncoll, t->capcoll, c->cm);
	}
	VEC_PUSH(t->ev, t->nev, t->capev, e);
}
