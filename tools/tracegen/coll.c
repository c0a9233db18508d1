/*
 * Process groups and collectives: which ranks each group of a kind holds
 * and its id, the collective instances every participant of a group
 * shares (made by the first to reach one, with its transfer time from
 * the timing model), and the c10d collectives and pipeline send/recv
 * pairs of a rank's program with the NCCL metadata Kineto writes for
 * them. An instance's k-th call on every participant is the same
 * instance: each rank counts its calls per group in the same order.
 *
 * The launch itself is calls.c's; where the collectives go in the
 * program is layers.c's and schedule.c's.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "tg.h"
#include "util.h"

const char *const gdesc[NGKIND] = {
	"TENSOR_MODEL_PARALLEL_GROUP", "DATA_PARALLEL_GROUP",
	"PIPELINE_MODEL_PARALLEL_GROUP", "MODEL_PARALLEL_GROUP"
};

/* The ranks of the group of kind k that holds rank r, ascending. */
int
group_members(const struct tg_job *J, int kind, int r, int *out)
{
	const struct tg_cfg *c = &J->c;
	int tp = (int)c->tp, dp = (int)c->dp, pp = (int)c->pp;
	int tpr = r % tp, dpr = r / tp % dp, st = r / (tp * dp), n = 0, i, j;

	switch (kind) {
	case G_TP:
		for (i = 0; i < tp; i++)
			out[n++] = r - tpr + i;
		break;
	case G_DP:
		for (i = 0; i < dp; i++)
			out[n++] = tpr + tp * (i + dp * st);
		break;
	case G_PP:
		for (i = 0; i < pp; i++)
			out[n++] = tpr + tp * (dpr + dp * i);
		break;
	default:
		for (i = 0; i < pp; i++)
			for (j = 0; j < tp; j++)
				out[n++] = j + tp * (dpr + dp * i);
		break;
	}
	return n;
}

int
group_id(const struct tg_job *J, int kind, int r)
{
	const struct tg_cfg *c = &J->c;
	int tp = (int)c->tp, dp = (int)c->dp;
	int tpr = r % tp, dpr = r / tp % dp, st = r / (tp * dp);

	switch (kind) {
	case G_TP:
		return J->gbase[G_TP] + r / tp;
	case G_DP:
		return J->gbase[G_DP] + st * tp + tpr;
	case G_PP:
		return J->gbase[G_PP] + dpr * tp + tpr;
	default:
		return J->gbase[G_MP] + dpr;
	}
}

int
node_of(const struct tg_job *J, int r)
{
	return (int)(r / J->c.gpus_per_node);
}

/* The k-th instance of group g, made by the first participant to reach it. */
static uint32_t
instance(struct tg_job *J, int g, uint32_t k, int n, int kind, int64_t bytes, int internode)
{
	struct inst *in;
	int proto;
	double f;

	if (k < J->nginst[g])
		return J->ginst[g][k];
	VEC_PUSH(J->ginst[g], J->nginst[g], J->capginst[g], (uint32_t)J->ninst);
	if (J->ninst >= J->capinst)
		grow(&J->inst, &J->capinst, J->ninst + 1, sizeof(*J->inst));
	in = &J->inst[J->ninst];
	in->n = (uint16_t)n;
	in->xfer = model_coll(&J->c.hw, kind, bytes, n, internode, &proto);
	f = 1.0 + 0.03 * tg_gauss(tg_hash(J->c.seed ^ 0xc011ec7ULL, (uint64_t)g, k));
	in->xfer = (int64_t)(in->xfer * f);
	in->proto = (uint8_t)proto;
	in->kind = (uint8_t)kind;
	return (uint32_t)J->ninst++;
}

static const char *const dtname[] = { "BFloat16", "Float", "Long" };

