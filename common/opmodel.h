/*
 * opmodel: a GPU's kernel times predicted from operators and shapes
 * (formats/opmodel.md). The unit predicted is an operator *call*: the
 * GPU time of the kernels one call of a CPU operator launches (a GEMM
 * and its split-K reduction, attention's backward and its helper
 * kernels), as the kernel-timing sweeps measure it.
 *
 * A call is put in a class by its operator's name (GEMM, attention
 * forward and backward, normalization, elementwise, softmax and loss,
 * optimizer, memory copies and sets, other) and described by a few
 * features taken from its Input Dims text and its longest kernel's name:
 * sizes, FLOPs, bytes, arithmetic intensity, tiles and waves against the
 * GPU's SM count. A model holds, per class, XGBoost trees fitted on log
 * time, or a roofline (the GPU's achieved FLOP/s and bytes/s, scaled to
 * the class) where the class had too few samples.
 *
 * The model file is read here; the fit lives in tools/opmodel/. Nothing
 * here prints or exits; errors come back as -1 with a one-line reason.
 * Links libxgboost: only the tools that use this module link it.
 */
#ifndef KG_OPMODEL_H
#define KG_OPMODEL_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define OM_MAGIC "kgraph-opmodel"
#define OM_VERSION 3
#define OM_VERSION_MIN 2 /* 2 differs only in its trees' encoding (JSON) */
#define OM_NFEAT 18
/* A sweep's whole AdamW step (foreach), as an operator: dims [[P]] */
#define OM_ADAMW_STEP "adamw_foreach_step"
/* A class with fewer training samples than this gets a roofline (opmodel fit) */
#define OM_MIN_TREES 20

enum om_class {
	OM_GEMM, OM_ATTN_FWD, OM_ATTN_BWD, OM_NORM, OM_ELTWISE, OM_SOFTMAX,
	OM_OPTIM, OM_MEMORY, OM_OTHER, OM_NCLASS
};
extern const char *const om_class_name[OM_NCLASS];
/* Class by name, or -1. */
int om_class_lookup(const char *name);

/* How a class predicts. */
enum om_kind { OM_NONE, OM_TREES, OM_ROOFLINE };

/*
 * An operator call as a trace or a graph stream shows it: the operator
 * that launched its kernels (NULL or "" when unknown), that operator's
 * Input Dims text, the name of its longest kernel, the task kind
 * (KG_KERN, KG_CPY, KG_SET) and, for copies and sets, their bytes.
 */
struct om_call {
	const char *op, *dims, *kernel;
	const char *types; /* the op's Input type text (a stream's `ty`); NULL:
	                      every tensor taken as 2-byte, as a sweep's bf16 rows */
	int kind;
	uint64_t bytes;
	int layout; /* GEMM: 0 nt, 1 nn, 2 tn, 3 tt as a sweep names it; -1:
	               from the kernel's name (cuBLAS's nvjet_..._TNT) */
};

/*
 * What a call is for the model: its class, features (NaN where not
 * known), FLOPs and bytes moved (0 when not known). `sized` is 0 when
 * the shapes do not give the call's size (an optimizer's tensor lists
 * that the profiler does not record): such a call cannot be predicted.
 */
struct om_desc {
	int cls;
	int sized;
	int byop;       /* the class tells operators apart (x[3] the operator) */
	uint32_t opid;  /* the operator's code (XXH3 of its name, 24 bits) */
	float x[OM_NFEAT];
	double flops, bytes;
};

/*
 * Describe a call for a GPU with `sms` multiprocessors. Returns its class;
 * -1 for what the model does not cover (communication kernels).
 */
int om_describe(const struct om_call *c, int sms, struct om_desc *d);


/* One class of a model. */
struct om_cls {
	int kind;       /* enum om_kind */
	int64_t n;      /* training samples */
	double mape;    /* mean absolute % error on the training samples */
	double cv_mape; /* the same, each sample predicted by a fit without it
	                   (5-fold cross-validation); -1 if not measured */
	double p90;     /* 90th percentile absolute % error (cross-validated
	                   where measured) */
	double scale;   /* roofline: measured over roofline time, median */
	int ratio;      /* trees: fitted on log(time / roofline time), not
	                   log(time): they then learn an efficiency, which
	                   carries between the shapes sampled */
	void *booster;  /* XGBoost's BoosterHandle, OM_TREES */
	uint32_t *ops;  /* the operators of its training samples (codes, sorted) */
	char **opname;  /* their names, in the same order */
	size_t nops;
};

struct om_model {
	char gpu[128];
	int sms;
	double flops_s, bytes_s; /* achieved FLOP/s and bytes/s: the roofline */
	struct om_cls cls[OM_NCLASS];
};

void om_model_init(struct om_model *m);
void om_model_release(struct om_model *m);
/*
 * Read a model file. -1 with err set: not a model, another version,
 * truncated, corrupt (checksum), or XGBoost refusing the trees.
 */
int om_load(struct om_model *m, FILE *fp, char *err, size_t errlen);
/* om_load of the file at path; a file that does not open is -1 with
 * strerror's reason in err. */
int om_load_path(struct om_model *m, const char *path, char *err, size_t errlen);
/*
 * Write m; a class's trees are given as XGBoost's own JSON bytes
 * (tree[c], ntree[c]; NULL for a class without trees). -1 on a write
 * error (errno set).
 */
int om_save(const struct om_model *m, FILE *fp, const char *const *tree,
    const size_t *ntree);

/*
 * Do the class's trees know the call: trees, and for a class that tells
 * operators apart, an operator seen in training? A call they do not know
 * is predicted by the roofline.
 */
int om_knows(const struct om_model *m, const struct om_desc *d);
/* The operator code om_describe gives a name. */
uint32_t om_opcode(const char *op);

/* The roofline's time for a described call, µs: the larger of its FLOPs
 * at the achieved FLOP/s and its bytes at the achieved bytes/s. */
double om_roofline_us(const struct om_model *m, const struct om_desc *d);

/*
 * Predicted time of a described call, µs; -1 when the model cannot
 * (a class without trees or roofline, an unsized call). *via gets the
 * enum om_kind used.
 */
double om_predict(const struct om_model *m, const struct om_desc *d, int *via);

/*
 * Is `a` the same GPU as `b` (names equal, ignoring case and spaces at
 * the ends)? For the warning on a model of another GPU.
 */
int om_same_gpu(const char *a, const char *b);

/*
 * A section's GPU tasks, for om_calls: what a graph stream's task record
 * says (string ids, KG_NONE where absent).
 */
struct om_task {
	uint32_t id, proc, op, sh, name;
	uint32_t ocall; /* the task's `oc`: which call of its op, KG_NONE */
	uint32_t ty;    /* the task's `ty`, KG_NONE */
	int kind; /* enum kg_task_kind */
	int64_t it, ts, dur;
	uint64_t bytes;
};
/*
 * Group tasks into operator calls: on each stream, in order of start,
 * consecutive kernels launched by the same call of an operator (the
 * tasks' `oc`) are one call; where a stream has no `oc` (before 1.6),
 * consecutive kernels of the same operator with the same shapes in the
 * same iteration are (two calls of one operator on one shape back to
 * back are then taken as one). A copy or set is a call of its own;
 * communication kernels are in none. call[i] gets task i's call
 * (UINT32_MAX: none); returns the number of calls.
 */
uint32_t om_calls(const struct om_task *t, size_t n, uint32_t *call);

#endif
