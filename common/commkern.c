/*
 * commkern: the table of communication kernel names (see commkern.h).
 */
#include "commkern.h"

#include <stdlib.h>
#include <string.h>

#include "kg.h"
#include "util.h"

enum { M_PREFIX, M_FUNC, M_FUNC_PREFIX };

/* How the type is found: fixed, or from the words of the name. */
#define FROM_NAME (-1)

struct rule {
	struct commkern_rule r;
	int match;
	const char *ns;  /* M_FUNC*: the namespace the callable must be in, or NULL */
	const char *s;   /* prefix of the name, or the callable's name (or prefix) */
	int coll;        /* a kg_coll, or FROM_NAME */
};

static const struct rule rules[] = {
	{ { "nccl", "ncclKernel_TYPE_…", "param_dlrm_8rank_v100 (ncclKernel_SendRecv, "
	    "ncclKernel_AllReduce; NCCL 2.10-2.17), hta_ddp_2rank_a100_nccl_meta "
	    "(ncclKernel_Broadcast)" }, M_PREFIX, NULL, "ncclKernel_", FROM_NAME },
	{ { "nccl", "ncclDevKernel_TYPE_…", "NCCL 2.19+ (NVIDIA/nccl src/device/generate.py); "
	    "tracegen's jobs; ncclDevKernel_SendRecv in vLLM context-parallel traces; RCCL "
	    "(ROCm 6) names every kernel ncclDevKernel_Generic (ROCm/roctracer issue 101: "
	    "ncclDevKernel_Generic(ncclDevComm*, channelMasks, ncclWork*); "
	    "ncclDevKernel_Generic_1 in MI300X vLLM traces): communication of no type by "
	    "name, the type from the op's metadata" },
	    M_PREFIX, NULL, "ncclDevKernel_", FROM_NAME },
	{ { "rccl", "mscclKernel_OP_TYPE_PROTO…", "RCCL's MSCCL kernels (ROCm/rccl "
	    "src/include/msccl/msccl_kernel.h: mscclKernel_Sum_half_Simple_false(ncclDevComm*, "
	    "mscclAlgo*, mscclWork*); MI300X vLLM and DLRM traces: "
	    "mscclKernel_Sum_hip_bfloat16_Simple): any collective an algorithm file runs, the "
	    "type from the op's metadata" }, M_PREFIX, NULL, "mscclKernel_", FROM_NAME },
	{ { "nccl-symk", "ncclSymk…TYPE…", "NCCL 2.27+ symmetric-memory kernels "
	    "(NVIDIA/nccl src/device/symmetric: AllReduce_AGxLL_R, AllGather_LL, "
	    "ReduceScatter_LL…); no trace at hand" }, M_PREFIX, NULL, "ncclSymk", FROM_NAME },
	{ { "deepep", "internode::dispatch, intranode::dispatch, internode_ll::dispatch",
	    "DeepEP (deepseek-ai/DeepEP csrc/kernels/{internode,intranode,internode_ll}.cu); "
	    "a 2025 H800 MoE trace (issue 11)" }, M_FUNC, NULL, "dispatch", KG_COLL_ALLTOALL },
	{ { "deepep", "…node…::combine", "DeepEP, as above" }, M_FUNC, NULL, "combine",
	    KG_COLL_ALLTOALL },
	{ { "deepep", "…node…::notify_dispatch", "DeepEP, as above (the token counts "
	    "exchanged before a dispatch)" }, M_FUNC, NULL, "notify_dispatch", KG_COLL_ALLTOALL },
	{ { "deepep", "…node…::cached_notify…", "DeepEP, as above" }, M_FUNC_PREFIX, NULL,
	    "cached_notify", KG_COLL_ALLTOALL },
	{ { "deepep", "…node…::notify_combine", "DeepEP, as above" }, M_FUNC, NULL,
	    "notify_combine", KG_COLL_ALLTOALL },
	{ { "nvls", "multimem_TYPE…", "a B200 trace (issue 11: multimem_all_reduce_kernel); "
	    "PyTorch symmetric memory (torch/csrc/distributed/c10d/symm_mem/"
	    "CUDASymmetricMemoryOps.cu); vLLM traces: (anonymous namespace)::"
	    "multimem_all_reduce_kernel<c10::BFloat16, 16>" }, M_FUNC_PREFIX, NULL, "multimem_",
	    FROM_NAME },
	{ { "custom-ar", "one_shot_all_reduce…", "PyTorch symmetric memory "
	    "(CUDASymmetricMemoryOps.cu, one_shot_all_reduce_kernel)" }, M_FUNC_PREFIX, NULL,
	    "one_shot_all_reduce", KG_COLL_ALLREDUCE },
	{ { "custom-ar", "two_shot_all_reduce…", "PyTorch symmetric memory; vLLM traces "
	    "(two_shot_all_reduce_kernel_inplace)" }, M_FUNC_PREFIX, NULL, "two_shot_all_reduce",
	    KG_COLL_ALLREDUCE },
	{ { "custom-ar", "cross_device_reduce_…", "vLLM custom all-reduce "
	    "(csrc/custom_all_reduce.cuh: cross_device_reduce_1stage, _2stage)" }, M_FUNC_PREFIX,
	    NULL, "cross_device_reduce_", KG_COLL_ALLREDUCE },
	{ { "custom-ar", "oneShotAllReduceKernel, twoShotAllReduceKernel", "TensorRT-LLM "
	    "(cpp/tensorrt_llm/kernels/customAllReduceKernels.cu)" }, M_FUNC_PREFIX, NULL,
	    "oneShotAllReduce", KG_COLL_ALLREDUCE },
	{ { "custom-ar", "twoShotAllReduceKernel", "TensorRT-LLM, as above" }, M_FUNC_PREFIX,
	    NULL, "twoShotAllReduce", KG_COLL_ALLREDUCE },
};