void
write_nccl_meta(struct gen *G, struct jw *w, const struct collmeta *m, int op)
{
	static const char *const cname[] = { "allreduce", "broadcast", "send", "recv",
		"allgather", "reducescatter" };
	int64_t in = m->nelems, out = m->nelems;

	if (m->ckind == C_ALLGATHER)
		in = m->nelems / G->gsize[m->gkind];
	else if (m->ckind == C_REDUCESCATTER)
		out = m->nelems / G->gsize[m->gkind];

	jw_puts(w, "\"Collective name\": \"");
	jw_puts(w, cname[m->ckind]);
	jw_puts(w, "\", \"In msg nelems\": ");
	jw_int(w, in);
	jw_puts(w, ", \"Out msg nelems\": ");
	jw_int(w, out);
	jw_puts(w, ", \"Group size\": ");
	jw_int(w, G->gsize[m->gkind]);
	jw_puts(w, ", \"dtype\": \"");
	jw_puts(w, dtname[m->dtype]);
	jw_puts(w, "\", \"In split size\": \"[]\", \"Out split size\": \"[]\", "
	    "\"Process Group Name\": \"");
	jw_puts(w, G->pgname[m->gkind]);
	jw_puts(w, "\", \"Process Group Description\": \"");
	jw_puts(w, gdesc[m->gkind]);
	jw_puts(w, "\", \"Process Group Ranks\": \"");
	jw_puts(w, G->pgranks[m->gkind]);
	jw_puts(w, "\"");
	if (op) {
		jw_puts(w, ", \"Global rank start\": ");
		jw_int(w, G->gstart[m->gkind]);
		jw_puts(w, ", \"Global rank stride\": ");
		jw_int(w, G->gstride[m->gkind]);
	}
}

void
nccl_name(char *buf, size_t n, const struct collmeta *m, int proto)
{
	static const char *const pn[] = { "LL", "LL128", "SIMPLE" };
	static const char *const dn[] = { "bf16", "f32", "i64" };

	if (m->ckind == C_ALLREDUCE)
		snprintf(buf, n, "ncclDevKernel_AllReduce_%s_%s_RING_%s(ncclDevKernelArgsStorage<4096ul>)",
		    m->redop ? "Max" : "Sum", dn[m->dtype], pn[proto]);
	else if (m->ckind == C_BROADCAST)
		snprintf(buf, n, "ncclDevKernel_Broadcast_RING_%s(ncclDevKernelArgsStorage<4096ul>)",
		    pn[proto]);
	else if (m->ckind == C_ALLGATHER)
		snprintf(buf, n, "ncclDevKernel_AllGather_RING_%s(ncclDevKernelArgsStorage<4096ul>)",
		    pn[proto]);
	else if (m->ckind == C_REDUCESCATTER)
		snprintf(buf, n, "ncclDevKernel_ReduceScatter_Sum_%s_RING_%s(ncclDevKernelArgsStorage<4096ul>)",
		    dn[m->dtype], pn[proto]);
	else
		snprintf(buf, n, "ncclDevKernel_SendRecv(ncclDevKernelArgsStorage<4096ul>)");
}

/*
 * A c10d collective: the op, record_param_comms, the NCCL stream fenced
 * behind the compute stream (event record, stream wait), the kernel, and
 * the event the work records when it ends, which is returned: a caller
 * that waits (a synchronous op, or req.wait()) makes the compute stream
 * wait for it.
 */
static struct evt
c10d(struct gen *G, const struct collmeta *m, int s, int g, uint32_t k, int n,
    int internode)
{
	static const char *const opn[] = { "c10d::allreduce_", "c10d::broadcast_",
		"c10d::send", "c10d::recv_", "c10d::_allgather_base_",
		"c10d::_reduce_scatter_base_" };
	static const char *const an[] = { "nccl:all_reduce", "nccl:broadcast", "nccl:send",
		"nccl:recv", "nccl:_all_gather_base", "nccl:_reduce_scatter_base" };
	int64_t bytes = m->nelems * (m->dtype == DT_BF16 ? 2 : m->dtype == DT_F32 ? 4 : 8);
	uint32_t in = instance(G->J, g, k, n, m->ckind == C_RECV ? C_SEND : m->ckind, bytes,
	    internode);
	struct evt e, done;
	struct jw meta = { 0 };

	op_dyn(G, opn[m->ckind], "T%" PRId64 ":%s", m->nelems,
	    m->dtype == DT_BF16 ? "bf" : m->dtype == DT_F32 ? "f32" : "i64");
	if (G->emit) {
		/* record_param_comms carries the metadata in its args. */
		meta.cap = 512;
		meta.b = xmalloc(meta.cap);
		write_nccl_meta(G, &meta, m, 1);
		jw_put(&meta, "", 1);
	}
	open_op(G, "cpu_op", "record_param_comms", -1, meta.b, 0);
	free(meta.b);
	rt(G, "cudaStreamIsCapturing", 317, H_SMALLRT);
	e = event_record(G, ST_COMPUTE);
	stream_wait(G, s, &e);
	annot(G, an[m->ckind]);
	launch(G, -1, s, in, m, 0);
	close_op(G);
	done = event_record(G, s);
	close_op(G);
	close_op(G);
	return done;
}

