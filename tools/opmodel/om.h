/*
 * opmodel's private parts: the operator calls read from the inputs
 * (input.c: graph streams, Kineto traces through the kineto2graph
 * program, kernel-timing sweeps as JSON lines), and the fit (fit.c).
 */
#ifndef OM_PRIV_H
#define OM_PRIV_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <zlib.h>

#include "opmodel.h"

enum { SRC_TRACE, SRC_SWEEP };

/* A measured operator call: what it is, what it took. */
struct mcall {
	struct om_desc d;
	double us;        /* traced: its kernels' GPU time; sweep: the row's */
	int src;          /* SRC_TRACE or SRC_SWEEP */
	char *kernel;     /* its longest kernel, or the sweep's op; owned */
	char *op;         /* launching operator; owned */
	char *dims;       /* its Input Dims text; owned, NULL if none */
};

/* What the inputs gave. */
struct calls {
	struct mcall *c;
	size_t n, cap;
	char gpu[128];    /* "" until an input names one */
	const char *gpu_file;
	int sms;          /* 0 until an input gives it */
	/* sweep rows not used, by reason */
	int64_t sweep_small, sweep_multi, sweep_bad, sweep_stall;
	/* trace calls with no size (an optimizer's tensor lists) */
	int64_t unsized;
};

/* with min_us > 0, SDPA rows under this many times the file's fastest
 * SDPA call time the host, and are dropped */
#define SDPA_HOST 5

struct read_opts {
	double min_us;    /* sweep rows below this are host-bound: dropped; 0:
	                   * every row kept (but SDPA's stalls) */
	const char *gpu;  /* --gpu: the GPU, over what the inputs say */
	int sms;          /* --sms, 0 if not given */
};

void calls_init(struct calls *cs);
void calls_release(struct calls *cs);
/*
 * Read one input (a graph stream, a Kineto trace, plain or gzip, or a
 * sweep's JSON lines, told apart by content) and add its calls. 0, or 1 after a
 * message. `sms_for` is the SM count to describe calls with: the
 * model's for check, the inputs' for fit (0: the file's own).
 */
int calls_read(struct calls *cs, const char *path, const struct read_opts *o, int sms_for);

/*
 * What input.c's readers share with stream.c's.
 */
/*
 * An input through zlib (plain or gzip, told apart by content), as a
 * FILE for the graph-stream reader, kineto2graph or a sweep's lines.
 * Its leading whitespace is counted, not kept (a file of gigabytes of it costs no
 * memory), and given back as it is read: its newlines first, so that
 * line numbers and byte offsets stay the file's.
 */
struct src {
	gzFile z;
	uint64_t nl, sp;     /* leading newlines and other whitespace to give back */
	char *head;          /* the bytes after it, read to tell a sweep from a trace */
	size_t nhead, ohead;
	int cut;             /* the gzip data ended inside a member */
	int err;             /* errno of a read that failed, or 0 */
};
/* A read of the src that failed: 1 after the message. */
int src_error(const struct src *s, const char *path);
/* The GPU an input names: the first one it gives, checked against the
 * others'. 0, or 1 after a message. */
int set_gpu(struct calls *cs, const char *path, const char *gpu, int sms,
    const struct read_opts *o);
void add_call(struct calls *cs, const struct om_desc *d, double us, int src, const char *kernel,
    const char *op, const char *dims);
/*
 * stream.c: a graph stream on in, and a Kineto trace on in through the
 * kineto2graph program, read into calls. 0, or 1 after a message.
 */
int read_stream(struct calls *cs, const char *path, FILE *in, const struct src *src,
    const struct read_opts *o, int sms_for);
int read_trace(struct calls *cs, const char *path, FILE *in, const struct src *src,
    const struct read_opts *o, int sms_for);

/* Fit: a model from the calls. 0, or 1 after a message. */
struct fit_opts {
	int nthread;
	int rounds, depth;
	double eta;
	int min_trees;    /* fewer samples than this: the roofline */
	unsigned feat_mask; /* features used (bit i: x[i]); others set to NaN */
	int cv;           /* measure cross-validated errors */
	int ratio;        /* trees on log(time / roofline time) */
};
int fit_model(const struct calls *cs, const struct fit_opts *o, struct om_model *m,
    char **tree, size_t *ntree);

#endif
