/*
 * A collective's NCCL metadata as Kineto writes it: the kernel's name
 * (ncclDevKernel_...), and the fields of its kernel event and of the
 * record_param_comms op around its launch (collective name, message
 * sizes, data type, process group name, description and ranks), from
 * the rank's process groups as the program set them up (struct gen).
 *
 * Promises: text only, into a buffer or a writer; it launches nothing
 * and counts nothing. What the collectives are is coll.c's; the launch
 * that writes them, calls.c's.
 */
#include <stdio.h>

#include "tg.h"

const char *const gdesc[NGKIND] = {
	"TENSOR_MODEL_PARALLEL_GROUP", "DATA_PARALLEL_GROUP",
	"PIPELINE_MODEL_PARALLEL_GROUP", "MODEL_PARALLEL_GROUP"
};

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