/* A collective on this rank's group of kind gk (sizes of 1 make none). */
int
coll(struct gen *G, int gk, int ckind, int dtype, int redop, int64_t nelems, int wait,
    struct evt *done)
{
	struct collmeta m;
	struct evt e;

	if (G->gsize[gk] <= 1)
		return 0;
	m.gkind = gk, m.ckind = ckind, m.dtype = dtype, m.redop = redop, m.nelems = nelems;
	e = c10d(G, &m, gk == G_TP ? ST_TP : gk == G_DP ? ST_DP : ST_MP,
	    group_id(G->J, gk, G->rank), G->gseq[gk]++, G->gsize[gk], G->internode[gk]);
	if (wait)
		stream_wait(G, ST_COMPUTE, &e);
	if (done != NULL)
		*done = e;
	return 1;
}

/* Pipeline point-to-point, as Megatron's _p2p_ops orders it. */

static void
p2p_op(struct gen *G, int what, struct evt *done)
{
	const struct tg_job *J = G->J;
	int stride = (int)(J->c.tp * J->c.dp), peer, g, dir, s;
	uint32_t k;
	struct collmeta m;

	m.gkind = G_PP, m.dtype = DT_BF16, m.redop = 0;
	m.nelems = J->c.seq * J->c.mbs * J->c.hidden;
	switch (what) {
	case SEND_NEXT:
		peer = G->rank + stride, dir = 0, g = G->rank, s = ST_NEXT;
		k = G->send_seq[0]++, m.ckind = C_SEND;
		break;
	case SEND_PREV:
		peer = G->rank - stride, dir = 1, g = G->rank, s = ST_PREV;
		k = G->send_seq[1]++, m.ckind = C_SEND;
		break;
	case RECV_PREV:
		peer = G->rank - stride, dir = 0, g = peer, s = ST_PREV;
		k = G->recv_seq[1]++, m.ckind = C_RECV;
		break;
	default:
		peer = G->rank + stride, dir = 1, g = peer, s = ST_NEXT;
		k = G->recv_seq[0]++, m.ckind = C_RECV;
		break;
	}
	*done = c10d(G, &m, s, J->gbase[NGKIND] + g * 2 + dir, k, 2,
	    node_of(J, G->rank) != node_of(J, peer));
}

void
p2p(struct gen *G, int ops)
{
	static const int even[] = { SEND_NEXT, RECV_PREV, SEND_PREV, RECV_NEXT };
	static const int odd[] = { RECV_PREV, SEND_NEXT, RECV_NEXT, SEND_PREV };
	const int *order = G->stage % 2 == 0 ? even : odd;
	struct evt done[4];
	int i, n = 0;

	if (G->first)
		ops &= ~(RECV_PREV | SEND_PREV);
	if (G->last)
		ops &= ~(SEND_NEXT | RECV_NEXT);
	if (ops == 0)
		return;
	advance(G, H_PY);
	for (i = 0; i < 4; i++)
		if (ops & order[i])
			p2p_op(G, order[i], &done[n++]);
	for (i = 0; i < n; i++)
		stream_wait(G, ST_COMPUTE, &done[i]);
}
