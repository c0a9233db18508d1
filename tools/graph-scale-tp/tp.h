/*
 * graph-scale-tp's private parts: one section held whole (common/graph.h)
 * and what the tool learns of it. shard.c finds the model's sizes in the
 * shapes and shards the GEMMs, attention and the work between them;
 * graph-scale-tp.c re-times, inserts and re-groups the collectives.
 */
#ifndef TP_H
#define TP_H

#include <stddef.h>
#include <stdint.h>

#include "comm.h"
#include "graph.h"
#include "opmodel.h"
#include "reshape.h"

struct opts {
	int64_t n, gpn;
	int sp;                  /* --sequence-parallel */
	int verbose;
	struct comm_given given;
	struct om_model to, src; /* --model, --from */
	int have_to, have_src;
	int64_t launch;          /* --launch-us, ns; -1 not given */
};

/* Where a GEMM's sizes are in its dims text: the role of each extent. */
enum { R_M, R_K, R_N, R_NONE };

struct tp {
	const struct opts *o;
	const struct graph *g;
	const struct kg_reader *r;
	const char *name;
	int index;
	int64_t H, M;       /* hidden size, tokens a micro-batch (of the GEMMs) */
	int64_t Mn;         /* tokens of the norms as traced: M, or M / T with
	                       sequence parallelism */
	int sp0, sp1;       /* sequence parallelism traced, and wanted */
	int64_t T;          /* the traced tensor-parallel degree */
	int64_t heads;      /* attention heads in all (per rank times T); 0 unknown */
	int64_t *sv;        /* sharded sizes as traced (per rank), sorted */
	size_t nsv, capsv;
	struct kg_task *t;  /* the tasks, changed in place */
	size_t nt, capt;
	struct kg_edge *e;
	size_t ne, cape;
	struct kg_proc *p;
	size_t np, capp;
	size_t narafter;    /* tasks arafter covers (those before any was made) */
	uint8_t *arafter;   /* by task: a GEMM whose reduction is now split (an
	                       all-reduce belongs after it, rank's compute) */
	int64_t *arbytes;   /* its output's bytes */
	size_t nmap;        /* tasks the three maps below cover */
	uint32_t *launcher; /* by task: the call that launched it (KG_NONE) */
	uint32_t *tout;     /* by task: its outgoing thread edge (KG_NONE) */
	uint32_t *tin;      /* by task: its incoming thread edge (KG_NONE) */
	int64_t hc;         /* host time of a collective's launch, mean, ns */
	int hc_given;       /* hc is --launch-us's: the job launches none */
	size_t nhost;       /* launches added or taken away */
	struct rs_strs xs;
	size_t ngemm, nattn, nelt, nopt, nkept; /* counts, for -v */
	int how[8];         /* factors found by each rs_factor way */
	double rho;         /* a rank's parameters, new over old (tp_shard) */
};

/* Find H, M, heads and the sharded sizes; 0, or 1 after a message. */
int tp_sizes(struct tp *c);
/* Shard the GPU work's shapes and re-time it for c->o->n ranks; 0, or 1. */
int tp_shard(struct tp *c);
/* A string of the section, or one the tool added; NULL for KG_NONE. */
const char *tp_text(const struct tp *c, uint32_t id);
/* Is op a GEMM's name? */
int tp_is_gemm(const char *op);

/* colls.c: the traced degree (the group that reduces activations) */
int64_t traced_degree(struct tp *c);
/* The collectives re-timed, made or taken away, the ranks laid out again;
 * net gets the link taken from the built-in topology ("" if none). 0, or 1. */
int collectives(struct tp *c, char *net, size_t netlen);

#endif