/* DeepEP's launchers live in these namespaces; its layout kernels
 * (get_dispatch_layout) are computation and do not. */
static const char *const deepep_ns[] = { "internode", "intranode", "internode_ll", NULL };

/* The words that name a type, longest first where one holds another. */
static int
type_from_words(const char *s, size_t len)
{
	static const struct { const char *w; int coll; } tab[] = {
		{ "allreduce", KG_COLL_ALLREDUCE }, { "allgather", KG_COLL_ALLGATHER },
		{ "reducescatter", KG_COLL_REDUCESCATTER }, { "alltoall", KG_COLL_ALLTOALL },
		{ "broadcast", KG_COLL_BROADCAST }, { "sendrecv", KG_COLL_SENDRECV },
		{ "send", KG_COLL_SEND }, { "recv", KG_COLL_RECV }, { "reduce", KG_COLL_REDUCE },
		{ NULL, 0 }
	};
	char norm[64];
	size_t i, n = 0;

	for (i = 0; i < len && n < sizeof(norm) - 1; i++)
		if (s[i] != '_')
			norm[n++] = (char)(s[i] >= 'A' && s[i] <= 'Z' ? s[i] + 32 : s[i]);
	norm[n] = '\0';
	for (i = 0; tab[i].w; i++)
		if (strncmp(norm, tab[i].w, strlen(tab[i].w)) == 0)
			return tab[i].coll;
	return KG_COLL_NONE;
}

/*
 * NCCL's names: the word after the prefix up to '_', '(' or '<' is the
 * type ("ncclDevKernel_AllGather_RING_LL(…)"); a word NCCL has that we do
 * not name is still communication.
 */
static int
nccl_type(const char *p)
{
	static const char *const words[] = { "AllReduce", "AllGather", "ReduceScatter",
		"Broadcast", "SendRecv", "Send", "Recv", "Reduce", "AllToAll", NULL };
	size_t i, len = strcspn(p, "_(<");

	for (i = 0; words[i]; i++)
		if (strlen(words[i]) == len && strncmp(p, words[i], len) == 0)
			return type_from_words(p, len);
	return KG_COLL_NONE;
}

/* The type a symmetric-memory or multimem name spells anywhere in it. */
static int
type_within(const char *s, size_t len)
{
	static const char *const words[] = { "all_reduce", "AllReduce", "all_gather",
		"AllGather", "reduce_scatter", "ReduceScatter", "all_to_all", "AllToAll", NULL };
	size_t i, k, wl;

	for (k = 0; k < len; k++)
		for (i = 0; words[i]; i++) {
			wl = strlen(words[i]);
			if (k + wl <= len && strncmp(s + k, words[i], wl) == 0)
				return type_from_words(words[i], wl);
		}
	return KG_COLL_NONE;
}

/*
 * The callable of a demangled name: after "void ", up to the template
 * arguments or the parameters, "(anonymous namespace)::" skipped.
 * Sets the last component (*fn, *fnlen) and the one before it (*ns,
 * *nslen; 0 when none).
 */
static void
callable(const char *s, const char **fn, size_t *fnlen, const char **ns, size_t *nslen)
{
	static const char anon[] = "(anonymous namespace)::";
	const char *start, *p, *prev = NULL;
	size_t prevlen = 0;

	if (strncmp(s, "void ", 5) == 0)
		s += 5;
	start = p = s;
	for (;;) {
		if (strncmp(p, anon, sizeof(anon) - 1) == 0) {
			p += sizeof(anon) - 1;
			start = p;
			continue;
		}
		if (*p == '\0' || *p == '<' || *p == '(' || *p == ' ')
			break;
		if (p[0] == ':' && p[1] == ':') {
			prev = start;
			prevlen = (size_t)(p - start);
			p += 2;
			start = p;
			continue;
		}
		p++;
	}
	*fn = start;
	*fnlen = (size_t)(p - start);
	*ns = prev;
	*nslen = prev != NULL ? prevlen : 0;
}

static int
in_list(const char *const *list, const char *s, size_t len)
{
	size_t i;

	for (i = 0; list[i]; i++)
		if (strlen(list[i]) == len && strncmp(s, list[i], len) == 0)
			return 1;
	return 0;
}

int
commkern_classify(const char *name, const struct commkern_rule **rule)
{
	const char *whole = name, *fn, *ns;
	size_t fnlen, nslen, i, sl;

	if (rule != NULL)
		*rule = NULL;
	if (name == NULL)
		return -1;
	if (strncmp(whole, "void ", 5) == 0)
		whole += 5;
	callable(name, &fn, &fnlen, &ns, &nslen);
	for (i = 0; i < sizeof(rules) / sizeof(rules[0]); i++) {
		const struct rule *r = &rules[i];
		int c;

		sl = strlen(r->s);
		switch (r->match) {
		case M_PREFIX:
			if (strncmp(whole, r->s, sl) != 0)
				continue;
			c = strcmp(r->r.family, "nccl") == 0 ? nccl_type(whole + sl) :
			    type_within(whole + sl, strlen(whole + sl));
			break;
		case M_FUNC:
		case M_FUNC_PREFIX:
			if (r->match == M_FUNC ? fnlen != sl || strncmp(fn, r->s, sl) != 0 :
			    fnlen < sl || strncmp(fn, r->s, sl) != 0)
				continue;
			/* DeepEP's rules hold inside its namespaces only */
			if (strcmp(r->r.family, "deepep") == 0 && (ns == NULL ||
			    !in_list(deepep_ns, ns, nslen)))
				continue;
			c = r->coll == FROM_NAME ? type_within(fn, fnlen) : r->coll;
			break;
		default:
			continue;
		}
		if (rule != NULL)
			*rule = &r->r;
		return c;
	}
	return -1;
}

const struct commkern_rule *
commkern_rules(size_t *n)
{
	static struct commkern_rule out[sizeof(rules) / sizeof(rules[0])];
	size_t i;

	for (i = 0; i < sizeof(rules) / sizeof(rules[0]); i++)
		out[i] = rules[i].r;
	*n = i;
	return out;
}

#define MEMO_UNKNOWN INT16_MIN

int
commkern_memo(struct commkern_memo *m, uint32_t id, const char *name)
{
	if (id >= m->n) {
		size_t i;

		grow(&m->c, &m->cap, (size_t)id + 1, sizeof(*m->c));
		for (i = m->n; i <= id; i++)
			m->c[i] = MEMO_UNKNOWN;
		m->n = (size_t)id + 1;
	}
	if (m->c[id] == MEMO_UNKNOWN)
		m->c[id] = (int16_t)commkern_classify(name, NULL);
	return m->c[id];
}

void
commkern_memo_reset(struct commkern_memo *m)
{
	m->n = 0;
}

void
commkern_memo_release(struct commkern_memo *m)
{
	free(m->c);
	memset(m, 0, sizeof(*m));
}
